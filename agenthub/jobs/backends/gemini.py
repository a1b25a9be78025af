"""Gemini API batch mode: inline requests under the size limit, a Files API upload above it.

Wire facts, from the Batch API guide (https://ai.google.dev/gemini-api/docs/batch-api, copy read
2026-12-01) and the google-genai SDK (``batches.py``, ``files.py``, ``_api_client.upload_file``):

- ``POST /v1beta/models/{model}:batchGenerateContent`` with ``{"batch": {"display_name", "input_config":
  {"requests": {"requests": [{"request": <GenerateContentRequest>, "metadata": {"key": ...}}]}}}}``
  for "smaller batches where the total request size stays under 20 MB", else ``"input_config":
  {"file_name": "files/..."}`` naming an uploaded JSON Lines file whose lines are ``{"key", "request"}``
  (an input file may be up to 2 GB); answer: the batch's long-running operation, ``name`` ``batches/...``;
- upload (resumable): ``POST /upload/v1beta/files`` with ``X-Goog-Upload-Protocol: resumable``,
  ``X-Goog-Upload-Command: start``, ``X-Goog-Upload-Header-Content-Length`` / ``-Content-Type`` and
  ``{"file": {"display_name"}}``; the session URL comes back in ``X-Goog-Upload-URL``; the bytes go to it
  with ``X-Goog-Upload-Command: upload, finalize`` and ``X-Goog-Upload-Offset: 0``; answer ``{"file":
  {"name": "files/..."}}``;
- ``GET /v1beta/batches/{id}``: ``metadata.state`` (``BATCH_STATE_PENDING`` / ``RUNNING`` /
  ``SUCCEEDED`` / ``FAILED`` / ``CANCELLED`` / ``EXPIRED``; the SDK shows them as ``JOB_STATE_*``, which
  the guide's REST example compares against), ``done``, ``error``; the results in ``response`` (the SDK
  reads ``metadata.output``): ``inlinedResponses.inlinedResponses`` (each ``{"response" | "error",
  "metadata": {"key"}}``) or ``responsesFile`` (download ``/download/v1beta/{file}:download?alt=media``:
  lines ``{"key", "response" | "error"}``, "annotated with the same key");
- ``GET /v1beta/batches?pageSize=&pageToken=``: the batch operations (``operations``, ``nextPageToken``),
  each with ``metadata.displayName`` and ``createTime``: agenthub makes each batch's display name unique,
  so a batch whose create call was cut short is found by it;
- ``POST /v1beta/batches/{id}:cancel``; a job pending or running for 48 hours expires;
- embeddings ("Batch embedding support"; the SDK's ``batches.create_embeddings``, marked experimental):
  ``POST /v1beta/models/{model}:asyncBatchEmbedContent`` with the same ``batch`` envelope, each request
  one ``EmbedContentRequest`` (``content``, ``outputDimensionality``); each answer ``{"embedding":
  {"values"}}`` under ``inlinedResponses`` (the SDK renames it ``inlinedEmbedContentResponses``).
"""

import json
import re
import sys
from typing import Any, Dict, Iterator, List, Mapping, Optional, Tuple
from urllib.parse import quote, urlsplit

from ...errors import ConfigError, StreamProtocolError
from ...types import HttpRequest
from ._base import Backend, Note, Outcome, listed, outcomes
from ._wire import Wire, same_origin
from ..._jsondepth import loads as _json_loads

__all__ = ["GEMINI", "GeminiBatches", "STATES", "INLINE_MAX_BYTES", "OPERATION_MAX_BYTES", "RPC_CODES",
           "version_root", "status_of", "parse_item", "rpc_error", "read_operation"]

#: inline requests only while the whole create request stays under this size
INLINE_MAX_BYTES = 20 * 1000 * 1000
#: the largest batch operation read (``GET batches/{id}``: an inline batch's answers come inside it, so it is
#: allowed far more than a live answer's ``transport.MAX_DOCUMENT_BYTES``); a batch whose answers could be
#: larger is submitted through a file, whose results are read line by line: a paid result stays readable
OPERATION_MAX_BYTES = 1024 * 1024 * 1024
#: a high estimate of the bytes one inlined answer takes: framing, plus this much per output token (JSON-escaped
#: text); a request naming no output limit is counted at ``ANSWER_DEFAULT_TOKENS``
ANSWER_OVERHEAD_BYTES = 4096
ANSWER_BYTES_PER_TOKEN = 8
ANSWER_DEFAULT_TOKENS = 65536

STATES = {}  # type: Dict[str, str]
for _prefix in ("BATCH_STATE_", "JOB_STATE_"):
    STATES.update({_prefix + "PENDING": "pending", _prefix + "QUEUED": "pending", _prefix + "RUNNING": "running",
                   _prefix + "SUCCEEDED": "completed", _prefix + "FAILED": "failed",
                   _prefix + "CANCELLED": "cancelled", _prefix + "CANCELLING": "cancelling",
                   _prefix + "EXPIRED": "expired"})
#: Vertex AI's JobState for a job that ended with some requests failed: ended, its results read line by line (each
#: failed request is its row's error)
STATES["JOB_STATE_PARTIALLY_SUCCEEDED"] = "completed"
#: google.rpc codes of a request that never ran (CANCELLED)
_NOT_RUN_CODES = (1, "CANCELLED")
#: google.rpc.Code (a batch item's ``error`` is a google.rpc.Status: ``{"code", "message", "details"}``) -> the
#: HTTP status the live call answers that code with and the code's name (google/rpc/code.proto's mapping)
RPC_CODES = {
    1: (499, "CANCELLED"), 2: (500, "UNKNOWN"), 3: (400, "INVALID_ARGUMENT"), 4: (504, "DEADLINE_EXCEEDED"),
    5: (404, "NOT_FOUND"), 6: (409, "ALREADY_EXISTS"), 7: (403, "PERMISSION_DENIED"), 8: (429, "RESOURCE_EXHAUSTED"),
    9: (400, "FAILED_PRECONDITION"), 10: (409, "ABORTED"), 11: (400, "OUT_OF_RANGE"), 12: (501, "UNIMPLEMENTED"),
    13: (500, "INTERNAL"), 14: (503, "UNAVAILABLE"), 15: (500, "DATA_LOSS"), 16: (401, "UNAUTHENTICATED"),
}  # type: Dict[int, Tuple[int, str]]
_RPC_NAMES = {name: status for status, name in RPC_CODES.values()}


def version_root(wire: Wire) -> str:
    """``https://generativelanguage.googleapis.com/v1beta`` for the endpoint (the host's URL rule: its own
    version if the base URL names one)."""
    if "?" in wire.endpoint.base_url:  # the batch paths are built on the version root, not joined
        raise ConfigError("{}: a batch job takes no query string in base_url (Gemini's batch API is sent the key in "
                          "its header)".format(wire.client_type))
    return wire.url("/v1beta/models")[:-len("/models")]


def _prefix_and_version(root: str):
    head, _, version = root.rstrip("/").rpartition("/")
    return head, version


class GeminiBatches(Backend):
    name = "gemini"
    max_requests = sys.maxsize  # the guide names no request count
    max_bytes = 2 * 1000 * 1000 * 1000  # an input file's largest size
    apis = ("generate", "embeddings")

    def entry(self, custom_id: str, request: HttpRequest, api: str) -> Dict[str, Any]:
        """The file line ``{"key", "request"}`` (inline, the same request goes in with ``metadata.key``).

        An embeddings row holds one EmbedContentRequest per message (the live call sends one
        ``embedContent``, or a ``batchEmbedContents`` of several): each becomes a request of its own,
        keyed ``<custom id>#<i>/<n>``, and the row's answer is put together from all ``n``."""
        body = dict(request.body or {})
        if api != "embeddings":
            return {"key": custom_id, "request": body}
        parts = [{k: v for k, v in r.items() if k != "model"} for r in body["requests"]] if "requests" in body else [body]
        return {"key": custom_id, "parts": parts}

    def create(self, wire: Wire, model: str, api: str, entries: List[bytes], name: str,
               request: HttpRequest, note: Optional[Note] = None) -> Dict[str, Any]:
        root = version_root(wire)
        verb = "asyncBatchEmbedContent" if api == "embeddings" else "batchGenerateContent"
        url = "{}/models/{}:{}".format(root, quote(model, safe=""), verb)
        parts = None  # type: Optional[Dict[str, int]]
        if api == "embeddings":
            decoded = [_json_loads(data) for data in entries]
            parts = {entry["key"]: len(entry["parts"]) for entry in decoded}  # what each row's answer must hold
            if note is not None:
                note({"parts": parts})  # (find's batch needs them too)
            entries = [_dumps(line) for entry in decoded for line in _embed_lines(entry)]
        size = sum(len(e) for e in entries)
        source = None  # type: Optional[Dict[str, Any]]
        file_name = None
        if size < INLINE_MAX_BYTES:
            inline = []
            answers = 0  # what the inlined answers could take in the operation
            for data in entries:
                line = _json_loads(data)
                inline.append({"request": line["request"], "metadata": {"key": line["key"]}})
                answers += _answer_bytes(line["request"], api)
            body = {"batch": {"display_name": name, "input_config": {"requests": {"requests": inline}}}}
            encoded = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
            # the whole create request under the guide's limit, and answers the operation can still be read with
            if len(encoded) < INLINE_MAX_BYTES and answers + len(encoded) <= OPERATION_MAX_BYTES:
                source = body["batch"]["input_config"]
        if source is None:
            file_name = self._upload(wire, root, entries, size, name)
            source = {"file_name": file_name}
        operation = wire.json("POST", url, body={"batch": {"display_name": name, "input_config": source}})
        batch_name = operation.get("name") if isinstance(operation, dict) else None
        if not isinstance(batch_name, str) or not batch_name.startswith("batches/"):
            raise StreamProtocolError("{}: the new batch came back without a batches/ name".format(wire.client_type),
                                      client=wire.client_type)
        remote = {"batch_name": batch_name, "input_file": file_name, "api": api}  # type: Dict[str, Any]
        if parts is not None:
            remote["parts"] = parts
        return remote

    def _upload(self, wire: Wire, root: str, entries: List[bytes], size: int, name: str) -> str:
        head, version = _prefix_and_version(root)
        start = wire.raw("POST", "{}/upload/{}/files".format(head, version), body={"file": {"display_name": name}},
                         headers={"X-Goog-Upload-Protocol": "resumable", "X-Goog-Upload-Command": "start",
                                  "X-Goog-Upload-Header-Content-Length": str(size),
                                  "X-Goog-Upload-Header-Content-Type": "application/jsonl"})
        start.read()
        session = start.headers.get("x-goog-upload-url")
        if not session or not same_origin(session, wire.endpoint.base_url):
            raise StreamProtocolError("{}: the file upload was not given a session URL on {}".format(
                wire.client_type, urlsplit(wire.endpoint.base_url).hostname), client=wire.client_type)
        done = wire.json("POST", session, data=b"".join(entries), idempotent=False,
                         headers={"X-Goog-Upload-Command": "upload, finalize", "X-Goog-Upload-Offset": "0",
                                  "Content-Type": "application/jsonl"})
        file_name = (done.get("file") or {}).get("name") if isinstance(done, dict) else None
        if not isinstance(file_name, str) or not file_name:
            raise StreamProtocolError("{}: the uploaded file came back without a name".format(wire.client_type),
                                      client=wire.client_type)
        return file_name

    def find(self, wire: Wire, api: str, marker: Mapping[str, Any], known: Any) -> Optional[Dict[str, Any]]:
        """The batch whose display name is the one the cut-short call gave it (``marker["name"]``)."""
        root = version_root(wire)

        def page(token: Optional[str]) -> Tuple[List[Any], Optional[str]]:
            url = "{}/batches?pageSize=25{}".format(root, "&pageToken=" + quote(token, safe="") if token else "")
            answer = read_operation(wire, url)  # (an inline batch's operation holds its answers: read as one)
            items = answer.get("operations", []) if isinstance(answer, dict) else None
            if not isinstance(items, list):
                raise StreamProtocolError("{}: the list of batches came back without operations".format(
                    wire.client_type), client=wire.client_type)
            token = answer.get("nextPageToken")
            return items, token if isinstance(token, str) and token else None

        def meta(item: Any) -> Dict[str, Any]:
            value = item.get("metadata") if isinstance(item, dict) else None
            return value if isinstance(value, dict) else {}

        for item, _ in listed(page, lambda item: meta(item).get("createTime"), marker, wire.client_type):
            batch_name = item.get("name") if isinstance(item, dict) else None
            if meta(item).get("displayName") == marker.get("name") and isinstance(batch_name, str) and \
                    batch_name.startswith("batches/") and batch_name not in known:
                remote = {"batch_name": batch_name, "input_file": None, "api": api}  # type: Dict[str, Any]
                if isinstance(marker.get("parts"), dict):
                    remote["parts"] = marker["parts"]
                return remote
        return None

    def retrieve(self, wire: Wire, remote: Mapping[str, Any]) -> Dict[str, Any]:
        root = version_root(wire)
        return status_of(read_operation(wire, "{}/{}".format(root, remote["batch_name"])), wire.client_type)

    def results(self, wire: Wire, remote: Mapping[str, Any], info: Mapping[str, Any]) -> Iterator[Outcome]:
        items = self._items(wire, info)
        if remote.get("api") == "embeddings":
            parts = remote.get("parts")
            return _assembled(items, parts if isinstance(parts, dict) else None)
        return items

    def _items(self, wire: Wire, info: Mapping[str, Any]) -> Iterator[Outcome]:
        output = info.get("output") or {}
        inline = output.get("inlinedResponses") or output.get("inlinedEmbedContentResponses")
        if isinstance(inline, dict):
            inline = inline.get("inlinedResponses")
        if isinstance(inline, list):
            for outcome in outcomes(inline, lambda item: parse_item(item, wire.client_type, inline=True)):
                yield outcome
            return
        file_name = output.get("responsesFile")
        if isinstance(file_name, str) and file_name:
            head, version = _prefix_and_version(version_root(wire))
            url = "{}/download/{}/{}:download?alt=media".format(head, version, file_name)
            for outcome in outcomes(wire.lines(url), lambda line: parse_item(line, wire.client_type, inline=False)):
                yield outcome

    def cancel(self, wire: Wire, remote: Mapping[str, Any]) -> Dict[str, Any]:
        root = version_root(wire)
        wire.json("POST", "{}/{}:cancel".format(root, remote["batch_name"]), body={}, idempotent=True)
        return self.retrieve(wire, remote)


GEMINI = GeminiBatches()


def _dumps(value: Any) -> bytes:
    return (json.dumps(value, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")


def _embed_lines(entry: Mapping[str, Any]) -> List[Dict[str, Any]]:
    parts = entry["parts"]
    return [{"key": "{}#{}/{}".format(entry["key"], i, len(parts)), "request": part} for i, part in enumerate(parts)]


_PART_KEY = re.compile(r"\A(.+)#([0-9]{1,9})/([0-9]{1,9})\Z", re.ASCII | re.S)  # (re.S: an id may hold a newline)


def _assembled(items: Iterator[Outcome], expected: Optional[Mapping[str, Any]] = None) -> Iterator[Outcome]:
    """The results of an embeddings batch, one per row: its ``n`` answers as the live call's one answer
    (``embedContent``'s for one message, ``batchEmbedContents``' ``{"embeddings": [...]}`` for several).
    The first failed part fails the row; a row missing a part has no result.  ``n`` is what was submitted
    (``expected``: custom id -> part count, from the state); a key whose count or index disagrees with it,
    that is not ``<id>#<i>/<n>`` in ASCII digits, or that repeats a part, is reported ("bad"), never applied."""
    pending = {}  # type: Dict[str, Dict[int, Any]]
    finished = set()  # type: set
    for key, outcome, payload in items:
        if outcome == "bad":
            yield key, outcome, payload
            continue
        match = _PART_KEY.match(key)
        row, index, count = (match.group(1), int(match.group(2)), int(match.group(3))) if match else ("", 0, 0)
        want = expected.get(row) if expected is not None and row else count
        if not match or not index < count or count != want:
            yield "", "bad", "gemini: an embeddings batch answer with a key agenthub did not make"
            continue
        if row in finished:
            yield row, outcome, payload  # a repeat: the caller reports it (never applied)
            continue
        if outcome != "ok":
            finished.add(row)
            pending.pop(row, None)
            yield row, outcome, payload
            continue
        parts = pending.setdefault(row, {})
        if index in parts:
            yield "", "bad", "gemini: an embeddings batch answer repeats part {!r}".format(key[:80])
            continue
        parts[index] = payload
        if len(parts) == count:
            finished.add(row)
            del pending[row]
            yield row, "ok", _joined([parts[i] for i in range(count)])


def _joined(answers: List[Any]) -> Any:
    if len(answers) == 1:
        return answers[0]
    joined = {"embeddings": [a.get("embedding") if isinstance(a, dict) else None for a in answers]}  # type: Dict[str, Any]
    counts = [((a.get("usageMetadata") or {}) if isinstance(a, dict) else {}).get("promptTokenCount") for a in answers]
    if counts and all(isinstance(c, int) for c in counts):
        joined["usageMetadata"] = {"promptTokenCount": sum(counts)}
    return joined


def _answer_bytes(request: Any, api: str) -> int:
    """A high estimate of the bytes one request's answer takes inlined in the batch operation."""
    if api == "embeddings":
        return ANSWER_OVERHEAD_BYTES + 3072 * 24  # the largest embedding, each value a JSON float
    config = request.get("generationConfig") if isinstance(request, dict) else None
    limit = config.get("maxOutputTokens") if isinstance(config, dict) else None
    if not isinstance(limit, int) or isinstance(limit, bool) or limit <= 0:
        limit = ANSWER_DEFAULT_TOKENS
    return ANSWER_OVERHEAD_BYTES + ANSWER_BYTES_PER_TOKEN * limit


def read_operation(wire: Wire, url: str) -> Any:
    """The batch operation, read up to ``OPERATION_MAX_BYTES`` (its inlined answers may be far larger than a
    live answer), decoded."""
    body = wire.raw("GET", url, accept="application/json")
    try:
        raw = body.read(OPERATION_MAX_BYTES)
    finally:
        body.close()
    try:
        return _json_loads(raw.decode("utf-8-sig"))
    except (ValueError, RecursionError):
        raise StreamProtocolError("{}: the batch operation is not JSON ({} bytes)".format(wire.client_type, len(raw)),
                                  client=wire.client_type, retryable=True) from None


def status_of(operation: Any, client: str) -> Dict[str, Any]:
    """The batch operation -> ``{"status", "state", "counts", "output", "errors"}``."""
    if not isinstance(operation, dict):
        raise StreamProtocolError("{}: the batch operation is not an object".format(client), client=client)
    metadata = operation.get("metadata") if isinstance(operation.get("metadata"), dict) else {}
    status = metadata.get("state") or operation.get("state")
    if not isinstance(status, str):
        raise StreamProtocolError("{}: a batch without a state".format(client), client=client)
    output = None
    for holder in (operation.get("response"), metadata.get("output"), operation.get("output")):
        if isinstance(holder, dict) and (holder.get("inlinedResponses") is not None or holder.get("responsesFile")
                                         or holder.get("inlinedEmbedContentResponses") is not None):
            output = holder
            break
    stats = metadata.get("batchStats") if isinstance(metadata.get("batchStats"), dict) else {}
    errors = []  # type: List[str]
    error = operation.get("error")
    if isinstance(error, dict) and error:
        errors.append("{}: {}".format(error.get("status") or error.get("code") or "error", error.get("message") or ""))
    return {"status": status, "state": STATES.get(status, "unknown"),
            "counts": {"total": _int(stats.get("requestCount")), "succeeded": _int(stats.get("successfulRequestCount")),
                       "failed": _int(stats.get("failedRequestCount")), "pending": _int(stats.get("pendingRequestCount"))},
            "output": output, "errors": errors}


def _int(value: Any) -> Optional[int]:
    """A count as an int (the API sends int64 as a string); None for anything that is not one."""
    try:
        return int(value) if value is not None else None
    except (TypeError, ValueError, OverflowError):  # (a number 1e999 is read as inf: no int)
        return None


def parse_item(item: Any, client: str, inline: bool) -> Outcome:
    """An inlined response (key in ``metadata``) or a responses-file line (key at the top)."""
    if not isinstance(item, dict):
        raise StreamProtocolError("{}: a batch response that is not an object".format(client), client=client)
    metadata = item.get("metadata") if inline else None
    key = metadata.get("key") if isinstance(metadata, dict) else None if inline else item.get("key")
    if not isinstance(key, str):
        key = item.get("key") if isinstance(item.get("key"), str) else None
    if key is None:
        raise StreamProtocolError("{}: a batch response without its request's key".format(client), client=client)
    error = item.get("error") if item.get("error") is not None else item.get("status")
    if isinstance(error, dict) and error:
        if error.get("code") in _NOT_RUN_CODES or error.get("status") == "CANCELLED":
            return key, "not_run", "cancelled"
        status, body = rpc_error(error)
        return key, "error", (status, {"error": body})
    response = item.get("response")
    if not isinstance(response, dict):
        raise StreamProtocolError("{}: the batch response {!r} has neither a response nor an error".format(
            client, key[:80]), client=client)
    return key, "ok", response


def rpc_error(error: Mapping[str, Any]) -> Tuple[Optional[int], Dict[str, Any]]:
    """A batch item's google.rpc.Status -> (the HTTP status, the error object) the live call would have
    answered: ``{"code": 8, "message"}`` -> 429 with ``{"code": 429, "message", "status": "RESOURCE_EXHAUSTED"}``
    (a RateLimitError, retryable), 13 -> 500 INTERNAL, 3 -> 400 INVALID_ARGUMENT.  An error that already
    has an HTTP code or a status name keeps them; an unknown code gives no status."""
    body = dict(error)
    code = body.get("code")
    name = body.get("status") if isinstance(body.get("status"), str) else None
    if isinstance(code, int) and not isinstance(code, bool) and code in RPC_CODES:
        status, rpc_name = RPC_CODES[code]
        body["code"], body["status"] = status, name or rpc_name
        return status, body
    if isinstance(code, int) and not isinstance(code, bool) and 400 <= code < 600:
        return code, body
    if name in _RPC_NAMES:
        body["code"] = _RPC_NAMES[name]
        return _RPC_NAMES[name], body
    return None, body
