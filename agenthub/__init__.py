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
from .media import save_wav
from .registry import list_models
from .stream import check_stream, collect
from .types import PromptCaching, ThinkingLevel

__version__ = "0.1.0"

__all__ = [
    "AutoLLMClient",
    "ResponseStream",
    "Timeout",
    "ThinkingLevel",
    "PromptCaching",
    "collect",
    "check_stream",
    "list_models",
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
    "__version__",
]

logging.getLogger("agenthub").addHandler(logging.NullHandler())
