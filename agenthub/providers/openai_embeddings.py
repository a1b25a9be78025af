"""OpenAI-compatible embeddings (``POST {base_url}/embeddings``): OpenAI ``text-embedding-*``
and the embedding servers that copy its shape (vLLM, Ollama, OpenRouter, SiliconFlow, ...).

``build_request`` and ``parse_response`` are pure; the answer is one JSON document,
and the client turns the parts into the same event grammar as a stream.

- Each message becomes one input string: its text items joined.  An empty message is
  sent as ``" "`` (OpenAI refuses empty strings).  Any other item is a ConfigError.
- At most ``MAX_INPUTS`` (2048) messages per request: more is a ConfigError before sending.
- ``embedding_config.dimensions`` -> ``dimensions``; ``encoding_format: "float"``.
- Generation options (tools, tool_choice, image/tts config, prompt caching other than
  ENABLE) and a system prompt (text that would not be embedded) raise
  UnsupportedParameterError, as on Gemini; the rest do not apply and are not sent.
- Response: one ``embedding`` item per vector in the order of its ``index``, then a
  StreamEnd with ``prompt_tokens`` = ``usage.prompt_tokens`` (other buckets None) and
  finish ``stop``.  A vector sent as base64 (servers that ignore encoding_format) is
  decoded as little-endian float32.  Indexes other than 0..n-1 once each (a repeat, a gap, some
  missing), an entry that is no object, or a vector that is not a list of finite numbers as long
  as the others is a StreamProtocolError: no vector is ever handed on for the wrong input.
"""

import base64
import binascii
import struct
from typing import Any, Iterator, List, Mapping

from ..errors import ConfigError, StreamProtocolError, upstream_error
from ..stream import StreamEnd
from ..types import HttpRequest, PromptCaching
from ._common import Protocol, Endpoint, embedding_vector, request_headers, to_int, unsupported, usage

__all__ = ["build_request", "parse_response"]

_REJECTED = ("tools", "tool_choice", "system_prompt", "image_config", "tts_config")

#: the most inputs one request takes (OpenAI's API reference: "any array must be 2048 dimensions or less")
MAX_INPUTS = 2048


def build_request(endpoint: Endpoint, model: str, messages: List[Mapping[str, Any]], config: Mapping[str, Any]) -> HttpRequest:
    client = endpoint.client_type
    for key in _REJECTED:
        if key in config:
            raise unsupported(client, key, "does not apply to embedding model {!r}".format(model))
    caching = config.get("prompt_caching")
    if caching is not None and caching != PromptCaching.ENABLE:
        raise unsupported(client, "prompt_caching", "does not apply to embedding model {!r}".format(model))
    if len(messages) > MAX_INPUTS:
        raise ConfigError("{}: {} inputs to embed in one request; it takes at most {} (AutoLLMClient.embed sends "
                          "more as several requests)".format(client, len(messages), MAX_INPUTS))
    inputs = []  # type: List[str]
    for position, message in enumerate(messages):
        texts = []  # type: List[str]
        for item in message["content_items"]:
            if item["type"] != "text":
                raise ConfigError("messages[{}]: an embedding input takes text items only (got a {} item)".format(
                    position, item["type"]))
            texts.append(item["text"])
        text = "".join(texts)
        inputs.append(text if text else " ")
    body = {"model": model, "input": inputs, "encoding_format": "float"}  # type: Dict[str, Any]
    dimensions = (config.get("embedding_config") or {}).get("dimensions")
    if dimensions is not None:
        body["dimensions"] = dimensions
    headers = request_headers(endpoint, "application/json")
    return HttpRequest("POST", "/embeddings", headers, body, stream=False)


def parse_response(payload: Any, client: str = "openai-chat") -> Iterator[Any]:
    """The decoded JSON answer -> one embedding item per vector (by ``index``), then a StreamEnd."""
    if not isinstance(payload, dict):
        raise StreamProtocolError("the {} embeddings answer is not a JSON object".format(client), client=client)
    if payload.get("error"):
        raise upstream_error(client, payload)
    data = payload.get("data")
    if not isinstance(data, list):
        raise StreamProtocolError("the {} embeddings answer has no 'data' list".format(client), client=client)
    if not all(isinstance(row, dict) for row in data):
        raise StreamProtocolError("the {} embeddings answer holds an entry that is not a JSON object".format(client),
                                  client=client)
    indices = [row.get("index") for row in data]
    if all(type(index) is int for index in indices) and sorted(indices) == list(range(len(data))):
        rows = sorted(data, key=lambda row: row["index"])
    elif all(index is None for index in indices):
        rows = data  # no index at all: the order sent
    else:
        raise StreamProtocolError("the {} embeddings answer numbers its {} vectors other than 0..{} once each (got "
                                  "the indexes {})".format(client, len(data), len(data) - 1, indices[:8]), client=client)
    width = None
    for row in rows:
        vector = row.get("embedding")
        if isinstance(vector, str):
            vector = _decode(vector, client)
        vector = embedding_vector(vector, client, width)
        width = len(vector)
        yield {"type": "embedding", "embedding": vector}
    raw = payload.get("usage")
    tokens = to_int(raw.get("prompt_tokens")) if isinstance(raw, dict) else None
    yield StreamEnd(usage(None, tokens, None, None), "stop")


def _decode(text: str, client: str) -> List[float]:
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise StreamProtocolError("the {} embeddings answer holds a vector that is neither a list nor base64".format(
            client), client=client) from None
    if len(raw) % 4:
        raise StreamProtocolError("the {} embeddings answer holds a base64 vector of {} bytes (not float32)".format(
            client, len(raw)), client=client)
    return list(struct.unpack("<{}f".format(len(raw) // 4), raw))


#: embedding models of the OpenAI-compatible protocols: one JSON document per request
PROTOCOL = Protocol("openai-embeddings", __name__, build_request, parse_document=parse_response,
                    max_inputs=MAX_INPUTS)
