"""MemoryStore: the rows in this process (the default: what RateLimiter and Budget always did)."""

import collections
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

from .._forks import renew_lock_after_fork
from .base import StateStore
from .journal import JournalRows

__all__ = ["MemoryStore"]

class MemoryStore(JournalRows, StateStore):
    """Rows in a dict behind one lock.  ``clock`` is the limiter's (tests drive time by hand).  Budget
    holds never expire here (they live and die with the process that holds them)."""

    url = None
    leases = False
    shared = False

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._rows = {}  # type: Dict[Tuple[str, str], Dict[str, Any]]
        self._cache = collections.OrderedDict()  # type: collections.OrderedDict
        self._cache_bytes = 0
        renew_lock_after_fork(self)

    def __repr__(self) -> str:
        return "MemoryStore()"

    def _now(self) -> float:
        return self._clock()

    def _update(self, kind: str, key: str, step: Callable[[Dict[str, Any], float], Tuple[Dict[str, Any], Any]],
                write: bool = True) -> Any:
        with self._lock:
            row = self._rows.get((kind, key), {})
            new, result = step(row, self._clock())  # (the steps build new rows: a failed one changes nothing)
            if write:
                self._rows[(kind, key)] = new
            return result

    # the cache: an insertion-ordered dict (the oldest goes first when the size bound is passed)
    def cache_get(self, key: str) -> Optional[bytes]:
        with self._lock:
            entry = self._cache.get(key)
            if entry is None:
                return None
            value, expires = entry
            if expires is not None and expires <= time.time():
                del self._cache[key]
                self._cache_bytes -= len(value)
                return None
            return value

    def cache_put(self, key: str, value: bytes, ttl: Optional[float], max_bytes: int) -> None:
        with self._lock:
            old = self._cache.pop(key, None)
            if old is not None:
                self._cache_bytes -= len(old[0])
            if len(value) > max_bytes:
                return
            self._cache[key] = (bytes(value), None if ttl is None else time.time() + ttl)
            self._cache_bytes += len(value)
            while self._cache_bytes > max_bytes and self._cache:
                _, (dropped, _) = self._cache.popitem(last=False)
                self._cache_bytes -= len(dropped)

    def cache_delete(self, key: str) -> None:
        with self._lock:
            old = self._cache.pop(key, None)
            if old is not None:
                self._cache_bytes -= len(old[0])

    # the journal (durable runs): its rows are ("journal", run_id) rows; a run lives as long as the process
    def _journal_rows(self) -> List[Tuple[str, Dict[str, Any]]]:
        with self._lock:
            return [(key, row) for (kind, key), row in self._rows.items() if kind == "journal"]

    def _journal_expire(self) -> None:
        with self._lock:
            now = self._clock()
            for name in [name for name, row in self._rows.items() if name[0] == "journal"
                         and row.get("expires") is not None and row["expires"] <= now]:
                del self._rows[name]
