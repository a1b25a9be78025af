"""The providers' batch engines, one module each: how rows become a remote batch and how its results
come back.  Each backend is a ``Backend``: the request entry of one row (pure), the per-batch limits
it splits on, and four calls over a ``Wire`` (create, retrieve, results, cancel).

``for_client_type`` says which backend serves a resolved route (from its client-type row's dialect and
host: ``Dialect.batch_api``, ``ENGINE_AT_HOST``); ``BACKENDS`` names them.
"""

from typing import Any, Dict, Optional

from ._base import TERMINAL, Backend, Outcome, dumps_entry, outcomes  # noqa: F401  (the package's names)

__all__ = ["Backend", "BACKENDS", "backend", "for_client_type", "TERMINAL", "Outcome", "ENGINE_AT_HOST"]

def _table() -> Dict[str, Backend]:
    from .anthropic import ANTHROPIC
    from .gemini import GEMINI
    from .openai import AZURE, OPENAI

    return {b.name: b for b in (OPENAI, AZURE, ANTHROPIC, GEMINI)}


_BACKENDS = {}  # type: Dict[str, Backend]


def backend(name: str) -> Backend:
    """The backend called ``name`` (a KeyError for an unknown one)."""
    if not _BACKENDS:
        _BACKENDS.update(_table())
    return _BACKENDS[name]


#: host (``agenthub.hosts``: a client-type row's ``host_name``) -> the batch engine at that host
ENGINE_AT_HOST = {"openai": "openai", "azure": "azure", "anthropic": "anthropic", "gemini": "gemini"}


def __getattr__(name: str) -> Any:  # PEP 562: BY_CLIENT_TYPE is derived from the rows on first use
    if name == "BY_CLIENT_TYPE":
        return {row: found for row, found in ((row, for_client_type(row)) for row in _client_types()) if found}
    raise AttributeError("module {!r} has no attribute {!r}".format(__name__, name))


def _client_types() -> Any:
    from ...hosts import CLIENT_TYPES

    return CLIENT_TYPES


#: what ``submit(backend=...)`` takes: a family, or auto (per row)
BACKENDS = ("openai", "anthropic", "gemini", "auto")
#: the family a backend belongs to (``backend="openai"`` takes Azure rows too)
FAMILY = {"openai": "openai", "azure": "openai", "anthropic": "anthropic", "gemini": "gemini"}


def for_client_type(client_type: str) -> Optional[str]:
    """The backend serving ``client_type``'s rows, derived from its row's (dialect, host): the engine at
    the row's host, when the dialect's ``batch_api`` is one it takes (None: no batch engine here)."""
    row = _client_types().get(client_type)
    if row is None:
        return None
    name = ENGINE_AT_HOST.get(row.host_name)
    api = row.facts.batch_api
    if name is None or api is None or api not in backend(name).apis:
        return None
    return name
