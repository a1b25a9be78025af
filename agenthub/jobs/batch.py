"""A job file on the providers' batch engines: ``submit`` it, then (from any later process) ``load``
its state file and ask ``status``, ``fetch`` the results into an output file, or ``cancel``.

Each row is planned exactly as the live call would be (``AutoLLMClient``'s request for the row's
messages and config, without the streaming switch), grouped per backend, endpoint, model and API
(the OpenAI guide: "each input file can only include requests to a single model"), and split where
a group passes its engine's per-batch limits.  The state file (default ``<input>.batch.json``) holds
what a later process needs: the input file, each remote batch's ids, and which rows went where (by
id; a row whose id the engine would refuse travels under a custom id made from its line number; on
Anthropic each custom id also carries a tag unique to its batch's create call, kept as the record's ``tag``).
It holds no key: keys come from the environment again when the state is loaded.

Results are matched to rows by custom id, never by order, and each answer goes through the same
parser the client uses for a whole JSON answer of that protocol (``Protocol.read`` on a document),
so an output row has the live runner's shape field for field; ``cost_usd`` is at the batch price.
Rows a batch never ran (expired, cancelled, a batch that failed validation) get no output row:
``fetch`` lists them, and ``agenthub.jobs.run`` on the same input and output finishes exactly them
live (it skips the ids the output already has).
"""

import contextlib
import datetime
import hashlib
import json
import logging
import os
import secrets
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Set, Tuple

from .. import hosts, registry
from .._redact import named_secrets, shown_url
from ..errors import AgentHubError, ConfigError, StreamProtocolError, upstream_error
from ..stream import Collector, drive, surrogates_escaped, surrogates_shown
from ..validate import check_config
from . import backends as _backends
from .backends import TERMINAL, dumps_entry
from .._jsondepth import loads as _json_loads
from .backends._base import TAG_ROOM
from .backends._wire import Wire, _scrubbed
from .jobfile import (JobRow, OutputLock, OutputWriter, error_of, error_row, vectors_short, finished_ids, iter_rows, output_row, read_jobs,
                      replace_durably)

__all__ = ["submit", "load", "BatchJob", "BatchStatus", "BatchInfo", "FetchSummary", "batch_cost", "answer_row",
           "STATE_VERSION"]

log = logging.getLogger("agenthub")

STATE_VERSION = 1
_MAX_SHOWN = 20
#: the client's limit on one SSE line does not apply to a whole document; the transport caps documents
_MAX_LINE = 1 << 30


def batch_cost(model: str, usage: Any) -> Optional[float]:
    """USD at the batch price: the catalog's batch-API prices (``agenthub.cost(..., batch=True)``); None
    where the catalog has none for the model, or the usage counts no input (``catalog.counted_input``: as a live
    answer's is unknown), never a guess."""
    from ..catalog import cost, counted_input

    return cost(model, usage, batch=True) if counted_input(usage) else None


# -- rows, results ------------------------------------------------------------------------------------


class _Document(object):
    """A whole JSON answer in the shape ``Protocol.read`` takes (what the transport hands the client)."""

    def __init__(self, payload: Any) -> None:
        self.document = payload

    def open(self, document: bool = False) -> bool:
        return True


def collect_answer(record: Any, payload: Any, client: str) -> Dict[str, Any]:
    """The assistant message of one whole JSON answer: ``Protocol.read`` on the document, the stream
    driver, ``collect``: the steps ``client.response`` takes for a server that answered one document."""
    collector = Collector()
    add = collector.add
    for event in drive(record.read(_Document(payload), client, _MAX_LINE, True), client):
        add(event)
    return collector.message()  # type: ignore[return-value]


def answer_row(row: JobRow, record: Any, client: str, payload: Any, backend: str) -> Dict[str, Any]:
    """The output row for one batch answer (an error row when the answer does not parse).  A row with a
    ``trace_id`` is traced as the live call would trace it (a failure to write is logged; the row stands)."""
    try:
        message = collect_answer(record, payload, client)
    except AgentHubError as exc:
        return error_row(row, exc, attempts=1, backend=backend)
    usage = message.get("usage_metadata")
    short = vectors_short(message, row.inputs if row.inputs is not None else len(row.messages) or None, client)
    if short is not None:  # one vector per input, as embed() holds the live call to (billed all the same)
        return output_row(row, message=None, usage_metadata=usage, finish_reason=None,
                          cost_usd=batch_cost(row.model, usage), error=error_of(short), attempts=1, backend=backend)
    if row.config.get("trace_id"):
        _trace(row, message)
    return output_row(row, message=message, usage_metadata=usage, finish_reason=message.get("finish_reason"),
                      cost_usd=batch_cost(row.model, usage), error=None, attempts=1, backend=backend)


def _trace(row: JobRow, message: Any) -> None:
    from ..tracer import save_trace

    config = dict(row.config)
    if config.get("extra_headers"):
        config["extra_headers"] = {name: "***" for name in config["extra_headers"]}
    try:
        save_trace(config["trace_id"], row.model, list(row.messages) + [message], config)
    except Exception as exc:  # disk full, permissions: the answer stands (agenthub.tracer's policy)
        log.error("agenthub.jobs: the trace %r of row %r was not written (%s: %s)", config["trace_id"], row.id,
                  type(exc).__name__, exc)


def failed_row(row: JobRow, client: str, status: Optional[int], body: Any, backend: str) -> Dict[str, Any]:
    """The output row for a request the engine ran and that failed (its error, as the live call raises it)."""
    return error_row(row, upstream_error(client, body, status=status), attempts=1, backend=backend)


# -- typed output: rounds of re-asks -------------------------------------------------------------------


def _output_of(row: JobRow, typed_output: Any) -> Any:
    """The row's output type: its own ``output_schema``, else the job's (``submit(..., output=...)``)."""
    return row.output_schema if row.output_schema is not None else typed_output


def _shape(client: Any, row: JobRow, output: Any) -> Any:
    """How the row's output type goes out on its endpoint (agenthub.output.shape: what client.parse sends)."""
    from ..output.parse import check_no_tools
    from ..output.shape import shape

    if row.config.get("response_format") is not None:
        raise ConfigError("the output type sets response_format: leave it out of the row's config")
    check_no_tools(row.config)
    return shape(client, list(row.messages), output, dict(row.config))


def _add_usage(before: Any, usage: Any) -> Dict[str, Any]:
    from ..types import USAGE_KEYS

    out = {}  # type: Dict[str, Any]
    for key in USAGE_KEYS:
        values = [u.get(key) for u in (before, usage) if isinstance(u, Mapping) and u.get(key) is not None]
        out[key] = sum(values) if values else None
    return out


def typed_answer(row: JobRow, record_parser: Any, client: Any, payload: Any, backend: str, output: Any,
                 prior: Optional[Mapping[str, Any]], retries: int) -> Tuple[Optional[Dict[str, Any]], Any]:
    """One batch answer of a typed row, judged as client.parse judges an answer (agenthub.output.parse.judge):
    (its output row, None) when it held or failed for good, (None, what the next round needs) when it is
    to be asked again.  ``prior``: the row's earlier rounds (their re-ask turns, problems, usage, cost)."""
    from ..output.parse import judge
    from ..types import from_jsonable, to_jsonable

    attempt = int((prior or {}).get("attempt", 0)) + 1
    try:
        message = collect_answer(record_parser, payload, client.client_type)
    except AgentHubError as exc:
        out = error_row(row, exc, attempts=attempt, backend=backend)
        if prior:  # an answer of a re-ask round that does not parse: the earlier rounds were paid for
            out.update(usage_metadata=prior.get("usage"), cost_usd=prior.get("cost_usd"))
        return out, None
    turn_usage = message.get("usage_metadata")
    usage = _add_usage((prior or {}).get("usage"), turn_usage)
    price = batch_cost(row.model, turn_usage) if turn_usage else None
    before = (prior or {}).get("cost_usd", 0.0) if prior else 0.0
    total = None if price is None or before is None else before + price
    problems_seen = [list(p) for p in (prior or {}).get("problems") or ()]  # type: List[List[str]]
    shaped = _shape(client, row, output)
    verdict = judge(shaped, message, attempt, retries - attempt + 1, problems_seen, usage, total)
    if verdict.error is not None:
        out = error_row(row, verdict.error, attempts=attempt, backend=backend)
        out["usage_metadata"] = usage
        out["cost_usd"] = total
        return out, None
    if verdict.problems is None:
        out = output_row(row, message=message, usage_metadata=usage, finish_reason=message.get("finish_reason"),
                         cost_usd=total, error=None, attempts=attempt, backend=backend)
        out["value"] = verdict.json
        return out, None
    extra = from_jsonable((prior or {}).get("extra") or []) + verdict.turns
    return None, {"attempt": attempt, "extra": to_jsonable(extra), "problems": problems_seen, "usage": usage,
                  "cost_usd": total}


# -- the state file -----------------------------------------------------------------------------------


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _digest(path: str) -> str:
    sha = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            sha.update(block)
    return sha.hexdigest()


def _row_digest(row: JobRow) -> str:
    """A digest of one input row as submitted (its whole content, key order aside): ``fetch`` refuses an
    input whose submitted rows changed (an output row would name and price a request that never ran)."""
    text = json.dumps(row.to_json(), sort_keys=True, ensure_ascii=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("ascii")).hexdigest()[:32]


def _write_state(path: str, state: Mapping[str, Any]) -> None:
    """Atomically (a temporary file renamed over it): a reader or a crash sees the old state or the new."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".agenthub-", suffix=".batch.tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(surrogates_escaped(json.dumps(state, ensure_ascii=False, indent=1)))  # (a server's "\ud83d")
            out.write("\n")
            out.flush()
            os.fsync(out.fileno())
        replace_durably(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _state_lock(path: str) -> OutputLock:
    """The state file's lock (``<state>.lock``), held while a process submits, fetches or cancels: a second
    one is refused at once (two would each create the batches still to create, or the same re-ask round, and
    pay twice; the last to save would drop what the other created)."""
    return OutputLock(path, what="another process is working on the batch job", advice="wait for it to end")


def _read_state(path: str) -> Dict[str, Any]:
    try:
        with open(path, "r", encoding="utf-8") as handle:
            state = _json_loads(handle.read())
    except OSError as exc:
        raise ConfigError("cannot read the batch state file {}: {}".format(path, exc.strerror or exc)) from None
    except (ValueError, RecursionError) as exc:
        raise ConfigError("the batch state file {} is not JSON ({})".format(path, exc)) from None
    if not isinstance(state, dict) or state.get("agenthub_batch") != STATE_VERSION or not isinstance(
            state.get("batches"), list):
        raise ConfigError("{} is not an agenthub batch state file (version {})".format(path, STATE_VERSION))
    problem = _state_problem(state)
    if problem is not None:
        raise ConfigError("the batch state file {} is malformed: {} (it was not used; nothing was sent)".format(
            path, problem))
    return state


def _opt_str(value: Any) -> bool:
    return value is None or isinstance(value, str)


def _str_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


#: the fields of a batch record the engine reads, and what each must be
_RECORD_FIELDS = (
    ("backend", lambda v: isinstance(v, str) and v in _backends.FAMILY, "a backend name (openai, azure, anthropic, "
                                                                       "gemini)"),
    ("model", lambda v: isinstance(v, str) and bool(v), "a model name"),
    ("api", lambda v: isinstance(v, str) and bool(v), "an API name"),
    ("ids", lambda v: _str_list(v) and bool(v), "a list of row ids"),
    ("custom_ids", lambda v: isinstance(v, dict) and all(isinstance(k, str) and isinstance(c, str)
                                                         for k, c in v.items()), "an object of row id -> custom id"),
    ("row_client_type", _opt_str, "a client_type or null"),
    ("row_base_url", _opt_str, "a URL or null"),
    ("remote", lambda v: v is None or isinstance(v, dict), "an object or null"),
    ("last", lambda v: v is None or isinstance(v, dict), "an object or null"),
    ("tag", lambda v: isinstance(v, str) and len(v) == TAG_ROOM - 1 and all(c in "0123456789abcdef" for c in v),
     "8 lowercase hex digits"),
    ("recovered", lambda v: isinstance(v, bool), "true or false"),
    ("creating", lambda v: isinstance(v, dict) and isinstance(v.get("at"), (int, float)) and not isinstance(
        v["at"], bool) and v["at"] == v["at"] and abs(v["at"]) < 1e11 and isinstance(v.get("name"), str)
        and isinstance(v.get("requests"), int) and (v.get("input_file_id") is None or _segment_ok(v["input_file_id"]))
        and (v.get("parts") is None or isinstance(v["parts"], dict)), "a create call's marker (at, name, requests)"),
)


def _segment_ok(value: Any) -> bool:
    """A remote id that stays one URL path segment (no slash, not a dot segment, no control character)."""
    return isinstance(value, str) and bool(value) and "/" not in value and "\\" not in value and \
        value.strip(".") != "" and "%" not in value and not any(ord(c) < 0x21 or ord(c) == 0x7f for c in value)


def _remote_problem(remote: Mapping[str, Any]) -> Optional[str]:
    for name in ("batch_id", "input_file_id", "output_file_id"):
        if name in remote and remote[name] is not None and not _segment_ok(remote[name]):
            return "remote.{} is not one id".format(name)
    batch_name = remote.get("batch_name")
    if batch_name is not None and not (isinstance(batch_name, str) and batch_name.startswith("batches/")
                                       and _segment_ok(batch_name[len("batches/"):])):
        return "remote.batch_name is not batches/<id>"
    if "batch_id" not in remote and "batch_name" not in remote:
        return "remote names no batch (batch_id or batch_name)"
    return None


def _typed_problem(record: Mapping[str, Any]) -> Optional[str]:
    """What is wrong with a record's typed-output rounds (``round``, ``typed``, ``reasked``), None when fine."""
    if "round" in record and not (isinstance(record["round"], int) and not isinstance(record["round"], bool)
                                  and record["round"] >= 2):
        return "round must be an int >= 2"
    if "reasked" in record and not _str_list(record["reasked"]):
        return "reasked must be a list of row ids"
    typed = record.get("typed")
    if "round" in record and not (isinstance(typed, dict) and _str_list(record.get("ids"))
                                  and all(rid in typed for rid in record["ids"])):
        return "typed must hold the earlier rounds of every row of a re-ask round"
    if typed is None:
        return None
    if not isinstance(typed, dict):
        return "typed must be an object of row id -> the row's earlier rounds"
    for rid, prior in typed.items():
        if not (isinstance(prior, dict) and isinstance(prior.get("attempt"), int) and not isinstance(
                prior.get("attempt"), bool) and prior["attempt"] >= 1 and isinstance(prior.get("extra"), list)
                and isinstance(prior.get("problems"), list) and all(_str_list(p) for p in prior["problems"])
                and (prior.get("usage") is None or isinstance(prior["usage"], dict))
                and (prior.get("cost_usd") is None or (isinstance(prior["cost_usd"], (int, float))
                                                       and not isinstance(prior["cost_usd"], bool)))):
            return "typed[{!r}] is not a row's earlier rounds".format(rid[:60])
    return None


def _state_problem(state: Mapping[str, Any]) -> Optional[str]:
    """What is wrong with a state file's content (None: nothing the engine would trip on)."""
    if not isinstance(state.get("backend"), str) or state["backend"] not in _backends.BACKENDS:
        return "backend must be one of {}".format(", ".join(_backends.BACKENDS))
    if not isinstance(state.get("input_path"), str) or not state["input_path"]:
        return "input_path must be a path"
    if not _opt_str(state.get("input_sha256")):
        return "input_sha256 must be a hex digest"
    if state.get("output") is not None:
        from ..typeschema import compile as compile_type

        if not isinstance(state["output"], dict):
            return "output must be a JSON Schema object or null"
        try:
            compile_type(state["output"])
        except ConfigError as exc:
            return "output is not a JSON Schema the typed output takes ({})".format(exc)
    retries = state.get("output_retries", 2)
    if not (isinstance(retries, int) and not isinstance(retries, bool) and 0 <= retries <= 10):
        return "output_retries must be an int from 0 to 10"
    if "not_ours" in state and not _str_list(state["not_ours"]):
        return "not_ours must be a list of batch ids"
    if "input_needed" in state and not _str_list(state["input_needed"]):
        return "input_needed must be a list of words"
    digests = state.get("row_sha256")
    if digests is not None and not (isinstance(digests, dict) and all(
            isinstance(k, str) and isinstance(v, str) for k, v in digests.items())):
        return "row_sha256 must be an object of row id -> hex digest"
    for number, record in enumerate(state["batches"]):
        where = "batches[{}]".format(number)
        if not isinstance(record, dict):
            return where + " is not an object"
        for name, ok, what in _RECORD_FIELDS:
            if name not in record and name in ("row_client_type", "row_base_url", "last", "creating", "tag",
                                               "recovered"):
                continue
            if name not in record or not ok(record[name]):
                return "{}.{} must be {}".format(where, name, what)
        problem = _typed_problem(record)
        if problem is not None:
            return "{}.{}".format(where, problem)
        if record.get("remote") is not None:
            problem = _remote_problem(record["remote"])
            if problem is not None:
                return "{}.{}".format(where, problem)
    return None


# -- planning ------------------------------------------------------------------------------------------


@dataclass
class _Planned(object):
    row: JobRow
    backend: str
    client: Any
    api: str
    request: Any


def _client_for(row: JobRow, cache: Dict[Tuple[Any, ...], Any]) -> Any:
    from ..client import AutoLLMClient

    key = (row.model, row.client_type, row.base_url)
    client = cache.get(key)
    if client is None:
        client = cache[key] = AutoLLMClient(row.model, client_type=row.client_type, base_url=row.base_url,
                                            max_retries=0)
    return client


def _vendor_endpoint(row: JobRow, name: str, client: Any) -> bool:
    """True when the row reaches the engine's own vendor: its registry route (by client_type preset, else by
    model name) names the vendor of the client-type row (``Route.provider`` == ``ClientType.provider``: a
    row routed to another vendor's server that speaks the same protocol, DeepSeek's Chat Completions say,
    has no batch engine there), or no route applies (the protocol's default endpoint, which is the
    vendor's).  A row with its own ``base_url`` is taken at its word."""
    if row.base_url is not None:
        return True
    route = registry.presets().get(row.client_type) if row.client_type else None
    if route is None:
        route = registry.route_for(row.model)
        if route is not None and route.client_type != client.client_type:
            route = None
    # no route: the protocol's own default endpoint (or where its environment variable moved it)
    return route is None or route.provider == hosts.client_type(client.client_type).provider


def _vendor_name(client: Any) -> str:
    """The vendor of the client-type row, in words (its registry rows' ``vendor``: "OpenAI")."""
    provider = hosts.client_type(client.client_type).provider
    return next((route.vendor for route in registry.ROUTES if route.provider == provider), str(provider))


def _plan_row(row: JobRow, choice: str, cache: Dict[Tuple[Any, ...], Any], typed_output: Any = None) -> _Planned:
    client = _client_for(row, cache)
    kind = client.client_type
    name = _backends.for_client_type(kind)
    if name is None:
        raise ConfigError("client_type {!r} has no batch engine here ({} have)".format(
            kind, ", ".join(sorted(_backends.BY_CLIENT_TYPE))))
    if choice != "auto" and _backends.FAMILY[name] != choice:
        raise ConfigError("{!r} routes to {} ({}), not to the {} backend (backend='auto' sends each row to its "
                          "own provider)".format(row.model, _backends.FAMILY[name], kind, choice))
    if not _vendor_endpoint(row, name, client):
        raise ConfigError("{!r} routes to {}, which is not {}'s own endpoint: no {} batch engine there (a row "
                          "with its own base_url is taken at its word)".format(
                              row.model, shown_url(client.base_url), _vendor_name(client), name))
    embeddings = client.protocol.name.endswith("-embeddings")  # the client of an embedding model
    api = "embeddings" if embeddings else hosts.client_type(kind).facts.batch_api  # the row's dialect's
    why = _backends.backend(name).why_not(api)
    if why:
        raise ConfigError(why)
    config = check_config(row.config)
    if config.get("extra_headers"):
        raise ConfigError("extra_headers cannot travel in a batch request (a batch line has no headers): run this "
                          "row live")
    if config.get("trace_id"):
        from ..tracer import trace_paths

        trace_paths(config["trace_id"])  # one escaping the cache dir is refused now, as live
    output = _output_of(row, typed_output)
    if output is not None:  # typed output: the schema goes out as client.parse would send it on this endpoint
        if api == "embeddings":
            raise ConfigError("an embedding row has no output type (output_schema / output=)")
        config = _shape(client, row, output).config
    request = client.plan(list(row.messages), config)
    return _Planned(row, name, client, api, request)


def _problems_error(path: str, problems: List[str]) -> ConfigError:
    shown = problems[:_MAX_SHOWN]
    more = "\n  ... and {} more".format(len(problems) - _MAX_SHOWN) if len(problems) > _MAX_SHOWN else ""
    return ConfigError("{} row(s) of {} cannot go to a batch engine (nothing was sent):\n  {}{}".format(
        len(problems), path, "\n  ".join(shown), more))


def _custom_id(row: JobRow, pattern: Any, all_ids: Any, taken: Any, room: int = 0) -> str:
    """The row's custom id: its id when the engine takes it (ids are unique in a job file), with ``room``
    characters in front for a tag (``Backend.tagged``), else ``row-<line>``, made unique against every id of
    the file and the ids made before."""
    if pattern.match("0" * room + row.id):
        return row.id
    candidate = base = "row-{}".format(row.line)
    n = 1
    while candidate in all_ids or candidate in taken:
        n += 1
        candidate = "{}-{}".format(base, n)
    taken.add(candidate)
    return candidate


class _Group(object):
    """The rows going to one engine, endpoint, model and API: (row id, custom id, entry, weight)."""

    __slots__ = ("items", "sample", "taken")

    def __init__(self, sample: Any) -> None:
        self.items = []  # type: List[Tuple[str, str, bytes, int]]
        self.sample = sample
        self.taken = set()  # type: set


#: what a fetch reads of some rows from the input file (kept in the state as ``input_needed``): without the file
#: a row's own output type is unknown (its answer was written unchecked) and a re-ask round has no messages to
#: send, a traced row was not traced, an embedding row's vectors not counted against its messages
_INPUT_NEEDS = ("output type", "trace_id", "embedding messages")


def _plan(input_path: str, choice: str, wanted: Callable[[JobRow], bool],
          digests: Optional[Dict[str, str]] = None, typed_output: Any = None,
          needs: Optional[Set[str]] = None) -> Tuple[List[Dict[str, Any]], Dict[int, List[bytes]], Dict[int, Any]]:
    """The state's batch records, the encoded entries of each, and a sample request of each, for the
    rows of the job file ``wanted`` keeps.  The file is checked first, then read row by row: memory
    holds the encoded entries (what is uploaded), not the rows.  ``needs`` gets what of the rows a fetch reads
    from the input file (``_INPUT_NEEDS``)."""
    checked = read_jobs(input_path, keep_rows=False)
    all_ids = checked.ids
    cache = {}  # type: Dict[Tuple[Any, ...], Any]
    problems = []  # type: List[str]
    groups = {}  # type: Dict[Tuple[Any, ...], _Group]
    for row in iter_rows(input_path, stop=checked.size):  # (lines written since the check are not the job's)
        if not wanted(row):
            continue
        try:
            item = _plan_row(row, choice, cache, typed_output)
        except ConfigError as exc:
            problems.append("line {} ({!r}): {}".format(row.line, row.id[:60], exc))
            continue
        if problems:
            continue  # nothing will be sent: the rest is only checked
        if digests is not None:
            digests[row.id] = _row_digest(row)
        if needs is not None:
            needs.update(word for word, needed in ((_INPUT_NEEDS[0], _output_of(row, typed_output) is not None),
                                                   (_INPUT_NEEDS[1], bool(row.config.get("trace_id"))),
                                                   (_INPUT_NEEDS[2], item.api == "embeddings")) if needed)
        key = (item.backend, item.client.client_type, item.client.base_url, row.model, item.api, row.client_type,
               row.base_url)
        group = groups.get(key)
        if group is None:
            group = groups[key] = _Group(item.request)
        engine = _backends.backend(item.backend)
        custom = _custom_id(row, engine.custom_id, all_ids, group.taken, TAG_ROOM if engine.tagged else 0)
        entry = engine.entry(custom, item.request, item.api)
        group.items.append((row.id, custom, dumps_entry(entry), engine.weight(entry)))
    if problems:
        raise _problems_error(input_path, problems)
    records = []  # type: List[Dict[str, Any]]
    entries = {}  # type: Dict[int, List[bytes]]
    samples = {}  # type: Dict[int, Any]
    for (name, kind, base_url, model, api, row_type, row_base), group in groups.items():
        engine = _backends.backend(name)
        for chunk in engine.split([(custom, data, weight) for _, custom, data, weight in group.items]):
            chosen = [group.items[i] for i in chunk]
            records.append({
                "backend": name, "client_type": kind, "model": model, "api": api,
                "base_url": shown_url(base_url),
                "row_client_type": row_type, "row_base_url": shown_url(row_base) if row_base else None,
                "ids": [rid for rid, _, _, _ in chosen],
                "custom_ids": {rid: custom for rid, custom, _, _ in chosen if custom != rid},
                "remote": None, "submitted_at": None, "last": None,
            })
            entries[len(records) - 1] = [data for _, _, data, _ in chosen]
            samples[len(records) - 1] = group.sample
        group.items = []
    return records, entries, samples


# -- public API ------------------------------------------------------------------------------------------


def submit(input_path: str, *, backend: str, state_path: Optional[str] = None, output_path: Optional[str] = None,
           session: Any = None, output: Any = None, output_retries: int = 2) -> "BatchJob":
    """Send the rows of ``input_path`` to the batch engines; the job (its state saved at ``state_path``,
    default ``<input>.batch.json``).

    ``backend``: ``"openai"`` (OpenAI, and Azure OpenAI rows), ``"anthropic"``, ``"gemini"``, or ``"auto"``
    (each row to its own provider's engine).  Every row is checked first (the whole file read, each row's
    route, key and request built): any problem is one ConfigError listing them all, and nothing is sent.
    ``output_path``: rows whose id already has a row there are left out (finished before, live or not).

    A state file that exists already is resumed when its submission was cut short (the batches not yet
    created are created; the input must be unchanged), and refused when it is complete (``load`` it).

    ``output``: typed output for the rows without their own ``output_schema`` (a type or a JSON Schema dict,
    kept in the state file as its JSON Schema): each such row's schema goes out as client.parse would send
    it, ``fetch`` validates each answer, and an answer that does not hold goes into a new batch round with
    its problems (the invalid answer as the assistant turn, the problems as the next user turn), at batch
    price, at most ``output_retries`` rounds; its output row has ``"value"`` (docs/typed-output.md).
    """
    if backend not in _backends.BACKENDS:
        raise ConfigError("backend must be one of {} (got {!r})".format(", ".join(_backends.BACKENDS), backend))
    if not isinstance(input_path, str) or not input_path:
        raise ConfigError("input_path must be a path")
    from .runner import check_output

    check_output(output, output_retries)
    typed_output = None if output is None else _schema_of(output)
    state_path = state_path or input_path + ".batch.json"
    if not os.path.isdir(os.path.dirname(os.path.abspath(state_path))):
        raise ConfigError("the folder of the state file {} does not exist".format(state_path))
    if output_path is not None:
        _not_the_job_files(output_path, input_path, state_path)
    lock = _state_lock(state_path)
    try:
        # (a live run writing output_path meanwhile would answer rows this submission also sends: refused)
        out_lock = OutputLock(output_path) if output_path is not None else None
        try:
            return _submit(input_path, backend, state_path, output_path, session, typed_output, output_retries)
        finally:
            if out_lock is not None:
                out_lock.release()
    finally:
        lock.release()


def _submit(input_path: str, backend: str, state_path: str, output_path: Optional[str], session: Any,
            typed_output: Any, output_retries: int) -> "BatchJob":
    if os.path.exists(state_path):
        job = load(state_path, session=session)
        if all(b.get("remote") for b in job._state["batches"]):
            raise ConfigError("{} was submitted already (state in {}): load it with agenthub.jobs.load, or pass "
                              "another state_path".format(input_path, state_path))
        if job._state.get("input_sha256") != _digest(input_path):
            raise ConfigError("{} changed since its submission began (state in {}): pass another state_path".format(
                input_path, state_path))
        job._recover_all()  # a batch whose create call was cut short is found, not created (and paid for) twice
        todo = _still_to_do(job._state)
        digests = job._state.setdefault("row_sha256", {})
        needed = set(job._state.get("input_needed") or ())  # type: Set[str]
        records, entries, samples = _plan(input_path, backend, lambda row: row.id in todo, digests,
                                          job._state.get("output"), needed)
        if needed:
            job._state["input_needed"] = sorted(needed)
        job._resume(entries, samples, records)
        return job
    done = finished_ids(output_path) if output_path is not None else set()
    digests = {}  # type: Dict[str, str]
    needs = set()  # type: Set[str]
    records, entries, samples = _plan(input_path, backend, lambda row: row.id not in done, digests, typed_output,
                                      needs)
    if not records:
        raise ConfigError("{} has no row to submit{}".format(
            input_path, " (every id has a row in {})".format(output_path) if output_path else ""))
    state = {"agenthub_batch": STATE_VERSION, "backend": backend, "input_path": os.path.abspath(input_path),
             "input_sha256": _digest(input_path), "created_at": _now(), "batches": records, "row_sha256": digests}
    if needs:
        state["input_needed"] = sorted(needs)
    if typed_output is not None or output_retries != 2:
        state["output"] = typed_output
        state["output_retries"] = output_retries
    _write_state(state_path, state)
    job = BatchJob(state_path, state, session)
    job._create(entries, samples)
    return job


def _schema_of(output: Any) -> Dict[str, Any]:
    """The JSON Schema of an output type (what the state file keeps: a later process validates with it)."""
    from ..typeschema import compile as compile_type

    return dict(compile_type(output).schema)


def _still_to_do(state: Mapping[str, Any]) -> set:
    """The ids of the batches a cut-short submission did not create."""
    pending = set()  # type: set
    for record in state["batches"]:
        if not record.get("remote"):
            pending.update(record["ids"])
    return pending


def load(state_path: str, *, session: Any = None) -> "BatchJob":
    """The job a state file describes (keys from the environment, as at submission)."""
    return BatchJob(state_path, _read_state(state_path), session)


@dataclass
class BatchInfo(object):
    """One remote batch now."""

    backend: str
    model: str
    api: str
    rows: int
    remote_id: Optional[str]
    status: Optional[str]  # the provider's own word
    state: str  # unsubmitted, pending, running, cancelling, completed, failed, expired, cancelled; unknown: a
    #: provider status agenthub does not know (not ended: never fetched; wait() stops when only such are left)
    counts: Dict[str, Any] = field(default_factory=dict)
    errors: List[str] = field(default_factory=list)


@dataclass
class BatchStatus(object):
    """The job now: ``state`` ``submitting`` (some batches not created), ``in_progress``, or ``ended``
    (every remote batch is completed, failed, expired or cancelled: ``fetch`` gets everything)."""

    state: str
    rows: int
    batches: List[BatchInfo]

    @property
    def done(self) -> bool:
        return self.state == "ended"

    def summary(self) -> str:
        lines = ["{}: {} row(s) in {} batch(es)".format(self.state, self.rows, len(self.batches))]
        for info in self.batches:
            counts = ", ".join("{} {}".format(v, k) for k, v in info.counts.items() if v is not None)
            lines.append("  {} {} {} ({} rows): {}{}{}".format(
                info.backend, info.model, info.remote_id or "(not created)", info.rows, info.status or info.state,
                " [{}]".format(counts) if counts else "", "; " + "; ".join(info.errors) if info.errors else ""))
        return surrogates_shown("\n".join(lines))  # (an engine's error text may hold a lone surrogate: \ud83d)


@dataclass
class FetchSummary(object):
    """What ``fetch`` wrote: ``done`` answer rows, ``failed`` error rows, ``skipped`` rows the output had
    already; ``missing``: ids no result came back for (expired, cancelled, never run: finish them with
    ``agenthub.jobs.run``); ``pending``: ids in batches that have not ended yet."""

    done: int = 0
    failed: int = 0
    skipped: int = 0
    missing: List[str] = field(default_factory=list)
    pending: List[str] = field(default_factory=list)
    output_path: Optional[str] = None
    #: this job's rows whose row in the output is an error row (written now or before)
    failed_total: int = 0
    #: result items that could not be read (not JSON, no custom id): their rows are in ``missing``
    unreadable: int = 0
    #: results naming no request of their batch, and repeated results of a row: reported, never applied
    unknown: int = 0
    duplicates: int = 0


class BatchJob(object):
    """A submitted job.  ``state_path`` names its state file; ``status()``, ``fetch(output_path)``,
    ``cancel()``, ``wait()`` ask the engines (each call reads keys from the environment)."""

    def __init__(self, state_path: str, state: Dict[str, Any], session: Any = None) -> None:
        self.state_path = state_path
        self._state = state
        self._session = session
        self._clients = {}  # type: Dict[Tuple[Any, ...], Any]
        self._wires = {}  # type: Dict[Tuple[Any, ...], Wire]
        self._rows = None  # type: Optional[Dict[str, JobRow]]

    @property
    def backend(self) -> str:
        return self._state["backend"]

    @property
    def input_path(self) -> str:
        return self._state["input_path"]

    def __repr__(self) -> str:
        return "BatchJob({!r}, backend={!r}, batches={})".format(self.state_path, self.backend,
                                                                 len(self._state["batches"]))

    # -- submission ---------------------------------------------------------------------------------
    def _create(self, entries: Dict[int, List[bytes]], samples: Dict[int, Any]) -> None:
        """Create the batches of ``entries`` (record index -> its encoded entries).  Before each create call the
        record gets a ``creating`` marker (when, a name unique to the call, how many requests), saved: a
        process that dies before the call's answer is saved leaves it, and the next submission asks the
        engine for the batch that call made (``_recover``) instead of paying for a second one.  On a tagging
        engine (Anthropic) the record's ``tag`` (the name's random part) goes in front of every custom id."""
        stem = os.path.splitext(os.path.basename(self.input_path))[0]
        for index, record in enumerate(self._state["batches"]):
            if record.get("remote") or index not in entries or self._recover(record):
                continue
            engine = _backends.backend(record["backend"])
            tag = secrets.token_hex(4)
            marker = {"at": round(time.time(), 3), "name": "agenthub-{}-{}-{}.jsonl".format(
                stem, index + 1, tag), "requests": len(entries[index])}  # type: Dict[str, Any]
            record["creating"] = marker
            record.pop("tag", None)
            if engine.tagged:  # each custom id sent carries the call's tag: a batch found for it proves its own
                record["tag"] = tag
                entries[index] = engine.tag_entries(entries[index], tag)
            self._save()

            def note(fields: Dict[str, Any], marker: Dict[str, Any] = marker) -> None:
                marker.update(fields)
                self._save()

            record["remote"] = engine.create(self._wire(record), record["model"], record["api"], entries[index],
                                             marker["name"], samples[index], note)
            del record["creating"]
            record["submitted_at"] = _now()
            self._save()  # after each: a crash loses no created batch
            log.info("agenthub.jobs: %s batch %s created (%d rows)", record["backend"],
                     _remote_id(record["remote"]), len(record["ids"]))

    def _recover(self, record: Dict[str, Any]) -> bool:
        """Whether the batch a cut-short create call of ``record`` made was found (and saved as its remote);
        the marker is gone either way (none found: the call created none, and the record is created anew)."""
        marker = record.get("creating")
        if not marker:
            return False
        engine = _backends.backend(record["backend"])
        known = set(_remote_id(b.get("remote")) for b in self._state["batches"] if b.get("remote"))
        known.update(self._state.get("not_ours") or ())  # (batches found before and shown to be another job's)
        if record.get("tag"):  # (the engine proves a batch that ended its own, or another's, by it)
            marker = dict(marker, tag=record["tag"])
        remote = engine.find(self._wire(record), record["api"], marker, known)
        problem = _remote_problem(remote) if remote is not None else None
        if problem is not None:
            raise StreamProtocolError("{}: the batch found for a cut-short create call has no usable id ({})".format(
                record["backend"], problem), client=record["backend"])
        del record["creating"]
        if remote is not None:
            record["remote"] = remote
            record["recovered"] = True  # (on Anthropic maybe another job's: fetch checks its results' tags)
            record["submitted_at"] = _now()
            log.warning("agenthub.jobs: %s batch %s was created before the submission stopped: found, not created "
                        "again (%d rows)", record["backend"], _remote_id(remote), len(record["ids"]))
        self._save()
        return remote is not None

    def _recover_all(self) -> None:
        for record in self._state["batches"]:
            if not record.get("remote"):
                self._recover(record)

    def _resume(self, entries: Dict[int, List[bytes]], samples: Dict[int, Any], records: List[Dict[str, Any]]) -> None:
        """Create the batches a cut-short submission left: the old uncreated records are replaced by the
        new plan of their rows."""
        kept = [b for b in self._state["batches"] if b.get("remote")]
        offset = len(kept)
        self._state["batches"] = kept + records
        _write_state(self.state_path, self._state)
        self._create({offset + i: e for i, e in entries.items()}, {offset + i: s for i, s in samples.items()})

    # -- clients and wires ----------------------------------------------------------------------------
    def _row_of(self, record: Mapping[str, Any]) -> JobRow:
        """A row of this batch's group (the input's own, when its base_url was redacted in the state)."""
        base = record.get("row_base_url")
        if base is not None and "***" in base:
            rows = self._input_rows()
            for rid in record["ids"]:
                if rid in rows:
                    return rows[rid]
            raise ConfigError("the input file {} no longer holds the rows of this batch".format(self.input_path))
        return JobRow(id=record["ids"][0], model=record["model"], messages=[], client_type=record.get("row_client_type"),
                      base_url=base)

    def _client(self, record: Mapping[str, Any]) -> Any:
        row = self._row_of(record)
        return _client_for(row, self._clients)

    def _wire(self, record: Mapping[str, Any]) -> Wire:
        client = self._client(record)
        key = (client.client_type, client.base_url)
        wire = self._wires.get(key)
        if wire is None:
            wire = self._wires[key] = Wire(client.client_type, client.endpoint, self._session)
        return wire

    def _input_rows(self) -> Dict[str, JobRow]:
        """id -> the input's row, as much of it as an output row needs (messages only where a trace wants
        them): memory follows the number of rows, not their size."""
        if self._rows is None:
            rows = {}  # type: Dict[str, JobRow]
            digests = self._state.get("row_sha256")  # (None: a state from before they were recorded)
            typed = self._state.get("output")
            changed = []  # type: List[str]
            if os.path.exists(self.input_path):
                for row in iter_rows(self.input_path):
                    if digests is not None and row.id in digests and digests[row.id] != _row_digest(row):
                        changed.append(row.id)
                    traced = bool(row.config.get("trace_id")) or _output_of(row, typed) is not None  # (a re-ask
                    # round sends the row's messages again)
                    # (an untraced row keeps the extra_body holding credentials: its error is scrubbed of them)
                    extra = {"extra_body": row.config["extra_body"]} if named_secrets(row.config.get("extra_body")) \
                        else {}
                    rows[row.id] = JobRow(id=row.id, model=row.model, messages=row.messages if traced else [],
                                          config=row.config if traced else extra, client_type=row.client_type,
                                          base_url=row.base_url, line=row.line, output_schema=row.output_schema,
                                          inputs=len(row.messages))
            if not os.path.exists(self.input_path) and self._state.get("input_needed"):
                raise ConfigError("the input file {} is not there, and a fetch reads rows of this job from it "
                                  "(their {}): restore it to fetch (nothing was fetched)".format(
                                      self.input_path, ", ".join(self._state["input_needed"])))
            gone = [rid for rid in (digests or ()) if rid not in rows] if os.path.exists(self.input_path) else []
            if changed or gone:
                shown = ", ".join(repr(rid[:60]) for rid in (changed + gone)[:5])
                raise ConfigError("the input file {} changed since its rows were submitted ({} row(s) {}: {}): "
                                  "restore it as submitted to fetch (an output row would otherwise name a request "
                                  "that never ran)".format(self.input_path, len(changed) + len(gone),
                                                           "edited or gone", shown))
            self._rows = rows
        return self._rows

    # -- status --------------------------------------------------------------------------------------
    def _retrieve(self, record: Dict[str, Any]) -> Dict[str, Any]:
        engine = _backends.backend(record["backend"])
        info = engine.retrieve(self._wire(record), record["remote"])
        record["last"] = {"status": info["status"], "state": info["state"], "at": _now()}
        return info

    def status(self) -> BatchStatus:
        """Ask every remote batch how it stands (the last answers are kept in the state file)."""
        if os.path.exists(self.state_path):  # (as saved now: another process may have created batches since)
            self._state = _read_state(self.state_path)
        infos = []  # type: List[BatchInfo]
        for record in self._state["batches"]:
            if not record.get("remote"):
                infos.append(_info(record, None))
                continue
            infos.append(_info(record, self._retrieve(record)))
        self._save_last()
        return _status(infos)

    def wait(self, interval: float = 60.0, timeout: Optional[float] = None,
             progress: Optional[Callable[[BatchStatus], Any]] = None) -> BatchStatus:
        """Poll ``status()`` every ``interval`` seconds until the job ended (or ``timeout`` seconds passed:
        the last status is returned either way).  It stops sooner where polling cannot see the job end: batches
        never created while no process works on the job (a submission cut short, a batch found to be another
        job's) are a ConfigError saying to submit again (a cancelled job's: to finish them live); re-ask rounds a
        fetch planned and did not create, and batches whose only states are ones agenthub does not know
        (``state == "unknown"``), return the status as it is (not done)."""
        if isinstance(interval, bool) or not isinstance(interval, (int, float)) or not 0 <= interval < 1e9:
            raise ConfigError("interval must be a number of seconds from 0 to 1e9 (got {!r})".format(interval))
        if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float))
                                    or not timeout >= 0):
            raise ConfigError("timeout must be None or a number of seconds >= 0 (got {!r})".format(timeout))
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            current = self.status()
            if progress is not None:
                progress(current)
            if current.done or (deadline is not None and time.monotonic() + interval > deadline):
                return current
            if current.state == "submitting" and self._never_created():
                return current  # (only re-ask rounds wait to be created: the next fetch creates them)
            if current.state == "in_progress" and all(i.state in TERMINAL or i.state == "unknown"
                                                      for i in current.batches):
                log.warning("agenthub.jobs: %s: polling stops: every batch that has not ended is in a state agenthub "
                            "does not know (%s); ask `status` later", self.state_path, ", ".join(sorted(
                                {"{} {}".format(i.remote_id, i.status) for i in current.batches
                                 if i.state == "unknown"})))
                return current
            time.sleep(interval)

    def _never_created(self) -> bool:
        """The job is ``submitting`` and no process works on it now: batches never created stay so whatever is
        polled.  True when those are only re-ask rounds (a fetch creates them); a ConfigError when rows of the
        submission are among them (a submission cut short, or rows whose batch was found to be another job's);
        False while another process holds the job (a submit under way may create them)."""
        try:
            lock = _state_lock(self.state_path)
        except ConfigError:
            return False
        try:
            if os.path.exists(self.state_path):
                self._state = _read_state(self.state_path)
        finally:
            lock.release()
        missing = [record for record in self._state["batches"] if not record.get("remote")]
        if not missing:
            return False  # (created meanwhile: the next poll sees them)
        rows = [record for record in missing if "round" not in record]
        if not rows:
            return True
        count = sum(len(record["ids"]) for record in rows)
        if self._state.get("cancelled_at"):
            raise ConfigError(
                "the batch job {} was cancelled with {} row(s) in {} batch(es) never created: waiting cannot end; "
                "finish them live with `agenthub batch run {} -o OUT.jsonl`".format(
                    self.state_path, count, len(rows), self.input_path))
        raise ConfigError(
            "the batch job {} has {} row(s) in {} batch(es) never created (its submission was cut short, or a batch "
            "found for them was another job's) and no process is submitting them: waiting cannot end; run `agenthub "
            "batch submit {} --backend {} --state {}` again (agenthub.jobs.submit with the same input and state_path) "
            "to create them".format(self.state_path, count, len(rows), self.input_path, self.backend,
                                    self.state_path))

    def cancel(self) -> BatchStatus:
        """Cancel every remote batch that has not ended; the status after.  Finished requests keep their
        results (``fetch`` them); the others can be finished live with ``agenthub.jobs.run``."""
        with self._locked():
            return self._cancel()

    def _cancel(self) -> BatchStatus:
        infos = []  # type: List[BatchInfo]
        self._state["cancelled_at"] = _now()  # (typed rows get no new re-ask round: jobs.run finishes them)
        failure = None  # type: Optional[AgentHubError]  # (one batch's failed call keeps no other from cancelling)
        for record in self._state["batches"]:
            try:
                if not record.get("remote"):
                    self._recover(record)  # (a batch whose create call was cut short may exist: cancelled too)
            except AgentHubError as exc:
                failure = failure or exc
        self._drop_uncreated_rounds()
        for record in self._state["batches"]:
            if not record.get("remote"):
                infos.append(_info(record, None))
                continue
            try:
                info = self._retrieve(record)
                if info["state"] not in TERMINAL and info["state"] != "cancelling":
                    info = _backends.backend(record["backend"]).cancel(self._wire(record), record["remote"])
                    record["last"] = {"status": info["status"], "state": info["state"], "at": _now()}
            except AgentHubError as exc:
                failure = failure or exc
                log.error("agenthub.jobs: %s batch %s could not be cancelled (%s: %s)", record["backend"],
                          _remote_id(record["remote"]), type(exc).__name__, exc)
                continue
            infos.append(_info(record, info))
        self._save()
        if failure is not None:
            raise failure
        return _status(infos)

    # -- results -------------------------------------------------------------------------------------
    def fetch(self, output_path: str) -> FetchSummary:
        """Append the results of every ended batch to ``output_path`` (rows it has already are left as they
        are, so fetching again, or after ``agenthub.jobs.run``, writes nothing twice).  The state file and the
        output are locked meanwhile (a second fetch, submit or cancel of the job, or a live run writing the
        output, is refused)."""
        _not_the_job_files(output_path, self.input_path, self.state_path)
        with self._locked():
            lock = OutputLock(output_path)
            try:
                return self._fetch(output_path)
            finally:
                lock.release()

    def _fetch(self, output_path: str) -> FetchSummary:
        self._input_rows()  # an input whose submitted rows changed is refused before anything is asked or written
        done = finished_ids(output_path)
        errored = done - finished_ids(output_path, retry_failed=True)
        summary = FetchSummary(output_path=output_path)
        if not self._state.get("cancelled_at"):
            self._create_rounds()  # re-ask rounds a fetch cut short planned and did not create
        rounds = []  # type: List[Dict[str, Any]]
        failure = None  # type: Optional[AgentHubError]
        with OutputWriter(output_path) as writer:
            for record in self._state["batches"]:
                if not record.get("remote"):
                    summary.pending.extend(record["ids"])
                    continue
                try:
                    info = self._retrieve(record)
                    if info["state"] not in TERMINAL:
                        summary.pending.extend(record["ids"])
                        continue
                    self._fetch_batch(record, info, done, writer, summary,
                                      None if self._state.get("cancelled_at") else rounds)
                except AgentHubError as exc:  # this batch's call failed: the others are still fetched, then it
                    failure = failure or exc  # is raised (its rows written so far stand; a fetch again goes on)
                    log.error("agenthub.jobs: %s batch %s could not be fetched (%s: %s)", record["backend"],
                              _remote_id(record["remote"]), type(exc).__name__, exc)
        if rounds:  # typed rows whose answers did not hold: their next round, at batch price
            self._state["batches"].extend(rounds)
            self._save()
            self._create_rounds()
            for record in rounds:
                summary.pending.extend(record["ids"])
        summary.failed_total = summary.failed + sum(1 for record in self._state["batches"] for rid in record["ids"]
                                                    if rid in errored)
        self._save()
        if failure is not None:
            raise failure
        return summary

    def _create_rounds(self) -> None:
        """Create the re-ask rounds planned and not created yet: each row's request is its messages, then its
        earlier rounds' re-ask turns (``record["typed"]``), with its output type shaped as at submission."""
        from ..types import from_jsonable

        entries = {}  # type: Dict[int, List[bytes]]
        samples = {}  # type: Dict[int, Any]
        for index, record in enumerate(self._state["batches"]):
            if record.get("remote") or "round" not in record:
                continue
            entries[index], samples[index] = self._round_entries(record)
        if entries:
            self._create(entries, samples)

    def _drop_uncreated_rounds(self) -> None:
        """A cancelled job creates no re-ask round: one planned and not created is dropped, and its rows are
        judged again by the next fetch (no round: they are listed as missing, for jobs.run to finish)."""
        dropped = set()  # type: set
        kept = []  # type: List[Dict[str, Any]]
        for record in self._state["batches"]:
            if "round" in record and not record.get("remote"):
                dropped.update(record["ids"])
            else:
                kept.append(record)
        for record in kept:
            if dropped & set(record.get("reasked") or ()):
                record["reasked"] = [rid for rid in record["reasked"] if rid not in dropped]
        self._state["batches"] = kept

    def _round_entries(self, record: Mapping[str, Any]) -> Tuple[List[bytes], Any]:
        """The encoded entries of a re-ask round's rows, and a sample request."""
        from ..types import from_jsonable

        rows = self._input_rows()
        client = self._client(record)
        engine = _backends.backend(record["backend"])
        data = []  # type: List[bytes]
        sample = None  # type: Any
        for rid in record["ids"]:
            row = rows.get(rid)
            output = None if row is None else _output_of(row, self._state.get("output"))
            if row is None or output is None:
                raise ConfigError("the input file {} no longer holds the typed row {!r} of a re-ask round".format(
                    self.input_path, rid[:60]))
            shaped = _shape(client, row, output)
            request = client.plan(list(row.messages) + from_jsonable(record["typed"][rid]["extra"]), shaped.config)
            sample = request if sample is None else sample
            data.append(dumps_entry(engine.entry(record["custom_ids"].get(rid, rid), request, record["api"])))
        return data, sample

    def _fetch_batch(self, record: Dict[str, Any], info: Mapping[str, Any], done: Any, writer: OutputWriter,
                     summary: FetchSummary, rounds: Optional[List[Dict[str, Any]]] = None) -> None:
        engine = _backends.backend(record["backend"])
        client = self._client(record)
        record_parser = client.protocol
        by_custom = {_sent_id(record, rid): rid for rid in record["ids"]}
        mark = record["tag"] + "-" if record.get("tag") else None  # (None: a record from before tags)
        marked = 0  # results carrying this record's tag
        rows = self._input_rows()
        seen = set()  # type: set
        answered = set()  # type: set
        unknown = duplicates = 0
        typed_output = self._state.get("output")
        retries = self._state.get("output_retries", 2)
        reasked = set(record.get("reasked") or ())
        next_round = {}  # type: Dict[str, Any]
        for custom_id, outcome, payload in engine.results(self._wire(record), record["remote"], info):
            if outcome == "bad":
                if not summary.unreadable:
                    log.warning("agenthub.jobs: %s (more such items are counted, not shown)", payload)
                summary.unreadable += 1
                continue
            marked += 1 if mark is not None and custom_id.startswith(mark) else 0
            rid = by_custom.get(custom_id)
            if rid is None:
                unknown += 1
                continue
            if rid in seen:
                duplicates += 1  # the row's first result stands; a repeat is never applied
                continue
            seen.add(rid)
            if outcome == "not_run":
                continue
            answered.add(rid)
            if rid in done or rid in reasked:  # (reasked: in a later round, which writes its row)
                summary.skipped += 1 if rid in done else 0
                continue
            row = rows.get(rid) or JobRow(id=rid, model=record["model"], messages=[])
            output = _output_of(row, typed_output)
            prior = (record.get("typed") or {}).get(rid)
            try:
                out, again = _result_row(row, outcome, payload, output, prior, record, record_parser, client, retries)
            except Exception as exc:  # a value no row can hold (nested past the stack, ...): this row fails, the
                out, again = error_row(row, exc, attempts=1, backend=record["backend"]), None  # fetch goes on (as live)
            if out is not None and isinstance(out.get("error"), dict):  # a provider's error quoting the request: what
                # the row's extra_body holds under a credential's name is *** (as the live client's error has it)
                _scrubbed(out["error"], named_secrets(row.config.get("extra_body")))
            if out is None:
                if rounds is None:  # no new round (the job was cancelled): the row is left for jobs.run
                    answered.discard(rid)
                else:
                    next_round[rid] = again
                continue
            writer.write(out)
            if out["error"] is None:
                summary.done += 1
            else:
                summary.failed += 1
        if mark is not None and record.get("recovered") and unknown and not marked:
            self._not_ours(record, unknown)
        self._after_results(record, engine, summary, answered, done, unknown, duplicates, reasked, next_round, rounds)

    def _not_ours(self, record: Dict[str, Any], results: int) -> None:
        """A batch found for a cut-short create call whose results carry another call's tag is another job's
        (two parts of one file, submitted at once with the same key): none of them was applied (they name
        no request of this record), and its rows go back to be created (``submit`` again), never again
        taking that batch for theirs.  Raised: a ConfigError saying so."""
        batch_id = _remote_id(record["remote"])
        self._state.setdefault("not_ours", []).append(batch_id)
        for name in ("recovered", "tag", "fetched_at"):
            record.pop(name, None)
        record.update(remote=None, submitted_at=None, last=None)
        raise ConfigError("{} batch {}, found for a create call of this job that was cut short, is another job's: "
                          "none of its {} result(s) carries the tag of that call, and none was applied; its {} "
                          "row(s) are left to send: submit the input again with the same state file".format(
                              record["backend"], batch_id, results, len(record["ids"])))

    def _after_results(self, record: Dict[str, Any], engine: Any, summary: FetchSummary, answered: Set[str],
                       done: Any, unknown: int, duplicates: int, reasked: Set[str], next_round: Dict[str, Any],
                       rounds: Optional[List[Dict[str, Any]]]) -> None:
        if unknown:
            log.warning("agenthub.jobs: %d result(s) of %s batch %s name no request of it: ignored", unknown,
                        record["backend"], _remote_id(record["remote"]))
        if duplicates:
            log.warning("agenthub.jobs: %d result(s) of %s batch %s repeat a row already answered: ignored",
                        duplicates, record["backend"], _remote_id(record["remote"]))
        summary.unknown += unknown
        summary.duplicates += duplicates
        summary.missing.extend(rid for rid in record["ids"] if rid not in answered and rid not in done)
        record["fetched_at"] = _now()
        if next_round and rounds is not None:
            record["reasked"] = sorted(reasked | set(next_round))
            ids = [rid for rid in record["ids"] if rid in next_round]
            whole = dict(record, ids=ids, typed=next_round)
            sized = self._round_entries(whole)[0]  # split over the engine's limits as the entries will be
            for chunk in engine.split([(rid, data, 0) for rid, data in zip(ids, sized)]):
                chosen = [ids[i] for i in chunk]
                rounds.append(dict(
                    {k: record[k] for k in ("backend", "client_type", "model", "api", "base_url", "row_client_type",
                                            "row_base_url") if k in record},
                    ids=chosen, custom_ids={rid: record["custom_ids"][rid] for rid in chosen
                                            if rid in record["custom_ids"]},
                    remote=None, submitted_at=None, last=None,
                    round=max(int(next_round[rid]["attempt"]) for rid in chosen) + 1,
                    typed={rid: next_round[rid] for rid in chosen}))

    def _save(self) -> None:
        _write_state(self.state_path, self._state)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """The state file locked, and read again (another process may have created batches since this job
        was loaded: working from the older copy would create them again, and saving it would drop them)."""
        lock = _state_lock(self.state_path)
        try:
            if os.path.exists(self.state_path):
                self._state = _read_state(self.state_path)
            yield
        finally:
            lock.release()

    def _save_last(self) -> None:
        """Keep the batches' last answers (``status``) in the state file without overwriting what another
        process saved meanwhile: the file is read again under its lock and only ``last`` is set, on the
        records of the same remote batch.  While another process holds the lock nothing is saved (the last
        answers are a courtesy; that process saves its own)."""
        try:
            lock = _state_lock(self.state_path)
        except ConfigError:
            return
        try:
            if not os.path.exists(self.state_path):  # (removed meanwhile: written anew, as this job knows it)
                _write_state(self.state_path, self._state)
                return
            state = _read_state(self.state_path)
            last = {_remote_id(b.get("remote")): b.get("last") for b in self._state["batches"] if b.get("remote")}
            for record in state["batches"]:
                rid = _remote_id(record.get("remote"))
                if rid in last and last[rid] is not None:
                    record["last"] = last[rid]
            _write_state(self.state_path, state)
        finally:
            lock.release()


def _result_row(row: JobRow, outcome: str, payload: Any, output: Any, prior: Any, record: Mapping[str, Any],
                record_parser: Any, client: Any, retries: int) -> Tuple[Optional[Dict[str, Any]], Any]:
    """(the output row of one result, None), or (None, what its next re-ask round needs) for a typed row."""
    if outcome == "ok" and output is not None:
        return typed_answer(row, record_parser, client, payload, record["backend"], output, prior, retries)
    if outcome == "ok":
        return answer_row(row, record_parser, client.client_type, payload, record["backend"]), None
    status, body = payload
    out = failed_row(row, client.client_type, status, body, record["backend"])
    if prior:  # a re-ask round's request failed: the earlier rounds were paid for
        out.update(attempts=int(prior["attempt"]) + 1, usage_metadata=prior.get("usage"),
                   cost_usd=prior.get("cost_usd"))
    return out, None


def _not_the_job_files(output_path: str, input_path: str, state_path: str) -> None:
    """ConfigError when ``output_path`` is the job's input or state file (a link to one too): the input's rows
    would be read as answers (every result skipped, none written), the state would be written over."""
    from .runner import _same_file

    for path, what in ((input_path, "input"), (state_path, "state")):
        if _same_file(output_path, path):
            raise ConfigError("the output file must not be the {} file ({})".format(what, path))


def _sent_id(record: Mapping[str, Any], rid: str) -> str:
    """The custom id row ``rid`` of the batch ``record`` was sent under: its own id, or the one made for it
    (``custom_ids``), behind the create call's tag when the record has one."""
    custom = str(record["custom_ids"].get(rid, rid))
    return "{}-{}".format(record["tag"], custom) if record.get("tag") else custom


def _remote_id(remote: Optional[Mapping[str, Any]]) -> Optional[str]:
    if not remote:
        return None
    return remote.get("batch_id") or remote.get("batch_name")


def _info(record: Mapping[str, Any], info: Optional[Mapping[str, Any]]) -> BatchInfo:
    if info is None:
        return BatchInfo(record["backend"], record["model"], record["api"], len(record["ids"]), None, None,
                         "unsubmitted")
    counts = {k: v for k, v in (info.get("counts") or {}).items() if v is not None}
    return BatchInfo(record["backend"], record["model"], record["api"], len(record["ids"]),
                     _remote_id(record.get("remote")), info.get("status"), info["state"], counts,
                     list(info.get("errors") or []))


def _status(infos: List[BatchInfo]) -> BatchStatus:
    rows = sum(i.rows for i in infos)
    if any(i.state == "unsubmitted" for i in infos):
        state = "submitting"
    elif all(i.state in TERMINAL for i in infos):
        state = "ended"
    else:
        state = "in_progress"
    return BatchStatus(state, rows, infos)
