"""What the command line prints: the UniEvents of a stream as they arrive (``Printer``), the usage
line of a turn, and a model row of ``agenthub models``.  ``agenthub chat`` and ``agenthub demo`` share it."""

import json
import os
from typing import Any, List, Mapping, Optional, TextIO

from .._controls import _as_it_is as _raw, dollars, is_terminal, printable, safe, shown_for  # (below the applications)
from .._redact import shown_url
from ..stream import text_is_utf8

__all__ = ["Printer", "usage_line", "model_line", "print_models", "printable", "safe", "is_terminal",
           "standard_streams", "shown_for"]

def _escaped(error: UnicodeError) -> Any:
    """The ``agenthub.escape`` error handler: what an output encoding cannot write (ASCII, Latin-1) as JSON's
    ``\\u00e9`` escapes (a pair for a character past U+FFFF), readable on a terminal and valid in a JSON string."""
    if not isinstance(error, UnicodeEncodeError):
        raise error
    units = error.object[error.start:error.end].encode("utf-16-le", "surrogatepass")
    return "".join("\\u{:04x}".format(int.from_bytes(units[i:i + 2], "little")) for i in range(0, len(units), 2)), \
        error.end


def _escaped_bytes(error: UnicodeError) -> Any:
    """``agenthub.escape`` for a stream that was ``surrogateescape`` (a C locale without UTF-8 mode): the bytes a
    file name or an argument carried (U+DC80 to U+DCFF) written back as they were, the rest escaped."""
    if isinstance(error, UnicodeEncodeError):
        chunk = error.object[error.start:error.end]
        if all("\udc80" <= char <= "\udcff" for char in chunk):
            return bytes(ord(char) - 0xdc00 for char in chunk), error.end
    return _escaped(error)


def standard_streams() -> None:
    """Make the process's standard streams safe to use, once, as the command line starts: a stream the caller
    closed (``agenthub models >&-``: Python leaves ``sys.stdout`` None) reads as empty and writes nowhere, its
    descriptor taken by the null device (no file opened later gets it); stdout and stderr write a character
    their encoding lacks (``PYTHONIOENCODING=ascii``, a Latin-1 terminal) as ``\\u00e9`` instead of stopping
    the answer with UnicodeEncodeError."""
    import codecs
    import io
    import sys

    for name, handler in (("agenthub.escape", _escaped), ("agenthub.escape.bytes", _escaped_bytes)):
        try:
            codecs.lookup_error(name)
        except LookupError:
            codecs.register_error(name, handler)
    for fd, name in enumerate(("stdin", "stdout", "stderr")):
        stream = getattr(sys, name)
        if stream is None:
            null = os.open(os.devnull, os.O_RDWR)
            if null != fd:
                try:
                    os.fstat(fd)
                except OSError:  # the descriptor is free: the null device takes its number
                    os.dup2(null, fd)
                    os.close(null)
                    null = fd
            stream = io.TextIOWrapper(io.FileIO(null, "r" if fd == 0 else "w"), encoding="utf-8",
                                      line_buffering=fd == 2)
            setattr(sys, name, stream)
            setattr(sys, "__{}__".format(name), stream)
        elif fd and getattr(stream, "errors", None) in ("strict", "surrogateescape") \
                and hasattr(stream, "reconfigure") and stream is getattr(sys, "__{}__".format(name)):
            stream.reconfigure(errors="agenthub.escape" if stream.errors == "strict" else "agenthub.escape.bytes")


def usage_line(finish_reason: Optional[str], usage: Optional[Mapping[str, Any]], cost: Optional[float] = None) -> str:
    """``[done: stop] tokens: prompt 24, cached 64, thinking 0, response 14`` (``?`` where the server said nothing),
    then ``, cost $0.000123`` when the turn's list price is known."""
    usage = usage or {}
    counts = ", ".join("{} {}".format(label, "?" if usage.get(key) is None else usage[key]) for label, key in (
        ("prompt", "prompt_tokens"), ("cached", "cached_tokens"), ("thinking", "thoughts_tokens"),
        ("response", "response_tokens")))
    line = "[done: {}] tokens: {}".format(finish_reason, counts)
    if cost is not None:
        line += ", cost ${}".format(_dollars(cost))
    return line


_dollars = dollars  # (the name chat and runs_cli import)


def _tokens(count: Optional[int]) -> str:
    if count is None:
        return "?"
    if count >= 1000000 and count % 1000000 == 0:
        return "{}M".format(count // 1000000)
    if count >= 1000 and count % 1000 == 0:
        return "{}K".format(count // 1000)
    return str(count)


def model_line(model: Mapping[str, Any]) -> str:
    """A catalog row for ``agenthub models --provider``: ``claude-sonnet-4-6: context 1M, output 64K;
    $3 in / 0.3 cached / 3.75 write / 15 out; text+image+pdf -> text; reasoning, tools``."""
    prices = model.get("prices") or {}
    shown = " / ".join("{} {}".format("?" if prices.get(key) is None else "{:g}".format(prices[key]), label)
                       for key, label in (("input", "in"), ("cached_input", "cached"), ("cache_write_5m", "write"),
                                          ("output", "out")))
    extra = []
    if prices.get("long_context"):
        extra.append("above {} input".format(_tokens(prices["long_context"][0]["above_input_tokens"])))
    if model.get("batch"):
        extra.append("batch")
    extra.extend(sorted(model.get("tiers") or ()))
    supports = [name for name, key in (("reasoning", "reasoning"), ("tools", "tools")) if model.get(key)]
    supports += ["json_schema"] if takes_json_schema(model) else []
    return "{}: context {}, output {}; ${}{}; {} -> {}{}".format(
        model["id"], _tokens(model.get("context_window")), _tokens(model.get("max_output")), shown,
        " (+" + ", ".join(extra) + ")" if extra else "", "+".join(model.get("input_modalities") or ["?"]),
        "+".join(model.get("output_modalities") or ["?"]), "; " + ", ".join(supports) if supports else "")


class Printer(object):
    """Renders UniEvents on a terminal as they arrive.

    Text is written as it streams; thinking goes on its own ``[thinking]`` lines
    (dimmed on a colour terminal); each complete tool call gets a ``[tool call]``
    line; media items are summarised; the stop event prints the usage line.

    With ``err``, only the answer text goes to ``out``: thinking, tool calls, media
    summaries and the usage line go to ``err`` (``agenthub chat``: stdout is the answer,
    ready for a pipe).  ``model`` prices each turn on the usage line as every agenthub path prices it
    (``catalog.call_cost``), with ``call`` (the turn's Attempt: its start, a cache hit, its tier) and ``route``
    (the route that answered: a cache hit costs 0) where the caller knows them.
    """

    def __init__(self, out: TextIO, text_prefix: str = "", indent: str = "", color: Optional[bool] = None,
                 err: Optional[TextIO] = None, model: Optional[str] = None) -> None:
        self.out = out
        self.err = out if err is None else err
        self.text_prefix = text_prefix
        self.indent = indent
        self.model = model
        self.call = None  # type: Any
        self.route = None  # type: Any
        if color is None:
            color = bool(getattr(self.err, "isatty", lambda: False)()) and not os.environ.get("NO_COLOR")
        self.color = color
        # model text reaches a terminal with its control sequences shown, not obeyed; a pipe gets it raw
        self._out_clean = printable if is_terminal(self.out) else _raw
        self._err_clean = printable if is_terminal(self.err) else _raw
        self.mode = None  # type: Optional[str]  # "text", "thinking" or None (at the start of a line)
        self._held = ""  # the high half of a UTF-16 pair that ended the last text or thinking item, until the next

    def _style(self, code: str, text: str) -> str:
        return "\x1b[{}m{}\x1b[0m".format(code, text) if self.color else text

    def _line_end(self) -> None:
        if self.mode is not None:
            (self.out if self.mode == "text" else self.err).write(("\ufffd" if self._held else "") + "\n")
            self._held = ""
            self.mode = None

    def _whole(self, text: str) -> str:
        """A text or thinking delta as it can be written: an emoji's UTF-16 halves sent in two deltas (a gateway
        that slices by UTF-16 index) written as the character (the high half waits for the next delta), a half
        without its partner as U+FFFD (what ``collect`` makes of them: a strict UTF-8 stdout refuses them)."""
        text = self._held + text
        self._held = ""
        if text and "\ud800" <= text[-1] <= "\udbff":
            self._held, text = text[-1], text[:-1]
        return text if text_is_utf8(text) else text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")

    def break_line(self) -> None:
        """End the line in progress (before something else writes to the terminal: a log record)."""
        self._line_end()
        self.out.flush()
        if self.err is not self.out:
            self.err.flush()

    def line(self, text: str) -> None:
        """A whole line of its own (after ending any text in progress), on ``err``."""
        self._line_end()
        self.out.flush()
        self.err.write(self.indent + text + "\n")
        self.err.flush()

    def event(self, event: Mapping[str, Any]) -> None:
        for item in event["content_items"]:
            self.item(item)
        if event["event_type"] == "stop":
            usage = event.get("usage_metadata")
            price = None
            if self.model is not None:
                from ..catalog import call_cost

                price = call_cost(self.model, usage, self.call, self.route)
            self.line(self._style("2", usage_line(event.get("finish_reason"), usage, price)))
        self.out.flush()
        if self.err is not self.out:
            self.err.flush()

    def item(self, item: Mapping[str, Any]) -> None:
        kind = item.get("type")
        if kind == "thinking":
            if not item.get("thinking"):
                return
            if self.mode != "thinking":
                self._line_end()
                self.out.flush()
                self.err.write(self.indent + self._style("2", "[thinking] "))
                self.mode = "thinking"
            self.err.write(self._style("2", self._err_clean(self._whole(item["thinking"]))))
        elif kind == "text":
            if not item.get("text"):
                return
            if self.mode != "text":
                self._line_end()
                self.err.flush()
                self.out.write(self.indent + self.text_prefix)
                self.mode = "text"
            self.out.write(self._out_clean(self._whole(item["text"])))
        elif kind == "tool_call":
            self.line(self._style("36", safe("[tool call] {}({}) id={}".format(
                item.get("name"), json.dumps(item.get("arguments"), ensure_ascii=False), item.get("tool_call_id")))))
        elif kind in ("inline_data", "inline_thinking"):
            self.line(self._err_clean("[{} {}, {} bytes]".format(
                "media" if kind == "inline_data" else "thinking data", item.get("mime_type"),
                len(item.get("data") or b""))))
        elif kind == "image_url":
            url = str(item.get("image_url", ""))
            self.line(self._err_clean("[image {}]".format(url if not url.startswith("data:") else url[:40] + "...")))
        elif kind == "embedding":
            values = item.get("embedding") or []
            self.line("[embedding: {} dimensions, first {}]".format(
                len(values), ", ".join("{:.4f}".format(v) for v in values[:3])))
        # partial_tool_call fragments are not shown: the complete call follows


def print_models(out: TextIO, as_json: bool = False, provider: Optional[str] = None,
                 supports: Optional[List[str]] = None, routes: bool = False,
                 environ: Optional[Mapping[str, str]] = None) -> int:
    """``agenthub models``: the routing table (``routes``, the default without ``as_json``), each row's
    endpoint as its ``*_BASE_URL`` variable sets it; ``as_json`` alone, ``provider`` or ``supports``: the model
    catalog's rows."""
    import os

    from ..catalog import catalog_info, list_supported_models
    from ..registry import list_models
    from ..errors import ConfigError

    if routes and (provider is not None or supports):
        raise ConfigError("--routes lists the routing table; --provider and --supports list the catalog: give one "
                          "or the other")
    if provider is not None or supports or (as_json and not routes):
        return print_catalog(out, as_json, provider, supports)  # (an empty or unknown provider: a ConfigError)
    env = os.environ if environ is None else environ
    rows = list_models()
    for row in rows:  # where a request goes today: the variable's endpoint when it is set
        named = env.get(row["base_url_env"]) if row.get("base_url_env") else None
        row["endpoint"] = shown_url(named) or row["base_url"]  # (its user:password@ and query values: ***)
    if as_json:
        out.write(json.dumps(rows, indent=2) + "\n")
        return 0
    out.write("{:<30} {:<17} {:<56} {}\n".format("MODEL NAMES", "PROTOCOL", "ENDPOINT", "API KEY"))
    for row in rows:
        endpoint = row["endpoint"] if row["endpoint"] == row["base_url"] else "{} ({})".format(
            row["endpoint"], row["base_url_env"])
        out.write("{:<30} {:<17} {:<56} {}\n".format(
            row["label"], row["client_type"], endpoint, " or ".join(row["api_key_env"]) or "-"))
        out.write("    {}; {} -> {}; e.g. {}\n".format(
            row["vendor"], "+".join(row["input_modalities"]), "+".join(row["output_modalities"]),
            ", ".join(row["examples"])))
    info = catalog_info()
    out.write("\nCatalog: {} models (snapshot {}; {}): `agenthub models --provider NAME` or `--supports "
              "tools|vision|reasoning|json_schema` lists them, with limits and prices.\n".format(
                  len(list_supported_models()), info["date"], _sources(info)))
    out.write("\nAny other model: --client-type PROTOCOL (openai-chat, openai-responses, anthropic, gemini) "
              "or a preset "
              "({}), with --base-url.\n".format(", ".join(r["presets"][0] for r in rows if r["presets"])))
    return 0


def _sources(info: Mapping[str, Any]) -> str:
    return ", ".join("{} {}".format(s["name"], s["version"]) for s in info["sources"] if "version" in s)


#: the catalog providers whose model names route to their own endpoint (gateways' and Bedrock's names do not)
_ROUTED = frozenset(["openai", "anthropic", "google", "deepseek", "zai", "moonshot", "dashscope", "minimax"])
_JSON_SCHEMA = {"response_format": {"type": "json_schema", "name": "check", "schema": {
    "type": "object", "properties": {}, "additionalProperties": False}}}


def takes_json_schema(model: Mapping[str, Any]) -> bool:
    """Whether a ``response_format`` json_schema can be sent to this catalog model (``--supports json_schema``):
    its own route must take it (a plan is built, nothing is sent: DeepSeek, Z.AI and Moonshot take JSON mode
    only, Claude before 4.1 has no structured outputs), and the sources must say the model has it, unless the
    route's dialect knows each model itself (its record's ``knows_structured_output``: Anthropic's, where the
    sources say nothing)."""
    if model.get("structured_output") is False:
        return False
    if model.get("provider") not in _ROUTED:
        return model.get("structured_output") is True
    from ..client import AutoLLMClient
    from ..errors import ConfigError
    from ..messages import user
    from ..providers import DIALECTS

    try:
        client = AutoLLMClient(model["id"], api_key="unused")
        client.plan([user("x")], _JSON_SCHEMA)  # type: ignore[arg-type]
    except ConfigError:  # (an UnsupportedParameterError: the route refuses it; a name it cannot route)
        return False
    record = DIALECTS.get(client.protocol.name)
    return model.get("structured_output") is True or (record is not None and record.knows_structured_output)


_SUPPORTS = {"tools": lambda m: m.get("tools") is True, "reasoning": lambda m: m.get("reasoning") is True,
             "json_schema": takes_json_schema,
             "vision": lambda m: "image" in (m.get("input_modalities") or ())}


def print_catalog(out: TextIO, as_json: bool, provider: Optional[str], supports: Optional[List[str]]) -> int:
    """``agenthub models --provider P --supports X``: the catalog's rows, grouped by provider."""
    from ..catalog import catalog_info, list_supported_models

    rows = [row for row in list_supported_models(provider) if all(_SUPPORTS[need](row) for need in supports or ())]
    if as_json:
        out.write(json.dumps(rows, indent=2) + "\n")
        return 0
    current = None
    for row in rows:
        if row["provider"] != current:
            current = row["provider"]
            out.write("{}:\n".format(current))
        out.write("    {}\n".format(model_line(row)))
    info = catalog_info()
    out.write("\n{} models. Prices: USD per 1M tokens (input / cached input / 5-minute cache write / output), "
              "list prices of {} ({}); ? where unknown.\n".format(len(rows), info["date"], _sources(info)))
    return 0
