"""Trace files: a conversation (history + config) saved as JSON and as readable text.

``save_trace("agent1/run_007", ...)`` writes ``$AGENTHUB_CACHE_DIR/agent1/run_007.json``
(bytes as base64) and ``run_007.txt`` beside it; the default directory is ``cache``.
A trace_id that would escape the cache directory is a ConfigError.
"""

import base64
import json
import os
import time
from typing import Any, Dict, List, Mapping

from .errors import ConfigError

__all__ = ["cache_dir", "trace_paths", "save_trace", "load_trace", "to_jsonable", "from_jsonable"]


def cache_dir() -> str:
    return os.environ.get("AGENTHUB_CACHE_DIR") or "cache"


def trace_paths(trace_id: str, root: str = None) -> Dict[str, str]:
    root = os.path.abspath(root or cache_dir())
    if not isinstance(trace_id, str) or not trace_id.strip() or "\x00" in trace_id:
        raise ConfigError("trace_id must be a non-empty string")
    if os.path.isabs(trace_id) or trace_id.startswith(("/", "\\")) or ":" in trace_id.split("/")[0]:
        raise ConfigError("trace_id must be a relative name inside the cache directory")
    parts = trace_id.replace("\\", "/").split("/")
    if any(part in ("", ".", "..") for part in parts):
        raise ConfigError("trace_id may not contain empty, '.' or '..' parts")
    base = os.path.abspath(os.path.join(root, *parts))
    if os.path.commonpath([root, base]) != root:
        raise ConfigError("trace_id escapes the cache directory")
    return {"json": base + ".json", "txt": base + ".txt"}


def to_jsonable(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray)):
        return {"__bytes__": base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if hasattr(value, "value") and isinstance(getattr(value, "value"), str):  # str enums
        return value.value
    return value


def from_jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        if set(value) == {"__bytes__"}:
            return base64.b64decode(value["__bytes__"])
        return {k: from_jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [from_jsonable(v) for v in value]
    return value


def save_trace(trace_id: str, model: str, history: List[Mapping[str, Any]], config: Mapping[str, Any],
               root: str = None) -> Dict[str, str]:
    paths = trace_paths(trace_id, root)
    os.makedirs(os.path.dirname(paths["json"]), exist_ok=True)
    cfg = dict(config)
    cfg["model"] = model
    document = {"history": to_jsonable(history), "config": to_jsonable(cfg), "timestamp": int(time.time() * 1000)}
    _write(paths["json"], json.dumps(document, ensure_ascii=False, indent=2))
    _write(paths["txt"], render_text(history, cfg))
    return paths


def load_trace(path: str) -> Dict[str, Any]:
    with open(path, encoding="utf-8") as handle:
        return from_jsonable(json.load(handle))


def _write(path: str, text: str) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(tmp, path)


def render_text(history: List[Mapping[str, Any]], config: Mapping[str, Any]) -> str:
    lines = ["model: {}".format(config.get("model"))]
    for key, value in sorted(config.items()):
        if key in ("model", "tools"):
            continue
        lines.append("{}: {}".format(key, to_jsonable(value)))
    for tool in config.get("tools") or ():
        lines.append("tool: {} - {}".format(tool.get("name"), tool.get("description", "")))
    for i, message in enumerate(history):
        lines.append("")
        lines.append("[{}] {}:".format(i, str(message.get("role", "?")).upper()))
        for item in message.get("content_items") or ():
            kind = item.get("type")
            if kind == "text":
                lines.append("  Text: " + item.get("text", ""))
            elif kind == "thinking":
                lines.append("  Thinking: " + item.get("thinking", ""))
            elif kind == "image_url":
                url = item.get("image_url", "")
                lines.append("  Image URL: " + (url if not url.startswith("data:") else url[:40] + "..."))
            elif kind in ("inline_data", "inline_thinking"):
                lines.append("  {}: {} ({} bytes)".format(
                    "Inline data" if kind == "inline_data" else "Inline thinking", item.get("mime_type"),
                    len(item.get("data") or b"")))
            elif kind == "tool_call":
                lines.append("  Tool Call: {}({}) id={}".format(
                    item.get("name"), json.dumps(item.get("arguments"), ensure_ascii=False), item.get("tool_call_id")))
            elif kind == "tool_result":
                lines.append("  Tool Result [{}]: {}".format(item.get("tool_call_id"), item.get("text", "")))
            elif kind == "embedding":
                lines.append("  Embedding: {} dimensions".format(len(item.get("embedding") or ())))
        usage = message.get("usage_metadata")
        if usage:
            lines.append("  Usage: " + ", ".join("{}={}".format(k, v) for k, v in usage.items()))
        if message.get("finish_reason"):
            lines.append("  Finish reason: {}".format(message["finish_reason"]))
    return "\n".join(lines) + "\n"
