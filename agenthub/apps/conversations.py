"""The command line's conversation log: every ``agenthub chat`` turn in one SQLite file (standard library).

Where: ``$AGENTHUB_HOME/logs.db``; without AGENTHUB_HOME, the user's data directory
(``$XDG_DATA_HOME/agenthub`` or ``~/.local/share/agenthub``; ``~/Library/Application Support/agenthub``
on macOS; ``%APPDATA%\\agenthub`` on Windows).  Off with ``--no-log`` or ``AGENTHUB_LOG_PROMPTS=0``.

What: one row per conversation (id, model, client type, timestamps) and one per turn (the user message,
the collected answer, usage, finish reason, cost), messages as JSON with bytes as ``{"__bytes__": base64}``.
Never written: API keys, header values, base URLs (only their host is kept, without ``user:password@``),
``extra_headers`` and ``extra_body``.  The folder is created 0700 and the file 0600.

``agenthub chat -c`` continues the latest conversation; ``agenthub logs`` lists, shows and exports them.
"""

import json
import os
import sqlite3
import sys
import time
import uuid
from typing import Any, Dict, List, Mapping, Optional

from .._redact import shown_url
from .._jsondepth import loads as _json_loads

__all__ = ["home", "enabled", "Log", "DB_NAME", "export_markdown"]

DB_NAME = "logs.db"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS conversations (
    id TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    client_type TEXT,
    host TEXT,
    system TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS turns (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    conversation_id TEXT NOT NULL REFERENCES conversations(id),
    model TEXT NOT NULL,
    prompt TEXT NOT NULL,
    answer TEXT NOT NULL,
    usage TEXT,
    finish_reason TEXT,
    cost_usd REAL,
    created_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS turns_by_conversation ON turns(conversation_id, id);
"""


def home(environ: Optional[Mapping[str, str]] = None) -> str:
    """The folder of the conversation log (see the module doc)."""
    env = os.environ if environ is None else environ
    if env.get("AGENTHUB_HOME"):
        return env["AGENTHUB_HOME"]
    if sys.platform == "win32" and env.get("APPDATA"):
        return os.path.join(env["APPDATA"], "agenthub")
    if sys.platform == "darwin":
        return os.path.join(os.path.expanduser("~"), "Library", "Application Support", "agenthub")
    base = env.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return os.path.join(base, "agenthub")


_ON = ("", "1", "true", "yes", "on")
_OFF = ("0", "false", "no", "off")


def enabled(no_log: bool = False, environ: Optional[Mapping[str, str]] = None) -> bool:
    """Is the log on?  ``--no-log`` or ``AGENTHUB_LOG_PROMPTS=0`` (also ``false``, ``no``, ``off``) turn it off;
    so does a value that is neither on nor off (``disabled``: whoever set it meant off; ``unknown_setting``)."""
    env = os.environ if environ is None else environ
    value = (env.get("AGENTHUB_LOG_PROMPTS") or "").strip().lower()
    return not no_log and value in _ON


def unknown_setting(environ: Optional[Mapping[str, str]] = None) -> Optional[str]:
    """What stderr says once when ``AGENTHUB_LOG_PROMPTS`` is neither on nor off (the log is then off), else None."""
    env = os.environ if environ is None else environ
    raw = env.get("AGENTHUB_LOG_PROMPTS") or ""
    if raw.strip().lower() in _ON + _OFF:
        return None
    return ("agenthub: AGENTHUB_LOG_PROMPTS={!r} is neither on ({}) nor off ({}): this conversation is not "
            "logged".format(raw[:40], ", ".join(_ON[1:]), ", ".join(_OFF)))


def _dumps(value: Any) -> str:
    from ..types import to_jsonable

    from ..stream import surrogates_escaped

    return surrogates_escaped(json.dumps(to_jsonable(value), ensure_ascii=False, separators=(",", ":")))


def _loads(text: Optional[str]) -> Any:
    from ..types import from_jsonable

    return None if text is None else from_jsonable(_json_loads(text), strict=True)


def _now() -> int:
    return int(time.time() * 1000)


def _guarded(method: Any) -> Any:
    """A Log method whose sqlite3.DatabaseError (a corrupted or locked file) is the log's ConfigError."""
    import functools

    @functools.wraps(method)
    def guarded(self: "Log", *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except (sqlite3.DatabaseError, RecursionError) as exc:
            raise self._broken(exc) from None
    return guarded


class Log(object):
    """The SQLite conversation log.  ``Log(path)`` opens (or creates) it; use as a context manager."""

    def __init__(self, path: Optional[str] = None) -> None:
        if path is None:
            folder = home()
            os.makedirs(folder, mode=0o700, exist_ok=True)
            path = os.path.join(folder, DB_NAME)
        self.path = path
        self._db = sqlite3.connect(path)
        try:
            os.chmod(path, 0o600)  # every open: a log copied in (or from an older version) with 0644 is tightened
        except OSError:  # pragma: no cover - a file system without modes, or a file of another user
            pass
        try:
            self._db.executescript(_SCHEMA)
        except sqlite3.DatabaseError as exc:
            self._db.close()
            raise self._broken(exc) from None

    def _broken(self, exc: BaseException) -> Exception:
        """The ConfigError for a log that cannot be used: its path and what was wrong (never a row's content)."""
        from ..errors import ConfigError

        if isinstance(exc, sqlite3.DatabaseError):
            what = str(exc)[:200]
        else:
            what = "a logged row is malformed ({})".format(type(exc).__name__)
        return ConfigError("the conversation log {} cannot be used: {} (move it aside to start a new log, or "
                           "--no-log)".format(self.path, what))

    def _read(self, text: Optional[str], kind: type = dict, optional: bool = False) -> Any:
        """A logged JSON column decoded; anything but a ``kind`` (or None when ``optional``) is a ConfigError."""
        try:
            value = _loads(text)
        except (ValueError, TypeError, RecursionError, AttributeError, KeyError) as exc:
            raise self._broken(exc) from None
        if not isinstance(value, kind) and not (optional and value is None):
            raise self._broken(TypeError())
        return value

    def __enter__(self) -> "Log":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        self._db.close()

    @_guarded
    def start(self, model: str, client_type: Optional[str] = None, host: Optional[str] = None,
              system: Optional[str] = None, conversation: Optional[str] = None) -> str:
        """A new conversation (``conversation``: its id, when the caller makes one); returns its id."""
        conversation = conversation or "c_" + uuid.uuid4().hex[:20]
        now = self._tick()
        with self._db:
            self._db.execute("INSERT INTO conversations VALUES (?, ?, ?, ?, ?, ?, ?)",
                             (conversation, model, client_type, host, system, now, now))
        return conversation

    @_guarded
    def add_turn(self, conversation: str, model: str, prompt: Mapping[str, Any], answer: Mapping[str, Any],
                 cost_usd: Optional[float] = None) -> None:
        """One completed turn: the user message and the collected assistant message."""
        now = self._tick()
        with self._db:
            self._db.execute(
                "INSERT INTO turns (conversation_id, model, prompt, answer, usage, finish_reason, cost_usd, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (conversation, model, _dumps(prompt), _dumps(answer), _dumps(answer.get("usage_metadata")),
                 answer.get("finish_reason"), cost_usd, now))
            self._db.execute("UPDATE conversations SET updated_at = ? WHERE id = ?", (now, conversation))

    def _tick(self) -> int:
        """Now in Unix ms, and always later than every stamp in the log: two writes in one millisecond
        keep their order (``latest`` is the conversation touched last)."""
        last = self._db.execute("SELECT MAX(updated_at) FROM conversations").fetchone()[0]
        return max(_now(), (last or 0) + 1)

    @_guarded
    def latest(self) -> Optional[str]:
        """The id of the conversation that had the latest turn (None: the log is empty)."""
        row = self._db.execute("SELECT id FROM conversations ORDER BY updated_at DESC, rowid DESC LIMIT 1").fetchone()
        return row[0] if row else None

    @_guarded
    def conversation(self, conversation: str) -> Optional[Dict[str, Any]]:
        row = self._db.execute("SELECT id, model, client_type, host, system, created_at, updated_at FROM conversations"
                               " WHERE id = ?", (conversation,)).fetchone()
        if row is None:
            return None
        keys = ("id", "model", "client_type", "host", "system", "created_at", "updated_at")
        found = dict(zip(keys, row))
        found["turns"] = self._db.execute("SELECT COUNT(*) FROM turns WHERE conversation_id = ?",
                                          (conversation,)).fetchone()[0]
        return found

    @_guarded
    def history(self, conversation: str) -> List[Dict[str, Any]]:
        """The conversation's messages in order (user, assistant, ...), as the client's history holds them."""
        messages = []  # type: List[Dict[str, Any]]
        for prompt, answer in self._db.execute(
                "SELECT prompt, answer FROM turns WHERE conversation_id = ? ORDER BY id", (conversation,)):
            messages.append(self._read(prompt))
            messages.append(self._read(answer))
        return messages

    @_guarded
    def turns(self, conversation: str) -> List[Dict[str, Any]]:
        keys = ("model", "prompt", "answer", "usage_metadata", "finish_reason", "cost_usd", "created_at")
        out = []
        for row in self._db.execute("SELECT model, prompt, answer, usage, finish_reason, cost_usd, created_at "
                                    "FROM turns WHERE conversation_id = ? ORDER BY id", (conversation,)):
            turn = dict(zip(keys, row))
            for key in ("prompt", "answer", "usage_metadata"):
                turn[key] = self._read(turn[key], optional=key == "usage_metadata")
            out.append(turn)
        return out

    @_guarded
    def list(self, limit: int = 20) -> List[Dict[str, Any]]:
        """The latest conversations, newest first, each with its turn count and first prompt's text."""
        rows = self._db.execute(
            "SELECT c.id, c.model, c.updated_at, COUNT(t.id), "
            "(SELECT prompt FROM turns WHERE conversation_id = c.id ORDER BY id LIMIT 1) "
            "FROM conversations c LEFT JOIN turns t ON t.conversation_id = c.id "
            "GROUP BY c.id ORDER BY c.updated_at DESC, c.rowid DESC LIMIT ?",
            (min(max(1, limit), 2 ** 63 - 1),)).fetchall()  # (SQLite's LIMIT is a 64-bit int: more is all)
        out = []
        for conversation, model, updated, count, first in rows:
            out.append({"id": conversation, "model": model, "updated_at": updated, "turns": count,
                        "first_prompt": _text_of(self._read(first), text_only=True) if first else ""})
        return out


def _text_of(message: Optional[Mapping[str, Any]], text_only: bool = False) -> str:
    """A message's text for ``logs show`` and the Markdown export, with what is not text named in its place
    (``[image/png, 5 bytes]``, ``[image URL]`` with its query values as ***, ``[tool call NAME(ARGUMENTS)]``;
    not with ``text_only``: the list's first prompt); thinking is left out."""
    if not message:
        return ""
    parts = []  # type: List[str]
    for item in message.get("content_items") or ():
        if not isinstance(item, Mapping):
            continue
        kind = item.get("type")
        if kind in ("text", "tool_result") and item.get("text"):
            parts.append(str(item["text"]))
        elif text_only:
            continue
        elif kind == "inline_data":
            data = item.get("data")
            parts.append("[{}, {} bytes]".format(item.get("mime_type") or "data",
                                                 len(data) if isinstance(data, (bytes, str)) else "?"))
        elif kind == "image_url":
            url = str(item.get("image_url") or "")
            parts.append("[image {}]".format(url.split(",", 1)[0] if url.startswith("data:") else shown_url(url)[:200]))
        elif kind == "tool_call":
            arguments = json.dumps(item.get("arguments"), ensure_ascii=False, default=str)
            parts.append("[tool call {}({})]".format(item.get("name"), arguments if len(arguments) <= 200
                                                     else arguments[:200] + "..."))
    return " ".join(parts)


def export_markdown(log: Log, conversation: str) -> str:
    """A conversation as Markdown (``agenthub logs export ID --markdown``)."""
    found = log.conversation(conversation)
    if found is None:
        return ""
    lines = ["# Conversation {} ({})".format(conversation, found["model"]), ""]
    if found.get("system"):
        lines += ["System: " + found["system"], ""]
    for turn in log.turns(conversation):
        lines += ["## User", "", _text_of(turn["prompt"]), "", "## Assistant ({})".format(turn["model"]), "",
                  _text_of(turn["answer"]), ""]
    return "\n".join(lines)


def _when(ms: int) -> str:
    try:
        return time.strftime("%Y-%m-%d %H:%M", time.localtime(ms / 1000.0))
    except (OverflowError, ValueError, OSError, TypeError):  # a stamp no clock shows (a hostile row)
        return "?"


def run_logs(args: Any, out: Any) -> int:
    """``agenthub logs [list|show ID|export ID [--markdown]|path]``."""
    from ..errors import ConfigError

    action = getattr(args, "logs_command", None) or "list"
    path = os.path.join(home(), DB_NAME)
    if action == "path":
        out.write(path + "\n")
        return 0
    if not os.path.exists(path):
        if action == "list":
            out.write("no conversations logged yet ({})\n".format(path))
            return 0
        raise ConfigError("no conversation log at {}".format(path))
    from .._controls import json_for
    from .terminal import is_terminal, printable

    shown = printable if is_terminal(out) else (lambda text: text)  # (a terminal obeys no logged escape)
    with Log(path) as log:
        if action == "list":
            rows = log.list(getattr(args, "count", 20))
            if getattr(args, "json", False):
                out.write(json_for(out)(json.dumps(rows, indent=2, ensure_ascii=False)) + "\n")
                return 0
            for row in rows:
                out.write(shown("{}  {}  {:<28} {:>3} turn(s)  {}\n".format(
                    row["id"], _when(row["updated_at"]), row["model"], row["turns"],
                    " ".join(row["first_prompt"].split())[:60])))
            return 0
        conversation = getattr(args, "id", None) or log.latest()
        if conversation is None or log.conversation(conversation) is None:
            raise ConfigError("no logged conversation {!r} (`agenthub logs` lists them)".format(conversation))
        if action == "export":
            if getattr(args, "markdown", False):
                out.write(shown(export_markdown(log, conversation)) + "\n")
            else:
                found = log.conversation(conversation)
                found["messages"] = log.history(conversation)
                out.write(json_for(out)(_dumps(found)) + "\n")
            return 0
        for turn in log.turns(conversation):  # show
            out.write(shown("[{}] you: {}\n".format(_when(turn["created_at"]), _text_of(turn["prompt"]))))
            out.write(shown("[{}] {}: {}\n".format(_when(turn["created_at"]), turn["model"],
                                                   _text_of(turn["answer"]))))
        return 0
