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
(scheme, host, port and base path of the client's base URL, its query hashed; a cache registered for the
whole process knows only the route's host), the URL path, the request's headers but the credential and
per-request ids (``default_headers``, ``extra_headers``: a tenant header splits the key) and the JSON body
(canonical: keys sorted).  The credential is left out, so two API keys share an entry, unless the body
names server-side state of one account (``STATE_FIELDS``: ``previous_response_id``, a file, a vector store,
...): such a request is keyed with a hash of the client's credential too.  Two hosts never share, and
anything that changes the body (a config key, a tool, a thinking signature in the history) misses.  Only a
complete stream is stored (start, deltas, a stop with its usage, in order; up to ``CHECK_WHOLE_BYTES`` it is
checked whole by ``agenthub.check_stream``), and only when the route that answered is the one the key names
(a failover's fallback answer is not stored under the primary's key), and never when its reader rejected
it (``call.rejected``: typed output's answer that did not validate, or a refusal; a replayed entry so
rejected is removed, so a re-run asks the model again instead of replaying the same failure).  Events are compressed as they come,
and an answer past ``max_bytes`` compressed (or ``MAX_ENTRY_TEXT`` as JSON) stops being recorded.  Entries hold the events alone (no
header, no credential), compressed, under the key; they live ``ttl`` seconds (None: until evicted) and the
oldest go first while the store holds more than ``max_bytes``.  A directory made for the cache is 0700 and
its file 0600; one another user owns or others can write is refused (ConfigError).

A hit answers the call before anything is sent (the C1 seam's ``on_call_start`` sets ``call.answer``):
no route is tried, so no budget or limiter is charged or waited for, and a budget that could not afford
a live call still gets the cached answer.  It replays the original events (fidelity, media (stored as
``{"__bytes__": base64}``) and usage included, the usage's cache writes and image tokens too) with new
``created_at`` times; ``call.cache`` is ``"hit"`` and the route (``last_route``,
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
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from .attempts import AttemptHook
from .errors import AgentHubError, ConfigError
from .stores import open_store
from .stream import check_stream, usage_extras, with_usage_extras
from .types import bytes_default, from_jsonable, from_jsonable_exact, marker_free, to_jsonable  # the one codec
from ._jsondepth import loads as _json_loads

__all__ = ["ResponseCache", "request_key", "ENTRY_VERSION", "STATE_FIELDS"]

logger = logging.getLogger("agenthub.cache")

#: the version of an entry's format (an entry of another version is a miss, and removed)
ENTRY_VERSION = 1
_MAGIC = b"agenthub-cache/%d\n" % ENTRY_VERSION
#: an entry whose events hold a dict of the one key ``__bytes__`` (a model's tool-call arguments may spell one),
#: written escaped by ``types.to_jsonable`` and read back whole by ``types.from_jsonable_exact``; an entry under
#: ``_MAGIC`` (every one an earlier agenthub wrote, and any other) holds no escape and is read as it always was:
#: only its media items' ``data`` is bytes again.  (An earlier agenthub sharing the store sees a miss here.)
_MAGIC_ESCAPED = b"agenthub-cache/%d+escaped\n" % ENTRY_VERSION
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
    """scheme://host:port/base-path of a base URL, and its query hashed (it may hold a key, and a ``?key=``
    there may name a tenant); never its user or password."""
    from .hosts.trust import url_origin

    origin = url_origin(base_url)
    if origin is None:
        return ""
    try:
        parts = urlsplit(str(base_url))
        path, query = parts.path, parts.query
    except ValueError:
        path, query = "", ""
    shown = "{}://{}:{}{}".format(origin[0], origin[1], origin[2], path.rstrip("/"))
    if query:
        shown += "?#" + hashlib.sha256(query.encode("utf-8", "surrogatepass")).hexdigest()
    return shown


#: request headers that change from one request to the next without changing the answer (never keyed)
_VOLATILE_HEADERS = frozenset(("traceparent", "tracestate", "baggage", "x-request-id", "x-client-request-id",
                               "idempotency-key", "content-length"))
#: the credential headers: two keys of one account share an entry (unless the body names server-side state)
_CREDENTIAL_HEADERS = frozenset(("authorization", "proxy-authorization", "x-api-key", "api-key", "x-goog-api-key",
                                 "cookie"))
#: body fields that name state kept by the provider for one account (a stored response, a conversation, a file,
#: a vector store, a container, a cached context): a request naming one is keyed with the credential too
STATE_FIELDS = frozenset(("previous_response_id", "conversation", "conversation_id", "file_id", "file_ids",
                          "vector_store_ids", "container", "cached_content", "cachedContent", "file_uri", "fileUri"))


def _names_state(value: Any, depth: int = 0) -> bool:
    """Whether a request body names server-side state (``STATE_FIELDS``, at any depth)."""
    if depth > 64:
        return True  # (deeper than any real request: keyed with the credential, to be safe)
    if isinstance(value, dict):
        return any((k in STATE_FIELDS and v not in (None, "", [], {})) or _names_state(v, depth + 1)
                   for k, v in value.items())
    if isinstance(value, list):
        return any(_names_state(v, depth + 1) for v in value)
    return False


def _headers(request: Any) -> List[List[str]]:
    """The planned request's headers that may change the answer (a tenant's ``x-tenant`` from
    ``default_headers`` or ``extra_headers``, ``anthropic-beta``): lower-cased and sorted; credentials and
    per-request ids left out."""
    out = []
    for name, value in dict(getattr(request, "headers", None) or {}).items():
        low = str(name).strip().lower()
        if low not in _VOLATILE_HEADERS and low not in _CREDENTIAL_HEADERS:
            out.append([low, str(value)])
    return sorted(out)


def request_key(client_type: str, endpoint: str, request: Any,
                credentials: Optional[Callable[[], Iterable[Any]]] = None) -> Optional[str]:
    """The cache key of a planned request (``HttpRequest``: ``.url`` path, ``.headers``, ``.body``) to
    ``endpoint`` (the client's scheme://host:port/base-path and hashed query, or the route's host): a SHA-256
    hex of the canonical wire request (its headers but the credential and per-request ids; the body).  A body
    that names server-side state (``STATE_FIELDS``: ``previous_response_id``, a file, a vector store...) is
    keyed with a hash of the client's credential (``credentials()``) too; None without one (such a call is
    never cached), and None when the body is not JSON-able."""
    body = getattr(request, "body", None)
    account = None  # type: Optional[str]
    if _names_state(body):
        values = sorted(str(v) for v in (credentials() if credentials is not None else ()) if v)
        if not values:
            return None
        account = hashlib.sha256("\x00".join(values).encode("utf-8", "surrogatepass")).hexdigest()
    try:
        canonical = json.dumps(
            {"v": ENTRY_VERSION, "dialect": client_type, "endpoint": str(endpoint or "").lower(),
             "method": getattr(request, "method", "POST"), "path": _path(getattr(request, "url", "")),
             "headers": _headers(request), "account": account, "body": body},
            sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError):
        return None
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


#: a recording is checked whole with ``check_stream`` up to this much JSON (its events kept as text until then);
#: past it the shape is checked as the events come (start first, deltas of one item, the stop last with its
#: usage and finish reason): the events come from agenthub's own stream driver, which keeps the grammar
CHECK_WHOLE_BYTES = 4 * 1024 * 1024
#: the most an entry's events may take as JSON, uncompressed: an answer past it is never stored, and an entry that
#: decompresses past it (not one this cache wrote: a zlib bomb planted in a shared store) is a miss, never inflated
#: whole in memory
MAX_ENTRY_TEXT = 256 * 1024 * 1024


class _Recording(object):
    """One answer being recorded: its events compressed as they come (an entry's payload, written in order),
    bounded by ``max_bytes`` of compressed output."""

    __slots__ = ("key", "route", "lines", "size", "broken", "packer", "packed", "packed_size", "count", "last",
                 "limit", "escaped")

    def __init__(self, key: str, route: Optional[Dict[str, Any]], limit: int) -> None:
        self.key = key
        self.route = route
        self.lines = []  # type: Optional[List[str]]  # (None past CHECK_WHOLE_BYTES)
        self.size = 0
        self.broken = False
        self.packer = zlib.compressobj(6)
        head = json.dumps({"key": key, "stored_at": int(time.time() * 1000)}, ensure_ascii=False,
                          separators=(",", ":"))
        self.packed = []  # type: List[bytes]
        self.packed_size = 0
        self._pack((head[:-1] + ',"events":[').encode("utf-8", "surrogatepass"))
        self.count = 0
        self.last = None  # type: Optional[Dict[str, Any]]
        self.limit = limit
        self.escaped = False  # (an event held a dict spelling the bytes marker: written escaped)

    def add(self, event: Any) -> None:
        if not isinstance(event, dict) or not _shape_ok(event, self.count, self.last):
            self.broken = True
            return
        try:
            line = json.dumps(event, ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=bytes_default)
            if not marker_free(line):  # bytes, or a dict of the one key __bytes__ (escaped: to_jsonable)
                again = json.dumps(to_jsonable(event), ensure_ascii=False, separators=(",", ":"), allow_nan=False)
                self.escaped = self.escaped or again != line
                line = again
        except (TypeError, ValueError, RecursionError):
            self.broken = True
            return
        data = (("," if self.count else "") + line).encode("utf-8", "surrogatepass")
        self.size += len(data)
        if self.size > MAX_ENTRY_TEXT:
            self.broken = True  # past what an entry may inflate to: never stored, so recording stops here
            self.packed, self.lines = [], None
            return
        if self.lines is not None:
            if self.size <= CHECK_WHOLE_BYTES:
                self.lines.append(line)
            else:
                self.lines = None
        self._pack(data)
        self.count += 1
        self.last = {"event_type": event.get("event_type"), "usage": event.get("usage_metadata"),
                     "finish": event.get("finish_reason")}
        if self.packed_size > self.limit:
            self.broken = True  # past the cache's bound: never stored, so recording stops here
            self.packed, self.lines = [], None

    def _pack(self, data: bytes) -> None:
        chunk = self.packer.compress(data)
        if chunk:
            self.packed.append(chunk)
            self.packed_size += len(chunk)

    def entry(self) -> Optional[bytes]:
        """The entry (magic + compressed payload) of a complete recording; None when it is not one."""
        last = self.last
        if self.broken or self.count < 2 or last is None or last["event_type"] != "stop" \
                or not isinstance(last["usage"], dict) or last["finish"] is None:
            return None
        if self.lines is not None:
            try:
                events = _events_read([_json_loads(line) for line in self.lines], self.escaped)
                if events is None:
                    return None
                check_stream(events)
            except (AgentHubError, ValueError, RecursionError):
                return None
        # what the stop event's usage carries beside the four buckets (cache writes, image tokens, service tier)
        extras = usage_extras(last["usage"])
        tail = b"]}" if not extras else ('],"usage_extras":' + json.dumps(extras, separators=(",", ":")) + "}").encode()
        packed = self.packed + [self.packer.compress(tail), self.packer.flush()]
        self.packed, self.lines = [], None
        return (_MAGIC_ESCAPED if self.escaped else _MAGIC) + b"".join(packed)


#: the items whose ``data`` is bytes (an image, audio, inline thinking): stored as ``{"__bytes__": base64}``
_MEDIA = ("inline_data", "inline_thinking")  # (a tuple: a planted entry's type may be a list)


def _media_read(event: Any) -> Any:
    """``event`` (read back from an entry under ``_MAGIC``) with its media items' ``data`` bytes again (only there:
    a tool call's arguments an earlier agenthub stored unescaped, holding the same shape, stay as they are); None
    when a payload is not base64 (not an entry this cache wrote)."""
    items = event.get("content_items") if type(event) is dict else None
    for item in items if type(items) is list else ():
        data = item.get("data") if type(item) is dict and item.get("type") in _MEDIA else None
        if type(data) is dict and list(data) == ["__bytes__"] and type(data["__bytes__"]) is str:
            try:
                item["data"] = from_jsonable(data, strict=True)
            except ValueError:  # (binascii.Error)
                return None
    return event


def _events_read(events: List[Any], escaped: bool) -> Optional[List[Any]]:
    """An entry's events as JSON gave them, their bytes (and escaped dicts) back; None when they do not read back
    (not an entry this cache wrote)."""
    if escaped:
        try:
            return from_jsonable_exact(events)
        except (ValueError, RecursionError):
            return None
    for event in events:
        if _media_read(event) is None:
            return None
    return events


def _shape_ok(event: Dict[str, Any], position: int, last: Optional[Dict[str, Any]]) -> bool:
    """The stream's shape, one event at a time: a start first, then deltas of one item, a stop last."""
    kind = event.get("event_type")
    if position == 0:
        return kind == "start"
    if last is not None and last["event_type"] == "stop":
        return False  # nothing after the stop
    if kind == "delta":
        items = event.get("content_items")
        return isinstance(items, list) and len(items) == 1
    return kind == "stop"


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
        self._replaying = {}  # type: Dict[int, str]  # a hit's key, until its call ends

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

    def hook_for(self, base_url: str, credentials: Optional[Callable[[], Iterable[Any]]] = None) -> AttemptHook:
        """The hook ``AutoLLMClient(..., cache=self)`` (or ``hooks=[self]``) adds: this cache, keyed with the
        client's endpoint (scheme, host, port and base path of ``base_url``, its query hashed; never its user or
        password).  ``credentials``: the client's ``credential_values`` (hashed into the key of a request that
        names server-side state; without it such a request is never cached)."""
        return _ClientCache(self, _endpoint(base_url), credentials)

    # -- the hook --------------------------------------------------------------------------------------------
    def on_call_start(self, call: Any) -> None:
        self._start(call, None)

    def _start(self, call: Any, endpoint: Optional[str],
               credentials: Optional[Callable[[], Iterable[Any]]] = None) -> None:
        if call.kind != "stream" or getattr(call, "answer", None) is not None or _bypass.get():
            return
        if getattr(call, "resuming", None):  # a GET re-attaching to a background response: never cached
            return
        request = getattr(call, "request", None)
        if request is None or getattr(request, "stream", True) is False:
            return
        route = getattr(call, "route", None) or {}
        key = request_key(route.get("client_type") or call.client_type, endpoint or route.get("host") or "", request,
                          credentials)
        if key is None:
            return
        events = self._load(key)
        if events is None:
            with self._lock:
                self.misses += 1
                self._recording[id(call)] = _Recording(key, dict(call.route) if call.route else None, self.max_bytes)
            return
        with self._lock:
            self.hits += 1
            self._replaying[id(call)] = key
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
        recording.add(event)

    def on_call_end(self, call: Any) -> None:
        with self._lock:
            recording = self._recording.pop(id(call), None)
            replayed = self._replaying.pop(id(call), None)
        if replayed is not None and getattr(call, "rejected", False):
            self._forget(replayed)  # a replayed answer its reader rejected: the next call asks the model again
            return
        if recording is None or recording.broken or call.error is not None or call.cache == "hit" \
                or getattr(call, "rejected", False):
            return
        answered = getattr(call, "route", None) or {}
        if recording.route is not None and any(answered.get(k) != recording.route.get(k)
                                               for k in ("model", "client_type", "host")):
            return  # a fallback answered: not the answer of the request the key names
        entry = recording.entry()
        if entry is None:
            return  # closed early, cut, or not a valid stream: never stored
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

    def _forget(self, key: str) -> None:
        try:
            self.store.cache_delete(key)
        except AgentHubError as exc:
            logger.warning("the response cache could not remove a rejected answer (%s)", type(exc).__name__)

    def close(self) -> None:
        self.store.close()


class _ClientCache(AttemptHook):
    """A ResponseCache as one client's hook: the cache's own steps, keyed with that client's endpoint."""

    wants_events = True

    def __init__(self, cache: ResponseCache, endpoint: str,
                 credentials: Optional[Callable[[], Iterable[Any]]] = None) -> None:
        self.cache = cache
        self.endpoint = endpoint
        self.credentials = credentials

    def on_call_start(self, call: Any) -> None:
        self.cache._start(call, self.endpoint, self.credentials)

    def on_event(self, call: Any, event: Any) -> None:
        self.cache.on_event(call, event)

    def on_call_end(self, call: Any) -> None:
        self.cache.on_call_end(call)


def _decode(raw: bytes, key: str) -> Optional[List[Dict[str, Any]]]:
    """The events of an entry; None when it is not a whole, valid entry of this key and version."""
    escaped = raw.startswith(_MAGIC_ESCAPED)
    if not escaped and not raw.startswith(_MAGIC):
        return None
    try:
        unpacker = zlib.decompressobj()
        text = unpacker.decompress(raw[len(_MAGIC_ESCAPED if escaped else _MAGIC):], MAX_ENTRY_TEXT + 1)  # (never more than the bound + 1 byte)
        if len(text) > MAX_ENTRY_TEXT or not unpacker.eof or unpacker.unused_data:
            return None  # past the bound, cut short, or followed by bytes this cache never writes
        doc = _json_loads(text.decode("utf-8", "surrogatepass"))
    except (zlib.error, ValueError, UnicodeDecodeError, RecursionError):  # (nested past the parser's depth)
        return None
    if not isinstance(doc, dict) or doc.get("key") != key or not isinstance(doc.get("events"), list):
        return None
    events = _events_read(doc["events"], escaped)  # media as stored ({"__bytes__": base64}) back to bytes
    if events is None:
        return None
    # checked whole before it is replayed: zlib's checksum only says the bytes are the ones written, and an entry
    # in a shared store may be one this cache never wrote (another program's, a bug's, planted)
    try:
        check_stream(events)
    except AgentHubError:
        return None
    extras = doc.get("usage_extras")
    if extras is not None:  # the stop's usage priced as the one stored (stream.usage_extras)
        events[-1]["usage_metadata"] = with_usage_extras(events[-1]["usage_metadata"], extras)
    return events


def _replay(events: List[Dict[str, Any]]) -> Iterator[Dict[str, Any]]:
    """The stored events (just decoded: the caller's own objects), each stamped with the time it is handed out."""
    for event in events:
        event["created_at"] = int(time.time() * 1000)
        yield event
