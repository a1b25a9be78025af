"""Token counting before sending: what every dialect's count request shares (pure: no I/O).

A dialect that has a count endpoint declares it in its record, ``Protocol(count=Count(request, field))``:
``request(plan, model, quirks, form)`` plans the count request from the very streaming plan
``streaming_response`` would send, after ``extra_body`` / ``extra_headers`` (``form`` is the client-type
row's ``count_tokens``: None is returned where it is False, the host documenting no count endpoint);
``field`` is the answer's field holding the count (the modules name them ``count_request`` and ``COUNT_FIELD``).  The messages, system prompt, tools and attachments are the plan's own; only what the
count endpoints refuse (generation-only fields such as ``max_tokens``, ``stream``,
``temperature``) is left out.  Plans are paths: the host joins them to the endpoint and adds the
credential, as for any request.

- ``anthropic``: ``POST /v1/messages/count_tokens`` -> ``{"input_tokens": n}``
  (https://platform.claude.com/docs/en/build-with-claude/token-counting); on Vertex AI the host sends
  it to ``.../publishers/anthropic/models/count-tokens:rawPredict``, the model in the body.
- ``openai-responses``: ``POST /responses/input_tokens`` -> ``{"object": "response.input_tokens",
  "input_tokens": n}``.
- ``gemini``: ``POST /v1beta/models/{model}:countTokens`` with ``{"generateContentRequest": {"model":
  "models/{model}", ...}}`` -> ``{"totalTokens": n}`` (https://ai.google.dev/api/tokens); Vertex AI's
  form (the vertex row's ``count_tokens="vertex"``) takes ``contents``, ``systemInstruction`` and ``tools`` at the top.
- ``bedrock``: ``POST /model/{modelId}/count-tokens`` with ``{"input": {"converse": {...}}}`` ->
  ``{"inputTokens": n}`` (CountTokens, bedrock-runtime 2023-09-30).
"""

import dataclasses
from typing import Any, Dict, Iterable, Mapping, Optional

from ..errors import StreamProtocolError
from ..types import HttpRequest

__all__ = ["count_plan", "keep", "replace_tail", "parse_count"]


def keep(body: Optional[Mapping[str, Any]], keys: Iterable[str]) -> Dict[str, Any]:
    """The members of ``body`` named in ``keys`` (a count endpoint's own), in that order."""
    return {key: body[key] for key in keys if body and key in body}


def replace_tail(path: str, tail: str, new: str, client: str) -> str:
    """``path`` (its query left out) with its ending ``tail`` replaced by ``new``."""
    bare = path.partition("?")[0]
    if not bare.endswith(tail):  # pragma: no cover - the plans are ours
        raise StreamProtocolError("{}: cannot derive the count path from {}".format(client, bare), client=client)
    return bare[: len(bare) - len(tail)] + new


def count_plan(plan: HttpRequest, path: str, body: Dict[str, Any]) -> HttpRequest:
    """The streaming plan turned into its count request: ``path``, ``body``, a JSON answer."""
    headers = {key: value for key, value in plan.headers.items() if key.lower() != "accept"}
    headers["Accept"] = "application/json"
    return dataclasses.replace(plan, url=path, headers=headers, body=body, stream=False, output_limit=())


def parse_count(client: str, payload: Any, field: str) -> int:
    """The count under ``field`` in a count endpoint's answer; a StreamProtocolError when it has none."""
    if not isinstance(payload, Mapping):
        raise StreamProtocolError("{}: the token count answer is not a JSON object (got {})".format(
            client, type(payload).__name__), client=client)
    value = payload.get(field)
    if value is None and field == "totalTokens" and payload.get("promptTokensDetails") is not None:
        value = 0  # protobuf JSON leaves a zero count out
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise StreamProtocolError("{}: the token count answer has no {} count (got the keys {})".format(
            client, field, sorted(payload)[:8]), client=client)
    return value
