"""Spans beside the call span: the tool runner's (``agent_span``, ``tool_span``), the MCP client's
(``mcp_span``, ``inject_meta``), the job runner's (``workflow_span``, ``child_span``), ``activate`` and
``continue_trace``.  Each costs one global read when nothing is instrumented (the no-op handle)."""

import logging
from typing import Any, Dict, Mapping, Optional

from ..hosts.trust import url_host, url_origin
from . import hook as _hook
from .hook import _bounded, _dumps, _shown_uri, _State
from .names import (ERROR_TYPE, GEN_AI_AGENT_NAME, GEN_AI_OPERATION_NAME, GEN_AI_PROVIDER_NAME,
                    GEN_AI_REQUEST_MODEL, GEN_AI_TOOL_CALL_ARGUMENTS,
                    GEN_AI_TOOL_CALL_ID, GEN_AI_TOOL_CALL_RESULT, GEN_AI_TOOL_NAME, GEN_AI_TOOL_TYPE,
                    JSONRPC_REQUEST_ID, MCP_METHOD_NAME, MCP_PROTOCOL_VERSION, MCP_RESOURCE_URI, MCP_SESSION_ID,
                    SERVER_ADDRESS,
                    SERVER_PORT, provider_name)

logger = logging.getLogger("agenthub")

# -- spans for the tool runner and MCP ---------------------------------------------------------------------------------


class _Noop(object):
    """What every helper returns when nothing is instrumented: each method does nothing."""

    __slots__ = ()
    recording = False

    def __enter__(self) -> "_Noop":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        return None

    def set_arguments(self, arguments: Any) -> None:
        pass

    def set_result(self, result: Any) -> None:
        pass

    def set_error(self, error: Any) -> None:
        pass

    def set_attribute(self, name: str, value: Any) -> None:
        pass

    def end(self, error: Any = None) -> None:
        pass

    def activate(self) -> "_Noop":
        return self


_NOOP = _Noop()


def _started(state: Any, name: str, **kwargs: Any) -> Any:
    """A live handle on a new span, or the no-op one when the SDK raised (a span processor's ``on_start``,
    a sampler): telemetry never breaks the work it watches (logged at DEBUG)."""
    try:
        span = state.tracer.start_span(name, **kwargs)
    except Exception:
        logger.debug("agenthub telemetry: the span %r was not started", name, exc_info=True)
        return None
    return span


def _guarded(method: Any) -> Any:
    """A _Span method whose failure inside the SDK (a span processor's ``on_end``, an exporter called
    synchronously) is logged at DEBUG, never raised into the tool run or MCP call."""

    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except Exception:
            logger.debug("agenthub telemetry: %s failed on a span", method.__name__, exc_info=True)
            return None
    call.__name__ = method.__name__
    call.__doc__ = method.__doc__
    return call


class _Span(object):
    """A live span handle: ``with`` makes it current (children nest under it) and ends it; an exception
    leaving the block sets ``error.type``.  ``activate()`` makes it current for a block without ending it
    (a generator re-entering its span per step); ``end(error=None)`` ends it outside a ``with``."""

    __slots__ = ("_state", "span", "_token", "_ended", "_content", "_failed")

    def __init__(self, state: _State, span: Any, content: bool) -> None:
        self._state = state
        self.span = span
        self._token = None  # type: Any
        self._ended = False
        self._failed = False  # error.type was set: the exception leaving the block does not replace it
        self._content = content and span.is_recording()

    @property
    def recording(self) -> bool:
        return bool(self.span.is_recording())

    def __enter__(self) -> "_Span":
        state = self._state
        try:
            self._token = state.context.attach(state.trace.set_span_in_context(self.span))
        except Exception:
            logger.debug("agenthub telemetry: the span was not made current", exc_info=True)
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        token, self._token = self._token, None
        if token is not None:
            self._state.context.detach(token)
        self.end(exc)

    def activate(self) -> Any:
        return _Active(self)

    @_guarded
    def set_attribute(self, name: str, value: Any) -> None:
        if not self._ended:  # (a tool the run stopped waiting for returns late: its span said so already)
            self.span.set_attribute(name, value)

    @_guarded
    def set_arguments(self, arguments: Any) -> None:
        if self._content and not self._ended:
            self.span.set_attribute(GEN_AI_TOOL_CALL_ARGUMENTS, _dumps(_bounded(arguments)))

    @_guarded
    def set_result(self, result: Any) -> None:
        """The tool's result (a ToolResultItem or any JSON value); ``is_error`` True sets error.type."""
        if self._ended:
            return
        if isinstance(result, Mapping) and result.get("is_error"):
            self.set_error("tool_error")
        if self._content:
            value = result
            if isinstance(result, Mapping) and result.get("type") == "tool_result":
                value = {key: result[key] for key in ("text", "images", "is_error") if key in result}
                if "text" in value:
                    value["text"] = _bounded(value["text"])
                images = value.get("images")
                if isinstance(images, list):  # a data: URI is bytes: never inlined; a URL shown as a message's is
                    value["images"] = [_shown_uri(image) if not (isinstance(image, str) and image.startswith("data:"))
                                       else "<data: URI, {} characters>".format(len(image)) for image in images]
            self.span.set_attribute(GEN_AI_TOOL_CALL_RESULT, _dumps(value))

    @_guarded
    def set_error(self, error: Any) -> None:
        """error.type: a string as given (a JSON-RPC code, ``tool_error``) or an exception's class name."""
        if self._ended:
            return
        kind = error if isinstance(error, str) else type(error).__name__
        self._failed = True
        self.span.set_attribute(ERROR_TYPE, kind)
        self.span.set_status(self._state.trace.Status(self._state.trace.StatusCode.ERROR, kind))

    @_guarded
    def end(self, error: Any = None) -> None:
        if self._ended:
            return
        if error is not None and not self._failed:  # (a JSON-RPC code set before the MCPError left the block)
            self.set_error(error)
        self._ended = True
        self.span.end()


class _Active(object):
    __slots__ = ("_handle", "_token")

    def __init__(self, handle: _Span) -> None:
        self._handle = handle
        self._token = None  # type: Any

    def __enter__(self) -> _Span:
        state = self._handle._state
        self._token = state.context.attach(state.trace.set_span_in_context(self._handle.span))
        return self._handle

    def __exit__(self, *exc_info: Any) -> None:
        if self._token is not None:
            self._handle._state.context.detach(self._token)
            self._token = None


def activate(handle: Any) -> Any:
    """``with activate(handle):`` the span of ``handle`` (from ``agent_span``, ``workflow_span``, ...) is
    current in this thread for the block, without ending it (a generator re-entering its run's span per
    step); None or a no-op handle: nothing."""
    if isinstance(handle, _Span):
        return handle.activate()
    return _NOOP


def agent_span(name: str, *, description: Optional[str] = None, provider: Optional[str] = None,
               model: Optional[str] = None) -> Any:
    """An ``invoke_agent {name}`` INTERNAL span for a tool run (``with`` it: the calls and tools inside
    nest under it).  ``provider`` / ``model``: the ``gen_ai.provider.name`` and ``gen_ai.request.model`` of
    the client the agent calls (the conventions require the provider on an invoke_agent span).  A no-op
    handle when nothing is instrumented."""
    state = _hook._state
    if state is None:
        return _NOOP
    attributes = {GEN_AI_OPERATION_NAME: "invoke_agent"}  # type: Dict[str, Any]
    if provider and not state.latest:  # (the newer conventions removed it from invoke_agent INTERNAL spans, #289)
        attributes[GEN_AI_PROVIDER_NAME] = provider
    if model:
        attributes[GEN_AI_REQUEST_MODEL] = model
    if name:
        attributes[GEN_AI_AGENT_NAME] = name
    if description:
        attributes["gen_ai.agent.description"] = description
    span = _started(state, "invoke_agent {}".format(name).rstrip() if name else "invoke_agent",
                    kind=state.kind_internal, attributes=attributes)
    return _NOOP if span is None else _Span(state, span, False)


def tool_span(name: str, call_id: Optional[str] = None, tool_type: str = "function", *,
              description: Optional[str] = None, parent: Any = None) -> Any:
    """An ``execute_tool {name}`` INTERNAL span for one tool call: ``set_arguments`` / ``set_result``
    record them only when content capture is on; a result with ``is_error`` sets ``error.type``
    ``tool_error``.  ``parent``: the run's ``agent_span`` handle when the tool runs in another thread
    (else the current span is the parent).  A no-op handle when nothing is instrumented."""
    state = _hook._state
    if state is None:
        return _NOOP
    context = state.trace.set_span_in_context(parent.span) if isinstance(parent, _Span) else None
    attributes = {GEN_AI_OPERATION_NAME: "execute_tool", GEN_AI_TOOL_NAME: name or ""}  # type: Dict[str, Any]
    if call_id:
        attributes[GEN_AI_TOOL_CALL_ID] = call_id
    if tool_type:
        attributes[GEN_AI_TOOL_TYPE] = tool_type
    if description and state.span_content:
        attributes["gen_ai.tool.description"] = description
    span = _started(state, "execute_tool {}".format(name), context=context, kind=state.kind_internal,
                    attributes=attributes)
    return _NOOP if span is None else _Span(state, span, state.span_content)


#: the execute_tool spans of provider tools (an MCP server's) while they run, by the id of their OpenTelemetry span:
#: an MCP ``tools/call`` made under one adds its attributes to it instead of a span of its own (``mcp_span``)
_PROVIDER_TOOLS = {}  # type: Dict[int, _Span]


class _Merged(object):
    """An MCP ``tools/call``'s handle on the run's execute_tool span it runs under (the MCP conventions: no second
    span for a tool execution already traced; its MCP attributes go on that span).  It never ends that span: the
    run's ``with`` does, and records the tool's arguments and result."""

    __slots__ = ("_handle",)

    def __init__(self, handle: _Span) -> None:
        self._handle = handle

    @property
    def recording(self) -> bool:
        return self._handle.recording

    def __enter__(self) -> "_Merged":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        return None

    def set_attribute(self, name: str, value: Any) -> None:
        self._handle.set_attribute(name, value)

    def set_error(self, error: Any) -> None:
        self._handle.set_error(error)

    def set_arguments(self, arguments: Any) -> None:
        pass

    def set_result(self, result: Any) -> None:
        pass

    def end(self, error: Any = None) -> None:
        pass

    def activate(self) -> "_Noop":
        return _NOOP


class RunSpans(object):
    """The tool runner's spans as a ToolHook (agenthub.agent.hooks; by its methods: telemetry imports nothing
    of the agent wing): an ``invoke_agent`` span per run, current while each turn's request goes out (the
    call span is its child), and an ``execute_tool`` span per call run, current in the thread that runs the
    tool (what the tool does, an MCP request, nests under it).  The registered call hook (``GenAIHook``)
    hands its ToolHook methods here.  Never raises into the run: what fails is logged (DEBUG)."""

    def __init__(self) -> None:
        self._runs = {}  # type: Dict[int, Any]  # id(run) -> its invoke_agent span, while the run goes on
        self._tools = {}  # type: Dict[int, Dict[int, _Span]]  # id(run) -> its execute_tool spans still open

    def on_run_start(self, run: Any) -> None:
        try:
            client = getattr(run, "client", None)
            model = getattr(client, "model", None)
            client_type = getattr(client, "client_type", None)
            provider = getattr(client, "_provider", None) or (
                provider_name(client_type) if isinstance(client_type, str) else None)
            span = agent_span("", provider=provider if isinstance(provider, str) else None,
                              model=model if isinstance(model, str) else None)
        except Exception:
            _hook.logger.debug("agenthub telemetry: the run span was not started", exc_info=True)
            return
        if isinstance(span, _Span):
            self._runs[id(run)] = span

    def on_results(self, run: Any, message: Any) -> None:
        """Every call of the turn is answered: a tool span still open is a call the run stopped waiting for (its
        timeout: the thread runs on, Python cannot stop it), ended now as the timeout it was to the run."""
        running = self._tools.get(id(run))
        for span in list(running.values()) if running else ():
            try:
                span.end("timeout")
            except Exception:
                _hook.logger.debug("agenthub telemetry: a tool span was not ended", exc_info=True)

    def on_run_end(self, run: Any, error: Any) -> None:
        self._tools.pop(id(run), None)
        span = self._runs.pop(id(run), None)
        if span is not None:
            try:
                span.end(error if isinstance(error, BaseException) else None)  # (a KeyboardInterrupt too)
            except Exception:
                _hook.logger.debug("agenthub telemetry: the run span was not ended", exc_info=True)

    def around_request(self, run: Any, proceed: Any) -> Any:
        span = self._runs.get(id(run))
        if span is None:
            return proceed()
        with span.activate():  # the turn's call span starts here: a child of the run's
            return proceed()

    def around_call(self, run: Any, call: Any, proceed: Any) -> Any:
        parent = self._runs.get(id(run))
        if parent is None:
            return proceed()
        kind = run.tool_kind(call["name"]) if callable(getattr(run, "tool_kind", None)) else None
        with tool_span(call["name"], call.get("tool_call_id"), "extension" if kind == "provider" else "function",
                       parent=parent) as span:
            span.set_arguments(call.get("arguments"))
            key = id(span.span) if isinstance(span, _Span) else None
            if key is not None:
                self._tools.setdefault(id(run), {})[key] = span  # (ended at on_results if the run stops waiting)
                if kind == "provider":  # an MCP tools/call under it adds its attributes to it (mcp_span)
                    _PROVIDER_TOOLS[key] = span
            try:
                item = proceed()
            except BaseException as exc:
                span.set_error(exc)
                raise
            finally:
                if key is not None:
                    _PROVIDER_TOOLS.pop(key, None)
                    self._tools.get(id(run), {}).pop(key, None)
            span.set_result(item)
            return item


_hook.run_spans = RunSpans()


def mcp_span(method: str, protocol_version: Optional[str] = None, session_id: Optional[str] = None, *,
             target: Optional[str] = None, request_id: Any = None, server: Optional[str] = None,
             transport: Optional[str] = None, resource_uri: Optional[str] = None) -> Any:
    """A CLIENT span for one MCP request: ``{method} {target}`` (target: the tool or prompt name),
    ``mcp.method.name``, ``mcp.protocol.version``, ``mcp.session.id`` (pass it only where the protocol
    has sessions), ``jsonrpc.request.id``, and for ``tools/call`` ``gen_ai.operation.name`` execute_tool
    and ``gen_ai.tool.name``.  ``server``: the URL (server.address/port) or None (stdio: network.transport
    ``pipe``).  ``resource_uri``: the request's resource URI (``resources/read``: ``mcp.resource.uri``, its
    user part and query values ``***``).  Inside its ``with``, ``inject_meta`` puts its trace context in the
    request's ``_meta``.  A ``tools/call`` made under a run's execute_tool span of a provider tool is no span of
    its own: its attributes go on that span (the MCP conventions, for a tool execution already traced)."""
    state = _hook._state
    if state is None:
        return _NOOP
    attributes = {MCP_METHOD_NAME: method}  # type: Dict[str, Any]
    if protocol_version:
        attributes[MCP_PROTOCOL_VERSION] = protocol_version
    if session_id:
        attributes[MCP_SESSION_ID] = session_id
    if request_id is not None:
        attributes[JSONRPC_REQUEST_ID] = str(request_id)
    if method == "tools/call":
        attributes[GEN_AI_OPERATION_NAME] = "execute_tool"
        if target:
            attributes[GEN_AI_TOOL_NAME] = target
    elif method == "prompts/get" and target:
        attributes["gen_ai.prompt.name"] = target
    if isinstance(resource_uri, str) and resource_uri:  # (a signed URL's signature is a credential: never shown)
        attributes[MCP_RESOURCE_URI] = _shown_uri(resource_uri)
    if server:
        origin = url_origin(server)
        if origin is not None:
            attributes[SERVER_ADDRESS] = origin[1]
            attributes[SERVER_PORT] = origin[2]
            attributes["network.transport"] = "tcp"
            attributes["network.protocol.name"] = "http"
        elif url_host(server):  # (never the URL itself: its query or user part may hold a credential)
            attributes[SERVER_ADDRESS] = url_host(server)
    elif transport:
        attributes["network.transport"] = transport
    if method == "tools/call" and _PROVIDER_TOOLS:  # under a run's execute_tool span: its attributes go there
        current = state.trace.get_current_span()
        tool = _PROVIDER_TOOLS.get(id(current))
        if tool is not None and tool.span is current:
            for key, value in attributes.items():
                if key not in (GEN_AI_OPERATION_NAME, GEN_AI_TOOL_NAME):  # (the run's tool span says its own)
                    tool.set_attribute(key, value)
            return _Merged(tool)
    name = "{} {}".format(method, target) if target and method in ("tools/call", "prompts/get") else method
    span = _started(state, name, kind=state.kind_client, attributes=attributes)
    return _NOOP if span is None else _Span(state, span, state.span_content)


def workflow_span(name: str, attributes: Optional[Mapping[str, Any]] = None) -> Any:
    """An ``invoke_workflow {name}`` INTERNAL span (``agenthub.jobs.run``: one per job); not made current:
    its rows' spans name it as their parent (``child_span``), from whatever thread runs them."""
    state = _hook._state
    if state is None:
        return _NOOP
    base = {GEN_AI_OPERATION_NAME: "invoke_workflow", "gen_ai.workflow.name": name}  # type: Dict[str, Any]
    base.update(attributes or {})
    span = _started(state, "invoke_workflow {}".format(name), kind=state.kind_internal, attributes=base)
    return _NOOP if span is None else _Span(state, span, False)


def child_span(parent: Any, name: str, attributes: Optional[Mapping[str, Any]] = None) -> Any:
    """An INTERNAL span under ``parent`` (a handle from ``workflow_span``), whatever the current context:
    ``with`` it, the calls made in the block (this thread) are its children.  A no-op handle when
    nothing is instrumented or ``parent`` is no live span."""
    state = _hook._state
    if state is None or not isinstance(parent, _Span):
        return _NOOP
    context = state.trace.set_span_in_context(parent.span)
    span = _started(state, name, context=context, kind=state.kind_internal, attributes=dict(attributes or {}))
    return _NOOP if span is None else _Span(state, span, False)


class _Continued(object):
    """``with``: the extracted remote context is current (in this thread) for the block."""

    __slots__ = ("_state", "_context", "_token")

    def __init__(self, state: _State, context: Any) -> None:
        self._state = state
        self._context = context
        self._token = None  # type: Any

    def __enter__(self) -> "_Continued":
        self._token = self._state.context.attach(self._context)
        return self

    def __exit__(self, *exc_info: Any) -> None:
        if self._token is not None:
            self._state.context.detach(self._token)
            self._token = None


def continue_trace(headers: Optional[Mapping[str, Any]]) -> Any:
    """A context manager under which the calls made in this thread continue the W3C trace context of
    ``headers`` (an incoming request's ``traceparent`` / ``tracestate``: HTTP headers, a WSGI environ's
    ``HTTP_TRACEPARENT``, an MCP ``_meta``): ``agenthub serve`` wraps each upstream stream in it.  A no-op
    when nothing is instrumented or no trace context came."""
    state = _hook._state
    if state is None or not headers:
        return _NOOP
    carrier = {}  # type: Dict[str, str]
    for name in ("traceparent", "tracestate", "baggage"):
        value = headers.get(name)
        if value is None:
            value = headers.get("HTTP_" + name.upper())
        if isinstance(value, str) and value:
            carrier[name] = value
    if "traceparent" not in carrier:
        return _NOOP
    try:
        context = state.propagate.extract(carrier)
    except Exception:  # a propagator that raises: the request goes on in a trace of its own
        logger.debug("agenthub telemetry: the incoming trace context was not read", exc_info=True)
        return _NOOP
    return _Continued(state, context)


def inject_meta(meta: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
    """``meta`` (an MCP request's ``params._meta``, or None) with the current W3C trace context added
    (``traceparent``, ``tracestate``, and ``baggage`` when set), as the MCP conventions ask.  Not
    instrumented: ``meta`` as a new dict, unchanged."""
    out = dict(meta or {})
    state = _hook._state
    if state is not None:
        carrier = {}  # type: Dict[str, str]
        try:
            state.propagate.inject(carrier)
        except Exception:  # a propagator that raises: the request goes without the trace context
            logger.debug("agenthub telemetry: the trace context was not injected", exc_info=True)
            return out
        out.update(carrier)
    return out
