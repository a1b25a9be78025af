"""A run's cost per turn against its history (issue 41, item 1), before and after, in one run.

    python bench/history.py [--before main] [--turns 50] [--rounds 5] [--convs 3] [--wire all]
    python bench/history.py --instructions [--only '*/stateful/*'] [--keep DIR]   # callgrind, each turn
    python bench/history.py --profile 25 [--wire gemini] [--loop run]   # cProfile of turn 5 and turn 50, this checkout

Four loops per wire: ``bare`` (the floor: the bodies the library plans, made beforehand, each sent as
``json.dumps`` bytes through a bare ``requests`` session, the stream's lines parsed with ``json.loads``), the hand
loop, ``client.run`` and ``client.run_stateful``; each row shows its growth over the bare loop's too ("/bare").

A local server for each wire (openai-chat, openai-responses, anthropic, gemini, gemini-interactions; a separate process: its CPU
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
import fnmatch
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


def _interactions_answer(turn, last):
    def ev(payload):
        return _sse(payload, payload["event_type"])

    iid = "v1_t{}".format(turn)  # (a stateful call chains on it: the turn it answered is read back from it)
    out = [ev({"event_type": "interaction.start", "interaction": {"id": iid, "status": "in_progress"}}),
           ev({"event_type": "step.start", "index": 0, "step": {"type": "model_output"}}),
           ev({"event_type": "step.delta", "index": 0, "delta": {"type": "text", "text": "Turn {}: ".format(turn)}}),
           ev({"event_type": "step.stop", "index": 0})]
    for n, (name, args) in enumerate(CALLS if not last else ()):
        out += [ev({"event_type": "step.start", "index": n + 1, "step": {
                    "type": "function_call", "id": "call_{}_{}".format(turn, n), "name": name, "arguments": args}}),
                ev({"event_type": "step.stop", "index": n + 1})]
    out.append(ev({"event_type": "interaction.completed", "interaction": {
        "id": iid, "status": "completed" if last else "requires_action",
        "usage": {"total_input_tokens": 10, "total_output_tokens": 5}}}))
    return b"".join(out) + b"data: [DONE]\n\n"


def _interactions_turns(body):
    """Turns answered before: after the chained interaction's (a stateful call sends only what is new), else one
    per three function_call steps in the input (every turn but the last makes three calls)."""
    previous = body.get("previous_interaction_id")
    if previous:
        return int(previous.rsplit("_t", 1)[1]) + 1
    return sum(1 for step in body["input"] if step.get("type") == "function_call") // len(CALLS)


#: per wire: how many model turns a request body holds, and the answer to it
WIRES = {
    "openai-chat": (lambda body: sum(1 for m in body["messages"] if m["role"] == "assistant"), _chat_answer),
    "openai-responses": (lambda body: sum(1 for m in body["input"] if m.get("role") == "assistant"),
                         _responses_answer),
    "anthropic": (lambda body: sum(1 for m in body["messages"] if m["role"] == "assistant"), _anthropic_answer),
    "gemini": (lambda body: sum(1 for m in body["contents"] if m["role"] == "model"), _gemini_answer),
    "gemini-interactions": (_interactions_turns, _interactions_answer),
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

    def stateful():
        """``client.run_stateful``: the same conversation in the client's own history (cleared first)."""
        client.clear_history()
        marks = [time.process_time()]
        for event in client.run_stateful(question()[0], {"max_tokens": 1024}, tools=tools, parallel=1,
                                         max_turns=turns + 1):
            if event["event_type"] == "stop":
                marks.append(time.process_time())
                at_stop[0](len(marks) - 1)
        return marks

    def bare():
        """The floor: the wire bodies the library sends (made beforehand, see ``_bodies``), each as
        ``json.dumps`` sends it through a bare ``requests`` session, the stream's lines parsed with ``json.loads``."""
        if not bodies:
            bodies.extend(_bodies(client, question(), config, funcs))
        marks = [time.process_time()]
        for url, body in bodies:
            data = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
            with session.post(url, data=data, headers=headers, stream=True) as response:
                for line in response.iter_lines():
                    if line.startswith(b"data: ") and line != b"data: [DONE]":
                        json.loads(line[6:])
            marks.append(time.process_time())
            at_stop[0](len(marks) - 1)
        return marks

    import requests

    bodies = []
    session = requests.Session()
    headers = {"Content-Type": "application/json", "Accept": "text/event-stream"}
    return {"hand": hand, "run": run, "stateful": stateful, "bare": bare}, at_stop


def _bodies(client, messages, config, funcs):
    """(url, body) of every request of the hand loop's conversation, as the library plans them (a client of
    its own: the loops' client's kept history is not touched)."""
    import copy

    from agenthub import AutoLLMClient
    from agenthub.stream import Collector

    planner = AutoLLMClient(client.model, api_key="k", client_type=client.client_type, max_retries=0,
                            base_url=client.base_url)
    out = []
    while True:
        plan = planner.plan(messages, config)
        url = plan.url if plan.url.startswith("http") else client.base_url.rstrip("/") + plan.url
        out.append((url, copy.deepcopy(plan.body)))
        folding = Collector()
        for event in client.streaming_response(messages, config):
            folding.add(event)
        answer = folding.message()
        messages.append(answer)
        calls = [i for i in answer["content_items"] if i["type"] == "tool_call"]
        if not calls:
            return out
        messages.append({"role": "user", "content_items": [
            {"type": "tool_result", "tool_call_id": c["tool_call_id"],
             "text": json.dumps(funcs[c["name"]](**c["arguments"]))} for c in calls]})


LOOPS = ("bare", "hand", "run", "stateful")


def _worker(port, turns, convs, wire):
    loops, _ = _loops(port, turns, wire)
    out = {}
    for name in LOOPS:
        loop = loops[name]
        loop()  # warm-up
        per = []
        for _ in range(convs):
            marks = loop()
            assert len(marks) == turns + 1, len(marks)
            per.append([(b - a) * 1e3 for a, b in zip(marks, marks[1:])])
        out[name] = [statistics.median(c) for c in zip(*per)]
    print(json.dumps(out))


def _profile(port, turns, convs, wire, top, which="hand"):
    """cProfile of loop WHICH's turn 5 and turn TURNS (from the stop before it to its stop), summed over
    CONVS conversations, the TOP functions by own time each (the run's tool thread is not profiled)."""
    import cProfile
    import pstats

    loops, at_stop = _loops(port, turns, wire)
    loop = loops[which]
    profiles = {5: cProfile.Profile(), turns: cProfile.Profile()}

    def switch(turn):
        if turn in profiles:
            profiles[turn].disable()
        if turn + 1 in profiles:
            profiles[turn + 1].enable()

    loop()  # warm-up
    at_stop[0] = switch
    for _ in range(convs):
        loop()
    for turn, profile in profiles.items():
        print("== {} {}: turn {} ({} conversations)".format(wire, which, turn, convs))
        pstats.Stats(profile).sort_stats("tottime").print_stats(top)


def _ir_worker(port, turns, wire, which):
    """One conversation of loop WHICH after a warm-up one, ``os.getppid()`` at every model turn's stop: run under
    callgrind with ``--dump-before=os_getppid*``, each turn's instructions land in a dump of their own."""
    loops, at_stop = _loops(port, turns, wire)
    _loops(port, 5, wire)[0][which]()  # warm-up: a short conversation (a client of its own)
    at_stop[0] = lambda turn: os.getppid()
    loops[which]()


def _instructions(tree, port, turns, wire, which, keep=None):
    """Instructions (callgrind) of each turn 2..TURNS of loop WHICH, the library at ``tree`` (turn 1's dump
    holds the start-up and the warm-up: None)."""
    import shutil
    import tempfile

    where = tempfile.mkdtemp(prefix="history-ir-")
    try:
        out = os.path.join(where, "cg.out")
        env = dict(os.environ, PYTHONPATH=tree, PYTHONHASHSEED="0")
        subprocess.run(["valgrind", "--tool=callgrind", "--dump-before=os_getppid*", "--callgrind-out-file=" + out,
                        sys.executable, __file__, "--ir-worker", str(port), str(turns), which, "--wire", wire],
                       env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=1800)
        per = [None]
        for n in range(2, turns + 1):
            with open("{}.{}".format(out, n)) as f:
                per.append(next(int(line.split()[1]) for line in f if line.startswith("totals:")))
        if keep:
            os.makedirs(keep, exist_ok=True)
            for n in (5, turns):
                shutil.copy("{}.{}".format(out, n), os.path.join(keep, "{}-{}-{}-turn{}.cg".format(
                    os.path.basename(tree.rstrip("/")), wire, which, n)))
        return per
    finally:
        shutil.rmtree(where, True)


def _slope(values):
    xs = range(len(values))
    mx, my = statistics.mean(xs), statistics.mean(values)
    return sum((x - mx) * (y - my) for x, y in zip(xs, values)) / sum((x - mx) ** 2 for x in xs)


def _serve():
    server = subprocess.Popen([sys.executable, __file__, "--serve"], stdout=subprocess.PIPE)
    return server, int(server.stdout.readline())


def _row(label, per_turn, turns, bare=None, fmt="{:>8.3f}", scale=1.0):
    """One printed row: the shown turns, t50/t5, last5/t3-7, both over the bare loop's, the slope."""
    shown = [t for t in (2, 5, 10, 20, 30, 40, 50) if t <= turns]
    ratio = per_turn[turns - 1] / per_turn[4]
    # the median of the last five turns over the median of turns 3-7: steadier than one turn each
    wide = statistics.median(per_turn[-5:]) / statistics.median(per_turn[2:7])
    over = ("{:>9.2f}x{:>9.2f}x".format(ratio / bare[0], wide / bare[1]) if bare else "{:>10}{:>10}".format("", ""))
    print("{:<34}".format(label) + "".join(fmt.format(per_turn[t - 1] * scale) for t in shown) +
          "{:>9.2f}x{:>9.2f}x".format(ratio, wide) + over +
          "{:>12.1f}".format(_slope([v * scale for v in per_turn[1:]]) * 1e3))
    return ratio, wide


def _header(turns, unit):
    shown = [t for t in (2, 5, 10, 20, 30, 40, 50) if t <= turns]
    print("{:<34}".format("wire, loop, side ({})".format(unit)) + "".join("{:>8}".format("t" + str(t)) for t in shown)
          + "{:>10}{:>10}{:>10}{:>10}{:>12}".format("t{}/t5".format(turns), "l5/t3-7", "/bare", "/bare",
                                                    "per earlier"))


def main():
    import ab

    parser = argparse.ArgumentParser()
    parser.add_argument("--before", default="main")
    parser.add_argument("--turns", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--convs", type=int, default=3)
    parser.add_argument("--wire", default="all", help="a wire ({}), a comma-separated list, or all".format(
        ", ".join(WIRES)))
    parser.add_argument("--profile", type=int, metavar="TOP", help="no before/after: cProfile of the loop's "
                        "turn 5 and last turn in this checkout, the TOP functions by own time, per wire")
    parser.add_argument("--loop", default="hand", choices=LOOPS, help="the loop --profile profiles")
    parser.add_argument("--instructions", action="store_true", help="instructions per turn (valgrind callgrind, "
                        "one conversation per wire, loop and side; load-independent) instead of CPU time")
    parser.add_argument("--only", default="*", help="--instructions: the rows to count, comma-separated "
                        "wire/loop/side patterns (fnmatch), e.g. '*/hand/after,*/stateful/*'")
    parser.add_argument("--jobs", type=int, default=2, help="--instructions: valgrind processes at once")
    parser.add_argument("--keep", metavar="DIR", help="--instructions: keep turn 5's and the last turn's callgrind "
                        "dumps there (callgrind_annotate them to see what grows)")
    parser.add_argument("--worker", nargs=3, type=int, help=argparse.SUPPRESS)
    parser.add_argument("--ir-worker", nargs=3, help=argparse.SUPPRESS)
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        print(server.server_address[1], flush=True)
        server.serve_forever()
    wires = list(WIRES) if args.wire == "all" else args.wire.split(",")
    if args.worker:
        return _worker(*args.worker, wire=wires[0])
    if args.ir_worker:
        return _ir_worker(int(args.ir_worker[0]), int(args.ir_worker[1]), wires[0], args.ir_worker[2])
    if args.profile:
        sys.path.insert(0, ab.ROOT)  # this checkout's agenthub
        server, port = _serve()
        try:
            for wire in wires:
                _profile(port, args.turns, args.convs, wire, args.profile, args.loop)
        finally:
            server.kill()
            server.wait()
        return
    trees = {"before": ab.tree_at(args.before), "after": ab.ROOT}
    if args.instructions:
        from concurrent.futures import ThreadPoolExecutor

        server, port = _serve()
        try:
            # the bare loop sends the same bodies whichever library made them: counted once (after)
            jobs = [(w, loop, side) for w in wires for loop in LOOPS for side in ("before", "after")
                    if (loop != "bare" or side == "after") and any(
                        fnmatch.fnmatch("{}/{}/{}".format(w, loop, side), pattern) for pattern in args.only.split(","))]
            with ThreadPoolExecutor(args.jobs) as pool:
                found = dict(zip(jobs, pool.map(lambda job: _instructions(
                    trees[job[2]], port, args.turns, job[0], job[1], args.keep), jobs)))
        finally:
            server.kill()
            server.wait()
        print("Instructions per turn (millions; valgrind callgrind, one conversation after a warm-up one; "
              "/bare: the ratio over the bare loop's)")
        _header(args.turns, "M instr")
        for wire in wires:
            for side in ("before", "after"):
                bare = None
                for loop in LOOPS:
                    per = found.get((wire, loop, "after" if loop == "bare" else side))
                    if per is None:
                        continue
                    per = [per[1]] + per[1:]  # (turn 1 shown as turn 2: only t2..t50 are read)
                    got = _row("{} {} {}".format(wire, loop, side), per, args.turns, bare, scale=1e-6)
                    bare = got if loop == "bare" else bare
        return
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
    print("CPU per turn (ms), median of {} rounds x {} conversations, {}; /bare: the ratio over the bare "
          "loop's".format(args.rounds, args.convs, ab.loads_text(loads)))
    _header(args.turns, "ms")
    for wire in wires:
        for side in ("before", "after"):
            bare = None
            for loop in LOOPS:
                per_turn = [statistics.median(v) for v in zip(*[res[loop] for res in results[wire, side]])]
                got = _row("{} {} {}".format(wire, loop, side), per_turn, args.turns, bare)
                bare = got if loop == "bare" else bare


if __name__ == "__main__":
    main()
