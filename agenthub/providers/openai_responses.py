"""OpenAI Responses API (``POST {base_url}/responses``), and servers that speak it.

``build_request`` and ``parse_stream`` are pure.

Request (every turn is self-contained: nothing is stored server-side)
---------------------------------------------------------------------
- ``store: false``; for models that can reason, ``include: ["reasoning.encrypted_content"]``
  so the reasoning comes back encrypted and can be replayed on the next turn.  Models
  known not to reason (gpt-4*, gpt-3.5*, chatgpt-*, gpt-5-chat*) reject that include with
  a 400, so they get neither ``include`` nor ``reasoning``.
- ``instructions`` = system_prompt; ``max_output_tokens`` = max_tokens; ``temperature``
  (known reasoning models that only accept the default raise UnsupportedParameterError).
- tools -> ``{"type": "function", "name", "description", "parameters", "strict": false}``:
  an omitted ``strict`` means "strict when the schema allows it" on this API, which
  would make every optional property required; UniConfig tools are best-effort like
  Chat Completions.
- tool_choice ``auto`` / ``required`` / ``none`` as is; a list of names ->
  ``{"type": "allowed_tools", "mode": "required", "tools": [{"type": "function", "name"}]}``.
- thinking_level -> ``reasoning.effort``, clamped to what the model accepts
  (``EFFORTS``: a data table; the nearest supported effort, ties go up; never an error).
  Unknown models (other servers) get the level's own name.
- thinking_summary -> ``reasoning.summary: "auto"`` (the most detailed summarizer the
  model offers; ``concise`` is not available everywhere).  For models outside the table
  it is sent only together with an effort (some gateways read an effort-less
  ``reasoning`` object as "reasoning off").
- prompt_caching: GPT-5.6 and later (``cache_options``) -> ``prompt_cache_options`` (ENHANCE ``ttl: "12h"``,
  DISABLE ``mode: "explicit"``: only marked breakpoints cache); earlier models: ENHANCE ->
  ``prompt_cache_retention: "24h"``, DISABLE cannot be honoured (never both fields).  An item or message marked
  ``cache_breakpoint`` -> ``prompt_cache_breakpoint: {"mode": "explicit"}`` on its input part (a marked tool
  result's output goes as a list of parts); on an earlier model, on an assistant item or past 80 marks it raises.
- response_format -> ``text.format`` (``{"type": "json_schema", name, schema, strict}`` or
  ``{"type": "json_object"}``); ``top_p``; ``fast_mode`` -> ``service_tier: "priority"``; ``stop`` and
  ``seed`` raise (the API has neither).  Sampling parameters (``check_sampling``): GPT-5, the
  o-series, codex and pro models take none (a non-default temperature or any top_p raises);
  GPT-5.1 and later take them only at reasoning effort ``none`` (or the model's default).
  ThinkingLevel.MAX -> the model's top effort (``xhigh`` for models outside the table).

Input items, in the order of the messages and of their content items:

- user text / images -> ``{"type": "message", "role": "user", "content": [input_text,
  input_image ...]}``; a tool_result -> ``{"type": "function_call_output", "call_id",
  "output"}`` with ``output`` a plain string when the result is text only, else a list
  of ``input_text`` / ``input_image`` parts.  Content gathered so far is flushed before
  each tool output so the produced order is the order of the items.
- assistant text -> ``{"type": "message", "role": "assistant", "content": [output_text
  / refusal ...], "phase"?}``, one message per run of items with the same phase;
- assistant thinking that came from a Responses reasoning item (its fidelity carries a
  ``channel``) -> ``{"type": "reasoning", "summary": [...], "encrypted_content"?}``,
  ``summary`` always present (the text goes back in ``content`` as ``reasoning_text``
  when it streamed that way); thinking from other protocols is left out;
- tool_call -> ``{"type": "function_call", "call_id", "name", "arguments"}`` (JSON text);
  a tool_call that came from a custom tool call (fidelity ``{"type": "custom_tool_call"}``)
  -> ``{"type": "custom_tool_call", "call_id", "name", "input"}``, and its result ->
  ``custom_tool_call_output``.

No provider item id is ever recorded or sent, but those of the MCP items (below), which the input requires.

- ``mcp_servers`` -> one ``{"type": "mcp", "server_label": name, "server_url": url, "headers"?,
  "allowed_tools"?, "require_approval"?}`` tool each, after the function tools (no ``require_approval``
  given: the server's default, which asks for approval: set ``"never"`` for servers you trust).

Stream -> content items
-----------------------
- ``response.output_text.delta`` -> text (fidelity ``{"phase": ...}`` when the message
  item announced a phase); ``response.refusal.delta`` -> text with fidelity
  ``{"refusal": true}`` (and the phase);
- ``response.reasoning_summary_text.delta`` / ``response.reasoning_text.delta`` ->
  thinking; successive summary (or content) parts are separated by a blank line;
- a reasoning item's ``response.output_item.done`` -> an empty thinking item whose
  fidelity is ``{"channel": "summary"|"content", "encrypted_content"?, "parts"?,
  "signature"?, "format"?}`` (``parts``: the length of each part when there were
  several, so the replay rebuilds the summary list exactly).  A reasoning item still
  open when another item starts (OpenRouter sends its done after the message) has its
  text sealed then with the fidelity known so far; its done adds only what is new
  (encrypted content).  A done event is matched to the item announced under the same
  id even when its ``output_index`` differs (vLLM);
- function calls: ``output_item.added`` announces (call_id, name), argument deltas are
  fed by ``output_index``, ``function_call_arguments.done`` / ``output_item.done`` close
  the call (their full arguments are used when no delta came: servers that only send
  whole calls).  Interleaved parallel calls come out one after the other;
- custom (free-text) tool calls -> tool calls whose arguments are ``{"input": text}``
  (``custom_tool_call_input.delta`` pieces become JSON-escaped argument fragments),
  fidelity ``{"type": "custom_tool_call"}``;
- an ``image_generation_call``'s ``result`` -> inline_data (image/<output_format>);
  other built-in tool items (web/file search, code interpreter, ...) are not tool
  calls and are not replayed (their outcome is in the text that follows);
- the items of the MCP servers the provider calls (``config["mcp_servers"]``): ``mcp_list_tools``,
  ``mcp_call``, ``mcp_approval_request`` -> an empty text item carrying the finished item as it came
  (fidelity ``{"server_item": {...}}``; text streamed right after it joins that item; when text came
  before it, an empty text with fidelity ``{"ends_text": true}`` closes that text first).  They are
  never tool calls and never change the finish reason; a turn of such items alone is no empty answer.
  The replay sends each item back byte for byte, its ``id`` included (the Responses input types
  require it), then the text it carried;
- items that only arrive whole (``output_item.done`` without deltas, or only in the
  final ``response.output``) are emitted from there; an item of the final output already
  seen on the wire (same id or call_id, else same position and type, else the next streamed
  item of its type: relays renumber ids, LiteLLM's bridge streams every item at index 0) is
  not emitted again, but fills in what the streamed item lacked: a reasoning item's
  ``encrypted_content`` / signature / texts (LiteLLM sends the encrypted reasoning only in
  ``response.completed``) go out on an item whose fidelity says ``supplements: n`` (the n-th
  reasoning item of the turn), which the replay merges into that reasoning item; a call
  finished without its call_id or arguments waits for the final response; a message's text
  or an image result that never streamed comes from it;
- items asking the caller to act for tools a UniConfig cannot declare (``local_shell_call``,
  ``shell_call``, ``apply_patch_call``, ``computer_call``, a client-executed ``tool_search_call``): beside an answer they are left out (a warning is
  logged); alone, EmptyResponseError names them (``.item_types``);
- ``response.completed`` -> finish ``stop`` (the driver makes it ``tool_call`` when
  calls were made); ``response.incomplete`` -> ``length`` when
  ``incomplete_details.reason`` is ``max_output_tokens``, else ``unknown``;
  ``response.failed`` and ``error`` events -> UpstreamError with the provider's
  type/code/message; keepalives and unknown events are ignored; the event type is read
  from the data (``event:`` lines are optional); a trailing ``[DONE]`` is fine.
- Usage: cached = ``input_tokens_details.cached_tokens``, prompt = input - cached (its
  ``cache_write_tokens`` ride along as ``Usage.cache_write``),
  thoughts = ``output_tokens_details.reasoning_tokens``, response = output - thoughts.
"""

import json
import logging
import re
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple

from ..errors import EmptyResponseError, StreamProtocolError, upstream_error
from ..resume import resource_segment
from ..sse import SSEEvent
from ..stream import StreamEnd, with_image_tool_calls, with_service_tier
from ..toolcalls import ToolCallAssembler
from ..typeschema import DATA_KEYWORDS
from ..types import HttpRequest, PromptCaching, ThinkingLevel
from ..validate import cache_marks, count_marks
from ._common import NOTES, Encoded, Prior, Resumed, keep, marks_resumed, noting, start
from ._common import (COMPACTION_FORMAT, Count, Resume, after_compaction, left_out, DONE, payloads, openai_models_request, parse_data_list, Endpoint, Protocol, check_response_format, data_uri, documents, dumps,
                      inclusive_usage, nearest, parse_data_uri, pdf_url, request_headers,
                      unfinished_document, unsupported)
from ._common import OPENAI_IMAGE_TYPES, answer_bytes, check_image_type, check_still
from .._jsondepth import loads as _json_loads

__all__ = ["build_request", "parse_stream", "map_usage", "model_profile", "clamp_effort", "check_sampling",
           "text_format", "EFFORTS", "parse_document", "cache_options", "check_breakpoints", "BREAKPOINT",
           "CACHE_OPTIONS_MODELS"]

logger = noting(logging.getLogger("agenthub"))

#: wire efforts, lightest first ("max" only where a model lists it: ThinkingLevel.MAX rides the top effort)
EFFORT_SCALE = ("none", "minimal", "low", "medium", "high", "xhigh", "max")

#: (pattern matched at the start of the model name, after any "vendor/" prefix, lower-cased;
#:  the reasoning efforts the model accepts, or None for a model that does not reason).
#: First match wins.  Models matching no row are other servers' models: the level is sent as named.
EFFORTS = (
    (r"gpt-3\.5|gpt-4|chatgpt-|gpt-5-chat", None),
    (r"gpt-5(-\d{4}-\d{2}-\d{2})?-pro", ("high",)),
    (r"gpt-5-codex", ("low", "medium", "high")),
    (r"gpt-5(-mini|-nano)?(-\d{4}-\d{2}-\d{2})?$", ("minimal", "low", "medium", "high")),
    (r"gpt-5\.1-codex-max", ("low", "medium", "high", "xhigh")),
    (r"gpt-5\.1-codex", ("low", "medium", "high")),
    (r"gpt-5\.\d+-chat", ("medium",)),
    (r"gpt-5\.1", ("none", "low", "medium", "high")),
    (r"gpt-5\.\d+-codex", ("low", "medium", "high", "xhigh")),
    (r"gpt-5\.\d+-pro", ("medium", "high", "xhigh")),
    (r"gpt-(5\.\d+|[6-9]|\d{2,})", ("none", "low", "medium", "high", "xhigh")),
    (r"o\d|codex-mini", ("low", "medium", "high")),
)
_EFFORT_ROWS = tuple((re.compile(pattern), efforts) for pattern, efforts in EFFORTS)
#: reasoning models that take temperature / top_p at effort none (GPT-5.2 and later; not codex, pro or chat)
_SAMPLING_AT_NONE = re.compile(r"gpt-(5\.([2-9]|\d{2,})|[6-9]|\d{2,})(?!.*-(codex|pro|chat))")
_MISSING = object()
#: models that take ``prompt_cache_options`` and ``prompt_cache_breakpoint`` (GPT-5.6 and later); earlier ones
#: take ``prompt_cache_retention`` (the server refuses the two together)
CACHE_OPTIONS_MODELS = re.compile(r"gpt-(5\.([6-9]|\d{2,})|[6-9]|\d{2,})(?![0-9])")
#: the breakpoint a marked content part carries
BREAKPOINT = {"mode": "explicit"}


def cache_options(model: str) -> bool:
    """True for a model that takes ``prompt_cache_options`` and explicit breakpoints (GPT-5.6 and later)."""
    return CACHE_OPTIONS_MODELS.match(model.lower().rsplit("/", 1)[-1]) is not None


#: the breakpoints of a conversation OpenAI considers when matching (it writes the latest four a request)
MAX_BREAKPOINTS = 80


def check_breakpoints(client: str, model: str, messages: List[Mapping[str, Any]], wire: str,
                      marks: Optional[int] = None) -> bool:
    """True when ``messages`` mark cache breakpoints; a mark for a model without them, or more marks than
    OpenAI considers, is an error.  ``marks``: their count, when already known."""
    if marks is None:
        marks = count_marks(messages)
    if not marks:
        return False
    if marks > MAX_BREAKPOINTS:
        raise unsupported(client, "cache_breakpoint", "is set on {} items; OpenAI considers at most the latest {} "
                                                      "breakpoints of a conversation: remove the older marks".format(
                                                          marks, MAX_BREAKPOINTS))
    if not cache_options(model):
        raise unsupported(client, "cache_breakpoint", "cannot be sent to {!r}: explicit cache breakpoints "
                                                      "(prompt_cache_breakpoint) are GPT-5.6's and later models' on "
                                                      "{} (remove the marks)".format(model, wire))
    return True

_DOCUMENTS = {"application/pdf": "document.pdf"}


# -- model profile ------------------------------------------------------------------------------


def model_profile(model: str, quirks: Optional[Mapping[str, Any]] = None) -> Tuple[bool, Optional[Tuple[str, ...]], bool]:
    """-> (reasons, efforts, known) for a model name.

    ``reasons``: the model may produce reasoning (ask for encrypted reasoning, send
    ``reasoning``); ``efforts``: the efforts it accepts, None when any named effort is
    passed through (models outside the table); ``known``: the name matched a row.
    Quirks may override: ``reasoning`` (bool), ``reasoning_efforts`` (list of efforts).
    """
    name = model.lower().rsplit("/", 1)[-1]
    efforts = _MISSING  # type: Any
    for regex, row in _EFFORT_ROWS:
        if regex.match(name):
            efforts = row
            break
    known = efforts is not _MISSING
    reasons = efforts is not None
    if not known:
        efforts = None
    quirks = quirks or {}
    if "reasoning" in quirks:
        reasons = bool(quirks["reasoning"])
    if quirks.get("reasoning_efforts"):
        efforts = tuple(quirks["reasoning_efforts"])
        known = True
    return reasons, efforts, known


def clamp_effort(level: str, efforts: Optional[Tuple[str, ...]]) -> str:
    """The effort to send for a ThinkingLevel value: itself if accepted, else the nearest accepted (ties go up)."""
    if efforts is None:
        return "xhigh" if level == "max" else level  # another server's model: OpenAI's top effort
    return nearest(level, efforts, EFFORT_SCALE)


def check_sampling(client: str, model: str, config: Mapping[str, Any], reasons: bool,
                   efforts: Optional[Tuple[str, ...]], known: bool, effort: Optional[str]) -> None:
    """Refuse what OpenAI's reasoning models reject, before sending: a non-default ``temperature``
    or any ``top_p`` on models that take no sampling parameters (GPT-5, GPT-5.1, o-series, codex,
    pro, chat), and on models that take them only at effort ``none`` (GPT-5.2 and later) when an
    effort other than ``none`` is asked for.  Models outside the table (other servers) are not
    checked; ``extra_body`` still sends whatever the caller insists on."""
    if not (reasons and known and efforts is not None):
        return
    if "none" in efforts and _SAMPLING_AT_NONE.match(model.lower().rsplit("/", 1)[-1]):
        if effort is None or effort == "none":
            return  # the model's default effort (none on GPT-5.1+) or none: sampling parameters are accepted
        why = "is accepted by {!r} only at reasoning effort none (thinking_level NONE), not {!r}".format(model, effort)
    else:
        why = "is not accepted by reasoning model {!r} (only the default)".format(model)
    if "temperature" in config and config["temperature"] != 1:
        raise unsupported(client, "temperature", why)
    if "top_p" in config and config["top_p"] != 1:
        raise unsupported(client, "top_p", why)


def text_format(response_format: Mapping[str, Any]) -> Dict[str, Any]:
    """response_format -> the Responses ``text.format`` object."""
    if response_format["type"] != "json_schema":
        return {"type": response_format["type"]}
    out = {"type": "json_schema", "name": response_format["name"]}  # type: Dict[str, Any]
    if response_format.get("description"):
        out["description"] = response_format["description"]
    out["schema"] = response_format["schema"]
    out["strict"] = response_format["strict"]
    return out


# -- request ------------------------------------------------------------------------------------


def build_request(endpoint: Endpoint, model: str, messages: List[Mapping[str, Any]], config: Mapping[str, Any],
                  prior: Optional[Prior] = None) -> HttpRequest:
    """``prior``: what the client's previous call kept (``providers._common.Prior``): the messages it converted
    are taken as they were, where they are the head of these, unchanged (none after a compaction item)."""
    client = endpoint.client_type
    quirks = endpoint.quirks
    reasons, efforts, known = model_profile(model, quirks)
    body = {"model": model}  # type: Dict[str, Any]
    if config.get("system_prompt"):
        body["instructions"] = config["system_prompt"]
    if config.get("compaction"):  # server-side compaction past a token threshold (the documented entry)
        body["context_management"] = [{"type": "compaction", "compact_threshold": config["compaction"]["threshold"]}]
    # the latest compaction item stands for everything before it: that is not sent again
    check_breakpoints(client, model, messages, "the Responses API", marks_resumed(prior, messages))
    wire = _wire_input(endpoint, messages, prior)
    body["input"] = wire.items
    body["stream"] = True
    if config.get("background"):
        body["background"] = True  # run server-side; resumable after a cut (agenthub.resume)
        body["store"] = True  # background mode requires it: the response is kept by OpenAI (retention applies)
    else:
        body["store"] = False
    if quirks.get("encrypted_reasoning", _encrypted(client, config, quirks, reasons, known)):
        body["include"] = ["reasoning.encrypted_content"]
    if "max_tokens" in config:
        body["max_output_tokens"] = config["max_tokens"]
    reasoning = _reasoning(config, reasons, efforts, known)
    check_sampling(client, model, config, reasons, efforts, known, reasoning.get("effort"))
    if "temperature" in config:
        body["temperature"] = config["temperature"]
    if "top_p" in config:
        body["top_p"] = config["top_p"]
    for key, why in (("stop", "has no stop sequences"), ("seed", "has no seed parameter")):
        if key in config:
            raise unsupported(client, key, "cannot be sent: the Responses API {}".format(why))
    response_format = check_response_format(client, config, quirks.get("response_formats"))
    check_strict(endpoint, config, response_format)
    if response_format is not None:
        body["text"] = {"format": text_format(response_format)}
    if config.get("fast_mode"):
        if quirks.get("fast_mode") is False:
            raise unsupported(client, "fast_mode", "is not offered by this server (no priority tier)")
        body["service_tier"] = "priority"
    if config.get("tools") or config.get("mcp_servers"):
        body["tools"] = [_tool(tool) for tool in config.get("tools") or ()] + [
            _mcp_tool(server) for server in config.get("mcp_servers") or ()]
    if "tool_choice" in config:
        body["tool_choice"] = _tool_choice(config["tool_choice"])
    if reasoning:
        body["reasoning"] = reasoning
    caching = config.get("prompt_caching")
    if cache_options(model):  # GPT-5.6 and later: prompt_cache_options (never prompt_cache_retention beside it)
        options = {}  # type: Dict[str, Any]
        if caching == PromptCaching.DISABLE:
            options["mode"] = "explicit"  # no implicit breakpoint: only the marked ones are cached
        elif caching == PromptCaching.ENHANCE:
            options["ttl"] = "12h"  # the longest minimum lifetime Responses offers (the default is 30m)
        if options:
            body["prompt_cache_options"] = options
    elif caching == PromptCaching.ENHANCE:
        body["prompt_cache_retention"] = "24h"
    elif caching is not None and caching != PromptCaching.ENABLE:
        raise unsupported(client, "prompt_caching", "cannot be disabled: the server caches prompts by itself (GPT-5.6 "
                                                    "and later can: prompt_cache_options mode explicit)")
    for key in ("image_config", "tts_config", "embedding_config"):
        if key in config:
            raise unsupported(client, key, "is not available over the Responses API for model {!r}".format(model))
    return HttpRequest("POST", "/responses", request_headers(endpoint), body, output_limit=("max_output_tokens",),
                       encoded=Encoded("input", wire) if prior is not None else None)


build_request.takes_prior = True  # type: ignore[attr-defined]


def _encrypted(client: str, config: Mapping[str, Any], quirks: Mapping[str, Any], reasons: bool, known: bool) -> bool:
    """Ask for the encrypted reasoning (``include``)?  When the model may reason; on Azure, where the model
    is a deployment's own name, only when the name is a known model's, the row says it reasons (quirk
    ``reasoning``) or the request asks for reasoning: a deployment that does not reason refuses it."""
    if not reasons:
        return False
    if not client.startswith("azure") or known or "reasoning" in quirks:
        return True
    level = config.get("thinking_level")
    return (level is not None and level != ThinkingLevel.NONE) or bool(config.get("thinking_summary"))


def _reasoning(config: Mapping[str, Any], reasons: bool, efforts: Optional[Tuple[str, ...]], known: bool) -> Dict[str, Any]:
    level = config.get("thinking_level")
    if not reasons:
        if level is not None or config.get("thinking_summary"):
            logger.debug("this model does not reason: thinking_level/thinking_summary are not sent")
        return {}
    out = {}  # type: Dict[str, Any]
    if level is not None:
        out["effort"] = clamp_effort(level.value, efforts)
    if config.get("thinking_summary") and out.get("effort") != "none" and (known or "effort" in out):
        out["summary"] = "auto"
    return out


# -- OpenAI's strict mode, as documented: "Structured model outputs", "Supported schemas"
# -- (https://platform.openai.com/docs/guides/structured-outputs#supported-schemas, read 2026-12): the types
# -- string, number, boolean, integer, object, array, enum and anyOf; for strings ``pattern`` and ``format`` (the
# -- nine formats below), for numbers ``multipleOf``, ``maximum``, ``exclusiveMaximum``, ``minimum``,
# -- ``exclusiveMinimum``, for arrays ``minItems`` and ``maxItems``; definitions (``$defs`` / ``$ref``, recursion
# -- included); ``additionalProperties: false`` on every object and every property in ``required``; the root an
# -- object, not anyOf.  "Not yet supported": the composition keywords ``allOf``, ``not``, ``dependentRequired``,
# -- ``dependentSchemas``, ``if``, ``then``, ``else`` (and, for fine-tuned models only, ``minLength``,
# -- ``maxLength``, ``pattern``, ``format``, ``minimum``, ``maximum``, ``multipleOf``, ``patternProperties``,
# -- ``minItems``, ``maxItems``: so the base models take ``minLength`` and ``maxLength``).  Anything else
# -- (``oneOf``, ``uniqueItems``, ``prefixItems``, ``minProperties``, OpenAPI's ``nullable``, ...) is not
# -- promised: such a keyword is "not permitted", a 400 ("'uniqueItems' is not permitted").

#: the keywords OpenAI's strict mode documents (besides annotations, ``OPENAI_STRICT_NOTES``)
OPENAI_STRICT_KEYWORDS = frozenset([
    "type", "properties", "required", "additionalProperties", "items", "anyOf", "enum", "const", "$ref", "$defs",
    "definitions", "pattern", "format", "multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum",
    "minItems", "maxItems", "minLength", "maxLength"])
#: annotations: they only describe (OpenAI reads the descriptions)
OPENAI_STRICT_NOTES = frozenset(["description", "title", "examples", "$comment", "$schema", "$id"])
#: the string formats OpenAI's strict mode takes
OPENAI_STRICT_FORMATS = frozenset(["date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6",
                                   "uuid"])
#: the keywords OpenAI documents as "not yet supported" in strict mode: a strict schema of the caller's own with
#: one of them (or without the closed, all-required objects strict mode needs) is an UnsupportedParameterError on
#: OpenAI's and Azure OpenAI's endpoints (``strict_refused``)
OPENAI_STRICT_UNSUPPORTED = frozenset(["allOf", "not", "dependentRequired", "dependentSchemas", "if", "then",
                                       "else"])


#: OpenAI's strict-mode size limits ("Supported schemas": "Objects have limitations on nesting depth and size",
#: "Limitations on total string size", "Limitations on enum size"), per schema
OPENAI_STRICT_MAX_PROPERTIES = 5000
OPENAI_STRICT_MAX_NESTING = 10
OPENAI_STRICT_MAX_STRING_TOTAL = 120000
OPENAI_STRICT_MAX_ENUM_VALUES = 1000
OPENAI_STRICT_LARGE_ENUM = 250
OPENAI_STRICT_MAX_LARGE_ENUM_CHARS = 15000
#: keywords whose value maps names to schemas (a property's or a definition's name is not a schema)
_NAMED_SCHEMAS = ("properties", "$defs", "definitions", "patternProperties")


def strict_size(schema: Any, root: str = "schema") -> Optional[str]:
    """Which of OpenAI's strict-mode size limits ``schema`` goes past (the first found, in words naming it), or
    None: more than 5,000 object properties in all; objects nested more than 10 levels below the root object;
    property names, definition names and string ``enum`` / ``const`` values of more than 120,000 characters in
    all; more than 1,000 ``enum`` values in all; one ``enum`` of more than 250 values whose strings pass 15,000
    characters.  The page does not say how a level is counted: only objects count here (an array or an anyOf
    adds none, a ``$ref`` is not followed), the reading that refuses least, so what is refused here is refused
    there.  Read without recursion (a user's schema may be deep)."""
    properties = names = enums = 0
    stack = [(schema, root, 0)]  # (subschema, where, objects above it)
    while stack:
        node, where, above = stack.pop()
        if isinstance(node, list):
            stack.extend((child, "{}[{}]".format(where, i), above) for i, child in enumerate(node))
            continue
        if not isinstance(node, Mapping):
            continue
        kind = node.get("type")
        level = above
        if kind == "object" or isinstance(kind, list) and "object" in kind or "properties" in node:
            level = above + 1
            if level - 1 > OPENAI_STRICT_MAX_NESTING:
                return "{} nests objects {} levels below the root (strict mode takes at most {})".format(
                    where, level - 1, OPENAI_STRICT_MAX_NESTING)
        values = node.get("enum")
        if isinstance(values, list):
            enums += len(values)
            texts = sum(len(value) for value in values if isinstance(value, str))
            names += texts
            if len(values) > OPENAI_STRICT_LARGE_ENUM and texts > OPENAI_STRICT_MAX_LARGE_ENUM_CHARS:
                return "{}['enum'] has {} values of {} characters (strict mode takes at most {} characters in an " \
                       "enum of more than {} values)".format(where, len(values), texts,
                                                             OPENAI_STRICT_MAX_LARGE_ENUM_CHARS, OPENAI_STRICT_LARGE_ENUM)
        if isinstance(node.get("const"), str):
            names += len(node["const"])
        for key, child in node.items():
            at = "{}[{!r}]".format(where, key)
            if key in _NAMED_SCHEMAS and isinstance(child, Mapping):
                if key == "properties":
                    properties += len(child)
                if key != "patternProperties":  # (its names are patterns)
                    names += sum(len(name) for name in child if isinstance(name, str))
                inner = level if key in ("properties", "patternProperties") else 0  # (a definition: as if at the root)
                stack.extend((sub, "{}[{!r}]".format(at, name), inner) for name, sub in child.items())
            elif key not in DATA_KEYWORDS and isinstance(child, (Mapping, list)):
                stack.append((child, at, level))
    if properties > OPENAI_STRICT_MAX_PROPERTIES:
        return "{} has {} object properties (strict mode takes at most {})".format(
            root, properties, OPENAI_STRICT_MAX_PROPERTIES)
    if enums > OPENAI_STRICT_MAX_ENUM_VALUES:
        return "{} has {} enum values (strict mode takes at most {})".format(root, enums, OPENAI_STRICT_MAX_ENUM_VALUES)
    if names > OPENAI_STRICT_MAX_STRING_TOTAL:
        return "{}'s property names, definition names, enum and const values come to {} characters (strict mode " \
               "takes at most {})".format(root, names, OPENAI_STRICT_MAX_STRING_TOTAL)
    return None


def strict_holds(schema: Any) -> bool:
    """Whether a strict form (``strict_schema``'s) is one OpenAI's strict mode takes: the keywords it documents
    (``_holds``) within its size limits (``strict_size``).  When it does not, the schema goes out with
    ``strict: false`` (a 400 otherwise): the model is guided by it, and the answer is validated and re-asked
    all the same."""
    return _holds(schema) and strict_size(schema) is None


def _holds(schema: Any) -> bool:
    """Whether a strict form (``strict_schema``'s) is one OpenAI's strict mode takes: no open map (an object
    whose ``additionalProperties`` is not false: ``Dict[str, X]``), no schema that names no type (``Any``),
    no array without ``items`` (a bare ``list``, a fixed ``Tuple``'s ``prefixItems``), only the keywords and
    formats its "Supported schemas" name (not a ``Set``'s ``uniqueItems``, ``oneOf``, ``allOf``, ``not``, ...).
    When it does not, the schema goes out with ``strict: false`` (a 400 otherwise): the model is guided by it,
    and the answer is validated and re-asked all the same."""
    if isinstance(schema, list):
        return all(_holds(child) for child in schema)
    if not isinstance(schema, dict):
        return schema is not True
    kind = schema.get("type")
    kinds = kind if isinstance(kind, list) else [kind]
    if not any(k in schema for k in ("type", "anyOf", "$ref", "enum", "const")):
        return False
    if "object" in kinds and schema.get("additionalProperties") is not False:
        return False
    if "array" in kinds and "items" not in schema:
        return False
    if "format" in schema and not (isinstance(schema["format"], str) and schema["format"] in OPENAI_STRICT_FORMATS):
        return False
    for key, child in schema.items():
        if key in ("properties", "$defs", "definitions"):
            if isinstance(child, dict) and not all(_holds(sub) for sub in child.values()):
                return False
        elif key in ("items", "anyOf", "additionalProperties"):
            if child is not False and not _holds(child):
                return False
        elif key not in OPENAI_STRICT_KEYWORDS and key not in OPENAI_STRICT_NOTES:
            return False
    return True


def strict_refused(schema: Any, root: str = "schema") -> Optional[str]:
    """What OpenAI documents its strict mode refuses in ``schema`` (the first found, in words naming where):
    a keyword of ``OPENAI_STRICT_UNSUPPORTED``, an object without ``additionalProperties: false``, a property
    left out of ``required``, a root that is not an object, a size past its limits (``strict_size``).  None
    when it holds none of them."""
    if not isinstance(schema, Mapping) or schema.get("type") != "object":
        return "{} is not an object at its root (strict mode takes an object there, not an array or an anyOf)".format(
            root)
    return _refused(schema, root) or strict_size(schema, root)


def _refused(schema: Any, where: str) -> Optional[str]:
    if isinstance(schema, list):
        for i, child in enumerate(schema):
            found = _refused(child, "{}[{}]".format(where, i))
            if found:
                return found
        return None
    if not isinstance(schema, Mapping):
        return None
    kind = schema.get("type")
    if kind == "object" or isinstance(kind, list) and "object" in kind:
        if schema.get("additionalProperties") is not False:
            return "{} is an object without additionalProperties false (strict mode needs it on every object)".format(
                where)
        missing = [name for name in schema.get("properties") or () if name not in (schema.get("required") or ())]
        if missing:
            return "{}['required'] leaves out {} (strict mode needs every property required: make it nullable " \
                   "instead)".format(where, ", ".join(repr(name) for name in missing))
    for key, child in schema.items():
        at = "{}[{!r}]".format(where, key)
        if key in OPENAI_STRICT_UNSUPPORTED:
            return "{} is not supported in strict mode ({} are not)".format(
                at, ", ".join(sorted(OPENAI_STRICT_UNSUPPORTED)))
        if key in ("properties", "$defs", "definitions", "patternProperties") and isinstance(child, Mapping):
            for name, sub in child.items():
                found = _refused(sub, "{}[{!r}]".format(at, name))
                if found:
                    return found
        elif key not in DATA_KEYWORDS:
            found = _refused(child, at)
            if found:
                return found
    return None


def check_strict(endpoint: Endpoint, config: Mapping[str, Any],
                 response_format: Optional[Mapping[str, Any]]) -> None:
    """On OpenAI's API and Azure OpenAI, a strict schema of the caller's own (a ``response_format`` whose
    ``strict`` is true, the default, or a strict tool's ``parameters``) that OpenAI documents its strict mode
    refuses (``strict_refused``: a keyword it does not support, an open object, a property
    left out of ``required``) raises UnsupportedParameterError before sending (a 400 there).  A compatible
    server speaking the dialect has a subset of its own: its schemas go as they are."""
    if not endpoint.quirks.get("strict_subset"):  # (set by the hosts that run OpenAI's strict mode: OpenAI, Azure)
        return
    client = endpoint.client_type
    fix = ": send it with strict False (the answer is then not held to the schema), or change the schema"
    if response_format is not None and response_format.get("strict"):
        problem = strict_refused(response_format["schema"])
        if problem:
            raise unsupported(client, "response_format", problem + fix)
    for tool in config.get("tools") or ():
        problem = strict_refused(tool.get("parameters") or {"type": "object", "properties": {}},
                                 "parameters") if tool.get("strict") else None
        if problem:
            raise unsupported(client, "tools", "strict tool {!r}: {}{}".format(tool["name"], problem, fix))


def _tool(tool: Mapping[str, Any]) -> Dict[str, Any]:
    wire = {"type": "function", "name": tool["name"]}  # type: Dict[str, Any]
    if tool.get("description"):
        wire["description"] = tool["description"]
    wire["parameters"] = tool.get("parameters") or {"type": "object", "properties": {}}
    wire["strict"] = bool(tool.get("strict", False))  # (the Responses function tool requires the field)
    return wire


def _mcp_tool(server: Mapping[str, Any]) -> Dict[str, Any]:
    """A ``config["mcp_servers"]`` entry (validate.check_mcp_servers) -> the Responses ``mcp`` tool."""
    wire = {"type": "mcp", "server_label": server["name"], "server_url": server["url"]}  # type: Dict[str, Any]
    for key in ("headers", "allowed_tools", "require_approval"):
        if server.get(key) is not None:
            wire[key] = server[key]
    return wire


def _tool_choice(choice: Any) -> Any:
    if not isinstance(choice, list):
        return choice
    return {"type": "allowed_tools", "mode": "required", "tools": [{"type": "function", "name": n} for n in choice]}


def _image(client: str, url: str, images: Optional[Sequence[str]] = None) -> Dict[str, Any]:
    """An image_url item (or a tool result's image): a data URI of another type of media goes as inline_data
    of its type does (a PDF as input_file, anything else refused); a PDF's URL as an input_file's file_url.
    ``images``: the image types the host takes (None: not checked)."""
    parsed = parse_data_uri(url)  # a malformed data URI is a ConfigError now, not a 400 later
    if parsed is not None and not parsed[0].startswith("image/"):
        return _media(client, parsed[0], parsed[1])
    if parsed is None and pdf_url(url):
        return {"type": "input_file", "file_url": url}
    if parsed is not None and images:
        check_image_type(client, parsed[0], images, "the Responses API")
    if parsed is not None:
        check_still(client, parsed[0], parsed[1], "the Responses API", bool(images))
    return {"type": "input_image", "image_url": url, "detail": "auto"}


def _media(client: str, mime_type: str, data: bytes, images: Optional[Sequence[str]] = None) -> Dict[str, Any]:
    if mime_type.startswith("image/"):
        if images:
            check_image_type(client, mime_type, images, "the Responses API")
        check_still(client, mime_type, data, "the Responses API", bool(images))
        return {"type": "input_image", "image_url": data_uri(mime_type, data), "detail": "auto"}
    if mime_type in _DOCUMENTS:
        return {"type": "input_file", "filename": _DOCUMENTS[mime_type], "file_data": data_uri(mime_type, data)}
    raise unsupported(client, "inline_data", "of type {} cannot be sent over the Responses API".format(mime_type))


def _input(endpoint: Endpoint, messages: List[Mapping[str, Any]]) -> List[Dict[str, Any]]:
    return _wire_input(endpoint, messages, None, False).items


def _compacted(messages: Sequence[Mapping[str, Any]]) -> bool:
    """Whether ``messages`` hold an OpenAI compaction item (``after_compaction`` then drops what is before it)."""
    for message in messages:
        if message["role"] == "assistant":
            for item in message["content_items"]:
                if item["type"] == "compaction" and (item.get("fidelity") or {}).get(COMPACTION_FORMAT) == "openai":
                    return True
    return False


def _wire_input(endpoint: Endpoint, messages: List[Mapping[str, Any]], prior: Optional[Prior],
                compaction: bool = True) -> Resumed:
    """The input items of ``messages`` (from their latest compaction item on, with ``compaction``), from the
    previous call's where ``prior`` allows.  The previous call's head was converted without a compaction item
    in it (a history holding one is converted whole), so only the new messages are looked through."""
    if compaction:
        stash = prior.stash.get("openai-responses") if prior is not None else None
        head = len(stash[1]) if stash is not None and len(stash[1]) <= prior.head else 0  # type: ignore[union-attr]
        if prior is None or _compacted(messages[head:]):
            prior = None
            messages = after_compaction(list(messages), "openai")
    context = endpoint.client_type
    images = OPENAI_IMAGE_TYPES if endpoint.quirks.get("image_subset") else None
    noted = NOTES[0]
    made = start(prior, "openai-responses", context, messages, prior.head if prior is not None else 0, None)
    out = made.items
    # call ids of custom tool calls: their results go back as custom_tool_call_output
    custom = set(made.state or ())  # type: set
    for index in range(made.count, len(messages)):
        message = messages[index]
        if message["role"] == "assistant":
            if any(cache_marks(message)):
                raise unsupported(endpoint.client_type, "cache_breakpoint", "is set on assistant messages[{}]: OpenAI "
                                                                            "takes breakpoints on input content (user "
                                                                            "text, images, files, tool results): mark "
                                                                            "the user item after it".format(index))
            _assistant(message, out, custom)
        else:
            _user(endpoint.client_type, message, out, custom, images)
    made.state = frozenset(custom)
    keep(prior, "openai-responses", context, messages, made, noted)
    return made


def _user(client: str, message: Mapping[str, Any], out: List[Dict[str, Any]], custom: Any = (),
          images: Optional[Sequence[str]] = None) -> None:
    parts = []  # type: List[Dict[str, Any]]
    wrote = False
    marks = cache_marks(message)
    for position, item in enumerate(message["content_items"]):
        kind = item["type"]
        if kind == "text":
            parts.append({"type": "input_text", "text": item["text"]})
        elif kind == "image_url":
            parts.append(_image(client, item["image_url"], images))
        elif kind == "inline_data":
            parts.append(_media(client, item["mime_type"], bytes(item["data"]), images))
        elif kind == "tool_result":
            if parts:
                out.append({"type": "message", "role": "user", "content": parts})
                parts = []
            answer = (item.get("fidelity") or {}).get(SERVER_ITEM)
            if isinstance(answer, dict) and answer.get("type") == "mcp_approval_response":
                out.append(dict(answer))  # the decision on a provider's MCP approval request (the tool runner's)
            else:
                kind = "custom_tool_call_output" if item["tool_call_id"] in custom else "function_call_output"
                output = _tool_output(client, item, images)
                if marks[position]:  # a breakpoint rides a content part: the output as a list of parts
                    output = [{"type": "input_text", "text": output}] if isinstance(output, str) else output
                    output[-1]["prompt_cache_breakpoint"] = dict(BREAKPOINT)
                out.append({"type": kind, "call_id": item["tool_call_id"], "output": output})
            wrote = True
            continue
        else:  # pragma: no cover - validate.check_message keeps other items out of user messages
            left_out(kind, 'the Responses API', "user")
        if marks[position]:
            parts[-1]["prompt_cache_breakpoint"] = dict(BREAKPOINT)
    if parts or not wrote:
        out.append({"type": "message", "role": "user", "content": parts or [{"type": "input_text", "text": ""}]})


def _tool_output(client: str, item: Mapping[str, Any], images: Optional[Sequence[str]] = None) -> Any:
    linked = item.get("images")
    if not linked:
        return item["text"]
    parts = [{"type": "input_text", "text": item["text"]}] if item["text"] else []
    parts.extend(_image(client, url, images) for url in linked)
    return parts


def _assistant(message: Mapping[str, Any], out: List[Dict[str, Any]], custom: Any = None) -> None:
    content = []  # type: List[Dict[str, Any]]
    phase = None  # the phase of the message being gathered in content
    reasonings = []  # type: List[Dict[str, Any]]  # this message's reasoning items, in the order they came
    for item in message["content_items"]:
        kind = item["type"]
        fidelity = item.get("fidelity") or {}
        if kind == "thinking" and type(fidelity.get("supplements")) is int \
                and 0 <= fidelity["supplements"] < len(reasonings):
            # what the final response added to a reasoning item already handed out: merged into it
            _supplement(reasonings[fidelity["supplements"]], item["thinking"], fidelity)
            continue
        if kind == "text" and SERVER_ITEM in fidelity:  # an MCP item the server ran: back as it came, id included
            if content:
                out.append(_assistant_message(content, phase))
                content = []
            if isinstance(fidelity[SERVER_ITEM], dict):
                out.append(fidelity[SERVER_ITEM])
            phase = None
            if item["text"]:  # text streamed right after it joined it
                content.append({"type": "output_text", "text": item["text"], "annotations": []})
            continue
        if kind == "text" and not item["text"] and fidelity == _ENDS_TEXT:
            continue  # (it only kept the text before an MCP item apart from it)
        if kind == "text":
            item_phase = fidelity.get("phase")
            if content and item_phase != phase:
                out.append(_assistant_message(content, phase))
                content = []
            phase = item_phase
            text = item["text"]
            if fidelity.get("refusal"):
                content.append({"type": "refusal", "refusal": text})
            elif text or fidelity:
                content.append({"type": "output_text", "text": text, "annotations": []})
            continue
        if content:
            out.append(_assistant_message(content, phase))
            content = []
        if kind == "thinking":
            reasoning = _reasoning_item(item["thinking"], fidelity)
            if reasoning is not None:
                out.append(reasoning)
                if "supplements" not in fidelity:
                    reasonings.append(reasoning)
            else:
                logger.debug("thinking that did not come from a Responses reasoning item is not replayed")
        elif kind == "tool_call":
            if fidelity.get("type") == "custom_tool_call":  # free-text input, back as it came
                text = item["arguments"].get("input", "")
                out.append({"type": "custom_tool_call", "call_id": item["tool_call_id"], "name": item["name"],
                            "input": text if isinstance(text, str) else dumps(text)})
                if custom is not None:
                    custom.add(item["tool_call_id"])
                continue
            out.append({"type": "function_call", "call_id": item["tool_call_id"], "name": item["name"],
                        "arguments": dumps(item["arguments"])})
        elif kind == "compaction":  # the server's compaction of what came before: back as it came, no id
            wire = (fidelity.get("item") or {}) if fidelity.get(COMPACTION_FORMAT) == "openai" else {}
            if isinstance(wire.get("encrypted_content"), str):
                out.append({"type": "compaction", "encrypted_content": wire["encrypted_content"]})
            else:
                logger.warning("a compaction item without its encrypted content is left out")
        else:
            left_out(kind, 'the Responses API')
    if content:
        out.append(_assistant_message(content, phase))


def _assistant_message(content: List[Dict[str, Any]], phase: Any) -> Dict[str, Any]:
    wire = {"type": "message", "role": "assistant", "content": content}  # type: Dict[str, Any]
    if phase:
        wire["phase"] = phase
    return wire


def _reasoning_item(text: str, fidelity: Mapping[str, Any]) -> Optional[Dict[str, Any]]:
    channel = fidelity.get("channel")
    encrypted = fidelity.get("encrypted_content")
    if channel is None and encrypted is None:
        return None  # not ours: thinking from another protocol
    if not text and not encrypted:
        return None  # nothing the server could use
    parts = _split_parts(text, fidelity.get("parts")) if text else []
    wire = {"type": "reasoning", "summary": []}  # type: Dict[str, Any]
    if channel == "content":
        wire["content"] = [{"type": "reasoning_text", "text": p} for p in parts]
    else:
        wire["summary"] = [{"type": "summary_text", "text": p} for p in parts]
    if encrypted is not None:
        wire["encrypted_content"] = encrypted
    for key in ("signature", "format"):
        if fidelity.get(key) is not None:
            wire[key] = fidelity[key]
    return wire


def _supplement(wire: Dict[str, Any], text: str, fidelity: Mapping[str, Any]) -> None:
    """Merge what a ``supplements`` item carries into the reasoning input item it completes."""
    for key in ("encrypted_content", "signature", "format"):
        if fidelity.get(key) is not None and wire.get(key) is None:
            wire[key] = fidelity[key]
    if text:
        parts = _split_parts(text, fidelity.get("parts"))
        if fidelity.get("channel") == "content":
            if not wire.get("content"):
                wire["content"] = [{"type": "reasoning_text", "text": p} for p in parts]
        elif not wire.get("summary"):
            wire["summary"] = [{"type": "summary_text", "text": p} for p in parts]


def _split_parts(text: str, lengths: Any) -> List[str]:
    """Undo the blank-line join of several summary parts, using the recorded part lengths."""
    if not isinstance(lengths, list) or len(lengths) < 2 or not all(type(n) is int and n >= 0 for n in lengths):
        return [text]
    if sum(lengths) + 2 * (len(lengths) - 1) != len(text):
        return [text]
    parts = []
    at = 0
    for i, n in enumerate(lengths):
        if i:
            if text[at:at + 2] != "\n\n":
                return [text]
            at += 2
        parts.append(text[at:at + n])
        at += n
    return parts


# -- response -----------------------------------------------------------------------------------


def cache_written(buckets: Dict[str, Any], written: Any) -> Any:
    """OpenAI's ``cache_write_tokens`` (Chat ``prompt_tokens_details``, Responses ``input_tokens_details``;
    billed above the input price from the GPT-5.6 family on): part of the prompt bucket, carried as
    ``Usage.cache_write`` (no TTL split: the model's only write price).  A count above the prompt bucket
    it is part of is not believed (left out)."""
    from ..stream import usage_count, with_cache_write

    count = usage_count(written)
    prompt = buckets.get("prompt_tokens")
    if not count or prompt is None or count > prompt:
        return buckets
    return with_cache_write(buckets, count)


def map_usage(raw: Any) -> Dict[str, Any]:
    """Responses usage -> the four exclusive buckets."""
    raw = raw if isinstance(raw, dict) else {}
    input_details = raw.get("input_tokens_details")
    input_details = input_details if isinstance(input_details, dict) else {}
    output_details = raw.get("output_tokens_details")
    output_details = output_details if isinstance(output_details, dict) else {}
    buckets = inclusive_usage(raw.get("input_tokens"), raw.get("output_tokens"), input_details.get("cached_tokens"),
                              output_details.get("reasoning_tokens"), raw.get("total_tokens"))
    return cache_written(buckets, input_details.get("cache_write_tokens"))


class _Reasoning(object):
    """One reasoning item while it streams: which channel, which part, each part's length."""

    __slots__ = ("channel", "part_channel", "part", "lengths", "sealed", "resumed", "ordinal")

    def __init__(self, resumed: bool = False) -> None:
        self.channel = None  # type: Optional[str]
        self.part_channel = None  # type: Optional[str]
        self.part = None  # type: Any
        self.lengths = []  # type: List[int]
        #: the fidelity its text went out with, when another item started before the item was done
        self.sealed = None  # type: Optional[Dict[str, Any]]
        #: its text resumed after it was sealed (the finished item's texts are then not taken again)
        self.resumed = resumed
        #: its place among the reasoning items this response handed out (set when its text was sealed)
        self.ordinal = None  # type: Optional[int]


class _Handed(object):
    """What went out for one reasoning item: its place among them, the fidelity it carried, and
    whether its text did (what the final response may still add is what is missing here)."""

    __slots__ = ("ordinal", "fidelity", "texted")

    def __init__(self, ordinal: int, fidelity: Dict[str, Any], texted: bool) -> None:
        self.ordinal = ordinal
        self.fidelity = fidelity
        self.texted = texted


class _Call(object):
    __slots__ = ("named", "identified", "has_args", "closed", "custom", "pending_name")

    def __init__(self, named: bool, identified: bool, custom: bool = False) -> None:
        self.named = named
        self.identified = identified
        self.has_args = False
        self.closed = False
        self.custom = custom  # a custom tool call: free-text input, carried as {"input": text}
        #: a name announced without its call_id: the call is announced once the id is known
        self.pending_name = None  # type: Optional[str]


_SEPARATOR = "\n\n"
_TERMINAL = frozenset(["response.completed", "response.incomplete", "response.done"])
_SUMMARY_DELTA = "response.reasoning_summary_text.delta"
_CONTENT_DELTA = "response.reasoning_text.delta"
#: fidelity of a tool_call that came from a custom tool call (free-text input, replayed as such)
_CUSTOM = {"type": "custom_tool_call"}
_CUSTOM_OPEN = '{"input":"'
_CUSTOM_CLOSE = '"}'
#: json.dumps(text) for a str without building an encoder each time (custom tool input pieces)
_encode_string = json.encoder.encode_basestring
#: output items that ask the caller to do something (run a command, apply a patch, act on a screen,
#: approve an MCP tool call) for tools a UniConfig cannot declare: agenthub cannot hand them back
_ACTION_ITEMS = frozenset(["local_shell_call", "shell_call", "apply_patch_call", "computer_call"])
#: output items of the MCP servers the provider calls itself (config["mcp_servers"]): server items, never tool
#: calls; each goes out as an empty text item carrying it (fidelity ``SERVER_ITEM``) and is replayed as it came
SERVER_ITEMS = frozenset(["mcp_list_tools", "mcp_call", "mcp_approval_request"])
SERVER_ITEM = "server_item"
#: fidelity of an empty text item sent before a server item when text came earlier: it closes that text in
#: ``collect`` (the server item's carrier would otherwise be taken by it) and is replayed as nothing
_ENDS_TEXT = {"ends_text": True}
#: slots for final-output items that never streamed (apart from every slot the wire used)
_FINAL_SLOT = -1000000


def parse_stream(events: Iterable[SSEEvent], client: str = "openai-responses", tool_id_prefix: Any = None) -> Iterator[Any]:
    """SSE events of one Responses stream -> content items, then one StreamEnd.

    Complete when ``response.completed`` or ``response.incomplete`` arrives; a body
    that ends before that returns without StreamEnd (the driver raises).
    """
    return _parse(payloads(events), client, tool_id_prefix)


def _parse(pairs: Iterable[Any], client: str = "openai-responses", tool_id_prefix: Any = None) -> Iterator[Any]:
    """``parse_stream`` over decoded payloads: ``(event, payload)`` pairs (see ``_common.payloads``)."""
    return _Parser(client, tool_id_prefix).run(pairs)


class _Parser(object):
    def __init__(self, client: str, tool_id_prefix: Any) -> None:
        self.client = client
        self.tools = ToolCallAssembler(client, tool_id_prefix)
        self.phases = {}  # type: Dict[Any, str]  # slot -> phase of a message item
        self.reasoning = {}  # type: Dict[Any, _Reasoning]  # reasoning items not yet done
        self.texted = set()  # type: set  # slots of message items that streamed text
        self.phased = set()  # type: set  # slots whose text went out with its phase
        self.calls = {}  # type: Dict[Any, _Call]
        self.seen = set()  # type: set  # slots announced or finished
        self.ids = {}  # type: Dict[str, Any]  # item id -> slot, for servers without output_index
        self.last_slot = None  # type: Any
        self.held = []  # type: List[Dict[str, Any]]  # items waiting for an open tool call to finish
        self.calls_open = False
        self.opened = {}  # type: Dict[str, Tuple[Any, Any]]  # item id -> (slot, type) of items announced, not done
        self.item_ids = set()  # type: set  # ids of the items announced or finished on the wire
        # what the final response is matched against (it fills in what the streamed items lacked)
        self.id_slots = {}  # type: Dict[str, Any]  # item id (or call_id) -> slot
        self.kinds = {}  # type: Dict[Any, List[Any]]  # item type -> slots in order of appearance
        self.handed = {}  # type: Dict[Any, _Handed]  # slot -> what went out for its reasoning item
        self.ordinal = 0  # reasoning items handed out so far
        self.imaged = set()  # type: set  # slots whose image went out
        self.actions = []  # type: List[Dict[str, Any]]  # items asking the caller to act (_ACTION_ITEMS)
        self.acted = set()  # type: set  # their slots
        self.compacted = set()  # type: set  # slots of the compaction items handed out
        self.served = set()  # type: set  # slots of the server (MCP) items handed out
        self.texted_before = 0  # len(texted) when the last server item went out

    # -- the loop -------------------------------------------------------------------------
    def run(self, pairs: Iterable[Any]) -> Iterator[Any]:
        """The parts of ``(event, payload)`` pairs (see ``_common.payloads``)."""
        phases = self.phases
        texted = self.texted
        fragment = self.tools.fragment
        for event, payload in pairs:
            if type(payload) is not dict:
                if event is DONE:
                    break
                if event == "error":  # an error event whose data is plain text
                    raise upstream_error(self.client, payload)
                continue
            kind = payload.get("type")
            if kind == "response.output_text.delta":
                delta = payload.get("delta")
                if delta and type(delta) is str:
                    slot = payload.get("output_index")
                    if type(slot) is not int:
                        slot = self._slot(payload)
                    item = {"type": "text", "text": delta}
                    if phases:
                        phase = phases.get(slot)
                        if phase:
                            item["fidelity"] = {"phase": phase}
                            self.phased.add(slot)
                    if slot not in texted:
                        self._note(slot, "message")
                        texted.add(slot)
                    if self.reasoning:  # a reasoning item is still open (its done comes late, or never)
                        for sealed in self._emit(self._seal(None)):
                            yield sealed
                    if self.calls_open:
                        self.held.append(item)
                    else:
                        yield item
                continue
            if kind == "response.function_call_arguments.delta":
                delta = payload.get("delta")
                if delta:
                    slot = payload.get("output_index")
                    if type(slot) is not int:
                        slot = self._slot(payload)
                    call = self.calls.get(slot)
                    if call is None:
                        call = self.calls[slot] = _Call(False, False)
                        self.seen.add(slot)
                        self._note(slot, "function_call")
                    call.has_args = True
                    item = fragment(slot, delta)
                    if item is not None:  # more text of the call streaming live (the head of the open calls)
                        self.calls_open = True
                        yield item
                    else:
                        for item in self.tools.feed_arguments(slot, delta):
                            yield item
                        self.calls_open = self.tools.open_calls > 0
                continue
            if kind == _SUMMARY_DELTA or kind == _CONTENT_DELTA:
                delta = payload.get("delta")
                if delta and type(delta) is str:
                    for item in self._thinking(payload, kind, delta):
                        yield item
                continue
            if not kind:
                if payload.get("error"):
                    raise upstream_error(self.client, payload)
                kind = event
            if kind == "response.output_item.added":
                for item in self._added(payload):
                    yield item
            elif kind == "response.output_item.done":
                for item in self._done(payload.get("item"), self._slot(payload)):
                    yield item
            elif kind == "response.function_call_arguments.done":
                for item in self._arguments_done(payload):
                    yield item
            elif kind == "response.custom_tool_call_input.delta":
                for item in self._custom_input(payload, payload.get("delta")):
                    yield item
            elif kind == "response.custom_tool_call_input.done":
                call = self.calls.get(self._slot(payload))
                if call is not None and call.custom and not call.has_args:
                    for item in self._custom_input(payload, payload.get("input")):
                        yield item
            elif kind == "response.refusal.delta":
                delta = payload.get("delta")
                if delta and type(delta) is str:
                    for item in self._emit([self._text(self._slot(payload), delta, refusal=True)]):
                        yield item
            elif kind in _TERMINAL:
                for item in self._terminal(kind, payload):
                    yield item
                return
            elif kind == "error":
                raise upstream_error(self.client, _error_payload(payload))
            elif kind == "response.failed":
                raise upstream_error(self.client, _failure_payload(payload))
            # response.created / in_progress / queued, *.done of parts, keepalive, annotations,
            # built-in tool progress and anything unknown: nothing to emit
        # cut before its terminal marker: the driver raises StreamProtocolError

    # -- helpers --------------------------------------------------------------------------
    def _slot(self, payload: Mapping[str, Any]) -> Any:
        """The output item an event is about: its output_index, else a slot kept per item id."""
        slot = payload.get("output_index")
        if type(slot) is int:
            self.last_slot = slot
            return slot
        item_id = payload.get("item_id")
        if not item_id:
            item = payload.get("item")
            item_id = item.get("id") if isinstance(item, dict) else None
        if isinstance(item_id, str) and item_id:
            slot = self.ids.get(item_id)
            if slot is None:
                slot = self.ids[item_id] = -1 - len(self.ids)
                self.id_slots.setdefault(item_id, slot)
        else:
            slot = self.last_slot if self.last_slot is not None else -1 - len(self.ids)
        self.last_slot = slot
        return slot

    def _seal(self, slot: Any = None) -> List[Dict[str, Any]]:
        """Another item starts while reasoning items that streamed text are not done yet (OpenRouter sends
        a reasoning item's done after the message that follows it): their text is sealed now with the
        fidelity known so far, so it stays one replayable item; the done item adds what only it has."""
        items = []  # type: List[Dict[str, Any]]
        for other, state in self.reasoning.items():
            if other != slot and state.lengths and state.sealed is None:
                fidelity = {"channel": state.channel or "summary"}  # type: Dict[str, Any]
                if len(state.lengths) > 1:
                    fidelity["parts"] = list(state.lengths)
                state.sealed = fidelity
                state.ordinal = self._hand(other, fidelity, True)
                items.append({"type": "thinking", "thinking": "", "fidelity": fidelity})
        return items

    def _emit(self, items: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
        """Items of non-call kinds: held back while a tool call is still streaming (calls stay contiguous)."""
        if self.reasoning and items and items[0]["type"] != "thinking":
            items = self._seal(None) + items
        if self.calls_open:
            self.held.extend(items)
            return []
        return items

    def _note(self, slot: Any, kind: Any) -> None:
        """Slot ``slot`` carries an item of type ``kind`` (what the final output is matched against)."""
        if isinstance(kind, str):
            slots = self.kinds.get(kind)
            if slots is None:
                self.kinds[kind] = [slot]
            elif slot not in slots:
                slots.append(slot)

    def _hand(self, slot: Any, fidelity: Dict[str, Any], texted: bool) -> int:
        """A reasoning item's fidelity goes out: its place among them (replay merges what the final
        response adds later into the reasoning item at that place)."""
        ordinal = self.ordinal
        self.ordinal += 1
        self.handed[slot] = _Handed(ordinal, dict(fidelity), texted)
        return ordinal

    def _after_calls(self, items: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
        """Items from the tool-call machine, then whatever was held back once no call is open."""
        self.calls_open = self.tools.open_calls > 0
        if not self.calls_open and self.held:
            items = items + self.held
            self.held = []
        return items

    def _text(self, slot: Any, text: str, refusal: bool = False) -> Dict[str, Any]:
        item = {"type": "text", "text": text}  # type: Dict[str, Any]
        phase = self.phases.get(slot)
        fidelity = {}  # type: Dict[str, Any]
        if refusal:
            fidelity["refusal"] = True
        if phase:
            fidelity["phase"] = phase
            self.phased.add(slot)
        if fidelity:
            item["fidelity"] = fidelity
        if slot not in self.texted:
            self._note(slot, "message")
            self.texted.add(slot)
        return item

    def _thinking(self, payload: Mapping[str, Any], kind: str, delta: str) -> List[Dict[str, Any]]:
        slot = payload.get("output_index")
        if type(slot) is not int:
            slot = self._slot(payload)
        state = self.reasoning.get(slot)
        if state is None:
            state = self.reasoning[slot] = _Reasoning()
            self.seen.add(slot)
            self._note(slot, "reasoning")
        elif state.sealed is not None:  # more text after it was sealed: a new run of the same item
            state = self.reasoning[slot] = _Reasoning(resumed=True)
        if kind == _SUMMARY_DELTA:
            channel = "summary"
            part = payload.get("summary_index")
        else:
            channel = "content"
            part = payload.get("content_index")
        items = []  # type: List[Dict[str, Any]]
        if part != state.part or channel != state.part_channel or not state.lengths:
            if state.lengths:
                items.append({"type": "thinking", "thinking": _SEPARATOR})
            state.lengths.append(0)
            state.part = part
            state.part_channel = channel
            if state.channel is None:
                state.channel = channel
        state.lengths[-1] += len(delta)
        items.append({"type": "thinking", "thinking": delta})
        return self._emit(items)

    def _added(self, payload: Mapping[str, Any]) -> List[Dict[str, Any]]:
        item = payload.get("item")
        if not isinstance(item, dict):
            return []
        slot = self._slot(payload)
        self.seen.add(slot)
        kind = item.get("type")
        item_id = item.get("id")
        self._note(slot, kind)
        if item_id and isinstance(item_id, str):
            self.opened[item_id] = (slot, kind)
            self.item_ids.add(item_id)
            self.id_slots.setdefault(item_id, slot)
        if self.reasoning and kind != "reasoning":
            sealed = self._emit(self._seal(None))
            if sealed:
                return sealed + self._added_item(item, slot, kind)
        return self._added_item(item, slot, kind)

    def _added_item(self, item: Mapping[str, Any], slot: Any, kind: Any) -> List[Dict[str, Any]]:
        if kind == "message":
            phase = item.get("phase")
            if phase and isinstance(phase, str):
                self.phases[slot] = phase
            return []
        if kind == "function_call":
            call_id = item.get("call_id") or None
            name = item.get("name") or None
            call = self.calls[slot] = _Call(name is not None and call_id is not None, call_id is not None)
            if call_id is not None:
                self.id_slots.setdefault(call_id, slot)
            if name is not None and call_id is None:
                call.pending_name = name  # announced once its call_id is known (its done, or the final response)
                name = None
            seed = item.get("arguments")
            items = self.tools.feed(slot, call_id, name, "", seed=seed if isinstance(seed, str) and seed else None)
            return self._after_calls(items)
        if kind == "custom_tool_call":
            call_id = item.get("call_id") or None
            name = item.get("name") or None
            self.calls[slot] = _Call(name is not None, call_id is not None, custom=True)
            return self._after_calls(self.tools.feed(slot, call_id, name, _CUSTOM_OPEN, dict(_CUSTOM)))
        return []

    def _custom_input(self, payload: Mapping[str, Any], text: Any) -> List[Dict[str, Any]]:
        """A piece of a custom tool call's free-text input -> a JSON-escaped argument fragment."""
        slot = self._slot(payload)
        call = self.calls.get(slot)
        if call is None or not call.custom or call.closed or not isinstance(text, str) or not text:
            return []
        call.has_args = True
        return self._after_calls(self.tools.feed(slot, arguments=_encode_string(text)[1:-1]))

    def _arguments_done(self, payload: Mapping[str, Any]) -> List[Dict[str, Any]]:
        slot = self._slot(payload)
        call = self.calls.get(slot)
        if call is None:
            call = self.calls[slot] = _Call(False, False)
            self.seen.add(slot)
        if call.closed:
            return []
        items = []  # type: List[Dict[str, Any]]
        name = payload.get("name") if not call.named and call.pending_name is None else None
        arguments = payload.get("arguments")
        if name or (not call.has_args and arguments):
            items.extend(self.tools.feed(slot, None, name or None, None if call.has_args else arguments))
            call.named = call.named or bool(name)
            call.has_args = call.has_args or bool(arguments)
        if call.named:
            items.extend(self.tools.close(index=slot))
            call.closed = True
        return self._after_calls(items)

    def _done(self, item: Any, slot: Any) -> List[Dict[str, Any]]:
        if not isinstance(item, dict):
            return []
        kind = item.get("type")
        item_id = item.get("id")
        if item_id and isinstance(item_id, str):
            self.item_ids.add(item_id)
        if item_id and isinstance(item_id, str) and self.opened:
            opened = self.opened.pop(item_id, None)
            if opened is not None and opened[0] != slot and opened[1] == kind:
                # the item announced under this id finishes at another output_index (vLLM sent the
                # reasoning item's done with the next item's index): it is the announced one
                slot = opened[0]
        self.seen.add(slot)
        self._note(slot, kind)
        if item_id and isinstance(item_id, str):
            self.id_slots.setdefault(item_id, slot)
        if kind == "message":
            return self._message_done(item, slot)
        if kind == "reasoning":
            return self._reasoning_done(item, slot)
        if kind == "function_call":
            return self._call_done(item, slot)
        if kind == "custom_tool_call":
            return self._custom_done(item, slot)
        if kind == "image_generation_call":
            return self._image_done(item, slot)
        if kind == "compaction":
            return self._compaction_done(item, slot)
        if kind in SERVER_ITEMS:
            return self._server_done(item, slot)
        if kind in _ACTION_ITEMS or (kind == "tool_search_call" and item.get("execution") == "client"):
            self._action(item, slot)
        return []  # other built-in tool items: not client tool calls, nothing the next request needs

    def _compaction_done(self, item: Mapping[str, Any], slot: Any) -> List[Dict[str, Any]]:
        """A server-side compaction: one opaque item (once, whether it streamed or only came in the final
        output), replayed as it came."""
        if slot in self.compacted or not isinstance(item.get("encrypted_content"), str):
            return []
        self.compacted.add(slot)
        wire = {key: item[key] for key in ("type", "id", "encrypted_content", "created_by") if key in item}
        return self._emit([{"type": "compaction", "fidelity": {COMPACTION_FORMAT: "openai", "item": wire}}])

    def _server_done(self, item: Mapping[str, Any], slot: Any) -> List[Dict[str, Any]]:
        """A finished MCP item (once, whether it streamed or only came in the final output): an empty text
        item carrying it as it came; text streamed right after it joins that item (replayed after it)."""
        if slot in self.served:
            return []
        self.served.add(slot)
        items = []  # type: List[Dict[str, Any]]
        if len(self.texted) > self.texted_before:  # text may be open in collect: closed first, so it keeps its place
            items.append({"type": "text", "text": "", "fidelity": dict(_ENDS_TEXT)})
        self.texted_before = len(self.texted)
        items.append({"type": "text", "text": "", "fidelity": {SERVER_ITEM: dict(item)}})
        return self._emit(items)

    def _action(self, item: Mapping[str, Any], slot: Any) -> None:
        if slot not in self.acted:
            self.acted.add(slot)
            self.actions.append(dict(item))

    def _custom_done(self, item: Mapping[str, Any], slot: Any, final: bool = False) -> List[Dict[str, Any]]:
        call = self.calls.get(slot)
        text = item.get("input")
        text = text if isinstance(text, str) else ""
        items = []  # type: List[Dict[str, Any]]
        if call is not None and not call.closed and call.custom and not call.has_args and not text and not final:
            return []  # finished without its input: the final response may carry it (closed there)
        if call is None:  # the whole call arrives here
            call_id = item.get("call_id") or None
            name = item.get("name") or None
            call = self.calls[slot] = _Call(name is not None, call_id is not None, custom=True)
            items.extend(self.tools.feed(slot, call_id, name, _CUSTOM_OPEN, dict(_CUSTOM)))
        elif call.closed or not call.custom:
            return []
        if not call.has_args and text:
            items.extend(self.tools.feed(slot, arguments=_encode_string(text)[1:-1]))
            call.has_args = True
        items.extend(self.tools.feed(slot, arguments=_CUSTOM_CLOSE))
        items.extend(self.tools.close(index=slot))
        call.closed = True
        return self._after_calls(items)

    def _image_done(self, item: Mapping[str, Any], slot: Any) -> List[Dict[str, Any]]:
        """A finished image_generation_call: its image is output media (the call itself is not replayed)."""
        result = item.get("result")
        if not isinstance(result, str) or not result or slot in self.imaged:
            return []
        self.imaged.add(slot)
        fmt = item.get("output_format")
        mime = "image/" + (fmt if isinstance(fmt, str) and fmt.isalnum() else "png")
        if mime == "image/jpg":
            mime = "image/jpeg"
        return self._emit([{"type": "inline_data", "data": answer_bytes(result, self.client, "image"),
                             "mime_type": mime}])

    def _message_done(self, item: Mapping[str, Any], slot: Any) -> List[Dict[str, Any]]:
        phase = item.get("phase")
        if phase and isinstance(phase, str) and slot not in self.phases:
            self.phases[slot] = phase
        items = []  # type: List[Dict[str, Any]]
        if slot not in self.texted:
            for part in item.get("content") or ():
                if not isinstance(part, dict):
                    continue
                if part.get("type") == "refusal" and isinstance(part.get("refusal"), str) and part["refusal"]:
                    items.append(self._text(slot, part["refusal"], refusal=True))
                elif isinstance(part.get("text"), str) and part["text"]:
                    items.append(self._text(slot, part["text"]))
        elif phase and isinstance(phase, str) and slot not in self.phased:
            # the phase came only now: an empty text carrying it seals the streamed text with it
            items.append({"type": "text", "text": "", "fidelity": {"phase": phase}})
            self.phased.add(slot)
        return self._emit(items)

    def _reasoning_done(self, item: Mapping[str, Any], slot: Any) -> List[Dict[str, Any]]:
        state = self.reasoning.pop(slot, None) or _Reasoning()
        items = []  # type: List[Dict[str, Any]]
        if state.sealed is not None:  # its text went out sealed: only what the finished item adds is left
            return self._reasoning_fill(item, slot)
        if not state.lengths and not state.resumed:  # nothing streamed: take the texts from the finished item
            for channel, key, part_type in (("summary", "summary", "summary_text"), ("content", "content", "reasoning_text")):
                texts = [p["text"] for p in item.get(key) or () if isinstance(p, dict) and isinstance(p.get("text"), str)
                         and p.get("type", part_type) == part_type]
                if texts:
                    state.channel = channel
                    for i, text in enumerate(texts):
                        if i:
                            items.append({"type": "thinking", "thinking": _SEPARATOR})
                        if text:
                            items.append({"type": "thinking", "thinking": text})
                        state.lengths.append(len(text))
                    break
        fidelity = {"channel": state.channel or "summary"}  # type: Dict[str, Any]
        encrypted = item.get("encrypted_content")
        if isinstance(encrypted, str) and encrypted:
            fidelity["encrypted_content"] = encrypted
        elif not any(state.lengths):
            return []  # neither text nor encrypted content: nothing to show or keep
        for key in ("signature", "format"):
            value = item.get(key)
            if isinstance(value, str) and value:
                fidelity[key] = value
        if len(state.lengths) > 1:
            fidelity["parts"] = list(state.lengths)
        self._hand(slot, fidelity, any(state.lengths))
        items.append({"type": "thinking", "thinking": "", "fidelity": fidelity})
        return self._emit(items)

    def _reasoning_fill(self, item: Mapping[str, Any], slot: Any) -> List[Dict[str, Any]]:
        """A reasoning item whose fidelity already went out, finished (or repeated by the final response)
        with more: what it adds (encrypted content, a signature, its texts when none streamed) goes out
        on an item of its own marked ``supplements: <its place>``, which the replay merges into it."""
        handed = self.handed.get(slot)
        if handed is None:
            return self._reasoning_done(item, slot)
        known = handed.fidelity
        fidelity = {"channel": known.get("channel", "summary")}  # type: Dict[str, Any]
        for key in ("encrypted_content", "signature", "format"):
            value = item.get(key)
            if isinstance(value, str) and value and not known.get(key):
                fidelity[key] = value
        items = []  # type: List[Dict[str, Any]]
        if not handed.texted:
            for channel, key, part_type in (("summary", "summary", "summary_text"),
                                            ("content", "content", "reasoning_text")):
                texts = [p["text"] for p in item.get(key) or () if isinstance(p, dict)
                         and isinstance(p.get("text"), str) and p.get("type", part_type) == part_type]
                if any(texts):
                    fidelity["channel"] = channel
                    for i, text in enumerate(texts):
                        if i:
                            items.append({"type": "thinking", "thinking": _SEPARATOR})
                        if text:
                            items.append({"type": "thinking", "thinking": text})
                    if len(texts) > 1:
                        fidelity["parts"] = [len(text) for text in texts]
                    handed.texted = True
                    break
        if len(fidelity) == 1 and not items:
            return []  # nothing it did not have
        known.update((k, v) for k, v in fidelity.items() if k != "parts")
        fidelity["supplements"] = handed.ordinal
        items.append({"type": "thinking", "thinking": "", "fidelity": fidelity})
        return self._emit(items)

    def _call_done(self, item: Mapping[str, Any], slot: Any, final: bool = False) -> List[Dict[str, Any]]:
        call = self.calls.get(slot)
        arguments = item.get("arguments")
        items = []  # type: List[Dict[str, Any]]
        if call is None:  # the whole call arrives here (servers that skip added and deltas)
            call_id = item.get("call_id") or None
            name = item.get("name") or None
            call = self.calls[slot] = _Call(name is not None, call_id is not None)
            items.extend(self.tools.feed(slot, call_id, name, arguments))
            call.has_args = True
        elif call.closed:
            return []
        else:
            call_id = None
            if not call.identified:
                call_id = item.get("call_id") or None
                if call_id is None and not final:
                    return []  # finished without its call_id: the final response may name it (closed there)
            if not call.has_args and not arguments and not final:
                return []  # finished without its arguments: the final response may carry them
            name = (item.get("name") or call.pending_name or None) if not call.named else None
            if name or call_id or (not call.has_args and arguments):
                items.extend(self.tools.feed(slot, call_id, name, None if call.has_args else arguments))
                call.has_args = call.has_args or bool(arguments)
                call.named = call.named or name is not None
                call.identified = call.identified or call_id is not None
        items.extend(self.tools.close(index=slot))
        call.closed = True
        return self._after_calls(items)

    def _terminal(self, kind: str, payload: Mapping[str, Any]) -> Iterator[Any]:
        response = payload.get("response")
        if not isinstance(response, dict):
            response = {}
        status = response.get("status")
        if status == "failed":
            raise upstream_error(self.client, _failure_payload(payload))
        output = response.get("output")
        output = [item for item in output if isinstance(item, dict)] if isinstance(output, list) else []
        # the final response fills in what the streamed items lacked (LiteLLM sends the encrypted
        # reasoning only here), and brings the items that never streamed
        slots = self._match(output)
        final_of = {}  # type: Dict[Tuple[Any, Any], Mapping[str, Any]]
        for item, slot in zip(output, slots):
            if slot is not None:
                final_of[(slot, item.get("type"))] = item
        for slot in sorted(self.reasoning, key=_order):  # reasoning items that never finished on the wire
            for part in self._reasoning_done(final_of.get((slot, "reasoning"), {}), slot):
                yield part
        for position, (item, slot) in enumerate(zip(output, slots)):
            kind_of = item.get("type")
            if slot is None:
                if kind_of == "message" and self.texted:
                    continue  # text streamed already (under another index: LiteLLM puts every item at 0)
                parts = self._done(item, _FINAL_SLOT - position)
            elif kind_of == "function_call":
                call = self.calls.get(slot)
                parts = self._call_done(item, slot, True) if call is not None and not call.closed else []
            elif kind_of == "custom_tool_call":
                call = self.calls.get(slot)
                parts = self._custom_done(item, slot, True) if call is not None and not call.closed else []
            elif kind_of == "reasoning":
                parts = self._reasoning_fill(item, slot) if slot not in self.reasoning else []
            elif kind_of == "message":
                parts = self._message_done(item, slot)
            elif kind_of == "image_generation_call":
                parts = self._image_done(item, slot)
            else:
                parts = self._done(item, slot)
            for part in parts:
                yield part
        for slot, call in list(self.calls.items()):
            if not call.closed:  # calls the server never finished (or finished without what they lacked)
                closer = self._custom_done if call.custom else self._call_done
                for part in closer({}, slot, True):
                    yield part
        items = self.tools.finish()
        self.calls_open = False
        for item in items + self.held:
            yield item
        self.held = []
        if self.actions:
            self._acted_on()
        if kind == "response.incomplete" or status == "incomplete":
            details = response.get("incomplete_details")
            reason = details.get("reason") if isinstance(details, dict) else None
            finish = "length" if reason in ("max_output_tokens", "max_tokens", "length") else "unknown"
        elif status in (None, "completed"):
            finish = "stop"
        else:  # cancelled, or a status we do not know
            finish = "unknown"
        raw_usage = response.get("usage")
        usage = map_usage(raw_usage) if isinstance(raw_usage, dict) else None
        if usage is not None and "service_tier" in response:  # the tier that served it: the one it is billed at
            usage = with_service_tier(usage, response["service_tier"])
        if usage is not None and self.imaged:  # the image_generation tool's images: billed apart, not in the usage
            usage = with_image_tool_calls(usage, len(self.imaged))
        yield StreamEnd(usage, finish, bool(self.served), response.get("id"), response.get("model"))

    def _match(self, output: List[Dict[str, Any]]) -> List[Any]:
        """The streamed slot of each final output item, or None for items that never streamed: by id
        (or call_id), else the slot at its position if that carried its type, else the next slot of its
        type in order of appearance (relays that renumber ids, or put every item at index 0)."""
        used = set()  # type: set
        slots = []  # type: List[Any]
        for position, item in enumerate(output):
            kind = item.get("type")
            slot = None
            for key in ("id", "call_id"):
                value = item.get(key)
                if isinstance(value, str) and value in self.id_slots and (self.id_slots[value], kind) not in used:
                    slot = self.id_slots[value]
                    break
            candidates = self.kinds.get(kind) or ()
            if slot is None and position in candidates and (position, kind) not in used:
                slot = position
            if slot is None:
                slot = next((s for s in candidates if (s, kind) not in used), None)
            if slot is not None:
                used.add((slot, kind))
            slots.append(slot)
        return slots

    def _acted_on(self) -> None:
        """Items asking the caller to act, for tools a UniConfig cannot declare.  With an answer beside
        them they are left out (logged); alone they would end in a misleading "empty response": the error
        names them instead."""
        names = []
        for item in self.actions:
            kind = item.get("type")
            if kind == "tool_search_call":
                names.append("tool_search_call (a client-executed tool search)")
            else:
                names.append(str(kind))
        answered = bool(self.texted) or bool(self.imaged) or self.tools.completed > 0 or bool(self.served)
        what = ", ".join(names)
        if answered:
            logger.warning("%s: the response also asked the caller to act on %s; agenthub cannot hand such items "
                           "back, they are left out", self.client, what)
            return
        raise EmptyResponseError(
            "the {} response only asked the caller to act on {}: items for tools agenthub does not declare or "
            "hand back (no text, tool call or media came with them)".format(self.client, what),
            client=self.client, finish_reason="unknown", usage_metadata=None,
            item_types=[str(item.get("type")) for item in self.actions])


#: a whole Response object's status -> the stream event that would have ended it
_STATUS_EVENTS = {"completed": "response.completed", "incomplete": "response.incomplete", "failed": "response.failed",
                  "cancelled": "response.completed"}


def parse_document(payload: Any, client: str = "openai-responses", tool_id_prefix: Any = None) -> Iterator[Any]:
    """A whole Response object (``{"object": "response", "status", "output": [...], "usage"}``: a server
    that ignored ``stream: true``) -> the same parts its stream gives: it is read as the terminal event
    that carries it, so every output item comes from the final output.  Stream events (a JSON array of
    them) are read as events."""
    pairs = []  # type: List[Any]
    for doc in documents(payload):
        if type(doc) is dict and not isinstance(doc.get("type"), str) and (
                doc.get("object") == "response" or isinstance(doc.get("output"), list)):
            status = doc.get("status")
            if status in _UNFINISHED:  # (not an answer, not even a partial one: the response still runs)
                return _unfinished(client, status, doc.get("id"))
            doc = {"type": _STATUS_EVENTS.get(status, "response.completed") if isinstance(status, str)
                   else "response.completed", "response": doc}  # (a status that is no string: no TypeError)
        pairs.append(("message", doc))
    return _Parser(client, tool_id_prefix).run(pairs)


#: a whole Response object's status while it still runs (queued, or being generated)
_UNFINISHED = ("in_progress", "queued")


def _unfinished(client: str, status: str, response_id: Any) -> Iterator[Any]:
    """A whole Response object that has not finished (a server that ignored ``stream``, or answered a background
    request at once): ``unfinished_document``'s StreamProtocolError, not retried."""
    return unfinished_document(client, "response", status, response_id, "/responses/")


def _order(slot: Any) -> Tuple[int, int]:
    return (0, slot) if slot >= 0 else (1, -slot)


def _error_payload(payload: Mapping[str, Any]) -> Any:
    """An ``error`` event -> an OpenAI-shaped error body (the event is flat or nests ``error``)."""
    inner = payload.get("error")
    if isinstance(inner, dict):
        return {"error": inner}
    if isinstance(inner, str) and inner:
        return {"error": {"message": inner, "code": payload.get("code")}}
    error = {key: payload[key] for key in ("message", "code", "param") if payload.get(key) is not None}
    if not error.get("message"):
        error["message"] = "the server sent an error event"
    return {"error": error}


def _failure_payload(payload: Mapping[str, Any]) -> Any:
    response = payload.get("response")
    error = response.get("error") if isinstance(response, dict) else None
    if isinstance(error, dict) and error:
        return {"error": error}
    return {"error": {"message": "the response failed without an error object", "code": "response_failed"}}


# -- background responses: resume after a cut, cancel ---------------------------------------------


def resume_request(endpoint: Endpoint, resource_id: str, cursor: Optional[int]) -> HttpRequest:
    """``GET /responses/{id}?stream=true&starting_after=<sequence_number>`` (a path: the host joins the base
    URL): a background response's stream again, from the event after ``cursor`` (from its start when None)."""
    url = "/responses/" + resource_segment(resource_id, endpoint.client_type) + "?stream=true"
    if cursor is not None:
        url += "&starting_after={}".format(int(cursor))
    headers = request_headers(endpoint)
    headers.pop("Content-Type", None)
    return HttpRequest("GET", url, headers, None)


def cancel_request(endpoint: Endpoint, resource_id: str) -> HttpRequest:
    """``POST /responses/{id}/cancel`` (a path; only background responses can be cancelled)."""
    return HttpRequest("POST", "/responses/" + resource_segment(resource_id, endpoint.client_type) + "/cancel",
                       request_headers(endpoint, accept="application/json"), {}, stream=False)


_RESUME_TERMINAL = frozenset(["response.completed", "response.incomplete", "response.failed", "error", "response.done"])


def frame_cursor(sse: SSEEvent) -> Tuple[Optional[str], Optional[int], bool]:
    """(the response id when this event names it, its ``sequence_number``, terminal?) of one SSE event
    (a ValueError when its data is not JSON: a cut inside the event)."""
    data = sse.data
    if not data or data[0] != "{":
        return None, None, False
    payload = _json_loads(data)  # a ValueError here: the event was cut in half
    if type(payload) is not dict:
        return None, None, False  # not an event of a response: the parser says what it is
    kind = payload.get("type") or sse.event
    resource = None
    if kind in ("response.created", "response.queued", "response.in_progress"):
        response = payload.get("response")
        resource = response.get("id") if isinstance(response, dict) else None
    cursor = payload.get("sequence_number")
    if isinstance(cursor, bool) or not isinstance(cursor, int):
        cursor = None
    return resource if isinstance(resource, str) and resource else None, cursor, kind in _RESUME_TERMINAL


#: background streams resume after a cut (agenthub.resume): are cursors numbers, in order?
ordered_cursors = True


# -- the endpoint's model list ------------------------------------------------------------------


# -- token counting (agenthub.providers.counting) ---------------------------------------------------

#: the answer's count field, and the body members POST /responses/input_tokens takes (the SDK's own)
COUNT_FIELD = "input_tokens"
COUNT_KEYS = ("model", "input", "instructions", "tools", "tool_choice", "parallel_tool_calls", "reasoning", "text",
              "truncation", "conversation", "previous_response_id", "personality")


def count_request(plan: HttpRequest, model: str, quirks: Mapping[str, Any], form: Any = True) -> Optional[HttpRequest]:
    """``/responses/input_tokens`` for the streaming ``plan`` (None: the host has no count endpoint,
    ``form`` False: the client-type row's ``count_tokens``)."""
    from .counting import count_plan, keep

    if form is False:
        return None
    return count_plan(plan, plan.url.partition("?")[0] + "/input_tokens", keep(plan.body, COUNT_KEYS))


PROTOCOL = Protocol(
    "openai-responses", __name__, build_request, parse_stream, parse_document=parse_document, parse_payloads=_parse,
    quirk_keys=("encrypted_reasoning", "fast_mode", "image_subset", "reasoning", "reasoning_efforts",
                "response_formats", "strict_subset"),
    embeddings="openai_embeddings", demo=("gpt-5.5", "OpenAI Responses"),
    models_request=openai_models_request, parse_models=parse_data_list,
    accepts=("background", "compaction", "mcp_servers"), compaction_format="openai",
    resume=Resume(resume_request, cancel_request, frame_cursor, ordered_cursors), count=Count(count_request, COUNT_FIELD),
)
