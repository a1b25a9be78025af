"""OpenAI Batch API (and Azure OpenAI's batch route): JSONL upload, one batch per model and endpoint.

Wire facts, from the Batch guide (https://developers.openai.com/api/docs/guides/batch, copy read
2026-12-01) and the API reference (the openai SDK's ``batch_create_params`` / ``batch`` types):

- input line ``{"custom_id", "method": "POST", "url": "/v1/chat/completions" | "/v1/responses" |
  "/v1/embeddings", "body": <that endpoint's body>}``; "each input file can only include requests to
  a single model"; the Batch worker rejects ``stream=true``, so the body is the live one without
  ``stream`` / ``stream_options``;
- upload: ``POST /v1/files`` (multipart: ``purpose=batch``, ``file``), answer a File object (``id``);
- create: ``POST /v1/batches {"input_file_id", "endpoint", "completion_window": "24h"}`` (only 24h);
- per batch: up to 50,000 requests and a 200 MB input file; ``/v1/embeddings`` batches also at most
  50,000 embedding inputs across all requests;
- ``GET /v1/batches?limit=&after=`` lists the organization's batches, newest first (``data``, ``has_more``),
  each with its ``input_file_id``: a batch whose create call was cut short is found by the file it was made on;
- status: ``validating``, ``failed``, ``in_progress``, ``finalizing``, ``completed``, ``expired``,
  ``cancelling``, ``cancelled``; ``GET /v1/batches/{id}``, ``POST /v1/batches/{id}/cancel``;
- results: ``GET /v1/files/{output_file_id}/content`` (successful requests) and the error file
  (``error_file_id``); a line is ``{"id", "custom_id", "response": {"status_code", "request_id",
  "body"}, "error"}``; output order may differ from input order (match by ``custom_id``); requests an
  expired batch never ran are in the error file with ``error.code == "batch_expired"`` (a cancelled
  batch's: ``batch_cancelled``); a cancelled batch's finished requests are in its output file.

Azure OpenAI (learn.microsoft.com/azure/foundry/openai/how-to/batch, the REST and Python tabs and
"Batch limits", copies read 2026-12-01): the v1 API at ``https://<resource>.openai.azure.com/openai/v1``
(``/files``, ``/batches``, ``/files/{id}/content``, ``/batches/{id}/cancel``), key in ``api-key``; the
line's ``model`` is the Global-Batch deployment name, the same on every line; the create call's
``endpoint`` is ``/chat/completions`` ("the system will read your input file to determine if the chat
completions or responses API is needed"); at most 100,000 requests per file and 200 MB; embeddings
are not supported; statuses may come capitalised (``"Validating"``); Azure does not expire jobs.
"""

from typing import Any, Dict, Iterator, List, Mapping, Optional, Tuple
from urllib.parse import quote

from ...errors import StreamProtocolError
from ...types import HttpRequest
from ._base import Backend, Note, Outcome, listed, outcomes
from ._wire import Wire, join, multipart

__all__ = ["OPENAI", "AZURE", "PATHS", "STATES", "NOT_RUN", "OpenAIBatches", "AzureBatches", "body_of", "parse_line",
           "status_of"]

#: api -> the line's url (the body's endpoint path)
PATHS = {"chat": "/v1/chat/completions", "responses": "/v1/responses", "embeddings": "/v1/embeddings"}

#: the provider's status -> agenthub's state of one remote batch
STATES = {"validating": "pending", "in_progress": "running", "finalizing": "running", "cancelling": "cancelling",
          "completed": "completed", "failed": "failed", "expired": "expired", "cancelled": "cancelled",
          "canceled": "cancelled", "canceling": "cancelling"}

#: error codes of requests that never ran (no result: ``agenthub.jobs.run`` can finish them live)
NOT_RUN = frozenset(["batch_expired", "batch_cancelled", "batch_canceled"])

_LIVE_ONLY = ("stream", "stream_options")


def body_of(request: HttpRequest) -> Dict[str, Any]:
    """The live request's body as a batch line's body: the same, without the streaming keys."""
    return {key: value for key, value in (request.body or {}).items() if key not in _LIVE_ONLY}


class OpenAIBatches(Backend):
    """``/v1/files`` + ``/v1/batches`` on the endpoint's base URL (``https://api.openai.com/v1``)."""

    name = "openai"
    max_requests = 50000
    max_bytes = 200 * 1000 * 1000
    max_weight = 50000  # type: Optional[int]  # embedding inputs across all requests of an /v1/embeddings batch
    apis = ("chat", "responses", "embeddings")  # type: Tuple[str, ...]

    def entry(self, custom_id: str, request: HttpRequest, api: str) -> Dict[str, Any]:
        return {"custom_id": custom_id, "method": "POST", "url": PATHS[api], "body": body_of(request)}

    def weight(self, entry: Mapping[str, Any]) -> int:
        if entry.get("url") != PATHS["embeddings"]:
            return 0
        value = (entry.get("body") or {}).get("input")
        return len(value) if isinstance(value, list) else 1

    def root(self, base_url: str) -> str:
        return base_url.rstrip("/")

    def batch_endpoint(self, api: str) -> str:
        return PATHS[api]

    def create(self, wire: Wire, model: str, api: str, entries: List[bytes], name: str,
               request: HttpRequest, note: Optional[Note] = None) -> Dict[str, Any]:
        """Upload the JSONL (``purpose=batch``), then create the batch on it (``completion_window`` 24h).
        The file's id is noted first: a batch made on it is ``find``'s to find."""
        root = self.root(wire.endpoint.base_url)
        data, content_type = multipart({"purpose": "batch"}, "file", name, b"".join(entries))
        uploaded = wire.json("POST", join(root, "/files"), data=data, headers={"Content-Type": content_type})
        file_id = _field(uploaded, "id", wire.client_type, "the uploaded file")
        if note is not None:
            note({"input_file_id": file_id})
        created = wire.json("POST", join(root, "/batches"), body={
            "input_file_id": file_id, "endpoint": self.batch_endpoint(api), "completion_window": "24h"})
        return {"input_file_id": file_id, "batch_id": _field(created, "id", wire.client_type, "the new batch")}

    def find(self, wire: Wire, api: str, marker: Mapping[str, Any], known: Any) -> Optional[Dict[str, Any]]:
        """The batch made on the input file the cut-short call uploaded (none when the upload's answer was
        never noted: no batch was made on it)."""
        file_id = marker.get("input_file_id")
        if not isinstance(file_id, str) or not file_id:
            return None
        root = self.root(wire.endpoint.base_url)

        def page(after: Optional[str]) -> Tuple[List[Any], Optional[str]]:
            url = join(root, "/batches?limit=100" + ("&after=" + quote(after, safe="") if after else ""))
            answer = wire.json("GET", url)
            items = answer.get("data") if isinstance(answer, dict) else None
            if not isinstance(items, list):
                raise StreamProtocolError("{}: the list of batches came back without data".format(wire.client_type),
                                          client=wire.client_type)
            last = items[-1].get("id") if items and isinstance(items[-1], dict) else None
            return items, last if answer.get("has_more") is True and isinstance(last, str) else None

        for item, _ in listed(page, lambda item: item.get("created_at"), marker, wire.client_type):
            if isinstance(item, dict) and item.get("input_file_id") == file_id and isinstance(item.get("id"), str) \
                    and item["id"] not in known:
                return {"input_file_id": file_id, "batch_id": item["id"]}
        return None

    def retrieve(self, wire: Wire, remote: Mapping[str, Any]) -> Dict[str, Any]:
        root = self.root(wire.endpoint.base_url)
        return status_of(wire.json("GET", join(root, "/batches/" + remote["batch_id"])), wire.client_type)

    def results(self, wire: Wire, remote: Mapping[str, Any], info: Mapping[str, Any]) -> Iterator[Outcome]:
        """Every line of the output file, then of the error file."""
        root = self.root(wire.endpoint.base_url)
        for file_id in (info.get("output_file_id"), info.get("error_file_id")):
            if file_id:
                lines = wire.lines(join(root, "/files/{}/content".format(file_id)))
                for outcome in outcomes(lines, lambda line: parse_line(line, wire.client_type)):
                    yield outcome

    def cancel(self, wire: Wire, remote: Mapping[str, Any]) -> Dict[str, Any]:
        root = self.root(wire.endpoint.base_url)
        return status_of(wire.json("POST", join(root, "/batches/{}/cancel".format(remote["batch_id"])),
                                   idempotent=True), wire.client_type)


class AzureBatches(OpenAIBatches):
    """Azure OpenAI: the same calls on the resource's v1 API (``.../openai/v1``)."""

    name = "azure"
    max_requests = 100000
    max_weight = None
    apis = ("chat", "responses")

    def why_not(self, api: str) -> Optional[str]:
        if api == "embeddings":
            return "Azure OpenAI's batch API does not take embeddings (Microsoft's batch FAQ)"
        return super().why_not(api)

    def root(self, base_url: str) -> str:
        from ...hosts.azure import v1_base

        return v1_base(base_url)

    def batch_endpoint(self, api: str) -> str:
        return "/chat/completions"  # Azure reads the lines' urls to pick the API


OPENAI = OpenAIBatches()
AZURE = AzureBatches()


def _field(payload: Any, name: str, client: str, what: str) -> str:
    value = payload.get(name) if isinstance(payload, dict) else None
    if not isinstance(value, str) or not value:
        raise StreamProtocolError("{}: {} came back without {!r}".format(client, what, name), client=client)
    return value


def status_of(batch: Any, client: str) -> Dict[str, Any]:
    """A Batch object -> ``{"status", "state", "counts", "output_file_id", "error_file_id", "errors"}``."""
    if not isinstance(batch, dict) or not isinstance(batch.get("status"), str):
        raise StreamProtocolError("{}: a batch object without a status".format(client), client=client)
    status = batch["status"].strip().lower()
    counts = batch.get("request_counts") if isinstance(batch.get("request_counts"), dict) else {}
    errors = batch.get("errors") if isinstance(batch.get("errors"), dict) else {}
    messages = []  # type: List[str]
    data = errors.get("data")
    for item in data if isinstance(data, list) else []:
        if isinstance(item, dict):
            messages.append("{}: {}".format(item.get("code") or "error", item.get("message") or ""))
    return {"status": status, "state": STATES.get(status, "unknown"),
            "counts": {k: counts.get(k) for k in ("total", "completed", "failed")},
            "output_file_id": batch.get("output_file_id") or None, "error_file_id": batch.get("error_file_id") or None,
            "errors": messages}


def parse_line(line: Any, client: str) -> Outcome:
    """One output or error file line -> ``(custom_id, outcome, payload)``."""
    if not isinstance(line, dict) or not isinstance(line.get("custom_id"), str):
        raise StreamProtocolError("{}: a batch result line without a custom_id".format(client), client=client)
    custom_id = line["custom_id"]
    error = line.get("error")
    response = line.get("response")
    if isinstance(error, dict) and error:
        if isinstance(error.get("code"), str) and error["code"] in NOT_RUN:
            return custom_id, "not_run", error.get("code")
        status = response.get("status_code") if isinstance(response, dict) else None
        return custom_id, "error", (status if isinstance(status, int) else None, {"error": error})
    if not isinstance(response, dict):
        raise StreamProtocolError("{}: the batch result {!r} has neither a response nor an error".format(
            client, custom_id[:80]), client=client)
    status = response.get("status_code")
    body = response.get("body")
    if isinstance(status, int) and not 200 <= status < 300:
        return custom_id, "error", (status, body)
    return custom_id, "ok", body
