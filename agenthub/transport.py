"""HTTP over ``requests``: the only module that imports it.

``open_stream`` sends one encoded request (the bytes and headers its protocol
gave: this module knows no wire protocol and no vendor) and yields the body's bytes
as they arrive, or hands back the decoded JSON document when the answer is one.
A non-2xx answer becomes the error its protocol's ``error_from_body`` hook reads
from its status, headers and body (``agenthub.answers``), and every
``requests``/``urllib3``/socket exception a TransportError with the cause chained.
The response is closed in a ``finally``: leaving the loop early frees the connection
at once.

Timeouts follow requests: ``(connect, read)`` (the client's ``Timeout``, clipped to
its deadline) where *read* is the longest silence between two received bytes (not a deadline for the whole body): any byte,
an SSE comment or a ping included, restarts it.  ``interrupt(response)`` unblocks a
thread that is reading ``response`` from another thread (it shuts the socket down:
``close()`` alone does not wake a blocked ``recv``), which is how a stream is
aborted and how a total deadline is enforced; ``Watch`` is the switch that does it.

Fork safety: in a forked child (``os.fork``, multiprocessing's ``fork`` start method) the
sessions made by ``new_session`` get new, empty pools at once (``os.register_at_fork``), so
no connection is ever shared with the parent; a session of the caller's is given new pools by
the client the first time it is used in the child (``forget_connections``).

Redirects are not followed: a provider API never redirects a POST, and following
one would carry the key's headers to wherever the redirect points.
"""

import base64
import contextlib
import errno
import itertools
import json
import logging
import os
import re
import socket
import sys
import threading
import time
import weakref
import zlib
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Tuple
from urllib.parse import urlsplit

import requests
import requests.adapters
import requests.auth
import requests.utils
from urllib3.connection import DummyConnection, HTTPConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import ConnectTimeoutError, NewConnectionError
from urllib3.util.connection import allowed_gai_family

try:
    from urllib3.exceptions import NameResolutionError as _NameResolutionError
except ImportError:  # urllib3 1.x: a name that does not resolve is a NewConnectionError
    _NameResolutionError = None  # type: ignore[assignment,misc]

from ._redact import redact_url, request_url_secrets, scrub_free_text, secret_values, shown_url, url_secrets
from ._redact import body_secrets, query_values_hidden
from .answers import body_text, error_from_body as _default_error_from_body, is_html, page_text
from .errors import AgentHubError, StreamProtocolError, TransportError, preview
from .types import HttpRequest
from ._jsondepth import loads as _json_loads

__all__ = ["open_stream", "open_raw", "RawBody", "new_session", "interrupt", "BodyStream", "forget_connections", "Watch",
           "watch_pools", "watching", "current_watch"]

#: connections kept per host by the session agenthub makes (a thread pool of this size reuses them)
POOL_MAXSIZE = 32
#: at most this much of an error body is read
_MAX_ERROR_BODY = 64 * 1024
_READ_SIZE = 64 * 1024

#: requests' (connect, read) seconds for one attempt (None: no limit)
Limits = Tuple[Optional[float], Optional[float]]


# -- urllib3's own log lines ----------------------------------------------------------------------
#
# urllib3 logs each request's path with its query at DEBUG ('"POST /v1/chat/completions?key=... HTTP/1.1" 200'),
# and a retry's or a redirect's URL: a gateway's ?key= or ?code= in a base URL would reach any log that takes
# DEBUG.  Its records are shown with every query value as ***, as agenthub shows a URL (_redact.shown_url).

class _QueryValuesHidden(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        try:
            text = record.getMessage()
        except Exception:  # noqa: BLE001 - a record that cannot be formatted is left to the handler
            return True
        shown = query_values_hidden(text)
        if shown is not text:
            record.msg, record.args = shown, ()
        return True


_HIDE_QUERY = _QueryValuesHidden()
for _name in ("urllib3.connectionpool", "urllib3.util.retry"):
    logging.getLogger(_name).addFilter(_HIDE_QUERY)


# -- fork safety ----------------------------------------------------------------------------------
#
# A forked child inherits its parent's pooled sockets: two processes writing requests into one
# connection and reading each other's answers.  Every session agenthub made is therefore given
# fresh, empty pools in the child (os.register_at_fork); the inherited sockets are left alone
# (not shut down: they are the parent's) and only the child's copies of their descriptors close.

_SESSIONS = weakref.WeakSet()  # type: weakref.WeakSet
_WATCHES = weakref.WeakSet()  # type: weakref.WeakSet  # every live Watch: a stream of the parent's in a child


def forget_connections(session: Any) -> None:
    """Give ``session``'s HTTP adapters new, empty pools without touching the pooled connections
    (for a forked child: they are its parent's).  Adapters that are not requests' HTTPAdapter
    (a cassette's) are left as they are."""
    for adapter in list(getattr(session, "adapters", {}).values()):
        if isinstance(adapter, requests.adapters.HTTPAdapter):
            adapter.proxy_manager = {}
            adapter.init_poolmanager(adapter._pool_connections, adapter._pool_maxsize, block=adapter._pool_block)


def _after_fork_in_child() -> None:
    global _LOOKUPS_LOCK, _LOOKUPS, _SLOT_WAITS
    _LOOKUPS_LOCK, _LOOKUPS, _SLOT_WAITS = threading.Lock(), {}, []  # (the lookups under way: the parent's threads')
    for watch in list(_WATCHES):
        watch._forked()
    for session in list(_SESSIONS):
        try:
            forget_connections(session)
        except Exception:  # pragma: no cover - never let a fork fail over a pool
            pass


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def new_session() -> requests.Session:
    """A requests.Session with TLS verification on (requests' default) and a pool sized for thread pools.

    Its connections are watched from the moment they leave the pool, so an abort also
    interrupts a request still waiting for its response headers (with a session of your
    own, an abort in that phase takes effect when the headers arrive or a timeout fires).
    """
    session = requests.Session()
    adapter = _WatchedAdapter(pool_connections=10, pool_maxsize=POOL_MAXSIZE)
    session.mount("https://", adapter)
    session.mount("http://", adapter)
    _SESSIONS.add(session)
    return session


# -- watching connections (for interrupt) --------------------------------------------------------
#
# A "watch" is any object with attach(obj) and detach(obj=None): attach is called with what a
# reading thread is about to block on (a urllib3 connection as soon as it leaves the pool, then
# the response once its headers arrived); detach(obj) once obj went back to the pool or was
# closed (detach(None): whatever is attached).  The watch may interrupt() what is attached.

_local = threading.local()


class _WatchedPoolMixin(object):
    def _get_conn(self, timeout=None):  # type: ignore[no-untyped-def]
        conn = super(_WatchedPoolMixin, self)._get_conn(timeout)  # type: ignore[misc]
        watch = getattr(_local, "watch", None)
        if watch is not None and conn is not None:
            conn._agenthub_watch = watch
            watch.attach(conn)
        return conn

    def _put_conn(self, conn):  # type: ignore[no-untyped-def]
        watch = conn.__dict__.pop("_agenthub_watch", None) if conn is not None else None
        if watch is not None:
            watch.detach(conn)  # back in the pool: nobody may shut it down any more
        return super(_WatchedPoolMixin, self)._put_conn(conn)  # type: ignore[misc]


# -- connecting within bounds: a host name looked up, a socket connected ---------------------------
#
# urllib3 resolves the host name with a blocking getaddrinfo (no timeout at all: a resolver that does not
# answer holds the call, whatever its connect timeout, deadline or abort) and connects a socket nobody else
# can reach before it is connected (an abort waited for the whole connect timeout).  A connection of a
# watched pool does both itself: the name is looked up in a thread of its own, waited for within the
# connect timeout, and the socket being connected is where ``interrupt`` finds it (a shutdown ends the
# connect at once).  One lookup runs per name at a time: callers of the same name wait for the same one; and
# at most MAX_LOOKUPS lookup threads run at once (a resolver that never answers keeps its threads: a lookup of
# yet another name waits for one to end, within its connect timeout, rather than start one more).
# Once connected, a copy of the socket (``dup``) stays there until the connection's ``connect`` is done: a TLS
# handshake runs on a socket urllib3 does not hold yet (the plain socket it holds is detached by then), so a stop
# during the handshake shuts the copy down (the same connection), and one just after the TCP connect sends nothing.


class _Connecting(object):
    """What a watched connection does before it has its socket: ``stop`` (from any thread) ends its name's
    lookup wait, or its connect (the socket being connected is shut down), or its TLS handshake (the connected
    socket's copy is shut down); True once done."""

    __slots__ = ("wake", "sock", "stopped", "owned", "finished", "_lock")

    def __init__(self) -> None:
        self.wake = threading.Event()  # set by stop, and by the end of the lookup waited for
        self.sock = None  # type: Optional[socket.socket]
        self.stopped = False
        self.owned = False  # ``sock`` is the connected socket's copy, closed by ``done``
        self.finished = False  # the connection's connect is over: its own socket is where a stop shuts it down
        self._lock = threading.RLock()  # (reentrant: an abort may come from a signal handler on the connecting thread)

    def stop(self) -> bool:
        with self._lock:
            self.stopped = True
            self.wake.set()
            if self.finished:
                return False  # (the watch tries the connection's own socket)
            if self.sock is None:
                return True  # (looking up: the wait ends; a socket is never connected once stopped)
            try:
                socket.socket.shutdown(self.sock, socket.SHUT_RDWR)
            except OSError:  # not connecting yet (the connect is about to start): the watch tries again
                return False
            return True

    def connecting(self, sock: Optional[socket.socket]) -> None:
        """``sock`` is about to connect (None: the socket is done with, connected or closed)."""
        with self._lock:
            self.sock = sock
            if sock is not None and self.stopped:  # (checked after: a stop in between saw no socket)
                self.sock = None
                raise _stopped_connect()

    def connected(self, sock: socket.socket) -> None:
        """``sock`` is connected: a stop from now on shuts its copy down (nothing is sent once stopped)."""
        with self._lock:
            if self.stopped:
                self.sock = None
                raise _stopped_connect()
            try:
                self.sock, self.owned = sock.dup(), True
            except OSError:  # (no descriptor to spare: the socket itself, which serves until TLS detaches it)
                self.sock = sock

    def done(self) -> None:
        """The connection's ``connect`` is over (connected, TLS included, or failed): the copy is closed."""
        with self._lock:
            self.finished = True
            sock, owned, self.sock, self.owned = self.sock, self.owned, None, False
        if owned:
            sock.close()  # type: ignore[union-attr]


def _stopped_connect() -> OSError:
    return OSError(errno.ECANCELED, "the call was stopped while connecting")


class _Lookup(object):
    __slots__ = ("result", "error", "done", "wakes")

    def __init__(self) -> None:
        self.result = None  # type: Any
        self.error = None  # type: Optional[BaseException]
        self.done = False
        self.wakes = []  # type: List[threading.Event]


_LOOKUPS = {}  # type: Dict[Tuple[Any, ...], _Lookup]  # (host, port, family) -> the lookup under way
_LOOKUPS_LOCK = threading.Lock()
#: lookup threads that may run at once (a resolver that never answers keeps each of its threads for ever: past
#: these, a lookup of another name waits for one to end, within its caller's connect timeout and deadline)
MAX_LOOKUPS = 8
_SLOT_WAITS = []  # type: List[threading.Event]  # the callers waiting for a lookup thread to end


def _look_up(key: Tuple[Any, ...], lookup: _Lookup) -> None:
    try:
        lookup.result = socket.getaddrinfo(key[0], key[1], key[2], socket.SOCK_STREAM)
    except BaseException as exc:  # handed to every caller waiting for it
        lookup.error = exc
    finally:
        _finished(key, lookup)


def _finished(key: Tuple[Any, ...], lookup: _Lookup) -> None:
    """The lookup is over: its callers are woken, and so are those waiting for a lookup thread to end."""
    with _LOOKUPS_LOCK:
        lookup.done = True
        if _LOOKUPS.get(key) is lookup:
            del _LOOKUPS[key]
        wakes, lookup.wakes = lookup.wakes, []
        wakes.extend(_SLOT_WAITS)  # (a thread is free: who waits for one tries again)
    for wake in wakes:
        wake.set()


def _is_address(host: str) -> bool:
    for family in (socket.AF_INET, socket.AF_INET6):
        try:
            socket.inet_pton(family, host)
            return True
        except (OSError, ValueError):
            pass
    return False


def _resolve(host: str, port: int, family: int, seconds: Optional[float], connecting: _Connecting) -> Any:
    """getaddrinfo for ``host``, waited for at most ``seconds`` (None: no limit) and until ``connecting`` is
    stopped.  An address needs no lookup."""
    if _is_address(host):
        return socket.getaddrinfo(host, port, family, socket.SOCK_STREAM)
    key = (host, port, family)
    ends = None if seconds is None else time.monotonic() + min(max(seconds, 0.0), threading.TIMEOUT_MAX)
    lookup = _joined(key, connecting, ends)
    while True:  # (a wake meant for the wait for a thread may come late: only the lookup's end, a stop or time count)
        with _LOOKUPS_LOCK:
            done = lookup.done
        if done or connecting.stopped or (ends is not None and time.monotonic() >= ends):
            break
        connecting.wake.wait(_left(ends))
        connecting.wake.clear()
    with _LOOKUPS_LOCK:
        done = lookup.done
        if not done:
            lookup.wakes.remove(connecting.wake)
    if connecting.stopped:
        raise _stopped_connect()
    if not done:
        raise socket.timeout("no address for the host name within {}s".format(seconds))
    error = lookup.error
    if error is not None:  # (a copy: the one exception is shared by every caller waiting)
        if isinstance(error, OSError):
            raise type(error)(*error.args)
        raise OSError("the host name lookup failed ({})".format(type(error).__name__))
    return lookup.result


def _left(ends: Optional[float]) -> Optional[float]:
    return None if ends is None else max(ends - time.monotonic(), 0.0)


def _joined(key: Tuple[Any, ...], connecting: _Connecting, ends: Optional[float]) -> _Lookup:
    """The lookup of ``key`` under way, or a new one in a thread of its own once fewer than MAX_LOOKUPS run; its
    end wakes ``connecting.wake``.  Waiting for a thread ends at ``ends`` (a socket.timeout) or at a stop."""
    while True:
        connecting.wake.clear()  # (before the look: a stop or a thread's end after it sets it again)
        with _LOOKUPS_LOCK:
            lookup = _LOOKUPS.get(key)
            start = lookup is None and len(_LOOKUPS) < MAX_LOOKUPS
            if start:
                lookup = _LOOKUPS[key] = _Lookup()
            if lookup is not None:
                lookup.wakes.append(connecting.wake)
                if connecting.wake in _SLOT_WAITS:
                    _SLOT_WAITS.remove(connecting.wake)
                break
            if connecting.stopped or (ends is not None and time.monotonic() >= ends):
                if connecting.wake in _SLOT_WAITS:
                    _SLOT_WAITS.remove(connecting.wake)
                break
            if connecting.wake not in _SLOT_WAITS:
                _SLOT_WAITS.append(connecting.wake)
        connecting.wake.wait(_left(ends))
    if lookup is None:
        if connecting.stopped:
            raise _stopped_connect()
        raise socket.timeout("no host name lookup could start within the connect timeout ({} lookups of other "
                             "names are under way and have not answered)".format(MAX_LOOKUPS))
    if start:
        try:
            threading.Thread(target=_look_up, args=(key, lookup), name="agenthub-resolve", daemon=True).start()
        except RuntimeError as exc:  # ("can't start new thread": the callers of this name are told, in words)
            lookup.error = OSError(errno.EAGAIN, "no thread could be started for the host name lookup ({})".format(
                str(exc)[:100]))
            _finished(key, lookup)
    return lookup


def _connect(conn: Any, connecting: _Connecting) -> socket.socket:
    """urllib3's ``create_connection`` for ``conn``, each step within bounds: the lookup and each address's
    connect take at most the connect timeout, and ``connecting.stop`` ends either."""
    host = conn._dns_host
    if host.startswith("["):
        host = host.strip("[]")
    timeout = conn.timeout
    seconds = float(timeout) if isinstance(timeout, (int, float)) else None  # (else: no limit, or the default)
    addresses = _resolve(host, conn.port, allowed_gai_family(), seconds, connecting)
    error = None  # type: Optional[BaseException]
    for family, kind, proto, _, address in addresses:
        sock = None
        try:
            sock = socket.socket(family, kind, proto)
            for option in conn.socket_options or ():
                sock.setsockopt(*option)
            if timeout is None or seconds is not None:
                sock.settimeout(seconds)
            if conn.source_address:
                sock.bind(conn.source_address)
            connecting.connecting(sock)
            sock.connect(address)
            connecting.connected(sock)
            return sock
        except OSError as exc:
            connecting.connecting(None)
            error = exc
            if sock is not None:
                sock.close()
            if connecting.stopped:
                break
    raise error if error is not None else OSError("getaddrinfo returned no address")


class _WatchedConnectionMixin(object):
    def connect(self):  # type: ignore[no-untyped-def]
        try:
            return super(_WatchedConnectionMixin, self).connect()  # type: ignore[misc]
        finally:  # (TLS included: till then a stop finds the connected socket's copy, see _Connecting)
            connecting = self.__dict__.pop("_agenthub_connecting", None)
            if connecting is not None:
                connecting.done()

    def _new_conn(self):  # type: ignore[no-untyped-def]
        try:
            self._dns_host.encode("idna")  # type: ignore[attr-defined]
        except (UnicodeError, AttributeError):  # urllib3 says what is wrong with it
            return super(_WatchedConnectionMixin, self)._new_conn()  # type: ignore[misc]
        connecting = self._agenthub_connecting = _Connecting()  # (where ``interrupt`` finds it)
        try:
            if getattr(self.__dict__.get("_agenthub_watch"), "reason", None) is not None:
                raise _stopped_connect()
            sock = _connect(self, connecting)
        except socket.gaierror as exc:
            if _NameResolutionError is not None:
                raise _NameResolutionError(self.host, self, exc) from exc  # type: ignore[attr-defined]
            raise NewConnectionError(self, "Failed to establish a new connection: {}".format(exc)) from exc
        except socket.timeout as exc:
            raise ConnectTimeoutError(self, "Connection to {} timed out. (connect timeout={})".format(
                self.host, self.timeout)) from exc  # type: ignore[attr-defined]
        except OSError as exc:
            raise NewConnectionError(self, "Failed to establish a new connection: {}".format(exc)) from exc
        finally:
            if connecting.sock is None:  # (failed: nothing to keep; connected: kept till ``connect`` is over)
                self.__dict__.pop("_agenthub_connecting", None)
                connecting.done()
        sys.audit("http.client.connect", self, self.host, self.port)  # type: ignore[attr-defined]
        return sock


class _WatchedHTTPConnection(_WatchedConnectionMixin, HTTPConnection):
    pass


class _WatchedHTTPPool(_WatchedPoolMixin, HTTPConnectionPool):
    ConnectionCls = _WatchedHTTPConnection


class _WatchedHTTPSPool(_WatchedPoolMixin, HTTPSConnectionPool):
    pass


if HTTPSConnectionPool.ConnectionCls is not DummyConnection:  # (no ssl module: urllib3 refuses https itself)
    class _WatchedHTTPSConnection(_WatchedConnectionMixin, HTTPSConnectionPool.ConnectionCls):  # type: ignore
        pass

    _WatchedHTTPSPool.ConnectionCls = _WatchedHTTPSConnection


_WATCHED_POOLS = {"http": _WatchedHTTPPool, "https": _WatchedHTTPSPool}


def watch_pools(session: requests.Session) -> requests.Session:
    """``session`` with the connections of its plain HTTPAdapters watched as ``new_session``'s are (for a library's
    own session: the adapters keep their type, so a library that checks it still sees its own)."""
    for adapter in list(getattr(session, "adapters", {}).values()):
        if type(adapter) is requests.adapters.HTTPAdapter:
            adapter.poolmanager.pool_classes_by_scheme = dict(_WATCHED_POOLS)
    return session


@contextlib.contextmanager
def watching(watch: Any, release: bool = True) -> Iterator[None]:
    """Requests sent by this thread meanwhile through watched pools are told to ``watch`` (``stop`` interrupts
    them); with ``release``, whatever is still attached is let go at the end (a request that failed left its
    connection attached).  ``current_watch()`` meanwhile is ``watch``: a call's, while its credential is taken."""
    previous = getattr(_local, "watch", None)
    _local.watch = watch
    try:
        yield
    finally:
        _local.watch = previous
        if release:
            watch.detach(None)


def current_watch() -> Any:
    """The watch this thread's requests are told to now (``watching``), or None."""
    return getattr(_local, "watch", None)


class _WatchedAdapter(requests.adapters.HTTPAdapter):
    def init_poolmanager(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        super(_WatchedAdapter, self).init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = dict(_WATCHED_POOLS)

    def proxy_manager_for(self, proxy, **proxy_kwargs):  # type: ignore[no-untyped-def]
        manager = super(_WatchedAdapter, self).proxy_manager_for(proxy, **proxy_kwargs)
        if not proxy.lower().startswith("socks"):
            manager.pool_classes_by_scheme = dict(_WATCHED_POOLS)
        return manager


class Watch(object):
    """One call's abort switch: what the reading thread blocks on, and ``stop`` to unblock it.

    Given to ``open_stream`` as its ``watch``: it is told which connection, then which
    response, the reading thread blocks on, and ``stop`` (from any thread, a deadline
    timer, a signal handler) shuts that socket down so the read returns at once.  A
    connection still connecting has no socket yet: a short-lived thread then retries
    until it has one (or the attempt let go of it).  ``sleep`` is a wait that ``stop`` ends.

    A watch belongs to the process that made it: in a forked child it is stopped at the fork
    (reason "fork": the stream is the parent's, its next read there raises) and it never shuts
    down a socket there (the socket is the parent's too).
    """

    __slots__ = ("reason", "pid", "_lock", "_target", "_wake", "_chasing", "_linked", "__weakref__")

    def __init__(self) -> None:
        self.reason = None  # type: Optional[str]  # None, "abort", "deadline" or "fork"
        #: the process whose stream this is
        self.pid = os.getpid()
        self._lock = threading.RLock()  # reentrant: abort() may run in a signal handler on the reading thread
        self._target = None  # type: Any
        self._wake = threading.Event()
        self._chasing = False
        self._linked = []  # type: List[Any]  # watches stopped with this one (``link``)
        _WATCHES.add(self)

    def _forked(self) -> None:
        """In a forked child: the call is the parent's (the locks may be held by a thread of the parent's)."""
        self._lock = threading.RLock()
        self._target = None  # the parent's connection: never shut down from here
        self._chasing = False
        self._linked = []
        if self.reason is None:
            self.reason = "fork"
        self._wake = threading.Event()
        self._wake.set()

    def attach(self, target: Any) -> None:
        with self._lock:
            self._target = target
            if target is not None and self.reason is not None:
                self._interrupt()  # stopped while the request was in flight

    def detach(self, target: Any = None) -> None:
        with self._lock:
            if target is None or target is self._target:
                self._target = None

    def stop(self, reason: str = "abort") -> None:
        with self._lock:
            if self.reason is None:
                self.reason = reason
            self._wake.set()
            if self._target is not None:
                self._interrupt()
            linked = list(self._linked)
        for watch in linked:
            watch.stop(self.reason)

    def link(self, watch: Any) -> None:
        """``watch`` is stopped with this one until ``unlink`` (at once when this one is stopped already): a part
        of the call with a switch of its own (a credential's refresh, bounded by its own deadline too)."""
        with self._lock:
            self._linked.append(watch)
            reason = self.reason
        if reason is not None:
            watch.stop(reason)

    def unlink(self, watch: Any) -> None:
        with self._lock:
            if watch in self._linked:
                self._linked.remove(watch)

    def _interrupt(self) -> None:
        if self.pid != os.getpid():  # pragma: no cover - _forked dropped the target already
            return
        if interrupt(self._target) or self._chasing:
            return
        self._chasing = True
        chaser = threading.Thread(target=self._chase, name="agenthub-abort", daemon=True)
        chaser.start()

    def _chase(self) -> None:
        try:
            for _ in range(3000):  # at most ~30 s: connect timeouts are shorter than that
                time.sleep(0.01)
                with self._lock:
                    if self._target is None or interrupt(self._target):
                        return
        finally:
            self._chasing = False

    def sleep(self, seconds: float) -> bool:
        """Wait ``seconds``; False when stopped meanwhile."""
        if not seconds > 0:
            return self.reason is None
        return not self._wake.wait(min(seconds, threading.TIMEOUT_MAX))  # (a longer wait overflows the lock's)


# -- error answers ------------------------------------------------------------------------------


def _http_error(client: str, response: requests.Response, error_from_body: Any) -> AgentHubError:
    """The error a non-2xx answer names: its status, headers and (capped) body go to the protocol's
    ``error_from_body`` hook, which knows its error shapes."""
    try:
        raw = _read_capped(response, _MAX_ERROR_BODY)[0]
    except Exception:  # the body is a courtesy: the status alone is an answer
        raw = b""
    return error_from_body(response.status_code, response.headers, raw, client)


# -- sending ------------------------------------------------------------------------------------


#: failures while preparing a request: nothing reached the network
_UNSENT = (requests.exceptions.InvalidHeader, requests.exceptions.InvalidURL, requests.exceptions.InvalidSchema,
           requests.exceptions.MissingSchema, requests.exceptions.URLRequired, UnicodeError, ValueError, TypeError)


def _unsent(exc: BaseException) -> bool:
    return isinstance(exc, _UNSENT) and not isinstance(exc, (requests.exceptions.ConnectionError,
                                                             requests.exceptions.Timeout))


def _safe_cause(exc: BaseException, request: HttpRequest) -> Optional[BaseException]:
    """``exc`` when it is safe to chain; None when it (or what it chains) holds a secret of ``request``
    (a header value or the URL's user:password) or is a preparation failure, whose message may."""
    if _unsent(exc):
        return None
    secrets = secret_values(request.headers) + request_url_secrets(request.url)
    seen = 0
    current = exc  # type: Optional[BaseException]
    while current is not None and seen < 8:
        try:
            text = repr(current) + str(current) + repr(getattr(current, "args", ()))
        except Exception:  # a repr that fails: do not chain what cannot be checked
            return None
        if any(secret in text for secret in secrets):
            return None
        current = current.__cause__ or current.__context__
        seen += 1
    return exc


_PROXY_AUTH = re.compile(r"Tunnel connection failed: 407|407 Proxy Authentication")


def _transport_error(client: str, what: str, exc: BaseException, timeout: Limits,
                     proxy: Optional[str] = None) -> TransportError:
    """``proxy``: the proxy the request went through (None: none, or not known)."""
    connect, read = timeout
    timed_out = _is_timeout(exc)
    if not _through_proxy(exc):
        proxy = None  # the proxy answered: whatever failed is past it
    if isinstance(exc, requests.exceptions.ConnectTimeout):
        why = "no connection within {}s (connect timeout{})".format(
            connect, " to the proxy " + str(shown_url(proxy)) if proxy else "")
    elif timed_out:
        why = "no data for {}s (idle timeout between received bytes)".format(read)
    else:
        why = _why(exc, what, proxy)
    # a certificate that does not verify, or a URL requests refuses, is not cured by asking again
    permanent = isinstance(exc, (requests.exceptions.SSLError, requests.exceptions.InvalidURL,
                                 requests.exceptions.InvalidSchema, requests.exceptions.MissingSchema))
    if _unsent(exc) and not isinstance(exc, (requests.exceptions.InvalidURL, requests.exceptions.InvalidSchema,
                                             requests.exceptions.MissingSchema)):
        # the request could not even be prepared (a header value HTTP forbids, a URL that does not parse):
        # nothing was sent and the same request fails the same way again
        why = "the request could not be prepared ({}); nothing was sent".format(type(exc).__name__)
        permanent = True
    if isinstance(exc, requests.exceptions.ProxyError) and _PROXY_AUTH.search(str(exc)):
        # the proxy wants (other) credentials for CONNECT: asking again sends the same ones
        why = "the proxy answered 407 Proxy Authentication Required (check the proxy's credentials)"
        permanent = True
    return TransportError("{}: {} failed: {}".format(client or "agenthub", what, why), client=client,
                          timeout=timed_out, retryable=not permanent)


def _chain(exc: BaseException) -> List[BaseException]:
    """``exc`` and what caused it (causes, contexts and wrapped exceptions in args), at most 8 deep."""
    seen = []  # type: List[BaseException]
    current = exc  # type: Any
    while current is not None and len(seen) < 8 and all(current is not e for e in seen):
        seen.append(current)
        args = getattr(current, "args", ())
        inner = next((a for a in args if isinstance(a, BaseException)), None)
        reason = getattr(current, "reason", None)  # urllib3's MaxRetryError / NewConnectionError
        current = current.__cause__ or (reason if isinstance(reason, BaseException) else None) or inner \
            or current.__context__
    return seen


def _through_proxy(exc: BaseException) -> bool:
    """Whether ``exc`` is a failure to reach (or tunnel through) a proxy: requests' and urllib3's ProxyError."""
    return any(type(e).__name__ == "ProxyError" for e in _chain(exc))


def _proxy_for(session: requests.Session, url: str) -> Optional[str]:
    """The proxy ``session`` sends ``url`` through, as requests picks it (its own, the environment's when it
    trusts it, ``no_proxy``); None for none or when it cannot tell."""
    try:
        proxies = session.merge_environment_settings(url, {}, None, None, None).get("proxies") or {}
        return requests.utils.select_proxy(url, proxies) or None
    except Exception:  # only for the words of an error already raised
        return None


def _why(exc: BaseException, what: str, proxy: Optional[str] = None) -> str:
    """Why a connection failed, in words (no internal class names); ``proxy``: the hop at fault when it is
    one (its credentials never shown)."""
    host = urlsplit(what.split(" ", 1)[-1]).netloc if " " in what else ""
    chain = _chain(exc)
    if proxy:
        return _why_proxy(chain, str(shown_url(proxy)), host.rsplit("@", 1)[-1])
    words = " ".join(str(e) for e in chain).lower()
    if any(isinstance(e, requests.exceptions.SSLError) or type(e).__name__.startswith("SSL") for e in chain):
        if "certificate verify failed" in words or "certificate_verify_failed" in words:
            detail = "the server's certificate did not verify"
            for hint in ("self-signed certificate", "self signed certificate", "certificate has expired",
                         "hostname mismatch", "unable to get local issuer certificate"):
                if hint in words:
                    detail += " ({})".format(hint)
                    break
        elif "wrong version number" in words or "record layer failure" in words:
            detail = "the server did not answer TLS (an http:// server behind an https:// URL?)"
        else:
            detail = "the TLS handshake failed"
        return "TLS failed: {}".format(detail)
    if any(isinstance(e, socket.gaierror) for e in chain) or any(
            phrase in words for phrase in ("name or service not known", "nodename nor servname",
                                           "getaddrinfo failed", "temporary failure in name resolution",
                                           "no address associated", "name resolution")):
        return "the host name {}did not resolve (DNS): is it spelt right, and is there a network?".format(
            (host.rsplit("@", 1)[-1] + " ") if host else "")
    if any(isinstance(e, ConnectionRefusedError) for e in chain) or "connection refused" in words:
        return "connection refused{}: nothing listens there (is the server running, is the port right?)".format(
            " by " + host if host else "")
    if any(isinstance(e, ConnectionResetError) for e in chain) or "connection reset" in words:
        return "the connection was reset by the server"
    if "remotedisconnected" in words or "remote end closed connection" in words:
        return "the server closed the connection without answering"
    if any(isinstance(e, (requests.exceptions.InvalidURL, requests.exceptions.InvalidSchema,
                          requests.exceptions.MissingSchema)) for e in chain):
        # (requests names the URL it could not parse: a proxy's from the environment too, password and all)
        return "the URL is not one requests can send to ({})".format(preview(scrub_free_text(str(exc)), 120))
    if "incompleteread" in words or "connection broken" in words or "invalidchunklength" in words:
        return "the connection broke in the middle of the answer"
    if any(isinstance(e, (BrokenPipeError, OSError)) and getattr(e, "strerror", None) for e in chain):
        error = next(e for e in chain if isinstance(e, OSError) and getattr(e, "strerror", None))
        return "the connection failed: {}".format(str(error.strerror).lower())
    return "the connection failed"


def _why_proxy(chain: List[BaseException], proxy: str, target: str) -> str:
    text = " ".join(str(e) for e in chain)
    words = text.lower()
    tunnel = re.search(r"tunnel connection failed: (\d{3}[^'\"),]*)", text, re.IGNORECASE)
    if tunnel:
        return "the proxy {} did not open a tunnel to {} (it answered {})".format(proxy, target, tunnel.group(1))
    if any(isinstance(e, socket.gaierror) for e in chain) or any(
            phrase in words for phrase in ("name or service not known", "nodename nor servname",
                                           "getaddrinfo failed", "temporary failure in name resolution",
                                           "no address associated", "name resolution")):
        return "the proxy's host name did not resolve (DNS): is {} spelt right?".format(proxy)
    if any(isinstance(e, ConnectionRefusedError) for e in chain) or "connection refused" in words:
        return "connection refused by the proxy {}: nothing listens there (is the proxy running, is its port " \
               "right?)".format(proxy)
    return "the proxy {} could not be reached".format(proxy)


def _is_timeout(exc: BaseException) -> bool:
    seen = 0
    while exc is not None and seen < 8:
        if isinstance(exc, (requests.exceptions.Timeout, socket.timeout)):
            return True
        if type(exc).__name__ in ("ReadTimeoutError", "ConnectTimeoutError", "TimeoutError"):
            return True
        args = getattr(exc, "args", ())
        inner = args[0] if args and isinstance(args[0], BaseException) else None
        exc = exc.__cause__ or exc.__context__ or inner  # type: ignore[assignment]
        seen += 1
    return False


def _KEEP_AUTH(prepared: Any) -> Any:
    """requests' auth hook that keeps the request's own Authorization (no Basic auth from the URL)."""
    return prepared


def _URL_AUTH(prepared: Any) -> Any:
    """requests' auth hook for a request without an Authorization of its own: what requests does with no auth
    (Basic auth from the URL's user:password@, which agenthub scrubs), but never a ~/.netrc credential (a
    session that trusts the environment reads it then: a credential the caller never gave agenthub, on no
    scrub list)."""
    user, password = requests.utils.get_auth_from_url(prepared.url)
    if user or password:
        return requests.auth.HTTPBasicAuth(user, password)(prepared)
    return prepared


def _send(session: requests.Session, request: HttpRequest, timeout: Limits, client: str, stream: bool,
          watch: Any):
    data = request.content()  # the exact bytes the protocol encoded (and may have signed)
    headers = dict(request.headers)
    if not any(name.lower() == "accept-encoding" for name in headers):
        headers["Accept-Encoding"] = "gzip, deflate"  # the codings inflated here in bounded pieces
    _local.watch = watch
    _local.secrets = request.secrets  # (what a recording adapter scrubs beside the headers': extra_body's named ones)
    response = None
    failure = None  # type: Optional[Tuple[TransportError, Optional[BaseException]]]
    # a base URL's user:password@ never replaces the Authorization the request carries (requests would build
    # Basic auth from it over the key's Bearer): with one, the userinfo is not sent at all
    # (and ~/.netrc is never read: a session's own ``auth`` alone applies, as requests would apply it)
    if any(name.lower() == "authorization" for name in headers):
        auth = _KEEP_AUTH  # type: Any
    else:
        auth = _URL_AUTH if getattr(session, "auth", None) is None else None
    try:
        response = session.request(
            request.method, request.url, headers=headers, data=data, timeout=timeout,
            stream=stream, allow_redirects=False, auth=auth,
        )
    except AgentHubError:
        raise
    except Exception as exc:  # requests' exceptions, a socket error it did not wrap, an answer http.client cannot parse
        proxy = _proxy_for(session, request.url) if _through_proxy(exc) else None
        failure = (_transport_error(client, _where(request), exc, timeout, proxy), _safe_cause(exc, request))
    finally:
        _local.watch = None
        _local.secrets = ()
        if watch is not None and response is None:
            watch.detach(None)  # the request failed: its connection is no longer ours
    if failure is not None:
        # raised outside the handler: an exception that carries a secret (requests puts a refused header's
        # value in its message) is neither the cause nor the context, so no traceback prints it
        error, cause = failure
        del failure
        if cause is None:
            raise error
        raise error from cause
    if watch is not None:
        watch.attach(response)
    return response


def _release(response: Any, watch: Any) -> None:
    if watch is not None:
        watch.detach(response)  # first: nobody may shut down a socket that goes back to the pool
    try:
        response.close()
    except Exception:  # closing a broken connection is best effort
        pass


def _where(request: HttpRequest) -> str:
    url = redact_url(request.url.split("?", 1)[0])  # never user:password@
    return "{} {}".format(request.method, url)


#: a compressed body is inflated in pieces of at most this many bytes, whatever one chunk of it
#: expands to: the SSE line limit (or the document cap) then bounds memory for gzip as for plain bytes
INFLATE_PIECE = 64 * 1024
#: content codings agenthub inflates itself (asked for with Accept-Encoding when the caller did not choose)
_CODINGS = ("gzip", "x-gzip", "deflate")


class _Inflater(object):
    """gzip (several members too) or deflate (zlib-wrapped or raw), inflated incrementally:
    ``feed(data)`` yields pieces of at most ``INFLATE_PIECE`` bytes.  As urllib3 does, what
    follows a complete gzip member and does not inflate is ignored."""

    __slots__ = ("_coding", "_inflate", "_started", "_members", "_ignore", "_head")

    def __init__(self, coding: str) -> None:
        self._coding = coding
        self._inflate = self._new()
        self._started = False
        self._members = 0
        self._ignore = False
        self._head = b""

    def _new(self, raw: bool = False) -> Any:
        if self._coding in ("gzip", "x-gzip"):
            return zlib.decompressobj(16 + zlib.MAX_WBITS)
        return zlib.decompressobj(-zlib.MAX_WBITS if raw else zlib.MAX_WBITS)

    def feed(self, data: bytes) -> Iterator[bytes]:
        if self._coding == "deflate" and not self._started:
            # zlib-wrapped (RFC 1950, as the RFC says) or raw deflate (as some servers send it): the
            # first two bytes tell
            data = self._head + data
            if len(data) < 2:
                self._head = data
                return
            self._head = b""
            self._started = True
            if data[0] & 0x0F != 8 or (data[0] * 256 + data[1]) % 31:
                self._inflate = self._new(raw=True)
        while data and not self._ignore:
            inflate = self._inflate
            try:
                out = inflate.decompress(data, INFLATE_PIECE)
            except zlib.error:
                if self._members:
                    self._ignore = True  # garbage after a complete member
                    return
                raise
            if out:
                yield out
            if inflate.eof:
                self._members += 1
                data = inflate.unused_data  # the next gzip member, if any
                if data:
                    self._inflate = self._new()
                continue
            data = inflate.unconsumed_tail
            while not data and len(out) == INFLATE_PIECE:  # output zlib still holds for the input it took
                out = inflate.decompress(b"", INFLATE_PIECE)
                if out:
                    yield out
                data = inflate.unconsumed_tail

    def flush(self) -> Iterator[bytes]:
        if self._ignore:
            return
        out = self._inflate.flush(INFLATE_PIECE)  # nothing left in practice: decompress consumed it all
        if out:
            yield out


class _Layers(object):
    """Stacked codings (``Content-Encoding: gzip, gzip``), each layer inflated in bounded pieces:
    the last coding applied is undone first, and every piece it yields goes through the next
    layer before more is asked of it, so no layer ever holds more than ``INFLATE_PIECE``."""

    __slots__ = ("_layers",)

    def __init__(self, codings: List[str]) -> None:
        self._layers = [_Inflater(coding) for coding in reversed(codings)]

    def _after(self, index: int, pieces: Iterator[bytes]) -> Iterator[bytes]:
        if index + 1 == len(self._layers):
            yield from pieces
            return
        feed = self._layers[index + 1].feed
        for piece in pieces:
            yield from self._after(index + 1, feed(piece))

    def feed(self, data: bytes) -> Iterator[bytes]:
        return self._after(0, self._layers[0].feed(data))

    def flush(self) -> Iterator[bytes]:
        for index, layer in enumerate(self._layers):
            yield from self._after(index, layer.flush())


def _codings(response: Any) -> List[str]:
    """The answer's content codings in the order they were applied (``identity`` dropped)."""
    headers = getattr(response, "headers", None) or {}
    names = (name.strip().lower() for name in (headers.get("content-encoding") or "").split(","))
    return [name for name in names if name and name != "identity"]


def _accepted(response: Any) -> List[str]:
    """The codings the request asked for (its Accept-Encoding), lower case, parameters dropped."""
    headers = getattr(getattr(response, "request", None), "headers", None) or {}
    return [part.split(";", 1)[0].strip().lower() for part in (headers.get("accept-encoding") or "").split(",")]


def _refused(codings: List[str], accepted: List[str]) -> Iterator[bytes]:
    raise StreamProtocolError("the answer's Content-Encoding {!r} was not asked for (Accept-Encoding: {}): it is not "
                              "decoded".format(", ".join(codings), ", ".join(a for a in accepted if a) or "none"),
                              retryable=False)
    yield b""  # pragma: no cover - a generator: the error comes at the first read, where the body is closed


def _chunks(response: requests.Response) -> Iterator[bytes]:
    """The body's bytes as they arrive, decoded: gzip and deflate bodies, stacked ones too, are
    inflated here in bounded pieces (urllib3 would inflate each received chunk whole: a 1 MB chunk of
    a gzip bomb is 1 GB).  Another coding (br, zstd) is left to urllib3 when the request asked for it
    alone; one not asked for, or stacked with another, is refused (StreamProtocolError)."""
    codings = _codings(response)
    if not codings:
        return _raw_chunks(response, False)
    if all(coding in _CODINGS for coding in codings):
        return _inflated(_raw_chunks(response, False), _Layers(codings))
    accepted = _accepted(response)
    if len(codings) == 1 and (codings[0] in accepted or "*" in accepted):
        return _raw_chunks(response, True)  # a coding the caller's own Accept-Encoding asked for: urllib3's decoder
    return _refused(codings, accepted)


def _inflated(chunks: Iterator[bytes], inflater: Any) -> Iterator[bytes]:
    try:
        for chunk in chunks:
            for piece in inflater.feed(chunk):
                yield piece
        for piece in inflater.flush():
            yield piece
    except zlib.error as exc:
        raise StreamProtocolError("the compressed body does not inflate ({})".format(exc)) from None
    finally:
        close = getattr(chunks, "close", None)
        if close is not None:
            close()


def _raw_chunks(response: requests.Response, decode: bool) -> Iterator[bytes]:
    """The body as it arrives; ``decode``: let urllib3 undo the content coding (else the bytes as sent)."""
    raw = response.raw
    if getattr(raw, "chunked", False):
        # chunked bodies: urllib3 hands over each chunk as it arrives, a large one in pieces of at most
        # _READ_SIZE (one huge chunk, or a whole answer in one chunk, is never read whole: memory stays
        # bounded by the line limit and the first event is decoded as soon as its piece is in)
        return raw.stream(_READ_SIZE, decode_content=decode)
    if hasattr(raw, "read1"):
        # close-delimited or sized bodies: read1 returns as soon as any bytes arrived
        return _read1(raw, decode)
    fp = getattr(raw, "_fp", None)
    if hasattr(fp, "read1") and not response.headers.get("content-length") and not decode \
            and not isinstance(raw, _TeeBody):  # (a recorder's body is read through it, by stream())
        # urllib3 1.x (what some SDKs pin on Python < 3.10) has no read1 and its read(amt) waits for
        # amt bytes: a close-delimited body is read as it arrives from http.client's response underneath
        # (a sized one stays with urllib3, which then knows it was read whole and can reuse the connection)
        return _read1_plain(fp)
    return raw.stream(_READ_SIZE, decode_content=decode)


def _read1_plain(fp: Any) -> Iterator[bytes]:
    read1 = fp.read1
    while True:
        data = read1(_READ_SIZE)
        if not data:
            return
        yield data


def _read1(raw: Any, decode: bool) -> Iterator[bytes]:
    read1 = raw.read1
    while True:
        data = read1(_READ_SIZE, decode_content=decode)
        if not data:
            return
        yield data


def _read_capped(response: Any, limit: int) -> Tuple[bytes, bool]:
    """At most ``limit`` decoded bytes of the body (read in bounded pieces); True when there was more."""
    if getattr(response, "raw", None) is None:
        return b"", False
    parts = []
    size = 0
    pieces = _chunks(response)
    try:
        for piece in pieces:
            parts.append(piece)
            size += len(piece)
            if size > limit:
                return b"".join(parts)[:limit], True
    finally:
        close = getattr(pieces, "close", None)
        if close is not None:
            close()
    return b"".join(parts), False


def interrupt(response: Any) -> bool:
    """Unblock a thread reading ``response``, from any other thread; True if a socket was shut down.

    The reading thread then sees the body end (or a broken connection) at once.
    Only call it while the response is still being read (a ``Watch`` knows when): once
    the connection went back to the pool it may carry someone else's request.
    """
    sock = _socket_of(response)
    if sock is not None:
        try:
            # the plain socket's shutdown, also for an SSLSocket: its own shutdown would unwrap TLS under the reader
            socket.socket.shutdown(sock, socket.SHUT_RDWR)
            return True
        except (OSError, ValueError, TypeError):  # (a plain socket TLS detached: the handshake's copy, below)
            pass
    connecting = getattr(response, "_agenthub_connecting", None)  # a watched connection still connecting
    return connecting.stop() if connecting is not None else False


def _socket_of(response: Any) -> Optional[socket.socket]:
    sock = getattr(response, "sock", None)  # a urllib3 connection (connected or not yet)
    if isinstance(sock, socket.socket) or not hasattr(response, "raw"):
        return sock if isinstance(sock, socket.socket) else None
    raw = getattr(response, "raw", None)
    # urllib3 HTTPResponse -> http.client.HTTPResponse -> BufferedReader -> SocketIO -> socket
    fp = getattr(getattr(raw, "_fp", None), "fp", None)
    sock = getattr(getattr(fp, "raw", None), "_sock", None)
    if isinstance(sock, socket.socket):
        return sock
    sock = getattr(getattr(raw, "_connection", None), "sock", None)
    return sock if isinstance(sock, socket.socket) else None


#: the first bytes of a body handed on before the rest of the first read (see BodyStream.iter_chunks)
FIRST_PIECE = 4096
#: after the terminal marker, how long ``BodyStream.finish`` waits for the rest of the body (so the
#: connection can be reused) before closing the connection instead
FINISH_GRACE = 0.25
_FINISH_MAX_BYTES = 64 * 1024


class BodyStream(object):
    """The bytes of one streamed response body, as they arrive: read them with ``iter_chunks()``.

    The request goes out at the first chunk asked for.  ``close()`` releases the connection
    (at once: an unread body closes it); ``finish()`` is for a reader that saw its
    protocol's terminal marker: the little that is left of the body (the last chunk
    of a chunked body) is read for up to ``FINISH_GRACE`` seconds so that the
    connection goes back to the pool for the next call instead of being closed.
    """

    def __init__(self, session: requests.Session, request: HttpRequest, timeout: Limits, client: str,
                 watch: Any, error_from_body: Any = None, is_stream: Optional[Callable[[bytes], bool]] = None) -> None:
        self._session = session
        self._error_from_body = error_from_body or _default_error_from_body
        self._is_stream = is_stream
        self._request = request
        self._timeout = timeout
        self._client = client
        self._watch = watch
        self._response = None  # type: Any
        self._chunks = None  # type: Optional[Iterator[bytes]]
        self._done = False
        self._pid = os.getpid()  # in another process (a forked child) the connection is not ours to close
        #: the decoded JSON answer, when ``open`` found one JSON document instead of a stream
        self.document = None  # type: Any

    def open(self, document: bool = False) -> bool:
        """Send the request and take the answer's head; True when the answer is one JSON document
        (then in ``document``; the connection is already released).  ``document``: one JSON
        document was asked for (it is read whatever its content type).  A stream is read with
        ``iter_chunks``.  Errors (HTTP, HTML pages, transport) are raised here."""
        if self._chunks is None and not self._done and not self._is_document:
            self._open(document)
        return self._is_document

    _is_document = False
    #: the answer's HTTP status and headers, once its head arrived (an error answer's too)
    status = None  # type: Optional[int]
    headers = None  # type: Any

    def iter_chunks(self, stamp: Optional[List[int]] = None) -> Iterator[bytes]:
        """The body's chunks as they arrive (the request goes out at the first ``next``).  Closing
        the generator closes the body; a read failure becomes TransportError.  ``stamp``: a one-item
        list set to the time of each read (Unix ms) before its bytes are handed on (what
        ``stream.drive`` gives the events decoded from them as ``created_at``)."""
        if self._done or self._is_document:
            return
        if self._chunks is None:
            self._open()
            if self._is_document:
                raise StreamProtocolError("{}: expected a stream, got one JSON document".format(
                    self._client or "agenthub"), client=self._client)
        chunks = self._chunks  # type: Any
        clock = time.time_ns
        # a stopped watch (an abort, the deadline) shuts the socket down, which ends the next read; but a read of
        # a compressed body inflates to many pieces (a few KB of gzip are a GB of blank lines, minutes of
        # decoding): the watch is asked before each piece, so the stop holds within one piece
        watch = self._watch if hasattr(self._watch, "reason") else None
        try:
            for chunk in chunks:
                if chunk:
                    if watch is not None and watch.reason is not None:
                        raise self._stopped()
                    if stamp is not None:
                        stamp[0] = clock() // 1000000
                    if len(chunk) > FIRST_PIECE:
                        # a burst (a whole answer in one write): its first event is decoded from a small
                        # piece, not after the whole first read was (the rest keeps the read's time)
                        yield chunk[:FIRST_PIECE]
                        chunk = chunk[FIRST_PIECE:]
                    yield chunk
                    break
            for chunk in chunks:
                if chunk:
                    if watch is not None and watch.reason is not None:
                        raise self._stopped()
                    if stamp is not None:
                        stamp[0] = clock() // 1000000
                    yield chunk
        except BaseException as exc:
            self.close()
            error = self._error(exc)
            if error is None:
                raise
            raise error from exc
        self.close()

    def _open(self, document: bool = False) -> None:
        """Send the request, then take the body (an HTML page where an answer was expected, and a
        JSON document, are dealt with here)."""
        try:
            self._response = _send(self._session, self._request, self._timeout, self._client, True, self._watch)
        except BaseException:
            self._done = True
            raise
        self.status = getattr(self._response, "status_code", None)
        self.headers = getattr(self._response, "headers", None)
        if self.status is not None and self.status >= 300:
            try:
                raise _http_error(self._client, self._response, self._error_from_body)
            finally:
                self.close()
        if is_html(self.headers):
            try:
                raise _html_instead_of_stream(self._client, self._response)
            finally:
                self.close()
        head, chunks = b"", None  # type: Tuple[bytes, Optional[Iterator[bytes]]]
        if not document and _is_json(self._response):
            # labelled JSON: a whole answer, unless the body is SSE-framed (a server or proxy that
            # labels its event stream application/json): then it is read as the stream it is
            try:
                head, chunks = _peek(_chunks(self._response))
            except BaseException as exc:
                self.close()
                error = self._error(exc)
                if error is None:
                    raise
                raise error from None
            if self._is_stream is not None and self._is_stream(head):
                self._chunks = itertools.chain((head,), chunks)
                return
        if document or chunks is not None:
            try:
                self.document = _read_document(self._client, self._response, self._timeout, head, chunks,
                                               self._error_from_body)
            finally:
                self.close()
            self._done = False
            self._is_document = True
        else:
            self._chunks = _chunks(self._response)

    def _stopped(self) -> TransportError:
        """The read after the watch stopped (the caller turns it into the abort or the deadline it was)."""
        return TransportError("{}: reading the stream failed: the call was stopped ({})".format(
            self._client or "agenthub", self._watch.reason), client=self._client, retryable=False,
            aborted=self._watch.reason == "abort", deadline=self._watch.reason == "deadline")

    def _error(self, exc: BaseException) -> Optional[TransportError]:
        if isinstance(exc, Exception) and not isinstance(exc, AgentHubError):
            # whatever requests / urllib3 / http.client raise on a broken connection or a malformed body
            # (ProtocolError, IncompleteRead, OSError, ValueError, an OverflowError on an absurd chunk size)
            return _transport_error(self._client, "reading the stream", exc, self._timeout)
        return None

    def finish(self, grace: Optional[float] = None) -> None:
        """The reader is done: drain what little is left (bounded in time and bytes), then release."""
        if self._done or self._response is None:
            self.close()
            return
        grace = FINISH_GRACE if grace is None else grace
        try:
            sock = _socket_of(self._response)
            if sock is not None:
                sock.settimeout(grace)  # urllib3 sets the socket's timeouts again on the next request
            deadline = time.monotonic() + grace
            left = _FINISH_MAX_BYTES
            for chunk in self._chunks:  # type: ignore[union-attr]
                left -= len(chunk)
                if left < 0 or time.monotonic() > deadline:
                    break
        except Exception:  # a server that does not end its body cleanly: the connection is closed below
            pass
        finally:
            self.close()

    def close(self) -> None:
        if self._done and self._response is None:
            return
        self._done = True
        response, self._response = self._response, None
        if response is not None and self._pid == os.getpid():
            _release(response, self._watch)

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # pragma: no cover - interpreter shutdown
            pass


def _html_instead_of_stream(client: str, response: Any) -> StreamProtocolError:
    try:
        raw = _read_capped(response, _MAX_ERROR_BODY)[0]
    except Exception:
        raw = b""
    text = page_text(body_text(raw))
    return StreamProtocolError("{}: expected an event stream, got an HTML page (a proxy or gateway in the way?): "
                               "{}".format(client or "agenthub", preview(text, 300)), client=client, retryable=True)


def _is_json(response: Any) -> bool:
    headers = getattr(response, "headers", None) or {}
    return (headers.get("content-type") or "").split(";", 1)[0].strip().lower() == "application/json"


#: the largest JSON document accepted (a whole answer, or a non-streamed endpoint's such as embeddings),
#: counted after decompression: a larger one is a StreamProtocolError (not retried), read no further
MAX_DOCUMENT_BYTES = 16 * 1024 * 1024


def _peek(chunks: Iterator[bytes], limit: int = 1024) -> Tuple[bytes, Iterator[bytes]]:
    """The body's first bytes (at least one that is not white space, or ``limit`` of them, or all
    of it), and the rest of the chunks."""
    head = b""
    for chunk in chunks:
        head += chunk
        if head.lstrip(b"\xef\xbb\xbf \t\r\n") or len(head) >= limit:
            break
    return head, chunks


def _read_document(client: str, response: Any, timeout: Limits, head: bytes = b"",
                   chunks: Optional[Iterator[bytes]] = None, error_from_body: Any = _default_error_from_body) -> Any:
    """A 2xx answer that is one JSON document, decoded (at most ``MAX_DOCUMENT_BYTES`` of it,
    compressed or not: it is inflated in bounded pieces and the count stops the read).

    An error object (a gateway's error, most likely) raises the error ``error_from_body`` reads in it;
    anything else is handed to the protocol's ``parse_document`` by the client.
    """
    parts = []  # type: List[bytes]
    size = 0
    try:
        for piece in itertools.chain((head,), chunks if chunks is not None else _chunks(response)):
            parts.append(piece)
            size += len(piece)
            if size > MAX_DOCUMENT_BYTES:
                raise StreamProtocolError("{}: the JSON answer is larger than {} bytes (MAX_DOCUMENT_BYTES)".format(
                    client or "agenthub", MAX_DOCUMENT_BYTES), client=client, retryable=False)
    except AgentHubError:
        raise
    except Exception as exc:
        raise _transport_error(client, "reading the response", exc, timeout) from exc
    raw = b"".join(parts)
    del parts
    text = body_text(raw)
    try:
        payload = _json_loads(text)  # type: Any
    except (ValueError, RecursionError):
        raise StreamProtocolError("{}: the answer is neither a stream nor JSON: {}".format(
            client or "agenthub", preview(text.strip(), 300)), client=client) from None
    body = payload[0] if isinstance(payload, list) and payload else payload
    if isinstance(body, dict) and body.get("error"):
        raise error_from_body(None, response.headers, payload, client)  # in a 2xx answer: no HTTP status
    return payload


def open_stream(
    session: requests.Session,
    request: HttpRequest,
    timeout: Limits,
    client: str = "",
    watch: Any = None,
    error_from_body: Any = None,
    is_stream: Optional[Callable[[bytes], bool]] = None,
) -> BodyStream:
    """A BodyStream for ``request``: it is sent when ``iter_chunks()`` is first read.

    ``watch`` (a ``Watch``, or see above) is told what the reading thread blocks on, so another
    thread can ``interrupt`` it.
    ``error_from_body(status, headers, payload, client)``: the protocol's reading of an error
    answer (default: ``agenthub.answers.error_from_body``); ``is_stream(head)``: True when a
    body labelled JSON opens as the protocol's stream (None: such a body is one document).
    """
    return BodyStream(session, request, timeout, client, watch, error_from_body, is_stream)


def open_raw(session: requests.Session, request: HttpRequest, timeout: Limits, client: str = "",
             error_from_body: Any = None) -> "RawBody":
    """Send ``request`` and take a 2xx answer as it is: no JSON or SSE sniffing (a file download, a
    JSON Lines body, an upload session's headers).  A non-2xx answer raises what ``error_from_body``
    reads in it, as for ``open_stream``.  Read the ``RawBody`` to its end or ``close()`` it: either
    releases the connection."""
    response = _send(session, request, timeout, client, True, None)
    if response.status_code >= 300:
        try:
            raise _http_error(client, response, error_from_body or _default_error_from_body)
        finally:
            _release(response, None)
    return RawBody(response, client, timeout)


class RawBody(object):
    """A 2xx answer's ``headers`` and its decoded bytes (iterate for the chunks as they arrive)."""

    def __init__(self, response: Any, client: str, timeout: Limits) -> None:
        self._response = response
        self._client = client
        self._timeout = timeout
        self.headers = response.headers  # type: Any
        self.status = response.status_code  # type: int

    def __iter__(self) -> Iterator[bytes]:
        response = self._response
        if response is None:
            return
        try:
            for chunk in _chunks(response):
                if chunk:
                    yield chunk
        except AgentHubError:
            raise
        except Exception as exc:
            raise _transport_error(self._client, "reading the response", exc, self._timeout) from exc
        finally:
            self.close()

    def read(self, limit: int = MAX_DOCUMENT_BYTES) -> bytes:
        """The whole body (a StreamProtocolError past ``limit`` bytes)."""
        parts = []  # type: List[bytes]
        size = 0
        for chunk in self:
            size += len(chunk)
            if size > limit:
                self.close()
                raise StreamProtocolError("{}: the answer is larger than {} bytes".format(
                    self._client or "agenthub", limit), client=self._client, retryable=False)
            parts.append(chunk)
        return b"".join(parts)

    def close(self) -> None:
        response, self._response = self._response, None
        if response is not None:
            _release(response, None)


# -- record and replay (agenthub.testing) --------------------------------------------------------
# The requests glue of agenthub.testing: adapters that answer from, or write to, a cassette.
# The cassette (the files, request matching, scrubbing secrets) lives in agenthub.testing and is
# duck-typed here: ``play(method, url, body, secrets) -> (status, headers, body_bytes[, read_error])`` and
# ``record(method, url, body, status, headers, body_bytes, secrets, read_error)``.  ``read_error``: how reading
# the body failed after those bytes (a broken connection, a timeout), as ``read_failure`` describes it, or None.


def read_failure(exc: BaseException) -> Dict[str, Any]:
    """What a recording keeps of an exception that ended reading a body: the words of its chain (what the
    reader's TransportError is made of), whether it was a timeout, and the OS error under it (errno, strerror)."""
    chain = _chain(exc)
    failure = {"words": " ".join(str(e) for e in chain), "timeout": _is_timeout(exc)}  # type: Dict[str, Any]
    error = next((e for e in chain if isinstance(e, OSError) and isinstance(getattr(e, "errno", None), int)
                  and isinstance(getattr(e, "strerror", None), str)), None)
    if error is not None:
        failure["errno"], failure["strerror"] = error.errno, error.strerror
    return failure


def replayed_failure(failure: Mapping[str, Any]) -> Exception:
    """The exception a replayed body raises where the recorded one failed: read by the reader as the recorded
    one was (the same TransportError: timeout or not, the same words, the same OS error)."""
    import urllib3

    words = str(failure.get("words") or "the recorded connection failed here")
    if failure.get("timeout"):
        return urllib3.exceptions.ReadTimeoutError(None, None, words)  # type: ignore[arg-type]
    errno, strerror = failure.get("errno"), failure.get("strerror")
    if isinstance(errno, int) and not isinstance(errno, bool) and isinstance(strerror, str):
        return urllib3.exceptions.ProtocolError(words, OSError(errno, strerror))  # (ECONNRESET: ConnectionResetError)
    return urllib3.exceptions.ProtocolError(words)



class _ReplayBody(object):
    """A recorded body served in ``chunk_size`` pieces, with the file-like face requests expects."""

    chunked = True  # transport._chunks then reads through iter_content -> stream()

    def __init__(self, data: bytes, chunk_size: int, failure: Optional[Mapping[str, Any]] = None) -> None:
        self._data = data
        self._pos = 0
        self._chunk = max(1, chunk_size)
        self._failure = failure  # how the recorded read failed after the recorded bytes (None: it ended)
        self.closed = False

    def read(self, amt: Optional[int] = None, decode_content: Any = None, **_: Any) -> bytes:
        if self.closed:
            return b""
        if self._failure is not None and self._pos >= len(self._data) and amt != 0:
            raise replayed_failure(self._failure)
        end = len(self._data) if amt is None or amt < 0 else min(len(self._data), self._pos + amt)
        piece = self._data[self._pos:end]
        self._pos = end
        return piece

    def read1(self, amt: Optional[int] = None, **_: Any) -> bytes:
        return self.read(self._chunk if amt is None or amt < 0 else min(amt, self._chunk))

    def stream(self, amt: Optional[int] = None, decode_content: Any = None) -> Iterator[bytes]:
        while True:
            piece = self.read1(amt)
            if not piece:
                return
            yield piece

    def close(self) -> None:
        self.closed = True

    def release_conn(self) -> None:
        pass


def _request_secrets(request: Any) -> List[str]:
    """What a recording scrubs from a prepared request's exchange (and a replay from the request it compares):
    every header value but the public ones', the URL's credentials, the body's MCP credentials, and the values
    the caller's extra_body holds under fields named like a credential (the request agenthub is sending now)."""
    named = [s for s in getattr(_local, "secrets", None) or () if isinstance(s, str)]
    return secret_values(request.headers, named) + request_url_secrets(request.url) + body_secrets(request.body)


class ReplayAdapter(requests.adapters.BaseAdapter):
    """Answers every request from a cassette; nothing reaches the network.

    A request the cassette does not hold raises its error (agenthub.testing's
    ReplayMismatchError) out of ``session.request``.
    """

    def __init__(self, cassette: Any, chunk_size: Optional[int] = None) -> None:
        super(ReplayAdapter, self).__init__()
        self.cassette = cassette
        self.chunk_size = chunk_size

    def send(self, request: Any, stream: bool = False, timeout: Any = None, verify: Any = True, cert: Any = None,
             proxies: Any = None) -> requests.Response:
        import http.client

        # the credentials recording scrubs, scrubbed from the request before it is compared (a recorded *** is
        # whatever credential the replaying request carries there)
        secrets = _request_secrets(request)
        answer = self.cassette.play(request.method, request.url, request.body, secrets)
        status, headers, body = answer[:3]
        failure = answer[3] if len(answer) > 3 else None
        response = requests.Response()
        response.status_code = status
        response.reason = http.client.responses.get(status, "")
        response.headers = requests.structures.CaseInsensitiveDict(headers)
        response.raw = _ReplayBody(body, self.chunk_size or _READ_SIZE, failure)
        response.url = request.url
        response.request = request
        response.connection = self
        response.encoding = requests.utils.get_encoding_from_headers(response.headers)
        return response

    def close(self) -> None:
        pass


class _TeeBody(object):
    """Wraps urllib3's response body: every byte handed to the reader is also kept for the cassette."""

    def __init__(self, raw: Any, done: Callable[..., None], codings: Optional[List[str]] = None) -> None:
        self._raw = raw
        self._done = done
        self._parts = []  # type: list
        self._finished = False
        self._failure = None  # type: Optional[Dict[str, Any]]  # how reading failed (kept: replayed as it was)
        # the reader takes gzip/deflate bodies as sent and inflates them itself; the cassette keeps them
        # inflated (it stores no content coding)
        codings = codings or []
        self._inflate = _Layers(codings) if codings and all(c in _CODINGS for c in codings) else None

    def __getattr__(self, name: str) -> Any:  # chunked, release_conn, _original_response, _fp, ...
        return getattr(self._raw, name)

    def _keep(self, data: Any, ended: bool, decoded: Any = True) -> Any:
        if data:
            if self._inflate is not None and decoded is False:
                self._parts.extend(self._inflate.feed(bytes(data)))
            else:
                self._parts.append(bytes(data))
        if ended:
            self._finish()
        return data

    def _finish(self) -> None:
        if not self._finished:
            self._finished = True
            data = b"".join(self._parts)
            if self._failure is None:
                self._done(data)
            else:
                self._done(data, self._failure)

    def _failed(self, exc: BaseException) -> None:
        if self._failure is None and not self._finished and isinstance(exc, Exception):
            self._failure = read_failure(exc)

    def read(self, amt: Optional[int] = None, *args: Any, **kwargs: Any) -> bytes:
        try:
            data = self._raw.read(amt, *args, **kwargs)
        except Exception as exc:
            self._failed(exc)
            raise
        return self._keep(data, amt is None or not data, kwargs.get("decode_content", args[0] if args else None))

    @property
    def read1(self) -> Callable[..., bytes]:
        # only where the body has one (urllib3 2.x): on urllib3 1.x the reader must take the path it takes
        # without a recorder (stream()), not a read1 that fails under it
        if not hasattr(self._raw, "read1"):
            raise AttributeError("read1")
        return self._read1

    def _read1(self, amt: Optional[int] = None, *args: Any, **kwargs: Any) -> bytes:
        try:
            data = self._raw.read1(amt, *args, **kwargs)
        except Exception as exc:
            self._failed(exc)
            raise
        return self._keep(data, not data, kwargs.get("decode_content", args[0] if args else None))

    def stream(self, amt: Optional[int] = 2 ** 16, decode_content: Any = None) -> Iterator[bytes]:
        chunks = self._raw.stream(amt, decode_content=decode_content)
        while True:
            try:
                chunk = next(chunks)
            except StopIteration:
                break
            except Exception as exc:
                self._failed(exc)
                raise
            self._keep(chunk, False, decode_content)
            yield chunk
        self._finish()

    def close(self) -> None:
        try:
            self._finish()  # the reader stopped (at its terminal marker, or early): what it read is kept
        finally:
            self._raw.close()


class RecordingAdapter(requests.adapters.HTTPAdapter):
    """Sends for real (as requests' HTTPAdapter does) and writes each exchange to a cassette.

    The exchange is written when its body was read to the end or closed: the bytes
    the reader actually consumed, and the request's credentials (read from its auth
    headers) to scrub from everything written.  ``inner``: the adapter that sends (a
    session's own, kept as it was: its pools, TLS settings, retries); None: this one.
    """

    def __init__(self, cassette: Any, inner: Any = None, **kwargs: Any) -> None:
        super(RecordingAdapter, self).__init__(**kwargs)
        self.cassette = cassette
        self.inner = inner

    def send(self, request: Any, stream: bool = False, timeout: Any = None, verify: Any = True, cert: Any = None,
             proxies: Any = None) -> requests.Response:
        sender = self.inner.send if self.inner is not None else super(RecordingAdapter, self).send
        response = sender(request, stream=stream, timeout=timeout, verify=verify, cert=cert, proxies=proxies)
        # every header value but the public ones (content type, user agent, ...) is a secret: a
        # gateway's own auth header, a cookie, whatever the caller added
        secrets = _request_secrets(request)
        method, url, body = request.method, request.url, request.body
        status, headers = response.status_code, dict(response.headers)

        def done(data: bytes, failure: Optional[Dict[str, Any]] = None) -> None:
            try:
                if failure is None:
                    self.cassette.record(method, url, body, status, headers, data, secrets)
                else:
                    self.cassette.record(method, url, body, status, headers, data, secrets, read_error=failure)
            except Exception as exc:  # (disk full, the folder removed): said, where the reader would swallow it
                logging.getLogger("agenthub").error(
                    "recording: the exchange %s %s was not written to the cassette %s (%s: %s)", method,
                    redact_url(url.split("?", 1)[0]), getattr(self.cassette, "folder", None) or "in memory",
                    type(exc).__name__, scrub_free_text(str(exc), secrets))

        response.raw = _TeeBody(response.raw, done, _codings(response))
        return response

    def close(self) -> None:
        try:
            if self.inner is not None:
                self.inner.close()
        finally:
            super(RecordingAdapter, self).close()


def cassette_shareable(session: Any) -> bool:
    """Whether ``session`` is one of agenthub.testing's that a fallback built from a model name shares: every
    request it sends is answered by a cassette (a replay), or it records through agenthub's own adapters and
    carries no credential of its own (nothing of one host's reaches another; a session of yours recorded
    through, whose adapters may add their own, is never shared)."""
    adapters = list((getattr(session, "adapters", None) or {}).values())
    if not adapters:
        return False
    if all(isinstance(a, ReplayAdapter) for a in adapters):
        return True
    return all(isinstance(a, RecordingAdapter) and a.inner is None for a in adapters) and not session_secrets(session)


def replay_session(cassette: Any, chunk_size: Optional[int] = None) -> requests.Session:
    """A requests.Session whose every request is answered from ``cassette`` (http and https alike)."""
    session = requests.Session()
    session.trust_env = False  # no proxy or netrc lookups: nothing leaves the process
    adapter = ReplayAdapter(cassette, chunk_size)
    session.mount("https://", adapter)
    session.mount("http://", adapter)
    return session


def recording_session(cassette: Any, session: Optional[requests.Session] = None) -> requests.Session:
    """``session`` (or a new one) sending for real and recording every exchange into ``cassette``.  Each adapter
    ``session`` has mounted (its own for a host, TLS or retry settings) goes on sending, wrapped by a recorder: none
    is replaced, and none sends past the recording."""
    if session is None:
        session = requests.Session()
        adapter = RecordingAdapter(cassette, pool_connections=10, pool_maxsize=POOL_MAXSIZE)
        session.mount("https://", adapter)
        session.mount("http://", adapter)
        return session
    for prefix, inner in list(session.adapters.items()):
        if isinstance(inner, RecordingAdapter):
            inner = inner.inner if inner.inner is not None else None  # (recorded into this cassette now)
        session.mount(prefix, RecordingAdapter(cassette, inner, pool_connections=10, pool_maxsize=POOL_MAXSIZE))
    for prefix in ("https://", "http://"):
        if prefix not in session.adapters:
            session.mount(prefix, RecordingAdapter(cassette, pool_connections=10, pool_maxsize=POOL_MAXSIZE))
    return session


def pin_environment(session: requests.Session, url: str) -> None:
    """Read what the environment says for requests to ``url`` once, into ``session``, instead of on every
    request (requests re-reads it per request when ``trust_env``: the proxy variables and ``no_proxy``,
    walked over the whole of ``os.environ`` twice, the CA bundle variables and ~/.netrc).  For a session
    whose requests all go to ``url`` (an MCP server's endpoint): the same proxies, CA bundle and netrc
    credentials, as the environment was when the session began."""
    if not session.trust_env:
        return
    settings = session.merge_environment_settings(url, {}, None, None, None)
    auth = requests.utils.get_netrc_auth(url) if session.auth is None else None
    session.trust_env = False
    session.proxies = dict(settings.get("proxies") or {})
    if settings.get("verify") not in (None, True):
        session.verify = settings["verify"]
    if auth:
        session.auth = auth


#: the variables requests reads a proxy from (any case)
_PROXY_ENV = ("http_proxy", "https_proxy", "all_proxy")


def session_secrets(session: Any) -> List[str]:
    """What requests adds from ``session`` to every request, never to be shown (a server or a proxy may echo
    it in an error page): its headers' values but the public ones', its ``auth`` (user:password and the
    ``Basic`` value made of it), and the credentials of the proxies it may send through (its ``proxies``,
    and the environment's when it trusts it: each ``user:password@`` and its ``Proxy-Authorization``)."""
    found = secret_values(getattr(session, "headers", None) or {})
    auth = getattr(session, "auth", None)
    pair = auth if isinstance(auth, tuple) else (getattr(auth, "username", None), getattr(auth, "password", None))
    if len(pair) == 2 and all(isinstance(part, (str, bytes)) for part in pair):
        user, password = (part.decode("latin-1") if isinstance(part, bytes) else part for part in pair)
        found.extend(secret_values(None, [password, "{}:{}".format(user, password)]))
        try:  # requests' Basic value (latin-1, as it encodes a str)
            found.extend(secret_values(None, [base64.b64encode("{}:{}".format(user, password).encode("latin-1"))
                                              .decode("ascii")]))
        except UnicodeEncodeError:
            pass
    proxies = [value for value in (getattr(session, "proxies", None) or {}).values() if isinstance(value, str)]
    if getattr(session, "trust_env", False):
        proxies.extend(value for name, value in os.environ.items() if name.lower() in _PROXY_ENV)
    found.extend(secret for proxy in proxies for secret in url_secrets(proxy))
    return sorted(set(found), key=len, reverse=True)
