"""agenthub.RateLimiter with a clock the tests drive: even spacing, tokens, headers, 429 pauses, threads."""

import threading

import pytest

import agenthub
from agenthub.errors import ConfigError
from agenthub.limiter import RateLimiter, estimate_tokens, parse_duration, parse_rfc3339


class Clock(object):
    def __init__(self, now=1000.0):
        self.now = now
        self.slept = []

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.slept.append(round(seconds, 6))
        self.now += seconds


def _limiter(clock, **kw):
    return RateLimiter(clock=clock, sleep=clock.sleep, wall=lambda: 1_767_225_600.0 + clock.now - 1000.0, **kw)


def test_exported_from_the_package():
    assert agenthub.RateLimiter is RateLimiter


def test_60_rpm_is_one_request_a_second_never_a_burst():
    clock = Clock()
    limiter = _limiter(clock, rpm=60)
    starts = []
    for _ in range(5):
        limiter.acquire()
        starts.append(clock.now - 1000.0)
    assert starts == [0.0, 1.0, 2.0, 3.0, 4.0]
    clock.now += 10  # idle for 10 s: no minute's worth saved up, the next two are a second apart again
    limiter.acquire()
    limiter.acquire()
    assert clock.now - 1000.0 == 15.0


def test_reserve_books_slots_without_blocking():
    clock = Clock()
    limiter = _limiter(clock, rpm=600)
    waits = [round(limiter.reserve()[1], 6) for _ in range(4)]
    assert waits == [0.0, 0.1, 0.2, 0.3]
    assert limiter.requests == 4


def test_tpm_spaces_by_tokens_and_usage_corrects_the_estimate():
    clock = Clock()
    limiter = _limiter(clock, tpm=6000)  # 100 tokens a second
    first = limiter.acquire(200)
    assert clock.now == 1000.0 and first.tokens == 200
    # the answer used 400: the next request waits 4 s after the first, not 2
    limiter.settle(first, {"prompt_tokens": 150, "response_tokens": 250, "cached_tokens": 100})
    limiter.acquire(100)
    assert clock.now == 1004.0
    limiter.settle(first, {"prompt_tokens": 9999})  # settling twice changes nothing
    second = limiter.acquire(1000)
    assert clock.now == 1005.0
    limiter.settle(second, {"prompt_tokens": 50, "response_tokens": 50})  # far less than estimated
    limiter.acquire(0)
    assert clock.now == 1006.0


def test_estimate_is_the_budgets_input_estimate_plus_max_tokens():
    from agenthub import budget

    messages = [{"role": "user", "content_items": [{"type": "text", "text": "x" * 400},
                                                   {"type": "inline_data", "data": b"\0" * 10000,
                                                    "mime_type": "image/png"}]}]
    # one rule (agenthub.estimate): 4 per message, UTF-8 bytes / 3 rounded up, an image 1600; then max_tokens
    assert estimate_tokens(messages, {"max_tokens": 50}) == 4 + 134 + 1600 + 50
    assert estimate_tokens(messages, {"system_prompt": "y" * 40}) == 4 + 134 + 1600 + 4 + 14
    assert RateLimiter.estimate(messages) == budget.estimate_tokens(messages) == 4 + 134 + 1600


def test_a_429_retry_after_pauses_every_user():
    clock = Clock()
    limiter = _limiter(clock, rpm=6000)
    limiter.acquire()
    limiter.observe({"Retry-After": "3"}, status=429)
    assert limiter.paused_for() == 3.0
    limiter.acquire()
    assert clock.now == 1003.0
    limiter.observe({"retry-after-ms": "250", "retry-after": "9"}, status=429)
    limiter.acquire()
    assert clock.now == pytest.approx(1003.25)
    limiter.pause(5)
    limiter.pause(1)  # a shorter pause never shortens a longer one
    assert limiter.paused_for() == 5.0 and limiter.pauses == 3


def test_a_429_without_any_figure_still_pauses_a_second():
    clock = Clock()
    limiter = _limiter(clock)
    limiter.observe({}, status=429)
    assert limiter.paused_for() == 1.0


def test_openai_headers_exhausted_hold_everyone_until_the_reset():
    clock = Clock()
    limiter = _limiter(clock)
    limiter.observe({"x-ratelimit-remaining-requests": "4", "x-ratelimit-reset-requests": "6m0s"})
    assert limiter.paused_for() == 0.0  # requests left: no pause
    limiter.observe({"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "1.5s",
                     "x-ratelimit-remaining-tokens": "0", "x-ratelimit-reset-tokens": "120ms"})
    assert limiter.paused_for() == 1.5


def test_anthropic_headers_use_rfc3339_resets():
    clock = Clock()
    limiter = _limiter(clock)  # wall clock: 2026-01-01T00:00:00Z
    limiter.observe([("anthropic-ratelimit-requests-remaining", "10"),
                     ("anthropic-ratelimit-requests-reset", "2026-01-01T00:01:00Z"),
                     ("anthropic-ratelimit-output-tokens-remaining", "0"),
                     ("anthropic-ratelimit-output-tokens-reset", "2026-01-01T00:00:02.5Z")])
    assert limiter.paused_for() == 2.5


def test_header_formats():
    assert parse_duration("6m0s") == 360.0
    assert parse_duration("12ms") == pytest.approx(0.012)
    assert parse_duration("1h2m3.5s") == pytest.approx(3723.5)
    assert parse_duration("2") == 2.0
    assert parse_duration("soon") is None and parse_duration("5s later") is None and parse_duration("") is None
    assert parse_rfc3339("2026-01-01T00:00:00Z") == 1_767_225_600.0
    assert parse_rfc3339("2026-01-01T01:00:00.25+01:00") == 1_767_225_600.25
    assert parse_rfc3339("yesterday") is None


def test_a_broken_header_pauses_at_most_ten_minutes():
    clock = Clock()
    limiter = _limiter(clock)
    limiter.observe({"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "999h"})
    assert limiter.paused_for() == 600.0


def test_bad_limits_are_config_errors():
    for bad in (0, -1, True, "60", float("inf")):
        with pytest.raises(ConfigError):
            RateLimiter(rpm=bad)
    with pytest.raises(ConfigError):
        RateLimiter(tpm=0)


def test_share_splits_the_budget():
    limiter = RateLimiter(rpm=600, tpm=90000)
    part = limiter.share(3)
    assert (part.rpm, part.tpm) == (200.0, 30000.0)
    assert RateLimiter().share(4).rpm is None


def test_threads_get_distinct_evenly_spaced_slots():
    clock = Clock()
    limiter = _limiter(clock, rpm=1200)  # 0.05 s apart
    waits = []
    lock = threading.Lock()

    def worker():
        for _ in range(50):
            _, wait = limiter.reserve()
            with lock:
                waits.append(round(wait, 6))

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert sorted(waits) == [round(i * 0.05, 6) for i in range(400)]


def test_pickled_copy_has_the_same_budget():
    import pickle

    copy = pickle.loads(pickle.dumps(RateLimiter(rpm=60, tpm=1000)))
    assert (copy.rpm, copy.tpm, copy.requests) == (60.0, 1000.0, 0)
