"""Gemini / Vertex AI streams: the shapes real servers send, pinned with streams written for this file.

Each test reproduces one quirk seen on a recorded ``streamGenerateContent?alt=sse`` body
with a minimal synthetic stream, states the exact items that must come out, and what the
next request makes of them (signatures on the parts they came with, ids, names).
"""

import base64
import json

import pytest

from conftest import run_parser, splits, strip_ids

from agenthub.errors import EmptyResponseError, UpstreamError
from agenthub.providers import gemini
from agenthub.providers._common import Endpoint
from agenthub.stream import check_stream, collect
from agenthub.validate import check_config

SIG = gemini.SIGNATURE
SYN = gemini.SYNTHETIC_ID


def sse(*chunks, crlf=True):
    end = "\r\n\r\n" if crlf else "\n\n"
    return "".join("data: " + json.dumps(c, ensure_ascii=False) + end for c in chunks).encode("utf-8")


def chunk(*parts, finish=None, usage=None, **extra):
    candidate = {"content": {"role": "model", "parts": list(parts)}, "index": 0}
    if finish:
        candidate["finishReason"] = finish
    out = {"candidates": [candidate]}
    if usage is not None:
        out["usageMetadata"] = usage
    out.update(extra)
    return out


def run(data):
    events = run_parser(gemini.parse_stream, [data], "gemini", tool_id_prefix="call_t_")
    check_stream(events)
    reference = strip_ids(events)
    for chunks in splits(data, samples=6):
        again = run_parser(gemini.parse_stream, chunks, "gemini", tool_id_prefix="call_t_")
        assert strip_ids(again) == reference
    return events


def items(events):
    return [e["content_items"][0] for e in events[1:-1]]


def stop(events):
    return events[-1]["finish_reason"], events[-1]["usage_metadata"]


def next_contents(message, model="gemini-3-pro-preview"):
    """The contents after the first user turn in the next request: [model turn, user turn]."""
    calls = [i for i in message["content_items"] if i["type"] == "tool_call"]
    follow = {"role": "user", "content_items": [
        {"type": "tool_result", "text": "ok", "tool_call_id": c["tool_call_id"]} for c in calls]} if calls else \
        {"role": "user", "content_items": [{"type": "text", "text": "next"}]}
    messages = [{"role": "user", "content_items": [{"type": "text", "text": "hi"}]}, message, follow]
    endpoint = Endpoint("gemini", "https://generativelanguage.googleapis.com", "k", None, None)
    return gemini.build_request(endpoint, model, messages, check_config({})).body["contents"][1:]


def usage(prompt=10, output=5, thoughts=None, **more):
    out = {"promptTokenCount": prompt, "candidatesTokenCount": output, "totalTokenCount": prompt + output}
    if thoughts is not None:
        out["thoughtsTokenCount"] = thoughts
    out.update(more)
    return out


# -- Vertex AI streamed function-call arguments -------------------------------------------------------


@pytest.mark.parametrize("path,why", [
    ("$.x[10000000]", "partial function-call arguments skip more than 4096 array elements (10000000 at $.x[10000000])"),
    ("$" + ".a" * 3000, "a partial function-call argument's jsonPath is deeper than 127 levels"),
], ids=["far-index", "deep-path"])
def test_vertex_partial_args_a_few_bytes_long_that_would_take_megabytes_are_refused(path, why):
    # on a real socket: an index far past the last one was as many nulls in memory (50 MB here), and a path
    # thousands of steps deep cost its square when it closed (36 MB here, 3.6 GB at 30,000 steps)
    import tracemalloc

    from agenthub import AutoLLMClient, StreamProtocolError, Timeout
    from faultserver import FaultServer, send, status

    data = sse(chunk({"functionCall": {"name": "f", "willContinue": True}}),
               chunk({"functionCall": {"partialArgs": [{"jsonPath": path, "nullValue": None}], "willContinue": True}}),
               chunk({"functionCall": {}}), chunk({"text": ""}, finish="STOP"))
    with FaultServer() as server:
        server.push([status(200, {"Content-Type": "text/event-stream"}), send(data)])
        client = AutoLLMClient("gemini-2.5-flash", client_type="gemini", api_key="test-key-0123456789",
                               base_url=server.url, max_retries=0, timeout=Timeout(connect=2, read=10))
        tracemalloc.start()
        try:
            with pytest.raises(StreamProtocolError) as info:
                list(client.streaming_response([{"role": "user", "content_items": [{"type": "text", "text": "hi"}]}]))
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert why in str(info.value)
    assert peak < 8 * 1024 * 1024, peak


def test_vertex_call_without_args_then_streamed_calls_closed_by_empty_markers():
    data = sse(
        chunk({"text": "Reading.", "thought": True}, usageMetadata={"trafficType": "ON_DEMAND"}),
        chunk({"functionCall": {"name": "read_theme"}, "thoughtSignature": "c2lnLTE="}),
        chunk({"functionCall": {"name": "read_screen", "willContinue": True}}),
        chunk({"functionCall": {"partialArgs": [{"jsonPath": "$.id", "stringValue": "A", "willContinue": True}],
                                "willContinue": True}}),
        chunk({"functionCall": {"partialArgs": [{"jsonPath": "$.id", "stringValue": ""}], "willContinue": True}}),
        chunk({"functionCall": {}}),
        chunk({"functionCall": {"name": "read_screen", "willContinue": True}}),
        chunk({"functionCall": {"partialArgs": [{"jsonPath": "$.id", "stringValue": "B"}], "willContinue": True}}),
        chunk({"functionCall": {}}),
        chunk({"text": ""}, finish="STOP", usage=usage(40, 12, 30, trafficType="ON_DEMAND")),
    )
    events = run(data)
    assert items(events) == [
        {"type": "thinking", "thinking": "Reading."},
        {"type": "partial_tool_call", "name": "read_theme", "arguments": "", "tool_call_id": "call_t_0"},
        {"type": "tool_call", "name": "read_theme", "arguments": {}, "tool_call_id": "call_t_0",
         "fidelity": {SIG: "c2lnLTE=", SYN: True}},
        {"type": "partial_tool_call", "name": "read_screen", "arguments": "", "tool_call_id": "call_t_1"},
        {"type": "partial_tool_call", "name": "", "arguments": '{"id":"A', "tool_call_id": ""},
        {"type": "partial_tool_call", "name": "", "arguments": '"}', "tool_call_id": ""},
        {"type": "tool_call", "name": "read_screen", "arguments": {"id": "A"}, "tool_call_id": "call_t_1",
         "fidelity": {SYN: True}},
        {"type": "partial_tool_call", "name": "read_screen", "arguments": "", "tool_call_id": "call_t_2"},
        {"type": "partial_tool_call", "name": "", "arguments": '{"id":"B', "tool_call_id": ""},
        {"type": "partial_tool_call", "name": "", "arguments": '"}', "tool_call_id": ""},
        {"type": "tool_call", "name": "read_screen", "arguments": {"id": "B"}, "tool_call_id": "call_t_2",
         "fidelity": {SYN: True}},
    ]
    assert stop(events) == ("tool_call", {"cached_tokens": None, "prompt_tokens": 40, "thoughts_tokens": 30,
                                          "response_tokens": 12})
    model, results = next_contents(collect(events))
    assert model == {"role": "model", "parts": [
        {"functionCall": {"name": "read_theme", "args": {}}, "thoughtSignature": "c2lnLTE="},
        {"functionCall": {"name": "read_screen", "args": {"id": "A"}}},
        {"functionCall": {"name": "read_screen", "args": {"id": "B"}}},
    ]}
    assert [p["functionResponse"]["name"] for p in results["parts"]] == ["read_theme", "read_screen", "read_screen"]
    assert all("id" not in p["functionResponse"] for p in results["parts"])


def test_vertex_array_arguments_whose_last_part_drops_will_continue():
    def partial(path, value, more=True, outer=True, kind="stringValue"):
        arg = {"jsonPath": path, kind: value}
        if more:
            arg["willContinue"] = True
        call = {"partialArgs": [arg]}
        if outer:
            call["willContinue"] = True
        return chunk({"functionCall": call})

    data = sse(
        chunk({"functionCall": {"name": "writeItems", "willContinue": True}, "thoughtSignature": "c2ln"}),
        partial("$.ops[0].name", "app"), partial("$.ops[0].name", "le", more=False),
        partial("$.ops[0].price", 0.5, more=False, kind="numberValue"),
        partial("$.ops[1].name", "pear", more=False),
        partial("$.ops[1].price", 3, more=False, outer=False, kind="numberValue"),
        chunk({"text": ""}, finish="STOP", usage=usage(54, 74, 121)),
        crlf=False,
    )
    events = run(data)
    assert items(events) == [
        {"type": "partial_tool_call", "name": "writeItems", "arguments": "", "tool_call_id": "call_t_0"},
        {"type": "partial_tool_call", "name": "", "arguments": '{"ops":[{"name":"app', "tool_call_id": ""},
        {"type": "partial_tool_call", "name": "", "arguments": "le", "tool_call_id": ""},
        {"type": "partial_tool_call", "name": "", "arguments": '","price":0.5', "tool_call_id": ""},
        {"type": "partial_tool_call", "name": "", "arguments": '},{"name":"pear', "tool_call_id": ""},
        {"type": "partial_tool_call", "name": "", "arguments": '","price":3', "tool_call_id": ""},
        {"type": "partial_tool_call", "name": "", "arguments": "}]}", "tool_call_id": ""},
        {"type": "tool_call", "name": "writeItems",
         "arguments": {"ops": [{"name": "apple", "price": 0.5}, {"name": "pear", "price": 3}]},
         "tool_call_id": "call_t_0", "fidelity": {SIG: "c2ln", SYN: True}},
    ]
    assert stop(events)[0] == "tool_call"


# -- ids, signatures and where they go back ------------------------------------------------------------


def test_function_call_with_a_server_id_after_text_keeps_the_id_both_ways():
    data = sse(
        chunk({"text": "Let me check."}, usage=usage(83, 4, 178)),
        chunk({"functionCall": {"name": "get_weather", "args": {"city": "Oslo"}, "id": "g1bm"},
               "thoughtSignature": "c2lnLWNhbGw="}, usage=usage(83, 21, 178)),
        chunk({"text": ""}, finish="STOP", usage=usage(83, 21, 178)),
        crlf=False,
    )
    events = run(data)
    assert items(events) == [
        {"type": "text", "text": "Let me check."},
        {"type": "partial_tool_call", "name": "get_weather", "arguments": "", "tool_call_id": "g1bm"},
        {"type": "partial_tool_call", "name": "", "arguments": '{"city": "Oslo"}', "tool_call_id": ""},
        {"type": "tool_call", "name": "get_weather", "arguments": {"city": "Oslo"}, "tool_call_id": "g1bm",
         "fidelity": {SIG: "c2lnLWNhbGw="}},
    ]
    model, results = next_contents(collect(events))
    assert model["parts"] == [
        {"text": "Let me check."},
        {"functionCall": {"id": "g1bm", "name": "get_weather", "args": {"city": "Oslo"}},
         "thoughtSignature": "c2lnLWNhbGw="},
    ]
    assert results["parts"] == [{"functionResponse": {"name": "get_weather", "id": "g1bm",
                                                      "response": {"result": "ok"}}}]


def test_signature_on_a_trailing_empty_text_part_goes_back_on_the_text():
    data = sse(
        chunk({"text": "There are 3."}, usage=usage(9, 13, 302)),
        chunk({"text": " St-r-awbe-rr-y"}, usage=usage(9, 23, 302)),
        chunk({"text": "", "thoughtSignature": "dGFpbA=="}, finish="STOP", usage=usage(9, 23, 302)),
    )
    events = run(data)
    assert items(events) == [
        {"type": "text", "text": "There are 3."},
        {"type": "text", "text": " St-r-awbe-rr-y"},
        {"type": "text", "text": "", "fidelity": {SIG: "dGFpbA=="}},
    ]
    message = collect(events)
    assert message["content_items"] == [
        {"type": "text", "text": "There are 3. St-r-awbe-rr-y", "fidelity": {SIG: "dGFpbA=="}}]
    assert next_contents(message)[0]["parts"] == [{"text": "There are 3. St-r-awbe-rr-y",
                                                   "thoughtSignature": "dGFpbA=="}]


def test_signature_on_a_generated_image_goes_back_on_the_image():
    data = sse(
        chunk({"inlineData": {"mimeType": "image/jpeg", "data": "AA=="}, "thoughtSignature": "aW1n"},
              usage=usage(8, 1219, 244)),
        chunk({"text": ""}, finish="STOP", usage=usage(8, 1219, 167)),
    )
    events = run(data)
    assert items(events) == [{"type": "inline_data", "data": b"\x00", "mime_type": "image/jpeg",
                              "fidelity": {SIG: "aW1n"}}]
    assert next_contents(collect(events), "gemini-3-pro-image-preview")[0]["parts"] == [
        {"inlineData": {"mimeType": "image/jpeg", "data": "AA=="}, "thoughtSignature": "aW1n"}]


def test_unsigned_thought_parts_are_shown_but_not_sent_back():
    data = sse(
        chunk({"text": "* user wants hello", "thought": True}, usage=usage(6, 0, 14)),
        chunk({"text": "hello"}, usage=usage(6, 1, 76)),
        chunk({"text": ""}, finish="STOP", usage=usage(6, 1, 76)),
        crlf=False,
    )
    events = run(data)
    assert items(events) == [{"type": "thinking", "thinking": "* user wants hello"}, {"type": "text", "text": "hello"}]
    assert next_contents(collect(events))[0] == {"role": "model", "parts": [{"text": "hello"}]}


# -- built-in tools, usage and finish --------------------------------------------------------------------


def test_code_execution_parts_are_skipped_and_a_mid_stream_stop_does_not_end_the_turn():
    def counts(output, tool_use=None):
        out = usage(46, output, 563)
        if tool_use:
            out["toolUsePromptTokenCount"] = tool_use
        return out

    data = sse(
        chunk({"executableCode": {"language": "PYTHON", "code": "print(1+1)"}, "thought": True}, usage=counts(33)),
        chunk({"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "2\n"}, "thought": True},
              usage=counts(33)),
        chunk({"text": "Computing:\n"}, usage=counts(51, 476)),
        chunk({"executableCode": {"language": "PYTHON", "code": "print(1+1)"}}, finish="STOP",
              usage=counts(80, 476)),
        chunk({"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "2\n"}}, usage=counts(80, 476)),
        chunk({"text": "The result is 2."}, finish="STOP", usage=counts(95, 1268)),
    )
    events = run(data)
    assert items(events) == [{"type": "text", "text": "Computing:\n"}, {"type": "text", "text": "The result is 2."}]
    assert stop(events) == ("stop", {"cached_tokens": None, "prompt_tokens": 46 + 1268, "thoughts_tokens": 563,
                                     "response_tokens": 95})


def test_usage_in_a_chunk_without_candidates_after_the_finish_is_counted():
    data = sse(
        chunk({"text": "Found it."}, finish="STOP"),
        {"usageMetadata": {"promptTokenCount": 12, "candidatesTokenCount": 71, "cachedContentTokenCount": 4,
                           "toolUsePromptTokenCount": 65, "thoughtsTokenCount": 89, "totalTokenCount": 237}},
    )
    assert stop(run(data)) == ("stop", {"cached_tokens": 4, "prompt_tokens": 12 - 4 + 65, "thoughts_tokens": 89,
                                        "response_tokens": 71})


def test_grounding_metadata_is_not_content():
    data = sse(
        chunk({"text": "Cloudy, "}, usage=usage(17, 29, 319, toolUsePromptTokenCount=104), groundingMetadata={}),
        chunk({"text": "low 60s."}, finish="STOP", usage=usage(17, 40, 319, toolUsePromptTokenCount=104),
              groundingMetadata={"webSearchQueries": ["weather"], "groundingChunks": [
                  {"web": {"uri": "https://x.test", "title": "x"}}]}),
    )
    events = run(data)
    assert items(events) == [{"type": "text", "text": "Cloudy, "}, {"type": "text", "text": "low 60s."}]
    assert stop(events)[1]["prompt_tokens"] == 17 + 104


def test_max_tokens_with_a_candidate_that_has_no_parts_is_an_empty_response():
    data = sse({"candidates": [{"content": {"role": "model"}, "finishReason": "MAX_TOKENS", "index": 0}],
                "usageMetadata": {"promptTokenCount": 15, "thoughtsTokenCount": 2, "totalTokenCount": 17}})
    with pytest.raises(EmptyResponseError) as info:
        run_parser(gemini.parse_stream, [data], "gemini")
    assert info.value.finish_reason == "length"


@pytest.mark.parametrize("reason", ["RECITATION", "SAFETY", "MALFORMED_FUNCTION_CALL", "UNEXPECTED_TOOL_CALL"])
def test_other_finish_reasons_after_text_are_unknown(reason):
    data = sse(chunk({"text": "Partial answer"}),
               {"candidates": [{"finishReason": reason, "index": 0, "finishMessage": "stopped"}]})
    events = run(data)
    assert items(events) == [{"type": "text", "text": "Partial answer"}]
    assert stop(events)[0] == "unknown"


def test_vertex_model_armor_block_raises_with_reason_and_message():
    data = sse({"promptFeedback": {"blockReason": "MODEL_ARMOR", "blockReasonMessage": "Blocked by Model Armor."},
                "usageMetadata": {"trafficType": "ON_DEMAND"}, "modelVersion": "gemini-2.5-flash"})
    with pytest.raises(UpstreamError) as info:
        run_parser(gemini.parse_stream, [data], "gemini")
    assert info.value.error_type == "MODEL_ARMOR"
    assert info.value.message == "the prompt was blocked (MODEL_ARMOR): Blocked by Model Armor."
    assert info.value.retryable is False


def test_vertex_first_chunk_with_traffic_type_only_usage():
    data = sse(
        chunk({"text": "Hello there! How"}, usage={"trafficType": "ON_DEMAND"}, createTime="2025-04-29T16:55:36Z"),
        chunk({"text": " can I help?"}, finish="STOP",
              usage={"promptTokenCount": 2, "candidatesTokenCount": 11, "totalTokenCount": 13,
                     "trafficType": "ON_DEMAND"}),
    )
    events = run(data)
    assert "".join(i["text"] for i in items(events)) == "Hello there! How can I help?"
    assert stop(events) == ("stop", {"cached_tokens": None, "prompt_tokens": 2, "thoughts_tokens": None,
                                     "response_tokens": 11})


def test_audio_bytes_round_trip_through_base64():
    pcm = bytes(range(16))
    data = sse(chunk({"inlineData": {"mimeType": "audio/L16;codec=pcm;rate=24000",
                                     "data": base64.b64encode(pcm).decode("ascii")}}),
               chunk({"text": ""}, finish="STOP"))
    assert items(run(data)) == [{"type": "inline_data", "data": pcm, "mime_type": "audio/L16;codec=pcm;rate=24000"}]


# -- usageMetadata is a snapshot (issue 13) ---------------------------------------------------------------


def _sums_to_total(stop_usage, meta):
    """The four buckets add up to the snapshot's totalTokenCount (toolUsePromptTokenCount is in prompt)."""
    return sum(v or 0 for v in stop_usage.values()) == meta["totalTokenCount"]


def test_a_later_usage_snapshot_without_candidates_count_replaces_the_earlier_one():
    """Seen behind a gateway relaying Gemini 2.5: mid-stream snapshots count the visible tokens so far;
    the last one (after a function call) has no ``candidatesTokenCount`` at all.  Merged field by field the
    buckets would add up to more than the total; taken whole they add up to it."""
    first = {"promptTokenCount": 120, "candidatesTokenCount": 18, "thoughtsTokenCount": 64, "totalTokenCount": 202}
    last = {"promptTokenCount": 120, "thoughtsTokenCount": 64, "totalTokenCount": 184,
            "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 120}]}
    data = sse(chunk({"text": "Checking."}, usage=first),
               chunk({"functionCall": {"name": "lookup", "args": {"q": "x"}}}, finish="STOP", usage=last))
    events = run(data)
    assert stop(events) == ("tool_call", {"cached_tokens": None, "prompt_tokens": 120, "thoughts_tokens": 64,
                                          "response_tokens": None})
    assert _sums_to_total(stop(events)[1], last)


def test_the_last_snapshot_counts_even_when_it_shrinks_and_traffic_type_only_blocks_do_not_erase_it():
    snapshots = [
        {"promptTokenCount": 30, "cachedContentTokenCount": 20, "candidatesTokenCount": 9, "totalTokenCount": 39},
        {"promptTokenCount": 30, "cachedContentTokenCount": 20, "candidatesTokenCount": 4,
         "toolUsePromptTokenCount": 7, "thoughtsTokenCount": 11, "totalTokenCount": 52},
    ]
    data = sse(chunk({"text": "A"}, usage=snapshots[0]), chunk({"text": "B"}, usage=snapshots[1]),
               chunk({"text": ""}, finish="STOP", usage={"trafficType": "ON_DEMAND"}))
    events = run(data)
    assert stop(events) == ("stop", {"cached_tokens": 20, "prompt_tokens": 30 - 20 + 7, "thoughts_tokens": 11,
                                     "response_tokens": 4})
    assert _sums_to_total(stop(events)[1], snapshots[1])


@pytest.mark.parametrize("name,data,sidecar", __import__("conftest").wire_params("gemini"))
def test_recorded_streams_usage_adds_up_to_the_last_total(name, data, sidecar):
    """On every recorded Gemini stream: the four buckets add up to the last snapshot's totalTokenCount."""
    snapshots = [json.loads(line[5:]).get("usageMetadata") for line in data.decode("utf-8").splitlines()
                 if line.startswith("data:") and line[5:].strip().startswith("{")]
    snapshots = [s for s in snapshots if s and "totalTokenCount" in s]
    events = run_parser(gemini.parse_stream, [data], "gemini")
    buckets = events[-1]["usage_metadata"]
    if not snapshots:
        pytest.skip("no totalTokenCount in this recording")
    assert _sums_to_total(buckets, snapshots[-1])
