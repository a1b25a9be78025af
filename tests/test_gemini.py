"""Gemini generateContent: recorded streams, request goldens, signature round trips, media, end to end."""

import base64
import io
import json
import os
import wave

import pytest

from agenthub import AutoLLMClient, ThinkingLevel, check_stream, collect
from agenthub.errors import (
    ConfigError,
    EmptyResponseError,
    ServerError,
    StreamProtocolError,
    UnsupportedParameterError,
    UpstreamError,
)
from agenthub.media import audio_format, save_inline_data, save_wav, to_wav
from agenthub.providers import gemini, gemini_embeddings
from agenthub.providers._common import Endpoint
from agenthub.stream import drive
from agenthub.validate import check_config
from conftest import ROOT, run_parser, sent, splits, strip_ids, summarize, wire_params

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "gemini")
RECORDINGS = os.path.join(ROOT, "agenthub", "recordings", "gemini")
SIG = gemini.SIGNATURE
BASE = "https://generativelanguage.googleapis.com"
STREAM_URL = BASE + "/v1beta/models/{}:streamGenerateContent?alt=sse"
HEADERS = {"Content-Type": "application/json", "Accept": "text/event-stream", "x-goog-api-key": "test-key"}


def fixture(name):
    with open(os.path.join(FIXTURES, name), "rb") as handle:
        return handle.read()


def recording(name):
    with open(os.path.join(RECORDINGS, name), "rb") as handle:
        return handle.read()


def parse(data, prefix="call_t_", chunks=None):
    return run_parser(gemini.parse_stream, chunks or [data], client="gemini", tool_id_prefix=prefix)


def endpoint(quirks=None, key="test-key", base=BASE, headers=None):
    return Endpoint("gemini", base, key, headers, quirks)


def build(model, messages, config=None, **kwargs):
    where = endpoint(**kwargs)
    return sent(gemini.build_request(where, model, messages, check_config(config)), where)


def assert_request(request, model, body):
    """An exact golden: method, URL (no key in it), headers and JSON body."""
    assert (request.method, request.stream) == ("POST", True)
    assert request.url == STREAM_URL.format(model)
    assert dict(request.headers) == HEADERS
    assert request.body == body


def user(*items):
    return {"role": "user", "content_items": [{"type": "text", "text": i} if isinstance(i, str) else i
                                              for i in items]}


def items(events, kind=None):
    return [i for e in events for i in e["content_items"] if kind is None or i["type"] == kind]


def signatures(events):
    counts = {"text": 0, "function_call": 0, "thought": 0}
    for item in items(events):
        if SIG in (item.get("fidelity") or {}):
            key = {"text": "text", "tool_call": "function_call", "thinking": "thought"}.get(item["type"])
            if key:
                counts[key] += 1
    return counts


# -- recorded streams (../shared/wire/gemini) ---------------------------------------------------


@pytest.mark.parametrize("name,data,sidecar", wire_params("gemini"))
def test_wire_stream_matches_its_sidecar(name, data, sidecar):
    expect = sidecar["expect"]
    reference = None
    for chunks in splits(data, samples=12):
        events = parse(data, chunks=chunks)
        check_stream(events)
        if reference is None:
            reference = events
        assert strip_ids(events) == strip_ids(reference)
    summary = summarize(reference)
    assert summary["text"] == expect["text"]
    assert summary["thinking"] == expect["thinking"]
    assert summary["finish_reason"] == expect["finish_reason"]
    calls = summary["tool_calls"]
    assert [(c["name"], c["arguments"]) for c in calls] == [(c["name"], c["arguments"]) for c in expect["tool_calls"]]
    for got, want in zip(calls, expect["tool_calls"]):
        if want["id"] is None:
            assert got["id"]
        else:
            assert got["id"] == want["id"]
    assert len({c["id"] for c in calls}) == len(calls)
    raw = expect["usage"]
    cached = raw.get("cached")
    assert summary["usage"] == {
        "cached_tokens": cached,
        "prompt_tokens": None if raw["input"] is None else raw["input"] - (cached or 0),
        "thoughts_tokens": raw.get("reasoning"),
        "response_tokens": raw["output"],
    }
    extras = sidecar.get("expect_extras", {})
    if "thought_signatures" in extras:
        assert signatures(reference) == extras["thought_signatures"]
    complete = items(reference, "tool_call")
    for entry in extras.get("function_call_thought_signatures", []):
        call = complete[entry["call_index"]]
        assert call["name"] == entry["name"]
        assert (call.get("fidelity") or {}).get(SIG) == entry["thoughtSignature"]
        assert call["fidelity"][gemini.SYNTHETIC_ID] is True


@pytest.mark.parametrize("name,data,sidecar", wire_params("gemini"))
def test_wire_stream_cut_before_its_finish_is_an_error(name, data, sidecar):
    cut = data[: data.rindex(b"data:")]  # the finishReason chunk never arrives
    with pytest.raises(StreamProtocolError):
        parse(cut)


@pytest.mark.parametrize("name,data,sidecar", wire_params("gemini"))
def test_wire_stream_round_trip_replays_signatures_on_their_parts(name, data, sidecar):
    events = parse(data)
    answer = collect(events)
    calls = [i for i in answer["content_items"] if i["type"] == "tool_call"]
    followup = [user("go on")] if not calls else [
        {"role": "user", "content_items": [{"type": "tool_result", "text": "ok", "tool_call_id": c["tool_call_id"]}
                                           for c in calls]}]
    request = build("gemini-2.5-flash", [user("hi"), answer] + followup)
    model = request.body["contents"][1]
    assert model["role"] == "model"
    want_signatures = [i["fidelity"][SIG] for i in answer["content_items"]
                       if SIG in (i.get("fidelity") or {}) and i["type"] != "thinking"]
    got_signatures = [p["thoughtSignature"] for p in model["parts"] if "thoughtSignature" in p]
    assert got_signatures == want_signatures
    for part, call in zip([p for p in model["parts"] if "functionCall" in p], calls):
        assert "id" not in part["functionCall"]  # the server sent none: the synthetic id stays home
        assert part["functionCall"]["args"] == call["arguments"]
    if calls:
        responses = request.body["contents"][2]["parts"]
        assert [p["functionResponse"] for p in responses] == [
            {"name": c["name"], "response": {"result": "ok"}} for c in calls]


# -- own streams (tests/fixtures/gemini, shaped after Google's documentation) ---------------------


def test_image_output_stream():
    events = parse(fixture("image_output.sse"))
    check_stream(events)
    got = items(events)
    assert [i["type"] for i in got] == ["thinking", "inline_thinking", "text", "inline_data"]
    assert got[1]["mime_type"] == "image/png" and got[1]["data"].startswith(b"\x89PNG")
    assert "fidelity" not in got[1]
    assert got[3]["data"].startswith(b"\x89PNG") and got[3]["fidelity"][SIG]
    assert got[2]["fidelity"][SIG] != got[3]["fidelity"][SIG]
    assert events[-1]["finish_reason"] == "stop"
    assert events[-1]["usage_metadata"] == {"cached_tokens": None, "prompt_tokens": 12, "thoughts_tokens": 18,
                                            "response_tokens": 1296}
    # replay: the signed image goes back inline with its signature; the unsigned thought image is left out
    message = collect(events)
    parts = build("gemini-3-pro-image-preview", [user("draw"), message, user("bluer")]).body["contents"][1]["parts"]
    assert parts == [
        {"text": "Here is your red square.", "thoughtSignature": got[2]["fidelity"][SIG]},
        {"inlineData": {"mimeType": "image/png", "data": base64.b64encode(got[3]["data"]).decode()},
         "thoughtSignature": got[3]["fidelity"][SIG]},
    ]


def test_tts_stream_yields_raw_pcm_and_saves_a_playable_wav(tmp_path):
    events = parse(fixture("tts_audio.sse"))
    check_stream(events)
    audio = items(events, "inline_data")
    assert [a["mime_type"] for a in audio] == ["audio/L16;codec=pcm;rate=24000"] * 2
    path = save_wav(collect(events), str(tmp_path / "speech.wav"))
    with wave.open(path, "rb") as wav:
        assert (wav.getnchannels(), wav.getsampwidth(), wav.getframerate()) == (1, 2, 24000)
        frames = wav.readframes(wav.getnframes())
    assert frames == audio[0]["data"] + audio[1]["data"]
    assert events[-1]["usage_metadata"]["response_tokens"] == 20


def test_signature_on_a_final_empty_text_part():
    events = parse(fixture("signature_on_empty_text.sse"))
    check_stream(events)
    got = items(events)
    assert got[-1] == {"type": "text", "text": "", "fidelity": {SIG: got[-1]["fidelity"][SIG]}}
    message = collect(events)
    assert message["content_items"] == [{"type": "text", "text": "Paris is the capital of France.",
                                         "fidelity": got[-1]["fidelity"]}]
    parts = build("gemini-3-flash-preview", [user("q"), message, user("more")]).body["contents"][1]["parts"]
    assert parts == [{"text": "Paris is the capital of France.", "thoughtSignature": got[-1]["fidelity"][SIG]}]


def test_parallel_calls_with_server_ids_keep_them():
    events = parse(fixture("parallel_calls_with_ids.sse"))
    check_stream(events)
    calls = items(events, "tool_call")
    assert [(c["tool_call_id"], c["arguments"]) for c in calls] == [
        ("fc-paris-1", {"city": "Paris"}), ("fc-tokyo-2", {"city": "Tokyo", "units": "C"})]
    assert SIG in calls[0]["fidelity"] and "fidelity" not in calls[1]
    partial = items(events, "partial_tool_call")
    assert [p["tool_call_id"] for p in partial] == ["fc-paris-1", "", "fc-tokyo-2", ""]
    assert events[-1]["finish_reason"] == "tool_call"
    message = collect(events)
    results = {"role": "user", "content_items": [
        {"type": "tool_result", "text": "21 C", "tool_call_id": "fc-tokyo-2"},
        {"type": "tool_result", "text": "18 C", "tool_call_id": "fc-paris-1"}]}
    contents = build("gemini-3.7-flash", [user("weather?"), message, results]).body["contents"]
    assert contents[1]["parts"] == [
        {"functionCall": {"id": "fc-paris-1", "name": "get_weather", "args": {"city": "Paris"}},
         "thoughtSignature": calls[0]["fidelity"][SIG]},
        {"functionCall": {"id": "fc-tokyo-2", "name": "get_weather", "args": {"city": "Tokyo", "units": "C"}}},
    ]
    assert contents[2] == {"role": "user", "parts": [
        {"functionResponse": {"name": "get_weather", "id": "fc-tokyo-2", "response": {"result": "21 C"}}},
        {"functionResponse": {"name": "get_weather", "id": "fc-paris-1", "response": {"result": "18 C"}}}]}


def test_max_tokens_usage_and_heartbeat_chunk():
    events = parse(fixture("max_tokens_cached.sse"))
    check_stream(events)
    assert summarize(events)["text"] == "Once upon a time, in a land"
    assert events[-1]["finish_reason"] == "length"
    assert events[-1]["usage_metadata"] == {"cached_tokens": 2048, "prompt_tokens": 2100 - 2048 + 30,
                                            "thoughts_tokens": 12, "response_tokens": 8}


def test_safety_finish_is_unknown():
    events = parse(fixture("safety_finish.sse"))
    check_stream(events)
    assert events[-1]["finish_reason"] == "unknown"
    assert summarize(events)["text"] == "I can help with part of"


def test_in_stream_error_raises_upstream_error():
    with pytest.raises(ServerError) as info:
        parse(fixture("error_in_stream.sse"))
    assert info.value.status == 503 and info.value.retryable
    assert "overloaded" in str(info.value)


def test_named_error_event_and_error_list():
    with pytest.raises(UpstreamError):
        parse(b'event: error\ndata: {"error": {"code": 400, "message": "bad", "status": "INVALID_ARGUMENT"}}\n\n')
    with pytest.raises(UpstreamError) as info:
        parse(b'data: [{"error": {"code": 429, "message": "quota", "status": "RESOURCE_EXHAUSTED"}}]\n\n')
    assert info.value.status == 429


def test_blocked_prompt_raises_with_its_reason():
    with pytest.raises(UpstreamError) as info:
        parse(fixture("prompt_blocked.sse"))
    assert info.value.error_type == "PROHIBITED_CONTENT" and not info.value.retryable


def test_keepalives_and_relay_end_markers_are_skipped():
    body = (b'data: \n\ndata: {"candidates": [{"content": {"parts": [{"text": "ok"}]}, "finishReason": "STOP"}]}\n\n'
            b"data: [DONE]\n\n")
    events = parse(body)
    check_stream(events)
    assert summarize(events)["text"] == "ok"


def test_cut_off_stream_is_a_protocol_error():
    with pytest.raises(StreamProtocolError):
        parse(fixture("cut_off.sse"))


def test_thinking_only_turn_is_an_empty_response():
    body = (b'data: {"candidates": [{"content": {"parts": [{"text": "hmm", "thought": true}]}, '
            b'"finishReason": "MAX_TOKENS"}], "usageMetadata": {"promptTokenCount": 3, "thoughtsTokenCount": 9}}\n\n')
    with pytest.raises(EmptyResponseError) as info:
        parse(body)
    assert info.value.finish_reason == "length"


def test_a_long_decode_hop_is_a_cut_answer():
    """Gemini 4's long decode (google-genai 3.6.1's FinishReason.CONTINUATION, Candidate.continuation_token): a hop
    that stopped at the per-request cap with budget left ends the answer at length (the token is not sent back)."""
    body = (b'data: {"candidates": [{"content": {"parts": [{"text": "part one"}], "role": "model"}}]}\n\n'
            b'data: {"candidates": [{"content": {"parts": [{"text": ", cut"}], "role": "model"}, '
            b'"finishReason": "CONTINUATION", "continuationToken": "Ct0k"}], '
            b'"usageMetadata": {"promptTokenCount": 4, "candidatesTokenCount": 65536}}\n\n')
    events = parse(body)
    assert [i["text"] for e in events for i in e["content_items"] if i["type"] == "text"] == ["part one", ", cut"]
    assert events[-1]["finish_reason"] == "length"
    assert events[-1]["usage_metadata"]["response_tokens"] == 65536


def test_candidate_without_parts_and_malformed_payloads():
    body = (b'data: {"candidates": [{"content": {"role": "model"}, "finishReason": "MAX_TOKENS"}]}\n\n')
    with pytest.raises(EmptyResponseError):
        parse(body)
    with pytest.raises(StreamProtocolError):
        parse(b'data: {"candidates": [{"content": {"parts": [{"text": 5}]}, "finishReason": "STOP"}]}\n\n')
    with pytest.raises(StreamProtocolError):
        parse(b"data: not json\n\n")


def test_file_data_output_is_an_image_url():
    body = (b'data: {"candidates": [{"content": {"parts": [{"text": "Here:"}, {"fileData": {"mimeType": "image/png", '
            b'"fileUri": "gs://bucket/out.png"}}, {"fileData": {"mimeType": "video/mp4", "fileUri": "gs://b/v.mp4"}}]}, '
            b'"finishReason": "STOP"}]}\n\n')
    events = parse(body)
    check_stream(events)
    assert items(events) == [{"type": "text", "text": "Here:"}, {"type": "image_url", "image_url": "gs://bucket/out.png"}]


def test_vertex_streamed_arguments_nested_paths():
    data = fixture("vertex_nested_args.sse")
    reference = None
    for chunks in splits(data, samples=10):
        events = parse(data, chunks=chunks)
        check_stream(events)
        reference = reference or events
        assert strip_ids(events) == strip_ids(reference)
    calls = items(reference, "tool_call")
    assert calls[0]["arguments"] == {
        "traveler": {"name": 'Ada "the" Lovelace', "age": 36},
        "stops": [{"city": "Zürich", "nights": 2.5}, {"city": "Paris Nord"}],
        "window seat": True,
        "notes": None,
    }
    assert calls[1]["name"] == "noop" and calls[1]["arguments"] == {}
    assert SIG in calls[0]["fidelity"] and SIG not in calls[1]["fidelity"]
    fragments = [p["arguments"] for p in items(reference, "partial_tool_call")]
    assert len(fragments) > 4  # streamed live, not in one piece
    assert reference[-1]["finish_reason"] == "tool_call"


def test_vertex_arguments_revisiting_a_closed_object_are_refused():
    with pytest.raises(StreamProtocolError):
        parse(fixture("vertex_revisit.sse"))


def test_vertex_call_closed_by_another_part_and_by_finish():
    def chunk(part, finish=None):
        candidate = {"content": {"parts": [part]}}
        if finish:
            candidate["finishReason"] = finish
        return "data: " + json.dumps({"candidates": [candidate]}) + "\n\n"

    body = (chunk({"functionCall": {"name": "a", "willContinue": True}})
            + chunk({"functionCall": {"partialArgs": [{"jsonPath": "$.x[1]", "numberValue": 1}], "willContinue": True}})
            + chunk({"text": "between"})
            + chunk({"functionCall": {"name": "b", "willContinue": True,
                                      "partialArgs": [{"jsonPath": '$["k"]', "stringValue": "v"}]}}, "STOP"))
    events = parse(body.encode())
    check_stream(events)
    calls = items(events, "tool_call")
    assert [(c["name"], c["arguments"]) for c in calls] == [("a", {"x": [None, 1]}), ("b", {"k": "v"})]
    assert summarize(events)["text"] == "between"


# -- request goldens ------------------------------------------------------------------------------


def test_golden_basic_request():
    request = build("gemini-2.5-flash", [user("Hello")],
                    {"system_prompt": "Be brief.", "max_tokens": 256, "temperature": 0.2})
    assert_request(request, "gemini-2.5-flash", {
        "contents": [{"role": "user", "parts": [{"text": "Hello"}]}],
        "systemInstruction": {"parts": [{"text": "Be brief."}]},
        "generationConfig": {"maxOutputTokens": 256, "temperature": 0.2},
    })
    assert "test-key" not in request.url


def test_url_forms():
    assert build("models/gemini-2.5-flash", [user("x")], base=BASE + "/").url == STREAM_URL.format("gemini-2.5-flash")
    assert build("gemini-2.5-flash", [user("x")], base=BASE + "/v1beta").url == STREAM_URL.format("gemini-2.5-flash")
    assert build("tunedModels/my-tune", [user("x")]).url == BASE + "/v1beta/tunedModels/my-tune:streamGenerateContent?alt=sse"
    vertex = "https://aiplatform.googleapis.com/v1/publishers/google"
    assert build("gemini-2.5-flash", [user("x")], base=vertex).url == (
        vertex + "/models/gemini-2.5-flash:streamGenerateContent?alt=sse")
    keyless = build("gemini-2.5-flash", [user("x")], key=None, base="http://127.0.0.1:8080",
                    headers={"X-Gateway": "1"})
    assert dict(keyless.headers) == {"Content-Type": "application/json", "Accept": "text/event-stream",
                                     "X-Gateway": "1"}


TOOLS = [
    {"name": "get_weather", "description": "Current weather.",
     "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"],
                    "additionalProperties": False}},
    {"name": "now"},
]


@pytest.mark.parametrize("choice,wire", [
    ("auto", {"mode": "AUTO"}),
    ("required", {"mode": "ANY"}),
    ("none", {"mode": "NONE"}),
    (["get_weather"], {"mode": "ANY", "allowedFunctionNames": ["get_weather"]}),
])
def test_golden_tools_and_tool_choice(choice, wire):
    request = build("gemini-2.5-flash", [user("x")], {"tools": TOOLS, "tool_choice": choice})
    assert_request(request, "gemini-2.5-flash", {
        "contents": [{"role": "user", "parts": [{"text": "x"}]}],
        "tools": [{"functionDeclarations": [
            {"name": "get_weather", "description": "Current weather.", "parametersJsonSchema": TOOLS[0]["parameters"]},
            {"name": "now"}]}],
        "toolConfig": {"functionCallingConfig": wire},
    })


def test_vertex_quirk_asks_for_streamed_arguments():
    body = build("gemini-3.1-pro-preview", [user("x")], {"tools": TOOLS},
                 quirks={"stream_function_call_arguments": True}).body
    assert body["toolConfig"] == {"functionCallingConfig": {"streamFunctionCallArguments": True}}


@pytest.mark.parametrize("model,level,thinking", [
    ("gemini-3-flash-preview", "none", {"thinkingLevel": "MINIMAL"}),
    ("gemini-3-flash-preview", "medium", {"thinkingLevel": "MEDIUM"}),
    ("gemini-3-flash-preview", "xhigh", {"thinkingLevel": "HIGH"}),
    ("gemini-3-pro-preview", "none", {"thinkingLevel": "LOW"}),
    ("gemini-3-pro-preview", "medium", {"thinkingLevel": "HIGH"}),  # a tie rounds up
    ("gemini-3.1-pro-preview", "none", {"thinkingLevel": "LOW"}),
    ("gemini-3.1-pro-preview", "medium", {"thinkingLevel": "MEDIUM"}),
    ("gemini-3.8-flash", "none", {"thinkingLevel": "LOW"}),
    ("gemini-3-pro-image-preview", "low", {"thinkingLevel": "MINIMAL"}),
    ("gemini-3-pro-image-preview", "medium", {"thinkingLevel": "HIGH"}),
    ("gemini-2.5-flash", "none", {"thinkingBudget": 0}),
    ("gemini-2.5-flash", "high", {"thinkingBudget": 24576}),
    ("gemini-2.5-flash-lite", "low", {"thinkingBudget": 1024}),
    ("gemini-2.5-pro", "none", {"thinkingBudget": 128}),
    ("gemini-2.5-pro", "xhigh", {"thinkingBudget": 32768}),
    ("gemini-2.0-flash", "high", None),
    ("gemini-2.5-flash-image", "high", None),
    # Gemini 4 (google-genai 3.6.1 names XHIGH): Neon and Hydrogen take it, Argon and Carbon top out at HIGH;
    # none takes MINIMAL
    ("gemini-4-neon", "xhigh", {"thinkingLevel": "XHIGH"}),
    ("gemini-4-neon", "max", {"thinkingLevel": "XHIGH"}),
    ("gemini-4-hydrogen", "xhigh", {"thinkingLevel": "XHIGH"}),
    ("gemini-4-neon", "none", {"thinkingLevel": "LOW"}),
    ("gemini-4-argon", "xhigh", {"thinkingLevel": "HIGH"}),
    ("gemini-4-argon", "none", {"thinkingLevel": "LOW"}),
    ("gemini-4-argon", "medium", {"thinkingLevel": "MEDIUM"}),
    ("gemini-4-carbon", "max", {"thinkingLevel": "HIGH"}),
    ("gemini-3.1-pro-preview", "max", {"thinkingLevel": "HIGH"}),
    ("gemini-3.5-flash", "xhigh", {"thinkingLevel": "HIGH"}),
])
def test_thinking_level_is_clamped_per_model(model, level, thinking):
    body = build(model, [user("x")], {"thinking_level": level}).body
    assert body.get("generationConfig", {}).get("thinkingConfig") == thinking


def test_thinking_summary_alone_and_with_a_level():
    assert build("gemini-2.5-pro", [user("x")], {"thinking_summary": True}).body["generationConfig"] == {
        "thinkingConfig": {"includeThoughts": True}}
    body = build("gemini-3-flash-preview", [user("x")], {"thinking_summary": True,
                                                          "thinking_level": ThinkingLevel.LOW}).body
    assert body["generationConfig"] == {"thinkingConfig": {"thinkingLevel": "LOW", "includeThoughts": True}}


def test_golden_user_media():
    png = b"\x89PNG\r\n\x1a\nfake"
    message = user("Describe these.",
                   {"type": "image_url", "image_url": "data:image/png;base64," + base64.b64encode(png).decode()},
                   {"type": "image_url", "image_url": "https://example.com/cat.jpg?size=large"},
                   {"type": "image_url", "image_url": "gs://bucket/scan"},
                   {"type": "inline_data", "data": b"%PDF-1.7", "mime_type": "application/pdf"})
    assert build("gemini-2.5-flash", [message]).body["contents"] == [{"role": "user", "parts": [
        {"text": "Describe these."},
        {"inlineData": {"mimeType": "image/png", "data": base64.b64encode(png).decode()}},
        {"fileData": {"mimeType": "image/jpeg", "fileUri": "https://example.com/cat.jpg?size=large"}},
        {"fileData": {"fileUri": "gs://bucket/scan"}},
        {"inlineData": {"mimeType": "application/pdf", "data": base64.b64encode(b"%PDF-1.7").decode()}},
    ]}]
    with pytest.raises(ConfigError):
        build("gemini-2.5-flash", [user({"type": "image_url", "image_url": "data:image/png;base64,%%%"})])


def test_golden_history_replay():
    png = base64.b64encode(b"png-bytes").decode()
    history = [
        user("What's the weather in Paris? Here is a map."),
        {"role": "assistant", "content_items": [
            {"type": "thinking", "thinking": "unsigned summary"},
            {"type": "thinking", "thinking": "signed thought", "fidelity": {SIG: "c2lnLXRob3VnaHQ="}},
            {"type": "thinking", "thinking": "foreign", "fidelity": {"signature": "anthropic-sig"}},
            {"type": "text", "text": "Let me check.", "fidelity": {SIG: "c2lnLXRleHQ="}},
            {"type": "text", "text": ""},
            {"type": "tool_call", "name": "get_weather", "arguments": {"city": "Paris"}, "tool_call_id": "call_x_0",
             "fidelity": {SIG: "c2lnLWNhbGw=", gemini.SYNTHETIC_ID: True}},
            {"type": "tool_call", "name": "get_time", "arguments": {}, "tool_call_id": "fc-2"},
            {"type": "embedding", "embedding": [0.1]},
        ]},
        {"role": "user", "content_items": [
            {"type": "tool_result", "text": "18 C", "tool_call_id": "call_x_0",
             "images": ["data:image/png;base64," + png, "https://example.com/radar.png"]},
            {"type": "tool_result", "text": "12:00", "tool_call_id": "fc-2"},
            {"type": "text", "text": "Thanks!"},
        ]},
    ]
    assert build("gemini-2.5-flash", history).body["contents"] == [
        {"role": "user", "parts": [{"text": "What's the weather in Paris? Here is a map."}]},
        {"role": "model", "parts": [
            {"text": "signed thought", "thought": True, "thoughtSignature": "c2lnLXRob3VnaHQ="},
            {"text": "Let me check.", "thoughtSignature": "c2lnLXRleHQ="},
            {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}, "thoughtSignature": "c2lnLWNhbGw="},
            {"functionCall": {"id": "fc-2", "name": "get_time", "args": {}}},
        ]},
        {"role": "user", "parts": [  # the turn after the calls: their responses, one per call, nothing between
            {"functionResponse": {"name": "get_weather", "response": {"result": "18 C"},
                                  "parts": [{"inlineData": {"mimeType": "image/png", "data": png}}]}},
            {"functionResponse": {"name": "get_time", "id": "fc-2", "response": {"result": "12:00"}}}]},
        {"role": "user", "parts": [{"fileData": {"mimeType": "image/png", "fileUri": "https://example.com/radar.png"}},
                                   {"text": "Thanks!"}]},
    ]


def test_foreign_tool_calls_get_the_placeholder_signature_on_gemini_3_only():
    history = [user("q"), {"role": "assistant", "content_items": [
        {"type": "tool_call", "name": "f", "arguments": {}, "tool_call_id": "toolu_1"},
        {"type": "tool_call", "name": "f", "arguments": {"n": 1}, "tool_call_id": "toolu_2"}]},
        {"role": "user", "content_items": [{"type": "tool_result", "text": "a", "tool_call_id": "toolu_1"},
                                           {"type": "tool_result", "text": "b", "tool_call_id": "toolu_2"}]}]
    parts = build("gemini-3-pro-preview", history).body["contents"][1]["parts"]
    assert parts[0]["thoughtSignature"] == gemini.PLACEHOLDER_SIGNATURE and "thoughtSignature" not in parts[1]
    for model in ("gemini-2.5-flash", "gemini-3-pro-image-preview"):
        parts = build(model, history).body["contents"][1]["parts"]
        assert all("thoughtSignature" not in p for p in parts)


def test_tool_result_without_its_call_is_a_config_error():
    with pytest.raises(ConfigError):
        build("gemini-2.5-flash", [{"role": "user", "content_items": [
            {"type": "tool_result", "text": "x", "tool_call_id": "nowhere"}]}])


def test_empty_user_message_and_empty_assistant_message():
    body = build("gemini-2.5-flash", [{"role": "user", "content_items": []},
                                      {"role": "assistant", "content_items": [{"type": "text", "text": ""}]},
                                      user("x")]).body
    # an empty text is no part (Gemini refuses one: "it has an empty text parameter"): the empty turns are left out
    assert body["contents"] == [{"role": "user", "parts": [{"text": "x"}]}]


def test_golden_image_config():
    request = build("gemini-3-pro-image-preview", [user("a cat")],
                    {"image_config": {"aspect_ratio": "16:9", "image_size": "2K"}}, quirks={"image_output": True})
    assert_request(request, "gemini-3-pro-image-preview", {
        "contents": [{"role": "user", "parts": [{"text": "a cat"}]}],
        "generationConfig": {"responseModalities": ["TEXT", "IMAGE"],
                             "imageConfig": {"aspectRatio": "16:9", "imageSize": "2K"}}})
    body = build("gemini-2.5-flash-image", [user("a cat")], quirks={"image_output": True}).body
    assert body["generationConfig"] == {"responseModalities": ["TEXT", "IMAGE"]}


def test_golden_tts_single_voice_sends_only_the_last_message():
    history = [user("earlier"), {"role": "assistant", "content_items": [
        {"type": "inline_data", "data": b"\x00\x00", "mime_type": "audio/L16;codec=pcm;rate=24000"}]},
        user("Say cheerfully: ", "have a wonderful day!")]
    request = build("gemini-2.5-flash-preview-tts", history,
                    {"tts_config": [{"voice": "Kore"}], "max_tokens": 1000, "thinking_level": "high"},
                    quirks={"tts": True})
    assert_request(request, "gemini-2.5-flash-preview-tts", {
        "contents": [{"role": "user", "parts": [{"text": "Say cheerfully: "}, {"text": "have a wonderful day!"}]}],
        "generationConfig": {"maxOutputTokens": 1000, "responseModalities": ["AUDIO"],
                             "speechConfig": {"voiceConfig": {"prebuiltVoiceConfig": {"voiceName": "Kore"}}}},
    })
    default = build("gemini-2.5-flash-preview-tts", [user("hi")], quirks={"tts": True}).body
    assert default["generationConfig"]["speechConfig"]["voiceConfig"]["prebuiltVoiceConfig"]["voiceName"] == "Kore"


def test_golden_tts_two_speakers():
    body = build("gemini-2.5-pro-preview-tts", [user("Joe: Hi!\nJane: Hello!")],
                 {"tts_config": [{"voice": "Kore", "speaker": "Joe"}, {"voice": "Puck", "speaker": "Jane"}]}).body
    assert body["generationConfig"] == {"responseModalities": ["AUDIO"], "speechConfig": {
        "multiSpeakerVoiceConfig": {"speakerVoiceConfigs": [
            {"speaker": "Joe", "voiceConfig": {"prebuiltVoiceConfig": {"voiceName": "Kore"}}},
            {"speaker": "Jane", "voiceConfig": {"prebuiltVoiceConfig": {"voiceName": "Puck"}}}]}}}


@pytest.mark.parametrize("speakers", [
    [{"voice": "Kore"}, {"voice": "Puck"}],
    [{"voice": "Kore", "speaker": "A"}, {"voice": "Puck", "speaker": "A"}],
    [{"voice": "Kore", "speaker": "A"}, {"voice": "Puck", "speaker": "B"}, {"voice": "Zephyr", "speaker": "C"}],
])
def test_tts_other_shapes_are_config_errors(speakers):
    with pytest.raises(ConfigError):
        build("gemini-2.5-flash-preview-tts", [user("x")], {"tts_config": speakers})


@pytest.mark.parametrize("config", [{"tools": TOOLS}, {"system_prompt": "x"}])
def test_tts_refuses_what_speech_models_reject(config):
    with pytest.raises(UnsupportedParameterError):
        build("gemini-2.5-flash-preview-tts", [user("x")], config, quirks={"tts": True})


def test_tts_needs_a_text_only_last_user_message():
    with pytest.raises(UnsupportedParameterError):
        build("gemini-2.5-flash-preview-tts", [user({"type": "image_url", "image_url": "https://x/y.png"})],
              quirks={"tts": True})
    with pytest.raises(ConfigError):
        build("gemini-2.5-flash-preview-tts", [user("x"), {"role": "assistant", "content_items": []}],
              quirks={"tts": True})
    with pytest.raises(ConfigError):
        build("gemini-2.5-flash-preview-tts", [user("")], quirks={"tts": True})


@pytest.mark.parametrize("config", [{"prompt_caching": "disable"}, {"prompt_caching": "enhance"},
                                    {"embedding_config": {"dimensions": 8}}])
def test_unsupported_parameters(config):
    with pytest.raises(UnsupportedParameterError):
        build("gemini-2.5-flash", [user("x")], config)
    assert build("gemini-2.5-flash", [user("x")], {"prompt_caching": "enable"}).body == {
        "contents": [{"role": "user", "parts": [{"text": "x"}]}]}


# -- embeddings -----------------------------------------------------------------------------------


def test_golden_embed_single_and_batch():
    request = sent(gemini_embeddings.build_request(endpoint({"embeddings": True}), "gemini-embedding-001",
                                                   [user("hello")], check_config({"embedding_config": {"dimensions": 768}})),
                   endpoint({"embeddings": True}))
    assert (request.method, request.stream) == ("POST", False)
    assert request.url == BASE + "/v1beta/models/gemini-embedding-001:embedContent"
    assert dict(request.headers) == {"Content-Type": "application/json", "Accept": "application/json",
                                     "x-goog-api-key": "test-key"}
    assert request.body == {"content": {"parts": [{"text": "hello"}]}, "outputDimensionality": 768}
    request = sent(gemini_embeddings.build_request(endpoint(), "gemini-embedding-001",
                                                   [user("a", "b"), {"role": "user", "content_items": []}], {}), endpoint())
    assert request.url == BASE + "/v1beta/models/gemini-embedding-001:batchEmbedContents"
    assert request.body == {"requests": [
        {"model": "models/gemini-embedding-001", "content": {"parts": [{"text": "a"}, {"text": "b"}]}},
        {"model": "models/gemini-embedding-001", "content": {"parts": [{"text": " "}]}}]}
    with pytest.raises(UnsupportedParameterError):
        gemini_embeddings.build_request(endpoint(), "gemini-embedding-001", [user("a")],
                                        check_config({"tools": TOOLS}))
    with pytest.raises(UnsupportedParameterError):
        gemini_embeddings.build_request(endpoint(), "gemini-embedding-001", [
            {"role": "assistant", "content_items": [{"type": "tool_call", "name": "f", "arguments": {},
                                                     "tool_call_id": "1"}]}], {})


def test_embedding_responses():
    events = list(drive(gemini_embeddings.parse_response(json.loads(fixture("embed_single.json")), "gemini"),
                        "gemini"))
    check_stream(events)
    assert items(events) == [{"type": "embedding", "embedding": [0.0125, -0.5, 0.25, 1.0]}]
    assert events[-1]["usage_metadata"] == {"cached_tokens": None, "prompt_tokens": 4, "thoughts_tokens": None,
                                            "response_tokens": None}
    assert events[-1]["finish_reason"] == "stop"
    events = list(drive(gemini_embeddings.parse_response(json.loads(fixture("embed_batch.json")), "gemini"),
                        "gemini"))
    check_stream(events)
    assert [i["embedding"] for i in items(events)] == [[0.1, 0.2, 0.3], [-0.1, -0.2, -0.3]]
    with pytest.raises(UpstreamError):
        list(drive(gemini_embeddings.parse_response({"error": {"code": 400, "message": "bad"}}, "gemini"), "gemini"))
    with pytest.raises(StreamProtocolError):
        list(drive(gemini_embeddings.parse_response({"nothing": 1}, "gemini"), "gemini"))


# -- the replay demo's recordings -----------------------------------------------------------------


def test_demo_recordings_round_trip():
    first = parse(recording("weather_tool_call.sse"))
    check_stream(first)
    call = items(first, "tool_call")[0]
    assert (call["name"], call["arguments"]) == ("get_weather", {"city": "Paris"})
    assert call["fidelity"][SIG] and call["fidelity"][gemini.SYNTHETIC_ID] is True
    assert first[-1]["finish_reason"] == "tool_call"
    answer = parse(recording("weather_answer.sse"))
    check_stream(answer)
    text = summarize(answer)["text"]
    assert "18 °C" in text and "sunny" in text
    assert answer[-1]["finish_reason"] == "stop"
    assert answer[-1]["usage_metadata"] == {"cached_tokens": None, "prompt_tokens": 112, "thoughts_tokens": 24,
                                            "response_tokens": 16}
    for chunks in splits(recording("weather_answer.sse"), samples=10):
        events = parse(b"", chunks=chunks)
        check_stream(events)
        assert strip_ids(events) == strip_ids(answer)


# -- media ----------------------------------------------------------------------------------------


def test_audio_format_parsing():
    assert audio_format("audio/L16;codec=pcm;rate=24000") == (24000, 1, 2)
    assert audio_format("audio/l16; rate=16000; channels=2") == (16000, 2, 2)
    assert audio_format("audio/pcm") == (24000, 1, 2)
    assert audio_format("audio/pcm;rate=8000;bits=8") == (8000, 1, 1)
    for bad in ("audio/mpeg", "image/png", "audio/L16;rate=abc", "audio/pcm;bits=12"):
        with pytest.raises(ConfigError):
            audio_format(bad)


def test_save_wav_from_bytes_items_and_events(tmp_path):
    pcm = b"\x01\x00\x02\x00\x03\x00"
    path = save_wav(pcm, tmp_path / "a.wav")
    with wave.open(path, "rb") as wav:
        assert (wav.getnchannels(), wav.getsampwidth(), wav.getframerate(), wav.getnframes()) == (1, 2, 24000, 3)
        assert wav.readframes(3) == pcm
    item = {"type": "inline_data", "data": pcm + b"\x04", "mime_type": "audio/L16;rate=8000;channels=1"}
    with wave.open(io.BytesIO(to_wav(item)), "rb") as wav:
        assert wav.getframerate() == 8000 and wav.readframes(10) == pcm  # the cut-off frame is dropped
    stereo = to_wav(pcm + pcm[:2], mime_type="audio/L16;rate=44100;channels=2")
    with wave.open(io.BytesIO(stereo), "rb") as wav:
        assert (wav.getnchannels(), wav.getframerate(), wav.getnframes()) == (2, 44100, 2)
    wav_bytes = to_wav(pcm)
    assert to_wav({"type": "inline_data", "data": wav_bytes, "mime_type": "audio/wav"}) == wav_bytes
    with pytest.raises(ConfigError):
        to_wav({"role": "assistant", "content_items": [{"type": "text", "text": "no audio"}]})
    with pytest.raises(ConfigError):
        to_wav([{"type": "inline_data", "data": pcm, "mime_type": "audio/L16;rate=24000"},
                {"type": "inline_data", "data": pcm, "mime_type": "audio/L16;rate=16000"}])


@pytest.mark.parametrize("source, path, mime_type", [
    (5, "a.wav", None), (None, "a.wav", None), ([5], "a.wav", None), ({"content_items": 5}, "a.wav", None),
    ({"type": "inline_data", "data": "text, not bytes", "mime_type": "audio/pcm"}, "a.wav", None),
    (b"\x00\x00", 5, None), (b"\x00\x00", "a.wav", 5),
])
def test_save_wav_of_bad_input_is_a_config_error_and_writes_nothing(tmp_path, source, path, mime_type):
    # was: TypeError / AttributeError out of a public helper
    with pytest.raises(ConfigError):
        save_wav(source, tmp_path / path if isinstance(path, str) else path, mime_type)
    assert list(tmp_path.iterdir()) == []


def test_save_inline_data_picks_an_extension(tmp_path):
    png = {"type": "inline_data", "data": b"\x89PNG\r\n\x1a\n", "mime_type": "image/png"}
    path = save_inline_data(png, tmp_path / "picture")
    with open(path, "rb") as saved:
        assert path.endswith(".png") and saved.read() == png["data"]
    audio = {"type": "inline_data", "data": b"\x00\x00" * 4, "mime_type": "audio/L16;codec=pcm;rate=24000"}
    path = save_inline_data(audio, tmp_path / "voice")
    assert path.endswith(".wav")
    with wave.open(path, "rb") as wav:
        assert wav.getnframes() == 4
    with pytest.raises(ConfigError):
        save_inline_data({"type": "text", "text": "x"}, tmp_path / "x")


# -- end to end through AutoLLMClient -------------------------------------------------------------

responses = pytest.importorskip("responses")


@responses.activate
def test_end_to_end_stateful_tool_round_trip():
    url = "https://gemini.test/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    bodies = [recording("weather_tool_call.sse"), recording("weather_answer.sse")]
    for data in bodies:
        responses.add(responses.POST, url, body=data, status=200, content_type="text/event-stream")
    client = AutoLLMClient("gemini-2.5-flash", api_key="k-secret", base_url="https://gemini.test")
    assert client.client_type == "gemini"
    config = {"tools": [{"name": "get_weather", "parameters": {"type": "object",
                                                               "properties": {"city": {"type": "string"}}}}]}
    first = list(client.streaming_response_stateful(user("Weather in Paris?"), config))
    check_stream(first)
    call = items(first, "tool_call")[0]
    result = {"role": "user", "content_items": [{"type": "tool_result", "text": "18 °C, sunny",
                                                 "tool_call_id": call["tool_call_id"]}]}
    second = list(client.streaming_response_stateful(result, config))
    check_stream(second)
    assert "sunny" in summarize(second)["text"]
    assert len(client.get_history()) == 4
    sent = [c.request for c in responses.calls]
    for request in sent:
        assert request.headers["x-goog-api-key"] == "k-secret"
        assert "k-secret" not in request.url and "key=" not in request.url
    body = json.loads(sent[1].body)
    signature = call["fidelity"][SIG]
    assert body["contents"][1] == {"role": "model", "parts": [
        {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}, "thoughtSignature": signature}]}
    assert body["contents"][2] == {"role": "user", "parts": [
        {"functionResponse": {"name": "get_weather", "response": {"result": "18 °C, sunny"}}}]}


@responses.activate
def test_end_to_end_http_error_and_embeddings():
    base = "https://gemini.test"
    responses.add(responses.POST, base + "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
                  json={"error": {"code": 400, "message": "API key not valid.", "status": "INVALID_ARGUMENT"}},
                  status=400)
    client = AutoLLMClient("gemini-2.5-flash", api_key="k", base_url=base, max_retries=0)
    with pytest.raises(UpstreamError) as info:
        list(client.streaming_response([user("x")]))
    assert info.value.status == 400
    responses.add(responses.POST, base + "/v1beta/models/gemini-embedding-001:batchEmbedContents",
                  body=fixture("embed_batch.json"), status=200, content_type="application/json")
    embedder = AutoLLMClient("gemini-embedding-001", api_key="k", base_url=base)
    events = list(embedder.streaming_response([user("a"), user("b")], {"embedding_config": {"dimensions": 3}}))
    check_stream(events)
    assert len(items(events, "embedding")) == 2
    sent = json.loads(responses.calls[-1].request.body)
    assert sent["requests"][0]["outputDimensionality"] == 3
    assert responses.calls[-1].request.headers["x-goog-api-key"] == "k"


@responses.activate
def test_end_to_end_forced_client_type():
    url = "http://127.0.0.1:9/v1beta/models/my-gemma:streamGenerateContent?alt=sse"
    responses.add(responses.POST, url, body=fixture("signature_on_empty_text.sse"), status=200,
                  content_type="text/event-stream")
    client = AutoLLMClient("my-gemma", client_type="gemini", base_url="http://127.0.0.1:9")
    events = list(client.streaming_response([user("q")], {"thinking_level": "low"}))
    check_stream(events)
    assert summarize(events)["text"] == "Paris is the capital of France."
    request = responses.calls[0].request
    assert "x-goog-api-key" not in request.headers
    assert json.loads(request.body)["generationConfig"] == {"thinkingConfig": {"thinkingLevel": "LOW"}}


@pytest.mark.parametrize("model,level", [("gemini-4-neon", "max"), ("gemini-4-hydrogen", "xhigh"), ("gemini-4-argon", "none"),
                                         ("gemini-3-flash-preview", "none"), ("gemini-2.5-pro", "xhigh")])
def test_generation_config_is_google_genais(model, level):
    """The generationConfig sent is a google-genai 3.6.1 GenerationConfig (its camelCase aliases, no unknown field)
    whose thinkingLevel is one of its ThinkingLevel values (an unknown value would only warn there: made an error)."""
    types = pytest.importorskip("google.genai.types")
    import warnings

    body = build(model, [user("x")], {"thinking_level": level, "max_tokens": 100, "stop": ["END"]}).body
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        config = types.GenerationConfig.model_validate(body["generationConfig"])
    assert config.max_output_tokens == 100 and config.stop_sequences == ["END"]
    assert config.thinking_config is not None


@pytest.mark.parametrize("signature", [float("inf"), 7, ["c2ln"], {"a": 1}, None, ""])
def test_a_thought_signature_that_is_no_string_is_not_kept(signature):
    """A thought signature is base64 text; another value (a relay's number, a list) was kept in fidelity, and the next
    turn refused the history (a ConfigError on every later turn): it is left out, as the Interactions parser leaves it
    (its text and call go on)."""
    chunk = {"candidates": [{"content": {"role": "model", "parts": [
        {"text": "Hi.", "thoughtSignature": signature},
        {"functionCall": {"name": "f", "args": {}}, "thoughtSignature": signature}]}, "finishReason": "STOP"}],
        "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 1}}
    data = ("data: " + json.dumps(chunk) + "\n\n").encode()
    message = collect(parse(data))
    assert [(i["type"], i.get("fidelity")) for i in message["content_items"]] == [
        ("text", None), ("tool_call", {"synthetic_id": True})]
    history = [{"role": "user", "content_items": [{"type": "text", "text": "hi"}]}, message,
               {"role": "user", "content_items": [{"type": "tool_result", "tool_call_id": message["content_items"][1][
                   "tool_call_id"], "text": "ok"}]}]
    AutoLLMClient("gemini-2.5-flash", client_type="gemini", api_key="k").plan(history, {"tools": [{"name": "f"}]})
