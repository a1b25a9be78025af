"""Anthropic Message Batches: every request in the create call's body, results as JSON Lines.

Wire facts, from the guide (https://platform.claude.com/docs/en/build-with-claude/batch-processing)
and the API reference ("Create / Retrieve / Cancel a Message Batch", "Retrieve Message Batch
results"; the anthropic SDK's ``messages/batch_*`` types), copies read 2026-12-01:

- ``POST /v1/messages/batches {"requests": [{"custom_id", "params": <a Messages request>}]}``;
  ``custom_id`` matches ``^[a-zA-Z0-9_-]{1,64}$`` and is unique in the batch; ``params`` takes
  everything the Messages API takes (the live body, without ``stream``);
- a batch holds at most 100,000 requests or 256 MB, "whichever is reached first";
- ``GET /v1/messages/batches/{id}``: ``processing_status`` ``in_progress`` | ``canceling`` | ``ended``,
  ``request_counts`` ``{processing, succeeded, errored, canceled, expired}`` (zero until the whole batch
  ended), ``results_url`` once it ended, ``expires_at`` 24 hours after creation; results stay
  available 29 days;
- results: ``GET`` the ``results_url`` (``/v1/messages/batches/{id}/results``), one line per request,
  not in request order: ``{"custom_id", "result": {"type": "succeeded", "message": <Message>}}``, or
  ``{"type": "errored", "error": {"type": "error", "error": {"type", "message"}, "request_id"}}``, or
  ``{"type": "canceled"}`` / ``{"type": "expired"}`` (never ran);
- ``POST /v1/messages/batches/{id}/cancel``: the batch goes ``canceling``, then ``ended``;
- ``GET /v1/messages/batches?limit=&after_id=``: the workspace's batches, "most recently created batches are
  returned first" (``data``, ``has_more``, ``last_id``).  A batch carries no name or metadata of the
  caller's: one whose create call was cut short is found as the one batch of that many requests created
  while the call was in flight (several: agenthub cannot tell, and says so).  That one may be another
  job's, so every custom id agenthub sends carries a tag unique to its create call (``<8 hex>-<id>``): the
  results of a batch found that way show whose it is (``BatchJob.fetch`` applies none of another's).
"""

import re
from typing import Any, Dict, Iterator, List, Mapping, Optional, Tuple
from urllib.parse import quote

from ...errors import AgentHubError, ConfigError, StreamProtocolError
from ...types import HttpRequest
from ._base import FIND_AFTER, FIND_BEFORE, TAG_ROOM, Backend, Note, Outcome, listed, outcomes
from ._wire import Wire, join, same_origin

__all__ = ["ANTHROPIC", "AnthropicBatches", "STATES", "parse_line", "status_of"]

STATES = {"in_progress": "running", "canceling": "cancelling", "ended": "completed"}
_COUNTS = ("processing", "succeeded", "errored", "canceled", "expired")


class AnthropicBatches(Backend):
    name = "anthropic"
    max_requests = 100000
    max_bytes = 256 * 1000 * 1000
    custom_id = re.compile(r"\A[a-zA-Z0-9_-]{1,64}\Z")  # (\Z: "$" would let an id end in a newline)
    apis = ("messages",)
    tagged = True

    def entry(self, custom_id: str, request: HttpRequest, api: str) -> Dict[str, Any]:
        params = {key: value for key, value in (request.body or {}).items() if key != "stream"}
        return {"custom_id": custom_id, "params": params}

    def tag_entries(self, entries: List[bytes], tag: str) -> List[bytes]:
        head = b'{"custom_id":"'  # (how dumps_entry writes an entry of ``entry``: its custom id first)
        mark = head + tag.encode("ascii") + b"-"
        if len(mark) != len(head) + TAG_ROOM or not all(entry.startswith(head) for entry in entries):
            raise ValueError("not this engine's entries, or not an 8-character tag")
        return [mark + entry[len(head):] for entry in entries]

    def create(self, wire: Wire, model: str, api: str, entries: List[bytes], name: str,
               request: HttpRequest, note: Optional[Note] = None) -> Dict[str, Any]:
        data = b'{"requests":[' + b",".join(e.rstrip(b"\n") for e in entries) + b"]}"
        created = wire.json("POST", join(wire.endpoint.base_url, "/v1/messages/batches"), data=data,
                            headers={"Content-Type": "application/json"})
        batch_id = created.get("id") if isinstance(created, dict) else None
        if not isinstance(batch_id, str) or not batch_id:
            raise StreamProtocolError("{}: the new message batch came back without an id".format(wire.client_type),
                                      client=wire.client_type)
        return {"batch_id": batch_id}

    def find(self, wire: Wire, api: str, marker: Mapping[str, Any], known: Any) -> Optional[Dict[str, Any]]:
        """The one batch of ``marker["requests"]`` requests created while the cut-short call was in flight
        and not known to the job.  Those that ended show whose they are by their results' tags
        (``marker["tag"]``): one carrying the call's tag is taken, those carrying another are passed over.
        Several left: a ConfigError naming them (nothing is created again).  One left that has not ended may
        be another job's (a file split in two, each part submitted at once): ``BatchJob.fetch`` checks."""
        def page(after: Optional[str]) -> Tuple[List[Any], Optional[str]]:
            answer = wire.json("GET", join(wire.endpoint.base_url, "/v1/messages/batches?limit=100" + (
                "&after_id=" + quote(after, safe="") if after else "")))
            items = answer.get("data") if isinstance(answer, dict) else None
            if not isinstance(items, list):
                raise StreamProtocolError("{}: the list of message batches came back without data".format(
                    wire.client_type), client=wire.client_type)
            last = answer.get("last_id")
            return items, last if answer.get("has_more") is True and isinstance(last, str) and last else None

        at = float(marker["at"])
        candidates = []  # type: List[Dict[str, Any]]
        for item, when in listed(page, lambda item: item.get("created_at"), marker, wire.client_type):
            if not isinstance(item, dict) or when is None or not at - FIND_BEFORE <= when <= at + FIND_AFTER:
                continue
            counts = item.get("request_counts")
            total = sum(int(v) for v in (counts.values() if isinstance(counts, dict) else ())
                        if isinstance(v, int) and not isinstance(v, bool))
            if total == marker.get("requests") and isinstance(item.get("id"), str) and item["id"] not in known:
                candidates.append(item)
        tag = marker.get("tag")
        found = []  # type: List[str]  # (those that cannot tell yet)
        for item in candidates:
            verdict = self._whose(wire, item, tag) if tag else None
            if verdict is True:  # its results carry the call's tag: its batch
                return {"batch_id": item["id"]}
            if verdict is None:  # (False: they carry another's: not its batch)
                found.append(item["id"])
        if len(found) > 1:
            raise ConfigError("{}: this job's create call was cut short, and {} batches of {} requests were created "
                              "meanwhile ({}): agenthub cannot tell which, if any, is this job's (nothing was sent "
                              "again; cancel the ones that are, then submit with another state_path)".format(
                                  wire.client_type, len(found), marker.get("requests"),
                                  ", ".join(found[:5]) + (", ..." if len(found) > 5 else "")))
        return {"batch_id": found[0]} if found else None

    def _whose(self, wire: Wire, item: Mapping[str, Any], tag: str) -> Optional[bool]:
        """Whether the ended batch ``item`` is the one the create call tagged ``tag`` made: its first readable
        result carries the tag (True) or another (False); None when it cannot tell yet (not ended: no
        results; unreadable, or the call failed)."""
        if item.get("processing_status") != "ended":
            return None
        results = self.results(wire, {"batch_id": item["id"]}, {"results_url": item.get("results_url")})
        try:
            for number, (custom_id, outcome, _) in enumerate(results):
                if outcome != "bad":
                    return custom_id.startswith(tag + "-")
                if number >= 100:
                    break
        except AgentHubError:  # (results gone, a 404: nothing proved either way)
            return None
        finally:
            results.close()  # type: ignore[attr-defined]  # (the download stops at the line read)
        return None

    def retrieve(self, wire: Wire, remote: Mapping[str, Any]) -> Dict[str, Any]:
        url = join(wire.endpoint.base_url, "/v1/messages/batches/" + remote["batch_id"])
        return status_of(wire.json("GET", url), wire.client_type)

    def results(self, wire: Wire, remote: Mapping[str, Any], info: Mapping[str, Any]) -> Iterator[Outcome]:
        base = wire.endpoint.base_url
        url = info.get("results_url")
        if not isinstance(url, str) or not same_origin(url, base):
            # absent, or on another host: the key goes only to its own endpoint (the documented path then)
            url = join(base, "/v1/messages/batches/{}/results".format(remote["batch_id"]))
        lines = wire.lines(url, headers={"Accept": "application/binary"})
        for outcome in outcomes(lines, lambda line: parse_line(line, wire.client_type)):
            yield outcome

    def cancel(self, wire: Wire, remote: Mapping[str, Any]) -> Dict[str, Any]:
        url = join(wire.endpoint.base_url, "/v1/messages/batches/{}/cancel".format(remote["batch_id"]))
        return status_of(wire.json("POST", url, idempotent=True), wire.client_type)


ANTHROPIC = AnthropicBatches()


def status_of(batch: Any, client: str) -> Dict[str, Any]:
    if not isinstance(batch, dict) or not isinstance(batch.get("processing_status"), str):
        raise StreamProtocolError("{}: a message batch without a processing_status".format(client), client=client)
    status = batch["processing_status"]
    counts = batch.get("request_counts") if isinstance(batch.get("request_counts"), dict) else {}
    return {"status": status, "state": STATES.get(status, "unknown"),
            "counts": {k: counts.get(k) for k in _COUNTS}, "results_url": batch.get("results_url") or None,
            "expires_at": batch.get("expires_at"), "errors": []}


def parse_line(line: Any, client: str) -> Outcome:
    if not isinstance(line, dict) or not isinstance(line.get("custom_id"), str) or not isinstance(
            line.get("result"), dict):
        raise StreamProtocolError("{}: a batch result line without custom_id and result".format(client), client=client)
    custom_id = line["custom_id"]
    result = line["result"]
    kind = result.get("type")
    if kind == "succeeded":
        return custom_id, "ok", result.get("message")
    if kind == "errored":
        # no HTTP status: the error's type says it (invalid_request_error -> 400, overloaded_error -> 529)
        return custom_id, "error", (None, result.get("error"))
    if kind in ("canceled", "expired"):
        return custom_id, "not_run", kind
    raise StreamProtocolError("{}: the batch result {!r} has an unknown type {!r}".format(
        client, custom_id[:80], kind), client=client)
