"""``connect()`` and the server handle: an MCP server's tools, resources and prompts, synchronously.

The handle satisfies the tool-provider contract (``list_tools()``, ``call_tool(name, arguments)``,
``name``), so ``client.run(..., tools=[server])`` uses an MCP server like any tool.  It is
thread-safe: calls may run in parallel from several threads; ``close()`` from any thread ends the
calls in flight (a TransportError with ``aborted``) and then the connection.
"""

import functools
import json
import logging
import math
import sys
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Set, Tuple, Union

from ..errors import AgentHubError, ConfigError, StreamProtocolError, TransportError, UnsupportedOperationError, \
    UpstreamError
from .._redact import scrub_text
# a CLIENT span per request, its trace context in _meta (no-ops uninstrumented)
from ..telemetry import (JSONRPC_REQUEST_ID, MCP_PROTOCOL_VERSION, RPC_RESPONSE_STATUS_CODE, inject_meta,
                         is_instrumented, mcp_span)
from . import jsonrpc, results
from .jsonrpc import MCPError, Message
from .channel import CHANNELS, Channel, scrub
from .session import FALL_BACK, MODERN_VERSIONS, TRY_AGAIN, Session, param_header_values, param_headers

__all__ = ["connect", "Server", "DEFAULT_TIMEOUT", "forget_eras"]

#: seconds for one request (to connect, of silence, in all) and for the start-up, when not given
DEFAULT_TIMEOUT = 60.0
_logger = logging.getLogger("agenthub")

#: pages read at most by one list call (a server whose cursor never ends is an error)
MAX_PAGES = 1000
#: items (tools, resources, prompts) one list call gathers at most, over all its pages
MAX_LIST_ITEMS = 10000
#: bytes (as JSON) one list call gathers at most, over all its pages
MAX_LIST_BYTES = 32 * 1024 * 1024
#: tools a server may offer through ``list_tools`` unless ``connect(max_tools=...)`` says otherwise (each goes
#: into every request of a run; most providers refuse more than 128)
MAX_TOOLS = 1000
#: seconds close() spends, in all, telling a handshake-era HTTP server which requests it ended
CANCEL_SECONDS = 2.0
#: the requests whose params name a resource URI (its span's mcp.resource.uri)
_RESOURCE_METHODS = ("resources/read", "resources/subscribe", "resources/unsubscribe")


def _traced(message: Dict[str, Any]) -> None:
    """The W3C trace context in ``message``'s ``params._meta`` (inside its span's ``with``: the MCP conventions,
    both eras), a sampled-out one too (not sampled: the server keeps the decision instead of starting a trace)."""
    if is_instrumented():
        params = message.get("params")
        params = message["params"] = dict(params) if isinstance(params, dict) else {}
        params["_meta"] = inject_meta(params.get("_meta"))


def _answered_error(span: Any, error: AgentHubError) -> None:
    """An MCP error answer on its span: error.type and rpc.response.status_code its JSON-RPC code as a string (the
    MCP conventions), never its message."""
    if isinstance(error, MCPError):
        code = error.code if isinstance(error.code, int) and not isinstance(error.code, bool) else None
        if code is not None:  # rpc.response.status_code too ("If response contains an error code")
            span.set_attribute(RPC_RESPONSE_STATUS_CODE, str(code))
        span.set_error(str(code) if code is not None else type(error).__name__)

#: the era learnt per HTTP origin ((scheme, host, port) -> "modern" | "legacy"): 2026-07-28 basic/versioning
#: "clients SHOULD cache the result for the lifetime of the ... origin (HTTP)"
_ERAS = {}  # type: Dict[Any, str]
_ERAS_LOCK = threading.Lock()


def forget_eras() -> None:
    """Forget which era each HTTP origin spoke (the next connect probes again)."""
    with _ERAS_LOCK:
        _ERAS.clear()


def _version() -> str:
    package = sys.modules.get(__name__.split(".")[0])  # the package's __init__ (read, not imported: it is above)
    version = getattr(package, "__version__", None)
    return version if isinstance(version, str) else "0"


class Server(object):
    """A connection to one MCP server (see ``connect``)."""

    def __init__(self, channel: Channel, session: Session, name: Optional[str], timeout: float,
                 origin: Any = None, max_tools: Optional[int] = MAX_TOOLS) -> None:
        self.name = name
        self.timeout = timeout
        #: the most tools ``list_tools`` hands over (None: no cap but MAX_LIST_ITEMS)
        self.max_tools = max_tools
        self._channel = channel
        self._session = session
        self._origin = channel.origin if origin is None else origin
        self._lock = threading.RLock()
        self._renewing = threading.Lock()  # one new session at a time (not self._lock: close() must not wait on it)
        self._generation = 0  # bumped at each (re)initialisation
        self._closed = False
        self._lists = {}  # type: Dict[str, Tuple[Optional[float], Any]]  # what -> (fresh until, value)
        self._marks = {}  # type: Dict[str, Any]  # tool name -> x-mcp-header marks
        self._annotations = {}  # type: Dict[str, Dict[str, Any]]  # tool name -> its annotations (a dict)
        self._probe = None  # type: Any  # the id of the last server/discover sent
        self._until = time.monotonic() + timeout  # type: Optional[float]  # the start-up's deadline, in all
        self._hurry = False
        self._inflight = set()  # type: Set[Any]  # ids of requests awaiting their answer (close() cancels them)
        self._cancelling = set()  # type: Set[Any]  # ids of timed-out requests whose cancellation is being sent
        channel.set_handlers(self._on_request, self._on_notification)
        try:
            self._start()
        except BaseException as error:
            self._hurry = True  # a failed start-up: the server is not waited for
            self.close()
            scrub(error, channel.secrets)  # an error answer may echo a credential
            raise
        self._until = None

    def _budget(self, until: Optional[float] = None) -> float:
        """Seconds for the next step: what is left of ``until`` (a call's deadline) or of the start-up's, else
        ``timeout``."""
        starting = until is None
        if starting:
            until = self._until
        if until is None:
            return self.timeout
        left = until - time.monotonic()
        if left <= 0:
            raise TransportError("{}: the server did not start within {:g} s".format(self._channel.label, self.timeout)
                                 if starting else "{}: no answer within the call's timeout (in all)".format(
                                     self._channel.label), client=self._channel.label, timeout=True, retryable=False)
        return left

    # -- what was agreed -----------------------------------------------------------------------------
    @property
    def protocol_version(self) -> Optional[str]:
        """The revision in use ("2026-07-28", "2025-11-25", ...)."""
        return self._session.version

    @property
    def server_info(self) -> Optional[Dict[str, Any]]:
        return self._session.server_info

    @property
    def capabilities(self) -> Dict[str, Any]:
        return self._session.capabilities

    @property
    def instructions(self) -> Optional[str]:
        return self._session.instructions

    @property
    def stderr(self) -> str:
        """The end of a stdio server's log ("" for HTTP)."""
        return self._channel.stderr_tail

    def __repr__(self) -> str:
        return "<agenthub.mcp.Server {} {}>".format(self.name or self._channel.label, self.protocol_version)

    def credential_values(self) -> List[str]:
        """What reaching this server takes, never to be shown or sent elsewhere: the values of ``headers``,
        the URL's ``user:password@`` and query values (HTTP); the ``env`` values and the environment's secrets
        the process got (stdio).  A run scrubs them from this server's tool results before the model sees them."""
        return list(self._channel.secrets)

    # -- start-up -------------------------------------------------------------------------------------
    def _start(self) -> None:
        session = self._session
        if session.era is None and self._origin is not None:
            with _ERAS_LOCK:
                known = _ERAS.get(self._origin)
            if known == "legacy":
                try:
                    self._initialize()
                    return
                except AgentHubError:
                    with _ERAS_LOCK:
                        _ERAS.pop(self._origin, None)  # re-probe when the remembered era fails
                    session.era = None
        if session.era in (None, "modern"):
            try:
                if self._discover():
                    self._remember("modern")
                    return
            except AgentHubError as error:
                if session.pinned or not self._channel.falls_back(error):
                    raise
            session.era, session.version = None, None
        try:
            self._initialize()
        except MCPError:
            # a stdio server slower to start than the probe's wait: its DiscoverResult came after all
            late = self._channel.late_answer(self._probe)
            if late is None or late.kind != "result":
                raise
            session.era = None
            if not session.accept_discover(session.outcome("server/discover", late)):
                raise
            return
        self._remember("legacy")

    def _remember(self, era: str) -> None:
        if self._origin is not None and self._session.pinned is None:
            with _ERAS_LOCK:
                _ERAS[self._origin] = era

    def _handshake_span(self, method: str, ident: Any) -> Any:
        """The CLIENT span of a handshake request (``initialize``, ``server/discover``)."""
        return mcp_span(method, request_id=ident, server=self._channel.span_server,
                        transport=self._channel.span_transport)

    def _discover(self) -> bool:
        """server/discover: True when the server is modern; False when it names handshake revisions only."""
        session = self._session
        timeout = self._budget()
        probe = self._channel.probe_timeout
        if probe is not None and session.pinned is None:
            timeout = min(timeout, probe)
        for _ in range(len(MODERN_VERSIONS) + 1):
            ident, message = session.discover_request()
            self._probe = ident
            with self._handshake_span("server/discover", ident) as span:
                _traced(message)
                try:
                    answer = self._channel.exchange(message, session.headers(message), timeout)
                    result = session.outcome("server/discover", answer.message, answer.status)
                except MCPError as error:
                    _answered_error(span, error)
                    if error.code == jsonrpc.UNSUPPORTED_PROTOCOL_VERSION:
                        said = session.version_refused(error)
                        if said == TRY_AGAIN:
                            continue
                        if said == FALL_BACK:
                            return False
                    raise
                modern = session.accept_discover(result)
                if modern and session.version:
                    span.set_attribute(MCP_PROTOCOL_VERSION, session.version)
                return modern
        raise StreamProtocolError("{}: no protocol version agreed".format(self._channel.label),
                                  client=self._channel.label)  # pragma: no cover

    def _initialize(self, until: Optional[float] = None) -> None:
        """The handshake (``until``: the deadline of the call that starts a new session, else the start-up's)."""
        session = self._session
        session.era = "legacy"
        session.session_id = None
        ident, message = session.initialize_request()
        budget = self._budget(until)
        deadline = time.monotonic() + budget
        with self._handshake_span("initialize", ident) as span:
            _traced(message)
            try:
                answer = self._channel.exchange(message, session.headers(message), budget,
                                                lambda message: self._on_message(message, deadline))
            except AgentHubError as error:
                _answered_error(span, error)
                self._refuse_http_sse(error)
                raise
            try:
                result = session.outcome("initialize", answer.message, answer.status)
            except AgentHubError as error:
                _answered_error(span, error)
                raise
            if answer.headers is not None:
                session.take_session_id(answer.headers.get("mcp-session-id"))
            notice = session.accept_initialize(result)
            if session.version:
                span.set_attribute(MCP_PROTOCOL_VERSION, session.version)
        self._channel.post(notice, session.headers(notice), self._budget(until))
        self._generation += 1
        with self._lock:
            self._lists.clear()  # a new session: a list_changed sent while there was none reached nobody
        self._channel.started(session.headers(jsonrpc.notification("notifications/initialized")))

    def _refuse_http_sse(self, error: AgentHubError) -> None:
        if isinstance(error, MCPError):
            return
        try:
            budget = self._budget()
        except TransportError:
            return
        if self._channel.deprecated(error, budget):
            raise UnsupportedOperationError(
                "{}: this server speaks the deprecated HTTP+SSE transport (MCP 2024-11-05), which agenthub does "
                "not support; use its Streamable HTTP endpoint (MCP 2025-03-26 or later)".format(
                    self._channel.label), client=self._channel.label, operation="HTTP+SSE") from None

    # -- what the server sends unasked ----------------------------------------------------------------
    def _on_message(self, message: Message, deadline: Optional[float] = None) -> None:
        """A message the server sent within an exchange whose call ends at ``deadline`` (monotonic seconds)."""
        if message.kind == "request":
            self._on_request(message, deadline)
        else:
            self._on_notification(message)

    def _on_call_message(self, message: Message, deadline: Optional[float], ident: Any, method: str,
                         on_progress: Callable[..., Any]) -> None:
        """A message the server sent within the exchange of request ``ident``, whose caller asked for progress:
        a ``notifications/progress`` for its token goes to ``on_progress`` (progress, total, message: the
        numbers as floats; a progress that is no finite number is skipped, a total that is none or a message that
        is no string is None, the handle's secrets in it as ``***``); anything else as ``_on_message``."""
        if message.kind != "notification" or message.method != "notifications/progress":
            self._on_message(message, deadline)
            return
        params = message.params if isinstance(message.params, dict) else {}
        token = params.get("progressToken")
        if isinstance(token, bool) or token != ident:
            return
        progress, total, text = _number(params.get("progress")), _number(params.get("total")), params.get("message")
        if progress is None:
            return
        if isinstance(text, str) and self._channel.secrets:  # (a credential the handle holds, echoed: as in errors)
            text = scrub_text(text, list(self._channel.secrets))
        try:
            on_progress(progress, total, text if isinstance(text, str) else None)
        except Exception as error:  # the caller's callback: the call goes on (and the reader of stdio with it)
            _logger.warning("%s: an on_progress callback of %s raised %s (the call goes on)", self._channel.label,
                            method, type(error).__name__)

    def _on_request(self, message: Message, deadline: Optional[float] = None) -> None:
        """Answer the server's own request; within a call, by the call's deadline (its answer is a POST of
        its own on HTTP, which must not hold the call past its timeout)."""
        reply = self._session.answer(message)
        timeout = self.timeout
        if deadline is not None:
            timeout = min(timeout, deadline - time.monotonic())
            if timeout <= 0:
                return
        try:
            self._channel.post(reply, self._session.headers(reply), timeout)
        except AgentHubError:
            pass  # the server's own request: its failure is not the caller's

    def _on_notification(self, message: Message) -> None:
        what = Session.invalidates(message)
        if what is not None:
            with self._lock:
                self._lists.pop(what, None)

    # -- requests ------------------------------------------------------------------------------------
    def _check_open(self) -> None:
        if self._closed:
            raise TransportError("{}: the MCP connection is closed".format(self._channel.label),
                                 client=self._channel.label, aborted=True, retryable=False)

    def request(self, method: str, params: Optional[Dict[str, Any]] = None, timeout: Optional[float] = None,
                headers: Optional[Dict[str, str]] = None,
                on_progress: Optional[Callable[[float, Optional[float], Optional[str]], Any]] = None) -> Dict[str, Any]:
        """Send one request and return its result (an MCPError for an error answer).  The lower-level
        door: the methods below are built on it.  ``on_progress``: see ``call_tool``."""
        if not isinstance(method, str) or not method:
            raise ConfigError("method must be a non-empty string")
        if params is not None and not isinstance(params, dict):
            raise ConfigError("params must be a dict or None (got {})".format(type(params).__name__))
        if params is not None and params.get("_meta") is not None and not isinstance(params["_meta"], dict):
            raise ConfigError("params[\"_meta\"] must be a dict (got {})".format(type(params["_meta"]).__name__))
        if on_progress is not None and not callable(on_progress):
            raise ConfigError("on_progress must be a callable (progress, total, message) or None (got {})".format(
                type(on_progress).__name__))
        if on_progress is not None and "progressToken" in ((params or {}).get("_meta") or {}):
            raise ConfigError("params[\"_meta\"] has a progressToken and on_progress is given: the token "
                              "on_progress asks for is the request's id")
        if timeout is not None:
            timeout = _seconds(timeout)
        self._check_open()
        session = self._session
        channel = self._channel
        target = (params or {}).get("name") if method in ("tools/call", "prompts/get") else None
        uri = (params or {}).get("uri") if method in _RESOURCE_METHODS else None
        with mcp_span(method, session.version, session.session_id if session.era == "legacy" else None,
                      target=target if isinstance(target, str) else None,
                      server=channel.span_server, transport=channel.span_transport,
                      resource_uri=scrub_text(uri, channel.secrets) if isinstance(uri, str) else None) as span:
            if is_instrumented():  # the W3C trace context in params._meta (see _traced)
                params = dict(params or {}, _meta=inject_meta((params or {}).get("_meta")))
            try:
                result = self._request(method, params, timeout, headers, span, on_progress)
            except AgentHubError as error:
                scrub(error, channel.secrets)  # an error answer (read here, not by the channel) may echo a credential
                _answered_error(span, error)
                raise
            if method == "tools/call" and isinstance(result, dict) and result.get("isError") is True:
                span.set_error("tool_error")
            return result

    def _request(self, method: str, params: Optional[Dict[str, Any]], timeout: Optional[float],
                 headers: Optional[Dict[str, str]], span: Any = None, on_progress: Any = None) -> Dict[str, Any]:
        session = self._session
        channel = self._channel
        timeout = self.timeout if timeout is None else timeout
        until = time.monotonic() + timeout  # the call's deadline, over its retries (a new session, a relist) too
        renewed = False
        for attempt in range(4):
            if attempt:
                timeout = self._budget(until)
            generation = self._generation
            ident, message = session.request(method, params)
            if on_progress is not None:  # (the request's own id: unique among the requests in flight)
                body = message.setdefault("params", {})
                body["_meta"] = dict(body.get("_meta") or {}, progressToken=ident)
            if span is not None and ident is not None:  # the request's id (the last one sent, when retried)
                span.set_attribute(JSONRPC_REQUEST_ID, str(ident))
            sent = session.headers(message)
            if headers:
                sent.update(headers)
            with self._lock:
                self._inflight.add(ident)
            deadline = time.monotonic() + timeout
            try:
                heard = functools.partial(self._on_message, deadline=deadline) if on_progress is None else \
                    functools.partial(self._on_call_message, deadline=deadline, ident=ident, method=method,
                                      on_progress=on_progress)
                answer = channel.exchange(message, sent, timeout, heard,
                                          resumable=channel.resumable and session.era == "legacy")
                return session.outcome(method, answer.message, answer.status)
            except TransportError as error:
                if error.timeout and session.era == "legacy" and channel.cancels_on_timeout:
                    # 2025-11-25 "Cancellation": a dropped connection is not a cancellation; say it
                    self._cancel_later(ident, min(timeout, 5.0))
                raise
            except (MCPError, UpstreamError) as error:
                status = getattr(error, "status", None)
                if isinstance(error, MCPError) and error.code == jsonrpc.UNSUPPORTED_PROTOCOL_VERSION \
                        and session.era == "modern":
                    said = session.version_refused(error)
                    if said == TRY_AGAIN:
                        continue
                    if said == FALL_BACK:
                        with self._renewing:
                            if self._generation == generation:
                                self._initialize(until)
                        continue
                    raise
                if isinstance(error, MCPError) and error.code == jsonrpc.HEADER_MISMATCH and method == "tools/call" \
                        and not renewed and session.era == "modern":
                    # 2026-07-28 "Client Behavior": the tool's x-mcp-header marks may have changed; list, retry once
                    renewed = True
                    self._tools(True, until)
                    name = str((params or {}).get("name"))
                    with self._lock:
                        marks = self._marks.get(name)
                    headers = param_header_values(marks, (params or {}).get("arguments") or {}) if marks else None
                    continue
                if status == 404 and session.era == "legacy" and "MCP-Session-Id" in sent and not renewed:
                    # 2025-11-25 "Session Management" 4: the session ended; start a new one, once
                    renewed = True
                    with self._renewing:
                        if self._generation == generation:
                            session.lost_session()
                            self._initialize(until)
                    continue
                raise
            finally:
                with self._lock:
                    self._inflight.discard(ident)
        raise StreamProtocolError("{}: {} could not be sent".format(self._channel.label, method),
                                  client=self._channel.label)  # pragma: no cover

    def _cancel_later(self, ident: Any, timeout: float) -> None:
        """Say ``notifications/cancelled`` for request ``ident`` whose call timed out, on a thread of its own (the
        caller's time is up: a server slow to take the POST must not hold the call past its timeout); close()
        says it again for one not said by then.  The thread holds no reference to the handle."""
        session, channel, lock, cancelling = self._session, self._channel, self._lock, self._cancelling
        notice = session.cancel_notification(ident, "timeout")
        headers = session.headers(notice)

        def post() -> None:
            try:
                channel.post(notice, headers, timeout)
            except AgentHubError:
                pass
            finally:
                with lock:
                    cancelling.discard(ident)

        with lock:
            cancelling.add(ident)
        threading.Thread(target=post, name="agenthub-mcp-cancel", daemon=True).start()

    def _pages(self, method: str, key: str, params: Optional[Dict[str, Any]] = None,
               until: Optional[float] = None) -> Tuple[List[Any], Any]:
        items = []  # type: List[Any]
        cursor = None
        seen = set()
        ttl = None
        size = 0
        for _ in range(MAX_PAGES):
            page_params = dict(params or {})
            if cursor is not None:
                page_params["cursor"] = cursor
            result = self.request(method, page_params or None, None if until is None else self._budget(until))
            page = result.get(key)
            if not isinstance(page, list):
                raise StreamProtocolError("{}: {} answered without a {} list".format(
                    self._channel.label, method, key), client=self._channel.label)
            items.extend(page)
            size += len(json.dumps(page, ensure_ascii=False, default=str))
            if len(items) > MAX_LIST_ITEMS or size > MAX_LIST_BYTES:
                raise StreamProtocolError("{}: {} gave more than {} (MAX_LIST_{}) over its pages".format(
                    self._channel.label, method, "{} items".format(MAX_LIST_ITEMS) if len(items) > MAX_LIST_ITEMS
                    else "{} bytes".format(MAX_LIST_BYTES), "ITEMS" if len(items) > MAX_LIST_ITEMS else "BYTES"),
                    client=self._channel.label, retryable=False)
            value = _ttl(result.get("ttlMs"))
            if value is not None:
                ttl = value if ttl is None else min(ttl, value)
            cursor = result.get("nextCursor")
            if cursor is None:
                return items, ttl
            if not isinstance(cursor, str) or cursor in seen:
                raise StreamProtocolError("{}: {} gave a cursor that repeats or is not a string".format(
                    self._channel.label, method), client=self._channel.label)
            seen.add(cursor)
        raise StreamProtocolError("{}: {} gave more than {} pages".format(self._channel.label, method, MAX_PAGES),
                                  client=self._channel.label)

    def _listed(self, what: str, method: str, key: str, refresh: bool, until: Optional[float] = None) -> List[Any]:
        with self._lock:
            cached = self._lists.get(what)
        if cached is not None and not refresh:
            fresh_until, value = cached
            if fresh_until is None:
                # kept until a list_changed: trusted only while one can still reach the handle (a handshake-era
                # listening stream that stopped, its session gone say, hears none any more)
                fresh = self._session.era != "legacy" or self._channel.hears_changes
            else:
                fresh = time.monotonic() < fresh_until
            if fresh:
                return list(value)
        items, ttl = self._pages(method, key, until=until)
        # caching (2026-07-28 server/utilities/caching): fresh for ttlMs when the server gives it (0: not
        # cached); without one (a handshake-era server), until a list_changed notification or refresh=True,
        # when the channel hears them
        if ttl is None and self._session.era == "legacy" and not self._channel.hears_changes:
            ttl = 0  # no ttlMs and no way to hear list_changed (an HTTP server with no listening stream): not cached
        if ttl != 0:
            with self._lock:
                self._lists[what] = (None if ttl is None else time.monotonic() + ttl / 1000.0, items)
        return items

    # -- tools ---------------------------------------------------------------------------------------
    def list_tools(self, refresh: bool = False) -> List[Dict[str, Any]]:
        """The server's tools as ToolSchemas ({"name", "description", "parameters"}), every page."""
        return self._tools(refresh)

    def _tools(self, refresh: bool, until: Optional[float] = None) -> List[Dict[str, Any]]:
        raw = self._listed("tools", "tools/list", "tools", refresh, until)
        label = self._channel.label
        if self.max_tools is not None and len(raw) > self.max_tools:
            raise ConfigError("MCP server {} offers {} tools, more than max_tools={} (each goes into every request "
                              "of a run; most providers refuse more than 128): pass max_tools= to mcp.connect to "
                              "allow more".format(self.name or label, len(raw), self.max_tools))
        tools = []
        marks = {}
        annotations = {}
        for tool in raw:
            schema = results.tool_schema(tool, label)
            if self._channel.carries_headers and self._session.era == "modern":
                try:
                    found = param_headers(schema["parameters"])
                except ValueError:
                    continue  # 2026-07-28: a tool with a bad x-mcp-header is left out of tools/list
                if found:
                    marks[schema["name"]] = found
            tools.append(schema)
            if isinstance(tool.get("annotations"), dict):  # kept here, never sent to a model provider
                annotations[schema["name"]] = tool["annotations"]
        with self._lock:
            self._marks = marks
            self._annotations = annotations
        return tools

    def idempotent(self, name: str) -> bool:
        """Whether the tool ``name`` (as listed last) may run again after a crash in a journaled run: False only
        when the server declared it non-idempotent in its annotations (readOnlyHint not true, and
        idempotentHint false or destructiveHint true, each given explicitly as a bool); True otherwise, a tool
        without annotations too (at least once).  The runner asks this once per run (docs/mcp.md)."""
        with self._lock:
            hints = self._annotations.get(name)
        if hints is None:
            return True
        if hints.get("readOnlyHint") is True:
            return True
        return not (hints.get("idempotentHint") is False or hints.get("destructiveHint") is True)

    def call_tool(self, name: str, arguments: Optional[Dict[str, Any]] = None,
                  timeout: Optional[float] = None,
                  on_progress: Optional[Callable[[float, Optional[float], Optional[str]], Any]] = None
                  ) -> Dict[str, Any]:
        """Call a tool: a tool_result item ({"type": "tool_result", "text", "images"?, "is_error"?}).

        ``on_progress(progress, total, message)``: the request asks for progress (``_meta.progressToken``, its
        id) and each ``notifications/progress`` the server sends for it is handed over (floats; ``total`` and
        ``message`` None when not given), on the thread that reads the server's messages (over HTTP the
        caller's, on stdio the handle's reader: keep it short; a request on this handle from there is a
        ConfigError).  What it raises is logged, and the call goes on.  Progress does not extend ``timeout``."""
        if not isinstance(name, str) or not name:
            raise ConfigError("a tool name must be a non-empty string")
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            raise ConfigError("tool arguments must be a dict (got {})".format(type(arguments).__name__))
        headers = None
        with self._lock:
            marks = self._marks.get(name)
        if marks:
            headers = param_header_values(marks, arguments)
        result = self.request("tools/call", {"name": name, "arguments": arguments}, timeout, headers, on_progress)
        return results.tool_result(result, self._channel.label)

    # -- resources and prompts -----------------------------------------------------------------------
    def list_resources(self, refresh: bool = False) -> List[Dict[str, Any]]:
        """The server's resources ({"uri", "name", "mimeType"?, ...} as the server gives them), every page."""
        return list(self._listed("resources", "resources/list", "resources", refresh))

    def read_resource(self, uri: str) -> List[Dict[str, Any]]:
        """A resource's contents: [{"uri", "mimeType"?, "text" | "blob"}]."""
        if not isinstance(uri, str) or not uri:
            raise ConfigError("a resource URI must be a non-empty string")
        result = self.request("resources/read", {"uri": uri})
        contents = result.get("contents")
        if not isinstance(contents, list):
            raise StreamProtocolError("{}: resources/read answered without contents".format(self._channel.label),
                                      client=self._channel.label)
        return contents

    def list_prompts(self, refresh: bool = False) -> List[Dict[str, Any]]:
        """The server's prompts ({"name", "description"?, "arguments"?}), every page."""
        return list(self._listed("prompts", "prompts/list", "prompts", refresh))

    def get_prompt(self, name: str, arguments: Optional[Dict[str, str]] = None) -> List[Dict[str, Any]]:
        """A prompt's messages as UniMessages ({"role", "content_items"})."""
        if not isinstance(name, str) or not name:
            raise ConfigError("a prompt name must be a non-empty string")
        if arguments is not None and not (isinstance(arguments, dict) and
                                          all(isinstance(k, str) and isinstance(v, str) for k, v in arguments.items())):
            raise ConfigError("prompt arguments must map str to str")
        params = {"name": name}  # type: Dict[str, Any]
        if arguments:
            params["arguments"] = arguments
        return results.prompt_messages(self.request("prompts/get", params), self._channel.label)

    # -- the end -------------------------------------------------------------------------------------
    def close(self) -> None:
        """End the calls in flight and the connection (a handshake-era HTTP session is DELETEd; a stdio
        server has its stdin closed, then is terminated if it lingers).  Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            inflight = sorted(self._inflight | self._cancelling, key=str)  # (a cancellation under way: said again)
        channel = self._channel
        channel.abort()  # the calls in flight end now (a TransportError with aborted), whatever the server does
        if not self._hurry:
            self._cancel_all(inflight)
            channel.ends_session(self._session.end_headers())
        channel.close(0.1 if self._hurry else None)

    def _cancel_all(self, idents: Sequence[Any]) -> None:
        """Say ``notifications/cancelled`` for the requests close() ended (handshake-era HTTP: a dropped
        connection is no cancellation), within CANCEL_SECONDS in all; best effort."""
        session = self._session
        if not idents or session.era != "legacy" or not self._channel.cancels_on_timeout:
            return
        deadline = time.monotonic() + CANCEL_SECONDS
        for ident in idents:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            notice = session.cancel_notification(ident, "the client closed the connection")
            try:
                self._channel.post(notice, session.headers(notice), left)
            except AgentHubError:
                break

    def __enter__(self) -> "Server":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _ttl(value: Any) -> Optional[float]:
    """A ``ttlMs`` (2026-07-28 CacheableResult: any JSON number, at least 0) as milliseconds, 0 at least (an int too
    large for a float: for ever); None when it is no number."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        value = float(value)
    except OverflowError:
        value = float("inf")
    return max(0.0, value) if value == value else None  # (NaN, which Python's JSON reads: none)


def _number(value: Any) -> Optional[float]:
    """A progress notification's number as a float: None for one that is not a finite number (a bool, a string,
    NaN, an integer past a float's range)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def _seconds(timeout: Any) -> float:
    """A timeout given to ``connect`` or to one request: a positive, finite number of seconds, else a ConfigError
    (before anything is sent)."""
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0 \
            or timeout > threading.TIMEOUT_MAX:  # (inf, or past what a wait takes: 1e300 was an OverflowError)
        raise ConfigError("timeout must be a positive number of seconds (got {!r})".format(timeout))
    return float(timeout)


def connect(target: Union[str, Sequence[str]], *, name: Optional[str] = None,
            headers: Optional[Dict[str, str]] = None, env: Optional[Dict[str, str]] = None,
            cwd: Optional[str] = None, timeout: Optional[float] = None, protocol: str = "auto",
            inherit_env: bool = False, max_tools: Optional[int] = MAX_TOOLS) -> Server:
    """Connect to an MCP server: a URL is Streamable HTTP, a list of strings a stdio subprocess.

    ``name``: the handle's name (the runner's prefix ``"{name}__{tool}"``); ``headers``: sent to the URL's
    origin only (HTTP); ``env``, ``cwd`` and ``inherit_env``: the subprocess's (it gets a short safe list of
    this process's variables plus ``env``; ``inherit_env=True``: all of them plus ``env``);
    ``timeout``: seconds for the start-up and for each request (default 60); ``protocol``: "auto"
    (the newest revision the server speaks, falling back to the handshake era) or a revision;
    ``max_tools``: the most tools ``list_tools`` hands over (more is a ConfigError naming the server; None:
    no such cap).
    """
    import importlib

    if name is not None and (not isinstance(name, str) or not name):
        raise ConfigError("name must be a non-empty string or None")
    timeout = _seconds(DEFAULT_TIMEOUT if timeout is None else timeout)
    if max_tools is not None and (isinstance(max_tools, bool) or not isinstance(max_tools, int) or max_tools < 1):
        raise ConfigError("max_tools must be a positive int or None (got {!r})".format(max_tools))
    options = {"headers": headers, "env": env, "cwd": cwd, "inherit_env": inherit_env}
    for module, attribute in CHANNELS:  # the first channel that takes the target
        kind = getattr(importlib.import_module(module, __package__), attribute)
        if kind.accepts(target):
            break
    else:
        raise ConfigError("an MCP server is a URL or a command as a non-empty list of strings (got {})".format(
            type(target).__name__))
    session = Session(protocol, kind.extra_versions, _version(), name)  # a bad protocol: nothing started
    channel = kind.open(target, name=name, timeout=timeout, **options)  # type: Channel
    session.server = channel.label
    return Server(channel, session, name, timeout, max_tools=max_tools)
