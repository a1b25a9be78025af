"""Helpers of the MCP tests: the fake servers as subprocesses, and what a test may leave behind."""

import gc
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
FAKE_HTTP = os.path.join(HERE, "mcp_fake_http.py")
FAKE_STDIO = os.path.join(HERE, "mcp_fake_stdio.py")
OFFICIAL = os.path.join(HERE, "mcp_official_server.py")


def stdio_command(era, fault=""):
    return [sys.executable, FAKE_STDIO, era] + ([fault] if fault else [])


class Subprocess(object):
    """A server script run as a subprocess that writes its port to a file; ``url``; ``stop()``."""

    def __init__(self, argv, python=None, wait=30.0):
        self.folder = tempfile.mkdtemp(prefix="agenthub-mcp-")
        port_file = os.path.join(self.folder, "port")
        self.log = open(os.path.join(self.folder, "log"), "wb")
        self.process = subprocess.Popen([python or sys.executable] + argv + [port_file], stdout=self.log,
                                        stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + wait
        while not os.path.exists(port_file):
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                with open(os.path.join(self.folder, "log"), "rb") as handle:
                    raise RuntimeError("server did not start: " + handle.read()[-2000:].decode("utf-8", "replace"))
            time.sleep(0.02)
        with open(port_file) as handle:
            self.port = int(handle.read())
        while True:  # the port is chosen before the server listens on it
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError("server did not listen on its port")
                time.sleep(0.05)
        self.base = "http://127.0.0.1:{}".format(self.port)
        self.url = self.base + "/mcp"

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()


def _subreaper():
    """Make this process the reaper of its orphaned descendants (Linux PR_SET_CHILD_SUBREAPER): a process a
    server spawned that outlives the server then stays this process's descendant, and ``children`` sees it."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)
    except (OSError, AttributeError):  # pragma: no cover - no prctl: direct children and their own are still seen
        pass


_subreaper()


def children():
    """The pids of this process's live descendants: children, grandchildren (a server's own children),
    and orphans re-parented here (``_subreaper``); zombies run nothing and are not counted (Linux /proc)."""
    parents = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/{}/stat".format(name)) as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z":
            parents[int(name)] = int(fields[1])
    found = set()
    wanted = {os.getpid()}
    while wanted:
        wanted = {pid for pid, parent in parents.items() if parent in wanted and pid not in found}
        found |= wanted
    return found


def fds():
    return len(os.listdir("/proc/self/fd"))


def snapshot():
    """The live threads, the number of open fds and the children now, after a collection (garbage
    awaiting the collector is not a leak)."""
    gc.collect()
    return frozenset(threading.enumerate()), fds(), frozenset(children())


def _growth(before, now):
    threads, count, kids = before
    found = ["thread {}".format(t.name) for t in now[0] - threads]
    if now[1] > count:
        found.append("{} more fds".format(now[1] - count))
    found.extend("child {}".format(pid) for pid in now[2] - kids)
    return found


def leaked(before, wait=5.0):
    """What is there now that ``before`` did not see (threads started and still alive, more open fds,
    new children), after waiting (bounded) for it to go: [] when nothing was left behind.  Only growth
    counts: a thread or an fd of an earlier test's that ends meanwhile is not this test's."""
    deadline = time.monotonic() + wait
    while True:
        found = _growth(before, snapshot())
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


def lazy_servers(request, script, default=None):
    """A module fixture's body: ``get(mode)`` starts ``script mode`` (a fake or hostile HTTP server) the first time
    a test asks for that mode (``default`` when it names none), as the fixture's own (``leakguard.owned_by``), and the fixture stops them all at
    its end.  ``yield from lazy_servers(request, FAKE_HTTP)``."""
    import leakguard

    started = {}

    def get(mode=default):
        if mode not in started:
            with leakguard.owned_by(request):  # the module's server, whichever test asks for it first
                started[mode] = Subprocess([script, mode])
        return started[mode]

    yield get
    for server in started.values():
        server.stop()


def fresh_eras():
    """An autouse fixture's body: what the MCP client learned of servers' eras forgotten before and after."""
    from agenthub import mcp

    mcp.forget_eras()
    yield
    mcp.forget_eras()
