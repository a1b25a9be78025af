"""What a shared store holds is never trusted to be sane: a cache row with a time or a size that is not a number,
a limiter row whose next slot or pause lies absurdly far ahead.  Each is a miss or a typed StoreError, never a
TypeError or an OverflowError out of a sleep."""

import contextlib
import sqlite3

import pytest

from agenthub import ConfigError, RateLimiter
from agenthub.stores import MemoryStore, StoreError, open_store


def _sql(path, statement):
    with contextlib.closing(sqlite3.connect(path)) as conn, conn:
        conn.execute(statement)


def test_a_cache_row_whose_expiry_is_not_a_number_is_a_miss_and_is_removed(tmp_path):
    path = str(tmp_path / "s.db")
    store = open_store("sqlite:///" + path)
    try:
        store.cache_put("k", b"entry", 100.0, 10000)
        _sql(path, "UPDATE agenthub_cache SET expires = 'soon'")
        assert store.cache_get("k") is None
        with contextlib.closing(sqlite3.connect(path)) as conn:
            assert conn.execute("SELECT COUNT(*) FROM agenthub_cache").fetchone() == (0,)
        store.cache_put("k", b"entry", 100.0, 10000)
        _sql(path, "UPDATE agenthub_cache SET value = 'text, not bytes'")
        assert store.cache_get("k") is None
        with contextlib.closing(sqlite3.connect(path)) as conn:
            assert conn.execute("SELECT COUNT(*) FROM agenthub_cache").fetchone() == (0,)
    finally:
        store.close()


def test_a_cache_row_whose_size_is_not_a_number_is_evicted_not_a_crash(tmp_path):
    path = str(tmp_path / "s.db")
    store = open_store("sqlite:///" + path)
    try:
        store.cache_put("a", b"x" * 100, None, 10000)
        _sql(path, "UPDATE agenthub_cache SET size = 'big'")
        store.cache_put("b", b"y" * 50, None, 60)  # past the bound: "a" goes first
        store.cache_put("c", b"z" * 50, None, 60)  # and then "b"
        assert (store.cache_get("a"), store.cache_get("b"), store.cache_get("c")) == (None, None, b"z" * 50)
    finally:
        store.close()


@pytest.mark.parametrize("name", ["rpm", "tpm"])
def test_a_rate_so_small_its_interval_overflows_is_a_config_error(name):
    for bad in (1e-308, 5e-324, 1e-9, 0.0001):
        with pytest.raises(ConfigError, match="^{} must be a number of at least 1/1440".format(name)):
            RateLimiter(**{name: bad})
    assert getattr(RateLimiter(**{name: 1 / 1440}), name) == 1 / 1440
    with pytest.raises(ConfigError, match="^{} must be a positive number \\(got 'huge'\\)$".format(name)):
        RateLimiter(**{name: 10 ** 400})  # (an int past any float: no OverflowError)
    with pytest.raises(ConfigError, match="^rpm must be a number of at least 1/1440"):
        RateLimiter(rpm=1.0).share(10 ** 6)


class _Planted(MemoryStore):
    """A store whose limiter row says the next slot, or a pause, is ``ahead`` seconds away."""

    def __init__(self, slot=0.0, pause=0.0):
        super(_Planted, self).__init__()
        self.slot, self.pause = slot, pause
        self.shared = True

    def limiter_reserve(self, key, rpm, tpm, tokens):
        return self.slot

    def limiter_pauses(self, key):
        return {"": self.pause} if self.pause else {}


def test_a_limiter_row_that_says_to_wait_for_ages_is_a_store_error_not_an_overflow():
    slept = []
    for store, what in ((_Planted(slot=1e300), "next slot"), (_Planted(pause=1e12), "pause")):
        limiter = RateLimiter(rpm=60, store=store, sleep=slept.append)
        with pytest.raises(StoreError, match="the store's limiter row is corrupt \\(its {} is ".format(what)):
            limiter.acquire()
    assert slept == []
    store = _Planted(slot=3600.0)
    limiter = RateLimiter(rpm=60, store=store, sleep=slept.append)
    limiter.acquire()  # an hour's queue is a real wait
    store.slot, store.pause = 0.0, 600.0

    def sleep(seconds):
        slept.append(seconds)
        store.pause = 0.0

    RateLimiter(store=store, sleep=sleep).acquire()  # and so is the longest pause
    assert slept == [3600.0, 600.0]


def test_a_redis_cache_size_row_that_is_not_a_number_counts_as_nothing_as_on_sqlite():
    """As SQLite's: a size that is not a number is no size (the entry is evicted in its turn), never a store that
    refuses every answer after it."""
    fakeredis = pytest.importorskip("fakeredis")
    pytest.importorskip("lupa")
    from agenthub.stores.redis import RedisStore

    raw = fakeredis.FakeRedis()
    store = RedisStore("redis://fake:6379/0", client=raw)
    try:
        store.cache_put("a", b"x" * 100, None, 10000)
        raw.hset("agenthub:1:cachesizes:60", "a", "big")  # (the index of the bound 60, as another writer left it)
        raw.zadd("agenthub:1:cacheindex:60", {"a": 0})
        raw.hset("agenthub:1:cachesizes:60", "", "lots")
        store.cache_put("b", b"y" * 50, None, 60)
        store.cache_put("c", b"z" * 50, None, 60)  # past the bound: "a" goes first, then "b"
        assert (store.cache_get("a"), store.cache_get("b"), store.cache_get("c")) == (None, None, b"z" * 50)
    finally:
        store.close()


@pytest.mark.parametrize("kind", ["sqlite", "fakeredis"])
def test_a_pause_written_by_a_clock_ahead_holds_for_the_longest_pause_at_most(kind, tmp_path):
    """A pause ends at most 600 s (the limiter's MAX_PAUSE) from now: one further ahead was written by a clock ahead
    of this one (the machine's wall clock stepped back an hour, a failover to a server whose clock is behind)."""
    import json
    import time

    from store_support import made_store

    store = made_store(kind, tmp_path)
    try:
        store.limiter_pause("k", 10.0)
        store.limiter_pause("k", 10.0, "ep")
        if kind == "sqlite":
            ahead = time.time() + 3600
            _sql(store.path, "UPDATE agenthub_rows SET value = '{}'".format(json.dumps({"p": ahead, "e": {"ep": ahead}})))
        else:
            ahead = store._client.time()[0] + 3600
            store._client.hset("agenthub:1:limiter:k", mapping={"p": ahead, "e:ep": ahead})
        assert store.limiter_pauses("k") == {"": 600.0, "ep": 600.0}
    finally:
        store.close()


class _WallClock(object):
    """The SQLite store's ``time`` module with a wall clock the test sets (``now``)."""

    def __init__(self, now):
        import time

        self.now = now
        self.sleep, self.monotonic = time.sleep, time.monotonic

    def time(self):
        return self.now


def test_a_pause_written_by_a_clock_a_day_ahead_ends_600_s_later_not_a_day_later(tmp_path, monkeypatch):
    """Read as 600 s left, such a pause is also made to end then: kept a day ahead, it read 600 s left at every look
    for a whole day (a limiter waiting it out slept 600 s and found it again, for as long as the clocks were apart)."""
    import agenthub.stores.sqlite as sqlite_module

    clock = _WallClock(1000000.0)
    monkeypatch.setattr(sqlite_module, "time", clock)
    store = open_store("sqlite:///" + str(tmp_path / "s.db"))
    try:
        clock.now += 86400  # a clock a day ahead writes the pauses
        store.limiter_pause("k", 30.0)
        store.limiter_pause("k", 30.0, "ep")
        clock.now -= 86400  # ... and this one is a day behind it
        assert store.limiter_pauses("k") == {"": 600.0, "ep": 600.0}
        clock.now += 599.5
        assert store.limiter_pauses("k") == {"": 0.5, "ep": 0.5}
        clock.now += 0.5
        assert store.limiter_pauses("k") == {}
        assert store.limiter_reserve("k", None, None, 0) == 0.0
    finally:
        store.close()

