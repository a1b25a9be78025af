"""The key hosts: a base URL, the variables its key is read from, and the header the key travels in.

- ``OPENAI``: ``Authorization: Bearer <key>`` (OpenAI and every OpenAI-compatible server);
- ``ANTHROPIC``: at api.anthropic.com ``Authorization: Bearer <key>`` under API version 2026-10-21 (the
  default there) and ``x-api-key: <key>`` under a pinned 2023-06-01; at a gateway ``x-api-key: <key>``, or
  ``Authorization: Bearer <key>`` when its registry row says ``"auth": "bearer"``;
- ``GEMINI``: ``x-goog-api-key: <key>`` (never in the URL); a base URL that already names an API
  version (``.../v1beta``, ``https://aiplatform.googleapis.com/v1/publishers/google``) takes the
  dialect's path without its ``/v1beta`` (generateContent) or ``/v1`` (Interactions);
- ``AGENTHUB``: ``Authorization: Bearer <server key>`` at an ``agenthub serve`` root (a trailing
  ``/v1`` of the base URL is taken as the same server).

A credential header the caller set (``default_headers``, ``extra_headers``) is left as it is.
Which endpoint a key from the environment may go to is the registry's rule (``registry.resolve``).
"""

import re
from typing import Any, Callable, Dict, Mapping, Optional
from urllib.parse import urlsplit

from . import Host, has_header
from .trust import host_is, join_url

__all__ = ["OPENAI", "ANTHROPIC", "GEMINI", "AGENTHUB", "key_header", "server_url"]


def key_header(header: str, prefix: str = "", pick: Optional[Callable[[Any], Any]] = None) -> Callable[..., Dict[str, str]]:
    """An ``authorise`` that sends the endpoint's key as ``header: prefix + key`` (``pick(endpoint)``
    may choose another (header, prefix) per endpoint)."""

    def authorise(method: str, url: str, headers: Dict[str, str], data: Optional[bytes], endpoint: Any) -> Dict[str, str]:
        key = endpoint.api_key
        name, lead = pick(endpoint) if pick is not None else (header, prefix)
        if isinstance(key, str) and key and not has_header(headers, name):
            headers[name] = lead + key
        return headers

    return authorise


#: the first Anthropic API version whose requests carry the key as ``Authorization: Bearer`` (as the official
#: SDKs send it since their majors of that date; providers.anthropic.ANTHROPIC_VERSION)
BEARER_ANTHROPIC_VERSION = "2026-10-21"
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def _anthropic_authorise(method: str, url: str, headers: Dict[str, str], data: Optional[bytes],
                         endpoint: Any) -> Dict[str, str]:
    """The key as the request's Anthropic version and the host expect: ``Authorization: Bearer`` at the
    first-party API under 2026-10-21 (the version the dialect put in ``anthropic-version``) and at gateways
    whose row says ``"auth": "bearer"``; ``x-api-key`` otherwise (the first-party API under 2023-06-01, the
    other gateways).  A credential header the caller set is left as it is."""
    key = endpoint.api_key
    if not isinstance(key, str) or not key or has_header(headers, "authorization") or has_header(headers, "x-api-key"):
        return headers
    version = next((value for name, value in headers.items() if name.lower() == "anthropic-version"), "")
    first_party = host_is(endpoint.base_url, ("api.anthropic.com",))
    if first_party and _DATE.fullmatch(version) and version >= BEARER_ANTHROPIC_VERSION:
        headers["Authorization"] = "Bearer " + key
    elif endpoint.quirks.get("auth") == "bearer" and not first_party:
        headers["Authorization"] = "Bearer " + key
    else:
        headers["x-api-key"] = key
    return headers


_VERSIONED_BASE = re.compile(r"/v\d+(alpha|beta)?\d*(/|$)")
_DIALECT_VERSION = re.compile(r"/v1(beta)?(?=/)")


def _gemini_url(endpoint: Any, path: str) -> str:
    version = _DIALECT_VERSION.match(path)
    if version is not None and _VERSIONED_BASE.search(urlsplit(endpoint.base_url).path):
        path = path[version.end():]
    return join_url(endpoint.base_url, path)


def server_url(base_url: str) -> str:
    """An agenthub server's root: ``http://host:port`` (a trailing ``/v1`` is taken as the same server; a
    query string stays at the end)."""
    url, mark, query = base_url.partition("?")
    url = url.rstrip("/")
    return (url[:-3] if url.endswith("/v1") else url) + mark + query


def _agenthub_url(endpoint: Any, path: str) -> str:
    return join_url(server_url(endpoint.base_url), path)


_BEARER = key_header("Authorization", "Bearer ")

OPENAI = Host("openai", _BEARER, "https://api.openai.com/v1", ("OPENAI_API_KEY",), "OPENAI_BASE_URL",
              # api.openai.com: strict mode's documented subset is checked; a tool call left unanswered is refused;
              # its image types (PNG, JPEG, WebP, GIF) are checked
              own_quirks={"strict_subset": True, "answers_required": True, "image_subset": True})
ANTHROPIC = Host("anthropic", _anthropic_authorise, "https://api.anthropic.com",
                 ("ANTHROPIC_API_KEY",), "ANTHROPIC_BASE_URL", quirk_keys=("auth",),
                 own_quirks={"first_party": True})  # api.anthropic.com: the betas it offers, signed thinking only
GEMINI = Host("gemini", key_header("x-goog-api-key"), "https://generativelanguage.googleapis.com",
              ("GEMINI_API_KEY", "GOOGLE_API_KEY"), "GEMINI_BASE_URL", url=_gemini_url)
AGENTHUB = Host("agenthub", _BEARER, "http://127.0.0.1:8787", ("AGENTHUB_SERVER_KEY",), "AGENTHUB_SERVER_URL",
                url=_agenthub_url)
