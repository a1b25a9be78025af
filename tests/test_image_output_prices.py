"""Image output is billed at the image-output price: one Gemini image turn (a local fake stream whose usageMetadata
splits candidatesTokensDetails into IMAGE and TEXT) costs one number, the hand-computed one, on every path
(``agenthub.cost``, a Budget's settlement and its hold, a run's cost_usd, a job row and JobSummary, a batch row,
serve's /v1/metrics and the Budget of serve's client)."""

import base64
import json
import os
import pickle

import pytest

from money_clock import fix_clock
from price_paths import prices_on_every_path
from server_support import Route, Upstream

from agenthub import AutoLLMClient, Budget, BudgetExceededError, cost
from agenthub.errors import StreamProtocolError
from agenthub.catalog import find_model
from agenthub.jobs.batch import batch_cost, collect_answer
from agenthub.providers import gemini, gemini_interactions, openai_chat, protocol
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
                               ("gemini-3-pro-image-preview", 12, 120.0), ("gemini-3-pro-image", 12, 120.0),
                               ("gemini-3.1-flash-lite-image", 1.5, 30.0)):
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


def _prices(model, client_type, body, base, tmp_path, monkeypatch):
    """prices_on_every_path for one turn of ``model`` whose upstream answers ``body`` at ``base``, at noon."""
    fix_clock(monkeypatch, "12:00")
    with Upstream() as up:
        up.routes["up"] = Route(body)
        kwargs = {"client_type": client_type, "base_url": up.url + "/up" + base, "api_key": "sk-test-0123456789",
                  "max_retries": 0}
        return prices_on_every_path(model, kwargs, {"max_tokens": 2000}, MESSAGES, tmp_path)


def test_one_image_turn_costs_one_price_on_every_path(tmp_path, monkeypatch):
    paths = _prices(MODEL, "gemini", _stream(), "", tmp_path, monkeypatch)
    # a batch answer (one GenerateContentResponse document) at the batch prices: half of every price
    answer = {"candidates": [{"content": {"role": "model", "parts": [{"text": "Here it is"}]},
                              "finishReason": "STOP"}], "usageMetadata": USAGE_METADATA}
    message = collect_answer(protocol("gemini"), answer, "gemini")
    paths["batch row x 2"] = batch_cost(MODEL, message["usage_metadata"]) * 2
    assert {path: round(price, 12) for path, price in paths.items()} == {path: round(HAND, 12) for path in paths}


# -- OpenRouter's copies of the Gemini image models ---------------------------------------------------------------
# OpenRouter's Chat Completions usage names the image tokens of the output in completion_tokens_details.image_tokens
# (part of completion_tokens) and bills them at Google's image-output price: an answer of 6 prompt tokens, 1299
# completion tokens of which 1290 image tokens reports "cost": 0.0387243, which is 6 * 0.3 + 9 * 2.5 + 1290 * 30
# USD per 1M, not 0.0032493 (every completion token at the text rate)
OR_MODEL = "google/gemini-2.5-flash-image"
OR_USAGE = {"prompt_tokens": 6, "completion_tokens": 1299, "total_tokens": 1305, "cost": 0.0387243, "is_byok": False,
            "prompt_tokens_details": {"cached_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 0, "image_tokens": 1290}}
OR_HAND = (6 * 0.3 + 9 * 2.5 + 1290 * 30) / 1e6
OR_IMAGE = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGNoaGgAAAMEAYFL09IQAAAAAElFTkSuQmCC"


def _openrouter_stream():
    head = {"id": "gen-1", "provider": "Google", "model": OR_MODEL, "object": "chat.completion.chunk",
            "created": 1765226419}
    chunks = [dict(head, choices=[{"index": 0, "delta": {"role": "assistant", "content": "Here it is", "images": [
                  {"type": "image_url", "image_url": {"url": "data:image/png;base64," + OR_IMAGE}, "index": 0}]},
                                   "finish_reason": None}]),
              dict(head, choices=[{"index": 0, "delta": {"role": "assistant", "content": ""},
                                   "finish_reason": "stop"}]),
              dict(head, choices=[{"index": 0, "delta": {"role": "assistant", "content": ""},
                                   "finish_reason": None}], usage=OR_USAGE)]
    return b"".join(b"data: " + json.dumps(chunk).encode() + b"\n\n" for chunk in chunks) + b"data: [DONE]\n\n"


def test_openrouter_usage_keeps_the_image_tokens_of_the_output():
    usage = openai_chat.map_usage(OR_USAGE)
    assert usage == {"cached_tokens": 0, "prompt_tokens": 6, "thoughts_tokens": 0, "response_tokens": 1299}
    assert usage.output_image_tokens == 1290
    assert cost(OR_MODEL, usage) == pytest.approx(OR_HAND, rel=1e-12)
    assert round(OR_HAND, 9) == OR_USAGE["cost"]  # what OpenRouter itself charged
    plain = dict(OR_USAGE, completion_tokens_details={"reasoning_tokens": 0})
    assert type(openai_chat.map_usage(plain)) is dict  # no image tokens said: the plain buckets


def test_the_catalog_prices_openrouter_copies_of_the_gemini_image_models_as_google_does():
    for model, native in (("google/gemini-2.5-flash-image", "gemini-2.5-flash-image"),
                          ("google/gemini-3.1-flash-image-preview", "gemini-3.1-flash-image-preview"),
                          ("google/gemini-3.1-flash-image", "gemini-3.1-flash-image"),
                          ("google/gemini-3-pro-image-preview", "gemini-3-pro-image-preview"),
                          ("google/gemini-3-pro-image", "gemini-3-pro-image"),
                          ("google/gemini-3.1-flash-lite-image", "gemini-3.1-flash-lite-image")):
        row = find_model(model)
        assert row["provider"] == "openrouter", model
        assert row["prices"]["output_image"] == find_model(native)["prices"]["output_image"], model
        assert "overrides:image_output_prices" in row["sources"], model


def test_a_budget_holds_openrouter_image_output_at_the_image_price():
    budget = Budget(5.0)
    held = budget.reserve(OR_MODEL, 12, 4000)
    assert held.needed_usd == pytest.approx((12 * 0.3 + 4000 * 30) / 1e6, rel=1e-12)
    held.release()


def test_one_openrouter_image_turn_costs_one_price_on_every_path(tmp_path, monkeypatch):
    paths = _prices(OR_MODEL, "openai-chat", _openrouter_stream(), "/api/v1", tmp_path, monkeypatch)
    assert {path: round(price, 12) for path, price in paths.items()} == {path: round(OR_HAND, 12) for path in paths}


def test_the_image_openrouter_answers_with_is_an_item_not_dropped():
    """OpenRouter sends a generated image in ``images`` beside ``content``: it was dropped (the paid image lost,
    its tokens billed); it is an inline_data item, a URL that is not a data URL an image_url item."""
    link = {"type": "image_url", "image_url": {"url": "https://example.test/red.png"}}
    with Upstream() as up:
        up.routes["or"] = Route(_openrouter_stream())
        up.routes["link"] = Route(_openrouter_stream().replace(b'"data:image/png;base64,' + OR_IMAGE.encode() + b'"',
                                                               json.dumps(link["image_url"]["url"]).encode()))
        up.routes["bad"] = Route(_openrouter_stream().replace(b'base64,' + OR_IMAGE.encode(), b"base64,not base64!"))

        def answer(route):
            return AutoLLMClient(OR_MODEL, client_type="openai-chat", base_url=up.url + "/" + route + "/api/v1",
                                 api_key="sk-or-test-0123456789", max_retries=0).response(MESSAGES)

        assert answer("or")["content_items"] == [
            {"type": "text", "text": "Here it is"},
            {"type": "inline_data", "data": base64.b64decode(OR_IMAGE), "mime_type": "image/png"}]
        assert answer("link")["content_items"] == [{"type": "text", "text": "Here it is"},
                                                   {"type": "image_url", "image_url": "https://example.test/red.png"}]
        with pytest.raises(StreamProtocolError) as caught:
            answer("bad")
    assert str(caught.value) == "openai-chat: the answer's image data is not base64 (11 characters)"
