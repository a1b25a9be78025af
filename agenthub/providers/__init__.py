"""Wire protocols.  Each module is pure: ``build_request`` plans the HTTP request,
``parse_stream`` turns the framed body into content items and a final StreamEnd, and
``PROTOCOL`` (an ``agenthub.providers._common.Protocol``) at its end declares the rest:
default endpoint and key variables, framing, one-document answers, how a request is
encoded and signed, the quirk keys it reads, its embeddings module and its demo.

A new protocol is its module plus one line here (and its registry rows).
"""

import importlib
from typing import Any, Dict, List

__all__ = ["PROTOCOLS", "protocol", "embeddings_protocol", "all_protocols"]

#: client_type -> protocol module under agenthub.providers (imported on first use)
PROTOCOLS = {
    "openai-chat": "openai_chat",
    "openai-responses": "openai_responses",
    "anthropic": "anthropic",
    "gemini": "gemini",
    "gemini-interactions": "gemini_interactions",
    "azure": "azure",
    "azure-responses": "azure_responses",
    "vertex": "vertex",
    "vertex-anthropic": "vertex_anthropic",
    "bedrock": "bedrock",
    "agenthub": "agenthub_server",
}

_loaded = {}  # type: Dict[str, Any]


def protocol(name: str) -> Any:
    """The Protocol record of client_type ``name`` (its module is imported on first use)."""
    record = _loaded.get(name)
    if record is None:
        record = _loaded[name] = importlib.import_module("agenthub.providers." + PROTOCOLS[name]).PROTOCOL
    return record


def embeddings_protocol(name: str) -> Any:
    """The Protocol record serving embedding models for client_type ``name`` (None: it has none)."""
    module = protocol(name).embeddings
    if module is None:
        return None
    return importlib.import_module("agenthub.providers." + module).PROTOCOL


def all_protocols() -> List[Any]:
    """Every protocol's record, in table order (imports every module)."""
    return [protocol(name) for name in PROTOCOLS]
