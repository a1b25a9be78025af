"""agenthub.mcp's CPU per tools/call and per 1,000-tool tools/list beside the official ``mcp`` client (issue 41,
item 3), on stdio and on both HTTP modes; with ``--before CHECKOUT``, another checkout's agenthub.mcp as a third
client in the same runs (a before/after side by side).

    python bench/mcp_cpu.py [--runs 5] [--calls 500] [--lists 20] [--before /path/to/old/checkout]

Servers: the official SDK's (tests/mcp_official_server.py) for calls, bench/mcp_many_tools.py (the same with 993
more tools, one ~0.5 MB answer) for listings; HTTP ones in their own process, stdio ones children of the client
(their CPU is not counted).  Each client runs in a fresh process per run (warm-up first: 50 calls, 2 listings;
every answer checked); runs alternate between the clients with a rotating start.  CPU is the client process's
``time.process_time`` (every thread) per operation; median over the runs; ratio: agenthub / official, of medians;
the load average printed beside each row.  Listings bypass both caches (``refresh=True``, ``cache_mode="refresh"``).
Targets: tools/call <= 0.5x, tools/list < 1x the official client's, every transport.  Not a test.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests"))

from mcp_support import OFFICIAL, Subprocess  # noqa: E402

MANY = os.path.join(HERE, "mcp_many_tools.py")

OURS = r"""
import json, sys, time
root, target, protocol, op, count = json.loads(sys.argv[1])
sys.path.insert(0, root)
from agenthub import mcp
with mcp.connect(target, protocol=protocol, timeout=60) as server:
    def once(n):
        if op == "call":
            assert server.call_tool("echo", {"text": str(n)})["text"] == str(n)
        else:
            assert len(server.list_tools(refresh=True)) >= 1000
    for n in range(50 if op == "call" else 2):
        once(n)
    cpu = time.process_time()
    for n in range(count):
        once(n)
    cpu = time.process_time() - cpu
print(json.dumps({"cpu": cpu / count}))
"""

THEIRS = r"""
import asyncio, json, sys, time
from mcp import Client
from mcp.client.stdio import StdioServerParameters
root, target, mode, op, count = json.loads(sys.argv[1])
if isinstance(target, list):
    target = StdioServerParameters(command=target[0], args=target[1:])

async def main():
    async with Client(target, mode=mode) as client:
        async def once(n):
            if op == "call":
                assert (await client.call_tool("echo", {"text": str(n)})).content[0].text == str(n)
            else:
                assert len((await client.list_tools(cache_mode="refresh")).tools) >= 1000
        for n in range(50 if op == "call" else 2):
            await once(n)
        cpu = time.process_time()
        for n in range(count):
            await once(n)
        return time.process_time() - cpu

print(json.dumps({"cpu": asyncio.run(main()) / count}))
"""


def one(code, argument):
    out = subprocess.run([sys.executable, "-c", code, json.dumps(argument)], capture_output=True, timeout=900)
    if out.returncode:
        raise SystemExit(out.stderr.decode("utf-8", "replace")[-3000:])
    return json.loads(out.stdout)["cpu"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--lists", type=int, default=20)
    parser.add_argument("--before", help="another checkout: its agenthub.mcp measured in the same runs")
    parser.add_argument("--only", default="call,list")
    args = parser.parse_args()
    clients = [("agenthub.mcp", OURS, ROOT)] + ([("agenthub.mcp before", OURS, os.path.abspath(args.before))]
                                                 if args.before else []) + [("official", THEIRS, None)]
    print("Python {}".format(sys.version.split()[0]))
    print("| op | transport | " + " | ".join("{} CPU/op".format(c[0]) for c in clients) +
          " | ratio | " + ("ratio before | " if args.before else "") + "load |")
    print("|---|---|" + "---:|" * (len(clients) + 2 + bool(args.before)))
    for op in args.only.split(","):
        script = OFFICIAL if op == "call" else MANY
        count = args.calls if op == "call" else args.lists
        servers = {mode: Subprocess([script, "http", mode], wait=60) for mode in ("stateless", "stateful")}
        try:
            plans = [("HTTP, stateless (2026-07-28)", servers["stateless"].url, "auto", "auto"),
                     ("HTTP, stateful session (2025-11-25)", servers["stateful"].url, "2025-11-25", "legacy"),
                     ("stdio (2026-07-28)", [sys.executable, script, "stdio"], "auto", "auto")]
            for title, target, protocol, mode in plans:
                cpu = {c[0]: [] for c in clients}
                for run in range(args.runs):
                    for name, code, root in clients[run % len(clients):] + clients[:run % len(clients)]:
                        cpu[name].append(one(code, [root, target, protocol if root else mode, op, count]))
                med = {name: statistics.median(values) * 1000 for name, values in cpu.items()}
                cells = ["{:.3f} ms".format(med[c[0]]) for c in clients]
                ratios = ["{:.2f}x".format(med["agenthub.mcp"] / med["official"])]
                if args.before:
                    ratios.append("{:.2f}x".format(med["agenthub.mcp before"] / med["official"]))
                print("| {} | {} | {} | {} | {:.2f} |".format(
                    "tools/call" if op == "call" else "tools/list (1,000 tools)", title, " | ".join(cells),
                    " | ".join(ratios), os.getloadavg()[0]), flush=True)
        finally:
            for server in servers.values():
                server.stop()


if __name__ == "__main__":
    main()
