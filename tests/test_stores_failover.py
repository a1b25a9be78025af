"""A Redis store whose server turns replica (a failover) or answers "try again later" (READONLY, BUSY, MASTERDOWN):
nothing was done, so the store retries it as it retries an unreachable server (``?wait=``), connecting anew (the
host's name may lead to the new primary now), then says so in a retryable StoreError, never that a key holds data
agenthub did not write.  Against real redis-servers: a primary, its replica, and a proxy whose upstream is moved
from one to the other as a failover moves a DNS name."""

import subprocess
import time

import pytest

from agenthub import Budget
from agenthub.stores import StoreError, open_store

from store_support import REDIS_SERVER, DroppingProxy, RedisServer, free_port

pytestmark = pytest.mark.skipif(REDIS_SERVER is None, reason="redis-server is not installed")


class Replica(RedisServer):
    """``redis-server`` replicating ``primary`` (no persistence)."""

    def __init__(self, primary):
        super(Replica, self).__init__()
        self.primary = primary

    def start(self):
        self.process = subprocess.Popen(
            [REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", self.folder, "--protected-mode", "no", "--replicaof", "127.0.0.1", str(self.primary.port)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return self._ready()

    def _ready(self):
        import redis

        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                client = redis.Redis(port=self.port, socket_timeout=1)
                try:
                    if client.info("replication").get("master_link_status") == "up":
                        return self
                finally:
                    client.close()
            except redis.exceptions.ConnectionError:
                pass
            time.sleep(0.05)
        self.stop()
        raise RuntimeError("the replica did not sync")


@pytest.fixture
def pair():
    redis = pytest.importorskip("redis")
    with RedisServer() as primary:
        client = redis.Redis(port=primary.port)
        try:
            client.config_set("repl-diskless-sync-delay", 0)  # (the replica syncs at once, not after 5 s)
        finally:
            client.close()
        with Replica(primary) as replica:
            yield primary, replica, redis


def test_a_store_on_a_replica_says_it_cannot_write_there_now_retryable(pair):
    primary, replica, _ = pair
    open_store(primary.url).close()  # (the schema and epoch written on the primary, replicated)
    with pytest.raises(StoreError) as info:
        open_store("redis://127.0.0.1:{}/0".format(replica.port))
    assert str(info.value) == (
        "store 'redis://127.0.0.1:{}/0' cannot do it now (READONLY: the server is a replica now (a failover?)): "
        "nothing was done; the store URL's ?wait=SECONDS retries that long".format(replica.port))
    assert info.value.retryable is True


def test_a_budget_rides_out_a_failover_under_wait(pair):
    primary, replica, redis = pair
    proxy = DroppingProxy(primary.port, b"\x00never\x00")  # (drops nothing: only leads to the primary of the day)
    budget = Budget(1.0, store=proxy.url + "?wait=10", key="acct")
    raw_primary = redis.Redis(port=primary.port)
    raw_replica = redis.Redis(port=replica.port)
    try:
        hold = budget.reserve("deepseek-v4-flash", 1000, 100)
        hold.settle({"prompt_tokens": 1000, "response_tokens": 100, "cached_tokens": 0, "thoughts_tokens": 0})
        spent = budget.spent_usd
        assert spent > 0
        deadline = time.monotonic() + 10
        while raw_replica.hgetall("agenthub:1:budget:acct") != raw_primary.hgetall("agenthub:1:budget:acct") or \
                raw_replica.hget("agenthub:1:epoch", "epoch") != budget.store._epoch:  # (the replica has every write)
            assert time.monotonic() < deadline
            time.sleep(0.05)
        # the failover: the replica is promoted, the old primary follows it, the name leads to the new one
        raw_replica.execute_command("REPLICAOF", "NO", "ONE")
        raw_primary.execute_command("REPLICAOF", "127.0.0.1", str(replica.port))
        deadline = time.monotonic() + 10
        while raw_primary.info("replication").get("master_link_status") != "up":  # (its resync done: it answers
            assert time.monotonic() < deadline  # READONLY to a write, not reads of a data set being replaced)
            time.sleep(0.05)
        proxy.port = replica.port
        hold = budget.reserve("deepseek-v4-flash", 1000, 100)  # READONLY from the old primary, then the new one
        hold.release()
        assert budget.spent_usd == spent and budget.requests == 1
    finally:
        raw_primary.close()
        raw_replica.close()
        budget.store.close()
        proxy.close()
