"""OpenTelemetry GenAI telemetry: every call as a ``chat`` / ``generate_content`` / ``embeddings`` span with
the GenAI semantic conventions' attributes and metrics, tool runs and MCP requests as spans beside it.

``instrument(tracer_provider=None, meter_provider=None, capture_content=None)`` registers one process-wide
hook on the attempt loop (``agenthub.attempts.register``); ``uninstrument()`` removes it.  This module is
the only one that imports ``opentelemetry`` (the optional extra ``otel``: ``pip install '.[otel]'`` from agenthub's checkout; the API only), and
only inside ``instrument()``: ``import agenthub`` and a call made without it never import it.

One CLIENT span per logical call, named ``{gen_ai.operation.name} {gen_ai.request.model}``, covers every
attempt of every failover route; the route that answered is ``gen_ai.response.model`` and the
``agenthub.route.*`` attributes.  Token counts come from agenthub's four exclusive buckets:
``gen_ai.usage.input_tokens`` = cached + prompt, ``gen_ai.usage.output_tokens`` = thoughts + response,
``gen_ai.usage.cache_read.input_tokens`` = cached, ``gen_ai.usage.reasoning.output_tokens`` = thoughts
(where the provider reports them), ``gen_ai.usage.cache_creation.input_tokens`` the cache writes the
provider reported (Anthropic, Bedrock; already inside input_tokens, as the conventions ask).

Names are those of the GenAI conventions as last published in open-telemetry/semantic-conventions
(v1.41, what ``opentelemetry-semantic-conventions`` carries); with ``gen_ai_latest_experimental`` in
``OTEL_SEMCONV_STABILITY_OPT_IN`` the newer names of the semantic-conventions-genai repository are used
(``cache_write`` for ``cache_creation``, the ``gen_ai.client.inference.*`` metrics, no
``finish_reason`` inside output messages).

Content (``gen_ai.input.messages``, ``gen_ai.output.messages``, ``gen_ai.system_instructions``,
``gen_ai.tool.definitions``, tool arguments and results) is recorded only when asked:
``capture_content=True`` (or one of the values below), else
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` = ``NO_CONTENT`` (default), ``SPAN_ONLY``,
``EVENT_ONLY`` or ``SPAN_AND_EVENT`` (events are span events named
``gen_ai.client.inference.operation.details``).  No key, header or ``extra_headers`` value is ever an
attribute, and bytes are never inlined (an inline part records its MIME type and size).

The helpers the tool runner and the MCP client call (``agent_span``, ``tool_span``, ``mcp_span``,
``inject_meta``) cost one global read when nothing is instrumented.
"""

import json
import logging
import os
import sys
import threading
import time
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from .errors import ConfigError
from .hosts.trust import url_host, url_origin

__all__ = ["instrument", "uninstrument", "is_instrumented", "start_from_environment", "continue_trace",
           "workflow_span", "child_span", "activate", "OpenTelemetryInstrumentor", "agent_span", "tool_span", "mcp_span", "inject_meta",
           "provider_name", "operation_name"]

logger = logging.getLogger("agenthub")

# -- names (v1.41: tests/test_telemetry.py checks each against opentelemetry-semantic-conventions) ---------------
GEN_AI_OPERATION_NAME = "gen_ai.operation.name"
GEN_AI_PROVIDER_NAME = "gen_ai.provider.name"
GEN_AI_REQUEST_MODEL = "gen_ai.request.model"
GEN_AI_REQUEST_MAX_TOKENS = "gen_ai.request.max_tokens"
GEN_AI_REQUEST_TEMPERATURE = "gen_ai.request.temperature"
GEN_AI_REQUEST_TOP_P = "gen_ai.request.top_p"
GEN_AI_REQUEST_SEED = "gen_ai.request.seed"
GEN_AI_REQUEST_STOP_SEQUENCES = "gen_ai.request.stop_sequences"
GEN_AI_REQUEST_STREAM = "gen_ai.request.stream"
GEN_AI_REQUEST_ENCODING_FORMATS = "gen_ai.request.encoding_formats"
GEN_AI_EMBEDDINGS_DIMENSION_COUNT = "gen_ai.embeddings.dimension.count"
GEN_AI_OUTPUT_TYPE = "gen_ai.output.type"
GEN_AI_RESPONSE_ID = "gen_ai.response.id"
GEN_AI_RESPONSE_MODEL = "gen_ai.response.model"
GEN_AI_RESPONSE_FINISH_REASONS = "gen_ai.response.finish_reasons"
GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK = "gen_ai.response.time_to_first_chunk"
GEN_AI_USAGE_INPUT_TOKENS = "gen_ai.usage.input_tokens"
GEN_AI_USAGE_OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS = "gen_ai.usage.cache_read.input_tokens"
GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS = "gen_ai.usage.cache_creation.input_tokens"
GEN_AI_USAGE_REASONING_OUTPUT_TOKENS = "gen_ai.usage.reasoning.output_tokens"
GEN_AI_INPUT_MESSAGES = "gen_ai.input.messages"
GEN_AI_OUTPUT_MESSAGES = "gen_ai.output.messages"
GEN_AI_SYSTEM_INSTRUCTIONS = "gen_ai.system_instructions"
GEN_AI_TOOL_DEFINITIONS = "gen_ai.tool.definitions"
GEN_AI_TOOL_NAME = "gen_ai.tool.name"
GEN_AI_TOOL_CALL_ID = "gen_ai.tool.call.id"
GEN_AI_TOOL_TYPE = "gen_ai.tool.type"
GEN_AI_TOOL_CALL_ARGUMENTS = "gen_ai.tool.call.arguments"
GEN_AI_TOOL_CALL_RESULT = "gen_ai.tool.call.result"
GEN_AI_AGENT_NAME = "gen_ai.agent.name"
GEN_AI_TOKEN_TYPE = "gen_ai.token.type"
SERVER_ADDRESS = "server.address"
SERVER_PORT = "server.port"
ERROR_TYPE = "error.type"
MCP_METHOD_NAME = "mcp.method.name"
MCP_PROTOCOL_VERSION = "mcp.protocol.version"
MCP_SESSION_ID = "mcp.session.id"
JSONRPC_REQUEST_ID = "jsonrpc.request.id"
RPC_RESPONSE_STATUS_CODE = "rpc.response.status_code"
#: the failover route that answered (agenthub's own; the conventions have none)
AGENTHUB_ROUTE_MODEL = "agenthub.route.model"
AGENTHUB_ROUTE_CLIENT_TYPE = "agenthub.route.client_type"
AGENTHUB_ROUTE_HOST = "agenthub.route.host"
AGENTHUB_ROUTE_INDEX = "agenthub.route.index"
AGENTHUB_ATTEMPTS = "agenthub.attempts"
AGENTHUB_CACHE = "agenthub.cache"

GEN_AI_CLIENT_TOKEN_USAGE = "gen_ai.client.token.usage"
GEN_AI_CLIENT_OPERATION_DURATION = "gen_ai.client.operation.duration"
GEN_AI_CLIENT_OPERATION_TIME_TO_FIRST_CHUNK = "gen_ai.client.operation.time_to_first_chunk"
GEN_AI_CLIENT_OPERATION_TIME_PER_OUTPUT_CHUNK = "gen_ai.client.operation.time_per_output_chunk"

#: the newer names (semantic-conventions-genai, docs/gen-ai/non-normative/migration.md) used with
#: OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental
LATEST = {
    GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS: "gen_ai.usage.cache_write.input_tokens",
    GEN_AI_CLIENT_OPERATION_DURATION: "gen_ai.client.inference.duration",
    GEN_AI_CLIENT_OPERATION_TIME_TO_FIRST_CHUNK: "gen_ai.client.inference.time_to_first_chunk",
    GEN_AI_CLIENT_OPERATION_TIME_PER_OUTPUT_CHUNK: "gen_ai.client.inference.time_per_output_chunk",
}
#: latest: gen_ai.client.token.usage is replaced by one counter per count
LATEST_USAGE_COUNTERS = {
    "input": "gen_ai.client.inference.usage.input_tokens",
    "output": "gen_ai.client.inference.usage.output_tokens",
    "cache_read": "gen_ai.client.inference.usage.cache_read.input_tokens",
    "cache_write": "gen_ai.client.inference.usage.cache_write.input_tokens",
    "reasoning": "gen_ai.client.inference.usage.reasoning.output_tokens",
}

#: the conventions' ExplicitBucketBoundaries
DURATION_BUCKETS = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92)
TOKEN_BUCKETS = (1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864)

CAPTURE_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
OPT_IN_ENV = "OTEL_SEMCONV_STABILITY_OPT_IN"
CAPTURE_MODES = ("NO_CONTENT", "SPAN_ONLY", "EVENT_ONLY", "SPAN_AND_EVENT")
DETAILS_EVENT = "gen_ai.client.inference.operation.details"
SCOPE = "agenthub"

# -- gen_ai.provider.name ------------------------------------------------------------------------------------

#: client types whose host says who serves them
_BY_CLIENT_TYPE = {
    "anthropic": "anthropic",
    "gemini": "gcp.gemini",
    "gemini-interactions": "gcp.gemini",
    "azure": "azure.ai.openai",
    "azure-responses": "azure.ai.openai",
    "azure-anthropic": "anthropic",  # Claude on Microsoft Foundry: Anthropic's format, Anthropic's models
    "vertex": "gcp.vertex_ai",
    "vertex-anthropic": "gcp.vertex_ai",
    "bedrock": "aws.bedrock",
    "agenthub": "agenthub",
}
#: OpenAI-dialect hosts with a well-known value of their own (host suffix -> value)
_OPENAI_HOSTS = (
    ("api.deepseek.com", "deepseek"),
    ("api.moonshot.ai", "moonshot_ai"),
    ("api.moonshot.cn", "moonshot_ai"),
    ("api.groq.com", "groq"),
    ("api.mistral.ai", "mistral_ai"),
    ("api.x.ai", "x_ai"),
    ("api.perplexity.ai", "perplexity"),
    ("api.cohere.com", "cohere"),
    ("api.cohere.ai", "cohere"),
    ("openai.azure.com", "azure.ai.openai"),
    ("aiplatform.googleapis.com", "gcp.vertex_ai"),
    ("generativelanguage.googleapis.com", "gcp.gemini"),
)


def provider_name(client_type: str, host: str = "") -> str:
    """``gen_ai.provider.name`` of a route: the host's well-known value (``deepseek``, ``moonshot_ai``,
    ``azure.ai.openai``, ``aws.bedrock``, ``gcp.vertex_ai``, ...); an OpenAI dialect on any other host
    ``openai``, the Gemini API ``gcp.gemini``."""
    host = (host or "").lower()
    for suffix, value in _OPENAI_HOSTS:
        if host == suffix or host.endswith("." + suffix):
            if client_type in ("openai-chat", "openai-responses") or _BY_CLIENT_TYPE.get(client_type) is None:
                return value
    found = _BY_CLIENT_TYPE.get(client_type)
    if found is not None:
        return found
    return "openai"


def operation_name(client_type: str, embeddings: bool = False) -> str:
    """``gen_ai.operation.name``: ``embeddings``, ``generate_content`` for the Gemini dialects, else ``chat``."""
    if embeddings:
        return "embeddings"
    from . import hosts

    row = hosts.CLIENT_TYPES.get(client_type)
    if row is not None and row.dialect in ("gemini", "gemini-interactions"):
        return "generate_content"
    return "chat"


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
        else:
            self.tokens = _histogram(meter, GEN_AI_CLIENT_TOKEN_USAGE, "{token}",
                                     "Number of input and output tokens used.", TOKEN_BUCKETS)
            self.counters = {}
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
    try:
        import opentelemetry.trace  # noqa: F401  (the one place agenthub imports opentelemetry)
    except ImportError:
        raise ConfigError("agenthub.telemetry.instrument needs the OpenTelemetry API: pip install '.[otel]' "
                          "(from agenthub's checkout)") \
            from None
    from . import attempts

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


def start_from_environment() -> Callable[[], None]:
    """``agenthub chat --otel``: instrument, and return what flushes and stops it at the end.

    Under ``opentelemetry-instrument`` (an SDK configured globally) the global providers are used.  Else
    an SDK is set up here for this process from the standard variables: ``OTEL_TRACES_EXPORTER`` /
    ``OTEL_METRICS_EXPORTER`` = ``otlp`` (default: ``opentelemetry-exporter-otlp``'s HTTP or gRPC
    exporter, configured by ``OTEL_EXPORTER_OTLP_*``), ``console`` (JSON on stderr) or ``none``, and
    ``OTEL_SERVICE_NAME`` (default ``agenthub``).  A missing package is a ConfigError naming it."""
    try:
        from opentelemetry import metrics, trace
    except ImportError:
        raise ConfigError("--otel needs the OpenTelemetry API: pip install '.[otel]' (from agenthub's "
                          "checkout)") from None
    if type(trace.get_tracer_provider()).__name__ not in ("ProxyTracerProvider", "NoOpTracerProvider"):
        instrument()  # opentelemetry-instrument (or the application) configured the SDK

        def flush_global() -> None:
            uninstrument()
            for provider in (trace.get_tracer_provider(), metrics.get_meter_provider()):
                flush = getattr(provider, "force_flush", None)
                if callable(flush):
                    flush()
        return flush_global
    try:
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import ConsoleMetricExporter, PeriodicExportingMetricReader
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter
    except ImportError:
        raise ConfigError("--otel without opentelemetry-instrument needs the OpenTelemetry SDK: pip install "
                          "opentelemetry-sdk opentelemetry-exporter-otlp") from None
    resource = Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME") or "agenthub"})
    tracer_provider = TracerProvider(resource=resource)
    readers = []
    span_kind = (os.environ.get("OTEL_TRACES_EXPORTER") or "otlp").strip().lower()
    metric_kind = (os.environ.get("OTEL_METRICS_EXPORTER") or "otlp").strip().lower()
    if span_kind == "console":
        tracer_provider.add_span_processor(BatchSpanProcessor(ConsoleSpanExporter(out=sys.stderr)))
    elif span_kind == "otlp":
        tracer_provider.add_span_processor(BatchSpanProcessor(_otlp("trace_exporter", "OTLPSpanExporter")))
    elif span_kind != "none":
        raise ConfigError("OTEL_TRACES_EXPORTER={!r}: agenthub chat --otel knows otlp, console and none".format(
            span_kind[:40]))
    if metric_kind == "console":
        readers.append(PeriodicExportingMetricReader(ConsoleMetricExporter(out=sys.stderr)))
    elif metric_kind == "otlp":
        readers.append(PeriodicExportingMetricReader(_otlp("metric_exporter", "OTLPMetricExporter")))
    elif metric_kind != "none":
        raise ConfigError("OTEL_METRICS_EXPORTER={!r}: agenthub chat --otel knows otlp, console and none".format(
            metric_kind[:40]))
    meter_provider = MeterProvider(resource=resource, metric_readers=readers)
    instrument(tracer_provider, meter_provider)

    def shutdown() -> None:
        uninstrument()
        tracer_provider.shutdown()  # flushes what is batched
        meter_provider.shutdown()
    return shutdown


def _otlp(module: str, name: str) -> Any:
    """An OTLP exporter: HTTP (protobuf) when installed, else gRPC, configured by the OTEL_EXPORTER_OTLP_* variables."""
    import importlib

    for transport in ("http", "grpc"):
        try:
            found = importlib.import_module("opentelemetry.exporter.otlp.proto.{}.{}".format(transport, module))
        except ImportError:
            continue
        return getattr(found, name)()
    raise ConfigError("--otel exports with OTLP by default: pip install opentelemetry-exporter-otlp (or set "
                      "OTEL_TRACES_EXPORTER=console / none and OTEL_METRICS_EXPORTER=console / none)")


def uninstrument() -> None:
    """Stop GenAI telemetry (calls already under way finish their spans)."""
    global _state
    with _lock:
        if _state is not None:
            from . import attempts

            attempts.unregister(_state.hook)
        _state = None


def is_instrumented() -> bool:
    return _state is not None


# -- the call span -------------------------------------------------------------------------------------------------


class _Call(object):
    """One logical call's span and timings."""

    __slots__ = ("span", "started", "first", "stamp", "gaps", "collector", "operation", "base", "recording")

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


def _answering_server(call: Any, route: Optional[Mapping[str, Any]]) -> Optional[Tuple[str, Optional[int]]]:
    """(address, port) of the route that answered: the loop's ``server`` when it is that route's, else the
    route's host alone (a fallback's port is not on the call)."""
    server = getattr(call, "server", None)
    host, port = _route_server((route or {}).get("host"))
    if isinstance(server, tuple) and len(server) == 2 and (not host or server[0] == host):
        return server[0], server[1]
    if host:
        return host, port
    return None


class GenAIHook(object):
    """The attempt-loop hook instrument() registers (one per instrument() call): an
    ``agenthub.attempts.AttemptHook`` by its methods (the per-attempt ones do nothing)."""

    def __init__(self, state: _State) -> None:
        self.state = state
        self.wants_events = state.meter_live or state.capture != "NO_CONTENT"
        self._calls = {}  # type: Dict[int, _Call]

    def before_attempt(self, attempt: Any) -> None:
        pass

    def after_response(self, attempt: Any) -> None:
        pass

    def on_error(self, attempt: Any, error: Any) -> None:
        pass

    def on_done(self, attempt: Any) -> None:
        pass

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
        base = {GEN_AI_OPERATION_NAME: record.operation,
                GEN_AI_PROVIDER_NAME: provider_name(client_type, host or _route_server(route.get("host"))[0] or "")}
        if model:
            base[GEN_AI_REQUEST_MODEL] = model
        if host:
            base[SERVER_ADDRESS] = host
            if port is not None:
                base[SERVER_PORT] = port
        record.base = base
        span = state.tracer.start_span("{} {}".format(record.operation, model or "").rstrip(),
                                       kind=state.kind_client, attributes=base)
        record.span = span
        record.recording = span.is_recording()
        if record.recording:
            _request_attributes(span, call, record.operation)
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
        usage = _usage(getattr(call, "usage", None))
        error_type = type(error).__name__ if error is not None else None
        answered_at = _answering_server(call, route)
        if answered_at is not None:  # known once an attempt was encoded: the server of the route that answered
            record.base[SERVER_ADDRESS] = answered_at[0]
            if answered_at[1] is not None:
                record.base[SERVER_PORT] = answered_at[1]
            else:
                record.base.pop(SERVER_PORT, None)
            if record.recording:
                span.set_attributes({k: record.base[k] for k in (SERVER_ADDRESS, SERVER_PORT) if k in record.base})
        metric_attrs = dict(record.base)
        if route and route.get("model"):
            metric_attrs[GEN_AI_RESPONSE_MODEL] = route["model"]
        first = record.first
        if first is None and getattr(call, "first_event_ms", None) is not None and getattr(call, "started_ms", None):
            first = record.started + max(0, call.first_event_ms - call.started_ms) / 1000.0
        if record.recording:
            try:
                _response_attributes(state, span, call, route, usage, first, record)
            except Exception:  # telemetry never breaks a call
                logger.debug("agenthub telemetry: response attributes not recorded", exc_info=True)
            if error_type is not None:
                span.set_attribute(ERROR_TYPE, error_type)
                span.set_status(state.trace.Status(state.trace.StatusCode.ERROR, error_type))
        span.end()
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
    from .stream import Collector

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
    for kind, counter in state.counters.items():
        value = usage.get(kind)
        if value is not None:
            counter.add(value, dict(attrs))


def _request_attributes(span: Any, call: Any, operation: str) -> None:
    config = getattr(call, "config", None) or {}
    request = getattr(call, "request", None)
    if getattr(request, "stream", False) and operation != "embeddings":
        span.set_attribute(GEN_AI_REQUEST_STREAM, True)
    for key, name, kind in (("max_tokens", GEN_AI_REQUEST_MAX_TOKENS, int),
                            ("temperature", GEN_AI_REQUEST_TEMPERATURE, float),
                            ("top_p", GEN_AI_REQUEST_TOP_P, float), ("seed", GEN_AI_REQUEST_SEED, int)):
        value = config.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            span.set_attribute(name, kind(value))
    stop = config.get("stop")
    if isinstance(stop, str):
        stop = [stop]
    if isinstance(stop, list) and stop and all(isinstance(s, str) for s in stop):
        span.set_attribute(GEN_AI_REQUEST_STOP_SEQUENCES, stop)
    if operation == "embeddings":
        dimensions = (config.get("embedding_config") or {}).get("dimensions")
        if isinstance(dimensions, int) and not isinstance(dimensions, bool):
            span.set_attribute(GEN_AI_EMBEDDINGS_DIMENSION_COUNT, dimensions)
    output = _output_type(config)
    if output is not None:
        span.set_attribute(GEN_AI_OUTPUT_TYPE, output)


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
    if route:
        if route.get("model"):
            span.set_attribute(GEN_AI_RESPONSE_MODEL, route["model"])
            span.set_attribute(AGENTHUB_ROUTE_MODEL, route["model"])
        if route.get("client_type"):
            span.set_attribute(AGENTHUB_ROUTE_CLIENT_TYPE, route["client_type"])
        if route.get("host"):
            span.set_attribute(AGENTHUB_ROUTE_HOST, route["host"])
        if route.get("client_type") and route.get("client_type") != getattr(call, "client_type", None) or (
                route.get("model") and route.get("model") != getattr(call, "model", None)):
            # a fallback answered: its provider is the one the span's numbers come from
            span.set_attribute(GEN_AI_PROVIDER_NAME, provider_name(route.get("client_type", ""),
                                                                   _route_server(route.get("host"))[0] or ""))
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
        answer = record.collector.message() if getattr(call, "error", None) is None else None
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
            parts.append({"type": "text", "content": item.get("text", "")})
        elif kind == "thinking":
            parts.append({"type": "reasoning", "content": item.get("thinking", "")})
        elif kind == "image_url":
            url = item.get("image_url") or ""
            if isinstance(url, str) and url.startswith("data:"):
                mime = url[5:].split(";", 1)[0].split(",", 1)[0]
                parts.append({"type": "inline_data", "modality": "image", "mime_type": mime,
                              "size": len(url)})
            else:
                parts.append({"type": "uri", "modality": "image", "uri": url})
        elif kind in ("inline_data", "inline_thinking"):
            mime = item.get("mime_type") or ""
            part = {"type": kind, "mime_type": mime, "size": _size(item.get("data"))}
            modality = mime.split("/", 1)[0]
            if modality in ("image", "audio", "video"):
                part["modality"] = modality
            parts.append(part)
        elif kind == "tool_call":
            parts.append({"type": "tool_call", "id": item.get("tool_call_id"), "name": item.get("name", ""),
                          "arguments": item.get("arguments")})
        elif kind == "tool_result":
            response = {"type": "tool_call_response", "id": item.get("tool_call_id"), "response": item.get("text", "")}
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
        content[GEN_AI_SYSTEM_INSTRUCTIONS] = _dumps([{"type": "text", "content": system}])
    tools = config.get("tools")
    if tools:
        content[GEN_AI_TOOL_DEFINITIONS] = _dumps([
            {"type": "function", "name": tool.get("name", ""), "description": tool.get("description"),
             "parameters": tool.get("parameters")} for tool in tools if isinstance(tool, Mapping)])
    if answer is not None:
        parts, _ = _parts(answer.get("content_items"))
        message = {"role": "assistant", "parts": parts}  # type: Dict[str, Any]
        if not latest:  # required in v1.41's schema; deprecated since (gen_ai.response.finish_reasons)
            message["finish_reason"] = reason or "unknown"
        content[GEN_AI_OUTPUT_MESSAGES] = _dumps([message])
    return content


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


class _Span(object):
    """A live span handle: ``with`` makes it current (children nest under it) and ends it; an exception
    leaving the block sets ``error.type``.  ``activate()`` makes it current for a block without ending it
    (a generator re-entering its span per step); ``end(error=None)`` ends it outside a ``with``."""

    __slots__ = ("_state", "span", "_token", "_ended", "_content", "_attrs")

    def __init__(self, state: _State, span: Any, content: bool) -> None:
        self._state = state
        self.span = span
        self._token = None  # type: Any
        self._ended = False
        self._content = content and span.is_recording()

    @property
    def recording(self) -> bool:
        return bool(self.span.is_recording())

    def __enter__(self) -> "_Span":
        state = self._state
        self._token = state.context.attach(state.trace.set_span_in_context(self.span))
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        token, self._token = self._token, None
        if token is not None:
            self._state.context.detach(token)
        self.end(exc)

    def activate(self) -> Any:
        return _Active(self)

    def set_attribute(self, name: str, value: Any) -> None:
        self.span.set_attribute(name, value)

    def set_arguments(self, arguments: Any) -> None:
        if self._content:
            self.span.set_attribute(GEN_AI_TOOL_CALL_ARGUMENTS, _dumps(arguments))

    def set_result(self, result: Any) -> None:
        """The tool's result (a ToolResultItem or any JSON value); ``is_error`` True sets error.type."""
        if isinstance(result, Mapping) and result.get("is_error"):
            self.set_error("tool_error")
        if self._content:
            value = result
            if isinstance(result, Mapping) and result.get("type") == "tool_result":
                value = {key: result[key] for key in ("text", "images", "is_error") if key in result}
                images = value.get("images")
                if isinstance(images, list):  # a data: URI is bytes: never inlined
                    value["images"] = [image if not (isinstance(image, str) and image.startswith("data:"))
                                       else "<data: URI, {} characters>".format(len(image)) for image in images]
            self.span.set_attribute(GEN_AI_TOOL_CALL_RESULT, _dumps(value))

    def set_error(self, error: Any) -> None:
        """error.type: a string as given (a JSON-RPC code, ``tool_error``) or an exception's class name."""
        kind = error if isinstance(error, str) else type(error).__name__
        self.span.set_attribute(ERROR_TYPE, kind)
        self.span.set_status(self._state.trace.Status(self._state.trace.StatusCode.ERROR, kind))

    def end(self, error: Any = None) -> None:
        if self._ended:
            return
        self._ended = True
        if error is not None:
            self.set_error(error)
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


def agent_span(name: str, *, description: Optional[str] = None) -> Any:
    """An ``invoke_agent {name}`` INTERNAL span for a tool run (``with`` it: the calls and tools inside
    nest under it).  A no-op handle when nothing is instrumented."""
    state = _state
    if state is None:
        return _NOOP
    attributes = {GEN_AI_OPERATION_NAME: "invoke_agent"}  # type: Dict[str, Any]
    if name:
        attributes[GEN_AI_AGENT_NAME] = name
    span = state.tracer.start_span("invoke_agent {}".format(name).rstrip() if name else "invoke_agent",
                                   kind=state.kind_internal, attributes=attributes)
    return _Span(state, span, False)


def tool_span(name: str, call_id: Optional[str] = None, tool_type: str = "function", *,
              description: Optional[str] = None, parent: Any = None) -> Any:
    """An ``execute_tool {name}`` INTERNAL span for one tool call: ``set_arguments`` / ``set_result``
    record them only when content capture is on; a result with ``is_error`` sets ``error.type``
    ``tool_error``.  ``parent``: the run's ``agent_span`` handle when the tool runs in another thread
    (else the current span is the parent).  A no-op handle when nothing is instrumented."""
    state = _state
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
    span = state.tracer.start_span("execute_tool {}".format(name), context=context, kind=state.kind_internal,
                                   attributes=attributes)
    return _Span(state, span, state.span_content)


def mcp_span(method: str, protocol_version: Optional[str] = None, session_id: Optional[str] = None, *,
             target: Optional[str] = None, request_id: Any = None, server: Optional[str] = None,
             transport: Optional[str] = None) -> Any:
    """A CLIENT span for one MCP request: ``{method} {target}`` (target: the tool or prompt name),
    ``mcp.method.name``, ``mcp.protocol.version``, ``mcp.session.id`` (pass it only where the protocol
    has sessions), ``jsonrpc.request.id``, and for ``tools/call`` ``gen_ai.operation.name`` execute_tool
    and ``gen_ai.tool.name``.  ``server``: the URL (server.address/port) or None (stdio: network.transport
    ``pipe``).  Inside its ``with``, ``inject_meta`` puts its trace context in the request's ``_meta``."""
    state = _state
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
    if server:
        origin = url_origin(server)
        if origin is not None:
            attributes[SERVER_ADDRESS] = origin[1]
            attributes[SERVER_PORT] = origin[2]
            attributes["network.transport"] = "tcp"
            attributes["network.protocol.name"] = "http"
        else:
            attributes[SERVER_ADDRESS] = url_host(server) or server
    elif transport:
        attributes["network.transport"] = transport
    name = "{} {}".format(method, target) if target and method in ("tools/call", "prompts/get") else method
    span = state.tracer.start_span(name, kind=state.kind_client, attributes=attributes)
    return _Span(state, span, state.span_content)


def workflow_span(name: str, attributes: Optional[Mapping[str, Any]] = None) -> Any:
    """An ``invoke_workflow {name}`` INTERNAL span (``agenthub.jobs.run``: one per job); not made current:
    its rows' spans name it as their parent (``child_span``), from whatever thread runs them."""
    state = _state
    if state is None:
        return _NOOP
    base = {GEN_AI_OPERATION_NAME: "invoke_workflow", "gen_ai.workflow.name": name}  # type: Dict[str, Any]
    base.update(attributes or {})
    return _Span(state, state.tracer.start_span("invoke_workflow {}".format(name), kind=state.kind_internal,
                                                attributes=base), False)


def child_span(parent: Any, name: str, attributes: Optional[Mapping[str, Any]] = None) -> Any:
    """An INTERNAL span under ``parent`` (a handle from ``workflow_span``), whatever the current context:
    ``with`` it, the calls made in the block (this thread) are its children.  A no-op handle when
    nothing is instrumented or ``parent`` is no live span."""
    state = _state
    if state is None or not isinstance(parent, _Span):
        return _NOOP
    context = state.trace.set_span_in_context(parent.span)
    return _Span(state, state.tracer.start_span(name, context=context, kind=state.kind_internal,
                                                attributes=dict(attributes or {})), False)


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
    state = _state
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
    return _Continued(state, state.propagate.extract(carrier))


def inject_meta(meta: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
    """``meta`` (an MCP request's ``params._meta``, or None) with the current W3C trace context added
    (``traceparent``, ``tracestate``, and ``baggage`` when set), as the MCP conventions ask.  Not
    instrumented: ``meta`` as a new dict, unchanged."""
    out = dict(meta or {})
    state = _state
    if state is not None:
        carrier = {}  # type: Dict[str, str]
        state.propagate.inject(carrier)
        out.update(carrier)
    return out
