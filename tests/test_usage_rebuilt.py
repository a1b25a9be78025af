"""A usage written as JSON and read back is priced as the one written: what an answer's usage carries beside the
data model's four buckets (``stream.Usage``: the prompt-cache writes and their 1-hour part, the output's image
tokens) comes back on every path that writes a usage and reads it back (a response cache's hit, a run's journal
replayed, serve's wire to its client, pickling).  Exact numbers on local fakes: a Gemini image turn and an
Anthropic turn writing to its prompt cache with both TTLs."""

import json
import pickle

import pytest

from server_support import Builtin, Route, Upstream

from agenthub import AutoLLMClient, ResponseCache, cost
from agenthub.stores import MemoryStore
from agenthub.stream import usage_extras

KEY = "server-key-0123456789"
HI = [{"role": "user", "content_items": [{"type": "text", "text": "Draw a banana"}]}]

#: the usage of tests/fixtures/gemini/image_output.sse (12 prompt, 18 thoughts, 1296 candidates of which 1290 IMAGE),
#: on a text answer (a response cache stores no answer holding bytes)
GEMINI = b"data: " + json.dumps({
    "candidates": [{"content": {"parts": [{"text": "Here is your red square."}], "role": "model"},
                    "finishReason": "STOP", "index": 0}],
    "usageMetadata": {"promptTokenCount": 12, "candidatesTokenCount": 1296, "totalTokenCount": 1326,
                      "thoughtsTokenCount": 18, "candidatesTokensDetails": [{"modality": "TEXT", "tokenCount": 6},
                                                                            {"modality": "IMAGE", "tokenCount": 1290}]},
    "modelVersion": "gemini-3-pro-image-preview", "responseId": "resp-1"}).encode() + b"\r\n\r\n"
#: Gemini 3 Pro Image: input 2, text output 12, image output 120 USD per 1M tokens
GEMINI_HAND = (12 * 2 + (18 + 6) * 12 + 1290 * 120) / 1e6


def _sse(*events):
    return b"".join("event: {}\ndata: {}\n\n".format(event["type"], json.dumps(event)).encode() for event in events)


ANTHROPIC = _sse(
    {"type": "message_start", "message": {
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-6", "content": [],
        "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": 310, "cache_creation_input_tokens": 1200, "cache_read_input_tokens": 2048,
                  "cache_creation": {"ephemeral_5m_input_tokens": 200, "ephemeral_1h_input_tokens": 1000},
                  "output_tokens": 1}}},
    {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hello"}},
    {"type": "content_block_stop", "index": 0},
    {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
     "usage": {"output_tokens": 87}},
    {"type": "message_stop"})
#: claude-sonnet-4-6: input 3, cache read 0.3, 5-minute write 3.75, 1-hour write 6, output 15 USD per 1M tokens;
#: prompt_tokens 1510 of which 1200 written (200 for 5 minutes, 1000 for an hour)
ANTHROPIC_HAND = (310 * 3 + 2048 * 0.3 + 200 * 3.75 + 1000 * 6 + 87 * 15) / 1e6

CASES = [("gemini-3-pro-image-preview", "gemini", GEMINI, {"output_image_tokens": 1290}, GEMINI_HAND),
         ("claude-sonnet-4-6", "anthropic", ANTHROPIC, {"cache_write": 1200, "cache_write_1h": 1000},
          ANTHROPIC_HAND)]


def _usages_on_every_path(model, kwargs):
    """-> {path: the usage_metadata that path hands back} for one turn of ``model``."""
    def client(**extra):
        return AutoLLMClient(model, **dict(kwargs, **extra))

    paths = {"live": client().response(HI, {"max_tokens": 2000})["usage_metadata"]}
    paths["pickled"] = pickle.loads(pickle.dumps(paths["live"]))
    cache = ResponseCache(MemoryStore())
    client(cache=cache).response(HI, {"max_tokens": 2000})
    hit = client(cache=cache)
    paths["cache hit"] = hit.response(HI, {"max_tokens": 2000})["usage_metadata"]
    assert hit.last_route["cache"] == "hit"
    store = MemoryStore()
    client().run(HI, {"max_tokens": 2000}, tools=[], journal=store, run_id="r-1").result()
    resumed = client().run(HI, {"max_tokens": 2000}, tools=[], journal=store, run_id="r-1")
    events = list(resumed)
    assert [event.get("replayed") for event in events if event.get("event_type") == "stop"] == [True]
    paths["journal replay: stop event"] = [e for e in events if e.get("event_type") == "stop"][0]["usage_metadata"]
    result = resumed.result()
    paths["journal replay: message"] = result.messages[-1]["usage_metadata"]
    paths["journal replay: cost_usd"] = result.cost_usd

    from agenthub.apps.server import make_app

    with Builtin(make_app({"models": [dict(kwargs, id=model, model=model)], "api_keys": [KEY]})) as site:
        paths["serve client"] = AutoLLMClient(model, client_type="agenthub", base_url=site.url, api_key=KEY,
                                              max_retries=0).response(HI, {"max_tokens": 2000})["usage_metadata"]
    return paths


@pytest.mark.parametrize("model,client_type,body,extras,hand", CASES, ids=[case[1] for case in CASES])
def test_a_usage_read_back_is_priced_as_the_one_written(model, client_type, body, extras, hand):
    with Upstream() as up:
        up.routes["up"] = Route(body)
        kwargs = {"client_type": client_type, "base_url": up.url + "/up", "api_key": "sk-test-0123456789",
                  "max_retries": 0}
        paths = _usages_on_every_path(model, kwargs)
    assert paths.pop("journal replay: cost_usd") == pytest.approx(hand, rel=1e-12)
    live = paths["live"]
    assert cost(model, live) == pytest.approx(hand, rel=1e-12)
    assert usage_extras(live) == extras
    assert {path: (dict(usage), usage_extras(usage)) for path, usage in paths.items()} == {
        path: (dict(live), extras) for path in paths}
    assert {path: round(cost(model, usage), 12) for path, usage in paths.items()} == {
        path: round(hand, 12) for path in paths}
