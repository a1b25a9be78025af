"""The job file: JSON Lines in, JSON Lines out (pure data handling plus the two files).

Input line::

    {"id": "row-1", "model": "gpt-4.1-mini", "messages": [UniMessage, ...], "config": UniConfig,
     "client_type": "openai-chat", "base_url": "https://...",       # these two optional
     "output_schema": {JSON Schema}}                                # optional: typed output (issue 40)

Output line (one per finished row, in the order rows finish)::

    {"id", "model", "message", "usage_metadata", "finish_reason", "cost_usd", "error", "attempts",
     "backend", "finished_at"}

``error`` is null or ``{"type", "message", "status"}``.  A row with an output type (its ``output_schema``, or
``jobs.run(..., output=...)``) also has ``"value"`` (the validated JSON) when it held; when the re-asks ran
out its error is an ``OutputValidationError`` with ``"problems"`` (each attempt's) and the last candidate
(``"candidate_text"``, ``"candidate_json"``) beside its three fields.  Bytes (inline images, audio) are stored as
``{"__bytes__": "<base64>"}`` both ways.  Nothing here holds a key: a job line has no place for one
(an ``api_key`` field is refused), and error messages are the library's own, already scrubbed.
"""

import json
import math
import logging
import os
import stat
import tempfile
import threading
import time
import weakref
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterable, Iterator, List, Mapping, Optional, Set, Tuple

from ..errors import AgentHubError, ConfigError, OutputValidationError, StreamProtocolError
from ..stream import surrogates_escaped
from ..types import from_jsonable, to_jsonable  # the {"__bytes__"} codec
from ..validate import check_config, check_messages
from .._jsondepth import loads as _json_loads

__all__ = ["JobRow", "JobFile", "read_jobs", "iter_rows", "IdIndex", "OutputLock", "replace_durably", "file_mentions", "mark_finished", "parse_line", "output_row", "error_row", "finished_ids",
           "read_output", "OutputWriter", "INPUT_KEYS", "OUTPUT_KEYS", "dumps_row"]

log = logging.getLogger("agenthub")

INPUT_KEYS = ("id", "model", "messages", "config", "client_type", "base_url", "output_schema")
OUTPUT_KEYS = ("id", "model", "message", "usage_metadata", "finish_reason", "cost_usd", "error", "attempts",
               "backend", "finished_at")
_MAX_SHOWN = 20  # problems listed in one ConfigError before "... and N more"


@dataclass
class JobRow:
    """One input line, checked.  ``messages`` and ``config`` hold bytes again (not the JSON codec)."""

    id: str
    model: str
    messages: List[Dict[str, Any]]
    config: Dict[str, Any] = field(default_factory=dict)
    client_type: Optional[str] = None
    base_url: Optional[str] = None
    line: int = 0  # 1-based line number in the input file
    #: the row's own output type (a JSON Schema dict; typed output, docs/typed-output.md), None when it has none
    output_schema: Optional[Dict[str, Any]] = None
    #: how many messages the row holds, where ``messages`` was not kept (a batch's fetch); None: ``len(messages)``
    inputs: Optional[int] = None

    def to_json(self) -> Dict[str, Any]:
        """The input line again (JSON-ready: bytes as {"__bytes__"})."""
        out = {"id": self.id, "model": self.model, "messages": to_jsonable(self.messages),
               "config": to_jsonable(self.config)}  # type: Dict[str, Any]
        if self.client_type is not None:
            out["client_type"] = self.client_type
        if self.base_url is not None:
            out["base_url"] = self.base_url
        if self.output_schema is not None:
            out["output_schema"] = self.output_schema
        return out


@dataclass
class JobFile:
    """``rows``: the valid lines; ``invalid``: (line number, the error row to write) per invalid line
    (only when read with ``skip_invalid=True``; otherwise an invalid line is a ConfigError)."""

    rows: List[JobRow]
    invalid: List[Tuple[int, Dict[str, Any]]] = field(default_factory=list)
    path: Optional[str] = None
    #: how many valid rows the file has (``rows`` is empty when read with ``keep_rows=False``)
    count: int = 0
    #: (model, client_type, base_url) -> the first line numbers (at most 6) of the valid rows sent there
    routes: Dict[Tuple[str, Optional[str], Optional[str]], List[int]] = field(default_factory=dict)
    #: id -> line number, for every line with a usable id (valid or not): an IdIndex, on disk
    ids: Any = None
    #: the routes in the order they were met (an IdIndex stores a route as its position here)
    route_keys: List[Tuple[str, Optional[str], Optional[str]]] = field(default_factory=list)
    #: read with ``keep_head``: the valid rows of the file's first lines, as checked (their bytes at most
    #: ``keep_head``), and where the lines after them start: (byte offset, the number of the last line kept)
    head: List[JobRow] = field(default_factory=list)
    head_end: Tuple[int, int] = (0, 0)
    #: the bytes of the file that were checked (None: not known); the lines past them (written since) are not the job's
    size: Optional[int] = None

    def __len__(self) -> int:
        return self.count + len(self.invalid)


def parse_line(obj: Any, line: int) -> JobRow:
    """A JobRow from one decoded input line; ConfigError (without the line number) when it is not valid."""
    rid, model, messages, config, schema = _checked(obj, False)
    return JobRow(id=rid, model=model, messages=messages, config=config, client_type=obj.get("client_type"),
                  base_url=obj.get("base_url"), line=line, output_schema=schema)


_INPUT_KEYS = frozenset(INPUT_KEYS)


def _plain(raw: bytes) -> bool:
    """Whether a line's decoded values hold no ``{"__bytes__": ...}``: the word is not in it, nor a ``\\u``
    escape that could spell it (so ``from_jsonable`` would give them back unchanged)."""
    return b"__bytes__" not in raw and (b"\\" not in raw or b"\\u" not in raw)  # (a lone byte is found fastest)


def _checked(obj: Any, plain: bool, passed: Optional[Set[Any]] = None) -> Tuple[str, str, Any, Dict[str, Any], Any]:
    """``parse_line``'s checks: (id, model, messages, config, output_schema), bytes decoded unless ``plain``
    (``_plain``: the decoded values are the row's as they are).  ``passed``: the configs of flat values that
    passed ``check_config`` on earlier lines of this read (``_config_key``): an equal one is not checked again."""
    if not isinstance(obj, dict):
        raise ConfigError("a job line must be a JSON object, got {}".format(type(obj).__name__))
    if not _INPUT_KEYS.issuperset(obj):
        unknown = sorted(str(k) for k in obj if k not in INPUT_KEYS)
        hint = " (keys come from the environment, never from a job file)" if any(
            "key" in k.lower() for k in unknown) else ""
        raise ConfigError("unknown key(s) {}; a job line has {}{}".format(unknown, ", ".join(INPUT_KEYS), hint))
    get = obj.get
    rid = get("id")
    if not isinstance(rid, str) or not rid:
        raise ConfigError("'id' must be a non-empty string (got {})".format(_kind(rid)))
    if not rid.isascii() and not _usable_id(rid):  # (an ASCII id is valid Unicode: no copy encoded to tell)
        raise ConfigError("'id' is not valid Unicode (it holds a lone surrogate)")
    model = get("model")
    if not isinstance(model, str) or not model:
        raise ConfigError("'model' must be a non-empty string (got {})".format(_kind(model)))
    value = get("client_type")
    if value is not None and (not isinstance(value, str) or not value):
        raise ConfigError("'client_type' must be a non-empty string when given")
    value = get("base_url")
    if value is not None and (not isinstance(value, str) or not value):
        raise ConfigError("'base_url' must be a non-empty string when given")
    messages = get("messages")
    if not plain:
        messages = _decoded(messages, "messages")
    check_messages(messages)
    config = get("config")
    if config is None:
        config = {}
    elif not plain:
        config = _decoded(config, "config")
    if passed is None:
        check_config(config)
    else:
        key = _config_key(config)
        if key is None:
            check_config(config)
        elif key not in passed:
            check_config(config)
            if len(passed) >= 256:  # (memory stays flat, whatever the file)
                passed.clear()
            passed.add(key)
    schema = obj.get("output_schema")
    if schema is not None:
        check_output_schema(schema)
        if config.get("response_format") is not None:
            raise ConfigError("'output_schema' and config['response_format'] both shape the answer: give one")
        from ..output.parse import check_no_tools

        check_no_tools(config)
    return rid, model, messages, config, schema


def _decoded(value: Any, name: str) -> Any:
    """``from_jsonable`` of a job line's ``name``: a ``{"__bytes__": ...}`` payload that is not base64 is the line's
    ConfigError (Python's lenient decoding dropped the characters outside the alphabet and sent what was left,
    a data: URL's prefix decoded as image bytes, or raised binascii.Error out of the check)."""
    try:
        return from_jsonable(value, strict=True)
    except ValueError:  # (binascii.Error)
        raise ConfigError("{!r} holds a {{\"__bytes__\": ...}} value that is not base64 (the standard alphabet, "
                          "padded, without a data: URL's prefix)".format(name)) from None


def _config_key(config: Any) -> Any:
    """A config whose values are all flat (str, int, float, bool, None, as a job line decodes them) as a hashable
    key telling each value's type too (``1``, ``1.0`` and ``True`` differ), so ``check_config``, a function of
    the values alone, passes an equal one as it passed this one; None for any other config (checked each time)."""
    if type(config) is not dict:
        return None
    values = tuple(config.values())
    types = tuple(map(type, values))
    if not _FLAT.issuperset(types):
        return None
    if str in types:
        for value in values:
            if type(value) is str and len(value) > 4096:  # (a long prompt is not kept)
                return None
    return tuple(config), values, types


_FLAT = frozenset((str, int, float, bool, type(None)))


def check_output_schema(schema: Any) -> None:
    """ConfigError (naming the field) unless ``schema`` is a JSON Schema the typed output takes."""
    if not isinstance(schema, dict):
        raise ConfigError("'output_schema' must be a JSON Schema object (got {})".format(_kind(schema)))
    from ..typeschema import compile as compile_type
    from ..validate import check_json

    check_json(schema, "'output_schema'")  # (first: a schema nested past MAX_DEPTH, checked without recursion)

    try:
        compile_type(schema)
    except ConfigError as exc:
        raise ConfigError("'output_schema': {}".format(exc)) from None


def _kind(value: Any) -> str:
    return "nothing" if value is None else type(value).__name__ if not isinstance(value, str) else repr(value[:40])


def _invalid_id(obj: Any, line: int) -> str:
    rid = obj.get("id") if isinstance(obj, dict) else None
    return rid if _usable_id(rid) else "line-{}".format(line)


def _stand_in(seen: "IdIndex", row: Dict[str, Any], number: int) -> None:
    """Record the id of line ``number``'s error row (``skip_invalid``).  A usable id of its own was recorded as the
    line was read; a ``line-N`` stand-in some row of the file has as its id (that row was marked answered by this
    error row, and never sent) becomes ``line-N-2`` (``-3``, ...): the first one no row has, the same on every read
    of the file."""
    rid = row["id"]
    suffix = 1
    while True:
        first = seen.add(rid, number)
        if first is None or first == number:
            row["id"] = rid
            return
        suffix += 1
        rid = "line-{}-{}".format(number, suffix)


def _usable_id(rid: Any) -> bool:
    """A non-empty string that is valid Unicode (JSON lets a lone surrogate through: ``"\\ud800"``)."""
    if not isinstance(rid, str) or not rid:
        return False
    try:
        rid.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


#: the longest job line read (a longer one is an invalid line: never held in memory whole)
MAX_JOB_LINE_BYTES = 64 * 1024 * 1024
_READ_PIECE = 1 << 20


#: UTF-8's byte order mark, read past at the start of a job file
_BOM = b"\xef\xbb\xbf"


def _encoding(number: int) -> str:
    """How line ``number`` of a job file decodes: UTF-8, a byte order mark at the file's start read past (an
    editor's "UTF-8 with BOM")."""
    return "utf-8-sig" if number == 1 else "utf-8"


def _bounded_lines(handle: Any, number: int = 0) -> Iterator[Tuple[int, Optional[bytes]]]:
    """(line number, the line's bytes) for each line of ``handle`` (``number``: the lines before its position);
    None for a line above MAX_JOB_LINE_BYTES (read past in pieces, never kept)."""
    limit = MAX_JOB_LINE_BYTES
    while True:
        raw = handle.readline(limit + 1)
        if not raw:
            return
        number += 1
        if len(raw) > limit and not (len(raw) == limit + 1 and raw.endswith(b"\n")):
            while not raw.endswith(b"\n"):
                raw = handle.readline(_READ_PIECE)
                if not raw:
                    break
            yield number, None
            continue
        yield number, raw


def file_mentions(path: str, word: bytes) -> bool:
    """Whether ``word`` occurs in the file (read in pieces: memory stays flat whatever its lines)."""
    tail = b""
    with open(path, "rb") as handle:
        for piece in iter(lambda: handle.read(_READ_PIECE), b""):
            if word in tail + piece[:len(word)] or word in piece:
                return True
            tail = piece[-len(word):]
    return False


def read_jobs(path: str, *, skip_invalid: bool = False, keep_rows: bool = True, keep_head: int = 0) -> JobFile:
    """Read and check a whole job file before anything is sent.

    Every problem is listed in one ConfigError (line numbers 1-based): a duplicate id names both
    lines (always refused), an invalid line says why (refused unless ``skip_invalid``; then it
    becomes an error row in ``JobFile.invalid``, id ``line-N`` when it has no usable id: ``line-N-2`` when a
    row of the file has that id).
    Blank lines are skipped.  ``keep_rows=False`` checks the file without keeping its rows (memory
    stays flat in their number: ``iter_rows`` reads them again, lazily); ``keep_head``: with it, the rows of
    the first lines up to that many bytes are kept as checked (``JobFile.head``: ``rows_from(..., start=
    JobFile.head_end)`` reads the lines after them), so a small job file is decoded once.
    """
    rows = []  # type: List[JobRow]
    invalid = []  # type: List[Tuple[int, Dict[str, Any]]]
    problems = []  # type: List[str]
    seen = IdIndex()  # id -> first line, on disk: memory stays flat in the number of rows
    count = 0
    routes = {}  # type: Dict[Tuple[str, Optional[str], Optional[str]], List[int]]
    route_ids = {}  # type: Dict[Tuple[str, Optional[str], Optional[str]], int]
    # the lines read and checked, not yet settled: their ids go into the index a batch at a time (one statement),
    # then each line is taken in order, as if its id had been added alone
    pending = []  # type: List[Tuple[int, Any, Optional[ConfigError], Optional[str], Optional[int]]]
    adds = []  # type: List[Tuple[Any, int, Optional[int]]]  # (id, line, route) of the pending lines with a usable id
    passed = set()  # type: Set[Any]  # the flat configs that passed (rows of one job mostly share theirs)
    head = []  # type: List[JobRow]
    head_bytes = 0  # the bytes of the lines read while the head is kept (-1: no longer kept)
    head_end = (0, 0)

    def refuse(number: int, what: Any, error: ConfigError) -> None:
        if skip_invalid:
            stub = JobRow(id=what[0], model=what[1], messages=[], line=number)
            invalid.append((number, error_row(stub, ConfigError("line {}: {}".format(number, error)),
                                              attempts=0, backend="none")))
        else:
            problems.append("line {}: {}".format(number, error))

    def settle() -> None:
        nonlocal count
        firsts = seen.add_many(adds)
        if not any(firsts):  # (no id seen before: each line is as it was read)
            for number, what, error, rid, route in pending:
                if error is None:
                    count += 1
                    lines = routes.get(what)
                    if lines is None:
                        routes[what] = [number]
                    elif len(lines) < 6:
                        lines.append(number)
                else:
                    refuse(number, what, error)
            del pending[:]
            del adds[:]
            return
        found = iter(firsts)
        for number, what, error, rid, route in pending:  # what: the route (valid) or (id, model) for its error row
            if rid is not None:
                first = next(found)
                if first is not None:
                    problems.append("line {}: duplicate id {!r} (first on line {})".format(number, rid[:80], first))
                    continue
            if error is None:
                count += 1
                lines = routes.setdefault(what, [])
                if len(lines) < 6:
                    lines.append(number)
                continue
            refuse(number, what, error)
        del adds[:]
        del pending[:]

    try:
        handle = open(path, "rb")
    except OSError as exc:
        seen.close()
        raise ConfigError("cannot read the job file {}: {}".format(path, exc.strerror or exc)) from None
    if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):  # (a pipe, <(zcat ...), a device: read once only)
        handle.close()
        seen.close()
        raise ConfigError("the job file {} is not a regular file (a pipe or a device): it is read more than once "
                          "(checked whole first, then sent row by row, and again to resume); write it to a file "
                          "first".format(path))
    with handle:
        for number, raw in _bounded_lines(handle):
            obj = None  # type: Any
            keep = False
            if head_bytes >= 0:
                if raw is not None and head_bytes + len(raw) <= keep_head:
                    head_bytes += len(raw)
                    head_end = (head_bytes, number)
                    keep = True
                else:
                    head_bytes = -1  # (the head ends at the first line that does not fit)
            if raw is None:
                error = ConfigError("longer than {} bytes".format(MAX_JOB_LINE_BYTES))  # type: Optional[ConfigError]
            elif raw.isspace() or (number == 1 and raw.startswith(_BOM) and (len(raw) == 3 or raw[3:].isspace())):
                continue  # (a blank line, the first one too behind a byte order mark: not copied to be stripped)
            else:
                try:
                    obj = _json_loads(raw.decode(_encoding(number)))
                except (UnicodeDecodeError, ValueError, RecursionError) as exc:
                    reason = "not valid UTF-8" if isinstance(exc, UnicodeDecodeError) else "not valid JSON ({})".format(
                        exc) if isinstance(exc, ValueError) else "nested too deeply to be read as JSON"
                    error = ConfigError(reason)
                else:
                    error = None
            if error is None:
                try:
                    rid, model, messages, config, schema = _checked(obj, _plain(raw), passed)  # type: ignore[arg-type]
                except ConfigError as exc:
                    error = exc
                else:
                    key = (model, obj.get("client_type"), obj.get("base_url"))
                    route = route_ids.setdefault(key, len(route_ids))
                    if keep_rows or keep:  # (a duplicate id fails the whole file: then the rows kept are not used)
                        (rows if keep_rows else head).append(JobRow(rid, model, messages, config, key[1], key[2],
                                                                    number, schema))
                    pending.append((number, key, None, rid, route))
                    adds.append((rid, number, route))
            if error is not None:  # (only what its error row needs is kept: the line itself may be huge)
                given = obj.get("id") if isinstance(obj, dict) else None
                what = (_invalid_id(obj, number), _model_of(obj)) if skip_invalid else None
                if _usable_id(given):
                    pending.append((number, what, error, given, None))
                    adds.append((given, number, None))
                else:
                    pending.append((number, what, error, None, None))
            if len(pending) >= 512:
                settle()
        settle()
        size = handle.tell()
    duplicates = [p for p in problems if "duplicate id" in p]
    if problems:
        seen.close()
        shown = problems[:_MAX_SHOWN]
        more = "\n  ... and {} more".format(len(problems) - _MAX_SHOWN) if len(problems) > _MAX_SHOWN else ""
        tail = "" if skip_invalid or len(duplicates) == len(problems) else \
            "\n(nothing was sent; skip_invalid=True / --skip-invalid writes an error row for each invalid line)"
        raise ConfigError("the job file {} has {} problem(s):\n  {}{}{}".format(
            path, len(problems), "\n  ".join(shown), more, tail), lines=_lines(problems))
    for number, row in invalid:
        _stand_in(seen, row, number)
    seen.seal()
    return JobFile(rows=rows, invalid=invalid, path=path, count=count, routes=routes, ids=seen,
                   route_keys=list(route_ids), head=head, head_end=head_end, size=size)


def iter_rows(path: str, *, check: bool = True, stop: Optional[int] = None) -> Iterator[JobRow]:
    """The valid rows of a job file, read lazily (check it with ``read_jobs`` first: invalid and blank
    lines are passed over here without a word).  ``check=False`` skips checking each row again (the
    file was checked by ``read_jobs`` a moment ago; the client checks messages and config anyway).
    ``stop``: the bytes checked (``JobFile.size``): a line ending past them was written since, and is not read."""
    yield from rows_from(path, 1, check=check, stop=stop)


def rows_from(path: str, first_line: int, *, check: bool = True, start: Tuple[int, int] = (0, 0),
              stop: Optional[int] = None) -> Iterator[JobRow]:
    """``iter_rows`` from line ``first_line`` on: the lines before it are read past, not decoded (a resumed
    run starts at the first line still to do).  ``start``: (byte offset, its line's number less one) where
    reading begins (``JobFile.head_end``: the lines before it are the head's); ``stop``: as ``iter_rows``'s."""
    with open(path, "rb") as handle:
        if start[0]:
            handle.seek(start[0])
        for number, raw in _bounded_lines(handle, start[1]):
            if stop is not None and handle.tell() > stop:  # (appended, or completed, after the check: unchecked)
                past = handle.tell() - stop  # (only its line end written since: the line checked, whole)
                if raw is None or past > len(raw) or raw[len(raw) - past:].strip(b"\r\n") or not raw[:len(raw) - past]:
                    return
                stop = -1  # (the lines after it are all past the check)
            if number < first_line or raw is None or raw.isspace():
                continue
            try:
                obj = _json_loads(raw.decode(_encoding(number)))
                if check:
                    yield parse_line(obj, number)
                    continue
                row = _fast_row(obj, number, _plain(raw))
            except (UnicodeDecodeError, ValueError, RecursionError):  # ConfigError is a ValueError
                continue
            if row is not None:
                yield row


def _fast_row(obj: Any, number: int, plain: bool = False) -> Optional[JobRow]:
    """A JobRow from a line ``read_jobs`` found valid (None for one it did not: the shape tells).  ``plain``:
    the line holds no ``__bytes__``, so its freshly decoded values are the row's as they are."""
    if not isinstance(obj, dict) or not isinstance(obj.get("id"), str) or not isinstance(obj.get("model"), str) \
            or not isinstance(obj.get("messages"), list) or not obj["id"] or not obj["model"] \
            or not _usable_id(obj["id"]):
        return None
    config = obj.get("config")
    schema = obj.get("output_schema")
    schema = schema if isinstance(schema, dict) else None
    if plain:
        return JobRow(id=obj["id"], model=obj["model"], messages=obj["messages"],
                      config=config if isinstance(config, dict) else {},
                      client_type=obj.get("client_type"), base_url=obj.get("base_url"), line=number,
                      output_schema=schema)
    return JobRow(id=obj["id"], model=obj["model"], messages=from_jsonable(obj["messages"], True),
                  config=from_jsonable(config, True) if isinstance(config, dict) else {},
                  client_type=obj.get("client_type"), base_url=obj.get("base_url"), line=number,
                  output_schema=schema)


def _lines(problems: Iterable[str]) -> List[int]:
    return [int(p.split(":", 1)[0].split()[1]) for p in problems]


def _model_of(obj: Any) -> str:
    model = obj.get("model") if isinstance(obj, dict) else None
    return model if isinstance(model, str) else ""


class IdIndex(object):
    """id -> (line number, route, done) kept on disk, in a temporary SQLite file, so that memory stays
    flat in the number of rows (SQLite's page cache is bounded at 2 MB).  Thread-safe.  It supports
    ``rid in index``, ``index[rid]`` (the line), ``get``, ``len``; the file is removed by ``close``
    (or when the index is collected)."""

    def __init__(self) -> None:
        import sqlite3

        self._dir = tempfile.mkdtemp(prefix="agenthub-ids-")
        self._db = sqlite3.connect(os.path.join(self._dir, "ids.sqlite"), check_same_thread=False,
                                   isolation_level=None)
        for pragma in ("journal_mode=OFF", "synchronous=OFF", "cache_size=-2048", "temp_store=FILE"):
            self._db.execute("PRAGMA " + pragma)
        self._db.execute("CREATE TABLE ids (id TEXT PRIMARY KEY, line INTEGER NOT NULL, route INTEGER, "
                         "done INTEGER NOT NULL DEFAULT 0) WITHOUT ROWID")
        self._db.execute("BEGIN")
        self._lock = threading.Lock()
        self._count = 0
        self._closer = weakref.finalize(self, IdIndex._remove, self._db, self._dir)

    @staticmethod
    def _remove(db: Any, folder: str) -> None:
        try:
            db.close()
        finally:
            for name in os.listdir(folder):
                os.unlink(os.path.join(folder, name))
            os.rmdir(folder)

    def close(self) -> None:
        with self._lock:
            self._closer()

    def add(self, rid: str, line: int, route: Optional[int] = None) -> Optional[int]:
        """Record ``rid``; the line it was first recorded on when it was already there (else None)."""
        with self._lock:
            cursor = self._db.execute("INSERT OR IGNORE INTO ids (id, line, route) VALUES (?, ?, ?)",
                                      (rid, line, route))
            if cursor.rowcount:
                self._count += 1
                return None
            return self._db.execute("SELECT line FROM ids WHERE id = ?", (rid,)).fetchone()[0]

    def add_many(self, entries: List[Tuple[str, int, Optional[int]]]) -> List[Optional[int]]:
        """``add`` for each ``(id, line, route)`` of ``entries``, in order, in one statement: for each, None when
        it was new, else the line its id was first recorded on (read back only when one was not new)."""
        with self._lock:
            db = self._db
            before = db.total_changes
            db.executemany("INSERT OR IGNORE INTO ids (id, line, route) VALUES (?, ?, ?)", entries)
            added = db.total_changes - before
            self._count += added
            if added == len(entries):
                return [None] * len(entries)
            firsts = [db.execute("SELECT line FROM ids WHERE id = ?", (rid,)).fetchone()[0] for rid, _, _ in entries]
        return [None if first == line else first for first, (_, line, _) in zip(firsts, entries)]

    def seal(self) -> None:
        """End the bulk load (one transaction) and index the routes."""
        with self._lock:
            if self._db.in_transaction:
                self._db.execute("COMMIT")
            self._db.execute("CREATE INDEX IF NOT EXISTS by_route ON ids (route, done, line)")

    def get(self, rid: Any, default: Any = None) -> Any:
        if not isinstance(rid, str):
            return default
        with self._lock:
            found = self._db.execute("SELECT line FROM ids WHERE id = ?", (rid,)).fetchone()
        return default if found is None else found[0]

    def __getitem__(self, rid: str) -> int:
        line = self.get(rid)
        if line is None:
            raise KeyError(rid)
        return line

    def __contains__(self, rid: Any) -> bool:
        return self.get(rid) is not None

    def __len__(self) -> int:
        return self._count

    def mark_done(self, rid: Any) -> bool:
        """Mark ``rid`` as having its output row; True when it is a row of this file not marked before."""
        if not isinstance(rid, str):
            return False
        with self._lock:
            return bool(self._db.execute("UPDATE ids SET done = 1 WHERE id = ? AND done = 0", (rid,)).rowcount)

    def mark_done_many(self, rids: Iterable[Any], errored: bool = False) -> int:
        """``mark_done`` for each of ``rids``, in one transaction: how many were marked.  ``errored``: the rows
        found are error rows (an id is marked so until a row that is not an error row is found for it:
        ``errored_count``)."""
        rows = [(rid,) for rid in rids if isinstance(rid, str)]
        if not rows:
            return 0
        with self._lock:
            db = self._db
            before = db.total_changes
            db.execute("BEGIN")
            try:
                if errored:
                    db.executemany("UPDATE ids SET done = 2 WHERE id = ? AND done = 0", rows)
                    marked = db.total_changes - before
                else:  # (an id marked errored before is an answered one now, not marked a second time)
                    fresh = db.total_changes
                    db.executemany("UPDATE ids SET done = 1 WHERE id = ? AND done = 0", rows)
                    marked = db.total_changes - fresh
                    db.executemany("UPDATE ids SET done = 1 WHERE id = ? AND done = 2", rows)
            finally:
                db.execute("COMMIT")
            return marked

    def errored_count(self) -> int:
        """How many ids were marked by error rows only (``mark_done_many(..., errored=True)``)."""
        with self._lock:
            return int(self._db.execute("SELECT count(*) FROM ids WHERE done = 2").fetchone()[0])

    def last_done(self) -> int:
        """The last line whose id is marked done (0: none): a row below none of them needs no ``is_done``."""
        with self._lock:
            found = self._db.execute("SELECT max(line) FROM ids WHERE done != 0").fetchone()
        return found[0] if found and found[0] is not None else 0

    def is_done(self, rid: str) -> bool:
        with self._lock:
            found = self._db.execute("SELECT done FROM ids WHERE id = ?", (rid,)).fetchone()
        return bool(found and found[0])

    def remaining(self, first: int = 6) -> Dict[int, Tuple[int, List[int]]]:
        """route -> (rows not done, their first ``first`` line numbers), for the valid rows."""
        out = {}  # type: Dict[int, Tuple[int, List[int]]]
        with self._lock:
            counts = self._db.execute("SELECT route, count(*) FROM ids WHERE route IS NOT NULL AND done = 0 "
                                      "GROUP BY route").fetchall()
            for route, count in counts:
                lines = [r[0] for r in self._db.execute(
                    "SELECT line FROM ids WHERE route = ? AND done = 0 ORDER BY line LIMIT ?", (route, first))]
                out[route] = (count, lines)
        return out


# -- output rows -----------------------------------------------------------------------------------


_second = (None, "")  # type: Tuple[Optional[int], str]  # (a Unix second, its "YYYY-MM-DDTHH:MM:SS" in UTC)


def _now() -> str:
    """Now in UTC, ``YYYY-MM-DDTHH:MM:SS.ffffffZ`` (the date and time formatted once a second)."""
    global _second
    now = time.time()
    whole = int(now // 1)
    second = _second
    if second[0] != whole:
        second = _second = (whole, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)))
    return "{}.{:06d}Z".format(second[1], min(999999, int((now - whole) * 1e6)))


def output_row(row: JobRow, *, message: Any, usage_metadata: Any, finish_reason: Any, cost_usd: Optional[float],
               error: Optional[Mapping[str, Any]], attempts: int, backend: str) -> Dict[str, Any]:
    """The output line for ``row`` (JSON-ready: bytes as {"__bytes__"}, enums as their values)."""
    return {
        "id": row.id,
        "model": row.model,
        "message": to_jsonable(message),
        "usage_metadata": to_jsonable(usage_metadata),
        "finish_reason": to_jsonable(finish_reason),
        "cost_usd": float(cost_usd) if cost_usd is not None else None,
        "error": dict(error) if error is not None else None,
        "attempts": int(attempts),
        "backend": backend,
        "finished_at": _now(),
    }


def error_of(exc: BaseException) -> Dict[str, Any]:
    """``{"type", "message", "status"}`` for an exception (agenthub's messages carry no secret; anything
    else is named by its class only, its text could hold anything).  An OutputValidationError adds its
    ``problems`` and last candidate (``candidate_text``, ``candidate_json``)."""
    if isinstance(exc, AgentHubError):
        text = str(exc)
    else:
        text = "{} (not an agenthub error: its text is not recorded)".format(type(exc).__name__)
    status = getattr(exc, "status", None)
    out = {"type": type(exc).__name__, "message": text,
           "status": status if isinstance(status, int) and not isinstance(status, bool) else None}
    if isinstance(exc, OutputValidationError):
        out["problems"] = [list(p) for p in exc.problems or ()]
        out["candidate_text"] = exc.candidate_text
        out["candidate_json"] = exc.candidate_json
    return out


def vectors_short(message: Mapping[str, Any], inputs: Optional[int], client: str) -> Optional[AgentHubError]:
    """The error of an embeddings answer holding another number of vectors than the row's ``inputs`` (what
    ``AutoLLMClient.embed`` raises live), None otherwise (or when ``inputs`` is not known)."""
    vectors = sum(1 for item in message.get("content_items") or () if item.get("type") == "embedding")
    if not vectors or inputs is None or vectors == inputs:
        return None
    return StreamProtocolError("{}: {} inputs were sent for embedding and {} vectors came back".format(
        client, inputs, vectors), client=client)


def error_row(row: JobRow, exc: BaseException, *, attempts: int, backend: str) -> Dict[str, Any]:
    """The output line for a row that failed with ``exc``."""
    return output_row(row, message=None, usage_metadata=None, finish_reason=None, cost_usd=None,
                      error=error_of(exc), attempts=attempts, backend=backend)


#: the output lines' encoder (``json.dumps`` with these options builds one per call)
_ROW_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def dumps_row(row: Mapping[str, Any]) -> bytes:
    """One output line, newline included: UTF-8, with each lone surrogate a string holds (a server's JSON may
    send one: ``"\\ud83d"``) written as its JSON escape, which ``json.loads`` reads back as the same string
    (two side by side, a high one then a low one, read back as the one character they are halves of)."""
    try:
        text = _ROW_ENCODER.encode(row) + "\n"
    except ValueError:  # a number JSON has not (a server's NaN or 1e999, kept in a block it sent): null
        text = _ROW_ENCODER.encode(_finite(row)) + "\n"
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return surrogates_escaped(text).encode("utf-8")


def _finite(value: Any) -> Any:
    """``value`` with each NaN or infinite float as None (the JSON writers' one rule for a number JSON cannot hold)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(item) for item in value]
    return value


# -- the output file -------------------------------------------------------------------------------


def replace_durably(tmp: str, path: str) -> None:
    """``os.replace(tmp, path)`` (``tmp``'s bytes synced already), then the folder synced, so the rename
    itself outlives a power cut (else the folder may come back naming the old file).  Where a folder cannot
    be opened (Windows) the rename stands as it is."""
    os.replace(tmp, path)
    try:
        fd = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # (a file system that cannot sync a folder: the rename stands)
    finally:
        os.close(fd)


class OutputLock(object):
    """An exclusive lock on ``<output>.lock`` (``fcntl.flock``) while one run writes an output file: a
    second run on the same output is refused at once (it would send every row again and write each twice).
    Where ``fcntl`` is missing (Windows) nothing is locked.  The lock file is removed when the run ends:
    removed while still locked, and a run that locks a file the path no longer names (it opened the file
    just before its holder removed it) tries again on the path's new file, so two runs never both hold it."""

    def __init__(self, output_path: str, *, what: str = "another run is writing",
                 advice: str = "wait for it to end, or write another output file") -> None:
        self.path = output_path + ".lock"
        self._fd = None  # type: Optional[int]
        if os.path.isdir(output_path):  # (a typo naming a folder: a ConfigError, not IsADirectoryError mid-run)
            raise ConfigError("{} is a folder, not a file".format(output_path))
        try:
            import fcntl
        except ImportError:  # pragma: no cover - not POSIX
            return
        for _ in range(100):  # (each round: a holder removed the file between our open and our lock)
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
            except OSError as exc:
                raise ConfigError("cannot create the lock file {}: {}".format(self.path, exc.strerror or exc)) \
                    from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                raise ConfigError("{} {} (it holds {}): {}".format(what, output_path, self.path, advice)) from None
            try:
                named = os.stat(self.path)
                held = os.fstat(fd)
                current = (named.st_dev, named.st_ino) == (held.st_dev, held.st_ino)
            except OSError:
                current = False
            if current:
                self._fd = fd
                return
            os.close(fd)
        raise ConfigError("cannot lock {}: its lock file {} keeps being replaced".format(output_path, self.path))

    def release(self) -> None:
        if self._fd is not None:
            try:
                os.unlink(self.path)  # (while locked: a run waiting on this file sees it is gone and tries anew)
            except OSError:
                pass
            os.close(self._fd)  # (closing the descriptor releases the flock)
            self._fd = None


def _scan(path: str, visit: Callable[[int, Optional[Dict[str, Any]]], None]) -> int:
    """Call ``visit(start offset, decoded row or None)`` for each complete line (one at a time: nothing is
    kept) and return the length of the complete part (a last line without its newline is torn)."""
    offset = 0
    with open(path, "rb") as handle:
        for raw in handle:
            obj = _row_of_line(raw, offset)
            if not raw.endswith(b"\n") and obj is None:
                break  # torn: a killed run's last write (a whole row whose newline an editor dropped is kept)
            visit(offset, obj)
            offset += len(raw)
    return offset


def _row_of_line(raw: bytes, offset: int) -> Optional[Dict[str, Any]]:
    """The output row an output line at ``offset`` holds (None: not one).  A byte order mark an editor put at the
    start of the file is read past, as in a job file."""
    try:
        obj = _json_loads(raw.decode("utf-8-sig" if not offset else "utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    return obj if isinstance(obj, dict) else None


def _truncate_torn(path: str, good: int) -> None:
    """Cut the file to its ``good`` part (a torn last line runs again); a last row without its newline (an editor
    dropped it) gets one, so that the next row appended starts a line of its own."""
    if os.path.getsize(path) > good:
        log.warning("agenthub.jobs: %s ends with a torn line (a run was killed while writing it): cut away, "
                    "that row runs again", path)
        with open(path, "r+b") as handle:
            handle.truncate(good)
    if good:
        with open(path, "r+b") as handle:
            handle.seek(good - 1)
            if handle.read(1) != b"\n":
                handle.seek(good)
                handle.write(b"\n")


def _cut_torn_tail(path: str) -> None:
    """Cut a torn last line, reading the file from its end only (the line is shorter than the file)."""
    size = os.path.getsize(path)
    if not size:
        return
    with open(path, "rb") as handle:
        handle.seek(size - 1)
        if handle.read(1) == b"\n":
            return
        end = size
        while end > 0:
            start = max(0, end - 65536)
            handle.seek(start)
            chunk = handle.read(end - start)
            cut = chunk.rfind(b"\n")
            if cut >= 0:
                break
            end = start
        else:
            start, cut = 0, -1
        good = start + cut + 1
        handle.seek(good)
        whole = _row_of_line(handle.read(), good) is not None  # (a row whose newline an editor dropped: kept)
    _truncate_torn(path, size if whole else good)


def read_output(path: str) -> List[Dict[str, Any]]:
    """The output rows of a file (torn or undecodable lines left out; the file is not changed)."""
    rows = []  # type: List[Dict[str, Any]]
    if os.path.exists(path):
        _scan(path, lambda _, obj: rows.append(obj) if obj is not None else None)
    return rows


def finished_ids(output_path: str, *, retry_failed: bool = False) -> Set[str]:
    """The ids that have a row in ``output_path`` (error rows too, unless ``retry_failed``).

    A torn last line (no newline: a run killed while writing it) is ignored and cut from the file, so
    the next append starts on a fresh line.  A missing file has no finished ids.  Only the ids are
    kept, never the rows.
    """
    done = set()  # type: Set[str]
    if not os.path.exists(output_path):
        return done

    def visit(_: int, obj: Optional[Dict[str, Any]]) -> None:
        rid = obj.get("id") if obj is not None else None
        if isinstance(rid, str) and (obj.get("error") is None or not retry_failed):  # type: ignore[union-attr]
            done.add(rid)

    _truncate_torn(output_path, _scan(output_path, visit))
    return done


def mark_finished(output_path: str, index: "IdIndex", *, retry_failed: bool = False) -> int:
    """Mark in ``index`` the ids that have a row in ``output_path`` (error rows too, unless
    ``retry_failed``), the output read one line at a time; the number of ids marked (those with error rows
    only are marked errored: ``IdIndex.errored_count``).  A torn last line is cut away (as ``finished_ids`` does)."""
    marked = [0]
    if not os.path.exists(output_path):
        return 0
    # ids marked a thousand at a time, in one transaction (memory stays flat): answers, error rows
    batches = ([], [])  # type: Tuple[List[Any], List[Any]]

    def visit(_: int, obj: Optional[Dict[str, Any]]) -> None:
        if obj is not None and (obj.get("error") is None or not retry_failed):
            errored = obj.get("error") is not None
            batch = batches[errored]
            batch.append(obj.get("id"))
            if len(batch) >= 1000:
                marked[0] += index.mark_done_many(batch, errored)
                del batch[:]

    good = _scan(output_path, visit)
    marked[0] += index.mark_done_many(batches[0]) + index.mark_done_many(batches[1], True)
    _truncate_torn(output_path, good)
    return marked[0]


class OutputWriter(object):
    """Appends output rows to ``path`` from any thread: each row's whole line in one ``write(2)`` to the file opened
    with ``O_APPEND`` (unbuffered: the line is in the file when ``write`` returns), which the system appends whole
    at the file's end, so no lock is held across the call (a thread waiting for the GIL after its write would hold
    up every other row's write behind it); a short write (a full disk) is finished by further writes.

    With ``retry_failed=True`` the error rows of ``retry_ids`` (all error rows when None) are removed
    first, by writing the kept lines to a temporary file beside it and renaming it over the output
    (``os.replace``: a reader or a crash sees the old file or the new one, never half).  A torn last line
    is cut away on opening.
    """

    def __init__(self, path: str, *, retry_failed: bool = False, retry_ids: Optional[Iterable[str]] = None) -> None:
        self.path = path
        self._lock = threading.Lock()
        folder = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(folder):
            raise ConfigError("the output folder {} does not exist".format(folder))
        if os.path.exists(path) and not retry_failed:
            _cut_torn_tail(path)
        elif os.path.exists(path):
            wanted = None if retry_ids is None else retry_ids if hasattr(retry_ids, "__contains__") else set(retry_ids)
            good_ids = set()  # type: Set[str]
            errors = []  # type: List[Tuple[int, str]]

            def visit(start: int, obj: Optional[Dict[str, Any]]) -> None:
                rid = obj.get("id") if obj is not None else None
                if not isinstance(rid, str):
                    return
                if obj.get("error") is None:  # type: ignore[union-attr]
                    good_ids.add(rid)
                elif retry_failed and (wanted is None or rid in wanted):
                    errors.append((start, rid))

            _truncate_torn(path, _scan(path, visit))
            drop = {start for start, rid in errors if rid not in good_ids}
            if drop:
                self._rewrite(path, drop)
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_BINARY", 0)
                           | getattr(os, "O_CLOEXEC", 0), 0o666)  # (the mode open() gives, less the umask)
        self._closer = weakref.finalize(self, os.close, self._fd)  # (closed once: by ``close`` or when collected)
        self._writing = 0  # the writes under way (``close`` closes the descriptor once none is)
        self._closing = False

    @staticmethod
    def _rewrite(path: str, drop: Set[int]) -> None:
        fd, tmp = tempfile.mkstemp(prefix=".agenthub-", suffix=".jsonl.tmp", dir=os.path.dirname(os.path.abspath(path)))
        try:
            skip = drop
            with os.fdopen(fd, "wb") as out, open(path, "rb") as src:
                offset = 0
                for raw in src:
                    if offset not in skip:
                        out.write(raw)
                    offset += len(raw)
                out.flush()
                os.fsync(out.fileno())
            try:
                os.chmod(tmp, os.stat(path).st_mode & 0o777)
            except OSError:
                pass
            replace_durably(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise

    def write(self, row: Mapping[str, Any]) -> None:
        data = dumps_row(row)
        with self._lock:  # (held for no call that lets go of the GIL)
            if self._closing:
                raise ValueError("write to a closed OutputWriter")
            self._writing += 1
        try:
            done = os.write(self._fd, data)
            while done < len(data):  # (a regular file's write is short only when the disk is full: the next fails)
                more = os.write(self._fd, data[done:])
                if more <= 0:
                    raise OSError("the output file took no more bytes")
                done += more
        finally:
            with self._lock:
                self._writing -= 1
                if self._closing and not self._writing:
                    self._close()

    def close(self) -> None:
        with self._lock:
            if not self._closing:
                self._closing = True
                if not self._writing:  # (else the last write under way closes it)
                    self._close()

    def _close(self) -> None:
        self._fd = -1
        self._closer()

    def __enter__(self) -> "OutputWriter":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
