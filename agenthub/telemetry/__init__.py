"""OpenTelemetry GenAI telemetry: every call as a ``chat`` / ``generate_content`` / ``embeddings`` span with
the GenAI semantic conventions' attributes and metrics, tool runs and MCP requests as spans beside it.

``instrument(tracer_provider=None, meter_provider=None, capture_content=None)`` registers one process-wide
hook on the attempt loop (``agenthub.attempts.register``); ``uninstrument()`` removes it.  Its module ``hook`` is
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

The package: ``names`` (the conventions' names, ``provider_name``, ``operation_name``), ``hook``
(``instrument``, the call hook ``GenAIHook``), ``spans`` (the tool runner's, the MCP client's and the job
runner's spans); every public name is here.
"""

from .names import (GEN_AI_OPERATION_NAME, GEN_AI_PROVIDER_NAME, GEN_AI_REQUEST_MODEL,
                    GEN_AI_REQUEST_MAX_TOKENS, GEN_AI_REQUEST_TEMPERATURE, GEN_AI_REQUEST_TOP_P,
                    GEN_AI_REQUEST_SEED, GEN_AI_REQUEST_STOP_SEQUENCES, GEN_AI_REQUEST_STREAM,
                    GEN_AI_REQUEST_ENCODING_FORMATS, GEN_AI_EMBEDDINGS_DIMENSION_COUNT,
                    GEN_AI_OUTPUT_TYPE, GEN_AI_RESPONSE_ID, GEN_AI_RESPONSE_MODEL,
                    GEN_AI_RESPONSE_FINISH_REASONS, GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK,
                    GEN_AI_USAGE_INPUT_TOKENS, GEN_AI_USAGE_OUTPUT_TOKENS,
                    GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS, GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS,
                    GEN_AI_USAGE_REASONING_OUTPUT_TOKENS, GEN_AI_INPUT_MESSAGES, GEN_AI_OUTPUT_MESSAGES,
                    GEN_AI_SYSTEM_INSTRUCTIONS, GEN_AI_TOOL_DEFINITIONS, GEN_AI_TOOL_NAME,
                    GEN_AI_TOOL_CALL_ID, GEN_AI_TOOL_TYPE, GEN_AI_TOOL_CALL_ARGUMENTS,
                    GEN_AI_TOOL_CALL_RESULT, GEN_AI_AGENT_NAME, GEN_AI_TOKEN_TYPE, SERVER_ADDRESS,
                    SERVER_PORT, ERROR_TYPE, MCP_METHOD_NAME, MCP_PROTOCOL_VERSION, MCP_SESSION_ID,
                    MCP_RESOURCE_URI,
                    JSONRPC_REQUEST_ID, RPC_RESPONSE_STATUS_CODE, OPENAI_API_TYPE, OPENAI_REQUEST_SERVICE_TIER,
                    OPENAI_RESPONSE_SERVICE_TIER, AGENTHUB_ROUTE_MODEL,
                    AGENTHUB_ROUTE_CLIENT_TYPE, AGENTHUB_ROUTE_HOST, AGENTHUB_ROUTE_INDEX,
                    AGENTHUB_ATTEMPTS, AGENTHUB_CACHE, GEN_AI_CLIENT_TOKEN_USAGE,
                    GEN_AI_CLIENT_OPERATION_DURATION, GEN_AI_CLIENT_OPERATION_TIME_TO_FIRST_CHUNK,
                    GEN_AI_CLIENT_OPERATION_TIME_PER_OUTPUT_CHUNK, LATEST, LATEST_USAGE_COUNTERS,
                    LATEST_TOKEN_MODALITY, LATEST_USAGE_HISTOGRAMS,
                    DURATION_BUCKETS, TOKEN_BUCKETS, CAPTURE_ENV, OPT_IN_ENV, CAPTURE_MODES,
                    DETAILS_EVENT, SCOPE, operation_name, provider_name)  # noqa: F401
from .hook import (GenAIHook, OpenTelemetryInstrumentor, _capture_mode, instrument, is_instrumented,
                   start_from_environment, uninstrument)  # noqa: F401
from .spans import (_NOOP, activate, agent_span, child_span, continue_trace, inject_meta, mcp_span,
                    tool_span, workflow_span)  # noqa: F401

__all__ = ["instrument", "uninstrument", "is_instrumented", "start_from_environment", "continue_trace",
           "workflow_span", "child_span", "activate", "OpenTelemetryInstrumentor", "agent_span", "tool_span", "mcp_span", "inject_meta",
           "provider_name", "operation_name"]
