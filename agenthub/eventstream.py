"""AWS event-stream framing (``application/vnd.amazon.eventstream``), pure (no I/O): bytes in, messages out.

Amazon Bedrock answers ``ConverseStream`` in this binary framing instead of SSE.  One message::

    [total length: uint32][headers length: uint32][prelude CRC32: uint32]
    [headers: headers-length bytes][payload][message CRC32: uint32]

All integers are big-endian.  The prelude CRC covers the first 8 bytes; the message CRC covers
everything before it (prelude and prelude CRC included).  Both are CRC32 (``zlib.crc32``), and both
are checked: a mismatch is a StreamProtocolError.  ``total length`` counts the whole message, so a
message is at least 16 bytes.

A header is ``[name length: uint8][name: UTF-8][type: uint8][value]``, the value by type:

====  ==========  ==================================  ===================================
type  name        value on the wire                   value in ``Message.headers``
====  ==========  ==================================  ===================================
0     bool true   nothing                             True
1     bool false  nothing                             False
2     byte        int8                                int
3     short       int16                               int
4     integer     int32                               int
5     long        int64                               int
6     bytes       uint16 length + bytes               bytes
7     string      uint16 length + UTF-8               str
8     timestamp   int64 milliseconds since the epoch  int (``Message.header_types`` says 8)
9     uuid        16 bytes                            bytes (16)
====  ==========  ==================================  ===================================

(These are the values botocore's decoder gives too; the tests check the two agree on the same bytes.)
A header name repeated in one message, an unknown type, a header running past the headers section or
a name or string that is not UTF-8 is a StreamProtocolError.

``EventStreamDecoder.feed(chunk)`` takes bytes as they arrive (a message may be split anywhere, even
inside the prelude) and returns the messages they completed; ``close()`` ends the body and raises
StreamProtocolError when it stopped inside a message.  A message longer than ``max_frame_bytes`` is
refused as soon as its prelude arrives, and so is a headers section longer than 128 KiB or a payload
longer than 24 MiB (AWS's own limits, as botocore's decoder refuses them), so a broken server cannot
make the client buffer without bound; only small headers sections are cached (a bound in bytes).  ``iter_messages(chunks, max_frame_bytes)`` is the same as a lazy generator: the ``framing``
of the Bedrock protocol record.
"""

import struct
import zlib
from typing import Any, Dict, Iterable, Iterator, List, Optional, Tuple

from .errors import StreamProtocolError

__all__ = ["Message", "EventStreamDecoder", "iter_messages", "DEFAULT_MAX_FRAME_BYTES", "PRELUDE_BYTES",
           "CONTENT_TYPE", "parse_headers", "MAX_HEADERS_BYTES", "MAX_PAYLOAD_BYTES"]

CONTENT_TYPE = "application/vnd.amazon.eventstream"
#: AWS's own limits, as botocore's decoder enforces them (botocore/eventstream.py ``_MAX_HEADERS_LENGTH``,
#: ``_MAX_PAYLOAD_LENGTH``): a headers section or a payload longer than this is refused at the prelude
MAX_HEADERS_BYTES = 128 * 1024
MAX_PAYLOAD_BYTES = 24 * 1024 * 1024
#: the largest message accepted by default: the largest one AWS's limits allow
DEFAULT_MAX_FRAME_BYTES = MAX_HEADERS_BYTES + MAX_PAYLOAD_BYTES + 16
#: a message's length less its headers, at most (the payload, the prelude and the message CRC)
_MAX_REST = MAX_PAYLOAD_BYTES + 16
#: total length, headers length, prelude CRC
PRELUDE_BYTES = 12
_MIN_MESSAGE = PRELUDE_BYTES + 4

_crc32 = zlib.crc32
_prelude = struct.Struct(">III").unpack_from
_uint32 = struct.Struct(">I").unpack_from
_uint16 = struct.Struct(">H").unpack_from
#: fixed-size header values: type -> (struct, size)
_FIXED = {2: struct.Struct(">b"), 3: struct.Struct(">h"), 4: struct.Struct(">i"), 5: struct.Struct(">q"),
          8: struct.Struct(">q")}


class Message(object):
    """One decoded event-stream message: ``headers`` (name -> value), ``payload`` (bytes).

    ``header_types`` maps each header name to its wire type (0-9), for the cases where the value
    alone does not tell (a timestamp is an int, a uuid is 16 bytes).
    """

    __slots__ = ("headers", "payload", "header_types")

    def __init__(self, headers: Dict[str, Any], payload: bytes, header_types: Optional[Dict[str, int]] = None) -> None:
        self.headers = headers
        self.payload = payload
        self.header_types = header_types if header_types is not None else {}

    @property
    def message_type(self) -> Optional[str]:
        """``:message-type``: "event", "exception" or "error"."""
        return self.headers.get(":message-type")

    @property
    def event_type(self) -> Optional[str]:
        return self.headers.get(":event-type")

    @property
    def exception_type(self) -> Optional[str]:
        return self.headers.get(":exception-type")

    @property
    def content_type(self) -> Optional[str]:
        return self.headers.get(":content-type")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Message) and (self.headers, self.payload) == (other.headers, other.payload)

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        shown = self.payload if len(self.payload) <= 80 else self.payload[:80] + b"..."
        return "Message(headers={!r}, payload={!r})".format(self.headers, shown)


def _error(message: str) -> StreamProtocolError:
    return StreamProtocolError("event stream: " + message, client="bedrock")


def parse_headers(data: bytes) -> Tuple[Dict[str, Any], Dict[str, int]]:
    """The headers section of one message -> (name -> value, name -> type)."""
    headers = {}  # type: Dict[str, Any]
    types = {}  # type: Dict[str, int]
    end = len(data)
    pos = 0
    while pos < end:
        size = data[pos]
        pos += 1
        if size == 0 or pos + size + 1 > end:
            raise _error("a header name runs past the headers section" if size else "a header with an empty name")
        try:
            name = data[pos:pos + size].decode("utf-8")
        except UnicodeDecodeError:
            raise _error("a header name is not UTF-8") from None
        pos += size
        kind = data[pos]
        pos += 1
        if kind == 0 or kind == 1:
            value = kind == 0  # type: Any
        elif kind in _FIXED:
            fixed = _FIXED[kind]
            if pos + fixed.size > end:
                raise _error("header {!r} runs past the headers section".format(name))
            value = fixed.unpack_from(data, pos)[0]
            pos += fixed.size
        elif kind == 6 or kind == 7:
            if pos + 2 > end:
                raise _error("header {!r} runs past the headers section".format(name))
            length = _uint16(data, pos)[0]
            pos += 2
            if pos + length > end:
                raise _error("header {!r} runs past the headers section".format(name))
            value = bytes(data[pos:pos + length])
            pos += length
            if kind == 7:
                try:
                    value = value.decode("utf-8")
                except UnicodeDecodeError:
                    raise _error("header {!r} is not UTF-8".format(name)) from None
        elif kind == 9:
            if pos + 16 > end:
                raise _error("header {!r} runs past the headers section".format(name))
            value = bytes(data[pos:pos + 16])
            pos += 16
        else:
            raise _error("header {!r} has unknown type {}".format(name, kind))
        if name in headers:
            raise _error("header {!r} appears twice in one message".format(name))
        headers[name] = value
        types[name] = kind
    return headers, types


def _check_prelude(total: int, headers_length: int, crc: int, prelude: Any, max_frame_bytes: int) -> None:
    if _crc32(prelude) & 0xFFFFFFFF != crc:
        raise _error("prelude CRC32 mismatch (corrupt or not an event stream)")
    if total < _MIN_MESSAGE:
        raise _error("message length {} is shorter than a message can be".format(total))
    if total > max_frame_bytes:
        raise _error("message of {} bytes is longer than the limit of {} bytes".format(total, max_frame_bytes))
    if headers_length > total - _MIN_MESSAGE:
        raise _error("headers length {} does not fit in a message of {} bytes".format(headers_length, total))
    if headers_length > MAX_HEADERS_BYTES:
        raise _error("a headers section of {} bytes is longer than AWS's limit of {} bytes".format(
            headers_length, MAX_HEADERS_BYTES))
    if total - headers_length - _MIN_MESSAGE > MAX_PAYLOAD_BYTES:
        raise _error("a payload of {} bytes is longer than AWS's limit of {} bytes".format(
            total - headers_length - _MIN_MESSAGE, MAX_PAYLOAD_BYTES))


#: small headers sections seen lately -> their parse (a stream repeats the same few: event type, content
#: type, message type: about 90 bytes).  Only sections of at most _CACHED_SECTION_BYTES are kept, at most
#: _HEADER_CACHE_SIZE of them, so the cache (shared by every stream of the process) holds at most
#: 256 x 512 bytes of sections and their parses, whatever a server sends.
_HEADER_CACHE = {}  # type: Dict[bytes, Tuple[Dict[str, Any], Dict[str, int]]]
_HEADER_CACHE_SIZE = 256
_CACHED_SECTION_BYTES = 512


def _headers(raw: bytes) -> Tuple[Dict[str, Any], Dict[str, int]]:
    """parse_headers with a small cache; each caller gets dicts of its own."""
    hit = _HEADER_CACHE.get(raw)
    if hit is None:
        hit = parse_headers(raw)
        if len(raw) > _CACHED_SECTION_BYTES:
            return hit
        if len(_HEADER_CACHE) >= _HEADER_CACHE_SIZE:
            _HEADER_CACHE.clear()
        _HEADER_CACHE[raw] = hit
    return dict(hit[0]), dict(hit[1])


def _decode(frame: Any, headers_length: int) -> Message:
    """A whole message whose prelude was checked -> Message (the message CRC checked here)."""
    total = len(frame)
    if _crc32(frame[:total - 4]) & 0xFFFFFFFF != _uint32(frame, total - 4)[0]:
        raise _error("message CRC32 mismatch (corrupt frame)")
    headers, types = _headers(bytes(frame[PRELUDE_BYTES:PRELUDE_BYTES + headers_length]))
    return Message(headers, bytes(frame[PRELUDE_BYTES + headers_length:total - 4]), types)


class EventStreamDecoder(object):
    """Incremental decoder: ``feed(bytes) -> [Message]``; ``close()`` at the end of the body."""

    __slots__ = ("max_frame_bytes", "_buffer", "_need", "_headers_length")

    def __init__(self, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES) -> None:
        self.max_frame_bytes = max_frame_bytes
        self._buffer = bytearray()
        self._need = 0  # the length of the message in the buffer once its prelude was read, else 0
        self._headers_length = 0

    def feed(self, data: bytes) -> List[Message]:
        out = []  # type: List[Message]
        buffer = self._buffer
        if not buffer:
            # the usual case: a chunk holds whole messages; decode them from it without copying
            view = memoryview(data)
            pos = 0
            size = len(data)
            while size - pos >= PRELUDE_BYTES:
                total, headers_length, crc = _prelude(view, pos)
                _check_prelude(total, headers_length, crc, view[pos:pos + 8], self.max_frame_bytes)
                if size - pos < total:
                    self._need, self._headers_length = total, headers_length
                    break
                out.append(_decode(view[pos:pos + total], headers_length))
                pos += total
            if pos < size:
                buffer += view[pos:]
            return out
        buffer += data
        while True:
            if not self._need:
                if len(buffer) < PRELUDE_BYTES:
                    return out
                total, headers_length, crc = _prelude(buffer, 0)
                _check_prelude(total, headers_length, crc, bytes(buffer[:8]), self.max_frame_bytes)
                self._need, self._headers_length = total, headers_length
            total = self._need
            if len(buffer) < total:
                return out
            frame = bytes(buffer[:total])
            del buffer[:total]
            self._need = 0
            out.append(_decode(frame, self._headers_length))
            if not buffer:
                return out

    def close(self) -> None:
        """The body ended: a message left unfinished is a StreamProtocolError."""
        if self._buffer:
            held = len(self._buffer)
            self._buffer = bytearray()
            expected = self._need
            self._need = 0
            if expected:
                raise _error("the body ended inside a message ({} of {} bytes)".format(held, expected))
            raise _error("the body ended inside a message prelude ({} bytes)".format(held))

    @property
    def pending(self) -> int:
        """Bytes held for a message not complete yet."""
        return len(self._buffer)


def iter_messages(chunks: Iterable[bytes], max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES) -> Iterator[Message]:
    """Decode an iterable of byte chunks into Messages, lazily; the end of chunks is the end of the body."""
    decoder = EventStreamDecoder(max_frame_bytes)
    feed = decoder.feed
    buffer = decoder._buffer
    crc32 = _crc32
    for chunk in chunks:
        size = len(chunk)
        if not buffer and size >= _MIN_MESSAGE:
            # the row nearly every chunk takes: exactly one whole message (servers send one per write);
            # the same checks as feed(), in locals
            total, headers_length, crc = _prelude(chunk, 0)
            if total == size and total <= max_frame_bytes and headers_length <= total - _MIN_MESSAGE \
                    and headers_length <= MAX_HEADERS_BYTES and total - headers_length <= _MAX_REST \
                    and crc32(chunk[:8]) & 0xFFFFFFFF == crc:
                if crc32(chunk[:-4]) & 0xFFFFFFFF != _uint32(chunk, size - 4)[0]:
                    raise _error("message CRC32 mismatch (corrupt frame)")
                end = PRELUDE_BYTES + headers_length
                headers, types = _headers(bytes(chunk[PRELUDE_BYTES:end]))
                yield Message(headers, bytes(chunk[end:-4]), types)
                continue
        if chunk:
            for message in feed(chunk):
                yield message
    decoder.close()
