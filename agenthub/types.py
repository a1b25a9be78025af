"""The uniform data model (docs/typing.md, "Data types"), as plain Python types.

Everything a user builds or reads is a TypedDict: a plain ``dict`` at runtime,
JSON-ready except for ``bytes`` in inline media.  Small frozen dataclasses hold
internal values (the HTTP request a provider plans and the transport sends).

Written for Python 3.8: ``total=False`` bases instead of ``NotRequired``,
``(str, Enum)`` instead of ``StrEnum``.
"""

import json
import re
import sys
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

try:  # Python 3.8 has both in typing
    from typing import Literal, TypedDict
except ImportError:  # pragma: no cover - Python < 3.8 is not supported
    raise

__all__ = [
    "Role",
    "EventType",
    "FinishReason",
    "ThinkingLevel",
    "PromptCaching",
    "ToolSchema",
    "ImageConfig",
    "SpeakerConfig",
    "EmbeddingConfig",
    "ResponseFormat",
    "UniConfig",
    "McpServer",
    "UsageMetadata",
    "TextItem",
    "ImageUrlItem",
    "InlineDataItem",
    "ThinkingItem",
    "InlineThinkingItem",
    "ToolCallItem",
    "ToolResultItem",
    "EmbeddingItem",
    "CompactionItem",
    "CompactionConfig",
    "PartialToolCallItem",
    "ContentItem",
    "PartialContentItem",
    "UniMessage",
    "AssistantMessage",
    "Message",
    "UniEvent",
    "ThinkingLevelName",
    "PromptCachingName",
    "ToolChoice",
    "HttpRequest",
]

Role = Literal["user", "assistant"]
EventType = Literal["start", "delta", "stop", "unused"]
FinishReason = Literal["stop", "length", "tool_call", "unknown"]
#: the values a FinishReason may take, and UsageMetadata's four buckets (in their order), for checks at runtime
FINISH_REASONS = frozenset(["stop", "length", "tool_call", "unknown"])
USAGE_KEYS = ("cached_tokens", "prompt_tokens", "thoughts_tokens", "response_tokens")


class ThinkingLevel(str, Enum):
    """How hard the model should think; clamped per model (a model with no reasoning control at all, such as a
    Bedrock family other than Claude and Nova 2, refuses a level other than NONE: UnsupportedParameterError)."""

    NONE = "none"
    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"
    XHIGH = "xhigh"
    MAX = "max"  # the vendor's top level (AgentHub's name; clamped like the others)


class PromptCaching(str, Enum):
    """Prompt caching policy: ENABLE (default), DISABLE, or ENHANCE (longer TTL)."""

    ENABLE = "enable"
    DISABLE = "disable"
    ENHANCE = "enhance"


#: the string values ThinkingLevel / PromptCaching take: config={"thinking_level": "low"} type-checks too
ThinkingLevelName = Literal["none", "low", "medium", "high", "xhigh", "max"]
PromptCachingName = Literal["enable", "disable", "enhance"]
#: "auto" | "required" | "none" | the names of the tools the model may call
ToolChoice = Union[Literal["auto", "required", "none"], List[str], Tuple[str, ...]]


class _ToolSchemaBase(TypedDict):
    name: str


class ToolSchema(_ToolSchemaBase, total=False):
    description: str
    parameters: Mapping[str, Any]  # JSON Schema of the arguments object
    strict: bool  # agenthub: arguments held to the schema, where the wire has it (else UnsupportedParameterError)


class ImageConfig(TypedDict, total=False):
    aspect_ratio: str  # 1:1, 2:3, 3:2, 3:4, 4:3, 9:16, 16:9, 21:9
    image_size: str  # 1K, 2K


class _SpeakerConfigBase(TypedDict):
    voice: str


class SpeakerConfig(_SpeakerConfigBase, total=False):
    speaker: str


class EmbeddingConfig(TypedDict, total=False):
    dimensions: int


class _ResponseFormatBase(TypedDict):
    type: Literal["text", "json_object", "json_schema"]


class ResponseFormat(_ResponseFormatBase, total=False):
    """``{"type": "text"}``, ``{"type": "json_object"}`` or
    ``{"type": "json_schema", "name": str, "schema": dict, "strict": bool (default True)}``."""

    name: str
    schema: Dict[str, Any]
    strict: bool


class CompactionConfig(TypedDict):
    threshold: int  # input tokens past which the server compacts the context


class _McpServerBase(TypedDict):
    url: str  # http(s)
    name: str  # 1-64 of [A-Za-z0-9_-], unique in the list


class McpServer(_McpServerBase, total=False):
    """An MCP server the provider itself connects to (``config["mcp_servers"]``: OpenAI Responses' ``mcp`` tools,
    Anthropic's MCP connector).  ``headers`` are credentials: never shown in an error, log or trace."""

    headers: Dict[str, str]  # Anthropic: only "Authorization: Bearer <token>"
    allowed_tools: List[str]
    require_approval: Union[Literal["always", "never"], Dict[str, Any]]  # OpenAI Responses only


class UniConfig(TypedDict, total=False):
    """Request options; every key is optional (the library only reads them: any sequence will do).  The
    keys after ``trace_id`` are agenthub's additions to the seed (see docs/calls.md, "Config keys beyond the seed")."""

    max_tokens: int
    temperature: float
    tools: Sequence[ToolSchema]
    thinking_summary: bool
    thinking_level: Union[ThinkingLevel, ThinkingLevelName]
    tool_choice: ToolChoice
    system_prompt: str
    prompt_caching: Union[PromptCaching, PromptCachingName]
    image_config: ImageConfig
    tts_config: Sequence[SpeakerConfig]
    embedding_config: EmbeddingConfig
    trace_id: str
    response_format: ResponseFormat
    top_p: float
    stop: Union[str, List[str]]
    seed: int
    extra_body: Dict[str, Any]  # deep-merged into the wire body last
    extra_headers: Dict[str, str]  # this request only; treated as secret wherever headers are shown
    fast_mode: bool  # the protocol's priority tier
    background: bool  # OpenAI Responses / Gemini Interactions: run server-side, resumable after a cut
    compaction: "CompactionConfig"  # OpenAI Responses / Anthropic: server-side compaction past a threshold
    foreign_thinking: Literal["drop", "text"]  # another protocol's thinking on the way out (agenthub.foreign)
    mcp_servers: Sequence[McpServer]  # OpenAI Responses / Anthropic: MCP servers the provider calls itself


class UsageMetadata(TypedDict):
    """Token counts in exclusive buckets: input = cached + prompt, output = thoughts + response."""

    cached_tokens: Optional[int]
    prompt_tokens: Optional[int]
    thoughts_tokens: Optional[int]
    response_tokens: Optional[int]


class _CacheMark(TypedDict, total=False):
    #: agenthub: a prompt-cache breakpoint right after this item (Anthropic cache_control, Bedrock cachePoint,
    #: OpenAI prompt_cache_breakpoint; docs/calls.md, "Cache breakpoints")
    cache_breakpoint: bool


class _Fidelity(_CacheMark, total=False):
    fidelity: Dict[str, Any]  # opaque wire data: pass back unchanged


class TextItem(_Fidelity):
    type: Literal["text"]
    text: str


class ImageUrlItem(_CacheMark):
    type: Literal["image_url"]
    image_url: str  # http(s) URL or data: URI


class InlineDataItem(_Fidelity):
    type: Literal["inline_data"]
    data: bytes
    mime_type: str


class ThinkingItem(_Fidelity):
    type: Literal["thinking"]
    thinking: str


class InlineThinkingItem(_Fidelity):
    type: Literal["inline_thinking"]
    data: bytes
    mime_type: str


class CompactionItem(_Fidelity):
    """A server-side compaction of the context before it (OpenAI Responses, Anthropic): opaque, shown as
    nothing, replayed as it came (its ``fidelity`` holds the wire item); earlier items are not resent."""

    type: Literal["compaction"]


class ToolCallItem(_Fidelity):
    type: Literal["tool_call"]
    name: str
    arguments: Dict[str, Any]
    tool_call_id: str


class _ToolResultBase(TypedDict):
    type: Literal["tool_result"]
    text: str
    tool_call_id: str


class ToolResultItem(_ToolResultBase, total=False):
    images: List[str]  # image URLs or data: URIs
    is_error: bool  # the tool failed (Anthropic is_error, Bedrock status "error", Gemini response {"error": ...})
    cache_breakpoint: bool  # agenthub: a prompt-cache breakpoint after this result (see _CacheMark)


class EmbeddingItem(TypedDict):
    type: Literal["embedding"]
    embedding: List[float]


class PartialToolCallItem(_Fidelity):
    """Event-only: a streamed tool-call fragment (see the tool-call protocol)."""

    type: Literal["partial_tool_call"]
    name: str
    arguments: str
    tool_call_id: str


ContentItem = Union[
    TextItem,
    ImageUrlItem,
    InlineDataItem,
    ThinkingItem,
    InlineThinkingItem,
    ToolCallItem,
    ToolResultItem,
    EmbeddingItem,
    CompactionItem,
]
PartialContentItem = Union[ContentItem, PartialToolCallItem]


class _UniMessageBase(TypedDict):
    role: Role
    content_items: List[ContentItem]


class UniMessage(_UniMessageBase, total=False):
    usage_metadata: Optional[UsageMetadata]
    finish_reason: Optional[FinishReason]
    created_at: int  # Unix milliseconds
    cache_breakpoint: bool  # agenthub: a prompt-cache breakpoint after the message's last item


class _AssistantMessageBase(TypedDict):
    role: Role
    content_items: List[ContentItem]
    usage_metadata: UsageMetadata
    finish_reason: FinishReason


class AssistantMessage(_AssistantMessageBase, total=False):
    """What ``response()`` and ``collect()`` return: a completed turn, whose usage_metadata (the four
    buckets, each an int or None) and finish_reason are always set.  (``collect()`` of events that
    never reached their stop event, a list cut short, leaves both None: check_stream such a list.)"""

    created_at: int  # Unix milliseconds
    cache_breakpoint: bool  # agenthub: a prompt-cache breakpoint after the message's last item


#: any message the library takes back: one you built (UniMessage) or one collect() gave you
Message = Union[UniMessage, AssistantMessage]


class UniEvent(TypedDict):
    role: Role
    event_type: EventType
    content_items: List[PartialContentItem]
    usage_metadata: Optional[UsageMetadata]
    finish_reason: Optional[FinishReason]
    created_at: int  # Unix milliseconds


@dataclass(frozen=True)
class HttpRequest:
    """One HTTP request planned by a provider (pure) and sent by the transport.

    ``body`` is the planned JSON body (what request goldens read); ``data`` the exact
    bytes sent, filled in by its host's ``encode`` right before each attempt (a
    signature covers them); ``stream`` says whether the answer is a stream (True) or
    one JSON document (False, e.g. embeddings).  ``output_limit``: where ``body`` keeps
    the output limit the request asks for, a path of keys the dialect wrote it under
    (``("max_tokens",)``, ``("generationConfig", "maxOutputTokens")``; () for none): ``max_output``
    reads it there, so an ``extra_body`` that changed it is seen too.  ``encoded``: the JSON text of the
    body's history list made when the body was planned (most of it kept from the client's previous call):
    ``content`` splices it in when that list is unchanged, the same bytes as encoding it whole.
    """

    method: str
    url: str
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)  # may hold a key
    body: Optional[Dict[str, Any]] = field(default=None, repr=False)
    stream: bool = True
    data: Optional[bytes] = field(default=None, repr=False)
    output_limit: Tuple[str, ...] = field(default=(), repr=False)
    #: the JSON text of the body's message list made beforehand (``providers._common.Encoded``), or None
    encoded: Any = field(default=None, repr=False, compare=False)
    #: values of the body to scrub wherever the request is shown or recorded (errors, cassettes): what the
    #: caller's ``extra_body`` holds under fields named like a credential (``_redact.named_secrets``)
    secrets: Tuple[str, ...] = field(default=(), repr=False, compare=False)

    def __repr__(self) -> str:  # the URL as an error's url field shows it (no user:password@, no ?key=)
        from .errors import safe_url

        return "HttpRequest(method={!r}, url={!r}, stream={!r})".format(
            self.method, safe_url(self.url), self.stream)

    @property
    def max_output(self) -> Optional[int]:
        """The output limit (tokens) this request asks for; None when it names none."""
        value = self.body  # type: Any
        if not self.output_limit:
            return None
        for key in self.output_limit:
            value = value.get(key) if isinstance(value, Mapping) else None
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return value
        return None

    def content(self) -> Optional[bytes]:
        """The bytes to send: ``data``, else ``body`` as compact UTF-8 JSON (None: no body)."""
        if self.data is not None:
            return self.data
        if self.body is None:
            return None
        if self.encoded is not None:
            data = self.encoded.content(self.body)
            if data is not None:
                return data
        return json.dumps(self.body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


# -- bytes in JSON ---------------------------------------------------------------------------------
#
# Wherever the data model travels as JSON (traces, ``agenthub serve`` and its client, the pages, the
# response cache, journals, job files, saved conversations), ``bytes`` are written as
# ``{"__bytes__": "<base64>"}``: a dict with that one key and a string.  A dict of the caller's that has
# that one key itself (a model's tool-call arguments may spell it) is written escaped, as
# ``{"__bytes__": [<its value>]}`` (a list of one item), so reading gives back exactly what was written:
# ``from_jsonable(to_jsonable(value)) == value`` for every JSON-able value holding bytes anywhere.

_MARK = "__bytes__"


def _b64(value: Any) -> Dict[str, str]:
    import base64

    return {_MARK: base64.b64encode(bytes(value)).decode("ascii")}


def bytes_default(value: Any) -> Any:
    """A JSON encoder's ``default=`` taking bytes alone (as ``{"__bytes__": base64}``): anything else JSON cannot
    hold stays a TypeError."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return _b64(value)
    raise TypeError("{} is not JSON serialisable".format(type(value).__name__))


def json_default(value: Any) -> Any:
    """A JSON encoder's ``default=``: bytes as ``{"__bytes__": base64}``, an enum as its str value.  It
    escapes no dict (an encoder hands it none): a text holding ``"__bytes__"`` is encoded again from
    ``to_jsonable`` (``marker_free``)."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return _b64(value)
    if hasattr(value, "value") and isinstance(getattr(value, "value"), str):  # an Enum that is no str
        return value.value
    raise TypeError("{} is not JSON serialisable".format(type(value).__name__))


def marker_free(text: str) -> bool:
    """Whether JSON text (as an encoder writes it) has no ``"__bytes__"`` key, so no dict of the value it
    encodes needed the escape ``to_jsonable`` writes (a key is the only place the word is between two bare
    quotes: inside a string the quotes are escaped)."""
    return '"__bytes__"' not in text


def to_jsonable(value: Any) -> Any:
    """A JSON-ready copy: bytes -> ``{"__bytes__": base64}``, a dict of that one key -> ``{"__bytes__": [its
    value]}``, str enums -> their value, tuples -> lists."""
    kind = type(value)
    if kind is str or kind is int or kind is float or kind is bool or value is None:  # most values: as they are
        return value
    if kind is dict or (kind is not list and isinstance(value, Mapping)):
        out = {str(k): to_jsonable(v) for k, v in value.items()}
        return out if len(out) != 1 or _MARK not in out else {_MARK: [out[_MARK]]}  # (the escape)
    if kind is list:
        return [to_jsonable(v) for v in value]
    if isinstance(value, (bytes, bytearray, memoryview)):
        return _b64(value)
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if hasattr(value, "value") and isinstance(getattr(value, "value"), str):  # str enums
        return value.value
    return value


def from_jsonable(value: Any, strict: bool = False) -> Any:
    """``to_jsonable`` undone: every ``{"__bytes__": base64}`` back to bytes, every ``{"__bytes__": [value]}``
    back to the dict ``{"__bytes__": value}``.  ``strict``: a payload that is not base64 is a ValueError (else
    what does not decode is skipped, as base64 does).  A ``{"__bytes__": ...}`` holding anything else (which
    ``to_jsonable`` never writes) is read as the dict it is."""
    return _read(value, strict, False)


def from_jsonable_exact(value: Any) -> Any:
    """``from_jsonable(value, strict=True)`` that also refuses (ValueError) a ``{"__bytes__": ...}`` holding
    what ``to_jsonable`` never writes there: for a store that reads back only what it wrote."""
    return _read(value, True, True)


def _read(value: Any, strict: bool, exact: bool) -> Any:
    if isinstance(value, dict):
        if len(value) == 1 and _MARK in value:
            inner = value[_MARK]
            if isinstance(inner, str):
                import base64

                # (strict: binascii.Error, a ValueError; a payload that is not ASCII is one either way)
                return base64.b64decode(inner, validate=strict)
            if isinstance(inner, list) and len(inner) == 1:
                return {_MARK: _read(inner[0], strict, exact)}
            if exact:
                raise ValueError("a {\"__bytes__\": ...} that is neither base64 nor an escaped dict")
        return {k: _read(v, strict, exact) for k, v in value.items()}
    if isinstance(value, list):
        return [_read(v, strict, exact) for v in value]
    return value


#: how deep a JSON value may nest: arguments from a model deeper than this are refused here, as the same
#: arguments sent back on the next turn are refused by validate (one rule, both ways)
MAX_DEPTH = 128


#: a high surrogate, then a low one: the two UTF-16 halves of one character
_HALVES = re.compile("[\ud800-\udbff][\udc00-\udfff]")


def _one_byte_overhead() -> int:
    """What a str of one byte a character takes beyond its length on this interpreter, or 0 if unknown.

    CPython keeps a str whose characters are all below 256 at one byte each (PEP 393): such a str, made
    whole (compact), takes ``sizeof(its header) + 1 + len`` bytes; one of two or four bytes a character (the
    only kinds that can hold a surrogate), or one with other storage, takes more than that, whatever its length."""
    if sys.implementation.name != "cpython":
        return 0
    overhead = "".join(["\xe9", "\xe9"]).__sizeof__() - 2
    latin, wide, widest = "".join(["\xe9"] * 5), "".join(["\u0100"] * 5), "".join(["\U00010000"] * 5)
    if latin.__sizeof__() == overhead + 5 and wide.__sizeof__() > overhead + 5 < widest.__sizeof__():
        return overhead
    return 0  # pragma: no cover - a layout this check does not know


_ONE_BYTE = _one_byte_overhead()


def lone_surrogate_in(text: str) -> bool:
    """Does ``text`` hold a surrogate code point (``"\\ud800"``: one no UTF-8 can carry)?  Text stored at one
    byte a character holds none, and that is known without reading it (ASCII; on CPython, below 256: its size
    says so); any other text is encoded as UTF-8, which refuses a surrogate.  (No copy for the first kind: a
    megabyte's fresh copy costs more than the encoding, in the allocator, than its bytes do.)"""
    if text.isascii() or (_ONE_BYTE and text.__sizeof__() == _ONE_BYTE + len(text)):
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def paired_halves(text: str) -> str:
    """``text`` with each high surrogate followed by a low one joined into the character they are the halves
    of; a lone half stays as it is (``whole_text`` without the U+FFFD).  The text of tool-call arguments
    whose fragments split a character between them (``"{\\"a\\": \\"\\ud83d"``, then ``"\\ude00\\"}"``)."""
    return _HALVES.sub(lambda found: found.group().encode("utf-16-le", "surrogatepass").decode("utf-16-le"), text)


def too_deep(value: Any, limit: int = MAX_DEPTH) -> bool:
    """``value`` holds a dict or list at depth ``limit`` or more (the root is at depth 0)."""
    level = [value] if type(value) in (dict, list) else []
    depth = 0
    while level:
        if depth >= limit:
            return True
        inner = []  # type: List[Any]
        for node in level:
            for child in (node.values() if type(node) is dict else node):
                if type(child) in (dict, list):
                    inner.append(child)
        level = inner
        depth += 1
    return False
