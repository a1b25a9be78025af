"""Journal rows: the third kind of row a store keeps, for runs that survive a crash (agenthub.agent.journal).

A run's journal is a numbered list of entries (JSON text, written once, never changed) under its
``run_id``, and a lease: the run has one owner at a time.  ``journal_claim`` takes the lease when it is
free or expired (a killed owner stops renewing it) and renews it for its holder; ``journal_append`` writes
the next entry (``journal_append_many`` the next few, in one step: all or none) only while the writer holds the lease and only as the next number (a fence: a worker
that lost the run to another can no longer write into it); a run is forgotten ``ttl`` seconds after its
last write, or at once with ``journal_forget``.  ``journal_open`` is the claim with the read of the entries and
``journal_finish`` the last entries with the release: one store call each on SQLite and Redis (a run's start
and end), the same steps one after the other here.

``MemoryStore`` and ``SQLiteStore`` run the steps below (``SQLiteStore`` keeps entries in a table of
their own, so an append writes its entries, not the whole run); ``RedisStore`` runs the same steps as Lua
on the server.  Times are the store's clock, as for the other rows.
"""

from typing import Any, Dict, List, Optional, Sequence, Tuple

from .base import StoreError

__all__ = ["JournalRows", "JOURNAL_LEASE", "MAX_ENTRY", "claim_step", "append_step", "lost_lease", "check_entries"]

#: how long a run's lease lives without renewal (its owner renews it every third of that)
JOURNAL_LEASE = 30.0
#: the largest entry a journal takes (characters of JSON text)
MAX_ENTRY = 64 * 1024 * 1024


def lost_lease(run_id: str, owner: Optional[str]) -> StoreError:
    held = "another worker holds it now" if owner else "it lapsed: renewed too late"
    return StoreError("the journal of run {!r}: this worker no longer holds its lease ({}); nothing more is "
                      "written here".format(run_id, held))


def check_entries(run_id: str, entries: Sequence[str]) -> bool:
    """Whether there is anything to append (False for none); StoreError for an entry past MAX_ENTRY."""
    for entry in entries:
        if len(entry) > MAX_ENTRY:
            raise StoreError("the journal of run {!r}: an entry of {} characters (the bound is {})".format(
                run_id, len(entry), MAX_ENTRY))
    return bool(entries)


def claim_step(row: Dict[str, Any], now: float, owner: str, lease: float,
               ttl: Optional[float]) -> Tuple[Dict[str, Any], Optional[float]]:
    """Take or renew the lease: (row, None) when ``owner`` holds it now, else (row, seconds left)."""
    row = dict(row) if row else {"entries": [], "owner": None, "until": 0.0, "updated": now, "expires": None}
    current = row.get("owner")
    if current is not None and current != owner and row.get("until", 0.0) > now:
        return row, row["until"] - now
    row["owner"] = owner
    row["until"] = now + lease
    if ttl is not None and not row["entries"]:
        row["expires"] = now + ttl
    return row, None


def append_step(row: Dict[str, Any], now: float, run_id: str, owner: str, seq: int, entries: Sequence[str],
                ttl: Optional[float]) -> Tuple[Dict[str, Any], None]:
    if not row or row.get("owner") != owner or row.get("until", 0.0) <= now:
        raise lost_lease(run_id, row.get("owner") if row and row.get("until", 0.0) > now else None)
    if seq != len(row["entries"]):
        raise StoreError("the journal of run {!r}: entry {} written where entry {} is next (two writers?): "
                         "refusing it".format(run_id, seq, len(row["entries"])))
    row = dict(row)
    row["entries"] = row["entries"] + list(entries)
    row["updated"] = now
    row["expires"] = None if ttl is None else now + ttl
    return row, None


def _expired(row: Dict[str, Any], now: float) -> bool:
    return row.get("expires") is not None and row["expires"] <= now


class JournalRows(object):
    """The journal's operations on a store of JSON rows (``StateStore._update``): MemoryStore's."""

    def journal_claim(self, run_id: str, owner: str, lease: float = JOURNAL_LEASE,
                      ttl: Optional[float] = None) -> Optional[float]:
        """None when ``owner`` holds the run's lease now (taken or renewed), else the seconds the current
        owner's lease has left."""
        def step(row: Dict[str, Any], now: float) -> Tuple[Dict[str, Any], Optional[float]]:
            if row and _expired(row, now):
                row = {}
            return claim_step(row, now, owner, lease, ttl)

        self._journal_expire()
        return self._update("journal", run_id, step)  # type: ignore[attr-defined, no-any-return]

    def journal_append(self, run_id: str, owner: str, seq: int, entry: str, ttl: Optional[float] = None) -> None:
        """Write ``entry`` as entry number ``seq`` of the run, only while ``owner`` holds its lease and only when
        ``seq`` is next (StoreError otherwise: the fence)."""
        self.journal_append_many(run_id, owner, seq, [entry], ttl)

    def journal_append_many(self, run_id: str, owner: str, seq: int, entries: Sequence[str],
                            ttl: Optional[float] = None) -> None:
        """``journal_append`` of several entries at once (numbers ``seq``, ``seq + 1``...): all are written, in
        one step (one transaction, one Lua call), or none is."""
        if not check_entries(run_id, entries):
            return
        self._update("journal", run_id,  # type: ignore[attr-defined]
                     lambda row, now: append_step(row, now, run_id, owner, seq, entries, ttl))

    def journal_open(self, run_id: str, owner: str, lease: float = JOURNAL_LEASE,
                     ttl: Optional[float] = None) -> Tuple[Optional[float], List[str]]:
        """``journal_claim`` and, when ``owner`` holds the lease, ``journal_entries`` (SQLiteStore and RedisStore:
        in one store call): (None, the entries) or (the seconds the current owner's lease has left, [])."""
        left = self.journal_claim(run_id, owner, lease, ttl)
        return (left, []) if left is not None else (None, self.journal_entries(run_id))

    def journal_finish(self, run_id: str, owner: str, seq: int, entries: Sequence[str],
                       ttl: Optional[float] = None) -> None:
        """``journal_append_many`` (the fence, all or none) then ``journal_release`` (SQLiteStore and RedisStore:
        in one store call; the lease is let go only when the entries were written)."""
        self.journal_append_many(run_id, owner, seq, entries, ttl)
        self.journal_release(run_id, owner)

    def journal_entries(self, run_id: str, start: int = 0) -> List[str]:
        def step(row: Dict[str, Any], now: float) -> Tuple[Dict[str, Any], List[str]]:
            if not row or _expired(row, now):
                return row, []
            return row, list(row["entries"][start:])

        return self._update("journal", run_id, step, write=False)  # type: ignore[attr-defined, no-any-return]

    def journal_release(self, run_id: str, owner: str) -> None:
        def step(row: Dict[str, Any], now: float) -> Tuple[Dict[str, Any], None]:
            if row and row.get("owner") == owner:
                row = dict(row, owner=None, until=0.0)
            return row, None

        self._update("journal", run_id, step)  # type: ignore[attr-defined]

    def journal_forget(self, run_id: str) -> bool:
        def step(row: Dict[str, Any], now: float) -> Tuple[Dict[str, Any], bool]:
            return {}, bool(row and row.get("entries") and not _expired(row, now))

        return self._update("journal", run_id, step)  # type: ignore[attr-defined, no-any-return]

    def journal_runs(self) -> List[Dict[str, Any]]:
        """Every run with entries: ``run_id``, ``entries`` (how many), ``age`` (seconds since its last write),
        ``owned`` (whether a live lease holds it)."""
        now = self._now()  # type: ignore[attr-defined]
        out = []
        for run_id, row in self._journal_rows():
            if row.get("entries") and not _expired(row, now):
                out.append({"run_id": run_id, "entries": len(row["entries"]), "age": max(0.0, now - row["updated"]),
                            "owned": row.get("owner") is not None and row.get("until", 0.0) > now})
        return sorted(out, key=lambda r: r["run_id"])

    def _journal_rows(self) -> List[Tuple[str, Dict[str, Any]]]:
        raise NotImplementedError

    def _journal_expire(self) -> None:
        """(each claim: a run's start) the rows of runs past their ``ttl`` go, whichever run they are: a run never
        claimed again is forgotten all the same."""
