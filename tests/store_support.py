"""Helpers for the shared-store tests: a real redis-server on a free 127.0.0.1 port (a subprocess,
stopped after), and the worker processes of the cross-process tests (run with multiprocessing spawn:
real processes, each with its own limiter/budget opened from the store URL)."""

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

REDIS_SERVER = shutil.which("redis-server")


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class RedisServer(object):
    """``redis-server`` on 127.0.0.1:<free port>, no persistence, in a temporary folder."""

    def __init__(self):
        self.port = free_port()
        self.folder = tempfile.mkdtemp(prefix="agenthub-redis-")
        self.process = None

    @property
    def url(self):
        return "redis://127.0.0.1:{}/0".format(self.port)

    def start(self):
        self.process = subprocess.Popen(
            [REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", self.folder, "--protected-mode", "no"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2) as sock:
                    sock.sendall(b"PING\r\n")
                    if sock.recv(16).startswith(b"+PONG"):
                        return self
            except OSError:
                time.sleep(0.02)
        self.stop()
        raise RuntimeError("redis-server did not start")

    def stop(self):
        if self.process is not None:
            self.process.kill()
            self.process.wait(10)
            self.process = None

    def close(self):
        self.stop()
        shutil.rmtree(self.folder, ignore_errors=True)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.close()


def killed_after(script, args, env, lines):
    """``python -c script *args`` with ``env``: the first ``lines`` lines it prints (read as it prints them), then it
    is killed with SIGKILL there (a crash: no cleanup) and reaped."""
    child = subprocess.Popen([sys.executable, "-c", script] + list(args), stdout=subprocess.PIPE, env=env)
    try:
        read = [child.stdout.readline().decode() for _ in range(lines)]
        child.send_signal(signal.SIGKILL)
        assert child.wait(10) == -signal.SIGKILL
        return read
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(10)
        child.stdout.close()


def fake_redis_store():
    """A RedisStore on fakeredis (its Lua scripts run by lupa); the test is skipped without them."""
    import pytest

    fakeredis = pytest.importorskip("fakeredis")
    pytest.importorskip("lupa")  # fakeredis runs Lua scripts with it
    from agenthub.stores.redis import RedisStore

    return RedisStore("redis://fake:6379/0", client=fakeredis.FakeRedis())


def made_store(kind, tmp_path):
    """A store of ``kind``: "memory", "sqlite" (a file in ``tmp_path``) or "fakeredis"."""
    from agenthub.stores import MemoryStore, open_store

    if kind == "memory":
        return MemoryStore()
    if kind == "sqlite":
        return open_store("sqlite:///" + str(tmp_path / "state.db"))
    return fake_redis_store()


# -- worker processes (module-level functions: multiprocessing spawn imports them by name) -------------

def _user(text):
    return [{"role": "user", "content_items": [{"type": "text", "text": text}]}]


def pace_worker(store, base_url, rpm, count, name, start_at, queue=None):
    """``count`` requests through a client whose limiter shares ``store``; starts at wall time ``start_at``.
    With ``queue``: puts (name, the seconds the limiter told it to wait in all, the seconds from start_at to its
    last answer, the wall times the limiter gave it: each reservation's time plus its wait)."""
    from agenthub import AutoLLMClient, RateLimiter

    limiter = RateLimiter(rpm=rpm, store=store, key="pace")
    waited = [0.0]
    given = []
    reserve = limiter.reserve

    def counted(*args, **kwargs):
        ticket, wait = reserve(*args, **kwargs)
        waited[0] += max(0.0, wait)
        given.append(time.time() + max(0.0, wait))
        return ticket, wait

    limiter.reserve = counted
    client = AutoLLMClient("deepseek-v4-flash", client_type="openai-chat", base_url=base_url, api_key="k",
                           limiter=limiter, max_retries=5)
    time.sleep(max(0.0, start_at - time.time()))
    for i in range(count):
        client.response(_user("{}-{}".format(name, i)))
    if queue is not None:
        queue.put((name, waited[0], time.time() - start_at, given))


def budget_worker(store, base_url, max_usd, name, queue, max_tokens=16):
    """Calls until the shared budget refuses; puts (name, calls answered, refused)."""
    from agenthub import AutoLLMClient, Budget, BudgetExceededError

    budget = Budget(max_usd, store=store, key="spend")
    client = AutoLLMClient("deepseek-v4-flash", client_type="openai-chat", base_url=base_url, api_key="k",
                           budget=budget)
    answered = 0
    for i in range(1000):
        try:
            client.response(_user("{}-{}".format(name, i)), {"max_tokens": max_tokens})
        except BudgetExceededError:
            queue.put((name, answered, True))
            return
        answered += 1
    queue.put((name, answered, False))


def hold_and_wait(store, ready_path, lease):
    """Hold a budget reservation, say so in ``ready_path``, then sleep until killed."""
    import agenthub.budget
    from agenthub import Budget

    agenthub.budget.LEASE_SECONDS = lease
    budget = Budget(1.0, store=store, key="killed")
    budget.reserve("deepseek-v4-flash", 1000, 1000)
    with open(ready_path, "w") as handle:
        handle.write(str(os.getpid()))
    time.sleep(120)


class DroppingProxy(object):
    """A TCP proxy on 127.0.0.1 to a Redis server that, once, forwards a command holding ``marker`` (bytes: a
    script's sha) to the server, reads the server's reply and closes the client's connection instead of passing
    the reply on: the command was done, its reply lost (a connection reset, a timeout); ``forward=False``: closes
    it without sending the command on (the server never saw it).  Threads: one accepting,
    one per connection; all ended by ``close``."""

    def __init__(self, port, marker, forward=True):
        import threading

        self.port, self.marker, self.dropped, self.forward = port, marker, 0, forward
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(16)
        self.lock = threading.Lock()
        self.sockets, self.threads = [], []
        self.threads.append(threading.Thread(target=self._accept, daemon=True))
        self.threads[0].start()

    @property
    def url(self):
        return "redis://127.0.0.1:{}/0".format(self.listener.getsockname()[1])

    def _accept(self):
        import threading

        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            thread = threading.Thread(target=self._serve, args=(client,), daemon=True)
            with self.lock:
                self.threads.append(thread)
            thread.start()

    def _serve(self, client):
        try:
            upstream = socket.create_connection(("127.0.0.1", self.port), timeout=10)
        except OSError:
            client.close()
            return
        with self.lock:
            self.sockets += [client, upstream]
        try:
            while True:
                data = client.recv(65536)
                if not data:
                    return
                with self.lock:
                    drop = self.marker in data and not self.dropped
                    self.dropped += drop
                if drop and not self.forward:
                    return  # (not sent: the server never saw it)
                upstream.sendall(data)
                reply = upstream.recv(65536)
                if drop:
                    return
                client.sendall(reply)
        except OSError:
            return
        finally:
            client.close()
            upstream.close()

    def close(self):
        try:
            self.listener.shutdown(socket.SHUT_RDWR)  # (wakes the accepting thread on Linux)
        except OSError:
            pass
        self.listener.close()
        with self.lock:
            for sock in self.sockets:
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
            threads = list(self.threads)
        for thread in threads:
            thread.join(10)
