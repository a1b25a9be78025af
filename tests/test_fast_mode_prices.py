"""A turn is priced at the service tier it was billed at, on every path: one turn, one price.

``fast_mode`` asks for the priority tier (OpenAI ``service_tier: "priority"``, Gemini ``serviceTier:
"priority"``, Anthropic ``speed: "fast"``).  Before, a Budget charged such a turn the ``fast`` tier while runs,
job rows and serve's metrics priced it at the standard prices (half of OpenAI's bill for gpt-5), and a Budget on
a Gemini model (whose catalog row prices ``priority``, not ``fast``) refused every fast_mode request as unpriced.

OpenAI's answer says the tier that served it (``service_tier``: ``default``, ``priority``, ``flex``): "the
response body will include the service_tier value based on the processing mode actually used to serve the
request", https://platform.openai.com/docs/api-reference/chat/create#chat-create-service_tier.  A project whose
default tier is priority is billed priority with no ``service_tier`` asked; a priority request may be served, and
billed, at the standard tier.  Before, every path priced the tier asked (or none), whatever the answer said.

Prices: https://platform.openai.com/docs/pricing (gpt-5 per 1M: standard input 1.25 / output 10, priority 2.50 /
20, flex 0.625 / 5), https://ai.google.dev/gemini-api/docs/pricing (the Priority column)."""

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
FAST = {"max_tokens": 2000, "fast_mode": True}
PLAIN = {"max_tokens": 2000}
#: gpt-5, 100,000 input and 1,000 output tokens, by tier
PRICE = {"standard": (100000 * 1.25 + 1000 * 10) / 1e6, "priority": (100000 * 2.5 + 1000 * 20) / 1e6,
         "flex": (100000 * 0.625 + 1000 * 5) / 1e6}


def chat_turn(said):
    head = {"id": "c1", "object": "chat.completion.chunk", "model": "gpt-5"}
    if said is not None:
        head["service_tier"] = said
    chunks = [dict(head, choices=[{"index": 0, "delta": {"role": "assistant", "content": "{\"ok\": true}"},
                                   "finish_reason": "stop"}]),
              dict(head, choices=[], usage={"prompt_tokens": 100000, "completion_tokens": 1000,
                                            "total_tokens": 101000})]
    return _sse(chunks) + b"data: [DONE]\n\n"


def responses_turn(said):
    msg = {"id": "msg_1", "type": "message", "status": "completed", "role": "assistant",
           "content": [{"type": "output_text", "text": "{\"ok\": true}", "annotations": []}]}
    done = {"id": "resp_1", "object": "response", "status": "completed", "service_tier": said, "output": [msg],
            "usage": {"input_tokens": 100000, "output_tokens": 1000, "total_tokens": 101000}}
    events = [{"type": "response.created", "response": {"id": "resp_1", "status": "in_progress", "output": [],
                                                        "service_tier": "auto"}},
              {"type": "response.output_item.added", "output_index": 0, "item": dict(msg, content=[])},
              {"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0, "content_index": 0,
               "delta": "{\"ok\": true}"},
              {"type": "response.output_item.done", "output_index": 0, "item": msg},
              {"type": "response.completed", "response": done}]
    return _sse(events, named=True)


def priced_on_every_path(tmp_path, body, config, client_type="openai-chat"):
    """path -> what one turn answered with ``body`` cost there, ``config`` sent."""
    with Upstream() as up:
        up.routes["up"] = Route(body)
        kwargs = {"client_type": client_type, "base_url": up.url + "/up/v1", "api_key": "sk-test-0123456789",
                  "max_retries": 0}

        def client(**extra):
            return AutoLLMClient("gpt-5", **dict(kwargs, **extra))

        usage = client().response(MESSAGES, config)["usage_metadata"]
        assert up.requests[-1]["body"].get("service_tier") == ("priority" if config.get("fast_mode") else None)
        # (agenthub.cost reads the tier the answer says; told nothing, it is told the tier asked)
        asked = "priority" if config.get("fast_mode") and getattr(usage, "service_tier", None) is None else None
        paths = {"cost": cost("gpt-5", usage, tier=asked)}
        budget = Budget(5.0)
        client(budget=budget).response(MESSAGES, config)
        paths["budget"] = budget.spent_usd
        paths["run"] = client().run(MESSAGES, config, tools=[]).result().cost_usd
        paths["parse"] = client().parse(MESSAGES, {"type": "object", "properties": {"ok": {"type": "boolean"}}},
                                        config).cost_usd
        rows = tmp_path / "in.jsonl"
        rows.write_text("".join(json.dumps({"id": "r{}".format(n), "model": "gpt-5", "messages": MESSAGES,
                                            "config": config}) + "\n" for n in range(2)))
        summary = jobs.run(str(rows), str(tmp_path / "out.jsonl"), workers=1, progress=False,
                           client_factory=lambda *route: client())
        paths["job row"] = read_output(str(tmp_path / "out.jsonl"))[0]["cost_usd"]
        paths["JobSummary / 2"] = summary.cost_usd / 2

        from agenthub.apps.server import make_app

        row = dict(kwargs, id="gpt-5", model="gpt-5")
        with Builtin(make_app({"models": [row], "api_keys": [KEY]})) as site:
            served = Budget(5.0)
            via = AutoLLMClient("gpt-5", client_type="agenthub", base_url=site.url, api_key=KEY, max_retries=0,
                                budget=served)
            via.response(MESSAGES, config)
            paths["serve client's budget"] = served.spent_usd
            text = requests.get(site.url + "/v1/metrics", headers={"Authorization": "Bearer " + KEY}, timeout=10).text
        line = [entry for entry in text.splitlines() if entry.startswith('agenthub_cost_usd_total{model="gpt-5"}')][0]
        paths["serve metrics"] = float(line.split()[-1])
    return {path: round(price, 9) for path, price in paths.items()}


@pytest.mark.parametrize("config, said, billed", [
    (FAST, "priority", "priority"),   # asked and served at priority
    (FAST, None, "priority"),         # asked; the answer says nothing: the tier asked
    (FAST, "default", "standard"),    # asked, served at the standard tier (priority was not available)
    (PLAIN, "priority", "priority"),  # a project whose default tier is priority
    (PLAIN, "flex", "flex"),          # flex asked another way (extra_body)
    (PLAIN, "auto", "standard"),      # says no tier it was billed at: the tier asked
], ids=["fast-priority", "fast-unsaid", "fast-default", "plain-priority", "plain-flex", "plain-auto"])
def test_a_chat_turn_costs_the_price_of_its_tier_through_every_path(tmp_path, monkeypatch, config, said, billed):
    fix_clock(monkeypatch, "12:00")
    paths = priced_on_every_path(tmp_path, chat_turn(said), config)
    assert paths == {path: round(PRICE[billed], 9) for path in paths}


@pytest.mark.parametrize("said, billed", [("default", "standard"), ("priority", "priority"), ("flex", "flex")])
def test_a_responses_turn_costs_the_price_of_the_tier_that_served_it(tmp_path, monkeypatch, said, billed):
    fix_clock(monkeypatch, "12:00")
    paths = priced_on_every_path(tmp_path, responses_turn(said), PLAIN, client_type="openai-responses")
    assert paths == {path: round(PRICE[billed], 9) for path in paths}


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
        answer = client.response(MESSAGES, FAST)
        assert up.requests[-1]["body"]["serviceTier"] == "priority"
    # gemini-4-argon priority: input 7.2, output 36 per 1M (standard 4 / 20)
    assert round(budget.spent_usd, 9) == round((100000 * 7.2 + 1000 * 36) / 1e6, 9) == round(
        cost("gemini-4-argon", answer["usage_metadata"], tier="priority"), 9)
    assert budget.reserved_usd == 0.0


def test_the_tier_survives_copies_and_pickles():
    import copy
    import pickle

    from agenthub.stream import Usage, with_cache_write, with_service_tier

    usage = with_service_tier(with_cache_write({"prompt_tokens": 10, "cached_tokens": 0, "thoughts_tokens": None,
                                                "response_tokens": 1}, 4, 1), "priority")
    for again in [copy.copy(usage), copy.deepcopy(usage)] + [pickle.loads(pickle.dumps(usage, n))
                                                            for n in range(pickle.HIGHEST_PROTOCOL + 1)]:
        assert type(again) is Usage and again == usage
        assert (again.cache_write, again.cache_write_1h, again.service_tier) == (4, 1, "priority")
    assert with_service_tier(usage, "scale") is usage and with_service_tier(None, "priority") is None


@pytest.mark.parametrize("model, tier, price", [
    ("gpt-5", "fast", (100000 * 2.5 + 1000 * 20) / 1e6),
    ("gpt-5.5", "fast", (100000 * 12.5 + 1000 * 75) / 1e6),
])
def test_a_serve_row_whose_default_config_asks_fast_mode_is_priced_alike_by_server_and_client(monkeypatch, model,
                                                                                            tier, price):
    """A serve row ``default_config: {"fast_mode": true}`` and an upstream that names no tier: the server prices
    the fast tier; its agenthub client, which never sent fast_mode, learns the tier from the wire's usage
    (``service_tier``).  Before, the client's Budget and runs priced the standard tier."""
    fix_clock(monkeypatch, "12:00")
    from agenthub.apps.server import make_app

    with Upstream() as up:
        up.routes["up"] = Route(chat_turn(None))
        row = {"id": model, "model": model, "client_type": "openai-chat", "base_url": up.url + "/up/v1",
               "api_key": "sk-test-0123456789", "max_retries": 0, "default_config": {"fast_mode": True}}
        with Builtin(make_app({"models": [row], "api_keys": [KEY]})) as site:
            budget = Budget(5.0)
            via = AutoLLMClient(model, client_type="agenthub", base_url=site.url, api_key=KEY, max_retries=0,
                                budget=budget)
            usage = via.response(MESSAGES, PLAIN)["usage_metadata"]
            ran = AutoLLMClient(model, client_type="agenthub", base_url=site.url, api_key=KEY,
                                max_retries=0).run(MESSAGES, PLAIN, tools=[]).result().cost_usd
            text = requests.get(site.url + "/v1/metrics", headers={"Authorization": "Bearer " + KEY}, timeout=10).text
        assert [r["body"].get("service_tier") for r in up.requests] == ["priority"] * 2
    line = [entry for entry in text.splitlines() if entry.startswith('agenthub_cost_usd_total{{model="{}"}}'.format(model))][0]
    assert usage.service_tier == tier
    assert [round(x, 9) for x in (float(line.split()[-1]) / 2, budget.spent_usd, ran, cost(model, usage))] == [
        round(price, 9)] * 4
