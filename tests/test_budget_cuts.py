"""Money under faults: an attempt the provider accepted (its 200 head arrived) and that then brought no
answer (cut, idle timeout, abort) may have been billed (input once the request is accepted, the output
generated before the cut), so a Budget counts it at its whole hold, apart from the attempt that answers:
on a client's retries, across failover routes, and never again for a background response's resume (the
same response, billed once).  Exact numbers on local fakes that cut the stream."""

import json
import os
import threading

import pytest

from agenthub import AutoLLMClient, Budget, BudgetExceededError
from agenthub import errors as agenthub_errors
from agenthub.errors import StreamProtocolError, TransportError
from faultserver import fast_backoff  # noqa: F401  (fixture)
from longrun_server import LongrunServer, boundaries, responses_events
from sse_server import Answer, SSEServer

RECORDINGS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "agenthub", "recordings")
HI = [{"role": "user", "content_items": [{"type": "text", "text": "hi"}]}]
with open(os.path.join(RECORDINGS, "anthropic", "weather_answer.sse"), "rb") as _handle:
    WHOLE = _handle.read()  # claude's recorded answer: prompt 38, cached 412, response 24 tokens
HEAD = WHOLE.split(b"event: ping")[0]  # message_start and content_block_start: accepted, no event for the caller

# claude-sonnet-4-6: "hi" is 1 + 4 estimated input tokens held as 5-minute cache writes, + 1000 output tokens
HOLD = (5 * 3.75 + 1000 * 15) / 1e6
ACTUAL = (38 * 3 + 412 * 0.3 + 24 * 15) / 1e6
# claude-haiku-4-5, the fallback: the same hold and answer at its prices
HAIKU_HOLD = (5 * 1.25 + 1000 * 5) / 1e6
HAIKU_ACTUAL = (38 * 1 + 412 * 0.1 + 24 * 5) / 1e6


def _claude(url, budget, model="claude-sonnet-4-6", **kwargs):
    return AutoLLMClient(model, api_key="sk-ant-test", base_url=url, budget=budget, **kwargs)


def test_a_retried_cut_after_the_200_counts_its_hold_apart_from_the_answer(fast_backoff):
    budget = Budget(1)
    with SSEServer() as server:
        server.answers.extend([Answer([HEAD]), Answer([WHOLE])])
        stream = _claude(server.url, budget, max_retries=1).streaming_response(HI, {"max_tokens": 1000})
        events = list(stream)
        assert len(server.requests) == 2
    assert events[-1]["usage_metadata"] == {"prompt_tokens": 38, "cached_tokens": 412, "thoughts_tokens": None,
                                            "response_tokens": 24}
    assert budget.spent_usd == pytest.approx(HOLD + ACTUAL, rel=1e-12)  # before: ACTUAL, the cut attempt free
    assert (budget.reserved_usd, budget.requests) == (0.0, 2)
    assert stream._call.cut_usd == pytest.approx(HOLD, rel=1e-12)  # the cut attempt's own count, seen apart


def test_a_cut_with_no_byte_after_the_200_is_counted_even_when_not_retried():
    budget = Budget(1)
    with SSEServer() as server:
        server.answers.append(Answer([]))  # the 200 head, then the body ends: no terminal marker
        with pytest.raises(StreamProtocolError):
            list(_claude(server.url, budget, max_retries=0).streaming_response(HI, {"max_tokens": 1000}))
    assert budget.spent_usd == pytest.approx(HOLD, rel=1e-12)  # before: 0.0 (the hold was given back)
    assert (budget.reserved_usd, budget.requests) == (0.0, 1)


def test_each_retry_after_a_cut_holds_anew_and_one_the_budget_cannot_afford_is_not_sent(fast_backoff):
    budget = Budget(HOLD * 1.5)
    with SSEServer() as server:
        server.answers.extend([Answer([HEAD]), Answer([WHOLE])])
        with pytest.raises(BudgetExceededError) as caught:
            list(_claude(server.url, budget, max_retries=2).streaming_response(HI, {"max_tokens": 1000}))
        assert len(server.requests) == 1  # the retry would hold a second worst case the budget has no room for
    assert (caught.value.spent_usd, caught.value.needed_usd) == (pytest.approx(HOLD), pytest.approx(HOLD))
    assert (budget.spent_usd, budget.reserved_usd) == (pytest.approx(HOLD, rel=1e-12), 0.0)


def test_an_error_the_provider_declares_in_the_stream_is_not_counted(fast_backoff):
    busy = (b'event: error\ndata: {"type": "error", "error": {"type": "overloaded_error", '
            b'"message": "busy"}}\n\n')
    budget = Budget(1)
    with SSEServer() as server:
        server.answers.extend([Answer([HEAD + busy]), Answer([WHOLE])])
        list(_claude(server.url, budget, max_retries=1).streaming_response(HI, {"max_tokens": 1000}))
        assert len(server.requests) == 2
    assert budget.spent_usd == pytest.approx(ACTUAL, rel=1e-12) and budget.requests == 1  # one hold, shared


def test_an_abort_after_the_200_before_any_event_counts_the_hold():
    budget = Budget(1)
    gate = threading.Event()
    with SSEServer() as server:
        server.answers.append(Answer([HEAD, b"event: ping\ndata: {}\n\n"], gate=gate))
        stream = _claude(server.url, budget, max_retries=0).streaming_response(HI, {"max_tokens": 1000})
        timer = threading.Timer(0.2, stream.abort)
        timer.start()
        try:
            with pytest.raises(TransportError) as caught:
                next(stream)
        finally:
            timer.cancel()
            timer.join()
            gate.set()
    assert caught.value.aborted is True
    assert budget.spent_usd == pytest.approx(HOLD, rel=1e-12)  # before: 0.0 (given back)
    assert budget.reserved_usd == 0.0


def test_a_failover_after_a_cut_counts_the_cut_route_and_the_answering_one(fast_backoff):
    budget = Budget(1)
    with SSEServer() as primary, SSEServer() as secondary:
        primary.answers.append(Answer([HEAD]))
        secondary.answers.append(Answer([WHOLE]))
        fallback = _claude(secondary.url, None, model="claude-haiku-4-5", max_retries=0)
        client = _claude(primary.url, budget, max_retries=0, fallbacks=[fallback])
        stream = client.streaming_response(HI, {"max_tokens": 1000})
        events = list(stream)
        assert (len(primary.requests), len(secondary.requests)) == (1, 1)
    assert events[-1]["event_type"] == "stop" and client.last_route["model"] == "claude-haiku-4-5"
    assert budget.spent_usd == pytest.approx(HOLD + HAIKU_ACTUAL, rel=1e-12)  # before: HAIKU_ACTUAL alone
    assert (budget.reserved_usd, budget.requests) == (0.0, 2)
    assert stream._call.cut_usd == pytest.approx(HOLD, rel=1e-12)


# gpt-5.5 background response: "go" is 5 estimated input tokens at $5/M + 100 output tokens at $30/M held;
# the fake's usage: 10 input tokens, 10 output tokens
GPT_HOLD = (5 * 5 + 100 * 30) / 1e6
GPT_ACTUAL = (10 * 5 + 10 * 30) / 1e6
TEXTS = ["a ", "b ", "c ", "d ", "e ", "f ", "g ", "h ", "i ", "j"]
GO = [{"role": "user", "content_items": [{"type": "text", "text": "go"}]}]


def _responses(server, budget):
    return AutoLLMClient("gpt-5.5", api_key="test-key", base_url=server.url + "/v1", client_type="openai-responses",
                         budget=budget)


def test_a_background_response_resumed_after_a_cut_is_counted_once():
    budget = Budget(1)
    events = responses_events("resp_b8", TEXTS)
    with LongrunServer() as server:
        server.add("resp_b8", events, cuts=[boundaries(events)[1]])  # its id known, no output yet: resumed by GET
        stream = _responses(server, budget).streaming_response(GO, {"background": True, "max_tokens": 100})
        list(stream)
        assert [r["method"] for r in server.requests] == ["POST", "GET"]
    assert budget.spent_usd == pytest.approx(GPT_ACTUAL, rel=1e-12) and budget.requests == 1
    assert stream._call.cut_usd is None


def test_a_background_post_cut_before_its_id_is_a_second_response_and_counted(fast_backoff):
    budget = Budget(1)
    with LongrunServer() as server:
        server.add("resp_c8", responses_events("resp_c8", TEXTS), cuts=[10])  # inside response.created: no id
        server.add("resp_d8", responses_events("resp_d8", TEXTS))
        list(_responses(server, budget).streaming_response(GO, {"background": True, "max_tokens": 100}))
        assert [r["method"] for r in server.requests] == ["POST", "POST"]
    assert budget.spent_usd == pytest.approx(GPT_HOLD + GPT_ACTUAL, rel=1e-12) and budget.requests == 2


@pytest.mark.parametrize("allow_unpriced", [False, True])
def test_a_priced_model_asked_for_more_tokens_than_any_price_counts_is_refused_never_run_uncounted(allow_unpriced):
    """Before: the worst case of max_tokens 200,000,000 (above stream.MAX_USAGE_TOKENS) had no price, so the
    model was taken as unpriced: a ConfigError saying it has no list price, or, with allow_unpriced, the request
    sent and its answer counted $0 by a budget of $0.001."""
    budget = Budget(0.001, allow_unpriced=allow_unpriced)
    with SSEServer() as server:
        server.answers.append(Answer([WHOLE]))
        with pytest.raises(agenthub_errors.ConfigError) as caught:
            list(_claude(server.url, budget, max_retries=0).streaming_response(HI, {"max_tokens": 200000000}))
        assert server.requests == []
    assert str(caught.value) == ("max_output_tokens of 200000000 is above the 100,000,000 tokens a budget can price "
                                 "for one request: set a smaller max_tokens (or send less)")
    with pytest.raises(agenthub_errors.ConfigError):
        budget.reserve("claude-sonnet-4-6", 100000001, 10)
    assert (budget.spent_usd, budget.reserved_usd, budget.requests) == (0.0, 0.0, 0)
    # a model without a price still runs uncounted where allowed, whatever its max_tokens
    if allow_unpriced:
        assert budget.reserve("my-model", 10, 200000000).needed_usd == 0.0


def test_an_abandoned_stream_and_one_interrupted_count_their_hold_and_leave_none():
    import gc

    budget = Budget(1)
    with SSEServer() as server:
        server.answers.append(Answer([WHOLE]))
        stream = _claude(server.url, budget, max_retries=0).streaming_response(HI, {"max_tokens": 1000})
        next(stream)
        assert (budget.spent_usd, budget.reserved_usd) == (0.0, pytest.approx(HOLD, rel=1e-12))
        del stream  # never closed: its generator is finalised, and the hook settles
        gc.collect()
    assert (budget.spent_usd, budget.reserved_usd, budget.requests) == (pytest.approx(HOLD, rel=1e-12), 0.0, 1)


def test_a_keyboard_interrupt_inside_the_read_counts_the_hold_once(monkeypatch):
    import agenthub.client as client_module

    drive = client_module.drive

    def interrupted(parts, *args, **kwargs):  # Ctrl-C as the first bytes after the 200 head are read
        def parts_then_ctrl_c():
            raise KeyboardInterrupt
            yield  # noqa: unreachable (a generator)

        return drive(parts_then_ctrl_c(), *args, **kwargs)

    monkeypatch.setattr(client_module, "drive", interrupted)
    budget = Budget(1)
    with SSEServer() as server:
        server.answers.append(Answer([WHOLE]))
        stream = _claude(server.url, budget, max_retries=0).streaming_response(HI, {"max_tokens": 1000})
        with pytest.raises(KeyboardInterrupt):
            list(stream)
        stream.close()
    assert (budget.spent_usd, budget.reserved_usd, budget.requests) == (pytest.approx(HOLD, rel=1e-12), 0.0, 1)


def test_a_run_says_what_its_cut_attempts_were_counted_beside_what_its_answers_cost(fast_backoff):
    """RunResult.cost_usd prices the answers (a cut attempt has no usage to price); RunResult.cut_usd is what the
    Budget counted for the attempts cut after the provider took them: the two sum to what the Budget charged."""
    budget = Budget(1)
    with SSEServer() as server:
        server.answers.extend([Answer([HEAD]), Answer([WHOLE]), Answer([WHOLE])])
        result = _claude(server.url, budget, max_retries=1).run(HI, {"max_tokens": 1000}, tools=[]).result()
        plain = _claude(server.url, Budget(1)).run(HI, {"max_tokens": 1000}, tools=[]).result()
        assert len(server.requests) == 3
    assert result.cost_usd == pytest.approx(ACTUAL, rel=1e-12)
    assert result.cut_usd == pytest.approx(HOLD, rel=1e-12)
    assert result.cost_usd + result.cut_usd == pytest.approx(budget.spent_usd, rel=1e-12)
    assert budget.spent_usd == pytest.approx(HOLD + ACTUAL, rel=1e-12)
    assert (plain.cost_usd, plain.cut_usd) == (pytest.approx(ACTUAL, rel=1e-12), None)  # nothing cut


def _sse(event, data):
    return ("event: {}\ndata: {}\n\n".format(event, json.dumps(data))).encode("utf-8")


#: a Claude turn that spent its max_tokens thinking: finished (billed: 40 input, 1000 output tokens), nothing to keep
THINKING_ONLY = b"".join([
    _sse("message_start", {"type": "message_start", "message": {
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-6", "content": [],
        "usage": {"input_tokens": 40, "output_tokens": 1}}}),
    _sse("content_block_start", {"type": "content_block_start", "index": 0,
                                 "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
    _sse("content_block_delta", {"type": "content_block_delta", "index": 0,
                                 "delta": {"type": "thinking_delta", "thinking": "Let me see"}}),
    _sse("content_block_stop", {"type": "content_block_stop", "index": 0}),
    _sse("message_delta", {"type": "message_delta", "delta": {"stop_reason": "max_tokens"},
                           "usage": {"output_tokens": 1000}}),
    _sse("message_stop", {"type": "message_stop"}),
])


def test_a_turn_that_finished_with_nothing_to_keep_is_counted_at_its_usage_not_its_hold():
    """An EmptyResponseError (max_tokens spent thinking) is a finished turn the provider billed, and its usage came
    with it: the Budget counts that usage (before: the hold, a worst case made of an estimate of the input: $0.01501875
    for a turn that cost $0.01512)."""
    budget = Budget(1)
    with SSEServer() as server:
        server.answers.append(Answer([THINKING_ONLY]))
        stream = _claude(server.url, budget, max_retries=0).streaming_response(HI, {"max_tokens": 1000})
        with pytest.raises(agenthub_errors.EmptyResponseError) as caught:
            list(stream)
    assert caught.value.usage_metadata == {"prompt_tokens": 40, "cached_tokens": None, "thoughts_tokens": None,
                                           "response_tokens": 1000}
    billed = (40 * 3 + 1000 * 15) / 1e6
    assert HOLD != pytest.approx(billed, rel=1e-6)
    assert budget.spent_usd == pytest.approx(billed, rel=1e-12)
    assert (budget.reserved_usd, budget.requests) == (0.0, 1)
    assert stream._call.cut_usd == pytest.approx(billed, rel=1e-12)  # what the Budget counted for it, no answer priced
