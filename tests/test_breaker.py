"""The circuit breaker's closed / open / half-open transitions, with a clock the test controls."""

import os
import threading

import pytest

from agenthub import breaker
from agenthub.errors import ConfigError


class FakeClock(object):
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


@pytest.fixture
def clock(monkeypatch):
    fake = FakeClock()
    monkeypatch.setattr(breaker, "clock", fake)
    breaker.reset()
    yield fake
    breaker.reset()


def test_opens_after_consecutive_failures_and_a_success_resets_the_count(clock):
    b = breaker.breaker_for("anthropic", "api.anthropic.com", "claude-x")
    b.failure(3)
    b.failure(3)
    b.success()
    b.failure(3)
    b.failure(3)
    assert (b.state, b.failures) == ("closed", 2)
    assert b.allow(30.0) is True
    b.failure(3)
    assert b.state == "open"
    assert b.allow(30.0) is False


def test_half_open_lets_one_probe_through_after_the_cooldown(clock):
    b = breaker.breaker_for("openai-chat", "h", "m")
    for _ in range(3):
        b.failure(3)
    clock.now += 29.999
    assert b.allow(30.0) is False
    clock.now += 0.001
    assert b.allow(30.0) is True          # the probe
    assert b.state == "half-open"
    assert b.allow(30.0) is False         # everyone else waits for its verdict
    b.success()
    assert (b.state, b.failures) == ("closed", 0)
    assert b.allow(30.0) is True


def test_a_failed_probe_opens_it_for_another_cooldown(clock):
    b = breaker.breaker_for("gemini", "h", "m")
    for _ in range(3):
        b.failure(3)
    clock.now += 30
    assert b.allow(30.0) is True
    b.failure(3)                          # one failure in half-open is enough
    assert b.state == "open"
    clock.now += 29
    assert b.allow(30.0) is False
    clock.now += 1
    assert b.allow(30.0) is True


def test_a_probe_that_ends_without_a_verdict_lets_another_probe_go(clock):
    b = breaker.breaker_for("gemini", "h", "m2")
    for _ in range(3):
        b.failure(3)
    clock.now += 31
    assert b.allow(30.0) is True
    assert b.allow(30.0) is False
    b.release()
    assert b.allow(30.0) is True


def test_only_the_probe_in_flight_frees_the_half_open_slot(clock):
    b = breaker.breaker_for("gemini", "h", "m3")
    early = b.admit(30.0)                 # let through while closed
    assert early == 0
    b.failure(1)
    clock.now += 30
    probe = b.admit(30.0)
    assert probe == 1 and b.admit(30.0) is None
    b.release(early)                      # the early caller ends without a verdict: the probe still holds the slot
    assert b.admit(30.0) is None
    b.failure(1)                          # a failure reopens it; after the cooldown a second probe goes
    clock.now += 30
    assert b.admit(30.0) == 2
    b.release(probe)                      # the superseded probe frees nothing
    assert b.allow(30.0) is False
    b.release(2)
    assert b.allow(30.0) is True


def test_one_breaker_per_endpoint_shared_across_callers(clock):
    a = breaker.breaker_for("anthropic", "api.anthropic.com", "claude-x")
    assert breaker.breaker_for("anthropic", "api.anthropic.com", "claude-x") is a
    assert breaker.breaker_for("anthropic", "api.anthropic.com", "claude-y") is not a
    assert breaker.breaker_for("anthropic", "other.example", "claude-x") is not a


def test_thread_safe_under_concurrent_failures(clock):
    b = breaker.breaker_for("x", "h", "m")
    threads = [threading.Thread(target=lambda: [b.failure(10 ** 6) for _ in range(1000)]) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert b.failures == 8000


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_starts_with_every_breaker_closed(clock):
    b = breaker.breaker_for("x", "h", "forked")
    for _ in range(3):
        b.failure(3)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            fresh = breaker.breaker_for("x", "h", "forked")
            os.write(write, b"1" if fresh.state == "closed" and fresh is not b else b"0")
        finally:
            os._exit(0)
    os.close(write)
    assert os.read(read, 1) == b"1"
    os.close(read)
    os.waitpid(pid, 0)
    assert breaker.breaker_for("x", "h", "forked").state == "open"   # the parent's stays


@pytest.mark.parametrize("value, expected", [
    (None, {"failures": 3, "cooldown": 30.0}),
    (False, None),
    ({"failures": 1}, {"failures": 1, "cooldown": 30.0}),
    ({"cooldown": 0}, {"failures": 3, "cooldown": 0.0}),
])
def test_settings(value, expected):
    assert breaker.settings(value) == expected


@pytest.mark.parametrize("value, words", [
    ({"failures": 0}, "failures"), ({"cooldown": -1}, "cooldown"), ({"cooldown": float("nan")}, "cooldown"),
    ({"failures": True}, "failures"), ({"threshold": 2}, "unknown key"), ("3", "must be None, False or a dict"),
])
def test_bad_settings_are_config_errors(value, words):
    with pytest.raises(ConfigError) as info:
        breaker.settings(value)
    assert words in str(info.value)


def test_the_endpoint_names_its_path_and_marks_its_credentials_without_showing_them():
    key = "sk-proj-SECRET-0123456789"
    one = breaker.endpoint_name("api.openai.com:443", "/v1/", [key, "org-1"])
    assert one == breaker.endpoint_name("api.openai.com:443", "/v1", ["org-1", key, key])  # the same set: one endpoint
    assert one.startswith("api.openai.com:443/v1 key:") and len(one) == len("api.openai.com:443/v1 key:") + 16
    assert key not in one and "SECRET" not in one and "org-1" not in one
    assert one != breaker.endpoint_name("api.openai.com:443", "/v1", ["sk-proj-OTHER-0123456789", "org-1"])
    assert breaker.endpoint_name("h:443", "/v1/projects/a/locations/global") == "h:443/v1/projects/a/locations/global"
    assert breaker.endpoint_name("h:443", "", [None, ""]) == "h:443"  # no credential (a loopback server): no mark
    assert key not in repr(breaker.breaker_for("openai-chat", one, "m"))
