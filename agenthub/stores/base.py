"""The store interface, its URLs, its error, and the algorithms the Python stores share.

A store keeps three kinds of rows, each under a caller's ``key`` (rows of different keys never mix):

- a rate limiter's pacing state: the earliest moment the next request may go, the same for the token
  budget, and a pause (a 429's Retry-After) that holds every user back;
- a budget's account: spent USD, settled requests, and the holds of requests under way.  A hold is a
  lease: ``budget_hold`` gives it ``lease`` seconds, the live holder renews it (``budget_renew``), and a
  hold whose holder stopped renewing (a process killed while its request was under way) expires: its
  whole worst case is then counted as spent (what that request cost is unknown; counting its worst case
  keeps the bound), so it blocks nobody and never lets the account overspend.  Such a hold is remembered for
  ``GONE_SECONDS`` (its id and worst case): a late settlement of it puts the difference right once, and a
  settlement or release of a hold the store does not know (already settled: a retried store call whose first
  try was done; never written) changes nothing;
- the response cache's entries (opaque bytes, a time to live, a total size bound).

``MemoryStore`` and ``SQLiteStore`` run the algorithms below (``limiter_take`` and friends: pure
functions of a row and the time); ``RedisStore`` runs the same steps as Lua scripts on the server.
"""

import logging
import math
import os
import re
import threading
import time
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple

from ..errors import AgentHubError, ConfigError

__all__ = ["Store", "StoreError", "Renewer", "check_key", "LEASE_SECONDS", "SCHEMA_VERSION"]

#: the version of the rows a store holds; a store written by another version is refused (StoreError)
SCHEMA_VERSION = 1
#: how long a budget hold lives without being renewed (its holder renews it every third of that)
LEASE_SECONDS = 30.0
#: how long a budget hold that expired (counted at its whole worst case) is remembered, so that its holder, alive
#: after all, can settle it late (the difference put right, once)
GONE_SECONDS = 86400.0
#: the longest accepted key (the name of a shared account)
MAX_KEY = 200
#: the longest one request's tokens or one pause may hold a limiter's pace back (the limiter's MAX_PAUSE)
MAX_HOLD = 600.0

_KEY = re.compile(r"^[\x21-\x7e]{1,%d}$" % MAX_KEY)


class StoreError(AgentHubError):
    """A shared store that cannot be used: unreachable (a Redis that went away), busy past its timeout,
    or holding rows that are corrupt or from another version.  Raised before the request is sent: a
    store that cannot answer never lets a call through unpaced or unbudgeted."""

    def __init__(self, message: str, *, retryable: bool = False) -> None:
        super(StoreError, self).__init__(message)
        self.retryable = retryable


def _register() -> None:
    """StoreError by its name in the error JSON (``agenthub serve`` answers it so, and a client of the server
    reads it back as a StoreError)."""
    from .. import errors

    errors._CLASSES.setdefault(StoreError.__name__, StoreError)


_register()


def check_key(key: Any, default: str = "default") -> str:
    """The name of a shared account: printable ASCII without spaces, 1 to 200 characters."""
    if key is None:
        return default
    if not isinstance(key, str) or not _KEY.fullmatch(key):
        raise ConfigError("key must be 1 to {} printable ASCII characters without spaces (got {!r})".format(
            MAX_KEY, key if not isinstance(key, str) else key[:60]))
    return key


class Store(object):
    """What the limiter, the budget and the cache ask of a store (every method atomic).

    Times are the store's clock (seconds): a process's own for ``MemoryStore``, the machine's wall clock
    for ``SQLiteStore``, the Redis server's ``TIME`` for ``RedisStore``; callers only ever get durations.
    """

    #: the URL it was opened with (password masked), None for an in-process store
    url = None  # type: Optional[str]
    #: whether budget holds are leases that must be renewed (False: in-process, they die with it)
    leases = True
    #: whether the rows are seen by other processes (a pickled limiter/budget re-opens the same URL)
    shared = True

    def account(self, key: str) -> Any:
        """Which account ``key`` names here, the same for two objects of one store: its kind and URL (this object
        for a store without one), and the key (``agenthub.failover.merge_hooks``: two budgets or limiters of one
        account act once on a call)."""
        return (type(self).__name__, self.url if self.url is not None else id(self), key)

    # -- the rate limiter ---------------------------------------------------------------------------
    def limiter_reserve(self, key: str, rpm: Optional[float], tpm: Optional[float], tokens: int) -> float:
        """Book the next slot: seconds to wait before sending (0 when it may go now)."""
        raise NotImplementedError

    def limiter_adjust(self, key: str, seconds: float) -> None:
        """Move the token pace by ``seconds`` (a settled request used more or fewer tokens than held)."""
        raise NotImplementedError

    def limiter_pause(self, key: str, seconds: float, endpoint: str = "") -> bool:
        """Hold every user's requests to ``endpoint`` ("" : every endpoint) back for ``seconds`` from now;
        True when that extends the pause in force."""
        raise NotImplementedError

    def limiter_pauses(self, key: str) -> Dict[str, float]:
        """The pauses in force: endpoint ("" for every endpoint) -> seconds until it ends."""
        raise NotImplementedError

    def limiter_reslot(self, key: str, rpm: float) -> float:
        """A new slot for a request a pause held past its own: seconds to wait for it."""
        raise NotImplementedError

    # -- the budget ---------------------------------------------------------------------------------
    def budget_hold(self, key: str, max_usd: float, needed: float, hold_id: str,
                    lease: Optional[float]) -> Tuple[bool, float]:
        """Hold ``needed`` when spent + held + needed <= max_usd: (True, spent + held before it); else
        (False, spent + held) and nothing is held."""
        raise NotImplementedError

    def budget_finish(self, key: str, hold_id: str, needed: float, actual: Optional[float]) -> None:
        """Replace the hold by ``actual`` spent (a settled request), or drop it (``actual`` None: released)."""
        raise NotImplementedError

    def budget_renew(self, key: str, hold_ids: Iterable[str], lease: float) -> None:
        """Extend the leases of this holder's holds to ``lease`` seconds from now."""
        raise NotImplementedError

    def budget_charge(self, key: str, usd: float) -> None:
        raise NotImplementedError

    def budget_totals(self, key: str) -> Tuple[float, float, int]:
        """(spent, held, settled requests)."""
        raise NotImplementedError

    # -- the response cache -------------------------------------------------------------------------
    def cache_get(self, key: str) -> Optional[bytes]:
        raise NotImplementedError

    def cache_put(self, key: str, value: bytes, ttl: Optional[float], max_bytes: int) -> None:
        """Store ``value`` for ``ttl`` seconds (None: until evicted); the oldest entries go while the
        total is above ``max_bytes``."""
        raise NotImplementedError

    def cache_delete(self, key: str) -> None:
        raise NotImplementedError

    def close(self) -> None:
        let_go(self)

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


# -- the algorithms (rows are plain dicts; MemoryStore keeps them as they are, SQLiteStore as JSON) ----

def _number(row: Dict[str, Any], name: str, default: float, what: str) -> float:
    value = row.get(name, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise StoreError("the store's {} row is corrupt ({} is {!r}): refusing it; delete the row or use "
                         "another key".format(what, name, value))
    return float(value)


def limiter_take(row: Dict[str, Any], now: float, rpm: Optional[float], tpm: Optional[float],
                 tokens: int) -> Tuple[Dict[str, Any], float]:
    """Generic cell rate pacing: each request books the earliest slot at or after now, the previous
    request's slot + 60/rpm and the token pace; it holds the next one back by its interval (and its
    tokens * 60/tpm, at most ``MAX_HOLD``).  -> (row, seconds to its slot)."""
    r = _number(row, "r", now, "limiter")
    t = _number(row, "t", now, "limiter")
    p = _number(row, "p", now, "limiter")
    at = now  # (a pause does not hold the queue: the limiter waits it out apart, ``limiter_pauses``)
    if rpm:
        at = max(at, r)
        r = at + 60.0 / rpm
    if tpm:
        at = max(at, t)
        t = at + min(tokens * 60.0 / tpm, MAX_HOLD)
    return dict(row, r=r, t=t, p=p), at - now


def limiter_shift(row: Dict[str, Any], now: float, seconds: float) -> Dict[str, Any]:
    # (later by at most MAX_HOLD past where the pace is: never pulled back past the requests booked behind it)
    t = _number(row, "t", now, "limiter")
    t = min(t + seconds, max(t, now) + MAX_HOLD)
    return dict(row, r=_number(row, "r", now, "limiter"), t=t, p=_number(row, "p", now, "limiter"))


def _endpoint_pauses(row: Dict[str, Any], now: float) -> Dict[str, float]:
    pauses = row.get("e", {})
    if not isinstance(pauses, dict):
        raise StoreError("the store's limiter row is corrupt (e): refusing it")
    return {name: _number(pauses, name, now, "limiter") for name in pauses if isinstance(name, str)}


def limiter_hold_back(row: Dict[str, Any], now: float, seconds: float, endpoint: str) -> Tuple[Dict[str, Any], bool]:
    until = now + seconds
    if not endpoint:
        p = _number(row, "p", now, "limiter")
        return dict(row, p=max(p, until)), until > p
    pauses = {name: end for name, end in _endpoint_pauses(row, now).items() if end > now}  # (ended ones go)
    before = pauses.get(endpoint, float("-inf"))
    pauses[endpoint] = max(before, until)
    return dict(row, e=pauses), until > before


def limiter_in_force(row: Dict[str, Any], now: float) -> Dict[str, float]:
    """The pauses in force, each at most ``MAX_HOLD`` from now (one further ahead was written by a clock ahead of
    this one: a wall clock stepped back, another server's after a failover; no pause is ever longer)."""
    out = {name: min(end - now, MAX_HOLD) for name, end in _endpoint_pauses(row, now).items() if end > now}
    p = _number(row, "p", now, "limiter")
    if p > now:
        out[""] = min(p - now, MAX_HOLD)
    return out


def limiter_bounded(row: Dict[str, Any], now: float) -> Optional[Dict[str, Any]]:
    """The row with each pause ending at most ``MAX_HOLD`` from now, or None when none ends later (one that does
    was written by a clock ahead of this one: kept so, it would be read as ``MAX_HOLD`` left at every look, and
    hold the requests back for as long as the clocks are apart, not ``MAX_HOLD``)."""
    latest = now + MAX_HOLD
    pauses = _endpoint_pauses(row, now)
    p = _number(row, "p", now, "limiter")
    if p <= latest and all(end <= latest for end in pauses.values()):
        return None
    out = dict(row, p=min(p, latest))
    if pauses:
        out["e"] = {name: min(end, latest) for name, end in pauses.items()}
    return out


def limiter_new_slot(row: Dict[str, Any], now: float, rpm: float) -> Tuple[Dict[str, Any], float]:
    at = max(now, _number(row, "r", now, "limiter"))
    return dict(row, r=at + 60.0 / rpm), at - now


def _hold_rows(row: Dict[str, Any], name: str) -> Dict[str, List[Any]]:
    holds = row.get(name, {})
    if not isinstance(holds, dict):
        raise StoreError("the store's budget row is corrupt ({}): refusing it".format(name))
    for hold_id, value in holds.items():
        if not (isinstance(value, list) and len(value) == 2 and isinstance(value[0], (int, float))
                and not isinstance(value[0], bool) and math.isfinite(value[0]) and value[0] >= 0
                and (value[1] is None or isinstance(value[1], (int, float)))):
            raise StoreError("the store's budget row is corrupt (hold {!r}): refusing it".format(str(hold_id)[:40]))
    return holds


def _holds(row: Dict[str, Any]) -> Dict[str, List[Any]]:
    return _hold_rows(row, "holds")


def budget_sweep(row: Dict[str, Any], now: float) -> Dict[str, Any]:
    """The row with expired holds counted as spent at their whole worst case (and checked); each is remembered
    in ``gone`` (its worst case, when it expired) for ``GONE_SECONDS``, for its late settlement."""
    spent = _number(row, "spent", 0.0, "budget")
    requests = int(_number(row, "requests", 0, "budget"))
    expired = int(_number(row, "expired", 0, "budget"))
    gone = {hold_id: value for hold_id, value in _hold_rows(row, "gone").items()
            if value[1] is None or value[1] > now - GONE_SECONDS}
    holds = {}
    for hold_id, (needed, expires) in _holds(row).items():
        if expires is not None and expires < now:
            spent += needed
            expired += 1
            gone[hold_id] = [needed, now]
        else:
            holds[hold_id] = [needed, expires]
    out = {"spent": spent, "requests": requests, "expired": expired, "holds": holds}
    if gone:
        out["gone"] = gone
    return out


def budget_held(row: Dict[str, Any]) -> float:
    return sum(needed for needed, _ in row["holds"].values())


def budget_take(row: Dict[str, Any], now: float, max_usd: float, needed: float, hold_id: str,
                lease: Optional[float]) -> Tuple[Dict[str, Any], Tuple[bool, float]]:
    row = budget_sweep(row, now)
    held = row["spent"] + budget_held(row)
    if hold_id in row["holds"]:  # (a retried call whose first try held it: held once)
        return row, (True, held - row["holds"][hold_id][0])
    if held + needed > max_usd + 1e-12:
        return row, (False, held)
    row["holds"][hold_id] = [needed, None if lease is None else now + lease]
    return row, (True, held)


def budget_end(row: Dict[str, Any], now: float, hold_id: str, needed: float,
               actual: Optional[float]) -> Dict[str, Any]:
    row = budget_sweep(row, now)
    if not hold_id:  # (nothing held: an unpriced model's request, counted)
        row["spent"] += actual or 0.0
    elif row["holds"].pop(hold_id, None) is None:
        gone = row.get("gone", {}).pop(hold_id, None)
        if gone is None:
            return row  # settled already (a retried call whose first try was done), or never held: nothing
        # the hold expired and its worst case was counted: put the difference right (once)
        row["spent"] = max(0.0, row["spent"] + (actual or 0.0) - gone[0])
        if not row["gone"]:
            del row["gone"]
    elif actual is not None:
        row["spent"] += actual
    if actual is not None:
        row["requests"] += 1
    return row


def budget_extend(row: Dict[str, Any], now: float, hold_ids: Iterable[str], lease: float) -> Dict[str, Any]:
    row = budget_sweep(row, now)
    for hold_id in hold_ids:
        if hold_id in row["holds"]:
            row["holds"][hold_id][1] = now + lease
    return row


class StateStore(Store):
    """A store of JSON-able rows read and written in one transaction (``_update``): the Python stores."""

    def _now(self) -> float:
        raise NotImplementedError

    def _update(self, kind: str, key: str, step: Callable[[Dict[str, Any], float], Tuple[Dict[str, Any], Any]],
                write: bool = True) -> Any:
        raise NotImplementedError

    def limiter_reserve(self, key: str, rpm: Optional[float], tpm: Optional[float], tokens: int) -> float:
        return self._update("limiter", key, lambda row, now: limiter_take(row, now, rpm, tpm, tokens))

    def limiter_adjust(self, key: str, seconds: float) -> None:
        self._update("limiter", key, lambda row, now: (limiter_shift(row, now, seconds), None))

    def limiter_pause(self, key: str, seconds: float, endpoint: str = "") -> bool:
        return self._update("limiter", key, lambda row, now: limiter_hold_back(row, now, seconds, endpoint))

    def limiter_pauses(self, key: str) -> Dict[str, float]:
        def step(row: Dict[str, Any], now: float) -> Tuple[Dict[str, Any], Any]:
            return row, (limiter_in_force(row, now), limiter_bounded(row, now) is not None)

        pauses, skewed = self._update("limiter", key, step, write=False)
        if skewed:  # (a pause from a clock ahead: brought within MAX_HOLD of now, so that it ends)
            self._update("limiter", key, lambda row, now: (limiter_bounded(row, now) or row, None))
        return pauses  # type: ignore[no-any-return]

    def limiter_reslot(self, key: str, rpm: float) -> float:
        return self._update("limiter", key, lambda row, now: limiter_new_slot(row, now, rpm))

    def budget_hold(self, key: str, max_usd: float, needed: float, hold_id: str,
                    lease: Optional[float]) -> Tuple[bool, float]:
        return self._update("budget", key, lambda row, now: budget_take(row, now, max_usd, needed, hold_id, lease))

    def budget_finish(self, key: str, hold_id: str, needed: float, actual: Optional[float]) -> None:
        self._update("budget", key, lambda row, now: (budget_end(row, now, hold_id, needed, actual), None))

    def budget_renew(self, key: str, hold_ids: Iterable[str], lease: float) -> None:
        ids = list(hold_ids)
        self._update("budget", key, lambda row, now: (budget_extend(row, now, ids, lease), None))

    def budget_charge(self, key: str, usd: float) -> None:
        def step(row: Dict[str, Any], now: float) -> Tuple[Dict[str, Any], None]:
            row = budget_sweep(row, now)
            row["spent"] += usd
            return row, None

        self._update("budget", key, step)

    def budget_totals(self, key: str) -> Tuple[float, float, int]:
        def step(row: Dict[str, Any], now: float) -> Tuple[Dict[str, Any], Tuple[float, float, int]]:
            row = budget_sweep(row, now)
            return row, (row["spent"], budget_held(row), row["requests"])

        return self._update("budget", key, step)


class _Leases(object):
    """The one lease-renewing thread of this process, for every Renewer (every budget, every store).  It runs
    while holds are live, renews each Renewer's holds every third of its lease, and lingers one such period
    after the last hold ends (a steady flow of holds reuses one thread instead of starting one per hold)."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.renewers = set()  # type: set
        self.thread = None  # type: Optional[threading.Thread]
        self.pid = None  # type: Optional[int]

    def wake(self, renewer: "Renewer") -> None:
        """(called with ``cond`` held) make sure the thread runs and renews ``renewer``'s holds in time."""
        if self.pid != os.getpid():  # a forked child: the parent's thread and holds are not its own
            self.pid, self.renewers, self.thread = os.getpid(), set(), None
        self.renewers.add(renewer)
        if self.thread is None or not self.thread.is_alive():
            self.thread = threading.Thread(target=self._run, name="agenthub-lease", daemon=True)
            self.thread.start()
        else:
            self.cond.notify_all()

    def _run(self) -> None:
        idle = False
        period = LEASE_SECONDS / 3.0
        while True:
            with self.cond:
                live = [r for r in self.renewers if r._ids]
                if not live:
                    if idle:
                        self.thread = None
                        self.renewers = set()
                        return
                    idle = True  # linger one period for the next hold
                else:
                    idle = False
                    period = min(r.lease for r in live) / 3.0
                self.cond.wait(period)
                work = [(r, list(r._ids), dict(r._later)) for r in self.renewers if r._ids]
            for renewer, ids, later in work:
                try:
                    renewer.store.budget_renew(renewer.key, ids, renewer.lease)
                except Exception:  # noqa: BLE001 - the one thread renewing every hold of the process never dies
                    pass  # unreachable for now: the next round tries again (past the lease, the holds count)
                for hold_id, (needed, actual, since) in later.items():
                    try:
                        renewer.store.budget_finish(renewer.key, hold_id, needed, actual)
                    except Exception as exc:  # noqa: BLE001 - as above
                        refused = isinstance(exc, AgentHubError) and not getattr(exc, "retryable", False)
                        if not refused and time.monotonic() - since < GONE_SECONDS:
                            continue  # the next round tries again (the store remembers an expired hold a day)
                    renewer.discard(hold_id)  # (done, or refused for good: a corrupt or lost account)


    def reset(self) -> None:
        """In a forked child: a fresh condition (another thread may have held this one at the fork), no thread."""
        self.cond = threading.Condition()
        self.pid, self.renewers, self.thread = os.getpid(), set(), None


_LEASES = _Leases()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_LEASES.reset)

_logger = logging.getLogger("agenthub.stores")


def let_go(store: Any) -> None:
    """``store`` is being closed (its owner is done with it): the settlements it did not take, which the lease thread
    would try each round for up to a day (``settle_later``), are tried once more now, and then let go: a store that
    still does not answer leaves those holds to expire and count their worst case (said in the log, once per budget).
    After the first try that finds it unreachable, the others are let go without waiting each its own timeout."""
    owed = []  # type: List[Tuple[Any, str, Tuple[float, Optional[float], float]]]
    with _LEASES.cond:
        for renewer in list(_LEASES.renewers):
            if renewer.store is store and renewer._pid == os.getpid():
                owed.extend((renewer, hold_id, entry) for hold_id, entry in list(renewer._later.items()))
    left = {}  # type: Dict[str, int]
    reachable = True
    for renewer, hold_id, (needed, actual, _) in owed:
        if reachable:
            try:
                store.budget_finish(renewer.key, hold_id, needed, actual)
            except Exception as exc:  # noqa: BLE001 - closing never raises
                if not (isinstance(exc, AgentHubError) and not getattr(exc, "retryable", False)):
                    reachable = False  # (refused for good: let go, as the lease thread does)
        if not reachable:
            left[renewer.key] = left.get(renewer.key, 0) + 1
        renewer.discard(hold_id)
    for key, count in sorted(left.items()):
        _logger.warning("budget %r: %s the store did not take %s let go when the store was closed (%s)", key,
                        "1 settlement" if count == 1 else "{} settlements".format(count),
                        "was" if count == 1 else "were", "its hold expires and counts its worst case" if count == 1
                        else "their holds expire and count their worst case")


class Renewer(object):
    """Keeps one budget's holds (on ``store`` under ``key``) alive: their leases are renewed every
    ``lease / 3`` seconds by the process's one lease thread, which runs only while holds are live (and one
    period after)."""

    def __init__(self, store: Store, key: str, lease: float = LEASE_SECONDS) -> None:
        self.store = store
        self.key = key
        self.lease = lease
        self._ids = set()  # type: set
        self._later = {}  # type: Dict[str, Tuple[float, Optional[float], float]]  # unsettled: (needed, actual, since)
        self._pid = None  # type: Optional[int]

    @property
    def _thread(self) -> Optional[threading.Thread]:
        return _LEASES.thread

    def add(self, hold_id: str) -> None:
        with _LEASES.cond:
            if self._pid != os.getpid():  # a forked child: the parent's holds are not its own
                self._pid, self._ids, self._later = os.getpid(), set(), {}
            self._ids.add(hold_id)
            _LEASES.wake(self)

    def settle_later(self, hold_id: str, needed: float, actual: Optional[float]) -> None:
        """A settlement (``actual``; None: a release) the store did not take: the hold stays renewed and the lease
        thread settles it each round until the store takes it (a day at most)."""
        with _LEASES.cond:
            if self._pid != os.getpid():
                self._pid, self._ids, self._later = os.getpid(), set(), {}
            self._ids.add(hold_id)
            self._later[hold_id] = (needed, actual, time.monotonic())
            _LEASES.wake(self)

    def discard(self, hold_id: str) -> None:
        with _LEASES.cond:
            self._ids.discard(hold_id)
            self._later.pop(hold_id, None)
