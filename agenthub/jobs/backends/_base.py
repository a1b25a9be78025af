"""What every batch engine shares: the ``Backend`` base, the ``Outcome`` of one result, the result-line
reader and the entry encoder (the engines import this, never the package, so there is no import circle)."""

import json
import re
from typing import Any, Callable, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple

from ...types import HttpRequest

__all__ = ["Backend", "TERMINAL", "Outcome", "outcomes", "dumps_entry"]

#: agenthub's states of one remote batch: pending, running, cancelling, then one of these
TERMINAL = frozenset(["completed", "failed", "expired", "cancelled"])

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
    custom_id = re.compile(r"^.{1,64}$", re.S)
    #: the kinds of request it takes: "chat", "responses", "embeddings", "messages", "generate"
    apis = ()  # type: Tuple[str, ...]

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
        for index, (_, data, extra) in enumerate(entries):
            over = (len(current) >= self.max_requests or size + len(data) > self.max_bytes
                    or (self.max_weight is not None and weight + extra > self.max_weight))
            if current and over:
                chunks.append(current)
                current, size, weight = [], 0, 0
            current.append(index)
            size += len(data)
            weight += extra
        if current:
            chunks.append(current)
        return chunks

    # -- calls (over a Wire; ``remote`` is what ``create`` returned, as saved in the state file) ------
    def create(self, wire: Any, model: str, api: str, entries: List[bytes], name: str,
               request: HttpRequest) -> Dict[str, Any]:
        """Submit one batch; the remote ids to save (no key, no secret)."""
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


def dumps_entry(entry: Mapping[str, Any]) -> bytes:
    """One entry as a JSON Lines line (compact UTF-8, newline included)."""
    return (json.dumps(entry, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
