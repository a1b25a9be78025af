"""client_type ``"agenthub"``: an agenthub server (``agenthub serve``) as a provider.  Pure.

``AutoLLMClient("fast", client_type="agenthub", base_url="http://127.0.0.1:8787",
api_key=<a server key>)``: ``model`` is an id of the server's models table.  The
request is ``POST /v1/stream`` at the server (``agenthub.hosts.keys``) with ``{"model", "messages", "config"}``
(bytes as ``{"__bytes__": "<base64>"}``) and ``X-AgentHub-Wire: runs``; the answer is one
``data: <UniEvent>`` per event, or with the items wire each run of plain deltas as one
``data: [<piece>, ...]`` frame (a string: a text piece; ``["<args>"]``: an argument fragment without
name and id; an object: a content item, checked as any), or with the runs wire each run of text pieces,
and each of argument fragments, as one ``data: ~<t|a><piece>ESC s<piece>...`` frame (the pieces' text
as it is, but for three escapes: see ``_run``), and a call's ``tool_call`` as ``"arguments": null`` when they are its
fragments' text parsed (``toolcalls.read_arguments``, as a call is closed).  The events are the server's own, so the
parser hands their content items to the shared driver as they came and the stop event's usage and
finish reason as the StreamEnd: the driver rebuilds start and stop, and the caller sees
the events a direct client would have produced (``created_at`` aside).

Errors come back as they were raised on the server: an ``event: error`` frame (after
the first event) and a JSON error answer (before it; see ``errors.upstream_error``)
are rebuilt as the same AgentHubError subclass with the same fields.  Retries,
abort and stateful history are the client's own, as for any protocol.
"""

import json
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Tuple

from .._jsondepth import GUARDED as _GUARDED, check as _check_depth, loads as _json_loads
from ..answers import decode_body, error_from_body as _error_from_body
from ..errors import AgentHubError, StreamProtocolError, error_from_json
from ..sse import DEFAULT_MAX_LINE_BYTES, SSEDecoder, SSEEvent
from ..stream import StreamEnd, item_problem, text_is_utf8, with_usage_extras
from ..toolcalls import read_arguments
from ..types import FINISH_REASONS, MAX_DEPTH, USAGE_KEYS, HttpRequest, from_jsonable, paired_halves, too_deep
from ..types import to_jsonable as _jsonable
from ._common import Endpoint, Protocol, documents, get_request, parse_data_list, request_headers, unsupported
from ._common import refuse_mcp_servers

__all__ = ["build_request", "parse_stream", "framing", "STREAM_PATH", "PROTOCOL"]

STREAM_PATH = "/v1/stream"
#: the request header asking the server for the runs wire (docs/serve.md): runs of text pieces and of argument
#: fragments as one frame each, a call's parsed arguments not sent again (``items``: the items wire, older)
WIRE_HEADER = "X-AgentHub-Wire"
WIRE = "runs"


def _restore(value: Any) -> Any:
    """``{"__bytes__": base64}`` back to bytes, as the server wrote them: a payload that is not base64 is a
    ValueError (the driver's StreamProtocolError), never bytes decoded leniently into something else."""
    return from_jsonable(value, strict=True)



def build_request(endpoint: Endpoint, model: str, messages: List[Mapping[str, Any]],
                  config: Mapping[str, Any]) -> HttpRequest:
    refuse_mcp_servers(endpoint.client_type, config)  # (its headers are credentials: never forwarded)
    for key in ("extra_body", "extra_headers"):
        if key in config:  # (as the server refuses them; merged here they would reach the server, not its upstream)
            raise unsupported(endpoint.client_type, key, "is not accepted by an agenthub server: it builds the "
                                                         "upstream request itself (set it in the model's default_config)")
    body_config = {k: v for k, v in config.items() if k != "trace_id"}  # a trace is written here, not there
    body = {"model": model, "messages": _jsonable(list(messages)), "config": _jsonable(body_config)}
    headers = request_headers(endpoint, **{WIRE_HEADER: WIRE})  # (a server that predates it sends whole events)
    return HttpRequest("POST", STREAM_PATH, headers, body, output_limit=("config", "max_tokens"))


def framing(chunks: Iterable[bytes], max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> Iterator[Any]:
    """The frames of an agenthub server's body: each ``data: <JSON>`` block as its data text (the
    frames the server writes: split on blank lines and decoded, no more), comments (keep-alives)
    dropped, and any other block (``event: error``, several lines) as the SSE decoder reads it.  A
    body with CR line endings (not the server's) goes through the SSE decoder whole from there on."""
    decoder = SSEDecoder(max_line_bytes)
    pending = []  # type: List[bytes]  # the pieces of the unfinished block (none holds a b"\n\n")
    size = 0  # their total length
    chunks = iter(chunks)
    for chunk in chunks:
        if b"\r" in chunk:
            for event in decoder.feed(b"".join(pending) + chunk):
                yield event
            for chunk in chunks:
                for event in decoder.feed(chunk):
                    yield event
            for event in decoder.flush():
                yield event
            return
        # only the new piece is searched (and the one byte before it): linear in the event's size
        if pending and chunk[:1] == b"\n" and pending[-1][-1:] == b"\n":
            first = b"".join(pending)[:-1]  # the blank line began at the end of the last read
            blocks = chunk[1:].split(b"\n\n")
        else:
            pos = chunk.find(b"\n\n")
            if pos < 0:
                if chunk:
                    pending.append(chunk)
                    size += len(chunk)
                    if size > max_line_bytes:
                        raise StreamProtocolError("agenthub: an event of more than {} bytes".format(max_line_bytes),
                                                  client="agenthub")
                continue
            if pending:
                pending.append(chunk[:pos])
                first = b"".join(pending)
            else:
                first = chunk[:pos]
            blocks = chunk[pos + 2:].split(b"\n\n")
        blocks.insert(0, first)
        rest = blocks.pop()
        pending = [rest] if rest else []
        size = len(rest)
        if size > max_line_bytes:
            raise StreamProtocolError("agenthub: an event of more than {} bytes".format(max_line_bytes),
                                      client="agenthub")
        for block in blocks:
            if len(block) > max_line_bytes:  # every frame, also one that began and ended inside this read
                raise StreamProtocolError("agenthub: an event of more than {} bytes".format(max_line_bytes),
                                          client="agenthub")
            if block.startswith(b"data: ") and block.find(b"\n", 6) < 0:
                yield block[6:].decode("utf-8")
            elif block.startswith(b":") and block.find(b"\n") < 0:
                continue  # a comment: the server's keep-alive
            elif block:
                for event in decoder.feed(block + b"\n\n"):
                    yield event
    if pending:
        for event in decoder.feed(b"".join(pending)):
            yield event
    for event in decoder.flush():
        yield event


#: a delta event as agenthub.server writes it: a fixed frame around its one content item
_DELTA_HEAD = '{"role":"assistant","event_type":"delta","content_items":['
_DELTA_TAIL = '],"usage_metadata":null,"finish_reason":null,"created_at":'
_HEAD_LEN = len(_DELTA_HEAD)
_scan = json.JSONDecoder().scan_once  # json.loads' own scanner, started at an offset


def parse_stream(events: Iterable[SSEEvent], client: str = "agenthub", tool_id_prefix: Any = None) -> Iterator[Any]:
    loads = _json_loads
    scan = _scan
    check = _check_depth if _GUARDED else None  # (Python < 3.11: see agenthub._jsondepth)
    head, tail, start = _DELTA_HEAD, _DELTA_TAIL, _HEAD_LEN
    call = None  # type: Optional[_Call]  # the call under way: its announcement, its argument text as it came
    for frame in events:
        if frame.__class__ is str:  # a plain data frame (see framing)
            data = frame
            name = "message"
        else:
            data = frame.data
            name = frame.event
        if data[:1] == "~" and name == "message":  # the runs wire: a run of text pieces or argument fragments
            letter, pieces = _run(data, client)
            if letter == "t":
                for piece in pieces:
                    yield {"type": "text", "text": piece}
            else:
                if call is None:
                    raise _malformed(client, "argument fragments for no tool call under way")
                call.fragments.extend(pieces)
                for piece in pieces:
                    yield {"type": "partial_tool_call", "name": "", "arguments": piece, "tool_call_id": ""}
            continue
        if data[:1] == "[" and name == "message" and data != "[DONE]":
            # the items wire: a run of delta events, each one content item (the driver makes the events)
            batch = loads(data)  # (a bad one: ValueError, which the driver reports as a StreamProtocolError)
            if batch.__class__ is not list:
                raise _malformed(client, "an items frame that is not a JSON array")
            if '"__bytes__"' in data:
                batch = _restore(batch)
            for item in batch:
                kind = item.__class__
                if kind is str:  # a text piece
                    yield {"type": "text", "text": item}
                elif kind is list and len(item) == 1 and item[0].__class__ is str:  # an argument fragment
                    if call is None:
                        raise _malformed(client, "an argument fragment for no tool call under way")
                    call.fragments.append(item[0])
                    yield {"type": "partial_tool_call", "name": "", "arguments": item[0], "tool_call_id": ""}
                else:  # any other content item, as it is in an event
                    item, call = _filled(item, call, client)
                    yield _checked(item, client)
            continue
        if data.startswith(head) and name == "message":
            # the common case: only the item is decoded (the rest of the frame is the fixed delta frame;
            # created_at is the driver's to set).  Anything else takes the general path below.
            if check is not None:
                check(data, start)
            try:
                item, end = scan(data, start)
            except (StopIteration, ValueError):
                item, end = None, 0
            if item.__class__ is dict and data.startswith(tail, end) and data.endswith("}"):
                # the two items nearly every delta carries, whole and of the right types, pass as they are
                # (_restore and _checked give the same); any other item is restored and checked
                size = len(item)
                if size == 2:
                    if item.get("type") == "text" and item.get("text").__class__ is str:
                        yield item
                        continue
                elif size == 4 and item.get("type") == "partial_tool_call" and item.get("arguments").__class__ is str \
                        and item.get("name").__class__ is str and item.get("tool_call_id").__class__ is str:
                    if item["name"] or item["tool_call_id"] or call is None:
                        call = _partial(item, call, client)
                    else:
                        call.fragments.append(item["arguments"])
                    yield item
                    continue
                item, call = _filled(_restore(item) if '"__bytes__"' in data else item, call, client)
                yield _checked(item, client)
                continue
        if name == "error":
            try:
                payload = loads(data)  # type: Any
            except ValueError:
                payload = None
            error = error_from_json(payload)
            if error is None:
                raise StreamProtocolError("{}: the server sent an error event that names no agenthub error: {}".format(
                    client, data[:300]), client=client)
            raise error
        if name != "message" or data == "[DONE]":
            if data == "[DONE]":
                return  # [DONE] before the stop event: the driver reports the stream as cut
            continue
        event = loads(data)  # type: Dict[str, Any]
        if '"__bytes__"' in data:
            event = _restore(event)
        items, end = _parts(event, client)
        for item in items:
            item, call = _filled(item, call, client)
            yield _checked(item, client)
        if end is not None:
            if call is not None:
                raise _malformed(client, "a stop event while tool call {!r} was under way".format(call.name))
            yield end
            return


def _run(data: str, client: str) -> Tuple[str, List[str]]:
    """A runs frame ``~<t|a><piece>ESC s<piece>...`` -> (its letter, its pieces with ESC e / ESC n / ESC r read
    back as ESC, LF, CR).  (Every ESC begins a pair, so no separator is found across two.)"""
    letter = data[1:2]
    if letter != "t" and letter != "a":
        raise _malformed(client, "a runs frame of an unknown kind")
    text = data[2:]
    if letter == "a":  # argument fragments (JSON, which seldom holds a raw LF, CR or ESC): no escape, no search for one
        pieces = text.split("\x1bs")
        if "\x1b" not in (text if len(pieces) == 1 else "".join(pieces)):  # (one character: a fast search)
            return letter, pieces
    if "\x1be" in text:  # a piece holds an ESC (rare): each piece is read back by itself
        return letter, [piece.replace("\x1bn", "\n").replace("\x1br", "\r").replace("\x1be", "\x1b")
                        if "\x1b" in piece else piece for piece in text.split("\x1bs")]
    if "\x1bn" in text:  # (LF and CR read back in the whole: no separator comes of it)
        text = text.replace("\x1bn", "\n")
    if "\x1br" in text:
        text = text.replace("\x1br", "\r")
    return letter, text.split("\x1bs")


class _Call(object):
    """The tool call under way in the server's stream: its announcement's name and id, its argument text as it
    came (the fragments)."""

    __slots__ = ("name", "id", "fragments")

    def __init__(self, name: str, call_id: str, arguments: str) -> None:
        self.name = name
        self.id = call_id
        self.fragments = [arguments]


def _partial(item: Mapping[str, Any], call: Optional[_Call], client: str) -> Optional[_Call]:
    """A ``partial_tool_call`` of the server's (its fields of their types) and the call under way -> the call
    under way now.  The server's stream obeys rule 5 (``stream.check_stream``): an announcement (name and id)
    opens a call when none is under way, a fragment (neither) continues the one under way; anything else is
    a StreamProtocolError, never a broken grammar handed on to the caller."""
    if item["name"]:
        if call is not None:
            raise _malformed(client, "tool call {!r} announced while {!r} was under way".format(item["name"],
                                                                                                 call.name))
        if not item["tool_call_id"]:
            raise _malformed(client, "tool call {!r} announced without a tool_call_id".format(item["name"]))
        return _Call(item["name"], item["tool_call_id"], item["arguments"])
    if item["tool_call_id"] or call is None:
        raise _malformed(client, "an argument fragment for no tool call under way" if call is None else
                         "an argument fragment with a tool_call_id but no name")
    call.fragments.append(item["arguments"])
    return call


def _filled(item: Any, call: Optional[_Call], client: str) -> Tuple[Any, Optional[_Call]]:
    """An item of an event or an items frame, and the call under way -> the item (a ``tool_call`` sent with
    ``"arguments": null``: its fragments' text parsed, as a call is closed) and the call under way now (an
    announcement opens it, a fragment adds to it, a complete call ends it; rule 5 kept: ``_partial``; a
    complete call has its announcement's name and id, and its arguments are its fragments' text parsed)."""
    if item.__class__ is not dict:
        return item, call
    kind = item.get("type")
    if kind == "partial_tool_call":
        if item.get("name").__class__ is str and item.get("tool_call_id").__class__ is str \
                and item.get("arguments").__class__ is str:
            return item, _partial(item, call, client)
        return item, call  # (_checked says what is wrong with it)
    if kind != "tool_call":
        return item, call
    if item.get("arguments") is not None:
        _checked(item, client)  # (what is wrong with the item itself is said first)
    if call is None:
        raise _malformed(client, "a tool_call for no call under way")
    if item.get("name") != call.name or item.get("tool_call_id") != call.id:
        raise _malformed(client, "a tool_call whose name or tool_call_id is not its announcement's")
    text = "".join(call.fragments)
    if not text_is_utf8(text):  # a character's two UTF-16 halves in two fragments are that character (toolcalls R6)
        text = paired_halves(text)
    try:
        parsed = read_arguments(text)
    except (ValueError, RecursionError) as exc:
        raise _malformed(client, "a tool_call whose fragments are no arguments ({})".format(str(exc)[:200]))
    if "arguments" in item and item["arguments"] is None:
        item["arguments"] = parsed
    elif parsed != item.get("arguments"):
        raise _malformed(client, "a tool_call whose arguments are not its fragments' text")
    return item, None


def _parts(event: Any, client: str) -> Tuple[List[Any], Optional[StreamEnd]]:
    """One decoded event of the server -> (its content items, not checked yet, the StreamEnd a stop event stands
    for)."""
    kind = event.get("event_type") if type(event) is dict else None
    if kind == "delta":
        items = event.get("content_items")
        if type(items) is not list:
            raise _malformed(client, "a delta event without a content_items list")
        return items, None
    if kind == "stop":
        # the server's driver already judged the turn (an empty one never gets here): replayable
        finish = event.get("finish_reason")
        if finish not in FINISH_REASONS:
            raise _malformed(client, "a stop event whose finish_reason is {!r}".format(finish))
        return [], StreamEnd(_usage(event.get("usage_metadata"), client), finish, True)
    if kind != "start":
        raise StreamProtocolError("{}: unknown event_type {!r} from the server".format(client, kind), client=client)
    return [], None




def _malformed(client: str, what: str) -> StreamProtocolError:
    return StreamProtocolError("{}: the server sent {}".format(client, what), client=client)


def _checked(item: Any, client: str) -> Any:
    """A content item of the server's, checked as the driver's items are built by every other protocol:
    its type known, its fields of their types, tool-call arguments within the one depth rule."""
    problem = item_problem(item)
    if problem is not None:
        raise _malformed(client, "a malformed content item ({})".format(problem))
    if item["type"] == "tool_call" and too_deep(item["arguments"]):
        raise _malformed(client, "tool-call arguments nested deeper than {} levels".format(MAX_DEPTH))
    return item


def _usage(usage: Any, client: str) -> Any:
    """The stop event's usage_metadata: None, or the four buckets, each a non-negative int or None, carrying the
    prompt-cache writes, the image and audio tokens and the service tier the server reported beside them
    (``stream.USAGE_EXTRAS``: ``stream.Usage``)."""
    if usage is None:
        return None
    if type(usage) is not dict or any(
            usage.get(key) is not None and (type(usage.get(key)) is not int or usage[key] < 0) for key in USAGE_KEYS):
        raise _malformed(client, "a stop event whose usage_metadata is not four token counts")
    return with_usage_extras({key: usage.get(key) for key in USAGE_KEYS}, usage)  # (the server's own tier names)


def parse_document(payload: Any, client: str = "agenthub", tool_id_prefix: Any = None) -> Iterator[Any]:
    """A JSON answer of events (a list of them, or one) -> the same parts their stream gives."""
    call = None  # type: Optional[_Call]
    for event in documents(payload):
        items, end = _parts(_restore(event), client)
        for item in items:
            item, call = _filled(item, call, client)
            yield _checked(item, client)
        if end is not None:
            if call is not None:
                raise _malformed(client, "a stop event while tool call {!r} was under way".format(call.name))
            yield end
            return


def models_request(endpoint: Endpoint, page_token: Optional[str] = None) -> HttpRequest:
    """``GET /v1/models`` of the server (its host joins the root): the ids of its models table (one page)."""
    return get_request(endpoint, "/v1/models")


def error_from_body(status: Any, headers: Mapping[str, str], payload: Any, client: str = "agenthub") -> AgentHubError:
    """An error answer of the server: rebuilt as the AgentHubError it was raised as there (else read
    as any server's error answer)."""
    rebuilt = error_from_json(decode_body(status, headers, payload))
    return rebuilt if rebuilt is not None else _error_from_body(status, headers, payload, client)


PROTOCOL = Protocol("agenthub", __name__, build_request, parse_stream, framing=framing, parse_document=parse_document,
                    error_from_body=error_from_body, models_request=models_request, parse_models=parse_data_list)
