"""agenthub serve: a model row's "fallbacks" (other rows' ids, or model names) against local upstreams.

The primary row's upstream answers 529 (Anthropic's overload); the stream then comes from the fallback
row's own upstream, with that row's key and model; GET /v1/models lists the rows as before.
"""

import json

import pytest
import requests

from agenthub import AutoLLMClient
from agenthub.apps.server import load_config, make_app
from agenthub.errors import ConfigError
from faultserver import chat_chunk, chat_stream
from server_support import Builtin, Route, Upstream

KEY = "server-key-0123456789"
CLAUDE_KEY = "sk-ant-primary-SECRET-0001"
CHAT_KEY = "sk-chat-fallback-SECRET-0002"
NAMED_KEY = "sk-openai-named-SECRET-0003"
MESSAGES = [{"role": "user", "content_items": [{"type": "text", "text": "Hi"}]}]
OVERLOADED = Route(json.dumps({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
                   .encode("utf-8"), status=529, headers={"Content-Type": "application/json"})


pytestmark = pytest.mark.usefixtures("fresh_breakers")  # (conftest: every circuit closed before and after)


@pytest.fixture
def upstreams():
    with Upstream() as first, Upstream() as second:
        yield first, second


def rows(first, second):
    return [
        {"id": "claude", "model": "claude-sonnet-4-6", "client_type": "anthropic", "base_url": first.url + "/ant",
         "api_key": CLAUDE_KEY, "max_retries": 0, "fallbacks": ["chat"]},
        {"id": "chat", "model": "backup-model", "client_type": "openai-chat", "base_url": second.url + "/chat/v1",
         "api_key": CHAT_KEY, "max_retries": 0, "default_config": {"max_tokens": 5}},
    ]


def stream(url, model_id):
    client = AutoLLMClient(model_id, client_type="agenthub", base_url=url, api_key=KEY, max_retries=0)
    return list(client.streaming_response(MESSAGES))


def text_of(events):
    return "".join(i.get("text", "") for e in events for i in e["content_items"] if i["type"] == "text")


def test_a_529_from_the_primary_row_streams_from_the_fallback_rows_upstream(upstreams):
    first, second = upstreams
    first.routes["ant"] = OVERLOADED
    second.routes["chat"] = Route(chat_stream("from ", "the fallback"))
    app = make_app({"models": rows(first, second), "api_keys": [KEY]}, environ={})
    with Builtin(app) as server:
        events = stream(server.url, "claude")
        models = requests.get(server.url + "/v1/models", headers={"Authorization": "Bearer " + KEY}, timeout=5)
    assert text_of(events) == "from the fallback"
    assert events[-1]["event_type"] == "stop"
    # the primary was asked once, with its own key; the fallback row's upstream with that row's key and model
    assert [(r["path"], r["headers"].get("x-api-key")) for r in first.requests] == [("/ant/v1/messages", CLAUDE_KEY)]
    assert [(r["path"], r["headers"].get("Authorization"), r["body"]["model"]) for r in second.requests] == [
        ("/chat/v1/chat/completions", "Bearer " + CHAT_KEY, "backup-model")]
    assert "max_tokens" not in second.requests[0]["body"]  # the fallback row's default_config is its own
    assert app.models["claude"].client.last_route == {"model": "backup-model", "client_type": "openai-chat",
                                                      "host": second.url.split("//", 1)[1].split("/")[0]}
    assert models.json() == {"object": "list", "data": [{"id": "claude", "object": "model"},
                                                        {"id": "chat", "object": "model"}]}


def test_the_fallback_row_still_answers_as_itself_and_a_healthy_primary_answers_first(upstreams):
    first, second = upstreams
    first.routes["ant"] = Route(b"".join([
        b'event: message_start\ndata: {"type":"message_start","message":{"usage":{"input_tokens":3,"output_tokens":0}}}\n\n',
        b'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n',
        b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"claude"}}\n\n',
        b'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n',
        b'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":1}}\n\n',
        b'event: message_stop\ndata: {"type":"message_stop"}\n\n']))
    second.routes["chat"] = Route(chat_stream("chat"))
    app = make_app({"models": rows(first, second), "api_keys": [KEY]}, environ={})
    with Builtin(app) as server:
        assert text_of(stream(server.url, "claude")) == "claude"
        assert text_of(stream(server.url, "chat")) == "chat"
    assert len(first.requests) == 1 and len(second.requests) == 1
    assert second.requests[0]["body"]["max_completion_tokens"] == 5  # its own row: its default_config applies


def test_a_fallback_by_model_name_uses_the_registry_route_and_its_key_is_scrubbed(upstreams, monkeypatch):
    first, second = upstreams
    first.routes["ant"] = OVERLOADED
    second.routes["openai"] = Route(chat_stream("named"))
    monkeypatch.setenv("DEEPSEEK_API_KEY", NAMED_KEY)
    monkeypatch.setenv("DEEPSEEK_BASE_URL", second.url + "/openai")
    config = {"models": [dict(rows(first, second)[0], fallbacks=["deepseek-v4-flash"])], "api_keys": [KEY]}
    app = make_app(config, environ={})
    assert NAMED_KEY in app._secrets and CLAUDE_KEY in app._secrets
    with Builtin(app) as server:
        assert text_of(stream(server.url, "claude")) == "named"
    (request,) = second.requests
    assert request["headers"]["Authorization"] == "Bearer " + NAMED_KEY and request["body"]["model"] == "deepseek-v4-flash"


@pytest.mark.parametrize("fallbacks,message", [
    (["nope-such-row"], r"models\[0\]\.fallbacks: 'nope-such-row' is neither a row id \(claude, chat\) nor a model"),
    (["claude"], r"models\[0\]\.fallbacks: 'claude' is the row itself"),
    ("chat", r"models\[0\]\.fallbacks must be a list"),
    ([""], r"models\[0\]\.fallbacks must be a list"),
])
def test_an_unknown_fallback_is_a_config_error_at_load_time(fallbacks, message):
    config = {"models": [
        {"id": "claude", "model": "m", "client_type": "anthropic", "base_url": "http://127.0.0.1:9/ant",
         "fallbacks": fallbacks},
        {"id": "chat", "model": "m", "client_type": "openai-chat", "base_url": "http://127.0.0.1:9/v1"}]}
    with pytest.raises(ConfigError, match=message):
        load_config(config, environ={})


def test_a_model_name_fallback_without_its_key_is_a_config_error_when_the_app_is_made(monkeypatch):
    monkeypatch.delenv("DEEPSEEK_API_KEY", raising=False)
    monkeypatch.delenv("DEEPSEEK_BASE_URL", raising=False)
    config = {"models": [{"id": "claude", "model": "m", "client_type": "anthropic",
                          "base_url": "http://127.0.0.1:9/ant", "fallbacks": ["deepseek-v4-flash"]}]}
    assert load_config(config, environ={})["models"][0]["fallbacks"] == ["deepseek-v4-flash"]
    with pytest.raises(ConfigError, match=r"models\[0\] \('claude'\): fallbacks entry 'deepseek-v4-flash': no API key for model "
                                          r"'deepseek-v4-flash' at api.deepseek.com: set DEEPSEEK_API_KEY"):
        make_app(config, environ={})


def test_a_rows_default_extra_headers_go_to_its_own_endpoint_only(upstreams):
    """Row claude's default_config.extra_headers (a gateway's key) never reach row chat's host when claude
    fails over; row chat's own extra_headers go with its requests, as a fallback too."""
    first, second = upstreams
    first.routes["ant"] = OVERLOADED
    second.routes["chat"] = Route(chat_stream("from ", "the fallback"))
    table = rows(first, second)
    table[0]["default_config"] = {"extra_headers": {"cf-aig-authorization": "Bearer gw-SECRET-for-claude"}}
    table[1]["default_config"] = {"max_tokens": 5, "extra_headers": {"X-Chat-Gateway": "chat-own-header"}}
    app = make_app({"models": table, "api_keys": [KEY]}, environ={})
    with Builtin(app) as server:
        assert text_of(stream(server.url, "claude")) == "from the fallback"
    assert first.requests[0]["headers"].get("cf-aig-authorization") == "Bearer gw-SECRET-for-claude"
    (answered,) = second.requests
    assert "gw-SECRET-for-claude" not in json.dumps(answered["headers"])
    assert answered["headers"].get("X-Chat-Gateway") == "chat-own-header"


def test_the_metrics_price_a_failed_over_answer_as_the_model_that_answered(upstreams):
    """Every path prices an answer as the model that answered it; serve's /v1/metrics priced a fallback row's
    answer (gpt-4o: $0.26) as the primary row's model (claude-sonnet-4-6: $0.315)."""
    first, second = upstreams
    first.routes["ant"] = OVERLOADED
    second.routes["chat"] = Route(chat_chunk("from the fallback") + chat_chunk(finish="stop") + chat_chunk(
        usage={"prompt_tokens": 100000, "completion_tokens": 1000, "total_tokens": 101000}) + b"data: [DONE]\n\n")
    config = {"models": [rows(first, second)[0], dict(rows(first, second)[1], model="gpt-4o")], "api_keys": [KEY]}
    with Builtin(make_app(config, environ={})) as server:
        events = stream(server.url, "claude")
        text = requests.get(server.url + "/v1/metrics", headers={"Authorization": "Bearer " + KEY}, timeout=5).text
    assert events[-1]["usage_metadata"]["prompt_tokens"] == 100000 and second.requests[0]["body"]["model"] == "gpt-4o"
    # gpt-4o: input 2.5, output 10 per 1M (https://platform.openai.com/docs/pricing)
    assert [line for line in text.splitlines() if line.startswith("agenthub_cost_usd_total")] == [
        'agenthub_cost_usd_total{model="claude"} ' + repr((100000 * 2.5 + 1000 * 10) / 1e6),
        'agenthub_cost_usd_total{model="chat"} 0.0']


def _usage_stream(text, prompt, completion):
    return b"".join(b"data: " + json.dumps(chunk).encode("utf-8") + b"\n\n" for chunk in (
        {"choices": [{"index": 0, "delta": {"role": "assistant", "content": text}, "finish_reason": None}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
         "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}},
    )) + b"data: [DONE]\n\n"


@pytest.mark.parametrize("shared", ["budget", "limiter"])
def test_rows_drawing_from_one_shared_account_count_a_failed_over_turn_once(upstreams, tmp_path, shared):
    """Two rows naming the same store and key (one team's budget, one account's pace), the one the other's
    fallback: the turn the fallback answered is held and settled once on the account (before: once by each row's
    Budget, so the fallback's $0.0000147 counted $0.0000294, two requests), and takes one slot of the shared pace
    (before: two)."""
    from agenthub import Budget, cost

    first, second = upstreams
    first.routes["ant"] = OVERLOADED
    second.routes["chat"] = Route(_usage_stream("from the fallback", 50, 12))
    store = "sqlite:///" + str(tmp_path / "team.db")
    account = {"budget": {"max_usd": 1, "store": store, "key": "team"},
               "limiter": {"rpm": 600, "store": store, "key": "team"}}[shared]
    models = [dict(rows(first, second)[0], **{shared: account}),
              dict(rows(first, second)[1], model="gpt-4o-mini", **{shared: account})]
    app = make_app({"models": models, "api_keys": [KEY]}, environ={})
    with Builtin(app) as server:
        events = stream(server.url, "claude")
    assert text_of(events) == "from the fallback"
    assert [r["route"] for r in first.requests + second.requests] == ["ant", "chat"]
    if shared == "budget":
        answer = cost("gpt-4o-mini", {"prompt_tokens": 50, "cached_tokens": 0, "thoughts_tokens": 0,
                                      "response_tokens": 12})
        team = Budget(1, store=store, key="team")
        assert (team.requests, round(team.spent_usd, 12), team.reserved_usd) == (2 - 1, round(answer, 12), 0.0)
    else:  # the primary's attempt and the fallback's took a slot each, both through the called row's limiter
        assert [app.models[row].client.limiter.requests for row in ("claude", "chat")] == [2, 0]


def test_a_budget_row_whose_fallback_has_no_price_is_refused_when_the_app_is_made(upstreams):
    """A row with a budget (without allow_unpriced) and a fallback the catalog has no price for: every turn failed
    over to it would be refused by the budget (a 400 ConfigError, the answer lost) exactly while the primary is down;
    the config is refused when the app is made instead.  With allow_unpriced the fallback answers, uncounted."""
    first, second = upstreams
    models = [dict(rows(first, second)[0], budget={"max_usd": 1}), rows(first, second)[1]]  # chat: "backup-model"
    with pytest.raises(ConfigError) as info:
        make_app({"models": models, "api_keys": [KEY]}, environ={})
    assert str(info.value) == (
        "server config models[0] ('claude'): fallbacks entry 'backup-model' (openai-chat) has no list price in the "
        "catalog: the budget cannot bound what a turn there costs, so it would refuse every turn failed over to it, "
        "while the primary is down; give a priced model, or Budget(max_usd, allow_unpriced=True) to let it run "
        "uncounted")
    first.routes["ant"] = OVERLOADED
    second.routes["chat"] = Route(chat_stream("from ", "the fallback"))
    models[0]["budget"] = {"max_usd": 1, "allow_unpriced": True}
    app = make_app({"models": models, "api_keys": [KEY]}, environ={})
    with Builtin(app) as server:
        assert text_of(stream(server.url, "claude")) == "from the fallback"
    assert app.models["claude"].client.budget.spent_usd == 0.0
