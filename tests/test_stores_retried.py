"""A budget's store calls done twice, or for a hold the store never wrote, count the money once: a retried Redis
call (``?wait=``) whose first try was done but whose reply was lost, a hold refused on retry, a late settlement of
an expired hold.  On every store (memory, SQLite, fakeredis), and against a real redis-server through a proxy
that drops the reply."""

import contextlib

import pytest

from agenthub import Budget
from agenthub.stores import MemoryStore, StoreError, open_store

from store_support import REDIS_SERVER, DroppingProxy, RedisServer, made_store


@pytest.fixture(params=["memory", "sqlite", "fakeredis"])
def store(request, tmp_path):
    made = made_store(request.param, tmp_path)
    yield made
    made.close()


@contextlib.contextmanager
def _proxied(server, script, spent=0.0, forward=True):
    """(a store straight to ``server``, a DroppingProxy whose one drop is the next run of ``script``): the account
    "acct" made, ``spent`` spent, and every budget script loaded on the server first."""
    direct = open_store(server.url)
    direct.budget_hold("acct", 10.0, 0.0, "h0", 30)
    direct.budget_finish("acct", "h0", 0.0, spent)
    direct.budget_charge("acct", 0.0)
    proxy = DroppingProxy(server.port, direct._scripts[script].sha.encode(), forward=forward)
    try:
        yield direct, proxy
    finally:
        proxy.close()
        direct.close()


def test_a_settlement_done_twice_counts_once(store):
    assert store.budget_hold("k", 10.0, 1.0, "h1", 30) == (True, 0.0)
    store.budget_finish("k", "h1", 1.0, 0.25)
    store.budget_finish("k", "h1", 1.0, 0.25)  # (the same call again: its first try's reply was lost)
    assert store.budget_totals("k") == (0.25, 0.0, 1)
    assert store.budget_hold("k", 10.0, 1.0, "h2", 30) == (True, 0.25)
    store.budget_finish("k", "h2", 1.0, None)
    store.budget_finish("k", "h2", 1.0, None)  # a release done twice
    assert store.budget_totals("k") == (0.25, 0.0, 1)
    store.budget_finish("k", "never", 1.0, 0.5)  # a hold never written: nothing to settle
    store.budget_finish("k", "never", 1.0, None)
    assert store.budget_totals("k") == (0.25, 0.0, 1)


def test_a_hold_done_twice_holds_once(store):
    assert store.budget_hold("k", 1.0, 0.6, "h1", 30) == (True, 0.0)
    assert store.budget_hold("k", 1.0, 0.6, "h1", 30) == (True, 0.0)  # not refused for holding itself
    assert store.budget_totals("k") == (0.0, 0.6, 0)
    store.budget_finish("k", "h1", 0.6, 0.5)
    assert store.budget_totals("k") == (0.5, 0.0, 1)


def test_a_late_settlement_of_an_expired_hold_puts_it_right_once(store):
    if not store.leases:
        pytest.skip("an in-process store's holds never expire")
    import time

    assert store.budget_hold("k", 10.0, 1.0, "gone", 0.05) == (True, 0.0)
    deadline = time.monotonic() + 5
    while store.budget_totals("k")[1] > 0:  # the unrenewed lease runs out: its worst case is counted
        assert time.monotonic() < deadline
        time.sleep(0.02)
    assert store.budget_totals("k") == (1.0, 0.0, 0)
    if hasattr(store, "_client"):  # (Redis: the remembered holds go two days after the last one expired)
        assert 0 < store._client.pttl("agenthub:1:gone:k") <= 172800000
    store.budget_finish("k", "gone", 1.0, 0.25)
    store.budget_finish("k", "gone", 1.0, 0.25)  # again: nothing more
    assert store.budget_totals("k") == (0.25, 0.0, 1)


needs_redis_server = pytest.mark.skipif(REDIS_SERVER is None, reason="redis-server is not installed")


@pytest.fixture
def redis_server():
    pytest.importorskip("redis")
    with RedisServer() as server:
        yield server


@needs_redis_server
@pytest.mark.parametrize("actual", [0.25, None])
def test_a_settlement_whose_reply_was_lost_and_retried_counts_once(redis_server, actual):
    with _proxied(redis_server, "budget_finish", spent=0.5) as (direct, proxy):
        budget = Budget(10.0, store=proxy.url + "?wait=5", key="acct")
        with contextlib.closing(budget.store):
            hold = budget.reserve("deepseek-v4-flash", 1000, 100)
            if actual is None:
                hold.release()
            else:
                hold.budget._settle(hold.needed_usd, actual, hold.hold_id)
            assert proxy.dropped == 1  # the settlement was done, its reply lost, and the call retried
            assert direct.budget_totals("acct") == ((0.5, 0.0, 1) if actual is None else (0.75, 0.0, 2))


@needs_redis_server
def test_a_hold_whose_reply_was_lost_and_retried_is_held_once_not_refused(redis_server):
    with _proxied(redis_server, "budget_hold") as (direct, proxy), \
            contextlib.closing(open_store(proxy.url + "?wait=5")) as store:
        # the only hold the account has room for: its retry must not count it against itself
        assert store.budget_hold("acct", 1.0, 0.75, "h1", 30) == (True, 0.0)
        assert proxy.dropped == 1
        assert direct.budget_totals("acct") == (0.0, 0.75, 1)


@needs_redis_server
def test_a_hold_whose_reply_was_lost_is_let_go_not_left_to_count_its_worst_case(redis_server, monkeypatch):
    import time

    import agenthub.budget

    monkeypatch.setattr(agenthub.budget, "LEASE_SECONDS", 0.6)  # (the lease thread's round: every 0.2 s)

    with _proxied(redis_server, "budget_hold") as (direct, proxy):
        budget = Budget(1.0, store=proxy.url, key="acct")  # (no ?wait=: the lost reply is a StoreError)
        with contextlib.closing(budget.store):
            with pytest.raises(StoreError, match=r"is unreachable \(ConnectionError\): its answer was lost \(it may "
                                                 r"have been done\)"):
                budget.reserve("deepseek-v4-flash", 1000, 100)
            assert proxy.dropped == 1
            deadline = time.monotonic() + 10
            while direct.budget_totals("acct") != (0.0, 0.0, 1):  # nothing held for the request never sent (the
                assert time.monotonic() < deadline  # lease thread let it go: no wait added to the caller's)
                time.sleep(0.05)
            while budget._leases._ids:  # and no lease of it renewed
                assert time.monotonic() < deadline
                time.sleep(0.05)


def test_a_request_that_held_nothing_is_counted(store):
    store.budget_finish("k", "", 0.0, 0.0)  # (an unpriced model's request under allow_unpriced)
    assert store.budget_totals("k") == (0.0, 0.0, 1)


@needs_redis_server
def test_a_corrupt_hold_refused_mid_sweep_leaves_the_account_as_it_was(redis_server):
    """Redis keeps what a script wrote before its error: the sweep checks every hold before it changes any."""
    import time

    import redis

    from agenthub.stores import StoreError

    store = open_store(redis_server.url)
    raw = redis.Redis.from_url(redis_server.url)
    try:
        assert store.budget_hold("acct", 10.0, 1.0, "expiring", 0.05) == (True, 0.0)
        time.sleep(0.1)  # (its lease has run out: the next sweep counts it)
        raw.hset("agenthub:1:holds:acct", "planted", "not a hold")
        with pytest.raises(StoreError, match="the budget hold row is corrupt: refusing it"):
            store.budget_totals("acct")
        raw.hdel("agenthub:1:holds:acct", "planted")
        assert store.budget_totals("acct") == (1.0, 0.0, 0)  # the expired hold's worst case, counted
    finally:
        raw.close()
        store.close()


@needs_redis_server
def test_a_charge_whose_reply_was_lost_and_retried_counts_once(redis_server):
    import redis

    with _proxied(redis_server, "budget_charge", spent=0.5) as (direct, proxy), \
            contextlib.closing(redis.Redis.from_url(redis_server.url)) as raw:
        budget = Budget(10.0, store=proxy.url + "?wait=5", key="acct")
        with contextlib.closing(budget.store):
            budget.charge(0.25)
        assert proxy.dropped == 1
        assert direct.budget_totals("acct") == (0.75, 0.0, 1)
        marks = raw.keys("agenthub:1:charged:*")
        assert len(marks) == 2 and all(0 < raw.pttl(mark) <= 70000 for mark in marks)  # (gone after 2 * wait + 60 s)


@needs_redis_server
def test_a_settlement_the_store_did_not_take_is_taken_later_by_the_lease_thread(redis_server, monkeypatch):
    """A settlement cut before it reached the server (StoreError to the caller) is not left to expire and count the
    hold's worst case: the lease thread keeps the hold renewed and settles it once the store answers."""
    import threading
    import time

    import agenthub.budget
    from agenthub.stores import StoreError

    monkeypatch.setattr(agenthub.budget, "LEASE_SECONDS", 0.6)  # (renewed, and the settlement tried, every 0.2 s)
    with _proxied(redis_server, "budget_finish", spent=0.5, forward=False) as (direct, proxy):
        budget = Budget(10.0, store=proxy.url, key="acct")
        with contextlib.closing(budget.store):
            hold = budget.reserve("deepseek-v4-flash", 1000, 100)
            with pytest.raises(StoreError, match="is unreachable"):
                hold.budget._settle(hold.needed_usd, 0.25, hold.hold_id)
            assert proxy.dropped == 1
            deadline = time.monotonic() + 10
            while direct.budget_totals("acct") != (0.75, 0.0, 2):
                assert time.monotonic() < deadline, direct.budget_totals("acct")
                time.sleep(0.05)
            time.sleep(1.0)  # (past the lease: nothing expires, nothing more is counted)
            assert direct.budget_totals("acct") == (0.75, 0.0, 2)
            assert budget._leases._ids == set()
            for thread in [t for t in threading.enumerate() if t.name == "agenthub-lease"]:
                thread.join(10)  # (it lingers one period, then ends)


def test_the_lease_thread_outlives_a_store_error_that_is_not_a_store_error(monkeypatch):
    """redis-py, its connection closed under it by another thread, raises ValueError or AttributeError: the one thread
    renewing every hold of the process goes on (else every hold would expire and count its worst case)."""
    import threading
    import time

    import agenthub.budget

    class Flaky(MemoryStore):
        leases = True

        def __init__(self):
            super(Flaky, self).__init__()
            self.renewals = 0

        def budget_renew(self, key, hold_ids, lease):
            self.renewals += 1
            if self.renewals == 1:
                raise ValueError("I/O operation on closed file.")
            super(Flaky, self).budget_renew(key, hold_ids, lease)

    monkeypatch.setattr(agenthub.budget, "LEASE_SECONDS", 0.3)  # (renewed every 0.1 s)
    store = Flaky()
    budget = Budget(1.0, store=store)
    hold = budget.reserve("deepseek-v4-flash", 1000, 100)
    deadline = time.monotonic() + 10
    while store.renewals < 3:
        assert time.monotonic() < deadline, "the lease thread stopped renewing"
        time.sleep(0.02)
    hold.release()
    for thread in [t for t in threading.enumerate() if t.name == "agenthub-lease"]:
        thread.join(10)


@needs_redis_server
@pytest.mark.parametrize("finish", [False, True])
def test_a_journal_write_whose_reply_was_lost_is_written_once_not_refused(redis_server, finish):
    """The journal's append goes again the client's way when its own connection fails: when the first try was
    done (its reply lost), the same entries at the same numbers are there: done, not "two writers?"."""
    direct = open_store(redis_server.url)
    assert direct.journal_claim("warm", "w0") is None
    direct.journal_append("warm", "w0", 0, "{}")  # (the script loaded on the server)
    proxy = DroppingProxy(redis_server.port, direct._scripts["journal_append"].sha.encode())
    store = open_store(proxy.url)
    try:
        assert store.journal_claim("run-1", "w1") is None
        (store.journal_finish if finish else store.journal_append_many)("run-1", "w1", 0, ['{"n": 0}', '{"n": 1}'])
        assert proxy.dropped == 1
        assert direct.journal_entries("run-1") == ['{"n": 0}', '{"n": 1}']
        if finish:
            assert direct.journal_claim("run-1", "w2") is None  # the lease was let go
        else:
            store.journal_append("run-1", "w1", 2, '{"n": 2}')
            assert direct.journal_entries("run-1") == ['{"n": 0}', '{"n": 1}', '{"n": 2}']
        with pytest.raises(StoreError, match="entry 0 written where entry 3 is next|no longer holds its lease"):
            store.journal_append("run-1", "w1", 0, '{"n": 9}')  # (other entries at those numbers: still refused)
    finally:
        store.close()
        proxy.close()
        direct.close()


def test_a_store_failing_at_a_call_s_end_still_lets_every_other_hook_end_the_call():
    """Every hook's on_done runs, whatever one raises: the budget's settlement failing on its store (a Redis blip)
    skipped the limiter's settlement and every hook after it (the caller's own too); the first error is raised after
    all ran.  And the other way round: the limiter's store failing no longer skips the budget's settlement."""
    from agenthub import AutoLLMClient, RateLimiter
    from agenthub.attempts import AttemptHook

    from jobs_server import JobServer

    blip = StoreError("store 'redis://h:1/0' is unreachable (ConnectionError)", retryable=True)

    class BudgetBlip(MemoryStore):
        def budget_finish(self, key, hold_id, needed, actual):
            raise blip

    class LimiterBlip(MemoryStore):
        shared = True

        def limiter_adjust(self, key, seconds):
            raise blip

    class Seen(AttemptHook):
        def __init__(self):
            self.done = []

        def on_done(self, attempt):
            self.done.append(attempt.usage is not None)

    user = [{"role": "user", "content_items": [{"type": "text", "text": "hi"}]}]
    with JobServer() as server:
        limiter, seen = RateLimiter(tpm=1_000_000), Seen()
        client = AutoLLMClient("deepseek-v4-flash", client_type="openai-chat", base_url=server.base_url, api_key="k",
                               limiter=limiter, budget=Budget(1.0, store=BudgetBlip()), hooks=[seen])
        with pytest.raises(StoreError, match="is unreachable"):
            client.response(user, {"max_tokens": 50})
        assert limiter.tokens == 15 and seen.done == [True]  # (the server's usage: 10 + 5 tokens)
        budget = Budget(1.0)
        client = AutoLLMClient("deepseek-v4-flash", client_type="openai-chat", base_url=server.base_url, api_key="k",
                               limiter=RateLimiter(tpm=1_000_000, store=LimiterBlip()), budget=budget)
        with pytest.raises(StoreError, match="is unreachable"):
            client.response(user, {"max_tokens": 50})
        assert budget.reserved_usd == 0.0 and budget.requests == 1 and budget.spent_usd > 0


def test_a_budget_s_repr_never_raises_when_its_store_cannot_answer():
    class Down(MemoryStore):
        url = "redis://***@h:1/0"
        shared = True

        def budget_totals(self, key):
            raise StoreError("store 'redis://***@h:1/0' is unreachable (ConnectionError)", retryable=True)

    assert repr(Budget(2.0, store=Down(), key="team")) == (
        "Budget(max_usd=2, spent_usd=?, reserved_usd=? (the store cannot answer: StoreError), "
        "store='redis://***@h:1/0', key='team')")
