"""Typed output: ``client.parse(messages, output)`` and ``client.streaming_parse(...)``.

The loop (issue 40): the type is compiled once (``agenthub.typeschema``) into a JSON Schema and a
converter; the schema goes out as ``config["response_format"]`` (each dialect maps it to its wire, so a
failover to another provider rebuilds it for the fallback's wire), or, where the endpoint takes no JSON
Schema, as a forced tool (Anthropic models without structured outputs) or as ``json_object`` plus the
schema in the system prompt (compatible servers in JSON mode), or the schema in the system prompt alone.
The answer's JSON is found (prose or a Markdown fence around it is allowed), converted and checked; an
answer that does not validate goes back as the assistant turn it was, with the problems as the next user
turn, at most ``retries`` times.  Transport errors are the attempt loop's (retries, failover), never a
re-ask; a refusal is ``OutputRefusedError``, never re-asked; when the re-asks run out,
``OutputValidationError`` carries the last candidate, every attempt's problems and their usage.
"""

from dataclasses import dataclass, field
from typing import Any, Generic, Iterator, List, Optional, Sequence, Tuple, TypeVar

from ..catalog import call_cost
from ..errors import AgentHubError, ConfigError, OutputRefusedError, OutputValidationError
from ..stream import Collector
from ..types import USAGE_KEYS, AssistantMessage, Message, UniConfig, UsageMetadata
from .partial import PartialJSON, find_json
from .shape import shape

__all__ = ["Parsed", "ParseStream", "parse", "streaming_parse", "find_json", "judge", "assess", "Assessed", "Verdict",
           "MAX_ANSWER_CHARS"]

T = TypeVar("T")

#: the longest answer text read for a value (characters); past it the attempt fails as too large
MAX_ANSWER_CHARS = 16 * 1024 * 1024
#: the most re-asks one call may ask for
MAX_RETRIES = 10
#: the name the schema goes out under (response_format's ``name``, the forced tool's name)
SCHEMA_NAME = "output"


@dataclass
class Parsed(Generic[T]):
    """What ``client.parse`` returns: ``value`` (an instance of the output type), ``message`` (the final
    assistant message, fidelity kept, to go on with the conversation), ``attempts`` (1 + the re-asks),
    ``usage_metadata`` and ``cost_usd`` summed over every attempt (``cost_usd`` None when a turn is
    unpriced), ``json`` the validated JSON the value was made from (what a job row holds), and
    ``messages`` the re-ask turns sent after the caller's messages (empty when the first answer held)."""

    value: T
    message: AssistantMessage
    attempts: int
    usage_metadata: UsageMetadata
    cost_usd: Optional[float]
    json: Any = None
    messages: List[Message] = field(default_factory=list)


class ParseStream(Generic[T]):
    """What ``client.streaming_parse`` returns.  Iterating yields the partial value as it grows (plain
    dicts and lists: agenthub.output.partial says what it holds); a re-ask starts a new partial value,
    a new object, and ``attempt`` (1-based) says which attempt the value belongs to.  ``result()`` reads
    to the end and returns ``Parsed`` (or raises ``OutputValidationError`` / ``OutputRefusedError`` /
    what the call raised).  ``events()`` yields the raw UniEvents instead, for callers who show text.
    ``usage_metadata`` and ``cost_usd``: every attempt's that ended so far, summed (None before the first);
    a call's error (an AgentHubError) carries them as ``parse_usage_metadata`` and ``parse_cost_usd``."""

    def __init__(self, client: Any, messages: Sequence[Message], output: Any, config: Optional[UniConfig],
                 retries: int) -> None:
        if not isinstance(retries, int) or isinstance(retries, bool) or not 0 <= retries <= MAX_RETRIES:
            raise ConfigError("retries must be an int from 0 to {} (got {!r})".format(MAX_RETRIES, retries))
        self._client = client
        self._retries = retries
        self._messages = list(messages)
        self._config = dict(config or {})
        for key in ("response_format",):
            if key in self._config:
                raise ConfigError("config['{}'] is set by parse() from the output type: leave it out".format(key))
        check_no_tools(self._config)
        self._shaped = shape(client, self._messages, output, self._config)
        self.attempt = 0
        self.usage_metadata = None  # type: Optional[UsageMetadata]
        self.cost_usd = None  # type: Optional[float]
        self._result = None  # type: Optional[Parsed[T]]
        self._error = None  # type: Optional[BaseException]
        self._gen = self._run()
        self._values = None  # type: Optional[Iterator[Any]]

    # iteration: the partial values
    def __iter__(self) -> Iterator[Any]:
        for kind, payload in self._gen:
            if kind == "value":
                yield payload

    def events(self) -> Iterator[Any]:
        """The UniEvents of every attempt, as they come (a ``stop`` event ends each attempt)."""
        for kind, payload in self._gen:
            if kind == "event":
                yield payload

    def result(self) -> "Parsed[T]":
        for _ in self._gen:
            pass
        if self._error is not None:
            raise self._error  # (again, when the caller already saw it while iterating)
        if self._result is None:
            raise ConfigError("the parse ended without a result (it was closed before its end)")
        return self._result

    def close(self) -> None:
        self._gen.close()

    def __enter__(self) -> "ParseStream[T]":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    # the loop
    def _run(self) -> Iterator[Tuple[str, Any]]:
        try:
            yield from self._attempts()
        except Exception as exc:  # a call's error (kept: result() raises it again, as it raises the others)
            if isinstance(exc, AgentHubError):
                # what the attempts that ended before it cost (paid for): client.parse hands back no stream to ask
                spent = {"parse_usage_metadata": self.usage_metadata, "parse_cost_usd": self.cost_usd}
                exc.__dict__.update(spent)
                fields = exc.__dict__.get("_fields")
                if isinstance(fields, dict):
                    fields.update(spent)  # (pickled with the error)
            self._error = exc
            raise

    def _attempts(self) -> Iterator[Tuple[str, Any]]:
        shaped = self._shaped
        sent = list(self._messages)
        extra = []  # type: List[Message]
        usage = [None] * len(USAGE_KEYS)  # type: List[Optional[int]]
        total = 0.0  # type: Optional[float]
        problems_seen = []  # type: List[List[str]]
        retries_left = self._retries
        while True:
            self.attempt += 1
            collector = Collector()
            partial = PartialJSON()
            changes = -1
            stream = self._client.streaming_response(sent + extra, shaped.config)
            chars = 0
            too_big = False
            assessed = message = None  # type: Any
            for event in stream:
                collector.add(event)
                if event["event_type"] == "stop":  # judged before the call ends: a cache must not keep a failure
                    message = collector.message()
                    assessed = assess(shaped, message, getattr(stream, "_call", None))
                yield ("event", event)
                piece = shaped.piece(event)
                if piece:
                    chars += len(piece)
                    if chars > MAX_ANSWER_CHARS:
                        too_big = True
                        stream.close()
                        break
                    partial.feed(piece)
                    if partial.changes != changes and partial.value is not None:
                        changes = partial.changes
                        inner = shaped.inner(partial.value)
                        if inner is not None:
                            yield ("value", inner)
            if message is None:
                message = collector.message()
            turn_usage = message.get("usage_metadata") or {}
            for n, key in enumerate(USAGE_KEYS):
                value = turn_usage.get(key)
                if value is not None:
                    usage[n] = (usage[n] or 0) + value
            route = getattr(stream, "route", None) or {}
            model = route.get("model") or getattr(self._client, "model", "")
            price = call_cost(model, turn_usage, getattr(stream, "_call", None), route) if turn_usage else None
            total = None if (price is None or total is None) else total + price
            summed = dict(zip(USAGE_KEYS, usage))  # type: Any
            self.usage_metadata, self.cost_usd = summed, total
            if too_big:
                self._error = OutputValidationError(
                    "the answer passed {} characters: not read as a value".format(MAX_ANSWER_CHARS),
                    candidate_text=None, candidate_json=None, problems=problems_seen + [["the answer is too large"]],
                    attempts=self.attempt, usage_metadata=summed, cost_usd=total)
                return
            verdict = judge(shaped, message, self.attempt, retries_left, problems_seen, summed, total, assessed)
            if verdict.error is not None:
                self._error = verdict.error
                return
            if verdict.problems is None:
                self._result = Parsed(value=verdict.value, message=message, attempts=self.attempt,
                                      usage_metadata=summed, cost_usd=total, json=verdict.json, messages=extra)
                return
            retries_left -= 1
            extra = extra + verdict.turns


def check_no_tools(config: Any) -> None:
    """ConfigError when ``config`` offers tools the model may call: parse (and a batch's typed rows) runs none, so
    a call could not be answered, and the re-ask after it (no result for the call) is refused by the APIs."""
    if config.get("tools") and config.get("tool_choice") != "none":
        raise ConfigError("config['tools']: parse() runs no tools, and the model may call them: use client.run("
                          "messages, tools=[...], output=...) for a typed answer with tools (or tool_choice 'none')")


class Verdict(object):
    """What one whole answer comes to (``judge``): ``error`` (OutputRefusedError, or OutputValidationError when
    no re-ask is left), else ``problems`` None and ``value`` / ``json`` (it held), else ``problems`` (this
    attempt's) and ``turns`` (the assistant turn it was and the user turn listing them: the re-ask)."""

    __slots__ = ("error", "value", "json", "problems", "turns")

    def __init__(self, error: Optional[BaseException] = None, value: Any = None, json: Any = None,
                 problems: Optional[List[str]] = None, turns: Optional[List[Message]] = None) -> None:
        self.error = error
        self.value = value
        self.json = json
        self.problems = problems
        self.turns = turns or []


class Assessed(object):
    """What one whole answer is, before any decision (``assess``): ``refusal`` (the model's, or None), else
    ``text``, ``candidate`` (its JSON, None when it had none), ``value`` / ``kept`` (converted) and
    ``problems`` (empty when it holds).  ``holds``: a value came of it."""

    __slots__ = ("refusal", "text", "candidate", "value", "kept", "problems")

    def __init__(self, shaped: Any, message: Any) -> None:
        self.refusal = shaped.refusal(message)
        self.text = self.candidate = self.value = self.kept = None  # type: Any
        self.problems = []  # type: List[str]
        if self.refusal is not None:
            return
        self.text = shaped.text(message)
        data, why = find_json(self.text)
        if why is not None:
            self.problems = [why]
        else:
            self.candidate = data
            self.value, self.problems, self.kept = shaped.convert(data)

    @property
    def holds(self) -> bool:
        return self.refusal is None and not self.problems


def assess(shaped: Any, message: Any, call: Any = None) -> Assessed:
    """The answer ``message`` read and checked (no decision); ``call`` (the stream's logical call, at its stop
    event, before it ends): marked ``rejected`` when no value came of it, so a response cache does not keep it
    (a re-run would replay the same failure) and drops the entry it replayed."""
    assessed = Assessed(shaped, message)
    if call is not None and not assessed.holds:
        call.rejected = True
    return assessed


def judge(shaped: Any, message: Any, attempt: int, retries_left: int, problems_seen: List[List[str]],
          usage: Any, cost_usd: Optional[float], assessed: Optional[Assessed] = None) -> Verdict:
    """The re-ask loop's one decision on a whole answer (``shaped``: agenthub.output.shape's ``Shaped``):
    a refusal, a value, a re-ask (``retries_left`` > 0) or the last candidate's OutputValidationError.
    ``problems_seen`` (every earlier attempt's problems) gets this attempt's appended; ``usage`` and
    ``cost_usd`` are every attempt's so far (what an error carries); ``assessed``: the answer already
    read (``assess``), else it is read here.  The live loop (``ParseStream``), a typed tool run and the batch
    engines' rounds (agenthub.jobs.batch) all decide here."""
    if assessed is None:
        assessed = Assessed(shaped, message)
    refusal = assessed.refusal
    if refusal is not None:
        return Verdict(error=OutputRefusedError(
            "the model refused to answer with the output type: {}".format(refusal[:500]),
            refusal=refusal, finish_reason=message.get("finish_reason"), attempts=attempt,
            usage_metadata=usage, cost_usd=cost_usd))
    text, candidate, problems = assessed.text, assessed.candidate, assessed.problems
    if not problems:
        return Verdict(value=assessed.value, json=assessed.kept)
    problems_seen.append(problems)
    if message.get("finish_reason") == "length":
        problems_seen[-1] = problems + ["the answer was cut at the output limit: set a larger max_tokens"]
        retries_left = 0
    if retries_left <= 0:
        return Verdict(error=OutputValidationError(
            "the answer did not validate as {} after {} attempt(s): {}".format(
                shaped.label, attempt, "; ".join(problems_seen[-1][:5])),
            candidate_text=text, candidate_json=candidate, problems=problems_seen,
            attempts=attempt, usage_metadata=usage, cost_usd=cost_usd))
    return Verdict(problems=problems, turns=[shaped.replay(message), shaped.reask(problems, message)])


def streaming_parse(client: Any, messages: Sequence[Message], output: Any, config: Optional[UniConfig] = None, *,
                    retries: int = 2) -> ParseStream[Any]:
    """``client.streaming_parse``: see ParseStream."""
    return ParseStream(client, messages, output, config, retries)


def parse(client: Any, messages: Sequence[Message], output: Any, config: Optional[UniConfig] = None, *,
          retries: int = 2) -> Parsed[Any]:
    """``client.parse``: ``streaming_parse(...).result()``."""
    return streaming_parse(client, messages, output, config, retries=retries).result()
