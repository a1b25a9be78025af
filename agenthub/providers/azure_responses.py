"""Azure OpenAI Responses (client_type ``"azure-responses"``): ``openai_responses``'s request and
parser at ``/openai/v1/responses`` of the resource, with Azure's credentials (see ``azure``)."""

import dataclasses
from typing import Any, List, Mapping

from ..types import HttpRequest
from . import azure, openai_responses
from ._common import Endpoint, Protocol

__all__ = ["build_request"]


def build_request(endpoint: Endpoint, model: str, messages: List[Mapping[str, Any]],
                  config: Mapping[str, Any]) -> HttpRequest:
    inner = Endpoint(endpoint.client_type, endpoint.base_url, None, endpoint.headers, endpoint.quirks)
    plan = openai_responses.build_request(inner, model, messages, config)
    return dataclasses.replace(plan, url=azure.request_url(endpoint.base_url, model, "responses", ""))


def _configure(model: str, base_url: Any, api_key: Any, environ: Mapping[str, str]) -> Any:
    return azure.configure(model, base_url, api_key, environ, "azure-responses")


PROTOCOL = Protocol(
    "azure-responses", __name__, build_request, openai_responses.parse_stream,
    framing=openai_responses.PROTOCOL.framing, parse_document=openai_responses.PROTOCOL.parse_document,
    base_url="", key_env=(azure.KEY_ENV,), base_url_env=azure.ENDPOINT_ENV,
    encode=azure.encode, configure=_configure,
    models_request=azure.models_request, parse_models=openai_responses.PROTOCOL.parse_models,
)
