"""The call hook: ``instrument()`` sets up the tracer and the instruments (``_State``) and registers one
``GenAIHook`` (an ``agenthub.attempts.AttemptHook``) on the attempt loop, which writes one CLIENT span and the
GenAI metrics per logical call.  The one module of agenthub that imports ``opentelemetry`` (inside
``instrument()`` only)."""

import json
import logging
import os
import sys
import threading
import time
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from ..attempts import AttemptHook
from ..errors import ConfigError
from .names import (AGENTHUB_ATTEMPTS, AGENTHUB_CACHE, AGENTHUB_ROUTE_CLIENT_TYPE,
                    AGENTHUB_ROUTE_HOST, AGENTHUB_ROUTE_MODEL, CAPTURE_ENV, CAPTURE_MODES,
                    DETAILS_EVENT, DURATION_BUCKETS, ERROR_TYPE, GEN_AI_CLIENT_OPERATION_DURATION,
                    GEN_AI_CLIENT_OPERATION_TIME_PER_OUTPUT_CHUNK,
                    GEN_AI_CLIENT_OPERATION_TIME_TO_FIRST_CHUNK, GEN_AI_CLIENT_TOKEN_USAGE,
                    GEN_AI_EMBEDDINGS_DIMENSION_COUNT, GEN_AI_INPUT_MESSAGES, GEN_AI_OPERATION_NAME,
                    GEN_AI_REQUEST_ENCODING_FORMATS,
                    GEN_AI_OUTPUT_MESSAGES, GEN_AI_OUTPUT_TYPE, GEN_AI_PROVIDER_NAME,
                    GEN_AI_REQUEST_MAX_TOKENS, GEN_AI_REQUEST_MODEL, GEN_AI_REQUEST_SEED,
                    GEN_AI_REQUEST_STOP_SEQUENCES, GEN_AI_REQUEST_STREAM,
                    GEN_AI_REQUEST_TEMPERATURE, GEN_AI_REQUEST_TOP_P,
                    GEN_AI_RESPONSE_FINISH_REASONS, GEN_AI_RESPONSE_ID, GEN_AI_RESPONSE_MODEL,
                    GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK, GEN_AI_SYSTEM_INSTRUCTIONS,
                    GEN_AI_TOKEN_TYPE, GEN_AI_TOOL_DEFINITIONS,
                    GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS, GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS,
                    GEN_AI_USAGE_INPUT_TOKENS, GEN_AI_USAGE_OUTPUT_TOKENS,
                    GEN_AI_USAGE_REASONING_OUTPUT_TOKENS, LATEST, LATEST_TOKEN_MODALITY, LATEST_USAGE_COUNTERS,
                    LATEST_USAGE_HISTOGRAMS, OPENAI_API_TYPE,
                    OPENAI_REQUEST_SERVICE_TIER, OPENAI_RESPONSE_SERVICE_TIER, OPT_IN_ENV,
                    SCOPE, SERVER_ADDRESS, SERVER_PORT, TOKEN_BUCKETS, operation_name, provider_name)

logger = logging.getLogger("agenthub")

# -- the instrumented state --------------------------------------------------------------------------------------

_state = None  # type: Optional[_State]  # None: not instrumented (every helper returns the no-op handle)
_lock = threading.Lock()


def _capture_mode(value: Any) -> str:
    """capture_content= (wins) or the environment -> one of CAPTURE_MODES."""
    if value is None:
        raw = (os.environ.get(CAPTURE_ENV) or "").strip()
        upper = raw.upper()
        if upper in CAPTURE_MODES:
            return upper
        if upper in ("TRUE", "1"):
            return "SPAN_ONLY"
        if upper and upper not in ("FALSE", "0"):
            logger.warning("agenthub telemetry: %s=%r is not one of %s: no content is captured", CAPTURE_ENV,
                           raw[:40], ", ".join(CAPTURE_MODES))
        return "NO_CONTENT"
    if value is True:
        return "SPAN_ONLY"
    if value is False:
        return "NO_CONTENT"
    if isinstance(value, str) and value.upper() in CAPTURE_MODES:
        return value.upper()
    raise ConfigError("capture_content must be None, True, False or one of {} (got {!r})".format(
        ", ".join(CAPTURE_MODES), value if isinstance(value, (str, int, float)) else type(value).__name__))


def _latest() -> bool:
    return "gen_ai_latest_experimental" in [part.strip() for part in (os.environ.get(OPT_IN_ENV) or "").split(",")]


class _State(object):
    """What instrument() set up: the tracer, the instruments, the modes and the hook."""

    def __init__(self, tracer_provider: Any, meter_provider: Any, capture: str) -> None:
        from opentelemetry import context, propagate, trace
        from opentelemetry import metrics

        self.trace = trace
        self.context = context
        self.propagate = propagate
        self.kind_client = trace.SpanKind.CLIENT
        self.kind_internal = trace.SpanKind.INTERNAL
        self.status_error = trace.Status(trace.StatusCode.ERROR)
        version = getattr(sys.modules.get("agenthub"), "__version__", None)  # the package's (no import arrow up)
        self.tracer = trace.get_tracer(SCOPE, version, tracer_provider)
        meter = metrics.get_meter(SCOPE, version, meter_provider)
        self.latest = _latest()
        self.capture = capture
        self.span_content = capture in ("SPAN_ONLY", "SPAN_AND_EVENT")
        self.event_content = capture in ("EVENT_ONLY", "SPAN_AND_EVENT")
        name = (lambda n: LATEST.get(n, n)) if self.latest else (lambda n: n)
        self.name = name
        self.duration = _histogram(meter, name(GEN_AI_CLIENT_OPERATION_DURATION), "s", "GenAI operation duration.",
                                   DURATION_BUCKETS)
        # embeddings are no inference: in the latest conventions they keep gen_ai.client.operation.duration
        self.other_duration = self.duration if not self.latest else _histogram(
            meter, GEN_AI_CLIENT_OPERATION_DURATION, "s", "GenAI operation duration.", DURATION_BUCKETS)
        self.first_chunk = _histogram(meter, name(GEN_AI_CLIENT_OPERATION_TIME_TO_FIRST_CHUNK), "s",
                                      "Time to receive the first chunk of a streaming response.", DURATION_BUCKETS)
        self.per_chunk = _histogram(meter, name(GEN_AI_CLIENT_OPERATION_TIME_PER_OUTPUT_CHUNK), "s",
                                    "Time per output chunk after the first one.", DURATION_BUCKETS)
        if self.latest:
            self.tokens = None
            self.counters = {key: meter.create_counter(value, unit="{token}", description="GenAI tokens.")
                             for key, value in LATEST_USAGE_COUNTERS.items()}
            self.per_operation = {key: _histogram(meter, value, "{token}", "GenAI tokens of one operation.",
                                                  TOKEN_BUCKETS) for key, value in LATEST_USAGE_HISTOGRAMS.items()}
        else:
            self.tokens = _histogram(meter, GEN_AI_CLIENT_TOKEN_USAGE, "{token}",
                                     "Number of input and output tokens used.", TOKEN_BUCKETS)
            self.counters = {}
            self.per_operation = {}
        # per-event timing only where a meter records it: with the API's no-op meter a call pays nothing per event
        self.meter_live = _live_meter(meter_provider, metrics)
        self.metrics_api = metrics if meter_provider is None else None  # the global provider may be set later
        self.hook = GenAIHook(self)


def _histogram(meter: Any, name: str, unit: str, description: str, buckets: Tuple[float, ...]) -> Any:
    try:  # the advisory boundaries (API >= 1.23); older APIs take the SDK's defaults (a View may set them)
        return meter.create_histogram(name, unit=unit, description=description,
                                      explicit_bucket_boundaries_advisory=list(buckets))
    except TypeError:
        return meter.create_histogram(name, unit=unit, description=description)


def _live_meter(meter_provider: Any, metrics: Any) -> bool:
    provider = meter_provider if meter_provider is not None else metrics.get_meter_provider()
    kind = type(provider).__name__
    return kind not in ("NoOpMeterProvider", "_ProxyMeterProvider", "ProxyMeterProvider")


def instrument(tracer_provider: Any = None, meter_provider: Any = None, capture_content: Any = None) -> None:
    """Start GenAI telemetry for every call of every client in this process (again: the new settings).

    ``tracer_provider`` / ``meter_provider``: the OpenTelemetry providers (None: the global ones, as
    ``opentelemetry-instrument`` or your SDK setup configured them).  ``capture_content``: None (the
    environment decides), True/False, or one of NO_CONTENT, SPAN_ONLY, EVENT_ONLY, SPAN_AND_EVENT.
    Needs ``opentelemetry-api`` (``pip install '.[otel]'`` from agenthub's checkout): without it, a ConfigError.
    """
    global _state
    capture = _capture_mode(capture_content)
    for name, value, kind, method in (("tracer_provider", tracer_provider, "TracerProvider", "get_tracer"),
                                      ("meter_provider", meter_provider, "MeterProvider", "get_meter")):
        if value is not None and not callable(getattr(value, method, None)):
            raise ConfigError("{} must be an OpenTelemetry {} (with {}) or None (got {})".format(
                name, kind, method, type(value).__name__))
    try:
        import opentelemetry.trace  # noqa: F401  (the one place agenthub imports opentelemetry)
    except ImportError:
        raise ConfigError("agenthub.telemetry.instrument needs the OpenTelemetry API: pip install '.[otel]' "
                          "(from agenthub's checkout)") \
            from None
    from .. import attempts

    with _lock:
        state = _State(tracer_provider, meter_provider, capture)
        if _state is not None:
            attempts.unregister(_state.hook)
        _state = state
        attempts.register(state.hook)


class OpenTelemetryInstrumentor(object):
    """The ``opentelemetry_instrumentor`` entry point of the agenthub package: ``opentelemetry-instrument``
    (zero-code instrumentation) calls ``instrument()`` on it with the providers it configured."""

    def instrument(self, **kwargs: Any) -> None:
        instrument(kwargs.get("tracer_provider"), kwargs.get("meter_provider"))

    def uninstrument(self, **kwargs: Any) -> None:
        uninstrument()


#: what ``agenthub chat --otel`` says when no SDK was configured
RUN_UNDER = ("agenthub chat --otel exports with the SDK opentelemetry-instrument configures from the OTEL_* "
             "variables: pip install '.[otel]' (from agenthub's checkout) opentelemetry-distro "
             "opentelemetry-exporter-otlp, then run: opentelemetry-instrument agenthub chat MODEL PROMPT --otel")


def start_from_environment() -> Callable[[], None]:
    """``agenthub chat --otel``: instrument with the SDK ``opentelemetry-instrument`` configured (the global
    providers, set up from the standard ``OTEL_*`` variables), and return what flushes and stops it at the
    end.  No SDK configured globally (the command not run under ``opentelemetry-instrument``): a ConfigError
    saying how to run it, before anything is sent."""
    try:
        from opentelemetry import metrics, trace
    except ImportError:
        raise ConfigError(RUN_UNDER) from None
    if type(trace.get_tracer_provider()).__name__ in ("ProxyTracerProvider", "NoOpTracerProvider"):
        raise ConfigError(RUN_UNDER)
    if not is_instrumented():  # the entry point did it already under opentelemetry-instrument
        instrument()

    def flush_global() -> None:
        uninstrument()
        for provider in (trace.get_tracer_provider(), metrics.get_meter_provider()):
            flush = getattr(provider, "force_flush", None)
            if callable(flush):
                flush()
    return flush_global


def uninstrument() -> None:
    """Stop GenAI telemetry (calls already under way finish their spans)."""
    global _state
    with _lock:
        if _state is not None:
            from .. import attempts

            attempts.unregister(_state.hook)
        _state = None


def is_instrumented() -> bool:
    """True while ``instrument()`` is in effect (until ``uninstrument()``)."""
    return _state is not None


# -- the call span -------------------------------------------------------------------------------------------------


class _Call(object):
    """One logical call's span and timings."""

    __slots__ = ("span", "started", "first", "stamp", "gaps", "collector", "operation", "base", "recording",
                 "providers", "servers")

    def __init__(self) -> None:
        self.span = None  # type: Any
        self.started = time.monotonic()
        self.first = None  # type: Optional[float]
        self.stamp = None  # type: Any  # the read stamp (created_at, ms) of the latest chunk
        self.gaps = None  # type: Optional[List[float]]
        self.collector = None  # type: Any
        self.operation = "chat"
        self.base = {}  # type: Dict[str, Any]
        self.recording = False
        self.providers = None  # type: Optional[Dict[Any, str]]  # a fallback route's provider, by route
        self.servers = None  # type: Optional[Dict[Any, Tuple[str, int]]]  # a fallback route's (address, port)


def _response_model(call: Any, route: Optional[Mapping[str, Any]]) -> Optional[str]:
    """``gen_ai.response.model``: the model the server said answered (``Attempt.response_model``, from the
    stop event), else the answering route's model."""
    said = getattr(call, "response_model", None)
    if isinstance(said, str) and said:
        return said
    model = (route or {}).get("model")
    return model if isinstance(model, str) and model else None


def _route_key(route: Mapping[str, Any]) -> Tuple[Any, Any, Any]:
    return route.get("model"), route.get("client_type"), route.get("host")


def _is_embeddings(call: Any) -> bool:
    request = getattr(call, "request", None)
    url = getattr(request, "url", "") or ""
    return "embed" in url.lower() and not getattr(request, "stream", True)


def _route_server(value: Any) -> Tuple[Optional[str], Optional[int]]:
    """A route's ``host`` ("example.com", "127.0.0.1:8000", "[::1]:8000": the port only when it is not the
    scheme's) -> (host, port or None)."""
    if not isinstance(value, str) or not value:
        return None, None
    if value.startswith("["):
        address, _, rest = value[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else ""
        return address, int(port) if port.isdigit() else None
    if value.count(":") == 1:
        address, _, port = value.partition(":")
        if port.isdigit():
            return address, int(port)
    return value, None


def _server(call: Any, route: Optional[Mapping[str, Any]]) -> Tuple[Optional[str], Optional[int]]:
    server = getattr(call, "server", None)
    if isinstance(server, tuple) and len(server) == 2:
        return server[0], server[1]
    if route and route.get("host"):
        return _route_server(route["host"])
    return None, None


def _answering_server(call: Any, route: Optional[Mapping[str, Any]],
                      servers: Optional[Mapping[Any, Tuple[str, int]]] = None) -> Optional[Tuple[str, Optional[int]]]:
    """(address, port) of the route that answered: the server its own attempts went to (``servers``, by route: a
    fallback's), else the loop's ``server`` when it is that route's (its address, and its port where the route
    names one: two routes may share an address), else the route's host alone."""
    host, port = _route_server((route or {}).get("host"))
    server = (servers or {}).get(_route_key(route)) if route else None
    if server is not None:
        return server
    server = getattr(call, "server", None)
    if isinstance(server, tuple) and len(server) == 2 and (not host or (
            server[0] == host and (port is None or server[1] == port))):
        return server[0], server[1]
    if host:
        return host, port
    return None


#: the tool runner's spans (``spans.RunSpans``), set when the spans module loads (the package loads it)
run_spans = None  # type: Any


class GenAIHook(AttemptHook):
    """The attempt-loop hook instrument() registers (one per instrument() call): a span and the metrics per
    logical call (``on_call_start`` / ``on_event`` / ``on_call_end``; the per-attempt methods are the base's)."""

    def __init__(self, state: "_State") -> None:
        self.state = state
        self.wants_events = state.meter_live or state.capture != "NO_CONTENT"
        self._calls = {}  # type: Dict[int, _Call]

    def before_attempt(self, attempt: Any) -> None:
        """A fallback route's attempt: its provider (the fallback client's row) is kept for the span's end."""
        if attempt.call is attempt:
            return
        record = self._calls.get(id(attempt.call))
        provider = getattr(attempt, "provider", None)
        if record is not None and provider and attempt.route:
            if record.providers is None:
                record.providers = {}
            record.providers[_route_key(attempt.route)] = provider

    def on_done(self, attempt: Any) -> None:
        """A fallback route's attempts ended: the server they went to (encoded by then), for the span's end."""
        if attempt.call is attempt:
            return
        record = self._calls.get(id(attempt.call))
        server = getattr(attempt, "server", None)
        if record is not None and attempt.route and isinstance(server, tuple) and len(server) == 2:
            if record.servers is None:
                record.servers = {}
            record.servers[_route_key(attempt.route)] = server

    # the tool runner's hooks (an agenthub.agent.ToolHook by these methods): spans.RunSpans does the work
    def on_run_start(self, run: Any) -> None:
        if run_spans is not None:
            run_spans.on_run_start(run)

    def on_results(self, run: Any, message: Any) -> None:
        if run_spans is not None:
            run_spans.on_results(run, message)

    def on_run_end(self, run: Any, error: Any) -> None:
        if run_spans is not None:
            run_spans.on_run_end(run, error)

    def around_request(self, run: Any, proceed: Any) -> Any:
        return run_spans.around_request(run, proceed) if run_spans is not None else proceed()

    def around_call(self, run: Any, call: Any, proceed: Any) -> Any:
        return run_spans.around_call(run, call, proceed) if run_spans is not None else proceed()

    # telemetry never breaks a call: what fails in it is logged (DEBUG) and the call goes on
    def on_call_start(self, call: Any) -> None:
        try:
            self._start(call)
        except Exception:
            self._calls.pop(id(call), None)
            logger.debug("agenthub telemetry: the call span was not started", exc_info=True)

    def on_call_end(self, call: Any) -> None:
        try:
            self._end(call)
        except Exception:
            logger.debug("agenthub telemetry: the call span was not ended", exc_info=True)

    def _start(self, call: Any) -> None:
        if getattr(call, "kind", "stream") != "stream":
            return  # a model list page or a token count: no GenAI operation
        state = self.state
        record = _Call()
        route = getattr(call, "route", None) or {}
        client_type = getattr(call, "client_type", "") or route.get("client_type", "")
        model = getattr(call, "model", None) or route.get("model")
        record.operation = operation_name(client_type, _is_embeddings(call))
        host, port = _server(call, route)
        provider = getattr(call, "provider", None) or provider_name(
            client_type, host or _route_server(route.get("host"))[0] or "")  # the client's: the row it chose
        base = {GEN_AI_OPERATION_NAME: record.operation, GEN_AI_PROVIDER_NAME: provider}
        if model:
            base[GEN_AI_REQUEST_MODEL] = model
        if host:
            base[SERVER_ADDRESS] = host
            if port is not None:
                base[SERVER_PORT] = port
        record.base = base
        try:
            span = state.tracer.start_span("{} {}".format(record.operation, model or "").rstrip(),
                                           kind=state.kind_client, attributes=base)
        except Exception:  # a span processor's on_start, a sampler: no span, the metrics still counted
            logger.debug("agenthub telemetry: the call span was not started", exc_info=True)
            span = state.trace.INVALID_SPAN
        record.span = span
        record.recording = span.is_recording()
        if record.recording:
            try:
                _request_attributes(span, call, record.operation)
            except Exception:  # the span it started still ends (on_call_end), with what it holds
                logger.debug("agenthub telemetry: request attributes not recorded", exc_info=True)
            if state.capture != "NO_CONTENT":
                record.collector = _collector()
        if not state.meter_live and state.metrics_api is not None and _live_meter(None, state.metrics_api):
            state.meter_live = self.wants_events = True  # an SDK was configured globally after instrument()
        if state.meter_live:
            record.gaps = []
        self._calls[id(call)] = record

    def on_event(self, call: Any, event: Any) -> None:
        """Per event: the first one's time, and a gap each time a new chunk arrived.  A chunk is what one
        read of the response body delivered: the events sharing a read stamp (``created_at``, the ms the
        bytes completing them were read) are one chunk, so a burst read at once is one chunk, as the SDK's
        cost per recorded value (~10 us) is paid per chunk, not per event."""
        record = self._calls.get(id(call))
        if record is None:
            return
        try:
            stamp = event.get("created_at")
            if record.first is None:
                record.first = time.monotonic()
                record.stamp = stamp
            elif stamp != record.stamp:
                if record.gaps is not None and type(stamp) is int and type(record.stamp) is int:
                    record.gaps.append(max(0, stamp - record.stamp) / 1000.0)
                record.stamp = stamp
            if record.collector is not None:
                record.collector.add(event)
        except Exception:
            record.collector = None  # content is dropped, the span still ends
            logger.debug("agenthub telemetry: an event was not recorded", exc_info=True)

    def _end(self, call: Any) -> None:
        record = self._calls.pop(id(call), None)
        if record is None:
            return
        state = self.state
        ended = time.monotonic()
        span = record.span
        error = getattr(call, "error", None)
        route = getattr(call, "route", None) or None
        # a call a hook answered (agenthub.ResponseCache: call.cache "hit") sent nothing: the answer it replayed
        # carries the usage of the call that stored it, but no token was used now (the conventions' token counts
        # are the tokens "used", billable ones where both are reported), nor was any chunk streamed by a server
        replayed = isinstance(getattr(call, "cache", None), str) and bool(call.cache)
        usage = None if replayed else _usage(getattr(call, "usage", None))
        raised = getattr(call, "raised", None)  # a KeyboardInterrupt or a hook's own exception ended it
        error_type = type(error).__name__ if error is not None else (
            getattr(raised, "__name__", None) if raised is not None else None)
        answered_at = _answering_server(call, route, record.servers)
        if answered_at is not None:  # known once an attempt was encoded: the server of the route that answered
            record.base[SERVER_ADDRESS] = answered_at[0]
            if answered_at[1] is not None:
                record.base[SERVER_PORT] = answered_at[1]
            else:
                record.base.pop(SERVER_PORT, None)
            if record.recording:
                span.set_attributes({k: record.base[k] for k in (SERVER_ADDRESS, SERVER_PORT) if k in record.base})
        metric_attrs = dict(record.base)
        answered_by = _response_model(call, route)
        if answered_by:
            metric_attrs[GEN_AI_RESPONSE_MODEL] = answered_by
        first = None if replayed else record.first
        if first is None and not replayed and getattr(call, "first_event_ms", None) is not None \
                and getattr(call, "started_ms", None):
            first = record.started + max(0, call.first_event_ms - call.started_ms) / 1000.0
        if record.recording:
            try:
                _response_attributes(state, span, call, route, usage, first, record)
            except Exception:  # telemetry never breaks a call
                logger.debug("agenthub telemetry: response attributes not recorded", exc_info=True)
            if error_type is not None:
                span.set_attribute(ERROR_TYPE, error_type)
                span.set_status(state.trace.Status(state.trace.StatusCode.ERROR, error_type))
        try:
            span.end()
        except Exception:  # a span processor's on_end (an exporter called synchronously): the metrics still go
            logger.debug("agenthub telemetry: the call span did not end cleanly", exc_info=True)
        # metrics (each record gets its own dict: some SDKs keep the one they are given)
        histogram = state.duration if record.operation != "embeddings" else state.other_duration
        histogram.record(ended - record.started, metric_attrs if error_type is None
                         else dict(metric_attrs, **{ERROR_TYPE: error_type}))
        if usage is not None:
            _record_usage(state, usage, metric_attrs)
        streaming = getattr(getattr(call, "request", None), "stream", True)
        if streaming and first is not None and record.operation != "embeddings":
            state.first_chunk.record(max(0.0, first - record.started), dict(metric_attrs))
            if record.gaps:
                per_chunk = state.per_chunk
                for gap in record.gaps:
                    per_chunk.record(gap, metric_attrs)  # one dict for all: none of them is changed after


def _collector() -> Any:
    from ..stream import Collector

    return Collector()


def _usage(raw: Any) -> Optional[Dict[str, Optional[int]]]:
    """The four buckets -> the conventions' counts (None: no usage reported)."""
    if not isinstance(raw, Mapping):
        return None
    cached, prompt, thoughts, response = (raw.get(key) for key in (
        "cached_tokens", "prompt_tokens", "thoughts_tokens", "response_tokens"))
    if cached is None and prompt is None and thoughts is None and response is None:
        return None
    counts = {
        "input": None if cached is None and prompt is None else (cached or 0) + (prompt or 0),
        "output": None if thoughts is None and response is None else (thoughts or 0) + (response or 0),
        "cache_read": cached,
        "reasoning": thoughts,
        "cache_write": getattr(raw, "cache_write", None),  # the wire's count, where a provider reports it
    }
    return counts


def _record_usage(state: _State, usage: Mapping[str, Optional[int]], attrs: Dict[str, Any]) -> None:
    if state.tokens is not None:
        for kind in ("input", "output"):
            value = usage.get(kind)
            if value is not None:
                state.tokens.record(value, dict(attrs, **{GEN_AI_TOKEN_TYPE: kind}))
        return
    # agenthub's counts are not broken down by modality: "unknown", as the conventions ask then
    counted = dict(attrs, **{LATEST_TOKEN_MODALITY: "unknown"})
    for kind, counter in state.counters.items():
        value = usage.get(kind)
        if value is not None:
            counter.add(value, dict(counted))
    for kind, histogram in state.per_operation.items():
        value = usage.get(kind)
        if value is not None:
            histogram.record(value, dict(attrs))


def _request_attributes(span: Any, call: Any, operation: str) -> None:
    config = getattr(call, "config", None) or {}
    request = getattr(call, "request", None)
    if getattr(request, "stream", False) and operation != "embeddings":
        span.set_attribute(GEN_AI_REQUEST_STREAM, True)
    for key, name, kind in (("max_tokens", GEN_AI_REQUEST_MAX_TOKENS, int),
                            ("temperature", GEN_AI_REQUEST_TEMPERATURE, float),
                            ("top_p", GEN_AI_REQUEST_TOP_P, float), ("seed", GEN_AI_REQUEST_SEED, int)):
        value = config.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and (kind is float or _int64(value)):
            span.set_attribute(name, kind(value))
    stop = config.get("stop")
    if isinstance(stop, str):
        stop = [stop]
    if isinstance(stop, list) and stop and all(isinstance(s, str) for s in stop):
        span.set_attribute(GEN_AI_REQUEST_STOP_SEQUENCES, stop)
    if operation == "embeddings":
        body = getattr(request, "body", None)
        encoding = body.get("encoding_format") if isinstance(body, Mapping) else None
        if isinstance(encoding, str) and encoding:  # (recommended on embeddings spans: what the request asked for)
            span.set_attribute(GEN_AI_REQUEST_ENCODING_FORMATS, [encoding])
        dimensions = (config.get("embedding_config") or {}).get("dimensions")
        if isinstance(dimensions, int) and not isinstance(dimensions, bool) and _int64(dimensions):
            span.set_attribute(GEN_AI_EMBEDDINGS_DIMENSION_COUNT, dimensions)
    output = _output_type(config)
    if output is not None:
        span.set_attribute(GEN_AI_OUTPUT_TYPE, output)


def _int64(value: Any) -> bool:
    """Does ``value`` fit an int attribute?  OTLP carries int64: one int past it (check_config takes a seed of any
    size) made the exporter's encoding raise, losing every span of its batch."""
    return -2 ** 63 <= value < 2 ** 63


#: openai.api.type of the OpenAI API a request's path names (v1.41 docs/registry/attributes/openai.md)
_OPENAI_API_TYPES = (("/chat/completions", "chat_completions"), ("/responses", "responses"))


def _openai_attributes(span: Any, call: Any, record: _Call) -> None:
    """The OpenAI spans' own attributes (v1.41 model/gen-ai/spans.yaml, span.openai.inference.client), when the
    span's provider is ``openai`` and the call's own route answered: ``openai.api.type`` (recommended),
    ``openai.request.service_tier`` ("if the request includes a service_tier and the value is not 'auto'") and
    ``openai.response.service_tier`` ("if the response was received and includes a service_tier")."""
    if record.base.get(GEN_AI_PROVIDER_NAME) != "openai" or record.operation == "embeddings":
        return
    request = getattr(call, "request", None)
    path = (getattr(request, "url", "") or "").split("?", 1)[0]
    for suffix, kind in _OPENAI_API_TYPES:
        if path.endswith(suffix):
            span.set_attribute(OPENAI_API_TYPE, kind)
            break
    body = getattr(request, "body", None)
    tier = body.get("service_tier") if isinstance(body, Mapping) else None
    if isinstance(tier, str) and tier and tier != "auto":
        span.set_attribute(OPENAI_REQUEST_SERVICE_TIER, tier)
    said = getattr(getattr(call, "usage", None), "service_tier", None)  # (agenthub's name: "standard" is "default")
    if isinstance(said, str) and said and getattr(call, "cache", None) is None:
        span.set_attribute(OPENAI_RESPONSE_SERVICE_TIER, "default" if said == "standard" else said)


def _output_type(config: Mapping[str, Any]) -> Optional[str]:
    """gen_ai.output.type: json for a JSON response_format, image / speech for image or speech output."""
    fmt = config.get("response_format")
    if isinstance(fmt, Mapping) and fmt.get("type") in ("json_object", "json_schema"):
        return "json"
    if isinstance(fmt, Mapping) and fmt.get("type") == "text":
        return "text"
    if config.get("tts_config"):
        return "speech"
    if config.get("image_config"):
        return "image"
    return None


def _response_attributes(state: _State, span: Any, call: Any, route: Optional[Mapping[str, Any]],
                         usage: Optional[Mapping[str, Optional[int]]], first: Optional[float], record: _Call) -> None:
    answered_by = _response_model(call, route)
    if answered_by:
        span.set_attribute(GEN_AI_RESPONSE_MODEL, answered_by)
    fallback = False
    if route:
        if route.get("model"):
            span.set_attribute(AGENTHUB_ROUTE_MODEL, route["model"])
        if route.get("client_type"):
            span.set_attribute(AGENTHUB_ROUTE_CLIENT_TYPE, route["client_type"])
        if route.get("host"):
            span.set_attribute(AGENTHUB_ROUTE_HOST, route["host"])
        if route.get("client_type") and route.get("client_type") != getattr(call, "client_type", None) or (
                route.get("model") and route.get("model") != getattr(call, "model", None)):
            # a fallback answered: its provider is the one the span's numbers come from
            fallback = True
            provider = (record.providers or {}).get(_route_key(route)) or provider_name(
                route.get("client_type", ""), _route_server(route.get("host"))[0] or "")
            span.set_attribute(GEN_AI_PROVIDER_NAME, provider)
    if not fallback:  # (the call's request is its own route's)
        _openai_attributes(span, call, record)
    count = getattr(call, "attempts", None)
    if isinstance(count, int) and count:
        span.set_attribute(AGENTHUB_ATTEMPTS, count)
    cache = getattr(call, "cache", None)
    if isinstance(cache, str) and cache:  # a hook answered the call (agenthub.ResponseCache): nothing was sent
        span.set_attribute(AGENTHUB_CACHE, cache)
    response_id = getattr(call, "response_id", None)
    if isinstance(response_id, str) and response_id:
        span.set_attribute(GEN_AI_RESPONSE_ID, response_id)
    reason = getattr(call, "finish_reason", None)
    if isinstance(reason, str) and record.operation != "embeddings":
        span.set_attribute(GEN_AI_RESPONSE_FINISH_REASONS, [reason])
    if usage is not None:
        for key, name in (("input", GEN_AI_USAGE_INPUT_TOKENS), ("output", GEN_AI_USAGE_OUTPUT_TOKENS),
                          ("cache_read", GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS),
                          ("reasoning", GEN_AI_USAGE_REASONING_OUTPUT_TOKENS),
                          ("cache_write", state.name(GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS))):
            value = usage.get(key)
            if value is not None:
                span.set_attribute(name, value)
    if first is not None and getattr(getattr(call, "request", None), "stream", False) \
            and record.operation != "embeddings":
        span.set_attribute(GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK, max(0.0, first - record.started))
    if record.collector is not None:
        failed = getattr(call, "error", None) is not None or getattr(call, "raised", None) is not None
        answer = record.collector.message() if not failed else None
        content = _content_attributes(call, answer, reason, state.latest)
        if state.span_content:
            for name, value in content.items():
                span.set_attribute(name, value)
        if state.event_content:
            span.add_event(DETAILS_EVENT, content)


# -- content (only with capture) ------------------------------------------------------------------------------------


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=_unjsonable)


def _unjsonable(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray)):
        return "<{} bytes>".format(len(value))
    return "<{}>".format(type(value).__name__)


#: the most characters of one text captured as content (a message's text, reasoning, a text in a tool's arguments
#: or its result, the system prompt): a longer one keeps its start and says how much was left out (docs/telemetry.md)
CONTENT_LIMIT = 32768


#: how deep ``_bounded`` walks an object (a tool call's arguments): past it a value is left as it is
_BOUNDED_DEPTH = 64


def _bounded(text: Any, depth: int = 0) -> Any:
    """``text`` cut to CONTENT_LIMIT characters (then ``...[N more characters]``); in an object or a list (a tool
    call's arguments) each text is, in a copy of the same shape; any other value as it is."""
    if isinstance(text, str):
        if len(text) > CONTENT_LIMIT:
            return "{}...[{} more characters]".format(text[:CONTENT_LIMIT], len(text) - CONTENT_LIMIT)
        return text
    if depth < _BOUNDED_DEPTH:
        if isinstance(text, Mapping):
            return {key: _bounded(value, depth + 1) for key, value in text.items()}
        if isinstance(text, (list, tuple)):
            return [_bounded(value, depth + 1) for value in text]
    return text


def _shown_uri(url: Any) -> Any:
    """An image URL as captured content: its query values and ``user:password@`` as ``***`` (a presigned URL's
    signature is a credential); the rest as sent."""
    from .._redact import redact_url_query

    return _bounded(redact_url_query(url))


def _size(data: Any) -> Optional[int]:
    if isinstance(data, (bytes, bytearray)):
        return len(data)
    return None


def _parts(items: Any) -> Tuple[List[Dict[str, Any]], List[Dict[str, Any]]]:
    """UniMessage content items -> (parts, tool responses) in the conventions' message schema.  Bytes
    never go in: an inline item keeps its MIME type and size, a data: URI its MIME type."""
    parts = []  # type: List[Dict[str, Any]]
    responses = []  # type: List[Dict[str, Any]]
    for item in items or ():
        if not isinstance(item, Mapping):
            continue
        kind = item.get("type")
        if kind == "text":
            parts.append({"type": "text", "content": _bounded(item.get("text", ""))})
        elif kind == "thinking":
            parts.append({"type": "reasoning", "content": _bounded(item.get("thinking", ""))})
        elif kind == "image_url":
            url = item.get("image_url") or ""
            if isinstance(url, str) and url.startswith("data:"):
                mime = url[5:].split(";", 1)[0].split(",", 1)[0]
                parts.append({"type": "inline_data", "modality": "image", "mime_type": mime,
                              "size": len(url)})
            else:
                parts.append({"type": "uri", "modality": "image", "uri": _shown_uri(url)})
        elif kind in ("inline_data", "inline_thinking"):
            mime = item.get("mime_type") or ""
            part = {"type": kind, "mime_type": mime, "size": _size(item.get("data"))}
            modality = mime.split("/", 1)[0]
            if modality in ("image", "audio", "video"):
                part["modality"] = modality
            parts.append(part)
        elif kind == "tool_call":
            parts.append({"type": "tool_call", "id": item.get("tool_call_id"), "name": item.get("name", ""),
                          "arguments": _bounded(item.get("arguments"))})
        elif kind == "tool_result":
            response = {"type": "tool_call_response", "id": item.get("tool_call_id"),
                        "response": _bounded(item.get("text", ""))}
            responses.append(response)
        elif kind == "embedding":
            continue
    return parts, responses


def _input_messages(messages: Any) -> List[Dict[str, Any]]:
    out = []  # type: List[Dict[str, Any]]
    for message in messages or ():
        if not isinstance(message, Mapping):
            continue
        parts, responses = _parts(message.get("content_items"))
        if responses:
            out.append({"role": "tool", "parts": responses})
        if parts or not responses:
            out.append({"role": message.get("role", "user"), "parts": parts})
    return out


def _content_attributes(call: Any, answer: Optional[Mapping[str, Any]], reason: Optional[str],
                        latest: bool) -> Dict[str, str]:
    config = getattr(call, "config", None) or {}
    content = {GEN_AI_INPUT_MESSAGES: _dumps(_input_messages(getattr(call, "messages", None)))}
    system = config.get("system_prompt")
    if isinstance(system, str) and system:
        content[GEN_AI_SYSTEM_INSTRUCTIONS] = _dumps([{"type": "text", "content": _bounded(system)}])
    tools = config.get("tools")
    if tools:
        content[GEN_AI_TOOL_DEFINITIONS] = _dumps([
            {"type": "function", "name": tool.get("name", ""), "description": _bounded(tool.get("description")),
             "parameters": _bounded(tool.get("parameters"))} for tool in tools if isinstance(tool, Mapping)])
    if answer is not None:
        parts, _ = _parts(answer.get("content_items"))
        message = {"role": "assistant", "parts": parts}  # type: Dict[str, Any]
        if not latest:  # required in v1.41's schema; deprecated since (gen_ai.response.finish_reasons)
            message["finish_reason"] = reason or "unknown"
        content[GEN_AI_OUTPUT_MESSAGES] = _dumps([message])
    return content
