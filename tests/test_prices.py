"""Limits and list prices per model, agenthub.cost, and `agenthub models` showing them."""

import re

import pytest

import agenthub
from agenthub.__main__ import main, model_line
from agenthub.registry import PRICES, list_models, model_price, route_for

USAGE = {"cached_tokens": 1000, "prompt_tokens": 2000, "thoughts_tokens": 300, "response_tokens": 500}


def test_cost_is_each_bucket_times_its_price():
    # claude-sonnet-5: 2 prompt, 0.20 cached, 10 thinking and response (USD per 1M tokens)
    assert agenthub.cost("claude-sonnet-5", USAGE) == pytest.approx((2000 * 2 + 1000 * 0.2 + 300 * 10 + 500 * 10) / 1e6)
    # deepseek-v4-pro (peak): 1.32 prompt, 0.044 cached, 3.96 output
    assert agenthub.cost("deepseek-v4-pro", USAGE) == pytest.approx(
        (2000 * 1.32 + 1000 * 0.044 + 800 * 3.96) / 1e6)
    assert agenthub.cost("gpt-5.5", {"cached_tokens": None, "prompt_tokens": 10, "thoughts_tokens": None,
                                     "response_tokens": 0}) == pytest.approx(10 * 5 / 1e6)


def test_cost_is_none_when_a_price_is_unknown():
    assert agenthub.cost("my-model", USAGE) is None  # no price for the model
    assert agenthub.cost("claude-sonnet-4-6", USAGE) is None  # cached tokens, and no cached price on file
    assert agenthub.cost("claude-sonnet-4-6", dict(USAGE, cached_tokens=0)) == pytest.approx(
        (2000 * 3 + 800 * 15) / 1e6)  # no cached tokens: the price is known
    assert agenthub.cost("claude-sonnet-5", None) is None
    assert agenthub.cost("gpt-5.5-pro", USAGE) is None  # another model, not a dated gpt-5.5


def test_model_names_match_with_a_date_suffix_only():
    assert model_price("claude-sonnet-4-6-20260217").name == "claude-sonnet-4-6"
    assert model_price("gpt-5.5-2026-04-23").name == "gpt-5.5"
    assert model_price("claude-sonnet-5-5").name == "claude-sonnet-5-5"
    assert model_price("claude-sonnet-5").name == "claude-sonnet-5"
    assert model_price("anthropic/claude-sonnet-5") is None  # a gateway's price is its own


def test_every_entry_is_dated_sourced_and_belongs_to_a_row():
    for entry in PRICES:
        assert re.match(r"^\d{4}-\d{2}-\d{2}$", entry.taken), entry
        assert entry.source.startswith("https://"), entry
        assert route_for(entry.name) is not None, entry
        assert entry.thoughts == entry.response  # thinking is billed as output by every provider listed
        for value in (entry.prompt, entry.cached, entry.response):
            assert value is None or value > 0
        if entry.prompt is not None and entry.cached is not None:
            assert entry.cached < entry.prompt
    rows = {row["label"]: row for row in list_models()}
    assert [m["model"] for m in rows["claude-*"]["models"]][:2] == ["claude-opus-4-8", "claude-opus-5"]
    assert rows["claude-*"]["models"][0] == {
        "model": "claude-opus-4-8", "context_window": 1000000, "max_output": 128000,
        "usd_per_1m": {"prompt_tokens": 5.0, "cached_tokens": 0.5, "thoughts_tokens": 25.0, "response_tokens": 25.0},
        "taken": "2026-12-01", "source": "https://platform.claude.com/docs/en/about-claude/pricing", "note": ""}


def test_agenthub_models_shows_limits_and_prices(capsys):
    assert main(["models"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "    claude-sonnet-5: context 1M, output 128K; $2 / 0.2 / 10 / 10 (2026-12-01)" in out
    assert "    claude-sonnet-4-6: context 1M, output 128K; $3 / ? / 15 / 15 (2026-12-01)" in out
    assert ("    deepseek-v4-pro: context 1M, output 384K; $1.32 / 0.044 / 3.96 / 3.96 (2026-12-01; peak-hour "
            "price; off-peak is half)") in out
    assert model_line({"model": "x", "context_window": None, "max_output": 1500, "usd_per_1m": {},
                       "taken": "2026-12-01"}) == "x: context ?, output 1500; $? / ? / ? / ? (2026-12-01)"
