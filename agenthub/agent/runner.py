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
- A call that needs a decision nobody gave (a tool with ``requires_approval`` and no ``approve``, a plain
  ToolSchema with no executor, any call of a turn that finished otherwise than ``tool_call``/``stop``) stops
  the run before any call of that turn runs: ``stop == "approval"``, ``pending`` holds those calls (the
  turn's others run on resume).  ``client.run(messages + result.messages, ..., decisions={id: ...})``
  resumes it (the open calls are read back from the messages alone: a new process will do); a plain
  ToolSchema's result is a ``tool_result`` message the caller appends before resuming (or a decision of
  ``False`` / a reason denies it).
- ``approve(call)``, when given, is asked for every call (in call order, in the calling thread) ->
  ``True`` (run it), ``False`` or a reason (denied: an error result), ``{"arguments": {...}}`` (run with
  these).  ``decisions`` take the same values, by tool_call_id or by ``call_digest(call)`` (which binds the
  name and arguments too); a decision covers one of the calls the run resumes, once.  A model turn with two
  calls under one id runs none (StreamProtocolError).
- Hooks (agenthub.agent.hooks.ToolHook) see the run and each call; the tracer's rows and telemetry's spans
  are hooks: the runner calls neither.
- A tool that raises, times out, is unknown, gets arguments its hints refuse, or whose streamed arguments
  do not parse (NaN, Infinity, 1e400, a lone surrogate included), gives a ``tool_result`` with
  ``"is_error": True`` and a short message (exception type and text, no traceback, credentials scrubbed);
  the loop goes on and the model decides.  KeyboardInterrupt and SystemExit propagate to the run's thread.
- A turn's calls run concurrently, at most ``parallel`` at a time, on the run's pool of daemon threads (kept
  between turns, ended with the run; a lone call without a timeout runs in the run's thread, unless that thread
  runs an asyncio loop; calls without a
  timeout start one after another on one pool thread; once a call there has run 2 ms, the calls it has not
  started go to threads of their own; a turn whose calls are all of tools whose every call in the run so far
  returned within 2 ms, none with a timeout, runs them in the run's thread); their results go back in ONE user message, in call order.  A tool's ``timeout``: the runner stops waiting
  and reports the timeout; Python cannot stop a thread, so the function runs on until it returns, its
  result is dropped, its slot is held until it returns (the calls beyond get an error result when every
  slot is so held), and being a daemon thread it does not hold up the interpreter's exit.  A tool that must not
  run twice that timed out may still take effect: the model is told so, and a call repeating it (the same tool
  and arguments) does not run while it runs, gets its late outcome once it returned, and, journaled, does not
  run after the process running it died (its outcome unknown): ``_repeat_refused``.
- ``run.abort()`` (or ``close()`` from another thread) ends the run with ``stop == "aborted"``.
- ``run_stateful`` puts a turn's results into the client's history as soon as the calls ran; a run whose
  next request failed resumes by sending them.
- A model call's error (UpstreamError, BudgetExceededError, ...) raises as streaming_response raises it;
  ``run.messages`` still holds every completed turn and result message.
- ``output=TYPE`` (typed output, issue 40; docs/typed-output.md "In a tool run"): every turn goes out with
  the type's schema as ``client.parse`` shapes it for the wire (agenthub.output.shape), beside the tools,
  never as the forced tool (an endpoint without structured outputs gets it in the system prompt).  A turn
  without calls is the candidate answer, judged as ``parse`` judges one (agenthub.output.parse.judge): it
  holds -> ``stop == "done"``, ``RunResult.output`` / ``output_json``; it does not -> it stays in the
  conversation and the problems go as the next user turn (one user event, ``run.messages`` gains it), at most
  ``output_retries`` times, each re-ask a model turn counted toward ``max_turns`` (a re-ask that would pass it
  ends the run with ``stop == "max_turns"``, the re-ask in ``messages``, unsent); the re-asks used up raise
  ``OutputValidationError``, a refusal ``OutputRefusedError``, as a model call's error raises (``run.messages``
  kept).  A journaled run's replayed answer is judged the same way again (nothing sent).
"""

import functools
import collections
from collections.abc import Mapping as _Mapping  # (isinstance through typing.Mapping costs a detour a call)
import contextvars
import json
import logging
import os
import queue as _queue
import re
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Set, Tuple

from ..catalog import call_cost
from .._redact import named_secrets, scrub_free_text, scrub_text
from ..errors import (AgentHubError, ConfigError, EmptyResponseError, StreamProtocolError, UnsupportedParameterError,
                      UpstreamError)
from ..output.parse import MAX_RETRIES as MAX_OUTPUT_RETRIES, assess, judge
from ..output.shape import shape
from ..stream import Collector, now_ms, text_is_utf8
from ..toolcalls import broken_calls
from ..types import USAGE_KEYS, AssistantMessage, Message, ToolCallItem, UniEvent, UsageMetadata
from ..typeschema import Compiled, _fresh, _is_model, compile as compile_type  # (_fresh: arguments copied)
from ..validate import check_config, check_messages
from .hooks import TOOL_HOOK_METHODS, tool_hooks
from .tools import Tool
from .._jsondepth import loads as _json_loads

__all__ = ["Run", "RunResult", "wire_name_problem", "call_digest", "current_call", "CallContext"]

#: the longest error text a tool_result carries (the exception's text is cut there)
MAX_ERROR_CHARS = 500
#: run(max_output_chars=)'s default: the longest text of a tool's result the model (and the run's messages, the
#: journal, a trace) gets, the marker included; about 250k tokens, past most context windows
MAX_OUTPUT_CHARS = 1000000
_CUT = "\n[... {} more characters cut by agenthub (max_output_chars={})]"


def _cut(item: Dict[str, Any], limit: Optional[int]) -> Dict[str, Any]:
    """``item`` with its text at most ``limit`` characters: its head, then a marker saying how many were cut
    (within the limit)."""
    text = item.get("text")
    if limit is None or not isinstance(text, str) or len(text) <= limit:
        return item
    kept = limit - len(_CUT.format(len(text), limit))  # (the count cut has no more digits than the whole's)
    kept = limit - len(_CUT.format(len(text) - kept, limit))  # (nor than this first guess's: at most the limit)
    return dict(item, text=text[:kept] + _CUT.format(len(text) - kept, limit))

def _name_rule(client: Any) -> Any:
    """The dialect record (``agenthub.providers.Dialect``) whose ``tool_names`` rule ``client``'s wire takes:
    its client-type row's dialect (``vertex-anthropic`` is the anthropic dialect: Anthropic's 128-character
    rule, as ``anthropic`` and ``azure-anthropic``).  A client whose type names no row: a ConfigError."""
    kind = getattr(client, "client_type", "") or ""
    record = _NAME_RULES.get(kind)
    if record is not None:
        return record
    from .. import hosts, providers

    row = hosts.CLIENT_TYPES.get(kind)
    if row is not None:
        record = _NAME_RULES[kind] = row.facts  # (the client-type rows are fixed: their records kept)
        return record
    name = getattr(getattr(client, "protocol", None), "name", None)
    if isinstance(name, str) and name in providers.DIALECTS:
        return providers.dialect(name)
    raise ConfigError("client_type {!r} names no wire dialect: its tool-name rule is unknown".format(kind))


_NAME_RULES = {}  # type: Dict[str, Any]  # client_type -> its row's dialect record


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
    """How a run ended.  ``stop``: "done" | "max_turns" | "approval" | "aborted"; ``final``: the last assistant
    message (None when no turn ran); ``messages``: every message the run added, never the caller's own
    (JSON-ready but for inline bytes); ``pending``: the calls waiting for a decision or a result; ``turns``: model turns; ``usage_metadata``: the turns'
    buckets summed (a bucket is None only when every turn had None); ``cost_usd``: ``agenthub.cost`` of
    each turn summed (None when a turn is unpriced).  ``output`` / ``output_json``: a run with ``output=TYPE``
    that ended "done": the final answer as an instance of the type and the validated JSON it was made from
    (agenthub's addition; None otherwise)."""

    stop: str
    final: Optional[AssistantMessage]
    messages: List[Message]
    pending: List[ToolCallItem]
    turns: int
    usage_metadata: UsageMetadata
    cost_usd: Optional[float]
    calls: List[Dict[str, Any]] = field(default_factory=list)  # {tool_call_id, name, seconds, is_error}
    #: a journaled run (agenthub's addition, docs/tools.md "Runs that survive a crash"): its run_id, how many
    #: turns and tool results it took from its journal instead of doing them again, and the ids of the
    #: calls in ``pending`` because a crash interrupted them (a tool declared idempotent=False)
    run_id: Optional[str] = None
    replayed_turns: int = 0
    replayed_results: int = 0
    interrupted: List[str] = field(default_factory=list)
    #: typed output (agenthub's addition, docs/typed-output.md "In a tool run")
    output: Any = None
    output_json: Any = None
    #: a journaled run's turns read again by their background response's id after a crash (not sent again:
    #: docs/tools.md "The model request in flight"); live turns, counted in ``turns`` too
    reattached_turns: int = 0
    #: what a Budget counted for the run's attempts cut after the provider took them (``Attempt.cut_usd`` of its
    #: turns, summed; None when none was): no usage prices them, so they are not in ``cost_usd``, and
    #: ``cost_usd + cut_usd`` is what the Budget charged the run (docs/reliability.md)
    cut_usd: Optional[float] = None


# -- tool sources -----------------------------------------------------------------------------------------------

class _Entry(object):
    __slots__ = ("name", "kind", "tool", "provider", "original", "source", "thread", "_idempotent", "check")

    def __init__(self, name: str, kind: str, tool: Any = None, provider: Any = None, original: str = "",
                 source: str = "", idempotent: bool = True) -> None:
        self.name = name  # on the wire
        self.kind = kind  # "tool" | "schema" | "provider"
        self.tool = tool
        self.provider = provider
        self.original = original or name  # the provider's own name for it
        self.source = source  # words for errors, a template: "{!r}" is the original name (made when one is raised)
        self.thread = "agenthub-tool-{}".format(name)[:60]  # the name of a thread running it
        self._idempotent = idempotent  # a provider's tool: what its idempotent(original) said (resolve_tools)
        #: a strict ToolSchema's (or a provider's strict tool's) parameters compiled: its calls' arguments are held
        #: to the whole schema here (set by resolve_tools)
        self.check = None  # type: Optional[Compiled]

    @property
    def idempotent(self) -> bool:
        """False for a tool that must run at most once in a journaled run: an ``@tool(idempotent=False)``, or
        a provider's tool its ``idempotent(name)`` called non-idempotent (an MCP server's annotations)."""
        return self.tool.idempotent if self.kind == "tool" else self._idempotent

    @property
    def requires_approval(self) -> bool:
        return bool(self.tool is not None and self.tool.requires_approval)

    @property
    def timeout(self) -> Optional[float]:
        return self.tool.timeout if self.tool is not None else None


def _is_provider(value: Any) -> bool:
    return callable(getattr(value, "list_tools", None)) and callable(getattr(value, "call_tool", None))


def _provider_idempotent(provider: Any, original: str, label: str) -> bool:
    """Whether a provider's tool may run again after a crash: its ``idempotent(name)`` when it has one (an
    MCP server handle: False only for a tool its server declared non-idempotent), else True (at least once)."""
    ask = getattr(provider, "idempotent", None)
    if not callable(ask):
        return True
    try:
        answer = ask(original)
    except Exception as exc:
        raise ConfigError("{}'s idempotent({!r}) raised {}".format(label, original, type(exc).__name__))
    if not isinstance(answer, bool):
        raise ConfigError("{}'s idempotent({!r}) gave a {}, not a bool".format(label, original,
                                                                            type(answer).__name__))
    return answer


def resolve_tools(client: Any, tools: Any) -> Tuple[List[Dict[str, Any]], Dict[str, _Entry]]:
    """(the ToolSchemas to send, {wire name: entry}); a bad tool, a name the wire refuses or a clash is a
    ConfigError.  Providers are listed here, once."""
    if type(tools) is not list and (tools is None or isinstance(tools, (str, bytes, _Mapping))
                                    or not isinstance(tools, (list, tuple))):
        raise ConfigError("tools must be a list of @tool functions, ToolSchemas and tool providers")
    schemas = []  # type: List[Dict[str, Any]]
    entries = {}  # type: Dict[str, _Entry]

    def add(entry, schema):  # type: (_Entry, Mapping[str, Any]) -> None  # (annotations: evaluated each run)
        entry.check = _strict_check(entry, schema)
        other = entries.get(entry.name)
        if other is not None:
            hint = " (give a provider a name= for a prefix)" if "provider" in (other.kind, entry.kind) else ""
            raise ConfigError("two tools are named {!r}: {} and {}{}".format(
                entry.name, other.source.format(other.original), entry.source.format(entry.original), hint))
        entries[entry.name] = entry
        out = dict(schema)
        out["name"] = entry.name
        schemas.append(out)

    rule = None  # the wire's tool-name rule (looked up at the first tool)
    for i, value in enumerate(tools):
        if isinstance(value, Tool):
            if rule is None:
                rule = _name_rule(client)
            # the tool's entry, kept on it for the rule it was checked by (a run after the first on a wire
            # neither checks its name again nor makes its entry: an _Entry never changes)
            kept = value.__dict__.get("_runner_entry")
            if kept is not None and kept[0] is rule and kept[1].name == value.name:
                entry = kept[1]
            else:
                if not rule.tool_name_ok(value.name):
                    _check_name(client, value.name, "tool {!r}")  # (raises)
                entry = _Entry(value.name, "tool", tool=value, source="tool {!r}")
                value.__dict__["_runner_entry"] = (rule, entry)
            if entry.name in entries:
                add(entry, value.schema)  # (raises: two tools of one name)
            entries[entry.name] = entry  # (add's steps, without a call a tool)
            out = dict(value.schema)
            out["name"] = entry.name
            schemas.append(out)
        elif _is_provider(value):
            prefix = getattr(value, "name", None)
            label = "provider {!r}".format(prefix) if prefix else "provider {}".format(type(value).__name__)
            listed = value.list_tools()
            for schema in listed or ():
                if not isinstance(schema, _Mapping) or not isinstance(schema.get("name"), str) or not schema["name"]:
                    raise ConfigError("{} listed a tool without a name".format(label))
                original = schema["name"]
                name = "{}__{}".format(prefix, original) if prefix else original
                if wire_name_problem(client, name):
                    name = _wire_safe(name)  # renamed here, and back when the model calls it
                add(_Entry(name, "provider", provider=value, original=original,
                           source=label.replace("{", "{{").replace("}", "}}") + "'s tool {!r}",
                           idempotent=_provider_idempotent(value, original, label)), schema)
        elif isinstance(value, _Mapping):
            name = value.get("name")
            if not isinstance(name, str) or not name:
                raise ConfigError("tools[{}] needs a non-empty 'name'".format(i))
            _check_name(client, name, "tools[" + str(i) + "] ({!r})")
            add(_Entry(name, "schema", source="the ToolSchema {!r}"), value)
        elif callable(value):
            wrapped = Tool(value)
            _check_name(client, wrapped.name, "tool {!r}")
            add(_Entry(wrapped.name, "tool", tool=wrapped, source="function {!r}"),
                wrapped.schema)
        else:
            raise ConfigError("tools[{}] is a {}: give a @tool function, a ToolSchema or a tool provider (an "
                              "object with list_tools and call_tool)".format(i, type(value).__name__))
    return schemas, entries


def _strict_check(entry: _Entry, schema: Mapping[str, Any]) -> Optional[Compiled]:
    """A strict tool's parameters compiled, so its calls' arguments are held to the whole schema before anything
    runs or is handed back (a wire may send less of it: Claude's structured outputs leave bounds, patterns and
    lengths to the description); None for a tool that is not strict.  A schema agenthub cannot check is a
    ConfigError naming the tool."""
    if schema.get("strict") is not True:
        return None
    try:
        return compile_type(schema.get("parameters") or {"type": "object", "properties": {}})
    except ConfigError as exc:
        raise ConfigError("{} is strict, and its parameters cannot be checked here ({}): leave strict out, or keep "
                          "to the keywords agenthub checks (agenthub.typeschema)".format(
                              entry.source.format(entry.original), exc)) from None


def _check_name(client: Any, name: str, what: str) -> None:
    """``what``: the words for the tool, a template ("{!r}" is its name), made when the name is refused."""
    problem = wire_name_problem(client, name)
    if problem:
        raise ConfigError("{}: {!r} is not a valid tool name here ({})".format(what.format(name), name, problem))


def _odd_key(value: Any) -> Optional[Tuple[Any]]:
    """(the first key of ``value``'s objects that is no str,) or None (JSON it is: json.dumps passed it)."""
    if isinstance(value, _Mapping):
        for key, item in value.items():
            odd = (key,) if not isinstance(key, str) else _odd_key(item)
            if odd is not None:
                return odd
    elif isinstance(value, (list, tuple)):
        for item in value:
            odd = _odd_key(item)
            if odd is not None:
                return odd
    return None


def _check_decision(value: Any, where: str, none: str = "") -> None:
    """``none``: how the words list None where it is an answer too (a hook's before_call: ``"None (no say), "``)."""
    if isinstance(value, (bool, str)):
        return
    if isinstance(value, _Mapping) and set(value) == {"arguments"} and isinstance(value["arguments"], _Mapping):
        try:  # (they stand in for the model's, which are JSON: a journal keeps them, a digest binds them)
            json.dumps(value["arguments"], allow_nan=False)
        except (TypeError, ValueError, RecursionError) as exc:
            raise ConfigError("{}: its arguments must be JSON ({}: {})".format(where, type(exc).__name__,
                                                                               exc)) from None
        key = _odd_key(value["arguments"])  # (json writes 1, None, True as keys "1", "null", "true": two may be one)
        if key is not None:
            raise ConfigError("{}: its arguments must be JSON (the key {!r} is a {}: JSON's object keys are "
                              "strings)".format(where, key[0], type(key[0]).__name__))
        return
    raise ConfigError("{} must be {}True, False, a reason (str) or {{'arguments': {{...}}}} (got {})".format(
        where, none, type(value).__name__))


# -- results ----------------------------------------------------------------------------------------------------

def error_text(exc: BaseException, secrets: Sequence[str] = ()) -> str:
    """``Type: text``, one paragraph, at most MAX_ERROR_CHARS, with ``secrets`` (the client's credential
    values), the environment's secrets and the credentials written in the text (a URL's ``user:password@``,
    a token query parameter) scrubbed (agenthub._redact.scrub_free_text)."""
    try:
        text = str(exc)
    except Exception as unreadable:  # (its __str__ raised: a library's exception built without what it formats)
        text = "(its text could not be read: {})".format(type(unreadable).__name__)
    text = scrub_free_text(_utf8(text).strip(), secrets)
    text = " ".join(text.split())
    if len(text) > MAX_ERROR_CHARS:
        text = text[:MAX_ERROR_CHARS - 3] + "..."
    return "{}: {}".format(type(exc).__name__, text) if text else type(exc).__name__


def _utf8(text: str) -> str:
    """``text`` as UTF-8 can carry it (what the next request sends): the two halves of one UTF-16 pair side by
    side joined into their character, a half alone (bytes decoded with ``surrogateescape``: a file name that is
    no UTF-8) U+FFFD, as an MCP server's result has it (agenthub.mcp.results.clean_text)."""
    if text_is_utf8(text):
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


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
    if _is_model(type(value)):  # a pydantic model (v2 model_dump, v1 dict): its fields (nested ones come here too)
        dump = getattr(value, "model_dump", None)
        return dump() if callable(dump) else value.dict()
    return str(value)


#: json.dumps(value, ensure_ascii=False, default=_json_default), its encoder made once
_RESULT_JSON = json.JSONEncoder(ensure_ascii=False, default=_json_default)


def result_item(value: Any, call_id: str) -> Dict[str, Any]:
    """A tool's return value as a tool_result item: str as is; bytes of an image as its images; a
    provider's result item as it came; anything else as JSON."""
    if type(value) is str:
        return {"type": "tool_result", "tool_call_id": call_id, "text": value}
    if isinstance(value, _Mapping) and value.get("type") == "tool_result":
        text = value.get("text")
        item = {"type": "tool_result", "tool_call_id": call_id,
                "text": text if isinstance(text, str) else "" if text is None else _RESULT_JSON.encode(text)}
        images = value.get("images")
        if images:
            item["images"] = _images(images)
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
    return {"type": "tool_result", "tool_call_id": call_id, "text": _RESULT_JSON.encode(value)}


def _images(images: Any) -> List[str]:
    """A returned tool_result item's ``images``: a list of data: URLs (one str is one image); anything else is a
    TypeError (the call's error result)."""
    if isinstance(images, str):
        images = [images]
    if isinstance(images, (list, tuple)):
        odd = next((image for image in images if not isinstance(image, str)), None)
        if odd is None:
            bad = next((image for image in images if not _image_url(image)), None)
            if bad is not None:  # (no request could carry it: the next one would fail, and every resume of it)
                raise ValueError("a tool_result's images must be data: URLs of an image (base64) or http(s) URLs; "
                                 "got {!r}".format(bad if len(bad) <= 40 else bad[:40] + "..."))
            return list(images)
        got = "a {} holding a {}".format(type(images).__name__, type(odd).__name__)
    else:
        got = "a {}".format(type(images).__name__)
    raise TypeError("a tool_result's images must be a list of data: URLs (str); got {}".format(got))


def _image_url(url: str) -> bool:
    """Whether a request can carry ``url`` as an image: a data: URL of an image type with a base64 payload, or an
    http(s) URL."""
    if url.startswith(("https://", "http://")):
        return True
    from ..providers._common import parse_data_uri

    try:
        parsed = parse_data_uri(url)
    except ConfigError:  # (a payload that is no base64)
        return False
    return parsed is not None and parsed[0].startswith("image/") and "base64" in url.partition(",")[0].split(";")[1:]


def _error(call_id: str, text: str) -> Dict[str, Any]:
    return {"type": "tool_result", "tool_call_id": call_id, "text": text, "is_error": True}


def _answered(call: Mapping[str, Any], answer: Any) -> Dict[str, Any]:
    """A call answered without running: ``answer`` an error text, or the result item itself."""
    return _error(call["tool_call_id"], answer) if isinstance(answer, str) else answer  # type: ignore[no-any-return]


def _result_event(item: Dict[str, Any]) -> UniEvent:
    return {"role": "user", "event_type": "delta", "content_items": [item],  # type: ignore[list-item]
            "usage_metadata": None, "finish_reason": None, "created_at": now_ms()}


# -- the run ----------------------------------------------------------------------------------------------------

def _calls(message: Mapping[str, Any]) -> List[Dict[str, Any]]:
    """The calls of an assistant message: its tool_call items, and the approval requests of the MCP servers
    a provider calls itself (OpenAI Responses' ``mcp_approval_request``, kept in a text item's fidelity) as
    tool_call items (see _approval_call)."""
    out = []
    for item in message.get("content_items") or ():
        kind = item.get("type")
        if kind == "tool_call":
            out.append(item)
        elif kind == "text" and item.get("fidelity"):
            request = item["fidelity"].get("server_item") if isinstance(item["fidelity"], _Mapping) else None
            if isinstance(request, _Mapping) and request.get("type") == APPROVAL_REQUEST \
                    and isinstance(request.get("id"), str) and request["id"]:
                out.append(_approval_call(request))
    return out


#: a provider's MCP server asking for approval before it runs one of its tools (OpenAI Responses)
APPROVAL_REQUEST = "mcp_approval_request"


def _approval_call(request: Mapping[str, Any]) -> Dict[str, Any]:
    """An ``mcp_approval_request`` as a tool_call item: ``name`` the server's tool, ``arguments`` its (parsed)
    arguments, ``tool_call_id`` the request's id, ``fidelity`` ``{"server_item": request}``.  It needs a
    decision as a requires_approval tool's call does; its answer is an ``mcp_approval_response``."""
    arguments = request.get("arguments") or "{}"
    if isinstance(arguments, str):  # (JSON in a string, as OpenAI sends it; a compatible server may send the object)
        try:
            arguments = _json_loads(arguments)
        except (ValueError, RecursionError):
            arguments = None
    if not isinstance(arguments, dict):
        arguments = {"arguments": request.get("arguments")}
    return {"type": "tool_call", "name": str(request.get("name") or "?"), "arguments": arguments,
            "tool_call_id": request["id"], "fidelity": {"server_item": dict(request)}}


def _is_approval(call: Mapping[str, Any]) -> bool:
    fidelity = call.get("fidelity")
    if not fidelity:
        return False
    request = fidelity.get("server_item") if isinstance(fidelity, _Mapping) else None
    return isinstance(request, _Mapping) and request.get("type") == APPROVAL_REQUEST


def _approval_answer(call: Mapping[str, Any], decision: Any) -> Dict[str, Any]:
    """The tool_result answering an approval request: ``approved`` or ``denied: ...``, carrying the
    ``mcp_approval_response`` the provider gets (fidelity ``server_item``)."""
    approve = decision is True
    reason = None  # type: Optional[str]
    if isinstance(decision, str):
        reason = decision
    elif isinstance(decision, _Mapping):  # the server runs its own tool: its arguments cannot be changed here
        reason = "the arguments of an MCP server's own call cannot be changed"
    response = {"type": "mcp_approval_response", "approval_request_id": call["tool_call_id"],
                "approve": approve}  # type: Dict[str, Any]
    if reason:
        response["reason"] = reason
    item = {"type": "tool_result", "tool_call_id": call["tool_call_id"],
            "text": "approved" if approve else "denied: {}".format(reason or "the user did not allow this call"),
            "fidelity": {"server_item": response}}  # type: Dict[str, Any]
    if not approve:
        item["is_error"] = True
    return item


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
    if len(messages) < 2 or not any(_results_only(a) and _results_only(b) for a, b in zip(messages, messages[1:])):
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


@dataclass(frozen=True)
class CallContext:
    """The tool call being run (``agenthub.agent.current_call()`` inside a tool): ``tool_call_id``, ``name``,
    ``arguments`` (as the model or the decision gave them), ``run_id`` (a journaled run's, else None) and
    ``idempotency_key``: one per action, the same for this call before and after a crash and a resume (a journaled
    run), so an external action (a payment API's idempotency key) can be made safe to repeat; a decision that
    changed the arguments makes another action, with another key."""

    tool_call_id: str
    name: str
    arguments: Any
    run_id: Optional[str]
    idempotency_key: str


_CURRENT = contextvars.ContextVar("agenthub_current_call", default=None)  # type: contextvars.ContextVar[Any]


_NEEDS_MESSAGE = "run_stateful needs a message (nothing is waiting for a decision)"


def _edited(shown: Any, asked: Any) -> Optional[str]:
    """The digest of the arguments a call runs with when a decision changed them (``shown`` is not the model's
    ``asked``, nor equal to it as canonical JSON), else None."""
    if shown is asked:
        return None
    from .journal import arguments_digest

    digest = arguments_digest(shown)
    return None if digest == arguments_digest(asked) else digest


class _Current(object):
    """What ``current_call()`` makes its CallContext of, when a tool asks (most never do: no key is made for them)."""
    __slots__ = ("run", "call", "shown", "turn", "made")

    def __init__(self, run: "Run", call: Mapping[str, Any], shown: Any, turn: int) -> None:
        self.run = run
        self.call = call
        self.shown = shown
        self.turn = turn
        self.made = None  # type: Optional[CallContext]

    def context(self) -> CallContext:
        if self.made is None:
            from .journal import idempotency_key

            run = self.run
            journal = run._journal
            call = self.call
            salt = run._key_salt or run.__dict__.setdefault("_random_salt", os.urandom(8).hex())  # (one a run)
            # one key an action: the run, the turn, the call and, when a decision changed them, the arguments run
            key = idempotency_key(salt, self.turn, call["tool_call_id"], _edited(self.shown, call.get("arguments")))
            self.made = CallContext(call["tool_call_id"], call["name"], self.shown, journal.run_id if journal else None,
                                    key)
        return self.made


def current_call() -> Optional[CallContext]:
    """The tool call being run in this thread (inside a tool's function), None elsewhere."""
    current = _CURRENT.get()
    return current.context() if current is not None else None


def call_digest(call: Mapping[str, Any]) -> str:
    """What a decision keyed by digest covers: ``"sha256:"`` and the hex SHA-256 of the call's
    ``[tool_call_id, name, arguments]`` as canonical JSON (sorted keys, no spaces, ASCII).
    ``decisions={call_digest(call): True for call in result.pending}`` runs exactly the calls shown: a resume
    whose call under that id has another name or other arguments stops for approval again."""
    import hashlib

    body = json.dumps([call.get("tool_call_id"), call.get("name"), call.get("arguments")], sort_keys=True,
                      separators=(",", ":"), ensure_ascii=True, default=_json_default)
    return "sha256:" + hashlib.sha256(body.encode("utf-8")).hexdigest()


#: the calls this process handed back in ``pending`` (tool_call_id -> the digests shown under it, and (the
#: conversation before their turn, tool_call_id) -> those shown there), so that a decision keyed by tool_call_id
#: covers only the call that was shown when a resume in this process comes with a state changed since (other
#: arguments, another tool under the id): that call asks again.  Per conversation where this process showed one
#: (servers that number the calls of each answer give every conversation a ``call_0``: a call shown to another
#: conversation is not this one's), else under the id anywhere.  Bounded (the oldest go first); a resume in
#: another process has only the saved messages: key by ``call_digest`` there
_SHOWN = collections.OrderedDict()  # type: collections.OrderedDict
_SHOWN_MAX = 20000  # (two entries a call: the last 10,000 ids)
_SHOWN_LOCK = threading.Lock()


def _remember_shown(calls: Sequence[Mapping[str, Any]], conversation: str) -> None:
    with _SHOWN_LOCK:
        for call in calls:
            call_id = call.get("tool_call_id")
            if not isinstance(call_id, str):
                continue
            digest = call_digest(call)
            for key in (call_id, (conversation, call_id)):
                digests = _SHOWN.pop(key, set())
                digests.add(digest)
                _SHOWN[key] = digests
            while len(_SHOWN) > _SHOWN_MAX:
                _SHOWN.popitem(last=False)


def _shown_otherwise(call: Mapping[str, Any], conversation: Callable[[], str]) -> bool:
    """Whether this process showed a call under ``call``'s id that was not this call (its decision by id does
    not cover it): in this conversation (``conversation()``: its key) when it showed one there, else anywhere."""
    call_id = call.get("tool_call_id")
    with _SHOWN_LOCK:
        anywhere = _SHOWN.get(call_id)
    if anywhere is None:
        return False
    key = (conversation(), call_id)
    with _SHOWN_LOCK:
        here = _SHOWN.get(key)
    return call_digest(call) not in (here if here is not None else anywhere)


#: the calls of an ``@tool(idempotent=False)`` tool this process ran as a saved state's waiting calls (a resumed
#: run's), keyed by the conversation up to their turn and the call's digest: a later run resuming the same state
#: with the call still waiting (the same ``decisions=`` again, ``run`` after ``run_stateful``, a retry of the
#: whole resume) hands it back pending, as a journal's interrupted call, instead of running it twice; handed
#: back, the key goes (a decision given after that runs it once more).  Bounded (the oldest go first); across
#: processes only a journal holds at most once
_RAN = collections.OrderedDict()  # type: collections.OrderedDict[str, bool]
_RAN_MAX = 10000


def _message_text(message: Mapping[str, Any]) -> str:
    """A message as canonical JSON, without its ``created_at``."""
    return json.dumps({k: v for k, v in message.items() if k != "created_at"}, sort_keys=True, separators=(",", ":"),
                      ensure_ascii=True, default=_json_default)


def _conversation_key(messages: Sequence[Mapping[str, Any]]) -> str:
    """A digest of a conversation as saved (each message without its ``created_at``): of its JSON list."""
    import hashlib

    return hashlib.sha256(("[" + ",".join(_message_text(m) for m in messages) + "]").encode("utf-8")).hexdigest()


def _shown_earlier(conversation: Sequence[Mapping[str, Any]], ids: Set[str]) -> Set[str]:
    """The ids among ``ids`` under which this process handed back a call in ``pending`` at a turn of
    ``conversation`` (each such turn's key made as ``_conversation_key`` makes it, in one pass)."""
    import hashlib

    with _SHOWN_LOCK:
        ids = {call_id for call_id in ids if call_id in _SHOWN}
    found = set()  # type: Set[str]
    if not ids:
        return found
    running = hashlib.sha256(b"[")
    for index, message in enumerate(conversation):
        if message.get("role") == "assistant":
            named = ids.intersection(c["tool_call_id"] for c in _calls(message))
            if named:
                key = running.copy()
                key.update(b"]")
                with _SHOWN_LOCK:
                    found.update(call_id for call_id in named if (key.hexdigest(), call_id) in _SHOWN)
        running.update(("," if index else "").encode("ascii") + _message_text(message).encode("utf-8"))
    return found


def _ran_keys(conversation: str, calls: Sequence[Mapping[str, Any]]) -> List[str]:
    return [conversation + call_digest(call) for call in calls]


#: the finish reasons after which a turn's calls run as asked; after any other (``length``: cut short,
#: ``unknown``: a refusal, a content filter) each call needs a decision, as a requires_approval tool's does
_FINISHED = (None, "stop", "tool_call")
#: what a tool result's images become on a model that takes no image input
IMAGES_LEFT_OUT = "[{} image{} left out: this model takes no image input]"


def _repeated(calls: Sequence[Mapping[str, Any]]) -> List[str]:
    seen = set()  # type: Set[str]
    repeated = []  # type: List[str]
    for call in calls:
        if call["tool_call_id"] in seen and call["tool_call_id"] not in repeated:
            repeated.append(call["tool_call_id"])
        seen.add(call["tool_call_id"])
    return repeated


def _drop_images(message: Mapping[str, Any]) -> bool:
    """Each tool_result of ``message`` with images: the images replaced by a note in its text (in place)."""
    changed = False
    for item in message.get("content_items") or ():
        if item.get("type") == "tool_result" and item.get("images"):
            count = len(item.pop("images"))
            note = IMAGES_LEFT_OUT.format(count, "" if count == 1 else "s")
            item["text"] = "{} {}".format(item["text"], note) if item.get("text") else note
            changed = True
    return changed


def _waiting_results(history: Sequence[Mapping[str, Any]]) -> bool:
    """Does ``history`` end with a turn's results that were never sent (a run whose next request failed)?"""
    return len(history) >= 2 and _results_only(history[-1]) and history[-2].get("role") == "assistant" \
        and bool(_calls(history[-2]))


def _once(proceed: Callable[[], Any], name: str, tool: bool = True) -> Callable[[], Any]:
    """``proceed`` of an ``@tool(idempotent=False)`` call (or a provider's tool declared non-idempotent), for the
    hooks' around_call: a second call of it (a hook that retries) is refused, the tool does not run twice."""
    done = []  # type: List[bool]

    def once() -> Any:
        if done:
            raise ConfigError("tool {!r} is declared {}: an around_call hook may proceed() once "
                              "(it ran already)".format(name, "idempotent=False" if tool else "non-idempotent"))
        done.append(True)
        return proceed()

    return once


def _decided_before(key: str, where: str) -> None:
    raise ConfigError("decisions[{!r}]: this run decided another call under that id before ({}); the call waiting now "
                      "is another one: a decision by id cannot tell them apart; key it by call_digest(call)".format(
                          key, where))


class _Paid(object):
    """What ``call_cost`` reads of a turn's Attempt: its cache mark, when it started and the tier it asked for
    (``config`` holds ``fast_mode`` alone).  A run keeps this for each turn, not the Attempt, which holds the
    turn's whole request and history (a run of N turns kept N of them)."""
    __slots__ = ("cache", "started_ms", "config", "cut_usd")

    def __init__(self, call: Any) -> None:
        self.cache = getattr(call, "cache", None)
        self.cut_usd = getattr(call, "cut_usd", None)  # (what a Budget counted for its attempts that were cut)
        self.started_ms = getattr(call, "started_ms", None)
        config = getattr(call, "config", None)
        self.config = _FAST if config and config.get("fast_mode") else None


_FAST = {"fast_mode": True}  # (read only)


class _Ticket(object):
    """One call handed to a pool thread: ``running`` until the call returns (a timed-out call's slot is
    held while it runs)."""
    __slots__ = ("running", "value")

    def __init__(self) -> None:
        self.running = True
        self.value = None  # type: Any  # what the call reported when it returned: (index, item, raised, seconds)


_IDLE_SECONDS = 2.0  # a run's pool thread with nothing to do for this long ends (a run left unread)
#: a turn's calls without a timeout start one after another on one pool thread; once a call there has run this
#: long, the calls it has not started go to threads of their own (so calls that take time still run at once).
#: A tool whose every call in the run so far returned within it is known quick: a turn whose calls are all of
#: such tools (none with a timeout) runs them in the reading thread, with no hand-off to a thread and back
_SPREAD_SECONDS = 0.002
_BATCH_NOTE = (-1,)  # what that thread reports (its results are in the turn's ``done``)
#: the longest one wait for tool threads takes (a tool timeout of inf, or beyond the platform clock's range: the
#: wait goes on in steps of this, instead of an OverflowError)
_LONGEST_WAIT = 3600.0


class _Pool(object):
    """A run's tool threads (daemons), made as a turn needs them and kept between turns: a free thread takes
    the next call; one idle for ``_IDLE_SECONDS`` ends, and ``close()`` (the run's end) ends the idle ones
    at once and the busy ones when their call returns.  How many calls run at once is the run's bound
    (``parallel``, timed-out calls still running counted), kept by the run, not here."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._idle = []  # type: List[Tuple[Any, threading.Thread]]  # (mailbox, thread) of free threads, last freed last
        self._closed = False

    def submit(self, fn: Callable[[], Any], report: Callable[[Any], None], name: str) -> None:
        """``report(fn())`` on a free thread, or a new one; the thread is free again before ``report`` runs (a
        run that hands out the next call on the report finds it free: a pool never has more threads than calls
        running at once)."""
        with self._lock:
            if self._idle:
                mailbox, thread = self._idle.pop()
                thread.name = name
                mailbox.put((fn, report))
                return
        thread = threading.Thread(target=self._serve, args=((fn, report),), name=name, daemon=True)
        thread.start()

    def _serve(self, job: Any) -> None:
        mailbox = _queue.SimpleQueue()  # type: Any
        me = threading.current_thread()
        while True:
            fn, report = job
            value = contextvars.Context().run(fn)  # each call in a context of its own, as on a new thread
            with self._lock:
                closed = self._closed
                if not closed:
                    me.name = "agenthub-tool-idle"
                    self._idle.append((mailbox, me))
            report(value)
            if closed:
                return
            try:
                job = mailbox.get(timeout=_IDLE_SECONDS)
            except _queue.Empty:
                with self._lock:
                    if (mailbox, me) in self._idle:  # nobody handed it a call meanwhile
                        self._idle.remove((mailbox, me))
                        return
                job = mailbox.get()  # handed one while its wait ended: it is in the mailbox already
            if job is None:  # closed
                return

    def close(self) -> None:
        """Idle threads end now (joined: none is left when the run has ended); busy ones when their call returns."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for mailbox, _ in idle:
            mailbox.put(None)
        for _, thread in idle:
            thread.join(5.0)


_logger = logging.getLogger("agenthub")


def _loop_running() -> bool:
    """Whether this thread runs an asyncio loop (a notebook, an async app reading a run): a tool that runs a
    loop of its own (``asyncio.run``) fails there, so every call goes to the tool threads (a lone one too)."""
    asyncio = sys.modules.get("asyncio")  # (not imported: no loop runs)
    running = getattr(asyncio, "_get_running_loop", None)
    return running is not None and running() is not None


def _reattach_stateless(client: Any, resource_id: str, route: Any, messages: Any, config: Any) -> Any:
    return client._reattach(resource_id, config, messages=messages, route=route)


def _reattach_stateful(client: Any, resource_id: str, route: Any, message: Any, config: Any) -> Any:
    return client._reattach(resource_id, config, message=message, route=route)


def _gone(error: BaseException, stream: Any) -> Optional[str]:
    """Why a re-attach to a journaled background response failed before its first event such that the turn
    is sent again (None: it is not: an outage, a key refused, the run's error as any turn's): the server
    no longer has the response (404, 410: expired, deleted), or the response itself failed or was cancelled
    (its stream, answered 200, reported an error or ended without any output)."""
    call = getattr(stream, "_call", None)
    status = getattr(call, "status", None)
    if isinstance(error, UpstreamError) and status in (404, 410):
        return "the server no longer has it (HTTP {})".format(status)
    if status == 200 and isinstance(error, EmptyResponseError):
        return "it ended without any output (cancelled)"
    if status == 200 and isinstance(error, UpstreamError):
        return "it failed ({})".format(getattr(error, "error_type", None) or type(error).__name__)
    return None


_NO_METHODS = {name: () for name in TOOL_HOOK_METHODS}  # type: Dict[str, Any]  # a run without hooks: none to call


class Run(object):
    """One run of the tool loop (``client.run`` / ``client.run_stateful``): iterate it for the events,
    ``result()`` for the outcome, ``abort()`` from any thread to stop it.  ``messages``: the new messages so
    far, valid after an exception too.  Read by hooks (agenthub.agent.hooks): ``client``, ``config``,
    ``stateful``, ``turns``, ``stop``, ``route`` (which endpoint answered the latest turn), ``calls``,
    ``history()``, ``tool_kind(name)``."""

    # what a run starts with, as class attributes (an instance gets its own when it changes one): fewer
    # assignments a run
    _shaped = None  # type: Any  # typed output: how the type goes out on this wire (agenthub.output.shape)
    _output = None  # type: Any
    _output_json = None  # type: Any
    _answers = 0  # answers judged (the attempt an error names)
    _reask_unsent = False  # stateful: the next turn sends the re-ask in self._next (not in history yet)
    _credential_values = None  # type: Optional[List[str]]  # read when an error text is scrubbed
    #: which endpoint answered the latest turn ({"model", "client_type", "host"}), None before one did
    route = None  # type: Optional[Dict[str, Any]]
    _turns = 0
    _cost = 0.0  # type: Optional[float]
    _priced_upto = 0
    _stop = None  # type: Optional[str]
    _final = None  # type: Optional[AssistantMessage]
    _events = None  # type: Optional[Iterator[UniEvent]]
    _reader = None  # type: Optional[int]  # the thread that started reading the run
    _first = None  # type: Any
    _aborted = False
    _halting = False  # an after_call hook raised: the turn's calls that ran are taken in, no more start
    _stream = None  # type: Any  # the model stream being read
    _wake = None  # type: Any  # the queue a wait for tool threads reads (abort() puts None)
    _pool = None  # type: Optional[_Pool]  # the run's tool threads, made at the first turn that needs them
    #: tool name -> whether every call of it in this run so far returned within _SPREAD_SECONDS (made at the
    #: first turn with calls; written from the tool threads too: a False is never turned back into True)
    _quick = None  # type: Optional[Dict[str, bool]]
    _next = None  # type: Any  # stateful: the message the next request sends (last in history)
    _restore = None  # type: Optional[List[Any]]  # stateful: the history while a turn sends its last message
    _committed = False
    _journal = None  # type: Any  # a journaled run's seam (agenthub.agent.journal.RunJournal)
    _replayed_cost = 0.0  # type: Optional[float]  # what the turns taken from the journal cost
    _replayed_cuts = ()  # type: Sequence[float]  # what a Budget counted for their attempts cut after the 200
    _attached_id = None  # type: Optional[str]  # the live turn's background response id, journaled
    _message_unsent = False  # stateful: the first turn sends the caller's message (not in history yet)
    #: stateful, journaled: (the client's history before the run, its message) when the client's history holds the
    #: run's own progress after that (the same client resuming it): the history is put back to that as the run
    #: starts, and the journal replays the rest
    _rewind = None  # type: Optional[Tuple[List[Any], Any]]
    #: a stateful run given no message and nothing waiting: None (no journal: refused at once), False (a journal,
    #: not so), True (so: the journal's run must be the history's own, else refused once it is read)
    _wants_message = None  # type: Optional[bool]
    #: (tool name, arguments digest) -> (call id, its ticket; None: the process running it stopped) of the calls of
    #: tools that must not run twice that timed out and whose outcome the run has not learned (_repeat_refused)
    _unsettled = None  # type: Optional[Dict[Tuple[str, str], List[Tuple[str, Optional[_Ticket]]]]]
    _timed_out = frozenset()  # type: Any  # the ids of those calls whose result is not journaled yet (as unsettled)
    _started = None  # type: Any  # the ids of the calls of the turn being answered handed to run (a set)

    def __init__(self, client: Any, messages: Optional[Sequence[Message]], config: Any, tools: Any,
                 max_turns: int = 10, parallel: int = 4, approve: Optional[Callable[[ToolCallItem], Any]] = None,
                 decisions: Optional[Mapping[str, Any]] = None, stateful: bool = False,
                 message: Optional[Message] = None, hooks: Any = None, client_hooks: Sequence[Any] = (),
                 trace: Any = None, journal: Any = None, run_id: Optional[str] = None,
                 journal_ttl: Optional[float] = None, journal_wait: Optional[float] = None, output: Any = None,
                 output_retries: int = 2, max_output_chars: Optional[int] = MAX_OUTPUT_CHARS) -> None:
        if isinstance(max_turns, bool) or not isinstance(max_turns, int) or max_turns < 1:
            raise ConfigError("max_turns must be an int >= 1")
        if max_output_chars is not None and (isinstance(max_output_chars, bool)
                                             or not isinstance(max_output_chars, int) or max_output_chars < 100):
            raise ConfigError("max_output_chars must be an int >= 100 or None (got {!r})".format(max_output_chars))
        if isinstance(parallel, bool) or not isinstance(parallel, int) or parallel < 1:
            raise ConfigError("parallel must be an int >= 1 (1: one call at a time)")
        if approve is not None and not callable(approve):
            raise ConfigError("approve must be a callable (call) -> True | False | reason | {'arguments': ...}")
        if decisions is not None and not isinstance(decisions, _Mapping):
            raise ConfigError("decisions must map tool_call_id (or call_digest(call)) to a decision")
        for key, value in (decisions.items() if decisions else ()):
            if not isinstance(key, str):
                raise ConfigError("decisions are keyed by tool_call_id or call_digest(call), strings (got {})".format(
                    type(key).__name__))
            _check_decision(value, "decisions[{!r}]".format(key))
        if config is not None and not isinstance(config, _Mapping):
            raise ConfigError("config must be a dict (UniConfig)")
        if config and config.get("tools"):
            raise ConfigError("pass the tools as run(..., tools=[...]), not in config['tools']")
        if isinstance(output_retries, bool) or not isinstance(output_retries, int) \
                or not 0 <= output_retries <= MAX_OUTPUT_RETRIES:
            raise ConfigError("output_retries must be an int from 0 to {} (got {!r})".format(
                MAX_OUTPUT_RETRIES, output_retries))
        if output is not None and config and "response_format" in config:
            raise ConfigError("config['response_format'] is set by run(output=...) from the output type: leave it out")
        if (journal is None) != (run_id is None):
            raise ConfigError("a journaled run takes both journal= (a store) and run_id= (its name)")
        self._client = client
        self._stateful = stateful
        schemas, self._entries = resolve_tools(client, tools)
        cfg = dict(config or {})
        if schemas:
            cfg["tools"] = schemas
        checked = check_config(cfg)  # (checked once a run: the turns go out with it, see below)
        if output is not None:
            # checked by building a request (nothing is sent) with a message of its own: the config decides
            probe = [{"role": "user", "content_items": [{"type": "text", "text": "?"}]}]  # type: Any
            self._shaped = shape(client, probe, output, cfg, forced_tool=False)
            cfg = dict(self._shaped.config)
        self._config = cfg
        self._output_retries = output_retries
        self._problems = []  # type: List[List[str]]  # each judged answer's problems (what an error carries)
        self._assessed = None  # type: Any  # (answer, Assessed): a live answer without calls, read at its stop event
        self._hooks = tool_hooks(client_hooks, hooks) + ([trace] if trace is not None else [])
        self._methods = {name: [getattr(hook, name) for hook in self._hooks if callable(getattr(hook, name, None))]
                         for name in TOOL_HOOK_METHODS} if self._hooks else _NO_METHODS
        # the run's trace writer writes config["trace_id"]: the turns go without it (one writer per trace)
        self._send_config = {k: v for k, v in cfg.items() if k != "trace_id"} if trace is not None else cfg
        # the client's streams taking the config as check_config left it: not checked again every turn
        makers = getattr(client, "_checked_streams", None)
        makers = makers() if callable(makers) else None
        if makers is None:  # (a client that streams its own way: its public methods, which check it each time)
            self._open_stream, self._open_stateful = client.streaming_response, client.streaming_response_stateful
            self._send = self._send_config  # type: Dict[str, Any]
        else:
            self._open_stream, self._open_stateful = makers
            if self._shaped is not None:
                self._send = check_config(self._send_config)
            else:
                self._send = {k: v for k, v in checked.items() if k != "trace_id"} if trace is not None else checked
        self._max_turns = max_turns
        self._parallel = parallel
        self._max_output_chars = max_output_chars
        self._approve = approve
        self._decisions = dict(decisions or {})
        #: the new messages so far (assistant turns as collected, user tool_result messages)
        self.messages = []  # type: List[Message]
        #: one row per call the runner answered: {"tool_call_id", "name", "seconds", "is_error"}
        self.calls = []  # type: List[Dict[str, Any]]
        self._usage = [None, None, None, None]  # type: List[Optional[int]]
        self._priced = []  # type: List[Tuple[str, Any, Any, Any]]  # (model that answered, usage, call, route) per turn
        self._pending = []  # type: List[ToolCallItem]
        self._lock = threading.Lock()  # abort() against the loop: the open stream, the wait to wake
        self._abandoned = []  # type: List[_Ticket]  # calls that timed out (or were left by abort), still running
        if stateful:
            if message is not None:
                check_messages([message])
                if message.get("role") != "user":
                    raise ConfigError("run_stateful takes the next user message")
            before = list(client.get_history())
            self._sent = []  # type: List[Any]
            # (no message and nothing waiting: with a journal, the history may hold a run of that run_id that
            # finished, given again from its journal; else a ConfigError, once the journal is read)
            self._wants_message = False if journal is not None else None
            seen = self._start_stateful(before, message)
        else:
            if type(messages) is not list and (messages is None or isinstance(messages, (str, bytes, _Mapping))):
                raise ConfigError("run takes a list of messages")
            try:
                messages = joined_results(list(messages))
            except Exception:
                check_messages(messages)  # a malformed message: its ConfigError (not an AttributeError)
                raise
            # the client's own stream, built below when no call is open, checks the messages: not twice
            checked_later = makers is not None
            if not checked_later:
                check_messages(messages)
            try:
                self._resume_at, self._open = _open_calls(messages)
            except Exception:
                check_messages(messages)  # a malformed message: its ConfigError
                raise
            if self._open:
                if checked_later:
                    check_messages(messages)
                self._tail = messages[self._resume_at + 1:]  # type: ignore[operator]
                self._sent = messages[:self._resume_at + 1]  # type: ignore[operator]
            else:
                self._tail = []
                self._sent = messages
                # built now: a config or schema the wire refuses is a ConfigError before anything is sent
                self._first = self._open_stream(messages, dict(self._send))
        self._resumed_calls(seen if stateful else messages)  # type: ignore[possibly-undefined, arg-type]
        self._turn_keys = {}  # type: Dict[str, int]  # tool_call_id -> the turn it came in (idempotency keys)
        self._interrupted = []  # type: List[str]
        self._key_salt = run_id  # what idempotency keys are made from (None: a random one, made when first asked)
        if journal is not None:
            self._open_journal(journal, run_id, journal_ttl, journal_wait,  # type: ignore[arg-type]
                               (seen if stateful else messages),  # type: ignore[possibly-undefined]
                               (before, message) if stateful else None)  # type: ignore[possibly-undefined]
            unknown = self._journal.unsettled()  # calls that timed out in the process that ran the run before
            if unknown:
                self._unsettled = {key: [(call_id, None) for call_id in ids] for key, ids in unknown.items()}
        try:
            if self._rewind is not None:  # the client's history holds the run's own progress: resumed from its start
                if self._first is not None:
                    self._first.close()  # (never started: nothing was sent for it)
                    self._first = None
                self._resumed_calls(self._start_stateful(self._rewind[0], self._rewind[1], build=False))
            elif self._wants_message is True:
                raise ConfigError(_NEEDS_MESSAGE)
            self._check_start(stateful)
        except BaseException:
            if self._journal is not None:  # refused before it started: its claim let go now (not left to lapse)
                self._journal.discard()
            raise

    def _start_stateful(self, before: List[Any], message: Any, build: bool = True) -> List[Any]:
        """A stateful run's start from the client's history ``before`` and the next ``message`` (or None): the
        calls waiting, the message the first turn sends; its stream built now (checked) unless ``build`` is
        False (the run's history is put back first, ``_rewind``).  Returns the conversation as the run saw it."""
        seen = before + ([message] if message is not None else [])
        self._resume_at, self._open = _open_calls(seen)
        self._tail = [message] if message is not None else []
        self._next, self._committed = None, False
        waiting = not self._open and _waiting_results(before)
        if waiting:
            # results a run committed and never got answered (its next request failed): sent now, with
            # the new message if one came; no call runs again
            order = [c["tool_call_id"] for c in _calls(before[-2])]
            self._next = _join([], [before[-1]] + self._tail, order) if self._tail else before[-1]
            self._committed = True
        elif not self._open:
            if message is None:
                if build and self._wants_message is not None:
                    self._wants_message = True  # (decided when the journal is read)
                    return seen
                raise ConfigError(_NEEDS_MESSAGE)
            if build:
                self._first = self._open_stateful(message, dict(self._send))  # checked now
        self._message_unsent = not self._open and not waiting  # the first turn's message
        return seen

    def _resumed_calls(self, seen: Sequence[Any]) -> None:
        """What the run knows of the turn whose calls it resumes (``seen``: the conversation it started from)."""
        resumed = None  # type: Any  # the assistant turn whose calls this run resumes
        if self._open and self._resume_at is not None:
            resumed = seen[self._resume_at]
            #: the saved conversation up to the turn whose calls this run resumes (what _RAN keys are made of)
            self._resumed_from = list(seen[:self._resume_at + 1])
        self._order = [c["tool_call_id"] for c in _calls(resumed)] if resumed is not None else []
        self._resumed_well = resumed is None or resumed.get("finish_reason") in _FINISHED
        if self._open:
            repeated = _repeated(self._open)
            if repeated:
                raise ConfigError("the calls to resume share a tool_call_id ({}): a decision could not tell them "
                                  "apart".format(", ".join(repeated)))

    def _check_start(self, stateful: bool) -> None:
        """What a run checks once its journal is open, before anything is sent: the decisions (each for a call
        the run resumes), and the next request built (what the wire refuses is a ConfigError now)."""
        if self._decisions:
            covered = {c["tool_call_id"] for c in self._open} | {call_digest(c) for c in self._open}
            if self._journal is not None:  # a crash's interrupted calls, and those the run stopped for approval on
                covered |= set(self._journal.interrupted_ids()) | set(self._journal.replay.handed_back)
            # (a digest that matches no call is no error: its call changed since; that call asks again; but with
            # no call waiting at all, every decision is for a call the run does not resume)
            stray = sorted(key for key in self._decisions
                           if key not in covered and not (covered and key.startswith("sha256:")))
            if stray:
                raise ConfigError("decisions for calls this run does not resume (a decision covers one of the calls "
                                  "waiting when the run starts): {}".format(", ".join(repr(k) for k in stray)))
            if self._journal is not None and self._journal.replay.awaiting is not None:
                # a journaled run waiting on a call under an id it decided another call under before (servers that
                # number the calls of each answer): a decision by id that runs something may be that earlier one
                # given again (a retry, a double submit); it cannot tell them apart (a denial runs nothing)
                opened = {c["tool_call_id"] for c in self._open}
                for key in sorted(self._decisions):
                    value = self._decisions[key]
                    if key.startswith("sha256:") or value is False or isinstance(value, str):
                        continue
                    turn = self._journal.decided_before(key, key in opened)
                    if turn is not None:
                        _decided_before(key, "in turn {}".format(turn) if turn >= 0 else
                                        "in the saved state it resumed")
            elif self._stateful and self._open:
                # the same on a stateful client, whose history is the state (not the command): a call under the id
                # this process handed back at an earlier turn of the conversation
                ids = {key for key, value in self._decisions.items()
                       if not key.startswith("sha256:") and value is not False and not isinstance(value, str)}
                ids &= {c["tool_call_id"] for c in self._open}
                for key in sorted(_shown_earlier(self._resumed_from[:-1], ids) if ids else ()):
                    _decided_before(key, "in an earlier turn")
        if self._journal is not None and self._journal.turn(0) is not None and self._first is not None:
            self._first.close()  # the first turn is in the journal: nothing is sent for it
            self._first = None
        if self._open and not stateful:
            # the next request built now, with empty results in place: what the wire refuses is a ConfigError
            # before any tool runs or anything is sent (the stream is never started)
            # (an MCP server's approval request is answered as its answer goes: no tool_call of the messages has its id)
            placeholders = [_approval_answer(c, True) if _is_approval(c) else
                            {"type": "tool_result", "tool_call_id": c["tool_call_id"], "text": ""} for c in self._open]
            self._open_stream(self._sent + [_join(placeholders, self._tail, self._order)], dict(self._send)).close()

    def _open_journal(self, store: Any, run_id: str, ttl: Optional[float], wait: Optional[float],
                      messages: Sequence[Any], stateful: Optional[Tuple[List[Any], Any]] = None) -> None:
        """``stateful``: (the client's history, the message given): the run's start goes in a new journal's
        header, and a journal whose run started earlier in this history resumes from there (``_rewind``)."""
        from .journal import RunJournal, fingerprints, stateful_start

        tools = self._config.get("tools") or []
        kept = {k: v for k, v in self._config.items() if k != "tools"}
        model = getattr(self._client, "model", "")
        prints = fingerprints(model, list(messages), list(tools), kept)
        print_ = prints[0]

        def older(header: Mapping[str, Any], entries: List[Dict[str, Any]]) -> bool:
            return header.get("fingerprint") in prints[1:]  # (a journal written before: its fingerprint of the run)

        if stateful is None:
            self._journal = RunJournal(store, run_id, print_, ttl=ttl, wait=wait, same=older)
            return
        before, message = stateful

        def same(header: Mapping[str, Any], entries: List[Dict[str, Any]]) -> bool:
            if older(header, entries):
                return True
            self._rewind = stateful_start(header, entries, before, message,
                                          lambda seen: fingerprints(model, seen, list(tools), kept))
            return self._rewind is not None

        self._journal = RunJournal(store, run_id, print_, ttl=ttl, wait=wait, start=[len(before), message is not None],
                                   same=same)

    @property
    def _credentials(self) -> List[str]:
        """The client's credential values and the run's (what error texts are scrubbed of: its config's
        ``extra_headers`` values, the fields of its ``extra_body`` named like a credential, a ``session=``'s headers
        and auth), read the first time one is."""
        values = self._credential_values
        if values is None:
            credentials = getattr(self._client, "credential_values", None)
            values = list(credentials()) if callable(credentials) else []
            config = self._config if isinstance(self._config, _Mapping) else {}
            secrets = getattr(self._client, "_secrets", None)  # (AutoLLMClient's: extra_headers, a session's)
            if callable(secrets):
                values.extend(secrets(None, config))
            values.extend(named_secrets(config.get("extra_body")))
            self._credential_values = values
        return values

    # -- what hooks read ----------------------------------------------------------------------------------------
    @property
    def client(self) -> Any:
        return self._client

    @property
    def config(self) -> Dict[str, Any]:
        """The run's config as given (``trace_id`` included), with the tools' schemas."""
        return self._config

    @property
    def stateful(self) -> bool:
        return self._stateful

    @property
    def turns(self) -> int:
        return self._turns

    @property
    def stop(self) -> Optional[str]:
        """How the run ended ("done", "max_turns", "approval", "aborted"); None while it goes on."""
        return self._stop

    def history(self) -> List[Any]:
        """The whole conversation so far as the next request sends it (stateless: the messages given and the
        new ones; stateful: the client's history)."""
        if not self._stateful:
            return list(self._sent)
        return list(self._restore) if self._restore is not None else list(self._client.get_history())

    def tool_kind(self, name: str) -> Optional[str]:
        """"tool" (a Python function), "provider" (a tool provider's, an MCP server's), "schema" (a plain
        ToolSchema) or None (no such tool) for the tool named ``name`` on the wire."""
        entry = self._entries.get(name)
        return entry.kind if entry is not None else None

    # -- reading ------------------------------------------------------------------------------------------------
    def __iter__(self) -> Iterator[UniEvent]:
        if self._events is None:
            self._reader = threading.get_ident()
            if self._rewind is not None:  # (as the run starts: its hooks' on_run_start see the history it resumes)
                self._put_history(list(self._rewind[0]))
                self._rewind = None
            self._events = self._hooked() if self._hooks else self._run()
        return self._events

    def _hooked(self) -> Iterator[UniEvent]:
        """The run between its hooks' on_run_start and on_run_end."""
        error = None  # type: Optional[BaseException]
        try:
            try:
                for method in self._methods["on_run_start"]:
                    method(self)
            except BaseException:  # the run never started: nothing sent, its journal's claim let go now
                if self._first is not None:
                    self._first.close()
                    self._first = None
                if self._journal is not None:
                    self._journal.discard()
                raise
            yield from self._run()
        except GeneratorExit:
            raise
        except BaseException as exc:
            error = exc
            raise
        finally:
            self._run_end(error)

    def _run_end(self, error: Optional[BaseException]) -> None:
        """Every hook's on_run_end (the trace writer's and telemetry's come last: one that raised before them
        must not leave a trace or a span open).  A hook's Exception does not replace the run's own error (it is
        logged); on a run that ended without one, the first is raised once every hook heard the end."""
        failed = None  # type: Optional[BaseException]
        for method in self._methods["on_run_end"]:
            try:
                method(self, error)
            except Exception as exc:
                if error is None and failed is None:
                    failed = exc
                    continue
                owner = getattr(method, "__self__", None)
                _logger.warning("an on_run_end hook (%s) raised %s; %s (%s) stands",
                                type(owner).__name__ if owner is not None else getattr(method, "__qualname__", "?"),
                                type(exc).__name__, "the run's own error" if error is not None
                                else "an earlier on_run_end's error", type(error or failed).__name__)
        if failed is not None:
            raise failed

    def _wrapped(self, name: str, args: Tuple[Any, ...], proceed: Callable[[], Any]) -> Any:
        """``proceed()`` inside each hook's ``name`` method (the first hook outermost)."""
        for method in reversed(self._methods[name]):
            proceed = functools.partial(method, *args, proceed)
        return proceed()

    def close(self) -> None:
        """Stop the run where it is (an open model stream is released; running tools run on).  From another
        thread while the run is being read, this is ``abort()``.  A run never read ends here: nothing is sent,
        its journal's claim is let go, and ``result()`` raises ConfigError."""
        if self._events is not None:
            if getattr(self._events, "gi_running", False) or threading.get_ident() != self._reader:
                self.abort()  # (another thread reads the run: it ends there)
                return
            self._events.close()  # type: ignore[attr-defined]
            return
        # never read: nothing ran or was sent; it ends here (its journal's claim let go now, nothing journaled;
        # result() says it was closed)
        self._events = iter(())
        if self._first is not None:
            self._first.close()
        if self._journal is not None:
            self._journal.discard()

    def abort(self) -> None:
        """Stop the run from any thread: a model stream being read is aborted, a wait for tool threads ends
        at once, and the reading thread's run ends with ``stop == "aborted"`` (``pending``: the calls of the
        turn that got no result; results that came are kept).  A tool running in the reading thread itself
        (a lone call without a timeout, ``parallel=1``, or a turn of tools known quick: docs/tools.md) cannot
        be stopped: the run ends when it returns.
        Threads of tools still running are left to finish (see docs/tools.md)."""
        with self._lock:
            self._aborted = True
            stream = self._stream
            wake = self._wake
        if stream is not None:
            stream.abort()
        if wake is not None:
            wake.put(None)

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
        journal = self._journal
        if journal is None:  # (the journal's fields at their defaults)
            return RunResult(self._stop, self._final, list(self.messages), list(self._pending), self._turns,
                             self.usage_metadata, self.cost_usd, list(self.calls), interrupted=list(self._interrupted),
                             output=self._output, output_json=self._output_json, cut_usd=self.cut_usd)
        return RunResult(self._stop, self._final, list(self.messages), list(self._pending), self._turns,
                         self.usage_metadata, self.cost_usd, list(self.calls),
                         run_id=journal.run_id,
                         replayed_turns=journal.replayed_turns,
                         replayed_results=journal.replayed_results,
                         interrupted=list(self._interrupted), output=self._output, output_json=self._output_json,
                         reattached_turns=journal.reattached_turns,
                         cut_usd=self.cut_usd)

    @property
    def usage_metadata(self) -> UsageMetadata:
        return dict(zip(USAGE_KEYS, self._usage))  # type: ignore[return-value]

    # -- the loop -----------------------------------------------------------------------------------------------
    def _run(self) -> Iterator[UniEvent]:
        journal = self._journal
        try:
            if journal is None:
                yield from self._loop()
                return
            try:
                yield from self._loop()
                if self._stop is not None:
                    journal.done(self._stop, self._pending)
            finally:
                journal.close()
        finally:
            if self._pool is not None:  # the run's tool threads end with it (idle ones now, busy ones on return)
                self._pool.close()

    def _loop(self) -> Iterator[UniEvent]:
        if self._open:
            results = yield from self._answer(self._open, resumed=True, finished=self._resumed_well)
            if results is None:
                return
            self._add_results(results, self._tail)
        stateful = self._stateful
        while True:
            stream = self._first
            self._first = None
            if self._aborted:
                if stream is not None:
                    stream.close()
                self._stop = "aborted"
                return
            caught = {}  # type: Dict[str, Any]
            kept = self._journal.turn(self._turns) if self._journal is not None else None
            if kept is not None:  # this turn is in the journal: its events again, nothing sent
                if stream is not None:
                    stream.close()
                answer = yield from self._replay_turn(kept)
            else:
                attach = None  # type: Optional[Mapping[str, Any]]
                if self._journal is not None:
                    attach = self._journal.attachment(self._turns)
                    if attach is not None:  # the request in flight at the crash is a background response:
                        stream, attach = self._reattached(stream, attach)  # re-attached by its id, not paid again
                    if attach is None:
                        self._journal.request(self._turns)
                answer = yield from self._live_turn(stream, caught, attach)
                if answer is None:
                    return
            calls = _calls(answer)
            if not calls:
                if self._shaped is None:
                    self._stop = "done"
                    return
                reask = self._judge(answer)
                if reask is None:
                    self._stop = "done"
                    return
                yield self._add_reask(reask, replayed=kept is not None)
                if self._turns >= self._max_turns:  # the re-ask would be a turn past max_turns: not sent
                    self._stop = "max_turns"
                    return
                continue
            repeated = _repeated(calls)
            if repeated:  # their results could not be told apart, nor a decision be given for one of them
                raise StreamProtocolError("the model's turn has several tool calls with the id {}: none of them "
                                          "was run".format(", ".join(repeated)),
                                          client=getattr(self._client, "client_type", ""))
            if self._turns >= self._max_turns:
                if caught:  # (calls whose arguments did not parse: answered, not handed back with {} as arguments)
                    yield from self._answer_broken(calls, caught, self._turns - 1)
                    calls = [call for call in calls if call["tool_call_id"] not in caught]
                self._stop = "max_turns"
                self._pending = calls  # type: ignore[assignment]
                _remember_shown(calls, self._turn_conversation())
                self._handed_back(calls, {})
                return
            results = yield from self._answer(calls, caught, finished=answer.get("finish_reason") in _FINISHED)
            if results is None:
                return
            self._add_results(results, [])

    def _live_turn(self, stream: Any, caught: Dict[str, Any], attach: Optional[Mapping[str, Any]] = None) -> Any:
        """Generator: a turn sent and read (its events yielded); returns its answer, or None when the run
        stopped there (aborted).  ``attach``: the stream re-attaches to the journaled background response of
        this turn (``_reattached``); one that is gone is sent again instead (``_detach``)."""
        stateful = self._stateful
        if stream is None:
            stream = self._open_next()
        with self._lock:
            self._stream = stream
        if self._aborted:  # (abort() came before the stream was there to abort)
            stream.abort()
        folding = None if stateful else Collector()  # stateful: the client folds it into history
        answer = None
        watching = None  # type: Any
        if self._journal is not None and self._config.get("background"):
            from ..background import ID_WATCH

            self._attached_id = attach["id"] if attach is not None else None
            watching = (ID_WATCH, ID_WATCH.set(functools.partial(self._id_known, self._turns)))
        try:
            # the catch for unparseable arguments is read by the turn's parser when it is made: in the
            # first step (retries and failover happen before the first event, inside that step too); a
            # background response's id comes in that step too (its stream names it before any output)
            token = broken_calls.set(caught)
            try:
                while True:
                    try:
                        if self._methods["around_request"]:
                            first = self._first_event(stream)
                        else:
                            first = next(stream, None)
                        break
                    except AgentHubError as exc:
                        reason = _gone(exc, stream) if attach is not None and not self._aborted else None
                        if reason is None:
                            raise
                        stream = self._detach(stream, attach, reason)  # type: ignore[arg-type]
                        attach = None
            finally:
                broken_calls.reset(token)
                if watching is not None:
                    watching[0].reset(watching[1])
            if first is not None:
                if folding is not None:
                    folding.add(first)
                if first["event_type"] == "stop":
                    answer = self._turn_done(folding, stream, caught)
                    self._assess(answer, stream)
                yield first
                for event in stream:
                    if folding is not None:
                        folding.add(event)
                    if event["event_type"] == "stop":
                        answer = self._turn_done(folding, stream, caught)
                        self._assess(answer, stream)
                    yield event
            if attach is not None and answer is not None:  # the turn came by its journaled id, not sent again
                self._journal.reattached_turns += 1
        except Exception as exc:
            if not self._aborted:
                if self._attached_id is not None and answer is None and isinstance(exc, AgentHubError):
                    self._failed_response(exc, stream)
                raise
            self._stop = "aborted"  # the stream ended with TransportError(aborted=True): abort() did it
            return
        finally:
            with self._lock:
                self._stream = None
            stream.close()
            if answer is None and self._attached_id is not None:
                self._cancelled_response(stream)
            if self._restore is not None:  # the turn did not commit: its results go back into history
                self._put_history(self._restore)
                self._restore = None
        if answer is None:  # (a stream that ended without a stop event)
            answer = self._turn_done(folding, stream, caught)
        return answer

    def _first_event(self, stream: Any) -> Any:
        """The turn's first event (None: no event), read as ``proceed()`` inside the hooks' around_request: what
        ``proceed()`` read, whatever a hook returns (a turn paid for is never lost to a hook's return value); a
        hook that never calls it, or calls it twice, is a ConfigError; the turn's error raises, even when a hook
        caught it."""
        got = []  # type: List[Any]  # (event,) or (None, the error it raised)

        def proceed():  # type: () -> Any
            if got:
                raise ConfigError("an around_request hook called proceed() twice: it sends the turn once")
            try:
                event = next(stream, None)
            except BaseException as exc:
                got.append((None, exc))
                raise
            got.append((event,))
            return event

        returned = self._wrapped("around_request", (self,), proceed)
        if not got:
            raise ConfigError("an around_request hook returned without calling proceed(): the turn was not sent")
        if len(got[0]) == 2:  # (a hook that caught the turn's error: it stands)
            raise got[0][1]
        if returned is not got[0][0]:
            _logger.warning("an around_request hook returned a %s, not what proceed() returned: the turn is what "
                            "proceed() read", type(returned).__name__)
        return got[0][0]

    def _reattached(self, stream: Any, attach: Mapping[str, Any]) -> Tuple[Any, Optional[Mapping[str, Any]]]:
        """The turn whose request was in flight at the crash as the background response ``attach["id"]``:
        its stream again by id (a GET from its start: nothing is sent or paid again), replacing ``stream``
        (the turn's unsent POST, closed); (stream, None) after a warning and a ``detach`` entry when it
        cannot be (the response came from another route, or this client cannot re-attach): sent again."""
        client = self._client
        resource_id = attach.get("id")
        route = attach.get("route") or {}
        reason = None
        if not callable(getattr(client, "_reattach", None)):
            reason = "this client cannot re-attach to a background response"
        elif route and (not callable(getattr(client, "_route_entry", None))
                        or client._route_entry(route) is None):  # (this client or the fallback that answered it)
            reason = "it was started on another route ({} at {})".format(route.get("model"), route.get("host"))
        else:
            try:
                opened = self._open_next(resource_id, route)
            except AgentHubError as exc:
                reason = "it cannot be asked for ({})".format(type(exc).__name__)
        if reason is not None:
            self._detach(None, attach, reason)
            return stream, None
        if stream is not None:
            stream.close()  # (never started: nothing was sent for it)
        _logger.info("run %r: turn %d re-attaches to background response %s (it was in flight when the run "
                     "stopped): not sent again", self._journal.run_id, self._turns, resource_id)
        return opened, attach

    def _detach(self, stream: Any, attach: Mapping[str, Any], reason: str) -> Any:
        """The journaled background response of this turn cannot be re-attached (``reason``): a warning, a
        ``detach`` entry, and (with ``stream``, the re-attach that failed before its first event) the turn
        sent again: its new stream, journaled as a request going out."""
        _logger.warning("run %r: turn %d: background response %s is not re-attached: %s; the request is sent "
                        "again", self._journal.run_id, self._turns, attach.get("id"), reason)
        self._journal.detached(self._turns, str(attach.get("id")), reason)
        if stream is None:
            return None
        stream.close()
        if self._restore is not None:  # stateful: the history as before the re-attach was opened
            self._put_history(self._restore)
            self._restore = None
        self._attached_id = None
        self._journal.request(self._turns)
        stream = self._open_next()
        with self._lock:
            self._stream = stream
        if self._aborted:
            stream.abort()
        return stream

    def _failed_response(self, error: AgentHubError, stream: Any) -> None:
        """A journaled background response that failed (or is gone) mid-turn: a ``detach`` entry, so that
        a resume sends the turn again instead of re-attaching to what fails again (the run's error stands;
        a journal that cannot be written now does not hide it)."""
        reason = _gone(error, stream)
        if reason is None or self._journal is None:
            return
        try:
            self._journal.detached(self._turns, str(self._attached_id), reason)
        except AgentHubError:
            pass
        self._attached_id = None

    def _cancelled_response(self, stream: Any) -> None:
        """The run stopped mid-turn (abort, close, an interrupt) and its client cancelled the turn's journaled
        background response: a ``detach`` entry, so that a resume sends the turn again instead of re-attaching to
        what the run cancelled (a cut answer taken as the turn's, or a stream with nothing more to bring)."""
        if self._journal is None or getattr(getattr(stream, "_call", None), "_cancelled", None) != self._attached_id:
            return
        try:
            self._journal.detached(self._turns, str(self._attached_id), "it was cancelled when the run stopped")
        except AgentHubError:
            pass  # (the run's own stop stands; a journal that cannot be written now does not hide it)
        self._attached_id = None

    def _id_known(self, turn: int, resource_id: str, attempt: Any) -> None:
        """``background.ID_WATCH``: the turn's background response is ``resource_id`` (journaled once: a
        re-attach naming the id it re-attached to writes nothing; an id that is no string, which no GET could ask
        for, is not: the journal would refuse the entry, and the run with it, as corrupt)."""
        if resource_id == self._attached_id or self._journal is None or type(resource_id) is not str:
            return
        self._attached_id = resource_id
        self._journal.attached(turn, resource_id, getattr(attempt, "client_type", ""), getattr(attempt, "route", None))

    def _replay_turn(self, kept: Mapping[str, Any]) -> Any:
        """Generator: a journaled turn's events again (marked replayed); returns its answer, taken in as a live
        turn's is, but neither sent nor charged again, and heard by no hook (they count live work)."""
        from ..stream import with_usage_extras
        from .journal import replay_events

        answer = dict(kept["message"])
        extras = kept.get("usage")  # (what its usage carried beside the four buckets: priced as the live one)
        if extras and isinstance(answer.get("usage_metadata"), dict):
            answer["usage_metadata"] = with_usage_extras(answer["usage_metadata"], extras)
        for event in replay_events(answer, extras):
            yield event  # type: ignore[misc]
        self._turns += 1
        self._add_usage(answer.get("usage_metadata") or {})
        cost = kept.get("cost")
        self._replayed_cost = None if cost is None or self._replayed_cost is None else self._replayed_cost + cost
        if kept.get("cut") is not None:  # (what a Budget counted for the turn's cut attempts: the live run's cut_usd)
            self._replayed_cuts = list(self._replayed_cuts) + [kept["cut"]]
        self.route = dict(kept.get("route") or {}) or None
        self._journal.replayed_turns += 1
        self.messages.append(answer)  # type: ignore[arg-type]
        if self._stateful:
            history = list(self._client.get_history())
            # the first turn sends the caller's message; later ones the results message, in history already
            sent = [self._tail[0]] if self._message_unsent else ([self._next] if self._reask_unsent else [])
            self._message_unsent = False
            self._reask_unsent = False
            self._put_history(history + sent + [answer])
        else:
            self._sent.append(answer)
        self._final = answer  # type: ignore[assignment]
        return answer

    def _turn_done(self, folding: Any, stream: Any, caught: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
        """The turn's answer, taken in (at its stop event, before the caller gets it).  A journaled turn with calls
        whose arguments did not parse (``caught``) is stored with their error results: the message says ``{}``
        for them, and a resume must not run them with that."""
        answer = folding.message() if folding is not None else self._client.get_history()[-1]
        self._restore = None  # the client committed the turn (and its message)
        self._message_unsent = False
        self._reask_unsent = False
        self._count(answer, stream)
        if self._journal is not None:
            broken = [(call_id, _error(call_id, self._broken_text(error))) for call_id, error in caught.items()] \
                if caught else []
            paid = self._priced[-1][2]
            self._journal.answered(self._turns - 1, answer, self._turn_cost(), self._priced[-1][3], broken,
                                   paid.cut_usd if paid is not None else None)
        self.messages.append(answer)
        if not self._stateful:
            self._sent.append(answer)  # the runner's own list (streaming_response copied what it sent)
        self._final = answer
        for method in self._methods["on_turn"]:
            method(self, answer)
        return answer  # type: ignore[no-any-return]

    def _add_results(self, results: List[Dict[str, Any]], tail: Sequence[Mapping[str, Any]],
                     hooks: bool = True) -> None:
        """A turn's results in: ``run.messages`` gains them (never the caller's own messages), the
        conversation the message that goes next (with ``tail``, the caller's messages after the turn, joined
        in); stateful, the client's history gains it now (sent as the next request's message)."""
        own = {"role": "user", "content_items": results}  # type: Dict[str, Any]
        joined = _join(results, tail, self._order) if tail else own
        self.messages.append(own)  # type: ignore[arg-type]
        if self._stateful:
            history = list(self._client.get_history())
            if len(history) >= 2 and _results_only(history[-1]) and history[-2].get("role") == "assistant":
                # the turn's calls answered when it stopped (their arguments did not parse): one message for all
                joined = _join(results, [history.pop()] + list(tail), self._order)
            check_messages([joined])
            self._put_history(history + [joined])
            self._next = joined
            self._committed = True
        else:
            self._sent.append(joined)
        if hooks:
            for method in self._methods["on_results"]:
                method(self, joined)

    def _assess(self, answer: Mapping[str, Any], stream: Any) -> None:
        """Typed output: a live turn without calls read at its stop event, before its call ends, so a response
        cache does not keep an answer that holds no value (``assess`` marks the call); ``_judge`` decides on it."""
        if self._shaped is not None and not _calls(answer):
            self._assessed = (answer, assess(self._shaped, answer, getattr(stream, "_call", None)))

    def _judge(self, answer: Mapping[str, Any]) -> Optional[Message]:
        """Typed output: the run's answer (a turn without calls) judged as ``parse`` judges one.  None: it
        held (``self._output`` set); else the re-ask user message.  A refusal, or the re-asks used up, raise
        (OutputRefusedError, OutputValidationError)."""
        self._answers += 1
        retries_left = self._output_retries - (self._answers - 1)
        assessed, self._assessed = self._assessed, None
        verdict = judge(self._shaped, answer, self._answers, retries_left, self._problems, self.usage_metadata,
                        self.cost_usd, assessed[1] if assessed is not None and assessed[0] is answer else None)
        if verdict.error is not None:
            raise verdict.error
        if verdict.problems is None:
            self._output, self._output_json = verdict.value, verdict.json
            return None
        return verdict.turns[-1]  # (the assistant turn it was is in the conversation already)

    def _add_reask(self, reask: Message, replayed: bool = False) -> UniEvent:
        """The re-ask in: ``run.messages`` and the conversation gain it (stateful: the next turn sends it, as
        a user message, into history with its answer); returns its event (one user delta)."""
        self.messages.append(reask)
        if self._stateful:
            self._next = reask
            self._reask_unsent = True
        else:
            self._sent.append(reask)
        event = {"role": "user", "event_type": "delta", "content_items": list(reask["content_items"]),
                 "usage_metadata": None, "finish_reason": None, "created_at": now_ms()}  # type: Any
        if replayed:
            event["replayed"] = True
        return event  # type: ignore[no-any-return]

    def _put_history(self, history: List[Any]) -> None:
        """The client's history set to ``history`` (its own with the runner's checked results message added or
        taken off: the client's unchecked ``_put_history`` when it has one)."""
        put = getattr(self._client, "_put_history", None)
        (put if callable(put) else self._client.set_history)(history)

    def _open_next(self, attach: Optional[str] = None, route: Optional[Mapping[str, Any]] = None) -> Any:
        """The next turn's stream (built: what the wire refuses raises here, before anything is sent).  A model
        that takes no image input gets the results' images as a note (IMAGES_LEFT_OUT) instead.  ``attach``:
        the turn is the background response of that id, re-attached (``client._reattach``) on ``route`` (the
        client's own or a fallback's), not sent."""
        client = self._client
        if attach is None:  # (the config checked once a run: the client's makers that take it checked)
            stateless, stateful, config = self._open_stream, self._open_stateful, self._send
        else:
            stateless = functools.partial(_reattach_stateless, client, attach, route)
            stateful = functools.partial(_reattach_stateful, client, attach, route)
            config = self._send_config
        for again in (False, True):
            try:
                if not self._stateful:
                    return stateless(self._sent, dict(config))
                if self._message_unsent:  # the first turn's message (its stream is built in __init__ unless
                    return stateful(self._tail[0], dict(config))  # it is re-attached or sent again)
                if self._reask_unsent:  # a re-ask goes as the next user message (history gains it with the answer)
                    return stateful(self._next, dict(config))
                history = list(client.get_history())
                self._put_history(history[:-1])  # the results were committed; the turn sends them as its message
                try:
                    stream = stateful(self._next, dict(config))
                except BaseException:
                    self._put_history(history)
                    raise
                self._restore = history
                return stream
            except UnsupportedParameterError as exc:
                message = self._sent[-1] if not self._stateful else self._next
                if again or getattr(exc, "parameter", None) != "image input" or not _drop_images(message):
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    def _add_usage(self, usage: Mapping[str, Any]) -> None:
        if not usage:
            return
        summed = self._usage
        for n, key in enumerate(USAGE_KEYS):
            value = usage.get(key)
            if value is not None:
                summed[n] = (summed[n] or 0) + value

    def _count(self, answer: Mapping[str, Any], stream: Any) -> None:
        self._turns += 1
        usage = answer.get("usage_metadata") or {}
        self._add_usage(usage)
        route = getattr(stream, "route", None) or getattr(self._client, "last_route", None) or {}
        self.route = route or None
        call = getattr(stream, "_call", None)  # its cache mark and start time: a hit costs 0.0, a turn its tier's
        call = _Paid(call) if call is not None else None  # (not the Attempt: it holds the turn's request and history)
        self._priced.append((route.get("model") or getattr(self._client, "model", ""), usage, call, route))

    def _turn_cost(self) -> Optional[float]:
        """What the latest turn cost (None: unpriced), reckoned now (a journaled turn keeps it); taken into
        the run's cost as ``cost_usd`` takes it, which then does not reckon it again."""
        model, usage, call, route = self._priced[-1]
        price = call_cost(model, usage, call, route) if usage else None
        if self._priced_upto == len(self._priced) - 1:  # (the turns before it reckoned already)
            if price is None:
                self._cost = None
            elif self._cost is not None:
                self._cost += price
            self._priced_upto += 1
        return price

    @property
    def cut_usd(self) -> Optional[float]:
        """What a Budget counted for the turns' attempts cut after the provider took them (``RunResult.cut_usd``);
        None when none was."""
        cuts = list(self._replayed_cuts) + [paid[2].cut_usd for paid in self._priced
                                      if paid[2] is not None and paid[2].cut_usd is not None]
        return sum(cuts) if cuts else None

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
        if not self._turns:
            return None
        if self._cost is None or self._replayed_cost is None:
            return None
        return self._cost + self._replayed_cost

    # -- one turn's calls ---------------------------------------------------------------------------------------
    def _decided(self, call: Mapping[str, Any]) -> Any:
        """The first decision a hook's before_call gives for ``call`` (None: none does)."""
        for method in self._methods["before_call"]:
            decision = method(_fresh(call))  # (a copy: what it does to it changes neither the call nor what runs)
            if decision is not None:
                _check_decision(decision, "a hook's before_call answer for {}".format(call["tool_call_id"]),
                                "None (no say), ")
                return decision
        return None

    def _handed_back(self, calls: Sequence[Mapping[str, Any]], ran: Mapping[str, str],
                     claimed: Sequence[str] = ()) -> None:
        """``calls`` are handed back pending: those this process ran from the same conversation before (_RAN) may
        run on the decision given after this, once (``ran``: their keys, made already for a resumed run's own;
        ``claimed``: the keys this run took for calls that now do not run, let go)."""
        if claimed:
            with _SHOWN_LOCK:
                for key in claimed:
                    _RAN.pop(key, None)
        if not _RAN:
            return
        once = [c for c in calls if self._at_most_once(c)]
        if not once:
            return
        if any(c["tool_call_id"] not in ran for c in once):
            ran = dict(zip((c["tool_call_id"] for c in once), _ran_keys(_conversation_key(self.history()), once)))
        with _SHOWN_LOCK:
            for call in once:
                _RAN.pop(ran.get(call["tool_call_id"], ""), None)

    @staticmethod
    def _let_go(claimed: Sequence[str], ran: Mapping[str, str], started: Set[str]) -> None:
        """The run ends in this turn: the ``_RAN`` keys it took (``claimed``) for calls that never started are let
        go (a resume of the same state runs them on its decision; only a call that started is handed back)."""
        if not claimed:
            return
        unstarted = [key for call_id, key in ran.items() if call_id not in started]
        with _SHOWN_LOCK:
            for key in unstarted:
                if key in claimed:
                    _RAN.pop(key, None)

    def _answer_broken(self, calls: List[Dict[str, Any]], caught: Mapping[str, Any], turn: int) -> Iterator[UniEvent]:
        """Generator: the calls of a turn that stops here (for a decision, at max_turns) whose arguments did not
        parse, answered with their error results (events, hooks' after_call, the journal, ``messages``, the
        history) as a turn that goes on answers them: the message holds ``{}`` as their arguments, and a resume
        from it must not run them with that."""
        items = []
        for call in calls:
            error = caught.get(call["tool_call_id"])
            if error is None:
                continue
            item = _error(call["tool_call_id"], self._broken_text(error))
            if self._journal is not None:
                self._journal.finished(turn, call["tool_call_id"], item, 0.0)
            self.calls.append({"tool_call_id": call["tool_call_id"], "name": call["name"], "seconds": 0.0,
                               "is_error": True})
            for method in self._methods["after_call"]:
                method(dict(call), item, 0.0)
            items.append(item)
            yield _result_event(item)
        if items:
            self._add_results(items, [])

    def _broken_text(self, error: Any) -> str:
        """The error result's text for a call whose arguments did not parse (a ToolCallArgumentParseError)."""
        return "{}; raw arguments ({} chars): {}".format(error_text(error, self._credentials),
                                                          error.raw_arguments_length, error.raw_arguments_preview)

    def _unsettle(self, call: Mapping[str, Any], shown: Any, ticket: Optional[_Ticket]) -> str:
        """A call of a tool that must not run twice timed out and runs on (``ticket``): until the run learns how it
        ended, a call repeating it (the same tool and arguments) does not run (``_repeat_refused``).  Returns what
        the model is told besides the timeout."""
        from .journal import repeat_digest

        if self._unsettled is None:
            self._unsettled = {}
        if type(self._timed_out) is not set:
            self._timed_out = set()
        # (each one: two calls of one turn with the same arguments may both have timed out)
        self._unsettled.setdefault((call["name"], repeat_digest(shown)), []).append((call["tool_call_id"], ticket))
        self._timed_out.add(call["tool_call_id"])  # (its result journaled so: a resume knows it is unsettled)
        return ("; {} is not safe to repeat (idempotent=False) and may still complete: do not call it again before "
                "checking whether it took effect".format(call["name"]))

    def _repeat_refused(self, name: str, shown: Any) -> Optional[str]:
        """Why a call of ``name`` with the arguments ``shown`` does not run, when it repeats a call of the run that
        timed out (a tool that must not run twice): that call still runs, or it ended where this run cannot learn
        how (the process that ran it stopped), or it returned since (its late outcome, told once: the next such
        call runs).  None: it runs."""
        from .journal import arguments_digest, repeat_digest

        unsettled = self._unsettled
        if not unsettled:
            return None
        key = (name, repeat_digest(shown))  # (30 and 30.0 are one amount; a journal's call not found: as it started)
        held = unsettled.get(key)
        if held is None:
            key = (name, arguments_digest(shown))
            held = unsettled.get(key)
        if held is None:
            return None
        head = "not run: call {} of {} with the same arguments timed out".format
        unknown = [call_id for call_id, ticket in held if ticket is None]
        if len(unknown) == 1:
            return "{} and its outcome is unknown (the process running it stopped); {} is not safe to " \
                   "repeat".format(head(unknown[0], name), name)
        if unknown:  # (each one named: any of them may have taken effect)
            return "not run: calls {} of {} with the same arguments timed out and their outcome is unknown (the " \
                   "process running them stopped); {} is not safe to repeat".format(", ".join(unknown), name, name)
        for call_id, ticket in held:  # (every one of them: while one still runs, a repeat may still take effect twice)
            if ticket.running:  # type: ignore[union-attr]
                return "{} and still runs; it may still complete ({} is not safe to repeat)".format(head(call_id, name),
                                                                                                  name)
        del unsettled[key]
        told = []
        for call_id, ticket in held:
            _, item, raised, _ = ticket.value  # type: ignore[union-attr]
            if raised is not None:
                told.append("{}, then raised {}".format(head(call_id, name), error_text(raised, self._credentials)))
            else:
                told.append("{}, then {}: {}".format(head(call_id, name), "failed" if item.get("is_error") else
                                                     "returned", item.get("text")))
        return "; ".join(told)

    def _turn_conversation(self) -> str:
        """The key of the conversation before the turn whose calls are decided now (the history's last assistant
        message): what the calls handed back in ``pending`` are remembered under (``_remember_shown``)."""
        history = self.history()
        for index in range(len(history) - 1, -1, -1):
            if history[index].get("role") == "assistant":
                return _conversation_key(history[:index])
        return _conversation_key(history)

    def _at_most_once(self, call: Mapping[str, Any]) -> bool:
        entry = self._entries.get(str(call.get("name")))
        return entry is not None and not entry.idempotent and not _is_approval(call)

    def _answer(self, calls: List[Dict[str, Any]], caught: Optional[Mapping[str, Any]] = None,
                resumed: bool = False, finished: bool = True) -> Any:
        """Generator: the result events of ``calls`` (in call order); returns the result items, or None
        when the run stops (for a decision: nothing of the turn ran; aborted: what came is kept).
        ``resumed``: these are the calls the run was resumed with (``decisions`` apply to them, once);
        ``finished``: their turn ended with tool_call or stop (else each call needs a decision)."""
        caught = caught or {}
        turn = self._turns - 1  # (the turn these calls came in: the journal's number for it)
        journal = self._journal
        replaying = journal is not None and journal.replaying(turn)  # (the journal holds calls of this turn)
        if journal is not None and self._decisions and journal.awaiting():
            # the journaled run stopped for approval (its last entry): the decisions are for that turn's calls
            resumed = bool(journal.awaiting(turn))
        elif replaying and any(journal.interrupted(turn, c["tool_call_id"]) for c in calls):
            resumed = True  # a decision may be for a call a crash interrupted, in a turn taken from the journal
        decisions = self._decisions if resumed else {}
        kept_key = []  # type: List[str]

        def turn_key():  # type: () -> str  # (the conversation's key made once, when a decision by id needs it)
            if not kept_key:
                kept_key.append(self._turn_conversation())
            return kept_key[0]

        if resumed:
            self._decisions = {}  # a decision covers the calls the run resumed with, once
        plans = []  # type: List[Any]  # per call: ("error", text) | ("ask", entry) | ("decided", entry, decision)
        pending = []
        interrupted = []  # type: List[str]
        ran = {}  # type: Dict[str, str]  # a saved state's waiting call of a tool that must run once -> its _RAN key
        claimed = []  # type: List[str]  # the _RAN keys this run took (let go again for the calls that do not run)
        resuming = calls is self._open or (journal is not None and bool(journal.awaiting(turn)))
        if resuming:  # a saved state's waiting calls, or those of the turn the journaled run stopped on for approval
            once = [c for c in calls if self._at_most_once(c)]
            if once:
                conversation = _conversation_key(self._resumed_from if calls is self._open else self.history())
                ran = {c["tool_call_id"]: key for c, key in zip(once, _ran_keys(conversation, once))}
        try:
            for call in calls:
                call_id = call["tool_call_id"]
                if replaying:
                    item = journal.result(turn, call_id)
                    if item is not None:  # it ran before the crash: its result again, it does not run again
                        plans.append(("kept", item))
                        continue
                    if journal.interrupted(turn, call_id):
                        entry = self._entries.get(call["name"])
                        # (started with arguments a decision edited: shown, and run on True, with those)
                        edited = journal.edited_arguments(turn, call_id)
                        shown = call if edited is None else dict(call, arguments=edited)
                        decision = decisions.get(call_digest(shown), decisions.get(call_digest(call),
                                                                                   decisions.get(call_id)))
                        if entry is not None and not entry.idempotent:
                            if decision is None or not journal.handed_back(turn, call_id):
                                # at most once: the user decides whether it runs again, once shown that it was
                                # interrupted (a decision given before, the approval it started on, is not that)
                                pending.append(shown)
                                interrupted.append(call_id)
                                plans.append(None)
                                continue
                            if decision is True and edited is not None:
                                decision = {"arguments": edited}
                            plans.append(("decided", entry, decision))
                            continue
                        if entry is not None and entry.kind != "schema":  # at least once: it was going to run
                            plans.append(("decided", entry, decision if decision is not None else True))
                            continue
                if call_id in ran:  # claimed now (another thread resuming the same state finds it taken), or taken
                    with _SHOWN_LOCK:
                        taken = ran[call_id] in _RAN
                        if not taken:
                            _RAN[ran[call_id]] = True
                            claimed.append(ran[call_id])
                            while len(_RAN) > _RAN_MAX:
                                _RAN.popitem(last=False)
                    if taken:  # this process ran it from this state already: at most once
                        pending.append(call)
                        interrupted.append(call_id)
                        plans.append(None)
                        continue
                error = caught.get(call_id)
                approval = _is_approval(call)  # (never a local tool, whatever its name)
                entry = None if approval else self._entries.get(call["name"])
                if error is not None:
                    plans.append(("error", self._broken_text(error)))
                    continue
                if entry is None and not approval:
                    plans.append(("error", "unknown tool {!r}; the tools are: {}".format(
                        call["name"], ", ".join(sorted(self._entries)) or "none")))
                    continue
                if entry is not None and entry.check is not None:  # a strict tool: held to its whole schema
                    try:
                        entry.check.convert(call["arguments"], style="tool")
                    except ValueError as exc:
                        plans.append(("error", "invalid arguments for {}: {}".format(entry.name, exc)))
                        continue
                decision = self._decided(call) if self._methods["before_call"] else None
                if decision is None and decisions:
                    decision = decisions.get(call_digest(call))
                    if decision is None and not _shown_otherwise(call, turn_key):
                        decision = decisions.get(call_id)
                if approval:  # a provider's MCP server asks: decided, asked (approve), or the run stops for it
                    if decision is not None:
                        plans.append(("answer", _approval_answer(call, decision)))
                    elif self._approve is None:
                        pending.append(call)
                        plans.append(None)
                    else:
                        plans.append(("ask", None))
                elif entry.kind == "schema":
                    if decision is False or isinstance(decision, str):  # a denial needs no executor
                        plans.append(("decided", entry, decision))
                    else:  # no function here: the caller answers it with a tool_result message
                        pending.append(call)
                        plans.append(None)
                elif decision is not None:
                    plans.append(("decided", entry, decision))
                elif self._approve is None and (entry.requires_approval or not finished):
                    pending.append(call)
                    plans.append(None)
                else:
                    plans.append(("ask", entry))
            if pending:
                if self._stateful and calls is self._open and self._tail:
                    # the message given goes with these calls' results: stopping here would drop it (it is in neither
                    # the history nor the result); nothing ran or was sent, the history is as it was
                    raise ConfigError("run_stateful was given a message while calls wait for a decision ({}), and none "
                                      "came: the message goes with their results; give decisions=... for them (a "
                                      "reason denies one) with the message".format(
                                          ", ".join(str(c["tool_call_id"]) for c in pending)))
                if caught:  # answered now: a saved state says {} for their arguments, and must not run them with that
                    yield from self._answer_broken(calls, caught, turn)
                self._stop = "approval"
                self._pending = pending  # type: ignore[assignment]
                self._interrupted = interrupted
                _remember_shown(pending, self._turn_conversation())
                self._handed_back(pending, ran, claimed)
                return None
            #: (index, call, entry, arguments, as decided) or (index, call, None, error text, None)
            tasks = []  # type: List[Any]
            kept = set()
            for index, (call, plan) in enumerate(zip(calls, plans)):
                if self._aborted:  # none of the turn's calls starts now (_execute): approve is asked no more
                    break
                if plan[0] in ("error", "answer", "kept"):  # (an error text, or the whole result item)
                    tasks.append((index, call, None, plan[1], None))
                    if plan[0] == "kept":
                        kept.add(index)
                    continue
                entry = plan[1]
                if plan[0] == "ask":
                    if self._approve is None:
                        decision = True
                    else:
                        decision = self._approve(_fresh(call))  # type: ignore
                        _check_decision(decision, "approve()'s answer for {}".format(call["tool_call_id"]))
                else:
                    decision = plan[2]
                if entry is None:  # an MCP server's approval request, asked of approve
                    tasks.append((index, call, None, _approval_answer(call, decision), None))
                    continue
                if decision is True:
                    arguments = call["arguments"]
                elif decision is False:
                    tasks.append((index, call, None, "denied: the user did not allow this call", None))
                    continue
                elif isinstance(decision, str):
                    tasks.append((index, call, None, "denied: {}".format(decision), None))
                    continue
                else:  # (a copy: they run as they were when the decision came, whatever becomes of its objects)
                    arguments = _fresh(dict(decision["arguments"]))
                    if entry.check is not None:  # a strict tool: edited arguments held to its schema as the model's
                        try:
                            entry.check.convert(arguments, style="tool")
                        except ValueError as exc:
                            tasks.append((index, call, None, "invalid arguments for {}: {}".format(entry.name, exc),
                                          None))
                            continue
                shown = arguments
                if self._unsettled and not entry.idempotent:
                    refused = self._repeat_refused(entry.name, shown)
                    if refused is not None:  # it repeats a call that timed out and may still take effect
                        tasks.append((index, call, None, refused, None))
                        continue
                if entry.kind == "tool":
                    try:
                        arguments = entry.tool.convert(arguments)
                    except ValueError as exc:
                        tasks.append((index, call, None, "invalid arguments for {}: {}".format(entry.name, exc), None))
                        continue
                    except Exception as exc:  # a hint's own constructor (a dataclass __post_init__, say) refused
                        tasks.append((index, call, None, "invalid arguments for {}: {}".format(
                            entry.name, error_text(exc, self._credentials)), None))
                        continue
                tasks.append((index, call, entry, arguments, shown))
            results = [None] * len(calls)  # type: List[Any]
            after = self._methods["after_call"]
            if claimed:  # a saved state's waiting calls that must run once: those that do not run are let go
                running = {ran[task[1]["tool_call_id"]] for task in tasks
                           if task[2] is not None and task[1]["tool_call_id"] in ran}
                with _SHOWN_LOCK:
                    for key in claimed:
                        if key not in running:
                            _RAN.pop(key, None)
            if journal is not None and not self._aborted:  # those that must run at most once: journaled as started
                # first, in one write (none starts once aborted: _execute)
                journal.starting(turn, [(task[1], not task[2].idempotent,  # (with the arguments run when edited)
                                         task[4] if _edited(task[4], task[1].get("arguments")) is not None else None)
                                        for task in tasks if task[2] is not None])
        except BaseException:  # (nothing of the turn ran: the calls this run took are let go)
            if claimed:
                with _SHOWN_LOCK:
                    for key in claimed:
                        _RAN.pop(key, None)
            raise
        self._turn_keys = {call["tool_call_id"]: turn for call in calls}
        #: an after_call hook's exception, or the GeneratorExit of the run closed by its reader: raised when the
        #: turn's calls that ran are in
        hook_error = None  # type: Any
        started = self._started = set()  # type: Set[str]  # the ids of the calls handed to run (_execute)
        try:
            for index, item, seconds in self._execute(tasks):
                results[index] = item
                call = calls[index]
                if index in kept:
                    journal.replayed_results += 1
                    event = _result_event(item)
                    event["replayed"] = True  # type: ignore[typeddict-unknown-key]
                    if not self._halting:
                        try:
                            yield event
                        except GeneratorExit as exc:  # closed while read: as a hook's exception, below
                            self._halting = True
                            hook_error = exc
                    continue
                if journal is not None:
                    unsettled = call["tool_call_id"] in self._timed_out
                    if unsettled:
                        self._timed_out.discard(call["tool_call_id"])
                    journal.finished(turn, call["tool_call_id"], item, seconds, unsettled)
                self.calls.append({"tool_call_id": call["tool_call_id"], "name": call["name"], "seconds": seconds,
                                   "is_error": bool(item.get("is_error"))})
                if self._halting:  # a hook raised: the results that came are kept, quietly
                    continue
                try:
                    for method in after:
                        method(dict(call), item, seconds)
                except Exception as exc:
                    # raised once the calls that ran are in (journal, messages, history): no call that ran is lost,
                    # none starts (the calls not started do not start, those still running are left, as on abort)
                    self._halting = True
                    hook_error = exc
                    continue
                try:
                    yield _result_event(item)
                except GeneratorExit as exc:  # the run closed by its reader: the calls that ran are kept the same way
                    self._halting = True
                    hook_error = exc
        except BaseException:  # (a KeyboardInterrupt a tool raised): the calls that never started are not taken
            self._let_go(claimed, ran, started)
            raise
        if hook_error is not None or self._aborted:  # the run ends in this turn: so too
            self._let_go(claimed, ran, started)
        if (hook_error is not None or self._aborted) and caught and any(item is None for item in results):
            # the run ends in this turn: its calls whose arguments did not parse are answered too (the message
            # holds {} as their arguments, which a resume from it must not run them with)
            for index, call in enumerate(calls):
                error = caught.get(call["tool_call_id"])
                if results[index] is None and error is not None:
                    results[index] = _error(call["tool_call_id"], self._broken_text(error))
                    if journal is not None:
                        journal.finished(turn, call["tool_call_id"], results[index], 0.0)
                    self.calls.append({"tool_call_id": call["tool_call_id"], "name": call["name"], "seconds": 0.0,
                                       "is_error": True})
        if hook_error is not None:
            self._halting = False
            got = [item for item in results if item is not None]
            if got:
                self._add_results(got, self._tail if calls is self._open else [], hooks=False)
            raise hook_error
        if self._aborted and any(item is None for item in results):
            if any(item is not None for item in results):
                self._add_results([item for item in results if item is not None], [])
            self._stop = "aborted"
            self._pending = [call for call, item in zip(calls, results) if item is None]  # type: ignore[misc]
            return None
        return results

    def _execute(self, tasks: List[Any]) -> Iterator[Tuple[int, Dict[str, Any], float]]:
        """(index, result item, seconds) in call order; the calls run on up to ``parallel`` threads of the run's
        pool, calls that timed out and still run counted among them.  Ends early when the run is aborted."""
        if self._aborted or self._halting:  # (abort() came while the calls were decided: none starts)
            return
        runnable = [t for t in tasks if t[2] is not None]
        quick = self._quick
        if quick is None:
            quick = self._quick = {}
        timed = False
        for task in runnable:
            if task[2].timeout:
                timed = True
                break
        # a thread running an asyncio loop runs no call (a tool's own asyncio.run fails there) while a slot is free
        loop = bool(runnable) and _loop_running()
        if loop and self._abandoned:
            self._abandoned = [ticket for ticket in self._abandoned if ticket.running]
            loop = len(self._abandoned) < self._parallel  # (none free: in this thread, as ever, not 'no thread free')
        if not timed and not loop and (len(runnable) <= 1 or self._parallel == 1):  # no thread: one call, parallel=1
            for index, call, entry, arguments, shown in tasks:
                if self._aborted or self._halting:
                    return
                if entry is None:
                    yield index, _answered(call, arguments), 0.0
                    continue
                self._started.add(call["tool_call_id"])
                started = time.monotonic()
                item = self._invoke(call, entry, arguments, shown)
                seconds = time.monotonic() - started
                if seconds > _SPREAD_SECONDS:
                    quick[entry.name] = False
                else:
                    quick.setdefault(entry.name, True)
                yield index, item, seconds
            return
        decided = None  # type: Optional[Dict[int, Tuple[Any, Optional[BaseException], float]]]
        if not timed and not loop:
            for task in runnable:
                if not quick.get(task[2].name):
                    break
            else:  # every call is of a tool known quick: in the reading thread, all before any is given (as
                # on a pool thread); one that took time sends the calls not started to threads (below)
                decided = {}
                left = 0
                for left, task in enumerate(runnable, 1):
                    with self._lock:  # (as on a pool thread: a run that ends knows which calls started)
                        if self._aborted or self._halting:  # the calls not started do not start
                            left = len(runnable)
                            break
                        self._started.add(task[1]["tool_call_id"])
                    got = contextvars.Context().run(self._timed, *task)  # a context per call, as on a thread
                    decided[task[0]] = got[1:]
                    if got[2] is not None:  # KeyboardInterrupt, SystemExit: raised in its turn, nothing else starts
                        left = len(runnable)
                        break
                    if got[3] > _SPREAD_SECONDS:
                        break
                runnable = runnable[left:]
                if not runnable:  # (every call ran, or the rest do not start: aborted, or one raised)
                    for index, call, entry, arguments, _ in tasks:
                        if entry is None:
                            got = (_answered(call, arguments), None, 0.0)
                        elif index in decided:
                            got = decided[index]
                        else:  # not started (aborted; or after one that raised, which is raised first)
                            continue
                        if got[1] is not None:
                            raise got[1]
                        yield index, got[0], got[2]
                    return
        results = _queue.SimpleQueue()  # type: Any  # (index, item, raised, seconds) from the threads; None: abort
        with self._lock:
            self._wake = results
        try:
            yield from self._threaded(tasks, runnable, results, decided)
        finally:
            with self._lock:
                self._wake = None

    def _timed(self, index: int, call: Dict[str, Any], entry: _Entry, arguments: Any,
               shown: Any) -> Tuple[int, Any, Optional[BaseException], float]:
        """(index, the call's result item, what it raised that is no Exception, seconds); notes whether the
        tool was quick."""
        started = time.monotonic()
        item, raised = None, None  # type: Any, Optional[BaseException]
        try:
            item = self._invoke(call, entry, arguments, shown)
        except BaseException as exc:  # KeyboardInterrupt, SystemExit: raised again in the run's thread
            raised = exc
        seconds = time.monotonic() - started
        if seconds > _SPREAD_SECONDS:
            self._quick[entry.name] = False  # type: ignore[index]
        else:
            self._quick.setdefault(entry.name, True)  # type: ignore[union-attr]  # (atomic: a False stays)
        return index, item, raised, seconds

    def _threaded(self, tasks: List[Any], runnable: List[Any], results: Any,
                  decided: Optional[Dict[int, Tuple[Any, Optional[BaseException], float]]] = None,
                  ) -> Iterator[Tuple[int, Dict[str, Any], float]]:
        """``runnable``'s calls on the pool's threads; ``decided``: the results of the turn's calls that ran
        already (in the reading thread)."""
        if decided is None:
            decided = {}
        for index, call, entry, arguments, _ in tasks:
            if entry is None:
                decided[index] = (_answered(call, arguments), None, 0.0)
        queue = collections.deque()  # type: Any  # calls waiting for a thread of their own
        running = {}  # type: Dict[int, Tuple[float, Optional[float], Dict[str, Any], _Ticket]]
        order = [t[0] for t in tasks]
        position = 0
        pool = self._pool
        if pool is None:
            pool = self._pool = _Pool()
        if self._abandoned:
            self._abandoned = [ticket for ticket in self._abandoned if ticket.running]
        # calls without a timeout start one after another on one pool thread (one hand-off a turn, not one a call);
        # when one of them has run for _SPREAD_SECONDS, those it has not started go to threads of their own
        shared = collections.deque()  # type: Any  # what that thread starts next (popped at either end, atomically)
        done = {}  # type: Dict[int, Tuple[Any, Optional[BaseException], float]]  # its results so far
        batch = None  # type: Optional[_Ticket]
        in_call = [0.0]  # when that thread's call began (0.0: between calls, or not started: a late thread is no
        #                  reason to spread)

        work = self._timed

        # (the nested functions carry type comments: annotations would be evaluated each turn)
        def drain():  # type: () -> Any
            me = threading.current_thread()
            named = runnable[0][2].thread  # (the name the thread was handed the batch with)
            while True:
                with self._lock:  # (handed to run under the lock: a run that ends knows which calls started)
                    if self._aborted or self._halting:  # the calls not started do not start
                        return _BATCH_NOTE
                    try:
                        index, call, entry, arguments, shown = shared.popleft()
                    except IndexError:
                        return _BATCH_NOTE
                    self._started.add(call["tool_call_id"])
                if entry.thread is not named:
                    named = me.name = entry.thread
                in_call[0] = time.monotonic()
                got = contextvars.Context().run(work, index, call, entry, arguments, shown)  # a context per call
                in_call[0] = 0.0
                done[index] = got[1:]
                if got[2] is not None or got[3] >= _SPREAD_SECONDS:
                    results.put(_BATCH_NOTE)  # the run's thread hears of a call that took time (or raised) now

        def reporter(ticket):  # type: (_Ticket) -> Callable[[Any], None]
            def report(value):  # type: (Any) -> None
                ticket.value = value  # (a timed-out call's late outcome, read by a repeat of it: _repeat_refused)
                ticket.running = False  # (a timed-out call's slot frees here)
                results.put(value)
            return report

        def take(got):  # type: (Any) -> None
            if got is not None and got[0] in running:  # (None: abort() woke the wait; _BATCH_NOTE: see done)
                decided[got[0]] = got[1:]
                del running[got[0]]

        if len(runnable) > 1 and len(self._abandoned) < self._parallel and not any(t[2].timeout for t in runnable):
            shared.extend(runnable)
            batch = _Ticket()
        else:
            queue.extend(runnable)
        try:
            if batch is not None:  # handed over as the wait begins: the thread finds the run's thread waiting
                pool.submit(drain, reporter(batch), runnable[0][2].thread)
                try:
                    take(results.get(True, _SPREAD_SECONDS))  # (mostly the thread's one report)
                except _queue.Empty:
                    pass
                if len(done) == len(runnable) and not (self._aborted or self._halting):  # the batch ran (the common case): in order
                    decided.update(done)
                    for index in order:
                        item, raised, seconds = decided[index]
                        if raised is not None:
                            raise raised
                        yield index, item, seconds
                    return
            while position < len(order):
                if done:
                    for index in list(done):
                        decided[index] = done.pop(index)
                if self._aborted or self._halting:  # what came is given (out of call order), those running are left
                    with self._lock:
                        shared.clear()  # (the calls not started yet do not start)
                    while True:
                        try:
                            take(results.get_nowait())
                        except _queue.Empty:
                            break
                    for index in list(done):
                        decided[index] = done.pop(index)
                    self._abandoned.extend(ticket for _, _, _, ticket in running.values())
                    if batch is not None and batch.running:
                        self._abandoned.append(batch)
                    for index in sorted(decided):
                        item, raised, seconds = decided[index]
                        if raised is None:
                            yield index, item, seconds
                    return
                if self._abandoned:
                    self._abandoned = [ticket for ticket in self._abandoned if ticket.running]
                held = len(running) + len(self._abandoned) + (batch is not None and batch.running)
                began = in_call[0]
                if shared and held < self._parallel and began and time.monotonic() - began >= _SPREAD_SECONDS:
                    spread = []  # calls the batch thread has not started: to threads of their own, as slots allow
                    for _ in range(self._parallel - held):
                        try:
                            spread.append(shared.pop())
                        except IndexError:
                            break
                    queue.extend(reversed(spread))
                while queue and held < self._parallel:
                    index, call, entry, arguments, shown = queue.popleft()
                    ticket = _Ticket()
                    running[index] = (time.monotonic(), entry.timeout, call, ticket)
                    self._started.add(call["tool_call_id"])
                    held += 1
                    pool.submit(functools.partial(work, index, call, entry, arguments, shown), reporter(ticket),
                                entry.thread)
                if queue and not running and not (batch is not None and batch.running):
                    # every slot is held by a timed-out call that still runs
                    for index, call, entry, _, _ in queue:
                        decided[index] = (_error(call["tool_call_id"], "no thread free: {} earlier call(s) of this run "
                                                 "timed out and still run (parallel={})".format(
                                                     len(self._abandoned), self._parallel)), None, 0.0)
                    queue.clear()
                if order[position] not in decided:
                    wait = None  # type: Optional[float]
                    now = time.monotonic()
                    for index in list(running):
                        started, timeout, call, ticket = running[index]
                        if timeout is not None:
                            left = started + timeout - now
                            if left <= 0:
                                text = "TimeoutError: {} did not return within {:g} s".format(call["name"], timeout)
                                if not self._entries[call["name"]].idempotent:  # its side effect may still happen
                                    text += self._unsettle(call, next(t[4] for t in tasks if t[0] == index), ticket)
                                decided[index] = (_error(call["tool_call_id"], text), None, timeout)
                                del running[index]  # its thread runs on, holding its slot until it returns
                                self._abandoned.append(ticket)
                            else:
                                wait = left if wait is None else min(wait, left)
                    if order[position] not in decided and not (queue and held < self._parallel):
                        if queue and self._abandoned:  # a slot frees when an abandoned call returns: look again soon
                            wait = 0.05 if wait is None else min(wait, 0.05)
                        if shared and held < self._parallel:  # calls not started yet: spread them when it is time
                            began = in_call[0]
                            left = max(began + _SPREAD_SECONDS - now, 0.0) if began else _SPREAD_SECONDS
                            wait = left if wait is None else min(wait, left)
                        try:
                            if wait is None:
                                take(results.get())
                            else:
                                take(results.get(True, min(wait, _LONGEST_WAIT)) if wait > 0 else results.get_nowait())
                        except _queue.Empty:
                            pass
                        continue
                while position < len(order) and order[position] in decided:
                    index = order[position]
                    item, raised, seconds = decided.pop(index)
                    position += 1
                    if raised is not None:
                        raise raised
                    yield index, item, seconds
        finally:
            with self._lock:
                shared.clear()  # the run goes no further here (raised, closed, aborted): calls not started do not start

    def _invoke(self, call: Dict[str, Any], entry: _Entry, arguments: Any, shown: Any) -> Dict[str, Any]:
        """The tool's result item (an error result when it raised: KeyboardInterrupt and SystemExit alone
        propagate); run inside the hooks' around_call."""
        ran = []  # type: List[Any]  # what the tool returned, once it did (a hook may fail after that)
        try:
            if self._methods["around_call"]:
                proceed = functools.partial(self._proceed, call, entry, arguments, shown, ran)
                if not entry.idempotent:
                    proceed = _once(proceed, entry.name, entry.kind == "tool")
                # (a copy: what a hook does to it changes neither the model's call nor what the tool was given)
                item = self._wrapped("around_call", (self, dict(call, arguments=_fresh(shown))), proceed)
                if not isinstance(item, _Mapping) or item.get("type") != "tool_result":
                    raise ConfigError("an around_call hook returned a {}, not the tool_result item proceed() "
                                      "returns".format(type(item).__name__))
                # (an item a hook made itself, a cache's say: the call's id, the fields a result item has)
                item = result_item(item, call["tool_call_id"])
                if not text_is_utf8(item["text"]):
                    item["text"] = _utf8(item["text"])
                return _cut(item, self._max_output_chars)
            # (cut once scrubbed: a credential cut in two would not be found)
            return _cut(self._proceed(call, entry, arguments, shown), self._max_output_chars)
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:  # an Exception, asyncio.CancelledError, ...: the model hears of it
            error = error_text(exc, self._credentials)
            if ran:  # an around_call hook failed after the tool ran: the model must not take it for a failure to run
                item = ran[0]
                return _cut(dict(item, is_error=True, text="{} ran and returned: {}; then an around_call hook failed: "
                                 "{}".format(call["name"], item.get("text"), error)), self._max_output_chars)
            return _error(call["tool_call_id"], error)

    def _proceed(self, call: Dict[str, Any], entry: _Entry, arguments: Any, shown: Any,
                 ran: Optional[List[Any]] = None) -> Dict[str, Any]:
        """The tool itself: its result item (what it raised propagates; ``ran`` gains the item)."""
        call_id = call["tool_call_id"]
        token = _CURRENT.set(_Current(self, call, shown, self._turn_keys.get(call_id, self._turns - 1)))
        try:
            # (a copy: what a tool or provider does to its arguments never changes the model's call in the conversation)
            if entry.kind == "provider":
                value = entry.provider.call_tool(entry.original, _fresh(arguments))
            else:
                value = entry.tool.fn(**_fresh(arguments))
        finally:
            _CURRENT.reset(token)
        try:
            item = result_item(value, call_id)
        except Exception as exc:  # (a circular value, an int past str()'s digits, a __str__ that raises, bad images)
            # it ran: the model is told so, not handed what reads as the tool's own failure (it would call it again)
            item = _error(call_id, "{} ran, but what it returned cannot be sent: {}".format(
                call["name"], error_text(exc, self._credentials)))
        if not text_is_utf8(item["text"]):  # (a tool's text with a lone surrogate: no request could carry it)
            item["text"] = _utf8(item["text"])
        if entry.kind == "provider" and isinstance(item.get("text"), str):
            # the credentials the caller gave for reaching it (an MCP server's headers, its URL's token, its env=
            # values) never reach the model, whatever the server answers
            own = getattr(entry.provider, "credential_values", None)
            item["text"] = scrub_text(item["text"], own() if callable(own) else ())
        if item.get("is_error"):  # a provider's (an MCP server's) error text: scrubbed as an exception's
            item["text"] = scrub_free_text(item["text"], self._credentials)
        if ran is not None:
            ran.append(item)
        return item
