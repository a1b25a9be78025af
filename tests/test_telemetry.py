"""agenthub.telemetry: GenAI spans and metrics, checked against the OpenTelemetry SDK's in-memory exporter and
reader, the semantic-conventions package's names and the conventions' message JSON schemas (v1.41.0, copied in
tests/fixtures/genai_schemas with their licence).  The oracles need Python 3.9+ packages (the SDK, the
semconv package, jsonschema): the tests that use them skip where they are missing; the import-isolation
test runs everywhere."""

import json
import os
import subprocess
import sys
import threading
import types

import pytest

from agenthub import telemetry
from agenthub.errors import ConfigError, RateLimitError
from agenthub.types import HttpRequest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SCHEMAS = os.path.join(HERE, "fixtures", "genai_schemas")


def _sdk():
    try:
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import InMemoryMetricReader
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    except ImportError:
        pytest.skip("the OpenTelemetry SDK (a test oracle) is not installed in this Python")
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    return types.SimpleNamespace(exporter=exporter, tracer_provider=tracer_provider, reader=reader,
                                 meter_provider=meter_provider)


@pytest.fixture
def otel(monkeypatch):
    monkeypatch.delenv(telemetry.CAPTURE_ENV, raising=False)
    monkeypatch.delenv(telemetry.OPT_IN_ENV, raising=False)
    sdk = _sdk()

    def start(**kwargs):
        telemetry.instrument(sdk.tracer_provider, sdk.meter_provider, **kwargs)
        return sdk

    sdk.start = start
    yield sdk
    telemetry.uninstrument()
    sdk.tracer_provider.shutdown()
    sdk.meter_provider.shutdown()


def metrics_of(reader):
    """{metric name: [(attributes, point)]} of what the reader collected."""
    out = {}
    data = reader.get_metrics_data()
    for resource in (data.resource_metrics if data else ()):
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                for point in metric.data.data_points:
                    out.setdefault(metric.name, []).append((dict(point.attributes), point))
    return out


# -- a call as the attempt loop hands it to its hooks (the seam's Attempt fields) -------------------------------------


def fake_call(**fields):
    call = types.SimpleNamespace(
        kind="stream", client_type="openai-chat", model="gpt-test", messages=[
            {"role": "user", "content_items": [{"type": "text", "text": "SECRET PROMPT TEXT"}]}],
        config={"max_tokens": 64, "temperature": 0.5, "extra_headers": {"X-Key": "hdr-secret-value"}},
        request=HttpRequest("POST", "/chat/completions", {}, {"model": "gpt-test"}, True),
        route={"model": "gpt-test", "client_type": "openai-chat", "host": "api.openai.com"},
        server=("api.openai.com", 443), error=None, usage=None, finish_reason=None, first_event_ms=None,
        started_ms=1000, attempts=1, response_id=None, cache=None)
    for key, value in fields.items():
        setattr(call, key, value)
    return call


EVENTS = [
    {"role": "assistant", "event_type": "start", "content_items": [], "usage_metadata": None, "finish_reason": None,
     "created_at": 1},
    {"role": "assistant", "event_type": "delta", "content_items": [{"type": "text", "text": "Hello"}],
     "usage_metadata": None, "finish_reason": None, "created_at": 2},
    {"role": "assistant", "event_type": "delta", "content_items": [{"type": "text", "text": " there"}],
     "usage_metadata": None, "finish_reason": None, "created_at": 3},
    {"role": "assistant", "event_type": "stop", "content_items": [],
     "usage_metadata": {"cached_tokens": 30, "prompt_tokens": 70, "thoughts_tokens": 5, "response_tokens": 2},
     "finish_reason": "stop", "created_at": 4},
]


def drive(call, events=EVENTS, error=None):
    """What the loop does with the process-wide hooks: start, every event, end."""
    from agenthub import attempts

    hooks = [hook for hook in attempts.registered() if isinstance(hook, telemetry.GenAIHook)]
    for hook in hooks:
        hook.on_call_start(call)
    for event in events:
        for hook in hooks:
            if hook.wants_events:
                hook.on_event(call, event)
        if event["event_type"] == "stop":
            call.usage = event["usage_metadata"]
            call.finish_reason = event["finish_reason"]
    call.error = error
    for hook in hooks:
        hook.on_call_end(call)


# -- no opentelemetry unless asked ---------------------------------------------------------------------------------


def test_import_and_a_full_call_never_import_opentelemetry():
    code = r"""
import sys, agenthub, agenthub.telemetry
sys.path.insert(0, {tests!r})
from sse_server import SSEServer, Answer
with SSEServer() as server:
    server.answers.append(Answer([b'data: {{"id":"c1","object":"chat.completion.chunk","model":"m","choices":[{{"index":0,"delta":{{"content":"hi"}},"finish_reason":"stop"}}],"usage":{{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}}}\n\n', b'data: [DONE]\n\n']))
    client = agenthub.AutoLLMClient("gpt-test", api_key="k", base_url=server.url + "/v1", client_type="openai-chat")
    answer = client.response([{{"role": "user", "content_items": [{{"type": "text", "text": "hello"}}]}}])
    assert answer["content_items"][0]["text"] == "hi", answer
    # the helpers the runner and MCP call are no-ops, and stay so
    with agenthub.telemetry.agent_span("a"), agenthub.telemetry.tool_span("t", "c1") as span:
        span.set_arguments({{"x": 1}})
    assert agenthub.telemetry.inject_meta({{"k": 1}}) == {{"k": 1}}
print(sorted(name for name in sys.modules if name.split(".")[0] == "opentelemetry"))
""".format(tests=HERE)
    env = dict(os.environ, PYTHONPATH=ROOT)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_not_instrumented_helpers_are_one_shared_noop():
    telemetry.uninstrument()
    assert telemetry.agent_span("x") is telemetry.tool_span("t") is telemetry.mcp_span("tools/list", "2025-06-18")
    assert telemetry.is_instrumented() is False


def test_capture_content_values(monkeypatch):
    monkeypatch.delenv(telemetry.CAPTURE_ENV, raising=False)
    assert telemetry._capture_mode(None) == "NO_CONTENT"
    assert telemetry._capture_mode(True) == "SPAN_ONLY"
    assert telemetry._capture_mode(False) == "NO_CONTENT"
    assert telemetry._capture_mode("span_and_event") == "SPAN_AND_EVENT"
    monkeypatch.setenv(telemetry.CAPTURE_ENV, "EVENT_ONLY")
    assert telemetry._capture_mode(None) == "EVENT_ONLY"
    assert telemetry._capture_mode(False) == "NO_CONTENT"  # capture_content= wins over the environment
    with pytest.raises(ConfigError):
        telemetry._capture_mode("everything")


def test_what_is_no_provider_is_a_config_error_and_nothing_changes():
    """``instrument(tracer_provider=...)`` with something that is no tracer provider (a typo'd variable, a
    TracerProvider class's module) is a ConfigError naming it, not an AttributeError; nothing is instrumented."""
    pytest.importorskip("opentelemetry.trace")
    telemetry.uninstrument()
    for kwargs, words in (({"tracer_provider": 5}, "tracer_provider must be an OpenTelemetry TracerProvider "
                                                    "(with get_tracer) or None (got int)"),
                          ({"meter_provider": "x"}, "meter_provider must be an OpenTelemetry MeterProvider "
                                                    "(with get_meter) or None (got str)")):
        with pytest.raises(ConfigError) as caught:
            telemetry.instrument(**kwargs)
        assert str(caught.value) == words
        assert telemetry.is_instrumented() is False


@pytest.mark.parametrize("client_type,host,expected", [
    ("openai-chat", "api.openai.com", "openai"),
    ("openai-chat", "127.0.0.1", "openai"),
    ("openai-responses", "gateway.example.com", "openai"),
    ("openai-chat", "api.deepseek.com", "deepseek"),
    ("openai-chat", "api.moonshot.ai", "moonshot_ai"),
    ("openai-chat", "api.moonshot.cn", "moonshot_ai"),
    ("openai-chat", "api.groq.com", "groq"),
    ("openai-chat", "api.mistral.ai", "mistral_ai"),
    ("openai-chat", "api.x.ai", "x_ai"),
    ("openai-chat", "myres.openai.azure.com", "azure.ai.openai"),
    ("azure", "myres.cognitiveservices.azure.com", "azure.ai.openai"),
    ("azure-responses", "myres.openai.azure.com", "azure.ai.openai"),
    ("anthropic", "api.anthropic.com", "anthropic"),
    ("azure-anthropic", "r.services.ai.azure.com", "anthropic"),
    ("gemini", "generativelanguage.googleapis.com", "gcp.gemini"),
    ("gemini-interactions", "generativelanguage.googleapis.com", "gcp.gemini"),
    ("vertex", "us-central1-aiplatform.googleapis.com", "gcp.vertex_ai"),
    ("vertex-anthropic", "aiplatform.googleapis.com", "gcp.vertex_ai"),
    ("bedrock", "bedrock-runtime.us-east-1.amazonaws.com", "aws.bedrock"),
])
def test_provider_names(client_type, host, expected):
    assert telemetry.provider_name(client_type, host) == expected


def test_operation_names():
    assert telemetry.operation_name("openai-chat") == "chat"
    assert telemetry.operation_name("anthropic") == "chat"
    assert telemetry.operation_name("bedrock") == "chat"
    assert telemetry.operation_name("gemini") == "generate_content"
    assert telemetry.operation_name("vertex") == "generate_content"
    assert telemetry.operation_name("gemini-interactions") == "generate_content"
    assert telemetry.operation_name("vertex-anthropic") == "chat"
    assert telemetry.operation_name("openai-chat", embeddings=True) == "embeddings"


# -- names: agenthub's constants are the conventions' -------------------------------------------------------------


def test_attribute_names_equal_the_semantic_conventions_package():
    semconv = pytest.importorskip("opentelemetry.semconv._incubating.attributes.gen_ai_attributes",
                                  reason="opentelemetry-semantic-conventions (a test oracle) is not installed")
    if not hasattr(semconv, "GEN_AI_USAGE_REASONING_OUTPUT_TOKENS"):  # 3.8 stops at 0.54b1 (conventions 1.33)
        pytest.skip("this Python's opentelemetry-semantic-conventions predates the v1.41 GenAI names")
    from opentelemetry.semconv._incubating.attributes import mcp_attributes, openai_attributes
    from opentelemetry.semconv._incubating.metrics import gen_ai_metrics
    from opentelemetry.semconv.attributes import error_attributes, server_attributes

    checked = 0
    for name in dir(telemetry):
        value = getattr(telemetry, name)
        if not isinstance(value, str) or name.startswith("_"):
            continue
        for module in (semconv, mcp_attributes, gen_ai_metrics, error_attributes, server_attributes,
                       openai_attributes):
            if hasattr(module, name):
                assert getattr(module, name) == value, name
                checked += 1
    assert checked >= 40  # every gen_ai.*, mcp.*, server.*, error.* name and the four metrics
    own = {name for name in dir(telemetry) if name.startswith(("GEN_AI_", "MCP_", "SERVER_", "ERROR_", "OPENAI_"))}
    unknown = {name for name in own if not any(hasattr(m, name) for m in (
        semconv, mcp_attributes, gen_ai_metrics, error_attributes, server_attributes, openai_attributes))}
    assert unknown == set(), "names the package does not carry: {}".format(sorted(unknown))
    # the provider names agenthub emits are well-known values (moonshot_ai is newer than v1.41: the genai repo's)
    known = {member.value for member in semconv.GenAiProviderNameValues} | {"moonshot_ai"}
    from agenthub import hosts, registry

    emitted = ({row.provider for row in hosts.CLIENT_TYPES.values()} - {"agenthub"}
               | {route.provider for route in registry.ROUTES if route.provider}
               | {value for _, value in registry.PROVIDER_HOSTS})
    assert emitted <= known, emitted - known


# -- the call span ------------------------------------------------------------------------------------------------


def test_call_span_attributes_usage_and_no_content_by_default(otel):
    otel.start()
    call = fake_call()
    drive(call)
    (span,) = otel.exporter.get_finished_spans()
    assert span.name == "chat gpt-test"
    assert span.kind.name == "CLIENT"
    attrs = dict(span.attributes)
    ttfc = attrs.pop("gen_ai.response.time_to_first_chunk")
    assert 0 <= ttfc < 5
    assert attrs == {
        "gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": "gpt-test",
        "server.address": "api.openai.com", "server.port": 443, "gen_ai.request.stream": True,
        "gen_ai.request.max_tokens": 64, "gen_ai.request.temperature": 0.5,
        "gen_ai.response.model": "gpt-test", "agenthub.route.model": "gpt-test",
        "agenthub.route.client_type": "openai-chat", "agenthub.route.host": "api.openai.com",
        "agenthub.attempts": 1, "gen_ai.response.finish_reasons": ("stop",), "openai.api.type": "chat_completions",
        "gen_ai.usage.input_tokens": 100, "gen_ai.usage.output_tokens": 7,
        "gen_ai.usage.cache_read.input_tokens": 30, "gen_ai.usage.reasoning.output_tokens": 5,
    }
    assert span.status.status_code.name == "UNSET"
    dump = json.dumps([dict(s.attributes) for s in otel.exporter.get_finished_spans()])
    assert "SECRET PROMPT TEXT" not in dump and "hdr-secret-value" not in dump and "Hello" not in dump


def test_an_int_past_64_bits_is_no_attribute(otel):
    """check_config takes any int seed or max_tokens (a random 64-bit unsigned seed is past int64); OTLP carries
    int64 only, and one such attribute made the exporter's encoding raise, losing the whole batch of spans it
    was in.  An int outside int64 is left out; the call's other attributes stand."""
    pytest.importorskip("opentelemetry.exporter.otlp.proto.common.trace_encoder",
                        reason="the OTLP encoder (a test oracle) is not installed")
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    otel.start()
    drive(fake_call(config={"seed": 2 ** 64 - 1, "max_tokens": 2 ** 63, "temperature": 0.5}))
    drive(fake_call(config={"seed": 2 ** 63 - 1, "max_tokens": -2 ** 63}))
    past, edge = otel.exporter.get_finished_spans()
    assert "gen_ai.request.seed" not in past.attributes and "gen_ai.request.max_tokens" not in past.attributes
    assert past.attributes["gen_ai.request.temperature"] == 0.5
    assert edge.attributes["gen_ai.request.seed"] == 2 ** 63 - 1
    assert edge.attributes["gen_ai.request.max_tokens"] == -2 ** 63
    encode_spans([past, edge])  # (raised ValueError: Value out of range)


def test_metrics_and_bucket_boundaries(otel):
    otel.start()
    drive(fake_call())
    metrics = metrics_of(otel.reader)
    base = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": "gpt-test",
            "server.address": "api.openai.com", "server.port": 443, "gen_ai.response.model": "gpt-test"}
    usage = {attrs["gen_ai.token.type"]: point.sum for attrs, point in metrics["gen_ai.client.token.usage"]}
    assert usage == {"input": 100, "output": 7}
    for attrs, point in metrics["gen_ai.client.token.usage"]:
        assert tuple(point.explicit_bounds) == telemetry.TOKEN_BUCKETS
        assert {k: v for k, v in attrs.items() if k != "gen_ai.token.type"} == base
    ((attrs, point),) = metrics["gen_ai.client.operation.duration"]
    assert attrs == base and point.count == 1 and tuple(point.explicit_bounds) == telemetry.DURATION_BUCKETS
    ((attrs, point),) = metrics["gen_ai.client.operation.time_to_first_chunk"]
    assert attrs == base and point.count == 1
    ((attrs, point),) = metrics["gen_ai.client.operation.time_per_output_chunk"]
    assert attrs == base and point.count == len(EVENTS) - 1  # every event after the first


def test_events_read_at_once_are_one_chunk(otel):
    otel.start()
    stamps = [100, 100, 130, 130, 130, 1130]  # three reads: at 100 ms, 130 ms and 1130 ms
    events = [dict(EVENTS[1], created_at=stamp) for stamp in stamps[:-1]] + [dict(EVENTS[-1], created_at=1130)]
    drive(fake_call(), events=events)
    ((_, point),) = metrics_of(otel.reader)["gen_ai.client.operation.time_per_output_chunk"]
    assert point.count == 2 and point.sum == pytest.approx(0.03 + 1.0)
    assert list(point.bucket_counts)[:7] == [0, 0, 1, 0, 0, 0, 0] and point.bucket_counts[7] == 1


def test_error_sets_error_type_and_status(otel):
    otel.start()
    error = RateLimitError("slow down", client="openai-chat", status=429)
    drive(fake_call(), events=[], error=error)
    (span,) = otel.exporter.get_finished_spans()
    assert span.attributes["error.type"] == "RateLimitError"
    assert span.status.status_code.name == "ERROR"
    assert "gen_ai.usage.input_tokens" not in span.attributes
    ((attrs, _),) = metrics_of(otel.reader)["gen_ai.client.operation.duration"]
    assert attrs["error.type"] == "RateLimitError"


def test_failover_answered_by_a_fallback_is_one_span_naming_the_route(otel):
    otel.start()
    call = fake_call(route={"model": "claude-test", "client_type": "anthropic", "host": "api.anthropic.com"},
                     attempts=3)
    drive(call)
    (span,) = otel.exporter.get_finished_spans()
    assert span.name == "chat gpt-test"
    assert span.attributes["gen_ai.request.model"] == "gpt-test"
    assert span.attributes["gen_ai.response.model"] == "claude-test"
    assert span.attributes["agenthub.route.client_type"] == "anthropic"
    assert span.attributes["gen_ai.provider.name"] == "anthropic"
    assert span.attributes["agenthub.attempts"] == 3


def test_a_fallback_at_its_schemes_port_says_the_port_as_the_primary_does(otel):
    """server.port is "Conditionally Required: if server.address is set": a fallback route's host names no port
    when it is its scheme's (api.anthropic.com), and the span of a call it answered had server.address alone,
    where the primary's says 443.  The fallback attempt's own server (known once it was encoded) is used."""
    from agenthub import attempts

    otel.start()
    route = {"model": "claude-test", "client_type": "anthropic", "host": "api.anthropic.com"}
    call = fake_call()
    (hook,) = [h for h in attempts.registered() if isinstance(h, telemetry.GenAIHook)]
    hook.on_call_start(call)
    fallback = types.SimpleNamespace(call=call, route=route, provider="anthropic", server=None)
    hook.before_attempt(fallback)
    fallback.server = ("api.anthropic.com", 443)  # (the loop sets it when it encodes the attempt)
    hook.on_done(fallback)
    for event in EVENTS:
        hook.on_event(call, event)
    call.route, call.usage, call.finish_reason = route, EVENTS[-1]["usage_metadata"], "stop"
    hook.on_call_end(call)
    (span,) = otel.exporter.get_finished_spans()
    assert (span.attributes["server.address"], span.attributes["server.port"]) == ("api.anthropic.com", 443)
    ((attrs, _),) = metrics_of(otel.reader)["gen_ai.client.operation.duration"]
    assert (attrs["server.address"], attrs["server.port"]) == ("api.anthropic.com", 443)


def test_a_call_answered_from_a_cache_says_so(otel):
    otel.start()
    drive(fake_call(cache="hit", attempts=0))
    (span,) = otel.exporter.get_finished_spans()
    assert span.attributes["agenthub.cache"] == "hit" and "agenthub.attempts" not in span.attributes


def test_structured_output_and_gemini_operation(otel):
    otel.start()
    call = fake_call(client_type="gemini", model="gemini-test", config={"response_format": {"type": "json_object"}},
                     route={"model": "gemini-test", "client_type": "gemini",
                            "host": "generativelanguage.googleapis.com"},
                     server=("generativelanguage.googleapis.com", 443))
    drive(call)
    (span,) = otel.exporter.get_finished_spans()
    assert span.name == "generate_content gemini-test"
    assert span.attributes["gen_ai.provider.name"] == "gcp.gemini"
    assert span.attributes["gen_ai.output.type"] == "json"


def test_latest_names_with_the_opt_in(otel, monkeypatch):
    monkeypatch.setenv(telemetry.OPT_IN_ENV, "http, gen_ai_latest_experimental")

    class Usage(dict):
        pass

    usage = Usage(cached_tokens=30, prompt_tokens=70, thoughts_tokens=None, response_tokens=2)
    usage.cache_write = 20
    events = EVENTS[:-1] + [dict(EVENTS[-1], usage_metadata=usage)]
    otel.start()
    drive(fake_call(), events=events)
    (span,) = otel.exporter.get_finished_spans()
    assert span.attributes["gen_ai.usage.cache_write.input_tokens"] == 20
    assert "gen_ai.usage.cache_creation.input_tokens" not in span.attributes
    assert "gen_ai.usage.reasoning.output_tokens" not in span.attributes  # not reported
    metrics = metrics_of(otel.reader)
    assert "gen_ai.client.token.usage" not in metrics and "gen_ai.client.operation.duration" not in metrics
    assert {name: [p.value for _, p in points] for name, points in metrics.items()
            if name.startswith("gen_ai.client.inference.usage")} == {
        "gen_ai.client.inference.usage.input_tokens": [100], "gen_ai.client.inference.usage.output_tokens": [2],
        "gen_ai.client.inference.usage.cache_read.input_tokens": [30],
        "gen_ai.client.inference.usage.cache_write.input_tokens": [20]}
    assert "gen_ai.client.inference.duration" in metrics
    assert "gen_ai.client.inference.time_to_first_chunk" in metrics


def test_latest_usage_counters_say_their_modality_and_the_histograms_replace_token_usage(otel, monkeypatch):
    """semantic-conventions-genai docs/gen-ai/non-normative/migration.md, "GenAI client token usage metric": the
    gen_ai.client.inference.usage.* counters carry gen_ai.token.modality (Required; "unknown" when the provider
    does not break usage down by it), and the per-operation histograms gen_ai.client.inference.operation.input_tokens
    / output_tokens (token buckets) replace gen_ai.client.token.usage.  The counters had no modality, and no
    histogram was recorded."""
    monkeypatch.setenv(telemetry.OPT_IN_ENV, "gen_ai_latest_experimental")
    otel.start()
    drive(fake_call())
    metrics = metrics_of(otel.reader)
    base = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": "gpt-test",
            "server.address": "api.openai.com", "server.port": 443, "gen_ai.response.model": "gpt-test"}
    for name, value in (("input_tokens", 100), ("output_tokens", 7), ("cache_read.input_tokens", 30),
                        ("reasoning.output_tokens", 5)):
        ((attrs, point),) = metrics["gen_ai.client.inference.usage." + name]
        assert attrs == dict(base, **{"gen_ai.token.modality": "unknown"}) and point.value == value, name
    for name, value in (("input_tokens", 100), ("output_tokens", 7)):
        ((attrs, point),) = metrics["gen_ai.client.inference.operation." + name]
        assert attrs == base and (point.count, point.sum) == (1, value)
        assert tuple(point.explicit_bounds) == telemetry.TOKEN_BUCKETS


def test_cache_write_count_with_the_default_names(otel):
    class Usage(dict):
        pass

    usage = Usage(cached_tokens=0, prompt_tokens=120, thoughts_tokens=None, response_tokens=2)
    usage.cache_write = 100
    otel.start()
    drive(fake_call(), events=EVENTS[:-1] + [dict(EVENTS[-1], usage_metadata=usage)])
    (span,) = otel.exporter.get_finished_spans()
    assert span.attributes["gen_ai.usage.cache_creation.input_tokens"] == 100
    assert span.attributes["gen_ai.usage.input_tokens"] == 120  # the write is inside the input, as asked


# -- content capture ---------------------------------------------------------------------------------------------


def _validator(name):
    jsonschema = pytest.importorskip("jsonschema", reason="jsonschema (a test oracle) is not installed")
    with open(os.path.join(SCHEMAS, "gen-ai-{}.json".format(name))) as handle:
        schema = json.load(handle)
    cls = jsonschema.validators.validator_for(schema)
    return cls(schema)


RICH = [
    {"role": "user", "content_items": [
        {"type": "text", "text": "What is in this picture?"},
        {"type": "image_url", "image_url": "https://example.com/cat.png"},
        {"type": "image_url", "image_url": "data:image/png;base64,iVBORw0KGgo="},
        {"type": "inline_data", "data": b"\x89PNG\r\n" * 10, "mime_type": "image/png"}]},
    {"role": "assistant", "content_items": [
        {"type": "thinking", "thinking": "Let me look."},
        {"type": "tool_call", "name": "lookup", "arguments": {"q": "cat"}, "tool_call_id": "call_1"}]},
    {"role": "user", "content_items": [{"type": "tool_result", "text": "a cat", "tool_call_id": "call_1"}]},
]


@pytest.mark.parametrize("mode", ["SPAN_ONLY", "EVENT_ONLY", "SPAN_AND_EVENT"])
def test_captured_content_follows_the_schemas_and_never_inlines_bytes(otel, mode):
    otel.start(capture_content=mode)
    config = {"system_prompt": "Be brief.", "extra_headers": {"Authorization": "Bearer hdr-secret-value"},
              "tools": [{"name": "lookup", "description": "Look up.", "parameters": {
                  "type": "object", "properties": {"q": {"type": "string"}}}}]}
    drive(fake_call(messages=RICH, config=config))
    (span,) = otel.exporter.get_finished_spans()
    found = {}
    if mode != "EVENT_ONLY":
        found.update({k: v for k, v in span.attributes.items() if k in (
            "gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions",
            "gen_ai.tool.definitions")})
        assert len(found) == 4
    else:
        assert "gen_ai.input.messages" not in span.attributes
    if mode != "SPAN_ONLY":
        (event,) = span.events
        assert event.name == "gen_ai.client.inference.operation.details"
        assert dict(event.attributes) == found or mode == "EVENT_ONLY"
        found = dict(event.attributes)
    else:
        assert not span.events
    for attribute, schema in (("gen_ai.input.messages", "input-messages"),
                              ("gen_ai.output.messages", "output-messages"),
                              ("gen_ai.system_instructions", "system-instructions"),
                              ("gen_ai.tool.definitions", "tool-definitions")):
        _validator(schema).validate(json.loads(found[attribute]))
    inputs = json.loads(found["gen_ai.input.messages"])
    assert [m["role"] for m in inputs] == ["user", "assistant", "tool"]
    assert inputs[0]["parts"][0] == {"type": "text", "content": "What is in this picture?"}
    assert inputs[0]["parts"][1] == {"type": "uri", "modality": "image", "uri": "https://example.com/cat.png"}
    assert inputs[0]["parts"][2]["type"] == "inline_data" and "iVBOR" not in found["gen_ai.input.messages"]
    assert inputs[0]["parts"][3] == {"type": "inline_data", "mime_type": "image/png", "size": 60, "modality": "image"}
    assert inputs[1]["parts"] == [{"type": "reasoning", "content": "Let me look."},
                                  {"type": "tool_call", "id": "call_1", "name": "lookup", "arguments": {"q": "cat"}}]
    assert inputs[2] == {"role": "tool", "parts": [{"type": "tool_call_response", "id": "call_1",
                                                    "response": "a cat"}]}
    assert json.loads(found["gen_ai.output.messages"]) == [
        {"role": "assistant", "parts": [{"type": "text", "content": "Hello there"}], "finish_reason": "stop"}]
    assert json.loads(found["gen_ai.system_instructions"]) == [{"type": "text", "content": "Be brief."}]
    everything = json.dumps([dict(span.attributes)] + [dict(e.attributes) for e in span.events])
    assert "hdr-secret-value" not in everything and "Authorization" not in everything


def test_captured_content_is_bounded_and_never_holds_a_url_credential(otel):
    """A huge text is not copied whole into an attribute (docs/telemetry.md: CONTENT_LIMIT characters, then how
    many were left out); an image URL's query values and user part (a presigned URL's signature) are ***."""
    from agenthub.telemetry import hook

    otel.start(capture_content=True)
    huge = "x" * (hook.CONTENT_LIMIT + 5000)
    messages = [{"role": "user", "content_items": [
        {"type": "text", "text": huge},
        {"type": "image_url", "image_url": "https://user:pw-secret@bucket.example/cat.png?X-Amz-Signature=sig-secret"
                                           "&X-Amz-Expires=60"}]},
        {"role": "user", "content_items": [{"type": "tool_result", "text": huge, "tool_call_id": "c1"}]}]
    drive(fake_call(messages=messages, config={"system_prompt": huge}))
    (span,) = otel.exporter.get_finished_spans()
    cut = "x" * hook.CONTENT_LIMIT + "...[5000 more characters]"
    inputs = json.loads(span.attributes["gen_ai.input.messages"])
    assert inputs[0]["parts"][0] == {"type": "text", "content": cut}
    assert inputs[0]["parts"][1] == {"type": "uri", "modality": "image",
                                     "uri": "https://***@bucket.example/cat.png?X-Amz-Signature=***&X-Amz-Expires=***"}
    assert inputs[1]["parts"][0]["response"] == cut
    assert json.loads(span.attributes["gen_ai.system_instructions"]) == [{"type": "text", "content": cut}]
    with telemetry.tool_span("t") as tool:
        tool.set_arguments(huge)  # (arguments that did not parse as JSON are their text)
        tool.set_result({"type": "tool_result", "text": huge})
    (_, done) = otel.exporter.get_finished_spans()
    assert json.loads(done.attributes["gen_ai.tool.call.result"]) == {"text": cut}
    assert json.loads(done.attributes["gen_ai.tool.call.arguments"]) == cut
    dump = json.dumps([dict(s.attributes) for s in otel.exporter.get_finished_spans()])
    assert "secret" not in dump and len(dump) < 6 * hook.CONTENT_LIMIT


def test_a_tool_calls_structured_arguments_are_bounded_too(otel):
    """A tool call's arguments are an object: each text inside it is cut at CONTENT_LIMIT as a message's text is
    (a model writing a 5 MB file through a tool put 5 MB in the tool span, in the call's output messages and in
    every later turn's input messages); the object keeps its shape."""
    from agenthub.telemetry import hook

    otel.start(capture_content=True)
    huge = "y" * (hook.CONTENT_LIMIT + 10)
    cut = "y" * hook.CONTENT_LIMIT + "...[10 more characters]"
    arguments = {"path": "a.txt", "lines": [huge, "short"], "meta": {"body": huge, "n": 3}}
    shaped = {"path": "a.txt", "lines": [cut, "short"], "meta": {"body": cut, "n": 3}}
    call = {"type": "tool_call", "tool_call_id": "c1", "name": "write", "arguments": arguments}
    answer = dict(EVENTS[1], content_items=[call])
    drive(fake_call(messages=[{"role": "assistant", "content_items": [call]}]), events=[EVENTS[0], answer, EVENTS[-1]])
    with telemetry.tool_span("write", "c1") as tool:
        tool.set_arguments(arguments)
    chat, run = otel.exporter.get_finished_spans()
    assert json.loads(chat.attributes["gen_ai.input.messages"])[0]["parts"][0]["arguments"] == shaped
    assert json.loads(chat.attributes["gen_ai.output.messages"])[0]["parts"][0]["arguments"] == shaped
    assert json.loads(run.attributes["gen_ai.tool.call.arguments"]) == shaped
    assert arguments["lines"][0] == huge  # (the caller's value itself is not changed)
    # and a tool definition's texts (a description, a schema's), sent with every turn
    tool = {"name": "write", "description": huge, "parameters": {"type": "object", "properties": {
        "body": {"type": "string", "description": huge}}}}
    drive(fake_call(config={"tools": [tool]}))
    (defined,) = json.loads(otel.exporter.get_finished_spans()[-1].attributes["gen_ai.tool.definitions"])
    assert defined == {"type": "function", "name": "write", "description": cut, "parameters": {
        "type": "object", "properties": {"body": {"type": "string", "description": cut}}}}


# -- tool, agent and MCP spans ---------------------------------------------------------------------------------------


def test_agent_and_tool_spans_nest_and_capture_only_when_asked(otel):
    otel.start()
    with telemetry.agent_span("helper") as run:
        with telemetry.tool_span("lookup", "call_1", "function") as tool:
            tool.set_arguments({"q": "SECRET ARG"})
            tool.set_result({"type": "tool_result", "text": "SECRET RESULT"})
        with pytest.raises(ValueError):
            with telemetry.tool_span("broken", "call_2"):
                raise ValueError("boom")
        with telemetry.tool_span("denied", "call_3") as tool:
            tool.set_result({"type": "tool_result", "text": "no", "is_error": True})
    assert run.recording is False  # ended
    spans = {s.name: s for s in otel.exporter.get_finished_spans()}
    agent = spans["invoke_agent helper"]
    assert dict(agent.attributes) == {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "helper"}
    tool = spans["execute_tool lookup"]
    assert tool.kind.name == "INTERNAL" and tool.parent.span_id == agent.context.span_id
    assert dict(tool.attributes) == {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup",
                                     "gen_ai.tool.call.id": "call_1", "gen_ai.tool.type": "function"}
    assert spans["execute_tool broken"].attributes["error.type"] == "ValueError"
    assert spans["execute_tool denied"].attributes["error.type"] == "tool_error"
    assert "SECRET" not in json.dumps([dict(s.attributes) for s in spans.values()])


def test_tool_span_with_capture(otel):
    otel.start(capture_content=True)
    with telemetry.tool_span("lookup", "call_1") as tool:
        tool.set_arguments({"q": "cat"})
        tool.set_result({"type": "tool_result", "text": "a cat", "images": ["data:image/png;base64,AAAA"]})
    (span,) = otel.exporter.get_finished_spans()
    assert json.loads(span.attributes["gen_ai.tool.call.arguments"]) == {"q": "cat"}
    result = json.loads(span.attributes["gen_ai.tool.call.result"])
    assert result == {"text": "a cat", "images": ["<data: URI, 26 characters>"]}


def test_a_tool_results_image_url_is_captured_without_its_credentials(otel):
    """A tool result's image URL (a presigned URL a tool returned) is shown as an input message's is: its query
    values and user part ***; it went into gen_ai.tool.call.result as it was, signature and all."""
    otel.start(capture_content=True)
    with telemetry.tool_span("render", "call_1") as tool:
        tool.set_result({"type": "tool_result", "text": "drawn", "images": [
            "https://user:pw-secret@bucket.example/chart.png?X-Amz-Signature=sig-secret&X-Amz-Expires=60"]})
    (span,) = otel.exporter.get_finished_spans()
    assert json.loads(span.attributes["gen_ai.tool.call.result"]) == {"text": "drawn", "images": [
        "https://***@bucket.example/chart.png?X-Amz-Signature=***&X-Amz-Expires=***"]}


def test_mcp_span_and_trace_context_in_meta(otel):
    otel.start()
    with telemetry.mcp_span("tools/call", "2025-06-18", target="get_time", request_id=7,
                            server="http://127.0.0.1:8123/mcp") as span:
        meta = telemetry.inject_meta({"progressToken": 1})
    (done,) = otel.exporter.get_finished_spans()
    assert done.name == "tools/call get_time" and done.kind.name == "CLIENT"
    assert dict(done.attributes) == {
        "mcp.method.name": "tools/call", "mcp.protocol.version": "2025-06-18", "jsonrpc.request.id": "7",
        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_time", "server.address": "127.0.0.1",
        "server.port": 8123, "network.transport": "tcp", "network.protocol.name": "http"}
    trace_id = format(done.context.trace_id, "032x")
    span_id = format(done.context.span_id, "016x")
    flags = format(int(done.context.trace_flags), "02x")
    assert meta == {"progressToken": 1, "traceparent": "00-{}-{}-{}".format(trace_id, span_id, flags)}
    assert span.recording is False


def test_mcp_session_id_only_when_given(otel):
    otel.start()
    with telemetry.mcp_span("initialize", "2025-03-26", session_id="abc", transport="pipe"):
        pass
    (span,) = otel.exporter.get_finished_spans()
    assert span.name == "initialize"
    assert dict(span.attributes) == {"mcp.method.name": "initialize", "mcp.protocol.version": "2025-03-26",
                                     "mcp.session.id": "abc", "network.transport": "pipe"}


def test_uninstrument_stops_everything(otel):
    otel.start()
    telemetry.uninstrument()
    from agenthub import attempts

    assert not any(isinstance(hook, telemetry.GenAIHook) for hook in attempts.registered())
    assert telemetry.tool_span("x") is telemetry._NOOP
    assert otel.exporter.get_finished_spans() == ()


# -- the cache-write count kept beside the four buckets ------------------------------------------------------------


def test_cache_writes_ride_beside_the_four_buckets_without_changing_the_data_model():
    import copy
    import pickle

    from agenthub.providers import anthropic, bedrock
    from agenthub.stream import check_stream

    usage = anthropic.map_usage({"input_tokens": 10, "cache_creation_input_tokens": 100,
                                 "cache_read_input_tokens": 5, "output_tokens": 3})
    assert usage == {"cached_tokens": 5, "prompt_tokens": 110, "thoughts_tokens": None, "response_tokens": 3}
    assert usage.cache_write == 100
    assert json.dumps(usage) == json.dumps(dict(usage))
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        assert pickle.loads(pickle.dumps(usage, protocol)).cache_write == 100
    assert copy.deepcopy(usage).cache_write == 100
    assert not hasattr(anthropic.map_usage({"input_tokens": 10, "output_tokens": 3}), "cache_write")
    compacted = anthropic.map_usage({"input_tokens": 1, "cache_creation_input_tokens": 2, "output_tokens": 1,
                                     "iterations": [{"type": "compaction", "input_tokens": 5,
                                                     "cache_creation_input_tokens": 7, "output_tokens": 1}]})
    assert compacted.cache_write == 9 and compacted["prompt_tokens"] == 15
    converse = bedrock.map_usage({"inputTokens": 10, "outputTokens": 2, "cacheReadInputTokens": 4,
                                  "cacheWriteInputTokens": 7, "totalTokens": 23})
    assert converse == {"cached_tokens": 4, "prompt_tokens": 17, "thoughts_tokens": None, "response_tokens": 2}
    assert converse.cache_write == 7
    stop = {"role": "assistant", "event_type": "stop", "content_items": [], "usage_metadata": usage,
            "finish_reason": "stop", "created_at": 1}
    check_stream([dict(stop, event_type="start", usage_metadata=None, finish_reason=None), stop])


# -- end to end: real calls through the attempt loop, served from 127.0.0.1 ------------------------------------------

FIXTURES = os.path.join(HERE, "fixtures", "telemetry")
RECORDINGS = os.path.join(ROOT, "agenthub", "recordings")
PROMPT = "TELEMETRY PROMPT 7f3a"  # must never appear in an exported span by default
ASK = [{"role": "user", "content_items": [{"type": "text", "text": PROMPT}]}]


def _loop_runs_call_hooks():
    import inspect

    from agenthub import client

    source = inspect.getsource(client)
    try:
        from agenthub import failover

        source += inspect.getsource(failover)
    except ImportError:
        pass
    return "on_call_start" in source and "on_call_end" in source


needs_call_hooks = pytest.mark.skipif(not _loop_runs_call_hooks(),
                                      reason="the attempt loop does not run the call-level hooks (C1 on_call_start / "
                                             "on_call_end) in this tree yet")


def _read(*parts):
    with open(os.path.join(*parts), "rb") as handle:
        return handle.read()


#: (client_type, model, base path, stream file): every SSE recording agenthub ships, and this test's own
STREAMS = [
    ("openai-chat", "gpt-tel", "/v1", (FIXTURES, "chat_cached.sse")),
    ("openai-chat", "gpt-tel", "/v1", (FIXTURES, "chat_tool.sse")),
    ("openai-responses", "gpt-tel", "/v1", (FIXTURES, "responses_cached.sse")),
    ("anthropic", "claude-sonnet-4-6", "", (FIXTURES, "anthropic_cache_write.sse")),
    ("openai-chat", "demo-model", "/v1", (RECORDINGS, "openai_chat", "weather_answer.sse")),
    ("openai-chat", "demo-model", "/v1", (RECORDINGS, "openai_chat", "weather_tool_call.sse")),
    ("openai-responses", "gpt-5.5-demo", "/v1", (RECORDINGS, "openai_responses", "weather_answer.sse")),
    ("openai-responses", "gpt-5.5-demo", "/v1", (RECORDINGS, "openai_responses", "weather_tool_call.sse")),
    ("anthropic", "claude-sonnet-4-6", "", (RECORDINGS, "anthropic", "weather_answer.sse")),
    ("anthropic", "claude-sonnet-4-6", "", (RECORDINGS, "anthropic", "weather_tool_call.sse")),
    ("gemini", "gemini-3-flash", "", (RECORDINGS, "gemini", "weather_answer.sse")),
    ("gemini", "gemini-3-flash", "", (RECORDINGS, "gemini", "weather_tool_call.sse")),
]


def _agenthub_call(client_type, model, base, data, config=None, **client_kwargs):
    from agenthub import AutoLLMClient
    from sse_server import Answer, SSEServer

    with SSEServer() as server:
        server.answers.append(Answer([data]))
        client = AutoLLMClient(model, api_key="sk-telemetry-key-abc123", base_url=server.url + base,
                               client_type=client_type, max_retries=0, **client_kwargs)
        events = list(client.streaming_response(ASK, config or {}))
        port = int(server.url.rsplit(":", 1)[1])
    return events, port


@needs_call_hooks
@pytest.mark.parametrize("client_type,model,base,path", STREAMS, ids=[s[3][-1] for s in STREAMS])
def test_every_recorded_stream_keeps_the_token_identities_and_no_prompt(otel, client_type, model, base, path):
    otel.start()
    events, port = _agenthub_call(client_type, model, base, _read(*path),
                                  {"extra_headers": {"X-Trace-Token": "hdr-secret-value"}})
    usage = events[-1]["usage_metadata"]
    (span,) = otel.exporter.get_finished_spans()
    attrs = dict(span.attributes)
    cached, prompt = usage["cached_tokens"], usage["prompt_tokens"]
    thoughts, response = usage["thoughts_tokens"], usage["response_tokens"]
    assert attrs["gen_ai.usage.input_tokens"] == (cached or 0) + (prompt or 0)
    assert attrs["gen_ai.usage.output_tokens"] == (thoughts or 0) + (response or 0)
    assert attrs.get("gen_ai.usage.cache_read.input_tokens", 0) <= attrs["gen_ai.usage.input_tokens"]
    assert attrs.get("gen_ai.usage.reasoning.output_tokens", 0) <= attrs["gen_ai.usage.output_tokens"]
    assert attrs.get("gen_ai.usage.cache_creation.input_tokens", 0) <= attrs["gen_ai.usage.input_tokens"]
    assert attrs.get("gen_ai.usage.cache_creation.input_tokens", 0) + attrs.get(
        "gen_ai.usage.cache_read.input_tokens", 0) <= attrs["gen_ai.usage.input_tokens"]
    assert attrs["gen_ai.response.finish_reasons"] == (events[-1]["finish_reason"],)
    assert attrs["server.address"] == "127.0.0.1" and attrs["server.port"] == port
    assert attrs["gen_ai.request.model"] == model
    exported = json.dumps([dict(s.attributes) for s in otel.exporter.get_finished_spans()])
    assert PROMPT not in exported and "hdr-secret-value" not in exported and "sk-telemetry-key" not in exported
    tokens = {a["gen_ai.token.type"]: p.sum for a, p in metrics_of(otel.reader)["gen_ai.client.token.usage"]}
    assert tokens == {"input": attrs["gen_ai.usage.input_tokens"], "output": attrs["gen_ai.usage.output_tokens"]}


@needs_call_hooks
def test_chat_stream_end_to_end(otel):
    otel.start()
    events, port = _agenthub_call("openai-chat", "gpt-tel", "/v1", _read(FIXTURES, "chat_cached.sse"),
                                  {"max_tokens": 64, "temperature": 0.5})
    (span,) = otel.exporter.get_finished_spans()
    attrs = dict(span.attributes)
    attrs.pop("gen_ai.response.time_to_first_chunk")
    assert span.name == "chat gpt-tel" and span.kind.name == "CLIENT"
    assert attrs == {
        "gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": "gpt-tel",
        "server.address": "127.0.0.1", "server.port": port, "gen_ai.request.stream": True,
        "gen_ai.request.max_tokens": 64, "gen_ai.request.temperature": 0.5,
        "gen_ai.response.model": "gpt-tel-2026-01-01", "gen_ai.response.id": "chatcmpl-tel1",
        "agenthub.route.model": "gpt-tel",
        "agenthub.route.client_type": "openai-chat", "agenthub.route.host": "127.0.0.1:{}".format(port),
        "agenthub.attempts": 1, "openai.api.type": "chat_completions",
        "gen_ai.response.finish_reasons": ("stop",), "gen_ai.usage.input_tokens": 1200,
        "gen_ai.usage.output_tokens": 300, "gen_ai.usage.cache_read.input_tokens": 1024,
        "gen_ai.usage.reasoning.output_tokens": 120}


@needs_call_hooks
@pytest.mark.parametrize("client_type, model, expected", [
    ("deepseek", "my-distilled-model", "deepseek"),   # a preset says its vendor at any host (here 127.0.0.1)
    ("moonshot", "kimi-k2.6", "moonshot_ai"),
    ("vllm", "Qwen/Qwen3-8B", "openai"),              # a vendor with no well-known value: the client type's
    ("openai-chat", "deepseek-v4-flash", "openai"),   # a model name off its vendor's hosts: a gateway's answer
])
def test_the_provider_is_the_row_the_caller_chose(otel, client_type, model, expected):
    otel.start()
    _agenthub_call(client_type, model, "/v1", _read(FIXTURES, "chat_cached.sse"))
    (span,) = otel.exporter.get_finished_spans()
    assert span.attributes["gen_ai.provider.name"] == expected
    (point,) = metrics_of(otel.reader)["gen_ai.client.operation.duration"]
    assert point[0]["gen_ai.provider.name"] == expected


@needs_call_hooks
def test_a_fallback_reports_the_provider_its_own_row_chose(otel):
    from agenthub import AutoLLMClient
    from sse_server import Answer, SSEServer

    otel.start()
    with SSEServer() as down, SSEServer() as up:
        down.answers.append(Answer([b'{"error": {"message": "overloaded"}}'], status=503,
                                   headers={"Content-Type": "application/json"}))
        up.answers.append(Answer([_read(FIXTURES, "chat_cached.sse")]))
        backup = AutoLLMClient("my-model", api_key="k2", base_url=up.url + "/v1", client_type="deepseek",
                               max_retries=0)
        client = AutoLLMClient("gpt-tel", api_key="k1", base_url=down.url + "/v1", client_type="openai-chat",
                               max_retries=0, fallbacks=[backup])
        list(client.streaming_response(ASK))
    (span,) = otel.exporter.get_finished_spans()
    assert span.attributes["gen_ai.provider.name"] == "deepseek"
    assert span.attributes["agenthub.route.model"] == "my-model"


@needs_call_hooks
@pytest.mark.parametrize("client_type, model, base, path, response_id, response_model", [
    ("openai-chat", "gpt-tel", "/v1", (FIXTURES, "chat_cached.sse"), "chatcmpl-tel1", "gpt-tel-2026-01-01"),
    ("openai-responses", "gpt-tel", "/v1", (FIXTURES, "responses_cached.sse"), "resp_tel1", "gpt-tel-2026-01-01"),
    ("anthropic", "claude-x", "", (FIXTURES, "anthropic_cache_write.sse"), "msg_tel_03", "claude-sonnet-4-6"),
    ("gemini", "gemini-x", "", (RECORDINGS, "gemini", "weather_answer.sse"), "demo-gemini-turn-2",
     "gemini-3.5-flash"),
])
def test_the_response_id_and_model_are_the_servers(otel, client_type, model, base, path, response_id,
                                                    response_model):
    """gen_ai.response.id on every stream that carries one; gen_ai.response.model the model the server said
    answered (the requested name is an alias here), the route's only where the server says none."""
    otel.start()
    events, _ = _agenthub_call(client_type, model, base, _read(*path))
    (span,) = otel.exporter.get_finished_spans()
    assert (span.attributes["gen_ai.response.id"], span.attributes["gen_ai.response.model"]) == (
        response_id, response_model)
    assert span.attributes["gen_ai.request.model"] == span.attributes["agenthub.route.model"] == model
    (point,) = metrics_of(otel.reader)["gen_ai.client.operation.duration"]
    assert point[0]["gen_ai.response.model"] == response_model
    stop = events[-1]
    assert type(stop) is not dict and stop == dict(stop)  # the stop event: a plain dict to every reader
    assert (stop.response_id, stop.response_model) == (response_id, response_model)
    assert "response_id" not in stop and json.loads(json.dumps(stop)) == dict(stop)


@needs_call_hooks
def test_a_stream_without_an_id_says_the_routes_model_and_no_id(otel):
    import pickle

    from agenthub import stream

    stop = list(stream.drive([{"type": "text", "text": "hi"}, stream.StreamEnd(None, "stop")]))[-1]
    assert isinstance(stop, stream.StopEvent) and (stop.response_id, stop.response_model) == (None, None)
    assert type(pickle.loads(pickle.dumps(stop))) is dict  # a copy is a plain dict
    otel.start()
    drive(fake_call())  # the hooks as the loop runs them: a call whose stop event said no id nor model
    (span,) = otel.exporter.get_finished_spans()
    assert span.attributes["gen_ai.response.model"] == "gpt-test" and "gen_ai.response.id" not in span.attributes


@needs_call_hooks
def test_anthropic_cache_writes_end_to_end(otel):
    otel.start()
    _agenthub_call("anthropic", "claude-sonnet-4-6", "", _read(FIXTURES, "anthropic_cache_write.sse"))
    (span,) = otel.exporter.get_finished_spans()
    assert span.attributes["gen_ai.provider.name"] == "anthropic"
    assert span.attributes["gen_ai.usage.cache_creation.input_tokens"] == 300
    assert span.attributes["gen_ai.usage.cache_read.input_tokens"] == 412
    assert span.attributes["gen_ai.usage.input_tokens"] == 38 + 300 + 412


@needs_call_hooks
def test_a_response_cache_hit_counts_no_tokens_and_no_chunks(otel, tmp_path):
    """A hit sends nothing: gen_ai.client.token.usage is "Number of input and output tokens used", recorded
    "when an operation involves the usage of tokens" and with "billable tokens" where a system reports both
    (open-telemetry/semantic-conventions v1.41.0, docs/gen-ai/gen-ai-metrics.md), and the chunk metrics time a
    server's stream ("from when the client issues the generation request"): the replayed answer's usage is
    the stored call's, counted when it was used.  The span says the hit and its duration, no usage."""
    from agenthub import AutoLLMClient, ResponseCache
    from sse_server import Answer, SSEServer

    otel.start()
    with SSEServer() as server:
        server.answers.append(Answer([_read(FIXTURES, "chat_cached.sse")]))
        client = AutoLLMClient("gpt-tel", api_key="k", base_url=server.url + "/v1", client_type="openai-chat",
                               max_retries=0, cache=ResponseCache(str(tmp_path / "answers"), ttl=3600))
        live = list(client.streaming_response(ASK))
        again = list(client.streaming_response(ASK))
        assert len(server.requests) == 1
    assert again[-1]["usage_metadata"] == live[-1]["usage_metadata"]  # the replay carries the stored usage
    sent, hit = otel.exporter.get_finished_spans()
    assert "agenthub.cache" not in sent.attributes and sent.attributes["gen_ai.usage.input_tokens"] == 1200
    assert hit.attributes["agenthub.cache"] == "hit"
    assert not [name for name in hit.attributes if name.startswith("gen_ai.usage.")]
    assert "gen_ai.response.time_to_first_chunk" not in hit.attributes
    assert hit.attributes["gen_ai.response.finish_reasons"] == ("stop",)
    metrics = metrics_of(otel.reader)
    tokens = {a["gen_ai.token.type"]: (p.sum, p.count) for a, p in metrics["gen_ai.client.token.usage"]}
    assert tokens == {"input": (1200, 1), "output": (300, 1)}  # the call that was sent, once
    assert sum(p.count for _, p in metrics["gen_ai.client.operation.time_to_first_chunk"]) == 1
    assert sum(p.count for _, p in metrics["gen_ai.client.operation.duration"]) == 2  # both calls took time


@needs_call_hooks
@pytest.mark.parametrize("client_type, name, tier_said, config, api_type, request_tier, response_tier", [
    ("openai-chat", "chat_cached.sse", None, {}, "chat_completions", None, None),
    ("openai-chat", "chat_cached.sse", "default", {}, "chat_completions", None, "default"),
    ("openai-responses", "responses_cached.sse", None, {"fast_mode": True}, "responses", "priority", None),
])
def test_openai_spans_say_the_api_and_service_tiers(otel, client_type, name, tier_said, config, api_type,
                                                    request_tier, response_tier):
    """v1.41.0 model/gen-ai/spans.yaml, span.openai.inference.client: openai.api.type "recommended";
    openai.request.service_tier "conditionally_required: if the request includes a service_tier and the value is
    not 'auto'"; openai.response.service_tier "conditionally_required: if the response was received and includes
    a service_tier" (OpenAI says "default" for standard processing)."""
    otel.start()
    data = _read(FIXTURES, name)
    if tier_said:  # the usage chunk says the tier that served the answer
        data = data.replace(b'"choices": [], "usage"', '"choices": [], "service_tier": "{}", "usage"'.format(
            tier_said).encode())
    _agenthub_call(client_type, "gpt-tel", "/v1", data, config)
    (span,) = otel.exporter.get_finished_spans()
    attrs = dict(span.attributes)
    assert attrs["openai.api.type"] == api_type
    assert attrs.get("openai.request.service_tier") == request_tier
    assert attrs.get("openai.response.service_tier") == response_tier


@needs_call_hooks
def test_a_journaled_runs_replayed_turns_are_no_calls(otel, tmp_path):
    """A run resumed from its journal replays the turns it journaled (nothing is sent): no chat span and no token
    counted for them; the tokens each turn used were counted once, when it was sent."""
    from sse_server import Answer, SSEServer
    from test_journal_runs import SCRIPT, TOOLS, USER, client_for, ran

    otel.start()
    journal = "sqlite:///" + str(tmp_path / "runs.db")
    del ran[:]
    with SSEServer() as server:
        server.answers += [Answer([answer]) for answer in SCRIPT]
        client = client_for(server)
        first = client.run([USER], tools=TOOLS, journal=journal, run_id="trip-1").result()
        live = metrics_of(otel.reader)["gen_ai.client.token.usage"]
        again = client.run([USER], tools=TOOLS, journal=journal, run_id="trip-1").result()
    del ran[:]
    assert again.replayed_turns == 3 and len(server.requests) == 3
    calls = [s for s in otel.exporter.get_finished_spans() if s.attributes.get("gen_ai.operation.name") == "chat"]
    assert len(calls) == first.turns == 3
    assert sum(p.count for _, p in metrics_of(otel.reader)["gen_ai.client.token.usage"]) == sum(
        p.count for _, p in live) == 6  # input and output of each sent turn, once


@needs_call_hooks
def test_failover_is_one_span_covering_every_route(otel):
    from agenthub import AutoLLMClient
    from sse_server import Answer, SSEServer

    otel.start()
    with SSEServer() as down, SSEServer() as up:
        down.answers.append(Answer([b'{"error": {"message": "overloaded"}}'], status=503,
                                   headers={"Content-Type": "application/json"}))
        up.answers.append(Answer([_read(FIXTURES, "anthropic_cache_write.sse")]))
        backup = AutoLLMClient("claude-sonnet-4-6", api_key="k2", base_url=up.url, client_type="anthropic",
                               max_retries=0)
        client = AutoLLMClient("gpt-tel", api_key="k1", base_url=down.url + "/v1", client_type="openai-chat",
                               max_retries=0, fallbacks=[backup])
        events = list(client.streaming_response(ASK))
    assert events[-1]["event_type"] == "stop"
    (span,) = otel.exporter.get_finished_spans()
    assert span.name == "chat gpt-tel"
    assert span.attributes["gen_ai.request.model"] == "gpt-tel"
    assert span.attributes["gen_ai.response.model"] == "claude-sonnet-4-6"
    assert span.attributes["agenthub.route.client_type"] == "anthropic"
    assert span.attributes["gen_ai.provider.name"] == "anthropic"
    assert span.attributes["agenthub.attempts"] == 2
    assert "error.type" not in span.attributes
    # the server of the route that answered (both servers are 127.0.0.1: the port tells them apart)
    assert (span.attributes["server.address"], span.attributes["server.port"]) == (
        "127.0.0.1", int(up.url.rsplit(":", 1)[1]))


@needs_call_hooks
def test_an_error_after_retries_is_one_span_with_error_type(otel, monkeypatch):
    from agenthub import AutoLLMClient, RateLimitError
    from sse_server import Answer, SSEServer

    monkeypatch.setattr("agenthub.attempts.BACKOFF_BASE", 0.001)
    otel.start()
    with SSEServer() as server:
        for _ in range(2):
            server.answers.append(Answer([b'{"error": {"message": "slow down"}}'], status=429,
                                         headers={"Content-Type": "application/json"}))
        client = AutoLLMClient("gpt-tel", api_key="k", base_url=server.url + "/v1", client_type="openai-chat",
                               max_retries=1)
        with pytest.raises(RateLimitError):
            list(client.streaming_response(ASK))
    (span,) = otel.exporter.get_finished_spans()
    assert span.attributes["error.type"] == "RateLimitError"
    assert span.attributes["agenthub.attempts"] == 2
    assert span.status.status_code.name == "ERROR"


@needs_call_hooks
@pytest.mark.parametrize("with_fallback", [False, True])
def test_an_interrupted_call_is_an_error_and_a_closed_one_is_not(otel, with_fallback):
    """error.type is "Conditionally Required: if the operation ended in an error" and, for an exception, "its
    canonical class name" (v1.41.0 model/gen-ai/spans.yaml, model/error/registry.yaml): a KeyboardInterrupt (or a
    hook's own exception) ending the call says so, once; the caller closing the stream early is no error."""
    from agenthub import AutoLLMClient
    from agenthub.attempts import AttemptHook
    from sse_server import Answer, SSEServer

    class Interrupt(AttemptHook):
        def after_response(self, attempt):
            raise KeyboardInterrupt()

    otel.start()
    threads_before = set(threading.enumerate())
    with SSEServer() as server:
        for _ in range(2):
            server.answers.append(Answer([_read(FIXTURES, "chat_cached.sse")]))
        kwargs = {"fallbacks": [AutoLLMClient("gpt-b", api_key="k", base_url=server.url + "/v1",
                                              client_type="openai-chat")]} if with_fallback else {}
        interrupting = AutoLLMClient("gpt-tel", api_key="k", base_url=server.url + "/v1", client_type="openai-chat",
                                     max_retries=0, hooks=[Interrupt()], **kwargs)
        with pytest.raises(KeyboardInterrupt):
            list(interrupting.streaming_response(ASK))
        client = AutoLLMClient("gpt-tel", api_key="k", base_url=server.url + "/v1", client_type="openai-chat",
                               max_retries=0, **kwargs)
        stream = client.streaming_response(ASK)
        next(stream)
        stream.close()
    interrupted, closed = otel.exporter.get_finished_spans()
    assert interrupted.attributes["error.type"] == "KeyboardInterrupt"
    assert interrupted.status.status_code.name == "ERROR"
    assert "error.type" not in closed.attributes and closed.status.status_code.name == "UNSET"
    durations = sorted((a.get("error.type") or "", p.count) for a, p in
                       metrics_of(otel.reader)["gen_ai.client.operation.duration"])
    assert durations == [("", 1), ("KeyboardInterrupt", 1)]
    assert telemetry.hook._state.hook._calls == {}  # nothing kept of a finished call
    # no thread started by telemetry: the local server's request threads end soon after its last answer (a bounded
    # wait for them); one the telemetry started would still run
    extra = set(threading.enumerate()) - threads_before
    for thread in extra:
        thread.join(timeout=5)
    assert [thread for thread in extra if thread.is_alive()] == []


@needs_call_hooks
def test_a_client_hook_raising_at_the_calls_end_still_ends_the_span(otel):
    """The process-wide hook runs after the client's own: one of those raising in on_call_end skipped it, the span
    never ended and the call's record stayed in the hook forever."""
    from agenthub.attempts import AttemptHook

    class Raising(AttemptHook):
        def on_call_end(self, call):
            raise ValueError("a user hook broke")

    otel.start()
    with pytest.raises(ValueError, match="a user hook broke"):
        _agenthub_call("openai-chat", "gpt-tel", "/v1", _read(FIXTURES, "chat_cached.sse"), hooks=[Raising()])
    (span,) = otel.exporter.get_finished_spans()
    assert span.name == "chat gpt-tel" and span.attributes["gen_ai.usage.input_tokens"] == 1200
    assert telemetry.hook._state.hook._calls == {}


def test_the_run_span_names_its_provider_only_under_the_conventions_that_ask_it(otel, monkeypatch):
    """v1.41.0 requires gen_ai.provider.name on invoke_agent INTERNAL spans; semantic-conventions-genai
    docs/gen-ai/non-normative/migration.md, "Invoke agent internal span attributes": "`gen_ai.provider.name` |
    [#289] | Removed."."""
    from agenthub.telemetry.spans import RunSpans

    run = types.SimpleNamespace(client=types.SimpleNamespace(model="m", client_type="anthropic", _provider=None))
    for latest in (False, True):
        if latest:
            monkeypatch.setenv(telemetry.OPT_IN_ENV, "gen_ai_latest_experimental")
        otel.start()
        hooks = RunSpans()
        hooks.on_run_start(run)
        hooks.on_run_end(run, None)
    default, newer = otel.exporter.get_finished_spans()
    assert dict(default.attributes) == {"gen_ai.operation.name": "invoke_agent", "gen_ai.provider.name": "anthropic",
                                        "gen_ai.request.model": "m"}
    assert dict(newer.attributes) == {"gen_ai.operation.name": "invoke_agent", "gen_ai.request.model": "m"}


def test_a_run_ended_by_any_exception_is_an_error_span(otel):
    """on_run_end gets the run's exception (KeyboardInterrupt included, agenthub.agent.hooks); the invoke_agent
    span says it (error.type "if the operation ended in an error")."""
    from agenthub.telemetry.spans import RunSpans

    otel.start()
    hooks = RunSpans()
    for run, error in ((object(), KeyboardInterrupt()), (object(), None)):
        hooks.on_run_start(run)
        hooks.on_run_end(run, error)
    interrupted, finished = otel.exporter.get_finished_spans()
    assert interrupted.attributes["error.type"] == "KeyboardInterrupt"
    assert interrupted.status.status_code.name == "ERROR"
    assert "error.type" not in finished.attributes and finished.status.status_code.name == "UNSET"
    assert hooks._runs == {}  # nothing kept once a run ended


# -- differential: the same streams through the openai SDK under opentelemetry-instrumentation-openai-v2 ----------

#: attributes agenthub emits that the reference (2.4b0, default mode) does not, and why
ONLY_AGENTHUB = {
    "server.address", "server.port",  # the reference leaves them out for a base_url it does not know
    "gen_ai.request.stream",  # required by the conventions when streaming; the reference does not set it
    "gen_ai.response.finish_reasons",  # the reference loses it when the usage chunk (no choices) comes last
    "gen_ai.usage.cache_read.input_tokens", "gen_ai.usage.reasoning.output_tokens",  # not read by the reference
    "gen_ai.response.time_to_first_chunk",
    "openai.api.type",  # recommended on OpenAI spans (v1.41 span.openai.inference.client); not set by the reference
}
#: attributes only the reference emits: the Chat stream's id is not handed to agenthub's attempt loop (it reports
#: gen_ai.response.id where the loop learns one: a background response)
ONLY_REFERENCE = set()  # type: set  # gen_ai.response.id and .model: both now say what the server named
#: attributes both emit with values that differ by design (see docs/telemetry.md)
DIFFERENT = set()  # type: set


def _reference_chat(data):
    pytest.importorskip("openai", reason="the openai SDK (a test oracle) is not installed")
    try:
        from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
    except ImportError as exc:
        pytest.skip("opentelemetry-instrumentation-openai-v2 (a test oracle) cannot be imported: {}".format(exc))
    import openai
    from sse_server import Answer, SSEServer

    sdk = _sdk()
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=sdk.tracer_provider, meter_provider=sdk.meter_provider)
    try:
        with SSEServer() as server:
            server.answers.append(Answer([data]))
            client = openai.OpenAI(api_key="k", base_url=server.url + "/v1", max_retries=0)
            try:
                stream = client.chat.completions.create(
                    model="gpt-tel", messages=[{"role": "user", "content": PROMPT}], stream=True,
                    stream_options={"include_usage": True}, max_tokens=64, temperature=0.5)
                for _ in stream:
                    pass
            finally:
                client.close()
    finally:
        instrumentor.uninstrument()
    (span,) = sdk.exporter.get_finished_spans()
    metrics = metrics_of(sdk.reader)
    sdk.tracer_provider.shutdown()
    sdk.meter_provider.shutdown()
    return span, metrics


@needs_call_hooks
@pytest.mark.parametrize("name", ["chat_cached.sse", "chat_tool.sse"])
def test_differential_against_opentelemetry_instrumentation_openai_v2(otel, name, monkeypatch):
    monkeypatch.delenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", raising=False)
    data = _read(FIXTURES, name)
    reference, reference_metrics = _reference_chat(data)
    otel.start()
    _agenthub_call("openai-chat", "gpt-tel", "/v1", data, {"max_tokens": 64, "temperature": 0.5})
    (ours,) = otel.exporter.get_finished_spans()
    theirs = dict(reference.attributes)
    mine = {k: v for k, v in ours.attributes.items() if not k.startswith("agenthub.")}
    assert reference.name == ours.name and reference.kind == ours.kind
    both = set(theirs) & set(mine)
    assert {key for key in both if theirs[key] != mine[key]} == DIFFERENT & both
    assert set(theirs) - set(mine) == ONLY_REFERENCE
    assert set(mine) - set(theirs) <= ONLY_AGENTHUB
    # the input count agrees: both report the provider's inclusive prompt count (cached included, once)
    assert theirs["gen_ai.usage.input_tokens"] == mine["gen_ai.usage.input_tokens"]
    assert theirs["gen_ai.usage.output_tokens"] == mine["gen_ai.usage.output_tokens"]
    assert PROMPT not in json.dumps(theirs) and PROMPT not in json.dumps(mine)
    ours_metrics = metrics_of(otel.reader)
    for metric in ("gen_ai.client.token.usage", "gen_ai.client.operation.duration"):
        assert metric in reference_metrics and metric in ours_metrics
    sums = lambda metrics: sorted((a["gen_ai.token.type"], p.sum) for a, p in metrics["gen_ai.client.token.usage"])
    assert sums(reference_metrics) == sums(ours_metrics)


# -- agenthub chat --otel ----------------------------------------------------------------------------------------------


def instrument_command(tmp_path):
    """(the opentelemetry-instrument command, a directory for PYTHONPATH holding agenthub's entry point as
    setup.cfg declares it, in a dist-info of its own: agenthub itself is not installed here); skips
    without opentelemetry-instrument and opentelemetry-distro (what configures its SDK)."""
    _sdk()  # skips without the SDK
    import importlib.util

    command = os.path.join(os.path.dirname(sys.executable), "opentelemetry-instrument")
    if not os.path.exists(command) or importlib.util.find_spec("opentelemetry.distro") is None:
        pytest.skip("opentelemetry-instrument with opentelemetry-distro (what configures its SDK) is not installed")
    info = tmp_path / "entry" / "agenthub_entry-0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: agenthub-entry\nVersion: 0\n")
    with open(os.path.join(ROOT, "setup.cfg")) as handle:
        declared = handle.read().split("opentelemetry_instrumentor =", 1)[1].splitlines()[1].strip()
    (info / "entry_points.txt").write_text("[opentelemetry_instrumentor]\n{}\n".format(declared))
    return command, str(tmp_path / "entry")


@needs_call_hooks
def test_chat_otel_exports_the_call_span_under_opentelemetry_instrument(tmp_path):
    command, entry = instrument_command(tmp_path)
    from sse_server import Answer, SSEServer

    with SSEServer() as server:
        server.answers.append(Answer([_read(FIXTURES, "chat_cached.sse")]))
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, entry]), OTEL_TRACES_EXPORTER="console",
                   OTEL_METRICS_EXPORTER="none", OTEL_LOGS_EXPORTER="none", OTEL_SERVICE_NAME="cli-test",
                   AGENTHUB_LOG_PROMPTS="0", TEL_KEY="sk-cli-secret-key")
        env.pop(telemetry.CAPTURE_ENV, None)
        done = subprocess.run([command, sys.executable, "-m", "agenthub", "chat", "gpt-tel", PROMPT, "--otel",
                               "--no-log", "--client-type", "openai-chat", "--base-url", server.url + "/v1",
                               "--api-key-env", "TEL_KEY"], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "Telemetry answer in five pieces." in done.stdout
    start = done.stdout.index("{")  # the console exporter writes to stdout, after the answer
    span = json.JSONDecoder().raw_decode(done.stdout[start:])[0]
    assert span["name"] == "chat gpt-tel" and span["kind"] == "SpanKind.CLIENT"
    assert span["attributes"]["gen_ai.usage.input_tokens"] == 1200
    assert span["resource"]["attributes"]["service.name"] == "cli-test"
    assert PROMPT not in done.stdout + done.stderr and "sk-cli-secret-key" not in done.stdout + done.stderr


def test_chat_otel_without_opentelemetry_instrument_says_how_to_run_it_and_sends_nothing():
    pytest.importorskip("opentelemetry.trace", reason="the OpenTelemetry API is not installed")
    from sse_server import Answer, SSEServer

    with SSEServer() as server:
        server.answers.append(Answer([_read(FIXTURES, "chat_cached.sse")]))
        env = dict(os.environ, PYTHONPATH=ROOT, AGENTHUB_LOG_PROMPTS="0", TEL_KEY="sk-cli-secret-key",
                   OTEL_TRACES_EXPORTER="console")  # the variables alone no longer set an SDK up
        done = subprocess.run([sys.executable, "-m", "agenthub", "chat", "gpt-tel", PROMPT, "--otel", "--no-log",
                               "--client-type", "openai-chat", "--base-url", server.url + "/v1",
                               "--api-key-env", "TEL_KEY"], capture_output=True, text=True, env=env, timeout=60)
        sent = list(server.requests)
    assert done.returncode != 0
    assert telemetry.hook.RUN_UNDER in done.stderr
    assert "opentelemetry-instrument agenthub chat MODEL PROMPT --otel" in done.stderr
    assert sent == [] and done.stdout == ""


def test_start_from_environment_without_an_sdk_raises_and_leaves_nothing_instrumented(monkeypatch):
    pytest.importorskip("opentelemetry.trace", reason="the OpenTelemetry API is not installed")
    from opentelemetry import trace

    if type(trace.get_tracer_provider()).__name__ not in ("ProxyTracerProvider", "NoOpTracerProvider"):
        pytest.skip("a global tracer provider was set in this process")
    with pytest.raises(ConfigError) as caught:
        telemetry.start_from_environment()
    assert str(caught.value) == telemetry.hook.RUN_UNDER
    assert telemetry.is_instrumented() is False


# -- agenthub serve continues an incoming traceparent ----------------------------------------------------------------


@needs_call_hooks
def test_serve_continues_the_incoming_traceparent(otel):
    import requests

    from agenthub.apps.server import make_app
    from server_support import Builtin, Route, Upstream

    otel.start()
    trace_id, parent_id = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
    with Upstream() as upstream:
        upstream.routes["chat"] = Route(_read(FIXTURES, "chat_cached.sse"))
        app = make_app({"models": [{"id": "tel", "model": "gpt-tel", "client_type": "openai-chat",
                                    "base_url": upstream.url + "/chat/v1", "api_key": "sk-up", "max_retries": 0}],
                        "api_keys": ["serve-key-0123456789"]}, environ={})
        with Builtin(app) as server:
            answer = requests.post(server.url + "/v1/stream", json={"model": "tel", "messages": ASK}, timeout=10,
                                   headers={"Authorization": "Bearer serve-key-0123456789",
                                            "traceparent": "00-{}-{}-01".format(trace_id, parent_id)})
            assert answer.status_code == 200 and b'"stop"' in answer.content
            plain = requests.post(server.url + "/v1/stream", json={"model": "tel", "messages": ASK}, timeout=10,
                                  headers={"Authorization": "Bearer serve-key-0123456789"})
            assert plain.status_code == 200
    continued, fresh = sorted(otel.exporter.get_finished_spans(), key=lambda s: s.start_time)
    assert format(continued.context.trace_id, "032x") == trace_id
    assert format(continued.parent.span_id, "016x") == parent_id and continued.parent.is_remote
    assert continued.name == "chat gpt-tel"
    assert fresh.parent is None and format(fresh.context.trace_id, "032x") != trace_id


def test_a_raising_propagator_breaks_no_served_request(otel, caplog):
    """docs/telemetry.md: a propagator that raises is logged at DEBUG and the work goes on.  inject_meta kept that
    promise; continue_trace (each request agenthub serve answers) raised the propagator's error into the request."""
    import logging

    from opentelemetry import propagate
    from opentelemetry.propagators.textmap import TextMapPropagator

    class Raising(TextMapPropagator):
        def extract(self, carrier, context=None, getter=None):
            raise RuntimeError("propagator bug")

        def inject(self, carrier, context=None, setter=None):
            raise RuntimeError("propagator bug")

        @property
        def fields(self):
            return {"traceparent"}

    caplog.set_level(logging.DEBUG, logger="agenthub")
    before = propagate.get_global_textmap()
    propagate.set_global_textmap(Raising())
    try:
        otel.start()
        handle = telemetry.continue_trace({"HTTP_TRACEPARENT": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"})
        with handle:
            pass
        assert telemetry.inject_meta({"k": 1}) == {"k": 1}
    finally:
        propagate.set_global_textmap(before)
    assert handle is telemetry._NOOP
    assert "agenthub telemetry: the incoming trace context was not read" in caplog.text


# -- jobs.run: a span per row under the job's span ---------------------------------------------------------------------


@needs_call_hooks
def test_jobs_run_makes_a_span_per_row_under_the_job_span(otel, tmp_path):
    from agenthub import jobs
    from jobs_server import JobServer

    otel.start()
    with JobServer() as server:
        rows = [{"id": "r{}".format(i), "model": "deepseek-v4-flash", "client_type": "openai-chat",
                 "base_url": server.base_url, "messages": [{"role": "user", "content_items": [
                     {"type": "text", "text": "row {}".format(i)}]}]} for i in range(3)]
        src = tmp_path / "in.jsonl"
        src.write_text("".join(json.dumps(row) + "\n" for row in rows))
        summary = jobs.run(str(src), str(tmp_path / "out.jsonl"), workers=2, progress=False)
    assert summary.done == 3
    spans = otel.exporter.get_finished_spans()
    (job,) = [s for s in spans if s.name == "invoke_workflow agenthub.jobs"]
    assert dict(job.attributes) == {"gen_ai.operation.name": "invoke_workflow", "gen_ai.workflow.name": "agenthub.jobs",
                                    "agenthub.job.rows": 3}
    row_spans = [s for s in spans if s.name == "agenthub.jobs.row"]
    assert sorted(s.attributes["agenthub.job.row_id"] for s in row_spans) == ["r0", "r1", "r2"]
    assert all(s.parent.span_id == job.context.span_id for s in row_spans)
    calls = [s for s in spans if s.name == "chat deepseek-v4-flash"]
    assert sorted(c.parent.span_id for c in calls) == sorted(s.context.span_id for s in row_spans)
    assert {s.context.trace_id for s in spans} == {job.context.trace_id}


def test_a_job_that_ends_in_an_exception_is_an_error_span(otel, tmp_path):
    """A job stopped by an exception (here an interrupt from a hook, in a worker; the output file failing is
    another) raises it from jobs.run; its invoke_workflow span said nothing of it (error.type "if the operation
    ended in an error")."""
    from agenthub import attempts, jobs
    from agenthub.attempts import AttemptHook
    from jobs_server import JobServer

    class Interrupt(AttemptHook):
        def before_attempt(self, attempt):
            raise KeyboardInterrupt()

    otel.start()
    interrupt = Interrupt()
    attempts.register(interrupt)
    try:
        with JobServer() as server:
            row = {"id": "r0", "model": "deepseek-v4-flash", "client_type": "openai-chat", "base_url": server.base_url,
                   "messages": [{"role": "user", "content_items": [{"type": "text", "text": "row"}]}]}
            src = tmp_path / "in.jsonl"
            src.write_text(json.dumps(row) + "\n")
            with pytest.raises(KeyboardInterrupt):
                jobs.run(str(src), str(tmp_path / "out.jsonl"), workers=1, progress=False)
    finally:
        attempts.unregister(interrupt)
    (job,) = [s for s in otel.exporter.get_finished_spans() if s.name == "invoke_workflow agenthub.jobs"]
    assert job.attributes["error.type"] == "KeyboardInterrupt" and job.status.status_code.name == "ERROR"


def test_a_failure_inside_telemetry_never_breaks_the_call(otel, monkeypatch):
    otel.start(capture_content=True)

    def broken(*args):
        raise RuntimeError("telemetry bug")

    monkeypatch.setattr(telemetry.hook, "_request_attributes", broken)
    drive(fake_call())  # nothing raised
    (started,) = otel.exporter.get_finished_spans()  # the span it had started still ends, with the call's numbers
    assert started.attributes["gen_ai.usage.input_tokens"] == 100 and "gen_ai.request.max_tokens" not in started.attributes
    assert telemetry.hook._state.hook._calls == {}
    monkeypatch.undo()
    otel.start(capture_content=True)
    monkeypatch.setattr(telemetry.hook, "_content_attributes", broken)
    monkeypatch.setattr(telemetry.hook, "_record_usage", broken)
    drive(fake_call())
    ended = otel.exporter.get_finished_spans()
    assert ended[-1].attributes["gen_ai.usage.input_tokens"] == 100  # the span ended, with what was recorded


EMBEDDINGS = json.dumps({"object": "list", "model": "text-embedding-tel", "usage": {"prompt_tokens": 5, "total_tokens": 5},
                         "data": [{"object": "embedding", "index": 0, "embedding": [0.1, 0.2]},
                                  {"object": "embedding", "index": 1, "embedding": [0.3, 0.4]}]}).encode()


@needs_call_hooks
def test_embeddings_span_and_the_differential(otel):
    from agenthub import AutoLLMClient
    from sse_server import Answer, SSEServer

    pytest.importorskip("openai", reason="the openai SDK (a test oracle) is not installed")
    try:
        from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
    except ImportError as exc:
        pytest.skip("opentelemetry-instrumentation-openai-v2 (a test oracle) cannot be imported: {}".format(exc))
    import openai

    reference = _sdk()
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=reference.tracer_provider, meter_provider=reference.meter_provider)
    try:
        with SSEServer() as server:
            server.answers.append(Answer([EMBEDDINGS], headers={"Content-Type": "application/json"}, chunked=False))
            sdk_client = openai.OpenAI(api_key="k", base_url=server.url + "/v1", max_retries=0)
            sdk_client.embeddings.create(model="text-embedding-tel", input=["a", "b"], dimensions=2)
            sdk_client.close()
    finally:
        instrumentor.uninstrument()
    (theirs,) = reference.exporter.get_finished_spans()
    otel.start()
    with SSEServer() as server:
        server.answers.append(Answer([EMBEDDINGS], headers={"Content-Type": "application/json"}, chunked=False))
        client = AutoLLMClient("text-embedding-tel", api_key="k", base_url=server.url + "/v1",
                               client_type="openai-embedding")
        assert client.embed(["a", "b"], {"embedding_config": {"dimensions": 2}}) == [[0.1, 0.2], [0.3, 0.4]]
    (ours,) = otel.exporter.get_finished_spans()
    assert ours.name == theirs.name == "embeddings text-embedding-tel"
    mine = {k: v for k, v in ours.attributes.items() if not k.startswith("agenthub.")}
    assert mine["gen_ai.operation.name"] == "embeddings" and "gen_ai.response.finish_reasons" not in mine
    assert "gen_ai.request.stream" not in mine and mine["gen_ai.usage.input_tokens"] == 5
    both = set(mine) & set(theirs.attributes)
    assert {k for k in both if mine[k] != theirs.attributes[k]} == set()
    assert set(theirs.attributes) - set(mine) == set()
    # v1.41.0 model/gen-ai/spans.yaml, span.gen_ai.embeddings.client: "- ref: gen_ai.request.encoding_formats /
    # requirement_level: recommended"; agenthub always asks for "float" (the reference says it only when its caller
    # passed one)
    assert set(mine) - set(theirs.attributes) == {"server.address", "server.port", "gen_ai.request.encoding_formats"}
    assert mine["gen_ai.request.encoding_formats"] == ("float",)


def test_a_tool_run_in_another_thread_names_the_run_as_its_parent(otel):
    import threading

    otel.start()
    run = telemetry.agent_span("helper")
    done = []

    def work():
        with telemetry.tool_span("lookup", "call_9", parent=run) as tool:
            tool.set_result({"type": "tool_result", "text": "ok"})
        done.append(True)

    thread = threading.Thread(target=work)
    thread.start()
    thread.join(10)
    run.end()
    spans = {s.name: s for s in otel.exporter.get_finished_spans()}
    assert done and spans["execute_tool lookup"].parent.span_id == spans["invoke_agent helper"].context.span_id


def test_activate_makes_a_run_span_current_without_ending_it(otel):
    assert telemetry.activate(None) is telemetry._NOOP
    otel.start()
    run = telemetry.agent_span("")
    with telemetry.activate(run):
        with telemetry.tool_span("t", "c") as tool:
            pass
    assert tool.recording is False and run.recording is True
    run.end()
    spans = {s.name: s for s in otel.exporter.get_finished_spans()}
    assert spans["execute_tool t"].parent.span_id == spans["invoke_agent"].context.span_id


# -- the tool runner: a run span, its calls and an execute_tool span per call ------------------------------------------


def _runner_wired():
    try:
        import inspect

        from agenthub.agent import runner
    except ImportError:
        return False
    return "around_call" in inspect.getsource(runner)  # the runner's ToolHook seam (telemetry's spans hook onto it)


@needs_call_hooks
@pytest.mark.skipif(not _runner_wired(), reason="the tool runner (agenthub.agent) is not in this tree, or not wired to "
                                                "telemetry yet")
def test_a_tool_run_is_an_agent_span_over_its_calls_and_tools(otel):
    from agenthub import AutoLLMClient
    from sse_server import Answer, SSEServer

    otel.start()

    def get_weather(city: str) -> str:
        """The weather in a city."""
        return "18 C in " + city

    with SSEServer() as server:
        server.answers.extend([Answer([_read(FIXTURES, "chat_tool.sse")]), Answer([_read(FIXTURES, "chat_cached.sse")])])
        client = AutoLLMClient("gpt-tel", api_key="k", base_url=server.url + "/v1", client_type="openai-chat",
                               max_retries=0)
        result = client.run(ASK, tools=[get_weather]).result()
    assert result.stop == "done"
    spans = otel.exporter.get_finished_spans()
    (run,) = [s for s in spans if s.name == "invoke_agent"]
    # v1.41.0 model/gen-ai/spans.yaml, span.gen_ai.invoke_agent.internal: "- ref: gen_ai.provider.name /
    # requirement_level: required"; gen_ai.request.model "conditionally_required: If available."
    assert run.parent is None and run.kind.name == "INTERNAL" and dict(run.attributes) == {
        "gen_ai.operation.name": "invoke_agent", "gen_ai.provider.name": "openai", "gen_ai.request.model": "gpt-tel"}
    calls = [s for s in spans if s.name == "chat gpt-tel"]
    assert len(calls) == 2 and all(c.parent.span_id == run.context.span_id for c in calls)
    (tool,) = [s for s in spans if s.name == "execute_tool get_weather"]
    assert tool.parent.span_id == run.context.span_id
    assert dict(tool.attributes) == {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather",
                                     "gen_ai.tool.call.id": "call_tel1", "gen_ai.tool.type": "function"}
    assert [c.attributes["gen_ai.response.finish_reasons"] for c in sorted(calls, key=lambda s: s.start_time)] == [
        ("tool_call",), ("stop",)]
    assert "Paris" not in json.dumps([dict(s.attributes) for s in spans])  # arguments only with capture


@needs_call_hooks
@pytest.mark.skipif(not _runner_wired(), reason="the tool runner is not wired to telemetry in this tree")
def test_a_tool_the_run_stopped_waiting_for_ends_its_span_as_a_timeout(otel):
    """A tool past its timeout: the run answers the model with a TimeoutError result and goes on, while Python
    cannot stop the tool's thread.  Its execute_tool span ended only when the function returned: one that never
    returns was never exported, and the trace said nothing of the timeout."""
    from agenthub import AutoLLMClient, tool
    from sse_server import Answer, SSEServer

    release = threading.Event()

    @tool(timeout=0.05)
    def get_weather(city: str) -> str:
        """The weather in a city."""
        release.wait(10)
        return "late"

    otel.start()
    try:
        with SSEServer() as server:
            server.answers.extend([Answer([_read(FIXTURES, "chat_tool.sse")]),
                                   Answer([_read(FIXTURES, "chat_cached.sse")])])
            client = AutoLLMClient("gpt-tel", api_key="k", base_url=server.url + "/v1", client_type="openai-chat",
                                   max_retries=0)
            result = client.run(ASK, tools=[get_weather]).result()
        assert result.stop == "done"
        (span,) = [s for s in otel.exporter.get_finished_spans() if s.name == "execute_tool get_weather"]
        assert span.attributes["error.type"] == "timeout" and span.status.status_code.name == "ERROR"
    finally:
        release.set()
    for thread in threading.enumerate():  # the timed-out tool's thread ran on; released, it ends
        if thread.name.startswith("agenthub-tool-"):
            thread.join(5)
    (span,) = [s for s in otel.exporter.get_finished_spans() if s.name == "execute_tool get_weather"]
    assert span.attributes["error.type"] == "timeout"  # (its late return changes nothing of it)


# -- MCP: a CLIENT span per request, its trace context in params._meta, both eras -------------------------------------


def _mcp_wired():
    try:
        import inspect

        from agenthub.mcp import handle
    except ImportError:
        return False
    return "mcp_span" in inspect.getsource(handle)


@pytest.mark.skipif(not _mcp_wired(), reason="the MCP client (agenthub.mcp) is not in this tree, or not wired to "
                                             "telemetry yet")
@pytest.mark.parametrize("era,version", [("modern", "2026-07-28"), ("legacy", "2025-11-25")])
def test_mcp_requests_are_spans_and_carry_the_trace_context_in_meta(otel, era, version):
    import requests

    from agenthub import mcp
    from mcp_support import FAKE_HTTP, Subprocess

    otel.start()
    fake = Subprocess([FAKE_HTTP, era])
    try:
        with telemetry.agent_span("caller") as caller:
            with mcp.connect(fake.url, timeout=10) as server:
                assert server.call_tool("echo", {"text": "hi"})["text"] == "hi"
                session_id = server._session.session_id
        seen = requests.get(fake.base + "/log", timeout=5).json()
    finally:
        fake.stop()
    (call,) = [r for r in seen if (r.get("body") or {}).get("method") == "tools/call"]
    spans = {s.name: s for s in otel.exporter.get_finished_spans()}
    span = spans["tools/call echo"]
    assert span.kind.name == "CLIENT" and span.parent.span_id == caller.span.context.span_id
    # v1.41.0 model/mcp/spans.yaml: "- ref: jsonrpc.request.id / conditionally_required: When the client executes
    # a request."
    expected = {"mcp.method.name": "tools/call", "mcp.protocol.version": version, "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "echo", "server.address": "127.0.0.1", "server.port": fake.port,
                "network.transport": "tcp", "network.protocol.name": "http", "jsonrpc.request.id": str(call["body"]["id"])}
    if era == "legacy":
        expected["mcp.session.id"] = session_id
    assert dict(span.attributes) == expected
    meta = call["body"]["params"]["_meta"]
    assert meta["traceparent"] == "00-{:032x}-{:016x}-{:02x}".format(span.context.trace_id, span.context.span_id,
                                                                     int(span.context.trace_flags))


@pytest.mark.skipif(not _mcp_wired(), reason="the MCP client (agenthub.mcp) is not in this tree, or not wired to "
                                             "telemetry yet")
@pytest.mark.parametrize("era,method,version", [("legacy", "initialize", "2025-11-25"),
                                                ("modern", "server/discover", "2026-07-28")])
def test_the_handshake_is_a_span_and_carries_the_trace_context(otel, era, method, version):
    """The MCP client span covers every request the client sends (the conventions' examples start with the
    initialize span); the handshake went without a span and its request without the trace context, so a server
    tracing it started a trace of its own."""
    import requests

    from agenthub import mcp
    from mcp_support import FAKE_HTTP, Subprocess

    otel.start()
    fake = Subprocess([FAKE_HTTP, era])
    try:
        with telemetry.agent_span("caller") as caller:
            with mcp.connect(fake.url, timeout=10):
                pass
        seen = requests.get(fake.base + "/log", timeout=5).json()
    finally:
        fake.stop()
    (sent,) = [r["body"] for r in seen if (r.get("body") or {}).get("method") == method]
    span = {s.name: s for s in otel.exporter.get_finished_spans()}[method]
    assert span.kind.name == "CLIENT" and span.parent.span_id == caller.span.context.span_id
    assert dict(span.attributes) == {"mcp.method.name": method, "mcp.protocol.version": version,
                                     "jsonrpc.request.id": str(sent["id"]), "server.address": "127.0.0.1",
                                     "server.port": fake.port, "network.transport": "tcp",
                                     "network.protocol.name": "http"}
    assert sent["params"]["_meta"]["traceparent"] == "00-{:032x}-{:016x}-{:02x}".format(
        span.context.trace_id, span.context.span_id, int(span.context.trace_flags))


@pytest.mark.skipif(not _mcp_wired(), reason="the MCP client (agenthub.mcp) is not in this tree, or not wired to "
                                             "telemetry yet")
def test_a_sampled_out_mcp_request_still_carries_the_trace_context(otel):
    """A trace the sampler left out goes on with its traceparent (not sampled) so the server keeps the decision (the
    MCP conventions: "SHOULD propagate context using the configured propagators"); a request whose span records
    nothing went without _meta, and the server started a trace of its own."""
    import requests
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.sampling import ALWAYS_OFF

    from agenthub import mcp
    from mcp_support import FAKE_HTTP, Subprocess

    sampled_out = TracerProvider(sampler=ALWAYS_OFF)
    telemetry.instrument(sampled_out)
    fake = Subprocess([FAKE_HTTP, "modern"])
    try:
        with sampled_out.get_tracer("test").start_as_current_span("caller") as caller:
            with mcp.connect(fake.url, timeout=10) as server:
                assert server.call_tool("echo", {"text": "hi"})["text"] == "hi"
        seen = requests.get(fake.base + "/log", timeout=5).json()
    finally:
        fake.stop()
        sampled_out.shutdown()
    (call,) = [r for r in seen if (r.get("body") or {}).get("method") == "tools/call"]
    version, trace_id, span_id, flags = call["body"]["params"]["_meta"]["traceparent"].split("-")
    assert (version, trace_id) == ("00", "{:032x}".format(caller.get_span_context().trace_id))
    assert int(flags, 16) & 1 == 0  # not sampled (the SDK may set the random-trace-id flag, 02)
    assert span_id != "{:016x}".format(caller.get_span_context().span_id)  # the request's own span's id


@pytest.mark.skipif(not _mcp_wired(), reason="the MCP client (agenthub.mcp) is not in this tree, or not wired to "
                                             "telemetry yet")
@pytest.mark.parametrize("era", ["modern", "legacy"])
def test_a_resource_read_names_its_uri_without_its_credentials(otel, era):
    """The MCP client span: mcp.resource.uri is "Conditionally Required: When the client executes a request type
    that includes a resource URI parameter" (resources/read); a URI's user part and query values are *** (a
    signed URL's signature is a credential), as an image URL's are in content."""
    from agenthub import mcp
    from agenthub.mcp import MCPError
    from mcp_support import FAKE_HTTP, Subprocess

    otel.start()
    fake = Subprocess([FAKE_HTTP, era])
    try:
        with mcp.connect(fake.url, timeout=10) as server:
            with pytest.raises(MCPError):  # (this fake server has no resources: -32601)
                server.read_resource("https://user:pw-secret@files.example/report.pdf?sig=sig-secret&v=2")
    finally:
        fake.stop()
    span = {s.name: s for s in otel.exporter.get_finished_spans()}["resources/read"]
    assert span.attributes["mcp.method.name"] == "resources/read"
    assert span.attributes["mcp.resource.uri"] == "https://***@files.example/report.pdf?sig=***&v=***"
    assert "secret" not in json.dumps([dict(s.attributes) for s in otel.exporter.get_finished_spans()])


@pytest.mark.skipif(not _mcp_wired(), reason="the MCP client (agenthub.mcp) is not in this tree, or not wired to "
                                             "telemetry yet")
def test_an_mcp_error_answer_is_its_json_rpc_code_and_never_its_message(otel):
    """v1.41.0 model/mcp/common.yaml: error.type "SHOULD be set to the string representation of the JSON-RPC error
    code, if one is returned"; rpc.response.status_code "conditionally_required: If response contains an error
    code".  The server's message (here echoing the Authorization header) is in no attribute."""
    from agenthub import mcp
    from agenthub.mcp import MCPError
    from mcp_support import FAKE_HTTP, Subprocess

    otel.start()
    fake = Subprocess([FAKE_HTTP, "modern"])
    try:
        with mcp.connect(fake.url + "?api_key=url-secret-123", timeout=10,
                         headers={"Authorization": "Bearer sk-mcp-secret-0123456789"}) as server:
            with pytest.raises(MCPError):
                server.call_tool("leak", {})
    finally:
        fake.stop()
    span = {s.name: s for s in otel.exporter.get_finished_spans()}["tools/call leak"]
    assert span.attributes["error.type"] == "-32603" and span.attributes["rpc.response.status_code"] == "-32603"
    assert span.status.status_code.name == "ERROR" and span.status.description == "-32603"
    assert span.attributes["server.address"] == "127.0.0.1" and span.attributes["jsonrpc.request.id"]
    dump = json.dumps([dict(s.attributes) for s in otel.exporter.get_finished_spans()]) + "".join(
        str(s.status.description) for s in otel.exporter.get_finished_spans())
    assert "sk-mcp-secret" not in dump and "url-secret-123" not in dump and "denied" not in dump


@needs_call_hooks
@pytest.mark.skipif(not (_mcp_wired() and _runner_wired()), reason="the MCP client or the tool runner is not wired "
                                                                   "to telemetry in this tree")
def test_a_run_built_and_iterated_in_a_callers_span_holds_its_tools_list_span_too(otel):
    """docs/telemetry.md: a run lists its MCP handle's tools when it is built, before its invoke_agent span starts
    (at the first iteration); inside a span of the caller's both nest under that span, in one trace."""
    from agenthub import AutoLLMClient, mcp
    from mcp_support import FAKE_HTTP, Subprocess
    from sse_server import Answer, SSEServer

    otel.start()
    fake = Subprocess([FAKE_HTTP, "modern"])
    try:
        with SSEServer() as server, mcp.connect(fake.url, timeout=10) as handle:
            server.answers.append(Answer([_read(FIXTURES, "chat_cached.sse")]))
            client = AutoLLMClient("gpt-tel", api_key="k", base_url=server.url + "/v1", client_type="openai-chat",
                                   max_retries=0)
            with telemetry.agent_span("caller") as caller:
                run = client.run(ASK, tools=[handle])
                listed = [s.name for s in otel.exporter.get_finished_spans()]
                result = run.result()
    finally:
        fake.stop()
    assert result.stop == "done"
    assert "tools/list" in listed and "invoke_agent" not in listed  # listed when built, before the run's span
    spans = otel.exporter.get_finished_spans()
    listings = [s for s in spans if s.name == "tools/list"]  # (one a page: the fake's list has two)
    (agent,) = [s for s in spans if s.name == "invoke_agent"]
    assert len(listings) == 2 and all(s.parent.span_id == caller.span.context.span_id for s in listings)
    assert agent.parent.span_id == caller.span.context.span_id
    assert {s.context.trace_id for s in listings + [agent]} == {caller.span.context.trace_id}


@needs_call_hooks
@pytest.mark.skipif(not (_mcp_wired() and _runner_wired()), reason="the MCP client or the tool runner is not wired "
                                                                   "to telemetry in this tree")
def test_an_mcp_tool_a_run_calls_is_one_execute_tool_span_with_the_mcp_attributes(otel):
    """The MCP conventions: "If the MCP instrumentation can reliably detect that outer GenAI instrumentation is
    already tracing the tool execution, it SHOULD NOT create a separate span.  Instead, it SHOULD add MCP-specific
    attributes to the existing tool execution span."  A run's call of an MCP tool was two execute_tool spans (the
    run's and the MCP client's), so every such tool execution counted twice."""
    import requests

    from agenthub import AutoLLMClient, mcp
    from mcp_support import FAKE_HTTP, Subprocess
    from sse_server import Answer, SSEServer

    otel.start()
    calls_echo = _read(FIXTURES, "chat_tool.sse").replace(b"get_weather", b"echo").replace(b"city", b"text")
    fake = Subprocess([FAKE_HTTP, "modern"])
    try:
        with SSEServer() as server, mcp.connect(fake.url, timeout=10) as handle:
            server.answers.extend([Answer([calls_echo]), Answer([_read(FIXTURES, "chat_cached.sse")])])
            client = AutoLLMClient("gpt-tel", api_key="k", base_url=server.url + "/v1", client_type="openai-chat",
                                   max_retries=0)
            result = client.run(ASK, tools=[handle]).result()
        seen = requests.get(fake.base + "/log", timeout=5).json()
    finally:
        fake.stop()
    assert result.stop == "done"
    (sent,) = [r["body"] for r in seen if (r.get("body") or {}).get("method") == "tools/call"]
    spans = otel.exporter.get_finished_spans()
    assert [s.name for s in spans if s.attributes.get("gen_ai.operation.name") == "execute_tool"] == ["execute_tool echo"]
    (tool,) = [s for s in spans if s.name == "execute_tool echo"]
    (run,) = [s for s in spans if s.name == "invoke_agent"]
    assert tool.parent.span_id == run.context.span_id and tool.kind.name == "INTERNAL"
    assert dict(tool.attributes) == {
        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "echo", "gen_ai.tool.call.id": "call_tel1",
        "gen_ai.tool.type": "extension", "mcp.method.name": "tools/call", "mcp.protocol.version": "2026-07-28",
        "jsonrpc.request.id": str(sent["id"]), "server.address": "127.0.0.1", "server.port": fake.port,
        "network.transport": "tcp", "network.protocol.name": "http"}
    assert sent["params"]["_meta"]["traceparent"] == "00-{:032x}-{:016x}-{:02x}".format(
        tool.context.trace_id, tool.context.span_id, int(tool.context.trace_flags))


def test_an_sdk_configured_globally_after_instrument_is_used():
    _sdk()  # skips without the SDK
    code = r"""
import sys
sys.path.insert(0, {tests!r})
from opentelemetry import metrics
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from agenthub import telemetry
import test_telemetry as t
telemetry.instrument()
(hook,) = [h for h in __import__("agenthub.attempts").attempts.registered() if isinstance(h, telemetry.GenAIHook)]
assert hook.wants_events is False  # the API alone: nothing per event
reader = InMemoryMetricReader()
metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))
t.drive(t.fake_call())
found = t.metrics_of(reader)
assert hook.wants_events is True
print(sorted(found))
""".format(tests=HERE)
    env = dict(os.environ, PYTHONPATH=ROOT)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "gen_ai.client.operation.duration" in done.stdout and "gen_ai.client.token.usage" in done.stdout


def test_latest_content_drops_finish_reason_from_output_messages(otel, monkeypatch):
    monkeypatch.setenv(telemetry.OPT_IN_ENV, "gen_ai_latest_experimental")
    otel.start(capture_content=True)
    drive(fake_call(config={"system_prompt": "Be brief."}))
    (span,) = otel.exporter.get_finished_spans()
    output = json.loads(span.attributes["gen_ai.output.messages"])
    assert output == [{"role": "assistant", "parts": [{"type": "text", "content": "Hello there"}]}]
    # the latest schema is v1.41's with finish_reason no longer required (semantic-conventions-genai
    # docs/gen-ai/non-normative/migration.md: "gen_ai.output.messages[].finish_reason ... Deprecated")
    validator = _validator("output-messages")
    schema = json.loads(json.dumps(validator.schema))
    required = schema["$defs"]["OutputMessage"]["required"]
    schema["$defs"]["OutputMessage"]["required"] = [key for key in required if key != "finish_reason"]
    type(validator)(schema).validate(output)
    with pytest.raises(Exception):
        validator.validate(output)  # v1.41 still requires it: the default mode keeps it
    assert json.loads(span.attributes["gen_ai.system_instructions"]) == [{"type": "text", "content": "Be brief."}]


@needs_call_hooks
def test_opentelemetry_instrument_turns_agenthub_on_through_its_entry_point(tmp_path):
    command, entry = instrument_command(tmp_path)
    code = ("import agenthub\n"
            "client = agenthub.AutoLLMClient('gpt-tel', api_key='k', base_url={url!r}, client_type='openai-chat')\n"
            "print(agenthub.collect(client.streaming_response({ask!r}))['finish_reason'])\n")
    from sse_server import Answer, SSEServer

    with SSEServer() as server:
        server.answers.append(Answer([_read(FIXTURES, "chat_cached.sse")]))
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, entry]), OTEL_TRACES_EXPORTER="console",
                   OTEL_METRICS_EXPORTER="none", OTEL_LOGS_EXPORTER="none", OTEL_SERVICE_NAME="zero-code")
        done = subprocess.run([command, sys.executable, "-c", code.format(url=server.url + "/v1", ask=ASK)],
                              capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "stop"
    start = done.stdout.index("{")
    span = json.JSONDecoder().raw_decode(done.stdout[start:])[0]
    assert span["name"] == "chat gpt-tel" and span["attributes"]["gen_ai.usage.input_tokens"] == 1200
    assert span["resource"]["attributes"]["service.name"] == "zero-code"


# -- telemetry never breaks the work: a span processor that raises (issue 37 B8, O04) ---------------------------------


class _Raising(object):
    """A SpanProcessor whose every hook raises (a broken exporter called synchronously)."""

    def __init__(self):
        self.calls = 0

    def on_start(self, span, parent_context=None):
        self.calls += 1
        raise RuntimeError("processor on_start broke")

    def on_end(self, span):
        self.calls += 1
        raise RuntimeError("processor on_end broke")

    def shutdown(self):
        pass

    def force_flush(self, timeout_millis=30000):
        return True


@needs_call_hooks
@pytest.mark.skipif(not _runner_wired(), reason="the tool runner is not wired to telemetry in this tree")
def test_a_raising_span_processor_breaks_no_tool_run(otel):
    from agenthub import AutoLLMClient
    from sse_server import Answer, SSEServer

    raising = _Raising()
    otel.tracer_provider.add_span_processor(raising)
    otel.start()

    def get_weather(city: str) -> str:
        """The weather in a city."""
        return "18 C in " + city

    with SSEServer() as server:
        server.answers.extend([Answer([_read(FIXTURES, "chat_tool.sse")]), Answer([_read(FIXTURES, "chat_cached.sse")])])
        client = AutoLLMClient("gpt-tel", api_key="k", base_url=server.url + "/v1", client_type="openai-chat",
                               max_retries=0)
        result = client.run(ASK, tools=[get_weather]).result()
    assert result.stop == "done" and result.turns == 2
    assert result.messages[1]["content_items"][0]["text"] == "18 C in Paris"
    assert raising.calls > 0  # it was called, and raised, at every span


@needs_call_hooks
@pytest.mark.parametrize("broken", ["on_start", "on_end"])
def test_a_raising_span_processor_still_counts_each_call_once(otel, broken):
    """A processor whose on_start or on_end raises loses the call's span, never its metrics: the duration and
    the tokens are recorded once per call (they were recorded never: the failure left the hook before them)."""
    raising = _Raising()
    if broken == "on_end":
        raising.on_start = lambda span, parent_context=None: None
        raising._on_ending = lambda span: None  # (the SDK calls it before on_end, where it has it)
    otel.tracer_provider.add_span_processor(raising)
    otel.start()
    for _ in range(2):
        events, _ = _agenthub_call("openai-chat", "gpt-tel", "/v1", _read(FIXTURES, "chat_cached.sse"))
        assert events[-1]["event_type"] == "stop"
    assert raising.calls == 2  # the broken hook of each call's span, each raised
    metrics = metrics_of(otel.reader)
    assert sum(p.count for _, p in metrics["gen_ai.client.operation.duration"]) == 2
    tokens = {}  # (two servers: two ports, two points of each)
    for attrs, point in metrics["gen_ai.client.token.usage"]:
        total, count = tokens.get(attrs["gen_ai.token.type"], (0, 0))
        tokens[attrs["gen_ai.token.type"]] = (total + point.sum, count + point.count)
    assert tokens == {"input": (2400, 2), "output": (600, 2)}
    assert telemetry.hook._state.hook._calls == {}


@pytest.mark.skipif(not _mcp_wired(), reason="the MCP client is not wired to telemetry in this tree")
def test_a_raising_span_processor_breaks_no_mcp_call(otel):
    from agenthub import mcp
    from mcp_support import FAKE_HTTP, Subprocess

    raising = _Raising()
    otel.tracer_provider.add_span_processor(raising)
    otel.start()
    fake = Subprocess([FAKE_HTTP, "modern"])
    try:
        with telemetry.agent_span("caller"):
            with mcp.connect(fake.url, timeout=10) as server:
                assert server.call_tool("echo", {"text": "hi"})["text"] == "hi"
    finally:
        fake.stop()
    assert raising.calls > 0


def test_a_span_that_cannot_start_is_the_noop_handle(otel, caplog):
    raising = _Raising()
    otel.tracer_provider.add_span_processor(raising)
    otel.start()
    with caplog.at_level("DEBUG", logger="agenthub"):
        handles = [telemetry.agent_span("a"), telemetry.tool_span("t", "c1"), telemetry.mcp_span("tools/list"),
                   telemetry.workflow_span("w")]
    assert all(handle is telemetry._NOOP for handle in handles)
    assert "was not started" in caplog.text
