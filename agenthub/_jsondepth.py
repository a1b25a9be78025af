"""JSON text nested near the interpreter's recursion limit, refused before the C decoder reads it (Python < 3.11).

``json.loads`` counts each nested array or object against the recursion limit and raises RecursionError past it,
which agenthub reads as "nested too deeply" wherever a peer's or a file's JSON is decoded.  On Python 3.8 to 3.10
that RecursionError leaves the thread "overflowed" until its stack is back 50 frames under the limit; any Python code
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
the room left under the limit) cannot nest deeper than that (two ``str.count``); only a text with more has its
brackets outside strings counted, up to the first one past the room.
"""

import json
import re
import sys
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

_BRACKET_OR_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')
_SPACE = re.compile(r"[ \t\n\r]*")
#: json.loads' own reading of one value at an offset (what a probe of a text's beginning runs by default)
_RAW_DECODE = json.JSONDecoder().raw_decode


def check(text: Any, start: int = 0, probe: Any = None) -> None:
    """Raise RecursionError if decoding ``text`` (a str or bytes of JSON) from ``start`` would bring the decoder
    within ``MARGIN`` frames of the recursion limit from here (Python < 3.11; a no-op elsewhere).

    A text that nests that deep has its beginning, up to the bracket past the room, read first by ``probe``
    (``probe(prefix, at)`` reads one value of ``prefix`` at ``at``, as the caller's decoder does: json.loads'
    by default): an error before that bracket is the one the decoder would have raised (raised as it is), a value
    that ends before it is read by the decoder without going deeper (nothing is raised)."""
    if not GUARDED or len(text) - start <= FLOOR:
        return
    if isinstance(text, (bytes, bytearray)):  # (read whole: start is 0)
        opens = text.count(b"[", start) + text.count(b"{", start)
        if opens <= FLOOR:
            return
        text = bytes(text).decode("utf-8", "replace")
    else:
        opens = text.count("[", start) + text.count("{", start)
        if opens <= FLOOR:
            return
    room = sys.getrecursionlimit() - _stack_depth() - MARGIN
    if opens <= room:
        return
    depth = 0
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
    prefix = text[:cut]
    at = _SPACE.match(prefix, start).end()
    try:  # (another ValueError, a parse hook's refusal of a NaN say, is the decoder's own too: it goes up)
        (probe or _RAW_DECODE)(prefix, at)
    except json.JSONDecodeError as exc:
        if exc.pos < cut:  # (not JSON before the cut: the decoder's own error, where it stops)
            raise
    else:
        return  # (a value that ends before the cut: the decoder stops there)
    raise RecursionError("maximum recursion depth exceeded while decoding a JSON {} from a unicode string".format(kind))


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
