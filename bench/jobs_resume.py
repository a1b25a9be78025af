"""A resumed job's start and the runner's throughput (issue 41, item 6), before and after, in one run.

    python bench/jobs_resume.py [--before 49d9831] [--rows 20000] [--rounds 5] [--tp-rows 4000]

The server is tests/jobs_server.py in its own process (TCP_NODELAY set, so no answer waits on a delayed ACK).
Each measurement is a fresh worker process running the library as it was at ``--before`` or as it is here,
alternating, ROUNDS each; medians, the load average beside them.

1. Resume: a ROWS-row job file whose output already holds its first half (written with ``output_row``, as a
   run killed by ``kill -9`` at half way leaves it) against the same file with an empty output: the time
   from the ``jobs.run`` call to its first request.  Target: resume <= 1.2x the fresh start.
2. Throughput: ``jobs.run(workers=8)`` on a TP_ROWS-row file against a plain 8-thread pool calling
   ``client.response()`` (bench/jobs.py's baseline; the same client as the runner builds: same model, client
   type, base URL and ``max_retries``), in the same worker process: a warm-up pair, then TP_REPS pairs, the
   order alternating within each process and between processes.  Rows per second and CPU per row
   (``time.process_time``) of each side (medians), and the median of the paired ratios (the runner's run
   against the pool's run beside it: the load of that moment moves both).  Target: rows/s >= 0.95x the pool's.
3. Overhead (``--only overhead``; no network, so the shared machine's load moves it little): the same two
   loops on a 5,000-row file with a stub client (``streaming_response`` yields two canned events at once), CPU
   per row of each: what the runner adds per row beyond the pool's own work.
4. Instructions (``--only instructions``; needs valgrind): part 2's two loops (8 threads, the local server in
   its own process, not counted) under ``valgrind --tool=cachegrind``, at 100 and IR_ROWS rows: instructions
   per row are the slope between the two (the start-up left out), which the machine's load does not move.
   For the tree here it also prices each part of what the runner adds per row, by taking that part out
   (``--ablate``: a stub in its place) and counting again.
5. Start (``--only start``): the ms from the call to its first request, ``jobs.run(workers=8)`` (the up-front check
   of the whole file, the id index, the clients, the output) against the plain pool (reading the file with
   ``json.loads``, then sending at once), on a START_ROWS-row file, in the same worker process after a warm-up
   run of each (imports done): ``--tp-reps`` pairs a process, the order alternating; medians, the load.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
MODEL = "deepseek-v4-flash"

_SERVE = """
import sys
sys.path.insert(0, sys.argv[1])
import jobs_server
jobs_server._Handler.disable_nagle_algorithm = True
with jobs_server.JobServer() as server:
    print(server.base_url, flush=True)
    sys.stdin.read()
"""


def _write_job(path, rows, base_url):
    with open(path, "w") as f:
        for i in range(rows):
            f.write(json.dumps({"id": "r{}".format(i), "model": MODEL, "client_type": "openai-chat",
                                "base_url": base_url, "config": {"max_tokens": 16},
                                "messages": [{"role": "user", "content_items": [
                                    {"type": "text", "text": "row {} of the bench".format(i)}]}]}) + "\n")


def _write_half(path, rows):
    from agenthub.jobs.jobfile import JobRow, dumps_row, output_row

    with open(path, "wb") as f:
        for i in range(rows // 2):
            row = JobRow(id="r{}".format(i), model=MODEL, messages=[], line=i + 1)
            f.write(dumps_row(output_row(row, message={"role": "assistant", "content_items": [
                {"type": "text", "text": "echo: row {} of the bench".format(i)}], "finish_reason": "stop"},
                usage_metadata={"prompt_tokens": 10, "response_tokens": 5}, finish_reason="stop",
                cost_usd=1e-06, error=None, attempts=1, backend="live")))


def _first_request(src, out):
    """ms from the jobs.run call to its first request; the process ends there (os._exit)."""
    import requests.adapters

    from agenthub import jobs

    import threading

    once = threading.Lock()
    started = time.perf_counter()

    def send(*args, **kwargs):
        at = time.perf_counter()
        if once.acquire(False):
            os.write(1, (json.dumps({"first_ms": (at - started) * 1e3}) + "\n").encode())
            os._exit(0)
        time.sleep(60)

    requests.adapters.HTTPAdapter.send = send
    jobs.run(src, out, workers=8, progress=False)


def _loops(src, base_url, workers=8):
    """(pool, runner): each ``fn(out)`` runs the job file at ``src`` once, writing ``out``."""
    from concurrent.futures import ThreadPoolExecutor

    from agenthub import AutoLLMClient, jobs
    from agenthub.errors import AgentHubError
    from agenthub.tracer import to_jsonable

    def pool(out):
        client = AutoLLMClient(MODEL, client_type="openai-chat", base_url=base_url, max_retries=2)  # the runner's
        with open(src) as f:
            rows = [json.loads(line) for line in f]

        def one(row):
            try:
                return {"id": row["id"], "message": client.response(row["messages"], row["config"]), "error": None}
            except AgentHubError as exc:
                return {"id": row["id"], "message": None, "error": str(exc)}

        with open(out, "w") as f, ThreadPoolExecutor(workers) as threads:
            for result in threads.map(one, rows):
                f.write(json.dumps(to_jsonable(result)) + "\n")
                f.flush()

    def runner(out):
        summary = jobs.run(src, out, workers=workers, progress=False)
        assert summary.done == summary.total, summary

    return pool, runner


def _alternate(src, folder, base_url, reps, first, tag, measure):
    """A warm-up pair of the plain pool and the runner, then ``reps`` pairs (the order alternating, ``first`` the
    side of the first pair), each run writing its output to a file of its own: prints {"pool": [measure(run, output
    path), ...], "runner": [...]}, pair by pair."""
    pool, runner = _loops(src, base_url)
    sides = [("pool", pool), ("runner", runner)]
    if first == "runner":
        sides.reverse()
    res = {"pool": [], "runner": []}
    for n in range(reps + 1):
        for name, fn in (sides if n % 2 == 0 else sides[::-1]):
            out = os.path.join(folder, "{}-{}-{}.jsonl".format(tag, name, n))
            value = measure(fn, out)
            os.unlink(out)
            if n:
                res[name].append(value)
    print(json.dumps(res))


def _throughput(src, folder, base_url, reps, first):
    """{"pool": [(wall s, CPU s), ...], "runner": [...]}, pair by pair (``_alternate``)."""
    def timed(fn, out):
        c0, w0 = time.process_time(), time.monotonic()
        fn(out)
        c1, w1 = time.process_time(), time.monotonic()
        return w1 - w0, c1 - c0

    _alternate(src, folder, base_url, reps, first, "tp", timed)


def _start(src, folder, base_url, reps, first):
    """{"pool": [ms from the call to its first request, ...], "runner": [...]}, pair by pair (``_alternate``)."""
    import requests.adapters

    real = requests.adapters.HTTPAdapter.send
    seen = []

    def send(self, *args, **kwargs):
        if not seen:
            seen.append(time.perf_counter())
        return real(self, *args, **kwargs)

    requests.adapters.HTTPAdapter.send = send

    def first_request(fn, out):
        del seen[:]
        started = time.perf_counter()
        fn(out)
        return (seen[0] - started) * 1e3

    _alternate(src, folder, base_url, reps, first, "st", first_request)


#: --ablate NAME: what takes a part of the runner's per-row work out (a stub in its place), for part 4
ABLATIONS = {
    "hooks": "the job's attempt hook (limiter pauses, Ctrl-C, the call's attempts)",
    "check": "the up-front check of each line (messages, config, keys)",
    "price": "each row's price (catalog.call_cost)",
    "stamp": "each row's finished_at",
}


def _ablate(names):
    from agenthub.jobs import jobfile, runner

    for name in names:
        if name == "hooks":
            runner.register = lambda hook: None
        elif name == "check":
            jobfile._checked = lambda obj, plain, passed=None: (obj["id"], obj["model"], obj["messages"],
                                                                obj.get("config") or {}, None)
        elif name == "price":
            runner.call_cost = lambda *args: 0.0
        elif name == "stamp":
            jobfile._now = lambda: "2026-12-06T00:00:00.000000Z"


def _one_loop(side, src, base_url, ablate):
    """One run of one side in this process (part 4's measured process)."""
    if ablate:
        _ablate(ablate.split(","))
    pool, runner = _loops(src, base_url)
    out = src + ".out"
    (pool if side == "pool" else runner)(out)
    os.unlink(out)
    print("{}")


def _instructions(tree, side, src, base_url, ablate=""):
    """Instructions (valgrind) of a worker process running ``side`` once on ``src``."""
    import re

    env = dict(os.environ, PYTHONPATH=tree)
    run = subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
                          sys.executable, __file__, "--loop", side, src, base_url, ablate],
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=True, timeout=1800)
    found = re.search(r"I\s+refs:\s+([\d,]+)", run.stderr.decode())
    return int(found.group(1).replace(",", ""))


def _overhead(src, rows, reps):
    from concurrent.futures import ThreadPoolExecutor

    from agenthub import jobs
    from agenthub.stream import collect
    from agenthub.tracer import to_jsonable

    events = [{"role": "assistant", "event_type": "delta", "content_items": [{"type": "text", "text": "echo"}],
               "usage_metadata": None, "finish_reason": None, "created_at": 1},
              {"role": "assistant", "event_type": "stop", "content_items": [], "finish_reason": "stop",
               "usage_metadata": {"prompt_tokens": 10, "response_tokens": 5, "cached_tokens": None,
                                  "thoughts_tokens": None}, "created_at": 2}]

    class Stub(object):
        model = MODEL
        fallbacks = ()
        hooks = ()

        def streaming_response(self, messages, config=None):
            return iter([dict(e) for e in events])

        def response(self, messages, config=None):
            return collect(self.streaming_response(messages, config))

    folder = os.path.dirname(src)

    def runner():
        out = os.path.join(folder, "ov-runner.jsonl")
        jobs.run(src, out, workers=8, progress=False, client_factory=lambda *route: Stub())
        os.unlink(out)

    def pool():
        client = Stub()
        with open(src) as f:
            lines = [json.loads(line) for line in f]

        def one(row):
            return {"id": row["id"], "message": client.response(row["messages"], row["config"]), "error": None}

        with open(os.path.join(folder, "ov-pool.jsonl"), "w") as f, ThreadPoolExecutor(8) as workers:
            for result in workers.map(one, lines):
                f.write(json.dumps(to_jsonable(result)) + "\n")
                f.flush()

    res = {"runner": [], "pool": []}
    for n in range(reps + 1):
        for name, fn in ((("pool", pool), ("runner", runner)) if n % 2 == 0 else (("runner", runner), ("pool", pool))):
            c0 = time.process_time()
            fn()
            if n:
                res[name].append((time.process_time() - c0) / rows * 1e6)
    print(json.dumps({k: statistics.median(v) for k, v in res.items()}))


def _worker(tree, args, tmp=None):
    """``args`` run with ``tree``'s library; ``tmp``: the worker's TMPDIR (a --first worker ends with os._exit,
    its id index's temporary folder is left there, and removed with the bench's folder)."""
    env = dict(os.environ, PYTHONPATH=tree)
    if tmp is not None:
        env["TMPDIR"] = tmp
    out = subprocess.run([sys.executable, __file__] + args, env=env, stdout=subprocess.PIPE, check=True, timeout=900)
    return json.loads(out.stdout.decode().strip().splitlines()[-1])


def _paired(trees, rounds, args):
    """``args`` run by worker processes of both sides (``trees``: "before", "after"), alternating which goes first
    and, round by round, which loop (the plain pool, the runner) the worker starts with: ({side: results},
    {side: the load before each})."""
    import ab

    results = {"before": [], "after": []}
    loads = {"before": [], "after": []}
    for r in range(rounds):
        for side in (("before", "after") if r % 2 == 0 else ("after", "before")):
            loads[side].append(ab.load())
            results[side].append(_worker(trees[side], args + ["pool" if r % 2 == 0 else "runner"]))
    return results, loads


def main():
    import ab

    parser = argparse.ArgumentParser()
    parser.add_argument("--before", default="49d9831")
    parser.add_argument("--after", default=None, help="a revision to measure as 'after' (default: this checkout)")
    parser.add_argument("--rows", type=int, default=20000)
    parser.add_argument("--tp-rows", type=int, default=4000)
    parser.add_argument("--tp-reps", type=int, default=3)
    parser.add_argument("--ir-rows", type=int, default=600)
    parser.add_argument("--start-rows", type=int, default=2000)
    parser.add_argument("--ablations", default=",".join(ABLATIONS), help="part 4: the parts priced (default: all)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--only", default="resume,throughput")
    parser.add_argument("--first", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--tp", nargs=5, help=argparse.SUPPRESS)
    parser.add_argument("--loop", nargs=4, help=argparse.SUPPRESS)
    parser.add_argument("--ov", nargs=3, help=argparse.SUPPRESS)
    parser.add_argument("--st", nargs=5, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.first:
        return _first_request(*args.first)
    if args.tp:
        return _throughput(args.tp[0], args.tp[1], args.tp[2], int(args.tp[3]), args.tp[4])
    if args.loop:
        return _one_loop(*args.loop)
    if args.ov:
        return _overhead(args.ov[0], int(args.ov[1]), int(args.ov[2]))
    if args.st:
        return _start(args.st[0], args.st[1], args.st[2], int(args.st[3]), args.st[4])
    trees = {"before": ab.tree_at(args.before), "after": ab.tree_at(args.after) if args.after else ab.ROOT}
    folder = tempfile.mkdtemp(prefix="agenthub-bench-jobs-")
    server = subprocess.Popen([sys.executable, "-c", _SERVE, os.path.join(ab.ROOT, "tests")],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        base_url = server.stdout.readline().strip()
        if "resume" in args.only:
            src = os.path.join(folder, "job.jsonl")
            _write_job(src, args.rows, base_url)
            half = os.path.join(folder, "half.jsonl")
            sys.path.insert(0, ab.ROOT)
            _write_half(half, args.rows)
            first = {(s, k): [] for s in trees for k in ("resume", "fresh")}
            loads = []
            for r in range(args.rounds):
                sides = ("before", "after") if r % 2 == 0 else ("after", "before")
                for side in sides:
                    for kind in (("resume", "fresh") if r % 2 == 0 else ("fresh", "resume")):
                        out = os.path.join(folder, "out.jsonl")
                        if os.path.exists(out):
                            os.unlink(out)
                        if kind == "resume":
                            shutil.copy(half, out)
                        loads.append(ab.load())
                        tmp = os.path.join(folder, "tmp")
                        os.makedirs(tmp, exist_ok=True)
                        first[side, kind].append(_worker(trees[side], ["--first", src, out], tmp)["first_ms"])
            print("1. {:,}-row job, first half done: ms from jobs.run to its first request, median of {} "
                  "processes each, {}".format(args.rows, args.rounds, ab.loads_text(loads)))
            for side in ("before", "after"):
                resume, fresh = statistics.median(first[side, "resume"]), statistics.median(first[side, "fresh"])
                print("   {:<7} resume {:7.1f} ms   fresh {:7.1f} ms   resume / fresh {:.2f}x".format(
                    side, resume, fresh, resume / fresh))
        if "overhead" in args.only:
            src = os.path.join(folder, "ov.jsonl")
            _write_job(src, 5000, base_url)
            ov = {"before": [], "after": []}
            loads = []
            for r in range(args.rounds):
                for side in (("before", "after") if r % 2 == 0 else ("after", "before")):
                    loads.append(ab.load())
                    ov[side].append(_worker(trees[side], ["--ov", src, "5000", "3"]))
            print("3. 5,000 rows, stub client (no network): CPU per row, medians of {} processes x 3 runs, "
                  "{}".format(args.rounds, ab.loads_text(loads)))
            for side in ("before", "after"):
                runner = statistics.median(r["runner"] for r in ov[side])
                pool = statistics.median(r["pool"] for r in ov[side])
                print("   {:<7} runner {:5.1f} us/row   pool {:5.1f} us/row   runner adds {:5.1f} us/row".format(
                    side, runner, pool, runner - pool))
        if "throughput" in args.only:
            src = os.path.join(folder, "tp.jsonl")
            _write_job(src, args.tp_rows, base_url)
            tp, loads = _paired(trees, args.rounds, ["--tp", src, folder, base_url, str(args.tp_reps)])
            print("2. {:,} rows, jobs.run(workers=8) against a plain 8-thread pool (same client), {} processes a side "
                  "x {} pairs, medians".format(args.tp_rows, args.rounds, args.tp_reps))
            for side in ("before", "after"):
                runs = tp[side]
                rate = {k: statistics.median(args.tp_rows / w for res in runs for w, _ in res[k])
                        for k in ("pool", "runner")}
                cpu = {k: statistics.median(c / args.tp_rows * 1e6 for res in runs for _, c in res[k])
                       for k in ("pool", "runner")}
                paired = statistics.median(pw / rw for res in runs for (rw, _), (pw, _) in zip(res["runner"], res["pool"]))
                paired_cpu = statistics.median(rc / pc for res in runs for (_, rc), (_, pc) in zip(res["runner"],
                                                                                                   res["pool"]))
                print("   {:<7} runner {:6.0f} rows/s {:5.0f} us/row   pool {:6.0f} rows/s {:5.0f} us/row   "
                      "rows/s {:.2f}x (paired {:.2f}x)   CPU/row {:.2f}x (paired {:.2f}x)   {}".format(
                          side, rate["runner"], cpu["runner"], rate["pool"], cpu["pool"], rate["runner"] / rate["pool"],
                          paired, cpu["runner"] / cpu["pool"], paired_cpu, ab.loads_text(loads[side])))
        if "start" in args.only:
            src = os.path.join(folder, "st.jsonl")
            _write_job(src, args.start_rows, base_url)
            st, loads = _paired(trees, args.rounds, ["--st", src, folder, base_url, str(args.tp_reps)])
            print("5. {:,} rows: ms from the call to its first request, jobs.run(workers=8) against the plain pool, "
                  "warm (a warm-up pair first), {} processes a side x {} pairs, medians".format(
                      args.start_rows, args.rounds, args.tp_reps))
            for side in ("before", "after"):
                ms = {k: statistics.median(v for res in st[side] for v in res[k]) for k in ("pool", "runner")}
                paired = statistics.median(r / p for res in st[side] for r, p in zip(res["runner"], res["pool"]))
                print("   {:<7} runner {:6.1f} ms   pool {:6.1f} ms   runner / pool {:.2f}x (paired {:.2f}x)   {}".format(
                    side, ms["runner"], ms["pool"], ms["runner"] / ms["pool"], paired, ab.loads_text(loads[side])))
        if "instructions" in args.only:
            small = 100
            files = {}
            for rows in (small, args.ir_rows):
                files[rows] = os.path.join(folder, "ir-{}.jsonl".format(rows))
                _write_job(files[rows], rows, base_url)

            def per_row(tree, side, ablate=""):
                big = _instructions(tree, side, files[args.ir_rows], base_url, ablate)
                return (big - _instructions(tree, side, files[small], base_url, ablate)) / (args.ir_rows - small)

            print("4. instructions per row (valgrind, the slope from {} to {} rows), jobs.run(workers=8) against the "
                  "8-thread pool".format(small, args.ir_rows))
            found = {}
            for side in ("before", "after"):
                found[side] = {k: per_row(trees[side], k) for k in ("pool", "runner")}
                pool, runner = found[side]["pool"], found[side]["runner"]
                print("   {:<7} runner {:9,.0f}   pool {:9,.0f}   runner / pool {:.3f}x   the runner adds {:7,.0f} a row"
                      .format(side, runner, pool, runner / pool, runner - pool), flush=True)
            runner = found["after"]["runner"]
            print("   what the runner adds, by part (after; each taken out in turn):")
            for name, what in ABLATIONS.items():
                if name not in args.ablations.split(","):
                    continue
                less = per_row(trees["after"], "runner", name)
                print("     {:<6} {:7,.0f} a row  ({})".format(name, runner - less, what), flush=True)
    finally:
        server.stdin.close()
        server.wait(30)
        shutil.rmtree(folder, True)


if __name__ == "__main__":
    main()
