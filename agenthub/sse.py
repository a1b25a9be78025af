"""Server-sent events framing, pure (no I/O): bytes in, events out.

``SSEDecoder.feed(chunk)`` takes the bytes as they arrive and returns the events
completed by them; ``flush()`` ends the body and returns what is left (a final
event not followed by a blank line is still dispatched).

Rules (WHATWG "event stream interpretation", plus what real servers do):

- Lines end with LF, CR or CRLF, also when a CRLF is split across two chunks.
  Lines are framed on bytes and each complete line is decoded as UTF-8, so a
  multi-byte character split across chunks stays intact; invalid UTF-8 is a
  StreamProtocolError.
- ``field:value`` with one optional space after the colon (``data:x`` and
  ``data: x`` are the same); a line without a colon is a field with an empty
  value; lines starting with ``:`` are comments (heartbeats) and are ignored.
- ``data`` lines accumulate, joined by LF; ``event`` names the event;
  ``id`` and ``retry`` are kept (a ``retry`` that is not ASCII digits, or longer
  than 10 digits, is ignored, as WHATWG says).  A blank line dispatches the event if it has
  data; an event with no data line is dropped (as browsers do).
- A UTF-8 byte order mark opening the body is dropped.
- A single line longer than ``max_line_bytes`` is a StreamProtocolError, and so is
  an event whose data lines add up to more (the LFs joining them included: endless
  empty ``data:`` lines are bounded too; each line measured once, however many
  reads the event spans): a broken server must not make the client buffer without
  bound.
"""

import json
from itertools import islice
from time import monotonic
from typing import Any, Iterable, Iterator, List, Optional, Tuple

from ._jsondepth import GUARDED as _GUARDED, check as _check_depth
from .errors import StreamProtocolError, TransportError

__all__ = ["SSEEvent", "SSEDecoder", "iter_events", "iter_event_data", "json_loads", "scan_once",
           "DEFAULT_MAX_LINE_BYTES"]

#: a ``retry`` field of more digits than this (more than ~115 days in milliseconds) is ignored
_MAX_RETRY_DIGITS = 10
#: no unfinished line held before a chunk (SSEDecoder._lines' head)
_NONE = []  # type: List[bytes]
#: no event data measured yet (SSEDecoder._sized)
_UNSIZED = (None, 0, 0)  # type: Tuple[Any, int, int]
#: Lines longer than this are refused (a 1 MB tool-call argument fits in one line many times over).
DEFAULT_MAX_LINE_BYTES = 64 * 1024 * 1024


class SSEEvent(object):
    """One dispatched server-sent event."""

    __slots__ = ("event", "data", "id", "retry")

    def __init__(self, data: str, event: str = "message", id: Optional[str] = None, retry: Optional[int] = None):
        self.data = data
        self.event = event
        self.id = id
        self.retry = retry

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SSEEvent) and (self.event, self.data, self.id, self.retry) == (
            other.event,
            other.data,
            other.id,
            other.retry,
        )

    def __repr__(self) -> str:
        return "SSEEvent(event={!r}, data={!r}, id={!r}, retry={!r})".format(self.event, self.data, self.id, self.retry)


class SSEDecoder(object):
    """Incremental SSE decoder: ``feed(bytes) -> [SSEEvent]``, ``flush() -> [SSEEvent]``.

    ``pairs``: each event is dispatched as an ``(event name, data)`` tuple instead of an SSEEvent
    (the same framing; ``id`` and ``retry`` are still interpreted, only not handed out), for a
    reader that needs neither: a tuple costs a fraction of an object built per event."""

    def __init__(self, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES, pairs: bool = False) -> None:
        self.max_line_bytes = max_line_bytes
        self._pairs = pairs
        self._pending = []  # type: List[bytes]  # pieces of the current unfinished line
        self._pending_len = 0
        self._skip_lf = False  # the previous chunk ended in CR: a leading LF belongs to it
        self._fresh = True  # nothing fed yet: a byte order mark may come first
        self._head = b""  # the body's first bytes while they may still be a byte order mark cut short
        self._data = []  # type: List[str]
        self._sized = _UNSIZED  # type: Tuple[Any, int, int]  # (_check_event_size)
        self._event = ""
        self._last_id = None  # type: Optional[str]
        self._retry = None  # type: Optional[int]

    # -- framing ---------------------------------------------------------------------------
    def feed(self, chunk: bytes) -> List[Any]:
        if not chunk:
            return []
        if self._fresh:
            chunk = self._start(chunk)
            if not chunk:
                return []
        if not (self._pending or self._data or self._skip_lf) and len(chunk) <= self.max_line_bytes:
            event = self._one_event(chunk)
            if event is not None:
                return [event]
        return self._feed(chunk)

    def _feed(self, chunk: bytes) -> List[Any]:
        """feed() for any chunk (not empty): framing on bytes, then the lines one by one."""
        if self._skip_lf:
            self._skip_lf = False
            if chunk[:1] == b"\n":
                chunk = chunk[1:]
                if not chunk:
                    return []
        # (``10 in chunk`` rather than ``b"\n" in chunk``: the bytes needle costs ten times more)
        if 10 not in chunk and 13 not in chunk:
            self._pending.append(chunk)
            self._pending_len += len(chunk)
            if self._pending_len > self.max_line_bytes:
                raise StreamProtocolError("an SSE line exceeds {} bytes".format(self.max_line_bytes))
            return []
        # The unfinished line held from before joins the chunk's first line only (_lines: its pieces and
        # its end joined in one copy): a chunk is never copied whole (a 64 KiB copy per piece of a burst cost
        # more than framing the piece: the copies are fresh memory the allocator keeps handing back to the system)
        head = self._pending
        head_len = self._pending_len
        if head:
            self._pending = []
            self._pending_len = 0
        events = []  # type: List[Any]
        # (CRLF bodies, Gemini's, stay with _lines: splitting them at their blank lines, or framing them
        # on LF first, scans their long lines more often than splitlines does, and costs more.  The CR
        # test comes first: memchr stops at the first line end, a search for LF LF would scan it all.)
        if 13 not in chunk and head_len + len(chunk) <= self.max_line_bytes:
            first = chunk.find(b"\n\n")
            if first >= 0 and chunk.find(b"\n\n", first + 2) >= 0:
                self._burst(head, head_len, chunk, events)
                return events
        self._lines(head, head_len, chunk, events)
        return events

    def _burst(self, head: List[bytes], head_len: int, chunk: bytes, events: List[Any]) -> None:
        """``_lines`` for a chunk of many events (a burst: a whole answer in one write), with no CR and
        within the line limit: split at the blank lines, each event of the two shapes servers send
        (``data: <payload>``, ``event: <name>`` then ``data: <payload>``) taken whole; anything else, and
        the chunk's first and last event (which may continue or leave an event unfinished), go through
        ``_lines``.  The same events, state and errors as ``_lines`` over the whole chunk."""
        blocks = chunk.split(b"\n\n")  # at least three: the caller saw two blank-line boundaries
        tail = blocks.pop()
        self._lines(head, head_len, blocks[0] + b"\n\n", events)  # ends with the blank line that dispatches
        pairs = self._pairs
        last_id = self._last_id
        plain = self._retry is None  # (a retry read in an event without data waits for the next event)
        append = events.append
        for block in islice(blocks, 1, None):
            if plain:
                if block.startswith(b"data: "):
                    if 10 not in block:
                        try:
                            data = block[6:].decode("utf-8")
                        except UnicodeDecodeError:
                            pass  # _lines raises the error it always raised
                        else:
                            append(("message", data) if pairs else SSEEvent(data, "message", last_id))
                            continue
                elif block.startswith(b"event: "):
                    name, data_line, data = block.partition(b"\ndata: ")
                    if data_line and 10 not in name and 10 not in data:
                        try:
                            name = name[7:].decode("utf-8") or "message"
                            data = data.decode("utf-8")
                        except UnicodeDecodeError:
                            pass
                        else:
                            append((name, data) if pairs else SSEEvent(data, name, last_id))
                            continue
            self._lines(_NONE, 0, block + b"\n\n", events)
            last_id = self._last_id
            plain = self._retry is None
        self._lines(_NONE, 0, tail, events)

    def _lines(self, head: List[bytes], head_len: int, chunk: bytes, events: List[Any]) -> None:
        """The lines of ``head + chunk`` (``head``: the pieces of the unfinished line held before, ``head_len``
        bytes with no line end in them; given only with a chunk that has one): complete ones interpreted,
        their events appended to ``events``; an unfinished last line is held for the next chunk."""
        if not chunk:
            return
        lines = chunk.splitlines()  # bytes.splitlines splits on exactly LF, CR and CRLF
        line_limit = self.max_line_bytes
        if head:
            head.append(lines[0])
            line = b"".join(head)
            del head[:]  # (the pieces go before the line is decoded)
            if line[:5] == b"data:" and len(line) <= line_limit:
                # the data of a line held over reads (one longer than a read: a whole tool call's arguments)
                # decoded from the joined bytes as they are: a slice of them would be one more copy
                try:
                    self._data.append(str(memoryview(line)[6 if line[5:6] == b" " else 5:], "utf-8"))
                except UnicodeDecodeError as exc:
                    raise StreamProtocolError("the stream is not valid UTF-8: {}".format(exc)) from None
                del lines[0]
                if head_len + len(chunk) > line_limit and len(self._data) > 1:
                    self._check_event_size()  # (as the loop below checks after each line)
            else:
                lines[0] = line
        last = chunk[-1]
        tail = None
        if last == 10:
            pass
        elif last == 13:
            self._skip_lf = True  # a LF starting the next chunk ends this line, not another one
        else:
            tail = lines.pop()  # held once the complete lines before it are read
        if head_len + len(chunk) > line_limit:
            # only then can a line, or an event's data, be too long: each checked in order, as they
            # would be had the chunk come in pieces
            for line in lines:
                if len(line) > line_limit:
                    raise StreamProtocolError("an SSE line exceeds {} bytes".format(line_limit))
                event = self._line(line)
                if event is not None:
                    events.append(event)
                elif len(self._data) > 1:
                    self._check_event_size()
            if tail is not None:
                if len(tail) > line_limit:
                    raise StreamProtocolError("an SSE line exceeds {} bytes".format(line_limit))
                self._pending.append(tail)
                self._pending_len = len(tail)
            return
        if tail is not None:
            self._pending.append(tail)
            self._pending_len = len(tail)
        # _line() inlined for the lines nearly every event has (``data:``, ``event:`` and the
        # blank line that dispatches); the other lines go through _line().
        data = self._data
        pairs = self._pairs
        for raw in lines:
            if not raw:  # the blank line: dispatch
                if data:
                    retry = self._retry
                    if retry is not None:
                        self._retry = None
                    if pairs:
                        events.append((self._event or "message", data[0] if len(data) == 1 else "\n".join(data)))
                    else:
                        events.append(SSEEvent(data[0] if len(data) == 1 else "\n".join(data),
                                               self._event or "message", self._last_id, retry))
                    data = self._data = []
                    self._sized = _UNSIZED  # (the dispatched data is not held by the size check)
                self._event = ""
            elif raw.startswith(b"data: "):
                try:
                    data.append(raw[6:].decode("utf-8"))
                except UnicodeDecodeError as exc:
                    raise StreamProtocolError("the stream is not valid UTF-8: {}".format(exc)) from None
            elif raw.startswith(b"data:"):
                try:
                    data.append(raw[5:].decode("utf-8"))
                except UnicodeDecodeError as exc:
                    raise StreamProtocolError("the stream is not valid UTF-8: {}".format(exc)) from None
            elif raw.startswith(b"event:"):
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise StreamProtocolError("the stream is not valid UTF-8: {}".format(exc)) from None
                self._event = line[7:] if line.startswith("event: ") else line[6:]
            else:
                self._line(raw)
        if len(data) > 1:  # an event spread over many data lines is bounded like a line
            self._check_event_size()

    def _check_event_size(self) -> None:
        """The event's data so far (its lines and the LF joining them: empty data lines count) within the
        limit.  Only the lines added since the last check are measured (``_sized``: the data list measured,
        how many of its lines, their size), so an event spread over many small chunks costs linear time."""
        data = self._data
        sized, counted, size = self._sized
        if sized is not data:
            counted = size = 0
        size += sum(map(len, data[counted:] if counted else data)) + len(data) - counted
        self._sized = (data, len(data), size)
        if size - 1 > self.max_line_bytes:
            raise StreamProtocolError("an SSE event exceeds {} bytes".format(self.max_line_bytes))

    def _one_event(self, chunk: bytes) -> Any:
        """The chunk servers send most: exactly one event, ``[event: <name>]`` then ``data: <payload>``
        then the blank line, framed with LF or (one line, Gemini) CRLF.  -> the event, or None
        (state untouched) for anything else, which the general path takes."""
        end = len(chunk) - 2  # where the final blank line starts, LF-framed
        first = chunk.find(b"\n")
        if 13 in chunk:  # only "data: <payload>\r\n\r\n"
            if first != end - 1 or chunk.find(b"\r") != end - 2 or not chunk.endswith(b"\r\n\r\n") \
                    or not chunk.startswith(b"data: "):
                return None
            name = None
            start = 6
            end -= 2
        elif chunk[-1] != 10 or first < 0:
            return None
        elif first == end:  # "data: <payload>\n\n"
            if not chunk.startswith(b"data: "):
                return None
            name = None
            start = 6
        elif chunk.find(b"\n", first + 1) == end and chunk.startswith(b"event: ") \
                and chunk.startswith(b"data: ", first + 1):  # "event: <name>\ndata: <payload>\n\n"
            name = chunk[7:first]
            start = first + 7
        else:
            return None
        try:
            data = chunk[start:end].decode("utf-8")
            if name is not None:
                self._event = name.decode("utf-8")
        except UnicodeDecodeError:
            return None  # the general path raises the error it always raised
        retry = self._retry
        if retry is not None:
            self._retry = None
        event = (self._event or "message", data) if self._pairs else SSEEvent(data, self._event or "message",
                                                                               self._last_id, retry)
        self._event = ""
        return event

    def _idle(self) -> bool:
        """Nothing held between two events: no unfinished line, data, event name or retry, and the
        body's first bytes seen.  A chunk that is exactly one event then needs only ``_last_id``."""
        return not (self._fresh or self._pending or self._data or self._skip_lf or self._event
                    or self._retry is not None)

    def _start(self, chunk: bytes) -> bytes:
        """The first bytes of the body: a UTF-8 byte order mark is not part of the stream (also when
        the body's first chunks cut it short: those bytes are held until the mark is whole or is not)."""
        head = self._head + chunk if self._head else chunk
        if len(head) < 3 and b"\xef\xbb\xbf".startswith(head):
            self._head = head
            return b""
        self._fresh = False
        self._head = b""
        return head[3:] if head[:3] == b"\xef\xbb\xbf" else head

    def flush(self) -> List[Any]:
        """End of body: the unfinished line is taken as complete, and a pending event is dispatched."""
        events = []  # type: List[Any]
        if self._head:  # the body was only the start of a byte order mark: bytes of the stream after all
            head, self._head, self._fresh = self._head, b"", False
            events.extend(self._feed(head))
        if self._pending:
            line = b"".join(self._pending)
            self._pending = []
            self._pending_len = 0
            try:
                event = self._line(line)
            except StreamProtocolError:
                if not _cut_in_a_character(line):
                    raise
                # the body ended inside a character: cut, as one cut a byte earlier (a background stream resumes it)
                raise StreamProtocolError("the stream ended in the middle of a UTF-8 character (cut off?)",
                                          truncated=True, retryable=True) from None
            if event is not None:
                events.append(event)
        event = self._line(b"")
        if event is not None:
            events.append(event)
        return events

    # -- interpretation --------------------------------------------------------------------
    def _line(self, raw: bytes) -> Any:
        if not raw:
            return self._dispatch()
        if raw[:5] == b"data:":  # the hot path
            value = raw[6:] if raw[5:6] == b" " else raw[5:]
            try:
                self._data.append(value.decode("utf-8"))
            except UnicodeDecodeError as exc:
                raise StreamProtocolError("the stream is not valid UTF-8: {}".format(exc)) from None
            return None
        if raw[:1] == b":":
            return None
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise StreamProtocolError("the stream is not valid UTF-8: {}".format(exc)) from None
        self._field(line)
        return None

    def _field(self, line: str) -> None:
        """A decoded, non-blank line other than the ``data:`` hot path."""
        if line[:1] == ":":
            return
        name, colon, value = line.partition(":")
        if colon and value[:1] == " ":
            value = value[1:]
        if name == "event":
            self._event = value
        elif name == "data":  # a "data" line without a colon
            self._data.append(value)
        elif name == "id":
            if "\x00" not in value:
                self._last_id = value
        elif name == "retry":
            # ASCII digits only (WHATWG); anything else, or a value past any sane reconnection time, is ignored
            if 0 < len(value) <= _MAX_RETRY_DIGITS and value.isascii() and value.isdigit():
                self._retry = int(value)

    def _dispatch(self) -> Any:
        data = self._data
        event_name = self._event
        self._event = ""
        if not data:
            return None
        self._data = []
        self._sized = _UNSIZED
        retry = self._retry
        self._retry = None
        text = data[0] if len(data) == 1 else "\n".join(data)
        if self._pairs:
            return event_name or "message", text
        return SSEEvent(text, event_name or "message", self._last_id, retry)


def _cut_in_a_character(line: bytes) -> bool:
    """Is ``line`` valid UTF-8 but for its last character, whose bytes stop short (a body cut inside it)?"""
    import codecs

    try:
        codecs.getincrementaldecoder("utf-8")().decode(line, final=False)
    except UnicodeDecodeError:
        return False  # invalid bytes, not a character cut short
    return True


def iter_events(chunks: Iterable[bytes], max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
                events_timeout: Optional[float] = None, client: str = "",
                keepalives: Iterable[str] = ()) -> Iterator[SSEEvent]:
    """Decode an iterable of byte chunks into SSEEvents, lazily; the end of chunks is the end of the body.

    ``events_timeout``: seconds the body may go on with reads that complete no event (comments, blank
    lines, keep-alive bytes: what a read timeout takes for liveness) before it is given up with a
    TransportError (``.timeout`` True, retryable, as an idle timeout is).  The clock starts at the first
    such read after an event (or at the body's first read), and is read only on such reads (never for
    an event); a body that goes silent altogether is the read timeout's.  None: no limit.
    ``client``: the name that error is given.  ``keepalives``: the names of events that are keep-alives
    of the wire (Anthropic's ``ping``): they are handed on, but a read that completed only such events
    counts as one that completed none."""
    return _frames(chunks, max_line_bytes, False, events_timeout, client, keepalives)


def iter_event_data(chunks: Iterable[bytes], max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
                    events_timeout: Optional[float] = None, client: str = "",
                    keepalives: Iterable[str] = ()) -> Iterator[Tuple[str, str]]:
    """``iter_events`` as ``(event name, data)`` tuples (``SSEDecoder(pairs=True)``): the same framing, the
    same errors, for a reader that uses neither ``id`` nor ``retry`` (``providers._common.payloads``)."""
    return _frames(chunks, max_line_bytes, True, events_timeout, client, keepalives)


def _no_events_error(seconds: float, client: str = "") -> TransportError:
    """The error that ends a stream that sent no event for ``seconds``, only comments or keep-alives."""
    return TransportError("{}: no SSE event for {}s, only comments or keep-alive bytes (the events timeout: "
                          "Timeout(events=...))".format(client or "agenthub", seconds), client=client,
                          timeout=True, retryable=True)


def _frames(chunks: Iterable[bytes], max_line_bytes: int, pairs: bool,
            events_timeout: Optional[float] = None, client: str = "", keepalives: Iterable[str] = ()) -> Iterator[Any]:
    # keep-alive events matter only to the clock: without one, they are events like any other
    keep = frozenset(keepalives) if events_timeout is not None else frozenset()
    decoder = SSEDecoder(max_line_bytes, pairs)
    feed = decoder.feed
    event_type = SSEEvent
    last_id = None  # type: Optional[str]
    idle = False  # the decoder holds nothing between two events (see _idle): then last_id is all its state
    quiet = None  # type: Optional[float]  # (events_timeout) when the reads began to complete no event
    for chunk in chunks:
        if idle:
            # feed()'s one-event fast path (_one_event), inlined with the decoder's state in locals:
            # this runs once per chunk, and a chunk is one event as servers send them
            size = len(chunk)
            first = chunk.find(b"\n")
            if first == size - 2:  # "data: <payload>\n\n"
                if chunk[-1] == 10 and 13 not in chunk and chunk.startswith(b"data: ") and size <= max_line_bytes:
                    try:
                        data = chunk[6:first].decode("utf-8")
                    except UnicodeDecodeError:
                        pass  # the general path raises the error it always raised
                    else:
                        yield ("message", data) if pairs else event_type(data, "message", last_id, None)
                        quiet = None
                        continue
            elif first == size - 3:  # "data: <payload>\r\n\r\n" (Gemini)
                if chunk.find(b"\r") == first - 1 and chunk.endswith(b"\r\n\r\n") and chunk.startswith(b"data: ") \
                        and size <= max_line_bytes:
                    try:
                        data = chunk[6:first - 1].decode("utf-8")
                    except UnicodeDecodeError:
                        pass
                    else:
                        yield ("message", data) if pairs else event_type(data, "message", last_id, None)
                        quiet = None
                        continue
            elif chunk.find(b"\n", first + 1) == size - 2 and chunk[-1] == 10 and 13 not in chunk \
                    and chunk.startswith(b"event: ") and chunk.startswith(b"data: ", first + 1) \
                    and size <= max_line_bytes:  # "event: <name>\ndata: <payload>\n\n"
                try:
                    data = chunk[first + 7:-2].decode("utf-8")
                    name = chunk[7:first].decode("utf-8") or "message"
                except UnicodeDecodeError:
                    pass
                else:
                    if name in keep:  # a keep-alive: the clock is read (``keep`` is empty without a timeout)
                        if quiet is None:
                            quiet = monotonic()
                        elif monotonic() - quiet > events_timeout:  # type: ignore[operator]
                            raise _no_events_error(events_timeout, client)  # type: ignore[arg-type]
                    else:
                        quiet = None
                    yield (name, data) if pairs else event_type(data, name, last_id, None)
                    continue
        if not chunk:
            continue
        events = feed(chunk)
        idle = decoder._idle()
        last_id = decoder._last_id
        if events and not (keep and all((e[0] if pairs else e.event) in keep for e in events)):
            quiet = None
            yield from events
        elif events_timeout is not None:  # a read that completed no event (or only keep-alives): only here is
            if quiet is None:             # the clock read
                quiet = monotonic()
            elif monotonic() - quiet > events_timeout:
                raise _no_events_error(events_timeout, client)
            if events:
                yield from events
    yield from decoder.flush()


_loads = json.loads
#: the C scanner ``json.loads`` runs (``scan_once(text, 0) -> (value, end)``; StopIteration: no value at 0),
#: shared with ``providers._common.data_payloads``, which inlines ``json_loads``' fast path
scan_once = json.decoder.JSONDecoder().scan_once


def json_loads(text: Any) -> Any:
    """``json.loads(text)``, exactly (same value, same errors), at two thirds of its cost per event.

    ``json.loads`` spends about as long on Python-level checks (a BOM, two whitespace
    regexes, the decoder's method calls) as the C scanner spends on a typical SSE
    payload.  The scanner is called directly; whenever it does not consume the whole
    string at once (leading or trailing whitespace, extra data, an error), the text
    goes to ``json.loads`` itself, so the result or the exception is always its own.
    """
    if _GUARDED:  # (Python < 3.11: no decoder near the recursion limit, see agenthub._jsondepth)
        _check_depth(text)
    if type(text) is str:
        try:
            value, end = scan_once(text, 0)
            if end == len(text):
                return value
        except (StopIteration, ValueError):
            pass
    return _loads(text)
