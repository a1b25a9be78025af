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
reset.  A 429's Retry-After (``pause``) holds back every user, not only the one that got it.

Usage::

    limiter = agenthub.RateLimiter(rpm=500)
    client = agenthub.AutoLLMClient("gpt-4.1-mini", limiter=limiter)   # or, by hand:
    ticket = limiter.acquire(limiter.estimate(messages, config))
    ...                                                                 # send
    limiter.settle(ticket, usage_metadata)

``clock`` and ``sleep`` are injectable (tests drive time by hand); ``wall`` is the wall clock used
for Anthropic's absolute reset times.
"""

import datetime
import re
import threading
import time
from typing import Any, Callable, Dict, Mapping, Optional, Tuple

from .attempts import AttemptHook
from .errors import ConfigError
from .estimate import estimate_with_output

__all__ = ["RateLimiter", "LimiterHook", "Ticket", "estimate_tokens", "parse_duration", "parse_rfc3339"]

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


def _positive(value: Any, name: str) -> Optional[float]:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0 or value == float("inf"):
        raise ConfigError("{} must be a positive number (got {!r})".format(name, value))
    return float(value)


#: the local estimate (agenthub.estimate, written once): the input plus ``max_tokens``, what a request may take
#: from a tokens-per-minute allowance
estimate_tokens = estimate_with_output


_DURATION = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ms|us|µs|ns|h|m|s)")
_UNITS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}


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
        return seconds if seconds >= 0 and seconds == seconds else None
    except ValueError:
        pass
    pos = 0
    total = 0.0
    for match in _DURATION.finditer(text):
        if match.start() != pos:
            return None
        total += float(match.group(1)) * _UNITS[match.group(2)]
        pos = match.end()
    return total if pos == len(text) and pos else None


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


def _lower(headers: Any) -> Mapping[str, str]:
    if headers is None:
        return {}
    try:
        items = headers.items()
    except AttributeError:
        items = headers  # a list of pairs
    out = {}
    for name, value in items:
        if isinstance(name, (bytes, bytearray)):
            name = bytes(name).decode("latin-1")
        if isinstance(value, (bytes, bytearray)):
            value = bytes(value).decode("latin-1")
        if isinstance(name, str) and isinstance(value, str):
            out[name.lower()] = value
    return out


class RateLimiter(object):
    """Requests per minute and tokens per minute, spread evenly, shared by all threads (see the module doc).

    ``rpm`` / ``tpm``: None for no limit of that kind (the headers and 429s still hold everyone back).
    """

    def __init__(self, rpm: Optional[float] = None, tpm: Optional[float] = None, *,
                 clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], Any] = time.sleep,
                 wall: Callable[[], float] = time.time) -> None:
        self.rpm = _positive(rpm, "rpm")
        self.tpm = _positive(tpm, "tpm")
        self._clock = clock
        self._sleep = sleep
        self._wall = wall
        self._lock = threading.Lock()
        now = clock()
        self._next_request = now  # the earliest moment the next request may go (theoretical arrival time)
        self._next_token = now  # the same for the token budget
        self._paused_until = now  # a 429 or an exhausted header holds everyone back until then
        #: what the limiter has done, for progress lines and benches
        self.requests = 0
        self.tokens = 0
        self.pauses = 0

    def __repr__(self) -> str:
        return "RateLimiter(rpm={}, tpm={})".format(self.rpm, self.tpm)

    def __getstate__(self) -> Any:  # a copy in another process starts with a fresh budget of the same size
        return {"rpm": self.rpm, "tpm": self.tpm}

    def __setstate__(self, state: Any) -> None:
        self.__init__(state["rpm"], state["tpm"])  # type: ignore[misc]

    def share(self, parts: int) -> "RateLimiter":
        """A new limiter with 1/``parts`` of this one's budget (a worker process's or a Ray actor's share)."""
        if not isinstance(parts, int) or isinstance(parts, bool) or parts < 1:
            raise ConfigError("parts must be an int >= 1")
        return RateLimiter(None if self.rpm is None else self.rpm / parts,
                           None if self.tpm is None else self.tpm / parts,
                           clock=self._clock, sleep=self._sleep, wall=self._wall)

    estimate = staticmethod(estimate_tokens)

    # -- taking a turn ------------------------------------------------------------------------
    def reserve(self, tokens: int = 0) -> Tuple[Ticket, float]:
        """Book the next slot for a request of ``tokens`` (estimated): (ticket, seconds to wait before
        sending).  Never blocks; ``acquire`` is reserve + sleep."""
        tokens = max(0, int(tokens))
        with self._lock:
            now = self._clock()
            at = max(now, self._paused_until)
            if self.rpm is not None:
                at = max(at, self._next_request)
            if self.tpm is not None:
                at = max(at, self._next_token)
            if self.rpm is not None:
                self._next_request = at + 60.0 / self.rpm
            if self.tpm is not None:
                # this request's tokens hold the next one back (its own start is not delayed by its size,
                # so a request bigger than a second's budget still goes, and the pace evens out after)
                self._next_token = at + tokens * 60.0 / self.tpm
            self.requests += 1
            self.tokens += tokens
            return Ticket(tokens, at), at - now

    def acquire(self, tokens: int = 0, *, interrupt: Optional[Callable[[float], bool]] = None) -> Ticket:
        """Wait for the next slot (see ``reserve``) and return its ticket.  ``interrupt(seconds)`` may
        replace the sleep: it returns False to stop waiting early (the slot stays booked)."""
        ticket, wait = self.reserve(tokens)
        while wait > 0:
            if interrupt is not None:
                if not interrupt(wait):
                    break
            else:
                self._sleep(wait)
            # a pause that came in while this thread slept (a 429 elsewhere) holds it back too
            with self._lock:
                wait = self._paused_until - self._clock()
        return ticket

    def settle(self, ticket: Optional[Ticket], usage_metadata: Optional[Mapping[str, Any]]) -> None:
        """Correct the token estimate of ``ticket`` with the answer's usage (prompt + response tokens)."""
        if ticket is None or ticket.settled:
            return
        ticket.settled = True
        if not isinstance(usage_metadata, Mapping):
            return
        used = 0
        for key in ("prompt_tokens", "response_tokens", "thoughts_tokens"):
            value = usage_metadata.get(key)
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                used += value
        if not used:
            return
        with self._lock:
            self.tokens += used - ticket.tokens
            if self.tpm is not None:
                # more than estimated: the next request waits longer; less: it may go sooner (never before
                # now: a slot is never granted in the past, so no burst builds up)
                self._next_token += (used - ticket.tokens) * 60.0 / self.tpm
            ticket.tokens = used

    # -- what the server says -------------------------------------------------------------------
    def pause(self, seconds: Optional[float]) -> None:
        """Hold every user of this limiter back for ``seconds`` (a 429's Retry-After)."""
        if seconds is None or not isinstance(seconds, (int, float)) or isinstance(seconds, bool) or seconds != seconds:
            return
        seconds = min(max(0.0, float(seconds)), MAX_PAUSE)
        with self._lock:
            until = self._clock() + seconds
            if until > self._paused_until:
                self._paused_until = until
                self.pauses += 1

    def observe(self, headers: Any, status: Optional[int] = None, retry_after: Optional[float] = None) -> None:
        """Read an answer's rate-limit headers (any mapping or list of pairs; names in any case).

        A ``remaining`` of 0 holds everyone back until its ``reset``; a 429 with no usable reset and no
        Retry-After pauses for one request interval (at least a second)."""
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
            retry_after = parse_duration(h.get("retry-after"))
            ms = h.get("retry-after-ms")
            if ms is not None:
                try:
                    retry_after = float(ms) / 1000.0
                except ValueError:
                    pass
        if retry_after is not None:
            waits.append(retry_after)
        if not waits and status == 429:
            waits.append(max(1.0, 60.0 / self.rpm if self.rpm else 1.0))
        if waits:
            self.pause(max(waits))

    def paused_for(self) -> float:
        """Seconds until a pause (429 or exhausted header) ends; 0 when none holds."""
        with self._lock:
            return max(0.0, self._paused_until - self._clock())


class LimiterHook(AttemptHook):
    """The attempt-loop hook (``agenthub.attempts.AttemptHook``) of ``AutoLLMClient(..., limiter=...)``.

    ``before_attempt``: each attempt (retries and a background stream's resuming GETs included) takes its
    turn, waiting with ``attempt.wait``
    so an abort or the deadline still ends the call; a stream's tokens are estimated from its messages
    and config.  ``after_response`` / ``on_error``: the rate-limit headers of the answer (an error
    answer's too) and a 429's Retry-After pause every user of the limiter.  ``on_done``: the stop
    event's usage corrects the estimate.  ``acquire=False`` only observes (the bulk runner takes the
    turns itself, so that Ctrl-C can stop rows that were not sent yet).
    """

    def __init__(self, limiter: RateLimiter, acquire: bool = True) -> None:
        if not isinstance(limiter, RateLimiter):
            raise ConfigError("limiter must be an agenthub.RateLimiter (got {})".format(type(limiter).__name__))
        self.limiter = limiter
        self.acquire = acquire
        self._tickets = {}  # type: Dict[int, Ticket]
        self._lock = threading.Lock()

    def __getstate__(self) -> Any:
        return {"limiter": self.limiter, "acquire": self.acquire}

    def __setstate__(self, state: Any) -> None:
        self.__init__(state["limiter"], state["acquire"])  # type: ignore[misc]

    def before_attempt(self, attempt: Any) -> None:
        if not self.acquire:
            return
        resuming = getattr(attempt, "resuming", None)  # the GET resuming a background stream: no new tokens
        tokens = 0
        if attempt.kind == "stream" and not resuming:
            tokens = estimate_tokens(attempt.messages or (), attempt.config)
        ticket, wait = self.limiter.reserve(tokens)
        if not resuming:  # (the answer's usage settles the ticket of the POST that started it)
            with self._lock:
                self._tickets[id(attempt)] = ticket  # a retry's ticket replaces the failed attempt's
        while wait > 0:
            if not attempt.wait(wait):
                from .errors import TransportError

                raise TransportError("stopped while waiting for the rate limiter", aborted=True, retryable=False)
            wait = self.limiter.paused_for()  # a 429 elsewhere while this one slept holds it back too

    def after_response(self, attempt: Any) -> None:
        if attempt.headers:
            self.limiter.observe(attempt.headers, attempt.status)

    def on_error(self, attempt: Any, error: Any) -> None:
        status = attempt.status if attempt.status is not None else getattr(error, "status", None)
        rate_limited = status == 429 or type(error).__name__ == "RateLimitError"
        self.limiter.observe(attempt.headers or {}, 429 if rate_limited else status,
                             getattr(error, "retry_after", None) if rate_limited else None)

    def on_done(self, attempt: Any) -> None:
        with self._lock:
            ticket = self._tickets.pop(id(attempt), None)
        self.limiter.settle(ticket, attempt.usage)


def has_hook(client: Any, limiter: RateLimiter) -> bool:
    """Whether ``client`` already reports to ``limiter`` (its ``_hooks`` hold a LimiterHook of it)."""
    return any(isinstance(h, LimiterHook) and h.limiter is limiter for h in getattr(client, "_hooks", ()))
