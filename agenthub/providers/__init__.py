"""Wire dialects.  Each module is pure: ``build_request`` plans the HTTP request (a path, headers
without a credential, a body), ``parse_stream`` turns the framed body into content items and a final
StreamEnd, and ``PROTOCOL`` (an ``agenthub.providers._common.Protocol``) at its end declares the
rest: framing, one-document answers, the quirk keys it reads, its embeddings module, its model list
and its demo.  Where a request goes and how it is authorised is a host's (``agenthub.hosts``); a
client type is a row of (dialect, host, quirks) there.

A new dialect is its module plus one line here (and its rows in ``agenthub.hosts``).
"""

import importlib
from typing import Any, Dict, List

__all__ = ["PROTOCOLS", "protocol", "embeddings_protocol", "all_protocols"]

#: dialect name -> its module under agenthub.providers (imported on first use)
PROTOCOLS = {
    "openai-chat": "openai_chat",
    "openai-responses": "openai_responses",
    "anthropic": "anthropic",
    "gemini": "gemini",
    "gemini-interactions": "gemini_interactions",
    "bedrock": "bedrock",
    "agenthub": "agenthub_server",
}

_loaded = {}  # type: Dict[str, Any]


def protocol(name: str) -> Any:
    """The Protocol record of dialect ``name`` (its module is imported on first use)."""
    record = _loaded.get(name)
    if record is None:
        record = _loaded[name] = importlib.import_module("agenthub.providers." + PROTOCOLS[name]).PROTOCOL
    return record


def embeddings_protocol(name: str) -> Any:
    """The Protocol record serving embedding models for dialect ``name`` (None: it has none)."""
    module = protocol(name).embeddings
    if module is None:
        return None
    return importlib.import_module("agenthub.providers." + module).PROTOCOL


def all_protocols() -> List[Any]:
    """Every dialect's record, in table order (imports every module)."""
    return [protocol(name) for name in PROTOCOLS]
