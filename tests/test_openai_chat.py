"""Chat Completions: recorded streams, own fixtures for each quirk, request goldens, round trip."""

import json

import pytest

from agenthub import check_stream, collect
from agenthub.errors import (ConfigError, EmptyResponseError, RateLimitError, ServerError, StreamProtocolError,
                             ToolCallArgumentParseError, UnsupportedParameterError, UpstreamError)
from agenthub.providers._common import Endpoint
from agenthub.providers.openai_chat import build_request, map_usage, parse_stream
from agenthub.types import PromptCaching, ThinkingLevel
from agenthub.validate import check_config
from conftest import run_parser, sent, splits, strip_ids, summarize, wire_params


def run(data, **kwargs):
    return run_parser(parse_stream, [data], "openai-chat", tool_id_prefix="syn_", **kwargs)


def sse(*chunks, done=True):
    body = "".join("data: " + (c if isinstance(c, str) else json.dumps(c)) + "\n\n" for c in chunks)
    return (body + ("data: [DONE]\n\n" if done else "")).encode("utf-8")


def chunk(delta=None, finish=None, **extra):
    c = {"id": "x", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta or {}, "finish_reason": finish}]}
    c.update(extra)
    return c


def expected_usage(raw):
    """The sidecar's raw figures mapped to the exclusive buckets."""
    if raw is None:
        return None
    cached = raw.get("cached")
    reasoning = raw.get("reasoning")
    return {"cached_tokens": cached, "prompt_tokens": raw["input"] - (cached or 0),
            "thoughts_tokens": reasoning, "response_tokens": raw["output"] - (reasoning or 0)}


@pytest.mark.parametrize("name,data,sidecar", wire_params("openai_chat"))
def test_recorded_stream_matches_sidecar(name, data, sidecar):
    expect = sidecar["expect"]
    if expect["error"]:
        with pytest.raises(UpstreamError) as info:
            run(data)
        error = info.value
        assert error.message in expect["error"] and error.error_type in expect["error"]
        raw = sidecar["expect_extras"].get("error_raw") or {}
        assert (error.error_type, error.code) == (raw.get("type"), raw.get("code"))
        if "status_code" in raw:
            assert error.status == raw["status_code"]
        return
    events = run(data)
    check_stream(events)
    got = summarize(events)
    assert got["text"] == expect["text"]
    assert got["thinking"] == expect["thinking"]
    assert got["tool_calls"] == expect["tool_calls"]
    assert got["finish_reason"] == expect["finish_reason"]
    assert got["usage"] == expected_usage(expect["usage"])
    fields = {i["fidelity"]["reasoning_field"] for e in events for i in e["content_items"]
              if i["type"] == "thinking" and "reasoning_field" in i["fidelity"]}
    assert sorted(fields) == sorted(sidecar.get("expect_extras", {}).get("reasoning_field", []))
    for chunks in splits(data, samples=10):
        assert strip_ids(run_parser(parse_stream, chunks, "openai-chat", tool_id_prefix="syn_")) == strip_ids(events)


def test_text_reasoning_refusal_and_heartbeats():
    data = (b": keep-alive\n\n" + sse(
        {"id": "x", "object": "chat.completion.chunk", "choices": []},  # heartbeat without choices
        chunk({"role": "assistant", "content": "", "reasoning_content": "think "}),
        chunk({"reasoning": "more"}),
        chunk({"reasoning_content": "same", "reasoning": "same"}),
        chunk({"content": "Hel"}), chunk({"content": "lo"}),
        chunk({"refusal": "I can't"}),
        chunk({}, "stop"),
        {"id": "x", "choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}},
    ))
    events = run(data)
    check_stream(events)
    assert [e["content_items"] for e in events[1:-1]] == [
        [{"type": "thinking", "thinking": "think ", "fidelity": {"reasoning_field": "reasoning_content"}}],
        [{"type": "thinking", "thinking": "more", "fidelity": {"reasoning_field": "reasoning"}}],
        [{"type": "thinking", "thinking": "same", "fidelity": {"reasoning_field": "both"}}],
        [{"type": "text", "text": "Hel"}], [{"type": "text", "text": "lo"}],
        [{"type": "text", "text": "I can't", "fidelity": {"refusal": True}}],
    ]
    assert events[-1]["usage_metadata"] == {"cached_tokens": None, "prompt_tokens": 10,
                                            "thoughts_tokens": None, "response_tokens": 5}
    assert events[-1]["finish_reason"] == "stop"


def test_only_choice_zero_is_followed():
    data = sse({"choices": [{"index": 1, "delta": {"content": "B"}}, {"index": 0, "delta": {"content": "A"}}]},
               {"choices": [{"index": 1, "delta": {"content": "B2"}, "finish_reason": "stop"}]},
               chunk({}, "stop"))
    assert summarize(run(data))["text"] == "A"


@pytest.mark.parametrize("reason,expected", [("stop", "stop"), ("length", "length"), ("tool_calls", "tool_call"),
                                             ("content_filter", "unknown"), ("eos", "unknown")])
def test_finish_reasons(reason, expected):
    assert run(sse(chunk({"content": "x"}), chunk({}, reason)))[-1]["finish_reason"] == expected


def test_tool_calls_with_finish_stop_still_finish_tool_call():
    data = sse(chunk({"tool_calls": [{"index": 0, "id": "c", "function": {"name": "f", "arguments": "{}"}}]}),
               chunk({}, "stop"))
    events = run(data)
    check_stream(events)
    assert events[-1]["finish_reason"] == "tool_call"


def test_finish_reason_then_clean_end_without_done_is_complete():
    events = run(sse(chunk({"content": "x"}), chunk({}, "stop"), done=False))
    assert events[-1]["finish_reason"] == "stop"


@pytest.mark.parametrize("data", [
    sse(chunk({"content": "x"}), done=False),  # no finish, no [DONE]
    sse(chunk({"content": "x"}), done=False)[:-3],  # cut inside an event
    b"",
])
def test_cut_stream_is_a_protocol_error(data):
    with pytest.raises(StreamProtocolError):
        run(data)


def test_tool_call_cut_by_length_raises_parse_error():
    data = sse(chunk({"tool_calls": [{"index": 0, "id": "call_1", "function": {"name": "write", "arguments": ""}}]}),
               chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"path": "a.txt", "text": "hel'}}]}),
               chunk({}, "length"))
    with pytest.raises(ToolCallArgumentParseError) as info:
        run(data)
    assert (info.value.tool_name, info.value.tool_call_id, info.value.client) == ("write", "call_1", "openai-chat")
    assert info.value.raw_arguments_preview == '{"path": "a.txt", "text": "hel'


def test_in_stream_errors():
    with pytest.raises(ServerError) as info:
        run(sse(chunk({"content": "x"}), {"error": {"message": "Overloaded", "type": "overloaded_error"}}))
    assert info.value.message == "Overloaded" and info.value.status == 529 and info.value.retryable
    with pytest.raises(RateLimitError) as info:
        run(b'event: error\ndata: {"error": {"message": "slow down", "type": "rate_limit_error"}}\n\n')
    assert info.value.status == 429
    with pytest.raises(UpstreamError, match="not json"):
        run(b"event: error\ndata: not json\n\n")


def test_thinking_only_turn_is_empty_response():
    with pytest.raises(EmptyResponseError) as info:
        run(sse(chunk({"reasoning_content": "hmm"}), chunk({}, "length"),
                {"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 7}}))
    assert info.value.finish_reason == "length"
    assert info.value.usage_metadata["response_tokens"] == 7
    # it says what to do: the output budget went to thinking
    assert str(info.value) == ("the openai-chat response finished with no text, tool call or media "
                               "(finish_reason=length): max_tokens ran out before an answer began (thinking "
                               "spends them too): raise max_tokens, or lower thinking_level")
    with pytest.raises(EmptyResponseError) as info:
        run(sse(chunk({"reasoning_content": "hmm"}), chunk({}, "stop")))
    assert str(info.value) == "the openai-chat response finished with no text, tool call or media (finish_reason=stop)"


@pytest.mark.parametrize("raw,expected", [
    ({"prompt_tokens": 100, "completion_tokens": 50, "prompt_tokens_details": {"cached_tokens": 40},
      "completion_tokens_details": {"reasoning_tokens": 30}}, (40, 60, 30, 20)),
    # xAI style: total = prompt + completion + reasoning, so completion already excludes reasoning
    ({"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 35,
      "completion_tokens_details": {"reasoning_tokens": 20}}, (None, 10, 20, 5)),
    # OpenRouter quirk: reasoning larger than completion: never negative
    ({"prompt_tokens": 10, "completion_tokens": 5, "completion_tokens_details": {"reasoning_tokens": 9}},
     (None, 10, 9, 5)),
    ({"prompt_tokens": 7, "completion_tokens": 3, "prompt_cache_hit_tokens": 4}, (4, 3, None, 3)),
    ({}, (None, None, None, None)),
])
def test_usage_buckets(raw, expected):
    usage = map_usage(raw)
    assert (usage["cached_tokens"], usage["prompt_tokens"], usage["thoughts_tokens"], usage["response_tokens"]) == expected


# -- requests -------------------------------------------------------------------------------------

ENDPOINT = Endpoint("openai-chat", "https://api.example.com/v1/", "sk-test", {"X-Title": "t"})
TOOLS = [{"name": "get_weather", "description": "Weather.", "parameters": {"type": "object", "properties": {
    "city": {"type": "string"}}, "required": ["city"]}}, {"name": "noargs"}]
USER = {"role": "user", "content_items": [{"type": "text", "text": "Hi"}]}


#: hosts that read reasoning back (their registry rows' reasoning_field): a host of no row is sent none
READS_CONTENT = Endpoint("openai-chat", "https://api.example.com/v1/", "sk-test",
                         quirks={"reasoning_field": "reasoning_content"})
READS_REASONING = Endpoint("openai-chat", "https://api.example.com/v1/", "sk-test",
                           quirks={"reasoning_field": "reasoning", "reasoning_details": True})


def body(messages, config=None, endpoint=ENDPOINT):
    return build_request(endpoint, "m", messages, check_config(config or {})).body


def test_request_golden_every_config_field():
    request = sent(build_request(ENDPOINT, "gpt-x", [USER], check_config({
        "max_tokens": 100, "temperature": 0.5, "tools": TOOLS, "tool_choice": "required",
        "system_prompt": "Be brief.", "thinking_summary": True})), ENDPOINT)
    assert request.url == "https://api.example.com/v1/chat/completions"
    assert request.method == "POST" and request.stream
    assert request.headers == {"Content-Type": "application/json", "Accept": "text/event-stream",
                               "Authorization": "Bearer sk-test", "X-Title": "t"}
    assert request.body == {
        "model": "gpt-x",
        "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}],
        "stream": True,
        "stream_options": {"include_usage": True},
        "max_completion_tokens": 100,
        "temperature": 0.5,
        "tools": [
            {"type": "function", "function": {"name": "get_weather", "description": "Weather.",
                                              "parameters": TOOLS[0]["parameters"]}},
            {"type": "function", "function": {"name": "noargs", "parameters": {"type": "object", "properties": {}}}},
        ],
        "tool_choice": "required",
    }
    assert "sk-test" not in repr(request)


@pytest.mark.parametrize("choice,wire", [
    ("auto", "auto"), ("none", "none"), ("required", "required"),
    (["get_weather"], {"type": "function", "function": {"name": "get_weather"}}),
    (["get_weather", "noargs"], {"type": "allowed_tools", "allowed_tools": {"mode": "required", "tools": [
        {"type": "function", "function": {"name": "get_weather"}}, {"type": "function", "function": {"name": "noargs"}}]}}),
])
def test_tool_choice(choice, wire):
    assert body([USER], {"tools": TOOLS, "tool_choice": choice})["tool_choice"] == wire


def test_vendor_quirks_are_data():
    endpoint = Endpoint("openai-chat", "https://x/v1", "k", quirks={
        "max_tokens_field": "max_tokens", "stream_usage": False, "tool_choice": ("auto",),
        "thinking": {"none": {"thinking": {"type": "disabled"}}, "high": {"thinking": {"type": "enabled"}}}})
    wire = body([USER], {"max_tokens": 5, "thinking_level": ThinkingLevel.NONE}, endpoint)
    assert wire["max_tokens"] == 5 and "max_completion_tokens" not in wire and "stream_options" not in wire
    assert wire["thinking"] == {"type": "disabled"}
    with pytest.raises(UnsupportedParameterError) as info:
        body([USER], {"tools": TOOLS, "tool_choice": "required"}, endpoint)
    assert info.value.parameter == "tool_choice"
    # a generic server gets no thinking switch at all
    assert "thinking" not in body([USER], {"thinking_level": "high"})


@pytest.mark.parametrize("config,parameter", [
    ({"prompt_caching": PromptCaching.DISABLE}, "prompt_caching"),
    ({"image_config": {"aspect_ratio": "1:1"}}, "image_config"),
    ({"tts_config": [{"voice": "Kore"}]}, "tts_config"),
])
def test_unsupported_parameters(config, parameter):
    with pytest.raises(UnsupportedParameterError) as info:
        body([USER], config)
    assert (info.value.parameter, info.value.client) == (parameter, "openai-chat")


PNG = b"\x89PNG\r\n\x1a\nfake"


def test_content_items_to_messages():
    messages = [
        {"role": "user", "content_items": [
            {"type": "text", "text": "Look:"},
            {"type": "image_url", "image_url": "https://x/cat.jpg"},
            {"type": "inline_data", "data": PNG, "mime_type": "image/png"},
        ]},
        {"role": "assistant", "content_items": [
            {"type": "thinking", "thinking": "let me ", "fidelity": {"reasoning_field": "reasoning_content"}},
            {"type": "thinking", "thinking": "see", "fidelity": {"reasoning_field": "reasoning_content"}},
            {"type": "text", "text": "Checking."},
            {"type": "tool_call", "name": "get_weather", "arguments": {"city": "Zürich"}, "tool_call_id": "c1"},
            {"type": "tool_call", "name": "noargs", "arguments": {}, "tool_call_id": "c2"},
        ]},
        {"role": "user", "content_items": [
            {"type": "tool_result", "text": "20 C", "tool_call_id": "c1", "images": ["data:image/png;base64,iVBO"]},
            {"type": "tool_result", "text": "ok", "tool_call_id": "c2"},
            {"type": "text", "text": "And?"},
        ]},
    ]
    assert body(messages, endpoint=READS_CONTENT)["messages"] == [
        {"role": "user", "content": [
            {"type": "text", "text": "Look:"},
            {"type": "image_url", "image_url": {"url": "https://x/cat.jpg"}},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgpmYWtl"}},
        ]},
        {"role": "assistant", "content": "Checking.", "reasoning_content": "let me see", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city":"Zürich"}'}},
            {"id": "c2", "type": "function", "function": {"name": "noargs", "arguments": "{}"}},
        ]},
        {"role": "tool", "tool_call_id": "c1", "content": "20 C"},
        {"role": "tool", "tool_call_id": "c2", "content": "ok"},
        {"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBO"}},
            {"type": "text", "text": "And?"},
        ]},
    ]


def test_assistant_without_text_and_refusal_replay():
    messages = [USER, {"role": "assistant", "content_items": [
        {"type": "tool_call", "name": "f", "arguments": {}, "tool_call_id": "c"}]},
        {"role": "user", "content_items": [{"type": "tool_result", "text": "r", "tool_call_id": "c"}]},
        {"role": "assistant", "content_items": [{"type": "text", "text": "No.", "fidelity": {"refusal": True}}]},
        USER]
    wire = body(messages)["messages"]
    assert wire[1] == {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}
    assert wire[2] == {"role": "tool", "tool_call_id": "c", "content": "r"}
    assert wire[3] == {"role": "assistant", "content": "", "refusal": "No."}


def test_malformed_data_uri_is_a_config_error_before_sending():
    with pytest.raises(ConfigError, match="base64"):
        body([{"role": "user", "content_items": [{"type": "image_url", "image_url": "data:image/png;base64,@@@"}]}])


def test_collected_message_reproduces_the_same_wire_fields():
    """stream -> collect -> next request gives back what the server sent: reasoning field, text, calls."""
    data = sse(
        chunk({"role": "assistant", "reasoning": "Need weather."}),
        chunk({"content": "Let me check."}),
        chunk({"tool_calls": [{"index": 0, "id": "call_A", "type": "function",
                               "function": {"name": "get_weather", "arguments": ""}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"city":"Paris"}'}}]}),
        chunk({"tool_calls": [{"index": 1, "id": "call_B", "type": "function",
                               "function": {"name": "noargs", "arguments": "{}"}}]}),
        chunk({}, "tool_calls"),
    )
    events = run(data)
    check_stream(events)
    message = collect(events)
    wire = body([USER, message], endpoint=READS_REASONING)["messages"][1]
    assert wire == {
        "role": "assistant", "content": "Let me check.", "reasoning": "Need weather.",
        "tool_calls": [
            {"id": "call_A", "type": "function", "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'}},
            {"id": "call_B", "type": "function", "function": {"name": "noargs", "arguments": "{}"}},
        ],
    }


def test_deepseek_echo_of_empty_reasoning_on_tool_turns():
    endpoint = Endpoint("openai-chat", "https://api.deepseek.com", "k", quirks={
        "reasoning_field": "reasoning_content", "echo_reasoning_on_tool_turns": True})
    call = {"type": "tool_call", "name": "f", "arguments": {}, "tool_call_id": "c"}
    messages = [USER,
                {"role": "assistant", "content_items": [
                    {"type": "thinking", "thinking": "t", "fidelity": {"reasoning_field": "reasoning_content"}}, call]},
                {"role": "user", "content_items": [{"type": "tool_result", "text": "r", "tool_call_id": "c"}]},
                {"role": "assistant", "content_items": [dict(call, tool_call_id="d")]},
                {"role": "user", "content_items": [{"type": "tool_result", "text": "r", "tool_call_id": "d"}]}]
    wire = body(messages, endpoint=endpoint)["messages"]
    assert wire[1]["reasoning_content"] == "t"
    assert wire[3]["reasoning_content"] == ""
    # foreign thinking (an Anthropic signature) goes through the vendor's field
    foreign = [USER, {"role": "assistant", "content_items": [
        {"type": "thinking", "thinking": "x", "fidelity": {"signature": "s"}}, {"type": "text", "text": "y"}]}, USER]
    assert body(foreign, endpoint=endpoint)["messages"][1]["reasoning_content"] == "x"
    assert "reasoning_content" not in body(foreign)["messages"][1]


def test_content_streamed_as_parts_with_thinking_chunks():
    data = sse(chunk({"role": "assistant", "content": [{"type": "thinking", "thinking": [{"type": "text", "text": "Hmm."}]}]}),
               chunk({"content": [{"type": "text", "text": "Four."}]}), chunk({}, "stop"))
    events = run(data)
    check_stream(events)
    assert [e["content_items"] for e in events[1:-1]] == [
        [{"type": "thinking", "thinking": "Hmm.", "fidelity": {"reasoning_field": "content"}}],
        [{"type": "text", "text": "Four."}],
    ]


def test_gemini_compat_thought_signature_on_tool_calls_round_trips():
    extra = {"google": {"thought_signature": "c2lnbmF0dXJl"}}
    data = sse(chunk({"role": "assistant", "tool_calls": [{"id": "function-call-1", "type": "function", "extra_content": extra,
                                                           "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'}}]}),
               chunk({}, "stop"))
    events = run(data)
    check_stream(events)
    message = collect(events)
    assert message["content_items"] == [{"type": "tool_call", "name": "get_weather", "arguments": {"city": "Paris"},
                                         "tool_call_id": "function-call-1", "fidelity": {"extra_content": extra}}]
    wire = body([USER, message])["messages"][1]
    assert wire["tool_calls"] == [{"id": "function-call-1", "type": "function", "extra_content": extra,
                                   "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'}}]


def test_openrouter_reasoning_details_are_joined_and_sent_back():
    data = sse(
        chunk({"role": "assistant", "reasoning": "Two", "reasoning_details": [
            {"type": "reasoning.text", "text": "Two", "format": "anthropic-claude-v1", "index": 0}]}),
        chunk({"reasoning": " plus two.", "reasoning_details": [
            {"type": "reasoning.text", "text": " plus two.", "format": "anthropic-claude-v1", "index": 0}]}),
        chunk({"reasoning_details": [{"type": "reasoning.text", "signature": "c2ln", "format": "anthropic-claude-v1",
                                      "index": 0}]}),
        chunk({"reasoning_details": [{"type": "reasoning.encrypted", "data": "ZW5j", "index": 1}]}),
        chunk({"content": "4"}), chunk({}, "stop"))
    events = run(data)
    check_stream(events)
    details = [{"type": "reasoning.text", "text": "Two plus two.", "format": "anthropic-claude-v1", "index": 0,
                "signature": "c2ln"}, {"type": "reasoning.encrypted", "data": "ZW5j", "index": 1}]
    message = collect(events)
    assert message["content_items"] == [
        {"type": "thinking", "thinking": "Two plus two.", "fidelity": {"reasoning_field": "reasoning"}},
        {"type": "thinking", "thinking": "", "fidelity": {"reasoning_details": details}},  # where the reasoning ended
        {"type": "text", "text": "4"},
    ]
    assert body([USER, message], endpoint=READS_REASONING)["messages"][1] == {
        "role": "assistant", "content": "4", "reasoning": "Two plus two.", "reasoning_details": details}
    assert body([USER, message])["messages"][1] == {"role": "assistant", "content": "4"}  # (a host of no row)
