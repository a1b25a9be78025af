"""RateLimiter: one request and token budget shared by every thread that uses it (pure: no I/O).

``RateLimiter(rpm=600, tpm=200_000)`` spaces requests evenly: 600 RPM is one request every 0.1 s,
never a minute's worth at once (the providers document that a per-minute limit may be enforced over
shorter periods, as a token bucket).  Tokens are paced the same way: a request expected to use ``t``
tokens holds the next one back by ``t * 60 / tpm`` seconds.  The estimate, made before sending, is
the local estimate of the input (``agenthub.estimate``, the budget's too) plus ``max_tokens``; the
answer's usage corrects it (``settle``).

The providers' own figures are read from every answer's headers (``observe``):
``x-ratelimit-remaining-requests`` / ``-tokens`` with ``x-ratelimit-reset-requests`` / ``-tokens``
(OpenAI-compatible servers: a duration such as ``1s``, ``6m0s``, ``12ms``) and
``anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-{remaining,reset}`` (Anthropic: the
reset is an RFC 3339 time).  When one says nothing is left, every user of the limiter waits for its
reset before sending to that endpoint.  A 429's Retry-After (``pause``) holds back every user's requests
to the endpoint that asked for it, not only the one that got it; other endpoints (a failover route) go
on.  An endpoint is client type, host and port, model and a mark of the credentials (``endpoint_key``: a 429 of
one API key does not hold another key's requests, in this process or, with a shared store, any other); a pause
or a header read without one (``pause(s)``, ``observe(headers)``) holds every endpoint.  Requests that
booked their slots before a pause and slept through it take new slots after it, spaced as any others.

Usage::

    limiter = agenthub.RateLimiter(rpm=500)
    client = agenthub.AutoLLMClient("gpt-4.1-mini", limiter=limiter)   # or, by hand:
    ticket = limiter.acquire(limiter.estimate(messages, config))
    ...                                                                 # send
    limiter.settle(ticket, usage_metadata)

``clock`` and ``sleep`` are injectable (tests drive time by hand); ``wall`` is the wall clock used
for Anthropic's absolute reset times.

``store=`` shares the pace between processes and machines (``agenthub.stores``: ``"sqlite:///path"``,
``"redis://host:port/db"``), under the account ``key=``: the same rules, with the state in the store
(``agenthub.stores.pace.SharedPace``).  None: this process only, as always.  See docs/many-workers.md.
"""

import datetime
import math
import re
import threading
import time
from typing import Any, Callable, Dict, Mapping, Optional, Tuple

from .answers import retry_after as _retry_after
from .attempts import Attempt, AttemptHook
from .errors import ConfigError
from .estimate import estimate_with_output, output_bound
from .stores import check_key, open_store
from .stream import usage_count
from ._forks import renew_lock_after_fork

__all__ = ["RateLimiter", "LimiterHook", "Ticket", "estimate_tokens", "parse_duration", "parse_rfc3339",
           "endpoint_key"]

#: (client type, (host, port), model, account): the endpoint a pause holds (None in a part: not known; a key without
#: the account, three parts, holds every account)
Key = Tuple[Any, ...]

#: the longest a header or a Retry-After may hold everyone back (a broken header must not stall a job for a day)
MAX_PAUSE = 600.0


class Ticket(object):
    """What one ``acquire`` took: the token estimate (``settle`` corrects it) and when it was granted."""

    __slots__ = ("tokens", "at", "settled")

    def __init__(self, tokens: int, at: float) -> None:
        self.tokens = tokens
        self.at = at
        self.settled = False

    def __repr__(self) -> str:
        return "Ticket(tokens={}, at={:.3f})".format(self.tokens, self.at)


#: the smallest rate (per minute) a limiter takes: one a day (a smaller one's interval, ``60 / rate`` seconds, may
#: pass what a sleep can wait, or overflow to inf and leave a shared store's row unreadable for every process)
MIN_RATE = 1.0 / 1440


def _positive(value: Any, name: str) -> Optional[float]:
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool) and value > 1e300:
        raise ConfigError("{} must be a positive number (got 'huge')".format(name))  # (past a float: no OverflowError)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0 or value == float("inf"):
        raise ConfigError("{} must be a positive number (got {!r})".format(name, value))
    if value < MIN_RATE:
        raise ConfigError("{} must be a number of at least 1/1440 (one a day; got {!r})".format(name, value))
    return float(value)


#: the local estimate (agenthub.estimate, written once): the input plus ``max_tokens``, what a request may take
#: from a tokens-per-minute allowance
estimate_tokens = estimate_with_output


_DURATION = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ms|us|µs|ns|h|m|s)")
_UNITS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}


def _attempt_tokens(attempt: Any) -> int:
    """``estimate_tokens`` of a stream attempt: its input (``Attempt.input_parts``, made once: a Budget's hold reads
    it too, and a retry sends the same input) plus ``max_tokens``."""
    if isinstance(attempt, Attempt):
        return attempt.input_parts()[0] + output_bound(attempt.config)
    return estimate_tokens(attempt.messages or (), attempt.config)


def parse_duration(text: Any) -> Optional[float]:
    """Seconds from OpenAI's reset format (a Go duration: ``1s``, ``6m0s``, ``12ms``, ``1h2m3.5s``) or a
    bare number of seconds; None when it is neither."""
    if not isinstance(text, str):
        return None
    text = text.strip()
    if not text:
        return None
    try:
        seconds = float(text)
        return seconds if seconds >= 0 and math.isfinite(seconds) else None  # "inf", "1e309", "nan": no figure
    except ValueError:
        pass
    pos = 0
    total = 0.0
    for match in _DURATION.finditer(text):
        if match.start() != pos:
            return None
        total += float(match.group(1)) * _UNITS[match.group(2)]
        pos = match.end()
    return total if pos == len(text) and pos and math.isfinite(total) else None


def parse_rfc3339(text: Any) -> Optional[float]:
    """A POSIX timestamp from an RFC 3339 time (Anthropic's ``...-reset``: ``2025-08-21T12:40:59Z``)."""
    if not isinstance(text, str) or not text.strip():
        return None
    value = text.strip().replace("z", "Z")
    if value.endswith("Z"):
        value = value[:-1] + "+00:00"
    match = re.match(r"^(.*T\d\d:\d\d:\d\d)(\.\d+)?(.*)$", value)
    if match is None:
        return None
    head, fraction, zone = match.groups()
    try:
        moment = datetime.datetime.strptime(head + (zone or "+00:00").replace(":", ""), "%Y-%m-%dT%H:%M:%S%z")
    except ValueError:
        return None
    return moment.timestamp() + (float(fraction) if fraction else 0.0)


# (remaining header, reset header, what it limits, how the reset is written)
_HEADERS = (
    ("x-ratelimit-remaining-requests", "x-ratelimit-reset-requests", "requests", "duration"),
    ("x-ratelimit-remaining-tokens", "x-ratelimit-reset-tokens", "tokens", "duration"),
    ("anthropic-ratelimit-requests-remaining", "anthropic-ratelimit-requests-reset", "requests", "rfc3339"),
    ("anthropic-ratelimit-tokens-remaining", "anthropic-ratelimit-tokens-reset", "tokens", "rfc3339"),
    ("anthropic-ratelimit-input-tokens-remaining", "anthropic-ratelimit-input-tokens-reset", "tokens", "rfc3339"),
    ("anthropic-ratelimit-output-tokens-remaining", "anthropic-ratelimit-output-tokens-reset", "tokens", "rfc3339"),
)


def _lower(headers: Any, having: Optional[str] = None) -> Mapping[str, str]:
    """``headers`` (a mapping or a list of pairs, str or bytes) with lowercase names; ``having``: only the
    names that hold it."""
    if headers is None:
        return {}
    lower_items = getattr(headers, "lower_items", None)  # requests' CaseInsensitiveDict: its names, lowercase
    if callable(lower_items):
        items = lower_items()
    else:
        try:
            items = headers.items()
        except AttributeError:
            items = headers  # a list of pairs
    out = {}
    for name, value in items:
        if type(name) is not str:
            if isinstance(name, (bytes, bytearray)):
                name = bytes(name).decode("latin-1")
            elif not isinstance(name, str):
                continue
        if type(value) is not str:
            if isinstance(value, (bytes, bytearray)):
                value = bytes(value).decode("latin-1")
            elif not isinstance(value, str):
                continue
        name = name.lower()
        if having is None or having in name:
            out[name] = value
    return out


def endpoint_key(attempt: Any) -> Key:
    """The endpoint an attempt goes to, as a pause holds it: (client type, (host, port), model, account).

    The host and port are the attempt's ``server`` when it has one, else those of the URL it was sent to
    (``sent``, once encoded); None while neither is known (a pause then holds every host of that client
    type and model).  The account is the attempt's ``account``, a mark of the credentials its client sends
    (``breaker.account_mark``, never a credential): a 429 of one API key does not hold a fallback on another key of
    the same host and model; None (no credentials, or not known) holds, and is held by, every account."""
    server = getattr(attempt, "server", None)
    if isinstance(server, (tuple, list)) and len(server) == 2:
        where = (str(server[0]).lower(), server[1])  # type: Any
    else:
        where = None
        for request in (getattr(attempt, "sent", None), getattr(attempt, "request", None)):
            url = getattr(request, "url", None)
            if isinstance(url, str) and "://" in url:
                from .hosts.trust import url_origin  # the host the request connects to, as the breaker reads it

                origin = url_origin(url)
                if origin is not None:
                    where = (origin[1].lower(), origin[2])
                    break
    return (getattr(attempt, "client_type", None), where, getattr(attempt, "model", None),
            getattr(attempt, "account", None))


def _holds(pause_key: Key, key: Optional[Key]) -> bool:
    """Whether a pause of ``pause_key`` holds a request to ``key`` (an unknown part matches any)."""
    if key is None:
        return False
    return all(a is None or b is None or a == b for a, b in zip(pause_key, key))


class RateLimiter(object):
    """Requests per minute and tokens per minute, spread evenly, shared by all threads (see the module doc).

    ``rpm`` / ``tpm``: None for no limit of that kind (the headers and 429s still hold everyone back).
    ``store`` / ``key``: a shared store's URL (or an ``agenthub.stores.Store``) and the name of the account
    in it: every process using them draws from one pace (None: this process only).
    """

    def __init__(self, rpm: Optional[float] = None, tpm: Optional[float] = None, *, store: Any = None,
                 key: Optional[str] = None, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], Any] = time.sleep, wall: Callable[[], float] = time.time) -> None:
        self.rpm = _positive(rpm, "rpm")
        self.tpm = _positive(tpm, "tpm")
        self.key = check_key(key)
        #: where the pace is kept: None (this process), or a shared agenthub.stores.Store
        self.store = None if store is None else open_store(store)
        self._shared = None  # type: Any
        if self.store is not None:
            from .stores.pace import SharedPace

            self._shared = SharedPace(self.store, self.key, self.rpm, self.tpm)
        self._clock = clock
        self._sleep = sleep
        self._wall = wall
        self._lock = threading.Lock()
        now = clock()
        self._next_request = now  # the earliest moment the next request may go (theoretical arrival time)
        self._next_token = now  # the same for the token budget
        self._paused_until = now  # a pause of every endpoint (no key) holds everyone back until then
        self._paused = {}  # type: Dict[Key, float]  # endpoint -> until when a 429 or its headers hold it
        renew_lock_after_fork(self)
        #: what the limiter has done, for progress lines and benches
        self.requests = 0
        self.tokens = 0
        self.pauses = 0

    @property
    def account(self) -> Any:
        """The shared pace this limiter draws from (``Store.account``; None: this object's own, in this process): a
        failover call books one slot per attempt on it, whichever limiters its routes name."""
        return None if self.store is None else self.store.account(self.key)

    def __repr__(self) -> str:
        if self.store is not None:
            return "RateLimiter(rpm={}, tpm={}, store={!r}, key={!r})".format(self.rpm, self.tpm, self.store.url,
                                                                             self.key)
        return "RateLimiter(rpm={}, tpm={})".format(self.rpm, self.tpm)

    def __getstate__(self) -> Any:
        # a copy in another process starts with a fresh budget of the same size (with a shared store: the same one)
        state = {"rpm": self.rpm, "tpm": self.tpm}  # type: Dict[str, Any]
        if self.store is not None:
            state.update(store=self.store, key=self.key)
        return state

    def __setstate__(self, state: Any) -> None:
        self.__init__(state["rpm"], state["tpm"], store=state.get("store"), key=state.get("key"))  # type: ignore[misc]

    def share(self, parts: int) -> "RateLimiter":
        """A new limiter with 1/``parts`` of this one's budget (a worker process's or a Ray actor's share);
        with a shared store, the same limiter (every part draws from the one shared pace)."""
        if not isinstance(parts, int) or isinstance(parts, bool) or parts < 1:
            raise ConfigError("parts must be an int >= 1")
        if self.store is not None:
            return self
        return RateLimiter(None if self.rpm is None else self.rpm / parts,
                           None if self.tpm is None else self.tpm / parts,
                           clock=self._clock, sleep=self._sleep, wall=self._wall)

    estimate = staticmethod(estimate_tokens)

    # -- taking a turn ------------------------------------------------------------------------
    def _pause_end(self, key: Optional[Key], now: float) -> float:
        """(under the lock) When the pauses holding a request to ``key`` end: the every-endpoint pause, and
        that endpoint's own (expired ones are dropped)."""
        end = self._paused_until
        if not self._paused:
            return end
        for pause_key, until in list(self._paused.items()):
            if until < now - MAX_PAUSE:  # (kept a while after it ended: a slot it covered is still booked)
                del self._paused[pause_key]
            elif until > end and _holds(pause_key, key):
                end = until
        return end

    def reserve(self, tokens: int = 0, key: Optional[Key] = None) -> Tuple[Ticket, float]:
        """Book the next slot for a request of ``tokens`` (estimated) to the endpoint ``key`` (None: no
        endpoint's own pause holds it): (ticket, seconds to wait before sending).  Never blocks;
        ``acquire`` is reserve + sleep."""
        if isinstance(tokens, bool) or not isinstance(tokens, (int, float)) or tokens != tokens:
            raise ConfigError("tokens must be a number (got {})".format(type(tokens).__name__ if not isinstance(
                tokens, float) else "NaN"))
        tokens = int(max(0, min(tokens, 10 ** 12)))  # (a local estimate: bounded so the arithmetic stays in floats)
        if self._shared is not None:  # the pace is the store's
            slot_wait, wait = self._shared.reserve(tokens, key)
            with self._lock:
                self.requests += 1
                self.tokens += tokens
                return Ticket(tokens, self._clock() + slot_wait), wait
        with self._lock:
            now = self._clock()
            slot = now
            if self.rpm is not None:
                slot = max(slot, self._next_request)
            if self.tpm is not None:
                slot = max(slot, self._next_token)
            if self.rpm is not None:
                self._next_request = slot + 60.0 / self.rpm
            if self.tpm is not None:
                # this request's tokens hold the next one back (its own start is not delayed by its size,
                # so a request bigger than a second's budget still goes, and the pace evens out after)
                self._next_token = slot + min(tokens * 60.0 / self.tpm, MAX_PAUSE)
            self.requests += 1
            self.tokens += tokens
            # a pause of this endpoint holds it past its slot without holding the queue (other endpoints'
            # requests keep their slots); when the pause ends it takes a new slot (``wait_turn``)
            wait = max(slot, self._pause_end(key, now)) - now
            return Ticket(tokens, slot), wait

    def acquire(self, tokens: int = 0, *, interrupt: Optional[Callable[[float], bool]] = None,
                key: Optional[Key] = None) -> Ticket:
        """Wait for the next slot (see ``reserve``) and return its ticket.  ``interrupt(seconds)`` may
        replace the sleep: it returns False to stop waiting early (the slot stays booked)."""
        ticket, wait = self.reserve(tokens, key)

        def sleep(seconds: float) -> bool:
            if interrupt is not None:
                return bool(interrupt(seconds))
            self._sleep(seconds)
            return True

        self.wait_turn(ticket, wait, key, sleep)
        return ticket

    def wait_turn(self, ticket: Ticket, wait: float, key: Optional[Key], sleep: Callable[[float], bool]) -> bool:
        """Sleep (``sleep(seconds)``, False: stop early) until ``ticket``'s slot, then while a pause holds
        ``key``; a ticket whose slot a pause covered takes a new slot after it, behind those booked
        meanwhile (so the requests a pause held go spaced, not at once).  False when ``sleep`` stopped it."""
        if self._shared is not None:
            return bool(self._shared.wait_turn(ticket, wait, key, sleep, self._clock))
        while True:
            if wait > 0 and not sleep(wait):
                return False
            with self._lock:
                now = self._clock()
                end = self._pause_end(key, now)
                if end > now:  # a pause that came in while this thread slept (a 429 elsewhere) holds it too
                    wait = end - now
                    continue
                if end <= ticket.at:
                    return True
                at = now  # the pause ended after this slot began: a new slot
                if self.rpm is not None:
                    at = max(at, self._next_request)
                    self._next_request = at + 60.0 / self.rpm
                ticket.at = at
                wait = at - now
            if wait <= 0:
                return True

    def settle(self, ticket: Optional[Ticket], usage_metadata: Optional[Mapping[str, Any]]) -> None:
        """Correct the token estimate of ``ticket`` with the answer's usage (prompt + response tokens)."""
        if ticket is None or ticket.settled:
            return
        ticket.settled = True
        if not isinstance(usage_metadata, Mapping):
            return
        used = 0
        for key in ("prompt_tokens", "response_tokens", "thoughts_tokens"):
            value = usage_count(usage_metadata.get(key))  # a server's absurd count is no count
            if value:
                used += value
        if not used:
            return
        if self._shared is not None:
            self._shared.settle(used - ticket.tokens)
            with self._lock:
                self.tokens += used - ticket.tokens
            ticket.tokens = used
            return
        with self._lock:
            self.tokens += used - ticket.tokens
            if self.tpm is not None:
                # more than estimated: the next request waits longer; less: it may go sooner (never before
                # now: a slot is never granted in the past, so no burst builds up); one settlement holds the
                # pace back at most the longest pause more, whatever the usage said (and never pulls it back
                # past the requests already booked behind it)
                self._next_token = min(self._next_token + (used - ticket.tokens) * 60.0 / self.tpm,
                                       max(self._next_token, self._clock()) + MAX_PAUSE)
            ticket.tokens = used

    # -- what the server says -------------------------------------------------------------------
    def pause(self, seconds: Optional[float], key: Optional[Key] = None) -> None:
        """Hold every user's requests to the endpoint ``key`` back for ``seconds`` (a 429's Retry-After);
        without a key, every endpoint.  A figure that is not a finite number is no figure (no pause)."""
        if seconds is None or not isinstance(seconds, (int, float)) or isinstance(seconds, bool) \
                or not math.isfinite(seconds):
            return
        seconds = min(max(0.0, float(seconds)), MAX_PAUSE)
        if self._shared is not None:
            if self._shared.pause(seconds, key):
                with self._lock:
                    self.pauses += 1
            return
        with self._lock:
            until = self._clock() + seconds
            if key is None:
                if until > self._paused_until:
                    self._paused_until = until
                    self.pauses += 1
            elif until > self._paused.get(key, float("-inf")):
                self._paused[key] = until
                self.pauses += 1

    def observe(self, headers: Any, status: Optional[int] = None, retry_after: Optional[float] = None,
                key: Optional[Key] = None) -> None:
        """Read an answer's rate-limit headers (any mapping or list of pairs; names in any case), of the
        endpoint ``key`` (None: they hold every endpoint).

        A ``remaining`` of 0 holds everyone back until its ``reset``; a 429 with no usable reset and no
        Retry-After pauses for one request interval (at least a second)."""
        if status != 429 and retry_after is None:  # only the rate-limit headers are read (all say "ratelimit")
            h = _lower(headers, "ratelimit")
            if not h:
                return
        else:
            h = _lower(headers)
        waits = []
        for remaining_name, reset_name, _what, form in _HEADERS:
            remaining = h.get(remaining_name)
            if remaining is None:
                continue
            try:
                left = float(remaining.strip())
            except ValueError:
                continue
            if left >= 1:
                continue
            reset = h.get(reset_name)
            if form == "duration":
                seconds = parse_duration(reset)
            else:
                when = parse_rfc3339(reset)
                seconds = None if when is None else when - self._wall()
            if seconds is not None:
                waits.append(max(0.0, seconds))
        if retry_after is None and status == 429:
            retry_after = _retry_after(h)  # the client's own reading: "inf" and the like are no figure
        if isinstance(retry_after, (int, float)) and math.isfinite(retry_after):
            waits.append(retry_after)
        if not waits and status == 429:
            waits.append(max(1.0, 60.0 / self.rpm if self.rpm else 1.0))
        if waits:
            self.pause(max(waits), key)

    def paused_for(self, key: Optional[Key] = None) -> float:
        """Seconds until the pauses holding a request to the endpoint ``key`` (a 429 or an exhausted header)
        end; 0 when none holds.  Without a key: the longest pause of any endpoint (what to tell a user)."""
        if self._shared is not None:
            return self._shared.paused_for(key, any_endpoint=key is None)
        if not self._paused and self._paused_until <= self._clock():  # no pause at all (read without the lock: a
            return 0.0  # pause coming in at this moment is one that came just after the question)
        with self._lock:
            now = self._clock()
            end = self._pause_end(key, now)
            if key is None:
                end = max([end] + list(self._paused.values()))
            return max(0.0, end - now)


class LimiterHook(AttemptHook):
    """The attempt-loop hook (``agenthub.attempts.AttemptHook``) of ``AutoLLMClient(..., limiter=...)``.

    ``before_attempt``: each attempt (retries and a background stream's resuming GETs included) takes its
    turn, waiting with ``attempt.wait`` so an abort or the deadline still ends the call, and waits while a
    pause holds its endpoint (``endpoint_key``), except a call's first attempt on a route that has a fallback
    after it (``attempt.call.routes_left``): that one fails at once, nothing sent (a RateLimitError that
    counts nothing against the circuit), and the call goes to its fallback; a stream's tokens are estimated
    from its messages and config.  ``after_response`` / ``on_error``: the rate-limit headers of the answer (an error answer's
    too) and a 429's Retry-After pause every user's requests to that endpoint (a failover route to
    another endpoint goes at once).  ``on_done``: the stop event's usage corrects the estimate.
    ``acquire=False`` takes no turn, only waits out its endpoint's pauses and observes (the bulk runner
    takes the turns itself, so that Ctrl-C can stop rows that were not sent yet).
    """

    shares = "limiter"  # (agenthub.failover.merge_hooks: one LimiterHook per limiter in a call)

    def __init__(self, limiter: RateLimiter, acquire: bool = True) -> None:
        if not isinstance(limiter, RateLimiter):
            raise ConfigError("limiter must be an agenthub.RateLimiter (got {})".format(type(limiter).__name__))
        self.limiter = limiter
        self.acquire = acquire
        self._tickets = {}  # type: Dict[int, Ticket]
        self._keys = {}  # type: Dict[int, Key]  # a call's endpoint once its URL was seen (its retries' key)
        self._lock = threading.Lock()
        renew_lock_after_fork(self)

    def __getstate__(self) -> Any:
        return {"limiter": self.limiter, "acquire": self.acquire}

    def __setstate__(self, state: Any) -> None:
        self.__init__(state["limiter"], state["acquire"])  # type: ignore[misc]

    def _key(self, attempt: Any, learn: bool = False) -> Key:
        key = endpoint_key(attempt)
        if key[1] is not None:
            if learn:
                with self._lock:
                    self._keys[id(attempt)] = key
            return key
        with self._lock:
            return self._keys.get(id(attempt), key)

    def before_attempt(self, attempt: Any) -> None:
        key = self._key(attempt)
        if not getattr(attempt, "number", 0) and getattr(getattr(attempt, "call", None), "routes_left", 0):
            held = self.limiter.paused_for(key)  # a call that has a fallback does not wait out this endpoint's pause
            if held > 0:
                raise _paused(attempt, held)
        if not self.acquire:
            wait = self.limiter.paused_for(key)
            if wait <= 0 and self.limiter._shared is None:
                return  # no pause holds it (and there is no turn to take)
            ticket = Ticket(0, self.limiter._clock())
        else:
            resuming = getattr(attempt, "resuming", None)  # the GET resuming a background stream: no new tokens
            tokens = 0
            if attempt.kind == "stream" and not resuming:
                tokens = _attempt_tokens(attempt)
            ticket, wait = self.limiter.reserve(tokens, key)
            if not resuming:  # (the answer's usage settles the ticket of the POST that started it)
                with self._lock:
                    self._tickets[id(attempt)] = ticket  # a retry's ticket replaces the failed attempt's
        if not self.limiter.wait_turn(ticket, wait, key, lambda seconds: self.pause(attempt, seconds)):
            from .errors import TransportError

            raise TransportError("stopped while waiting for the rate limiter", aborted=True, retryable=False)

    def pause(self, attempt: Any, seconds: float) -> bool:
        """Wait ``seconds`` for the limiter's turn (``attempt.wait``: an abort or the deadline ends it, False)."""
        return bool(attempt.wait(seconds))

    def after_response(self, attempt: Any) -> None:
        key = self._key(attempt, learn=True)
        if attempt.headers:
            self.limiter.observe(attempt.headers, attempt.status, key=key)

    def on_error(self, attempt: Any, error: Any) -> None:
        if error.__dict__.get("_agenthub_paused"):  # this hook's own skip: no new pause, no retry on this route
            attempt.retry = False
            return
        key = self._key(attempt, learn=True)
        status = attempt.status if attempt.status is not None else getattr(error, "status", None)
        rate_limited = status == 429 or type(error).__name__ == "RateLimitError"
        self.limiter.observe(attempt.headers or {}, 429 if rate_limited else status,
                             getattr(error, "retry_after", None) if rate_limited else None, key=key)

    def on_done(self, attempt: Any) -> None:
        with self._lock:
            ticket = self._tickets.pop(id(attempt), None)
            self._keys.pop(id(attempt), None)
        self.limiter.settle(ticket, attempt.usage)


def _paused(attempt: Any, held: float) -> Any:
    """The failure of a call's first attempt on an endpoint a pause holds, when a fallback route follows: a
    RateLimitError (nothing was sent) that moves the call on at once and counts nothing against the circuit."""
    from .errors import RateLimitError

    client = getattr(attempt, "client_type", None) or ""
    error = RateLimitError("{}: {} is paused for {:.1f} s more (a 429's Retry-After, or its rate-limit headers said "
                           "nothing is left): nothing was sent, the call goes to its fallback".format(
                               client, getattr(attempt, "model", None), held),
                           client=client, status=None, error_type="rate_limit_paused", retry_after=held,
                           retryable=True, hint="the rate limiter's pause of this endpoint ends in {:.1f} s".format(held))
    error.__dict__["_agenthub_paused"] = True  # not a field: kept out of pickles and the server's error fields
    return error


def has_hook(client: Any, limiter: RateLimiter) -> bool:
    """Whether ``client`` already reports to ``limiter`` (its ``hooks`` hold a LimiterHook of it)."""
    return any(isinstance(h, LimiterHook) and h.limiter is limiter for h in getattr(client, "hooks", ()))
