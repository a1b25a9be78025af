"""Gemini's whole-argument tool call against the floor (issue 41, item 5), before and after, in one run.

    python bench/gemini_args.py [--before 49d9831] [--rounds 7] [--reps 7] [--size 1000000] [--steps]

A local server (a separate process) sends Gemini's ``alt=sse`` answer with one function call whose ~1 MB
``args`` object comes whole in one event (as Gemini does without Vertex's argument streaming).  Each worker
process streams it alternately through the floor (requests ``iter_content(None)``, split lines, ``json.loads``
per data line: bench/run.py's floor) and through ``AutoLLMClient(client_type="gemini").streaming_response``
(every event taken; the tool call's arguments checked equal to what was sent), REPS times each; its ratio is
the median library CPU over the median floor CPU.  Workers run the library as it was at ``--before`` and as it
is here, alternating, ROUNDS each; printed: the median ratio of each side and the load average.
Target: <= 1.0x the floor.

``--steps``: instead of the ratio, each step's CPU (ms) for the floor and the library (before and after): the
request, reading the body, framing and UTF-8 decoding, the JSON parse, the tool-call machine's steps (the
fragment's text, the lone-surrogate check, ...), the rest of the client.
"""

import argparse
import json
import statistics
import subprocess
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import os

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def _body(size):
    import streams

    args = streams.tool_arguments(size)
    chunk = streams._gemini_chunk([{"functionCall": {"name": "write_file", "args": json.loads(args)}}], "STOP", 7)
    return chunk, args


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    payload = b""

    def do_POST(self):  # noqa: N802
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        body = self.payload
        self.wfile.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body))

    def log_message(self, *args):
        pass


def _floor(session, url):
    response = session.post(url, data=b'{"contents": []}', headers={"Content-Type": "application/json"},
                            stream=True)
    loads = json.loads
    rest = b""
    count = 0
    try:
        for chunk in response.iter_content(None):
            if rest:
                chunk = rest + chunk
            lines = chunk.split(b"\n")
            rest = lines.pop()
            for line in lines:
                if line.startswith(b"data:"):
                    loads(line[5:].decode("utf-8"))
                    count += 1
    finally:
        response.close()
    return count


def _worker(port, reps, size):
    import requests

    from agenthub import AutoLLMClient

    _, args = _body(size)
    expected = json.loads(args)
    base = "http://127.0.0.1:{}".format(port)
    session = requests.Session()
    client = AutoLLMClient("gemini-2.5-flash", api_key="k", client_type="gemini", base_url=base, max_retries=0)
    messages = [{"role": "user", "content_items": [{"type": "text", "text": "write it"}]}]

    def library():
        got = None
        for event in client.streaming_response(messages):
            for item in event["content_items"]:
                if item["type"] == "tool_call":
                    got = item["arguments"]
        assert got == expected
    url = base + "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    _floor(session, url)
    library()
    cpu = {"floor": [], "library": []}
    for r in range(reps):
        for name in (("floor", "library") if r % 2 == 0 else ("library", "floor")):
            c0 = time.process_time()
            _floor(session, url) if name == "floor" else library()
            cpu[name].append(time.process_time() - c0)
    floor, lib = statistics.median(cpu["floor"]), statistics.median(cpu["library"])
    print(json.dumps({"floor_ms": floor * 1e3, "library_ms": lib * 1e3, "ratio": lib / floor}))


class _Clock(object):
    """CPU time spent in named steps: ``wrap`` times a function, ``chain`` the next() calls of the iterator a
    function returns (a step's own time is what it took less the steps it called: ``own``)."""

    def __init__(self):
        self.spent = {}

    def add(self, name, seconds):
        self.spent[name] = self.spent.get(name, 0.0) + seconds

    def wrap(self, owner, attribute, name):
        real = getattr(owner, attribute)
        clock = time.process_time

        def timed(*args, **kwargs):
            start = clock()
            try:
                return real(*args, **kwargs)
            finally:
                self.add(name, clock() - start)
        setattr(owner, attribute, timed)

    def chain(self, owner, attribute, name):
        real = getattr(owner, attribute)
        clock = time.process_time
        add = self.add

        def timed(*args, **kwargs):
            inner = real(*args, **kwargs)

            def steps():
                while True:
                    start = clock()
                    try:
                        item = next(inner)
                    except StopIteration:
                        add(name, clock() - start)
                        return
                    add(name, clock() - start)
                    yield item
            return steps()
        setattr(owner, attribute, timed)


def _steps(port, reps, size):
    """Each step's CPU (ms, median over REPS calls) for the floor and the library on the same stream."""
    import requests

    from agenthub import AutoLLMClient, toolcalls, transport
    from agenthub.providers import _common, gemini

    base = "http://127.0.0.1:{}".format(port)
    url = base + "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    session = requests.Session()
    clock = time.process_time
    loads = json.loads

    def floor():
        spent = {}
        start = clock()
        response = session.post(url, data=b'{"contents": []}', headers={"Content-Type": "application/json"},
                                stream=True)
        spent["request"] = clock() - start
        rest = b""
        read = split = decode = parse = 0.0
        try:
            chunks = response.iter_content(None)
            while True:
                t0 = clock()
                chunk = next(chunks, None)
                read += clock() - t0
                if chunk is None:
                    break
                t0 = clock()
                if rest:
                    chunk = rest + chunk
                lines = chunk.split(b"\n")
                rest = lines.pop()
                split += clock() - t0
                for line in lines:
                    if line.startswith(b"data:"):
                        t0 = clock()
                        text = line[5:].decode("utf-8")
                        t1 = clock()
                        loads(text)
                        t2 = clock()
                        decode += t1 - t0
                        parse += t2 - t1
        finally:
            response.close()
        spent.update(read=read, split=split, decode=decode, parse=parse, total=clock() - start)
        return spent

    watch = _Clock()
    watch.wrap(transport.BodyStream, "open", "request")
    watch.chain(transport.BodyStream, "iter_chunks", "read")
    watch.chain(_common, "iter_event_data", "frame+decode")
    watch.chain(_common, "data_payloads", "parse")
    watch.chain(gemini.PROTOCOL, "parse_payloads", "dialect")
    for name in ("_plain", "_parsed_text", "_lone_surrogate_text", "too_deep"):
        if hasattr(toolcalls, name):
            watch.wrap(toolcalls, name, name)
    if not hasattr(toolcalls, "_parsed_text"):  # (before: json.dumps in toolcalls' namespace)
        watch.wrap(toolcalls.json, "dumps", "_parsed_text")
    client = AutoLLMClient("gemini-2.5-flash", api_key="k", client_type="gemini", base_url=base, max_retries=0)
    messages = [{"role": "user", "content_items": [{"type": "text", "text": "write it"}]}]

    def library():
        watch.spent = {}
        start = clock()
        for event in client.streaming_response(messages):
            pass
        spent = dict(watch.spent, total=clock() - start)
        own = dict(spent)
        own["frame+decode"] = spent.get("frame+decode", 0) - spent.get("read", 0)
        own["parse"] = spent.get("parse", 0) - spent.get("frame+decode", 0) - spent.get("read", 0)
        inner = sum(spent.get(k, 0) for k in ("_plain", "_parsed_text", "_lone_surrogate_text", "too_deep"))
        own["dialect"] = spent.get("dialect", 0) - spent.get("parse", 0) - inner
        own["client"] = spent["total"] - spent.get("dialect", 0) - spent.get("request", 0)
        return own

    floor()
    library()
    rows = {"floor": [], "library": []}
    for r in range(reps):
        for name in (("floor", "library") if r % 2 == 0 else ("library", "floor")):
            rows[name].append(floor() if name == "floor" else library())
    out = {}
    for name, samples in rows.items():
        out[name] = {key: statistics.median(s.get(key, 0.0) for s in samples) * 1e3 for key in samples[0]}
    print(json.dumps(out))


def main():
    import ab

    parser = argparse.ArgumentParser()
    parser.add_argument("--before", default="49d9831")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--size", type=int, default=1000000)
    parser.add_argument("--steps", action="store_true", help="each step's CPU, floor and library, ms")
    parser.add_argument("--worker", nargs=3, type=int, help=argparse.SUPPRESS)
    parser.add_argument("--steps-worker", nargs=3, type=int, help=argparse.SUPPRESS)
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        _Handler.payload = _body(args.serve)[0]
        server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        print(server.server_address[1], flush=True)
        server.serve_forever()
    if args.worker:
        return _worker(*args.worker)
    if args.steps_worker:
        return _steps(*args.steps_worker)
    trees = {"before": ab.tree_at(args.before), "after": ab.ROOT}
    server = subprocess.Popen([sys.executable, __file__, "--serve", str(args.size)], stdout=subprocess.PIPE)
    results = {"before": [], "after": []}
    loads = []
    mode = "--steps-worker" if args.steps else "--worker"
    try:
        port = int(server.stdout.readline())
        for r in range(args.rounds):
            for side in (("before", "after") if r % 2 == 0 else ("after", "before")):
                loads.append(ab.load())
                results[side].append(ab.run_worker(trees[side], __file__,
                                                   [mode, str(port), str(args.reps), str(args.size)]))
    finally:
        server.kill()
        server.wait()
    if args.steps:
        return _print_steps(results, args, ab.loads_text(loads))
    print("Gemini whole-argument tool call ({:,} bytes of args in one event), CPU / floor, median of {} "
          "processes x {} reps, {}".format(args.size, args.rounds, args.reps, ab.loads_text(loads)))
    for side in ("before", "after"):
        rows = results[side]
        print("{:<7} floor {:6.2f} ms  library {:6.2f} ms  ratio {:.2f}x (processes: {})".format(
            side, statistics.median(r["floor_ms"] for r in rows), statistics.median(r["library_ms"] for r in rows),
            statistics.median(r["ratio"] for r in rows), " ".join("{:.2f}".format(r["ratio"]) for r in rows)))


def _print_steps(results, args, loads):
    print("Gemini whole-argument tool call ({:,} bytes of args in one event): CPU per step, ms, median of {} "
          "processes x {} reps, {}".format(args.size, args.rounds, args.reps, loads))
    steps = [("request", "request (send, answer's head)"), ("read", "read the body"),
             ("split", "split lines (floor)"), ("frame+decode", "SSE framing + UTF-8 decode"),
             ("decode", "UTF-8 decode (floor)"), ("parse", "json parse"), ("_plain", "plain-JSON walk"),
             ("_parsed_text", "json.dumps: the fragment's text"), ("_lone_surrogate_text", "lone-surrogate check"),
             ("too_deep", "depth check"), ("dialect", "dialect + tool-call machine (rest)"),
             ("client", "client (attempts, events)"), ("total", "total")]
    print("| step | floor | before | after |")
    print("| --- | ---: | ---: | ---: |")
    for key, label in steps:
        cells = []
        for who, side in (("floor", "after"), ("library", "before"), ("library", "after")):
            values = [r[who][key] for r in results[side] if key in r[who]]
            cells.append("{:.2f}".format(statistics.median(values)) if values else "-")
        print("| {} | {} |".format(label, " | ".join(cells)))


if __name__ == "__main__":
    main()
