"""agenthub.jobs.submit / fetch per row: CPU and peak memory at two job sizes, side by side.

    python bench/batch_jobs.py              # 5,000 and 20,000 rows
    python bench/batch_jobs.py --rows 2000,50000

The batch engines are the fakes of tests/batch_fakes.py, started as a separate process on 127.0.0.1
(their CPU is not counted).  Each size runs twice: once for CPU (``time.process_time``), once under
``tracemalloc`` for the peak of Python allocations.  What to look for: CPU per row about the same at
both sizes, and the peak growing with the encoded entries (what is uploaded) and the id map, not with
the rows themselves.  Not a test: nothing here is asserted.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import tracemalloc

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))

from batch_fakes import KEYS  # noqa: E402

_SERVER = """
import sys, time
sys.path.insert(0, {tests!r})
from batch_fakes import BatchFake
fake = BatchFake(polls=1)
print(fake.url, flush=True)
sys.stdin.read()
fake.close()
"""


def _job(folder, rows):
    path = os.path.join(folder, "bench-{}.jsonl".format(rows))
    with open(path, "w") as out:
        for i in range(rows):
            out.write(json.dumps({"id": "r%d" % i, "model": "gpt-4.1-mini", "client_type": "openai-chat",
                                  "config": {"max_tokens": 50},
                                  "messages": [{"role": "user", "content_items": [
                                      {"type": "text", "text": "question number %d about the weather" % i}]}]}) + "\n")
    return path


def _once(folder, rows, traced):
    from agenthub.jobs import batch

    path = _job(folder, rows)
    output = path + ".out"
    for name in (path + ".batch.json", output):
        if os.path.exists(name):
            os.unlink(name)
    if traced:
        tracemalloc.start()
    started = time.process_time()
    job = batch.submit(path, backend="openai")
    submit_cpu = time.process_time() - started
    submit_peak = tracemalloc.get_traced_memory()[1] if traced else 0
    if traced:
        tracemalloc.reset_peak()
    job.wait(interval=0.01, timeout=600)
    started = time.process_time()
    summary = job.fetch(output)
    fetch_cpu = time.process_time() - started
    fetch_peak = tracemalloc.get_traced_memory()[1] if traced else 0
    if traced:
        tracemalloc.stop()
    assert summary.done == rows, summary
    return submit_cpu, fetch_cpu, submit_peak, fetch_peak, os.path.getsize(path + ".batch.json")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="5000,20000", help="job sizes, comma separated")
    args = parser.parse_args(argv)
    sizes = [int(n) for n in args.rows.split(",")]
    server = subprocess.Popen([sys.executable, "-c", _SERVER.format(tests=os.path.join(ROOT, "tests"))],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        url = server.stdout.readline().strip()
        os.environ.update(OPENAI_API_KEY=KEYS["openai"], OPENAI_BASE_URL=url + "/v1")
        print("| rows | submit CPU/row | fetch CPU/row | submit peak | fetch peak | state file |")
        print("| ---: | ---: | ---: | ---: | ---: | ---: |")
        with tempfile.TemporaryDirectory() as folder:
            for rows in sizes:
                submit_cpu, fetch_cpu, _, _, state = _once(folder, rows, traced=False)
                _, _, submit_peak, fetch_peak, _ = _once(folder, rows, traced=True)
                print("| {:,} | {:.0f} us | {:.0f} us | {:.1f} MB | {:.1f} MB | {:,} B |".format(
                    rows, submit_cpu / rows * 1e6, fetch_cpu / rows * 1e6, submit_peak / 1e6, fetch_peak / 1e6,
                    state))
    finally:
        server.stdin.close()
        server.wait(10)
    return 0


if __name__ == "__main__":
    sys.exit(main())
