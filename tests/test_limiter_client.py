"""AutoLLMClient(..., limiter=RateLimiter(...)) against a local server: turns per attempt, headers,
a 429 pausing every client that shares the limiter, usage correcting the estimate, abort while waiting."""

import threading
import time

import pytest

from agenthub import AutoLLMClient, RateLimiter
from agenthub.errors import ConfigError, RateLimitError, TransportError

from jobs_server import JobServer

USER = [{"role": "user", "content_items": [{"type": "text", "text": "hello"}]}]


def _client(server, limiter, **kw):
    return AutoLLMClient("deepseek-v4-flash", client_type="openai-chat", base_url=server.base_url, limiter=limiter,
                         **kw)


def _user(text):
    return [{"role": "user", "content_items": [{"type": "text", "text": text}]}]


def test_requests_are_spaced_by_the_limiter():
    limiter = RateLimiter(rpm=600)  # one every 0.1 s
    with JobServer() as server:
        client = _client(server, limiter)
        for i in range(4):
            assert client.response(_user("n{}".format(i)))["content_items"][0]["text"] == "echo: n{}".format(i)
        times = [t for t, _, _ in server.log]
    gaps = [b - a for a, b in zip(times, times[1:])]
    # spaced, not a burst: each arrival well apart, and the four span three spacings (arrival times at the
    # server jitter with the scheduler, so one gap may look a little short when the one before it ran long)
    assert len(gaps) == 3 and min(gaps) >= 0.05 and times[-1] - times[0] >= 0.27, gaps
    assert limiter.requests == 4
    assert client.limiter is limiter


def test_usage_corrects_the_token_estimate():
    limiter = RateLimiter(tpm=1_000_000)
    with JobServer() as server:
        _client(server, limiter).response(USER, {"max_tokens": 100})
    assert limiter.tokens == 15  # the server's prompt 10 + completion 5, not the estimate (102)


def test_exhausted_headers_on_a_200_hold_the_next_request():
    limiter = RateLimiter()
    headers = {"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "300ms"}
    with JobServer(headers=headers) as server:
        client = _client(server, limiter)
        client.response(_user("first"))
        assert 0.2 < limiter.paused_for() <= 0.3
        client.response(_user("second"))
        times = [t for t, _, _ in server.log]
    assert times[1] - times[0] >= 0.28


def test_a_429_on_one_client_pauses_another_sharing_the_limiter():
    limiter = RateLimiter()
    with JobServer() as server:
        first = _client(server, limiter, max_retries=0)
        other = AutoLLMClient("deepseek-v4-pro", client_type="openai-chat", base_url=server.base_url, limiter=limiter)
        with pytest.raises(RateLimitError) as info:
            first.response(_user("fail:429once"))
        assert info.value.retry_after == 0.3 and limiter.pauses == 1
        other.response(_user("after"))
        times = [t for t, key, _ in server.log]
    assert times[1] - times[0] >= 0.28


def test_a_retried_429_waits_for_the_pause_once():
    limiter = RateLimiter()
    with JobServer() as server:
        answer = _client(server, limiter, max_retries=1).response(_user("fail:429once"))
        assert answer["content_items"][0]["text"] == "echo: fail:429once"
        times = [t for t, _, _ in server.log]
    assert 0.28 <= times[1] - times[0] < 1.0
    assert limiter.requests == 2


def test_abort_while_waiting_for_the_limiter_sends_nothing():
    limiter = RateLimiter()
    limiter.pause(5)
    with JobServer() as server:
        stream = _client(server, limiter).streaming_response(USER)
        threading.Timer(0.2, stream.abort).start()
        started = time.monotonic()
        with pytest.raises(TransportError) as info:
            list(stream)
        assert info.value.aborted and time.monotonic() - started < 2
        assert server.log == []


def test_limiter_must_be_a_rate_limiter():
    with pytest.raises(ConfigError):
        AutoLLMClient("deepseek-v4-flash", client_type="openai-chat", base_url="http://127.0.0.1:9/v1",
                      limiter={"rpm": 60})
