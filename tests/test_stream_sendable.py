"""An answer is only complete if it can be sent back: what the server put in a kept field (a tool call's
name or id, a fidelity) that no request can carry (a lone surrogate, NaN or Infinity, nesting past
MAX_DEPTH) is a StreamProtocolError while the stream is read, not a ConfigError on the next turn (which
left a stateful client's history, and a tool run, stuck with an answer they can never send)."""

import json

import pytest

from agenthub import check_stream, collect
from agenthub.errors import StreamProtocolError
from agenthub.providers import anthropic, openai_chat
from agenthub.stream import StreamEnd, drive
from agenthub.validate import check_messages
from conftest import run_parser

USAGE = {"cached_tokens": None, "prompt_tokens": 1, "thoughts_tokens": None, "response_tokens": 1}


def events_or_error(parts):
    """The events drive yields before it raises, and the error."""
    out = []
    try:
        for event in drive(iter(parts), "c"):
            out.append(event)
    except StreamProtocolError as exc:
        return out, exc
    return out, None


def deep(depth):
    value = {}
    for _ in range(depth):
        value = {"a": value}
    return value


@pytest.mark.parametrize("item, said", [
    ({"type": "thinking", "thinking": "", "fidelity": {"redacted_data": float("inf")}},
     "the c answer's thinking item cannot be sent back: fidelity['redacted_data'] is inf: JSON has no NaN or "
     "Infinity"),
    ({"type": "thinking", "thinking": "", "fidelity": {"signature": float("nan")}},
     "the c answer's thinking item cannot be sent back: fidelity['signature'] is nan: JSON has no NaN or Infinity"),
    ({"type": "text", "text": "hi", "fidelity": {"signature": "ab\ud800"}},
     "the c answer's text item cannot be sent back: fidelity['signature'] holds a lone surrogate ('\\ud800' at "
     "position 2): it cannot be sent as UTF-8"),
    ({"type": "text", "text": "", "fidelity": {"server_block": deep(200)}},
     "the c answer's text item cannot be sent back: fidelity nests deeper than 128 levels"),
    ({"type": "tool_call", "name": "f", "arguments": {}, "tool_call_id": "call_1", "fidelity": {"x": [-float("inf")]}},
     "the c answer's tool_call item cannot be sent back: fidelity['x'][0] is -inf: JSON has no NaN or Infinity"),
    ({"type": "partial_tool_call", "name": "get\udfff", "arguments": "", "tool_call_id": "call_1"},
     "the c answer's partial_tool_call item cannot be sent back: name holds a lone surrogate ('\\udfff' at "
     "position 3): it cannot be sent as UTF-8"),
    ({"type": "partial_tool_call", "name": "f", "arguments": "", "tool_call_id": "call_\ud83d"},
     "the c answer's partial_tool_call item cannot be sent back: tool_call_id holds a lone surrogate ('\\ud83d' "
     "at position 5): it cannot be sent as UTF-8"),
    ({"type": "inline_data", "data": b"x", "mime_type": "image/\ud800"},
     "the c answer's inline_data item cannot be sent back: mime_type holds a lone surrogate ('\\ud800' at "
     "position 6): it cannot be sent as UTF-8"),
])
def test_an_item_no_request_could_carry_back_is_a_protocol_error_before_it_is_yielded(item, said):
    text = {"type": "text", "text": "before"}
    events, error = events_or_error([text, item, StreamEnd(USAGE, "stop")])
    assert [e["content_items"] for e in events] == [[], [text]]
    assert type(error) is StreamProtocolError and str(error) == said
    assert error.client == "c"


def test_items_that_can_be_sent_back_pass_unchanged():
    """Text and thinking keep a lone half as it came (collect makes halves whole, a lone one U+FFFD);
    argument fragments are text (a character may be split between two); bytes in fidelity are kept."""
    items = [
        {"type": "text", "text": "a\ud83d", "fidelity": {"phase": "final_answer", "n": 1.5, "raw": b"\xff"}},
        {"type": "thinking", "thinking": "\ude00b", "fidelity": {"signature": "s" * 10, "deep": deep(120)}},
        {"type": "partial_tool_call", "name": "f\u00e9", "arguments": "{\"a\": \"\ud83d", "tool_call_id": "call_\u00e9"},
        {"type": "partial_tool_call", "name": "", "arguments": "\ude00\"}", "tool_call_id": ""},
        {"type": "tool_call", "name": "f\u00e9", "arguments": {"a": "\U0001f600"}, "tool_call_id": "call_\u00e9"},
    ]
    events, error = events_or_error(items + [StreamEnd(USAGE, None)])
    assert error is None
    check_stream(events)
    assert [e["content_items"][0] for e in events[1:-1]] == items
    message = collect(events)
    check_messages([{"role": "user", "content_items": [{"type": "text", "text": "hi"}]}, message])


def chat(*deltas, finish="tool_calls"):
    chunks = [{"choices": [{"index": 0, "delta": delta, "finish_reason": None}]} for delta in deltas]
    chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
    return "".join("data: {}\n\n".format(json.dumps(c)) for c in chunks).encode("utf-8") + b"data: [DONE]\n\n"


def test_chat_tool_call_name_with_a_lone_surrogate_is_a_protocol_error_not_a_stuck_history():
    call = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "get\ud800", "arguments": "{}"}}
    with pytest.raises(StreamProtocolError) as caught:
        run_parser(openai_chat.parse_stream, [chat({"content": "ok"}, {"tool_calls": [call]})], client="openai-chat")
    assert str(caught.value) == ("the openai-chat answer's partial_tool_call item cannot be sent back: name holds a "
                                 "lone surrogate ('\\ud800' at position 3): it cannot be sent as UTF-8")


def test_anthropic_redacted_thinking_whose_data_is_infinity_is_a_protocol_error():
    body = "".join("event: {}\ndata: {}\n\n".format(kind, payload) for kind, payload in [
        ("message_start", '{"type":"message_start","message":{"id":"m","usage":{"input_tokens":1,"output_tokens":1}}}'),
        ("content_block_start", '{"type":"content_block_start","index":0,'
                                '"content_block":{"type":"redacted_thinking","data":Infinity}}'),
        ("content_block_stop", '{"type":"content_block_stop","index":0}'),
        ("content_block_start", '{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}'),
        ("content_block_delta", '{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"hi"}}'),
        ("content_block_stop", '{"type":"content_block_stop","index":1}'),
        ("message_delta", '{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":2}}'),
        ("message_stop", '{"type":"message_stop"}'),
    ]).encode("utf-8")
    with pytest.raises(StreamProtocolError) as caught:
        run_parser(anthropic.parse_stream, [body], client="anthropic")
    assert str(caught.value) == ("the anthropic answer's thinking item cannot be sent back: fidelity['redacted_data'] "
                                 "is inf: JSON has no NaN or Infinity")
