"""The bulk runner's costs, side by side in one run; writes its section of bench/RESULTS.md.

    python bench/jobs.py            # about a minute and a half
    python bench/jobs.py --quick    # smaller: a smoke run

1. CPU per row and rows per second: ``agenthub.jobs.run`` against a plain ``concurrent.futures`` pool calling
   ``client.response()`` (reading the same job file with ``json.loads``, writing one JSON line per
   answer), both with 8 threads, on the same local server (tests/jobs_server.py, another process: only
   this process's CPU is counted, ``time.process_time``).  Runs alternate (the order turns each round); the
   ratio of medians, the paired ratio of rows per second (the median of each round's own), the load average.
   ``--only-cpu [--rounds N]`` runs this part alone.  Before/after in one run: bench/jobs_resume.py
   ``--only throughput --before REV`` (the same two loops, a worker process per tree, alternating).
2. Memory in the number of rows: the peak RSS growth of ``jobs.run`` over 10k and 100k-row jobs (a fresh
   process each), the client replaced by an in-process stub (no network: the runner's own keeping).
3. Pacing: a server enforcing an RPM as a token bucket (one second's worth at most); the runner with
   ``rpm=`` that RPM, against the plain pool with no limiter: share of the RPM used, 429s after the first
   second.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))

from agenthub import AutoLLMClient, jobs  # noqa: E402
from agenthub.errors import AgentHubError  # noqa: E402
from agenthub.tracer import to_jsonable  # noqa: E402

MODEL = "deepseek-v4-flash"
START, END = "<!-- bench/jobs.py -->", "<!-- /bench/jobs.py -->"

_SERVE = """
import sys, time
sys.path.insert(0, sys.argv[1])
import jobs_server
from jobs_server import JobServer
jobs_server._Handler.disable_nagle_algorithm = True  # TCP_NODELAY: no answer waits on a delayed ACK
rpm = float(sys.argv[2]) or None
with JobServer(rpm=rpm) as server:
    print(server.base_url, flush=True)
    sys.stdin.read()
    import json
    print(json.dumps(server.statuses), flush=True)
"""


class Server(object):
    """tests/jobs_server.py in a subprocess; ``statuses()`` ends it and returns its (time, status) log."""

    def __init__(self, rpm=None):
        self.proc = subprocess.Popen([sys.executable, "-c", _SERVE, os.path.join(ROOT, "tests"), str(rpm or 0)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.base_url = self.proc.stdout.readline().strip()

    def statuses(self):
        out, _ = self.proc.communicate("", timeout=30)
        return json.loads(out.strip().splitlines()[-1])

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


def write_job(path, rows, base_url):
    with open(path, "w") as f:
        for i in range(rows):
            f.write(json.dumps({"id": "r{}".format(i), "model": MODEL, "client_type": "openai-chat",
                                "base_url": base_url, "config": {"max_tokens": 16},
                                "messages": [{"role": "user", "content_items": [
                                    {"type": "text", "text": "row {} of the bench".format(i)}]}]}) + "\n")


def plain_pool(src, out, base_url, workers=8, client=None):
    """What a script does by hand: one client, a thread pool, response() per row, a JSON line each."""
    client = client or AutoLLMClient(MODEL, client_type="openai-chat", base_url=base_url)
    with open(src) as f:
        rows = [json.loads(line) for line in f]

    def one(row):
        try:
            return {"id": row["id"], "message": client.response(row["messages"], row["config"]), "error": None}
        except AgentHubError as exc:
            return {"id": row["id"], "message": None, "error": str(exc)}

    with open(out, "w") as f, ThreadPoolExecutor(workers) as pool:
        for result in pool.map(one, rows):
            f.write(json.dumps(to_jsonable(result)) + "\n")
            f.flush()


def cpu_per_row(folder, rows, repeats):
    """Part 1: a warm-up round, then ``repeats`` rounds of one run a side, the order alternating each round;
    CPU per row and rows per second of each run, the load average before each run."""
    server = Server()
    try:
        src = os.path.join(folder, "cpu.jsonl")
        write_job(src, rows, server.base_url)
        times = {"pool": [], "runner": []}
        walls = {"pool": [], "runner": []}
        loads = []
        for n in range(repeats + 1):
            for name in (("pool", "runner") if n % 2 == 0 else ("runner", "pool")):
                out = os.path.join(folder, "cpu-{}-{}.jsonl".format(name, n))
                load = os.getloadavg()[0]
                c0, w0 = time.process_time(), time.monotonic()
                if name == "pool":
                    plain_pool(src, out, server.base_url)
                else:
                    summary = jobs.run(src, out, workers=8, progress=False)
                    assert summary.done == rows, summary
                c1, w1 = time.process_time(), time.monotonic()
                if n:  # the first round warms up (imports, connection pools)
                    times[name].append((c1 - c0) / rows * 1e6)
                    walls[name].append(w1 - w0)
                    loads.append(load)
                os.unlink(out)
    finally:
        server.close()
    pool, runner = statistics.median(times["pool"]), statistics.median(times["runner"])
    rate = {k: statistics.median(rows / w for w in walls[k]) for k in walls}
    return {"rows": rows, "repeats": repeats, "pool_us": pool, "runner_us": runner, "ratio": runner / pool,
            "pool_min": min(times["pool"]), "runner_min": min(times["runner"]),
            "ratio_min": min(times["runner"]) / min(times["pool"]),
            "pool_wall": statistics.median(walls["pool"]), "runner_wall": statistics.median(walls["runner"]),
            "pool_rate": rate["pool"], "runner_rate": rate["runner"], "rate_ratio": rate["runner"] / rate["pool"],
            # each round's runner against the pool's run beside it (the load of that moment moves both)
            "rate_paired": statistics.median(p / r for p, r in zip(walls["pool"], walls["runner"])),
            "load_min": min(loads), "load_max": max(loads), "load_median": statistics.median(loads)}


class _StubClient(object):
    """Answers at once, in process: the memory measured is the runner's own."""

    hooks = ()  # no LimiterHook: the job paces it

    def __init__(self, *route):
        pass

    def streaming_response(self, messages, config=None):
        text = messages[-1]["content_items"][0]["text"]
        return iter([
            {"event_type": "delta", "content_items": [{"type": "text", "text": "echo: " + text}],
             "usage_metadata": None, "finish_reason": None},
            {"event_type": "stop", "content_items": [], "finish_reason": "stop",
             "usage_metadata": {"cached_tokens": None, "prompt_tokens": 10, "thoughts_tokens": None,
                                "response_tokens": 5}},
        ])


def _memory_child(rows, folder):
    """In a fresh interpreter: the peak RSS growth (VmHWM) of jobs.run over ``rows`` rows, then of
    the rerun that skips them all (SQLite's allocations are outside tracemalloc's sight: RSS it is; Linux)."""
    def peak():  # VmHWM: this process's peak RSS (ru_maxrss would carry the parent's over the exec)
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))

    src = os.path.join(folder, "mem-{}.jsonl".format(rows))
    dst = os.path.join(folder, "mem-{}-out.jsonl".format(rows))
    write_job(src, rows, "http://127.0.0.1:9/v1")
    base = peak()
    t0 = time.monotonic()
    summary = jobs.run(src, dst, workers=8, progress=False, client_factory=_StubClient)
    wall = time.monotonic() - t0
    top = peak()
    assert summary.done == rows, summary
    again = jobs.run(src, dst, workers=8, progress=False, client_factory=_StubClient)
    top2 = peak()
    assert again.skipped == rows
    out = {"rows": rows, "base_mb": base / 1024, "growth_mb": (top - base) / 1024, "rerun_mb": (top2 - base) / 1024,
           "wall": wall, "input_mb": os.path.getsize(src) / 1e6}
    os.unlink(src)
    os.unlink(dst)
    print(json.dumps(out))


def memory(folder, sizes):
    out = []
    for rows in sizes:
        text = subprocess.check_output([sys.executable, os.path.abspath(__file__), "--memory-child", str(rows),
                                        folder], text=True)
        out.append(json.loads(text.strip().splitlines()[-1]))
    return out


def pacing(folder, rpm, seconds):
    rows = int(rpm / 60 * seconds)
    results = {}
    for name in ("runner", "pool"):
        server = Server(rpm=rpm)
        try:
            src = os.path.join(folder, "pace-{}.jsonl".format(name))
            write_job(src, rows, server.base_url)
            out = os.path.join(folder, "pace-{}-out.jsonl".format(name))
            t0 = time.monotonic()
            if name == "runner":
                jobs.run(src, out, workers=8, rpm=rpm, progress=False)
            else:
                plain_pool(src, out, server.base_url,
                           client=AutoLLMClient(MODEL, client_type="openai-chat", base_url=server.base_url))
            wall = time.monotonic() - t0
            statuses = server.statuses()
        finally:
            server.close()
        ok = [t for t, s in statuses if s == 200]
        start = min(t for t, _ in statuses)
        late = [t for t, s in statuses if s == 429 and t - start > 1.0]
        answered = sum(1 for line in open(out) if '"error":null' in line.replace(" ", ""))
        results[name] = {"rows": rows, "requests": len(statuses), "ok": len(ok), "answered": answered,
                         "used": (len(ok) - 1) / (ok[-1] - ok[0]) * 60 / rpm if len(ok) > 1 else 0.0,
                         "late_429": len(late), "all_429": sum(1 for _, s in statuses if s == 429), "wall": wall}
    return results


def markdown(cpu, mem, pace, rpm):
    lines = [START, "## Bulk jobs (`python bench/jobs.py`, Python {}, {} CPUs)".format(
        sys.version.split()[0], os.cpu_count()), ""]
    lines += ["### CPU per row: `jobs.run` vs a plain `concurrent.futures` pool calling `client.response()`", "",
              "{} rows, 8 threads each, same local server (another process), {} alternating rounds after a "
              "warm-up; CPU of this process only.".format(cpu["rows"], cpu["repeats"]), "",
              "| | pool us/row (med / min) | runner us/row (med / min) | ratio (median) | ratio (min) | wall s pool / runner |",
              "|---|---|---|---|---|---|",
              "| openai-chat, streamed | {:.0f} / {:.0f} | {:.0f} / {:.0f} | **{:.2f}x** (target <= 1.2x) | {:.2f}x | {:.2f} / {:.2f} |".format(
                  cpu["pool_us"], cpu["pool_min"], cpu["runner_us"], cpu["runner_min"], cpu["ratio"],
                  cpu["ratio_min"], cpu["pool_wall"], cpu["runner_wall"]), "",
              "Rows per second (medians): pool {:.0f}, runner {:.0f}: **{:.2f}x** (paired, each round's runner against "
              "the pool's run beside it: {:.2f}x; target >= 0.95x), load {:.1f}-{:.1f} (median {:.1f}).".format(
                  cpu["pool_rate"], cpu["runner_rate"], cpu["rate_ratio"], cpu["rate_paired"], cpu["load_min"],
                  cpu["load_max"], cpu["load_median"]), ""]
    lines += ["### Memory in the number of rows (peak RSS growth over the interpreter's, a fresh process per "
              "size; the client a stub, no network)", "",
              "| rows | input MB | RSS before MB | peak growth MB (run) | peak growth MB (rerun, all skipped) | wall s |",
              "|---|---|---|---|---|---|"]
    for m in mem:
        lines.append("| {:,} | {:.1f} | {:.1f} | {:.1f} | {:.1f} | {:.1f} |".format(
            m["rows"], m["input_mb"], m["base_mb"], m["growth_mb"], m["rerun_mb"], m["wall"]))
    lines += ["", "Rows are never all held: the file is checked in one pass and read again lazily, the ids "
              "(duplicate check, resume) live in a temporary SQLite file with a 2 MB page cache, and resuming "
              "reads the output one line at a time."]
    lines += ["", "### Pacing: a server enforcing {} RPM as a token bucket (one second's worth at most)".format(rpm),
              "", "| | rows | requests sent | answered | share of the RPM used | 429s (all / after the first second) | wall s |",
              "|---|---|---|---|---|---|---|"]
    for name, label in (("runner", "`jobs.run(..., rpm={})`".format(rpm)), ("pool", "plain pool, no limiter")):
        p = pace[name]
        lines.append("| {} | {} | {} | {} | {:.1%} | {} / {} | {:.1f} |".format(
            label, p["rows"], p["requests"], p["answered"], p["used"], p["all_429"], p["late_429"], p["wall"]))
    lines += ["", "(The plain pool's client retries 429s itself, max_retries=2, honouring Retry-After; rows whose "
              "retries ran out are the ones not answered.)", END]
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", default=os.path.join(HERE, "RESULTS.md"))
    parser.add_argument("--memory-child", nargs=2, metavar=("ROWS", "FOLDER"), help=argparse.SUPPRESS)
    parser.add_argument("--only-cpu", action="store_true", help="part 1 only (printed, RESULTS.md left alone)")
    parser.add_argument("--rounds", type=int, default=None, help="part 1's rounds after the warm-up (default 3)")
    args = parser.parse_args()
    if args.memory_child:
        return _memory_child(int(args.memory_child[0]), args.memory_child[1])
    rpm = 1800
    with tempfile.TemporaryDirectory(prefix="agenthub-bench-jobs-") as folder:
        cpu = cpu_per_row(folder, 300 if args.quick else 1500, args.rounds or (1 if args.quick else 3))
        print("cpu", json.dumps(cpu))
        print("rows/s: pool {:.0f}, runner {:.0f}: {:.3f}x (paired {:.3f}x), load {:.1f}-{:.1f} (median {:.1f})".format(
            cpu["pool_rate"], cpu["runner_rate"], cpu["rate_ratio"], cpu["rate_paired"], cpu["load_min"],
            cpu["load_max"], cpu["load_median"]), flush=True)
        if args.only_cpu:
            return
        mem = memory(folder, (1000, 10000) if args.quick else (10000, 100000))
        print("memory", json.dumps(mem))
        pace = pacing(folder, rpm, 3 if args.quick else 8)
        print("pacing", json.dumps(pace))
    text = markdown(cpu, mem, pace, rpm)
    print(text)
    old = open(args.out, encoding="utf-8").read() if os.path.exists(args.out) else ""
    if START in old and END in old:
        new = old[:old.index(START)] + text + old[old.index(END) + len(END) + 1:]
    else:
        new = old.rstrip("\n") + "\n\n" + text
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(new)


if __name__ == "__main__":
    main()
