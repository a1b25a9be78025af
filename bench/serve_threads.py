"""``agenthub serve``'s threads per stream (issue 41, item 4): what its CPU time is made of besides instructions.

    python bench/serve_threads.py [--before main] [--reps 7] [--protocols openai-chat,anthropic]
    python bench/serve_threads.py --strace [--before main] [--streams 4]

The upstream is bench/server.py (its own process), the streams of bench/serve_ab.py.  Per tree (``--before``'s
library and this checkout's, run one after the other), a server (``agenthub.apps.server.serve`` in a process of
its own whose threads report ``getrusage(RUSAGE_THREAD)`` when they end) and, in this process, the direct client
and the agenthub client through the server, alternating.  Printed per protocol and stream, medians: the direct
client's CPU; client, server and their sum as ratios to it; the pump thread's and the response thread's CPU,
system time, voluntary and involuntary context switches; the client's context switches through the server; the
response's writes (``_Body.__next__`` calls, counted by the server process).  (The clients are this checkout's: only the server changes sides.)

``--gather S``: the after side's server with ``GATHER_SECONDS`` set to S (an experiment).

``--strace``: the server under ``strace -f -c`` instead, ``--streams`` chat text streams: its system calls per
stream (strace slows every call, so the threads' timing, and the count of writes, is not the native one; the
start-up's calls, the same on both sides, are spread over the streams).
"""

import argparse
import json
import os
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from serve_ab import SCENARIOS  # noqa: E402  (the same streams)

MESSAGES = [{"role": "user", "content_items": [{"type": "text", "text": "Write the file."}]}]

_SERVER = r'''
import json, resource, sys, threading
from agenthub.apps.server import serve
ended = []
_run = threading.Thread.run
def run(self):
    try:
        _run(self)
    finally:
        r = resource.getrusage(resource.RUSAGE_THREAD)
        ended.append([self.name, r.ru_utime, r.ru_stime, r.ru_nvcsw, r.ru_nivcsw])
threading.Thread.run = run
import agenthub.apps.server as server_module
if len(sys.argv) > 2:
    server_module.GATHER_SECONDS = float(sys.argv[2])
writes = [0]
_next = server_module._Body.__next__
def counted(self):
    frame = _next(self)
    writes[0] += 1
    return frame
server_module._Body.__next__ = counted
server, url = serve(sys.argv[1], port=0)
threading.Thread(target=server.serve_forever, daemon=True).start()
print(url, flush=True)
for line in sys.stdin:
    r = resource.getrusage(resource.RUSAGE_SELF)
    print(json.dumps([r.ru_utime + r.ru_stime, ended[:], writes[0]]), flush=True)
    del ended[:]
    writes[0] = 0
'''


def _config(port, protocols, scenarios=SCENARIOS):
    from serve_ab import bench_rows

    rows = bench_rows(port, protocols, scenarios)
    handle, path = tempfile.mkstemp(suffix=".json", prefix="agenthub-bench-serve-threads-")
    with os.fdopen(handle, "w") as out:
        json.dump({"models": rows, "max_concurrent_streams": 16}, out)
    return rows, path


def _cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime, r.ru_nvcsw + r.ru_nivcsw


def threads(tree, rows, config, reps, gather=None):
    """Per row, the medians of a stream (see the module's doc)."""
    server = subprocess.Popen([sys.executable, "-c", _SERVER, config] + ([str(gather)] if gather else []),
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, universal_newlines=True,
                              env=dict(os.environ, PYTHONPATH=tree), cwd=tree)
    try:
        url = server.stdout.readline().strip()
        from agenthub import AutoLLMClient

        def report():
            server.stdin.write("\n")
            server.stdin.flush()
            return json.loads(server.stdout.readline())

        out = {}
        for row in rows:
            via = AutoLLMClient(row["id"], client_type="agenthub", base_url=url)
            direct = AutoLLMClient("bench-model", client_type=row["client_type"], api_key="k",
                                   base_url=row["base_url"], max_retries=0)
            for client in (via, direct):  # warm: the connections, the imports
                for _ in client.streaming_response(MESSAGES):
                    pass
            time.sleep(0.05)
            before = report()[0]
            samples = []
            for _ in range(reps):
                a = _cpu()
                for _ in direct.streaming_response(MESSAGES):
                    pass
                b = _cpu()
                for _ in via.streaming_response(MESSAGES):
                    pass
                c = _cpu()
                time.sleep(0.05)  # the server's threads are done with the stream
                total, ended, count = report()
                pump = [t for t in ended if t[0] == "agenthub-serve-upstream"]
                writer = [t for t in ended if t[0] != "agenthub-serve-upstream"]
                samples.append([b[0] - a[0], c[0] - b[0], total - before]
                               + [sum(t[k] for t in pump) for k in (1, 2, 3, 4)]
                               + [sum(t[k] for t in writer) for k in (1, 2, 3, 4)] + [c[1] - b[1], count])
                before = total
            out[row["id"]] = [statistics.median(s[k] for s in samples) for k in range(13)] + [
                statistics.median((s[1] + s[2]) / s[0] for s in samples)]
        return out
    finally:
        server.stdin.close()
        server.wait(30)


def syscalls(tree, config, count):
    """System calls of the server per stream (``strace -f -c``), chat text."""
    folder = tempfile.mkdtemp(prefix="agenthub-bench-serve-strace-")
    trace = os.path.join(folder, "strace.txt")
    server = subprocess.Popen(["strace", "-f", "-c", "-o", trace, sys.executable, "-m", "agenthub", "serve",
                               "--config", config, "--port", "0"], stdout=subprocess.PIPE,
                              universal_newlines=True, env=dict(os.environ, PYTHONPATH=tree), cwd=tree)
    try:
        url = server.stdout.readline().strip()
        from agenthub import AutoLLMClient

        client = AutoLLMClient("openai-chat-text", client_type="agenthub", base_url=url)
        for _ in range(count):
            for _ in client.streaming_response(MESSAGES):
                pass
        time.sleep(0.2)
    finally:
        kids = subprocess.check_output(["ps", "-o", "pid=", "--ppid", str(server.pid)]).decode().split()
        for pid in kids:
            os.kill(int(pid), signal.SIGINT)
        server.wait(30)
    calls = {}
    with open(trace) as handle:
        for line in handle:
            parts = line.split()
            if len(parts) >= 5 and parts[3].isdigit():
                calls[parts[-1]] = int(parts[3]) / float(count)
    return calls


def main():
    import ab

    parser = argparse.ArgumentParser()
    parser.add_argument("--before", default="main")
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--streams", type=int, default=4)
    parser.add_argument("--protocols", default="openai-chat,openai-responses,anthropic,gemini")
    parser.add_argument("--strace", action="store_true")
    parser.add_argument("--gather", type=float, help="the after side's GATHER_SECONDS (an experiment)")
    args = parser.parse_args()
    upstream = subprocess.Popen([sys.executable, os.path.join(HERE, "server.py")], stdout=subprocess.PIPE)
    try:
        port = int(upstream.stdout.readline().split()[1])
        trees = (("before", ab.tree_at(args.before)), ("after", ab.ROOT))
        if args.strace:
            rows, config = _config(port, ["openai-chat"], SCENARIOS[:1])
            seen = {side: syscalls(tree, config, args.streams) for side, tree in trees}
            print("`agenthub serve` under strace -f -c, openai-chat text, system calls per stream, before = {} / "
                  "after".format(args.before))
            print()
            print("| call | before | after |")
            print("| --- | ---: | ---: |")
            names = sorted(set(seen["before"]) | set(seen["after"]), key=lambda n: -seen["after"].get(n, 0))
            for name in names:
                if max(seen["before"].get(name, 0), seen["after"].get(name, 0)) >= 1:
                    print("| {} | {:.0f} | {:.0f} |".format(name, seen["before"].get(name, 0),
                                                           seen["after"].get(name, 0)))
            return
        rows, config = _config(port, args.protocols.split(","))
        loads = [ab.load()]
        seen = {}
        for side, tree in trees:
            seen[side] = threads(tree, rows, config, args.reps, args.gather if side == "after" else None)
            loads.append(ab.load())
        print("`agenthub serve`'s threads per stream, medians of {} reps, before = {} / after; {}".format(
            args.reps, args.before, ab.loads_text(loads)))
        print()
        print("| protocol | stream | direct ms | client + server | server | pump ms (sys) | pump voluntary; involuntary "
              "context switches | response thread ms (sys) | its voluntary; involuntary | client csw | writes |")
        print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        for row in rows:
            b, a = seen["before"][row["id"]], seen["after"][row["id"]]

            def pair(text, k, scale=1.0):
                return "{} / {}".format(text.format(b[k] * scale), text.format(a[k] * scale))

            protocol, _, label = row["id"].rpartition("-")
            print("| {} | {} | {} | {} | {} | {} ({}) | {}; {} | {} ({}) | {}; {} | {} | {} |".format(
                protocol, label, pair("{:.1f}", 0, 1e3), pair("{:.2f}x", 13),
                "{:.2f}x / {:.2f}x".format(b[2] / b[0], a[2] / a[0]),
                pair("{:.1f}", 3, 1e3), pair("{:.1f}", 4, 1e3), pair("{:.0f}", 5), pair("{:.0f}", 6),
                pair("{:.1f}", 7, 1e3), pair("{:.1f}", 8, 1e3), pair("{:.0f}", 9), pair("{:.0f}", 10),
                pair("{:.0f}", 11), pair("{:.0f}", 12)))
    finally:
        upstream.kill()
        upstream.wait()


if __name__ == "__main__":
    main()
