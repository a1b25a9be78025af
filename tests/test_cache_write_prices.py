"""Issue 38 items 1-2: a prompt-cache write is priced at the write price of its TTL on every path.

One turn per wire (Chat Completions and Responses on a GPT-5.6 model, at OpenAI and at Azure OpenAI,
Anthropic Messages, Bedrock Converse),
each writing 100,000 prompt tokens to the cache, from a local server; its price through every agenthub path
(``agenthub.cost`` of the answer's usage, a Budget's settlement, a job row and JobSummary, a run's cost_usd,
the chat log's turn, serve's /v1/metrics) is the one list price of the vendor's bill."""

import json

import pytest
import requests

import bedrock_frames as bf
from agent_streams import _sse
from bedrock_server import BedrockServer, frames_reply
from money_clock import fix_clock
from server_support import Builtin, Route, Upstream

from agenthub import AutoLLMClient, Budget, cost, jobs
from agenthub.catalog import usage_writes
from agenthub.jobs import read_output

MESSAGES = [{"role": "user", "content_items": [{"type": "text", "text": "Summarise the attached manual."}]}]
KEY = "server-key-0123456789"
AK, SK, TOKEN = "AKIAEXAMPLE0001", "local/secret+key/0002", "IQoJb3JpZ2luX2VjEXAMPLE//token=="
BEDROCK_MODEL = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"


def chat_turn():
    chunks = [{"id": "c1", "object": "chat.completion.chunk", "model": "gpt-5.6-terra",
               "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Done."}, "finish_reason": None}]},
              {"id": "c1", "object": "chat.completion.chunk", "model": "gpt-5.6-terra",
               "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
              {"id": "c1", "object": "chat.completion.chunk", "model": "gpt-5.6-terra", "choices": [],
               "usage": {"prompt_tokens": 100000, "completion_tokens": 100, "total_tokens": 100100,
                         "prompt_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 100000},
                         "completion_tokens_details": {"reasoning_tokens": 0}}}]
    return _sse(chunks) + b"data: [DONE]\n\n"


def responses_turn():
    msg = {"id": "msg_1", "type": "message", "status": "completed", "role": "assistant",
           "content": [{"type": "output_text", "text": "Done.", "annotations": []}]}
    usage = {"input_tokens": 100000, "output_tokens": 100, "total_tokens": 100100,
             "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 100000,
                                      "cache_write_tokens_details": {"ttl_30m_tokens": 100000, "ttl_12h_tokens": 0}},
             "output_tokens_details": {"reasoning_tokens": 0}}
    events = [{"type": "response.created", "response": {"id": "resp_1", "status": "in_progress", "output": []}},
              {"type": "response.output_item.added", "output_index": 0,
               "item": dict(msg, status="in_progress", content=[])},
              {"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0, "content_index": 0,
               "delta": "Done."},
              {"type": "response.output_item.done", "output_index": 0, "item": msg},
              {"type": "response.completed", "response": {"id": "resp_1", "object": "response", "status": "completed",
                                                          "output": [msg], "usage": usage}}]
    return _sse(events, named=True)


def anthropic_turn(five=100000, hour=0):
    start = {"type": "message_start", "message": {
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-6", "content": [],
        "stop_reason": None, "usage": {"input_tokens": 0, "cache_creation_input_tokens": five + hour,
                                       "cache_read_input_tokens": 0, "output_tokens": 1,
                                       "cache_creation": {"ephemeral_5m_input_tokens": five,
                                                          "ephemeral_1h_input_tokens": hour}}}}
    events = [start,
              {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
              {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Done."}},
              {"type": "content_block_stop", "index": 0},
              {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 100}},
              {"type": "message_stop"}]
    return _sse(events, named=True)


def bedrock_turn():
    usage = {"inputTokens": 0, "outputTokens": 100, "cacheReadInputTokens": 0, "cacheWriteInputTokens": 100000,
             "totalTokens": 100100, "cacheDetails": [{"ttl": "1h", "inputTokens": 40000},
                                                     {"ttl": "5m", "inputTokens": 60000}]}
    frames = [bf.message_start(), bf.text_delta("Done."), bf.block_stop(0), bf.message_stop("end_turn"),
              bf.event("metadata", {"usage": usage, "metrics": {"latencyMs": 12}})]
    return frames_reply(frames)


#: wire -> (model, client_type, the vendor's bill for the turn, what agenthub counted before: writes at input)
WIRES = {
    # GPT-5.6 Terra: input 2, cache write 2.5 (1.25x), output 12 per 1M
    "chat": ("gpt-5.6-terra", "openai-chat", (100000 * 2.5 + 100 * 12) / 1e6, (100000 * 2 + 100 * 12) / 1e6),
    "responses": ("gpt-5.6-terra", "openai-responses", (100000 * 2.5 + 100 * 12) / 1e6,
                  (100000 * 2 + 100 * 12) / 1e6),
    # Azure OpenAI (a deployment named as its model: Global deployments bill OpenAI's prices), both protocols
    "azure": ("gpt-5.6-terra", "azure", (100000 * 2.5 + 100 * 12) / 1e6, (100000 * 2 + 100 * 12) / 1e6),
    "azure-responses": ("gpt-5.6-terra", "azure-responses", (100000 * 2.5 + 100 * 12) / 1e6,
                        (100000 * 2 + 100 * 12) / 1e6),
    # Claude Sonnet 4.6: input 3, 5-minute write 3.75, output 15: $0.3765 (agenthub said $0.3015)
    "anthropic": ("claude-sonnet-4-6", "anthropic", 0.3765, 0.3015),
    # Claude Sonnet 4.5 on Bedrock (US): input 3.3, 5-minute write 4.125, 1-hour write 6.6, output 16.5
    "bedrock": (BEDROCK_MODEL, "bedrock", (60000 * 4.125 + 40000 * 6.6 + 100 * 16.5) / 1e6,
                (100000 * 3.3 + 100 * 16.5) / 1e6),
}


@pytest.fixture()
def wire(request, monkeypatch, tmp_path):
    """(name, model, client kwargs, a serve row) with its local server answering the one turn, repeatedly."""
    fix_clock(monkeypatch, "12:00")
    name = request.param
    model, client_type, _, _ = WIRES[name]
    if name == "bedrock":
        for env in ("AWS_PROFILE", "AWS_BEARER_TOKEN_BEDROCK", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE"):
            monkeypatch.delenv(env, raising=False)
        monkeypatch.setenv("HOME", str(tmp_path))
        monkeypatch.setenv("AWS_REGION", "us-west-2")
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", AK)
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SK)
        monkeypatch.setenv("AWS_SESSION_TOKEN", TOKEN)
        with BedrockServer(secret_key=SK) as server:
            monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", server.url)
            server.answer = lambda request: bedrock_turn()
            yield name, model, {"client_type": client_type}
        return
    body = {"chat": chat_turn, "responses": responses_turn, "anthropic": anthropic_turn, "azure": chat_turn,
            "azure-responses": responses_turn}[name]()
    with Upstream() as up:
        if name.startswith("azure"):  # /openai/deployments/... and /openai/v1/responses under the resource
            up.routes["openai"] = Route(body)
            yield name, model, {"client_type": client_type, "base_url": up.url, "api_key": "azure-key-0123456789"}
            return
        up.routes[name] = Route(body)
        base = up.url + ("/anthropic" if name == "anthropic" else "/{}/v1".format(name))
        yield name, model, {"client_type": client_type, "base_url": base, "api_key": "sk-test-0123456789"}


@pytest.mark.parametrize("wire", sorted(WIRES), indirect=True)
def test_one_turn_of_each_wire_costs_the_same_through_every_path(wire, tmp_path, monkeypatch):
    name, model, kwargs = wire
    _, _, billed, before = WIRES[name]

    def client(**extra):
        return AutoLLMClient(model, max_retries=0, **dict(kwargs, **extra))

    # the answer's usage carries the wire's writes; agenthub.cost prices them at their TTL's write price
    answer = client().response(MESSAGES, {"max_tokens": 200})
    usage = answer["usage_metadata"]
    assert usage["prompt_tokens"] == 100000 and usage.cache_write == 100000
    assert usage_writes(usage) == ({"5m": 60000, "1h": 40000} if name == "bedrock" else {"5m": 100000, "1h": 0})
    assert cost(model, usage) == pytest.approx(billed)
    assert cost(model, dict(usage)) == pytest.approx(before)  # the plain four buckets: what was counted before

    paths = {"cost": cost(model, usage)}
    budget = Budget(5.0)
    client(budget=budget).response(MESSAGES, {"max_tokens": 200})
    paths["budget"] = budget.spent_usd

    rows = tmp_path / "in.jsonl"
    rows.write_text("".join(json.dumps({"id": "r{}".format(n), "model": model, "messages": MESSAGES,
                                        "config": {"max_tokens": 200}}) + "\n" for n in range(2)))
    summary = jobs.run(str(rows), str(tmp_path / "out.jsonl"), workers=1, progress=False,
                       client_factory=lambda *route: client())
    out = read_output(str(tmp_path / "out.jsonl"))
    paths["job row"] = out[0]["cost_usd"]
    paths["JobSummary / 2"] = summary.cost_usd / 2

    paths["run"] = client().run(MESSAGES, {"max_tokens": 200}, tools=[]).result().cost_usd

    from agenthub.apps import chat

    logged = []

    class FakeLog(object):
        def start(self, *args, **kwargs):
            return "conversation-1"

        def add_turn(self, conversation, answered, message, answer, cost_usd):
            logged.append(cost_usd)

    class Args(object):
        system, no_log = None, False

    Args.model = model

    monkeypatch.setenv("AGENTHUB_LOG_PROMPTS", "1")
    chatting = client()
    turn = chat._Logged(Args(), chatting)
    turn.log = lambda: FakeLog()
    turn.turn(MESSAGES[0], chatting.response(MESSAGES, {"max_tokens": 200}))
    paths["chat log"] = logged[0]

    from agenthub.apps.server import make_app

    row = dict(kwargs, id="row", model=model, max_retries=0)
    with Builtin(make_app({"models": [row], "api_keys": [KEY]})) as site:
        via = AutoLLMClient("row", client_type="agenthub", base_url=site.url, api_key=KEY, max_retries=0)
        via.response(MESSAGES, {"max_tokens": 200})
        text = requests.get(site.url + "/v1/metrics", headers={"Authorization": "Bearer " + KEY}, timeout=10).text
    line = [entry for entry in text.splitlines() if entry.startswith('agenthub_cost_usd_total{model="row"}')][0]
    paths["serve metrics"] = float(line.split()[-1])

    for path, price in paths.items():
        assert round(price, 6) == round(billed, 6), (path, price, billed)


def test_a_claude_100k_five_minute_write_turn_costs_what_anthropic_bills():
    """The issue's measurement: 100,000 prompt tokens written to the 5-minute cache, 100 output tokens, on
    claude-sonnet-4-6: Anthropic bills $0.3765; agenthub said $0.3015.  1-hour writes are 2x input."""
    from agenthub.providers.anthropic import map_usage

    five = map_usage({"input_tokens": 0, "cache_creation_input_tokens": 100000, "cache_read_input_tokens": 0,
                      "output_tokens": 100, "cache_creation": {"ephemeral_5m_input_tokens": 100000,
                                                               "ephemeral_1h_input_tokens": 0}})
    assert round(cost("claude-sonnet-4-6", five), 6) == 0.3765
    hour = map_usage({"input_tokens": 0, "cache_creation_input_tokens": 100000, "output_tokens": 100,
                      "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 100000}})
    assert (hour.cache_write, hour.cache_write_1h) == (100000, 100000)
    assert round(cost("claude-sonnet-4-6", hour), 6) == 0.6015  # 100k x 6 + 100 x 15
    no_split = map_usage({"input_tokens": 0, "cache_creation_input_tokens": 100000, "output_tokens": 100})
    assert no_split.cache_write_1h is None and round(cost("claude-sonnet-4-6", no_split), 6) == 0.3765
    # a split that does not add up to the count it splits is not believed: the writes are 5-minute ones
    odd = map_usage({"input_tokens": 0, "cache_creation_input_tokens": 100000, "output_tokens": 100,
                     "cache_creation": {"ephemeral_5m_input_tokens": 5, "ephemeral_1h_input_tokens": 7}})
    assert odd.cache_write_1h is None and round(cost("claude-sonnet-4-6", odd), 6) == 0.3765
    # cache_writes= given still decides, as before
    assert round(cost("claude-sonnet-4-6", five, cache_writes={"1h": 100000}), 6) == 0.6015
    assert round(cost("claude-sonnet-4-6", five, cache_writes=0), 6) == 0.3015


def test_openai_cache_write_tokens_are_read_on_chat_and_responses():
    from agenthub.providers import openai_chat, openai_responses

    chat = openai_chat.map_usage({"prompt_tokens": 5000, "completion_tokens": 10, "prompt_tokens_details": {
        "cached_tokens": 1000, "cache_write_tokens": 4000}})
    assert chat == {"cached_tokens": 1000, "prompt_tokens": 4000, "thoughts_tokens": None, "response_tokens": 10}
    assert chat.cache_write == 4000 and chat.cache_write_1h is None
    responses = openai_responses.map_usage({"input_tokens": 5000, "output_tokens": 10, "input_tokens_details": {
        "cached_tokens": 1000, "cache_write_tokens": 4000}})
    assert responses == chat and responses.cache_write == 4000
    # GPT-5.6 Terra: 4000 writes at 2.5, 1000 reads at 0.2, 10 output at 12
    assert cost("gpt-5.6-terra", chat) == pytest.approx((4000 * 2.5 + 1000 * 0.2 + 10 * 12) / 1e6)
    # a model with no write price bills writes at its input price (no surcharge), as before
    assert cost("gpt-4.1-mini", chat) == cost("gpt-4.1-mini", dict(chat))
    # no writes, or a count above the prompt bucket it is part of: no cache_write (the latter is not believed)
    for details in ({"cached_tokens": 1000}, {"cached_tokens": 1000, "cache_write_tokens": 0},
                    {"cached_tokens": 1000, "cache_write_tokens": 4001}, {"cache_write_tokens": "x"}):
        plain = openai_chat.map_usage({"prompt_tokens": 5000, "completion_tokens": 10,
                                       "prompt_tokens_details": details})
        assert not hasattr(plain, "cache_write"), details


def test_bedrock_cache_details_split_the_writes_by_ttl():
    from agenthub.providers.bedrock import map_usage

    split = map_usage({"inputTokens": 10, "outputTokens": 5, "cacheWriteInputTokens": 300,
                       "cacheDetails": [{"ttl": "1h", "inputTokens": 100}, {"ttl": "5m", "inputTokens": 200}]})
    assert (split["prompt_tokens"], split.cache_write, split.cache_write_1h) == (310, 300, 100)
    plain = map_usage({"inputTokens": 10, "outputTokens": 5, "cacheWriteInputTokens": 300})
    assert plain.cache_write_1h is None
    odd = map_usage({"inputTokens": 10, "outputTokens": 5, "cacheWriteInputTokens": 300,
                     "cacheDetails": [{"ttl": "1h", "inputTokens": 500}, "junk"]})
    assert odd.cache_write_1h is None


def test_the_ttl_split_survives_copies_and_pickles():
    import copy
    import pickle

    from agenthub.stream import checked_usage, with_cache_write

    usage = with_cache_write({"cached_tokens": 0, "prompt_tokens": 300, "thoughts_tokens": None,
                              "response_tokens": 5}, 300, 100)
    for twin in (copy.deepcopy(usage), pickle.loads(pickle.dumps(usage)), checked_usage(usage)):
        assert twin == usage and (twin.cache_write, twin.cache_write_1h) == (300, 100)
    assert with_cache_write(dict(usage), 300, 400).cache_write_1h is None  # more 1-hour writes than writes


def test_carried_writes_above_the_prompt_bucket_make_the_price_unknown():
    from agenthub.stream import with_cache_write

    usage = with_cache_write({"cached_tokens": 0, "prompt_tokens": 10, "thoughts_tokens": None,
                              "response_tokens": 5}, 300)
    assert cost("claude-sonnet-4-6", usage) is None


def test_a_client_of_serve_prices_the_cache_writes_the_server_priced(monkeypatch):
    """A turn answered through ``agenthub serve`` (client_type="agenthub") keeps the upstream's cache writes: the
    client's Budget and run price it as serve's metrics do (they said $0.3015: writes billed as input), and a
    client that asks for no agenthub wire (curl, the playground) still gets the data model's four buckets."""
    fix_clock(monkeypatch, "12:00")
    billed = (60000 * 3.75 + 40000 * 6 + 100 * 15) / 1e6  # claude-sonnet-4-6: 5-minute 3.75, 1-hour 6, output 15
    with Upstream() as up:
        up.routes["anthropic"] = Route(anthropic_turn(five=60000, hour=40000))
        row = {"id": "claude-sonnet-4-6", "model": "claude-sonnet-4-6", "client_type": "anthropic",
               "base_url": up.url + "/anthropic", "api_key": "sk-test-0123456789", "max_retries": 0}
        from agenthub.apps.server import make_app

        with Builtin(make_app({"models": [row], "api_keys": [KEY]})) as site:
            budget = Budget(5.0)
            via = AutoLLMClient("claude-sonnet-4-6", client_type="agenthub", base_url=site.url, api_key=KEY,
                                max_retries=0, budget=budget)
            usage = via.response(MESSAGES, {"max_tokens": 200})["usage_metadata"]
            assert (usage.cache_write, usage.cache_write_1h) == (100000, 40000)
            paths = {"cost": cost("claude-sonnet-4-6", usage), "budget": budget.spent_usd,
                     "run": via.run(MESSAGES, {"max_tokens": 200}, tools=[]).result().cost_usd}
            raw = requests.post(site.url + "/v1/stream", headers={"Authorization": "Bearer " + KEY},
                                json={"model": "claude-sonnet-4-6", "messages": MESSAGES,
                                      "config": {"max_tokens": 200}}, timeout=10).text
    stop = [json.loads(line[6:]) for line in raw.splitlines() if line.startswith("data: {")][-1]
    assert stop["usage_metadata"] == {"cached_tokens": 0, "prompt_tokens": 100000, "thoughts_tokens": None,
                                      "response_tokens": 100}
    assert {path: round(price, 9) for path, price in paths.items()} == {path: round(billed, 9) for path in paths}
