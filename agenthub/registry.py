"""Routing as data: model-name patterns -> wire protocol, official endpoint, key variable, quirks.

Each row of ``ROUTES`` is one vendor endpoint (or one model family at it).  A model
name is matched against the rows' ``pattern`` in order, case-insensitively, from the
start of the name; the first match wins.  A row may also be picked by name with
``client_type=`` (its ``presets``), whatever the model is called: that is how local
servers (vLLM, Ollama, LM Studio, llama.cpp) and vendor endpoints under another URL
are reached.

Quirks are the vendor differences a protocol module reads (see the docstring of
``agenthub.providers.openai_chat`` for the Chat Completions keys).  ``thinking``
lists the levels a model supports; ``resolve`` clamps the other levels to the
nearest supported one (ties go up), so a thinking_level never raises.

The credential rule: a key read from an environment variable is sent only to that
variable's own endpoint (the row's official URL, or the URL its ``*_BASE_URL``
variable names).  A ``base_url`` given without ``api_key`` is a ConfigError unless
the host is loopback.  A row's endpoint quirks apply at its own hosts; at any other
``base_url`` they apply only when the row was named with ``client_type=``.

Adding an OpenAI-compatible vendor is one ``Route`` row (see docs/providers.md).
"""

import os
import re
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from . import hosts, providers
from ._redact import shown_url
from .errors import ConfigError
from .hosts.credentials import check_not_private_key, is_token_provider
from .hosts.trust import check_base_url, check_model_segments, is_loopback, url_host
from .providers._common import nearest

__all__ = [
    "Route",
    "ROUTES",
    "CLIENT_TYPES",
    "ALIASES",
    "LEVELS",
    "resolve",
    "route_for",
    "presets",
    "list_models",
    "is_loopback",
    "clamp_level",
    "chosen_route",
    "provider_name",
    "PROVIDER_HOSTS",
]

#: drop-in names kept from AgentHub
ALIASES = {"openai": "openai-chat", "ant-messages": "anthropic", "openai-embedding": "openai-chat",
           "google-genai": "gemini", "gemini-generate-content": "gemini",
           "azure-openai": "azure", "vertex-ai": "vertex", "vertexai": "vertex"}
#: thinking levels, lightest first (ThinkingLevel values)
LEVELS = ("none", "low", "medium", "high", "xhigh", "max")
#: quirks that describe the model, not the endpoint: they apply at any base_url
MODEL_QUIRKS = ("embeddings", "tts", "image_output")


def _derived_tables() -> Dict[str, Any]:
    """CLIENT_TYPES, PROTOCOL_KEYS and QUIRK_KEYS, read from the client-type rows, their hosts and
    the dialects' records (every module is imported: these are for tools and tests; routing reads one row)."""
    rows = hosts.all_client_types()
    quirk_keys = set(MODEL_QUIRKS)
    for record in providers.all_protocols():
        quirk_keys.update(record.quirk_keys)
    for row in rows:
        quirk_keys.update(row.host.quirk_keys)
    return {
        #: client_type -> default base URL when the caller names the protocol but no endpoint
        "CLIENT_TYPES": {row.name: row.host.base_url for row in rows},
        #: client_type -> (key variables, the variable that moves the endpoint)
        "PROTOCOL_KEYS": {row.name: (row.key_env, row.base_url_env) for row in rows},
        #: every quirk key a row may carry: what some dialect or host reads (a typo in a row is caught by the tests)
        "QUIRK_KEYS": tuple(sorted(quirk_keys)),
    }


def __getattr__(name: str) -> Any:  # PEP 562: the derived tables are built on first use
    if name in ("CLIENT_TYPES", "PROTOCOL_KEYS", "QUIRK_KEYS"):
        tables = _derived_tables()
        globals().update(tables)
        return tables[name]
    raise AttributeError("module {!r} has no attribute {!r}".format(__name__, name))


_TEXT = (("text",), ("text",))
#: servers with JSON mode but no json_schema (DeepSeek, Z.AI, Moonshot document only {"type": "json_object"})
_JSON_MODE_ONLY = ("text", "json_object")
_VISION = (("text", "image"), ("text",))


class _Undeclared(str):
    """The ``provider`` of a Route that declares none: reads as no provider (falsy)."""

    def __bool__(self) -> bool:
        return False


#: a Route built without ``provider=`` (read as None; tests/test_registry.py refuses it in ROUTES)
_UNDECLARED = _Undeclared("")


class Route(object):
    """One registry row: where a family of models lives and how its server differs.

    ``pattern``: regular expression matched at the start of the model name (None:
    reached only through ``presets``).  ``client_type``: the wire protocol.
    ``base_url``: the official endpoint.  ``key_env``: environment variables read for
    the key, in order.  ``base_url_env``: the variable that may name another endpoint
    for that key.  ``hosts``: other host names that are this vendor's own.
    ``presets``: client_type names that pick this row whatever the model name.
    ``modalities``: (input, output) for UIs.  ``examples``: model names it serves.
    ``label``: the pattern in words, for people (``"deepseek-*"``).
    ``provider``: the vendor's ``gen_ai.provider.name`` (OpenTelemetry's well-known value: ``deepseek``,
    ``moonshot_ai``, ...), said of every call this row serves (picked by its preset, or by the model name
    at the vendor's own hosts) and of a Chat Completions client at those hosts; None: the vendor has no
    well-known value, the client-type row's is said (``openai`` for Chat Completions).  Every row of
    ``ROUTES`` declares it.
    """

    __slots__ = ("pattern", "client_type", "base_url", "key_env", "vendor", "base_url_env", "quirks", "modalities",
                 "examples", "presets", "hosts", "label", "provider", "_regex")

    def __init__(
        self,
        pattern: Optional[str],
        client_type: str,
        base_url: str,
        key_env: Tuple[str, ...],
        vendor: str,
        base_url_env: Optional[str] = None,
        quirks: Optional[Mapping[str, Any]] = None,
        modalities: Tuple[Tuple[str, ...], Tuple[str, ...]] = _VISION,
        examples: Tuple[str, ...] = (),
        presets: Tuple[str, ...] = (),
        hosts: Tuple[str, ...] = (),
        label: Optional[str] = None,
        provider: Any = _UNDECLARED,
    ) -> None:
        self.pattern = pattern
        #: _UNDECLARED (a row of your own that names none) reads as None; the shipped rows each declare it
        self.provider = provider  # type: Optional[str]
        self.client_type = client_type
        self.base_url = base_url
        self.key_env = tuple(key_env)
        self.vendor = vendor
        self.base_url_env = base_url_env
        self.quirks = dict(quirks or {})
        self.modalities = modalities
        self.examples = tuple(examples)
        self.presets = tuple(presets)
        self.hosts = tuple(hosts)
        self.label = label or pattern or ""
        self._regex = re.compile(pattern, re.I) if pattern is not None else None

    def matches(self, model: str) -> bool:
        return self._regex is not None and self._regex.match(model) is not None

    def own_host(self, url: str) -> bool:
        """True when ``url`` points at this vendor's own servers."""
        return self.own_host_name(_hostname(url))

    def own_host_name(self, host: str) -> bool:
        """True when ``host`` (a host name, lowercase) is one of this vendor's own servers."""
        return bool(host) and (host == _hostname(self.base_url) or host in self.hosts)

    def __repr__(self) -> str:
        return "Route({!r} -> {} at {})".format(self.pattern or "|".join(self.presets), self.client_type, self.base_url)


def _same(fields: Mapping[str, Any], *levels: str) -> Dict[str, Dict[str, Any]]:
    return {level: dict(fields) for level in levels}


def _effort(field: str, mapping: Mapping[str, str], extra: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
    """thinking spec: each supported level -> {field: effort} (+ ``extra``)."""
    out = {}
    for level, effort in mapping.items():
        fields = dict(extra or {})
        fields[field] = effort
        out[level] = fields
    return out


_ON_OFF = dict(_same({"thinking": {"type": "enabled"}}, "low", "medium", "high", "xhigh"),
               none={"thinking": {"type": "disabled"}})
_TEMPLATE_SWITCH = dict(_same({"chat_template_kwargs": {"enable_thinking": True}}, "low", "medium", "high", "xhigh"),
                        none={"chat_template_kwargs": {"enable_thinking": False}})

ROUTES = [
    # -- gateways: vendor/model names ---------------------------------------------------------
    Route(r"[^/\s]+/[^/\s]+$", "openai-chat", "https://openrouter.ai/api/v1", ("OPENROUTER_API_KEY",), "OpenRouter",
          "OPENROUTER_BASE_URL",
          # completion_tokens includes reasoning for some upstreams and not for others: the Chat
          # parser tells them apart by total_tokens (_common.inclusive_usage), whatever the row says
          {"reasoning_field": "reasoning", "reasoning_details": True, "max_tokens_field": "max_tokens",
           # OpenRouter's efforts stop at xhigh: max rides it
           "thinking": {level: {"reasoning": {"effort": level}} for level in LEVELS if level != "max"}},
          _VISION, ("deepseek/deepseek-v4-flash", "moonshotai/kimi-k2.6", "anthropic/claude-sonnet-4.6"),
          presets=("openrouter",), label="vendor/model", provider=None),
    # -- OpenAI ------------------------------------------------------------------------------------
    Route(r"text-embedding-(?!00\d)", "openai-chat", "https://api.openai.com/v1", ("OPENAI_API_KEY",), "OpenAI",
          "OPENAI_BASE_URL", {"embeddings": True}, (("text",), ("embedding",)),
          ("text-embedding-3-small", "text-embedding-3-large"), label="text-embedding-*", provider="openai"),
    Route(r"(?:gpt-|chatgpt-|codex-|o[134](?:$|-))", "openai-responses", "https://api.openai.com/v1",
          ("OPENAI_API_KEY",), "OpenAI", "OPENAI_BASE_URL", {}, _VISION, ("gpt-5.5", "gpt-5.6-terra", "o4-mini"),
          label="gpt-*, o1*, o3*, o4*, codex-*", provider="openai"),
    # -- Anthropic ---------------------------------------------------------------------------------
    Route(r"claude-", "anthropic", "https://api.anthropic.com", ("ANTHROPIC_API_KEY",), "Anthropic",
          "ANTHROPIC_BASE_URL", {}, _VISION, ("claude-sonnet-4-6", "claude-opus-4-8", "claude-sonnet-5"),
          label="claude-*", provider="anthropic"),
    # -- Amazon Bedrock (Converse stream, SigV4): model ids and inference profiles -----------------
    # (inference-profile ARNs and names outside these vendors need client_type="bedrock"; the
    # endpoint's region comes from AWS_REGION / the profile, credentials per agenthub.aws)
    Route(r"(?:(?:us|eu|apac|global|jp|au|ca|us-gov)\.)?(?:anthropic|amazon|meta|mistral|cohere|ai21|deepseek|qwen|"
          r"openai|writer|moonshot|moonshotai|minimax|zai|google|nvidia|twelvelabs)\.[a-z0-9]", "bedrock",
          "https://bedrock-runtime.{region}.amazonaws.com", ("AWS_BEARER_TOKEN_BEDROCK", "AWS_ACCESS_KEY_ID"),
          "Amazon Bedrock", "AWS_ENDPOINT_URL_BEDROCK_RUNTIME", {}, _VISION,
          ("us.anthropic.claude-sonnet-4-5-20250929-v1:0", "global.anthropic.claude-opus-4-5-20251101-v1:0",
           "amazon.nova-pro-v1:0", "meta.llama3-3-70b-instruct-v1:0", "mistral.mistral-large-2407-v1:0"),
          label="anthropic.*, amazon.*, meta.*, ...", provider="aws.bedrock"),
    # -- Google ------------------------------------------------------------------------------------
    Route(r"(?:gemini-embedding|gemini-[^/]*-embedding|text-embedding-00\d|embedding-00\d)", "gemini",
          "https://generativelanguage.googleapis.com", ("GEMINI_API_KEY", "GOOGLE_API_KEY"), "Google",
          "GEMINI_BASE_URL", {"embeddings": True}, (("text",), ("embedding",)),
          ("gemini-embedding-001", "gemini-embedding-2"), label="gemini-*embedding*", provider="gcp.gemini"),
    Route(r"gemini-.*-tts", "gemini", "https://generativelanguage.googleapis.com", ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
          "Google", "GEMINI_BASE_URL", {"tts": True}, (("text",), ("audio",)), ("gemini-3.1-flash-tts-preview",),
          label="gemini-*-tts*", provider="gcp.gemini"),
    Route(r"gemini-.*-image", "gemini", "https://generativelanguage.googleapis.com",
          ("GEMINI_API_KEY", "GOOGLE_API_KEY"), "Google", "GEMINI_BASE_URL", {"image_output": True},
          (("text", "image"), ("text", "image")), ("gemini-3.1-flash-image",), label="gemini-*-image*", provider="gcp.gemini"),
    Route(r"gemini-", "gemini", "https://generativelanguage.googleapis.com", ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
          "Google", "GEMINI_BASE_URL", {}, (("text", "image", "audio", "video"), ("text",)),
          ("gemini-3.5-flash", "gemini-3.5-flash-lite"), label="gemini-*", provider="gcp.gemini"),
    # -- Chat Completions vendors ------------------------------------------------------------------
    Route(r"deepseek-.*vision", "openai-chat", "https://api.deepseek.com", ("DEEPSEEK_API_KEY",), "DeepSeek",
          "DEEPSEEK_BASE_URL",
          {"reasoning_field": "reasoning_content", "echo_reasoning_on_tool_turns": True, "answers_required": True,
           "max_tokens_field": "max_tokens", "tool_choice": ("auto", "none"), "fast_mode": False,
           "response_formats": _JSON_MODE_ONLY,
           "thinking": dict(_effort("reasoning_effort", {"low": "low", "high": "high", "xhigh": "max"},
                                    {"thinking": {"type": "enabled"}}),
                            none={"thinking": {"type": "disabled"}})},
          _VISION, ("deepseek-v4-flash-vision-exp",), label="deepseek-*vision*", provider="deepseek"),
    Route(r"deepseek-", "openai-chat", "https://api.deepseek.com", ("DEEPSEEK_API_KEY",), "DeepSeek",
          "DEEPSEEK_BASE_URL",
          {"reasoning_field": "reasoning_content", "echo_reasoning_on_tool_turns": True, "answers_required": True,
           "images": False, "max_tokens_field": "max_tokens", "tool_choice": ("auto", "none"), "fast_mode": False,
           "response_formats": _JSON_MODE_ONLY,
           # thinking on by default; efforts low/high/max (medium rides high)
           "thinking": dict(_effort("reasoning_effort", {"low": "low", "high": "high", "xhigh": "max"},
                                    {"thinking": {"type": "enabled"}}),
                            none={"thinking": {"type": "disabled"}})},
          _TEXT, ("deepseek-v4-flash", "deepseek-v4-pro", "deepseek-chat"), presets=("deepseek",), label="deepseek-*", provider="deepseek"),
    Route(r"glm-5\.3", "openai-chat", "https://api.z.ai/api/paas/v4", ("ZAI_API_KEY",), "Z.AI", "ZAI_BASE_URL",
          {"reasoning_field": "reasoning_content", "max_tokens_field": "max_tokens", "tool_choice": ("auto",),
           "tool_stream": True, "fast_mode": False, "response_formats": _JSON_MODE_ONLY,
           # thinking cannot be switched off: none rides the lightest effort
           "thinking": _effort("reasoning_effort", {"low": "low", "high": "high", "xhigh": "max"},
                               {"thinking": {"type": "enabled"}})},
          _TEXT, ("glm-5.3",), hosts=("open.bigmodel.cn",), label="glm-5.3*", provider=None),
    Route(r"glm-", "openai-chat", "https://api.z.ai/api/paas/v4", ("ZAI_API_KEY",), "Z.AI", "ZAI_BASE_URL",
          {"reasoning_field": "reasoning_content", "max_tokens_field": "max_tokens", "tool_choice": ("auto",),
           "tool_stream": True, "fast_mode": False, "response_formats": _JSON_MODE_ONLY,
           "thinking": _ON_OFF},
          _TEXT, ("glm-5.1", "glm-4.7"), presets=("zai",), hosts=("open.bigmodel.cn",), label="glm-*", provider=None),
    Route(r"kimi-k3", "openai-chat", "https://api.moonshot.ai/v1", ("MOONSHOT_API_KEY",), "Moonshot",
          "MOONSHOT_BASE_URL",
          {"reasoning_field": "reasoning_content", "echo_reasoning_on_tool_turns": True, "answers_required": True,
           "tool_choice": ("auto", "none"), "fast_mode": False, "response_formats": _JSON_MODE_ONLY,
           # always thinks: efforts low/high/max
           "thinking": _effort("reasoning_effort", {"low": "low", "high": "high", "xhigh": "max"})},
          _VISION, ("kimi-k3",), hosts=("api.moonshot.cn",), label="kimi-k3*", provider="moonshot_ai"),
    Route(r"kimi-", "openai-chat", "https://api.moonshot.ai/v1", ("MOONSHOT_API_KEY",), "Moonshot",
          "MOONSHOT_BASE_URL",
          {"reasoning_field": "reasoning_content", "echo_reasoning_on_tool_turns": True, "answers_required": True,
           "tool_choice": ("auto", "none"), "fast_mode": False, "response_formats": _JSON_MODE_ONLY,
           "thinking": _ON_OFF},
          _VISION, ("kimi-k2.6", "kimi-k2.5"), presets=("moonshot",), hosts=("api.moonshot.cn",),
          label="kimi-*", provider="moonshot_ai"),
    Route(r"moonshot-v1", "openai-chat", "https://api.moonshot.ai/v1", ("MOONSHOT_API_KEY",), "Moonshot",
          "MOONSHOT_BASE_URL", {"tool_choice": ("auto", "none"), "fast_mode": False, "answers_required": True,
                                  "response_formats": _JSON_MODE_ONLY}, _TEXT, ("moonshot-v1-32k",),
          hosts=("api.moonshot.cn",), label="moonshot-v1*", provider="moonshot_ai"),
    Route(r"(?:qwen|qwq)", "openai-chat", "https://dashscope-intl.aliyuncs.com/compatible-mode/v1",
          ("DASHSCOPE_API_KEY",), "Alibaba Cloud (DashScope)", "DASHSCOPE_BASE_URL",
          {"reasoning_field": "reasoning_content", "max_tokens_field": "max_tokens", "tool_choice": ("auto", "none"),
           "fast_mode": False, "answers_required": True,
           "thinking": dict(_same({"enable_thinking": True}, "low", "medium", "high", "xhigh"),
                            none={"enable_thinking": False})},
          _VISION, ("qwen3-max", "qwen-plus", "qwen3-vl-plus"), presets=("dashscope",),
          hosts=("dashscope.aliyuncs.com",), label="qwen*, qwq*", provider=None),
    Route(r"minimax-", "openai-chat", "https://api.minimax.io/v1", ("MINIMAX_API_KEY",), "MiniMax", "MINIMAX_BASE_URL",
          {"tool_choice": ("auto", "none"), "thinking": {}}, _VISION, ("MiniMax-M3", "MiniMax-M2.7"), presets=("minimax",),
          hosts=("api.minimaxi.com",), label="minimax-*", provider=None),
    # -- local servers: client_type picks them, any model name -------------------------------------
    Route(None, "openai-chat", "http://127.0.0.1:8000/v1", ("VLLM_API_KEY",), "vLLM", None,
          {"reasoning_field": "reasoning_content", "thinking": _TEMPLATE_SWITCH, "fast_mode": False}, _VISION, ("Qwen/Qwen3-8B",),
          presets=("vllm",), provider=None),
    Route(None, "openai-chat", "http://127.0.0.1:11434/v1", (), "Ollama", None,
          {"reasoning_field": "reasoning", "max_tokens_field": "max_tokens", "fast_mode": False,
           "thinking": {level: {"reasoning_effort": level} for level in ("none", "low", "medium", "high")}},
          _VISION, ("qwen3:8b", "gpt-oss:20b"), presets=("ollama",), provider=None),
    Route(None, "openai-chat", "http://127.0.0.1:1234/v1", (), "LM Studio", None,
          {"reasoning_field": "reasoning_content", "max_tokens_field": "max_tokens", "fast_mode": False}, _VISION,
          ("qwen/qwen3-8b",), presets=("lmstudio", "lm-studio"), provider=None),
    Route(None, "openai-chat", "http://127.0.0.1:8080/v1", ("LLAMA_API_KEY",), "llama.cpp", None,
          {"reasoning_field": "reasoning_content", "max_tokens_field": "max_tokens", "thinking": _TEMPLATE_SWITCH,
           "fast_mode": False},
          _VISION, ("local",), presets=("llama.cpp", "llamacpp", "llama-cpp"), provider=None),
    # -- Anthropic-compatible gateways: client_type picks them; they read the key as a bearer token ----
    Route(None, "anthropic", "https://api.z.ai/api/anthropic", ("ZAI_API_KEY",), "Z.AI (Anthropic API)", None,
          {"auth": "bearer"}, _TEXT, ("glm-5.1",), presets=("zai-anthropic",), provider=None),
    Route(None, "anthropic", "https://openrouter.ai/api", ("OPENROUTER_API_KEY",), "OpenRouter (Anthropic API)", None,
          {"auth": "bearer"}, _VISION, ("anthropic/claude-sonnet-4.6",), presets=("openrouter-anthropic",), provider=None),
    # -- another agenthub: `agenthub serve`, the model being an id of its models table -------------
    Route(None, "agenthub", "http://127.0.0.1:8787", ("AGENTHUB_SERVER_KEY",), "agenthub serve",
          "AGENTHUB_SERVER_URL", {}, _VISION, ("fast",), presets=("agenthub",), provider=None),
]


def presets() -> Dict[str, Route]:
    """client_type names that pick a registry row (``vllm``, ``ollama``, ``deepseek``, ...)."""
    out = {}  # type: Dict[str, Route]
    for route in ROUTES:
        for name in route.presets:
            out.setdefault(name, route)
    return out


def route_for(model: str) -> Optional[Route]:
    """The first row whose pattern matches ``model`` (None when no row does)."""
    for route in ROUTES:
        if route.matches(model):
            return route
    return None


#: OpenAI-compatible vendors with a well-known ``gen_ai.provider.name`` and no row here yet, known by their
#: host (and its subdomains) alone; a vendor that gets a Route declares its ``provider`` there instead
PROVIDER_HOSTS = (
    ("api.groq.com", "groq"),
    ("api.mistral.ai", "mistral_ai"),
    ("api.x.ai", "x_ai"),
    ("api.perplexity.ai", "perplexity"),
    ("api.cohere.com", "cohere"),
    ("api.cohere.ai", "cohere"),
)


def _under(host: str, names: Sequence[str]) -> bool:
    return any(host == name or host.endswith("." + name) for name in names)


def chosen_route(model: str, client_type: Optional[str] = None, base_url: Optional[str] = None) -> Optional[Route]:
    """The registry row whose vendor facts a client of (``model``, ``client_type``, ``base_url``) carries, as
    ``resolve`` picks it: the preset ``client_type`` names (at any base_url), else the row the model name
    picks for that protocol at the vendor's own endpoint (no ``base_url``, or one of its hosts); None: no row."""
    table = presets()
    by_name = route_for(model) if isinstance(model, str) else None
    if client_type is not None and client_type in table:
        chosen = table[client_type]
        if by_name is not None and by_name.vendor == chosen.vendor and by_name.client_type == chosen.client_type:
            return by_name
        return chosen
    kind = ALIASES.get(client_type, client_type) if client_type is not None else None
    if by_name is None or (kind is not None and by_name.client_type != kind):
        return None
    if base_url is not None and not by_name.own_host(base_url):
        return None
    return by_name


def provider_name(client_type: str, host: str = "", route: Optional[Route] = None) -> str:
    """``gen_ai.provider.name`` of a client: the chosen registry row's vendor (``route``, from
    ``chosen_route``), else, for a dialect other vendors speak (Chat Completions, Responses), the vendor whose
    own host ``host`` is (a Route's, a client-type row's ``provider_hosts``, ``PROVIDER_HOSTS``), else the
    client-type row's ``provider``.  An unknown client type: its own name."""
    if route is not None and route.provider:
        return route.provider
    row = hosts.CLIENT_TYPES.get(client_type)
    if row is None:
        return client_type
    host = (host or "").lower()
    if host and not is_loopback("http://" + host) and row.facts.provider_by_host:
        for candidate in ROUTES:
            if candidate.provider and candidate.own_host_name(host):
                return candidate.provider
        for other in hosts.CLIENT_TYPES.values():
            if other.provider and _under(host, other.provider_hosts):
                return other.provider
        for name, value in PROVIDER_HOSTS:
            if _under(host, (name,)):
                return value
    return row.provider or row.name


def clamp_level(level: str, supported: Sequence[str]) -> str:
    """The supported level nearest to ``level`` (ties go to the heavier level)."""
    return nearest(level, supported, LEVELS)


def _full_thinking(spec: Mapping[str, Mapping[str, Any]]) -> Dict[str, Dict[str, Any]]:
    """A row's thinking spec (supported levels only) -> a mapping for every level."""
    supported = [level for level in LEVELS if level in spec]
    return {level: _copy(spec[clamp_level(level, supported)]) for level in LEVELS}


def _copy(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


def _quirks(route: Optional[Route], endpoint_quirks: bool) -> Dict[str, Any]:
    if route is None:
        return {}
    quirks = {}  # type: Dict[str, Any]
    for key, value in route.quirks.items():
        if endpoint_quirks or key in MODEL_QUIRKS:
            quirks[key] = _copy(value)
    if quirks.get("thinking"):
        quirks["thinking"] = _full_thinking(quirks["thinking"])
    return quirks


def _check_url(url: Any, what: str) -> str:
    check_base_url(url, what)  # an http(s) URL whose host every parser reads alike (hosts.trust)
    if "#" in url:  # the request's path would be appended to the fragment, which HTTP never sends
        raise ConfigError("{} takes no fragment (#...): the request's path is appended to it (got {!r})".format(
            what, shown_url(url)))
    return url


def _protocol_names() -> str:
    return ", ".join(sorted(hosts.CLIENT_TYPES))


def resolve(
    model: str,
    client_type: Optional[str] = None,
    base_url: Optional[str] = None,
    api_key: Any = None,
    environ: Optional[Mapping[str, str]] = None,
) -> Tuple[str, str, Any, Dict[str, Any]]:
    """-> (client_type, base_url, api_key, quirks) for a model, following the credential rule.

    ``client_type`` is a protocol (``openai-chat``, ``openai-responses``,
    ``anthropic``, ``gemini``), an AgentHub alias (``openai``, ``ant-messages``, ...)
    or a registry preset (``vllm``, ``ollama``, ``lmstudio``, ``llama.cpp``,
    ``openrouter``, ``deepseek``, ``zai``, ``moonshot``, ``dashscope``, ``minimax``).
    """
    env = os.environ if environ is None else environ
    if not isinstance(model, str) or not model.strip():
        raise ConfigError("model must be a non-empty string")
    check_model_segments(model)  # "." and ".." would climb out of their place in a URL path
    if isinstance(api_key, str):
        check_not_private_key(api_key)  # a service-account JSON is refused here, before anything is sent
    by_name = route_for(model)
    chosen = None  # type: Optional[Route]
    named = False  # the row was picked by client_type: its quirks follow it to any base_url
    alias = client_type
    if client_type is not None:
        if not isinstance(client_type, str):
            raise ConfigError("client_type must be a string")
        table = presets()
        if client_type in table:
            chosen = table[client_type]
            if by_name is not None and by_name.vendor == chosen.vendor and by_name.client_type == chosen.client_type:
                chosen = by_name  # the vendor's row for this very model (e.g. kimi-k3 under "moonshot")
            named = True
            client_type = chosen.client_type
        else:
            client_type = ALIASES.get(client_type, client_type)
            if client_type not in hosts.CLIENT_TYPES:
                raise ConfigError("unknown client_type {!r}; protocols: {}; aliases: {}; presets: {}".format(
                    alias, _protocol_names(), ", ".join(sorted(ALIASES)), ", ".join(sorted(table))))
            if by_name is not None and by_name.client_type == client_type:
                chosen = by_name
    else:
        if by_name is None:
            raise ConfigError(
                "cannot route model {!r} by its name: pass client_type (a protocol: {}; or a preset: {}) and "
                "base_url, e.g. AutoLLMClient({!r}, client_type='openai-chat', "
                "base_url='http://127.0.0.1:8000/v1'); `agenthub models` lists the known names".format(
                    model, _protocol_names(), ", ".join(sorted(presets())), model))
        chosen = by_name
        client_type = by_name.client_type
        if client_type == "gemini" and _gemini_api(env) == "interactions" and not any(
                by_name.quirks.get(key) for key in MODEL_QUIRKS):
            client_type = "gemini-interactions"  # GEMINI_API=interactions: the same models, the other API
            chosen = None
    assert client_type is not None

    row = hosts.client_type(client_type)
    host = row.host
    if host.configure is not None:  # Azure, Vertex AI, Bedrock: the caller's own cloud resource
        client_type, endpoint, api_key, extra = host.configure(row, model, base_url, api_key, env)
        # no row of its own: what the model name says of the model (tts, image output) still applies
        quirks = dict(hosts.client_type(client_type).quirks)
        quirks.update(_quirks(chosen, True) if chosen is not None else _quirks(by_name, False))
        quirks.update(extra)
        if isinstance(api_key, str):
            check_not_private_key(api_key, "the key read from the environment")
        return client_type, endpoint, api_key, quirks
    if is_token_provider(api_key):
        raise ConfigError("client_type {!r} takes a key string as api_key; a token callable is taken by {}".format(
            client_type, ", ".join(r.name for r in hosts.all_client_types() if r.host.takes_token_callable)))
    if api_key is not None and (not isinstance(api_key, str) or not api_key):
        raise ConfigError("api_key must be a non-empty string (or None to read it from the environment)")

    if base_url is not None:
        _check_url(base_url, "base_url")
        if api_key is None and not is_loopback(base_url):
            raise ConfigError(
                "api_key is required with base_url {!r}: keys from the environment are only sent to their own "
                "provider's endpoint (a loopback base_url needs none)".format(_hostname(base_url) or base_url))
        quirks = _quirks(chosen, named or (chosen is not None and chosen.own_host(base_url)))
        endpoint = base_url
    else:
        if chosen is not None:
            url_var = chosen.base_url_env
            key_names = chosen.key_env
            default = chosen.base_url
        else:
            key_names, url_var, default = host.key_env, host.base_url_env, host.base_url
        env_url = env.get(url_var) if url_var else None
        endpoint = _check_url(env_url, url_var) if env_url else default
        quirks = _quirks(chosen, True)
        if api_key is None:
            for name in key_names:
                if env.get(name):
                    api_key = env[name]
                    break
        if api_key is None and not is_loopback(endpoint):
            if key_names:
                hint = "pass api_key= or set {}".format(" or ".join(key_names))
            else:
                hint = "pass api_key="
            raise ConfigError("no API key for model {!r} at {}: {}".format(model, _hostname(endpoint), hint))
    if isinstance(api_key, str):
        check_not_private_key(api_key, "the key read from the environment")
    if alias == "openai-embedding" or re.search(r"embed", model, re.I):
        quirks["embeddings"] = True  # embedding models keep their name's promise at any endpoint
    if row.quirks:
        quirks = dict(row.quirks, **quirks)
    if host.own_quirks and host.base_url and url_host(endpoint) == url_host(host.base_url):
        quirks = dict(host.own_quirks, **quirks)  # the vendor's own servers (the anthropic dialect's first party)
    return client_type, endpoint, api_key, quirks


def _gemini_api(env: Mapping[str, str]) -> str:
    """``GEMINI_API``: which of Google's APIs a ``gemini-*`` model routed by name speaks
    (``interactions``, or ``generate_content``, the default)."""
    value = (env.get("GEMINI_API") or "").strip().lower().replace("-", "_")
    if value in ("", "generate_content", "generatecontent"):
        return "generate_content"
    if value == "interactions":
        return value
    raise ConfigError("GEMINI_API must be 'interactions' or 'generate_content' (got {!r})".format(value[:40]))


def _hostname(url: str) -> str:
    return url_host(url)


def _modalities(route: Route) -> Tuple[List[str], List[str]]:
    return list(route.modalities[0]), list(route.modalities[1])


def list_models() -> List[Dict[str, Any]]:
    """The registry rows, for UIs and CLIs.

    Each row: ``pattern`` (None for rows reached only by client_type), ``label``
    (the names it serves, in words), ``presets``
    (client_type names that pick the row), ``vendor``, ``client_type`` (the wire
    protocol), ``base_url``, ``api_key_env``, ``base_url_env``,
    ``input_modalities``, ``output_modalities``, ``examples``, ``models`` (always empty: limits
    and prices per model are the catalog's, ``agenthub.list_supported_models()``).
    ``AutoLLMClient(example)`` routes to the row (with ``client_type=`` a preset
    for rows without a pattern).
    """
    rows = []
    for route in ROUTES:
        inputs, outputs = _modalities(route)
        rows.append({
            "pattern": route.pattern,
            "label": route.label if route.pattern is not None else "client_type=" + route.presets[0],
            "presets": list(route.presets),
            "vendor": route.vendor,
            "client_type": route.client_type,
            "base_url": route.base_url,
            "api_key_env": list(route.key_env),
            "base_url_env": route.base_url_env,
            "input_modalities": inputs,
            "output_modalities": outputs,
            "examples": list(route.examples),
            "models": [],  # kept for old readers: the catalog has the models (agenthub.list_supported_models)
        })
    return rows


# -- where a key came from (for the words of a 401) ---------------------------------------------------


def key_variables(model: str, client_type: Optional[str] = None) -> Tuple[str, ...]:
    """The environment variables holding keys for ``model``'s own endpoint (the row's, else the protocol's)."""
    route = presets().get(client_type) if client_type else None
    kind = ALIASES.get(client_type, client_type) if client_type else None
    if route is None:
        route = route_for(model) if isinstance(model, str) else None
        if route is not None and kind is not None and route.client_type != kind:
            route = None
    if route is not None:
        return route.key_env
    keys = (globals().get("PROTOCOL_KEYS") or __getattr__("PROTOCOL_KEYS")).get(kind)
    return tuple(keys[0]) if keys else ()


def key_note(model: str, client_type: Optional[str], key_given: bool, key_sent: bool, url: str,
             environ: Optional[Mapping[str, str]] = None) -> Optional[str]:
    """Words for an authentication error: where the key came from, or why none was sent."""
    env = os.environ if environ is None else environ
    names = key_variables(model, client_type)
    if key_given:
        return "the key sent was the api_key argument"
    if key_sent:
        for name in names:
            if env.get(name):
                return "the key sent came from ${}".format(name)
        return None
    set_names = [name for name in names if env.get(name)]
    if set_names:
        return ("no key was sent: ${} is set, but a key from the environment goes only to its own endpoint, "
                "not to {}; pass api_key= to send a key there".format(set_names[0], _hostname(url) or url))
    return "no key was sent: pass api_key= to send one"
