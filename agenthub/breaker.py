"""Circuit breakers, one per endpoint (client type + endpoint + model), shared by every client in the process.

The endpoint (``endpoint_name``) is the host and port, the base URL's path and the credentials the requests
carry: the same model reached through another key (another organisation's quota) or another base path (another
Vertex project, another route of one gateway) fails on its own, and has a breaker of its own.

Rules (``AutoLLMClient(..., circuit_breaker={"failures": 3, "cooldown": 30.0})``):

- closed: failures are counted; a success resets the count.  ``failures`` consecutive failures open it.
- open: ``allow()`` is False (the client skips the endpoint at once, in microseconds) until ``cooldown``
  seconds have passed since it opened.
- half-open: after the cooldown one caller's ``allow()`` is True (the probe); every other caller is
  refused until the probe reports.  A success closes the breaker, a failure opens it for another cooldown.
  A probe that ends without a verdict lets the next one go; a caller let through before (while the breaker
  was closed) that ends so does not (``admit`` / ``release(probe)``: half-open never has two probes).

Only failures that say the endpoint is unwell count: the ones the client would fail over on (a retryable
status after its retries, a connection failure, a timeout before the first event, an in-stream error
before any content).  A 400 says nothing about the endpoint and is never counted.

State lives in this module (a dict under one lock), so two clients of one endpoint share it; a forked
child starts with every breaker closed (its parent's failures are not its own).  ``clock`` is
``time.monotonic``; tests replace it (``agenthub.breaker.clock = fake``).
"""

import hashlib
import hmac
import os
import threading
import time
from typing import Any, Dict, Iterable, Mapping, Optional, Tuple

__all__ = ["DEFAULTS", "Breaker", "breaker_for", "endpoint_name", "account_mark", "reset", "settings", "clock"]

#: the defaults of ``circuit_breaker``
DEFAULTS = {"failures": 3, "cooldown": 30.0}

#: the clock the breakers read (seconds, monotonic); tests swap it
clock = time.monotonic

CLOSED, OPEN, HALF_OPEN = "closed", "open", "half-open"


class Breaker(object):
    """The state of one endpoint.  Thread-safe; every method is O(1)."""

    __slots__ = ("key", "state", "failures", "opened_at", "probing", "probes", "_lock")

    def __init__(self, key: Tuple[str, str, str]) -> None:
        self.key = key
        self.state = CLOSED
        self.failures = 0
        self.opened_at = 0.0
        self.probing = False
        self.probes = 0  # probes let through so far: the number of the one in flight while probing
        self._lock = threading.Lock()

    def allow(self, cooldown: float) -> bool:
        """May a request go to this endpoint now?  (In half-open state, True once: the probe.)"""
        return self.admit(cooldown) is not None

    def admit(self, cooldown: float) -> Optional[int]:
        """``allow`` that says who was let through: None (refused), 0 (the breaker is closed) or the probe's
        number (half-open: this caller is the probe), to give to ``release`` when it ends without a verdict."""
        with self._lock:
            if self.state == CLOSED:
                return 0
            if self.state == OPEN:
                if clock() - self.opened_at < cooldown:
                    return None
                self.state, self.probing = HALF_OPEN, False
            if self.probing:
                return None
            self.probing = True
            self.probes += 1
            return self.probes

    def success(self) -> None:
        with self._lock:
            self.state, self.failures, self.probing = CLOSED, 0, False

    def failure(self, threshold: int) -> None:
        with self._lock:
            self.failures += 1
            if self.state == HALF_OPEN or self.failures >= threshold:
                self.state, self.opened_at, self.probing = OPEN, clock(), False

    def release(self, probe: Optional[int] = None) -> None:
        """A probe that ended without a verdict (the caller stopped before any answer): let another probe go.
        ``probe``: what ``admit`` returned to the caller; a caller that was not the probe in flight (let through
        while the breaker was closed, or a probe since superseded) frees nothing (None: the probe in flight)."""
        with self._lock:
            if probe is None or (probe and probe == self.probes):
                self.probing = False

    def __repr__(self) -> str:
        return "Breaker({!r}, state={!r}, failures={})".format(self.key, self.state, self.failures)


_lock = threading.Lock()
_breakers = {}  # type: Dict[Tuple[str, str, str], Breaker]


def breaker_for(client_type: str, host: str, model: str) -> Breaker:
    """The process-wide breaker of one endpoint."""
    key = (client_type, host, model)
    found = _breakers.get(key)
    if found is None:
        with _lock:
            found = _breakers.setdefault(key, Breaker(key))
    return found


#: the key of the hash that marks a credential in a breaker's key: new in each process, so the mark is no value a log
#: could show, nor one another process could compare
_MARK_KEY = os.urandom(16)


def endpoint_name(host: str, path: str = "", credentials: Iterable[Any] = ()) -> str:
    """The endpoint part of a breaker's key: ``host`` (host and port), the base URL's ``path`` and a mark of the
    ``credentials`` the requests carry (a keyed hash, never a credential): two clients of one model on one host with
    two keys, or two base paths, are two endpoints, each failing on its own."""
    name = host + path.rstrip("/")
    values = sorted(set(value for value in credentials if isinstance(value, str) and value))
    if values:
        mark = hmac.new(_MARK_KEY, "\x00".join(values).encode("utf-8", "surrogatepass"), hashlib.sha256)
        name += " key:" + mark.hexdigest()[:16]
    return name


#: the salt and rounds of ``account_mark``'s slow hash
_ACCOUNT_SALT = b"agenthub rate-limit account"
_ACCOUNT_ROUNDS = 10000
_accounts = {}  # type: Dict[str, str]  # a credential set's mark in this process -> its account_mark


def account_mark(credentials: Iterable[Any] = ()) -> Optional[str]:
    """A mark of the ``credentials`` requests carry that is the same in every process: a rate limiter's pause of a
    429 holds the requests of that account, and a shared store (SQLite, Redis) keeps it for the other processes.
    64 bits of a slow salted hash (PBKDF2-SHA256): never a credential, nor a quick test of a guessed one (each
    credential set is hashed once a process); None without credentials."""
    values = sorted(set(value for value in credentials if isinstance(value, str) and value))
    if not values:
        return None
    joined = "\x00".join(values).encode("utf-8", "surrogatepass")
    local = hmac.new(_MARK_KEY, joined, hashlib.sha256).hexdigest()
    found = _accounts.get(local)
    if found is None:
        found = hashlib.pbkdf2_hmac("sha256", joined, _ACCOUNT_SALT, _ACCOUNT_ROUNDS).hex()[:16]
        if len(_accounts) >= 4096:  # (a process that makes clients of ever new keys: a bounded cache)
            _accounts.clear()
        _accounts[local] = found
    return found


def reset() -> None:
    """Forget every breaker (a forked child; tests)."""
    global _lock
    _lock = threading.Lock()
    _breakers.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=reset)


def settings(value: Any) -> Optional[Dict[str, Any]]:
    """``circuit_breaker=`` checked: None -> the defaults, False -> None (off), a dict -> merged with the defaults."""
    from .errors import ConfigError

    if value is None or value is True:
        return dict(DEFAULTS)
    if value is False:
        return None
    if not isinstance(value, Mapping):
        raise ConfigError("circuit_breaker must be None, False or a dict with 'failures' and/or 'cooldown'")
    unknown = sorted(set(value) - set(DEFAULTS))
    if unknown:
        raise ConfigError("circuit_breaker: unknown key(s) {} (known: failures, cooldown)".format(", ".join(
            repr(key) for key in unknown)))
    merged = dict(DEFAULTS)
    merged.update(value)
    failures, cooldown = merged["failures"], merged["cooldown"]
    if not isinstance(failures, int) or isinstance(failures, bool) or failures < 1:
        raise ConfigError("circuit_breaker['failures'] must be an int >= 1")
    if not isinstance(cooldown, (int, float)) or isinstance(cooldown, bool) or not 0 <= cooldown < float("inf"):
        raise ConfigError("circuit_breaker['cooldown'] must be a number of seconds >= 0")
    return {"failures": failures, "cooldown": float(cooldown)}
