"""HTTP over ``requests``: the only module that imports it.

``open_stream`` sends one planned request and yields the body's bytes as they
arrive; ``fetch_json`` sends one and returns its decoded JSON document.  Both map
a non-2xx answer to an UpstreamError subclass (status, error type, message,
Retry-After and request id read from the provider's error body) and every
``requests`` exception to TransportError with the cause chained.  The response is
closed in a ``finally``: leaving the loop early frees the connection at once.
"""

import email.utils
import json
import time
from typing import Any, Callable, Iterator, Mapping, Optional, Tuple, Union

import requests

from .errors import StreamProtocolError, TransportError, UpstreamError, preview, upstream_error
from .types import HttpRequest

__all__ = ["open_stream", "fetch_json", "DEFAULT_TIMEOUT", "new_session"]

#: (connect, read) seconds.  The read timeout is the longest silence allowed between two
#: received chunks: long enough for a reasoning model that says nothing for minutes.
DEFAULT_TIMEOUT = (10.0, 600.0)
#: at most this much of an error body is read
_MAX_ERROR_BODY = 64 * 1024
_READ_SIZE = 64 * 1024
_REQUEST_ID_HEADERS = ("x-request-id", "request-id", "x-goog-request-id", "cf-ray", "openai-request-id")

Timeout = Union[None, float, Tuple[Optional[float], Optional[float]]]


def new_session() -> requests.Session:
    return requests.Session()


def _retry_after(headers: Mapping[str, str]) -> Optional[float]:
    value = headers.get("retry-after-ms")
    if value:
        try:
            return max(0.0, float(value) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:  # pragma: no cover - older Pythons return None instead of raising
        return None
    return max(0.0, when.timestamp() - time.time())


def _request_id(headers: Mapping[str, str]) -> Optional[str]:
    for name in _REQUEST_ID_HEADERS:
        value = headers.get(name)
        if value:
            return value
    return None


def _http_error(client: str, response: requests.Response) -> UpstreamError:
    try:
        raw = response.raw.read(_MAX_ERROR_BODY, decode_content=True) if response.raw is not None else b""
    except Exception:  # the body is a courtesy: the status alone is an answer
        raw = b""
    if not raw:
        try:
            raw = response.content[:_MAX_ERROR_BODY]
        except Exception:
            raw = b""
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
    try:
        payload = json.loads(text)  # type: Any
    except ValueError:
        payload = preview(text.strip(), 500) or "HTTP {} {}".format(response.status_code, response.reason or "")
    return upstream_error(
        client,
        payload,
        status=response.status_code,
        retry_after=_retry_after(response.headers),
        request_id=_request_id(response.headers),
    )


def _send(session: requests.Session, request: HttpRequest, timeout: Timeout, client: str, stream: bool):
    if timeout is None:
        timeout = DEFAULT_TIMEOUT
    data = None
    if request.body is not None:
        data = json.dumps(request.body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    try:
        response = session.request(
            request.method, request.url, headers=dict(request.headers), data=data, timeout=timeout, stream=stream
        )
    except requests.RequestException as exc:
        raise TransportError("{}: {} failed: {}".format(client, _where(request), type(exc).__name__)) from exc
    if response.status_code >= 300:
        try:
            raise _http_error(client, response)
        finally:
            response.close()
    return response


def _where(request: HttpRequest) -> str:
    url = request.url.split("?", 1)[0]
    return "{} {}".format(request.method, url)


def _chunks(response: requests.Response) -> Iterator[bytes]:
    raw = response.raw
    if getattr(raw, "chunked", False) or not hasattr(raw, "read1"):
        # chunked bodies: urllib3 hands over each chunk as it arrives
        return response.iter_content(chunk_size=None)
    # close-delimited or sized bodies: read1 returns as soon as any bytes arrived
    return _read1(raw)


def _read1(raw: Any) -> Iterator[bytes]:
    read1 = raw.read1
    while True:
        data = read1(_READ_SIZE)
        if not data:
            return
        yield data


def open_stream(
    session: requests.Session,
    request: HttpRequest,
    timeout: Timeout = None,
    client: str = "",
    on_response: Optional[Callable[[Any], None]] = None,
) -> Iterator[bytes]:
    """Send ``request`` and yield the response body's bytes as they arrive.

    ``on_response`` receives the open response (so another thread can close it
    to abort the stream).
    """
    response = _send(session, request, timeout, client, stream=True)
    try:
        if on_response is not None:
            on_response(response)
        for chunk in _chunks(response):
            if chunk:
                yield chunk
    except requests.RequestException as exc:
        raise TransportError("{}: reading the stream failed: {}".format(client, type(exc).__name__)) from exc
    except (OSError, ValueError, AttributeError) as exc:
        # urllib3 surfaces a closed or broken socket as these (ProtocolError is an HTTPError/OSError mix)
        raise TransportError("{}: reading the stream failed: {}".format(client, type(exc).__name__)) from exc
    except Exception as exc:
        if type(exc).__module__.startswith("urllib3"):
            raise TransportError("{}: reading the stream failed: {}".format(client, type(exc).__name__)) from exc
        raise
    finally:
        response.close()


def fetch_json(session: requests.Session, request: HttpRequest, timeout: Timeout = None, client: str = "") -> Any:
    """Send ``request`` and return the decoded JSON body (for non-streamed endpoints)."""
    response = _send(session, request, timeout, client, stream=False)
    try:
        try:
            return json.loads(response.content.decode("utf-8"))
        except requests.RequestException as exc:
            raise TransportError("{}: reading the response failed: {}".format(client, type(exc).__name__)) from exc
        except ValueError as exc:
            raise StreamProtocolError("{}: the response is not JSON".format(client), client=client) from exc
    finally:
        response.close()
