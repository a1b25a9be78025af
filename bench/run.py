"""agenthub's benchmark: the library beside the floor, measured in one run.

    python bench/run.py            # about two minutes; prints the tables, writes bench/RESULTS.md
    python bench/run.py --quick    # fewer repeats, no 16x step: a smoke run

The floor is what any client must do with the same bytes: ``requests`` (same session
settings, ``stream=True``, ``iter_content(None)``), splitting lines, and ``json.loads``
on every data line, building nothing.  The SSE server (bench/server.py) runs in
another process, so only the consumer's CPU is counted (``time.process_time``).
See bench/README.md for what each measurement means.
"""

import argparse
import gc
import importlib.util
import json
import os
import platform
import statistics
import subprocess
import sys
import time
import tracemalloc

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, ROOT)

import requests  # noqa: E402

from streams import PROTOCOLS, expected_text, tool_arguments  # noqa: E402

MODULES = {"openai-chat": "openai_chat", "openai-responses": "openai_responses", "anthropic": "anthropic",
           "gemini": "gemini"}
MESSAGES = [{"role": "user", "content_items": [{"type": "text", "text": "Write the file."}]}]
FLOOR_BODY = json.dumps({"model": "bench-model", "messages": [{"role": "user", "content": "Write the file."}],
                         "stream": True}).encode("utf-8")
TEXT_EVENTS = 20000
TOOL_BYTES = 1 << 20
TOOL_FRAGMENTS = 20000
MEMORY_EVENTS = 100000

TARGETS = {"import_ms": 30.0, "text": 1.3, "tool": 1.5}
#: a whole answer in one write (bench/server.py mode "burst"): the same ratios as one event per chunk,
#: and the first event no later than the floor's first data line plus this many seconds
BURST_TARGETS = {"text": 1.1, "tool": 1.25, "first_s": 0.001}


# -- the two consumers ------------------------------------------------------------------------------


def floor(session, url):
    """requests + splitting lines + json.loads per data line, building nothing.  -> data lines decoded."""
    response = session.post(url, data=FLOOR_BODY, headers={"Content-Type": "application/json",
                                                           "Accept": "text/event-stream"}, stream=True)
    response.raise_for_status()
    loads = json.loads
    count = 0
    rest = b""
    try:
        for chunk in response.iter_content(None):
            if rest:
                chunk = rest + chunk
            lines = chunk.split(b"\n")
            rest = lines.pop()
            for line in lines:
                if line.startswith(b"data:") and line != b"data: [DONE]":
                    loads(line[5:].decode("utf-8"))
                    count += 1
    finally:
        response.close()
    return count


def library(client):
    """AutoLLMClient.streaming_response, every event taken and dropped.  -> events."""
    count = 0
    for _ in client.streaming_response(MESSAGES):
        count += 1
    return count


# -- helpers -----------------------------------------------------------------------------------------


class Bench(object):
    def __init__(self, port, quick):
        self.port = port
        self.quick = quick
        self.session = requests.Session()
        self.clients = {}
        self.lines = []  # markdown for RESULTS.md
        self.failures = []

    def url(self, mode, scenario, protocol):
        return "http://127.0.0.1:{}/{}/{}/{}".format(self.port, mode, scenario, protocol)

    def client(self, mode, scenario, protocol):
        from agenthub import AutoLLMClient

        key = (mode, scenario, protocol)
        if key not in self.clients:
            self.clients[key] = AutoLLMClient("bench-model", client_type=protocol, api_key="k",
                                              base_url=self.url(mode, scenario, protocol))
        return self.clients[key]

    def out(self, text=""):
        print(text, flush=True)
        self.lines.append(text)

    def table(self, header, rows):
        self.out("| " + " | ".join(header) + " |")
        self.out("|" + "|".join("---" for _ in header) + "|")
        for row in rows:
            self.out("| " + " | ".join(str(cell) for cell in row) + " |")
        self.out()


def timed(fn, *args):
    gc.collect()
    wall = time.perf_counter()
    cpu = time.process_time()
    result = fn(*args)
    cpu = time.process_time() - cpu
    wall = time.perf_counter() - wall
    return cpu, wall, result


def side_by_side(bench, protocol, scenario, repeats, mode="chunked"):
    """Alternate floor and library runs; -> dict of min/median CPU and wall for each."""
    url = bench.url(mode, scenario, protocol) + "/x"
    client = bench.client(mode, scenario, protocol)
    floor(bench.session, url)  # warm both: connections, server cache, imports
    library(client)
    runs = {"floor": [], "lib": []}
    for _ in range(repeats):
        runs["floor"].append(timed(floor, bench.session, url)[:2])
        runs["lib"].append(timed(library, client)[:2])
    stats = {}
    for who, samples in runs.items():
        cpus = [s[0] for s in samples]
        walls = [s[1] for s in samples]
        stats[who] = {"cpu_min": min(cpus), "cpu_med": statistics.median(cpus), "wall_min": min(walls),
                      "wall_med": statistics.median(walls)}
    return stats


def ms(seconds):
    return "{:.1f}".format(seconds * 1000)


def ratio_cell(value, target):
    return "**{:.2f}x**".format(value) if value <= target else "{:.2f}x (over {:g}x)".format(value, target)


def available(protocol):
    return importlib.util.find_spec("agenthub.providers." + MODULES[protocol]) is not None


# -- correctness first: a fast wrong answer measures nothing ---------------------------------------------


def check_text(bench, protocol, n, mode="chunked"):
    events = list(bench.client(mode, "text-{}".format(n), protocol).streaming_response(MESSAGES))
    text = "".join(i["text"] for e in events for i in e["content_items"] if i["type"] == "text")
    if text != expected_text(n) or events[-1].get("finish_reason") != "stop":
        return "text differs ({} of {} characters) or finish_reason {!r}".format(
            len(text), len(expected_text(n)), events[-1].get("finish_reason"))
    return None


def check_tool(bench, protocol, size, fragments, mode="chunked"):
    events = list(bench.client(mode, "tool-{}-{}".format(size, fragments), protocol).streaming_response(MESSAGES))
    calls = [i for e in events for i in e["content_items"] if i["type"] == "tool_call"]
    want = json.loads(tool_arguments(size))
    if len(calls) != 1 or calls[0]["arguments"] != want or events[-1].get("finish_reason") != "tool_call":
        return "tool call differs ({} calls, finish_reason {!r})".format(len(calls), events[-1].get("finish_reason"))
    return None


# -- the measurements ----------------------------------------------------------------------------------------


def measure_import(bench):
    runs = 5 if bench.quick else 15
    code = "import time; t = time.perf_counter(); {}; print(time.perf_counter() - t)"
    ready = "import agenthub, agenthub.transport, " + ", ".join(
        "agenthub.providers." + MODULES[p] for p in PROTOCOLS if available(p))
    ready_name = "agenthub, ready to stream (+ transport/requests, every protocol)"
    variants = [("requests", "import requests"), ("agenthub", "import agenthub"), (ready_name, ready)]
    # Bytecode cached for everyone, as after `pip install` (which compiles .pyc files): a checkout
    # run with PYTHONDONTWRITEBYTECODE=1 would otherwise compile agenthub's sources on every start
    # while requests' .pyc files sit in site-packages.  The cache goes to a temporary directory.
    import tempfile

    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
               PYTHONPYCACHEPREFIX=os.path.join(tempfile.gettempdir(), "agenthub-bench-pycache",
                                                platform.python_version()))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    uncached = dict(env, PYTHONDONTWRITEBYTECODE="1")
    uncached.pop("PYTHONPYCACHEPREFIX")

    def once(stmt, environ):
        return float(subprocess.check_output([sys.executable, "-c", code.format(stmt)], env=environ, cwd=HERE))

    for _, stmt in variants:
        once(stmt, env)  # writes the bytecode cache
    samples = {name: [] for name, _ in variants}
    compiled = []
    for _ in range(runs):
        for name, stmt in variants:
            samples[name].append(once(stmt, env))
        compiled.append(once(ready, uncached))
    base = min(samples["requests"])
    bench.out("## Import time (fresh interpreters, bytecode cached, min of {} runs)".format(runs))
    bench.out()
    rows = []
    for name, _ in variants:
        best = min(samples[name])
        over = best - base
        verdict = "" if name == "requests" else ("ok" if over <= TARGETS["import_ms"] / 1000 else "OVER")
        rows.append([name, ms(best), ms(statistics.median(samples[name])),
                     "" if name == "requests" else "{:+.1f} ms {}".format(over * 1000, verdict)])
    rows.append(["(for reference) the same, no bytecode cache: agenthub compiled from source",
                 ms(min(compiled)), ms(statistics.median(compiled)), "{:+.1f} ms".format((min(compiled) - base) * 1000)])
    bench.table(["import", "min ms", "median ms", "vs requests (target <= +30 ms)"], rows)
    if min(samples[ready_name]) - base > TARGETS["import_ms"] / 1000:
        bench.failures.append("import time")


def measure_text(bench):
    repeats = 3 if bench.quick else 7
    bench.out("## Text stream: {} text deltas, one SSE event per HTTP chunk ({} runs each, alternating)".format(
        TEXT_EVENTS, repeats))
    bench.out()
    rows = []
    for protocol in PROTOCOLS:
        if not available(protocol):
            print("  {}: skipped (agenthub.providers.{} is missing)".format(protocol, MODULES[protocol]))
            rows.append([protocol, "skipped: module missing", "", "", "", "", ""])
            continue
        scenario = "text-{}".format(TEXT_EVENTS)
        problem = check_text(bench, protocol, TEXT_EVENTS)
        s = side_by_side(bench, protocol, scenario, repeats)
        r_min = s["lib"]["cpu_min"] / s["floor"]["cpu_min"]
        r_med = s["lib"]["cpu_med"] / s["floor"]["cpu_med"]
        if problem or r_min > TARGETS["text"]:
            bench.failures.append("text " + protocol + (" (WRONG OUTPUT: {})".format(problem) if problem else ""))
        rows.append([protocol + (" WRONG OUTPUT" if problem else ""),
                     "{} / {}".format(ms(s["floor"]["cpu_min"]), ms(s["floor"]["cpu_med"])),
                     "{} / {}".format(ms(s["lib"]["cpu_min"]), ms(s["lib"]["cpu_med"])),
                     ratio_cell(r_min, TARGETS["text"]), "{:.2f}x".format(r_med),
                     "{} / {}".format(ms(s["floor"]["wall_min"]), ms(s["lib"]["wall_min"])),
                     "{:.2f}".format(s["lib"]["cpu_min"] * 1e6 / TEXT_EVENTS)])
        print("  {}: done".format(protocol), flush=True)
    bench.table(["protocol", "floor CPU ms min/med", "agenthub CPU ms min/med", "CPU ratio (min)",
                 "CPU ratio (median)", "wall ms min floor/agenthub", "agenthub us/event"], rows)


def measure_tool(bench):
    repeats = 3 if bench.quick else 7
    scales = (1, 4) if bench.quick else (1, 4, 16)
    big_repeats = 2 if bench.quick else 3
    bench.out("## One tool call: {} MB of arguments in {} fragments; scaling 1x/4x/16x (size and fragments)".format(
        TOOL_BYTES >> 20, TOOL_FRAGMENTS))
    bench.out()
    rows = []
    scaling = []
    for protocol in PROTOCOLS:
        if not available(protocol):
            rows.append([protocol, "skipped: module missing", "", "", "", ""])
            continue
        per_mb = []
        for k in scales:
            size, fragments = TOOL_BYTES * k, TOOL_FRAGMENTS * k
            scenario = "tool-{}-{}".format(size, fragments)
            problem = check_tool(bench, protocol, size, fragments) if k == 1 else None
            s = side_by_side(bench, protocol, scenario, repeats if k == 1 else big_repeats)
            r = s["lib"]["cpu_min"] / s["floor"]["cpu_min"]
            per_mb.append((k, s["lib"]["cpu_min"] / k, s["floor"]["cpu_min"] / k, r))
            if k == 1:
                if problem or r > TARGETS["tool"]:
                    bench.failures.append("tool " + protocol + (" (WRONG OUTPUT: {})".format(problem) if problem
                                                                else ""))
                rows.append([protocol + (" WRONG OUTPUT" if problem else ""),
                             "{} / {}".format(ms(s["floor"]["cpu_min"]), ms(s["floor"]["cpu_med"])),
                             "{} / {}".format(ms(s["lib"]["cpu_min"]), ms(s["lib"]["cpu_med"])),
                             ratio_cell(r, TARGETS["tool"]),
                             "{:.2f}x".format(s["lib"]["cpu_med"] / s["floor"]["cpu_med"]),
                             "{} / {}".format(ms(s["floor"]["wall_min"]), ms(s["lib"]["wall_min"]))])
        growth = per_mb[-1][1] / per_mb[0][1]  # CPU per MB at the largest size vs at 1x: 1.0 is linear
        linear = growth <= 1.25
        if not linear:
            bench.failures.append("tool scaling " + protocol)
        scaling.append([protocol] + ["{} ({:.2f}x)".format(ms(lib), r) for _, lib, _, r in per_mb]
                       + ["{:.2f} {}".format(growth, "linear" if linear else "NOT LINEAR")])
        print("  {}: done".format(protocol), flush=True)
    bench.table(["protocol", "floor CPU ms min/med", "agenthub CPU ms min/med", "CPU ratio (min)",
                 "CPU ratio (median)", "wall ms min floor/agenthub"], rows)
    bench.out("Scaling: agenthub CPU ms per MB of arguments at each size (ratio to the floor in brackets); the last "
              "column is CPU per MB at {}x over CPU per MB at 1x (1.00 = linear).".format(scales[-1]))
    bench.out()
    bench.table(["protocol"] + ["{}x: ms/MB".format(k) for k in scales] + ["growth per MB"], scaling)


def traced_peak(fn, *args):
    gc.collect()
    tracemalloc.start()
    try:
        fn(*args)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def measure_memory(bench):
    events = MEMORY_EVENTS // 10 if bench.quick else MEMORY_EVENTS
    small = events // 10
    bench.out("## Peak memory (tracemalloc, traced allocations in the consuming process)")
    bench.out()
    rows = []
    for protocol in PROTOCOLS:
        if not available(protocol):
            rows.append([protocol, "skipped: module missing", "", ""])
            continue
        scenario = "text-{}".format(events)
        client = bench.client("chunked", scenario, protocol)
        library(client)  # warm: server cache, imports, the pooled connection
        peak_small = traced_peak(library, bench.client("chunked", "text-{}".format(small), protocol))
        peak = traced_peak(library, client)
        floor_peak = traced_peak(floor, bench.session, bench.url("chunked", scenario, protocol) + "/x")
        rows.append([protocol, "{:.0f} KiB".format(floor_peak / 1024), "{:.0f} KiB".format(peak_small / 1024),
                     "{:.0f} KiB".format(peak / 1024)])
        # bounded by the output: no more than twice what the floor needs to hold one event (+1 MiB),
        # however long the stream (Responses repeats the whole text in its final events: the
        # floor's peak grows with it, and so may agenthub's)
        if peak > 2 * floor_peak + (1 << 20):
            bench.failures.append("memory " + protocol)
    bench.table(["protocol (stateless text)", "floor, {} events".format(events), "agenthub, {} events".format(small),
                 "agenthub, {} events".format(events)], rows)
    bench.out("Target: agenthub's peak stays within twice the floor's plus 1 MiB (the floor holds one event at a "
              "time), whatever the stream's length.")
    bench.out()
    scenario = "tool-{}-{}".format(TOOL_BYTES, TOOL_FRAGMENTS)
    if available("openai-chat"):
        client = bench.client("chunked", scenario, "openai-chat")
        library(client)
        peak = traced_peak(library, client)
        size = len(tool_arguments(TOOL_BYTES))
        bench.out("One openai-chat tool call of {:.0f} KiB arguments in {} fragments: peak {:.0f} KiB ({:.1f}x the "
                  "arguments: the fragments, their join and the parsed object).".format(
                      size / 1024, TOOL_FRAGMENTS, peak / 1024, peak / size))
        bench.out()
        stateful = bench.client("chunked", "text-{}".format(small), "openai-chat")

        def stateful_run():
            stateful.clear_history()
            for _ in stateful.streaming_response_stateful(MESSAGES[0]):
                pass

        peak = traced_peak(stateful_run)
        bench.out("For comparison, a stateful openai-chat stream of {} events (the events are kept to build the "
                  "history, by design): peak {:.0f} KiB.".format(small, peak / 1024))
        bench.out()


def measure_first_event(bench):
    repeats = 3
    bench.out("## Time to first event: the server sends the first text event, then waits {:.0f} s".format(1.0))
    bench.out()
    rows = []
    for protocol in PROTOCOLS:
        if not available(protocol):
            rows.append([protocol, "skipped: module missing", "", ""])
            continue
        for mode, label in (("wait", "chunked"), ("waitclosed", "close-delimited")):
            lib_times, floor_times = [], []
            for _ in range(repeats):
                client = bench.client(mode, "text-50", protocol)
                lib_times.append(first_text_event(client))
                floor_times.append(first_data_line(bench.url(mode, "text-50", protocol) + "/x"))
            best = min(lib_times)
            if best > 0.5:
                bench.failures.append("first event " + protocol + " " + label)
            rows.append([protocol, label, "{:.1f}".format(min(floor_times) * 1000), "{:.1f}{}".format(
                best * 1000, "" if best < 0.5 else " (WAITED FOR MORE BYTES)")])
    bench.table(["protocol", "body", "floor ms (first data line)", "agenthub ms (first text event)"], rows)


def measure_burst(bench):
    """The whole answer in one write (one HTTP chunk, or a close-delimited body): CPU beside the floor
    for the text and the tool stream, and the time to the first text event."""
    repeats = 3 if bench.quick else 7
    bench.out("## Bursts: the whole body in one write ({} runs each, alternating)".format(repeats))
    bench.out()
    bench.out("The server writes the whole body at once: one HTTP chunk (`burst`), as a gateway that buffers, a "
              "proxy or a replay sends it.  Same streams and floor as above.")
    bench.out()
    rows = []
    for protocol in PROTOCOLS:
        if not available(protocol):
            rows.append([protocol, "skipped: module missing", "", "", "", "", ""])
            continue
        for kind, scenario, check in (
                ("text", "text-{}".format(TEXT_EVENTS), lambda: check_text(bench, protocol, TEXT_EVENTS, "burst")),
                ("tool", "tool-{}-{}".format(TOOL_BYTES, TOOL_FRAGMENTS),
                 lambda: check_tool(bench, protocol, TOOL_BYTES, TOOL_FRAGMENTS, "burst"))):
            problem = check()
            s = side_by_side(bench, protocol, scenario, repeats, "burst")
            r_min = s["lib"]["cpu_min"] / s["floor"]["cpu_min"]
            target = BURST_TARGETS[kind]
            if problem or r_min > target:
                bench.failures.append("burst {} {}".format(kind, protocol)
                                      + (" (WRONG OUTPUT: {})".format(problem) if problem else ""))
            rows.append([protocol + (" WRONG OUTPUT" if problem else ""), kind,
                         "{} / {}".format(ms(s["floor"]["cpu_min"]), ms(s["floor"]["cpu_med"])),
                         "{} / {}".format(ms(s["lib"]["cpu_min"]), ms(s["lib"]["cpu_med"])),
                         ratio_cell(r_min, target), "{:.2f}x".format(s["lib"]["cpu_med"] / s["floor"]["cpu_med"]),
                         "{} / {}".format(ms(s["floor"]["wall_min"]), ms(s["lib"]["wall_min"]))])
        print("  {}: done".format(protocol), flush=True)
    bench.table(["protocol", "stream", "floor CPU ms min/med", "agenthub CPU ms min/med", "CPU ratio (min)",
                 "CPU ratio (median)", "wall ms min floor/agenthub"], rows)
    repeats = 5 if bench.quick else 15
    bench.out("Time to the first text event of the {}-delta text stream sent in one write (min and median of {} "
              "runs; target: within {:.0f} ms of the floor's first data line):".format(
                  TEXT_EVENTS, repeats, BURST_TARGETS["first_s"] * 1000))
    bench.out()
    rows = []
    scenario = "text-{}".format(TEXT_EVENTS)
    for protocol in PROTOCOLS:
        if not available(protocol):
            continue
        for mode, label in (("burst", "one chunk"), ("burstclosed", "close-delimited")):
            client = bench.client(mode, scenario, protocol)
            url = bench.url(mode, scenario, protocol) + "/x"
            first_text_event(client)  # warm: the server's cache, the connection
            lib_times, floor_times = [], []
            for _ in range(repeats):
                floor_times.append(first_data_line(url))
                lib_times.append(first_text_event(client))
            over = min(lib_times) - min(floor_times)
            ok = over <= BURST_TARGETS["first_s"]
            if not ok:
                bench.failures.append("burst first event {} {}".format(protocol, label))
            rows.append([protocol, label, "{:.2f} / {:.2f}".format(min(floor_times) * 1000,
                                                                   statistics.median(floor_times) * 1000),
                         "{:.2f} / {:.2f}".format(min(lib_times) * 1000, statistics.median(lib_times) * 1000),
                         "{:+.2f} ms {}".format(over * 1000, "ok" if ok else "OVER")])
    bench.table(["protocol", "body", "floor ms min/med (first data line)", "agenthub ms min/med (first text event)",
                 "agenthub - floor (min)"], rows)


def first_text_event(client):
    start = time.perf_counter()
    stream = client.streaming_response(MESSAGES)
    try:
        for event in stream:
            if any(i.get("type") == "text" for i in event["content_items"]):
                return time.perf_counter() - start
    finally:
        stream.close()
    raise AssertionError("no text event")


def first_data_line(url):
    """The floor's time to the bytes of the first text delta (``" the"``, the stream's first word)."""
    session = requests.Session()
    start = time.perf_counter()
    response = session.post(url, data=FLOOR_BODY, stream=True)
    raw = response.raw
    # a close-delimited body read with iter_content would wait for the end: read1 returns what arrived
    # (urllib3 1.x has no read1: http.client's response underneath has)
    read1 = raw.read1 if hasattr(raw, "read1") else raw._fp.read1
    chunks = response.iter_content(None) if raw.chunked else iter(lambda: read1(65536), b"")
    seen = b""
    try:
        for chunk in chunks:
            seen += chunk
            if b'" the"' in seen:
                return time.perf_counter() - start
    finally:
        response.close()
        session.close()
    raise AssertionError("no data")


# -- main ----------------------------------------------------------------------------------------------------


def start_server():
    server = subprocess.Popen([sys.executable, os.path.join(HERE, "server.py")], stdout=subprocess.PIPE,
                              universal_newlines=True)
    line = server.stdout.readline()
    if not line.startswith("PORT "):
        server.kill()
        raise SystemExit("the benchmark server did not start")
    return server, int(line.split()[1])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats and no 16x step (a smoke run)")
    parser.add_argument("--only", default="import,text,tool,memory,first,burst,failover,server",
                        help="comma-separated subset of: import,text,tool,memory,first,burst,failover,server")
    parser.add_argument("--out", default=os.path.join(HERE, "RESULTS.md"), help="where to write the results")
    args = parser.parse_args(argv)
    wanted = set(args.only.split(","))
    server, port = start_server()
    bench = Bench(port, args.quick)
    started = time.perf_counter()
    try:
        import urllib3

        import agenthub

        bench.out("# agenthub benchmark results")
        bench.out()
        bench.out("`python bench/run.py{}` on Python {} ({}), requests {}, urllib3 {}, {} CPUs, {}; agenthub {}.".format(
            " --quick" if args.quick else "", platform.python_version(), platform.python_implementation(),
            requests.__version__, urllib3.__version__, os.cpu_count(), platform.platform(terse=True),
            agenthub.__version__))
        bench.out()
        bench.out("Ratios are agenthub / floor, CPU time (`time.process_time`) of the consuming process, the SSE "
                  "server being another process.  Floor: requests (`stream=True`, `iter_content(None)`) + splitting "
                  "lines + `json.loads` per data line, building nothing.  min = best run, med = median run.")
        bench.out()
        missing = [p for p in PROTOCOLS if not available(p)]
        for protocol in missing:
            print("{}: skipped (agenthub.providers.{} is missing)".format(protocol, MODULES[protocol]))
        if "import" in wanted:
            measure_import(bench)
        if "text" in wanted:
            measure_text(bench)
        if "tool" in wanted:
            measure_tool(bench)
        if "memory" in wanted:
            measure_memory(bench)
        if "first" in wanted:
            measure_first_event(bench)
        if "burst" in wanted:
            measure_burst(bench)
        if "failover" in wanted:
            import failover  # bench/failover.py: the time to fail over past an open circuit and a 503

            failover.measure(bench, MESSAGES, bench.quick)
        if "server" in wanted:
            import serve  # bench/serve.py: CPU per event through agenthub serve, and through gunicorn

            serve.measure(bench, MESSAGES, TEXT_EVENTS, TOOL_BYTES, TOOL_FRAGMENTS,
                          [p for p in PROTOCOLS if available(p)], ROOT)
        bench.out("Targets missed: {}.".format(", ".join(bench.failures) if bench.failures else "none"))
        if missing:
            bench.out("Skipped protocols (module missing): {}.".format(", ".join(missing)))
        bench.out()
        bench.out("Total benchmark time: {:.0f} s.".format(time.perf_counter() - started))
    finally:
        server.terminate()
        server.wait()
    with open(args.out, "w", encoding="utf-8") as handle:
        handle.write("\n".join(bench.lines) + "\n")
    print("written to", os.path.relpath(args.out))
    return 1 if bench.failures else 0


if __name__ == "__main__":
    sys.exit(main())
