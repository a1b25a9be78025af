"""agenthub: one data model and one streaming loop for every large language model.

    from agenthub import AutoLLMClient
    client = AutoLLMClient("claude-sonnet-4-6")
    for event in client.streaming_response(messages=[...], config={...}):
        ...
"""

import logging

from typing import TYPE_CHECKING, Any

from .client import AutoLLMClient, ResponseStream, Timeout
from .errors import (
    AgentHubError,
    AuthenticationError,
    BudgetExceededError,
    ConfigError,
    EmptyResponseError,
    OutputRefusedError,
    OutputValidationError,
    RateLimitError,
    ServerError,
    StreamError,
    StreamProtocolError,
    ToolCallArgumentParseError,
    TransportError,
    UnsupportedOperationError,
    UnsupportedParameterError,
    UpstreamError,
)
from .limiter import RateLimiter
from .media import save_wav
from .budget import Budget
from .cache import ResponseCache
from .catalog import cost, list_supported_models
from .registry import list_models
from .stream import check_stream, collect
from .messages import text, user
from .types import (
    AssistantMessage,
    ContentItem,
    EmbeddingConfig,
    EmbeddingItem,
    EventType,
    FinishReason,
    ImageConfig,
    ImageUrlItem,
    InlineDataItem,
    InlineThinkingItem,
    Message,
    PartialContentItem,
    PartialToolCallItem,
    PromptCaching,
    Role,
    SpeakerConfig,
    TextItem,
    ThinkingItem,
    ThinkingLevel,
    ToolCallItem,
    ToolResultItem,
    ToolSchema,
    UniConfig,
    UniEvent,
    UniMessage,
    UsageMetadata,
)

__version__ = "0.3.0"

__all__ = [
    "AutoLLMClient",
    "ResponseStream",
    "Timeout",
    "ThinkingLevel",
    "PromptCaching",
    # the data model (TypedDicts: plain dicts at runtime), for annotating your own code
    "UniMessage",
    "AssistantMessage",
    "Message",
    "UniConfig",
    "UniEvent",
    "UsageMetadata",
    "Role",
    "EventType",
    "FinishReason",
    "ToolSchema",
    "ImageConfig",
    "SpeakerConfig",
    "EmbeddingConfig",
    "ContentItem",
    "PartialContentItem",
    "TextItem",
    "ImageUrlItem",
    "InlineDataItem",
    "ThinkingItem",
    "InlineThinkingItem",
    "ToolCallItem",
    "ToolResultItem",
    "EmbeddingItem",
    "PartialToolCallItem",
    "collect",
    "check_stream",
    # typed helpers: a user message from strings, the text of a message or event
    "user",
    "text",
    "list_models",
    "list_supported_models",
    "cost",
    "Budget",
    "BudgetExceededError",
    "AgentHubError",
    "ConfigError",
    "UnsupportedParameterError",
    "UnsupportedOperationError",
    "TransportError",
    "UpstreamError",
    "AuthenticationError",
    "RateLimitError",
    "ServerError",
    "StreamError",
    "StreamProtocolError",
    "ToolCallArgumentParseError",
    "EmptyResponseError",
    "save_wav",
    "RateLimiter",
    "ResponseCache",
    "tool",
    "RunResult",
    # typed output (issue 40)
    "Parsed",
    "OutputValidationError",
    "OutputRefusedError",
    "__version__",
]

if TYPE_CHECKING:  # the agent wing, imported when first asked for (``import agenthub`` stays as light as it was)
    from . import mcp, telemetry
    from .agent.runner import RunResult
    from .agent.tools import tool
    from .output.parse import Parsed

#: names whose modules load on first use: name -> module
_LAZY = {"tool": ".agent.tools", "RunResult": ".agent.runner", "Parsed": ".output.parse"}


#: submodules read as attributes of the package without importing them first (``agenthub.telemetry.instrument()``)
_LAZY_MODULES = ("telemetry", "mcp")


def __getattr__(name: str) -> Any:
    if name in _LAZY_MODULES:
        import importlib

        return importlib.import_module("." + name, __name__)
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError("module 'agenthub' has no attribute {!r}".format(name))


logging.getLogger("agenthub").addHandler(logging.NullHandler())
