"""Image output is billed at the image-output price: one Gemini image turn (a local fake stream whose usageMetadata
splits candidatesTokensDetails into IMAGE and TEXT) costs one number, the hand-computed one, on every path
(``agenthub.cost``, a Budget's settlement and its hold, a run's cost_usd, a job row and JobSummary, a batch row,
serve's /v1/metrics and the Budget of serve's client)."""

import os
import pickle

import pytest

from money_clock import fix_clock
from price_paths import prices_on_every_path
from server_support import Route, Upstream

from agenthub import AutoLLMClient, Budget, BudgetExceededError, cost
from agenthub.catalog import find_model
from agenthub.jobs.batch import batch_cost, collect_answer
from agenthub.providers import gemini, gemini_interactions, protocol
from agenthub.stream import checked_usage

MODEL = "gemini-3-pro-image-preview"
MESSAGES = [{"role": "user", "content_items": [{"type": "text", "text": "Draw a banana"}]}]
FIXTURE = os.path.join(os.path.dirname(__file__), "fixtures", "gemini", "image_output.sse")
#: the fixture's usageMetadata: 12 prompt, 18 thoughts, 1296 candidates of which 1290 IMAGE and 6 TEXT;
#: Gemini 3 Pro Image: input 2, text output (thoughts included) 12, image output 120 USD per 1M tokens
HAND = (12 * 2 + (18 + 6) * 12 + 1290 * 120) / 1e6
USAGE_METADATA = {"promptTokenCount": 12, "candidatesTokenCount": 1296, "totalTokenCount": 1326,
                  "thoughtsTokenCount": 18, "candidatesTokensDetails": [{"modality": "TEXT", "tokenCount": 6},
                                                                        {"modality": "IMAGE", "tokenCount": 1290}]}


def _stream():
    with open(FIXTURE, "rb") as handle:
        return handle.read()


def test_the_catalog_prices_gemini_image_output_apart_from_text():
    for model, text, image in (("gemini-2.5-flash-image", 2.5, 30.0), ("gemini-2.5-flash-image-preview", 2.5, 30.0),
                               ("gemini-3.1-flash-image-preview", 3, 60.0), ("gemini-3.1-flash-image", 3, 60.0),
                               ("gemini-3-pro-image-preview", 12, 120.0), ("gemini-3-pro-image", 12, 120.0)):
        row = find_model(model)
        assert (row["prices"]["output"], row["prices"]["output_image"]) == (text, image), model
        assert row["batch"]["output_image"] == image / 2, model  # Google's batch discount
        assert "overrides:image_output_prices" in row["sources"]
    assert "output_image" not in find_model("gemini-2.5-flash")["prices"]


def test_gemini_usage_keeps_the_image_tokens_of_the_output():
    usage = gemini.map_usage(USAGE_METADATA)
    assert usage == {"cached_tokens": None, "prompt_tokens": 12, "thoughts_tokens": 18, "response_tokens": 1296}
    assert usage.output_image_tokens == 1290
    assert pickle.loads(pickle.dumps(usage)).output_image_tokens == 1290
    assert checked_usage(usage).output_image_tokens == 1290  # what a stop event carries
    assert cost(MODEL, usage) == pytest.approx(HAND, rel=1e-12)
    assert cost(MODEL, dict(usage)) == pytest.approx((12 * 2 + (18 + 1296) * 12) / 1e6, rel=1e-12)  # no split: text
    assert gemini.map_usage(dict(USAGE_METADATA, candidatesTokensDetails=[{"modality": "TEXT", "tokenCount": 1296}])
                            ).__class__ is dict  # no image tokens: the plain buckets
    # a count the wire cannot have (more image tokens than output) is held to the output
    assert gemini.map_usage(dict(USAGE_METADATA, candidatesTokensDetails=[{"modality": "IMAGE", "tokenCount": 5000}])
                            ).output_image_tokens == 1296
    assert type(gemini.map_usage(dict(USAGE_METADATA, candidatesTokensDetails=[
        {"modality": "IMAGE", "tokenCount": -3}]))) is dict
    interactions = gemini_interactions.map_usage({
        "total_input_tokens": 12, "total_output_tokens": 1296, "total_thought_tokens": 18,
        "output_tokens_by_modality": [{"modality": "image", "tokens": 1290}, {"modality": "text", "tokens": 6}]})
    assert interactions == usage and interactions.output_image_tokens == 1290


def test_a_budget_holds_image_output_at_the_image_price():
    budget = Budget(5.0)
    held = budget.reserve(MODEL, 12, 4000)
    assert held.needed_usd == pytest.approx((12 * 2 + 4000 * 120) / 1e6, rel=1e-12)
    held.release()
    with Upstream() as up:
        up.routes["gem"] = Route(_stream())
        client = AutoLLMClient(MODEL, client_type="gemini", base_url=up.url + "/gem", api_key="sk-test-0123456789",
                               max_retries=0, budget=Budget(0.3))
        with pytest.raises(BudgetExceededError):  # 4000 image tokens may cost 0.48: never sent
            client.response(MESSAGES, {"max_tokens": 4000})
        assert up.requests == []


def test_one_image_turn_costs_one_price_on_every_path(tmp_path, monkeypatch):
    fix_clock(monkeypatch, "12:00")
    with Upstream() as up:
        up.routes["gem"] = Route(_stream())
        kwargs = {"client_type": "gemini", "base_url": up.url + "/gem", "api_key": "sk-test-0123456789",
                  "max_retries": 0}
        paths = prices_on_every_path(MODEL, kwargs, {"max_tokens": 2000}, MESSAGES, tmp_path)
    # a batch answer (one GenerateContentResponse document) at the batch prices: half of every price
    answer = {"candidates": [{"content": {"role": "model", "parts": [{"text": "Here it is"}]},
                              "finishReason": "STOP"}], "usageMetadata": USAGE_METADATA}
    message = collect_answer(protocol("gemini"), answer, "gemini")
    paths["batch row x 2"] = batch_cost(MODEL, message["usage_metadata"]) * 2
    assert {path: round(price, 12) for path, price in paths.items()} == {path: round(HAND, 12) for path in paths}
