"""Gateways (LiteLLM, OpenRouter, compatible proxies): what their error answers and headers look like.

Each test plays a minimal answer written for this file on a local server (tests/faultserver.py) that
reproduces one gateway behaviour, and states the exact error (or events) that must come out.
"""

import json

import pytest

import agenthub.client as client_module
from agenthub import AutoLLMClient, RateLimitError, ServerError, UpstreamError
from agenthub.client import Timeout
from agenthub.errors import upstream_error
from faultserver import FaultServer, chat_stream, send, status, tiny_session, within

USER = {"role": "user", "content_items": [{"type": "text", "text": "hi"}]}
SSE = {"Content-Type": "text/event-stream"}
JSON = {"Content-Type": "application/json"}


@pytest.fixture(autouse=True)
def fast_backoff(monkeypatch):
    monkeypatch.setattr(client_module, "BACKOFF_BASE", 0.01)
    monkeypatch.setattr(client_module, "BACKOFF_CAP", 0.05)


@pytest.fixture
def server():
    with FaultServer() as srv:
        yield srv
        assert not srv.errors


def make(server, client_type="openai-chat", path="/v1", **kwargs):
    kwargs.setdefault("timeout", Timeout(connect=2, read=3))
    return AutoLLMClient("test-model", client_type=client_type, base_url=server.url + path,
                         session=tiny_session(), **kwargs)


def text_of(events):
    return "".join(i["text"] for e in events for i in e["content_items"] if i["type"] == "text")


def fields(error):
    return (type(error).__name__, error.status, error.error_type, error.code, error.message, error.retryable)


# -- error objects ----------------------------------------------------------------------------------

def test_a_numeric_string_code_with_a_null_type_gives_the_status():
    """LiteLLM's proxy writes ``code`` as a string status and ``type`` null (or ``"None"``) in its
    error objects, also inside a 200 stream: the code is the status, and decides retrying."""
    error = upstream_error("openai-chat", {"error": {"message": "upstream failed", "type": None, "param": None,
                                                     "code": "500"}})
    assert fields(error) == ("ServerError", 500, None, "500", "upstream failed", True)
    error = upstream_error("openai-chat", {"error": {"message": "slow down", "type": "None", "param": "None",
                                                     "code": "429"}})
    assert fields(error) == ("RateLimitError", 429, None, "429", "slow down", True)
    error = upstream_error("anthropic", {"error": {"message": "bad", "type": None, "code": "400"}}, status=500)
    assert fields(error) == ("UpstreamError", 400, None, "400", "bad", False)
    # a code that is no status: the HTTP status decides, the code stays the code
    error = upstream_error("openai-chat", {"error": {"message": "m", "type": None, "code": "model_overloaded"}},
                           status=503)
    assert fields(error) == ("ServerError", 503, "model_overloaded", "model_overloaded", "m", True)
    error = upstream_error("openai-chat", {"error": {"message": "m", "type": None, "code": "12"}}, status=502)
    assert fields(error) == ("ServerError", 502, "12", "12", "m", True)
    # a named type keeps its own meaning: the code is only the code
    error = upstream_error("openai-chat", {"error": {"message": "m", "type": "invalid_request_error", "code": "404"}},
                           status=400)
    assert fields(error) == ("UpstreamError", 400, "invalid_request_error", "404", "m", False)
    # Google's numeric code beside its status name is unchanged
    error = upstream_error("gemini", {"error": {"code": 429, "message": "q", "status": "RESOURCE_EXHAUSTED"}},
                           status=429)
    assert fields(error) == ("RateLimitError", 429, "RESOURCE_EXHAUSTED", "429", "q", True)


@within(10)
def test_a_gateway_500_with_a_string_code_in_the_stream_is_retried(server):
    body = b'data: {"error": {"message": "litellm.InternalServerError: upstream died", "type": null, ' \
           b'"param": null, "code": "500"}}\n\n'
    server.push([status(200, SSE), send(body)])
    server.push([status(200, SSE), send(chat_stream("ok"))])
    assert text_of(list(make(server).streaming_response([USER]))) == "ok"
    assert len(server.requests) == 2


@within(10)
@pytest.mark.parametrize("framing", ["length", "chunked"])
def test_an_error_body_framed_as_an_event_stream_is_read_for_its_error(server, framing):
    """A gateway answering a streamed request that failed at once: a 4xx/5xx whose body is SSE."""
    body = (b'event: error\r\ndata: {"error": {"message": "Invalid model name passed in model=test-model",'
            b' "type": "invalid_request_error", "param": "model", "code": "400"}}\r\n\r\ndata: [DONE]\r\n\r\n')
    server.push([status(400, SSE, framing), send(body)])
    with pytest.raises(UpstreamError) as info:
        list(make(server).streaming_response([USER]))
    assert fields(info.value) == ("UpstreamError", 400, "invalid_request_error", "400",
                                  "Invalid model name passed in model=test-model", False)
    assert len(server.requests) == 1
    # Anthropic-shaped, behind an Anthropic-compatible gateway
    body = b'event: error\ndata: {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}\n\n'
    for _ in range(3):
        server.push([status(529, SSE, framing), send(body)])
    with pytest.raises(ServerError) as info:
        list(make(server, "anthropic", "").streaming_response([USER]))
    assert fields(info.value) == ("ServerError", 529, "overloaded_error", None, "Overloaded", True)
    assert len(server.requests) == 1 + 3


@within(10)
def test_an_event_stream_error_body_without_an_error_object_keeps_its_text(server):
    server.push([status(502, SSE, "length"), send(b"data: upstream connect error\n\n")])
    server.push([status(502, SSE, "length"), send(b"data: upstream connect error\n\n")])
    server.push([status(502, SSE, "length"), send(b"data: upstream connect error\n\n")])
    with pytest.raises(ServerError) as info:
        list(make(server).streaming_response([USER]))
    assert info.value.message == "data: upstream connect error"


# -- Retry-After spellings ----------------------------------------------------------------------------

@within(10)
@pytest.mark.parametrize("header, value", [
    ("llm_provider-retry-after", "0.3"),          # LiteLLM passes the provider's header on, prefixed
    ("llm_provider-retry-after-ms", "300"),
    ("x-ms-retry-after-ms", "300"),                # Azure OpenAI
    ("retry-after-ms", "300"),
    ("Retry-After", "0.3"),
])
def test_retry_after_spellings_are_honoured(server, header, value):
    server.push([status(429, dict(JSON, **{header: value}), "length"),
                 send(json.dumps({"error": {"message": "rate limited", "type": None, "code": "429"}}).encode())])
    server.push([status(200, SSE), send(chat_stream("ok"))])
    client = make(server)
    assert text_of(list(client.streaming_response([USER]))) == "ok"
    waited = server.requests[1].at - server.requests[0].at
    assert 0.28 < waited < 1.5, waited


def test_the_provider_request_id_a_gateway_passed_on_is_kept():
    from agenthub.transport import _request_id, _retry_after

    assert _request_id({"llm_provider-request-id": "req_abc"}) == "req_abc"
    assert _request_id({"x-request-id": "own", "llm_provider-request-id": "req_abc"}) == "own"
    assert _retry_after({"llm_provider-retry-after": "7", "retry-after": "3"}) == 3.0  # the gateway's own first
    assert _retry_after({"llm_provider-retry-after": " 7 "}) == 7.0
    assert _retry_after({"x-retry-after": "nonsense"}) is None


@within(10)
def test_a_gateways_own_rate_limit_on_messages_without_a_header_backs_off_and_retries(server):
    """LiteLLM's own limiter (max parallel requests, RPM) on ``/v1/messages``: a 429 with its error
    object and no Retry-After.  It is a RateLimitError retried with jittered backoff, then raised."""
    body = json.dumps({"error": {"message": "Max parallel request limit reached. Hit limit for api_key: ...",
                                 "type": "None", "param": "None", "code": "429"}}).encode()
    for _ in range(3):
        server.push([status(429, JSON, "length"), send(body)])
    with pytest.raises(RateLimitError) as info:
        list(make(server, "anthropic", "").streaming_response([USER]))
    assert fields(info.value) == ("RateLimitError", 429, None, "429",
                                  "Max parallel request limit reached. Hit limit for api_key: ...", True)
    assert info.value.retry_after is None
    assert [r.path for r in server.requests] == ["/v1/messages"] * 3
