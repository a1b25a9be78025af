"""Google Gemini's Interactions API (``POST /v1/interactions``, GA since June 2026), streamed.

``build_request`` and ``parse_stream`` are pure.  The items and their fidelity are the
gemini (generateContent) dialect's, so a conversation moves between the two: a thought
signature is ``fidelity["thought_signature"]``, a call id the server did not give is
``fidelity["synthetic_id"]``.  Wire facts are pinned in ``tests/fixtures/gemini_interactions``
(each fixture names its source: google-genai's generated Interactions types, and
https://ai.google.dev/gemini-api/docs/interactions/streaming).

Request
-------
- ``POST {base_url}/v1/interactions`` (the GA version, the one google-genai sends to; a base_url that
  names a version, ``.../v1beta`` included, gets ``/interactions``), the key in ``x-goog-api-key``,
  ``Api-Revision: 2026-05-20`` (the steps schema's revision, pinned), body ``{"model", "input":
  [steps], "stream": true, "store": false}``.
- Stateless calls send the whole history as steps with ``store: false`` (nothing is kept
  server-side).  Stateful calls (``streaming_response_stateful``) send ``store: true`` and,
  once the last answer carries its ``fidelity["interaction_id"]`` marked ``"stored": True`` (the client
  marks the answers of stateful calls: a stateless call's interaction is not stored, so it cannot be
  named), ``previous_interaction_id`` with only the messages after that answer.  History is still kept
  locally (``get_history()``); a stateless call afterwards resends all of it.
- Steps: a user message -> ``user_input`` steps (``content``: text, image, audio, video,
  document blocks), each tool_result -> a ``function_result`` step (``call_id``, ``name``,
  ``result``: the text, or a list of text and image blocks, the only kinds it holds: a result's document, audio
  or video goes in the ``user_input`` step after the results; ``is_error: true`` for an error result); an
  assistant message -> ``thought``
  steps (``signature``, ``summary``), ``model_output`` steps (text and images) and
  ``function_call`` steps (``id``, ``name``, ``arguments``).  A signature the gemini dialect
  kept on a text or call part becomes a ``thought`` step right before it; on a model that checks signatures
  (Gemini 3 and later), a message whose calls no signed thought comes before (another provider's) gets one of
  Google's placeholder (``skip_thought_signature_validator``) before its first call.  Unsigned thinking
  (another provider's) is not sent, as on generateContent.
- ``system_prompt`` -> ``system_instruction``; tools -> ``{"type": "function", name,
  description, parameters}`` (a strict tool is refused: the function tool has no strict mode);
  ``generation_config``: ``max_output_tokens``, ``temperature``, ``top_p``, ``stop_sequences`` (up
  to 5), ``seed``, ``thinking_level`` (clamped per model as generateContent does, lower case),
  ``thinking_summaries`` (``auto`` / ``none`` from thinking_summary), ``tool_choice`` (auto / any /
  none, or ``{"allowed_tools": {"mode": "any", "tools": [names]}}``).  response_format ->
  ``response_format: {"type": "text", "mime_type": "application/json", "schema": ...}`` (no top-level
  ``response_mime_type``: removed with the steps schema); ``fast_mode`` -> ``service_tier:
  "priority"``; ``background`` -> ``background: true`` (with ``store: true``, which it needs: the
  interaction is kept server-side).

Stream
------
SSE events, each JSON with its ``event_type``: ``interaction.created`` (the id),
``interaction.status_update``, ``step.start`` (a step: ``model_output``, ``thought``,
``function_call``, ...), ``step.delta`` (``text``, ``thought_summary``, ``thought_signature``,
``arguments_delta``, ``image``, ``audio``, ...), ``step.stop``, ``interaction.completed`` (the
terminal marker: status and usage), ``error``; then ``[DONE]``.
- text -> text; thought summaries -> thinking; a thought signature -> an empty thinking item
  carrying ``fidelity["thought_signature"]``; images / audio -> inline_data (or image_url);
  function_call steps -> the tool-call protocol (whole ``arguments`` on the step, or
  ``arguments_delta`` JSON text).  Server-side tool steps (search, code execution, ...) are skipped.
- ``interaction.completed`` status: completed -> stop (tool_call when calls were made),
  requires_action -> tool_call, incomplete / requires_continuation / budget_exceeded -> length,
  failed -> UpstreamError (its ``error``, or the first of a whole Interaction's ``errors``), anything
  else (cancelled) -> unknown.  The interaction id is kept as an empty thinking item carrying
  ``fidelity["interaction_id"]`` (what a stateful call chains on; shown as nothing, and another
  dialect leaves it out: ``agenthub.foreign`` knows the mark).
- usage (``interaction.usage``, else the last ``total_usage``): cached = total_cached_tokens,
  prompt = total_input_tokens - cached + total_tool_use_tokens, thoughts = total_thought_tokens,
  response = total_output_tokens (as generateContent's buckets); the image tokens of
  ``output_tokens_by_modality`` ride along as ``Usage.output_image_tokens``, the audio tokens of the
  ``*_tokens_by_modality`` lists as ``Usage.input_audio_tokens`` / ``cached_audio_tokens`` / ``output_audio_tokens``.
"""

import base64
import json
import logging
import mimetypes
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Tuple
from urllib.parse import quote, urlsplit

from ..errors import ConfigError, StreamProtocolError, upstream_error
from ..resume import resource_segment
from ..sse import SSEEvent
from ..stream import StreamEnd, with_audio, with_output_images
from ..toolcalls import ToolCallAssembler
from ..types import HttpRequest, PromptCaching, ThinkingLevel
from . import gemini
from ._common import (DONE, Endpoint, Protocol, Resume, payloads, check_response_format, parse_data_uri, request_headers,
                      stop_sequences, to_int, unsupported, usage)
from ._common import NOTES, Encoded, Prior, Resumed, keep, marks_resumed, media_type, noting, refuse_mcp_servers, unfinished_document
from ._common import INTERACTIONS_IMAGE_TYPES, answer_bytes, answer_mime, check_image_type, check_still, something_to_send
from .._jsondepth import loads as _json_loads

__all__ = [
    "build_request",
    "parse_stream",
    "map_usage",
    "interactions_url",
    "resume_request",
    "cancel_request",
    "FINISH_STATUS",
    "API_REVISION",
    "API_VERSION",
    "INTERACTION_ID",
]

logger = noting(logging.getLogger("agenthub"))  # (a conversion that logged is not kept: providers._common.keep)

SIGNATURE = gemini.SIGNATURE
SYNTHETIC_ID = gemini.SYNTHETIC_ID
#: fidelity key of the id of the interaction an answer came from (what previous_interaction_id names)
INTERACTION_ID = "interaction_id"
#: the API version of the path: the Interactions API is GA in v1 (June 2026), where google-genai sends it
API_VERSION = "v1"
#: the API revision (``Api-Revision``) of the steps schema: google-genai's GOOGLE_GENAI_API_REVISION
#: (google/genai/_gaos/_hooks/google_genai_auth.py; its REST calls send none since the legacy schema was removed
#: on 8 June 2026, its Live calls send it).  Pinned here so a later default revision cannot change the schema
#: under the parser.
API_REVISION = "2026-05-20"
#: interaction status at ``interaction.completed`` -> finish_reason (failed raises; others: unknown)
FINISH_STATUS = {
    "completed": "stop",
    "requires_action": "tool_call",
    "incomplete": "length",
    "requires_continuation": "length",
    "budget_exceeded": "length",
}
STOP_LIMIT = gemini.STOP_LIMIT
_TOOL_CHOICE = {"auto": "auto", "required": "any", "none": "none"}
_MEDIA_KINDS = ("image", "audio", "video")


# -- request ------------------------------------------------------------------------------------


def interactions_url(endpoint: Endpoint, tail: str = "") -> str:
    """The path ``/v1/interactions{tail}`` (the gemini host joins the base URL, and drops ``/v1`` after a
    base URL that names a version)."""
    return "/" + API_VERSION + "/interactions" + tail


def _headers(endpoint: Endpoint, accept: str = "text/event-stream") -> Dict[str, str]:
    return request_headers(endpoint, accept, **{"Api-Revision": API_REVISION})


def _b64(data: Any) -> str:
    return base64.b64encode(bytes(data)).decode("ascii")


def _media_kind(mime: str) -> str:
    major = mime.split("/", 1)[0]
    return major if major in _MEDIA_KINDS else "document"


def _blob_block(client: str, mime: str, data: Any) -> Dict[str, Any]:
    """Bytes as a content block; an image of a type the API does not take is refused (``INTERACTIONS_IMAGE_TYPES``)."""
    check_image_type(client, mime, INTERACTIONS_IMAGE_TYPES, "the Interactions API")
    check_still(client, mime, data, "the Interactions API")
    return {"type": _media_kind(mime), "data": _b64(data), "mime_type": media_type(mime)}


def _url_block(client: str, url: str) -> Dict[str, Any]:
    """An image URL as a content block: a data URI inline, any other URL by reference (never fetched here), with
    the type its extension names (an image type the API does not take is refused)."""
    parsed = parse_data_uri(url)
    if parsed is not None:
        return _blob_block(client, parsed[0], parsed[1])
    mime = mimetypes.guess_type(url.split("?", 1)[0].split("#", 1)[0])[0]
    if mime and not mime.startswith("image/"):  # a PDF, a video, ... by URL: a block of its kind (as generateContent)
        return {"type": _media_kind(mime), "uri": url, "mime_type": mime}
    block = {"type": "image", "uri": url}  # type: Dict[str, Any]
    if mime:
        check_image_type(client, mime, INTERACTIONS_IMAGE_TYPES, "the Interactions API", "image_url")
        block["mime_type"] = mime
    return block


def _thought(signature: Optional[str], text: str = "") -> Dict[str, Any]:
    step = {"type": "thought"}  # type: Dict[str, Any]
    if signature:
        step["signature"] = signature
    if text:
        step["summary"] = [{"type": "text", "text": text}]
    return step


class _Steps(object):
    """Input steps as they are built: content blocks join the open step of ``kind`` (a new one after any
    other step)."""

    __slots__ = ("steps", "kind", "blocks")

    def __init__(self, kind: str) -> None:
        self.steps = []  # type: List[Dict[str, Any]]
        self.kind = kind
        self.blocks = None  # type: Optional[List[Dict[str, Any]]]

    def content(self, block: Dict[str, Any]) -> None:
        if self.blocks is None:
            self.blocks = []
            self.steps.append({"type": self.kind, "content": self.blocks})
        self.blocks.append(block)

    def step(self, step: Dict[str, Any]) -> None:
        self.steps.append(step)
        self.blocks = None


def _assistant_steps(client: str, message: Mapping[str, Any], placeholder: bool = False) -> List[Dict[str, Any]]:
    """An assistant message as steps; ``placeholder`` (a model that checks signatures, ``gemini.SIGNATURE_REQUIRED``):
    a message whose calls no signed thought comes before (another provider's) gets a thought step of Google's
    placeholder signature before its first call, as generateContent gets it on that call."""
    out = _Steps("model_output")
    signed = not placeholder
    for item in message["content_items"]:
        kind = item["type"]
        fidelity = item.get("fidelity") or {}
        signature = fidelity.get(SIGNATURE)
        if kind == "thinking":
            if signature:
                out.step(_thought(signature, item["thinking"]))
                signed = True
            continue
        if kind == "inline_thinking":
            if signature:
                out.step(_thought(signature))
                signed = True
            continue
        if kind in ("text", "inline_data", "image_url", "tool_call") and signature:
            out.step(_thought(signature))  # a generateContent part's signature: its own thought step
            signed = True
        elif kind == "tool_call" and not signed:
            out.step(_thought(gemini.PLACEHOLDER_SIGNATURE))
            signed = True
        if kind == "text":
            if item["text"]:
                out.content({"type": "text", "text": item["text"]})
        elif kind == "inline_data":
            out.content(_blob_block(client, item["mime_type"], item["data"]))
        elif kind == "image_url":
            out.content(_url_block(client, item["image_url"]))
        elif kind == "tool_call":
            out.step({"type": "function_call", "id": item["tool_call_id"], "name": item["name"],
                      "arguments": item["arguments"]})
        else:  # compaction and the like have no Interactions form
            logger.debug("%s: an assistant %s item is not replayed", client, kind)
    return out.steps


def _user_steps(client: str, message: Mapping[str, Any], calls: Mapping[str, Tuple[str, Optional[str]]]
                ) -> List[Dict[str, Any]]:
    """A user message as steps: its function results first (the answers to the function call steps before
    them, as on generateContent), then one user_input step with its other content, in their order (with a result's
    media other than images: a function result holds text and images only).  An empty text is no block, as on
    generateContent (the Gemini API refuses an empty text part, a 400); a message with nothing else is left out."""
    out = _Steps("user_input")
    results = []  # type: List[Dict[str, Any]]
    for item in message["content_items"]:
        kind = item["type"]
        if kind == "text":
            if item["text"]:
                out.content({"type": "text", "text": item["text"]})
        elif kind == "image_url":
            out.content(_url_block(client, item["image_url"]))
        elif kind == "inline_data":
            out.content(_blob_block(client, item["mime_type"], item["data"]))
        elif kind == "tool_result":
            call_id = item["tool_call_id"]
            if call_id not in calls:
                raise ConfigError("{}: tool_result {!r} has no matching tool_call earlier in the messages (the "
                                  "Interactions API needs the function name)".format(client, call_id))
            result = item["text"]  # type: Any
            images = []  # type: List[Dict[str, Any]]
            for url in item.get("images") or ():
                block = _url_block(client, url)
                if block["type"] == "image":
                    images.append(block)
                else:  # (a function result holds text and images: a document, audio or video goes after the results)
                    out.content(block)
            if images:
                result = ([{"type": "text", "text": item["text"]}] if item["text"] else []) + images
            step = {"type": "function_result", "call_id": call_id, "name": calls[call_id][0], "result": result}  # type: Dict[str, Any]
            if item.get("is_error"):
                step["is_error"] = True
            results.append(step)
        else:  # pragma: no cover - validate.check_message keeps other items out of user messages
            raise ConfigError("{}: a {} item cannot be sent in a user message".format(client, kind))
    return results + out.steps


def input_steps(client: str, messages: List[Mapping[str, Any]],
                history: Optional[List[Mapping[str, Any]]] = None, placeholder: bool = False) -> List[Dict[str, Any]]:
    """The ``input`` steps of ``messages`` (tool names looked up in ``history`` + ``messages``: the history read
    from its end only as far as the results ``messages`` hold need, a result reading the latest call of its id
    before it)."""
    wanted = {item["tool_call_id"] for message in messages if message["role"] != "assistant"
              for item in message["content_items"] if item["type"] == "tool_result"}
    calls = {}  # type: Dict[str, Tuple[str, Optional[str]]]
    for index in range(len(history or ()) - 1, -1, -1):
        if not wanted:
            break
        for call_id, call in gemini.calls_in([history[index]]).items():  # type: ignore[index]
            if call_id in wanted:
                calls[call_id] = call
                wanted.discard(call_id)
    steps = []  # type: List[Dict[str, Any]]
    for message in messages:
        if message["role"] == "assistant":
            calls.update(gemini.calls_in([message]))
            steps.extend(_assistant_steps(client, message, placeholder))
        else:
            steps.extend(_user_steps(client, message, calls))
    return steps


def _wire_input(client: str, messages: List[Mapping[str, Any]], prior: Optional[Prior],
                placeholder: bool = False) -> Resumed:
    """``input_steps(client, messages)``, from the previous call's where ``prior`` allows (as the gemini dialect's
    contents: a function result reads the name of the latest call of its id before it)."""
    noted = NOTES[0]
    context = (client, placeholder)
    made, calls = gemini.started_with_calls(prior, "interactions", context, messages)
    out = made.items
    for index in range(made.count, len(messages)):
        message = messages[index]
        if message["role"] == "assistant":
            calls.update(gemini.calls_in([message]))  # (the results after it read these: the latest call of an id)
            out.extend(_assistant_steps(client, message, placeholder))
        else:
            out.extend(_user_steps(client, message, calls))
    made.state = calls
    keep(prior, "interactions", context, messages, made, noted)
    return made


def interaction_id(message: Mapping[str, Any]) -> Optional[str]:
    """The id of the interaction an assistant message came from (its items' fidelity), or None."""
    for item in reversed(message.get("content_items") or ()):
        value = (item.get("fidelity") or {}).get(INTERACTION_ID)
        if isinstance(value, str) and value:
            return value
    return None


#: fidelity key set beside the interaction id on an answer of a stateful call (it was sent with store: true)
STORED = "stored"


def stored_answer(message: Dict[str, Any]) -> Dict[str, Any]:
    """The answer of a stateful call as history keeps it: its interaction id is marked stored (the client
    calls this; only a stored interaction can be named by previous_interaction_id)."""
    items = list(message.get("content_items") or ())
    for index in range(len(items) - 1, -1, -1):
        fidelity = items[index].get("fidelity") or {}
        if isinstance(fidelity.get(INTERACTION_ID), str):
            items[index] = dict(items[index], fidelity=dict(fidelity, **{STORED: True}))
            return dict(message, content_items=items)
    return message


def _chain(messages: List[Mapping[str, Any]]) -> Tuple[Optional[str], int]:
    """(previous_interaction_id, index of the first message to send) for a stateful call: the last
    assistant message, when it names a stored interaction (one of a stateful call), and what follows it."""
    for index in range(len(messages) - 1, -1, -1):
        if messages[index]["role"] == "assistant":
            for item in reversed(messages[index].get("content_items") or ()):
                fidelity = item.get("fidelity") or {}
                previous = fidelity.get(INTERACTION_ID)
                if isinstance(previous, str) and previous:
                    return (previous, index + 1) if fidelity.get(STORED) is True else (None, 0)
            return None, 0
    return None, 0


def build_request(endpoint: Endpoint, model: str, messages: List[Mapping[str, Any]],
                  config: Mapping[str, Any], stateful: bool = False, prior: Optional[Prior] = None,
                  chain: bool = True) -> HttpRequest:
    """``prior``: what the client's previous call kept (``providers._common.Prior``): the steps of the messages
    it converted are taken as they were, where they are the head of these, unchanged, and their marks not
    counted again.  A stateful call chained on a stored interaction sends only what follows it (the history
    before it is read only for the names of the calls its results answer); ``chain`` False (the client's: the
    messages before the last answer are not those its previous stateful call sent) sends the whole history."""
    client = endpoint.client_type
    refuse_mcp_servers(client, config)
    quirks = endpoint.quirks
    caching = config.get("prompt_caching")
    if caching is not None and caching != PromptCaching.ENABLE:
        raise unsupported(client, "prompt_caching", "can only be ENABLE: Gemini caches prompts by itself")
    if marks_resumed(prior, messages):
        raise unsupported(client, "cache_breakpoint", "cannot be sent: the Gemini Interactions API has no cache breakpoints (it caches "
                                                      "prompt prefixes by itself; remove the marks)")
    for key in ("embedding_config", "tts_config", "image_config"):
        if key in config:
            raise unsupported(client, key, "is not available on the Interactions API here")
    body = {"model": model}  # type: Dict[str, Any]
    previous, first = _chain(messages) if stateful and chain else (None, 0)
    wire = None  # type: Optional[Resumed]
    placeholder = gemini.checks_signatures(model)
    if first:  # chained: only what follows the interaction it names
        body["input"] = something_to_send(client, input_steps(client, list(messages[first:]), messages[:first],
                                                              placeholder))
    else:  # the whole history, from the previous call's where it is that call's, unchanged
        wire = _wire_input(client, messages, prior, placeholder)
        body["input"] = something_to_send(client, wire.items)
    if previous:
        body["previous_interaction_id"] = previous
    body["stream"] = True
    background = bool(config.get("background"))
    body["store"] = bool(stateful or background)
    if background:
        body["background"] = True
    if config.get("system_prompt"):
        body["system_instruction"] = config["system_prompt"]
    if config.get("tools"):
        if any(tool.get("strict") for tool in config["tools"]):  # google-genai 3.6.1's Function has no strict
            raise unsupported(client, "tools", "strict cannot be sent: an Interactions function tool has no strict "
                                               "mode")
        tools = []  # type: List[Dict[str, Any]]
        for tool in config["tools"]:
            out = {"type": "function", "name": tool["name"]}  # type: Dict[str, Any]
            if tool.get("description"):
                out["description"] = tool["description"]
            if tool.get("parameters"):
                out["parameters"] = tool["parameters"]
            tools.append(out)
        body["tools"] = tools
    generation = {}  # type: Dict[str, Any]
    if "max_tokens" in config:
        generation["max_output_tokens"] = config["max_tokens"]
    if "temperature" in config:
        generation["temperature"] = config["temperature"]
    if "top_p" in config:
        generation["top_p"] = config["top_p"]
    stop = stop_sequences(client, config, STOP_LIMIT)
    if stop is not None:
        generation["stop_sequences"] = stop
    if "seed" in config:
        generation["seed"] = config["seed"]
    level = gemini.thinking_level(model, config.get("thinking_level"))
    if level is not None:
        generation["thinking_level"] = level
    if config.get("thinking_summary") is not None and gemini.takes_thinking(model):
        generation["thinking_summaries"] = "auto" if config["thinking_summary"] else "none"
    if "tool_choice" in config:
        choice = config["tool_choice"]
        if isinstance(choice, (list, tuple)):
            generation["tool_choice"] = {"allowed_tools": {"mode": "any", "tools": list(choice)}}
        else:
            generation["tool_choice"] = _TOOL_CHOICE[choice]
    if generation:
        body["generation_config"] = generation
    response_format = check_response_format(client, config, quirks.get("response_formats"))
    if response_format is not None:
        # the polymorphic response_format carries the MIME type: the revision of May 2026 removed the top-level
        # response_mime_type (google-genai 3.6.1 marks it deprecated)
        wanted = {"type": "text", "mime_type": "application/json"}  # type: Dict[str, Any]
        if response_format["type"] == "json_schema":
            wanted["schema"] = response_format["schema"]
        body["response_format"] = wanted
    if config.get("fast_mode"):
        if quirks.get("fast_mode") is False:
            raise unsupported(client, "fast_mode", "is not offered at this endpoint (no priority tier)")
        body["service_tier"] = "priority"
    return HttpRequest("POST", interactions_url(endpoint), _headers(endpoint), body,
                       output_limit=("generation_config", "max_output_tokens"),
                       encoded=Encoded("input", wire) if wire is not None and prior is not None else None)


build_request.takes_prior = True  # type: ignore[attr-defined]


#: background streams resume after a cut (agenthub.resume): are cursors numbers, in order?
ordered_cursors = False


def resume_request(endpoint: Endpoint, resource_id: str, cursor: Optional[str]) -> HttpRequest:
    """``GET /v1/interactions/{id}?stream=true&last_event_id=<the last event's event_id>``: the
    stream again from the event after ``cursor`` (from its start when None)."""
    url = interactions_url(endpoint, "/" + resource_segment(resource_id, endpoint.client_type)) + "?stream=true"
    if cursor:
        url += "&last_event_id=" + quote(cursor, safe="")
    headers = _headers(endpoint)
    headers.pop("Content-Type", None)
    return HttpRequest("GET", url, headers, None)


def cancel_request(endpoint: Endpoint, resource_id: str) -> HttpRequest:
    """``POST /v1/interactions/{id}/cancel`` (a background interaction stops server-side)."""
    return HttpRequest("POST", interactions_url(endpoint, "/" + resource_segment(resource_id, endpoint.client_type)
                                                + "/cancel"),
                       _headers(endpoint, "application/json"), {}, stream=False)


def frame_cursor(sse: SSEEvent) -> Tuple[Optional[str], Optional[str], bool]:
    """(interaction id when this event names it, its ``event_id``, terminal?) of one SSE event."""
    data = sse.data
    if not data or data[0] != "{":
        return None, None, data.strip() == "[DONE]"
    payload = _json_loads(data)  # a ValueError here: the event was cut in half
    if type(payload) is not dict:
        return None, None, False  # not an event of an interaction: the parser says what it is
    kind = payload.get("event_type") or sse.event
    resource = None
    if kind == "interaction.created":
        resource = (payload.get("interaction") or {}).get("id")
    cursor = payload.get("event_id")
    return resource, cursor if isinstance(cursor, str) and cursor else None, kind in ("interaction.completed",
                                                                                      "error")


# -- stream -------------------------------------------------------------------------------------


def map_usage(raw: Mapping[str, Any]) -> Dict[str, Optional[int]]:
    """An Interactions ``Usage`` -> the four buckets (as generateContent's usageMetadata), with the image tokens of
    the output (``output_tokens_by_modality``, modality ``image``) as ``Usage.output_image_tokens`` and the audio
    tokens (``input_tokens_by_modality`` less ``cached_tokens_by_modality``, and those, and
    ``output_tokens_by_modality``, modality ``audio``) as ``Usage.input_audio_tokens`` / ``cached_audio_tokens`` /
    ``output_audio_tokens``."""
    cached = to_int(raw.get("total_cached_tokens"))
    prompt = to_int(raw.get("total_input_tokens"))
    tool_use = to_int(raw.get("total_tool_use_tokens"))
    if prompt is not None:
        prompt = to_int(prompt - (cached or 0)) + (tool_use or 0)  # (more cached than input: no count, as to_int's)
    elif tool_use is not None:
        prompt = tool_use
    buckets = usage(cached, prompt, to_int(raw.get("total_thought_tokens")), to_int(raw.get("total_output_tokens")))
    images = gemini.modality_tokens(raw.get("output_tokens_by_modality"), "modality", "tokens", "IMAGE")
    buckets = with_output_images(buckets, images)
    return with_audio(buckets, *gemini.audio_tokens(raw.get("input_tokens_by_modality"),
                                                    raw.get("cached_tokens_by_modality"),
                                                    raw.get("output_tokens_by_modality"), "modality", "tokens"))


def _summary_text(content: Any) -> str:
    if isinstance(content, dict):
        content = [content]
    out = []  # type: List[str]
    for block in content or ():
        if isinstance(block, dict) and block.get("type", "text") == "text" and isinstance(block.get("text"), str):
            out.append(block["text"])
    return "".join(out)


def _media_item(client: str, block: Mapping[str, Any], thought: bool = False) -> Optional[Dict[str, Any]]:
    data = block.get("data")
    if isinstance(data, str) and data:
        return {"type": "inline_thinking" if thought else "inline_data", "data": answer_bytes(data, client),
                "mime_type": answer_mime(block.get("mime_type"))}
    uri = block.get("uri")
    if isinstance(uri, str) and uri and block.get("type") == "image" and not thought:
        return {"type": "image_url", "image_url": uri}
    return None


class _Call(object):
    __slots__ = ("slot", "call_id", "name", "arguments", "streamed")

    def __init__(self, slot: int, call_id: Optional[str], name: str, arguments: Any) -> None:
        self.slot = slot
        self.call_id = call_id
        self.name = name
        self.arguments = arguments
        self.streamed = False


class _State(object):
    """One interaction's steps, tool calls and what the terminal events said (what the handlers share)."""

    __slots__ = ("client", "tools", "steps", "calls", "slots", "made_calls", "raw_usage", "resource", "done")

    def __init__(self, client: str, tool_id_prefix: Any) -> None:
        self.client = client
        self.tools = ToolCallAssembler(client, tool_id_prefix)
        self.steps = {}  # type: Dict[Any, Any]  # step index -> its type
        self.calls = {}  # type: Dict[Any, _Call]  # step index -> the function call it holds
        self.slots = 0
        self.made_calls = False
        self.raw_usage = None  # type: Optional[Dict[str, Any]]
        self.resource = None  # type: Optional[str]
        self.done = False  # interaction.completed arrived


def parse_stream(events: Iterable[SSEEvent], client: str = "gemini-interactions",
                 tool_id_prefix: Any = None) -> Iterator[Any]:
    """SSE events of one streamed interaction -> content items, then a StreamEnd.

    Complete when ``interaction.completed`` arrived (``[DONE]`` after it is a relay's end
    marker); an ``error`` event or a failed interaction raises UpstreamError.
    """
    return _parse(payloads(events), client, tool_id_prefix)


# -- the handlers: one per event type (_EVENTS), per delta type (_DELTAS) and per step type (_STEPS); each
# returns the items it owes


def _text_delta(state: _State, index: Any, delta: Dict[str, Any]) -> Any:
    text = delta.get("text")
    if type(text) is not str:
        raise StreamProtocolError("{}: a text delta without text".format(state.client), client=state.client)
    return ({"type": "text", "text": text},) if text else ()


def _summary_delta(state: _State, index: Any, delta: Dict[str, Any]) -> Any:
    content = delta.get("content")
    text = _summary_text(content)
    if text:
        return ({"type": "thinking", "thinking": text},)
    if isinstance(content, dict) and content.get("type") == "image":
        item = _media_item(state.client, content, thought=True)
        if item is not None:
            return (item,)
    return ()


def _signature_delta(state: _State, index: Any, delta: Dict[str, Any]) -> Any:
    signature = delta.get("signature")
    if isinstance(signature, str) and signature:
        return ({"type": "thinking", "thinking": "", "fidelity": {SIGNATURE: signature}},)
    return ()


def _arguments_delta(state: _State, index: Any, delta: Dict[str, Any]) -> Any:
    call = state.calls.get(index)
    if call is None:
        raise StreamProtocolError("{}: function-call arguments for step {!r}, which is not a function "
                                  "call".format(state.client, index), client=state.client)
    items = []  # type: List[Dict[str, Any]]
    if not call.streamed:
        call.streamed = True
        items.extend(state.tools.feed(call.slot, call.call_id, call.name, "", call_fidelity(call)))
    text = delta.get("arguments") or ""
    if text:
        items.extend(state.tools.feed_arguments(call.slot, text))
    return items


def _media_delta(state: _State, index: Any, delta: Dict[str, Any]) -> Any:
    item = _media_item(state.client, delta)
    return () if item is None else (item,)


def _other_delta(state: _State, index: Any, delta: Dict[str, Any]) -> Any:
    if logger.isEnabledFor(logging.DEBUG):
        logger.debug("%s: skipped a %s delta", state.client, delta.get("type"))
    return ()


#: ``step.delta`` delta type -> handler(state, step index, delta)
_DELTAS = dict({"text": _text_delta, "thought_summary": _summary_delta, "thought_signature": _signature_delta,
                "arguments_delta": _arguments_delta}, **{kind: _media_delta for kind in _MEDIA_KINDS})


def _step_delta(state: _State, payload: Dict[str, Any]) -> Any:
    delta = payload.get("delta")
    if type(delta) is not dict:
        delta = {}
    meta = payload.get("metadata")
    if type(meta) is dict and type(meta.get("total_usage")) is dict:
        state.raw_usage = meta["total_usage"]
    return _DELTAS.get(delta.get("type"), _other_delta)(state, payload.get("index"), delta)


def _function_call_step(state: _State, index: Any, step: Dict[str, Any]) -> Any:
    name = step.get("name")
    if not isinstance(name, str) or not name:
        raise StreamProtocolError("{}: a function_call step without a name".format(state.client), client=state.client)
    call_id = step.get("id")
    pending = state.calls.get(index)  # (step.stop takes a call out: one still here has not stopped)
    if pending is not None:
        raise StreamProtocolError("{}: a second function_call step on step index {!r} before the first ({}) "
                                  "stopped".format(state.client, index, pending.name), client=state.client)
    state.calls[index] = _Call(state.slots, call_id if isinstance(call_id, str) and call_id else None, name,
                               step.get("arguments"))
    state.slots += 1
    state.made_calls = True
    return ()


def _thought_step(state: _State, index: Any, step: Dict[str, Any]) -> Any:
    items = []  # type: List[Dict[str, Any]]
    text = _summary_text(step.get("summary"))
    if text:
        items.append({"type": "thinking", "thinking": text})
    signature = step.get("signature")
    if isinstance(signature, str) and signature:
        items.append({"type": "thinking", "thinking": "", "fidelity": {SIGNATURE: signature}})
    return items


def _model_output_step(state: _State, index: Any, step: Dict[str, Any]) -> Any:
    items = []  # type: List[Dict[str, Any]]
    for block in step.get("content") or ():
        if isinstance(block, dict) and block.get("type") == "text":
            if block.get("text"):
                items.append({"type": "text", "text": block["text"]})
        elif isinstance(block, dict):
            item = _media_item(state.client, block)
            if item is not None:
                items.append(item)
    return items


#: ``step.start`` step type -> handler(state, step index, step); other steps (server-side tools) owe nothing
_STEPS = {"function_call": _function_call_step, "thought": _thought_step, "model_output": _model_output_step}


def _no_step(state: _State, index: Any, step: Dict[str, Any]) -> Any:
    return ()


def _step_start(state: _State, payload: Dict[str, Any]) -> Any:
    step = payload.get("step")
    if type(step) is not dict:
        step = {}
    index = payload.get("index")
    kind = step.get("type")
    state.steps[index] = kind
    return _STEPS.get(kind, _no_step)(state, index, step)


def _step_stop(state: _State, payload: Dict[str, Any]) -> Any:
    call = state.calls.pop(payload.get("index"), None)
    if type(payload.get("usage")) is dict:
        state.raw_usage = payload["usage"]
    return () if call is None else _end_call(state.tools, call)


def _interaction(payload: Dict[str, Any]) -> Dict[str, Any]:
    interaction = payload.get("interaction")
    return interaction if type(interaction) is dict else {}


def _created(state: _State, payload: Dict[str, Any]) -> Any:
    state.resource = _interaction(payload).get("id") or state.resource
    return ()


def _status_update(state: _State, payload: Dict[str, Any]) -> Any:
    if type(payload.get("usage")) is dict:
        state.raw_usage = payload["usage"]
    return ()


def _completed(state: _State, payload: Dict[str, Any]) -> Any:
    """The terminal marker: the calls left open are closed, then the interaction id and the StreamEnd."""
    interaction = _interaction(payload)
    status = interaction.get("status")
    state.resource = interaction.get("id") or state.resource
    if status == "failed":
        raise upstream_error(state.client, {"error": _failure(interaction)})
    items = []  # type: List[Any]
    for call in list(state.calls.values()):  # calls whose step.stop never came
        items.extend(_end_call(state.tools, call))
    state.calls.clear()
    items.extend(state.tools.finish())
    if type(interaction.get("usage")) is dict:
        state.raw_usage = interaction["usage"]
    finish = FINISH_STATUS.get(status, "unknown")
    if finish == "stop" and state.made_calls:
        finish = "tool_call"
    if state.resource:
        items.append({"type": "thinking", "thinking": "", "fidelity": {INTERACTION_ID: state.resource}})
    items.append(StreamEnd(map_usage(state.raw_usage) if state.raw_usage else None, finish,
                           response_id=state.resource, model=interaction.get("model")))
    state.done = True
    return items


def _failure(interaction: Dict[str, Any]) -> Any:
    """What a failed interaction says went wrong: its ``error``, else the first of its ``errors`` (the GA
    Interaction's list of ``{code, message}``), else a sentence."""
    error = interaction.get("error")
    if not error:
        errors = interaction.get("errors")
        error = errors[0] if type(errors) is list and errors else None
    return error or {"message": "the interaction failed"}


def _error(state: _State, payload: Any) -> Any:
    raise upstream_error(state.client, payload)


def _unknown(state: _State, payload: Dict[str, Any]) -> Any:
    return ()


#: event type (``event_type``, else the SSE event name) -> handler(state, payload) -> the items it owes
_EVENTS = {
    "step.delta": _step_delta,
    "step.start": _step_start,
    "step.stop": _step_stop,
    "interaction.created": _created,
    "interaction.status_update": _status_update,
    "interaction.completed": _completed,
    "error": _error,
}


def _parse(pairs: Iterable[Any], client: str = "gemini-interactions", tool_id_prefix: Any = None) -> Iterator[Any]:
    """``parse_stream`` over decoded payloads: ``(event, payload)`` pairs (see ``_common.payloads``).  Complete
    once ``interaction.completed`` arrived; cut before it, the parts simply end (the driver raises
    StreamProtocolError)."""
    state = _State(client, tool_id_prefix)
    handlers = _EVENTS
    for event, payload in pairs:
        if payload.__class__ is not dict:
            if event == "error":  # an error event whose data is not JSON: its text
                _error(state, payload)
            if event is DONE:  # a relay's end marker: the end of the body
                break
            continue
        kind = payload.get("event_type") or event
        if kind == "step.delta":
            # the row nearly every event takes, inlined: more text (the table's _step_delta gives the same)
            delta = payload.get("delta")
            if delta.__class__ is dict and delta.get("type") == "text" and "metadata" not in payload:
                text = delta.get("text")
                if text.__class__ is str:
                    if text:
                        yield {"type": "text", "text": text}
                    continue
        items = handlers.get(kind, _unknown)(state, payload)
        if items:
            yield from items
        if state.done:
            return


def parse_document(payload: Any, client: str = "gemini-interactions", tool_id_prefix: Any = None) -> Iterator[Any]:
    """A whole ``Interaction`` (a server that answered without streaming) -> the same parts: each of its
    ``steps`` read as a ``step.start`` / ``step.stop`` pair, then its status as ``interaction.completed``
    (payloads handed to the same parser, never text to decode again)."""
    if not isinstance(payload, dict):
        raise StreamProtocolError("{}: the answer is not an Interaction object".format(client), client=client)
    if "error" in payload and "steps" not in payload:
        raise upstream_error(client, payload)
    if payload.get("status") in ("in_progress", "queued"):  # still running: no answer yet, not even a partial one
        return unfinished_document(client, "interaction", payload["status"], payload.get("id"), "/interactions/")
    pairs = []  # type: List[Tuple[str, Dict[str, Any]]]
    for index, step in enumerate(payload.get("steps") or ()):
        if isinstance(step, dict) and step.get("type") in ("user_input", "function_result"):
            continue  # the input, echoed
        pairs.append(("message", {"event_type": "step.start", "index": index, "step": step}))
        pairs.append(("message", {"event_type": "step.stop", "index": index}))
    completed = {key: payload[key] for key in ("id", "status", "usage", "error", "errors") if key in payload}
    pairs.append(("message", {"event_type": "interaction.completed", "interaction": completed}))
    return _parse(pairs, client, tool_id_prefix)


def call_fidelity(call: _Call) -> Optional[Dict[str, Any]]:
    return None if call.call_id else {SYNTHETIC_ID: True}


def _end_call(tools: ToolCallAssembler, call: _Call) -> List[Dict[str, Any]]:
    if call.streamed:
        return tools.close(index=call.slot)
    arguments = call.arguments if call.arguments is not None else {}
    return tools.feed(call.slot, call.call_id, call.name, arguments, call_fidelity(call)) + tools.close(index=call.slot)


PROTOCOL = Protocol(
    "gemini-interactions", __name__, build_request, parse_stream, parse_document=parse_document, parse_payloads=_parse,
    quirk_keys=("fast_mode", "response_formats"),
    demo=None,
    models_request=gemini.models_request, parse_models=gemini.parse_models,  # the same GET /v1beta/models
    accepts=("background",),
    chains_turns=True, stored_answer=stored_answer,  # the client passes stateful=True, then marks the answer stored
    resume=Resume(resume_request, cancel_request, frame_cursor, ordered_cursors),
)
