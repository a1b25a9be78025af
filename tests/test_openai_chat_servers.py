"""Chat Completions: what real OpenAI-compatible servers send, one quirk per test.

Every stream here is a minimal one written for this file; each test names the server (or
gateway) whose recorded behaviour it reproduces.  Expected events are exact.
"""

import json

import pytest

from agenthub import check_stream, collect
from agenthub.errors import (AuthenticationError, RateLimitError, ServerError, StreamProtocolError, UpstreamError)
from agenthub.providers._common import Endpoint
from agenthub.providers.openai_chat import build_request, parse_stream
from agenthub.validate import check_config
from conftest import run_parser, splits, strip_ids


def run(data):
    events = run_parser(parse_stream, [data], "openai-chat", tool_id_prefix="syn_")
    check_stream(events)
    for chunks in splits(data, samples=6):
        assert strip_ids(run_parser(parse_stream, chunks, "openai-chat", tool_id_prefix="syn_")) == strip_ids(events)
    return events


def raises(data, error):
    with pytest.raises(error) as info:
        run_parser(parse_stream, [data], "openai-chat", tool_id_prefix="syn_")
    return info.value


def sse(*chunks, done=True, prefix="data: "):
    body = "".join(prefix + (c if isinstance(c, str) else json.dumps(c, ensure_ascii=False)) + "\n\n" for c in chunks)
    return (body + (prefix + "[DONE]\n\n" if done else "")).encode("utf-8")


def choice(delta=None, finish=None, **extra):
    c = {"index": 0, "delta": {} if delta is None else delta, "finish_reason": finish}
    c.update(extra)
    return c


def chunk(delta=None, finish=None, **extra):
    c = {"id": "c1", "object": "chat.completion.chunk", "choices": [choice(delta, finish)]}
    c.update(extra)
    return c


def items(events):
    return [e["content_items"][0] for e in events[1:-1]]


def stop(events):
    return events[-1]["finish_reason"], events[-1]["usage_metadata"]


def usage(cached, prompt, thoughts, response):
    return {"cached_tokens": cached, "prompt_tokens": prompt, "thoughts_tokens": thoughts, "response_tokens": response}


def call_items(name, call_id, fragments, arguments, fidelity=None):
    out = [{"type": "partial_tool_call", "name": name, "arguments": fragments[0], "tool_call_id": call_id}]
    out += [{"type": "partial_tool_call", "name": "", "arguments": f, "tool_call_id": ""} for f in fragments[1:]]
    done = {"type": "tool_call", "name": name, "arguments": arguments, "tool_call_id": call_id}
    if fidelity:
        done["fidelity"] = fidelity
    return out + [done]


TEXT = {"type": "text", "text": "Hi"}
NO_USAGE = usage(None, None, None, None)


# -- usage ----------------------------------------------------------------------------------------

def test_groq_usage_inside_x_groq():
    """Groq puts the stream's usage in ``x_groq.usage`` on the finish chunk (no top-level usage)."""
    events = run(sse(chunk({"role": "assistant", "content": "Hi"}),
                     chunk({}, "stop", x_groq={"id": "req_1", "usage": {"queue_time": 0.01, "prompt_tokens": 18,
                                                                         "completion_tokens": 4, "total_tokens": 22}})))
    assert items(events) == [TEXT]
    assert stop(events) == ("stop", usage(None, 18, None, 4))


def test_top_level_usage_wins_over_x_groq():
    events = run(sse(chunk({"content": "Hi"}),
                     chunk({}, "stop", x_groq={"usage": {"prompt_tokens": 1, "completion_tokens": 1}},
                           usage={"prompt_tokens": 18, "completion_tokens": 4})))
    assert stop(events) == ("stop", usage(None, 18, None, 4))


def test_moonshot_cached_tokens_at_the_top_of_usage():
    """Moonshot/Kimi: ``usage.cached_tokens`` (older answers carry no prompt_tokens_details), inside the choice."""
    fin = chunk({}, "stop")
    fin["choices"][0]["usage"] = {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110, "cached_tokens": 80}
    events = run(sse(chunk({"content": "Hi"}), fin))
    assert stop(events) == ("stop", usage(80, 20, None, 10))


def test_llama_cpp_timings_stand_in_for_missing_usage():
    """llama.cpp server: the finish chunk carries ``timings`` (cache_n/prompt_n/predicted_n) and no usage."""
    timings = {"cache_n": 13, "prompt_n": 1, "prompt_ms": 17.9, "predicted_n": 394, "predicted_ms": 2623.3}
    events = run(sse(chunk({"reasoning_content": "Okay"}), chunk({"content": "Hi"}), chunk({}, "stop", timings=timings)))
    assert stop(events) == ("stop", usage(13, 1, None, 394))


def test_llama_cpp_timings_give_the_cached_count_usage_lacks():
    timings = {"cache_n": 1100, "prompt_n": 250, "predicted_n": 61}
    events = run(sse(chunk({"content": "Hi"}), chunk({}, "stop"),
                     {"choices": [], "object": "chat.completion.chunk", "timings": timings,
                      "usage": {"completion_tokens": 61, "prompt_tokens": 1350, "total_tokens": 1411}}))
    assert stop(events) == ("stop", usage(1100, 250, None, 61))
    # counts that do not add up are left as the server sent them
    events = run(sse(chunk({"content": "Hi"}), chunk({}, "stop", timings={"cache_n": 5, "prompt_n": 7, "predicted_n": 2},
                                                      usage={"prompt_tokens": 99, "completion_tokens": 2})))
    assert stop(events) == ("stop", usage(None, 99, None, 2))


# -- finish reasons --------------------------------------------------------------------------------

@pytest.mark.parametrize("reason,expected", [
    ("eos_token", "stop"), ("stop_sequence", "stop"),  # TGI's own words
    ("end_turn", "stop"), ("max_tokens", "length"),  # relays that pass an Anthropic stop reason through
])
def test_vendor_finish_reasons(reason, expected):
    assert stop(run(sse(chunk({"content": "Hi"}), chunk({}, reason))))[0] == expected


def test_tgi_stream_without_space_and_text_completion_object():
    """TGI 2.x: ``data:{...}`` with ``"object":"text_completion"``, ends on ``eos_token`` (no [DONE])."""
    body = sse({"id": "", "object": "text_completion", "model": "m", "system_fingerprint": "2.0.1-native",
                "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Hi"}, "logprobs": None,
                             "finish_reason": None}]},
               {"id": "", "object": "text_completion", "model": "m", "system_fingerprint": "2.0.1-native",
                "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "logprobs": None,
                             "finish_reason": "eos_token"}]},
               done=False, prefix="data:")
    events = run(body)
    assert items(events) == [TEXT]
    assert stop(events) == ("stop", NO_USAGE)


def test_empty_finish_reason_is_no_finish():
    """new-api relays send ``"finish_reason": ""`` on every delta."""
    events = run(sse(chunk({"role": "assistant", "content": "", "reasoning_content": ""}, ""),
                     chunk({"content": "Hi", "reasoning_content": ""}, ""),
                     chunk({"content": "", "function_call": {"name": "", "arguments": ""}, "tool_calls": []}, "stop")))
    assert items(events) == [TEXT]
    assert stop(events)[0] == "stop"


def test_finish_reason_on_every_chunk_keeps_a_split_tool_call_whole():
    """Gateways in front of Gemini put ``finish_reason: "stop"`` on every chunk, tool-call fragments included."""
    events = run(sse(chunk({"reasoning_content": "Think."}, "stop"),
                     chunk({"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                                            "function": {"name": "get_weather", "arguments": '{"city":'}}]}, "stop"),
                     chunk({"tool_calls": [{"index": 0, "function": {"arguments": '"Paris"}'}}]}, "stop")))
    assert items(events) == [
        {"type": "thinking", "thinking": "Think.", "fidelity": {"reasoning_field": "reasoning_content"}},
    ] + call_items("get_weather", "call_1", ['{"city":', '"Paris"}'], {"city": "Paris"})
    assert stop(events)[0] == "tool_call"


# -- in-stream errors ------------------------------------------------------------------------------

def test_openrouter_error_chunk_keeps_the_providers_words():
    """OpenRouter: a chunk with a top-level ``error`` (code, metadata.raw) and ``finish_reason: "error"``."""
    error = raises(sse(chunk({"role": "assistant", "content": "Partial"}),
                       dict(chunk({"content": ""}, "error"), provider="Together",
                            error={"code": 502, "message": "Provider returned error",
                                   "metadata": {"raw": "upstream connect error", "provider_name": "Together"}})),
                   ServerError)
    assert (error.status, error.message) == (502, "Provider returned error (upstream connect error)")
    assert error.retryable


def test_finish_reason_error_without_an_error_object_raises():
    """OpenRouter (``native_finish_reason``) and SGLang end a failed answer with ``finish_reason: "error"`` only."""
    error = raises(sse(chunk({"content": "partial"}),
                       dict(chunk({}, "error"), choices=[choice({}, "error", native_finish_reason="MALFORMED_FUNCTION_CALL")])),
                   ServerError)
    assert error.status == 502 and "MALFORMED_FUNCTION_CALL" in error.message and error.code == "MALFORMED_FUNCTION_CALL"
    error = raises(sse({"choices": [{"delta": {"content": "bad"}, "finish_reason": "error"}]}), ServerError)
    assert error.status == 502 and error.retryable


def test_finish_reason_error_with_an_error_on_the_choice():
    bad = chunk({}, "error")
    bad["choices"][0]["error"] = {"code": 429, "message": "Rate limit exceeded upstream"}
    error = raises(sse(chunk({"content": "x"}), bad), RateLimitError)
    assert error.message == "Rate limit exceeded upstream"


@pytest.mark.parametrize("payload,cls,status,message", [
    # vLLM / SGLang: the ErrorResponse itself, flat, in the middle of the stream
    ({"object": "error", "message": "Internal worker died", "type": "InternalServerError", "code": 503},
     ServerError, 503, "Internal worker died"),
    ({"object": "error", "message": "bad", "type": "BadRequestError", "param": None, "code": 400},
     UpstreamError, 400, "bad"),
    # Mistral: no code at all
    ({"object": "error", "message": "Service unavailable"}, UpstreamError, None, "Service unavailable"),
])
def test_flat_error_object_mid_stream(payload, cls, status, message):
    error = raises(sse(chunk({"content": "par"}), payload, chunk({"content": "never read"})), cls)
    assert (type(error), error.status, error.message) == (cls, status, message)


@pytest.mark.parametrize("code,cls,status", [
    (1004, AuthenticationError, 401), (2056, RateLimitError, 429), (1000, ServerError, 500), (4242, UpstreamError, None),
])
def test_minimax_base_resp_error(code, cls, status):
    """MiniMax: a failure is a 200 whose chunk has ``choices: null`` and ``base_resp.status_code`` != 0."""
    error = raises(sse({"id": "abc", "object": "chat.completion", "model": "MiniMax-M2.5", "choices": None,
                        "base_resp": {"status_code": code, "status_msg": "unknown error, 520"}}, done=False), cls)
    assert (type(error), error.status, error.message, error.code) == (cls, status, "unknown error, 520", str(code))


def test_minimax_success_envelope_is_not_an_error():
    events = run(sse({"choices": None, "base_resp": {"status_code": 0, "status_msg": ""}},
                     chunk({"content": "Hi"}), chunk({}, "stop")))
    assert items(events) == [TEXT]


# -- Gemini's compatibility layer -------------------------------------------------------------------

THOUGHT = {"google": {"thought": True}}


def gemini(delta, finish=None):
    c = {"index": 0, "delta": dict(delta, role="assistant")}
    if finish:
        c["finish_reason"] = finish
    return {"choices": [c], "created": 1, "id": "g1", "model": "gemini-2.5-flash", "object": "chat.completion.chunk"}


def test_gemini_thought_summaries_are_thinking_and_the_tags_are_not_text():
    """``include_thoughts``: thoughts come as content flagged ``extra_content.google.thought``, wrapped in
    ``<thought>`` ... ``</thought>`` (the closing tag opens the answer's first chunk)."""
    events = run(sse(gemini({"content": "<thought>**Plan**\n\n", "extra_content": THOUGHT}),
                     gemini({"content": "Greet back.", "extra_content": THOUGHT}),
                     gemini({"content": "</thought>Hello"}),
                     gemini({"content": "!"}, "stop")))
    assert items(events) == [
        {"type": "thinking", "thinking": "**Plan**\n\n", "fidelity": {"reasoning_field": "thought"}},
        {"type": "thinking", "thinking": "Greet back.", "fidelity": {"reasoning_field": "thought"}},
        {"type": "text", "text": "Hello"},
        {"type": "text", "text": "!"},
    ]
    # the summaries are not sent back as text in the next request
    message = collect(events)
    endpoint = Endpoint("openai-chat", "https://x/v1", "k")
    wire = build_request(endpoint, "m", [{"role": "user", "content_items": [{"type": "text", "text": "Hi"}]}, message],
                         check_config({})).body["messages"][1]
    assert wire == {"role": "assistant", "content": "Hello!"}


def test_a_literal_closing_tag_without_thoughts_is_text():
    events = run(sse(gemini({"content": "</thought> is a tag"}, "stop")))
    assert items(events) == [{"type": "text", "text": "</thought> is a tag"}]


def test_gemini_signature_arriving_after_its_call_is_kept():
    """The thought signature may come in a later, metadata-only tool-call delta (no index, no id)."""
    extra = {"google": {"thought_signature": "c2ln"}}
    events = run(sse(gemini({"tool_calls": [{"id": "function-call-1", "type": "function",
                                             "function": {"name": "get_weather", "arguments": '{"location":"Sydney"}'}}]}),
                     gemini({"tool_calls": [{"extra_content": extra}]}),
                     gemini({"content": ""}, "stop")))
    assert items(events) == call_items("get_weather", "function-call-1", ["", '{"location":"Sydney"}'],
                                       {"location": "Sydney"}, {"extra_content": extra})
    assert stop(events)[0] == "tool_call"


# -- shapes ----------------------------------------------------------------------------------------

def test_empty_delta_beside_an_accumulated_message_adds_nothing():
    """Perplexity sends the accumulated ``message`` beside each ``delta``: only the delta is new."""
    events = run(sse({"choices": [{"index": 0, "delta": {"role": "assistant", "content": "Hi"},
                                   "message": {"role": "assistant", "content": "Hi"}}]},
                     {"choices": [{"index": 0, "delta": {}, "message": {"role": "assistant", "content": "Hi"},
                                   "finish_reason": "stop"}], "object": "chat.completion.done"}))
    assert items(events) == [TEXT]


def test_a_server_that_ignored_stream_answers_with_message():
    events = run(sse({"object": "chat.completion", "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "Hi"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1}}, done=False))
    assert items(events) == [TEXT]
    assert stop(events) == ("stop", usage(None, 3, None, 1))


def test_tool_call_named_first_arguments_later_on_index_zero_with_new_ids():
    """vLLM announces a call with a name and no ``arguments`` key; SGLang numbers ids "0", "1" on index 0."""
    events = run(sse(chunk({"tool_calls": [{"id": "0", "type": "function", "index": 0, "function": {"name": "f"}}]}),
                     chunk({"tool_calls": [{"id": "0", "index": 0, "function": {"arguments": '{"a": 1}'}}]}),
                     chunk({"tool_calls": [{"id": "1", "type": "function", "index": 0, "function": {"name": "f"}}]}),
                     chunk({"tool_calls": [{"id": "1", "index": 0, "function": {"arguments": '{"a": 2}'}}]}),
                     chunk({"content": ""}, "tool_calls")))
    assert items(events) == (call_items("f", "0", ["", '{"a": 1}'], {"a": 1})
                             + call_items("f", "1", ["", '{"a": 2}'], {"a": 2}))


def test_cut_stream_after_a_finish_free_chunk_is_still_a_protocol_error():
    with pytest.raises(StreamProtocolError):
        run_parser(parse_stream, [sse(chunk({"content": "Hi"}), done=False)], "openai-chat")


# -- gateways: LiteLLM thinking_blocks, reasoning only in reasoning_details (issue 13) ---------------------

def replay_wire(message, endpoint=None):
    """The assistant message the next request sends for ``message`` (after a user turn)."""
    endpoint = endpoint or Endpoint("openai-chat", "http://127.0.0.1:4000/v1", "k", None, None)
    calls = [i for i in message["content_items"] if i["type"] == "tool_call"]
    follow = {"role": "user", "content_items": [
        {"type": "tool_result", "text": "18 C", "tool_call_id": c["tool_call_id"]} for c in calls] or [
        {"type": "text", "text": "next"}]}
    messages = [{"role": "user", "content_items": [{"type": "text", "text": "Hi"}]}, message, follow]
    return build_request(endpoint, "claude", messages, check_config({})).body["messages"][1]


def test_litellm_thinking_blocks_keep_the_signature_and_go_back_as_they_came():
    """LiteLLM's proxy in front of Claude with thinking and tools: each thinking piece arrives twice,
    as ``reasoning_content`` and as a one-element ``thinking_blocks`` (no index); the signature comes
    in a piece of its own; then the tool call.  The next turn must carry the signed block back, or
    Anthropic refuses the tool-result turn."""
    def piece(thinking, signature=None):
        return {"type": "thinking", "thinking": thinking, "signature": signature}

    data = sse(
        chunk({"role": "assistant", "content": "", "reasoning_content": "The user wants",
               "thinking_blocks": [piece("The user wants")],
               "provider_specific_fields": {"thinking_blocks": [piece("The user wants")]}}),
        chunk({"content": "", "reasoning_content": " the weather.", "thinking_blocks": [piece(" the weather.")]}),
        chunk({"content": "", "reasoning_content": "", "thinking_blocks": [piece("", "RXFvQlNpZw==")]}),
        chunk({"content": "", "tool_calls": [{"id": "toolu_01", "type": "function", "index": 0,
                                              "function": {"name": "get_weather", "arguments": ""}}]}),
        chunk({"content": "", "tool_calls": [{"index": 0, "function": {"arguments": '{"city": "Paris"}'}}]}),
        chunk({}, "tool_calls", usage={"prompt_tokens": 400, "completion_tokens": 60, "total_tokens": 460}),
    )
    events = run(data)
    block = {"type": "thinking", "thinking": "The user wants the weather.", "signature": "RXFvQlNpZw=="}
    assert items(events) == [
        {"type": "thinking", "thinking": "The user wants", "fidelity": {"reasoning_field": "reasoning_content"}},
        {"type": "thinking", "thinking": " the weather.", "fidelity": {"reasoning_field": "reasoning_content"}},
        {"type": "thinking", "thinking": "", "fidelity": {"thinking_blocks": [block]}},
    ] + call_items("get_weather", "toolu_01", ["", '{"city": "Paris"}'], {"city": "Paris"})
    assert stop(events) == ("tool_call", usage(None, 400, None, 60))
    message = collect(events)
    assert replay_wire(message) == {  # (no reasoning_content: a host of no row is sent no reasoning field)
        "role": "assistant", "content": None, "thinking_blocks": [block],
        "tool_calls": [{"id": "toolu_01", "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'}}]}


def test_litellm_redacted_and_several_thinking_blocks_stay_apart():
    data = sse(
        chunk({"reasoning_content": "First.", "thinking_blocks": [{"type": "thinking", "thinking": "First."}]}),
        chunk({"thinking_blocks": [{"type": "thinking", "thinking": "", "signature": "c2lnMQ=="}]}),
        chunk({"thinking_blocks": [{"type": "redacted_thinking", "data": "cmVkYWN0ZWQ="}]}),
        chunk({"reasoning_content": "Second.", "thinking_blocks": [{"type": "thinking", "thinking": "Second.",
                                                                    "signature": None}]}),
        chunk({"thinking_blocks": [{"type": "thinking", "thinking": "", "signature": "c2lnMg=="}]}),
        chunk({"content": "Done."}), chunk({}, "stop"))
    events = run(data)
    blocks = [{"type": "thinking", "thinking": "First.", "signature": "c2lnMQ=="},
              {"type": "redacted_thinking", "data": "cmVkYWN0ZWQ="},
              {"type": "thinking", "thinking": "Second.", "signature": "c2lnMg=="}]
    assert items(events) == [
        {"type": "thinking", "thinking": "First.", "fidelity": {"reasoning_field": "reasoning_content"}},
        {"type": "thinking", "thinking": "Second.", "fidelity": {"reasoning_field": "reasoning_content"}},
        {"type": "thinking", "thinking": "", "fidelity": {"thinking_blocks": blocks}},
        {"type": "text", "text": "Done."},
    ]
    assert replay_wire(collect(events)) == {"role": "assistant", "content": "Done.", "thinking_blocks": blocks}


def test_thinking_blocks_alone_are_shown_as_thinking():
    """A relay that sends ``thinking_blocks`` (here only inside ``provider_specific_fields``) and no
    reasoning_content: the thinking is shown from the blocks, and goes back only as the blocks."""
    data = sse(
        chunk({"provider_specific_fields": {"thinking_blocks": [{"type": "thinking", "thinking": "Hmm"}]}}),
        chunk({"provider_specific_fields": {"thinking_blocks": [{"type": "thinking", "thinking": "",
                                                                 "signature": "c2ln"}]}}),
        chunk({"content": "Yes."}), chunk({}, "stop"))
    events = run(data)
    block = {"type": "thinking", "thinking": "Hmm", "signature": "c2ln"}
    assert items(events) == [
        {"type": "thinking", "thinking": "Hmm", "fidelity": {"reasoning_field": "thinking_blocks"}},
        {"type": "thinking", "thinking": "", "fidelity": {"thinking_blocks": [block]}},
        {"type": "text", "text": "Yes."},
    ]
    assert replay_wire(collect(events)) == {"role": "assistant", "content": "Yes.", "thinking_blocks": [block]}


def test_a_whole_litellm_completion_carries_its_thinking_blocks():
    """LiteLLM answering in one piece (``message`` instead of ``delta``): whole blocks, same items."""
    block = {"type": "thinking", "thinking": "Paris.", "signature": "c2ln"}
    data = sse({"id": "c1", "object": "chat.completion", "choices": [{"index": 0, "finish_reason": "stop", "message": {
        "role": "assistant", "content": "Paris.", "reasoning_content": "Paris.", "thinking_blocks": [block]}}]},
        done=False)
    events = run(data)
    assert items(events) == [
        {"type": "thinking", "thinking": "Paris.", "fidelity": {"reasoning_field": "reasoning_content"}},
        {"type": "thinking", "thinking": "", "fidelity": {"thinking_blocks": [block]}},
        {"type": "text", "text": "Paris."},
    ]


def test_reasoning_only_in_reasoning_details_is_thinking_in_wire_order():
    """Some OpenAI-compatible servers send the reasoning only as ``reasoning_details`` (no ``reasoning``
    or ``reasoning_content``): it is shown as thinking where it came, before the text it preceded, and
    the details are kept whole for the next turn."""
    data = sse(
        chunk({"role": "assistant", "content": "", "reasoning_details": [
            {"type": "reasoning.text", "text": "Add ", "format": "unknown", "index": 0}]}),
        chunk({"content": "", "reasoning_details": [{"type": "reasoning.text", "text": "them.", "index": 0}]}),
        chunk({"reasoning_details": [{"type": "reasoning.summary", "summary": "Adding.", "index": 1}]}),
        chunk({"reasoning_details": [{"type": "reasoning.encrypted", "data": "ZW5j", "index": 2}]}),
        chunk({"content": "4"}),
        chunk({"content": "."}), chunk({}, "stop"))
    events = run(data)
    details = [{"type": "reasoning.text", "text": "Add them.", "format": "unknown", "index": 0},
               {"type": "reasoning.summary", "summary": "Adding.", "index": 1},
               {"type": "reasoning.encrypted", "data": "ZW5j", "index": 2}]
    shown = {"reasoning_field": "reasoning_details"}
    assert items(events) == [
        {"type": "thinking", "thinking": "Add ", "fidelity": shown},
        {"type": "thinking", "thinking": "them.", "fidelity": shown},
        {"type": "thinking", "thinking": "Adding.", "fidelity": shown},
        {"type": "thinking", "thinking": "", "fidelity": {"reasoning_details": details}},
        {"type": "text", "text": "4"},
        {"type": "text", "text": "."},
    ]
    message = collect(events)
    assert [i["type"] for i in message["content_items"]] == ["thinking", "thinking", "text"]
    # replayed: the details as they came, the text shown from them not a second time
    endpoint = Endpoint("openai-chat", "https://openrouter.ai/api/v1", "k", None,
                        {"reasoning_field": "reasoning", "reasoning_details": True})  # (OpenRouter's row)
    assert replay_wire(message, endpoint) == {"role": "assistant", "content": "4.", "reasoning_details": details}


def test_reasoning_details_before_a_tool_call_are_carried_ahead_of_it():
    data = sse(
        chunk({"reasoning_details": [{"type": "reasoning.text", "text": "Look it up.", "signature": "c2ln",
                                      "index": 0}]}),
        chunk({"tool_calls": [{"id": "call_1", "index": 0, "type": "function",
                               "function": {"name": "lookup", "arguments": "{}"}}]}),
        chunk({}, "tool_calls"))
    events = run(data)
    details = [{"type": "reasoning.text", "text": "Look it up.", "signature": "c2ln", "index": 0}]
    assert items(events) == [
        {"type": "thinking", "thinking": "Look it up.", "fidelity": {"reasoning_field": "reasoning_details"}},
        {"type": "thinking", "thinking": "", "fidelity": {"reasoning_details": details}},
    ] + call_items("lookup", "call_1", ["", "{}"], {})
