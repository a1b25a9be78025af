"""agenthub.RateLimiter with a clock the tests drive: even spacing, tokens, headers, 429 pauses, threads."""

import threading

import pytest

import agenthub
from agenthub.errors import ConfigError
from agenthub.limiter import RateLimiter, estimate_tokens, parse_duration, parse_rfc3339
from forking import forked_child_uses as _forked_child_uses


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


def test_a_settlement_never_pulls_back_the_token_pace_of_the_requests_booked_behind_it():
    clock = Clock()
    limiter = _limiter(clock, tpm=60)  # one token a second: a request of 600 tokens holds the next back 600 s
    first, _ = limiter.reserve(600)
    slots = [limiter.reserve(600)[1] for _ in range(2)]
    assert slots == [600.0, 1200.0]
    limiter.settle(first, {"prompt_tokens": 610})  # 10 tokens more than estimated: the pace moves 10 s later
    assert limiter.reserve(0)[1] == 1810.0  # behind the three booked, not at 600 s beside the second
    limiter.settle(limiter.reserve(0)[0], {"prompt_tokens": 10 ** 6})  # a huge count holds back 600 s more, at most
    assert limiter.reserve(0)[1] == 1810.0 + 600.0


def test_a_token_count_that_is_no_number_is_a_config_error_and_an_infinite_one_is_bounded():
    clock = Clock()
    limiter = _limiter(clock, tpm=60)
    for bad, said in ((float("nan"), "NaN"), (None, "NoneType"), ("5", "str"), (True, "bool")):
        with pytest.raises(ConfigError, match="^tokens must be a number \\(got {}\\)$".format(said)):
            limiter.reserve(bad)
    assert limiter.reserve(float("inf"))[0].tokens == 10 ** 12  # (no OverflowError: held as the largest estimate)
    assert limiter.reserve(0)[1] == 600.0  # which holds the next request back the longest a request may


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


# -- issue 29 A4: a pause holds the endpoint that asked for it; D2: no figure, spaced after, fork --------

from agenthub.limiter import LimiterHook, endpoint_key  # noqa: E402
from agenthub.types import HttpRequest  # noqa: E402

A = ("openai-chat", ("127.0.0.1", 8001), "m")
B = ("openai-chat", ("127.0.0.1", 8002), "m")  # the same model behind another gateway: another endpoint


def test_a_pause_holds_the_endpoint_that_asked_for_it_not_the_others():
    clock = Clock()
    limiter = _limiter(clock, rpm=6000)
    limiter.pause(60, key=A)
    assert limiter.reserve(0, A)[1] == 60.0
    assert limiter.reserve(0, B)[1] == pytest.approx(0.01)  # only the rpm spacing: the held one is not in its way
    assert limiter.reserve(0, ("anthropic", ("127.0.0.1", 8001), "m"))[1] == pytest.approx(0.02)
    assert limiter.reserve(0, ("openai-chat", None, "m"))[1] == 60.0  # host not known yet: held to be safe
    assert limiter.paused_for(A) == 60.0 and limiter.paused_for(B) == 0.0 and limiter.paused_for() == 60.0
    limiter.pause(5)  # no key: every endpoint
    assert limiter.paused_for(B) == 5.0 and limiter.paused_for(A) == 60.0


class _Attempt(object):
    """What the attempt loop hands a hook (the fields LimiterHook reads)."""

    def __init__(self, port, model="m", server=True):
        self.kind, self.client_type, self.model = "stream", "openai-chat", model
        self.messages, self.config, self.resuming, self.usage = [], {}, None, None
        self.server = ("127.0.0.1", port) if server else None
        self.sent = self.request = HttpRequest("POST", "/chat/completions", {}, {})
        self.status, self.headers, self.waits = None, None, []

    def wait(self, seconds):
        self.waits.append(seconds)
        return False  # stop at once: the test only looks at what it would wait


def test_the_hook_pauses_the_answering_endpoint_and_a_failover_route_goes_at_once():
    from agenthub.errors import RateLimitError

    clock = Clock()
    limiter = _limiter(clock)
    hook = LimiterHook(limiter)
    primary = _Attempt(8001, server=False)  # the key comes from the URL the attempt was sent to
    primary.sent = HttpRequest("POST", "http://127.0.0.1:8001/v1/chat/completions", {}, {})
    primary.status, primary.headers = 429, {"Retry-After": "60"}
    assert endpoint_key(primary) == A + (None,)  # (no account known: held by, and holding, every one)
    hook.on_error(primary, RateLimitError("busy", status=429, retry_after=60.0))
    assert limiter.paused_for(A) == 60.0 and limiter.paused_for(B) == 0.0
    fallback = _Attempt(8002)
    hook.before_attempt(fallback)  # its endpoint is not paused: no wait
    assert fallback.waits == []
    again = _Attempt(8001)
    with pytest.raises(agenthub.TransportError):
        hook.before_attempt(again)
    assert again.waits == [60.0]
    runner_side = LimiterHook(limiter, acquire=False)  # the bulk runner's hook: no turn, the pause still holds
    with pytest.raises(agenthub.TransportError):
        runner_side.before_attempt(_Attempt(8001))
    runner_side.before_attempt(_Attempt(8002))


def test_a_calls_first_attempt_on_a_paused_endpoint_with_a_fallback_after_it_leaves_at_once():
    """Issue 37 B9: a call that has a route after this one (``call.routes_left``) does not wait out this
    endpoint's pause: a RateLimitError at once, nothing booked, no new pause, not retried on this route."""
    from agenthub.errors import RateLimitError

    clock = Clock()
    limiter = _limiter(clock)
    hook = LimiterHook(limiter)
    limiter.pause(60.0, A)
    first = _Attempt(8001)
    first.number, first.call = 0, _Attempt(8001)
    first.call.routes_left = 1
    with pytest.raises(RateLimitError) as skipped:
        hook.before_attempt(first)
    assert first.waits == [] and limiter.requests == 0  # no wait, no slot booked
    error = skipped.value
    assert (error.status, error.error_type, error.retryable, error.retry_after) == (None, "rate_limit_paused", True, 60.0)
    first.retry, first.delay = True, 60.0
    hook.on_error(first, error)
    assert first.retry is False and limiter.pauses == 1 and limiter.paused_for(A) == 60.0  # the pause is not renewed
    first.call.routes_left = 0  # the last route (or no fallback): the pause holds it as before
    with pytest.raises(agenthub.TransportError):
        hook.before_attempt(first)
    assert first.waits == [60.0]
    retry = _Attempt(8001)
    retry.number, retry.call = 1, first.call
    first.call.routes_left = 1  # a retry on this route (after its own 429's wait) waits as before
    with pytest.raises(agenthub.TransportError):
        hook.before_attempt(retry)
    assert retry.waits == [60.0]


@pytest.mark.parametrize("headers", [{"Retry-After": "inf"}, {"Retry-After": "1e309"}, {"Retry-After": "nan"},
                                     {"retry-after-ms": "inf"}])
def test_a_retry_after_that_is_not_a_finite_number_is_no_figure(headers):
    clock = Clock()
    limiter = _limiter(clock)
    limiter.observe(headers, status=429)
    assert limiter.paused_for() == 1.0  # a 429 with no figure: one second, not MAX_PAUSE
    limiter.pause(float("inf"))
    limiter.observe({}, status=429, retry_after=float("inf"))
    assert limiter.paused_for() == 1.0
    assert parse_duration("inf") is None and parse_duration("1e309") is None
    assert parse_duration("9" * 400 + "s") is None


def test_requests_a_pause_held_go_spaced_after_it_not_at_once():
    clock = Clock()
    limiter = _limiter(clock, rpm=600)  # one every 0.1 s
    tickets = [limiter.reserve(0)[0] for _ in range(5)]  # slots at +0.0 .. +0.4
    assert [round(t.at - 1000.0, 6) for t in tickets] == [0.0, 0.1, 0.2, 0.3, 0.4]
    limiter.pause(5)  # a 429 right after the first went: the other four sleep through it
    clock.now = 1005.0  # they all wake when it ends
    slept = []
    for ticket in tickets[1:]:
        assert limiter.wait_turn(ticket, 0.0, None, lambda s: slept.append(round(s, 6)) or True)
    assert [round(t.at - 1000.0, 6) for t in tickets[1:]] == [5.0, 5.1, 5.2, 5.3]
    assert slept == [0.1, 0.2, 0.3]
    assert round(limiter.reserve(0)[0].at - 1000.0, 6) == 5.4  # the next newcomer queues behind them


def test_a_429_pause_spaces_the_acquires_that_were_waiting():
    clock = Clock()
    limiter = _limiter(clock, rpm=600)
    ticket, _ = limiter.reserve(0)
    second, wait = limiter.reserve(0)  # booked for +0.1
    limiter.pause(3)
    assert limiter.wait_turn(second, wait, None, lambda s: clock.sleep(s) or True)
    assert clock.now == 1003.0 and second.at == 1003.0  # held to the end of the pause, then goes
    third = limiter.acquire()
    assert round(third.at - 1000.0, 6) == 3.1  # spaced behind it


@pytest.mark.skipif(not hasattr(__import__("os"), "register_at_fork"), reason="no fork")
@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # 3.12+: fork with threads running
def test_a_forked_child_does_not_deadlock_on_a_limiter_or_budget_lock():
    limiter = RateLimiter(rpm=6000)
    assert _forked_child_uses(limiter, lambda: (limiter.reserve(0), limiter.pause(1), limiter.paused_for())) == 0
    hook = LimiterHook(limiter)
    assert _forked_child_uses(hook, lambda: hook.on_done(_Attempt(8001))) == 0
    budget = agenthub.Budget(1.0)
    assert _forked_child_uses(budget, lambda: budget.reserve("gpt-5.5", 10, 10).settle(None)) == 0
    budget_hook = agenthub.budget.BudgetHook(budget)
    assert _forked_child_uses(budget_hook, lambda: budget_hook.on_done(_Attempt(8001))) == 0


@pytest.mark.skipif(not hasattr(__import__("os"), "register_at_fork"), reason="no fork")
@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # 3.12+: fork with threads running
def test_a_forked_child_does_not_deadlock_on_the_catalogs_first_load(monkeypatch):
    from agenthub import catalog

    monkeypatch.setattr(catalog, "_data", None)  # a thread of the parent is loading the snapshot at the fork
    budget = agenthub.Budget(1.0)
    assert _forked_child_uses(catalog, lambda: budget.reserve("gpt-5.5", 10, 10).settle(None)) == 0
