"""The server's cost: CPU per event through ``agenthub serve`` against the direct client.

upstream (bench/server.py) -> ``agenthub serve`` (a subprocess) -> ``client_type="agenthub"`` in this
process, against ``AutoLLMClient`` straight at the upstream on the same stream.  The CPU through the
server is summed over both processes: this one (``time.process_time``) and the server's
(utime + stime from ``/proc/<pid>/stat``, every thread, the reader threads that ended included).
Then 32 streams at once through gunicorn (``gthread`` workers), against 32 direct streams at once.

Target: the server adds at most the cost of one more direct client, i.e. CPU per event through the
server (both processes) <= 2.2x the direct client's.
"""

import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time

TARGET = 2.2
CONCURRENT = 32
CONCURRENT_EVENTS = 2000
_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_GENERATED_ID = re.compile(r"call_[0-9a-f]{12}_(\d+)")


def process_cpu(pid):
    """The CPU time of process ``pid`` (all its threads, dead ones included), in seconds: read from its process
    CPU clock (Linux: clock id ``(~pid << 3) | 2``, nanoseconds), else utime + stime from /proc (whole clock
    ticks, 10 ms: +-10 ms on each reading, +-7% on a 150 ms stream)."""
    try:
        return time.clock_gettime(((~pid) << 3) | 2)
    except (AttributeError, OSError, OverflowError):
        pass
    with open("/proc/{}/stat".format(pid)) as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / float(_TICK)


def children(pid):
    out = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open("/proc/{}/stat".format(name)) as handle:
                    if int(handle.read().rsplit(")", 1)[1].split()[1]) == pid:
                        out.append(int(name))
            except (OSError, ValueError, IndexError):
                pass
    return out


def tree_cpu(pid):
    total = process_cpu(pid)
    for child in children(pid):
        try:
            total += process_cpu(child)
        except OSError:
            pass
    return total


def comparable(events):
    text = json.dumps([{k: v for k, v in e.items() if k != "created_at"} for e in events], default=repr)
    return _GENERATED_ID.sub(r"call_generated_\1", text)


def _drain(client, messages):
    count = 0
    for _ in client.streaming_response(messages):
        count += 1
    return count


def start_serve(config_path, env):
    process = subprocess.Popen([sys.executable, "-m", "agenthub", "serve", "--config", config_path, "--port", "0"],
                               stdout=subprocess.PIPE, universal_newlines=True, env=env)
    url = process.stdout.readline().strip()
    if not url.startswith("http://"):
        process.kill()
        raise SystemExit("agenthub serve did not start")
    return process, url


def start_gunicorn(config_path, env, threads, workers):
    import socket

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    process = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "-k", "gthread", "--threads", str(threads), "-w", str(workers), "-b",
         "127.0.0.1:{}".format(port), "--log-level", "warning", "agenthub.server:make_app({!r})".format(config_path)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            break
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                raise SystemExit("gunicorn did not start")
            time.sleep(0.05)
    time.sleep(0.5)  # every worker booted
    return process, "http://127.0.0.1:{}".format(port)


def measure(bench, messages, text_events, tool_bytes, tool_fragments, protocols, root):
    from agenthub import AutoLLMClient

    repeats = 3 if bench.quick else 7
    scenarios = [("text", "text-{}".format(text_events)), ("tool", "tool-{}-{}".format(tool_bytes, tool_fragments))]
    rows_config = []
    for protocol in protocols:
        for label, scenario in scenarios:
            rows_config.append({"id": "{}-{}".format(protocol, label), "model": "bench-model", "client_type": protocol,
                                "api_key": "k", "base_url": bench.url("chunked", scenario, protocol),
                                "max_retries": 0})
        rows_config.append({"id": "{}-many".format(protocol), "model": "bench-model", "client_type": protocol,
                            "api_key": "k", "base_url": bench.url("chunked", "text-{}".format(CONCURRENT_EVENTS),
                                                                  protocol), "max_retries": 0})
    folder = tempfile.mkdtemp(prefix="agenthub-bench-serve-")
    config_path = os.path.join(folder, "server.json")
    with open(config_path, "w", encoding="utf-8") as handle:
        json.dump({"models": rows_config, "max_concurrent_streams": 128}, handle)
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))

    bench.out("## Through the server: upstream -> `agenthub serve` -> `client_type=\"agenthub\"`, against the "
              "direct client ({} runs each, alternating)".format(repeats))
    bench.out()
    bench.out("CPU summed over both processes: this one (`time.process_time`) and the server's (utime + stime from "
              "`/proc/<pid>/stat`, 10 ms ticks).  Target: <= {:.1f}x the direct client's CPU per event.".format(TARGET))
    bench.out()
    server, url = start_serve(config_path, env)
    rows = []
    try:
        for protocol in protocols:
            for label, scenario in scenarios:
                direct = bench.client("chunked", scenario, protocol)
                via = AutoLLMClient("{}-{}".format(protocol, label), client_type="agenthub", base_url=url)
                want = list(direct.streaming_response(messages))
                got = list(via.streaming_response(messages))
                wrong = comparable(got) != comparable(want)
                _drain(direct, messages)
                _drain(via, messages)
                direct_cpu, client_cpu, server_cpu, totals = [], [], [], []
                for _ in range(repeats):
                    start = time.process_time()
                    events = _drain(direct, messages)
                    direct_cpu.append(time.process_time() - start)
                    before = process_cpu(server.pid)
                    start = time.process_time()
                    _drain(via, messages)
                    mine = time.process_time() - start
                    theirs = process_cpu(server.pid) - before
                    client_cpu.append(mine)
                    server_cpu.append(theirs)
                    totals.append(mine + theirs)
                best_direct = min(direct_cpu)
                ratio = min(totals) / best_direct
                median_ratio = statistics.median(totals) / statistics.median(direct_cpu)
                if wrong or ratio > TARGET:
                    bench.failures.append("server {} {}{}".format(protocol, label, " (WRONG OUTPUT)" if wrong else ""))
                rows.append([protocol + (" WRONG OUTPUT" if wrong else ""), label, events,
                             "{:.1f}".format(best_direct * 1e3), "{:.1f}".format(min(client_cpu) * 1e3),
                             "{:.1f}".format(min(server_cpu) * 1e3), "{:.1f}".format(min(totals) * 1e3),
                             "**{:.2f}x**".format(ratio) if ratio <= TARGET else "{:.2f}x (over)".format(ratio),
                             "{:.2f}x".format(median_ratio),
                             "{:.2f} / {:.2f}".format(best_direct * 1e6 / events, min(totals) * 1e6 / events)])
                print("  server {} {}: done".format(protocol, label), flush=True)
    finally:
        server.terminate()
        server.wait()
    bench.table(["protocol", "stream", "events", "direct CPU ms", "via: client ms", "via: server ms",
                 "via: total ms", "ratio (min)", "ratio (median)", "us/event direct / via"], rows)
    measure_gunicorn(bench, messages, protocols, config_path, env)


def measure_gunicorn(bench, messages, protocols, config_path, env):
    from agenthub import AutoLLMClient

    try:
        import gunicorn  # noqa: F401
    except ImportError:
        bench.out("32 concurrent streams through gunicorn: skipped (gunicorn is not installed: pip install '.[test]').")
        bench.out()
        return
    workers = 2
    threads = CONCURRENT + 8
    bench.out("## {} streams at once through gunicorn (`-k gthread -w {} --threads {}`), against {} direct streams "
              "at once".format(CONCURRENT, workers, threads, CONCURRENT))
    bench.out()
    bench.out("{} text deltas per stream, {} threads in this process.  CPU: this process plus gunicorn's master and "
              "workers.  Target: <= {:.1f}x.".format(CONCURRENT_EVENTS, CONCURRENT, TARGET))
    bench.out()
    server, url = start_gunicorn(config_path, env, threads, workers)
    rows = []
    try:
        for protocol in protocols:
            direct = bench.client("chunked", "text-{}".format(CONCURRENT_EVENTS), protocol)
            # (default retries: a pooled connection gunicorn closed after its keep-alive is asked again)
            via = AutoLLMClient("{}-many".format(protocol), client_type="agenthub", base_url=url)
            want = comparable(list(direct.streaming_response(messages)))

            def together(client, check):
                results = [None] * CONCURRENT
                gate = threading.Barrier(CONCURRENT)

                def run(n):
                    gate.wait(30)
                    events = list(client.streaming_response(messages))
                    results[n] = (len(events), comparable(events) == want if check else True)

                threads = [threading.Thread(target=run, args=(n,)) for n in range(CONCURRENT)]
                before = tree_cpu(server.pid)
                cpu = time.process_time()
                wall = time.perf_counter()
                for thread in threads:
                    thread.start()
                for thread in threads:
                    thread.join(120)
                wall = time.perf_counter() - wall
                cpu = time.process_time() - cpu
                theirs = tree_cpu(server.pid) - before
                return results, cpu, theirs, wall

            together(direct, False)  # warm: connections, the upstream's cache
            together(via, False)
            best_direct = best_via = None
            all_right = True
            for n in range(3):
                results, cpu, _, wall = together(direct, n == 0)
                if best_direct is None or cpu < best_direct[0]:
                    best_direct = (cpu, wall)
                results_via, mine, theirs, wall_via = together(via, n == 0)
                all_right = all_right and all(r is not None and r[1] for r in results_via)
                if best_via is None or mine + theirs < best_via[0] + best_via[1]:
                    best_via = (mine, theirs, wall_via)
            events = CONCURRENT * (CONCURRENT_EVENTS + 2)
            ratio = (best_via[0] + best_via[1]) / best_direct[0]
            if not all_right or ratio > TARGET:
                bench.failures.append("gunicorn {}{}".format(protocol, "" if all_right else " (WRONG OUTPUT)"))
            rows.append([protocol + ("" if all_right else " WRONG OUTPUT"), events,
                         "{:.0f} / {:.0f}".format(best_direct[0] * 1e3, best_direct[1] * 1e3),
                         "{:.0f} + {:.0f} = {:.0f}".format(best_via[0] * 1e3, best_via[1] * 1e3,
                                                           (best_via[0] + best_via[1]) * 1e3),
                         "{:.0f}".format(best_via[2] * 1e3),
                         "**{:.2f}x**".format(ratio) if ratio <= TARGET else "{:.2f}x (over)".format(ratio),
                         "{:.2f} / {:.2f}".format(best_direct[0] * 1e6 / events,
                                                  (best_via[0] + best_via[1]) * 1e6 / events)])
            print("  gunicorn {}: done".format(protocol), flush=True)
    finally:
        server.terminate()
        try:
            server.wait(15)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
    bench.table(["protocol", "events (all streams)", "direct CPU / wall ms", "via CPU ms: client + gunicorn = total",
                 "via wall ms", "ratio", "us/event direct / via"], rows)
