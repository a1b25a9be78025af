"""The local estimate of a request's tokens, written once (no tokenizer, no network): the budget reserves
with it (``agenthub.budget.estimate_tokens``), the rate limiter paces with it (``agenthub.limiter.estimate_tokens``,
which adds the output limit), ``count_tokens(..., estimate=True)`` returns it.

Text (messages, thinking, tool calls and results, the system prompt, tool schemas, a response schema):
UTF-8 bytes / 3, rounded up, above what BPE tokenizers give for English (about 4 characters a token)
and near one token a character for CJK text (3 bytes each).  Each image ``IMAGE_TOKENS``; a WAV sent as bytes
``AUDIO_TOKENS_PER_SECOND`` for each second its header says it lasts, at least ``MEDIA_TOKENS``; each other audio or
video item, and each media item sent by URL, ``MEDIA_TOKENS``; a document sent as bytes (a PDF, a text or
office file) its size over ``DOCUMENT_BYTES_PER_TOKEN``, at least ``MEDIA_TOKENS`` (a PDF's pages are
read as text and as images: a fixed figure was 36 times too low for a long one).  ``MESSAGE_TOKENS`` per
message, ``TOOL_TOKENS`` per tool.  Meant to err high; it is not a bound.
"""

import json
import math
from typing import Any, Iterable, Mapping, Optional

__all__ = ["estimate_tokens", "estimate_with_output", "audio_tokens", "IMAGE_TOKENS", "MEDIA_TOKENS",
           "AUDIO_TOKENS_PER_SECOND", "MESSAGE_TOKENS",
           "TOOL_TOKENS", "DOCUMENT_BYTES_PER_TOKEN"]

#: tokens per image (about what Anthropic bills for a 1.15-megapixel image)
IMAGE_TOKENS = 1600
#: tokens per audio or video item, per media item sent by URL, and the least a document counts
MEDIA_TOKENS = 1600
#: audio tokens per second of a WAV (Gemini counts 32 a second, the most of any provider's documented rate)
AUDIO_TOKENS_PER_SECOND = 32
#: a document's bytes per token (PDF text is compressed, and each page is also read as an image: high side)
DOCUMENT_BYTES_PER_TOKEN = 2
#: tokens added per message (role and framing) and per tool schema
MESSAGE_TOKENS = 4
TOOL_TOKENS = 8


def text_tokens(text: str) -> int:
    """UTF-8 bytes / 3, rounded up."""
    return (len(text.encode("utf-8", "surrogatepass")) + 2) // 3 if text else 0


def _json_tokens(value: Any) -> int:
    return text_tokens(json.dumps(value, ensure_ascii=False, sort_keys=True, default=str))


def media_tokens(mime_type: str, size: Optional[int]) -> int:
    """One media item of ``mime_type``: an image ``IMAGE_TOKENS``; audio, video, or a size not known (a URL)
    ``MEDIA_TOKENS``; a document of ``size`` bytes ``size / DOCUMENT_BYTES_PER_TOKEN``, at least ``MEDIA_TOKENS``."""
    mime_type = mime_type.lower()
    if mime_type.startswith("image/"):
        return IMAGE_TOKENS
    if size is None or mime_type.startswith(("audio/", "video/")):
        return MEDIA_TOKENS
    return max(MEDIA_TOKENS, int(math.ceil(size / float(DOCUMENT_BYTES_PER_TOKEN))))


def wav_seconds(data: Any) -> Optional[float]:
    """How long a WAV lasts, from its header: its size over the byte rate its ``fmt `` chunk says (the header
    counted as sound too: never short); None for bytes that are not a WAV with a consistent ``fmt `` chunk."""
    if not isinstance(data, (bytes, bytearray)) or data[:4] != b"RIFF" or data[8:12] != b"WAVE":
        return None
    at = 12
    while at + 8 <= min(len(data), 1 << 16):  # (the fmt chunk comes first in practice: a bounded walk)
        size = int.from_bytes(data[at + 4:at + 8], "little")
        if data[at:at + 4] == b"fmt ":
            body = data[at + 8:at + 8 + 16]
            if len(body) < 16:
                return None
            rate, byte_rate = int.from_bytes(body[4:8], "little"), int.from_bytes(body[8:12], "little")
            align = int.from_bytes(body[12:14], "little")
            if byte_rate <= 0 or byte_rate != rate * align:
                return None
            return len(data) / float(byte_rate)
        at += 8 + size + (size & 1)
    return None


def _audio_tokens(data: Any) -> int:
    seconds = wav_seconds(data)
    if seconds is None:
        return MEDIA_TOKENS
    return max(MEDIA_TOKENS, int(math.ceil(seconds * AUDIO_TOKENS_PER_SECOND)))


def _url_tokens(url: str) -> int:
    """An ``image_url`` item: a ``data:`` URI is measured (its base64 payload's decoded size), a URL is not."""
    if url.startswith("data:"):
        head, _, payload = url.partition(",")
        mime_type = head[5:].split(";", 1)[0] or "application/octet-stream"
        size = len(payload) * 3 // 4 - payload[-2:].count("=") if ";base64" in head else len(payload)
        return media_tokens(mime_type, size)
    return IMAGE_TOKENS


def _item_tokens(item: Mapping[str, Any]) -> int:
    kind = item.get("type")
    if kind == "text":
        return text_tokens(item.get("text") or "")
    if kind == "thinking":
        return text_tokens(item.get("thinking") or "")
    if kind == "tool_call":
        return text_tokens(str(item.get("name") or "")) + _json_tokens(item.get("arguments") or {})
    if kind == "tool_result":
        return text_tokens(item.get("text") or "") + sum(
            _url_tokens(image) if isinstance(image, str) else IMAGE_TOKENS for image in item.get("images") or ())
    if kind == "image_url":
        url = item.get("image_url")  # (the data model's field: a URL or a data: URI)
        return _url_tokens(url) if isinstance(url, str) else IMAGE_TOKENS
    if kind == "inline_data":
        data = item.get("data")
        mime_type = str(item.get("mime_type") or "")
        if mime_type.lower().startswith("audio/"):
            return _audio_tokens(data)
        size = len(data) if isinstance(data, (bytes, bytearray, str)) else None
        return media_tokens(mime_type, size)
    if kind == "inline_thinking":
        return MEDIA_TOKENS
    return text_tokens(json.dumps({k: v for k, v in item.items() if k != "fidelity"}, default=str))


def estimate_tokens(messages: Iterable[Mapping[str, Any]], config: Optional[Mapping[str, Any]] = None) -> int:
    """The input tokens of a request, estimated locally (the module doc has the rules)."""
    config = config or {}
    total = 0
    for message in messages or ():
        total += MESSAGE_TOKENS
        items = message.get("content_items") if type(message) is dict or isinstance(message, Mapping) else None
        for item in items or ():
            if type(item) is dict or isinstance(item, Mapping):
                total += _item_tokens(item)
    system = config.get("system_prompt")
    if isinstance(system, str):
        total += MESSAGE_TOKENS + text_tokens(system)
    for tool in config.get("tools") or ():
        total += TOOL_TOKENS + _json_tokens(tool)
    schema = config.get("response_format")
    if isinstance(schema, Mapping) and schema.get("schema") is not None:
        total += _json_tokens(schema["schema"])
    return total


def estimate_with_output(messages: Iterable[Mapping[str, Any]], config: Optional[Mapping[str, Any]] = None) -> int:
    """``estimate_tokens`` plus the output limit ``config["max_tokens"]`` (when set): the tokens a request may
    take from a tokens-per-minute allowance."""
    config = config or {}
    max_tokens = config.get("max_tokens")
    out = max_tokens if isinstance(max_tokens, int) and not isinstance(max_tokens, bool) and max_tokens > 0 else 0
    return estimate_tokens(messages, config) + out


def audio_tokens(messages: Iterable[Mapping[str, Any]]) -> int:
    """The part of ``estimate_tokens`` that is audio: the request's audio items (``inline_data`` of an
    ``audio/`` type), what a Budget holds at the model's audio input price."""
    total = 0
    for message in messages or ():
        items = message.get("content_items") if type(message) is dict or isinstance(message, Mapping) else None
        for item in items or ():
            if (type(item) is dict or isinstance(item, Mapping)) and item.get("type") == "inline_data" and \
                    str(item.get("mime_type") or "").lower().startswith("audio/"):
                total += _item_tokens(item)
    return total
