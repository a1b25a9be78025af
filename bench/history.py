"""A run's cost per turn against its history (issue 41, item 1), before and after, in one run.

    python bench/history.py [--before 49d9831] [--turns 50] [--rounds 5] [--convs 3]

A local Chat Completions server (a separate process: its CPU is not counted) answers each request at once
with one text delta and three complete tool calls, and text only on the last turn.  A conversation of TURNS
model turns is run two ways: the hand loop on a message list (``streaming_response(messages, {"tools": ...})``,
the answer folded with ``Collector``, the tools called inline, one user message of results appended) and
``client.run(messages, tools=..., parallel=1)``.  A turn's CPU (``time.process_time``) runs from one model
turn's stop event to the next (the previous turn's tools, building and sending the request, reading the
stream).  Each round runs the library as it was at ``--before`` and as it is in this checkout, each in a fresh
process, in alternating order; per round the median per turn index over CONVS conversations, then the median
over rounds.  Printed: the CPU of turns 1, 5, 10, 20, 30, 40, 50, the ratio turn 50 / turn 5 (target <= 1.1x)
and the slope per earlier turn, before and after side by side, with the load average.
"""

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

CALLS = (("add", {"a": 2, "b": 3}), ("upper", {"text": "hello"}), ("count", {"items": ["x", "y", "z"]}))


def _event(delta, finish=None):
    return {"id": "h", "object": "chat.completion.chunk", "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def _answer(turn, last):
    events = [_event({"role": "assistant", "content": "Turn {}: ".format(turn)})]
    if not last:
        events += [_event({"tool_calls": [{"index": n, "id": "call_{}_{}".format(turn, n), "type": "function",
                                           "function": {"name": name, "arguments": json.dumps(args)}}]})
                   for n, (name, args) in enumerate(CALLS)]
    events.append(_event({}, "stop" if last else "tool_calls"))
    events.append({"id": "h", "choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 5}})
    return b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events) + b"data: [DONE]\n\n"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def do_POST(self):  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        turns = int(self.path.strip("/").split("/")[0])
        done = sum(1 for m in body["messages"] if m["role"] == "assistant")
        payload = _answer(done, done >= turns - 1)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args):
        pass


def add(a: int, b: int) -> int:
    """Add."""
    return a + b


def upper(text: str) -> str:
    """Upper."""
    return text.upper()


def count(items: list) -> int:
    """Count."""
    return len(items)


def _worker(port, turns, convs):
    from agenthub import AutoLLMClient, tool
    from agenthub.stream import Collector

    funcs = {"add": add, "upper": upper, "count": count}
    tools = [tool(f) for f in funcs.values()]
    schemas = [t.schema for t in tools]
    client = AutoLLMClient("m", api_key="k", client_type="openai-chat", max_retries=0,
                           base_url="http://127.0.0.1:{}/{}/v1".format(port, turns))
    question = lambda: [{"role": "user", "content_items": [{"type": "text", "text": "Use the tools."}]}]  # noqa: E731

    def hand():
        marks = [time.process_time()]
        messages = question()
        while True:
            folding = Collector()
            for event in client.streaming_response(messages, {"tools": schemas}):
                folding.add(event)
                if event["event_type"] == "stop":
                    marks.append(time.process_time())
            answer = folding.message()
            messages.append(answer)
            calls = [i for i in answer["content_items"] if i["type"] == "tool_call"]
            if not calls:
                return marks
            messages.append({"role": "user", "content_items": [
                {"type": "tool_result", "tool_call_id": c["tool_call_id"],
                 "text": json.dumps(funcs[c["name"]](**c["arguments"]))} for c in calls]})

    def run():
        marks = [time.process_time()]
        for event in client.run(question(), tools=tools, parallel=1, max_turns=turns + 1):
            if event["event_type"] == "stop":
                marks.append(time.process_time())
        return marks

    out = {}
    for name, loop in (("hand", hand), ("run", run)):
        loop()  # warm-up
        per = []
        for _ in range(convs):
            marks = loop()
            assert len(marks) == turns + 1, len(marks)
            per.append([(b - a) * 1e3 for a, b in zip(marks, marks[1:])])
        out[name] = [statistics.median(c) for c in zip(*per)]
    print(json.dumps(out))


def _slope(values):
    xs = range(len(values))
    mx, my = statistics.mean(xs), statistics.mean(values)
    return sum((x - mx) * (y - my) for x, y in zip(xs, values)) / sum((x - mx) ** 2 for x in xs)


def main():
    import ab

    parser = argparse.ArgumentParser()
    parser.add_argument("--before", default="49d9831")
    parser.add_argument("--turns", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--convs", type=int, default=3)
    parser.add_argument("--worker", nargs=3, type=int, help=argparse.SUPPRESS)
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        print(server.server_address[1], flush=True)
        server.serve_forever()
    if args.worker:
        return _worker(*args.worker)
    trees = {"before": ab.tree_at(args.before), "after": ab.ROOT}
    server = subprocess.Popen([sys.executable, __file__, "--serve"], stdout=subprocess.PIPE)
    try:
        port = int(server.stdout.readline())
        results = {"before": [], "after": []}
        loads = []
        for r in range(args.rounds):
            order = ["before", "after"] if r % 2 == 0 else ["after", "before"]
            for side in order:
                loads.append(ab.load())
                results[side].append(ab.run_worker(trees[side], __file__,
                                                   ["--worker", str(port), str(args.turns), str(args.convs)]))
            print("round {}: load {:.2f}".format(r + 1, loads[-1]), file=sys.stderr, flush=True)
    finally:
        server.kill()
        server.wait()
    shown = [t for t in (1, 5, 10, 20, 30, 40, 50) if t <= args.turns]
    print("CPU per turn (ms), median of {} rounds x {} conversations, {}".format(
        args.rounds, args.convs, ab.loads_text(loads)))
    print("{:<14}".format("loop") + "".join("{:>8}".format("t" + str(t)) for t in shown) +
          "{:>12}{:>16}".format("t{}/t5".format(args.turns), "us/earlier turn"))
    for loop in ("hand", "run"):
        for side in ("before", "after"):
            per_turn = [statistics.median(v) for v in zip(*[res[loop] for res in results[side]])]
            ratio = per_turn[args.turns - 1] / per_turn[4] if args.turns >= 5 else float("nan")
            print("{:<14}".format(loop + " " + side) + "".join("{:>8.3f}".format(per_turn[t - 1]) for t in shown) +
                  "{:>11.2f}x{:>16.1f}".format(ratio, _slope(per_turn[1:]) * 1e3))


if __name__ == "__main__":
    main()
