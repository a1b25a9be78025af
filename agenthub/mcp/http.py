"""Streamable HTTP (MCP 2025-03-26 and later) over agenthub's transport and SSE decoder.

One POST per message.  A request is answered with one JSON document or with an SSE stream scoped
to it (notifications first, then the response); both are read here, the stream through
``agenthub.sse`` with a per-message size cap.  Closing the response cancels the request
(2026-07-28 "Cancellation"); ``abort()`` does it from any thread.  Each POST goes through the one
attempt loop (``agenthub.attempts.run_attempts``: abort, deadline, scrubbing), sent once: no retry
policy of its own.  Timeouts: ``timeout`` seconds to connect, of silence, and in all for one exchange.

Credentials: the caller's headers go on requests to the MCP endpoint only (that URL, never a
redirect: redirects are not followed), and their values are scrubbed from every error.
"""

import json
import threading
import time
from typing import Any, Callable, Dict, Iterator, List, Optional, Set, Tuple

from .. import transport as _transport
from .._redact import redact_url, scrub_text, secret_values, url_secrets
from ..attempts import Attempt, Timeout, run_attempts, scrub as _scrub
from ..answers import error_from_body as _default_error_from_body, starts_stream
from ..errors import AgentHubError, ConfigError, StreamProtocolError, TransportError, preview
from ..hosts.trust import check_base_url, url_origin
from ..sse import iter_events
from ..types import HttpRequest
from . import jsonrpc
from .jsonrpc import Message

__all__ = ["HttpChannel", "MAX_MESSAGE_BYTES", "MAX_ANSWER_BYTES"]

#: the largest single message accepted (an SSE event's data, or a JSON answer: transport's own cap)
MAX_MESSAGE_BYTES = 16 * 1024 * 1024
#: the most bytes one exchange may read in all (notifications included)
MAX_ANSWER_BYTES = 64 * 1024 * 1024
#: a stream cut before its response is resumed at most this many times (handshake era)
MAX_RESUMES = 10
#: the wait before resuming when the server gave no ``retry``; a longer ``retry`` than the cap is cut
DEFAULT_RETRY_MS = 100
MAX_RETRY_MS = 30000


def _error_from_body(status: Optional[int], headers: Any, payload: Any, client: str = "") -> AgentHubError:
    """An error answer: a JSON-RPC error object becomes MCPError (with the HTTP status), anything else
    the HTTP error agenthub reads from any server."""
    doc = payload
    if isinstance(payload, (bytes, bytearray)):
        try:
            doc = json.loads(bytes(payload).decode("utf-8", "replace"))
        except (ValueError, RecursionError):
            doc = None
    if isinstance(doc, list) and doc:
        doc = doc[0]
    if isinstance(doc, dict) and doc.get("jsonrpc") == "2.0" and isinstance(doc.get("error"), dict):
        return jsonrpc.error_from_object(doc["error"], status=status, server=client or None)
    return _default_error_from_body(status, headers or {}, payload, client)


def scrub(error: BaseException, secrets: List[str]) -> None:
    """Replace each secret in the error's message and text fields with ``***`` (``attempts.scrub``),
    and in a JSON-RPC error's ``data`` too."""
    if not secrets or not isinstance(error, AgentHubError):
        return
    _scrub(error, secrets)
    fields = getattr(error, "_fields", None)
    if isinstance(fields, dict):
        for name, value in list(fields.items()):
            if isinstance(value, (dict, list)) and name == "data":  # a JSON-RPC error's data, as the server sent it
                text = json.dumps(value, ensure_ascii=False)
                clean = scrub_text(text, secrets)
                if clean != text:
                    try:
                        fields[name] = json.loads(clean)
                    except ValueError:
                        fields[name] = None
                    setattr(error, name, fields[name])


class _Cursor(object):
    """Where a resumable stream stands: the last event id seen and the server's reconnection wait."""

    __slots__ = ("last_id", "retry_ms")

    def __init__(self) -> None:
        self.last_id = None  # type: Optional[str]
        self.retry_ms = DEFAULT_RETRY_MS


class Answer(object):
    """What one exchange brought back: the response message, the HTTP status and headers."""

    __slots__ = ("message", "status", "headers")

    def __init__(self, message: Optional[Message], status: Optional[int], headers: Any) -> None:
        self.message = message
        self.status = status
        self.headers = headers


class HttpChannel(object):
    """POSTs JSON-RPC messages to one MCP endpoint; thread-safe (each exchange has its own watch)."""

    transport = "http"

    def __init__(self, url: str, headers: Optional[Dict[str, str]] = None, timeout: float = 60.0,
                 name: Optional[str] = None) -> None:
        self.url = check_base_url(url, "an MCP server URL")
        self.origin = url_origin(url)
        for key, value in (headers or {}).items():
            if not isinstance(key, str) or not isinstance(value, str):
                raise ConfigError("headers must map str to str (got {} for {})".format(
                    type(value).__name__, type(key).__name__ if not isinstance(key, str) else repr(key)))
            if "\n" in value or "\r" in value or "\n" in key or "\r" in key:
                raise ConfigError("header {!r}: a line break is not allowed in a header".format(
                    key if "\n" not in key else "(name)"))
        self.headers = dict(headers or {})
        self.secrets = sorted(set(secret_values({}, self.headers.values())) | set(url_secrets(url)),
                              key=len, reverse=True)
        self.timeout = timeout
        self.label = name or redact_url(url.split("?", 1)[0])
        self._session = _transport.new_session()
        self._lock = threading.Lock()
        self._watches = set()  # type: Set[Any]
        self._closed = False

    # -- one exchange ----------------------------------------------------------------------------
    def _request(self, method: str, headers: Dict[str, str], body: Optional[bytes]) -> HttpRequest:
        merged = dict(self.headers)
        for key in list(merged):
            if key.lower() in {h.lower() for h in headers}:
                del merged[key]  # the protocol's own headers win over a caller's same-named one
        merged.update(headers)
        return HttpRequest(method, self.url, headers=merged, body=None, data=body)

    def _limits(self, timeout: float) -> Tuple[float, float]:
        return (timeout, timeout)

    def exchange(self, message: Dict[str, Any], headers: Dict[str, str], timeout: Optional[float] = None,
                 on_message: Optional[Callable[[Message], None]] = None, resumable: bool = False) -> Answer:
        """POST ``message`` and read its answer: for a request, the response with its id (notifications
        before it go to ``on_message``; a request from the server too, and its answer is POSTed back by
        the caller).  ``resumable`` (the handshake era): a stream the server closes before the response,
        after an event with an id, is resumed by GET with Last-Event-ID (2025-11-25 "Resumability and
        Redelivery"), after the server's ``retry`` wait."""
        timeout = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + timeout
        ident = message.get("id")
        watch = _transport.Watch()
        with self._lock:
            if self._closed:
                raise TransportError("{}: the MCP connection is closed".format(self.label), client=self.label,
                                     retryable=False, aborted=True)
            self._watches.add(watch)
        request = self._request("POST", headers, jsonrpc.encode(message))
        # the one attempt loop (agenthub.attempts): abort, the deadline, scrubbing; sent once (max_retries=0:
        # a tools/call is not known to be idempotent), no model hooks (an MCP request is not a model call)
        call = Attempt("stream", "mcp", str(message.get("method")), request)
        found = []  # type: List[Answer]

        def connect(sent: HttpRequest, limits: Any) -> Any:
            return _transport.open_stream(self._session, sent, limits, self.label, watch=watch,
                                          error_from_body=_error_from_body, is_stream=starts_stream)

        def read(body: Any) -> Iterator[Dict[str, Any]]:
            found.append(self._read(body, ident, headers, deadline, on_message, watch, resumable))
            yield {"event_type": "stop", "created_at": int(time.time() * 1000), "usage_metadata": None,
                   "finish_reason": None}

        try:
            for _ in run_attempts(call, watch, encode=lambda plan: plan, connect=connect, read=read, hooks=(),
                                  max_retries=0, timeout=Timeout(timeout, timeout, timeout),
                                  secrets=lambda sent, config: self.secrets):
                pass
            return found[0]
        except AgentHubError as error:
            if isinstance(error, jsonrpc.MCPError) and error.status is None and call.status is not None:
                error.status = error._fields["status"] = call.status
            if watch.reason == "abort" and isinstance(error, TransportError):
                error.aborted = error._fields["aborted"] = True
            scrub(error, self.secrets)
            raise
        finally:
            with self._lock:
                self._watches.discard(watch)

    def _read(self, stream: Any, ident: Any, headers: Dict[str, str], deadline: float, on_message: Any, watch: Any,
              resumable: bool) -> Answer:
        """The answer of an opened body: one JSON document, or an event stream (resumed when it may be)."""
        status, answer_headers = stream.status, stream.headers
        if stream.document is not None:
            return Answer(self._from_document(stream.document, ident), status, answer_headers)
        cursor = _Cursor()
        found = self._from_stream(stream, ident, deadline, on_message, watch, cursor if resumable else None)
        resumed = 0
        try:
            while found is None:
                resumed += 1
                if resumed > MAX_RESUMES or cursor.last_id is None:
                    raise StreamProtocolError("{}: the event stream ended before the response to request {!r}".format(
                        self.label, ident), client=self.label, retryable=True)
                wait = min(cursor.retry_ms / 1000.0, max(0.0, deadline - time.monotonic()))
                if not watch.sleep(wait):
                    raise TransportError("{}: the call was aborted".format(self.label), client=self.label,
                                         aborted=True, retryable=False)
                again = {k: v for k, v in headers.items() if k.lower() not in ("content-type", "accept")}
                again.update({"Accept": "text/event-stream", "Last-Event-ID": cursor.last_id})
                stream.close()
                stream = _transport.open_stream(self._session, self._request("GET", again, None),
                                                self._limits(max(0.001, deadline - time.monotonic())), self.label,
                                                watch=watch, error_from_body=_error_from_body)
                found = self._from_stream(stream, ident, deadline, on_message, watch, cursor)
            return Answer(found, status, answer_headers)
        finally:
            stream.close()

    def _from_document(self, document: Any, ident: Any) -> Message:
        message = jsonrpc.decode(document, self.label)
        if message.kind in ("result", "error") and (message.id == ident or (message.kind == "error" and message.id is None)):
            return message
        raise StreamProtocolError("{}: the answer is {} for id {!r}, not the response to request {!r}".format(
            self.label, message.kind, preview(str(message.id), 40), ident), client=self.label)

    def _chunks(self, stream: Any, deadline: float, watch: Any) -> Iterator[bytes]:
        total = 0
        for chunk in stream.iter_chunks():
            total += len(chunk)
            if total > MAX_ANSWER_BYTES:
                raise StreamProtocolError("{}: the answer is larger than {} bytes (MAX_ANSWER_BYTES)".format(
                    self.label, MAX_ANSWER_BYTES), client=self.label, retryable=False)
            if time.monotonic() > deadline:
                raise TransportError("{}: no response within the timeout".format(self.label), client=self.label,
                                     timeout=True, deadline=True)
            yield chunk

    def _from_stream(self, stream: Any, ident: Any, deadline: float, on_message: Any, watch: Any,
                     cursor: "Optional[_Cursor]" = None) -> Optional[Message]:
        """The response read from an event stream; None when the stream ended before it and ``cursor``
        (resumable) holds an event id to resume from."""
        events = iter_events(self._chunks(stream, deadline, watch), MAX_MESSAGE_BYTES)
        try:
            for event in events:
                if cursor is not None:
                    if event.id:
                        cursor.last_id = event.id
                    if event.retry is not None:
                        cursor.retry_ms = min(event.retry, MAX_RETRY_MS)
                if not event.data.strip():
                    continue  # a priming event (an id, no data: 2025-11-25 "Sending Messages")
                message = jsonrpc.decode(event.data, self.label)
                if message.kind in ("result", "error"):
                    if message.id != ident:
                        raise StreamProtocolError("{}: the stream answered request {!r} while {!r} was "
                                                  "asked".format(self.label, preview(str(message.id), 40), ident),
                                                  client=self.label)
                    stream.finish()
                    return message
                if on_message is not None:
                    on_message(message)
        except TransportError as error:
            if watch.reason == "abort":
                error.aborted = error._fields["aborted"] = True
            raise
        finally:
            close = getattr(events, "close", None)
            if close is not None:
                close()
        if watch.reason is not None:
            raise TransportError("{}: the call was aborted".format(self.label), client=self.label, aborted=True,
                                 retryable=False)
        if cursor is not None and cursor.last_id is not None:
            return None
        raise StreamProtocolError("{}: the event stream ended before the response to request {!r}".format(
            self.label, ident), client=self.label, retryable=True)

    def post(self, message: Dict[str, Any], headers: Dict[str, str], timeout: Optional[float] = None) -> None:
        """POST a notification or a response (202 expected; an error answer raises; a body is not read)."""
        timeout = self.timeout if timeout is None else timeout
        try:
            body = _transport.open_raw(self._session, self._request("POST", headers, jsonrpc.encode(message)),
                                       self._limits(timeout), self.label, error_from_body=_error_from_body)
        except AgentHubError as error:
            scrub(error, self.secrets)
            raise
        body.close()

    def delete(self, headers: Dict[str, str], timeout: float = 5.0) -> None:
        """DELETE the endpoint (ends a handshake-era session; a 405 means the server keeps it)."""
        try:
            body = _transport.open_raw(self._session, self._request("DELETE", headers, None),
                                       self._limits(timeout), self.label, error_from_body=_error_from_body)
            body.close()
        except AgentHubError:
            pass  # best effort: the server may refuse (405) or be gone

    def legacy_sse(self, timeout: float) -> bool:
        """True when a GET on the URL opens an event stream whose first event is ``endpoint``: the
        deprecated HTTP+SSE transport of 2024-11-05 (2026-07-28 transports "Backward Compatibility")."""
        request = self._request("GET", {"Accept": "text/event-stream"}, None)
        try:
            body = _transport.open_raw(self._session, request, self._limits(min(timeout, 5.0)), self.label)
        except AgentHubError:
            return False
        try:
            if "text/event-stream" not in (body.headers.get("content-type") or ""):
                return False
            for event in iter_events(iter(body), 64 * 1024):
                return event.event == "endpoint"
            return False
        except AgentHubError:
            return False
        finally:
            body.close()

    def abort(self) -> None:
        with self._lock:
            watches = list(self._watches)
        for watch in watches:
            watch.stop("abort")

    def close(self) -> None:
        with self._lock:
            self._closed = True
        self.abort()
        try:
            self._session.close()
        except Exception:  # pragma: no cover - closing pools is best effort
            pass
