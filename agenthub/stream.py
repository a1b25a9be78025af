"""Pure folds over streams: the shared stream driver, ``collect`` and ``check_stream``.

A provider's parser yields content items and, when its protocol's terminal
marker arrived, one ``StreamEnd``.  ``drive`` turns that into UniEvents with the
grammar ``check_stream`` checks: ``start`` right before the first item, one ``delta`` per item,
one ``stop`` with usage and finish reason.  It is the single place that decides
what a cut stream, an empty turn and a malformed payload become.
"""

import json
import logging
import re
import time
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional

from .errors import AgentHubError, ConfigError, EmptyResponseError, StreamProtocolError
from .types import FINISH_REASONS as _FINISH_REASONS, USAGE_KEYS as _USAGE_KEYS
from .types import AssistantMessage, UniEvent, UniMessage, UsageMetadata, lone_surrogate_in, paired_halves
from .validate import check_json
from ._jsondepth import loads as _json_loads

__all__ = ["StreamEnd", "drive", "now_ms", "collect", "Collector", "check_stream", "empty_usage", "Fold",
           "item_problem", "usage_count", "checked_usage", "MAX_USAGE_TOKENS", "Usage", "with_cache_write",
           "with_output_images", "with_audio", "with_image_tool_calls", "USAGE_EXTRAS", "usage_extras", "with_usage_extras",
           "StopEvent", "whole_text", "surrogates_escaped", "text_is_utf8", "paired_halves",
           "surrogates_shown"]

#: the most tokens one usage bucket of one answer may report (ten times the largest context window of any
#: model): a larger count is a server's mistake (bytes, a running total, garbage) and reads as unknown
MAX_USAGE_TOKENS = 100000000

#: items that make a turn worth replaying (a thinking-only turn is rejected upstream)
_SUBSTANTIVE = frozenset(["tool_call", "inline_data", "image_url", "embedding", "compaction"])
_ITEM_FIELDS = {
    "text": (("text", str),),
    "thinking": (("thinking", str),),
    "image_url": (("image_url", str),),
    "inline_data": (("data", bytes), ("mime_type", str)),
    "inline_thinking": (("data", bytes), ("mime_type", str)),
    "tool_call": (("name", str), ("arguments", dict), ("tool_call_id", str)),
    "partial_tool_call": (("name", str), ("arguments", str), ("tool_call_id", str)),
    "tool_result": (("text", str), ("tool_call_id", str)),
    "embedding": (("embedding", list),),
    "compaction": (("fidelity", dict),),  # opaque: the server's compaction of the context before it
}


def empty_usage() -> UsageMetadata:
    return {"cached_tokens": None, "prompt_tokens": None, "thoughts_tokens": None, "response_tokens": None}


def usage_count(value: Any) -> Optional[int]:
    """A server's token count as a usage bucket holds it: a non-negative int up to ``MAX_USAGE_TOKENS``
    (an integral float is taken as its int); None (unknown) for anything else: absent, negative, a
    fraction, a string, a bool, NaN, infinite, absurdly large."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, float):
        if not value.is_integer():  # NaN and the infinities too
            return None
        value = int(value)
    if not isinstance(value, int) or value < 0 or value > MAX_USAGE_TOKENS:
        return None
    return value


def checked_usage(usage: Any, client: str = "") -> UsageMetadata:
    """The four buckets of ``usage``, each through ``usage_count``: what a stop event carries, and all that
    ever reaches a rate limiter, a budget, a price or the metrics.  One bucket that is not a token count
    makes the whole usage unknown (four None: its other counts cannot be trusted either), with a warning.
    A usage of zeros stays as the server said it (a Budget charges such an answer its whole hold)."""
    out = empty_usage()
    if not isinstance(usage, dict):
        return out
    for key in _USAGE_KEYS:
        value = usage.get(key)
        count = usage_count(value)
        if value is not None and count is None:
            text = repr(value) if not isinstance(value, int) or value.bit_length() < 128 else "a {}-bit int".format(
                value.bit_length())
            logging.getLogger("agenthub").warning(
                "%s: the answer's usage %s %s is not a token count: its usage is unknown", client or "provider", key,
                text if len(text) < 40 else text[:40] + "...")
            return empty_usage()
        out[key] = count  # type: ignore[literal-required]
    written = getattr(usage, "cache_write", None)  # the wire's cache-write counts and service tier ride along (Usage)
    if written is not None:
        out = with_cache_write(out, written, getattr(usage, "cache_write_1h", None))
    out = with_output_images(out, getattr(usage, "output_image_tokens", None))
    out = with_audio(out, getattr(usage, "input_audio_tokens", None), getattr(usage, "cached_audio_tokens", None),
                     getattr(usage, "output_audio_tokens", None))
    out = with_image_tool_calls(out, getattr(usage, "image_tool_calls", None))
    tier = getattr(usage, "service_tier", None)
    return out if tier is None else with_service_tier(out, tier, CATALOG_TIERS)  # (a catalog tier already)


class Usage(dict):
    """The four buckets, a plain dict to every reader (the data model is unchanged: equal to the dict of
    the same four keys, serialised as one), with two attributes beside them (agenthub additions):
    ``cache_write``, the input tokens the provider reported writing to its prompt cache (Anthropic
    ``cache_creation_input_tokens``, Bedrock ``cacheWriteInputTokens``, OpenAI ``cache_write_tokens``),
    already counted in ``prompt_tokens``; and ``cache_write_1h``, how many of them were written with the
    1-hour TTL where the wire splits them by TTL (Anthropic ``cache_creation.ephemeral_1h_input_tokens``,
    Bedrock ``cacheDetails``), None where it does not (the writes are then priced at the model's 5-minute
    or only write price); and ``service_tier``, the tier the answer says it was billed at (OpenAI's
    ``service_tier``: ``"standard"``, ``"priority"`` or ``"flex"``), None where it says none of them;
    and ``output_image_tokens``, how many of ``response_tokens`` are image tokens (Gemini's
    ``candidatesTokensDetails`` entry of modality ``IMAGE``), billed at the model's image-output price,
    None where the wire says no image tokens; and the audio tokens the wire counts (billed at the model's
    audio prices): ``input_audio_tokens``, how many of ``prompt_tokens`` are audio (OpenAI
    ``prompt_tokens_details.audio_tokens``, Gemini's ``promptTokensDetails`` entry of modality ``AUDIO`` less the
    cached part), ``cached_audio_tokens``, how many of ``cached_tokens`` are (Gemini's ``cacheTokensDetails``
    ``AUDIO``), and ``output_audio_tokens``, how many of ``response_tokens`` are (OpenAI
    ``completion_tokens_details.audio_tokens``, Gemini's ``candidatesTokensDetails`` ``AUDIO``), each None where
    the wire says none; and ``image_tool_calls``, how many images OpenAI's ``image_generation`` tool made in the
    turn (Responses ``image_generation_call`` items): OpenAI bills them at the image model's rates and the usage
    it reports counts none of that, so such a turn's price is unknown (``agenthub.cost`` says None), never the
    text model's part alone.  ``agenthub.cost`` and telemetry read them."""

    __slots__ = ("cache_write", "cache_write_1h", "service_tier", "output_image_tokens", "input_audio_tokens",
                 "cached_audio_tokens", "output_audio_tokens", "image_tool_calls")
    cache_write: Optional[int]
    cache_write_1h: Optional[int]
    service_tier: Optional[str]
    output_image_tokens: Optional[int]
    input_audio_tokens: Optional[int]
    cached_audio_tokens: Optional[int]
    output_audio_tokens: Optional[int]
    image_tool_calls: Optional[int]

    def __reduce__(self) -> Any:  # pickles (every protocol) and copies keep the counts
        return (_usage, (dict(self),) + tuple(getattr(self, name, None) for name in Usage.__slots__))


def _usage(buckets: Any, written: Optional[int], written_1h: Optional[int], tier: Optional[str],
           images: Optional[int] = None, audio_in: Optional[int] = None, audio_cached: Optional[int] = None,
           audio_out: Optional[int] = None, tool_images: Optional[int] = None) -> "Usage":
    out = Usage(buckets)
    out.cache_write = written
    out.cache_write_1h = written_1h
    out.service_tier = tier
    out.output_image_tokens = images
    out.input_audio_tokens = audio_in
    out.cached_audio_tokens = audio_cached
    out.output_audio_tokens = audio_out
    out.image_tool_calls = tool_images
    return out


def _carried(buckets: Any, **changes: Any) -> "Usage":
    """A ``Usage`` of ``buckets``' four buckets carrying what ``buckets`` carries, ``changes`` replacing some."""
    return _usage(buckets, *(changes[name] if name in changes else getattr(buckets, name, None)
                             for name in Usage.__slots__))


def with_output_images(buckets: Any, count: Any) -> Any:
    """``buckets`` carrying how many of their ``response_tokens`` are image tokens (``Usage.output_image_tokens``,
    at most ``response_tokens``); as they are when the wire says none (or is not a token count, or there is no
    usage)."""
    count = usage_count(count)
    if not count or not isinstance(buckets, dict):
        return buckets
    count = min(count, usage_count(buckets.get("response_tokens")) or 0)
    if not count:
        return buckets
    return _carried(buckets, output_image_tokens=count)


def with_audio(buckets: Any, input_audio: Any = None, cached_audio: Any = None, output_audio: Any = None) -> Any:
    """``buckets`` carrying the audio tokens the wire counts: of ``prompt_tokens`` (``Usage.input_audio_tokens``),
    of ``cached_tokens`` (``cached_audio_tokens``), of ``response_tokens`` (``output_audio_tokens``), each at most
    its bucket (a count that is not a token count, or zero, is left out); as they are when there are none."""
    if not isinstance(buckets, dict):
        return buckets
    counts = {}
    for name, count, bucket in (("input_audio_tokens", input_audio, "prompt_tokens"),
                                ("cached_audio_tokens", cached_audio, "cached_tokens"),
                                ("output_audio_tokens", output_audio, "response_tokens")):
        count = min(usage_count(count) or 0, usage_count(buckets.get(bucket)) or 0)
        if count:
            counts[name] = count
    return _carried(buckets, **counts) if counts else buckets


def with_image_tool_calls(buckets: Any, count: Any) -> Any:
    """``buckets`` carrying how many images OpenAI's ``image_generation`` tool made in the turn
    (``Usage.image_tool_calls``: billed apart, at the image model's rates, which the usage does not count); as they
    are when it made none (or the count is not one, or there is no usage)."""
    count = usage_count(count)
    if not count or not isinstance(buckets, dict):
        return buckets
    return _carried(buckets, image_tool_calls=count)


def with_cache_write(buckets: Any, written: Any, written_1h: Any = None) -> Any:
    """``buckets`` carrying the wire's cache-write count (``Usage.cache_write``) and, where the wire gives
    it, the part written with the 1-hour TTL (``Usage.cache_write_1h``, at most the count); as they are
    when the provider reported no write (or no token count)."""
    written = usage_count(written)
    if written is None:
        return buckets
    hour = usage_count(written_1h)
    return _carried(buckets, cache_write=written, cache_write_1h=hour if hour is not None and hour <= written else None)


#: what a ``Usage`` carries beside its four buckets (each priced: ``agenthub.cost`` reads them)
USAGE_EXTRAS = ("cache_write", "cache_write_1h", "output_image_tokens", "input_audio_tokens", "cached_audio_tokens",
                "output_audio_tokens", "image_tool_calls", "service_tier")


def usage_extras(usage: Any) -> Dict[str, Any]:
    """What ``usage`` carries beside its four buckets (``USAGE_EXTRAS``, those it has), JSON-ready: what a
    usage written as JSON (the serve wire, a response cache entry, a run's journal) keeps beside the data model's
    four buckets, so the usage read back (``with_usage_extras``) is priced as the one written."""
    return {name: value for name in USAGE_EXTRAS if (value := getattr(usage, name, None)) is not None}


def with_usage_extras(buckets: Any, extras: Any) -> Any:
    """``buckets`` (four buckets read back from JSON) carrying ``extras`` (``usage_extras`` of the usage they
    were), each checked as a wire's count is (a count that is not one, or more image tokens than output, is left
    out); ``buckets`` as they are when there is nothing to carry."""
    if type(extras) is not dict or not extras or not isinstance(buckets, dict):
        return buckets
    if extras.get("cache_write") is not None:
        buckets = with_cache_write(buckets, extras["cache_write"], extras.get("cache_write_1h"))
    buckets = with_output_images(buckets, extras.get("output_image_tokens"))
    buckets = with_audio(buckets, extras.get("input_audio_tokens"), extras.get("cached_audio_tokens"),
                         extras.get("output_audio_tokens"))
    buckets = with_image_tool_calls(buckets, extras.get("image_tool_calls"))
    return with_service_tier(buckets, extras.get("service_tier"), CATALOG_TIERS)  # (the catalog's tier names)


#: a wire's service tier -> the catalog tier the answer is billed at (``standard``: the standard prices); OpenAI's
#: ``service_tier`` says the tier that served the request (``auto`` and ``scale`` say no list price: left out)
SERVICE_TIERS = {"default": "standard", "standard": "standard", "priority": "priority", "flex": "flex"}


#: the tiers agenthub's serve wire names (``usage_metadata.service_tier``): the catalog's names of the tier a turn was
#: priced at, ``fast`` too (a row whose ``default_config`` asks ``fast_mode``, its upstream saying no tier) and
#: ``regional`` (Claude on a Vertex AI regional endpoint: ``catalog.endpoint_tier``)
CATALOG_TIERS = dict(SERVICE_TIERS, fast="fast", regional="regional")


def with_service_tier(buckets: Any, said: Any, names: Mapping[str, str] = SERVICE_TIERS) -> Any:
    """``buckets`` carrying the service tier the answer says it was billed at (``Usage.service_tier``, one of
    ``names``' values: a wire's word -> the catalog's tier); as they are when it says none of them (or there is
    no usage)."""
    tier = names.get(said) if isinstance(said, str) else None
    if tier is None or not isinstance(buckets, dict):
        return buckets
    return _carried(buckets, service_tier=tier)


class StreamEnd(object):
    """Yielded by a provider parser once its protocol's terminal marker arrived.

    ``replayable``: the turn carried something the next request must send back even
    though it holds no text, tool call or media (an Anthropic server-tool block a
    ``pause_turn`` stops on): such a turn is not an EmptyResponseError.
    ``response_id`` / ``model``: the answer's id and the model the server said answered, where the wire
    carries them (None: it did not); they ride on the stop event (``StopEvent``), outside the data model.
    """

    __slots__ = ("usage", "finish_reason", "replayable", "response_id", "model")

    def __init__(self, usage: Optional[UsageMetadata] = None, finish_reason: Optional[str] = None,
                 replayable: bool = False, response_id: Any = None, model: Any = None) -> None:
        self.usage = usage
        self.finish_reason = finish_reason
        self.replayable = replayable
        self.response_id = response_id if isinstance(response_id, str) and response_id else None
        self.model = model if isinstance(model, str) and model else None

    def __repr__(self) -> str:
        return "StreamEnd(usage={!r}, finish_reason={!r})".format(self.usage, self.finish_reason)


#: every delta event's fields but its item and time (``drive`` copies it per event)
_DELTA = {"role": "assistant", "event_type": "delta", "content_items": None, "usage_metadata": None,
          "finish_reason": None, "created_at": 0}  # type: Dict[str, Any]


class StopEvent(dict):
    """The stop event ``drive`` yields: a plain dict to every reader (equal to the dict of the same keys,
    serialised as one; a copy or a pickle is a plain dict), with two attributes beside its keys, read by
    the attempt loop (``Attempt.response_id``, ``Attempt.response_model``): ``response_id``, the answer's
    id, and ``response_model``, the model the server said answered (None where the wire said none)."""

    __slots__ = ("response_id", "response_model")

    def __reduce__(self) -> Any:
        return (dict, (dict(self),))


def _stop_event(stamp: Optional[List[int]], usage: Any, finish: Any, end: "StreamEnd") -> UniEvent:
    event = StopEvent(_event("stop", [], stamp, usage, finish))
    event.response_id = end.response_id
    event.response_model = end.model
    return event  # type: ignore[return-value]


def _event(event_type: str, items: List[Any], stamp: Optional[List[int]], usage: Any = None,
           finish: Any = None) -> UniEvent:
    """A start or stop event (``drive``'s ``stamp`` gives its time, as for the deltas)."""
    return {
        "role": "assistant",
        "event_type": event_type,  # type: ignore[typeddict-item]
        "content_items": items,
        "usage_metadata": usage,
        "finish_reason": finish,  # type: ignore[typeddict-item]
        "created_at": stamp[0] if stamp is not None else time.time_ns() // 1000000,
    }


#: an item's fields that are not checked by ``_unsendable``: text a collect makes whole (a lone UTF-16 half
#: becomes U+FFFD there), an argument fragment (a character may be split between two; the assembler reads
#: the joined text: toolcalls R6), a complete call's arguments (R6 again), and the opaque fidelity (what a
#: server put there is kept as it came, and written leniently where it is written: jobs, traces)
_FREE_FIELDS = frozenset(["type", "text", "thinking", "arguments", "fidelity"])
#: items made of free fields alone
_PLAIN = frozenset(["text", "thinking"])


def _unsendable(item: Mapping[str, Any]) -> Optional[str]:
    """Why no request could carry ``item`` (a content item a server's answer made) back on the next turn, or
    None: a string it names things by (a tool call's name or id, a MIME type) holding a lone surrogate, which
    the next turn's message check (``validate.check_message``) refuses with a ConfigError: said while the
    answer is read, so a stateful client's history and a tool run are never stuck with a call no request can
    answer (its tool_call_id) nor name."""
    for name, value in item.items():
        if name not in _FREE_FIELDS and type(value) is str and not value.isascii():
            try:
                check_json(value, name)
            except ConfigError as exc:
                problem = str(exc)
                return problem if len(problem) <= 300 else problem[:297] + "..."
    return None


def now_ms() -> int:
    """The time now, in Unix milliseconds (what ``created_at`` holds)."""
    return time.time_ns() // 1000000


def drive(parts: Iterable[Any], client: str = "", stamp: Optional[List[int]] = None) -> Iterator[UniEvent]:
    """Provider parts (content items, then a StreamEnd) -> UniEvents in the stream grammar (``check_stream``).

    ``created_at``: with ``stamp`` (a one-item list the reader keeps at the time the bytes being parsed
    were read: ``Protocol.read``, ``transport.BodyStream.iter_chunks``), that time: every event decoded
    from one read (a burst's many) carries the same; without it, the time each event is made.

    Raises StreamProtocolError when the parts end without a StreamEnd (the body was
    cut before the terminal marker) or when a payload had the wrong shape (any
    KeyError/TypeError/... inside a parser: the promise is that bad server input only
    ever raises AgentHubError), and EmptyResponseError for a turn with nothing to replay.
    """
    started = False
    substantive = False
    tool_calls = False
    end = None
    clock = time.time_ns  # locals: this loop runs once per event
    stamped_ = stamp is not None
    end_type = StreamEnd
    calling = False  # a tool call was announced and is not complete yet
    held = []  # type: List[Any]  # other items that arrived meanwhile: emitted after it (rule 5: contiguous)
    delta = _DELTA.copy  # a delta event: the template's copy, then its two fields (a fifth cheaper than the literal)
    try:
        for part in parts:
            if part.__class__ is end_type:  # (not type(part): a builtin call costs three times more on 3.8)
                end = part
                out = held  # type: Any
            else:
                kind = part["type"]
                if started and (kind == "text" and not calling or kind == "partial_tool_call" and not part["name"]):
                    # the rows nearly every event takes (a text delta, an argument fragment): one item
                    # straight out; the general path below gives the same result (and checks an announced
                    # call's name and id: _unsendable)
                    if kind == "text" and part["text"]:
                        substantive = True
                    event = delta()
                    event["content_items"] = [part]
                    event["created_at"] = stamp[0] if stamped_ else clock() // 1000000  # type: ignore[index]
                    yield event
                    continue
                if kind == "partial_tool_call":
                    calling = calling or bool(part["name"])
                    out = (part,)
                elif not calling:
                    out = (part,)
                elif kind == "tool_call":
                    calling = False
                    out = [part] + held
                    held = []
                else:
                    held.append(part)
                    continue
            for item in out:
                kind = item["type"]
                if kind not in _PLAIN:
                    problem = _unsendable(item)
                    if problem is not None:
                        raise StreamProtocolError("the {} answer's {} item cannot be sent back: {}".format(
                            client or "provider", kind, problem), client=client)
                if not started:
                    started = True
                    yield _event("start", [], stamp)
                if kind == "text":
                    if item["text"]:
                        substantive = True
                elif kind in _SUBSTANTIVE:
                    substantive = True
                    if kind == "tool_call":
                        tool_calls = True
                event = delta()
                event["content_items"] = [item]
                event["created_at"] = stamp[0] if stamped_ else clock() // 1000000  # type: ignore[index]
                yield event
            if end is not None:
                break
    except AgentHubError:
        raise
    except (KeyError, TypeError, AttributeError, IndexError, ValueError, UnicodeError, RecursionError) as exc:
        raise StreamProtocolError(
            "malformed payload in the {} stream: {}: {}".format(client or "provider", type(exc).__name__, exc),
            client=client,
        ) from exc
    if end is None:
        raise StreamProtocolError(
            "the {} stream ended before its terminal marker (cut off?)".format(client or "provider"), client=client,
            truncated=True, retryable=True,
        )
    usage = checked_usage(end.usage, client)
    finish = end.finish_reason if end.finish_reason in _FINISH_REASONS else "unknown"
    if tool_calls and end.finish_reason in (None, "stop"):
        finish = "tool_call"
    if not substantive and not end.replayable:
        raise EmptyResponseError(
            "the {} response finished with no text, tool call or media (finish_reason={}){}".format(
                client or "provider", finish, ": max_tokens ran out before an answer began (thinking spends them "
                                              "too): raise max_tokens, or lower thinking_level"
                if finish == "length" else ""),
            client=client,
            finish_reason=finish,
            usage_metadata=usage,
        )
    if not started:  # pragma: no cover - a substantive turn has items
        yield _event("start", [], stamp)
    yield _stop_event(stamp, usage, finish, end)


# -- collect ------------------------------------------------------------------------------------

_MERGEABLE = {"text": "text", "thinking": "thinking"}


def collect(events: Iterable[UniEvent]) -> AssistantMessage:
    """Fold a finished event list into the assistant message.

    Consecutive text (or thinking) deltas merge: a delta without fidelity joins the
    open item; a delta whose fidelity equals the open item's joins it; the first
    fidelity arriving on an item that had none is taken by it and closes it (an
    Anthropic signature, a Gemini thought signature on the last part); any other
    fidelity starts a new item.  Fidelity is kept as it came.  Empty text or
    thinking with no fidelity is dropped; partial tool calls are dropped (the
    complete tool_call follows them).  Usage, finish reason and created_at come
    from the stop event.  A merged text is ``whole_text`` of its deltas joined: a
    character's UTF-16 halves sent in two deltas are that character, a half
    alone is U+FFFD (the events keep what each delta said).
    """
    collector = Collector()
    add = collector.add
    # what is no list of event dicts is the caller's mistake, said in words (an error the events' own iterator
    # raises, a live stream's, goes out as it is)
    try:
        iterator = iter(events)
    except TypeError:
        raise _not_events(events) from None
    for event in iterator:
        try:
            add(event)
        except (AttributeError, TypeError):
            raise _not_events(event) from None
    try:
        return collector.message()
    except (AttributeError, TypeError):
        raise _not_events(events) from None


def _not_events(what: Any) -> ConfigError:
    return ConfigError("collect takes UniEvents (dicts with event_type and content_items, each item a dict with "
                       "its fields), got something else (a {}); check_stream(events) names what is wrong".format(
                           type(what).__name__))


class _Pieces(object):
    """The text of one mergeable item as it grows: joined every ``_JOIN`` pieces, so a million
    one-character deltas cost about a million characters, not a million list entries."""

    __slots__ = ("done", "pending")

    def __init__(self, first: str) -> None:
        self.done = []  # type: List[str]
        self.pending = [first]

    def add(self, text: str) -> None:
        pending = self.pending
        pending.append(text)
        if len(pending) >= _JOIN:
            self.done.append("".join(pending))
            self.pending = []

    def value(self) -> str:
        if not self.done and len(self.pending) == 1:
            return whole_text(self.pending[0])
        return whole_text("".join(self.done + self.pending))


def whole_text(text: str) -> str:
    """``text`` as UTF-8 can carry it: each high surrogate followed by a low one (the two UTF-16 halves of
    one character, which a gateway slicing strings by UTF-16 index sends in two deltas: ``"\\ud83d"``, then
    ``"\\ude00"``) joined into that character, and each half left without a partner replaced by U+FFFD
    (with a warning).  What the collected message holds of a text or thinking item: the events keep each
    delta's text as the server sent it."""
    if text_is_utf8(text):
        return text
    whole = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    lone = whole.count("\ufffd") - text.count("\ufffd")
    if lone:
        logging.getLogger("agenthub").warning(
            "the answer's text held %d lone surrogate(s) (half of a UTF-16 pair, without its other half): each "
            "is U+FFFD in the collected message", lone)
    return whole


#: a surrogate code point (UTF-8 has none)
_SURROGATE = re.compile("[\ud800-\udfff]")


def surrogates_escaped(json_text: str) -> str:
    """JSON text (``json.dumps(..., ensure_ascii=False)``) with each surrogate code point written as its escape
    (``\\ud83d``): text UTF-8 carries, which ``json.loads`` reads back as the same strings (a high and a low one
    side by side read back as the character they are the halves of).  A surrogate can only be in a string of
    such text, where its escape means it."""
    if text_is_utf8(json_text):
        return json_text
    return _SURROGATE.sub(lambda found: "\\u{:04x}".format(ord(found.group())), json_text)


def surrogates_shown(text: str) -> str:
    """``text`` for a reader, with each lone surrogate written as ``\\ud83d`` (UTF-8 carries it; a strict UTF-8
    stdout refuses the surrogate itself)."""
    return text if text_is_utf8(text) else text.encode("utf-8", "backslashreplace").decode("utf-8")


def text_is_utf8(text: str) -> bool:
    """Can UTF-8 carry ``text`` (it holds no lone surrogate)?  (Text of one byte a character is answered without
    reading it: ``types.lone_surrogate_in``.)"""
    return not lone_surrogate_in(text)


_JOIN = 256


MERGE_JOIN, MERGE_SEAL, MERGE_SKIP, MERGE_NEW = "join", "join and seal", "skip", "new"


def merge_step(open_kind: Optional[str], open_fidelity: Any, sealed: bool, kind: str, text: str,
               fidelity: Any) -> str:
    """``collect``'s rule for a text or thinking item after the open one (``open_kind`` None: none
    is open): ``MERGE_JOIN`` its text to the open item; ``MERGE_SEAL``: join it, the open item takes its
    fidelity and is closed (the next item of its kind starts a new one); ``MERGE_SKIP`` (empty, no
    fidelity); ``MERGE_NEW``: it opens an item of its own.  Written once, for ``Collector`` and for
    ``Fold`` (a parser that must know where its next item will land)."""
    if open_kind == kind and not sealed:
        if not fidelity:
            return MERGE_JOIN
        if not open_fidelity:
            return MERGE_SEAL
        if open_fidelity == fidelity:
            return MERGE_JOIN
    if not text and not fidelity:
        return MERGE_SKIP
    return MERGE_NEW


class Fold(object):
    """What ``collect`` holds open after the items added so far: ``add(item)`` for each item a parser
    yields (text deltas that surely join the open item may be left out), then ask before yielding
    an item that carries only fidelity, so that it lands where it is meant to."""

    __slots__ = ("kind", "fidelity", "sealed")

    def __init__(self) -> None:
        self.kind = None  # type: Optional[str]  # the open item's type ("text" / "thinking"), None: none
        self.fidelity = None  # type: Any  # its fidelity
        self.sealed = False  # it took a fidelity that closed it

    def add(self, item: Dict[str, Any]) -> None:
        kind = item.get("type")
        field = _MERGEABLE.get(kind)  # type: ignore[arg-type]
        if field is None:
            if kind != "partial_tool_call":  # (collect skips fragments: they close nothing)
                self.kind = None
            return
        fidelity = item.get("fidelity")
        step = merge_step(self.kind, self.fidelity, self.sealed, kind, item.get(field) or "", fidelity)  # type: ignore[arg-type]
        if step is MERGE_SEAL:
            self.fidelity, self.sealed = fidelity, True
        elif step is MERGE_NEW:
            self.kind, self.fidelity, self.sealed = kind, fidelity, False

    def open(self, kind: str) -> bool:
        """An item of ``kind`` without fidelity yielded now would join the open item."""
        return self.kind == kind and not self.sealed

    def plain(self, kind: str) -> bool:
        """The open item is of ``kind`` and carries no fidelity (a fidelity yielded now would seal it)."""
        return self.kind == kind and not self.sealed and not self.fidelity

    def carrying(self, kind: str) -> bool:
        """The open item is of ``kind`` and carries a fidelity (text yielded now would join it)."""
        return self.kind == kind and not self.sealed and bool(self.fidelity)

    def own_kind(self, natural: str) -> str:
        """The kind an empty carrier must take to be an item of its own: never folded into (and
        sealing) the open plain item of its natural kind."""
        if self.plain(natural):
            return "thinking" if natural == "text" else "text"
        return natural


class Collector(object):
    """``collect`` as the events pass: ``add(event)`` for each, ``message()`` once they are all in.

    ``message()`` equals ``collect`` of the same events, but no event is kept: memory follows
    the size of the answer, not the number of events (a stateful or traced call folds with it).
    """

    __slots__ = ("_items", "_texts", "_open", "_sealed", "_stop", "_last", "_kind", "_pieces")

    def __init__(self) -> None:
        self._items = []  # type: List[Dict[str, Any]]
        self._texts = []  # type: List[Optional[_Pieces]]  # the text of items[i] when mergeable
        self._open = -1  # index in items of the mergeable item still open
        self._sealed = False
        self._stop = None  # type: Optional[Any]
        self._last = None  # type: Optional[Any]
        self._kind = None  # type: Optional[str]  # the open item's type, and its text
        self._pieces = None  # type: Optional[_Pieces]

    def add(self, event: Any) -> None:
        self._last = event
        if event.get("event_type") == "stop":
            self._stop = event
            return
        content = event.get("content_items")
        if not content:
            return
        if len(content) == 1 and self._open >= 0 and not self._sealed:
            # the common case: one more piece of the open text (or thinking), no fidelity
            item = content[0]
            kind = item.get("type")
            if kind == self._kind and not item.get("fidelity"):
                self._pieces.add(item.get(kind) or "")  # type: ignore[union-attr]  # field name == type
                return
        items = self._items
        texts = self._texts
        for item in content:
            kind = item.get("type")
            if kind == "partial_tool_call":
                continue
            field = _MERGEABLE.get(kind)
            if field is None:
                items.append(dict(item))
                texts.append(None)
                self._open = -1
                continue
            text = item.get(field) or ""
            fidelity = item.get("fidelity")
            open_index = self._open
            current = items[open_index] if open_index >= 0 else None
            step = merge_step(current and current["type"], current and current.get("fidelity"), self._sealed,
                              kind, text, fidelity)
            if step is MERGE_JOIN:
                texts[open_index].add(text)  # type: ignore[union-attr]
                continue
            if step is MERGE_SEAL:
                texts[open_index].add(text)  # type: ignore[union-attr]
                current["fidelity"] = fidelity  # type: ignore[index]
                self._sealed = True
                continue
            if step is MERGE_SKIP:
                continue
            new = {"type": kind, field: text}  # type: Dict[str, Any]
            if fidelity:
                new["fidelity"] = fidelity
            items.append(new)
            self._pieces = _Pieces(text)
            texts.append(self._pieces)
            self._kind = kind
            self._open = len(items) - 1
            self._sealed = False

    def message(self) -> AssistantMessage:
        items = []
        for item, pieces in zip(self._items, self._texts):
            if pieces is not None:
                item = dict(item)
                item[_MERGEABLE[item["type"]]] = pieces.value()
            items.append(item)
        message = {"role": "assistant", "content_items": items}  # type: Dict[str, Any]
        if self._stop is not None:
            message["usage_metadata"] = self._stop.get("usage_metadata")
            message["finish_reason"] = self._stop.get("finish_reason")
        if self._last is not None:
            message["created_at"] = self._last.get("created_at")
        message.setdefault("usage_metadata", None)
        message.setdefault("finish_reason", None)
        return message  # type: ignore[return-value]


# -- check_stream ---------------------------------------------------------------------------------


def item_problem(item: Any) -> Optional[str]:
    """What makes ``item`` no content item (an unknown type, a field of the wrong type), or None."""
    item_type = item.get("type") if isinstance(item, dict) else None
    fields = _ITEM_FIELDS.get(item_type) if isinstance(item_type, str) else None  # (a list: no TypeError)
    if fields is None:
        return "unknown content item type {!r}".format(item_type)
    for name, expected in fields:
        if not isinstance(item.get(name), expected):
            return "{} item field {!r} is a {}".format(item_type, name, expected.__name__)
    if "fidelity" in item and not isinstance(item["fidelity"], dict):
        return "fidelity is a JSON object"
    return None


def check_stream(events: Iterable[UniEvent]) -> None:
    """Raise StreamProtocolError naming the first stream-grammar rule ``events`` break
    (the rules are numbered below, where each is checked)."""
    def fail(position: int, rule: str) -> None:
        raise StreamProtocolError("event {}: {}".format(position, rule))

    try:
        events = list(events)
    except TypeError:
        raise StreamProtocolError("events are an iterable of UniEvents, not {}".format(
            type(events).__name__)) from None

    if not events:
        fail(0, "rule 1: a stream has at least a start and a stop event")
    open_call = None  # type: Optional[Dict[str, Any]]
    fragments = []  # type: List[str]
    tool_calls = 0
    for position, event in enumerate(events):
        if not isinstance(event, dict):
            fail(position, "an event is a dict")
        if event.get("role") != "assistant":
            fail(position, "role is 'assistant'")
        created = event.get("created_at")
        if type(created) is not int or created < 0:
            fail(position, "rule 7: created_at is Unix milliseconds (an int)")
        kind = event.get("event_type")
        items = event.get("content_items")
        if not isinstance(items, list):
            fail(position, "content_items is a list")
        if kind == "unused":
            fail(position, "rule 4: 'unused' is never emitted")
        if position == 0:
            if kind != "start" or items:
                fail(position, "rule 1: the first event is 'start' with no content items")
            if event.get("usage_metadata") is not None or event.get("finish_reason") is not None:
                fail(position, "rule 1: 'start' carries no usage or finish reason")
            continue
        if position == len(events) - 1:
            if kind != "stop":
                fail(position, "rule 3: the last event is 'stop'")
            if items:
                fail(position, "rule 3: 'stop' has no content items")
            usage = event.get("usage_metadata")
            if not isinstance(usage, dict) or sorted(usage) != sorted(_USAGE_KEYS):
                fail(position, "rule 3: 'stop' carries usage_metadata with exactly the four buckets")
            for key in _USAGE_KEYS:
                value = usage[key]
                if value is not None and (type(value) is not int or value < 0):
                    fail(position, "rule 3: usage bucket {} is a non-negative int or None".format(key))
            finish = event.get("finish_reason")
            if not isinstance(finish, str) or finish not in _FINISH_REASONS:
                fail(position, "rule 3: 'stop' has a finish_reason in stop/length/tool_call/unknown")
            if open_call is not None:
                fail(position, "rule 5: tool call {!r} never completed".format(open_call.get("name")))
            if tool_calls and finish == "stop":
                fail(position, "rule 6: a turn that asked for tools finishes with 'tool_call'")
            continue
        if kind != "delta":
            fail(position, "rule 2: events between start and stop are 'delta' (got {!r})".format(kind))
        if len(items) != 1:
            fail(position, "rule 2: a delta carries exactly one content item")
        if event.get("usage_metadata") is not None or event.get("finish_reason") is not None:
            fail(position, "rule 2: a delta carries no usage or finish reason")
        item = items[0]
        problem = item_problem(item)
        if problem is not None:
            fail(position, problem)
        item_type = item["type"]
        if item_type == "partial_tool_call":
            if open_call is None:
                if not item["name"] or not item["tool_call_id"]:
                    fail(position, "rule 5: a tool call is announced with a non-empty name and tool_call_id")
                open_call = item
                fragments = [item["arguments"]]
            else:
                if item["name"] or item["tool_call_id"]:
                    fail(position, "rule 5: argument fragments have empty name and tool_call_id "
                                   "(or a call was announced before the previous one completed)")
                fragments.append(item["arguments"])
        elif item_type == "tool_call":
            if open_call is None:
                fail(position, "rule 5: a complete tool_call follows its announcement")
            if item["name"] != open_call["name"] or item["tool_call_id"] != open_call["tool_call_id"]:
                fail(position, "rule 5: the complete tool_call has the name and id it was announced with")
            joined = "".join(fragments)
            try:
                streamed = _json_loads(joined) if joined.strip() else {}
            except ValueError:
                streamed = None
            if streamed != item["arguments"] and not _halves_joined(joined, item["arguments"]):
                fail(position, "rule 5: the argument fragments concatenate to the complete arguments")
            open_call = None
            tool_calls += 1
        elif open_call is not None:
            fail(position, "rule 5: a tool call's events are contiguous")


def _halves_joined(joined: str, arguments: Any) -> bool:
    """Do the fragments concatenate to ``arguments`` once a character's two UTF-16 halves sent in two fragments
    are joined (``paired_halves``, what the tool-call machine does)?"""
    if text_is_utf8(joined):
        return False
    try:
        return _json_loads(paired_halves(joined)) == arguments
    except ValueError:
        return False
