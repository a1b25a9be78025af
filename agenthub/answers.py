"""How an HTTP answer is read beyond HTTP itself: the header names servers and gateways use for
request ids and retry delays (vendor spellings kept here, as data), the first bytes of an event
stream, and ``error_from_body``, the default of the protocol record's hook that turns an error
answer into the AgentHubError it names.  Pure: no I/O.

The transport knows HTTP only: it hands an error answer's status, headers and (capped) body to
the protocol's ``error_from_body(status, headers, payload, client)`` and raises what comes back;
``status`` is None for an error object inside a 2xx answer (its type then picks the status).
``payload`` is the body's bytes as received, or the JSON value already decoded from a 2xx answer.
"""

import datetime
import email.utils
import http.client
import json
import re
import time
from typing import Any, Mapping, Optional, Tuple

from .errors import UpstreamError, preview, upstream_error
from ._jsondepth import loads as _json_loads

__all__ = ["error_from_body", "retry_after", "request_id", "starts_stream", "page_text", "is_html", "body_text"]

#: where servers and gateways say how long to wait: milliseconds first (OpenAI, Anthropic, Azure's
#: ``x-ms-``), then seconds or an HTTP date; LiteLLM passes the provider's headers on with an
#: ``llm_provider-`` prefix
_RETRY_AFTER_MS_HEADERS = ("retry-after-ms", "x-ms-retry-after-ms", "llm_provider-retry-after-ms")
_RETRY_AFTER_HEADERS = ("retry-after", "x-retry-after", "llm_provider-retry-after")
_REQUEST_ID_HEADERS = ("x-request-id", "request-id", "x-goog-request-id", "openai-request-id", "x-amzn-requestid",
                       "cf-ray")


def _first(headers: Mapping[str, str], names: Tuple[str, ...]) -> Optional[str]:
    for name in names:
        value = headers.get(name)
        if value and value.strip():
            return value.strip()
    return None


def retry_after(headers: Mapping[str, str]) -> Optional[float]:
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date), in any of
    the spellings above."""
    value = _first(headers, _RETRY_AFTER_MS_HEADERS)
    if value:
        try:
            seconds = float(value) / 1000.0
            if seconds == seconds and seconds != float("inf"):  # not NaN, not infinite
                return max(0.0, seconds)
        except ValueError:
            pass
    value = _first(headers, _RETRY_AFTER_HEADERS)
    if not value:
        return None
    try:
        seconds = float(value)
        if seconds == seconds and seconds != float("inf"):
            return max(0.0, seconds)
        return None
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when is None:  # pragma: no cover - older Pythons return None instead of raising
        return None
    if when.tzinfo is None:  # asctime's form and a "-0000" zone: an HTTP date is in GMT whatever the local zone
        when = when.replace(tzinfo=datetime.timezone.utc)
    try:
        return max(0.0, when.timestamp() - time.time())
    except (OverflowError, OSError, ValueError):  # pragma: no cover - absurd dates
        return None


def request_id(headers: Optional[Mapping[str, str]]) -> Optional[str]:
    """The answer's request id: a gateway's own first, then the provider's it passed on."""
    if not headers:
        return None
    for prefix in ("", "llm_provider-"):
        for name in _REQUEST_ID_HEADERS:
            value = headers.get(prefix + name)
            if value:
                return preview(value, 200)
    return None


#: the first bytes of an SSE body (a field name, or a comment), after any byte order mark and blank lines
_SSE_START = re.compile(rb"^(?:\xef\xbb\xbf)?[\r\n]*(?::|(?:data|event|id|retry)(?::|[\r\n]))")


def starts_stream(head: bytes) -> bool:
    """True when a body labelled JSON opens as an event stream (a server or proxy that labels its
    stream application/json): it is then read as the stream it is."""
    return _SSE_START.match(head) is not None


def body_text(raw: Any) -> str:
    """A body's text: UTF-8, a byte order mark opening it dropped (a JSON parser refuses it)."""
    return raw.decode("utf-8-sig", "replace") if isinstance(raw, (bytes, bytearray)) else str(raw)


def is_html(headers: Optional[Mapping[str, str]]) -> bool:
    return ((headers or {}).get("content-type") or "").split(";", 1)[0].strip().lower() in (
        "text/html", "application/xhtml+xml")


def page_text(html: str) -> str:
    """The words of an HTML error page (a proxy's or a gateway's), without its markup."""
    from html import unescape

    html = re.sub(r"(?is)<(script|style)\b.*?</\1\s*>", " ", html)
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]*>", " ", html))).strip()


_SSE_DATA = re.compile(r"^data:[ ]?(.*)$", re.M)


def _sse_error(text: str) -> Any:
    """The error object of an error body framed as an event stream (``data: {"error": ...}``, as some
    gateways answer a streamed request that failed before it began); None when there is none."""
    if "data:" not in text[:4096]:
        return None
    for match in _SSE_DATA.finditer(text.replace("\r\n", "\n").replace("\r", "\n")):
        data = match.group(1).strip()
        if not data or data == "[DONE]":
            continue
        try:
            payload = _json_loads(data)
        except (ValueError, RecursionError):
            continue
        if isinstance(payload, dict) and (payload.get("error") or payload.get("type") == "error"):
            return payload
    return None


def decode_body(status: Optional[int], headers: Mapping[str, str], payload: Any) -> Any:
    """An error body as the JSON value it holds (also inside an event stream's data), else its words."""
    if not isinstance(payload, (bytes, bytearray)):
        return payload
    text = body_text(payload)
    try:
        return _json_loads(text)
    except (ValueError, RecursionError):
        pass
    found = _sse_error(text)
    if found is not None:
        return found
    if is_html(headers):
        text = page_text(text)
    return preview(text.strip(), 500) or "HTTP {} {}".format(status, http.client.responses.get(status or 0, ""))


def error_from_body(status: Optional[int], headers: Mapping[str, str], payload: Any, client: str = "") -> UpstreamError:
    """The default ``Protocol.error_from_body``: the error an answer names, with the retry delay and
    request id its headers give and the server's own word on retrying (``x-should-retry``)."""
    error = upstream_error(client, decode_body(status, headers, payload), status=status,
                           retry_after=retry_after(headers), request_id=request_id(headers))
    if status is None:  # an error object inside a 2xx answer: its body alone speaks
        return error
    amzn = headers.get("x-amzn-errortype")  # AWS: "ThrottlingException:http://internal.amazon.com/..."
    if amzn and error.error_type is None:
        error.error_type = error._fields["error_type"] = amzn.split(":", 1)[0].rsplit("#", 1)[-1].strip() or None
    should = (headers.get("x-should-retry") or "").strip().lower()
    if should in ("true", "false"):  # the server's own word wins (OpenAI and Anthropic send it)
        error.retryable = should == "true"
        error._fields["retryable"] = error.retryable
    return error
