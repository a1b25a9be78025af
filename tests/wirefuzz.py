"""A seeded, deterministic fuzzer over the recorded provider streams (test-only helper).

``cases(seed, count)`` yields ``(protocol, name, kind, chunks, original)``: a recording of
``../shared/wire`` (and agenthub's own under ``agenthub/recordings``) mutated one way, cut into chunks.
``outcome(protocol, chunks)`` reads them the way the client does (``Protocol.read``'s path: framing,
payloads, parser, ``stream.drive``) and says ``("ok", events)`` or ``("error", type name, message)``;
anything else escaping (a KeyError, an OverflowError, ...) propagates for the test to report.

Two families of mutation:

- ``SAME``: the body means the same to any correct SSE reader (other chunking, CRLF or CR line ends,
  a byte order mark, comment keep-alives, extra blank lines, ``data:`` without its space, ``id`` /
  ``retry`` fields): the outcome must equal the original's exactly.
- ``BROKEN``: truncation, dropped / duplicated / reordered events and lines, JSON values changed
  to another type, huge numbers, NaN / Infinity literals, deep nesting, invalid UTF-8 (also split
  across chunks): the outcome is a typed error or a stream ``check_stream`` accepts and ``collect``
  folds.  A truncated body that still completes keeps every byte of the answer's text.
"""

import glob
import json
import os
import random
import re
from typing import Any, Iterator, List, Tuple

from agenthub import AgentHubError
from agenthub.eventstream import PRELUDE_BYTES, iter_messages
from agenthub.providers import protocol as protocol_record
from agenthub.providers._common import data_payloads
from agenthub.sse import DEFAULT_MAX_LINE_BYTES, iter_event_data, iter_events
from agenthub.stream import drive

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
from conftest import WIRE_DIR as WIRE  # noqa: E402  (../shared/wire beside the checkout)
#: folder under wire/ and agenthub/recordings -> the dialect reading it
DIALECTS = {"openai_chat": "openai-chat", "anthropic": "anthropic", "gemini": "gemini",
            "openai_responses": "openai-responses", "bedrock": "bedrock", "agenthub": "agenthub",
            "gemini_interactions": "gemini-interactions"}

SAME = ("split", "bytes", "crlf", "cr", "bom", "comments", "blank_lines", "no_space", "id_retry")
BROKEN = ("truncate", "drop_event", "dup_event", "swap_events", "drop_line", "dup_line", "json_type",
          "json_number", "json_deep", "bad_utf8", "literal", "json_string")


def recordings() -> List[Tuple[str, str, bytes, Any]]:
    """[(folder, name, body, sidecar or None)] of every recording found."""
    out = []
    for folder in DIALECTS:
        for path in sorted(glob.glob(os.path.join(WIRE, folder, "*.sse"))):
            with open(path, "rb") as handle:
                body = handle.read()
            with open(path[:-4] + ".json", encoding="utf-8") as handle:
                sidecar = json.load(handle)
            out.append((folder, os.path.basename(path)[:-4], body, sidecar))
        for path in sorted(glob.glob(os.path.join(ROOT, "agenthub", "recordings", folder, "*.sse"))):
            with open(path, "rb") as handle:
                out.append((folder, "recordings/" + os.path.basename(path)[:-4], handle.read(), None))
        for path in sorted(glob.glob(os.path.join(HERE, "fixtures", folder, "*.sse"))):  # the tests' own
            with open(path, "rb") as handle:
                out.append((folder, "fixtures/" + os.path.basename(path)[:-4], handle.read(), None))
    # an agenthub server relaying each answer that reads whole, on each of its three wires
    for folder, name, body, sidecar in list(out):
        result = outcome(folder, [body])
        if result[0] == "ok":  # (its made-up ids and times fixed: the same bytes on every run)
            events = [dict(event, created_at=1) for event in comparable(result)[1]]
            for wire in ("events", "items", "runs"):
                out.append(("agenthub", "{}/{} ({} wire)".format(folder, name, wire), served(events, wire), sidecar))
    return out


def served(events: List[Any], wire: str) -> bytes:
    """``events`` as ``agenthub serve`` writes them: one ``data: <UniEvent>`` frame each (``events``), or each
    run of text pieces and of argument fragments as one ``data: [...]`` frame (``items``) or one
    ``data: ~t...`` / ``~a...`` frame, a call's tool_call then with ``"arguments": null`` (``runs``)."""
    from agenthub.apps.server import DONE, _dumps, _encode_event, _run_frame, _without_arguments

    out = []  # type: List[bytes]
    run = []  # type: List[str]
    letter = [b""]
    announced = None

    def flush() -> None:
        if run:
            if wire == "runs":
                out.append(_run_frame(letter[0], run))
            else:
                group = run if letter[0] == b"t" else [[piece] for piece in run]
                out.append(b"data: " + _dumps(group).encode("ascii") + b"\n\n")
            del run[:]

    for event in events:
        item = event["content_items"][0] if event["event_type"] == "delta" else {}
        if wire != "events" and len(item) == 2 and item.get("type") == "text":
            kind, piece = b"t", item["text"]
        elif wire != "events" and len(item) == 4 and item.get("type") == "partial_tool_call" and not item["name"]:
            kind, piece = b"a", item["arguments"]
        else:
            flush()
            if wire == "runs" and event["event_type"] == "delta":
                event, announced = _without_arguments(event, announced)
            out.append(_encode_event(event))
            continue
        if kind != letter[0]:
            flush()
            letter[0] = kind
        run.append(piece)
    flush()
    out.append(DONE)
    return b"".join(out)


def outcome(folder: str, chunks: List[bytes], tuples: bool = True) -> Tuple[Any, ...]:
    """Read ``chunks`` as the client does: ("ok", events without created_at) or ("error", type, message).
    ``tuples``: the (event, data) path ``Protocol.read`` takes when the dialect has ``parse_payloads``;
    False: ``parse_stream`` over SSEEvents (both must agree)."""
    record = protocol_record(DIALECTS[folder])
    client = DIALECTS[folder]
    try:
        if folder == "bedrock":
            parts = record.parse_stream(iter_messages(iter(chunks)), client)
        elif folder == "agenthub":
            parts = record.parse_stream(record.framing(iter(chunks), DEFAULT_MAX_LINE_BYTES), client)
        elif tuples and record.parse_payloads is not None:
            parts = record.parse_payloads(data_payloads(iter_event_data(iter(chunks), DEFAULT_MAX_LINE_BYTES)),
                                          client)
        else:
            parts = record.parse_stream(iter_events(iter(chunks)), client)
        events = list(drive(parts, client))
    except AgentHubError as exc:
        return ("error", type(exc).__name__, str(exc))
    return ("ok", events)


def comparable(result: Tuple[Any, ...]) -> Tuple[Any, ...]:
    """An outcome with created_at left out and tool-call ids renamed by order of appearance (a Gemini
    call's id is made up per run), so that two runs over the same answer compare equal."""
    if result[0] != "ok":
        return result[:2] + (re.sub(r"call_[0-9a-f]{12}_", "call_", result[2]),)
    names = {}  # type: dict
    out = []
    for event in result[1]:
        event = {k: v for k, v in event.items() if k != "created_at"}
        items = []
        for item in event["content_items"]:
            if item.get("tool_call_id"):
                item = dict(item, tool_call_id=names.setdefault(item["tool_call_id"], "id{}".format(len(names))))
            items.append(item)
        event["content_items"] = items
        out.append(event)
    return ("ok", out)


# -- cutting into chunks ---------------------------------------------------------------------------

def split(rng: random.Random, body: bytes, most: int = 12) -> List[bytes]:
    if not body:
        return [body]
    points = sorted(set(rng.randrange(0, len(body) + 1) for _ in range(rng.randrange(0, most + 1))))
    return [body[a:b] for a, b in zip([0] + points, points + [len(body)]) if b > a] or [b""]


# -- SSE structure ---------------------------------------------------------------------------------

def lf(body: bytes) -> bytes:
    return body.replace(b"\r\n", b"\n")


def events_of(body: bytes) -> List[bytes]:
    return [part + b"\n\n" for part in lf(body).split(b"\n\n") if part.strip(b"\n")]


def lines_of(body: bytes) -> List[bytes]:
    return lf(body).splitlines(True)


def json_lines(lines: List[bytes]) -> List[int]:
    return [i for i, line in enumerate(lines) if line.startswith(b"data:") and line[5:].strip()[:1] in (b"{", b"[")]


# -- mutations that change nothing ----------------------------------------------------------------

def same(rng: random.Random, kind: str, body: bytes) -> List[bytes]:
    """``body`` transformed so that it means exactly the same (as chunks)."""
    if kind == "bytes":
        at = rng.randrange(0, max(1, len(body) - 64))
        return [body[:at]] + [body[i:i + 1] for i in range(at, min(len(body), at + 64))] + [body[at + 64:]]
    if kind == "split":
        return split(rng, body, 40)
    text = lf(body)
    if kind == "crlf":
        text = text.replace(b"\n", b"\r\n")
    elif kind == "cr":
        text = text.replace(b"\n", b"\r")
    elif kind == "bom":
        text = b"\xef\xbb\xbf" + text
    elif kind in ("comments", "blank_lines", "id_retry"):
        lines = text.splitlines(True)
        out = []
        for line in lines:
            if rng.random() < 0.3:
                if kind == "comments":
                    out.append(rng.choice([b": keep-alive\n", b":\n", b": OPENROUTER PROCESSING\n"]))
                elif kind == "id_retry":
                    out.append(rng.choice([b"id: 7\n", b"retry: 3000\n", b"id\n", b"retry: x\n"]))
                elif line == b"\n":  # between two events only: a blank line ends an event
                    out.append(b"\n")
            out.append(line)
        if kind == "comments" and rng.random() < 0.5:  # (after the last line's end: a body may end without one)
            out.append((b"" if text.endswith(b"\n") else b"\n") + b": trailing keep-alive\n\n")
        text = b"".join(out)
    elif kind == "no_space":
        text = text.replace(b"\ndata: ", b"\ndata:").replace(b"\nevent: ", b"\nevent:")
        if text.startswith(b"data: ") or text.startswith(b"event: "):
            text = text.replace(b": ", b":", 1)
    return split(rng, text)


# -- mutations that break things ------------------------------------------------------------------

_WRONG = [None, "", "x", 0, -1, 1.5, True, False, [], {}, [None], {"": None}, "\ud800", "\x00",
          10 ** 30, -10 ** 30, 2 ** 64, "1e999"]
_NUMBERS = [b"NaN", b"Infinity", b"-Infinity", b"1e999", b"-1e999", b"1" + b"0" * 400, b"-0", b"1e-999",
            b"9" * 5000, b"1.7976931348623157e309", b"18446744073709551616", b"0.5", b"-1"]


def json_paths(doc: Any) -> List[Tuple[Any, ...]]:
    """The path (keys and indexes) of every value in ``doc``, its root ``()`` first."""
    out = []

    def walk(node: Any, path: Tuple[Any, ...]) -> None:
        out.append(path)
        if isinstance(node, dict):
            for key, value in node.items():
                walk(value, path + (key,))
        elif isinstance(node, list):
            for index, value in enumerate(node):
                walk(value, path + (index,))

    walk(doc, ())
    return out


_MARK = "\u0000agenthub-fuzz\u0000"


def _replace_json(rng: random.Random, body: bytes, make: Any, strings: bool = False) -> bytes:
    """One value of one JSON payload replaced: ``make(rng, value)`` -> raw JSON bytes for it (``strings``:
    a string value only)."""
    lines = lines_of(body)
    where = json_lines(lines)
    if not where:
        return body
    i = rng.choice(where)
    try:
        doc = json.loads(lines[i][5:].decode("utf-8"))
    except ValueError:
        return body
    paths = json_paths(doc)[1:]
    if strings:
        paths = [p for p in paths if isinstance(_at(doc, p), str)]
    if not paths:
        return body
    path = rng.choice(paths)
    raw = make(rng, _at(doc, path))
    if not path:
        lines[i] = b"data: " + raw + b"\n"
        return b"".join(lines)
    node = doc
    for step in path[:-1]:
        node = node[step]
    node[path[-1]] = _MARK
    text = json.dumps(doc).encode("utf-8").replace(json.dumps(_MARK).encode("utf-8"), raw, 1)
    lines[i] = b"data: " + text + b"\n"
    return b"".join(lines)


def _at(doc: Any, path: Tuple[Any, ...]) -> Any:
    for step in path:
        doc = doc[step]
    return doc


def _odd_string(rng: random.Random, value: str) -> bytes:
    """``value`` with a lone surrogate, a NUL or a long run of text put somewhere (as JSON escapes)."""
    at = rng.randrange(len(value) + 1)
    odd = rng.choice(["\ud800", "\udfff", "\x00", "\ud83d", "x" * 100000, "\U0001f600"])
    return json.dumps(value[:at] + odd + value[at:]).encode("utf-8")


def _deep(rng: random.Random, value: Any = None) -> bytes:
    depth = rng.choice([50, 200, 990, 3000, 100000])
    opener, closer = rng.choice([(b"[", b"]"), (b'{"a":', b"}")])
    return opener * depth + b"1" + closer * depth


def _edited(rng: random.Random, kind: str, pieces: List[bytes], body: bytes) -> bytes:
    """``pieces`` (events, lines, frames) with one dropped, repeated or swapped with another, joined."""
    if not pieces:
        return body
    i = rng.randrange(len(pieces))
    if kind.startswith("drop"):
        del pieces[i]
    elif kind.startswith("dup"):
        pieces.insert(i, pieces[i])
    else:
        j = rng.randrange(len(pieces))
        pieces[i], pieces[j] = pieces[j], pieces[i]
    return b"".join(pieces)


def broken(rng: random.Random, kind: str, body: bytes) -> bytes:
    if kind == "truncate":
        return body[:rng.randrange(0, len(body) + 1)]
    if kind in ("drop_event", "dup_event", "swap_events"):
        return _edited(rng, kind, events_of(body), body)
    if kind in ("drop_line", "dup_line"):
        return _edited(rng, kind, lines_of(body), body)
    if kind == "json_type":
        return _replace_json(rng, body, lambda r, v: json.dumps(r.choice(_WRONG)).encode("utf-8"))
    if kind == "json_number":
        return _replace_json(rng, body, lambda r, v: r.choice(_NUMBERS))
    if kind == "json_string":
        return _replace_json(rng, body, _odd_string, strings=True)
    if kind == "json_deep":
        return _replace_json(rng, body, _deep)
    if kind == "bad_utf8":
        at = rng.randrange(0, len(body) + 1)
        return body[:at] + rng.choice([b"\xff", b"\xc3", b"\xe2\x82", b"\xed\xa0\x80", b"\xc0\xaf", b"\xf4\x90\x80\x80"]) \
            + body[at:]
    if kind == "literal":  # a JSON-ish token where a value was
        lines = lines_of(body)
        where = json_lines(lines)
        if not where:
            return body
        i = rng.choice(where)
        line = lines[i]
        colons = [k for k in range(len(line)) if line[k:k + 2] == b'":']
        if not colons:
            return body
        at = rng.choice(colons) + 2
        lines[i] = line[:at] + rng.choice(_NUMBERS + [b"null", b'"\\ud800"', b'"\\u0000"']) + b"," + line[at:]
        return b"".join(lines)
    raise AssertionError(kind)


# -- bedrock: binary frames -------------------------------------------------------------------------

def frames_of(body: bytes) -> List[bytes]:
    out = []
    pos = 0
    while pos + PRELUDE_BYTES <= len(body):
        total = int.from_bytes(body[pos:pos + 4], "big")
        out.append(body[pos:pos + total])
        pos += total
    return out


def frame(headers: bytes, payload: bytes) -> bytes:
    """An event-stream message with correct CRCs."""
    import struct
    import zlib

    total = PRELUDE_BYTES + len(headers) + len(payload) + 4
    prelude = struct.pack(">II", total, len(headers))
    prelude += struct.pack(">I", zlib.crc32(prelude) & 0xFFFFFFFF)
    message = prelude + headers + payload
    return message + struct.pack(">I", zlib.crc32(message) & 0xFFFFFFFF)


def bedrock_broken(rng: random.Random, kind: str, body: bytes) -> bytes:
    """The bedrock body mutated: frames dropped / repeated / swapped, or one payload's JSON changed
    (the frame rebuilt with correct CRCs, so the change reaches the parser)."""
    frames = frames_of(body)
    if kind == "truncate":
        return body[:rng.randrange(0, len(body) + 1)]
    if kind in ("drop_event", "dup_event", "swap_events", "drop_line", "dup_line"):
        return _edited(rng, kind, frames, body)
    i = rng.randrange(len(frames))
    message = frames[i]
    headers_length = int.from_bytes(message[4:8], "big")
    headers = message[PRELUDE_BYTES:PRELUDE_BYTES + headers_length]
    payload = message[PRELUDE_BYTES + headers_length:-4]
    fake = b"data: " + payload + b"\n"
    if kind == "bad_utf8":
        at = rng.randrange(0, len(payload) + 1)
        payload = payload[:at] + b"\xff" + payload[at:]
    elif kind in ("json_type", "json_number", "json_deep", "literal", "json_string"):
        changed = broken(rng, kind, fake)
        payload = changed[6:].rstrip(b"\n") if changed.startswith(b"data: ") else payload
    frames[i] = frame(headers, payload)
    return b"".join(frames)


def cases(seed: int, count: int) -> Iterator[Tuple[str, str, str, List[bytes], bytes, Any]]:
    """``count`` cases: (folder, name, kind, chunks, original body, sidecar)."""
    rng = random.Random(seed)
    streams = recordings()
    folders = sorted(set(stream[0] for stream in streams))
    for _ in range(count):
        folder = rng.choice(folders)  # (each protocol as often: the relayed bodies outnumber the others)
        folder, name, body, sidecar = rng.choice([stream for stream in streams if stream[0] == folder])
        if folder == "bedrock":
            kind = rng.choice(("split", "bytes") + BROKEN)
            if kind in SAME:
                yield folder, name, kind, same(rng, kind, body), body, sidecar
            else:
                yield folder, name, kind, split(rng, bedrock_broken(rng, kind, body)), body, sidecar
            continue
        kind = rng.choice(SAME + BROKEN)
        if kind in SAME:
            yield folder, name, kind, same(rng, kind, body), body, sidecar
        else:
            yield folder, name, kind, split(rng, broken(rng, kind, body)), body, sidecar


# -- what an answer that passed becomes next ------------------------------------------------------

_MODELS = {"openai_chat": ("openai-chat", "gpt-4o", "https://api.openai.com/v1"),
           "anthropic": ("anthropic", "claude-sonnet-4-6", "https://api.anthropic.com"),
           "gemini": ("gemini", "gemini-2.5-pro", "https://generativelanguage.googleapis.com"),
           "openai_responses": ("openai-responses", "gpt-5.5", "https://api.openai.com/v1"),
           "bedrock": ("bedrock", "anthropic.claude-sonnet-4-6-v1:0", "https://bedrock-runtime.us-east-1.amazonaws.com"),
           "agenthub": ("agenthub", "fast", "http://127.0.0.1:9"),
           "gemini_interactions": ("gemini-interactions", "gemini-3-pro", "https://generativelanguage.googleapis.com")}


def next_request(folder: str, message: Any) -> Any:
    """The body of the request that sends ``message`` (a collected turn) back, with its tool calls
    answered, on its own wire: (bytes or None, the AgentHubError raised instead).  Strict JSON only."""
    from agenthub.providers._common import Endpoint

    client_type, model, base_url = _MODELS[folder]
    record = protocol_record(client_type)
    results = [{"type": "tool_result", "text": "ok", "tool_call_id": item["tool_call_id"]}
               for item in message["content_items"] if item["type"] == "tool_call"]
    messages = [{"role": "user", "content_items": [{"type": "text", "text": "hi"}]}, message,
                {"role": "user", "content_items": results or [{"type": "text", "text": "and?"}]}]
    from agenthub.validate import check_messages

    try:
        check_messages(messages)
        plan = record.build_request(Endpoint(client_type, base_url, "k"), model, messages, {})
        data = plan.content()
    except AgentHubError as exc:
        return None, exc
    json.loads(data, parse_constant=_refuse)  # what no server reads: NaN, Infinity
    return data, None


def _refuse(name: str) -> Any:
    raise AssertionError("the next request carries {}".format(name))
