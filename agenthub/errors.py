"""Every error agenthub raises on purpose.

::

    AgentHubError(Exception)
    ├── ConfigError(AgentHubError, ValueError)      bad model/client_type, malformed message or
    │   │                                           config, missing api key; raised before sending
    │   ├── UnsupportedParameterError               .client .parameter
    │   └── UnsupportedOperationError               .client .operation
    ├── TransportError(AgentHubError, ConnectionError)
    │                                               connect/read failure or timeout (cause chained):
    │                                               .timeout .deadline .aborted .url
    ├── UpstreamError                               HTTP error or in-stream error payload:
    │   │   .client .status .error_type .code .message .retry_after
    │   │                                           .request_id .retryable .url .hint
    │   ├── AuthenticationError                     401 / 403
    │   ├── RateLimitError                          429
    │   └── ServerError                             5xx, 529 overloaded
    ├── BudgetExceededError                         .spent_usd .limit_usd .needed_usd: a request
    │                                               that could exceed an agenthub.Budget, never sent
    ├── OutputValidationError                       typed output (client.parse) that never validated:
    │                                               .candidate_text .candidate_json .problems .attempts
    ├── OutputRefusedError                          typed output the model refused: .refusal .attempts
    └── StreamError
        ├── StreamProtocolError                     stream cut before its terminal marker,
        │                                           or a payload that breaks the protocol
        ├── ToolCallArgumentParseError(StreamError, ValueError)
        │       .client .tool_name .tool_call_id .raw_arguments_length .raw_arguments_preview
        └── EmptyResponseError                      .client .finish_reason .usage_metadata

Every error has ``.retryable`` (False unless the failure is transient).  Beyond this module:
``agenthub.stores.StoreError``, ``agenthub.agent.JournalError``, ``agenthub.typeschema.ConversionError``
and ``agenthub.mcp.MCPError`` (docs/reliability.md, "Errors").

The promise (as h11 makes it): bad input from a caller or a server raises an
AgentHubError subclass; anything else escaping the library is a bug.
Messages never contain an API key, a whole request body or an inline image.
"""

import json
import re
from typing import Any, Dict, List, Mapping, Optional, Tuple
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from ._redact import CUT_MARKER

__all__ = [
    "AgentHubError",
    "ConfigError",
    "UnsupportedParameterError",
    "UnsupportedOperationError",
    "TransportError",
    "UpstreamError",
    "AuthenticationError",
    "RateLimitError",
    "ServerError",
    "StreamError",
    "StreamProtocolError",
    "ToolCallArgumentParseError",
    "EmptyResponseError",
    "BudgetExceededError",
    "OutputValidationError",
    "OutputRefusedError",
    "upstream_error",
    "preview",
    "error_to_json",
    "error_from_json",
    "safe_url",
]

#: HTTP statuses worth retrying before the first event reached the caller.
RETRYABLE_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504, 529})
#: In-stream error types that mean "try again later".
RETRYABLE_ERROR_TYPES = frozenset(
    {"overloaded_error", "rate_limit_error", "rate_limit_exceeded", "api_error", "server_error",
     "internal_server_error", "service_unavailable", "timeout", "overloaded", "RESOURCE_EXHAUSTED",
     "UNAVAILABLE", "INTERNAL"}
)


class AgentHubError(Exception):
    """Base of every error agenthub raises on purpose.

    ``retryable`` says whether asking again (the same request, later) may succeed:
    True for connection failures, timeouts, overload, rate limits and 5xx, and for a
    stream cut before its terminal marker; False for everything else.
    """

    # Every field is declared here or on its subclass (class-level annotations), so type checkers
    # see ``error.retry_after``; at runtime the fields live in the instance ``__dict__`` and in
    # ``_fields`` (what pickling carries and what the server sends as the error's fields).
    retryable: bool = False
    _fields: Dict[str, Any]

    def __init__(self, *args: Any, **fields: Any) -> None:
        super().__init__(*args)
        self.__dict__.update(fields)
        self._fields = fields

    def __reduce__(self) -> Tuple[Any, ...]:  # keep the fields across pickling (process pools, workers)
        return (_rebuild, (type(self), self.args, self._fields))

    @property
    def status_code(self) -> Optional[int]:
        """The HTTP status (the official SDKs' name for it): the same value as ``status``, None when no
        server answered with one (a ConfigError, a TransportError)."""
        status = self.__dict__.get("status")
        return status if isinstance(status, int) and not isinstance(status, bool) else None


def _rebuild(cls: type, args: Any, fields: Any) -> "AgentHubError":
    error = cls.__new__(cls)
    Exception.__init__(error, *args)
    error.__dict__.update(fields)
    error._fields = fields
    return error


class ConfigError(AgentHubError, ValueError):
    """A bad model name, client_type, message, config key or credential; nothing was sent."""


class UnsupportedParameterError(ConfigError):
    """A UniConfig value this model or protocol cannot honour."""

    client: str
    parameter: str

    def __init__(self, message: str = "", client: str = "", parameter: str = "", **fields: Any) -> None:
        super().__init__(message, client=client, parameter=parameter, **fields)


class UnsupportedOperationError(ConfigError):
    """An operation the routed client cannot perform, whatever the input."""

    client: str
    operation: str

    def __init__(self, message: str = "", client: str = "", operation: str = "", **fields: Any) -> None:
        super().__init__(message, client=client, operation=operation, **fields)


class TransportError(AgentHubError, ConnectionError):
    """Connecting, sending or reading failed (timeouts included); the cause is chained.

    ``timeout``: a connect or idle timeout (or the total deadline) fired; ``deadline``: the
    total deadline passed; ``aborted``: the caller stopped the stream (``abort()``); ``forked``:
    the stream was read in another process than the one that opened it (a forked child).
    """

    client: str = ""
    retryable: bool = True
    timeout: bool = False
    deadline: bool = False
    aborted: bool = False
    forked: bool = False
    #: the URL the request went to (no credentials, no secret query parameters; set by the client)
    url: Optional[str] = None


class UpstreamError(AgentHubError):
    """The provider answered with an error: a non-2xx status or an error inside the stream."""

    client: str
    status: Optional[int]
    error_type: Optional[str]
    code: Optional[str]
    message: str
    retry_after: Optional[float]
    request_id: Optional[str]
    #: the URL that answered (no credentials, no secret query parameters): a base_url missing /v1 shows here
    url: Optional[str] = None
    #: what to do about it, in words (set by the client: where the key came from, for a 401)
    hint: Optional[str] = None

    def __init__(
        self,
        message: str = "",
        client: str = "",
        status: Optional[int] = None,
        error_type: Optional[str] = None,
        retry_after: Optional[float] = None,
        request_id: Optional[str] = None,
        retryable: Optional[bool] = None,
        code: Optional[str] = None,
        **fields: Any
    ) -> None:
        if retryable is None:
            retryable = status in RETRYABLE_STATUSES or (error_type in RETRYABLE_ERROR_TYPES)
        super().__init__(
            message,
            client=client,
            status=status,
            error_type=error_type,
            message=message,
            retry_after=retry_after,
            request_id=request_id,
            retryable=retryable,
            code=code,
            **fields
        )

    def __str__(self) -> str:
        head = ", ".join(
            "{}={}".format(k, v)
            for k, v in (("client", self.client), ("status", self.status), ("type", self.error_type),
                         ("url", getattr(self, "url", None)))
            if v not in (None, "")
        )
        hint = getattr(self, "hint", None)
        text = "{}; {}".format(self.message, hint) if hint else self.message
        return "{} ({})".format(text, head) if head else text


class AuthenticationError(UpstreamError):
    """401 or 403: the key is missing, wrong or not allowed."""


class RateLimitError(UpstreamError):
    """429, or an in-stream rate-limit error."""


class ServerError(UpstreamError):
    """5xx, 529 overloaded, or an in-stream overload / server error."""


class StreamError(AgentHubError):
    """The response stream itself went wrong."""


class StreamProtocolError(StreamError):
    """The stream ended before its terminal marker, or broke the protocol or the stream grammar.

    ``truncated`` (and ``retryable``) is True when the body ended before its terminal marker.
    """

    client: str
    truncated: bool = False

    def __init__(self, message: str = "", client: str = "", **fields: Any) -> None:
        super().__init__(message, client=client, **fields)


class ToolCallArgumentParseError(StreamError, ValueError):
    """Streamed tool-call arguments were malformed, truncated or not a JSON object."""

    client: str
    tool_name: str
    tool_call_id: str
    raw_arguments_length: int
    raw_arguments_preview: str

    def __init__(
        self,
        message: str = "",
        client: str = "",
        tool_name: str = "",
        tool_call_id: str = "",
        raw_arguments_length: int = 0,
        raw_arguments_preview: str = "",
        **fields: Any
    ) -> None:
        super().__init__(
            message,
            client=client,
            tool_name=tool_name,
            tool_call_id=tool_call_id,
            raw_arguments_length=raw_arguments_length,
            raw_arguments_preview=raw_arguments_preview,
            **fields
        )


class EmptyResponseError(StreamError):
    """The turn finished with thinking only (or nothing): replaying it would be rejected."""

    client: str
    finish_reason: Optional[str]
    usage_metadata: Optional[Mapping[str, Any]]

    def __init__(
        self,
        message: str = "",
        client: str = "",
        finish_reason: Optional[str] = None,
        usage_metadata: Optional[Mapping[str, Any]] = None,
        **fields: Any
    ) -> None:
        super().__init__(message, client=client, finish_reason=finish_reason, usage_metadata=usage_metadata, **fields)


class BudgetExceededError(AgentHubError):
    """The request could cost more than what is left of its ``agenthub.Budget``: it was not sent.

    ``spent_usd``: what the budget has spent and holds for requests under way; ``limit_usd``: its
    ``max_usd``; ``needed_usd``: the worst case of the request refused.
    """

    spent_usd: float
    limit_usd: float
    needed_usd: float

    def __init__(self, message: str = "", spent_usd: float = 0.0, limit_usd: float = 0.0, needed_usd: float = 0.0,
                 **fields: Any) -> None:
        super().__init__(message, spent_usd=spent_usd, limit_usd=limit_usd, needed_usd=needed_usd, **fields)


_SECRET_QUERY = re.compile(r"key|token|secret|sig|password|passwd|auth|credential|session|x-amz-", re.I)


def safe_url(url: Any) -> Optional[str]:
    """``url`` fit to show: no user:password, no query parameter that may carry a credential, no fragment."""
    if not isinstance(url, str) or not url:
        return None
    try:
        parts = urlsplit(url)
        query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if not _SECRET_QUERY.search(k)]
        return urlunsplit((parts.scheme, parts.netloc.rsplit("@", 1)[-1], parts.path, urlencode(query), ""))
    except ValueError:
        return None


def preview(text: str, limit: int = 160) -> str:
    """At most ``limit`` characters of ``text``: head and tail around a marker when longer."""
    if len(text) <= limit:
        return text
    marker = CUT_MARKER  # (a secret a cut left in pieces is scrubbed by what is left of it: _redact.scrub_cut)
    keep = (limit - len(marker)) // 2
    return text[:keep] + marker + text[len(text) - keep:]


_STATUS_CLASSES = {401: AuthenticationError, 403: AuthenticationError, 429: RateLimitError}
# In-stream error types -> the status a matching HTTP error would have had.
#: error types that no retry can cure, whatever their status (a spent quota answers 429)
NEVER_RETRYABLE_ERROR_TYPES = frozenset({"insufficient_quota", "billing_hard_limit_reached", "billing_not_active"})

_TYPE_STATUSES = {
    "insufficient_quota": 429,
    "overloaded_error": 529,
    "rate_limit_error": 429,
    "rate_limit_exceeded": 429,
    "RESOURCE_EXHAUSTED": 429,
    "api_error": 500,
    "server_error": 500,
    "internal_server_error": 500,
    "INTERNAL": 500,
    "UNAVAILABLE": 503,
    "authentication_error": 401,
    "UNAUTHENTICATED": 401,
    "permission_error": 403,
    "PERMISSION_DENIED": 403,
    "invalid_request_error": 400,
    "INVALID_ARGUMENT": 400,
    "not_found_error": 404,
    "NOT_FOUND": 404,
}


def _retry_delay(details: Any) -> Optional[float]:
    """An RPC-status ``RetryInfo`` detail (``{"@type": "...RetryInfo", "retryDelay": "17s"}``) -> seconds."""
    if not isinstance(details, list):
        return None
    for detail in details:
        if isinstance(detail, dict) and str(detail.get("@type", "")).endswith("RetryInfo"):
            delay = detail.get("retryDelay")
            if isinstance(delay, str) and delay.endswith("s"):
                try:
                    seconds = float(delay[:-1])
                except ValueError:
                    return None
                if seconds == seconds and 0 <= seconds < float("inf"):
                    return seconds
    return None


#: what gateways write in an error's ``type`` when it has none (``str(None)`` among them)
_NO_TYPE = frozenset(["", "None", "none", "null", "NULL"])


def _named(value: Any) -> Optional[str]:
    """An error type or status name as text, None when there is none."""
    if value is None or isinstance(value, bool):
        return None
    text = value if isinstance(value, str) else str(value)
    return None if text.strip() in _NO_TYPE else text


def _numeric_status(code: Any) -> Optional[int]:
    """An HTTP status given as an error's ``code`` (``500`` or ``"500"``), else None."""
    if isinstance(code, bool):
        return None
    if isinstance(code, str) and code.strip().isdigit() and len(code.strip()) == 3:
        code = int(code.strip())
    if isinstance(code, int) and 400 <= code < 600:
        return code
    return None


def _error_class(status: Optional[int]) -> type:
    if status in _STATUS_CLASSES:
        return _STATUS_CLASSES[status]
    if status is not None and (status >= 500):
        return ServerError
    return UpstreamError


def upstream_error(
    client: str,
    payload: Any,
    status: Optional[int] = None,
    retry_after: Optional[float] = None,
    request_id: Optional[str] = None,
    url: Optional[str] = None,
) -> UpstreamError:
    """Build the right UpstreamError subclass from a provider's error payload.

    ``payload`` is the decoded error body (any JSON value, or text): the shapes of
    ``{"error": {"message", "type", "code"}}``, ``{"type": "error", "error": {"type", "message"}}``
    and ``{"error": {"code", "message", "status", "details"}}`` (also wrapped in a one-element list)
    are understood; anything else
    is summarised.  ``status`` is None for errors that arrived inside a 200 stream:
    the error type then picks the status (overloaded -> 529).  ``url`` (shown without
    credentials) is the URL that answered.  A protocol with error shapes of its own reads them
    in its record's ``error_from_body`` hook before it comes here.
    """
    error_type = None
    message = None
    code = None
    body = payload
    if isinstance(body, list) and body and isinstance(body[0], dict):  # an error wrapped in a list
        body = body[0]
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict):
            if retry_after is None:
                retry_after = _retry_delay(inner.get("details"))
            message = inner.get("message")
            code = inner.get("code")
            numeric = _numeric_status(code)
            error_type = _named(inner.get("type")) or _named(inner.get("status"))
            if error_type is None and numeric is None:
                error_type = _named(code)
            if numeric is not None and _named(inner.get("type")) is None and not isinstance(code, int):
                # a status spelled as the code ("500", as gateways write it), with no type beside it:
                # it says what failed better than the status of the answer that carried it
                status = numeric
            if status is None and isinstance(inner.get("status_code"), int):
                status = inner["status_code"]
            if status is None and numeric is not None:
                status = numeric
        elif isinstance(inner, str):
            message = inner
        if message is None and isinstance(body.get("message"), str):
            message = body["message"]
    elif isinstance(body, str):
        message = body.strip()
    if not isinstance(error_type, str):
        error_type = None if error_type is None else str(error_type)
    if code is not None and not isinstance(code, str):
        code = str(code)
    base_type = error_type
    if status is None and base_type in _TYPE_STATUSES:
        status = _TYPE_STATUSES[base_type]
    if not isinstance(message, str) or not message:
        message = preview(json.dumps(payload, default=str) if not isinstance(payload, str) else payload, 300)
        if not message:
            message = "HTTP {}".format(status) if status else "upstream error"
    message = preview(message, 2000)
    retryable = (status in RETRYABLE_STATUSES or base_type in RETRYABLE_ERROR_TYPES) and not (
        base_type in NEVER_RETRYABLE_ERROR_TYPES or code in NEVER_RETRYABLE_ERROR_TYPES)
    return _error_class(status)(
        message,
        client=client,
        status=status,
        error_type=error_type,
        retry_after=retry_after,
        request_id=request_id,
        retryable=retryable,
        code=code,
        url=safe_url(url),
    )



# -- errors as JSON (agenthub serve and the client of an agenthub server) --------------------------

#: the classes an error JSON may name, by class name
_CLASSES = {cls.__name__: cls for cls in (
    AgentHubError, ConfigError, UnsupportedParameterError, UnsupportedOperationError, TransportError, UpstreamError,
    AuthenticationError, RateLimitError, ServerError, StreamError, StreamProtocolError, ToolCallArgumentParseError,
    EmptyResponseError, BudgetExceededError)}
_JSON_SCALARS = (str, int, float, bool, type(None))


def _json_safe(value: Any, depth: int = 0) -> bool:
    if isinstance(value, _JSON_SCALARS):
        return not isinstance(value, float) or value == value and value not in (float("inf"), float("-inf"))
    if depth > 8:
        return False
    if isinstance(value, (list, tuple)):
        return all(_json_safe(v, depth + 1) for v in value)
    if isinstance(value, Mapping):
        return all(isinstance(k, str) and _json_safe(v, depth + 1) for k, v in value.items())
    return False


def error_to_json(error: BaseException) -> dict:
    """``{"error": {"type": <class name>, "message": ..., <its fields>}}`` for an AgentHubError.

    ``type`` is the exact class name (an error that is no AgentHubError becomes a bare
    ``AgentHubError`` saying only that the server failed); the fields are the ones the
    error was made with (status, retry_after, request_id, retryable, ...), those that
    are JSON values.  ``error_from_json`` turns it back into the same error.
    """
    if not isinstance(error, AgentHubError):
        return {"error": {"type": "AgentHubError", "message": "internal server error", "retryable": False}}
    cls = type(error)
    while cls.__name__ not in _CLASSES or _CLASSES[cls.__name__] is not cls:  # a subclass of our own: its base
        cls = cls.__mro__[1]
    fields = getattr(error, "_fields", None) or {}
    out = {"type": cls.__name__}  # type: dict
    message = error.args[0] if error.args and isinstance(error.args[0], str) else str(error)
    out["message"] = message
    for name, value in fields.items():
        # the upstream's URL is the server's own business: a caller of the server never sees it; nor a hint,
        # which speaks of the server's own client (its key variables, its max_retries): the caller's adds its own
        if name not in ("type", "message", "url", "hint") and isinstance(name, str) and _json_safe(value):
            out[name] = list(value) if isinstance(value, tuple) else value
    out["retryable"] = bool(getattr(error, "retryable", False))
    if isinstance(error, StreamProtocolError) and "truncated" not in out:
        out["truncated"] = bool(getattr(error, "truncated", False))
    return {"error": out}


def error_from_json(payload: Any) -> Optional[AgentHubError]:
    """The AgentHubError an ``error_to_json`` document describes (None when it names no agenthub class)."""
    inner = payload.get("error") if isinstance(payload, Mapping) else None
    if not isinstance(inner, Mapping):
        return None
    cls = _CLASSES.get(inner.get("type"))  # type: ignore[arg-type]
    if cls is None:
        return None
    message = inner.get("message")
    message = message if isinstance(message, str) else ""
    # only the fields the class declares, each of its declared type: a document from another process (an
    # agenthub server, maybe a hostile one) sets no attribute the client reads for itself, and no field of
    # a type its readers do not expect (a retry_after that is a string)
    typed = _typed_fields(cls)
    fields = {k: v for k, v in inner.items() if k in typed and _fits(typed[k], v)}
    try:
        return cls(message, **fields)  # the class's own defaults for any field the document left out
    except TypeError:  # a field that collides with a parameter of the constructor
        if issubclass(cls, UpstreamError):
            fields["message"] = message
        return _rebuild(cls, (message,), fields)


_TYPED = {}  # type: Dict[type, Dict[str, Any]]


def _typed_fields(cls: type) -> Dict[str, Any]:
    """The fields an error class declares (its annotations and its bases'), name -> type; message aside."""
    typed = _TYPED.get(cls)
    if typed is None:
        import typing

        typed = {name: hint for name, hint in typing.get_type_hints(cls).items()
                 if not name.startswith("_") and name != "message"}
        _TYPED[cls] = typed
    return typed


def _fits(hint: Any, value: Any) -> bool:
    """``value`` is of the declared type ``hint`` (str, bool, int, float, a Mapping, or Optional of one)."""
    import collections.abc
    import math
    import typing

    if getattr(hint, "__origin__", None) is typing.Union:
        return any(_fits(arm, value) for arm in hint.__args__)
    if hint is type(None):
        return value is None
    if hint is bool:
        return type(value) is bool
    if hint is int:
        return type(value) is int
    if hint is float:
        return type(value) in (int, float) and math.isfinite(value) and value >= 0
    if hint is str:
        return type(value) is str
    if getattr(hint, "__origin__", None) in (dict, collections.abc.Mapping):  # (typing's Mapping[...])
        return type(value) is dict
    return False


def set_field(error: AgentHubError, name: str, value: Any) -> None:
    """Set one of an error's fields after it was built (kept across pickling and by the server)."""
    setattr(error, name, value)
    error._fields[name] = value



class OutputValidationError(AgentHubError):
    """Typed output (``client.parse``, ``client.run(..., output=)``): the answer did not validate as the output
    type, and the re-asks ran out.  ``candidate_text`` / ``candidate_json``: the last answer (its JSON None when
    it was not JSON); ``problems``: each attempt's problems (``path: what``); ``attempts``; ``usage_metadata``
    and ``cost_usd``: every attempt's, summed (a tool run's: the whole run's so far).  ``candidate`` and
    ``errors``: the API's names for the last answer (text and JSON in one dict) and ``problems``."""

    candidate_text: Optional[str]
    candidate_json: Any
    problems: List[List[str]]
    attempts: int
    usage_metadata: Optional[Mapping[str, Any]]
    cost_usd: Optional[float]

    # the API's names for the same fields (API.md: ``.candidate`` (last text and JSON), ``.errors`` (per attempt))
    @property
    def candidate(self) -> Dict[str, Any]:
        """The last answer: ``{"text": candidate_text, "json": candidate_json}``."""
        return {"text": self.__dict__.get("candidate_text"), "json": self.__dict__.get("candidate_json")}

    @property
    def errors(self) -> List[List[str]]:
        """Each attempt's problems: ``problems`` under the API's name."""
        return self.__dict__.get("problems") or []


class OutputRefusedError(AgentHubError):
    """Typed output: the model refused (a refusal item, or a turn that ended for a reason other than its
    answer, with no JSON); never re-asked.  ``refusal``: what it said; ``finish_reason``; ``attempts``;
    ``usage_metadata`` and ``cost_usd`` as OutputValidationError's."""

    refusal: str
    finish_reason: Optional[str]
    attempts: int
    usage_metadata: Optional[Mapping[str, Any]]
    cost_usd: Optional[float]
