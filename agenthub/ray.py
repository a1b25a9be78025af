"""Bulk jobs on Ray Data (the optional extra ``ray``: ``pip install '.[ray]'``, Python >= 3.9).

``Predictor`` is a callable class for ``ray.data.Dataset.map_batches``::

    import ray
    from agenthub.ray import Predictor

    ds = ray.data.from_items(rows)          # each row: the job-file fields (id, model, messages, config, ...)
    out = ds.map_batches(Predictor, fn_constructor_kwargs={"model": "gpt-5.4-mini", "rpm": 600, "shares": 4},
                         concurrency=4, batch_size=16)

Each actor builds one client per route on first use and keeps it, answers its batch from a small
thread pool (``workers`` threads) and paces itself with its share of the budget (``rpm / shares``,
``tpm / shares``: pass ``shares`` = the number of actors).  A row's own ``model`` (and
``client_type``, ``base_url``) wins over the constructor's.  ``limiter_store="sqlite:///path"`` or
``"redis://host:port/db"`` (and ``limiter_key``) makes every actor draw from one shared limiter of
``rpm`` / ``tpm`` instead of its static share: an idle actor leaves its turns to the busy ones
(``shares`` is then ignored; see docs/many-workers.md).  A batch may instead carry one column
``text`` of raw job-file lines (what ``agenthub.jobs.run(..., engine="ray")`` feeds it).

The output columns are those of an output row: ``id, model, message, usage_metadata, finish_reason,
cost_usd, error, attempts, backend, finished_at``, with ``message``, ``usage_metadata`` and ``error``
as JSON text (one Arrow schema cannot hold every message shape); ``to_row`` turns a result row back
into the output line.

This module is the only one that imports ray (``run_job``, lazily); ``Predictor`` itself needs none.
"""

import json
import os
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from .errors import ConfigError
from .jobs.jobfile import OUTPUT_KEYS, JobFile, JobRow, OutputWriter, error_row, iter_rows, parse_line
from .jobs.runner import JobSummary, Job, Progress, build_clients, default_client, resume, row_tokens
from .limiter import RateLimiter
from .stream import surrogates_escaped
from ._jsondepth import loads as _json_loads

__all__ = ["Predictor", "run_job", "to_row", "JSON_COLUMNS"]

#: output columns carried as JSON text
JSON_COLUMNS = ("message", "usage_metadata", "error")


def _plain(value: Any) -> Any:
    """Python values from what Ray hands a batch (numpy arrays, numpy scalars, Arrow-merged dicts whose
    missing keys came back as None)."""
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        value = value.tolist()
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items() if v is not None}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


class _Clients(dict):  # type: ignore[type-arg]
    """route -> client, each built once, on first use."""

    def __init__(self, factory: Callable[..., Any]) -> None:
        super().__init__()
        self._factory = factory
        self._lock = threading.Lock()

    def __missing__(self, route: Tuple[str, Optional[str], Optional[str]]) -> Any:
        with self._lock:
            if route not in self:
                dict.__setitem__(self, route, self._factory(*route))
            return dict.__getitem__(self, route)


class Predictor(object):
    """A callable class for ``Dataset.map_batches`` (see the module doc)."""

    def __init__(self, model: Optional[str] = None, client_type: Optional[str] = None, base_url: Optional[str] = None,
                 workers: int = 4, rpm: Optional[float] = None, tpm: Optional[float] = None, *, shares: int = 1,
                 max_retries: int = 2, client_factory: Optional[Callable[..., Any]] = None,
                 limiter_store: Optional[str] = None, limiter_key: Optional[str] = None) -> None:
        if not isinstance(workers, int) or isinstance(workers, bool) or workers < 1:
            raise ConfigError("workers must be an int >= 1")
        if not isinstance(shares, int) or isinstance(shares, bool) or shares < 1:
            raise ConfigError("shares must be an int >= 1 (the number of actors sharing rpm / tpm)")
        self.model = model
        self.client_type = client_type
        self.base_url = base_url
        self.workers = workers
        if limiter_store is not None:  # one pace for every actor, kept in the shared store
            self.limiter = RateLimiter(rpm, tpm, store=limiter_store, key=limiter_key)
        else:
            self.limiter = RateLimiter(rpm, tpm).share(shares)
        self._clients = _Clients(client_factory or default_client)
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix="agenthub-ray")
        self._job = Job(None, self._clients, None, self.limiter, JobSummary(),  # type: ignore[arg-type]
                         Progress(False, 0, 0), max_retries, backend="ray")

    def _row(self, fields: Dict[str, Any], index: int) -> Any:
        """A JobRow, or the error row of a row that is not valid."""
        if self.model is not None and not fields.get("model"):
            fields["model"] = self.model
        if fields.get("client_type") is None and self.client_type is not None:
            fields["client_type"] = self.client_type
        if fields.get("base_url") is None and self.base_url is not None:
            fields["base_url"] = self.base_url
        try:
            return parse_line(fields, index + 1)
        except ConfigError as exc:
            rid = fields.get("id") if isinstance(fields.get("id"), str) and fields.get("id") else "row-{}".format(index)
            stub = JobRow(id=rid, model=str(fields.get("model") or ""), messages=[], line=index + 1)
            return error_row(stub, exc, attempts=0, backend="ray")

    def _invalid(self, index: int, reason: str) -> Dict[str, Any]:
        """The error row of a ``text`` line that is no job line (not JSON, not an object)."""
        stub = JobRow(id="row-{}".format(index), model=self.model or "", messages=[], line=index + 1)
        return error_row(stub, ConfigError(reason), attempts=0, backend="ray")

    def rows(self, batch: Any) -> List[Any]:
        """The batch's rows: from a ``text`` column of job lines, or from job-file field columns."""
        if isinstance(batch, Mapping):  # batch_format "numpy" / "default": column -> array
            columns = {str(k): v for k, v in batch.items()}
        else:  # a pandas DataFrame
            columns = {str(k): v for k, v in batch.to_dict("list").items()}
        count = len(next(iter(columns.values()))) if columns else 0
        out = []  # type: List[Any]
        for i in range(count):
            if "text" in columns and "messages" not in columns:
                try:
                    fields = _json_loads(_plain(columns["text"][i]))
                except (ValueError, RecursionError) as exc:  # (its row's error, in a job file's words)
                    out.append(self._invalid(i, "not valid JSON ({})".format(exc) if isinstance(exc, ValueError)
                                             else "nested too deeply to be read as JSON"))
                    continue
                if not isinstance(fields, dict):
                    out.append(self._invalid(i, "a job line must be a JSON object, got {}".format(
                        type(fields).__name__)))
                    continue
            else:
                fields = {name: _plain(values[i]) for name, values in columns.items()}
            out.append(self._row(fields, i))
        return out

    def _answer(self, row: Any) -> Dict[str, Any]:
        if isinstance(row, dict):  # already an error row
            return row
        out = self._job.one(row)
        if out is None:  # only when stopping; an actor never stops mid-batch, but say so if it does
            return error_row(row, ConfigError("stopped before the row was sent"), attempts=0, backend="ray")
        return out

    def __call__(self, batch: Any) -> Dict[str, List[Any]]:
        answers = list(self._pool.map(self._answer, self.rows(batch)))
        return columns_of(answers)


def columns_of(rows: List[Dict[str, Any]]) -> Dict[str, List[Any]]:
    """Output rows as columns (``message``, ``usage_metadata``, ``error`` as JSON text)."""
    out = {key: [] for key in OUTPUT_KEYS}  # type: Dict[str, List[Any]]
    for row in rows:
        for key in OUTPUT_KEYS:
            value = row.get(key)
            out[key].append(surrogates_escaped(json.dumps(value, ensure_ascii=False, allow_nan=False))
                            if key in JSON_COLUMNS else value)  # (Arrow strings are UTF-8: a server's "\ud83d" escaped)
    return out


def to_row(result: Mapping[str, Any]) -> Dict[str, Any]:
    """The output line of one result row of ``Predictor`` (its JSON columns decoded)."""
    out = {}  # type: Dict[str, Any]
    for key in OUTPUT_KEYS:
        value = _plain(result.get(key)) if key not in JSON_COLUMNS else result.get(key)
        if key in JSON_COLUMNS:
            value = _json_loads(value) if isinstance(value, str) else value
        elif key == "cost_usd" and value is not None:
            value = None if value != value else float(value)  # NaN: how a null float may come back
        elif key == "attempts" and value is not None:
            value = int(value)
        out[key] = value
    return out


def run_job(input_path: str, output_path: str, *, job: JobFile, workers: int = 8, rpm: Optional[float] = None,
            tpm: Optional[float] = None, retry_failed: bool = False, progress: Any = None,
            client_factory: Optional[Callable[..., Any]] = None, max_retries: int = 2, actors: int = 2,
            batch_size: Optional[int] = None, num_cpus: float = 0.25, limiter_store: Optional[str] = None,
            limiter_key: Optional[str] = None) -> JobSummary:
    """``agenthub.jobs.run(..., engine="ray")``: the rows without an output row as a Ray Data pipeline of
    ``actors`` Predictors (``workers`` threads in all, the budget shared among them; each actor asks
    for ``num_cpus`` CPUs, a fraction: it waits on the network, and the read stage needs a CPU too);
    results are appended to the output as they stream back, so the job stays resumable.
    ``limiter_store``: the actors share one limiter kept there (see ``Predictor``)."""
    try:
        import ray
    except ImportError:
        raise ConfigError("engine='ray' needs Ray Data: pip install '.[ray]' from agenthub's checkout (Python >= 3.9)") from None
    if not isinstance(actors, int) or isinstance(actors, bool) or actors < 1:
        raise ConfigError("actors must be an int >= 1")
    started = time.monotonic()
    skipped, routes, counts = resume(job, output_path, retry_failed)
    build_clients(routes, client_factory, None, counts)  # every bad route listed before anything is sent
    if limiter_store is not None:  # a bad or unreachable store refused here, before anything is sent
        RateLimiter(rpm, tpm, store=limiter_store, key=limiter_key).store.close()
    summary = JobSummary(total=len(job), skipped=skipped)
    errored = job.ids.errored_count()  # (rows skipped for an error row written before)
    show = Progress(progress, summary.total, summary.skipped)
    counter = Job(None, {}, None, RateLimiter(), summary, show, 0)  # type: ignore[arg-type]
    writer = OutputWriter(output_path, retry_failed=retry_failed, retry_ids=job.ids)
    folder = tempfile.mkdtemp(prefix="agenthub-ray-")
    todo_path = os.path.join(folder, "todo.jsonl")
    try:
        for number, row in job.invalid:
            if job.ids.mark_done(row["id"]):  # an invalid line is never sent (iter_rows below does not check again)
                writer.write(dict(row))
                summary.failed += 1
        count = 0
        with open(todo_path, "w", encoding="utf-8") as todo:
            for row in iter_rows(input_path, check=False, stop=job.size):
                if not job.ids.is_done(row.id):
                    todo.write(json.dumps(row.to_json(), ensure_ascii=False) + "\n")
                    count += 1
        if count:
            if not ray.is_initialized():
                ray.init(ignore_reinit_error=True, log_to_driver=False)
            threads = max(1, -(-workers // actors))
            size = batch_size or threads * 2
            ds = ray.data.read_text(todo_path).map_batches(
                Predictor, fn_constructor_kwargs={"workers": threads, "rpm": rpm, "tpm": tpm, "shares": actors,
                                                  "max_retries": max_retries, "client_factory": client_factory,
                                                  "limiter_store": limiter_store, "limiter_key": limiter_key},
                concurrency=actors, batch_size=size, batch_format="numpy", num_cpus=num_cpus)
            for batch in ds.iter_batches(batch_size=None, batch_format="numpy"):
                keys = list(batch)
                for i in range(len(batch[keys[0]]) if keys else 0):
                    out = to_row({k: batch[k][i] for k in keys})
                    writer.write(out)
                    counter.count(out)
    finally:
        writer.close()
        for name in os.listdir(folder):
            os.unlink(os.path.join(folder, name))
        os.rmdir(folder)
        summary.wall_s = time.monotonic() - started
        summary.failed_total = summary.failed + errored
    show.end(summary)
    return summary


_ = row_tokens  # re-exported for callers summing a Ray result's tokens
