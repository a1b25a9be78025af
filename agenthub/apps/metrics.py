"""``GET /v1/metrics`` of ``agenthub serve``: what the server did, in the Prometheus text format (0.0.4).

Per model row of the config (every row is listed, with zeros until it is used):

- ``agenthub_requests_total``: ``POST /v1/stream`` requests that named the row;
- ``agenthub_errors_total{class=...}``: those that ended in an error, by AgentHubError class (a
  refusal before the stream, an upstream error before or after the first event); ``internal`` for
  a bug of the server's own;
- ``agenthub_tokens_total{bucket=...}``: the four usage buckets of the answers' stop events;
- ``agenthub_cost_usd_total``: their list price (``agenthub.cost`` of each answer's usage), and
  ``agenthub_unpriced_answers_total``: answers with usage the catalog has no price for (not in the cost);
- ``agenthub_open_streams``: streams whose response is open (each holds one of
  ``agenthub_max_concurrent_streams`` slots);
- ``agenthub_model_info{upstream_model, client_type}``: 1, naming what the row routes to.

Counters are per process (a gunicorn worker is one), like ``max_concurrent_streams``.
"""

import threading
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple

__all__ = ["Metrics", "CONTENT_TYPE"]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
BUCKETS = ("prompt_tokens", "cached_tokens", "thoughts_tokens", "response_tokens")


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\n")


def _labels(pairs: Iterable[Tuple[str, str]]) -> str:
    return "{" + ",".join('{}="{}"'.format(name, _label(value)) for name, value in pairs) + "}"


def _number(value: float) -> str:
    if isinstance(value, int):
        return str(value)
    return repr(float(value))


class _Row(object):
    __slots__ = ("requests", "errors", "tokens", "cost", "unpriced", "open")

    def __init__(self) -> None:
        self.requests = 0
        self.errors = {}  # type: Dict[str, int]
        self.tokens = dict.fromkeys(BUCKETS, 0)
        self.cost = 0.0
        self.unpriced = 0
        self.open = 0


class Metrics(object):
    """The counters of one AgentHubApp (thread-safe; updated once per request and once per answer)."""

    def __init__(self, rows: Iterable[Tuple[str, Optional[str], Optional[str]]], max_streams: int) -> None:
        """``rows``: (id, upstream model, client_type) of each model row, in the config's order."""
        self._lock = threading.Lock()
        self._info = [(model_id, model or "", client_type or "") for model_id, model, client_type in rows]
        self._rows = {model_id: _Row() for model_id, _, _ in self._info}
        self._max_streams = max_streams

    def request(self, model_id: str) -> None:
        with self._lock:
            self._rows[model_id].requests += 1

    def error(self, model_id: str, error: BaseException) -> None:
        name = _class_name(error)
        with self._lock:
            errors = self._rows[model_id].errors
            errors[name] = errors.get(name, 0) + 1

    def opened(self, model_id: str) -> None:
        with self._lock:
            self._rows[model_id].open += 1

    def closed(self, model_id: str) -> None:
        with self._lock:
            self._rows[model_id].open -= 1

    def answer(self, model_id: str, model: str, usage: Optional[Mapping[str, Any]], call: Any = None) -> None:
        """An answer's stop event carried ``usage``: its tokens and (where the catalog prices ``model``) cost,
        as every agenthub path prices a call (``catalog.call_cost``: the wire's cache writes, the tier in force
        when ``call`` started; 0.0 for a ResponseCache hit)."""
        if not isinstance(usage, Mapping):
            return
        counts = {}  # type: Dict[str, int]
        for bucket in BUCKETS:
            value = usage.get(bucket)
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                counts[bucket] = value
        price = None  # type: Optional[float]
        if counts:
            try:
                from ..catalog import call_cost

                price = call_cost(model, usage, call, getattr(call, "route", None))
            except Exception:  # noqa: BLE001 - a price is never worth failing a stream for
                price = None
        with self._lock:
            row = self._rows[model_id]
            for bucket, value in counts.items():
                row.tokens[bucket] += value
            if price is not None:
                row.cost += price
            elif counts:
                row.unpriced += 1

    def render(self) -> str:
        with self._lock:
            rows = [(model_id, self._rows[model_id]) for model_id, _, _ in self._info]
            snapshot = [(model_id, row.requests, dict(row.errors), dict(row.tokens), row.cost, row.unpriced, row.open)
                        for model_id, row in rows]
        out = []  # type: List[str]

        def family(name: str, kind: str, text: str, samples: Iterable[Tuple[Iterable[Tuple[str, str]], Any]]) -> None:
            out.append("# HELP {} {}".format(name, text))
            out.append("# TYPE {} {}".format(name, kind))
            for labels, value in samples:
                labels = list(labels)
                out.append("{}{} {}".format(name, _labels(labels) if labels else "", _number(value)))

        family("agenthub_requests_total", "counter", "Stream requests that named the model row.",
               [([("model", m)], requests) for m, requests, _, _, _, _, _ in snapshot])
        family("agenthub_errors_total", "counter", "Stream requests that ended in an error, by error class.",
               [([("model", m), ("class", name)], count)
                for m, _, errors, _, _, _, _ in snapshot for name, count in sorted(errors.items())])
        family("agenthub_tokens_total", "counter", "Tokens in the answers' usage, by usage bucket.",
               [([("model", m), ("bucket", bucket)], tokens[bucket])
                for m, _, _, tokens, _, _, _ in snapshot for bucket in BUCKETS])
        family("agenthub_cost_usd_total", "counter", "List price of the answers in USD (agenthub.cost).",
               [([("model", m)], cost) for m, _, _, _, cost, _, _ in snapshot])
        family("agenthub_unpriced_answers_total", "counter", "Answers with usage the catalog has no price for.",
               [([("model", m)], unpriced) for m, _, _, _, _, unpriced, _ in snapshot])
        family("agenthub_open_streams", "gauge", "Streams whose response is open.",
               [([("model", m)], open_) for m, _, _, _, _, _, open_ in snapshot])
        family("agenthub_max_concurrent_streams", "gauge", "Streams this process serves at once.",
               [((), self._max_streams)])
        family("agenthub_model_info", "gauge", "The upstream model and client type of each model row.",
               [([("model", m), ("upstream_model", model), ("client_type", client_type)], 1)
                for m, model, client_type in self._info])
        return "\n".join(out) + "\n"


def _class_name(error: BaseException) -> str:
    from ..errors import AgentHubError, error_to_json

    if not isinstance(error, AgentHubError):
        return "internal"
    return str(error_to_json(error)["error"]["type"])  # the agenthub class (a subclass of ours: its base)
