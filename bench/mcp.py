"""A tools/call round trip: agenthub.mcp (synchronous) beside the official ``mcp`` SDK's async client,
against the same local server (the official SDK's, started as a separate process: its CPU is not counted).

    python bench/mcp.py                  # 500 calls per run, 3 alternating runs per client and mode
    python bench/mcp.py --calls 2000

Modes: the 2026-07-28 era over Streamable HTTP (the server in stateless_http mode), the 2025-11-25 era
(a stateful session), and stdio.  Each client runs in a fresh process of its own (the official client needs
Python >= 3.10 and the test extra); each call's answer is checked before anything is timed.  Latency is
the wall time of one call (median and p95); CPU is the client process's ``time.process_time`` per call.
Not a test: nothing here is asserted.
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

OURS = r"""
import json, sys, time
sys.path.insert(0, {root!r})
from agenthub import mcp
target, protocol, calls = json.loads(sys.argv[1])
with mcp.connect(target, protocol=protocol, timeout=30) as server:
    for n in range(50):
        assert server.call_tool("echo", {{"text": str(n)}})["text"] == str(n)
    laps = []
    cpu = time.process_time()
    for n in range(calls):
        start = time.perf_counter()
        answer = server.call_tool("echo", {{"text": str(n)}})
        laps.append(time.perf_counter() - start)
        assert answer["text"] == str(n)
    cpu = time.process_time() - cpu
print(json.dumps({{"laps": laps, "cpu": cpu, "version": server.protocol_version}}))
"""

THEIRS = r"""
import asyncio, json, sys, time
from mcp import Client
from mcp.client.stdio import StdioServerParameters
target, mode, calls = json.loads(sys.argv[1])
if isinstance(target, list):
    target = StdioServerParameters(command=target[0], args=target[1:])

async def main():
    async with Client(target, mode=mode) as client:
        for n in range(50):
            assert (await client.call_tool("echo", {{"text": str(n)}})).content[0].text == str(n)
        laps = []
        cpu = time.process_time()
        for n in range(calls):
            start = time.perf_counter()
            answer = await client.call_tool("echo", {{"text": str(n)}})
            laps.append(time.perf_counter() - start)
            assert answer.content[0].text == str(n)
        cpu = time.process_time() - cpu
        return {{"laps": laps, "cpu": cpu, "version": client.protocol_version}}

print(json.dumps(asyncio.run(main())))
"""


def run(code, argument):
    out = subprocess.run([sys.executable, "-c", code, json.dumps(argument)], capture_output=True, timeout=600)
    if out.returncode:
        raise SystemExit(out.stderr.decode("utf-8", "replace")[-3000:])
    return json.loads(out.stdout)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    rows = []
    servers = {"stateless": Subprocess([OFFICIAL, "http", "stateless"], wait=60),
               "stateful": Subprocess([OFFICIAL, "http", "stateful"], wait=60)}
    try:
        plans = [("2026-07-28, HTTP (stateless_http)", servers["stateless"].url, "auto", "auto"),
                 ("2025-11-25, HTTP (stateful session)", servers["stateful"].url, "2025-11-25", "legacy"),
                 ("2026-07-28, stdio", [sys.executable, OFFICIAL, "stdio"], "auto", "auto")]
        for title, target, protocol, mode in plans:
            found = {"agenthub.mcp": [], "mcp (official, async)": []}
            for _ in range(args.runs):
                found["agenthub.mcp"].append(run(OURS.format(root=ROOT), [target, protocol, args.calls]))
                found["mcp (official, async)"].append(run(THEIRS.format(), [target, mode, args.calls]))
            for client, results in found.items():
                laps = sorted(lap for result in results for lap in result["laps"])
                cpu = statistics.median(result["cpu"] / args.calls for result in results)
                rows.append((title, client, results[0]["version"], statistics.median(laps) * 1000,
                             laps[int(len(laps) * 0.95)] * 1000, cpu * 1000))
    finally:
        for server in servers.values():
            server.stop()
    print("| mode | client | version | median ms | p95 ms | CPU ms/call |")
    print("| --- | --- | --- | ---: | ---: | ---: |")
    for title, client, version, median, p95, cpu in rows:
        print("| {} | {} | {} | {:.2f} | {:.2f} | {:.3f} |".format(title, client, version, median, p95, cpu))


if __name__ == "__main__":
    main()
