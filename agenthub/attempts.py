"""The attempt loop's seam: ``Attempt`` (one call as the loop runs it), ``AttemptHook`` (what builds on
the loop: a rate limiter, a budget, the tracer, telemetry, a response cache), the retry policy's
constants, ``backoff`` and ``scrub``, and the process-wide hooks (``register`` / ``unregister``).

Hooks are given to a client (``AutoLLMClient(..., hooks=[...])``, read back as the tuple
``client.hooks``) or registered for the whole process (``register(hook)``: they run on every call of
every client, after the client's own).  For one logical call (one ``streaming_response``, one model
list page, one token count), in this order:

- ``on_call_start(call)``, once, before any route or attempt.  A hook may set ``call.answer`` to an
  iterable of UniEvents: then nothing is sent, no route is tried, no ``before_attempt`` runs, and
  those events are the call's answer (a response cache answers a hit so; it sets ``call.cache``).
  Every hook's ``on_call_start`` runs (a later one sees ``call.answer`` already set).
- per attempt, of every route of a failover call (a fallback's attempts run the primary's hooks
  too): ``before_attempt(a)`` before it is encoded and sent, ``after_response(a)`` once a 2xx head
  arrived, ``on_error(a, error)`` when it failed (``a.retry`` and ``a.delay`` hold the decision and
  may be changed), ``on_done(a)`` once per route when that route's attempts end.  ``a.call`` is the
  logical call.
- ``on_event(call, event)`` for every event yielded to the caller, in order, only when some hook of
  the call has ``wants_events = True`` (a class attribute, False by default): a call without such a
  hook pays nothing per event.
- ``on_call_end(call)``, once, when the call ends: ``call.error`` (None on success or when the
  caller closed the stream early), ``call.route`` (the route that answered), ``call.usage``,
  ``call.finish_reason``, ``call.first_event_ms``.

An AgentHubError raised by ``before_attempt`` or ``after_response`` is that attempt's failure (retried
when it is retryable, as any other); ``on_call_start`` raising ends the call before anything is sent.
With no process-wide hook registered, the cost is one empty-tuple check per call.
"""

import random
import threading
import time
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple

from .errors import AgentHubError

__all__ = ["Attempt", "AttemptHook", "register", "unregister", "registered", "backoff", "scrub",
           "BACKOFF_BASE", "BACKOFF_CAP", "RETRY_AFTER_CAP"]

#: retry backoff: full jitter over base * 2**attempt seconds, capped (``agenthub.client.BACKOFF_BASE`` is this value)
BACKOFF_BASE = 0.5
BACKOFF_CAP = 8.0
#: a server's Retry-After is honoured up to this many seconds; a longer one is not waited for
RETRY_AFTER_CAP = 60.0


class Attempt(object):
    """One call (a stream, or one JSON document such as a model list page) as the attempt loop runs
    it, and what its hooks see and may change.  The logical call is an Attempt too (``a.call``; for
    the first route's attempts it is the same object).

    Read: ``kind`` ("stream" or "document"), ``client_type``, ``model``, ``messages`` and ``config``
    (None for a document), ``number`` (this attempt on this route, 0-based), ``attempts`` (on the
    call: attempts begun so far, every route counted), ``sent`` (the request as encoded for this
    attempt: its headers hold a credential, never log them), ``status`` and ``headers`` (the
    answer's head, an error answer's too; None before it or when none came), ``delivered`` (events
    handed to the caller so far), ``usage`` and ``finish_reason`` (the stop event's, once it passed),
    ``first_event_ms`` (created_at of the first event), ``started_ms`` (when the call or route
    started, Unix ms), ``route`` ({"model", "client_type", "host"} this attempt goes to; on the call:
    the route that answered), ``server`` ((host, port) the request connects to), ``response_id``
    (a background response's id once known; else None), ``cache`` (None, or "hit" when a hook
    answered the call), ``error`` (this attempt's failure, scrubbed; on_done / on_call_end: the
    call's, None when it succeeded or was closed), ``resuming`` (a background response's id when this
    attempt is the GET that resumes its stream after a cut; None otherwise).
    May change: ``request`` (the plan the next attempt encodes: an ``HttpRequest`` whose ``.url`` is
    the path and ``.body`` the JSON body, before the host adds URL and credential; before_attempt may
    swap it), ``retry`` and ``delay`` (on_error: whether and after how many seconds to try again),
    ``answer`` (on_call_start: events that answer the call instead of sending it).
    ``wait(seconds)`` sleeps in a way ``abort()`` and the deadline cut short (False when they did).
    """

    __slots__ = ("kind", "client_type", "model", "messages", "config", "request", "number", "sent", "status",
                 "headers", "delivered", "usage", "error", "retry", "delay", "fallback", "watch", "resuming",
                 "call", "route", "server", "finish_reason", "first_event_ms", "started_ms", "response_id", "cache",
                 "answer", "attempts")

    def __init__(self, kind: str, client_type: str, model: str, request: Any,
                 messages: Optional[List[Any]] = None, config: Optional[Mapping[str, Any]] = None,
                 call: Optional["Attempt"] = None, route: Optional[Dict[str, Any]] = None) -> None:
        self.kind = kind
        self.client_type = client_type
        self.model = model
        self.messages = messages
        self.config = config
        self.request = request
        self.number = 0
        self.sent = request
        self.status = None  # type: Optional[int]
        self.headers = None  # type: Optional[Mapping[str, str]]
        self.delivered = 0
        self.usage = None  # type: Any
        self.error = None  # type: Optional[AgentHubError]
        self.retry = False
        self.delay = None  # type: Optional[float]
        self.fallback = None  # type: Optional[Iterable[Any]]
        self.watch = None  # type: Any  # the transport's Watch (abort and deadline)
        self.resuming = None  # type: Optional[str]
        self.call = self if call is None else call  # type: Attempt
        self.route = route  # type: Optional[Dict[str, Any]]
        self.server = None  # type: Optional[Tuple[str, int]]
        self.finish_reason = None  # type: Optional[str]
        self.first_event_ms = None  # type: Optional[int]
        self.started_ms = int(time.time() * 1000)
        self.response_id = None  # type: Optional[str]
        self.cache = None  # type: Optional[str]
        self.answer = None  # type: Optional[Iterable[Any]]
        self.attempts = 0

    def wait(self, seconds: float) -> bool:
        """Sleep ``seconds`` (a rate limiter's pause); False when the call was aborted or ran out of time."""
        return self.watch.sleep(seconds) if self.watch is not None else (time.sleep(max(0.0, seconds)) or True)

    def __repr__(self) -> str:
        return "<Attempt {} {} #{} status={} delivered={}>".format(self.kind, self.client_type, self.number,
                                                                 self.status, self.delivered)


class AttemptHook(object):
    """The seam of the attempt loop: subclass it and override what you need (each does nothing here).
    The module docstring says when each method runs."""

    #: True: ``on_event`` is called for every event of the calls this hook sees (costs per event)
    wants_events = False

    def on_call_start(self, call: Attempt) -> None:
        """Once per logical call, before any route or attempt; may set ``call.answer`` (see the module)."""

    def before_attempt(self, attempt: Attempt) -> None:
        """Before each attempt is encoded and sent (a rate limiter's acquire, a budget's reservation)."""

    def after_response(self, attempt: Attempt) -> None:
        """The answer's head arrived with a 2xx status (``attempt.status``, ``attempt.headers``)."""

    def on_error(self, attempt: Attempt, error: AgentHubError) -> None:
        """An attempt failed; ``attempt.retry`` and ``attempt.delay`` hold the decision, which may change."""

    def on_done(self, attempt: Attempt) -> None:
        """A route's attempts ended (once per route): finished, failed (``attempt.error``) or closed."""

    def on_event(self, call: Attempt, event: Any) -> None:
        """An event reached the caller (only when ``wants_events`` is True)."""

    def on_call_end(self, call: Attempt) -> None:
        """Once per logical call, when it ended (``call.error``, ``call.route``, ``call.usage``, ...)."""


_registered = ()  # type: Tuple[AttemptHook, ...]
_registry_lock = threading.Lock()


def register(hook: AttemptHook) -> None:
    """Run ``hook`` on every call of every client in this process, after the client's own hooks
    (registering the same hook twice keeps one)."""
    global _registered
    if not callable(getattr(hook, "before_attempt", None)):
        from .errors import ConfigError

        raise ConfigError("register takes an AttemptHook (got {})".format(type(hook).__name__))
    with _registry_lock:
        if not any(existing is hook for existing in _registered):
            _registered = _registered + (hook,)


def unregister(hook: AttemptHook) -> None:
    """Stop running ``hook`` process-wide (one that was not registered: nothing happens)."""
    global _registered
    with _registry_lock:
        _registered = tuple(existing for existing in _registered if existing is not hook)


def registered() -> Tuple[AttemptHook, ...]:
    """The process-wide hooks, in the order they run."""
    return _registered


def backoff(attempt: int, retry_after: Optional[float]) -> Optional[float]:
    """Seconds to wait before retry number ``attempt + 1``: the server's Retry-After when it gave one
    (None when it asks for longer than ``RETRY_AFTER_CAP``), else full jitter over
    ``BACKOFF_BASE * 2**attempt`` capped at ``BACKOFF_CAP`` (the constants read at call time)."""
    if retry_after is not None:
        if retry_after > RETRY_AFTER_CAP:
            return None
        return max(0.0, retry_after)
    return random.uniform(0, min(BACKOFF_CAP, BACKOFF_BASE * (2 ** attempt)))


def scrub(error: AgentHubError, secrets: List[str]) -> None:
    """Replace any credential an upstream echoed back with '***' (in args and text fields)."""
    if not secrets:
        return

    def clean(value: Any) -> Any:
        if isinstance(value, str):
            for secret in secrets:
                if secret in value:
                    value = value.replace(secret, "***")
        return value

    error.args = tuple(clean(a) for a in error.args)
    for name, value in list(vars(error).items()):
        if isinstance(value, str):
            setattr(error, name, clean(value))
    fields = getattr(error, "_fields", None)
    if isinstance(fields, dict):
        for name, value in list(fields.items()):
            fields[name] = clean(value)
