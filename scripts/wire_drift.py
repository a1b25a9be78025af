#!/usr/bin/env python3
"""Wire drift: what the official SDKs know against what agenthub's dialects map.

For each wire (openai-chat, openai-responses, anthropic, gemini, gemini-interactions, bedrock) the
installed SDK (openai, anthropic, google-genai, botocore) is introspected for its request parameters,
usage fields, finish/stop reasons, streaming event types, item / block / step types and the API
version it sends (pydantic ``model_fields``, request TypedDicts, ``Literal`` unions, google.genai's
enums, botocore's bedrock-runtime service model).  Every name is either *mapped* (the dialect reads or
writes it: tests/test_wire_drift.py checks each mapped name occurs, quoted, in the dialect's source) or
*ignored* on purpose, with a one-line why, in the tables below.  A name the SDK knows and the tables do
not is *unknown*; a name the tables list and the SDK no longer knows is *gone*; a request field the dialect
sends and the SDK marks deprecated is reported too, unless the table says why it stays.  Each means the wire
moved.

    python scripts/wire_drift.py            # the report; exit 0 when nothing moved, 1 when something did
    python scripts/wire_drift.py --json     # the same as JSON
    python scripts/wire_drift.py --wire anthropic
    python scripts/wire_drift.py --source-root ../main   # what another checkout's dialects do not do

Exit 2 when an SDK is missing (nothing could be compared for that wire).  The tables hold the SDK
versions pinned in setup.cfg's test extra (PINNED below): on them the report is clean.
"""

import argparse
import json
import os
import re
import sys
import typing
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Set, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: the SDK versions the tables were written against (setup.cfg's test extra pins the same)
PINNED = {"openai": "3.63.0", "anthropic": "2.17.0", "google-genai": "3.6.1", "botocore": "1.44.18"}
#: the Python each pin is installed from (its Requires-Python; the marker in setup.cfg)
PINNED_PYTHON = {"openai": "3.10", "anthropic": "3.10", "google-genai": "3.11", "botocore": "3.10"}

CATEGORIES = ("request", "usage", "finish", "events", "items", "levels", "version")


# -- what the SDKs know -----------------------------------------------------------------------------------


def literals(tp: Any, field: str = "type", _seen: Optional[Set[int]] = None) -> Set[str]:
    """The string ``Literal`` values of ``tp``: through unions, aliases, Annotated and (for pydantic models)
    their ``field``."""
    seen = set() if _seen is None else _seen
    if id(tp) in seen:
        return set()
    seen.add(id(tp))
    if type(tp).__name__ == "TypeAliasType":
        return literals(tp.__value__, field, seen)
    if typing.get_origin(tp) is typing.Literal:
        return {a for a in typing.get_args(tp) if isinstance(a, str) and a != "UNKNOWN"}
    out = set()  # type: Set[str]
    for arg in typing.get_args(tp):
        out |= literals(arg, field, seen)
    fields = getattr(tp, "model_fields", None)
    if isinstance(fields, dict) and field in fields:
        out |= literals(fields[field].annotation, field, seen)
    return out


def params(typed_dict: Any) -> Set[str]:
    """The keys of a request TypedDict."""
    return set(typing.get_type_hints(typed_dict))


def fields(model: Any, prefix: str = "") -> Set[str]:
    return {prefix + name for name in model.model_fields}


def nested(model: Any, *names: str) -> Set[str]:
    """``name.member`` for the members of a pydantic model's nested (Optional) model fields ``names``."""
    out = set()  # type: Set[str]
    for name in names:
        for inner in typing.get_args(model.model_fields[name].annotation) or (model.model_fields[name].annotation,):
            if hasattr(inner, "model_fields"):
                out |= fields(inner, name + ".")
    return out


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _openai_chat() -> Dict[str, Set[str]]:
    from openai.types import completion_usage as cu
    from openai.types.chat import chat_completion_chunk as chunk, completion_create_params as create
    return {
        "request": params(create.CompletionCreateParamsBase),
        "usage": fields(cu.CompletionUsage) | fields(cu.PromptTokensDetails, "prompt_tokens_details.")
        | fields(cu.CompletionTokensDetails, "completion_tokens_details."),
        "finish": literals(chunk.Choice.model_fields["finish_reason"].annotation),
        "items": fields(chunk.ChoiceDelta),  # what a streamed delta carries
        "levels": _openai_efforts(),
        "version": _openai_version(),
    }


def _openai_efforts() -> Set[str]:
    from openai.types.shared import reasoning_effort
    return literals(reasoning_effort.ReasoningEffort)


def _openai_version() -> Set[str]:
    import openai
    client = openai.OpenAI(api_key="drift", base_url="http://127.0.0.1:9")
    try:
        return {"{}: {}".format(k, v) for k, v in client.default_headers.items() if "version" in k.lower()
                and not k.lower().startswith("x-stainless")}
    finally:
        client.close()


def _openai_responses() -> Dict[str, Set[str]]:
    from openai.types.responses import (response as resp, response_create_params as create, response_output_item as item,
                                        response_stream_event as event, response_usage as ru)
    return {
        "request": params(create.ResponseCreateParamsBase),
        "usage": fields(ru.ResponseUsage) | fields(ru.InputTokensDetails, "input_tokens_details.")
        | fields(ru.OutputTokensDetails, "output_tokens_details."),
        "finish": {"status:" + s for s in literals(resp.Response.model_fields["status"].annotation)}
        | {"incomplete:" + s for s in literals(resp.IncompleteDetails.model_fields["reason"].annotation)},
        "events": literals(event.ResponseStreamEvent),
        "items": literals(item.ResponseOutputItem),
        "levels": _openai_efforts(),
        "version": _openai_version(),
    }


def _anthropic() -> Dict[str, Set[str]]:
    import anthropic
    from anthropic import types as t
    from anthropic.types import message_create_params as create, output_config_param
    client = anthropic.Anthropic(api_key="drift", base_url="http://127.0.0.1:9")
    try:
        version = {"{}: {}".format(k, v) for k, v in client.default_headers.items() if k.lower() == "anthropic-version"}
    finally:
        client.close()
    return {
        "request": params(create.MessageCreateParamsBase),
        "usage": fields(t.Usage) | fields(t.MessageDeltaUsage) | nested(t.Usage, "cache_creation", "output_tokens_details",
                                                                         "server_tool_use"),
        "finish": literals(t.StopReason),
        "events": literals(t.RawMessageStreamEvent),
        "items": {"block:" + s for s in literals(t.ContentBlock)} | {"delta:" + s for s in literals(t.RawContentBlockDelta)},
        "levels": literals(typing.get_type_hints(output_config_param.OutputConfigParam)["effort"]),
        "version": version,
    }


def _genai_version() -> str:
    from google.genai import _api_client
    return _api_client.GOOGLE_AI_API_DEFAULT_VERSION


def deprecated(model: Any, prefix: str = "", wire_name: Callable[[str], str] = lambda name: name) -> Set[str]:
    """The fields of a pydantic model its SDK marks deprecated (``Field(deprecated=...)``, or google.genai's
    "Deprecated:" in the description)."""
    out = set()  # type: Set[str]
    for name, field in model.model_fields.items():
        if field.deprecated or "Deprecated:" in (field.description or ""):
            out.add(prefix + wire_name(name))
    return out


def _gemini() -> Dict[str, Set[str]]:
    from google.genai import types as t
    return {
        "deprecated": deprecated(t.GenerationConfig, wire_name=camel),
        # generationConfig's members (the wire's names), the tool kinds, function calling's members and modes
        "request": {camel(n) for n in t.GenerationConfig.model_fields} | {"tool:" + camel(n) for n in t.Tool.model_fields}
        | {"functionCallingConfig." + camel(n) for n in t.FunctionCallingConfig.model_fields}
        | {"mode:" + m.value for m in t.FunctionCallingConfigMode},
        "usage": {camel(n) for n in t.GenerateContentResponseUsageMetadata.model_fields},
        "finish": {m.value for m in t.FinishReason},
        "items": {"part:" + camel(n) for n in t.Part.model_fields} | {"call:" + camel(n) for n in t.FunctionCall.model_fields}
        | {"result:" + camel(n) for n in t.FunctionResponse.model_fields},
        "levels": {m.value for m in t.ThinkingLevel},
        "version": {"path: " + _genai_version()},
    }


def _gemini_interactions() -> Dict[str, Set[str]]:
    from google.genai._gaos import google_genai
    from google.genai._gaos.types import interactions as i
    return {
        "deprecated": deprecated(i.CreateModelInteraction) | deprecated(i.GenerationConfig, "generation_config."),
        "request": fields(i.CreateModelInteraction) | fields(i.GenerationConfig, "generation_config.")
        | {"tool:" + s for s in literals(i.CreateModelInteraction.model_fields["tools"].annotation)}
        | {"tool_choice:" + s for s in literals(i.GenerationConfig.model_fields["tool_choice"].annotation)},
        "usage": fields(i.Usage),
        "finish": literals(i.Interaction.model_fields["status"].annotation),
        "events": literals(i.InteractionSSEEvent, "event_type"),
        "items": {"step:" + s for s in literals(i.StepStart.model_fields["step"].annotation)}
        | {"delta:" + s for s in literals(i.StepDelta.model_fields["delta"].annotation)},
        "levels": literals(i.GenerationConfig.model_fields["thinking_level"].annotation),
        "version": {"path: " + _genai_version(), "Api-Revision: " + google_genai.GOOGLE_GENAI_API_REVISION},
    }


def _bedrock() -> Dict[str, Set[str]]:
    import botocore.session
    model = botocore.session.get_session().get_service_model("bedrock-runtime")
    stream = model.operation_model("ConverseStream")
    converse = model.operation_model("Converse")
    request = set(stream.input_shape.members) | set(converse.input_shape.members)
    request |= {"inferenceConfig." + n for n in stream.input_shape.members["inferenceConfig"].members}
    return {
        "request": request,
        "usage": set(model.shape_for("TokenUsage").members)
        | {"cacheDetails." + n for n in model.shape_for("TokenUsage").members["cacheDetails"].member.members},
        "finish": set(model.shape_for("StopReason").enum),
        "events": set(stream.output_shape.members["stream"].members),
        "items": {"block:" + n for n in model.shape_for("ContentBlock").members}
        | {"delta:" + n for n in model.shape_for("ContentBlockDelta").members}
        | {"start:" + n for n in model.shape_for("ContentBlockStart").members},
        "version": {"apiVersion: " + model.api_version},
    }


#: wire -> (its SDK's distribution, collector)
WIRES = {
    "openai-chat": ("openai", _openai_chat),
    "openai-responses": ("openai", _openai_responses),
    "anthropic": ("anthropic", _anthropic),
    "gemini": ("google-genai", _gemini),
    "gemini-interactions": ("google-genai", _gemini_interactions),
    "bedrock": ("botocore", _bedrock),
}


# -- what agenthub maps ---------------------------------------------------------------------------------------
#
# Per wire: the dialect's source files, then per category ``mapped`` (names, space-separated; the token the
# source must hold, quoted, is the name after its ``kind:`` prefix, a nested request or usage member's last ``.`` segment, or the value of a
# ``header: value``; ``name@token`` names another token), ``ignored`` (why -> names) and, where the mapping
# lives elsewhere, ``sources`` of its own.

_SERVER_TOOLS = "a server-side tool the data model has no item for (the dialect skips it or carries it opaquely)"

TABLES = {
    "openai-chat": {
        "sources": ("agenthub/providers/openai_chat.py",),
        "request": {
            "mapped": "model messages max_completion_tokens max_tokens temperature top_p stop seed tools tool_choice "
                      "response_format reasoning_effort service_tier stream_options prompt_cache_options "
                      "prompt_cache_retention",
            "ignored": {
                "sampling knobs outside the data model (extra_body sends them)":
                    "frequency_penalty presence_penalty logit_bias logprobs top_logprobs n verbosity prediction",
                "audio output / modalities: the Chat dialect streams text and tool calls only": "audio modalities",
                "deprecated function calling (tools replace it)": "functions function_call",
                "account-side bookkeeping, not the call (extra_body sends them)":
                    "metadata user safety_identifier store prompt_cache_key moderation",
                "parallel tool calls are the server's default; agenthub never turns them off":
                    "parallel_tool_calls",
                "a hosted tool the data model has no item for": "web_search_options",
            },
        },
        "usage": {
            "mapped": "prompt_tokens completion_tokens total_tokens prompt_tokens_details completion_tokens_details "
                      "prompt_tokens_details.cached_tokens prompt_tokens_details.cache_write_tokens "
                      "completion_tokens_details.reasoning_tokens",
            "ignored": {
                "per-modality breakdowns: Usage has no modality split (the totals hold them)":
                    "prompt_tokens_details.audio_tokens prompt_tokens_details.image_tokens "
                    "prompt_tokens_details.text_tokens completion_tokens_details.audio_tokens "
                    "completion_tokens_details.text_tokens",
                "predicted outputs are not sent, so never counted": "completion_tokens_details.accepted_prediction_tokens "
                                                                    "completion_tokens_details.rejected_prediction_tokens",
            },
        },
        "finish": {
            "mapped": "stop length tool_calls function_call",
            "ignored": {"no finish_reason of its own: unknown (the text so far is kept)": "content_filter"},
        },
        "items": {
            "mapped": "content tool_calls refusal role function_call",
            "ignored": {"audio output is not requested": "audio"},
        },
        "levels": {
            "sources": ("agenthub/types.py",),  # reasoning_effort is ThinkingLevel's value as is
            "mapped": "none low medium high xhigh max",
            "ignored": {"no ThinkingLevel names it (Chat sends the caller's level as is)": "minimal"},
        },
        "version": {"mapped": "", "ignored": {}},
    },
    "openai-responses": {
        "sources": ("agenthub/providers/openai_responses.py",),
        "request": {
            "mapped": "model input instructions max_output_tokens temperature top_p tools tool_choice text reasoning "
                      "include store background previous_response_id service_tier context_management "
                      "prompt_cache_options prompt_cache_retention",
            "ignored": {
                "sent only by count_tokens or left to the server's default": "parallel_tool_calls truncation conversation",
                "account-side bookkeeping, not the call (extra_body sends them)":
                    "metadata user safety_identifier prompt_cache_key moderation access_programs",
                "stored prompts / hosted features outside the data model": "prompt image max_tool_calls",
                "logprobs are not part of the data model": "top_logprobs",
                "stream options: agenthub always streams and reads usage from response.completed":
                    "stream_options background_options",
            },
        },
        "usage": {
            "mapped": "input_tokens output_tokens total_tokens input_tokens_details output_tokens_details "
                      "input_tokens_details.cached_tokens input_tokens_details.cache_write_tokens "
                      "output_tokens_details.reasoning_tokens",
            "ignored": {"the write's TTL split: OpenAI prices every write the same (cache_write_tokens holds the total)":
                        "input_tokens_details.cache_write_tokens_details"},
        },
        "finish": {
            "mapped": "status:completed status:incomplete status:failed status:cancelled "
                      "incomplete:max_output_tokens",
            "ignored": {
                "not terminal: the stream goes on": "status:queued status:in_progress",
                "no finish_reason of its own: unknown": "incomplete:content_filter incomplete:max_messages "
                                                          "incomplete:steered",
            },
        },
        "events": {
            "mapped": "response.output_text.delta response.refusal.delta response.function_call_arguments.delta "
                      "response.function_call_arguments.done response.custom_tool_call_input.delta "
                      "response.custom_tool_call_input.done response.reasoning_summary_text.delta "
                      "response.reasoning_text.delta response.output_item.added response.output_item.done "
                      "response.completed response.incomplete response.failed error response.created "
                      "response.in_progress response.queued",
            "ignored": {
                "parts and their .done repeat what the deltas and output_item.done carry":
                    "response.content_part.added response.content_part.done response.reasoning_summary_part.added "
                    "response.reasoning_summary_part.done response.output_text.done response.refusal.done "
                    "response.reasoning_summary_text.done response.reasoning_text.done",
                "audio output is not requested": "response.audio.delta response.audio.done "
                                                 "response.audio.transcript.delta response.audio.transcript.done",
                "server tool progress: its item arrives whole in output_item.done":
                    "response.code_interpreter_call.in_progress response.code_interpreter_call.interpreting "
                    "response.code_interpreter_call.completed response.code_interpreter_call_code.delta "
                    "response.code_interpreter_call_code.done response.file_search_call.in_progress "
                    "response.file_search_call.searching response.file_search_call.completed "
                    "response.image_generation_call.generating response.image_generation_call.in_progress "
                    "response.image_generation_call.partial_image response.image_generation_call.completed "
                    "response.mcp_call.in_progress response.mcp_call.completed response.mcp_call.failed "
                    "response.mcp_call_arguments.delta response.mcp_call_arguments.done "
                    "response.mcp_list_tools.in_progress response.mcp_list_tools.completed "
                    "response.mcp_list_tools.failed response.web_search_call.in_progress "
                    "response.web_search_call.searching response.web_search_call.completed "
                    "response.shell_call_command.added response.shell_call_command.delta "
                    "response.shell_call_command.done response.shell_call_output_content.delta "
                    "response.shell_call_output_content.done response.compaction.compacting",
                "annotations (citations) are not part of the data model": "response.output_text.annotation.added",
            },
        },
        "items": {
            "mapped": "message reasoning function_call custom_tool_call custom_tool_call_output function_call_output "
                      "compaction image_generation_call apply_patch_call computer_call local_shell_call shell_call "
                      "mcp_list_tools mcp_call mcp_approval_request tool_search_call",
            "ignored": {
                _SERVER_TOOLS: "code_interpreter_call file_search_call web_search_call tool_search_output "
                               "program program_output additional_tools",
                "outputs of client-side actions: input items the caller sends, never streamed to agenthub":
                    "apply_patch_call_output computer_call_output local_shell_call_output shell_call_output "
                    "mcp_approval_response",
            },
        },
        "levels": {"mapped": "none minimal low medium high xhigh max", "ignored": {}},
        "version": {"mapped": "", "ignored": {}},
    },
    "anthropic": {
        "sources": ("agenthub/providers/anthropic.py",),
        "request": {
            "mapped": "model messages system max_tokens stop_sequences tools tool_choice thinking output_config speed "
                      "cache_control",
            "ignored": {
                "account-side bookkeeping, not the call (extra_body sends them)":
                    "metadata service_tier inference_geo workspace_id user_profile_id diagnostics",
                "code-execution containers: a server tool the data model has no item for": "container",
            },
        },
        "usage": {
            "mapped": "input_tokens output_tokens cache_read_input_tokens cache_creation_input_tokens cache_creation "
                      "cache_creation.ephemeral_5m_input_tokens cache_creation.ephemeral_1h_input_tokens speed",
            "ignored": {
                "server tool call counts: billed per call, not per token (no bucket in Usage)":
                    "server_tool_use server_tool_use.web_search_requests server_tool_use.web_fetch_requests",
                "thinking's share of output_tokens: not split out yet (the thoughts bucket stays empty on this wire; "
                "the total is billed as output either way)": "output_tokens_details.thinking_tokens",
                "echoes of the request": "service_tier inference_geo",
                "a breakdown of output_tokens (thinking is inside it, as the API bills)": "output_tokens_details",
            },
        },
        "finish": {
            "mapped": "end_turn stop_sequence max_tokens tool_use",
            "ignored": {"no finish_reason of their own: unknown (docs/providers.md)":
                        "pause_turn refusal model_context_window_exceeded"},
        },
        "events": {
            "mapped": "message_start message_delta message_stop content_block_start content_block_delta "
                      "content_block_stop",
            "ignored": {},
        },
        "items": {
            "mapped": "block:text block:thinking block:redacted_thinking block:tool_use delta:text_delta "
                      "delta:thinking_delta delta:signature_delta delta:input_json_delta delta:citations_delta",
            "ignored": {
                "server tool blocks: carried whole as a server_block (replayed byte for byte)":
                    "block:server_tool_use block:web_search_tool_result block:web_fetch_tool_result "
                    "block:code_execution_tool_result block:bash_code_execution_tool_result "
                    "block:text_editor_code_execution_tool_result block:tool_search_tool_result "
                    "block:container_upload",
            },
        },
        "levels": {"mapped": "low medium high xhigh max", "ignored": {}},
        "version": {"mapped": "anthropic-version: 2026-10-21", "ignored": {}},
    },
    "gemini": {
        "sources": ("agenthub/providers/gemini.py",),
        "request": {
            "mapped": "maxOutputTokens temperature topP stopSequences seed thinkingConfig responseMimeType "
                      "responseSchema responseJsonSchema responseModalities speechConfig tool:functionDeclarations "
                      "functionCallingConfig.mode functionCallingConfig.allowedFunctionNames "
                      "functionCallingConfig.streamFunctionCallArguments mode:AUTO mode:ANY mode:NONE",
            "deprecated": {"still taken by generateContent, Vertex AI's included; 1.x / 2.0 models know no "
                           "responseFormat list (move when the API drops them)": "responseMimeType responseSchema"},
            "ignored": {
                "sampling knobs outside the data model (extra_body sends them)":
                    "topK candidateCount frequencyPenalty presencePenalty logprobs responseLogprobs",
                "Live / audio-session settings, not generateContent's text-and-tools turn":
                    "audioTimestamp audioTranscriptionConfig enableAffectiveDialog translationConfig",
                "model routing and media resolution are the caller's (extra_body)":
                    "routingConfig modelSelectionConfig mediaResolution enableEnhancedCivicAnswers",
                "the SDK's own polymorphic response format (the wire keeps responseMimeType/responseJsonSchema)":
                    "responseFormat",
                _SERVER_TOOLS: "tool:retrieval tool:computerUse tool:fileSearch tool:googleSearch tool:googleMaps "
                               "tool:codeExecution tool:enterpriseWebSearch tool:googleSearchRetrieval "
                               "tool:parallelAiSearch tool:urlContext tool:mcpServers tool:exaAiSearch",
                "the unset mode: agenthub sends a mode or no functionCallingConfig": "mode:MODE_UNSPECIFIED",
                "schema-validated calls: a strict tool is refused on Gemini (a declaration has no strict flag)":
                    "mode:VALIDATED",
            },
        },
        "usage": {
            "mapped": "promptTokenCount candidatesTokenCount cachedContentTokenCount thoughtsTokenCount "
                      "toolUsePromptTokenCount",
            "ignored": {
                "per-modality breakdowns: Usage has no modality split":
                    "promptTokensDetails candidatesTokensDetails cacheTokensDetails toolUsePromptTokensDetails",
                "the sum of the buckets (recomputed)": "totalTokenCount",
                "Vertex's pay-as-you-go / provisioned marker": "trafficType",
            },
        },
        "finish": {
            "mapped": "STOP MAX_TOKENS CONTINUATION FINISH_REASON_UNSPECIFIED",
            "ignored": {
                "no finish_reason of their own: unknown (docs/providers.md)":
                    "SAFETY RECITATION LANGUAGE OTHER BLOCKLIST PROHIBITED_CONTENT SPII MALFORMED_FUNCTION_CALL "
                    "IMAGE_SAFETY IMAGE_PROHIBITED_CONTENT IMAGE_OTHER NO_IMAGE IMAGE_RECITATION UNEXPECTED_TOOL_CALL "
                    "TOO_MANY_TOOL_CALLS MISSING_THOUGHT_SIGNATURE MALFORMED_RESPONSE ESCALATION PUP_LIMITED_DISABLED "
                    "MODEL_ARMOR",
            },
        },
        "items": {
            "mapped": "part:text part:thought part:thoughtSignature part:inlineData part:fileData part:functionCall "
                      "part:functionResponse call:id call:name call:args call:partialArgs call:willContinue "
                      "result:id result:name result:response result:parts",
            "ignored": {
                _SERVER_TOOLS: "part:executableCode part:codeExecutionResult part:toolCall part:toolResponse",
                "metadata of media parts the dialect does not send":
                    "part:videoMetadata part:audioMetadata part:documentMetadata part:spreadsheetMetadata "
                    "part:speechMetadata part:mediaResolution part:mediaProcessing part:partMetadata",
                "Live API transcription": "part:audioTranscription",
                "the NON_BLOCKING function-calling mode of the Live API (generateContent waits for each result)":
                    "result:willContinue result:scheduling",
            },
        },
        "levels": {
            "mapped": "MINIMAL@minimal LOW@low MEDIUM@medium HIGH@high XHIGH@xhigh",  # sent upper-cased
            "ignored": {"the unset value: agenthub sends no thinkingLevel instead": "THINKING_LEVEL_UNSPECIFIED"},
        },
        "version": {
            "mapped": "",
            "ignored": {"generateContent stays on v1beta, which every feature the dialect sends was written and "
                        "tested against (v1 not checked feature by feature)": "path: v1"},
        },
    },
    "gemini-interactions": {
        "sources": ("agenthub/providers/gemini_interactions.py",),
        "request": {
            "mapped": "model input stream store background previous_interaction_id system_instruction tools "
                      "response_format service_tier generation_config "
                      "generation_config.max_output_tokens generation_config.temperature generation_config.top_p "
                      "generation_config.stop_sequences generation_config.seed generation_config.thinking_level "
                      "generation_config.thinking_summaries generation_config.tool_choice tool:function "
                      "tool_choice:auto tool_choice:any tool_choice:none",
            "deprecated": {"the caller's own samplers are sent when given (deprecated, still taken; Gemini 3+ "
                           "tune their own)": "generation_config.temperature generation_config.top_p"},
            "ignored": {
                "refused before sending (image generation rides generateContent)": "generation_config.image_config",
                _SERVER_TOOLS: "tool:code_execution tool:computer_use tool:file_search tool:google_maps "
                               "tool:google_search tool:mcp_server tool:retrieval tool:tool_search tool:url_context",
                "schema-validated calls: a strict tool is refused (a function tool has no strict flag)":
                    "tool_choice:validated",
                "removed with the steps schema (May 2026): response_format carries the MIME type":
                    "response_mime_type",
                "server-side state agenthub does not manage (extra_body sends them)":
                    "cached_content continuation_token environment webhook_config labels",
                "safety thresholds are the caller's (extra_body)": "safety_settings",
                "modalities / media output configs outside the data model":
                    "response_modalities generation_config.speech_config generation_config.transcription_config "
                    "generation_config.video_config",
            },
        },
        "usage": {
            "mapped": "total_input_tokens total_output_tokens total_cached_tokens total_thought_tokens "
                      "total_tool_use_tokens",
            "ignored": {
                "per-modality breakdowns: Usage has no modality split":
                    "input_tokens_by_modality output_tokens_by_modality cached_tokens_by_modality "
                    "tool_use_tokens_by_modality",
                "the sum of the buckets (recomputed)": "total_tokens",
                "the first turn's share of total_input_tokens": "initial_input_tokens",
                "grounding calls are billed per call, not per token": "grounding_tool_count",
            },
        },
        "finish": {
            "mapped": "completed requires_action incomplete requires_continuation budget_exceeded failed",
            "ignored": {"not terminal: the stream goes on": "queued in_progress idle",
                        "no finish_reason of its own: unknown (a cancel is agenthub's own abort)": "cancelled"},
        },
        "events": {
            "mapped": "interaction.created interaction.status_update interaction.completed step.start step.delta "
                      "step.stop error",
            "ignored": {},
        },
        "items": {
            "mapped": "step:model_output step:thought step:function_call delta:text delta:thought_summary "
                      "delta:thought_signature delta:arguments_delta delta:image delta:audio delta:video",
            "ignored": {
                "the input echoed back in a whole Interaction (parse_document skips it)":
                    "step:user_input step:function_result delta:function_result",
                "a document delta: the model does not write documents the data model could hold": "delta:document",
                "citations are not part of the data model": "delta:text_annotation_delta",
                _SERVER_TOOLS: " ".join(kind + ":" + tool + "_" + part for kind in ("step", "delta")
                                        for tool in ("code_execution", "file_search", "google_maps", "google_search",
                                                     "mcp_server_tool", "processing", "retrieval", "tool_search",
                                                     "url_context")
                                        for part in ("call", "result")),
            },
        },
        "levels": {"sources": ("agenthub/providers/gemini.py",),  # generateContent's clamp, lower case
                   "mapped": "minimal low medium high xhigh", "ignored": {}},
        "version": {"mapped": "path: v1 Api-Revision: 2026-05-20", "ignored": {}},
    },
    "bedrock": {
        "sources": ("agenthub/providers/bedrock.py",),
        "request": {
            "mapped": "modelId messages system inferenceConfig inferenceConfig.maxTokens inferenceConfig.temperature "
                      "inferenceConfig.topP inferenceConfig.stopSequences toolConfig additionalModelRequestFields "
                      "outputConfig serviceTier",
            "ignored": {
                "guardrails, prompt management and request tags are the caller's account setup":
                    "guardrailConfig promptVariables requestMetadata projectIdentifier",
                "latency-optimised inference is a per-model account option (extra_body)": "performanceConfig",
                "model-specific response fields are not part of the data model": "additionalModelResponseFieldPaths",
            },
        },
        "usage": {
            "mapped": "inputTokens outputTokens totalTokens cacheReadInputTokens cacheWriteInputTokens cacheDetails "
                      "cacheDetails.ttl cacheDetails.inputTokens",
            "ignored": {},
        },
        "finish": {
            "mapped": "end_turn tool_use max_tokens stop_sequence",
            "ignored": {"no finish_reason of their own: unknown (docs/providers.md)":
                        "guardrail_intervened content_filtered malformed_model_output malformed_tool_use "
                        "model_context_window_exceeded"},
        },
        "events": {
            "mapped": "contentBlockStart contentBlockDelta contentBlockStop messageStop metadata "
                      "internalServerException modelStreamErrorException serviceUnavailableException "
                      "throttlingException validationException",
            "ignored": {"names the role only (always assistant)": "messageStart"},
        },
        "items": {
            "mapped": "block:text block:image block:document block:toolUse block:toolResult block:reasoningContent "
                      "block:cachePoint delta:text delta:toolUse delta:reasoningContent delta:image delta:toolResult "
                      "start:toolUse start:image start:toolResult",
            "ignored": {
                "media the dialect does not send (audio / video input)": "block:audio block:video",
                "guardrail-only content": "block:guardContent",
                "citations and search results are not part of the data model":
                    "block:citationsContent block:searchResult delta:citation",
                "dynamic tool lists mid-conversation: agenthub sends the whole tool list each call":
                    "block:toolAddition block:toolRemoval",
            },
        },
        "version": {
            "mapped": "",
            "ignored": {"rest-json: the service model's date is no header; the path /model/{id}/converse-stream "
                        "is what agenthub speaks": "apiVersion: 2023-09-30"},
        },
    },
}  # type: Dict[str, Dict[str, Any]]


# -- the comparison -------------------------------------------------------------------------------------------


def _split(names: str) -> List[str]:
    """Names of a table string; a version ``header: value`` keeps its space."""
    out = []  # type: List[str]
    for word in names.split():
        if out and out[-1].endswith(":") and not word.endswith(":"):
            out[-1] += " " + word
        else:
            out.append(word)
    return out


def mapped(wire: str, category: str) -> Dict[str, str]:
    """name -> the token the dialect's source must hold for it."""
    out = {}  # type: Dict[str, str]
    for entry in _split(TABLES[wire].get(category, {}).get("mapped", "")):
        name, _, token = entry.partition("@")
        if not token:
            token = name.split(": ", 1)[1] if ": " in name else name.split(":", 1)[-1]
            if category in ("request", "usage"):  # a nested member: its own name
                token = token.rsplit(".", 1)[-1]
        out[name] = token
    return out


def ignored(wire: str, category: str) -> Dict[str, str]:
    """name -> why."""
    out = {}  # type: Dict[str, str]
    for why, names in TABLES[wire].get(category, {}).get("ignored", {}).items():
        for name in _split(names):
            out[name] = why
    return out


def deprecated_ok(wire: str) -> Dict[str, str]:
    """Request names the dialect sends although the SDK deprecates them -> why."""
    out = {}  # type: Dict[str, str]
    for why, names in TABLES[wire].get("request", {}).get("deprecated", {}).items():
        for name in _split(names):
            out[name] = why
    return out


def unbacked(wire: str, root: str = ROOT) -> List[Tuple[str, str, str]]:
    """(category, name, token) of every mapped name whose token is not in the dialect's source, quoted (the
    checkout at ``root``: this one unless told)."""
    def read(paths: Iterable[str]) -> str:
        return "".join(open(os.path.join(root, path), encoding="utf-8").read() for path in paths)

    source = read(TABLES[wire]["sources"])
    out = []
    for category in CATEGORIES:
        own = TABLES[wire].get(category, {}).get("sources")
        text = read(own) if own else source
        for name, token in mapped(wire, category).items():
            if not re.search(r"[\"']" + re.escape(token) + r"[\"'/?]", text):
                out.append((category, name, token))
    return out


def sdk_version(dist: str) -> Optional[str]:
    try:
        from importlib import metadata
    except ImportError:  # pragma: no cover (Python < 3.8)
        return None
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def compare(wires: Iterable[str], root: str = ROOT) -> Dict[str, Any]:
    report = {"sdks": {}, "pinned": PINNED, "wires": {}, "unknown": 0, "gone": 0, "missing": [],
              "relocated": []}  # type: Dict[str, Any]
    for wire in wires:
        dist, collect = WIRES[wire]
        report["sdks"][dist] = sdk_version(dist)
        try:
            known = collect()
        except ImportError as exc:
            report["missing"].append("{} ({}: {})".format(wire, dist, exc))
            continue
        except (AttributeError, KeyError, TypeError) as exc:  # a type or module this script reads was moved
            report["relocated"].append("{} ({} {}: {}: {})".format(wire, dist, report["sdks"][dist],
                                                                   type(exc).__name__, exc))
            report["unknown"] += 1
            continue
        sent = set(mapped(wire, "request"))
        flagged = known.get("deprecated", set()) & sent  # request fields sent that the SDK deprecates
        rows = {}  # type: Dict[str, Any]
        for category in CATEGORIES:
            have = known.get(category, set())
            table = set(mapped(wire, category)) | set(ignored(wire, category))
            unknown = sorted(have - table)
            gone = table - have
            if category == "request":  # a deprecation accepted with a why that the SDK has lifted, or not sent
                gone |= set(deprecated_ok(wire)) - flagged
            rows[category] = {"sdk": len(have), "mapped": len(set(mapped(wire, category)) & have),
                              "ignored": len(set(ignored(wire, category)) & have), "unknown": unknown,
                              "gone": sorted(gone)}
            report["unknown"] += len(unknown)
            report["gone"] += len(gone)
        rows["unbacked"] = ["{}: {} ({!r})".format(*row) for row in unbacked(wire, root)]
        rows["deprecated"] = sorted(flagged - set(deprecated_ok(wire)))
        report["unknown"] += len(rows["unbacked"]) + len(rows["deprecated"])
        report["wires"][wire] = rows
    return report


def render(report: Mapping[str, Any]) -> str:
    lines = ["wire drift: agenthub's dialects against the official SDKs"]
    lines.append("SDKs: " + ", ".join("{} {}{}".format(d, v or "missing", "" if v == PINNED.get(d) else
                                                       " (pinned {})".format(PINNED.get(d)))
                                      for d, v in sorted(report["sdks"].items())))
    for wire, rows in report["wires"].items():
        lines.append("")
        lines.append(wire)
        for category in CATEGORIES:
            row = rows[category]
            if not row["sdk"] and not row["gone"]:
                continue
            lines.append("  {:<8} {:>3} known: {:>3} mapped, {:>3} ignored, {} unknown, {} gone".format(
                category, row["sdk"], row["mapped"], row["ignored"], len(row["unknown"]), len(row["gone"])))
            for name in row["unknown"]:
                lines.append("    + {}   (new: map it or list it as ignored, with why)".format(name))
            for name in row["gone"]:
                if category == "request" and name in deprecated_ok(wire):
                    lines.append("    - {}   (accepted as deprecated: the SDK no longer deprecates it, or it is not "
                                 "sent)".format(name))
                else:
                    lines.append("    - {}   (the SDK no longer knows it)".format(name))
        for entry in rows["unbacked"]:
            lines.append("    ! mapped but not in the dialect's source: " + entry)
        for name in rows["deprecated"]:
            lines.append("    ~ {}   (sent, and the SDK deprecates it: move off it or list why it stays)".format(name))
    for entry in report["missing"]:
        lines.append("")
        lines.append("not compared: " + entry)
    for entry in report["relocated"]:
        lines.append("")
        lines.append("not compared, the SDK's types moved (update the collector): " + entry)
    lines.append("")
    moved = report["unknown"] + report["gone"]
    lines.append("{} unknown, {} gone: {}".format(report["unknown"], report["gone"],
                                                 "nothing moved" if not moved else "the wire moved"))
    return "\n".join(lines)


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="the report as JSON")
    parser.add_argument("--wire", action="append", choices=sorted(WIRES), help="only this wire (repeatable)")
    parser.add_argument("--source-root", default=ROOT, metavar="CHECKOUT",
                        help="check the mapped names against another checkout's dialects (default: this one)")
    args = parser.parse_args(argv)
    report = compare(args.wire or list(WIRES), os.path.abspath(args.source_root))
    print(json.dumps(report, indent=2, sort_keys=True) if args.json else render(report))
    if report["missing"]:
        return 2
    return 1 if report["unknown"] or report["gone"] else 0


if __name__ == "__main__":
    sys.exit(main())
