"""Gemini embedding models: ``:embedContent`` (one message) and ``:batchEmbedContents`` (several).

``build_request`` plans one non-streamed request; ``parse_response`` turns its JSON
document into one ``embedding`` item per input message, then a StreamEnd (usage from
``usageMetadata.promptTokenCount`` when the server reports it).  Both are pure.

Each message is one input: its text items (and inline media, for multimodal
embedding models) become the parts of one content; a message with nothing to embed
is sent as a single space, as the other embedding clients do.
``embedding_config.dimensions`` -> ``outputDimensionality``.  ``batchEmbedContents`` takes at
most ``MAX_INPUTS`` (100) messages: ``AutoLLMClient.embed`` sends more as several requests (the
plan itself is not refused: a batch job sends each message as its own request).  A vector that is not a list of
finite numbers as long as the others is a StreamProtocolError.
"""

from typing import Any, Dict, Iterator, List, Mapping

from ..errors import ConfigError, StreamProtocolError, upstream_error
from ..stream import StreamEnd
from ..types import HttpRequest, PromptCaching
from ._common import Protocol, Endpoint, embedding_vector, request_headers, to_int, unsupported, usage
from .gemini import blob_part, request_path, resource_name, url_part

__all__ = ["build_request", "parse_response"]

#: the most requests one batchEmbedContents takes (the server: "at most 100 requests can be in one batch");
#: the Batch API's asyncBatchEmbedContent takes a row's messages one request each, so the plan does not refuse more
MAX_INPUTS = 100

def _content(client: str, message: Mapping[str, Any]) -> Dict[str, Any]:
    parts = []  # type: List[Dict[str, Any]]
    for item in message["content_items"]:
        kind = item["type"]
        if kind == "text":
            if item["text"]:
                parts.append({"text": item["text"]})
        elif kind == "inline_data":
            parts.append(blob_part(item["mime_type"], item["data"]))
        elif kind == "image_url":
            parts.append(url_part(item["image_url"]))
        else:
            raise unsupported(client, kind, "cannot be embedded (text and media only)")
    return {"parts": parts or [{"text": " "}]}


def build_request(endpoint: Endpoint, model: str, messages: List[Mapping[str, Any]],
                  config: Mapping[str, Any]) -> HttpRequest:
    client = endpoint.client_type
    for key in ("tools", "tool_choice", "system_prompt", "image_config", "tts_config"):
        if key in config:
            raise unsupported(client, key, "does not apply to embedding model {!r}".format(model))
    caching = config.get("prompt_caching")
    if caching is not None and caching != PromptCaching.ENABLE:
        raise unsupported(client, "prompt_caching", "does not apply to embedding models")
    if not messages:  # pragma: no cover - validate.check_messages refuses an empty list
        raise ConfigError("{}: nothing to embed".format(client))
    dimensions = (config.get("embedding_config") or {}).get("dimensions")
    headers = request_headers(endpoint, "application/json")
    if len(messages) == 1:
        body = {"content": _content(client, messages[0])}  # type: Dict[str, Any]
        if dimensions is not None:
            body["outputDimensionality"] = dimensions
        return HttpRequest("POST", request_path(model, "embedContent"), headers, body, stream=False)
    name = resource_name(model)
    requests = []  # type: List[Dict[str, Any]]
    for message in messages:
        request = {"model": name, "content": _content(client, message)}  # type: Dict[str, Any]
        if dimensions is not None:
            request["outputDimensionality"] = dimensions
        requests.append(request)
    return HttpRequest("POST", request_path(model, "batchEmbedContents"), headers,
                       {"requests": requests}, stream=False)


def parse_response(payload: Any, client: str = "gemini") -> Iterator[Any]:
    """The JSON answer of embedContent / batchEmbedContents -> embedding items, then a StreamEnd."""
    if isinstance(payload, list) or (isinstance(payload, dict) and "error" in payload):
        raise upstream_error(client, payload)
    if not isinstance(payload, dict):
        raise StreamProtocolError("{}: the embedding answer is not a JSON object".format(client), client=client)
    if "embeddings" in payload:
        vectors = payload["embeddings"]
    elif "embedding" in payload:
        vectors = [payload["embedding"]]
    else:
        raise StreamProtocolError("{}: the embedding answer has no embedding".format(client), client=client)
    if not isinstance(vectors, list):
        raise StreamProtocolError("{}: the embedding answer's embeddings are not a list".format(client), client=client)
    width = None
    for vector in vectors:
        values = embedding_vector(vector.get("values") if isinstance(vector, dict) else None, client, width)
        width = len(values)
        yield {"type": "embedding", "embedding": values}
    meta = payload.get("usageMetadata")
    prompt = to_int(meta.get("promptTokenCount")) if isinstance(meta, dict) else None
    yield StreamEnd(usage(None, prompt, None, None), "stop")


#: Gemini embedding models: one JSON document per request
PROTOCOL = Protocol("gemini-embeddings", __name__, build_request, parse_document=parse_response,
                    max_inputs=MAX_INPUTS)
