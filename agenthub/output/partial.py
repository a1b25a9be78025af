"""An incremental JSON reader for typed output streamed as text: feed it the text deltas as they come,
read ``value`` after each: the JSON so far, as plain dicts and lists.

What ``value`` holds (the rule ``client.streaming_parse`` documents):

- an object holds the members whose value is complete (a string once its closing quote came, a number
  once something followed it, ``true``/``false``/``null`` once spelt out); an object or an array being
  written is there as far as it goes, nested to any depth;
- an array holds its complete elements, and the one being written when it is an object or an array;
- text before the JSON (prose, a Markdown fence) is skipped: the value starts at the first ``{`` or ``[``;
- what ``find_json`` would refuse ends the reading: nesting past ``MAX_DEPTH``, a number past a float's range
  (``1e400``), a lone surrogate (``"\\ud800"``), so no value shown is one no JSON, pickle or copy holds.

The work is linear in the text: every character is looked at once (a string is scanned in place, its
pieces kept until it closes), and the value is built in place, never re-parsed.  ``value`` is the same
object as it grows: copy it (``copy.deepcopy``) to keep a snapshot.  What is not JSON (a stray character,
a second document) ends the reading: ``error`` says where, ``value`` keeps what was read; the answer's
full text is still validated at the end (this reader only shows progress).
"""

import json
import math
import re
from typing import Any, List, Optional, Tuple

from .._jsondepth import check as _check_depth
from ..stream import text_is_utf8
from ..types import MAX_DEPTH, too_deep

__all__ = ["PartialJSON", "find_json"]

_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_NUMBERISH = re.compile(r"[-+0-9.eE]+")
_STRING_STOP = re.compile(r'["\\]')
_SPACE = re.compile(r"[ \t\n\r]*")
_LITERALS = {"t": ("true", True), "f": ("false", False), "n": ("null", None)}
_SIMPLE_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_START = re.compile(r"[\[{]")
_HEX = re.compile(r"[0-9a-fA-F]*$")
_HEX4 = re.compile(r"[0-9a-fA-F]{4}$")


def _could_be_escape(tail: str) -> bool:
    """Whether ``tail`` (fewer than 6 characters) may still grow into a ``\\uXXXX`` escape."""
    return tail in ("", "\\") or (tail[:2] == "\\u" and bool(_HEX.match(tail[2:])))

# what a frame waits for
_KEY, _COLON, _VALUE, _COMMA = range(4)


class _Frame(object):
    __slots__ = ("container", "is_object", "state", "key")

    def __init__(self, container: Any, is_object: bool) -> None:
        self.container = container
        self.is_object = is_object
        self.state = _KEY if is_object else _VALUE
        self.key = None  # type: Optional[str]


class PartialJSON(object):
    """``feed(text)`` the deltas; ``value`` is the JSON so far (None before the first ``{`` or ``[``);
    ``done`` once the top-level value closed; ``error`` a message once the text stopped being JSON."""

    __slots__ = ("value", "done", "error", "changes", "_text", "_pos", "_stack", "_started", "_string", "_in_key",
                 "_max_depth", "_seen", "_number")

    def __init__(self, max_depth: int = MAX_DEPTH) -> None:
        self.value = None  # type: Any
        self.done = False
        self.error = None  # type: Optional[str]
        self.changes = 0  # counts what was added to ``value`` (a member, an element, a container)
        self._text = ""
        self._pos = 0
        self._stack = []  # type: List[_Frame]
        self._started = False
        self._string = None  # type: Optional[List[str]]  # the pieces of a string being read
        self._number = None  # type: Optional[List[str]]  # the pieces of a number being read (as a string's)
        self._in_key = False
        self._max_depth = max_depth
        self._seen = 0  # characters consumed before self._text (for error positions)

    def feed(self, text: str) -> Any:
        """Read ``text`` (the next delta); returns ``value``."""
        if self.done or self.error is not None or not text:
            return self.value
        # keep only the unread tail: a token cut by the delta boundary is at most a few characters long
        # (a string's read pieces are kept apart), so this stays linear
        self._seen += self._pos
        self._text = self._text[self._pos:] + text if self._pos < len(self._text) else text
        self._pos = 0
        try:
            self._run()
        except _Stop as stop:
            at = stop.args[1] if len(stop.args) > 1 else self._seen + self._pos
            self.error = "{} at character {}".format(stop.args[0], at)
        return self.value

    # -- the reader --------------------------------------------------------------------------------------
    def _run(self) -> None:
        text = self._text
        if not self._started:
            found = _START.search(text, self._pos)
            if found is None:
                self._pos = len(text)
                return
            self._pos = found.start()
            self._started = True
        while self._pos < len(text) and not self.done:
            if self._string is not None:
                if not self._read_string():
                    return
                continue
            if self._number is not None:
                if not self._read_number():
                    return
                continue
            self._pos = _SPACE.match(text, self._pos).end()
            if self._pos >= len(text):
                return
            if not self._step(text[self._pos]):
                return

    def _step(self, char: str) -> bool:
        """One token at ``self._pos``; False when it needs more text."""
        frame = self._stack[-1] if self._stack else None
        state = frame.state if frame is not None else _VALUE
        if state == _VALUE:
            if char == "]" and frame is not None and not frame.is_object and not frame.container:
                return self._close(frame, "]")
            return self._value(char)
        if state == _KEY:
            if char == "}" and not frame.container and frame.key is None:  # type: ignore[union-attr]
                return self._close(frame, "}")  # type: ignore[arg-type]
            if char != '"':
                raise _Stop("expected a member name")
            self._pos += 1
            self._string = []
            self._in_key = True
            return True
        if state == _COLON:
            if char != ":":
                raise _Stop("expected ':'")
            self._pos += 1
            frame.state = _VALUE  # type: ignore[union-attr]
            return True
        # _COMMA
        if char == ",":
            self._pos += 1
            frame.state = _KEY if frame.is_object else _VALUE  # type: ignore[union-attr]
            return True
        return self._close(frame, "}" if frame.is_object else "]")  # type: ignore[union-attr,arg-type]

    def _close(self, frame: _Frame, closer: str) -> bool:
        if self._text[self._pos] != closer:
            raise _Stop("expected ',' or {!r}".format(closer))
        self._pos += 1
        self._stack.pop()
        self._finished(None, attach=False)
        return True

    def _value(self, char: str) -> bool:
        text = self._text
        if char == "{" or char == "[":
            if len(self._stack) >= self._max_depth:
                raise _Stop("nested deeper than {}".format(self._max_depth))
            container = {} if char == "{" else []  # type: Any
            self._attach(container)
            self._stack.append(_Frame(container, char == "{"))
            self._pos += 1
            return True
        if char == '"':
            self._pos += 1
            self._string = []
            self._in_key = False
            return True
        literal = _LITERALS.get(char)
        if literal is not None:
            word, value = literal
            piece = text[self._pos:self._pos + len(word)]
            if len(piece) < len(word):
                if not word.startswith(piece):
                    raise _Stop("not JSON")
                return False
            if piece != word:
                raise _Stop("not JSON")
            self._pos += len(word)
            self._finished(value)
            return True
        run = _NUMBERISH.match(text, self._pos)
        if run is None or run.end() == self._pos:
            raise _Stop("not JSON")
        self._number = []
        return self._read_number()

    def _read_number(self) -> bool:
        """A number complete only once something follows it: its pieces are kept until then (a long one,
        0.333... to the output limit, stays linear)."""
        text = self._text
        pieces = self._number
        assert pieces is not None
        run = _NUMBERISH.match(text, self._pos)
        end = run.end() if run is not None else self._pos
        pieces.append(text[self._pos:end])
        self._pos = end
        if end >= len(text):
            return False
        token = "".join(pieces)
        self._number = None
        start = self._seen + self._pos - len(token)  # (where the number began: what an error names)
        if _NUMBER.fullmatch(token) is None:
            raise _Stop("not a JSON number", start)
        try:
            number = float(token) if ("." in token or "e" in token or "E" in token) else int(token)
        except ValueError:  # more digits than Python reads into an int (4300 on 3.11+): json.loads refuses it too
            raise _Stop("a number too long to read", start) from None
        if isinstance(number, float) and math.isinf(number):  # (1e400: no JSON value; find_json refuses it too)
            raise _Stop("a number past a float's range", start)
        self._finished(number)
        return True

    def _read_string(self) -> bool:
        text = self._text
        pieces = self._string
        assert pieces is not None
        while True:
            found = _STRING_STOP.search(text, self._pos)
            if found is None:
                pieces.append(text[self._pos:])
                self._pos = len(text)
                return False
            at = found.start()
            if at > self._pos:
                pieces.append(text[self._pos:at])
            if text[at] == '"':
                self._pos = at + 1
                value = "".join(pieces)
                if not text_is_utf8(value):  # raw UTF-16 halves (a pair split between deltas): as the collected
                    value = value.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")  # text has it
                self._string = None
                if self._in_key:
                    frame = self._stack[-1]
                    frame.key = value
                    frame.state = _COLON
                else:
                    self._finished(value)
                return True
            # an escape: needs its whole sequence (a surrogate pair: two)
            self._pos = at
            if at + 1 >= len(text):
                return False
            kind = text[at + 1]
            simple = _SIMPLE_ESCAPES.get(kind)
            if simple is not None:
                pieces.append(simple)
                self._pos = at + 2
                continue
            if kind != "u":
                raise _Stop("bad escape")
            hexa = text[at + 2:at + 6]
            if len(hexa) < 4:
                if not _HEX.match(hexa):
                    raise _Stop("bad escape")
                return False
            if not _HEX4.match(hexa):
                raise _Stop("bad escape")
            code = int(hexa, 16)
            if 0xD800 <= code <= 0xDBFF:
                tail = text[at + 6:at + 12]
                if len(tail) < 6 and _could_be_escape(tail):
                    return False
                if tail[:2] == "\\u" and _HEX4.match(tail[2:6]):
                    low = int(tail[2:6], 16)
                    if 0xDC00 <= low <= 0xDFFF:
                        pieces.append(chr(0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)))
                        self._pos = at + 12
                        continue
            if 0xD800 <= code <= 0xDFFF:  # a lone surrogate: no Unicode text (find_json refuses it too)
                raise _Stop("a string that is not valid Unicode (a lone surrogate)", self._seen + at)
            pieces.append(chr(code))
            self._pos = at + 6

    def _attach(self, value: Any) -> None:
        self.changes += 1
        if not self._stack:
            if self.value is not None:
                raise _Stop("a second value")
            self.value = value
            return
        frame = self._stack[-1]
        if frame.is_object:
            frame.container[frame.key] = value
            frame.key = None
        else:
            frame.container.append(value)
        frame.state = _COMMA

    def _finished(self, value: Any, attach: bool = True) -> None:
        if attach:
            if not self._stack:
                self.changes += 1
                self.value = value
                self.done = True
                return
            self._attach(value)
            return
        if not self._stack:
            self.done = True


class _Stop(Exception):
    pass


def find_json(text: str) -> Tuple[Any, Optional[str]]:
    """The JSON document in an answer's text: the whole text, else the first ``{``/``[`` from which a
    document parses (prose or a Markdown fence around it); ``(value, None)`` or ``(None, why)``."""
    decoder = json.JSONDecoder(parse_constant=_no_constant, parse_float=_finite_float)
    stripped = text.strip()
    deep = False
    try:
        _check_depth(stripped, 0, decoder.raw_decode)  # (Python < 3.11: see agenthub._jsondepth)
        return _unicode(decoder.decode(stripped), text)
    except (ValueError, _NotJSON):
        pass
    except RecursionError:  # nested deeper than the decoder's stack
        deep = True
    start = 0
    tries = 0
    budget = [_SCAN_BUDGET]
    while tries < 64:
        at = _next_open(text, start)
        if at < 0:
            break
        tries += 1
        try:
            _check_depth(text, at, decoder.raw_decode)
            value, _end = decoder.raw_decode(text, at)
            return _unicode(value, text)
        except (ValueError, _NotJSON):
            start = _past(text, at, budget)
        except RecursionError:
            deep = True
            start = _past(text, at, budget)
    if not stripped:
        return None, "the answer is empty"
    if deep:
        return None, "the answer's JSON is nested too deeply to read"
    return None, "the answer is not JSON (it begins {!r})".format(stripped[:80])


#: a ``{`` or ``[`` that begins as JSON does (not ``[the answer]`` in prose)
_JSON_START = re.compile(r'\{\s*["}]|\[\s*(?:["{\[\]0-9-]|true\b|false\b|null\b)')
_BRACKET_OR_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')


#: how many brackets and strings one answer's search may step over looking for where a document closes
_SCAN_BUDGET = 200000


def _past(text: str, at: int, budget: List[int]) -> int:
    """Where to look for a document after the one at ``at`` did not parse: past its closing bracket when
    it begins as JSON and closes (a member inside it, ``{"b": 1}`` in ``{"a": NaN, "b": 1}``, is no document
    of the answer's: it would be read as the answer), else the next character.  ``budget`` (brackets and
    strings left to step over, shared by the answer's search) keeps a huge broken answer's search short."""
    if _JSON_START.match(text, at) is None:
        return at + 1
    depth = 0
    for token in _BRACKET_OR_STRING.finditer(text, at):
        budget[0] -= 1
        if budget[0] < 0:
            break
        kind = token.group()
        if kind in ("{", "["):
            depth += 1
        elif kind in ("}", "]"):
            depth -= 1
            if depth == 0:
                return token.end()
    return at + 1


_SURROGATE_ESCAPE = re.compile("\\\\u[dD][89a-fA-F]|[\ud800-\udfff]")  # (an escape, or one already read)


def _unicode(value: Any, text: str) -> Tuple[Any, Optional[str]]:
    """``(value, None)``, or ``(None, why)`` when it nests ``MAX_DEPTH`` levels or more (the tool-call arguments'
    rule: deeper, the value parses but no pickle, output row or next request would hold it), or a string in it
    is not valid Unicode: a lone surrogate, which JSON's ``\\ud800`` lets through (pydantic refuses it as no
    JSON; a job's output row could not hold it)."""
    if too_deep(value):
        return None, "the answer's JSON nests deeper than {} levels".format(MAX_DEPTH)
    if _SURROGATE_ESCAPE.search(text) is None:
        return value, None
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return None, "the answer's JSON holds a string that is not valid Unicode (a lone surrogate)"
    return value, None


def _next_open(text: str, start: int) -> int:
    brace = text.find("{", start)
    bracket = text.find("[", start)
    found = [i for i in (brace, bracket) if i >= 0]
    return min(found) if found else -1


class _NotJSON(ValueError):
    pass


def _no_constant(name: str) -> Any:
    raise _NotJSON("{} is not JSON".format(name))


def _finite_float(token: str) -> float:
    """A JSON number read as a float, refused past a float's range (``1e400`` would be infinity: no JSON
    value, and no output row could hold it)."""
    value = float(token)
    if math.isinf(value):
        raise _NotJSON("{} is past a float's range".format(token[:40]))
    return value
