"""AutoLLMClient: registry + a protocol's build_request/parse_stream + transport + history.

Reliability rules (docs/reliability.md has the full table):

- Retries happen only before the first event of a turn reached the caller, for
  connection errors and timeouts, HTTP 408/409/429/500/502/503/504/529, in-stream
  overload / rate-limit / server errors and a body cut before any content.  The wait
  is exponential backoff with full jitter, or the server's Retry-After /
  retry-after-ms when it is at most ``RETRY_AFTER_CAP`` (a longer one is not waited
  for: the error is raised at once with ``.retry_after`` set).  ``max_retries``
  (default 2) bounds them; 0 disables.  Other 4xx are never retried.
- Once an event reached the caller, a failure is raised as a typed error whose
  ``.retryable`` says whether asking again may help; the turn is never restarted.
- ``Timeout(connect, read, total)``: *read* is the idle gap allowed between received
  bytes (any byte counts, SSE comments and pings too); *total* is an optional deadline
  for the whole call, retries and backoff included.
- ``stream.abort()`` (from any thread) ends the stream promptly with
  ``TransportError(aborted=True)`` and releases the connection.
- A stream belongs to the process that opened it: in a forked child its next read raises
  ``TransportError(forked=True)`` without touching the connection, and the child's
  ``abort()`` or ``close()`` leaves the parent's stream alone.

The attempt loop (``AutoLLMClient._run``) is the one place of these policies, for a stream
and for a whole JSON document (a model list page) alike.  Per attempt: check abort and the
deadline, run ``before_attempt``, encode (a signature or token per attempt), send, take the
answer's head, run ``after_response``, yield what the answer holds.  On a failure: the error
learns its URL and hint, an abort or the deadline wins over it, credentials are scrubbed from
it, the retry decision is made (``retry``, ``delay``), ``on_error`` runs and may change it, then
the loop waits (abortably) and tries again, or raises.  ``on_done`` runs once when the call ends.

Hooks (``client._hooks``, a list of ``AttemptHook``; each sees one ``Attempt`` object per call)
are the seam for what builds on the loop; how each is meant to hook in:

- a rate limiter: ``before_attempt`` acquires (estimating tokens from ``attempt.request.body``,
  waiting with ``attempt.wait`` so an abort or the deadline still ends the call);
  ``after_response`` and ``on_error`` read the rate-limit headers in ``attempt.headers``; a
  429's ``error.retry_after`` pauses every client sharing that limiter, and the hook may
  stretch ``attempt.delay`` to it;
- a budget: ``before_attempt`` reserves (raising its error refuses the call before anything is
  sent), ``on_done`` settles with ``attempt.usage`` (None: the call failed or was closed early);
- failover: ``on_error`` with ``attempt.retry`` False and ``attempt.delivered == 0`` (the
  attempts are spent before the first event) sets ``attempt.fallback`` to the next client's
  events, which are yielded instead of the error;
- reconnecting a background stream after a cut (``config["background"]``) is the same loop: the
  read of such a call (``_background``) keeps one parser across the connections, fed by
  ``agenthub.resume.Resumable``; when a connection breaks after the response id is known, the cut
  goes to ``on_error`` (``retry`` True, ``delay`` 0) and the loop's next attempt is the GET that
  continues the stream (``attempt.request`` swapped for it, ``attempt.resuming`` its id): every hook
  sees it, and it is retried, backed off, stopped by an abort or the deadline and scrubbed like any
  attempt, ``max_retries`` counting the GETs that fail in a row after each cut.  An error raised once
  the response id is known is marked ``RESUMED`` and never retried by a second POST.
"""

import collections.abc
import importlib
import itertools
import logging
import os
import random
import sys
import threading
import time
from typing import (TYPE_CHECKING, Any, Callable, Dict, Generator, Iterable, Iterator, List, Mapping, Optional, Sequence,
                    Tuple, Union)

from . import attempts as attempt_loop, hosts, registry
from .attempts import Attempt, AttemptHook, scrub
from .answers import request_id as answer_request_id, starts_stream
from ._redact import redact_url, secret_values, url_secrets
from ._redact import body_secrets
from .breaker import breaker_for, settings as breaker_settings
from .hosts.trust import url_host, url_origin  # the one host rule: which host a request connects to
from .errors import (AgentHubError, ConfigError, RateLimitError, ServerError, StreamProtocolError, TransportError,
                     UnsupportedOperationError, UnsupportedParameterError, UpstreamError, safe_url, set_field)
from .foreign import for_dialect
from .providers._common import Endpoint, apply_extras
from .resume import RESUMED
from .sse import DEFAULT_MAX_LINE_BYTES
from .stream import Collector, collect, drive, now_ms
from .types import AssistantMessage, Message, UniConfig, UniEvent, UniMessage
from .validate import check_config, check_header_name, check_header_value, check_message, check_messages

__all__ = ["AutoLLMClient", "ResponseStream", "Timeout"]

logger = logging.getLogger("agenthub")

#: AGENTHUB_LOG=debug|info: a stderr handler on the "agenthub" logger (as OPENAI_LOG does for its SDK)
LOG_ENV = "AGENTHUB_LOG"


def _log_from_env() -> None:
    """Attach one stderr handler to the "agenthub" logger when $AGENTHUB_LOG asks for it (once per process).

    DEBUG: one record per HTTP attempt (method, URL without credentials, status, request id, attempt,
    elapsed ms) and one per finished stream (events, finish reason, usage); INFO: retries.  No record
    holds a key, a header or a body.
    """
    value = (os.environ.get(LOG_ENV) or "").strip().lower()
    level = {"debug": logging.DEBUG, "info": logging.INFO}.get(value)
    if level is None and value and not getattr(logger, "_agenthub_env_warned", False):
        logger._agenthub_env_warned = True  # type: ignore[attr-defined]  # once per process, reloads included
        sys.stderr.write("agenthub: {}={!r} is not a level agenthub knows (debug, info): no log handler was "
                         "added\n".format(LOG_ENV, os.environ.get(LOG_ENV)))
    if level is None or any(getattr(handler, "_agenthub_env", False) for handler in logger.handlers):
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s agenthub %(levelname)s %(message)s"))
    handler._agenthub_env = True  # type: ignore[attr-defined]
    logger.addHandler(handler)
    logger.setLevel(level)


_log_from_env()

#: pages of a model list read at most (a server that never stops paging is cut off there)
MAX_MODEL_PAGES = 100
#: config keys only some protocols read (their build_request's ``accepts``): refused by the others
LONGRUN_KEYS = ("background", "compaction")
# BACKOFF_BASE, BACKOFF_CAP and RETRY_AFTER_CAP are agenthub.attempts' (read and set through this module too:
# ``client.BACKOFF_BASE = 0`` still works, see the end of this module)
#: default seconds to connect, and of silence allowed between received bytes (reasoning models think quietly)
DEFAULT_CONNECT_TIMEOUT = 10.0
DEFAULT_READ_TIMEOUT = 600.0


def _protocol(client_type: str, embeddings: bool = False) -> Any:
    """The dialect's record serving ``client_type`` (its embeddings record for embedding models)."""
    record = hosts.client_type(client_type).protocol(embeddings)
    if record is None:
        raise ConfigError("client_type {!r} does not serve embedding models".format(client_type))
    return record


# -- timeouts -------------------------------------------------------------------------------------


class Timeout(object):
    """How long to wait: ``connect`` seconds to connect, ``read`` seconds of silence between
    received bytes (the idle timeout: it restarts with every byte, so a slow but living stream
    never trips it), and an optional ``total`` deadline for the whole call (retries and backoff
    included).  None means no limit.

    ``AutoLLMClient(timeout=...)`` takes a Timeout, or requests' convention: a number (used
    for connect and read), a ``(connect, read)`` tuple, or a dict with any of ``connect``,
    ``read`` and ``total``.  Defaults: connect 10 s, read 600 s, no total.
    """

    __slots__ = ("connect", "read", "total")

    def __init__(self, connect: Optional[float] = DEFAULT_CONNECT_TIMEOUT,
                 read: Optional[float] = DEFAULT_READ_TIMEOUT, total: Optional[float] = None) -> None:
        for name, value in (("connect", connect), ("read", read), ("total", total)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                      or not value > 0 or value == float("inf")):
                raise ConfigError("timeout {} must be a positive number of seconds or None (got {!r})".format(
                    name, value))
        self.connect = None if connect is None else float(connect)
        self.read = None if read is None else float(read)
        self.total = None if total is None else float(total)

    @classmethod
    def of(cls, value: Any) -> "Timeout":
        """Normalise what ``AutoLLMClient(timeout=...)`` accepts into a Timeout."""
        if value is None:
            return cls()
        if isinstance(value, Timeout):
            return value
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return cls(value, value)
        if isinstance(value, tuple) and len(value) == 2:
            return cls(value[0], value[1])
        if isinstance(value, Mapping):
            unknown = sorted(str(k) for k in value if k not in cls.__slots__)
            if unknown:
                raise ConfigError("unknown timeout key(s) {}; known: connect, read, total".format(unknown))
            return cls(value.get("connect", DEFAULT_CONNECT_TIMEOUT), value.get("read", DEFAULT_READ_TIMEOUT),
                       value.get("total"))
        raise ConfigError("timeout must be None, seconds, a (connect, read) tuple, a dict or a Timeout "
                          "(got {})".format(type(value).__name__))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Timeout) and (self.connect, self.read, self.total) == (
            other.connect, other.read, other.total)

    def __hash__(self) -> int:
        return hash((self.connect, self.read, self.total))

    def __repr__(self) -> str:
        return "Timeout(connect={!r}, read={!r}, total={!r})".format(self.connect, self.read, self.total)

    def __getstate__(self) -> Tuple[Optional[float], Optional[float], Optional[float]]:
        return (self.connect, self.read, self.total)

    def __setstate__(self, state: Tuple[Optional[float], Optional[float], Optional[float]]) -> None:
        self.connect, self.read, self.total = state


# -- the stream handle ----------------------------------------------------------------------------


if TYPE_CHECKING:  # what type checkers see: a generator of UniEvents (at runtime the plain ABC, no typing machinery)
    from .budget import Budget
    from .limiter import RateLimiter

    _EventGenerator = Generator[UniEvent, Any, None]
else:
    _EventGenerator = collections.abc.Generator


class ResponseStream(itertools.chain, _EventGenerator):  # type: ignore[misc]
    """What ``streaming_response`` returns: a generator of UniEvents, plus ``abort()``.

    Use it as any generator (``for event in stream``, ``next``, ``close``, ``with``).
    ``abort()`` may be called from any thread (or a signal handler): the reading thread
    is unblocked at once, the stream ends with ``TransportError`` (``.aborted`` True,
    ``.retryable`` False), the connection is released and history is left unchanged.
    Aborting a finished stream does nothing.
    """

    # ``next(stream)`` and ``for`` are itertools.chain's C-level next over the one generator: a
    # ``__next__`` written here (a method, or a property handing out the generator's own) costs
    # 30-90 ns per event, a fifth of what the library adds to the bytes' own decoding in a burst.
    # chain's ``__iter__`` returns the stream itself; ``send``/``throw``/``close`` go to the generator.
    __slots__ = ("_control", "_gen")

    def __new__(cls, control: Any, gen: Iterator[UniEvent]) -> "ResponseStream":
        self = super().__new__(cls, gen)  # type: ignore[call-arg]
        self._control = control
        self._gen = gen
        return self

    if TYPE_CHECKING:  # what type checkers see: a plain generator
        def __iter__(self) -> "ResponseStream": ...

        def __next__(self) -> UniEvent: ...

    def send(self, value: Any) -> UniEvent:
        return self._gen.send(value)  # type: ignore[attr-defined]

    def throw(self, *args: Any) -> UniEvent:
        return self._gen.throw(*args)  # type: ignore[attr-defined]

    def close(self) -> None:
        """Stop here (from the thread iterating): releases the connection, ends cleanly."""
        self._gen.close()  # type: ignore[attr-defined]

    def abort(self) -> None:
        """Stop the stream from any thread; the iterating thread gets TransportError(aborted=True)."""
        self._control.stop("abort")

    @property
    def aborted(self) -> bool:
        return self._control.reason == "abort"

    def __enter__(self) -> "ResponseStream":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return "<ResponseStream{}>".format(" aborted" if self.aborted else "")


# -- the client -----------------------------------------------------------------------------------


class AutoLLMClient(object):
    """One model behind one uniform streaming interface.

    ``streaming_response`` is stateless: any number of threads may stream through one
    instance at once (they share its connection pool).  ``streaming_response_stateful``
    keeps this instance's history and appends to it only when a stream completed and
    validated.  Thread rules for history, enforced: one stateful stream at a time per
    instance (starting another while one is open raises ConfigError; close or finish
    the first), and ``set_history``/``clear_history`` raise ConfigError while one is open.
    ``get_history`` returns a copy and is safe from any thread.  Use one instance per
    conversation (per agent thread) for stateful calls.
    """

    def __init__(
        self,
        model: str,
        api_key: Optional[Union[str, Callable[[], str]]] = None,
        base_url: Optional[str] = None,
        client_type: Optional[str] = None,
        *,
        timeout: Any = None,
        max_retries: int = 2,
        session: Any = None,
        default_headers: Optional[Mapping[str, str]] = None,
        max_line_bytes: Optional[int] = None,
        fallbacks: Optional[Sequence[Union[str, "AutoLLMClient"]]] = None,
        fallback_on: Optional[Sequence[type]] = None,
        circuit_breaker: Any = None,
        budget: Optional["Budget"] = None,
        limiter: Optional["RateLimiter"] = None,
        hooks: Optional[Sequence[AttemptHook]] = None
    ) -> None:
        if not isinstance(max_retries, int) or isinstance(max_retries, bool) or max_retries < 0:
            raise ConfigError("max_retries must be an int >= 0")
        if max_line_bytes is not None and (not isinstance(max_line_bytes, int) or isinstance(max_line_bytes, bool)
                                           or max_line_bytes < 1024):
            raise ConfigError("max_line_bytes must be an int >= 1024")
        if default_headers is not None and not all(
                isinstance(k, str) and isinstance(v, str) for k, v in dict(default_headers).items()):
            raise ConfigError("default_headers must map str to str")
        for name, value in dict(default_headers or {}).items():
            check_header_name(name, "default_headers key {!r}".format(name[:60]))
            check_header_value(value, "default_headers[{!r}]".format(name))
        kind, url, key, quirks = registry.resolve(model, client_type, base_url, api_key)
        if isinstance(key, str):
            check_header_value(key, "the API key" if api_key is not None else "the API key (from the environment)")
        self._key_origin = (client_type, api_key is not None)  # for the words of a 401: where the key came from
        #: the model name sent upstream
        self.model = model
        #: the wire protocol in use ("openai-chat", "openai-responses", "anthropic", "gemini")
        self.client_type = kind
        self._protocol = _protocol(kind, bool(quirks.get("embeddings")))
        self._host = hosts.client_type(kind).host  # where the request goes, how it is authorised
        self._endpoint = Endpoint(kind, url, key, default_headers, quirks, model)
        #: a Timeout (connect, read = idle gap between bytes, optional total deadline)
        self.timeout = Timeout.of(timeout)
        #: retries before the first event reached the caller; 0 disables
        self.max_retries = max_retries
        #: the longest SSE line accepted (a longer one is a StreamProtocolError: memory stays bounded)
        self.max_line_bytes = max_line_bytes or DEFAULT_MAX_LINE_BYTES
        self._session = session
        self._pid = os.getpid()  # the process the session's pools belong to (a forked child renews them)
        self._locks_pid = self._pid  # the process the locks below belong to (see _fresh_locks)
        self._history = []  # type: List[UniMessage]
        self._version = 0  # bumped at every history change
        self._busy = threading.Lock()  # held while a stateful stream is open
        self._session_lock = threading.Lock()
        #: the attempt loop's hooks, run in order (see AttemptHook and the module docstring)
        self._hooks = []  # type: List[AttemptHook]
        #: the agenthub.Budget every stream of this client reserves from (None: no limit)
        self.budget = budget
        if budget is not None:
            from .budget import Budget, BudgetHook

            if not isinstance(budget, Budget):
                raise ConfigError("budget must be an agenthub.Budget (got {})".format(type(budget).__name__))
            self._hooks.append(BudgetHook(budget, bool(quirks.get("embeddings"))))  # type: ignore[arg-type]
        #: the agenthub.RateLimiter every attempt of this client takes its turn from (None: no pacing)
        self.limiter = limiter
        if limiter is not None:
            from .limiter import LimiterHook

            self._hooks.append(LimiterHook(limiter))  # type: ignore[arg-type]
        for hook in _sequence(hooks, "hooks"):  # the caller's, after the budget's and the limiter's
            if not callable(getattr(hook, "before_attempt", None)):
                raise ConfigError("each hooks entry must be an agenthub.attempts.AttemptHook (got {})".format(
                    type(hook).__name__))
            self._hooks.append(hook)
        #: which endpoint answered the latest turn that started: {"model", "client_type", "host"} (None before)
        self.last_route = None  # type: Optional[Dict[str, Any]]
        self._fallbacks = [self._fallback_client(entry) for entry in _sequence(fallbacks, "fallbacks")]
        self._fallback_on = _error_classes(fallback_on)
        self._breaker = breaker_settings(circuit_breaker)
        self._dialect = self._protocol.name  # the wire dialect (agenthub.foreign converts history for it)

    def __repr__(self) -> str:
        return "AutoLLMClient(model={!r}, client_type={!r}, base_url={!r})".format(
            self.model, self.client_type, redact_url(self._endpoint.base_url))

    # pickling (process pools, Ray, Spark): the session (sockets), locks and module are rebuilt where it lands
    def __getstate__(self) -> Dict[str, Any]:
        state = self.__dict__.copy()
        for name in ("_session", "_busy", "_session_lock", "_protocol", "_host"):
            state.pop(name, None)
        return state

    def __setstate__(self, state: Dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._session = None
        self._pid = self._locks_pid = os.getpid()
        self._busy = threading.Lock()
        self._session_lock = threading.Lock()
        self.__dict__.setdefault("_hooks", [])
        self._protocol = _protocol(self.client_type, bool(self._endpoint.quirks.get("embeddings")))
        self._host = hosts.client_type(self.client_type).host
        self._endpoint.model = self.model

    @property
    def hooks(self) -> Tuple[AttemptHook, ...]:
        """This client's attempt-loop hooks, in the order they run (a budget's and a limiter's first, then
        those given with ``hooks=``); read-only: process-wide ones go through ``agenthub.attempts.register``."""
        return tuple(self._hooks)

    @property
    def base_url(self) -> str:
        return self._endpoint.base_url

    # -- history ---------------------------------------------------------------------------
    def get_history(self) -> List[Message]:
        return list(self._history)

    def set_history(self, history: Sequence[Message]) -> None:
        check_messages(history) if history else None
        self._check_idle("set_history")
        self._history = list(history)
        self._version += 1

    def clear_history(self) -> None:
        self._check_idle("clear_history")
        self._history = []
        self._version += 1

    def _fresh_locks(self) -> None:
        """In a forked child, the locks as the fork left them may be held by a thread of the parent's
        (a stateful stream open there): that stream does not exist here, so the child gets new ones."""
        pid = os.getpid()
        if self._locks_pid != pid:
            self._locks_pid = pid
            self._busy = threading.Lock()
            self._session_lock = threading.Lock()

    def _check_idle(self, what: str) -> None:
        self._fresh_locks()
        if self._busy.locked():
            raise ConfigError("{} while a stateful stream is open on this client: finish or close it first".format(what))

    # -- streaming -------------------------------------------------------------------------
    def streaming_response(self, messages: Sequence[Message], config: Optional[UniConfig] = None) -> ResponseStream:
        """Stream one assistant turn for ``messages``: a generator of UniEvents with ``abort()``.

        Messages and config are checked now (ConfigError before anything is sent);
        the request goes out when iteration starts.
        """
        check_messages(messages)
        cfg = check_config(config)
        request = apply_extras(self._build(list(messages), cfg), cfg)
        return self._open(request, cfg, list(messages), None)

    def streaming_response_stateful(self, message: UniMessage, config: Optional[UniConfig] = None) -> ResponseStream:
        """Stream one turn after this instance's history; on success, history gains ``message`` and the answer."""
        check_message(message)
        if message["role"] != "user":
            raise ConfigError("streaming_response_stateful takes the next user message")
        cfg = check_config(config)
        self._check_idle("streaming_response_stateful")
        if "created_at" not in message:
            message = dict(message)  # type: ignore[assignment]
            message["created_at"] = int(time.time() * 1000)
        messages = self._history + [message]
        request = apply_extras(self._build(messages, cfg, stateful=True), cfg)
        return self._open(request, cfg, messages, message)

    def _build(self, messages: List[UniMessage], config: Dict[str, Any], stateful: bool = False) -> Any:
        """The protocol's request plan; a value it cannot use (a fidelity changed after it came back,
        say) is a ConfigError, never a bare TypeError.  ``stateful``: a stateful call, told to a
        protocol that chains turns server-side (its build_request has ``chains_turns`` set).  The
        config keys only some protocols read (``LONGRUN_KEYS``) are refused by the others, and compaction
        items this protocol cannot read are left out with a warning (``agenthub.foreign``)."""
        build = self._protocol.build_request
        for key in LONGRUN_KEYS:
            if config.get(key) and key not in getattr(build, "accepts", ()):
                raise UnsupportedParameterError("{}: {} is not available on this protocol".format(
                    self.client_type, key), client=self.client_type, parameter=key)
        if "foreign_thinking" in config:  # the client's own key: the protocol never sees it
            config = dict(config)
            foreign_thinking = config.pop("foreign_thinking")
        else:
            foreign_thinking = "drop"
        # another protocol's opaque items are converted on the way out (agenthub.foreign); history is untouched
        messages = for_dialect(messages, self._dialect, foreign_thinking)[0]  # type: ignore[assignment]
        try:
            if stateful and getattr(build, "chains_turns", False):
                return build(self._endpoint, self.model, messages, config, stateful=True)
            return build(self._endpoint, self.model, messages, config)
        except AgentHubError:
            raise
        except (TypeError, ValueError, KeyError, AttributeError, IndexError) as exc:
            raise ConfigError("{}: the messages cannot be turned into a request ({}: {}); pass fidelity back "
                              "as it came".format(self.client_type, type(exc).__name__, exc)) from None

    # -- one-call helpers --------------------------------------------------------------------
    def response(self, messages: Sequence[Message], config: Optional[UniConfig] = None) -> AssistantMessage:
        """The collected assistant message of one stateless turn: ``streaming_response`` read to
        its end (same validation, retries and errors) and folded with ``collect``."""
        return collect(self.streaming_response(messages, config))

    def response_stateful(self, message: UniMessage, config: Optional[UniConfig] = None) -> AssistantMessage:
        """``streaming_response_stateful`` read to its end: the collected answer (history grows on success)."""
        return collect(self.streaming_response_stateful(message, config))

    def embed(self, texts: Sequence[str], config: Optional[UniConfig] = None) -> List[List[float]]:
        """One vector per text, in input order, from an embedding model (``embedding_config`` sets the
        dimensions).  A server answering another number of vectors is a StreamProtocolError."""
        if isinstance(texts, (str, bytes)) or not isinstance(texts, (list, tuple)) \
                or not all(isinstance(t, str) for t in texts):
            raise ConfigError("embed takes a list of strings")
        if not self._endpoint.quirks.get("embeddings"):
            raise UnsupportedOperationError(
                "{}: {!r} is not an embedding model (use an embedding model, or client_type='openai-embedding' "
                "for an OpenAI-compatible one)".format(self.client_type, self.model),
                client=self.client_type, operation="embed")
        if not texts:
            return []
        messages = [{"role": "user", "content_items": [{"type": "text", "text": text}]} for text in texts]
        answer = self.response(messages, config)  # type: ignore[arg-type]
        items = answer["content_items"]  # type: List[Any]
        vectors = [item["embedding"] for item in items if item.get("type") == "embedding"]  # type: List[List[float]]
        if len(vectors) != len(texts):
            raise StreamProtocolError("{}: {} texts were sent for embedding and {} vectors came back".format(
                self.client_type, len(texts), len(vectors)), client=self.client_type)
        return vectors

    def list_models(self) -> List[str]:
        """The model ids this endpoint serves, asked live (every page, in the server's order).

        OpenAI-compatible servers and Anthropic: ``GET /v1/models`` (Anthropic pages with
        ``after_id`` while ``has_more``); Gemini: ``GET /v1beta/models`` with page tokens, the
        ``models/`` prefix removed.  ``agenthub.list_models()`` is the routing table instead."""
        route = hosts.client_type(self.client_type)
        record = route.protocol()
        if record.models_request is None or record.parse_models is None or not route.lists_models:
            raise UnsupportedOperationError("{}: this protocol cannot list the endpoint's models".format(
                self.client_type), client=self.client_type, operation="list_models")
        ids = []  # type: List[str]
        token = None  # type: Optional[str]
        seen = set()  # type: set
        for _ in range(MAX_MODEL_PAGES):
            payload = self._fetch(record, record.models_request(self._endpoint, token))
            page, token = record.parse_models(payload, self.client_type)
            ids.extend(page)
            if not token or token in seen:  # the last page (or a server handing the same token again)
                break
            seen.add(token)
        return ids

    def count_tokens(self, messages: Sequence[Message], config: Optional[UniConfig] = None,
                     estimate: bool = False) -> int:
        """The input tokens of the request ``streaming_response(messages, config)`` would send, counted by
        the provider's endpoint before anything is generated (Anthropic ``/v1/messages/count_tokens``,
        OpenAI Responses ``/responses/input_tokens``, Gemini ``:countTokens``, Vertex AI, Bedrock
        ``CountTokens``): the same messages, system prompt, tools and attachments, without the
        generation-only fields.  A protocol without a count endpoint raises UnsupportedOperationError,
        unless ``estimate=True``: then ``agenthub.budget.estimate_tokens``, a local estimate (UTF-8 bytes
        / 3 for text, 1600 tokens per image or media item), is returned instead."""
        import importlib

        from .providers.counting import parse_count

        if not isinstance(estimate, bool):
            raise ConfigError("estimate must be True or False")
        check_messages(messages)
        cfg = check_config(config)
        plan = apply_extras(self._build(list(messages), cfg), cfg)
        row = hosts.client_type(self.client_type)
        record = row.protocol()
        dialect = importlib.import_module("agenthub.providers." + record.module)
        planner = getattr(dialect, "count_request", None)  # the dialect's, where it has a count endpoint
        request = None
        if planner is not None and self._protocol is record:
            request = planner(plan, self.model, self._endpoint.quirks, row.count_tokens)
        if request is None:
            if estimate:
                from .budget import estimate_tokens

                return estimate_tokens(messages, cfg)
            raise UnsupportedOperationError(
                "{}: this endpoint has no token-counting method; count_tokens(..., estimate=True) gives a local "
                "estimate".format(self.client_type), client=self.client_type, operation="count_tokens")
        return parse_count(self.client_type, self._fetch(record, request), dialect.COUNT_FIELD)

    def _fetch(self, record: Any, request: Any) -> Any:
        """One JSON document for ``request``: the attempt loop (timeouts, retries, scrubbing, hooks)
        around one document instead of a stream."""
        documents = self._run(Attempt("document", self.client_type, self.model, request, route=self._route()), _transport().Watch(), record,
                              lambda body: (body.document,))
        try:
            return next(documents)
        finally:
            documents.close()  # type: ignore[attr-defined]

    def _explain(self, exc: AgentHubError, request: Any) -> None:
        """An UpstreamError (or a TransportError) learns the URL it went to; a 401/403, where the key came from
        (or why none went); a 404 at an OpenAI-compatible base URL without /v1, that it may be missing."""
        if isinstance(exc, (UpstreamError, TransportError)) and exc.__dict__.get("url") is None:
            url = getattr(request, "url", None)
            if isinstance(url, str) and url.startswith(("http://", "https://")):
                set_field(exc, "url", safe_url(url))
        if isinstance(exc, UpstreamError):
            if exc.status in (401, 403) and getattr(exc, "hint", None) is None:
                set_field(exc, "hint", registry.key_note(self.model, self._key_origin[0], self._key_origin[1],
                                                         bool(self._endpoint.api_key), self._endpoint.base_url))
            if exc.status == 404 and getattr(exc, "hint", None) is None:
                hint = _missing_v1(self.client_type, self._endpoint.base_url)
                if hint:
                    set_field(exc, "hint", hint)

    def _advise(self, exc: AgentHubError, attempts: int) -> None:
        """The last 429's words: when to retry, and how to let the client retry more."""
        if not isinstance(exc, RateLimitError) or getattr(exc, "hint", None) is not None:
            return
        after = getattr(exc, "retry_after", None)
        if isinstance(after, (int, float)) and not isinstance(after, bool):
            when = "the server asks to wait {:g} s{}".format(after, " (longer than the {:g} s agenthub waits by "
                                                                  "itself)".format(attempt_loop.RETRY_AFTER_CAP)
                                                           if after > attempt_loop.RETRY_AFTER_CAP else "")
        else:
            when = "the server did not say when: wait a while"
        set_field(exc, "hint", "rate limited after {} attempt{}: {} and retry; AutoLLMClient(..., max_retries=N) "
                               "retries more by itself (now {})".format(attempts, "" if attempts == 1 else "s", when,
                                                                       self.max_retries))

    def _open(self, request: Any, config: Dict[str, Any], messages: List[UniMessage],
              stateful: Optional[UniMessage]) -> ResponseStream:
        if "trace_id" in config:
            from .tracer import trace_paths

            trace_paths(config["trace_id"])  # a trace_id escaping the cache dir is refused before anything is sent
        watch = _transport().Watch()
        call = Attempt("stream", self.client_type, self.model, request, messages, config, route=self._route())
        if stateful is None and not config.get("trace_id"):
            # nothing to keep (stateless, untraced): the events pass straight from the attempt loop
            return ResponseStream(watch, self._attempts(call, watch))
        return ResponseStream(watch, self._stream(watch, call, stateful, self._version))

    def _stream(self, watch: Any, call: Attempt, stateful: Optional[UniMessage], version: int) -> Iterator[UniEvent]:
        """A stateful or traced turn around the attempt loop: the stateful lock, history and the trace."""
        locked = None  # the lock this stream holds (a forked child may have renewed self._busy meanwhile)
        config = call.config or {}
        try:
            if stateful is not None:
                self._fresh_locks()
                if not self._busy.acquire(False):
                    raise ConfigError("a stateful stream is already open on this client: finish or close it first")
                locked = self._busy
                if self._version != version:
                    raise ConfigError("the history changed after this stateful stream was created")
            history_before = list(self._history)
            # stateful or traced: the answer is folded as the events pass (no event is kept, so memory
            # follows the size of the answer, not the number of events)
            folding = Collector()
            events = self._attempts(call, watch)
            try:
                fold = folding.add
                for event in events:
                    fold(event)
                    if event["event_type"] == "stop":
                        # commit before the stop event is yielded: a caller may stop iterating at it
                        answer = folding.message()
                        if stateful is not None:
                            # a protocol that chains stateful turns server-side notes that this answer is stored
                            stored = getattr(self._protocol.build_request, "stored_answer", None)
                            if stored is not None:
                                answer = stored(answer)
                            self._history = history_before + [stateful, answer]
                            self._version += 1
                        if config.get("trace_id"):
                            self._trace(config, (call.messages or []) + [answer], self.last_route)
                    yield event
            finally:
                events.close()  # type: ignore[attr-defined]
        finally:
            if locked is not None:
                locked.release()

    def _attempts(self, call: Attempt, watch: Any) -> Iterator[UniEvent]:
        """The events of one turn: this endpoint's attempt loop, or the route loop over the fallbacks."""
        if self._fallbacks:
            return self._routes(call, watch)
        self.last_route = self._route()
        return self._attempts_here(call, watch)

    def _attempts_here(self, call: Attempt, watch: Any) -> Iterator[UniEvent]:
        """The events of one turn on this client's own endpoint: the attempt loop reading its protocol's stream."""
        protocol = self._protocol
        client = self.client_type
        max_line_bytes = self.max_line_bytes
        document = not call.request.stream
        if (call.config or {}).get("background"):
            return self._background(call, watch)

        def read(body: Any) -> Iterator[UniEvent]:
            stamp = [now_ms()]  # the time the bytes being parsed were read: each event's created_at
            return drive(protocol.read(body, client, max_line_bytes, document, stamp), client, stamp)

        return self._run(call, watch, protocol, read)

    # -- background responses: resumed after a cut (agenthub.resume), cancelled when abandoned ---------
    def _background(self, call: Attempt, watch: Any) -> Iterator[UniEvent]:
        """A background response's events (config["background"]): when its stream breaks after the
        response's id arrived, the SSE events continue from a GET that resumes it (one parser across the
        connections, so nothing is lost or repeated; never a second POST); one that ends before its
        response completed (abort, close, an error) is cancelled server-side."""
        dialect = _resume_module(self._protocol)
        client = self.client_type
        resumables = []  # type: List[Any]  # one per attempt
        opened = []  # type: List[Any]  # the bodies of the reconnects, closed when the call ends

        def read(body: Any, reopen: Callable[[str, Any, Any], Any]) -> Iterator[UniEvent]:
            stamp = [now_ms()]  # the time the bytes being parsed were read, across the reconnects too
            parts, resumable = self._read_background(dialect, body, reopen, opened, stamp)
            resumables.append(resumable)
            return _marked(drive(parts, client, stamp), resumable)

        events = self._run(call, watch, self._protocol, read, resumes=True)
        try:
            yield from events
        finally:
            events.close()  # type: ignore[attr-defined]
            for body in opened:
                body.close()
            resumable = resumables[-1] if resumables else None
            if resumable is not None and resumable.resource_id and not resumable.complete:
                self._cancel(dialect, resumable.resource_id)

    def _read_background(self, dialect: Any, body: Any, reopen: Callable[[str, Any, Any], Any],
                         opened: List[Any], stamp: List[int]) -> Tuple[Iterator[Any], Any]:
        """The parts of a background stream whose connections resume after a cut, and its Resumable:
        each reconnect is the attempt loop's next attempt (``reopen``: the GET that resumes it, with the
        loop's hooks, retries, deadline and abort), read by the same parser."""
        from .resume import Resumable

        protocol = self._protocol
        client = self.client_type
        if body.open(False):  # one JSON document: complete by nature, nothing to resume
            return protocol.read(body, client, self.max_line_bytes, stamp=stamp), None

        def reconnect(resource_id: str, cursor: Any) -> Iterator[Any]:
            resumed = reopen(resource_id, dialect.resume_request(self._endpoint, resource_id, cursor), resumable.error)
            opened.append(resumed)
            logger.info("%s: the stream of background response %s broke; resumed after event %s", client,
                        resource_id, cursor)
            return protocol.framing(resumed.iter_chunks(stamp), self.max_line_bytes)

        frames = protocol.framing(body.iter_chunks(stamp), self.max_line_bytes)
        resumable = Resumable(frames, dialect.frame_cursor, reconnect, ordered=dialect.ordered_cursors, client=client)
        return protocol.parse_stream(iter(resumable), client), resumable

    def _cancel(self, dialect: Any, resource_id: str) -> None:
        """Cancel a background response server-side (its stream ended before it did: abort, close, error).
        One POST, short timeouts, no retry; a failure is logged, never raised."""
        client = self.client_type
        request = dialect.cancel_request(self._endpoint, resource_id)
        try:
            sent = self._host.encode(request, self._endpoint)
            body = _transport().open_stream(self._get_session(), sent, (5.0, 10.0), client)
            body.open(document=True)
            logger.info("%s: background response %s cancelled", client, resource_id)
        except AgentHubError as exc:
            scrub(exc, self._secrets(request))
            logger.warning("%s: cancelling background response %s failed: %s", client, resource_id, exc)

    def _run(self, call: Attempt, watch: Any, protocol: Any, read: Callable[..., Iterable[Any]],
             resumes: bool = False) -> Iterator[Any]:
        """The attempt loop, the one place of the call policies: the deadline, abort, retries with
        backoff, error scrubbing and the hooks (see the module docstring).  ``read(body)`` turns an
        opened answer into what is yielded: a stream's events, or the one JSON document.

        ``resumes`` (a background response): ``read(body, reopen)``, where ``reopen(id, request, cut)`` is
        this loop's next attempt for a stream that broke after its response's id was known: ``cut`` (the
        break, or None) goes through the failure policy, then ``request`` (the GET that resumes it)
        replaces ``call.request`` and is sent with the same hooks, retries (counted afresh from the
        cut), backoff, deadline, abort and scrubbing; it returns the opened body (the reader's parser
        goes on across it) or raises the final error, already seen by the hooks."""
        client = self.client_type
        transport = _transport()
        hooks = self._hooks
        debug = logger.isEnabledFor(logging.DEBUG)
        stream = call.kind == "stream"
        timeout = Timeout.of(self.timeout)
        max_retries = self.max_retries
        deadline = timer = None
        if timeout.total is not None:
            deadline = time.monotonic() + timeout.total
            timer = threading.Timer(timeout.total, watch.stop, ("deadline",))
            timer.daemon = True
            timer.start()
        call.watch = watch
        delivered = 0  # events handed to the caller in this call
        tries = 0  # failed attempts since the call (or its last resume) started: what max_retries bounds

        def send() -> Any:
            """One attempt: abort and deadline checked, ``before_attempt``, encoded, sent, its head in,
            ``after_response``; the opened body (its reader closes it)."""
            call.sent = call.request  # what went out (its headers hold this attempt's token or signature)
            call.status = call.headers = call.error = None
            if watch.reason is not None:
                raise _stopped(client, watch, timeout)
            for hook in hooks:
                hook.before_attempt(call)
            limits = _limits(timeout, deadline)
            if limits is None:
                raise _stopped(client, watch, timeout, "deadline")
            # encoded per attempt: a signature or a refreshed token is good for this send only
            call.sent = sent = self._host.encode(call.request, self._endpoint)  # URL, credential
            body = transport.open_stream(self._get_session(), sent, limits, client, watch=watch,
                                         error_from_body=protocol.error_from_body, is_stream=starts_stream)
            try:
                body.open(not stream or not call.request.stream)  # sent: the answer's head is in
                call.status, call.headers = body.status, body.headers
                for hook in hooks:
                    hook.after_response(call)
            except BaseException:
                if call.status is None:
                    call.status, call.headers = body.status, body.headers  # an error answer's head
                body.close()
                raise
            return body

        def failed(exc: AgentHubError, body: Any, started: float, logged: bool, retryable: bool) -> bool:
            """An attempt failed: its error explained and scrubbed, an abort or the deadline winning over it,
            the retry decision (``retryable``: this attempt may be tried again at all), ``on_error``; True
            once the backoff was waited (try again), False when the caller gives up (raise, or fall back)."""
            nonlocal tries
            call.delivered = delivered
            if body is not None and call.status is None:
                call.status, call.headers = body.status, body.headers  # an error answer's head
            if debug and not logged:
                _log_attempt(call.sent, call.number, started, None, exc)
            self._explain(exc, call.sent)
            if exc.__dict__.get("_agenthub_stop") is _STOP:
                return False
            if watch.reason is not None:  # the failure is the abort (or the deadline) showing through
                raise _stopped(client, watch, timeout) from exc
            if deadline is not None and isinstance(exc, TransportError) and time.monotonic() >= deadline:
                raise _stopped(client, watch, timeout, "deadline") from exc
            scrub(exc, self._secrets(call.sent, call.config))
            call.error = exc
            call.retry = bool(retryable and getattr(exc, "retryable", False) and tries < max_retries)
            call.delay = attempt_loop.backoff(tries, getattr(exc, "retry_after", None)) if call.retry else None
            if call.delay is None or (deadline is not None and time.monotonic() + call.delay >= deadline):
                call.retry = False
            for hook in hooks:
                hook.on_error(call, exc)
            if not call.retry or call.delay is None:
                self._advise(exc, call.number + 1)  # the last 429 says when to retry and how to retry more
                return False
            call.number += 1
            tries += 1
            logger.info("%s: retrying after %s (status=%s, type=%s), attempt %d of %d, in %.2fs", client,
                        type(exc).__name__, getattr(exc, "status", None), getattr(exc, "error_type", None),
                        tries, max_retries, call.delay)
            if body is not None:
                body.close()
            if not watch.sleep(call.delay):
                raise _stopped(client, watch, timeout) from exc
            return True

        def reopen(resource_id: str, request: Any, cut: Optional[BaseException]) -> Any:
            """The next attempt of a background stream that broke after its id was known (see above)."""
            nonlocal tries
            if isinstance(cut, AgentHubError):  # the break itself: the hooks see it, resumed at once
                call.delivered = delivered
                self._explain(cut, call.sent)
                if watch.reason is not None:
                    raise _stopped(client, watch, timeout) from cut
                if deadline is not None and isinstance(cut, TransportError) and time.monotonic() >= deadline:
                    raise _stopped(client, watch, timeout, "deadline") from cut
                scrub(cut, self._secrets(call.sent, call.config))
                call.error, call.retry, call.delay = cut, True, 0.0
                for hook in hooks:
                    hook.on_error(call, cut)
                if not call.retry:
                    cut.__dict__["_agenthub_seen"] = True
                    raise cut
            elif watch.reason is not None:
                raise _stopped(client, watch, timeout)
            call.request, call.resuming = request, resource_id
            call.number += 1
            tries = 0  # a resume starts its own count: max_retries bounds the GETs that fail in a row
            while True:
                body = None
                started = time.monotonic()
                try:
                    body = send()
                    if body.open(False):
                        raise StreamProtocolError("{}: resuming a background stream answered one JSON document"
                                                  .format(client), client=client)
                    if debug:
                        _log_attempt(call.sent, call.number, started, body, None)
                    return body
                except AgentHubError as exc:
                    if body is not None:
                        body.close()
                    if not failed(exc, body, started, False, True):
                        exc.__dict__["_agenthub_seen"] = True  # the hooks saw it: the loop raises it as it is
                        raise

        try:
            while True:
                body = None
                started = time.monotonic()
                logged = False
                try:
                    body = send()
                    outputs = read(body, reopen) if resumes else read(body)
                    if debug:
                        logged = _log_attempt(call.sent, call.number, started, body, None)
                    if not stream:
                        for output in outputs:
                            delivered += 1
                            yield output
                        return
                    for output in outputs:  # the hot loop: one pass per event
                        delivered += 1
                        if output["event_type"] == "stop":
                            if body is not None:
                                body.finish()  # the terminal marker arrived: let the connection go back to the pool
                                body = None
                            call.usage = output["usage_metadata"]
                            if debug:
                                logger.debug("stream finished: %s, %d events, finish_reason=%s, usage=%s, %.0f ms",
                                             client, delivered, output["finish_reason"], output["usage_metadata"],
                                             (time.monotonic() - started) * 1000)
                        yield output
                        # checked as the caller asks for the next event, before anything is read: aborted, out
                        # of time, or in another process (a forked child) while the caller held this one
                        if watch.reason is not None:
                            raise _stopped(client, watch, timeout)
                    return
                except AgentHubError as exc:
                    if exc.__dict__.pop("_agenthub_seen", False):  # a resume's final error: the policy ran on it
                        call.delivered = delivered
                        again = False
                    else:
                        # retried only before the first event, and never by a second POST of a background response
                        again = failed(exc, body, started, logged, not delivered and not exc.__dict__.get(RESUMED))
                    if again:
                        body = None  # closed before the backoff
                        continue
                    if call.fallback is not None and not delivered and exc.__dict__.get("_agenthub_stop") is not _STOP:
                        fallback, call.fallback = call.fallback, None
                        call.error = None
                        for output in fallback:
                            delivered += 1
                            yield output
                        return
                    raise
                finally:
                    if body is not None:
                        body.close()
        except BaseException as exc:
            if isinstance(exc, AgentHubError):
                call.error = exc
            raise
        finally:
            if timer is not None:
                timer.cancel()
            call.delivered = delivered
            for hook in hooks:
                hook.on_done(call)

    # -- failover -------------------------------------------------------------------------------
    def _fallback_client(self, entry: Any) -> "AutoLLMClient":
        """A ``fallbacks`` entry as a client: a model name gets this client's timeout, retries, session and
        budget (its key, endpoint and protocol are its own: the registry's, from its environment variable)."""
        if isinstance(entry, AutoLLMClient):
            return entry
        if isinstance(entry, str) and entry:
            return AutoLLMClient(entry, timeout=self.timeout, max_retries=self.max_retries, session=self._session,
                                 max_line_bytes=self.max_line_bytes, budget=self.budget)
        raise ConfigError("each fallbacks entry must be a model name or an AutoLLMClient, not {}".format(
            type(entry).__name__))

    def _route(self) -> Dict[str, Any]:
        return {"model": self.model, "client_type": self.client_type, "host": url_host(self._endpoint.base_url)}

    def _circuit_host(self) -> str:
        """The endpoint a circuit belongs to: host and port (two gateways on one host are two endpoints)."""
        origin = url_origin(self._endpoint.base_url)
        if origin is None:
            return ""
        _, host, port = origin
        return "[{}]:{}".format(host, port) if ":" in host else "{}:{}".format(host, port)

    def _falls_over(self, error: BaseException) -> bool:
        """May a failure before the first event move the turn to the next fallback?"""
        return isinstance(error, self._fallback_on) or _unwell(error)

    def _routes(self, call: Attempt, watch: Any) -> Iterator[UniEvent]:
        """The route loop: this client, then each fallback in order, while no event reached the caller.

        An entry whose circuit is open is skipped at once; a failure the entry's own attempt loop gave
        up on (``_falls_over``) moves to the next entry; once an event was yielded, an error is raised
        as it is (two entries' events are never joined).  ``last_route`` names the entry that answered."""
        settings = self._breaker
        last_error = None  # type: Optional[AgentHubError]
        for entry in [self] + self._fallbacks:
            route = entry._route()
            gate = breaker_for(entry.client_type, entry._circuit_host(), entry.model) if settings is not None else None
            if gate is not None and not gate.allow(settings["cooldown"]):
                logger.info("agenthub fallback: %s (%s, %s) skipped: its circuit is open", entry.model,
                            entry.client_type, route["host"])
                continue
            started = False
            verdict = False
            try:
                sub = call if entry is self else entry._call_for(call)
                for event in entry._attempts_here(sub, watch):
                    if not started:
                        started = verdict = True
                        if gate is not None:
                            gate.success()
                        self.last_route = route
                    yield event
                return
            except AgentHubError as exc:
                if gate is not None and not started and _unwell(exc):
                    gate.failure(settings["failures"])
                    verdict = True
                if started or watch.reason is not None or not self._falls_over(exc):
                    raise
                logger.info("agenthub fallback: %s (%s, %s) skipped: %s%s", entry.model, entry.client_type,
                            route["host"], type(exc).__name__,
                            "" if getattr(exc, "status", None) is None else " {}".format(exc.status))
                last_error = exc
            finally:
                if gate is not None and not verdict:
                    gate.release()  # a probe that ended with no verdict (closed early, or a 400): another may go
        if last_error is not None:
            raise last_error
        raise ServerError("{}: every route is unavailable (their circuits are open after repeated failures; "
                          "they are tried again after their cooldown of {:g}s)".format(self.model, settings["cooldown"]
                                                                                       if settings else 0),
                          client=self.client_type, status=None, error_type="circuit_open", retryable=True,
                          retry_after=settings["cooldown"] if settings else None)

    def _call_for(self, call: Attempt) -> Attempt:
        """The primary's call as this fallback client sends it: the same messages and config, its own request."""
        messages = list(call.messages or [])
        config = dict(call.config or {})
        return Attempt("stream", self.client_type, self.model, apply_extras(self._build(messages, config), config), messages,
                       config, call=call, route=self._route())

    def _secrets(self, request: Any, config: Optional[Mapping[str, Any]] = None) -> List[str]:
        """What to scrub from an error: the key (every part of a credential set), every request
        header's value but the few public ones (so a gateway's own auth header too), the caller's
        default headers and extra_headers whatever their names, and ``user:password@`` of the base URL."""
        key = self._endpoint.api_key
        extra = list(self._endpoint.headers.values())
        extra.extend(key.secrets() if hasattr(key, "secrets") else [key] if isinstance(key, str) and key else [])
        extra.extend(((config or {}).get("extra_headers") or {}).values())
        extra.extend(body_secrets(getattr(request, "body", None)))  # config["mcp_servers"] credentials
        secrets = secret_values(getattr(request, "headers", None), extra)
        secrets.extend(url_secrets(self._endpoint.base_url))
        return sorted(set(secrets), key=len, reverse=True)

    def _get_session(self) -> Any:
        session = self._session
        if session is None:
            self._fresh_locks()
            with self._session_lock:
                if self._session is None:
                    self._session = _transport().new_session()
                    self._pid = os.getpid()
            return self._session
        if self._pid != os.getpid():
            # first use in a forked child: the pools are the parent's (agenthub's own sessions were
            # renewed at the fork already; a session of the caller's is renewed here, before any reuse)
            self._pid = os.getpid()
            _transport().forget_connections(session)
        return session

    def _trace(self, config: Mapping[str, Any], history: List[UniMessage],
               route: Optional[Mapping[str, Any]] = None) -> None:
        """Write the trace of a completed answer.  A failure is logged and the answer stands
        (agenthub.tracer documents the policy): the turn happened, so it is never undone."""
        from .tracer import save_trace

        routes = self.__dict__.setdefault("_trace_routes", {}).setdefault(config["trace_id"], [])
        if route is not None:  # which endpoint answered each turn (failover never hides it)
            routes.append(dict(route, turn=len(history) - 1))

        if config.get("extra_headers"):  # header values may be credentials: a trace never holds them
            config = dict(config, extra_headers={name: "***" for name in config["extra_headers"]})
        try:
            save_trace(config["trace_id"], self.model, history, config, routes=routes)
        except Exception as exc:  # disk full, permissions, a folder removed meanwhile, an unwritable value
            logger.error("%s: the trace %r was not written (%s: %s); the answer stands", self.client_type,
                         config["trace_id"], type(exc).__name__, exc)


def _marked(events: Iterator[UniEvent], resumable: Any) -> Iterator[UniEvent]:
    """``events``; an error raised once the background response's id was known is marked so that the
    attempt loop never retries it by a second POST."""
    try:
        yield from events
    except AgentHubError as exc:
        if resumable is not None and resumable.resource_id:
            setattr(exc, RESUMED, resumable.resource_id)
        raise


def _resume_module(record: Any) -> Any:
    """The module of a protocol that resumes background streams (``resume_request``, ``cancel_request``,
    ``frame_cursor``, ``ordered_cursors``)."""
    module = importlib.import_module("agenthub.providers." + record.module)
    if not hasattr(module, "resume_request"):  # pragma: no cover - build_request.accepts keeps it out
        raise UnsupportedParameterError("{}: background is not available on this protocol".format(record.name),
                                        client=record.name, parameter="background")
    return module


def _sequence(value: Any, name: str) -> List[Any]:
    if value is None:
        return []
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
        raise ConfigError("{} must be a list".format(name))
    return list(value)


def _error_classes(value: Any) -> Tuple[type, ...]:
    """``fallback_on=``: error classes (AgentHubError subclasses) that also move a turn to the next fallback."""
    classes = tuple(_sequence(value, "fallback_on"))
    for cls in classes:
        if not (isinstance(cls, type) and issubclass(cls, AgentHubError)):
            raise ConfigError("fallback_on takes AgentHubError subclasses (ConfigError, UpstreamError, ...), "
                              "not {!r}".format(cls))
    return classes


def _unwell(error: BaseException) -> bool:
    """A failure that says the endpoint is down or overloaded (what fails over and counts against its
    circuit): a retryable status after the retries, a connection failure or a timeout, an in-stream
    error or a cut before any content.  An abort by the caller, a fork, a 400 or a 401 are not."""
    if isinstance(error, TransportError):
        return not (error.__dict__.get("aborted") or error.__dict__.get("forked"))
    if isinstance(error, (UpstreamError, StreamProtocolError)):
        return bool(getattr(error, "retryable", False))
    return False


def _missing_v1(client_type: str, base_url: str) -> Optional[str]:
    """For a 404 at an OpenAI-compatible endpoint whose base URL has no ``/v1`` (``http://127.0.0.1:8000``
    where the server answers under ``http://127.0.0.1:8000/v1``): the hint the README promises."""
    from urllib.parse import urlsplit

    route = hosts.CLIENT_TYPES.get(client_type)
    if route is None or route.host_name != "openai":
        return None
    path = urlsplit(base_url).path
    if any(part.lower().startswith("v1") for part in path.split("/")) or "/api/" in path + "/":
        return None
    return ("the base_url has no /v1 (OpenAI-compatible servers answer at /v1/chat/completions and "
            "/v1/responses): try base_url='{}/v1'".format(redact_url(base_url.rstrip("/"))))


def _log_attempt(request: Any, attempt: int, started: float, body: Any, error: Optional[BaseException]) -> bool:
    """One DEBUG record for one HTTP attempt (no key, header or body in it)."""
    if error is not None:
        status = getattr(error, "status", None)
        request_id = getattr(error, "request_id", None)
        outcome = " -> {}".format(type(error).__name__)
    else:
        status = getattr(body, "status", None)
        request_id = answer_request_id(getattr(body, "headers", None))
        outcome = ""
    logger.debug("HTTP %s %s status=%s request_id=%s attempt=%d elapsed=%.0f ms%s", getattr(request, "method", "?"),
                 safe_url(getattr(request, "url", None)), status, request_id, attempt + 1,
                 (time.monotonic() - started) * 1000, outcome)
    return True


def _limits(timeout: Timeout, deadline: Optional[float]) -> Optional[Tuple[Optional[float], Optional[float]]]:
    """requests' (connect, read) for the next attempt, clipped to what is left of the deadline."""
    if deadline is None:
        return (timeout.connect, timeout.read)
    left = deadline - time.monotonic()
    if left <= 0:
        return None
    return (left if timeout.connect is None else min(timeout.connect, left),
            left if timeout.read is None else min(timeout.read, left))


#: what marks the errors the loop itself raises for an abort or the deadline (no server can send it)
_STOP = object()


def _stopped(client: str, control: Any, timeout: Timeout, reason: Optional[str] = None) -> TransportError:
    reason = reason or control.reason or "abort"
    if reason == "deadline":
        error = TransportError("{}: the total deadline of {}s was exceeded".format(client, timeout.total),
                               client=client, timeout=True, deadline=True, aborted=False, retryable=False)
    elif reason == "fork":
        error = TransportError("{}: this stream was opened in process {} and cannot be read in another process "
                               "(a forked child): open a new stream there".format(client, getattr(control, "pid", "?")),
                               client=client, timeout=False, deadline=False, aborted=False, retryable=False,
                               forked=True)
    else:
        error = TransportError("{}: the stream was aborted by the caller".format(client), client=client,
                               timeout=False, deadline=False, aborted=True, retryable=False)
    error._agenthub_stop = _STOP  # type: ignore[attr-defined]  # not a field: kept out of pickles and reprs
    return error


def _transport() -> Any:
    from . import transport  # imported on first use: `import agenthub` stays cheap

    return transport


class _ClientModule(type(sys)):  # type: ignore[misc]
    """This module, whose retry constants are agenthub.attempts' own: ``agenthub.client.BACKOFF_BASE``
    reads them there and assigning it (the README's way to make tests fast) sets them there."""


def _alias(name: str) -> Any:
    return property(lambda module: getattr(attempt_loop, name), lambda module, value: setattr(attempt_loop, name, value))


for _name in ("BACKOFF_BASE", "BACKOFF_CAP", "RETRY_AFTER_CAP"):
    setattr(_ClientModule, _name, _alias(_name))
sys.modules[__name__].__class__ = _ClientModule
