"""``agenthub serve``: the uniform stream over HTTP, as a WSGI application (standard library only).

``make_app(config)`` returns a WSGI application; it runs on any WSGI server (gunicorn with
``gthread`` workers, uWSGI, mod_wsgi) and on the built-in threading server of ``serve()``
(``agenthub serve --config FILE``).  ``config`` is a dict or the path of a JSON file::

    {"models": [{"id": "fast", "model": "gpt-5.5", "api_key": "$OPENAI_API_KEY",
                 "client_type": "...", "base_url": "...", "default_config": {"max_tokens": 2000}}],
     "api_keys": ["$AGENTHUB_SERVER_KEY"],
     "allowed_hosts": ["localhost", "127.0.0.1", "[::1]"],
     "max_body_bytes": 16777216, "max_concurrent_streams": 64, "max_connections": 192, "keepalive_seconds": 15,
     "header_timeout_seconds": 10, "body_timeout_seconds": 20, "write_timeout_seconds": 30}

A string cell ``"$NAME"`` is read from the environment when the app is made (a missing
variable is a ConfigError naming it; ``"$$..."`` is a literal ``$...``).  Each model row
becomes one AutoLLMClient (``max_retries`` and ``timeout`` may be given per row); its
``default_config`` lies under the config of every request for it.  ``"fallbacks": [...]`` names other
rows' ids (their clients, with their own keys and settings; their own fallbacks are not followed) or
model names (built as ``AutoLLMClient(fallbacks=[name])`` builds them): the row's client fails over
to them in order before the first event (docs/reliability.md, "Failover").  An entry that is neither is a ConfigError.
``"limiter": {"rpm": 500, "tpm": null, "store": "sqlite:////var/lib/agenthub/state.db", "key": "openai"}`` and
``"budget": {"max_usd": 50, "store": "redis://host:6379/0", "key": "team"}`` give the row's client a
RateLimiter / Budget; with a ``store``, every gunicorn worker (and every machine naming the same store and
key) draws from the one shared pace or account (docs/many-workers.md).

Endpoints (the wire contract; docs/serve.md):

- ``GET /v1/models``: ``{"object": "list", "data": [{"id": ..., "object": "model"}, ...]}``.
- ``GET /v1/metrics``: Prometheus text, per model row (requests, errors by class, tokens by bucket,
  cost, open streams; ``agenthub.apps.metrics``).
- ``POST /v1/stream`` ``{"model": <id>, "messages": [...], "config": {...}}`` (bytes as
  ``{"__bytes__": "<base64>"}``): ``text/event-stream``, one ``data: <UniEvent JSON>`` per
  event as the library produced it, ``: keep-alive`` comments while the upstream is silent,
  ``data: [DONE]`` at the end.  An error after the first event is an ``event: error`` frame
  with the error JSON, and the body ends.  With ``X-AgentHub-Wire: items`` (the agenthub client sends it),
  each run of plain deltas is one ``data: [<piece>, ...]`` frame (a string: a text piece; ``["<args>"]``:
  an argument fragment without name and id; an object: a content item), every other event as before.
  With ``X-AgentHub-Wire: runs`` (the agenthub client sends it now), each run of text pieces, and each of
  argument fragments, is one ``data: ~<t|a><piece>ESC s<piece>...`` frame (``_run_frame``), and a call's complete
  ``tool_call`` goes with ``"arguments": null`` when they are its fragments parsed (``_without_arguments``).
- Errors before the stream: ``{"error": {"type": <AgentHubError subclass name>, "message",
  <its fields>}}`` with 400 (ConfigError: malformed message or config, bad Host header, a
  Content-Length that is not digits, nesting too deep), 401 (AuthenticationError: missing or
  wrong server key), 403 (a cross-site request), 404 (unknown model or path), 405, 408 (the
  body stopped arriving), 411 (no Content-Length), 413 (body over ``max_body_bytes``), 415 (a
  POST that is not ``application/json``), 402 (BudgetExceededError: the row's budget refused; its
  fields), 503 (ServerError: ``max_concurrent_streams`` streams are open; ``Retry-After``), 503
  (StoreError: the row's shared store cannot answer; retryable ones get ``Retry-After``), and the
  upstream's status for an UpstreamError (502/504 for a
  TransportError, whose message says what failed but not the upstream's address; 502 for a
  StreamError).
- ``GET /``: the playground page (open; its own Content-Security-Policy).

Every ``/v1/`` path needs ``Authorization: Bearer <one of api_keys>`` when api_keys is set
(compared in constant time).  The Host header is checked whatever server runs the app: only
``allowed_hosts`` names (any port; ``"*"`` allows any) are answered.  No CORS headers are sent,
and a ``/v1/`` request a browser made from another site (an ``Origin`` other than the server's
own, or ``Sec-Fetch-Site: cross-site``) is refused, so a web page cannot spend the server's keys.
Upstream keys never reach a response, a log line or an error: errors are scrubbed of them.

Each stream is read from the upstream by a thread of its own, which hands the encoded events
to the thread writing the response (``_Queue``: the writer takes all that queued up at once); that is what
lets the writer send keep-alive comments while the upstream is silent.  What was read goes out at the latest
``GATHER_SECONDS`` after the write before it is done, whether or not the upstream sends more (no piece waits for the
next one).  While the upstream sends faster than that, the pump, once a write is due, wakes the writer and waits
until the write is done (at most ``PARK_SECONDS``): the two threads take turns instead of fighting for the
interpreter lock.  When the client goes away the WSGI server closes the response
(PEP 3333 ``close()``): the upstream stream is aborted, which releases its connection at once.
``max_concurrent_streams`` is per process (a gunicorn worker is one); a stream's slot is free when its
response is closed, and at most ``MAX_QUEUED_BYTES`` of a stream wait for a slow client.
"""

import hmac
import http
import json
import logging
import math
import os
import queue
import re
import sys
import threading
import time
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Tuple

from ..budget import IMAGE_TOOL_REFUSED, offers_image_tool
from ..errors import (AgentHubError, AuthenticationError, BudgetExceededError, ConfigError, ServerError, StreamError,
                     TransportError, UnsupportedParameterError, UpstreamError, error_to_json)
from ..hosts.trust import authority_host, authority_parts, is_loopback_host, split_authority
from .._redact import scrub_text
from ..types import from_jsonable, json_default, marker_free, to_jsonable  # the one {"__bytes__"} codec
from ..telemetry import continue_trace  # an incoming traceparent continues in the upstream call (a no-op uninstrumented)
from ._sockets import ConnectionLimit, DeadlineReader, busy_answer, peer_closed
from .metrics import CONTENT_TYPE as METRICS_CONTENT_TYPE, Metrics
from .._jsondepth import loads as _json_loads

__all__ = ["make_app", "load_config", "serve", "AgentHubApp", "DEFAULT_PORT"]

logger = logging.getLogger("agenthub.server")

DEFAULT_PORT = 8787
DEFAULT_ALLOWED_HOSTS = ("localhost", "127.0.0.1", "[::1]")
DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024
DEFAULT_MAX_CONCURRENT_STREAMS = 64
DEFAULT_KEEPALIVE_SECONDS = 15.0
#: the built-in server's socket timeouts (gunicorn and other WSGI servers have their own settings):
#: the whole request line and headers, each read of the body, each write of the answer
DEFAULT_HEADER_TIMEOUT_SECONDS = 10.0
DEFAULT_BODY_TIMEOUT_SECONDS = 20.0
DEFAULT_WRITE_TIMEOUT_SECONDS = 30.0
TIMEOUT_KEYS = ("header_timeout_seconds", "body_timeout_seconds", "write_timeout_seconds")
#: the built-in server's connections open at once (each holds a thread) when the config names no
#: ``max_connections``: this many per stream allowed, plus ``SPARE_CONNECTIONS`` (a connection past it is answered
#: 503 at once, with no thread made for it)
CONNECTIONS_PER_STREAM = 2
SPARE_CONNECTIONS = 64
#: the built-in server's slowest body: past ``body_timeout_seconds`` plus one second per this many bytes of its
#: Content-Length, a body still arriving is a 408 (each read within ``body_timeout_seconds`` alone let a client
#: trickling a byte a read hold its thread for years)
MIN_BODY_BYTES_PER_SECOND = 16 * 1024
CONFIG_KEYS = ("models", "api_keys", "allowed_hosts", "max_body_bytes", "max_concurrent_streams",
               "keepalive_seconds", "max_connections") + TIMEOUT_KEYS
#: config keys a caller of the server may not send: they would rewrite the upstream request itself, or (mcp_servers)
#: make the operator's provider connect where the caller says, replacing a row's own servers
PASSTHROUGH_KEYS = ("extra_body", "extra_headers", "mcp_servers")
MODEL_KEYS = ("id", "model", "client_type", "base_url", "api_key", "default_config", "max_retries", "timeout",
              "fallbacks", "limiter", "budget")
#: what a row's "limiter" / "budget" object may hold (RateLimiter / Budget arguments)
SHARED_KEYS = {"limiter": ("rpm", "tpm", "store", "key"), "budget": ("max_usd", "allow_unpriced", "store", "key")}
REQUEST_KEYS = ("model", "messages", "config")

#: frames, and bytes, a stream may have waiting for a slow client before its upstream is no longer read
MAX_QUEUED_FRAMES = 4096
MAX_QUEUED_BYTES = 1 << 20
#: a client that takes no frame for this long is taken for gone
WRITER_STALL_SECONDS = 300.0
#: while a stream waits for its upstream, the built-in server looks this often whether its client closed the
#: connection (``CLIENT_GONE``): a client that left is noticed then, not at the second keep-alive written to it
GONE_CHECK_SECONDS = 1.0
#: the WSGI environ key of the built-in server's look at the connection: a callable, true once the client closed it
CLIENT_GONE = "agenthub.client_gone"
KEEPALIVE = b": keep-alive\n\n"
DONE = b"data: [DONE]\n\n"
#: the request header by which a client asks for delta events as batches of their content items (``items``) or
#: as runs of raw text (``runs``: the ``client_type="agenthub"`` client sends it; docs/serve.md, "The runs wire")
WIRE_HEADER = "HTTP_X_AGENTHUB_WIRE"
#: estimated bytes of an items frame past which it is sent and the next one begun
MAX_BATCH_BYTES = 1 << 16
#: the writer writes at most once per this many seconds, what queued up since the last write: a burst goes out in
#: a few writes, not one per event; what comes after a longer silence goes out at once (``_Body``).  Each write costs
#: both processes a few context switches and system calls, so a burst's writes are few: a model writing a word
#: every 10-50 ms has each word written as it comes
GATHER_SECONDS = 0.005
#: the longest the pump, having woken the writer for its write, waits for it to be back for more before it reads on
#: (``_Queue.park``): a write to a client that reads takes microseconds; one that does not read, or a response the
#: WSGI server does not iterate yet, does not hold the upstream's reading back
PARK_SECONDS = 0.02
_VARIABLE = re.compile(r"^\$([A-Za-z_][A-Za-z0-9_]*)$")
_TOO_DEEP = ConfigError("the request body is nested too deeply")
_DIGITS = re.compile(r"[0-9]{1,18}\Z")
_END = object()
_SSE_HEADERS = [("Content-Type", "text/event-stream; charset=utf-8"), ("Cache-Control", "no-cache, no-store"),
                ("X-Accel-Buffering", "no"), ("X-Content-Type-Options", "nosniff")]
_PLACEHOLDER_PAGE = (b"<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>agenthub</title></head>"
                     b"<body><h1>agenthub serve</h1><p>The playground page is not part of this build. The API: "
                     b"<code>GET /v1/models</code>, <code>POST /v1/stream</code>.</p></body></html>")
_PLACEHOLDER_HEADERS = [("Content-Type", "text/html; charset=utf-8"),
                        ("Content-Security-Policy",
                         "default-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"),
                        ("X-Content-Type-Options", "nosniff"), ("X-Frame-Options", "DENY"),
                        ("Referrer-Policy", "no-referrer"), ("Cache-Control", "no-store"),
                        ("Cross-Origin-Opener-Policy", "same-origin")]


# -- configuration ------------------------------------------------------------------------------------


def _expand(value: Any, environ: Mapping[str, str], where: str) -> Any:
    """Every "$NAME" string cell replaced by the variable's value ("$$x" is the literal "$x")."""
    if isinstance(value, str):
        if value.startswith("$$"):
            return value[1:]
        match = _VARIABLE.match(value)
        if match is None:
            return value
        name = match.group(1)
        found = environ.get(name)
        if not found:
            raise ConfigError("server config {}: the environment variable ${} is not set".format(where, name))
        return found
    if isinstance(value, Mapping):
        return {k: _expand(v, environ, "{}.{}".format(where, k)) for k, v in value.items()}
    if isinstance(value, list):
        return [_expand(v, environ, "{}[{}]".format(where, i)) for i, v in enumerate(value)]
    return value


def _positive_int(data: Mapping[str, Any], key: str, default: int) -> int:
    value = data.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ConfigError("server config {} must be a positive int (got {!r})".format(key, value))
    return value


def load_config(config: Any, environ: Optional[Mapping[str, str]] = None) -> Dict[str, Any]:
    """The server config (a dict or a JSON file's path), checked, with $NAME cells read from ``environ``."""
    env = os.environ if environ is None else environ
    if isinstance(config, (str, os.PathLike)):
        path = os.fspath(config)
        try:
            with open(path, encoding="utf-8") as handle:
                config = _json_loads(handle.read())
        except OSError as exc:
            raise ConfigError("cannot read the server config {}: {}".format(path, exc.strerror or exc)) from None
        except (ValueError, RecursionError) as exc:  # (RecursionError: nested past what the reader takes)
            raise ConfigError("the server config {} is not JSON: {}".format(path, exc)) from None
    if not isinstance(config, Mapping):
        raise ConfigError("the server config must be a JSON object (got {})".format(type(config).__name__))
    unknown = sorted(str(k) for k in config if k not in CONFIG_KEYS)
    if unknown:
        raise ConfigError("unknown server config key(s) {}; known: {}".format(unknown, ", ".join(CONFIG_KEYS)))
    data = _expand(dict(config), env, "config")
    models = data.get("models")
    if not isinstance(models, list) or not models:
        raise ConfigError("server config models must be a non-empty list of {id, model, ...} objects")
    rows = []
    seen = set()
    for n, row in enumerate(models):
        where = "models[{}]".format(n)
        if not isinstance(row, Mapping):
            raise ConfigError("server config {} must be an object".format(where))
        unknown = sorted(str(k) for k in row if k not in MODEL_KEYS)
        if unknown:
            raise ConfigError("server config {}: unknown key(s) {}; known: {}".format(where, unknown,
                                                                                     ", ".join(MODEL_KEYS)))
        for key in ("id", "model"):
            if not isinstance(row.get(key), str) or not row[key].strip():
                raise ConfigError("server config {}.{} must be a non-empty string".format(where, key))
        for key in ("client_type", "base_url", "api_key"):
            if row.get(key) is not None and (not isinstance(row[key], str) or not row[key]):
                raise ConfigError("server config {}.{} must be a non-empty string".format(where, key))
        if row["id"] in seen:
            raise ConfigError("server config {}: the id {!r} is used twice".format(where, row["id"]))
        seen.add(row["id"])
        default_config = row.get("default_config") or {}
        if not isinstance(default_config, Mapping):
            raise ConfigError("server config {}.default_config must be an object (UniConfig)".format(where))
        fallbacks = row.get("fallbacks", [])
        if not isinstance(fallbacks, list) or not all(isinstance(f, str) and f.strip() for f in fallbacks):
            raise ConfigError("server config {}.fallbacks must be a list of row ids or model names".format(where))
        for name, known in SHARED_KEYS.items():
            shared = row.get(name)
            if shared is not None and (not isinstance(shared, Mapping) or any(k not in known for k in shared)):
                raise ConfigError("server config {}.{} must be an object of {}".format(where, name, ", ".join(known)))
        rows.append(dict(row, default_config=dict(default_config), fallbacks=list(fallbacks)))
    _check_fallbacks(rows)
    api_keys = data.get("api_keys") or []
    if not isinstance(api_keys, list) or not all(isinstance(k, str) and k for k in api_keys):
        raise ConfigError("server config api_keys must be a list of non-empty strings")
    hosts = data.get("allowed_hosts", list(DEFAULT_ALLOWED_HOSTS))
    if not isinstance(hosts, list) or not all(isinstance(h, str) and h for h in hosts):
        raise ConfigError("server config allowed_hosts must be a list of host names")
    seconds = {}
    for key, default in zip(("keepalive_seconds",) + TIMEOUT_KEYS, (
            DEFAULT_KEEPALIVE_SECONDS, DEFAULT_HEADER_TIMEOUT_SECONDS, DEFAULT_BODY_TIMEOUT_SECONDS,
            DEFAULT_WRITE_TIMEOUT_SECONDS)):
        value = data.get(key, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 3600:
            raise ConfigError("server config {} must be a number of seconds in (0, 3600)".format(key))
        seconds[key] = float(value)
    refused = [h for h in hosts if h != "*" and not _host_name(h)]
    if refused:
        raise ConfigError("server config allowed_hosts: {!r} is not a host name".format(refused[0][:100]))
    return dict(seconds, **{
        "models": rows,
        "api_keys": list(api_keys),
        "allowed_hosts": [_host_name(h) if h != "*" else "*" for h in hosts],
        "max_body_bytes": _positive_int(data, "max_body_bytes", DEFAULT_MAX_BODY_BYTES),
        "max_concurrent_streams": _positive_int(data, "max_concurrent_streams", DEFAULT_MAX_CONCURRENT_STREAMS),
        "max_connections": _positive_int(data, "max_connections", CONNECTIONS_PER_STREAM * _positive_int(
            data, "max_concurrent_streams", DEFAULT_MAX_CONCURRENT_STREAMS) + SPARE_CONNECTIONS),
    })


def _check_fallbacks(rows: List[Dict[str, Any]]) -> None:
    """Each ``fallbacks`` entry is another row's id or a model name the registry routes."""
    from ..registry import route_for

    ids = [row["id"] for row in rows]
    for n, row in enumerate(rows):
        for entry in row["fallbacks"]:
            if entry == row["id"]:
                raise ConfigError("server config models[{}].fallbacks: {!r} is the row itself".format(n, entry))
            if entry not in ids and route_for(entry) is None:
                raise ConfigError("server config models[{}].fallbacks: {!r} is neither a row id ({}) nor a model "
                                  "name agenthub routes (`agenthub models` lists them)".format(
                                      n, entry[:100], ", ".join(ids)))


def make_app(config: Any, environ: Optional[Mapping[str, str]] = None, session: Any = None) -> "AgentHubApp":
    """The WSGI application for ``config`` (a dict or a JSON file's path; see the module docstring).

    ``session``: one requests.Session for every upstream (tests use a replaying one).
    """
    return AgentHubApp(load_config(config, environ), session=session)


# -- helpers --------------------------------------------------------------------------------------


def _host_name(host: str) -> str:
    """A Host header (or an allowed_hosts entry) -> the lower-case name without its port (an IPv6
    address in brackets), read as every host rule reads it (``hosts.trust``); "" when it is not one host."""
    name = authority_host(host).rstrip(".")
    return "[" + name + "]" if ":" in name else name


_DEFAULT_PORTS = {"http": 80, "https": 443}


def _same_origin(origin: str, host: str) -> bool:
    """An Origin header names the host (and port) of the Host header this request was sent to (both read
    as every host rule reads them: ``hosts.trust``)."""
    text = origin.strip()
    try:
        scheme, userinfo, origin_host, port = split_authority(text)
    except ValueError:
        return False  # "null" (a sandboxed page, a file:), or an origin two parsers could read two ways
    if userinfo or any(c in text[len(scheme) + 3:] for c in "/?#@"):
        return False  # something no browser sends
    given = authority_parts(host)
    if given is None or scheme not in _DEFAULT_PORTS:
        return False
    want_port = _DEFAULT_PORTS[scheme] if port is None else port
    host_port = _DEFAULT_PORTS[scheme] if given[1] is None else given[1]
    return _host_name(origin_host if ":" not in origin_host else "[" + origin_host + "]") == _host_name(host) \
        and want_port == host_port


def _check_json(environ: Mapping[str, Any]) -> None:
    """A /v1/ POST says it is JSON: a form or a no-cors fetch from another page cannot (without a preflight)."""
    kind = (environ.get("CONTENT_TYPE") or "").split(";", 1)[0].strip().lower()
    if kind != "application/json":
        raise _Refusal(415, ConfigError("the request body must be sent as Content-Type: application/json (got "
                                        "{!r})".format(kind[:60] or None)))


def _json_encoder() -> Callable[[Any], str]:
    """Compact JSON, non-ASCII escaped (the output is ASCII: no encoding cost, lone surrogates survive),
    bytes as {"__bytes__": base64}, a dict of that one key escaped (``types.to_jsonable``: encoded again from
    it when the text has the key, so a model's arguments spelling it reach the client as they were).  The C
    encoder is called directly where there is one (what ``json.dumps`` ends up calling, minus two Python
    frames per event)."""
    try:
        from json.encoder import c_make_encoder, encode_basestring_ascii  # type: ignore[attr-defined]
    except ImportError:  # pragma: no cover - every CPython has it
        c_make_encoder = None
    if c_make_encoder is None or encode_basestring_ascii is None:  # pragma: no cover - PyPy and friends
        encode = json.JSONEncoder(separators=(",", ":"), default=json_default).encode

        def slow(value: Any) -> str:
            text = encode(value)
            return text if marker_free(text) else encode(to_jsonable(value))
        return slow
    chunks = c_make_encoder(None, json_default, encode_basestring_ascii, None, ":", ",", False, False, True)
    join = "".join

    def dumps(value: Any) -> str:
        text = join(chunks(value, 0))
        return text if '"__bytes__"' not in text else join(chunks(to_jsonable(value), 0))  # (marker_free)
    return dumps


_dumps = _json_encoder()
try:
    from json.encoder import encode_basestring_ascii as _quote  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover
    _quote = None
if _quote is None:  # pragma: no cover - no C accelerator
    _quote = json.encoder.py_encode_basestring_ascii  # type: ignore[attr-defined]
#: a delta event is a fixed frame around its one content item
_DELTA_HEAD = b'data: {"role":"assistant","event_type":"delta","content_items":['
_DELTA_TAIL = b'],"usage_metadata":null,"finish_reason":null,"created_at":'
_TEXT_FRAME = _DELTA_HEAD.decode() + '{"type":"text","text":%s}' + _DELTA_TAIL.decode() + "%d}\n\n"
_FRAGMENT_FRAME = (_DELTA_HEAD.decode() + '{"type":"partial_tool_call","name":%s,"arguments":%s,"tool_call_id":%s}'
                   + _DELTA_TAIL.decode() + "%d}\n\n")
#: the fragments after a call's first: no name, no id
_BARE_FRAGMENT_FRAME = _FRAGMENT_FRAME.replace("%s", '""', 1).replace(',"tool_call_id":%s', ',"tool_call_id":""')


def _encode_event(event: Any) -> bytes:
    """One ``data:`` frame for ``event``: a delta as the fixed frame around its item (the same JSON,
    with less work: a text piece or an argument fragment is quoted straight into it), any other
    event whole."""
    if event["event_type"] == "delta" and len(event) == 6 and event["role"] == "assistant" \
            and event["usage_metadata"] is None and event["finish_reason"] is None:
        items = event["content_items"]
        created = event["created_at"]
        if len(items) == 1 and created.__class__ is int:
            item = items[0]
            kind = item.get("type")
            if kind == "text" and len(item) == 2:
                text = item.get("text")
                if text.__class__ is str:  # most events: one text piece
                    return (_TEXT_FRAME % (_quote(text), created)).encode("ascii")
            elif kind == "partial_tool_call" and len(item) == 4:
                name, arguments, call_id = item.get("name"), item.get("arguments"), item.get("tool_call_id")
                if arguments.__class__ is str and name == "" and call_id == "" and name.__class__ is str \
                        and call_id.__class__ is str:  # most fragments: more arguments of the call under way
                    return (_BARE_FRAGMENT_FRAME % (_quote(arguments), created)).encode("ascii")
                if name.__class__ is str and arguments.__class__ is str and call_id.__class__ is str:
                    return (_FRAGMENT_FRAME % (_quote(name), _quote(arguments), _quote(call_id), created)).encode(
                        "ascii")
            return b"".join((_DELTA_HEAD, _dumps(item).encode("ascii"), _DELTA_TAIL, b"%d}\n\n" % created))
    return b"data: " + _dumps(event).encode("ascii") + b"\n\n"


def _without_arguments(event: Any, announced: Any) -> Tuple[Any, Any]:
    """The runs wire, for a delta of one item that is not a piece: (the event to send, the call now open).
    A call's announcement opens it; its complete ``tool_call`` goes with ``"arguments": null`` when they are a
    non-empty object: by grammar rule 5 (``stream.check_stream``) they are the parse of the fragments the
    client got (an empty one, or one a runner's catch put in place of arguments that did not parse, goes as it is)."""
    item = event["content_items"][0]
    if item.__class__ is not dict:
        return event, announced
    kind = item.get("type")
    if kind == "partial_tool_call":
        if item.get("name"):
            return event, (item.get("name"), item.get("tool_call_id"))
        return event, announced
    if kind != "tool_call":
        return event, announced
    arguments = item.get("arguments")
    if announced is None or arguments.__class__ is not dict or not arguments \
            or (item.get("name"), item.get("tool_call_id")) != announced:
        return event, None
    sent = dict(event)
    sent["content_items"] = [dict(item, arguments=None)]
    return sent, None


def _with_usage_extras(event: Any, asked: Optional[str] = None) -> Any:
    """The items and runs wires (the agenthub client's), for a stop event: its usage_metadata with what the
    upstream reported beside the four buckets, the prompt-cache writes (``stream.Usage.cache_write`` and
    ``cache_write_1h``), the image tokens of the output (``Usage.output_image_tokens``), the audio tokens
    (``Usage.input_audio_tokens``, ``cached_audio_tokens``, ``output_audio_tokens``), the images OpenAI's
    image_generation tool made (``Usage.image_tool_calls``: the turn's price unknown) and the service tier
    that served it (``Usage.service_tier``; where the upstream said none, ``asked``: the tier the call asked
    for, a row's ``default_config`` ``fast_mode`` the client never sent), under those names, so the client prices the turn as this server does; as it is when there are none
    (and for every other client: the data model's four buckets)."""
    usage = event.get("usage_metadata")
    extra = {name: getattr(usage, name, None) for name in ("cache_write", "cache_write_1h", "service_tier")}
    if extra["service_tier"] is None and isinstance(usage, dict):
        extra["service_tier"] = asked
    counts = {name: getattr(usage, name, None) for name in ("output_image_tokens", "input_audio_tokens",
                                                             "cached_audio_tokens", "output_audio_tokens",
                                                             "image_tool_calls")}
    counts = {name: count for name, count in counts.items() if count is not None}
    if counts:
        extra.update(counts)
    elif extra["cache_write"] is None and extra["service_tier"] is None:
        return event
    return dict(event, usage_metadata=dict(usage, **extra))


#: the runs wire (``_run_frame``): ESC, LF and CR in a piece as ESC + one letter, the pieces apart by ESC s
_ESC = "\x1b"
_SEPARATOR = "\x1bs"


def _escaped(piece: str) -> str:
    return piece.replace(_ESC, "\x1be").replace("\n", "\x1bn").replace("\r", "\x1br")


def _run_frame(letter: bytes, pieces: List[str], text: Optional[str] = None) -> bytes:
    """A runs frame: ``data: ~<letter><piece>ESC s<piece>...`` with ``letter`` ``t`` (text pieces) or ``a``
    (argument fragments), the pieces as UTF-8, each with its ESC, LF and CR written ESC e, ESC n, ESC r (a
    frame is one line), ESC s between two.  Text no UTF-8 can carry (a lone surrogate) goes in an items
    frame instead (JSON escapes carry it).  ``text``: the pieces joined by ESC s, when the caller has it."""
    if text is None:
        text = _SEPARATOR.join(pieces)
    if _ESC in (text if len(pieces) == 1 else "".join(pieces)):  # a piece holds an ESC (rare): each escaped
        # (the pieces joined without separators: a search for one character, far cheaper than counting them)
        text = _SEPARATOR.join([_escaped(piece) for piece in pieces])
    else:  # (LF and CR escaped in the whole: a separator holds neither)
        if "\n" in text:
            text = text.replace("\n", "\x1bn")
        if "\r" in text:
            text = text.replace("\r", "\x1br")
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:
        batch = pieces if letter == b"t" else [[piece] for piece in pieces]  # type: Any
        return b"data: " + _dumps(batch).encode("ascii") + b"\n\n"
    return b"".join((b"data: ~", letter, data, b"\n\n"))


#: the pump's markers in its queue (items and runs wires): the plain str pieces after ``_ARG_PIECES`` are argument
#: fragments, those after ``_TEXT_PIECES`` (and before any marker) text pieces.  A marker is queued with the first
#: piece of the other kind, in one ``extend`` (the writer never takes it alone); no piece is wrapped.
_TEXT_PIECES = object()
_ARG_PIECES = object()


def _one_run(batch: List[Any], mode: Any = _TEXT_PIECES) -> Optional[Tuple[bytes, int]]:
    """The runs wire: ``batch`` (what the writer took from the queue) as one runs frame and the size the pump
    counted for it, when it is one run: every item a piece (a str) of the kind ``mode`` (the last marker) says, in
    all at most ``MAX_BATCH_BYTES`` as counted; else None (a marker, a frame, the end or an error in it, or a run
    to cut: ``_Body._gather`` then goes item by item).  The same bytes as ``_gather`` makes of such a batch, with
    the pieces looked at in C (a join) instead of one turn of a Python loop each."""
    try:
        text = _SEPARATOR.join(batch)  # a TypeError at the first item that is no str
    except TypeError:
        return None
    size = len(text) + 14 * len(batch) + 2  # (each piece's length + 16, as the pump counted it: the text less ESC s)
    if size > MAX_BATCH_BYTES:
        return None  # (cut into frames where _gather cuts)
    return _run_frame(b"a" if mode is _ARG_PIECES else b"t", batch, text), size


#: seconds a caller is told to wait (Retry-After) when the server's shared store cannot be reached
STORE_RETRY_AFTER_SECONDS = 5


def _status_of(error: BaseException) -> int:
    from ..stores import StoreError

    if isinstance(error, BudgetExceededError):
        return 402  # the row's budget cannot afford the request: nothing was sent (not a rate limit to retry)
    if isinstance(error, StoreError):
        return 503  # the shared limiter's or budget's store cannot answer: nothing was sent
    if isinstance(error, UpstreamError):
        status = getattr(error, "status", None)
        return status if isinstance(status, int) and 400 <= status <= 599 else 502
    if isinstance(error, ConfigError):
        return 400
    if isinstance(error, TransportError):
        return 504 if getattr(error, "timeout", False) else 502
    if isinstance(error, StreamError):
        return 502
    return 500


def _status_line(status: int) -> str:
    try:
        return "{} {}".format(status, http.HTTPStatus(status).phrase)
    except ValueError:
        return "{} {}".format(status, "Overloaded" if status == 529 else "Error")


def _public(error: BaseException) -> BaseException:
    """``error`` as the server's callers may see it: a TransportError's message names the upstream's
    address, a StoreError's the store's (a Redis host and port, a SQLite file's path; the server's own business),
    so they get what happened without where (the log has it)."""
    from ..stores import StoreError

    if isinstance(error, StoreError):
        return StoreError("agenthub serve: the model row's shared store (its limiter or budget) could not answer; "
                          "nothing was sent upstream", retryable=bool(error.retryable))
    if not isinstance(error, TransportError):
        return error
    if error.aborted:
        what = "was stopped"
    elif error.timeout:
        what = "timed out (total deadline)" if error.deadline else "timed out"
    else:
        what = "could not be reached or broke off"
    fields = {k: v for k, v in (getattr(error, "_fields", None) or {}).items() if k not in ("message", "url")}
    public = TransportError("agenthub serve: the upstream {}".format(what), **fields)
    return public


class _Refusal(Exception):
    """An answer other than a stream, decided before one opened."""

    def __init__(self, status: int, error: AgentHubError, headers: Iterable[Tuple[str, str]] = ()) -> None:
        super().__init__(status)
        self.status = status
        self.error = error
        self.headers = list(headers)


# -- the application ------------------------------------------------------------------------------


class _Model(object):
    __slots__ = ("id", "client", "default_config")

    def __init__(self, id: str, client: Any, default_config: Dict[str, Any]) -> None:
        self.id = id
        self.client = client
        self.default_config = default_config


class AgentHubApp(object):
    """The WSGI application (``make_app`` builds it from a config)."""

    def __init__(self, settings: Mapping[str, Any], session: Any = None) -> None:
        from ..client import AutoLLMClient
        from ..validate import check_config

        self.models = {}  # type: Dict[str, _Model]
        secrets = []  # type: List[str]
        own = {}  # type: Dict[str, Any]  # row id -> its client without fallbacks (what a fallback entry uses)
        shared = {}  # type: Dict[str, Dict[str, Any]]  # row id -> its limiter / budget arguments
        for rows_pass in ("own", "fallbacks"):
            for n, row in enumerate(settings["models"]):
                if rows_pass == "fallbacks" and not row.get("fallbacks"):
                    continue
                where = "server config models[{}] ({!r})".format(n, row["id"])
                default_config = dict(row.get("default_config") or {})
                try:
                    check_config(default_config)
                    kwargs = {}  # type: Dict[str, Any]
                    if "max_retries" in row:
                        kwargs["max_retries"] = row["max_retries"]
                    if "timeout" in row:
                        kwargs["timeout"] = tuple(row["timeout"]) if isinstance(row["timeout"], list) else row["timeout"]
                    if rows_pass == "fallbacks":
                        kwargs["fallbacks"] = [own.get(entry, entry) for entry in row["fallbacks"]]
                    if row["id"] not in shared:  # one limiter / budget per row, whichever pass builds it
                        shared[row["id"]] = _shared_state(row)
                    kwargs.update(shared[row["id"]])
                    budget = kwargs.get("budget")
                    if budget is not None and not budget.allow_unpriced and offers_image_tool(
                            default_config.get("extra_body")):
                        raise ConfigError("default_config offers the image_generation tool: " + IMAGE_TOOL_REFUSED)
                    # the row's extra_headers are its endpoint's: its client sends them, on every request it makes
                    # (as another row's fallback too) and no other row's client ever does
                    headers = default_config.pop("extra_headers", None)
                    client = AutoLLMClient(row["model"], api_key=row.get("api_key"), base_url=row.get("base_url"),
                                           client_type=row.get("client_type"), session=session,
                                           default_headers=headers, **kwargs)
                except ConfigError as exc:
                    raise ConfigError("{}: {}".format(where, exc)) from None
                own.setdefault(row["id"], client)
                for each in (client,) + client.fallbacks:  # a fallback by model name has its own key
                    secrets.extend(value for value in each.credential_values() if isinstance(value, str))
                self.models[row["id"]] = _Model(row["id"], client, default_config)
        self.api_keys = list(settings["api_keys"])
        self._keys = [key.encode("utf-8") for key in self.api_keys]
        self._secrets = sorted(set(s for s in secrets + self.api_keys if len(s) >= 8), key=len, reverse=True)
        self.allowed_hosts = frozenset(settings["allowed_hosts"])
        self.max_body_bytes = settings["max_body_bytes"]
        self.max_concurrent_streams = settings["max_concurrent_streams"]
        self.keepalive_seconds = settings["keepalive_seconds"]
        #: the built-in server's connections open at once (serve())
        self.max_connections = settings.get("max_connections", CONNECTIONS_PER_STREAM * self.max_concurrent_streams
                                            + SPARE_CONNECTIONS)
        #: the built-in server's socket timeouts (serve())
        self.timeouts = {key: settings.get(key, default) for key, default in zip(TIMEOUT_KEYS, (
            DEFAULT_HEADER_TIMEOUT_SECONDS, DEFAULT_BODY_TIMEOUT_SECONDS, DEFAULT_WRITE_TIMEOUT_SECONDS))}
        self._slots = threading.BoundedSemaphore(self.max_concurrent_streams)
        self.metrics = Metrics([(row["id"], row["model"], row.get("client_type") or self.models[row["id"]].client.client_type)
                                for row in settings["models"]], self.max_concurrent_streams)
        self._open = 0
        self._open_lock = threading.Lock()

    def __repr__(self) -> str:
        return "<AgentHubApp models={} api_keys={}>".format(sorted(self.models), len(self.api_keys))

    @property
    def open_streams(self) -> int:
        """Streams whose upstream is still being read."""
        return self._open

    # -- WSGI ------------------------------------------------------------------------------
    def __call__(self, environ: Dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        try:
            return self._route(environ, start_response)
        except _Refusal as refusal:
            return self._json_error(start_response, refusal.status, refusal.error, refusal.headers)
        except Exception:  # a bug of ours: the client gets a bare 500, the log the traceback
            logger.exception("agenthub serve: internal error on %s %s", environ.get("REQUEST_METHOD"),
                             environ.get("PATH_INFO"))
            return self._json_error(start_response, 500, AgentHubError("internal server error"))

    def _route(self, environ: Dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        self._check_host(environ)
        path = environ.get("PATH_INFO") or "/"
        method = (environ.get("REQUEST_METHOD") or "GET").upper()
        if path == "/":
            _allow(method, ("GET", "HEAD"))
            return self._page(start_response, method)
        if path == "/v1" or path.startswith("/v1/"):
            self._check_origin(environ)
            self._check_key(environ)
            if path == "/v1/metrics":
                _allow(method, ("GET", "HEAD"))
                body = self.metrics.render().encode("utf-8")
                start_response("200 OK", [("Content-Type", METRICS_CONTENT_TYPE), ("Content-Length", str(len(body))),
                                          ("Cache-Control", "no-store"), ("X-Content-Type-Options", "nosniff")])
                return [] if method == "HEAD" else [body]
            if path == "/v1/models":
                _allow(method, ("GET", "HEAD"))
                data = [{"id": model_id, "object": "model"} for model_id in self.models]
                return self._json(start_response, "200 OK", {"object": "list", "data": data}, method == "HEAD")
            if path == "/v1/stream":
                _allow(method, ("POST",))
                _check_json(environ)
                return self._stream(environ, start_response)
        raise _Refusal(404, ConfigError("no such endpoint: {}".format(path[:200])))

    # -- checks ----------------------------------------------------------------------------
    def _check_host(self, environ: Mapping[str, Any]) -> None:
        host = environ.get("HTTP_HOST")
        if "*" in self.allowed_hosts:
            return
        if not host:
            raise _Refusal(400, ConfigError("a Host header is required"))
        if not _host_name(host) or _host_name(host) not in self.allowed_hosts:
            raise _Refusal(400, ConfigError("the Host {!r} is not one of this server's allowed_hosts".format(
                host[:100])))

    def _check_origin(self, environ: Mapping[str, Any]) -> None:
        """Cross-site request forgery: a browser on another site's page sends its Origin (or Sec-Fetch-Site:
        cross-site); only the server's own origin (the Host it was asked by) gets an answer on /v1/."""
        site = (environ.get("HTTP_SEC_FETCH_SITE") or "").strip().lower()
        origin = environ.get("HTTP_ORIGIN")
        if site == "cross-site" or (origin is not None and not _same_origin(origin, environ.get("HTTP_HOST") or "")):
            raise _Refusal(403, ConfigError("a cross-site request is refused: the Origin {!r} is not this server's "
                                            "own (a page elsewhere cannot use this server)".format(
                                                (origin or "")[:100])))

    def _check_key(self, environ: Mapping[str, Any]) -> None:
        if not self._keys:
            return
        header = environ.get("HTTP_AUTHORIZATION") or ""
        scheme, _, token = header.strip().partition(" ")
        given = token.strip().encode("latin-1", "replace")  # WSGI headers are latin-1 decoded bytes
        ok = False
        for key in self._keys:  # every key compared, each in constant time
            ok = hmac.compare_digest(key, given) | ok
        if scheme.lower() != "bearer" or not ok:
            raise _Refusal(401, AuthenticationError(
                "a valid server key is required: Authorization: Bearer <one of the server's api_keys>",
                client="agenthub", status=401, error_type="authentication_error", retryable=False),
                [("WWW-Authenticate", 'Bearer realm="agenthub"')])

    def _read_body(self, environ: Mapping[str, Any]) -> bytes:
        limit = self.max_body_bytes
        stream = environ["wsgi.input"]
        length = environ.get("CONTENT_LENGTH")
        too_big = _Refusal(413, ConfigError("the request body is over this server's limit of {} bytes".format(limit)))
        try:
            if environ.get("wsgi.input_terminated"):  # the server decoded the framing (gunicorn: chunked too)
                data = stream.read(limit + 1)
                if len(data) > limit:
                    raise too_big
                return data
            if environ.get("HTTP_TRANSFER_ENCODING"):  # framing this server does not decode for us
                raise _Refusal(411, ConfigError("a Content-Length is required (Transfer-Encoding is not accepted "
                                                "here)"))
            if length:
                if not _DIGITS.match(length):  # int() would take "1_298", "+12" or " 12"
                    raise _Refusal(400, ConfigError("a malformed Content-Length"))
                size = int(length)
                if size > limit:
                    raise too_big
                data = stream.read(size) if size > 0 else b""
                if len(data) < size:
                    raise _Refusal(400, ConfigError("the request body ended before its Content-Length"))
                return data
        except OSError:  # the built-in server's body timeout, or the connection went away
            raise _Refusal(408, ConfigError("the request body did not arrive in time")) from None
        raise _Refusal(411, ConfigError("a Content-Length is required"))

    # -- answers -----------------------------------------------------------------------------
    def _scrub(self, text: str) -> str:
        return scrub_text(text, self._secrets)  # (what a cut left of one too)

    def _error_bytes(self, error: BaseException) -> bytes:
        return self._scrub(json.dumps(error_to_json(_public(error)), separators=(",", ":"),
                                      default=str)).encode("utf-8")

    def _json(self, start_response: Callable[..., Any], status: str, document: Any, head: bool = False,
              headers: Iterable[Tuple[str, str]] = ()) -> List[bytes]:
        body = json.dumps(document, separators=(",", ":")).encode("utf-8")
        start_response(status, [("Content-Type", "application/json"), ("Content-Length", str(len(body))),
                                ("Cache-Control", "no-store"), ("X-Content-Type-Options", "nosniff")] + list(headers))
        return [] if head else [body]

    def _json_error(self, start_response: Callable[..., Any], status: int, error: BaseException,
                    headers: Iterable[Tuple[str, str]] = ()) -> List[bytes]:
        body = self._error_bytes(error)
        extra = list(headers)
        retry_after = getattr(error, "retry_after", None)
        if status == 503 and retry_after is None and getattr(error, "retryable", False):
            retry_after = STORE_RETRY_AFTER_SECONDS  # (a StoreError: the store unreachable for now)
        if isinstance(retry_after, (int, float)) and not isinstance(retry_after, bool) and 0 <= retry_after < 1e6:
            extra.append(("Retry-After", str(int(math.ceil(retry_after)))))
        start_response(_status_line(status), [("Content-Type", "application/json"), ("Content-Length", str(len(body))),
                                              ("Cache-Control", "no-store"), ("X-Content-Type-Options", "nosniff")]
                       + extra)
        return [body]

    def _page(self, start_response: Callable[..., Any], method: str) -> List[bytes]:
        try:
            import importlib

            playground = importlib.import_module(__package__ + ".playground")
            page, headers = playground.PAGE, list(playground.HEADERS)
        except ModuleNotFoundError as exc:
            if exc.name != __package__ + ".playground":
                raise
            page, headers = _PLACEHOLDER_PAGE, _PLACEHOLDER_HEADERS
        if isinstance(page, str):
            page = page.encode("utf-8")
        start_response("200 OK", headers + [("Content-Length", str(len(page)))])
        return [] if method == "HEAD" else [page]

    # -- the stream ------------------------------------------------------------------------
    def _stream(self, environ: Mapping[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        raw = self._read_body(environ)
        try:
            text = raw.decode("utf-8")
            request = _json_loads(text)
        except (UnicodeDecodeError, ValueError, RecursionError):
            raise _Refusal(400, ConfigError("the request body is not a JSON document")) from None
        if not isinstance(request, dict):
            raise _Refusal(400, ConfigError("the request body must be a JSON object {model, messages, config}"))
        unknown = sorted(str(k) for k in request if k not in REQUEST_KEYS)
        if unknown:
            raise _Refusal(400, ConfigError("unknown request key(s) {}; known: model, messages, config".format(unknown)))
        model_id = request.get("model")
        if not isinstance(model_id, str):
            raise _Refusal(400, ConfigError("model must be one of this server's model ids (a string)"))
        model = self.models.get(model_id)
        if model is None:
            raise _Refusal(404, ConfigError("unknown model {!r}; this server has: {}".format(
                model_id[:100], ", ".join(sorted(self.models)))))
        self.metrics.request(model_id)
        try:
            return self._start(model, request, text, start_response, environ)
        except _Refusal as refusal:
            self.metrics.error(model_id, refusal.error)
            raise

    def _start(self, model: "_Model", request: Dict[str, Any], text: str,
               start_response: Callable[..., Any], environ: Optional[Mapping[str, Any]] = None) -> Iterable[bytes]:
        model_id = model.id
        messages = request.get("messages")
        config = request.get("config")
        config = {} if config is None else config
        if not isinstance(config, dict):
            raise _Refusal(400, ConfigError("config must be an object (UniConfig)"))
        if "trace_id" in config:
            raise _Refusal(400, ConfigError("config['trace_id'] is not accepted by the server (traces are written "
                                            "by the client)"))
        for key in PASSTHROUGH_KEYS:
            if key in config:
                # the wire body and headers are the server's: extra_body {"model": ...} would reach another model
                # than the table names, on the server's key (a model's default_config may still set them)
                raise _Refusal(400, UnsupportedParameterError(
                    "agenthub: config[{!r}] is not accepted by the server (set it in the model's "
                    "default_config)".format(key), client="agenthub", parameter=key))
        if '"__bytes__"' in text:
            try:
                messages = from_jsonable(messages, strict=True)  # a payload that is not base64: ValueError
                config = from_jsonable(config, strict=True)
            except ValueError:
                raise _Refusal(400, ConfigError("a {\"__bytes__\": ...} value is not base64")) from None
            except RecursionError:
                raise _Refusal(400, _TOO_DEEP) from None
            if not isinstance(config, dict):  # {"__bytes__": ...} itself
                raise _Refusal(400, ConfigError("config must be an object (UniConfig)"))
        merged = dict(model.default_config)
        merged.update(config)
        try:
            stream = model.client.streaming_response(messages, merged)
        except ConfigError as exc:
            raise _Refusal(400, exc) from None
        except RecursionError:
            raise _Refusal(400, _TOO_DEEP) from None
        if not self._slots.acquire(False):
            stream.close()
            raise _Refusal(503, ServerError(
                "the server is at its limit of {} concurrent streams".format(self.max_concurrent_streams),
                client="agenthub", status=503, error_type="overloaded", retry_after=1.0, retryable=True))
        self.metrics.opened(model_id)
        wire = (environ.get(WIRE_HEADER) or "").strip().lower() if environ is not None else ""
        pump = _Pump(self, stream, model_id, on_end=self._ended(model, stream), trace=continue_trace(environ),
                     items=wire in ("items", "runs"), runs=wire == "runs")
        try:
            pump.start()
        except BaseException:
            self._release(model_id)
            raise
        gone = environ.get(CLIENT_GONE) if environ is not None else None
        if _waited(pump.queue, self.keepalive_seconds, gone, pump):
            first = pump.queue.get(False)
        else:
            first = KEEPALIVE  # the upstream is silent (or the client left: its upstream is aborted): a keep-alive
        if isinstance(first, BaseException):
            self._release(model_id)  # the upstream failed before its first event: no stream was handed out
            return self._json_error(start_response, _status_of(first), first)
        try:
            start_response("200 OK", list(_SSE_HEADERS))
        except BaseException:
            pump.stop()
            self._release(model_id)
            raise
        return _Body(self, pump, first, gone)

    def _release(self, model_id: str) -> None:
        """A stream's response is closed (or was never handed out): its slot is free."""
        self.metrics.closed(model_id)
        self._slots.release()

    def _ended(self, model: "_Model", stream: Any = None) -> Callable[[Any, Optional[BaseException]], None]:
        """What the pump reports when the upstream is done: the answer's usage (metrics), and the error."""
        upstream_model = model.client.model

        def ended(last: Any, error: Optional[BaseException]) -> None:
            if error is not None:
                self.metrics.error(model.id, error)
            if isinstance(last, dict) and last.get("event_type") == "stop":  # (an answer, billed: counted even when
                # the call failed after it, a budget's store that could not settle it, say)
                call = getattr(stream, "_call", None)  # (priced as the call: its start, a cache hit, its tier)
                route = getattr(call, "route", None)  # priced as the model that answered (a fallback row's, say)
                answered = str(route["model"]) if isinstance(route, dict) and route.get("model") else upstream_model
                self.metrics.answer(model.id, answered, last.get("usage_metadata"), call)

        return ended

    def _stream_opened(self) -> None:
        with self._open_lock:
            self._open += 1

    def _stream_closed(self) -> None:
        """The upstream of a stream is no longer read (its slot is free once its response is closed too)."""
        with self._open_lock:
            self._open -= 1


class _Queue(object):
    """The pump's hand-off to the writer (one thread puts, one takes): ``queue.SimpleQueue``'s ``put``, ``get``,
    ``empty`` and ``qsize``, over a plain list the writer takes whole (``take``: what queued up, in one slice, not
    one ``get`` per piece).  A writer with nothing to take, or whose next write is not due yet (``due``: the
    monotonic time before which it writes nothing), waits (``wait``) with ``waiting`` set; a put that finds it set
    once ``due`` has passed wakes it.  The pump appends to ``items`` itself (``put`` inlined: the append, then the
    wake).  Each list operation is atomic under the GIL and the pump only appends, so a slice taken and deleted
    from the front loses nothing the pump adds meanwhile.

    ``parked``: the pump, having woken the writer while it reads a burst, waits (on ``_ack``) until the writer is
    back for more, its write done (``unpark``).  A writer woken while the pump runs has to win the interpreter
    lock from it; the pump lets go of that lock at each read of its socket and takes it again at once, waking the
    writer for nothing each time (hundreds of context switches a stream, and a write whose moment depended on
    which thread the kernel ran first).  Parked, the pump holds no lock: the write happens now, and the pump reads
    on after it."""

    __slots__ = ("items", "waiting", "due", "parked", "_bell", "_ack")

    def __init__(self) -> None:
        self.items = []  # type: List[Any]
        self.waiting = False  # the writer waits for a put (set by it, cleared by the put that wakes it)
        self.due = 0.0  # the writer's next write is not before this monotonic time (set by the writer)
        self.parked = False  # the pump waits for the writer to be back for more (set by the pump, cleared by unpark)
        self._bell = queue.SimpleQueue()  # type: Any  # one token per wake (a stale one: one spurious look)
        self._ack = queue.SimpleQueue()  # type: Any  # one token per unpark (a stale one: one short park)

    def put(self, item: Any) -> None:
        self.items.append(item)
        if self.waiting and self.due <= time.monotonic():
            self.wake()

    def wake(self) -> None:
        self.waiting = False
        self._bell.put(None)

    def park(self, timeout: float) -> bool:
        """(The pump) wake the waiting writer and wait until it is back for more, at most ``timeout`` seconds (a
        client that does not read, or a response not iterated yet, does not hold the upstream's reading back):
        whether it came back in time."""
        self.parked = True
        self.wake()
        try:
            self._ack.get(True, timeout)
            return True
        except queue.Empty:
            self.parked = False
            return False

    def unpark(self) -> None:
        """(The writer, back for more, or whoever ends the stream) a parked pump reads on."""
        if self.parked:
            self.parked = False
            self._ack.put(None)

    def wait(self, timeout: float) -> bool:
        """Whether an item is queued and the writer's time (``due``) has come, waiting for that at most ``timeout``
        seconds (an item queued before ``due`` is answered at ``due``, whatever the pump does meanwhile)."""
        items = self.items
        now = time.monotonic()
        if items and self.due <= now:
            return True
        deadline = now + timeout
        while True:
            self.waiting = True
            due = self.due
            if items and due <= now:  # (put before the flag was set: it did not ring)
                self.waiting = False
                return True
            left = (due if now < due < deadline else deadline) - now
            if left <= 0:
                self.waiting = False
                return bool(items)
            try:
                self._bell.get(True, left)
            except queue.Empty:
                pass
            now = time.monotonic()
            if items and due <= now:
                self.waiting = False
                return True

    def take(self) -> List[Any]:
        """Every item queued by now, in order, removed from the queue."""
        items = self.items
        count = len(items)
        taken = items[:count]
        del items[:count]
        return taken

    def get(self, block: bool = True, timeout: Optional[float] = None) -> Any:
        if not self.items and (not block or not self.wait(threading.TIMEOUT_MAX if timeout is None else timeout)):
            raise queue.Empty
        return self.items.pop(0)

    def empty(self) -> bool:
        return not self.items

    def qsize(self) -> int:
        return len(self.items)


def _waited(hand_off: "_Queue", seconds: float, gone: Optional[Callable[[], bool]], pump: "_Pump") -> bool:
    """Whether an item is queued within ``seconds``.  With ``gone`` (the built-in server's look at the connection),
    it is looked at every ``GONE_CHECK_SECONDS`` meanwhile: a client that closed the connection has ``pump``
    stopped (its upstream aborted) at once, and False is answered."""
    if gone is None or pump.stopped:
        return hand_off.wait(seconds)
    deadline = time.monotonic() + seconds
    while True:
        left = deadline - time.monotonic()
        if hand_off.wait(min(left, GONE_CHECK_SECONDS)):
            return True
        if gone():
            pump.stop()
            return False
        if left <= GONE_CHECK_SECONDS:
            return False


class _Pump(object):
    """Reads one upstream stream in a thread of its own; the events, encoded, go to ``queue``.

    The queue then holds bytes (one ``data:`` frame per event), and last either the end
    marker or the error that ended the stream.  With ``items`` (the client asked for the items wire),
    a delta event of one text piece is queued as its text (a str) and one of an argument fragment
    without name and id as its arguments (a str after the marker ``_ARG_PIECES``; ``_TEXT_PIECES`` before
    text pieces again), not encoded: the writer encodes each run of them as one JSON array.  With ``runs`` too
    (the runs wire), the writer writes each run of text pieces, and each of argument fragments, as one runs frame
    (``_run_frame``), and a call's complete ``tool_call`` whose arguments are the parse of the fragments sent
    before it (grammar rule 5) goes with ``"arguments": null``: the client parses the fragments it has.
    """

    def __init__(self, app: AgentHubApp, stream: Any, model_id: str,
                 on_end: Optional[Callable[[Any, Optional[BaseException]], None]] = None, trace: Any = None,
                 items: bool = False, runs: bool = False) -> None:
        self.app = app
        self.runs = runs and items  # the runs wire (an extension of the items wire)
        self.items = items  # the items wire: a plain delta's text piece or argument fragment goes to the writer
        self.trace = trace  # the incoming request's trace context, current while the stream is read (telemetry)
        self.stream = stream
        self.model_id = model_id
        self.on_end = on_end  # (the last event, the error that ended the stream or None), once
        self.queue = _Queue()
        self.events = 0
        self.stopped = False
        self.put_bytes = 0  # written by the pump's thread only
        self.taken_bytes = 0  # written by the response's thread only (_Body)
        self.thread = threading.Thread(target=self._run, name="agenthub-serve-upstream", daemon=True)

    def start(self) -> None:
        self.app._stream_opened()
        try:
            self.thread.start()
        except BaseException:
            self.app._stream_closed()
            raise

    def queued_bytes(self) -> int:
        """Bytes of frames put in the queue and not taken yet (each counter is written by one thread)."""
        return self.put_bytes - self.taken_bytes

    def _asked_tier(self) -> Optional[str]:
        """The tier the call asked for (``catalog.call_tier``: its merged config's ``fast_mode``), of the model
        that answered: the one the metrics price a turn at when the upstream names none."""
        from ..catalog import call_tier

        call = getattr(self.stream, "_call", None)
        route = getattr(call, "route", None)
        model = route.get("model") if isinstance(route, dict) else None
        model = model or getattr(call, "model", None)
        return call_tier(str(model), call) if model else None

    def _run(self) -> None:
        if self.trace is not None:
            with self.trace:
                return self._read()
        return self._read()

    def _read(self) -> None:
        hand_off = self.queue
        put = hand_off.put
        queued = hand_off.items
        append = queued.append  # (a piece: put inlined, see _Queue)
        extend = queued.extend
        mode = _TEXT_PIECES  # the kind of the pieces queued last (a marker goes with the first of the other kind)
        encode = _encode_event
        monotonic = time.monotonic
        park_seconds = PARK_SECONDS
        started = monotonic()
        outcome = "done"
        count = 0
        limit = MAX_QUEUED_FRAMES
        byte_limit = MAX_QUEUED_BYTES
        event = error = None  # type: Any
        items = self.items
        runs = self.runs
        announced = None  # type: Any  # the runs wire: (name, id) of the call whose fragments went out
        put_bytes = 0  # (self.put_bytes, kept here: set there before a wait for room and at the end)
        # the queue is looked at only once ``count`` passes ``frame_room`` or ``put_bytes`` passes ``byte_room``:
        # till then it cannot hold more than ``limit`` items (one put per count) or ``byte_limit`` bytes not taken
        frame_room = limit
        byte_room = byte_limit
        try:
            for event in self.stream:
                if items and event["event_type"] == "delta" and event["usage_metadata"] is None \
                        and event["finish_reason"] is None and len(event) == 6:
                    # the items wire's pieces: a text piece as its text, an argument fragment without name and id
                    # (a call's second fragment on) as its arguments, each a bare str after its kind's marker; its
                    # size in the queue: the string's length + 16.  Any other item goes as the whole event.
                    try:
                        (item,) = event["content_items"]  # (one item; cheaper than len() and [0])
                    except (TypeError, ValueError):
                        item = None
                    piece = None  # type: Any  # the kind of piece the event is (_TEXT_PIECES, _ARG_PIECES), if one
                    if item.__class__ is dict:
                        size = len(item)
                        if size == 2:
                            text = item.get("text")
                            if text.__class__ is str and item["type"] == "text":
                                piece = _TEXT_PIECES
                        elif size == 4:
                            text = item.get("arguments")
                            if text.__class__ is str and item["type"] == "partial_tool_call" and item["name"] == "" \
                                    and item["tool_call_id"] == "":
                                piece = _ARG_PIECES
                    if piece is not None:
                        put_bytes += len(text) + 16
                        if piece is mode:
                            append(text)
                        else:  # the other kind: its marker and the piece in one extend
                            mode = piece
                            extend((piece, text))
                            frame_room -= 1  # (two items for one count)
                        if hand_off.waiting and hand_off.due <= monotonic():
                            hand_off.park(park_seconds)  # the writer's turn: it writes now, the pump reads on after
                        count += 1
                        if count > frame_room or put_bytes > byte_room:
                            frame_room, byte_room = self._room(count, put_bytes)
                        continue
                if runs and event["event_type"] == "delta" and len(event["content_items"]) == 1:
                    event, announced = _without_arguments(event, announced)
                # (a stop event is sent with its cache writes; the event itself stays as it is: the metrics read it)
                frame = encode(_with_usage_extras(event, self._asked_tier()) if items and event["event_type"] == "stop"
                               else event)
                put_bytes += len(frame)
                append(frame)
                if hand_off.waiting and hand_off.due <= monotonic():
                    hand_off.park(park_seconds)
                count += 1
                if count > frame_room or put_bytes > byte_room:
                    frame_room, byte_room = self._room(count, put_bytes)
            put(_END)
        except AgentHubError as exc:
            outcome = "client gone" if self.stopped else type(exc).__name__
            if isinstance(exc, TransportError) and not self.stopped:
                outcome += " ({})".format(self.app._scrub(str(exc))[:500])
            error = None if self.stopped else exc  # a client that left is no error of the stream's
            if error is not None and not isinstance(exc, ConfigError):
                # the upstream failed: logged by default (the caller's answer names no address; this line does)
                logger.warning("agenthub serve: model %s: %s (answered %d) after %d events: %s", self.model_id,
                               type(exc).__name__, _status_of(exc), count, self.app._scrub(str(exc))[:1000])
            put(exc)
        except BaseException as exc:  # a bug of ours: logged, the client gets an AgentHubError
            logger.exception("agenthub serve: the stream of model %r failed", self.model_id)
            outcome = "internal error"
            error = exc
            put(exc)
        finally:
            self.events = count
            self.put_bytes = put_bytes
            try:
                self.stream.close()
            except Exception:  # pragma: no cover - closing is best effort
                pass
            self.app._stream_closed()
            if self.on_end is not None:
                try:
                    self.on_end(event, error)
                except Exception:  # pragma: no cover - the metrics never end a stream
                    logger.exception("agenthub serve: counting the stream of model %r failed", self.model_id)
            logger.info("agenthub serve: model=%s events=%d outcome=%s seconds=%.3f", self.model_id, count, outcome,
                        time.monotonic() - started)

    def _room(self, count: int, put_bytes: int) -> Tuple[int, int]:
        """The pump's look at the queue (``_read``), ``count`` items put and ``put_bytes`` bytes so far: a wait for
        room if more than ``MAX_QUEUED_FRAMES`` items or ``MAX_QUEUED_BYTES`` bytes wait for the writer; then the
        count and the bytes the pump may reach before it looks again (the writer only ever takes meanwhile)."""
        self.put_bytes = put_bytes
        queued = self.queue.items
        if len(queued) > MAX_QUEUED_FRAMES or put_bytes - self.taken_bytes > MAX_QUEUED_BYTES:
            self._wait_for_room()
        return count + MAX_QUEUED_FRAMES - len(queued), self.taken_bytes + MAX_QUEUED_BYTES

    def _wait_for_room(self) -> None:
        """A client slower than the upstream: stop reading the upstream (TCP pushes back on it) until
        the writer took half the queued frames and bytes; a writer that takes nothing for
        WRITER_STALL_SECONDS ends the stream (the abort shows as the stream's end)."""
        deadline = time.monotonic() + WRITER_STALL_SECONDS
        size = self.queue.qsize()
        while not self.stopped and (size > MAX_QUEUED_FRAMES // 2 or self.queued_bytes() > MAX_QUEUED_BYTES // 2):
            time.sleep(0.005)
            now = self.queue.qsize()
            if now < size:
                deadline = time.monotonic() + WRITER_STALL_SECONDS
            elif time.monotonic() > deadline:
                self.stop()
            size = now

    def stop(self) -> None:
        """The client went away (or the server closed the response): abort the upstream."""
        if not self.stopped:
            self.stopped = True
            self.stream.abort()
        self.queue.unpark()


class _Body(object):
    """The response iterable: encoded events as they come (several at once when they queued up),
    a keep-alive comment after ``keepalive_seconds`` of silence, ``[DONE]`` or an error event last.

    The writer writes at most once per ``GATHER_SECONDS``: what the pump queues within that time of the last
    write goes out with the next one, at that time; what comes after a longer silence goes out at once.  So a
    burst goes out in a few writes instead of one per event (and the pump is not interrupted by a writer woken
    for every event), and a stream whose events come one at a time (a model writing) is written as each
    arrives."""

    def __init__(self, app: AgentHubApp, pump: _Pump, first: Any, gone: Optional[Callable[[], bool]] = None) -> None:
        self._app = app
        self._gone = gone  # the built-in server's look at the connection (CLIENT_GONE), else None
        self._pump = pump
        self._first = first
        self._done = False
        self._closed = False
        self._written = 0.0  # when the last write was made (time.monotonic())
        self._queued = pump.queue.items  # (the pump's list: taken from in place, never replaced)
        self._take = pump.queue.take
        self._runs_wire = getattr(pump, "runs", False)
        self._mode = _TEXT_PIECES  # the kind of the plain str pieces the pump queues now (its last marker)

    def __iter__(self) -> "_Body":
        return self

    def __next__(self) -> bytes:
        hand_off = self._pump.queue
        if hand_off.parked:
            hand_off.unpark()  # the write before is done: the pump reads on
        if self._first is not None:
            item, self._first = self._first, None
            if item is KEEPALIVE:
                return item
            batch = self._take()
            batch.insert(0, item)
        elif self._done:
            raise StopIteration
        else:
            # at most one write per GATHER_SECONDS (hand_off.due): what queues up until then goes with this one
            hand_off.due = self._written + GATHER_SECONDS
            if not _waited(hand_off, self._app.keepalive_seconds, self._gone, self._pump):
                return KEEPALIVE  # (a client that left meanwhile: its upstream was aborted, the end comes next)
            wait = hand_off.due - time.monotonic()
            if wait > 0:  # (only after a wait shorter than the time to due)
                time.sleep(wait)
            batch = self._take()
        if len(batch) == 1 and batch[0].__class__ is bytes:
            item = batch[0]
            self._pump.taken_bytes += len(item)
            self._written = time.monotonic()
            return item  # one event: no join
        if self._runs_wire:
            run = _one_run(batch, self._mode)
            if run is not None:  # (nearly every write of a long answer: its pieces since the last)
                frame, taken = run
                self._pump.taken_bytes += taken
                self._written = time.monotonic()
                return frame
        return self._gather(batch)

    def _gather(self, batch: List[Any]) -> bytes:
        """The items queued by now (``batch``) as one write: on the items wire each run of pieces as one
        ``data: [piece, ...]`` frame; on the runs wire each run of text pieces, and each of argument fragments,
        as one runs frame (``_run_frame``); a frame's bytes as they are; the end or an error last."""
        runs = self._runs_wire
        mode = self._mode  # the kind of the str pieces (the last marker): on the runs wire, of the group's too
        wrap = not runs and mode is _ARG_PIECES  # the items wire's fragment: ["<arguments>"]
        parts = []  # type: List[bytes]
        group = []  # type: List[Any]  # the pieces of the frame under way
        group_bytes = taken = 0
        for item in batch:
            if item.__class__ is str:  # a piece: its size as the pump counted it
                group.append([item] if wrap else item)
                size = len(item) + 16
                taken += size
                group_bytes += size
                if group_bytes > MAX_BATCH_BYTES:
                    parts.append(self._frame(mode, group))
                    group = []
                    group_bytes = 0
            elif item is _TEXT_PIECES or item is _ARG_PIECES:  # the pieces after it are of its kind
                if runs:
                    if group and item is not mode:  # (a runs frame holds one kind; an items frame both)
                        parts.append(self._frame(mode, group))
                        group = []
                        group_bytes = 0
                else:
                    wrap = item is _ARG_PIECES
                mode = item
            else:
                if group:
                    parts.append(self._frame(mode, group))
                    group = []
                    group_bytes = 0
                taken += self._other(item, parts)
                if self._done:
                    break
        if group:
            parts.append(self._frame(mode, group))
        self._mode = mode
        self._pump.taken_bytes += taken
        self._written = time.monotonic()
        return b"".join(parts)

    def _frame(self, mode: Any, group: List[Any]) -> bytes:
        """One frame of a run of pieces: a runs frame of the kind ``mode`` says (runs wire), else an items frame."""
        if self._runs_wire:
            return _run_frame(b"a" if mode is _ARG_PIECES else b"t", group)
        return b"data: " + _dumps(group).encode("ascii") + b"\n\n"

    def _other(self, item: Any, parts: List[bytes]) -> int:
        """An item that is no piece into ``parts``: a frame's bytes (their size returned, as the pump counted
        them), or the end or an error (the body is done after it)."""
        if item.__class__ is bytes:
            parts.append(item)
            return len(item)
        parts.append(DONE if item is _END else b"event: error\ndata: " + self._app._error_bytes(item) + b"\n\n")
        self._done = True
        return 0

    def close(self) -> None:
        """The WSGI server is done with the response (sent, or the client went away): the upstream is
        aborted if still read, and the stream's slot is free."""
        self._done = True
        self._pump.stop()
        if not self._closed:
            self._closed = True
            self._app._release(self._pump.model_id)


def _shared_state(row: Mapping[str, Any]) -> Dict[str, Any]:
    """A row's "limiter" / "budget" objects as AutoLLMClient arguments (their stores opened now: a bad or
    unreachable store refuses the config before anything is served)."""
    out = {}  # type: Dict[str, Any]
    if row.get("limiter") is not None:
        from ..limiter import RateLimiter

        spec = row["limiter"]
        out["limiter"] = RateLimiter(spec.get("rpm"), spec.get("tpm"), store=spec.get("store"), key=spec.get("key"))
    if row.get("budget") is not None:
        from ..budget import Budget

        spec = row["budget"]
        if "max_usd" not in spec:
            raise ConfigError("budget needs max_usd")
        out["budget"] = Budget(spec["max_usd"], spec.get("allow_unpriced", False), store=spec.get("store"),
                               key=spec.get("key"))
    return out


def _allow(method: str, allowed: Tuple[str, ...]) -> None:
    if method not in allowed:
        raise _Refusal(405, ConfigError("method {} is not allowed here (allowed: {})".format(
            method[:20], ", ".join(allowed))), [("Allow", ", ".join(allowed))])


# -- the built-in server --------------------------------------------------------------------------


def serve(config: Any, host: str = "127.0.0.1", port: int = DEFAULT_PORT) -> Tuple[Any, str]:
    """A threading wsgiref server for ``config`` (or an AgentHubApp) on ``host:port`` -> (server, url).

    Port 0 picks a free one.  A host that is not loopback needs ``api_keys`` in the config.
    Run it with ``server.serve_forever()``; ``server.shutdown()`` stops it from another thread.

    Socket timeouts (the config's ``header_timeout_seconds``, ``body_timeout_seconds``,
    ``write_timeout_seconds``): the request line and headers must arrive whole within the first (a
    connection that sends nothing is closed then), each read of the body within the second and the whole
    body within the second plus a second per ``MIN_BODY_BYTES_PER_SECOND`` of its length (else 408),
    each write of the answer within the third (else the stream ends, as when the client leaves).
    At most the config's ``max_connections`` connections are served at once, each on a thread of its own; one
    past them is answered 503 (``Retry-After: 1``) at once and closed, with no thread made for it.
    """
    import io
    import socket
    import socketserver
    from wsgiref.simple_server import ServerHandler, WSGIRequestHandler, WSGIServer

    app = config if isinstance(config, AgentHubApp) else make_app(config)
    if not is_loopback_host(host) and not app.api_keys:
        raise ConfigError("refusing to listen on {!r} without api_keys: a server reachable from other machines "
                          "needs keys (or listen on 127.0.0.1)".format(host))

    busy_body = json.dumps({"error": {"type": "ServerError", "message": "the server is at its limit of {} connections"
                                      .format(app.max_connections), "retryable": True}}).encode("utf-8")
    header_timeout = app.timeouts["header_timeout_seconds"]
    body_timeout = app.timeouts["body_timeout_seconds"]
    write_timeout = app.timeouts["write_timeout_seconds"]

    class Chunked(ServerHandler):
        """wsgiref's handler answering HTTP/1.1 requests in chunked encoding when the length is not known
        (wsgiref alone sends HTTP/1.0 bodies that end when the connection closes: some clients, urllib3 1.x
        among them, then wait for the end before handing over anything).  One request per connection."""

        http_version = "1.1"
        chunked = False

        def cleanup_headers(self) -> None:
            ServerHandler.cleanup_headers(self)
            if ("Content-Length" not in self.headers and self.environ.get("SERVER_PROTOCOL") == "HTTP/1.1"
                    and self.status[:3] not in ("204", "304")):
                self.headers["Transfer-Encoding"] = "chunked"
                self.chunked = True
            self.headers["Connection"] = "close"

        def write(self, data: bytes) -> None:
            if not self.status:
                raise AssertionError("write() before start_response()")
            if not self.headers_sent:
                self.bytes_sent = len(data)
                self.send_headers()
            else:
                self.bytes_sent += len(data)
            if not self.chunked:
                self._write(data)
            elif data:
                self._write(b"%x\r\n%s\r\n" % (len(data), data))
            self._flush()

        def finish_content(self) -> None:
            if self.chunked and self.headers_sent:
                self._write(b"0\r\n\r\n")
                self._flush()
            else:
                ServerHandler.finish_content(self)

        def send_headers(self) -> None:
            self.request_handler.connection.settimeout(write_timeout)  # type: ignore[attr-defined]
            ServerHandler.send_headers(self)

        def handle_error(self) -> None:
            # a write that timed out, or a client gone: the response was closed already (PEP 3333 close(),
            # which ends the upstream stream); one line, no traceback, nothing more written
            logger.debug("agenthub serve: the response to %s ended: %s", self.request_handler.address_string(),
                         sys.exc_info()[1])

    class Handler(WSGIRequestHandler):
        def setup(self) -> None:
            WSGIRequestHandler.setup(self)
            self.rfile.close()
            self.reader = DeadlineReader(self.connection, body_timeout)
            self.rfile = io.BufferedReader(self.reader, 65536)

        def handle(self) -> None:
            self.reader.deadline = time.monotonic() + header_timeout
            self.raw_requestline = self.rfile.readline(65537)
            if len(self.raw_requestline) > 65536:
                self.requestline = ""
                self.request_version = ""
                self.command = ""
                self.send_error(414)
                return
            if not self.parse_request():
                return
            # the body: each read within body_timeout, and the whole of it within body_timeout plus a second per
            # MIN_BODY_BYTES_PER_SECOND of its length (a Content-Length that is no number is refused by the app)
            length = self.headers.get("Content-Length", "")
            size = int(length) if _DIGITS.match(length.strip()) else 0
            self.reader.deadline = time.monotonic() + body_timeout + size / MIN_BODY_BYTES_PER_SECOND
            environ = self.get_environ()
            environ[CLIENT_GONE] = lambda: peer_closed(self.connection)
            handler = Chunked(self.rfile, self.wfile, self.get_stderr(), environ, multithread=True)
            handler.request_handler = self  # type: ignore[attr-defined]
            handler.run(self.server.get_app())  # type: ignore[attr-defined]

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
            logger.debug("agenthub serve: %s %s", self.address_string(), format % args)

    class Server(ConnectionLimit, socketserver.ThreadingMixIn, WSGIServer):
        daemon_threads = True
        connections = threading.BoundedSemaphore(app.max_connections)
        busy = busy_answer(busy_body, "application/json")
        allow_reuse_address = True
        # the listen backlog (socketserver's default is 5: a burst of clients got connection resets): at least
        # as many as may stream at once
        request_queue_size = max(128, app.max_concurrent_streams)
        address_family = socket.AF_INET6 if ":" in host else socket.AF_INET

        def server_bind(self) -> None:
            # small writes (the status line, headers, one event) go out at once: no Nagle delay
            # against the client's delayed ACK (accepted sockets inherit the option on Linux)
            self.socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            WSGIServer.server_bind(self)

        def get_request(self) -> Any:
            conn, address = WSGIServer.get_request(self)
            try:
                conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:  # pragma: no cover - not a TCP socket
                pass
            return conn, address

        def handle_error(self, request: Any, client_address: Any) -> None:
            logger.debug("agenthub serve: connection error from %s", client_address, exc_info=True)

    server = Server((host.strip("[]"), port), Handler)
    server.set_app(app)
    shown = "[{}]".format(host.strip("[]")) if ":" in host else host
    return server, "http://{}:{}".format(shown, server.server_address[1])
