"""Shared state for the rate limiter, the budget and the response cache: one small interface
(``Store``), three implementations.

- ``MemoryStore``: this process only (the default: ``store=None`` is today's in-process behaviour).
- ``SQLiteStore`` (``"sqlite:///relative/path"``, ``"sqlite:////absolute/path"``): every process on one
  machine (the standard library's sqlite3, WAL, ``BEGIN IMMEDIATE`` transactions, a busy timeout).
- ``RedisStore`` (``"redis://host:port/db"``, ``"rediss://..."``): every machine; the optional extra
  the ``redis`` extra (``pip install ".[redis]"``); ``agenthub/stores/redis.py`` is the only module that imports ``redis``, and only
  when such a store is opened.  Updates are Lua scripts run by the server, on the server's clock.

``open_store(spec)`` turns a URL (or a Store, or None) into a Store.  See docs/many-workers.md.
"""

import importlib
import os
import time
from typing import Any, Callable, Dict, Optional, Tuple

from .._redact import shown_url
from ..errors import ConfigError
from .files import make_folder
from .base import LEASE_SECONDS, SCHEMA_VERSION, Store, StoreError, check_key
from .memory import MemoryStore

__all__ = ["Store", "StoreError", "MemoryStore", "open_store", "check_key", "LEASE_SECONDS", "SCHEMA_VERSION"]

#: a shared store URL's scheme -> (module, class) that opens it from the URL (the module is imported only
#: when such a store is opened)
SCHEMES = {
    "sqlite": (".sqlite", "SQLiteStore"),
    "redis": (".redis", "RedisStore"),
    "rediss": (".redis", "RedisStore"),
}  # type: Dict[str, Tuple[str, str]]


def open_store(spec: Any, *, clock: Optional[Callable[[], float]] = None, directory: bool = False) -> Store:
    """A Store from ``spec``: None (a new in-process ``MemoryStore``), a Store (as it is), or a URL:
    ``sqlite:///relative/path``, ``sqlite:////absolute/path``, ``redis://[:password@]host[:port][/db]``,
    ``rediss://...``.  With ``directory=True`` (the response cache) a plain path is a directory that
    holds an SQLite store.  ConfigError for anything else (before anything is sent); StoreError when the
    store cannot be reached or holds rows it must refuse."""
    if spec is None:
        return MemoryStore(clock=clock or time.monotonic)
    if isinstance(spec, Store):
        return spec
    if hasattr(spec, "__fspath__"):
        spec = spec.__fspath__()
    if not isinstance(spec, str) or not spec.strip():
        raise ConfigError("store must be None, a store URL (sqlite:///path, redis://host:port/db) or an "
                          "agenthub.stores.Store (got {})".format(type(spec).__name__ if not isinstance(spec, str)
                                                                   else "an empty string"))
    scheme = spec.split(":", 1)[0] if ":" in spec else ""
    if scheme in SCHEMES:
        module, name = SCHEMES[scheme]
        return getattr(importlib.import_module(module, __name__), name)(spec)  # type: ignore[no-any-return]
    if spec == "memory:" or spec == "memory://":
        return MemoryStore(clock=clock or time.monotonic)
    if directory and "://" not in spec:
        from .sqlite import SQLiteStore

        path = os.path.abspath(os.path.expanduser(spec))
        if os.path.exists(path) and not os.path.isdir(path):
            raise ConfigError("the cache directory {!r} is a file".format(spec[:200]))
        make_folder(path, spec[:200])  # (0700 when made here; refused when another user's or writable by others)
        return SQLiteStore("sqlite:///" + os.path.join(path, "agenthub-cache.sqlite3"))
    raise ConfigError("store {!r}: not a store URL (sqlite:///relative/path, sqlite:////absolute/path, "
                      "redis://host:port/db or rediss://...){}".format(
                          shown_url(spec)[:80],
                          "; unknown scheme {!r}".format(scheme[:20]) if scheme else ""))


