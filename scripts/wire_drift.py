#!/usr/bin/env python3
"""Wire drift: what the official SDKs know against what agenthub's dialects map.

For each wire (openai-chat, openai-responses, anthropic, gemini, gemini-interactions, bedrock) the
installed SDK (openai, anthropic, google-genai, botocore) is introspected for its request parameters,
usage fields, finish/stop reasons, streaming event types, item / block / step types and the API
version it sends (pydantic ``model_fields``, request TypedDicts, ``Literal`` unions, google.genai's
enums, botocore's bedrock-runtime service model).  Every name is either *mapped* (the dialect reads or
writes it: tests/test_wire_drift.py checks each mapped name occurs, quoted, in the dialect's source) or
*ignored* on purpose, with a one-line why, in the tables below.  A name the SDK knows and the tables do
not is *unknown*; a name the tables list and the SDK no longer knows is *gone*.  Either means the wire
moved.

    python scripts/wire_drift.py            # the report; exit 0 when nothing moved, 1 when something did
    python scripts/wire_drift.py --json     # the same as JSON
    python scripts/wire_drift.py --wire anthropic

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

CATEGORIES = ("request", "usage", "finish", "events", "items", "version")


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
        "version": _openai_version(),
    }


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
        "version": _openai_version(),
    }


def _anthropic() -> Dict[str, Set[str]]:
    import anthropic
    from anthropic import types as t
    from anthropic.types import message_create_params as create
    client = anthropic.Anthropic(api_key="drift", base_url="http://127.0.0.1:9")
    try:
        version = {"{}: {}".format(k, v) for k, v in client.default_headers.items() if k.lower() == "anthropic-version"}
    finally:
        client.close()
    return {
        "request": params(create.MessageCreateParamsBase),
        "usage": fields(t.Usage) | fields(t.MessageDeltaUsage),
        "finish": literals(t.StopReason),
        "events": literals(t.RawMessageStreamEvent),
        "items": {"block:" + s for s in literals(t.ContentBlock)} | {"delta:" + s for s in literals(t.RawContentBlockDelta)},
        "version": version,
    }


def _genai_version() -> str:
    from google.genai import _api_client
    return _api_client.GOOGLE_AI_API_DEFAULT_VERSION


def _gemini() -> Dict[str, Set[str]]:
    from google.genai import types as t
    return {
        "request": {camel(n) for n in t.GenerationConfig.model_fields},  # generationConfig's members (the wire's names)
        "usage": {camel(n) for n in t.GenerateContentResponseUsageMetadata.model_fields},
        "finish": {m.value for m in t.FinishReason},
        "items": {"part:" + camel(n) for n in t.Part.model_fields},
        "version": {"path: " + _genai_version()},
    }


def _gemini_interactions() -> Dict[str, Set[str]]:
    from google.genai._gaos import google_genai
    from google.genai._gaos.types import interactions as i
    return {
        "request": fields(i.CreateModelInteraction) | fields(i.GenerationConfig, "generation_config."),
        "usage": fields(i.Usage),
        "finish": literals(i.Interaction.model_fields["status"].annotation),
        "events": literals(i.InteractionSSEEvent, "event_type"),
        "items": {"step:" + s for s in literals(i.StepStart.model_fields["step"].annotation)}
        | {"delta:" + s for s in literals(i.StepDelta.model_fields["delta"].annotation)},
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
        "usage": set(model.shape_for("TokenUsage").members),
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
