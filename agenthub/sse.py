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
  ``id`` and ``retry`` are kept.  A blank line dispatches the event if it has
  data; an event with no data line is dropped (as browsers do).
- A single line longer than ``max_line_bytes`` is a StreamProtocolError: a
  broken server must not make the client buffer without bound.
"""

import re
from typing import List, Optional

from .errors import StreamProtocolError

__all__ = ["SSEEvent", "SSEDecoder", "iter_events", "DEFAULT_MAX_LINE_BYTES"]

#: Lines longer than this are refused (a 1 MB tool-call argument fits in one line many times over).
DEFAULT_MAX_LINE_BYTES = 64 * 1024 * 1024

_NEWLINES = re.compile(b"\r\n|\r|\n")


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
    """Incremental SSE decoder: ``feed(bytes) -> [SSEEvent]``, ``flush() -> [SSEEvent]``."""

    def __init__(self, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> None:
        self.max_line_bytes = max_line_bytes
        self._pending = []  # type: List[bytes]  # pieces of the current unfinished line
        self._pending_len = 0
        self._skip_lf = False  # the previous chunk ended in CR: a leading LF belongs to it
        self._data = []  # type: List[str]
        self._event = ""
        self._id = None  # type: Optional[str]
        self._last_id = None  # type: Optional[str]
        self._retry = None  # type: Optional[int]

    # -- framing ---------------------------------------------------------------------------
    def feed(self, chunk: bytes) -> List[SSEEvent]:
        if not chunk:
            return []
        if self._skip_lf:
            self._skip_lf = False
            if chunk[:1] == b"\n":
                chunk = chunk[1:]
                if not chunk:
                    return []
        if b"\n" not in chunk and b"\r" not in chunk:
            self._pending.append(chunk)
            self._pending_len += len(chunk)
            if self._pending_len > self.max_line_bytes:
                raise StreamProtocolError("an SSE line exceeds {} bytes".format(self.max_line_bytes))
            return []
        if self._pending:
            self._pending.append(chunk)
            chunk = b"".join(self._pending)
            self._pending = []
            self._pending_len = 0
        if b"\r" in chunk:
            lines = _NEWLINES.split(chunk)
            self._skip_lf = chunk[-1:] == b"\r"
        else:
            lines = chunk.split(b"\n")
        tail = lines.pop()
        if tail:
            if len(tail) > self.max_line_bytes:
                raise StreamProtocolError("an SSE line exceeds {} bytes".format(self.max_line_bytes))
            self._pending.append(tail)
            self._pending_len = len(tail)
        events = []  # type: List[SSEEvent]
        line_limit = self.max_line_bytes
        for line in lines:
            if len(line) > line_limit:
                raise StreamProtocolError("an SSE line exceeds {} bytes".format(line_limit))
            event = self._line(line)
            if event is not None:
                events.append(event)
        return events

    def flush(self) -> List[SSEEvent]:
        """End of body: the unfinished line is taken as complete, and a pending event is dispatched."""
        events = []  # type: List[SSEEvent]
        if self._pending:
            line = b"".join(self._pending)
            self._pending = []
            self._pending_len = 0
            event = self._line(line)
            if event is not None:
                events.append(event)
        event = self._line(b"")
        if event is not None:
            events.append(event)
        return events

    # -- interpretation --------------------------------------------------------------------
    def _line(self, raw: bytes) -> Optional[SSEEvent]:
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
        name, colon, value = line.partition(":")
        if colon and value[:1] == " ":
            value = value[1:]
        if name == "event":
            self._event = value
        elif name == "data":  # pragma: no cover - handled by the hot path above
            self._data.append(value)
        elif name == "id":
            if "\x00" not in value:
                self._last_id = value
        elif name == "retry":
            if value.isdigit():
                self._retry = int(value)
        return None

    def _dispatch(self) -> Optional[SSEEvent]:
        data = self._data
        event_name = self._event
        self._event = ""
        if not data:
            return None
        self._data = []
        retry = self._retry
        self._retry = None
        return SSEEvent(data[0] if len(data) == 1 else "\n".join(data), event_name or "message", self._last_id, retry)


def iter_events(chunks, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES):
    """Decode an iterable of byte chunks into SSEEvents, lazily; the end of chunks is the end of the body."""
    decoder = SSEDecoder(max_line_bytes)
    feed = decoder.feed
    for chunk in chunks:
        events = feed(chunk)
        if events:
            yield from events
    yield from decoder.flush()
