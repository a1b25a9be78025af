"""What every batch engine shares: the ``Backend`` base, the ``Outcome`` of one result, the result-line
reader and the entry encoder (the engines import this, never the package, so there is no import circle)."""

import calendar
import json
import re
from typing import Any, Callable, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple

from ...types import HttpRequest

__all__ = ["Backend", "TERMINAL", "Outcome", "outcomes", "dumps_entry", "Note", "FIND_PAGES", "FIND_BEFORE",
           "FIND_AFTER", "rfc3339", "TAG_ROOM"]

#: agenthub's states of one remote batch: pending, running, cancelling (or unknown: a provider status agenthub does
#: not know, never taken as ended), then one of these
TERMINAL = frozenset(["completed", "failed", "expired", "cancelled"])

#: finding a batch whose create call was cut short (``Backend.find``): at most this many pages of the engine's
#: list of batches are read; a batch counts when the engine says it was created from ``FIND_BEFORE`` seconds
#: before the create call began (clocks differ) to ``FIND_AFTER`` seconds after (an upload takes a while)
FIND_PAGES = 20
FIND_BEFORE = 600.0
FIND_AFTER = 3600.0

#: what a tag takes in front of a custom id of an engine that tags them (``Backend.tagged``): 8 hex digits
#: and a dash
TAG_ROOM = 9

#: ``note(fields)``: a create call's progress, saved in the state file before the call goes on (the uploaded
#: input file's id before the batch is created on it)
Note = Callable[[Dict[str, Any]], None]

#: one result: (custom_id, "ok" | "error" | "not_run" | "bad", payload).  ok: the answer's JSON body;
#: error: (HTTP status or None, the error body); not_run: why (expired, cancelled); bad: why the
#: item could not be read (custom_id "")
Outcome = Tuple[str, str, Any]


class Backend(object):
    """One provider's batch engine.  Subclasses set the limits and implement the calls."""

    #: the name in a state file and in output rows' ``backend``
    name = ""
    #: at most this many requests, and this many bytes of request entries, in one remote batch
    max_requests = 0
    max_bytes = 0
    #: custom ids this engine accepts (a row id that does not match gets one made from its line number)
    custom_id = re.compile(r"\A.{1,64}\Z", re.S)
    #: the kinds of request it takes: "chat", "responses", "embeddings", "messages", "generate"
    apis = ()  # type: Tuple[str, ...]
    #: every custom id sent carries a tag unique to its create call (``<tag>-<custom id>``, ``tag_entries``):
    #: an engine whose batches carry nothing of the caller's (Anthropic), where a batch found for a cut-short
    #: create call may be another job's; its results prove which (a result without the tag is never applied)
    tagged = False

    def tag_entries(self, entries: List[bytes], tag: str) -> List[bytes]:
        """``entries`` (as ``entry`` made them) with ``tag`` in front of each custom id (a tagging engine's)."""
        return entries

    def why_not(self, api: str) -> Optional[str]:
        """Why this engine cannot take ``api`` requests (None: it can)."""
        if api in self.apis:
            return None
        return "the {} batch API takes no {} requests".format(self.name, api)

    def entry(self, custom_id: str, request: HttpRequest, api: str) -> Dict[str, Any]:
        """The request entry for one row (pure): a JSONL line or an element of a request list."""
        raise NotImplementedError

    def weight(self, entry: Mapping[str, Any]) -> int:
        """What an entry counts against a limit besides requests and bytes (OpenAI embeddings inputs)."""
        return 0

    max_weight = None  # type: Optional[int]

    def split(self, entries: Sequence[Tuple[str, bytes, int]]) -> List[List[int]]:
        """Indexes of ``entries`` ((custom id, encoded entry, weight)) per remote batch, in order, each
        within the limits.  One entry larger than ``max_bytes`` still gets a batch of its own (the
        provider then refuses it, with its own words)."""
        chunks = []  # type: List[List[int]]
        current = []  # type: List[int]
        size = weight = 0
        room = TAG_ROOM if self.tagged else 0  # (the tag each entry gets when its batch is created)
        for index, (_, data, extra) in enumerate(entries):
            over = (len(current) >= self.max_requests or size + len(data) + room > self.max_bytes
                    or (self.max_weight is not None and weight + extra > self.max_weight))
            if current and over:
                chunks.append(current)
                current, size, weight = [], 0, 0
            current.append(index)
            size += len(data) + room
            weight += extra
        if current:
            chunks.append(current)
        return chunks

    # -- calls (over a Wire; ``remote`` is what ``create`` returned, as saved in the state file) ------
    def create(self, wire: Any, model: str, api: str, entries: List[bytes], name: str,
               request: HttpRequest, note: Optional[Note] = None) -> Dict[str, Any]:
        """Submit one batch; the remote ids to save (no key, no secret).  ``name`` is unique to this call
        (Gemini's display name); ``note`` saves what ``find`` needs before the call that creates the batch."""
        raise NotImplementedError

    def find(self, wire: Any, api: str, marker: Mapping[str, Any], known: Any) -> Optional[Dict[str, Any]]:
        """The batch an earlier ``create`` made when its process stopped before the answer was saved (the
        remote ids ``create`` would have returned), or None when that call created none.  ``marker``: what
        was saved before the call (``at``: its Unix time, ``name``, ``requests``: the request count) and
        what ``note`` added; ``known``: the remote ids the job holds already (never the one found)."""
        raise NotImplementedError

    def retrieve(self, wire: Any, remote: Mapping[str, Any]) -> Dict[str, Any]:
        """``{"status": the provider's word, "state": agenthub's, "counts": {...}, ...}``."""
        raise NotImplementedError

    def results(self, wire: Any, remote: Mapping[str, Any], info: Mapping[str, Any]) -> Iterator[Outcome]:
        raise NotImplementedError

    def cancel(self, wire: Any, remote: Mapping[str, Any]) -> Dict[str, Any]:
        raise NotImplementedError


def outcomes(items: Iterable[Any], parse: Callable[[Any], Outcome]) -> Iterator[Outcome]:
    """``parse`` of each result item; an item that does not parse (not JSON, no custom id, an unknown
    shape) is ``("", "bad", why)``: counted and passed over, the others still come through."""
    from ...errors import StreamProtocolError
    from ._wire import BadLine

    for item in items:
        if isinstance(item, BadLine):
            yield "", "bad", item.reason
            continue
        try:
            yield parse(item)
        except StreamProtocolError as exc:
            yield "", "bad", str(exc)
        except (TypeError, AttributeError, KeyError, ValueError) as exc:  # a shape no parser foresaw: this item
            yield "", "bad", "a result item of an unexpected shape ({}: {})".format(type(exc).__name__, exc)


def dumps_entry(entry: Mapping[str, Any]) -> bytes:
    """One entry as a JSON Lines line (compact UTF-8, newline included)."""
    return (json.dumps(entry, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")


_RFC3339 = re.compile(r"\A([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt ]([0-9]{2}):([0-9]{2}):([0-9]{2})(\.[0-9]+)?"
                      r"(?:[Zz]|([+-])([0-9]{2}):([0-9]{2}))\Z")


def rfc3339(value: Any) -> Optional[float]:
    """An RFC 3339 time (``2026-12-01T12:00:00.123456Z``, an offset) or Unix seconds as Unix seconds; None
    for anything else."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value) if value == value and abs(value) < 1e11 else None
    match = _RFC3339.match(value) if isinstance(value, str) else None
    if match is None:
        return None
    year, month, day, hour, minute, second = (int(match.group(i)) for i in range(1, 7))
    if not (1 <= month <= 12 and 1 <= day <= 31 and hour < 24 and minute < 60 and second <= 60):
        return None
    stamp = calendar.timegm((year, month, day, hour, minute, second, 0, 0, 0)) + float(match.group(7) or 0)
    if match.group(8):
        offset = int(match.group(9)) * 3600 + int(match.group(10)) * 60
        stamp -= offset if match.group(8) == "+" else -offset
    return float(stamp)


def listed(page: Callable[[Optional[str]], Tuple[List[Any], Optional[str]]], created: Callable[[Any], Any],
           marker: Mapping[str, Any], client: str) -> Iterator[Tuple[Any, Optional[float]]]:
    """(batch, its creation time or None) of an engine's list of batches, newest first, page by page
    (``page(cursor)`` -> (items, the next cursor or None)), until a page holds only batches created before
    ``marker["at"] - FIND_BEFORE``.  Past ``FIND_PAGES`` pages: a ConfigError (the batch a cut-short create
    may have made was not ruled out, and creating another could pay for it twice)."""
    from ...errors import ConfigError

    oldest = float(marker["at"]) - FIND_BEFORE
    cursor = None  # type: Optional[str]
    for _ in range(FIND_PAGES):
        items, cursor = page(cursor)
        older = bool(items)
        for item in items:
            when = rfc3339(created(item) if isinstance(item, dict) else None)
            older = older and when is not None and when < oldest
            yield item, when
        if not cursor or older:
            return
    raise ConfigError("{}: more than {} pages of batches were created since this job's create call was cut short: "
                      "agenthub cannot tell whether that call created one (nothing was sent again; submit with "
                      "another state_path to send its rows anew)".format(client, FIND_PAGES))
