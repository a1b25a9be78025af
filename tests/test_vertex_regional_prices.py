"""Claude on Vertex AI costs 10% more at a regional endpoint than at the global one, from Claude Sonnet 4.5 on
(Anthropic's Vertex AI guide: "regional endpoints include a 10% pricing premium over global endpoints"; older
models keep their pricing).  A vertex-anthropic call at a location other than ``global`` was priced at the global
(Anthropic API) prices; the catalog's ``regional`` tier prices it, and one regional turn costs one number, the
hand-computed one, on every path (``agenthub.cost`` of its usage, a Budget's hold and settlement, a run's
cost_usd, a job row and JobSummary, serve's /v1/metrics and the Budget of serve's client, a cache hit's usage, a
journal replay)."""

import os

import pytest

from money_clock import fix_clock
from price_paths import prices_on_every_path
from server_support import Route, Upstream

from agenthub import AutoLLMClient, Budget, BudgetExceededError, ResponseCache, cost
from agenthub.catalog import endpoint_tier, find_model
from agenthub.stores import MemoryStore

RECORDINGS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "agenthub", "recordings")
with open(os.path.join(RECORDINGS, "anthropic", "weather_answer.sse"), "rb") as _handle:
    ANSWER = _handle.read()  # claude's recorded answer: prompt 38, cached 412, response 24 tokens
MODEL = "claude-sonnet-4-6"
MESSAGES = [{"role": "user", "content_items": [{"type": "text", "text": "hi"}]}]
GLOBAL = (38 * 3 + 412 * 0.3 + 24 * 15) / 1e6
REGIONAL = (38 * 3.3 + 412 * 0.33 + 24 * 16.5) / 1e6


def _kwargs(up, location):
    return {"client_type": "vertex", "api_key": "ya29.test-token-0123456789", "max_retries": 0,
            "base_url": up.url + "/v1/projects/vtx-proj/locations/" + location}


def test_the_catalog_prices_the_regional_endpoints_of_claude_from_sonnet_4_5_on():
    for model in ("claude-sonnet-4-5", "claude-haiku-4-5", "claude-opus-4-5", "claude-sonnet-4-6", "claude-opus-4-6",
                  "claude-sonnet-5"):
        row = find_model(model)
        regional = row["tiers"]["regional"]
        assert {key: regional[key] for key in row["prices"] if key != "long_context"} == {
            key: None if value is None else round(value * 1.1, 6) for key, value in row["prices"].items()
            if key != "long_context"}, model
        assert "overrides:endpoint_tiers" in row["sources"]
    level = find_model("claude-sonnet-4-5")["tiers"]["regional"]["long_context"][0]
    assert (level["above_input_tokens"], level["input"], level["output"]) == (200000, 6.6, 24.75)
    for model in ("claude-sonnet-4-20250514", "claude-opus-4-1", "claude-3-7-sonnet-20250219"):
        assert "regional" not in find_model(model)["tiers"], model  # their pricing is unchanged
    url = "https://us-east5-aiplatform.googleapis.com/v1/projects/p/locations/us-east5"
    assert endpoint_tier("vertex-anthropic", "claude-sonnet-4-5@20250929", url) == "regional"
    assert endpoint_tier("vertex-anthropic", "claude-sonnet-4-5@20250929", url.replace("us-east5", "global")) is None
    assert endpoint_tier("vertex-anthropic", "claude-sonnet-4@20250514", url) is None
    assert endpoint_tier("vertex", "gemini-2.5-flash", url) is None  # (no fact of a regional price for Gemini)
    assert endpoint_tier("anthropic", MODEL, url) is None


def test_a_regional_turn_costs_the_regional_price_and_a_global_one_the_global(tmp_path):
    with Upstream() as up:
        up.routes["v1"] = Route(ANSWER)
        regional = AutoLLMClient(MODEL, **_kwargs(up, "us-east5")).response(MESSAGES, {"max_tokens": 1000})
        plain = AutoLLMClient(MODEL, **_kwargs(up, "global")).response(MESSAGES, {"max_tokens": 1000})
        europe = AutoLLMClient(MODEL, **_kwargs(up, "eu")).response(MESSAGES, {"max_tokens": 1000})
        # the hold is at the regional prices too: 5 estimated input tokens as 5-minute writes, 1000 output tokens
        hold = (5 * 3.75 * 1.1 + 1000 * 15 * 1.1) / 1e6
        with pytest.raises(BudgetExceededError) as caught:
            AutoLLMClient(MODEL, budget=Budget(hold * 0.99), **_kwargs(up, "us-east5")).response(
                MESSAGES, {"max_tokens": 1000})
        assert len(up.requests) == 3
    assert caught.value.needed_usd == pytest.approx(hold, rel=1e-12)
    assert cost(MODEL, regional["usage_metadata"]) == pytest.approx(REGIONAL, rel=1e-12)
    assert cost(MODEL, europe["usage_metadata"]) == pytest.approx(REGIONAL, rel=1e-12)
    assert cost(MODEL, plain["usage_metadata"]) == pytest.approx(GLOBAL, rel=1e-12)
    assert regional["usage_metadata"] == plain["usage_metadata"]  # (the data model's four buckets: the same)


def test_one_regional_turn_costs_one_price_on_every_path(tmp_path, monkeypatch):
    fix_clock(monkeypatch, "12:00")
    with Upstream() as up:
        up.routes["v1"] = Route(ANSWER)
        kwargs = _kwargs(up, "us-east5")
        paths = prices_on_every_path(MODEL, kwargs, {"max_tokens": 1000}, MESSAGES, tmp_path)

        def client(**extra):
            return AutoLLMClient(MODEL, **dict(kwargs, **extra))

        cache = ResponseCache(MemoryStore())
        client(cache=cache).response(MESSAGES, {"max_tokens": 1000})
        hit = client(cache=cache)
        paths["cache hit's usage"] = cost(MODEL, hit.response(MESSAGES, {"max_tokens": 1000})["usage_metadata"])
        assert hit.last_route["cache"] == "hit"
        store = MemoryStore()
        client().run(MESSAGES, {"max_tokens": 1000}, tools=[], journal=store, run_id="r-1").result()
        replayed = client().run(MESSAGES, {"max_tokens": 1000}, tools=[], journal=store, run_id="r-1").result()
        assert replayed.replayed_turns == 1
        paths["journal replay"] = replayed.cost_usd
    assert {path: round(price, 12) for path, price in paths.items()} == {path: round(REGIONAL, 12) for path in paths}


def test_the_refresh_script_adds_an_endpoint_tier_scaled_from_the_standard_prices():
    import importlib.util

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    spec = importlib.util.spec_from_file_location("refresh_catalog", os.path.join(root, "scripts", "refresh_catalog.py"))
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    row = {"provider": "anthropic", "id": "claude-sonnet-9", "sources": ["genai-prices"], "tiers": {},
           "prices": {"input": 3, "cached_input": 0.3, "cache_write_5m": 3.75, "cache_write_1h": None, "output": 15,
                      "long_context": [{"above_input_tokens": 200000, "input": 6, "cached_input": 0.6,
                                        "cache_write_5m": 7.5, "cache_write_1h": None, "output": 22.5}]}}
    rule = {"provider": "anthropic", "models": "^claude-sonnet-9$", "tier": "regional", "factor": 1.1,
            "source": "https://example.test/vertex"}
    assert script.apply_endpoint_tiers([row], [rule]) == []
    assert row["tiers"]["regional"] == {"input": 3.3, "cached_input": 0.33, "cache_write_5m": 4.125,
                                        "cache_write_1h": None, "output": 16.5,
                                        "long_context": [{"above_input_tokens": 200000, "input": 6.6, "cached_input": 0.66,
                                                          "cache_write_5m": 8.25, "cache_write_1h": None,
                                                          "output": 24.75}]}
    assert row["sources"] == ["genai-prices", "overrides:endpoint_tiers"]
    assert script.apply_endpoint_tiers([row], [dict(rule, models="^nothing")]) == [
        "https://example.test/vertex: no priced anthropic model matches ^nothing"]
