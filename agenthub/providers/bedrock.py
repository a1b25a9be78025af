"""Amazon Bedrock, the Converse stream API (``POST /model/{modelId}/converse-stream``).  Pure: no I/O.

Every Bedrock model id works (``anthropic.*``, ``us.*``/``global.*`` inference profiles, ``amazon.nova-*``,
``meta.*``, ``mistral.*``, inference-profile ARNs, ...): the id goes in the path, percent-encoded as
botocore encodes a URI label (``:`` -> ``%3A``, ``/`` -> ``%2F``).  The answer is an AWS event stream
(``agenthub.eventstream``); the aws host (``agenthub.hosts.aws``) signs each attempt with SigV4 over the
exact body bytes, or sends a Bedrock API key as ``Authorization: Bearer``.

Request
-------
- ``messages``: text, images as bytes (``inline_data`` or a ``data:`` URI; png/jpeg/gif/webp), documents
  as bytes (pdf, csv, doc, docx, xls, xlsx, html, txt, md), ``s3://`` URLs as ``s3Location``; an http(s)
  image URL cannot be fetched by Bedrock and raises UnsupportedParameterError.  Tool results are
  ``toolResult`` blocks (text, then their images; ``status: "error"`` for an is_error result) at the head
  of their user turn.  Consecutive turns of
  one role are joined (Converse wants them alternating).  Assistant turns replay text, ``toolUse``, and
  reasoning from ``fidelity``: ``reasoningText {text, signature}`` and ``redactedContent`` byte-exact.
- ``system`` from ``system_prompt``; ``inferenceConfig``: ``maxTokens``, ``temperature``, ``topP``,
  ``stopSequences`` (from ``top_p`` / ``stop``); ``response_format`` json_schema -> ``outputConfig.textFormat``
  (the schema as JSON text, cut for Claude as ``anthropic.structured_schema`` cuts it; json_object raises); ``fast_mode`` -> ``serviceTier: {type: priority}``; ``seed``
  raises (Converse has none).
- ``toolConfig``: ``toolSpec`` per tool (``inputSchema.json``: a strict tool's cut for Claude as
  ``anthropic.strict_tool_schema`` cuts it); ``toolChoice`` auto -> ``auto``, required
  -> ``any``, one name -> ``tool``; Converse has no "none": it sends no tools (and raises when the history
  holds tool blocks, which need a toolConfig).  A history with tool blocks and no tools in this turn gets
  a toolConfig naming the tools used (Bedrock refuses tool blocks without one).
- Claude models (the id without its ``us.``/``global.``/... and ``anthropic.`` prefixes and version
  suffix, read by ``anthropic.THINKING_RULES``): ``thinking_level`` as the Anthropic module clamps it, sent
  in ``additionalModelRequestFields`` (``thinking: {type: enabled, budget_tokens}`` or ``thinking: {type:
  adaptive}`` + ``output_config: {effort}``; the interleaved-thinking beta as ``anthropic_beta`` for a
  budget with tools); ``max_tokens`` defaults to the rule's; the rule's temperature and forced-tool limits
  apply.  Amazon Nova 2 (Lite, Pro): ``thinking_level`` as ``additionalModelRequestFields.reasoningConfig``
  (``{type: enabled, maxReasoningEffort}``: low, medium, high; xhigh and max clamp to high, which takes no
  ``max_tokens``, ``temperature`` or ``top_p``); NONE sends nothing (off, its default).  Other families:
  any level but NONE is an UnsupportedParameterError (their reasoning, if any, is the model's own).
- ``prompt_caching`` as ``cachePoint`` blocks after the system prompt, after the tools (Claude) and at the
  end of the last message, on models with prompt caching (Claude 3.5 Haiku, 3.7 Sonnet and Claude 4 and later;
  Amazon Nova): ENABLE (the default) -> ``{"type": "default"}``, ENHANCE -> ``"ttl": "1h"`` (raises on
  other models), DISABLE -> none.  An item or message marked ``cache_breakpoint`` -> a cachePoint right after
  its block (the marks replace the automatic one at the end of the messages); more than 4 cache points in all,
  or a mark for a model without caching, raises.

Stream
------
``messageStart``; ``contentBlockStart`` (``toolUse`` announces a call; an image block starts);
``contentBlockDelta`` (``text``, ``toolUse.input`` fragments through the tool-call machine,
``reasoningContent`` ``text`` / ``signature`` / ``redactedContent``, image bytes); ``contentBlockStop``;
``messageStop`` (``stopReason``: end_turn / stop_sequence -> stop, max_tokens -> length, tool_use ->
tool_call, anything else -> unknown); ``metadata`` (usage; the last event).  The stream is complete once
``messageStop`` came (and the body ended, or ``metadata`` arrived).

Fidelity: a reasoning block ends with an empty thinking item carrying ``{"signature": s}`` (so
``collect`` seals the block's text with it); a redacted block is an item carrying
``{"redacted_content": "<base64 as sent>"}``; a server-side tool block (``toolUse`` of type
``server_tool_use`` and its ``toolResult``) is carried as ``{"bedrock_block": <the block as Converse
takes it>}``.  All of it goes back exactly as it came.

Usage: AWS documents ``inputTokens`` as the input neither read from nor written to the cache, so total
input = inputTokens + cacheReadInputTokens + cacheWriteInputTokens.  ``cached_tokens`` is the cache read,
``prompt_tokens`` the rest of the input (cache writes included, as the Anthropic module counts them);
``response_tokens`` is ``outputTokens`` (Bedrock does not count reasoning apart).  Some model families
report an inclusive ``inputTokens`` in streams: when ``totalTokens`` equals inputTokens + outputTokens and
cache counts are present, the cache counts are taken out of inputTokens.

Errors: exception frames (``:message-type exception``) and HTTP errors (``x-amzn-ErrorType``) map by
type: throttlingException -> RateLimitError 429, validationException -> UpstreamError 400,
accessDeniedException -> AuthenticationError 403, internalServerException -> ServerError 500,
serviceUnavailableException -> ServerError 503, modelStreamErrorException -> ServerError (retryable),
modelTimeoutException 408, resourceNotFoundException 404, modelNotReadyException 429, ...
"""

import base64
import binascii
import json
import logging
import re
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Tuple

from ..errors import (AuthenticationError, ConfigError, RateLimitError, ServerError, StreamProtocolError,
                      UpstreamError, preview)
from ..eventstream import CONTENT_TYPE, iter_messages
from ..sse import json_loads
from ..stream import Fold, StreamEnd
from ..toolcalls import ToolCallAssembler
from ..types import HttpRequest, PromptCaching
from ..validate import cache_marks, count_marks
from . import anthropic
from ._common import (left_out, something_to_send, visible_text, Count, Endpoint, Protocol, check_response_format, dumps, encode_path_segment, model_list_page,
                      parse_data_uri, samplers, to_int, unsupported, usage,
                      with_cache_write)
from ._common import check_still, refuse_mcp_servers
from .._jsondepth import loads as _json_loads

__all__ = ["build_request", "parse_stream", "parse_document", "map_usage", "claude_name", "stream_error",
           "FINISH_REASONS", "EXCEPTIONS", "PROTOCOL"]

logger = logging.getLogger("agenthub")

#: stopReason -> finish_reason (guardrail_intervened, content_filtered, malformed_*, ... are "unknown")
#: config key -> its inferenceConfig field (max_tokens is set beside it: a row gives its default; no seed)
_SAMPLERS = {"temperature": "temperature", "top_p": "topP", "stop": "stopSequences", "seed": None}
FINISH_REASONS = {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length", "tool_use": "tool_call"}
#: exception type (first letter lower-cased) -> (error class, status, retryable)
EXCEPTIONS = {
    "throttlingException": (RateLimitError, 429, True),
    "validationException": (UpstreamError, 400, False),
    "accessDeniedException": (AuthenticationError, 403, False),
    "unrecognizedClientException": (AuthenticationError, 403, False),
    "expiredTokenException": (AuthenticationError, 403, False),
    "invalidSignatureException": (AuthenticationError, 403, False),
    "incompleteSignatureException": (AuthenticationError, 403, False),
    "resourceNotFoundException": (UpstreamError, 404, False),
    "modelTimeoutException": (UpstreamError, 408, True),
    "modelNotReadyException": (RateLimitError, 429, True),
    "serviceQuotaExceededException": (UpstreamError, 400, False),
    "modelErrorException": (UpstreamError, 424, False),
    "modelStreamErrorException": (ServerError, 424, True),
    "internalServerException": (ServerError, 500, True),
    "internalFailure": (ServerError, 500, True),
    "serviceUnavailableException": (ServerError, 503, True),
    "serviceUnavailable": (ServerError, 503, True),
}

#: cachePoint blocks a request takes (Claude, Nova), the automatic ones included
MAX_CACHE_POINTS = 4
#: a tool's output that is empty or white space alone, as a toolResult says it (Converse refuses an empty
#: content list and an empty or blank text block: the other wires send the blank output as it is, or none)
NO_OUTPUT = "(no output)"
#: the private key a block made from a marked item carries until its cachePoint is placed after it
_MARKED = "__cache_breakpoint__"

_GEO = ("us", "eu", "apac", "global", "jp", "au", "ca", "us-gov", "uk", "in", "sa", "me", "af", "mx")
_IMAGE_FORMATS = {"image/png": "png", "image/jpeg": "jpeg", "image/jpg": "jpeg", "image/gif": "gif",
                  "image/webp": "webp"}
_DOCUMENT_FORMATS = {
    "application/pdf": "pdf", "text/csv": "csv", "application/msword": "doc",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
    "application/vnd.ms-excel": "xls", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": "xlsx",
    "text/html": "html", "text/plain": "txt", "text/markdown": "md",
}
_ID_UNSAFE = re.compile(r"[^A-Za-z0-9_.:-]")
#: Claude models with prompt caching on Bedrock (Claude 3.5 Haiku, 3.7 Sonnet, Claude 4 and later)
_CLAUDE_CACHING = re.compile(r"claude-(?:3-5-haiku|3-7-sonnet|sonnet-3-7|(?:opus|sonnet|haiku|fable|mythos)-[4-9])")


# -- model ids -----------------------------------------------------------------------------------


def _family(model: str) -> Tuple[str, str]:
    """``us.anthropic.claude-sonnet-4-5-20250929-v1:0`` -> ("anthropic", "claude-sonnet-4-5-20250929")."""
    name = model.rsplit("/", 1)[-1] if model.startswith("arn:") else model
    name = name.lower()
    parts = name.split(".")
    if len(parts) > 2 and parts[0] in _GEO:
        parts = parts[1:]
    if len(parts) < 2:
        return "", re.sub(r"(?:-v\d+)?(?::\d+)?$", "", name)
    vendor = parts[0]
    rest = re.sub(r"(?:-v\d+)?(?::\d+)?$", "", ".".join(parts[1:]))
    return vendor, rest


def claude_name(model: str) -> Optional[str]:
    """The Claude model name inside a Bedrock id (for ``anthropic.thinking_rule``), or None for other families."""
    vendor, rest = _family(model)
    if vendor == "anthropic" or (not vendor and rest.startswith("claude-")):
        return rest
    return None


#: Amazon Nova 2 models with extended thinking (``reasoningConfig``; off by default)
_NOVA_REASONING = re.compile(r"nova-2-(?:lite|pro)\b")
#: thinking_level -> Nova 2's maxReasoningEffort (it has low, medium, high: the levels above clamp to high)
_NOVA_EFFORT = {"low": "low", "medium": "medium", "high": "high", "xhigh": "high", "max": "high"}


def nova_reasoning(model: str) -> bool:
    """Whether the Bedrock id names an Amazon Nova 2 model that takes ``reasoningConfig``."""
    vendor, rest = _family(model)
    return vendor == "amazon" and bool(_NOVA_REASONING.match(rest))


def _reasoning_config(client: str, model: str, config: Mapping[str, Any]) -> Optional[Dict[str, Any]]:
    """``thinking_level`` on a Bedrock model that is not Claude: Nova 2's reasoningConfig, else refused."""
    level = config.get("thinking_level")
    level = getattr(level, "value", level)
    if level is None or level == "none":
        return None
    if not nova_reasoning(model):
        raise unsupported(client, "thinking_level", "is not available for {!r} on Bedrock: agenthub maps it for "
                                                    "Claude and Amazon Nova 2 (Lite, Pro) models only; this model "
                                                    "reasons on its own or not at all (use 'none' or leave it "
                                                    "unset)".format(model))
    effort = _NOVA_EFFORT[level]
    if effort == "high":  # Nova 2 bounds its own output then: the three must be unset
        for key in ("max_tokens", "temperature", "top_p"):
            if config.get(key) is not None:
                raise unsupported(client, key, "must be unset for {!r} with maxReasoningEffort high (thinking_level "
                                               "{!r}); use thinking_level 'medium' to keep it".format(model, level))
    return {"type": "enabled", "maxReasoningEffort": effort}


def _caching(model: str) -> bool:
    claude = claude_name(model)
    if claude is not None:
        return bool(_CLAUDE_CACHING.search(claude.replace(".", "-")))
    vendor, rest = _family(model)
    return vendor == "amazon" and rest.startswith("nova")


# -- request -------------------------------------------------------------------------------------


def build_request(endpoint: Endpoint, model: str, messages: List[Mapping[str, Any]], config: Mapping[str, Any]) -> HttpRequest:
    client = endpoint.client_type
    refuse_mcp_servers(client, config)
    for key in ("image_config", "tts_config", "embedding_config"):
        if key in config:
            raise unsupported(client, key, "is not available over the Bedrock Converse API (model {!r})".format(model))
    claude = claude_name(model)
    rule = anthropic.thinking_rule(claude) if claude is not None else None
    caching = config.get("prompt_caching", PromptCaching.ENABLE)
    cache = None  # type: Optional[Dict[str, Any]]
    if caching == PromptCaching.ENHANCE:
        if not _caching(model) or claude is None:
            raise unsupported(client, "prompt_caching", "ENHANCE (a 1 h cache) is not available for {!r} on "
                                                        "Bedrock".format(model))
        cache = {"cachePoint": {"type": "default", "ttl": "1h"}}
    elif caching == PromptCaching.ENABLE and _caching(model):
        cache = {"cachePoint": {"type": "default"}}

    marks = count_marks(messages)
    if marks and not _caching(model):
        raise unsupported(client, "cache_breakpoint", "cannot be sent to {!r}: it has no prompt caching on Bedrock "
                                                      "(Claude 3.5 Haiku, 3.7 Sonnet, Claude 4 and later, Amazon Nova "
                                                      "have it; remove the marks)".format(model))
    body = {}  # type: Dict[str, Any]
    wire, tool_names = _messages(client, messages)
    if marks:  # the caller's breakpoints replace the automatic one at the end of the messages
        point = {"type": "default", "ttl": "1h"} if caching == PromptCaching.ENHANCE else {"type": "default"}
        for turn in wire:
            turn["content"] = _place_cache_points(turn["content"], point)
    elif cache is not None and wire:
        wire[-1]["content"].append(dict(cache))
    body["messages"] = something_to_send(client, wire)
    if wire[0]["role"] == "assistant":
        raise ConfigError("{}: the messages start with an assistant message, which Bedrock Converse refuses (a "
                          "conversation starts with a user message): begin with the user message it answered".format(
                              client))
    if config.get("system_prompt"):
        body["system"] = [{"text": config["system_prompt"]}]
        if cache is not None:
            body["system"].append(dict(cache))

    inference = {}  # type: Dict[str, Any]
    extra = {}  # type: Dict[str, Any]
    choice = config.get("tool_choice")
    if isinstance(choice, list) and len(choice) > 1:
        raise unsupported(client, "tool_choice", "can force one tool over Bedrock Converse, not {}".format(len(choice)))
    thinking_on = False
    sampling = None  # type: Optional[Dict[str, Any]]  # Claude's checked temperature / top_p
    max_tokens = config.get("max_tokens")
    if rule is not None:
        max_tokens = max_tokens or rule["max_tokens"]
        thinking, effort, thinking_on, sampling = anthropic.claude_request_rules(
            client, model, rule, config, max_tokens, claude or "", "'auto'")  # (Converse has no "none" to suggest)
        if not anthropic.thinking_taken(client, thinking, body["messages"], lambda block: next(iter(block), None)):
            thinking, thinking_on = None, False
        if thinking is not None:
            extra["thinking"] = thinking
        if effort is not None:
            extra["output_config"] = {"effort": effort}
        if thinking_on and rule["mode"] == "budget" and rule.get("interleaved") and config.get("tools"):
            extra["anthropic_beta"] = [anthropic.INTERLEAVED_THINKING_BETA]
    else:
        reasoning = _reasoning_config(client, model, config)
        if reasoning is not None:
            extra["reasoningConfig"] = reasoning
    if max_tokens:
        inference["maxTokens"] = max_tokens
    inference.update(samplers(client, config, _SAMPLERS, why="cannot be sent: the Bedrock Converse API has no seed"))
    if sampling is not None and "temperature" not in sampling:
        inference.pop("temperature", None)  # (sampling removed: 1, the only value it takes, is not sent)
    if inference:
        body["inferenceConfig"] = inference
    wanted = check_response_format(client, config, None, ("text", "json_schema"))
    if wanted is not None:
        structure = wanted["schema"]
        if claude is not None:  # Claude's structured outputs here take what they take on Anthropic's API
            structure = anthropic.structured_schema(client, structure)
            sent = config.get("tools") or () if choice != "none" else ()  # (none: no tools go)
            anthropic.structured_limits(client, [structure] + [anthropic.strict_tool_schema(client, tool)
                                                               for tool in sent if tool.get("strict")])
        schema = {"schema": dumps(structure)}  # type: Dict[str, Any]
        if wanted.get("name"):
            schema["name"] = wanted["name"]
        if wanted.get("description"):
            schema["description"] = wanted["description"]
        body["outputConfig"] = {"textFormat": {"type": "json_schema", "structure": {"jsonSchema": schema}}}
    if config.get("fast_mode"):
        body["serviceTier"] = {"type": "priority"}

    tools = config.get("tools") or []
    if choice == "none":
        if tool_names:
            raise unsupported(client, "tool_choice", "'none' cannot be sent over Bedrock Converse with tool calls in "
                                                     "the history (it has no 'none'; use 'auto')")
        tools = []
    if tools:
        specs = [_tool(client, tool, claude is not None) for tool in tools]  # type: List[Dict[str, Any]]
        strict = [spec["toolSpec"]["inputSchema"]["json"] for spec in specs if spec["toolSpec"].get("strict")]
        if claude is not None and strict and wanted is None:
            anthropic.structured_limits(client, strict, "tools")
        if cache is not None and claude is not None:  # Nova caches the system prompt and messages, not tools
            specs.append(dict(cache))
        tool_config = {"tools": specs}  # type: Dict[str, Any]
        if choice == "required":
            tool_config["toolChoice"] = {"any": {}}
        elif isinstance(choice, list):
            tool_config["toolChoice"] = {"tool": {"name": choice[0]}}
        elif choice == "auto":
            tool_config["toolChoice"] = {"auto": {}}
        body["toolConfig"] = tool_config
    elif tool_names:  # Bedrock refuses toolUse / toolResult blocks without a toolConfig
        body["toolConfig"] = {"tools": [{"toolSpec": {"name": name, "inputSchema": {"json": {"type": "object"}}}}
                                        for name in tool_names]}
    if extra:
        body["additionalModelRequestFields"] = extra
    if marks:
        points = sum(1 for part in (body.get("system") or []) + (body.get("toolConfig") or {}).get("tools", [])
                     + [b for turn in wire for b in turn["content"]] if "cachePoint" in part)
        if points > MAX_CACHE_POINTS:
            raise unsupported(client, "cache_breakpoint", "is set on {} items; Bedrock takes at most {} cache points a "
                                                          "request and prompt_caching {} adds {} (after the system "
                                                          "prompt and the tools): remove some, or set prompt_caching "
                                                          "DISABLE to place {} of your own".format(
                                                              marks, MAX_CACHE_POINTS, caching.name, points - marks,
                                                              MAX_CACHE_POINTS) if points > marks else
                              "is set on {} items; Bedrock takes at most {} cache points a request: remove some".format(
                                  marks, MAX_CACHE_POINTS))

    headers = {"Content-Type": "application/json", "Accept": CONTENT_TYPE}
    headers.update(endpoint.headers)
    return HttpRequest("POST", "/model/{}/converse-stream".format(encode_path_segment(model)), headers, body,
                       output_limit=("inferenceConfig", "maxTokens"))


def _tool(client: str, tool: Mapping[str, Any], claude: bool) -> Dict[str, Any]:
    spec = {"name": tool["name"]}  # type: Dict[str, Any]
    if tool.get("description"):
        spec["description"] = tool["description"]
    if claude and tool.get("strict"):  # Claude's structured outputs here take what they take on Anthropic's API
        spec["inputSchema"] = {"json": anthropic.strict_tool_schema(client, tool)}
    else:
        spec["inputSchema"] = {"json": tool.get("parameters") or {"type": "object", "properties": {}}}
    if tool.get("strict"):
        spec["strict"] = True  # ToolSpecification.strict (botocore's bedrock-runtime model)
    return {"toolSpec": spec}


def _tool_id(tool_call_id: str) -> str:
    """Tool-use ids must match [a-zA-Z0-9_.:-]+ (64 at most): ids from other servers are made to fit."""
    fitted = _ID_UNSAFE.sub("_", tool_call_id) if _ID_UNSAFE.search(tool_call_id) else tool_call_id
    return fitted[:64] or "call"


class _ToolIds(object):
    """One request's tool_call_id -> toolUseId: fitted (``_tool_id``), and a suffix (``_2``, ``_3``...) for an
    id whose fitted form another id of the request already has ("call/1" and "call_1"; two ids alike in
    their first 64 characters), so a result still answers its own call.  The history is sent whole on
    every turn, so the same history gives the same ids."""

    __slots__ = ("given", "taken")

    def __init__(self) -> None:
        self.given = {}  # type: Dict[str, str]
        self.taken = set()  # type: set

    def __call__(self, tool_call_id: str) -> str:
        found = self.given.get(tool_call_id)
        if found is None:
            fitted = found = _tool_id(tool_call_id)
            count = 1
            while found in self.taken:
                count += 1
                suffix = "_{}".format(count)
                found = fitted[:64 - len(suffix)] + suffix
            self.given[tool_call_id] = found
            self.taken.add(found)
        return found


def _b64(data: bytes) -> str:
    return base64.b64encode(bytes(data)).decode("ascii")


def _media(client: str, mime_type: str, data: bytes, documents: List[int]) -> Dict[str, Any]:
    mime = mime_type.lower().split(";", 1)[0].strip()
    if mime in _IMAGE_FORMATS:
        check_still(client, mime, data, "Bedrock Converse")
        return {"image": {"format": _IMAGE_FORMATS[mime], "source": {"bytes": _b64(data)}}}
    if mime in _DOCUMENT_FORMATS:
        documents[0] += 1
        return {"document": {"format": _DOCUMENT_FORMATS[mime], "name": "document {}".format(documents[0]),
                             "source": {"bytes": _b64(data)}}}
    raise unsupported(client, "inline_data", "of type {} cannot be sent over Bedrock Converse".format(mime_type))


def _url(client: str, url: str, documents: List[int]) -> Dict[str, Any]:
    parsed = parse_data_uri(url)
    if parsed is not None:
        return _media(client, parsed[0], parsed[1], documents)
    if url.startswith("s3://"):
        path = url.lower().split("?", 1)[0]
        for mime, fmt in _IMAGE_FORMATS.items():
            if path.endswith("." + fmt) or (fmt == "jpeg" and path.endswith(".jpg")):
                return {"image": {"format": fmt, "source": {"s3Location": {"uri": url}}}}
        raise unsupported(client, "image_url", "s3:// URLs need a png/jpeg/gif/webp extension to name their format")
    raise unsupported(client, "image_url", "Bedrock cannot fetch http(s) URLs: send the bytes as inline_data "
                                           "(or a data: URI, or an s3:// URL)")


def _messages(client: str, messages: List[Mapping[str, Any]]) -> Tuple[List[Dict[str, Any]], List[str]]:
    """-> (Converse messages, names of the tools the history uses)."""
    out = []  # type: List[Dict[str, Any]]
    names = []  # type: List[str]
    documents = [0]
    ids = _ToolIds()
    for message in messages:
        role = message["role"]
        if role == "assistant":
            content = _assistant(message, names, client, ids)
        else:
            content = _user(client, message, documents, ids)
            if any("toolResult" in block for block in content) and not names:
                names.append("tool")  # a tool result whose call is not in the history still needs a toolConfig
        if not content:
            continue
        if out and out[-1]["role"] == role:  # Converse wants the roles alternating: join the turns
            if role == "user":
                results = [b for b in content if "toolResult" in b]
                rest = [b for b in content if "toolResult" not in b]
                previous = out[-1]["content"]
                head = [b for b in previous if "toolResult" in b]
                out[-1]["content"] = head + results + [b for b in previous if "toolResult" not in b] + rest
            else:
                out[-1]["content"].extend(content)
        else:
            out.append({"role": role, "content": content})
    return out, names


def _place_cache_points(content: List[Dict[str, Any]], point: Mapping[str, Any]) -> List[Dict[str, Any]]:
    """``content`` with a ``cachePoint`` after each block made from a marked item (its private mark removed)."""
    out = []  # type: List[Dict[str, Any]]
    for block in content:
        marked = block.pop(_MARKED, False)
        out.append(block)
        if marked:
            out.append({"cachePoint": dict(point)})
    return out


def _mark(client: str, made: List[Dict[str, Any]], before: int, where: str) -> None:
    """Mark the last block a marked item made (none made, or a reasoning block: an error)."""
    if len(made) <= before or "reasoningContent" in made[-1]:
        raise unsupported(client, "cache_breakpoint", "is set on {}, which sends no block Bedrock can put a cache "
                                                      "point after (mark another item)".format(where))
    made[-1][_MARKED] = True


def _user(client: str, message: Mapping[str, Any], documents: List[int],
          ids: Optional[_ToolIds] = None) -> List[Dict[str, Any]]:
    ids = ids if ids is not None else _ToolIds()
    results = []  # type: List[Dict[str, Any]]
    blocks = []  # type: List[Dict[str, Any]]
    marks = cache_marks(message)
    for position, item in enumerate(message["content_items"]):
        kind = item["type"]
        before = (len(results), len(blocks))
        if kind == "text":
            if visible_text(item["text"]):
                blocks.append({"text": item["text"]})
        elif kind == "image_url":
            blocks.append(_url(client, item["image_url"], documents))
        elif kind == "inline_data":
            blocks.append(_media(client, item["mime_type"], item["data"], documents))
        elif kind == "tool_result":
            parts = [{"text": item["text"]}] if visible_text(item["text"]) else []  # type: List[Dict[str, Any]]
            for url in item.get("images") or ():
                parts.append(_url(client, url, documents))
            if not parts:  # Converse refuses an empty content, and an empty or blank text block in it
                parts = [{"text": NO_OUTPUT}]
            result = {"toolUseId": ids(item["tool_call_id"]), "content": parts}  # type: Dict[str, Any]
            if item.get("is_error"):
                result["status"] = "error"
            results.append({"toolResult": result})
        else:  # pragma: no cover - validate.check_message keeps other items out of user messages
            left_out(kind, 'Bedrock Converse', "user")
        if marks[position]:
            made, start = (results, before[0]) if len(results) > before[0] else (blocks, before[1])
            _mark(client, made, start, "a user {} item".format(kind))
    return results + blocks


def _assistant(message: Mapping[str, Any], names: List[str], client: str = "bedrock",
               ids: Optional[_ToolIds] = None) -> List[Dict[str, Any]]:
    ids = ids if ids is not None else _ToolIds()
    blocks = []  # type: List[Dict[str, Any]]
    marks = cache_marks(message)
    for position, item in enumerate(message["content_items"]):
        kind = item["type"]
        fidelity = item.get("fidelity") or {}
        before = len(blocks)
        if kind == "text" or kind == "thinking":
            text = item[kind]
            if "redacted_content" in fidelity:
                blocks.append({"reasoningContent": {"redactedContent": fidelity["redacted_content"]}})
            elif "bedrock_block" in fidelity:
                blocks.append(fidelity["bedrock_block"])
            if kind == "thinking":
                signature = fidelity.get("signature")
                if isinstance(signature, str) and "redacted_content" not in fidelity:
                    blocks.append({"reasoningContent": {"reasoningText": {"text": text, "signature": signature}}})
                elif text:
                    logger.debug("unsigned reasoning is not replayed to Bedrock")
            elif visible_text(text):
                blocks.append({"text": text})
        elif kind == "tool_call":
            if item["name"] not in names:
                names.append(item["name"])
            blocks.append({"toolUse": {"toolUseId": ids(item["tool_call_id"]), "name": item["name"],
                                       "input": item["arguments"]}})
        else:
            left_out(kind, 'Bedrock Converse')
        if marks[position]:
            _mark(client, blocks, before, "an assistant {} item".format(kind))
    return blocks


# -- response ------------------------------------------------------------------------------------


def map_usage(raw: Mapping[str, Any]) -> Any:
    """Converse usage -> the four buckets (see the module docstring for the inclusive-inputTokens check)."""
    inputs = to_int(raw.get("inputTokens"))
    output = to_int(raw.get("outputTokens"))
    total = to_int(raw.get("totalTokens"))
    read = to_int(raw.get("cacheReadInputTokens"))
    write = to_int(raw.get("cacheWriteInputTokens"))
    cached = (read or 0) + (write or 0)
    if inputs is not None and cached and total is not None and output is not None:
        if total != inputs + output + cached and total == inputs + output and inputs >= cached:
            inputs -= cached  # an inclusive inputTokens (its total leaves no room for the cache counts)
    prompt = inputs
    if write:
        prompt = (prompt or 0) + write
    hour = None  # the 1-hour part of the writes: ``cacheDetails`` [{"ttl": "1h" | "5m", "inputTokens": n}]
    details = raw.get("cacheDetails")
    if type(details) is list and write:
        by_ttl = {}  # type: Dict[str, int]
        for entry in details:
            count = to_int(entry.get("inputTokens")) if type(entry) is dict else None
            if count is not None and entry.get("ttl") in ("5m", "1h"):
                by_ttl[entry["ttl"]] = by_ttl.get(entry["ttl"], 0) + count
        if by_ttl and sum(by_ttl.values()) == write:  # a split that adds up to the count it splits
            hour = by_ttl.get("1h", 0)
    return with_cache_write(usage(read, prompt, None, output), write, hour)


def _loads(payload: bytes, or_text: bool = False) -> Any:
    """An event-stream payload's JSON (``{}`` when empty).  Not JSON: a StreamProtocolError, or with
    ``or_text`` (an exception frame, whose error is raised either way) its text."""
    try:
        return json_loads(payload.decode("utf-8")) if payload else {}
    except (ValueError, UnicodeDecodeError):
        if or_text:
            return payload.decode("utf-8", "replace")
        raise StreamProtocolError("bedrock: an event-stream payload is not JSON ({} bytes)".format(len(payload)),
                                  client="bedrock") from None


def stream_error(client: str, kind: Optional[str], payload: Any, status: Optional[int] = None) -> UpstreamError:
    """An exception (or error) frame, or an HTTP error body, -> the typed error its type names."""
    if isinstance(kind, bytes):  # a header sent as bytes (type 6) where a string belongs
        kind = kind.decode("utf-8", "replace")
    if not isinstance(kind, str):  # an int, a bool: no type name
        kind = ""
    name = kind.split(":", 1)[0].rsplit("#", 1)[-1].strip()  # "ns#ThrottlingException:http://..."
    key = name[:1].lower() + name[1:]
    message = None
    original = None
    if isinstance(payload, dict):
        message = payload.get("message") or payload.get("Message")
        original = payload.get("originalStatusCode")
        if payload.get("originalMessage") and not message:
            message = payload.get("originalMessage")
    elif isinstance(payload, str):
        message = payload
    if not isinstance(message, str) or not message:
        message = name or "Bedrock error"
    cls, default_status, retryable = EXCEPTIONS.get(key, (None, None, None))
    if key == "modelStreamErrorException" and isinstance(original, int):
        if original == 429:
            cls = RateLimitError
        elif original < 500:
            cls, retryable = UpstreamError, False
    if status is None:
        status = default_status
    if cls is None:
        cls = AuthenticationError if status in (401, 403) else RateLimitError if status == 429 else (
            ServerError if status is not None and status >= 500 else UpstreamError)
        retryable = status in (408, 429, 500, 502, 503, 504)
    return cls(preview(message, 2000), client=client, status=status, error_type=name or None,
               retryable=bool(retryable), code=str(original) if original is not None else None)


class _Block(object):
    __slots__ = ("kind", "signature", "redacted", "raw", "parts", "emitted")

    def __init__(self, kind: str, raw: Any = None) -> None:
        self.kind = kind  # "text", "reasoning", "tool", "server", "image"
        self.signature = ""
        self.redacted = []  # type: List[str]
        self.raw = raw
        self.parts = []  # type: List[Any]
        self.emitted = False


class _State(object):
    """A stream's blocks and assembler, what ``collect`` holds open after the items yielded so far (so
    that an item carrying only fidelity lands where it is meant to), and what the terminal events said."""

    __slots__ = ("client", "tools", "blocks", "fold", "replayable", "usage", "finish", "stopped")

    def __init__(self, client: str, tool_id_prefix: Any = None) -> None:
        self.client = client
        self.tools = ToolCallAssembler(client, tool_id_prefix)
        self.blocks = {}  # type: Dict[Any, _Block]
        self.fold = Fold()
        self.replayable = False
        self.usage = None  # type: Optional[Dict[str, Any]]
        self.finish = None  # type: Optional[str]
        self.stopped = False  # messageStop arrived

    def carrier(self, natural: str, fidelity: Dict[str, Any], text: str = "") -> Dict[str, Any]:
        """An item of its own carrying ``fidelity`` (its kind flipped when ``natural`` would fold into the
        open item without fidelity)."""
        kind = self.fold.own_kind(natural)
        item = {"type": kind, kind: text, "fidelity": fidelity}
        self.fold.add(item)
        return item


def _payloads(messages: Iterable[Any], client: str) -> Iterator[Tuple[Any, Any]]:
    """Event-stream messages -> ``(event type, payload)``, each payload decoded once: exception and
    error frames raise the typed error they name; frames of other message types and the
    ``initial-response`` event are dropped."""
    for message in messages:
        headers = message.headers
        mtype = headers.get(":message-type")
        if mtype == "exception":
            raise stream_error(client, headers.get(":exception-type"), _loads(message.payload, or_text=True))
        if mtype == "error":
            raise stream_error(client, headers.get(":error-code"), headers.get(":error-message"))
        if mtype not in (None, "event"):
            continue
        etype = headers.get(":event-type")
        if etype == "initial-response":
            continue
        yield etype, _loads(message.payload)


def parse_stream(messages: Iterable[Any], client: str = "bedrock", tool_id_prefix: Any = None) -> Iterator[Any]:
    """Event-stream messages of one ConverseStream answer -> content items, then a StreamEnd."""
    state = _State(client, tool_id_prefix)
    handlers = _EVENTS
    for etype, payload in _payloads(messages, client):
        if payload.__class__ is not dict:
            continue
        handler = handlers.get(etype)
        if handler is not None:  # (messageStart and events this module does not know: nothing to do)
            items = handler(state, payload)
            if items:
                yield from items
            if state.stopped and etype == "metadata":
                break  # the last event of the stream
    if not state.stopped:
        return  # cut before messageStop: the driver raises StreamProtocolError
    blocks = state.blocks
    for index in sorted(blocks, key=lambda i: (type(i) is not int, i if type(i) is int else 0)):
        yield from _close(blocks[index], index, state)
    yield from state.tools.finish()
    raw_usage = state.usage
    yield StreamEnd(map_usage(raw_usage) if raw_usage else None, state.finish, state.replayable)


# -- the handlers: one per event type (_EVENTS) and one per delta field (_DELTAS); each returns its items


def _text_delta(state: _State, index: Any, text: Any) -> Any:
    if index not in state.blocks:
        state.blocks[index] = _Block("text")
    if text and text.__class__ is str:
        item = {"type": "text", "text": text}
        state.fold.add(item)
        return (item,)
    return ()


def _tool_delta(state: _State, index: Any, delta: Any) -> Any:
    block = state.blocks.get(index)
    fragment = delta.get("input")
    if block is not None and block.kind == "server":
        block.parts.append(fragment if isinstance(fragment, str) else dumps(fragment))
        return ()
    return state.tools.feed_arguments(index, fragment)


def _reasoning_delta(state: _State, index: Any, reasoning: Any) -> Any:
    block = state.blocks.get(index)
    if block is None or block.kind != "reasoning":
        block = state.blocks[index] = _Block("reasoning")
    out = ()  # type: Any
    text = reasoning.get("text")
    if text and isinstance(text, str):
        if not block.emitted and (block.parts or state.fold.carrying("thinking")):
            block.parts.append(text)  # it would join a carrier: held until its signature
        else:
            block.emitted = True
            item = {"type": "thinking", "thinking": text}
            state.fold.add(item)
            out = (item,)
    signature = reasoning.get("signature")
    if signature and isinstance(signature, str):
        block.signature = signature if signature.startswith(block.signature) and block.signature \
            else block.signature + signature
    redacted = reasoning.get("redactedContent")
    if redacted and isinstance(redacted, str):
        block.redacted.append(redacted)
    return out


def _image_delta(state: _State, index: Any, image: Any) -> Any:
    block = state.blocks.get(index)
    source = (image or {}).get("source") or {}
    if block is not None and block.kind == "image" and isinstance(source.get("bytes"), str):
        block.parts.append(source["bytes"])
    return ()


def _result_delta(state: _State, index: Any, result: Any) -> Any:
    block = state.blocks.get(index)
    if block is not None and block.kind == "server" and isinstance(result, list):
        block.parts.extend(result)
    return ()


#: the field a contentBlockDelta's delta carries -> its handler(state, index, value); the first present wins
_DELTAS = (("text", _text_delta), ("toolUse", _tool_delta), ("reasoningContent", _reasoning_delta),
           ("image", _image_delta), ("toolResult", _result_delta))


def _block_delta(state: _State, payload: Dict[str, Any]) -> Any:
    index = payload.get("contentBlockIndex")
    delta = payload["delta"]
    if "text" in delta:  # (the row nearly every event takes, first)
        return _text_delta(state, index, delta["text"])
    for field, handler in _DELTAS:
        if field in delta:
            return handler(state, index, delta[field])
    return ()  # citations and deltas this module does not know


def _block_start(state: _State, payload: Dict[str, Any]) -> Any:
    index = payload.get("contentBlockIndex")
    start = payload.get("start") or {}
    blocks = state.blocks
    if "toolUse" in start:
        use = start["toolUse"]
        if use.get("type") == "server_tool_use":
            blocks[index] = _Block("server", {"toolUse": {k: v for k, v in use.items()}})
            return ()
        blocks[index] = _Block("tool")
        return state.tools.feed(index, use.get("toolUseId"), use.get("name"), "")
    if "toolResult" in start:
        blocks[index] = _Block("server", {"toolResult": dict(start["toolResult"])})
    elif "image" in start:
        blocks[index] = _Block("image", start["image"].get("format"))
    return ()


def _block_stop(state: _State, payload: Dict[str, Any]) -> Any:
    index = payload.get("contentBlockIndex")
    block = state.blocks.pop(index, None)
    return () if block is None else _close(block, index, state)


def _message_stop(state: _State, payload: Dict[str, Any]) -> Any:
    reason = payload.get("stopReason")
    state.finish = FINISH_REASONS.get(reason, "unknown") if isinstance(reason, str) else "unknown"
    state.stopped = True
    return ()


def _metadata(state: _State, payload: Dict[str, Any]) -> Any:
    if isinstance(payload.get("usage"), dict):
        state.usage = payload["usage"]
    return ()


#: ``:event-type`` -> handler(state, payload) -> the items it owes (h11-style: the grammar is this table)
_EVENTS = {
    "contentBlockDelta": _block_delta,
    "contentBlockStart": _block_start,
    "contentBlockStop": _block_stop,
    "messageStop": _message_stop,
    "metadata": _metadata,
}


def _close(block: _Block, index: Any, state: _State) -> List[Dict[str, Any]]:
    kind = block.kind
    fold = state.fold
    if kind == "tool":
        items = state.tools.close(index)
        for item in items:
            fold.add(item)
        return items
    if kind == "reasoning":
        out = []  # type: List[Dict[str, Any]]
        if block.redacted:
            data = block.redacted[0] if len(block.redacted) == 1 else _b64(
                b"".join(_unb64(part) for part in block.redacted))
            out.append(state.carrier("thinking", {"redacted_content": data}))
        held = "".join(block.parts)
        if held:  # text held back: one item with its signature
            item = {"type": "thinking", "thinking": held}  # type: Dict[str, Any]
            if block.signature:
                item["fidelity"] = {"signature": block.signature}
            fold.add(item)
            out.append(item)
        elif block.signature:
            # the signature seals the thinking it signs when that is the open item; else an item of its own
            # (collect keeps it open: later deltas of its kind would join it)
            item = {"type": "thinking", "thinking": "", "fidelity": {"signature": block.signature}}
            fold.add(item)
            out.append(item)
        return out
    if kind == "image":
        image = b"".join(_unb64(part) for part in block.parts)
        fmt = block.raw if isinstance(block.raw, str) else "png"
        item = {"type": "inline_data", "data": image, "mime_type": "image/" + fmt}
        fold.add(item)
        return [item]
    if kind == "server":
        raw = block.raw
        if "toolUse" in raw:
            text = "".join(block.parts)
            try:
                raw["toolUse"]["input"] = _json_loads(text) if text.strip() else {}
            except ValueError:
                logger.debug("a server tool block with unreadable input is left out")
                return []
        else:
            raw["toolResult"]["content"] = list(block.parts)
        state.replayable = True
        return [state.carrier("text", {"bedrock_block": raw})]
    return []


def _unb64(text: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise StreamProtocolError("bedrock: a base64 field in the stream does not decode", client="bedrock") from None


def parse_document(payload: Any, client: str = "bedrock") -> Iterator[Any]:
    """A whole Converse answer (``{"output": {"message": ...}, "stopReason", "usage"}``) -> the same parts."""
    if not isinstance(payload, dict) or "output" not in payload:
        if isinstance(payload, dict) and (payload.get("message") or payload.get("Message") or payload.get("__type")):
            kind = payload.get("__type")  # an AWS error document answered with 200
            raise stream_error(client, kind if isinstance(kind, str) else None, payload)
        raise StreamProtocolError("{}: the JSON answer holds no Converse output".format(client), client=client)
    content = ((payload.get("output") or {}).get("message") or {}).get("content") or []
    state = _State(client)
    tools = state.tools
    for position, block in enumerate(content):
        if not isinstance(block, dict):
            continue
        if isinstance(block.get("text"), str):
            if block["text"]:
                item = {"type": "text", "text": block["text"]}
                state.fold.add(item)
                yield item
        elif isinstance(block.get("reasoningContent"), dict):
            reasoning = block["reasoningContent"]
            part = _Block("reasoning")
            text_block = reasoning.get("reasoningText") or {}
            if isinstance(text_block.get("text"), str) and text_block["text"]:
                part.parts.append(text_block["text"])
            if isinstance(text_block.get("signature"), str):
                part.signature = text_block["signature"]
            if isinstance(reasoning.get("redactedContent"), str):
                part.redacted.append(reasoning["redactedContent"])
            for item in _close(part, position, state):
                yield item
        elif isinstance(block.get("toolUse"), dict):
            use = block["toolUse"]
            if use.get("type") == "server_tool_use":
                state.replayable = True
                yield state.carrier("text", {"bedrock_block": block})
                continue
            for item in tools.feed(position, use.get("toolUseId"), use.get("name"), dumps(use.get("input") or {})) \
                    + tools.close(position):
                state.fold.add(item)
                yield item
        elif isinstance(block.get("toolResult"), dict):
            state.replayable = True
            yield state.carrier("text", {"bedrock_block": block})
    for item in tools.finish():
        yield item
    reason = payload.get("stopReason")
    finish = FINISH_REASONS.get(reason, "unknown") if isinstance(reason, str) else "unknown"
    raw = payload.get("usage")
    yield StreamEnd(map_usage(raw) if isinstance(raw, dict) else None, finish, state.replayable)


def models_request(endpoint: Endpoint, page_token: Optional[str] = None) -> HttpRequest:
    """``GET /foundation-models`` (the aws host sends it to the control plane, ``bedrock.{region}...``,
    for an AWS ``bedrock-runtime`` host; another endpoint is asked at its own root), signed like a stream call."""
    path = "/foundation-models"
    if page_token:
        path += "?nextToken=" + encode_path_segment(page_token)
    headers = {"Accept": "application/json"}
    headers.update(endpoint.headers)
    return HttpRequest("GET", path, headers, None, stream=False)


def parse_models(payload: Any, client: str = "bedrock") -> Tuple[List[str], Optional[str]]:
    """``{"modelSummaries": [{"modelId": ...}], "nextToken"?}`` -> (ids, the next page's token)."""
    ids = model_list_page(payload, client, items="modelSummaries", key="modelId")
    token = payload.get("nextToken") if isinstance(payload, dict) else None
    return ids, token if isinstance(token, str) and token else None


# -- token counting (agenthub.providers.counting) ---------------------------------------------------

#: the answer's count field, and the members of CountTokens' ConverseTokensRequest
COUNT_FIELD = "inputTokens"
COUNT_KEYS = ("messages", "system", "toolConfig", "additionalModelRequestFields")


def count_request(plan: HttpRequest, model: str, quirks: Mapping[str, Any], form: Any = True) -> HttpRequest:
    """``POST /model/{modelId}/count-tokens`` with the Converse input of the streaming ``plan``."""
    from .counting import count_plan, keep, replace_tail

    path = replace_tail(plan.url, "/converse-stream", "/count-tokens", "bedrock")
    return count_plan(plan, path, {"input": {"converse": keep(plan.body, COUNT_KEYS)}})


PROTOCOL = Protocol(
    "bedrock", __name__, build_request, parse_stream,
    framing=iter_messages, parse_document=parse_document, models_request=models_request, parse_models=parse_models,
    demo=("us.anthropic.claude-sonnet-4-5-20250929-v1:0", "Amazon Bedrock Converse"),
    count=Count(count_request, COUNT_FIELD),
)
