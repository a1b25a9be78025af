"""Issue 23 §4: ``GET /v1/metrics`` of agenthub serve, in the Prometheus text format: requests, errors by
class, tokens by bucket, cost (agenthub.cost), open streams, per model row; behind the same key rule as
/v1/models."""

import json

import pytest
import requests

from agenthub import AutoLLMClient, cost
from agenthub.apps.server import make_app
from server_support import Builtin, Route, Upstream

KEY = "server-key-0123456789"
MESSAGES = [{"role": "user", "content_items": [{"type": "text", "text": "Hi"}]}]
USAGE = {"prompt_tokens": 3000, "completion_tokens": 500, "total_tokens": 3500,
         "prompt_tokens_details": {"cached_tokens": 2000}, "completion_tokens_details": {"reasoning_tokens": 100}}
#: what agenthub makes of USAGE (Chat Completions: the prompt count includes the cached tokens)
BUCKETS = {"prompt_tokens": 1000, "cached_tokens": 2000, "thoughts_tokens": 100, "response_tokens": 400}


def chat_sse(usage=USAGE, end=True):
    chunks = [{"id": "c", "object": "chat.completion.chunk", "model": "m",
               "choices": [{"index": 0, "delta": {"role": "assistant", "content": "hi"}, "finish_reason": None}]}]
    if end:
        chunks.append({"id": "c", "object": "chat.completion.chunk", "model": "m",
                       "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}], "usage": usage})
    return b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + (b"data: [DONE]\n\n" if end else b"")


ZERO = """\
# HELP agenthub_requests_total Stream requests that named the model row.
# TYPE agenthub_requests_total counter
agenthub_requests_total{model="priced"} 0
agenthub_requests_total{model="local \\"q\\""} 0
# HELP agenthub_errors_total Stream requests that ended in an error, by error class.
# TYPE agenthub_errors_total counter
# HELP agenthub_tokens_total Tokens in the answers' usage, by usage bucket.
# TYPE agenthub_tokens_total counter
agenthub_tokens_total{model="priced",bucket="prompt_tokens"} 0
agenthub_tokens_total{model="priced",bucket="cached_tokens"} 0
agenthub_tokens_total{model="priced",bucket="thoughts_tokens"} 0
agenthub_tokens_total{model="priced",bucket="response_tokens"} 0
agenthub_tokens_total{model="local \\"q\\"",bucket="prompt_tokens"} 0
agenthub_tokens_total{model="local \\"q\\"",bucket="cached_tokens"} 0
agenthub_tokens_total{model="local \\"q\\"",bucket="thoughts_tokens"} 0
agenthub_tokens_total{model="local \\"q\\"",bucket="response_tokens"} 0
# HELP agenthub_cost_usd_total List price of the answers in USD (agenthub.cost).
# TYPE agenthub_cost_usd_total counter
agenthub_cost_usd_total{model="priced"} 0.0
agenthub_cost_usd_total{model="local \\"q\\""} 0.0
# HELP agenthub_unpriced_answers_total Answers with usage the catalog has no price for.
# TYPE agenthub_unpriced_answers_total counter
agenthub_unpriced_answers_total{model="priced"} 0
agenthub_unpriced_answers_total{model="local \\"q\\""} 0
# HELP agenthub_open_streams Streams whose response is open.
# TYPE agenthub_open_streams gauge
agenthub_open_streams{model="priced"} 0
agenthub_open_streams{model="local \\"q\\""} 0
# HELP agenthub_max_concurrent_streams Streams this process serves at once.
# TYPE agenthub_max_concurrent_streams gauge
agenthub_max_concurrent_streams 4
# HELP agenthub_model_info The upstream model and client type of each model row.
# TYPE agenthub_model_info gauge
agenthub_model_info{model="priced",upstream_model="gpt-4.1-mini",client_type="openai-chat"} 1
agenthub_model_info{model="local \\"q\\"",upstream_model="my-local-model",client_type="vllm"} 1
"""


@pytest.fixture()
def site():
    with Upstream() as up:
        app = make_app({"models": [
            {"id": "priced", "model": "gpt-4.1-mini", "client_type": "openai-chat", "base_url": up.url + "/priced/v1",
             "api_key": "sk-upstream-0123456789", "max_retries": 0},
            {"id": 'local "q"', "model": "my-local-model", "client_type": "vllm", "base_url": up.url + "/local/v1",
             "max_retries": 0},
        ], "api_keys": [KEY], "max_concurrent_streams": 4, "keepalive_seconds": 0.2})
        with Builtin(app) as server:
            yield up, app, server


def metrics(server, key=KEY, **headers):
    if key:
        headers["Authorization"] = "Bearer " + key
    return requests.get(server.url + "/v1/metrics", headers=headers, timeout=10)


def via(server, model_id):
    return AutoLLMClient(model_id, client_type="agenthub", base_url=server.url, api_key=KEY, max_retries=0)


def lines_of(text, name):
    return [line for line in text.splitlines() if line.startswith(name + "{") or line.startswith(name + " ")]


def test_a_fresh_server_lists_every_row_with_zeros(site):
    up, app, server = site
    answer = metrics(server)
    assert answer.status_code == 200
    assert answer.headers["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
    assert answer.text == ZERO


def test_requests_tokens_cost_errors_and_open_streams(site):
    up, app, server = site
    up.routes["priced"] = Route(chat_sse())
    up.routes["local"] = [Route(chat_sse()), Route(b'{"error": {"message": "slow down", "type": "rate_limit"}}',
                                                   status=429, headers={"Content-Type": "application/json"})]
    for _ in range(2):
        events = list(via(server, "priced").streaming_response(MESSAGES))
        assert events[-1]["usage_metadata"] == BUCKETS
    list(via(server, 'local "q"').streaming_response(MESSAGES))
    with pytest.raises(Exception) as caught:
        list(via(server, 'local "q"').streaming_response(MESSAGES))
    assert type(caught.value).__name__ == "RateLimitError"
    bad = requests.post(server.url + "/v1/stream", timeout=10, headers={
        "Authorization": "Bearer " + KEY, "Content-Type": "application/json"},
        data=json.dumps({"model": "priced", "messages": [{"role": "robot"}]}))
    assert bad.status_code == 400
    assert requests.post(server.url + "/v1/stream", timeout=10, headers={  # no model row: not counted per row
        "Authorization": "Bearer " + KEY, "Content-Type": "application/json"},
        data=json.dumps({"model": "nope", "messages": MESSAGES})).status_code == 404

    text = metrics(server).text
    assert lines_of(text, "agenthub_requests_total") == [
        'agenthub_requests_total{model="priced"} 3', 'agenthub_requests_total{model="local \\"q\\""} 2']
    assert lines_of(text, "agenthub_errors_total") == [
        'agenthub_errors_total{model="priced",class="ConfigError"} 1',
        'agenthub_errors_total{model="local \\"q\\"",class="RateLimitError"} 1']
    assert lines_of(text, "agenthub_tokens_total") == [
        'agenthub_tokens_total{model="priced",bucket="prompt_tokens"} 2000',
        'agenthub_tokens_total{model="priced",bucket="cached_tokens"} 4000',
        'agenthub_tokens_total{model="priced",bucket="thoughts_tokens"} 200',
        'agenthub_tokens_total{model="priced",bucket="response_tokens"} 800',
        'agenthub_tokens_total{model="local \\"q\\"",bucket="prompt_tokens"} 1000',
        'agenthub_tokens_total{model="local \\"q\\"",bucket="cached_tokens"} 2000',
        'agenthub_tokens_total{model="local \\"q\\"",bucket="thoughts_tokens"} 100',
        'agenthub_tokens_total{model="local \\"q\\"",bucket="response_tokens"} 400']
    # by hand, gpt-4.1-mini at $0.40 / $0.10 cached / $1.60 output per 1M tokens:
    # 1000 * 0.40 + 2000 * 0.10 + (100 + 400) * 1.60 = 1400 per 1M = $0.0014 an answer
    one = cost("gpt-4.1-mini", BUCKETS)
    assert abs(one - 0.0014) < 1e-12
    assert lines_of(text, "agenthub_cost_usd_total") == [
        'agenthub_cost_usd_total{model="priced"} ' + repr(one + one), 'agenthub_cost_usd_total{model="local \\"q\\""} 0.0']
    assert lines_of(text, "agenthub_unpriced_answers_total") == [
        'agenthub_unpriced_answers_total{model="priced"} 0', 'agenthub_unpriced_answers_total{model="local \\"q\\""} 1']
    assert lines_of(text, "agenthub_open_streams") == [
        'agenthub_open_streams{model="priced"} 0', 'agenthub_open_streams{model="local \\"q\\""} 0']


def test_an_open_stream_is_counted_until_its_response_closes(site):
    up, app, server = site
    up.routes["priced"] = Route(chat_sse(end=False), hold=True)
    stream = via(server, "priced").streaming_response(MESSAGES)
    assert next(stream)["event_type"] == "start"
    assert lines_of(metrics(server).text, "agenthub_open_streams") == [
        'agenthub_open_streams{model="priced"} 1', 'agenthub_open_streams{model="local \\"q\\""} 0']
    stream.close()
    deadline = 100  # the server sees the client gone at its next write: a keep-alive within 0.2 s
    while deadline and 'agenthub_open_streams{model="priced"} 0' not in metrics(server).text:
        deadline -= 1
        up.closed_event.wait(0.1)
    assert lines_of(metrics(server).text, "agenthub_open_streams")[0] == 'agenthub_open_streams{model="priced"} 0'
    # a client that leaves is no error of the stream's
    assert lines_of(metrics(server).text, "agenthub_errors_total") == []


@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer wrong-key-0123"}])
def test_metrics_need_the_key_like_models(site, headers):
    up, app, server = site
    answer = requests.get(server.url + "/v1/metrics", headers=headers, timeout=10)
    models = requests.get(server.url + "/v1/models", headers=headers, timeout=10)
    assert answer.status_code == models.status_code == 401
    assert answer.json()["error"]["type"] == "AuthenticationError"
    assert "agenthub_" not in answer.text


def test_metrics_refuse_other_sites_and_other_methods(site):
    up, app, server = site
    assert metrics(server, Origin="http://evil.example").status_code == 403
    answer = requests.post(server.url + "/v1/metrics", headers={"Authorization": "Bearer " + KEY}, timeout=10)
    assert answer.status_code == 405 and answer.headers["Allow"] == "GET, HEAD"
    head = requests.head(server.url + "/v1/metrics", headers={"Authorization": "Bearer " + KEY}, timeout=10)
    assert head.status_code == 200 and head.text == "" and int(head.headers["Content-Length"]) == len(ZERO)


def test_without_api_keys_metrics_are_open_on_loopback():
    with Upstream() as up:
        app = make_app({"models": [{"id": "a", "model": "m", "client_type": "openai-chat",
                                    "base_url": up.url + "/a/v1"}]})
        with Builtin(app) as server:
            answer = requests.get(server.url + "/v1/metrics", timeout=10)
            assert answer.status_code == 200
            assert 'agenthub_requests_total{model="a"} 0' in answer.text.splitlines()


def test_absurd_usage_from_the_upstream_never_reaches_the_metrics(site):
    # issue 29 A9: a 4300-digit prompt count broke /v1/metrics (500 until restart); a count no server could mean
    # is unknown from the stream driver on, so it is counted nowhere
    up, app, server = site
    up.routes["priced"] = [Route(chat_sse(dict(USAGE, prompt_tokens=int("9" * 4300)))), Route(chat_sse())]
    events = list(via(server, "priced").streaming_response(MESSAGES))
    assert events[-1]["usage_metadata"] == {"prompt_tokens": None, "cached_tokens": None, "thoughts_tokens": None,
                                            "response_tokens": None}
    list(via(server, "priced").streaming_response(MESSAGES))
    answer = metrics(server)
    assert answer.status_code == 200
    assert lines_of(answer.text, "agenthub_tokens_total")[:4] == [
        'agenthub_tokens_total{model="priced",bucket="prompt_tokens"} 1000',
        'agenthub_tokens_total{model="priced",bucket="cached_tokens"} 2000',
        'agenthub_tokens_total{model="priced",bucket="thoughts_tokens"} 100',
        'agenthub_tokens_total{model="priced",bucket="response_tokens"} 400']
    assert lines_of(answer.text, "agenthub_cost_usd_total")[0] == 'agenthub_cost_usd_total{model="priced"} ' + repr(
        cost("gpt-4.1-mini", BUCKETS))


def test_an_answer_an_error_followed_is_counted_as_the_answer_and_the_error(site):
    """The stop event came (the upstream billed the answer), then the call failed: a budget's store that could not
    settle it (here a hook of the process that raises when the call's route is done).  The metrics count the answer's
    tokens and cost, and the error (before: the error alone, the billed answer nowhere)."""
    from agenthub import attempts
    from agenthub.stores import StoreError

    class SettleFails(attempts.AttemptHook):
        def on_done(self, attempt):
            raise StoreError("the budget's store could not settle the answer", retryable=True)

    up, app, server = site
    up.routes["priced"] = Route(chat_sse())
    hook = SettleFails()
    attempts.register(hook)
    try:
        answer = requests.post(server.url + "/v1/stream", timeout=10, headers={
            "Authorization": "Bearer " + KEY, "Content-Type": "application/json"},
            data=json.dumps({"model": "priced", "messages": MESSAGES}))
    finally:
        attempts.unregister(hook)
    frames = [frame for frame in answer.text.split("\n\n") if frame]
    assert json.loads(frames[-2][len("data: "):])["event_type"] == "stop"
    assert frames[-1].startswith("event: error\ndata: ") and json.loads(frames[-1].split("data: ", 1)[1])[
        "error"]["type"] == "StoreError"
    text = metrics(server).text
    assert lines_of(text, "agenthub_errors_total") == ['agenthub_errors_total{model="priced",class="StoreError"} 1']
    assert lines_of(text, "agenthub_tokens_total")[:4] == [
        'agenthub_tokens_total{model="priced",bucket="prompt_tokens"} 1000',
        'agenthub_tokens_total{model="priced",bucket="cached_tokens"} 2000',
        'agenthub_tokens_total{model="priced",bucket="thoughts_tokens"} 100',
        'agenthub_tokens_total{model="priced",bucket="response_tokens"} 400']
    assert lines_of(text, "agenthub_cost_usd_total")[0] == 'agenthub_cost_usd_total{model="priced"} ' + repr(
        cost("gpt-4.1-mini", BUCKETS))
