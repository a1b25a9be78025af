"""Issue 29 A8, A9: usage a server reports is checked once (``stream.checked_usage``, in the stream driver)
before it reaches a rate limiter, a budget, a price or a bulk job; what cannot be counted is never counted as
free, and no count (10**400 included) makes a limiter hold for days or raises OverflowError."""

import json
import logging

import pytest

from agenthub import AutoLLMClient, Budget, BudgetExceededError, RateLimiter, cost, jobs
from agenthub.jobs import read_output
from agenthub.limiter import MAX_PAUSE
from agenthub.stream import MAX_USAGE_TOKENS, checked_usage, usage_count

from sse_server import Answer, SSEServer

HI = [{"role": "user", "content_items": [{"type": "text", "text": "hi"}]}]
#: gpt-4.1-mini's list prices (catalog snapshot): input 0.4, output 1.6 per 1M tokens
HOLD = ((1 + 4) * 0.4 + 1000 * 1.6) / 1e6  # "hi" estimated as 5 input tokens, + max_tokens 1000 of output


def _chat(usage):
    """An openai-chat stream answering "ok", with ``usage`` as its usage chunk (None: no usage chunk)."""
    def sse(obj):
        return b"data: " + json.dumps(obj).encode("utf-8") + b"\n\n"

    head = {"id": "c1", "object": "chat.completion.chunk", "model": "gpt-4.1-mini"}
    out = sse(dict(head, choices=[{"index": 0, "delta": {"role": "assistant", "content": "ok"}, "finish_reason": None}]))
    out += sse(dict(head, choices=[{"index": 0, "delta": {}, "finish_reason": "stop"}]))
    if usage is not None:
        raw = json.dumps(dict(head, choices=[])).encode("utf-8")[:-1] + b', "usage": ' + usage + b"}"
        out += b"data: " + raw + b"\n\n"
    return Answer([out + b"data: [DONE]\n\n"])


def _client(server, **kw):
    return AutoLLMClient("gpt-4.1-mini", client_type="openai-chat", api_key="sk-test", base_url=server.url,
                         max_retries=0, **kw)


NOTHING = [None, b"{}", b'{"prompt_tokens": null, "completion_tokens": null}',
           b'{"prompt_tokens": -5, "completion_tokens": -5}', b'{"prompt_tokens": 0, "completion_tokens": 0}',
           b'{"prompt_tokens": "12", "completion_tokens": "3"}', b'{"prompt_tokens": 0, "completion_tokens": 7}']


@pytest.mark.parametrize("usage", NOTHING)
def test_an_answer_whose_usage_counts_nothing_is_charged_its_whole_hold(usage):
    budget = Budget(3.5 * HOLD)  # three holds fit, the fourth does not
    with SSEServer() as server:
        server.answers.extend([_chat(usage) for _ in range(4)])
        client = _client(server, budget=budget)
        for _ in range(3):
            assert client.response(HI, {"max_tokens": 1000})["content_items"][0]["text"] == "ok"
        assert budget.spent_usd == pytest.approx(3 * HOLD) and budget.reserved_usd == 0.0
        with pytest.raises(BudgetExceededError):
            client.response(HI, {"max_tokens": 1000})
        assert len(server.requests) == 3


def test_a_hold_settled_with_usage_that_counts_nothing_counts_the_hold():
    budget = Budget(1)
    for usage in (None, {}, {"prompt_tokens": None, "response_tokens": None}, {"prompt_tokens": -3},
                  {"prompt_tokens": 0, "cached_tokens": 0, "response_tokens": 9}, {"prompt_tokens": "7"},
                  {"prompt_tokens": 10 ** 400}, {"prompt_tokens": 2.5}):
        hold = budget.reserve("gpt-5.5", 100, 100)
        assert hold.settle(usage) == pytest.approx((100 * 5 + 100 * 30) / 1e6), usage
    hold = budget.reserve("gpt-5.5", 100, 100)
    assert hold.settle({"prompt_tokens": 10, "response_tokens": 2}) == pytest.approx((10 * 5 + 2 * 30) / 1e6)


def test_cost_of_usage_with_no_count_or_a_bad_count_is_unknown():
    assert cost("gpt-5.5", {}) is None
    assert cost("gpt-5.5", {"prompt_tokens": None, "cached_tokens": None, "thoughts_tokens": None,
                            "response_tokens": None}) is None
    for bad in (-1, "10", True, 2.5, float("inf"), float("nan"), 10 ** 400, MAX_USAGE_TOKENS + 1):
        assert cost("gpt-5.5", {"prompt_tokens": 10, "response_tokens": bad}) is None, bad
    zero = {"prompt_tokens": 0, "cached_tokens": 0, "thoughts_tokens": 0, "response_tokens": 0}
    assert cost("gpt-5.5", zero) == 0.0  # counted zeros are a count (a worst case of nothing)
    assert cost("gpt-5.5", {"prompt_tokens": 10.0, "response_tokens": 2}) == pytest.approx((10 * 5 + 2 * 30) / 1e6)


def test_the_usage_rule():
    assert [usage_count(v) for v in (0, 7, 7.0, MAX_USAGE_TOKENS)] == [0, 7, 7, MAX_USAGE_TOKENS]
    assert [usage_count(v) for v in (None, -1, 7.5, "7", True, float("inf"), float("nan"), MAX_USAGE_TOKENS + 1,
                                     10 ** 400)] == [None] * 9
    good = {"cached_tokens": 1, "prompt_tokens": 2, "thoughts_tokens": None, "response_tokens": 3}
    assert checked_usage(good) == good
    empty = {"cached_tokens": None, "prompt_tokens": None, "thoughts_tokens": None, "response_tokens": None}
    assert checked_usage(dict(good, prompt_tokens=10 ** 400)) == empty  # one bad bucket: none can be trusted
    assert checked_usage(None) == empty and checked_usage([1, 2]) == empty
    zeros = {"cached_tokens": None, "prompt_tokens": 0, "thoughts_tokens": None, "response_tokens": 0}
    assert checked_usage({"prompt_tokens": 0, "response_tokens": 0}) == zeros  # as the server said (a Budget
    #                                                                           charges such an answer its hold)
    assert checked_usage({"prompt_tokens": 0, "response_tokens": 3})["response_tokens"] == 3


ABSURD = [b'{"prompt_tokens": 1000000000, "completion_tokens": 5}',
          b'{"prompt_tokens": 1' + b"0" * 400 + b', "completion_tokens": 5}']


@pytest.mark.parametrize("usage", ABSURD, ids=["1e9", "10**400"])
def test_absurd_usage_never_stalls_a_limiter_nor_raises_overflow(usage, caplog):
    limiter = RateLimiter(tpm=60000)
    budget = Budget(1.0)
    with SSEServer() as server:
        server.answers.append(_chat(usage))
        with caplog.at_level(logging.WARNING, logger="agenthub"):
            message = _client(server, limiter=limiter, budget=budget).response(HI, {"max_tokens": 1000})
    assert message["usage_metadata"] == {"cached_tokens": None, "prompt_tokens": None, "thoughts_tokens": None,
                                         "response_tokens": None}
    assert "is not a token count: its usage is unknown" in caplog.text
    assert budget.spent_usd == pytest.approx(HOLD)  # unknown: the whole hold counts
    _, wait = limiter.reserve(0)
    assert wait < 2.0  # the estimate's (1005 tokens at 1000 a second) pace, not 1e6 s


def test_a_limiter_never_holds_longer_than_its_longest_pause():
    now = [1000.0]
    limiter = RateLimiter(tpm=60, clock=lambda: now[0])
    ticket, _ = limiter.reserve(10)
    limiter.settle(ticket, {"prompt_tokens": MAX_USAGE_TOKENS, "response_tokens": MAX_USAGE_TOKENS})
    # the 10 tokens booked (10 s at 60 a minute), then at most the longest pause more, whatever the usage said (a
    # settlement never pulls the pace back before what is booked: test_limiter's over-admission case)
    assert limiter.reserve(0)[1] == 10.0 + MAX_PAUSE  # (the request after the 0-token one goes with it)
    fresh = RateLimiter(tpm=60, clock=lambda: now[0])
    fresh.reserve(10 ** 400)  # a local estimate out of all bounds: no OverflowError either
    assert fresh.reserve(0)[1] == MAX_PAUSE


def test_a_bulk_job_with_absurd_usage_writes_every_row(tmp_path):
    with SSEServer() as server:
        server.answers.extend([_chat(ABSURD[1]) for _ in range(3)])
        src = tmp_path / "in.jsonl"
        src.write_text("".join(json.dumps({"id": "r{}".format(i), "model": "gpt-4.1-mini", "messages": HI,
                                           "client_type": "openai-chat", "base_url": server.url,
                                           "config": {"max_tokens": 16}}) + "\n" for i in range(3)))
        out = str(tmp_path / "out.jsonl")
        summary = jobs.run(str(src), out, workers=1, tpm=60000, progress=False,
                           client_factory=lambda model, client_type, base_url: AutoLLMClient(
                               model, client_type=client_type, base_url=base_url, api_key="sk-test", max_retries=0))
    rows = read_output(out)
    assert summary.done == 3 and summary.unpriced == 3 and len(rows) == 3
    assert all(row["error"] is None and row["cost_usd"] is None for row in rows)


UNCOUNTABLE = [b'{"prompt_tokens": -5, "completion_tokens": -5}', b'{"prompt_tokens": 12, "completion_tokens": -3000}',
               b'{"prompt_tokens": 12, "completion_tokens": "3000"}', b'{"prompt_tokens": 12, "completion_tokens": true}',
               b'{"prompt_tokens": 12, "completion_tokens": 7, "prompt_tokens_details": {"cached_tokens": 500}}',
               b'{"prompt_tokens": 0, "completion_tokens": 7}', b'{"prompt_tokens": null, "completion_tokens": 7}']


@pytest.mark.parametrize("usage", UNCOUNTABLE)
def test_usage_that_cannot_be_counted_is_unknown_on_every_path(usage, tmp_path, caplog):
    """A count that is none (negative, a string, a bool, more cached than prompt tokens) makes the answer's usage
    unknown, as ``checked_usage`` says, and an answer that counts no input is unknown on every path: the Budget
    charges its whole hold, a run's cost_usd and a job row's are None (the row unpriced).  They were read as 0 or
    as absent: a run and a job row priced the turn at 0.0 or at its output alone while the Budget charged the
    hold."""
    with SSEServer() as server:
        server.answers.extend([_chat(usage) for _ in range(3)])
        budget = Budget(1.0)
        with caplog.at_level(logging.WARNING, logger="agenthub"):
            message = _client(server, budget=budget).response(HI, {"max_tokens": 1000})
        result = _client(server).run(HI, {"max_tokens": 1000}, tools=[]).result()
        src = tmp_path / "in.jsonl"
        src.write_text(json.dumps({"id": "r", "model": "gpt-4.1-mini", "messages": HI,
                                   "config": {"max_tokens": 1000}}) + "\n")
        summary = jobs.run(str(src), str(tmp_path / "out.jsonl"), workers=1, progress=False,
                           client_factory=lambda *route: _client(server))
    counted = message["usage_metadata"]
    if counted["response_tokens"] != 7:  # a count that is none: the whole usage is unknown, with a warning
        assert counted == {"cached_tokens": None, "prompt_tokens": None, "thoughts_tokens": None,
                           "response_tokens": None}
        assert "is not a token count: its usage is unknown" in caplog.text
    assert (budget.spent_usd, budget.reserved_usd) == (pytest.approx(HOLD), 0.0)
    assert result.cost_usd is None
    assert read_output(str(tmp_path / "out.jsonl"))[0]["cost_usd"] is None
    assert (summary.unpriced, summary.cost_usd) == (1, 0.0)


@pytest.mark.parametrize("module, raw", [
    ("openai_chat", {"prompt_tokens": 12, "completion_tokens": -3}),
    ("openai_chat", {"prompt_tokens": 12, "completion_tokens": 3, "prompt_tokens_details": {"cached_tokens": "5"}}),
    ("openai_responses", {"input_tokens": 12, "output_tokens": 3, "input_tokens_details": {"cached_tokens": 40}}),
    ("anthropic", {"input_tokens": -12, "cache_creation_input_tokens": 20, "output_tokens": 3}),
    ("anthropic", {"input_tokens": 12, "output_tokens": True}),
    ("gemini", {"promptTokenCount": 12, "cachedContentTokenCount": 40, "candidatesTokenCount": 3}),
    ("gemini", {"promptTokenCount": 12, "candidatesTokenCount": 3, "thoughtsTokenCount": 2.5}),
    ("gemini_interactions", {"total_input_tokens": 10, "total_cached_tokens": 40, "total_output_tokens": 5}),
    ("gemini_interactions", {"total_input_tokens": "x", "total_output_tokens": 5}),
    ("bedrock", {"inputTokens": 12, "outputTokens": -1, "totalTokens": 11}),
])
def test_a_count_a_server_sent_that_is_none_makes_the_usage_unknown_on_every_wire(module, raw, caplog):
    """Each protocol's usage mapping hands a count that is no token count on to the driver's check (the whole usage
    unknown, with a warning): it was read as 0 (a negative count, more cached than input tokens) or as absent (a
    string, a bool, a fraction), and the turn was priced without it."""
    import importlib

    from agenthub.stream import empty_usage

    mapped = importlib.import_module("agenthub.providers." + module).map_usage(raw)
    with caplog.at_level(logging.WARNING, logger="agenthub"):
        assert checked_usage(mapped, module) == empty_usage()
    assert "is not a token count: its usage is unknown" in caplog.text
