"""Bedrock Converse stream: request bodies, the stream parser over event-stream frames, usage, errors, replay.

Every field pinned here was read from the ConverseStream API reference and botocore's service model for
bedrock-runtime (2023-09-30); the frames are made by tests/bedrock_frames.py (checked against botocore's
decoder in test_eventstream.py).
"""

import base64
import json

import pytest

from agenthub import collect, check_stream
from agenthub.errors import (AuthenticationError, ConfigError, EmptyResponseError, RateLimitError, ServerError,
                             StreamProtocolError, ToolCallArgumentParseError, UnsupportedParameterError, UpstreamError)
from agenthub.eventstream import iter_messages
from agenthub.providers import bedrock
from agenthub.providers._common import Endpoint
from agenthub.stream import drive
from agenthub.types import PromptCaching, ThinkingLevel
from conftest import sent
from agenthub.validate import check_config
import bedrock_frames as bf

URL = "https://bedrock-runtime.us-east-1.amazonaws.com"
SONNET = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
OPUS47 = "global.anthropic.claude-opus-4-7"
SONNET46 = "anthropic.claude-sonnet-4-6"
NOVA = "amazon.nova-pro-v1:0"
LLAMA = "meta.llama3-3-70b-instruct-v1:0"
USER = {"role": "user", "content_items": [{"type": "text", "text": "hi"}]}
TOOLS = [{"name": "get_weather", "description": "Weather.", "parameters": {"type": "object", "properties": {
    "city": {"type": "string"}}}}]
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 8


def body(model, config=None, messages=(USER,)):
    endpoint = Endpoint("bedrock", URL, None, None, {})
    return bedrock.build_request(endpoint, model, list(messages), check_config(config or {})).body


def run(frames, client="bedrock"):
    data = b"".join(frames)
    return list(drive(bedrock.parse_stream(iter_messages([data]), client, "t_"), client))


def items(events):
    return [i for e in events for i in e["content_items"]]


# -- request ---------------------------------------------------------------------------------------


def test_path_model_id_encoded_and_headers():
    endpoint = Endpoint("bedrock", URL + "/", None, {"X-Team": "a"}, {})
    request = sent(bedrock.build_request(endpoint, SONNET, [USER], {}), endpoint)
    assert request.method == "POST"
    assert request.url == URL + "/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse-stream"
    assert request.headers == {"Content-Type": "application/json", "Accept": "application/vnd.amazon.eventstream",
                               "X-Team": "a"}
    arn = "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/abc123"
    assert sent(bedrock.build_request(endpoint, arn, [USER], {}), endpoint).url == (
        URL + "/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012%3Aapplication-inference-profile%2Fabc123"
        "/converse-stream")


def test_plain_request_for_a_model_without_caching_or_thinking():
    assert body(LLAMA, {"max_tokens": 100, "temperature": 0.2, "system_prompt": "Be brief."}) == {
        "messages": [{"role": "user", "content": [{"text": "hi"}]}],
        "system": [{"text": "Be brief."}],
        "inferenceConfig": {"maxTokens": 100, "temperature": 0.2},
    }


def test_top_p_and_stop_read_when_present():
    config = {"max_tokens": 10, "top_p": 0.9, "stop": ["END", "STOP"]}  # keys another helper adds to validate
    endpoint = Endpoint("bedrock", URL, None, None, {})
    sent = bedrock.build_request(endpoint, LLAMA, [USER], config).body
    assert sent["inferenceConfig"] == {"maxTokens": 10, "topP": 0.9, "stopSequences": ["END", "STOP"]}
    sent = bedrock.build_request(endpoint, LLAMA, [USER], {"stop": "END"}).body
    assert sent["inferenceConfig"] == {"stopSequences": ["END"]}


def test_claude_gets_the_anthropic_rules_default_max_tokens_and_cache_points():
    sent = body(SONNET, {"system_prompt": "S", "tools": TOOLS})
    assert sent == {
        "messages": [{"role": "user", "content": [{"text": "hi"}, {"cachePoint": {"type": "default"}}]}],
        "system": [{"text": "S"}, {"cachePoint": {"type": "default"}}],
        "inferenceConfig": {"maxTokens": 32000},
        "toolConfig": {"tools": [
            {"toolSpec": {"name": "get_weather", "description": "Weather.",
                          "inputSchema": {"json": TOOLS[0]["parameters"]}}},
            {"cachePoint": {"type": "default"}}]},
    }
    assert body("anthropic.claude-3-haiku-20240307-v1:0", {})["inferenceConfig"] == {"maxTokens": 4096}
    assert "cachePoint" not in json.dumps(body("anthropic.claude-3-haiku-20240307-v1:0", {}))  # no caching there


def test_prompt_caching_modes():
    nova = body(NOVA, {"tools": TOOLS, "system_prompt": "S"})
    assert nova["messages"][0]["content"][-1] == nova["system"][-1] == {"cachePoint": {"type": "default"}}
    assert "cachePoint" not in json.dumps(nova["toolConfig"])  # Nova caches system and messages only
    assert "cachePoint" not in json.dumps(body(SONNET, {"prompt_caching": PromptCaching.DISABLE}))
    enhanced = body(SONNET, {"prompt_caching": PromptCaching.ENHANCE, "system_prompt": "S"})
    assert enhanced["system"][1] == {"cachePoint": {"type": "default", "ttl": "1h"}}
    for model in (LLAMA, NOVA):
        with pytest.raises(UnsupportedParameterError) as info:
            body(model, {"prompt_caching": PromptCaching.ENHANCE})
        assert info.value.parameter == "prompt_caching"


@pytest.mark.parametrize("model, level, fields", [
    (SONNET, "high", {"thinking": {"type": "enabled", "budget_tokens": 16384}}),
    (SONNET, "low", {"thinking": {"type": "enabled", "budget_tokens": 1024}}),
    (SONNET, "none", {"thinking": {"type": "disabled"}}),
    (SONNET46, "medium", {"thinking": {"type": "adaptive"}, "output_config": {"effort": "medium"}}),
    (SONNET46, "xhigh", {"thinking": {"type": "adaptive"}, "output_config": {"effort": "high"}}),  # no xhigh: clamped
    (OPUS47, "xhigh", {"thinking": {"type": "adaptive"}, "output_config": {"effort": "xhigh"}}),
    (OPUS47, "none", None),  # Opus 4.7 refuses "disabled": nothing is sent
    ("anthropic.claude-3-5-sonnet-20240620-v1:0", "high", None),  # no thinking at all
])
def test_claude_thinking_through_additional_model_request_fields(model, level, fields):
    sent = body(model, {"thinking_level": level})
    assert sent.get("additionalModelRequestFields") == fields


def test_budget_thinking_with_tools_asks_for_interleaved_thinking_and_summary_display():
    sent = body(SONNET, {"thinking_level": ThinkingLevel.MEDIUM, "tools": TOOLS})
    assert sent["additionalModelRequestFields"] == {"thinking": {"type": "enabled", "budget_tokens": 4096},
                                                    "anthropic_beta": ["interleaved-thinking-2025-05-14"]}
    sent = body(SONNET46, {"thinking_level": "low", "thinking_summary": False})
    assert sent["additionalModelRequestFields"] == {"thinking": {"type": "adaptive", "display": "omitted"},
                                                    "output_config": {"effort": "low"}}


NOVA2 = "us.amazon.nova-2-lite-v1:0"


@pytest.mark.parametrize("level, effort", [("low", "low"), (ThinkingLevel.MEDIUM, "medium"), ("high", "high"),
                                           ("xhigh", "high"), ("max", "high"), (ThinkingLevel.MAX, "high")])
def test_thinking_level_on_nova_2_is_its_reasoning_config(level, effort):
    """Issue 29 C4: Amazon Nova 2 takes extended thinking as additionalModelRequestFields.reasoningConfig
    (type enabled, maxReasoningEffort low / medium / high; off by default); levels above high clamp to high."""
    sent = body(NOVA2, {"thinking_level": level})
    assert sent["additionalModelRequestFields"] == {"reasoningConfig": {"type": "enabled",
                                                                        "maxReasoningEffort": effort}}
    assert "additionalModelRequestFields" not in body(NOVA2, {"thinking_level": "none"})
    assert "additionalModelRequestFields" not in body(NOVA2, {})
    assert body("global.amazon.nova-2-pro-v1:0", {"thinking_level": "low", "max_tokens": 300})[
        "additionalModelRequestFields"] == {"reasoningConfig": {"type": "enabled", "maxReasoningEffort": "low"}}


@pytest.mark.parametrize("key, value", [("max_tokens", 500), ("temperature", 0.2), ("top_p", 0.9)])
def test_nova_2_high_reasoning_takes_no_output_bound_or_sampler(key, value):
    """With maxReasoningEffort high Nova 2 bounds its own output: maxTokens, temperature and topP must be unset."""
    with pytest.raises(UnsupportedParameterError) as info:
        body(NOVA2, {"thinking_level": "high", key: value})
    assert info.value.parameter == key and "maxReasoningEffort high" in str(info.value)
    assert body(NOVA2, {"thinking_level": "medium", key: value})["additionalModelRequestFields"]


@pytest.mark.parametrize("model", [NOVA, LLAMA, "deepseek.r1-v1:0",
                                   "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/abc"])
def test_thinking_level_elsewhere_on_bedrock_is_refused_not_ignored(model):
    with pytest.raises(UnsupportedParameterError) as info:
        body(model, {"thinking_level": "high"})
    assert info.value.parameter == "thinking_level"
    assert "Claude and Amazon Nova 2" in str(info.value)
    assert "additionalModelRequestFields" not in body(model, {"thinking_level": "none"})
    assert "additionalModelRequestFields" not in body(model, {"thinking_level": ThinkingLevel.NONE})


def test_claude_temperature_and_forced_tool_rules():
    assert body(SONNET, {"temperature": 0.3})["inferenceConfig"] == {"maxTokens": 32000, "temperature": 0.3}
    with pytest.raises(UnsupportedParameterError, match="while thinking is on"):
        body(SONNET, {"temperature": 0.3, "thinking_level": "high"})
    with pytest.raises(UnsupportedParameterError, match="sampling parameters were removed"):
        body(OPUS47, {"temperature": 0.3})
    assert "temperature" not in body(OPUS47, {"temperature": 1})["inferenceConfig"]
    with pytest.raises(UnsupportedParameterError, match="while thinking is on"):
        body(SONNET, {"tools": TOOLS, "tool_choice": "required", "thinking_level": "high"})


@pytest.mark.parametrize("choice, sent", [
    ("auto", {"auto": {}}), ("required", {"any": {}}), (["get_weather"], {"tool": {"name": "get_weather"}}),
])
def test_tool_choice(choice, sent):
    assert body(LLAMA, {"tools": TOOLS, "tool_choice": choice})["toolConfig"]["toolChoice"] == sent


def test_tool_choice_none_and_several_names():
    assert "toolConfig" not in body(LLAMA, {"tools": TOOLS, "tool_choice": "none"})
    with pytest.raises(UnsupportedParameterError):
        body(LLAMA, {"tools": TOOLS + [{"name": "b"}], "tool_choice": ["get_weather", "b"]})
    history = [USER, {"role": "assistant", "content_items": [
        {"type": "tool_call", "name": "get_weather", "arguments": {}, "tool_call_id": "t1"}]},
        {"role": "user", "content_items": [{"type": "tool_result", "tool_call_id": "t1", "text": "sunny"}]}]
    with pytest.raises(UnsupportedParameterError, match="no 'none'"):
        body(LLAMA, {"tools": TOOLS, "tool_choice": "none"}, history)


def test_tool_round_trip_history_maps_to_tool_use_and_tool_result():
    history = [
        USER,
        {"role": "assistant", "content_items": [
            {"type": "thinking", "thinking": "Let me look.", "fidelity": {"signature": "c2ln"}},
            {"type": "thinking", "thinking": "", "fidelity": {"redacted_content": "AAEC/w=="}},
            {"type": "text", "text": "Checking."},
            {"type": "tool_call", "name": "get_weather", "arguments": {"city": "Paris"}, "tool_call_id": "tooluse_1"},
            {"type": "tool_call", "name": "get_weather", "arguments": {"city": "Rome"},
             "tool_call_id": "call/odd id"}]},
        {"role": "user", "content_items": [
            {"type": "text", "text": "Here:"},
            {"type": "tool_result", "tool_call_id": "tooluse_1", "text": "18 C",
             "images": ["data:image/png;base64," + base64.b64encode(PNG).decode()]},
            {"type": "tool_result", "tool_call_id": "call/odd id", "text": ""}]},
    ]
    sent = body(LLAMA, {"tools": TOOLS}, history)
    assert sent["messages"] == [
        {"role": "user", "content": [{"text": "hi"}]},
        {"role": "assistant", "content": [
            {"reasoningContent": {"reasoningText": {"text": "Let me look.", "signature": "c2ln"}}},
            {"reasoningContent": {"redactedContent": "AAEC/w=="}},
            {"text": "Checking."},
            {"toolUse": {"toolUseId": "tooluse_1", "name": "get_weather", "input": {"city": "Paris"}}},
            {"toolUse": {"toolUseId": "call_odd_id", "name": "get_weather", "input": {"city": "Rome"}}}]},
        {"role": "user", "content": [
            {"toolResult": {"toolUseId": "tooluse_1", "content": [
                {"text": "18 C"}, {"image": {"format": "png", "source": {"bytes": base64.b64encode(PNG).decode()}}}]}},
            {"toolResult": {"toolUseId": "call_odd_id", "content": [{"text": bedrock.NO_OUTPUT}]}},
            {"text": "Here:"}]},
    ]


@pytest.mark.parametrize("blank", ["", " ", "\n\n", "\t"])
def test_a_blank_tool_output_is_sent_as_a_text_bedrock_takes(blank):
    """Converse refuses an empty toolResult content and (Claude) a text block that is empty or white space
    alone: a blank output is one fixed text saying so; with images, the blank text is left out."""
    calls = {"role": "assistant", "content_items": [
        {"type": "tool_call", "name": "get_weather", "arguments": {}, "tool_call_id": "t1"},
        {"type": "tool_call", "name": "get_weather", "arguments": {}, "tool_call_id": "t2"}]}
    results = {"role": "user", "content_items": [
        {"type": "tool_result", "tool_call_id": "t1", "text": blank, "is_error": True},
        {"type": "tool_result", "tool_call_id": "t2", "text": blank,
         "images": ["data:image/png;base64," + base64.b64encode(PNG).decode()]}]}
    sent = body("anthropic.claude-sonnet-4-6", {"tools": TOOLS}, [USER, calls, results])
    assert sent["messages"][2] == {"role": "user", "content": [
        {"toolResult": {"toolUseId": "t1", "content": [{"text": "(no output)"}], "status": "error"}},
        {"toolResult": {"toolUseId": "t2", "content": [
            {"image": {"format": "png", "source": {"bytes": base64.b64encode(PNG).decode()}}}]}},
        {"cachePoint": {"type": "default"}}]}  # (the conversation's automatic cache point)


def test_ids_that_fit_to_the_same_bedrock_id_stay_apart_and_keep_their_results():
    """Bedrock takes [a-zA-Z0-9_.:-]{1,64}: "call/1" and "call_1" (or two ids alike in their first 64
    characters) fitted to one toolUseId, so a result answered the other call.  The second gets a suffix of its
    own; the same history gives the same ids on every turn."""
    long = "x" * 64
    calls = [("call/1", "a"), ("call_1", "b"), (long + "1", "c"), (long + "2", "d")]
    history = [USER, {"role": "assistant", "content_items": [
        {"type": "tool_call", "name": "get_weather", "arguments": {"city": city}, "tool_call_id": call_id}
        for call_id, city in calls]},
        {"role": "user", "content_items": [
            {"type": "tool_result", "tool_call_id": call_id, "text": city} for call_id, city in reversed(calls)]}]
    sent = body(LLAMA, {"tools": TOOLS}, history)
    ids = ["call_1", "call_1_2", long, long[:62] + "_2"]
    assert [b["toolUse"]["toolUseId"] for b in sent["messages"][1]["content"]] == ids
    assert [(b["toolResult"]["toolUseId"], b["toolResult"]["content"]) for b in sent["messages"][2]["content"]] == [
        (i, [{"text": city}]) for i, (_, city) in reversed(list(zip(ids, calls)))]
    assert body(LLAMA, {"tools": TOOLS}, history) == sent


def test_history_with_tool_blocks_and_no_tools_still_gets_a_tool_config():
    history = [USER, {"role": "assistant", "content_items": [
        {"type": "tool_call", "name": "lookup", "arguments": {}, "tool_call_id": "t1"}]},
        {"role": "user", "content_items": [{"type": "tool_result", "tool_call_id": "t1", "text": "x"}]}]
    assert body(LLAMA, {}, history)["toolConfig"] == {
        "tools": [{"toolSpec": {"name": "lookup", "inputSchema": {"json": {"type": "object"}}}}]}


def test_images_documents_and_what_bedrock_cannot_take():
    message = {"role": "user", "content_items": [
        {"type": "inline_data", "data": PNG, "mime_type": "image/png"},
        {"type": "inline_data", "data": b"%PDF-1.4", "mime_type": "application/pdf"},
        {"type": "image_url", "image_url": "s3://bucket/cat.JPG"},
        {"type": "text", "text": "Describe."}]}
    assert body(LLAMA, {}, [message])["messages"][0]["content"] == [
        {"image": {"format": "png", "source": {"bytes": base64.b64encode(PNG).decode()}}},
        {"document": {"format": "pdf", "name": "document 1", "source": {"bytes": base64.b64encode(b"%PDF-1.4").decode()}}},
        {"image": {"format": "jpeg", "source": {"s3Location": {"uri": "s3://bucket/cat.JPG"}}}},
        {"text": "Describe."}]
    for item in ({"type": "image_url", "image_url": "https://example.com/a.png"},
                 {"type": "inline_data", "data": b"x", "mime_type": "audio/wav"}):
        with pytest.raises(UnsupportedParameterError):
            body(LLAMA, {}, [{"role": "user", "content_items": [item]}])
    with pytest.raises(ConfigError):
        body(LLAMA, {}, [{"role": "user", "content_items": [{"type": "image_url", "image_url": "data:image/png;base64,@@"}]}])


def test_consecutive_turns_of_one_role_are_joined_and_unsigned_thinking_not_replayed():
    history = [USER, USER, {"role": "assistant", "content_items": [
        {"type": "thinking", "thinking": "unsigned"}, {"type": "text", "text": "a"}]},
        {"role": "assistant", "content_items": [{"type": "text", "text": "b"}]}]
    assert body(LLAMA, {}, history)["messages"] == [
        {"role": "user", "content": [{"text": "hi"}, {"text": "hi"}]},
        {"role": "assistant", "content": [{"text": "a"}, {"text": "b"}]}]


def test_other_config_keys_refused():
    for key, value in (("image_config", {"aspect_ratio": "1:1"}), ("tts_config", [{"voice": "x"}]),
                       ("embedding_config", {"dimensions": 8})):
        with pytest.raises(UnsupportedParameterError):
            body(LLAMA, {key: value})


def test_model_names_inside_bedrock_ids():
    assert bedrock.claude_name(SONNET) == "claude-sonnet-4-5-20250929"
    assert bedrock.claude_name("anthropic.claude-opus-4-6-v1") == "claude-opus-4-6"
    assert bedrock.claude_name("eu.anthropic.claude-3-7-sonnet-20250219-v1:0") == "claude-3-7-sonnet-20250219"
    assert bedrock.claude_name("arn:aws:bedrock:us-east-1:1:inference-profile/us.anthropic.claude-haiku-4-5-v1:0") \
        == "claude-haiku-4-5"
    assert bedrock.claude_name(NOVA) is None and bedrock.claude_name(LLAMA) is None


# -- stream ----------------------------------------------------------------------------------------


def test_text_stream():
    events = run(bf.text_stream("Bon", "jour", input_tokens=12, output_tokens=3))
    check_stream(events)
    assert items(events) == [{"type": "text", "text": "Bon"}, {"type": "text", "text": "jour"}]
    assert events[-1]["finish_reason"] == "stop"
    assert events[-1]["usage_metadata"] == {"cached_tokens": None, "prompt_tokens": 12, "thoughts_tokens": None,
                                            "response_tokens": 3}


REASONING_TOOL = [
    bf.message_start(),
    bf.reasoning_delta(0, text="The user wants "), bf.reasoning_delta(0, text="weather."),
    bf.reasoning_delta(0, signature="EqQBCkYIBxgCKkD"), bf.reasoning_delta(0, signature="signature+part/2=="),
    bf.block_stop(0),
    bf.reasoning_delta(1, redacted=b"\x00\x01redacted\xff"), bf.block_stop(1),
    bf.text_delta("Let me check.", 2), bf.block_stop(2),
    bf.tool_start("tooluse_AbC123", "get_weather", 3),
    bf.tool_delta("", 3), bf.tool_delta('{"city": "Pa', 3), bf.tool_delta('ris"}', 3), bf.block_stop(3),
    bf.message_stop("tool_use"),
    bf.metadata(input_tokens=20, output_tokens=40, cache_read=1000, cache_write=300),
]


def test_reasoning_redacted_text_and_tool_call_with_fidelity():
    events = run(REASONING_TOOL)
    check_stream(events)
    assert items(events) == [
        {"type": "thinking", "thinking": "The user wants "},
        {"type": "thinking", "thinking": "weather."},
        {"type": "thinking", "thinking": "", "fidelity": {"signature": "EqQBCkYIBxgCKkDsignature+part/2=="}},
        {"type": "thinking", "thinking": "", "fidelity": {
            "redacted_content": base64.b64encode(b"\x00\x01redacted\xff").decode()}},
        {"type": "text", "text": "Let me check."},
        {"type": "partial_tool_call", "name": "get_weather", "arguments": "", "tool_call_id": "tooluse_AbC123"},
        {"type": "partial_tool_call", "name": "", "arguments": '{"city": "Pa', "tool_call_id": ""},
        {"type": "partial_tool_call", "name": "", "arguments": 'ris"}', "tool_call_id": ""},
        {"type": "tool_call", "name": "get_weather", "arguments": {"city": "Paris"}, "tool_call_id": "tooluse_AbC123"},
    ]
    assert events[-1]["finish_reason"] == "tool_call"
    assert events[-1]["usage_metadata"] == {"cached_tokens": 1000, "prompt_tokens": 320, "thoughts_tokens": None,
                                            "response_tokens": 40}


def test_collected_turn_replays_byte_exact():
    message = collect(run(REASONING_TOOL))
    assert message["content_items"][:2] == [
        {"type": "thinking", "thinking": "The user wants weather.",
         "fidelity": {"signature": "EqQBCkYIBxgCKkDsignature+part/2=="}},
        {"type": "thinking", "thinking": "", "fidelity": {
            "redacted_content": base64.b64encode(b"\x00\x01redacted\xff").decode()}}]
    result = {"role": "user", "content_items": [{"type": "tool_result", "tool_call_id": "tooluse_AbC123",
                                                 "text": "18 C"}]}
    sent = body(SONNET, {"tools": TOOLS, "prompt_caching": PromptCaching.DISABLE}, [USER, message, result])
    assert sent["messages"][1]["content"] == [
        {"reasoningContent": {"reasoningText": {"text": "The user wants weather.",
                                                "signature": "EqQBCkYIBxgCKkDsignature+part/2=="}}},
        {"reasoningContent": {"redactedContent": base64.b64encode(b"\x00\x01redacted\xff").decode()}},
        {"text": "Let me check."},
        {"toolUse": {"toolUseId": "tooluse_AbC123", "name": "get_weather", "input": {"city": "Paris"}}}]
    assert sent["messages"][2] == {"role": "user", "content": [
        {"toolResult": {"toolUseId": "tooluse_AbC123", "content": [{"text": "18 C"}]}}]}


def test_reasoning_after_a_redacted_block_keeps_its_own_text_and_signature():
    frames = [bf.message_start(), bf.reasoning_delta(0, redacted=b"R"), bf.block_stop(0),
              bf.reasoning_delta(1, text="second "), bf.reasoning_delta(1, text="thought"),
              bf.reasoning_delta(1, signature="S2"), bf.block_stop(1), bf.text_delta("ok", 2),
              bf.message_stop(), bf.metadata()]
    message = collect(run(frames))
    assert message["content_items"] == [
        {"type": "thinking", "thinking": "", "fidelity": {"redacted_content": "Ug=="}},
        {"type": "thinking", "thinking": "second thought", "fidelity": {"signature": "S2"}},
        {"type": "text", "text": "ok"}]


def test_redacted_block_after_unsigned_thinking_is_not_folded_into_it():
    frames = [bf.message_start(), bf.reasoning_delta(0, text="plain"), bf.block_stop(0),
              bf.reasoning_delta(1, redacted=b"R"), bf.block_stop(1), bf.text_delta("ok", 2),
              bf.message_stop(), bf.metadata()]
    message = collect(run(frames))
    assert message["content_items"] == [
        {"type": "thinking", "thinking": "plain"},
        {"type": "text", "text": "ok", "fidelity": {"redacted_content": "Ug=="}}]
    replay = body(LLAMA, {}, [USER, message])["messages"][1]["content"]
    assert replay == [{"reasoningContent": {"redactedContent": "Ug=="}}, {"text": "ok"}]


def test_two_tool_calls_and_a_tool_call_whose_input_comes_whole():
    frames = [bf.message_start(),
              bf.tool_start("t1", "a", 0), bf.tool_delta('{"x": 1}', 0), bf.block_stop(0),
              bf.tool_start("t2", "b", 1), bf.block_stop(1),
              bf.message_stop("tool_use"), bf.metadata()]
    calls = [i for i in items(run(frames)) if i["type"] == "tool_call"]
    assert calls == [{"type": "tool_call", "name": "a", "arguments": {"x": 1}, "tool_call_id": "t1"},
                     {"type": "tool_call", "name": "b", "arguments": {}, "tool_call_id": "t2"}]


def test_malformed_tool_input_is_a_tool_call_argument_parse_error():
    frames = [bf.message_start(), bf.tool_start("t1", "a", 0), bf.tool_delta('{"x": ', 0), bf.block_stop(0),
              bf.message_stop("tool_use"), bf.metadata()]
    with pytest.raises(ToolCallArgumentParseError) as info:
        run(frames)
    assert (info.value.tool_name, info.value.tool_call_id) == ("a", "t1")


@pytest.mark.parametrize("reason, finish", [("end_turn", "stop"), ("stop_sequence", "stop"),
                                            ("max_tokens", "length"), ("guardrail_intervened", "unknown"),
                                            ("content_filtered", "unknown"), ("model_context_window_exceeded",
                                                                               "unknown")])
def test_stop_reasons(reason, finish):
    assert run(bf.text_stream("x", reason=reason))[-1]["finish_reason"] == finish


def test_stream_without_metadata_completes_and_one_cut_before_message_stop_does_not():
    events = run([bf.message_start(), bf.text_delta("x"), bf.block_stop(0), bf.message_stop()])
    assert events[-1]["usage_metadata"] == {"cached_tokens": None, "prompt_tokens": None, "thoughts_tokens": None,
                                            "response_tokens": None}
    with pytest.raises(StreamProtocolError) as info:
        run([bf.message_start(), bf.text_delta("x")])
    assert info.value.truncated is True


def test_a_cut_frame_and_a_bad_crc_are_stream_protocol_errors():
    data = b"".join(bf.text_stream("hello"))
    with pytest.raises(StreamProtocolError):
        list(drive(bedrock.parse_stream(iter_messages([data[:-3]])), "bedrock"))
    frames = bf.text_stream("hello")
    frames[1] = bf.corrupt(frames[1])
    with pytest.raises(StreamProtocolError, match="CRC32"):
        run(frames)


def test_same_events_at_split_points_in_and_around_every_frame_boundary():
    data = b"".join(REASONING_TOOL)
    expected = [{k: v for k, v in e.items() if k != "created_at"} for e in run(REASONING_TOOL)]
    boundaries, end = [], 0
    for frame in REASONING_TOOL:
        end += len(frame)
        boundaries.append(end)
    points = {p + d for p in [0] + boundaries for d in (-5, -4, -1, 0, 1, 3, 8, 11, 12, 13)}
    points.update(range(0, len(data), 37))  # and a stride through the frames' middles (the decoder's own
    for i in sorted(p for p in points if 0 <= p <= len(data)):  # every-split test is in test_eventstream)
        chunks = [data[:i], data[i:]]
        events = list(drive(bedrock.parse_stream(iter_messages(chunks), "bedrock", "t_"), "bedrock"))
        assert [{k: v for k, v in e.items() if k != "created_at"} for e in events] == expected


def test_thinking_only_turn_is_an_empty_response():
    frames = [bf.message_start(), bf.reasoning_delta(0, text="hmm"), bf.reasoning_delta(0, signature="s"),
              bf.block_stop(0), bf.message_stop("max_tokens"), bf.metadata()]
    with pytest.raises(EmptyResponseError) as info:
        run(frames)
    assert info.value.finish_reason == "length"


def test_unknown_events_and_deltas_are_skipped():
    frames = [bf.message_start(), bf.event("somethingNew", {"a": 1}),
              bf.event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"citation": {"title": "t"}}}),
              bf.text_delta("x"), bf.message_stop(), bf.metadata()]
    assert items(run(frames)) == [{"type": "text", "text": "x"}]


def test_a_payload_that_is_not_json_is_a_stream_protocol_error():
    with pytest.raises(StreamProtocolError):
        run([bf.message_start(), bf.event("contentBlockDelta", b"{not json"), bf.message_stop()])
    with pytest.raises(StreamProtocolError):  # a delta without its "delta"
        run([bf.message_start(), bf.event("contentBlockDelta", {"contentBlockIndex": 0}), bf.message_stop()])


def test_image_output_block():
    frames = [bf.message_start(), bf.event("contentBlockStart", {"contentBlockIndex": 0, "start": {"image": {
        "format": "png"}}}),
        bf.event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"image": {"source": {
            "bytes": base64.b64encode(PNG[:6]).decode()}}}}),
        bf.event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"image": {"source": {
            "bytes": base64.b64encode(PNG[6:]).decode()}}}}),
        bf.block_stop(0), bf.message_stop(), bf.metadata()]
    assert items(run(frames)) == [{"type": "inline_data", "data": PNG, "mime_type": "image/png"}]


def test_server_tool_blocks_are_carried_for_replay_and_are_not_tool_calls():
    frames = [bf.message_start(),
              bf.event("contentBlockStart", {"contentBlockIndex": 0, "start": {"toolUse": {
                  "toolUseId": "srv1", "name": "nova_grounding", "type": "server_tool_use"}}}),
              bf.tool_delta('{"query": "x"}', 0), bf.block_stop(0),
              bf.event("contentBlockStart", {"contentBlockIndex": 1, "start": {"toolResult": {
                  "toolUseId": "srv1", "type": "nova_grounding_result"}}}),
              bf.event("contentBlockDelta", {"contentBlockIndex": 1, "delta": {"toolResult": [{"text": "found"}]}}),
              bf.block_stop(1), bf.text_delta("Answer.", 2), bf.message_stop(), bf.metadata()]
    events = run(frames)
    check_stream(events)
    assert events[-1]["finish_reason"] == "stop"
    message = collect(events)
    replay = body(NOVA, {"prompt_caching": PromptCaching.DISABLE}, [USER, message])["messages"][1]["content"]
    assert replay == [
        {"toolUse": {"toolUseId": "srv1", "name": "nova_grounding", "type": "server_tool_use",
                     "input": {"query": "x"}}},
        {"toolResult": {"toolUseId": "srv1", "type": "nova_grounding_result", "content": [{"text": "found"}]}},
        {"text": "Answer."}]


# -- usage -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("raw, buckets", [
    ({"inputTokens": 10, "outputTokens": 5, "totalTokens": 15}, (None, 10, None, 5)),
    # exclusive (as AWS documents): total = input + output + cache read + cache write
    ({"inputTokens": 10, "outputTokens": 5, "cacheReadInputTokens": 100, "cacheWriteInputTokens": 50,
      "totalTokens": 165}, (100, 60, None, 5)),
    # inclusive inputTokens (seen from some families in streams): its total leaves no room for the cache
    ({"inputTokens": 160, "outputTokens": 5, "cacheReadInputTokens": 100, "cacheWriteInputTokens": 50,
      "totalTokens": 165}, (100, 60, None, 5)),
    ({"inputTokens": 0, "outputTokens": 7, "cacheReadInputTokens": 900, "totalTokens": 907}, (900, 0, None, 7)),
    ({"inputTokens": 5, "outputTokens": 1, "cacheReadInputTokens": 3}, (3, 5, None, 1)),  # no total: as documented
    ({}, (None, None, None, None)),
])
def test_usage_in_the_exclusive_buckets(raw, buckets):
    got = bedrock.map_usage(raw)
    assert (got["cached_tokens"], got["prompt_tokens"], got["thoughts_tokens"], got["response_tokens"]) == buckets


# -- errors ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind, cls, status, retryable", [
    ("throttlingException", RateLimitError, 429, True),
    ("validationException", UpstreamError, 400, False),
    ("accessDeniedException", AuthenticationError, 403, False),
    ("internalServerException", ServerError, 500, True),
    ("serviceUnavailableException", ServerError, 503, True),
    ("modelStreamErrorException", ServerError, 424, True),
    ("modelTimeoutException", UpstreamError, 408, True),
    ("resourceNotFoundException", UpstreamError, 404, False),
    ("somethingElseException", UpstreamError, None, False),
])
def test_exception_frames_become_typed_errors(kind, cls, status, retryable):
    frames = [bf.message_start(), bf.text_delta("partial"), bf.exception(kind, "it went wrong")]
    with pytest.raises(UpstreamError) as info:
        run(frames)
    error = info.value
    assert type(error) is cls
    assert (error.status, error.error_type, error.message, error.retryable, error.client) == (
        status, kind, "it went wrong", retryable, "bedrock")


def test_model_stream_error_with_its_original_status():
    frames = [bf.message_start(), bf.exception("modelStreamErrorException", "upstream said no",
                                                originalStatusCode=400, originalMessage="bad")]
    with pytest.raises(UpstreamError) as info:
        run(frames)
    assert type(info.value) is UpstreamError and info.value.retryable is False and info.value.code == "400"
    frames = [bf.message_start(), bf.exception("modelStreamErrorException", "busy", originalStatusCode=429)]
    with pytest.raises(RateLimitError):
        run(frames)


def test_error_message_frames():
    with pytest.raises(ServerError) as info:
        run([bf.message_start(), bf.error("InternalFailure", "boom")])
    assert (info.value.error_type, info.value.message) == ("InternalFailure", "boom")


@pytest.mark.parametrize("headers, payload, cls, error_type, message", [
    ([(":message-type", bf.STRING, "exception"), (":exception-type", bf.INTEGER, 5)],
     b'{"message":"m"}', UpstreamError, None, "m"),
    ([(":message-type", bf.STRING, "exception"), (":exception-type", bf.BOOL_TRUE)],
     b'{"message":"m"}', UpstreamError, None, "m"),
    ([(":message-type", bf.STRING, "exception"), (":exception-type", bf.BYTES, b"throttlingException")],
     b'{"message":"slow down"}', RateLimitError, "throttlingException", "slow down"),
    ([(":message-type", bf.STRING, "error"), (":error-code", bf.LONG, 7), (":error-message", bf.BYTES, b"x")],
     b"", UpstreamError, None, "Bedrock error"),
], ids=["int-type", "bool-type", "bytes-type", "int-code"])
def test_an_exception_frame_whose_type_header_is_not_a_string_is_still_a_typed_error(headers, payload, cls,
                                                                                      error_type, message):
    """A header of another wire type where the type name belongs (an int, a bool, bytes): the error the
    frame means, never an AttributeError from the header's value."""
    with pytest.raises(UpstreamError) as info:
        run([bf.message_start(), bf.encode(headers, payload)])
    assert type(info.value) is cls
    assert (info.value.error_type, info.value.message, info.value.client) == (error_type, message, "bedrock")


def test_http_error_bodies_map_by_their_error_type_header_name():
    error = bedrock.stream_error("bedrock", "ValidationException:http://internal.amazon.com/coral/com.amazon.bedrock/",
                                 {"message": "Malformed input request"}, 400)
    assert (type(error), error.status, error.error_type, error.message) == (
        UpstreamError, 400, "ValidationException", "Malformed input request")
    assert type(bedrock.stream_error("bedrock", None, {"Message": "no"}, 403)) is AuthenticationError


# -- one-document answers (Converse without stream) --------------------------------------------------


def test_a_whole_converse_answer_reads_like_the_stream():
    payload = {"output": {"message": {"role": "assistant", "content": [
        {"reasoningContent": {"reasoningText": {"text": "think", "signature": "sig"}}},
        {"text": "Hello"},
        {"toolUse": {"toolUseId": "t1", "name": "f", "input": {"a": 1}}}]}},
        "stopReason": "tool_use", "usage": {"inputTokens": 3, "outputTokens": 4, "totalTokens": 7},
        "metrics": {"latencyMs": 5}}
    events = list(drive(bedrock.parse_document(payload, "bedrock"), "bedrock"))
    check_stream(events)
    assert collect(events)["content_items"] == [
        {"type": "thinking", "thinking": "think", "fidelity": {"signature": "sig"}},
        {"type": "text", "text": "Hello"},
        {"type": "tool_call", "name": "f", "arguments": {"a": 1}, "tool_call_id": "t1"}]
    assert events[-1]["finish_reason"] == "tool_call"
    with pytest.raises(UpstreamError):
        list(bedrock.parse_document({"message": "nope"}, "bedrock"))
    with pytest.raises(RateLimitError):
        list(bedrock.parse_document({"__type": "com.amazon.coral#ThrottlingException", "message": "slow"}, "bedrock"))
    with pytest.raises(StreamProtocolError):
        list(bedrock.parse_document({"unexpected": 1}, "bedrock"))


def test_protocol_record():
    record = bedrock.PROTOCOL
    assert (record.name, record.module) == ("bedrock", "bedrock")
    assert record.framing is iter_messages and record.quirk_keys == ()


def test_config_keys_beyond_the_seed():
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    sent = body(LLAMA, {"response_format": {"type": "json_schema", "name": "place", "schema": schema},
                        "fast_mode": True, "top_p": 0.5, "stop": ["END"]})
    assert sent["outputConfig"] == {"textFormat": {"type": "json_schema", "structure": {"jsonSchema": {
        "schema": json.dumps(schema, separators=(",", ":")), "name": "place"}}}}
    assert sent["serviceTier"] == {"type": "priority"}
    assert sent["inferenceConfig"] == {"topP": 0.5, "stopSequences": ["END"]}
    assert "outputConfig" not in body(LLAMA, {"response_format": {"type": "text"}})
    for config in ({"seed": 7}, {"response_format": {"type": "json_object"}}):
        with pytest.raises(UnsupportedParameterError):
            body(LLAMA, config)


def test_claude_top_p_rules():
    assert body(SONNET, {"top_p": 0.9})["inferenceConfig"] == {"maxTokens": 32000, "topP": 0.9}
    with pytest.raises(UnsupportedParameterError, match="one or the other"):
        body(SONNET, {"top_p": 0.9, "temperature": 0.5})
    with pytest.raises(UnsupportedParameterError, match="at least 0.95"):
        body(SONNET, {"top_p": 0.9, "thinking_level": "high"})
    with pytest.raises(UnsupportedParameterError, match="sampling parameters were removed"):
        body(OPUS47, {"top_p": 0.9})


@pytest.mark.parametrize("name", ["weather_tool_call.sse", "weather_answer.sse"])
def test_demo_recordings_are_event_streams_botocore_reads(name):
    eventstream = pytest.importorskip("botocore.eventstream")
    from agenthub.apps.demo import recording
    from agenthub.eventstream import Message

    data = recording("bedrock", name)
    buffer = eventstream.EventStreamBuffer()
    buffer.add_data(data)
    assert list(iter_messages([data])) == [Message(m.headers, m.payload) for m in buffer]
    events = list(drive(bedrock.parse_stream(iter_messages([data]), "bedrock"), "bedrock"))
    check_stream(events)
