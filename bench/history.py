"""A run's cost per turn against its history (issue 41, item 1), before and after, in one run.

    python bench/history.py [--before 49d9831] [--turns 50] [--rounds 5] [--convs 3] [--wire all]
    python bench/history.py --profile 25 [--wire gemini]      # cProfile of turn 5 and turn 50, this checkout

A local server for each wire (openai-chat, openai-responses, anthropic, gemini; a separate process: its CPU
is not counted) answers each request at once with one text delta and three complete tool calls in that
wire's stream, and text only on the last turn.  A conversation of TURNS
model turns is run two ways: the hand loop on a message list (``streaming_response(messages, {"tools": ...})``,
the answer folded with ``Collector``, the tools called inline, one user message of results appended) and
``client.run(messages, tools=..., parallel=1)``.  A turn's CPU (``time.process_time``) runs from one model
turn's stop event to the next (the previous turn's tools, building and sending the request, reading the
stream).  Each round runs the library as it was at ``--before`` and as it is in this checkout, each in a fresh
process, in alternating order; per round the median per turn index over CONVS conversations, then the median
over rounds.  Printed per wire and loop: the CPU of turns 1, 5, 10, 20, 30, 40, 50, the ratio turn 50 / turn 5
(target <= 1.1x), the median of the last five turns over that of turns 3-7 (steadier) and the slope per earlier
turn, before and after side by side, with the load average.
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


def _sse(payload, event=None):
    return (b"event: " + event.encode() + b"\n" if event else b"") + b"data: " + json.dumps(payload).encode() + b"\n\n"


def _chat_answer(turn, last):
    events = [_event({"role": "assistant", "content": "Turn {}: ".format(turn)})]
    if not last:
        events += [_event({"tool_calls": [{"index": n, "id": "call_{}_{}".format(turn, n), "type": "function",
                                           "function": {"name": name, "arguments": json.dumps(args)}}]})
                   for n, (name, args) in enumerate(CALLS)]
    events.append(_event({}, "stop" if last else "tool_calls"))
    events.append({"id": "h", "choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 5}})
    return b"".join(_sse(e) for e in events) + b"data: [DONE]\n\n"


def _responses_answer(turn, last):
    out = []
    seq = [0]

    def ev(kind, **fields):
        payload = dict(type=kind, sequence_number=seq[0], **fields)
        seq[0] += 1
        out.append(_sse(payload, kind))

    response = {"id": "resp_h", "object": "response", "status": "in_progress", "model": "m", "output": []}
    ev("response.created", response=response)
    text = "Turn {}: ".format(turn)
    message = {"id": "msg_{}".format(turn), "type": "message", "status": "in_progress", "role": "assistant",
               "content": []}
    ev("response.output_item.added", output_index=0, item=message)
    ev("response.content_part.added", item_id=message["id"], output_index=0, content_index=0,
       part={"type": "output_text", "annotations": [], "text": ""})
    ev("response.output_text.delta", item_id=message["id"], output_index=0, content_index=0, delta=text)
    ev("response.output_text.done", item_id=message["id"], output_index=0, content_index=0, text=text)
    part = {"type": "output_text", "annotations": [], "text": text}
    ev("response.content_part.done", item_id=message["id"], output_index=0, content_index=0, part=part)
    done = [dict(message, status="completed", content=[part])]
    ev("response.output_item.done", output_index=0, item=done[0])
    for n, (name, args) in enumerate(CALLS if not last else ()):
        item = {"type": "function_call", "id": "fc_{}_{}".format(turn, n), "call_id": "call_{}_{}".format(turn, n),
                "name": name, "arguments": "", "status": "in_progress"}
        ev("response.output_item.added", output_index=n + 1, item=item)
        ev("response.function_call_arguments.delta", item_id=item["id"], output_index=n + 1, delta=json.dumps(args))
        ev("response.function_call_arguments.done", item_id=item["id"], output_index=n + 1, arguments=json.dumps(args))
        done.append(dict(item, arguments=json.dumps(args), status="completed"))
        ev("response.output_item.done", output_index=n + 1, item=done[-1])
    ev("response.completed", response=dict(response, status="completed", output=done,
                                           usage={"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}))
    return b"".join(out)


def _anthropic_answer(turn, last):
    out = [_sse({"type": "message_start", "message": {
        "id": "msg_h", "type": "message", "role": "assistant", "content": [], "model": "m", "stop_reason": None,
        "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 1}}}, "message_start"),
        _sse({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
             "content_block_start"),
        _sse({"type": "content_block_delta", "index": 0,
              "delta": {"type": "text_delta", "text": "Turn {}: ".format(turn)}}, "content_block_delta"),
        _sse({"type": "content_block_stop", "index": 0}, "content_block_stop")]
    for n, (name, args) in enumerate(CALLS if not last else ()):
        out += [_sse({"type": "content_block_start", "index": n + 1, "content_block": {
                    "type": "tool_use", "id": "toolu_{}_{}".format(turn, n), "name": name, "input": {}}},
                    "content_block_start"),
                _sse({"type": "content_block_delta", "index": n + 1,
                      "delta": {"type": "input_json_delta", "partial_json": json.dumps(args)}}, "content_block_delta"),
                _sse({"type": "content_block_stop", "index": n + 1}, "content_block_stop")]
    out += [_sse({"type": "message_delta", "delta": {"stop_reason": "end_turn" if last else "tool_use",
                                                     "stop_sequence": None}, "usage": {"output_tokens": 5}},
                 "message_delta"),
            _sse({"type": "message_stop"}, "message_stop")]
    return b"".join(out)


def _gemini_answer(turn, last):
    parts = [{"text": "Turn {}: ".format(turn)}]
    parts += [{"functionCall": {"name": name, "args": args}} for name, args in (CALLS if not last else ())]
    chunk = {"candidates": [{"content": {"parts": parts, "role": "model"}, "finishReason": "STOP", "index": 0}],
             "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
             "modelVersion": "m", "responseId": "h"}
    return b"data: " + json.dumps(chunk).encode() + b"\r\n\r\n"


#: per wire: how many model turns a request body holds, and the answer to it
WIRES = {
    "openai-chat": (lambda body: sum(1 for m in body["messages"] if m["role"] == "assistant"), _chat_answer),
    "openai-responses": (lambda body: sum(1 for m in body["input"] if m.get("role") == "assistant"),
                         _responses_answer),
    "anthropic": (lambda body: sum(1 for m in body["messages"] if m["role"] == "assistant"), _anthropic_answer),
    "gemini": (lambda body: sum(1 for m in body["contents"] if m["role"] == "model"), _gemini_answer),
}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def do_POST(self):  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        turns, wire = self.path.strip("/").split("/")[:2]
        count, answer = WIRES[wire]
        done = count(body)
        payload = answer(done, done >= int(turns) - 1)
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


def _loops(port, turns, wire):
    """The two loops (each returns the CPU marks at every model turn's stop event) and a hook to run code
    between the marks (the profile)."""
    from agenthub import AutoLLMClient, tool
    from agenthub.stream import Collector

    funcs = {"add": add, "upper": upper, "count": count}
    tools = [tool(f) for f in funcs.values()]
    schemas = [t.schema for t in tools]
    client = AutoLLMClient("m", api_key="k", client_type=wire, max_retries=0,
                           base_url="http://127.0.0.1:{}/{}/{}".format(port, turns, wire))
    question = lambda: [{"role": "user", "content_items": [{"type": "text", "text": "Use the tools."}]}]  # noqa: E731
    config = {"tools": schemas, "max_tokens": 1024}
    at_stop = [lambda turn: None]

    def hand():
        marks = [time.process_time()]
        messages = question()
        while True:
            folding = Collector()
            for event in client.streaming_response(messages, config):
                folding.add(event)
                if event["event_type"] == "stop":
                    marks.append(time.process_time())
                    at_stop[0](len(marks) - 1)
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
        for event in client.run(question(), {"max_tokens": 1024}, tools=tools, parallel=1, max_turns=turns + 1):
            if event["event_type"] == "stop":
                marks.append(time.process_time())
                at_stop[0](len(marks) - 1)
        return marks

    return hand, run, at_stop


def _worker(port, turns, convs, wire):
    hand, run, _ = _loops(port, turns, wire)
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


def _profile(port, turns, convs, wire, top):
    """cProfile of the hand loop's turn 5 and turn TURNS (from the stop before it to its stop), summed over
    CONVS conversations, the TOP functions by own time each."""
    import cProfile
    import pstats

    hand, _, at_stop = _loops(port, turns, wire)
    profiles = {5: cProfile.Profile(), turns: cProfile.Profile()}

    def switch(turn):
        if turn in profiles:
            profiles[turn].disable()
        if turn + 1 in profiles:
            profiles[turn + 1].enable()

    hand()  # warm-up
    at_stop[0] = switch
    for _ in range(convs):
        hand()
    for turn, profile in profiles.items():
        print("== {}: turn {} ({} conversations)".format(wire, turn, convs))
        pstats.Stats(profile).sort_stats("tottime").print_stats(top)


def _slope(values):
    xs = range(len(values))
    mx, my = statistics.mean(xs), statistics.mean(values)
    return sum((x - mx) * (y - my) for x, y in zip(xs, values)) / sum((x - mx) ** 2 for x in xs)


def _serve():
    server = subprocess.Popen([sys.executable, __file__, "--serve"], stdout=subprocess.PIPE)
    return server, int(server.stdout.readline())


def main():
    import ab

    parser = argparse.ArgumentParser()
    parser.add_argument("--before", default="49d9831")
    parser.add_argument("--turns", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--convs", type=int, default=3)
    parser.add_argument("--wire", default="all", help="a wire ({}), a comma-separated list, or all".format(
        ", ".join(WIRES)))
    parser.add_argument("--profile", type=int, metavar="TOP", help="no before/after: cProfile of the hand loop's "
                        "turn 5 and last turn in this checkout, the TOP functions by own time, per wire")
    parser.add_argument("--worker", nargs=3, type=int, help=argparse.SUPPRESS)
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        print(server.server_address[1], flush=True)
        server.serve_forever()
    wires = list(WIRES) if args.wire == "all" else args.wire.split(",")
    if args.worker:
        return _worker(*args.worker, wire=wires[0])
    if args.profile:
        sys.path.insert(0, ab.ROOT)  # this checkout's agenthub
        server, port = _serve()
        try:
            for wire in wires:
                _profile(port, args.turns, args.convs, wire, args.profile)
        finally:
            server.kill()
            server.wait()
        return
    trees = {"before": ab.tree_at(args.before), "after": ab.ROOT}
    server, port = _serve()
    try:
        results = {(w, side): [] for w in wires for side in ("before", "after")}
        loads = []
        for r in range(args.rounds):
            order = ["before", "after"] if r % 2 == 0 else ["after", "before"]
            for wire in wires:
                for side in order:
                    loads.append(ab.load())
                    results[wire, side].append(ab.run_worker(trees[side], __file__, [
                        "--worker", str(port), str(args.turns), str(args.convs), "--wire", wire]))
            print("round {}: load {:.2f}".format(r + 1, loads[-1]), file=sys.stderr, flush=True)
    finally:
        server.kill()
        server.wait()
    shown = [t for t in (1, 5, 10, 20, 30, 40, 50) if t <= args.turns]
    print("CPU per turn (ms), median of {} rounds x {} conversations, {}".format(
        args.rounds, args.convs, ab.loads_text(loads)))
    print("{:<30}".format("wire, loop") + "".join("{:>8}".format("t" + str(t)) for t in shown) +
          "{:>12}{:>16}{:>16}".format("t{}/t5".format(args.turns), "last5/t3-7", "us/earlier turn"))
    for wire in wires:
        for loop in ("hand", "run"):
            for side in ("before", "after"):
                per_turn = [statistics.median(v) for v in zip(*[res[loop] for res in results[wire, side]])]
                ratio = per_turn[args.turns - 1] / per_turn[4] if args.turns >= 5 else float("nan")
                # the median of the last five turns over the median of turns 3-7: steadier than one turn each
                wide = statistics.median(per_turn[-5:]) / statistics.median(per_turn[2:7]) \
                    if args.turns >= 10 else float("nan")
                print("{:<30}".format("{} {} {}".format(wire, loop, side)) +
                      "".join("{:>8.3f}".format(per_turn[t - 1]) for t in shown) +
                      "{:>11.2f}x{:>15.2f}x{:>16.1f}".format(ratio, wide, _slope(per_turn[1:]) * 1e3))


if __name__ == "__main__":
    main()
