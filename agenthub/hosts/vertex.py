"""The vertex host: Google Vertex AI, Gemini models (client_type ``"vertex"``) through generateContent,
and Claude models through Anthropic Messages (``"vertex-anthropic"``, which ``client_type="vertex"``
picks for ``claude-*`` names).

The bodies and the streams are those of the ``gemini`` and ``anthropic`` dialects (Claude's with the
row's quirks: the version in the body, no model in it); what differs is the URL and the credential.  Every request goes under one resource prefix::

    {root}/v1/projects/{project}/locations/{location}
        /publishers/google/models/{model}:streamGenerateContent?alt=sse      (Gemini)
        /publishers/anthropic/models/{model}:streamRawPredict                (Claude: the body
            carries ``anthropic_version: "2026-10-21"``, or ``"vertex-2023-10-16"`` when 2023-06-01 is
            pinned, and no ``model``)

``root`` is ``VERTEX_BASE_URL`` or ``base_url`` when given (a host root, as google-genai's
``base_url``), else the location's own host: ``https://{location}-aiplatform.googleapis.com``,
``https://aiplatform.googleapis.com`` for ``global``, ``https://aiplatform.{us,eu}.rep.googleapis.com``
for the multi-regions.  ``project`` and ``location`` come from a ``base_url`` (or ``VERTEX_BASE_URL``)
that names them (``https://aiplatform.googleapis.com/v1/projects/my-project/locations/global``), else
``GOOGLE_CLOUD_PROJECT`` / ``GOOGLE_CLOUD_LOCATION`` (default ``global``, as google-genai), else the
project of the application default credentials.

Credentials: ``api_key`` may be an OAuth access token or a callable returning one (called before
every attempt); either is sent as ``Authorization: Bearer``.  Without it, Google application
default credentials are used through google-auth (``agenthub.gcp``, the extra ``vertex``: ``pip install '.[vertex]'``),
but only toward Google's hosts (``*.googleapis.com``), the endpoint ``VERTEX_BASE_URL`` names, or a
loopback address.
"""

import re
from typing import Any, Dict, Mapping, Optional, Tuple
from urllib.parse import quote

from ..errors import ConfigError
from . import VERTEX_ANTHROPIC_VERSION, Host, has_header
from .credentials import bearer_token, is_token_provider
from .trust import check_base_url, host_is, is_loopback, url_host

__all__ = ["configure", "HOST", "host_root", "split_base_url", "resource_prefix", "publisher",
           "model_url", "ANTHROPIC_VERSION", "DEFAULT_LOCATION", "PROJECT_ENV", "LOCATION_ENV", "BASE_URL_ENV"]

ANTHROPIC_VERSION = VERTEX_ANTHROPIC_VERSION  # written once, in the vertex-anthropic row's module
DEFAULT_LOCATION = "global"
PROJECT_ENV = "GOOGLE_CLOUD_PROJECT"
LOCATION_ENV = "GOOGLE_CLOUD_LOCATION"
BASE_URL_ENV = "VERTEX_BASE_URL"
MULTI_REGIONS = ("us", "eu")

_PREFIX = re.compile(r"^(?P<root>.*?)/v1(?:beta1)?/projects/(?P<project>[^/]+)/locations/(?P<location>[^/]+)$")
# project ids (6-30 of a-z 0-9 -, or the older domain-scoped "example.com:name"); locations (us-east5, global)
_PROJECT = re.compile(r"^(?:[a-z0-9.\-]+:)?[a-z0-9][a-z0-9\-]{1,61}[a-z0-9]$")
_LOCATION = re.compile(r"^[a-z][a-z0-9\-]{0,40}$")
_MODEL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._\-@]*$")
_VERSION_TAIL = re.compile(r"/v1(?:beta1)?$")


def host_root(location: str) -> str:
    """The Vertex AI host for ``location``."""
    if location == "global":
        return "https://aiplatform.googleapis.com"
    if location in MULTI_REGIONS:
        return "https://aiplatform.{}.rep.googleapis.com".format(location)
    return "https://{}-aiplatform.googleapis.com".format(location)


def split_base_url(url: str) -> Tuple[str, Optional[str], Optional[str]]:
    """``{root}[/v1/projects/{p}/locations/{l}]`` -> (root, project or None, location or None)."""
    base = url.rstrip("/")
    match = _PREFIX.match(base)
    if match is None:
        return _VERSION_TAIL.sub("", base), None, None  # a root given with its API version: the version is ours
    return match.group("root"), match.group("project"), match.group("location")


def resource_prefix(root: str, project: str, location: str) -> str:
    return "{}/v1/projects/{}/locations/{}".format(root.rstrip("/"), project, location)


def publisher(model: str) -> str:
    """``anthropic`` for Claude models, ``google`` for the rest."""
    return "anthropic" if model.lower().startswith("claude") else "google"


def model_url(prefix: str, model: str) -> str:
    """The streaming method's URL of ``model`` under a resource prefix."""
    if publisher(model) == "anthropic":
        return "{}/publishers/anthropic/models/{}:streamRawPredict".format(prefix, quote(model, safe="@"))
    return "{}/publishers/google/models/{}:streamGenerateContent?alt=sse".format(prefix, quote(model, safe="@"))


def _url(endpoint: Any, path: str) -> str:
    """The URL rule: the dialect's method for the model under the endpoint's resource prefix.  Anthropic
    Messages (``/v1/messages``) is ``.../publishers/anthropic/models/{model}:streamRawPredict`` and its
    token count ``.../publishers/anthropic/models/count-tokens:rawPredict`` (the model in the body, as the
    Anthropic Vertex SDK rewrites it); a Gemini path's method (``:streamGenerateContent?alt=sse``,
    ``:countTokens``) goes to ``.../publishers/google/models/{model}:{method}``."""
    prefix, model = endpoint.base_url.rstrip("/"), quote(endpoint.model or "", safe="@")
    if path.startswith("/v1/messages"):
        if path.startswith("/v1/messages/count_tokens"):
            return prefix + "/publishers/anthropic/models/count-tokens:rawPredict"
        return "{}/publishers/anthropic/models/{}:streamRawPredict".format(prefix, model)
    method = path.rsplit(":", 1)[1] if ":" in path else "streamGenerateContent?alt=sse"
    return "{}/publishers/google/models/{}:{}".format(prefix, model, method)


def _authorise(method: str, url: str, headers: Dict[str, str], data: Optional[bytes], endpoint: Any) -> Dict[str, str]:
    """``Authorization: Bearer`` with this attempt's access token (a token callable, google-auth's
    included, is called now; it renews the token before it expires), and ``x-goog-user-project``
    when google-auth's credentials name a quota project.  An Authorization header the caller set in
    ``default_headers`` is left as it is."""
    key = endpoint.api_key  # type: Any  # a key, a token, or a token callable
    if has_header(headers, "authorization") or not key:
        return headers
    token = bearer_token(key, endpoint.client_type) if is_token_provider(key) else key
    headers["Authorization"] = "Bearer " + token
    quota = getattr(key, "quota_project", None)  # google-auth credentials that name a quota project
    if isinstance(quota, str) and quota and not has_header(headers, "x-goog-user-project"):
        headers["x-goog-user-project"] = quota
    return headers


def _google_host(url: str) -> bool:
    return host_is(url, ("googleapis.com",), (".googleapis.com",))


def configure(row: Any, model: str, base_url: Optional[str], api_key: Any,
              environ: Mapping[str, str]) -> Tuple[str, str, Any, Dict[str, Any]]:
    """-> (``vertex`` or ``vertex-anthropic``, the resource prefix, the credential, quirks)."""
    client_type = row.name
    if not _MODEL.fullmatch(model):
        raise ConfigError("{}: model {!r} is not a Vertex AI model id (like gemini-3.5-flash or "
                          "claude-sonnet-4-6@20260101)".format(client_type, model))
    named = base_url if base_url is not None else environ.get(BASE_URL_ENV) or None
    if named is not None:
        check_base_url(named, "base_url" if base_url is not None else BASE_URL_ENV)
        if "?" in named or "#" in named:  # a bare "?" too: the resource prefix would be appended after it
            raise ConfigError("{}: the base URL takes no query string or fragment (the request's path is appended "
                              "to it)".format(client_type))
    root, project, location = split_base_url(named) if named else (None, None, None)
    project = project or environ.get(PROJECT_ENV) or None
    location = location or environ.get(LOCATION_ENV) or DEFAULT_LOCATION
    if not _LOCATION.fullmatch(location):
        raise ConfigError("{}: location {!r} is not a Google Cloud location (like us-east5 or global)".format(
            client_type, location))
    if isinstance(api_key, str) and api_key.lower().startswith("bearer "):
        api_key = api_key[7:].strip()  # the header value given for the token
    if isinstance(api_key, str) and api_key.strip().lower().endswith(".json"):
        raise ConfigError("{}: api_key looks like the path of a credentials file; it was not sent: set "
                          "GOOGLE_APPLICATION_CREDENTIALS to it, or pass api_key=agenthub.gcp.service_account_file("
                          "path)".format(client_type))
    if api_key is None:
        if base_url is not None and not _google_host(base_url) and not is_loopback(base_url):
            raise ConfigError(
                "{}: api_key is required with base_url {!r}: Google credentials from the environment are only sent "
                "to *.googleapis.com, to the endpoint {} names, or to a loopback address (pass an access token or "
                "a callable returning one)".format(client_type, url_host(base_url), BASE_URL_ENV))
        from . import gcp  # google-auth, imported only now

        api_key, found = gcp.application_default()
        project = project or found
    if not project:
        raise ConfigError(
            "{}: no Google Cloud project: set {} or pass base_url='{}' (or use credentials that name one)".format(
                client_type, PROJECT_ENV, resource_prefix(host_root(location), "<project>", location)))
    if not _PROJECT.fullmatch(project):
        raise ConfigError("{}: {!r} is not a Google Cloud project id".format(client_type, project))
    kind = "vertex-anthropic" if publisher(model) == "anthropic" else "vertex"
    return kind, resource_prefix(root or host_root(location), project, location), api_key, {}


#: the vertex host (no model list: Vertex AI's publisher models are not listed per resource here)
HOST = Host("vertex", _authorise, "", (), BASE_URL_ENV, url=_url, configure=configure, takes_token_callable=True)
