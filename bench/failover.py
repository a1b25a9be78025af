"""Failover timings (``python bench/run.py --only failover``): the time from the call to the first event
when the primary is skipped, beside calling the fallback directly.

- direct: the fallback client alone (a text stream from bench/server.py, kept-alive connection);
- open circuit: a client whose primary's circuit is open (``circuit_breaker`` state set by three
  recorded failures, cooldown one hour) and the same fallback client: the primary is never contacted;
- 503, ``max_retries=0``: the primary answers 503 (bench/server.py ``/status503``), ``circuit_breaker=False``
  so it is asked every time: one round trip, then the fallback;
- 503, ``max_retries=2`` (the default), for contrast: the retries' jittered backoff before the fallback
  (what an open circuit saves).

Runs alternate between the cases; min and median are reported.  Wall time (``time.perf_counter``).
"""

import statistics
import time

RUNS = 100
SKIPS = 100000
RETRY_RUNS = 5


def first_event(client, messages):
    """Seconds from the call to its first event; the (short) stream is then read to its end, so the
    connection goes back to the pool and every run starts on a kept-alive one."""
    start = time.perf_counter()
    stream = client.streaming_response(messages)
    next(stream)
    took = time.perf_counter() - start
    for _ in stream:
        pass
    return took


def measure(bench, messages, quick=False):
    from agenthub import AutoLLMClient, breaker

    runs = 10 if quick else RUNS
    breaker.reset()
    fallback = AutoLLMClient("fallback-model", client_type="openai-chat", api_key="k",
                             base_url=bench.url("chunked", "text-50", "openai-chat"), max_retries=0)
    down = "http://127.0.0.1:{}/status503/x/anthropic".format(bench.port)
    open_primary = AutoLLMClient("primary-model", client_type="anthropic", api_key="k", base_url=down,
                                 fallbacks=[fallback], circuit_breaker={"failures": 3, "cooldown": 3600.0})
    gate = breaker.breaker_for(*open_primary._circuit())
    for _ in range(3):
        gate.failure(3)
    assert gate.state == "open"
    on_503 = AutoLLMClient("primary-503", client_type="anthropic", api_key="k", base_url=down, max_retries=0,
                           fallbacks=[fallback], circuit_breaker=False)
    retried = AutoLLMClient("primary-503-retried", client_type="anthropic", api_key="k", base_url=down,
                            fallbacks=[fallback], circuit_breaker=False)
    cases = [("direct: the fallback client alone", fallback),
             ("open circuit: primary skipped, then the fallback", open_primary),
             ("503 with max_retries=0: one round trip, then the fallback", on_503)]
    for _, client in cases:  # warm: connections, the server's cache
        first_event(client, messages)
    times = {label: [] for label, _ in cases}
    for _ in range(runs):
        for label, client in cases:
            times[label].append(first_event(client, messages))
    routes = [client.last_route["model"] for _, client in cases]
    assert routes == ["fallback-model"] * 3, routes
    retry_times = [first_event(retried, messages) for _ in range(2 if quick else RETRY_RUNS)]
    assert gate.state == "open"
    # the skip itself: what the route loop does for an open entry (find its breaker, ask it), per call
    key = open_primary._circuit()
    start = time.perf_counter()
    for _ in range(SKIPS):
        breaker.breaker_for(*key).allow(3600.0)
    skip_us = (time.perf_counter() - start) / SKIPS * 1e6
    breaker.reset()

    direct = statistics.median(times[cases[0][0]])
    bench.out("## Failover: time from the call to the first event ({} alternating runs each)".format(runs))
    bench.out()
    bench.out("The fallback is an openai-chat client on bench/server.py (kept-alive connection); the primary an "
              "anthropic client at `/status503`. Wall time.")
    bench.out()
    rows = []
    for label, _ in cases:
        got = times[label]
        rows.append([label, "{:.2f}".format(min(got) * 1000), "{:.2f}".format(statistics.median(got) * 1000),
                     "{:+.2f}".format((statistics.median(got) - direct) * 1000)])
    rows.append(["503 with max_retries=2 (default), circuit closed: backoff, then the fallback ({} runs)".format(
        len(retry_times)), "{:.2f}".format(min(retry_times) * 1000),
        "{:.2f}".format(statistics.median(retry_times) * 1000),
        "{:+.2f}".format((statistics.median(retry_times) - direct) * 1000)])
    bench.table(["case", "min ms", "median ms", "median - direct ms"], rows)
    bench.out("The skip itself (the open entry's breaker found and asked, {} times): {:.2f} us per call.".format(
        SKIPS, skip_us))
    bench.out()
    return times, retry_times
