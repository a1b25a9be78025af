"""Issue 23 §3: agenthub.Budget on its own: reserve the worst case, settle with the actual cost, refuse what
would exceed, thread-safe; and the local token estimate it reserves with when nothing was counted.

Prices (catalog snapshot, genai-prices 0.2.3): claude-sonnet-4-6 input 3, cached 0.30, write 5 min 3.75,
write 1 h 6, output 15; gpt-5.5 input 5 (10 above 272K input), cached 0.5, output 30 (45 above 272K).
"""

import json
import pickle
import threading

import pytest

import agenthub
from agenthub import Budget, BudgetExceededError, ConfigError
from agenthub.budget import IMAGE_TOKENS, estimate_tokens, worst_case_usd
from agenthub.errors import error_from_json, error_to_json


def test_the_worst_case_is_all_input_the_dearest_way_plus_max_tokens_of_output():
    # prompt caching on (the default): the input may all be 5-minute cache writes
    assert worst_case_usd("claude-sonnet-4-6", 1000, 500) == pytest.approx((1000 * 3.75 + 500 * 15) / 1e6)
    assert worst_case_usd("claude-sonnet-4-6", 1000, 500, prompt_caching="disable") == pytest.approx(
        (1000 * 3 + 500 * 15) / 1e6)
    assert worst_case_usd("claude-sonnet-4-6", 1000, 500, prompt_caching=agenthub.PromptCaching.ENHANCE) == \
        pytest.approx((1000 * 6 + 500 * 15) / 1e6)
    assert worst_case_usd("gpt-5.5", 1000, 500) == pytest.approx((1000 * 5 + 500 * 30) / 1e6)  # no write surcharge
    assert worst_case_usd("gpt-5.5", 300000, 500) == pytest.approx((300000 * 10 + 500 * 45) / 1e6)  # long context
    assert worst_case_usd("gpt-5.5", 1000, 500, batch=True) == pytest.approx((1000 * 2.5 + 500 * 15) / 1e6)
    assert worst_case_usd("my-model", 1000, 500) is None
    with pytest.raises(ConfigError):
        worst_case_usd("gpt-5.5", 1, 1, prompt_caching="sometimes")


def test_reserve_then_settle_with_the_actual_cost():
    budget = Budget(0.05)
    assert (budget.spent_usd, budget.reserved_usd, budget.remaining_usd) == (0.0, 0.0, 0.05)
    hold = budget.reserve("claude-sonnet-4-6", 1000, 500)
    worst = (1000 * 3.75 + 500 * 15) / 1e6
    assert hold.needed_usd == pytest.approx(worst)
    assert budget.reserved_usd == pytest.approx(worst) and budget.remaining_usd == pytest.approx(0.05 - worst)
    usage = {"cached_tokens": 200, "prompt_tokens": 800, "thoughts_tokens": None, "response_tokens": 120}
    actual = hold.settle(usage, cache_writes=300)
    assert actual == pytest.approx((500 * 3 + 300 * 3.75 + 200 * 0.3 + 120 * 15) / 1e6)
    assert budget.spent_usd == pytest.approx(actual) and budget.reserved_usd == 0.0
    assert budget.remaining_usd == pytest.approx(0.05 - actual)
    assert hold.settle(usage) == 0.0 and budget.spent_usd == pytest.approx(actual)  # settled once only
    assert budget.requests == 1


def test_a_release_gives_the_hold_back_and_an_unpriceable_answer_counts_the_hold():
    budget = Budget(1)
    hold = budget.reserve("gpt-5.5", 100, 100)
    hold.release()
    assert (budget.spent_usd, budget.reserved_usd) == (0.0, 0.0)
    hold = budget.reserve("gpt-5.5", 100, 100)
    assert hold.settle(None) == pytest.approx((100 * 5 + 100 * 30) / 1e6)  # no usage came back: the worst case
    assert budget.spent_usd == pytest.approx(hold.needed_usd)


def test_the_request_that_would_exceed_is_refused_with_the_numbers():
    budget = Budget(0.02)
    first = budget.reserve("gpt-5.5", 1000, 500)  # 0.02 exactly: allowed
    assert first.needed_usd == pytest.approx(0.02) and budget.remaining_usd == pytest.approx(0.0)
    with pytest.raises(BudgetExceededError) as caught:
        budget.reserve("gpt-5.5", 10, 10)
    error = caught.value
    assert (error.spent_usd, error.limit_usd) == (pytest.approx(0.02), 0.02)
    assert error.needed_usd == pytest.approx((10 * 5 + 10 * 30) / 1e6)
    assert isinstance(error, agenthub.AgentHubError) and not error.retryable
    assert "not sent" in str(error)
    assert budget.reserved_usd == pytest.approx(0.02)  # the refused request holds nothing
    first.settle({"prompt_tokens": 1000, "cached_tokens": 0, "thoughts_tokens": 0, "response_tokens": 10})
    assert budget.spent_usd == pytest.approx((1000 * 5 + 10 * 30) / 1e6)
    budget.reserve("gpt-5.5", 10, 10)  # the answer was short: room again
    copy = pickle.loads(pickle.dumps(error))
    assert (copy.spent_usd, copy.limit_usd, copy.needed_usd) == (error.spent_usd, error.limit_usd, error.needed_usd)
    back = error_from_json(error_to_json(error))
    assert type(back) is BudgetExceededError and back.needed_usd == error.needed_usd


def test_unpriced_models_are_refused_unless_allowed():
    with pytest.raises(ConfigError) as caught:
        Budget(1).reserve("my-model", 10, 10)
    assert "allow_unpriced=True" in str(caught.value)
    with pytest.raises(ConfigError):
        Budget(1).reserve("claude-sonnet-4-6", 10, 10, tier="priority")  # no priority price for it
    budget = Budget(1, allow_unpriced=True)
    hold = budget.reserve("my-model", 10, 10)
    assert hold.settle({"prompt_tokens": 10, "response_tokens": 10}) == 0.0
    assert budget.spent_usd == 0.0 and budget.requests == 1


@pytest.mark.parametrize("bad", [-1, float("nan"), float("inf"), "5", True, None])
def test_bad_limits_and_counts_are_config_errors(bad):
    with pytest.raises(ConfigError):
        Budget(bad)
    with pytest.raises(ConfigError):
        Budget(1).reserve("gpt-5.5", bad if not isinstance(bad, float) else -1, 10)
    with pytest.raises(ConfigError):
        Budget(1, allow_unpriced="yes")


def test_charge_counts_spending_made_elsewhere():
    budget = Budget(1)
    budget.charge(0.25)
    assert budget.spent_usd == 0.25 and budget.remaining_usd == 0.75
    with pytest.raises(ConfigError):
        budget.charge(-1)


def test_threads_sharing_a_budget_never_hold_more_than_it():
    budget = Budget(0.01)
    per = worst_case_usd("gpt-5.5", 100, 100)  # 0.0035: two fit, a third does not
    granted, refused, lock = [], [], threading.Lock()
    start = threading.Barrier(16)

    def worker():
        start.wait(timeout=10)
        for _ in range(50):
            try:
                hold = budget.reserve("gpt-5.5", 100, 100)
            except BudgetExceededError:
                with lock:
                    refused.append(1)
                continue
            assert budget.reserved_usd + budget.spent_usd <= 0.01 + 1e-12
            with lock:
                granted.append(hold)
            hold.release()

    threads = [threading.Thread(target=worker) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert not any(thread.is_alive() for thread in threads)
    assert len(granted) + len(refused) == 16 * 50 and granted
    assert budget.reserved_usd == pytest.approx(0.0, abs=1e-15) and per * 2 < 0.01 < per * 3


def test_the_local_estimate():
    messages = [{"role": "user", "content_items": [{"type": "text", "text": "a" * 30},
                                                  {"type": "inline_data", "mime_type": "image/png", "data": b"x"}]},
                {"role": "assistant", "content_items": [
                    {"type": "tool_call", "name": "get", "arguments": {"q": "é"}, "tool_call_id": "c1"}]}]
    config = {"system_prompt": "be brief", "tools": [{"name": "get", "description": "d", "parameters": {}}]}
    tool_json = '{"description": "d", "name": "get", "parameters": {}}'
    assert estimate_tokens(messages, config) == (
        4 + 10 + IMAGE_TOKENS + 4 + 1 + 4 + 4 + 3 + 8 + -(-len(tool_json) // 3))  # '{"q": "é"}' is 11 bytes: 4
    assert estimate_tokens([], None) == 0
    assert estimate_tokens([{"role": "user", "content_items": [{"type": "text", "text": "漢字漢字"}]}]) == 4 + 4


# -- AutoLLMClient(..., budget=...) against a local server that counts the requests -----------------

import os  # noqa: E402

from agenthub import AutoLLMClient, UpstreamError  # noqa: E402
from agenthub.__main__ import main  # noqa: E402

from faultserver import fast_backoff  # noqa: E402,F401  (fixture)
from sse_server import Answer, SSEServer  # noqa: E402

RECORDINGS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "agenthub", "recordings")
HI = [{"role": "user", "content_items": [{"type": "text", "text": "hi"}]}]


def _answer():
    # claude-sonnet-4-6's recorded answer: prompt 38, cached 412, response 24 tokens
    with open(os.path.join(RECORDINGS, "anthropic", "weather_answer.sse"), "rb") as handle:
        return Answer([handle.read()])


def _claude(server, budget, **kwargs):
    return AutoLLMClient("claude-sonnet-4-6", api_key="sk-ant-test", base_url=server.url, budget=budget,
                         max_retries=0, **kwargs)


# the hold: "hi" is 1 + 4 estimated input tokens, as 5-minute cache writes, + 1000 output tokens
HOLD = (5 * 3.75 + 1000 * 15) / 1e6
ACTUAL = (38 * 3 + 412 * 0.3 + 24 * 15) / 1e6


def test_the_request_that_would_exceed_the_budget_is_never_sent():
    budget = Budget(0.016)
    with SSEServer() as server:
        server.answers.extend([_answer(), _answer(), _answer()])
        client = _claude(server, budget)
        for turn in range(2):
            events = list(client.streaming_response(HI, {"max_tokens": 1000}))
            assert events[-1]["event_type"] == "stop"
            assert len(server.requests) == turn + 1
            assert budget.spent_usd == pytest.approx(ACTUAL * (turn + 1)) and budget.reserved_usd == 0.0
        assert 2 * ACTUAL + HOLD > 0.016 > ACTUAL + HOLD
        stream = client.streaming_response(HI, {"max_tokens": 1000})
        with pytest.raises(BudgetExceededError) as caught:
            next(stream)
        assert len(server.requests) == 2  # the third request never left
    error = caught.value
    assert (error.spent_usd, error.limit_usd, error.needed_usd) == (
        pytest.approx(2 * ACTUAL), 0.016, pytest.approx(HOLD))
    assert budget.spent_usd == pytest.approx(2 * ACTUAL) and budget.reserved_usd == 0.0
    # a smaller max_tokens fits: the worst case is what counts
    with SSEServer() as server:
        server.answers.append(_answer())
        list(_claude(server, budget).streaming_response(HI, {"max_tokens": 100}))
        assert len(server.requests) == 1


def test_a_stream_under_way_holds_its_worst_case_and_the_hold_is_shared():
    budget = Budget(1.5 * HOLD)
    with SSEServer() as server:
        server.answers.extend([_answer(), _answer()])
        first = _claude(server, budget).streaming_response(HI, {"max_tokens": 1000})
        next(first)  # the request is out, its answer not finished: the hold stands
        assert budget.reserved_usd == pytest.approx(HOLD)
        other = _claude(server, budget)  # another client, the same budget
        with pytest.raises(BudgetExceededError):
            list(other.streaming_response(HI, {"max_tokens": 1000}))
        assert len(server.requests) == 1
        list(first)
        assert budget.reserved_usd == 0.0 and budget.spent_usd == pytest.approx(ACTUAL)
        list(other.streaming_response(HI, {"max_tokens": 1000}))
        assert len(server.requests) == 2


def test_a_failed_request_gives_its_hold_back_and_retries_share_one_hold(fast_backoff):
    budget = Budget(1)
    busy = b'{"type": "error", "error": {"type": "overloaded_error", "message": "busy"}}'
    with SSEServer() as server:
        server.answers.append(Answer([b'{"type": "error", "error": {"type": "invalid_request_error", '
                                      b'"message": "bad"}}'], status=400, headers={"Content-Type": "application/json"}))
        with pytest.raises(UpstreamError):
            list(_claude(server, budget).streaming_response(HI, {"max_tokens": 1000}))
        assert (budget.spent_usd, budget.reserved_usd) == (0.0, 0.0)
        server.answers.extend([Answer([busy], status=529, headers={"Content-Type": "application/json"}), _answer()])
        client = AutoLLMClient("claude-sonnet-4-6", api_key="sk-ant-test", base_url=server.url, budget=budget,
                               max_retries=1)
        list(client.streaming_response(HI, {"max_tokens": 1000}))
        assert len(server.requests) == 3 and budget.requests == 1  # one hold for the call, settled once
        assert budget.spent_usd == pytest.approx(ACTUAL)


def test_unpriced_models_under_a_budget():
    with SSEServer() as server:
        server.answers.append(Answer([b'data: {"choices": [{"index": 0, "delta": {"content": "ok"}, '
                                      b'"finish_reason": "stop"}]}\n\n', b"data: [DONE]\n\n"]))
        client = AutoLLMClient("my-model", client_type="openai-chat", base_url=server.url + "/v1", budget=Budget(1),
                               max_retries=0)
        with pytest.raises(ConfigError) as caught:
            list(client.streaming_response(HI, {"max_tokens": 10}))
        assert "allow_unpriced=True" in str(caught.value) and server.requests == []
        loose = Budget(1, allow_unpriced=True)
        client = AutoLLMClient("my-model", client_type="openai-chat", base_url=server.url + "/v1", budget=loose,
                               max_retries=0)
        list(client.streaming_response(HI))
        assert len(server.requests) == 1 and loose.spent_usd == 0.0 and loose.requests == 1
    with pytest.raises(ConfigError):
        AutoLLMClient("claude-sonnet-4-6", api_key="k", budget=5)


def test_a_client_with_a_budget_does_not_cross_processes():
    client = AutoLLMClient("claude-sonnet-4-6", api_key="sk-ant-test", budget=Budget(1))
    with pytest.raises(ConfigError):
        pickle.dumps(client)


def test_the_cli_budget(capsys):
    with SSEServer() as server:
        server.answers.append(_answer())
        args = ["chat", "claude-sonnet-4-6", "hi", "--client-type", "anthropic", "--base-url", server.url,
                "--max-tokens", "1000"]
        os.environ.pop("ANTHROPIC_API_KEY", None)
        assert main(args + ["--budget", "0.01"]) == 1
        err = capsys.readouterr().err
        assert err.startswith("error: BudgetExceededError: the request to claude-sonnet-4-6 could cost $0.015019")
        assert server.requests == []
        assert main(args + ["--budget", "0.02"]) == 0
        assert len(server.requests) == 1
        assert capsys.readouterr().err.rstrip().endswith("cost $0.000598")


def test_an_embedding_client_under_a_budget_holds_its_input_only():
    budget = Budget(1)
    document = {"object": "list", "model": "text-embedding-3-small",
                "data": [{"object": "embedding", "index": 0, "embedding": [0.5, -0.25]}],
                "usage": {"prompt_tokens": 7, "total_tokens": 7}}
    with SSEServer() as server:
        server.answers.append(Answer([json.dumps(document).encode()], headers={"Content-Type": "application/json"}))
        client = AutoLLMClient("text-embedding-3-small", api_key="sk-test", base_url=server.url + "/v1", budget=budget,
                               max_retries=0)
        assert client.embed(["hello world"]) == [[0.5, -0.25]]
        assert server.requests[0]["path"] == "/v1/embeddings"
    assert budget.spent_usd == pytest.approx(7 * 0.02 / 1e6) and budget.reserved_usd == 0.0


def test_a_fallback_named_by_model_shares_the_budget(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    budget = Budget(1)
    client = AutoLLMClient("gpt-5.5", api_key="sk-test", budget=budget, fallbacks=["claude-sonnet-4-6"])
    fallback = client.fallbacks[0]
    assert fallback.budget is budget
    assert [type(hook).__name__ for hook in fallback.hooks].count("BudgetHook") == 1
    # in a failover call the primary's BudgetHook holds for the fallback's attempts: its own (the same budget) is
    # not run a second time
    from agenthub.failover import merge_hooks

    assert merge_hooks(client.hooks, fallback.hooks) == list(client.hooks)


def test_a_bulk_job_under_one_budget_stops_sending_at_the_limit(tmp_path, monkeypatch):
    """jobs.run's clients share one Budget through client_factory: the rows that could exceed it are error
    rows (BudgetExceededError) and never reach the server.  deepseek-v4-flash at 12:00 UTC (standard,
    off-peak): 0.15 in, 0.6 out, held at its peak tier (0.3 / 1.2: the dearest it may be billed at); a row "rN"
    holds 6 estimated input tokens + 16 output, costs 10 in + 5 out (the server's usage)."""
    from agenthub import jobs
    from agenthub.jobs import read_output

    from jobs_server import JobServer
    from money_clock import fix_clock

    fix_clock(monkeypatch, "12:00")
    budget = Budget(32e-6)
    hold, actual = (6 * 0.3 + 16 * 1.2) / 1e6, (10 * 0.15 + 5 * 0.6) / 1e6
    assert 2 * actual + hold < 32e-6 < 3 * actual + hold

    def factory(model, client_type, base_url):
        return AutoLLMClient(model, client_type=client_type, base_url=base_url, max_retries=0, budget=budget)

    with JobServer() as server:
        path = tmp_path / "in.jsonl"
        with open(str(path), "w") as handle:
            for i in range(6):
                text = {"type": "text", "text": "row{}".format(i)}
                handle.write(json.dumps({"id": "r{}".format(i), "model": "deepseek-v4-flash",
                                         "config": {"max_tokens": 16},
                                         "messages": [{"role": "user", "content_items": [text]}],
                                         "client_type": "openai-chat", "base_url": server.base_url}) + "\n")
        summary = jobs.run(str(path), str(tmp_path / "out.jsonl"), workers=1, progress=False, client_factory=factory)
        assert sum(server.counts.values()) == 3
    assert (summary.done, summary.failed) == (3, 3)
    errors = [row["error"] for row in read_output(str(tmp_path / "out.jsonl")) if row["error"]]
    assert len(errors) == 3 and all(error["type"] == "BudgetExceededError" for error in errors)
    assert budget.spent_usd == pytest.approx(3 * actual) and budget.reserved_usd == 0.0


def test_one_local_estimate_for_the_budget_the_limiter_and_count_tokens():
    from agenthub import estimate, limiter

    assert estimate_tokens is estimate.estimate_tokens
    assert limiter.estimate_tokens is estimate.estimate_with_output
    messages = [{"role": "user", "content_items": [{"type": "text", "text": "abc"}]}]
    assert limiter.estimate_tokens(messages, {"max_tokens": 7}) == estimate_tokens(messages, {"max_tokens": 7}) + 7


@pytest.mark.parametrize("mime_type, size, tokens", [
    ("application/pdf", 1000, 1600),               # a small document: at least MEDIA_TOKENS
    ("application/pdf", 2_000_000, 1_000_000),     # from its size: 2 bytes a token, on the high side
    ("text/csv", 90_001, 45_001),
    ("image/png", 2_000_000, IMAGE_TOKENS),        # an image is an image, whatever its size
    ("audio/wav", 2_000_000, 1600),
    ("video/mp4", 2_000_000, 1600),
])
def test_a_document_is_estimated_from_its_size(mime_type, size, tokens):
    """Issue 29 D4: a PDF counted 1600 tokens whatever its size, so 16 threads spent 36x a budget."""
    inline = [{"role": "user", "content_items": [{"type": "inline_data", "mime_type": mime_type, "data": b"%" * size}]}]
    assert estimate_tokens(inline) == 4 + tokens
    import base64

    uri = "data:{};base64,{}".format(mime_type, base64.b64encode(b"%" * size).decode("ascii"))
    as_url = [{"role": "user", "content_items": [{"type": "image_url", "image_url": uri}]}]
    assert estimate_tokens(as_url) == 4 + tokens
    result = [{"role": "user", "content_items": [{"type": "tool_result", "tool_call_id": "c", "text": "",
                                                  "images": [uri, "https://example.com/a.png"]}]}]
    assert estimate_tokens(result) == 4 + tokens + IMAGE_TOKENS


def test_a_document_sent_as_an_image_url_data_uri_is_held_at_its_size():
    """An ``image_url`` item's URL is its ``image_url`` field (the data model): a 2 MB PDF sent as a data: URI was
    held as one image (1600 tokens: $0.0075 on claude-sonnet-4-6), so a $1 budget sent it (about $3.75 of input)."""
    import base64

    uri = "data:application/pdf;base64," + base64.b64encode(b"%" * 2000000).decode("ascii")
    pdf = [{"role": "user", "content_items": [{"type": "image_url", "image_url": uri},
                                              {"type": "text", "text": "Summarise it."}]}]
    assert estimate_tokens(pdf) == 4 + 1000000 + 5
    budget = Budget(1.0)
    with SSEServer() as server:
        server.answers.append(_answer())
        with pytest.raises(BudgetExceededError) as caught:
            list(_claude(server, budget).streaming_response(pdf, {"max_tokens": 1000}))
        assert server.requests == []
    assert caught.value.needed_usd == pytest.approx((1000009 * 3.75 + 1000 * 15) / 1e6)
    assert (budget.spent_usd, budget.reserved_usd) == (0.0, 0.0)


def test_a_refusal_for_the_catalogs_output_limit_says_to_set_max_tokens(capsys):
    """Issue 29 C1: without max_tokens the hold is the model's whole output limit (128000 for gpt-5.5): the
    refusal says so and how to hold less; with max_tokens set the message stays as it was."""
    with SSEServer() as server:
        client = AutoLLMClient("gpt-5.5", api_key="sk-test", base_url=server.url + "/v1", budget=Budget(1))
        with pytest.raises(BudgetExceededError) as caught:
            list(client.streaming_response(HI))
        assert str(caught.value).endswith(
            "; the budget of $1.000000 has $0.000000 spent or held: not sent; max_tokens is not set, so the "
            "whole output limit of gpt-5.5 (128000 tokens) is held: set max_tokens to hold less")
        assert (caught.value.limit_usd, caught.value.spent_usd) == (1.0, 0.0) and caught.value.needed_usd > 3
        with pytest.raises(BudgetExceededError) as bounded:
            list(client.streaming_response(HI, {"max_tokens": 200000}))
        assert str(bounded.value).endswith("spent or held: not sent")
        os.environ.pop("OPENAI_API_KEY", None)
        assert main(["chat", "gpt-5.5", "hi", "--client-type", "openai-chat", "--base-url", server.url + "/v1",
                     "--budget", "1"]) == 1
        err = capsys.readouterr().err
        assert err.rstrip().endswith("--max-tokens is not set, so the whole output limit of gpt-5.5 (128000 tokens) "
                                     "is held: set --max-tokens to hold less")
        assert server.requests == []
