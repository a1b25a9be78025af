"""Azure OpenAI: Chat Completions (client_type ``"azure"``, this module) and Responses
(``"azure-responses"``, ``azure_responses``) on a resource's own endpoint.

The bodies and the streams are OpenAI's: the requests are planned by ``openai_chat`` /
``openai_responses`` and their streams parsed by the same parsers (Azure's content-filter
chunks, ``prompt_filter_results`` with empty ``choices`` and ``content_filter_results`` /
``content_filter_offsets`` annotations without a delta, are skipped like any heartbeat;
``finish_reason: "content_filter"`` is ``unknown``).  What differs is where the request goes
and how it authenticates, and that is all this module does.

``model`` is the deployment name.  The endpoint is ``base_url`` or ``AZURE_OPENAI_ENDPOINT``;
its path picks the kind of URL (Microsoft's "API version lifecycle" page: the v1 API at
``/openai/v1/`` is GA for chat completions and responses and takes no ``api-version``; the
dated API puts the deployment in the path and needs ``api-version``, whose latest GA value
is ``2024-10-21``; the dated API has Responses only in previews):

- the resource itself (``https://<resource>.openai.azure.com``, any other host, or a path
  that is neither of the two below): Chat Completions at
  ``/openai/deployments/{deployment}/chat/completions?api-version=...`` (``OPENAI_API_VERSION``,
  default ``DEFAULT_API_VERSION``, as the openai SDK's AzureOpenAI reads it; ``max_tokens`` is
  sent as ``max_tokens`` to the GA versions, which have no ``max_completion_tokens``, and to the
  previews before 2024-09-01-preview); Responses at ``/openai/v1/responses``;
- ``.../openai/v1``: both at the v1 path (``/chat/completions``, ``/responses``), the
  deployment in the body's ``model``, no api-version;
- ``.../openai/deployments/{name}``: Chat Completions for that deployment, with api-version.

Credentials: a key (``api_key`` or ``AZURE_OPENAI_API_KEY``, the latter only for the endpoint
``AZURE_OPENAI_ENDPOINT`` names) goes in the ``api-key`` header and nowhere else.  A callable
``api_key`` is a Microsoft Entra ID token provider (``azure.identity.get_bearer_token_provider(
credential, "https://cognitiveservices.azure.com/.default")`` or any function returning a
token): it is called before every attempt and its token sent as ``Authorization: Bearer``.
"""

import dataclasses
import re
from typing import Any, Dict, List, Mapping, Optional, Tuple
from urllib.parse import quote, urlsplit

from ..errors import ConfigError
from ..types import HttpRequest
from . import openai_chat
from ._common import Endpoint, Protocol, encode_json
from ._tokens import bearer_token, is_loopback, is_token_provider

__all__ = ["build_request", "request_url", "v1_base", "models_request", "configure", "encode", "DEFAULT_API_VERSION", "ENDPOINT_ENV",
           "KEY_ENV", "VERSION_ENV", "ENTRA_SCOPE"]

#: the latest GA api-version of the dated API (the deployments path)
DEFAULT_API_VERSION = "2024-10-21"
ENDPOINT_ENV = "AZURE_OPENAI_ENDPOINT"
KEY_ENV = "AZURE_OPENAI_API_KEY"
VERSION_ENV = "OPENAI_API_VERSION"
#: the scope a Microsoft Entra ID token for Azure OpenAI is asked for
ENTRA_SCOPE = "https://cognitiveservices.azure.com/.default"

_V1 = re.compile(r"/openai/v1$", re.I)
_DEPLOYMENT = re.compile(r"/openai/deployments/([^/]+)$", re.I)
_VERSION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.\-]*$")
_UNSAFE_NAME = re.compile(r"[\x00-\x20\x7f/\\?#%]")


def request_url(base_url: str, deployment: str, api: str, api_version: str) -> str:
    """The URL for ``api`` (``"chat"`` or ``"responses"``) of ``deployment`` at ``base_url`` (see the module doc)."""
    base = base_url.rstrip("/")
    path = urlsplit(base).path.rstrip("/")
    leaf = "/chat/completions" if api == "chat" else "/responses"
    if _V1.search(path):
        return base + leaf
    match = _DEPLOYMENT.search(path)
    if match is not None:
        root, name = base[:len(base) - len(match.group(0))], match.group(1)
    else:
        root = base[:-len("/openai")] if path.lower().endswith("/openai") else base
        name = quote(deployment, safe="")
    if api != "chat":
        return root + "/openai/v1" + leaf
    return "{}/openai/deployments/{}{}?api-version={}".format(root, name, leaf, quote(api_version, safe=""))


def v1_base(base_url: str) -> str:
    """The resource's v1 API root (``.../openai/v1``) for any of the endpoint forms."""
    return request_url(base_url, "", "responses", "")[:-len("/responses")]


def models_request(endpoint: Endpoint, page_token: Optional[str] = None) -> HttpRequest:
    """``GET .../openai/v1/models`` (GA): the models the resource can deploy (``encode`` adds the credential)."""
    inner = Endpoint(endpoint.client_type, v1_base(endpoint.base_url), None, endpoint.headers, endpoint.quirks)
    return openai_chat.PROTOCOL.models_request(inner, page_token)


def _inner(endpoint: Endpoint) -> Endpoint:
    """The endpoint the OpenAI builders see: no key (``encode`` adds the credential per attempt)."""
    return Endpoint(endpoint.client_type, endpoint.base_url, None, endpoint.headers, endpoint.quirks)


def build_request(endpoint: Endpoint, model: str, messages: List[Mapping[str, Any]],
                  config: Mapping[str, Any]) -> HttpRequest:
    plan = openai_chat.build_request(_inner(endpoint), model, messages, config)
    url = request_url(endpoint.base_url, model, "chat", endpoint.quirks.get("api_version") or DEFAULT_API_VERSION)
    return dataclasses.replace(plan, url=url)


def _has(headers: Mapping[str, str], name: str) -> bool:
    return any(key.lower() == name for key in headers)


def encode(request: HttpRequest, endpoint: Endpoint) -> HttpRequest:
    """Compact JSON, then the credential of this attempt: ``api-key: <key>``, or ``Authorization:
    Bearer <token>`` from a token provider (called now).  A credential header the caller set in
    ``default_headers`` is left as it is."""
    request = encode_json(request, endpoint)
    key = endpoint.api_key  # type: Any  # a key, a token, or a token callable
    headers = dict(request.headers)
    if _has(headers, "authorization") or _has(headers, "api-key"):
        return request
    if is_token_provider(key):
        headers["Authorization"] = "Bearer " + bearer_token(key, endpoint.client_type)
    elif key:
        headers["api-key"] = key
    return dataclasses.replace(request, headers=headers)


def _check_endpoint(url: Any, what: str) -> str:
    if not isinstance(url, str) or not re.match(r"^https?://[^/\s]", url):
        raise ConfigError("{} must be an http(s) URL like https://<resource>.openai.azure.com (got {!r})".format(
            what, url if isinstance(url, str) else type(url).__name__))
    parts = urlsplit(url)
    if parts.query or parts.fragment:
        raise ConfigError("{} takes no query string: the api-version comes from {} (got {!r})".format(
            what, VERSION_ENV, parts.hostname))
    return url.rstrip("/")


def configure(model: str, base_url: Optional[str], api_key: Any, environ: Mapping[str, str],
              client_type: str = "azure") -> Tuple[str, str, Any, Dict[str, Any]]:
    """The Azure endpoint, credential and api-version for ``model`` (a deployment name)."""
    if _UNSAFE_NAME.search(model):
        raise ConfigError("{}: the deployment name {!r} cannot go in a URL path (no spaces, slashes, ? # %)".format(
            client_type, model))
    if base_url is not None:
        endpoint = _check_endpoint(base_url, "base_url")
        if api_key is None and not is_loopback(endpoint):
            raise ConfigError(
                "{}: api_key is required with base_url {!r}: {} is only sent to the endpoint {} names (a key, "
                "or a callable returning a Microsoft Entra ID token)".format(
                    client_type, urlsplit(endpoint).hostname, KEY_ENV, ENDPOINT_ENV))
    else:
        if not environ.get(ENDPOINT_ENV):
            raise ConfigError("{}: no endpoint: pass base_url='https://<resource>.openai.azure.com' or set {}".format(
                client_type, ENDPOINT_ENV))
        endpoint = _check_endpoint(environ[ENDPOINT_ENV], ENDPOINT_ENV)
        if api_key is None and environ.get(KEY_ENV):
            api_key = environ[KEY_ENV]
        if api_key is None and not is_loopback(endpoint):
            raise ConfigError("{}: no credential for {}: pass api_key= or set {} (api_key may also be a callable "
                              "returning a Microsoft Entra ID token)".format(client_type, urlsplit(endpoint).hostname,
                                                                             KEY_ENV))
    version = environ.get(VERSION_ENV) or DEFAULT_API_VERSION
    if not _VERSION.match(version):
        raise ConfigError("{} must look like 2024-10-21 (got {!r})".format(VERSION_ENV, version))
    quirks = {"api_version": version}  # type: Dict[str, Any]
    if client_type == "azure" and not _V1.search(urlsplit(endpoint).path.rstrip("/")) and _before_max_completion(version):
        quirks["max_tokens_field"] = "max_tokens"
    return client_type, endpoint, api_key, quirks


def _before_max_completion(version: str) -> bool:
    """True for a dated api-version whose Chat Completions has ``max_tokens`` but not
    ``max_completion_tokens``: every GA version up to 2024-10-21 (the spec of 2024-10-21 lists
    only ``max_tokens``) and the previews before 2024-09-01-preview, which added it."""
    date = version[:10]
    if not re.match(r"^\d{4}-\d{2}-\d{2}$", date):
        return False  # "preview", "latest": the newest surface
    if version.endswith("-preview"):
        return date < "2024-09-01"
    return date <= "2024-10-21"


PROTOCOL = Protocol(
    "azure", __name__, build_request, openai_chat.parse_stream,
    framing=openai_chat.PROTOCOL.framing, parse_document=openai_chat.PROTOCOL.parse_document,
    base_url="", key_env=(KEY_ENV,), base_url_env=ENDPOINT_ENV,
    encode=encode, quirk_keys=("api_version", "max_tokens_field"), configure=configure,
    models_request=models_request, parse_models=openai_chat.PROTOCOL.parse_models,
)
