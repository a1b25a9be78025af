"""Token counting before sending: each provider's count endpoint, planned from the very request
``streaming_response`` would send (pure: no I/O).  Plans are paths: the host joins them to the
endpoint and adds the credential (``agenthub.hosts``), so a count request is the plan's path changed.

``count_request(client_type, plan, model)`` takes the streaming plan (after ``extra_body`` /
``extra_headers``) and returns the count request, or None for a protocol without a count endpoint.
The messages, system prompt, tools and attachments are the plan's own; only what the count
endpoints refuse (generation-only fields such as ``max_tokens``, ``stream``, ``temperature``) is left
out, and Gemini gets them inside ``generateContentRequest``.

- Anthropic: ``POST /v1/messages/count_tokens`` -> ``{"input_tokens": n}``
  (https://platform.claude.com/docs/en/build-with-claude/token-counting); the body keys the SDK's
  ``messages.count_tokens`` sends.
- Claude on Vertex AI: ``POST .../publishers/anthropic/models/count-tokens:rawPredict``, the model in
  the body (the Anthropic Vertex SDK's own rewrite of the path; the plan says ``/v1/messages/count_tokens``
  and the vertex host's URL rule makes it that).
- OpenAI Responses: ``POST /responses/input_tokens`` -> ``{"object": "response.input_tokens",
  "input_tokens": n}`` (the SDK's ``responses.input_tokens.count``).
- Gemini API: ``POST /v1beta/models/{model}:countTokens`` with ``{"generateContentRequest": {"model":
  "models/{model}", contents, systemInstruction, tools, ...}}`` -> ``{"totalTokens": n}``
  (https://ai.google.dev/api/tokens).
- Gemini on Vertex AI: ``POST .../publishers/google/models/{model}:countTokens`` with ``contents``,
  ``systemInstruction`` and ``tools`` at the top level -> ``{"totalTokens": n}``.
- Amazon Bedrock: ``POST /model/{modelId}/count-tokens`` with ``{"input": {"converse": {messages,
  system, toolConfig, additionalModelRequestFields}}}`` -> ``{"inputTokens": n}`` (CountTokens,
  bedrock-runtime 2023-09-30).
"""

import dataclasses
from typing import Any, Callable, Dict, Mapping, Optional

from ..errors import StreamProtocolError
from ..types import HttpRequest

__all__ = ["count_request", "parse_count", "COUNTED"]

#: Anthropic count_tokens body keys (anthropic SDK messages.count_tokens)
ANTHROPIC_KEYS = ("model", "messages", "system", "tools", "tool_choice", "thinking", "cache_control",
                  "output_config", "speed")
#: OpenAI Responses input_tokens body keys (openai SDK responses.input_tokens.count)
RESPONSES_KEYS = ("model", "input", "instructions", "tools", "tool_choice", "parallel_tool_calls", "reasoning",
                  "text", "truncation", "conversation", "previous_response_id", "personality")
#: Bedrock ConverseTokensRequest members
CONVERSE_KEYS = ("messages", "system", "toolConfig", "additionalModelRequestFields")
#: Vertex AI CountTokensRequest members taken from a generateContent body
VERTEX_GEMINI_KEYS = ("contents", "systemInstruction", "tools")


def _json_headers(plan: HttpRequest) -> Dict[str, str]:
    headers = {key: value for key, value in plan.headers.items() if key.lower() != "accept"}
    headers["Accept"] = "application/json"
    return headers


def _keep(body: Optional[Mapping[str, Any]], keys: Any) -> Dict[str, Any]:
    return {key: body[key] for key in keys if body and key in body}


def _replace_tail(url: str, tail: str, new: str, client: str) -> str:
    path, _, query = url.partition("?")
    if not path.endswith(tail):  # pragma: no cover - the plans are ours
        raise StreamProtocolError("{}: cannot derive the count URL from {}".format(client, path), client=client)
    return path[: len(path) - len(tail)] + new


def _anthropic(plan: HttpRequest, model: str) -> HttpRequest:
    return dataclasses.replace(plan, url=plan.url.rstrip("/") + "/count_tokens", headers=_json_headers(plan),
                               body=_keep(plan.body, ANTHROPIC_KEYS), stream=False)


def _vertex_anthropic(plan: HttpRequest, model: str) -> HttpRequest:
    body = {"anthropic_version": (plan.body or {}).get("anthropic_version"), "model": model}
    body.update(_keep(plan.body, [key for key in ANTHROPIC_KEYS if key != "model"]))
    return dataclasses.replace(plan, url=plan.url.rstrip("/") + "/count_tokens", headers=_json_headers(plan),
                               body=body, stream=False)  # the vertex host sends it to count-tokens:rawPredict


def _responses(plan: HttpRequest, model: str) -> HttpRequest:
    return dataclasses.replace(plan, url=plan.url.rstrip("/") + "/input_tokens", headers=_json_headers(plan),
                               body=_keep(plan.body, RESPONSES_KEYS), stream=False)


def _gemini(plan: HttpRequest, model: str) -> HttpRequest:
    inner = {"model": model if "/" in model else "models/" + model}
    inner.update(plan.body or {})
    return dataclasses.replace(plan, url=_replace_tail(plan.url, ":streamGenerateContent", ":countTokens", "gemini"),
                               headers=_json_headers(plan), body={"generateContentRequest": inner}, stream=False)


def _vertex(plan: HttpRequest, model: str) -> HttpRequest:
    if plan.url.startswith("/v1/messages"):  # client_type="vertex" with a Claude model
        return _vertex_anthropic(plan, model)
    return dataclasses.replace(plan, url=_replace_tail(plan.url, ":streamGenerateContent", ":countTokens", "vertex"),
                               headers=_json_headers(plan), body=_keep(plan.body, VERTEX_GEMINI_KEYS), stream=False)


def _bedrock(plan: HttpRequest, model: str) -> HttpRequest:
    return dataclasses.replace(plan, url=_replace_tail(plan.url, "/converse-stream", "/count-tokens", "bedrock"),
                               headers=_json_headers(plan),
                               body={"input": {"converse": _keep(plan.body, CONVERSE_KEYS)}}, stream=False)


#: client_type -> (count request planner, the answer's field holding the count)
COUNTED = {
    "anthropic": (_anthropic, "input_tokens"),
    "vertex-anthropic": (_vertex_anthropic, "input_tokens"),
    "openai-responses": (_responses, "input_tokens"),
    "gemini": (_gemini, "totalTokens"),
    "vertex": (_vertex, None),
    "bedrock": (_bedrock, "inputTokens"),
}  # type: Dict[str, Any]


def count_request(client_type: str, plan: HttpRequest, model: str) -> Optional[HttpRequest]:
    """The count request for the streaming ``plan`` (None: the protocol has no count endpoint)."""
    entry = COUNTED.get(client_type)
    if entry is None:
        return None
    planner = entry[0]  # type: Callable[[HttpRequest, str], HttpRequest]
    return planner(plan, model)


def parse_count(client_type: str, payload: Any, request: Optional[HttpRequest] = None) -> int:
    """The token count in a count endpoint's answer; a StreamProtocolError when it has none."""
    field = COUNTED[client_type][1]
    if field is None:  # Vertex: Claude answers as Anthropic does, Gemini as Gemini
        field = "input_tokens" if request is not None and "count_tokens" in request.url else "totalTokens"
    value = payload.get(field) if isinstance(payload, Mapping) else None
    if payload is not None and isinstance(payload, Mapping) and value is None and field == "totalTokens" \
            and "totalTokens" not in payload and payload.get("promptTokensDetails") is not None:
        value = 0  # protobuf JSON leaves a zero count out
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise StreamProtocolError("{}: the token count answer has no {} count (got {})".format(
            client_type, field, type(payload).__name__ if not isinstance(payload, Mapping) else sorted(payload)[:8]),
            client=client_type)
    return value
