"""JSON text nested near the interpreter's recursion limit, refused before the C decoder reads it (Python < 3.11).

``json.loads`` counts each nested array or object against the recursion limit and raises RecursionError past it,
which agenthub reads as "nested too deeply" wherever a peer's or a file's JSON is decoded.  On Python 3.8 and 3.9
that RecursionError leaves the thread "overflowed" until its stack is back 50 frames under the limit (on 3.10, while
the error is being made: a collection its allocation starts is run in that state); any Python code
that runs deep down meanwhile (a garbage collection started by the decoder's allocations runs finalizers and
``gc.callbacks`` at that depth; one of them reaching the limit flags the thread too) lets the decoder go on down,
and 50 frames past the limit the interpreter aborts: "Fatal Python error: Cannot recover from stack overflow", the
whole process gone (SIGABRT), not an exception.  So on those Pythons a text is measured first: one that could bring
the decoder within ``MARGIN`` frames of the limit raises the RecursionError the decoder would have raised (in its
words), without descending.  A decoder that never reaches the limit never flags the thread, and one flagged by a
finalizer meanwhile never goes 50 past it.  3.11 and later keep no such state (the error is raised once more, never
fatal): nothing is measured.  (On 3.8 to 3.10, a text a few levels short of what the decoder read before is now
refused as too deep: the margin.)

The measure is cheap for what is sent in practice: a text with at most ``FLOOR`` opening brackets (or fewer than
the room left under the limit) cannot nest deeper than that (two ``str.count``).  A text with more has its
beginning read first (a broken one stops there), then its brackets outside strings counted in C passes (a 1 MB
listing of 10,000 tool schemas: about 12 ms on 3.8, where json.loads takes 40), and only one that goes past the
room is read again to find where.
"""

import json
import re
import sys
from itertools import accumulate, islice
from typing import Any

__all__ = ["GUARDED", "check", "loads"]

#: True where a decoder that reaches the recursion limit may abort the interpreter (CPython 3.8 to 3.10)
GUARDED = sys.version_info < (3, 11)
#: frames kept free under the limit below the decoder's deepest level (what the count of Python frames misses: a call
#: of an object through C counts one more, about 7 under pytest; the probe's own frames)
MARGIN = 50
#: a text with at most this many opening brackets is not measured (no decoder goes this deep near the limit:
#: a caller this close to it is in trouble already)
FLOOR = 128
#: how many brackets and quotes ``_deepest`` sums at a time
_PART = 8192

#: bytes.translate's deletion table: all but a quote and the four brackets
_NOT_QUOTE_OR_BRACKET = bytes(byte for byte in range(256) if byte not in b'"[]{}')
#: what each byte of that does to the depth (a quote: nothing, all quotes are gone by then)
_STEP = [0] * 256
_STEP[ord("[")] = _STEP[ord("{")] = 1
_STEP[ord("]")] = _STEP[ord("}")] = -1
#: (a string left open, or a quote after a stray backslash, is matched to the text's end, never tried again from
#: each quote within: a text past the decoder's error, which the read of the cut then raises, costs one pass)
_BRACKET_OR_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?|[\[\]{}]', re.DOTALL)
_SPACE = re.compile(r"[ \t\n\r]*")
_OPENING = re.compile(r"[\[{]")
#: json.loads' own reading of one value at an offset (what a probe of a text's beginning runs by default)
_RAW_DECODE = json.JSONDecoder().raw_decode


def check(text: Any, start: int = 0, probe: Any = None) -> None:
    """Raise RecursionError if decoding ``text`` (a str or bytes of JSON) from ``start`` would bring the decoder
    within ``MARGIN`` frames of the recursion limit from here (Python < 3.11; a no-op elsewhere).

    ``probe(prefix, at)`` reads one value of ``prefix`` at ``at`` as the caller's decoder does (json.loads' by
    default).  A text with more opening brackets than the room has its beginning read first, up to the last bracket
    that fits: an error there is the decoder's own (raised as it is: a broken answer costs no measure), a value
    that ends there is all the decoder reads.  Otherwise its depth is measured, and a text that goes past the room
    is read once more up to that bracket: an error before it, or a value that ends before it, is again the
    decoder's; else the decoder's RecursionError is raised, in its words."""
    if not GUARDED or not isinstance(text, (str, bytes, bytearray)) or len(text) - start <= FLOOR:
        return  # (not a text: the decoder's own TypeError)
    if isinstance(text, (bytes, bytearray)):  # (read whole: start is 0)
        if text.count(b"[", start) + text.count(b"{", start) <= FLOOR:
            return
        try:  # (as json.loads reads bytes: UTF-8, -16 or -32 by the first four, a byte order mark dropped)
            text = bytes(text).decode(json.detect_encoding(text), "surrogatepass")
        except UnicodeDecodeError:
            return  # (json.loads raises it before it reads a value)
    if text.startswith("\ufeff", start):
        return  # (a byte order mark in a str: every decoder stops at it, json.loads in its own words)
    opens = text.count("[", start) + text.count("{", start)
    if opens <= FLOOR:
        return
    room = sys.getrecursionlimit() - _stack_depth() - MARGIN
    if opens <= room:
        return
    read = probe or _RAW_DECODE
    # the beginning up to the room-th opening bracket (one inside a string counts too): no read of it goes deeper
    end = next(islice(_OPENING.finditer(text, start), max(room - 1, 0), None)).end()
    if _read_within(read, text, start, end, truncated=True):
        return
    if _deepest(text[start:] if start else text, room) <= room:
        return
    depth = 0  # (past the room: where, the strings skipped, in a pass that stops there)
    for token in _BRACKET_OR_STRING.finditer(text, start):
        bracket = token.group()
        if bracket in "[{":
            depth += 1
            if depth > room:
                cut = token.end()
                kind = "array" if bracket == "[" else "object"
                break
        elif bracket in "]}" and depth:
            depth -= 1
    else:
        return
    if _read_within(read, text, start, cut, truncated=False):
        return
    raise RecursionError("maximum recursion depth exceeded while decoding a JSON {} from a unicode string".format(kind))


def _read_within(read: Any, text: str, start: int, end: int, truncated: bool) -> bool:
    """Read ``text[:end]`` from ``start`` with ``read``: True if a value ends there (the decoder reads no further),
    False if the text runs out first; the decoder's own error before ``end`` is raised.  ``truncated``: ``end``
    may fall inside a string (which then reads as unterminated: the text running out, not an error)."""
    prefix = text[:end]
    try:  # (another ValueError, a parse hook's refusal of a NaN say, is the decoder's own too: it goes up)
        read(prefix, _SPACE.match(prefix, start).end())
    except json.JSONDecodeError as exc:
        if exc.pos < end and not (truncated and exc.msg.startswith("Unterminated string")):
            raise  # (not JSON before the end: the decoder's own error, where it stops)
        return False
    return True


def _deepest(text: str, past: int) -> int:
    """How deep ``text``'s brackets outside strings nest, each step in C: escaped backslashes and quotes dropped,
    all but quotes and brackets dropped (bytes.translate), what lies between a quote and the next dropped, the
    running sum's greatest value.  A stray closing bracket is counted too: the decoder stops at it, and nothing
    after it is read.  The sum is taken ``_PART`` brackets at a time and stops at the first part that goes
    ``past`` (find_json's 64 tries on a megabyte of ``[`` each summed all of it: 4 s on 3.8)."""
    if "\\" in text:
        text = text.replace("\\\\", "").replace('\\"', "")
    compact = text.encode("utf-8", "surrogatepass").translate(None, _NOT_QUOTE_OR_BRACKET)
    step = _STEP.__getitem__
    depth = deepest = 0
    inside = False  # (the part begins inside a string)
    for at in range(0, len(compact), _PART):
        part = compact[at:at + _PART]
        if inside or b'"' in part:
            pieces = part.split(b'"')
            part = b"".join(pieces[1::2] if inside else pieces[0::2])
            inside ^= not len(pieces) % 2  # (an odd number of quotes)
        deepest = max(deepest, max(accumulate(map(step, part), initial=depth)))
        if deepest > past:
            break
        depth += part.count(b"[") + part.count(b"{") - part.count(b"]") - part.count(b"}")
    return deepest


def _checked_loads(text: Any, **kwargs: Any) -> Any:
    """``json.loads(text, **kwargs)``, after ``check``."""
    check(text)
    return json.loads(text, **kwargs)


#: ``json.loads``, measured first where that is needed (``check``)
loads = _checked_loads if GUARDED else json.loads


def _stack_depth() -> int:
    frame = sys._getframe(1)  # type: Any
    depth = 0
    while frame is not None:
        depth += 1
        frame = frame.f_back
    return depth
