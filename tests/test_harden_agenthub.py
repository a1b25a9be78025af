"""Issue 24 A7, the parser's side: one depth rule for tool-call arguments both ways, and a hostile
agenthub server (``client_type="agenthub"``) that can only raise typed errors and cannot reach the
client's own attributes (its key scrubbing).  The hostile server is sse_server.SSEServer on 127.0.0.1."""

import json

import pytest

from agenthub import (AutoLLMClient, ConfigError, RateLimitError, StreamProtocolError, ToolCallArgumentParseError,
                      UpstreamError, check_stream, collect)
from agenthub.providers import openai_chat
from agenthub.sse import SSEEvent
from agenthub.stream import drive
from agenthub.toolcalls import MAX_DEPTH
from agenthub.validate import check_message
from faultserver import fast_backoff  # noqa: F401  (a fixture)
from sse_server import Answer, SSEServer

KEY = "sk-agenthub-client-key-0123456789"


def _nested(depth):
    """An arguments object whose dicts nest ``depth`` levels (the root counts as one)."""
    value = {"leaf": 1}
    for _ in range(depth - 1):
        value = {"a": value}
    return value


def _chat_call(arguments_text):
    chunks = [
        {"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "id": "call_1", "type": "function", "function": {"name": "f", "arguments": arguments_text}}]}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    ]
    return [SSEEvent(json.dumps(chunk)) for chunk in chunks] + [SSEEvent("[DONE]")]


def test_arguments_at_the_depth_limit_are_accepted_from_the_model_and_sent_back():
    arguments = _nested(MAX_DEPTH)
    events = list(drive(openai_chat.parse_stream(_chat_call(json.dumps(arguments))), "openai-chat"))
    call = [item for event in events for item in event["content_items"] if item["type"] == "tool_call"][0]
    assert call["arguments"] == arguments
    check_message({"role": "assistant", "content_items": [call]})  # the next turn takes it back


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 201, 5000])
def test_arguments_deeper_than_the_limit_are_refused_from_the_model_as_they_would_be_sent(depth):
    text = '{"a":' * (depth - 1) + '{"leaf":1}' + "}" * (depth - 1)
    with pytest.raises(ToolCallArgumentParseError) as info:
        list(drive(openai_chat.parse_stream(_chat_call(text)), "openai-chat"))
    assert "nests deeper than {} levels".format(MAX_DEPTH) in str(info.value)
    assert info.value.tool_name == "f" and info.value.tool_call_id == "call_1"
    if depth < 1000:  # the same arguments, sent back: refused by the same rule
        with pytest.raises(ConfigError, match="nests deeper than {} levels".format(MAX_DEPTH)):
            check_message({"role": "assistant", "content_items": [
                {"type": "tool_call", "name": "f", "tool_call_id": "call_1", "arguments": json.loads(text)}]})


# -- a hostile agenthub server ---------------------------------------------------------------------------------


def _frames(*events):
    return [("data: " + json.dumps(event) + "\n\n").encode() for event in events]


START = {"role": "assistant", "event_type": "start", "content_items": [], "usage_metadata": None,
         "finish_reason": None, "created_at": 1}


def _delta(item):
    return {"role": "assistant", "event_type": "delta", "content_items": [item], "usage_metadata": None,
            "finish_reason": None, "created_at": 1}


def _stop(usage=None, finish="stop"):
    return {"role": "assistant", "event_type": "stop", "content_items": [], "usage_metadata": usage,
            "finish_reason": finish, "created_at": 1}


def _run(server, max_retries=0):
    client = AutoLLMClient("fast", client_type="agenthub", base_url=server.url, api_key=KEY, max_retries=max_retries)
    return list(client.streaming_response([{"role": "user", "content_items": [{"type": "text", "text": "hi"}]}]))


@pytest.mark.parametrize("item", [
    {"type": "text", "text": 5},
    {"type": "text"},
    {"type": "thinking", "thinking": ["x"]},
    {"type": "tool_call", "name": "f", "tool_call_id": "c", "arguments": "{}"},
    {"type": "no_such_item", "text": "x"},
    {"type": "text", "text": "x", "fidelity": "signed"},
    "text",
])
def test_a_malformed_item_from_the_server_is_a_stream_protocol_error(item):
    with SSEServer() as server:
        server.answers.append(Answer(_frames(START, _delta(item), _stop())))
        with pytest.raises(StreamProtocolError) as info:
            _run(server)
    assert "agenthub: the server sent a malformed content item" in str(info.value)


def test_deep_tool_call_arguments_from_the_server_are_refused_by_the_one_depth_rule():
    call = {"type": "tool_call", "name": "f", "tool_call_id": "c", "arguments": _nested(MAX_DEPTH + 1)}
    with SSEServer() as server:
        server.answers.append(Answer(_frames(START, _delta(call), _stop(finish="tool_call"))))
        with pytest.raises(StreamProtocolError, match="nested deeper than {} levels".format(MAX_DEPTH)):
            _run(server)


@pytest.mark.parametrize("stop", [_stop(finish="evil"), _stop(usage={"prompt_tokens": "9"}), _stop(usage=[1])])
def test_a_malformed_stop_event_from_the_server_is_a_stream_protocol_error(stop):
    with SSEServer() as server:
        server.answers.append(Answer(_frames(START, _delta({"type": "text", "text": "hi"}), stop)))
        with pytest.raises(StreamProtocolError, match="agenthub: the server sent a stop event"):
            _run(server)


def test_a_retry_after_string_before_the_stream_is_dropped_not_a_type_error(fast_backoff):  # noqa: F811
    error = {"error": {"type": "RateLimitError", "message": "slow down", "status": 429, "retryable": True,
                       "retry_after": "0.01", "client": "openai-chat"}}
    with SSEServer() as server:
        server.answers.append(Answer([json.dumps(error).encode()], status=429,
                                     headers={"Content-Type": "application/json"}))
        server.answers.append(Answer([json.dumps(error).encode()], status=429,
                                     headers={"Content-Type": "application/json"}))
        with pytest.raises(RateLimitError) as info:
            _run(server, max_retries=1)
        assert len(server.requests) == 2  # retried once, with the client's own backoff
    assert info.value.retry_after is None and info.value.status == 429 and info.value.message == "slow down"


def test_fields_of_the_wrong_type_or_undeclared_are_left_out_of_a_rebuilt_error():
    error = {"error": {"type": "UpstreamError", "message": "m", "status": "500", "code": 7, "retryable": "yes",
                       "request_id": "req_1", "client": "openai-chat", "hint": None, "__class__": "x",
                       "_fields": {"a": 1}, "args": [1], "extra": "x"}}
    with SSEServer() as server:
        server.answers.append(Answer(_frames(START, _delta({"type": "text", "text": "hi"}))
                                     + [("event: error\ndata: " + json.dumps(error) + "\n\n").encode()]))
        with pytest.raises(UpstreamError) as info:
            _run(server)
    raised = info.value
    assert type(raised) is UpstreamError
    assert (raised.status, raised.code, raised.request_id, raised.client) == (None, None, "req_1", "openai-chat")
    assert raised.retryable is False and not hasattr(raised, "extra") and raised.args == ("m",)


def test_the_server_cannot_switch_off_the_clients_key_scrubbing():
    error = {"error": {"type": "UpstreamError", "message": "upstream said: bad key {}".format(KEY), "status": 400,
                       "retryable": False, "_agenthub_stop": True}}
    with SSEServer() as server:
        server.answers.append(Answer([json.dumps(error).encode()], status=400,
                                     headers={"Content-Type": "application/json"}))
        with pytest.raises(UpstreamError) as info:
            _run(server)
    assert not getattr(info.value, "_agenthub_stop", False)
    assert KEY not in str(info.value) and KEY not in repr(info.value) and KEY not in info.value.message
    assert "***" in info.value.message


def test_one_35_mb_event_is_read_in_linear_work():
    """Issue 29 D6: the body comes in 64 KiB reads; the framing searches each read once and joins the
    event's pieces once, so the bytes it scans grow with the event, not with its square.  The work is
    counted (every find/split/index on a bytes object of this thread, by its size), not timed."""
    import sys
    arguments = {"blob": "x" * (35 * 1024 * 1024)}
    # (the runs wire: the call announced with its whole arguments' text, then complete with "arguments": null)
    announce = {"type": "partial_tool_call", "name": "f", "tool_call_id": "c", "arguments": json.dumps(arguments)}
    call = {"type": "tool_call", "name": "f", "tool_call_id": "c", "arguments": None}
    scanned = [0, 0]  # bytes scanned, calls

    def profile(frame, event, arg):
        if event == "c_call" and getattr(arg, "__name__", "") in ("find", "split", "index", "rfind", "partition"):
            target = getattr(arg, "__self__", None)
            if isinstance(target, (bytes, bytearray)):
                scanned[0] += len(target)
                scanned[1] += 1

    with SSEServer() as server:
        body = b"".join(_frames(START, _delta(announce), _delta(call), _stop(finish="tool_call")))
        server.answers.append(Answer([body[i:i + 1024 * 1024] for i in range(0, len(body), 1024 * 1024)]))
        sys.setprofile(profile)
        try:
            events = _run(server)
        finally:
            sys.setprofile(None)
    calls = [item for event in events for item in event["content_items"] if item["type"] == "tool_call"]
    assert [c["arguments"] == arguments for c in calls] == [True]
    assert len(body) > 35 * 1024 * 1024
    assert scanned[0] < 4 * len(body), scanned  # before: one rescan of the whole unfinished event per read


@pytest.mark.parametrize("frame", [
    '[{"type":"inline_data","mime_type":"image/png","data":{"__bytes__":"!!!"}}]',  # an items frame
    json.dumps(_delta({"type": "inline_data", "mime_type": "image/png", "data": {"__bytes__": "aGk=!"}})),  # an event
])
def test_bytes_that_are_not_base64_from_the_server_are_a_stream_protocol_error(frame):
    """The server writes bytes as base64; a payload that is not base64 was decoded leniently (``"!!!"`` as no bytes
    at all, ``"aGk=!"`` as ``b"hi"``): the client handed on an image that was not the server's."""
    with SSEServer() as server:
        server.answers.append(Answer(_frames(START) + [("data: " + frame + "\n\n").encode()] + _frames(_stop())))
        with pytest.raises(StreamProtocolError) as info:
            _run(server)
    assert str(info.value).startswith("malformed payload in the agenthub stream: Error: ")


def test_bytes_in_a_stop_or_document_from_the_server_still_decode():
    item = {"type": "inline_data", "mime_type": "image/png", "data": {"__bytes__": "aGk="}}
    with SSEServer() as server:
        server.answers.append(Answer(_frames(START, _delta(item), _stop())))
        events = _run(server)
    assert [event["content_items"] for event in events] == [
        [], [{"type": "inline_data", "mime_type": "image/png", "data": b"hi"}], []]


# -- the tool-call grammar of a server's stream (rule 5) ------------------------------------------------------------


def _announced(name="f", call_id="c1", arguments=""):
    return _delta({"type": "partial_tool_call", "name": name, "arguments": arguments, "tool_call_id": call_id})


def _fragment(arguments, call_id=""):
    return _delta({"type": "partial_tool_call", "name": "", "arguments": arguments, "tool_call_id": call_id})


def _complete(arguments, name="f", call_id="c1"):
    return _delta({"type": "tool_call", "name": name, "arguments": arguments, "tool_call_id": call_id})


def _read(*events):
    from agenthub.providers.agenthub_server import framing, parse_stream

    body = b"".join(_frames(*events)) + b"data: [DONE]\n\n"
    return list(drive(parse_stream(framing([body]), "agenthub"), "agenthub"))


@pytest.mark.parametrize("events, said", [
    ([_fragment('{"a": 1}'), _complete({"a": 1})], "an argument fragment for no tool call under way"),
    ([_announced(), _announced("g", "c2"), _complete({})], "tool call 'g' announced while 'f' was under way"),
    ([_announced(call_id=""), _complete({})], "tool call 'f' announced without a tool_call_id"),
    ([_announced(), _fragment("{}", "c1"), _complete({})], "an argument fragment with a tool_call_id but no name"),
    ([_complete({"a": 1})], "a tool_call for no call under way"),
    ([_announced(), _fragment("{}"), _complete({}, call_id="c2")],
     "a tool_call whose name or tool_call_id is not its announcement's"),
    ([_announced(), _fragment('{"a": 1}'), _complete({"a": 2})], "a tool_call whose arguments are not its fragments' text"),
    ([_announced(), _fragment('{"a": 1}')], "a stop event while tool call 'f' was under way"),
])
def test_a_server_stream_breaking_the_tool_call_grammar_is_a_stream_protocol_error(events, said):
    """Found by the wire fuzzer (tests/wirefuzz.py): a server's (or a relay's) stream with a call's frames
    dropped, repeated or changed was handed on as it came, events check_stream refuses (a fragment of no call,
    a call that never completed, arguments that are not the fragments' text)."""
    text = _delta({"type": "text", "text": "hi"})
    with pytest.raises(StreamProtocolError) as info:
        _read(START, text, *events, _stop(finish="tool_call"))
    assert str(info.value) == "agenthub: the server sent " + said


def test_a_server_stream_keeping_the_tool_call_grammar_is_read_as_it_came():
    events = _read(START, _announced(arguments='{"a": '), _fragment("[1, "), _fragment("2]}"),
                   _complete({"a": [1, 2]}), _announced("g", "c2"), _complete({}, "g", "c2"), _stop(finish="tool_call"))
    check_stream(events)
    assert [e["content_items"][0]["type"] for e in events[1:-1]] == [
        "partial_tool_call", "partial_tool_call", "partial_tool_call", "tool_call", "partial_tool_call", "tool_call"]
    assert events[4]["content_items"][0]["arguments"] == {"a": [1, 2]}


def test_a_character_split_in_two_fragments_is_that_character_in_arguments_the_client_parses():
    """The runs wire sends a complete call's arguments as null: the client parses its fragments' text, whose two
    UTF-16 halves of one character (sent by the server as two fragments) are that character, as the server's
    own assembler reads them (before: two lone surrogates, which the next turn refused with a ConfigError)."""
    from agenthub.providers.agenthub_server import framing, parse_stream

    body = (b"".join(_frames(START, _announced(arguments='{"a": "\ud83d'), _fragment('\ude00"}')))
            + b'data: {"role":"assistant","event_type":"delta","content_items":[{"type":"tool_call","name":"f",'
              b'"arguments":null,"tool_call_id":"c1"}],"usage_metadata":null,"finish_reason":null,"created_at":1}\n\n'
            + b"".join(_frames(_stop(finish="tool_call"))))
    events = list(drive(parse_stream(framing([body]), "agenthub"), "agenthub"))
    check_stream(events)
    assert events[3]["content_items"][0]["arguments"] == {"a": "\U0001f600"}
    check_message(collect(events))
