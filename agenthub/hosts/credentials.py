"""Credentials that are not plain keys: token callables, and secrets that must never be sent as a key.

Pure: no I/O.  ``bearer_token`` is what a host's ``authorise`` calls once per attempt
(so a provider that refreshes its tokens works: Microsoft Entra ID's
``get_bearer_token_provider``, google-auth, or any function of yours).
``private_key_reason`` recognises a service-account JSON (or any text holding a
private key) handed over as ``api_key``: registry.resolve refuses it before anything
is sent, and ``bearer_token`` refuses a token provider that returns one.
"""

import base64
import binascii
import json
import re
from typing import Any, Callable, Optional

from ..errors import AgentHubError, AuthenticationError, ConfigError
from ..validate import check_header_value
from .trust import is_loopback, is_loopback_host
from .._jsondepth import loads as _json_loads

__all__ = ["bearer_token", "private_key_reason", "check_not_private_key", "is_token_provider", "is_loopback"]

_PEM_PRIVATE = re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----")
_HEADER_UNSAFE = re.compile(r"[\x00-\x1f\x7f]")


def is_token_provider(value: Any) -> bool:
    """A callable ``api_key`` (called for a token before every attempt)."""
    return callable(value) and not isinstance(value, (str, bytes))


_BASE64 = re.compile(r"^[A-Za-z0-9+/_-]{24,}={0,2}$")


def _base64_text(text: str) -> Optional[str]:
    """The text ``text`` is the base64 (standard or URL-safe, padded or not) of; None when it is not."""
    stripped = text.strip()
    if not _BASE64.match(stripped):
        return None
    body = stripped.rstrip("=")
    body += "=" * (-len(body) % 4)
    try:
        raw = base64.b64decode(body.replace("-", "+").replace("_", "/"), validate=True)
        return raw.decode("utf-8")
    except (binascii.Error, ValueError):
        return None


def private_key_reason(text: str) -> Optional[str]:
    """Why ``text`` must not be sent as a key (None when it may be): a JSON object with a
    ``private_key`` (a Google service-account file, or any other), ``"type":
    "service_account"`` or ``"authorized_user"`` (or a ``refresh_token``), or a PEM private
    key anywhere in it; or the base64 of any of these."""
    decoded = _base64_text(text)
    if decoded is not None:
        reason = _plain_reason(decoded)
        return None if reason is None else "it is base64-encoded and " + reason
    return _plain_reason(text)


def _plain_reason(text: str) -> Optional[str]:
    if _PEM_PRIVATE.search(text):
        return "it holds a PEM private key"
    stripped = text.strip()
    if not stripped.startswith(("{", "[")):
        return None
    try:
        value = _json_loads(stripped)
    except (ValueError, RecursionError):
        value = None
    if value is None:  # a cut or malformed credentials file is still one
        return "it looks like a credentials JSON with a private key" if "private_key" in stripped else None
    return _json_reason(value, 0)


def _json_reason(value: Any, depth: int) -> Optional[str]:
    """The reason for a decoded JSON value: its strings are searched once decoded, so a
    ``\\u``-escaped PEM header is seen as the plain one (any nesting, arrays included)."""
    if depth > 32:
        return None
    if isinstance(value, str):
        return "it holds a PEM private key" if _PEM_PRIVATE.search(value) else None
    if isinstance(value, dict):
        if "private_key" in value or value.get("type") == "service_account":
            return "it is a service-account JSON (its private key would be sent)"
        if value.get("type") == "authorized_user" or "refresh_token" in value:
            return "it is a Google user-credentials JSON (its refresh token would be sent)"
        items = list(value.keys()) + list(value.values())
    elif isinstance(value, list):
        items = value
    else:
        return None
    for item in items:
        reason = _json_reason(item, depth + 1)
        if reason is not None:
            return reason
    return None


def check_not_private_key(text: str, what: str = "api_key") -> None:
    """ConfigError when ``text`` is a credential file's content rather than a key (the text is never shown)."""
    reason = private_key_reason(text)
    if reason is not None:
        raise ConfigError(
            "{} refused: {}; it was not sent. For Vertex AI set GOOGLE_APPLICATION_CREDENTIALS to the file's "
            "path (pip install '.[vertex]' from agenthub's checkout), or pass api_key=agenthub.gcp.service_account_file(path), "
            "an access token, or a callable returning one".format(what, reason))


def bearer_token(provider: Callable[[], Any], client: str) -> str:
    """Call a token provider for this attempt -> the token to send as ``Authorization: Bearer``.

    A provider that raises is an AuthenticationError (the cause chained; agenthub's own
    errors pass through); one that returns something other than a non-empty one-line
    string, or a private key, is a ConfigError.  Nothing is sent in either case.
    """
    try:
        token = provider()
    except AgentHubError:
        raise
    except Exception as exc:
        raise AuthenticationError("{}: the api_key token provider raised {}".format(client, type(exc).__name__),
                                  client=client, error_type="token_provider") from exc
    if isinstance(token, bytes):
        try:
            token = token.decode("ascii")
        except UnicodeDecodeError:
            token = None
    if not isinstance(token, str) or not token.strip():
        raise ConfigError("{}: the api_key token provider returned {} (expected a non-empty token string)".format(
            client, "an empty string" if isinstance(token, str) else type(token).__name__))
    token = token.strip()
    if token.lower().startswith("bearer "):
        token = token[7:].strip()  # a provider that returns the header value
    check_not_private_key(token, "{}: the token from api_key".format(client))
    if _HEADER_UNSAFE.search(token):
        raise ConfigError("{}: the api_key token provider returned a token with control characters".format(client))
    # what a string key is refused for when the client is made (outside Latin-1, invisible): refused now,
    # before anything is sent, by the same rule and in the same words
    check_header_value(token, "{}: the token from api_key".format(client))
    return token
