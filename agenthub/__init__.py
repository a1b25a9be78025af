"""agenthub: one data model and one streaming loop for every large language model.

    from agenthub import AutoLLMClient
    client = AutoLLMClient("claude-sonnet-4-6")
    for event in client.streaming_response(messages=[...], config={...}):
        ...
"""

import logging

from .client import AutoLLMClient, ResponseStream, Timeout
from .errors import (
    AgentHubError,
    AuthenticationError,
    BudgetExceededError,
    ConfigError,
    EmptyResponseError,
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
from .catalog import cost, list_supported_models
from .registry import list_models
from .stream import check_stream, collect
from . import telemetry  # agenthub.telemetry.instrument(): OpenTelemetry is imported only when it is called
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
    "__version__",
]

logging.getLogger("agenthub").addHandler(logging.NullHandler())
