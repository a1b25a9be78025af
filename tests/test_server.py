"""agenthub serve: the WSGI app on the built-in server, client_type="agenthub", round trips, every error."""

import glob
import json
import logging
import os
import re
import subprocess
import sys
import threading
import time

import pytest
import requests

from agenthub import AutoLLMClient, check_stream
from agenthub.errors import (AgentHubError, AuthenticationError, ConfigError, EmptyResponseError, RateLimitError,
                             ServerError, StreamProtocolError, TransportError, UpstreamError, error_from_json,
                             error_to_json)
from agenthub.apps.server import KEEPALIVE, load_config, make_app, serve
from conftest import ROOT, strip_ids, wire_streams
from server_support import Builtin, Route, Upstream

KEY = "server-key-0123456789"
UPSTREAM_KEY = "sk-upstream-SECRET-abcdef123456"
MESSAGES = [{"role": "user", "content_items": [{"type": "text", "text": "What is the weather in Paris?"}]}]
MODULES = {"openai_chat": "openai-chat", "openai_responses": "openai-responses", "anthropic": "anthropic",
           "gemini": "gemini"}


def base_url(url, module, route=None):
    route = route or module
    return url + "/" + route + ("/v1" if module.startswith("openai") else "")


def model_rows(url, **extra):
    return [dict({"id": module, "model": "m", "client_type": protocol, "base_url": base_url(url, module),
                  "api_key": UPSTREAM_KEY, "max_retries": 0}, **extra) for module, protocol in MODULES.items()]


def direct(url, module, route=None, **kwargs):
    kwargs.setdefault("max_retries", 0)
    return AutoLLMClient("m", client_type=MODULES[module], base_url=base_url(url, module, route), api_key=UPSTREAM_KEY,
                         **kwargs)


def via(server_url, model_id, **kwargs):
    kwargs.setdefault("max_retries", 0)
    kwargs.setdefault("api_key", KEY)
    return AutoLLMClient(model_id, client_type="agenthub", base_url=server_url, **kwargs)


def outcome(client, messages=MESSAGES, config=None):
    events = []
    try:
        for event in client.streaming_response(messages, config):
            events.append(event)
    except AgentHubError as exc:
        return events, exc
    return events, None


_GENERATED_ID = re.compile(r"call_[0-9a-f]{12}_(\d+)")


def same_ids(events):
    """Events without created_at, tool-call ids made up by the parser (one random prefix per stream) unified."""
    return json.loads(_GENERATED_ID.sub(r"call_generated_\1", json.dumps(strip_ids(events), default=repr)))


def assert_same_error(got, want):
    """The same error, but for ``url``: the URL that answered is the server's through it (the upstream's
    address is never sent to the server's callers)."""
    assert type(got) is type(want), (got, want)
    assert got.args == want.args
    assert getattr(got, "url", None) != getattr(want, "url", None) or getattr(want, "url", None) is None
    if getattr(want, "url", None):
        assert str(got).replace(got.url, "URL") == str(want).replace(want.url, "URL")
    else:
        assert str(got) == str(want)
    for name, value in want._fields.items():
        if name == "url":
            continue
        assert got._fields[name] == json.loads(json.dumps(value)), name
        assert getattr(got, name) == getattr(want, name) or name == "usage_metadata"
    assert got.retryable == want.retryable


@pytest.fixture(scope="module")
def stack():
    """One upstream, one app (a model row per protocol) on the built-in server."""
    with Upstream() as up:
        app = make_app({"models": model_rows(up.url) + [
            {"id": "held", "model": "m", "client_type": "openai-chat", "base_url": up.url + "/held/v1",
             "max_retries": 0},
            {"id": "slow", "model": "m", "client_type": "openai-chat", "base_url": up.url + "/slow/v1",
             "max_retries": 0, "default_config": {"max_tokens": 77, "temperature": 0.5}},
            {"id": "bedrock", "model": BEDROCK_MODEL, "client_type": "bedrock", "base_url": up.url + "/bedrock",
             "api_key": UPSTREAM_KEY, "max_retries": 0},
        ], "api_keys": [KEY, "another-key-abcdef"], "keepalive_seconds": 0.5, "max_body_bytes": 200000,
            "max_concurrent_streams": 4})
        with Builtin(app) as server:
            yield up, app, server


def post(url, body, key=KEY, **kwargs):
    headers = {"Content-Type": "application/json"}
    if key:
        headers["Authorization"] = "Bearer " + key
    headers.update(kwargs.pop("headers", {}))
    data = body if isinstance(body, bytes) else json.dumps(body).encode("utf-8")
    return requests.post(url + "/v1/stream", data=data, headers=headers, timeout=10, **kwargs)


# -- recorded streams of every protocol ---------------------------------------------------------------


#: fixtures of the cloud endpoints, by the wire format they carry (Azure OpenAI speaks Chat Completions or
#: Responses, Vertex AI speaks Gemini or Anthropic Messages): the server is indifferent to where a stream came from
CLOUD_FIXTURES = {("azure", "chat_"): "openai_chat", ("azure", "responses_"): "openai_responses",
                  ("vertex", "claude_"): "anthropic", ("vertex", "gemini_"): "gemini"}


def _recordings():
    out = []
    for module in MODULES:
        paths = sorted(glob.glob(os.path.join(ROOT, "agenthub", "recordings", module, "*.sse")))
        paths += sorted(glob.glob(os.path.join(ROOT, "tests", "fixtures", module, "*.sse")))
        for (folder, prefix), wire in CLOUD_FIXTURES.items():
            if wire == module:
                paths += sorted(glob.glob(os.path.join(ROOT, "tests", "fixtures", folder, prefix + "*.sse")))
        for path in paths:
            with open(path, "rb") as handle:
                out.append(pytest.param(module, handle.read(), id="{}/{}".format(
                    os.path.basename(os.path.dirname(path)), os.path.basename(path))))
    return out


def _wire():
    out = []
    for module in MODULES:
        for name, data, _ in wire_streams(module):
            out.append(pytest.param(module, data, id="wire/{}/{}".format(module, name)))
    return out or [pytest.param(None, None, marks=pytest.mark.skip(reason="../shared/wire is absent"))]


def _round_trip(stack, module, data):
    up, app, server = stack
    up.routes[module] = Route(data, parts=3)
    want_events, want_error = outcome(direct(up.url, module))
    got_events, got_error = outcome(via(server.url, module))
    assert same_ids(got_events) == same_ids(want_events)
    assert [type(i.get("data")) for e in got_events for i in e["content_items"]] == [
        type(i.get("data")) for e in want_events for i in e["content_items"]]  # bytes stay bytes
    if want_error is None:
        assert got_error is None, got_error
    else:
        assert_same_error(got_error, want_error)
    return want_events, want_error


@pytest.mark.parametrize("module,data", _recordings())
def test_round_trip_equals_the_direct_client(stack, module, data):
    _round_trip(stack, module, data)


@pytest.mark.parametrize("module,data", _wire())
def test_round_trip_on_real_wire_streams(stack, module, data):
    _round_trip(stack, module, data)


BEDROCK_MODEL = "anthropic.claude-sonnet-4-6-v1:0"


def test_round_trip_of_a_bedrock_event_stream(stack):
    """Bedrock's binary event stream (reasoning with a signature, text, a tool call) through the server."""
    import bedrock_frames as bf

    up, app, server = stack
    frames = [bf.message_start(), bf.reasoning_delta(0, text="The user wants "), bf.reasoning_delta(0, text="weather."),
              bf.reasoning_delta(0, signature="c2lnbmF0dXJl"), bf.block_stop(0), bf.text_delta("Checking.", 1),
              bf.block_stop(1), bf.tool_start("tooluse_1", "get_weather", 2), bf.tool_delta('{"city": ', 2),
              bf.tool_delta('"Paris"}', 2), bf.block_stop(2), bf.message_stop("tool_use"),
              bf.metadata(input_tokens=20, output_tokens=9, cache_read=4)]
    up.routes["bedrock"] = Route(b"".join(frames), headers={"Content-Type": "application/vnd.amazon.eventstream"})
    want, want_error = outcome(AutoLLMClient(BEDROCK_MODEL, client_type="bedrock", base_url=up.url + "/bedrock",
                                             api_key=UPSTREAM_KEY, max_retries=0))
    got, got_error = outcome(via(server.url, "bedrock"))
    assert want_error is None and got_error is None
    assert same_ids(got) == same_ids(want)
    assert _items(want, "tool_call") and any(i.get("fidelity") for i in _items(want, "thinking"))
    up.routes["bedrock"] = Route(b"".join([bf.message_start(), bf.text_delta("Part"),
                                           bf.exception("throttlingException", "Too many tokens")]),
                                 headers={"Content-Type": "application/vnd.amazon.eventstream"})
    want, want_error = outcome(AutoLLMClient(BEDROCK_MODEL, client_type="bedrock", base_url=up.url + "/bedrock",
                                             api_key=UPSTREAM_KEY, max_retries=0))
    got, got_error = outcome(via(server.url, "bedrock"))
    assert same_ids(got) == same_ids(want) and want
    assert isinstance(want_error, RateLimitError)
    assert_same_error(got_error, want_error)


def _items(events, kind):
    return [i for e in events for i in e["content_items"] if i["type"] == kind]


def test_round_trips_cover_tool_calls_signatures_bytes_and_mid_stream_errors(stack):
    """The fixtures above hold what the issue names: checked here so a fixture change cannot hollow them out."""
    fixtures = os.path.join(ROOT, "tests", "fixtures")

    def run(module, name):
        with open(os.path.join(fixtures, module, name), "rb") as handle:
            return _round_trip(stack, module, handle.read())

    events, error = run("anthropic", "thinking_text_tool_use.sse")
    assert error is None and _items(events, "tool_call")
    assert any(i.get("fidelity", {}).get("signature") for i in _items(events, "thinking"))
    events, error = run("gemini", "image_output.sse")
    assert error is None and any(isinstance(i["data"], bytes) and i["data"] for i in _items(events, "inline_data"))
    events, error = run("anthropic", "rate_limit_mid_stream.sse")
    assert events and isinstance(error, RateLimitError)  # after the first event: an SSE error event
    events, error = run("anthropic", "thinking_only.sse")
    assert events and isinstance(error, EmptyResponseError)


def test_the_request_upstream_is_the_one_a_direct_client_sends(stack):
    """Messages with bytes and tool results, config with tools and a thinking level: the same upstream body."""
    up, app, server = stack
    with open(os.path.join(ROOT, "agenthub", "recordings", "anthropic", "weather_answer.sse"), "rb") as handle:
        up.routes["anthropic"] = Route(handle.read())
    messages = [
        {"role": "user", "content_items": [{"type": "text", "text": "Weather here?"},
                                           {"type": "inline_data", "data": b"\x89PNG\r\n\x00\xff", "mime_type":
                                            "image/png"}]},
        {"role": "assistant", "content_items": [
            {"type": "thinking", "thinking": "look it up", "fidelity": {"signature": "c2ln"}},
            {"type": "tool_call", "name": "get_weather", "arguments": {"city": "Paris"}, "tool_call_id": "toolu_1"}]},
        {"role": "user", "content_items": [{"type": "tool_result", "text": "18 °C", "tool_call_id": "toolu_1"}]},
    ]
    config = {"max_tokens": 300, "thinking_level": "low", "tools": [
        {"name": "get_weather", "description": "Weather.", "parameters": {"type": "object", "properties": {}}}]}
    del up.requests[:]
    want, _ = outcome(direct(up.url, "anthropic"), messages, config)
    got, _ = outcome(via(server.url, "anthropic"), messages, config)
    assert strip_ids(got) == strip_ids(want) and want
    assert len(up.requests) == 2
    assert up.requests[0]["body"] == up.requests[1]["body"]
    assert up.requests[1]["headers"]["x-api-key"] == UPSTREAM_KEY  # the row's key goes upstream, not the server's
    assert KEY not in json.dumps(up.requests[1]["headers"])


@pytest.mark.parametrize("arguments", [{"__bytes__": "AAAA"}, {"__bytes__": ["x"]}, {"a": {"__bytes__": "aGk="}},
                                       {"__bytes__": {"__bytes__": "AAAA"}}])
def test_arguments_spelling_the_bytes_marker_cross_the_server_as_they_were(stack, arguments):
    """A model's tool-call arguments that spell the server's own bytes marker ({"__bytes__": "AAAA"}) reached the
    caller as bytes (b"\\x00\\x00\\x00") and went upstream as bytes when sent back: they travel escaped
    ({"__bytes__": ["AAAA"]}), both ways, and arrive as the model wrote them."""
    up, app, server = stack
    with open(os.path.join(ROOT, "agenthub", "recordings", "openai_chat", "weather_tool_call.sse"), "rb") as handle:
        data = handle.read()
    text = json.dumps(arguments)
    data = data.replace(b'"arguments": "{\\"city\\""', b'"arguments": ' + json.dumps(text[:5]).encode()).replace(
        b'"arguments": ": \\"Paris\\"}"', b'"arguments": ' + json.dumps(text[5:]).encode())
    want, _ = _round_trip(stack, "openai_chat", data)
    assert _items(want, "tool_call")[0]["arguments"] == arguments
    messages = MESSAGES + [
        {"role": "assistant", "content_items": [
            {"type": "tool_call", "name": "get_weather", "arguments": arguments, "tool_call_id": "call_1"}]},
        {"role": "user", "content_items": [{"type": "tool_result", "text": "18 C", "tool_call_id": "call_1"}]}]
    del up.requests[:]
    want, _ = outcome(direct(up.url, "openai_chat"), messages)
    got, _ = outcome(via(server.url, "openai_chat"), messages)
    assert same_ids(got) == same_ids(want) and want
    assert len(up.requests) == 2 and up.requests[0]["body"] == up.requests[1]["body"]
    assert json.loads(up.requests[1]["body"]["messages"][1]["tool_calls"][0]["function"]["arguments"]) == arguments


def test_default_config_lies_under_the_request_config(stack):
    up, app, server = stack
    up.routes["slow"] = Route(_recording("openai_chat", "weather_answer.sse"))
    del up.requests[:]
    outcome(via(server.url, "slow"), config={"max_tokens": 12})
    body = up.requests[-1]["body"]
    assert body["max_completion_tokens"] == 12 and body["temperature"] == 0.5


def _head():
    """The first two events of a Chat Completions answer: a start and one text delta, no end."""
    return b"\n\n".join(_recording("openai_chat", "weather_answer.sse").split(b"\n\n")[:2]) + b"\n\n"


def _recording(module, name):
    with open(os.path.join(ROOT, "agenthub", "recordings", module, name), "rb") as handle:
        return handle.read()


# -- the wire ---------------------------------------------------------------------------------------------


def test_models_endpoint(stack):
    up, app, server = stack
    answer = requests.get(server.url + "/v1/models", headers={"Authorization": "Bearer " + KEY}, timeout=5)
    assert answer.status_code == 200 and answer.headers["Content-Type"] == "application/json"
    assert answer.json() == {"object": "list", "data": [
        {"id": i, "object": "model"} for i in ("openai_chat", "openai_responses", "anthropic", "gemini", "held",
                                               "slow", "bedrock")]}
    assert "Access-Control-Allow-Origin" not in answer.headers  # no CORS


def test_the_stream_on_the_wire(stack):
    up, app, server = stack
    up.routes["openai_chat"] = Route(_recording("openai_chat", "weather_tool_call.sse"))
    want, _ = outcome(direct(up.url, "openai_chat"))
    answer = post(server.url, {"model": "openai_chat", "messages": MESSAGES})
    assert answer.status_code == 200
    assert answer.headers["Content-Type"] == "text/event-stream; charset=utf-8"
    assert answer.headers["Transfer-Encoding"] == "chunked"  # each event readable as it comes, by any client
    assert "Access-Control-Allow-Origin" not in answer.headers
    frames = answer.content.split(b"\n\n")
    assert frames[-2:] == [b"data: [DONE]", b""]
    events = [json.loads(f[len(b"data: "):]) for f in frames[:-2]]
    assert strip_ids(events) == strip_ids(want)
    assert all(type(e["created_at"]) is int for e in events)


def test_bytes_travel_as_base64_objects(stack):
    up, app, server = stack
    with open(os.path.join(ROOT, "tests", "fixtures", "gemini", "image_output.sse"), "rb") as handle:
        up.routes["gemini"] = Route(handle.read())
    want, _ = outcome(direct(up.url, "gemini"))
    answer = post(server.url, {"model": "gemini", "messages": MESSAGES})
    data = [json.loads(f[6:]) for f in answer.content.split(b"\n\n") if f.startswith(b"data: {")]
    media = [i for e in data for i in e["content_items"] if i["type"] == "inline_data"]
    want_media = _items(want, "inline_data")
    assert media and [m["data"] for m in media] == [{"__bytes__": __import__("base64").b64encode(w["data"]).decode()}
                                                    for w in want_media]


def test_keep_alive_comments_while_the_upstream_is_silent(stack):
    up = stack[0]
    body = _recording("openai_chat", "weather_answer.sse")
    up.routes["quiet"] = Route(body, parts=2, pause=0.25, delay=0.2)
    app = make_app({"models": [{"id": "quiet", "model": "m", "client_type": "openai-chat",
                                "base_url": up.url + "/quiet/v1", "max_retries": 0}], "keepalive_seconds": 0.1})
    want, _ = outcome(direct(up.url, "openai_chat", route="quiet"))
    with Builtin(app) as server:
        answer = post(server.url, {"model": "quiet", "messages": MESSAGES}, stream=True)
        raw = b"".join(answer.iter_content(None))
        assert answer.status_code == 200
        assert raw.startswith(KEEPALIVE)  # silent before the first byte: the 200 and a keep-alive went out
        first_data = raw.index(b"data: {")
        assert raw.count(KEEPALIVE, first_data) >= 2  # silent in the middle too
        got, error = outcome(via(server.url, "quiet"))  # the client takes the comments in its stride
    assert error is None and strip_ids(got) == strip_ids(want)


def test_an_upstream_error_before_the_first_event_keeps_its_status_and_fields(stack):
    up, app, server = stack
    error_body = json.dumps({"error": {"message": "Rate limit reached", "type": "requests",
                                       "code": "rate_limit_exceeded"}}).encode()
    up.routes["openai_chat"] = Route(error_body, status=429, headers={
        "Content-Type": "application/json", "retry-after-ms": "1500", "x-request-id": "req_abc"})
    _, want = outcome(direct(up.url, "openai_chat"))
    answer = post(server.url, {"model": "openai_chat", "messages": MESSAGES})
    assert answer.status_code == 429 and answer.headers["Retry-After"] == "2"
    assert answer.json() == {"error": {"type": "RateLimitError", "message": "Rate limit reached",
                                       "client": "openai-chat", "status": 429, "error_type": "requests",
                                       "retry_after": 1.5, "request_id": "req_abc", "retryable": True,
                                       "code": "rate_limit_exceeded"}}
    _, got = outcome(via(server.url, "openai_chat"))
    assert isinstance(want, RateLimitError)
    assert_same_error(got, want)


def test_upstream_keys_never_reach_a_response_or_a_log(stack, caplog):
    up, app, server = stack
    echo = json.dumps({"error": {"message": "Incorrect API key provided: " + UPSTREAM_KEY,
                                 "type": "invalid_request_error"}}).encode()
    up.routes["openai_chat"] = Route(echo, status=401, headers={"Content-Type": "application/json"})
    with caplog.at_level(logging.DEBUG, logger="agenthub"):
        answer = post(server.url, {"model": "openai_chat", "messages": MESSAGES})
        _, error = outcome(via(server.url, "openai_chat"))
    assert answer.status_code == 401 and answer.json()["error"]["type"] == "AuthenticationError"
    assert UPSTREAM_KEY not in answer.text and "***" in answer.text
    assert isinstance(error, AuthenticationError) and UPSTREAM_KEY not in str(error._fields)
    assert UPSTREAM_KEY not in caplog.text and KEY not in caplog.text


def test_an_error_after_the_first_event_is_an_error_event(stack):
    up, app, server = stack
    with open(os.path.join(ROOT, "tests", "fixtures", "anthropic", "rate_limit_mid_stream.sse"), "rb") as handle:
        up.routes["anthropic"] = Route(handle.read())
    _, want = outcome(direct(up.url, "anthropic"))
    answer = post(server.url, {"model": "anthropic", "messages": MESSAGES})
    assert answer.status_code == 200
    frames = answer.content.split(b"\n\n")
    assert frames[-1] == b"" and frames[-2].startswith(b"event: error\ndata: ")
    assert b"[DONE]" not in answer.content
    payload = json.loads(frames[-2].split(b"data: ", 1)[1])
    assert payload == json.loads(json.dumps(error_to_json(want)))
    assert payload["error"]["type"] == "RateLimitError"


# -- every refusal ----------------------------------------------------------------------------------------


def test_a_malformed_message_is_a_400_config_error(stack):
    up, app, server = stack
    answer = post(server.url, {"model": "openai_chat", "messages": [{"role": "user"}]})
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert error["type"] == "ConfigError" and error["retryable"] is False
    assert isinstance(error_from_json(answer.json()), ConfigError)
    for body in (b"{not json", b"[]", {"model": "openai_chat", "messages": MESSAGES, "extra": 1},
                 {"model": 3, "messages": MESSAGES}, {"model": "openai_chat", "messages": MESSAGES, "config": []},
                 {"model": "openai_chat", "messages": MESSAGES, "config": {"trace_id": "x"}},
                 {"model": "openai_chat", "messages": MESSAGES, "config": {"max_tokens": -1}},
                 {"model": "openai_chat", "messages": [{"role": "user", "content_items": [
                     {"type": "inline_data", "mime_type": "image/png", "data": {"__bytes__": "@@"}}]}]}):
        answer = post(server.url, body)
        assert answer.status_code == 400, body
        assert answer.json()["error"]["type"] == "ConfigError", body


def test_callers_cannot_rewrite_the_upstream_request(stack):
    """extra_body / extra_headers from a caller would reach past the model table on the server's key; a caller's
    mcp_servers would replace a row's own (the operator's provider connecting where the caller says)."""
    up, app, server = stack
    seen = len(up.requests)
    for key, value in (("extra_body", {"model": "gpt-expensive"}), ("extra_headers", {"X-Upstream": "x"}),
                       ("mcp_servers", [{"url": "https://attacker.example/mcp", "name": "docs"}])):
        answer = post(server.url, {"model": "openai_chat", "messages": MESSAGES, "config": {key: value}})
        assert answer.status_code == 400
        assert answer.json() == {"error": {
            "type": "UnsupportedParameterError", "client": "agenthub", "parameter": key, "retryable": False,
            "message": "agenthub: config[{!r}] is not accepted by the server (set it in the model's "
                       "default_config)".format(key)}}
    assert len(up.requests) == seen  # nothing reached the upstream


def test_a_missing_or_wrong_key_is_a_401(stack):
    up, app, server = stack
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "Basic " + KEY},
                    {"Authorization": "Bearer " + KEY + "x"}):
        for answer in (requests.get(server.url + "/v1/models", headers=headers, timeout=5),
                       requests.post(server.url + "/v1/stream", data=b"{}", headers=headers, timeout=5),
                       requests.get(server.url + "/v1/nothing", headers=headers, timeout=5)):
            assert answer.status_code == 401, headers
            assert answer.headers["WWW-Authenticate"].startswith("Bearer")
            assert answer.json()["error"]["type"] == "AuthenticationError"
            assert answer.json()["error"]["status"] == 401
    ok = requests.get(server.url + "/v1/models", headers={"Authorization": "Bearer another-key-abcdef"}, timeout=5)
    assert ok.status_code == 200
    client = AutoLLMClient("openai_chat", client_type="agenthub", base_url=server.url, api_key="wrong-key-123")
    _, error = outcome(client)
    assert isinstance(error, AuthenticationError) and error.status == 401 and error.retryable is False


def test_an_unknown_model_or_path_is_a_404(stack):
    up, app, server = stack
    answer = post(server.url, {"model": "nope", "messages": MESSAGES})
    assert answer.status_code == 404 and answer.json()["error"]["type"] == "ConfigError"
    assert "nope" in answer.json()["error"]["message"]
    _, error = outcome(via(server.url, "nope"))
    assert type(error) is ConfigError and "unknown model 'nope'" in str(error)
    assert requests.get(server.url + "/elsewhere", timeout=5).status_code == 404
    assert requests.get(server.url + "/v1/other", headers={"Authorization": "Bearer " + KEY},
                        timeout=5).status_code == 404
    wrong = requests.get(server.url + "/v1/stream", headers={"Authorization": "Bearer " + KEY}, timeout=5)
    assert wrong.status_code == 405 and wrong.headers["Allow"] == "POST"


def test_a_body_over_the_limit_is_a_413(stack):
    up, app, server = stack
    big = {"model": "openai_chat", "messages": [{"role": "user", "content_items": [
        {"type": "text", "text": "x" * 250000}]}]}
    answer = post(server.url, big)
    assert answer.status_code == 413 and answer.json()["error"]["type"] == "ConfigError"
    _, error = outcome(via(server.url, "openai_chat"), big["messages"])
    assert type(error) is ConfigError and "limit of 200000 bytes" in str(error)


def test_streams_beyond_the_limit_are_a_503_and_a_closed_stream_frees_its_slot(stack):
    up, app, server = stack
    up.routes["held"] = Route(_head(),
                              hold=True)
    closed_before = up.closed
    streams = [via(server.url, "held").streaming_response(MESSAGES) for _ in range(4)]
    for stream in streams:
        assert next(stream)["event_type"] == "start"
    assert app.open_streams == 4
    answer = post(server.url, {"model": "held", "messages": MESSAGES})
    assert answer.status_code == 503 and answer.headers["Retry-After"] == "1"
    assert answer.json()["error"] == {"type": "ServerError", "message": "the server is at its limit of 4 concurrent "
                                      "streams", "client": "agenthub", "status": 503, "error_type": "overloaded",
                                      "retry_after": 1.0, "request_id": None, "retryable": True, "code": None}
    _, error = outcome(via(server.url, "held"))
    assert isinstance(error, ServerError) and error.status == 503 and error.retryable
    for stream in streams:
        stream.close()
    assert up.wait_closed(closed_before + 4), "the upstream connections stayed open"
    deadline = time.monotonic() + 5
    while app.open_streams and time.monotonic() < deadline:
        time.sleep(0.02)
    assert app.open_streams == 0
    up.routes["held"] = Route(_recording("openai_chat", "weather_answer.sse"))
    events, error = outcome(via(server.url, "held"))
    assert error is None and events[-1]["event_type"] == "stop"


def test_a_host_not_allowed_gets_no_answer(stack):
    up, app, server = stack
    port = server.url.rsplit(":", 1)[1]
    for host in ("evil.example", "evil.example:" + port, "localhost.evil.example", "127.0.0.2:" + port):
        for path in ("/", "/v1/models"):
            answer = requests.get(server.url + path, headers={"Host": host, "Authorization": "Bearer " + KEY},
                                  timeout=5)
            assert answer.status_code == 400, host
            assert answer.json()["error"]["type"] == "ConfigError" and "allowed_hosts" in answer.text
    for host in ("localhost:" + port, "LOCALHOST", "127.0.0.1", "[::1]:" + port):
        answer = requests.get(server.url + "/v1/models", headers={"Host": host, "Authorization": "Bearer " + KEY},
                              timeout=5)
        assert answer.status_code == 200, host


def test_allowed_hosts_from_the_config():
    app = make_app({"models": [{"id": "a", "model": "m", "client_type": "openai-chat",
                                "base_url": "http://127.0.0.1:9/v1"}], "allowed_hosts": ["api.example.com"]})
    seen = []

    def call(host):
        environ = {"REQUEST_METHOD": "GET", "PATH_INFO": "/v1/models", "wsgi.input": None}
        if host is not None:
            environ["HTTP_HOST"] = host
        body = b"".join(app(environ, lambda status, headers: seen.append(status)))
        return seen[-1], body

    assert call("api.example.com:443")[0] == "200 OK"
    assert call("localhost")[0].startswith("400")
    assert call(None)[0].startswith("400")
    anyone = make_app({"models": [{"id": "a", "model": "m", "client_type": "openai-chat",
                                   "base_url": "http://127.0.0.1:9/v1"}], "allowed_hosts": ["*"]})
    anyone({"REQUEST_METHOD": "GET", "PATH_INFO": "/v1/models", "HTTP_HOST": "x.y"}, lambda s, h: seen.append(s))
    assert seen[-1] == "200 OK"


def test_the_page_is_open_with_a_csp(stack):
    up, app, server = stack
    answer = requests.get(server.url + "/", timeout=5)
    assert answer.status_code == 200
    assert answer.headers["Content-Type"] == "text/html; charset=utf-8"
    assert "default-src" in answer.headers["Content-Security-Policy"]
    assert answer.headers["X-Content-Type-Options"] == "nosniff"
    try:
        from agenthub import playground
    except ImportError:
        return
    assert answer.headers["Content-Security-Policy"] == playground.CSP
    page = playground.PAGE if isinstance(playground.PAGE, bytes) else playground.PAGE.encode("utf-8")
    assert answer.content == page


# -- the client's own promises ---------------------------------------------------------------------------


def test_stateful_history_through_the_server(stack):
    up, app, server = stack
    up.routes["anthropic"] = Route(_recording("anthropic", "weather_tool_call.sse"))
    mine, theirs = via(server.url, "anthropic"), direct(up.url, "anthropic")
    for client in (mine, theirs):
        for _ in client.streaming_response_stateful(MESSAGES[0]):
            pass
    assert len(mine.get_history()) == 2
    assert strip_ids(mine.get_history()) == strip_ids(theirs.get_history())
    up.routes["anthropic"] = Route(b"event: message_start\ndata: {\"type\": \"message_start\"\n\n")  # broken
    _, error = outcome(mine)
    with pytest.raises(AgentHubError):
        list(mine.streaming_response_stateful(MESSAGES[0]))
    assert len(mine.get_history()) == 2  # a failed turn leaves history as it was


def test_retries_happen_before_the_first_event_only(stack):
    up, app, server = stack
    overloaded = Route(json.dumps({"error": {"message": "busy", "type": "server_error"}}).encode(), status=503,
                       headers={"Content-Type": "application/json", "retry-after": "0"})
    up.routes["openai_chat"] = [overloaded, Route(_recording("openai_chat", "weather_answer.sse"))]
    del up.requests[:]
    events, error = outcome(via(server.url, "openai_chat", max_retries=2))
    assert error is None and events[-1]["finish_reason"] == "stop"
    assert len(up.requests) == 2  # the server's row has max_retries 0: the client asked again
    with open(os.path.join(ROOT, "tests", "fixtures", "anthropic", "rate_limit_mid_stream.sse"), "rb") as handle:
        up.routes["anthropic"] = Route(handle.read())
    del up.requests[:]
    events, error = outcome(via(server.url, "anthropic", max_retries=2))
    assert events and isinstance(error, RateLimitError) and error.retryable
    assert len(up.requests) == 1  # after the first event: raised, never restarted


def test_abort_and_close_release_the_upstream(stack):
    up, app, server = stack
    first = _head()
    up.routes["held"] = Route(first, hold=True)
    closed = up.closed
    stream = via(server.url, "held").streaming_response(MESSAGES)
    assert next(stream)["event_type"] == "start"
    threading.Timer(0.2, stream.abort).start()
    with pytest.raises(TransportError) as info:
        for _ in stream:
            pass
    assert info.value.aborted is True and info.value.retryable is False
    assert up.wait_closed(closed + 1), "abort left the upstream connection open"
    stream = via(server.url, "held").streaming_response(MESSAGES)
    next(stream)
    stream.close()
    assert up.wait_closed(closed + 2), "close left the upstream connection open"


def test_a_client_that_disconnects_frees_the_upstream(stack):
    up, app, server = stack
    first = _head()
    up.routes["held"] = Route(first, hold=True)
    closed = up.closed
    answer = post(server.url, {"model": "held", "messages": MESSAGES}, stream=True)
    assert next(answer.iter_content(None)).startswith(b"data: {")
    answer.close()
    assert up.wait_closed(closed + 1), "the upstream connection stayed open after the client left"


def test_several_streams_at_once(stack):
    up, app, server = stack
    up.routes["gemini"] = Route(_recording("gemini", "weather_tool_call.sse"), parts=4, pause=0.05)
    want, _ = outcome(direct(up.url, "gemini"))
    results = [None] * 4
    client = via(server.url, "gemini")

    def run(n):
        results[n] = outcome(client)

    threads = [threading.Thread(target=run, args=(n,)) for n in range(4)]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(20)
    assert all(r is not None and r[1] is None and same_ids(r[0]) == same_ids(want) for r in results)
    assert time.monotonic() - started < 0.15 * 4 * 4  # concurrent, not one after the other


# -- configuration ---------------------------------------------------------------------------------------


def test_dollar_cells_come_from_the_environment(tmp_path):
    config = {"models": [{"id": "a", "model": "m", "client_type": "openai-chat", "base_url": "$UP_URL",
                          "api_key": "$UP_KEY", "default_config": {"system_prompt": "$$5 a month"}}],
              "api_keys": ["$SERVER_KEY"]}
    with pytest.raises(ConfigError, match=r"\$UP_URL is not set"):
        load_config(config, environ={"UP_KEY": "k" * 10, "SERVER_KEY": "s" * 10})
    with pytest.raises(ConfigError, match=r"models\[0\]\.api_key: the environment variable \$UP_KEY is not set"):
        load_config(config, environ={"UP_URL": "https://x.example/v1", "SERVER_KEY": "s" * 10})
    settings = load_config(config, environ={"UP_URL": "https://x.example/v1", "UP_KEY": "k" * 10,
                                            "SERVER_KEY": "s" * 10})
    assert settings["models"][0]["api_key"] == "k" * 10 and settings["api_keys"] == ["s" * 10]
    assert settings["models"][0]["default_config"] == {"system_prompt": "$5 a month"}
    path = tmp_path / "server.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    app = make_app(str(path), environ={"UP_URL": "https://x.example/v1", "UP_KEY": "k" * 10, "SERVER_KEY": "s" * 10})
    assert sorted(app.models) == ["a"] and "k" * 10 not in repr(app)


@pytest.mark.parametrize("config,message", [
    ({}, "models must be a non-empty list"),
    ({"models": [{"id": "a", "model": "m", "client_type": "openai-chat"}], "port": 1}, "unknown server config key"),
    ({"models": [{"id": "a", "model": "m", "colour": 1}]}, "unknown key"),
    ({"models": [{"id": "a", "model": "m", "client_type": "openai-chat", "base_url": "http://127.0.0.1:1/v1"}] * 2},
     "used twice"),
    ({"models": [{"id": "a", "model": "m", "client_type": "nope"}]}, "unknown client_type"),
    ({"models": [{"id": "a", "model": "m", "client_type": "openai-chat", "base_url": "https://remote.example/v1"}]},
     "api_key is required"),
    ({"models": [{"id": "a", "model": "m", "client_type": "openai-chat", "base_url": "http://127.0.0.1:1/v1",
                  "default_config": {"colour": 1}}]}, "unknown config key"),
    ({"models": [{"id": "a", "model": "m", "client_type": "openai-chat", "base_url": "http://127.0.0.1:1/v1"}],
      "max_body_bytes": 0}, "max_body_bytes must be a positive int"),
    ({"models": [{"id": "a", "model": "m", "client_type": "openai-chat", "base_url": "http://127.0.0.1:1/v1"}],
      "api_keys": [""]}, "api_keys must be a list"),
])
def test_bad_configs_are_config_errors(config, message):
    with pytest.raises(ConfigError, match=message):
        make_app(config, environ={})


def test_a_missing_config_file_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="cannot read the server config"):
        make_app(str(tmp_path / "nope.json"))
    (tmp_path / "bad.json").write_text("{", encoding="utf-8")
    with pytest.raises(ConfigError, match="is not JSON"):
        make_app(str(tmp_path / "bad.json"))


def test_a_non_loopback_host_needs_api_keys():
    config = {"models": [{"id": "a", "model": "m", "client_type": "openai-chat", "base_url": "http://127.0.0.1:1/v1"}]}
    with pytest.raises(ConfigError, match="without api_keys"):
        serve(config, "0.0.0.0", 0)
    server, url = serve(dict(config, api_keys=["k" * 12]), "0.0.0.0", 0)
    server.server_close()
    assert url.startswith("http://0.0.0.0:")


def test_error_json_round_trip_for_every_class():
    from agenthub import errors

    samples = [errors.ConfigError("bad"), errors.UnsupportedParameterError("no", client="x", parameter="tools"),
               errors.UnsupportedOperationError("no", client="x", operation="embed"),
               errors.TransportError("cut", client="x", timeout=True, retryable=True),
               errors.UpstreamError("u", client="x", status=418), errors.AuthenticationError("a", status=403),
               errors.RateLimitError("r", status=429, retry_after=3.5, request_id="q"),
               errors.ServerError("s", status=529, error_type="overloaded_error"),
               errors.StreamError("s"), errors.StreamProtocolError("p", client="x", truncated=True, retryable=True),
               errors.ToolCallArgumentParseError("t", client="x", tool_name="f", tool_call_id="c",
                                                 raw_arguments_length=3, raw_arguments_preview="{x"),
               errors.EmptyResponseError("e", client="x", finish_reason="stop", usage_metadata={"prompt_tokens": 1}),
               errors.AgentHubError("base")]
    for error in samples:
        rebuilt = error_from_json(json.loads(json.dumps(error_to_json(error))))
        assert_same_error(rebuilt, error)
    assert error_to_json(KeyError("secret"))["error"] == {"type": "AgentHubError", "message": "internal server error",
                                                          "retryable": False}
    assert error_from_json({"error": {"type": "KeyError", "message": "x"}}) is None
    assert error_from_json({"error": "x"}) is None


# -- the command line --------------------------------------------------------------------------------------


def test_agenthub_serve_prints_its_url_first(tmp_path):
    with Upstream() as up:
        up.routes["chat"] = Route(_recording("openai_chat", "weather_answer.sse"))
        path = tmp_path / "server.json"
        path.write_text(json.dumps({"models": [{"id": "fast", "model": "m", "client_type": "openai-chat",
                                                "base_url": up.url + "/chat/v1"}]}), encoding="utf-8")
        env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
        process = subprocess.Popen([sys.executable, "-m", "agenthub", "serve", "--config", str(path), "--port", "0"],
                                   env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            line = process.stdout.readline().decode().strip()
            assert line.startswith("http://127.0.0.1:") and int(line.rsplit(":", 1)[1]) > 0
            assert requests.get(line + "/v1/models", timeout=5).json()["data"] == [{"id": "fast", "object": "model"}]
            client = AutoLLMClient("fast", client_type="agenthub", base_url=line)
            events = list(client.streaming_response(MESSAGES))
            assert events[-1]["finish_reason"] == "stop"
        finally:
            process.terminate()
            process.wait(10)
            process.stdout.close()
            process.stderr.close()
    refused = subprocess.run([sys.executable, "-m", "agenthub", "serve", "--config", str(path), "--host", "0.0.0.0",
                              "--port", "0"], env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             timeout=60)
    assert refused.returncode == 1 and b"ConfigError" in refused.stderr and b"without api_keys" in refused.stderr
    assert refused.stdout == b""


# -- the frames, pure ------------------------------------------------------------------------------------


FRAME_EVENTS = [
    {"role": "assistant", "event_type": "start", "content_items": [], "usage_metadata": None, "finish_reason": None,
     "created_at": 1},
    {"role": "assistant", "event_type": "delta", "content_items": [{"type": "text", "text": " café 東京 \ud83d\"\\\n"}],
     "usage_metadata": None, "finish_reason": None, "created_at": 2},
    {"role": "assistant", "event_type": "delta", "content_items": [
        {"type": "partial_tool_call", "name": "f", "arguments": "{\"a\": \"é", "tool_call_id": "c1"}],
     "usage_metadata": None, "finish_reason": None, "created_at": 3},
    {"role": "assistant", "event_type": "delta", "content_items": [
        {"type": "partial_tool_call", "name": "", "arguments": "\"}", "tool_call_id": ""}],
     "usage_metadata": None, "finish_reason": None, "created_at": 3},
    {"role": "assistant", "event_type": "delta", "content_items": [
        {"type": "tool_call", "name": "f", "arguments": {"a": "é"}, "tool_call_id": "c1"}],
     "usage_metadata": None, "finish_reason": None, "created_at": 3},
    {"role": "assistant", "event_type": "delta", "content_items": [
        {"type": "thinking", "thinking": "", "fidelity": {"signature": "c2ln", "n": [1, 2.5, None, True]}}],
     "usage_metadata": None, "finish_reason": None, "created_at": 4},
    {"role": "assistant", "event_type": "delta", "content_items": [
        {"type": "inline_data", "data": b"\x00\xff\x10", "mime_type": "image/png"}],
     "usage_metadata": None, "finish_reason": None, "created_at": 5},
    {"role": "assistant", "event_type": "delta", "content_items": [{"type": "text", "text": "x", "fidelity": {}}],
     "usage_metadata": None, "finish_reason": None, "created_at": 6},
    {"role": "assistant", "event_type": "stop", "content_items": [], "finish_reason": "stop", "created_at": 7,
     "usage_metadata": {"cached_tokens": None, "prompt_tokens": 3, "thoughts_tokens": 0, "response_tokens": 9}},
]


def test_frames_are_the_events_as_json():
    import base64

    from agenthub.apps.server import _encode_event
    from agenthub.tracer import to_jsonable

    for event in FRAME_EVENTS:
        frame = _encode_event(event)
        assert frame.startswith(b"data: {") and frame.endswith(b"}\n\n") and frame.count(b"\n") == 2
        assert json.loads(frame[6:].decode("ascii")) == to_jsonable(event)
    assert b'{"__bytes__":"' + base64.b64encode(b"\x00\xff\x10") + b'"}' in _encode_event(FRAME_EVENTS[6])


def test_parse_stream_restores_the_items_and_the_end():
    from agenthub.providers.agenthub_server import parse_stream
    from agenthub.apps.server import _encode_event
    from agenthub.sse import iter_events
    from agenthub.stream import StreamEnd

    body = b"".join(_encode_event(e) for e in FRAME_EVENTS) + b"data: [DONE]\n\n"
    parts = list(parse_stream(iter_events([body])))
    assert parts[:-1] == [e["content_items"][0] for e in FRAME_EVENTS[1:-1]]
    end = parts[-1]
    assert isinstance(end, StreamEnd) and end.finish_reason == "stop" and end.replayable
    assert end.usage == FRAME_EVENTS[-1]["usage_metadata"]
    # the same events in another key order (another server's JSON writer): the general path
    reordered = b"".join(b"data: " + json.dumps(dict(reversed(list(to_jsonable_(e).items())))).encode() + b"\n\n"
                         for e in FRAME_EVENTS)
    assert list(parse_stream(iter_events([reordered])))[:-1] == parts[:-1]
    with pytest.raises(ValueError):  # a broken delta frame is not taken for an item
        list(parse_stream(iter_events([b'data: {"role":"assistant","event_type":"delta","content_items":[{"type"\n\n'])))
    with pytest.raises(StreamProtocolError, match="names no agenthub error"):
        list(parse_stream(iter_events([b'event: error\ndata: {"error": {"type": "Nope"}}\n\n'])))
    with pytest.raises(RateLimitError) as info:
        list(parse_stream(iter_events([b'event: error\ndata: {"error": {"type": "RateLimitError", "message": "m", '
                                       b'"status": 429, "retry_after": 2.5, "retryable": true}}\n\n'])))
    assert (info.value.status, info.value.retry_after, info.value.retryable, str(info.value)) == (
        429, 2.5, True, "m (status=429)")


def to_jsonable_(event):
    from agenthub.tracer import to_jsonable

    return to_jsonable(event)


def test_framing_reads_what_the_server_writes_and_any_other_sse():
    from agenthub.providers.agenthub_server import framing
    from agenthub.sse import SSEEvent, iter_events

    body = (b'data: {"a":1}\n\n: keep-alive\n\ndata: {"b":"\xc3\xa9"}\n\nevent: error\ndata: {"error":{}}\n\n'
            b'data: x\ndata: y\n\nid: 7\ndata: z\n\ndata: last')
    want = [e.data if e.event == "message" else (e.event, e.data) for e in iter_events([body])]
    assert want == ['{"a":1}', '{"b":"é"}', ("error", '{"error":{}}'), "x\ny", "z", "last"]

    def read(chunks):
        return [f if isinstance(f, str) else (f.data if f.event == "message" else (f.event, f.data))
                for f in framing(iter(chunks))]

    for cut in range(len(body) + 1):  # every split of the body in two chunks
        assert read([body[:cut], body[cut:]]) == want, cut
    crlf = body.replace(b"\n", b"\r\n")
    for cut in (0, 5, 17, 40, len(crlf)):
        assert read([crlf[:cut], crlf[cut:]]) == want, cut
    assert all(isinstance(f, SSEEvent) for f in framing(iter([b"data: a\r\n\r\n"])))
    with pytest.raises(StreamProtocolError, match="more than 1024 bytes"):
        list(framing(iter([b"data: " + b"x" * 2000]), 1024))
    with pytest.raises(UnicodeDecodeError):
        list(framing(iter([b"data: \xff\n\n"])))


def test_client_type_agenthub_routes_by_its_preset():
    from agenthub.registry import resolve

    kind, url, key, _ = resolve("fast", "agenthub", environ={"AGENTHUB_SERVER_KEY": "sk-server-0123456789"})
    assert (kind, url, key) == ("agenthub", "http://127.0.0.1:8787", "sk-server-0123456789")
    kind, url, key, _ = resolve("fast", "agenthub", environ={"AGENTHUB_SERVER_URL": "https://hub.example.com",
                                                             "AGENTHUB_SERVER_KEY": "sk-server-0123456789"})
    assert (kind, url, key) == ("agenthub", "https://hub.example.com", "sk-server-0123456789")
    with pytest.raises(ConfigError, match="api_key is required"):  # the variable's key stays with its own endpoint
        resolve("fast", "agenthub", base_url="https://elsewhere.example.com",
                environ={"AGENTHUB_SERVER_KEY": "sk-server-0123456789"})
    client = AutoLLMClient("fast", client_type="agenthub", base_url="http://127.0.0.1:1/v1", api_key="k" * 12)
    request = client._host.encode(client._protocol.build_request(client._endpoint, "fast", MESSAGES,
                                                                 {"trace_id": "t", "max_tokens": 5}), client._endpoint)
    assert request.url == "http://127.0.0.1:1/v1/stream"
    assert request.body == {"model": "fast", "messages": MESSAGES, "config": {"max_tokens": 5}}
    assert request.headers["Authorization"] == "Bearer " + "k" * 12


@pytest.mark.parametrize("items", [False, True])
def test_a_slow_client_holds_back_the_upstream(monkeypatch, items):
    """Frames waiting for the writer are bounded: past the limit the upstream is not read until the writer
    catches up, and every event still arrives, in order (pieces of the items wire count as frames)."""
    import agenthub.apps.server as server_module

    monkeypatch.setattr(server_module, "MAX_QUEUED_FRAMES", 50)
    produced = []

    class Stream(object):
        def __iter__(self):
            for n in range(400):
                produced.append(n)
                yield {"role": "assistant", "event_type": "delta", "content_items": [{"type": "text", "text": str(n)}],
                       "usage_metadata": None, "finish_reason": None, "created_at": n}

        def close(self):
            pass

        def abort(self):
            pass

    class App(object):
        def _stream_opened(self):
            pass

        def _stream_closed(self):
            pass

    pump = server_module._Pump(App(), Stream(), "m", items=items)
    pump.start()
    time.sleep(0.3)
    assert 50 < len(produced) <= 52 and pump.queue.qsize() <= 51  # the reader waits for room
    frames = []
    while True:
        item = pump.queue.get(timeout=5)
        if item is server_module._END:
            break
        frames.append(item)
    pump.thread.join(5)
    texts = frames if items else [json.loads(f[6:])["content_items"][0]["text"] for f in frames]
    assert texts == [str(n) for n in range(400)]


def test_agenthub_serve_logs_an_upstream_failure_without_agenthub_log(tmp_path):
    """Issue 29 C2: a 502 left the server's stderr empty unless AGENTHUB_LOG was set, though the README says the
    upstream's address "stays in its log".  Upstream failures are logged (WARNING) by default; the caller's
    answer still names no address."""
    import socket

    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    dead = probe.getsockname()[1]
    probe.close()  # nothing listens there now
    path = tmp_path / "server.json"
    path.write_text(json.dumps({"models": [{"id": "fast", "model": "m", "client_type": "openai-chat",
                                            "base_url": "http://127.0.0.1:{}/v1".format(dead), "max_retries": 0}]}),
                    encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "AGENTHUB_LOG"}
    env["PYTHONPATH"] = ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")
    process = subprocess.Popen([sys.executable, "-m", "agenthub", "serve", "--config", str(path), "--port", "0"],
                               env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        url = process.stdout.readline().decode().strip()
        answer = requests.post(url + "/v1/stream", json={"model": "fast", "messages": MESSAGES}, timeout=30)
        assert answer.status_code == 502
        assert str(dead) not in answer.text
    finally:
        process.terminate()
        process.wait(10)
        err = process.stderr.read().decode("utf-8", "replace")
        process.stdout.close()
        process.stderr.close()
    lines = [line for line in err.splitlines() if "agenthub serve:" in line]
    assert len(lines) == 1, err
    assert " WARNING agenthub serve: model fast: TransportError (answered 502) after 0 events: openai-chat: " in lines[0]
    assert "127.0.0.1:{}".format(dead) in lines[0]


# -- the items wire (issue 41 item 4): runs of plain deltas as one frame of pieces -------------------------------


def _read_items_wire(content):
    """The events of an items-wire body (created_at left out): a piece stands for the delta it was."""
    events = []
    for frame in content.split(b"\n\n"):
        if not frame or frame == b"data: [DONE]":
            continue
        assert frame.startswith(b"data: ") and frame.count(b"\n") == 0, frame[:80]
        data = json.loads(frame[6:])
        if type(data) is dict:
            events.append({k: v for k, v in data.items() if k != "created_at"})
            continue
        for piece in data:
            if type(piece) is str:
                item = {"type": "text", "text": piece}
            elif type(piece) is list:
                item = {"type": "partial_tool_call", "name": "", "arguments": piece[0], "tool_call_id": ""}
            else:
                item = piece
            events.append({"role": "assistant", "event_type": "delta", "content_items": [item],
                           "usage_metadata": None, "finish_reason": None})
    return events


@pytest.mark.parametrize("name", ["weather_tool_call.sse", "weather_answer.sse"])
def test_the_items_wire_carries_the_same_events(stack, name):
    """X-AgentHub-Wire: items folds each run of plain deltas into `data: [<piece>, ...]`; read back, they are
    the events of the one-event-per-frame wire (created_at aside), and without the header nothing changed."""
    up, app, server = stack
    up.routes["openai_chat"] = Route(_recording("openai_chat", name))
    want, _ = outcome(direct(up.url, "openai_chat"))
    answer = post(server.url, {"model": "openai_chat", "messages": MESSAGES}, headers={"X-AgentHub-Wire": "items"})
    assert answer.status_code == 200 and answer.content.endswith(b"data: [DONE]\n\n")
    assert b"\ndata: [" in answer.content.replace(b"data: [DONE]", b"")  # pieces travelled as pieces
    assert _read_items_wire(answer.content) == strip_ids(want)
    plain = post(server.url, {"model": "openai_chat", "messages": MESSAGES})
    assert b"data: [" not in plain.content.replace(b"data: [DONE]", b"")


def test_the_agenthub_client_asks_for_the_runs_wire():
    """(It asked for the items wire before the runs wire; a server that knows only that one, or none, answers
    with whole events.)"""
    from agenthub.providers import agenthub_server
    from agenthub.providers._common import Endpoint

    endpoint = Endpoint("agenthub", "http://127.0.0.1:1", None, {})
    request = agenthub_server.build_request(endpoint, "m", MESSAGES, {})
    assert request.headers == {"Content-Type": "application/json", "Accept": "text/event-stream",
                               "X-AgentHub-Wire": "runs"}


class _App(object):
    keepalive_seconds = 5.0

    def _stream_opened(self):
        pass

    def _stream_closed(self):
        pass

    def _release(self, model_id):
        pass

    def _error_bytes(self, error):
        return b'{"error":"x"}'


def _delta(item, created_at=1):
    return {"role": "assistant", "event_type": "delta", "content_items": [item], "usage_metadata": None,
            "finish_reason": None, "created_at": created_at}


def test_the_pump_queues_pieces_and_encodes_every_other_event():
    import agenthub.apps.server as server_module

    start = {"role": "assistant", "event_type": "start", "content_items": [], "usage_metadata": None,
             "finish_reason": None, "created_at": 1}
    named = {"type": "partial_tool_call", "name": "f", "arguments": "", "tool_call_id": "c1"}
    bare = {"type": "partial_tool_call", "name": "", "arguments": '{"a"', "tool_call_id": ""}
    carried = {"type": "text", "text": "x", "fidelity": {"k": 1}}
    events = [start, _delta({"type": "text", "text": "Hé"}), _delta(named), _delta(bare), _delta(carried),
              dict(_delta({"type": "text", "text": "u"}), usage_metadata={"prompt_tokens": 1})]

    class Stream(object):
        def __iter__(self):
            return iter(events)

        def close(self):
            pass

        def abort(self):
            pass

    pump = server_module._Pump(_App(), Stream(), "m", items=True)
    pump.start()
    pump.thread.join(5)
    queued = []
    while not pump.queue.empty():
        queued.append(pump.queue.get())
    encode = server_module._encode_event
    assert queued == [encode(start), "Hé", encode(events[2]), server_module._ARG_PIECES, '{"a"', encode(events[4]),
                      encode(events[5]), server_module._END]
    assert pump.put_bytes == sum(len(q) for q in queued[:-1] if type(q) is bytes) + (2 + 16) + (4 + 16)


def test_the_writer_folds_queued_pieces_into_items_frames(monkeypatch):
    import agenthub.apps.server as server_module

    class Pump(object):
        model_id = "m"
        taken_bytes = 0

        def __init__(self):
            self.queue = server_module._Queue()  # (the pump's queue: the writer takes it whole)

        def stop(self):
            pass

    def body(items):
        pump = Pump()
        for item in items:
            pump.queue.put(item)
        return pump, b"".join(server_module._Body(_App(), pump, pump.queue.get()))

    frame = b'data: {"k":1}\n\n'
    arguments, text = server_module._ARG_PIECES, server_module._TEXT_PIECES  # (the pump's markers)
    pump, out = body([frame, "a", "\u00e9\n", arguments, '{"x":', frame, text, "b", server_module._END])
    assert out == (frame + b'data: ["a","\\u00e9\\n",["{\\"x\\":"]]\n\n' + frame + b'data: ["b"]\n\n'
                   + b"data: [DONE]\n\n")
    assert pump.taken_bytes == 2 * len(frame) + (1 + 16) + (2 + 16) + (5 + 16) + (1 + 16)
    pump, out = body(["a", ValueError("boom")])  # an error ends the run of pieces, then the body
    assert out == b'data: ["a"]\n\nevent: error\ndata: {"error":"x"}\n\n'
    monkeypatch.setattr(server_module, "MAX_BATCH_BYTES", 40)  # a run past the size: several frames
    pump, out = body(["x" * 20, "y" * 20, "z", server_module._END])
    assert out == b'data: ["' + b"x" * 20 + b'","' + b"y" * 20 + b'"]\n\ndata: ["z"]\n\ndata: [DONE]\n\n'


def test_items_frames_are_read_and_bad_ones_refused():
    from agenthub.providers.agenthub_server import parse_stream
    from agenthub.sse import iter_events
    from agenthub.stream import drive

    stop = (b'data: {"role":"assistant","event_type":"stop","content_items":[],"usage_metadata":null,'
            b'"finish_reason":"stop","created_at":1}\n\n')
    announce = b'data: ["x",{"type":"partial_tool_call","name":"f","arguments":"","tool_call_id":"c"}]\n\n'
    complete = b'data: [{"type":"tool_call","name":"f","arguments":{"a":1},"tool_call_id":"c"}]\n\n'
    body = (announce + b'data: ["Hel","lo \\u00e9",["{\\"a\\": 1}"],{"type":"thinking","thinking":"t"},'
            b'{"type":"inline_data","mime_type":"image/png","data":{"__bytes__":"AAE="}}]\n\n' + complete + stop)
    parts = list(parse_stream(iter_events([body])))
    assert parts[:-1] == [{"type": "text", "text": "x"},
                          {"type": "partial_tool_call", "name": "f", "arguments": "", "tool_call_id": "c"},
                          {"type": "text", "text": "Hel"}, {"type": "text", "text": "lo \u00e9"},
                          {"type": "partial_tool_call", "name": "", "arguments": '{"a": 1}', "tool_call_id": ""},
                          {"type": "thinking", "thinking": "t"},
                          {"type": "inline_data", "mime_type": "image/png", "data": b"\x00\x01"},
                          {"type": "tool_call", "name": "f", "arguments": {"a": 1}, "tool_call_id": "c"}]
    events = list(drive(parse_stream(iter_events([body])), "agenthub"))
    assert [e["event_type"] for e in events] == ["start"] + ["delta"] * 8 + ["stop"]
    check_stream(events)
    deep = b'[{"type":"tool_call","name":"f","arguments":' + b"[" * 200 + b"]" * 200 + b',"tool_call_id":"c"}]'
    for bad in (b"[1]", b'[["a","b"]]', b"[[1]]", b'[{"type":"nope"}]', b'[{"type":"text","text":1}]', b"[", b'["a"',
                deep):
        with pytest.raises(StreamProtocolError):
            list(drive(parse_stream(iter_events([b"data: " + bad + b"\n\n" + stop])), "agenthub"))


def test_an_event_that_comes_alone_is_written_at_once_on_the_items_wire(stack):
    """The writer gathers a burst, never the events before a pause of the upstream: what came is read by the
    client while the upstream is still silent (a generous bound: the gathering is a couple of milliseconds)."""
    up = stack[0]
    body = _recording("openai_chat", "weather_answer.sse")
    up.routes["paused"] = Route(body, parts=2, pause=1.0)
    app = make_app({"models": [{"id": "paused", "model": "m", "client_type": "openai-chat",
                                "base_url": up.url + "/paused/v1", "max_retries": 0}], "keepalive_seconds": 30})
    want, _ = outcome(direct(up.url, "openai_chat", route="paused"))
    first_part = [e for e in strip_ids(want) if e["event_type"] == "delta"][:1]
    with Builtin(app) as server:
        started = time.monotonic()
        events = via(server.url, "paused").streaming_response(MESSAGES)
        got = []
        for event in events:
            got.append(event)
            if event["event_type"] == "delta":
                break
        assert time.monotonic() - started < 0.8  # before the upstream's pause ended
        assert strip_ids(got[1:]) == first_part
        got.extend(events)
    assert strip_ids(got) == strip_ids(want)
