"""Anthropic Messages: lessons from recorded streams of the API and of Anthropic-compatible servers.

Every stream here is a minimal synthetic one written for this file (made-up ids, signatures and data)
that reproduces one quirk seen in public recordings: the first-party API (code execution, compaction,
citations, fallback), Kimi / Z.AI / relays (usage moved between message_start and message_delta),
gateways (``data: [DONE]``, error payloads without an envelope, CRLF framing).  Each test states the
exact events or request body expected.
"""

import json

import pytest

from agenthub.errors import ServerError, StreamProtocolError, UpstreamError
from agenthub.providers import anthropic
from agenthub.providers._common import Endpoint
from agenthub.stream import check_stream, collect
from agenthub.types import ThinkingLevel
from agenthub.validate import check_config, check_messages
from conftest import run_parser, splits, strip_ids

CLIENT = "anthropic"


def sse(*payloads, **kwargs):
    """An SSE body: each payload as ``event: <type>`` + ``data: <json>`` (``events=False``: data lines only)."""
    with_events = kwargs.get("events", True)
    out = []
    for payload in payloads:
        data = payload if isinstance(payload, str) else json.dumps(payload, ensure_ascii=False)
        if with_events and not isinstance(payload, str):
            out.append("event: {}\n".format(payload["type"]))
        out.append("data: {}\n\n".format(data))
    return "".join(out).encode("utf-8")


def parse(data):
    """Events of ``data`` (checked against the grammar), identical for every way of splitting it."""
    reference = None
    for chunks in splits(data, samples=8):
        events = run_parser(anthropic.parse_stream, chunks, CLIENT, tool_id_prefix="call_t_")
        check_stream(events)
        if reference is None:
            reference = strip_ids(events)
        else:
            assert strip_ids(events) == reference
    return events


def items(events):
    """The delta items of ``events``, in order."""
    return [e["content_items"][0] for e in events if e["event_type"] == "delta"]


def stop(events):
    return events[-1]["usage_metadata"], events[-1]["finish_reason"]


def usage(cached, prompt, response):
    return {"cached_tokens": cached, "prompt_tokens": prompt, "thoughts_tokens": None, "response_tokens": response}


def start(usage_=None, **message):
    body = {"id": "msg_t", "type": "message", "role": "assistant", "model": "claude-t", "content": [],
            "stop_reason": None, "stop_sequence": None, "usage": usage_ or {"input_tokens": 7, "output_tokens": 1}}
    body.update(message)
    return {"type": "message_start", "message": body}


def block_start(index, block):
    return {"type": "content_block_start", "index": index, "content_block": block}


def delta(index, value):
    return {"type": "content_block_delta", "index": index, "delta": value}


def block_stop(index):
    return {"type": "content_block_stop", "index": index}


def text(index, value, cited=None):
    """A text block; ``cited``: a citation sent before its text (the block starts with ``citations: []``)."""
    block = {"type": "text", "text": ""}
    events = [block_start(index, dict(block, citations=[]) if cited else block)]
    if cited:
        events.append(delta(index, {"type": "citations_delta", "citation": cited}))
    events.append(delta(index, {"type": "text_delta", "text": value}))
    return events + [block_stop(index)]


def thinking(index, value, signature):
    return [block_start(index, {"type": "thinking", "thinking": "", "signature": ""}),
            delta(index, {"type": "thinking_delta", "thinking": value}),
            delta(index, {"type": "signature_delta", "signature": signature}),
            block_stop(index)]


def end(reason="end_turn", usage_=None):
    return [{"type": "message_delta", "delta": {"stop_reason": reason, "stop_sequence": None},
             "usage": usage_ or {"output_tokens": 9}},
            {"type": "message_stop"}]


def user(value):
    return {"role": "user", "content_items": [{"type": "text", "text": value}]}


def replay(message, ep=None, model="claude-sonnet-4-5", config=None):
    """The content the next request sends back for the assistant ``message``."""
    history = [user("q"), message, user("next")]
    check_messages(history)
    endpoint = ep or Endpoint("anthropic", "https://api.anthropic.com", "k", quirks={"first_party": True})
    body = anthropic.build_request(endpoint, model, history, check_config(config or {})).body
    return body["messages"][1]["content"]


# -- complete blocks inside message_start ------------------------------------------------------------------


def test_blocks_carried_by_message_start_are_emitted_and_replayed():
    """Code execution streams may open with a message_start whose content already holds finished blocks
    (and a stop_reason), followed by nothing but message_stop."""
    result = {"type": "code_execution_tool_result", "tool_use_id": "srvtoolu_t1",
              "content": {"type": "code_execution_result", "stdout": "42\n", "stderr": "", "return_code": 0,
                          "content": []}}
    call = {"type": "tool_use", "id": "toolu_t1", "name": "lookup", "input": {"id": "c-9"},
            "caller": {"type": "code_execution_20250825", "tool_id": "srvtoolu_t1"}}
    data = sse(start({"input_tokens": 0, "output_tokens": 0}, content=[result, call], stop_reason="tool_use"),
               {"type": "message_stop"})
    events = parse(data)
    caller = {"caller": {"type": "code_execution_20250825", "tool_id": "srvtoolu_t1"}}
    assert items(events) == [
        {"type": "text", "text": "", "fidelity": {"server_block": result}},
        {"type": "partial_tool_call", "name": "lookup", "arguments": "", "tool_call_id": "toolu_t1"},
        {"type": "partial_tool_call", "name": "", "arguments": '{"id":"c-9"}', "tool_call_id": ""},
        {"type": "tool_call", "name": "lookup", "arguments": {"id": "c-9"}, "tool_call_id": "toolu_t1",
         "fidelity": caller},
    ]
    assert stop(events) == (usage(None, 0, 0), "tool_call")
    assert replay(collect(events)) == [result, call]


def test_message_start_stop_reason_does_not_override_message_delta():
    data = sse(start(stop_reason="end_turn"), *text(0, "cut"), *end("max_tokens"))
    assert stop(parse(data))[1] == "length"


# -- compaction ----------------------------------------------------------------------------------------------


def test_compaction_deltas_are_folded_into_the_replayed_block():
    data = sse(start(),
               block_start(0, {"type": "compaction", "content": None, "encrypted_content": None}),
               {"type": "ping"},
               delta(0, {"type": "compaction_delta", "content": "Summary, part one; ", "encrypted_content": "opaque-1"}),
               delta(0, {"type": "compaction_delta", "content": "part two.", "encrypted_content": "opaque-2"}),
               block_stop(0),
               *text(1, "Answer."), *end())
    events = parse(data)
    compaction = {"type": "compaction", "content": "Summary, part one; part two.", "encrypted_content": "opaque-2"}
    assert items(events) == [
        {"type": "compaction", "fidelity": {"format": "anthropic", "block": compaction}},  # issue 22: its own item
        {"type": "text", "text": "Answer."},
    ]
    assert replay(collect(events)) == [compaction, {"type": "text", "text": "Answer."}]


def test_compaction_without_encrypted_content():
    data = sse(start(), block_start(0, {"type": "compaction", "content": None}),
               delta(0, {"type": "compaction_delta", "content": "Short summary."}), block_stop(0),
               *text(1, "Hi."), *end())
    assert replay(collect(parse(data)))[0] == {"type": "compaction", "content": "Short summary."}


# -- citations keep their block boundaries --------------------------------------------------------------------


CITE_A = {"type": "web_search_result_location", "cited_text": "A", "url": "https://a.example", "title": "A",
          "encrypted_index": "idx-a"}
CITE_B = {"type": "web_search_result_location", "cited_text": "B", "url": "https://b.example", "title": "B",
          "encrypted_index": "idx-b"}


def test_cited_and_plain_text_blocks_replay_with_their_own_boundaries():
    """plain, cited, plain, cited, plain: a citation never spreads over the plain text around it."""
    data = sse(start(), *text(0, "Intro, "), *text(1, "fact A", CITE_A), *text(2, " and "),
               *text(3, "fact B", CITE_B), *text(4, "."), *end())
    events = parse(data)
    assert items(events) == [
        {"type": "text", "text": "Intro, "},
        {"type": "text", "text": "", "fidelity": {"citations": []}},  # seals the plain text before the cited block
        {"type": "text", "text": "fact A", "fidelity": {"citations": [CITE_A]}},
        {"type": "text", "text": " and ", "fidelity": {"citations": []}},
        {"type": "text", "text": "fact B", "fidelity": {"citations": [CITE_B]}},
        {"type": "text", "text": ".", "fidelity": {"citations": []}},
    ]
    message = collect(events)
    assert "".join(i["text"] for i in message["content_items"]) == "Intro, fact A and fact B."
    assert replay(message) == [
        {"type": "text", "text": "Intro, "},
        {"type": "text", "text": "fact A", "citations": [CITE_A]},
        {"type": "text", "text": " and "},
        {"type": "text", "text": "fact B", "citations": [CITE_B]},
        {"type": "text", "text": "."},
    ]


def test_plain_text_streamed_in_pieces_after_a_cited_block():
    data = sse(start(), *text(0, "cited", CITE_A),
               block_start(1, {"type": "text", "text": ""}),
               delta(1, {"type": "text_delta", "text": " one"}), delta(1, {"type": "text_delta", "text": " two"}),
               block_stop(1), *end())
    events = parse(data)
    assert items(events)[1:] == [{"type": "text", "text": " one", "fidelity": {"citations": []}},
                                 {"type": "text", "text": " two"}]
    assert replay(collect(events)) == [{"type": "text", "text": "cited", "citations": [CITE_A]},
                                       {"type": "text", "text": " one two"}]


def test_cited_block_right_after_a_server_result_stays_apart_from_it():
    result = {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_t", "content": []}
    data = sse(start(), block_start(0, {"type": "server_tool_use", "id": "srvtoolu_t", "name": "web_search",
                                        "input": {}}),
               delta(0, {"type": "input_json_delta", "partial_json": '{"query": "x"}'}), block_stop(0),
               block_start(1, result), block_stop(1), *text(2, "cited", CITE_A), *text(3, " tail"), *end())
    assert replay(collect(parse(data))) == [
        {"type": "server_tool_use", "id": "srvtoolu_t", "name": "web_search", "input": {"query": "x"}},
        result,
        {"type": "text", "text": "cited", "citations": [CITE_A]},
        {"type": "text", "text": " tail"},
    ]


# -- usage that moves between message_start and message_delta ---------------------------------------------------


@pytest.mark.parametrize("first,last,expected", [
    # Kimi: the start counts the prompt as input; the end reports it as a full cache hit with input 0
    ({"input_tokens": 1988, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0, "output_tokens": 0},
     {"input_tokens": 0, "cache_read_input_tokens": 1988, "cache_creation_input_tokens": 0, "output_tokens": 3},
     usage(1988, 0, 3)),
    # Z.AI and relays: zeros at the start, the real counts at the end
    ({"input_tokens": 0, "output_tokens": 0}, {"input_tokens": 14, "cache_read_input_tokens": 6, "output_tokens": 5},
     usage(6, 14, 5)),
    # a gateway whose message_delta only knows the output (input 0 as a placeholder): the start's counts stay
    ({"input_tokens": 15, "cache_read_input_tokens": 4, "output_tokens": 1}, {"input_tokens": 0, "output_tokens": 8},
     usage(4, 15, 8)),
    # the first-party API: the same cumulative counts at both ends
    ({"input_tokens": 20, "cache_creation_input_tokens": 30, "cache_read_input_tokens": 40, "output_tokens": 1},
     {"input_tokens": 20, "cache_creation_input_tokens": 30, "cache_read_input_tokens": 40, "output_tokens": 12},
     usage(40, 50, 12)),
])
def test_usage_snapshots(first, last, expected):
    data = sse(start(first), *text(0, "ok"), *end(usage_=last))
    assert stop(parse(data))[0] == expected


# -- errors ---------------------------------------------------------------------------------------------------


def test_error_payload_without_envelope_raises():
    data = sse(start(), *text(0, "partial"), '{"type":"overloaded_error","message":"Overloaded"}')
    with pytest.raises(ServerError) as info:
        parse(data)
    assert (info.value.status, info.value.error_type, info.value.message) == (529, "overloaded_error", "Overloaded")
    assert info.value.retryable


def test_error_event_keeps_its_request_id():
    data = (sse(start(), *text(0, "partial"))
            + b'event: error\ndata: {"type":"error","error":{"details":null,"type":"api_error","message":"boom"},'
              b'"request_id":"req_t1"}\n\n')
    with pytest.raises(ServerError) as info:
        parse(data)
    assert (info.value.status, info.value.request_id, info.value.message) == (500, "req_t1", "boom")


# -- gateway framing ----------------------------------------------------------------------------------------


def test_done_marker_after_message_delta_ends_the_stream():
    data = sse(start(), *text(0, "ok"), end()[0], events=False) + b"data: [DONE]\n\n"
    events = parse(data)
    assert items(events) == [{"type": "text", "text": "ok"}]
    assert stop(events) == (usage(None, 7, 9), "stop")


def test_done_marker_before_any_stop_reason_is_a_cut_stream():
    data = sse(start(), *text(0, "ok"), events=False) + b"data: [DONE]\n\n"
    with pytest.raises(StreamProtocolError):
        run_parser(anthropic.parse_stream, [data], CLIENT)


def test_empty_data_lines_are_keep_alives():
    data = sse(start(), "", *text(0, "ok"), "", *end())
    assert items(parse(data)) == [{"type": "text", "text": "ok"}]


def test_crlf_framing_without_space_and_without_message_stop():
    body = "".join("event:{}\r\ndata:{}\r\n\r\n".format(p["type"], json.dumps(p)) for p in [
        start(), block_start(0, {"type": "tool_use", "id": "toolu_t", "name": "find", "input": {}}),
        delta(0, {"type": "input_json_delta", "partial_json": '{"q":'}),
        delta(0, {"type": "input_json_delta", "partial_json": ' "x"}'}),
        block_stop(0), end("tool_use")[0]]).encode()
    events = parse(body)
    assert items(events)[-1] == {"type": "tool_call", "name": "find", "arguments": {"q": "x"}, "tool_call_id": "toolu_t"}
    assert stop(events)[1] == "tool_call"


# -- fallback blocks and thinking order -------------------------------------------------------------------------


def test_fallback_block_stays_between_the_thinking_runs_it_separates():
    fallback = {"type": "fallback", "from": {"model": "claude-a"}, "to": {"model": "claude-b"}}
    data = sse(start(), *thinking(0, "first model", "sig-A"), block_start(1, fallback), block_stop(1),
               *thinking(2, "second model", "sig-B"),
               block_start(3, {"type": "tool_use", "id": "toolu_t", "name": "f", "input": {}}),
               delta(3, {"type": "input_json_delta", "partial_json": "{}"}), block_stop(3), *end("tool_use"))
    message = collect(parse(data))
    assert replay(message) == [
        {"type": "thinking", "thinking": "first model", "signature": "sig-A"},
        fallback,
        {"type": "thinking", "thinking": "second model", "signature": "sig-B"},
        {"type": "tool_use", "id": "toolu_t", "name": "f", "input": {}},
    ]


# -- requests -------------------------------------------------------------------------------------------------


FIRST_PARTY = Endpoint("anthropic", "https://api.anthropic.com", "k", quirks={"first_party": True})
GATEWAY = Endpoint("anthropic", "https://gateway.example", "k")
TOOLS = [{"name": "get_weather", "description": "Weather for a city.",
          "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}]


def request(model, config, messages=None, ep=FIRST_PARTY):
    messages = messages or [user("Weather in Paris?")]
    check_messages(messages)
    return anthropic.build_request(ep, model, messages, check_config(config))


@pytest.mark.parametrize("model", ["claude-opus-4-7", "claude-opus-4-8-20260601"])
def test_opus_47_none_sends_no_thinking_parameter(model):
    """Opus 4.7/4.8 think only when asked and refuse both "enabled" and "disabled": NONE leaves thinking out."""
    for summary in (None, True):
        config = {"thinking_level": ThinkingLevel.NONE, "tools": TOOLS}
        if summary is not None:
            config["thinking_summary"] = summary
        sent = request(model, config).body
        assert "thinking" not in sent and "output_config" not in sent
    sent = request(model, {"thinking_level": "high"}).body
    assert sent["thinking"] == {"type": "adaptive"} and sent["output_config"] == {"effort": "high"}


def test_interleaved_thinking_beta_for_a_budget_with_tools():
    headers = request("claude-sonnet-4-5", {"thinking_level": "medium", "tools": TOOLS}).headers
    assert headers["anthropic-beta"] == "interleaved-thinking-2025-05-14"
    # no tools, no thinking, adaptive thinking (interleaves unasked), Sonnet 3.7, a gateway: no beta
    for model, config, ep in [
        ("claude-sonnet-4-5", {"thinking_level": "medium"}, FIRST_PARTY),
        ("claude-sonnet-4-5", {"tools": TOOLS}, FIRST_PARTY),
        ("claude-sonnet-4-5", {"thinking_level": "none", "tools": TOOLS}, FIRST_PARTY),
        ("claude-sonnet-4-6", {"thinking_level": "medium", "tools": TOOLS}, FIRST_PARTY),
        ("claude-3-7-sonnet-20250219", {"thinking_level": "medium", "tools": TOOLS}, FIRST_PARTY),
        ("claude-sonnet-4-5", {"thinking_level": "medium", "tools": TOOLS}, GATEWAY),
    ]:
        assert "anthropic-beta" not in request(model, config, ep=ep).headers, (model, config)
    # a gateway that takes it says so; a caller's own betas are kept
    ep = Endpoint("anthropic", "https://gateway.example", "k", {"Anthropic-Beta": "context-1m-2025-08-07"},
                  {"interleaved_thinking": True})
    headers = request("claude-opus-4-1", {"thinking_level": "low", "tools": TOOLS}, ep=ep).headers
    assert headers["Anthropic-Beta"] == "context-1m-2025-08-07,interleaved-thinking-2025-05-14"
    assert "anthropic-beta" not in headers


def test_golden_multi_turn_tool_conversation_with_thinking():
    """Turn 3 of a tool loop: the thinking and redacted blocks of turn 2 come back byte-exact and first,
    the tool result (with an image) answers the tool_use, caching is automatic."""
    png = "data:image/png;base64,iVBORw0KGgo="
    history = [
        user("Weather in Paris and a radar picture?"),
        {"role": "assistant", "content_items": [
            {"type": "thinking", "thinking": "", "fidelity": {"redacted_data": "RED+/=="}},
            {"type": "thinking", "thinking": "Call the tool.", "fidelity": {"signature": "SIG/+=="}},
            {"type": "text", "text": "Checking."},
            {"type": "tool_call", "name": "get_weather", "arguments": {"city": "Paris"}, "tool_call_id": "toolu_t1"},
        ]},
        {"role": "user", "content_items": [
            {"type": "tool_result", "tool_call_id": "toolu_t1", "text": "18 C, sunny", "images": [png]}]},
    ]
    req = request("claude-sonnet-4-5", {"thinking_level": ThinkingLevel.HIGH, "tools": TOOLS,
                                        "system_prompt": "Be brief."}, history)
    assert req.body == {
        "model": "claude-sonnet-4-5", "max_tokens": 32000, "system": "Be brief.",
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "Weather in Paris and a radar picture?"}]},
            {"role": "assistant", "content": [
                {"type": "redacted_thinking", "data": "RED+/=="},
                {"type": "thinking", "thinking": "Call the tool.", "signature": "SIG/+=="},
                {"type": "text", "text": "Checking."},
                {"type": "tool_use", "id": "toolu_t1", "name": "get_weather", "input": {"city": "Paris"}},
            ]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_t1", "content": [
                {"type": "text", "text": "18 C, sunny"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
            ]}]},
        ],
        "tools": [{"name": "get_weather", "description": "Weather for a city.",
                   "input_schema": {"type": "object", "properties": {"city": {"type": "string"}},
                                    "required": ["city"]}}],
        "thinking": {"type": "enabled", "budget_tokens": 16384},
        "cache_control": {"type": "ephemeral"}, "stream": True,
    }
    assert req.headers["anthropic-beta"] == "interleaved-thinking-2025-05-14"


def test_unknown_error_type_names_are_not_errors():
    """Only payloads shaped like errors raise: an event type ending in "_error" without a message is skipped."""
    data = sse(start(), {"type": "debug_error"}, *text(0, "ok"), *end())
    assert items(parse(data)) == [{"type": "text", "text": "ok"}]
    with pytest.raises(UpstreamError):
        parse(sse(start(), {"type": "invalid_request_error", "message": "bad"}))


def test_tool_use_whose_start_carries_the_whole_input():
    """Relays that turn a finished call into one block: input in content_block_start (an object, or JSON
    text), no input_json_delta at all."""
    data = sse(start(),
               block_start(0, {"type": "tool_use", "id": "toolu_a", "name": "f", "input": {"q": "x", "n": 2}}),
               block_stop(0),
               block_start(1, {"type": "tool_use", "id": "toolu_b", "name": "g", "input": '{"path": "/tmp"}'}),
               block_stop(1), *end("tool_use"))
    events = parse(data)
    assert items(events) == [
        {"type": "partial_tool_call", "name": "f", "arguments": "", "tool_call_id": "toolu_a"},
        {"type": "partial_tool_call", "name": "", "arguments": '{"q":"x","n":2}', "tool_call_id": ""},
        {"type": "tool_call", "name": "f", "arguments": {"q": "x", "n": 2}, "tool_call_id": "toolu_a"},
        {"type": "partial_tool_call", "name": "g", "arguments": "", "tool_call_id": "toolu_b"},
        {"type": "partial_tool_call", "name": "", "arguments": '{"path": "/tmp"}', "tool_call_id": ""},
        {"type": "tool_call", "name": "g", "arguments": {"path": "/tmp"}, "tool_call_id": "toolu_b"},
    ]


def test_a_pause_turn_with_only_server_blocks_completes_and_replays():
    """pause_turn: the server stopped mid-search; the caller sends the turn back to continue it."""
    block = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}
    data = sse(
        {"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "content": [],
                                              "usage": {"input_tokens": 10, "output_tokens": 1}}},
        {"type": "content_block_start", "index": 0, "content_block": block},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": '{"query": "x"}'}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "pause_turn"}, "usage": {"output_tokens": 7}},
        {"type": "message_stop"},
    )
    events = parse(data)
    assert items(events) == [{"type": "text", "text": "", "fidelity": {"server_block": dict(block, input={"query": "x"})}}]
    assert stop(events) == (usage(None, 10, 7), "unknown")
    message = collect(events)
    user = {"role": "user", "content_items": [{"type": "text", "text": "Search x"}]}
    request = anthropic.build_request(Endpoint(CLIENT, "https://api.anthropic.com", "k"), "claude-sonnet-4-6",
                                      [user, message], check_config({}))
    assert request.body["messages"][1] == {"role": "assistant", "content": [dict(block, input={"query": "x"})]}
