"""Runs that survive a crash: the journal a run writes as it goes, and what a resumed run reads back.

``client.run(messages, ..., journal=STORE, run_id="ticket-42")`` (STORE: a store URL as
``RateLimiter(store=)`` takes, or a store object) writes, on the store's journal rows
(agenthub.stores.journal), in order:

- ``header``: the journal's format, agenthub's version and the run's fingerprint (a digest of the
  messages, the tool schemas, the model and the config; no value of it is kept); a stateful run's ``start``
  too: the length of the client's history then and whether a message came (where the run began in it);
- ``turn``: the turn as the run keeps it: the assistant message (fidelity kept), usage, cost, the route
  that answered; stored when its stream completes, before the run goes on (an answer holding bytes, an image:
  marked ``"bytes": true``, each bytes written as ``{"__bytes__": base64}``, ``types.to_jsonable``);
- ``call``: a call of an ``@tool(idempotent=False)`` tool is starting (its id, name, the digest of the
  arguments it runs with, and those arguments when a decision changed them: a resume shows the call with
  them and a ``True`` runs them), stored before it starts; ``result``: a
  call's result item and how long it took, stored as soon as the call ends for such a tool, with the next
  store write for any other (before the next model request when the results waiting took ``QUICK`` seconds of
  tool time or more, else with the next turn: a crash before that runs them again, at least once); a result
  marked ``unsettled``: such a call timed out and may still have taken effect (a resumed run does not run a
  call repeating it);
- ``attach``: the model request in flight (turn n) is a background response (or Gemini interaction): its
  id, the wire and the route (never a URL), stored as soon as the stream names it, so a resumed run
  re-attaches to it instead of paying for it again; ``detach``: that id could not be re-attached (gone,
  failed, another route), or the run's own stop cancelled it: the request is sent again.  A plain request
  in flight is sent again on resume and needs no entry (the ``request`` entries of journals written before
  are still read);
- ``done``: the run ended (its stop and pending calls).

Entries due at the same moment go in one store write (one transaction, one Lua call): one write a turn whose
calls are quick and idempotent, two when they are slow, three when it calls a tool that must not run twice.

Calling the same thing again with the same ``run_id`` resumes: the journaled turns and results are
replayed (their events yielded again with ``"replayed": True``; nothing is sent for them), then the run
goes on live.  A call journaled as started and not finished is run again when its tool is idempotent
(the default: at least once) and handed back as pending (``stop == "approval"``) when it was declared
``@tool(idempotent=False)`` (at most once).  The journal keeps what the run keeps, never headers, keys or
the raw HTTP bodies; replayed events are rebuilt from the journaled message (one delta per item).
"""

import atexit
import collections
import hashlib
import json
import math
import os
import re
import threading
import time
import uuid
import weakref
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Set, Tuple

from ..errors import AgentHubError, ConfigError
from ..stores import open_store
from ..stores.base import StoreError
from ..stores.journal import JOURNAL_LEASE
from ..stream import surrogates_escaped
from ..types import from_jsonable_exact, to_jsonable  # the one {"__bytes__"} codec (its escape too)
from .._jsondepth import loads as _json_loads

__all__ = ["Journal", "JournalError", "RunLockedError", "RunJournal", "FORMAT", "fingerprint", "fingerprints",
           "idempotency_key",
           "replay_events"]

#: the format of the entries this agenthub writes and reads (a journal of another format is refused)
FORMAT = 1
#: the tool time (seconds, together) under which the results of idempotent calls wait past the next model request
#: for the next store write (a crash during that request runs them again: at least once); others are stored first
QUICK = 0.05
#: the longest ``journal_ttl`` (seconds: 31,000 years; every store keeps it)
MAX_TTL = 1e12
#: the config keys that never reach the fingerprint (secrets, or what does not change the run; an MCP server's
#: ``headers`` in ``mcp_servers`` neither)
_UNFINGERPRINTED = ("extra_headers", "trace_id")


class JournalError(AgentHubError):
    """A run's journal that cannot be used: written by another format, for another run (other messages,
    tools or model under the same ``run_id``), or holding a corrupt entry.  ``run_id``, ``reason``."""

    run_id: str
    reason: str


class RunLockedError(JournalError):
    """Another live worker owns the run (its lease is held): ``retry_after`` seconds until it lapses if
    that worker stopped.  Pass ``journal_wait=`` seconds to wait for it instead."""

    retry_after: float


def _encoder(ensure_ascii: bool, allow_nan: bool, sort_keys: bool, default: Any = None) -> Any:
    """``JSONEncoder(separators=(",", ":"), ...).encode`` made once, for a turn's entries: the C encoder itself
    where this Python has it (``JSONEncoder.encode`` makes one a call, ``json.dumps`` with options an encoder
    too), the same text.  Without a cycle check (the entries are JSON data: a structure that refers to
    itself is found by the Python encoder, which then says so as before)."""
    python = json.JSONEncoder(separators=(",", ":"), ensure_ascii=ensure_ascii, allow_nan=allow_nan,
                              sort_keys=sort_keys, default=default)
    make = getattr(json.encoder, "c_make_encoder", None)
    quote = json.encoder.encode_basestring_ascii if ensure_ascii else json.encoder.encode_basestring
    try:
        chunks = make(None, python.default, quote, None, ":", ",", sort_keys, False, allow_nan) if make else None
    except TypeError:  # (another Python's signature: the encoder a call)
        chunks = None
    if chunks is None:
        return python.encode
    join = "".join

    def encode(value: Any) -> str:
        if type(value) is not dict:
            return python.encode(value)
        try:
            return join(chunks(value, 0))
        except RecursionError:  # (a structure that refers to itself: the Python encoder's ValueError)
            return python.encode(value)

    return encode


#: the entries' encoder (built once)
_ENCODE = _encoder(ensure_ascii=False, allow_nan=False, sort_keys=False)  # type: Callable[[Any], str]
_QUOTE = json.encoder.encode_basestring  # (a string as _ENCODE writes it)
_FINITE = (float("-inf"), float("inf"))


def _number(value: Any) -> Optional[str]:
    """A float or None as _ENCODE writes it; None for anything else (then _ENCODE writes the entry, or says why not)."""
    if value is None:
        return "null"
    if type(value) is float and _FINITE[0] < value < _FINITE[1]:
        return repr(value)
    return None


#: a high surrogate with a low one after it (JSON's escapes of them, which ``surrogates_escaped`` writes, read
#: back as one character)
_PAIRED = re.compile("[\ud800-\udbff][\udc00-\udfff]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def _storable(run_id: str, texts: List[str]) -> List[str]:
    """The entries with each lone surrogate written as its JSON escape (``\\udcff``): text a store that keeps
    UTF-8 takes, the same values read back (raw, a surrogate can only be in an entry's strings, never in an
    escape).  Two side by side would read back as another character: a JournalError (``reason="entry"``)."""
    kept = []
    for text in texts:
        if _PAIRED.search(text):
            raise JournalError("the journal of run {!r}: an entry holds two lone surrogates side by side, which no "
                               "store that keeps UTF-8 can hold apart: refusing to journal it".format(run_id),
                               run_id=run_id, reason="entry")
        kept.append(surrogates_escaped(text))
    return kept


def _with_bytes(fields: Dict[str, Any], key: str) -> str:
    """The entry ``fields`` whose ``key`` holds bytes: that value as ``types.to_jsonable`` writes it (each bytes as
    ``{"__bytes__": base64}``, each dict of that one key it held already, the model's own arguments may spell one,
    as ``{"__bytes__": [its value]}``), marked ``"bytes": true`` (only such an entry is read back through
    ``types.from_jsonable_exact``, which gives back exactly what was written)."""
    fields = dict(fields, **{key: to_jsonable(fields[key]), "bytes": True})
    fields["k"] = fields.pop("k")
    return _ENCODE(fields)


def _int(value: Any, least: int = -1) -> bool:
    """A turn's number (-1: the calls of a saved state a run began by resuming)."""
    return type(value) is int and value >= least


def _number_or_none(value: Any) -> bool:
    return value is None or (type(value) in (int, float) and _FINITE[0] < value < _FINITE[1])


def _usage(usage: Any) -> bool:
    """A turn's usage as the run sums it: None, or an object whose counts are None or ints (not a list, a count
    that is a string: a resume summed them with TypeError, and ``agenthub runs show`` wrote them out raw)."""
    from ..types import USAGE_KEYS

    return usage is None or (type(usage) is dict and all(
        usage.get(key) is None or _int(usage.get(key), 0) for key in USAGE_KEYS))


def _checked_message(message: Any, role: str) -> bool:
    from ..validate import check_message

    if type(message) is not dict or message.get("role") != role:
        return False
    try:
        try:
            check_message(message)
        except ConfigError as exc:  # (a lone surrogate is the wire's concern, as it was live: the journal keeps it)
            if "holds a lone surrogate" not in str(exc):
                raise
            check_message(_surrogates_marked(message))
    except (AgentHubError, TypeError, ValueError, AttributeError, RecursionError):
        return False
    return True


def _surrogates_marked(value: Any) -> Any:
    """``value`` with each lone surrogate of its strings as U+FFFD (what the rest of it is checked with)."""
    if type(value) is str:
        return _SURROGATE.sub("\ufffd", value)
    if type(value) is dict:  # (the keys too: a tool call's argument names are the model's strings as well)
        return {_surrogates_marked(k): _surrogates_marked(v) for k, v in value.items()}
    if type(value) is list:
        return [_surrogates_marked(v) for v in value]
    return value


def entry_read(entry: Dict[str, Any], turns: int) -> Dict[str, Any]:
    """A journal entry after its header as a resume reads it: its bytes back (an entry marked ``"bytes"``), each
    field a resume reads of its kind's type (a turn's message and a result's item as the data model has them; a
    turn numbered ``turns``, the turns before it in the journal: each once, in order); ValueError (what is wrong)
    for one that is not: a corrupt entry, never replayed."""
    kind = entry.get("k")
    if kind in ("turn", "result") and entry.get("bytes") is not None:
        key = "message" if kind == "turn" else "item"
        if entry["bytes"] is not True or key not in entry:
            raise ValueError("a bytes mark on an entry without its value")
        try:
            entry = dict(entry, **{key: from_jsonable_exact(entry[key])})
        except (ValueError, TypeError, RecursionError):
            raise ValueError("bytes that do not read back") from None
    if kind == "turn":
        if entry.get("turn") != turns or type(entry.get("turn")) is not int:
            raise ValueError("turn {!r} where turn {} is next".format(entry.get("turn"), turns))
        if not (_int(entry.get("turn"), 0) and _checked_message(entry.get("message"), "assistant")
                and _usage(entry["message"].get("usage_metadata"))
                and _number_or_none(entry.get("cost")) and _number_or_none(entry.get("cut"))
                and (entry.get("route") is None
                                                             or type(entry.get("route")) is dict)):
            raise ValueError("a turn without its number, an assistant message, a cost or a route")
    elif kind == "call":
        if not (_int(entry.get("turn")) and type(entry.get("id")) is str and type(entry.get("name")) is str
                and type(entry.get("digest")) is str and type(entry.get("arguments", {})) is dict):
            raise ValueError("a call without its turn, id, name or digest")
    elif kind == "result":
        item = entry.get("item")
        if not (_int(entry.get("turn")) and type(entry.get("id")) is str and type(item) is dict
                and _checked_message({"role": "user", "content_items": [item]}, "user")
                and _number_or_none(entry.get("seconds")) and type(entry.get("unsettled", False)) is bool):
            raise ValueError("a result without its turn, id, item or time")
    elif kind in ("request", "attach", "detach"):
        if not _int(entry.get("turn")) or (kind == "attach" and (
                type(entry.get("id")) is not str or type(entry.get("route", {})) is not dict
                or not isinstance(entry.get("wire", ""), str))):
            raise ValueError("a request without its turn, or a background response without its id or route")
    elif kind == "done":
        pending = entry.get("pending")
        if not ((entry.get("stop") is None or type(entry.get("stop")) is str) and type(pending) is list
                and all(i is None or type(i) is str for i in pending)):
            raise ValueError("an end without its stop or pending ids")
    else:
        raise ValueError("an entry of a kind this agenthub does not write ({!r})".format(kind))
    return entry


class _Text(str):
    """JSON text written already (a route ``_turn_text`` takes as it is)."""


def _turn_text(turn: int, message: Dict[str, Any], cost: Any, route: Any, cut: Optional[float] = None) -> str:
    """The ``turn`` entry: ``_ENCODE({"turn", "message", "cost", "route", "k": "turn"})``, the same text, the
    fields around the message written as they always are (``route``: a dict, or its ``_Text``); ``usage`` too
    (before ``k``) when the message's usage carries something beside its four buckets (``stream.usage_extras``:
    cache writes, image tokens, the service tier), so the replayed turn's usage is priced as the live one; and
    ``cut`` when a Budget counted attempts of the turn cut after the provider took them (``Attempt.cut_usd``), so
    a replayed run's ``cut_usd`` is the live run's."""
    from ..stream import usage_extras

    extras = usage_extras(message.get("usage_metadata"))
    cost_text = _number(cost)
    plain = type(turn) is int and cost_text is not None and not extras and cut is None
    if type(route) is _Text and not plain:
        route = _json_loads(route)
    entry = {}  # type: Dict[str, Any]
    try:
        if not plain:
            entry = {"turn": turn, "message": message, "cost": cost, "route": route}
            if extras:
                entry["usage"] = extras
            if cut is not None:
                entry["cut"] = cut
            entry["k"] = "turn"
            return _ENCODE(entry)
        return '{"turn":%d,"message":%s,"cost":%s,"route":%s,"k":"turn"}' % (
            turn, _ENCODE(message), cost_text, route if type(route) is _Text else _ENCODE(route))
    except TypeError:  # (bytes in the answer: an image, a thought image)
        entry = {"turn": turn, "message": message, "cost": cost,
                 "route": _json_loads(route) if type(route) is _Text else route}
        if extras:
            entry["usage"] = extras
        if cut is not None:
            entry["cut"] = cut
        entry["k"] = "turn"
        return _with_bytes(entry, "message")


#: the keys of a tool's text result, in the order a run makes it (``_result_text`` writes it around its values)
_TEXT_RESULT = ["type", "tool_call_id", "text"]


def _result_text(turn: int, call_id: str, item: Dict[str, Any], seconds: float) -> str:
    """The ``result`` entry: ``_ENCODE({"turn", "id", "item", "seconds", "k": "result"})``, the same text (a text
    result, ``{"type": "tool_result", "tool_call_id", "text"}`` of strings in this order, written around them)."""
    try:
        return _result_text_of(turn, call_id, item, seconds)
    except TypeError:  # (bytes in the item)
        return _with_bytes({"turn": turn, "id": call_id, "item": item, "seconds": seconds, "k": "result"}, "item")


def _result_text_of(turn: int, call_id: str, item: Dict[str, Any], seconds: float) -> str:
    seconds_text = _number(seconds)
    if type(turn) is not int or type(call_id) is not str or seconds_text is None or seconds is None:
        return _ENCODE({"turn": turn, "id": call_id, "item": item, "seconds": seconds, "k": "result"})
    quoted = _QUOTE(call_id)
    if type(item) is dict and len(item) == 3 and list(item) == _TEXT_RESULT:
        kind, result_id, text = item.values()
        if type(kind) is str and kind == "tool_result" and type(result_id) is str and type(text) is str:
            return ('{"turn":%d,"id":%s,"item":{"type":"tool_result","tool_call_id":%s,"text":%s},"seconds":%s,'
                    '"k":"result"}' % (turn, quoted, quoted if result_id == call_id else _QUOTE(result_id),
                                       _QUOTE(text), seconds_text))
    return '{"turn":%d,"id":%s,"item":%s,"seconds":%s,"k":"result"}' % (turn, quoted, _ENCODE(item), seconds_text)


def _call_text(turn: int, call_id: Any, name: Any, digest: str, edited: Any = None) -> str:
    """The ``call`` entry: ``_ENCODE({"turn", "id", "name", "digest", "k": "call"})``, the same text; ``edited``:
    the arguments a decision gave instead of the model's (kept as ``arguments``: a resume shows and runs those)."""
    if edited is not None:
        return _ENCODE({"turn": turn, "id": call_id, "name": name, "digest": digest, "arguments": edited,
                        "k": "call"})
    if type(turn) is not int or type(call_id) is not str or type(name) is not str:
        return _ENCODE({"turn": turn, "id": call_id, "name": name, "digest": digest, "k": "call"})
    return '{"turn":%d,"id":%s,"name":%s,"digest":"%s","k":"call"}' % (turn, _QUOTE(call_id), _QUOTE(name), digest)


#: a call's arguments as ``_canonical`` writes them (built once)
_CANONICAL = _encoder(ensure_ascii=True, allow_nan=True, sort_keys=True, default=repr)


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True, default=repr)


def fingerprint(model: str, messages: Sequence[Any], tools: Sequence[Any], config: Mapping[str, Any]) -> str:
    """The digest a journal's header holds: the run is "the same run" when this is equal."""
    kept = {k: v for k, v in config.items() if k not in _UNFINGERPRINTED and k != "tools"}
    servers = kept.get("mcp_servers")
    if isinstance(servers, (list, tuple)):  # (their headers are credentials, renewed as extra_headers are)
        kept["mcp_servers"] = [{k: v for k, v in server.items() if k != "headers"} if isinstance(server, Mapping)
                               else server for server in servers]
    return hashlib.sha256(_canonical([FORMAT, model, list(messages), list(tools), kept]).encode()).hexdigest()


def fingerprints(model: str, messages: Sequence[Any], tools: Sequence[Any], config: Mapping[str, Any]) -> List[str]:
    """``fingerprint``, then, when ``config["mcp_servers"]`` holds headers, the digest a journal written before
    they were left out holds for this run (the headers digested with the rest): a header holding either is this
    run's.  (A journal of that time whose headers were renewed since cannot be told from another run's.)"""
    prints = [fingerprint(model, messages, tools, config)]
    servers = config.get("mcp_servers")
    if isinstance(servers, (list, tuple)) and any(isinstance(s, Mapping) and "headers" in s for s in servers):
        kept = {k: v for k, v in config.items() if k not in _UNFINGERPRINTED and k != "tools"}
        prints.append(hashlib.sha256(_canonical([FORMAT, model, list(messages), list(tools), kept]).encode())
                      .hexdigest())
    return prints


def stateful_start(header: Mapping[str, Any], entries: Sequence[Mapping[str, Any]], history: Sequence[Any],
                   message: Any, print_of: Callable[[List[Any]], List[str]]) -> Optional[Tuple[List[Any], Any]]:
    """Where a stateful run began in a client's ``history`` that holds its progress since (the same client
    resuming it, ``message`` None or the run's own message again): (the history before the run, its message)
    when the header's ``start`` (the history's length then, whether a message came) gives a conversation of the
    header's fingerprint and the assistant turns after it are the journaled turns (their first ones); else None."""
    start = header.get("start")
    if type(start) is not list or len(start) != 2 or type(start[0]) is not int or type(start[1]) is not bool:
        return None
    count, has_message = start
    if not 0 <= count <= len(history) - (1 if has_message else 0):
        return None
    rest = list(history[count + 1:] if has_message else history[count:])
    if not rest:
        return None  # (nothing of the run in the history: not this case)
    turns = [entry.get("message") for entry in entries if entry.get("k") == "turn"]
    answers = [m for m in rest if isinstance(m, Mapping) and m.get("role") == "assistant"]
    if len(answers) > len(turns) or any(_canonical(a) != _canonical(t) for a, t in zip(answers, turns)):
        return None
    candidates = [None]  # type: List[Any]
    if has_message:
        kept = history[count]
        if not isinstance(kept, Mapping):
            return None
        bare = {k: v for k, v in kept.items() if k != "created_at"}  # (the client stamps a message it sends)
        if message is not None and _canonical({k: v for k, v in message.items() if k != "created_at"}) \
                != _canonical(bare):
            return None  # another message: another run
        candidates = [message] if message is not None else [kept, bare]
    elif message is not None:
        return None
    for first in candidates:
        seen = list(history[:count]) + ([first] if first is not None else [])
        if header.get("fingerprint") in print_of(seen):  # (``print_of``: the fingerprints that are this run's)
            return list(history[:count]), first
    return None


def idempotency_key(run_id: str, turn: int, tool_call_id: str, edited: Optional[str] = None) -> str:
    """The key a tool call keeps across crashes and resumes (agenthub.agent.current_call().idempotency_key): one
    per action.  ``edited``: the ``arguments_digest`` of the arguments a decision gave instead of the model's (the
    model's own are fixed by the run, turn and id, and keep the key they always had)."""
    text = "{}\x00{}\x00{}".format(run_id, turn, tool_call_id)
    if edited is not None:
        text += "\x00" + edited
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def arguments_digest(arguments: Any) -> str:
    return hashlib.sha256((_CANONICAL(arguments) if type(arguments) is dict else _canonical(arguments)).encode()
                          ).hexdigest()[:32]


def _whole(value: Any) -> Any:
    """``value`` with each finite whole float as the int it equals (``30.0`` as ``30``; bools stay)."""
    if type(value) is float:
        return int(value) if math.isfinite(value) and value.is_integer() else value
    if type(value) is dict:
        return {k: _whole(v) for k, v in value.items()}
    if type(value) is list:
        return [_whole(v) for v in value]
    return value


def repeat_digest(arguments: Any) -> str:
    """What tells whether a call repeats one that timed out (a tool that must not run twice): the digest of its
    arguments with whole floats as ints, since ``30`` and ``30.0`` reach a tool as the same number."""
    return arguments_digest(_whole(arguments))


class _Renewer(object):
    """One daemon thread per process renews the leases of the runs it owns, each every third of its lease
    from its claim.  It lingers one such period after the last run ends (runs one after another reuse one
    thread instead of starting one a run).  At the interpreter's exit it starts no renewal, and one under way ends
    first (``stop_at_exit``)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._journals = weakref.WeakKeyDictionary()  # type: Any  # journal -> when it is renewed next (monotonic)
        self._thread = None  # type: Optional[threading.Thread]
        self._pid = os.getpid()
        self._until = 0.0  # (the thread sleeps until then: a run due earlier wakes it)
        self._stopping = False  # (the interpreter is exiting)
        self._renewing = False  # (a round of renewals is under way)

    def add(self, journal: "Journal") -> None:
        due = time.monotonic() + journal.lease / 3.0
        with self._cond:
            if self._pid != os.getpid():
                self._pid, self._journals, self._thread = os.getpid(), weakref.WeakKeyDictionary(), None
            self._journals[journal] = due
            if self._thread is None or not self._thread.is_alive():
                self._until = due
                self._thread = threading.Thread(target=self._run, name="agenthub-journal-lease", daemon=True)
                self._thread.start()
            elif due < self._until:
                self._cond.notify_all()

    def discard(self, journal: "Journal") -> None:
        with self._cond:
            self._journals.pop(journal, None)

    def _run(self) -> None:
        idle = False
        while True:
            with self._cond:
                if self._stopping:
                    self._thread = None
                    return
                now = time.monotonic()
                if not self._journals:
                    if idle:
                        self._thread = None
                        return
                    idle = True  # linger one period for the next run
                    self._until = now + JOURNAL_LEASE / 3.0
                else:
                    idle = False
                    self._until = min(self._journals.values())
                if self._until > now:
                    self._cond.wait(self._until - now)
                now = time.monotonic()
                due = [j for j, at in list(self._journals.items()) if at <= now] if not self._stopping else []
                for journal in due:
                    self._journals[journal] = now + journal.lease / 3.0
                self._renewing = bool(due)
            try:
                for journal in due:
                    journal.renew()
            finally:
                with self._cond:
                    self._renewing = False
                    self._cond.notify_all()

    def stop_at_exit(self, wait: float = 5.0) -> None:
        """At the interpreter's exit: no renewal starts any more, and a round under way ends first (at most
        ``wait`` seconds).  The daemon thread stopped between a renewal's claim and the release that follows it
        (a worker that stood still, going on after another took its run over and ended it) left the ended run's
        lease held for a whole lease: every resume of it refused as owned by a live worker."""
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
            ends = time.monotonic() + wait
            while self._renewing and self._pid == os.getpid() and time.monotonic() < ends:
                self._cond.wait(max(0.0, min(0.05, ends - time.monotonic())))

    def reset(self) -> None:
        """In a forked child: a fresh condition (a thread of the parent may have held it), no thread, no runs."""
        self._cond = threading.Condition()
        self._pid, self._journals, self._thread = os.getpid(), weakref.WeakKeyDictionary(), None
        self._stopping = self._renewing = False


_RENEWER = _Renewer()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_RENEWER.reset)
atexit.register(_RENEWER.stop_at_exit)

#: the stores this process opened from a URL for journals, by (process, URL): a run reuses the store (its
#: connection, its schema check, its scripts) instead of opening one a run; a forked child opens its own
_STORES = collections.OrderedDict()  # type: collections.OrderedDict[Tuple[int, str], Tuple[Any, Any]]
_STORES_LOCK = threading.Lock()
_STORES_KEPT = 8


def _after_fork() -> None:
    global _STORES_LOCK
    _STORES_LOCK = threading.Lock()  # (a thread of the parent may have held it at the fork)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


def _open(spec: Any) -> Any:
    """``open_store(spec)``, the store of an SQLite or Redis URL kept for the next run of this process (an SQLite
    file removed or replaced since is opened anew)."""
    if not isinstance(spec, str) or spec.split(":", 1)[0] not in ("sqlite", "redis", "rediss"):
        return open_store(spec)
    key = (os.getpid(), spec)
    with _STORES_LOCK:
        kept = _STORES.get(key)
        if kept is not None:
            _STORES.move_to_end(key)
    if kept is not None and kept[1] == _file_id(kept[0]):
        return kept[0]
    store = open_store(spec)
    with _STORES_LOCK:
        _STORES[key] = (store, _file_id(store))
        _STORES.move_to_end(key)
        while len(_STORES) > _STORES_KEPT:  # (an older one is closed when no run uses it any more)
            _STORES.popitem(last=False)
    return store


def _file_id(store: Any) -> Any:
    """An SQLite store's file (device, inode), None when it is gone; None for other stores."""
    path = getattr(store, "path", None)
    if not isinstance(path, str):
        return None
    try:
        found = os.stat(path)
    except OSError:
        return None
    return (found.st_dev, found.st_ino)


class Journal(object):
    """A run's journal: ``open`` claims the run and reads what was journaled; ``write`` stores an entry (with
    those ``add`` kept for the next write, in one store write); ``flush`` stores what ``add`` kept; ``close``
    stores it and releases the run (a finished run's journal stays until its ``ttl`` or ``forget``)."""

    def __init__(self, store: Any, run_id: str, *, ttl: Optional[float] = None, lease: Optional[float] = None,
                 wait: Optional[float] = None) -> None:
        if not isinstance(run_id, str) or not run_id or len(run_id) > 200 or not run_id.isprintable() \
                or run_id.endswith(":entries"):  # (on Redis, the key of the entries of the run its start names)
            raise ConfigError("run_id must be 1 to 200 printable characters, not ending in ':entries' (got {!r})".format(
                run_id if not isinstance(run_id, str) else run_id[:60]))
        if ttl is not None and (isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or not 0 < ttl < 10 ** 9):
            # (a bound every store keeps: Redis refuses an expiry past ~1e15 s, and inf, mid-run)
            raise ConfigError("journal ttl must be a number of seconds > 0 and below 10**9 (or None: kept until "
                              "forgotten)")
        if wait is not None and (isinstance(wait, bool) or not isinstance(wait, (int, float))
                                 or not 0 <= wait < float("inf")):  # (NaN waited for ever: no deadline compares)
            raise ConfigError("journal_wait must be a finite number of seconds >= 0")
        self.store = _open(store)
        if not hasattr(self.store, "journal_append"):
            raise ConfigError("{!r} keeps no journal (MemoryStore, SQLiteStore and RedisStore do)".format(self.store))
        self.run_id = run_id
        self.ttl = None if ttl is None else float(ttl)
        from ..stores import journal as rows

        self.lease = float(lease if lease is not None else rows.JOURNAL_LEASE)  # (read now: a test may shorten it)
        self.wait = wait
        self.owner = uuid.uuid4().hex
        self._next = 0
        self._kept = []  # type: List[str]  # entries added, stored with the next write
        self._lock = threading.Lock()
        self._lost = None  # type: Optional[BaseException]
        #: when (monotonic, taken before the store call) the store last said this worker holds the lease: it holds
        #: at least ``lease`` seconds from then; past that another worker may have taken the run over
        self._held = 0.0
        self._open = False
        self._append_many = getattr(self.store, "journal_append_many", None)  # (one store call a write)

    # -- claiming -----------------------------------------------------------------------------------------
    def _claim(self) -> List[str]:
        """Take the run's lease (waiting up to ``wait`` for a live owner's) and read its entries: one store call
        (``journal_open``) where the store has it."""
        deadline = None if self.wait is None else time.monotonic() + self.wait
        opens = getattr(self.store, "journal_open", None)
        while True:
            raw = None  # type: Optional[List[str]]
            self._held = time.monotonic()
            if opens is not None:
                left, raw = opens(self.run_id, self.owner, self.lease, self.ttl)
            else:
                left = self.store.journal_claim(self.run_id, self.owner, self.lease, self.ttl)
            if left is None:
                if raw is None:
                    raw = self.store.journal_entries(self.run_id)
                return list(raw)
            if deadline is None or time.monotonic() + min(left, 0.5) > deadline + 0.5:
                raise RunLockedError(
                    "run {!r} is owned by another live worker (its lease has {:.1f} s left): it goes on there; "
                    "pass journal_wait=SECONDS to wait for it".format(self.run_id, left),
                    run_id=self.run_id, reason="locked", retry_after=round(left, 3))
            time.sleep(max(0.05, min(left, 0.5, max(0.0, deadline - time.monotonic()))))

    def renew(self, strict: bool = False) -> None:
        """The lease renewed (the lease thread's call).  One that may have lapsed since it was last renewed is taken
        again only when nobody wrote in the run since (another worker that took it over and ended it let it go:
        taking it again would let this one send what that one sent): else ``_lost``.  ``strict``: a store out
        of reach raises (else the next round tries again)."""
        if not self._open:  # (closed since the lease thread picked it: its lease is let go, not taken again)
            return
        asked = time.monotonic()
        lapsed = asked >= self._held + self.lease
        try:
            left = self.store.journal_claim(self.run_id, self.owner, self.lease, self.ttl)
            if left is None and lapsed:
                with self._lock:  # (not while this worker's own write is under way: its number is then moved on)
                    known = self._next
                    written = self.store.journal_entries(self.run_id, max(0, known - 1))
                if len(written) != (1 if known else 0):
                    left = 0.0
                    try:  # (the claim just took the lease of a run another worker ended: let go, not held for a
                        self.store.journal_release(self.run_id, self.owner)  # lease, refusing every resume of it)
                    except AgentHubError:
                        pass  # it lapses by itself
        except AgentHubError:  # the store is away for now: the next round tries again (a lapsed lease
            if strict:  # shows at the next write: the fence refuses it)
                raise
            return
        if left is not None:
            self._lost = StoreError("the journal of run {!r}: another worker took the run over".format(self.run_id))
            return
        self._held = max(self._held, asked)
        if not self._open:  # (closed, its lease let go, while this renewal was under way: let go again, not held)
            try:
                self.store.journal_release(self.run_id, self.owner)
            except AgentHubError:
                pass  # the lease lapses by itself

    def held(self) -> None:
        """Before a model request: StoreError when another worker took the run over.  The lease thread renews the
        lease every third of it; when it is late by more than that (the process stood still: a paused machine, the
        store out of reach), the lease is renewed here first, and one that lapsed and was taken over since (even
        if that worker ended the run and let it go) raises instead of a request sent twice."""
        if self._lost is None and time.monotonic() >= self._held + self.lease * 2.0 / 3.0:
            self.renew(strict=True)
        if self._lost is not None:
            raise self._lost

    def open(self, print_: str, start: Optional[List[Any]] = None,
             same: Optional[Callable[[Mapping[str, Any], List[Dict[str, Any]]], bool]] = None) -> List[Dict[str, Any]]:
        """Claim the run and return its journaled entries after the header (empty for a new run, whose
        header is written now, with ``start`` when given).  JournalError for a journal of another format or run,
        or a corrupt entry; ``same(header, entries)``: asked when the fingerprint differs, True when the
        conversation given is this run's start with the run's own progress after it (a stateful client's)."""
        raw = self._claim()
        self._open = True
        _RENEWER.add(self)
        try:
            entries = []  # type: List[Dict[str, Any]]
            turns = 0
            for n, text in enumerate(raw):
                try:
                    entry = _json_loads(text)
                except (TypeError, ValueError, RecursionError):
                    entry = None
                if n == 0 and isinstance(entry, dict) and entry.get("k") == "header" and entry.get("format") != FORMAT:
                    raise JournalError("the journal of run {!r} was written in format {!r} (agenthub {}); this "
                                       "agenthub reads format {}: refusing it".format(
                                           self.run_id, entry.get("format"), entry.get("agenthub"), FORMAT),
                                       run_id=self.run_id, reason="format")
                if n and isinstance(entry, dict):
                    try:
                        entry = entry_read(entry, turns)
                        turns += entry["k"] == "turn"
                    except ValueError:
                        entry = None
                if not isinstance(entry, dict) or not isinstance(entry.get("k"), str):
                    raise JournalError("the journal of run {!r}: entry {} is corrupt: refusing to replay it".format(
                        self.run_id, n), run_id=self.run_id, reason="corrupt")
                entries.append(entry)
            self._next = len(entries)
            if not entries:  # (stored with the run's first write: a run killed before it has nothing to resume)
                if start is None:
                    self.add("header", format=FORMAT, fingerprint=print_, agenthub=_version())
                else:
                    self.add("header", format=FORMAT, fingerprint=print_, agenthub=_version(), start=start)
                return []
            header = entries[0]
            if header.get("k") != "header" or header.get("format") != FORMAT:
                raise JournalError("the journal of run {!r} was written in format {!r} (agenthub {}); this agenthub "
                                   "reads format {}: refusing it".format(self.run_id, header.get("format"),
                                                                         header.get("agenthub"), FORMAT),
                                   run_id=self.run_id, reason="format")
            if header.get("fingerprint") != print_ and not (same is not None and same(header, entries[1:])):
                raise JournalError("the journal of run {!r} belongs to another run (other messages, tools, model or "
                                   "config under the same run_id): a different run is refused, not merged; use "
                                   "another run_id or forget this one".format(self.run_id),
                                   run_id=self.run_id, reason="mismatch")
            return entries[1:]
        except BaseException:
            self.close()
            raise

    # -- writing ------------------------------------------------------------------------------------------
    def add(self, kind: str, **fields: Any) -> None:
        """Keep an entry for the next store write (``write``, ``flush`` or ``close``): not stored yet."""
        fields["k"] = kind
        self.keep(_ENCODE(fields))

    def keep(self, text: str) -> None:
        """``add`` of an entry written already (its JSON text)."""
        with self._lock:
            self._kept.append(text)

    def write(self, kind: str, **fields: Any) -> None:
        """Store an entry now, after those kept by ``add`` (one store write)."""
        self.add(kind, **fields)
        self.flush()

    def flush(self) -> None:
        """Store the entries kept by ``add`` (one store write; nothing when there are none)."""
        if self._lost is not None:
            raise self._lost
        with self._lock:
            if not self._kept:
                return
            many = self._append_many
            if many is None:  # (a store that takes one entry a call)
                self._store(self._store_each)
                return
            self._store(many)
            self._next += len(self._kept)
            self._kept = []

    def _store(self, write: Any) -> None:
        """``write(run_id, owner, next number, the kept entries, ttl)``, again with each lone surrogate escaped
        when a store that keeps UTF-8 refused one (``_storable``)."""
        try:
            write(self.run_id, self.owner, self._next, self._kept, self.ttl)
        except UnicodeEncodeError:
            self._kept = _storable(self.run_id, self._kept)
            write(self.run_id, self.owner, self._next, self._kept, self.ttl)

    def _store_each(self, *_: Any) -> None:
        """The kept entries stored one a call (a store without ``journal_append_many``); ``_store``'s arguments are
        this journal's own, read here as each entry moves them on."""
        while self._kept:
            self.store.journal_append(self.run_id, self.owner, self._next, self._kept[0], self.ttl)
            self._next += 1
            del self._kept[0]

    def finish(self, kind: str, **fields: Any) -> None:
        """Store a last entry (after those kept by ``add``) and release the run: one store write
        (``journal_finish``) where the store has it.  A write refused or failed raises (the lease is let go
        anyway, or lapses)."""
        self.add(kind, **fields)
        finish = getattr(self.store, "journal_finish", None)
        if finish is None or not self._open:
            self.flush()
            self.close()
            return
        self._open = False
        _RENEWER.discard(self)
        try:
            if self._lost is not None:
                raise self._lost
            with self._lock:
                self._store(finish)
                self._next += len(self._kept)
                self._kept = []
        except BaseException:
            try:
                self.store.journal_release(self.run_id, self.owner)
            except AgentHubError:
                pass  # the lease lapses by itself
            raise

    def close(self) -> None:
        if not self._open:
            return
        self._open = False
        _RENEWER.discard(self)
        try:
            self.flush()  # (what was kept: a run that raised keeps what it did)
        except AgentHubError:
            pass  # (the lease lost, the store away: the run's error says so already)
        try:
            self.store.journal_release(self.run_id, self.owner)
        except AgentHubError:
            pass  # the lease lapses by itself


def _version() -> str:
    import sys  # (the package's version, read without an import upwards)

    return str(getattr(sys.modules.get("agenthub"), "__version__", "?"))


class Replay(object):
    """What a resumed run reads from its journal entries: the turns, the calls started and their results,
    the request in flight, and whether the run had ended."""

    def __init__(self, entries: Sequence[Mapping[str, Any]]) -> None:
        self.turns = []  # type: List[Dict[str, Any]]
        self.started = {}  # type: Dict[Tuple[int, str], Dict[str, Any]]
        self.results = {}  # type: Dict[Tuple[int, str], Dict[str, Any]]
        self.in_flight = None  # type: Optional[Dict[str, Any]]
        self.done = None  # type: Optional[Dict[str, Any]]
        #: where each call's latest start is (turn, call id) -> entry number, and where a run that stopped for
        #: approval last handed a call back pending (call id -> entry number)
        self.started_at = {}  # type: Dict[Tuple[int, str], int]
        self.handed_back = {}  # type: Dict[str, int]
        #: call id -> the turns whose call under that id a stop for approval handed back
        self.handed_back_turns = {}  # type: Dict[str, Set[int]]
        #: the run's last stop, when it stopped for approval and went no further: (the turn whose calls wait,
        #: their ids)
        self.awaiting = None  # type: Optional[Tuple[int, List[str]]]
        #: the last entry (None: none after the header)
        self.last = dict(entries[-1]) if entries else None  # type: Optional[Dict[str, Any]]
        for number, entry in enumerate(entries):
            kind = entry["k"]
            if kind in ("turn", "call", "result"):
                self.awaiting = None
            if kind == "request":
                self.in_flight = dict(entry)
            elif kind == "attach":  # a background response's id for the request in flight, once known
                self.in_flight = dict(self.in_flight or {"k": "request", "turn": entry.get("turn")})
                self.in_flight["attach"] = entry.get("id")
                self.in_flight["attached"] = dict(entry)
            elif kind == "detach" and self.in_flight is not None:
                self.in_flight.pop("attach", None)
                self.in_flight.pop("attached", None)
            elif kind == "turn":
                self.turns.append(dict(entry))
                self.in_flight = None
            elif kind == "call":
                self.started[(entry["turn"], entry["id"])] = dict(entry)
                self.started_at[(entry["turn"], entry["id"])] = number
            elif kind == "result":
                self.results[(entry["turn"], entry["id"])] = dict(entry)
            elif kind == "done":
                self.done = dict(entry)
                self.awaiting = None
                if entry.get("stop") == "approval" and isinstance(entry.get("pending"), list):
                    for call_id in entry["pending"]:
                        if isinstance(call_id, str):
                            self.handed_back[call_id] = number
                            self.handed_back_turns.setdefault(call_id, set()).add(len(self.turns) - 1)
                    self.awaiting = (len(self.turns) - 1, [i for i in entry["pending"] if isinstance(i, str)])


def replay_events(message: Mapping[str, Any], extras: Any = None) -> List[Dict[str, Any]]:
    """The events of a journaled turn, rebuilt from its message: a start, one delta per item (a tool call
    announced with its whole arguments first), a stop with the
    turn's usage (carrying ``extras``, the turn entry's ``usage``: ``stream.with_usage_extras``) and finish
    reason; each marked ``"replayed": True`` (a valid stream: ``check_stream``)."""
    from ..stream import now_ms, with_usage_extras
    from ..types import USAGE_KEYS

    created = now_ms()
    usage = message.get("usage_metadata") or {}

    def event(kind: str, items: List[Any], usage: Any = None, finish: Any = None) -> Dict[str, Any]:
        return {"role": "assistant", "event_type": kind, "content_items": items, "usage_metadata": usage,
                "finish_reason": finish, "created_at": created, "replayed": True}

    events = [event("start", [])]
    for item in message.get("content_items") or ():
        if item.get("type") == "tool_call":  # announced with its arguments, then whole (the stream grammar)
            events.append(event("delta", [{"type": "partial_tool_call", "name": item["name"],
                                           "tool_call_id": item["tool_call_id"],
                                           "arguments": json.dumps(item.get("arguments"), ensure_ascii=False)}]))
        events.append(event("delta", [dict(item)]))
    events.append(event("stop", [], with_usage_extras({key: usage.get(key) for key in USAGE_KEYS}, extras),
                        message.get("finish_reason")))
    return events


class RunJournal(object):
    """The runner's one seam to a run's journal (agenthub.agent.runner reads and writes it through this):
    what was journaled (``turn``, ``result``, ``interrupted``, ``attachment``) and what goes in (``request``,
    ``attached``, ``detached``, ``answered``, ``starting``, ``finished``, ``done``).  What must
    be stored before the run goes on is stored at once (a turn, a non-idempotent call before it starts and
    its result as it ends, a background response's id); the results of other calls go with the next store
    write (``request`` stores them before the next model request unless they are quick idempotent ones)."""

    def __init__(self, store: Any, run_id: str, print_: str, *, ttl: Optional[float] = None,
                 wait: Optional[float] = None, start: Optional[List[Any]] = None,
                 same: Optional[Callable[[Mapping[str, Any], List[Dict[str, Any]]], bool]] = None) -> None:
        self.journal = Journal(store, run_id, ttl=ttl, wait=wait)
        self.run_id = run_id
        self.replay = Replay(self.journal.open(print_, start, same))
        self._opened = self.journal._next  # (the entries it had: a run given again whole writes none)
        #: what the run took from the journal instead of doing it again: turns and tool results
        self.replayed_turns = 0
        self.replayed_results = 0
        #: turns read again by a background response's journaled id (live, not sent again)
        self.reattached_turns = 0
        self._at_most_once = set()  # type: Set[Tuple[int, str]]  # (turn, call id): results stored as they end
        #: (turn, call id): results stored with their turn (calls whose arguments did not parse): not again
        self.early = set()  # type: Set[Tuple[int, str]]
        #: (turn, call id): calls of idempotent tools started and not finished (their results may wait, ``QUICK``)
        self._idempotent = set()  # type: Set[Tuple[int, str]]
        #: the tool time of the results kept since the last request (``QUICK`` for one that must not wait past the
        #: next; counted from the request on even when a write took some of them since: at most too high)
        self._kept_seconds = 0.0
        #: the turns whose calls the journal holds a start or a result of
        self._journaled_calls = {key[0] for key in self.replay.started} | {key[0] for key in self.replay.results}
        # (the last turn's route as items, its text): a run's turns mostly share one route
        self._route = ((), "{}")  # type: Tuple[Tuple[Tuple[str, Any], ...], str]

    # what was journaled
    def turn(self, number: int) -> Optional[Dict[str, Any]]:
        return self.replay.turns[number] if number < len(self.replay.turns) else None

    def result(self, turn: int, call_id: str) -> Optional[Dict[str, Any]]:
        entry = self.replay.results.get((turn, call_id))
        return dict(entry["item"]) if entry is not None else None

    def replaying(self, turn: int) -> bool:
        """Whether the journal holds a call or a result of turn ``turn`` (else ``result`` and ``interrupted``
        say None and False for each of its calls: a live turn's are not asked one by one)."""
        return turn in self._journaled_calls

    def interrupted(self, turn: int, call_id: str) -> bool:
        return (turn, call_id) in self.replay.started and (turn, call_id) not in self.replay.results

    def edited_arguments(self, turn: int, call_id: str) -> Optional[Dict[str, Any]]:
        """The arguments a decision gave a call instead of the model's when it last started (its ``call`` entry
        keeps them when they were edited, and their digest is the one it ran with), else None."""
        entry = self.replay.started.get((turn, call_id))
        arguments = entry.get("arguments") if entry is not None else None
        if type(arguments) is not dict or entry.get("digest") != arguments_digest(arguments):
            return None
        return dict(arguments)

    def handed_back(self, turn: int, call_id: str) -> bool:
        """Whether a run handed this interrupted call back (``stop == "approval"``, the call in ``pending``) after
        its latest start: a decision given now is about running it again.  A call started again on a decision
        and interrupted again has not been handed back since (the decision was for the start before)."""
        shown = self.replay.handed_back.get(call_id)
        return shown is not None and shown > self.replay.started_at.get((turn, call_id), -1)

    def awaiting(self, turn: Optional[int] = None) -> List[str]:
        """The ids of the calls the run stopped for approval on, when that is where it stopped (its last entry
        but the ``done``): they take ``decisions`` under the run's ``run_id``.  ``turn``: only if they are that
        turn's."""
        awaiting = self.replay.awaiting
        if awaiting is None or (turn is not None and awaiting[0] != turn):
            return []
        return list(awaiting[1])

    def decided_before(self, call_id: str, resumed: bool) -> Optional[int]:
        """When the run waits for approval (``awaiting``) on a call under ``call_id`` and decided another call
        under that id before, the turn of that call (-1: the saved state's, when the run began by resuming its
        waiting calls, ``resumed``); else None.  A decision by id given now cannot tell the two apart."""
        awaiting = self.replay.awaiting
        if awaiting is None or call_id not in awaiting[1]:
            return None
        earlier = sorted(t for t in self.replay.handed_back_turns.get(call_id, ()) if t != awaiting[0])
        if resumed and awaiting[0] != -1:
            earlier.insert(0, -1)
        return earlier[0] if earlier else None

    def discard(self) -> None:
        """The run never started (refused while it was being set up): the claim let go, nothing stored (a new
        run's header neither)."""
        with self.journal._lock:
            self.journal._kept = []
        self.journal.close()

    def unsettled(self) -> Dict[Tuple[str, str], List[str]]:
        """The calls journaled as timed out and maybe still taking effect (results ``unsettled``), whose outcome a
        resumed run cannot learn: (tool name, arguments digest) -> their call ids, every one (two calls of one
        turn with the same arguments may both have timed out)."""
        out = {}  # type: Dict[Tuple[str, str], List[str]]
        for key, entry in self.replay.results.items():
            started = self.replay.started.get(key)
            if entry.get("unsettled") is True and started is not None:
                arguments = self._started_arguments(key, started)
                digest = str(started.get("digest")) if arguments is None else repeat_digest(arguments)
                out.setdefault((str(started.get("name")), digest), []).append(key[1])
        return out

    def _started_arguments(self, key: Tuple[int, str], started: Mapping[str, Any]) -> Any:
        """The arguments a journaled call started with (edited ones, else its turn's call's), when they match the
        digest it started with; None when they cannot be found."""
        arguments = started.get("arguments")
        if arguments is None:
            turn = self.turn(key[0])
            message = turn.get("message") if isinstance(turn, Mapping) else None
            items = message.get("content_items") if isinstance(message, Mapping) else None
            for item in items if isinstance(items, list) else ():
                if isinstance(item, Mapping) and item.get("type") == "tool_call" and item.get("tool_call_id") == key[1]:
                    arguments = item.get("arguments")
                    break
        if arguments is None or started.get("digest") != arguments_digest(arguments):
            return None
        return arguments

    def interrupted_ids(self) -> List[str]:
        return [call_id for key, call_id in [(k, k[1]) for k in self.replay.started] if key not in self.replay.results]

    # what goes in
    def request(self, turn: int) -> None:
        """A model request (turn ``turn``) is about to go out: the results kept are stored first, unless they are
        all results of idempotent tools that took less than ``QUICK`` seconds together: those go with the next
        write (the turn's answer, a background response's id, a start, the end), and a crash before it runs
        them again (at least once).  A request in flight needs no entry: a resume sends it again; the header
        waits for the turn.  StoreError when another worker took the run over (as the lease thread saw, or
        ``Journal.held`` finds for a lease that thread is late with)."""
        self.journal.held()  # (another worker took the run over: it sends this request, not this one)
        if self._kept_seconds >= QUICK:
            self.journal.flush()
        self._kept_seconds = 0.0  # (those kept now are stored with the turn's answer, before any result comes)

    def answered(self, turn: int, message: Mapping[str, Any], cost: Optional[float],
                 route: Optional[Mapping[str, Any]], results: Sequence[Tuple[str, Mapping[str, Any]]] = (),
                 cut: Optional[float] = None) -> None:
        """The turn stored now; ``results``: (call id, result item) of its calls answered with it (those whose
        arguments did not parse), in the same write; ``cut``: what a Budget counted for the turn's attempts cut
        after the provider took them (None: none was)."""
        self.journal.keep(_turn_text(turn, message if type(message) is dict else dict(message), cost,
                                     self._route_text(route), cut))
        for call_id, item in results:
            kept = dict(item)
            self.replay.results[(turn, call_id)] = {"item": kept}
            self.early.add((turn, call_id))
            self.journal.keep(_result_text(turn, call_id, kept, 0.0))
        self.journal.flush()

    def _route_text(self, route: Optional[Mapping[str, Any]]) -> Any:
        """The route's JSON text (``_turn_text`` writes it as it is): the last turn's again when the route has the
        same keys in the same order with the same text values (the same text), else encoded (a dict)."""
        items = tuple(route.items()) if route else ()
        if items == self._route[0]:
            return _Text(self._route[1])
        kept = dict(items)
        if all(type(value) is str for _, value in items):
            self._route = (items, _ENCODE(kept))
        return kept

    def starting(self, turn: int, calls: Sequence[Tuple[Mapping[str, Any], bool, Optional[Mapping[str, Any]]]]
                 ) -> None:
        """The calls about to run, each with whether it must run at most once (``@tool(idempotent=False)``) and
        the arguments a decision gave it instead of the model's (None: the model's): those that must run at most
        once are stored as started now, in one write, before any runs, with the digest of the arguments they run
        with (and those arguments when edited); the others need no entry: a call with no result journaled runs
        again on resume."""
        once = [(call, edited) for call, at_most_once, edited in calls if at_most_once]
        if len(once) < len(calls):
            self._idempotent.update((turn, call["tool_call_id"]) for call, at_most_once, _ in calls if not at_most_once)
        if not once:
            return
        for call, edited in once:
            self._at_most_once.add((turn, call["tool_call_id"]))
            arguments = call.get("arguments") if edited is None else dict(edited)
            self.journal.keep(_call_text(turn, call["tool_call_id"], call.get("name"), arguments_digest(arguments),
                                         arguments if edited is not None else None))
        self.journal.flush()

    def finished(self, turn: int, call_id: str, item: Mapping[str, Any], seconds: float,
                 unsettled: bool = False) -> None:
        """A call's result; ``unsettled``: a call that must run at most once timed out and may still take effect
        (its result says so; a resumed run does not let a call repeating it run: ``unsettled()``)."""
        key = (turn, call_id)
        if key in self.early:  # stored with its turn already
            return
        kept = dict(item)
        self.replay.results[key] = {"item": kept}
        if unsettled:
            fields = {"turn": turn, "id": call_id, "item": kept, "seconds": round(seconds, 6), "unsettled": True,
                      "k": "result"}
            try:
                text = _ENCODE(fields)
            except TypeError:
                text = _with_bytes(fields, "item")
        else:
            text = _result_text(turn, call_id, kept, round(seconds, 6))
        self.journal.keep(text)
        if key in self._at_most_once:  # its result stored as it ends (with those kept before it)
            self._at_most_once.discard(key)
            self.journal.flush()
            return
        # (an idempotent tool's result that took under QUICK seconds may wait past the next request; a result holding
        # a lone surrogate is stored before the request, which refuses it, as it always was)
        if key in self._idempotent and not unsettled and 0.0 <= seconds < QUICK and (
                text.isascii() or not _SURROGATE.search(text)):
            self._idempotent.discard(key)
            self._kept_seconds += seconds
        else:
            self._idempotent.discard(key)
            self._kept_seconds = QUICK

    def attachment(self, turn: int) -> Optional[Dict[str, Any]]:
        """The ``attach`` entry of turn ``turn``'s request when it was in flight with a background response's
        id (no answer journaled for it): ``id``, ``wire``, ``route``; else None."""
        flight = self.replay.in_flight
        if flight is None or flight.get("turn") != turn or not isinstance(flight.get("attach"), str):
            return None
        entry = flight.get("attached")
        return dict(entry) if isinstance(entry, dict) else {"id": flight["attach"]}

    def attached(self, turn: int, resource_id: str, wire: str, route: Optional[Mapping[str, Any]]) -> None:
        """Turn ``turn``'s request is the background response (or interaction) ``resource_id`` on ``wire``
        at ``route`` (model, client type, host: never a URL or a query)."""
        kept = {k: route.get(k) for k in ("model", "client_type", "host")} if route else {}
        self.journal.write("attach", turn=turn, id=resource_id, wire=wire, route=kept)
        if self.replay.in_flight is None or self.replay.in_flight.get("turn") != turn:
            self.replay.in_flight = {"k": "request", "turn": turn}
        self.replay.in_flight["attach"] = resource_id
        self.replay.in_flight["attached"] = {"k": "attach", "turn": turn, "id": resource_id, "wire": wire,
                                             "route": kept}

    def detached(self, turn: int, resource_id: str, reason: str) -> None:
        """The journaled response of turn ``turn`` cannot be re-attached (``reason``): it is sent again."""
        self.journal.write("detach", turn=turn, id=resource_id, reason=reason)
        if self.replay.in_flight is not None:
            self.replay.in_flight.pop("attach", None)
            self.replay.in_flight.pop("attached", None)

    def done(self, stop: Optional[str], pending: Sequence[Mapping[str, Any]]) -> None:
        """The run ended: its ``done`` entry (with what was kept) stored and the run released, in one write; a run
        that ended before as it ends now, given again from its journal alone, is only released (the journal does
        not grow by an entry each time its result is asked for again)."""
        ids = [c.get("tool_call_id") for c in pending]
        ended = self.replay.last  # (the journal's last entry: where a stop for approval handed its calls back)
        with self.journal._lock:
            unchanged = not self.journal._kept and self.journal._next == self._opened
        if unchanged and ended is not None and ended.get("k") == "done" and ended.get("stop") == stop \
                and ended.get("pending") == ids:
            self.journal.close()
            return
        self.journal.finish("done", stop=stop, pending=ids)

    def close(self) -> None:
        self.journal.close()
