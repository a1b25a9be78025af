"""End to end through a local chunked SSE server on 127.0.0.1: the whole stack, no mocks."""

import json
import threading
import time

import pytest
import requests

from agenthub import (AuthenticationError, AutoLLMClient, ConfigError, RateLimitError, StreamProtocolError, UpstreamError,
                      check_stream, collect)
from sse_server import Answer, SSEServer


def sse(*chunks, done=True):
    body = "".join("data: " + json.dumps(c) + "\n\n" for c in chunks)
    return (body + ("data: [DONE]\n\n" if done else "")).encode("utf-8")


def chunk(delta=None, finish=None):
    return {"choices": [{"index": 0, "delta": delta or {}, "finish_reason": finish}]}


HELLO = [chunk({"content": "Hel"}), chunk({"content": "lo"}), chunk({}, "stop"),
         {"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 2}}]
USER = {"role": "user", "content_items": [{"type": "text", "text": "Hi"}]}


@pytest.fixture
def server():
    with SSEServer() as s:
        yield s


def client_for(server, **kwargs):
    kwargs.setdefault("api_key", "sk-local")
    return AutoLLMClient("local-model", client_type="openai-chat", base_url=server.url + "/v1", **kwargs)


def texts(events):
    return "".join(i["text"] for e in events for i in e["content_items"] if i["type"] == "text")


def test_stateless_stream_and_exact_request(server):
    server.answers.append(Answer([sse(*HELLO)]))
    client = client_for(server)
    events = list(client.streaming_response([USER], {"max_tokens": 9, "system_prompt": "S"}))
    check_stream(events)
    assert texts(events) == "Hello"
    assert events[-1]["usage_metadata"] == {"cached_tokens": None, "prompt_tokens": 3, "thoughts_tokens": None,
                                            "response_tokens": 2}
    request = server.requests[0]
    assert request["path"] == "/v1/chat/completions"
    assert request["headers"]["Authorization"] == "Bearer sk-local"
    assert request["body"] == {"model": "local-model", "messages": [{"role": "system", "content": "S"},
                                                                   {"role": "user", "content": "Hi"}],
                               "stream": True, "stream_options": {"include_usage": True}, "max_completion_tokens": 9}


@pytest.mark.parametrize("chunked", [True, False])
def test_each_event_arrives_as_soon_as_its_bytes_do(server, chunked):
    gate = threading.Event()
    body = sse(*HELLO)
    first, rest = body.split(b"\n\n", 1)
    server.answers.append(Answer([first + b"\n\n", rest], chunked=chunked, gate=gate))
    client = client_for(server)
    stream = client.streaming_response([USER])
    started = time.time()
    seen = []
    for event in stream:
        seen.append(event)
        if event["content_items"]:
            break
    assert seen[-1]["content_items"] == [{"type": "text", "text": "Hel"}]
    assert time.time() - started < 2.0  # the server is still holding the rest back
    gate.set()
    seen.extend(stream)
    check_stream(seen)
    assert texts(seen) == "Hello"


@pytest.mark.parametrize("chunked", [True, False])
def test_gzip_encoded_streams_are_decoded(server, chunked):
    import gzip

    server.answers.append(Answer([gzip.compress(sse(*HELLO))], chunked=chunked,
                                 headers={"Content-Type": "text/event-stream", "Content-Encoding": "gzip"}))
    events = list(client_for(server).streaming_response([USER]))
    check_stream(events)
    assert texts(events) == "Hello"


def test_stateful_history_and_failure_leaves_it_unchanged(server):
    client = client_for(server)
    server.answers.append(Answer([sse(*HELLO)]))
    list(client.streaming_response_stateful(USER))
    history = client.get_history()
    assert [m["role"] for m in history] == ["user", "assistant"]
    assert history[1]["content_items"] == [{"type": "text", "text": "Hello"}]
    assert history[1]["finish_reason"] == "stop" and isinstance(history[0]["created_at"], int)
    assert "created_at" not in USER  # the caller's dict is not modified

    # a cut stream: typed error, history exactly as it was
    server.answers.append(Answer([sse(chunk({"content": "partial"}), done=False)]))
    with pytest.raises(StreamProtocolError):
        list(client.streaming_response_stateful(USER))
    assert client.get_history() == history

    # an abandoned stream (early break) leaves history alone too
    server.answers.append(Answer([sse(*HELLO)]))
    for _ in client.streaming_response_stateful(USER):
        break
    assert client.get_history() == history

    # the second turn sends the whole history
    server.answers.append(Answer([sse(*HELLO)]))
    events = list(client.streaming_response_stateful({"role": "user", "content_items": [{"type": "text", "text": "Again"}]}))
    assert collect(events)["content_items"] == [{"type": "text", "text": "Hello"}]
    assert [m["content"] for m in server.requests[-1]["body"]["messages"]] == ["Hi", "Hello", "Again"]
    assert len(client.get_history()) == 4
    client.clear_history()
    assert client.get_history() == []


def test_history_is_committed_before_the_stop_event_is_yielded(server):
    server.answers.append(Answer([sse(*HELLO)]))
    client = client_for(server)
    for event in client.streaming_response_stateful(USER):
        if event["event_type"] == "stop":
            break
    assert len(client.get_history()) == 2


def test_history_is_per_instance(server):
    a, b = client_for(server), client_for(server)
    server.answers.append(Answer([sse(*HELLO)]))
    list(a.streaming_response_stateful(USER))
    assert len(a.get_history()) == 2 and b.get_history() == []


def test_early_break_releases_the_connection(server):
    session = requests.Session()
    adapter = requests.adapters.HTTPAdapter(pool_connections=1, pool_maxsize=1, pool_block=True)
    session.mount("http://", adapter)
    client = client_for(server, session=session, timeout=(2, 5))
    for _ in range(20):
        server.answers.append(Answer([sse(*HELLO)]))
        for _event in client.streaming_response([USER]):
            break
    server.answers.append(Answer([sse(*HELLO)]))
    assert texts(client.streaming_response([USER])) == "Hello"


def test_http_errors_are_typed_with_fields(server):
    server.answers.append(Answer([json.dumps({"error": {"message": "bad key", "type": "invalid_api_key"}}).encode()],
                                 status=401, headers={"Content-Type": "application/json", "x-request-id": "req_1"}))
    with pytest.raises(AuthenticationError) as info:
        list(client_for(server, max_retries=0).streaming_response([USER]))
    error = info.value
    assert (error.status, error.error_type, error.message, error.request_id) == (401, "invalid_api_key", "bad key", "req_1")
    assert not error.retryable and "sk-local" not in str(error)

    server.answers.append(Answer([b'{"error": {"message": "slow", "type": "rate_limit"}}'], status=429,
                                 headers={"Content-Type": "application/json", "Retry-After": "7"}))
    with pytest.raises(RateLimitError) as info:
        list(client_for(server, max_retries=0).streaming_response([USER]))
    assert info.value.retry_after == 7.0 and info.value.retryable


@pytest.mark.parametrize("messages,config,match", [
    ([USER], {"max_tokenz": 1}, "unknown config key"),
    ([USER], {"max_tokens": "10"}, "max_tokens"),
    ([USER], {"temperature": True}, "temperature"),
    ([USER], {"tool_choice": "sometimes"}, "tool_choice"),
    ([USER], {"tool_choice": ["nope"]}, "not in config"),
    ([USER], {"thinking_level": "extreme"}, "thinking_level"),
    ([USER], {"tools": [{"description": "no name"}]}, "name"),
    ([{"role": "system", "content_items": []}], None, "role"),
    ([{"role": "user", "content_items": [{"type": "video", "url": "x"}]}], None, "unknown type"),
    ([{"role": "user", "content_items": [{"type": "tool_result", "text": "r"}]}], None, "tool_call_id"),
    ([{"role": "user", "content_items": [{"type": "tool_result", "text": "r", "tool_call_id": ""}]}], None, "tool_call_id"),
    ([{"role": "user", "content_items": [{"type": "text", "text": 5}]}], None, "'text'"),
    ([{"role": "user", "content_items": [{"type": "inline_data", "data": "b64", "mime_type": "image/png"}]}], None, "bytes"),
    ([{"role": "user", "content_items": "hello"}], None, "content_items"),
    ([{"role": "user", "content_items": [{"type": "tool_call", "name": "f", "arguments": {}, "tool_call_id": "1"}]}],
     None, "assistant"),
    ([], None, "empty"),
    ("hello", None, "list"),
])
def test_bad_input_raises_config_error_before_any_request(server, messages, config, match):
    client = client_for(server)
    with pytest.raises(ConfigError, match=match):
        list(client.streaming_response(messages, config))
    assert server.requests == []


def test_routing_errors_say_how_to_fix():
    with pytest.raises(ConfigError, match="client_type"):
        AutoLLMClient("my-private-model")
    with pytest.raises(ConfigError, match="api_key is required"):
        AutoLLMClient("m", client_type="openai-chat", base_url="https://example.com/v1")
    with pytest.raises(ConfigError, match="unknown client_type"):
        AutoLLMClient("m", client_type="nope", base_url="http://127.0.0.1:1")
    # loopback servers need no key; the alias "openai" is openai-chat
    assert AutoLLMClient("m", client_type="openai", base_url="http://localhost:8000/v1/").client_type == "openai-chat"


def test_a_server_that_ignores_stream_and_answers_one_json_document(server):
    completion = {"id": "c", "object": "chat.completion", "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": "Checking.", "reasoning_content": "think",
        "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{\"a\": 1}"}}]}}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 4, "completion_tokens_details": {"reasoning_tokens": 1}}}
    server.answers.append(Answer([json.dumps(completion, indent=2).encode()], headers={"Content-Type": "application/json"}))
    events = list(client_for(server).streaming_response([USER]))
    check_stream(events)
    message = collect(events)
    assert message["content_items"] == [
        {"type": "thinking", "thinking": "think", "fidelity": {"reasoning_field": "reasoning_content"}},
        {"type": "text", "text": "Checking."},
        {"type": "tool_call", "name": "f", "arguments": {"a": 1}, "tool_call_id": "call_1"},
    ]
    assert message["finish_reason"] == "tool_call"
    assert message["usage_metadata"] == {"cached_tokens": None, "prompt_tokens": 5, "thoughts_tokens": 1,
                                         "response_tokens": 3}


def test_a_gemini_server_answering_a_json_array_instead_of_sse(server):
    chunks = [{"candidates": [{"content": {"role": "model", "parts": [{"text": "Hel"}]}}]},
              {"candidates": [{"content": {"role": "model", "parts": [{"text": "lo"}]}, "finishReason": "STOP"}],
               "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 2}}]
    server.answers.append(Answer([json.dumps(chunks).encode()], headers={"Content-Type": "application/json"}))
    client = AutoLLMClient("gemini-2.5-flash", api_key="k", base_url=server.url)
    events = list(client.streaming_response([USER]))
    check_stream(events)
    assert texts(events) == "Hello" and events[-1]["finish_reason"] == "stop"


def test_a_200_json_error_where_a_stream_was_expected_is_the_error_it_names(server):
    server.answers.append(Answer([b'{"error": {"message": "quota exceeded", "type": "insufficient_quota"}}'],
                                 headers={"Content-Type": "application/json"}))
    with pytest.raises(UpstreamError) as info:
        list(client_for(server, max_retries=0).streaming_response([USER]))
    assert (info.value.error_type, info.value.message) == ("insufficient_quota", "quota exceeded")


def test_a_spent_quota_is_a_rate_limit_error_that_is_not_retried(server):
    server.answers.append(Answer([b'{"error": {"message": "You exceeded your current quota", "type": "insufficient_quota",'
                                  b' "code": "insufficient_quota"}}'], status=429,
                                 headers={"Content-Type": "application/json"}))
    with pytest.raises(RateLimitError) as info:
        list(client_for(server, max_retries=2).streaming_response([USER]))
    assert (info.value.status, info.value.error_type, info.value.retryable) == (429, "insufficient_quota", False)
    assert len(server.requests) == 1


def test_an_html_page_where_a_stream_was_expected_says_so(server):
    page = b"<html><head><style>p{}</style></head><body><p>Please sign in &amp; retry</p></body></html>"
    server.answers.append(Answer([page], headers={"Content-Type": "text/html; charset=utf-8"}))
    with pytest.raises(StreamProtocolError, match=r"got an HTML page .*: Please sign in & retry$"):
        list(client_for(server, max_retries=0).streaming_response([USER]))
    server.answers.append(Answer([b"<html><body><h1>502 Bad Gateway</h1><hr>nginx</body></html>"], status=502,
                                 headers={"Content-Type": "text/html"}))
    with pytest.raises(UpstreamError) as info:
        list(client_for(server, max_retries=0).streaming_response([USER]))
    assert (info.value.status, info.value.message) == (502, "502 Bad Gateway nginx")


def test_tls_failures_are_transport_errors_that_are_not_retried(server):
    from agenthub import TransportError

    client = AutoLLMClient("m", client_type="openai-chat", base_url=server.url.replace("http:", "https:") + "/v1",
                           timeout=(2, 2))
    with pytest.raises(TransportError) as info:
        list(client.streaming_response([USER]))
    assert info.value.retryable is False
    assert str(info.value).endswith("/v1/chat/completions failed: TLS failed: the server did not answer TLS (an "
                                    "http:// server behind an https:// URL?)")
    assert isinstance(info.value.__cause__, requests.exceptions.SSLError)


# -- issue 41 item 1: a history passed again is checked once per new message ----------------------------------


def _history(turns):
    messages = [{"role": "user", "content_items": [{"type": "text", "text": "go"}]}]
    for t in range(turns):
        messages.append({"role": "assistant", "content_items": [
            {"type": "text", "text": "turn {}".format(t)},
            {"type": "tool_call", "name": "add", "arguments": {"a": [1, 2]}, "tool_call_id": "c{}".format(t)}]})
        messages.append({"role": "user", "content_items": [
            {"type": "tool_result", "tool_call_id": "c{}".format(t), "text": "3"}]})
    return messages


def test_a_history_passed_again_is_checked_once_per_new_message(monkeypatch):
    import agenthub.validate as validate

    checked = []
    real = validate.check_message
    monkeypatch.setattr(validate, "check_message", lambda message, where="message": (checked.append(where),
                                                                                         real(message, where))[1])
    client = AutoLLMClient("m", api_key="k", client_type="openai-chat", base_url="http://127.0.0.1:9/v1")
    messages = _history(3)
    client.plan(messages)
    assert len(checked) == 7
    del checked[:]
    messages.append({"role": "assistant", "content_items": [{"type": "text", "text": "done"}]})
    messages.append({"role": "user", "content_items": [{"type": "text", "text": "more"}]})
    client.streaming_response(messages).close()
    assert checked == ["messages[7]", "messages[8]"]
    del checked[:]
    client.plan(list(messages))  # a copy of the list holds the same message objects
    assert checked == []


@pytest.mark.parametrize("change, match", [
    (lambda m: m[1]["content_items"][1]["arguments"].update(a=float("nan")), r"messages\[1\].*NaN"),
    (lambda m: m[1]["content_items"][1]["arguments"]["a"].append({1, 2}), r"messages\[1\].*set"),
    (lambda m: m[2]["content_items"][0].update(text="\ud83d"), r"messages\[2\].*lone surrogate"),
    (lambda m: m[2]["content_items"].append({"type": "thinking", "thinking": "x"}), r"messages\[2\].*assistant"),
    (lambda m: m[4].update(role="system"), r"messages\[4\]\['role'\]"),
    (lambda m: m[1]["content_items"][1].update(arguments=({"a": 1},)), r"messages\[1\].*arguments"),
    (lambda m: m[1]["content_items"][1]["arguments"]["a"].__setitem__(0, __import__("decimal").Decimal(1)),
     r"messages\[1\].*Decimal"),
    (lambda m: m[3]["content_items"][1]["arguments"]["a"].__setitem__(1, __import__("fractions").Fraction(2)),
     r"messages\[3\].*Fraction"),
])
def test_a_message_changed_in_place_after_it_was_checked_is_checked_again(change, match):
    client = AutoLLMClient("m", api_key="k", client_type="openai-chat", base_url="http://127.0.0.1:9/v1")
    messages = _history(2)
    client.plan(messages)
    client.plan(messages)
    change(messages)
    with pytest.raises(ConfigError, match=match):
        client.plan(messages)
    with pytest.raises(ConfigError, match=match):  # and stays refused
        client.streaming_response(messages)


@pytest.mark.parametrize("change, match", [
    (lambda m: m[0]["content_items"][0].update(text=None), r"messages\[0\].*text"),
    (lambda m: m[1]["content_items"].append({"type": "thinking", "thinking": 7}), r"messages\[1\].*thinking"),
    (lambda m: m[1].update(role="system"), r"messages\[1\]\['role'\]"),
])
def test_a_stateful_history_changed_in_place_after_it_was_checked_is_checked_again(server, change, match):
    # the history's dicts are the caller's (set_history keeps them, get_history hands them out): a change made to
    # them afterwards is a ConfigError before sending, as it is for a stateless call's messages
    for source in ("set_history", "get_history"):
        client = client_for(server)
        if source == "set_history":
            history = [{"role": "user", "content_items": [{"type": "text", "text": "Hi"}]},
                       {"role": "assistant", "content_items": [{"type": "text", "text": "Hello"}]}]
            client.set_history(history)
        else:
            server.answers.append(Answer([sse(*HELLO)]))
            list(client.streaming_response_stateful({"role": "user", "content_items": [{"type": "text", "text": "Hi"}]}))
        server.answers.append(Answer([sse(*HELLO)]))
        list(client.streaming_response_stateful({"role": "user", "content_items": [{"type": "text", "text": "1"}]}))
        history = client.get_history()
        sent = len(server.requests)
        change(history)
        with pytest.raises(ConfigError, match=match):
            list(client.streaming_response_stateful({"role": "user", "content_items": [{"type": "text", "text": "2"}]}))
        assert len(server.requests) == sent and client.get_history() == history
        server.answers.clear()


@pytest.mark.parametrize("session", [object(), "http://proxy:3128", {"proxies": {}}])
def test_a_session_that_is_not_one_is_a_config_error_before_anything_is_sent(server, session):
    # was: accepted, then every call a TransportError ("the connection failed"), retried as a network fault
    with pytest.raises(ConfigError, match="session must be a requests.Session"):
        client_for(server, session=session)
    assert server.requests == []


def test_a_client_pickled_after_checking_a_history_checks_afresh():
    import pickle

    client = AutoLLMClient("m", api_key="k", client_type="openai-chat", base_url="http://127.0.0.1:9/v1")
    messages = _history(1)
    client.plan(messages)
    copy = pickle.loads(pickle.dumps(client))
    messages[1]["content_items"][0]["text"] = "\ud83d"
    with pytest.raises(ConfigError, match="lone surrogate"):
        copy.plan(messages)
