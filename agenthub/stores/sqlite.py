"""SQLiteStore: rows in one SQLite file, shared by every process on a machine.

``sqlite:///relative/path`` is a path relative to the working directory, ``sqlite:////absolute/path``
an absolute one (the convention SQLAlchemy uses: what follows ``sqlite:///`` is the path).  The file is
created when missing (its folder must exist).  Each read-modify-write is one ``BEGIN IMMEDIATE``
transaction (the write lock is taken first, so two writers never both read the old row; a durable run's
journal write is one INSERT into a view whose trigger makes the same checks and updates: an implicit
transaction that takes the write lock first the same way), the journal
is WAL with ``synchronous = NORMAL`` (readers never wait for a writer; no fsync per update: a power
loss may drop the last updates, a crashed process never does), and a writer waits up to ``timeout`` seconds (30) for the lock
before a retryable StoreError.  Times are this machine's wall clock (``time.time``), which every process
on it shares.  One connection per thread, opened on first use (and again in a forked child).
"""

import json
import os
import sqlite3
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from .._redact import shown_url
from ..errors import ConfigError
from .base import SCHEMA_VERSION, StateStore, StoreError, let_go
from .files import check_folder, make_file
from .journal import JOURNAL_LEASE, JournalRows, check_entries, lost_lease
from .._jsondepth import loads as _json_loads

__all__ = ["SQLiteStore", "sqlite_path"]

#: the most entries one statement writes (more: the transaction of ``_append``)
_MOST = 8
#: the most runs past their ttl one claim removes (a run is claimed at least once: they never pile up)
_EXPIRE = 32

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS agenthub_meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS agenthub_rows (kind TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, "
    "PRIMARY KEY (kind, key))",
    "CREATE TABLE IF NOT EXISTS agenthub_cache (key TEXT PRIMARY KEY, value BLOB NOT NULL, size INTEGER NOT NULL, "
    "expires REAL, stored REAL NOT NULL)",
    "CREATE INDEX IF NOT EXISTS agenthub_cache_stored ON agenthub_cache (stored)",
    # the journal of durable runs: one row per run (its lease and expiry), one per entry
    "CREATE TABLE IF NOT EXISTS agenthub_journal_runs (run_id TEXT PRIMARY KEY, owner TEXT, until REAL NOT NULL, "
    "updated REAL NOT NULL, expires REAL, entries INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS agenthub_journal (run_id TEXT NOT NULL, seq INTEGER NOT NULL, entry TEXT NOT NULL, "
    "PRIMARY KEY (run_id, seq))",
    # (the runs past their ttl, found by each claim and removed, whichever run they are: added to a file of an
    # earlier agenthub when it opens, as the view below)
    "CREATE INDEX IF NOT EXISTS agenthub_journal_runs_expires ON agenthub_journal_runs (expires)",
    # a journal write in one statement (``SQLiteStore._append_now``): an INSERT of one row (up to _MOST entries,
    # ``count`` of them given) into this view (no rows of its own) runs its trigger: the fenced update of the run's
    # row (the holder's live lease, the next number, not expired) as ``_APPEND`` (``release``: the lease let go in
    # it, as ``_APPEND_RELEASE``), the fence failed (``_FENCE``) when no row was updated, the expiry set only when it
    # changes (a run without a ttl keeps NULL: its index, a page of its own, is not written again each commit), the
    # entries inserted as numbers ``seq``, ``seq + 1``...  Added to a file of an earlier agenthub when it opens (its
    # tables as they were, so no new schema version; an earlier agenthub that shares the file ignores it and writes
    # as it did, through its own view, ``agenthub_journal_append1``, or its transaction)
    "CREATE VIEW IF NOT EXISTS agenthub_journal_append2 AS SELECT NULL AS run_id, NULL AS owner, NULL AS seq, "
    "NULL AS now, NULL AS expires, NULL AS count, NULL AS release, " + ", ".join(
        "NULL AS e{}".format(n) for n in range(_MOST)) + " WHERE 0",
    "CREATE TRIGGER IF NOT EXISTS agenthub_journal_append2 INSTEAD OF INSERT ON agenthub_journal_append2 BEGIN "
    "UPDATE agenthub_journal_runs SET updated = NEW.now, entries = NEW.seq + NEW.count, "
    "owner = CASE WHEN NEW.release THEN NULL ELSE owner END, until = CASE WHEN NEW.release THEN 0 ELSE until END "
    "WHERE run_id = NEW.run_id AND owner = NEW.owner AND until > NEW.now AND entries = NEW.seq "
    "AND (expires IS NULL OR expires > NEW.now); "
    "SELECT RAISE(ABORT, 'agenthub journal fence') WHERE changes() != 1; "
    "UPDATE agenthub_journal_runs SET expires = NEW.expires WHERE run_id = NEW.run_id AND expires IS NOT NEW.expires; "
    "INSERT INTO agenthub_journal (run_id, seq, entry) SELECT NEW.run_id, NEW.seq, NEW.e0" + "".join(
        " UNION ALL SELECT NEW.run_id, NEW.seq + {0}, NEW.e{0} WHERE NEW.count > {0}".format(n)
        for n in range(1, _MOST)) + "; END",
)
#: the trigger's error when the fence does not hold (then the transaction of ``_append`` says why)
_FENCE = "agenthub journal fence"


def sqlite_path(url: str) -> str:
    """The file path of ``sqlite:///relative/path`` or ``sqlite:////absolute/path`` (ConfigError otherwise)."""
    prefix = "sqlite:///"
    if not url.startswith(prefix) or "?" in url or "#" in url:
        raise ConfigError("store {!r}: an SQLite store is sqlite:///relative/path or sqlite:////absolute/path "
                          "(no host, no query)".format(shown_url(url)[:120]))
    path = url[len(prefix):]
    if not path or path.endswith("/") or "\x00" in path:
        raise ConfigError("store {!r}: names no file".format(url[:120]))
    return path


def _one(count: int, ttl: bool, release: bool) -> str:
    """The statement that writes ``count`` entries through the view (parameters: run_id, owner, seq, now, the
    expiry when ``ttl``, then the entries; no expiry, no entry: a NULL in the text, not a None bound); ``release``:
    the lease let go in the same statement (the run's last write)."""
    first = 6 if ttl else 5
    return "INSERT INTO agenthub_journal_append2 VALUES (?1, ?2, ?3, ?4, {}, {}, {}, {})".format(
        "?5" if ttl else "NULL", count, int(release),
        ", ".join("?{}".format(first + n) if n < count else "NULL" for n in range(_MOST)))


#: the statements by (ttl, release), then by the number of entries
_ONES = {(ttl, release): [""] + [_one(n, ttl, release) for n in range(1, _MOST + 1)]
         for ttl in (False, True) for release in (False, True)}


class SQLiteStore(JournalRows, StateStore):
    def __init__(self, url: str, timeout: float = 30.0) -> None:
        self.path = sqlite_path(url)
        self.url = url
        self._shown = url[:120]
        folder = os.path.dirname(os.path.abspath(self.path))
        if not os.path.isdir(folder):
            raise ConfigError("store {!r}: the folder {!r} does not exist".format(url[:120], folder[:200]))
        if os.path.isdir(self.path):
            raise ConfigError("store {!r}: {!r} is a folder, not a file".format(url[:120], self.path[:200]))
        check_folder(folder, url[:120])
        make_file(self.path, url[:120])
        self.timeout = float(timeout)
        self._local = threading.local()
        self._lock = threading.Lock()
        self._connections = []  # type: List[Tuple[threading.Thread, sqlite3.Connection]]  # (its thread, it)
        self._pid = os.getpid()
        self._setup()

    def __repr__(self) -> str:
        return "SQLiteStore({!r})".format(self.url)

    def __getstate__(self) -> Any:
        return {"url": self.url, "timeout": self.timeout}

    def __setstate__(self, state: Any) -> None:
        self.__init__(state["url"], state["timeout"])  # type: ignore[misc]

    # -- connections --------------------------------------------------------------------------------
    def _connection(self) -> sqlite3.Connection:
        if os.getpid() != self._pid:  # a forked child: the parent's connections are not ours to use
            with self._lock:
                self._pid = os.getpid()
                self._connections = []
                self._local = threading.local()
        conn = getattr(self._local, "conn", None)
        if conn is None:
            opened = None
            try:
                conn = opened = sqlite3.connect(self.path, timeout=self.timeout, isolation_level=None,
                                                check_same_thread=False)
                conn.execute("PRAGMA busy_timeout = {:d}".format(int(self.timeout * 1000)))
                # WAL with synchronous NORMAL: a commit is atomic and durable across crashes of the processes;
                # a power loss may drop the last commits (never corrupts), and no fsync per update
                conn.execute("PRAGMA synchronous = NORMAL")
            except sqlite3.OperationalError as exc:
                if opened is not None:
                    opened.close()
                raise StoreError("store {!r}: cannot open it: {}".format(self._shown, exc))
            except sqlite3.DatabaseError as exc:
                if opened is not None:
                    opened.close()
                raise StoreError("store {!r} is not a usable SQLite database ({}): refusing it".format(self._shown, exc))
            self._local.conn = conn
            with self._lock:  # (the connections of threads that ended are closed: a store kept for long, used
                # from a thread a request or a run, holds one connection a live thread, not one a thread ever)
                ended = [c for t, c in self._connections if not t.is_alive()]
                self._connections = [(t, c) for t, c in self._connections if t.is_alive()]
                self._connections.append((threading.current_thread(), conn))
            for old in ended:
                try:
                    old.close()
                except sqlite3.Error:
                    pass
        return conn

    def close(self) -> None:
        """Close every connection this store opened (any thread's); it reopens on the next use.  What its budgets
        still owe (settlements it did not take) is tried once more, then let go (``base.let_go``)."""
        let_go(self)
        with self._lock:
            connections, self._connections = self._connections, []
            self._local = threading.local()
        if os.getpid() == self._pid:
            for _, conn in connections:
                try:
                    conn.close()
                except sqlite3.Error:
                    pass

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass

    def _transaction(self, work: Callable[[Any, float], Any], immediate: bool = True, conn: Any = None) -> Any:
        """``work(conn, now)`` in one transaction (``conn``: this thread's connection, or a cursor on it)."""
        if conn is None:
            conn = self._connection()
        try:
            conn.execute("BEGIN IMMEDIATE" if immediate else "BEGIN")
            try:
                result = work(conn, time.time())
                conn.execute("COMMIT")
                return result
            except BaseException:
                try:
                    conn.execute("ROLLBACK")
                except sqlite3.Error:
                    pass
                raise
        except sqlite3.DatabaseError as exc:
            raise self._failed(exc)

    def _failed(self, exc: sqlite3.DatabaseError) -> StoreError:
        """The StoreError of an SQLite error in a transaction (busy past the timeout: retryable)."""
        if isinstance(exc, sqlite3.OperationalError):
            if "locked" in str(exc) or "busy" in str(exc):
                return StoreError("store {!r}: still busy after {:g} s: {}".format(self._shown, self.timeout, exc),
                                  retryable=True)
            return StoreError("store {!r}: {}".format(self._shown, exc))
        return StoreError("store {!r} is not a usable SQLite database ({}): refusing it".format(self._shown, exc))

    def _cursor(self) -> sqlite3.Cursor:
        """This thread's cursor on its connection, made once (a journal append's statements run on it: no cursor
        made and registered with the connection a statement)."""
        if os.getpid() == self._pid:
            cursor = getattr(self._local, "cursor", None)
            if cursor is not None:
                return cursor  # type: ignore[no-any-return]
        cursor = self._local.cursor = self._connection().cursor()
        return cursor

    def _setup(self) -> None:
        conn = self._connection()
        try:
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()
        except sqlite3.DatabaseError as exc:
            self.close()
            raise StoreError("store {!r} is not a usable SQLite database ({}): refusing it".format(self._shown, exc))
        self.journal_mode = str(mode[0]).lower() if mode else None

        def work(conn: sqlite3.Connection, now: float) -> None:
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            if "agenthub_meta" in tables:
                row = conn.execute("SELECT value FROM agenthub_meta WHERE name = 'schema'").fetchone()
                if row is None or row[0] != str(SCHEMA_VERSION):
                    raise StoreError("store {!r} holds agenthub rows of schema {} (this agenthub reads schema {}): "
                                     "refusing it; use another file".format(
                                         self._shown, None if row is None else str(row[0])[:20], SCHEMA_VERSION))
            for statement in _SCHEMA:
                conn.execute(statement)
            conn.execute("INSERT OR IGNORE INTO agenthub_meta (name, value) VALUES ('schema', ?)", (str(SCHEMA_VERSION),))

        try:
            self._transaction(work)
        except StoreError:
            self.close()
            raise

    # -- rows -----------------------------------------------------------------------------------------
    def _update(self, kind: str, key: str, step: Callable[[Dict[str, Any], float], Tuple[Dict[str, Any], Any]],
                write: bool = True) -> Any:
        def work(conn: sqlite3.Connection, now: float) -> Any:
            found = conn.execute("SELECT value FROM agenthub_rows WHERE kind = ? AND key = ?", (kind, key)).fetchone()
            row = {}  # type: Any
            if found is not None:
                try:
                    row = _json_loads(found[0])
                except (TypeError, ValueError):
                    row = None
                if not isinstance(row, dict):
                    raise StoreError("store {!r}: the {} row of key {!r} is corrupt: refusing it".format(
                        self._shown, kind, key))
            new, result = step(row, now)
            if write:
                conn.execute("INSERT OR REPLACE INTO agenthub_rows (kind, key, value) VALUES (?, ?, ?)",
                             (kind, key, json.dumps(new, separators=(",", ":"))))
            return result

        return self._transaction(work, immediate=write)

    # -- the cache ------------------------------------------------------------------------------------
    def cache_get(self, key: str) -> Optional[bytes]:
        def work(conn: sqlite3.Connection, now: float) -> Optional[bytes]:
            row = conn.execute("SELECT value, expires FROM agenthub_cache WHERE key = ?", (key,)).fetchone()
            if row is None:
                return None
            value, expires = row
            if (expires is not None and (isinstance(expires, bool) or not isinstance(expires, (int, float))
                                         or not expires > now)) or not isinstance(value, (bytes, memoryview)):
                # expired, or not a row this store wrote (a time or a value of another type): gone, a miss
                conn.execute("DELETE FROM agenthub_cache WHERE key = ?", (key,))
                return None
            return bytes(value)

        return self._transaction(work)

    def cache_put(self, key: str, value: bytes, ttl: Optional[float], max_bytes: int) -> None:
        def work(conn: sqlite3.Connection, now: float) -> None:
            conn.execute("DELETE FROM agenthub_cache WHERE key = ? OR (expires IS NOT NULL AND expires <= ?)",
                         (key, now))
            if len(value) > max_bytes:
                return
            conn.execute("INSERT INTO agenthub_cache (key, value, size, expires, stored) VALUES (?, ?, ?, ?, ?)",
                         (key, sqlite3.Binary(value), len(value), None if ttl is None else now + ttl, now))
            total = conn.execute("SELECT COALESCE(SUM(size), 0) FROM agenthub_cache").fetchone()[0]
            if total > max_bytes:
                for old_key, size in conn.execute(
                        "SELECT key, CAST(size AS INTEGER) FROM agenthub_cache WHERE key != ? ORDER BY stored",
                        (key,)).fetchall():  # (a size that is not a number counts as nothing, as SUM counts it)
                    conn.execute("DELETE FROM agenthub_cache WHERE key = ?", (old_key,))
                    total -= size
                    if total <= max_bytes:
                        break

        self._transaction(work)

    def cache_delete(self, key: str) -> None:
        self._transaction(lambda conn, now: conn.execute("DELETE FROM agenthub_cache WHERE key = ?", (key,)))

    # -- the journal (durable runs): entries in a table of their own (an append writes its rows) -------------
    def _journal_run(self, conn: Any, run_id: str, now: float) -> Optional[Tuple[Any, ...]]:
        row = conn.execute("SELECT owner, until, updated, expires, entries FROM agenthub_journal_runs "
                           "WHERE run_id = ?", (run_id,)).fetchone()
        if row is not None and row[3] is not None and row[3] <= now:
            conn.execute("DELETE FROM agenthub_journal WHERE run_id = ?", (run_id,))
            conn.execute("DELETE FROM agenthub_journal_runs WHERE run_id = ?", (run_id,))
            return None
        return tuple(row) if row is not None else None

    @staticmethod
    def _claim(conn: sqlite3.Connection, row: Optional[Tuple[Any, ...]], run_id: str, owner: str, lease: float,
               ttl: Optional[float], now: float) -> Optional[float]:
        if row is None:
            conn.execute("INSERT INTO agenthub_journal_runs (run_id, owner, until, updated, expires, entries) "
                         "VALUES (?, ?, ?, ?, ?, 0)", (run_id, owner, now + lease, now, None if ttl is None else now + ttl))
            return None
        if row[0] is not None and row[0] != owner and row[1] > now:
            return float(row[1] - now)
        if ttl is None or row[3] is None:
            conn.execute("UPDATE agenthub_journal_runs SET owner = ?, until = ? WHERE run_id = ?",
                         (owner, now + lease, run_id))
        else:  # (taken or renewed: it lives ttl from now at least; its ttl counts from its last write or renewal)
            conn.execute("UPDATE agenthub_journal_runs SET owner = ?, until = ?, expires = MAX(expires, ?) "
                         "WHERE run_id = ?", (owner, now + lease, now + ttl, run_id))
        return None

    @staticmethod
    def _expire_runs(conn: sqlite3.Connection, now: float) -> None:
        """(each claim) the rows of up to ``_EXPIRE`` runs past their ttl go, whichever run they are."""
        gone = conn.execute("SELECT run_id FROM agenthub_journal_runs WHERE expires <= ? LIMIT ?", (now, _EXPIRE)).fetchall()
        if gone:
            conn.executemany("DELETE FROM agenthub_journal WHERE run_id = ?", gone)
            conn.executemany("DELETE FROM agenthub_journal_runs WHERE run_id = ?", gone)

    def journal_claim(self, run_id: str, owner: str, lease: float = JOURNAL_LEASE,
                      ttl: Optional[float] = None) -> Optional[float]:
        def work(conn: sqlite3.Connection, now: float) -> Optional[float]:
            self._expire_runs(conn, now)
            return self._claim(conn, self._journal_run(conn, run_id, now), run_id, owner, lease, ttl, now)

        return self._transaction(work)  # type: ignore[no-any-return]

    def journal_open(self, run_id: str, owner: str, lease: float = JOURNAL_LEASE,
                     ttl: Optional[float] = None) -> Tuple[Optional[float], List[str]]:
        """The claim and, when it holds, the entries: one transaction."""
        def work(conn: sqlite3.Connection, now: float) -> Tuple[Optional[float], List[str]]:
            self._expire_runs(conn, now)
            row = self._journal_run(conn, run_id, now)
            left = self._claim(conn, row, run_id, owner, lease, ttl, now)
            if left is not None:
                return left, []
            if row is None or not row[4]:
                return None, []
            return None, [r[0] for r in conn.execute("SELECT entry FROM agenthub_journal WHERE run_id = ? ORDER BY seq",
                                                      (run_id,))]

        return self._transaction(work)  # type: ignore[no-any-return]

    def journal_append(self, run_id: str, owner: str, seq: int, entry: str, ttl: Optional[float] = None) -> None:
        self.journal_append_many(run_id, owner, seq, [entry], ttl)

    def journal_append_many(self, run_id: str, owner: str, seq: int, entries: Sequence[str],
                            ttl: Optional[float] = None) -> None:
        if check_entries(run_id, entries):
            self._append_now(run_id, owner, seq, entries, ttl, False)

    def journal_finish(self, run_id: str, owner: str, seq: int, entries: Sequence[str],
                       ttl: Optional[float] = None) -> None:
        """The last entries and the lease let go: one transaction (nothing let go when the fence refuses)."""
        if not check_entries(run_id, entries):
            self.journal_release(run_id, owner)
            return
        self._append_now(run_id, owner, seq, entries, ttl, True)

    def _append_now(self, run_id: str, owner: str, seq: int, entries: Sequence[str], ttl: Optional[float],
                    release: bool) -> None:
        """The entries written with their fence, on this thread's cursor: one INSERT into the view whose trigger
        checks the fence, updates the run's row (``release``: lets its lease go) and inserts each entry (an implicit
        transaction that takes the write lock first, waiting for it as ``BEGIN IMMEDIATE`` does: all or none); when
        the fence does not hold, or many entries, ``_append`` in its transaction (which says why the fence failed)."""
        cursor = self._cursor()
        count = len(entries)
        if count <= _MOST:
            now = time.time()
            try:
                if ttl is None:
                    cursor.execute(_ONES[False, release][count], (run_id, owner, seq, now, *entries))
                else:
                    cursor.execute(_ONES[True, release][count], (run_id, owner, seq, now, now + ttl, *entries))
                return
            except sqlite3.IntegrityError as exc:
                if str(exc) != _FENCE:
                    raise self._failed(exc)
            except (UnicodeEncodeError, OverflowError, sqlite3.InterfaceError, sqlite3.ProgrammingError):
                pass  # (a value not bound, before the fence was checked: the transaction checks it first, as before)
            except sqlite3.DatabaseError as exc:
                raise self._failed(exc)
        self._transaction(lambda cursor, now: self._append(cursor, now, run_id, owner, seq, entries, ttl, release),
                          conn=cursor)

    _APPEND = ("UPDATE agenthub_journal_runs SET updated = ?, expires = ?, entries = ? WHERE run_id = ? AND owner = ? "
               "AND until > ? AND entries = ? AND (expires IS NULL OR expires > ?)")
    _APPEND_RELEASE = ("UPDATE agenthub_journal_runs SET updated = ?, expires = ?, entries = ?, owner = NULL, until = 0 "
                       "WHERE run_id = ? AND owner = ? AND until > ? AND entries = ? AND (expires IS NULL OR expires > ?)")

    def _append(self, conn: Any, now: float, run_id: str, owner: str, seq: int, entries: Sequence[str],
                ttl: Optional[float], release: bool) -> None:
        # the fence in the update itself (the holder's live lease, the next number, not expired): one statement
        # when it holds; when it does not, the row says why
        count = len(entries)
        if conn.execute(self._APPEND_RELEASE if release else self._APPEND,
                        (now, None if ttl is None else now + ttl, seq + count, run_id, owner, now, seq,
                         now)).rowcount != 1:
            row = self._journal_run(conn, run_id, now)
            if row is None or row[0] != owner or row[1] <= now:
                raise lost_lease(run_id, row[0] if row is not None and row[1] > now else None)
            raise StoreError("the journal of run {!r}: entry {} written where entry {} is next (two writers?): "
                             "refusing it".format(run_id, seq, row[4]))
        if count == 1:
            conn.execute("INSERT INTO agenthub_journal (run_id, seq, entry) VALUES (?, ?, ?)", (run_id, seq, entries[0]))
        else:
            conn.executemany("INSERT INTO agenthub_journal (run_id, seq, entry) VALUES (?, ?, ?)",
                             [(run_id, seq + n, entry) for n, entry in enumerate(entries)])

    def journal_entries(self, run_id: str, start: int = 0) -> List[str]:
        def work(conn: sqlite3.Connection, now: float) -> List[str]:
            row = conn.execute("SELECT expires FROM agenthub_journal_runs WHERE run_id = ?", (run_id,)).fetchone()
            if row is None or (row[0] is not None and row[0] <= now):
                return []
            return [r[0] for r in conn.execute("SELECT entry FROM agenthub_journal WHERE run_id = ? AND seq >= ? "
                                                "ORDER BY seq", (run_id, start))]

        return self._transaction(work, immediate=False)  # type: ignore[no-any-return]

    def journal_release(self, run_id: str, owner: str) -> None:
        self._transaction(lambda conn, now: conn.execute(
            "UPDATE agenthub_journal_runs SET owner = NULL, until = 0 WHERE run_id = ? AND owner = ?", (run_id, owner)))

    def journal_forget(self, run_id: str) -> bool:
        def work(conn: sqlite3.Connection, now: float) -> bool:
            row = self._journal_run(conn, run_id, now)
            conn.execute("DELETE FROM agenthub_journal WHERE run_id = ?", (run_id,))
            conn.execute("DELETE FROM agenthub_journal_runs WHERE run_id = ?", (run_id,))
            return row is not None and row[4] > 0

        return self._transaction(work)  # type: ignore[no-any-return]

    def journal_runs(self) -> List[Dict[str, Any]]:
        def work(conn: sqlite3.Connection, now: float) -> List[Dict[str, Any]]:
            rows = conn.execute("SELECT run_id, owner, until, updated, entries FROM agenthub_journal_runs "
                                "WHERE entries > 0 AND (expires IS NULL OR expires > ?) ORDER BY run_id", (now,))
            return [{"run_id": r[0], "entries": r[4], "age": max(0.0, now - r[3]),
                     "owned": r[1] is not None and r[2] > now} for r in rows]

        return self._transaction(work, immediate=False)  # type: ignore[no-any-return]
