"""Shared state (issue 33): what a shared store costs, and whether the pace holds across processes.

    python bench/stores.py            # about a minute; writes bench/RESULTS-stores.md
    python bench/stores.py --quick    # smaller

1. Cost per request: ``RateLimiter.reserve()`` (a limiter that never waits) and one Budget hold +
   settlement, in-process (MemoryStore) against SQLite (a file in a temporary folder) and Redis (a local
   ``redis-server`` on 127.0.0.1, started here; skipped when not installed).  Microseconds per
   operation, the median of 3 runs.
2. 8 processes x 1 store: every process sends its rows through ``AutoLLMClient(limiter=RateLimiter(rpm,
   store=URL))`` against a server enforcing that RPM as a token bucket of one second's worth
   (tests/jobs_server.py, another process); the share of the RPM used and the 429s after the first
   second.  For contrast: 8 processes with in-process limiters of the full RPM each.
3. The response cache: the time to read a 2,000-delta stream live (bench/server.py, another process)
   against replaying it from a ResponseCache (a directory), min of 7.
"""

import argparse
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, HERE)

from agenthub import AutoLLMClient, Budget, RateLimiter, ResponseCache  # noqa: E402

from jobs import Server  # noqa: E402  (bench/jobs.py: tests/jobs_server.py in a subprocess)
from store_support import REDIS_SERVER, RedisServer, pace_worker  # noqa: E402

USAGE = {"prompt_tokens": 10, "cached_tokens": 0, "thoughts_tokens": 0, "response_tokens": 5}


def per_op(make, count, repeats=3):
    """Median microseconds per call of the function ``make()`` returns (one warm-up call first)."""
    results = []
    for _ in range(repeats):
        op = make()
        op()
        started = time.perf_counter()
        for _ in range(count):
            op()
        results.append((time.perf_counter() - started) / count * 1e6)
    return statistics.median(results)


def limiter_op(store):
    limiter = RateLimiter(rpm=1e9, store=store, key="bench-{}".format(time.monotonic_ns()))
    return lambda: limiter.reserve(0)


def budget_op(store):
    budget = Budget(1e9, store=store, key="bench-{}".format(time.monotonic_ns()))
    return lambda: budget.reserve("deepseek-v4-flash", 100, 100).settle(USAGE)


def _worker(*args):
    """pace_worker, a 429 that outlasts the client's retries ending the process quietly (the no-store contrast)."""
    from agenthub import RateLimitError

    try:
        pace_worker(*args)
    except RateLimitError:
        pass


def pacing(url, processes, rpm, total):
    server = Server(rpm=rpm)
    try:
        start_at = time.time() + 1.0 + 0.3 * processes
        ctx = multiprocessing.get_context("spawn")
        children = [ctx.Process(target=_worker, args=(url, server.base_url, rpm, total // processes,
                                                           "p{}".format(n), start_at)) for n in range(processes)]
        for child in children:
            child.start()
        for child in children:
            child.join(300)
    finally:
        statuses = server.statuses()
    ok = sorted(t for t, s in statuses if s == 200)
    late = [t for t, s in statuses if s == 429 and t - ok[0] > 1.0]
    used = (len(ok) - 1) / (ok[-1] - ok[0]) * 60 if len(ok) > 1 else 0.0
    return used / rpm, len(late), sum(1 for _, s in statuses if s == 429)


def cache_replay(repeats):
    server = subprocess.Popen([sys.executable, os.path.join(HERE, "server.py")], stdout=subprocess.PIPE,
                              universal_newlines=True)
    port = int(server.stdout.readline().split()[1])
    folder = tempfile.mkdtemp(prefix="agenthub-bench-cache-")
    try:
        url = "http://127.0.0.1:{}/chunked/text-2000/openai-chat".format(port)
        live = AutoLLMClient("bench-model", client_type="openai-chat", api_key="k", base_url=url)
        cached = AutoLLMClient("bench-model", client_type="openai-chat", api_key="k", base_url=url,
                               cache=ResponseCache(folder))
        messages = [{"role": "user", "content_items": [{"type": "text", "text": "hi"}]}]
        events = list(cached.streaming_response(messages))  # the miss: stored
        assert cached.cache.stored == 1
        live_times, hit_times = [], []
        for _ in range(repeats):
            started = time.perf_counter()
            assert len(list(live.streaming_response(messages))) == len(events)
            live_times.append(time.perf_counter() - started)
            started = time.perf_counter()
            assert len(list(cached.streaming_response(messages))) == len(events)
            hit_times.append(time.perf_counter() - started)
        assert cached.cache.hits == repeats
        return len(events), min(live_times) * 1e3, min(hit_times) * 1e3
    finally:
        server.kill()
        server.wait(10)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", default=os.path.join(HERE, "RESULTS-stores.md"))
    args = parser.parse_args(argv)
    count = 300 if args.quick else 2000
    lines = ["# bench/stores.py: shared state (issue 33)", "",
             "Python {}, {} CPUs. `python bench/stores.py{}`.".format(sys.version.split()[0], os.cpu_count(),
                                                                      " --quick" if args.quick else ""), ""]

    def out(text=""):
        print(text, flush=True)
        lines.append(text)

    folder = tempfile.mkdtemp(prefix="agenthub-bench-stores-")
    redis = RedisServer().start() if REDIS_SERVER else None
    try:
        stores = [("in-process", None), ("SQLite", "sqlite:///" + os.path.join(folder, "state.db"))]
        if redis is not None:
            stores.append(("Redis", redis.url))
        out("## 1. Cost per request (microseconds per operation, median of 3 runs of {})".format(count))
        out("")
        out("| store | RateLimiter.reserve | Budget reserve + settle |")
        out("|---|---|---|")
        for name, url in stores:
            n = count * 10 if url is None else count
            out("| {} | {:.1f} | {:.1f} |".format(name, per_op(lambda: limiter_op(url), n),
                                                  per_op(lambda: budget_op(url), n)))
        out("")
        rpm, total = 1200, (80 if args.quick else 240)
        out("## 2. 8 processes x 1 store against a server enforcing {} RPM (token bucket, 1 s burst), "
            "{} requests".format(rpm, total))
        out("")
        out("| limiter | processes | share of the RPM used | 429s after the first second | 429s in all |")
        out("|---|---|---|---|---|")
        runs = [("SQLite", "sqlite:///" + os.path.join(folder, "pace.db"))]
        if redis is not None:
            runs.append(("Redis", redis.url))
        for name, url in runs:
            for processes in (1, 8):
                share, late, every = pacing(url, processes, rpm, total)
                out("| {} | {} | {:.1%} | {} | {} |".format(name, processes, share, late, every))
        share, late, every = pacing(None, 8, rpm, total)
        out("| in-process, full RPM each (no store) | 8 | {:.1%} | {} | {} |".format(share, late, every))
        out("")
        events, live_ms, hit_ms = cache_replay(3 if args.quick else 7)
        out("## 3. Response cache: a {}-event stream (2,000 text deltas), min of {} runs".format(
            events, 3 if args.quick else 7))
        out("")
        out("| | ms |")
        out("|---|---|")
        out("| live stream (local server, another process) | {:.1f} |".format(live_ms))
        out("| replayed from the cache (a directory) | {:.1f} |".format(hit_ms))
        out("")
    finally:
        if redis is not None:
            redis.close()
    with open(args.out, "w", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
