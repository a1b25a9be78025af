"""History across protocols: what the target of a turn cannot read is converted on the way out.

A conversation may move between protocols: a fallback answers on another provider, or ``set_history``
is given messages another client produced.  Each protocol marks its own opaque data in ``fidelity``
(a Claude thinking signature, an OpenAI encrypted reasoning item, a Gemini thought signature); sent
to another protocol, that data is at best ignored and at worst a 400.  So, before every request,
``for_dialect`` makes a converted copy of the messages for the target dialect (the stored history is
never touched: fidelity stays byte for byte as it came, and a later turn back on the first protocol
sends it again):

1. A thinking or inline_thinking item whose fidelity carries another protocol's marks and none the
   target reads is dropped (``config["foreign_thinking"] = "text"``: a foreign thinking item with text
   goes out as a plain text item instead).  An item with no marks at all (plain reasoning text) is left
   to the target dialect, as before.
2. A compaction item (an opaque server-side summary; ``fidelity["format"]`` names its wire) that the target
   cannot read is dropped, with a warning (the messages before it then go in full).
3. A tool_call id the target refuses (Anthropic and Bedrock: ``[A-Za-z0-9_-]``, at most 64 characters on
   Bedrock; Chat Completions: at most 40 characters; Responses: at most 64) is rewritten to
   ``call_<24 hex digits of its SHA-256>`` on the call and on its result alike, so the pair still matches; every
   other id is sent byte for byte.
   An id the target's own protocol issued (a tool_call whose fidelity carries the family's mark: an
   openai-chat server's long id is marked ``issued_id``) goes back to that protocol as it came.
   Where a request takes each id once (Anthropic, Bedrock, Responses, Interactions: their dialect records'
   ``unique_call_ids``), a call whose id an earlier call took (a server numbering its calls from 0 each turn:
   Kimi's ``functions.<name>:0``) goes out as ``call_<24 hex digits of the SHA-256 of the id, a NUL and its
   count>``, and so do the results that follow it.
4. Claude's redacted thinking moves between Claude's two wires: Anthropic's ``redacted_thinking`` ``data``
   (fidelity ``redacted_data``) and Bedrock Converse's ``reasoningContent.redactedContent`` (fidelity
   ``redacted_content``, a blob the JSON wire carries as base64) are the same bytes, base64 text on both, so an
   item carrying one goes to the other wire under that wire's key (the value as it came; one that is not
   base64 is dropped as any foreign mark is, Bedrock could not decode it).
5. Nothing else changes: order (each tool_result still follows its call), text, tool arguments, media.

Apart from these, ``results_next_to_calls`` (for the wires that take a call's results only in the user turn right
after it, their records' ``results_next``: Anthropic, Gemini and its Interactions API, Chat Completions) joins the user messages that follow an
assistant message into one when one after the first holds tool results (a text typed while the tools ran before
them, or the results given one message each, as Chat Completions' tool messages come: Gemini takes all of a
function call turn's responses in the one turn after it): each wire then sends the results first, as it does
within one message (Bedrock joins consecutive user messages itself).

The marks, what each dialect reads and its tool_call id rule are facts of its record in the dialect index
(``agenthub.providers.DIALECTS``: ``marks``, ``reads``, ``call_ids``, ``unique_call_ids``, ``results_next``); ``MARKS`` and ``READS`` below are read from it.
"""

import base64
import binascii
import hashlib
import logging
from operator import is_ as _is
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from .providers import ALL_FAMILIES, ANY_ID, DIALECTS
from .validate import CACHE_BREAKPOINT

__all__ = ["MARKS", "READS", "family_of", "for_dialect", "for_dialect_resumed", "FOREIGN_THINKING",
           "results_next_to_calls"]

logger = logging.getLogger("agenthub")

#: the values ``config["foreign_thinking"]`` takes
FOREIGN_THINKING = ("drop", "text")

#: fidelity keys that mark a thinking / inline_thinking / compaction item as one protocol family's, checked
#: in this order (the first family with a mark wins): every dialect's own families (``Dialect.marks`` in the
#: index ``agenthub.providers.DIALECTS``), then the families several dialects share (``claude``'s signature:
#: a Responses reasoning item may also carry "signature")
MARKS = tuple([mark for record in DIALECTS.values() for mark in record.marks if mark[0] == record.name]
              + [mark for record in DIALECTS.values() for mark in record.marks if mark[0] != record.name])

#: dialect -> the families whose marked items it reads (``Dialect.reads``)
READS = {name: tuple(family for family, _ in MARKS) if record.reads == ALL_FAMILIES else record.reads
         for name, record in DIALECTS.items()}

_CONVERTED = ("thinking", "inline_thinking", "compaction")

#: Claude's redacted thinking on its two wires: target dialect -> (the other wire's fidelity key, the target's own)
_REDACTED = {"bedrock": ("redacted_data", "redacted_content"), "anthropic": ("redacted_content", "redacted_data")}


def _redacted_for(item: Mapping[str, Any], keys: Tuple[str, str]) -> Mapping[str, Any]:
    """``item`` with the other Claude wire's redacted thinking under the target's key (``item`` itself when it
    carries none, or a value that is not base64)."""
    fidelity = item.get("fidelity")
    other, own = keys
    if not isinstance(fidelity, Mapping) or other not in fidelity or own in fidelity:
        return item
    data = fidelity[other]
    try:
        if not isinstance(data, str) or not data or not base64.b64decode(data, validate=True):
            return item
    except (binascii.Error, ValueError):
        return item
    moved = {key: value for key, value in fidelity.items() if key != other}
    moved[own] = data
    return dict(item, fidelity=moved)

#: a compaction item's ``fidelity["format"]`` (providers._common.COMPACTION_FORMAT) -> its family
_COMPACTION_FAMILIES = {record.compaction: name for name, record in DIALECTS.items() if record.compaction}


def family_of(item: Mapping[str, Any]) -> Optional[str]:
    """The protocol family whose marks the item's fidelity carries (None: no marks).  A compaction item
    always has one: the wire format its fidelity names ("unknown" when it names none)."""
    fidelity = item.get("fidelity")
    if item.get("type") == "compaction":
        fmt = fidelity.get("format") if isinstance(fidelity, Mapping) else None
        return _COMPACTION_FAMILIES.get(fmt, fmt) if isinstance(fmt, str) and fmt else "unknown"
    if not fidelity or not isinstance(fidelity, Mapping):
        return None
    for family, keys in MARKS:
        for key in keys:
            if key in fidelity:
                return family
    return None


def _id_for(dialect: str, tool_call_id: str) -> str:
    record = DIALECTS.get(dialect)
    if record is None or not isinstance(tool_call_id, str) or record.call_id_ok(tool_call_id):
        return tool_call_id
    return "call_" + hashlib.sha256(tool_call_id.encode("utf-8", "surrogatepass")).hexdigest()[:24]


def for_dialect(messages: Sequence[Mapping[str, Any]], dialect: str,
                foreign_thinking: str = "drop") -> Tuple[List[Mapping[str, Any]], Dict[str, int]]:
    """``messages`` as ``dialect`` can read them, and what was changed (counts by kind of change).

    Messages and items that need no change are the caller's own objects (not copied); a changed
    message is a new dict with a new ``content_items`` list, so the caller's history is never touched."""
    reads = READS.get(dialect, ())
    changed = {}  # type: Dict[str, int]
    own = _own(messages, reads) if dialect in DIALECTS and DIALECTS[dialect].call_ids != ANY_ID else set()
    out = []  # type: List[Mapping[str, Any]]
    _convert(messages, dialect, reads, own, foreign_thinking, changed, out, set(), _taken(dialect))
    return out, changed


def _taken(dialect: str) -> Optional[Tuple[Dict[str, int], Dict[str, str]]]:
    """For a dialect whose ids must be unique in a request: (tool_call id -> how many calls took it so far, id ->
    the id its latest call goes out as), empty; None for the others."""
    record = DIALECTS.get(dialect)
    return ({}, {}) if record is not None and record.unique_call_ids else None


def for_dialect_resumed(messages: Sequence[Mapping[str, Any]], dialect: str, foreign_thinking: str,
                        prior: Any) -> List[Mapping[str, Any]]:
    """``for_dialect(messages, dialect, foreign_thinking)[0]``, the head of ``messages`` that is the client's
    previous call's history, unchanged (``prior``: a ``providers._common.Prior``), taken as that call converted
    it, unless a tool call the new messages hold makes one of its ids read otherwise; ``prior.head`` is set to
    how many leading messages of the result are that call's (the dialect starts from them)."""
    reads = READS.get(dialect, ())
    checks_own = dialect in DIALECTS and DIALECTS[dialect].call_ids != ANY_ID
    context = (dialect, foreign_thinking)
    stash = prior.stash.get("foreign")
    start = 0
    if stash is not None:
        old_context, old_inputs, old_out, own, rewritable, taken = stash
        count = len(old_inputs)
        if count <= prior.same and count <= len(messages) and old_context == context \
                and all(map(_is, messages, old_inputs)):
            new_own = _own(messages[count:], reads) if checks_own else set()
            if not (new_own & rewritable):  # no id of the head reads otherwise now
                start, own, out, rewritable = count, own | new_own, list(old_out), set(rewritable)
                taken = None if taken is None else (dict(taken[0]), dict(taken[1]))
    if not start:
        own = _own(messages, reads) if checks_own else set()
        out, rewritable, taken = [], set(), _taken(dialect)
    prior.head = len(out)
    changed = {}  # type: Dict[str, int]
    _convert(messages[start:], dialect, reads, own, foreign_thinking, changed, out, rewritable, taken)
    if "compaction_dropped" in changed:  # a warning: it comes on every call, as it did
        prior.stash.pop("foreign", None)
    else:
        prior.stash["foreign"] = (context, list(messages), list(out), frozenset(own), frozenset(rewritable),
                                  None if taken is None else (dict(taken[0]), dict(taken[1])))
    return out




def results_next_to_calls(messages: Sequence[Mapping[str, Any]]) -> Sequence[Mapping[str, Any]]:
    """``messages``, or (when some user messages after an assistant message hold tool results after another user
    message) a copy where each such run of user messages is one message: its items in order, each
    message's ``cache_breakpoint`` kept on its last item, the other keys the run's first message's.  The caller's
    messages are never changed; ``messages`` itself comes back when there is nothing to join."""
    out = None  # type: Optional[List[Mapping[str, Any]]]
    index, count = 0, len(messages)
    while index < count:
        message = messages[index]
        end = index + 1
        if message.get("role") == "user" and index and messages[index - 1].get("role") == "assistant":
            while end < count and messages[end].get("role") == "user":
                end += 1
        if end - index > 1 and _results_later(messages[index:end]):
            if out is None:
                out = list(messages[:index])
            out.append(_joined(messages[index:end]))
        elif out is not None:
            out.extend(messages[index:end])
        index = end
    return messages if out is None else out


def _results_later(run: Sequence[Mapping[str, Any]]) -> bool:
    """Whether a message of ``run`` after its first holds a tool result."""
    for message in run[1:]:
        if any(item.get("type") == "tool_result" for item in message.get("content_items") or ()):
            return True
    return False


def _joined(run: Sequence[Mapping[str, Any]]) -> Dict[str, Any]:
    joined = {key: value for key, value in run[0].items() if key != CACHE_BREAKPOINT}
    items = []  # type: List[Any]
    for message in run:
        own = list(message.get("content_items") or ())
        if message.get(CACHE_BREAKPOINT) is True and own:
            own[-1] = dict(own[-1], **{CACHE_BREAKPOINT: True})
        items.extend(own)
    joined["content_items"] = items
    return joined


def _own(messages: Sequence[Mapping[str, Any]], reads: Sequence[str]) -> set:
    """The ids of tool calls the target's protocol issued: never rewritten for it (call and result)."""
    own = set()
    for message in messages:
        for item in message.get("content_items") or ():
            if item.get("type") == "tool_call" and item.get("fidelity") and family_of(item) in reads \
                    and isinstance(item.get("tool_call_id"), str):
                own.add(item["tool_call_id"])
    return own


def _convert(messages: Sequence[Mapping[str, Any]], dialect: str, reads: Sequence[str], own: Any,
             foreign_thinking: str, changed: Dict[str, int], out: List[Mapping[str, Any]], rewritable: set,
             taken: Optional[Tuple[Dict[str, int], Dict[str, str]]] = None) -> None:
    """``messages`` converted onto ``out``; ``rewritable`` gains every id the dialect would rewrite; ``taken``
    (``_taken``): the calls' ids so far, updated (a call whose id an earlier call took goes out as another)."""
    redacted = _REDACTED.get(dialect)
    for message in messages:
        items = message.get("content_items") or []
        new_items = None  # type: Optional[List[Any]]
        for index, item in enumerate(items):
            replacement = item  # type: Any
            kind = item.get("type")
            if redacted is not None and (kind == "thinking" or kind == "text") and item.get("fidelity"):
                replacement = _redacted_for(item, redacted)
                if replacement is not item:
                    changed["redacted_moved"] = changed.get("redacted_moved", 0) + 1
            if kind in _CONVERTED:
                family = family_of(replacement)
                if family is not None and family not in reads:
                    if kind == "thinking" and foreign_thinking == "text" and item.get("thinking"):
                        replacement = {"type": "text", "text": item["thinking"]}
                        changed["thinking_as_text"] = changed.get("thinking_as_text", 0) + 1
                    else:
                        replacement = None
                        what = "compaction_dropped" if kind == "compaction" else "thinking_dropped"
                        changed[what] = changed.get(what, 0) + 1
                        if kind == "compaction":
                            logger.warning("%s: a compaction item from %s cannot be read here and is not sent (the "
                                           "messages before it go in full)", dialect,
                                           (item.get("fidelity") or {}).get("format") or "another protocol")
            elif kind in ("tool_call", "tool_result"):
                old_id = item.get("tool_call_id")
                rewritten = _id_for(dialect, old_id)
                if rewritten != old_id:
                    rewritable.add(old_id)
                new_id = old_id if old_id in own else rewritten
                if taken is not None and isinstance(old_id, str):
                    counts, latest = taken
                    if kind == "tool_call" and message.get("role") == "assistant":
                        count = counts[old_id] = counts.get(old_id, 0) + 1
                        if count > 1:  # (the same history gives the same ids: the n-th call of an id, hashed)
                            latest[old_id] = "call_" + hashlib.sha256("{}\x00{}".format(old_id, count).encode(
                                "utf-8", "surrogatepass")).hexdigest()[:24]
                    new_id = latest.get(old_id, new_id)
                if new_id != item.get("tool_call_id"):
                    replacement = dict(item, tool_call_id=new_id)
                    changed["ids_rewritten"] = changed.get("ids_rewritten", 0) + 1
            if replacement is not item and new_items is None:
                new_items = list(items[:index])
            if new_items is not None and replacement is not None:
                new_items.append(replacement)
        if new_items is None:
            out.append(message)
        elif not new_items:  # nothing in it the target can read (foreign thinking alone): the message goes
            changed["messages_dropped"] = changed.get("messages_dropped", 0) + 1
        else:
            copy = dict(message)
            copy["content_items"] = new_items
            out.append(copy)
