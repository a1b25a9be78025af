"""One recorded turn, one price: each text-only recording of ../shared/wire whose model the catalog prices,
answered by a local server, costs the same on every path (``agenthub.cost`` of the answer's usage, a Budget's
settlement, a run's cost_usd, a job row and JobSummary, serve's /v1/metrics and the Budget of serve's client),
and that price is the catalog's for the provider's own figures (the sidecar's ``expect.usage``, read with the
wire's semantics: ../shared/wire/README.md).  Skipped when the recordings are absent."""

import pytest

from conftest import wire_streams
from money_clock import fix_clock
from price_paths import prices_on_every_path
from server_support import Route, Upstream

from agenthub import cost

MESSAGES = [{"role": "user", "content_items": [{"type": "text", "text": "Hello"}]}]
#: recording -> (the model it was recorded from, client_type, the route its client posts to)
RECORDED = {
    "anthropic/docs_basic_text": ("claude-opus-4-1-20250805", "anthropic", "/anthropic"),
    "anthropic/thinking_signature_text": ("claude-sonnet-4-0", "anthropic", "/anthropic"),
    "gemini/gemini25_pro_thought_parts": ("gemini-2.5-pro", "gemini", "/gem"),
    "openai_chat/openai_plain_text": ("gpt-4o-2024-08-06", "openai-chat", "/chat/v1"),
    "openai_chat/deepseek_reasoner_reasoning_content": ("deepseek-reasoner", "openai-chat", "/chat/v1"),
    "openai_responses/gpt4o_text": ("gpt-4o", "openai-responses", "/responses/v1"),
    "openai_responses/o3mini_reasoning_summary": ("o3-mini", "openai-responses", "/responses/v1"),
}


def _recordings():
    out = []
    for name in sorted(RECORDED):
        protocol, stem = name.split("/")
        found = [(data, sidecar) for recorded, data, sidecar in wire_streams(protocol) if recorded == stem]
        out.append(pytest.param(name, found[0] if found else None, id=stem, marks=[] if found else [
            pytest.mark.skip(reason="../shared/wire is absent")]))
    return out


def buckets(protocol, figures):
    """The sidecar's own figures as the four buckets (README: OpenAI and Gemini input include cached tokens,
    Anthropic's excludes reads and writes; OpenAI and Anthropic output include reasoning, Gemini's excludes it)."""
    cached, reasoning, written = figures.get("cached") or 0, figures.get("reasoning") or 0, figures.get("cache_write")
    if protocol == "anthropic":
        return {"cached_tokens": cached, "prompt_tokens": figures["input"] + (written or 0), "thoughts_tokens": 0,
                "response_tokens": figures["output"]}
    output = figures["output"] if protocol == "gemini" else figures["output"] - reasoning
    return {"cached_tokens": cached, "prompt_tokens": figures["input"] - cached, "thoughts_tokens": reasoning,
            "response_tokens": output}


@pytest.mark.parametrize("name, recording", _recordings())
def test_one_recorded_turn_costs_one_price_on_every_path(name, recording, tmp_path, monkeypatch):
    fix_clock(monkeypatch, "12:00")  # (deepseek prices by the time of day)
    data, sidecar = recording
    model, client_type, prefix = RECORDED[name]
    billed = cost(model, buckets(name.split("/")[0], sidecar["expect"]["usage"]))
    assert billed is not None and billed > 0
    with Upstream() as up:
        up.routes[prefix.split("/")[1]] = Route(data)
        kwargs = {"client_type": client_type, "base_url": up.url + prefix, "api_key": "sk-test-0123456789",
                  "max_retries": 0}
        paths = prices_on_every_path(model, kwargs, {"max_tokens": 4000}, MESSAGES, tmp_path)
    assert {path: round(price, 12) for path, price in paths.items()} == {path: round(billed, 12) for path in paths}
