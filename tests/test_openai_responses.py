"""OpenAI Responses API: recorded streams, own fixtures, request goldens, round trips, end to end."""

import json
import os

import pytest

from conftest import HERE, run_parser, sent, splits, strip_ids, summarize, wire_params

from agenthub.errors import (
    ConfigError,
    RateLimitError,
    ServerError,
    StreamProtocolError,
    ToolCallArgumentParseError,
    UnsupportedParameterError,
    UpstreamError,
)
from agenthub.providers._common import Endpoint
from agenthub.providers.openai_responses import (
    EFFORTS,
    build_request,
    clamp_effort,
    map_usage,
    model_profile,
    parse_stream,
)
from agenthub.stream import check_stream, collect
from agenthub.types import PromptCaching, ThinkingLevel
from agenthub.validate import check_config

FIXTURES = os.path.join(HERE, "fixtures", "openai_responses")
CLIENT = "openai-responses"
TERMINALS = (b"response.completed", b"response.incomplete")


def fixture(name):
    with open(os.path.join(FIXTURES, name), "rb") as handle:
        return handle.read()


def run(chunks, **kwargs):
    return run_parser(parse_stream, chunks, CLIENT, tool_id_prefix="call_test_", **kwargs)


def outcome(data, chunks=None):
    """('events', events) or ('error', exception) for a whole body or given chunks."""
    try:
        return "events", run(chunks if chunks is not None else [data])
    except Exception as exc:  # noqa: BLE001 - compared below
        return "error", exc


def same_outcome(a, b):
    if a[0] != b[0]:
        return False
    if a[0] == "events":
        return strip_ids(a[1]) == strip_ids(b[1])
    return type(a[1]) is type(b[1]) and str(a[1]) == str(b[1])


def sse_payloads(data):
    """The JSON payloads of a body (for reading what a recording says, independently of the parser)."""
    out = []
    for line in data.decode("utf-8").splitlines():
        if line.startswith("data:"):
            text = line[5:].strip()
            if text and text != "[DONE]":
                try:
                    out.append(json.loads(text))
                except ValueError:
                    pass
    return out


def expected_usage(raw):
    if raw is None:
        return {"cached_tokens": None, "prompt_tokens": None, "thoughts_tokens": None, "response_tokens": None}
    return {
        "cached_tokens": raw["cached"],
        "prompt_tokens": raw["input"] - raw["cached"],
        "thoughts_tokens": raw["reasoning"],
        "response_tokens": raw["output"] - raw["reasoning"],
    }


# -- recorded streams (../shared/wire/openai_responses) -------------------------------------------


@pytest.mark.parametrize("name,data,sidecar", wire_params("openai_responses"))
def test_recorded_stream(name, data, sidecar):
    expect = sidecar["expect"]
    kind, result = outcome(data)
    if expect["error"]:
        assert kind == "error", "expected an in-stream error"
        assert isinstance(result, UpstreamError)
        assert "{}: {}".format(result.error_type, result.message) == expect["error"]
        assert result.client == CLIENT
        assert result.status is None or isinstance(result.status, int)
        return
    assert kind == "events", result
    events = result
    check_stream(events)
    got = summarize(events)
    assert got["text"] == expect["text"]
    assert got["thinking"] == expect["thinking"]
    assert got["finish_reason"] == expect["finish_reason"]
    assert got["usage"] == expected_usage(expect["usage"])
    assert [{"name": c["name"], "id": c["id"], "arguments": c["arguments"]} for c in got["tool_calls"]] == \
        expect["tool_calls"]
    # what the next request needs: encrypted reasoning exactly as output_item.done had it, phases, no item ids
    payloads = sse_payloads(data)
    done_items = [p["item"] for p in payloads if p.get("type") == "response.output_item.done"]
    assert [i["type"] for i in done_items] == sidecar["expect_extras"]["output_item_types"]
    message = collect(events)
    thinking = [i for i in message["content_items"] if i["type"] == "thinking"]
    reasoning_done = [i for i in done_items if i["type"] == "reasoning"]
    assert [t["fidelity"].get("encrypted_content") for t in thinking] == \
        [i.get("encrypted_content") for i in reasoning_done]
    phases = [i.get("phase") for i in done_items if i["type"] == "message"]
    texts = [i for i in message["content_items"] if i["type"] == "text"]
    assert [(t.get("fidelity") or {}).get("phase") for t in texts] == phases
    flat = json.dumps(message, default=str)
    for item in done_items:
        assert item["id"] not in flat, "provider item ids never reach the message"


@pytest.mark.parametrize("name,data,sidecar", wire_params("openai_responses"))
def test_recorded_stream_any_chunking(name, data, sidecar):
    whole = outcome(data)
    for chunks in splits(data, samples=15):
        assert same_outcome(outcome(data, chunks), whole)


@pytest.mark.parametrize("name,data,sidecar", wire_params("openai_responses"))
def test_recorded_stream_cut_is_a_protocol_error(name, data, sidecar):
    if sidecar["expect"]["error"]:
        pytest.skip("the error arrives before the terminal event")
    end = max(data.rfind(marker) for marker in TERMINALS)
    event_start = data.rfind(b"\n\n", 0, end) + 2
    for cut in sorted({event_start, event_start - 1, event_start // 2, len(data) // 3, 1}):
        with pytest.raises(StreamProtocolError):
            run([data[:cut]])


def test_recorded_reasoning_summary_parts_come_back_exactly():
    params = {p.id: p.values for p in wire_params("openai_responses") if p.id}
    if "o3mini_reasoning_summary" not in params:
        pytest.skip("../shared/wire is absent")
    _, data, _ = params["o3mini_reasoning_summary"]
    message = collect(run([data]))
    done = [p["item"] for p in sse_payloads(data)
            if p.get("type") == "response.output_item.done" and p["item"]["type"] == "reasoning"][0]
    request = next_request("o3-mini", [user("How do I cross the street?"), message, user("Thanks")])
    reasoning = [i for i in request.body["input"] if i["type"] == "reasoning"]
    assert reasoning == [{"type": "reasoning",
                          "summary": [{"type": "summary_text", "text": s["text"]} for s in done["summary"]],
                          "encrypted_content": done["encrypted_content"]}]


# -- own fixtures ---------------------------------------------------------------------------------

FIXTURE_EXPECT = {
    "interleaved_parallel_calls.sse": {
        "text": "", "thinking": "", "finish_reason": "tool_call",
        "tool_calls": [{"name": "get_weather", "id": "call_alpha", "arguments": {"city": "Paris"}},
                       {"name": "get_time", "id": "call_beta", "arguments": {"timezone": "Europe/Paris"}}],
        "usage": {"cached_tokens": 64, "prompt_tokens": 56, "thoughts_tokens": 12, "response_tokens": 28},
    },
    "incomplete_max_output_tokens.sse": {
        "text": "Once upon a time", "thinking": "", "finish_reason": "length", "tool_calls": [],
        "usage": {"cached_tokens": 0, "prompt_tokens": 10, "thoughts_tokens": 0, "response_tokens": 5},
    },
    "incomplete_content_filter.sse": {
        "text": "I can", "thinking": "", "finish_reason": "unknown", "tool_calls": [],
        "usage": {"cached_tokens": 0, "prompt_tokens": 10, "thoughts_tokens": 0, "response_tokens": 2},
    },
    "data_only_keepalive_done.sse": {
        "text": "Hello, world", "thinking": "", "finish_reason": "stop", "tool_calls": [],
        "usage": {"cached_tokens": 0, "prompt_tokens": 7, "thoughts_tokens": 0, "response_tokens": 3},
    },
    "refusal.sse": {
        "text": "I'm sorry, I can't help with that.", "thinking": "", "finish_reason": "stop", "tool_calls": [],
        "usage": {"cached_tokens": 0, "prompt_tokens": 9, "thoughts_tokens": 0, "response_tokens": 8},
    },
    "reasoning_text_channel.sse": {
        "text": "Hi there!", "thinking": "The user greets me. I reply briefly.", "finish_reason": "stop",
        "tool_calls": [],
        "usage": {"cached_tokens": 0, "prompt_tokens": 20, "thoughts_tokens": 9, "response_tokens": 6},
    },
    "whole_items_only.sse": {
        "text": "Checking the weather.", "thinking": "", "finish_reason": "tool_call",
        "tool_calls": [{"name": "get_weather", "id": "call_whole", "arguments": {"city": "Berlin"}}],
        "usage": {"cached_tokens": 0, "prompt_tokens": 30, "thoughts_tokens": 0, "response_tokens": 12},
    },
    "completed_output_only.sse": {
        "text": "Done.", "thinking": "Short plan.", "finish_reason": "tool_call",
        "tool_calls": [{"name": "ping", "id": "call_final", "arguments": {}}],
        "usage": {"cached_tokens": 10, "prompt_tokens": 40, "thoughts_tokens": 6, "response_tokens": 14},
    },
    "phases_reasoning_call.sse": {
        "text": "Let me check the weather.",
        "thinking": "**Plan**\n\nLook up the weather.\n\n**Answer**\n\nThen reply.",
        "finish_reason": "tool_call",
        "tool_calls": [{"name": "get_weather", "id": "call_ph_1", "arguments": {"city": "Oslo"}}],
        "usage": {"cached_tokens": 0, "prompt_tokens": 80, "thoughts_tokens": 30, "response_tokens": 30},
    },
    "phases_final_answer.sse": {
        "text": "Got it.It is 3 °C in Oslo.", "thinking": "", "finish_reason": "stop", "tool_calls": [],
        "usage": {"cached_tokens": 80, "prompt_tokens": 70, "thoughts_tokens": 10, "response_tokens": 20},
    },
}
ERROR_FIXTURES = {
    "error_event_flat.sse": (ServerError, "server_error", "The server had an error while processing your request."),
    "response_failed.sse": (RateLimitError, "rate_limit_exceeded", "Rate limit reached for requests."),
}


@pytest.mark.parametrize("name", sorted(FIXTURE_EXPECT))
def test_fixture_stream(name):
    data = fixture(name)
    events = run([data])
    check_stream(events)
    got = summarize(events)
    got["tool_calls"] = [{"name": c["name"], "id": c["id"], "arguments": c["arguments"]} for c in got["tool_calls"]]
    assert got == FIXTURE_EXPECT[name]
    whole = ("events", events)
    for chunks in splits(data, samples=10):
        assert same_outcome(outcome(data, chunks), whole)


@pytest.mark.parametrize("name", sorted(ERROR_FIXTURES))
def test_fixture_error(name):
    cls, error_type, message = ERROR_FIXTURES[name]
    data = fixture(name)
    for chunks in splits(data, samples=5):
        with pytest.raises(cls) as info:
            run(chunks)
        assert info.value.error_type == error_type
        assert info.value.message == message
        assert info.value.client == CLIENT
        assert info.value.retryable is True


@pytest.mark.parametrize("name", sorted(FIXTURE_EXPECT))
def test_fixture_cut_is_a_protocol_error(name):
    data = fixture(name)
    end = max(data.rfind(marker) for marker in TERMINALS)
    event_start = data.rfind(b"\n\n", 0, end) + 2
    for cut in sorted({event_start, end, len(data) // 2, 3}):
        with pytest.raises(StreamProtocolError):
            run([data[:cut]])


def test_interleaved_parallel_calls_come_out_one_after_the_other():
    events = run([fixture("interleaved_parallel_calls.sse")])
    items = [e["content_items"][0] for e in events[1:-1]]
    shape = [(i["type"], i.get("name"), i.get("tool_call_id"), i.get("arguments")) for i in items]
    assert shape == [
        ("thinking", None, None, None),
        ("partial_tool_call", "get_weather", "call_alpha", ""),
        ("partial_tool_call", "", "", '{"city":'),
        ("partial_tool_call", "", "", ' "Paris"}'),
        ("tool_call", "get_weather", "call_alpha", {"city": "Paris"}),
        ("partial_tool_call", "get_time", "call_beta", '{"timezone": "Europe/Paris"}'),
        ("tool_call", "get_time", "call_beta", {"timezone": "Europe/Paris"}),
    ]
    assert items[0]["fidelity"] == {"channel": "summary", "encrypted_content": "gAAAAencParallel=="}


def test_encrypted_content_is_taken_from_the_done_item_not_the_added_one():
    message = collect(run([fixture("phases_reasoning_call.sse")]))
    assert message["content_items"][0] == {
        "type": "thinking",
        "thinking": "**Plan**\n\nLook up the weather.\n\n**Answer**\n\nThen reply.",
        "fidelity": {"channel": "summary", "encrypted_content": "gAAAAphaseReasoning-xyz==", "parts": [30, 23]},
    }
    assert message["content_items"][1] == {"type": "text", "text": "Let me check the weather.",
                                           "fidelity": {"phase": "commentary"}}


def test_refusal_is_visible_text_marked_in_fidelity():
    events = run([fixture("refusal.sse")])
    texts = [e["content_items"][0] for e in events[1:-1]]
    assert all(t["fidelity"] == {"refusal": True} for t in texts)
    message = collect(events)
    assert message["content_items"] == [{"type": "text", "text": "I'm sorry, I can't help with that.",
                                         "fidelity": {"refusal": True}}]
    request = next_request("gpt-5.5", [user("?"), message, user("ok")])
    assert request.body["input"][1] == {"type": "message", "role": "assistant",
                                        "content": [{"type": "refusal", "refusal": "I'm sorry, I can't help with that."}]}


def test_reasoning_text_channel_replays_as_content():
    message = collect(run([fixture("reasoning_text_channel.sse")]))
    assert message["content_items"][0] == {"type": "thinking", "thinking": "The user greets me. I reply briefly.",
                                           "fidelity": {"channel": "content"}}
    request = next_request("openai/gpt-oss-120b", [user("hi"), message, user("bye")],
                           base_url="http://127.0.0.1:8000/v1")
    assert request.body["input"][1] == {"type": "reasoning", "summary": [],
                                        "content": [{"type": "reasoning_text",
                                                     "text": "The user greets me. I reply briefly."}]}


def test_done_without_terminal_marker_is_cut():
    data = b'data: {"type":"response.output_text.delta","output_index":0,"delta":"Hi"}\n\ndata: [DONE]\n\n'
    with pytest.raises(StreamProtocolError):
        run([data])


def test_thinking_only_turn_is_an_empty_response():
    from agenthub.errors import EmptyResponseError

    body = (
        b'data: {"type":"response.output_item.done","output_index":0,"item":{"type":"reasoning","summary":[],'
        b'"encrypted_content":"gAAA"}}\n\n'
        b'data: {"type":"response.completed","response":{"status":"completed","usage":{"input_tokens":5,'
        b'"output_tokens":9,"output_tokens_details":{"reasoning_tokens":9}}}}\n\n'
    )
    with pytest.raises(EmptyResponseError) as info:
        run([body])
    assert info.value.usage_metadata == {"cached_tokens": None, "prompt_tokens": 5, "thoughts_tokens": 9,
                                         "response_tokens": 0}


def test_truncated_arguments_at_the_output_limit_raise_parse_error():
    body = (
        b'data: {"type":"response.output_item.added","output_index":0,"item":{"type":"function_call",'
        b'"call_id":"call_x","name":"f","arguments":""}}\n\n'
        b'data: {"type":"response.function_call_arguments.delta","output_index":0,"delta":"{\\"a\\": \\"tru"}\n\n'
        b'data: {"type":"response.incomplete","response":{"status":"incomplete",'
        b'"incomplete_details":{"reason":"max_output_tokens"}}}\n\n'
    )
    with pytest.raises(ToolCallArgumentParseError) as info:
        run([body])
    assert info.value.tool_call_id == "call_x"


def test_events_without_output_index_are_keyed_by_item_id():
    lines = [
        {"type": "response.output_item.added", "item": {"id": "fc_1", "type": "function_call", "call_id": "c1",
                                                        "name": "a", "arguments": ""}},
        {"type": "response.output_item.added", "item": {"id": "fc_2", "type": "function_call", "call_id": "c2",
                                                        "name": "b", "arguments": ""}},
        {"type": "response.function_call_arguments.delta", "item_id": "fc_2", "delta": '{"y":2}'},
        {"type": "response.function_call_arguments.delta", "item_id": "fc_1", "delta": '{"x":1}'},
        {"type": "response.function_call_arguments.done", "item_id": "fc_1", "arguments": '{"x":1}'},
        {"type": "response.function_call_arguments.done", "item_id": "fc_2", "arguments": '{"y":2}'},
        {"type": "response.completed", "response": {"status": "completed"}},
    ]
    body = "".join("data: {}\n\n".format(json.dumps(line)) for line in lines).encode()
    events = run([body])
    check_stream(events)
    calls = [i for e in events for i in e["content_items"] if i["type"] == "tool_call"]
    assert [(c["tool_call_id"], c["arguments"]) for c in calls] == [("c1", {"x": 1}), ("c2", {"y": 2})]
    assert events[-1]["usage_metadata"] == {"cached_tokens": None, "prompt_tokens": None,
                                            "thoughts_tokens": None, "response_tokens": None}


def test_error_without_type_and_nested_error_event():
    with pytest.raises(UpstreamError) as info:
        run([b'data: {"error": {"message": "bad key", "type": "invalid_request_error", "code": "invalid_api_key"}}\n\n'])
    assert info.value.error_type == "invalid_request_error" and info.value.code == "invalid_api_key"
    with pytest.raises(UpstreamError) as info:
        run([b'event: error\ndata: {"type":"error","error":{"type":"invalid_request_error",'
             b'"code":"context_length_exceeded","message":"too long"}}\n\n'])
    assert info.value.status == 400 and info.value.message == "too long"
    assert info.value.code == "context_length_exceeded"


def test_text_arriving_while_a_call_streams_waits_for_it():
    lines = [
        {"type": "response.output_item.added", "output_index": 0,
         "item": {"type": "function_call", "call_id": "c1", "name": "a", "arguments": ""}},
        {"type": "response.function_call_arguments.delta", "output_index": 0, "delta": '{"x":'},
        {"type": "response.output_text.delta", "output_index": 1, "delta": "note"},
        {"type": "response.function_call_arguments.delta", "output_index": 0, "delta": "1}"},
        {"type": "response.output_item.done", "output_index": 0,
         "item": {"type": "function_call", "call_id": "c1", "name": "a", "arguments": '{"x":1}'}},
        {"type": "response.completed", "response": {"status": "completed"}},
    ]
    body = "".join("data: {}\n\n".format(json.dumps(line)) for line in lines).encode()
    events = run([body])
    check_stream(events)
    assert [e["content_items"][0]["type"] for e in events[1:-1]] == [
        "partial_tool_call", "partial_tool_call", "partial_tool_call", "tool_call", "text"]


def test_map_usage():
    assert map_usage({"input_tokens": 100, "input_tokens_details": {"cached_tokens": 40}, "output_tokens": 50,
                      "output_tokens_details": {"reasoning_tokens": 20}, "total_tokens": 150}) == {
        "cached_tokens": 40, "prompt_tokens": 60, "thoughts_tokens": 20, "response_tokens": 30}
    assert map_usage({"input_tokens": 3, "output_tokens": 4}) == {
        "cached_tokens": None, "prompt_tokens": 3, "thoughts_tokens": None, "response_tokens": 4}
    # a server whose output count already excludes reasoning (total = input + output + reasoning)
    assert map_usage({"input_tokens": 10, "output_tokens": 5, "output_tokens_details": {"reasoning_tokens": 7},
                      "total_tokens": 22})["response_tokens"] == 5


# -- request --------------------------------------------------------------------------------------

OPENAI = "https://api.openai.com/v1"
WEATHER = {"name": "get_weather", "description": "Current weather in a city.",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}


def endpoint(base_url=OPENAI, key="sk-test", quirks=None, headers=None):
    return Endpoint(CLIENT, base_url, key, headers, quirks)


def user(text):
    return {"role": "user", "content_items": [{"type": "text", "text": text}]}


def request(model, messages, config=None, **kwargs):
    where = endpoint(**kwargs)
    return sent(build_request(where, model, messages, check_config(config)), where)


def next_request(model, messages, config=None, **kwargs):
    return request(model, messages, config, **kwargs)


def test_request_golden_minimal():
    req = request("gpt-5.5", [user("Hello")])
    assert req.method == "POST"
    assert req.url == "https://api.openai.com/v1/responses"
    assert req.stream is True
    assert dict(req.headers) == {"Content-Type": "application/json", "Accept": "text/event-stream",
                                 "Authorization": "Bearer sk-test"}
    assert req.body == {
        "model": "gpt-5.5",
        "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Hello"}]}],
        "stream": True,
        "store": False,
        "include": ["reasoning.encrypted_content"],
    }


def test_request_golden_every_option():
    config = {
        "system_prompt": "Be brief.", "max_tokens": 2048, "tools": [WEATHER], "tool_choice": "required",
        "thinking_level": ThinkingLevel.HIGH, "thinking_summary": True, "prompt_caching": PromptCaching.ENHANCE,
        "trace_id": "t/1",
    }
    req = request("gpt-5.5", [user("Weather in Paris?")], config, base_url="https://gw.example/v1/",
                  headers={"X-Team": "a"})
    assert req.url == "https://gw.example/v1/responses"
    assert req.headers["X-Team"] == "a"
    assert json.dumps(req.body, sort_keys=True) == json.dumps({
        "model": "gpt-5.5",
        "instructions": "Be brief.",
        "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Weather in Paris?"}]}],
        "stream": True,
        "store": False,
        "include": ["reasoning.encrypted_content"],
        "max_output_tokens": 2048,
        "tools": [{"type": "function", "name": "get_weather", "description": "Current weather in a city.",
                   "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                  "required": ["city"]},
                   "strict": False}],
        "tool_choice": "required",
        "reasoning": {"effort": "high", "summary": "auto"},
        "prompt_cache_retention": "24h",
    }, sort_keys=True)


def test_request_tool_without_parameters_and_choices():
    tools = [{"name": "ping"}, WEATHER]
    req = request("gpt-5.5", [user("x")], {"tools": tools, "tool_choice": ["ping", "get_weather"]})
    assert req.body["tools"][0] == {"type": "function", "name": "ping",
                                    "parameters": {"type": "object", "properties": {}}, "strict": False}
    assert req.body["tool_choice"] == {"type": "allowed_tools", "mode": "required",
                                       "tools": [{"type": "function", "name": "ping"},
                                                 {"type": "function", "name": "get_weather"}]}
    for choice in ("auto", "none", "required"):
        assert request("gpt-5.5", [user("x")], {"tools": tools, "tool_choice": choice}).body["tool_choice"] == choice


@pytest.mark.parametrize("model,level,effort", [
    ("gpt-5.5", "none", "none"), ("gpt-5.5", "xhigh", "xhigh"), ("gpt-5.2", "low", "low"),
    ("gpt-5.1", "xhigh", "high"), ("gpt-5.1", "none", "none"),
    ("gpt-5", "none", "minimal"), ("gpt-5-mini", "xhigh", "high"), ("gpt-5-nano-2025-08-07", "medium", "medium"),
    ("gpt-5-pro", "low", "high"), ("gpt-5-codex", "none", "low"), ("gpt-5.1-codex-max", "xhigh", "xhigh"),
    ("gpt-5.1-codex-max", "none", "low"), ("gpt-5.2-pro", "none", "medium"), ("gpt-5.1-chat-latest", "high", "medium"),
    ("o3", "none", "low"), ("o4-mini", "xhigh", "high"), ("o3-mini", "medium", "medium"),
    ("openai/gpt-5.1", "xhigh", "high"), ("GPT-5", "none", "minimal"),
    ("some-vendor/model", "none", "none"), ("qwen3-coder", "xhigh", "xhigh"),
])
def test_thinking_level_is_clamped_per_model(model, level, effort):
    req = request(model, [user("x")], {"thinking_level": level})
    assert req.body["reasoning"] == {"effort": effort}
    assert req.body["include"] == ["reasoning.encrypted_content"]


@pytest.mark.parametrize("model", ["gpt-4o", "gpt-4.1-mini", "gpt-3.5-turbo", "chatgpt-4o-latest",
                                   "gpt-5-chat-latest", "openai/gpt-4o-mini"])
def test_models_that_do_not_reason_get_no_reasoning_fields(model):
    req = request(model, [user("x")], {"thinking_level": "high", "thinking_summary": True, "temperature": 0.2})
    assert "include" not in req.body and "reasoning" not in req.body
    assert req.body["temperature"] == 0.2 and req.body["store"] is False


def test_every_effort_table_row_is_reachable_and_clamps_inside_the_row():
    for _pattern, efforts in EFFORTS:
        for level in ThinkingLevel:
            effort = clamp_effort(level.value, efforts)
            assert efforts is None or effort in efforts
    assert clamp_effort("low", ("minimal", "high")) == "minimal"
    assert clamp_effort("medium", ("low", "high")) == "high"  # ties go up
    assert model_profile("gpt-5.5") == (True, ("none", "low", "medium", "high", "xhigh"), True)
    assert model_profile("my-model") == (True, None, False)
    assert model_profile("my-model", {"reasoning": False}) == (False, None, False)
    assert model_profile("my-model", {"reasoning_efforts": ["low", "high"]}) == (True, ("low", "high"), True)


def test_thinking_summary_rules():
    # first-party reasoning models: summary alone is sent
    assert request("gpt-5.5", [user("x")], {"thinking_summary": True}).body["reasoning"] == {"summary": "auto"}
    # effort "none": nothing to summarize
    assert request("gpt-5.5", [user("x")], {"thinking_summary": True, "thinking_level": "none"}).body["reasoning"] == \
        {"effort": "none"}
    # other servers' models: only together with an effort
    assert "reasoning" not in request("vendor/m", [user("x")], {"thinking_summary": True}).body
    assert request("vendor/m", [user("x")], {"thinking_summary": True, "thinking_level": "low"}).body["reasoning"] == \
        {"effort": "low", "summary": "auto"}
    assert "reasoning" not in request("gpt-5.5", [user("x")], {"thinking_summary": False}).body


def test_temperature_rules():
    assert request("gpt-5.5", [user("x")], {"temperature": 0.3}).body["temperature"] == 0.3
    assert request("vendor/m", [user("x")], {"temperature": 0.3}).body["temperature"] == 0.3
    assert request("o3", [user("x")], {"temperature": 1}).body["temperature"] == 1
    with pytest.raises(UnsupportedParameterError) as info:
        request("o3", [user("x")], {"temperature": 0.3})
    assert info.value.parameter == "temperature" and info.value.client == CLIENT


def test_unsupported_options():
    for config, parameter in (({"prompt_caching": "disable"}, "prompt_caching"),
                              ({"image_config": {"aspect_ratio": "1:1"}}, "image_config"),
                              ({"tts_config": [{"voice": "Kore"}]}, "tts_config"),
                              ({"embedding_config": {"dimensions": 8}}, "embedding_config")):
        with pytest.raises(UnsupportedParameterError) as info:
            request("gpt-5.5", [user("x")], config)
        assert info.value.parameter == parameter
    assert "prompt_cache_retention" not in request("gpt-5.5", [user("x")], {"prompt_caching": "enable"}).body


def test_no_key_no_authorization_header():
    keyless = endpoint("http://127.0.0.1:8000/v1", key=None)
    req = sent(build_request(keyless, "local", [user("x")], {}), keyless)
    assert "Authorization" not in req.headers
    assert req.url == "http://127.0.0.1:8000/v1/responses"


def test_quirk_turns_off_encrypted_reasoning():
    req = request("my-deployment", [user("x")], quirks={"encrypted_reasoning": False})
    assert "include" not in req.body


PNG = "data:image/png;base64,iVBORw0KGgo="


def test_user_content_and_tool_results_keep_their_order():
    messages = [
        {"role": "user", "content_items": [
            {"type": "text", "text": "Look:"},
            {"type": "image_url", "image_url": "https://example.com/cat.jpg"},
            {"type": "inline_data", "data": b"\x89PNG", "mime_type": "image/png"},
            {"type": "inline_data", "data": b"%PDF-1.4", "mime_type": "application/pdf"},
        ]},
        {"role": "assistant", "content_items": [
            {"type": "tool_call", "name": "get_weather", "arguments": {"city": "Zürich"}, "tool_call_id": "call_1"},
            {"type": "tool_call", "name": "snap", "arguments": {}, "tool_call_id": "call_2"},
        ]},
        {"role": "user", "content_items": [
            {"type": "tool_result", "text": "18 °C", "tool_call_id": "call_1"},
            {"type": "text", "text": "and then"},
            {"type": "tool_result", "text": "a photo", "tool_call_id": "call_2", "images": [PNG]},
            {"type": "text", "text": "thanks"},
        ]},
    ]
    assert request("gpt-5.5", messages).body["input"] == [
        {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "Look:"},
            {"type": "input_image", "image_url": "https://example.com/cat.jpg", "detail": "auto"},
            {"type": "input_image", "image_url": "data:image/png;base64,iVBORw==", "detail": "auto"},
            {"type": "input_file", "filename": "document.pdf", "file_data": "data:application/pdf;base64,JVBERi0xLjQ="},
        ]},
        {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": '{"city":"Zürich"}'},
        {"type": "function_call", "call_id": "call_2", "name": "snap", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_1", "output": "18 °C"},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "and then"}]},
        {"type": "function_call_output", "call_id": "call_2", "output": [
            {"type": "input_text", "text": "a photo"},
            {"type": "input_image", "image_url": PNG, "detail": "auto"}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "thanks"}]},
    ]


def test_request_input_errors():
    with pytest.raises(ConfigError):
        request("gpt-5.5", [{"role": "user", "content_items": [{"type": "image_url", "image_url": "data:image/png;base64,@@"}]}])
    with pytest.raises(UnsupportedParameterError):
        request("gpt-5.5", [{"role": "user", "content_items": [
            {"type": "inline_data", "data": b"x", "mime_type": "video/mp4"}]}])
    empty = request("gpt-5.5", [{"role": "user", "content_items": []}]).body["input"]
    assert empty == [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": ""}]}]


def test_assistant_replay_splits_by_phase_and_drops_foreign_thinking():
    assistant = {"role": "assistant", "content_items": [
        {"type": "thinking", "thinking": "from another protocol", "fidelity": {"signature": "sig"}},
        {"type": "thinking", "thinking": "no fidelity at all"},
        {"type": "text", "text": "Plain."},
        {"type": "text", "text": "Working on it.", "fidelity": {"phase": "commentary"}},
        {"type": "text", "text": "More commentary.", "fidelity": {"phase": "commentary"}},
        {"type": "text", "text": "The answer.", "fidelity": {"phase": "final_answer"}},
        {"type": "image_url", "image_url": "https://example.com/x.png"},
        {"type": "thinking", "thinking": "", "fidelity": {"channel": "summary"}},
        {"type": "thinking", "thinking": "", "fidelity": {"channel": "summary", "encrypted_content": "E",
                                                          "signature": "s", "format": "f"}},
    ]}
    body = request("gpt-5.5", [user("q"), assistant, user("next")]).body
    assert body["input"][1:-1] == [
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Plain.", "annotations": []}]},
        {"type": "message", "role": "assistant", "phase": "commentary", "content": [
            {"type": "output_text", "text": "Working on it.", "annotations": []},
            {"type": "output_text", "text": "More commentary.", "annotations": []}]},
        {"type": "message", "role": "assistant", "phase": "final_answer", "content": [
            {"type": "output_text", "text": "The answer.", "annotations": []}]},
        {"type": "reasoning", "summary": [], "encrypted_content": "E", "signature": "s", "format": "f"},
    ]


def test_summary_parts_that_no_longer_match_go_back_as_one_part():
    assistant = {"role": "assistant", "content_items": [
        {"type": "thinking", "thinking": "edited text", "fidelity": {"channel": "summary", "parts": [3, 4],
                                                                       "encrypted_content": "E"}},
        {"type": "text", "text": "ok"}]}
    body = request("gpt-5.5", [user("q"), assistant]).body
    assert body["input"][1]["summary"] == [{"type": "summary_text", "text": "edited text"}]


# -- round trip: stream -> collect -> next request --------------------------------------------------


def test_round_trip_keeps_reasoning_phase_and_call_ids_in_order():
    config = {"tools": [WEATHER], "thinking_level": "medium", "thinking_summary": True}
    first = user("What's the weather in Oslo?")
    turn1 = collect(run([fixture("phases_reasoning_call.sse")]))
    result = {"role": "user", "content_items": [{"type": "tool_result", "text": "3 °C", "tool_call_id": "call_ph_1"}]}
    body = request("gpt-5.5", [first, turn1, result], config).body
    assert body["input"] == [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "What's the weather in Oslo?"}]},
        {"type": "reasoning",
         "summary": [{"type": "summary_text", "text": "**Plan**\n\nLook up the weather."},
                     {"type": "summary_text", "text": "**Answer**\n\nThen reply."}],
         "encrypted_content": "gAAAAphaseReasoning-xyz=="},
        {"type": "message", "role": "assistant", "phase": "commentary",
         "content": [{"type": "output_text", "text": "Let me check the weather.", "annotations": []}]},
        {"type": "function_call", "call_id": "call_ph_1", "name": "get_weather", "arguments": '{"city":"Oslo"}'},
        {"type": "function_call_output", "call_id": "call_ph_1", "output": "3 °C"},
    ]
    turn2 = collect(run([fixture("phases_final_answer.sse")]))
    body = request("gpt-5.5", [first, turn1, result, turn2, user("Thanks!")], config).body
    assert body["input"][5:] == [
        {"type": "reasoning", "summary": [], "encrypted_content": "gAAAAsecondTurn=="},
        {"type": "message", "role": "assistant", "phase": "commentary",
         "content": [{"type": "output_text", "text": "Got it.", "annotations": []}]},
        {"type": "message", "role": "assistant", "phase": "final_answer",
         "content": [{"type": "output_text", "text": "It is 3 °C in Oslo.", "annotations": []}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Thanks!"}]},
    ]
    assert "rs_ph" not in json.dumps(body) and "fc_ph" not in json.dumps(body) and "msg_c" not in json.dumps(body)


def test_round_trip_survives_a_json_history():
    turn = collect(run([fixture("phases_reasoning_call.sse")]))
    again = json.loads(json.dumps(turn))
    assert request("gpt-5.5", [user("q"), again]).body == request("gpt-5.5", [user("q"), turn]).body


# -- end to end through AutoLLMClient and the transport ---------------------------------------------


def test_end_to_end_with_autollmclient():
    responses = pytest.importorskip("responses")
    from agenthub import AutoLLMClient

    recordings = os.path.join(os.path.dirname(HERE), "agenthub", "recordings", "openai_responses")
    bodies = []
    for name in ("weather_tool_call.sse", "weather_answer.sse"):
        with open(os.path.join(recordings, name), "rb") as handle:
            bodies.append(handle.read())
    with responses.RequestsMock() as mock:
        for body in bodies:
            mock.add(responses.POST, "https://api.example.test/v1/responses", body=body, status=200,
                     content_type="text/event-stream")
        client = AutoLLMClient("gpt-5.5", api_key="k", base_url="https://api.example.test/v1")
        assert client.client_type == CLIENT
        config = {"tools": [WEATHER], "thinking_summary": True}
        events = list(client.streaming_response_stateful(user("What's the weather in Paris?"), config))
        check_stream(events)
        calls = [i for e in events for i in e["content_items"] if i["type"] == "tool_call"]
        assert [(c["name"], c["tool_call_id"], c["arguments"]) for c in calls] == \
            [("get_weather", "call_demo_weather_1", {"city": "Paris"})]
        assert events[-1]["finish_reason"] == "tool_call"
        result = {"role": "user", "content_items": [
            {"type": "tool_result", "text": "18 °C, sunny", "tool_call_id": "call_demo_weather_1"}]}
        events = list(client.streaming_response_stateful(result, config))
        check_stream(events)
        assert "".join(i["text"] for e in events for i in e["content_items"] if i["type"] == "text") == \
            "It's 18 °C and sunny in Paris right now."
        assert events[-1]["finish_reason"] == "stop"
        assert events[-1]["usage_metadata"] == {"cached_tokens": 64, "prompt_tokens": 88, "thoughts_tokens": 8,
                                                "response_tokens": 15}
        first, second = (json.loads(call.request.body) for call in mock.calls)
        assert mock.calls[0].request.headers["Authorization"] == "Bearer k"
        assert first["store"] is False and first["include"] == ["reasoning.encrypted_content"]
        assert first["reasoning"] == {"summary": "auto"}
        assert second["input"][1:] == [
            {"type": "reasoning",
             "summary": [{"type": "summary_text",
                          "text": "The user wants the current weather in Paris; I should call get_weather."}],
             "encrypted_content": "gAAAAABdemoEncryptedReasoningOnlyForReplay-0123456789abcdef=="},
            {"type": "function_call", "call_id": "call_demo_weather_1", "name": "get_weather",
             "arguments": '{"city":"Paris"}'},
            {"type": "function_call_output", "call_id": "call_demo_weather_1", "output": "18 °C, sunny"},
        ]
    history = client.get_history()
    assert len(history) == 4
    assert history[3]["content_items"][-1]["fidelity"] == {"phase": "final_answer"}


def test_end_to_end_failed_response_is_retried_then_raised(monkeypatch):
    responses = pytest.importorskip("responses")
    from agenthub import AutoLLMClient

    monkeypatch.setattr("agenthub.attempts.backoff", lambda attempt, retry_after: 0.0)
    body = fixture("response_failed.sse")
    with responses.RequestsMock() as mock:
        mock.add(responses.POST, "https://api.example.test/v1/responses", body=body, status=200,
                 content_type="text/event-stream")
        client = AutoLLMClient("gpt-5.5", api_key="k", base_url="https://api.example.test/v1", max_retries=1)
        with pytest.raises(RateLimitError):
            list(client.streaming_response([user("hi")]))
        assert len(mock.calls) == 2
    assert client.get_history() == []
