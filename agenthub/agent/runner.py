"""The tool runner: the loop docs/tools.md writes by hand, run for you.

``client.run(messages, config, tools=[...])`` returns a ``Run``.  Iterating it yields every model turn's
events exactly as ``streaming_response`` yields them; after a turn's ``stop``, one event per executed call
in call order (``role: "user"``, ``event_type: "delta"``, one ``tool_result`` item).  ``run.result()``
reads it to the end and returns a ``RunResult``.  It composes the public client only
(``streaming_response`` / ``streaming_response_stateful``), so everything the client does applies per turn:
retries, failover, limiter, budget, trace_id, record/replay.

Rules (issue 30's Decisions):

- A turn without tool calls ends the run: ``stop == "done"``.
- ``max_turns`` model turns: the run stops after that turn, its calls are not run and come back in
  ``pending`` (``stop == "max_turns"``); nothing more is sent.
- A call that needs a decision nobody gave (a tool with ``requires_approval`` and no ``approve``, or a plain
  ToolSchema with no executor) stops the run before any call of that turn runs: ``stop == "approval"``,
  ``pending`` holds those calls.  ``client.run(messages + result.messages, ..., decisions={id: ...})``
  resumes it (the open calls are read back from the messages alone: a new process will do); a plain
  ToolSchema's result is a ``tool_result`` message the caller appends before resuming (or a decision of
  ``False`` / a reason denies it).
- ``approve(call)``, when given, is asked for every call (in call order, in the calling thread) ->
  ``True`` (run it), ``False`` or a reason (denied: an error result), ``{"arguments": {...}}`` (run with
  these).  ``decisions`` take the same values, by tool_call_id.
- A tool that raises, times out, is unknown, gets arguments its hints refuse, or whose streamed arguments
  do not parse, gives a ``tool_result`` with ``"is_error": True`` and a short message (exception type and
  text, no traceback); the loop goes on and the model decides.
- A turn's calls run concurrently, at most ``parallel`` at a time, each on a thread of its own (daemon);
  their results go back in ONE user message, in call order.  A tool's ``timeout``: the runner stops waiting
  and reports the timeout; Python cannot stop a thread, so the function runs on until it returns, its
  result is dropped, its slot is given to the next call, and being a daemon thread it does not hold up the
  interpreter's exit.
- A model call's error (UpstreamError, BudgetExceededError, ...) raises as streaming_response raises it;
  ``run.messages`` still holds every completed turn and result message.
"""

import json
import logging
import os
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple

from ..catalog import call_cost
from ..errors import AgentHubError, ConfigError
from ..stream import Collector, now_ms
from ..telemetry import activate, agent_span, tool_span  # spans of the run and its tools (no-ops uninstrumented)
from ..toolcalls import broken_calls
from ..types import USAGE_KEYS, AssistantMessage, Message, ToolCallItem, UniEvent, UsageMetadata
from ..validate import check_config, check_messages
from .tools import Tool

__all__ = ["Run", "RunResult", "wire_name_problem"]

STOPS = ("done", "max_turns", "approval")
#: the longest error text a tool_result carries (the exception's text is cut there)
MAX_ERROR_CHARS = 500

def _name_rule(client: Any) -> Any:
    """The dialect record (``agenthub.providers.Dialect``) whose ``tool_names`` rule ``client``'s wire takes:
    its client-type row's dialect (``vertex-anthropic`` is the anthropic dialect: Anthropic's 128-character
    rule, as ``anthropic`` and ``azure-anthropic``).  A client whose type names no row: a ConfigError."""
    from .. import hosts, providers

    kind = getattr(client, "client_type", "") or ""
    row = hosts.CLIENT_TYPES.get(kind)
    if row is not None:
        return row.facts
    name = getattr(getattr(client, "protocol", None), "name", None)
    if isinstance(name, str) and name in providers.DIALECTS:
        return providers.dialect(name)
    raise ConfigError("client_type {!r} names no wire dialect: its tool-name rule is unknown".format(kind))


def wire_name_problem(client: Any, name: str) -> Optional[str]:
    """Why ``name`` is no tool name ``client``'s wire takes (None: it is fine)."""
    record = _name_rule(client)
    if record.tool_name_ok(name):
        return None
    return "{} tool names are {}".format(getattr(client, "client_type", "this wire"), record.tool_names[1])


def _wire_safe(name: str) -> str:
    """A provider's tool name made valid on every wire: other characters become '_', a letter-less start
    gets '_', at most 64 characters."""
    safe = re.sub(r"[^a-zA-Z0-9_-]", "_", name)
    if not re.match(r"[a-zA-Z_]", safe):
        safe = "_" + safe
    return safe[:64]


# -- the result -------------------------------------------------------------------------------------------------

@dataclass
class RunResult:
    """How a run ended.  ``stop``: "done" | "max_turns" | "approval"; ``final``: the last assistant message
    (None when no turn ran); ``messages``: every new message (JSON-ready but for inline bytes); ``pending``:
    the calls waiting for a decision or a result; ``turns``: model turns; ``usage_metadata``: the turns'
    buckets summed (a bucket is None only when every turn had None); ``cost_usd``: ``agenthub.cost`` of
    each turn summed (None when a turn is unpriced)."""

    stop: str
    final: Optional[AssistantMessage]
    messages: List[Message]
    pending: List[ToolCallItem]
    turns: int
    usage_metadata: UsageMetadata
    cost_usd: Optional[float]
    calls: List[Dict[str, Any]] = field(default_factory=list)  # {tool_call_id, name, seconds, is_error}


# -- tool sources -----------------------------------------------------------------------------------------------

class _Entry(object):
    __slots__ = ("name", "kind", "tool", "provider", "original", "source")

    def __init__(self, name: str, kind: str, tool: Any = None, provider: Any = None, original: str = "",
                 source: str = "") -> None:
        self.name = name  # on the wire
        self.kind = kind  # "tool" | "schema" | "provider"
        self.tool = tool
        self.provider = provider
        self.original = original or name  # the provider's own name for it
        self.source = source  # words for errors

    @property
    def requires_approval(self) -> bool:
        return bool(self.tool is not None and self.tool.requires_approval)

    @property
    def timeout(self) -> Optional[float]:
        return self.tool.timeout if self.tool is not None else None


def _is_provider(value: Any) -> bool:
    return callable(getattr(value, "list_tools", None)) and callable(getattr(value, "call_tool", None))


def resolve_tools(client: Any, tools: Any) -> Tuple[List[Dict[str, Any]], Dict[str, _Entry]]:
    """(the ToolSchemas to send, {wire name: entry}); a bad tool, a name the wire refuses or a clash is a
    ConfigError.  Providers are listed here, once."""
    if tools is None or isinstance(tools, (str, bytes, Mapping)) or not isinstance(tools, (list, tuple)):
        raise ConfigError("tools must be a list of @tool functions, ToolSchemas and tool providers")
    schemas = []  # type: List[Dict[str, Any]]
    entries = {}  # type: Dict[str, _Entry]

    def add(entry: _Entry, schema: Mapping[str, Any]) -> None:
        other = entries.get(entry.name)
        if other is not None:
            hint = " (give a provider a name= for a prefix)" if "provider" in (other.kind, entry.kind) else ""
            raise ConfigError("two tools are named {!r}: {} and {}{}".format(
                entry.name, other.source, entry.source, hint))
        entries[entry.name] = entry
        out = dict(schema)
        out["name"] = entry.name
        schemas.append(out)

    for i, value in enumerate(tools):
        if isinstance(value, Tool):
            _check_name(client, value.name, "tool {!r}".format(value.name))
            add(_Entry(value.name, "tool", tool=value, source="tool {!r}".format(value.name)), value.schema)
        elif _is_provider(value):
            prefix = getattr(value, "name", None)
            label = "provider {!r}".format(prefix) if prefix else "provider {}".format(type(value).__name__)
            listed = value.list_tools()
            for schema in listed or ():
                if not isinstance(schema, Mapping) or not isinstance(schema.get("name"), str) or not schema["name"]:
                    raise ConfigError("{} listed a tool without a name".format(label))
                original = schema["name"]
                name = "{}__{}".format(prefix, original) if prefix else original
                if wire_name_problem(client, name):
                    name = _wire_safe(name)  # renamed here, and back when the model calls it
                add(_Entry(name, "provider", provider=value, original=original,
                           source="{}'s tool {!r}".format(label, original)), schema)
        elif isinstance(value, Mapping):
            name = value.get("name")
            if not isinstance(name, str) or not name:
                raise ConfigError("tools[{}] needs a non-empty 'name'".format(i))
            _check_name(client, name, "tools[{}] ({!r})".format(i, name))
            add(_Entry(name, "schema", source="the ToolSchema {!r}".format(name)), value)
        elif callable(value):
            wrapped = Tool(value)
            _check_name(client, wrapped.name, "tool {!r}".format(wrapped.name))
            add(_Entry(wrapped.name, "tool", tool=wrapped, source="function {!r}".format(wrapped.name)),
                wrapped.schema)
        else:
            raise ConfigError("tools[{}] is a {}: give a @tool function, a ToolSchema or a tool provider (an "
                              "object with list_tools and call_tool)".format(i, type(value).__name__))
    return schemas, entries


def _check_name(client: Any, name: str, what: str) -> None:
    problem = wire_name_problem(client, name)
    if problem:
        raise ConfigError("{}: {!r} is not a valid tool name here ({})".format(what, name, problem))


def _check_decision(value: Any, where: str) -> None:
    if isinstance(value, (bool, str)):
        return
    if isinstance(value, Mapping) and set(value) == {"arguments"} and isinstance(value["arguments"], Mapping):
        return
    raise ConfigError("{} must be True, False, a reason (str) or {{'arguments': {{...}}}} (got {})".format(
        where, type(value).__name__))


# -- results ----------------------------------------------------------------------------------------------------

_SECRET_ENV = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|CREDENTIALS?)$")


def _secrets() -> List[str]:
    return [value for name, value in os.environ.items() if _SECRET_ENV.search(name.upper()) and len(value) >= 8]


def error_text(exc: BaseException) -> str:
    """``Type: text``, one paragraph, at most MAX_ERROR_CHARS, secrets from the environment scrubbed."""
    text = str(exc).strip()
    for secret in _secrets():
        if secret in text:
            text = text.replace(secret, "***")
    text = " ".join(text.split())
    if len(text) > MAX_ERROR_CHARS:
        text = text[:MAX_ERROR_CHARS - 3] + "..."
    return "{}: {}".format(type(exc).__name__, text) if text else type(exc).__name__


def _sniff(data: bytes) -> Optional[str]:
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def _json_default(value: Any) -> Any:
    import dataclasses
    import enum

    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    return str(value)


def result_item(value: Any, call_id: str) -> Dict[str, Any]:
    """A tool's return value as a tool_result item: str as is; bytes of an image as its images; a
    provider's result item as it came; anything else as JSON."""
    if isinstance(value, Mapping) and value.get("type") == "tool_result":
        item = {"type": "tool_result", "tool_call_id": call_id, "text": str(value.get("text") or "")}
        if value.get("images"):
            item["images"] = list(value["images"])
        if value.get("is_error"):
            item["is_error"] = True
        return item
    if isinstance(value, str):
        return {"type": "tool_result", "tool_call_id": call_id, "text": value}
    if isinstance(value, (bytes, bytearray, memoryview)):
        data = bytes(value)
        mime = _sniff(data)
        if mime:
            import base64

            return {"type": "tool_result", "tool_call_id": call_id, "text": "",
                    "images": ["data:{};base64,{}".format(mime, base64.b64encode(data).decode("ascii"))]}
        try:
            return {"type": "tool_result", "tool_call_id": call_id, "text": data.decode("utf-8")}
        except UnicodeDecodeError:
            return {"type": "tool_result", "tool_call_id": call_id,
                    "text": "({} bytes of binary data)".format(len(data))}
    return {"type": "tool_result", "tool_call_id": call_id,
            "text": json.dumps(value, ensure_ascii=False, default=_json_default)}


def _error(call_id: str, text: str) -> Dict[str, Any]:
    return {"type": "tool_result", "tool_call_id": call_id, "text": text, "is_error": True}


def _result_event(item: Dict[str, Any]) -> UniEvent:
    return {"role": "user", "event_type": "delta", "content_items": [item],  # type: ignore[list-item]
            "usage_metadata": None, "finish_reason": None, "created_at": now_ms()}


# -- the run ----------------------------------------------------------------------------------------------------

def _calls(message: Mapping[str, Any]) -> List[Dict[str, Any]]:
    return [item for item in message.get("content_items") or () if item.get("type") == "tool_call"]


def _open_calls(messages: Sequence[Mapping[str, Any]]) -> Tuple[Optional[int], List[Dict[str, Any]]]:
    """(index of the last assistant message, its calls no later message answered)."""
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].get("role") == "assistant":
            answered = set()
            for later in messages[index + 1:]:
                for item in later.get("content_items") or ():
                    if item.get("type") == "tool_result":
                        answered.add(item.get("tool_call_id"))
            return index, [call for call in _calls(messages[index]) if call["tool_call_id"] not in answered]
    return None, []


def _join(results: List[Dict[str, Any]], tail: Sequence[Mapping[str, Any]], order: Sequence[str]) -> Dict[str, Any]:
    """One user message: the tail's user messages and the runner's results, tool results first in call order."""
    rank = {call_id: n for n, call_id in enumerate(order)}
    tool_results = []  # type: List[Any]
    others = []  # type: List[Any]
    extra = {}  # type: Dict[str, Any]
    for message in tail:
        for item in message.get("content_items") or ():
            (tool_results if item.get("type") == "tool_result" else others).append(item)
        if "created_at" in message:
            extra["created_at"] = message["created_at"]
    tool_results.extend(results)
    tool_results.sort(key=lambda item: rank.get(item.get("tool_call_id"), len(rank)))
    message = {"role": "user", "content_items": tool_results + others}  # type: Dict[str, Any]
    message.update(extra)
    return message


def _results_only(message: Mapping[str, Any]) -> bool:
    items = message.get("content_items") or ()
    return message.get("role") == "user" and bool(items) and all(i.get("type") == "tool_result" for i in items)


def joined_results(messages: List[Any]) -> List[Any]:
    """``messages`` with each run of adjacent user messages holding only tool results (a caller's results
    for its plain ToolSchemas, then the runner's) joined into one, in the preceding turn's call order: the
    results of one turn go back in one message on every wire (Gemini wants them in one turn).  The same
    list when there is nothing to join."""
    if not any(_results_only(a) and _results_only(b) for a, b in zip(messages, messages[1:])):
        return messages
    out = []  # type: List[Any]
    order = []  # type: List[str]
    for message in messages:
        if message.get("role") == "assistant":
            order = [c["tool_call_id"] for c in _calls(message)]
        if out and _results_only(message) and _results_only(out[-1]):
            out[-1] = _join([], [out[-1], message], order)
        else:
            out.append(message)
    return out


class Run(object):
    """One run of the tool loop (``client.run`` / ``client.run_stateful``): iterate it for the events,
    ``result()`` for the outcome.  ``messages``: the new messages so far, valid after an exception too."""

    def __init__(self, client: Any, messages: Optional[Sequence[Message]], config: Any, tools: Any,
                 max_turns: int = 10, parallel: int = 4, approve: Optional[Callable[[ToolCallItem], Any]] = None,
                 decisions: Optional[Mapping[str, Any]] = None, stateful: bool = False,
                 message: Optional[Message] = None) -> None:
        if isinstance(max_turns, bool) or not isinstance(max_turns, int) or max_turns < 1:
            raise ConfigError("max_turns must be an int >= 1")
        if isinstance(parallel, bool) or not isinstance(parallel, int) or parallel < 1:
            raise ConfigError("parallel must be an int >= 1 (1: one call at a time)")
        if approve is not None and not callable(approve):
            raise ConfigError("approve must be a callable (call) -> True | False | reason | {'arguments': ...}")
        if decisions is not None and not isinstance(decisions, Mapping):
            raise ConfigError("decisions must map tool_call_id to a decision")
        for key, value in (decisions or {}).items():
            _check_decision(value, "decisions[{!r}]".format(key))
        if config is not None and not isinstance(config, Mapping):
            raise ConfigError("config must be a dict (UniConfig)")
        if config and config.get("tools"):
            raise ConfigError("pass the tools as run(..., tools=[...]), not in config['tools']")
        self._client = client
        self._stateful = stateful
        schemas, self._entries = resolve_tools(client, tools)
        cfg = dict(config or {})
        if schemas:
            cfg["tools"] = schemas
        check_config(cfg)
        self._config = cfg
        self._max_turns = max_turns
        self._parallel = parallel
        self._approve = approve
        self._decisions = dict(decisions or {})
        #: the new messages so far (assistant turns as collected, user tool_result messages)
        self.messages = []  # type: List[Message]
        #: one row per call the runner answered: {"tool_call_id", "name", "seconds", "is_error"}
        self.calls = []  # type: List[Dict[str, Any]]
        self._turn_calls = []  # type: List[Dict[str, Any]]  # this turn's rows (written to the trace)
        self._turns = 0
        self._usage = [None, None, None, None]  # type: List[Optional[int]]
        self._cost = 0.0  # type: Optional[float]
        self._priced = []  # type: List[Tuple[str, Any, Any, Any]]  # (model that answered, usage, call, route) per turn
        self._priced_upto = 0
        self._stop = None  # type: Optional[str]
        self._pending = []  # type: List[ToolCallItem]
        self._final = None  # type: Optional[AssistantMessage]
        self._events = None  # type: Optional[Iterator[UniEvent]]
        self._span = None  # type: Any  # the run's invoke_agent span (agenthub.telemetry), once iterated
        self._first = None  # type: Any
        if stateful:
            if message is not None:
                check_messages([message])
                if message.get("role") != "user":
                    raise ConfigError("run_stateful takes the next user message")
            before = list(client.get_history())
            self._sent = []  # type: List[Any]
            seen = before + ([message] if message is not None else [])
            self._resume_at, self._open = _open_calls(seen)
            self._order = [c["tool_call_id"] for c in _calls(seen[self._resume_at])] if self._open else []
            self._tail = [message] if message is not None else []  # type: List[Any]
            if not self._open:
                if message is None:
                    raise ConfigError("run_stateful needs a message (nothing is waiting for a decision)")
                self._first = client.streaming_response_stateful(message, self._config)  # checked now
        else:
            if messages is None or isinstance(messages, (str, bytes, Mapping)):
                raise ConfigError("run takes a list of messages")
            messages = joined_results(list(messages))
            check_messages(messages)
            self._resume_at, self._open = _open_calls(messages)
            self._order = [c["tool_call_id"] for c in _calls(messages[self._resume_at])] if self._open else []
            if self._open:
                self._tail = messages[self._resume_at + 1:]  # type: ignore[operator]
                self._sent = messages[:self._resume_at + 1]  # type: ignore[operator]
                # the next request built now, with empty results in place: what the wire refuses is a
                # ConfigError before any tool runs or anything is sent (the stream is never started)
                placeholders = [{"type": "tool_result", "tool_call_id": c["tool_call_id"], "text": ""}
                                for c in self._open]
                client.streaming_response(self._sent + [_join(placeholders, self._tail, self._order)],
                                          self._config).close()
            else:
                self._tail = []
                self._sent = messages
                # built now: a config or schema the wire refuses is a ConfigError before anything is sent
                self._first = client.streaming_response(messages, self._config)

    # -- reading ------------------------------------------------------------------------------------------------
    def __iter__(self) -> Iterator[UniEvent]:
        if self._events is None:
            self._span = agent_span("")
            self._events = self._run() if self._span is None or not self._span.recording else self._spanned()
        return self._events

    def _spanned(self) -> Iterator[UniEvent]:
        """The run under its span: ended when the run ends, error.type when it raised."""
        try:
            yield from self._run()
        except Exception as exc:
            self._span.end(exc)
            raise
        finally:
            self._span.end()

    def close(self) -> None:
        """Stop the run where it is (an open model stream is released; running tools run on)."""
        if self._events is not None:
            self._events.close()  # type: ignore[attr-defined]
        elif self._first is not None:
            self._first.close()

    def __enter__(self) -> "Run":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def result(self) -> RunResult:
        """Read the run to its end (what was not iterated yet) and say how it ended."""
        for _ in self:
            pass
        if self._stop is None:
            raise ConfigError("the run ended without a result (it was closed, or a model call raised)")
        return RunResult(self._stop, self._final, list(self.messages), list(self._pending), self._turns,
                         self.usage_metadata, self.cost_usd, list(self.calls))

    @property
    def usage_metadata(self) -> UsageMetadata:
        return dict(zip(USAGE_KEYS, self._usage))  # type: ignore[return-value]

    # -- the loop -----------------------------------------------------------------------------------------------
    def _run(self) -> Iterator[UniEvent]:
        if self._open:
            results = yield from self._answer(self._open)
            if results is None:
                return
            joined = _join(results, self._tail, self._order)  # the turn's results in one message, call order
            if self._stateful:
                self._next = joined
                self.messages.append(joined)
            else:
                self.messages.append({"role": "user", "content_items": results})
                self._sent.append(joined)
            self._trace(joined)
        elif self._stateful and self._tail:
            self.messages.append(self._tail[0])
        client = self._client
        config = self._config
        while True:
            stream = self._first
            self._first = None
            if stream is None:
                if self._stateful:
                    stream = client.streaming_response_stateful(self._next, config)
                else:
                    stream = client.streaming_response(self._sent, config)
            caught = {}  # type: Dict[str, Any]
            folding = None if self._stateful else Collector()  # stateful: the client folds it into history
            fold = folding.add if folding is not None else None
            try:
                # the catch for unparseable arguments is read by the turn's parser when it is made: in the
                # first step (retries and failover happen before the first event, inside that step too)
                token = broken_calls.set(caught)
                try:
                    with activate(self._span):  # the turn's call span starts here: a child of the run's
                        first = next(stream, None)
                finally:
                    broken_calls.reset(token)
                if first is not None:
                    if fold is not None:
                        fold(first)
                    yield first
                    if fold is not None:
                        for event in stream:
                            fold(event)
                            yield event
                    else:
                        yield from stream
            finally:
                stream.close()
            answer = folding.message() if folding is not None else client.get_history()[-1]
            self._count(answer, stream)
            self.messages.append(answer)
            if not self._stateful:
                self._sent.append(answer)  # the runner's own list (streaming_response copied what it sent)
            self._final = answer
            calls = _calls(answer)
            if not calls:
                self._stop = "done"
                return
            if self._turns >= self._max_turns:
                self._stop = "max_turns"
                self._pending = calls  # type: ignore[assignment]
                return
            results = yield from self._answer(calls, caught)
            if results is None:
                return
            message = {"role": "user", "content_items": results}  # type: Dict[str, Any]
            self.messages.append(message)
            if self._stateful:
                self._next = message
            else:
                self._sent.append(message)
            self._trace(message)

    def _trace(self, results: Dict[str, Any]) -> None:
        """With ``config["trace_id"]``: the trace written again now, ending with the turn's ``results`` message
        and a row per call answered (its duration, whether it failed).  A trace that cannot be written is
        logged, as the tracer's hook does: the run goes on."""
        trace_id = self._config.get("trace_id")
        if not trace_id or not self._turn_calls:
            return
        from ..tracer import add_tool_calls  # only runs with a trace_id import the tracer

        history = list(self._client.get_history()) + [results] if self._stateful else list(self._sent)
        try:
            add_tool_calls(trace_id, getattr(self._client, "model", ""), history, self._config, self._turn_calls)
        except Exception as exc:  # disk full, permissions, a folder removed meanwhile
            logging.getLogger("agenthub").error("the trace %r was not written with the tool calls (%s: %s); the run "
                                                "goes on", trace_id, type(exc).__name__, exc)

    def _count(self, answer: Mapping[str, Any], stream: Any) -> None:
        self._turns += 1
        usage = answer.get("usage_metadata") or {}
        for n, key in enumerate(USAGE_KEYS):
            value = usage.get(key)
            if value is not None:
                self._usage[n] = (self._usage[n] or 0) + value
        route = getattr(stream, "route", None) or getattr(self._client, "last_route", None) or {}
        call = getattr(stream, "_call", None)  # its cache mark and start time: a hit costs 0.0, a turn its tier's
        self._priced.append((route.get("model") or getattr(self._client, "model", ""), usage, call, route))

    @property
    def cost_usd(self) -> Optional[float]:
        """USD so far: ``agenthub.cost`` of each turn (with the model that answered it, its cache writes, at
        the tier in force when it was sent; 0.0 for a turn replayed from the ResponseCache), summed; None
        when a turn is unpriced or none ran.  Reckoned when asked (a catalog look-up per turn, kept off the loop)."""
        total = 0.0
        for model, usage, call, route in self._priced[self._priced_upto:]:
            price = call_cost(model, usage, call, route) if usage else None
            if price is None:
                self._cost = None
                break
            total += price
        if self._cost is not None:
            self._cost += total
        self._priced_upto = len(self._priced)
        return self._cost if self._turns else None

    # -- one turn's calls ---------------------------------------------------------------------------------------
    def _answer(self, calls: List[Dict[str, Any]], caught: Optional[Mapping[str, Any]] = None) -> Any:
        """Generator: the result events of ``calls`` (in call order); returns the result items, or None
        when the run stops for a decision (nothing of the turn ran)."""
        caught = caught or {}
        plans = []  # type: List[Any]  # per call: ("error", text) | ("ask", entry) | ("decided", entry, decision)
        pending = []
        for call in calls:
            call_id = call["tool_call_id"]
            error = caught.get(call_id)
            entry = self._entries.get(call["name"])
            if error is not None:
                plans.append(("error", "{}; raw arguments ({} chars): {}".format(
                    error_text(error), error.raw_arguments_length, error.raw_arguments_preview)))
            elif entry is None:
                plans.append(("error", "unknown tool {!r}; the tools are: {}".format(
                    call["name"], ", ".join(sorted(self._entries)) or "none")))
            elif entry.kind == "schema":
                decision = self._decisions.get(call_id)
                if decision is False or isinstance(decision, str):  # a denial needs no executor
                    plans.append(("decided", entry, decision))
                else:  # no function here: the caller answers it with a tool_result message
                    pending.append(call)
                    plans.append(None)
            elif call_id in self._decisions:
                plans.append(("decided", entry, self._decisions[call_id]))
            elif self._approve is None and entry.requires_approval:
                pending.append(call)
                plans.append(None)
            else:
                plans.append(("ask", entry))
        if pending:
            self._stop = "approval"
            self._pending = pending  # type: ignore[assignment]
            return None
        tasks = []  # type: List[Any]  # (index, call, entry, arguments) or (index, call, None, error text)
        for index, (call, plan) in enumerate(zip(calls, plans)):
            if plan[0] == "error":
                tasks.append((index, call, None, plan[1]))
                continue
            entry = plan[1]
            if plan[0] == "ask":
                decision = self._approve(dict(call)) if self._approve is not None else True  # type: ignore
                _check_decision(decision, "approve()'s answer for {}".format(call["tool_call_id"]))
            else:
                decision = plan[2]
            if decision is True:
                arguments = call["arguments"]
            elif decision is False:
                tasks.append((index, call, None, "denied: the user did not allow this call"))
                continue
            elif isinstance(decision, str):
                tasks.append((index, call, None, "denied: {}".format(decision)))
                continue
            else:
                arguments = dict(decision["arguments"])
            if entry.kind == "tool":
                try:
                    arguments = entry.tool.convert(arguments)
                except ValueError as exc:
                    tasks.append((index, call, None, "invalid arguments for {}: {}".format(entry.name, exc)))
                    continue
                except Exception as exc:  # a hint's own constructor (a dataclass __post_init__, say) refused
                    tasks.append((index, call, None, "invalid arguments for {}: {}".format(
                        entry.name, error_text(exc))))
                    continue
            tasks.append((index, call, entry, arguments))
        results = [None] * len(calls)  # type: List[Any]
        self._turn_calls = []
        for index, item, seconds in self._execute(tasks):
            results[index] = item
            call = calls[index]
            row = {"tool_call_id": call["tool_call_id"], "name": call["name"], "seconds": seconds,
                   "is_error": bool(item.get("is_error"))}
            self.calls.append(row)
            self._turn_calls.append(row)
            yield _result_event(item)
        return results

    def _execute(self, tasks: List[Any]) -> Iterator[Tuple[int, Dict[str, Any], float]]:
        """(index, result item, seconds) in call order; the calls run on up to ``parallel`` threads."""
        runnable = [t for t in tasks if t[2] is not None]
        inline = len(runnable) <= 1 and not any(t[2].timeout for t in runnable) or \
            self._parallel == 1 and not any(t[2].timeout for t in runnable)
        if inline:
            for index, call, entry, arguments in tasks:
                if entry is None:
                    yield index, _error(call["tool_call_id"], arguments), 0.0
                    continue
                started = time.monotonic()
                item = self._invoke(call, entry, arguments)
                yield index, item, time.monotonic() - started
            return
        cond = threading.Condition()
        done = {}  # type: Dict[int, Tuple[Dict[str, Any], float]]
        decided = {}  # type: Dict[int, Tuple[Dict[str, Any], float]]
        for index, call, entry, arguments in tasks:
            if entry is None:
                decided[index] = (_error(call["tool_call_id"], arguments), 0.0)
        queue = list(runnable)
        running = {}  # type: Dict[int, Tuple[float, Optional[float], Dict[str, Any]]]
        order = [t[0] for t in tasks]
        position = 0

        def work(index: int, call: Dict[str, Any], entry: _Entry, arguments: Any) -> None:
            started = time.monotonic()
            item = self._invoke(call, entry, arguments)
            with cond:
                done[index] = (item, time.monotonic() - started)
                cond.notify_all()

        while position < len(order):
            while queue and len(running) < self._parallel:
                index, call, entry, arguments = queue.pop(0)
                running[index] = (time.monotonic(), entry.timeout, call)
                threading.Thread(target=work, args=(index, call, entry, arguments), daemon=True,
                                 name="agenthub-tool-{}".format(call["name"])[:60]).start()
            with cond:
                now = time.monotonic()
                wait = None  # type: Optional[float]
                for index in list(running):
                    if index in done:
                        decided[index] = done.pop(index)
                        del running[index]
                        continue
                    started, timeout, call = running[index]
                    if timeout is not None:
                        left = started + timeout - now
                        if left <= 0:
                            decided[index] = (_error(call["tool_call_id"], "TimeoutError: {} did not return within "
                                                     "{:g} s".format(call["name"], timeout)), timeout)
                            del running[index]  # its thread runs on; its slot goes to the next call
                        else:
                            wait = left if wait is None else min(wait, left)
                if order[position] not in decided and not (queue and len(running) < self._parallel):
                    cond.wait(wait)
                    continue
            while position < len(order) and order[position] in decided:
                index = order[position]
                item, seconds = decided.pop(index)
                position += 1
                yield index, item, seconds

    def _invoke(self, call: Dict[str, Any], entry: _Entry, arguments: Any) -> Dict[str, Any]:
        call_id = call["tool_call_id"]
        with tool_span(call["name"], call_id, "extension" if entry.kind == "provider" else "function",
                       parent=self._span) as span:
            span.set_arguments(arguments)
            try:
                if entry.kind == "provider":
                    value = entry.provider.call_tool(entry.original, arguments)
                else:
                    value = entry.tool.fn(**arguments)
                item = result_item(value, call_id)
            except Exception as exc:
                span.set_error(exc)
                return _error(call_id, error_text(exc))
            span.set_result(item)
            return item
