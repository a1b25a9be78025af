"""The azure host: Azure OpenAI (client_types ``"azure"``, Chat Completions, and ``"azure-responses"``,
Responses) and Claude on Microsoft Foundry (``"azure-anthropic"``, Anthropic Messages), each on the
caller's own resource.

The bodies and the streams are the dialects' (``openai_chat``, ``openai_responses``, ``anthropic``;
Azure's content-filter chunks, ``prompt_filter_results`` with empty ``choices`` and
``content_filter_results`` / ``content_filter_offsets`` annotations without a delta, are skipped like
any heartbeat; ``finish_reason: "content_filter"`` is ``unknown``).  What differs is where the request
goes and how it authenticates, and that is all this module does.

Azure OpenAI: ``model`` is the deployment name.  The endpoint is ``base_url`` or ``AZURE_OPENAI_ENDPOINT``;
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

Claude on Microsoft Foundry (``"azure-anthropic"``, as the anthropic SDK's ``AnthropicFoundry``):
Anthropic Messages at ``https://{resource}.services.ai.azure.com/anthropic/v1/messages``.  The
resource comes from ``base_url`` (a resource name, or the whole base URL), else
``ANTHROPIC_FOUNDRY_BASE_URL``, else ``ANTHROPIC_FOUNDRY_RESOURCE`` (both set is a ConfigError, as the
SDK refuses them together).  A key (``api_key``, or ``ANTHROPIC_FOUNDRY_API_KEY`` for the endpoint
those variables name; ``ANTHROPIC_API_KEY`` never) goes as ``x-api-key`` and, as the SDK sends it for
backwards compatibility, ``api-key``; a callable ``api_key`` (Microsoft Entra ID, scope
``https://cognitiveservices.azure.com/.default``) is called before every attempt and its token sent as
``Authorization: Bearer``.  Foundry has no model list (the SDK removes ``models``).
"""

import re
from typing import Any, Dict, Mapping, Optional, Tuple
from urllib.parse import quote, unquote, urlsplit

from .._redact import shown_url
from ..errors import ConfigError, UnsupportedOperationError
from . import Host, has_header
from .credentials import bearer_token, is_token_provider
from .trust import check_base_url, is_loopback, url_host

__all__ = ["request_url", "v1_base", "foundry_base_url", "configure", "HOST", "DEFAULT_API_VERSION", "ENDPOINT_ENV",
           "KEY_ENV", "VERSION_ENV", "ENTRA_SCOPE", "FOUNDRY_KEY_ENV", "FOUNDRY_RESOURCE_ENV", "FOUNDRY_BASE_URL_ENV"]

#: the latest GA api-version of the dated API (the deployments path)
DEFAULT_API_VERSION = "2024-10-21"
ENDPOINT_ENV = "AZURE_OPENAI_ENDPOINT"
KEY_ENV = "AZURE_OPENAI_API_KEY"
VERSION_ENV = "OPENAI_API_VERSION"
#: the scope a Microsoft Entra ID token for Azure OpenAI (and Foundry) is asked for
ENTRA_SCOPE = "https://cognitiveservices.azure.com/.default"
FOUNDRY_KEY_ENV = "ANTHROPIC_FOUNDRY_API_KEY"
FOUNDRY_RESOURCE_ENV = "ANTHROPIC_FOUNDRY_RESOURCE"
FOUNDRY_BASE_URL_ENV = "ANTHROPIC_FOUNDRY_BASE_URL"

_V1 = re.compile(r"/openai/v1$", re.I)
_DEPLOYMENT = re.compile(r"/openai/deployments/([^/]+)$", re.I)
_VERSION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.\-]*$")
_UNSAFE_NAME = re.compile(r"[\x00-\x20\x7f/\\?#%]")
#: an Azure resource name (the subdomain of services.ai.azure.com)
_RESOURCE = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}[A-Za-z0-9])?$")


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


def foundry_base_url(resource: str) -> str:
    """``https://{resource}.services.ai.azure.com/anthropic`` (the Messages path is appended to it)."""
    return "https://{}.services.ai.azure.com/anthropic".format(resource)


def _url(endpoint: Any, path: str) -> str:
    """The URL rule: the dialect's path at the resource."""
    base = endpoint.base_url
    if path == "/chat/completions":
        return request_url(base, endpoint.model or "", "chat",
                           endpoint.quirks.get("api_version") or DEFAULT_API_VERSION)
    if path == "/responses":
        return request_url(base, endpoint.model or "", "responses", "")
    if path.startswith("/responses/"):  # a background response: resumed (GET ?stream=true) or cancelled (POST
        return v1_base(base) + path      # .../cancel): https://ai.azure.com/api-reference/llm/responses/cancel-response.md
    if path.startswith("/models"):
        return v1_base(base) + path  # GA: the models the resource can deploy
    if path == "/v1/messages":  # Claude on Foundry: the base URL ends in /anthropic
        return base.rstrip("/") + path
    raise UnsupportedOperationError("{}: {} is not served by Azure".format(endpoint.client_type, path.split("?")[0]),
                                    client=endpoint.client_type, operation=path.split("?")[0])


def _authorise(method: str, url: str, headers: Dict[str, str], data: Optional[bytes], endpoint: Any) -> Dict[str, str]:
    """The credential of this attempt: ``api-key: <key>`` (Foundry: ``x-api-key`` and ``api-key``), or
    ``Authorization: Bearer <token>`` from a token provider (called now).  A credential header the
    caller set in ``default_headers`` is left as it is."""
    key = endpoint.api_key  # type: Any  # a key, a token, or a token callable
    if any(has_header(headers, name) for name in ("authorization", "api-key", "x-api-key")):
        return headers
    if is_token_provider(key):
        headers["Authorization"] = "Bearer " + bearer_token(key, endpoint.client_type)
    elif key:
        if endpoint.quirks.get("foundry"):
            headers["x-api-key"] = key
        headers["api-key"] = key
    return headers


def _check_endpoint(url: Any, what: str, example: str = "https://<resource>.openai.azure.com") -> str:
    if not isinstance(url, str) or not re.match(r"^https?://[^/\s]", url):
        raise ConfigError("{} must be an http(s) URL like {} (got {!r})".format(
            what, example, shown_url(url) if isinstance(url, str) else type(url).__name__))
    check_base_url(url, what)  # the host every parser reads alike (hosts.trust)
    named = _DEPLOYMENT.search(urlsplit(url).path.rstrip("/"))
    if named is not None and unquote(named.group(1)) in (".", ".."):
        raise ConfigError("azure: the deployment {!r} in {} is a dot segment: the request would reach another "
                          "resource; it was not sent".format(named.group(1), what))
    if "?" in url or "#" in url:  # a bare "?" too: the request's path would be appended after it
        raise ConfigError("{} takes no query string or fragment: the api-version comes from {} (got {!r})".format(
            what, VERSION_ENV, urlsplit(url).hostname))
    return url.rstrip("/")


def configure(row: Any, model: str, base_url: Optional[str], api_key: Any,
              environ: Mapping[str, str]) -> Tuple[str, str, Any, Dict[str, Any]]:
    """The Azure endpoint, credential and quirks for ``model`` (a deployment name, or Foundry's model id)."""
    client_type = row.name
    if _UNSAFE_NAME.search(model):
        raise ConfigError("{}: the deployment name {!r} cannot go in a URL path (no spaces, slashes, ? # %)".format(
            client_type, model))
    if row.dialect == "anthropic":
        return _foundry(client_type, base_url, api_key, environ)
    if base_url is not None:
        endpoint = _check_endpoint(base_url, "base_url")
        if api_key is None and not is_loopback(endpoint):
            raise ConfigError(
                "{}: api_key is required with base_url {!r}: {} is only sent to the endpoint {} names (a key, "
                "or a callable returning a Microsoft Entra ID token)".format(
                    client_type, url_host(endpoint), KEY_ENV, ENDPOINT_ENV))
    else:
        if not environ.get(ENDPOINT_ENV):
            raise ConfigError("{}: no endpoint: pass base_url='https://<resource>.openai.azure.com' or set {}".format(
                client_type, ENDPOINT_ENV))
        endpoint = _check_endpoint(environ[ENDPOINT_ENV], ENDPOINT_ENV)
        if api_key is None and environ.get(KEY_ENV):
            api_key = environ[KEY_ENV]
        if api_key is None and not is_loopback(endpoint):
            raise ConfigError("{}: no credential for {}: pass api_key= or set {} (api_key may also be a callable "
                              "returning a Microsoft Entra ID token)".format(client_type, url_host(endpoint),
                                                                             KEY_ENV))
    version = environ.get(VERSION_ENV) or DEFAULT_API_VERSION
    if not _VERSION.fullmatch(version):
        raise ConfigError("{} must look like 2024-10-21 (got {!r})".format(VERSION_ENV, version))
    # Azure OpenAI runs OpenAI's models with OpenAI's strict mode (its "Structured outputs" page lists the same
    # subset): a strict schema outside it is refused before sending, as on api.openai.com
    # (and refuses a tool call left unanswered before the next turn, and an image of another type, as OpenAI does)
    quirks = {"api_version": version, "strict_subset": True, "answers_required": True,
              "image_subset": True}  # type: Dict[str, Any]
    if row.dialect == "openai-chat" and not _V1.search(urlsplit(endpoint).path.rstrip("/")) \
            and _before_max_completion(version):
        quirks["max_tokens_field"] = "max_tokens"
    return client_type, endpoint, api_key, quirks


def _foundry(client_type: str, base_url: Optional[str], api_key: Any,
             environ: Mapping[str, str]) -> Tuple[str, str, Any, Dict[str, Any]]:
    """Claude on Microsoft Foundry: the resource's ``/anthropic`` root and its credential (see the module doc)."""
    example = foundry_base_url("<resource>")
    if base_url is not None:
        if isinstance(base_url, str) and "://" not in base_url and _RESOURCE.fullmatch(base_url):
            endpoint = foundry_base_url(base_url)  # a resource name
        else:
            endpoint = _check_endpoint(base_url, "base_url", example)
        if api_key is None and not is_loopback(endpoint):
            raise ConfigError(
                "{}: api_key is required with base_url {!r}: {} is only sent to the endpoint {} or {} names (a "
                "key, or a callable returning a Microsoft Entra ID token)".format(
                    client_type, url_host(endpoint), FOUNDRY_KEY_ENV, FOUNDRY_RESOURCE_ENV,
                    FOUNDRY_BASE_URL_ENV))
    else:
        named_url, resource = environ.get(FOUNDRY_BASE_URL_ENV), environ.get(FOUNDRY_RESOURCE_ENV)
        if named_url and resource:
            raise ConfigError("{}: {} and {} are both set: set one (they name the same endpoint)".format(
                client_type, FOUNDRY_BASE_URL_ENV, FOUNDRY_RESOURCE_ENV))
        if named_url:
            endpoint = _check_endpoint(named_url, FOUNDRY_BASE_URL_ENV, example)
        elif resource:
            if not _RESOURCE.fullmatch(resource):
                raise ConfigError("{}: {} must be an Azure resource name (letters, digits, hyphens; got {!r})".format(
                    client_type, FOUNDRY_RESOURCE_ENV, resource[:80]))
            endpoint = foundry_base_url(resource)
        else:
            raise ConfigError("{}: no endpoint: pass base_url='<resource>' (or '{}'), or set {} or {}".format(
                client_type, example, FOUNDRY_RESOURCE_ENV, FOUNDRY_BASE_URL_ENV))
        if api_key is None and environ.get(FOUNDRY_KEY_ENV):
            api_key = environ[FOUNDRY_KEY_ENV]
        if api_key is None and not is_loopback(endpoint):
            raise ConfigError("{}: no credential for {}: pass api_key= or set {} (api_key may also be a callable "
                              "returning a Microsoft Entra ID token)".format(
                                  client_type, url_host(endpoint), FOUNDRY_KEY_ENV))
    return client_type, endpoint, api_key, {"foundry": True}


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


#: the azure host (Azure OpenAI and Microsoft Foundry)
HOST = Host("azure", _authorise, "", (KEY_ENV,), ENDPOINT_ENV, url=_url, configure=configure,
            takes_token_callable=True, quirk_keys=("api_version", "foundry"))
