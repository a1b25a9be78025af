"""What the command line prints: the UniEvents of a stream as they arrive (``Printer``), the usage
line of a turn, and a model row of ``agenthub models``.  ``agenthub chat`` and ``agenthub demo`` share it."""

import json
import os
from typing import Any, Mapping, Optional, TextIO

__all__ = ["Printer", "usage_line", "model_line", "print_models"]


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


def _dollars(amount: float) -> str:
    text = "{:.6f}".format(amount).rstrip("0")
    return text + "00" if text.endswith(".") else text


def _tokens(count: Optional[int]) -> str:
    if count is None:
        return "?"
    if count >= 1000000 and count % 1000000 == 0:
        return "{}M".format(count // 1000000)
    if count >= 1000 and count % 1000 == 0:
        return "{}K".format(count // 1000)
    return str(count)


def model_line(model: Mapping[str, Any]) -> str:
    """``claude-sonnet-5: context 1M, output 128K; $ 2 / 0.2 / 10 / 10 (2026-12-01)`` for ``agenthub models``."""
    prices = model.get("usd_per_1m") or {}
    shown = " / ".join("?" if prices.get(key) is None else "{:g}".format(prices[key]) for key in (
        "prompt_tokens", "cached_tokens", "thoughts_tokens", "response_tokens"))
    note = "; " + model["note"] if model.get("note") else ""
    return "{}: context {}, output {}; ${} ({}{})".format(
        model["model"], _tokens(model.get("context_window")), _tokens(model.get("max_output")), shown,
        model.get("taken"), note)


class Printer(object):
    """Renders UniEvents on a terminal as they arrive.

    Text is written as it streams; thinking goes on its own ``[thinking]`` lines
    (dimmed on a colour terminal); each complete tool call gets a ``[tool call]``
    line; media items are summarised; the stop event prints the usage line.

    With ``err``, only the answer text goes to ``out``: thinking, tool calls, media
    summaries and the usage line go to ``err`` (``agenthub chat``: stdout is the answer,
    ready for a pipe).  ``model`` prices each turn (``agenthub.cost``) on the usage line.
    """

    def __init__(self, out: TextIO, text_prefix: str = "", indent: str = "", color: Optional[bool] = None,
                 err: Optional[TextIO] = None, model: Optional[str] = None) -> None:
        self.out = out
        self.err = out if err is None else err
        self.text_prefix = text_prefix
        self.indent = indent
        self.model = model
        if color is None:
            color = bool(getattr(self.err, "isatty", lambda: False)()) and not os.environ.get("NO_COLOR")
        self.color = color
        self.mode = None  # type: Optional[str]  # "text", "thinking" or None (at the start of a line)

    def _style(self, code: str, text: str) -> str:
        return "\x1b[{}m{}\x1b[0m".format(code, text) if self.color else text

    def _line_end(self) -> None:
        if self.mode is not None:
            (self.out if self.mode == "text" else self.err).write("\n")
            self.mode = None

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
                from ..registry import cost

                price = cost(self.model, usage)
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
            self.err.write(self._style("2", item["thinking"]))
        elif kind == "text":
            if not item.get("text"):
                return
            if self.mode != "text":
                self._line_end()
                self.err.flush()
                self.out.write(self.indent + self.text_prefix)
                self.mode = "text"
            self.out.write(item["text"])
        elif kind == "tool_call":
            self.line(self._style("36", "[tool call] {}({}) id={}".format(
                item.get("name"), json.dumps(item.get("arguments"), ensure_ascii=False), item.get("tool_call_id"))))
        elif kind in ("inline_data", "inline_thinking"):
            self.line("[{} {}, {} bytes]".format("media" if kind == "inline_data" else "thinking data",
                                                 item.get("mime_type"), len(item.get("data") or b"")))
        elif kind == "image_url":
            url = str(item.get("image_url", ""))
            self.line("[image {}]".format(url if not url.startswith("data:") else url[:40] + "..."))
        elif kind == "embedding":
            values = item.get("embedding") or []
            self.line("[embedding: {} dimensions, first {}]".format(
                len(values), ", ".join("{:.4f}".format(v) for v in values[:3])))
        # partial_tool_call fragments are not shown: the complete call follows


def print_models(out: TextIO, as_json: bool = False) -> int:
    """``agenthub models``: the routing registry as a table (or one JSON array)."""
    from ..registry import list_models

    rows = list_models()
    if as_json:
        out.write(json.dumps(rows, indent=2) + "\n")
        return 0
    out.write("{:<30} {:<17} {:<56} {}\n".format("MODEL NAMES", "PROTOCOL", "ENDPOINT", "API KEY"))
    for row in rows:
        out.write("{:<30} {:<17} {:<56} {}\n".format(
            row["label"], row["client_type"], row["base_url"], " or ".join(row["api_key_env"]) or "-"))
        out.write("    {}; {} -> {}; e.g. {}\n".format(
            row["vendor"], "+".join(row["input_modalities"]), "+".join(row["output_modalities"]),
            ", ".join(row["examples"])))
        for model in row.get("models") or ():
            out.write("    {}\n".format(model_line(model)))
    if any(row.get("models") for row in rows):
        out.write("\nPrices: USD per 1M tokens of each usage bucket (prompt / cached / thinking / response), "
                  "list prices as taken on the date shown; ? where unknown.\n")
    out.write("\nAny other model: --client-type PROTOCOL (openai-chat, openai-responses, anthropic, gemini) "
              "or a preset "
              "({}), with --base-url.\n".format(", ".join(r["presets"][0] for r in rows if r["presets"])))
    return 0
