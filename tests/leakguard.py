"""A suite-wide guard: no test leaves a thread, a child process or a file descriptor behind.

Loaded from ``tests/conftest.py``.  Per test, a snapshot is taken before setup and compared after teardown:

- threads: ``threading.enumerate()`` objects started during the test and still alive after teardown;
- child processes: this process's descendants (``/proc/<pid>/task/*/children``, then theirs), keyed by pid and
  start time (a reused pid is a new child); a child that exited but was never waited (a zombie) is a leak too;
- file descriptors: ``/proc/self/fd`` entries new after the test (fd number and what it points to).

What a test leaves is waited for, bounded (``WAIT``, 10 s in all, polled; ``AGENTHUB_LEAKS_WAIT`` sets another;
only when something is left: a clean test pays two snapshots, ~0.1 ms), since some things end a moment after
their owner is closed (a server's handler thread once its client's connection is closed, a child once it has
read its EOF).  Before anything is called leaked the collector runs (garbage awaiting it is not a leak).

Fixtures of broader scope than a function (class, module, package, session: a local server started by the
first test that uses it) are not blamed on that test: what appears during such a fixture's setup, or inside
``with leakguard.owned_by(request):`` in a fixture that starts things lazily, belongs to the fixture until it
is finalized, and so are the threads (and their connections) its servers start later for their clients and the
processes its processes start; what is still there after its finalizer is reported against the fixture (in the
teardown of the test that finalized it).

Allowed, narrowly (see ``_allowed_thread``, ``_mp_singletons``, ``_kept_stores``): what is process-wide and
bounded by design.  The zombies of orphans this process adopted as a child subreaper (tests/mcp_support.py makes
it one) are reaped, not reported: no Popen owns them, so no one else would.

Mode per kind, from the environment (``off``; ``report``: a summary at the end of the session listing each test
and what it left; ``strict``: the test errors in its teardown with a message naming what was left):

- ``AGENTHUB_LEAKS``: threads and child processes (default ``strict``);
- ``AGENTHUB_LEAKS_FDS``: file descriptors (default ``strict``).  What only garbage in a reference cycle holds
  is not a leak: a full collection runs before an fd is blamed.  A connection to a server a broader-scope
  fixture owns, which that fixture's own app (``agenthub serve``'s) pools for the next test, is the fixture's
  (checked when it is finalized: test servers close such an app's pools, ``sse_server.close_upstream``).  A test
  marked ``@pytest.mark.fds_kept(why)`` (Ray, whose runtime keeps connections and logs for the process) has its
  fds listed, not failed.

``AGENTHUB_LEAKS_LOG=path`` also appends each finding to that file, one line per test, and each wait (how long,
in which test, for what).  Without ``/proc`` (macOS, Windows) only threads are checked.
"""

import contextlib
import gc
import os
import subprocess
import sys
import threading
import time

import pytest

#: seconds a test's leftovers are given to go, in all, before they are called leaked (AGENTHUB_LEAKS_WAIT)
WAIT = float(os.environ.get("AGENTHUB_LEAKS_WAIT") or 10.0)
_PROC = os.path.isdir("/proc/self/task") and os.path.isdir("/proc/self/fd")
_MODES = ("off", "report", "strict")


def _mode(name, default):
    value = os.environ.get(name, "").strip().lower() or default
    if value not in _MODES:
        raise pytest.UsageError("{}={!r}: expected one of {}".format(name, value, ", ".join(_MODES)))
    return value


# -- allowlist: process-wide objects, bounded by design (each with why) -----------------------------------------

def _allowed_thread(thread):
    """A thread that is no test's leak: agenthub's process-wide lease renewers while they idle.  Each is one
    thread per process that lingers one renewal period (10 s, a third of a 30 s lease) after its last run or
    hold ends, so that the next one reuses it (by design: agenthub/agent/journal.py _Renewer, agenthub/stores/
    base.py _Leases).  Only while idle: a renewer that still renews a run or a hold a test left open is a leak."""
    name = thread.name
    if name == "agenthub-journal-lease":
        journal = sys.modules.get("agenthub.agent.journal")
        renewer = getattr(journal, "_RENEWER", None)
        return renewer is not None and renewer._thread is thread and not len(renewer._journals)
    if name == "agenthub-lease":
        base = sys.modules.get("agenthub.stores.base")
        leases = getattr(base, "_LEASES", None)
        return leases is not None and leases.thread is thread and not any(r._ids for r in list(leases.renewers))
    if name == "agenthub-mcp-deadlines":  # likewise the MCP HTTP deadline keeper: it ends 1 s (IDLE) after the
        http = sys.modules.get("agenthub.mcp.http")  # last step's deadline is cancelled or passed
        deadlines = getattr(http, "_DEADLINES", None)
        return deadlines is not None and deadlines._thread is thread and all(
            entry[2][0] is None for entry in list(deadlines._heap))
    return False


def _mp_singletons():
    """(pids, fds) of multiprocessing's process-wide helpers: the resource tracker (started by the first process
    pool or shared semaphore, it lives as long as this process to clean up after its children) and the fork
    server (likewise, for the "forkserver" start method).  Started on first use by whichever test that is."""
    pids, fds = set(), set()
    tracker = getattr(sys.modules.get("multiprocessing.resource_tracker"), "_resource_tracker", None)
    if tracker is not None:
        pids.add(getattr(tracker, "_pid", None))
        fds.add(getattr(tracker, "_fd", None))
    server = getattr(sys.modules.get("multiprocessing.forkserver"), "_forkserver", None)
    if server is not None:
        pids.add(getattr(server, "_forkserver_pid", None))
        fds.add(getattr(server, "_forkserver_alive_fd", None))
    pids.discard(None)
    fds.discard(None)
    return pids, fds


def _kept_stores():
    """(files, fd numbers) of the stores agenthub keeps open by design: the journal's, kept by URL for the next
    run of this process (agenthub/agent/journal.py ``_open``: a bounded cache of ``_STORES_KEPT`` stores, the
    oldest closed first), and those of the idle renewers the store lease thread keeps until it ends (agenthub/
    stores/base.py ``_Leases``: one period after the last hold).  An SQLite store's file (and its -wal, -shm,
    -journal), a Redis store's pooled connections."""
    stores = []
    kept = getattr(sys.modules.get("agenthub.agent.journal"), "_STORES", None)
    if kept:
        stores.extend(store for store, _ in list(kept.values()))
    leases = getattr(sys.modules.get("agenthub.stores.base"), "_LEASES", None)
    if leases is not None and leases.renewers:
        stores.extend(getattr(r, "store", None) for r in list(leases.renewers) if not r._ids)
    files, fds = set(), set()
    for store in stores:
        path = getattr(store, "path", None)
        if isinstance(path, str):
            files.update((path, path + "-wal", path + "-shm", path + "-journal"))
        pool = getattr(getattr(store, "_client", None), "connection_pool", None)
        connections = [c for _, c in list(getattr(store, "_own", ()))]
        connections += list(getattr(pool, "_available_connections", ()))
        connections += list(getattr(pool, "_in_use_connections", ()))
        for connection in connections:
            sock = getattr(connection, "_sock", None)
            try:
                fds.add(sock.fileno())
            except (AttributeError, OSError):
                continue
    return files, fds


# -- snapshots --------------------------------------------------------------------------------------------------

def _threads():
    return {t for t in threading.enumerate() if t.is_alive() and not _allowed_thread(t)}


def _stat(pid):
    """(state, start time) of ``pid`` from /proc/<pid>/stat, or None once it is gone."""
    try:
        with open("/proc/{}/stat".format(pid), "rb") as handle:
            fields = handle.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return fields[0].decode(), fields[19].decode()  # fields[0] is field 3 (state), [19] is 22 (starttime)


def _children_of(pid):
    found = []
    try:
        tasks = os.listdir("/proc/{}/task".format(pid))
    except OSError:
        return found
    for task in tasks:
        try:
            with open("/proc/{}/task/{}/children".format(pid, task), "rb") as handle:
                found.extend(int(p) for p in handle.read().split())
        except (OSError, ValueError):
            continue
    return found


def _children():
    """{(pid, start time): (state, the parent's key or None for a child of this process)} of this process's
    descendants (children, theirs, ...)."""
    if not _PROC:
        return {}
    out = {}
    allowed = _mp_singletons()[0]
    wanted = [(pid, None) for pid in _children_of(os.getpid()) if pid not in allowed]
    seen = set()
    while wanted:
        pid, parent = wanted.pop()
        if pid in seen:
            continue
        seen.add(pid)
        stat = _stat(pid)
        if stat is None:
            continue
        key = (pid, stat[1])
        out[key] = (stat[0], parent)
        if stat[0] != "Z":
            wanted.extend((child, key) for child in _children_of(pid))
    return out


def _descends(key, ancestors, children):
    """Whether the process ``key`` is in ``ancestors`` or descends from one (``children``: a _children map)."""
    seen = 0
    while key is not None and seen < 64:
        if key in ancestors:
            return True
        key = children.get(key, (None, None))[1]
        seen += 1
    return False


def _fds():
    """{(fd, target)} of this process's open descriptors."""
    if not _PROC:
        return set()
    out = set()
    allowed = _mp_singletons()[1]
    for name in os.listdir("/proc/self/fd"):
        if int(name) in allowed:
            continue
        try:
            target = os.readlink("/proc/self/fd/" + name)
        except OSError:  # the listing's own descriptor, or one closed meanwhile
            continue
        out.add((int(name), target))
    if out:
        files, numbers = _kept_stores()
        if files or numbers:
            out = {(fd, target) for fd, target in out if target not in files and fd not in numbers}
    return out


def _popen_types():
    """The classes whose objects own a child process's exit status (subprocess's and multiprocessing's Popen)."""
    types = [subprocess.Popen]
    for name in ("popen_fork", "popen_spawn_posix", "popen_forkserver"):
        module = sys.modules.get("multiprocessing." + name)
        if module is not None and hasattr(module, "Popen"):
            types.append(module.Popen)
    return tuple(types)


class Snapshot(object):
    __slots__ = ("threads", "children", "fds")

    def __init__(self, fds=True):
        self.threads = _threads()
        self.children = _children()
        self.fds = _fds() if fds else set()

    def __sub__(self, before):
        """What is here and was not in ``before`` (a Snapshot of the same shape)."""
        new = Snapshot.__new__(Snapshot)
        new.threads = self.threads - before.threads
        new.children = {k: v for k, v in self.children.items() if k not in before.children}
        new.fds = self.fds - before.fds
        return new


def _owner(thread):
    """The object whose method ``thread`` runs (a socketserver server's serve_forever or process_request_thread),
    or None."""
    return getattr(getattr(thread, "_target", None), "__self__", None)


def _connection_fd(thread):
    """The fd of the connection a socketserver handler thread serves (its first argument), or None."""
    args = getattr(thread, "_args", None)
    try:
        return args[0].fileno()
    except (TypeError, IndexError, AttributeError, OSError):
        return None


def _describe_thread(thread):
    target = getattr(thread, "_target", None)
    where = ""
    if target is not None:
        where = " running {}.{}".format(getattr(target, "__module__", "?"), getattr(target, "__qualname__", "?"))
    frame = sys._current_frames().get(thread.ident)
    stack = []
    while frame is not None and len(stack) < 3:  # where it waits: its innermost frames
        stack.append("{}:{} {}".format(os.path.basename(frame.f_code.co_filename), frame.f_lineno,
                                       frame.f_code.co_name))
        frame = frame.f_back
    if stack:
        where += ", waiting in " + " < ".join(stack)
    return "thread {!r}{}{}".format(thread.name, " (daemon)" if thread.daemon else "", where)


def _tcp_sockets():
    """{socket inode: (local port, remote port, listening)} of the TCP sockets the host has (/proc/net/tcp, tcp6)."""
    out = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as handle:
                rows = handle.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            if len(fields) > 9:
                local, remote = [int(end.rsplit(":", 1)[1], 16) for end in fields[1:3]]
                out[fields[9]] = (local, remote, fields[3] == "0A")
    return out


def _inode(target):
    return target[8:-1] if target.startswith("socket:[") else None


def _describe_fd(fd, target):
    """``fd -> target``, a TCP socket's ends added (from /proc/net/tcp, tcp6)."""
    text = "fd {} -> {}".format(fd, target)
    found = _tcp_sockets().get(_inode(target)) if target.startswith("socket:[") else None
    if found is not None:
        text += " (tcp port {} to port {})".format(found[0], found[1])
    return text


def _clients_of(owned_fds, fds):
    """The fds among ``fds`` that are connections to a server listening on one of ``owned_fds`` (a fixture's):
    what the fixture's own app holds to its upstream, opened lazily by a test and pooled for the next one.  Still
    checked once the fixture is finalized (its servers closed, its app let go)."""
    listening = [_inode(target) for _, target in owned_fds if target.startswith("socket:[")]
    connecting = [f for f in fds if f[1].startswith("socket:[")]
    if not listening or not connecting:
        return set()
    table = _tcp_sockets()
    ports = {table[inode][0] for inode in listening if inode in table and table[inode][2]}
    return {f for f in connecting if f[1][8:-1] in table and not table[f[1][8:-1]][2]
            and table[f[1][8:-1]][1] in ports}


def _describe_child(key, state):
    pid = key[0]
    try:
        with open("/proc/{}/cmdline".format(pid), "rb") as handle:
            cmd = handle.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()
    except OSError:
        cmd = ""
    if state == "Z":
        return "zombie child {} (exited, never waited)".format(pid)
    return "child process {} {}".format(pid, cmd[:160] or "?")


# -- the plugin -------------------------------------------------------------------------------------------------

class LeakGuard(object):
    def __init__(self, mode, fd_mode):
        self.mode = mode          # threads and children
        self.fd_mode = fd_mode
        self.before = None
        self.fixtures = {}        # id(fixturedef) -> (name, scope, Snapshot of what its setup started)
        self.finalized = []       # [(name, scope, Snapshot)] finalized during the current teardown
        self.found = []           # [(nodeid, [descriptions])]
        self.log = os.environ.get("AGENTHUB_LEAKS_LOG")
        self.slow = 0             # tests where something had to be waited for
        self.reaped = 0           # adopted orphans reaped (see _reap_adopted)
        self.spent = 0.0          # seconds in the checks, all told
        self.waited = 0.0         # of which waiting for leftovers to go (tests in ``slow``)
        self.current = None       # the test being checked

    def _snap(self):
        return Snapshot(fds=self.fd_mode != "off")

    # fixtures of broader scope: what their setup starts is theirs until they are finalized
    @pytest.hookimpl(hookwrapper=True)
    def pytest_fixture_setup(self, fixturedef, request):
        if fixturedef.scope == "function":
            yield
            return
        before = self._snap()
        yield
        self.fixtures[id(fixturedef)] = (fixturedef.argname, fixturedef.scope, self._snap() - before)

    def _adopt(self, fixturedef, new):
        entry = self.fixtures.get(id(fixturedef))
        if entry is None:
            self.fixtures[id(fixturedef)] = (fixturedef.argname, fixturedef.scope, new)
            return
        owned = entry[2]
        owned.threads |= new.threads
        owned.children.update(new.children)
        owned.fds |= new.fds

    @pytest.hookimpl(hookwrapper=True)
    def pytest_fixture_post_finalizer(self, fixturedef, request):
        yield
        entry = self.fixtures.pop(id(fixturedef), None)
        if entry is not None:
            self.finalized.append(entry)

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_runtest_setup(self, item):
        start = time.perf_counter()
        self.before = self._snap()
        self.finalized = []
        self.spent += time.perf_counter() - start
        yield

    def pytest_runtest_teardown(self, item, nextitem):
        result = yield
        self._check(item)
        return result

    def _check(self, item):
        before, self.before = self.before, None
        if before is None:
            return
        start = time.perf_counter()
        self.current = item.nodeid
        found = self._leftovers(before)
        self.spent += time.perf_counter() - start
        self.finalized = []
        if not found:
            return
        self.found.append((item.nodeid, [text for _, text in found]))
        if self.log:
            with open(self.log, "a") as handle:
                handle.write("{}\t{}\n".format(item.nodeid, " | ".join(text for _, text in found)))
        kept = item.get_closest_marker("fds_kept")  # (a runtime that keeps its own fds for the process: Ray)
        strict = [text for kind, text in found if (self.fd_mode if kind == "fd" else self.mode) == "strict"
                  and not (kind == "fd" and kept is not None)]
        if strict:
            pytest.fail("leakguard: left behind after teardown:\n  " + "\n  ".join(strict), pytrace=False)

    def _pending(self, before):
        """[(kind, object, text)] new since ``before`` and not owned by a live broader-scope fixture, plus what
        a fixture finalized during this teardown left."""
        now = self._snap()
        new = now - before
        for _, _, owned in self.fixtures.values():
            new.threads -= owned.threads
            servers = {id(_owner(t)) for t in owned.threads} - {id(None)}
            if servers and new.threads:  # a thread the fixture's server started for a connection is the fixture's
                served = {t for t in new.threads if id(_owner(t)) in servers}
                owned.threads |= served
                new.threads -= served
            if servers and new.fds:  # and so is that connection
                numbers = {_connection_fd(t) for t in owned.threads if t.is_alive()}
                new.fds = {f for f in new.fds if f[0] not in numbers}
            new.fds -= owned.fds
            if new.fds and owned.fds:  # a connection to the fixture's server that its own app keeps
                clients = _clients_of(owned.fds, new.fds)
                owned.fds |= clients
                new.fds -= clients
            if owned.children:  # the fixture's processes, and what they started since (a browser's renderers)
                for key in [k for k in new.children if _descends(k, owned.children, now.children)]:
                    del new.children[key]
        out = []
        if self.mode != "off":
            out.extend(("thread", t, _describe_thread(t)) for t in new.threads)
            out.extend(("child", k, _describe_child(k, s[0])) for k, s in new.children.items())
        if self.fd_mode != "off":
            out.extend(("fd", f, _describe_fd(*f)) for f in sorted(new.fds))
        for name, scope, owned in self.finalized:
            label = " (left by {}-scoped fixture {!r})".format(scope, name)
            if self.mode != "off":
                out.extend(("thread", t, _describe_thread(t) + label) for t in owned.threads & now.threads)
                out.extend(("child", k, _describe_child(k, now.children[k][0]) + label)
                           for k in owned.children if k in now.children)
            if self.fd_mode != "off":
                out.extend(("fd", f, _describe_fd(*f) + label) for f in sorted(owned.fds & now.fds))
        return out

    def _leftovers(self, before):
        pending = self._pending(before)
        if not pending:
            return []
        self.slow += 1
        start = time.perf_counter()
        try:
            return self._wait(before)
        finally:
            took = time.perf_counter() - start
            self.waited += took
            if self.log:
                with open(self.log, "a") as handle:
                    handle.write("(waited {:.3f} s in {} for: {})\n".format(took, self.current, " | ".join(
                        t for _, _, t in pending)))

    def _wait(self, before):
        gc.collect(1)  # (the young generations first: cheap, and most of what holds a connection is young)
        deadline = time.monotonic() + WAIT
        delay = 0.01
        while True:
            pending = self._pending(before)
            if self._reap_adopted(pending):
                pending = self._pending(before)
            # fds are not waited for alone: what is left of them once the threads and children are gone stays
            if not any(kind != "fd" for kind, _, _ in pending) or time.monotonic() >= deadline:
                break
            time.sleep(delay)
            delay = min(delay * 2, 0.2)
            gc.collect()
        if any(kind == "fd" for kind, _, _ in pending):
            # an fd held only by garbage in a reference cycle (a test's spy closing over the response it wraps)
            # is closed by a full collection: no leak of the test's, so collected before it is blamed
            gc.collect()
            pending = self._pending(before)
        return [(kind, text) for kind, _, text in pending]

    def _reap_adopted(self, pending):
        """Reap the zombies among ``pending`` that no Popen object owns: orphans this process adopted as a
        child subreaper (tests/mcp_support.py makes it one, so that a server's leftover children stay in view),
        e.g. a browser's helper processes that outlive the browser.  No one else waits for them; a zombie a
        Popen owns is its owner's to wait for, and stays a leak.  The number reaped (0: nothing to do)."""
        zombies = [key[0] for kind, key, _ in pending if kind == "child" and (_stat(key[0]) or ("?",))[0] == "Z"]
        if not zombies:
            return 0
        owned = set()
        types = _popen_types()
        for obj in gc.get_objects():
            # (one not waited yet: a waited one's pid may be another process's by now)
            if isinstance(obj, types) and getattr(obj, "returncode", 0) is None:
                owned.add(getattr(obj, "pid", None))
        reaped = 0
        for pid in zombies:
            if pid in owned:
                continue
            try:
                if os.waitpid(pid, os.WNOHANG)[0] == pid:
                    reaped += 1
            except OSError:  # not this process's child (a child's own zombie), or reaped meanwhile
                pass
        self.reaped += reaped
        return reaped

    def pytest_terminal_summary(self, terminalreporter):
        write = terminalreporter.write_line
        write("leakguard: {:.2f} s in its checks, {:.2f} s of it in {} test{} that had something to wait for "
              "after teardown".format(self.spent, self.waited, self.slow, "" if self.slow == 1 else "s"))
        if self.reaped:
            write("leakguard: reaped {} adopted orphan process{}".format(self.reaped, "es" if self.reaped > 1 else ""))
        if not self.found:
            if self.mode != "off" or self.fd_mode != "off":
                write("leakguard: no test left a thread{} behind".format(
                    ", child process or fd" if self.fd_mode != "off" else " or child process"))
            return
        terminalreporter.section("leakguard: {} tests left something behind".format(len(self.found)))
        for nodeid, texts in self.found:
            write(nodeid)
            for text in texts:
                write("    " + text)


try:  # a new-style wrapper (pluggy >= 1.2) may raise after its yield; an old-style one then gets a warning
    LeakGuard.pytest_runtest_teardown = pytest.hookimpl(wrapper=True, tryfirst=True)(LeakGuard.pytest_runtest_teardown)
except TypeError:  # pragma: no cover - pytest 7 with pluggy < 1.2
    LeakGuard.pytest_runtest_teardown = pytest.hookimpl(hookwrapper=True, tryfirst=True)(
        LeakGuard.pytest_runtest_teardown)


_GUARD = []  # the registered LeakGuard, once configured


@contextlib.contextmanager
def owned_by(request):
    """What starts inside this block belongs to the broader-scope fixture of ``request`` (its ``request``),
    as what its setup started does: for a fixture that starts things lazily, a factory that starts a server
    the first time a test asks for it.  Not blamed on that test; still checked once the fixture is finalized."""
    guard = _GUARD[0] if _GUARD else None
    if guard is None:
        yield
        return
    before = guard._snap()
    try:
        yield
    finally:
        guard._adopt(request._fixturedef, guard._snap() - before)


def pytest_configure(config):
    config.addinivalue_line("markers", "fds_kept(why): the fds this test leaves are a runtime's, kept for the "
                                       "process by design (Ray's connections and logs): listed, not an error")
    mode = _mode("AGENTHUB_LEAKS", "strict")
    fd_mode = _mode("AGENTHUB_LEAKS_FDS", "strict")
    if mode == "off" and fd_mode == "off":
        return
    guard = LeakGuard(mode, fd_mode)
    config.pluginmanager.register(guard, "agenthub-leakguard")
    _GUARD[:] = [guard]
