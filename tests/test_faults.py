"""Faults injected by a local HTTP server: each ends fast, with the right typed error, history
unchanged and the connection released (docs/reliability.md is the table of these outcomes)."""

import threading
import time
import tracemalloc

import pytest

import agenthub.client as client_module
from agenthub import attempts
from agenthub import (AgentHubError, AuthenticationError, AutoLLMClient, RateLimitError, ServerError,
                      StreamProtocolError, TransportError, UpstreamError, check_stream, collect)
from agenthub.client import ResponseStream, Timeout
from faultserver import (chat_chunk, chat_stream, drop, error_body, hang, pool_free, raw, reset,
                         send, sleep, sse, status, tiny_session, trickle, within)
from faultserver import fast_backoff, server  # noqa: F401  (fixtures)

USER = {"role": "user", "content_items": [{"type": "text", "text": "hi"}]}
SSE = {"Content-Type": "text/event-stream"}




def make(server, session=None, **kwargs):
    kwargs.setdefault("timeout", Timeout(connect=2, read=3))
    return AutoLLMClient("test-model", client_type="openai-chat", base_url=server.url + "/v1",
                         session=session if session is not None else tiny_session(), **kwargs)


def text_of(events):
    return "".join(i["text"] for e in events for i in e["content_items"] if i["type"] == "text")


def run(stream, into):
    for event in stream:
        into.append(event)
    return into


def released(client, server):
    return pool_free(client._session, server.url)


# -- the happy paths the faults are measured against -------------------------------------------


@within(10)
@pytest.mark.parametrize("framing", ["chunked", "close", "length"])
def test_complete_stream_each_framing(server, framing):
    server.push([status(200, SSE, framing), send(chat_stream("Hel", "lo"))])
    client = make(server)
    events = list(client.streaming_response([USER]))
    check_stream(events)
    assert text_of(events) == "Hello"
    assert released(client, server)


@within(10)
def test_stream_is_a_generator_with_abort(server):
    client = make(server)
    stream = client.streaming_response([USER])
    assert isinstance(stream, ResponseStream)
    import collections.abc

    assert isinstance(stream, collections.abc.Generator)
    assert iter(stream) is stream
    first = next(stream)
    assert first["event_type"] == "start"
    stream.close()
    assert released(client, server)
    with client.streaming_response([USER]) as stream:
        assert text_of(list(stream)) == "ok"
    assert not stream.aborted


# -- connection dropped -----------------------------------------------------------------------


@within(10)
def test_dropped_mid_stream_after_content(server):
    server.push([status(200, SSE), send(chat_chunk("partial")), sleep(0.05), drop()])
    client = make(server)
    events = []
    with pytest.raises(TransportError) as info:
        run(client.streaming_response_stateful(USER), events)
    assert info.value.retryable is True
    assert text_of(events) == "partial"  # the caller saw content: not restarted
    assert len(server.requests) == 1
    assert client.get_history() == []
    assert released(client, server)


@within(10)
def test_dropped_close_delimited_after_content_is_a_cut_stream(server):
    server.push([status(200, SSE, "close"), send(chat_chunk("partial")), drop()])
    client = make(server)
    events = []
    with pytest.raises(StreamProtocolError) as info:
        run(client.streaming_response_stateful(USER), events)
    assert info.value.retryable is True and info.value.truncated is True
    assert len(server.requests) == 1
    assert client.get_history() == []
    assert released(client, server)


@within(10)
@pytest.mark.parametrize("framing", ["chunked", "close"])
def test_dropped_before_content_is_retried(server, framing):
    server.push([status(200, SSE, framing), send(b": keep-alive\n\n"), drop()])
    server.push([status(200, SSE), send(chat_stream("second"))])
    client = make(server)
    events = list(client.streaming_response_stateful(USER))
    check_stream(events)
    assert text_of(events) == "second"
    assert len(server.requests) == 2
    assert len(client.get_history()) == 2
    assert released(client, server)


@within(10)
def test_connection_refused_is_retried_then_transport_error():
    import socket

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there now
    client = AutoLLMClient("m", client_type="openai-chat", base_url="http://127.0.0.1:{}/v1".format(port),
                           timeout=(1, 1), max_retries=2)
    started = time.monotonic()
    with pytest.raises(TransportError) as info:
        list(client.streaming_response([USER]))
    assert info.value.retryable is True
    assert time.monotonic() - started < 3


@within(10)
def test_server_closes_without_answering_is_retried(server):
    server.push([drop()])
    client = make(server)
    assert text_of(list(client.streaming_response([USER]))) == "ok"
    assert len(server.requests) == 2


# -- stalls and slow servers ------------------------------------------------------------------


@within(10)
def test_stall_after_content_hits_the_idle_timeout(server):
    server.push([status(200, SSE), send(chat_chunk("thinking...")), hang(5)])
    client = make(server, timeout=Timeout(connect=1, read=0.3))
    events = []
    started = time.monotonic()
    with pytest.raises(TransportError) as info:
        run(client.streaming_response_stateful(USER), events)
    took = time.monotonic() - started
    assert 0.25 < took < 2.0
    assert info.value.timeout is True and info.value.retryable is True
    assert "idle timeout" in str(info.value)
    assert text_of(events) == "thinking..."
    assert len(server.requests) == 1
    assert client.get_history() == []
    assert server.wait_closed(1)
    assert released(client, server)


@within(10)
def test_stall_before_headers_retried_then_timeout(server):
    server.push([sleep(1.0), status(200, SSE), send(chat_stream("late"))])
    server.push([sleep(1.0), status(200, SSE), send(chat_stream("late"))])
    client = make(server, timeout=(1, 0.2), max_retries=1)
    started = time.monotonic()
    with pytest.raises(TransportError) as info:
        list(client.streaming_response([USER]))
    assert info.value.timeout is True
    assert len(server.requests) == 2
    assert time.monotonic() - started < 2.0


@within(10)
def test_stall_before_content_is_retried(server):
    server.push([status(200, SSE), send(b": ping\n\n"), hang(5)])
    server.push([status(200, SSE), send(chat_stream("fresh"))])
    client = make(server, timeout=(1, 0.2))
    assert text_of(list(client.streaming_response([USER]))) == "fresh"
    assert len(server.requests) == 2


@within(10)
def test_slow_trickle_of_bytes_works(server):
    body = chat_stream("slow", " but", " alive")
    server.push([status(200, SSE), trickle(body[:200], every=0.004), send(body[200:])])
    client = make(server, timeout=Timeout(connect=1, read=0.25))
    started = time.monotonic()
    events = list(client.streaming_response([USER]))
    assert time.monotonic() - started > 0.25  # longer than the idle timeout in total: only gaps count
    check_stream(events)
    assert text_of(events) == "slow but alive"


@within(10)
def test_sse_comments_and_pings_count_as_liveness(server):
    pings = [step for _ in range(8) for step in (send(b": ping\n\n"), sleep(0.1))]
    server.push([status(200, SSE)] + pings + [send(chat_stream("after pings"))])
    client = make(server, timeout=Timeout(connect=1, read=0.3))
    assert text_of(list(client.streaming_response([USER]))) == "after pings"


def comments(seconds, every=0.05):
    return [step for _ in range(int(seconds / every)) for step in (send(b": keep-alive\n\n"), sleep(every))]


#: Anthropic's message_start, then only its ``ping`` events (keep-alives, not content)
_PINGS = [send(b'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1","type":"message",'
               b'"role":"assistant","model":"m","content":[],"usage":{"input_tokens":1,"output_tokens":0}}}\n\n')] + [
    step for _ in range(160) for step in (send(b'event: ping\ndata: {"type": "ping"}\n\n'), sleep(0.05))]


@within(15)
@pytest.mark.parametrize("kind", ["comments", "pings"])
def test_a_stream_of_only_comments_ends_at_the_events_timeout(server, kind):
    """Comments restart the read timeout: before Timeout.events, a server that sent only ": keep-alive"
    forever held the default client (no total) forever.  Anthropic's ``ping`` events likewise: each one restarted
    the events clock, and a server that sent message_start and then only pings held the call for ever."""
    server.push([status(200, SSE)] + (comments(8) if kind == "comments" else _PINGS))
    timeout = Timeout(connect=1, read=1, events=0.5)
    client = make(server, timeout=timeout, max_retries=0) if kind == "comments" else AutoLLMClient(
        "test-model", client_type="anthropic", base_url=server.url, session=tiny_session(), timeout=timeout,
        max_retries=0)
    started = time.monotonic()
    with pytest.raises(TransportError) as info:
        list(client.streaming_response([USER]))
    assert time.monotonic() - started < 5.0  # (the server would go on for 8 s)
    error = info.value
    assert (error.timeout, error.retryable, error.deadline, error.aborted) == (True, True, False, False)
    assert str(error) == ("{}: no SSE event for 0.5s, only comments or keep-alive bytes (the events "
                          "timeout: Timeout(events=...))".format(client.client_type))
    assert len(server.requests) == 1
    assert server.wait_closed(1)
    assert released(client, server)


@within(15)
def test_comments_only_before_content_are_retried_and_after_content_raised(server):
    server.push([status(200, SSE)] + comments(8))
    server.push([status(200, SSE), send(chat_stream("fresh"))])
    client = make(server, timeout=Timeout(connect=1, read=1, events=0.5))
    assert text_of(list(client.streaming_response([USER]))) == "fresh"
    assert len(server.requests) == 2
    server.push([status(200, SSE), send(chat_chunk("a"))] + comments(8))
    events = []
    with pytest.raises(TransportError) as info:
        run(client.streaming_response_stateful(USER), events)
    assert info.value.timeout is True and info.value.retryable is True
    assert text_of(events) == "a"
    assert len(server.requests) == 3  # after content: raised, not retried
    assert client.get_history() == []
    assert server.wait_closed(1) and server.wait_closed(2)
    assert released(client, server)


@within(15)
def test_comments_between_events_within_the_events_timeout_do_not_trip_it(server):
    body = chat_stream("one", " two", " three", " four", " five")
    blocks = [block + b"\n\n" for block in body.split(b"\n\n") if block]
    steps = [status(200, SSE)]
    for block in blocks:  # 0.2 s of comments after each event: more than the bound in all, never at once
        steps += [send(block)] + comments(0.2)
    server.push(steps)
    client = make(server, timeout=Timeout(connect=1, read=1, events=1.0), max_retries=0)
    events = list(client.streaming_response([USER]))
    check_stream(events)
    assert text_of(events) == "one two three four five"
    assert len(server.requests) == 1


@within(10)
def test_total_deadline_stops_a_stream_that_never_ends(server):
    forever = [step for _ in range(200) for step in (send(b": ping\n\n"), sleep(0.02))]
    server.push([status(200, SSE), send(chat_chunk("a"))] + forever)
    client = make(server, timeout={"connect": 1, "read": 1, "total": 0.5})
    events = []
    started = time.monotonic()
    with pytest.raises(TransportError) as info:
        run(client.streaming_response_stateful(USER), events)
    assert 0.45 < time.monotonic() - started < 1.5
    assert info.value.deadline is True and info.value.retryable is False
    assert client.get_history() == []
    assert server.wait_closed(1)
    assert released(client, server)


@within(10)
def test_total_deadline_bounds_the_wait_for_headers(server):
    server.push([sleep(2), status(200, SSE), send(chat_stream("x"))])
    client = make(server, timeout={"read": 10, "total": 0.4})
    started = time.monotonic()
    with pytest.raises(TransportError) as info:
        list(client.streaming_response([USER]))
    assert info.value.deadline is True
    assert time.monotonic() - started < 1.2


# -- cut, garbage, invalid UTF-8, huge lines ----------------------------------------------------


@within(10)
def test_body_cut_before_terminal_marker(server):
    server.push([status(200, SSE), send(chat_chunk("no ending"))])  # clean end, no finish_reason, no [DONE]
    client = make(server)
    events = []
    with pytest.raises(StreamProtocolError) as info:
        run(client.streaming_response_stateful(USER), events)
    assert info.value.retryable is True
    assert "terminal marker" in str(info.value)
    assert text_of(events) == "no ending"
    assert len(server.requests) == 1
    assert client.get_history() == []
    assert released(client, server)


@within(10)
@pytest.mark.parametrize("garbage", [
    b"data: {not json\n\n",
    b"data: [1, 2\n\n",
    b"\x00\x01\x02garbage\xfe\n\n",
    b"data: <html>oops</html>\n\n",
    b"data: {\"choices\": [{\"delta\": 7}]}\n\n",
])
def test_garbage_bytes(server, garbage):
    server.push([status(200, SSE), send(chat_chunk("ok so far")), send(garbage), send(chat_stream("more"))])
    client = make(server)
    with pytest.raises(StreamProtocolError):
        list(client.streaming_response_stateful(USER))
    assert len(server.requests) == 1
    assert client.get_history() == []
    assert released(client, server)


@within(10)
def test_garbage_before_content_is_not_retried(server):
    server.push([status(200, SSE), send(b"data: <html>Bad gateway</html>\n\n"), send(chat_stream("never"))])
    client = make(server)
    with pytest.raises(StreamProtocolError) as info:
        list(client.streaming_response([USER]))
    assert info.value.retryable is False
    assert len(server.requests) == 1


@within(10)
def test_invalid_utf8(server):
    bad = b'data: {"choices":[{"index":0,"delta":{"content":"caf\xc3"}}]}\n\n'
    server.push([status(200, SSE), send(chat_chunk("fine")), send(bad), send(chat_stream("x"))])
    client = make(server)
    with pytest.raises(StreamProtocolError) as info:
        list(client.streaming_response_stateful(USER))
    assert "UTF-8" in str(info.value)
    assert client.get_history() == []
    assert released(client, server)


@within(20)
def test_huge_line_is_refused_with_bounded_memory(server):
    piece = b"x" * 65536
    server.push([status(200, SSE), send(chat_chunk("start")), send(b'data: {"choices":"')]
                + [send(piece) for _ in range(128)] + [send(b'"}\n\n'), send(chat_stream("x"))])  # an 8 MiB line
    client = make(server, max_line_bytes=256 * 1024)
    tracemalloc.start()
    try:
        with pytest.raises(StreamProtocolError) as info:
            list(client.streaming_response_stateful(USER))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "exceeds" in str(info.value)
    assert peak < 3 * 1024 * 1024, peak
    assert client.get_history() == []
    assert server.wait_closed(1, timeout=3)
    assert released(client, server)


def test_line_limit_is_configurable_and_validated():
    from agenthub.errors import ConfigError
    from agenthub.sse import DEFAULT_MAX_LINE_BYTES

    client = AutoLLMClient("m", client_type="openai-chat", base_url="http://127.0.0.1:9/v1")
    assert client.max_line_bytes == DEFAULT_MAX_LINE_BYTES
    with pytest.raises(ConfigError):
        AutoLLMClient("m", client_type="openai-chat", base_url="http://127.0.0.1:9/v1", max_line_bytes=0)


# -- HTTP errors ------------------------------------------------------------------------------


@within(10)
def test_429_with_retry_after_seconds_is_honoured(server):
    server.push([status(429, {"Retry-After": "1"}, "length"), send(error_body("slow down", "rate_limit_error"))])
    server.push([status(200, SSE), send(chat_stream("ok"))])
    client = make(server)
    started = time.monotonic()
    assert text_of(list(client.streaming_response([USER]))) == "ok"
    waited = server.requests[1].at - server.requests[0].at
    assert 0.9 < waited < 2.0, waited
    assert time.monotonic() - started < 3


@within(10)
def test_429_with_retry_after_ms_is_honoured(server):
    server.push([status(429, {"retry-after-ms": "300", "Retry-After": "5"}, "length"), send(error_body())])
    server.push([status(200, SSE), send(chat_stream("ok"))])
    client = make(server)
    assert text_of(list(client.streaming_response([USER]))) == "ok"
    waited = server.requests[1].at - server.requests[0].at
    assert 0.28 < waited < 1.5, waited


@within(10)
def test_retry_after_beyond_the_cap_is_raised_not_waited(server):
    server.push([status(429, {"Retry-After": "3600"}, "length"), send(error_body("quota", "rate_limit_error"))])
    client = make(server)
    started = time.monotonic()
    with pytest.raises(RateLimitError) as info:
        list(client.streaming_response([USER]))
    assert info.value.retry_after == 3600 and info.value.status == 429 and info.value.retryable
    assert time.monotonic() - started < 1
    assert len(server.requests) == 1


@within(10)
@pytest.mark.parametrize("code", [408, 409, 500, 502, 503, 504, 529])
def test_retryable_statuses_are_retried_then_raised(server, code):
    for _ in range(3):
        server.push([status(code, {}, "length"), send(error_body("busy", "overloaded_error"))])
    client = make(server)
    with pytest.raises(UpstreamError) as info:
        list(client.streaming_response_stateful(USER))
    assert info.value.status == code and info.value.retryable is True
    assert isinstance(info.value, ServerError) == (code >= 500)
    assert len(server.requests) == 3  # max_retries=2 by default
    assert client.get_history() == []
    assert released(client, server)


@within(10)
def test_retry_then_success(server):
    server.push([status(503, {}, "length"), send(b"Service Unavailable")])
    server.push([status(529, {}, "length"), send(error_body("Overloaded", "overloaded_error"))])
    server.push([status(200, SSE), send(chat_stream("third time"))])
    client = make(server)
    events = list(client.streaming_response_stateful(USER))
    assert text_of(events) == "third time"
    assert len(client.get_history()) == 2


@within(10)
def test_max_retries_zero_disables_and_is_configurable(server):
    server.push([status(500, {}, "length"), send(error_body())])
    client = make(server, max_retries=0)
    with pytest.raises(ServerError):
        list(client.streaming_response([USER]))
    assert len(server.requests) == 1
    for _ in range(5):
        server.push([status(503, {}, "length"), send(error_body())])
    client = make(server, max_retries=4)
    with pytest.raises(ServerError):
        list(client.streaming_response([USER]))
    assert len(server.requests) == 1 + 5


@within(10)
@pytest.mark.parametrize("code,kind", [(400, UpstreamError), (401, AuthenticationError), (403, AuthenticationError),
                                       (404, UpstreamError), (413, UpstreamError), (422, UpstreamError)])
def test_other_4xx_are_never_retried(server, code, kind):
    server.push([status(code, {}, "length"), send(error_body("no", "invalid_request_error"))])
    client = make(server)
    with pytest.raises(kind) as info:
        list(client.streaming_response([USER]))
    assert info.value.status == code and info.value.retryable is False
    assert len(server.requests) == 1


@within(10)
def test_x_should_retry_false_is_obeyed(server):
    server.push([status(500, {"x-should-retry": "false"}, "length"), send(error_body())])
    client = make(server)
    with pytest.raises(ServerError) as info:
        list(client.streaming_response([USER]))
    assert info.value.retryable is False
    assert len(server.requests) == 1


@within(10)
def test_redirects_are_not_followed(server):
    server.push([status(307, {"Location": "http://127.0.0.1:9/elsewhere"}, "length")])
    client = make(server)
    with pytest.raises(UpstreamError) as info:
        list(client.streaming_response([USER]))
    assert info.value.status == 307
    assert len(server.requests) == 1


@within(10)
def test_huge_error_body_is_bounded(server):
    server.push([status(500, {}, "chunked")] + [send(b"E" * 65536) for _ in range(64)])
    client = make(server, max_retries=0)
    with pytest.raises(ServerError) as info:
        list(client.streaming_response([USER]))
    assert len(str(info.value)) < 3000
    assert released(client, server)


# -- errors inside the stream -------------------------------------------------------------------


def overloaded_event():
    return sse({"error": {"message": "Overloaded", "type": "overloaded_error"}})


@within(10)
def test_in_stream_overload_before_content_is_retried(server):
    server.push([status(200, SSE), send(b": ping\n\n"), send(overloaded_event())])
    server.push([status(200, SSE), send(sse({"error": {"message": "slow", "type": "rate_limit_exceeded"}}, "error"))])
    server.push([status(200, SSE), send(chat_stream("finally"))])
    client = make(server)
    events = list(client.streaming_response_stateful(USER))
    assert text_of(events) == "finally"
    assert len(server.requests) == 3
    assert len(client.get_history()) == 2


@within(10)
def test_in_stream_error_after_content_is_raised_not_retried(server):
    server.push([status(200, SSE), send(chat_chunk("half an ans")), send(overloaded_event()), hang(2)])
    client = make(server)
    events = []
    with pytest.raises(ServerError) as info:
        run(client.streaming_response_stateful(USER), events)
    assert info.value.retryable is True and info.value.error_type == "overloaded_error"
    assert text_of(events) == "half an ans"
    assert len(server.requests) == 1
    assert client.get_history() == []
    assert server.wait_closed(1)
    assert released(client, server)


@within(10)
def test_in_stream_non_retryable_error_is_raised_at_once(server):
    server.push([status(200, SSE), send(sse({"error": {"message": "bad", "type": "invalid_request_error"}}))])
    client = make(server)
    with pytest.raises(UpstreamError) as info:
        list(client.streaming_response([USER]))
    assert info.value.retryable is False
    assert len(server.requests) == 1


# -- abort ------------------------------------------------------------------------------------


@within(10)
def test_abort_from_another_thread_unblocks_the_reader(server):
    server.push([status(200, SSE), send(chat_chunk("streaming")), hang(8)])
    client = make(server, timeout=Timeout(connect=2, read=30))
    stream = client.streaming_response_stateful(USER)
    events = [next(stream), next(stream)]
    timer = threading.Timer(0.2, stream.abort)
    started = time.monotonic()
    timer.start()
    with pytest.raises(TransportError) as info:
        run(stream, events)
    took = time.monotonic() - started
    assert took < 1.0, took
    assert info.value.aborted is True and info.value.retryable is False
    assert stream.aborted
    assert client.get_history() == []
    assert server.wait_closed(1)
    assert released(client, server)
    stream.abort()  # again: harmless
    # the client works afterwards, on the same one-connection pool
    assert text_of(list(client.streaming_response_stateful(USER))) == "ok"


@pytest.mark.parametrize("framing", ["chunked", "close"])
@within(10)
def test_abort_while_waiting_for_the_first_byte(server, framing):
    server.push([status(200, SSE, framing), hang(8)])
    client = make(server, timeout=Timeout(connect=2, read=30))
    stream = client.streaming_response([USER])
    threading.Timer(0.2, stream.abort).start()
    started = time.monotonic()
    with pytest.raises(TransportError) as info:
        list(stream)
    assert info.value.aborted
    assert time.monotonic() - started < 1.0
    assert server.wait_closed(1)
    assert released(client, server)


@within(10)
def test_abort_during_retry_backoff(server, monkeypatch):
    server.push([status(503, {"Retry-After": "30"}, "length"), send(error_body())])
    monkeypatch.setattr(client_module, "RETRY_AFTER_CAP", 60.0)
    client = make(server)
    stream = client.streaming_response([USER])
    threading.Timer(0.3, stream.abort).start()
    started = time.monotonic()
    with pytest.raises(TransportError) as info:
        list(stream)
    assert info.value.aborted and isinstance(info.value.__cause__, ServerError)
    assert time.monotonic() - started < 1.0


@within(10)
def test_abort_before_iteration_sends_nothing(server):
    client = make(server)
    stream = client.streaming_response([USER])
    stream.abort()
    with pytest.raises(TransportError):
        next(stream)
    assert server.requests == []


@within(10)
def test_abort_after_the_stream_finished_is_harmless(server):
    client = make(server)
    stream = client.streaming_response_stateful(USER)
    events = list(stream)
    stream.abort()
    assert text_of(events) == "ok" and len(client.get_history()) == 2
    assert text_of(list(client.streaming_response([USER]))) == "ok"


@within(10)
def test_abort_while_the_caller_holds_an_event(server):
    server.push([status(200, SSE), send(chat_chunk("a")), send(chat_chunk("b")), hang(5)])
    client = make(server)
    stream = client.streaming_response([USER])
    next(stream)
    stream.abort()  # same thread, between events
    with pytest.raises(TransportError) as info:
        list(stream)
    assert info.value.aborted
    assert released(client, server)


# -- early breaks and the connection pool ----------------------------------------------------


@within(60)
def test_a_thousand_early_breaks_on_a_pool_of_one(server):
    many = [step for _ in range(50) for step in (send(chat_chunk("tick")), sleep(0.001))]
    server.default = [status(200, SSE)] + many + [send(chat_stream("end"))]
    session = tiny_session()
    client = make(server, session=session)
    started = time.monotonic()
    for i in range(1000):
        for event in client.streaming_response([USER]):
            if event["event_type"] == "delta":
                break
    took = time.monotonic() - started
    assert took < 30, took
    assert pool_free(session, server.url)
    assert len(server.requests) == 1000


@within(10)
def test_break_at_the_stop_event_keeps_the_history(server):
    client = make(server)
    for event in client.streaming_response_stateful(USER):
        if event["event_type"] == "stop":
            break
    history = client.get_history()
    assert len(history) == 2 and collect([]) is not None
    assert history[1]["content_items"][0]["text"] == "ok"


@within(10)
def test_break_midway_leaves_history_and_releases(server):
    server.push([status(200, SSE), send(chat_chunk("one")), send(chat_chunk("two")), hang(5)])
    client = make(server)
    for event in client.streaming_response_stateful(USER):
        if event["event_type"] == "delta":
            break
    assert client.get_history() == []
    assert server.wait_closed(1)
    assert released(client, server)


# -- the error promise on every fault --------------------------------------------------------


@within(30)
@pytest.mark.parametrize("script", [
    [drop()],
    [status(200, SSE), drop()],
    [status(200, SSE), send(b"data: {\n\n")],
    [status(200, SSE, "close"), send(b"\xff\xfe\n\n")],
    [status(200, SSE), send(b"event: error\ndata: not json\n\n")],
    [status(200, SSE), send(b"data: null\n\ndata: []\n\ndata: 3\n\n")],
    [status(200, {"Content-Type": "text/html"}), send(b"<html></html>")],
    [status(599, {}, "length"), send(b"\x00\xff")],
    [status(200, SSE), send(b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":'
                            b'{"arguments":"{"}}]},"finish_reason":"tool_calls"}]}\n\n')],
    [status(200, SSE), send(chat_chunk("a")), reset()],
    [status(200, SSE), send(chat_chunk("a")), raw(b"zz\r\nnot a chunk\r\n")],
    [status(200, SSE, "length"), send(chat_chunk("a")), raw(b"\r\n")],
    [raw(b"HTTP/1.1 200 OK\r\nContent-Length: 5000\r\n\r\n" + chat_chunk("a")), drop()],
    [raw(b"garbage instead of a status line\r\n\r\n")],
    [raw(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffffffffffff\r\n")],
], ids=lambda s: "-".join(step[0] for step in s))
def test_every_fault_raises_only_agenthub_errors(server, script):
    server.default = script
    client = make(server, max_retries=1, timeout=(1, 0.5))
    with pytest.raises(AgentHubError):
        list(client.streaming_response_stateful(USER))
    assert client.get_history() == []
    assert released(client, server)


@within(10)
def test_abort_while_waiting_for_response_headers(server):
    server.push([sleep(3), status(200, SSE), send(chat_stream("late"))])
    client = AutoLLMClient("test-model", client_type="openai-chat", base_url=server.url + "/v1",
                           timeout=Timeout(connect=2, read=30))  # agenthub's own session
    stream = client.streaming_response([USER])
    threading.Timer(0.2, stream.abort).start()
    started = time.monotonic()
    with pytest.raises(TransportError) as info:
        list(stream)
    assert info.value.aborted
    assert time.monotonic() - started < 1.0
    assert released(client, server)
    assert text_of(list(client.streaming_response([USER]))) == "ok"


# -- the same faults on every protocol, with its recorded streams ----------------------------

import importlib  # noqa: E402
import os  # noqa: E402

RECORDINGS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "agenthub", "recordings")
CLIENT_TYPES = {"openai_chat": "openai-chat", "anthropic": "anthropic", "gemini": "gemini",
                "openai_responses": "openai-responses"}
OVERLOADED = {
    "openai_chat": sse({"error": {"message": "Overloaded", "type": "overloaded_error"}}),
    "anthropic": sse({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}, "error"),
    "gemini": sse({"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}}),
    "openai_responses": sse({"type": "error", "code": "server_error", "message": "overloaded", "param": None,
                             "sequence_number": 1}, "error"),
}


def protocol_params():
    out = []
    for protocol in sorted(CLIENT_TYPES):
        path = os.path.join(RECORDINGS, protocol, "weather_answer.sse")
        try:
            importlib.import_module("agenthub.providers." + protocol)
        except ImportError:
            out.append(pytest.param(protocol, None, marks=pytest.mark.skip(reason=protocol + " is not written yet")))
            continue
        if not os.path.exists(path):
            out.append(pytest.param(protocol, None, marks=pytest.mark.skip(reason="no recording for " + protocol)))
            continue
        with open(path, "rb") as handle:
            out.append(pytest.param(protocol, handle.read(), id=protocol))
    return out


def events_of(data):
    """A recording split into whole SSE events (each ending with its blank line)."""
    data = data.replace(b"\r\n", b"\n")
    return [part + b"\n\n" for part in data.split(b"\n\n") if part.strip()]


def content_prefix(protocol, data):
    """The smallest run of whole events after which the parser has produced a delta."""
    from agenthub.sse import iter_events
    from agenthub.stream import drive

    module = importlib.import_module("agenthub.providers." + protocol)
    pieces = events_of(data)
    for k in range(1, len(pieces)):
        prefix = b"".join(pieces[:k])
        deltas = 0
        try:
            for event in drive(module.parse_stream(iter_events([prefix]), "t"), "t"):
                deltas += event["event_type"] == "delta"
        except AgentHubError:
            pass
        if deltas:
            return prefix, b"".join(pieces[k:])
    raise AssertionError("no content in the recording")


def protocol_client(server, protocol, **kwargs):
    kwargs.setdefault("timeout", Timeout(connect=2, read=3))
    base = server.url + ("/v1" if protocol.startswith("openai") else "")
    return AutoLLMClient("test-model", client_type=CLIENT_TYPES[protocol], base_url=base, session=tiny_session(),
                         **kwargs)


@within(10)
@pytest.mark.parametrize("protocol,data", protocol_params())
def test_protocol_recording_streams_end_to_end(server, protocol, data):
    server.push([status(200, SSE), send(data)])
    client = protocol_client(server, protocol)
    events = list(client.streaming_response_stateful(USER))
    check_stream(events)
    assert len(client.get_history()) == 2
    assert released(client, server)


@within(10)
@pytest.mark.parametrize("framing", ["chunked", "close"])
@pytest.mark.parametrize("protocol,data", protocol_params())
def test_protocol_dropped_after_content(server, protocol, data, framing):
    head, _ = content_prefix(protocol, data)
    server.push([status(200, SSE, framing), send(head), drop()])
    client = protocol_client(server, protocol)
    events = []
    with pytest.raises((TransportError, StreamProtocolError)) as info:
        run(client.streaming_response_stateful(USER), events)
    assert info.value.retryable is True
    assert any(e["event_type"] == "delta" for e in events)
    assert len(server.requests) == 1
    assert client.get_history() == []
    assert released(client, server)


@within(10)
@pytest.mark.parametrize("protocol,data", protocol_params())
def test_protocol_overload_before_content_is_retried(server, protocol, data):
    head, _ = content_prefix(protocol, data)
    preamble = b"".join(events_of(head)[:-1])  # e.g. message_start and ping, response.created: no content yet
    server.push([status(200, SSE), send(preamble), send(OVERLOADED[protocol]), hang(2)])
    server.push([status(200, SSE), send(data)])
    client = protocol_client(server, protocol)
    events = list(client.streaming_response_stateful(USER))
    check_stream(events)
    assert len(server.requests) == 2
    assert len(client.get_history()) == 2


@within(10)
@pytest.mark.parametrize("protocol,data", protocol_params())
def test_protocol_overload_after_content_is_raised(server, protocol, data):
    head, _ = content_prefix(protocol, data)
    server.push([status(200, SSE), send(head), send(OVERLOADED[protocol]), hang(2)])
    client = protocol_client(server, protocol)
    events = []
    with pytest.raises(UpstreamError) as info:
        run(client.streaming_response_stateful(USER), events)
    assert info.value.retryable is True
    assert any(e["event_type"] == "delta" for e in events)
    assert len(server.requests) == 1
    assert client.get_history() == []
    assert server.wait_closed(1)
    assert released(client, server)


@within(10)
@pytest.mark.parametrize("protocol,data", protocol_params())
def test_protocol_529_then_success(server, protocol, data):
    server.push([status(529, {}, "length"), send(b'{"type":"error","error":{"type":"overloaded_error",'
                                                 b'"message":"Overloaded"}}')])
    server.push([status(200, SSE), send(data)])
    client = protocol_client(server, protocol)
    check_stream(list(client.streaming_response([USER])))
    assert len(server.requests) == 2


@within(10)
@pytest.mark.parametrize("framing", ["chunked", "length"])
def test_connections_are_reused_after_complete_streams(server, framing):
    server.default = [status(200, SSE, framing), send(chat_stream("again"))]
    client = make(server)
    for _ in range(20):
        assert text_of(list(client.streaming_response([USER]))) == "again"
    assert server.connections == 1


@within(10)
def test_a_body_left_open_after_the_terminal_marker_does_not_delay_the_caller(server):
    server.push([status(200, SSE), send(chat_stream("done")), hang(5)])
    client = make(server)
    started = time.monotonic()
    events = list(client.streaming_response_stateful(USER))
    assert time.monotonic() - started < 1.0
    assert text_of(events) == "done" and len(client.get_history()) == 2
    assert server.wait_closed(1)
    assert released(client, server)


def test_a_stop_reaches_an_unconnected_request_once_it_connects():
    import socket

    from agenthub.transport import Watch as _Control

    class Connecting(object):
        sock = None

    left, right = socket.socketpair()
    try:
        target = Connecting()
        control = _Control()
        control.attach(target)
        control.stop()
        time.sleep(0.05)
        target.sock = left  # the connection completes after the abort
        right.settimeout(2)
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline:
            try:
                left.send(b"x")
            except OSError:
                break  # shut down by the chaser
            time.sleep(0.01)
        else:
            raise AssertionError("the socket was never shut down")
    finally:
        left.close()
        right.close()


@within(20)
@pytest.mark.parametrize("line,peak_mb", [
    (b"data: " + b"x" * 1000 + b"\n", 3),
    # each "data:" line adds nothing but the LF joining it to the next: the event still grows, and is bounded
    (b"data:\n", 6),
], ids=["lines", "empty-lines"])
def test_an_event_of_endless_data_lines_is_refused_with_bounded_memory(server, line, peak_mb):
    piece = line * (64 * 1024 // len(line))
    server.push([status(200, SSE), send(chat_chunk("start"))] + [send(piece) for _ in range(128)])  # 8 MB
    client = make(server, max_line_bytes=256 * 1024)
    tracemalloc.start()
    try:
        with pytest.raises(StreamProtocolError) as info:
            list(client.streaming_response([USER]))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "an SSE event exceeds 262144 bytes" in str(info.value)
    assert peak < peak_mb * 1024 * 1024, peak
    assert released(client, server)


def test_every_transport_error_answers_the_flags():
    error = TransportError("x")
    assert (error.timeout, error.deadline, error.aborted, error.retryable) == (False, False, False, True)
    assert StreamProtocolError("x").truncated is False and StreamProtocolError("x").retryable is False
    assert AgentHubError("x").retryable is False


def test_retry_after_forms():
    import email.utils

    from agenthub.answers import retry_after as _retry_after

    assert _retry_after({"retry-after": "2"}) == 2.0
    assert _retry_after({"retry-after": "1.5"}) == 1.5
    assert _retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert _retry_after({"retry-after": "-3"}) == 0.0
    for junk in ("soon", "nan", "inf", "", "Mon, 99 Foo 2020"):
        assert _retry_after({"retry-after": junk}) is None
    future = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 < _retry_after({"retry-after": future}) <= 31
    assert _retry_after({"retry-after": email.utils.formatdate(time.time() - 30, usegmt=True)}) == 0.0


def test_backoff_is_full_jitter_and_capped(monkeypatch):
    monkeypatch.setattr(client_module, "BACKOFF_BASE", 0.5)
    monkeypatch.setattr(client_module, "BACKOFF_CAP", 8.0)
    for attempt in range(8):
        waits = [attempts.backoff(attempt, None) for _ in range(200)]
        ceiling = min(8.0, 0.5 * 2 ** attempt)
        assert all(0 <= w <= ceiling for w in waits)
        assert max(waits) > ceiling * 0.7 and min(waits) < ceiling * 0.3  # spread over the whole range
    assert attempts.backoff(0, 3.0) == 3.0
    assert attempts.backoff(0, client_module.RETRY_AFTER_CAP + 1) is None


@within(10)
def test_a_json_error_answered_with_200_instead_of_a_stream(server):
    server.push([status(200, {"Content-Type": "application/json"}, "length"),
                 send(b'{"error": {"message": "Overloaded", "type": "overloaded_error"}}')])
    server.push([status(200, {"Content-Type": "application/json; charset=utf-8"}, "length"),
                 send(b'{"error": {"message": "model not found", "type": "invalid_request_error"}}')])
    client = make(server)
    with pytest.raises(UpstreamError) as info:
        list(client.streaming_response([USER]))
    assert "model not found" in str(info.value) and info.value.retryable is False
    assert len(server.requests) == 2  # the overload was retried, the invalid request was not
    # a document that is no answer at all: read as a (whole) stream that never finished
    server.push([status(200, {"Content-Type": "application/json"}, "length"), send(b'{"id": "x", "choices": []}')])
    with pytest.raises(StreamProtocolError) as info:
        list(make(server, max_retries=0).streaming_response([USER]))
    assert "terminal marker" in str(info.value)
    assert released(client, server)


@within(10)
def test_google_retry_info_is_honoured(server):
    body = (b'{"error": {"code": 429, "message": "Resource exhausted", "status": "RESOURCE_EXHAUSTED", "details": '
            b'[{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "0.4s"}]}}')
    server.push([status(429, {}, "length"), send(body)])
    server.push([status(200, SSE), send(chat_stream("ok"))])
    client = make(server)
    assert text_of(list(client.streaming_response([USER]))) == "ok"
    assert 0.38 < server.requests[1].at - server.requests[0].at < 1.5
    from agenthub.errors import upstream_error

    assert upstream_error("gemini", {"error": {"details": [{"@type": "x.RetryInfo", "retryDelay": "nan s"}]}}) \
        .retry_after is None


# -- a connect that hangs, a name that does not resolve: abort and the deadline end them -----------


@pytest.fixture
def unanswered():
    """A 127.0.0.1 port whose connects hang: a listener of backlog 0 with its queue full (the kernel drops
    the SYNs of every further connect, which then waits for its connect timeout)."""
    import socket

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    port = listener.getsockname()[1]
    fillers = []
    try:
        for _ in range(16):
            filler = socket.socket()
            fillers.append(filler)
            filler.settimeout(0.2)
            try:
                filler.connect(("127.0.0.1", port))
            except socket.timeout:
                break  # the queue is full: this one hangs too
        else:
            pytest.skip("connects to a full listen queue do not hang here")
        yield port
    finally:
        for filler in fillers:
            filler.close()
        listener.close()


def hanging_client(port, **timeout):
    timeout.setdefault("connect", 30)
    return AutoLLMClient("test-model", client_type="openai-chat", base_url="http://127.0.0.1:{}/v1".format(port),
                         api_key="sk-test", timeout=Timeout(read=30, **timeout), max_retries=0)


@within(15)
@pytest.mark.parametrize("how", ["abort", "run-abort", "deadline"])
def test_a_connect_that_hangs_ends_at_abort_or_the_deadline(unanswered, how):
    """abort() (the stream's, a run's) and the total deadline waited for the whole connect timeout (30 s here):
    the socket being connected had no owner anyone could shut down.  The call ends within a second."""
    client = hanging_client(unanswered, total=0.5 if how == "deadline" else None)
    elapsed, ended = ended_after(client, how)
    assert elapsed < 1.5, elapsed  # (0.5 s to the abort or the deadline, then within a second)
    if how == "run-abort":
        assert ended.stop == "aborted"
    elif how == "abort":
        assert (ended.aborted, ended.deadline, ended.retryable) == (True, False, False)
    else:
        assert (ended.aborted, ended.deadline, ended.retryable) == (False, True, False)


def ended_after(client, how):
    """(seconds, how it ended) of a call of ``client`` (a stream, or a run with ``how`` "run-abort": its
    RunResult, else the TransportError the stream raised), aborted 0.5 s on when ``how`` ends with "abort"."""
    stream = client.run([USER], tools=[]) if how == "run-abort" else client.streaming_response([USER])
    timer = threading.Timer(0.5, stream.abort if how.endswith("abort") else (lambda: None))
    timer.start()
    started = time.monotonic()
    try:
        if how == "run-abort":
            result = stream.result()
            return time.monotonic() - started, result
        with pytest.raises(TransportError) as info:
            list(stream)
        return time.monotonic() - started, info.value
    finally:
        timer.cancel()
        timer.join()


@pytest.fixture
def silent_resolver(monkeypatch):
    """socket.getaddrinfo that never answers for the name ``llm.test`` (until the test ends): a stub resolver
    that hangs.  Yields the list of the names it was asked for."""
    import socket

    real = socket.getaddrinfo
    asked = []
    release = threading.Event()

    def getaddrinfo(host, *args, **kwargs):
        if host == "llm.test":
            asked.append(host)
            release.wait(60)
            raise socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    try:
        yield asked
    finally:
        release.set()
        for thread in threading.enumerate():
            if thread.name == "agenthub-resolve":
                thread.join(5)


@within(15)
@pytest.mark.parametrize("how", ["connect-timeout", "deadline", "no-connect-limit-deadline", "abort", "run-abort"])
def test_a_host_name_that_does_not_resolve_is_bounded(silent_resolver, how):
    """requests resolves the host name with no timeout at all: a resolver that did not answer held the call
    past its connect timeout, its deadline and abort().  Now each ends it within a second, and the calls
    meanwhile share the one lookup under way (no thread per call).  With no connect limit at all
    (``connect=None``) the call's deadline still ends the lookup's wait."""
    timeout = {"connect": 0.5} if how == "connect-timeout" else {"connect": 30}
    if how == "no-connect-limit-deadline":
        timeout["connect"] = None
    if how.endswith("deadline"):
        timeout["total"] = 0.5
    client = AutoLLMClient("test-model", client_type="openai-chat", base_url="http://llm.test/v1", api_key="sk-test",
                           timeout=Timeout(read=30, **timeout), max_retries=0)
    for attempt in range(2):
        elapsed, error = ended_after(client, how)
        assert elapsed < 1.5, elapsed
        if how == "run-abort":
            assert error.stop == "aborted"
            continue
        flags = (error.aborted, error.deadline, error.timeout, error.retryable)
        if how == "connect-timeout":
            assert flags == (False, False, True, True)
            assert str(error) == ("openai-chat: POST http://llm.test/v1/chat/completions failed: no connection "
                                  "within 0.5s (connect timeout)")
        elif how.endswith("deadline"):
            assert flags[:2] == (False, True) and error.retryable is False
        else:
            assert flags[:2] == (True, False) and error.retryable is False
    assert silent_resolver == ["llm.test"]  # one lookup, shared by both calls


@pytest.fixture
def hanging_resolver(monkeypatch):
    """socket.getaddrinfo that answers no name ending in ``.hang.test`` until the test releases it (``release[name]
    .set()``: then the name does not resolve).  Yields (the names asked, in order; release: name -> Event)."""
    import collections
    import socket

    real = socket.getaddrinfo
    asked = []
    release = collections.defaultdict(threading.Event)

    def getaddrinfo(host, *args, **kwargs):
        if host.endswith(".hang.test"):
            asked.append(host)
            release[host].wait(60)
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    try:
        yield asked, release
    finally:
        for name in list(asked):
            release[name].set()
        for thread in threading.enumerate():
            if thread.name == "agenthub-resolve":
                thread.join(5)
        assert [t.name for t in threading.enumerate() if t.name == "agenthub-resolve"] == []


def _resolving():
    return [thread for thread in threading.enumerate() if thread.name == "agenthub-resolve"]


def _hanging_client(name, connect):
    return AutoLLMClient("test-model", client_type="openai-chat", base_url="http://{}/v1".format(name),
                         api_key="sk-test", timeout=Timeout(connect=connect, read=30), max_retries=0)


@within(30)
def test_lookups_that_never_answer_keep_a_few_threads_not_one_per_name(hanging_resolver):
    """A resolver that never answers kept one daemon lookup thread per host name for ever: a process calling many
    hosts gathered threads without end.  Now at most MAX_LOOKUPS run; a lookup of another name waits for one to end
    within its own connect timeout (a connect timeout, typed, when none does), and starts once one has."""
    from agenthub import transport

    asked, release = hanging_resolver
    names = ["h{}.hang.test".format(number) for number in range(transport.MAX_LOOKUPS + 4)]
    for name in names:
        with pytest.raises(TransportError) as info:
            list(_hanging_client(name, 0.2).streaming_response([USER]))
        error = info.value
        assert (error.timeout, error.aborted, error.deadline, error.retryable) == (True, False, False, True)
        assert str(error) == ("openai-chat: POST http://{}/v1/chat/completions failed: no connection within 0.2s "
                              "(connect timeout)".format(name))
    assert asked == names[:transport.MAX_LOOKUPS]  # (the names past them never reached the resolver)
    assert len(_resolving()) == transport.MAX_LOOKUPS
    # one more name waits for a thread; the first name's lookup ends (it does not resolve): the new one starts
    ended = {}

    def late():
        try:
            list(_hanging_client("late.hang.test", 10).streaming_response([USER]))
        except TransportError as exc:
            ended["error"] = exc

    caller = threading.Thread(target=late)
    caller.start()
    try:
        time.sleep(0.3)
        assert asked == names[:transport.MAX_LOOKUPS]
        release[names[0]].set()
        deadline = time.monotonic() + 10
        while "late.hang.test" not in asked and time.monotonic() < deadline:
            time.sleep(0.01)
        assert asked[-1] == "late.hang.test"
        assert len(_resolving()) == transport.MAX_LOOKUPS
        release["late.hang.test"].set()
    finally:
        release["late.hang.test"].set()
        caller.join(15)
    assert (ended["error"].timeout, ended["error"].retryable) == (False, True)
    assert "did not resolve (DNS)" in str(ended["error"])


@within(15)
def test_a_lookup_thread_that_cannot_start_fails_that_call_alone(server, monkeypatch):
    """A thread for a name's lookup that cannot be started (RuntimeError: a process at its thread limit) left the
    lookup in the table of those under way for good: every later call of that name joined it, waited its whole
    connect timeout and failed ('no connection within 2.0s'), however many threads were free by then.  Now that
    call alone fails, with a TransportError saying why, and the next one looks the name up."""
    import socket

    import agenthub.transport as transport_module

    real_getaddrinfo = socket.getaddrinfo

    def getaddrinfo(host, *args, **kwargs):  # (llm.test is the fault server, found without any network)
        return real_getaddrinfo("127.0.0.1" if host == "llm.test" else host, *args, **kwargs)

    refused = []

    class Thread(threading.Thread):
        def start(self):
            if self.name == "agenthub-resolve" and not refused:
                refused.append(self.name)
                raise RuntimeError("can't start new thread")
            return super(Thread, self).start()

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    monkeypatch.setattr(transport_module.threading, "Thread", Thread)
    server.push([status(200, SSE, "length"), send(chat_stream("Hel", "lo"))])
    client = AutoLLMClient("test-model", client_type="openai-chat", base_url="http://llm.test:{}/v1".format(server.port),
                           api_key="sk-test", timeout=Timeout(connect=2, read=3), max_retries=0)
    with pytest.raises(TransportError) as info:
        list(client.streaming_response([USER]))
    assert str(info.value) == (
        "openai-chat: POST http://llm.test:{}/v1/chat/completions failed: the connection failed: no thread could be "
        "started for the host name lookup (can't start new thread)".format(server.port))
    assert (info.value.timeout, info.value.aborted) == (False, False)
    assert refused == ["agenthub-resolve"]
    assert transport_module._LOOKUPS == {}
    assert text_of(client.streaming_response([USER])) == "Hello"


@within(15)
@pytest.mark.parametrize("how", ["abort", "deadline"])
def test_a_stop_just_as_the_connect_is_done_sends_nothing(server, monkeypatch, how):
    """A stop (abort, the deadline) that came once the socket was connected but before urllib3 held it found no
    socket to shut down and said it was done: the request went out and the call waited for the answer's head
    (the 5 s the server takes here; a read timeout at worst) before the stop took effect.  Now the connected
    socket is shut down: nothing is sent, and the call ends at once."""
    import agenthub.transport as transport_module

    server.push([sleep(5), status(200, SSE, "length"), send(chat_stream("late"))])
    client = make(server, session=transport_module.new_session(), max_retries=0)
    real = transport_module._connect

    def connect(conn, connecting):  # (the stop comes between the connect and the socket's hand-over)
        sock = real(conn, connecting)
        conn._agenthub_watch.stop(how)
        return sock

    monkeypatch.setattr(transport_module, "_connect", connect)
    with pytest.raises(TransportError) as info:
        list(client.streaming_response([USER]))
    assert (info.value.aborted, info.value.deadline) == ((True, False) if how == "abort" else (False, True))
    assert server.requests == []


@within(15)
@pytest.mark.parametrize("how", ["abort", "deadline"])
def test_a_tls_handshake_that_hangs_ends_at_abort_or_the_deadline(how):
    """A server that takes the TCP connection and never answers the TLS ClientHello: abort() waited for the whole
    connect timeout (20 s here; None: for ever).  The handshake runs on a socket urllib3 does not hold yet, and the
    plain one it holds is detached by then: nothing could be shut down.  Now the call ends within a second.  (The
    deadline case passed before too: a deadline caps the connect timeout; it is here as the abort's twin.)"""
    import socket

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)  # (never accepted: the kernel completes the TCP handshake, nobody answers TLS)
    try:
        client = AutoLLMClient("test-model", client_type="openai-chat",
                               base_url="https://127.0.0.1:{}/v1".format(listener.getsockname()[1]), api_key="sk-test",
                               timeout=Timeout(connect=20, read=30, total=0.5 if how == "deadline" else None),
                               max_retries=0)
        stream = client.streaming_response([USER])
        timer = threading.Timer(0.5, stream.abort if how == "abort" else (lambda: None))
        timer.start()
        started = time.monotonic()
        try:
            with pytest.raises(TransportError) as info:
                list(stream)
            elapsed = time.monotonic() - started
        finally:
            timer.cancel()
            timer.join()
    finally:
        listener.close()
    assert elapsed < 1.5, elapsed  # (0.5 s to the abort or the deadline, then within a second)
    error = info.value
    assert (error.aborted, error.deadline, error.retryable) == (how == "abort", how == "deadline", False)
