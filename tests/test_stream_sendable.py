"""An answer is only complete if the next turn can answer it: a string the answer names things by (a tool
call's name or id, a MIME type) holding a lone surrogate is a StreamProtocolError while the stream is read,
not a ConfigError on the next turn (which left a stateful client's history, and a tool run, stuck with a
call no request can answer).  The opaque fidelity is kept as it came (a server's NaN or lone surrogate in a
server block: a job writes the answer, see test_batch_crash.py)."""

import json

import pytest

from agenthub import check_stream, collect
from agenthub.errors import StreamProtocolError
from agenthub.providers import openai_chat
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
    ({"type": "partial_tool_call", "name": "get\udfff", "arguments": "", "tool_call_id": "call_1"},
     "the c answer's partial_tool_call item cannot be sent back: name holds a lone surrogate ('\\udfff' at "
     "position 3): it cannot be sent as UTF-8"),
    ({"type": "partial_tool_call", "name": "f", "arguments": "", "tool_call_id": "call_\ud83d"},
     "the c answer's partial_tool_call item cannot be sent back: tool_call_id holds a lone surrogate ('\\ud83d' "
     "at position 5): it cannot be sent as UTF-8"),
    ({"type": "tool_call", "name": "f", "arguments": {}, "tool_call_id": "call_\udc00"},
     "the c answer's tool_call item cannot be sent back: tool_call_id holds a lone surrogate ('\\udc00' at "
     "position 5): it cannot be sent as UTF-8"),
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
    argument fragments are text (a character may be split between two); fidelity is kept as it came."""
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
