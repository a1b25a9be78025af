"""Google Gemini ``generateContent``, streamed (``:streamGenerateContent?alt=sse``).

``build_request`` and ``parse_stream`` are pure.  Vendor differences are data: the
registry row's ``endpoint.quirks`` (``tts``, ``image_output``,
``stream_function_call_arguments``) and the model tables below (``THINKING``,
``SIGNATURE_REQUIRED``).

Request
-------
- The path is ``/v1beta/models/{model}:streamGenerateContent?alt=sse``; the host (``agenthub.hosts``)
  joins it to base_url (``/models/...`` when base_url already names a version: ``.../v1beta``, Vertex
  AI's ``https://aiplatform.googleapis.com/v1/publishers/google``) and sends the key in the
  ``x-goog-api-key`` header, never in the URL.
- user -> ``user`` contents, assistant -> ``model`` contents (an assistant message right after another, nothing
  sent between them, joins its model content: Gemini takes a function call turn only after a user or function
  response turn); ``system_prompt`` ->
  ``systemInstruction``; ``max_tokens`` -> ``maxOutputTokens``; ``temperature``.
- tools -> one ``functionDeclarations`` tool; the JSON Schema goes in
  ``parametersJsonSchema`` (full JSON Schema, unlike the OpenAPI subset of
  ``parameters``).  tool_choice -> ``functionCallingConfig`` (auto -> AUTO,
  required -> ANY, none -> NONE, a list of names -> ANY + ``allowedFunctionNames``).
- thinking_level -> ``thinkingConfig``, clamped per model to what it accepts (never
  an error): Gemini 3 and 4 models take ``thinkingLevel`` (the nearest supported level,
  ties round up; xhigh and max -> ``XHIGH`` on Gemini 4 Neon and Hydrogen, the only models
  taking it, else the nearest; Gemini 4 takes no ``MINIMAL``: none -> ``LOW``), Gemini 2.5
  models a ``thinkingBudget``; thinking_summary -> ``includeThoughts``.
- images: data URIs -> ``inlineData``; any other URL (http(s), gs://) -> ``fileData``
  with ``fileUri`` (MIME type guessed from the extension when it can be).  The URL is
  never fetched here: the server reads it (public or signed URLs), or refuses it.  An image given
  as bytes (inline_data, a data URI), or a URL whose extension names an image type, of a type Gemini
  does not take (its PNG, JPEG, WebP, HEIC, HEIF) is an UnsupportedParameterError before sending.
- tool_call -> ``functionCall`` (its ``id`` only when the server gave one; a
  synthetic id is recorded in fidelity and left out); tool_result ->
  ``functionResponse`` ``{name, id?, response: {"result": text}, parts: [images]}``
  (``{"error": text}`` for an ``is_error`` result, as google-genai writes a failed call),
  the name taken from the matching call.  Function responses go in a content of
  their own (servers reject a content mixing them with text); URL images of a tool
  result follow in the next user content, since ``functionResponse.parts`` only
  carries inline bytes on the Gemini API.
- every thought signature is replayed on the part it came with.  Thinking is
  replayed only when signed (Gemini reads nothing from unsigned thought text, and
  another provider's thinking must not reach it).  On models that require a
  signature on function calls (``SIGNATURE_REQUIRED``), a model turn whose calls
  carry none (history from another provider) gets Google's documented placeholder
  on its first call.
- image_config -> ``imageConfig`` + ``responseModalities`` TEXT and IMAGE.
- response_format -> ``responseMimeType: "application/json"`` (+ ``responseJsonSchema``; on Gemini
  1.x / 2.0 the schema converted to the OpenAPI-subset ``responseSchema``, see ``openapi_schema``); ``top_p`` -> ``topP``; ``stop`` ->
  ``stopSequences`` (up to 5); ``seed``; ``fast_mode`` -> top-level ``serviceTier: "priority"``
  (quirk ``fast_mode: False`` raises instead).  ThinkingLevel.MAX -> HIGH (or the largest budget).
- tts (a ``-tts`` model, or ``tts_config`` given) -> ``responseModalities`` AUDIO and
  ``speechConfig`` (one voice, or two named speakers -> multi-speaker); only the last
  message is sent, text only (speech models are single-turn).

Stream
------
- text / thought text -> text / thinking; ``inlineData`` -> inline_data (images,
  raw PCM audio with its MIME type; audio chunks stay separate items, see
  ``agenthub.media.save_wav``), thought images -> inline_thinking; an image
  ``fileData`` -> image_url.  Other parts (executableCode, ...) are skipped.
- ``thoughtSignature`` on any part -> ``fidelity["thought_signature"]`` of the item it
  came with; an empty text part carrying only a signature becomes an empty text item
  carrying only fidelity.
- ``functionCall`` with whole ``args`` -> announce, one fragment, complete call (the
  tool-call machine serialises the arguments).  Vertex streamed arguments (a call
  opened with ``willContinue``, then ``partialArgs`` with a JSON path each, then a part
  without ``willContinue``) are rewritten into JSON text fragments as they arrive.
- finishReason STOP -> stop (tool_call when calls were made), MAX_TOKENS and CONTINUATION (a Gemini 4
  long-decode hop; its continuationToken is not sent back) -> length, anything else -> unknown.  A
  stream is complete when a chunk with a finishReason arrived and the body ended cleanly.  Chunks
  without candidates (heartbeats, usage only) are skipped; an ``error`` object raises UpstreamError;
  a blocked prompt (``promptFeedback.blockReason``) raises UpstreamError with the reason as error_type.
- usage: cached = cachedContentTokenCount, prompt = promptTokenCount - cached +
  toolUsePromptTokenCount, thoughts = thoughtsTokenCount, response =
  candidatesTokenCount (its image tokens, ``candidatesTokensDetails`` of modality ``IMAGE``,
  ride along as ``Usage.output_image_tokens``).  Each chunk's ``usageMetadata`` is a snapshot of
  the turn so far, not fields to merge: the last one that counts tokens is taken whole (a later snapshot without
  ``candidatesTokenCount`` means no visible tokens, not "as before"), so the buckets add up to
  its ``totalTokenCount``.
"""

import base64
import json
import logging
import mimetypes
import re
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Tuple
from urllib.parse import quote

from ..errors import ConfigError, StreamProtocolError, upstream_error
from ..sse import SSEEvent
from ..stream import StreamEnd, usage_count, with_audio, with_output_images
from ..toolcalls import ToolCallAssembler
from ..types import MAX_DEPTH, HttpRequest, PromptCaching, ThinkingLevel
from ._common import NOTES, Encoded, Prior, Resumed, keep, marks_resumed, noting, start
from ._common import (Count, DONE, document_payloads, payloads, Endpoint, Protocol, check_response_format, documents, get_request,
                      model_list_page, nearest, parse_data_uri, request_headers, samplers, to_int, unsupported,
                      usage)
from ._common import (GEMINI_IMAGE_TYPES, answer_bytes, answer_mime, check_image_type, check_still, media_type, refuse_mcp_servers,
                      something_to_send)

__all__ = [
    "build_request",
    "parse_stream",
    "parse_document",
    "map_usage",
    "request_path",
    "resource_name",
    "blob_part",
    "url_part",
    "thinking_config",
    "thinking_level",
    "takes_thinking",
    "calls_in",
    "checks_signatures",
    "FINISH_REASONS",
    "THINKING",
    "SIGNATURE_REQUIRED",
    "SIGNATURE",
    "SYNTHETIC_ID",
]

logger = noting(logging.getLogger("agenthub"))

#: Gemini finishReason -> UniEvent finish_reason; anything else (SAFETY, RECITATION, ...) is "unknown".
#: CONTINUATION: a long-decode hop of Gemini 4 stopped at the per-request cap (maxOutputTokens above 65,536)
#: with budget left; agenthub does not send its continuationToken back, so the answer is cut: length.
FINISH_REASONS = {"STOP": "stop", "MAX_TOKENS": "length", "CONTINUATION": "length"}
#: fidelity key of a thought signature (base64 text, passed back as it came)
SIGNATURE = "thought_signature"
#: fidelity key marking a tool_call_id made up by the library (the server sent none)
SYNTHETIC_ID = "synthetic_id"
#: Google's documented placeholder for function calls the model did not produce itself
PLACEHOLDER_SIGNATURE = "skip_thought_signature_validator"

_LEVELS = ("minimal", "low", "medium", "high")
#: every thinkingLevel the API names, lightest first (google-genai 3.6.1's ThinkingLevel: XHIGH joined with
#: Gemini 4); the order levels are clamped along
_SCALE = _LEVELS + ("xhigh",)
_TARGET = {
    ThinkingLevel.NONE: "minimal",
    ThinkingLevel.LOW: "low",
    ThinkingLevel.MEDIUM: "medium",
    ThinkingLevel.HIGH: "high",
    ThinkingLevel.XHIGH: "xhigh",
    ThinkingLevel.MAX: "xhigh",
}
_BUDGET_25_FLASH = {"none": 0, "low": 1024, "medium": 8192, "high": 24576, "xhigh": 24576, "max": 24576}
_BUDGET_25_PRO = {"none": 128, "low": 1024, "medium": 8192, "high": 32768, "xhigh": 32768, "max": 32768}
#: stop sequences generationConfig.stopSequences takes ("up to 5")
STOP_LIMIT = 5
#: config key -> its generationConfig field
#: where a plan keeps its output limit (HttpRequest.max_output)
OUTPUT_LIMIT = ("generationConfig", "maxOutputTokens")
_SAMPLERS = {"max_tokens": "maxOutputTokens", "temperature": "temperature", "top_p": "topP", "stop": "stopSequences",
             "seed": "seed"}
#: models that take the OpenAPI-subset ``responseSchema`` rather than a JSON Schema in ``responseJsonSchema``
_OPENAPI_SCHEMA = re.compile(r"gemini-(1\.|2\.0)")

#: How each model takes thinking_level, first match wins (searched in the lower-cased name):
#: a tuple of the thinkingLevel values it accepts (the nearest one is sent, ties round up),
#: a dict ThinkingLevel value -> thinkingBudget (Gemini 2.5), or None (no thinkingConfig at all).
THINKING = (
    (re.compile(r"tts|embedding|native-audio"), None),
    (re.compile(r"gemini-(1\.|2\.0)"), None),
    (re.compile(r"gemini-2\.5-flash-image"), None),
    (re.compile(r"gemini-2\.5-pro"), _BUDGET_25_PRO),
    (re.compile(r"gemini-2\.5"), _BUDGET_25_FLASH),
    (re.compile(r"-image"), ("minimal", "high")),
    # Gemini 4: no MINIMAL; XHIGH on Neon and Hydrogen only (Argon, Carbon: low / medium / high)
    (re.compile(r"gemini-4-(neon|hydrogen)"), ("low", "medium", "high", "xhigh")),
    (re.compile(r"gemini-4"), ("low", "medium", "high")),
    (re.compile(r"gemini-3-pro"), ("low", "high")),
    (re.compile(r"gemini-3\.[78]"), ("low", "medium", "high")),
    (re.compile(r"-pro"), ("low", "medium", "high")),
    (re.compile(r""), _LEVELS),
)
#: Models that reject a replayed function call without a thought signature (Gemini 3 and later;
#: the image models do not check).
SIGNATURE_REQUIRED = re.compile(r"gemini-([3-9]|\d\d)(?!.*-image)")

_TOOL_CHOICE = {"auto": "AUTO", "required": "ANY", "none": "NONE"}
# -- request ------------------------------------------------------------------------------------


def resource_name(model: str) -> str:
    """The model's resource name: ``models/{model}``, or the name itself when it has a collection
    (``models/...``, ``tunedModels/...``)."""
    return model if "/" in model else "models/" + model


def _model_path(model: str) -> str:
    """The bare model id (for the per-model tables)."""
    return model.rsplit("/", 1)[-1]


def request_path(model: str, method: str) -> str:
    """``/v1beta/models/{model}:{method}`` (the host drops ``/v1beta`` for a base URL that already
    names an API version: ``agenthub.hosts.keys``).  Each segment of the model's name is percent-encoded:
    a ``#``, ``?`` or ``:`` in it stays inside the model's segment (no fragment, query or method of its own)."""
    name = "/".join(quote(segment, safe="@") for segment in resource_name(model).split("/"))
    return "/v1beta/{}:{}".format(name, method)


def _schema_field(model: str) -> str:
    return "responseSchema" if _OPENAPI_SCHEMA.search(_model_path(model).lower()) else "responseJsonSchema"


# -- JSON Schema -> the OpenAPI subset of ``responseSchema`` (Gemini 1.x / 2.0), as google-genai's
# -- _transformers.process_schema does it: $defs inlined, null types read as ``nullable``, a string const as a
# -- one-value enum, ``propertyOrdering`` kept in the caller's order, types in the Schema proto's upper case

#: the keywords of the subset (the Schema proto's fields; the value of each is converted where it holds schemas)
_SUBSET = frozenset(["type", "format", "title", "description", "nullable", "enum", "maxItems", "minItems",
                     "properties", "required", "minProperties", "maxProperties", "minLength", "maxLength",
                     "pattern", "example", "anyOf", "propertyOrdering", "default", "items", "minimum", "maximum",
                     "additionalProperties"])
#: keywords that only annotate (no instance is valid or invalid by them): left out, nothing is lost
_ANNOTATIONS = frozenset(["$schema", "$id", "$comment", "$anchor", "deprecated", "readOnly", "writeOnly",
                          "examples", "contentMediaType", "contentEncoding"])
_TYPES = frozenset(["string", "number", "integer", "boolean", "array", "object"])


def openapi_schema(client: str, schema: Mapping[str, Any], vertex: bool = False) -> Dict[str, Any]:
    """A JSON Schema as ``responseSchema`` takes it (Gemini 1.x / 2.0).  What the subset cannot say (a
    recursive $ref, oneOf, a non-string enum, ...) is an UnsupportedParameterError before sending;
    ``additionalProperties`` other than false is Vertex AI's only (the Gemini API refuses it): ``vertex``,
    which ``build_request`` reads from the quirk ``schema_additional_properties`` its client-type row sets."""
    root = dict(schema)
    defs = {}  # type: Dict[str, Any]
    for key in ("$defs", "definitions"):
        found = root.pop(key, None)
        if isinstance(found, Mapping):
            defs.update(found)
    return _openapi(client, root, defs, (), "schema", vertex)


def _schema_error(client: str, where: str, why: str) -> Exception:
    return unsupported(client, "response_format", "schema: {} {} in the OpenAPI subset that responseSchema takes "
                                                  "on Gemini 1.x / 2.0 (models from 2.5 take any JSON Schema)".format(
                                                      where, why))


def _openapi(client: str, schema: Any, defs: Mapping[str, Any], refs: Tuple[str, ...], where: str,
             vertex: bool) -> Dict[str, Any]:
    if not isinstance(schema, Mapping):
        raise _schema_error(client, where, "is {!r}: a schema must be an object".format(schema))
    schema = dict(schema)
    ref = schema.pop("$ref", None)
    if ref is not None:
        name = ref.rsplit("/", 1)[-1] if isinstance(ref, str) and ref.startswith(("#/$defs/", "#/definitions/")) \
            else None
        if name is None or name not in defs:
            raise _schema_error(client, where, "refers to {!r}, which is not under $defs: it cannot be inlined".format(ref))
        if name in refs:
            raise _schema_error(client, where, "refers to {!r} recursively: it cannot be expressed".format(ref))
        resolved = _openapi(client, defs[name], defs, refs + (name,), where, vertex)
        schema = {key: value for key, value in schema.items() if key not in ("$defs", "definitions")}
        siblings = _openapi(client, schema, defs, refs, where, vertex) if schema else {}
        siblings.update(resolved)  # (google-genai: the referenced schema wins over its siblings)
        return siblings
    out = {}  # type: Dict[str, Any]
    kind = schema.pop("type", None)
    nullable = False
    if isinstance(kind, list):
        kinds = [k for k in kind if k != "null"]
        nullable = len(kinds) < len(kind)
        if len(kinds) != 1:
            raise _schema_error(client, where, "has type {!r}: one type (and null) is all it takes".format(kind))
        kind = kinds[0]
    if kind == "null":
        nullable, kind = True, None
    if "const" in schema:
        const = schema.pop("const")
        if not isinstance(const, str) or kind not in (None, "string"):
            raise _schema_error(client, where, "has const {!r}: only a string can be a one-value enum".format(const))
        kind = "string"
        schema["enum"] = [const]
    if kind is not None:
        if kind not in _TYPES:
            raise _schema_error(client, where, "has type {!r}".format(kind))
        out["type"] = kind.upper()
    for key, value in schema.items():
        at = "{}[{!r}]".format(where, key)
        if key in _ANNOTATIONS:
            if key == "examples" and isinstance(value, list) and value and "example" not in schema:
                out["example"] = value[0]
            continue
        if key == "oneOf" or key not in _SUBSET:
            raise _schema_error(client, at, "has no equivalent")
        if key == "properties":
            if not isinstance(value, Mapping):
                raise _schema_error(client, at, "is not an object")
            out[key] = {name: _openapi(client, sub, defs, refs, "{}[{!r}]".format(at, name), vertex)
                        for name, sub in value.items()}
        elif key == "items":
            out[key] = _openapi(client, value, defs, refs, at, vertex)
        elif key == "anyOf":
            if not isinstance(value, list):
                raise _schema_error(client, at, "is not a list")
            arms = [arm for arm in value if not (isinstance(arm, Mapping) and dict(arm) == {"type": "null"})]
            if len(arms) < len(value):
                nullable = True
            arms = [_openapi(client, arm, defs, refs, "{}[{}]".format(at, i), vertex) for i, arm in enumerate(arms)]
            if len(arms) == 1:
                out.update(arms[0])
            else:
                out[key] = arms
        elif key == "enum":
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise _schema_error(client, at, "has values other than strings")
            out[key] = list(value)
        elif key == "additionalProperties":
            if value is False:
                out[key] = False  # (as google-genai sends it)
            elif not vertex:
                raise _schema_error(client, at, "is not false: the Gemini API has no additionalProperties "
                                                "(Vertex AI does)")
            else:
                out[key] = value if isinstance(value, bool) else _openapi(client, value, defs, refs, at, vertex)
        elif value is not None:  # (a null default or title says nothing: google-genai leaves it out too)
            out[key] = value
    if nullable:
        out["nullable"] = True
    properties = out.get("properties")
    if isinstance(properties, dict) and len(properties) > 1 and "propertyOrdering" not in out:
        out["propertyOrdering"] = list(properties)  # the caller's order (the API sorts them otherwise)
    return out


def _headers(endpoint: Endpoint, accept: str) -> Dict[str, str]:
    return request_headers(endpoint, accept)


def _thinking_rule(model: str) -> Any:
    name = _model_path(model).lower()
    for pattern, rule in THINKING:
        if pattern.search(name):
            return rule
    return _LEVELS  # pragma: no cover - the last row matches everything


def _clamp(target: str, supported: Tuple[str, ...]) -> str:
    return nearest(target, supported, _SCALE)


def takes_thinking(model: str) -> bool:
    """Whether ``model`` takes any thinking configuration (speech, embedding and 1.x / 2.0 models take none)."""
    return _thinking_rule(model) is not None


def thinking_level(model: str, level: Any) -> Optional[str]:
    """The thinking level ``level`` is for ``model``, lower case, clamped to what it accepts (never an error);
    for a model that takes budgets here (Gemini 2.5), the level nearest its budget.  None: it takes none.
    (The Interactions API, ``gemini_interactions``, takes levels for every model.)"""
    rule = _thinking_rule(model)
    if rule is None or level is None:
        return None
    target = _TARGET[ThinkingLevel(level)]
    return _clamp(target, _LEVELS if isinstance(rule, dict) else rule)


def thinking_config(model: str, level: Optional[ThinkingLevel], summary: Optional[bool]) -> Optional[Dict[str, Any]]:
    """The ``thinkingConfig`` for ``model`` (None: send none).  Never raises: levels are clamped."""
    rule = _thinking_rule(model)
    if rule is None or (level is None and summary is None):
        return None
    out = {}  # type: Dict[str, Any]
    if level is not None:
        level = ThinkingLevel(level)
        if isinstance(rule, dict):
            out["thinkingBudget"] = rule[level.value]
        else:
            out["thinkingLevel"] = _clamp(_TARGET[level], rule).upper()
    if summary is not None:
        out["includeThoughts"] = bool(summary)
    return out


def _b64(data: Any) -> str:
    return base64.b64encode(bytes(data)).decode("ascii")


def blob_part(mime_type: str, data: Any, client: Optional[str] = None) -> Dict[str, Any]:
    """Bytes as a part; with ``client`` (generateContent), an image of a type Gemini does not take is refused."""
    if client is not None:
        check_image_type(client, mime_type, GEMINI_IMAGE_TYPES, "the Gemini API")
        check_still(client, mime_type, data, "the Gemini API")
    return {"inlineData": {"mimeType": media_type(mime_type), "data": _b64(data)}}


def url_part(url: str, client: Optional[str] = None) -> Dict[str, Any]:
    """An image URL as a part: a data URI is sent inline (``blob_part``), any other URL by reference (never
    fetched here), with the type its extension names (with ``client``: an image type Gemini does not take is
    refused)."""
    parsed = parse_data_uri(url)
    if parsed is not None:
        return blob_part(parsed[0], parsed[1], client)
    file_data = {"fileUri": url}  # type: Dict[str, Any]
    mime = mimetypes.guess_type(url.split("?", 1)[0].split("#", 1)[0])[0]
    if mime:
        if client is not None:  # (the type its extension names is the one sent: an image Gemini refuses is refused)
            check_image_type(client, mime, GEMINI_IMAGE_TYPES, "the Gemini API", "image_url")
        file_data = {"mimeType": mime, "fileUri": url}
    return {"fileData": file_data}


def _declaration(tool: Mapping[str, Any]) -> Dict[str, Any]:
    out = {"name": tool["name"]}  # type: Dict[str, Any]
    if tool.get("description"):
        out["description"] = tool["description"]
    if tool.get("parameters"):
        out["parametersJsonSchema"] = tool["parameters"]
    return out


def calls_in(messages: List[Mapping[str, Any]]) -> Dict[str, Tuple[str, Optional[str]]]:
    """tool_call_id -> (name, the id to send or None) for every call in the history (a function response
    needs its call's name: generateContent and the Interactions API alike)."""
    return _calls_in(messages)


def started_with_calls(prior: Optional[Prior], wire: str, context: Any, messages: List[Mapping[str, Any]]
                       ) -> Tuple[Resumed, Dict[str, Tuple[str, Optional[str]]]]:
    """``wire``'s message mapping started from ``prior`` (``_common.start``) and the calls of its head (``calls_in``,
    as the previous call kept them): the caller adds each assistant message's calls as it converts it, so a function
    response reads the name of the latest call of its id before it (a server that numbers its calls from 0 each turn
    reuses an id, "call_0", for another function)."""
    made = start(prior, wire, context, messages, prior.head if prior is not None else 0, None)
    return made, dict(made.state) if made.count else {}


def _calls_in(messages: List[Mapping[str, Any]]) -> Dict[str, Tuple[str, Optional[str]]]:
    """tool_call_id -> (name, the id to send or None) for every call in the history."""
    calls = {}  # type: Dict[str, Tuple[str, Optional[str]]]
    for message in messages:
        if message["role"] != "assistant":
            continue
        for item in message["content_items"]:
            if item["type"] == "tool_call":
                fidelity = item.get("fidelity") or {}
                wire_id = None if fidelity.get(SYNTHETIC_ID) else item["tool_call_id"]
                calls[item["tool_call_id"]] = (item["name"], wire_id)
    return calls


def _assistant_parts(client: str, message: Mapping[str, Any], placeholder: bool) -> List[Dict[str, Any]]:
    parts = []  # type: List[Dict[str, Any]]
    first_call = None  # type: Optional[Dict[str, Any]]
    signed_call = False
    for item in message["content_items"]:
        kind = item["type"]
        fidelity = item.get("fidelity") or {}
        signature = fidelity.get(SIGNATURE)
        if kind == "text":
            if not item["text"] and not signature:
                continue
            part = {"text": item["text"]}  # type: Dict[str, Any]
        elif kind == "thinking":
            if not signature:
                continue
            part = {"text": item["thinking"], "thought": True}
        elif kind == "inline_data":
            part = blob_part(item["mime_type"], item["data"], client)
        elif kind == "inline_thinking":
            if not signature:
                continue
            part = blob_part(item["mime_type"], item["data"], client)
            part["thought"] = True
        elif kind == "image_url":
            part = url_part(item["image_url"], client)
        elif kind == "tool_call":
            call = {}  # type: Dict[str, Any]
            if not fidelity.get(SYNTHETIC_ID):
                call["id"] = item["tool_call_id"]
            call["name"] = item["name"]
            call["args"] = item["arguments"]
            part = {"functionCall": call}
            if first_call is None:
                first_call = part
            if signature:
                signed_call = True
        else:  # embeddings and the like have no generateContent form
            logger.debug("%s: an assistant %s item is not replayed", client, kind)
            continue
        if signature:
            part["thoughtSignature"] = signature
        parts.append(part)
    if placeholder and first_call is not None and not signed_call:
        first_call["thoughtSignature"] = PLACEHOLDER_SIGNATURE
    return parts


def _user_contents(client: str, message: Mapping[str, Any], calls: Mapping[str, Tuple[str, Optional[str]]]
                   ) -> List[Dict[str, Any]]:
    """A user message as contents: its function responses first, all in one content (Gemini takes the turn
    right after a function call turn as its responses, one per call: a text or a linked image between them
    split that turn, a 400), then its other parts, in their order, in a content of their own.  An empty text
    is no part (Gemini refuses one: "it has an empty text parameter", a 400); a message with nothing else is
    left out, as Anthropic and Bedrock leave it out."""
    responses = []  # type: List[Dict[str, Any]]
    others = []  # type: List[Dict[str, Any]]
    for item in message["content_items"]:
        kind = item["type"]
        if kind == "text":
            if item["text"]:
                others.append({"text": item["text"]})
        elif kind == "image_url":
            others.append(url_part(item["image_url"], client))
        elif kind == "inline_data":
            others.append(blob_part(item["mime_type"], item["data"], client))
        elif kind == "tool_result":
            call_id = item["tool_call_id"]
            if call_id not in calls:
                raise ConfigError(
                    "{}: tool_result {!r} has no matching tool_call earlier in the messages (Gemini needs the "
                    "function name)".format(client, call_id))
            name, wire_id = calls[call_id]
            response = {"name": name}  # type: Dict[str, Any]
            if wire_id:
                response["id"] = wire_id
            # google-genai's automatic function calling writes {"result": ...}, or {"error": ...} for a failure
            response["response"] = {"error" if item.get("is_error") else "result": item["text"]}
            inline = []  # type: List[Dict[str, Any]]
            linked = []  # type: List[Dict[str, Any]]
            for url in item.get("images") or ():
                part = url_part(url, client)
                (inline if "inlineData" in part else linked).append(part)
            if inline:
                response["parts"] = inline
            responses.append({"functionResponse": response})
            others.extend(linked)  # (a functionResponse's parts take inline data only)
        else:  # pragma: no cover - validate.check_message keeps other items out of user messages
            raise ConfigError("{}: a {} item cannot be sent in a user message".format(client, kind))
    return [{"role": "user", "parts": parts} for parts in (responses, others) if parts]


def _contents(client: str, model: str, messages: List[Mapping[str, Any]]) -> List[Dict[str, Any]]:
    return _wire_contents(client, model, messages, None).items


def checks_signatures(model: str) -> bool:
    """Whether ``model`` refuses a function call of the current turn without a thought signature
    (``SIGNATURE_REQUIRED``: another provider's calls go with ``PLACEHOLDER_SIGNATURE``)."""
    return SIGNATURE_REQUIRED.search(_model_path(model).lower()) is not None


def _wire_contents(client: str, model: str, messages: List[Mapping[str, Any]], prior: Optional[Prior]) -> Resumed:
    """``_contents``, from the previous call's where ``prior`` allows: a function response reads the name and
    id of its call anywhere in the history, so the head is taken only when no new call reuses one of its ids."""
    placeholder = checks_signatures(model)
    context = (client, placeholder)
    noted = NOTES[0]
    made, calls = started_with_calls(prior, "gemini", context, messages)
    if not _turns(client, messages, made, calls, placeholder):  # (a model turn joins the head's last one)
        made, calls = started_with_calls(None, "gemini", context, messages)
        _turns(client, messages, made, calls, placeholder)
    made.state = calls
    keep(prior, "gemini", context, messages, made, noted)
    return made


def _turns(client: str, messages: List[Mapping[str, Any]], made: Resumed,
           calls: Dict[str, Tuple[str, Optional[str]]], placeholder: bool) -> bool:
    """The contents of the messages after ``made``'s head, onto ``made.items``.  An assistant message right after
    another (nothing sent between them: a user message of empty texts, or two in the history) goes in the same
    model content: Gemini takes a function call turn only right after a user turn or a function response turn
    ("Please ensure that function call turn comes immediately after a user turn or after a function response
    turn", a 400).  False, with nothing added, when that content is the head's (the caller converts it all)."""
    out = made.items
    head = len(out)
    for index in range(made.count, len(messages)):
        message = messages[index]
        if message["role"] == "assistant":
            calls.update(_calls_in([message]))  # (the results after it read these: the latest call of an id)
            parts = _assistant_parts(client, message, placeholder)
            if not parts:
                continue
            if out and out[-1]["role"] == "model":
                if len(out) <= head:
                    return False
                out[-1]["parts"].extend(parts)
            else:
                out.append({"role": "model", "parts": parts})
        else:
            out.extend(_user_contents(client, message, calls))
    return True


def _speech_config(client: str, speakers: List[Mapping[str, Any]]) -> Dict[str, Any]:
    def voice(name: str) -> Dict[str, Any]:
        return {"prebuiltVoiceConfig": {"voiceName": name}}

    if len(speakers) == 1:
        return {"voiceConfig": voice(speakers[0]["voice"])}
    if len(speakers) == 2 and all(s.get("speaker") for s in speakers) and speakers[0]["speaker"] != speakers[1]["speaker"]:
        return {"multiSpeakerVoiceConfig": {"speakerVoiceConfigs": [
            {"speaker": s["speaker"], "voiceConfig": voice(s["voice"])} for s in speakers]}}
    raise unsupported(client, "tts_config",
                      "takes one voice, or two voices with distinct 'speaker' names (multi-speaker); got {} "
                      "entries".format(len(speakers)))


def _tts_contents(client: str, messages: List[Mapping[str, Any]]) -> List[Dict[str, Any]]:
    last = messages[-1]
    if last["role"] != "user":
        raise ConfigError("{}: a speech model reads the last message, which must be a user message".format(client))
    parts = []  # type: List[Dict[str, Any]]
    for item in last["content_items"]:
        if item["type"] != "text":
            raise unsupported(client, item["type"], "cannot be sent to a speech model (text only)")
        if item["text"]:
            parts.append({"text": item["text"]})
    if not parts:
        raise ConfigError("{}: the last message has no text to speak".format(client))
    if len(messages) > 1:
        logger.debug("%s: speech models are single-turn; only the last message is sent", client)
    return [{"role": "user", "parts": parts}]


def build_request(endpoint: Endpoint, model: str, messages: List[Mapping[str, Any]],
                  config: Mapping[str, Any], prior: Optional[Prior] = None) -> HttpRequest:
    """``prior``: what the client's previous call kept (``providers._common.Prior``): the messages it converted
    are taken as they were, where they are the head of these, unchanged."""
    client = endpoint.client_type
    refuse_mcp_servers(client, config)
    quirks = endpoint.quirks
    caching = config.get("prompt_caching")
    if caching is not None and caching != PromptCaching.ENABLE:
        raise unsupported(client, "prompt_caching", "can only be ENABLE: Gemini caches prompts by itself")
    if marks_resumed(prior, messages):
        raise unsupported(client, "cache_breakpoint", "cannot be sent: Gemini has no cache breakpoints (it caches "
                                                      "prompt prefixes by itself; remove the marks)")
    if "embedding_config" in config:
        raise unsupported(client, "embedding_config", "applies to embedding models only (not {!r})".format(model))
    tts = bool(quirks.get("tts")) or "tts_config" in config
    generation = samplers(client, config, _SAMPLERS, STOP_LIMIT)
    response_format = check_response_format(client, config, quirks.get("response_formats"))
    if response_format is not None:
        if tts:
            raise unsupported(client, "response_format", "is not accepted by speech (TTS) models")
        generation["responseMimeType"] = "application/json"
        if response_format["type"] == "json_schema":
            field = _schema_field(model)
            generation[field] = response_format["schema"] if field == "responseJsonSchema" else openapi_schema(
                client, response_format["schema"], vertex=bool(quirks.get("schema_additional_properties")))
    service_tier = None
    if config.get("fast_mode"):
        if quirks.get("fast_mode") is False:
            raise unsupported(client, "fast_mode", "is not offered at this endpoint (no priority tier)")
        service_tier = "priority"
    if tts:
        for key in ("tools", "tool_choice", "system_prompt", "image_config"):
            if key in config:
                raise unsupported(client, key, "is not accepted by speech (TTS) models")
        body = {"contents": _tts_contents(client, messages)}  # type: Dict[str, Any]
        generation["responseModalities"] = ["AUDIO"]
        generation["speechConfig"] = _speech_config(client, config.get("tts_config") or [{"voice": "Kore"}])
        body["generationConfig"] = generation
        if service_tier:
            body["serviceTier"] = service_tier
        return HttpRequest("POST", request_path(model, "streamGenerateContent?alt=sse"),
                           _headers(endpoint, "text/event-stream"), body, output_limit=OUTPUT_LIMIT)

    wire = _wire_contents(client, model, messages, prior)
    body = {"contents": something_to_send(client, wire.items)}
    first = wire.items[0]
    if first["role"] == "model" and any("functionCall" in part for part in first["parts"]):
        raise ConfigError("{}: the messages start with an assistant message holding tool calls, which Gemini refuses "
                          "(a function call turn comes right after a user turn or a function response turn): begin "
                          "with the user message it answered".format(client))
    if config.get("system_prompt"):
        body["systemInstruction"] = {"parts": [{"text": config["system_prompt"]}]}
    if config.get("tools"):
        if any(tool.get("strict") for tool in config["tools"]):
            raise unsupported(client, "tools", "strict cannot be sent: a Gemini function declaration has no strict "
                                               "mode")
        body["tools"] = [{"functionDeclarations": [_declaration(tool) for tool in config["tools"]]}]
    calling = {}  # type: Dict[str, Any]
    if "tool_choice" in config:
        choice = config["tool_choice"]
        if isinstance(choice, list):
            calling = {"mode": "ANY", "allowedFunctionNames": list(choice)}
        else:
            calling = {"mode": _TOOL_CHOICE[choice]}
    if quirks.get("stream_function_call_arguments") and config.get("tools"):
        calling["streamFunctionCallArguments"] = True  # Vertex AI only
    if calling:
        body["toolConfig"] = {"functionCallingConfig": calling}
    thinking = thinking_config(model, config.get("thinking_level"), config.get("thinking_summary"))
    if thinking:
        generation["thinkingConfig"] = thinking
    image = config.get("image_config")
    if image is not None or quirks.get("image_output"):
        generation["responseModalities"] = ["TEXT", "IMAGE"]
    if image:
        image_config = {}  # type: Dict[str, Any]
        if "aspect_ratio" in image:
            image_config["aspectRatio"] = image["aspect_ratio"]
        if "image_size" in image:
            image_config["imageSize"] = image["image_size"]
        generation["imageConfig"] = image_config
    if generation:
        body["generationConfig"] = generation
    if service_tier:
        body["serviceTier"] = service_tier
    return HttpRequest("POST", request_path(model, "streamGenerateContent?alt=sse"),
                       _headers(endpoint, "text/event-stream"), body, output_limit=OUTPUT_LIMIT,
                       encoded=Encoded("contents", wire) if prior is not None else None)


build_request.takes_prior = True  # type: ignore[attr-defined]


# -- response -----------------------------------------------------------------------------------


def map_usage(raw: Any) -> Dict[str, Optional[int]]:
    """Gemini usageMetadata -> the four exclusive buckets (toolUsePromptTokenCount is billed as input), carrying
    the image tokens of the output (``candidatesTokensDetails``, modality ``IMAGE``) as
    ``Usage.output_image_tokens``: an image model bills them at its image-output price; and the audio tokens of the
    input and output (the entries of modality ``AUDIO``: ``Usage.input_audio_tokens``, ``cached_audio_tokens``,
    ``output_audio_tokens``), billed at the model's audio prices."""
    raw = raw if isinstance(raw, dict) else {}
    cached = to_int(raw.get("cachedContentTokenCount"))
    prompt = to_int(raw.get("promptTokenCount"))
    tool_use = to_int(raw.get("toolUsePromptTokenCount"))
    if prompt is not None or tool_use is not None:
        prompt = (prompt or 0) - (cached or 0) + (tool_use or 0)
    buckets = usage(cached, prompt, to_int(raw.get("thoughtsTokenCount")), to_int(raw.get("candidatesTokenCount")))
    buckets = with_output_images(buckets, modality_tokens(raw.get("candidatesTokensDetails"), "modality",
                                                          "tokenCount", "IMAGE"))
    return with_audio(buckets, *audio_tokens(raw.get("promptTokensDetails"), raw.get("cacheTokensDetails"),
                                             raw.get("candidatesTokensDetails"), "modality", "tokenCount"))


def audio_tokens(prompt: Any, cache: Any, output: Any, modality_key: str, count_key: str) -> Tuple[Any, Any, Any]:
    """(uncached input, cached input, output) audio tokens of by-modality lists: the prompt's list counts the
    cached tokens too (promptTokenCount includes cachedContentTokenCount), so its cached part is taken off."""
    said = modality_tokens(prompt, modality_key, count_key, "AUDIO")
    cached = modality_tokens(cache, modality_key, count_key, "AUDIO")
    return (None if said is None else max(said - (cached or 0), 0), cached,
            modality_tokens(output, modality_key, count_key, "AUDIO"))


def modality_tokens(details: Any, modality_key: str, count_key: str, modality: str) -> Optional[int]:
    """The token count a by-modality list gives ``modality`` (upper case; summed over its entries; the wire's
    case ignored: generateContent says ``IMAGE``, Interactions ``image``); None where it gives none, or an
    entry's count is not a token count."""
    if type(details) is not list:
        return None
    total = None  # type: Optional[int]
    for entry in details:
        said = entry.get(modality_key) if type(entry) is dict else None
        if isinstance(said, str) and said.upper() == modality:
            count = usage_count(entry.get(count_key))
            if count is None:
                return None
            total = (total or 0) + count
    return total


#: the most array elements a call's partialArgs may skip in all (each written as ``null``): an index far past
#: the last one is a few bytes on the wire and would be that many nulls in memory (``$.x[100000000]``: 500 MB)
MAX_SKIPPED_ELEMENTS = 4096
_PATH_STEP = re.compile(r"\.([^.\[\]]+)|\[(\d+)\]|\['((?:[^'\\]|\\.)*)'\]|\[\"((?:[^\"\\]|\\.)*)\"\]")


def _json_path(path: Any) -> Tuple[Any, ...]:
    """``$.a.b[0]['c d']`` -> ("a", "b", 0, "c d") (the RFC 9535 subset Vertex sends)."""
    if not isinstance(path, str) or path[:1] != "$":
        raise StreamProtocolError("a partial function-call argument has no usable jsonPath ({!r})".format(path))
    steps = []  # type: List[Any]
    pos = 1
    while pos < len(path):
        match = _PATH_STEP.match(path, pos)
        if match is None:
            raise StreamProtocolError("unsupported jsonPath in partial function-call arguments: {!r}".format(path))
        name, index, single, double = match.groups()
        if index is not None:
            steps.append(int(index))
        elif name is not None:
            steps.append(name)
        else:
            quoted = single if single is not None else double
            steps.append(re.sub(r"\\(.)", r"\1", quoted))
        pos = match.end()
    if not steps:
        raise StreamProtocolError("a partial function-call argument targets the whole arguments object")
    if len(steps) >= MAX_DEPTH:  # (arguments that deep are refused anyway; closing such a path cost its square)
        raise StreamProtocolError("a partial function-call argument's jsonPath is deeper than {} levels".format(
            MAX_DEPTH - 1))
    return tuple(steps)


#: json.dumps(text, ensure_ascii=False) for a str, without building a JSONEncoder on every call
_encode_string = json.encoder.encode_basestring


class _ArgsWriter(object):
    """Vertex ``partialArgs`` (a JSON path and a value each) -> JSON text, written as it arrives.

    Values arrive in document order; a string value streams in pieces (its closing
    quote is written when another path starts or the call ends).  A path that comes
    back to a value or container already closed cannot be written as text and is a
    StreamProtocolError.
    """

    __slots__ = ("path", "kinds", "counts", "open_string", "open_raw", "closed", "paths", "skipped")

    def __init__(self) -> None:
        self.path = []  # type: List[Any]  # steps of the open containers below the root
        self.kinds = []  # type: List[str]  # "{" or "[" for each open container, root first
        self.counts = []  # type: List[int]  # members written in each open container
        self.open_string = None  # type: Optional[Tuple[Any, ...]]
        self.open_raw = None  # type: Optional[str]  # the jsonPath, as sent, of open_string
        self.closed = set()  # type: set
        self.paths = {}  # type: Dict[str, Tuple[Any, ...]]
        self.skipped = 0  # array elements skipped (written as null), at most MAX_SKIPPED_ELEMENTS

    def write(self, partials: Any) -> str:
        out = []  # type: List[str]
        for partial in partials:
            if "stringValue" in partial:
                value = partial["stringValue"]
                if type(value) is not str:
                    raise TypeError("stringValue is not a string")
                is_string = True
            elif "numberValue" in partial:
                value = partial["numberValue"]
                if type(value) not in (int, float):
                    raise TypeError("numberValue is not a number")
                is_string = False
            elif "boolValue" in partial:
                value = bool(partial["boolValue"])
                is_string = False
            elif "nullValue" in partial:
                value = None
                is_string = False
            else:
                continue
            raw_path = partial.get("jsonPath")
            steps = self.paths.get(raw_path) if type(raw_path) is str else None
            if steps is None:
                steps = _json_path(raw_path)
                self.paths[raw_path] = steps
            if is_string and steps == self.open_string:
                out.append(_encode_string(value)[1:-1])
                continue
            self._end_string(out)
            self._descend(steps, out)
            self._member(steps, out)
            if is_string:
                out.append(_encode_string(value)[:-1])
                self.open_string = steps
                self.open_raw = raw_path
            else:
                out.append(json.dumps(value))
                self.closed.add(steps)
        return "".join(out)

    def finish(self) -> str:
        out = []  # type: List[str]
        self._end_string(out)
        while self.kinds:
            out.append("}" if self.kinds.pop() == "{" else "]")
        return "".join(out)

    def _end_string(self, out: List[str]) -> None:
        if self.open_string is not None:
            out.append('"')
            self.closed.add(self.open_string)
            self.open_string = None

    def _descend(self, steps: Tuple[Any, ...], out: List[str]) -> None:
        if not self.kinds:
            out.append("{")
            self.kinds.append("{")
            self.counts.append(0)
        parent = steps[:-1]
        path = self.path
        common = 0
        while common < len(path) and common < len(parent) and path[common] == parent[common]:
            common += 1
        while len(path) > common:
            out.append("}" if self.kinds.pop() == "{" else "]")
            self.counts.pop()
            self.closed.add(tuple(path))
            path.pop()
        for depth in range(common, len(parent)):
            self._member(steps[:depth + 1], out)
            kind = "[" if type(steps[depth + 1]) is int else "{"
            out.append(kind)
            path.append(steps[depth])
            self.kinds.append(kind)
            self.counts.append(0)

    def _member(self, target: Tuple[Any, ...], out: List[str]) -> None:
        if target in self.closed:
            raise StreamProtocolError(
                "partial function-call arguments came back to {} after it was complete".format(_show(target)))
        step = target[-1]
        count = self.counts[-1]
        if self.kinds[-1] == "{":
            if type(step) is not str:
                raise StreamProtocolError("partial function-call arguments index an object: {}".format(_show(target)))
            out.append(("," if count else "") + json.dumps(step, ensure_ascii=False) + ":")
            self.counts[-1] = count + 1
        else:
            if type(step) is not int:
                raise StreamProtocolError("partial function-call arguments name a key of an array: {}".format(
                    _show(target)))
            if step < count:
                raise StreamProtocolError(
                    "partial function-call arguments came back to {} after it was complete".format(_show(target)))
            self.skipped += step - count
            if self.skipped > MAX_SKIPPED_ELEMENTS:
                raise StreamProtocolError("partial function-call arguments skip more than {} array elements ({} "
                                          "at {})".format(MAX_SKIPPED_ELEMENTS, step - count, _show(target)[:200]))
            out.append(("," if count else "") + "null," * (step - count))
            self.counts[-1] = step + 1


def _show(steps: Tuple[Any, ...]) -> str:
    return "$" + "".join("[{}]".format(s) if type(s) is int else "." + s for s in steps)


def _counts(meta: Dict[str, Any]) -> bool:
    """usageMetadata that counts tokens (not only Vertex's ``trafficType``)."""
    for key in meta:
        if key.endswith("TokenCount"):
            return True
    return False


#: the chunk parse_document adds to a whole answer whose candidates carry content but no finishReason
_UNFINISHED = {"candidates": [{"index": 0, "finishReason": "FINISH_REASON_UNSPECIFIED"}]}


def parse_document(payload: Any, client: str = "gemini", tool_id_prefix: Any = None) -> Iterator[Any]:
    """A whole ``GenerateContentResponse`` (or the JSON array ``streamGenerateContent`` answers without
    ``alt=sse``) -> the same parts the stream gives.  An answer whose candidates carry content is
    complete even when no chunk names a finishReason (finish ``unknown`` then)."""
    docs = documents(payload)
    pairs = list(document_payloads(docs))
    candidates = [c for doc in docs if type(doc) is dict and type(doc.get("candidates")) is list
                  for c in doc["candidates"] if type(c) is dict]
    if candidates and not any(c.get("finishReason") for c in candidates) and any(c.get("content") for c in candidates):
        pairs.append(("message", _UNFINISHED))
    return _parse(pairs, client, tool_id_prefix)


def parse_stream(events: Iterable[SSEEvent], client: str = "gemini", tool_id_prefix: Any = None) -> Iterator[Any]:
    """SSE events of one ``streamGenerateContent?alt=sse`` body -> content items, then a StreamEnd.

    Complete when a chunk with a finishReason arrived and the body ended.  Chunks
    without candidates are skipped (their usageMetadata is kept); only candidate 0 is
    followed; an ``error`` object raises UpstreamError, a blocked prompt too.
    """
    return _parse(payloads(events), client, tool_id_prefix)


class _State(object):
    """One stream's tool calls: the assembler, the slot of the next call, and the Vertex call whose
    arguments are still streaming (``streamed``, written by ``writer``)."""

    __slots__ = ("client", "tools", "calls", "streamed", "writer")

    def __init__(self, client: str, tool_id_prefix: Any) -> None:
        self.client = client
        self.tools = ToolCallAssembler(client, tool_id_prefix)
        self.calls = 0  # functionCall parts seen: the assembler slot of the next call
        self.streamed = None  # type: Optional[int]
        self.writer = None  # type: Optional[_ArgsWriter]

    def end_streamed(self) -> List[Dict[str, Any]]:
        """The items that complete the Vertex call whose arguments were streaming (none open: [])."""
        slot = self.streamed
        if slot is None:
            return []
        tools = self.tools
        items = tools.feed(slot, arguments=self.writer.finish()) + tools.close(index=slot)  # type: ignore[union-attr]
        self.streamed = self.writer = None
        return items


# -- the part handlers (_PARTS): handler(state, part, value, signature) -> the items the part owes


def _call_part(state: _State, part: Dict[str, Any], call: Any, signature: Any) -> List[Dict[str, Any]]:
    tools = state.tools
    name = call.get("name")
    if not name and state.streamed is not None:
        # a part continuing the Vertex call whose arguments are streaming
        partials = call.get("partialArgs")
        text = state.writer.write(partials) if partials else ""  # type: ignore[union-attr]
        items = []  # type: List[Dict[str, Any]]
        if signature:
            items = tools.feed(state.streamed, arguments=text, fidelity={SIGNATURE: signature})
        elif text:
            items = tools.feed_arguments(state.streamed, text)
        if not call.get("willContinue"):
            items = items + state.end_streamed()
        return items
    items = state.end_streamed()  # a new call starts: the streaming one is done
    if not name:
        if call.get("partialArgs") or call.get("args"):
            raise StreamProtocolError("function-call arguments arrived for a call with no name", client=state.client)
        return items  # an empty closing marker with nothing open
    slot = state.calls
    state.calls += 1
    call_id = call.get("id")
    fidelity = {SIGNATURE: signature} if signature else {}
    if not call_id:
        fidelity[SYNTHETIC_ID] = True
    args = call.get("args")
    if call.get("willContinue") and not args:  # Vertex: the arguments stream next
        items = items + tools.feed(slot, call_id, name, "", fidelity or None)
        state.streamed = slot
        state.writer = _ArgsWriter()
        partials = call.get("partialArgs")
        if partials:
            text = state.writer.write(partials)
            if text:
                items = items + tools.feed(slot, arguments=text)
        return items
    return items + tools.feed(slot, call_id, name, args, fidelity or None) + tools.close(index=slot)


def _text_part(state: _State, part: Dict[str, Any], text: Any, signature: Any) -> List[Dict[str, Any]]:
    if type(text) is not str:
        raise TypeError("part text is not a string")
    if not text and not signature:
        return []
    if part.get("thought"):
        item = {"type": "thinking", "thinking": text}  # type: Dict[str, Any]
    else:
        item = {"type": "text", "text": text}
    if signature:
        item["fidelity"] = {SIGNATURE: signature}
    return [item]


def _blob_part(state: _State, part: Dict[str, Any], blob: Any, signature: Any) -> List[Dict[str, Any]]:
    item = {
        "type": "inline_thinking" if part.get("thought") else "inline_data",
        "data": answer_bytes(blob.get("data") or "", state.client, "inlineData"),
        "mime_type": answer_mime(blob.get("mimeType")),
    }
    if signature:
        item["fidelity"] = {SIGNATURE: signature}
    return [item]


def _file_part(state: _State, part: Dict[str, Any], linked: Any, signature: Any) -> List[Dict[str, Any]]:
    items = []  # type: List[Dict[str, Any]]
    if linked.get("fileUri") and str(linked.get("mimeType") or "image/").startswith("image/"):
        items.append({"type": "image_url", "image_url": linked["fileUri"]})
        if not signature:
            return items
    return items + _other_part(state, part, None, signature)


def _other_part(state: _State, part: Dict[str, Any], value: Any, signature: Any) -> List[Dict[str, Any]]:
    """A part of another kind (or none): only its signature, if it carries one, goes out."""
    if signature:
        kind = "thinking" if part.get("thought") else "text"
        return [{"type": kind, kind: "", "fidelity": {SIGNATURE: signature}}]
    if logger.isEnabledFor(logging.DEBUG):
        logger.debug("%s: skipped a part of kind %s", state.client, sorted(part))
    return []


#: (the field that names a part's kind, its handler); the first field present wins, else _other_part
_PARTS = (("functionCall", _call_part), ("text", _text_part), ("inlineData", _blob_part), ("fileData", _file_part))


def _part(state: _State, part: Dict[str, Any]) -> List[Dict[str, Any]]:
    signature = part.get("thoughtSignature")
    if type(signature) is not str:  # (a signature is base64 text: another value could never go back, as the
        signature = None            # Interactions parser keeps only a string; the next turn refused the history)
    for field, handler in _PARTS:
        value = part.get(field)
        if value is not None or (field == "text" and field in part):
            if field == "functionCall":
                return handler(state, part, value, signature)
            return state.end_streamed() + handler(state, part, value, signature)  # (the streaming call is done)
    return state.end_streamed() + _other_part(state, part, None, signature)


def _error_chunk(client: str, chunk: Any) -> Optional[Exception]:
    """The error a chunk that holds no answer stands for (an error object, a blocked prompt), or None."""
    if type(chunk) is list:
        return upstream_error(client, chunk) if chunk and type(chunk[0]) is dict and "error" in chunk[0] else None
    if "error" in chunk:
        return upstream_error(client, chunk)
    feedback = chunk.get("promptFeedback")
    if feedback and feedback.get("blockReason"):
        reason = feedback["blockReason"]
        message = "the prompt was blocked ({})".format(reason)
        if feedback.get("blockReasonMessage"):
            message += ": {}".format(feedback["blockReasonMessage"])
        return upstream_error(client, {"error": {"message": message, "status": reason}})
    return None


def _parse(pairs: Iterable[Any], client: str = "gemini", tool_id_prefix: Any = None) -> Iterator[Any]:
    """``parse_stream`` over decoded payloads: ``(event, chunk)`` pairs (see ``_common.payloads``)."""
    state = _State(client, tool_id_prefix)
    tools = state.tools
    fragment = tools.fragment
    encode_string = _encode_string
    raw_usage = {}  # type: Dict[str, Any]
    answer = {}  # type: Dict[str, Any]
    finish = None  # type: Optional[str]
    for event, chunk in pairs:
        if event == "error":
            raise upstream_error(client, chunk)
        if type(chunk) is not dict:
            if event is DONE:
                continue  # a relay's end marker: the stream ends with the body (payloads stops here)
            error = _error_chunk(client, chunk)
            if error is not None:
                raise error
            continue
        if "error" in chunk:
            raise upstream_error(client, chunk)
        meta = chunk.get("usageMetadata")
        if meta and type(meta) is dict and ("promptTokenCount" in meta or _counts(meta)):
            raw_usage = meta  # a snapshot of the whole turn so far: a count it lacks no longer holds
            answer = chunk  # the answer's responseId and modelVersion (on every chunk; the counting one suffices)
        candidates = chunk.get("candidates")
        if not candidates:
            error = _error_chunk(client, chunk)
            if error is not None:
                raise error
            continue
        candidate = candidates[0]
        if len(candidates) > 1 or candidate.get("index", 0) != 0:
            candidate = next((c for c in candidates if type(c) is dict and c.get("index", 0) == 0), None)
            if candidate is None:
                continue
        content = candidate.get("content")
        parts = content.get("parts") if content else None
        if parts:
            for part in parts:
                if len(part) == 1:
                    if state.streamed is None:  # the common part: plain text and nothing else
                        text = part.get("text")
                        if type(text) is str:
                            if text:
                                yield {"type": "text", "text": text}
                            continue
                    else:
                        # the common part while a Vertex call's arguments stream: its next partialArgs, no
                        # signature (_part's _call_part gives the same, two calls and a list more)
                        call = part.get("functionCall")
                        if call.__class__ is dict and not call.get("name"):
                            partials = call.get("partialArgs")
                            writer = state.writer
                            text = None
                            if partials.__class__ is list and len(partials) == 1 and writer.open_string is not None:
                                # nearly every chunk: the next piece of the string being written, on the same
                                # jsonPath (_ArgsWriter.write gives the same text)
                                partial = partials[0]
                                if partial.__class__ is dict:
                                    value = partial.get("stringValue")
                                    if value.__class__ is str and partial.get("jsonPath") == writer.open_raw:
                                        text = encode_string(value)[1:-1]
                            if text is None:
                                text = writer.write(partials) if partials else ""  # type: ignore[union-attr]
                            if text:
                                item = fragment(state.streamed, text)
                                if item is not None:
                                    yield item
                                else:
                                    yield from tools.feed_arguments(state.streamed, text)
                            if not call.get("willContinue"):
                                yield from state.end_streamed()
                            continue
                items = _part(state, part)
                if items:
                    yield from items
        reason = candidate.get("finishReason")
        if reason:
            finish = FINISH_REASONS.get(reason, "unknown")
            yield from state.end_streamed()
            yield from tools.finish()
    if finish is None:
        return  # cut before its terminal marker: the driver raises StreamProtocolError
    yield from tools.finish()
    yield StreamEnd(map_usage(raw_usage) if raw_usage else None, finish, response_id=answer.get("responseId"),
                    model=answer.get("modelVersion"))


# -- the endpoint's model list ------------------------------------------------------------------

#: models asked for per page of GET /v1beta/models (the API's largest page)
MODELS_PAGE_SIZE = 1000


def models_request(endpoint: Endpoint, page_token: Optional[str] = None) -> HttpRequest:
    """``GET /v1beta/models?pageSize=1000`` (then ``&pageToken=`` the last ``nextPageToken``)."""
    path = "/v1beta/models?pageSize={}".format(MODELS_PAGE_SIZE)
    if page_token:
        path += "&pageToken=" + quote(page_token, safe="")
    return get_request(endpoint, path)


def parse_models(payload: Any, client: str = "gemini") -> Tuple[List[str], Optional[str]]:
    """``{"models": [{"name": "models/..."}], "nextPageToken": ...}`` -> (ids without "models/", next token)."""
    ids = model_list_page(payload, client, "models", "name", "models/")
    token = payload.get("nextPageToken") if isinstance(payload, dict) else None
    return ids, token if isinstance(token, str) and token else None


# -- token counting (agenthub.providers.counting) ---------------------------------------------------

#: the answer's count field; the members of Vertex AI's CountTokensRequest taken from a generateContent body
COUNT_FIELD = "totalTokens"
VERTEX_COUNT_KEYS = ("contents", "systemInstruction", "tools")


def count_request(plan: HttpRequest, model: str, quirks: Mapping[str, Any], form: Any = True) -> Optional[HttpRequest]:
    """``:countTokens`` for the streaming ``plan``: the Gemini API takes the whole request inside
    ``generateContentRequest`` (its ``model`` included); Vertex AI (``form`` "vertex", its client-type row's
    ``count_tokens``) takes contents, system instruction and tools at the top.  None: the host has no
    count endpoint (``form`` False)."""
    from .counting import count_plan, keep, replace_tail

    if form is False:
        return None
    path = replace_tail(plan.url, ":streamGenerateContent", ":countTokens", "gemini")
    if form == "vertex":
        return count_plan(plan, path, keep(plan.body, VERTEX_COUNT_KEYS))
    inner = {"model": resource_name(model)}  # type: Dict[str, Any]
    inner.update(plan.body or {})
    return count_plan(plan, path, {"generateContentRequest": inner})


PROTOCOL = Protocol(
    "gemini", __name__, build_request, parse_stream, parse_document=parse_document, parse_payloads=_parse,
    quirk_keys=("fast_mode", "image_output", "response_formats", "schema_additional_properties",
                "stream_function_call_arguments", "tts"),
    embeddings="gemini_embeddings", demo=("gemini-3.5-flash", "Gemini generateContent"),
    models_request=models_request, parse_models=parse_models, count=Count(count_request, COUNT_FIELD),
)
