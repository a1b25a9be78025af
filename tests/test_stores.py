"""agenthub.stores: the one interface, its three implementations (memory, SQLite, Redis: fakeredis for
the unit tests, a real redis-server for the rest), the URLs, refusing corrupt and foreign rows, and the
limiter and budget on a store shared by real processes."""

import json
import multiprocessing
import os
import pickle
import signal
import contextlib
import sqlite3
import time
from unittest.mock import ANY

import pytest

from agenthub import AutoLLMClient, Budget, BudgetExceededError, ConfigError, RateLimiter
from agenthub.stores import MemoryStore, StoreError, open_store
from agenthub.stores.sqlite import SQLiteStore

from jobs_server import JobServer
from store_support import (REDIS_SERVER, RedisServer, budget_worker, fake_redis_store, free_port, hold_and_wait,
                           made_store, pace_worker)

needs_redis_server = pytest.mark.skipif(REDIS_SERVER is None, reason="redis-server is not installed")


def _counted_down(value, full, since):
    """A wait the store counts down on a wall clock: `full` when asked at `since`, less the time gone by
    since then (a loaded machine only shortens it; a wrong row would be off by a whole slot or pause)."""
    gone = time.monotonic() - since
    return full - gone - 0.02 < value <= full


_fake_redis_store = fake_redis_store


@pytest.fixture(params=["memory", "sqlite", "fakeredis"])
def store(request, tmp_path):
    made = made_store(request.param, tmp_path)
    yield made
    made.close()


@pytest.fixture(scope="module")
def redis_server():
    if REDIS_SERVER is None:
        pytest.skip("redis-server is not installed")
    pytest.importorskip("redis")
    with RedisServer() as server:
        yield server


# -- the interface, on every implementation ------------------------------------------------------------

def test_the_limiter_rows_pace_and_keys_never_mix(store):
    first = time.monotonic()
    assert store.limiter_reserve("a", 600, None, 0) == 0.0
    second = store.limiter_reserve("a", 600, None, 0)
    assert _counted_down(second, 0.1, first)  # the next slot is one interval (60/600 s) after the first
    assert store.limiter_reserve("b", 600, None, 0) == 0.0  # another key: its own pace
    paused = time.monotonic()
    assert store.limiter_pause("a", 5.0) is True
    assert store.limiter_pause("a", 1.0) is False  # a shorter pause does not shorten the one in force
    assert store.limiter_pause("a", 2.0, '["openai-chat",["h",1],"m"]') is True  # one endpoint's own pause
    pauses = store.limiter_pauses("a")
    assert sorted(pauses) == ["", '["openai-chat",["h",1],"m"]'] and _counted_down(pauses[""], 5.0, paused)
    assert store.limiter_pauses("b") == {}
    assert _counted_down(store.limiter_reserve("a", 600, None, 0), 0.2, first)  # a pause does not hold the queue
    assert _counted_down(store.limiter_reslot("a", 600), 0.3, first)  # a held request's new slot: behind those booked


def test_tokens_hold_the_next_request_back_and_a_settlement_moves_the_pace(store):
    first = time.monotonic()
    assert store.limiter_reserve("t", None, 6000, 100) == 0.0  # 100 tokens at 6000/min: the next waits 1 s
    assert _counted_down(store.limiter_reserve("t", None, 6000, 0), 1.0, first)
    store.limiter_adjust("t", 2.0)  # the answer used 200 tokens more than held
    assert _counted_down(store.limiter_reserve("t", None, 6000, 0), 3.0, first)


def test_a_settlement_never_pulls_the_token_pace_back_past_the_requests_booked(store):
    first = time.monotonic()
    assert [store.limiter_reserve("k", None, 60, 600) for _ in range(3)] == [0.0, ANY, ANY]
    store.limiter_adjust("k", 10.0)  # the first used 10 tokens more than held: the pace moves 10 s later
    assert _counted_down(store.limiter_reserve("k", None, 60, 0), 1810.0, first)  # not 600 s: behind the booked
    store.limiter_adjust("k", 1e9)  # an absurd usage holds the pace back 600 s more, at most
    assert _counted_down(store.limiter_reserve("k", None, 60, 0), 2410.0, first)


def test_budget_holds_are_checked_and_counted_atomically(store):
    assert store.budget_hold("k", 1.0, 0.4, "h1", 30) == (True, 0.0)
    assert store.budget_hold("k", 1.0, 0.4, "h2", 30) == (True, 0.4)
    assert store.budget_hold("k", 1.0, 0.4, "h3", 30) == (False, 0.8)  # refused: nothing held
    assert store.budget_hold("other", 1.0, 0.4, "h1", 30) == (True, 0.0)  # another key: another account
    store.budget_finish("k", "h1", 0.4, 0.1)  # settled at its actual cost
    store.budget_finish("k", "h2", 0.4, None)  # released: the request failed before any answer
    assert store.budget_totals("k") == (pytest.approx(0.1), 0.0, 1)
    store.budget_charge("k", 0.25)
    assert store.budget_totals("k")[0] == pytest.approx(0.35)


def test_an_expired_hold_counts_its_worst_case_and_a_late_settlement_puts_it_right(store):
    assert store.budget_hold("k", 1.0, 0.3, "gone", 0.05)[0]
    assert store.budget_hold("k", 1.0, 0.2, "live", 60)[0]
    deadline = time.monotonic() + 5
    while store.budget_totals("k")[1] > 0.2 + 1e-9:  # the unrenewed lease runs out
        assert time.monotonic() < deadline
        time.sleep(0.02)
    assert store.budget_totals("k") == (pytest.approx(0.3), pytest.approx(0.2), 0)
    store.budget_renew("k", ["live", "gone"], 60)  # renewing an expired hold does not bring it back
    store.budget_finish("k", "gone", 0.3, 0.05)  # its holder was alive after all: the actual cost counts
    assert store.budget_totals("k") == (pytest.approx(0.05), pytest.approx(0.2), 1)


def test_the_cache_rows_expire_and_stay_under_the_size_bound(store):
    store.cache_put("c1", b"x" * 10, None, 25)
    store.cache_put("c2", b"y" * 10, None, 25)
    store.cache_put("c3", b"z" * 10, None, 25)  # 30 bytes > 25: the oldest goes
    assert (store.cache_get("c1"), store.cache_get("c2"), store.cache_get("c3")) == (None, b"y" * 10, b"z" * 10)
    store.cache_put("big", b"b" * 26, None, 25)  # larger than the bound: not stored
    assert store.cache_get("big") is None
    put_at = time.monotonic()
    store.cache_put("short", b"s", 0.5, 25)
    got = store.cache_get("short")
    if time.monotonic() - put_at < 0.45:  # (read back within its ttl: a loaded machine may take longer to ask)
        assert got == b"s"
    deadline = time.monotonic() + 5
    while store.cache_get("short") is not None:
        assert time.monotonic() < deadline
        time.sleep(0.02)
    store.cache_delete("c3")
    assert store.cache_get("c3") is None


# -- URLs -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("url, words", [
    ("", "an empty string"),
    ("ftp://host/x", "unknown scheme 'ftp'"),
    ("/some/dir", "not a store URL"),
    ("sqlite://host/x.db", "sqlite:///relative/path"),
    ("sqlite:///", "names no file"),
    ("sqlite:///x.db?mode=ro", "no query"),
    ("sqlite:////no/such/folder/x.db", "does not exist"),
    ("redis://", "redis://host"),
    ("redis://h:99999/0", "bad port"),
    ("redis://h:6379/zero", "the database is a number"),
    ("redis://h:6379/0?colour=red", "unknown or bad option 'colour'"),
    ("redis://h:6379/0?wait=-1", "unknown or bad option 'wait'"),
])
def test_a_malformed_store_url_is_a_config_error(url, words):
    with pytest.raises(ConfigError) as info:
        RateLimiter(rpm=60, store=url)
    assert words in str(info.value)
    with pytest.raises(ConfigError):
        Budget(1.0, store=url)


def test_a_password_in_a_redis_url_never_shows(monkeypatch):
    pytest.importorskip("redis")
    with pytest.raises(ConfigError) as info:
        Budget(1.0, store="redis://:hunter2secret@h:6379/x")
    assert "hunter2secret" not in str(info.value) and "***@" in str(info.value)
    with pytest.raises(StoreError) as info:  # unreachable: the URL is shown masked
        Budget(1.0, store="redis://:hunter2secret@127.0.0.1:{}/0?timeout=0.5".format(free_port()))
    assert "hunter2secret" not in str(info.value) and info.value.retryable is True


@pytest.mark.parametrize("key", ["", "a b", "x" * 201, "caf\u00e9", 7])
def test_a_bad_key_is_a_config_error(key):
    with pytest.raises(ConfigError):
        RateLimiter(rpm=60, key=key)


def test_relative_and_absolute_sqlite_paths(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    relative = open_store("sqlite:///rel.db")
    absolute = open_store("sqlite:///" + str(tmp_path / "abs.db"))  # sqlite:////tmp/...: four slashes
    assert ("sqlite:////" in absolute.url) and relative.path == "rel.db"
    assert os.path.exists(str(tmp_path / "rel.db")) and os.path.exists(str(tmp_path / "abs.db"))
    assert relative.journal_mode == "wal"
    relative.close()
    absolute.close()


def test_the_default_is_in_process_and_unchanged():
    limiter = RateLimiter(rpm=60)
    budget = Budget(1.0)
    assert limiter.store is None and isinstance(budget.store, MemoryStore)
    assert repr(limiter) == "RateLimiter(rpm=60.0, tpm=None)"
    copy = pickle.loads(pickle.dumps(limiter))
    limiter.reserve()
    assert copy.store is None and copy.reserve()[1] == 0.0  # a copy: its own fresh pace
    with pytest.raises(ConfigError):
        pickle.dumps(budget)  # an in-process account cannot be copied


# -- refusing what a store must not use -------------------------------------------------------------------

def test_a_sqlite_store_refuses_corrupt_rows_another_version_and_other_files(tmp_path):
    path = str(tmp_path / "s.db")
    budget = Budget(1.0, store="sqlite:///" + path, key="team")
    budget.charge(0.1)
    with contextlib.closing(sqlite3.connect(path)) as conn, conn:
        conn.execute("UPDATE agenthub_rows SET value = '{not json' WHERE kind = 'budget'")
    with pytest.raises(StoreError) as info:
        budget.spent_usd
    assert "budget row of key 'team' is corrupt" in str(info.value)
    with contextlib.closing(sqlite3.connect(path)) as conn, conn:
        conn.execute("""UPDATE agenthub_rows SET value = '{"spent": "lots"}' WHERE kind = 'budget'""")
    with pytest.raises(StoreError, match="spent is 'lots'"):
        budget.reserve("deepseek-v4-flash", 10, 10)
    with contextlib.closing(sqlite3.connect(path)) as conn, conn:
        conn.execute("UPDATE agenthub_meta SET value = '99' WHERE name = 'schema'")
    with pytest.raises(StoreError, match="schema 99"):
        Budget(1.0, store="sqlite:///" + path)
    budget.store.close()
    other = tmp_path / "notes.txt"
    other.write_bytes(b"these are not the rows you are looking for" * 100)
    with pytest.raises(StoreError, match="not a usable SQLite database"):
        RateLimiter(rpm=60, store="sqlite:///" + str(other))


def test_a_redis_store_refuses_corrupt_rows_and_another_version():
    store = _fake_redis_store()
    client = store._client
    limiter = RateLimiter(rpm=60, store=store, key="k")
    limiter.acquire()
    client.hset("agenthub:1:limiter:k", "r", "soon")
    with pytest.raises(StoreError, match="limiter row is corrupt"):
        limiter.reserve()
    client.set("agenthub:1:holds:b", "a string, not a hash")
    with pytest.raises(StoreError, match="refused the operation"):
        Budget(1.0, store=store, key="b").spent_usd
    client.set("agenthub:schema", "7")
    from agenthub.stores.redis import RedisStore

    with pytest.raises(StoreError, match="schema b?'7'"):
        RedisStore("redis://fake/0", client=client)


def test_rows_hold_numbers_only_never_a_secret(tmp_path):
    path = str(tmp_path / "s.db")
    with JobServer() as server:
        client = AutoLLMClient("deepseek-v4-flash", client_type="openai-chat", base_url=server.base_url,
                               api_key="sk-secret-key-1234567890", limiter=RateLimiter(rpm=6000, store="sqlite:///" + path),
                               budget=Budget(1.0, store="sqlite:///" + path))
        client.response([{"role": "user", "content_items": [{"type": "text", "text": "prompt-zq81x"}]}],
                        {"max_tokens": 8})
    with open(path, "rb") as handle:
        raw = handle.read()
    for name in (path + "-wal",):
        if os.path.exists(name):
            with open(name, "rb") as handle:
                raw += handle.read()
    assert b"sk-secret" not in raw and b"prompt-zq81x" not in raw and b"Authorization" not in raw


# -- the limiter and budget on a shared store ----------------------------------------------------------

def test_a_pickled_limiter_or_budget_on_a_shared_store_draws_from_the_same_account(tmp_path):
    url = "sqlite:///" + str(tmp_path / "s.db")
    limiter = RateLimiter(rpm=60, store=url, key="team")
    copy = pickle.loads(pickle.dumps(limiter))
    assert (copy.rpm, copy.key, copy.store.url) == (60.0, "team", url)
    assert limiter.share(4) is limiter  # every share draws from the one shared pace
    first = time.monotonic()
    limiter.reserve()
    assert _counted_down(copy.reserve()[1], 1.0, first)  # the copy's next slot comes after the original's
    budget = Budget(1.0, store=url, key="team")
    budget.charge(0.5)
    again = pickle.loads(pickle.dumps(budget))
    assert again.spent_usd == 0.5 and again.key == "team"
    assert "store='sqlite:///" in repr(again)


def test_a_lease_is_renewed_while_its_holder_lives(tmp_path, monkeypatch):
    import agenthub.budget

    monkeypatch.setattr(agenthub.budget, "LEASE_SECONDS", 0.3)
    budget = Budget(1.0, store="sqlite:///" + str(tmp_path / "s.db"))
    hold = budget.reserve("deepseek-v4-flash", 1000, 1000)
    needed = hold.needed_usd
    renewer = budget._leases._thread
    assert renewer is not None and renewer.is_alive()
    time.sleep(1.0)  # three leases long: the live holder kept it
    assert budget.reserved_usd == pytest.approx(needed) and budget.spent_usd == 0.0
    hold.settle({"prompt_tokens": 10, "cached_tokens": 0, "thoughts_tokens": 0, "response_tokens": 10})
    renewer.join(5)
    assert not renewer.is_alive() and budget.reserved_usd == 0.0  # no hold: the thread is gone


def _spawn():
    return multiprocessing.get_context("spawn")


def test_a_killed_holder_s_hold_expires_and_counts_its_worst_case(store_url, tmp_path):
    ready = str(tmp_path / "ready")
    child = _spawn().Process(target=hold_and_wait, args=(store_url, ready, 1.0))
    child.start()
    try:
        deadline = time.monotonic() + 60
        while not os.path.exists(ready):
            assert time.monotonic() < deadline and child.is_alive()
            time.sleep(0.02)
        budget = Budget(1.0, store=store_url, key="killed")
        held = budget.reserved_usd
        assert held > 0 and budget.spent_usd == 0.0
        os.kill(child.pid, signal.SIGKILL)
        child.join(10)
        while budget.reserved_usd > 0:  # the lease (1 s here, 30 s by default) runs out
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert budget.spent_usd == pytest.approx(held)  # counted whole: what it cost is unknown
        budget.reserve("deepseek-v4-flash", 10, 10).release()  # and it blocks nobody
    finally:
        if child.is_alive():
            child.kill()
        child.join(10)


@pytest.mark.parametrize("processes", [1, 8])
def test_processes_sharing_a_limiter_use_the_rpm_without_429s(store_url, processes):
    rpm = 1200  # 20 a second, enforced by the server as a token bucket of one second's worth
    total = 80
    queue = _spawn().Queue()
    with JobServer(rpm=rpm) as server:
        start_at = time.time() + 0.5 + 0.3 * processes  # every process imported and connected by then
        children = [_spawn().Process(target=pace_worker, args=(store_url, server.base_url, rpm, total // processes,
                                                                "p{}".format(n), start_at, queue))
                    for n in range(processes)]
        for child in children:
            child.start()
        results = [queue.get(timeout=120) for _ in children]
        for child in children:
            child.join(90)
        assert [child.exitcode for child in children] == [0] * processes
        ok = sorted(t for t, status in server.statuses if status == 200)
        late_429 = [t for t, status in server.statuses if status == 429 and t - ok[0] > 1.0]
    assert len(ok) == total
    used = (len(ok) - 1) / (ok[-1] - ok[0]) * 60
    waited = sum(result[1] for result in results)
    took = sum(result[2] for result in results)
    given = sorted(at for result in results for at in result[3])
    paced = (len(given) - 1) / (given[-1] - given[0]) * 60  # the rate of the times the limiter gave
    assert late_429 == [], (used, len(late_429))
    # the rpm used: the requests went at 85% of it at least.  On a machine too loaded for the processes to keep
    # to it (a sleep that ends late, a process slow to ask), the limiter's own part: the times it gave were at
    # 85% of the rpm at least, or it was not what held them back (it had them wait under 15% of their time).  A
    # limiter that paces slower than the rpm fails all three (it has them wait over 90% of their time).
    assert used >= 0.85 * rpm or paced >= 0.85 * rpm or waited <= 0.15 * took, (used, paced, waited, took)


@pytest.mark.parametrize("max_tokens", [16, 1])
def test_eight_processes_sharing_a_budget_never_spend_more_than_it(store_url, max_tokens):
    """The bound: spent <= max_usd + what the requests in flight cost beyond their holds.  With
    max_tokens 16 every answer (10 tokens in, 5 out) costs less than its hold: never above max_usd.
    With max_tokens 1 each answer costs more than its hold (5 tokens out against 1 held): the sum may
    pass max_usd, by at most 8 (one request in flight per process) times that excess."""
    from agenthub import cost
    from agenthub.budget import worst_case_usd

    one_answer = cost("deepseek-v4-flash", {"prompt_tokens": 10, "cached_tokens": 0, "thoughts_tokens": 0,
                                            "response_tokens": 5})
    smallest_hold = worst_case_usd("deepseek-v4-flash", 6, max_tokens)  # the input estimate is >= 6 tokens here
    max_usd = one_answer * 40  # about 40 answers, far fewer than 8 processes would send unbounded
    queue = _spawn().Queue()
    with JobServer() as server:
        children = [_spawn().Process(target=budget_worker, args=(store_url, server.base_url, max_usd,
                                                                  "b{}".format(n), queue, max_tokens))
                    for n in range(8)]
        for child in children:
            child.start()
        results = [queue.get(timeout=120) for _ in children]
        for child in children:
            child.join(30)
        sent = sum(server.counts.values())
    budget = Budget(max_usd, store=store_url, key="spend")
    assert all(refused for _, _, refused in results)  # every process was stopped by the shared account
    answered = sum(n for _, n, _ in results)
    assert answered == sent == budget.requests  # a refused request was never sent
    assert budget.reserved_usd == 0.0
    assert budget.spent_usd == pytest.approx(answered * one_answer)
    if one_answer <= smallest_hold:
        assert budget.spent_usd <= max_usd + 1e-12
        assert max_usd - budget.spent_usd < worst_case_usd("deepseek-v4-flash", 40, max_tokens)  # stopped only when full
    else:
        assert budget.spent_usd <= max_usd + 8 * (one_answer - smallest_hold) + 1e-12


# -- a real redis-server ----------------------------------------------------------------------------------

def test_a_redis_pause_written_by_a_clock_a_day_ahead_is_made_to_end_600_s_from_now(redis_server):
    """A failover to a server whose clock is a day behind (test_stores_hostile has the SQLite case): the pause read as
    600 s left is rewritten to end 600 s from the server's TIME, not kept a day ahead."""
    store = open_store(redis_server.url)
    try:
        store.limiter_pause("k", 30.0)
        store.limiter_pause("k", 30.0, "ep")
        seconds, micros = store._client.time()
        ahead = seconds + 86400
        store._client.hset("agenthub:1:limiter:k", mapping={"p": ahead, "e:ep": ahead})
        assert store.limiter_pauses("k") == {"": 600.0, "ep": 600.0}
        row = store._client.hgetall("agenthub:1:limiter:k")
        now = seconds + micros / 1e6
        assert now + 600 <= float(row[b"p"]) <= now + 610 and float(row[b"e:ep"]) == float(row[b"p"])
    finally:
        store.close()


def test_a_real_redis_runs_the_same_scripts_and_refuses_corrupt_rows(redis_server):
    import redis

    store = open_store(redis_server.url)
    try:
        first = time.monotonic()
        assert store.limiter_reserve("real", 600, None, 0) == 0.0
        assert _counted_down(store.limiter_reserve("real", 600, None, 0), 0.1, first)
        assert store.budget_hold("real", 1.0, 0.4, "h", 30) == (True, 0.0)
        store.budget_finish("real", "h", 0.4, 0.1)
        assert store.budget_totals("real") == (pytest.approx(0.1), 0.0, 1)
        raw = redis.Redis.from_url(redis_server.url)
        raw.hset("agenthub:1:holds:real", "x", "many soon")
        with pytest.raises(StoreError, match="the budget hold row is corrupt: refusing it"):
            store.budget_totals("real")
        raw.delete("agenthub:1:holds:real")
        raw.close()
    finally:
        store.close()


@needs_redis_server
def test_a_redis_that_goes_away_mid_run_is_a_typed_error_and_nothing_is_sent():
    pytest.importorskip("redis")
    user = [{"role": "user", "content_items": [{"type": "text", "text": "hi"}]}]
    with RedisServer() as redis_server, JobServer() as server:
        url = redis_server.url + "?timeout=1"
        client = AutoLLMClient("deepseek-v4-flash", client_type="openai-chat", base_url=server.base_url, api_key="k",
                               limiter=RateLimiter(rpm=6000, store=url), budget=Budget(1.0, store=url))
        client.response(user, {"max_tokens": 8})
        redis_server.stop()
        with pytest.raises(StoreError) as info:
            client.response(user, {"max_tokens": 8})
        assert info.value.retryable is True and "is unreachable" in str(info.value)
        assert sum(server.counts.values()) == 1  # the second call was never sent
        with pytest.raises(StoreError):
            Budget(1.0, store=url)  # opening one is refused too, before anything is sent
        client.budget.store.close()  # (what it may still owe, tried once more and let go: no retry left running)
        client.limiter.store.close()


@needs_redis_server
def test_wait_in_the_url_rides_out_a_redis_restart():
    pytest.importorskip("redis")
    import threading

    with RedisServer() as redis_server:
        limiter = RateLimiter(rpm=6000, store=redis_server.url + "?wait=20&timeout=1")
        limiter.acquire()
        redis_server.stop()
        restart = threading.Timer(0.5, redis_server.start)
        restart.start()
        try:
            limiter.acquire()  # waits for the server to come back instead of failing
        finally:
            restart.join(15)
        limiter.store.close()


def _reserve_in_child(limiter, queue):
    queue.put(limiter.reserve()[1])


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork here")
def test_a_forked_child_uses_its_own_connection_and_the_shared_pace(tmp_path):
    limiter = RateLimiter(rpm=60, store="sqlite:///" + str(tmp_path / "s.db"), key="fork")
    assert limiter.reserve()[1] == 0.0  # the parent's connection is open now
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_reserve_in_child, args=(limiter, queue))
    child.start()
    waited = queue.get(timeout=30)
    child.join(30)
    # the child booked the slot after the parent's (1 s later; less the time the fork and its start took)
    assert child.exitcode == 0 and 0.3 < waited <= 1.0
    assert 1.0 < limiter.reserve()[1] <= 2.0  # and the parent the one after the child's (a wall clock: a busy
    #                                           machine's delays shorten each wait, never lengthen it)
    limiter.store.close()


def test_a_redis_url_without_the_extra_says_how_to_install_it(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "redis", None)  # as if agenthub[redis] were not installed
    with pytest.raises(ConfigError, match=r"pip install '\.\[redis\]'"):
        RateLimiter(rpm=60, store="redis://127.0.0.1:6379/0")


def test_importing_agenthub_and_its_stores_does_not_import_redis():
    import subprocess
    import sys

    code = "import sys, agenthub, agenthub.stores; agenthub.RateLimiter(60); print('redis' in sys.modules)"
    assert subprocess.check_output([sys.executable, "-c", code]).decode().strip() == "False"


def test_pauses_are_shared_per_endpoint_and_a_held_request_takes_a_new_slot(store_url):
    one = ("openai-chat", ("h1", 443), "m")
    two = ("openai-chat", ("h2", 443), "m")
    a = RateLimiter(rpm=600, store=store_url, key="endpoints")  # two processes' limiters, one store
    b = RateLimiter(rpm=600, store=store_url, key="endpoints")
    paused = time.monotonic()
    a.pause(5.0, one)  # a 429 of endpoint one, seen by a
    assert _counted_down(b.paused_for(one), 5.0, paused) and b.paused_for(two) == 0.0
    assert _counted_down(b.paused_for(), 5.0, paused)  # without a key: the longest pause of any endpoint
    assert _counted_down(b.paused_for(("openai-chat", None, "m")), 5.0, paused)  # an unknown host matches any
    assert b.reserve(0, two)[1] < 0.2  # the other endpoint goes: a pause does not hold the queue
    assert b.reserve(0, one)[1] > 5.0 - (time.monotonic() - paused) - 0.02  # held past the pause
    paused = time.monotonic()
    a.pause(0.3)  # every endpoint
    assert _counted_down(b.paused_for(two), 0.3, paused)
    ticket, wait = b.reserve(0, two)
    booked = ticket.at
    slept = []
    assert b.wait_turn(ticket, wait, two, lambda s: slept.append(s) or time.sleep(s) or True)
    assert _counted_down(slept[0], 0.31, paused)  # held by the pause ...
    assert ticket.at > booked  # ... past its slot: then a new slot, after the pause
    assert b.pauses == 0 and a.pauses == 2


def test_a_pause_of_one_api_key_holds_that_key_in_another_process_and_not_another_key(store_url):
    """A 429 to key A, got by another process, holds key A's requests in every process sharing the store, and not
    key B's on the same host and model (B's call went at once; it waited out A's 30 s pause, past its deadline):
    the account's mark is the same in every process (a slow salted hash), and no credential reaches the store."""
    import subprocess
    import sys

    from sse_server import Answer, SSEServer

    from agenthub import Timeout
    from agenthub.attempts import Attempt
    from agenthub.breaker import account_mark
    from agenthub.limiter import endpoint_key

    code = """if True:
        import sys
        from agenthub import AutoLLMClient, RateLimiter, RateLimitError
        client = AutoLLMClient("m", client_type="openai-chat", api_key="sk-key-A-0123456789", base_url=sys.argv[2],
                               max_retries=0, limiter=RateLimiter(store=sys.argv[1], key="accounts"))
        try:
            client.response([{"role": "user", "content_items": [{"type": "text", "text": "hi"}]}])
        except RateLimitError as exc:
            print(exc.status, exc.retry_after)
    """
    chunk = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m",
             "choices": [{"index": 0, "delta": {"role": "assistant", "content": "key B"}, "finish_reason": "stop"}]}
    with SSEServer() as server:
        server.answers.append(Answer([b'{"error": {"message": "rate limited", "code": "rate_limit_exceeded"}}'],
                                     status=429, headers={"Content-Type": "application/json", "Retry-After": "30"},
                                     chunked=False))
        server.answers.append(Answer([b"data: " + json.dumps(chunk).encode() + b"\n\ndata: [DONE]\n\n"]))
        out = subprocess.run([sys.executable, "-c", code, store_url, server.url], stdout=subprocess.PIPE,
                             timeout=120, check=True)
        assert out.stdout.decode().split() == ["429", "30.0"]
        limiter = RateLimiter(store=store_url, key="accounts")
        a, b = (AutoLLMClient("m", client_type="openai-chat", api_key=key, base_url=server.url, max_retries=0,
                              limiter=limiter, timeout=Timeout(connect=5, read=5, total=5))
                for key in ("sk-key-A-0123456789", "sk-key-B-0123456789"))
        answer = b.response([{"role": "user", "content_items": [{"type": "text", "text": "hi"}]}])
        assert answer["content_items"][0]["text"] == "key B" and len(server.requests) == 2
        port = int(server.url.split(":")[2].split("/")[0])
    mark_a, mark_b = (account_mark(client.credential_values()) for client in (a, b))
    key_a, key_b = (endpoint_key(Attempt("stream", "openai-chat", "m", None, server=("127.0.0.1", port),
                                         account=mark)) for mark in (mark_a, mark_b))
    assert 20 < limiter.paused_for(key_a) <= 30 and limiter.paused_for(key_b) == 0.0
    assert 20 < limiter.paused_for(("openai-chat", ("127.0.0.1", port), "m")) <= 30  # (a key without the account)
    names = list(open_store(store_url).limiter_pauses("accounts"))
    assert names == ['["openai-chat",["127.0.0.1",{}],"m","{}"]'.format(port, mark_a)] and len(mark_a) == 16
