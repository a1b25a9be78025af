"""RedisStore: rows on a Redis server (5 or newer), shared by every machine that reaches it.

The only module of agenthub that imports ``redis`` (the optional extra ``redis``: ``pip install ".[redis]"``), and only
when a ``redis://`` or ``rediss://`` store is opened.  Every update is one Lua script run by the server
(atomic: no other client's command runs in between), and every time is the server's ``TIME``, never a
worker's clock.

URL: ``redis://[[user]:password@]host[:port][/db][?timeout=S&wait=S]`` (``rediss://`` for TLS).
``timeout`` (5 s): the socket timeout of each command.  ``wait`` (0 s): how long a command keeps
retrying while the server is unreachable.  When the server cannot be reached (at open, or mid-run),
the limiter and the budget raise ``StoreError`` (retryable) and the request is not sent: the default
fails closed, never letting a call through unpaced or unbudgeted.  ``?wait=30`` rides out a restart
of up to 30 s instead.  A budget hold whose settlement could not reach the server stays renewed and
the process's lease thread settles it once the server answers.  A script retried after its reply was lost
(under ``?wait=``) counts once: a hold, a settlement and a charge are each done once.

A budget's rows must not vanish: the store keeps an epoch (``agenthub:1:epoch``, written when the store is
first opened, with a mark per budget account), and every budget script refuses (StoreError) when the epoch
is gone or new (a restart without persistence, a failover, a FLUSHALL) or an account's rows are gone while
its mark stays (an eviction), instead of starting the account again from $0.  The first budget operation
asks the server for its eviction policy and persistence and logs a warning when they may lose rows.  The
scripts are package data: ``agenthub/stores/lua/*.lua`` (each run after ``lib.lua``).
"""

import logging
import os
import pkgutil
import secrets
import threading
import time
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple
from urllib.parse import parse_qsl, urlsplit

from .._redact import redact_url, scrub_text, shown_url, url_secrets
from ..errors import ConfigError
from .base import SCHEMA_VERSION, Store, StoreError, let_go
from .journal import check_entries, lost_lease

__all__ = ["RedisStore", "parse_redis_url", "lua_source"]

logger = logging.getLogger("agenthub.stores")

PREFIX = "agenthub:{}:".format(SCHEMA_VERSION)
SCHEMA_KEY = "agenthub:schema"

#: the store's epoch hash: its ``epoch`` (a random id written when the store is first opened) and a field per
#: budget account that exists; a budget script whose process opened another epoch, or whose account's rows are
#: gone, refuses (StoreError) instead of starting again from $0
EPOCH_KEY = PREFIX + "epoch"
#: the Lua scripts (package data: ``agenthub/stores/lua/NAME.lua``, each run after ``lib.lua``)
SCRIPT_NAMES = ("limiter_reserve", "limiter_adjust", "limiter_pause", "limiter_pauses", "limiter_reslot",
                "budget_hold", "budget_finish", "budget_renew", "budget_charge", "budget_totals", "cache_put",
                "journal_claim", "journal_open", "journal_append", "journal_release")


def lua_source(name: str) -> str:
    """The text of ``agenthub/stores/lua/<name>.lua`` (package data)."""
    data = pkgutil.get_data(__package__ or "agenthub.stores", "lua/{}.lua".format(name))
    if data is None:  # pragma: no cover - a loader without get_data
        raise ConfigError("agenthub's Lua script {!r} is missing from the installed package".format(name))
    return data.decode("utf-8")


#: the error replies that say the server did nothing and may do it soon: retried as an unreachable server is (up to
#: the URL's ``?wait=``), then a retryable StoreError
_TRANSIENT = {
    "READONLY": "the server is a replica now (a failover?)",
    "MASTERDOWN": "the replica lost its primary",
    "TRYAGAIN": "the server asks to try again",
    "BUSY": "the server is busy running another client's script",
    "NOREPLICAS": "not enough replicas to take a write",
    "LOADING": "the server is loading its data",
}


class _ErrorReply(str):
    """An error reply (RESP ``-``) read by ``_read_reply``: its text."""


#: the start of the journal append's reply when it wrote (``{'ok', the next number}``)
_OK_REPLY = b"*2\r\n$2\r\nok\r\n:"


def _read_reply(sock: Any) -> Any:
    """One RESP2 reply (or RESP3 of the same kinds) read from ``sock`` (a command's: nothing may follow it): bulk
    strings as bytes, integers as int, a nil as None, an error as ``_ErrorReply``; OSError when the socket closed,
    ValueError when the bytes are no reply or more than one."""
    data = sock.recv(65536)
    if data[:13] == _OK_REPLY and data[-2:] == b"\r\n" and data[13:-2].isdigit():
        return [b"ok", int(data[13:-2])]  # (an append's reply, whole: what _parse_reply makes of it)
    while True:
        if not data:
            raise OSError("the server closed the connection")
        try:
            value, end = _parse_reply(data, 0)
        except IndexError:  # (not all of it yet)
            more = sock.recv(65536)
            if not more:
                raise OSError("the server closed the connection")
            data += more
            continue
        if end != len(data):
            raise ValueError("more than one reply")
        return value


def _parse_reply(data: bytes, at: int) -> Tuple[Any, int]:
    """The RESP2 value at ``data[at:]`` and where it ends; IndexError when it is not all there."""
    end = data.find(b"\r\n", at)
    if end < 0:
        raise IndexError(at)
    kind, line, at = data[at], data[at + 1:end], end + 2
    if kind == 42:  # * an array
        count = int(line)
        if count < 0:
            return None, at
        items = []
        for _ in range(count):
            value, at = _parse_reply(data, at)
            items.append(value)
        return items, at
    if kind == 36:  # $ a bulk string
        size = int(line)
        if size < 0:
            return None, at
        if len(data) < at + size + 2:
            raise IndexError(at)
        if data[at + size:at + size + 2] != b"\r\n":
            raise ValueError("a bulk string of another length")
        return data[at:at + size], at + size + 2
    if kind == 58:  # : an integer
        return int(line), at
    if kind == 43:  # + a simple string
        return line, at
    if kind == 95:  # _ RESP3's null (redis-py 8 says HELLO 3 by default: the script's replies read the same)
        return None, at
    if kind == 45:  # - an error (its code "ERR " dropped, as redis-py drops it)
        text = line.decode("utf-8", "replace")
        return _ErrorReply(text[4:] if text.startswith("ERR ") else text), at
    raise ValueError("not a RESP2 reply")


def parse_redis_url(url: str) -> Tuple[str, float, float]:
    """(the URL for redis-py without agenthub's options, socket timeout, wait); ConfigError when malformed."""
    shown = shown_url(url)  # (a malformed one too: its password never shows)
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise ConfigError("store {!r}: not a valid redis:// URL (bad port?)".format(shown[:120]))
    if parts.scheme not in ("redis", "rediss") or not parts.hostname:
        raise ConfigError("store {!r}: a Redis store is redis://host[:port][/db] or rediss://...".format(shown[:120]))
    if port is not None and not 0 < port < 65536:
        raise ConfigError("store {!r}: bad port".format(shown[:120]))
    db = parts.path.strip("/")
    if db and not db.isdigit():
        raise ConfigError("store {!r}: the database is a number (redis://host:port/0), got {!r}".format(
            shown[:120], db[:20]))
    timeout, wait = 5.0, 0.0
    for name, value in parse_qsl(parts.query, keep_blank_values=True):
        try:
            number = float(value)
        except ValueError:
            number = -1.0
        if name not in ("timeout", "wait") or not 0 <= number < 86400 or (name == "timeout" and number == 0):
            raise ConfigError("store {!r}: unknown or bad option {!r} (timeout=SECONDS, wait=SECONDS)".format(
                shown[:120], name[:40]))
        if name == "timeout":
            timeout = number
        else:
            wait = number
    base = "{}://{}{}".format(parts.scheme, parts.netloc, "/" + db if db else "")
    return base, timeout, wait


def _entry_text(row: Any) -> str:
    """A journal entry as Redis gives it back: its text; bytes that are not UTF-8 (written by something else) as
    text that is no JSON, which a resume refuses as a corrupt entry (not a UnicodeDecodeError)."""
    if not isinstance(row, bytes):
        return row  # type: ignore[no-any-return]
    try:
        return row.decode("utf-8")
    except UnicodeDecodeError:
        return "\ufffd" + row.decode("utf-8", "replace")


class RedisStore(Store):
    def __init__(self, url: str, *, client: Any = None) -> None:
        """``client``: a ready ``redis.Redis`` (or ``fakeredis.FakeRedis``) to use instead of connecting."""
        self._raw_url = url
        self.url = redact_url(url)
        self._shown = self.url[:120]  # type: str
        base, self.timeout, self.wait = parse_redis_url(url)
        try:
            import redis
        except ImportError:
            raise ConfigError("store {!r} needs the redis package: pip install '.[redis]' (from agenthub's checkout)".format(self._shown))
        self._redis_errors = (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError)
        self._response_error = redis.exceptions.ResponseError
        self._error = redis.exceptions.RedisError
        self._no_script = redis.exceptions.NoScriptError
        self._transient_classes = tuple((getattr(redis.exceptions, name), code) for name, code in (
            ("ReadOnlyError", "READONLY"), ("MasterDownError", "MASTERDOWN"), ("TryAgainError", "TRYAGAIN"))
            if hasattr(redis.exceptions, name))
        try:
            self._client = client if client is not None else redis.Redis.from_url(base, socket_timeout=self.timeout,
                                                socket_connect_timeout=self.timeout, decode_responses=False)
        except (ValueError, self._error) as exc:
            raise ConfigError("store {!r}: {}".format(self._shown, type(exc).__name__))
        lib = lua_source("lib")
        self._scripts = {name: self._client.register_script(lib + lua_source(name)) for name in SCRIPT_NAMES}
        self._epoch = b""
        self._checked = False
        # the journal's appends (a run's writes, two or three a turn) go on a connection of this thread's own,
        # made from the client's pool settings (client= given: through the client); see _run_own
        self._own_pool = getattr(self._client, "connection_pool", None) if client is None else None
        self._own_local = threading.local()
        self._own_lock = threading.Lock()
        self._own = []  # type: List[Tuple[threading.Thread, Any]]  # (its thread, the connection)
        self._own_pid = os.getpid()
        self._own_pieces = {}  # type: Dict[Tuple[str, str], Tuple[bytes, bytes, bytes]]  # (run_id, owner) -> packed
        self._setup()

    def __repr__(self) -> str:
        return "RedisStore({!r})".format(self.url)

    def __getstate__(self) -> Any:
        return {"url": self._raw_url}

    def __setstate__(self, state: Any) -> None:
        self.__init__(state["url"])  # type: ignore[misc]

    def close(self) -> None:
        let_go(self)  # (what its budgets still owe: tried once more, then let go)
        with self._own_lock:
            own, self._own = self._own, []
            self._own_local = threading.local()
        for _, connection in own:
            self._drop(connection)
        try:
            self._client.close()
        except Exception:  # noqa: BLE001 - closing never raises
            pass

    @staticmethod
    def _drop(connection: Any) -> None:
        try:
            connection.disconnect()  # (redis-py only closes, never shuts down, a socket another process made)
        except Exception:  # noqa: BLE001 - closing never raises
            pass

    def _own_connection(self) -> Any:
        """This thread's own connection (connected on first use), made as the client's pool makes one; the
        connections of threads that ended are closed when another is made (as SQLiteStore's)."""
        if os.getpid() != self._own_pid:  # a forked child: the parent's connections are not ours to use
            with self._own_lock:
                self._own_pid, self._own, self._own_local = os.getpid(), [], threading.local()
        connection = getattr(self._own_local, "connection", None)
        if connection is None:
            pool = self._own_pool
            connection = pool.connection_class(**pool.connection_kwargs)  # type: ignore[union-attr]
            self._own_local.connection = connection
            with self._own_lock:
                ended = [c for t, c in self._own if not t.is_alive()]
                self._own = [(t, c) for t, c in self._own if t.is_alive()]
                self._own.append((threading.current_thread(), connection))
            for old in ended:
                self._drop(old)
        return connection

    def _run_own(self, name: str, keys: List[str], args: List[Any]) -> Any:
        """``_run`` of a journal append on this thread's own connection: one EVALSHA written and its reply read,
        without the pool's check-out and release (a lock, a poll of the socket, its bookkeeping) and the client's
        retry wrapper.  When that connection fails (the server closed it while idle, restarted, or lost its
        scripts: NOSCRIPT), the append goes the client's way instead (its reconnect, its retries, ``?wait=``),
        as any command did before; the script's own errors (the fence's answers are replies, not errors) are
        read as ``_run`` reads them."""
        if self._own_pool is None:
            return self._run(name, keys, args)
        script = self._scripts[name]
        try:
            connection = self._own_connection()
            connection.send_packed_command(connection.pack_command("EVALSHA", script.sha, len(keys), *(keys + args)),
                                           check_health=False)
            return connection.read_response()
        except self._no_script:
            pass  # (the client's way loads it again)
        except self._response_error as exc:
            if self._transient(exc) is None:
                raise self._refused(exc) from None
            self._drop(connection)  # (the client's way retries it, up to ?wait=)
        except self._redis_errors:
            pass  # (redis-py closed the connection: it connects again on its next use)
        return self._run(name, keys, args)

    def _append_own(self, run_id: str, owner: str, seq: int, entries: Sequence[str], ttl: Optional[float],
                    release: bool) -> Any:
        """The ``journal_append`` script's reply to the append of ``entries``: one EVALSHA packed here (the pieces
        a run repeats packed once) and written on this thread's own connection's socket, its reply read from it
        (RESP2, as redis-py reads it: bulk strings as bytes, integers as int); ``_run_own`` where that socket is
        not at hand (a redis-py that keeps it elsewhere) and, as before, the client's way when the connection fails
        (closed, timed out, a reply out of step: dropped and connected again on the next use) or the server lost
        the script (NOSCRIPT)."""
        pieces = self._own_pieces.get((run_id, owner))
        if pieces is None:
            pieces = self._append_pieces(run_id, owner)
        head, tail, tail_release = pieces
        number = str(seq).encode()
        ttl_text = b"" if ttl is None else repr(float(ttl)).encode()
        packed = [b"*%d\r\n" % (11 + len(entries)), head, b"$%d\r\n%s\r\n$%d\r\n%s\r\n" % (
            len(number), number, len(ttl_text), ttl_text), tail_release if release else tail]
        for entry in entries:
            data = entry.encode("utf-8")
            packed.append(b"$%d\r\n" % len(data))
            packed.append(data)
            packed.append(b"\r\n")
        connection = None
        if self._own_pool is not None:
            try:
                connection = self._own_connection()
                sock = getattr(connection, "_sock", False)  # type: Any
                if sock is None:
                    connection.connect()
                    sock = getattr(connection, "_sock", False)
                if sock is not False and sock is not None:
                    sock.sendall(b"".join(packed))
                    reply = _read_reply(sock)
                    if not isinstance(reply, _ErrorReply):
                        return reply
                    if self._transient(reply) is not None:
                        self._drop(connection)  # (the client's way retries it, up to ?wait=)
                    elif not reply.startswith("NOSCRIPT"):
                        raise self._refused(reply)
                    connection = None  # (the server lost its scripts: the client's way loads it again)
            except (OSError, ValueError, IndexError, self._error):
                if connection is not None:
                    self._drop(connection)  # (out of step or closed: connected again on the next use)
                    connection = None
        keys = self._journal_keys(run_id) + [PREFIX + "journals"]
        args = [owner, int(seq), "" if ttl is None else repr(float(ttl)), run_id,
                "1" if release else ""] + list(entries)  # type: List[Any]
        if connection is not None:  # (a redis-py without the socket at hand: its own calls)
            return self._run_own("journal_append", keys, args)
        return self._run("journal_append", keys, args)

    def _append_pieces(self, run_id: str, owner: str) -> Tuple[bytes, bytes, bytes]:
        """The packed pieces of a run's appends that do not change from one to the next: EVALSHA, the script's
        sha, the keys and the owner (``head``); the run_id and the release flag (``tail``, ``tail_release``)."""
        def bulk(value: str) -> bytes:
            data = value.encode("utf-8")
            return b"$%d\r\n%s\r\n" % (len(data), data)

        keys = self._journal_keys(run_id) + [PREFIX + "journals"]
        head = b"".join([bulk("EVALSHA"), bulk(self._scripts["journal_append"].sha), bulk("3")] +
                        [bulk(k) for k in keys] + [bulk(owner)])
        pieces = (head, bulk(run_id) + bulk(""), bulk(run_id) + bulk("1"))
        if len(self._own_pieces) >= 64:
            self._own_pieces.clear()
        self._own_pieces[(run_id, owner)] = pieces
        return pieces

    def _call(self, what: Any, *args: Any, **kwargs: Any) -> Any:
        return self._attempt(False, what, *args, **kwargs)

    def _read(self, what: Any, *args: Any, **kwargs: Any) -> Any:
        return self._attempt(True, what, *args, **kwargs)

    def _attempt(self, reading: bool, what: Any, *args: Any, **kwargs: Any) -> Any:
        deadline = time.monotonic() + self.wait
        while True:
            try:
                return what(*args, **kwargs)
            except self._redis_errors as exc:
                if time.monotonic() < deadline:
                    time.sleep(min(0.5, max(0.0, deadline - time.monotonic())))
                    continue
                unsent = "connecting" in str(exc)  # (redis-py's words for a connection never made)
                error = StoreError("store {!r} is unreachable ({}): {}; the store URL's ?wait=SECONDS retries "
                                   "that long".format(self._shown, type(exc).__name__,
                                                      "it could not be read" if reading else "nothing was sent"
                                                      if unsent else "its answer was lost (it may have been done)"),
                                   retryable=True)
                if unsent:
                    error.__dict__["_agenthub_unsent"] = True  # (not a field: the budget has nothing to undo)
                raise error
            except self._response_error as exc:
                code = self._transient(exc)
                if code is None:
                    raise self._refused(exc) from None  # (redis-py's error holds the server's words unscrubbed)
                if code == "READONLY":
                    self._reconnect()  # (a failover: the host's name may lead to the new primary now)
                if time.monotonic() < deadline:
                    time.sleep(min(0.5, max(0.0, deadline - time.monotonic())))
                    continue
                raise StoreError("store {!r} cannot do it now ({}: {}): nothing was done; the store URL's "
                                 "?wait=SECONDS retries that long".format(self._shown, code, _TRANSIENT[code]),
                                 retryable=True)
            except self._error as exc:
                raise StoreError("store {!r}: {}".format(self._shown, type(exc).__name__))

    def _transient(self, exc: Any) -> Optional[str]:
        """The code of an error reply that says the server did nothing and may soon do it (``_TRANSIENT``), else
        None."""
        for kind, code in self._transient_classes:
            if isinstance(exc, kind):
                return code
        word = str(exc).split(" ", 1)[0]
        return word if word in _TRANSIENT else None

    def _reconnect(self) -> None:
        """Close the client's idle connections (the next command connects anew; never one another thread is using)
        and this thread's own."""
        try:
            self._client.connection_pool.disconnect(inuse_connections=False)
        except Exception:  # noqa: BLE001 - closing never raises (a pool without that choice: left as it is)
            pass
        connection = getattr(self._own_local, "connection", None)
        if connection is not None:
            self._drop(connection)

    def _refused(self, exc: Any) -> StoreError:
        """The StoreError of an error reply (a script's AGENTHUB_ error, or a key of another type); the URL's
        password scrubbed from the server's words (a server that refuses AUTH as an unknown command echoes it)."""
        text = scrub_text(str(exc), url_secrets(self._raw_url))
        if "AGENTHUB_CORRUPT" in text:
            detail = text.split("AGENTHUB_CORRUPT", 1)[1].split("script:", 1)[0].strip(" .")
            return StoreError("store {!r}: {}: refusing it".format(self._shown, detail[:200]))
        if "AGENTHUB_LOST" in text:
            detail = text.split("AGENTHUB_LOST", 1)[1].split("script:", 1)[0].strip(" .")
            return StoreError(
                "store {!r}: {}: refusing to start the budget again from $0. A budget needs a Redis that "
                "keeps its rows (persistence, maxmemory-policy noeviction, or a database apart from the "
                "response cache); a store opened anew starts from what the server holds now".format(
                    self._shown, detail[:200]))
        if "WRONGTYPE" in text:
            return StoreError("store {!r} refused the operation ({}): a key holds data agenthub did not "
                              "write?".format(self._shown, text[:160]))
        return StoreError("store {!r} refused the operation ({}): nothing was done".format(self._shown, text[:160]))

    def _run(self, name: str, keys: List[str], args: List[Any], reading: bool = False) -> Any:
        return self._attempt(reading, self._scripts[name], keys=keys, args=args)

    def _setup(self) -> None:
        found = self._call(self._client.get, SCHEMA_KEY)
        if found is None:
            self._call(self._client.set, SCHEMA_KEY, str(SCHEMA_VERSION), nx=True)
            found = self._call(self._client.get, SCHEMA_KEY)
        if found != str(SCHEMA_VERSION).encode():
            raise StoreError("store {!r} holds agenthub rows of schema {!r} (this agenthub reads schema {}): "
                             "refusing it; use another database".format(
                                 self._shown, found[:20] if isinstance(found, bytes) else found, SCHEMA_VERSION))
        self._call(self._client.hsetnx, EPOCH_KEY, "epoch", secrets.token_hex(16))
        epoch = self._call(self._client.hget, EPOCH_KEY, "epoch")
        self._epoch = epoch if isinstance(epoch, bytes) else b""

    def _check_server(self) -> None:
        """Once per store, before its first budget operation: warn when the server may lose a budget's rows
        (no persistence, or a maxmemory policy that evicts any key).  The budget's scripts refuse such a loss
        (StoreError) when it happens; this says so beforehand.  A server that hides CONFIG (managed Redis) is
        not asked."""
        self._checked = True
        try:
            config = {}  # type: Dict[str, str]
            for name in ("maxmemory-policy", "appendonly", "save"):
                found = self._client.config_get(name)
                for k, v in dict(found or {}).items():
                    name_text = k.decode() if isinstance(k, bytes) else str(k)
                    config[name_text] = v.decode() if isinstance(v, bytes) else str(v)
        except self._error:
            return
        policy = config.get("maxmemory-policy", "")
        if policy.startswith("allkeys"):
            logger.warning("store %r evicts any key (maxmemory-policy %s): a budget's rows may be evicted, and the "
                           "budget then refuses every request (StoreError); give budgets a Redis with noeviction "
                           "(or volatile-*) or a database apart from the response cache", self._shown, policy)
        if config.get("appendonly", "yes") == "no" and config.get("save", "x").strip() == "":
            logger.warning("store %r keeps nothing on disk (no RDB save, no AOF): a restart loses the budgets, "
                           "which then refuse every request (StoreError); turn on persistence for budgets",
                           self._shown)

    @staticmethod
    def _f(value: Any) -> float:
        return float(value.decode() if isinstance(value, bytes) else value)

    # -- the limiter ------------------------------------------------------------------------------------
    def limiter_reserve(self, key: str, rpm: Optional[float], tpm: Optional[float], tokens: int) -> float:
        return self._f(self._run("limiter_reserve", [PREFIX + "limiter:" + key],
                                 [repr(float(rpm or 0)), repr(float(tpm or 0)), int(tokens)]))

    def limiter_adjust(self, key: str, seconds: float) -> None:
        self._run("limiter_adjust", [PREFIX + "limiter:" + key], [repr(float(seconds))])

    def limiter_pause(self, key: str, seconds: float, endpoint: str = "") -> bool:
        return bool(self._run("limiter_pause", [PREFIX + "limiter:" + key], [repr(float(seconds)), endpoint]))

    def limiter_pauses(self, key: str) -> Dict[str, float]:
        flat = self._run("limiter_pauses", [PREFIX + "limiter:" + key], [])
        return {(flat[i].decode("utf-8", "replace") if isinstance(flat[i], bytes) else str(flat[i])): self._f(flat[i + 1])
                for i in range(0, len(flat) - 1, 2)}

    def limiter_reslot(self, key: str, rpm: float) -> float:
        return self._f(self._run("limiter_reslot", [PREFIX + "limiter:" + key], [repr(float(rpm))]))

    # -- the budget -------------------------------------------------------------------------------------
    def _budget_keys(self, key: str) -> List[str]:
        if not self._checked:
            self._check_server()
        return [PREFIX + "budget:" + key, PREFIX + "holds:" + key, EPOCH_KEY, PREFIX + "gone:" + key]

    def budget_hold(self, key: str, max_usd: float, needed: float, hold_id: str,
                    lease: Optional[float]) -> Tuple[bool, float]:
        ok, held = self._run("budget_hold", self._budget_keys(key),
                             [self._epoch, repr(float(max_usd)), repr(float(needed)), hold_id,
                              "-" if lease is None else repr(float(lease))])
        return bool(ok), self._f(held)

    def budget_finish(self, key: str, hold_id: str, needed: float, actual: Optional[float]) -> None:
        self._run("budget_finish", self._budget_keys(key),
                  [self._epoch, hold_id, repr(float(needed)), "-" if actual is None else repr(float(actual))])

    def budget_renew(self, key: str, hold_ids: Iterable[str], lease: float) -> None:
        self._run("budget_renew", self._budget_keys(key), [self._epoch] + [repr(float(lease))] + list(hold_ids))

    def budget_charge(self, key: str, usd: float) -> None:
        # (a mark of this charge, named once: the call retried under ?wait= after its reply was lost charges once)
        self._run("budget_charge", self._budget_keys(key) + [PREFIX + "charged:" + secrets.token_hex(16)],
                  [self._epoch, repr(float(usd)), str(int((2 * self.wait + 60) * 1000))])

    def budget_totals(self, key: str) -> Tuple[float, float, int]:
        spent, held, requests = self._run("budget_totals", self._budget_keys(key), [self._epoch], reading=True)
        return self._f(spent), self._f(held), int(requests)

    # -- the cache ----------------------------------------------------------------------------------------
    def cache_get(self, key: str) -> Optional[bytes]:
        value = self._read(self._client.get, PREFIX + "cache:" + key)
        return value if isinstance(value, bytes) else None

    def cache_put(self, key: str, value: bytes, ttl: Optional[float], max_bytes: int) -> None:
        # one index per size bound: a cache with a small max_bytes never evicts the entries of a cache with
        # another bound sharing the database (each bound counts the entries stored under it)
        self._run("cache_put", [PREFIX + "cache:" + key, "{}cacheindex:{:d}".format(PREFIX, int(max_bytes)),
                                "{}cachesizes:{:d}".format(PREFIX, int(max_bytes))],
                  [key, value, repr(float(ttl or 0)), int(max_bytes), PREFIX + "cache:"])

    def cache_delete(self, key: str) -> None:
        self._call(self._client.delete, PREFIX + "cache:" + key)

    # -- the journal (durable runs): a hash (lease, count, last write) and a list of entries per run -----------
    def _journal_keys(self, run_id: str, listed: bool = False) -> List[str]:
        """The run's keys: its hash and its list of entries (``<run_id>:entries``).  A run_id ending in
        ``:entries`` is refused (ConfigError; ``listed``: a run_id the index names, read as it is): its hash would be
        the entries of the run whose id it ends (its forget removed them, its writes failed with WRONGTYPE)."""
        if run_id.endswith(":entries") and not listed:
            raise ConfigError("run_id {!r}: a run_id ending in ':entries' names another run's entries on Redis: "
                              "choose another".format(run_id[:60]))
        return [PREFIX + "journal:" + run_id, PREFIX + "journal:" + run_id + ":entries"]

    def journal_claim(self, run_id: str, owner: str, lease: float = 30.0, ttl: Optional[float] = None) -> Optional[float]:
        left = self._run("journal_claim", self._journal_keys(run_id) + [PREFIX + "journals"],
                         [owner, repr(float(lease)), "" if ttl is None else repr(float(ttl)), PREFIX + "journal:"])
        return None if left is None else self._f(left)

    def journal_open(self, run_id: str, owner: str, lease: float = 30.0,
                     ttl: Optional[float] = None) -> Tuple[Optional[float], List[str]]:
        """The claim and, when it holds, the entries: one Lua call."""
        out = self._run("journal_open", self._journal_keys(run_id) + [PREFIX + "journals"],
                        [owner, repr(float(lease)), "" if ttl is None else repr(float(ttl)), PREFIX + "journal:"])
        if out[0] in (b"locked", "locked"):
            return self._f(out[1]), []
        return None, [_entry_text(row) for row in out[1:]]

    def journal_append(self, run_id: str, owner: str, seq: int, entry: str, ttl: Optional[float] = None) -> None:
        self.journal_append_many(run_id, owner, seq, [entry], ttl)

    def journal_append_many(self, run_id: str, owner: str, seq: int, entries: Sequence[str],
                            ttl: Optional[float] = None) -> None:
        self._append(run_id, owner, seq, entries, ttl, False)

    def journal_finish(self, run_id: str, owner: str, seq: int, entries: Sequence[str],
                       ttl: Optional[float] = None) -> None:
        """The last entries and the lease let go: one Lua call (nothing let go when the fence refuses)."""
        self._append(run_id, owner, seq, entries, ttl, True)

    def _append(self, run_id: str, owner: str, seq: int, entries: Sequence[str], ttl: Optional[float],
                release: bool) -> None:
        if not check_entries(run_id, entries):
            if release:
                self.journal_release(run_id, owner)
            return
        kind, value = self._append_own(run_id, owner, seq, entries, ttl, release)
        if kind == b"ok":
            return
        kind = kind.decode() if isinstance(kind, bytes) else kind
        if kind == "lost":
            raise lost_lease(run_id, "another" if int(value) else None)
        if kind == "seq":
            raise StoreError("the journal of run {!r}: entry {} written where entry {} is next (two writers?): "
                             "refusing it".format(run_id, seq, int(value)))

    def journal_entries(self, run_id: str, start: int = 0) -> List[str]:
        rows = self._read(self._client.lrange, self._journal_keys(run_id)[1], int(start), -1)
        return [_entry_text(row) for row in rows or ()]

    def journal_release(self, run_id: str, owner: str) -> None:
        self._run("journal_release", self._journal_keys(run_id)[:1], [owner])

    def journal_forget(self, run_id: str) -> bool:
        removed = self._call(self._client.delete, *self._journal_keys(run_id))
        self._call(self._client.zrem, PREFIX + "journals", run_id)
        return bool(removed)

    def journal_runs(self) -> List[Dict[str, Any]]:
        seconds, micros = self._read(self._client.time)
        now = self._f(seconds) + self._f(micros) / 1e6
        out = []
        for member in self._read(self._client.zrange, PREFIX + "journals", 0, -1) or ():
            run_id = member.decode("utf-8") if isinstance(member, bytes) else member
            meta = self._read(self._client.hmget, self._journal_keys(run_id, True)[0], "owner", "until", "updated",
                              "entries")
            if meta[3] is None:  # expired (or forgotten elsewhere): out of the index too
                self._call(self._client.zrem, PREFIX + "journals", run_id)
                continue
            entries = int(meta[3])
            if entries:
                out.append({"run_id": run_id, "entries": entries, "age": max(0.0, now - self._f(meta[2])),
                            "owned": meta[0] is not None and self._f(meta[1] or 0) > now})
        return sorted(out, key=lambda r: r["run_id"])
