"""Journal rows (issue 39): the third kind of row on the stores agenthub has, one owner at a time.

Memory and SQLite here; the lease is fenced (a worker that lost the run can no longer write), entries
are numbered with no gap, a run expires ttl after its last write, and a killed owner's lease lapses so
another process takes the run over (a real process, killed with SIGKILL)."""

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from agenthub import ConfigError
from agenthub.stores import MemoryStore, StoreError
from agenthub.stores.sqlite import SQLiteStore

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


class Clock(object):
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


@pytest.fixture(params=["memory", "sqlite"])
def store_and_clock(request, tmp_path, monkeypatch):
    clock = Clock()
    if request.param == "memory":
        yield MemoryStore(clock=clock), clock
        return
    import agenthub.stores.sqlite as sqlite_module
    monkeypatch.setattr(sqlite_module.time, "time", clock)
    store = SQLiteStore("sqlite:///" + str(tmp_path / "runs.db"))
    yield store, clock
    store.close()


def test_entries_are_numbered_written_once_and_read_in_order(store_and_clock):
    store, clock = store_and_clock
    assert store.journal_claim("run-1", "w1", lease=30) is None
    for n in range(3):
        store.journal_append("run-1", "w1", n, json.dumps({"n": n}))
    assert store.journal_entries("run-1") == ['{"n": 0}', '{"n": 1}', '{"n": 2}']
    assert store.journal_entries("run-1", start=2) == ['{"n": 2}']
    with pytest.raises(StoreError) as caught:
        store.journal_append("run-1", "w1", 1, "{}")
    assert str(caught.value) == ("the journal of run 'run-1': entry 1 written where entry 3 is next (two writers?): "
                                 "refusing it")
    assert store.journal_entries("other") == []


def test_one_owner_at_a_time_and_a_lapsed_lease_passes_to_the_next(store_and_clock):
    store, clock = store_and_clock
    assert store.journal_claim("run-1", "w1", lease=30) is None
    store.journal_append("run-1", "w1", 0, "{}")
    assert store.journal_claim("run-1", "w2", lease=30) == 30.0
    clock.now += 10
    assert store.journal_claim("run-1", "w1", lease=30) is None  # renewed by its holder
    clock.now += 25
    assert store.journal_claim("run-1", "w2", lease=30) == 5.0
    clock.now += 5
    assert store.journal_claim("run-1", "w2", lease=30) is None  # w1 stopped renewing: w2 takes it over
    with pytest.raises(StoreError) as caught:
        store.journal_append("run-1", "w1", 1, "{}")  # the fence: w1 lost the run
    assert "this worker no longer holds its lease (another worker holds it now)" in str(caught.value)
    store.journal_append("run-1", "w2", 1, "{}")
    store.journal_release("run-1", "w2")
    assert store.journal_claim("run-1", "w3", lease=30) is None


def test_a_run_expires_ttl_after_its_last_write_and_forget_drops_it(store_and_clock):
    store, clock = store_and_clock
    store.journal_claim("run-1", "w1", lease=30, ttl=100)
    store.journal_append("run-1", "w1", 0, "a", ttl=100)
    store.journal_claim("run-2", "w1", lease=30, ttl=100)
    store.journal_append("run-2", "w1", 0, "b", ttl=100)
    clock.now += 60
    assert store.journal_claim("run-2", "w1", lease=30, ttl=100) is None  # the owner renews as it goes
    store.journal_append("run-2", "w1", 1, "c", ttl=100)
    assert [(r["run_id"], r["entries"], r["age"], r["owned"]) for r in store.journal_runs()] == [
        ("run-1", 1, 60.0, False), ("run-2", 2, 0.0, True)]
    clock.now += 50
    assert store.journal_entries("run-1") == []
    assert [r["run_id"] for r in store.journal_runs()] == ["run-2"]
    assert store.journal_forget("run-2") is True
    assert store.journal_forget("run-2") is False
    assert store.journal_runs() == []


def test_a_run_whose_owner_renews_its_lease_does_not_expire_under_it(store_and_clock):
    """``ttl`` counts from the run's last write, and from each renewal of its lease while a worker holds it: a live
    run quiet for longer than its ttl (a long tool, a slow model) lost its journal under it (deleted as expired
    at its next renewal; its next write refused) and ended in StoreError."""
    store, clock = store_and_clock
    assert store.journal_claim("run-1", "w1", lease=30, ttl=100) is None
    store.journal_append("run-1", "w1", 0, "header", ttl=100)
    for _ in range(6):  # 60 s of a tool, its lease renewed every 10 s: 60 s past the write, 10 past a renewal
        clock.now += 10
        assert store.journal_claim("run-1", "w1", lease=30, ttl=100) is None
    clock.now += 50  # (110 s since its write)
    assert store.journal_claim("run-1", "w1", lease=30, ttl=100) is None
    store.journal_append("run-1", "w1", 1, "turn", ttl=100)
    assert store.journal_entries("run-1") == ["header", "turn"]
    store.journal_release("run-1", "w1")
    clock.now += 101  # let go, untouched past its ttl: gone
    assert store.journal_entries("run-1") == []


def _rows_of(store, run_id):
    """What the store holds of ``run_id`` (read raw, past what its methods show): SQLite's rows in both tables,
    the memory store's row."""
    if isinstance(store, MemoryStore):
        return [key for key in store._rows if key == ("journal", run_id)]
    import sqlite3

    with contextlib.closing(sqlite3.connect(store.path)) as conn:
        return [row for table in ("agenthub_journal_runs", "agenthub_journal")
                for row in conn.execute("SELECT run_id FROM " + table + " WHERE run_id = ?", (run_id,))]


def test_a_run_forgotten_or_let_go_that_never_was_leaves_no_row(store_and_clock):
    """A run forgotten, or released without a row, left an empty memory row behind (one per run_id, for the
    process's life); none on SQLite either."""
    store, _ = store_and_clock
    store.journal_claim("kept", "w1", lease=30)
    store.journal_append("kept", "w1", 0, "kept words")
    store.journal_release("kept", "w1")
    assert store.journal_forget("kept") is True and _rows_of(store, "kept") == []
    store.journal_release("never", "w1")
    assert store.journal_forget("never") is False and _rows_of(store, "never") == []


CHILD = r"""
import sys, time
sys.path.insert(0, sys.argv[2])
from agenthub.stores.sqlite import SQLiteStore
store = SQLiteStore(sys.argv[1])
assert store.journal_claim("run-k", "child", lease=1.0) is None
store.journal_append("run-k", "child", 0, '{"kind": "header"}')
print("claimed", flush=True)
time.sleep(60)
"""


def test_a_killed_owners_lease_lapses_and_another_process_takes_the_run_over(tmp_path):
    url = "sqlite:///" + str(tmp_path / "runs.db")
    child = subprocess.Popen([sys.executable, "-c", CHILD, url, ROOT], stdout=subprocess.PIPE)
    try:
        assert child.stdout.readline() == b"claimed\n"
        store = SQLiteStore(url)
        wait = store.journal_claim("run-k", "parent", lease=30)
        assert wait is not None and 0 < wait <= 1.0
        child.send_signal(signal.SIGKILL)
        child.wait(10)
        deadline = time.time() + 10
        while store.journal_claim("run-k", "parent", lease=30) is not None:
            assert time.time() < deadline, "the killed owner's lease never lapsed"
            time.sleep(0.05)
        assert store.journal_entries("run-k") == ['{"kind": "header"}']
        store.journal_append("run-k", "parent", 1, "{}")
        store.close()
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(10)
        child.stdout.close()


def test_redis_keeps_journals_as_the_python_stores_do():
    """The same rules on a real redis-server (its clock: short leases and ttls, waited out)."""
    from store_support import REDIS_SERVER, RedisServer

    if REDIS_SERVER is None:
        pytest.skip("redis-server is not installed")
    pytest.importorskip("redis")
    from agenthub.stores.redis import RedisStore

    with RedisServer() as server:
        store = RedisStore(server.url)
        try:
            assert store.journal_claim("run-1", "w1", lease=0.5) is None
            for n in range(3):
                store.journal_append("run-1", "w1", n, json.dumps({"n": n}))
            assert store.journal_entries("run-1") == ['{"n": 0}', '{"n": 1}', '{"n": 2}']
            assert store.journal_entries("run-1", start=2) == ['{"n": 2}']
            with pytest.raises(StoreError, match="entry 1 written where entry 3 is next"):
                store.journal_append("run-1", "w1", 1, "{}")
            left = store.journal_claim("run-1", "w2", lease=30)
            assert left is not None and 0 < left <= 0.5
            time.sleep(0.6)  # w1 stops renewing: its lease lapses
            assert store.journal_claim("run-1", "w2", lease=30) is None
            with pytest.raises(StoreError, match="this worker no longer holds its lease .another worker holds it now"):
                store.journal_append("run-1", "w1", 3, "{}")
            store.journal_append("run-1", "w2", 3, "{}")
            store.journal_release("run-1", "w2")
            assert store.journal_claim("run-1", "w3", lease=30) is None
            assert [(r["run_id"], r["entries"], r["owned"]) for r in store.journal_runs()] == [("run-1", 4, True)]
            store.journal_claim("run-2", "w1", lease=30, ttl=0.5)
            store.journal_append("run-2", "w1", 0, "x", ttl=0.5)
            time.sleep(0.7)
            assert store.journal_entries("run-2") == []
            assert [r["run_id"] for r in store.journal_runs()] == ["run-1"]
            assert store.journal_forget("run-1") is True
            assert store.journal_forget("run-1") is False and store.journal_runs() == []
            # a run whose owner renews its lease does not expire under it (ttl: from its last write or renewal)
            assert store.journal_claim("run-3", "w1", lease=30, ttl=1.0) is None
            store.journal_append("run-3", "w1", 0, "header", ttl=1.0)
            for _ in range(3):
                time.sleep(0.5)
                assert store.journal_claim("run-3", "w1", lease=30, ttl=1.0) is None
            store.journal_append("run-3", "w1", 1, "turn", ttl=1.0)  # (1.5 s after its write)
            assert store.journal_entries("run-3") == ["header", "turn"]
            # a run_id ending in ':entries' would name run-3's entries: refused, never read, written or forgotten
            for call in (lambda: store.journal_forget("run-3:entries"), lambda: store.journal_entries("run-3:entries"),
                         lambda: store.journal_claim("run-3:entries", "w2", lease=30),
                         lambda: store.journal_open("run-3:entries", "w2", lease=30),
                         lambda: store.journal_append("run-3:entries", "w2", 0, "x"),
                         lambda: store.journal_release("run-3:entries", "w2")):
                with pytest.raises(ConfigError, match="a run_id ending in ':entries' names another run's entries"):
                    call()
            assert store.journal_entries("run-3") == ["header", "turn"]
        finally:
            store.close()


@pytest.mark.parametrize("store_url", ["sqlite", "redis"], indirect=True)
def test_several_entries_go_in_one_write_all_or_none_under_the_same_fence(store_url):
    """journal_append_many: the entries numbered on from seq in one step; refused whole (nothing written) by
    the fence (another owner, a lapsed lease, a number not next), as one entry is."""
    from agenthub.stores import open_store

    for store in (MemoryStore(), open_store(store_url)):
        try:
            assert store.journal_claim("run-m", "w1", lease=30) is None
            store.journal_append_many("run-m", "w1", 0, ["a", "b"])
            store.journal_append_many("run-m", "w1", 2, [])  # (nothing to write: no write)
            store.journal_append("run-m", "w1", 2, "c")
            store.journal_append_many("run-m", "w1", 3, ["d", "e", "f"])
            assert store.journal_entries("run-m") == ["a", "b", "c", "d", "e", "f"]
            with pytest.raises(StoreError, match="entry 5 written where entry 6 is next"):
                store.journal_append_many("run-m", "w1", 5, ["x", "y"])
            with pytest.raises(StoreError, match="no longer holds its lease"):
                store.journal_append_many("run-m", "w2", 6, ["x", "y"])
            assert store.journal_entries("run-m") == ["a", "b", "c", "d", "e", "f"]
            assert [(r["run_id"], r["entries"]) for r in store.journal_runs()] == [("run-m", 6)]
        finally:
            store.close()


@pytest.mark.parametrize("store_url", ["sqlite", "redis"], indirect=True)
def test_the_claim_with_the_read_and_the_last_write_with_the_release_are_one_store_call_each(store_url):
    """journal_open: the claim and, when it holds, the entries; journal_finish: the last entries (the same fence,
    all or none) and the lease let go, the lease kept when the fence refuses."""
    from agenthub.stores import open_store

    for store in (MemoryStore(), open_store(store_url)):
        try:
            assert store.journal_open("run-o", "w1", 30.0) == (None, [])
            store.journal_append_many("run-o", "w1", 0, ["a", "b"])
            assert store.journal_open("run-o", "w1", 30.0) == (None, ["a", "b"])  # (renewed by its holder)
            left, entries = store.journal_open("run-o", "w2", 30.0)
            assert left is not None and 0 < left <= 30.0 and entries == []
            with pytest.raises(StoreError, match="no longer holds its lease"):
                store.journal_finish("run-o", "w2", 2, ["x"])
            with pytest.raises(StoreError, match="entry 1 written where entry 2 is next"):
                store.journal_finish("run-o", "w1", 1, ["x"])
            assert store.journal_claim("run-o", "w2", 30.0) is not None  # refused: w1 holds the run still
            store.journal_finish("run-o", "w1", 2, ["c", "d"])
            assert store.journal_entries("run-o") == ["a", "b", "c", "d"]
            assert store.journal_open("run-o", "w2", 30.0) == (None, ["a", "b", "c", "d"])  # let go: w2 takes it
            store.journal_finish("run-o", "w2", 4, [])  # (nothing to write: the lease let go all the same)
            assert store.journal_claim("run-o", "w3", 30.0) is None
            assert [(r["run_id"], r["entries"]) for r in store.journal_runs()] == [("run-o", 4)]
        finally:
            store.close()


def test_a_long_kept_sqlite_store_closes_the_connections_of_threads_that_ended(tmp_path):
    """A store kept for the process (a journal's store URL) used from a thread a run: one connection a live
    thread, not one for every thread that ever used it."""
    import threading

    store = SQLiteStore("sqlite:///" + str(tmp_path / "runs.db"))
    try:
        for n in range(12):
            worker = threading.Thread(target=store.journal_claim, args=("run-{}".format(n), "w", 30.0))
            worker.start()
            worker.join(10)
        store.journal_claim("run-main", "w", 30.0)
        assert len(store._connections) <= 2  # (this thread's and at most the last worker's)
        assert [r["run_id"] for r in store.journal_runs()] == []  # (claimed, nothing written: not listed)
    finally:
        store.close()


def test_redis_appends_go_on_a_connection_of_their_thread_and_the_clients_way_when_it_fails():
    """A journal append (a run's writes) is one EVALSHA on a connection of the writing thread's own, not checked
    out of the client's pool; when that connection was closed by the server, or the server lost its scripts,
    the append goes the client's way (reconnect, NOSCRIPT reload) and is written once; the script's refusals
    read the same; connections of ended threads and, at close, all of them are closed."""
    import threading

    from store_support import REDIS_SERVER, RedisServer

    if REDIS_SERVER is None:
        pytest.skip("redis-server is not installed")
    redis = pytest.importorskip("redis")
    from agenthub.stores.redis import RedisStore

    def clients(server):
        with redis.Redis.from_url(server.url) as probe:
            return sorted(c["name"] for c in probe.client_list() if c.get("cmd") != "client|list")

    with RedisServer() as server:
        store = RedisStore(server.url)
        try:
            assert store.journal_claim("run-c", "w1", lease=30) is None
            store.journal_append("run-c", "w1", 0, "a")  # (the first: NOSCRIPT, the client's way loads the script)
            pool = store._client.connection_pool
            checked_out = []
            real = pool.get_connection
            pool.get_connection = lambda *a, **k: checked_out.append(1) or real(*a, **k)
            store.journal_append_many("run-c", "w1", 1, ["b", "c"])
            assert checked_out == []  # (the pool was not asked)
            with redis.Redis.from_url(server.url) as admin:
                admin.client_kill_filter(_type="normal", skipme=True)  # the server drops every connection
                store.journal_append("run-c", "w1", 3, "d")
                admin.script_flush()  # the server forgets its scripts
                store.journal_append("run-c", "w1", 4, "e")
                assert admin.lrange("agenthub:1:journal:run-c:entries", 0, -1) == [b"a", b"b", b"c", b"d", b"e"]
                with pytest.raises(StoreError, match="entry 4 written where entry 5 is next"):
                    store.journal_append("run-c", "w1", 4, "x")
                with pytest.raises(StoreError, match="no longer holds its lease .another worker holds it now"):
                    store.journal_append("run-c", "w2", 5, "x")
                admin.hset("agenthub:1:journal:run-c", "entries", "many")
                with pytest.raises(StoreError, match="the journal row is corrupt: refusing it"):
                    store.journal_append("run-c", "w1", 5, "x")
                admin.hset("agenthub:1:journal:run-c", "entries", "5")
            pool.get_connection = real
            for n in range(3):
                worker = threading.Thread(target=store.journal_append, args=("run-c", "w1", 5 + n, "t"))
                worker.start()
                worker.join(10)
            assert len(store._own) == 2  # (this thread's and the last worker's: those of threads that ended closed)
            assert store.journal_entries("run-c")[5:] == ["t", "t", "t"]
        finally:
            store.close()
        assert store._own == [] and len(clients(server)) == 0


def test_redis_append_replies_are_read_whole_across_reads_and_refused_when_out_of_step():
    """The journal append's reply, read by the store from its own connection's socket: whole however the bytes
    arrive (one at a time here), integers and bulk strings as redis-py gives them (bytes), nils, errors with
    redis-py's text (its "ERR " dropped); a closed socket or a second reply behind it: an error (the connection is
    then dropped and the append goes the client's way)."""
    pytest.importorskip("redis")
    from agenthub.stores.redis import _ErrorReply, _read_reply

    class Trickle(object):
        def __init__(self, data):
            self.data = data

        def recv(self, size):
            head, self.data = self.data[:1], self.data[1:]
            return head

    assert _read_reply(Trickle(b"*2\r\n$2\r\nok\r\n:12\r\n")) == [b"ok", 12]
    assert _read_reply(Trickle(b"*3\r\n$-1\r\n*-1\r\n$0\r\n\r\n")) == [None, None, b""]
    assert _read_reply(Trickle(b"*2\r\n_\r\n:0\r\n")) == [None, 0]  # (RESP3's null: redis-py 8 says HELLO 3)
    error = _read_reply(Trickle(b"-ERR AGENTHUB_CORRUPT the journal row is corrupt\r\n"))
    assert isinstance(error, _ErrorReply) and error == "AGENTHUB_CORRUPT the journal row is corrupt"
    assert _read_reply(Trickle(b"-NOSCRIPT No matching script.\r\n")).startswith("NOSCRIPT")
    with pytest.raises(OSError):
        _read_reply(Trickle(b"*2\r\n$2\r\nok"))  # (closed mid-reply)
    with pytest.raises(ValueError):
        _read_reply(Trickle(b"?\r\n"))

    class Whole(object):
        def recv(self, size):
            return b":1\r\n:2\r\n"

    with pytest.raises(ValueError):
        _read_reply(Whole())  # (a second reply behind it: out of step)

    class Once(object):  # (a reply read whole in one recv: an append's that wrote is read without the parser)
        def __init__(self, data):
            self.data = data

        def recv(self, size):
            data, self.data = self.data, b""
            return data

    assert _read_reply(Once(b"*2\r\n$2\r\nok\r\n:12\r\n")) == [b"ok", 12]
    assert _read_reply(Once(b"*2\r\n$2\r\nok\r\n:0\r\n")) == [b"ok", 0]
    assert _read_reply(Once(b"*2\r\n$3\r\nseq\r\n:4\r\n")) == [b"seq", 4]
    for behind in (b"*2\r\n$2\r\nok\r\n:12\r\n:1\r\n", b"*2\r\n$2\r\nok\r\n:1\r\n+OK\r\n", b"*2\r\n$2\r\nok\r\n:\r\n"):
        with pytest.raises(ValueError):
            _read_reply(Once(behind))  # (out of step, or no number: as the parser says)


def test_redis_appends_are_packed_by_the_store_not_by_redis_py():
    """A journal append on the thread's own connection is packed by the store (the pieces a run repeats packed
    once), not by redis-py's pack_command, and its entries arrive as they were (non-ASCII, large)."""
    from store_support import REDIS_SERVER, RedisServer

    if REDIS_SERVER is None:
        pytest.skip("redis-server is not installed")
    pytest.importorskip("redis")
    from agenthub.stores.redis import RedisStore

    with RedisServer() as server:
        store = RedisStore(server.url)
        try:
            assert store.journal_claim("run-p", "w1", lease=30) is None
            store.journal_append("run-p", "w1", 0, "a")  # (the first: NOSCRIPT, the client's way loads the script)
            connection = store._own_connection()
            packed = []
            real = connection.pack_command
            connection.pack_command = lambda *args: packed.append(args) or real(*args)
            big = "Zürich \u2028 " * 100000
            store.journal_append_many("run-p", "w1", 1, ["b", big])
            store.journal_finish("run-p", "w1", 3, ["c"])
            assert packed == []
            assert store.journal_entries("run-p") == ["a", "b", big, "c"]
            assert store.journal_claim("run-p", "w2", lease=30) is None  # (let go by the finish)
        finally:
            store.close()


#: the journal's tables as the stores of agenthub 2026-12-06 (before the one-statement write) made them
_EARLIER_SCHEMA = (
    "CREATE TABLE agenthub_meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE agenthub_rows (kind TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (kind, key))",
    "CREATE TABLE agenthub_cache (key TEXT PRIMARY KEY, value BLOB NOT NULL, size INTEGER NOT NULL, expires REAL, "
    "stored REAL NOT NULL)",
    "CREATE INDEX agenthub_cache_stored ON agenthub_cache (stored)",
    "CREATE TABLE agenthub_journal_runs (run_id TEXT PRIMARY KEY, owner TEXT, until REAL NOT NULL, "
    "updated REAL NOT NULL, expires REAL, entries INTEGER NOT NULL)",
    "CREATE TABLE agenthub_journal (run_id TEXT NOT NULL, seq INTEGER NOT NULL, entry TEXT NOT NULL, "
    "PRIMARY KEY (run_id, seq))",
    "INSERT INTO agenthub_meta (name, value) VALUES ('schema', '1')",
)


def test_an_sqlite_journal_write_is_one_statement_with_the_same_fence_and_rows(tmp_path):
    """A write (not the run's last) is one INSERT into the journal's view, whose trigger checks the fence, updates
    the run's row and inserts the entries (no BEGIN, UPDATE, INSERT, COMMIT of four); the rows are what the
    transaction wrote; a fence that fails says why as before; many entries, a ttl, the release: the same rows."""
    import sqlite3

    store = SQLiteStore("sqlite:///" + str(tmp_path / "runs.db"))
    try:
        assert store.journal_claim("run-1", "w1", 30.0, ttl=100.0) is None
        seen = []
        store._connection().set_trace_callback(seen.append)
        store.journal_append_many("run-1", "w1", 0, ["a"], ttl=100.0)
        store.journal_append_many("run-1", "w1", 1, ["b", "c", "d"], ttl=100.0)
        store._connection().set_trace_callback(None)
        statements = {s for s in seen if not s.startswith("--")}  # (3.8 traces the trigger's as comments)
        assert len(statements) == 2 and all(s.startswith("INSERT INTO agenthub_journal_append2 ") for s in statements)
        with pytest.raises(StoreError, match=r"entry 3 written where entry 4 is next \(two writers\?\)"):
            store.journal_append_many("run-1", "w1", 3, ["x"], ttl=100.0)
        with pytest.raises(StoreError, match=r"no longer holds its lease \(another worker holds it now\)"):
            store.journal_append_many("run-1", "w2", 4, ["x", "y"], ttl=100.0)
        many = ["e{}".format(n) for n in range(40)]  # (more than one statement takes: the transaction)
        store.journal_append_many("run-1", "w1", 4, many)
        store.journal_finish("run-1", "w1", 44, ["z"])
        assert store.journal_entries("run-1") == ["a", "b", "c", "d"] + many + ["z"]
        raw = sqlite3.connect(store.path)
        try:
            owner, until, updated, expires, entries = raw.execute(
                "SELECT owner, until, updated, expires, entries FROM agenthub_journal_runs").fetchone()
            assert (owner, until, expires, entries) == (None, 0, None, 45)
            assert [r[0] for r in raw.execute("SELECT seq FROM agenthub_journal ORDER BY seq")] == list(range(45))
        finally:
            raw.close()
    finally:
        store.close()


def test_an_sqlite_journal_commit_without_a_ttl_writes_three_pages_and_the_last_write_is_one_statement(tmp_path):
    """A write to a run without a ttl commits three pages to the WAL (the run's row, the entries' table and their
    key's index), not four: the expiry, NULL, is not set again each write, so its index is not written; with a
    ttl the expiry moves each write (four pages).  The run's last write (the entries and the lease let go) is one
    INSERT into the view too; its rows and its refusals are what the transaction made."""
    import sqlite3

    store = SQLiteStore("sqlite:///" + str(tmp_path / "runs.db"))
    raw = sqlite3.connect(store.path, isolation_level=None)
    page = raw.execute("PRAGMA page_size").fetchone()[0]

    def frames(write):
        assert raw.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0] == 0  # (not busy: the WAL emptied)
        write()
        return (os.path.getsize(store.path + "-wal") - 32) // (24 + page)

    try:
        assert store.journal_claim("run-n", "w1", 30.0) is None
        assert store.journal_claim("run-t", "w1", 30.0, ttl=100.0) is None
        store.journal_append_many("run-n", "w1", 0, ["a"])
        store.journal_append_many("run-t", "w1", 0, ["a"], ttl=100.0)
        assert frames(lambda: store.journal_append_many("run-n", "w1", 1, ["b"])) == 3
        assert frames(lambda: store.journal_append_many("run-t", "w1", 1, ["b"], ttl=100.0)) == 4
        expires = raw.execute("SELECT run_id, expires IS NULL FROM agenthub_journal_runs ORDER BY run_id").fetchall()
        assert expires == [("run-n", 1), ("run-t", 0)]
        seen = []
        store._connection().set_trace_callback(seen.append)
        with pytest.raises(StoreError, match=r"no longer holds its lease \(another worker holds it now\)"):
            store.journal_finish("run-n", "w2", 2, ["x"])
        store.journal_finish("run-n", "w1", 2, ["c", "d"])
        store._connection().set_trace_callback(None)
        statements = [s for s in seen if not s.startswith("--")]  # (3.8 traces the trigger's as comments, 3.11
        statements = [s for n, s in enumerate(statements) if not n or statements[n - 1] != s]  # the outer one again)
        nulls = ", NULL" * 6
        assert len(statements) == 6
        assert re.fullmatch(r"INSERT INTO agenthub_journal_append2 VALUES \('run-n', 'w2', 2, [0-9.]+, NULL, 1, 1, "
                            r"'x'" + nulls + r", NULL\)", statements[0])
        assert statements[1] == "BEGIN IMMEDIATE" and statements[4] == "ROLLBACK"  # (the transaction says why)
        assert statements[2].startswith("UPDATE agenthub_journal_runs SET ") and statements[3].startswith("SELECT ")
        assert re.fullmatch(r"INSERT INTO agenthub_journal_append2 VALUES \('run-n', 'w1', 2, [0-9.]+, NULL, 2, 1, "
                            r"'c', 'd'" + nulls + r"\)", statements[5])  # (the finish that holds: one statement)
        assert store.journal_entries("run-n") == ["a", "b", "c", "d"]
        assert raw.execute("SELECT owner, until, expires, entries FROM agenthub_journal_runs WHERE run_id = 'run-n'"
                           ).fetchone() == (None, 0, None, 4)
        store.journal_finish("run-t", "w1", 2, ["c"], ttl=100.0)
        owner, until, expires, updated = raw.execute(
            "SELECT owner, until, expires, updated FROM agenthub_journal_runs WHERE run_id = 'run-t'").fetchone()
        assert (owner, until, expires) == (None, 0, updated + 100.0)
        assert store.journal_claim("run-n", "w2", 30.0) is None  # (let go by the finish)
    finally:
        raw.close()
        store.close()


def test_an_sqlite_file_of_an_earlier_agenthub_opens_resumes_and_takes_writes(tmp_path):
    """A store file made before the journal's view (its tables only, a run journaled there) still opens (no new
    schema version), its run resumes, the writes go through the view added at the open; the earlier writes (a
    transaction of the update and the insert) still work on it, as an earlier agenthub sharing it makes them."""
    import sqlite3

    path = str(tmp_path / "earlier.db")
    raw = sqlite3.connect(path, isolation_level=None)
    try:
        raw.execute("PRAGMA journal_mode = WAL")
        for statement in _EARLIER_SCHEMA:
            raw.execute(statement)
        raw.execute("INSERT INTO agenthub_journal_runs VALUES ('run-e', NULL, 0, 1.0, NULL, 2)")
        raw.execute("INSERT INTO agenthub_journal VALUES ('run-e', 0, '{\"k\":\"header\"}'), ('run-e', 1, 'one')")
        assert raw.execute("SELECT count(*) FROM sqlite_master WHERE name = 'agenthub_journal_append2'").fetchone() \
            == (0,)
    finally:
        raw.close()
    store = SQLiteStore("sqlite:///" + path)
    try:
        assert store.journal_open("run-e", "w1", 30.0) == (None, ['{"k":"header"}', "one"])
        store.journal_append_many("run-e", "w1", 2, ["two", "three"])
        # an earlier agenthub's write: the fenced update and the insert in one transaction
        store._transaction(lambda conn, now: store._append(conn, now, "run-e", "w1", 4, ["four"], None, False))
        store.journal_append_many("run-e", "w1", 5, ["five"])
        assert store.journal_entries("run-e") == ['{"k":"header"}', "one", "two", "three", "four", "five"]
        assert [(r["run_id"], r["entries"]) for r in store.journal_runs()] == [("run-e", 6)]
    finally:
        store.close()
    raw = sqlite3.connect(path)
    try:
        assert sorted(raw.execute("SELECT type, name FROM sqlite_master WHERE name = 'agenthub_journal_append2'")) \
            == [("trigger", "agenthub_journal_append2"), ("view", "agenthub_journal_append2")]
        assert raw.execute("SELECT value FROM agenthub_meta WHERE name = 'schema'").fetchone() == ("1",)
    finally:
        raw.close()


def test_an_sqlite_journal_write_waits_for_another_writer_as_the_transaction_did(tmp_path):
    """The one statement takes the write lock first and waits for it (the busy timeout), as BEGIN IMMEDIATE did:
    a write while another connection holds the lock goes through when it is let go, not refused."""
    import sqlite3
    import threading

    store = SQLiteStore("sqlite:///" + str(tmp_path / "runs.db"))
    holder = sqlite3.connect(store.path, isolation_level=None, check_same_thread=False)
    try:
        assert store.journal_claim("run-w", "w1", 30.0) is None
        store.journal_append_many("run-w", "w1", 0, ["a"])
        assert store.journal_entries("run-w") == ["a"]  # (this thread's connection has read the file)
        holder.execute("BEGIN IMMEDIATE")
        holder.execute("UPDATE agenthub_journal_runs SET updated = updated + 1")  # (a commit the reader has not seen)
        done = []
        writer = threading.Thread(target=lambda: done.append(store.journal_append_many("run-w", "w1", 1, ["b"])))
        writer.start()
        writer.join(0.3)
        assert writer.is_alive() and not done  # waiting for the lock
        holder.execute("COMMIT")
        writer.join(30)
        assert done == [None]
        assert store.journal_entries("run-w") == ["a", "b"]
    finally:
        holder.close()
        store.close()


def test_an_sqlite_journal_write_refused_by_its_fence_says_why_before_its_entries_are_bound(tmp_path):
    """The one statement binds the entries before its trigger checks the fence; the transaction checked the fence
    first.  An entry SQLite cannot take (a lone surrogate: not UTF-8; a list) with a fence that does not hold (the
    wrong number, another worker's lease, a run forgotten): the fence's StoreError as before, not the entry's
    error; with the fence held, the entry's error as before, nothing written, the connection usable after."""
    import sqlite3

    store = SQLiteStore("sqlite:///" + str(tmp_path / "runs.db"))
    try:
        assert store.journal_claim("run-s", "w1", 30.0) is None
        store.journal_append_many("run-s", "w1", 0, ["a"])
        assert store.journal_claim("run-o", "w2", 30.0) is None
        for bad in (["\ud800"], ["b", "x\udfff"], [["a"]]):
            with pytest.raises(StoreError, match=r"entry 0 written where entry 1 is next \(two writers\?\)"):
                store.journal_append_many("run-s", "w1", 0, bad)
            with pytest.raises(StoreError, match=r"no longer holds its lease \(another worker holds it now\)"):
                store.journal_append_many("run-o", "w1", 0, bad)
            with pytest.raises(StoreError, match=r"no longer holds its lease \(it lapsed: renewed too late\)"):
                store.journal_append_many("run-gone", "w1", 0, bad)
        with pytest.raises(UnicodeEncodeError):
            store.journal_append_many("run-s", "w1", 1, ["b", "x\udfff"])
        with pytest.raises((StoreError, sqlite3.Error)):  # (as the transaction says it: this Python's words)
            store.journal_append_many("run-s", "w1", 1, [["a"]])
        assert not store._connection().in_transaction
        store.journal_append_many("run-s", "w1", 1, ["b"])
        assert store.journal_entries("run-s") == ["a", "b"]
    finally:
        store.close()


def test_redis_an_append_reply_read_at_once_is_what_the_parser_reads_of_it():
    """``_read_reply``'s fast path (an append's ``*2 $2 ok :N`` read whole in one recv) against the parser on the
    same bytes (a first read of one byte never takes it): the same value or the same error for replies like it but
    not it (a negative, an empty or odd number, more behind it, one cut short, another kind), whole or split."""
    from agenthub.stores.redis import _read_reply

    class Pieces(object):
        def __init__(self, pieces):
            self.pieces = list(pieces)

        def recv(self, size):
            return self.pieces.pop(0) if self.pieces else b""  # (then: the server closed the connection)

    def outcome(pieces):
        try:
            return "value", _read_reply(Pieces(pieces))
        except (OSError, ValueError) as exc:
            return type(exc).__name__, str(exc)

    ok = b"*2\r\n$2\r\nok\r\n:"
    replies = [ok + b"12\r\n", ok + b"0\r\n", ok + b"007\r\n", ok + b"-1\r\n", ok + b"1_2\r\n", ok + b" 12\r\n",
               ok + b"\r\n", ok + b"12", ok + b"12\r", ok + b"12\n", ok + b"1\r\n2\r\n", ok + b"12\r\n\r\n",
               ok + b"12\r\n:1\r\n", ok + b"12\r\n+OK\r\n", ok + b"12\r\n" + ok + b"13\r\n", ok + b"\xd9\xa3\r\n",
               ok + b"9" * 40 + b"\r\n", b"*2\r\n$2\r\nOK\r\n:12\r\n", b"*2\r\n$2\r\nok\r\n$2\r\n12\r\n",
               b"*3\r\n$2\r\nok\r\n:1\r\n:2\r\n", b">2\r\n$2\r\nok\r\n:1\r\n", b"-ERR fence\r\n", b"*2\r\n_\r\n:1\r\n"]
    for data in replies:
        parsed = outcome([data[:1], data[1:]])
        assert outcome([data]) == parsed, data
        for cut in range(2, len(data)):  # (what the first read has is all either reads of a reply it completes)
            assert outcome([data[:cut], data[cut:]]) == outcome([data[:1], data[1:cut], data[cut:]]), (data, cut)
    assert outcome([ok + b"12\r\n"]) == ("value", [b"ok", 12])


def test_an_sqlite_journal_write_in_one_statement_is_the_transaction_s_write_in_every_state(tmp_path):
    """The one statement (``_append_now``) against the transaction it replaced (``_append`` in ``_transaction``) on
    the same run states: held, lapsed, another worker's, released, forgotten, expired, a number behind or ahead;
    one to nine entries (more than the statement takes: the transaction), a ttl or none, a NUL in the text: the
    same error (type and words) and the same rows, the connection out of any transaction after."""
    import sqlite3

    store = SQLiteStore("sqlite:///" + str(tmp_path / "runs.db"))
    raw = sqlite3.connect(store.path, isolation_level=None)

    def state(run_id, kind):
        assert store.journal_claim(run_id, "w2" if kind == "other" else "w1", 30.0, ttl=50.0) is None
        store.journal_append_many(run_id, "w2" if kind == "other" else "w1", 0, ["a", "b"])
        if kind == "lapsed":
            raw.execute("UPDATE agenthub_journal_runs SET until = 1 WHERE run_id = ?", (run_id,))
        elif kind == "released":
            store.journal_release(run_id, "w1")
        elif kind == "forgotten":
            store.journal_forget(run_id)
        elif kind == "expired":
            raw.execute("UPDATE agenthub_journal_runs SET expires = 2 WHERE run_id = ?", (run_id,))

    def rows(run_id):
        run = raw.execute("SELECT owner, until > 0, expires IS NULL, entries FROM agenthub_journal_runs "
                          "WHERE run_id = ?", (run_id,)).fetchall()
        return run, raw.execute("SELECT seq, entry FROM agenthub_journal WHERE run_id = ? ORDER BY seq",
                                (run_id,)).fetchall()

    def one(run_id, seq, entries, ttl):
        store._append_now(run_id, "w1", seq, entries, ttl, False)

    def transaction(run_id, seq, entries, ttl):
        store._transaction(lambda conn, now: store._append(conn, now, run_id, "w1", seq, entries, ttl, False))

    def outcome(write, run_id, seq, entries, ttl):
        try:
            write(run_id, seq, entries, ttl)
            said = None
        except StoreError as exc:
            said = str(exc).replace(run_id, "RUN")
        assert not store._connection().in_transaction
        return said, rows(run_id)

    try:
        number = 0
        for kind in ("held", "lapsed", "other", "released", "forgotten", "expired"):
            for seq in (2, 1, 3):
                for count in (1, 2, 8, 9):
                    for ttl in (None, 40.0):
                        entries = ["e{}\x00{}".format(n, kind) for n in range(count)]
                        number += 1
                        results = []
                        for write in (one, transaction):
                            run_id = "run-{}-{}".format(number, write.__name__)
                            state(run_id, kind)
                            results.append(outcome(write, run_id, seq, entries, ttl))
                        assert results[0] == results[1], (kind, seq, count, ttl)
                        if kind == "held" and seq == 2:
                            assert results[0][0] is None and results[0][1][1][2:] == list(enumerate(entries, 2))
    finally:
        raw.close()
        store.close()


#: a process that holds the SQLite file's write lock (BEGIN IMMEDIATE, a row updated) until told to let it go
HOLDER = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
conn.execute("UPDATE agenthub_journal_runs SET updated = updated + 1")
print("held", flush=True)
sys.stdin.readline()
conn.execute("COMMIT")
conn.close()
"""


def test_an_sqlite_journal_write_past_the_busy_timeout_is_the_transaction_s_retryable_error(tmp_path):
    """Another process holds the write lock past the store's busy timeout: the one statement's write (a fence that
    holds, one that does not) and the transaction's (the release, many entries) each wait out the timeout and give
    the same retryable StoreError, with nothing written and no transaction left open; once the lock is let go the
    writes go through."""
    store = SQLiteStore("sqlite:///" + str(tmp_path / "runs.db"), timeout=0.3)
    holder = None
    try:
        assert store.journal_claim("run-b", "w1", 60.0) is None
        store.journal_append_many("run-b", "w1", 0, ["a"])
        holder = subprocess.Popen([sys.executable, "-c", HOLDER, store.path], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE)
        assert holder.stdout.readline() == b"held\n"
        said = set()
        for seq, entries, finish in [(1, ["b"], False), (7, ["b"], False), (1, ["b"] * 9, False), (1, ["b"], True)]:
            with pytest.raises(StoreError) as info:
                (store.journal_finish if finish else store.journal_append_many)("run-b", "w1", seq, entries)
            assert info.value.retryable is True
            said.add(str(info.value))
            assert not store._connection().in_transaction
        assert said == {"store {!r}: still busy after 0.3 s: database is locked".format(store.url[:120])}
        holder.stdin.write(b"\n")
        holder.stdin.flush()
        assert holder.wait(30) == 0
        store.journal_append_many("run-b", "w1", 1, ["b"])
        store.journal_finish("run-b", "w1", 2, ["c"])
        assert store.journal_entries("run-b") == ["a", "b", "c"]
    finally:
        if holder is not None:
            if holder.poll() is None:
                holder.kill()
                holder.wait(10)
            holder.stdin.close()
            holder.stdout.close()
        store.close()


def test_a_renewal_racing_the_runs_close_does_not_keep_the_run_held():
    """The lease thread checks that the run is still open, then renews: a run closed between the two (its lease let
    go) was taken again by that renewal and held for a whole lease by nobody (a resume got RunLockedError)."""
    from agenthub.agent.journal import Journal

    class Racing(MemoryStore):
        journal = None

        def journal_claim(self, run_id, owner, lease=30.0, ttl=None):
            if self.journal is not None:  # the run ends here, in the reading thread, as the lease thread renews
                journal, self.journal = self.journal, None
                journal.close()
            return MemoryStore.journal_claim(self, run_id, owner, lease, ttl)

    store = Racing()
    journal = Journal(store, "run-r")
    journal.open("print")
    journal.flush()
    store.journal = journal
    journal.renew()
    assert store.journal_claim("run-r", "next-worker", lease=30) is None


def _journal_rows(store):
    """How many runs the store keeps rows of (expired or not)."""
    if isinstance(store, MemoryStore):
        return sum(1 for kind, _ in store._rows if kind == "journal")
    with store._connection() as conn:
        return conn.execute("SELECT COUNT(*) FROM agenthub_journal_runs").fetchone()[0] + \
            conn.execute("SELECT COUNT(DISTINCT run_id) FROM agenthub_journal").fetchone()[0]


def test_runs_past_their_ttl_go_even_when_never_claimed_again(store_and_clock):
    store, clock = store_and_clock
    for n in range(40):
        store.journal_claim("old-{}".format(n), "w1", lease=30, ttl=100)
        store.journal_append("old-{}".format(n), "w1", 0, "a", ttl=100)
    store.journal_claim("kept", "w1", lease=30)  # (no ttl: kept until forgotten)
    store.journal_append("kept", "w1", 0, "k")
    clock.now += 101
    store.journal_claim("new-1", "w2", lease=30, ttl=100)  # each claim forgets runs past their ttl (32 a claim)
    store.journal_claim("new-2", "w2", lease=30, ttl=100)
    assert _journal_rows(store) == (3 if isinstance(store, MemoryStore) else 4)  # (kept, new-1, new-2; SQLite:
    # the run rows of three and the entries of one)
    assert [r["run_id"] for r in store.journal_runs()] == ["kept"]


def test_redis_forgets_the_index_entries_of_runs_past_their_ttl():
    from store_support import REDIS_SERVER, RedisServer

    if REDIS_SERVER is None:
        pytest.skip("redis-server is not installed")
    redis = pytest.importorskip("redis")
    from agenthub.stores.redis import RedisStore

    with RedisServer() as server:
        store = RedisStore(server.url)
        raw = redis.Redis.from_url(server.url)
        try:
            for n in range(40):
                store.journal_claim("old-{}".format(n), "w1", lease=30, ttl=0.2)
                store.journal_append("old-{}".format(n), "w1", 0, "a", ttl=0.2)
            store.journal_claim("kept", "w1", lease=30)
            store.journal_append("kept", "w1", 0, "k")
            raw.zadd("agenthub:1:journals", {"renewed": 0})  # (an index entry of an earlier agenthub: a write time)
            raw.hset("agenthub:1:journal:renewed", "entries", 0)
            deadline = time.monotonic() + 10
            while raw.exists("agenthub:1:journal:old-39"):
                assert time.monotonic() < deadline
                time.sleep(0.05)
            store.journal_claim("new-1", "w2", lease=30)
            store.journal_open("new-2", "w2", lease=30)
            # the 40 gone from the index (32 at the first claim, the rest at the next); the earlier agenthub's entry,
            # its run still there, scored again by when it goes (never)
            members = dict(raw.zrange("agenthub:1:journals", 0, -1, withscores=True))
            assert members == {b"kept": float("inf"), b"renewed": float("inf")}
        finally:
            raw.close()
            store.close()
