"""Trace files: a conversation (history + config) saved as JSON and as readable text.

``save_trace("agent1/run_007", ...)`` writes ``$AGENTHUB_CACHE_DIR/agent1/run_007.json``
and ``run_007.txt`` beside it; the default directory is ``cache``.  The JSON document
is ``{"trace_id", "model", "timestamp", "config", "history"}`` with bytes stored as
``{"__bytes__": "<base64>"}`` (``load_trace`` turns them back into bytes).  A trace_id
that would escape the cache directory (``..``, an absolute path, a drive) is a
ConfigError.  Traces never hold a key: the config and the history are all there is
(the values of ``extra_headers``, the MCP credentials of ``mcp_servers`` and ``extra_body``, and what
``extra_body`` holds under fields named like a credential, ``{"api_key": ...}``, are written as ``***``).

Checked when the stream is created (ConfigError, nothing sent): a trace_id is at most
``MAX_TRACE_ID`` characters, each of its ``/``-separated parts at most ``MAX_PART``
bytes (UTF-8) of letters, digits, ``_``, ``-``, ``.``, ``+``, ``=``, ``@``, ``,`` and spaces
(no control or invisible character, nothing a file system reserves), and no folder on
its way may be an existing file.

Writing: each file goes to a temporary file of its own in the same folder (so any
number of threads and processes may write one trace_id at once: the last complete
write wins, no reader ever sees half a file) and is then renamed over the target.
Trace files are readable by their owner only (0600), new folders 0700.

Failure policy: a trace that cannot be written once the answer completed (disk
full, permissions, a folder removed meanwhile) never turns the answer into an
error.  The failure is logged on the ``agenthub`` logger (level ERROR, with the
trace_id and the reason) and the answer stands: a stateful call's history gains
the turn exactly as for any other success, so a caller never retries a turn that
already happened.

Tool calls: a run of the tool runner (``client.run(..., config={"trace_id": ...})``) adds
``"tool_calls"``: one row per call it answered, ``{"tool_call_id", "name", "seconds", "is_error",
"turn"}`` (``seconds``: how long the tool ran, 0.0 for a call answered without running it (denied,
unknown, invalid arguments); ``turn``: the index in ``history`` of the user message holding its
result).  The run's one trace writer (``RunTrace``, a hook of the run) holds them in memory and writes
them with the turn that executed them, right after the calls return; each later turn's write keeps them.  A row never holds arguments or the
result: those are in ``history`` already.  Traces without ``"tool_calls"`` (older files, calls
without the runner) load and render as before.

``agenthub trace view DIR`` shows them in a browser; ``agenthub trace show FILE``
prints the text form.
"""

import base64
import errno
import json
import logging
import os
import re
import stat
import tempfile
import time
from typing import Any, Dict, List, Mapping, Optional, Sequence

from ._redact import body_secrets, named_secrets, redact_mcp_servers, redact_named, scrub_text
from .attempts import AttemptHook, same_route
from .errors import ConfigError
from .stream import surrogates_escaped, surrogates_shown
from .types import USAGE_KEYS, from_jsonable, to_jsonable  # the one {"__bytes__"} codec (tracer.to_jsonable stays importable)
from ._jsondepth import loads as _json_loads

#: the longest trace_id accepted, and the longest part between two slashes (file names stay under NAME_MAX)
MAX_TRACE_ID = 512
MAX_PART = 160
_PART = re.compile(r"[\w.+=@, -]+\Z")
#: config keys whose values are credentials the caller chose to send: written as "***"
_SECRET_CONFIG = ("extra_headers",)
#: the fields of a row of ``document["tool_calls"]``, in order
TOOL_CALL_FIELDS = ("tool_call_id", "name", "seconds", "is_error", "turn")

__all__ = ["cache_dir", "trace_paths", "save_trace", "load_trace", "list_traces", "to_jsonable", "from_jsonable",
           "render_text", "TraceHook", "RunTrace"]

logger = logging.getLogger("agenthub")


def cache_dir() -> str:
    return os.environ.get("AGENTHUB_CACHE_DIR") or "cache"


def trace_paths(trace_id: str, root: Optional[str] = None) -> Dict[str, str]:
    """{"json": ..., "txt": ...} for ``trace_id`` under ``root`` (default: the cache dir)."""
    root = os.path.abspath(root or cache_dir())
    if not isinstance(trace_id, str) or not trace_id.strip() or "\x00" in trace_id:
        raise ConfigError("trace_id must be a non-empty string")
    if os.path.isabs(trace_id) or trace_id.startswith(("/", "\\")) or ":" in trace_id.replace("\\", "/").split("/")[0]:
        raise ConfigError("trace_id must be a relative name inside the cache directory (got {!r})".format(trace_id))
    parts = trace_id.replace("\\", "/").split("/")
    if any(part in ("", ".", "..") for part in parts):
        raise ConfigError("trace_id may not contain empty, '.' or '..' parts (got {!r})".format(trace_id))
    if len(trace_id) > MAX_TRACE_ID:
        raise ConfigError("trace_id is {} characters long; at most {} are accepted".format(len(trace_id), MAX_TRACE_ID))
    for part in parts:
        if len(part.encode("utf-8", "surrogatepass")) > MAX_PART:
            raise ConfigError("a part of trace_id between slashes is {} bytes long in UTF-8; at most {} are accepted "
                              "({!r}...)".format(len(part.encode("utf-8", "surrogatepass")), MAX_PART, part[:40]))
        if not _PART.match(part) or part != part.strip() or part.endswith("."):
            bad = sorted({c for c in part if not (c.isalnum() or c in "_.+=@, -")} or {part})
            raise ConfigError("trace_id may hold letters, digits, '_', '-', '.', '+', '=', '@', ',', spaces and '/' "
                              "(no part may start or end with a space or end with '.'); got {!r} in {!r}".format(
                                  "".join(bad)[:20], trace_id[:80]))
    base = os.path.abspath(os.path.join(root, *parts))
    if os.path.commonpath([root, base]) != root:
        raise ConfigError("trace_id escapes the cache directory (got {!r})".format(trace_id))
    folder = root
    for part in [""] + parts[:-1]:
        folder = os.path.join(folder, part) if part else folder
        if os.path.lexists(folder) and not os.path.isdir(folder):
            raise ConfigError("trace_id {!r} needs the folder {} but a file is there".format(trace_id, folder))
    for ext in ("json", "txt"):
        if os.path.isdir(base + "." + ext):
            raise ConfigError("trace_id {!r}: {} is a folder".format(trace_id, base + "." + ext))
    return {"json": base + ".json", "txt": base + ".txt"}


def _server_item(item: Mapping[str, Any]) -> str:
    """What a server item carried in fidelity is (an MCP list or call a provider ran, a server tool block),
    in one line; "" for any other item."""
    fidelity = item.get("fidelity")
    wire = (fidelity.get("server_item") or fidelity.get("server_block")) if isinstance(fidelity, Mapping) else None
    if not isinstance(wire, Mapping):
        return ""
    kind = str(wire.get("type", "?"))
    server = wire.get("server_label") or wire.get("server_name")
    if kind == "mcp_list_tools":
        tools = wire.get("tools") if isinstance(wire.get("tools"), list) else []
        return "mcp_list_tools on {}: {}".format(server, ", ".join(str((t or {}).get("name")) for t in tools
                                                                   if isinstance(t, Mapping)))
    name = wire.get("name")
    if name:
        arguments = wire.get("arguments", wire.get("input"))
        text = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
        line = "{} {}({}){}".format(kind, name, text, " on {}".format(server) if server else "")
        if isinstance(wire.get("output"), str):
            line += " -> " + wire["output"]
        return line + (" id={}".format(wire["id"]) if wire.get("id") else "")
    if wire.get("tool_use_id"):
        content = wire.get("content")
        text = content if isinstance(content, str) else " ".join(
            str(part.get("text")) for part in content or () if isinstance(part, Mapping) and "text" in part)
        return "{}{} for {}: {}".format(kind, " (error)" if wire.get("is_error") else "", wire["tool_use_id"], text)
    return kind


def _tool_call_row(row: Mapping[str, Any]) -> Dict[str, Any]:
    """A tool-call row with exactly TOOL_CALL_FIELDS (nothing else a caller's dict held); ValueError when
    a field is missing or of the wrong type."""
    if not isinstance(row, Mapping):
        raise ValueError("a tool_calls row is a dict, not a {}".format(type(row).__name__))
    seconds, turn = row.get("seconds"), row.get("turn")
    if not isinstance(row.get("tool_call_id"), str) or not isinstance(row.get("name"), str) \
            or isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not seconds >= 0 \
            or not isinstance(row.get("is_error"), bool) or isinstance(turn, bool) or not isinstance(turn, int):
        raise ValueError("a tool_calls row needs tool_call_id (str), name (str), seconds (a number >= 0), "
                         "is_error (bool) and turn (int)")
    return {"tool_call_id": row["tool_call_id"], "name": row["name"], "seconds": round(float(seconds), 6),
            "is_error": row["is_error"], "turn": turn}


def _readable_rows(rows: Any) -> List[Dict[str, Any]]:
    """The well-formed rows of a trace file's "tool_calls" (what a reader shows; anything else is left out)."""
    out = []
    for row in rows if isinstance(rows, list) else ():
        try:
            out.append(_tool_call_row(row))
        except ValueError:
            continue
    return out


def save_trace(trace_id: str, model: str, history: Sequence[Mapping[str, Any]], config: Mapping[str, Any],
               root: Optional[str] = None, routes: Optional[Sequence[Mapping[str, Any]]] = None,
               tool_calls: Optional[Sequence[Mapping[str, Any]]] = None) -> Dict[str, str]:
    """Write the trace's .json and .txt (atomically); returns their paths.  ``tool_calls``: rows of
    ``{"tool_call_id", "name", "seconds", "is_error", "turn"}`` (only these fields are written; a row
    missing one is a ValueError)."""
    rows = [_tool_call_row(row) for row in tool_calls or ()]
    paths = trace_paths(trace_id, root)
    os.makedirs(os.path.dirname(paths["json"]), mode=0o700, exist_ok=True)
    cfg = dict(config)
    for key in _SECRET_CONFIG:
        if isinstance(cfg.get(key), Mapping):
            cfg[key] = {name: "***" for name in cfg[key]}
    if cfg.get("mcp_servers"):  # their header values are credentials too
        cfg["mcp_servers"] = redact_mcp_servers(cfg["mcp_servers"])
    if isinstance(cfg.get("extra_body"), Mapping):  # as sent: MCP credentials in it are the client's to scrub too,
        # and every field named like a credential ({"api_key": ...}: _redact.is_secret_name) is ***
        secrets = sorted(set(body_secrets(cfg["extra_body"])) | set(named_secrets(cfg["extra_body"])), key=len,
                         reverse=True)
        cfg["extra_body"] = _scrubbed(redact_named(cfg["extra_body"]), secrets)
    cfg["model"] = model
    document = {
        "trace_id": trace_id,
        "model": model,
        "timestamp": int(time.time() * 1000),
        "config": to_jsonable(cfg),
        "history": to_jsonable(history),
    }
    if routes:  # which model, protocol and host answered each turn (index of the answer in history)
        document["routes"] = [dict(route) for route in routes]
    if rows:  # each call the tool runner answered: how long it ran, whether it failed (turn: its result's message)
        document["tool_calls"] = rows
    _write(paths["json"], surrogates_escaped(json.dumps(document, ensure_ascii=False, indent=2)) + "\n")
    _write(paths["txt"], render_text(history, cfg, rows))
    return paths


def _scrubbed(value: Any, secrets: List[str]) -> Any:
    """``value`` (JSON-like) with every secret in its strings as ``***``."""
    if isinstance(value, str):
        return scrub_text(value, secrets)
    if isinstance(value, Mapping):
        return {key: _scrubbed(item, secrets) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_scrubbed(item, secrets) for item in value]
    return value


def _previous(json_path: str, history: Sequence[Mapping[str, Any]]) -> Optional[Dict[str, Any]]:
    """The trace file at ``json_path`` as JSON when it holds an earlier state of this same conversation
    (its history a prefix of ``history``, compared as written, created_at aside); None when it is missing,
    unreadable, or another conversation's (a rerun under the same trace_id)."""
    try:
        with _open_regular(json_path) as handle:
            document = _json_loads(handle.read())
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(document, dict) or not isinstance(document.get("history"), list):
        return None
    before = document["history"]
    if len(before) > len(history):
        return None
    try:
        now = json.loads(json.dumps(to_jsonable(list(history[:len(before)])), ensure_ascii=False))
    except (TypeError, ValueError):  # a value JSON cannot hold: no earlier state to keep (the write says why)
        return None
    if [_unstamped(m) for m in before] != [_unstamped(m) for m in now]:
        return None
    return document


def _unstamped(message: Any) -> Any:
    """A message without its created_at (a stateful turn stamps the results message when it commits it)."""
    return {k: v for k, v in message.items() if k != "created_at"} if isinstance(message, dict) else message


def _rows_for(document: Optional[Mapping[str, Any]], history: Sequence[Mapping[str, Any]]) -> List[Dict[str, Any]]:
    """The rows of an earlier write of this conversation whose result is in ``history``."""
    if document is None:
        return []
    kept = []
    for row in _readable_rows(document.get("tool_calls")):
        if 0 <= row["turn"] < len(history) and any(
                item.get("type") == "tool_result" and item.get("tool_call_id") == row["tool_call_id"]
                for item in history[row["turn"]].get("content_items") or ()):
            kept.append(row)
    return kept


def _continued(json_path: str, history: Sequence[Mapping[str, Any]]) -> Any:
    """(routes, rows) of an earlier write of this same conversation at ``json_path`` (its history a prefix of
    ``history``): what a new writer of the trace carries on.  Read once by each writer when it starts (a
    plain call, a tool run), never to merge what another writer wrote meanwhile."""
    previous = _previous(json_path, history)
    if previous is None:
        return [], []
    before = len(previous["history"])
    routes = [dict(route) for route in previous.get("routes") or () if isinstance(route, dict)
              and isinstance(route.get("turn"), int) and not isinstance(route.get("turn"), bool)
              and 0 <= route["turn"] < before] if isinstance(previous.get("routes"), list) else []
    return routes, _rows_for(previous, history[:before])


def _write_logged(trace_id: str, model: str, history: Sequence[Mapping[str, Any]], config: Mapping[str, Any],
                  routes: Sequence[Mapping[str, Any]], rows: Sequence[Mapping[str, Any]], who: str) -> None:
    try:
        save_trace(trace_id, model, history, config, routes=routes, tool_calls=rows)
    except Exception as exc:  # disk full, permissions, a folder removed meanwhile, an unwritable value
        logger.error("%s: the trace %r was not written (%s: %s); %s", who, trace_id, type(exc).__name__, exc,
                     "the run goes on" if who == "tool run" else "the answer stands")


class TraceHook(AttemptHook):
    """The attempt-loop hook of a call with ``config["trace_id"]`` (one per call; a tool run's turns go
    without it: the run's ``RunTrace`` writes its trace): the answer is folded as its events pass and the
    trace written when the stop event passes, before the caller gets it (a caller may stop iterating
    there).  An earlier write of the same conversation is carried on (which route answered each turn, the
    tool runner's rows); ``stored``: how a stateful answer is kept (the dialect's ``stored_answer``), or None,
    for an answer of ``own`` (the client's route: a fallback's answer is kept as it came, as the history keeps it)."""

    wants_events = True

    def __init__(self, stored: Any = None, own: Optional[Mapping[str, Any]] = None) -> None:
        self.stored = stored
        self.own = own
        self.folding = None  # type: Any

    def on_call_start(self, call: Any) -> None:
        from .stream import Collector

        self.folding = Collector()

    def on_event(self, call: Any, event: Any) -> None:
        if self.folding is None:
            return
        self.folding.add(event)
        if event["event_type"] != "stop":
            return
        answer = self.folding.message()
        if self.stored is not None and (self.own is None or call.route is None or same_route(call.route, self.own)):
            answer = self.stored(answer)
        config = call.config or {}
        history = list(call.messages or []) + [answer]
        try:
            routes, rows = _continued(trace_paths(config["trace_id"])["json"], history[:-1])
        except Exception:  # (the write below says what is wrong)
            routes, rows = [], []
        if call.route is not None:  # which endpoint answered each turn (failover never hides it)
            routes.append(dict(call.route, turn=len(history) - 1))
        _write_logged(config["trace_id"], call.model, history, config, routes, rows, call.client_type)


class RunTrace(object):
    """The one writer of a tool run's trace (``client.run(..., config={"trace_id": ...})``), a ToolHook by its
    methods (agenthub.agent.hooks): it holds the routes and the tool rows in memory and writes the trace once
    per model turn (at its stop event) and once per turn's results (with their rows), the run's turns going
    without ``trace_id`` (no second writer).  A trace that earlier wrote this conversation (the run this one
    resumes) is carried on: read once, when the run starts."""

    writes_trace = True

    def __init__(self, trace_id: str) -> None:
        trace_paths(trace_id)  # a trace_id escaping the cache dir is refused before anything is sent
        self.trace_id = trace_id
        self.routes = []  # type: List[Dict[str, Any]]
        self.rows = []  # type: List[Dict[str, Any]]
        self._turn_rows = []  # type: List[Dict[str, Any]]

    def on_run_start(self, run: Any) -> None:
        try:
            self.routes, self.rows = _continued(trace_paths(self.trace_id)["json"], run.history())
        except Exception:
            self.routes, self.rows = [], []

    def on_turn(self, run: Any, message: Any) -> None:
        history = run.history()
        if run.route is not None:
            self.routes.append(dict(run.route, turn=len(history) - 1))
        self._write(run, history)

    def after_call(self, call: Any, result: Any, seconds: float) -> None:
        self._turn_rows.append({"tool_call_id": call["tool_call_id"], "name": call["name"], "seconds": seconds,
                                "is_error": bool(result.get("is_error"))})

    def on_results(self, run: Any, message: Any) -> None:
        history = run.history()
        rows, self._turn_rows = self._turn_rows, []
        if not rows:
            return
        fresh = {row["tool_call_id"] for row in rows}
        turn = len(history) - 1
        self.rows = [row for row in self.rows if not (row["turn"] == turn and row["tool_call_id"] in fresh)]
        self.rows.extend(_tool_call_row(dict(row, turn=turn)) for row in rows)
        self._write(run, history)

    def _write(self, run: Any, history: Sequence[Mapping[str, Any]]) -> None:
        _write_logged(self.trace_id, getattr(run.client, "model", ""), history, run.config, self.routes, self.rows,
                      "tool run")


def load_trace(path: str) -> Dict[str, Any]:
    """A saved trace with its bytes restored; ValueError when the file is not a trace."""
    try:
        with _open_regular(path) as handle:
            document = _json_loads(handle.read())
        if not isinstance(document, dict) or not isinstance(document.get("history"), list):
            raise ValueError("{} is not an agenthub trace (no history)".format(path))
        return from_jsonable(document)
    except RecursionError:  # (JSON nested deeper than the parser goes: no trace agenthub wrote)
        raise ValueError("{} is not an agenthub trace (nested too deep)".format(path)) from None


def list_traces(root: Optional[str] = None) -> List[Dict[str, Any]]:
    """Every trace under ``root``, newest first: {"trace_id", "model", "timestamp", "messages"}."""
    root = os.path.abspath(root or cache_dir())
    out = []
    for folder, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(files):
            if not name.endswith(".json"):
                continue
            path = os.path.join(folder, name)
            try:
                with _open_regular(path) as handle:
                    document = _json_loads(handle.read())
            except (OSError, ValueError, RecursionError):  # (not a trace: a JSON file nested past the parser's stack)
                continue
            if not isinstance(document, dict) or not isinstance(document.get("history"), list):
                continue
            trace_id = os.path.relpath(path, root)[:-len(".json")].replace(os.sep, "/")
            config = document.get("config") if isinstance(document.get("config"), dict) else {}
            out.append({
                "trace_id": trace_id,
                "model": document.get("model") or config.get("model"),
                "timestamp": document.get("timestamp"),
                "messages": len(document["history"]),
            })
    out.sort(key=lambda t: (-(t["timestamp"] or 0), t["trace_id"]))
    return out


def _open_regular(path: str) -> Any:
    """``path`` opened for reading as UTF-8 text; OSError when it is no regular file (a FIFO would block the
    read forever, a device never end it), found so without opening it."""
    if not stat.S_ISREG(os.stat(path).st_mode):
        raise OSError(errno.EINVAL, "{} is not a regular file".format(path))
    return open(path, encoding="utf-8")


def _write(path: str, text: str) -> None:
    """``text`` to ``path`` through a temporary file of this writer's own (mode 0600), renamed over it."""
    folder, name = os.path.split(path)
    fd, tmp = tempfile.mkstemp(prefix="." + name[:40] + ".", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _data_size(data: Any) -> int:
    if isinstance(data, (bytes, bytearray)):
        return len(data)
    if isinstance(data, dict) and isinstance(data.get("__bytes__"), str):
        return len(base64.b64decode(data["__bytes__"]))
    return 0


def _short_url(url: str) -> str:
    return url if not url.startswith("data:") else url.split(",", 1)[0] + ",... ({} characters)".format(len(url))


def render_text(history: Sequence[Mapping[str, Any]], config: Mapping[str, Any],
                tool_calls: Optional[Sequence[Mapping[str, Any]]] = None) -> str:
    """The readable form of a trace (what the .txt beside the .json holds); ``tool_calls``: the trace's
    rows (each result then shows how long its call ran)."""
    timed = {(row["turn"], row["tool_call_id"]): row for row in _readable_rows(list(tool_calls or ()))}
    lines = ["model: {}".format(config.get("model"))]
    for key, value in sorted(config.items()):
        if key in ("model", "tools", "system_prompt"):
            continue
        value = to_jsonable(value)
        lines.append("{}: {}".format(key, value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)))
    if config.get("system_prompt"):
        lines.append("system_prompt: " + str(config["system_prompt"]))
    for tool in config.get("tools") or ():
        described = " - " + tool["description"] if tool.get("description") else ""
        lines.append("tool: {}{}".format(tool.get("name"), described))
    totals = {}  # type: Dict[str, int]
    counted = False  # a usage was recorded (a bucket no turn reported stays unknown: None, as the viewer shows it)
    for i, message in enumerate(history):
        lines.append("")
        lines.append("[{}] {}:".format(i, str(message.get("role", "?")).upper()))
        for item in message.get("content_items") or ():
            kind = item.get("type")
            if kind in ("text", "thinking") and _server_item(item):
                lines.append("  Server tool: " + _server_item(item))  # (MCP calls a provider ran: not tool calls)
                if item.get(kind):
                    lines.append("  {}: {}".format(kind.capitalize(), item[kind]))
            elif kind == "text":
                lines.append("  Text: " + str(item.get("text", "")))
            elif kind == "thinking":
                lines.append("  Thinking: " + str(item.get("thinking", "")))
            elif kind == "image_url":
                lines.append("  Image URL: " + _short_url(str(item.get("image_url", ""))))
            elif kind in ("inline_data", "inline_thinking"):
                lines.append("  {}: {} ({} bytes)".format(
                    "Inline data" if kind == "inline_data" else "Inline thinking", item.get("mime_type"),
                    _data_size(item.get("data"))))
            elif kind == "tool_call":
                lines.append("  Tool Call: {}({}) id={}".format(
                    item.get("name"), json.dumps(item.get("arguments"), ensure_ascii=False), item.get("tool_call_id")))
            elif kind == "tool_result":
                images = item.get("images") or []
                row = timed.get((i, item.get("tool_call_id")))
                notes = (["error"] if item.get("is_error") else []) + (
                    ["{:.3f} s".format(row["seconds"])] if row is not None else [])
                lines.append("  Tool Result [{}]{}: {}{}".format(
                    item.get("tool_call_id"), " ({})".format(", ".join(notes)) if notes else "", item.get("text", ""),
                    " (+{} image{})".format(len(images), "" if len(images) == 1 else "s") if images else ""))
            elif kind == "embedding":
                lines.append("  Embedding: {} dimensions".format(len(item.get("embedding") or ())))
            elif kind == "compaction":  # opaque: what it summarised is not readable here
                lines.append("  Compaction: the context before it, compacted server-side ({})".format(
                    (item.get("fidelity") or {}).get("format") or "unknown"))
        usage = message.get("usage_metadata")
        if usage:
            counted = True
            lines.append("  Usage: " + ", ".join("{}={}".format(k, usage.get(k)) for k in USAGE_KEYS))
            for key in USAGE_KEYS:
                if isinstance(usage.get(key), int):
                    totals[key] = totals.get(key, 0) + usage[key]
        if message.get("finish_reason"):
            lines.append("  Finish reason: {}".format(message["finish_reason"]))
    if counted:
        lines.append("")
        lines.append("Total usage: " + ", ".join("{}={}".format(k, totals.get(k)) for k in USAGE_KEYS))
    return surrogates_shown("\n".join(lines) + "\n")  # a lone surrogate (a tool's text, a fidelity) as \udcff
