"""agenthub serve's runs wire (``X-AgentHub-Wire: runs``, issue 41 item 4): runs of text pieces and of argument
fragments as one ``data: ~<t|a><piece>ESC s<piece>...`` frame each, a complete call's parsed arguments not sent again
(``"arguments": null``); the agenthub client's events equal the direct client's, and the other wires are as
they were."""

import json
import queue
import re
import threading

import pytest
import requests

from agenthub import AutoLLMClient
from agenthub.apps import server as server_module
from agenthub.apps.server import make_app
from agenthub.errors import AgentHubError, ConfigError, StreamProtocolError
from agenthub.providers.agenthub_server import parse_stream
from agenthub.sse import iter_events
from agenthub.stream import StreamEnd, drive
from conftest import strip_ids
from server_support import Builtin, Route, Upstream
from test_server import _App  # (a body's app: what _Body asks of it)

MESSAGES = [{"role": "user", "content_items": [{"type": "text", "text": "Write the file."}]}]
PROTOCOLS = ("openai-chat", "openai-responses", "anthropic", "gemini")
ESC = "\x1b"
#: the pump's markers: the str pieces after ARGS are argument fragments, those after TEXT (or before any) text
ARGS = server_module._ARG_PIECES
TEXT = server_module._TEXT_PIECES
_GENERATED_ID = re.compile(r"call_[0-9a-f]{12}_(\d+)")


def same_ids(events):
    """Events without created_at, the tool-call ids a parser made up (a random prefix per stream) unified."""
    return json.loads(_GENERATED_ID.sub(r"call_generated_\1", json.dumps(strip_ids(events))))


class _Pump(object):
    model_id = "m"
    taken_bytes = 0
    runs = True

    def __init__(self):
        self.queue = server_module._Queue()  # (the pump's queue: the writer takes it whole)

    def stop(self):
        pass


def _body(items, runs=True):
    pump = _Pump()
    pump.runs = runs
    for item in items:
        pump.queue.put(item)
    return pump, b"".join(server_module._Body(_App(), pump, pump.queue.get()))


def _delta(item, created_at=1):
    return {"role": "assistant", "event_type": "delta", "content_items": [item], "usage_metadata": None,
            "finish_reason": None, "created_at": created_at}


STOP = (b'data: {"role":"assistant","event_type":"stop","content_items":[],"usage_metadata":null,'
        b'"finish_reason":"tool_call","created_at":1}\n\n')


# -- the frames, pure ------------------------------------------------------------------------------------------


def test_the_writer_writes_runs_frames():
    frame = b'data: {"k":1}\n\n'
    pump, out = _body([frame, "a", "\u00e9\n", ARGS, '{"x":', '"y\\n"}', frame, TEXT, "b" + ESC, "\r",
                       server_module._END])
    assert out == (frame + b"data: ~ta\x1bs\xc3\xa9\x1bn\n\n" + b'data: ~a{"x":\x1bs"y\\n"}\n\n' + frame
                   + b"data: ~tb\x1be\x1bs\x1br\n\n" + b"data: [DONE]\n\n")
    assert pump.taken_bytes == 2 * len(frame) + (1 + 16) + (2 + 16) + (5 + 16) + (6 + 16) + (2 + 16) + (1 + 16)
    pump, out = _body(["", "", ValueError("boom")])  # empty pieces keep their place; an error ends the body
    assert out == b'data: ~t\x1bs\n\nevent: error\ndata: {"error":"x"}\n\n'
    # text no UTF-8 can carry (a lone surrogate): that run goes as an items frame, JSON escapes and all
    pump, out = _body(["a", "\ud83d", ARGS, "b", server_module._END])
    assert out == b'data: ["a","\\ud83d"]\n\ndata: ~ab\n\ndata: [DONE]\n\n'
    pump, out = _body([ARGS, "\ud800", server_module._END])
    assert out == b'data: [["\\ud800"]]\n\ndata: [DONE]\n\n'


def test_any_pieces_come_back_as_they_went():
    """Pieces made of the escapes' own letters, ESC, LF and CR in every order: a runs frame reads back as them."""
    import random

    from agenthub.providers.agenthub_server import _run

    rng = random.Random(41)
    alphabet = [ESC, "s", "e", "n", "r", "\n", "\r", "a", "\u00e9", ESC + "s", "\\"]
    for _ in range(2000):
        pieces = ["".join(rng.choice(alphabet) for _ in range(rng.randrange(4))) for _ in range(rng.randrange(1, 5))]
        for letter in (b"t", b"a"):
            frame = server_module._run_frame(letter, pieces)
            assert frame.startswith(b"data: ~" + letter) and frame.endswith(b"\n\n")
            assert frame.count(b"\n") == 2 and b"\r" not in frame
            assert _run(frame[6:-2].decode("utf-8"), "agenthub") == (letter.decode(), pieces)


def test_a_long_run_is_cut_into_frames(monkeypatch):
    monkeypatch.setattr(server_module, "MAX_BATCH_BYTES", 40)
    pump, out = _body([ARGS, "x" * 20, "y" * 20, "z", server_module._END])
    assert out == b"data: ~a" + b"x" * 20 + b"\x1bs" + b"y" * 20 + b"\n\ndata: ~az\n\ndata: [DONE]\n\n"


def test_the_items_wire_writer_is_unchanged():
    """A pump of the items wire (runs False): the same JSON frame of pieces as before the runs wire."""
    frame = b'data: {"k":1}\n\n'
    pump, out = _body([frame, "a", "\u00e9\n", ARGS, '{"x":', frame, TEXT, "b", server_module._END], runs=False)
    assert out == (frame + b'data: ["a","\\u00e9\\n",["{\\"x\\":"]]\n\n' + frame + b'data: ["b"]\n\n'
                   + b"data: [DONE]\n\n")


def _pumped(events, items=True, runs=True, error=None):
    """What the real pump queues for ``events`` (and ``error`` raised after them, if given)."""
    class Stream(object):
        def __iter__(self):
            for event in events:
                yield event
            if error is not None:
                raise error

        def close(self):
            pass

        def abort(self):
            pass

    pump = server_module._Pump(_App(), Stream(), "m", items=items, runs=runs)
    pump.start()
    pump.thread.join(5)
    queued = []
    while not pump.queue.empty():
        queued.append(pump.queue.get())
    return queued


def test_the_pump_sends_a_complete_call_without_the_arguments_the_client_has():
    encode = server_module._encode_event
    announce = _delta({"type": "partial_tool_call", "name": "f", "arguments": "", "tool_call_id": "c1"})
    fragment = _delta({"type": "partial_tool_call", "name": "", "arguments": '{"a": 1}', "tool_call_id": ""})
    done = _delta({"type": "tool_call", "name": "f", "arguments": {"a": 1}, "tool_call_id": "c1",
                   "fidelity": {"k": "v"}})
    queued = _pumped([announce, fragment, done])
    assert queued == [encode(announce), server_module._ARG_PIECES, '{"a": 1}',
                      b'data: {"role":"assistant","event_type":"delta","content_items":[{"type":"tool_call","name":"f",'
                      b'"arguments":null,"tool_call_id":"c1","fidelity":{"k":"v"}}],"usage_metadata":null,'
                      b'"finish_reason":null,"created_at":1}\n\n', server_module._END]
    assert done["content_items"][0]["arguments"] == {"a": 1}  # the library's event is left as it was
    # sent whole: empty arguments, another call than the one announced, a call never announced, other wires
    empty = _delta({"type": "tool_call", "name": "f", "arguments": {}, "tool_call_id": "c1"})
    other = _delta({"type": "tool_call", "name": "f", "arguments": {"a": 1}, "tool_call_id": "c2"})
    assert _pumped([announce, empty])[1] == encode(empty)
    assert _pumped([announce, fragment, other])[3] == encode(other)
    assert _pumped([done])[0] == encode(done)
    assert _pumped([announce, fragment, done], runs=False)[3] == encode(done)
    assert _pumped([announce, fragment, done], items=False, runs=True)[1:3] == [encode(fragment), encode(done)]


def _parts(body):
    return list(parse_stream(iter_events([body])))


def test_runs_frames_are_read():
    body = (b"data: ~tHel\x1bs\x1bs\x1bnlo\xc3\xa9\x1br\x1be\n\n"
            b'data: {"role":"assistant","event_type":"delta","content_items":[{"type":"partial_tool_call","name":"f",'
            b'"arguments":"{\\"a\\": ","tool_call_id":"c1"}],"usage_metadata":null,"finish_reason":null,'
            b'"created_at":1}\n\n'
            b'data: ~a[1\x1bs\x1bn\x1bs]\n\n'
            b'data: ["",["}"]]\n\n'
            b'data: {"role":"assistant","event_type":"delta","content_items":[{"type":"tool_call","name":"f",'
            b'"arguments":null,"tool_call_id":"c1"}],"usage_metadata":null,"finish_reason":null,"created_at":1}\n\n'
            + STOP)
    parts = _parts(body)
    assert parts[:-1] == [
        {"type": "text", "text": "Hel"}, {"type": "text", "text": ""}, {"type": "text", "text": "\nlo\u00e9\r" + ESC},
        {"type": "partial_tool_call", "name": "f", "arguments": '{"a": ', "tool_call_id": "c1"},
        {"type": "partial_tool_call", "name": "", "arguments": "[1", "tool_call_id": ""},
        {"type": "partial_tool_call", "name": "", "arguments": "\n", "tool_call_id": ""},
        {"type": "partial_tool_call", "name": "", "arguments": "]", "tool_call_id": ""},
        {"type": "text", "text": ""},
        {"type": "partial_tool_call", "name": "", "arguments": "}", "tool_call_id": ""},
        {"type": "tool_call", "name": "f", "arguments": {"a": [1]}, "tool_call_id": "c1"}]
    assert isinstance(parts[-1], StreamEnd) and parts[-1].finish_reason == "tool_call"
    assert list(parts[-2]) == ["type", "name", "arguments", "tool_call_id"]  # the key order of every item
    events = list(drive(parse_stream(iter_events([body])), "agenthub"))
    assert [e["event_type"] for e in events] == ["start"] + ["delta"] * 10 + ["stop"]


def _announce(arguments='{"a": '):
    return ('data: {"role":"assistant","event_type":"delta","content_items":[{"type":"partial_tool_call","name":"f",'
            '"arguments":' + json.dumps(arguments) + ',"tool_call_id":"c1"}],"usage_metadata":null,'
            '"finish_reason":null,"created_at":1}\n\n').encode()


_NULL_CALL = (b'data: {"role":"assistant","event_type":"delta","content_items":[{"type":"tool_call","name":"f",'
              b'"arguments":null,"tool_call_id":"c1"}],"usage_metadata":null,"finish_reason":null,"created_at":1}\n\n')


@pytest.mark.parametrize("bad", [
    b"data: ~xa\n\n", b"data: ~\n\n", b"data: ~Ta\n\n",
    _NULL_CALL,  # no call under way
    _announce() + b"data: ~aNaN}\n\n" + _NULL_CALL,  # fragments that are no arguments
    _announce('{"a": NaN}') + _NULL_CALL,
    _announce("[1]") + _NULL_CALL,
    _announce("") + b"data: ~a[1\n\n" + _NULL_CALL,
    _announce('{"a": ' + "[" * 200 + "]" * 200 + "}") + _NULL_CALL,  # deeper than the depth rule
    _announce('{"a": ' + "[" * 5000 + "]" * 5000 + "}") + _NULL_CALL,  # deeper than the interpreter goes
])
def test_bad_runs_frames_are_refused(bad):
    with pytest.raises(StreamProtocolError):
        list(drive(parse_stream(iter_events([bad + STOP])), "agenthub"))


def test_a_complete_call_with_its_arguments_ends_the_call_under_way():
    """A call sent whole (the other wires, or empty arguments) is read as it came; a later null is refused."""
    whole = (b'data: {"role":"assistant","event_type":"delta","content_items":[{"type":"tool_call","name":"f",'
             b'"arguments":{"a":2},"tool_call_id":"c1"}],"usage_metadata":null,"finish_reason":null,'
             b'"created_at":1}\n\n')
    parts = _parts(_announce() + b"data: ~a2}\n\n" + whole + STOP)
    assert parts[-2]["arguments"] == {"a": 2}
    with pytest.raises(StreamProtocolError):
        _parts(_announce() + b"data: ~a2}\n\n" + whole + _NULL_CALL + STOP)


# -- through a server: the agenthub client's events are the direct client's ---------------------------------------


def _arguments():
    """Arguments as a coding agent sends them: escapes, non-ASCII, a lone-surrogate-free astral character,
    whitespace with LF and CR between tokens."""
    line = 'def handler(event):  # "quoted" \\ back\tslash, caf\u00e9 \u6771\u4eac \U0001f600\n    return {"ok": True}\n'
    value = {"path": "src/m.py", "content": line * 60, "mode": 420, "ratio": -0.5, "flags": [True, None, 1e-7]}
    return json.dumps(value, ensure_ascii=False).replace(', "mode"', ',\r\n  "mode"').replace("{", "{\n ", 1)


def _split(text, n):
    return [text[len(text) * i // n:len(text) * (i + 1) // n] for i in range(n)]


def _sse(payload, event=None):
    head = "event: {}\n".format(event) if event else ""
    return (head + "data: " + json.dumps(payload, separators=(",", ":")) + "\n\n").encode("utf-8")


def _tool_stream(protocol, arguments, n):
    pieces = _split(arguments, n)
    if protocol == "openai-chat":
        base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m"}
        out = [_sse(dict(base, choices=[{"index": 0, "delta": {"role": "assistant", "content": "Writing.\n"},
                                         "finish_reason": None}]))]
        out.append(_sse(dict(base, choices=[{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "id": "call_1", "type": "function", "function": {"name": "write_file", "arguments": ""}}]},
            "finish_reason": None}])))
        for piece in pieces:
            out.append(_sse(dict(base, choices=[{"index": 0, "delta": {"tool_calls": [
                {"index": 0, "function": {"arguments": piece}}]}, "finish_reason": None}])))
        out.append(_sse(dict(base, choices=[{"index": 0, "delta": {}, "finish_reason": "tool_calls"}])))
        out.append(_sse(dict(base, choices=[], usage={"prompt_tokens": 9, "completion_tokens": n,
                                                      "total_tokens": 9 + n})))
        return b"".join(out) + b"data: [DONE]\n\n"
    if protocol == "openai-responses":
        response = {"id": "resp_1", "object": "response", "created_at": 1, "model": "m", "status": "in_progress",
                    "output": []}
        item = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "write_file", "arguments": "",
                "status": "in_progress"}
        done = dict(item, arguments=arguments, status="completed")
        out = [_sse({"type": "response.created", "response": response}, "response.created"),
               _sse({"type": "response.output_item.added", "output_index": 0, "item": item},
                    "response.output_item.added")]
        for piece in pieces:
            out.append(_sse({"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 0,
                             "delta": piece}, "response.function_call_arguments.delta"))
        out.append(_sse({"type": "response.function_call_arguments.done", "item_id": "fc_1", "output_index": 0,
                         "arguments": arguments}, "response.function_call_arguments.done"))
        out.append(_sse({"type": "response.output_item.done", "output_index": 0, "item": done},
                        "response.output_item.done"))
        out.append(_sse({"type": "response.completed", "response": dict(
            response, status="completed", output=[done],
            usage={"input_tokens": 9, "output_tokens": n, "total_tokens": 9 + n})}, "response.completed"))
        return b"".join(out)
    if protocol == "anthropic":
        out = [_sse({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
                                                          "content": [], "model": "m", "stop_reason": None,
                                                          "usage": {"input_tokens": 9, "output_tokens": 1}}},
                    "message_start"),
               _sse({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
                    "content_block_start"),
               _sse({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Writing."}},
                    "content_block_delta"),
               _sse({"type": "content_block_stop", "index": 0}, "content_block_stop"),
               _sse({"type": "content_block_start", "index": 1, "content_block": {
                   "type": "tool_use", "id": "toolu_1", "name": "write_file", "input": {}}}, "content_block_start")]
        for piece in pieces:
            out.append(_sse({"type": "content_block_delta", "index": 1, "delta": {
                "type": "input_json_delta", "partial_json": piece}}, "content_block_delta"))
        out.append(_sse({"type": "content_block_stop", "index": 1}, "content_block_stop"))
        out.append(_sse({"type": "message_delta", "delta": {"stop_reason": "tool_use"},
                         "usage": {"output_tokens": n}}, "message_delta"))
        out.append(_sse({"type": "message_stop"}, "message_stop"))
        return b"".join(out)
    # gemini: the arguments as one object (kept as it came), then text
    usage = {"promptTokenCount": 9, "candidatesTokenCount": n, "totalTokenCount": 9 + n}
    return (_sse({"candidates": [{"content": {"role": "model", "parts": [{"text": "Writing.\n"}]}, "index": 0}]})
            + _sse({"candidates": [{"content": {"role": "model", "parts": [
                {"functionCall": {"name": "write_file", "args": json.loads(arguments)}}]}, "index": 0,
                "finishReason": "STOP"}], "usageMetadata": usage}))


def _base(url, protocol):
    return url + "/" + protocol + ("/v1" if protocol.startswith("openai") else "")


@pytest.fixture(scope="module")
def upstream():
    with Upstream() as up:
        app = make_app({"models": [{"id": protocol, "model": "m", "client_type": protocol,
                                    "base_url": _base(up.url, protocol), "api_key": "k", "max_retries": 0}
                                   for protocol in PROTOCOLS]})
        with Builtin(app) as server:
            yield up, server


def _events(client):
    events = []
    try:
        for event in client.streaming_response(MESSAGES):
            events.append(event)
    except AgentHubError as exc:
        return events, exc
    return events, None


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_tool_streams_through_the_runs_wire_equal_the_direct_client(upstream, protocol):
    up, server = upstream
    arguments = _arguments()
    up.routes[protocol] = Route(_tool_stream(protocol, arguments, 300), parts=7)
    want, error = _events(AutoLLMClient("m", client_type=protocol, base_url=_base(up.url, protocol), api_key="k",
                                        max_retries=0))
    assert error is None and want[-1]["finish_reason"] == "tool_call"
    calls = [i for e in want for i in e["content_items"] if i["type"] == "tool_call"]
    assert calls and calls[0]["arguments"] == json.loads(arguments)
    got, error = _events(AutoLLMClient(protocol, client_type="agenthub", base_url=server.url, max_retries=0))
    assert error is None
    assert same_ids(got) == same_ids(want)
    assert [list(i) for e in got for i in e["content_items"]] == [list(i) for e in want for i in e["content_items"]]
    # what travelled: the runs wire's frames (the fragments of the streamed protocols as runs), the call's
    # arguments once; the items wire and the plain wire as they were
    body = requests.post(server.url + "/v1/stream", json={"model": protocol, "messages": MESSAGES},
                         headers={"X-AgentHub-Wire": "runs"}, timeout=30).content
    assert b'"arguments":null' in body
    if protocol != "gemini":
        assert b"\ndata: ~a" in body
    for wire in ("items", None):
        headers = {"X-AgentHub-Wire": wire} if wire else {}
        other = requests.post(server.url + "/v1/stream", json={"model": protocol, "messages": MESSAGES},
                              headers=headers, timeout=30).content
        assert b"data: ~" not in other and b'"arguments":null' not in other
        assert (b"\ndata: [" in other.replace(b"data: [DONE]", b"")) == (wire == "items")


def test_text_with_line_breaks_and_escapes_through_the_runs_wire(upstream):
    up, server = upstream
    base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    pieces = ["a\n", "\r\n", ESC + "n", "\x00", "caf\u00e9", "\U0001f600", "\\", '"', ""] * 20
    body = b"".join(_sse(dict(base, choices=[{"index": 0, "delta": {"content": p}, "finish_reason": None}]))
                    for p in pieces)
    body += _sse(dict(base, choices=[{"index": 0, "delta": {}, "finish_reason": "stop"}])) + b"data: [DONE]\n\n"
    up.routes["openai-chat"] = Route(body, parts=3)
    want, error = _events(AutoLLMClient("m", client_type="openai-chat", base_url=_base(up.url, "openai-chat"),
                                        api_key="k", max_retries=0))
    assert error is None
    got, error = _events(AutoLLMClient("openai-chat", client_type="agenthub", base_url=server.url, max_retries=0))
    assert error is None and strip_ids(got) == strip_ids(want)
    assert "".join(i["text"] for e in got for i in e["content_items"]) == "".join(pieces)


# -- the writer takes the queue whole (issue 41 item 4: the serve path's CPU) ---------------------------------
#
# The oracle below is the wire as docs/serve.md and ``_run_frame``'s docstring describe it, written out here
# without the server's code: per write (what the writer took at once), each run of pieces as frames of at most
# MAX_BATCH_BYTES as the pump counts them (a piece: its length + 16; the frame that passes the limit ends with
# the piece that passed it); a frame's bytes as they are; the end or an error last.

_ESCAPES = {ESC: ESC + "e", "\n": ESC + "n", "\r": ESC + "r"}
_DONE = b"data: [DONE]\n\n"
_ERROR = b'event: error\ndata: {"error":"x"}\n\n'  # (what the test app's _error_bytes says)


def _items_frame(run):
    """The items wire's frame of ``run`` ((kind, piece) pairs): a JSON array, a text piece as a string, an
    argument fragment as ``["<arguments>"]``, non-ASCII (and a lone surrogate) as JSON escapes."""
    return (b"data: " + json.dumps([piece if kind == "t" else [piece] for kind, piece in run],
                                   separators=(",", ":")).encode("ascii") + b"\n\n")


def _wire_frame(run, runs):
    """The frame of ``run``, a run of pieces of one kind on the runs wire (any kinds on the items wire)."""
    if not runs or any(0xD800 <= ord(c) <= 0xDFFF for _, piece in run for c in piece):
        return _items_frame(run)  # (a lone surrogate: no UTF-8 carries it)
    text = (ESC + "s").join("".join(_ESCAPES.get(c, c) for c in piece) for _, piece in run)
    return b"data: ~" + run[0][0].encode("ascii") + text.encode("utf-8") + b"\n\n"


def _expected_writes(batches, runs, limit):
    """The writes, and the bytes the writer counts as taken, for ``batches``: each a list of ("t", text piece),
    ("a", argument fragment), ("frame", bytes), ("end", None) or ("error", None)."""
    writes = []
    taken = 0
    for batch in batches:
        parts = []
        run = []
        size = 0
        for what, value in batch:
            if what in ("t", "a"):
                if run and runs and run[-1][0] != what:
                    parts.append(_wire_frame(run, runs))
                    run, size = [], 0
                run.append((what, value))
                size += len(value) + 16
                taken += len(value) + 16
                if size > limit:
                    parts.append(_wire_frame(run, runs))
                    run, size = [], 0
                continue
            if run:
                parts.append(_wire_frame(run, runs))
                run, size = [], 0
            if what == "frame":
                parts.append(value)
                taken += len(value)
            else:
                parts.append(_DONE if what == "end" else _ERROR)
        if run:
            parts.append(_wire_frame(run, runs))
        writes.append(b"".join(parts))
    return writes, taken


def _queue_of(events, error):
    """What the pump queues for ``events`` (docs of ``_Pump``): a plain delta's text piece or argument fragment as
    its str, the marker of its kind (``_ARG_PIECES`` / ``_TEXT_PIECES``) before the first of each kind change (text
    before any marker), any other event as its frame; the end or the error last.  Per event, its items."""
    per_event = []
    mode = "t"
    for what, value, _ in events:
        if what in ("t", "a"):
            if what != mode:
                mode = what
                per_event.append([server_module._ARG_PIECES if what == "a" else server_module._TEXT_PIECES, value])
            else:
                per_event.append([value])
        else:
            per_event.append([value])
    per_event.append([server_module._END if error is None else error])
    return per_event


def _random_events(rng, long_pieces):
    """Runs of text pieces and argument fragments (ESC, LF, CR, the escapes' letters, non-ASCII, astral, empty,
    now and then a lone surrogate or, with ``long_pieces``, tens of kilobytes), between other events."""
    alphabet = [ESC, "s", "e", "n", "r", "\n", "\r", "\u00e9", "\U0001f600", '"', "\\", "x" * 5, ""]
    events = []  # (kind, piece or frame, the event)
    kind = rng.choice("ta")
    for _ in range(rng.randrange(1, 30)):
        roll = rng.random()
        if roll < 0.08:  # an event that is no piece: its frame, as the pump encodes it (compact JSON, ASCII)
            item = rng.choice([{"type": "thinking", "thinking": "t\u00e9\n" + ESC},
                               {"type": "partial_tool_call", "name": "f", "arguments": "", "tool_call_id": "c1"}])
            event = _delta(item)
            events.append(("frame", ("data: " + json.dumps(event, separators=(",", ":")) + "\n\n").encode(), event))
            continue
        if roll < 0.3:
            kind = "a" if kind == "t" else "t"
        piece = "".join(rng.choice(alphabet) for _ in range(rng.randrange(5)))
        if rng.random() < 0.05:
            piece += rng.choice(["\ud83d", "\udc00"])  # no UTF-8 carries it
        if long_pieces and rng.random() < 0.3:
            piece += "y" * rng.randrange(20000, 40000)
        if kind == "t":
            event = _delta({"type": "text", "text": piece})
        else:
            event = _delta({"type": "partial_tool_call", "name": "", "arguments": piece, "tool_call_id": ""})
        events.append((kind, piece, event))
    return events


def test_random_runs_read_by_the_pump_and_written_in_random_batches_are_the_documented_frames(monkeypatch):
    """Issue 41 item 4: random runs of text pieces and argument fragments, between other events, read by the real
    pump (which queues a fragment as its bare str after a marker) and taken by the real writer (``_Body``) in random
    batches, on the runs and the items wire, with MAX_BATCH_BYTES small (runs cut often) and as it is (pieces of
    tens of kilobytes): each write is the frames the wire's description makes of that batch, the bytes counted as
    taken are the pump's count, and every path of the writer is exercised (a batch of one run, cut runs, runs
    frames with escapes, items frames for a lone surrogate, frames, the end, an error)."""
    import random

    monkeypatch.setattr(server_module, "GATHER_SECONDS", 0.0)  # (no pause between the writes of a test)
    rng = random.Random(41446)
    seen = {"one run": 0, "several runs": 0, "cut": 0, "escaped": 0, "surrogate": 0, "error": 0, "frame": 0}
    for case in range(300):
        long_pieces = case % 10 == 0
        limit = server_module.MAX_BATCH_BYTES if long_pieces else rng.choice([40, 64, 100, 400])
        monkeypatch.setattr(server_module, "MAX_BATCH_BYTES", limit)
        events = _random_events(rng, long_pieces)
        error = ConfigError("boom") if rng.random() < 0.2 else None
        for runs in (True, False):
            per_event = _queue_of(events, error)
            queued = _pumped([event for _, _, event in events], runs=runs, error=error)
            assert queued == [item for items in per_event for item in items]
            # batches cut between events (a marker and its piece are one extend: taken both or neither)
            cuts = sorted(rng.sample(range(1, len(per_event)), min(len(per_event) - 1, rng.randrange(6))))
            spans = list(zip([0] + cuts, cuts + [len(per_event)]))
            described = [(what, value) for what, value, _ in events] + [("end" if error is None else "error", None)]
            want, want_taken = _expected_writes([described[a:b] for a, b in spans], runs, limit)
            pump = _Pump()
            pump.runs = runs
            body = server_module._Body(_App(), pump, None)
            got = []
            for a, b in spans:
                pump.queue.items.extend(item for items in per_event[a:b] for item in items)
                got.append(next(body))
            assert not pump.queue.items
            with pytest.raises(StopIteration):
                next(body)
            assert got == want
            assert pump.taken_bytes == want_taken
            for a, b in spans:
                kinds = [what for what, _ in described[a:b]]
                taken = [item for items in per_event[a:b] for item in items]
                if len(set(kinds)) == 1 and kinds[0] in "ta":
                    if sum(len(v) + 16 for _, v in described[a:b]) > limit:
                        seen["cut"] += 1
                    elif all(item.__class__ is str for item in taken):  # (no marker: _one_run's batch)
                        seen["one run"] += 1
                elif any(x != y and {x, y} == {"t", "a"} for x, y in zip(kinds, kinds[1:])):
                    seen["several runs"] += 1
            joined = b"".join(got)
            seen["escaped"] += runs and b"\x1be" in joined and b"\x1bn" in joined and b"\x1br" in joined
            seen["surrogate"] += b'\\ud83d' in joined or b'\\udc00' in joined
            seen["error"] += joined.endswith(_ERROR)
            seen["frame"] += b'"content_items"' in joined
    assert all(count >= 10 for count in seen.values()), seen


def test_a_batch_of_one_run_is_one_frame_in_c(monkeypatch):
    """``_one_run`` (a batch that is all plain str pieces of the kind the last marker said, joined in C): the
    documented frame of the pieces and the size the pump counted, for pieces with ESC, LF, CR, empty ones,
    non-ASCII and lone surrogates, both kinds; a batch holding a marker, a frame, the end or an error, or one over
    MAX_BATCH_BYTES: None (the writer then goes item by item)."""
    import random

    rng = random.Random(414)
    alphabet = [ESC, "s", "n", "\n", "\r", "\u00e9", "\U0001f600", '"', "\\", "x" * 7, ""]
    arguments = ARGS
    for _ in range(500):
        pieces = ["".join(rng.choice(alphabet) for _ in range(rng.randrange(5))) for _ in range(rng.randrange(1, 9))]
        if rng.random() < 0.1:
            pieces[rng.randrange(len(pieces))] += "\ud83d"  # no UTF-8 carries it: the items frame instead
        for kind, mode in (("t", server_module._TEXT_PIECES), ("a", arguments)):
            want = _wire_frame([(kind, piece) for piece in pieces], True)
            assert server_module._one_run(list(pieces), mode) == (want, sum(len(p) + 16 for p in pieces))
        assert server_module._one_run(list(pieces)) == server_module._one_run(pieces, server_module._TEXT_PIECES)
    frame = b'data: {"k":1}\n\n'
    for mixed in ([arguments, "b"], ["a", arguments, "b"], ["a", server_module._TEXT_PIECES, "b"], ["a", frame],
                  [frame, "a"], ["a", server_module._END], ["a", ValueError("boom")], [frame, frame]):
        assert server_module._one_run(mixed) is None and server_module._one_run(mixed, arguments) is None
    monkeypatch.setattr(server_module, "MAX_BATCH_BYTES", 40)
    assert server_module._one_run(["x" * 4, "y" * 4]) == (b"data: ~txxxx\x1bsyyyy\n\n", 40)  # (at the limit)
    assert server_module._one_run(["x" * 4, "y" * 4], arguments) == (b"data: ~axxxx\x1bsyyyy\n\n", 40)
    assert server_module._one_run(["x" * 4, "y" * 5]) is None  # over it: cut where the loop cuts
    assert server_module._one_run(["x" * 25], arguments) is None


def test_the_queue_hands_over_everything_in_order_across_threads():
    """``_Queue``: a writer waiting wakes at the put that finds it waiting; ``take`` returns what queued, in order,
    each item once, while the other thread keeps putting; ``wait`` says False when nothing came in time."""
    import threading

    hand_off = server_module._Queue()
    assert hand_off.wait(0.01) is False and not hand_off.waiting
    total = 20000
    done = threading.Event()

    def pump():
        for n in range(total):
            hand_off.put(n)
        done.set()

    taken = []
    thread = threading.Thread(target=pump)
    thread.start()
    try:
        while len(taken) < total:
            assert hand_off.wait(30), "a put did not wake the writer"
            taken.extend(hand_off.take())
    finally:
        thread.join(30)
    assert taken == list(range(total)) and hand_off.take() == [] and done.is_set()
    hand_off.put("a")
    hand_off.put("b")
    assert (hand_off.qsize(), hand_off.empty(), hand_off.get(), hand_off.get(timeout=1)) == (2, False, "a", "b")
    with pytest.raises(queue.Empty):
        hand_off.get(timeout=0.01)


def test_the_writer_writes_at_most_once_per_gather_seconds_whatever_the_pump_does(monkeypatch):
    """Issue 41 item 4: the writer writes at most once per GATHER_SECONDS, also when the pieces come one at a time
    (before, a write that carried one piece let the next one go out at once: a write, and a wake of the writer
    and of the client, per piece).  A pump that puts a piece after a pause longer than GATHER_SECONDS, then
    another a millisecond later, and so on, and a burst at the end: each write is at least GATHER_SECONDS after the
    one before it (a sleep never ends early; the load can only make the gaps longer), every piece arrives, in
    order, as runs frames."""
    import time

    monkeypatch.setattr(server_module, "GATHER_SECONDS", 0.02)
    pump = _Pump()
    pieces = ["p{}\n".format(n) for n in range(60)]

    def put():
        for n, piece in enumerate(pieces):
            if n < 20:  # pairs: the first after a pause (written at once), the second 1 ms after it
                time.sleep(0.05 if n % 2 == 0 else 0.001)
            elif n < 40:
                time.sleep(0.001)
            pump.queue.put(piece)
        pump.queue.put(server_module._END)

    thread = threading.Thread(target=put)
    body = server_module._Body(_App(), pump, b"data: {}\n\n")
    writes = []
    thread.start()
    try:
        for frame in body:
            writes.append((time.monotonic(), frame))
    finally:
        thread.join(30)
    gaps = [b[0] - a[0] for a, b in zip(writes, writes[1:])]
    assert gaps and min(gaps) >= 0.02 * 0.9, gaps
    assert len(writes) <= 1 + (writes[-1][0] - writes[0][0]) / (0.02 * 0.9)
    frames = [frame for _, frame in writes]
    assert frames[-1].endswith(b"data: [DONE]\n\n")
    got = []
    for frame in frames:
        for line in frame.split(b"\n\n"):
            if line.startswith(b"data: ~t"):
                got.extend(line[8:].decode().replace("\x1bn", "\n").split("\x1bs"))
    assert got == pieces


class _GatedUpstream(Upstream):
    """Sends the stream's head and first text piece, then nothing until ``gate`` is set (at most 60 s), then the
    rest; ``released`` is set once the rest is on its way."""

    def __init__(self, first, rest):
        Upstream.__init__(self)
        self.first = first
        self.rest = rest
        self.gate = threading.Event()
        self.released = threading.Event()

    def respond(self, handler, raw):
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()
        try:
            handler.wfile.write(b"%x\r\n%s\r\n" % (len(self.first), self.first))
            handler.wfile.flush()
            self.gate.wait(60)
            self.released.set()
            handler.wfile.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(self.rest), self.rest))
            handler.wfile.flush()
        except OSError:
            handler.close_connection = True


@pytest.mark.parametrize("wire", ["runs", "items", None])
def test_a_piece_goes_out_while_the_upstream_sends_nothing_more(wire):
    """The writer's rule: what the pump queued goes out at the latest GATHER_SECONDS after the write before it,
    whatever the upstream does next; a piece is never held for the pieces after it.  The upstream here sends
    the first piece and then waits for the client to have it (the client, seeing it, lets the upstream go on):
    a server that held the piece until more came would make the client see it only after the upstream went on."""
    base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m"}

    def chunk(delta, finish=None):
        return _sse(dict(base, choices=[{"index": 0, "delta": delta, "finish_reason": finish}]))

    first = chunk({"role": "assistant", "content": ""}) + chunk({"content": "Hello"})
    rest = chunk({"content": ", world"}) + chunk({}, "stop") + b"data: [DONE]\n\n"
    with _GatedUpstream(first, rest) as up:
        app = make_app({"models": [{"id": "m", "model": "m", "client_type": "openai-chat", "api_key": "k",
                                    "base_url": up.url + "/v1", "max_retries": 0}]})
        with Builtin(app) as server:
            seen = []
            held = []  # whether the upstream went on before the client had the first piece
            if wire == "runs":
                stream = AutoLLMClient("m", client_type="agenthub", base_url=server.url, max_retries=0)\
                    .streaming_response(MESSAGES)
                for event in stream:
                    texts = [i["text"] for i in event["content_items"] if i["type"] == "text" and i["text"]]
                    if texts and not held:
                        held.append(up.released.is_set())  # (the upstream is still held: False)
                        up.gate.set()
                    seen.extend(texts)
            else:
                headers = {"X-AgentHub-Wire": wire} if wire else {}
                with requests.post(server.url + "/v1/stream", json={"model": "m", "messages": MESSAGES},
                                   headers=headers, stream=True, timeout=90) as answer:
                    for line in answer.iter_lines():
                        if b"Hello" in line and not held:
                            held.append(up.released.is_set())
                            up.gate.set()
                        if line.startswith(b"data: ") and line != b"data: [DONE]":
                            seen.append(line)
            up.gate.set()
    assert held == [False]
    if wire == "runs":
        assert seen == ["Hello", ", world"]
    else:
        assert b"Hello" in seen[1] and b", world" in seen[2] and len(seen) == 4


def test_the_writer_writes_while_the_pump_waits_for_it_in_a_burst(monkeypatch):
    """Issue 41 item 4: in a burst the pump, once the writer's time has come, wakes it and waits (``parked``) until
    the writer is back for more, its write done: the writer never has to win the interpreter lock from a pump
    reading on.  Before, the writer slept GATHER_SECONDS and then waited for the lock, woken for nothing at each
    read the pump made (hundreds of context switches a stream, and a write whose moment the scheduler picked).
    The pump here never blocks, the interpreter switches threads at most once a minute and a park lasts until the
    writer is back (however late a loaded machine runs it): every write but the first and the last (the end, which
    the pump puts without waiting) is made with the pump parked, and the frames are the pieces' runs frames, in
    order."""
    import sys
    import time

    monkeypatch.setattr(server_module, "PARK_SECONDS", 60.0, raising=False)  # (raising=False: fails on its checks)
    monkeypatch.setattr(server_module, "MAX_QUEUED_FRAMES", 10 ** 6)  # (no wait for room, which lets the lock go)

    pieces = ["p{}\n".format(n) for n in range(20000)]
    events = [_delta({"type": "text", "text": piece}) for piece in pieces]

    class Stream(object):
        def __iter__(self):
            # (the first event once the writer waits for it: with threads switched once a minute, a writer that
            # has not started waiting yet would run only after the whole stream was read)
            for _ in range(3000):
                if pump.queue.waiting:
                    break
                time.sleep(0.01)
            return iter(events)

        def close(self):
            pass

        def abort(self):
            pass

    interval = sys.getswitchinterval()
    sys.setswitchinterval(60.0)
    try:
        pump = server_module._Pump(_App(), Stream(), "m", items=True, runs=True)
        pump.start()
        try:
            assert server_module._waited(pump.queue, 30, None, pump)
            body = server_module._Body(_App(), pump, pump.queue.get(False))
            writes = []
            for frame in body:
                writes.append((getattr(pump.queue, "parked", False), frame))
        finally:
            pump.stop()
            pump.thread.join(30)
    finally:
        sys.setswitchinterval(interval)
    assert len(writes) >= 4, len(writes)
    assert [parked for parked, _ in writes[1:-1]] == [True] * (len(writes) - 2)
    assert writes[-1][1].endswith(b"data: [DONE]\n\n")
    got = []
    for _, frame in writes:
        for line in frame.split(b"\n\n"):
            if line.startswith(b"data: ~t"):
                got.extend(line[8:].decode().replace("\x1bn", "\n").split("\x1bs"))
    assert got == pieces
