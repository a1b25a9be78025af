"""Hosts: where a request goes and how it is authorised.  Client types are rows of (dialect, host, quirks).

A wire dialect (``agenthub.providers.<dialect>``) plans a request as a body, its headers and a
*path* (``/chat/completions``, ``/v1/messages``, ``/v1beta/models/{model}:streamGenerateContent``);
it holds no key, no base URL and no credential logic.  A ``Host`` owns the rest: the default base
URL and the variable that moves it, the variables its key is read from, the header form the key
travels in (``Authorization: Bearer``, ``x-api-key``, ``x-goog-api-key``, ``api-key``), a
``configure`` for endpoints that are the caller's own cloud resource (Azure, Vertex AI, Bedrock),
and ``encode``, called by the client before every attempt::

    plan = dialect.build_request(endpoint, model, messages, config)  # pure: a path, a body, no key
    request = host.encode(plan, endpoint)   # per attempt: the URL joined, the bytes, the credential

A client type is one ``ClientType`` row of ``CLIENT_TYPES``: its dialect, its host and the dialect
quirks the route needs (Claude on Vertex AI is the anthropic dialect with the version in the body and
no model; Claude on Microsoft Foundry is the anthropic dialect at the azure host).  A new route for
an existing dialect is one row here, plus at most a URL rule in its host.  The row also says what
telemetry calls its provider (``provider``, ``provider_hosts``); what the dialect itself implies (its
operation name, tool-name rule, opaque marks, batch API) is its record in ``agenthub.providers.DIALECTS``
(``row.facts``).

Layering: this wing sits above ``agenthub.providers`` (it names dialects by module, imported on
first use) and below the client and the registry; no provider imports it.
"""

import dataclasses
import importlib
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from ..types import HttpRequest
from .trust import join_url

__all__ = ["Host", "ClientType", "CLIENT_TYPES", "client_type", "all_client_types", "host", "has_header"]


def has_header(headers: Mapping[str, str], name: str) -> bool:
    """True when ``headers`` holds ``name`` in any case."""
    lower = name.lower()
    return any(key.lower() == lower for key in headers)


def _join(endpoint: Any, path: str) -> str:
    return join_url(endpoint.base_url, path)


class Host(object):
    """Where a request goes and how it is authorised (see the module doc).

    ``base_url``, ``key_env`` and ``base_url_env``: the default endpoint, the variables its key is
    read from (in order) and the variable that moves it (the registry's credential rule reads them).
    ``url(endpoint, path)``: the URL rule, the dialect's path joined to the endpoint (default:
    ``base_url + path``).  ``authorise(method, url, headers, data, endpoint)``: the headers sent with
    this attempt's credential (a key under its header, a token from a callable, a signature over
    ``data``); a credential header the caller set is left as it is.  ``configure(row, model,
    base_url, api_key, environ)``: for a host that is the caller's own cloud resource, what
    ``registry.resolve`` returns in place of the default endpoint and key variables: ``(client_type,
    base_url, api_key, quirks)``.
    ``takes_token_callable``: a callable ``api_key`` (a token provider) is taken.
    ``check_headers(headers, endpoint, what)``: for a host whose ``authorise`` writes headers over the
    caller's (SigV4's ``Authorization``), a ConfigError for a caller's header (``default_headers``, a call's
    ``extra_headers``: ``what`` names which) that would be replaced, checked before anything is sent.
    ``quirk_keys``: the registry quirks the host reads.  ``own_quirks``: the dialect quirks an endpoint
    on this host's own servers (the host of ``base_url``) has, under any quirk its route sets
    (``{"first_party": True}``: the vendor's own API, not a gateway speaking its dialect).
    """

    __slots__ = ("name", "base_url", "key_env", "base_url_env", "url", "authorise", "configure",
                 "takes_token_callable", "quirk_keys", "own_quirks", "check_headers")

    def __init__(self, name: str, authorise: Callable[..., Dict[str, str]], base_url: str = "",
                 key_env: Sequence[str] = (), base_url_env: Optional[str] = None,
                 url: Callable[[Any, str], str] = _join, configure: Optional[Callable[..., Tuple[str, str, Any,
                                                                                                 Dict[str, Any]]]] = None,
                 takes_token_callable: bool = False,
                 quirk_keys: Sequence[str] = (), own_quirks: Optional[Mapping[str, Any]] = None,
                 check_headers: Optional[Callable[[Mapping[str, str], Any, str], None]] = None) -> None:
        self.name = name
        self.base_url = base_url
        self.key_env = tuple(key_env)
        self.base_url_env = base_url_env
        self.url = url
        self.authorise = authorise
        self.configure = configure
        self.takes_token_callable = takes_token_callable
        self.quirk_keys = tuple(quirk_keys)
        self.own_quirks = dict(own_quirks or {})
        self.check_headers = check_headers

    def encode(self, plan: HttpRequest, endpoint: Any) -> HttpRequest:
        """The request as sent on this attempt: the URL joined, the body as compact UTF-8 JSON bytes,
        the credential of this attempt added (a token callable is called now, a signature computed now)."""
        url = self.url(endpoint, plan.url)
        data = plan.content()
        headers = self.authorise(plan.method, url, dict(plan.headers), data, endpoint)
        return dataclasses.replace(plan, url=url, headers=headers, data=data)

    def __repr__(self) -> str:
        return "Host({!r})".format(self.name)


class ClientType(object):
    """One client type: a wire dialect (a module under ``agenthub.providers``), a host (a module under
    ``agenthub.hosts`` holding ``HOST``, or the name of a first-party host in ``hosts.keys``) and the
    dialect quirks this route sets (the caller's registry row may add more).  ``lists_models``: the
    route answers the dialect's model list (``AutoLLMClient.list_models``); ``embeddings``: it serves the
    dialect's embedding models; ``count_tokens``: False where the host documents no token-count endpoint
    for the dialect, or the name of the host's own count form (``"vertex"``), handed to the dialect's
    ``count_request`` (``AutoLLMClient.count_tokens``).  ``provider``: the route's ``gen_ai.provider.name``
    (OpenTelemetry's well-known value: ``openai``, ``anthropic``, ``gcp.gemini``, ``gcp.vertex_ai``,
    ``azure.ai.openai``, ``aws.bedrock``; every row of ``CLIENT_TYPES`` declares it; None on a row of your
    own: the client type's name); a registry row the caller chose (``client_type="deepseek"``) names its
    vendor over it.  ``provider_hosts``: host names (and their subdomains) at which a dialect other
    vendors speak (``Dialect.provider_by_host``: Chat Completions at ``*.openai.azure.com``) is this
    row's provider."""

    __slots__ = ("name", "dialect", "host_name", "quirks", "lists_models", "embeddings", "count_tokens", "_key_env",
                 "_base_url_env", "provider", "provider_hosts")

    def __init__(self, name: str, dialect: str, host_name: str, quirks: Optional[Mapping[str, Any]] = None,
                 lists_models: bool = True, embeddings: bool = True, key_env: Optional[Sequence[str]] = None,
                 base_url_env: Optional[str] = None, count_tokens: Any = True, *, provider: Optional[str] = None,
                 provider_hosts: Sequence[str] = ()) -> None:
        self.name = name
        self.provider = provider
        self.provider_hosts = tuple(provider_hosts)
        self.dialect = dialect
        self.host_name = host_name
        self.quirks = dict(quirks or {})
        self.lists_models = lists_models
        self.embeddings = embeddings
        self.count_tokens = count_tokens
        self._key_env = None if key_env is None else tuple(key_env)
        self._base_url_env = base_url_env

    @property
    def key_env(self) -> Tuple[str, ...]:
        """The variables this route's key is read from (the host's unless the row names its own)."""
        return self.host.key_env if self._key_env is None else self._key_env

    @property
    def base_url_env(self) -> Optional[str]:
        return self._base_url_env or self.host.base_url_env

    @property
    def host(self) -> Host:
        return host(self.host_name)

    @property
    def facts(self) -> Any:
        """The dialect's index record (``agenthub.providers.Dialect``: its operation name, tool-name rule,
        marks, batch API), read without importing the dialect's module."""
        from .. import providers

        return providers.dialect(self.dialect)

    def protocol(self, embeddings: bool = False) -> Any:
        """The dialect's record (its embeddings record for embedding models; None: it has none)."""
        from .. import providers

        if embeddings:
            return providers.embeddings_protocol(self.dialect) if self.embeddings else None
        return providers.protocol(self.dialect)

    def __repr__(self) -> str:
        return "ClientType({!r}: {} at {})".format(self.name, self.dialect, self.host_name)


#: the name Claude on Vertex AI gives Anthropic API version 2023-06-01 in the body (hosts.vertex.ANTHROPIC_VERSION;
#: sent when that version is pinned: under 2026-10-21 the body carries "2026-10-21")
VERTEX_ANTHROPIC_VERSION = "vertex-2023-10-16"

#: client_type -> its row.  The dialect is a key of agenthub.providers.PROTOCOLS; the host one of HOSTS.
CLIENT_TYPES = {row.name: row for row in [
    ClientType("openai-chat", "openai-chat", "openai", provider="openai"),
    ClientType("openai-responses", "openai-responses", "openai", provider="openai"),
    ClientType("anthropic", "anthropic", "anthropic", provider="anthropic"),
    ClientType("gemini", "gemini", "gemini", provider="gcp.gemini",
               provider_hosts=("generativelanguage.googleapis.com",)),
    # Gemini's Interactions API (also GEMINI_API=interactions): its own dialect at Gemini's first-party host
    ClientType("gemini-interactions", "gemini-interactions", "gemini", embeddings=False, provider="gcp.gemini"),
    ClientType("azure", "openai-chat", "azure", embeddings=False, provider="azure.ai.openai",
               provider_hosts=("openai.azure.com",)),
    ClientType("azure-responses", "openai-responses", "azure", embeddings=False, count_tokens=False,
               provider="azure.ai.openai"),
    # Claude on Microsoft Foundry: Anthropic Messages at https://{resource}.services.ai.azure.com/anthropic (the
    # models run on Anthropic's own infrastructure: thinking goes back only with its signature, as there)
    ClientType("azure-anthropic", "anthropic", "azure", {"replay_unsigned_thinking": False}, lists_models=False,
               count_tokens=False,
               key_env=("ANTHROPIC_FOUNDRY_API_KEY",), base_url_env="ANTHROPIC_FOUNDRY_BASE_URL", provider="anthropic"),
    # Gemini on Vertex AI: its responseSchema takes additionalProperties (the Gemini API refuses it)
    ClientType("vertex", "gemini", "vertex", {"schema_additional_properties": True}, lists_models=False,
               embeddings=False, count_tokens="vertex", provider="gcp.vertex_ai",
               provider_hosts=("aiplatform.googleapis.com",)),
    # Claude on Vertex AI (client_type="vertex" picks it for claude-* models): the version in the body,
    # no model in it (it is in the URL), no top-level automatic cache_control; thinking goes back only with its
    # signature, as on Anthropic's API (Vertex's Claude answers a thinking block without one "thinking.signature:
    # Field required", a 400)
    ClientType("vertex-anthropic", "anthropic", "vertex",
               {"version_in_body": VERTEX_ANTHROPIC_VERSION, "model_in_body": False, "automatic_caching": False,
                "replay_unsigned_thinking": False},
               lists_models=False, provider="gcp.vertex_ai"),
    ClientType("bedrock", "bedrock", "aws", provider="aws.bedrock"),
    ClientType("agenthub", "agenthub", "agenthub", provider="agenthub"),
]}

#: host name -> (module under agenthub.hosts, attribute): imported on first use
HOSTS = {
    "openai": ("keys", "OPENAI"),
    "anthropic": ("keys", "ANTHROPIC"),
    "gemini": ("keys", "GEMINI"),
    "agenthub": ("keys", "AGENTHUB"),
    "azure": ("azure", "HOST"),
    "vertex": ("vertex", "HOST"),
    "aws": ("aws", "HOST"),
}

_hosts = {}  # type: Dict[str, Host]


def host(name: str) -> Host:
    """The Host named ``name`` (its module is imported on first use)."""
    found = _hosts.get(name)
    if found is None:
        module, attribute = HOSTS[name]
        found = _hosts[name] = getattr(importlib.import_module("agenthub.hosts." + module), attribute)
    return found


def client_type(name: str) -> ClientType:
    """The row of client_type ``name`` (a KeyError for an unknown name: registry.resolve checks first)."""
    return CLIENT_TYPES[name]


def all_client_types() -> List[ClientType]:
    return list(CLIENT_TYPES.values())
