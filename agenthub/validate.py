"""Checks on what the caller passes in, before anything is sent.

``check_config`` and ``check_messages`` raise ConfigError naming the first
problem; ``check_config`` returns a normalised copy (enum values as enums).
The caller's objects are never modified.

Everything that goes out as JSON is checked to be JSON: tool schemas, tool-call
arguments and fidelity hold only dicts with string keys, lists, strings, finite
numbers, booleans and None (a set, bytes, NaN or Infinity is a ConfigError naming
where it is; bytes are allowed in fidelity, which the library itself fills), and no
string anywhere (text, names, prompts) holds a lone surrogate, which no UTF-8 body
can carry.
"""

import math
import re
from operator import getitem as _getitem, is_ as _is
from collections.abc import Mapping as _Mapping  # (isinstance: typing.Mapping adds two Python calls a check)
from collections.abc import Sequence as _Sequence  # (likewise)
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from ._redact import is_secret_name
from .errors import ConfigError
from .types import FINISH_REASONS, MAX_DEPTH, PromptCaching, ThinkingLevel

__all__ = ["check_config", "check_messages", "check_message", "CheckedMessages", "check_json", "check_header_value", "check_header_name",
           "check_distinct_header_names",
           "check_mcp_servers", "check_anthropic_version", "ANTHROPIC_VERSIONS", "check_tool_pairs",
           "cache_marks", "count_marks", "CACHE_BREAKPOINT", "CONFIG_KEYS", "ASPECT_RATIOS", "IMAGE_SIZES", "RESPONSE_FORMATS"]

CONFIG_KEYS = (
    "max_tokens", "temperature", "tools", "thinking_summary", "thinking_level", "tool_choice", "system_prompt",
    "prompt_caching", "image_config", "tts_config", "embedding_config", "trace_id",
    # agenthub's additions (docs/calls.md, "Config keys beyond the seed")
    "response_format", "top_p", "stop", "seed", "extra_body", "extra_headers", "fast_mode",
    "background", "compaction",
    "foreign_thinking", "mcp_servers",
)
RESPONSE_FORMATS = ("text", "json_object", "json_schema")
#: the Anthropic API versions a client may pin (providers.anthropic.ANTHROPIC_VERSIONS: newest first)
ANTHROPIC_VERSIONS = ("2026-10-21", "2023-06-01")
_SCHEMA_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")  # an RFC 9110 token
ASPECT_RATIOS = ("1:1", "2:3", "3:2", "3:4", "4:3", "9:16", "16:9", "21:9")
IMAGE_SIZES = ("1K", "2K")
_TOOL_CHOICES = ("auto", "required", "none")

# item type -> (required fields with their types, roles allowed)
_ITEMS = {
    "text": ((("text", str),), ("user", "assistant")),
    "image_url": ((("image_url", str),), ("user", "assistant")),
    "inline_data": ((("data", (bytes, bytearray)), ("mime_type", str)), ("user", "assistant")),
    "thinking": ((("thinking", str),), ("assistant",)),
    "inline_thinking": ((("data", (bytes, bytearray)), ("mime_type", str)), ("assistant",)),
    "tool_call": ((("name", str), ("arguments", dict), ("tool_call_id", str)), ("assistant",)),
    "tool_result": ((("text", str), ("tool_call_id", str)), ("user",)),
    "embedding": ((("embedding", list),), ("assistant",)),
    "compaction": ((("fidelity", Mapping),), ("assistant",)),
}


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


#: how deep a JSON value may nest (a schema or arguments deeper than this are refused, not recursed into):
#: the tool-call assembler's own limit, so arguments a model sent are never refused when sent back


def _check_text(value: Any, where: str) -> None:
    """A str that UTF-8 can carry: no lone surrogate (e.g. half of an emoji cut by a slice)."""
    if isinstance(value, str) and not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ConfigError("{} holds a lone surrogate ({!r} at position {}): it cannot be sent as UTF-8".format(
                where, value[exc.start:exc.end], exc.start)) from None


def check_json(value: Any, where: str, allow_bytes: bool = False) -> None:
    """ConfigError unless ``value`` is a JSON value (see the module docstring).  A value under a field named
    like a credential (``{"api_key": b"..."}``: ``_redact.is_secret_name``) is named by its type alone."""
    stack = [(value, where, 0, False)]
    while stack:
        value, at, depth, secret = stack.pop()
        if value is None or isinstance(value, (bool, int)):
            continue
        if isinstance(value, str):
            _check_text(value, at)
        elif isinstance(value, float):
            if not math.isfinite(value):
                raise ConfigError("{} is {!r}: JSON has no NaN or Infinity".format(at, value))
        elif isinstance(value, (bytes, bytearray)) and allow_bytes:
            continue
        elif depth >= MAX_DEPTH:
            raise ConfigError("{} nests deeper than {} levels".format(where, MAX_DEPTH))
        elif isinstance(value, _Mapping):
            for key, inner in value.items():
                if not isinstance(key, str):
                    raise ConfigError("{} has a key of type {} ({}): JSON object keys are strings".format(
                        at, type(key).__name__, _short(key)))
                _check_text(key, "a key of " + at)
                stack.append((inner, "{}[{!r}]".format(at, key), depth + 1, secret or is_secret_name(key)))
        elif isinstance(value, (list, tuple)):
            for i, inner in enumerate(value):
                stack.append((inner, "{}[{}]".format(at, i), depth + 1, secret))
        else:
            raise ConfigError("{} is a {}{}: only dicts, lists, strings, numbers, booleans and None "
                              "can be sent as JSON".format(at, type(value).__name__,
                                                           "" if secret else " ({})".format(_short(value))))


_INVISIBLE = {"\u00a0": "a no-break space", "\u00ad": "a soft hyphen", "\u200b": "a zero-width space",
              "\u200c": "a zero-width non-joiner", "\u200d": "a zero-width joiner", "\u2060": "a word joiner",
              "\ufeff": "a byte order mark", "\u2028": "a line separator", "\u2029": "a paragraph separator"}
_TOKEN = frozenset("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


def _character(c: str) -> str:
    if c == "\r":
        return "a carriage return (CR)"
    if c == "\n":
        return "a line feed (LF)"
    if c == "\x00":
        return "a NUL byte"
    if c == "\t":
        return "a tab"
    if c in _INVISIBLE:
        return "{} (U+{:04X})".format(_INVISIBLE[c], ord(c))
    if ord(c) < 0x20 or ord(c) == 0x7F:
        return "a control character (U+{:04X})".format(ord(c))
    return "the character U+{:04X}".format(ord(c))


def check_header_value(value: Any, what: str, secret: bool = True) -> None:
    """ConfigError unless ``value`` can travel in an HTTP header as it is: no CR, LF, NUL or other
    control character, no invisible character (zero-width space, byte order mark, no-break space),
    nothing outside Latin-1, no white space around it.  The message names the problem and where it
    is, never the value (a key read from a CRLF ``.env`` file must not end up in a log)."""
    if not isinstance(value, str):
        raise ConfigError("{} must be a str (got {})".format(what, type(value).__name__))
    shown = "" if secret else " ({})".format(_short(value))
    for i, c in enumerate(value):
        if c < " " or c == "\x7f" or c in _INVISIBLE or ord(c) > 0xFF or (0x80 <= ord(c) < 0xA0):
            raise ConfigError("{}{} holds {} at position {} of {}{}".format(
                what, shown, _character(c), i, len(value),
                ": read from a file with Windows line ends?" if c in "\r\n" else
                ": invisible, copied along with it?" if c in _INVISIBLE else
                ": header values are Latin-1" if ord(c) > 0xFF else ""))
    if value != value.strip(" \t"):
        raise ConfigError("{}{} starts or ends with white space".format(what, shown))


def check_header_name(name: Any, what: str) -> None:
    if not isinstance(name, str) or not name or any(c not in _TOKEN for c in name):
        bad = "" if not isinstance(name, str) else next((c for c in name if c not in _TOKEN), "")
        raise ConfigError("{} is not a valid header name{}".format(
            what, " (it holds {})".format(_character(bad)) if bad else ""))


def check_distinct_header_names(headers: Mapping[Any, Any], what: str) -> None:
    """ConfigError when two names of ``headers`` differ only in case: HTTP names are case-insensitive, and
    requests sends one of them (the last), so the other value would be lost (and a SigV4 signature that
    covered both would not match)."""
    seen = {}  # type: Dict[str, str]
    for name in headers:
        if isinstance(name, str):
            first = seen.setdefault(name.lower(), name)
            if first != name:
                raise ConfigError("{} names the header {!r} twice ({!r} and {!r}): header names are case-insensitive, "
                                  "so only one would be sent".format(what, name.lower(), first, name))


def check_config(config: Optional[Mapping[str, Any]]) -> Dict[str, Any]:
    """A normalised copy of ``config`` (None values left out), every key checked by its row of ``CHECKS``,
    in the table's order; anything wrong is a ConfigError naming the key, before anything is sent."""
    if config is None:
        return {}
    if type(config) is not dict and not isinstance(config, _Mapping):
        raise ConfigError("config must be a dict (UniConfig), got {}".format(type(config).__name__))
    table, at = _check_table()
    if not at.keys() >= config.keys():
        unknown = sorted(str(k) for k in config if k not in CONFIG_KEYS)
        if unknown:
            raise ConfigError("unknown config key(s) {}; UniConfig keys are: {}".format(unknown,
                                                                                       ", ".join(CONFIG_KEYS)))
    out = {k: v for k, v in config.items() if v is not None}
    for n in sorted(at[key] for key in out if key in at):  # the keys given, in the table's order
        key, check = table[n]
        out[key] = check(key, out[key], out)
    return out


_check_index = None  # type: Any  # (CHECKS, key -> its row's position): the keys a config has run in table order


def _check_table() -> Tuple[Any, Dict[str, int]]:
    global _check_index
    index = _check_index  # type: Tuple[Any, Dict[str, int]]
    if index is None or index[0] is not CHECKS:
        index = _check_index = (CHECKS, {key: n for n, (key, _) in enumerate(CHECKS)})
    return index


# -- the per-key checkers: check(key, value, config so far) -> the value as the protocols read it ----------


def _bad(key: str, what: str, value: Any) -> ConfigError:
    return ConfigError("config[{!r}] must be {} (got {})".format(key, what, _short(value)))


def _checker(test: Callable[[Any], bool], what: str) -> Callable[[str, Any, Dict[str, Any]], Any]:
    """A checker that takes the value as it is when ``test(value)`` holds, else says it must be ``what``."""

    def check(key: str, value: Any, config: Dict[str, Any]) -> Any:
        if not test(value):
            raise _bad(key, what, value)
        return value

    return check


def _text(key: str, value: Any, config: Dict[str, Any]) -> Any:
    if not isinstance(value, str):
        raise _bad(key, "a str", value)
    _check_text(value, "config[{!r}]".format(key))
    return value


def _enum(kind: Any, what: str) -> Callable[[str, Any, Dict[str, Any]], Any]:
    """A checker taking a value of the enum ``kind`` (or its str value), as the enum."""

    def check(key: str, value: Any, config: Dict[str, Any]) -> Any:
        try:
            return kind(value)
        except ValueError:
            raise _bad(key, "a {} ({})".format(what, ", ".join(member.value for member in kind)), value) from None

    return check


def _tools(key: str, value: Any, config: Dict[str, Any]) -> Any:
    if not isinstance(value, (list, tuple)):
        raise _bad(key, "a list of tool schemas", value)
    tools = list(value)
    tool_names = []  # type: List[str]
    for i, tool in enumerate(tools):
        _openai_tool(tool, i)
        if not isinstance(tool, _Mapping) or not isinstance(tool.get("name"), str) or not tool.get("name"):
            raise ConfigError("config['tools'][{}] needs a non-empty 'name'".format(i))
        extra = sorted(set(tool) - {"name", "description", "parameters", "strict"})
        if extra:
            raise ConfigError("config['tools'][{}] has unknown key(s) {}".format(i, extra))
        if "description" in tool and tool["description"] is not None and not isinstance(tool["description"], str):
            raise ConfigError("config['tools'][{}]['description'] must be a str".format(i))
        if "parameters" in tool and tool["parameters"] is not None and not isinstance(tool["parameters"], _Mapping):
            raise ConfigError("config['tools'][{}]['parameters'] must be a JSON Schema object".format(i))
        if "strict" in tool and not isinstance(tool["strict"], bool):
            raise ConfigError("config['tools'][{}]['strict'] must be a bool".format(i))
        check_json(dict(tool), "config['tools'][{}]".format(i))
        tool_names.append(tool["name"])
    if len(set(tool_names)) != len(tool_names):
        raise ConfigError("config['tools'] has two tools with the same name")
    return tools


def _tool_choice(key: str, value: Any, config: Dict[str, Any]) -> Any:
    """'auto', 'required', 'none', or a list of names of ``config["tools"]`` (checked before it)."""
    if isinstance(value, str):
        if value not in _TOOL_CHOICES:
            raise _bad(key, "'auto', 'required', 'none' or a list of tool names", value)
        return value
    if isinstance(value, (list, tuple)) and value and all(isinstance(c, str) and c for c in value):
        tool_names = [tool["name"] for tool in config.get("tools") or ()]
        missing = [c for c in value if c not in tool_names]
        if missing:
            raise ConfigError("config['tool_choice'] names tool(s) not in config['tools']: {}".format(missing))
        return list(value)
    raise _bad(key, "'auto', 'required', 'none' or a non-empty list of tool names", value)


def check_tool_choice_has_tools(config: Mapping[str, Any]) -> None:
    """``tool_choice: "required"`` with no tool to call (no ``tools``, no ``mcp_servers``, no tools in
    ``extra_body``): no model can meet it (Chat Completions answers 400).  Checked on the request a client
    plans, not on a config alone (``agenthub serve``'s default_config may force tools its callers send)."""
    extra = config.get("extra_body")
    if config.get("tool_choice") == "required" and not config.get("tools") and not config.get("mcp_servers") and not (
            isinstance(extra, _Mapping) and ("tools" in extra or "toolConfig" in extra)):
        raise ConfigError("config['tool_choice'] 'required' needs a tool to call: config['tools'] has none "
                          "(give the tools, or leave tool_choice out)")


def _image_config(key: str, value: Any, config: Dict[str, Any]) -> Any:
    if not isinstance(value, _Mapping) or set(value) - {"aspect_ratio", "image_size"}:
        raise _bad(key, "a dict with aspect_ratio and/or image_size", value)
    if "aspect_ratio" in value and value["aspect_ratio"] not in ASPECT_RATIOS:
        raise ConfigError("image_config['aspect_ratio'] must be one of {}".format(", ".join(ASPECT_RATIOS)))
    if "image_size" in value and value["image_size"] not in IMAGE_SIZES:
        raise ConfigError("image_config['image_size'] must be one of {}".format(", ".join(IMAGE_SIZES)))
    return value


def _tts_config(key: str, value: Any, config: Dict[str, Any]) -> Any:
    if not isinstance(value, (list, tuple)) or not value:
        raise _bad(key, "a non-empty list of {'voice': ..., 'speaker': ...}", value)
    speakers = list(value)
    for i, speaker in enumerate(speakers):
        if not isinstance(speaker, _Mapping) or not isinstance(speaker.get("voice"), str) or not speaker["voice"]:
            raise ConfigError("tts_config[{}] needs a non-empty 'voice'".format(i))
        if set(speaker) - {"voice", "speaker"}:
            raise ConfigError("tts_config[{}] has unknown key(s) {}".format(i, sorted(set(speaker) - {"voice", "speaker"})))
        if "speaker" in speaker and not isinstance(speaker["speaker"], str):
            raise ConfigError("tts_config[{}]['speaker'] must be a str".format(i))
    return speakers


def _embedding_config(key: str, value: Any, config: Dict[str, Any]) -> Any:
    if not isinstance(value, _Mapping) or set(value) - {"dimensions"}:
        raise _bad(key, "a dict with 'dimensions'", value)
    if "dimensions" in value and (not _is_int(value["dimensions"]) or value["dimensions"] <= 0):
        raise ConfigError("embedding_config['dimensions'] must be a positive int")
    return value


def _stop(key: str, value: Any, config: Dict[str, Any]) -> Any:
    stop = [value] if isinstance(value, str) else value
    if not isinstance(stop, (list, tuple)) or not stop or not all(isinstance(s, str) and s for s in stop):
        raise _bad(key, "a non-empty string or a non-empty list of non-empty strings", value)
    return list(stop)


def _compaction(key: str, value: Any, config: Dict[str, Any]) -> Any:
    if not isinstance(value, _Mapping) or set(value) != {"threshold"} \
            or not _is_int(value["threshold"]) or value["threshold"] < 1:
        raise ConfigError("config['compaction'] must be {'threshold': <input tokens, an int >= 1>}")
    return {"threshold": value["threshold"]}


def _extra_body(key: str, value: Any, config: Dict[str, Any]) -> Any:
    if not isinstance(value, _Mapping) or not all(isinstance(k, str) for k in value):
        raise ConfigError("config['extra_body'] must be a dict with str keys (it is merged into the JSON body)")
    check_json(value, "config['extra_body']")  # (JSON, and bounded: never a RecursionError copying it)
    return _copy(value)


def _extra_headers(key: str, value: Any, config: Dict[str, Any]) -> Any:
    if not isinstance(value, _Mapping):
        raise ConfigError("config['extra_headers'] must be a dict of header name -> str value")
    for name, header in value.items():
        if not isinstance(name, str) or not _HEADER_NAME.fullmatch(name):
            raise ConfigError("config['extra_headers'] has an invalid header name {}".format(_short(name)))
        if not isinstance(header, str) or "\r" in header or "\n" in header or "\0" in header:
            # the value is never shown: it may be a credential
            raise ConfigError("config['extra_headers'][{!r}] must be a str without CR, LF or NUL".format(name))
        check_header_value(header, "config['extra_headers'][{!r}]".format(name))
    check_distinct_header_names(value, "config['extra_headers']")
    return dict(value)


_BOOL = _checker(lambda value: isinstance(value, bool), "a bool")

#: config key -> its checker, in the order ``check_config`` runs them (the first problem is the one named;
#: ``tool_choice`` reads the ``tools`` checked before it).  A key of ``CONFIG_KEYS`` has exactly one row.
CHECKS = (
    ("max_tokens", _checker(lambda value: _is_int(value) and value > 0, "a positive int")),
    ("temperature", _checker(lambda value: _is_number(value) and value >= 0 and value != float("inf"),
                             "a non-negative finite number")),
    ("thinking_summary", _BOOL),
    ("system_prompt", _text),
    ("trace_id", _text),
    ("thinking_level", _enum(ThinkingLevel, "ThinkingLevel")),
    ("prompt_caching", _enum(PromptCaching, "PromptCaching")),
    ("tools", _tools),
    ("tool_choice", _tool_choice),
    ("image_config", _image_config),
    ("tts_config", _tts_config),
    ("embedding_config", _embedding_config),
    ("response_format", lambda key, value, config: _response_format(value)),
    ("top_p", _checker(lambda value: _is_number(value) and 0 <= value <= 1, "a number from 0 to 1")),
    ("stop", _stop),
    ("seed", _checker(_is_int, "an int")),
    ("fast_mode", _BOOL),
    ("background", _BOOL),
    ("compaction", _compaction),
    ("foreign_thinking", _checker(lambda value: value in ("drop", "text"), '"drop" or "text"')),
    ("mcp_servers", lambda key, value, config: check_mcp_servers(value)),
    ("extra_body", _extra_body),
    ("extra_headers", _extra_headers),
)  # type: Tuple[Tuple[str, Callable[[str, Any, Dict[str, Any]], Any]], ...]


#: the keys of a config["mcp_servers"] entry (McpServer), and what require_approval takes (OpenAI Responses')
MCP_SERVER_KEYS = ("url", "name", "headers", "allowed_tools", "require_approval")
_MCP_APPROVALS = ("always", "never")


def check_mcp_servers(value: Any) -> List[Dict[str, Any]]:
    """config["mcp_servers"] -> a normalised copy (MCP servers the provider connects to: OpenAI Responses'
    ``mcp`` tools, Anthropic's MCP connector).  A header's value is never shown: it is a credential."""
    where = "config['mcp_servers']"
    if not isinstance(value, (list, tuple)) or not value:
        raise ConfigError("{} must be a non-empty list of {{'url': ..., 'name': ...}} dicts".format(where))
    out = []  # type: List[Dict[str, Any]]
    names = set()  # type: set
    for i, server in enumerate(value):
        at = "{}[{}]".format(where, i)
        if not isinstance(server, _Mapping):
            raise ConfigError("{} must be a dict with 'url' and 'name' (got {})".format(at, type(server).__name__))
        extra = sorted(str(k) for k in server if k not in MCP_SERVER_KEYS)
        if extra:
            raise ConfigError("{} has unknown key(s) {}; an MCP server takes: {}".format(
                at, extra, ", ".join(MCP_SERVER_KEYS)))
        url = server.get("url")
        if not isinstance(url, str) or not re.match(r"https?://[^/?#\s@]+(?:[/?#]|\Z)", url, re.I) \
                or any(c.isspace() or c < " " for c in url):
            # (the URL is not shown: its query may hold a token)
            raise ConfigError("{}['url'] must be an http(s) URL with a host and no user:password@ (got {})".format(
                at, "a str" if isinstance(url, str) else type(url).__name__))
        name = server.get("name")
        if not isinstance(name, str) or not _SCHEMA_NAME.fullmatch(name):
            raise ConfigError("{}['name'] must be 1 to 64 letters, digits, '_' or '-' (got {})".format(at, _short(name)))
        if name in names:
            raise ConfigError("{}['name'] {!r} names another server too: names must be unique".format(at, name))
        names.add(name)
        entry = {"url": url, "name": name}  # type: Dict[str, Any]
        headers = server.get("headers")
        if headers is not None:
            if not isinstance(headers, _Mapping):
                raise ConfigError("{}['headers'] must be a dict of header name -> str value".format(at))
            for key, text in headers.items():
                check_header_name(key, "{}['headers'] key {}".format(at, _short(key)))
                check_header_value(text, "{}['headers'][{!r}]".format(at, key))  # (the value is never shown)
            entry["headers"] = dict(headers)
        tools = server.get("allowed_tools")
        if tools is not None:
            if not isinstance(tools, (list, tuple)) or not all(isinstance(t, str) and t for t in tools):
                raise ConfigError("{}['allowed_tools'] must be a list of tool names (non-empty str)".format(at))
            for tool in tools:
                _check_text(tool, "{}['allowed_tools']".format(at))
            entry["allowed_tools"] = list(tools)
        approval = server.get("require_approval")
        if approval is not None:
            entry["require_approval"] = _mcp_approval(approval, "{}['require_approval']".format(at))
        out.append(entry)
    return out


def _mcp_approval(value: Any, at: str) -> Any:
    """'always', 'never' or {"always"?: {"tool_names": [...]}, "never"?: {"tool_names": [...]}} (OpenAI's filter,
    where a filter may also say ``"read_only": bool``)."""
    if isinstance(value, str) and value in _MCP_APPROVALS:
        return value
    ok = isinstance(value, _Mapping) and value and not set(value) - set(_MCP_APPROVALS)
    for key in _MCP_APPROVALS if ok else ():
        rule = value.get(key)
        if rule is None:
            continue
        if not isinstance(rule, _Mapping) or set(rule) - {"tool_names", "read_only"} \
                or ("read_only" in rule and not isinstance(rule["read_only"], bool)) \
                or ("tool_names" in rule and (not isinstance(rule["tool_names"], (list, tuple))
                                              or not all(isinstance(t, str) and t for t in rule["tool_names"]))):
            ok = False
    if not ok:
        raise ConfigError("{} must be 'always', 'never' or {{'always': {{'tool_names': [...]}}, 'never': "
                          "{{'tool_names': [...]}}}} (got {})".format(at, _short(value)))
    return {key: {k: (list(v) if k == "tool_names" else v) for k, v in value[key].items()}
            for key in _MCP_APPROVALS if value.get(key) is not None}


def _response_format(value: Any) -> Dict[str, Any]:
    """-> a normalised copy: {"type"} or {"type": "json_schema", "name", "schema", "strict"[, "description"]}."""
    if not isinstance(value, _Mapping) or value.get("type") not in RESPONSE_FORMATS:
        raise ConfigError("config['response_format'] must be {{'type': 'text'}}, {{'type': 'json_object'}} or "
                          "{{'type': 'json_schema', 'name': ..., 'schema': {{...}}}} (got {})".format(_short(value)))
    kind = value["type"]
    allowed = {"type", "name", "schema", "strict", "description"} if kind == "json_schema" else {"type"}
    extra = sorted(str(k) for k in value if k not in allowed)
    if extra:
        raise ConfigError("config['response_format'] of type {!r} has unknown key(s) {}".format(kind, extra))
    if kind != "json_schema":
        return {"type": kind}
    name = value.get("name")
    if not isinstance(name, str) or not name:
        raise ConfigError("config['response_format'] of type 'json_schema' needs a 'name' (a-z, A-Z, 0-9, _ and -, "
                          "at most 64 characters)")
    if not _SCHEMA_NAME.fullmatch(name):
        raise ConfigError("config['response_format']['name'] must be a-z, A-Z, 0-9, _ and - only, at most 64 "
                          "characters (got {})".format(_short(name)))
    schema = value.get("schema")
    if not isinstance(schema, _Mapping):
        raise ConfigError("config['response_format']['schema'] must be a JSON Schema dict (got {})".format(
            type(schema).__name__))
    strict = value.get("strict", True)
    if not isinstance(strict, bool):
        raise ConfigError("config['response_format']['strict'] must be a bool")
    check_json(schema, "config['response_format']['schema']")  # (JSON, and bounded: never a RecursionError below)
    out = {"type": "json_schema", "name": name, "schema": _copy(schema), "strict": strict}  # type: Dict[str, Any]
    if value.get("description") is not None:
        if not isinstance(value["description"], str):
            raise ConfigError("config['response_format']['description'] must be a str")
        out["description"] = value["description"]
    return out


def _copy(value: Any) -> Any:
    """A deep copy of JSON-like data (dicts and lists), so later merging never touches the caller's objects."""
    if isinstance(value, _Mapping):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_copy(v) for v in value]
    return value


#: agenthub's prompt-cache breakpoint mark, on a content item or on a message (= on its last item)
CACHE_BREAKPOINT = "cache_breakpoint"


def cache_marks(message: Mapping[str, Any]) -> List[bool]:
    """Per content item of ``message``: whether a cache breakpoint follows it (its own mark, or the
    message's mark on its last item)."""
    items = message["content_items"]
    marks = [item.get(CACHE_BREAKPOINT) is True for item in items]
    if message.get(CACHE_BREAKPOINT) is True and marks:
        marks[-1] = True
    return marks


def count_marks(messages: Sequence[Mapping[str, Any]]) -> int:
    """The cache breakpoints marked in ``messages``."""
    return sum(sum(cache_marks(message)) for message in messages)


#: extra_body fields that continue state held by the server: the calls a result answers are not in the messages
_SERVER_STATE = ("previous_response_id", "conversation", "previous_interaction_id")


def check_tool_pairs(client: str, messages: Sequence[Mapping[str, Any]], config: Mapping[str, Any],
                     answers_required: bool) -> None:
    """A tool_result answers a tool_call of an earlier assistant message (every wire refuses one that does not,
    or cannot send it: Gemini needs the call's name), and with ``answers_required`` (the dialect record's, or a
    Chat Completions endpoint's quirk: Gemini says "the number of function response parts is equal to the number
    of function call parts of the function call turn") every call is answered in the user messages before the next
    assistant message (a call in the last message may stay open).
    ConfigError before sending.  Items carrying a provider's own server item (an MCP approval request and its
    answer) are the server's business; a continuation of server-side state (``extra_body``) is not checked."""
    extra = config.get("extra_body")
    if extra and isinstance(extra, _Mapping) and any(extra.get(name) for name in _SERVER_STATE):
        return
    # (one pass, no Python call per item: a long history costs a loop, not a function call per message)
    called = set()  # type: set
    open_calls = []  # type: List[Tuple[int, Mapping[str, Any]]]
    for index, message in enumerate(messages):
        items = message.get("content_items") or ()
        if message.get("role") == "assistant":
            if open_calls and answers_required:
                _unanswered(client, open_calls[0])
            open_calls = []
            for item in items:
                if item.get("type") == "tool_call" and (item.get("fidelity") or {}).get("server_item") is None:
                    called.add(item.get("tool_call_id"))
                    open_calls.append((index, item))
            continue
        for item in items:
            if item.get("type") != "tool_result" or (item.get("fidelity") or {}).get("server_item") is not None:
                continue
            call_id = item.get("tool_call_id")
            if call_id not in called:
                raise ConfigError("{}: messages[{}]: tool_result {} answers no tool_call of an earlier assistant "
                                  "message (the API refuses it, or cannot send it); give the results of the calls "
                                  "the model made, with their tool_call_id".format(client, index, _short(call_id)))
            for position in range(len(open_calls)):  # (a loop: a comprehension is a Python call before 3.12)
                if open_calls[position][1].get("tool_call_id") == call_id:
                    del open_calls[position]
                    break
    if open_calls and answers_required and messages[-1].get("role") != "assistant":
        _unanswered(client, open_calls[0])


def _unanswered(client: str, entry: Tuple[int, Mapping[str, Any]]) -> None:
    index, call = entry
    raise ConfigError("{}: messages[{}]: tool_call {} ({}) has no tool_result in the user messages after it ({} "
                      "refuses a call left unanswered); answer it, or leave the call out".format(
                          client, index, _short(call.get("tool_call_id")), _short(call.get("name")), client))


def check_anthropic_version(value: Any, client_type: str, dialect: str, speakers: Sequence[str]) -> str:
    """``AutoLLMClient(..., anthropic_version=...)``: one of ``ANTHROPIC_VERSIONS``, on a client type whose
    ``dialect`` is Anthropic Messages (``speakers``: the client types of that dialect, named in the error;
    registry rows of it pass too); ConfigError otherwise."""
    if not isinstance(value, str) or value not in ANTHROPIC_VERSIONS:
        raise ConfigError("anthropic_version must be one of {} (got {})".format(
            ", ".join(repr(v) for v in ANTHROPIC_VERSIONS), _short(value)))
    if dialect != "anthropic":
        raise ConfigError("anthropic_version applies to Claude over the Anthropic Messages API (client types {}), "
                          "not to client type {!r}: its {} dialect carries no Anthropic API version".format(
                              ", ".join(speakers), client_type, dialect))
    return value


#: Anthropic's wire field where agenthub's mark belongs: no wire reads it from a message (it was left out unseen)
_NOT_CACHE_CONTROL = ("{} has 'cache_control', Anthropic's wire field, which is not read here: agenthub's prompt-cache "
                      "breakpoint is \"cache_breakpoint\": True on the item (or the message), sent on every wire that "
                      "takes one")


def check_message(message: Any, where: str = "message") -> None:
    if type(message) is not dict and not isinstance(message, _Mapping):
        raise ConfigError("{} must be a dict (UniMessage), got {}".format(where, type(message).__name__))
    _openai_message(message, where)
    role = message.get("role")
    if role not in ("user", "assistant"):
        raise ConfigError("{}['role'] must be 'user' or 'assistant' (got {}); the system prompt goes in "
                          "config['system_prompt']".format(where, _short(role)))
    items = message.get("content_items")
    if not isinstance(items, (list, tuple)):
        raise ConfigError("{}['content_items'] must be a list".format(where))
    if "cache_control" in message:
        raise ConfigError(_NOT_CACHE_CONTROL.format(where))
    mark = message.get(CACHE_BREAKPOINT)
    if mark is not None and not isinstance(mark, bool):
        raise ConfigError("{}[{!r}] must be a bool (True: a prompt-cache breakpoint after its last item), got "
                          "{}".format(where, CACHE_BREAKPOINT, type(mark).__name__))
    if mark and not items:
        raise ConfigError("{}[{!r}] marks a message with no content items".format(where, CACHE_BREAKPOINT))
    for i, item in enumerate(items):
        at = "{}['content_items'][{}]".format(where, i)
        if type(item) is not dict and not isinstance(item, _Mapping):
            raise ConfigError("{} must be a dict".format(at))
        kind = item.get("type")
        spec = _ITEMS.get(kind)  # type: ignore[arg-type]
        if spec is None:
            raise ConfigError("{} has unknown type {}; known: {}".format(at, _short(kind), ", ".join(_ITEMS)))
        fields, roles = spec
        for name, expected in fields:
            if not isinstance(item.get(name), expected):
                raise ConfigError("{} ({}) needs {!r} of type {}".format(at, kind, name, _type_name(expected)))
        if role not in roles:
            raise ConfigError("{}: a {} item belongs in a {} message".format(at, kind, " or ".join(roles)))
        if kind in ("tool_result", "tool_call") and not item["tool_call_id"]:
            raise ConfigError("{}: {} needs a non-empty tool_call_id".format(at, kind))
        if kind == "tool_call" and not item["name"]:
            raise ConfigError("{}: tool_call needs a non-empty name".format(at))
        if kind == "tool_result" and "images" in item and item["images"] is not None:
            images = item["images"]
            if not isinstance(images, list) or not all(isinstance(u, str) for u in images):
                raise ConfigError("{}: tool_result 'images' must be a list of URL strings".format(at))
        if kind == "tool_result" and "is_error" in item and not isinstance(item["is_error"], bool):
            raise ConfigError("{}: tool_result 'is_error' must be a bool (True or False), got {}".format(
                at, type(item["is_error"]).__name__))
        if "cache_control" in item:
            raise ConfigError(_NOT_CACHE_CONTROL.format(at))
        if CACHE_BREAKPOINT in item and item[CACHE_BREAKPOINT] is not None and not isinstance(
                item[CACHE_BREAKPOINT], bool):
            raise ConfigError("{}[{!r}] must be a bool (True: a prompt-cache breakpoint after this item), got "
                              "{}".format(at, CACHE_BREAKPOINT, type(item[CACHE_BREAKPOINT]).__name__))
        if "fidelity" in item and item["fidelity"] is not None and not isinstance(item["fidelity"], _Mapping):
            raise ConfigError("{}: fidelity must be a dict (pass it back as you got it)".format(at))
        for name, value in item.items():
            if name in ("arguments", "fidelity", "images"):
                check_json(value, "{}[{!r}]".format(at, name), allow_bytes=name == "fidelity")
            elif name != "embedding" and type(value) is str and value.isascii():
                continue  # (what _check_text passes at once: its place is named only when it fails)
            elif name != "embedding":
                _check_text(value, "{}[{!r}]".format(at, name))
    finish = message.get("finish_reason")
    if finish is not None and finish not in FINISH_REASONS:
        raise ConfigError("{}['finish_reason'] is not a FinishReason".format(where))


def check_messages(messages: Any, checked: Optional["CheckedMessages"] = None) -> Optional[int]:
    """ConfigError naming the first bad message; with ``checked``, a message that object passed on the
    previous call and that is unchanged since (see ``CheckedMessages``) is not checked again, and the
    result is how many leading messages are the previous call's, unchanged (None without ``checked``)."""
    if type(messages) is not list and (not isinstance(messages, _Sequence) or isinstance(messages, (str, bytes))):
        raise ConfigError("messages must be a list of UniMessage dicts")
    if not messages:
        raise ConfigError("messages is empty: send at least one user message")
    if checked is not None:
        return checked.check(messages)
    for i, message in enumerate(messages):
        check_message(message, _MESSAGE_AT[i] if i < 32 else "messages[{}]".format(i))
    return None


#: the names of the first messages' places, made once
_MESSAGE_AT = tuple("messages[{}]".format(i) for i in range(32))


def message_copy(value: Any, places: "Snaps") -> Tuple[Any, bool]:
    """A copy of ``value``'s containers (dicts, lists, tuples) holding the very same leaves, and whether
    ``value`` is or holds a number: each number, and each container on the way to one, is written in
    ``places`` (its container, its key, the object) so a number replaced by an equal one of another type
    (``2.0``, ``True`` or ``Decimal(2)`` for ``2``), in place or in a container replaced by an equal one, is
    seen by identity where ``==`` to the copy would take it as unchanged."""
    kind = type(value)
    if kind is str or value is None:
        return value, False
    if kind is int or kind is float or kind is bool:
        return value, True
    if kind in _LEAVES:
        return value, False
    if kind is dict or isinstance(value, _Mapping):
        out = {}
        held = False
        for key, item in value.items():
            out[key], has = message_copy(item, places)
            if has:
                places.pin(value, key, item)
                held = True
        return out, held
    if kind is tuple or isinstance(value, (tuple, list)):
        made = []
        held = False
        for index, item in enumerate(value):
            copied, has = message_copy(item, places)
            made.append(copied)
            if has:
                places.pin(value, index, item)
                held = True
        return (tuple(made) if kind is tuple or isinstance(value, tuple) else made), held
    return value, False  # an immutable leaf, a bytearray (only its type is checked), or a value the check refused


_LEAVES = frozenset((str, int, float, bool, bytes, type(None)))


class Snaps(object):
    """Snapshots of a list's values, compared with it at C speed: a copy of each value's containers holding the
    same leaves (one ``==`` for all: an unchanged leaf matches by identity), and the places of the numbers
    (container, key, the number; the containers on the way to one likewise) read again and compared by
    identity (``2 == 2.0 == True`` would hide a number replaced by an equal one of another type, which the
    check may refuse and which is written otherwise in JSON).  ``add`` takes a value whose copy is made with
    ``copy`` (a message: ``message_copy``; a wire item: ``providers._common.wire_copy``), or ``None`` for one
    never taken as unchanged."""

    __slots__ = ("roots", "copies", "parents", "keys", "values", "ends")

    def __init__(self) -> None:
        self.roots = []  # type: List[Any]
        self.copies = []  # type: List[Any]
        self.parents = []  # type: List[Any]
        self.keys = []  # type: List[Any]
        self.values = []  # type: List[Any]
        self.ends = []  # type: List[int]  # per value: len(parents) after its places

    def pin(self, parent: Any, key: Any, value: Any) -> None:
        self.parents.append(parent)
        self.keys.append(key)
        self.values.append(value)

    def add(self, value: Any, copy: Optional[Callable[[Any, "Snaps"], Tuple[Any, bool]]]) -> None:
        self.roots.append(value)
        if copy is None:
            self.copies.append(_UNSEEN)
        else:
            self.copies.append(copy(value, self)[0])
        self.ends.append(len(self.parents))

    def head(self, count: int) -> "Snaps":
        """A new ``Snaps`` of the first ``count`` values."""
        out = Snaps()
        end = self.ends[count - 1] if count else 0
        out.roots, out.copies, out.ends = self.roots[:count], self.copies[:count], self.ends[:count]
        out.parents, out.keys, out.values = self.parents[:end], self.keys[:end], self.values[:end]
        return out

    def take(self, other: "Snaps", index: int) -> None:
        """Add ``other``'s snapshot of its value at ``index``."""
        start = other.ends[index - 1] if index else 0
        end = other.ends[index]
        self.roots.append(other.roots[index])
        self.copies.append(other.copies[index])
        self.parents += other.parents[start:end]
        self.keys += other.keys[start:end]
        self.values += other.values[start:end]
        self.ends.append(len(self.parents))

    def unchanged(self, index: int, value: Any) -> bool:
        """``value`` is the value at ``index``, unchanged since its snapshot."""
        if value is not self.roots[index] or value != self.copies[index]:
            return False
        start = self.ends[index - 1] if index else 0
        end = self.ends[index]
        return _pinned(self.parents[start:end], self.keys[start:end], self.values[start:end])

    def matches(self, values: Sequence[Any]) -> bool:
        """``values`` are these values, the same objects, each unchanged since its snapshot."""
        roots = self.roots
        return len(values) == len(roots) and all(map(_is, values, roots)) and values == self.copies \
            and _pinned(self.parents, self.keys, self.values)


def _pinned(parents: Sequence[Any], keys: Sequence[Any], values: Sequence[Any]) -> bool:
    """Each container still holds the same object at its key (C speed: no Python call per place)."""
    try:
        return all(map(_is, map(_getitem, parents, keys), values))
    except Exception:  # (a key gone, a list cut short, a Mapping whose look-up fails)
        return False


class CheckedMessages(object):
    """The messages the previous ``check`` passed, so a caller passing the same history again (the tool
    runner, a hand-written loop appending to its list) pays the check once per new message, not once per
    message per call: the cost of a run stays linear in its turns.

    A message is taken as checked when it is the same dict object as one passed on the previous call and
    compares equal (``==``) to a copy of its containers taken when it was checked: a message, an item or
    the arguments changed in place since, or a container replaced, no longer compare equal and are checked
    again (a number replaced by an equal one of another type, ``Decimal(2)`` for ``2``, too: the places of
    the numbers are read again and compared by identity, ``Snaps``).  Only plain
    ``dict`` messages are remembered, and only those of the last call (nothing older is kept alive); the
    object is safe to share between threads (a thread's call at worst checks again what another's
    replaced).

    A history passed again with messages appended (the usual loop) is recognised as a whole: the previous
    call's messages as its head, the very same objects, compared to their copies in one ``==``; ``check``
    returns how many leading messages are the previous call's, unchanged, and ``stash`` holds what the
    steps that turn the history into a request body kept of the last call (``providers._common.Prior``:
    they start from it where their input is that same head)."""

    __slots__ = ("_last", "stash")

    def __init__(self) -> None:
        self._last = ([], Snaps())  # type: Tuple[List[Any], Snaps]  # (messages, their snapshots) of the last call
        #: step name -> what that step kept of the last call (providers._common.Prior)
        self.stash = {}  # type: Dict[str, Any]

    def check(self, messages: Sequence[Any]) -> int:
        """Check what is new in ``messages``; how many leading messages are the previous call's, unchanged.
        (A client's own history too: its dicts are the caller's as well, so one changed in place is checked
        again.)"""
        last, snaps = self._last
        count = len(last)
        messages = list(messages)
        if count and len(messages) >= count and snaps.matches(messages[:count]):
            same = count  # the previous call's history as the head: one comparison for all of it
            made = snaps.head(count)
        else:
            same = 0
            seen = {id(message): (message, index) for index, message in enumerate(last)
                    if snaps.copies[index] is not _UNSEEN}
            made = Snaps()
            leading = True
            for i, message in enumerate(messages):
                entry = seen.get(id(message)) if type(message) is dict else None
                if entry is None or entry[0] is not message or not snaps.unchanged(entry[1], message):
                    check_message(message, "messages[{}]".format(i))
                    leading = False
                    made.add(message, message_copy if type(message) is dict else None)
                else:
                    if leading and i < count and last[i] is message:
                        same = i + 1
                    else:
                        leading = False
                    made.take(snaps, entry[1])
            count = len(messages)
        for i in range(count, len(messages)):
            message = messages[i]
            check_message(message, "messages[{}]".format(i))
            made.add(message, message_copy if type(message) is dict else None)
        self._last = (messages, made)
        if same < len(last):  # a message of the last call changed or is gone: what the steps kept is dropped
            self.stash = {}   # (a step that did not finish since may have kept what an older call made)
        return same

    def clear(self) -> None:
        self._last = ([], Snaps())
        self.stash = {}


class Unseen(object):
    """A snapshot of what cannot be copied (a message that is not a plain dict; a wire item's leaf of another
    type): equal to nothing, so it is checked (converted) on every call."""

    __slots__ = ()
    __hash__ = None  # type: ignore[assignment]

    def __eq__(self, other: Any) -> bool:
        return False

    def __ne__(self, other: Any) -> bool:
        return True


_UNSEEN = Unseen()


# -- OpenAI-shaped input: say what the agenthub shape is -----------------------------------------------


def _openai_message(message: Mapping[str, Any], where: str) -> None:
    """A Chat Completions message ({"role", "content"}) where a UniMessage belongs: show the agenthub shape."""
    if "content_items" in message:
        return
    role = message.get("role")
    if role == "system" and "content" in message:
        raise ConfigError("{} is a system message in OpenAI's shape; in agenthub the system prompt is "
                          "config['system_prompt'] = {}".format(where, _short(_text_of(message.get("content")))))
    if role == "tool":
        raise ConfigError("{} is a tool result in OpenAI's shape ({{'role': 'tool', ...}}); in agenthub it is an item "
                          "of a user message: {{'role': 'user', 'content_items': [{{'type': 'tool_result', "
                          "'tool_call_id': {}, 'text': {}}}]}}".format(
                              where, _short(message.get("tool_call_id", "...")),
                              _short(_text_of(message.get("content")))))
    if "content" not in message and "tool_calls" not in message:
        return
    items = []  # type: List[Dict[str, Any]]
    content = message.get("content")
    if isinstance(content, str):
        items.append({"type": "text", "text": _clip(content)})
    elif isinstance(content, list):
        for part in content:
            if isinstance(part, _Mapping) and part.get("type") == "text":
                items.append({"type": "text", "text": _clip(str(part.get("text", "")))})
            elif isinstance(part, _Mapping) and part.get("type") == "image_url":
                url = part.get("image_url")
                url = url.get("url") if isinstance(url, _Mapping) else url
                items.append({"type": "image_url", "image_url": url if isinstance(url, str) else "..."})
    for call in message.get("tool_calls") or ():
        function = call.get("function") if isinstance(call, _Mapping) else None
        if isinstance(function, _Mapping):
            items.append({"type": "tool_call", "name": function.get("name", "..."), "arguments": {"...": "..."},
                          "tool_call_id": call.get("id", "...")})
    shape = {"role": role if role in ("user", "assistant") else "user",
             "content_items": items or [{"type": "text", "text": "..."}]}
    raise ConfigError("{} is in OpenAI's shape ('content'); agenthub messages carry content_items, e.g. "
                      "{}".format(where, _short_shape(shape)))


def _openai_tool(tool: Any, index: int) -> None:
    """A Chat Completions tool ({"type": "function", "function": {...}}): show the agenthub ToolSchema."""
    if not isinstance(tool, _Mapping) or "name" in tool or not isinstance(tool.get("function"), Mapping):
        return
    function = tool["function"]
    shape = {"name": function.get("name", "..."), "description": "..." if "description" in function else None,
             "parameters": {"type": "object", "...": "..."} if "parameters" in function else None}
    shape = {k: v for k, v in shape.items() if v is not None}
    raise ConfigError("config['tools'][{}] is in OpenAI's shape ({{'type': 'function', 'function': {{...}}}}); an "
                      "agenthub tool is the function itself: {}".format(index, _short_shape(shape)))


def _clip(text: str) -> str:
    return text if len(text) <= 40 else text[:37] + "..."


def _text_of(content: Any) -> Any:
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, _Mapping) and p.get("type") == "text")
    return content


def _short_shape(shape: Any) -> str:
    text = _repr(shape)
    return text if len(text) <= 300 else text[:297] + "..."


def _repr(value: Any) -> str:
    """``repr(value)``; for a value nested deeper than Python's stack, its type's name (never a RecursionError)."""
    try:
        return repr(value)
    except RecursionError:
        return "<a {} nested too deeply to show>".format(type(value).__name__)


def _type_name(expected: Any) -> str:
    if isinstance(expected, tuple):
        return " or ".join(t.__name__ for t in expected)
    return expected.__name__


def _short(value: Any) -> Any:
    text = _repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
