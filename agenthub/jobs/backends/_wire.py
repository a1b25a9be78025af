"""HTTP for the batch backends: one ``Wire`` per endpoint (its key, its session), JSON calls and
raw downloads through ``agenthub.transport``, transient failures retried with backoff.

The key travels as the endpoint's host sends it (``agenthub.hosts``: ``Authorization: Bearer``,
``api-key`` or an Entra token for Azure, ``x-api-key`` for Anthropic, ``x-goog-api-key`` for
Gemini), authorised per call, so a token provider is asked afresh every time.  URLs are absolute
(``url(path)`` is the host's own URL rule for the paths it knows).  Errors are scrubbed of every
header value sent.
"""

import json
import logging
import random
import time
from typing import Any, Dict, Iterator, List, Mapping, Optional, Tuple

from ... import hosts, transport
from ...attempts import scrub as _scrub  # the loop's scrubbing: the same words for the same secrets
from ..._redact import secret_values, url_secrets
from ...errors import AgentHubError, UpstreamError
from ...providers._common import Endpoint
from ...types import HttpRequest

__all__ = ["Wire", "BadLine", "join", "multipart", "same_origin", "RETRY_AFTER_CAP"]

log = logging.getLogger("agenthub")

#: a server's Retry-After is waited for up to this many seconds (longer: the error is raised)
RETRY_AFTER_CAP = 60.0
BACKOFF_BASE = 0.5
BACKOFF_CAP = 8.0
#: (connect, read) seconds for batch management calls and downloads
TIMEOUT = (10.0, 300.0)


class Wire(object):
    """Calls to one endpoint (``endpoint`` holds the key; nothing here writes it anywhere)."""

    def __init__(self, client_type: str, endpoint: Endpoint, session: Any = None, max_retries: int = 2,
                 timeout: Any = TIMEOUT) -> None:
        self.client_type = client_type
        self.endpoint = endpoint
        self.session = session if session is not None else transport.new_session()
        self.max_retries = max_retries
        self.timeout = timeout
        row = hosts.client_type(client_type)
        self.host = row.host
        self._record = row.protocol()  # the dialect's record: how its error answers read

    # -- headers ---------------------------------------------------------------------------------
    def url(self, path: str) -> str:
        """The host's URL for one of its dialect's paths (Gemini's version rule, Azure's v1 models)."""
        return self.host.url(self.endpoint, path)

    def _headers(self, method: str, url: str, data: Optional[bytes], extra: Mapping[str, str]) -> Dict[str, str]:
        # the dialect's own headers (anthropic-version, ...) as its model-list request carries them, the
        # caller's default headers, then this call's; the host adds the credential
        probe = self._record.models_request(self.endpoint, None) if self._record.models_request else None
        headers = {name: value for name, value in (probe.headers if probe is not None else {}).items()
                   if name.lower() not in ("accept", "content-type", "content-length")}
        headers.update(self.endpoint.headers)
        headers.update(extra)
        return self.host.authorise(method, url, headers, data, self.endpoint)

    def _request(self, method: str, url: str, body: Any = None, data: Optional[bytes] = None,
                 headers: Optional[Mapping[str, str]] = None, accept: str = "application/json") -> HttpRequest:
        extra = {"Accept": accept}  # type: Dict[str, str]
        if body is not None:
            extra["Content-Type"] = "application/json"
            data = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        extra.update(headers or {})
        return HttpRequest(method, url, self._headers(method, url, data, extra), None, stream=False, data=data)

    # -- calls -----------------------------------------------------------------------------------
    def json(self, method: str, url: str, body: Any = None, data: Optional[bytes] = None,
             headers: Optional[Mapping[str, str]] = None, idempotent: Optional[bool] = None) -> Any:
        """One JSON answer.  ``idempotent`` (default: GET): a connection failure may be retried; a
        POST that creates something is retried only when the server answered that it did not."""
        safe = method == "GET" if idempotent is None else idempotent

        def call() -> Any:
            answer = transport.open_stream(self.session, self._request(method, url, body, data, headers),
                                           self.timeout, self.client_type, error_from_body=self._record.error_from_body)
            answer.open(document=True)
            return answer.document

        return self._retry(call, safe)

    def raw(self, method: str, url: str, body: Any = None, data: Optional[bytes] = None,
            headers: Optional[Mapping[str, str]] = None, accept: str = "*/*",
            idempotent: Optional[bool] = None) -> Any:
        """The answer as it is (``transport.RawBody``: ``headers``, iterate for bytes, ``read()``)."""
        safe = method == "GET" if idempotent is None else idempotent
        return self._retry(lambda: transport.open_raw(self.session, self._request(method, url, body, data, headers,
                                                                                  accept),
                                                      self.timeout, self.client_type, self._record.error_from_body),
                           safe)

    def lines(self, url: str, headers: Optional[Mapping[str, str]] = None) -> Iterator[Any]:
        """A JSON Lines download, one decoded object per line as the bytes arrive (memory: one line)."""
        body = self.raw("GET", url, headers=headers)
        pending = b""
        number = 0
        try:
            for chunk in body:
                pending += chunk
                *complete, pending = pending.split(b"\n")
                for raw in complete:
                    number += 1
                    item = _decode_line(raw, number, self.client_type)
                    if item is not None:
                        yield item
            number += 1
            item = _decode_line(pending, number, self.client_type)
            if item is not None:
                yield item
        finally:
            body.close()

    def _retry(self, call: Any, connection_safe: bool) -> Any:
        attempt = 0
        while True:
            try:
                return call()
            except AgentHubError as exc:
                _scrub(exc, self._secrets())
                transient = isinstance(exc, UpstreamError) or connection_safe
                if not transient or not getattr(exc, "retryable", False) or attempt >= self.max_retries:
                    raise
                wait = getattr(exc, "retry_after", None)
                if wait is not None and wait > RETRY_AFTER_CAP:
                    raise
                if wait is None:
                    wait = random.uniform(0, min(BACKOFF_CAP, BACKOFF_BASE * (2 ** attempt)))
                attempt += 1
                log.info("%s: batch call retried after %s, attempt %d of %d, in %.2fs", self.client_type,
                         type(exc).__name__, attempt, self.max_retries, wait)
                time.sleep(wait)

    def _secrets(self) -> List[str]:
        key = self.endpoint.api_key  # type: Any  # a key, or a credential set (Bedrock) / token provider
        extra = list(self.endpoint.headers.values())
        if isinstance(key, str) and key:
            extra.append(key)
        elif hasattr(key, "secrets"):
            extra.extend(key.secrets())
        try:
            headers = self._headers("GET", self.endpoint.base_url, None, {})
        except AgentHubError:
            headers = {}
        secrets = secret_values(headers, extra)
        secrets.extend(url_secrets(self.endpoint.base_url))
        return sorted(set(s for s in secrets if s), key=len, reverse=True)


class BadLine(object):
    """A results line that is not JSON (handed on, so one bad line does not hide the others)."""

    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        self.reason = reason


def _decode_line(raw: bytes, number: int, client: str) -> Any:
    text = raw.decode("utf-8-sig", "replace").strip()
    if not text:
        return None
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return BadLine("{}: line {} of the batch results is not JSON".format(client, number))


def multipart(fields: Mapping[str, str], file_field: str, filename: str, content: bytes,
              content_type: str = "application/jsonl") -> Tuple[bytes, str]:
    """A multipart/form-data body (RFC 7578) and its Content-Type: text ``fields``, then the file."""
    boundary = "agenthub-{:032x}".format(random.getrandbits(128))
    parts = []  # type: List[bytes]
    for name, value in fields.items():
        parts.append("--{}\r\nContent-Disposition: form-data; name=\"{}\"\r\n\r\n{}\r\n".format(
            boundary, name, value).encode("utf-8"))
    parts.append("--{}\r\nContent-Disposition: form-data; name=\"{}\"; filename=\"{}\"\r\nContent-Type: {}\r\n\r\n".format(
        boundary, file_field, filename, content_type).encode("utf-8"))
    parts.append(content)
    parts.append("\r\n--{}--\r\n".format(boundary).encode("utf-8"))
    return b"".join(parts), "multipart/form-data; boundary=" + boundary


def join(base_url: str, path: str) -> str:
    """``base_url`` and ``path`` as one URL (a trailing slash on the base is tolerated)."""
    return base_url.rstrip("/") + path


def same_origin(url: str, base_url: str) -> bool:
    """True when ``url`` is on the scheme, host and port of ``base_url`` (a URL the server handed back
    is only ever sent the key when it points at the server that holds it)."""
    from ...hosts.trust import url_origin  # the host as the connecting parser reads it

    origin = url_origin(url)
    # (an authority two parsers could read two ways, None, is never this server)
    return origin is not None and origin == url_origin(base_url)
