"""A local fake of the three providers' batch engines (and of their live endpoints), on 127.0.0.1.

One ``BatchFake`` server answers, in the shapes the providers document (tests/fixtures/batch/README.md
cites the pages):

- OpenAI: ``POST /v1/files`` (multipart, purpose batch), ``GET /v1/files/{id}/content``,
  ``POST /v1/batches``, ``GET /v1/batches/{id}``, ``POST /v1/batches/{id}/cancel``; Azure OpenAI's v1
  API the same under ``/openai/v1`` (key in ``api-key``, capitalised statuses as Azure sends them);
- Anthropic: ``POST /v1/messages/batches``, ``GET /v1/messages/batches/{id}[/results]``,
  ``POST /v1/messages/batches/{id}/cancel``;
- Gemini: ``POST /v1beta/models/{m}:batchGenerateContent``, ``GET /v1beta/batches/{id}``,
  ``POST /v1beta/batches/{id}:cancel``, the resumable upload ``/upload/v1beta/files``, and the result
  download (``/download/v1beta/files/{id}:download`` as the guide's REST example, ``/v1beta/files/{id}:download``
  as the SDK asks);
- the live endpoints (``/v1/chat/completions``, ``/v1/responses``, ``/v1/embeddings``, ``/v1/messages``,
  ``/v1beta/models/{m}:streamGenerateContent``, Azure's deployments path) answering one JSON document,
  made by the same ``answer`` function the batches use: a row gets the same answer live and batched.

A batch is processed on its ``polls``-th status request.  ``run_only=N`` lets only the first N requests of
a batch run before it expires (or, after ``cancel``, before it is cancelled).  The fake checks what the
documents require (purpose, completion window, one model and one url per OpenAI file, no ``stream``,
Anthropic's custom_id pattern, the key header of each family) and fails the way the providers say.
Every request is recorded in ``requests``.  Every wait is bounded; ``close()`` stops the server.
"""

import email.parser
import email.policy
import itertools
import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

from sse_server import close_server, track_connections

KEYS = {"openai": "sk-openai-test", "azure": "az-key-test", "anthropic": "sk-ant-test", "gemini": "g-key-test"}


def point_at(monkeypatch, server):
    """The providers' key and base-URL variables aimed at ``server`` (the fake of every batch engine)."""
    monkeypatch.setenv("OPENAI_API_KEY", KEYS["openai"])
    monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEYS["anthropic"])
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
    monkeypatch.setenv("GEMINI_API_KEY", KEYS["gemini"])
    monkeypatch.setenv("GEMINI_BASE_URL", server.url)


def point_all_at(monkeypatch, server):
    """``point_at``, and Azure OpenAI's key and endpoint too."""
    point_at(monkeypatch, server)
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", KEYS["azure"])
    monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", server.url)


def user(text):
    """One user turn of ``text`` (a job row's messages)."""
    return [{"role": "user", "content_items": [{"type": "text", "text": text}]}]


def write_rows(path, rows):
    """A job file of ``rows`` at ``path`` (a pathlib path); its path as a string."""
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return str(path)


_CUSTOM_ID = re.compile(r"\A[a-zA-Z0-9_-]{1,64}\Z")  # (the spec's pattern: its "$" ends the string)
OPENAI_MAX_REQUESTS = 50000
AZURE_MAX_REQUESTS = 100000


def last_user_text(provider, body):
    """The text of the last user turn of a request body, in any of the protocols."""
    try:
        if provider == "gemini":
            if "content" in body:  # an EmbedContentRequest
                return "".join(p.get("text", "") for p in body["content"].get("parts", []))
            turn = [c for c in body.get("contents", []) if c.get("role", "user") == "user"][-1]
            return "".join(p.get("text", "") for p in turn.get("parts", []))
        if "input" in body and "messages" not in body:  # responses or embeddings
            value = body["input"]
            if isinstance(value, str):
                return value
            if value and isinstance(value[0], str):
                return value[-1]
            turn = [i for i in value if i.get("role") == "user"][-1]
            content = turn.get("content")
            if isinstance(content, str):
                return content
            return "".join(c.get("text", "") for c in content)
        turn = [m for m in body.get("messages", []) if m.get("role") == "user"][-1]
        content = turn.get("content")
        if isinstance(content, str):
            return content
        return "".join(c.get("text", "") for c in content if isinstance(c, dict))
    except (IndexError, AttributeError, TypeError, KeyError):
        return ""


def default_answer(provider, api, body):
    """(status, JSON body) of one request: an echo of the last user text, or an invalid_request error
    when that text holds FAIL.  The token counts follow the text so each row's usage differs."""
    text = last_user_text(provider, body)
    model = body.get("model", "model")
    reply = "echo: " + text
    prompt, completion = len(text.split()) + 3, len(reply.split())
    if "FAIL" in text:
        if provider == "anthropic":
            return 400, {"type": "error", "error": {"type": "invalid_request_error", "message": "the fake refuses FAIL"}}
        if provider == "gemini":
            return 400, {"error": {"code": 400, "message": "the fake refuses FAIL", "status": "INVALID_ARGUMENT"}}
        return 400, {"error": {"message": "the fake refuses FAIL", "type": "invalid_request_error", "param": None,
                               "code": None}}
    if provider == "anthropic":
        return 200, {"id": "msg_fake", "type": "message", "role": "assistant", "model": model,
                     "content": [{"type": "text", "text": reply}], "stop_reason": "end_turn", "stop_sequence": None,
                     "usage": {"input_tokens": prompt, "output_tokens": completion}}
    if provider == "gemini" and api == "embeddings":
        return 200, {"embedding": {"values": [float(len(text)), 0.25, -0.5]}}
    if provider == "gemini":
        return 200, {"candidates": [{"content": {"role": "model", "parts": [{"text": reply}]}, "finishReason": "STOP",
                                     "index": 0}],
                     "usageMetadata": {"promptTokenCount": prompt, "candidatesTokenCount": completion,
                                       "totalTokenCount": prompt + completion}, "modelVersion": model}
    if api == "embeddings":
        inputs = body.get("input") if isinstance(body.get("input"), list) else [body.get("input")]
        return 200, {"object": "list", "model": model,
                     "data": [{"object": "embedding", "index": i, "embedding": [float(len(t)), 0.5, -1.0]}
                              for i, t in enumerate(inputs)],
                     "usage": {"prompt_tokens": prompt, "total_tokens": prompt}}
    if api == "responses":
        return 200, {"id": "resp_fake", "object": "response", "created_at": 1764547200, "status": "completed",
                     "model": model, "output": [{"type": "message", "id": "msg_fake", "status": "completed",
                                                 "role": "assistant",
                                                 "content": [{"type": "output_text", "text": reply, "annotations": []}]}],
                     "usage": {"input_tokens": prompt, "input_tokens_details": {"cached_tokens": 0},
                               "output_tokens": completion, "output_tokens_details": {"reasoning_tokens": 0},
                               "total_tokens": prompt + completion}}
    return 200, {"id": "chatcmpl-fake", "object": "chat.completion", "created": 1764547200, "model": model,
                 "choices": [{"index": 0, "message": {"role": "assistant", "content": reply}, "logprobs": None,
                              "finish_reason": "stop"}],
                 "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                           "total_tokens": prompt + completion}}


class _Batch(object):
    def __init__(self, kind, batch_id, requests, model=None, endpoint=None):
        self.kind = kind  # openai | azure | anthropic | gemini
        self.id = batch_id
        self.requests = requests  # [(custom_id, body)]
        self.model = model
        self.endpoint = endpoint
        self.polls = 0
        self.state = "new"  # new -> done | cancelling -> cancelled
        self.results = None  # [(custom_id, "ok"|"error"|"expired"|"cancelled", status, body)]
        self.terminal = None  # completed | expired | cancelled | failed
        self.errors = []
        self.cancel_requested = False
        self.output_file_id = None
        self.error_file_id = None
        self.created = int(time.time())


class BatchFake(object):
    """The server.  ``answer(provider, api, body) -> (status, body)``; ``polls``: status requests before a
    batch is processed; ``run_only``: how many requests run before a batch expires (None: all);
    ``require_keys``: refuse a request without its family's key (``KEYS``)."""

    def __init__(self, answer=default_answer, polls=1, run_only=None, require_keys=True, echo_keys=False):
        self.answer = answer
        self.echo_keys = echo_keys  # a careless server: its 401 repeats the credential it was sent
        self.polls = polls
        self.run_only = run_only
        self.require_keys = require_keys
        self.requests = []
        self.lock = threading.Lock()
        self.files = {}  # id -> {"bytes", "purpose", "filename"}
        self.batches = {}  # id -> _Batch
        self.uploads = {}  # gemini upload session id -> {"display_name", "data", "mime"}
        self._ids = itertools.count(1)
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._connections = track_connections(self.server)  # (ended when it closes)
        self.server.daemon_threads = True
        self.server.fake = self
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    @property
    def url(self):
        return "http://127.0.0.1:{}".format(self.server.server_address[1])

    def close(self):
        close_server(self.server, self._connections)
        self.thread.join(5)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def new_id(self, prefix):
        return "{}{:04d}".format(prefix, next(self._ids))

    def calls(self, method=None, path_prefix=""):
        with self.lock:
            return [r for r in self.requests if (method is None or r["method"] == method)
                    and r["path"].startswith(path_prefix)]

    # -- processing -------------------------------------------------------------------------------
    def process(self, batch):
        """Run the batch's requests (all, or ``run_only`` of them) and pick its terminal state."""
        if batch.results is not None:
            return
        provider = "openai" if batch.kind in ("openai", "azure") else batch.kind
        limit = len(batch.requests) if self.run_only is None else min(self.run_only, len(batch.requests))
        if batch.cancel_requested:  # cancelled: only the first run_only (default none) had run
            limit = min(self.run_only or 0, len(batch.requests))
        results = []
        for n, (custom_id, body, api) in enumerate(batch.requests):
            if n >= limit:
                results.append((custom_id, "cancelled" if batch.cancel_requested else "expired", None, None))
                continue
            status, answer = self.answer(provider, api, body)
            results.append((custom_id, "ok" if status == 200 else "error", status, answer))
        batch.results = results
        if batch.cancel_requested:
            batch.terminal = "cancelled"
        elif limit < len(batch.requests):
            batch.terminal = "expired"
        else:
            batch.terminal = "completed"
        if batch.kind in ("openai", "azure"):
            self._openai_files(batch)

    def _openai_files(self, batch):
        out, err = [], []
        for n, (custom_id, kind, status, body) in enumerate(batch.results):
            line = {"id": "batch_req_{}_{}".format(batch.id, n), "custom_id": custom_id}
            if kind == "ok":
                line.update(response={"status_code": 200, "request_id": "req_{}".format(n), "body": body}, error=None)
                out.append(line)
            elif kind == "error":
                line.update(response={"status_code": status, "request_id": "req_{}".format(n), "body": body},
                            error=None)
                err.append(line)
            else:
                code = "batch_expired" if kind == "expired" else "batch_cancelled"
                message = ("This request could not be executed before the completion window expired."
                           if kind == "expired" else "The batch was cancelled before this request executed.")
                line.update(response=None, error={"code": code, "message": message})
                err.append(line)
        for attr, lines, purpose in (("output_file_id", out, "batch_output"), ("error_file_id", err, "batch_output")):
            if lines:
                file_id = self.new_id("file-out")
                data = "".join(json.dumps(line) + "\n" for line in lines).encode()
                self.files[file_id] = {"bytes": data, "purpose": purpose, "filename": attr + ".jsonl"}
                setattr(batch, attr, file_id)

    def cancel(self, batch):
        """A cancel call: a batch that has not ended is cancelling (its next poll ends it)."""
        if batch.results is None:
            batch.cancel_requested = True
            batch.state = "cancelling"

    def look(self, batch):
        """A status call: a cancelling batch ends now, any other is polled once more."""
        if batch.state == "cancelling":
            self.process(batch)
            batch.state = "done"
        else:
            self.poll(batch)

    def poll(self, batch):
        batch.polls += 1
        if batch.polls >= self.polls:
            self.process(batch)


def _json(handler, status, body, headers=None):
    data = json.dumps(body).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    for name, value in (headers or {}).items():
        handler.send_header(name, value)
    handler.end_headers()
    handler.wfile.write(data)


def _raw(handler, status, data, content_type="application/octet-stream", headers=None):
    handler.send_response(status)
    handler.send_header("Content-Type", content_type)
    handler.send_header("Content-Length", str(len(data)))
    for name, value in (headers or {}).items():
        handler.send_header(name, value)
    handler.end_headers()
    handler.wfile.write(data)


def _openai_error(handler, status, message, code=None, kind="invalid_request_error"):
    _json(handler, status, {"error": {"message": message, "type": kind, "param": None, "code": code}})


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    @property
    def fake(self):
        return self.server.fake

    def _read(self):
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def do_GET(self):  # noqa: N802
        self._serve("GET")

    def do_POST(self):  # noqa: N802
        self._serve("POST")

    def _serve(self, method):
        raw = self._read()
        parts = urlsplit(self.path)
        path = unquote(parts.path)
        query = parse_qs(parts.query)
        with self.fake.lock:
            self.fake.requests.append({"method": method, "path": path, "query": query, "headers": dict(self.headers),
                                       "body": raw})
        self._query = query
        family = self._family(path)
        session = path.startswith("/upload/") and "upload_id" in query  # the session URL is its own credential
        if self.fake.require_keys and not session and not self._authorized(family):
            if family == "anthropic":
                _json(self, 401, {"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}})
            elif family == "gemini":
                _json(self, 403, {"error": {"code": 403, "message": "API key not valid", "status": "PERMISSION_DENIED"}})
            else:
                sent = self.headers.get("Authorization") or self.headers.get("api-key") or ""
                _openai_error(self, 401, "Incorrect API key provided{}".format(
                    ": " + sent if self.fake.echo_keys else ""), "invalid_api_key", "invalid_request_error")
            return
        try:
            with self.fake.lock:
                handled = self._route(method, path, query, raw, family)
        except Exception as exc:  # a fake bug: say so instead of hanging the client
            _json(self, 500, {"error": {"message": "fake failure: {!r}".format(exc), "type": "server_error"}})
            return
        if not handled:
            _json(self, 404, {"error": {"message": "no route {} {}".format(method, path), "type": "not_found"}})

    def _family(self, path):
        if path.startswith("/openai/"):
            return "azure"
        if path.startswith("/v1/messages"):
            return "anthropic"
        if path.startswith(("/v1beta", "/upload/", "/download/")):
            return "gemini"
        return "openai"

    def _authorized(self, family):
        key = KEYS[family]
        h = self.headers
        if family == "azure":
            return h.get("api-key") == key
        if family == "anthropic":
            # x-api-key as the API reference shows; the anthropic SDK 2.x sends the same key as a bearer token
            return (h.get("x-api-key") == key or h.get("Authorization") == "Bearer " + key) and bool(
                h.get("anthropic-version"))
        if family == "gemini":
            return h.get("x-goog-api-key") == key
        return h.get("Authorization") == "Bearer " + key

    # -- routing ----------------------------------------------------------------------------------
    def _route(self, method, path, query, raw, family):
        if family in ("openai", "azure"):
            prefix = "/openai/v1" if family == "azure" else "/v1"
            live = re.match(r"^/openai/deployments/([^/]+)/chat/completions$", path)
            if live and method == "POST":
                return self._live("openai", "chat", raw)
            if not path.startswith(prefix + "/"):
                return False
            rest = path[len(prefix):]
            return self._openai(method, rest, raw, family)
        if family == "anthropic":
            return self._anthropic(method, path, raw)
        return self._gemini(method, path, query, raw)

    def _live(self, provider, api, raw):
        body = json.loads(raw or b"{}")
        status, answer = self.fake.answer(provider, api, body)
        _json(self, status, answer)
        return True

    # -- OpenAI / Azure ---------------------------------------------------------------------------
    def _openai(self, method, rest, raw, family):
        fake = self.fake
        lives = {"/chat/completions": "chat", "/responses": "responses", "/embeddings": "embeddings"}
        if method == "POST" and rest in lives:
            return self._live("openai", lives[rest], raw)
        if method == "POST" and rest == "/files":
            fields, files = _multipart(self.headers.get("Content-Type", ""), raw)
            if fields.get("purpose") != "batch":
                _openai_error(self, 400, "purpose must be batch here")
                return True
            if "file" not in files:
                _openai_error(self, 400, "no file")
                return True
            filename, data = files["file"]
            file_id = fake.new_id("file-")
            fake.files[file_id] = {"bytes": data, "purpose": "batch", "filename": filename}
            _json(self, 200, {"id": file_id, "object": "file", "bytes": len(data), "created_at": int(time.time()),
                              "filename": filename, "purpose": "batch", "status": "processed"})
            return True
        match = re.match(r"^/files/([^/]+)/content$", rest)
        if method == "GET" and match:
            entry = fake.files.get(match.group(1))
            if entry is None:
                _openai_error(self, 404, "no such file")
                return True
            _raw(self, 200, entry["bytes"], "application/octet-stream")
            return True
        if method == "POST" and rest == "/batches":
            body = json.loads(raw)
            return self._openai_create(body, family)
        if method == "GET" and rest == "/batches":  # newest first, ``limit`` a page, ``after`` the cursor
            page = self._page([b for b in fake.batches.values() if b.kind == family], self._query, "after")
            page.update(object="list", data=[self._openai_object(b) for b in page["data"]])
            _json(self, 200, page)
            return True
        match = re.match(r"^/batches/([^/]+)(/cancel)?$", rest)
        if match:
            batch = fake.batches.get(match.group(1))
            if batch is None or batch.kind != family:
                _openai_error(self, 404, "no such batch")
                return True
            if match.group(2):
                if method != "POST":
                    return False
                fake.cancel(batch)
                _json(self, 200, self._openai_object(batch))
                return True
            if method == "GET":
                fake.look(batch)
                _json(self, 200, self._openai_object(batch))
                return True
        return False

    def _openai_create(self, body, family):
        fake = self.fake
        if body.get("completion_window") != "24h":
            _openai_error(self, 400, "completion_window must be 24h")
            return True
        endpoint = body.get("endpoint")
        allowed = ("/chat/completions",) if family == "azure" else ("/v1/chat/completions", "/v1/responses",
                                                                     "/v1/embeddings")
        if endpoint not in allowed:
            _openai_error(self, 400, "unsupported endpoint {!r}".format(endpoint))
            return True
        entry = fake.files.get(body.get("input_file_id"))
        if entry is None or entry["purpose"] != "batch":
            _openai_error(self, 400, "input_file_id must name a file of purpose batch")
            return True
        batch = _Batch(family, fake.new_id("batch_"), [], endpoint=endpoint)
        errors = []
        seen = set()
        models = set()
        urls = set()
        lines = [line for line in entry["bytes"].split(b"\n") if line.strip()]
        limit = AZURE_MAX_REQUESTS if family == "azure" else OPENAI_MAX_REQUESTS
        if len(lines) > limit:
            errors.append({"code": "too_many_tasks", "message": "more than {} requests".format(limit)})
        for number, line in enumerate(lines, 1):
            try:
                item = json.loads(line)
            except ValueError:
                errors.append({"code": "invalid_json_line", "message": "line {} is not JSON".format(number),
                               "line": number})
                continue
            custom_id, url, req = item.get("custom_id"), item.get("url"), item.get("body") or {}
            if not isinstance(custom_id, str) or custom_id in seen:
                errors.append({"code": "duplicate_custom_id", "message": "custom_id repeated or missing", "line": number})
            seen.add(custom_id)
            if item.get("method") != "POST":
                errors.append({"code": "invalid_request", "message": "method must be POST", "line": number})
            if req.get("stream"):
                errors.append({"code": "invalid_request", "message": "stream is not supported in batch", "line": number})
            models.add(req.get("model"))
            urls.add(url)
            if family == "openai" and url != endpoint:
                errors.append({"code": "url_mismatch", "message": "line url differs from the batch endpoint",
                               "line": number})
            api = {"/v1/chat/completions": "chat", "/v1/responses": "responses", "/v1/embeddings": "embeddings"}.get(url)
            batch.requests.append((custom_id, req, api))
        if len(models) > 1:
            errors.append({"code": "model_mismatch", "message": "each input file can only include requests to a "
                                                                "single model"})
        if family == "azure" and len(urls) > 1:
            errors.append({"code": "url_mismatch", "message": "a row's url differs from the others"})
        batch.model = next(iter(models)) if models else None
        if errors:
            batch.terminal = "failed"
            batch.results = []
            batch.errors = errors
        fake.batches[batch.id] = batch
        batch.input_file_id = body["input_file_id"]
        _json(self, 200, self._openai_object(batch))
        return True

    @staticmethod
    def _page(batches, query, cursor):
        """One page of a list of batches, newest first: ``limit`` of them after the ``cursor`` id."""
        ordered = sorted(batches, key=lambda b: (b.created, b.id), reverse=True)
        after = query.get(cursor, [None])[0]
        if after is not None:
            ids = [b.id for b in ordered]
            ordered = ordered[ids.index(after) + 1:] if after in ids else []
        limit = int(query.get("limit", query.get("pageSize", ["20"]))[0])
        page = ordered[:limit]
        return {"data": page, "has_more": len(ordered) > limit, "first_id": page[0].id if page else None,
                "last_id": page[-1].id if page else None}

    def _openai_object(self, batch):
        status = {"completed": "completed", "expired": "expired", "cancelled": "cancelled", "failed": "failed",
                  None: "cancelling" if batch.state == "cancelling" else
                  ("validating" if batch.polls == 0 else "in_progress")}[batch.terminal]
        if batch.kind == "azure":
            status = status.capitalize()  # Azure's REST examples show "Validating"
        done = [r for r in (batch.results or [])]
        return {
            "id": batch.id, "object": "batch", "endpoint": batch.endpoint,
            "errors": {"object": "list", "data": batch.errors} if batch.errors else None,
            "input_file_id": getattr(batch, "input_file_id", None), "completion_window": "24h", "status": status,
            "output_file_id": batch.output_file_id, "error_file_id": batch.error_file_id,
            "created_at": batch.created, "in_progress_at": None, "expires_at": batch.created + 86400,
            "finalizing_at": None, "completed_at": None, "failed_at": None, "expired_at": None, "cancelling_at": None,
            "cancelled_at": None, "model": batch.model,
            "request_counts": {"total": len(batch.requests), "completed": sum(1 for r in done if r[1] == "ok"),
                               "failed": sum(1 for r in done if r[1] != "ok")},
            "metadata": None,
        }

    # -- Anthropic --------------------------------------------------------------------------------
    def _anthropic(self, method, path, raw):
        fake = self.fake
        if method == "POST" and path == "/v1/messages":
            return self._live("anthropic", "messages", raw)
        if method == "GET" and path == "/v1/messages/batches":
            page = self._page([b for b in fake.batches.values() if b.kind == "anthropic"], self._query, "after_id")
            page["data"] = [self._anthropic_object(b) for b in page["data"]]
            _json(self, 200, page)
            return True
        if method == "POST" and path == "/v1/messages/batches":
            body = json.loads(raw)
            requests = body.get("requests")
            if not isinstance(requests, list) or not 1 <= len(requests) <= 100000:
                _json(self, 400, {"type": "error", "error": {"type": "invalid_request_error",
                                                             "message": "requests: 1 to 100000 items"}})
                return True
            seen = set()
            batch = _Batch("anthropic", fake.new_id("msgbatch_"), [])
            for item in requests:
                custom_id, params = item.get("custom_id"), item.get("params") or {}
                if not isinstance(custom_id, str) or not _CUSTOM_ID.match(custom_id) or custom_id in seen:
                    _json(self, 400, {"type": "error", "error": {"type": "invalid_request_error",
                                                                 "message": "custom_id: invalid or repeated"}})
                    return True
                if "stream" in params:
                    _json(self, 400, {"type": "error", "error": {"type": "invalid_request_error",
                                                                 "message": "params.stream: not allowed in a batch"}})
                    return True
                seen.add(custom_id)
                batch.requests.append((custom_id, params, "messages"))
            fake.batches[batch.id] = batch
            _json(self, 200, self._anthropic_object(batch))
            return True
        match = re.match(r"^/v1/messages/batches/([^/]+)(/cancel|/results)?$", path)
        if not match:
            return False
        batch = fake.batches.get(match.group(1))
        if batch is None or batch.kind != "anthropic":
            _json(self, 404, {"type": "error", "error": {"type": "not_found_error", "message": "no such batch"}})
            return True
        tail = match.group(2)
        if tail == "/cancel" and method == "POST":
            self.fake.cancel(batch)
            _json(self, 200, self._anthropic_object(batch))
            return True
        if tail == "/results" and method == "GET":
            if batch.results is None:
                _json(self, 400, {"type": "error", "error": {"type": "invalid_request_error",
                                                             "message": "batch has not ended"}})
                return True
            lines = []
            for custom_id, kind, status, body in batch.results:
                if kind == "ok":
                    result = {"type": "succeeded", "message": body}
                elif kind == "error":
                    result = {"type": "errored", "error": dict(body, request_id="req_fake")}
                else:
                    result = {"type": "canceled" if kind == "cancelled" else "expired"}
                lines.append(json.dumps({"custom_id": custom_id, "result": result}) + "\n")
            _raw(self, 200, "".join(lines).encode(), "application/binary")
            return True
        if tail is None and method == "GET":
            fake.look(batch)
            _json(self, 200, self._anthropic_object(batch))
            return True
        return False

    def _anthropic_object(self, batch):
        ended = batch.results is not None
        counts = {"processing": 0 if ended else len(batch.requests), "succeeded": 0, "errored": 0, "canceled": 0,
                  "expired": 0}
        for _, kind, _, _ in batch.results or []:
            counts[{"ok": "succeeded", "error": "errored", "cancelled": "canceled", "expired": "expired"}[kind]] += 1
        stamp = "2026-12-01T12:00:00.000000Z"
        created = time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime(batch.created))
        return {"id": batch.id, "type": "message_batch",
                "processing_status": "ended" if ended else ("canceling" if batch.state == "cancelling" else "in_progress"),
                "request_counts": counts, "ended_at": stamp if ended else None, "created_at": created,
                "expires_at": "2026-12-02T12:00:00.000000Z", "archived_at": None,
                "cancel_initiated_at": stamp if batch.cancel_requested else None,
                "results_url": "{}/v1/messages/batches/{}/results".format(self.fake.url, batch.id) if ended else None}

    # -- Gemini -----------------------------------------------------------------------------------
    def _gemini(self, method, path, query, raw):
        fake = self.fake
        match = re.match(r"^/v1beta/models/([^/:]+):(streamGenerateContent|generateContent|batchGenerateContent|"
                         r"embedContent|batchEmbedContents|asyncBatchEmbedContent)$", path)
        if match and method == "POST":
            model, verb = match.group(1), match.group(2)
            if verb == "embedContent":
                return self._live("gemini", "embeddings", raw)
            if verb == "batchEmbedContents":
                answers = [fake.answer("gemini", "embeddings", r) for r in json.loads(raw).get("requests", [])]
                bad = [a for status, a in answers if status != 200]
                _json(self, 400, bad[0]) if bad else _json(self, 200, {"embeddings": [a["embedding"] for _, a in answers]})
                return True
            if verb in ("streamGenerateContent", "generateContent"):
                return self._live("gemini", "generate", raw)
            return self._gemini_create(model, json.loads(raw), "embeddings" if verb.startswith("async") else "generate")
        if path == "/upload/v1beta/files" and method == "POST":
            command = (self.headers.get("X-Goog-Upload-Command") or "").strip().lower()
            if "upload_id" not in query:
                if command != "start" or self.headers.get("X-Goog-Upload-Protocol") != "resumable":
                    _json(self, 400, {"error": {"code": 400, "message": "resumable start expected",
                                                "status": "INVALID_ARGUMENT"}})
                    return True
                session = fake.new_id("up")
                meta = json.loads(raw or b"{}").get("file") or {}
                fake.uploads[session] = {"display_name": meta.get("display_name") or meta.get("displayName"),
                                         "data": b"", "mime": self.headers.get("X-Goog-Upload-Header-Content-Type"),
                                         "size": int(self.headers.get("X-Goog-Upload-Header-Content-Length") or 0)}
                _json(self, 200, {}, {"X-Goog-Upload-URL": "{}/upload/v1beta/files?upload_id={}".format(
                    fake.url, session), "X-Goog-Upload-Status": "active"})
                return True
            upload = fake.uploads.get(query["upload_id"][0])
            if upload is None or int(self.headers.get("X-Goog-Upload-Offset") or -1) != len(upload["data"]):
                _json(self, 400, {"error": {"code": 400, "message": "bad upload session or offset",
                                            "status": "INVALID_ARGUMENT"}})
                return True
            upload["data"] += raw
            if "finalize" not in command:
                _json(self, 200, {}, {"X-Goog-Upload-Status": "active"})
                return True
            file_id = fake.new_id("files/in")
            fake.files[file_id] = {"bytes": upload["data"], "purpose": "gemini", "filename": upload["display_name"]}
            _json(self, 200, {"file": {"name": file_id, "displayName": upload["display_name"],
                                       "mimeType": upload["mime"], "sizeBytes": str(len(upload["data"])),
                                       "uri": "{}/v1beta/{}".format(fake.url, file_id), "state": "ACTIVE"}},
                  {"X-Goog-Upload-Status": "final"})
            return True
        match = re.match(r"^(?:/download)?/v1beta/(files/[^/:]+):download$", path)
        if match and method == "GET":
            entry = fake.files.get(match.group(1))
            if entry is None:
                _json(self, 404, {"error": {"code": 404, "message": "no such file", "status": "NOT_FOUND"}})
                return True
            _raw(self, 200, entry["bytes"], "application/octet-stream")
            return True
        if method == "GET" and path == "/v1beta/batches":  # operations, newest first, pageToken the cursor
            page = self._page([b for b in fake.batches.values() if b.kind == "gemini"], query, "pageToken")
            answer = {"operations": [self._gemini_operation(b) for b in page["data"]]}
            if page["has_more"]:
                answer["nextPageToken"] = page["last_id"]
            _json(self, 200, answer)
            return True
        match = re.match(r"^/v1beta/(batches/[^/:]+)(:cancel)?$", path)
        if match:
            batch = fake.batches.get(match.group(1))
            if batch is None:
                _json(self, 404, {"error": {"code": 404, "message": "no such batch", "status": "NOT_FOUND"}})
                return True
            if match.group(2) and method == "POST":
                fake.cancel(batch)
                _json(self, 200, {})
                return True
            if method == "GET":
                fake.look(batch)
                _json(self, 200, self._gemini_operation(batch))
                return True
        return False

    def _gemini_create(self, model, body, api):
        fake = self.fake
        spec = body.get("batch") or {}
        source = spec.get("input_config") or spec.get("inputConfig") or {}
        file_name = source.get("file_name") or source.get("fileName")
        inline = (source.get("requests") or {}).get("requests")
        batch = _Batch("gemini", fake.new_id("batches/b"), [], model=model)
        batch.display_name = spec.get("display_name") or spec.get("displayName")
        batch.inline = inline is not None
        if inline is not None:
            if file_name:
                _json(self, 400, {"error": {"code": 400, "message": "one source only", "status": "INVALID_ARGUMENT"}})
                return True
            for n, item in enumerate(inline):
                key = (item.get("metadata") or {}).get("key")
                batch.requests.append((key, item.get("request") or {}, api))
        elif file_name:
            entry = fake.files.get(file_name)
            if entry is None:
                _json(self, 400, {"error": {"code": 400, "message": "no such file", "status": "INVALID_ARGUMENT"}})
                return True
            for line in entry["bytes"].split(b"\n"):
                if line.strip():
                    item = json.loads(line)
                    batch.requests.append((item.get("key"), item.get("request") or {}, api))
        else:
            _json(self, 400, {"error": {"code": 400, "message": "input_config required", "status": "INVALID_ARGUMENT"}})
            return True
        fake.batches[batch.id] = batch
        _json(self, 200, self._gemini_operation(batch))
        return True

    def _gemini_operation(self, batch):
        state = {"completed": "BATCH_STATE_SUCCEEDED", "expired": "BATCH_STATE_EXPIRED",
                 "cancelled": "BATCH_STATE_CANCELLED", "failed": "BATCH_STATE_FAILED",
                 None: "BATCH_STATE_PENDING" if batch.polls == 0 else "BATCH_STATE_RUNNING"}[batch.terminal]
        done = [r for r in batch.results or []]
        metadata = {"@type": "type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatch",
                    "model": "models/" + batch.model, "displayName": batch.display_name, "name": batch.id,
                    "createTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(batch.created)), "updateTime": "2026-12-01T12:00:00Z", "state": state,
                    "batchStats": {"requestCount": str(len(batch.requests)),
                                   "successfulRequestCount": str(sum(1 for r in done if r[1] == "ok")),
                                   "failedRequestCount": str(sum(1 for r in done if r[1] == "error")),
                                   "pendingRequestCount": str(0 if batch.results is not None else len(batch.requests))}}
        operation = {"name": batch.id, "metadata": metadata}
        if batch.terminal is not None:
            operation["done"] = True
        if batch.terminal == "completed":
            items = []
            for key, kind, status, body in done:
                item = {"metadata": {"key": key}} if key is not None else {}
                if kind == "ok":
                    item["response"] = body
                else:
                    item["error"] = body["error"]
                items.append(item)
            if batch.inline:
                output = {"inlinedResponses": {"inlinedResponses": items}}
            else:
                file_id = getattr(batch, "responses_file", None)
                if file_id is None:
                    file_id = batch.responses_file = self.fake.new_id("files/out")
                    lines = []
                    for item in items:
                        line = {"key": (item.get("metadata") or {}).get("key")}
                        line.update({k: v for k, v in item.items() if k != "metadata"})
                        lines.append(json.dumps(line) + "\n")
                    self.fake.files[file_id] = {"bytes": "".join(lines).encode(), "purpose": "gemini",
                                                "filename": "results"}
                output = {"responsesFile": file_id}
            metadata["output"] = output
            operation["response"] = dict(output, **{
                "@type": "type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatchOutput"})
        return operation


def _multipart(content_type, raw):
    """(text fields, {name: (filename, bytes)}) of a multipart/form-data body."""
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + raw)
    fields, files = {}, {}
    if not message.is_multipart():
        return fields, files
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        filename = part.get_param("filename", header="content-disposition")
        payload = part.get_payload(decode=True) or b""
        if filename is not None:
            files[name] = (filename, payload)
        else:
            fields[name] = payload.decode()
    return fields, files
