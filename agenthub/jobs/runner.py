"""The live runner: a job file sent row by row through a thread pool, within one shared RateLimiter.

``run(input_path, output_path)`` checks the whole file and every route first (an unknown model, a
missing key, an embedding config on a chat model: all listed in one ConfigError, nothing sent), skips
the rows that already have a row in the output, and appends one output row per finished row, flushed
at once, so a run killed at any moment (``kill -9`` included) re-sends at most the rows that were in
flight when it is run again.  A row that fails for good gets an error row; the job goes on.

Retries are the client's attempt loop (``agenthub.attempts``; the runner's own clients get
``max_retries``, a ``client_factory``'s keep theirs): the job's hook (``_RowHook``, registered for the
run with ``agenthub.attempts.register`` and acting only on this job's rows) makes each attempt take its
turn from the limiter inside that loop (unless the client reports to the limiter already), a 429
pauses every worker for its Retry-After, and ``attempts`` in the output row counts the sends, every
route of a failover counted.

Ctrl-C (KeyboardInterrupt in the calling thread): no new row is started; the rows in flight may
finish for ``grace`` seconds, then (or at a second Ctrl-C) they are aborted and get no row (a rerun
sends them).  ``run`` then returns a JobSummary with ``interrupted=True``.

``fallbacks=[...]`` (model names or AutoLLMClients) is given to every row's client
(``AutoLLMClient(fallbacks=...)``: docs/reliability.md, "Failover").  A row's output keeps the row's ``model``; the
endpoint that answered is its ``route`` ({"model", "client_type", "host"}, the call's own, whatever other
threads do), its ``cost_usd`` is priced as that model, and ``JobSummary.routes`` counts rows per endpoint.  On Ray (``engine="ray"``) the
actors' clients get the same fallbacks (``fallback_client`` is picklable); ``routes`` stays empty there.
"""

import functools
import importlib
import os
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple, Union

from .._controls import dollars
from .._redact import shown_url
from ..attempts import Attempt, register, unregister
from ..client import AutoLLMClient
from ..errors import (AgentHubError, BudgetExceededError, ConfigError, OutputRefusedError, OutputValidationError,
                      TransportError)
from ..limiter import LimiterHook, RateLimiter, endpoint_key, estimate_tokens, has_hook  # noqa: F401  (jobs.runner.estimate_tokens)
from ..catalog import call_cost
from ..stream import collect
from ..telemetry import child_span, workflow_span  # a span per job and per row (no-ops uninstrumented)
from ..output.parse import ParseStream, Parsed
from ..types import USAGE_KEYS, to_jsonable
from ..validate import check_config
from .jobfile import (JobFile, JobRow, OutputWriter, _config_key, error_row, iter_rows, mark_finished, output_row,
                      read_jobs, rows_from)
from .jobfile import OutputLock, error_of, file_mentions, vectors_short

__all__ = ["run", "JobSummary", "build_clients", "row_tokens"]

Route = Tuple[str, Optional[str], Optional[str]]
#: engines other than the live one: the module whose ``run_job`` runs a job file there
ENGINES = {"ray": "agenthub.ray"}
#: seconds between plain progress lines when stderr is not a terminal
PLAIN_INTERVAL = 10.0
#: seconds between redraws of the progress line on a terminal
TTY_INTERVAL = 0.25
#: the bytes of a job file's first lines whose rows the up-front check keeps for the run (read once, not twice)
HEAD_BYTES = 2 << 20
#: a wait before a retry at least this long (a 429's Retry-After pause, a long backoff) is announced
ANNOUNCE_WAIT = 3.0


@dataclass
class JobSummary:
    """What one ``run`` did.  ``done``: rows answered now; ``failed``: error rows written now (invalid
    lines included); ``skipped``: rows that already had a row in the output; ``tokens`` and
    ``cost_usd``: of this run's answers, and of its typed rows that failed after answers (paid for: the re-asks
    ran out, or a re-ask's request failed) (``unpriced`` rows had no price, so cost_usd leaves them out; a row
    answered from the ResponseCache costs 0.0: ``cache_hits`` counts them, and the row says ``"cache": "hit"``)."""

    done: int = 0
    failed: int = 0
    skipped: int = 0
    tokens: int = 0
    cost_usd: float = 0.0
    wall_s: float = 0.0
    total: int = 0
    unpriced: int = 0
    interrupted: bool = False
    #: answered rows replayed from the ResponseCache (``cache=``): they cost 0.0
    cache_hits: int = 0
    #: answered rows per endpoint, ``"model (client_type, host)"`` -> rows (with ``fallbacks=``: which route answered)
    routes: Dict[str, int] = field(default_factory=dict)
    #: this job's rows whose row in the output is an error row, written now (``failed``) or before (skipped)
    failed_total: int = 0

    @property
    def left(self) -> int:
        """Rows with no row in the output after this run (interrupted ones)."""
        return max(0, self.total - self.done - self.failed - self.skipped)


def row_tokens(usage: Any) -> int:
    if not isinstance(usage, dict):
        return 0
    return sum(v for k in USAGE_KEYS for v in (usage.get(k),)
               if isinstance(v, int) and not isinstance(v, bool) and v > 0)


def _route_name(route: Route) -> str:
    model, client_type, base_url = route
    named = (("client_type", client_type), ("base_url", shown_url(base_url)))  # (never its user:password, ?key=)
    extra = ", ".join("{}={}".format(k, v) for k, v in named if v)
    return repr(model) + (" ({})".format(extra) if extra else "")


def _lines_text(lines: List[int], count: Optional[int] = None) -> str:
    count = len(lines) if count is None else count
    shown = ", ".join(str(n) for n in lines[:5])
    return "line{} {}{}".format("s" if count > 1 else "", shown,
                                " and {} more".format(count - 5) if count > 5 else "")


def default_client(model: str, client_type: Optional[str], base_url: Optional[str],
                   max_retries: int = 2) -> AutoLLMClient:
    return AutoLLMClient(model, client_type=client_type, base_url=base_url, max_retries=max_retries)


def build_clients(routes: Dict[Route, List[int]], factory: Optional[Callable[..., Any]] = None,
                  embedding_lines: Optional[Dict[Route, List[int]]] = None,
                  counts: Optional[Dict[Route, int]] = None) -> Dict[Route, Any]:
    """One client per (model, client_type, base_url), built before anything is sent; every route that
    cannot be built is listed (with its lines) in one ConfigError."""
    make = factory or default_client
    clients = {}  # type: Dict[Route, Any]
    problems = []  # type: List[str]
    for route, lines in routes.items():
        try:
            client = make(*route)
        except ConfigError as exc:
            problems.append("{} ({}): {}".format(_route_name(route), _lines_text(lines, (counts or {}).get(route)), exc))
            continue
        clients[route] = client
        emb = (embedding_lines or {}).get(route)
        endpoint = getattr(client, "_endpoint", None)
        if emb and endpoint is not None and not endpoint.quirks.get("embeddings"):
            problems.append("{} ({}): embedding_config on a model that is not an embedding model (use an "
                            "embedding model, or client_type='openai-embedding')".format(_route_name(route),
                                                                                        _lines_text(emb)))
    if problems:
        raise ConfigError("{} route(s) of the job cannot be used; nothing was sent:\n  {}".format(
            len(problems), "\n  ".join(problems)))
    return clients


class Progress(object):
    """The progress line (terminal), plain lines (no terminal), a callable, or nothing."""

    def __init__(self, progress: Any, total: int, skipped: int, stream: Any = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.callback = progress if callable(progress) else None
        if progress is False:
            self.mode = "off"
        elif self.callback is not None:
            self.mode = "callable"
        else:
            isatty = getattr(self.stream, "isatty", None)
            self.mode = "tty" if isatty is not None and isatty() else "plain"
        self.total = total
        self.skipped = skipped
        self.started = time.monotonic()
        self.last = 0.0
        self.lock = threading.Lock()
        self.announced_until = 0.0  # the end of the last wait announced (monotonic)

    def snapshot(self, summary: JobSummary, final: bool = False) -> Dict[str, Any]:
        elapsed = time.monotonic() - self.started
        finished = summary.done + summary.failed
        todo = self.total - self.skipped
        rate = finished / elapsed if elapsed > 0 else 0.0
        eta = (todo - finished) / rate if rate > 0 else None
        return {"done": summary.done, "failed": summary.failed, "skipped": summary.skipped, "total": self.total,
                "rate": rate, "eta_s": eta, "tokens": summary.tokens, "cost_usd": summary.cost_usd,
                "elapsed_s": elapsed, "final": final}

    def text(self, snap: Dict[str, Any]) -> str:
        eta = snap["eta_s"]
        eta_text = "--" if eta is None else _duration(eta)
        failed = ", {} failed".format(snap["failed"]) if snap["failed"] else ""
        skipped = ", {} skipped".format(snap["skipped"]) if snap["skipped"] else ""
        return "agenthub.jobs: {}/{} rows{}{}, {:.1f} rows/s, ETA {}, {:,} tokens, ${}".format(
            snap["done"] + snap["failed"] + snap["skipped"], snap["total"], failed, skipped, snap["rate"], eta_text,
            snap["tokens"], dollars(snap["cost_usd"]))

    def row(self, summary: JobSummary) -> None:
        """After each finished row (any worker thread)."""
        if self.mode == "off":
            return
        with self.lock:
            if self.mode == "callable":
                self.callback(self.snapshot(summary))
                return
            now = time.monotonic()
            if now - self.last < (TTY_INTERVAL if self.mode == "tty" else PLAIN_INTERVAL):
                return
            self.last = now
            self._draw(summary)

    def _draw(self, summary: JobSummary, final: bool = False) -> None:
        line = self.text(self.snapshot(summary, final))
        try:
            if self.mode == "tty":
                self.stream.write("\r\x1b[2K" + line + ("\n" if final else ""))
            else:
                self.stream.write(line + "\n")
            self.stream.flush()
        except (OSError, ValueError):  # a closed stderr never stops the job
            self.mode = "off"

    def waiting(self, row_id: Any, error: Any, seconds: float, asked: bool, attempt: int) -> None:
        """A worker is about to wait ``seconds`` before retrying a row: one line when the wait is long and
        not already announced (workers hit by one pause print one line), on a terminal or not."""
        if self.mode not in ("tty", "plain") or seconds < ANNOUNCE_WAIT:
            return
        with self.lock:
            until = time.monotonic() + seconds
            if until <= self.announced_until + 1.0:
                return
            self.announced_until = until
            status = getattr(error, "status", None)
            line = "agenthub.jobs: row {}: {}{}: waiting {:g} s{} before attempt {}".format(
                row_id, type(error).__name__, " (status {})".format(status) if status is not None else "",
                round(seconds, 1), " as the server asked (Retry-After)" if asked else "", attempt + 1)
            try:
                self.stream.write(("\r\x1b[2K" if self.mode == "tty" else "") + line + "\n")
                self.stream.flush()
            except (OSError, ValueError):
                self.mode = "off"

    def end(self, summary: JobSummary) -> None:
        if self.mode == "off":
            return
        with self.lock:
            if self.mode == "callable":
                self.callback(self.snapshot(summary, final=True))
            else:
                self._draw(summary, final=True)

    def say(self, text: str) -> None:
        if self.mode in ("tty", "plain"):
            with self.lock:
                try:
                    self.stream.write(("\n" if self.mode == "tty" else "") + text + "\n")
                    self.stream.flush()
                except (OSError, ValueError):
                    pass


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds >= 3600:
        return "{}h{:02d}m".format(seconds // 3600, seconds % 3600 // 60)
    if seconds >= 60:
        return "{}m{:02d}s".format(seconds // 60, seconds % 60)
    return "{}s".format(seconds)


class Job(object):
    """The shared state of one run: the row source, the writer, the limiter, the counters, the stops."""

    job_span = None  # type: Any  # the job's telemetry span (agenthub.telemetry): each row's span is its child
    output = None  # type: Any  # run(output=...): the output type of the rows without their own output_schema
    output_retries = 2  # the re-asks of a typed row (client.parse's ``retries``)
    head_line = 0  # the last line of the job file's head (``JobFile.head``): its rows come as the check left them

    def __init__(self, rows: Any, clients: Dict[Route, Any], writer: OutputWriter, limiter: RateLimiter,
                 summary: JobSummary, progress: Progress, max_retries: int, backend: str = "live",
                 per_thread: Optional[Callable[..., Any]] = None, pauses_only: bool = False) -> None:
        #: the limiter is the run's own, without rpm or tpm: a turn would book nothing (every slot is "now") and
        #: its counts are seen by no one, so an attempt only waits out the pauses (a 429's, exhausted headers')
        self.pauses_only = pauses_only
        self.rows = rows
        self.clients = clients
        self.writer = writer
        self.limiter = limiter
        self.summary = summary
        self.progress = progress
        self.max_retries = max_retries
        self.backend = backend
        self.take_lock = threading.Lock()
        self.count_lock = threading.Lock()
        self.stop_new = threading.Event()  # no new row is started
        self.stop_hard = threading.Event()  # rows in flight are aborted
        self.inflight = {}  # type: Dict[int, Any]
        self.error = None  # type: Optional[BaseException]
        self.per_thread = per_thread  # with fallbacks: each thread builds its own clients
        self.local = threading.local()  # the row this thread is sending: pace (bool), call (its Attempt)
        self.row_hook = _RowHook(self)
        self.registered = False  # the row hook is registered at the first row, unregistered when the run ends
        self.running = 0  # workers started and not yet left (``_drive`` sets it before starting them)
        self.all_left = threading.Event()
        self.checked_streams = {}  # type: Dict[int, Tuple[Any, Any]]  # id(client) -> (client, _checked_streams())
        self.configs = {}  # type: Dict[Any, Dict[str, Any]]  # _config_key -> check_config's copy (read only)
        self.paces = {}  # type: Dict[int, Tuple[Any, bool]]  # id(client) -> (client, not has_hook(client, limiter))

    def take(self) -> Optional[JobRow]:
        if self.stop_new.is_set():
            return None
        with self.take_lock:
            if self.stop_new.is_set():
                return None
            return next(self.rows, None)

    def worker(self) -> None:
        try:
            self._work()
        finally:
            self.left()

    def left(self) -> None:
        """A worker leaves (last statement of its thread): the count ``_drive`` waits on, which a
        KeyboardInterrupt in the main thread cannot falsify (``Thread.is_alive`` can: bpo-45274)."""
        with self.count_lock:
            self.running -= 1
            if self.running <= 0:
                self.all_left.set()

    def _work(self) -> None:
        try:
            while True:
                row = self.take()
                if row is None:
                    return
                with child_span(self.job_span, "agenthub.jobs.row", {"agenthub.job.row_id": str(row.id)}) as span:
                    out = self.one(row)
                    if out is not None and isinstance(out.get("error"), dict):
                        span.set_error(str(out["error"].get("type") or "error"))
                if out is None:  # stopped before it was sent, or aborted: no row, a rerun sends it
                    continue
                self.writer.write(out)
                self.count(out)
        except BaseException as exc:  # the output file failing (disk full): stop everything, say why
            self.error = exc
            self.stop_new.set()
            self.stop_hard.set()
            self.abort_all()

    def count(self, out: Dict[str, Any]) -> None:
        summary = self.summary
        with self.count_lock:
            if out["error"] is None:
                summary.done += 1
                summary.tokens += row_tokens(out["usage_metadata"])
                if out.get("cache") == "hit":
                    summary.cache_hits += 1
                if out["cost_usd"] is None:
                    summary.unpriced += 1
                else:
                    summary.cost_usd += out["cost_usd"]
            else:
                summary.failed += 1
                if out.get("cost_usd") is not None:  # a typed row that failed after answers: they were paid for
                    summary.tokens += row_tokens(out["usage_metadata"])
                    summary.cost_usd += out["cost_usd"]
        self.progress.row(summary)

    def client(self, route: Route) -> Any:
        if self.per_thread is None:
            return self.clients[route]
        mine = self.local.__dict__.setdefault("clients", {})
        if route not in mine:
            mine[route] = self.clients.pop(route, None) or self.per_thread(*route)  # the first thread reuses the checked one
        return mine[route]

    def one(self, row: JobRow) -> Optional[Dict[str, Any]]:
        """The output row of ``row`` (None: stopped before sending, or aborted).  The client's attempt loop
        retries; ``_RowHook`` paces each attempt and reports the call (its attempts, the answering route)."""
        try:
            client = self.client((row.model, row.client_type, row.base_url))
        except ConfigError as exc:  # a client built on first use (Ray actors) that cannot be
            return error_row(row, exc, attempts=0, backend=self.backend)
        if self.stop_new.is_set():
            return None
        if not self.registered:  # (register keeps one: a second thread's call is harmless)
            register(self.row_hook)
            self.registered = True
        local = self.local
        pace = self.paces.get(id(client))
        if pace is None:
            pace = self.paces[id(client)] = (client, not has_hook(client, self.limiter))
        local.pace = pace[1]  # a client reporting to this limiter paces itself
        local.call = None
        local.row_id = row.id
        me = threading.get_ident()
        output = row.output_schema if row.output_schema is not None else self.output
        typed = None  # type: Optional[_TypedRow]
        try:
            if output is not None:  # typed output: client.parse's loop, each of its calls a row call as below
                typed = _TypedRow(self, client, me)
                parsed = ParseStream(typed, row.messages, output, row.config, self.output_retries).result()
                typed.close_call()
                return self.typed_row(row, client, typed, parsed)
            stream = self.stream(client, row)
            self.inflight[me] = stream
            if self.stop_hard.is_set():
                return None
            message = collect(stream)
        except (OutputValidationError, OutputRefusedError) as exc:
            assert typed is not None
            typed.close_call()
            out = error_row(row, exc, attempts=typed.sent(), backend=self.backend)
            out["usage_metadata"] = to_jsonable(exc.usage_metadata)
            out["cost_usd"] = typed.cost(row.model)
            return out
        except AgentHubError as exc:
            if typed is not None:
                typed.close_call()
            sent = typed.sent() if typed is not None else local.call.attempts if local.call is not None else 0
            if exc.__dict__.get("_agenthub_unsent") or (isinstance(exc, TransportError) and exc.aborted
                                                        and self.stop_hard.is_set()):
                return None
            if isinstance(exc, BudgetExceededError) or exc.__dict__.get("_agenthub_refused"):
                # refused by the budget before anything was sent (its worst case, or a tool no hold bounds)
                out = error_row(row, exc, attempts=max(0, sent - 1), backend=self.backend)
            else:
                out = error_row(row, exc, attempts=sent, backend=self.backend)
            spent = exc.__dict__.get("parse_usage_metadata") if typed is not None else None
            if spent is not None:  # a typed row's answers before the failed call: paid for (as a run-out row's)
                out["usage_metadata"] = to_jsonable(spent)
                out["cost_usd"] = exc.__dict__.get("parse_cost_usd")
            return out
        except Exception as exc:  # a bug or a bad value: the row fails, the job goes on
            if typed is not None:
                typed.close_call()
            return error_row(row, exc, attempts=typed.sent() if typed is not None else
                             local.call.attempts if local.call is not None else 0, backend=self.backend)
        finally:
            self.inflight.pop(me, None)
            local.pace = None
        call = local.call  # type: Optional[Attempt]
        usage = message.get("usage_metadata")
        route = call.route if call is not None else None
        model = route["model"] if route else row.model  # priced as the model that answered
        if route:
            name = "{} ({}, {})".format(route.get("model"), route.get("client_type"), route.get("host"))
            with self.count_lock:
                self.summary.routes[name] = self.summary.routes.get(name, 0) + 1
        out = output_row(row, message=message, usage_metadata=usage, finish_reason=message.get("finish_reason"),
                         cost_usd=call_cost(model, usage, call, route), error=None,
                         attempts=call.attempts if call is not None else 1,
                         backend=self.backend)
        short = vectors_short(message, len(row.messages), getattr(client, "client_type", None) or "agenthub")
        if short is not None:  # one vector per input, as embed() holds the call to (billed all the same)
            out.update(message=None, finish_reason=None, error=error_of(short))
        if route and getattr(client, "fallbacks", ()):  # who answered, when it may be another endpoint
            out["route"] = dict(route)
        if (call is not None and call.cache == "hit") or (route and route.get("cache") == "hit"):
            out["cache"] = "hit"  # answered from the ResponseCache: nothing was paid for it (cost_usd 0.0)
        return out

    def stream(self, client: Any, row: JobRow) -> Any:
        """``client.streaming_response(row.messages, row.config)``; for an AutoLLMClient streaming its own way, its
        config checked once per distinct flat config of the run (``check_config`` is a function of the values:
        ``jobfile._config_key``), as the tool runner does it once per run (``_checked_streams``), and a head row's
        messages not checked again (``_stateless_prechecked``)."""
        streams = self.checked_streams.get(id(client))
        if streams is None:
            found = getattr(client, "_checked_streams", None)
            found = found() if callable(found) else None
            streams = self.checked_streams[id(client)] = (
                client, found and (found[0], getattr(client, "_stateless_prechecked", found[0])))
        if streams[1] is None:
            return client.streaming_response(row.messages, row.config)
        key = _config_key(row.config)
        cfg = self.configs.get(key) if key is not None else None
        if cfg is None:
            cfg = check_config(row.config)
            if key is not None:
                if len(self.configs) >= 256:  # (memory stays flat, whatever the file)
                    self.configs.clear()
                self.configs[key] = cfg
        # a row of the head (read once: its messages are the very ones the up-front check passed, never handed out
        # before) is not checked again
        return streams[1][1 if row.line <= self.head_line else 0](row.messages, cfg)

    def typed_row(self, row: JobRow, client: Any, typed: "_TypedRow", parsed: Parsed[Any]) -> Dict[str, Any]:
        """The output row of a typed row that held: the final message, ``value`` (its JSON), the usage and
        cost of every attempt (re-asks included), ``attempts`` every send of every attempt."""
        route = typed.calls[-1].route if typed.calls else None
        if route:
            name = "{} ({}, {})".format(route.get("model"), route.get("client_type"), route.get("host"))
            with self.count_lock:
                self.summary.routes[name] = self.summary.routes.get(name, 0) + 1
        message = parsed.message
        out = output_row(row, message=message, usage_metadata=parsed.usage_metadata,
                         finish_reason=message.get("finish_reason"), cost_usd=typed.cost(row.model), error=None,
                         attempts=typed.sent() or parsed.attempts, backend=self.backend)
        out["value"] = parsed.json
        if route and getattr(client, "fallbacks", ()):
            out["route"] = dict(route)
        if typed.calls and all(c.cache == "hit" or (c.route or {}).get("cache") == "hit" for c in typed.calls):
            out["cache"] = "hit"
        return out

    def abort_all(self) -> None:
        for stream in list(self.inflight.values()):
            try:
                stream.abort()
            except Exception:
                pass


class _TypedRow(object):
    """The row's client as client.parse's loop sees it (agenthub.output.parse: one loop for a call and a row):
    each of the loop's calls is a row call (its stream in flight for Ctrl-C, its Attempt kept by the row
    hook), so the row's ``attempts`` counts every send of every attempt and its cost prices each call as the
    model that answered it."""

    def __init__(self, job: "Job", client: Any, me: int) -> None:
        self.job = job
        self.client = client
        self.me = me
        self.calls = []  # type: List[Attempt]
        self.usages = []  # type: List[Any]  # each call's usage (its stop event's), in order
        self.model = getattr(client, "model", "")
        self.client_type = getattr(client, "client_type", None)

    def plan(self, messages: Any, config: Any = None) -> Any:
        return self.client.plan(messages, config)

    def close_call(self) -> None:
        call = self.job.local.call
        if call is not None and (not self.calls or self.calls[-1] is not call):
            self.calls.append(call)
        self.job.local.call = None

    def streaming_response(self, messages: Any, config: Any = None) -> Any:
        self.close_call()
        if self.job.stop_hard.is_set() or self.job.stop_new.is_set():
            raise _unsent()
        stream = self.client.streaming_response(messages, config)
        self.job.inflight[self.me] = stream
        self.usages.append(None)
        return _Watched(stream, self.usages)

    def sent(self) -> int:
        """Every send of the calls made (``close_call`` first)."""
        return sum(call.attempts for call in self.calls)

    def cost(self, model: str) -> Optional[float]:
        total = 0.0
        for n, call in enumerate(self.calls):
            usage = self.usages[n] if n < len(self.usages) else None
            route = call.route
            price = call_cost(route["model"] if route else model, usage, call, route) if usage else None
            if price is None:
                return None
            total += price
        return total


class _Watched(object):
    """A call's stream as the parse loop reads it, its stop event's usage noted for the row's cost."""

    def __init__(self, stream: Any, usages: List[Any]) -> None:
        self._stream = stream
        self._usages = usages
        self._slot = len(usages) - 1

    def __iter__(self) -> Any:
        for event in self._stream:
            if event.get("usage_metadata") is not None:
                self._usages[self._slot] = event["usage_metadata"]
            yield event

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


class _RowHook(LimiterHook):
    """The job's hook (registered process-wide while the job runs; it acts only in a thread sending one of
    its rows): each attempt takes its turn from the job's limiter inside the client's attempt loop (unless
    the client reports to that limiter itself), a row not sent yet stops at Ctrl-C (no output row: a rerun
    sends it), a failed attempt is not retried once the job is stopping, and the call is kept for its row
    (its attempts and the route that answered)."""

    def __init__(self, job: "Job") -> None:
        super().__init__(job.limiter, acquire=not job.pauses_only)
        self.job = job

    def _pace(self) -> Optional[bool]:
        return getattr(self.job.local, "pace", None)  # None: not this job's row in this thread

    def pause(self, attempt: Any, seconds: float) -> bool:
        """The limiter's wait, cut short by Ctrl-C (the attempt is not sent)."""
        job = self.job
        until = time.monotonic() + seconds
        while True:
            left = until - time.monotonic()
            if left <= 0:
                return True
            if not attempt.wait(min(left, 0.2)):
                return False
            if job.stop_hard.is_set() or job.stop_new.is_set():  # stopping: this attempt is not sent
                raise _unsent()

    def on_call_start(self, call: Attempt) -> None:
        if self._pace() is not None and self.job.local.call is None:
            self.job.local.call = call

    def before_attempt(self, attempt: Attempt) -> None:
        pace = self._pace()
        if pace is None:
            return
        job = self.job
        if job.stop_hard.is_set() or job.stop_new.is_set():  # stopping: no new send (a rerun sends the row)
            raise _unsent()
        if pace and (self.acquire or self.limiter._shared is not None or self.limiter.paused_for() > 0):
            super().before_attempt(attempt)
        # else: only pauses to wait out, and none holds any endpoint: nothing to wait for (nor, with a fallback
        # route after this one, to move on from)

    def after_response(self, attempt: Attempt) -> None:
        if self._pace():
            if self.acquire or _known_server(attempt) is False or _rate_headers(attempt.headers):
                super().after_response(attempt)
            # else: with only pauses to wait out (the run's own limiter), an answer without rate-limit headers to
            # an endpoint known by its server has nothing for the limiter (observe reads only those headers; the
            # endpoint's key is the server's, so nothing is learned for a retry)

    def on_error(self, attempt: Attempt, error: Any) -> None:
        pace = self._pace()
        if pace is None:
            return
        if pace:
            super().on_error(attempt, error)
            if attempt.retry and getattr(error, "retry_after", None) is not None and (
                    attempt.status == 429 or type(error).__name__ == "RateLimitError"):
                attempt.delay = 0.0  # the limiter holds every worker for the Retry-After: the next turn waits
        if self.job.stop_new.is_set():
            attempt.retry = False  # stopping: a failed row gets its error row now
        elif attempt.retry:  # a long wait before the next attempt is announced (a plain line, terminal or not)
            retry_after = getattr(error, "retry_after", None)
            wait = max(attempt.delay or 0.0, self.limiter.paused_for(endpoint_key(attempt)) if pace else 0.0)
            self.job.progress.waiting(getattr(self.job.local, "row_id", None), error, wait, retry_after is not None,
                                      attempt.number + 1)

    def on_done(self, attempt: Attempt) -> None:
        if self._pace() and (self.acquire or self._keys or self._tickets):
            super().on_done(attempt)  # (only pauses to wait out: no ticket is taken, and no key was learned)


def _known_server(attempt: Any) -> bool:
    """Whether the attempt's endpoint key comes from its ``server`` (``limiter.endpoint_key``)."""
    server = attempt.server
    return type(server) is tuple and len(server) == 2


def _rate_headers(headers: Any) -> bool:
    """Whether an answer's headers may hold rate-limit ones (their names all hold "ratelimit"): requests' names
    are read in their lowercase store without a copy; any other mapping is taken as holding some."""
    store = getattr(headers, "_store", None)
    if not isinstance(store, dict):  # (requests' CaseInsensitiveDict: an OrderedDict, lowercase name -> pair)
        return bool(headers)
    for name in store:
        if "ratelimit" in name:
            return True
    return False


def _unsent() -> TransportError:
    error = TransportError("the job is stopping: this row was not sent", aborted=True, retryable=False)
    error.__dict__["_agenthub_unsent"] = True
    return error


def _positive_int(value: Any, name: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ConfigError("{} must be an int >= 1 (got {!r})".format(name, value))
    return value


def _same_file(first: str, second: str) -> bool:
    if os.path.realpath(first) == os.path.realpath(second):
        return True
    try:
        return os.path.samefile(first, second)
    except (OSError, ValueError):  # (one is not there yet)
        return False


def run(input_path: str, output_path: str, *, workers: int = 8, rpm: Optional[float] = None,
        tpm: Optional[float] = None, retry_failed: bool = False, progress: Union[None, bool, Callable[..., Any]] = None,
        skip_invalid: bool = False, engine: Optional[str] = None, limiter: Optional[RateLimiter] = None,
        client_factory: Optional[Callable[..., Any]] = None, max_retries: int = 2, grace: float = 30.0,
        fallbacks: Optional[Sequence[Any]] = None, budget: Any = None, cache: Any = None, output: Any = None,
        output_retries: int = 2, **engine_options: Any) -> JobSummary:
    """Run a job file live (or on Ray: ``engine="ray"``) and append the answers to ``output_path``.

    ``rpm`` / ``tpm``: the budget of one shared RateLimiter (or pass ``limiter``).  ``progress``: None
    (a line on a terminal, plain lines every 10 s otherwise), False (nothing), or a callable taking a
    dict (done, failed, skipped, total, rate, eta_s, tokens, cost_usd, elapsed_s, final).
    ``client_factory(model, client_type, base_url)`` builds the client of a route (default:
    ``AutoLLMClient(..., max_retries=max_retries)``, keys from the environment; a factory's clients retry
    as they were built to).  ``fallbacks``: model names or
    AutoLLMClients every row's client fails over to (``JobSummary.routes`` counts which answered).
    ``budget``: an ``agenthub.Budget`` every row's client (fallbacks included) reserves from: a row whose
    worst case no longer fits gets a BudgetExceededError row (``attempts`` 0) and is never sent; a
    rerun with ``retry_failed=True`` and a new budget sends those rows.  Live engine only.
    ``cache``: an ``agenthub.ResponseCache`` every row's client answers from (and stores in).
    ``output``: typed output for every row without its own ``output_schema`` (a type or a JSON Schema dict, as
    ``client.parse`` takes): each such row runs through client.parse's loop, re-asked at most ``output_retries``
    times, and its output row has ``"value"`` (the validated JSON) or an OutputValidationError /
    OutputRefusedError row (docs/typed-output.md, "Jobs and batch engines").  Live engine only.
    """
    started = time.monotonic()
    _positive_int(workers, "workers")
    if not isinstance(max_retries, int) or isinstance(max_retries, bool) or max_retries < 0:
        raise ConfigError("max_retries must be an int >= 0")
    if engine not in (None, "live", "ray"):
        raise ConfigError("engine must be None (live), 'live' or 'ray' (got {!r})".format(engine))
    if limiter is not None and (rpm is not None or tpm is not None):
        raise ConfigError("pass rpm/tpm or a limiter, not both")
    if engine != "ray" and engine_options:
        raise ConfigError("unknown argument(s) {} (they are for engine='ray')".format(sorted(engine_options)))
    if fallbacks is not None and not isinstance(fallbacks, (list, tuple)):
        raise ConfigError("fallbacks must be a list of model names or AutoLLMClients")
    if fallbacks is not None and client_factory is not None:
        raise ConfigError("fallbacks= is for the runner's own clients: with client_factory, give the clients "
                          "your factory builds their fallbacks")
    if cache is not None:
        from ..cache import ResponseCache

        if not isinstance(cache, ResponseCache) or client_factory is not None:
            raise ConfigError("cache= takes an agenthub.ResponseCache for the runner's own clients (with "
                              "client_factory, give the clients your factory builds the cache)")
    if budget is not None:
        from ..budget import Budget

        if not isinstance(budget, Budget):
            raise ConfigError("budget must be an agenthub.Budget (got {})".format(type(budget).__name__))
        if client_factory is not None:
            raise ConfigError("budget= is for the runner's own clients: with client_factory, give the clients your "
                              "factory builds the budget (AutoLLMClient(..., budget=...))")
        if engine == "ray":
            raise ConfigError("budget= cannot go to Ray's actors: a Budget is one account in one process (its "
                              "account would split); run the job live, or give each actor's client_factory a Budget")
        client_factory = functools.partial(own_client, list(fallbacks) if fallbacks is not None else None, budget,
                                           max_retries=max_retries)
    elif fallbacks is not None:
        client_factory = functools.partial(fallback_client, list(fallbacks),  # picklable: Ray's actors build it too
                                           max_retries=max_retries)
    if cache is not None:
        client_factory = functools.partial(own_client, list(fallbacks) if fallbacks is not None else None, budget,
                                           max_retries=max_retries, cache=cache)
    check_output(output, output_retries)
    if engine == "ray" and (output is not None or (os.path.isfile(input_path)
                                                   and file_mentions(input_path, b'"output_schema"'))):
        raise ConfigError("typed output (output= or a row's output_schema) runs on the live engine and the batch "
                          "engines, not on Ray: run the job live")
    if _same_file(input_path, output_path):  # (a symlink or a hard link to it too: its rows read as answers)
        raise ConfigError("the output file must not be the input file")
    lock = OutputLock(output_path)  # a second run on this output is refused (issue 29 D1)
    try:
        job = read_jobs(input_path, skip_invalid=skip_invalid, keep_rows=False,
                        keep_head=HEAD_BYTES if engine != "ray" else 0)
    except BaseException:
        lock.release()
        raise
    try:
        if engine == "ray":
            # the engine is named, not imported here: agenthub.ray builds on this module (and alone imports ray)
            run_job = getattr(importlib.import_module(ENGINES["ray"]), "run_job")
            return run_job(input_path, output_path, job=job, workers=workers, rpm=rpm, tpm=tpm,  # type: ignore[no-any-return]
                           retry_failed=retry_failed, progress=progress, client_factory=client_factory,
                           max_retries=max_retries, **engine_options)
        if output is not None:
            _no_response_format(input_path)
        return _run_live(job, input_path, output_path, workers, limiter or RateLimiter(rpm, tpm), retry_failed,
                         progress, client_factory, max_retries, grace, fallbacks, started, output, output_retries,
                         pauses_only=limiter is None and rpm is None and tpm is None)
    finally:
        job.ids.close()  # the id index's temporary file
        lock.release()


def check_output(output: Any, retries: Any) -> None:
    """ConfigError unless ``output`` (None or an output type) compiles and ``retries`` is a re-ask count."""
    from ..output.parse import MAX_RETRIES
    from ..typeschema import compile as compile_type

    if not isinstance(retries, int) or isinstance(retries, bool) or not 0 <= retries <= MAX_RETRIES:
        raise ConfigError("output_retries must be an int from 0 to {} (got {!r})".format(MAX_RETRIES, retries))
    if output is not None:
        try:
            compile_type(output)
        except ConfigError as exc:
            raise ConfigError("output: {}".format(exc)) from None


def _no_response_format(input_path: str) -> None:
    """With ``output=``, a row whose config sets ``response_format`` is refused before anything is sent (the
    output type sets it), and so is one offering tools (a typed row runs none: ``check_no_tools``)."""
    for word, clashes, words in (
            (b"response_format", lambda config: config.get("response_format") is not None,
             "output= sets each row's response_format, and {} set their own: leave it out of their config"),
            (b"tools", lambda config: config.get("tools") and config.get("tool_choice") != "none",
             "output= types each row's answer and runs no tools, and {} offer tools the model may call: leave "
             "them out (or tool_choice 'none')")):
        if not file_mentions(input_path, word):
            continue
        lines = [row.line for row in iter_rows(input_path) if row.output_schema is None and clashes(row.config)]
        if lines:
            raise ConfigError((words + " (nothing was sent)").format(_lines_text(lines)))


def resume(job: JobFile, output_path: str, retry_failed: bool) -> Tuple[int, Dict[Route, List[int]], Dict[Route, int]]:
    """Mark in ``job.ids`` the rows that have an output row: (how many, route -> the first lines of the
    rows left, route -> how many rows are left)."""
    skipped = mark_finished(output_path, job.ids, retry_failed=retry_failed)
    routes = {}  # type: Dict[Route, List[int]]
    counts = {}  # type: Dict[Route, int]
    for number, (count, lines) in job.ids.remaining().items():
        routes[job.route_keys[number]] = lines
        counts[job.route_keys[number]] = count
    return skipped, routes, counts


def _run_live(job: JobFile, input_path: str, output_path: str, workers: int, limiter: RateLimiter,
              retry_failed: bool, progress: Any, client_factory: Optional[Callable[..., Any]], max_retries: int,
              grace: float, fallbacks: Optional[Sequence[Any]], started: float, output: Any = None,
              output_retries: int = 2, pauses_only: bool = False) -> JobSummary:
    skipped, routes, counts = resume(job, output_path, retry_failed)
    embedding = _embedding_lines(input_path, routes) if routes else {}
    clients = build_clients(routes, client_factory or functools.partial(default_client, max_retries=max_retries),
                            embedding, counts)
    summary = JobSummary(total=len(job), skipped=skipped)
    errored = job.ids.errored_count()  # (rows skipped for an error row written before)
    show = Progress(progress, summary.total, summary.skipped)
    writer = OutputWriter(output_path, retry_failed=retry_failed, retry_ids=job.ids)
    ids = job.ids
    state = None  # type: Optional[Job]
    try:
        for number, row in job.invalid:
            if ids.mark_done(row["id"]):  # an invalid line is never sent (iter_rows below does not check again)
                writer.write(dict(row))
                summary.failed += 1
        # the lines before the first one still to do (a resumed run's finished half) are read past, not decoded
        # and the rows after the last one done are not looked up (a fresh run looks up none)
        first = min((lines[0] for lines in routes.values() if lines), default=1)
        last = ids.last_done()
        todo = (row for row in _rows(job, input_path, first) if row.line > last or not ids.is_done(row.id))
        state = Job(todo, clients, writer, limiter, summary, show, max_retries,
                    per_thread=client_factory if fallbacks is not None else None, pauses_only=pauses_only)
        state.output = output
        state.head_line = job.head_end[1]
        state.output_retries = output_retries
        count = min(workers, max(1, sum(counts.values())))
        state.job_span = workflow_span("agenthub.jobs", {"agenthub.job.rows": summary.total})
        ended = None  # type: Optional[BaseException]  # what stopped the job (its span's error.type)
        try:
            _drive(state, count, grace, show) if routes else None
        except BaseException as exc:
            ended = exc
            raise
        finally:
            state.job_span.end(ended if ended is not None else state.error)
        if state.error is not None:
            raise state.error
    finally:
        if state is not None:
            unregister(state.row_hook)
        writer.close()
        summary.wall_s = time.monotonic() - started
        summary.failed_total = summary.failed + errored
    show.end(summary)
    return summary


def _rows(job: JobFile, input_path: str, first: int) -> Iterator[JobRow]:
    """The rows from line ``first`` on: the head read up front (each let go as it is taken), then the lines after it."""
    head = job.head
    head.reverse()
    while head:
        row = head.pop()
        if row.line >= first:
            yield row
    yield from rows_from(input_path, first, check=False, start=job.head_end, stop=job.size)


def own_client(fallbacks: Optional[List[Any]], budget: Any, model: str, client_type: Optional[str],
               base_url: Optional[str], max_retries: int = 2, cache: Any = None) -> AutoLLMClient:
    """The client of a route under ``run(..., fallbacks=..., budget=..., cache=...)`` (the fallbacks built from
    model names get the same budget)."""
    return AutoLLMClient(model, client_type=client_type, base_url=base_url, max_retries=max_retries,
                         fallbacks=fallbacks, budget=budget, cache=cache)


def fallback_client(fallbacks: List[Any], model: str, client_type: Optional[str],
                    base_url: Optional[str], max_retries: int = 2) -> AutoLLMClient:
    """The client of a route under ``run(..., fallbacks=...)``: the default client, with those fallbacks."""
    return AutoLLMClient(model, client_type=client_type, base_url=base_url, max_retries=max_retries,
                         fallbacks=fallbacks)


def _embedding_lines(input_path: str, routes: Dict[Route, List[int]]) -> Dict[Route, List[int]]:
    """Lines whose config asks for embeddings, per route (one lazy pass; only when a row has one)."""
    out = {}  # type: Dict[Route, List[int]]
    if not file_mentions(input_path, b"embedding_config"):  # (in pieces: a huge line is never held whole)
        return out
    for row in iter_rows(input_path):
        route = (row.model, row.client_type, row.base_url)
        if route in routes and row.config.get("embedding_config") is not None:
            lines = out.setdefault(route, [])
            if len(lines) < 6:  # enough to name them: memory stays flat
                lines.append(row.line)
    return out


def _drive(state: Job, count: int, grace: float, show: Progress) -> None:
    threads = [threading.Thread(target=state.worker, name="agenthub-job-{}".format(i), daemon=True)
               for i in range(count)]
    state.running = count
    for number, thread in enumerate(threads):
        try:
            thread.start()
        except BaseException:
            for _ in range(count - number):  # the threads that never started never leave
                state.left()
            raise

    def wait(until: Optional[float]) -> bool:
        # on the workers' own count, not Thread.join/is_alive: on 3.11 and 3.12 a KeyboardInterrupt inside
        # join can mark a running thread stopped (bpo-45274), and the writer would close under its answer
        while not state.all_left.is_set():
            left = None if until is None else until - time.monotonic()
            if left is not None and left <= 0:
                return False
            state.all_left.wait(0.2 if left is None else min(0.2, left))
        return True

    try:
        wait(None)
        for thread in threads:  # each has left its loop: only its exit is left
            thread.join(1.0)
    except KeyboardInterrupt:
        state.summary.interrupted = True
        state.stop_new.set()
        busy = len(state.inflight)
        show.say("agenthub.jobs: interrupted: no new rows; waiting up to {:g}s for {} row(s) in flight "
                 "(Ctrl-C again aborts them; a rerun sends whatever has no row)".format(grace, busy))
        try:
            finished = wait(time.monotonic() + grace)
        except KeyboardInterrupt:
            finished = False
        if not finished:
            state.stop_hard.set()
            state.abort_all()
            wait(time.monotonic() + 10.0)
