"""OpenAI Chat Completions, and every server that speaks it (vLLM, Ollama, OpenRouter,
DeepSeek, GLM, Qwen, Kimi, ...).  ``build_request`` and ``parse_stream`` are pure.

Vendor differences are data, read from ``endpoint.quirks`` (a registry row):

- ``max_tokens_field``: the body field for max_tokens (default ``max_completion_tokens``);
- ``reasoning_field``: the field this server reads reasoning back from: every thinking item goes back in it,
  whichever Chat host made it (another host's ``reasoning`` / ``reasoning_content``, or the text shown from a
  structure the server does not read: DeepSeek and Kimi refuse a thinking-mode tool-call turn without their
  ``reasoning_content``, OpenRouter and Ollama read ``reasoning`` alone); absent (a server not known), each
  goes back in the field it came in, and thinking that did not come from a Chat server is left out;
- ``reasoning_details``: the server reads OpenRouter's ``reasoning_details`` back (OpenRouter): they go back
  whole; to another server of a known ``reasoning_field`` they (and LiteLLM's ``thinking_blocks``) go as the
  text shown from them;
- ``echo_reasoning_on_tool_turns``: send an empty reasoning field on assistant tool-call
  turns without thinking (DeepSeek thinking mode wants it back);
- ``thinking``: a mapping ThinkingLevel value -> extra body fields (e.g. GLM/Kimi
  ``thinking``, vLLM ``chat_template_kwargs``); absent: thinking_level is sent as
  ``reasoning_effort`` (its value as is, as the openai SDK sends it); empty: the model's thinking
  is fixed (MiniMax always thinks), every level is clamped to it and nothing is sent;
- ``tool_choice``: the tool_choice values the vendor accepts (others raise
  UnsupportedParameterError);
- ``stream_usage``: ask for the usage chunk (default True);
- ``images``: False when the model takes no images (raises before sending);
- ``tool_stream``: send ``tool_stream: true`` with tools (Z.AI streams tool-call arguments only then);
- ``response_formats``: the response_format types the server honours (others raise);
- ``fast_mode``: False when the server has no priority tier (``fast_mode`` raises instead of
  sending ``service_tier: "priority"``);
- ``image_subset``: the server takes OpenAI's image types alone (PNG, JPEG, WebP, GIF: OpenAI, Azure); an image
  of another type given as bytes is an UnsupportedParameterError before sending;
- ``answers_required``: the server refuses a tool call left unanswered before the next turn (OpenAI, Azure,
  DeepSeek, DashScope, Moonshot: a 400), so such a history is a ConfigError before sending
  (``validate.check_tool_pairs``); a server without it (a local one) is sent the history as it is.

Config keys beyond the seed: ``response_format`` -> ``response_format`` (``json_schema: {name,
schema, strict}``), ``top_p``, ``stop`` (up to ``STOP_LIMIT``), ``seed``, ``fast_mode`` ->
``service_tier: "priority"``.  ``prompt_caching``: ENABLE only, except on GPT-5.6 and later
(``openai_responses.cache_options``), where DISABLE -> ``prompt_cache_options: {"mode": "explicit"}`` and
ENHANCE raises (Chat Completions takes only the 30m TTL), and on GPT-4.1 / GPT-5 to 5.5, where ENHANCE ->
``prompt_cache_retention: "24h"``; an item or message marked ``cache_breakpoint`` ->
``prompt_cache_breakpoint: {"mode": "explicit"}`` on its part (a marked tool result's content goes as text
parts), refused on earlier models and on assistant items.

Fidelity it records (and replays): ``reasoning_field`` on thinking (``reasoning_content``,
``reasoning``, ``both`` when a chunk carried the same text in both, ``content`` for thinking
parts inside ``content``); ``refusal`` on text that came as ``delta.refusal``;
``extra_content`` on tool calls (Gemini's compatibility layer carries thought signatures there);
``reasoning_field: "thought"`` on Gemini thought summaries (streamed as flagged ``content``; not
replayed).
"""

import logging
import re
import time
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional

from ..errors import StreamProtocolError, upstream_error
from ..sse import SSEEvent
from ..stream import StreamEnd, with_audio, with_output_images, with_service_tier
from ..toolcalls import ToolCallAssembler
from ..types import HttpRequest, PromptCaching
from ..validate import cache_marks, check_tool_pairs
from .openai_responses import BREAKPOINT, cache_options, cache_written, check_breakpoints, check_strict
from ._common import (left_out, DONE, document_payloads, payloads, openai_models_request, parse_data_list, Endpoint, Protocol, check_response_format, data_uri, documents, dumps,
                      inclusive_usage, parse_data_uri, pdf_url, request_headers, samplers,
                      to_int, unsupported)
from ._common import OPENAI_IMAGE_TYPES, answer_bytes, answer_mime, check_image_type, check_still, refuse_mcp_servers
from ._common import NOTES, Encoded, Prior, Resumed, keep, marks_resumed, noting, start

__all__ = ["build_request", "parse_stream", "map_usage", "chat_response_format", "FINISH_REASONS", "STOP_LIMIT",
           "parse_document"]

logger = noting(logging.getLogger("agenthub"))

#: Chat finish_reason -> UniEvent finish_reason; anything else (content_filter, ...) is "unknown".
#: TGI says ``eos_token`` / ``stop_sequence`` where OpenAI says ``stop``; relays that pass an
#: Anthropic stop reason through say ``end_turn`` / ``stop_sequence`` / ``max_tokens`` / ``tool_use``.
#: ``error`` (OpenRouter: the provider failed mid-answer) raises instead.
FINISH_REASONS = {
    "stop": "stop", "length": "length", "tool_calls": "tool_call", "function_call": "tool_call",
    "eos_token": "stop", "stop_sequence": "stop", "end_turn": "stop", "max_tokens": "length", "tool_use": "tool_call",
}
REASONING_FIELDS = ("reasoning_content", "reasoning")
#: stop sequences Chat Completions takes ("up to 4"; a server that takes more: extra_body {"stop": [...]})
STOP_LIMIT = 4
#: reasoning fields whose text was shown from a structure that goes back whole (not as text)
_CARRIED = ("reasoning_details", "thinking_blocks")
#: the reasoning fields a Chat host's thinking came in that go back in a field (content's thinking parts do not)
_REPLAYED = REASONING_FIELDS + ("both",)
#: config key -> its Chat Completions field (max_tokens: the row's ``max_tokens_field``)
_SAMPLERS = {"max_tokens": "max_completion_tokens", "temperature": "temperature", "top_p": "top_p", "stop": "stop",
             "seed": "seed"}
#: models before GPT-5.6 that take ``prompt_cache_retention: "24h"`` (prompt_caching ENHANCE) over Chat Completions
_RETENTION = re.compile(r"gpt-(?:4\.1|5)(?![0-9])")
_AUDIO_FORMATS = {"audio/wav": "wav", "audio/x-wav": "wav", "audio/wave": "wav", "audio/mpeg": "mp3", "audio/mp3": "mp3"}


# -- request ------------------------------------------------------------------------------------


def build_request(endpoint: Endpoint, model: str, messages: List[Mapping[str, Any]], config: Mapping[str, Any],
                  prior: Optional[Prior] = None) -> HttpRequest:
    """``prior``: what the client's previous call kept (``providers._common.Prior``): the messages it converted
    are taken as they were, where they are the head of these, unchanged."""
    client = endpoint.client_type
    refuse_mcp_servers(client, config)
    quirks = endpoint.quirks
    if quirks.get("answers_required"):  # (the client checks the dialects whose every server refuses it)
        check_tool_pairs(client, messages, config, True)
    check_breakpoints(client, model, messages, "Chat Completions", marks_resumed(prior, messages))
    wire = _wire_messages(endpoint, messages, config, prior)
    body = {"model": model, "messages": wire.items}  # type: Dict[str, Any]
    body["stream"] = True
    if quirks.get("stream_usage", True):
        body["stream_options"] = {"include_usage": True}
    limit_field = quirks.get("max_tokens_field", "max_completion_tokens")
    body.update(samplers(client, config, dict(_SAMPLERS, max_tokens=limit_field), STOP_LIMIT))
    response_format = check_response_format(client, config, quirks.get("response_formats"))
    check_strict(endpoint, config, response_format)
    if response_format is not None:
        body["response_format"] = chat_response_format(response_format)
    if config.get("fast_mode"):
        if quirks.get("fast_mode") is False:
            raise unsupported(client, "fast_mode", "is not offered by this server (no priority tier)")
        body["service_tier"] = "priority"
    if config.get("tools"):
        body["tools"] = [_tool(tool) for tool in config["tools"]]
        if quirks.get("tool_stream"):
            body["tool_stream"] = True  # Z.AI streams tool-call arguments only when asked
    if "tool_choice" in config:
        body["tool_choice"] = _tool_choice(client, config["tool_choice"], quirks)
    level = config.get("thinking_level")
    thinking = quirks.get("thinking")
    if level is not None and thinking:
        body.update(thinking.get(level.value, {}))
    elif level is not None and thinking is None:
        body["reasoning_effort"] = level.value  # the field the openai SDK sends (its ReasoningEffort values)
    # (a row whose ``thinking`` is empty: the model's thinking is fixed, and every level is clamped to it)
    if config.get("thinking_summary") is False:
        raise unsupported(client, "thinking_summary", "False cannot be sent over Chat Completions: it has no field "
                                                      "to hide the reasoning a server streams")
    caching = config.get("prompt_caching")
    if cache_options(model):  # GPT-5.6 and later: prompt_cache_options (its ttl is 30m only on Chat Completions)
        if caching == PromptCaching.ENHANCE:
            raise unsupported(client, "prompt_caching", "ENHANCE cannot be sent to {!r} over Chat Completions: its "
                                                        "prompt_cache_options take only the 30m TTL, the default (use "
                                                        "ENABLE, or the Responses API, whose ENHANCE is 12h)".format(model))
        if caching == PromptCaching.DISABLE:
            body["prompt_cache_options"] = {"mode": "explicit"}  # no implicit breakpoint: only marked ones cache
    elif caching == PromptCaching.ENHANCE and _RETENTION.match(model.lower().rsplit("/", 1)[-1]):
        body["prompt_cache_retention"] = "24h"  # OpenAI's extended retention (GPT-4.1, GPT-5 to 5.5)
    elif caching is not None and caching != PromptCaching.ENABLE:
        raise unsupported(client, "prompt_caching", "can only be ENABLE: the server caches prompts by itself")
    for key in ("image_config", "tts_config", "embedding_config"):
        if key in config:
            raise unsupported(client, key, "is not available over Chat Completions for model {!r}".format(model))
    return HttpRequest("POST", "/chat/completions", request_headers(endpoint), body, output_limit=(limit_field,),
                       encoded=Encoded("messages", wire) if prior is not None else None)


build_request.takes_prior = True  # type: ignore[attr-defined]


def chat_response_format(response_format: Mapping[str, Any]) -> Dict[str, Any]:
    """response_format -> the Chat Completions ``response_format`` object."""
    if response_format["type"] != "json_schema":
        return {"type": response_format["type"]}
    schema = {"name": response_format["name"]}  # type: Dict[str, Any]
    if response_format.get("description"):
        schema["description"] = response_format["description"]
    schema["schema"] = response_format["schema"]
    schema["strict"] = response_format["strict"]
    return {"type": "json_schema", "json_schema": schema}


def _tool(tool: Mapping[str, Any]) -> Dict[str, Any]:
    function = {"name": tool["name"]}  # type: Dict[str, Any]
    if tool.get("description"):
        function["description"] = tool["description"]
    function["parameters"] = tool.get("parameters") or {"type": "object", "properties": {}}
    if "strict" in tool:
        function["strict"] = tool["strict"]
    return {"type": "function", "function": function}


def _tool_choice(client: str, choice: Any, quirks: Mapping[str, Any]) -> Any:
    accepted = quirks.get("tool_choice")
    kind = "list" if isinstance(choice, list) else choice
    if accepted is not None and kind not in accepted:
        raise unsupported(client, "tool_choice", "{!r} is not accepted by this server".format(choice))
    if not isinstance(choice, list):
        return choice
    if len(choice) == 1:
        return {"type": "function", "function": {"name": choice[0]}}
    return {
        "type": "allowed_tools",
        "allowed_tools": {"mode": "required", "tools": [{"type": "function", "function": {"name": n}} for n in choice]},
    }


def _image_part(endpoint: Endpoint, url: str) -> Dict[str, Any]:
    """An image_url item (or a tool result's image): a data URI of another type of media goes as inline_data
    of its type does (audio as input_audio, anything else refused); a PDF's URL is refused (Chat Completions
    takes no document by URL)."""
    parsed = parse_data_uri(url)  # a malformed data URI is a ConfigError now, not a 400 later
    if parsed is not None and not parsed[0].startswith("image/"):
        return _media_part(endpoint, parsed[0], parsed[1])
    if parsed is None and pdf_url(url):
        raise unsupported(endpoint.client_type, "image_url", "names a PDF (a URL ending in .pdf): Chat Completions "
                                                             "takes images by URL, no document")
    if endpoint.quirks.get("images") is False:
        raise unsupported(endpoint.client_type, "image input", "is not supported by this model")
    if parsed is not None and endpoint.quirks.get("image_subset"):
        check_image_type(endpoint.client_type, parsed[0], OPENAI_IMAGE_TYPES, "Chat Completions")
    if parsed is not None:
        check_still(endpoint.client_type, parsed[0], parsed[1], "Chat Completions",
                    bool(endpoint.quirks.get("image_subset")))
    return {"type": "image_url", "image_url": {"url": url}}


def _media_part(endpoint: Endpoint, mime_type: str, data: bytes) -> Dict[str, Any]:
    if mime_type.startswith("image/"):
        return _image_part(endpoint, data_uri(mime_type, data))
    audio = _AUDIO_FORMATS.get(mime_type)
    if audio:
        import base64

        return {"type": "input_audio", "input_audio": {"data": base64.b64encode(data).decode("ascii"), "format": audio}}
    raise unsupported(endpoint.client_type, "inline_data", "of type {} cannot be sent over Chat Completions".format(mime_type))


def _messages(endpoint: Endpoint, messages: List[Mapping[str, Any]], config: Mapping[str, Any]) -> List[Dict[str, Any]]:
    return _wire_messages(endpoint, messages, config, None).items


def _wire_messages(endpoint: Endpoint, messages: List[Mapping[str, Any]], config: Mapping[str, Any],
                   prior: Optional[Prior]) -> Resumed:
    """The wire messages, from the previous call's where ``prior`` allows (what a message's mapping reads:
    the endpoint's quirks below, the system prompt, whether reasoning was sent before it)."""
    quirks = endpoint.quirks
    context = (endpoint.client_type, quirks.get("images"), quirks.get("reasoning_field"), quirks.get("reasoning_details"),
               quirks.get("echo_reasoning_on_tool_turns"), quirks.get("reasoning_as_text"), config.get("system_prompt"))
    noted = NOTES[0]
    made = start(prior, "openai-chat", context, messages, prior.head if prior is not None else 0, False)
    out = made.items
    if not made.count and config.get("system_prompt"):
        out.append({"role": "system", "content": config["system_prompt"]})
    echo_reasoning = made.state
    for index in range(made.count, len(messages)):
        message = messages[index]
        if message["role"] == "assistant":
            if any(cache_marks(message)):
                raise unsupported(endpoint.client_type, "cache_breakpoint", "is set on assistant messages[{}]: OpenAI "
                                                                            "takes breakpoints on input content (user "
                                                                            "text, images, files, tool results): mark "
                                                                            "the user item after it".format(index))
            wire, used_reasoning = _assistant(endpoint, message, echo_reasoning)
            echo_reasoning = echo_reasoning or used_reasoning
            out.append(wire)
        else:
            out.extend(_user(endpoint, message))
    made.state = echo_reasoning
    keep(prior, "openai-chat", context, messages, made, noted)
    return made


def _user(endpoint: Endpoint, message: Mapping[str, Any]) -> List[Dict[str, Any]]:
    tool_messages = []  # type: List[Dict[str, Any]]
    tool_images = []  # type: List[Dict[str, Any]]
    parts = []  # type: List[Dict[str, Any]]
    marks = cache_marks(message)
    for position, item in enumerate(message["content_items"]):
        kind = item["type"]
        if kind == "text":
            parts.append({"type": "text", "text": item["text"]})
        elif kind == "image_url":
            parts.append(_image_part(endpoint, item["image_url"]))
        elif kind == "inline_data":
            parts.append(_media_part(endpoint, item["mime_type"], bytes(item["data"])))
        elif kind == "tool_result":
            content = item["text"]  # type: Any
            if marks[position]:  # a breakpoint rides a content part: the content as a list of text parts
                content = [{"type": "text", "text": item["text"], "prompt_cache_breakpoint": dict(BREAKPOINT)}]
            tool_messages.append({"role": "tool", "tool_call_id": item["tool_call_id"], "content": content})
            for url in item.get("images") or ():
                tool_images.append(_image_part(endpoint, url))
            continue
        else:  # pragma: no cover - validate.check_message keeps other items out of user messages
            left_out(kind, 'Chat Completions', "user")
        if marks[position]:
            parts[-1]["prompt_cache_breakpoint"] = dict(BREAKPOINT)
    out = list(tool_messages)
    parts = tool_images + parts
    if parts:
        if all(p["type"] == "text" and "prompt_cache_breakpoint" not in p for p in parts) and len(parts) == 1:
            out.append({"role": "user", "content": parts[0]["text"]})
        else:
            out.append({"role": "user", "content": parts})
    elif not tool_messages:
        out.append({"role": "user", "content": ""})
    return out


def _assistant(endpoint: Endpoint, message: Mapping[str, Any], echo_reasoning: bool):
    quirks = endpoint.quirks
    own = quirks.get("reasoning_field")  # the field this host reads reasoning back from (None: not known)
    as_text = own is None and bool(quirks.get("reasoning_as_text"))  # (config["foreign_thinking"] = "text")
    carried = ("reasoning_details",) if quirks.get("reasoning_details") else ()  # the structures it reads back
    texts = []  # type: List[str]
    refusals = []  # type: List[str]
    details = []  # type: List[Any]  # OpenRouter reasoning_details, sent back as they came
    blocks = []  # type: List[Any]  # LiteLLM thinking_blocks, likewise
    reasoning = {}  # type: Dict[str, List[str]]
    tool_calls = []  # type: List[Dict[str, Any]]
    spoken = _spoken(message["content_items"])  # a spoken answer's audio id, while it may be sent back
    for item in message["content_items"]:
        kind = item["type"]
        fidelity = item.get("fidelity") or {}
        if kind == "text":
            if spoken is not None and fidelity.get("audio_transcript"):
                continue  # the audio goes back by its id: its transcript is part of it
            (refusals if fidelity.get("refusal") else texts).append(item["text"])
        elif kind == "inline_data" and fidelity.get("audio_id"):
            if spoken is None:
                logger.debug("a spoken answer's audio id expired: its transcript goes back as text")
        elif kind == "thinking" and ("reasoning_details" in fidelity or "thinking_blocks" in fidelity):
            if "reasoning_details" in carried:  # (OpenRouter's structure: to the hosts that read it alone)
                details.extend(fidelity.get("reasoning_details") or ())
            if own is None:  # (LiteLLM's, a gateway of no row: back to it as they came)
                blocks.extend(fidelity.get("thinking_blocks") or ())
        elif kind == "thinking" and fidelity.get("reasoning_field") in _CARRIED and (
                own is None or fidelity["reasoning_field"] in carried):
            if as_text and fidelity["reasoning_field"] == "reasoning_details" and item["thinking"]:
                texts.append(item["thinking"])  # (shown from reasoning_details, which such a host is not sent)
            # else shown from reasoning_details / thinking_blocks: those go back whole, from their own item
        elif kind == "thinking" and own is None and fidelity.get("reasoning_field") in _REPLAYED:
            # a host of no row reads no reasoning field that is known (OpenAI's own Chat Completions, Cerebras,
            # Groq refuse another host's with a 400): left out, or its text in content when the caller asks
            if as_text and item["thinking"]:
                texts.append(item["thinking"])
            else:
                logger.debug("reasoning is not sent to a Chat Completions host with no reasoning_field")
        elif kind == "thinking":
            field = fidelity.get("reasoning_field")
            if own and (field in REASONING_FIELDS or field in _CARRIED or field == "both"):
                # another Chat host's reasoning (or this host's) goes in the field this host reads back: DeepSeek
                # and Kimi refuse a tool-call turn of thinking mode without their reasoning_content (a 400),
                # OpenRouter and Ollama read only reasoning; a structure this host does not read goes as its text
                fields = [own]
            else:
                fields = [field] if field in REASONING_FIELDS else (
                    list(REASONING_FIELDS) if field == "both" else ([own] if own else []))
            if not fields:
                logger.debug("thinking from another protocol is not replayed over Chat Completions")
            for name in fields:
                reasoning.setdefault(name, []).append(item["thinking"])
        elif kind == "tool_call":
            call = {
                "id": item["tool_call_id"],
                "type": "function",
                "function": {"name": item["name"], "arguments": dumps(item["arguments"])},
            }
            if fidelity.get("extra_content"):
                call["extra_content"] = fidelity["extra_content"]
            tool_calls.append(call)
        else:
            left_out(kind, 'Chat Completions')
    wire = {"role": "assistant", "content": "".join(texts) if texts or not tool_calls else None}  # type: Dict[str, Any]
    if spoken is not None:
        if not texts and not tool_calls:
            del wire["content"]  # (OpenAI's audio guide sends the id alone)
        wire["audio"] = {"id": spoken}
    if refusals:
        wire["refusal"] = "".join(refusals)
    if details:
        wire["reasoning_details"] = details
    if blocks:
        wire["thinking_blocks"] = blocks
    for name, pieces in reasoning.items():
        wire[name] = "".join(pieces)
    if tool_calls:
        wire["tool_calls"] = tool_calls
        if not reasoning and quirks.get("echo_reasoning_on_tool_turns") and echo_reasoning:
            wire[quirks.get("reasoning_field", "reasoning_content")] = ""
    return wire, bool(reasoning)


def _spoken(items: Any) -> Optional[str]:
    """The id of the audio an assistant message spoke (an inline_data item of a Chat answer, ``audio_id`` in its
    fidelity) when it may still be sent back: its ``expires_at`` not past (OpenAI keeps it an hour for multi-turn
    use; after that the id is refused and the transcript goes back as text); None otherwise."""
    for item in items:
        fidelity = item.get("fidelity") if item.get("type") == "inline_data" else None
        said = fidelity.get("audio_id") if type(fidelity) is dict else None
        if said and type(said) is str:
            expires = fidelity.get("expires_at")
            if type(expires) is int and expires <= time.time():
                return None
            return said
    return None


# -- response -----------------------------------------------------------------------------------


def map_usage(raw: Any) -> Dict[str, Any]:
    """Chat usage -> the four exclusive buckets (see docs/workloads.md, "Usage and cost"), with the prompt-cache
    writes, the output's image tokens and the audio tokens where the wire names them (``stream.Usage``)."""
    raw = raw if isinstance(raw, dict) else {}
    prompt_details = raw.get("prompt_tokens_details")
    prompt_details = prompt_details if isinstance(prompt_details, dict) else {}
    completion_details = raw.get("completion_tokens_details")
    completion_details = completion_details if isinstance(completion_details, dict) else {}
    cached = prompt_details.get("cached_tokens")
    if cached is None:
        cached = raw.get("prompt_cache_hit_tokens")  # DeepSeek's own spelling
    if cached is None:
        cached = raw.get("cached_tokens")  # Moonshot/Kimi: at the top of usage
    thoughts = completion_details.get("reasoning_tokens")
    if thoughts is None:
        thoughts = raw.get("reasoning_tokens")
    buckets = inclusive_usage(raw.get("prompt_tokens"), raw.get("completion_tokens"), cached, thoughts,
                              raw.get("total_tokens"))
    # OpenRouter names the output's image tokens (part of completion_tokens), billed at an image model's
    # image-output price: Usage.output_image_tokens
    images = completion_details.get("image_tokens")
    buckets = with_output_images(cache_written(buckets, prompt_details.get("cache_write_tokens")), images)
    # the audio tokens of the prompt and of the completion (gpt-audio, gpt-4o-audio-preview), billed at the model's
    # audio prices: Usage.input_audio_tokens / output_audio_tokens (the wire does not say how many of the cached
    # tokens are audio: every audio token is taken as uncached input, the dearer way)
    return with_audio(buckets, prompt_details.get("audio_tokens"), None, completion_details.get("audio_tokens"))


def parse_stream(events: Iterable[SSEEvent], client: str = "openai-chat", tool_id_prefix: Any = None) -> Iterator[Any]:
    """SSE events of one Chat Completions stream -> content items, then a StreamEnd.

    Complete when ``[DONE]`` arrives, or when a finish_reason was seen and the body
    ended cleanly.  Heartbeats (chunks without choices, comments) are skipped; only
    choice 0 is followed.  UpstreamError is raised for an ``error`` object or ``event:
    error``, a flat ``{"object": "error"}`` (vLLM, SGLang, Mistral), ``finish_reason:
    "error"`` (OpenRouter, SGLang) and a MiniMax ``base_resp`` with a non-zero status.
    Usage is read from the chunk, the choice (Moonshot), ``x_groq`` (Groq) or llama.cpp's
    ``timings``.  Tool calls close at the end of the stream, not at the finish_reason.
    """
    return _parse(payloads(events), client, tool_id_prefix)


class _State(object):
    """One stream's tool calls, the reasoning carriers not yet handed out, and what the terminal chunk said."""

    __slots__ = ("client", "tools", "details", "blocks", "pending", "thought", "usage", "timings", "finish",
                 "answer", "audio")

    def __init__(self, client: str, tool_id_prefix: Any) -> None:
        self.client = client
        self.tools = ToolCallAssembler(client, tool_id_prefix)
        # OpenRouter reasoning_details (joined per index) and LiteLLM thinking_blocks (joined per block) not
        # yet handed out: they go out, as an empty thinking item carrying them, where the reasoning ends
        self.details = None  # type: Optional[Dict[Any, Dict[str, Any]]]
        self.blocks = None  # type: Optional[List[Dict[str, Any]]]
        self.pending = False
        self.thought = [False]  # Gemini's compatibility layer: a thought (``<thought>`` ... ``</thought>``) is open
        self.usage = None  # type: Any
        self.timings = None  # type: Any  # llama.cpp server: token counts on the last chunk
        self.finish = None  # type: Optional[str]
        self.answer = None  # type: Any  # the chunk that finished or counted the answer: its id and model
        self.audio = None  # type: Optional[_Audio]  # a spoken answer's audio (delta.audio), handed out at the end

    def carrier(self) -> Dict[str, Any]:
        """The reasoning carrier, handed out now (the reasoning ended on the wire)."""
        item = _reasoning_carrier(self.details, self.blocks)
        self.details = self.blocks = None
        self.pending = False
        return item


# -- the handlers: a chunk without choices (_quiet), and a delta's fields in wire order (_DELTA_FIELDS)


def _quiet(state: _State, chunk: Dict[str, Any]) -> None:
    """A chunk without choices: a keep-alive, a usage or timings chunk, or an error in a vendor's shape."""
    if chunk.get("object") == "error":  # vLLM, SGLang, Mistral: the error object itself, flat
        raise upstream_error(state.client, chunk)
    base = chunk.get("base_resp")
    if base and type(base) is dict and base.get("status_code"):
        raise _base_resp_error(state.client, base)  # MiniMax: an error is a 200 with a status code
    if state.usage is None:
        state.usage = _x_groq_usage(chunk)
    if "timings" in chunk:
        state.timings = chunk["timings"]


def _carried(state: _State, delta: Dict[str, Any], out: List[Dict[str, Any]]) -> None:
    """Reasoning carried whole (``reasoning_details``, ``thinking_blocks``): joined into the carrier, and
    shown from it when no reasoning text came beside it."""
    raw_details = delta.get("reasoning_details")
    raw_blocks = delta.get("thinking_blocks")
    if raw_blocks is None:
        extra = delta.get("provider_specific_fields")
        raw_blocks = extra.get("thinking_blocks") if type(extra) is dict else None
    if not (raw_details or raw_blocks):
        return
    shown = _reasoning_text(delta)
    if raw_details:
        state.details = _add_details(state.details, raw_details)
        if not shown:
            for item in _detail_texts(raw_details):
                shown = True
                out.append(item)
    if raw_blocks:
        state.blocks = _add_blocks(state.blocks, raw_blocks)
        if not shown:
            out.extend(_block_texts(raw_blocks))
    state.pending = bool(state.details or state.blocks)


def _texts(state: _State, delta: Dict[str, Any], out: List[Dict[str, Any]]) -> None:
    """The reasoning, content and refusal fields; the carrier goes out before the first non-thinking item."""
    for item in _other_fields(delta, delta.get("content"), state.thought):
        if state.pending and item["type"] != "thinking":
            out.append(state.carrier())
        out.append(item)
    audio = delta.get("audio")
    if audio and type(audio) is dict:
        transcript = audio.get("transcript")
        if transcript and type(transcript) is str:
            if state.pending:
                out.append(state.carrier())
            out.append({"type": "text", "text": transcript, "fidelity": dict(_TRANSCRIPT)})
        if state.audio is None:
            state.audio = _Audio()
        state.audio.add(audio, state.client)
    images = delta.get("images")
    if images and type(images) is list:
        for item in _images(images, state.client):
            if state.pending:
                out.append(state.carrier())
            out.append(item)


#: the fidelity of a spoken answer's transcript (``delta.audio.transcript``): sent back as text only when the audio's
#: id can no longer be (``_assistant``)
_TRANSCRIPT = {"audio_transcript": True}
#: what OpenAI's ``pcm16`` is (the only format it streams): 16-bit little-endian mono at 24 kHz, named as Gemini's
#: speech models name the same audio
PCM16 = "audio/L16;codec=pcm;rate=24000"


class _Audio(object):
    """A spoken answer's audio as ``delta.audio`` brings it: its ``id`` and ``expires_at`` (Unix seconds: how long
    the id may be sent back), and its ``data`` pieces (each one base64 string, decoded as it comes)."""

    __slots__ = ("id", "expires_at", "data")

    def __init__(self) -> None:
        self.id = None  # type: Optional[str]
        self.expires_at = None  # type: Optional[int]
        self.data = []  # type: List[bytes]

    def add(self, audio: Dict[str, Any], client: str) -> None:
        said = audio.get("id")
        if said and type(said) is str:
            self.id = said
        expires = audio.get("expires_at")
        if type(expires) is float and expires.is_integer() and abs(expires) < 2 ** 53:
            expires = int(expires)
        if type(expires) is int and 0 < expires < 2 ** 53:
            self.expires_at = expires
        data = audio.get("data")
        if data:
            self.data.append(answer_bytes(data, client, "audio"))

    def item(self) -> Optional[Dict[str, Any]]:
        """The audio as one inline_data item (its type read from its bytes: pcm16 has no header), carrying its id
        and expiry; None when no audio data came."""
        data = b"".join(self.data)
        if not data:
            return None
        item = {"type": "inline_data", "data": data, "mime_type": audio_mime(data)}  # type: Dict[str, Any]
        fidelity = {}  # type: Dict[str, Any]
        if self.id is not None:
            fidelity["audio_id"] = self.id
        if self.expires_at is not None:
            fidelity["expires_at"] = self.expires_at
        if fidelity:
            item["fidelity"] = fidelity
        return item


def audio_mime(data: bytes) -> str:
    """The type of the audio a Chat answer speaks, from its first bytes (the request's ``audio.format``: wav, mp3,
    flac, opus (in Ogg), aac (ADTS), or pcm16, which has no header)."""
    if data[:4] == b"RIFF" and data[8:12] == b"WAVE":
        return "audio/wav"
    if data[:4] == b"fLaC":
        return "audio/flac"
    if data[:4] == b"OggS":
        return "audio/ogg"
    if data[:3] == b"ID3":
        return "audio/mpeg"
    if len(data) > 1 and data[0] == 0xFF and data[1] & 0xE0 == 0xE0:  # a frame sync: MPEG audio, or ADTS (layer 0)
        return "audio/aac" if data[1] & 0x06 == 0 else "audio/mpeg"
    return PCM16


def _images(images: List[Any], client: str) -> Iterator[Dict[str, Any]]:
    """OpenRouter's generated images (``images``: ``{"type": "image_url", "image_url": {"url": ...}}`` entries
    beside ``content``): a data URL as an ``inline_data`` item, any other URL as an ``image_url`` item (a
    payload that is not base64 is a StreamProtocolError, never a silent empty image)."""
    for entry in images:
        image = entry.get("image_url") if type(entry) is dict else None
        url = image.get("url") if type(image) is dict else None
        if type(url) is not str or not url:
            continue
        if not url.startswith("data:"):
            yield {"type": "image_url", "image_url": url}
            continue
        head, _, payload = url.partition(",")
        params = head[5:].split(";")
        if "base64" not in params[1:]:
            raise StreamProtocolError("{}: the answer's image is a data URL that is not base64".format(client),
                                      client=client)
        yield {"type": "inline_data", "data": answer_bytes(payload, client, "image"),
               "mime_type": answer_mime(params[0], "image/png")}


#: a tool call id longer than this (the OpenAI API's limit on the ids it takes) is marked ``issued_id``
ISSUED_ID_OVER = 40


def _calls(state: _State, calls: Any, out: List[Dict[str, Any]]) -> None:
    if state.pending:
        out.append(state.carrier())
    tools = state.tools
    for call in calls:
        function = call.get("function") or {}
        extra = call.get("extra_content")  # Gemini's compat layer: the thought signature rides here
        call_id = call.get("id")
        name = function.get("name")
        if call_id is None and name is None and not extra:  # a bare fragment: feed()'s own shortcut
            out.extend(tools.feed_arguments(call.get("index"), function.get("arguments")))
        else:
            fidelity = {"extra_content": extra} if extra else None  # type: Optional[Dict[str, Any]]
            if call_id.__class__ is str and len(call_id) > ISSUED_ID_OVER:
                # longer than the OpenAI API's own ids: marked as this server's, so foreign.for_dialect
                # sends it back to an openai-chat server as it came (and rewrites it only for another protocol)
                fidelity = dict(fidelity or {}, issued_id=True)
            out.extend(tools.feed(call.get("index"), call_id, name, function.get("arguments"), fidelity))


def _delta(state: _State, delta: Dict[str, Any]) -> List[Dict[str, Any]]:
    """The items of a delta other than one plain text field (the parser's inlined row)."""
    out = []  # type: List[Dict[str, Any]]
    calls = delta.get("tool_calls")
    if len(delta) > 1 or calls is None:
        _carried(state, delta, out)
        _texts(state, delta, out)
    if calls:
        _calls(state, calls, out)
    return out


def _choice(chunk: Dict[str, Any], choices: Any) -> Any:
    """Choice 0 of a chunk (the only one followed), or None."""
    choice = choices[0]
    if len(choices) > 1 or choice.get("index", 0) != 0:
        return next((c for c in choices if isinstance(c, dict) and c.get("index", 0) == 0), None)
    return choice


def _parse(pairs: Iterable[Any], client: str = "openai-chat", tool_id_prefix: Any = None) -> Iterator[Any]:
    """``parse_stream`` over decoded payloads: ``(event, chunk)`` pairs (see ``_common.payloads``)."""
    state = _State(client, tool_id_prefix)
    fragment = state.tools.fragment
    done = False
    for event, chunk in pairs:
        if type(chunk) is not dict:
            if event is DONE:
                done = True
                break
            if event == "error":
                raise upstream_error(client, chunk)
            continue
        if event == "error":
            raise upstream_error(client, chunk)
        if "error" in chunk and chunk["error"]:
            raise upstream_error(client, _with_raw_detail(chunk))
        choices = chunk.get("choices")
        if chunk.get("usage"):
            state.usage = chunk["usage"]
            state.answer = chunk
        if not choices:
            _quiet(state, chunk)
            continue
        choice = choices[0]
        if len(choices) > 1 or choice.get("index", 0) != 0:  # (_choice's own test, inlined: once per chunk)
            choice = _choice(chunk, choices)
            if choice is None:
                continue
        delta = choice.get("delta")
        if delta is None:  # a server that ignored stream (an empty delta beside an accumulated "message",
            delta = choice.get("message")  # as Perplexity sends, is still empty)
        if delta:
            content = delta.get("content")
            if len(delta) == 1:
                if type(content) is str:
                    # the row nearly every chunk takes: one text field (_delta gives the same)
                    if content:
                        if state.pending:
                            yield state.carrier()
                        yield {"type": "text", "text": content}
                else:
                    # the row nearly every tool-call chunk takes: one bare argument fragment of one
                    # call (no id, name or extra_content), no reasoning carrier pending; _delta gives
                    # the same through _calls, two calls and a list more per chunk
                    calls = delta.get("tool_calls")
                    call = calls[0] if calls.__class__ is list and len(calls) == 1 else None
                    function = call.get("function") if call.__class__ is dict else None
                    if function.__class__ is dict and function.get("name") is None and call.get("id") is None \
                            and not call.get("extra_content") and not state.pending:
                        index, text = call.get("index"), function.get("arguments")
                        item = fragment(index, text)
                        if item is not None:
                            yield item
                        else:
                            yield from state.tools.feed_arguments(index, text)
                    else:
                        yield from _delta(state, delta)
            else:
                yield from _delta(state, delta)
        reason = choice.get("finish_reason")
        if reason:
            if reason == "error":
                raise _finish_error(client, choice)
            # Open tool calls are not closed here but at the end: some servers put a finish_reason
            # on every chunk (gateways in front of Gemini), or send a call's last metadata after it.
            state.finish = FINISH_REASONS.get(reason, "unknown")
            state.answer = chunk
            if state.usage is None:
                state.usage = _x_groq_usage(chunk)
            if "timings" in chunk:
                state.timings = chunk["timings"]
        if choice.get("usage"):
            state.usage = choice["usage"]
    if not done and state.finish is None:
        return  # cut before its terminal marker: the driver raises StreamProtocolError
    yield from state.tools.finish()
    if state.pending:
        yield state.carrier()
    spoken = state.audio.item() if state.audio is not None else None
    if spoken is not None:
        yield spoken
    raw_usage = state.usage
    usage = map_usage(raw_usage) if raw_usage else None
    timings = state.timings
    if timings and type(timings) is dict:
        usage = _with_timings(usage, raw_usage, timings)
    answer = state.answer if type(state.answer) is dict else {}
    if usage is not None and "service_tier" in answer:  # the tier that served it (OpenAI): the one it is billed at
        usage = with_service_tier(usage, answer["service_tier"])
    yield StreamEnd(usage, state.finish, response_id=answer.get("id"), model=answer.get("model"))


def parse_document(payload: Any, client: str = "openai-chat", tool_id_prefix: Any = None) -> Iterator[Any]:
    """A whole ``chat.completion`` (a server that ignored ``stream: true``: ``message`` where the stream
    has ``delta``) -> the same parts its stream gives.  A completion whose choice carries a message is
    complete even without a finish_reason; a JSON array is read as a list of chunks."""
    docs = documents(payload)
    pairs = list(document_payloads(docs))
    for doc in docs:
        choices = doc.get("choices") if type(doc) is dict else None
        if type(choices) is list and any(type(c) is dict and type(c.get("message")) is dict for c in choices):
            pairs.append((DONE, None))
            break
    return _parse(pairs, client, tool_id_prefix)


def _add_details(details: Optional[Dict[Any, Dict[str, Any]]], pieces: Any) -> Dict[Any, Dict[str, Any]]:
    """Fold streamed ``reasoning_details`` pieces into whole entries, keyed by their ``index``:
    text-like fields are joined, any other field keeps its first non-empty value."""
    details = {} if details is None else details
    for position, piece in enumerate(pieces if type(pieces) is list else ()):
        if type(piece) is not dict:
            continue
        key = piece.get("index", ("at", len(details) + position))
        entry = details.get(key)
        if entry is None:
            details[key] = dict(piece)
            continue
        for name, value in piece.items():
            if name in ("text", "summary", "data") and type(value) is str:
                entry[name] = (entry.get(name) or "") + value
            elif value not in (None, "") and entry.get(name) in (None, ""):
                entry[name] = value
    return details


def _detail_order(key: Any) -> Any:
    return (0, key, "") if type(key) is int else (1, 0, str(key))


def _reasoning_carrier(details: Optional[Dict[Any, Dict[str, Any]]],
                       blocks: Optional[List[Dict[str, Any]]]) -> Dict[str, Any]:
    """The empty thinking item that carries the whole reasoning to send back as it came: OpenRouter's
    ``reasoning_details`` (signatures, encrypted blocks) and LiteLLM's ``thinking_blocks`` (signed
    Anthropic thinking behind the gateway)."""
    fidelity = {}  # type: Dict[str, Any]
    if details:
        fidelity["reasoning_details"] = [details[key] for key in sorted(details, key=_detail_order)]
    if blocks:
        fidelity["thinking_blocks"] = blocks
    return {"type": "thinking", "thinking": "", "fidelity": fidelity}


def _reasoning_text(delta: Dict[str, Any]) -> bool:
    for name in REASONING_FIELDS:
        value = delta.get(name)
        if value and type(value) is str:
            return True
    return False


#: the text field of each kind of reasoning_details entry
_DETAIL_TEXT = {"reasoning.text": "text", "reasoning.summary": "summary"}


def _detail_texts(pieces: Any) -> Iterator[Dict[str, Any]]:
    """Thinking shown from ``reasoning_details`` pieces, for servers that send no other reasoning field."""
    for piece in pieces if type(pieces) is list else ():
        if type(piece) is dict:
            text = piece.get(_DETAIL_TEXT.get(piece.get("type"), "text"))
            if text and type(text) is str:
                yield {"type": "thinking", "thinking": text, "fidelity": {"reasoning_field": "reasoning_details"}}


def _block_texts(pieces: Any) -> Iterator[Dict[str, Any]]:
    """Thinking shown from ``thinking_blocks`` pieces, when no reasoning_content came beside them."""
    for piece in pieces if type(pieces) is list else ():
        if type(piece) is dict and piece.get("type") == "thinking":
            text = piece.get("thinking")
            if text and type(text) is str:
                yield {"type": "thinking", "thinking": text, "fidelity": {"reasoning_field": "thinking_blocks"}}


def _add_blocks(blocks: Optional[List[Dict[str, Any]]], pieces: Any) -> List[Dict[str, Any]]:
    """Fold LiteLLM's streamed ``thinking_blocks`` pieces (no index: a thinking piece continues the open
    thinking block until its signature arrives) into whole blocks, their fields as they came."""
    blocks = [] if blocks is None else blocks
    for piece in pieces if type(pieces) is list else ():
        if type(piece) is not dict:
            continue
        last = blocks[-1] if blocks else None
        if piece.get("type") == "thinking" and last is not None and last.get("type") == "thinking" \
                and not last.get("signature") and not last.get("signature_delta"):
            for name, value in piece.items():
                if name == "thinking" and type(value) is str:
                    last["thinking"] = (last.get("thinking") or "") + value
                elif value not in (None, "") and last.get(name) in (None, ""):
                    last[name] = value
            continue
        blocks.append({name: value for name, value in piece.items() if value is not None})
    return blocks


def _other_fields(delta: Dict[str, Any], content: Any, thought: List[bool]) -> Iterator[Dict[str, Any]]:
    """The items of a delta's reasoning, content and refusal fields, in that order.

    ``thought[0]`` tracks Gemini's compatibility layer, which streams thought summaries as
    ``content`` flagged ``extra_content.google.thought`` and wraps them in ``<thought>`` ...
    ``</thought>`` (the closing tag opens the first answer chunk): those are thinking, and
    the tags are wire framing, not text.
    """
    reasoning = delta.get("reasoning_content")
    other = delta.get("reasoning")
    if reasoning and type(reasoning) is str:
        if other == reasoning:
            yield {"type": "thinking", "thinking": reasoning, "fidelity": {"reasoning_field": "both"}}
        else:
            yield {"type": "thinking", "thinking": reasoning, "fidelity": {"reasoning_field": "reasoning_content"}}
            if other and type(other) is str:
                yield {"type": "thinking", "thinking": other, "fidelity": {"reasoning_field": "reasoning"}}
    elif other and type(other) is str:
        yield {"type": "thinking", "thinking": other, "fidelity": {"reasoning_field": "reasoning"}}
    if content:
        if type(content) is str:
            extra = delta.get("extra_content")
            if extra and type(extra) is dict and _is_thought(extra):
                thought[0] = True
                if content.startswith("<thought>"):
                    content = content[9:]
                if content:
                    yield {"type": "thinking", "thinking": content, "fidelity": {"reasoning_field": "thought"}}
                return
            if thought[0]:
                thought[0] = False
                if content.startswith("</thought>"):
                    content = content[10:]
            if content:
                yield {"type": "text", "text": content}
        else:
            for item in _content_parts(content):
                yield item
    refusal = delta.get("refusal")
    if refusal and type(refusal) is str:
        yield {"type": "text", "text": refusal, "fidelity": {"refusal": True}}


def _content_parts(content: Any) -> Iterator[Dict[str, Any]]:
    """Content streamed as a list of parts (Mistral's reasoning models): text parts and
    ``{"type": "thinking", "thinking": [{"type": "text", "text": ...}]}`` parts."""
    if isinstance(content, list):
        for part in content:
            if not isinstance(part, dict):
                continue
            if part.get("type") == "thinking":
                inner = part.get("thinking")
                for piece in inner if isinstance(inner, list) else [{"text": inner}]:
                    text = piece.get("text") if isinstance(piece, dict) else None
                    if isinstance(text, str) and text:
                        yield {"type": "thinking", "thinking": text, "fidelity": {"reasoning_field": "content"}}
            elif isinstance(part.get("text"), str) and part["text"]:
                yield {"type": "text", "text": part["text"]}


def _is_thought(extra: Dict[str, Any]) -> bool:
    google = extra.get("google")
    return type(google) is dict and google.get("thought") is True


def _x_groq_usage(chunk: Dict[str, Any]) -> Any:
    """Groq reports a stream's usage inside ``x_groq`` on its last chunk."""
    extra = chunk.get("x_groq")
    if type(extra) is dict and type(extra.get("usage")) is dict:
        return extra["usage"]
    return None


def _with_timings(usage: Any, raw: Any, timings: Dict[str, Any]) -> Any:
    """llama.cpp's ``timings``: ``cache_n`` prompt tokens came from the cache, ``prompt_n`` were
    processed, ``predicted_n`` generated.  They stand in for usage the server did not send, and
    give the cached count its usage lacks (its prompt_tokens count cache_n + prompt_n)."""
    cache_n, prompt_n, predicted_n = (to_int(timings.get(k)) for k in ("cache_n", "prompt_n", "predicted_n"))
    if usage is None:
        if prompt_n is None and predicted_n is None:
            return None
        total = None if prompt_n is None else prompt_n + (cache_n or 0)
        return inclusive_usage(total, predicted_n, cache_n, None)
    if usage["cached_tokens"] is None and cache_n and type(raw) is dict and prompt_n is not None \
            and to_int(raw.get("prompt_tokens")) == prompt_n + cache_n:
        return inclusive_usage(raw.get("prompt_tokens"), raw.get("completion_tokens"), cache_n,
                               usage["thoughts_tokens"], raw.get("total_tokens"))
    return usage


def _with_raw_detail(payload: Dict[str, Any]) -> Dict[str, Any]:
    """OpenRouter's errors say "Provider returned error" and keep the provider's own words in
    ``error.metadata.raw``: the message carries both."""
    error = payload.get("error")
    metadata = error.get("metadata") if type(error) is dict else None
    raw = metadata.get("raw") if type(metadata) is dict else None
    if isinstance(raw, str) and raw.strip() and isinstance(error.get("message"), str) and raw not in error["message"]:
        return dict(payload, error=dict(error, message="{} ({})".format(error["message"], raw.strip())))
    return payload


def _finish_error(client: str, choice: Dict[str, Any]) -> Exception:
    """``finish_reason: "error"`` (OpenRouter, SGLang, gateways): the provider failed mid-answer.
    The error is on the choice, or only ``native_finish_reason`` says what went wrong."""
    error = choice.get("error")
    if isinstance(error, (dict, str)) and error:
        return upstream_error(client, _with_raw_detail({"error": error}))
    native = choice.get("native_finish_reason")
    native = native if isinstance(native, str) and native and native != "error" else None
    message = "the provider ended the answer with an error" + (" ({})".format(native) if native else "")
    return upstream_error(client, {"error": {"message": message, "type": "upstream_error", "code": native}}, status=502)


#: MiniMax base_resp.status_code -> the HTTP status a plain error would have had
_BASE_RESP_STATUS = {1000: 500, 1001: 504, 1002: 429, 1004: 401, 1008: 402, 1013: 500, 1026: 400, 1027: 400,
                     1039: 429, 2013: 400, 2049: 401, 2056: 429, 2062: 429}


def _base_resp_error(client: str, base: Dict[str, Any]) -> Exception:
    code = base.get("status_code")
    message = base.get("status_msg") or "upstream error {}".format(code)
    return upstream_error(client, {"error": {"message": message, "type": "minimax_error", "code": code}},
                          status=_BASE_RESP_STATUS.get(code) if type(code) is int else None)


# -- the endpoint's model list ------------------------------------------------------------------


PROTOCOL = Protocol(
    "openai-chat", __name__, build_request, parse_stream, parse_document=parse_document, parse_payloads=_parse,
    quirk_keys=("answers_required", "echo_reasoning_on_tool_turns", "fast_mode", "image_subset", "images",
                "max_tokens_field", "reasoning_as_text", "reasoning_details", "reasoning_field", "response_formats",
                "stream_usage", "thinking", "tool_choice",
                "tool_stream"),
    embeddings="openai_embeddings", demo=("demo-model", "OpenAI Chat Completions"),
    models_request=openai_models_request, parse_models=parse_data_list,
)
