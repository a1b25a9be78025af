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
    assert len(gaps) == 3 and min(gaps) >= 0.05 and times[-1] - times[0] >= 0.25, gaps
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
        asked = time.monotonic()
        client.response(_user("first"))
        # 300 ms from the answer, counted down since: a loaded machine only shortens what is left
        assert 0.3 - (time.monotonic() - asked) - 0.02 < limiter.paused_for() <= 0.3
        client.response(_user("second"))
        times = [t for t, _, _ in server.log]
    assert times[1] - times[0] >= 0.28


def test_a_429_on_one_client_pauses_another_sharing_the_limiter_on_that_endpoint_only():
    limiter = RateLimiter()
    with JobServer() as server:
        first = _client(server, limiter, max_retries=0)
        same = _client(server, limiter)  # another client of the same endpoint (client type, host and port, model)
        elsewhere = AutoLLMClient("deepseek-v4-pro", client_type="openai-chat", base_url=server.base_url,
                                  limiter=limiter)  # another model: another endpoint
        with pytest.raises(RateLimitError) as info:
            first.response(_user("fail:429once"))
        assert info.value.retry_after == 0.3 and limiter.pauses == 1
        elsewhere.response(_user("elsewhere"))
        same.response(_user("after"))
        times = {key: t for t, key, _ in server.log}
    assert times["elsewhere"] - times["fail:429once"] < 0.2  # not held by the other endpoint's pause
    assert times["after"] - times["fail:429once"] >= 0.28


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


# -- issue 29 A4: a 429's pause holds its endpoint; a failover route to another endpoint goes at once ------

import json  # noqa: E402

import agenthub  # noqa: E402
from agenthub.limiter import endpoint_key  # noqa: E402

from sse_server import Answer, SSEServer  # noqa: E402


def _ok():
    chunk = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m"}
    body = b"".join(b"data: " + json.dumps(dict(chunk, choices=[c])).encode() + b"\n\n" for c in (
        {"index": 0, "delta": {"role": "assistant", "content": "from the fallback"}, "finish_reason": None},
        {"index": 0, "delta": {}, "finish_reason": "stop"}))
    return Answer([body + b"data: [DONE]\n\n"])


def _busy():
    return Answer([b'{"error": {"message": "rate limited", "type": "requests", "code": "rate_limit_exceeded"}}'],
                  status=429, headers={"Content-Type": "application/json", "Retry-After": "60"}, chunked=False)


class _ServerProbe(agenthub.attempts.AttemptHook):
    """A hook that notes the ``server`` each attempt names when its hooks run (issue 28 C1's Attempt.server)."""

    def __init__(self):
        self.seen = []

    def before_attempt(self, attempt):
        self.seen.append(getattr(attempt, "server", None))



def _failover(primary_model, fallback_model):
    limiter = RateLimiter()
    probe = _ServerProbe()
    timeout = agenthub.Timeout(connect=5, read=5, total=5)  # waiting out the 60 s pause would end at the deadline
    with SSEServer() as primary, SSEServer() as healthy:
        primary.answers.append(_busy())
        healthy.answers.append(_ok())
        fallback = AutoLLMClient(fallback_model, client_type="openai-chat", api_key="k", base_url=healthy.url,
                                 max_retries=0, timeout=timeout, limiter=limiter)
        client = AutoLLMClient(primary_model, client_type="openai-chat", api_key="k", base_url=primary.url,
                               max_retries=0, timeout=timeout, limiter=limiter, fallbacks=[fallback], hooks=[probe])
        answer = client.response(USER)
        assert (len(primary.requests), len(healthy.requests)) == (1, 1)
        port = int(primary.url.split(":")[2].split("/")[0])
        healthy_port = int(healthy.url.split(":")[2].split("/")[0])
    # every route's attempt named the server it goes to before the first hook ran
    assert probe.seen == [("127.0.0.1", port), ("127.0.0.1", healthy_port)]
    assert answer["content_items"][0]["text"] == "from the fallback"
    assert limiter.paused_for(("openai-chat", ("127.0.0.1", port), primary_model)) > 50


def test_a_429_pause_does_not_hold_a_failover_to_another_model():
    agenthub.breaker.reset()
    _failover("deepseek-v4-flash", "deepseek-v4-pro")


def test_a_429_pause_does_not_hold_a_failover_to_the_same_model_behind_another_gateway():
    agenthub.breaker.reset()
    _failover("m", "m")


def test_a_429_of_one_key_does_not_hold_a_fallback_on_another_key_of_the_same_endpoint():
    """A pause's key had no credential in it: a 429 to key A held a fallback on key B of the same host and model
    (another account, whose own limits were untouched), so the call waited out A's 60 s pause and ended at its
    deadline.  The key now carries a mark of the credentials (never one): B goes at once, A stays held."""
    agenthub.breaker.reset()
    limiter = RateLimiter()
    timeout = agenthub.Timeout(connect=5, read=5, total=5)
    with SSEServer() as server:
        server.answers.extend([_busy(), _ok()])
        fallback = AutoLLMClient("m", client_type="openai-chat", api_key="sk-key-B-0123456789", base_url=server.url,
                                 max_retries=0, timeout=timeout, limiter=limiter)
        client = AutoLLMClient("m", client_type="openai-chat", api_key="sk-key-A-0123456789", base_url=server.url,
                               max_retries=0, timeout=timeout, limiter=limiter, fallbacks=[fallback])
        answer = client.response(USER)
        assert [request["headers"]["Authorization"] for request in server.requests] == [
            "Bearer sk-key-A-0123456789", "Bearer sk-key-B-0123456789"]
        port = int(server.url.split(":")[2].split("/")[0])
    assert answer["content_items"][0]["text"] == "from the fallback"
    marks = client._account(client.hooks), fallback._account(fallback.hooks)
    assert len(set(marks)) == 2 and all(len(mark) == 16 for mark in marks)
    endpoint = ("openai-chat", ("127.0.0.1", port), "m")
    assert limiter.paused_for(endpoint + (marks[0],)) > 50 and limiter.paused_for(endpoint + (marks[1],)) == 0.0
    assert limiter.paused_for(endpoint) > 50  # (a key with no account: held by every account's pause)
    assert "0123456789" not in repr(limiter._paused)
    assert agenthub.breaker.account_mark([]) is None  # (no credential: holds, and is held by, every account)


def test_a_429_pause_holds_the_same_key_whatever_other_headers_its_clients_send():
    """The account mark was made of every default header's value with the key, the public ones too (User-Agent,
    anthropic-beta, openai-beta...): a client of the same key with another User-Agent (another service, another
    process's version) was another account, so a 429's pause of that key held none of its requests."""
    agenthub.breaker.reset()
    limiter = RateLimiter()
    with SSEServer() as server:
        server.answers.append(_busy())
        client = AutoLLMClient("m", client_type="openai-chat", api_key="sk-key-A-0123456789", base_url=server.url,
                               max_retries=0, limiter=limiter,
                               default_headers={"User-Agent": "billing-service/2.1", "OpenAI-Beta": "assistants=v2"})
        with pytest.raises(RateLimitError):
            client.response(USER)
        port = int(server.url.split(":")[2].split("/")[0])
    same_key = AutoLLMClient("m", client_type="openai-chat", api_key="sk-key-A-0123456789", base_url=server.url,
                             limiter=limiter)
    other_key = AutoLLMClient("m", client_type="openai-chat", api_key="sk-key-B-0123456789", base_url=server.url,
                              limiter=limiter, default_headers={"User-Agent": "billing-service/2.1"})
    project = AutoLLMClient("m", client_type="openai-chat", api_key="sk-key-A-0123456789", base_url=server.url,
                            limiter=limiter, default_headers={"OpenAI-Project": "proj_other"})
    marks = [each._account(each.hooks) for each in (client, same_key, other_key, project)]
    assert marks[0] == marks[1] and len(set(marks)) == 3
    endpoint = ("openai-chat", ("127.0.0.1", port), "m")
    assert [limiter.paused_for(endpoint + (mark,)) > 50 for mark in marks] == [True, True, False, False]


def test_the_endpoint_key_is_the_circuits():
    class Sent(object):
        client_type, model, server = "openai-chat", "m", None
        sent = agenthub.types.HttpRequest("POST", "https://Gateway.example:8443/v1/chat/completions", {}, {})

    assert endpoint_key(Sent()) == ("openai-chat", ("gateway.example", 8443), "m", None)
    Sent.server, Sent.account = ("10.0.0.1", 443), "0f1e2d3c4b5a6978"
    assert endpoint_key(Sent()) == ("openai-chat", ("10.0.0.1", 443), "m", "0f1e2d3c4b5a6978")


# -- issue 37 B9 (differential D3): a call that starts while its primary is paused goes to its fallback at once ---


def test_a_call_starting_during_its_primarys_pause_goes_to_the_fallback_at_once():
    agenthub.breaker.reset()
    limiter = RateLimiter()
    # no total deadline: before the fix the second call waited out the whole 60 s pause (the bound below is
    # generous against it and says only "did not wait the pause")
    with SSEServer() as primary, SSEServer() as healthy:
        primary.answers.append(_busy())
        fallback = AutoLLMClient("m", client_type="openai-chat", api_key="k", base_url=healthy.url, max_retries=0,
                                 limiter=limiter)
        first = AutoLLMClient("m", client_type="openai-chat", api_key="k", base_url=primary.url, max_retries=0,
                              limiter=limiter, fallbacks=[fallback])
        healthy.answers.append(_ok())
        first.response(USER)  # the primary's 429 (Retry-After: 60) pauses it; the fallback answers
        # a client that retries: the skip is not retried on the paused endpoint either
        client = AutoLLMClient("m", client_type="openai-chat", api_key="k", base_url=primary.url, max_retries=2,
                               limiter=limiter, fallbacks=[fallback])
        healthy.answers.append(_ok())
        result = {}

        def second():
            stream = client.streaming_response(USER)
            result["stream"] = stream
            result["answer"] = agenthub.collect(stream)

        worker = threading.Thread(target=second, daemon=True)
        worker.start()
        worker.join(30)
        if worker.is_alive():
            result["stream"].abort()
            worker.join(10)
        answer = result.get("answer")
        port = int(primary.url.split(":")[2].split("/")[0])
        primary_posts, healthy_posts = len(primary.requests), len(healthy.requests)
        # a client of the paused endpoint with no fallback is still held by the pause: it waits (here until
        # its deadline), nothing sent
        alone = AutoLLMClient("m", client_type="openai-chat", api_key="k", base_url=primary.url, max_retries=0,
                              limiter=limiter, timeout=agenthub.Timeout(connect=5, read=5, total=0.5))
        with pytest.raises(agenthub.errors.TransportError) as held:
            alone.response(USER)
        assert len(primary.requests) == 1
    assert answer is not None and answer["content_items"][0]["text"] == "from the fallback"
    assert (primary_posts, healthy_posts) == (1, 2)  # the second call sent nothing to the paused primary
    assert client.last_route["host"] == "127.0.0.1:{}".format(int(healthy.url.split(":")[2].split("/")[0]))
    assert held.value.deadline is True
    assert limiter.paused_for(("openai-chat", ("127.0.0.1", port), "m")) > 50  # the pause still holds the primary
    # the skip is no failure of the primary's circuit: only its one 429 counted
    assert agenthub.breaker.breaker_for(*first._circuit()).failures == 1
