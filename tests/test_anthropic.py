"""Anthropic Messages: recorded streams, request goldens, replay round trips, errors, end to end."""

import base64
import json
import os

import pytest

from agenthub.errors import (
    ConfigError,
    EmptyResponseError,
    RateLimitError,
    ServerError,
    StreamProtocolError,
    ToolCallArgumentParseError,
    UnsupportedParameterError,
    UpstreamError,
)
from agenthub.providers import anthropic
from agenthub.providers._common import Endpoint
from agenthub.sse import SSEEvent
from agenthub.stream import check_stream, collect, drive
from agenthub.types import PromptCaching, ThinkingLevel
from agenthub.validate import check_config, check_messages
from conftest import HERE, run_parser, sent, splits, strip_ids, summarize, wire_params

CLIENT = "anthropic"
FIXTURES = os.path.join(HERE, "fixtures", "anthropic")
RECORDINGS = os.path.join(os.path.dirname(HERE), "agenthub", "recordings", "anthropic")
KEY = "sk-ant-test-key"


def fixture(name):
    with open(os.path.join(FIXTURES, name), "rb") as handle:
        return handle.read()


def parse(data, chunks=None):
    events = run_parser(anthropic.parse_stream, chunks or [data], CLIENT, tool_id_prefix="call_test_")
    check_stream(events)
    return events


def endpoint(base_url="https://api.anthropic.com", key=KEY, headers=None, quirks=None):
    if quirks is None and base_url == "https://api.anthropic.com":
        quirks = {"first_party": True}  # what registry.resolve gives an endpoint on the host's own servers
    return Endpoint("anthropic", base_url, key, headers, quirks)


def request(model="claude-sonnet-4-5", messages=None, config=None, ep=None):
    messages = messages if messages is not None else [user("Hi")]
    check_messages(messages)
    return anthropic.build_request(ep or endpoint(), model, messages, check_config(config))


def body(model="claude-sonnet-4-5", messages=None, config=None, ep=None):
    return request(model, messages, config, ep).body


def user(text):
    return {"role": "user", "content_items": [{"type": "text", "text": text}]}


def sse(*payloads):
    """An SSE body from (event, payload) pairs."""
    out = []
    for name, payload in payloads:
        out.append("event: {}\ndata: {}\n\n".format(name, json.dumps(payload)))
    return "".join(out).encode("utf-8")


def start_event(usage=None):
    return ("message_start", {"type": "message_start", "message": {
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-x", "content": [],
        "stop_reason": None, "usage": usage or {"input_tokens": 5, "output_tokens": 1}}})


def text_block(index, text):
    return [
        ("content_block_start", {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}),
        ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": text}}),
        ("content_block_stop", {"type": "content_block_stop", "index": index}),
    ]


def end_events(reason="end_turn", output=3):
    return [("message_delta", {"type": "message_delta", "delta": {"stop_reason": reason}, "usage": {"output_tokens": output}}),
            ("message_stop", {"type": "message_stop"})]


# -- recorded streams ------------------------------------------------------------------------------------


def expected_usage(raw):
    if raw is None:
        return None
    prompt = raw["input"]
    if prompt is not None and raw.get("cache_write"):
        prompt += raw["cache_write"]
    return {"cached_tokens": raw.get("cached"), "prompt_tokens": prompt, "thoughts_tokens": None,
            "response_tokens": raw["output"]}


@pytest.mark.parametrize("name,data,sidecar", wire_params("anthropic"))
def test_wire_stream_matches_sidecar(name, data, sidecar):
    expect = sidecar["expect"]
    extras = sidecar.get("expect_extras") or {}
    if expect["error"]:
        for chunks in splits(data, samples=10):
            with pytest.raises(UpstreamError) as info:
                parse(data, chunks)
            error_type, message = expect["error"].split(": ", 1)
            assert info.value.error_type == error_type
            assert info.value.message == message
            assert info.value.client == CLIENT
        if error_type == "overloaded_error":
            assert isinstance(info.value, ServerError) and info.value.status == 529 and info.value.retryable
        return
    if any(call["arguments"] is None for call in expect["tool_calls"]):
        with pytest.raises(ToolCallArgumentParseError):
            parse(data)
        return
    reference = None
    for chunks in splits(data):
        events = parse(data, chunks)
        if reference is None:
            reference = strip_ids(events)
        else:
            assert strip_ids(events) == reference  # whole, byte by byte, split: identical events
    summary = summarize(events)
    assert summary["text"] == expect["text"]
    assert summary["thinking"] == expect["thinking"]
    assert summary["tool_calls"] == [{"name": c["name"], "id": c["id"], "arguments": c["arguments"]}
                                     for c in expect["tool_calls"]]
    assert summary["finish_reason"] == expect["finish_reason"]
    assert summary["usage"] == expected_usage(expect["usage"])
    message = collect(events)
    signatures = [i["fidelity"]["signature"] for i in message["content_items"]
                  if i["type"] == "thinking" and "signature" in (i.get("fidelity") or {})]
    assert signatures == extras.get("thinking_signature_values", [])
    redacted = [i["fidelity"]["redacted_data"] for i in message["content_items"] if "redacted_data" in (i.get("fidelity") or {})]
    assert redacted == extras.get("redacted_thinking_data", [])
    # and it all goes back out the way it came in
    replay = body(messages=[user("q"), message])["messages"][1]["content"]
    kinds = [block["type"] for block in replay]
    assert kinds == [k for k in extras.get("block_types", kinds)]


def test_wire_streams_cut_short_are_protocol_errors():
    for param in wire_params("anthropic"):
        name, data, sidecar = param.values
        if data is None or sidecar["expect"]["error"]:
            continue
        cut = data.index(b"event: message_delta")
        for end in (cut, cut // 2, len(data) // 3):
            with pytest.raises(StreamProtocolError):
                parse(data[:end])


# -- own fixtures ------------------------------------------------------------------------------------------


def all_splits(data):
    events = None
    for chunks in splits(data, samples=15):
        got = parse(data, chunks)
        if events is None:
            events = got
        assert strip_ids(got) == strip_ids(events)
    return events


def test_thinking_text_tool_use_fixture():
    events = all_splits(fixture("thinking_text_tool_use.sse"))
    summary = summarize(events)
    assert summary["thinking"] == "The user wants the weather in Paris. I should call get_weather."
    assert summary["text"] == "Let me check the weather."
    assert summary["tool_calls"] == [{"name": "get_weather", "id": "toolu_fx_weather_01",
                                      "arguments": {"city": "Paris", "unit": "celsius"}}]
    assert summary["finish_reason"] == "tool_call"
    # cached = cache reads; prompt = input + cache writes; response = output
    assert summary["usage"] == {"cached_tokens": 2048, "prompt_tokens": 1510, "thoughts_tokens": None, "response_tokens": 87}
    partials = [i for e in events for i in e["content_items"] if i["type"] == "partial_tool_call"]
    assert partials[0]["name"] == "get_weather" and partials[0]["tool_call_id"] == "toolu_fx_weather_01"
    assert "".join(p["arguments"] for p in partials) == '{"city": "Paris", "unit": "celsius"}'


def test_start_input_is_honoured():
    events = all_splits(fixture("start_input_seed.sse"))
    assert summarize(events)["tool_calls"] == [
        {"name": "get_weather", "id": "toolu_fx_seed_01", "arguments": {"city": "Paris"}},
        {"name": "get_time", "id": "toolu_fx_seed_02", "arguments": {"tz": "Europe/Paris"}},
    ]


def test_message_delta_then_clean_end_is_complete():
    events = all_splits(fixture("no_message_stop.sse"))
    assert summarize(events)["text"] == "Short."
    assert events[-1]["finish_reason"] == "stop"  # stop_sequence -> stop


def test_usage_is_overwritten_never_added():
    events = parse(fixture("gateway_zero_start_usage.sse"))
    # zeros at message_start, real counts at the first message_delta, a later cumulative output count
    assert events[-1]["usage_metadata"] == {"cached_tokens": 4000, "prompt_tokens": 1800, "thoughts_tokens": None,
                                            "response_tokens": 11}


def test_usage_absent_is_all_none():
    data = sse(("message_start", {"type": "message_start", "message": {"id": "m", "content": []}}),
               *text_block(0, "x"), ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"}}),
               ("message_stop", {"type": "message_stop"}))
    assert parse(data)[-1]["usage_metadata"] == {"cached_tokens": None, "prompt_tokens": None, "thoughts_tokens": None,
                                                 "response_tokens": None}


@pytest.mark.parametrize("reason,finish", [
    ("end_turn", "stop"), ("stop_sequence", "stop"), ("max_tokens", "length"), ("tool_use", "tool_call"),
    ("pause_turn", "unknown"), ("refusal", "unknown"), ("model_context_window_exceeded", "unknown"),
    ("something_new", "unknown"),
])
def test_stop_reasons(reason, finish):
    data = sse(start_event(), *text_block(0, "hello"), *end_events(reason))
    assert parse(data)[-1]["finish_reason"] == finish


def test_message_stop_without_stop_reason_is_unknown():
    data = sse(start_event(), *text_block(0, "hello"), ("message_stop", {"type": "message_stop"}))
    assert parse(data)[-1]["finish_reason"] == "unknown"


def test_ping_and_unknown_events_and_deltas_are_skipped():
    data = sse(start_event(), ("ping", {"type": "ping"}), ("future_event", {"type": "future_event", "x": 1}),
               ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
               ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "future_delta", "v": 1}}),
               ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "ok"}}),
               ("content_block_stop", {"type": "content_block_stop", "index": 0}), *end_events())
    events = parse(data)
    assert summarize(events)["text"] == "ok"


def test_thinking_only_turn_raises_empty_response():
    with pytest.raises(EmptyResponseError) as info:
        parse(fixture("thinking_only.sse"))
    assert info.value.finish_reason == "stop"
    assert info.value.usage_metadata["response_tokens"] == 30


def test_tool_use_cut_by_max_tokens_raises_parse_error():
    with pytest.raises(ToolCallArgumentParseError) as info:
        parse(fixture("tool_use_max_tokens.sse"))
    error = info.value
    assert error.client == CLIENT
    assert error.tool_name == "write_file"
    assert error.tool_call_id == "toolu_fx_cut_01"
    assert error.raw_arguments_length == len('{"path": "notes.txt", "content": "a very long te')
    assert error.raw_arguments_preview.startswith('{"path": "notes.txt"')


def test_tool_use_cut_without_block_stop_raises_parse_error():
    data = sse(start_event(),
               ("content_block_start", {"type": "content_block_start", "index": 0,
                                        "content_block": {"type": "tool_use", "id": "toolu_x", "name": "f", "input": {}}}),
               ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                        "delta": {"type": "input_json_delta", "partial_json": '{"a": [1, 2'}}),
               *end_events("max_tokens"))
    with pytest.raises(ToolCallArgumentParseError) as info:
        parse(data)
    assert info.value.tool_name == "f" and info.value.tool_call_id == "toolu_x"


@pytest.mark.parametrize("error_type,cls,status", [
    ("overloaded_error", ServerError, 529), ("rate_limit_error", RateLimitError, 429), ("api_error", ServerError, 500),
])
def test_in_stream_errors(error_type, cls, status):
    data = sse(start_event(), *text_block(0, "partial"),
               ("error", {"type": "error", "error": {"type": error_type, "message": "try later"}}))
    with pytest.raises(cls) as info:
        parse(data)
    assert info.value.status == status and info.value.error_type == error_type and info.value.retryable
    assert info.value.message == "try later"


def test_error_after_text_fixture_and_relabelled_error_event():
    with pytest.raises(RateLimitError) as info:
        parse(fixture("rate_limit_mid_stream.sse"))
    assert info.value.status == 429
    # a gateway that labels the event "message" still sends {"type": "error"}
    data = b'data: {"type": "error", "error": {"type": "invalid_request_error", "message": "bad"}}\n\n'
    with pytest.raises(UpstreamError) as info:
        parse(data)
    assert info.value.status == 400 and not info.value.retryable


def test_error_event_with_text_payload():
    with pytest.raises(UpstreamError) as info:
        parse(b"event: error\ndata: upstream exploded\n\n")
    assert "upstream exploded" in str(info.value)


def test_malformed_payloads_are_protocol_errors():
    for data in (b"event: message_start\ndata: {not json\n\n",
                 sse(start_event(), ("content_block_delta", {"type": "content_block_delta", "index": 0}))):
        with pytest.raises(StreamProtocolError):
            parse(data)


def test_empty_body_is_a_protocol_error():
    with pytest.raises(StreamProtocolError):
        parse(b"")


# -- fidelity: where the replay data lands -------------------------------------------------------------------


def test_redacted_then_thinking_keep_their_own_items():
    events = all_splits(fixture("redacted_then_thinking.sse"))
    items = collect(events)["content_items"]
    assert [i["type"] for i in items] == ["thinking", "thinking", "text"]
    assert items[0]["thinking"] == "" and list(items[0]["fidelity"]) == ["redacted_data"]
    assert items[1]["thinking"] == "Visible reasoning after the redacted part."
    assert items[1]["fidelity"] == {"signature": "EqQBCkYIBxgCKkBsecondFakeSignature/+=="}
    assert summarize(events)["thinking"] == "Visible reasoning after the redacted part."


def test_omitted_thinking_signatures_are_kept():
    events = all_splits(fixture("omitted_thinking_tool_use.sse"))
    items = collect(events)["content_items"]
    assert [i["type"] for i in items] == ["thinking", "tool_call", "thinking", "tool_call"]
    assert [i["fidelity"]["signature"][:8] for i in items if i["type"] == "thinking"] == ["EpwCCkYI", "EqQBCkYI"]


def test_web_search_blocks_are_not_tool_calls():
    events = all_splits(fixture("web_search_citations.sse"))
    summary = summarize(events)
    assert summary["tool_calls"] == [] and summary["finish_reason"] == "stop"
    assert summary["text"] == "I'll look that up.According to the forecast, it is 18 °C and sunny in Paris."
    assert summary["usage"]["prompt_tokens"] == 2100
    replay = body(messages=[user("weather?"), collect(events)])["messages"][1]["content"]
    assert [b["type"] for b in replay] == ["text", "server_tool_use", "web_search_tool_result", "text", "text", "text"]
    assert replay[1] == {"type": "server_tool_use", "id": "srvtoolu_fx_01", "name": "web_search",
                         "input": {"query": "weather Paris today"}}
    assert replay[2]["content"][0]["encrypted_content"] == "EqgfCioIARgBIiQ3YTAwMjY1Mi1mZjM5"
    assert replay[3] == {"type": "text", "text": "According to the forecast, "}
    # the cited block keeps its own boundaries: its citations cover its text and nothing else
    assert replay[4]["text"] == "it is 18 °C and sunny"
    assert replay[4]["citations"][0]["cited_text"] == "Paris: 18 °C and sunny"
    assert replay[5] == {"type": "text", "text": " in Paris."}


def test_server_block_after_plain_text_and_before_thinking():
    """A server block between text and a signed thinking block keeps all three in order."""
    data = sse(start_event(), *text_block(0, "Searching."),
               ("content_block_start", {"type": "content_block_start", "index": 1, "content_block": {
                   "type": "server_tool_use", "id": "srv_1", "name": "web_fetch", "input": {"url": "https://a.example"}}}),
               ("content_block_stop", {"type": "content_block_stop", "index": 1}),
               ("content_block_start", {"type": "content_block_start", "index": 2, "content_block": {
                   "type": "web_fetch_tool_result", "tool_use_id": "srv_1", "content": {"type": "web_fetch_result"}}}),
               ("content_block_stop", {"type": "content_block_stop", "index": 2}),
               ("content_block_start", {"type": "content_block_start", "index": 3, "content_block": {
                   "type": "thinking", "thinking": "", "signature": ""}}),
               ("content_block_delta", {"type": "content_block_delta", "index": 3, "delta": {"type": "thinking_delta", "thinking": "ponder"}}),
               ("content_block_delta", {"type": "content_block_delta", "index": 3, "delta": {"type": "signature_delta", "signature": "SIG"}}),
               ("content_block_stop", {"type": "content_block_stop", "index": 3}),
               *text_block(4, "Answer."), *end_events())
    message = collect(parse(data))
    replay = body(messages=[user("q"), message])["messages"][1]["content"]
    assert replay == [
        {"type": "text", "text": "Searching."},
        {"type": "server_tool_use", "id": "srv_1", "name": "web_fetch", "input": {"url": "https://a.example"}},
        {"type": "web_fetch_tool_result", "tool_use_id": "srv_1", "content": {"type": "web_fetch_result"}},
        {"type": "thinking", "thinking": "ponder", "signature": "SIG"},
        {"type": "text", "text": "Answer."},
    ]


def test_redacted_after_unsigned_text_thinking_from_a_gateway():
    """Unsigned thinking, then redacted, then text: the redacted block is not folded into the thinking."""
    data = sse(start_event(),
               ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}}),
               ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "t"}}),
               ("content_block_stop", {"type": "content_block_stop", "index": 0}),
               ("content_block_start", {"type": "content_block_start", "index": 1, "content_block": {"type": "redacted_thinking", "data": "R"}}),
               ("content_block_stop", {"type": "content_block_stop", "index": 1}),
               *text_block(2, "answer"), *end_events())
    message = collect(parse(data))
    replay = body(messages=[user("q"), message], ep=endpoint("https://gateway.example"))["messages"][1]["content"]
    assert replay == [{"type": "thinking", "thinking": "t"}, {"type": "redacted_thinking", "data": "R"},
                      {"type": "text", "text": "answer"}]


def test_caller_of_programmatic_tool_calls_is_kept():
    data = sse(start_event(),
               ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {
                   "type": "tool_use", "id": "toolu_p", "name": "query", "input": {},
                   "caller": {"type": "code_execution_20250825", "tool_id": "srvtoolu_c"}}}),
               ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": "{}"}}),
               ("content_block_stop", {"type": "content_block_stop", "index": 0}), *end_events("tool_use"))
    message = collect(parse(data))
    assert message["content_items"][0]["fidelity"] == {"caller": {"type": "code_execution_20250825", "tool_id": "srvtoolu_c"}}
    replay = body(messages=[user("q"), message])["messages"][1]["content"]
    assert replay == [{"type": "tool_use", "id": "toolu_p", "name": "query", "input": {},
                       "caller": {"type": "code_execution_20250825", "tool_id": "srvtoolu_c"}}]


# -- round trip: stream -> collect -> next request ------------------------------------------------------------


def test_round_trip_signatures_and_order():
    stream = fixture("thinking_text_tool_use.sse")
    answer = collect(parse(stream))
    history = [
        user("Weather in Paris?"),
        answer,
        {"role": "user", "content_items": [{"type": "tool_result", "tool_call_id": "toolu_fx_weather_01",
                                            "text": "18 C, sunny"}]},
    ]
    sent = body("claude-sonnet-4-5", history, {"thinking_level": ThinkingLevel.MEDIUM,
                                               "tools": [{"name": "get_weather", "parameters": {"type": "object"}}]})
    raw_signature = [json.loads(line[6:]) for line in stream.decode("utf-8").splitlines()
                     if line.startswith("data: ") and "signature_delta" in line][0]["delta"]["signature"]
    assert sent["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"}]},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "The user wants the weather in Paris. I should call get_weather.",
             "signature": raw_signature},
            {"type": "text", "text": "Let me check the weather."},
            {"type": "tool_use", "id": "toolu_fx_weather_01", "name": "get_weather",
             "input": {"city": "Paris", "unit": "celsius"}},
        ]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_fx_weather_01", "content": "18 C, sunny"}]},
    ]


@pytest.mark.parametrize("name,data,sidecar", wire_params("anthropic"))
def test_round_trip_recorded_streams_byte_exact(name, data, sidecar):
    extras = sidecar.get("expect_extras") or {}
    if sidecar["expect"]["error"]:
        return
    message = collect(parse(data))
    replay = body(messages=[user("q"), message])["messages"][1]["content"]
    wire = json.dumps(replay, ensure_ascii=False)
    for value in extras.get("thinking_signature_values", []) + extras.get("redacted_thinking_data", []):
        assert json.dumps(value) in wire  # byte-exact, escaping included
    assert [b["data"] for b in replay if b["type"] == "redacted_thinking"] == extras.get("redacted_thinking_data", [])
    assert [b["signature"] for b in replay if b["type"] == "thinking"] == extras.get("thinking_signature_values", [])


def test_multi_turn_with_redacted_thinking_and_tool_calls():
    first = collect(parse(fixture("redacted_then_thinking.sse")))
    second = collect(parse(fixture("thinking_text_tool_use.sse")))
    history = [user("one"), first, user("two"), second,
               {"role": "user", "content_items": [{"type": "tool_result", "tool_call_id": "toolu_fx_weather_01", "text": "ok"}]}]
    messages = body("claude-sonnet-4-5", history, {"thinking_level": "high"})["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant", "user"]
    assert [b["type"] for b in messages[1]["content"]] == ["redacted_thinking", "thinking", "text"]
    assert [b["type"] for b in messages[3]["content"]] == ["thinking", "text", "tool_use"]


# -- request goldens -------------------------------------------------------------------------------------------


def test_golden_minimal_request_and_headers():
    req = sent(request("claude-sonnet-4-5", [user("Hello")], {}), endpoint())
    assert req.method == "POST"
    assert req.url == "https://api.anthropic.com/v1/messages"
    assert req.stream is True
    assert dict(req.headers) == {"Content-Type": "application/json", "Accept": "text/event-stream",
                                 "anthropic-version": "2026-10-21", "Authorization": "Bearer " + KEY}
    assert req.body == {
        "model": "claude-sonnet-4-5", "max_tokens": 32000,
        "messages": [{"role": "user", "content": [{"type": "text", "text": "Hello"}]}],
        "cache_control": {"type": "ephemeral"}, "stream": True,
    }


def test_golden_trailing_slash_extra_headers_no_key():
    keyless = endpoint("http://127.0.0.1:9000/", key=None, headers={"x-gateway": "1"})
    req = sent(anthropic.build_request(keyless, "claude-opus-4-6", [user("x")], {}), keyless)
    assert req.url == "http://127.0.0.1:9000/v1/messages"
    assert "x-api-key" not in req.headers and req.headers["x-gateway"] == "1"


#: the first-party API with API version 2023-06-01 pinned (AutoLLMClient(..., anthropic_version="2023-06-01"))
LEGACY = {"first_party": True, "anthropic_version": "2023-06-01"}


def test_golden_full_config():  # (temperature: 2023-06-01 pinned; 2026-10-21 removed it)
    config = {
        "system_prompt": "You are terse.", "max_tokens": 2048, "temperature": 0.3,
        "tools": [{"name": "get_weather", "description": "Weather for a city.",
                   "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}},
                  {"name": "noop"}],
        "tool_choice": "auto", "prompt_caching": PromptCaching.ENHANCE,
    }
    assert body("claude-sonnet-4-5", [user("Hi")], config, endpoint(quirks=LEGACY)) == {
        "model": "claude-sonnet-4-5", "max_tokens": 2048, "system": "You are terse.",
        "messages": [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}],
        "tools": [{"name": "get_weather", "description": "Weather for a city.",
                   "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}},
                  {"name": "noop", "input_schema": {"type": "object", "properties": {}}}],
        "tool_choice": {"type": "auto"}, "temperature": 0.3,
        "cache_control": {"type": "ephemeral", "ttl": "1h"}, "stream": True,
    }


@pytest.mark.parametrize("caching,expected", [
    (PromptCaching.ENABLE, {"type": "ephemeral"}), (PromptCaching.ENHANCE, {"type": "ephemeral", "ttl": "1h"}),
    (PromptCaching.DISABLE, None), (None, {"type": "ephemeral"}),
])
def test_golden_prompt_caching(caching, expected):
    config = {"prompt_caching": caching} if caching else {}
    assert body(config=config).get("cache_control") == expected


def test_prompt_caching_on_a_gateway_without_automatic_caching():
    ep = endpoint("https://gw.example", quirks={"automatic_caching": False})
    assert "cache_control" not in body(config={}, ep=ep)
    assert "cache_control" not in body(config={"prompt_caching": "disable"}, ep=ep)
    with pytest.raises(UnsupportedParameterError):
        body(config={"prompt_caching": "enhance"}, ep=ep)


@pytest.mark.parametrize("choice,expected", [
    ("auto", {"type": "auto"}), ("required", {"type": "any"}), ("none", {"type": "none"}),
    (["b"], {"type": "tool", "name": "b"}),
])
def test_golden_tool_choice(choice, expected):
    config = {"tools": [{"name": "a"}, {"name": "b"}], "tool_choice": choice}
    assert body("claude-sonnet-4-5", config=config)["tool_choice"] == expected


def test_tool_choice_with_several_names_is_unsupported():
    with pytest.raises(UnsupportedParameterError) as info:
        body(config={"tools": [{"name": "a"}, {"name": "b"}], "tool_choice": ["a", "b"]})
    assert info.value.parameter == "tool_choice" and info.value.client == CLIENT


def test_forced_tool_choice_and_thinking():
    tools = [{"name": "a"}]
    with pytest.raises(UnsupportedParameterError):  # thinking asked for + forced tool: rejected upstream
        body("claude-sonnet-4-5", config={"tools": tools, "tool_choice": "required", "thinking_level": "high"})
    with pytest.raises(UnsupportedParameterError):  # Sonnet 5.5 / Opus 5.5 / Fable: no forced tool use at all
        body("claude-sonnet-5-5", config={"tools": tools, "tool_choice": ["a"]})
    with pytest.raises(UnsupportedParameterError):
        body("claude-opus-5-5", config={"tools": tools, "tool_choice": "required"})
    # a model that thinks by default but can stop: the forced choice turns thinking off
    sent = body("claude-opus-5", config={"tools": tools, "tool_choice": "required"})
    assert sent["thinking"] == {"type": "disabled"} and sent["tool_choice"] == {"type": "any"}
    sent = body("claude-opus-5", config={"tools": tools, "tool_choice": "required", "thinking_level": "none"})
    assert sent["thinking"] == {"type": "disabled"}
    # thinking off by default: nothing to turn off
    sent = body("claude-opus-4-7", config={"tools": tools, "tool_choice": ["a"]})
    assert "thinking" not in sent and sent["tool_choice"] == {"type": "tool", "name": "a"}


def rule_body(model, level=None, summary=None, max_tokens=None):
    config = {}
    if level is not None:
        config["thinking_level"] = level
    if summary is not None:
        config["thinking_summary"] = summary
    if max_tokens is not None:
        config["max_tokens"] = max_tokens
    sent = body(model, config=config)
    return sent.get("thinking"), (sent.get("output_config") or {}).get("effort")


ADAPTIVE = {"type": "adaptive"}


@pytest.mark.parametrize("model,level,thinking,effort", [
    # budget models
    ("claude-sonnet-4-5-20250929", "none", {"type": "disabled"}, None),
    ("claude-sonnet-4-5-20250929", "low", {"type": "enabled", "budget_tokens": 1024}, None),
    ("claude-haiku-4-5", "medium", {"type": "enabled", "budget_tokens": 4096}, None),
    ("claude-opus-4-1-20250805", "high", {"type": "enabled", "budget_tokens": 16384}, None),
    ("claude-opus-4-20250514", "xhigh", {"type": "enabled", "budget_tokens": 24576}, None),
    ("claude-3-7-sonnet-20250219", "high", {"type": "enabled", "budget_tokens": 16384}, None),
    ("claude-opus-4-5", "low", {"type": "enabled", "budget_tokens": 1024}, None),
    # 4.6: adaptive, no xhigh (clamped to high)
    ("claude-sonnet-4-6", "none", {"type": "disabled"}, None),
    ("claude-sonnet-4-6", "low", ADAPTIVE, "low"),
    ("claude-opus-4-6", "xhigh", ADAPTIVE, "high"),
    # 4.7 / 4.8 / 5: adaptive with xhigh
    ("claude-opus-4-7", "xhigh", ADAPTIVE, "xhigh"),
    ("claude-opus-4-8", "medium", ADAPTIVE, "medium"),
    ("claude-opus-4-8", "none", None, None),  # adaptive only: "disabled" is refused, and thinking is off unasked
    ("claude-opus-5", "high", ADAPTIVE, "high"),
    ("claude-sonnet-5", "none", {"type": "disabled"}, None),
    ("claude-haiku-5-5", "none", {"type": "disabled"}, None),
    ("claude-haiku-5-5", "xhigh", ADAPTIVE, "xhigh"),
    # always-on models: NONE rides the lowest effort
    ("claude-opus-5-5", "none", ADAPTIVE, "low"),
    ("claude-fable-5-1", "none", ADAPTIVE, "low"),
    ("claude-fable-5", "high", ADAPTIVE, "high"),
    ("claude-mythos-preview", "xhigh", ADAPTIVE, "high"),
    # Sonnet 5.5: between_tools instead of disabled
    ("claude-sonnet-5-5", "none", {"type": "between_tools"}, None),
    ("claude-sonnet-5-5", "xhigh", ADAPTIVE, "xhigh"),
    # no thinking at all
    ("claude-3-5-haiku-20241022", "high", None, None),
    ("claude-3-haiku-20240307", "none", None, None),
    # unknown names: a newer Claude, a gateway's own model
    ("claude-opus-6", "none", ADAPTIVE, "low"),
    ("deepseek-chat", "high", {"type": "enabled", "budget_tokens": 4096}, None),  # 8192 - ANSWER_ROOM
    # no level: nothing sent
    ("claude-opus-4-7", None, None, None),
    ("claude-opus-5-5", None, None, None),
])
def test_thinking_rules(model, level, thinking, effort):
    assert rule_body(model, level) == (thinking, effort)


def test_every_level_on_every_rule_never_raises():
    models = ["claude-3-haiku", "claude-3-5-sonnet", "claude-3-7-sonnet", "claude-sonnet-4", "claude-opus-4-6",
              "claude-opus-4-7", "claude-haiku-5-5", "claude-sonnet-5-5", "claude-opus-5-5", "claude-fable-5-2",
              "claude-mythos-5", "claude-mythos-preview", "claude-next", "kimi-k2"]
    for model in models:
        for level in ThinkingLevel:
            for summary in (None, True, False):
                for max_tokens in (None, 1000, 1500, 100000):
                    thinking, effort = rule_body(model, level, summary, max_tokens)
                    if effort is not None:
                        assert effort in anthropic.thinking_rule(model)["efforts"]


def test_budget_is_clamped_below_max_tokens():
    assert rule_body("claude-sonnet-4-5", "high", max_tokens=8000)[0] == {"type": "enabled", "budget_tokens": 3904}
    assert rule_body("claude-sonnet-4-5", "high", max_tokens=1500)[0] == {"type": "enabled", "budget_tokens": 1024}
    assert rule_body("claude-sonnet-4-5", "low", max_tokens=1024)[0] == {"type": "disabled"}  # no room: off


def test_default_max_tokens_per_rule():
    assert body("claude-3-haiku-20240307")["max_tokens"] == 4096
    assert body("claude-3-5-sonnet-20241022")["max_tokens"] == 8192
    assert body("claude-opus-5-5")["max_tokens"] == anthropic.DEFAULT_MAX_TOKENS
    assert body("claude-opus-5-5", config={"max_tokens": 7})["max_tokens"] == 7
    assert body("glm-4.6")["max_tokens"] == 8192


def test_quirk_overrides_the_thinking_row():
    ep = endpoint("https://gw.example", quirks={"thinking_rule": {"mode": "adaptive", "efforts": ("low", "high"),
                                                                  "max_tokens": 64000}})
    sent = body("kimi-k2", config={"thinking_level": "medium"}, ep=ep)
    assert sent["thinking"] == {"type": "adaptive"} and sent["output_config"] == {"effort": "low"}
    assert sent["max_tokens"] == 64000


@pytest.mark.parametrize("model,level,summary,thinking", [
    ("claude-opus-4-7", "high", True, {"type": "adaptive", "display": "summarized"}),
    ("claude-sonnet-4-6", "low", False, {"type": "adaptive", "display": "omitted"}),
    ("claude-opus-5-5", None, True, {"type": "adaptive", "display": "summarized"}),  # on by default: made explicit
    # off by default: a summary asked for alone turns adaptive thinking on with a summarized display
    # (it used to be dropped: nothing reached the wire)
    ("claude-opus-4-7", None, True, {"type": "adaptive", "display": "summarized"}),
    ("claude-sonnet-4-6", None, True, {"type": "adaptive", "display": "summarized"}),
    ("claude-opus-4-8", None, False, None),  # no summary and thinking off: nothing to display
    ("claude-opus-4-7", "none", True, None),  # off unasked ("disabled" is refused): nothing to display
    ("claude-sonnet-5-5", "none", True, {"type": "between_tools"}),
    ("claude-sonnet-4-5", "high", True, {"type": "enabled", "budget_tokens": 16384}),  # Claude 4 always summarises
])
def test_thinking_summary_display(model, level, summary, thinking):
    assert rule_body(model, level, summary)[0] == thinking


def test_temperature_rules():  # under 2023-06-01 (pinned): the per-model rules
    ep = endpoint(quirks=LEGACY)
    assert body("claude-sonnet-4-5", config={"temperature": 0.2}, ep=ep)["temperature"] == 0.2
    assert body("claude-sonnet-4-5", config={"temperature": 1, "thinking_level": "high"}, ep=ep)["temperature"] == 1
    with pytest.raises(UnsupportedParameterError) as info:
        body("claude-sonnet-4-5", config={"temperature": 0.2, "thinking_level": "high"}, ep=ep)
    assert info.value.parameter == "temperature"
    assert body("claude-sonnet-4-5", config={"temperature": 0.2, "thinking_level": "none"}, ep=ep)["temperature"] == 0.2
    with pytest.raises(UnsupportedParameterError):
        body("claude-opus-4-7", config={"temperature": 0.5}, ep=ep)
    assert "temperature" not in body("claude-opus-4-7", config={"temperature": 1.0}, ep=ep)


@pytest.mark.parametrize("key,value", [
    ("image_config", {"aspect_ratio": "1:1"}), ("tts_config", [{"voice": "Kore"}]), ("embedding_config", {"dimensions": 8}),
])
def test_unsupported_configs(key, value):
    with pytest.raises(UnsupportedParameterError) as info:
        body(config={key: value})
    assert info.value.parameter == key


PNG = b"\x89PNG\r\n\x1a\n fake png bytes"


def test_golden_images_and_tool_results():
    uri = "data:image/png;base64," + base64.b64encode(PNG).decode()
    messages = [
        {"role": "user", "content_items": [
            {"type": "text", "text": "Compare"},
            {"type": "image_url", "image_url": "https://img.example/cat.jpg"},
            {"type": "image_url", "image_url": uri},
            {"type": "inline_data", "data": PNG, "mime_type": "image/png"},
            {"type": "inline_data", "data": b"%PDF-1.7", "mime_type": "application/pdf"},
            {"type": "image_url", "image_url": "https://docs.example/spec.pdf"},
        ]},
        {"role": "assistant", "content_items": [
            {"type": "tool_call", "name": "shot", "arguments": {"n": 2}, "tool_call_id": "toolu_1"},
            {"type": "tool_call", "name": "shot", "arguments": {}, "tool_call_id": "functions.shot:1"},
        ]},
        {"role": "user", "content_items": [
            {"type": "text", "text": "here"},
            {"type": "tool_result", "tool_call_id": "toolu_1", "text": "two shots",
             "images": ["https://img.example/a.png", uri]},
            {"type": "tool_result", "tool_call_id": "functions.shot:1", "text": ""},
        ]},
    ]
    encoded = base64.b64encode(PNG).decode()
    png_block = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": encoded}}
    assert body("claude-sonnet-4-6", messages)["messages"] == [
        {"role": "user", "content": [
            {"type": "text", "text": "Compare"},
            {"type": "image", "source": {"type": "url", "url": "https://img.example/cat.jpg"}},
            png_block, png_block,
            {"type": "document", "source": {"type": "base64", "media_type": "application/pdf",
                                            "data": base64.b64encode(b"%PDF-1.7").decode()}},
            {"type": "document", "source": {"type": "url", "url": "https://docs.example/spec.pdf"}},
        ]},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "toolu_1", "name": "shot", "input": {"n": 2}},
            {"type": "tool_use", "id": "functions_shot_1", "name": "shot", "input": {}},
        ]},
        {"role": "user", "content": [  # tool results first
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": [
                {"type": "text", "text": "two shots"},
                {"type": "image", "source": {"type": "url", "url": "https://img.example/a.png"}},
                png_block,
            ]},
            {"type": "tool_result", "tool_use_id": "functions_shot_1"},
            {"type": "text", "text": "here"},
        ]},
    ]


def test_bad_media_raises_before_sending():
    with pytest.raises(ConfigError):
        body(messages=[{"role": "user", "content_items": [{"type": "image_url", "image_url": "data:image/png;base64,@@"}]}])
    with pytest.raises(UnsupportedParameterError):
        body(messages=[{"role": "user", "content_items": [{"type": "inline_data", "data": b"x", "mime_type": "audio/wav"}]}])


def test_foreign_and_unsigned_history():
    history = [
        user("q"),
        {"role": "assistant", "content_items": [
            {"type": "thinking", "thinking": "foreign reasoning", "fidelity": {"reasoning_field": "reasoning_content"}},
            {"type": "text", "text": "", "fidelity": {"phase": "final"}},
            {"type": "inline_data", "data": PNG, "mime_type": "image/png"},
            {"type": "text", "text": "answer"},
        ]},
        {"role": "assistant", "content_items": [{"type": "thinking", "thinking": "only thinking"}]},
        user("next"),
    ]
    official = body(messages=history)["messages"]
    assert official == [  # unsigned thinking is not replayed to the first-party API; empty turns are left out
        {"role": "user", "content": [{"type": "text", "text": "q"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "answer"}]},
        {"role": "user", "content": [{"type": "text", "text": "next"}]},
    ]
    gateway = body(messages=history, ep=endpoint("https://gw.example"))["messages"]
    assert gateway[1]["content"][0] == {"type": "thinking", "thinking": "foreign reasoning"}
    assert gateway[2] == {"role": "assistant", "content": [{"type": "thinking", "thinking": "only thinking"}]}


def test_build_request_is_pure():
    messages = [user("x")]
    config = check_config({"tools": [{"name": "a", "parameters": {"type": "object"}}], "thinking_level": "low"})
    snapshot = json.dumps([messages, {k: str(v) for k, v in config.items()}])
    anthropic.build_request(endpoint(), "claude-opus-4-7", messages, config)
    assert json.dumps([messages, {k: str(v) for k, v in config.items()}]) == snapshot


# -- demo recordings ---------------------------------------------------------------------------------------


def test_demo_recordings():
    with open(os.path.join(RECORDINGS, "weather_tool_call.sse"), "rb") as handle:
        first = parse(handle.read())
    summary = summarize(first)
    assert summary["tool_calls"] == [{"name": "get_weather", "id": "toolu_demo_weather_01", "arguments": {"city": "Paris"}}]
    assert summary["thinking"] and summary["finish_reason"] == "tool_call"
    assert "signature" in collect(first)["content_items"][0]["fidelity"]
    with open(os.path.join(RECORDINGS, "weather_answer.sse"), "rb") as handle:
        second = parse(handle.read())
    assert "18 °C and sunny" in summarize(second)["text"] and second[-1]["finish_reason"] == "stop"


# -- end to end through the client ------------------------------------------------------------------------------


def test_end_to_end_through_autollmclient():
    responses = pytest.importorskip("responses")
    from agenthub import AutoLLMClient

    base = "https://anthropic-gateway.test"
    tool_turn = fixture("thinking_text_tool_use.sse")
    answer = sse(start_event({"input_tokens": 20, "cache_read_input_tokens": 1500, "output_tokens": 1}),
                 *text_block(0, "It is 18 C and sunny."), *end_events("end_turn", 9))
    config = {"tools": [{"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}],
              "thinking_level": "medium", "max_tokens": 8000}
    with responses.RequestsMock() as mock:
        mock.add(responses.POST, base + "/v1/messages", body=tool_turn, status=200, content_type="text/event-stream")
        mock.add(responses.POST, base + "/v1/messages", body=answer, status=200, content_type="text/event-stream")
        client = AutoLLMClient("claude-sonnet-4-5", client_type="anthropic", base_url=base, api_key="test-key")
        events = list(client.streaming_response_stateful(message=user("Weather in Paris?"), config=config))
        check_stream(events)
        assert summarize(events)["tool_calls"][0]["arguments"] == {"city": "Paris", "unit": "celsius"}
        result = {"role": "user", "content_items": [
            {"type": "tool_result", "tool_call_id": "toolu_fx_weather_01", "text": "18 C, sunny"}]}
        events = list(client.streaming_response_stateful(message=result, config=config))
        check_stream(events)
        assert summarize(events)["text"] == "It is 18 C and sunny."
        assert events[-1]["usage_metadata"] == {"cached_tokens": 1500, "prompt_tokens": 20, "thoughts_tokens": None,
                                                "response_tokens": 9}
        first, second = mock.calls[0].request, mock.calls[1].request
    assert first.headers["x-api-key"] == "test-key"
    assert first.headers["anthropic-version"] == "2023-06-01"
    assert "Authorization" not in first.headers
    tools = [{"name": "get_weather", "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}]
    assert json.loads(first.body) == {
        "model": "claude-sonnet-4-5", "max_tokens": 8000,
        "messages": [{"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"}]}],
        "tools": tools, "thinking": {"type": "enabled", "budget_tokens": 3904},
        "cache_control": {"type": "ephemeral"}, "stream": True,
    }
    signature = collect(parse(tool_turn))["content_items"][0]["fidelity"]["signature"]
    assert json.loads(second.body) == {
        "model": "claude-sonnet-4-5", "max_tokens": 8000,
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"}]},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "The user wants the weather in Paris. I should call get_weather.",
                 "signature": signature},
                {"type": "text", "text": "Let me check the weather."},
                {"type": "tool_use", "id": "toolu_fx_weather_01", "name": "get_weather",
                 "input": {"city": "Paris", "unit": "celsius"}},
            ]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_fx_weather_01",
                                          "content": "18 C, sunny"}]},
        ],
        "tools": tools, "thinking": {"type": "enabled", "budget_tokens": 3904},
        "cache_control": {"type": "ephemeral"}, "stream": True,
    }
    assert len(client.get_history()) == 4


def test_end_to_end_overloaded_before_first_event_is_retried():
    responses = pytest.importorskip("responses")
    from agenthub import AutoLLMClient

    base = "https://anthropic-gateway.test"
    overloaded = b'event: error\ndata: {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}\n\n'
    with responses.RequestsMock() as mock:
        mock.add(responses.POST, base + "/v1/messages", body=overloaded, status=200, content_type="text/event-stream")
        mock.add(responses.POST, base + "/v1/messages", body=sse(start_event(), *text_block(0, "ok"), *end_events()),
                 status=200, content_type="text/event-stream")
        client = AutoLLMClient("claude-opus-4-7", client_type="ant-messages", base_url=base, api_key="test-key")
        import agenthub.client as client_module

        original, client_module.BACKOFF_BASE = client_module.BACKOFF_BASE, 0.0
        try:
            events = list(client.streaming_response(messages=[user("hi")]))
        finally:
            client_module.BACKOFF_BASE = original
        assert summarize(events)["text"] == "ok" and len(mock.calls) == 2


def test_parse_stream_direct_sse_events():
    """The parser takes SSEEvent objects (what the transport's framing yields)."""
    events = [SSEEvent(json.dumps(payload), event=name) for name, payload in
              [start_event(), *text_block(0, "x"), *end_events()]]
    out = list(drive(anthropic.parse_stream(iter(events), CLIENT), CLIENT))
    check_stream(out)
    assert summarize(out)["text"] == "x"


# -- property: any block sequence replays in order, each signature with its own thinking -------------------------


def _random_turn(rng):
    """(stream events, the projection a faithful replay must give) for a random sequence of blocks."""
    events = [start_event()]
    expect = []  # ("text", str) runs and ("thinking", text, sig) / ("redacted", d) / ("server", id) / ("tool", id)
    citations = []
    substantive = False
    for index in range(rng.randint(1, 9)):
        kind = rng.choice(["text", "text", "cited", "thinking", "omitted", "redacted", "server", "result", "tool"])
        tag = "{}{}".format(kind, index)

        def add(payload, event="content_block_delta"):
            payload.setdefault("index", index)
            events.append((event, payload))

        def delta(d):
            add({"type": "content_block_delta", "delta": d})

        if kind in ("text", "cited"):
            add({"type": "content_block_start", "content_block": {"type": "text", "text": ""}}, "content_block_start")
            if kind == "cited":
                citation = {"type": "char_location", "cited_text": tag}
                citations.append(citation)
                delta({"type": "citations_delta", "citation": citation})
            pieces = [tag + "-a", "-b"][:rng.randint(1, 2)]
            for piece in pieces:
                delta({"type": "text_delta", "text": piece})
            text = "".join(pieces)
            if expect and expect[-1][0] == "text":
                expect[-1] = ("text", expect[-1][1] + text)
            else:
                expect.append(("text", text))
            substantive = True
        elif kind in ("thinking", "omitted"):
            add({"type": "content_block_start", "content_block": {"type": "thinking", "thinking": "", "signature": ""}},
                "content_block_start")
            text = "" if kind == "omitted" else tag + " thought"
            if text:
                delta({"type": "thinking_delta", "thinking": text[:3]})
                delta({"type": "thinking_delta", "thinking": text[3:]})
            delta({"type": "signature_delta", "signature": "sig-" + tag})
            expect.append(("thinking", text, "sig-" + tag))
        elif kind == "redacted":
            add({"type": "content_block_start", "content_block": {"type": "redacted_thinking", "data": "red-" + tag}},
                "content_block_start")
            expect.append(("redacted", "red-" + tag))
        elif kind == "server":
            add({"type": "content_block_start", "content_block": {"type": "server_tool_use", "id": tag, "name": "web_search",
                                                                  "input": {}}}, "content_block_start")
            delta({"type": "input_json_delta", "partial_json": '{"q": "'})
            delta({"type": "input_json_delta", "partial_json": tag + '"}'})
            expect.append(("server", tag))
            substantive = True  # server blocks must be sent back (pause_turn): the turn is not empty
        elif kind == "result":
            add({"type": "content_block_start", "content_block": {"type": "web_search_tool_result", "tool_use_id": tag,
                                                                  "content": []}}, "content_block_start")
            expect.append(("server", tag))
            substantive = True
        else:
            add({"type": "content_block_start", "content_block": {"type": "tool_use", "id": tag, "name": "f", "input": {}}},
                "content_block_start")
            delta({"type": "input_json_delta", "partial_json": '{"k": 1}'})
            expect.append(("tool", tag))
            substantive = True
        add({"type": "content_block_stop"}, "content_block_stop")
    events.extend(end_events())
    return sse(*events), expect, citations, substantive


def _project(blocks):
    out = []
    citations = []
    for block in blocks:
        kind = block["type"]
        if kind == "text":
            citations.extend(block.get("citations") or [])
            if out and out[-1][0] == "text":
                out[-1] = ("text", out[-1][1] + block["text"])
            else:
                out.append(("text", block["text"]))
        elif kind == "thinking":
            out.append(("thinking", block["thinking"], block["signature"]))
        elif kind == "redacted_thinking":
            out.append(("redacted", block["data"]))
        elif kind == "tool_use":
            out.append(("tool", block["id"]))
        else:
            out.append(("server", block.get("id") or block.get("tool_use_id")))
            if kind == "server_tool_use":
                assert block["input"] == {"q": block["id"]}
    return out, citations


def test_any_block_sequence_replays_in_order():
    import random

    rng = random.Random(20260707)
    for _ in range(400):
        data, expect, citations, substantive = _random_turn(rng)
        if not substantive:
            with pytest.raises(EmptyResponseError):
                parse(data)
            continue
        message = collect(parse(data))
        replay = body(messages=[user("q"), message])["messages"][1]["content"]
        projected, replayed_citations = _project(replay)
        assert projected == expect, data.decode()
        assert replayed_citations == citations


@pytest.mark.parametrize("client_type", ["anthropic", "bedrock"])
def test_a_tool_turn_begun_without_thinking_is_continued_without_it(client_type, caplog):
    """With thinking enabled, Claude takes a request whose last assistant message before the last tool results does
    not start with a thinking block as a 400 ("When `thinking` is enabled, a final `assistant` message must start
    with a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks) ... To avoid this
    requirement, disable `thinking`"): a tool turn another provider began (its thinking is not Claude's) goes on
    without thinking, with a warning; a new turn, or Claude's own signed turn, thinks as asked."""
    import logging

    from agenthub import AutoLLMClient

    ask = {"role": "user", "content_items": [{"type": "text", "text": "weather?"}]}
    called = {"role": "assistant", "content_items": [
        {"type": "thinking", "thinking": "plan", "fidelity": {"encrypted_content": "gAAA"}},  # (an OpenAI reasoning)
        {"type": "tool_call", "name": "get_weather", "arguments": {}, "tool_call_id": "call_1"}]}
    result = {"role": "user", "content_items": [{"type": "tool_result", "tool_call_id": "call_1", "text": "18C"}]}
    config = {"tools": [{"name": "get_weather"}], "thinking_level": "high"}
    if client_type == "bedrock":
        client = AutoLLMClient("us.anthropic.claude-sonnet-4-5-20250929-v1:0", client_type="bedrock",
                               base_url="http://127.0.0.1:9", api_key="ABSKbedrock-api-key-0003")

        def thinking(messages):
            return (client.plan(messages, config).body.get("additionalModelRequestFields") or {}).get("thinking")
    else:
        client = AutoLLMClient("claude-sonnet-4-5", client_type="anthropic", api_key="k")

        def thinking(messages):
            return client.plan(messages, config).body.get("thinking")
    with caplog.at_level(logging.WARNING, logger="agenthub"):
        assert thinking([ask, called, result]) is None
    assert [record.getMessage() for record in caplog.records] == [
        "{}: the tool turn in progress began without a thinking block of Claude's (another provider's, or thinking "
        "was off): this request goes without thinking, as the API requires".format(client_type)]
    caplog.clear()
    thanks = {"role": "user", "content_items": [{"type": "text", "text": "thanks"}]}
    answered = {"role": "assistant", "content_items": [{"type": "text", "text": "18C"}]}
    assert thinking([ask, called, result, answered, thanks]) == {"type": "enabled", "budget_tokens": 16384}
    signed = {"role": "assistant", "content_items": [
        {"type": "thinking", "thinking": "plan", "fidelity": {"signature": "c2ln"}}] + called["content_items"][1:]}
    assert thinking([ask, signed, result]) == {"type": "enabled", "budget_tokens": 16384}
    assert caplog.records == []


@pytest.mark.parametrize("kind", ["Infinity", "7", "null", "\"\"", "[[[1]]]", "{\"a\": 1}"])
def test_a_content_block_with_no_type_is_left_out_and_the_answer_goes_back(kind):
    """A block whose ``type`` is no string is none the API sends: it was kept as a server block, whose NaN or
    nesting the next turn refused (a ConfigError on every later turn); it is left out."""
    events = [
        ("message_start", '{"type":"message_start","message":{"id":"m","role":"assistant","content":[],'
                          '"usage":{"input_tokens":3,"output_tokens":1}}}'),
        ("content_block_start", '{"type":"content_block_start","index":0,"content_block":{"type":' + kind + '}}'),
        ("content_block_stop", '{"type":"content_block_stop","index":0}'),
        ("content_block_start", '{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}'),
        ("content_block_delta", '{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Hi."}}'),
        ("content_block_stop", '{"type":"content_block_stop","index":1}'),
        ("message_delta", '{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":2}}'),
        ("message_stop", '{"type":"message_stop"}')]
    data = "".join("event: {}\ndata: {}\n\n".format(name, body) for name, body in events).encode()
    message = collect(run_parser(anthropic.parse_stream, [data], client="anthropic"))
    assert message["content_items"] == [{"type": "text", "text": "Hi."}]
    history = [{"role": "user", "content_items": [{"type": "text", "text": "hi"}]}, message,
               {"role": "user", "content_items": [{"type": "text", "text": "and?"}]}]
    body = __import__("agenthub").AutoLLMClient("claude-sonnet-4-6", api_key="k").plan(history).body
    assert body["messages"][1] == {"role": "assistant", "content": [{"type": "text", "text": "Hi."}]}
