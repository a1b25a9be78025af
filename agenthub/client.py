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
- ``Timeout(connect, read, total, events)``: *read* is the idle gap allowed between received
  bytes (any byte counts, SSE comments and pings too); *total* is an optional deadline
  for the whole call, retries and backoff included; *events* (1800 s) ends an SSE stream
  that goes on with no event, only comments and keep-alives, for that long.
- ``stream.abort()`` (from any thread) ends the stream promptly with
  ``TransportError(aborted=True)`` and releases the connection.
- A stream belongs to the process that opened it: in a forked child its next read raises
  ``TransportError(forked=True)`` without touching the connection, and the child's
  ``abort()`` or ``close()`` leaves the parent's stream alone.

The call seam: a turn is one logical call (an ``agenthub.attempts.Attempt``) run by the attempt
loop (``agenthub.attempts.run_attempts``: the one place of these policies, for a stream and for a
JSON document alike: abort, deadline, ``before_attempt``, encode per attempt, send, ``after_response``,
read; on a failure: explain, scrub, decide, ``on_error``, back off, retry or raise; ``on_done``) and,
with ``fallbacks=``, by the route loop (``agenthub.failover.run_routes``: one deadline per call, the
call's hooks on every route, ``stream.route`` the route that answered).  Hooks
(``AutoLLMClient(hooks=[...])``, read back as ``client.hooks``; process-wide ones through
``agenthub.attempts.register``) are the seam for what builds on the loop: the budget
(``agenthub.budget.BudgetHook``), the rate limiter (``agenthub.limiter.LimiterHook``), the tracer
(``agenthub.tracer.TraceHook``, for ``config["trace_id"]``), telemetry, a response cache.  A background
response's reconnect after a cut (``config["background"]``) is the same loop's next attempt: the GET
that continues the stream (``attempt.resuming`` its id), seen by every hook, retried, backed off,
stopped and scrubbed like any; an error raised once the response id is known is marked ``RESUMED``
and never retried by a second POST (``agenthub.background``).
"""

import collections.abc
import itertools
import logging
import os
import re
import sys
import threading
import time
from typing import (TYPE_CHECKING, Any, Callable, Dict, Generator, Iterable, Iterator, List, Mapping, Optional, Sequence,
                    Tuple, Type, TypeVar, Union, overload)

from . import attempts as attempt_loop, hosts, registry
from ._log import log_from_env
from .attempts import (DEFAULT_CONNECT_TIMEOUT, DEFAULT_READ_TIMEOUT, Attempt, AttemptHook, Timeout,  # noqa: F401
                       run_attempts, same_route, scrub)
from .failover import Route, merge_hooks, run_routes, unwell
from .answers import starts_stream
from ._redact import is_public_header, secret_values, shown_url, url_query_secrets
from ._redact import body_secrets
from .breaker import account_mark, endpoint_name, settings as breaker_settings
from .hosts.trust import circuit_host, route_host, url_host, url_origin, url_server  # the one host rule: which host a request connects to
from .errors import (AgentHubError, ConfigError, RateLimitError, StreamProtocolError, TransportError,
                     UnsupportedOperationError, UnsupportedParameterError, UpstreamError, safe_url, set_field)
from .foreign import for_dialect, for_dialect_resumed, results_next_to_calls
from .providers import DIALECTS
from .providers._common import Endpoint, Prior, apply_extras
from .catalog import endpoint_tier
from .sse import DEFAULT_MAX_LINE_BYTES
from .stream import CATALOG_TIERS, Collector, StreamEnd, collect, drive, now_ms, with_service_tier
from .types import AssistantMessage, Message, ToolCallItem, UniConfig, UniEvent, UniMessage
from .validate import (CheckedMessages, check_anthropic_version, check_config, check_tool_choice_has_tools,
                       check_tool_pairs, check_distinct_header_names,
                       check_header_name, check_header_value, check_message, check_messages)

__all__ = ["AutoLLMClient", "ResponseStream", "Timeout"]

logger = logging.getLogger("agenthub")

log_from_env()  # AGENTHUB_LOG=debug|info: a stderr handler on the "agenthub" logger (agenthub._log)

#: pages of a model list read at most (a server that never stops paging is cut off there)
MAX_MODEL_PAGES = 100
#: config keys only some protocols read (their Protocol record's ``accepts``): refused by the others
LONGRUN_KEYS = ("background", "compaction")
# BACKOFF_BASE, BACKOFF_CAP and RETRY_AFTER_CAP are agenthub.attempts' (read and set through this module too:
# ``client.BACKOFF_BASE = 0`` still works, see the end of this module)


def _billed_at(parts: Iterator[Any], tier: str) -> Iterator[Any]:
    """A parser's parts, its StreamEnd's usage carrying the catalog tier the endpoint bills at (``Usage.service_tier``:
    ``catalog.endpoint_tier``) unless the answer says one."""
    for part in parts:
        if type(part) is StreamEnd and isinstance(part.usage, dict) and getattr(part.usage, "service_tier", None) is None:
            part.usage = with_service_tier(part.usage, tier, CATALOG_TIERS)
        yield part


def _protocol(client_type: str, embeddings: bool = False) -> Any:
    """The dialect's record serving ``client_type`` (its embeddings record for embedding models)."""
    record = hosts.client_type(client_type).protocol(embeddings)
    if record is None:
        raise ConfigError("client_type {!r} does not serve embedding models".format(client_type))
    return record


# -- the stream handle ----------------------------------------------------------------------------


_T = TypeVar("_T")

if TYPE_CHECKING:  # what type checkers see: a generator of UniEvents (at runtime the plain ABC, no typing machinery)
    from .agent.runner import Run
    from .budget import Budget
    from .cache import ResponseCache
    from .limiter import RateLimiter
    from .output.parse import ParseStream, Parsed

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
    __slots__ = ("_control", "_gen", "_call")

    def __new__(cls, control: Any, gen: Iterator[UniEvent], call: Any = None) -> "ResponseStream":
        self = super().__new__(cls, gen)  # type: ignore[call-arg]
        self._control = control
        self._gen = gen
        self._call = call
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

    @property
    def route(self) -> Optional[Dict[str, Any]]:
        """The endpoint that answered this stream: {"model", "client_type", "host"} (with fallbacks, the
        one whose events these are; before the first event, the first route tried)."""
        return None if self._call is None else self._call.route

    def __enter__(self) -> "ResponseStream":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return "<ResponseStream{}>".format(" aborted" if self.aborted else "")


def _check_priced(fallbacks: Sequence["AutoLLMClient"]) -> None:
    """A budget (without ``allow_unpriced``) holds every attempt of a call, a fallback's too: a fallback the catalog
    has no price for would be refused (a ConfigError) on every turn failed over to it, only while the primary is
    down.  Said when the client is made instead."""
    from .budget import worst_case_usd

    for entry in fallbacks:
        if worst_case_usd(entry.model, 0, 0) is None:
            raise ConfigError(
                "fallbacks entry {!r} ({}) has no list price in the catalog: the budget cannot bound what a turn there "
                "costs, so it would refuse every turn failed over to it, while the primary is down; give a priced "
                "model, or Budget(max_usd, allow_unpriced=True) to let it run uncounted".format(
                    entry.model[:80], entry.client_type))


def _last_answer(messages: Sequence[Mapping[str, Any]]) -> int:
    """The index of the last assistant message of ``messages`` (-1: none)."""
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].get("role") == "assistant":
            return index
    return -1


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
    conversation (per agent thread) for stateful calls.  ``anthropic_version`` pins the Anthropic API
    version of a Claude route ("2023-06-01"; default: 2026-10-21 where offered, see docs/providers.md).
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
        hooks: Optional[Sequence[AttemptHook]] = None,
        cache: Optional["ResponseCache"] = None,
        anthropic_version: Optional[str] = None
    ) -> None:
        if not isinstance(max_retries, int) or isinstance(max_retries, bool) or max_retries < 0:
            raise ConfigError("max_retries must be an int >= 0")
        if max_line_bytes is not None and (not isinstance(max_line_bytes, int) or isinstance(max_line_bytes, bool)
                                           or max_line_bytes < 1024):
            raise ConfigError("max_line_bytes must be an int >= 1024")
        if session is not None and not callable(getattr(session, "request", None)):
            raise ConfigError("session must be a requests.Session (or an object with its request method), not {}"
                              .format(type(session).__name__))
        if default_headers is not None and not all(
                isinstance(k, str) and isinstance(v, str) for k, v in dict(default_headers).items()):
            raise ConfigError("default_headers must map str to str")
        for name, value in dict(default_headers or {}).items():
            check_header_name(name, "default_headers key {!r}".format(name[:60]))
            check_header_value(value, "default_headers[{!r}]".format(name))
        check_distinct_header_names(default_headers or {}, "default_headers")
        kind, url, key, quirks = registry.resolve(model, client_type, base_url, api_key)
        self._anthropic_pin = anthropic_version is not None  # (a fallback by name keeps the pin)
        if anthropic_version is not None:  # the Anthropic API version pinned (docs/providers.md)
            quirks = dict(quirks, anthropic_version=check_anthropic_version(
                anthropic_version, kind, hosts.client_type(kind).dialect,
                [row.name for row in hosts.all_client_types() if row.dialect == "anthropic"]))
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
        if self._host.check_headers is not None:
            self._host.check_headers(default_headers or {}, self._endpoint, "default_headers")
            headers = getattr(session, "headers", None)  # (requests adds them under the request's own)
            if isinstance(headers, Mapping):
                self._host.check_headers(headers, self._endpoint, "session.headers")
        #: gen_ai.provider.name of this route: the registry row the caller chose (a preset at any base_url, the
        #: model's row at its vendor's hosts), else the vendor of a known host, else the client-type row's
        self._provider = registry.provider_name(kind, url_host(url), registry.chosen_route(model, client_type,
                                                                                         base_url))
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
        # the messages the last stateless call checked: a history passed again is checked once per new message
        self._checked = CheckedMessages()
        # the history the last stateful call sent (not checked again: it was as it came in), so that call's
        # request is built from the previous one's where the history is that call's, unchanged
        self._checked_history = CheckedMessages()
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
        #: the agenthub.ResponseCache this client's streams are answered from and stored in (None: no cache)
        self.cache = cache
        if cache is not None:
            from .cache import ResponseCache

            if not isinstance(cache, ResponseCache):
                raise ConfigError("cache must be an agenthub.ResponseCache (got {})".format(type(cache).__name__))
            self._hooks.append(cache.hook_for(self._endpoint.base_url, self.credential_values))
        self._tool_hooks = []  # type: List[Any]  # hooks with ToolHook methods only (agenthub.agent.hooks): runs'
        for hook in _sequence(hooks, "hooks"):  # the caller's, after the budget's and the limiter's
            if not callable(getattr(hook, "before_attempt", None)):
                from .agent.hooks import is_tool_hook

                if is_tool_hook(hook):
                    self._tool_hooks.append(hook)
                    continue
                raise ConfigError("each hooks entry must be an agenthub.attempts.AttemptHook or an "
                                  "agenthub.agent.ToolHook (got {})".format(type(hook).__name__))
            from .cache import ResponseCache as _Cache  # (a cache given as a hook is keyed as cache= keys it)

            self._hooks.append(hook.hook_for(self._endpoint.base_url, self.credential_values)
                               if isinstance(hook, _Cache) else hook)
        #: which endpoint answered the latest turn that started: {"model", "client_type", "host"} (None before)
        self.last_route = None  # type: Optional[Dict[str, Any]]
        self._fallbacks = [self._fallback_client(entry) for entry in _sequence(fallbacks, "fallbacks")]
        if budget is not None and not budget.allow_unpriced:
            _check_priced(self._fallbacks)
        self._fallback_on = _error_classes(fallback_on)
        self._breaker = breaker_settings(circuit_breaker)
        self._dialect = self._protocol.name  # the wire dialect (agenthub.foreign converts history for it)

    def __repr__(self) -> str:
        return "AutoLLMClient(model={!r}, client_type={!r}, base_url={!r})".format(
            self.model, self.client_type, shown_url(self._endpoint.base_url))

    # pickling (process pools, Ray, Spark): the session (sockets), locks and module are rebuilt where it lands
    def __getstate__(self) -> Dict[str, Any]:
        state = self.__dict__.copy()
        for name in ("_session", "_busy", "_session_lock", "_protocol", "_host", "_checked", "_checked_history",
                     "_circuit_key"):  # (the breaker's mark of the credentials is this process's)
            state.pop(name, None)
        return state

    def __setstate__(self, state: Dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._session = None
        self._pid = self._locks_pid = os.getpid()
        self._busy = threading.Lock()
        self._session_lock = threading.Lock()
        self._checked = CheckedMessages()
        self._checked_history = CheckedMessages()
        self.__dict__.setdefault("_hooks", [])
        self.__dict__.setdefault("_provider", None)  # a client pickled before it had one
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

    @property
    def endpoint(self) -> Endpoint:
        """Where and how this client sends (an ``agenthub.providers._common.Endpoint``: base URL, key, default
        headers, the route's quirks): what the batch engines send their own calls with.  It holds the key:
        never log it (its repr hides it)."""
        return self._endpoint

    @property
    def protocol(self) -> Any:
        """The wire dialect's record (``agenthub.providers._common.Protocol``) this client speaks."""
        return self._protocol

    def plan(self, messages: Sequence[Message], config: Optional[UniConfig] = None) -> Any:
        """The request plan (an ``HttpRequest``: path and body, no credential) a turn would send (the batch
        engines put it in their files); checked as ``streaming_response`` checks its input."""
        return self._plan(messages, check_config(config))

    def _plan(self, messages: Sequence[Message], cfg: Dict[str, Any]) -> Any:
        """``plan`` with ``cfg`` already checked (``check_config``'s result: checked once per call)."""
        check_tool_choice_has_tools(cfg)
        checked = self._checked
        same = check_messages(messages, checked)
        return apply_extras(self._build(list(messages), cfg, prior=Prior(checked.stash, same or 0)), cfg)

    # -- history ---------------------------------------------------------------------------
    def get_history(self) -> List[Message]:
        return list(self._history)

    def set_history(self, history: Sequence[Message]) -> None:
        check_messages(history) if history else None
        self._check_idle("set_history")
        self._history = list(history)
        self._version += 1

    def _put_history(self, history: Sequence[Message]) -> None:
        """``set_history`` for the tool runner, unchecked: ``history`` is this history with the runner's own
        (checked) results message added or taken off again, so each turn does not check it all over."""
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
        cfg = check_config(config)
        return self._open(self._plan(messages, cfg), cfg, list(messages), None)

    def streaming_response_stateful(self, message: UniMessage, config: Optional[UniConfig] = None) -> ResponseStream:
        """Stream one turn after this instance's history; on success, history gains ``message`` and the answer."""
        check_message(message)
        if message["role"] != "user":
            raise ConfigError("streaming_response_stateful takes the next user message")
        return self._stateful_checked(message, check_config(config))

    def _checked_streams(self) -> Optional[Tuple[Callable[..., ResponseStream], Callable[..., ResponseStream]]]:
        """For the tool runner, which checks its config once a run: ``streaming_response`` and
        ``streaming_response_stateful`` taking a config ``check_config`` already checked (the messages are
        checked as ever).  None where a subclass streams its own way (the runner calls the public methods)."""
        cls = type(self)
        if cls.streaming_response is not AutoLLMClient.streaming_response \
                or cls.streaming_response_stateful is not AutoLLMClient.streaming_response_stateful:
            return None
        return self._stateless_checked, self._stateful_message_checked

    def _stateless_checked(self, messages: Sequence[Message], cfg: Dict[str, Any]) -> ResponseStream:
        return self._open(self._plan(messages, cfg), cfg, list(messages), None)

    def _stateless_prechecked(self, messages: Sequence[Message], cfg: Dict[str, Any]) -> ResponseStream:
        """``_stateless_checked`` for messages the caller checked (``check_messages``) and has not changed since
        (the job runner's rows, checked with the whole file before anything was sent): not checked again.  What the
        client keeps of its last call is let go, as a check of new messages lets it go (none is the last call's)."""
        checked = self._checked
        checked.clear()
        return self._open(apply_extras(self._build(list(messages), cfg, prior=Prior(checked.stash, 0)),  # type: ignore[arg-type]
                                       cfg), cfg, list(messages), None)  # type: ignore[arg-type]

    def _stateful_message_checked(self, message: UniMessage, cfg: Dict[str, Any]) -> ResponseStream:
        check_message(message)
        if message["role"] != "user":
            raise ConfigError("streaming_response_stateful takes the next user message")
        return self._stateful_checked(message, cfg)

    def _stateful_checked(self, message: UniMessage, cfg: Dict[str, Any]) -> ResponseStream:
        self._check_idle("streaming_response_stateful")
        if "created_at" not in message:
            message = dict(message)  # type: ignore[assignment]
            message["created_at"] = int(time.time() * 1000)
        messages = self._history + [message]
        # (the history's head as the previous stateful call sent it, unchanged).  Its messages are checked as
        # a stateless call's are: only those new or changed in place since (the dicts are the caller's too:
        # set_history keeps them, get_history hands them out), so a history edited afterwards is refused here
        kept = self._checked_history
        prior = Prior(kept.stash, kept.check(messages))
        request = apply_extras(self._build(messages, cfg, stateful=True, prior=prior), cfg)
        return self._open(request, cfg, messages, message)

    def _build(self, messages: List[UniMessage], config: Dict[str, Any], stateful: bool = False,
               prior: Optional[Prior] = None) -> Any:
        """The protocol's request plan; a value it cannot use (a fidelity changed after it came back,
        say) is a ConfigError, never a bare TypeError.  ``stateful``: a stateful call, told to a
        protocol that chains turns server-side (its record has ``chains_turns`` set).  The
        config keys only some protocols read (``LONGRUN_KEYS``) are refused by the others, and compaction
        items this protocol cannot read are left out with a warning (``agenthub.foreign``).  ``prior``: what this
        client's previous stateless call kept, to start from where the history is that call's (a dialect that
        takes it: ``build_request.takes_prior``)."""
        record = self._protocol
        build = record.build_request
        if config.get("extra_headers") and self._host.check_headers is not None:
            self._host.check_headers(config["extra_headers"], self._endpoint, "config['extra_headers']")
        for key in LONGRUN_KEYS:
            if config.get(key) and key not in record.accepts:
                raise UnsupportedParameterError("{}: {} is not available on this protocol".format(
                    self.client_type, key), client=self.client_type, parameter=key)
        tools = config.get("tools")
        rule = DIALECTS.get(self._dialect)
        if tools and rule is not None and not rule.relays:  # (a server checks its upstream's)
            for index, tool in enumerate(tools):
                if not rule.tool_name_ok(tool["name"]):  # the provider's 400, before anything is sent
                    raise ConfigError("config['tools'][{}]: {!r} is not a valid tool name on {} ({} tool names are "
                                      "{})".format(index, tool["name"], self.client_type, self._dialect,
                                                   rule.tool_names[1]))
        if rule is None or not rule.relays:  # (a server checks its upstream's)
            check_tool_pairs(self.client_type, messages, config, rule is not None and rule.answers_required)
        if "foreign_thinking" in config:  # the client's own key: the protocol never sees it
            config = dict(config)
            foreign_thinking = config.pop("foreign_thinking")
        else:
            foreign_thinking = "drop"
        chain = True
        if stateful and record.chains_turns and prior is not None:
            # the turns chain server-side on the last answer only when every message before it is what this
            # client's previous stateful call sent, unchanged: a history given by set_history (another client's,
            # or edited) or changed in place goes whole, as it now is, and the calls after it chain
            chain = _last_answer(messages) <= prior.same
        # another protocol's opaque items are converted on the way out (agenthub.foreign); history is untouched
        if rule is not None and rule.results_next:
            joined = results_next_to_calls(messages)
            if joined is not messages:  # (a text before a call's results, or results one message each: one message)
                try:
                    return self._converted(joined, config, stateful, None, foreign_thinking, chain)  # type: ignore[arg-type]
                except AgentHubError:
                    # the error names the caller's positions: the messages as given, when they are refused too
                    self._converted(messages, config, stateful, None, foreign_thinking, chain)
                    raise
        return self._converted(messages, config, stateful, prior, foreign_thinking, chain)

    def _converted(self, messages: List[UniMessage], config: Dict[str, Any], stateful: bool, prior: Optional[Prior],
                   foreign_thinking: str, chain: bool = True) -> Any:
        """``_build``'s request plan of ``messages`` as ``agenthub.foreign`` converts them for the dialect; ``chain``:
        a stateful call of a protocol that chains turns server-side may name the last answer's stored turn."""
        record = self._protocol
        build = record.build_request
        endpoint = self._endpoint
        if foreign_thinking == "text" and "reasoning_as_text" in record.quirk_keys \
                and not endpoint.quirks.get("reasoning_field"):
            # a host whose dialect reads the quirk and that reads no known reasoning field (a Chat host of no row):
            # the history's reasoning goes as text in content
            endpoint = Endpoint(endpoint.client_type, endpoint.base_url, endpoint.api_key, endpoint.headers,
                                dict(endpoint.quirks, reasoning_as_text=True), endpoint.model)
        if prior is not None and getattr(build, "takes_prior", False):
            messages = for_dialect_resumed(messages, self._dialect, foreign_thinking, prior)  # type: ignore[assignment]
        else:
            prior = None
            messages = for_dialect(messages, self._dialect, foreign_thinking)[0]  # type: ignore[assignment]
        try:
            if stateful and record.chains_turns:
                if prior is not None:
                    return build(endpoint, self.model, messages, config, stateful=True, prior=prior, chain=chain)
                return build(endpoint, self.model, messages, config, stateful=True, chain=chain)
            if prior is not None:
                return build(endpoint, self.model, messages, config, prior=prior)
            return build(endpoint, self.model, messages, config)
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

    def run(self, messages: Sequence[Message], config: Optional[UniConfig] = None, *, tools: Sequence[Any],
            max_turns: int = 10, parallel: int = 4, approve: Optional[Callable[[ToolCallItem], Any]] = None,
            decisions: Optional[Mapping[str, Any]] = None, hooks: Optional[Sequence[Any]] = None,
            journal: Any = None, run_id: Optional[str] = None, journal_ttl: Optional[float] = None,
            journal_wait: Optional[float] = None, output: Any = None, output_retries: int = 2,
            max_output_chars: Optional[int] = 1000000) -> "Run":
        """The tool loop run for you: turns and tool calls until done (agenthub.agent.runner; docs/tools.md).
        ``hooks``: ToolHooks of this run (agenthub.agent.ToolHook), after this client's.  ``journal`` (a store
        URL or object) and ``run_id``: a run that survives a crash, resumed by calling again with the same
        ``run_id`` (docs/tools.md, "Runs that survive a crash"); ``journal_ttl`` seconds it is kept after its
        last write (None: until forgotten), ``journal_wait`` seconds to wait for a live owner to let go.
        ``output``: a type (as ``parse`` takes) the final answer must be: ``RunResult.output``, re-asked at most
        ``output_retries`` times in the same loop (docs/typed-output.md, "In a tool run").  ``max_output_chars``:
        the longest text of a tool's result (its head and a marker saying how much was cut; None: no limit)."""
        return (_RUN or _run_class())(
            self, messages, config, tools, max_turns, parallel, approve, decisions, hooks=hooks, journal=journal,
            run_id=run_id, journal_ttl=journal_ttl, journal_wait=journal_wait, output=output,
            output_retries=output_retries, max_output_chars=max_output_chars, **self._run_hooks(config))

    def run_stateful(self, message: Optional[UniMessage], config: Optional[UniConfig] = None, *,
                     tools: Sequence[Any], max_turns: int = 10, parallel: int = 4,
                     approve: Optional[Callable[[ToolCallItem], Any]] = None,
                     decisions: Optional[Mapping[str, Any]] = None, hooks: Optional[Sequence[Any]] = None,
                     journal: Any = None, run_id: Optional[str] = None, journal_ttl: Optional[float] = None,
                     journal_wait: Optional[float] = None, output: Any = None, output_retries: int = 2,
                     max_output_chars: Optional[int] = 1000000) -> "Run":
        """``run`` on and into this instance's history (each turn appended as it completes, each turn's tool
        results as soon as its calls ran, a re-ask with its answer); ``journal``/``run_id``, ``output``,
        ``output_retries`` and ``max_output_chars`` as ``run``'s."""
        return (_RUN or _run_class())(
            self, None, config, tools, max_turns, parallel, approve, decisions, True, message, hooks=hooks,
            journal=journal, run_id=run_id, journal_ttl=journal_ttl, journal_wait=journal_wait, output=output,
            output_retries=output_retries, max_output_chars=max_output_chars, **self._run_hooks(config))

    def _run_hooks(self, config: Any) -> Dict[str, Any]:
        """What a run takes from this client: its hooks (those with ToolHook methods apply to runs), the
        process-wide ones, and the trace writer of ``config["trace_id"]`` (the run's one writer)."""
        trace = None
        if config is not None and isinstance(config, Mapping) and config.get("trace_id") is not None:
            from .tracer import RunTrace

            trace = RunTrace(config["trace_id"])
        elif not self._hooks and not attempt_loop._registered and not self.__dict__.get("_tool_hooks"):
            return {"client_hooks": (), "trace": None}  # (no hook at all: no lists made a run)
        return {"client_hooks": list(attempt_loop.hooks_for(self._hooks)) + list(self.__dict__.get("_tool_hooks", ())),
                "trace": trace}

    @overload
    def parse(self, messages: Sequence[Message], output: Type[_T], config: Optional[UniConfig] = None, *,
              retries: int = 2) -> "Parsed[_T]": ...

    @overload
    def parse(self, messages: Sequence[Message], output: Any, config: Optional[UniConfig] = None, *,
              retries: int = 2) -> "Parsed[Any]": ...

    def parse(self, messages: Sequence[Message], output: Any, config: Optional[UniConfig] = None, *,
              retries: int = 2) -> "Parsed[Any]":
        """Typed output: the answer as an instance of ``output`` (a dataclass, TypedDict, NamedTuple, Enum,
        Literal, list, union, pydantic model or JSON Schema dict), validated, re-asked at most ``retries``
        times when it does not hold (agenthub.output; docs/typed-output.md)."""
        from .output.parse import parse
        return parse(self, messages, output, config, retries=retries)

    @overload
    def streaming_parse(self, messages: Sequence[Message], output: Type[_T], config: Optional[UniConfig] = None, *,
                        retries: int = 2) -> "ParseStream[_T]": ...

    @overload
    def streaming_parse(self, messages: Sequence[Message], output: Any, config: Optional[UniConfig] = None, *,
                        retries: int = 2) -> "ParseStream[Any]": ...

    def streaming_parse(self, messages: Sequence[Message], output: Any, config: Optional[UniConfig] = None, *,
                        retries: int = 2) -> "ParseStream[Any]":
        """``parse`` streamed: iterating yields the partial value as it grows (plain dicts and lists; a re-ask
        starts a new one, ``stream.attempt`` says which); ``.result()`` the ``Parsed``."""
        from .output.parse import streaming_parse
        return streaming_parse(self, messages, output, config, retries=retries)

    def embed(self, texts: Sequence[str], config: Optional[UniConfig] = None) -> List[List[float]]:
        """One vector per text, in input order, from an embedding model (``embedding_config`` sets the
        dimensions).  More texts than one request takes (2048 for OpenAI-compatible servers, 100 for
        Gemini) go as several requests, in order.  A server answering another number of vectors, or
        vectors of other dimensions than ``embedding_config`` asked for, is a StreamProtocolError."""
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
        cfg = check_config(config)
        wanted = (cfg.get("embedding_config") or {}).get("dimensions")
        size = self._protocol.max_inputs or len(texts)  # more than one request takes: several requests, in order
        vectors = []  # type: List[List[float]]
        for start in range(0, len(texts), size):
            chunk = texts[start:start + size]
            messages = [{"role": "user", "content_items": [{"type": "text", "text": text}]} for text in chunk]
            answer = self.response(messages, config)  # type: ignore[arg-type]
            items = answer["content_items"]  # type: List[Any]
            got = [item["embedding"] for item in items if item.get("type") == "embedding"]  # type: List[List[float]]
            if len(got) != len(chunk):
                raise StreamProtocolError("{}: {} texts were sent for embedding and {} vectors came back".format(
                    self.client_type, len(chunk), len(got)), client=self.client_type)
            for vector in got:
                if wanted is not None and len(vector) != wanted:
                    raise StreamProtocolError("{}: embedding_config asked for {} dimensions and a vector of {} came "
                                              "back (the server ignored it)".format(self.client_type, wanted,
                                                                                    len(vector)),
                                              client=self.client_type)
            vectors.extend(got)
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
            try:
                token.encode("utf-8")
            except UnicodeEncodeError:  # JSON spelled a lone surrogate: no URL can carry it back
                raise StreamProtocolError("{}: the model list's next page token is not text that can be sent back "
                                          "(a lone surrogate)".format(self.client_type),
                                          client=self.client_type) from None
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
        / 3 for text, 1600 tokens per image, a document from its size), is returned instead."""
        from .providers.counting import parse_count

        if not isinstance(estimate, bool):
            raise ConfigError("estimate must be True or False")
        cfg = check_config(config)
        plan = self._plan(messages, cfg)
        row = hosts.client_type(self.client_type)
        record = row.protocol()
        count = record.count  # the dialect's, where it has a count endpoint
        request = None
        if count is not None and self._protocol is record:
            request = count.request(plan, self.model, self._endpoint.quirks, row.count_tokens)
        if request is None or count is None:
            if estimate:
                from .estimate import estimate_tokens

                return estimate_tokens(messages, cfg)
            raise UnsupportedOperationError(
                "{}: this endpoint has no token-counting method; count_tokens(..., estimate=True) gives a local "
                "estimate".format(self.client_type), client=self.client_type, operation="count_tokens")
        return parse_count(self.client_type, self._fetch(record, request), count.field)

    def _fetch(self, record: Any, request: Any) -> Any:
        """One JSON document for ``request``: the attempt loop (timeouts, retries, scrubbing, hooks)
        around one document instead of a stream."""
        documents = self._run(Attempt("document", self.client_type, self.model, request, route=self._route(), server=url_server(self._endpoint.base_url), provider=self._provider, account=self._account(self._hooks)), _transport().Watch(), record,
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

    def _reattach(self, resource_id: str, config: Optional[UniConfig] = None,
                  messages: Optional[Sequence[Message]] = None, message: Optional[UniMessage] = None,
                  route: Optional[Mapping[str, Any]] = None) -> ResponseStream:
        """A turn this client's endpoint (or, ``route`` naming one, the fallback that answered it) started as a
        background response (or interaction) ``resource_id``, read again from its start by the GET that
        streams it (``attempt.resuming`` is its id from the first attempt: the attempt loop's hooks, retries
        and deadline, a cut resumed by id; never a POST, never another route): how a journaled run resumed
        after a crash takes the turn that was in flight without paying for it again (agenthub.agent.runner).
        ``messages``: the turn's conversation (stateless), or ``message``: a stateful turn's next message
        (history gains it and the answer, as ``streaming_response_stateful``).  A ConfigError when ``config``
        is not a background one, this protocol has no background streams, or ``route`` is none of this
        client's; a StreamProtocolError for an id that is no usable URL segment."""
        cfg = check_config(config)
        entry = self._route_entry(route)
        if entry is None:
            raise ConfigError("{}: the background response was started on a route that is neither this client "
                              "nor one of its fallbacks".format(self.client_type))
        resume = entry._protocol.resume
        if not cfg.get("background") or resume is None:
            raise ConfigError("{}: only a background response (config['background'] on a protocol that keeps it) "
                              "can be re-attached by its id".format(entry.client_type))
        request = resume.request(entry._endpoint, resource_id, None)
        if message is None:
            sent = list(messages or ())  # type: List[Any]
            check_messages(sent, self._checked)
            return self._open(request, cfg, sent, None, reattach=resource_id, entry=entry)
        check_message(message)
        if message["role"] != "user":
            raise ConfigError("a stateful turn takes the next user message")
        self._check_idle("streaming_response_stateful")
        if "created_at" not in message:
            message = dict(message)  # type: ignore[assignment]
            message["created_at"] = int(time.time() * 1000)
        return self._open(request, cfg, self._history + [message], message, reattach=resource_id, entry=entry)

    def _route_entry(self, route: Optional[Mapping[str, Any]]) -> Optional["AutoLLMClient"]:
        """The client (this one, or one of its fallbacks) whose route (model, client type, host) is ``route``;
        this client for no route; None when none is."""
        if not route:
            return self
        for entry in [self] + self._fallbacks:
            if same_route(route, entry._route()):  # type: ignore[arg-type]
                return entry
        return None

    def _open(self, request: Any, config: Dict[str, Any], messages: List[UniMessage],
              stateful: Optional[UniMessage], reattach: Optional[str] = None,
              entry: Optional["AutoLLMClient"] = None) -> ResponseStream:
        hooks = attempt_loop.hooks_for(self._hooks)
        if "trace_id" in config:
            from .tracer import TraceHook, trace_paths

            trace_paths(config["trace_id"])  # a trace_id escaping the cache dir is refused before anything is sent
            if config["trace_id"]:
                stored = self._protocol.stored_answer if stateful else None
                hooks = list(hooks) + [TraceHook(stored, self._route())]
        if not hooks and not self._fallbacks and reattach is None and getattr(request, "encoded", None) is not None:
            request.encoded.private()  # (seen by the library alone: providers._common.Encoded)
        watch = _transport().Watch()
        if entry is None or entry is self:
            entry = self
        else:  # a fallback's background response: its endpoint, model and own hooks; the call's config without
            config = {key: value for key, value in config.items()  # what belongs to the primary's endpoint
                      if key not in ("extra_headers", "extra_body")}
            hooks = merge_hooks(hooks, entry._hooks)
        call = Attempt("stream", entry.client_type, entry.model, request, messages, config, route=entry._route(),
                       server=url_server(entry._endpoint.base_url), provider=entry._provider, account=entry._account(hooks))
        call.tier = endpoint_tier(entry.client_type, entry.model, entry._endpoint.base_url)
        if reattach is None:
            events = self._attempts(call, watch, hooks)
        else:  # the GET of a response the endpoint that started it keeps: on that endpoint only (no failover),
            call.resuming = reattach  # the first attempt a resume (a limiter takes no new tokens for it; a
            self.last_route = call.route  # budget charges the call once, from the usage the stream brings)
            events = entry._attempts_here(call, watch, hooks)
        if stateful is not None:
            events = self._stateful(call, events, stateful, self._version)
        if hooks and attempt_loop.wants_events(hooks):  # a hook reads every event: only then a pass per event
            events = attempt_loop.with_events(call, hooks, events)
        return ResponseStream(watch, events, call)

    def _stateful(self, call: Attempt, events: Iterator[UniEvent], stateful: UniMessage,
                  version: int) -> Iterator[UniEvent]:
        """A stateful turn around the attempt loop: the stateful lock, and history committed before the
        stop event is yielded (a caller may stop iterating at it)."""
        locked = None  # the lock this stream holds (a forked child may have renewed self._busy meanwhile)
        try:
            self._fresh_locks()
            if not self._busy.acquire(False):
                raise ConfigError("a stateful stream is already open on this client: finish or close it first")
            locked = self._busy
            if self._version != version:
                raise ConfigError("the history changed after this stateful stream was created")
            history_before = list(self._history)
            # the answer is folded as the events pass (no event is kept: memory follows the answer's size)
            folding = Collector()
            fold = folding.add
            for event in events:
                fold(event)
                if event["event_type"] == "stop":
                    answer = folding.message()
                    # a protocol that chains stateful turns server-side notes that this answer is stored: on this
                    # client's endpoint only (a fallback's answer is stored on another server, which the next turn's
                    # previous id must not name here: that turn sends the history instead)
                    stored = self._protocol.stored_answer
                    if stored is not None and self._route_entry(call.route) is self:
                        answer = stored(answer)
                    self._history = history_before + [stateful, answer]
                    self._version += 1
                yield event
        finally:
            events.close()  # type: ignore[attr-defined]
            if locked is not None:
                locked.release()

    def _attempts(self, call: Attempt, watch: Any, hooks: Sequence[AttemptHook]) -> Iterator[UniEvent]:
        """The events of one turn: this endpoint's attempt loop, or the route loop over the fallbacks."""
        if not self._fallbacks:
            self.last_route = call.route
            return self._attempts_here(call, watch, hooks)
        routes = [self._failover_route(self, hooks)] + [self._failover_route(entry, hooks) for entry in self._fallbacks]

        def answered_by(info: Dict[str, Any]) -> None:
            self.last_route = info

        return run_routes(call, watch, routes, hooks=hooks, falls_over=self._falls_over, breaker=self._breaker,
                          total=Timeout.of(self.timeout).total, answered_by=answered_by)

    def _attempts_here(self, call: Attempt, watch: Any, hooks: Sequence[AttemptHook],
                       deadline: Optional[float] = None, whole_call: bool = True) -> Iterator[UniEvent]:
        """The events of one turn on this client's own endpoint: the attempt loop reading its protocol's stream."""
        protocol = self._protocol
        client = self.client_type
        max_line_bytes = self.max_line_bytes
        document = not call.request.stream
        if (call.config or {}).get("background"):
            return self._background(call, watch, hooks, deadline, whole_call)

        events_timeout = Timeout.of(self.timeout).events
        tier = call.tier  # the tier this endpoint bills at (Claude on a Vertex AI regional endpoint)

        def read(body: Any) -> Iterator[UniEvent]:
            stamp = [now_ms()]  # the time the bytes being parsed were read: each event's created_at
            parts = protocol.read(body, client, max_line_bytes, document, stamp, events_timeout)
            return drive(parts if tier is None else _billed_at(parts, tier), client, stamp)

        return self._run(call, watch, protocol, read, hooks=hooks, deadline=deadline, whole_call=whole_call)

    # -- background responses: resumed after a cut, cancelled when abandoned (agenthub.background) ---------
    def _background(self, call: Attempt, watch: Any, hooks: Sequence[AttemptHook], deadline: Optional[float],
                    whole_call: bool) -> Iterator[UniEvent]:
        from . import background

        def run(read: Callable[..., Iterator[UniEvent]]) -> Iterator[UniEvent]:
            return self._run(call, watch, self._protocol, read, resumes=True, hooks=hooks, deadline=deadline,
                             whole_call=whole_call)

        def known(resource_id: str) -> None:
            """The stream named its response: the attempt and its call know the id at once (before any
            output), and so does a reader watching for it (``background.ID_WATCH``: a journaled run)."""
            owner = call.call
            if not call.response_id:
                call.response_id = resource_id
            if not owner.response_id:
                owner.response_id = resource_id
            told = background.ID_WATCH.get()
            if told is not None:
                told(resource_id, call)

        def cancel(request: Any, resource_id: str) -> None:
            """The caller stopped the stream: cancelled, and the call says so once the server took the cancel."""
            if self._cancel(request, resource_id):
                call.call._cancelled = resource_id

        return background.events(self._protocol, self._endpoint, self.client_type, self.max_line_bytes, run,
                                 cancel, watch.sleep, known, call.resuming, Timeout.of(self.timeout).events)

    def _cancel(self, request: Any, resource_id: str) -> bool:
        """Cancel a background response server-side (its stream ended before it did: abort, close, error).
        One POST, no retry, at most ``background.CANCEL_SECONDS`` all told (a server trickling its answer
        holds no abort longer); a failure is logged, never raised.  True when the server took it."""
        from .background import CANCEL_SECONDS

        client = self.client_type
        transport = _transport()
        watch = transport.Watch()
        timer = attempt_loop.start_deadline(watch, CANCEL_SECONDS)[1]
        try:
            sent = self._host.encode(request, self._endpoint)
            body = transport.open_stream(self._get_session(), sent, (5.0, 10.0), client, watch=watch)
            try:
                body.open(document=True)
            finally:
                body.close()
            logger.info("%s: background response %s cancelled", client, resource_id)
            return True
        except AgentHubError as exc:
            scrub(exc, self._secrets(request))
            logger.warning("%s: cancelling background response %s failed: %s", client, resource_id,
                           "no answer within {:g} s".format(CANCEL_SECONDS) if watch.reason is not None else exc)
            return False
        finally:
            timer.cancel()

    def _run(self, call: Attempt, watch: Any, protocol: Any, read: Callable[..., Iterable[Any]],
             resumes: bool = False, hooks: Optional[Sequence[AttemptHook]] = None, deadline: Optional[float] = None,
             whole_call: bool = True) -> Iterator[Any]:
        """``agenthub.attempts.run_attempts`` on this client's endpoint: its host encodes each attempt, its
        session sends it, its timeout, retries and hooks (``hooks``: a failover route's, the call's)."""
        client = self.client_type
        transport = _transport()
        host, endpoint = self._host, self._endpoint

        def connect(sent: Any, limits: Any) -> Any:
            return transport.open_stream(self._get_session(), sent, limits, client, watch=watch,
                                         error_from_body=protocol.error_from_body, is_stream=starts_stream)

        def encode(request: Any) -> Any:  # (a credential refreshed meanwhile is stopped with the call: its watch)
            with transport.watching(watch, release=False):
                return host.encode(request, endpoint)

        return run_attempts(call, watch, encode=encode, connect=connect,
                            read=read, hooks=attempt_loop.hooks_for(self._hooks) if hooks is None else hooks,
                            max_retries=self.max_retries, timeout=Timeout.of(self.timeout), deadline=deadline,
                            secrets=self._secrets, explain=self._explain, advise=self._advise, resumes=resumes,
                            whole_call=whole_call)

    # -- failover (the route loop is agenthub.failover's) ----------------------------------------
    @property
    def fallbacks(self) -> Tuple["AutoLLMClient", ...]:
        """The clients this one fails over to, in order (a model name given to ``fallbacks=`` as its client)."""
        return tuple(self._fallbacks)

    def _fallback_client(self, entry: Any) -> "AutoLLMClient":
        """A ``fallbacks`` entry as a client: a model name gets this client's timeout, retries, line limit,
        budget and ``anthropic_version`` pin (on a Claude route of the Messages API); its key, endpoint, protocol
        and session are its own (the registry's, from its environment variable): a credential set on this
        client's ``session=`` never reaches another host.  Routed to this client's own origin (scheme, host,
        port: the same server), it takes the key and ``default_headers`` the caller gave for that server.  A session of
        agenthub.testing (a replay, or a recording carrying no credential) is shared: a fallback's exchange
        is recorded and replayed with the rest, never sent past the replay to the network."""
        if isinstance(entry, AutoLLMClient):
            return entry
        if isinstance(entry, str) and entry:
            shared = self._session if self._session is not None and _transport().cassette_shareable(
                self._session) else None
            key = self._endpoint.api_key if self._key_origin[1] else None  # (the caller's, not the environment's)
            kind, url = None, None  # (unresolved: the client built below says why, as it always did)
            for given in (key, None):  # where the name routes (a key only to pass the resolver: nothing is sent)
                try:
                    kind, url = registry.resolve(entry, None, None, given)[:2]
                    break
                except ConfigError:
                    continue
            here = url_origin(url) is not None and url_origin(url) == url_origin(self._endpoint.base_url)
            pin = self._endpoint.quirks.get("anthropic_version") if getattr(self, "_anthropic_pin", False) else None
            try:
                return AutoLLMClient(entry, key if here else None, timeout=self.timeout, max_retries=self.max_retries,
                                     max_line_bytes=self.max_line_bytes, budget=self.budget, session=shared,
                                     default_headers=self._endpoint.headers if here else None,
                                     anthropic_version=pin if kind is not None and hosts.client_type(
                                         kind).dialect == "anthropic" else None)
            except ConfigError as exc:
                if type(exc) is not ConfigError:
                    raise
                # which entry, and what helps: its own key variable (an api_key= here would be this client's)
                words = re.sub(r"\bpass api_key= or set ([A-Z0-9_]+(?: or [A-Z0-9_]+)*)",
                               r"set \1 (a fallback named by model reads its provider's own key variable), or give "
                               r"the entry as a client with its own key", str(exc))
                raise ConfigError("fallbacks entry {!r}: {}".format(entry[:80], words)) from None
        raise ConfigError("each fallbacks entry must be a model name or an AutoLLMClient, not {}".format(
            type(entry).__name__))

    def _route(self) -> Dict[str, Any]:
        return {"model": self.model, "client_type": self.client_type, "host": route_host(self._endpoint.base_url)}

    def _falls_over(self, error: BaseException) -> bool:
        """May a failure before the first event move the turn to the next fallback?"""
        return isinstance(error, self._fallback_on) or unwell(error)

    def _failover_route(self, entry: "AutoLLMClient", hooks: Sequence[AttemptHook]) -> Route:
        """``entry`` (this client or a fallback) as a route of this client's call: its attempts run the
        call's hooks, then the entry's own (agenthub.failover.merge_hooks), under the call's one deadline."""
        if entry is not self:
            hooks = merge_hooks(hooks, entry._hooks)

        def attempts(call: Attempt, watch: Any, hooks: Sequence[AttemptHook],
                     deadline: Optional[float]) -> Iterator[UniEvent]:
            sub = call if entry is self else entry._call_for(call, hooks)
            return entry._attempts_here(sub, watch, hooks, deadline, whole_call=False)

        return Route(entry._route(), entry._circuit(), hooks, attempts)

    def _circuit(self) -> Tuple[str, str, str]:
        """The key of this client's circuit breaker (``agenthub.breaker``): its client type, endpoint (host and port,
        the base URL's path, a mark of its credentials: ``breaker.endpoint_name``) and model.  Made once (each
        call of a client with fallbacks reads it for every route); a copy in another process makes its own."""
        key = self.__dict__.get("_circuit_key")
        if key is None:
            from urllib.parse import urlsplit

            url = self.base_url
            key = self._circuit_key = (self.client_type, endpoint_name(
                circuit_host(url), urlsplit(url).path if isinstance(url, str) else "", self.credential_values()),
                self.model)
        return key

    def _account(self, hooks: Sequence[AttemptHook]) -> Optional[str]:
        """A mark of this client's credentials (``breaker.account_mark``: the same in every process, never a
        credential): a rate limiter's pause of a 429 holds this account's requests, not another key's on the same
        host and model.  Made once (a slow hash, once a process for each credential set), when a rate limiter is
        among ``hooks`` (the attempt's): None otherwise (nothing reads it)."""
        if not any(getattr(hook, "shares", None) == "limiter" for hook in hooks):
            return None
        if "_account_mark" not in self.__dict__:
            self._account_mark = account_mark(self._credential_values(False))  # (a User-Agent names no account)
        return self._account_mark

    def _call_for(self, call: Attempt, hooks: Sequence[AttemptHook] = ()) -> Attempt:
        """The primary's call as this fallback client sends it: the same messages and config, its own request.
        Per-request ``extra_headers`` and ``extra_body`` belong to the endpoint they were written for (a
        gateway's key, a vendor field): a fallback never gets them."""
        messages = list(call.messages or [])
        config = {key: value for key, value in (call.config or {}).items()
                  if key not in ("extra_headers", "extra_body")}
        routed = Attempt("stream", self.client_type, self.model, apply_extras(self._build(messages, config), config),
                         messages, config, call=call, route=self._route(), server=url_server(self._endpoint.base_url),
                         provider=self._provider, account=self._account(hooks))
        routed.tier = endpoint_tier(self.client_type, self.model, self._endpoint.base_url)
        return routed

    def credential_values(self) -> List[str]:
        """What this client's requests carry as credentials, never to be shown (a log, a trace, an error):
        its key (every part of a credential set), its default headers' values, ``user:password@`` of its URL."""
        return self._credential_values(True)

    def _credential_values(self, public: bool) -> List[str]:
        """``credential_values``; ``public`` False: without the values of the headers that are no credential
        (``_redact.PUBLIC_HEADERS``: User-Agent, anthropic-beta...), which name no account."""
        key = self._endpoint.api_key
        values = [v for k, v in self._endpoint.headers.items()
                  if isinstance(v, str) and (public or not is_public_header(k))]
        values.extend(key.secrets() if hasattr(key, "secrets") else [key] if isinstance(key, str) and key else [])
        return values + url_query_secrets(self._endpoint.base_url)  # user:password@, a ?key= of a gateway's

    def _secrets(self, request: Any, config: Optional[Mapping[str, Any]] = None) -> List[str]:
        """What to scrub from an error: the client's credential values, every request header's value but the
        few public ones (a gateway's own auth header too), extra_headers whatever their names, mcp_servers'."""
        extra = self.credential_values() + list(((config or {}).get("extra_headers") or {}).values())
        extra.extend(body_secrets(getattr(request, "body", None)))  # config["mcp_servers"] credentials
        extra.extend(getattr(request, "secrets", None) or ())  # extra_body's fields named like a credential
        extra.extend(_transport().session_secrets(self._session))  # session= headers and auth, a proxy's
        return sorted(set(secret_values(getattr(request, "headers", None), extra)), key=len, reverse=True)

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


def _missing_v1(client_type: str, base_url: str) -> Optional[str]:
    """For a 404 at an OpenAI-compatible endpoint whose base URL has no ``/v1`` (``http://127.0.0.1:8000``
    where the server answers under ``http://127.0.0.1:8000/v1``): the hint docs/reliability.md promises."""
    from urllib.parse import urlsplit

    route = hosts.CLIENT_TYPES.get(client_type)
    if route is None or route.host_name != "openai":
        return None
    path = urlsplit(base_url).path
    if any(part.lower().startswith("v1") for part in path.split("/")) or "/api/" in path + "/":
        return None
    return ("the base_url has no /v1 (OpenAI-compatible servers answer at /v1/chat/completions and "
            "/v1/responses): try base_url='{}/v1'".format(shown_url(base_url.rstrip("/"))))


_RUN = None  # type: Optional[Type[Run]]  # agenthub.agent.runner.Run, imported at the first run (not looked up a run)


def _run_class() -> "Type[Run]":
    global _RUN
    from .agent.runner import Run

    _RUN = Run
    return Run


def _transport() -> Any:
    from . import transport  # imported on first use: `import agenthub` stays cheap

    return transport


class _ClientModule(type(sys)):  # type: ignore[misc]
    """This module, whose retry constants are agenthub.attempts' own: ``agenthub.client.BACKOFF_BASE``
    reads them there and assigning it (docs/reliability.md's way to make tests fast) sets them there."""


def _alias(name: str) -> Any:
    return property(lambda module: getattr(attempt_loop, name), lambda module, value: setattr(attempt_loop, name, value))


for _name in ("BACKOFF_BASE", "BACKOFF_CAP", "RETRY_AFTER_CAP"):
    setattr(_ClientModule, _name, _alias(_name))
sys.modules[__name__].__class__ = _ClientModule
