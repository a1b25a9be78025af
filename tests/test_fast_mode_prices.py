"""A ``fast_mode`` turn is billed at the priority tier (OpenAI ``service_tier: "priority"``, Gemini
``serviceTier: "priority"``, Anthropic ``speed: "fast"``); every agenthub path prices it there: one turn, one
price.  Before, a Budget charged it the ``fast`` tier while runs, job rows and serve's metrics priced it at the
standard prices (half of OpenAI's bill for gpt-5), and a Budget on a Gemini model (whose catalog row prices
``priority``, not ``fast``) refused every fast_mode request as unpriced.

Prices: https://platform.openai.com/docs/pricing (gpt-5 standard input 1.25 / output 10, priority 2.50 / 20 per
1M), https://ai.google.dev/gemini-api/docs/pricing (the Priority column)."""

import json

import pytest
import requests

from agent_streams import _sse
from money_clock import fix_clock
from server_support import Builtin, Upstream, Route

from agenthub import AutoLLMClient, Budget, cost, jobs
from agenthub.jobs import read_output

MESSAGES = [{"role": "user", "content_items": [{"type": "text", "text": "hi"}]}]
KEY = "server-key-0123456789"
CONFIG = {"max_tokens": 2000, "fast_mode": True}


def chat_turn():
    chunks = [{"id": "c1", "object": "chat.completion.chunk", "model": "gpt-5", "service_tier": "priority",
               "choices": [{"index": 0, "delta": {"role": "assistant", "content": "{\"ok\": true}"},
                            "finish_reason": "stop"}]},
              {"id": "c1", "object": "chat.completion.chunk", "model": "gpt-5", "service_tier": "priority",
               "choices": [], "usage": {"prompt_tokens": 100000, "completion_tokens": 1000, "total_tokens": 101000}}]
    return _sse(chunks) + b"data: [DONE]\n\n"


def test_a_fast_mode_turn_costs_the_priority_price_through_every_path(tmp_path, monkeypatch):
    fix_clock(monkeypatch, "12:00")
    billed = (100000 * 2.5 + 1000 * 20) / 1e6  # gpt-5 priority: $0.27 (standard: $0.135)
    with Upstream() as up:
        up.routes["chat"] = Route(chat_turn())
        kwargs = {"client_type": "openai-chat", "base_url": up.url + "/chat/v1", "api_key": "sk-test-0123456789",
                  "max_retries": 0}

        def client(**extra):
            return AutoLLMClient("gpt-5", **dict(kwargs, **extra))

        answer = client().response(MESSAGES, CONFIG)
        assert up.requests[-1]["body"]["service_tier"] == "priority"
        paths = {"cost": cost("gpt-5", answer["usage_metadata"], tier="priority")}
        budget = Budget(5.0)
        client(budget=budget).response(MESSAGES, CONFIG)
        paths["budget"] = budget.spent_usd
        paths["run"] = client().run(MESSAGES, CONFIG, tools=[]).result().cost_usd
        paths["parse"] = client().parse(MESSAGES, {"type": "object", "properties": {"ok": {"type": "boolean"}}},
                                        CONFIG).cost_usd
        rows = tmp_path / "in.jsonl"
        rows.write_text("".join(json.dumps({"id": "r{}".format(n), "model": "gpt-5", "messages": MESSAGES,
                                            "config": CONFIG}) + "\n" for n in range(2)))
        summary = jobs.run(str(rows), str(tmp_path / "out.jsonl"), workers=1, progress=False,
                           client_factory=lambda *route: client())
        paths["job row"] = read_output(str(tmp_path / "out.jsonl"))[0]["cost_usd"]
        paths["JobSummary / 2"] = summary.cost_usd / 2

        from agenthub.apps.server import make_app

        row = dict(kwargs, id="row", model="gpt-5")
        with Builtin(make_app({"models": [row], "api_keys": [KEY]})) as site:
            via = AutoLLMClient("row", client_type="agenthub", base_url=site.url, api_key=KEY, max_retries=0)
            via.response(MESSAGES, CONFIG)
            assert up.requests[-1]["body"]["service_tier"] == "priority"
            text = requests.get(site.url + "/v1/metrics", headers={"Authorization": "Bearer " + KEY}, timeout=10).text
        line = [entry for entry in text.splitlines() if entry.startswith('agenthub_cost_usd_total{model="row"}')][0]
        paths["serve metrics"] = float(line.split()[-1])
    assert {path: round(price, 9) for path, price in paths.items()} == {path: round(billed, 9) for path in paths}


def test_a_budget_holds_and_charges_a_gemini_fast_mode_turn_at_the_priority_price(monkeypatch):
    fix_clock(monkeypatch, "12:00")
    body = _sse([{"candidates": [{"content": {"role": "model", "parts": [{"text": "Done."}]}, "finishReason": "STOP"}],
                  "usageMetadata": {"promptTokenCount": 100000, "candidatesTokenCount": 1000,
                                    "totalTokenCount": 101000}}])
    with Upstream() as up:
        up.routes["gem"] = Route(body)
        budget = Budget(5.0)
        client = AutoLLMClient("gemini-4-argon", client_type="gemini", base_url=up.url + "/gem",
                               api_key="k-test-0123456789", max_retries=0, budget=budget)
        answer = client.response(MESSAGES, CONFIG)
        assert up.requests[-1]["body"]["serviceTier"] == "priority"
    # gemini-4-argon priority: input 7.2, output 36 per 1M (standard 4 / 20)
    assert round(budget.spent_usd, 9) == round((100000 * 7.2 + 1000 * 36) / 1e6, 9) == round(
        cost("gemini-4-argon", answer["usage_metadata"], tier="priority"), 9)
    assert budget.reserved_usd == 0.0
