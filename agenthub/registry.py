"""Routing as data: model-name patterns -> wire protocol, official endpoint, key variable, quirks.

Each row of ``ROUTES`` is matched in order against the lower-cased model name;
the first match wins.  Adding an OpenAI-compatible vendor is one row (see README).
"""

import ipaddress
import os
import re
from typing import Any, Dict, List, Mapping, Optional, Tuple
from urllib.parse import urlsplit

from .errors import ConfigError

__all__ = ["Route", "ROUTES", "CLIENT_TYPES", "ALIASES", "resolve", "list_models", "is_loopback"]

#: client_type -> default base URL when the caller names the protocol but no endpoint
CLIENT_TYPES = {
    "openai-chat": "https://api.openai.com/v1",
    "openai-responses": "https://api.openai.com/v1",
    "anthropic": "https://api.anthropic.com",
    "gemini": "https://generativelanguage.googleapis.com",
}
#: drop-in names kept from AgentHub
ALIASES = {"openai": "openai-chat", "ant-messages": "anthropic", "openai-embedding": "openai-chat",
           "google-genai": "gemini", "gemini-generate-content": "gemini"}
#: the key variable of each protocol's official endpoint
PROTOCOL_KEYS = {
    "openai-chat": "OPENAI_API_KEY",
    "openai-responses": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "gemini": "GEMINI_API_KEY",
}


class Route(object):
    """One registry row."""

    __slots__ = ("pattern", "client_type", "base_url", "key_env", "base_url_env", "quirks", "modalities", "examples",
                 "vendor", "_regex")

    def __init__(
        self,
        pattern: str,
        client_type: str,
        base_url: str,
        key_env: Tuple[str, ...],
        vendor: str,
        base_url_env: Optional[str] = None,
        quirks: Optional[Mapping[str, Any]] = None,
        modalities: Tuple[Tuple[str, ...], Tuple[str, ...]] = (("text", "image"), ("text",)),
        examples: Tuple[str, ...] = (),
    ) -> None:
        self.pattern = pattern
        self.client_type = client_type
        self.base_url = base_url
        self.key_env = key_env
        self.vendor = vendor
        self.base_url_env = base_url_env
        self.quirks = dict(quirks or {})
        self.modalities = modalities
        self.examples = examples
        self._regex = re.compile(pattern, re.I)

    def matches(self, model: str) -> bool:
        return self._regex.match(model) is not None

    def __repr__(self) -> str:
        return "Route({!r} -> {} at {})".format(self.pattern, self.client_type, self.base_url)


_TEXT = (("text",), ("text",))
_VISION = (("text", "image"), ("text",))

ROUTES = [
    Route(r"text-embedding-", "openai-chat", "https://api.openai.com/v1", ("OPENAI_API_KEY",), "OpenAI",
          "OPENAI_BASE_URL", {"embeddings": True}, (("text",), ("embedding",)), ("text-embedding-3-small",)),
    Route(r"(gpt-|o1|o3|o4|chatgpt-)", "openai-responses", "https://api.openai.com/v1", ("OPENAI_API_KEY",), "OpenAI",
          "OPENAI_BASE_URL", {}, _VISION, ("gpt-5.5", "o4-mini")),
    Route(r"claude-", "anthropic", "https://api.anthropic.com", ("ANTHROPIC_API_KEY",), "Anthropic",
          "ANTHROPIC_BASE_URL", {}, _VISION, ("claude-sonnet-4-6", "claude-opus-4-8")),
    Route(r"gemini-.*embedding|text-embedding-00|embedding-00", "gemini", "https://generativelanguage.googleapis.com",
          ("GEMINI_API_KEY", "GOOGLE_API_KEY"), "Google", "GEMINI_BASE_URL", {"embeddings": True},
          (("text",), ("embedding",)), ("gemini-embedding-001",)),
    Route(r"gemini-.*-tts", "gemini", "https://generativelanguage.googleapis.com", ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
          "Google", "GEMINI_BASE_URL", {"tts": True}, (("text",), ("audio",)), ("gemini-2.5-flash-preview-tts",)),
    Route(r"gemini-.*-image", "gemini", "https://generativelanguage.googleapis.com", ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
          "Google", "GEMINI_BASE_URL", {"image_output": True}, (("text", "image"), ("text", "image")),
          ("gemini-2.5-flash-image",)),
    Route(r"gemini-", "gemini", "https://generativelanguage.googleapis.com", ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
          "Google", "GEMINI_BASE_URL", {}, (("text", "image", "audio", "video"), ("text",)),
          ("gemini-2.5-flash", "gemini-3-pro-preview")),
    Route(r"deepseek-", "openai-chat", "https://api.deepseek.com", ("DEEPSEEK_API_KEY",), "DeepSeek",
          "DEEPSEEK_BASE_URL",
          {"reasoning_field": "reasoning_content", "echo_reasoning_on_tool_turns": True, "images": False,
           "max_tokens_field": "max_tokens", "tool_choice": ("auto", "none", "required", "list"),
           "thinking": {"none": {"thinking": {"type": "disabled"}}, "low": {"thinking": {"type": "enabled"}},
                        "medium": {"thinking": {"type": "enabled"}}, "high": {"thinking": {"type": "enabled"}},
                        "xhigh": {"thinking": {"type": "enabled"}}}},
          _TEXT, ("deepseek-chat", "deepseek-reasoner")),
    Route(r"glm-", "openai-chat", "https://api.z.ai/api/paas/v4", ("ZAI_API_KEY",), "Z.AI", "ZAI_BASE_URL",
          {"reasoning_field": "reasoning_content", "max_tokens_field": "max_tokens", "tool_choice": ("auto",),
           "images": False,
           "thinking": {"none": {"thinking": {"type": "disabled"}}, "low": {"thinking": {"type": "enabled"}},
                        "medium": {"thinking": {"type": "enabled"}}, "high": {"thinking": {"type": "enabled"}},
                        "xhigh": {"thinking": {"type": "enabled"}}}},
          _TEXT, ("glm-4.6", "glm-5")),
    Route(r"kimi-", "openai-chat", "https://api.moonshot.ai/v1", ("MOONSHOT_API_KEY",), "Moonshot", "MOONSHOT_BASE_URL",
          {"reasoning_field": "reasoning_content", "echo_reasoning_on_tool_turns": True, "tool_choice": ("auto", "none"),
           "thinking": {"none": {"thinking": {"type": "disabled"}}, "low": {"thinking": {"type": "enabled"}},
                        "medium": {"thinking": {"type": "enabled"}}, "high": {"thinking": {"type": "enabled"}},
                        "xhigh": {"thinking": {"type": "enabled"}}}},
          _VISION, ("kimi-k2.5",)),
    Route(r"qwen", "openai-chat", "https://dashscope-intl.aliyuncs.com/compatible-mode/v1", ("DASHSCOPE_API_KEY",),
          "Alibaba Cloud (DashScope)", "DASHSCOPE_BASE_URL",
          {"reasoning_field": "reasoning_content", "tool_choice": ("auto", "none"),
           "thinking": {"none": {"enable_thinking": False}, "low": {"enable_thinking": True},
                        "medium": {"enable_thinking": True}, "high": {"enable_thinking": True},
                        "xhigh": {"enable_thinking": True}}},
          _VISION, ("qwen3-max", "qwen-plus")),
    Route(r"minimax-", "openai-chat", "https://api.minimax.io/v1", ("MINIMAX_API_KEY",), "MiniMax", "MINIMAX_BASE_URL",
          {"tool_choice": ("auto", "none")}, _TEXT, ("MiniMax-M2",)),
    Route(r"[a-z0-9._-]+/[a-z0-9._:-]+", "openai-chat", "https://openrouter.ai/api/v1", ("OPENROUTER_API_KEY",),
          "OpenRouter", "OPENROUTER_BASE_URL", {"reasoning_field": "reasoning"}, _VISION,
          ("anthropic/claude-sonnet-4.6", "deepseek/deepseek-v3.2")),
]


def is_loopback(base_url: str) -> bool:
    """True for http(s)://localhost, 127.0.0.0/8 and [::1] (local servers need no key)."""
    try:
        host = urlsplit(base_url).hostname or ""
    except ValueError:
        return False
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _route_for(model: str) -> Optional[Route]:
    for route in ROUTES:
        if route.matches(model):
            return route
    return None


def resolve(
    model: str,
    client_type: Optional[str] = None,
    base_url: Optional[str] = None,
    api_key: Optional[str] = None,
    environ: Optional[Mapping[str, str]] = None,
) -> Tuple[str, str, Optional[str], Dict[str, Any]]:
    """-> (client_type, base_url, api_key, quirks) for a model, following the credential rule.

    A key from an environment variable is sent only to that variable's own official
    endpoint (or the endpoint its ``*_BASE_URL`` variable names).  A base_url given
    without an api_key raises ConfigError unless the host is loopback.
    """
    env = os.environ if environ is None else environ
    alias = None
    if not isinstance(model, str) or not model.strip():
        raise ConfigError("model must be a non-empty string")
    if client_type is not None:
        if not isinstance(client_type, str):
            raise ConfigError("client_type must be a string")
        alias = client_type
        client_type = ALIASES.get(client_type, client_type)
        if client_type not in CLIENT_TYPES:
            raise ConfigError("unknown client_type {!r}; known: {}".format(
                client_type, ", ".join(sorted(set(CLIENT_TYPES) | set(ALIASES)))))
    route = _route_for(model)
    if route is not None and client_type is not None and route.client_type != client_type:
        route = None  # the caller forces another protocol: the row's endpoint and quirks do not apply
    if route is None and client_type is None:
        raise ConfigError(
            "cannot route model {!r}: pass client_type (one of {}) and base_url, e.g. "
            "AutoLLMClient({!r}, client_type='openai-chat', base_url='http://127.0.0.1:8000/v1')".format(
                model, ", ".join(sorted(CLIENT_TYPES)), model)
        )
    quirks = dict(route.quirks) if route is not None else {}
    if route is None and (alias == "openai-embedding" or re.search(r"embed", model, re.I)):
        quirks["embeddings"] = True  # a forced protocol serving an embedding model
    if client_type is None:
        client_type = route.client_type  # type: ignore[union-attr]
    if base_url is not None:
        if not isinstance(base_url, str) or not re.match(r"^https?://[^/]", base_url):
            raise ConfigError("base_url must be an http(s) URL (got {!r})".format(base_url))
        if api_key is None and not is_loopback(base_url):
            raise ConfigError(
                "api_key is required with base_url {!r}: keys from the environment are only sent to their own "
                "provider's endpoint (a loopback base_url needs none)".format(_host(base_url))
            )
        return client_type, base_url, api_key, quirks
    if route is not None:
        env_url = env.get(route.base_url_env) if route.base_url_env else None
        endpoint = env_url or route.base_url
        key_names = route.key_env
    else:
        env_url = None
        endpoint = CLIENT_TYPES[client_type]
        key_names = (PROTOCOL_KEYS[client_type],)
        env_url = env.get(key_names[0].replace("_API_KEY", "_BASE_URL"))
        endpoint = env_url or endpoint
    if api_key is None:
        for name in key_names:
            if env.get(name):
                api_key = env[name]
                break
    if api_key is None and not is_loopback(endpoint):
        raise ConfigError(
            "no API key for {!r}: pass api_key= or set {}".format(model, " or ".join(key_names))
        )
    return client_type, endpoint, api_key, quirks


def _host(url: str) -> str:
    try:
        return urlsplit(url).hostname or url
    except ValueError:
        return url


def list_models() -> List[Dict[str, Any]]:
    """The registry rows, for UIs and CLIs: pattern, protocol, endpoint, key variable, modalities, examples."""
    return [
        {
            "pattern": route.pattern,
            "vendor": route.vendor,
            "client_type": route.client_type,
            "base_url": route.base_url,
            "api_key_env": list(route.key_env),
            "input_modalities": list(route.modalities[0]),
            "output_modalities": list(route.modalities[1]),
            "examples": list(route.examples),
        }
        for route in ROUTES
    ]
