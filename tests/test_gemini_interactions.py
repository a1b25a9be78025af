"""Gemini Interactions API: own fixtures at every byte split, request goldens, stateful chaining, moving
a conversation between generateContent and Interactions (fixtures cite their sources in their README)."""

import json
import os

import pytest

from agenthub import check_stream, collect
from agenthub.errors import ConfigError, RateLimitError, StreamProtocolError, UnsupportedParameterError, UpstreamError
from agenthub.providers import gemini, gemini_interactions as gi
from agenthub.providers._common import Endpoint
from agenthub.validate import check_config
from conftest import every_split, run_parser, sent, strip_ids

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "gemini_interactions")
BASE = "https://generativelanguage.googleapis.com"
URL = BASE + "/v1/interactions"
HEADERS = {"Content-Type": "application/json", "Accept": "text/event-stream", "x-goog-api-key": "test-key",
           "Api-Revision": "2026-05-20"}
SIG = gi.SIGNATURE
MODEL = "gemini-3.8-flash"


def fixture(name):
    with open(os.path.join(FIXTURES, name), "rb") as handle:
        return handle.read()


def parse(chunks, prefix="call_t_"):
    return run_parser(gi.parse_stream, chunks, client="gemini-interactions", tool_id_prefix=prefix)


def endpoint(base=BASE, quirks=None):
    return Endpoint("gemini-interactions", base, "test-key", None, quirks)


def build(messages, config=None, model=MODEL, stateful=False, **kwargs):
    """The request as sent: the dialect's plan through the gemini host (URL joined, key added)."""
    where = endpoint(**kwargs)
    return sent(gi.build_request(where, model, messages, check_config(config), stateful=stateful), where)


def user(*items):
    return {"role": "user", "content_items": [{"type": "text", "text": i} if isinstance(i, str) else i
                                              for i in items]}


def items(events):
    return [i for e in events for i in e["content_items"]]


# -- streams ------------------------------------------------------------------------------------

TEXT_ITEMS = [
    {"type": "text", "text": "1, 2, 3"},
    {"type": "text", "text": ", 4, 5"},
    {"type": "text", "text": " \u2014 f\u00fcnf."},
    {"type": "thinking", "thinking": "", "fidelity": {"interaction_id": "v1_ChdpbnRlcmFjdGlvbi10ZXh0LTAwMQ"}},
]


def test_text_stream_at_every_byte_split():
    data = fixture("text.sse")
    whole = parse([data])
    check_stream(whole)
    assert items(whole) == TEXT_ITEMS
    stop = whole[-1]
    assert stop["finish_reason"] == "stop"
    assert stop["usage_metadata"] == {"cached_tokens": 4, "prompt_tokens": 8, "thoughts_tokens": 0,
                                      "response_tokens": 9}
    expected = strip_ids(whole)
    for chunks in every_split(data):
        assert strip_ids(parse(chunks)) == expected
    assert strip_ids(parse([data[i:i + 1] for i in range(len(data))])) == expected
    message = collect(whole)
    assert message["content_items"] == [
        {"type": "text", "text": "1, 2, 3, 4, 5 \u2014 f\u00fcnf."},
        {"type": "thinking", "thinking": "", "fidelity": {"interaction_id": "v1_ChdpbnRlcmFjdGlvbi10ZXh0LTAwMQ"}}]


TOOL_ITEMS = [
    {"type": "thinking", "thinking": "The user wants the weather "},
    {"type": "thinking", "thinking": "in two cities."},
    {"type": "thinking", "thinking": "", "fidelity": {SIG: "CtUBAdHtim9sig/weather+A=="}},
    {"type": "partial_tool_call", "name": "get_weather", "arguments": "", "tool_call_id": "fc_paris_1"},
    {"type": "partial_tool_call", "name": "", "arguments": '{"city": "Paris"}', "tool_call_id": ""},
    {"type": "tool_call", "name": "get_weather", "arguments": {"city": "Paris"}, "tool_call_id": "fc_paris_1"},
    {"type": "partial_tool_call", "name": "get_weather", "arguments": "", "tool_call_id": "fc_tokyo_2"},
    {"type": "partial_tool_call", "name": "", "arguments": '{"city": "To', "tool_call_id": ""},
    {"type": "partial_tool_call", "name": "", "arguments": 'kyo", "unit": "c"}', "tool_call_id": ""},
    {"type": "tool_call", "name": "get_weather", "arguments": {"city": "Tokyo", "unit": "c"},
     "tool_call_id": "fc_tokyo_2"},
    {"type": "thinking", "thinking": "", "fidelity": {"interaction_id": "v1_ChdpbnRlcmFjdGlvbi10b29sLTAwMg"}},
]


def test_tool_calls_with_requires_action_at_every_byte_split():
    data = fixture("tool_round_trip.sse")
    whole = parse([data])
    check_stream(whole)
    assert items(whole) == TOOL_ITEMS
    assert whole[-1]["finish_reason"] == "tool_call"
    assert whole[-1]["usage_metadata"] == {"cached_tokens": None, "prompt_tokens": 80, "thoughts_tokens": 25,
                                           "response_tokens": 30}
    expected = strip_ids(whole)
    for chunks in every_split(data):
        assert strip_ids(parse(chunks)) == expected


def test_thinking_signatures_and_skipped_deltas():
    data = fixture("thinking_signatures.sse")
    whole = parse([data])
    check_stream(whole)
    assert items(whole) == [
        {"type": "thinking", "thinking": "", "fidelity": {SIG: "EqQBsig/first=="}},
        {"type": "text", "text": "Paris: 18\u00b0C, "},
        {"type": "text", "text": "Tokyo: 22\u00b0C."},
        {"type": "thinking", "thinking": "", "fidelity": {SIG: "EqQBsig/second=="}},
        {"type": "thinking", "thinking": "", "fidelity": {"interaction_id": "v1_ChdpbnRlcmFjdGlvbi1hbnN3LTAwMw"}},
    ]
    assert whole[-1]["usage_metadata"] == {"cached_tokens": 100, "prompt_tokens": 50, "thoughts_tokens": 40,
                                           "response_tokens": 12}
    for chunks in every_split(data):
        assert strip_ids(parse(chunks)) == strip_ids(whole)


def test_error_event_and_cut_stream():
    for chunks in every_split(fixture("error_mid_stream.sse")):
        with pytest.raises(RateLimitError) as info:
            parse(chunks)
        assert "Quota exceeded for interactions" in str(info.value)
    for chunks in every_split(fixture("cut_before_completed.sse")):
        with pytest.raises(StreamProtocolError):
            parse(chunks)


def _completed(status, extra=None):
    interaction = {"id": "v1_x", "status": status}
    interaction.update(extra or {})
    return ("event: step.start\ndata: {\"event_type\":\"step.start\",\"index\":0,\"step\":{\"type\":\"model_output\"}}"
            "\n\nevent: step.delta\ndata: {\"event_type\":\"step.delta\",\"index\":0,\"delta\":{\"type\":\"text\","
            "\"text\":\"hi\"}}\n\nevent: interaction.completed\ndata: " + json.dumps(
                {"event_type": "interaction.completed", "interaction": interaction}) + "\n\n").encode()


@pytest.mark.parametrize("status,finish", [("completed", "stop"), ("incomplete", "length"),
                                           ("requires_continuation", "length"), ("cancelled", "unknown"),
                                           ("budget_exceeded", "length")])
def test_completed_status_to_finish_reason(status, finish):
    assert parse([_completed(status)])[-1]["finish_reason"] == finish


def test_failed_interaction_raises_upstream_error():
    with pytest.raises(UpstreamError) as info:
        parse([_completed("failed", {"error": {"code": "INTERNAL", "message": "backend died"}})])
    assert "backend died" in str(info.value)


def test_a_failed_whole_interaction_raises_its_first_error():
    """The GA Interaction carries ``errors: [{code, message}]`` (google-genai 3.6.1's Interaction.errors)."""
    doc = {"id": "v1_bad", "status": "failed", "steps": [], "errors": [
        {"code": "RESOURCE_EXHAUSTED", "message": "quota for gemini-4-neon"}, {"code": "X", "message": "second"}]}
    from agenthub.stream import drive

    with pytest.raises(UpstreamError) as info:
        list(drive(gi.parse_document(doc, "gemini-interactions"), "gemini-interactions"))
    assert "quota for gemini-4-neon" in str(info.value) and "second" not in str(info.value)
    with pytest.raises(UpstreamError) as info:
        parse([_completed("failed", {"errors": [{"code": "INTERNAL", "message": "backend died"}]})])
    assert "backend died" in str(info.value)


def test_whole_interaction_document():
    doc = {"id": "v1_doc", "status": "requires_action", "steps": [
        {"type": "user_input", "content": [{"type": "text", "text": "weather?"}]},
        {"type": "thought", "signature": "sig=="},
        {"type": "function_call", "id": "fc_1", "name": "get_weather", "arguments": {"city": "Oslo"}},
    ], "usage": {"total_input_tokens": 5, "total_output_tokens": 3}}
    from agenthub.stream import drive

    events = list(drive(gi.parse_document(doc, "gemini-interactions"), "gemini-interactions"))
    check_stream(events)
    message = collect(events)
    assert message["content_items"] == [
        {"type": "thinking", "thinking": "", "fidelity": {SIG: "sig=="}},
        {"type": "tool_call", "name": "get_weather", "arguments": {"city": "Oslo"}, "tool_call_id": "fc_1"},
        {"type": "thinking", "thinking": "", "fidelity": {"interaction_id": "v1_doc"}},
    ]
    assert message["finish_reason"] == "tool_call"


# -- requests -----------------------------------------------------------------------------------


def test_golden_basic_request_is_stateless():
    request = build([user("Count to 5.")])
    assert (request.method, request.url, request.stream) == ("POST", URL, True)
    assert dict(request.headers) == HEADERS
    assert request.body == {"model": MODEL, "input": [{"type": "user_input", "content": [
        {"type": "text", "text": "Count to 5."}]}], "stream": True, "store": False}


def test_versioned_base_url():
    request = build([user("x")], base="http://127.0.0.1:9/v1beta")
    assert request.url == "http://127.0.0.1:9/v1beta/interactions"  # a base URL naming a version keeps it
    assert build([user("x")], base="http://127.0.0.1:9/v1/").url == "http://127.0.0.1:9/v1/interactions"
    where = endpoint("http://127.0.0.1:9")
    resume = sent(gi.resume_request(where, "v1_a/b", "evt_07"), where)
    assert (resume.method, resume.url) == (
        "GET", "http://127.0.0.1:9/v1/interactions/v1_a%2Fb?stream=true&last_event_id=evt_07")
    assert resume.headers["x-goog-api-key"] == "test-key" and "Content-Type" not in resume.headers
    cancel = sent(gi.cancel_request(where, "v1_a"), where)
    assert (cancel.method, cancel.url) == ("POST", "http://127.0.0.1:9/v1/interactions/v1_a/cancel")
    versioned = endpoint("http://127.0.0.1:9/v1beta")
    assert sent(gi.resume_request(versioned, "v1_a", None), versioned).url == \
        "http://127.0.0.1:9/v1beta/interactions/v1_a?stream=true"


def test_golden_config_mapping():
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    config = {
        "system_prompt": "Be brief.", "max_tokens": 256, "temperature": 0.2, "top_p": 0.9, "stop": ["END"],
        "seed": 7, "thinking_level": "medium", "thinking_summary": True,
        "tools": [{"name": "get_weather", "description": "Weather now", "parameters": {
            "type": "object", "properties": {"city": {"type": "string"}}}}],
        "tool_choice": ["get_weather"], "fast_mode": True,
        "response_format": {"type": "json_schema", "name": "n", "schema": schema},
    }
    body = build([user("hi")], config).body
    assert body == {
        "model": MODEL, "input": [{"type": "user_input", "content": [{"type": "text", "text": "hi"}]}],
        "stream": True, "store": False, "system_instruction": "Be brief.",
        "tools": [{"type": "function", "name": "get_weather", "description": "Weather now",
                   "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}],
        "generation_config": {"max_output_tokens": 256, "temperature": 0.2, "top_p": 0.9, "stop_sequences": ["END"],
                              "seed": 7, "thinking_level": "medium", "thinking_summaries": "auto",
                              "tool_choice": {"allowed_tools": {"mode": "any", "tools": ["get_weather"]}}},
        "response_format": {"type": "text", "mime_type": "application/json", "schema": schema},
        "service_tier": "priority",
    }


def test_a_structured_answer_sends_no_field_google_genai_deprecates():
    """The May 2026 revision folded response_mime_type into the polymorphic response_format: the body is a
    CreateModelInteraction of google-genai 3.6.1 with no deprecated field set but the samplers the caller asked
    for (temperature and top_p, deprecated on the Interactions API, are still sent when given)."""
    interactions = pytest.importorskip("google.genai._gaos.types.interactions")
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    for config in ({"response_format": {"type": "json_schema", "name": "n", "schema": schema}},
                   {"response_format": {"type": "json_object"}}, {"temperature": 0.2, "top_p": 0.9}):
        body = build([user("hi")], config).body
        request = interactions.CreateModelInteraction.model_validate(body)
        used = {name for name in request.model_fields_set if type(request).model_fields[name].deprecated}
        if request.generation_config is not None:
            generation = request.generation_config
            used |= {"generation_config." + name for name in generation.model_fields_set
                     if type(generation).model_fields[name].deprecated}
        assert used == ({"generation_config.temperature", "generation_config.top_p"} if "temperature" in config
                        else set()), config
        assert "response_mime_type" not in body


@pytest.mark.parametrize("model,level,wire", [
    ("gemini-3.5-flash", "none", "minimal"), ("gemini-3.8-flash", "none", "low"), ("gemini-3.8-flash", "xhigh", "high"),
    ("gemini-3-pro-preview", "medium", "high"), ("gemini-2.5-flash", "low", "low"), ("gemini-3.8-flash", "max", "high"),
    # Gemini 4: generation_config.thinking_level "xhigh" (google-genai 3.6.1's Literal) on Neon and Hydrogen only
    ("gemini-4-neon", "xhigh", "xhigh"), ("gemini-4-hydrogen", "max", "xhigh"), ("gemini-4-argon", "xhigh", "high"),
    ("gemini-4-neon", "none", "low"), ("gemini-2.5-pro", "xhigh", "high"), ("gemini-2.5-flash", "max", "high"),
])
def test_thinking_level_is_clamped_like_generate_content(model, level, wire):
    assert build([user("x")], {"thinking_level": level}, model=model).body["generation_config"] == {
        "thinking_level": wire}


@pytest.mark.parametrize("choice,wire", [("auto", "auto"), ("required", "any"), ("none", "none")])
def test_tool_choice(choice, wire):
    config = {"tools": [{"name": "f"}], "tool_choice": choice}
    assert build([user("x")], config).body["generation_config"] == {"tool_choice": wire}


def test_a_strict_tool_is_refused_as_on_generate_content():
    """google-genai 3.6.1's Interactions Function (name, description, parameters, ...) has no strict flag: a strict
    tool was sent without it (the schema silently not enforced); now it is refused before sending."""
    tool = {"name": "f", "parameters": {"type": "object", "properties": {}}}
    with pytest.raises(UnsupportedParameterError) as info:
        build([user("x")], {"tools": [dict(tool, strict=True)]})
    assert info.value.parameter == "tools" and "no strict mode" in str(info.value)
    assert build([user("x")], {"tools": [dict(tool, strict=False)]}).body["tools"] == [
        {"type": "function", "name": "f", "parameters": {"type": "object", "properties": {}}}]


def test_json_object_and_refused_keys():
    body = build([user("x")], {"response_format": {"type": "json_object"}}).body
    assert body["response_format"] == {"type": "text", "mime_type": "application/json"}
    with pytest.raises(UnsupportedParameterError):
        build([user("x")], {"prompt_caching": "disable"})
    with pytest.raises(UnsupportedParameterError):
        build([user("x")], {"image_config": {"aspect_ratio": "1:1"}})


def test_user_media_and_tool_result_images():
    history = [
        user("look", {"type": "image_url", "image_url": "https://example.com/cat.png"},
             {"type": "inline_data", "data": b"\x00\x01", "mime_type": "audio/wav"},
             {"type": "image_url", "image_url": "data:image/png;base64,iVBORw=="}),
        {"role": "assistant", "content_items": [
            {"type": "tool_call", "name": "snap", "arguments": {}, "tool_call_id": "fc_9"}]},
        {"role": "user", "content_items": [
            {"type": "tool_result", "text": "done", "tool_call_id": "fc_9", "images": ["https://example.com/s.jpg"]},
            {"type": "text", "text": "and?"}]},
    ]
    assert build(history).body["input"] == [
        {"type": "user_input", "content": [
            {"type": "text", "text": "look"},
            {"type": "image", "uri": "https://example.com/cat.png", "mime_type": "image/png"},
            {"type": "audio", "data": "AAE=", "mime_type": "audio/wav"},
            {"type": "image", "data": "iVBORw==", "mime_type": "image/png"}]},
        {"type": "thought", "signature": gemini.PLACEHOLDER_SIGNATURE},  # (an unsigned call, on Gemini 3)
        {"type": "function_call", "id": "fc_9", "name": "snap", "arguments": {}},
        {"type": "function_result", "call_id": "fc_9", "name": "snap", "result": [
            {"type": "text", "text": "done"}, {"type": "image", "uri": "https://example.com/s.jpg",
                                               "mime_type": "image/jpeg"}]},
        {"type": "user_input", "content": [{"type": "text", "text": "and?"}]},
    ]
    with pytest.raises(ConfigError):
        build([{"role": "user", "content_items": [{"type": "tool_result", "text": "x", "tool_call_id": "nope"}]}])


def test_an_empty_text_is_no_block_and_a_message_of_nothing_else_is_left_out_as_on_generate_content():
    """The Gemini API refuses an empty text part (a 400); generateContent leaves it out, and so do the steps here: an
    empty text beside other content is dropped, a user message of empty texts is left out, a result's empty text is
    no block beside its images, and messages that leave nothing to send are a ConfigError before sending."""
    call = {"role": "assistant", "content_items": [
        {"type": "text", "text": ""}, {"type": "tool_call", "name": "snap", "arguments": {}, "tool_call_id": "fc_9"}]}
    result = {"role": "user", "content_items": [
        {"type": "text", "text": ""},
        {"type": "tool_result", "text": "", "tool_call_id": "fc_9", "images": ["https://example.com/s.jpg"]}]}
    later = {"role": "assistant", "content_items": [{"type": "text", "text": "A cat."}]}
    history = [user("", "look", ""), call, result, later, user(""), later, user("and?", "")]
    assert build(history).body["input"] == [
        {"type": "user_input", "content": [{"type": "text", "text": "look"}]},
        {"type": "thought", "signature": gemini.PLACEHOLDER_SIGNATURE},
        {"type": "function_call", "id": "fc_9", "name": "snap", "arguments": {}},
        {"type": "function_result", "call_id": "fc_9", "name": "snap", "result": [
            {"type": "image", "uri": "https://example.com/s.jpg", "mime_type": "image/jpeg"}]},
        {"type": "model_output", "content": [{"type": "text", "text": "A cat."}]},
        {"type": "model_output", "content": [{"type": "text", "text": "A cat."}]},
        {"type": "user_input", "content": [{"type": "text", "text": "and?"}]},
    ]
    assert gemini.build_request(Endpoint("gemini", BASE, "k"), MODEL, history[:3], {}).body["contents"][0] == {
        "role": "user", "parts": [{"text": "look"}]}
    with pytest.raises(ConfigError) as caught:
        build([user("", "")])
    assert str(caught.value) == ("gemini-interactions: the messages hold nothing this wire takes (every text in them "
                                 "is empty, or white space alone on Claude's wires, which it leaves out): nothing was "
                                 "sent")


def _tool_turn():
    return collect(parse([fixture("tool_round_trip.sse")]))


def test_tool_round_trip_replays_thought_signature_and_calls_stateless():
    answer = _tool_turn()
    results = {"role": "user", "content_items": [
        {"type": "tool_result", "text": "18C", "tool_call_id": "fc_paris_1"},
        {"type": "tool_result", "text": "22C", "tool_call_id": "fc_tokyo_2"}]}
    body = build([user("Weather in Paris and Tokyo?"), answer, results]).body
    assert body["store"] is False and "previous_interaction_id" not in body
    assert body["input"] == [
        {"type": "user_input", "content": [{"type": "text", "text": "Weather in Paris and Tokyo?"}]},
        {"type": "thought", "signature": "CtUBAdHtim9sig/weather+A==",
         "summary": [{"type": "text", "text": "The user wants the weather in two cities."}]},
        {"type": "function_call", "id": "fc_paris_1", "name": "get_weather", "arguments": {"city": "Paris"}},
        {"type": "function_call", "id": "fc_tokyo_2", "name": "get_weather",
         "arguments": {"city": "Tokyo", "unit": "c"}},
        {"type": "function_result", "call_id": "fc_paris_1", "name": "get_weather", "result": "18C"},
        {"type": "function_result", "call_id": "fc_tokyo_2", "name": "get_weather", "result": "22C"},
    ]


def test_stateful_chains_on_the_previous_interaction():
    first = build([user("Weather in Paris and Tokyo?")], stateful=True).body
    assert first["store"] is True and "previous_interaction_id" not in first
    unstored = _tool_turn()  # a stateless call's answer (store false): it cannot be chained on
    assert build([user("w?"), unstored, user("and?")], stateful=True).body["input"][0]["type"] == "user_input"
    answer = gi.stored_answer(unstored)
    assert answer["content_items"][-1]["fidelity"] == {"interaction_id": "v1_ChdpbnRlcmFjdGlvbi10b29sLTAwMg",
                                                       "stored": True}
    assert unstored["content_items"][-1]["fidelity"] == {"interaction_id": "v1_ChdpbnRlcmFjdGlvbi10b29sLTAwMg"}
    results = {"role": "user", "content_items": [
        {"type": "tool_result", "text": "18C", "tool_call_id": "fc_paris_1"},
        {"type": "tool_result", "text": "22C", "tool_call_id": "fc_tokyo_2"}]}
    body = build([user("Weather in Paris and Tokyo?"), answer, results], stateful=True).body
    assert body == {"model": MODEL, "input": [
        {"type": "function_result", "call_id": "fc_paris_1", "name": "get_weather", "result": "18C"},
        {"type": "function_result", "call_id": "fc_tokyo_2", "name": "get_weather", "result": "22C"}],
        "previous_interaction_id": "v1_ChdpbnRlcmFjdGlvbi10b29sLTAwMg", "stream": True, "store": True}
    # an assistant message from elsewhere (no interaction id): the whole history goes again
    foreign = {"role": "assistant", "content_items": [{"type": "text", "text": "Hi"}]}
    body = build([user("a"), foreign, user("b")], stateful=True).body
    assert "previous_interaction_id" not in body and len(body["input"]) == 3


def test_background_asks_to_store():
    body = build([user("x")], {"background": True}).body
    assert (body["background"], body["store"]) == (True, True)


def test_generate_content_history_moves_to_interactions_and_back():
    # a generateContent answer: signatures on the function call and on a text part
    g_answer = {"role": "assistant", "content_items": [
        {"type": "thinking", "thinking": "plan", "fidelity": {SIG: "g-sig-1"}},
        {"type": "text", "text": "Checking.", "fidelity": {SIG: "g-sig-2"}},
        {"type": "tool_call", "name": "f", "arguments": {"a": 1}, "tool_call_id": "call_x",
         "fidelity": {SIG: "g-sig-3", gemini.SYNTHETIC_ID: True}},
        {"type": "thinking", "thinking": "unsigned, from another provider"},
    ]}
    result = {"role": "user", "content_items": [{"type": "tool_result", "text": "ok", "tool_call_id": "call_x"}]}
    steps = build([user("go"), g_answer, result]).body["input"]
    assert steps[1:] == [
        {"type": "thought", "signature": "g-sig-1", "summary": [{"type": "text", "text": "plan"}]},
        {"type": "thought", "signature": "g-sig-2"},
        {"type": "model_output", "content": [{"type": "text", "text": "Checking."}]},
        {"type": "thought", "signature": "g-sig-3"},
        {"type": "function_call", "id": "call_x", "name": "f", "arguments": {"a": 1}},
        {"type": "function_result", "call_id": "call_x", "name": "f", "result": "ok"},
    ]
    # an Interactions answer goes to generateContent: its signed thoughts become signed thought parts
    answer = _tool_turn()
    contents = gemini.build_request(Endpoint("gemini", BASE, "k"), MODEL, [user("w?"), answer], {}).body["contents"]
    assert contents[1] == {"role": "model", "parts": [
        {"text": "The user wants the weather in two cities.", "thought": True,
         "thoughtSignature": "CtUBAdHtim9sig/weather+A=="},
        # a call without a signature of its own gets Google's documented placeholder (as any foreign call)
        {"functionCall": {"id": "fc_paris_1", "name": "get_weather", "args": {"city": "Paris"}},
         "thoughtSignature": gemini.PLACEHOLDER_SIGNATURE},
        {"functionCall": {"id": "fc_tokyo_2", "name": "get_weather", "args": {"city": "Tokyo", "unit": "c"}}},
    ]}


@pytest.mark.parametrize("model, placeholder", [(MODEL, True), ("gemini-2.5-flash", False)])
def test_a_call_from_another_provider_gets_the_placeholder_signature_on_gemini_3(model, placeholder):
    """Gemini 3 refuses a function call of the current turn without a thought signature ("Function call is missing a
    thought_signature", a 400): a model turn of another provider's calls gets Google's documented placeholder in a
    thought step before its first call, as generateContent gets it on that call; a turn with a signed thought
    before its calls (the Interactions API's own) is sent as it came."""
    claude = {"role": "assistant", "content_items": [
        {"type": "thinking", "thinking": "two cities", "fidelity": {"signature": "claude-sig"}},
        {"type": "text", "text": "Checking."},
        {"type": "tool_call", "name": "get_weather", "arguments": {"city": "Paris"}, "tool_call_id": "toolu_1"},
        {"type": "tool_call", "name": "get_weather", "arguments": {"city": "Tokyo"}, "tool_call_id": "toolu_2"}]}
    results = user({"type": "tool_result", "text": "18C", "tool_call_id": "toolu_1"},
                   {"type": "tool_result", "text": "22C", "tool_call_id": "toolu_2"})
    steps = build([user("Weather in Paris and Tokyo?"), claude, results], model=model).body["input"]
    assert steps[1:] == [
        {"type": "model_output", "content": [{"type": "text", "text": "Checking."}]},
        *([{"type": "thought", "signature": gemini.PLACEHOLDER_SIGNATURE}] if placeholder else []),
        {"type": "function_call", "id": "toolu_1", "name": "get_weather", "arguments": {"city": "Paris"}},
        {"type": "function_call", "id": "toolu_2", "name": "get_weather", "arguments": {"city": "Tokyo"}},
        {"type": "function_result", "call_id": "toolu_1", "name": "get_weather", "result": "18C"},
        {"type": "function_result", "call_id": "toolu_2", "name": "get_weather", "result": "22C"}]
    own = build([user("Weather in Paris and Tokyo?"), _tool_turn()], model=model).body["input"]
    assert [step["type"] for step in own] == ["user_input", "thought", "function_call", "function_call"]
    assert own[1]["signature"] == "CtUBAdHtim9sig/weather+A=="


def test_a_second_function_call_on_a_step_index_whose_call_has_not_stopped_is_a_stream_protocol_error():
    """Issue 29 D3 (I01): the first call is never replaced without a word."""
    import json as _json
    from agenthub.errors import StreamProtocolError
    from agenthub.providers import gemini_interactions
    from agenthub.sse import SSEEvent

    def ev(kind, body):
        return SSEEvent(_json.dumps(dict(body, event_type=kind)), kind)

    events = [ev("interaction.created", {"interaction": {"id": "v1_x", "status": "in_progress"}}),
              ev("step.start", {"index": 0, "step": {"type": "function_call", "name": "a", "id": "c1", "arguments": {}}}),
              ev("step.start", {"index": 0, "step": {"type": "function_call", "name": "b", "id": "c2", "arguments": {}}}),
              ev("step.stop", {"index": 0}),
              ev("interaction.completed", {"interaction": {"id": "v1_x", "status": "requires_action"}})]
    with pytest.raises(StreamProtocolError, match=r"a second function_call step on step index 0 before the first "
                                                  r"\(a\) stopped"):
        list(gemini_interactions.parse_stream(iter(events), "gemini-interactions"))


def test_request_bodies_fit_google_genais_request_types():
    """Every body shape above is a google-genai 3.6.1 CreateModelInteractionParam, strictly (tests/sdk_types.py:
    no key the TypedDict does not name, every value of its type): the golden config, Gemini 4's xhigh, media and
    tool results, a replayed tool round trip, background, stateful chaining."""
    pytest.importorskip("google.genai")
    from google.genai._gaos.types.interactions import createmodelinteraction
    from sdk_types import conforms

    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    tool = {"name": "get_weather", "description": "Weather now", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}}}}
    answer = _tool_turn()
    results = {"role": "user", "content_items": [{"type": "tool_result", "text": "18C", "tool_call_id": "fc_paris_1"},
                                                 {"type": "tool_result", "text": "22C", "tool_call_id": "fc_tokyo_2"}]}
    bodies = [
        build([user("hi")], {"system_prompt": "Be brief.", "max_tokens": 256, "temperature": 0.2, "top_p": 0.9,
                             "stop": ["END"], "seed": 7, "thinking_level": "medium", "thinking_summary": True,
                             "tools": [tool], "tool_choice": ["get_weather"], "fast_mode": True,
                             "response_format": {"type": "json_schema", "name": "n", "schema": schema}}).body,
        build([user("hi")], {"thinking_level": "xhigh", "tool_choice": "required", "tools": [tool]},
              model="gemini-4-neon").body,
        build([user("hi")], {"response_format": {"type": "json_object"}, "background": True}).body,
        build([user("look", {"type": "image_url", "image_url": "https://example.com/cat.png"},
                    {"type": "inline_data", "data": b"\x00\x01", "mime_type": "audio/wav"})]).body,
        build([user("Weather in Paris and Tokyo?"), answer, results]).body,
        build([user("w?"), gi.stored_answer(_tool_turn()), results], stateful=True).body,
    ]
    assert bodies[-1]["previous_interaction_id"] == "v1_ChdpbnRlcmFjdGlvbi10b29sLTAwMg"
    for body in bodies:
        assert conforms(body, createmodelinteraction.CreateModelInteractionParam) is None, body


def _numbered_from_zero():
    """A server that numbers its calls from 0 each turn reuses ``call_0`` for another function in a later turn."""
    ask = user("Weather, then the time.")
    history = [ask]
    for name, text in (("get_weather", "18 C"), ("get_time", "noon")):
        history += [{"role": "assistant", "content_items": [
                        {"type": "tool_call", "name": name, "arguments": {}, "tool_call_id": "call_0"}]},
                    {"role": "user", "content_items": [{"type": "tool_result", "tool_call_id": "call_0", "text": text}]}]
    return history


@pytest.mark.parametrize("client_type", ["gemini", "gemini-interactions"])
def test_a_result_names_the_latest_call_of_its_id_before_it_not_a_later_one(client_type):
    """A function response carries its call's name (the Gemini API pairs them by it): the weather's result went as
    get_time's (the name of the history's last call of that id), whole or resumed from the previous call's."""
    from agenthub import AutoLLMClient

    history = _numbered_from_zero()
    config = {"tools": [{"name": "get_weather"}, {"name": "get_time"}]}
    client = AutoLLMClient(MODEL, client_type=client_type, api_key="k", base_url="http://127.0.0.1:9")
    client.plan(history[:3], config)  # (the next plan resumes from this one's conversion)
    for body in (client.plan(history, config).body,
                 AutoLLMClient(MODEL, client_type=client_type, api_key="k",
                               base_url="http://127.0.0.1:9").plan(history, config).body):
        if client_type == "gemini":
            assert [part["functionResponse"] for content in body["contents"] for part in content["parts"]
                    if "functionResponse" in part] == [
                {"name": "get_weather", "id": "call_0", "response": {"result": "18 C"}},
                {"name": "get_time", "id": "call_0", "response": {"result": "noon"}}]
        else:  # (the second call_0 made unique: the record's unique_call_ids)
            second = "call_" + __import__("hashlib").sha256(b"call_0\x002").hexdigest()[:24]
            assert [(step["type"], step.get("id") or step["call_id"], step["name"]) for step in body["input"]
                    if step["type"] in ("function_call", "function_result")] == [
                ("function_call", "call_0", "get_weather"), ("function_result", "call_0", "get_weather"),
                ("function_call", second, "get_time"), ("function_result", second, "get_time")]
    steps = gi.input_steps("gemini-interactions", history[3:], history[:3])  # (a stateful call's tail)
    assert [step.get("name") for step in steps if step["type"] == "function_result"] == ["get_time"]
    steps = gi.input_steps("gemini-interactions", history[2:], history[:2])
    assert [step.get("name") for step in steps if step["type"] == "function_result"] == ["get_weather", "get_time"]
