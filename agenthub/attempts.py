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
  caller closed the stream early), ``call.raised`` (the class of any other exception that ended it),
  ``call.route`` (the route that answered), ``call.usage``, ``call.finish_reason``, ``call.first_event_ms``.

An AgentHubError raised by ``before_attempt`` or ``after_response`` is that attempt's failure (retried
when it is retryable, as any other); ``on_call_start`` raising ends the call before anything is sent.
With no process-wide hook registered, the cost is one empty-tuple check per call.
"""

import logging
import random
import threading
import time
from typing import Any, Callable, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple

from ._redact import scrub_text
from .errors import AgentHubError, ConfigError
from .resume import RESUMED

__all__ = ["Attempt", "AttemptHook", "Timeout", "register", "unregister", "registered", "run_attempts", "backoff", "scrub",
           "BACKOFF_BASE", "BACKOFF_CAP", "RETRY_AFTER_CAP"]

logger = logging.getLogger("agenthub")

#: retry backoff: full jitter over base * 2**attempt seconds, capped (``agenthub.client.BACKOFF_BASE`` is this value)
BACKOFF_BASE = 0.5
BACKOFF_CAP = 8.0
#: a server's Retry-After is honoured up to this many seconds; a longer one is not waited for
RETRY_AFTER_CAP = 60.0
#: default seconds to connect, and of silence allowed between received bytes (reasoning models think quietly)
DEFAULT_CONNECT_TIMEOUT = 10.0
DEFAULT_READ_TIMEOUT = 600.0
#: default seconds a model stream may send only SSE comments, blank lines or keep-alive bytes (no event): three
#: times ``read``, so a stream that stays "alive" on keep-alives alone still ends
DEFAULT_EVENTS_TIMEOUT = 1800.0


# -- timeouts (agenthub.Timeout; the client's name for it too) -------------------------------------------------------------------------------------


class Timeout(object):
    """How long to wait: ``connect`` seconds to connect, ``read`` seconds of silence between
    received bytes (the idle timeout: it restarts with every byte, so a slow but living stream
    never trips it), an optional ``total`` deadline for the whole call (retries and backoff
    included), and ``events`` (agenthub's own): the longest a model's SSE stream may go on with
    no event, only comments, blank lines and keep-alive bytes (which ``read`` counts as liveness).
    None means no limit.

    ``AutoLLMClient(timeout=...)`` takes a Timeout, or requests' convention: a number (used
    for connect and read), a ``(connect, read)`` tuple, or a dict with any of ``connect``,
    ``read``, ``total`` and ``events``.  Defaults: connect 10 s, read 600 s, no total, events 1800 s.
    """

    __slots__ = ("connect", "read", "total", "events")

    def __init__(self, connect: Optional[float] = DEFAULT_CONNECT_TIMEOUT,
                 read: Optional[float] = DEFAULT_READ_TIMEOUT, total: Optional[float] = None,
                 events: Optional[float] = DEFAULT_EVENTS_TIMEOUT) -> None:
        for name, value in (("connect", connect), ("read", read), ("total", total), ("events", events)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                      or not value > 0):
                raise ConfigError("timeout {} must be a positive number of seconds or None (got {!r})".format(
                    name, value))
            if value is not None and value > threading.TIMEOUT_MAX:  # (a socket's or a lock's wait cannot be longer)
                raise ConfigError("timeout {} of {!r} s is longer than a wait can be ({:.0f} s): give None for no "
                                  "limit".format(name, value, threading.TIMEOUT_MAX))
        self.connect = None if connect is None else float(connect)
        self.read = None if read is None else float(read)
        self.total = None if total is None else float(total)
        self.events = None if events is None else float(events)

    @classmethod
    def of(cls, value: Any) -> "Timeout":
        """Normalise what ``AutoLLMClient(timeout=...)`` accepts into a Timeout."""
        if value is None:
            return cls()
        if isinstance(value, Timeout):
            return value
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return cls(value, value)
        if isinstance(value, tuple) and len(value) == 2:
            return cls(value[0], value[1])
        if isinstance(value, Mapping):
            unknown = sorted(str(k) for k in value if k not in cls.__slots__)
            if unknown:
                raise ConfigError("unknown timeout key(s) {}; known: connect, read, total, events".format(unknown))
            return cls(value.get("connect", DEFAULT_CONNECT_TIMEOUT), value.get("read", DEFAULT_READ_TIMEOUT),
                       value.get("total"), value.get("events", DEFAULT_EVENTS_TIMEOUT))
        raise ConfigError("timeout must be None, seconds, a (connect, read) tuple, a dict or a Timeout "
                          "(got {})".format(type(value).__name__))

    def _fields(self) -> Tuple[Optional[float], Optional[float], Optional[float], Optional[float]]:
        return (self.connect, self.read, self.total, self.events)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Timeout) and self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        return "Timeout(connect={!r}, read={!r}, total={!r}, events={!r})".format(*self._fields())

    def __getstate__(self) -> Tuple[Optional[float], Optional[float], Optional[float], Optional[float]]:
        return self._fields()

    def __setstate__(self, state: Tuple[Optional[float], ...]) -> None:
        # (a Timeout pickled before ``events`` existed has three fields: it gets the default)
        self.connect, self.read, self.total = state[:3]
        self.events = state[3] if len(state) > 3 else DEFAULT_EVENTS_TIMEOUT


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
    (the answer's id: a background response's once known, else the stop event's ``response_id`` where the
    wire carries one; else None), ``provider`` (``gen_ai.provider.name`` of the route: the registry row or
    client-type row the caller chose, ``agenthub.registry.provider_name``; None where no client set it),
    ``response_model`` (the model the server said answered, where the wire carries it; else None),
    ``cache`` (None, or "hit" when a hook
    answered the call), ``error`` (this attempt's failure, scrubbed; on_done / on_call_end: the
    call's, None when it succeeded or was closed), ``raised`` (on_call_end: the class of an exception other
    than an AgentHubError that ended the call, a KeyboardInterrupt or a hook's own; None otherwise, a closed
    stream included), ``resuming`` (a background response's id when this
    attempt is the GET that resumes its stream after a cut, or re-attaches to it: a journaled run resumed
    after a crash, ``AutoLLMClient._reattach``; None otherwise), ``routes_left`` (on the
    call: how many failover routes come after the one being tried; 0 on the last route, or with no
    fallbacks: a rate limiter's pause of this endpoint sends a call that has somewhere else to go there),
    ``tier`` (the catalog tier the route's endpoint bills at above the model's standard prices,
    ``catalog.endpoint_tier``: ``regional`` for Claude on a Vertex AI regional endpoint; None otherwise),
    ``cut_usd`` (None, or what a Budget counted for attempts the provider accepted that brought no answer: cut,
    timed out or aborted after their 2xx head, each at its whole hold, since what the provider billed for
    them is unknown; on the call: every route's), ``account`` (a mark of the credentials the route's client sends,
    ``breaker.account_mark``, never a credential: a rate limiter's pause of a 429 holds that account's requests;
    None when it sends none, or is not known).
    May change: ``request`` (the plan the next attempt encodes: an ``HttpRequest`` whose ``.url`` is
    the path and ``.body`` the JSON body, before the host adds URL and credential; before_attempt may
    swap it), ``retry`` and ``delay`` (on_error: whether and after how many seconds to try again),
    ``answer`` (on_call_start: events that answer the call instead of sending it), ``rejected`` (on the call:
    set True by the caller that read the answer and found it unusable, typed output's answer that did not
    validate or a refusal; a response cache neither keeps such an answer nor a replayed one it held).
    ``wait(seconds)`` sleeps in a way ``abort()`` and the deadline cut short (False when they did);
    ``input_parts()`` is the local estimate of the request's input (``agenthub.estimate.estimate_parts`` of
    ``messages`` and ``config``), made once (a route's retries are one Attempt) and shared by the hooks that read it.
    """

    __slots__ = ("kind", "client_type", "model", "messages", "config", "request", "number", "sent", "status",
                 "headers", "delivered", "usage", "error", "retry", "delay", "watch", "resuming",
                 "call", "route", "server", "finish_reason", "first_event_ms", "started_ms", "response_id", "cache",
                 "answer", "attempts", "routes_left", "provider", "response_model", "cut_usd", "raised", "rejected",
                 "tier", "account", "_parts", "_cancelled")

    def __init__(self, kind: str, client_type: str, model: str, request: Any,
                 messages: Optional[List[Any]] = None, config: Optional[Mapping[str, Any]] = None,
                 call: Optional["Attempt"] = None, route: Optional[Dict[str, Any]] = None,
                 server: Optional[Tuple[str, int]] = None, provider: Optional[str] = None,
                 account: Optional[str] = None) -> None:
        self.kind = kind
        self.provider = provider
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
        self.raised = None  # type: Optional[type]  # (a class, not the exception: no cycle through its frames)
        self.retry = False
        self.delay = None  # type: Optional[float]
        self.watch = None  # type: Any  # the transport's Watch (abort and deadline)
        self.resuming = None  # type: Optional[str]
        self.call = self if call is None else call  # type: Attempt
        self.route = route  # type: Optional[Dict[str, Any]]
        self.server = server  # type: Optional[Tuple[str, int]]  # known before the first hook runs
        self.finish_reason = None  # type: Optional[str]
        self.first_event_ms = None  # type: Optional[int]
        self.started_ms = int(time.time() * 1000)
        self.response_id = None  # type: Optional[str]
        self.response_model = None  # type: Optional[str]
        self.cache = None  # type: Optional[str]
        self.answer = None  # type: Optional[Iterable[Any]]
        self.attempts = 0
        self.routes_left = 0
        self.cut_usd = None  # type: Optional[float]
        self.rejected = False
        self.tier = None  # type: Optional[str]  # the catalog tier the route's endpoint bills at (Vertex AI regional)
        self.account = account  # a mark of the route's credentials (breaker.account_mark), never one
        self._parts = None  # type: Optional[Tuple[int, int, int]]  # (input_parts: made once)
        #: the background response this call cancelled (its caller stopped the stream: abort, close), once the
        #: server took the cancel (a journaled run marks it detached: a resume sends the turn again)
        self._cancelled = None  # type: Optional[str]

    def input_parts(self) -> Tuple[int, int, int]:
        """``estimate.estimate_parts`` of ``messages`` and ``config`` (the input estimate, its audio part, the audio
        items of no known length), made once: a Budget's hold and a rate limiter's estimate both read it, so each
        audio item's bytes are read once a request, not once a hook (a retry's attempt sends the same input)."""
        parts = self._parts
        if parts is None:
            from .estimate import estimate_parts

            parts = self._parts = estimate_parts(self.messages or (), self.config)
        return parts

    def wait(self, seconds: float) -> bool:
        """Sleep ``seconds`` (a rate limiter's pause); False when the call was aborted or ran out of time."""
        if self.watch is not None:
            return self.watch.sleep(seconds)
        time.sleep(min(max(0.0, seconds), threading.TIMEOUT_MAX))
        return True

    def __repr__(self) -> str:
        return "<Attempt {} {} #{} status={} delivered={}>".format(self.kind, self.client_type, self.number,
                                                                 self.status, self.delivered)


class AttemptHook(object):
    """The seam of the attempt loop: subclass it and override what you need (each does nothing here).
    The module docstring says when each method runs."""

    #: True: ``on_event`` is called for every event of the calls this hook sees (costs per event)
    wants_events = False
    #: the name of the attribute holding what this hook acts for (a budget, a limiter), or None: two hooks of
    #: one class for the same object are one (a fallback's own hooks merged with the call's run it once)
    shares = None  # type: Optional[str]

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
    return random.uniform(0, min(BACKOFF_CAP, BACKOFF_BASE * (2.0 ** min(attempt, 64))))  # (2**1024: no float)


def scrub(error: AgentHubError, secrets: List[str]) -> None:
    """Replace any credential an upstream echoed back with '***' (in args and text fields)."""
    if not secrets:
        return

    def clean(value: Any) -> Any:
        return scrub_text(value, secrets) if isinstance(value, str) else value

    error.args = tuple(clean(a) for a in error.args)
    for name, value in list(vars(error).items()):
        if isinstance(value, str):
            setattr(error, name, clean(value))
    fields = getattr(error, "_fields", None)
    if isinstance(fields, dict):
        for name, value in list(fields.items()):
            fields[name] = clean(value)


# -- the attempt loop ------------------------------------------------------------------------------


def hooks_for(hooks: Sequence[AttemptHook]) -> Sequence[AttemptHook]:
    """``hooks`` (a client's), then the process-wide ones (one empty-tuple check when there are none)."""
    if not _registered:
        return hooks
    return _registered if not hooks else list(hooks) + list(_registered)


def wants_events(hooks: Sequence[AttemptHook]) -> bool:
    """Does some hook ask for ``on_event``?"""
    for hook in hooks:
        if getattr(hook, "wants_events", False):
            return True
    return False


def with_events(call: Attempt, hooks: Sequence[AttemptHook], events: Iterator[Any]) -> Iterator[Any]:
    """``events``, each shown to the hooks' ``on_event`` as it passes (used only when one asks)."""
    listeners = [hook for hook in hooks if getattr(hook, "wants_events", False)]
    try:
        for event in events:
            for hook in listeners:
                hook.on_event(call, event)
            yield event
    finally:
        events.close()  # type: ignore[attr-defined]


def same_route(route: Optional[Mapping[str, Any]], other: Optional[Mapping[str, Any]]) -> bool:
    """Do two routes (``Attempt.route``) name one endpoint: model, client type and host (a cache hit's mark aside)?"""
    return bool(route) and bool(other) and all(
        route.get(key) == other.get(key) for key in ("model", "client_type", "host"))  # type: ignore[union-attr]


def start_call(call: Attempt, hooks: Sequence[AttemptHook]) -> Optional[Iterable[Any]]:
    """``on_call_start`` of every hook; the events a hook answered the call with (``call.answer``), or None."""
    for hook in hooks:
        hook.on_call_start(call)
    return call.answer


def each_hook(hooks: Sequence[AttemptHook], method: str, call: Attempt) -> None:
    """``hook.<method>(call)`` for every hook, whatever one raises (a budget's settlement failing on its store must
    not skip the limiter's, nor the caller's hooks); then the first error, if one raised."""
    first = None  # type: Optional[BaseException]
    for hook in hooks:
        try:
            getattr(hook, method)(call)
        except BaseException as exc:  # noqa: BLE001 - raised below, once every hook ran
            if first is None:
                first = exc
    if first is not None:
        raise first


def end_call(call: Attempt, hooks: Sequence[AttemptHook]) -> None:
    each_hook(hooks, "on_call_end", call)


def answered(call: Attempt, events: Iterable[Any]) -> Iterator[Any]:
    """The events a hook answered a call with (``call.answer``): yielded as they are, the call's stop
    fields read from them (nothing is sent)."""
    delivered = 0
    for event in events:
        if not delivered:
            call.first_event_ms = event.get("created_at")
        delivered += 1
        call.delivered = delivered
        if event.get("event_type") == "stop":
            call.usage = event.get("usage_metadata")
            call.finish_reason = event.get("finish_reason")
            _answer_facts(call, call, event)
        yield event


def run_attempts(call: Attempt, watch: Any, *, encode: Callable[[Any], Any], connect: Callable[[Any, Any], Any],
                 read: Callable[..., Iterable[Any]], hooks: Sequence[AttemptHook] = (), max_retries: int = 0,
                 timeout: Any = None, deadline: Optional[float] = None,
                 secrets: Optional[Callable[[Any, Any], List[str]]] = None,
                 explain: Optional[Callable[[AgentHubError, Any], None]] = None,
                 advise: Optional[Callable[[AgentHubError, int], None]] = None,
                 resumes: bool = False, whole_call: bool = True) -> Iterator[Any]:
    """The attempt loop, the one place of the call policies: the deadline, abort, retries with
    backoff, error scrubbing and the hooks (see the module docstring), for anything that sends a
    request and reads its answer (a client's stream or document, a batch call).

    ``encode(request)`` is the request as sent (URL and credential added: per attempt, so a signature
    or a refreshed token is good for that send only); ``connect(sent, (connect_s, read_s))`` the
    transport's unopened body (``transport.open_stream`` with ``watch``); ``read(body)`` turns the
    opened body into what is yielded: a stream's events, or the one JSON document (``call.kind``).
    ``timeout``: an object with ``connect``, ``read`` and ``total``; ``deadline`` (``time.monotonic()``
    seconds): a deadline the caller owns (a failover call's, across its routes; the caller's timer stops
    ``watch`` at it); without one, ``timeout.total`` starts this loop's own when it is the whole call (a
    failover route without one has none: the call's total, of the client called, was none).  ``secrets(sent, config)``:
    what to scrub from an error; ``explain(error, sent)`` / ``advise(error, attempts)``: words added to
    an error (its URL, a hint) before the hooks see it.  ``whole_call``: this loop is the whole logical
    call, so it runs ``on_call_start`` / ``on_call_end`` itself (a failover loop runs them once instead).

    ``resumes`` (a background response): ``read(body, reopen)``, where ``reopen(id, request, cut)`` is
    this loop's next attempt for a stream that broke after its response's id was known: ``cut`` (the
    break, or None) goes through the failure policy, then ``request`` (the GET that resumes it)
    replaces ``call.request`` and is sent with the same hooks, retries (counted afresh from the cut),
    backoff, deadline, abort and scrubbing; it returns the opened body (the reader's parser goes on
    across it) or raises the final error, already seen by the hooks."""
    from .hosts.trust import url_origin

    client = call.client_type
    debug = logger.isEnabledFor(logging.DEBUG)
    stream = call.kind == "stream"
    total = getattr(timeout, "total", None)
    timer = None
    if deadline is None and whole_call:  # (a failover route's deadline is the call's, given or none)
        deadline, timer = start_deadline(watch, total)
    call.watch = watch
    owner = call.call  # the logical call (this object unless a failover route runs it)
    delivered = 0  # events handed to the caller in this call
    tries = 0  # failed attempts since the call (or its last resume) started: what max_retries bounds

    def send() -> Any:
        """One attempt: abort and deadline checked, ``before_attempt``, encoded, sent, its head in,
        ``after_response``; the opened body (its reader closes it)."""
        call.sent = call.request  # what went out (its headers hold this attempt's token or signature)
        call.status = call.headers = call.error = None
        if watch.reason is not None:
            raise _stopped(client, watch, total)
        owner.attempts += 1
        try:
            for hook in hooks:
                hook.before_attempt(call)
        except AgentHubError as exc:
            if exc.__dict__.get("_agenthub_paused"):  # a route a limiter's pause holds: left at once, nothing begun
                owner.attempts -= 1
            raise
        limits = _limits(timeout, deadline)
        if limits is None:
            raise _stopped(client, watch, total, "deadline")
        call.sent = sent = encode(call.request)  # URL, credential
        origin = url_origin(getattr(sent, "url", None))
        call.server = None if origin is None else (origin[1], origin[2])
        body = connect(sent, limits)
        try:
            body.open(not stream or not call.request.stream)  # sent: the answer's head is in
            call.status, call.headers = body.status, body.headers
            for hook in hooks:
                hook.after_response(call)
        except BaseException:
            if call.status is None:
                call.status, call.headers = body.status, body.headers  # an error answer's head
            body.close()
            raise
        return body

    def shown_secrets() -> List[str]:
        """What the DEBUG record of this attempt must not show (what the error of it is scrubbed of)."""
        return secrets(call.sent, call.config) if secrets is not None else []

    def failed(exc: AgentHubError, body: Any, started: float, logged: bool, retryable: bool) -> bool:
        """An attempt failed: its error explained and scrubbed, an abort or the deadline winning over it,
        the retry decision (``retryable``: this attempt may be tried again at all), ``on_error``; True
        once the backoff was waited (try again), False when the caller gives up."""
        nonlocal tries
        call.delivered = delivered
        if body is not None and call.status is None:
            call.status, call.headers = body.status, body.headers  # an error answer's head
        if debug and not logged:  # (the error's request id scrubbed as the error is: a server may echo a key there)
            log_attempt(call.sent, call.number, started, None, exc, shown_secrets())
        if explain is not None:
            explain(exc, call.sent)
        if exc.__dict__.get("_agenthub_stop") is _STOP:
            return False
        if secrets is not None:  # (first: an abort or the deadline below chains it as the cause)
            scrub(exc, secrets(call.sent, call.config))
        if watch.reason is not None:  # the failure is the abort (or the deadline) showing through
            raise _stopped(client, watch, total) from exc
        if deadline is not None and _is_transport(exc) and time.monotonic() >= deadline:
            raise _stopped(client, watch, total, "deadline") from exc
        call.error = exc
        call.retry = bool(retryable and getattr(exc, "retryable", False) and tries < max_retries)
        call.delay = backoff(tries, getattr(exc, "retry_after", None)) if call.retry else None
        if call.delay is None or (deadline is not None and time.monotonic() + call.delay >= deadline):
            call.retry = False
        for hook in hooks:
            hook.on_error(call, exc)
        if call.retry and call.delay is not None:
            call.delay = _hook_delay(call.delay, client)
            if deadline is not None and time.monotonic() + call.delay >= deadline:
                call.retry = False  # (a hook's longer wait: the deadline would end it, so the error is raised now)
        if not call.retry or call.delay is None:
            if advise is not None:
                advise(exc, call.number + 1)  # the last 429 says when to retry and how to retry more
            return False
        call.number += 1
        tries += 1
        logger.info("%s: retrying after %s (status=%s, type=%s), attempt %d of %d, in %.2fs", client,
                    type(exc).__name__, getattr(exc, "status", None), getattr(exc, "error_type", None),
                    tries, max_retries, call.delay)
        if body is not None:
            body.close()
        if not watch.sleep(call.delay):
            raise _stopped(client, watch, total) from exc
        return True

    def reopen(resource_id: str, request: Any, cut: Optional[BaseException]) -> Any:
        """The next attempt of a background stream that broke after its id was known (see above)."""
        nonlocal tries
        owner.response_id = call.response_id = resource_id
        if isinstance(cut, AgentHubError):  # the break itself: the hooks see it, resumed at once
            call.delivered = delivered
            if explain is not None:
                explain(cut, call.sent)
            if watch.reason is not None:
                raise _stopped(client, watch, total) from cut
            if deadline is not None and _is_transport(cut) and time.monotonic() >= deadline:
                raise _stopped(client, watch, total, "deadline") from cut
            if secrets is not None:
                scrub(cut, secrets(call.sent, call.config))
            call.error, call.retry, call.delay = cut, True, 0.0
            for hook in hooks:
                hook.on_error(call, cut)
            if not call.retry:
                cut.__dict__["_agenthub_seen"] = True
                raise cut
        elif watch.reason is not None:
            raise _stopped(client, watch, total)
        call.request, call.resuming = request, resource_id
        call.number += 1
        tries = 0  # a resume starts its own count: max_retries bounds the GETs that fail in a row
        while True:
            body = None
            started = time.monotonic()
            try:
                body = send()
                if body.open(False):
                    from .errors import StreamProtocolError

                    raise StreamProtocolError("{}: resuming a background stream answered one JSON document"
                                              .format(client), client=client)
                if debug:
                    log_attempt(call.sent, call.number, started, body, None, shown_secrets())
                return body
            except AgentHubError as exc:
                if body is not None:
                    body.close()
                if not failed(exc, body, started, False, True):
                    exc.__dict__["_agenthub_seen"] = True  # the hooks saw it: the loop raises it as it is
                    raise

    try:
        if whole_call:
            answer = start_call(call, hooks)
            if answer is not None:  # a hook answered the call: nothing is sent
                for output in answered(call, answer):
                    delivered += 1
                    yield output
                return
        while True:
            body = None
            started = time.monotonic()
            logged = False
            try:
                body = send()
                outputs = iter(read(body, reopen) if resumes else read(body))
                if debug:
                    logged = log_attempt(call.sent, call.number, started, body, None, shown_secrets())
                if not stream:
                    for output in outputs:
                        delivered += 1
                        yield output
                    return
                for output in outputs:  # the first event: its time is the call's first_event_ms
                    owner.first_event_ms = call.first_event_ms = output["created_at"]
                    delivered += 1
                    if output["event_type"] == "stop":  # (a one-event answer: the stop branch below, once)
                        if body is not None:
                            body.finish()
                            body = None
                        _stopped_at(call, owner, output, debug, client, delivered, started)
                    yield output
                    if watch.reason is not None:
                        raise _stopped(client, watch, total)
                    break
                for output in outputs:  # the hot loop: one pass per event
                    delivered += 1
                    if output["event_type"] == "stop":
                        if body is not None:
                            body.finish()  # the terminal marker arrived: let the connection go back to the pool
                            body = None
                        _stopped_at(call, owner, output, debug, client, delivered, started)
                    yield output
                    # checked as the caller asks for the next event, before anything is read: aborted, out
                    # of time, or in another process (a forked child) while the caller held this one
                    if watch.reason is not None:
                        raise _stopped(client, watch, total)
                return
            except AgentHubError as exc:
                if exc.__dict__.pop("_agenthub_seen", False):  # a resume's final error: the policy ran on it
                    call.delivered = delivered
                    again = False
                else:
                    # retried only before the first event, and never by a second POST of a background response
                    again = failed(exc, body, started, logged, not delivered and not exc.__dict__.get(RESUMED))
                if again:
                    body = None  # closed before the backoff
                    continue
                raise
            finally:
                if body is not None:
                    body.close()
    except BaseException as exc:
        if isinstance(exc, AgentHubError):
            call.error = exc
            if whole_call:
                owner.error = exc
        elif not isinstance(exc, GeneratorExit):  # (closed by its caller: no failure)
            call.raised = type(exc)
            if whole_call:
                owner.raised = type(exc)
        raise
    finally:
        if timer is not None:
            timer.cancel()
        call.delivered = delivered
        try:
            if call.answer is None or not whole_call:
                each_hook(hooks, "on_done", call)
        finally:
            if whole_call:
                end_call(call, hooks)


def _hook_delay(delay: Any, client: str) -> float:
    """``attempt.delay`` as the hooks left it: seconds >= 0 (a negative wait is none); a value that is no number
    of seconds is a ConfigError naming it (it was a TypeError or an OverflowError out of the sleep)."""
    if isinstance(delay, bool) or not isinstance(delay, (int, float)) or delay != delay:
        raise ConfigError("{}: an on_error hook set attempt.delay to {}: it takes seconds (a number, or None for "
                          "no retry)".format(client, "nan" if isinstance(delay, float) else "a " + type(delay).__name__))
    return max(0.0, float(delay))


def start_deadline(watch: Any, total: Optional[float]) -> Tuple[Optional[float], Any]:
    """A call's one deadline: (its ``time.monotonic()`` moment, a started timer that stops ``watch`` then:
    cancel it when the call ends); (None, None) when ``total`` is None."""
    if total is None:
        return None, None
    timer = threading.Timer(total, watch.stop, ("deadline",))
    timer.daemon = True
    timer.start()
    return time.monotonic() + total, timer


def _stopped_at(call: Attempt, owner: Attempt, output: Any, debug: bool, client: str, delivered: int,
                started: float) -> None:
    """The stop event passed: the call's usage and finish reason (once per call, never per event)."""
    owner.usage = call.usage = output["usage_metadata"]
    owner.finish_reason = call.finish_reason = output["finish_reason"]
    _answer_facts(call, owner, output)
    if debug:
        logger.debug("stream finished: %s, %d events, finish_reason=%s, usage=%s, %.0f ms", client, delivered,
                     output["finish_reason"], output["usage_metadata"], (time.monotonic() - started) * 1000)


def _answer_facts(call: Attempt, owner: Attempt, stop: Any) -> None:
    """The answer's id and model, where the stop event carries them (``agenthub.stream.StopEvent``)."""
    response_id = getattr(stop, "response_id", None)
    if response_id and not owner.response_id:  # a background response's id, known earlier, stays
        owner.response_id = response_id
        if not call.response_id:
            call.response_id = response_id
    model = getattr(stop, "response_model", None)
    if model:
        owner.response_model = call.response_model = model


def _is_transport(error: BaseException) -> bool:
    from .errors import TransportError

    return isinstance(error, TransportError)


def log_attempt(request: Any, attempt: int, started: float, body: Any, error: Optional[BaseException],
                secrets: Sequence[str] = ()) -> bool:
    """One DEBUG record for one HTTP attempt (no key, header or body in it; ``secrets`` scrubbed from the request
    id the server sent, which it may have made of what it was sent, and from the URL, whose query may hold a
    gateway's key under a name ``safe_url`` does not know: ?code=)."""
    from urllib.parse import quote_plus

    from .answers import request_id
    from .errors import safe_url

    if error is not None:
        status = getattr(error, "status", None)
        found = getattr(error, "request_id", None)
        outcome = " -> {}".format(type(error).__name__)
    else:
        status = getattr(body, "status", None)
        found = request_id(getattr(body, "headers", None))
        outcome = ""
    if isinstance(found, str) and secrets:
        found = scrub_text(found, secrets)
    shown = safe_url(getattr(request, "url", None))
    if shown and secrets:  # (safe_url drops the query values it knows are credentials, not a ?code= of a gateway's)
        shown = scrub_text(shown, [form for secret in secrets for form in (secret, quote_plus(secret)) if form])
    logger.debug("HTTP %s %s status=%s request_id=%s attempt=%d elapsed=%.0f ms%s", getattr(request, "method", "?"),
                 shown, status, found, attempt + 1,
                 (time.monotonic() - started) * 1000, outcome)
    return True


def _limits(timeout: Any, deadline: Optional[float]) -> Optional[Tuple[Optional[float], Optional[float]]]:
    """requests' (connect, read) for the next attempt, clipped to what is left of the deadline."""
    connect, read = getattr(timeout, "connect", None), getattr(timeout, "read", None)
    if deadline is None:
        return (connect, read)
    left = deadline - time.monotonic()
    if left <= 0:
        return None
    return (left if connect is None else min(connect, left), left if read is None else min(read, left))


#: what marks the errors the loop itself raises for an abort or the deadline (no server can send it)
_STOP = object()


def _stopped(client: str, control: Any, total: Optional[float], reason: Optional[str] = None) -> AgentHubError:
    from .errors import TransportError

    reason = reason or control.reason or "abort"
    if reason == "deadline":
        error = TransportError("{}: the total deadline of {}s was exceeded".format(client, total),
                               client=client, timeout=True, deadline=True, aborted=False, retryable=False)
    elif reason == "fork":
        error = TransportError("{}: this stream was opened in process {} and cannot be read in another process "
                               "(a forked child): open a new stream there".format(client, getattr(control, "pid", "?")),
                               client=client, timeout=False, deadline=False, aborted=False, retryable=False,
                               forked=True)
    else:
        error = TransportError("{}: the stream was aborted by the caller".format(client), client=client,
                               timeout=False, deadline=False, aborted=True, retryable=False)
    error._agenthub_stop = _STOP  # type: ignore[attr-defined]  # not a field: kept out of pickles and reprs
    return error
