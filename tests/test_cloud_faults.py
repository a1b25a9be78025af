"""The fault matrix for the cloud routes (azure, azure-responses, vertex, vertex-anthropic), over the
fault-injecting server on 127.0.0.1: a drop after content, a stall after content, an overload
before content (retried with a fresh token from the provider), 503 then success, and connections
released every time.  The streams are this repository's own fixtures."""

import os

import pytest

from agenthub import AutoLLMClient, StreamProtocolError, TransportError, UpstreamError
from agenthub.client import Timeout
from agenthub.stream import check_stream
from faultserver import drop, hang, pool_free, send, sleep, status, tiny_session, within
from faultserver import fast_backoff, server  # noqa: F401  (fixtures)

HERE = os.path.dirname(os.path.abspath(__file__))
SSE = {"Content-Type": "text/event-stream"}
USER = {"role": "user", "content_items": [{"type": "text", "text": "Weather in Paris?"}]}


def fixture(folder, name):
    with open(os.path.join(HERE, "fixtures", folder, name), "rb") as handle:
        return handle.read()


#: client_type -> (model, base path, recording, an in-stream overload sent before any content)
ROUTES = {
    "azure": ("my-gpt5", "", ("azure", "chat_content_filter.sse"),
              b'data: {"error": {"message": "Overloaded", "type": "overloaded_error"}}\n\n'),
    "azure-responses": ("gpt-5-mini", "/openai/v1", ("azure", "responses_annotation_tool_call.sse"),
                        b'event: error\ndata: {"type": "error", "code": "server_error", "message": "overloaded", '
                        b'"param": null, "sequence_number": 1}\n\n'),
    "vertex": ("gemini-3.5-flash", "/v1/projects/p-123/locations/us-east5", ("vertex", "gemini_text.sse"),
               b'data: {"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}}\n\n'),
    "vertex-anthropic": ("claude-sonnet-4-6", "/v1/projects/p-123/locations/us-east5",
                         ("vertex", "claude_text.sse"),
                         b'event: error\ndata: {"type": "error", "error": {"type": "overloaded_error", '
                         b'"message": "Overloaded"}}\n\n'),
}




class Tokens(object):
    """A token provider that hands out a new token per call (as a refreshing one may)."""

    def __init__(self):
        self.issued = []

    def __call__(self):
        self.issued.append("tok-{}".format(len(self.issued) + 1))
        return self.issued[-1]


def client_for(server, client_type, tokens, **kwargs):
    model, path, _, _ = ROUTES[client_type]
    kwargs.setdefault("timeout", Timeout(connect=2, read=3))
    return AutoLLMClient(model, api_key=tokens, base_url=server.url + path, client_type=client_type,
                         session=tiny_session(), **kwargs)


def recording(client_type):
    return fixture(*ROUTES[client_type][2])


def first_event_and_rest(client_type, data):
    """(the shortest run of whole events after which the parser has produced a delta, the rest,
    that run less its last event: a preamble with no content yet)."""
    from agenthub import hosts
    from agenthub.errors import AgentHubError
    from agenthub.sse import iter_events
    from agenthub.stream import drive

    record = hosts.client_type(client_type).protocol()
    parts = [p + b"\n\n" for p in data.replace(b"\r\n", b"\n").split(b"\n\n") if p.strip()]
    for k in range(1, len(parts)):
        prefix = b"".join(parts[:k])
        deltas = 0
        try:
            for event in drive(record.parse_stream(iter_events([prefix]), "t"), "t"):
                deltas += event["event_type"] == "delta"
        except AgentHubError:
            pass
        if deltas:
            return prefix, b"".join(parts[k:]), b"".join(parts[:k - 1])
    raise AssertionError("no content")


def auth_headers(server):
    return [{k.lower(): v for k, v in dict(request.headers).items()}.get("authorization") for request in server.requests]


@within(10)
@pytest.mark.parametrize("client_type", sorted(ROUTES))
def test_a_recording_streams_end_to_end(server, client_type):
    server.push([status(200, SSE), send(recording(client_type))])
    tokens = Tokens()
    client = client_for(server, client_type, tokens)
    events = list(client.streaming_response_stateful(USER))
    check_stream(events)
    assert len(client.get_history()) == 2 and auth_headers(server) == ["Bearer tok-1"]
    assert pool_free(client._session, server.url)


@within(10)
@pytest.mark.parametrize("client_type", sorted(ROUTES))
def test_a_drop_after_content_is_raised_and_the_history_is_unchanged(server, client_type):
    head, _, _ = first_event_and_rest(client_type, recording(client_type))
    server.push([status(200, SSE), send(head), drop()])
    client = client_for(server, client_type, Tokens())
    events = []
    with pytest.raises((TransportError, StreamProtocolError)) as info:
        for event in client.streaming_response_stateful(USER):
            events.append(event)
    assert info.value.retryable is True and any(e["event_type"] == "delta" for e in events)
    assert len(server.requests) == 1 and client.get_history() == []
    assert pool_free(client._session, server.url)


@within(10)
@pytest.mark.parametrize("client_type", sorted(ROUTES))
def test_a_stall_after_content_hits_the_idle_timeout(server, client_type):
    head, _, _ = first_event_and_rest(client_type, recording(client_type))
    server.push([status(200, SSE), send(head), hang(3)])
    client = client_for(server, client_type, Tokens(), timeout=Timeout(connect=2, read=0.3))
    with pytest.raises(TransportError) as info:
        list(client.streaming_response([USER]))
    assert info.value.timeout is True and len(server.requests) == 1


@within(10)
@pytest.mark.parametrize("client_type", sorted(ROUTES))
def test_an_overload_before_content_is_retried_with_a_fresh_token(server, client_type):
    _, _, preamble = first_event_and_rest(client_type, recording(client_type))
    server.push([status(200, SSE), send(preamble), send(ROUTES[client_type][3]), hang(2)])
    server.push([status(200, SSE), send(recording(client_type))])
    tokens = Tokens()
    client = client_for(server, client_type, tokens)
    check_stream(list(client.streaming_response_stateful(USER)))
    assert auth_headers(server) == ["Bearer tok-1", "Bearer tok-2"] and len(client.get_history()) == 2


@within(10)
@pytest.mark.parametrize("client_type", sorted(ROUTES))
def test_503_then_success(server, client_type):
    server.push([status(503, {"Content-Type": "application/json", "Retry-After": "0"}, "length"),
                 send(b'{"error": {"code": 503, "message": "Service unavailable", "status": "UNAVAILABLE"}}')])
    server.push([status(200, SSE), sleep(0.05), send(recording(client_type))])
    client = client_for(server, client_type, Tokens())
    check_stream(list(client.streaming_response([USER])))
    assert auth_headers(server) == ["Bearer tok-1", "Bearer tok-2"]


@within(10)
@pytest.mark.parametrize("client_type", sorted(ROUTES))
def test_a_400_is_not_retried(server, client_type):
    server.push([status(400, {"Content-Type": "application/json"}, "length"),
                 send(b'{"error": {"code": 400, "message": "bad request", "status": "INVALID_ARGUMENT"}}')])
    client = client_for(server, client_type, Tokens())
    with pytest.raises(UpstreamError) as info:
        list(client.streaming_response([USER]))
    assert (info.value.status, info.value.retryable, len(server.requests)) == (400, False, 1)
