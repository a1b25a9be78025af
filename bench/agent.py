"""The tool runner's own cost (issue 30), on a local server in a separate process (its CPU is not counted).

    python bench/agent.py              # both measurements, a table on stdout; exit 1 when a target is missed
    python bench/agent.py --turns 40   # longer conversations

1. Overhead per turn: one conversation of TURNS model turns (each turn: 200 text deltas, then one tool
   call; the last turn text only), run two ways, each against its hand-written twin: ``client.run_stateful``
   beside the README's loop (``streaming_response_stateful``, the tool called by hand), and ``client.run``
   beside the same loop on a message list (``streaming_response``, the answer folded with ``Collector``).
   Alternating, 11 runs each; CPU (``time.process_time``, every thread of this process) and wall, min.
   Target: runner CPU <= 1.05x its twin.
2. Parallel tools: one turn calls 4 tools that each sleep 0.5 s; ``parallel=4``.  Wall time of the tool
   phase (the turn's stop event to its last result event) and of the whole run.  Target: < 0.7 s.
"""

import argparse
import json
import os
import subprocess
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

TEXT_DELTAS = 200


def _chunk(delta, finish=None):
    return {"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta,
                                                                        "finish_reason": finish}]}


def _body(turn, calls, final):
    events = [_chunk({"role": "assistant", "content": ""})]
    events += [_chunk({"content": "word{} ".format(i)}) for i in range(TEXT_DELTAS)]
    if not final:
        for n in range(calls):
            call_id = "call_{}_{}".format(turn, n)
            events.append(_chunk({"tool_calls": [{"index": n, "id": call_id, "type": "function",
                                                  "function": {"name": "lookup", "arguments": ""}}]}))
            events.append(_chunk({"tool_calls": [{"index": n, "function": {"arguments": '{"key": "k%d"}' % n}}]}))
    events.append(_chunk({}, "stop" if final else "tool_calls"))
    events.append({"id": "c", "choices": [], "usage": {"prompt_tokens": 100, "completion_tokens": 50}})
    return ["data: {}\n\n".format(json.dumps(e)).encode() for e in events] + [b"data: [DONE]\n\n"]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        turns, calls = (int(x) for x in self.path.strip("/").split("/")[:2])
        done = sum(1 for m in body["messages"] if m["role"] == "assistant")
        chunks = _body(done, calls, done >= turns - 1)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for chunk in chunks:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        self.wfile.write(b"0\r\n\r\n")

    def log_message(self, *args):
        pass


def serve():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    sys.stdout.write("{}\n".format(server.server_address[1]))
    sys.stdout.flush()
    server.serve_forever()


# -- the two loops --------------------------------------------------------------------------------------------

def lookup(key: str) -> str:
    """Look a key up."""
    return "value of " + key


def runner_loop(client, turns, tools):
    question = {"role": "user", "content_items": [{"type": "text", "text": "go"}]}
    result = client.run([question], tools=tools, max_turns=turns + 1).result()
    assert result.stop == "done" and result.turns == turns, (result.stop, result.turns)


def runner_stateful_loop(client, turns, tools):
    client.clear_history()
    question = {"role": "user", "content_items": [{"type": "text", "text": "go"}]}
    result = client.run_stateful(question, tools=tools, max_turns=turns + 1).result()
    assert result.stop == "done" and result.turns == turns, (result.stop, result.turns)


def hand_stateless_loop(client, turns, schemas):
    """The same loop by hand on a message list (streaming_response, each answer folded as it streams)."""
    from agenthub.stream import Collector

    messages = [{"role": "user", "content_items": [{"type": "text", "text": "go"}]}]
    count = 0
    while True:
        calls = []
        folding = Collector()
        for event in client.streaming_response(messages, config={"tools": schemas}):
            folding.add(event)
            for item in event["content_items"]:
                if item["type"] == "tool_call":
                    calls.append(item)
        messages.append(folding.message())
        count += 1
        if not calls:
            break
        messages.append({"role": "user", "content_items": [
            {"type": "tool_result", "tool_call_id": call["tool_call_id"], "text": lookup(**call["arguments"])}
            for call in calls]})
    assert count == turns


def hand_loop(client, turns, schemas):
    """The README's "what it does for you" loop, on one client's history."""
    client.clear_history()
    message = {"role": "user", "content_items": [{"type": "text", "text": "go"}]}
    count = 0
    while True:
        calls = []
        for event in client.streaming_response_stateful(message=message, config={"tools": schemas}):
            for item in event["content_items"]:
                if item["type"] == "tool_call":
                    calls.append(item)
        count += 1
        if not calls:
            break
        message = {"role": "user", "content_items": [
            {"type": "tool_result", "tool_call_id": call["tool_call_id"], "text": lookup(**call["arguments"])}
            for call in calls]}
    assert count == turns


def measure(fn, runs=7):
    cpu, wall = [], []
    for _ in range(runs):
        c0, w0 = time.process_time(), time.perf_counter()
        fn()
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
    return min(cpu), min(wall)


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--serve", action="store_true")
    args = parser.parse_args(argv)
    if args.serve:
        return serve()
    from agenthub import AutoLLMClient, tool

    proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--serve"], stdout=subprocess.PIPE)
    try:
        port = int(proc.stdout.readline())
        base = "http://127.0.0.1:{}/{}/1/v1".format(port, args.turns)
        client = AutoLLMClient("bench", api_key="k", base_url=base, client_type="openai-chat")
        wrapped = tool(lookup)
        schemas = [wrapped.schema]
        pairs = [("hand-written, stateful (the README's)", lambda: hand_loop(client, args.turns, schemas),
                  "client.run_stateful", lambda: runner_stateful_loop(client, args.turns, [wrapped])),
                 ("hand-written, stateless (streaming_response + Collector)",
                  lambda: hand_stateless_loop(client, args.turns, schemas),
                  "client.run", lambda: runner_loop(client, args.turns, [wrapped]))]
        print("Python {}".format(sys.version.split()[0]))
        print("| loop ({} turns, {} text deltas and 1 tool call a turn) | CPU ms | CPU ms/turn | wall ms |".format(
            args.turns, TEXT_DELTAS))
        print("|---|---|---|---|")
        ratios = []
        for hand_name, hand_fn, run_name, run_fn in pairs:
            hand_fn()  # warm both (connections, imports)
            run_fn()
            hand, runner = [], []
            for _ in range(11):  # alternating, so drift hits both
                hand.append(measure(hand_fn, 1))
                runner.append(measure(run_fn, 1))
            for name, rows in ((hand_name, hand), (run_name, runner)):
                cpu, wall = min(r[0] for r in rows), min(r[1] for r in rows)
                print("| {} | {:.1f} | {:.2f} | {:.1f} |".format(name, cpu * 1000, cpu * 1000 / args.turns, wall * 1000))
            ratios.append(min(r[0] for r in runner) / min(h[0] for h in hand))
        ratio = max(ratios)
        print("runner / hand-written CPU: stateful {:.3f}x, stateless {:.3f}x (target <= 1.05x)".format(*ratios))

        # 2. four tools sleeping 0.5 s in one turn, parallel=4
        @tool
        def lookup_slow(key: str) -> str:
            """Look a key up, slowly."""
            time.sleep(0.5)
            return "value of " + key

        lookup_slow.name = "lookup"
        lookup_slow.schema = dict(lookup_slow.schema, name="lookup")
        client4 = AutoLLMClient("bench", api_key="k", base_url="http://127.0.0.1:{}/2/4/v1".format(port),
                                client_type="openai-chat")
        phases, totals = [], []
        for _ in range(3):
            question = {"role": "user", "content_items": [{"type": "text", "text": "go"}]}
            w0 = time.perf_counter()
            stopped = last = None
            run = client4.run([question], tools=[lookup_slow], parallel=4)
            for event in run:
                if event["event_type"] == "stop" and stopped is None:
                    stopped = time.perf_counter()
                elif event["role"] == "user":
                    last = time.perf_counter()
            assert len(run.result().messages[1]["content_items"]) == 4
            totals.append(time.perf_counter() - w0)
            phases.append(last - stopped)
        print("4 tools x 0.5 s, parallel=4: tool phase {:.3f} s, whole run {:.3f} s (min of 3; target < 0.7 s)".format(
            min(phases), min(totals)))
        return 0 if ratio <= 1.05 and min(phases) < 0.7 else 1
    finally:
        proc.kill()
        proc.wait()


if __name__ == "__main__":
    sys.exit(main())
