"""Streamable HTTP (MCP 2025-03-26 and later) over agenthub's transport and SSE decoder.

One POST per message.  A request is answered with one JSON document or with an SSE stream scoped
to it (notifications first, then the response); both are read here, the stream through
``agenthub.sse`` with a per-message size cap.  Closing the response cancels the request
(2026-07-28 "Cancellation"); ``abort()`` does it from any thread.  Each step (an exchange, a POST,
the DELETE, the deprecated-transport probe) runs MCP's own small loop (``_Step``): a ``Watch`` that
``abort()`` and a wall-clock timer stop, so ``timeout`` bounds it in all (to connect, of silence, and
in all), whatever the server trickles.  A POST is sent once (a ``tools/call`` is not known to be
idempotent); a GET (resuming an answer, the listening stream) is tried again on the client's retry
policy (``agenthub.attempts.backoff``).  A cut handshake-era answer is resumed with
``agenthub.resume.Resumable`` (its cursor and stall rules; the cursor is the SSE event id).

Handshake era: after ``initialize`` the channel opens the GET stream that carries what the server
sends outside any request (``notifications/tools/list_changed``, its own requests), on a thread of
its own, reconnected with Last-Event-ID while the handle is open (bounded: ``LISTEN_MAX_RECONNECTS``
in a row without an event, a 405 ends it for good), and closed by ``close()``.

Credentials: the caller's headers go on requests to the MCP endpoint only (that URL, never a
redirect: redirects are not followed), and their values are scrubbed from every error.
"""

import heapq
import json
import os
import threading
import time
import weakref
from typing import Any, Callable, Dict, Iterator, List, Optional, Set, Tuple

from .. import transport as _transport
from .._redact import redact_url, secret_values, url_query_secrets
from ..answers import error_from_body as _default_error_from_body, starts_stream
from ..attempts import backoff
from ..errors import AgentHubError, ConfigError, StreamProtocolError, TransportError, UpstreamError, preview
from ..hosts.trust import check_base_url, url_origin
from ..resume import RESUMED, Resumable, resume_delay
from ..sse import iter_events
from ..types import HttpRequest
from ..validate import _short, check_distinct_header_names, check_header_name, check_header_value
from . import jsonrpc
from .channel import Answer, Channel, modern_refusal, scrub, weak_handler
from .jsonrpc import MCPError, Message
from .._jsondepth import loads as _json_loads

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
#: a GET (a resumption, the listening stream) is tried again at most this many times after a retryable failure
GET_RETRIES = 2
#: the listening stream (handshake era) is reopened at most this many times in a row without bringing an event
LISTEN_MAX_RECONNECTS = 5
#: the listening stream is reopened no sooner than this (seconds), whatever ``retry`` the server gave: a server that
#: ends each listening stream after one message, with ``retry: 0``, would have it reopened in a busy loop for as
#: long as the handle is open (a stream that brings a message is no quiet one, so no backoff ever grows)
LISTEN_MIN_WAIT = DEFAULT_RETRY_MS / 1000.0
#: the deprecated-transport probe reads at most this long and this much
PROBE_SECONDS = 5.0
PROBE_BYTES = 64 * 1024


def _error_from_body(status: Optional[int], headers: Any, payload: Any, client: str = "") -> AgentHubError:
    """An error answer: a JSON-RPC error object becomes MCPError (with the HTTP status), anything else
    the HTTP error agenthub reads from any server."""
    doc = payload
    if isinstance(payload, (bytes, bytearray)):
        try:
            doc = _json_loads(bytes(payload).decode("utf-8", "replace"))
        except (ValueError, RecursionError):
            doc = None
    if isinstance(doc, list) and doc:
        doc = doc[0]
    if isinstance(doc, dict) and doc.get("jsonrpc") == "2.0" and isinstance(doc.get("error"), dict):
        return jsonrpc.error_from_object(doc["error"], status=status, server=client or None)
    return _default_error_from_body(status, headers or {}, payload, client)


def _stopped(label: str, watch: Any, timeout: float, reason: Optional[str] = None) -> TransportError:
    """The error of a step its watch stopped: the caller's abort (``aborted``) or the deadline (``timeout``)."""
    if (reason or watch.reason) == "deadline":
        error = TransportError("{}: no response within the timeout of {:g} s (in all)".format(label, timeout),
                               client=label, timeout=True, deadline=True, aborted=False, retryable=False)
    else:
        error = TransportError("{}: the call was aborted (the MCP connection is closed)".format(label), client=label,
                               timeout=False, deadline=False, aborted=True, retryable=False)
    error.__dict__["_mcp_stop"] = True  # not a field: kept out of reprs
    return error


class _Frame(object):
    """One SSE event of an answer with its decoded message (None: no data, e.g. a priming event), as
    ``resume.Resumable`` reads it (``data`` is true for any event that carries an id or data)."""

    __slots__ = ("event", "message", "data")

    def __init__(self, event: Any, message: Optional[Message]) -> None:
        self.event = event
        self.message = message
        self.data = bool(event.id or message is not None)


class _Deadlines(object):
    """The deadlines of every step in flight in this process, kept by one thread (a step used to start a
    ``threading.Timer`` of its own: a thread per call): at a step's deadline its watch is stopped
    ("deadline").  The thread starts with the first deadline and ends once none has been waiting for
    ``IDLE`` seconds; in a forked child it starts again (the parent's thread is not there)."""

    IDLE = 1.0  # seconds with no step in flight before the thread ends
    TICK = 0.5  # the longest the thread sleeps at once (so it notices it is idle)

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._heap = []  # type: List[Tuple[float, int, List[Any]]]  # (when, seq, [watch or None: cancelled])
        self._seq = 0
        self._cancelled = 0  # cancelled entries still in the heap
        self._thread = None  # type: Optional[threading.Thread]
        self._wake_at = 0.0  # when the thread wakes next (it is told of an earlier deadline)

    def add(self, when: float, watch: Any) -> List[Any]:
        entry = [watch]  # type: List[Any]
        with self._cond:
            self._seq += 1
            heapq.heappush(self._heap, (when, self._seq, entry))
            if self._thread is None:
                self._thread = threading.Thread(target=self._serve, name="agenthub-mcp-deadlines", daemon=True)
                self._wake_at = when
                self._thread.start()
            elif when < self._wake_at:
                self._wake_at = when
                self._cond.notify()
        return entry

    def cancel(self, entry: Optional[List[Any]]) -> None:
        if entry is None or entry[0] is None:
            return
        with self._cond:
            if entry[0] is None:
                return
            entry[0] = None
            self._cancelled += 1
            if self._cancelled == len(self._heap):
                del self._heap[:]
                self._cancelled = 0
            elif self._cancelled > 64 and self._cancelled * 2 > len(self._heap):
                self._heap = [item for item in self._heap if item[2][0] is not None]
                heapq.heapify(self._heap)
                self._cancelled = 0

    def _serve(self) -> None:
        me = threading.current_thread()
        with self._cond:
            idle_since = None  # type: Optional[float]
            while self._thread is me:
                now = time.monotonic()
                heap = self._heap
                while heap and (heap[0][2][0] is None or heap[0][0] <= now):
                    _, _, entry = heapq.heappop(heap)
                    watch = entry[0]
                    if watch is None:
                        self._cancelled -= 1
                        continue
                    entry[0] = None
                    watch.stop("deadline")  # (no lock of ours taken there: it shuts the step's socket down)
                if heap:
                    idle_since = None
                    self._wake_at = min(heap[0][0], now + self.TICK)
                else:
                    idle_since = now if idle_since is None else idle_since
                    if now - idle_since >= self.IDLE:
                        self._thread = None
                        return
                    self._wake_at = now + min(self.TICK, self.IDLE - (now - idle_since))
                self._cond.wait(max(0.0, self._wake_at - now))


_DEADLINES = _Deadlines()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_DEADLINES._reset)


class _Step(object):
    """MCP's own loop for one step: a Watch the channel's ``abort()`` stops, a deadline (``_DEADLINES``) that
    stops it, and the opening of requests on the retry policy (a POST once, a GET ``retries`` more times)."""

    def __init__(self, channel: "HttpChannel", timeout: float) -> None:
        self.channel = channel
        self.timeout = timeout
        self.deadline = time.monotonic() + timeout
        self.watch = _transport.Watch()
        self.status = None  # type: Optional[int]
        self._entry = None  # type: Any  # its place in _DEADLINES

    def __enter__(self) -> "_Step":
        self.channel._enter(self.watch)
        self._entry = _DEADLINES.add(self.deadline, self.watch)
        return self

    def __exit__(self, *exc: Any) -> None:
        _DEADLINES.cancel(self._entry)
        self.channel._leave(self.watch)

    def left(self) -> float:
        return self.deadline - time.monotonic()

    def check(self) -> None:
        """Raise the abort or the deadline when either came."""
        if self.watch.reason is not None:
            raise _stopped(self.channel.label, self.watch, self.timeout)
        if self.left() <= 0:
            raise _stopped(self.channel.label, self.watch, self.timeout, "deadline")

    def open(self, request: HttpRequest, retries: int = 0) -> Any:
        """The opened body of ``request`` (its head in; a JSON document read whole)."""
        tries = 0
        while True:
            self.check()
            left = self.left()
            body = _transport.open_stream(self.channel._session, request, (left, left), self.channel.label,
                                          watch=self.watch, error_from_body=_error_from_body, is_stream=starts_stream)
            try:
                body.open(False)
                self.status = body.status
                return body
            except AgentHubError as error:
                self.status = body.status
                body.close()
                if self.watch.reason is not None or self.left() <= 0:
                    raise self.settle(error)
                delay = backoff(tries, getattr(error, "retry_after", None)) if tries < retries and getattr(
                    error, "retryable", False) else None
                if delay is None or delay >= self.left():
                    raise
                tries += 1
                if not self.watch.sleep(delay):
                    raise self.settle(error)

    def settle(self, error: AgentHubError) -> AgentHubError:
        """The error to raise for ``error``: the abort or the deadline when either came (they win over
        what the cut made the transport say), scrubbed of the channel's secrets (and so is ``error``, then
        its cause)."""
        scrub(error, self.channel.secrets)
        if not error.__dict__.get("_mcp_stop") and (
                self.watch.reason is not None or (isinstance(error, TransportError) and self.left() <= 0)):
            stop = _stopped(self.channel.label, self.watch, self.timeout,
                            None if self.watch.reason is not None else "deadline")
            stop.__cause__ = error
            error = stop
        if isinstance(error, MCPError) and error.status is None and self.status is not None:
            error.status = error._fields["status"] = self.status
        scrub(error, self.channel.secrets)
        return error


class _Listener(object):
    """The handshake era's listening stream (2025-11-25 transports "Listening for Messages from the Server"):
    a GET held open on a thread of its own, its messages handed to the handle's handlers; reconnected with
    Last-Event-ID after the server's ``retry`` (and ``resume.resume_delay``'s backoff; ``LISTEN_MIN_WAIT`` at
    least), given up after
    ``LISTEN_MAX_RECONNECTS`` connections in a row without a message, or at once on a 4xx (a 405: the server
    offers no such stream).  No reference to the channel (a handle dropped unclosed is collected, and this
    stops)."""

    def __init__(self, session: Any, request: Callable[[Dict[str, str]], HttpRequest], timeout: float, label: str,
                 handlers: Tuple[Callable[[Message], None], Callable[[Message], None]]) -> None:
        self._session = session
        self._request = request
        self._timeout = timeout
        self._label = label
        self._handlers = handlers
        self._stop = False
        self._watch = _transport.Watch()
        #: False once given up (then nothing tells the handle that a list changed)
        self.listening = True
        self.thread = threading.Thread(target=self._run, name="agenthub-mcp-listen", daemon=True)

    def stop(self) -> None:
        self._stop = True
        self._watch.stop("abort")

    def _run(self) -> None:
        last_id = None  # type: Optional[str]
        retry = [DEFAULT_RETRY_MS]
        quiet = 0  # connections in a row that brought no message
        try:
            while not self._stop:
                headers = {"Accept": "text/event-stream"}
                if last_id is not None:
                    headers["Last-Event-ID"] = last_id
                heard = False
                try:
                    body = _transport.open_stream(self._session, self._request(headers), (self._timeout, None),
                                                  self._label, watch=self._watch, error_from_body=_error_from_body)
                    try:
                        body.open(False)
                        if body.document is not None or "text/event-stream" not in (
                                (body.headers or {}).get("content-type") or ""):
                            return  # not a stream: nothing to listen to
                        for event in iter_events(body.iter_chunks(), MAX_MESSAGE_BYTES):
                            if event.id:
                                last_id = event.id
                            if event.retry is not None:
                                retry[0] = min(event.retry, MAX_RETRY_MS)
                            if not event.data.strip():
                                continue
                            message = jsonrpc.decode(event.data, self._label)
                            heard = True
                            on_request, on_notification = self._handlers
                            if message.kind == "request":
                                on_request(message)
                            elif message.kind == "notification":
                                on_notification(message)
                    finally:
                        body.close()
                except AgentHubError as error:
                    status = getattr(error, "status", None)
                    if self._stop or (isinstance(status, int) and 400 <= status < 500):
                        return  # closed, or refused (405: no stream offered; 404: the session is gone)
                quiet = 0 if heard else quiet + 1
                if quiet >= LISTEN_MAX_RECONNECTS:
                    return
                wait = max(retry[0] / 1000.0, resume_delay(quiet + 1), LISTEN_MIN_WAIT)
                if not self._watch.sleep(wait):
                    return
        except Exception:  # a handler's failure or a broken stream: the handle stops hearing, nothing more
            return
        finally:
            self.listening = False


class HttpChannel(Channel):
    """POSTs JSON-RPC messages to one MCP endpoint; thread-safe (each step has its own watch)."""

    resumable = True
    cancels_on_timeout = True  # closing the stream is no cancellation in the handshake era: say it
    carries_headers = True

    @classmethod
    def accepts(cls, target: Any) -> bool:
        return isinstance(target, str)

    @classmethod
    def open(cls, target: Any, *, name: Optional[str] = None, timeout: float = 60.0,
             headers: Optional[Dict[str, str]] = None, env: Any = None, cwd: Any = None,
             inherit_env: bool = False) -> "HttpChannel":
        if not target.startswith(("http://", "https://")):
            raise ConfigError("an MCP server is a URL (http:// or https://) or a command as a list of strings "
                              "(got a string that is not a URL: split the command into a list)")
        if env is not None or cwd is not None or inherit_env:
            raise ConfigError("env, cwd and inherit_env are for a stdio server (a command), not a URL")
        return cls(target, headers, timeout, name)

    def __init__(self, url: str, headers: Optional[Dict[str, str]] = None, timeout: float = 60.0,
                 name: Optional[str] = None) -> None:
        self.url = check_base_url(url, "an MCP server URL")
        self.origin = url_origin(url)
        self.span_server = self.url
        for key, value in (headers or {}).items():
            if not isinstance(key, str) or not isinstance(value, str):
                raise ConfigError("headers must map str to str (got {} for {})".format(
                    type(value).__name__, type(key).__name__ if not isinstance(key, str) else repr(key)))
            # as a model client's headers are checked (validate): a name HTTP allows, a value sent as it is (no
            # control or invisible character, Latin-1, no white space around it), never shown in the error
            check_header_name(key, "headers key {}".format(_short(key)))
            check_header_value(value, "headers[{!r}]".format(key))
        check_distinct_header_names(headers or {}, "headers")
        self.headers = dict(headers or {})
        self.secrets = sorted(set(secret_values({}, self.headers.values())) | set(url_query_secrets(url)),
                              key=len, reverse=True)
        self.timeout = timeout
        self.label = name or redact_url(url.split("?", 1)[0])
        self._session = _transport.new_session()
        _transport.pin_environment(self._session, self.url)  # (not looked up again per request)
        self._lock = threading.Lock()
        self._watches = set()  # type: Set[Any]
        self._closed = False
        self._handlers = None  # type: Optional[Tuple[Callable[[Message], None], Callable[[Message], None]]]
        self._listener = None  # type: Optional[_Listener]

    # -- the watches of the steps in flight ------------------------------------------------------
    def _enter(self, watch: Any) -> None:
        with self._lock:
            if self._closed:
                raise TransportError("{}: the MCP connection is closed".format(self.label), client=self.label,
                                     retryable=False, aborted=True)
            self._watches.add(watch)

    def _leave(self, watch: Any) -> None:
        with self._lock:
            self._watches.discard(watch)

    def _request(self, method: str, headers: Dict[str, str], body: Optional[bytes]) -> HttpRequest:
        return _http_request(self.url, self.headers, method, headers, body)

    # -- the contract's rules ---------------------------------------------------------------------
    def falls_back(self, error: BaseException) -> bool:
        """2026-07-28 transports/streamable-http "Backward Compatibility": a 400, 404 or 405 whose body is
        not a recognised modern JSON-RPC error."""
        if modern_refusal(error):
            return False
        return isinstance(error, (MCPError, UpstreamError)) and error.status in (400, 404, 405)

    def deprecated(self, error: AgentHubError, timeout: float) -> bool:
        return getattr(error, "status", None) in (400, 404, 405) and self.legacy_sse(timeout)

    def set_handlers(self, on_request: Callable[[Message], None], on_notification: Callable[[Message], None]) -> None:
        self._handlers = (weak_handler(on_request), weak_handler(on_notification))

    @property
    def hears_changes(self) -> bool:  # type: ignore[override]
        listener = self._listener
        return listener is not None and listener.listening

    def started(self, headers: Dict[str, str]) -> None:
        """The handshake is done: open the listening stream (again, after a new session) with the session's
        headers."""
        if self._handlers is None:
            return
        kept = {k: v for k, v in headers.items() if k.lower() not in ("content-type", "accept")}
        if not any(k.lower() == "mcp-session-id" for k in kept):
            # no session (a stateless server): a GET stream is tied to no client, nothing for this handle
            # comes on it, so there is nothing to hear and the lists are not cached
            with self._lock:
                old, self._listener = self._listener, None
            if old is not None:
                old.stop()
            return
        url, user = self.url, dict(self.headers)  # (not self: the listener must not keep the channel alive)
        listener = _Listener(self._session, lambda extra: _http_request(url, user, "GET", dict(kept, **extra), None),
                             self.timeout, self.label, self._handlers)
        with self._lock:
            if self._closed:
                return
            old, self._listener = self._listener, listener
        if old is not None:
            old.stop()
        listener.thread.start()
        weakref.finalize(self, listener.stop)

    # -- one exchange ----------------------------------------------------------------------------
    def exchange(self, message: Dict[str, Any], headers: Dict[str, str], timeout: Optional[float] = None,
                 on_message: Optional[Callable[[Message], None]] = None, resumable: bool = False) -> Answer:
        """POST ``message`` and read its answer: for a request, the response with its id (notifications
        before it go to ``on_message``; a request from the server too, and its answer is POSTed back by
        the caller).  ``resumable`` (the handshake era): a stream the server closes before the response,
        after an event with an id, is resumed by GET with Last-Event-ID (2025-11-25 "Resumability and
        Redelivery"), after the server's ``retry`` wait."""
        step = _Step(self, self.timeout if timeout is None else timeout)
        with step:
            try:
                body = step.open(self._request("POST", headers, jsonrpc.encode(message)))
                return self._read(step, body, message.get("id"), headers, on_message, resumable)
            except AgentHubError as error:
                raise step.settle(error)

    def _read(self, step: _Step, body: Any, ident: Any, headers: Dict[str, str], on_message: Any,
              resumable: bool) -> Answer:
        """The answer of an opened body: one JSON document, or an event stream (resumed when it may be)."""
        status, answer_headers = body.status, body.headers
        if body.document is not None:
            return Answer(self._from_document(body.document, ident), status, answer_headers)
        current = [body]
        retry = [DEFAULT_RETRY_MS]
        frames = self._frames(step, body, retry)  # type: Any
        resumer = None
        if resumable:
            def reconnect(_: str, last_id: Any) -> Iterator[_Frame]:
                if not step.watch.sleep(min(retry[0] / 1000.0, max(0.0, step.left()))):
                    step.check()
                step.check()
                again = {k: v for k, v in headers.items() if k.lower() not in ("content-type", "accept")}
                again.update({"Accept": "text/event-stream", "Last-Event-ID": str(last_id)})
                current[0].close()
                current[0] = step.open(self._request("GET", again, None), GET_RETRIES)
                return self._frames(step, current[0], retry)

            # the cursor is the event id; the resource is known once an event carried one
            resumer = frames = Resumable(frames, lambda f: ("stream" if f.event.id else None, f.event.id or None, False),
                                         reconnect, client=self.label, max_resumes=MAX_RESUMES, sleep=step.watch.sleep)
        try:
            for frame in frames:
                message = frame.message
                if message is None:
                    continue  # a priming event (an id, no data: 2025-11-25 "Sending Messages")
                if message.kind in ("result", "error"):
                    if message.id != ident:
                        raise StreamProtocolError("{}: the stream answered request {!r} while {!r} was "
                                                  "asked".format(self.label, preview(str(message.id), 40), ident),
                                                  client=self.label)
                    current[0].finish()
                    return Answer(message, status, answer_headers)
                if on_message is not None:
                    on_message(message)
        except StreamProtocolError as error:
            if getattr(error, RESUMED, None) is None:
                raise
            raise StreamProtocolError("{}: the event stream ended before the response to request {!r} (resumed "
                                      "{} times)".format(self.label, ident, resumer.reconnects if resumer else 0),
                                      client=self.label, retryable=True) from None
        finally:
            current[0].close()
        step.check()
        raise StreamProtocolError("{}: the event stream ended before the response to request {!r}".format(
            self.label, ident), client=self.label, retryable=True)

    def _from_document(self, document: Any, ident: Any) -> Message:
        message = jsonrpc.decode(document, self.label)
        if message.kind in ("result", "error") and (message.id == ident or (message.kind == "error" and message.id is None)):
            return message
        raise StreamProtocolError("{}: the answer is {} for id {!r}, not the response to request {!r}".format(
            self.label, message.kind, preview(str(message.id), 40), ident), client=self.label)

    def _chunks(self, step: _Step, body: Any, limit: int = MAX_ANSWER_BYTES) -> Iterator[bytes]:
        total = 0
        for chunk in body.iter_chunks():
            total += len(chunk)
            if total > limit:
                raise StreamProtocolError("{}: the answer is larger than {} bytes (MAX_ANSWER_BYTES)".format(
                    self.label, limit), client=self.label, retryable=False)
            step.check()
            yield chunk

    def _frames(self, step: _Step, body: Any, retry: List[int]) -> Iterator[_Frame]:
        """The events of one connection, decoded (the server's ``retry`` kept in ``retry[0]``, capped)."""
        events = iter_events(self._chunks(step, body), MAX_MESSAGE_BYTES)
        try:
            while True:
                try:
                    event = next(events)
                except StopIteration:
                    return
                except StreamProtocolError as error:  # the decoder's own (not UTF-8, a line too long): say which server
                    if error.__dict__.get("client"):
                        raise
                    raise StreamProtocolError("{}: {}".format(self.label, error), client=self.label,
                                              retryable=bool(error.__dict__.get("retryable"))) from None
                if event.retry is not None:
                    retry[0] = min(event.retry, MAX_RETRY_MS)
                message = jsonrpc.decode(event.data, self.label) if event.data.strip() else None
                yield _Frame(event, message)
        finally:
            close = getattr(events, "close", None)
            if close is not None:
                close()

    # -- one-way steps ---------------------------------------------------------------------------
    def post(self, message: Dict[str, Any], headers: Dict[str, str], timeout: Optional[float] = None) -> None:
        """POST a notification or a response (202 expected; an error answer raises; a body is not read)."""
        step = _Step(self, self.timeout if timeout is None else timeout)
        with step:
            self._head(step, self._request("POST", headers, jsonrpc.encode(message)))

    def _head(self, step: _Step, request: HttpRequest) -> None:
        """Send ``request`` within ``step`` and take its answer's head: a 2xx is done whatever its body (an
        empty one labelled JSON too), an error answer raises."""
        try:
            step.open(request).close()
        except StreamProtocolError as error:
            if step.status is None or not 200 <= step.status < 300 or step.watch.reason is not None:
                raise step.settle(error)
        except AgentHubError as error:
            raise step.settle(error)

    def delete(self, headers: Dict[str, str], timeout: float = 5.0) -> None:
        """DELETE the endpoint (ends a handshake-era session; a 405 means the server keeps it)."""
        try:
            with _Step(self, timeout) as step:
                self._head(step, self._request("DELETE", headers, None))
        except AgentHubError:
            pass  # best effort: the server may refuse (405) or be gone

    def ends_session(self, headers: Optional[Dict[str, str]]) -> None:
        if headers is not None:
            self.delete(headers, min(self.timeout, 5.0))

    def legacy_sse(self, timeout: float) -> bool:
        """True when a GET on the URL opens an event stream whose first event is ``endpoint``: the
        deprecated HTTP+SSE transport of 2024-11-05 (2026-07-28 transports "Backward Compatibility").
        Bounded in all: ``min(timeout, PROBE_SECONDS)`` and ``PROBE_BYTES``; the first block of the stream
        decides (one that is a comment, or another event, is no such server)."""
        try:
            with _Step(self, min(timeout, PROBE_SECONDS)) as step:
                body = step.open(self._request("GET", {"Accept": "text/event-stream"}, None))
                try:
                    if body.document is not None or "text/event-stream" not in (
                            body.headers.get("content-type") or ""):
                        return False
                    seen = b""
                    for chunk in self._chunks(step, body, PROBE_BYTES):  # the first block decides (a comment: no)
                        seen += chunk
                        block, end, _ = seen.replace(b"\r\n", b"\n").replace(b"\r", b"\n").partition(b"\n\n")
                        if end:
                            return any(line.split(b":", 1)[0] == b"event" and line.split(b":", 1)[1].strip()
                                       == b"endpoint" for line in block.split(b"\n") if b":" in line)
                    return False
                finally:
                    body.close()
        except AgentHubError:
            return False

    def abort(self) -> None:
        with self._lock:
            watches = list(self._watches)
        for watch in watches:
            watch.stop("abort")

    def close(self, grace: Optional[float] = None) -> None:
        with self._lock:
            self._closed = True
        self.abort()
        with self._lock:
            listener = self._listener
        if listener is not None:
            listener.stop()
            if listener.thread is not threading.current_thread():
                listener.thread.join(10.0)
        try:
            self._session.close()
        except Exception:  # pragma: no cover - closing pools is best effort
            pass


def _http_request(url: str, user: Dict[str, str], method: str, headers: Dict[str, str],
                  body: Optional[bytes]) -> HttpRequest:
    merged = dict(user)
    for key in list(merged):
        if key.lower() in {h.lower() for h in headers}:
            del merged[key]  # the protocol's own headers win over a caller's same-named one
    merged.update(headers)
    return HttpRequest(method, url, headers=merged, body=None, data=body)
