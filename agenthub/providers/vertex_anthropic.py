"""Claude on Google Vertex AI (client_type ``"vertex-anthropic"``; ``client_type="vertex"`` picks it
for ``claude-*`` models): ``anthropic``'s request and parser at
``.../publishers/anthropic/models/{model}:streamRawPredict``, the version in the body
(``anthropic_version: "vertex-2023-10-16"``, no ``model`` field, no ``anthropic-version`` header),
and Vertex's credentials (see ``vertex``).

Prompt caching: ENABLE sends nothing (no top-level automatic ``cache_control``, a field of
Anthropic's own API that Vertex is not documented to take); ENHANCE raises.
"""

import dataclasses
from typing import Any, List, Mapping

from ..types import HttpRequest
from . import anthropic, vertex
from ._common import Endpoint, Protocol

__all__ = ["build_request"]


def build_request(endpoint: Endpoint, model: str, messages: List[Mapping[str, Any]],
                  config: Mapping[str, Any]) -> HttpRequest:
    quirks = dict(endpoint.quirks)
    quirks.setdefault("automatic_caching", False)
    inner = Endpoint(endpoint.client_type, endpoint.base_url, None, endpoint.headers, quirks)
    plan = anthropic.build_request(inner, model, messages, config)
    body = {"anthropic_version": vertex.ANTHROPIC_VERSION}
    body.update((key, value) for key, value in (plan.body or {}).items() if key != "model")
    headers = {key: value for key, value in plan.headers.items() if key.lower() != "anthropic-version"}
    return dataclasses.replace(plan, url=vertex.model_url(endpoint.base_url, model), headers=headers, body=body)


def _configure(model: str, base_url: Any, api_key: Any, environ: Mapping[str, str]) -> Any:
    return vertex.configure(model, base_url, api_key, environ, "vertex-anthropic")


PROTOCOL = Protocol(
    "vertex-anthropic", __name__, build_request, anthropic.parse_stream,
    framing=anthropic.PROTOCOL.framing, parse_document=anthropic.PROTOCOL.parse_document,
    base_url="", key_env=(), base_url_env=vertex.BASE_URL_ENV,
    encode=vertex.encode, configure=_configure,
)
