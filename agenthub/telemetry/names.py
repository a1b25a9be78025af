"""The names agenthub's GenAI telemetry writes: the semantic conventions' attribute and metric names
(v1.41; ``tests/test_telemetry.py`` checks each against ``opentelemetry-semantic-conventions``), the newer
names of ``gen_ai_latest_experimental``, the metric buckets, the environment variables, and the provider
and operation names of a route (``provider_name``, ``operation_name``).  No ``opentelemetry`` import."""


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
MCP_RESOURCE_URI = "mcp.resource.uri"
JSONRPC_REQUEST_ID = "jsonrpc.request.id"
RPC_RESPONSE_STATUS_CODE = "rpc.response.status_code"
OPENAI_API_TYPE = "openai.api.type"
OPENAI_REQUEST_SERVICE_TIER = "openai.request.service_tier"
OPENAI_RESPONSE_SERVICE_TIER = "openai.response.service_tier"
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
#: latest: gen_ai.client.token.usage is replaced by one counter per count, each with gen_ai.token.modality (a name
#: newer than v1.41: not in opentelemetry-semantic-conventions) ...
LATEST_USAGE_COUNTERS = {
    "input": "gen_ai.client.inference.usage.input_tokens",
    "output": "gen_ai.client.inference.usage.output_tokens",
    "cache_read": "gen_ai.client.inference.usage.cache_read.input_tokens",
    "cache_write": "gen_ai.client.inference.usage.cache_write.input_tokens",
    "reasoning": "gen_ai.client.inference.usage.reasoning.output_tokens",
}
LATEST_TOKEN_MODALITY = "gen_ai.token.modality"
#: ... and by a histogram each for the input and output counts of one operation
LATEST_USAGE_HISTOGRAMS = {
    "input": "gen_ai.client.inference.operation.input_tokens",
    "output": "gen_ai.client.inference.operation.output_tokens",
}

#: the conventions' ExplicitBucketBoundaries
DURATION_BUCKETS = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92)
TOKEN_BUCKETS = (1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864)

CAPTURE_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
OPT_IN_ENV = "OTEL_SEMCONV_STABILITY_OPT_IN"
CAPTURE_MODES = ("NO_CONTENT", "SPAN_ONLY", "EVENT_ONLY", "SPAN_AND_EVENT")
DETAILS_EVENT = "gen_ai.client.inference.operation.details"
SCOPE = "agenthub"

# -- gen_ai.provider.name, gen_ai.operation.name: facts of the rows (agenthub.hosts, agenthub.registry) --------


def provider_name(client_type: str, host: str = "") -> str:
    """``gen_ai.provider.name`` of a route: the client-type row's ``provider`` (``anthropic``,
    ``gcp.gemini``, ``gcp.vertex_ai``, ``aws.bedrock``, ``azure.ai.openai``, ...); for a dialect other vendors
    speak (Chat Completions, Responses) the well-known value of the vendor whose host ``host`` is
    (``deepseek``, ``moonshot_ai``, ...; ``agenthub.registry.provider_name``), else ``openai``."""
    from .. import registry

    return registry.provider_name(client_type, host)


def operation_name(client_type: str, embeddings: bool = False) -> str:
    """``gen_ai.operation.name``: ``embeddings``, else the dialect's (``Dialect.operation``:
    ``generate_content`` for the Gemini dialects, ``chat``); a client type with no row (none of
    agenthub's): ``chat``, the conventions' operation of a model call."""
    if embeddings:
        return "embeddings"
    from .. import hosts

    row = hosts.CLIENT_TYPES.get(client_type)
    return row.facts.operation if row is not None else "chat"
