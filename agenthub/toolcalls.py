"""The tool-call state machine: vendor fragments in, the seed's tool-call items out.

Every protocol feeds this one machine; no other module joins argument text or
parses arguments.  It is sans-I/O: the assembler holds the only state, and each
transition returns the content items to emit, in order.

What comes out, per call (docs/tools.md shows it from the caller's side):

1. announce: ``partial_tool_call`` with non-empty ``name`` and ``tool_call_id``;
   its ``arguments`` is the first fragment (often ``""``);
2. fragments: ``partial_tool_call`` with ``name == tool_call_id == ""``;
3. one complete ``tool_call`` whose ``arguments`` is the parsed JSON object.

A call's items are contiguous.  Calls that a server interleaves are emitted one
after the other: the first open call streams live, later ones are buffered and
flushed when it is done.

Rules
-----
R1  A fragment is ``(index, id, name, arguments)``; each may be missing.  An index
    given as text (``"0"``) is a number; ids ``""``, ``"null"`` and ``"None"`` are
    missing; ``arguments: null`` is ``""``; arguments sent as a JSON value instead
    of text are serialised (a whole object, as Gemini sends, is also kept as it came:
    when it is the call's only arguments, the complete call carries it without
    parsing the text again; the checks of R6 still apply).
R2  Which call a fragment belongs to:
      index given      -> the call in that slot; a different id, or a different name,
                          on an occupied slot starts a new call (servers that put every
                          call at index 0);
      else id given    -> the call with that id;
      else             -> the most recent call (fragments with neither index nor id).
    An unknown id or slot carrying no name continues the most recent call, except
    a fresh slot, which opens a call whose name is still to come, and slot N when
    calls were announced without an index: that is the N-th of them.
    A fragment that carries a name and opens a new JSON object after the call's
    arguments already form a complete object starts a new call (the same tool
    called twice on one slot with no ids).
R3  A repeated name or id is identity, never text: names are not concatenated.
R4  Arguments accumulate as a list of fragments, joined once and parsed once when
    the call closes (linear in their size).  Re-sent arguments are recognised:
      - a fragment that starts with everything received so far is a snapshot:
        only its new suffix is appended;
      - a first fragment that is a complete JSON object is held back; a later
        complete object that keeps all its keys (``{}`` then ``{"a": 1}``, or the
        same object again) replaces it; anything else releases it and appends.
    So the emitted fragments always concatenate to the parsed arguments.
R5  A ``seed`` (arguments that came with the announcement, e.g. an Anthropic
    ``content_block_start`` carrying ``input``) is used only if no fragment follows.
R6  A call closes when the protocol says so (``close``), when a new call starts
    and its arguments already form a complete JSON object, or at ``finish``.
    Empty arguments are ``{}``.  Malformed, truncated or non-object JSON raises
    ToolCallArgumentParseError, and so do NaN, Infinity, a number beyond a float's
    range (``1e400``) and a string with a lone surrogate (``"\\ud800"``): no
    request could carry them back.  After a call closed, whitespace or an identical
    re-send for it is ignored; anything else raises ToolCallArgumentParseError.
R7  A call with no id by the time it is announced gets a unique synthetic one.
    A call that never got a name is a StreamProtocolError if arguments came for
    it, and is dropped if nothing did.
"""

import contextvars
import json
import uuid
from typing import Any, Dict, List, Optional

from ._jsondepth import GUARDED as _GUARDED, check as _check_depth, loads as _json_loads
from .errors import StreamProtocolError, ToolCallArgumentParseError, preview
from .types import MAX_DEPTH, paired_halves, too_deep  # one depth rule for model output and caller input
from .types import lone_surrogate_in as _lone_surrogate_text  # (the one-byte text's look: types)

__all__ = ["ToolCallAssembler", "MAX_DEPTH", "too_deep"]

_MISSING_IDS = frozenset(["", "null", "None", "undefined"])
#: the tool runner's catch (agenthub.agent.runner): an assembler made while it holds a dict completes a call
#: whose arguments do not parse (R6) with ``{}`` and keeps its ToolCallArgumentParseError there by
#: tool_call_id, instead of raising it, so the turn goes on and the runner answers that call with an error
#: result.  The runner sets it only around a stream's first step (where the parser and its assembler are made)
broken_calls = contextvars.ContextVar("agenthub_broken_calls", default=None)  # type: contextvars.ContextVar[Optional[Dict[str, Any]]]
_loads = _json_loads


def _no_constant(name: str) -> Any:
    raise ValueError("{} is not a JSON number".format(name))


def _finite(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError("{} is beyond a float's range".format(text if len(text) <= 24 else text[:21] + "..."))
    return value


#: how a call's complete arguments are read: NaN, Infinity and numbers beyond a float's range are refused
#: (JSON has none of them: the next request could not carry them back)
_strict_decoder = json.JSONDecoder(parse_constant=_no_constant, parse_float=_finite)
_strict_decode = _strict_decoder.decode


def _strict_checked(text: str) -> Any:
    _check_depth(text, 0, _strict_decoder.raw_decode)  # (Python < 3.11: see agenthub._jsondepth)
    return _strict_decode(text)


_strict_loads = _strict_checked if _GUARDED else _strict_decode


def read_arguments(text: str) -> Dict[str, Any]:
    """A complete call's arguments read from their whole text as a call is closed (R6: blank is ``{}``; NaN,
    Infinity and numbers beyond a float's range refused; an object nested less than MAX_DEPTH deep), for a
    reader that got the fragments and only the word that they make the call (an agenthub server's runs wire:
    ``agenthub.providers.agenthub_server``).  Raises ValueError (or RecursionError) for anything else."""
    if not text.strip():
        return {}
    value = _strict_loads(text)
    if type(value) is not dict:
        raise ValueError("the arguments are not a JSON object")
    if too_deep(value):
        raise ValueError("the arguments nest deeper than {} levels".format(MAX_DEPTH))
    return value


def _lone_surrogate(value: Any, raw: str) -> bool:
    """Does ``value`` (``raw`` parsed) hold a string with a lone surrogate?  Without a ``\\u`` escape in ``raw``,
    every character of its strings is one of ``raw``'s (the other escapes stand for ASCII): ``raw`` is read
    (``_lone_surrogate_text``); else ``value``'s own text is."""
    if "\\u" not in raw:
        return _lone_surrogate_text(raw)
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


_PLAIN = (str, int, float, bool, type(None))
#: the text of whole arguments that came parsed (R1): ``json.dumps(value, ensure_ascii=False, allow_nan=False)``
#: with its encoder made once, and no check for cycles: only a ``_plain`` value comes here, a tree (its walk
#: stops at MAX_DEPTH)
_parsed_text = json.JSONEncoder(ensure_ascii=False, check_circular=False, allow_nan=False).encode


def _plain(value: Dict[str, Any]) -> bool:
    """``value`` is what parsing its JSON text would give back: dicts with str keys, lists, str, int,
    float, bool and None only (no tuple, no subclass), nested less than MAX_DEPTH deep."""
    level = [value]  # type: List[Any]
    depth = 0
    while level:
        if depth >= MAX_DEPTH:
            return False
        inner = []  # type: List[Any]
        for node in level:
            if type(node) is dict:
                for key in node:
                    if type(key) is not str:
                        return False
                children = node.values()
            else:
                children = node
            for child in children:
                kind = type(child)
                if kind is dict or kind is list:
                    inner.append(child)
                elif kind not in _PLAIN:
                    return False
        level = inner
        depth += 1
    return True


def _complete_object(text: str) -> Optional[Dict[str, Any]]:
    """The object ``text`` holds if it is one whole JSON object, else None."""
    stripped = text.strip()
    if stripped[:1] != "{" or stripped[-1:] != "}":
        return None
    try:
        value = _loads(stripped)
    except (ValueError, RecursionError):  # (nested past the interpreter's limit: close() says so)
        return None
    return value if isinstance(value, dict) else None


def _extends(new: Dict[str, Any], old: Dict[str, Any]) -> bool:
    return all(key in new and new[key] == value for key, value in old.items())


class _Call(object):
    __slots__ = (
        "index", "id", "name", "parts", "length", "emitted", "held", "parsed", "seed", "fidelity",
        "announced", "done", "closed",
    )

    def __init__(self, index: Optional[int], call_id: Optional[str], name: Optional[str]) -> None:
        self.index = index
        self.id = call_id
        self.name = name
        self.parts = []  # type: List[str]
        self.length = 0  # total characters in parts
        self.emitted = 0  # how many of parts went out as fragments
        self.held = None  # type: Optional[str]  # a complete first object, held back (R4)
        self.parsed = None  # type: Optional[Dict[str, Any]]  # the held object as it came, when it came parsed (R1)
        self.seed = None  # type: Optional[str]
        self.fidelity = None  # type: Optional[Dict[str, Any]]
        self.announced = False
        self.done = False  # no more fragments expected
        self.closed = False  # its complete tool_call went out

    def text(self) -> str:
        if self.parts:
            return self.parts[0] if len(self.parts) == 1 else "".join(self.parts)
        if self.held is not None:
            return self.held
        return self.seed or ""


class ToolCallAssembler(object):
    """Assembles one turn's tool calls.  ``feed`` (and its shorthand ``feed_arguments``), ``close`` and
    ``finish`` return items to emit."""

    __slots__ = ("client", "_id_prefix", "_queue", "_by_index", "_by_id", "_latest", "_unindexed", "_count", "_live",
                 "_live_index", "completed", "caught")

    def __init__(self, client: str = "", id_prefix: Optional[str] = None) -> None:
        self.client = client
        self._id_prefix = id_prefix if id_prefix is not None else "call_" + uuid.uuid4().hex[:12] + "_"
        self._queue = []  # type: List[_Call]  # calls not yet closed, in order of appearance
        self._by_index = {}  # type: Dict[int, _Call]
        self._by_id = {}  # type: Dict[str, _Call]
        self._latest = None  # type: Optional[_Call]
        self._unindexed = []  # type: List[_Call]  # calls opened without an index, in order
        self._count = 0
        # the head call while it streams live (announced, not done, nothing held, every part
        # emitted, in the slot _live_index), else None: set at the end of _feed, cleared by every
        # other transition, kept by feed_arguments()'s fast path (which changes none of that)
        self._live = None  # type: Optional[_Call]
        self._live_index = None  # type: Optional[int]
        #: number of complete tool_call items emitted so far
        self.completed = 0
        #: the tool runner's catch for unparseable arguments (``broken_calls``, read once: at construction)
        self.caught = broken_calls.get()  # type: Optional[Dict[str, Any]]

    # -- transitions -----------------------------------------------------------------------
    def feed(
        self,
        index: Any = None,
        tool_call_id: Any = None,
        name: Any = None,
        arguments: Any = None,
        fidelity: Optional[Dict[str, Any]] = None,
        seed: Optional[str] = None,
    ) -> List[Dict[str, Any]]:
        """One vendor fragment (R1-R5)."""
        if tool_call_id is None and name is None and fidelity is None and seed is None:
            return self.feed_arguments(index, arguments)
        return self._feed(index, tool_call_id, name, arguments, fidelity, seed)

    def feed_arguments(self, index: Any, arguments: Any) -> List[Dict[str, Any]]:
        """``feed(index, arguments=arguments)``: the shape nearly every fragment has (more text for
        the call in slot ``index``), which the protocols' hot paths call directly."""
        item = self.fragment(index, arguments)
        if item is not None:
            return [item]
        return self._feed(index, None, None, arguments, None, None)

    def fragment(self, index: Any, arguments: Any) -> Optional[Dict[str, Any]]:
        """The row nearly every fragment takes, alone: more text for the call streaming live in slot
        ``index``, too short to be a snapshot (R4) -> its one partial_tool_call item; None for any
        other fragment (an empty one too), which ``feed_arguments`` then takes.  The general path
        gives the same result; this one skips its checks and the list (a parser's loop yields the
        item itself).  (``x.__class__ is int``, not ``type(x) is int``: a builtin call costs three
        times more on 3.8; an int, not a bool or a float equal to it.)"""
        call = self._live
        if call is not None and arguments.__class__ is str and (
                index is self._live_index or index == self._live_index and index.__class__ is int):
            size = len(arguments)
            if 0 < size < call.length:
                call.parts.append(arguments)  # (``emitted`` catches up when the call stops being live: _settle)
                call.length += size
                return {"type": "partial_tool_call", "name": "", "arguments": arguments, "tool_call_id": ""}
        return None

    def _settle(self) -> None:
        """The live call (if any) stops being live: every part fragment() took went out."""
        call = self._live
        if call is not None:
            call.emitted = len(call.parts)
            self._live = None

    def _feed(self, index: Any, tool_call_id: Any, name: Any, arguments: Any, fidelity: Optional[Dict[str, Any]],
              seed: Optional[str]) -> List[Dict[str, Any]]:
        self._settle()
        # R1: normalise
        if index is not None and type(index) is not int:
            index = self._index(index)
        if tool_call_id is not None:
            if not isinstance(tool_call_id, str):
                tool_call_id = str(tool_call_id)
            if tool_call_id in _MISSING_IDS:
                tool_call_id = None
        if name is not None and (not isinstance(name, str) or not name):
            name = None
        parsed = None
        if arguments is None:
            arguments = ""
        elif not isinstance(arguments, str):
            if type(arguments) is dict and _plain(arguments):
                try:  # (NaN and Infinity: the text, parsed as any text is)
                    parsed, arguments = arguments, _parsed_text(arguments)
                except ValueError:
                    parsed = None
            if parsed is None:
                arguments = json.dumps(arguments, ensure_ascii=False)

        # R2: route
        call = None  # type: Optional[_Call]
        if index is not None:
            call = self._by_index.get(index)
            if call is None and tool_call_id is not None:
                call = self._by_id.get(tool_call_id)
            if call is None and name is None and tool_call_id is None:
                unindexed = self._unindexed
                if 0 <= index < len(unindexed) and unindexed[index].index is None:
                    call = unindexed[index]  # calls announced without an index, then fed by position
                    call.index = index
                    self._by_index[index] = call
                elif self._latest is not None and self._latest.index is None:
                    call = self._latest
        elif tool_call_id is not None:
            call = self._by_id.get(tool_call_id)
            if call is None and name is None:
                call = self._latest
        else:
            call = self._latest
        if call is not None and self._starts_new_call(call, tool_call_id, name, arguments):
            call = None
        items = []  # type: List[Dict[str, Any]]
        if call is None:
            call = self._open(index, tool_call_id, name, items)
        elif call.done:
            self._late(call, arguments)
            return items

        # R3: identity
        if name is not None and call.name is None:
            call.name = name
        if tool_call_id is not None and call.id is None and not call.announced:
            call.id = tool_call_id
            self._by_id[tool_call_id] = call
        if fidelity:
            call.fidelity = dict(call.fidelity or {}, **fidelity)
        if seed is not None:
            call.seed = seed

        # R4: arguments
        if arguments:
            if call.held is not None:
                obj = _complete_object(arguments)
                held = call.parsed if call.parsed is not None else _loads(call.held)
                call.parsed = None
                if obj is not None and _extends(obj, held):
                    call.held = arguments
                    arguments = ""
                else:
                    call.parts.append(call.held)
                    call.length = len(call.held)
                    call.held = None
            elif call.length == 0:
                if parsed is not None:  # a whole object that came parsed: held as it is (R4)
                    call.held = arguments
                    call.parsed = parsed
                    arguments = ""
                elif _complete_object(arguments) is not None:
                    call.held = arguments
                    arguments = ""
            elif len(arguments) >= call.length and arguments.startswith(call.text()):
                arguments = arguments[call.length:]
            if arguments:
                call.parts.append(arguments)
                call.length += len(arguments)
        if self._queue and self._queue[0] is call:
            self._emit_pending(call, items)
            if call.announced and not call.done and call.held is None and call.index is not None \
                    and self._by_index.get(call.index) is call:
                self._live = call  # every part went out (_emit_pending): feed_arguments() may take the next ones
                self._live_index = call.index
        return items

    def close(self, index: Any = None, tool_call_id: Any = None) -> List[Dict[str, Any]]:
        """The protocol says the call in this slot (or with this id) is complete (R6)."""
        self._settle()
        call = None
        if index is not None:
            call = self._by_index.get(self._index(index) if type(index) is not int else index)
        if call is None and tool_call_id is not None:
            call = self._by_id.get(str(tool_call_id))
        items = []  # type: List[Dict[str, Any]]
        if call is not None and not call.done:
            call.done = True
            self._drain(items)
        return items

    def finish(self) -> List[Dict[str, Any]]:
        """End of the turn: every call still open is complete (R6)."""
        self._settle()
        items = []  # type: List[Dict[str, Any]]
        for call in self._queue:
            call.done = True
        self._drain(items)
        return items

    @property
    def open_calls(self) -> int:
        """Calls started but not yet emitted complete."""
        return len(self._queue)

    # -- helpers ---------------------------------------------------------------------------
    @staticmethod
    def _index(index: Any) -> Optional[int]:
        if isinstance(index, bool):
            return None
        if isinstance(index, int):
            return index
        if isinstance(index, float) and index.is_integer():
            return int(index)
        if isinstance(index, str) and index.strip().lstrip("-").isdigit():
            return int(index)
        return None

    def _starts_new_call(self, call: _Call, call_id: Optional[str], name: Optional[str], arguments: str) -> bool:
        if call_id is not None and call.id is not None and call_id != call.id:
            return True
        if name is None:
            return False
        if call.name is not None and name != call.name:
            return True
        if call.length == 0 and call.held is None:
            return False
        if arguments.lstrip()[:1] != "{":
            return False
        current = _complete_object(call.text())
        if current is None:
            return False
        obj = _complete_object(arguments)
        return not (obj is not None and _extends(obj, current))

    def _open(self, index: Optional[int], call_id: Optional[str], name: Optional[str], items: List) -> _Call:
        head = self._queue[0] if self._queue else None
        if head is not None and not head.done and (head.held is not None or (
                head.length and _complete_object(head.text()) is not None)):
            head.done = True  # R6: a new call starts and the head is already whole
            self._drain(items)
        call = _Call(index, call_id, name)
        self._queue.append(call)
        if index is not None:
            self._by_index[index] = call
        else:
            self._unindexed.append(call)
        if call_id is not None:
            self._by_id[call_id] = call
        self._latest = call
        return call

    def _late(self, call: _Call, arguments: str) -> None:
        if not arguments.strip():
            return
        current = call.text()
        if arguments == current or _complete_object(arguments) == _complete_object(current) is not None:
            return
        raw = current + arguments
        caught = self.caught
        if caught is not None and call.id:
            caught[call.id] = ToolCallArgumentParseError(
                "arguments for tool call {!r} kept arriving after it was complete".format(call.name),
                client=self.client, tool_name=call.name or "", tool_call_id=call.id,
                raw_arguments_length=len(raw), raw_arguments_preview=preview(raw))
            return
        raise ToolCallArgumentParseError(
            "arguments for tool call {!r} kept arriving after it was complete".format(call.name),
            client=self.client,
            tool_name=call.name or "",
            tool_call_id=call.id or "",
            raw_arguments_length=len(raw),
            raw_arguments_preview=preview(raw),
        )

    def _announce(self, call: _Call, items: List) -> bool:
        if call.name is None:
            return False
        if call.id is None:
            call.id = self._id_prefix + str(self._count)
            self._by_id[call.id] = call
        self._count += 1
        call.announced = True
        text = "".join(call.parts[call.emitted:])
        call.emitted = len(call.parts)
        items.append({"type": "partial_tool_call", "name": call.name, "arguments": text, "tool_call_id": call.id})
        return True

    def _emit_pending(self, call: _Call, items: List) -> None:
        """Emit what the head call has that has not gone out yet."""
        if not call.announced:
            self._announce(call, items)
            return
        parts = call.parts
        emitted = call.emitted
        if emitted < len(parts):
            text = parts[emitted] if emitted + 1 == len(parts) else "".join(parts[emitted:])
            call.emitted = len(parts)
            items.append({"type": "partial_tool_call", "name": "", "arguments": text, "tool_call_id": ""})

    def _drain(self, items: List) -> None:
        queue = self._queue
        while queue:
            call = queue[0]
            if not call.announced and call.name is not None:
                self._emit_pending(call, items)
            if not call.done:
                break
            queue.pop(0)
            self._complete(call, items)

    def _complete(self, call: _Call, items: List) -> None:
        if not call.parts and call.held is None and call.seed:
            call.held = call.seed
        if call.held is not None:
            call.parts.append(call.held)
            call.length += len(call.held)
            call.held = None
        if call.name is None:
            if call.parts:
                raise StreamProtocolError(
                    "tool-call arguments arrived for a call that never got a name", client=self.client
                )
            return
        self._emit_pending(call, items)
        if not call.announced:  # pragma: no cover - _emit_pending announces named calls
            return
        raw = "".join(call.parts)
        call.parts = [raw]  # the fragments went out already: free them before parsing (peak memory)
        call.emitted = 1
        parsed, call.parsed = call.parsed, None  # (set: raw is its text, and nothing came after it)
        if not raw.strip():
            arguments = {}  # type: Any
        else:
            error = None
            try:
                arguments = parsed if parsed is not None else _strict_loads(raw)
            except ValueError as exc:
                error = self._parse_error(call, raw, "is not valid JSON ({})".format(exc))
            except RecursionError:
                error = self._parse_error(call, raw, "nests deeper than {} levels".format(MAX_DEPTH))
            else:
                if not isinstance(arguments, dict):
                    error = self._parse_error(call, raw, "is not a JSON object")
                elif parsed is None and too_deep(arguments):  # (parsed: _plain saw it shallower)
                    error = self._parse_error(call, raw, "nests deeper than {} levels".format(MAX_DEPTH))
                elif _lone_surrogate_text(raw) if parsed is not None else _lone_surrogate(arguments, raw):
                    # a character's two UTF-16 halves in two fragments (a gateway that slices by UTF-16 index)
                    # are that character; a half alone is refused
                    whole = paired_halves(raw) if parsed is None else raw
                    arguments = _strict_loads(whole) if whole != raw else arguments
                    if whole == raw or _lone_surrogate(arguments, whole):
                        error = self._parse_error(call, raw, "hold a lone surrogate (a string no UTF-8 can carry)")
            if error is not None:
                caught = self.caught
                if caught is None:
                    raise error
                caught[call.id] = error
                arguments = {}
        call.closed = True
        item = {"type": "tool_call", "name": call.name, "arguments": arguments, "tool_call_id": call.id}
        if call.fidelity:
            item["fidelity"] = call.fidelity
        items.append(item)
        self.completed += 1

    def _parse_error(self, call: _Call, raw: str, what: str) -> ToolCallArgumentParseError:
        return ToolCallArgumentParseError(
            "arguments of tool call {!r} ({}) {}".format(call.name, call.id, what),
            client=self.client,
            tool_name=call.name or "",
            tool_call_id=call.id or "",
            raw_arguments_length=len(raw),
            raw_arguments_preview=preview(raw),
        )
