"""HTTP for the batch backends: one ``Wire`` per endpoint (its key, its session), JSON calls and
raw downloads through ``agenthub.transport``, transient failures retried by the one attempt loop
(``agenthub.attempts.run_attempts``: its backoff, Retry-After cap and scrubbing).

The key travels as the endpoint's host sends it (``agenthub.hosts``: ``Authorization: Bearer``,
``api-key`` or an Entra token for Azure, ``x-api-key`` for Anthropic, ``x-goog-api-key`` for
Gemini), authorised per call, so a token provider is asked afresh every time.  URLs are absolute
(``url(path)`` is the host's own URL rule for the paths it knows).  Errors are scrubbed of every
header value sent, and so are the JSON answers (``json``) and the results lines (``lines``): a server that
echoes the key, or the ``Basic`` base64 of a base URL's ``user:password@``, echoes ``***``.
"""

import json
import logging
import random
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Tuple

from ... import hosts, transport
from ...attempts import RETRY_AFTER_CAP, Attempt, AttemptHook, Timeout, run_attempts
from ..._redact import secret_values, url_query_secrets
from ...errors import AgentHubError, UpstreamError
from ...providers._common import Endpoint
from ...sse import DEFAULT_MAX_LINE_BYTES
from ...types import HttpRequest
from ..._jsondepth import loads as _json_loads

__all__ = ["Wire", "BadLine", "join", "multipart", "same_origin", "RETRY_AFTER_CAP"]

log = logging.getLogger("agenthub")

#: a results line longer than the line limit is read past up to this many times the limit, then the download stops
SKIP_FACTOR = 16

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
        self.max_line_bytes = DEFAULT_MAX_LINE_BYTES  # the longest results line read (a longer one: a BadLine)
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

        def connect(sent: Any, limits: Any, watch: Any) -> Any:
            return transport.open_stream(self.session, sent, limits, self.client_type, watch=watch,
                                         error_from_body=self._record.error_from_body)

        document = self._retry(lambda: self._request(method, url, body, data, headers), connect,
                               lambda answer: (answer.document,), safe)
        return _scrubbed(document, self._secrets())

    def raw(self, method: str, url: str, body: Any = None, data: Optional[bytes] = None,
            headers: Optional[Mapping[str, str]] = None, accept: str = "*/*",
            idempotent: Optional[bool] = None) -> Any:
        """The answer as it is (``transport.RawBody``: ``headers``, iterate for bytes, ``read()``)."""
        safe = method == "GET" if idempotent is None else idempotent

        def connect(sent: Any, limits: Any, watch: Any) -> Any:
            return _Opened(transport.open_raw(self.session, sent, limits, self.client_type,
                                              self._record.error_from_body))

        return self._retry(lambda: self._request(method, url, body, data, headers, accept), connect, _Opened.hand,
                           safe)

    def lines(self, url: str, headers: Optional[Mapping[str, str]] = None) -> Iterator[Any]:
        """A JSON Lines download, one decoded object per line as the bytes arrive (memory: one line, at most
        ``max_line_bytes``).  The unfinished line is kept as its pieces and only each new piece is searched
        (linear in a line's size); a line longer than ``max_line_bytes`` is a BadLine (its bytes are read
        past, not kept), and the lines after it still come through, unless it goes on past
        ``SKIP_FACTOR`` times the limit: then the download stops there (a line that never ends is not read
        forever), with a BadLine that says the rest was not read."""
        body = self.raw("GET", url, headers=headers)
        secrets = [secret.encode("utf-8") for secret in self._secrets()]  # an echoed credential is *** in the rows
        limit = self.max_line_bytes
        pending = []  # type: List[bytes]  # the unfinished line's pieces (none holds a newline)
        size = 0
        skipping = False  # inside a line above the limit
        skipped = 0  # bytes of that line read past
        number = 0
        try:
            for chunk in body:
                start = 0
                end = chunk.find(b"\n")
                while end >= 0:
                    number += 1
                    if skipping:
                        skipping = False
                        item = _too_long(number, limit, self.client_type)  # type: Any
                    elif size + end - start > limit:
                        item = _too_long(number, limit, self.client_type)
                    else:
                        pending.append(chunk[start:end])
                        item = _decode_line(_clean(b"".join(pending), secrets), number, self.client_type)
                    pending, size = [], 0
                    if item is not None:
                        yield item
                    start = end + 1
                    end = chunk.find(b"\n", start)
                if skipping:
                    skipped += len(chunk) - start
                    if skipped > SKIP_FACTOR * limit:  # no end in sight: stop reading (bounded in time too)
                        yield BadLine("{}: line {} of the batch results goes on past {} bytes: the download "
                                      "stopped there, the rest of the results was not read".format(
                                          self.client_type, number + 1, SKIP_FACTOR * limit))
                        return
                    continue
                if start >= len(chunk):
                    continue
                size += len(chunk) - start
                if size > limit:
                    skipping, pending, skipped, size = True, [], size, 0
                else:
                    pending.append(chunk[start:] if start else chunk)
            number += 1
            if skipping:
                yield _too_long(number, limit, self.client_type)
            else:
                item = _decode_line(_clean(b"".join(pending), secrets), number, self.client_type)
                if item is not None:
                    yield item
        finally:
            body.close()

    def _retry(self, request: Callable[[], HttpRequest], connect: Any, read: Any, connection_safe: bool) -> Any:
        """``request()`` through the attempt loop (a document call; built per attempt, so a signature or a
        token is good for that send only): a failure is retried when the server
        said it is transient, or when it failed on the way and the call is safe to repeat
        (``connection_safe``); the answer ``read`` gives."""
        watch = transport.Watch()
        call = Attempt("document", self.client_type, "", request)  # the plan is the builder: each attempt builds anew
        answers = run_attempts(call, watch, encode=lambda build: build(),
                               connect=lambda sent, limits: connect(sent, limits, watch), read=read,
                               hooks=[_Transient(connection_safe)], max_retries=self.max_retries,
                               timeout=Timeout.of(self.timeout), secrets=lambda sent, config: self._secrets())
        try:
            return next(answers)
        finally:
            answers.close()  # type: ignore[attr-defined]

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
        secrets.extend(url_query_secrets(self.endpoint.base_url))
        secrets.extend(transport.session_secrets(self.session))  # a caller's session: its headers, auth, proxies
        return sorted(set(s for s in secrets if s), key=len, reverse=True)


class _Transient(AttemptHook):
    """A batch call's retry rule: an upstream answer the server calls transient, or a failure on the way
    when the call is safe to repeat (a POST that creates something is not)."""

    def __init__(self, connection_safe: bool) -> None:
        self.connection_safe = connection_safe

    def on_error(self, attempt: Attempt, error: AgentHubError) -> None:
        if not (isinstance(error, UpstreamError) or self.connection_safe):
            attempt.retry = False


class _Opened(object):
    """A ``transport.RawBody`` as the attempt loop holds a body: opened already, handed to the caller
    as it is (the loop's close after the hand-over leaves it to the caller)."""

    def __init__(self, body: Any) -> None:
        self.body = body
        self.status = body.status
        self.headers = body.headers
        self.handed = False

    def open(self, document: bool = True) -> bool:
        return True

    def hand(self) -> Any:
        self.handed = True
        return (self.body,)

    def finish(self) -> None:
        pass

    def close(self) -> None:
        if not self.handed:
            self.body.close()


class BadLine(object):
    """A results line that is not JSON (handed on, so one bad line does not hide the others)."""

    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        self.reason = reason


def _clean(raw: bytes, secrets: List[bytes]) -> bytes:
    """A results line with every credential in ``secrets`` (longest first) as ``***``."""
    for secret in secrets:
        if secret in raw:
            raw = raw.replace(secret, b"***")
    return raw


def _scrubbed(document: Any, secrets: List[str]) -> Any:
    """A JSON answer (freshly parsed: changed in place) with every credential in ``secrets`` as ``***`` in its
    strings, keys and values (walked without recursion: a deep answer is no RecursionError)."""
    if not secrets:
        return document

    def clean(text: str) -> str:
        for secret in secrets:
            if secret in text:
                text = text.replace(secret, "***")
        return text

    if isinstance(document, str):
        return clean(document)
    stack = [document]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            for index, item in enumerate(node):
                if isinstance(item, str):
                    node[index] = clean(item)
                elif isinstance(item, (list, dict)):
                    stack.append(item)
        elif isinstance(node, dict):
            for key in list(node):
                item = node[key]
                if isinstance(item, str):
                    item = clean(item)
                elif isinstance(item, (list, dict)):
                    stack.append(item)
                new_key = clean(key) if isinstance(key, str) else key
                if new_key != key:
                    del node[key]
                node[new_key] = item
    return document


def _too_long(number: int, limit: int, client: str) -> "BadLine":
    return BadLine("{}: line {} of the batch results is longer than {} bytes".format(client, number, limit))


def _decode_line(raw: bytes, number: int, client: str) -> Any:
    text = raw.decode("utf-8-sig", "replace").strip()
    if not text:
        return None
    try:
        return _json_loads(text)
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
    """``base_url`` and ``path`` as one URL (a trailing slash on the base is tolerated; its query string goes
    after the path's own: ``hosts.trust.join_url``)."""
    from ...hosts.trust import join_url

    return join_url(base_url, path)


def same_origin(url: str, base_url: str) -> bool:
    """True when ``url`` is on the scheme, host and port of ``base_url`` (a URL the server handed back
    is only ever sent the key when it points at the server that holds it)."""
    from ...hosts.trust import url_origin  # the host as the connecting parser reads it

    origin = url_origin(url)
    # (an authority two parsers could read two ways, None, is never this server)
    return origin is not None and origin == url_origin(base_url)
