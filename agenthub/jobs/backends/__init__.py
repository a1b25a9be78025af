"""The providers' batch engines, one module each: how rows become a remote batch and how its results
come back.  Each backend is a ``Backend``: the request entry of one row (pure), the per-batch limits
it splits on, and four calls over a ``Wire`` (create, retrieve, results, cancel).

``for_client_type`` says which backend serves a resolved route; ``BACKENDS`` names them.
"""

from typing import Any, Dict, Optional

from ._base import TERMINAL, Backend, Outcome, dumps_entry, outcomes  # noqa: F401  (the package's names)

__all__ = ["Backend", "BACKENDS", "backend", "for_client_type", "TERMINAL", "Outcome"]

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


#: client_type -> the backend serving it (rows of other protocols have no batch engine here)
BY_CLIENT_TYPE = {"openai-chat": "openai", "openai-responses": "openai", "azure": "azure",
                  "azure-responses": "azure", "anthropic": "anthropic", "gemini": "gemini"}

#: what ``submit(backend=...)`` takes: a family, or auto (per row)
BACKENDS = ("openai", "anthropic", "gemini", "auto")
#: the family a backend belongs to (``backend="openai"`` takes Azure rows too)
FAMILY = {"openai": "openai", "azure": "openai", "anthropic": "anthropic", "gemini": "gemini"}


def for_client_type(client_type: str) -> Optional[str]:
    return BY_CLIENT_TYPE.get(client_type)
