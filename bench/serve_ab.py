"""``agenthub serve``'s cost, client plus server against the direct client (issue 41, item 4), before and after,
in one run.

    python bench/serve_ab.py [--before main] [--reps 7] [--protocols openai-chat,anthropic]

The upstream is bench/server.py (a separate process: its CPU is not counted), 20,000 text deltas and a 1 MB tool
call in 20,000 fragments per protocol, one HTTP chunk per event.  Two ``agenthub serve`` processes run side by
side, one with the library as it was at ``--before`` (``ab.tree_at``), one with this checkout; each has its own
client process (``client_type="agenthub"``, and the direct client for the same stream), with the same tree
first on its path.  Per rep, in alternating order, each side streams every scenario directly and then through
its server: the client's CPU and context switches (``getrusage`` in the client process; the events of its first
stream each way compared) and the server's CPU (``serve.process_cpu``: its process CPU clock, all threads, in
nanoseconds; /proc's 10 ms ticks where there is none).  Printed per protocol and stream: the median direct CPU,
the medians of client and server through the server as ratios to it, and their sum (target <= 1.5x), before and
after side by side, with the load average; then the client's context switches per stream, direct and through
the server (the server's own threads: ``serve_threads.py``).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

SCENARIOS = (("text", "text-20000"), ("tool", "tool-1048576-20000"))
TARGET = 1.5

_WORKER = r'''
import hashlib, json, re, resource, sys
import agenthub
from agenthub import AutoLLMClient
print(agenthub.__file__, flush=True)
messages = [{"role": "user", "content_items": [{"type": "text", "text": "Write the file."}]}]
clients = {}
digests = {}
for line in sys.stdin:
    mode, url, model, protocol = json.loads(line)
    key = (mode, url, model)
    client = clients.get(key)
    if client is None:
        if mode == "via":
            client = AutoLLMClient(model, client_type="agenthub", base_url=url)
        else:
            client = AutoLLMClient("bench-model", client_type=protocol, api_key="k", base_url=url, max_retries=0)
        clients[key] = client
        # warm (the connection, the imports), and what came: the events without created_at, made-up ids unified
        events = [{k: v for k, v in e.items() if k != "created_at"} for e in client.streaming_response(messages)]
        text = re.sub(r"call_[0-9a-f]{12}_(\d+)", r"call_generated_\1", json.dumps(events, default=repr))
        digests[key] = hashlib.sha256(text.encode()).hexdigest()
    before = resource.getrusage(resource.RUSAGE_SELF)
    count = 0
    for _ in client.streaming_response(messages):
        count += 1
    after = resource.getrusage(resource.RUSAGE_SELF)
    print(json.dumps([after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, count, digests[key],
                      after.ru_nvcsw - before.ru_nvcsw + after.ru_nivcsw - before.ru_nivcsw]), flush=True)
'''


def bench_rows(port, protocols, scenarios=SCENARIOS):
    """The server's config rows: one per protocol and scenario of bench/server.py on ``port``."""
    rows = []
    for protocol in protocols:
        for label, scenario in scenarios:
            rows.append({"id": "{}-{}".format(protocol, label), "model": "bench-model", "client_type": protocol,
                         "api_key": "k", "max_retries": 0,
                         "base_url": "http://127.0.0.1:{}/chunked/{}/{}".format(port, scenario, protocol)})
    return rows


class Side(object):
    """One tree: its server and its client process."""

    def __init__(self, tree, config_path):
        env = dict(os.environ, PYTHONPATH=tree)
        # (run in the tree: ``-m`` and ``-c`` put the working directory first on the path)
        self.server = subprocess.Popen([sys.executable, "-m", "agenthub", "serve", "--config", config_path,
                                        "--port", "0"], stdout=subprocess.PIPE, universal_newlines=True, env=env,
                                       cwd=tree)
        self.url = self.server.stdout.readline().strip()
        self.client = subprocess.Popen([sys.executable, "-c", _WORKER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                       universal_newlines=True, env=env, cwd=tree)

        where = self.client.stdout.readline().strip()
        if not where.startswith(os.path.realpath(tree)) and not where.startswith(tree):
            raise SystemExit("the client imported {}, not the tree {}".format(where, tree))

    def drain(self, mode, url, model, protocol):
        self.client.stdin.write(json.dumps([mode, url, model, protocol]) + "\n")
        self.client.stdin.flush()
        return json.loads(self.client.stdout.readline())

    def close(self):
        self.client.stdin.close()
        self.client.wait(30)
        self.server.terminate()
        self.server.wait(30)


def main():
    import ab
    import serve

    parser = argparse.ArgumentParser()
    parser.add_argument("--before", default="main")
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--protocols", default="openai-chat,openai-responses,anthropic,gemini")
    args = parser.parse_args()
    protocols = args.protocols.split(",")
    upstream = subprocess.Popen([sys.executable, os.path.join(HERE, "server.py")], stdout=subprocess.PIPE)
    sides = {}
    try:
        port = int(upstream.stdout.readline().split()[1])
        rows = bench_rows(port, protocols)
        folder = tempfile.mkdtemp(prefix="agenthub-bench-serve-ab-")
        config_path = os.path.join(folder, "server.json")
        with open(config_path, "w", encoding="utf-8") as handle:
            json.dump({"models": rows, "max_concurrent_streams": 16}, handle)
        sides["before"] = Side(ab.tree_at(args.before), config_path)
        sides["after"] = Side(ab.ROOT, config_path)
        samples = {(side, row["id"]): {"direct": [], "client": [], "server": [], "direct_csw": [], "client_csw": []}
                   for side in sides for row in rows}
        loads = []
        for rep in range(args.reps):
            order = ("before", "after") if rep % 2 == 0 else ("after", "before")
            for side in order:
                run = sides[side]
                for row in rows:
                    loads.append(ab.load())
                    cell = samples[(side, row["id"])]
                    direct = run.drain("direct", row["base_url"], row["id"], row["client_type"])
                    cell["direct"].append(direct[0])
                    cell["direct_csw"].append(direct[3])
                    start = serve.process_cpu(run.server.pid)
                    via = run.drain("via", run.url, row["id"], row["client_type"])
                    cell["client"].append(via[0])
                    cell["client_csw"].append(via[3])
                    if via[2] != direct[2]:
                        raise SystemExit("{} {}: the events through the server are not the direct client's".format(
                            side, row["id"]))
                    time.sleep(0.05)  # the server's threads are done with the stream
                    cell["server"].append(serve.process_cpu(run.server.pid) - start)
            print("rep {} done ({})".format(rep + 1, ab.loads_text(loads[-len(rows) * 2:])), file=sys.stderr,
                  flush=True)
        print("`agenthub serve`: client + server CPU through the server as a ratio to the direct client's, "
              "medians of {} reps, before = {}; {}".format(args.reps, args.before, ab.loads_text(loads)))
        print()
        print("| protocol | stream | direct ms before / after | client before / after | server before / after "
              "| client + server before / after |")
        print("| --- | --- | ---: | ---: | ---: | ---: |")
        for row in rows:
            cells = []
            for key in ("direct", "client", "server", "total"):
                pair = []
                for side in ("before", "after"):
                    cell = samples[(side, row["id"])]
                    direct = statistics.median(cell["direct"])
                    if key == "direct":
                        pair.append("{:.1f}".format(direct * 1e3))
                    elif key == "total":
                        total = statistics.median([a + b for a, b in zip(cell["client"], cell["server"])])
                        text = "{:.2f}x".format(total / direct)
                        pair.append("**{}**".format(text) if total / direct <= TARGET else text)
                    else:
                        pair.append("{:.2f}x".format(statistics.median(cell[key]) / direct))
                cells.append(" / ".join(pair))
            protocol, _, label = row["id"].rpartition("-")
            print("| {} | {} | {} |".format(protocol, label, " | ".join(cells)))
        print()
        print("Context switches of the client process per stream (voluntary + involuntary), medians:")
        print()
        print("| protocol | stream | direct before / after | through the server before / after |")
        print("| --- | --- | ---: | ---: |")
        for row in rows:
            protocol, _, label = row["id"].rpartition("-")
            print("| {} | {} | {} |".format(protocol, label, " | ".join(
                " / ".join("{:.0f}".format(statistics.median(samples[(side, row["id"])][key]))
                           for side in ("before", "after")) for key in ("direct_csw", "client_csw"))))
    finally:
        for side in sides.values():
            side.close()
        upstream.kill()
        upstream.wait()


if __name__ == "__main__":
    main()
