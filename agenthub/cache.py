"""ResponseCache: answers replayed as streams, shared by processes (a directory or ``sqlite:///path``)
or machines (``redis://``).

::

    cache = agenthub.ResponseCache("~/.cache/agenthub-answers", ttl=24 * 3600)
    client = agenthub.AutoLLMClient("gpt-4.1-mini", cache=cache)
    client.response(messages)          # sent, and its complete stream stored
    client.response(messages)          # replayed from the cache: nothing sent
    with cache.bypass():               # this thread's calls inside skip the cache (no read, no write)
        client.response(messages)

The key is a SHA-256 of the request as it goes on the wire: the wire dialect, the endpoint it goes to
(scheme, host, port and base path of the client's base URL; a cache given as a plain ``hooks=`` entry
knows only the route's host), the URL path and the JSON body (canonical: keys sorted).  Headers are never part of it (so
neither the credential nor any per-request id is): two API keys share an entry, two hosts never do,
and anything that changes the body (a config key, a tool, a thinking signature in the history)
misses.  Only a complete stream is stored (it ended with its stop event and passes
``agenthub.check_stream``), and only when the route that answered is the one the key names (a
failover's fallback answer is not stored under the primary's key).  Entries hold the events alone
(no header, no credential), compressed, under the key; they live ``ttl`` seconds (None: until
evicted) and the oldest go first while the store holds more than ``max_bytes``.

A hit answers the call before anything is sent (the C1 seam's ``on_call_start`` sets ``call.answer``):
no route is tried, so no budget or limiter is charged or waited for, and a budget that could not afford
a live call still gets the cached answer.  It replays the original events (fidelity and usage
included) with new ``created_at`` times; ``call.cache`` is ``"hit"`` and the route (``last_route``,
the trace) carries ``"cache": "hit"``.  An entry that is corrupt, from another version, or not a valid
stream is a miss, and it is removed.  A store that cannot be reached is a miss too (logged): a cache
never fails a call.
"""

import contextlib
import contextvars
import hashlib
import json
import logging
import threading
import time
import zlib
from typing import Any, Dict, Iterator, List, Optional
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from .attempts import AttemptHook
from .errors import AgentHubError, ConfigError
from .stores import open_store
from .stream import check_stream

__all__ = ["ResponseCache", "request_key", "ENTRY_VERSION"]

logger = logging.getLogger("agenthub.cache")

#: the version of an entry's format (an entry of another version is a miss, and removed)
ENTRY_VERSION = 1
_MAGIC = b"agenthub-cache/%d\n" % ENTRY_VERSION
#: the default bound on the bytes a cache keeps (compressed entries)
DEFAULT_MAX_BYTES = 256 * 1024 * 1024
#: query parameters never part of a key (they can carry a credential)
_SECRET_QUERY = ("key", "token", "sig", "secret", "password", "auth")

_bypass = contextvars.ContextVar("agenthub_cache_bypass", default=False)


def _path(url: Any) -> str:
    """The URL path and query, without any query parameter that may hold a credential."""
    text = str(url or "")
    try:
        parts = urlsplit(text)
    except ValueError:
        return text.split("?", 1)[0]
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True)
             if not any(word in k.lower() for word in _SECRET_QUERY)]
    return urlunsplit(("", "", parts.path, urlencode(query), ""))


def _endpoint(base_url: Any) -> str:
    """scheme://host:port/base-path of a base URL (no user, password, query or fragment)."""
    from .hosts.trust import url_origin

    origin = url_origin(base_url)
    if origin is None:
        return ""
    try:
        path = urlsplit(str(base_url)).path
    except ValueError:
        path = ""
    return "{}://{}:{}{}".format(origin[0], origin[1], origin[2], path.rstrip("/"))


def request_key(client_type: str, endpoint: str, request: Any) -> Optional[str]:
    """The cache key of a planned request (``HttpRequest``: ``.url`` path, ``.body``) to ``endpoint`` (the
    client's scheme://host:port/base-path, or the route's host): a SHA-256 hex of the canonical wire
    request; None when the body is not JSON-able (such a call is never cached)."""
    body = getattr(request, "body", None)
    try:
        canonical = json.dumps(
            {"v": ENTRY_VERSION, "dialect": client_type, "endpoint": str(endpoint or "").lower(),
             "method": getattr(request, "method", "POST"), "path": _path(getattr(request, "url", "")), "body": body},
            sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError):
        return None
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


class _Recording(object):
    __slots__ = ("key", "route", "events", "size", "broken")

    def __init__(self, key: str, route: Optional[Dict[str, Any]]) -> None:
        self.key = key
        self.route = route
        self.events = []  # type: List[str]
        self.size = 0
        self.broken = False


class ResponseCache(AttemptHook):
    """A hook of the attempt loop (give it as ``AutoLLMClient(..., cache=cache)``; one cache may serve many
    clients).  ``store``: a directory (an SQLite file inside it), ``sqlite:///path``, ``redis://host:port/db``
    or an ``agenthub.stores.Store``.  ``ttl``: seconds an entry lives (None: until evicted).
    ``max_bytes``: the bound on what the store keeps (the oldest entries go first).
    ``hits`` / ``misses`` / ``stored``: counts of this process."""

    wants_events = True

    def __init__(self, store: Any, *, ttl: Optional[float] = None, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        if store is None:
            raise ConfigError("ResponseCache needs a store: a directory, sqlite:///path or redis://host:port/db")
        if ttl is not None and (isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or not 0 < ttl < 10 ** 9):
            raise ConfigError("ttl must be a positive number of seconds or None (got {!r})".format(ttl))
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 1024:
            raise ConfigError("max_bytes must be an int >= 1024 (got {!r})".format(max_bytes))
        self.store = open_store(store, directory=True)
        self.ttl = None if ttl is None else float(ttl)
        self.max_bytes = max_bytes
        self.hits = 0
        self.misses = 0
        self.stored = 0
        self._lock = threading.Lock()
        self._recording = {}  # type: Dict[int, _Recording]

    def __repr__(self) -> str:
        return "ResponseCache({!r}, ttl={!r})".format(getattr(self.store, "url", None) or self.store, self.ttl)

    def __getstate__(self) -> Any:
        return {"store": self.store, "ttl": self.ttl, "max_bytes": self.max_bytes}

    def __setstate__(self, state: Any) -> None:
        self.__init__(state["store"], ttl=state["ttl"], max_bytes=state["max_bytes"])  # type: ignore[misc]

    @staticmethod
    @contextlib.contextmanager
    def bypass() -> Iterator[None]:
        """Calls started inside (this thread or task) neither read nor write any ResponseCache."""
        token = _bypass.set(True)
        try:
            yield
        finally:
            _bypass.reset(token)

    def hook_for(self, base_url: str) -> AttemptHook:
        """The hook ``AutoLLMClient(..., cache=self)`` adds: this cache, keyed with the client's endpoint
        (scheme, host, port and base path of ``base_url``; never its user, password or query)."""
        return _ClientCache(self, _endpoint(base_url))

    # -- the hook --------------------------------------------------------------------------------------------
    def on_call_start(self, call: Any) -> None:
        self._start(call, None)

    def _start(self, call: Any, endpoint: Optional[str]) -> None:
        if call.kind != "stream" or getattr(call, "answer", None) is not None or _bypass.get():
            return
        request = getattr(call, "request", None)
        if request is None or getattr(request, "stream", True) is False:
            return
        route = getattr(call, "route", None) or {}
        key = request_key(route.get("client_type") or call.client_type, endpoint or route.get("host") or "", request)
        if key is None:
            return
        events = self._load(key)
        if events is None:
            with self._lock:
                self.misses += 1
                self._recording[id(call)] = _Recording(key, dict(call.route) if call.route else None)
            return
        with self._lock:
            self.hits += 1
        call.cache = "hit"
        if isinstance(call.route, dict):
            call.route["cache"] = "hit"  # (in place: the client's last_route and the trace read this dict)
        else:
            call.route = {"model": call.model, "client_type": call.client_type, "cache": "hit"}
        call.answer = _replay(events)

    def on_event(self, call: Any, event: Any) -> None:
        recording = self._recording.get(id(call))
        if recording is None or recording.broken:
            return
        try:
            line = json.dumps(event, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        except (TypeError, ValueError):
            recording.broken = True
            return
        recording.size += len(line)
        if recording.size > self.max_bytes * 4:  # (compression rarely beats 4:1 on events)
            recording.broken = True
            recording.events = []
            return
        recording.events.append(line)

    def on_call_end(self, call: Any) -> None:
        with self._lock:
            recording = self._recording.pop(id(call), None)
        if recording is None or recording.broken or call.error is not None or call.cache == "hit":
            return
        answered = getattr(call, "route", None) or {}
        if recording.route is not None and any(answered.get(k) != recording.route.get(k)
                                               for k in ("model", "client_type", "host")):
            return  # a fallback answered: not the answer of the request the key names
        try:
            events = [json.loads(line) for line in recording.events]
        except ValueError:
            return
        if not _complete(events):
            return  # closed early, cut, or not a valid stream: never stored
        payload = json.dumps({"key": recording.key, "events": events, "stored_at": int(time.time() * 1000)},
                             ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")
        entry = _MAGIC + zlib.compress(payload, 6)
        try:
            self.store.cache_put(recording.key, entry, self.ttl, self.max_bytes)
        except AgentHubError as exc:
            logger.warning("the response cache could not store an answer (%s)", type(exc).__name__)
            return
        with self._lock:
            self.stored += 1

    # -- entries ---------------------------------------------------------------------------------------------
    def _load(self, key: str) -> Optional[List[Dict[str, Any]]]:
        try:
            raw = self.store.cache_get(key)
        except AgentHubError as exc:
            logger.warning("the response cache could not be read (%s): a miss", type(exc).__name__)
            return None
        if raw is None:
            return None
        events = _decode(raw, key)
        if events is None:
            logger.warning("a corrupt response cache entry was removed")
            try:
                self.store.cache_delete(key)
            except AgentHubError:
                pass
        return events

    def close(self) -> None:
        self.store.close()


class _ClientCache(AttemptHook):
    """A ResponseCache as one client's hook: the cache's own steps, keyed with that client's endpoint."""

    wants_events = True

    def __init__(self, cache: ResponseCache, endpoint: str) -> None:
        self.cache = cache
        self.endpoint = endpoint

    def on_call_start(self, call: Any) -> None:
        self.cache._start(call, self.endpoint)

    def on_event(self, call: Any, event: Any) -> None:
        self.cache.on_event(call, event)

    def on_call_end(self, call: Any) -> None:
        self.cache.on_call_end(call)


def _decode(raw: bytes, key: str) -> Optional[List[Dict[str, Any]]]:
    """The events of an entry; None when it is not a whole, valid entry of this key and version."""
    if not raw.startswith(_MAGIC):
        return None
    try:
        doc = json.loads(zlib.decompress(raw[len(_MAGIC):]).decode("utf-8", "surrogatepass"))
    except (zlib.error, ValueError, UnicodeDecodeError):
        return None
    if not isinstance(doc, dict) or doc.get("key") != key or not isinstance(doc.get("events"), list):
        return None
    events = doc["events"]
    # (stored only after check_stream passed, and zlib's checksum covers the bytes: a light look suffices)
    if len(events) < 2 or not all(isinstance(event, dict) for event in events) \
            or events[0].get("event_type") != "start" or events[-1].get("event_type") != "stop":
        return None
    return events


def _complete(events: List[Any]) -> bool:
    """A whole stream: a start, its deltas and a stop (the stop event last), valid by ``check_stream``."""
    if len(events) < 2 or not isinstance(events[-1], dict) or events[-1].get("event_type") != "stop":
        return False
    try:
        check_stream(events)
    except AgentHubError:
        return False
    return True


def _replay(events: List[Dict[str, Any]]) -> Iterator[Dict[str, Any]]:
    """The stored events (just decoded: the caller's own objects), each stamped with the time it is handed out."""
    for event in events:
        event["created_at"] = int(time.time() * 1000)
        yield event
