"""Pure helpers shared by the protocol modules (no protocol logic of its own)."""

import base64
import binascii
import json
import re
from typing import Any, Dict, Mapping, Optional, Sequence, Tuple

from ..errors import ConfigError, UnsupportedParameterError

__all__ = [
    "Endpoint",
    "dumps",
    "parse_data_uri",
    "data_uri",
    "join_url",
    "unsupported",
    "nearest",
    "request_headers",
]


def _redact_url(url: str) -> str:
    from .._redact import redact_url

    return redact_url(url)


class Endpoint(object):
    """Where and how to send: base URL, key, extra headers, and the vendor's quirks (a registry row's data)."""

    __slots__ = ("client_type", "base_url", "api_key", "headers", "quirks")

    def __init__(
        self,
        client_type: str,
        base_url: str,
        api_key: Optional[str] = None,
        headers: Optional[Mapping[str, str]] = None,
        quirks: Optional[Mapping[str, Any]] = None,
    ) -> None:
        self.client_type = client_type
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.headers = dict(headers or {})
        self.quirks = dict(quirks or {})

    def __repr__(self) -> str:  # never show the key
        return "Endpoint(client_type={!r}, base_url={!r}, api_key={})".format(
            self.client_type, _redact_url(self.base_url), "'***'" if self.api_key else None
        )

    def __getstate__(self):
        return {name: getattr(self, name) for name in self.__slots__}

    def __setstate__(self, state):
        for name, value in state.items():
            setattr(self, name, value)


def dumps(value: Any) -> str:
    """Compact JSON text, non-ASCII kept as is (CJK arguments stay readable)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def join_url(base_url: str, path: str) -> str:
    return base_url.rstrip("/") + path


_DATA_URI = re.compile(r"^data:([^;,]*)((?:;[^;,]*)*),(.*)$", re.S)


def parse_data_uri(uri: str) -> Optional[Tuple[str, bytes]]:
    """``data:<mime>;base64,<payload>`` -> (mime, bytes); None when ``uri`` is not a data URI.

    A data URI that does not decode is a ConfigError (never a silent empty image).
    """
    if not uri.startswith("data:"):
        return None
    match = _DATA_URI.match(uri)
    if match is None:
        raise ConfigError("malformed data URI (expected data:<mime>;base64,<data>)")
    mime = match.group(1) or "application/octet-stream"
    params = match.group(2).split(";")
    payload = match.group(3)
    if "base64" in params:
        try:
            return mime, base64.b64decode(payload, validate=True)
        except (binascii.Error, ValueError):
            raise ConfigError("data URI with invalid base64 payload ({} characters)".format(len(payload))) from None
    from urllib.parse import unquote_to_bytes

    return mime, unquote_to_bytes(payload)


def data_uri(mime_type: str, data: bytes) -> str:
    return "data:{};base64,{}".format(mime_type, base64.b64encode(data).decode("ascii"))




def unsupported(client: str, parameter: str, why: str) -> UnsupportedParameterError:
    return UnsupportedParameterError("{}: {} {}".format(client, parameter, why), client=client, parameter=parameter)



def usage(cached: Optional[int], prompt: Optional[int], thoughts: Optional[int], response: Optional[int]) -> Dict[str, Optional[int]]:
    """The four buckets, each a non-negative int or None."""
    return {
        "cached_tokens": _count(cached),
        "prompt_tokens": _count(prompt),
        "thoughts_tokens": _count(thoughts),
        "response_tokens": _count(response),
    }


def inclusive_usage(prompt: Any, output: Any, cached: Any, thoughts: Any, total: Any = None) -> Dict[str, Optional[int]]:
    """OpenAI-style counts (prompt includes cached, output includes reasoning) -> the buckets.

    Where ``total == prompt + output + thoughts`` the server's output count already
    excluded reasoning (xAI, some gateways): it is the response count as sent.  The
    buckets are never negative.
    """
    prompt, output, cached, thoughts, total = (_count(v) for v in (prompt, output, cached, thoughts, total))
    response = output
    if output is not None and thoughts:
        excludes = total is not None and prompt is not None and total == prompt + output + thoughts
        if not excludes and output >= thoughts:
            response = output - thoughts
    return usage(cached, None if prompt is None else prompt - (cached or 0), thoughts, response)


def _count(value: Any) -> Optional[int]:
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int):
        return None
    return max(0, value)


def to_int(value: Any) -> Optional[int]:
    return _count(value)




def nearest(wanted: str, supported: Sequence[str], order: Sequence[str], cheaper_on_tie: bool = False) -> str:
    """The value of ``supported`` nearest to ``wanted`` along ``order`` (itself when supported).

    Thinking levels are clamped with this everywhere, so a level never raises.  A tie
    goes to the heavier level unless ``cheaper_on_tie``.
    """
    if wanted in supported or not supported:
        return wanted
    rank = {value: i for i, value in enumerate(order)}
    want = rank.get(wanted, len(order) // 2)
    sign = 1 if cheaper_on_tie else -1
    return min(supported, key=lambda value: (abs(rank.get(value, want) - want), sign * rank.get(value, want)))


def request_headers(endpoint: Endpoint, key_header: str = "Authorization", key_prefix: str = "Bearer ",
                    accept: str = "text/event-stream", **extra: str) -> Dict[str, str]:
    """JSON request headers with the endpoint's key under ``key_header``; the caller's
    ``default_headers`` (endpoint.headers) come last and win."""
    headers = {"Content-Type": "application/json", "Accept": accept}
    headers.update(extra)
    if endpoint.api_key:
        headers[key_header] = key_prefix + endpoint.api_key
    headers.update(endpoint.headers)
    return headers
