"""Responses API: how other servers (and OpenAI's own odd corners) shape a stream.

Each test feeds a minimal stream written for this file that reproduces one quirk seen on
a real server's wire, and states the exact items it must come out as, plus what the next
request makes of them.  No recorded bytes are kept here.
"""

import base64
import json

import pytest

from conftest import run_parser, splits, strip_ids

from agenthub.errors import EmptyResponseError, ServerError, UpstreamError
from agenthub.providers._common import Endpoint
from agenthub.providers.openai_responses import build_request, parse_stream
from agenthub.stream import check_stream, collect
from agenthub.validate import check_config

CLIENT = "openai-responses"


def sse(*payloads, event_lines=False, done=False, comment=None):
    """A body from payload dicts: one ``data:`` event each (``event:`` lines optional)."""
    out = []
    if comment:
        out.append(": {}\n\n".format(comment))
    for payload in payloads:
        line = "data: {}\n\n".format(json.dumps(payload, separators=(",", ":")))
        if event_lines:
            line = "event: {}\n".format(payload["type"]) + line
        out.append(line)
    if done:
        out.append("data: [DONE]\n\n")
    return "".join(out).encode("utf-8")


def run(data):
    events = run_parser(parse_stream, [data], CLIENT, tool_id_prefix="call_t_")
    check_stream(events)
    reference = strip_ids(events)
    for chunks in splits(data, samples=6):
        assert strip_ids(run_parser(parse_stream, chunks, CLIENT, tool_id_prefix="call_t_")) == reference
    return events


def items(events):
    return [e["content_items"][0] for e in events[1:-1]]


def stop(events):
    return events[-1]["finish_reason"], events[-1]["usage_metadata"]


def replay(message, follow=None, model="gpt-5"):
    """The input items the next request sends for [user, message, follow-up]."""
    if follow is None:
        calls = [i for i in message["content_items"] if i["type"] == "tool_call"]
        follow = {"role": "user", "content_items": [
            {"type": "tool_result", "text": "ok", "tool_call_id": c["tool_call_id"]} for c in calls]} if calls else \
            {"role": "user", "content_items": [{"type": "text", "text": "next"}]}
    messages = [{"role": "user", "content_items": [{"type": "text", "text": "hi"}]}, message, follow]
    request = build_request(Endpoint(CLIENT, "https://api.openai.com/v1", "k", None, None), model, messages,
                            check_config({}))
    return request.body["input"][1:]


def created():
    return {"type": "response.created", "response": {"id": "resp_1", "status": "in_progress", "output": []}}


def completed(output, usage=None, status="completed"):
    response = {"id": "resp_1", "status": status, "output": output}
    if usage is not None:
        response["usage"] = usage
    return {"type": "response.completed", "response": response}


USAGE = {"input_tokens": 20, "input_tokens_details": {"cached_tokens": 5}, "output_tokens": 30,
         "output_tokens_details": {"reasoning_tokens": 10}, "total_tokens": 50}
BUCKETS = {"cached_tokens": 5, "prompt_tokens": 15, "thoughts_tokens": 10, "response_tokens": 20}


# -- reasoning items that finish out of place ------------------------------------------------------


def test_reasoning_done_under_another_output_index_is_the_announced_item():
    # vLLM (gpt-oss) sent the reasoning item's output_item.done with the next item's index
    reasoning = {"id": "rs_a", "type": "reasoning", "summary": [],
                 "content": [{"type": "reasoning_text", "text": "Greet back."}]}
    message = {"id": "msg_b", "type": "message", "role": "assistant",
               "content": [{"type": "output_text", "text": "Hello!"}]}
    data = sse(
        created(),
        {"type": "response.output_item.added", "output_index": 0,
         "item": {"id": "rs_a", "type": "reasoning", "summary": [], "content": None}},
        {"type": "response.reasoning_text.delta", "output_index": 0, "content_index": 0, "item_id": "rs_a",
         "delta": "Greet "},
        {"type": "response.reasoning_text.delta", "output_index": 0, "content_index": 0, "item_id": "rs_a",
         "delta": "back."},
        {"type": "response.output_item.done", "output_index": 1, "item": reasoning},
        {"type": "response.output_item.added", "output_index": 1,
         "item": {"id": "msg_b", "type": "message", "role": "assistant", "content": []}},
        {"type": "response.output_text.delta", "output_index": 1, "content_index": 0, "item_id": "msg_b",
         "delta": "Hello!"},
        {"type": "response.output_item.done", "output_index": 1, "item": message},
        completed([reasoning, message], USAGE),
        event_lines=True,
    )
    events = run(data)
    assert items(events) == [
        {"type": "thinking", "thinking": "Greet "},
        {"type": "thinking", "thinking": "back."},
        {"type": "thinking", "thinking": "", "fidelity": {"channel": "content"}},
        {"type": "text", "text": "Hello!"},
    ]
    assert stop(events) == ("stop", BUCKETS)
    assert replay(collect(events))[:2] == [
        {"type": "reasoning", "summary": [], "content": [{"type": "reasoning_text", "text": "Greet back."}]},
        {"type": "message", "role": "assistant",
         "content": [{"type": "output_text", "text": "Hello!", "annotations": []}]},
    ]


def test_reasoning_done_after_the_message_is_sealed_before_the_text():
    # OpenRouter: the reasoning item's done event comes after the whole message item; its final
    # output names the reasoning item with another id; SSE comment lines and a trailing [DONE]
    reasoning = {"type": "reasoning", "id": "rs_tmp_1", "summary": [],
                 "content": [{"type": "reasoning_text", "text": "It is 4."}]}
    message = {"type": "message", "id": "msg_tmp_2", "role": "assistant", "status": "completed",
               "content": [{"type": "output_text", "text": "4", "annotations": []}]}
    data = sse(
        created(),
        {"type": "response.output_item.added", "output_index": 0,
         "item": {"type": "reasoning", "id": "rs_tmp_1", "summary": []}},
        {"type": "response.reasoning_text.delta", "output_index": 0, "item_id": "rs_tmp_1", "content_index": 0,
         "delta": "It is "},
        {"type": "response.reasoning_text.delta", "output_index": 0, "item_id": "rs_tmp_1", "content_index": 0,
         "delta": "4."},
        {"type": "response.output_item.added", "output_index": 1,
         "item": {"type": "message", "id": "msg_tmp_2", "role": "assistant", "content": []}},
        {"type": "response.output_text.delta", "output_index": 1, "item_id": "msg_tmp_2", "content_index": 0,
         "delta": "4"},
        {"type": "response.output_item.done", "output_index": 1, "item": message},
        {"type": "response.reasoning_text.done", "output_index": 0, "item_id": "rs_tmp_1", "content_index": 0,
         "text": "It is 4."},
        {"type": "response.output_item.done", "output_index": 0, "item": reasoning},
        completed([dict(reasoning, id="rs_tmp_9"), message], USAGE),
        done=True, comment="OPENROUTER PROCESSING",
    )
    events = run(data)
    assert items(events) == [
        {"type": "thinking", "thinking": "It is "},
        {"type": "thinking", "thinking": "4."},
        {"type": "thinking", "thinking": "", "fidelity": {"channel": "content"}},
        {"type": "text", "text": "4"},
    ]
    message_out = collect(events)
    assert message_out["content_items"] == [
        {"type": "thinking", "thinking": "It is 4.", "fidelity": {"channel": "content"}},
        {"type": "text", "text": "4"},
    ]
    assert replay(message_out)[0] == {
        "type": "reasoning", "summary": [], "content": [{"type": "reasoning_text", "text": "It is 4."}]}


def test_late_reasoning_done_still_brings_its_encrypted_content():
    data = sse(
        created(),
        {"type": "response.output_item.added", "output_index": 0, "item": {"type": "reasoning", "id": "rs_1"}},
        {"type": "response.reasoning_summary_text.delta", "output_index": 0, "summary_index": 0, "delta": "Plan."},
        {"type": "response.output_text.delta", "output_index": 1, "content_index": 0, "delta": "Done."},
        {"type": "response.output_item.done", "output_index": 0,
         "item": {"type": "reasoning", "id": "rs_1", "encrypted_content": "enc-1",
                  "summary": [{"type": "summary_text", "text": "Plan."}]}},
        completed([], USAGE),
    )
    events = run(data)
    assert items(events) == [
        {"type": "thinking", "thinking": "Plan."},
        {"type": "thinking", "thinking": "", "fidelity": {"channel": "summary"}},
        {"type": "text", "text": "Done."},
        {"type": "thinking", "thinking": "", "fidelity": {"channel": "summary", "encrypted_content": "enc-1",
                                                        "supplements": 0}},
    ]
    # the late encrypted content completes the reasoning item it belongs to (one item, before the text)
    assert replay(collect(events)) == [
        {"type": "reasoning", "summary": [{"type": "summary_text", "text": "Plan."}], "encrypted_content": "enc-1"},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Done.",
                                                               "annotations": []}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "next"}]},
    ]


def test_reasoning_that_resumes_after_its_done_event():
    # an Ollama-style server reopens the same reasoning item (same id and index) after the answer began,
    # and sends its plain thinking as encrypted_content
    def done(text):
        return {"type": "response.output_item.done", "output_index": 0,
                "item": {"id": "rs_7", "type": "reasoning", "encrypted_content": text,
                         "summary": [{"type": "summary_text", "text": text}]}}

    def think(text):
        return {"type": "response.reasoning_summary_text.delta", "item_id": "rs_7", "output_index": 0,
                "summary_index": 0, "delta": text}

    data = sse(
        created(),
        {"type": "response.output_item.added", "output_index": 0,
         "item": {"id": "rs_7", "type": "reasoning", "summary": []}},
        think("First."), done("First."),
        {"type": "response.output_item.added", "output_index": 1,
         "item": {"id": "msg_1", "type": "message", "role": "assistant", "content": []}},
        {"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 1, "content_index": 0,
         "delta": "Answer."},
        think(" Second."), done("First. Second."),
        completed([], {"input_tokens": 9, "output_tokens": 4, "total_tokens": 13}),
        event_lines=True,
    )
    events = run(data)
    assert items(events) == [
        {"type": "thinking", "thinking": "First."},
        {"type": "thinking", "thinking": "", "fidelity": {"channel": "summary", "encrypted_content": "First."}},
        {"type": "text", "text": "Answer."},
        {"type": "thinking", "thinking": " Second."},
        {"type": "thinking", "thinking": "", "fidelity": {"channel": "summary",
                                                        "encrypted_content": "First. Second."}},
    ]
    assert stop(events) == ("stop", {"cached_tokens": None, "prompt_tokens": 9, "thoughts_tokens": None,
                                     "response_tokens": 4})


# -- items that every event places at output_index 0 (LiteLLM's bridge) ------------------------------


def test_message_streamed_at_index_zero_is_not_repeated_from_the_final_output():
    reasoning = {"id": "rs_x", "type": "reasoning", "summary": [{"type": "summary_text", "text": "Add them."}]}
    message = {"id": "msg_x", "type": "message", "role": "assistant", "status": "completed",
               "content": [{"type": "output_text", "text": "4.", "annotations": []}]}
    data = sse(
        created(),
        {"type": "response.output_item.added", "output_index": 0,
         "item": {"id": "rs_x", "type": "reasoning", "status": "in_progress", "summary": None}},
        {"type": "response.reasoning_summary_text.delta", "item_id": "rs_x", "output_index": 0, "delta": "Add them."},
        {"type": "response.output_item.done", "output_index": 0, "item": reasoning},
        {"type": "response.output_text.delta", "item_id": "msg_x", "output_index": 0, "content_index": 0,
         "delta": "4."},
        {"type": "response.output_item.done", "output_index": 0, "item": message},
        completed([reasoning, message], USAGE),
        done=True,
    )
    events = run(data)
    assert items(events) == [
        {"type": "thinking", "thinking": "Add them."},
        {"type": "thinking", "thinking": "", "fidelity": {"channel": "summary"}},
        {"type": "text", "text": "4."},
    ]


def test_final_output_message_without_id_after_streamed_text_is_not_repeated():
    data = sse(
        created(),
        {"type": "response.output_text.delta", "output_index": 0, "content_index": 0, "delta": "Hi."},
        completed([{"type": "reasoning", "summary": []},
                   {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Hi."}]}]),
    )
    assert items(run(data)) == [{"type": "text", "text": "Hi."}]


def test_tool_calls_at_shifted_indexes_with_the_call_id_as_item_id():
    calls = [{"type": "function_call", "id": cid, "call_id": cid, "name": "get_weather", "arguments": args,
              "status": "completed"}
             for cid, args in (("toolu_A", '{"city": "Paris"}'), ("toolu_B", '{"city": "Rome"}'))]
    payloads = [created()]
    for index, call in enumerate(calls, 1):
        payloads.append({"type": "response.output_item.added", "output_index": index,
                         "item": dict(call, arguments="", status="in_progress")})
        args = call["arguments"]
        for start in range(0, len(args), 10):
            payloads.append({"type": "response.function_call_arguments.delta", "item_id": call["id"],
                             "output_index": index, "delta": args[start:start + 10]})
    for index, call in enumerate(calls, 1):
        payloads.append({"type": "response.function_call_arguments.done", "item_id": call["id"],
                         "output_index": index, "arguments": call["arguments"]})
        payloads.append({"type": "response.output_item.done", "output_index": index, "item": call})
    payloads.append(completed(calls, {"input_tokens": 30, "output_tokens": 8, "total_tokens": 38}))
    events = run(sse(*payloads, done=True))
    assert items(events) == [
        {"type": "partial_tool_call", "name": "get_weather", "arguments": "", "tool_call_id": "toolu_A"},
        {"type": "partial_tool_call", "name": "", "arguments": '{"city": "', "tool_call_id": ""},
        {"type": "partial_tool_call", "name": "", "arguments": 'Paris"}', "tool_call_id": ""},
        {"type": "tool_call", "name": "get_weather", "arguments": {"city": "Paris"}, "tool_call_id": "toolu_A"},
        {"type": "partial_tool_call", "name": "get_weather", "arguments": "", "tool_call_id": "toolu_B"},
        {"type": "partial_tool_call", "name": "", "arguments": '{"city": "', "tool_call_id": ""},
        {"type": "partial_tool_call", "name": "", "arguments": 'Rome"}', "tool_call_id": ""},
        {"type": "tool_call", "name": "get_weather", "arguments": {"city": "Rome"}, "tool_call_id": "toolu_B"},
    ]
    assert stop(events)[0] == "tool_call"


def test_item_ids_that_change_on_every_event_are_followed_by_output_index():
    # GitHub Copilot's relay gives every event of one item a new item_id
    data = sse(
        created(),
        {"type": "response.output_item.added", "output_index": 0,
         "item": {"id": "id-1", "type": "message", "phase": "final_answer", "role": "assistant", "content": []}},
        {"type": "response.output_text.delta", "item_id": "id-2", "output_index": 0, "content_index": 0,
         "delta": "Three"},
        {"type": "response.output_text.delta", "item_id": "id-3", "output_index": 0, "content_index": 0,
         "delta": " r's."},
        {"type": "response.output_item.done", "output_index": 0,
         "item": {"id": "id-4", "type": "message", "phase": "final_answer", "role": "assistant",
                  "content": [{"type": "output_text", "text": "Three r's."}]}},
        completed([{"id": "id-5", "type": "message", "phase": "final_answer", "role": "assistant",
                    "content": [{"type": "output_text", "text": "Three r's."}]}], USAGE),
    )
    events = run(data)
    assert items(events) == [
        {"type": "text", "text": "Three", "fidelity": {"phase": "final_answer"}},
        {"type": "text", "text": " r's.", "fidelity": {"phase": "final_answer"}},
    ]


# -- custom (free-text) tool calls -----------------------------------------------------------------


def test_streamed_custom_tool_call_is_a_tool_call_with_its_input_and_replays_as_custom():
    text = 'SELECT "name"\nFROM users;'
    call = {"id": "ctc_1", "type": "custom_tool_call", "call_id": "call_sql", "name": "execute_sql", "input": text,
            "status": "completed"}
    data = sse(
        created(),
        {"type": "response.output_item.added", "output_index": 0,
         "item": dict(call, input="", status="in_progress")},
        {"type": "response.custom_tool_call_input.delta", "output_index": 0, "item_id": "ctc_1",
         "delta": 'SELECT "name"'},
        {"type": "response.custom_tool_call_input.delta", "output_index": 0, "item_id": "ctc_1",
         "delta": "\nFROM users;"},
        {"type": "response.custom_tool_call_input.done", "output_index": 0, "item_id": "ctc_1", "input": text},
        {"type": "response.output_item.done", "output_index": 0, "item": call},
        completed([call], USAGE),
        event_lines=True,
    )
    events = run(data)
    assert items(events) == [
        {"type": "partial_tool_call", "name": "execute_sql", "arguments": '{"input":"', "tool_call_id": "call_sql"},
        {"type": "partial_tool_call", "name": "", "arguments": 'SELECT \\"name\\"', "tool_call_id": ""},
        {"type": "partial_tool_call", "name": "", "arguments": "\\nFROM users;", "tool_call_id": ""},
        {"type": "partial_tool_call", "name": "", "arguments": '"}', "tool_call_id": ""},
        {"type": "tool_call", "name": "execute_sql", "arguments": {"input": text}, "tool_call_id": "call_sql",
         "fidelity": {"type": "custom_tool_call"}},
    ]
    assert stop(events)[0] == "tool_call"
    assert replay(collect(events)) == [
        {"type": "custom_tool_call", "call_id": "call_sql", "name": "execute_sql", "input": text},
        {"type": "custom_tool_call_output", "call_id": "call_sql", "output": "ok"},
    ]


@pytest.mark.parametrize("where", ["done_only", "final_output_only", "input_done_only"])
def test_custom_tool_call_that_arrives_whole(where):
    call = {"type": "custom_tool_call", "call_id": "call_c", "name": "shell", "input": "ls -la"}
    payloads = [created()]
    if where == "done_only":
        payloads.append({"type": "response.output_item.done", "output_index": 0, "item": call})
    elif where == "input_done_only":
        payloads.append({"type": "response.output_item.added", "output_index": 0, "item": dict(call, input="")})
        payloads.append({"type": "response.custom_tool_call_input.done", "output_index": 0, "input": "ls -la"})
    payloads.append(completed([call]))
    events = run(sse(*payloads))
    calls = [i for i in items(events) if i["type"] == "tool_call"]
    assert calls == [{"type": "tool_call", "name": "shell", "arguments": {"input": "ls -la"},
                      "tool_call_id": "call_c", "fidelity": {"type": "custom_tool_call"}}]


def test_function_and_custom_results_go_back_under_their_own_types():
    message = {"role": "assistant", "content_items": [
        {"type": "tool_call", "name": "f", "arguments": {"a": 1}, "tool_call_id": "c1"},
        {"type": "tool_call", "name": "g", "arguments": {"input": "x"}, "tool_call_id": "c2",
         "fidelity": {"type": "custom_tool_call"}},
    ]}
    follow = {"role": "user", "content_items": [
        {"type": "tool_result", "text": "r1", "tool_call_id": "c1"},
        {"type": "tool_result", "text": "r2", "tool_call_id": "c2"},
    ]}
    assert replay(message, follow) == [
        {"type": "function_call", "call_id": "c1", "name": "f", "arguments": '{"a":1}'},
        {"type": "custom_tool_call", "call_id": "c2", "name": "g", "input": "x"},
        {"type": "function_call_output", "call_id": "c1", "output": "r1"},
        {"type": "custom_tool_call_output", "call_id": "c2", "output": "r2"},
    ]


# -- built-in tools --------------------------------------------------------------------------------


def test_image_generation_result_is_output_media_and_partial_images_are_not():
    image = b"RIFF\x00\x00\x00\x00WEBPVP8 "
    b64 = base64.b64encode(image).decode("ascii")
    call = {"id": "ig_1", "type": "image_generation_call", "status": "completed", "output_format": "webp",
            "result": b64, "revised_prompt": "an echidna swimming"}
    data = sse(
        created(),
        {"type": "response.output_item.added", "output_index": 0, "item": {"id": "rs_1", "type": "reasoning",
                                                                            "summary": []}},
        {"type": "response.output_item.done", "output_index": 0, "item": {"id": "rs_1", "type": "reasoning",
                                                                           "summary": []}},
        {"type": "response.output_item.added", "output_index": 1,
         "item": {"id": "ig_1", "type": "image_generation_call", "status": "in_progress"}},
        {"type": "response.image_generation_call.partial_image", "output_index": 1, "item_id": "ig_1",
         "partial_image_index": 0, "partial_image_b64": b64},
        {"type": "response.output_item.done", "output_index": 1, "item": call},
        {"type": "response.output_item.done", "output_index": 2,
         "item": {"id": "msg_1", "type": "message", "role": "assistant",
                  "content": [{"type": "output_text", "text": ""}]}},
        completed([call], USAGE),
    )
    events = run(data)
    assert items(events) == [{"type": "inline_data", "data": image, "mime_type": "image/webp"}]
    assert stop(events)[0] == "stop"


def test_web_search_calls_are_not_tool_calls_and_are_not_replayed():
    search = {"id": "ws_1", "type": "web_search_call", "status": "completed",
              "action": {"type": "search", "query": "berlin", "sources": [{"type": "url", "url": "https://x.test"}]}}
    data = sse(
        created(),
        {"type": "response.output_item.added", "output_index": 0,
         "item": {"id": "ws_1", "type": "web_search_call", "status": "in_progress"}},
        {"type": "response.web_search_call.searching", "output_index": 0, "item_id": "ws_1"},
        {"type": "response.output_item.done", "output_index": 0, "item": search},
        {"type": "response.output_text.delta", "output_index": 1, "content_index": 0, "delta": "News."},
        {"type": "response.output_text.annotation.added", "output_index": 1, "content_index": 0,
         "annotation_index": 0, "annotation": {"type": "url_citation", "url": "https://x.test", "start_index": 0,
                                               "end_index": 5}},
        completed([search], USAGE),
    )
    events = run(data)
    assert items(events) == [{"type": "text", "text": "News."}]
    assert stop(events) == ("stop", BUCKETS)
    assert replay(collect(events))[0] == {"type": "message", "role": "assistant",
                                          "content": [{"type": "output_text", "text": "News.", "annotations": []}]}


def test_a_turn_that_only_asks_for_mcp_approval_carries_the_request_for_the_next_turn():
    # (config["mcp_servers"]: a server item, no empty answer; tests/test_mcp_servers.py has the rest)
    request = {"id": "mcpr_1", "type": "mcp_approval_request", "name": "create_short_url", "server_label": "zip",
               "arguments": '{"url": "https://x.test"}'}
    data = sse(created(), {"type": "response.output_item.added", "output_index": 0, "item": request},
               {"type": "response.output_item.done", "output_index": 0, "item": request}, completed([request]))
    events = run(data)
    assert items(events) == [{"type": "text", "text": "", "fidelity": {"server_item": request}}]
    assert stop(events)[0] == "stop"
    assert replay(collect(events))[0] == request


# -- errors ----------------------------------------------------------------------------------------


def test_error_event_wins_over_the_failed_response_that_follows():
    data = sse(
        created(),
        {"type": "error", "sequence_number": 2,
         "error": {"type": "insufficient_quota", "code": "insufficient_quota", "message": "Quota exceeded.",
                   "param": None}},
        {"type": "response.failed",
         "response": {"status": "failed", "error": {"code": "insufficient_quota", "message": "Quota exceeded."}}},
    )
    with pytest.raises(UpstreamError) as info:
        run_parser(parse_stream, [data], CLIENT)
    assert (info.value.error_type, info.value.message, info.value.retryable) == (
        "insufficient_quota", "Quota exceeded.", False)


def test_error_event_with_a_null_code_is_a_server_error():
    data = sse({"type": "error", "error": {"type": "server_error", "code": None, "message": "Sorry.", "param": None},
                "sequence_number": 2})
    with pytest.raises(ServerError) as info:
        run_parser(parse_stream, [data], CLIENT)
    assert (info.value.error_type, info.value.message, info.value.retryable) == ("server_error", "Sorry.", True)


def test_events_without_index_or_item_id_keep_reasoning_replayable():
    # minimal servers send bare deltas; the reasoning item's done never comes
    data = sse(
        {"type": "response.reasoning_text.delta", "sequence_number": 1, "delta": "Think."},
        {"type": "response.output_text.delta", "sequence_number": 2, "delta": "Answer."},
        completed([], {"output_tokens": 8}),
    )
    events = run(data)
    assert items(events) == [
        {"type": "thinking", "thinking": "Think."},
        {"type": "thinking", "thinking": "", "fidelity": {"channel": "content"}},
        {"type": "text", "text": "Answer."},
    ]
    assert replay(collect(events))[0] == {"type": "reasoning", "summary": [],
                                          "content": [{"type": "reasoning_text", "text": "Think."}]}


# -- the final response fills in what the streamed items lacked (issue 13) -----------------------------


def test_litellm_encrypted_reasoning_only_in_the_completed_response_is_kept_for_the_next_turn():
    """LiteLLM's Responses bridge in front of Claude: every item at output_index 0, the reasoning item's
    done without ``encrypted_content`` (the signed thinking), which only ``response.completed`` carries."""
    streamed = {"id": "rs_l", "type": "reasoning", "summary": [{"type": "summary_text", "text": "Weather first."}]}
    final_reasoning = dict(streamed, encrypted_content="c2lnbmVkLXRoaW5raW5n")
    call = {"id": "fc_l", "type": "function_call", "call_id": "toolu_9", "name": "get_weather",
            "arguments": '{"city": "Oslo"}', "status": "completed"}
    data = sse(
        created(),
        {"type": "response.output_item.added", "output_index": 0,
         "item": {"id": "rs_l", "type": "reasoning", "summary": []}},
        {"type": "response.reasoning_summary_text.delta", "item_id": "rs_l", "output_index": 0, "summary_index": 0,
         "delta": "Weather first."},
        {"type": "response.output_item.done", "output_index": 0, "item": streamed},
        {"type": "response.output_item.added", "output_index": 0, "item": dict(call, arguments="",
                                                                                status="in_progress")},
        {"type": "response.function_call_arguments.delta", "item_id": "fc_l", "output_index": 0,
         "delta": '{"city": "Oslo"}'},
        {"type": "response.output_item.done", "output_index": 0, "item": call},
        completed([final_reasoning, call], USAGE),
        done=True,
    )
    events = run(data)
    assert items(events) == [
        {"type": "thinking", "thinking": "Weather first."},
        {"type": "thinking", "thinking": "", "fidelity": {"channel": "summary"}},
        {"type": "partial_tool_call", "name": "get_weather", "arguments": "", "tool_call_id": "toolu_9"},
        {"type": "partial_tool_call", "name": "", "arguments": '{"city": "Oslo"}', "tool_call_id": ""},
        {"type": "tool_call", "name": "get_weather", "arguments": {"city": "Oslo"}, "tool_call_id": "toolu_9"},
        {"type": "thinking", "thinking": "", "fidelity": {"channel": "summary",
                                                        "encrypted_content": "c2lnbmVkLXRoaW5raW5n",
                                                        "supplements": 0}},
    ]
    assert stop(events) == ("tool_call", BUCKETS)
    assert replay(collect(events)) == [
        {"type": "reasoning", "summary": [{"type": "summary_text", "text": "Weather first."}],
         "encrypted_content": "c2lnbmVkLXRoaW5raW5n"},
        {"type": "function_call", "call_id": "toolu_9", "name": "get_weather", "arguments": '{"city":"Oslo"}'},
        {"type": "function_call_output", "call_id": "toolu_9", "output": "ok"},
    ]


def test_summaries_only_in_the_final_response_are_shown_once_and_join_their_item():
    """A relay whose reasoning item streams nothing and finishes empty, but whose final response has
    the summary parts and the encrypted content: shown once, replayed as one item."""
    final = {"id": "rs_f", "type": "reasoning", "encrypted_content": "ZW5j",
             "summary": [{"type": "summary_text", "text": "One."}, {"type": "summary_text", "text": "Two."}]}
    message = {"id": "msg_f", "type": "message", "role": "assistant",
               "content": [{"type": "output_text", "text": "Hi."}]}
    data = sse(
        created(),
        {"type": "response.output_item.added", "output_index": 0, "item": {"id": "rs_f", "type": "reasoning"}},
        {"type": "response.output_item.done", "output_index": 0, "item": {"id": "rs_f", "type": "reasoning",
                                                                           "summary": []}},
        {"type": "response.output_text.delta", "item_id": "msg_f", "output_index": 1, "content_index": 0,
         "delta": "Hi."},
        completed([final, message], USAGE),
    )
    events = run(data)
    assert items(events) == [
        {"type": "text", "text": "Hi."},
        {"type": "thinking", "thinking": "One."},
        {"type": "thinking", "thinking": "\n\n"},
        {"type": "thinking", "thinking": "Two."},
        {"type": "thinking", "thinking": "", "fidelity": {"channel": "summary", "encrypted_content": "ZW5j",
                                                        "parts": [4, 4]}},
    ]
    # nothing went out for the reasoning item before the text did: it is replayed where it arrived
    assert replay(collect(events))[1] == {
        "type": "reasoning", "encrypted_content": "ZW5j",
        "summary": [{"type": "summary_text", "text": "One."}, {"type": "summary_text", "text": "Two."}]}


def test_a_sealed_reasoning_item_gets_the_final_responses_signature_without_repeating_its_text():
    streamed_text = [{"type": "response.reasoning_text.delta", "output_index": 0, "content_index": 0,
                      "delta": "Count."}]
    final = {"id": "rs_9", "type": "reasoning", "summary": [], "encrypted_content": "ZW5jMg==",
             "content": [{"type": "reasoning_text", "text": "Count."}]}
    data = sse(created(), *streamed_text,
               {"type": "response.output_text.delta", "output_index": 1, "content_index": 0, "delta": "3"},
               completed([final, {"type": "message", "role": "assistant",
                                  "content": [{"type": "output_text", "text": "3"}]}]))
    events = run(data)
    assert items(events) == [
        {"type": "thinking", "thinking": "Count."},
        {"type": "thinking", "thinking": "", "fidelity": {"channel": "content"}},
        {"type": "text", "text": "3"},
        {"type": "thinking", "thinking": "", "fidelity": {"channel": "content", "encrypted_content": "ZW5jMg==",
                                                        "supplements": 0}},
    ]
    assert replay(collect(events))[0] == {"type": "reasoning", "summary": [], "encrypted_content": "ZW5jMg==",
                                          "content": [{"type": "reasoning_text", "text": "Count."}]}


def test_call_arguments_and_call_id_only_in_the_final_response():
    """A bridge that announces the call by name, sends no argument deltas, finishes it without
    ``arguments`` or ``call_id``: the call waits for the final response, which has both."""
    data = sse(
        created(),
        {"type": "response.output_item.added", "output_index": 0,
         "item": {"id": "fc_1", "type": "function_call", "name": "lookup", "arguments": ""}},
        {"type": "response.output_item.done", "output_index": 0,
         "item": {"id": "fc_1", "type": "function_call", "name": "lookup", "arguments": ""}},
        {"type": "response.output_text.delta", "output_index": 1, "content_index": 0, "delta": "Looking."},
        completed([{"id": "fc_1", "type": "function_call", "call_id": "call_real", "name": "lookup",
                    "arguments": '{"q": "tides"}'},
                   {"type": "message", "role": "assistant", "content": [{"type": "output_text",
                                                                        "text": "Looking."}]}]),
    )
    events = run(data)
    assert items(events) == [
        {"type": "partial_tool_call", "name": "lookup", "arguments": "", "tool_call_id": "call_real"},
        {"type": "partial_tool_call", "name": "", "arguments": '{"q": "tides"}', "tool_call_id": ""},
        {"type": "tool_call", "name": "lookup", "arguments": {"q": "tides"}, "tool_call_id": "call_real"},
        {"type": "text", "text": "Looking."},
    ]
    assert stop(events)[0] == "tool_call"


def test_a_call_never_named_by_id_anywhere_still_completes_with_a_synthetic_id():
    data = sse(
        created(),
        {"type": "response.output_item.added", "output_index": 0,
         "item": {"type": "function_call", "name": "ping", "arguments": ""}},
        {"type": "response.function_call_arguments.delta", "output_index": 0, "delta": "{}"},
        {"type": "response.output_item.done", "output_index": 0,
         "item": {"type": "function_call", "name": "ping", "arguments": "{}"}},
        completed([]),
    )
    assert items(run(data)) == [
        {"type": "partial_tool_call", "name": "ping", "arguments": "", "tool_call_id": "call_t_0"},
        {"type": "partial_tool_call", "name": "", "arguments": "{}", "tool_call_id": ""},
        {"type": "tool_call", "name": "ping", "arguments": {}, "tool_call_id": "call_t_0"},
    ]


def test_message_text_and_image_only_in_the_final_response_come_once():
    image = base64.b64encode(b"\x89PNG....").decode("ascii")
    data = sse(
        created(),
        {"type": "response.output_item.added", "output_index": 0,
         "item": {"id": "ig_2", "type": "image_generation_call", "status": "in_progress"}},
        {"type": "response.output_item.done", "output_index": 0,
         "item": {"id": "ig_2", "type": "image_generation_call", "status": "completed"}},
        {"type": "response.output_item.added", "output_index": 1,
         "item": {"id": "msg_2", "type": "message", "role": "assistant", "content": []}},
        {"type": "response.output_item.done", "output_index": 1,
         "item": {"id": "msg_2", "type": "message", "role": "assistant", "content": []}},
        completed([{"id": "ig_2", "type": "image_generation_call", "status": "completed", "result": image,
                    "output_format": "png"},
                   {"id": "msg_2", "type": "message", "role": "assistant", "phase": "final_answer",
                    "content": [{"type": "output_text", "text": "Here."}]}]),
    )
    assert items(run(data)) == [
        {"type": "inline_data", "data": b"\x89PNG....", "mime_type": "image/png"},
        {"type": "text", "text": "Here.", "fidelity": {"phase": "final_answer"}},
    ]


def test_nothing_is_repeated_when_the_final_response_only_restates_the_stream():
    reasoning = {"id": "rs_r", "type": "reasoning", "encrypted_content": "ZQ==",
                 "summary": [{"type": "summary_text", "text": "Plan."}]}
    message = {"id": "msg_r", "type": "message", "role": "assistant",
               "content": [{"type": "output_text", "text": "Done."}]}
    data = sse(
        created(),
        {"type": "response.output_item.added", "output_index": 0, "item": {"id": "rs_r", "type": "reasoning"}},
        {"type": "response.reasoning_summary_text.delta", "output_index": 0, "summary_index": 0, "delta": "Plan."},
        {"type": "response.output_item.done", "output_index": 0, "item": reasoning},
        {"type": "response.output_item.added", "output_index": 1,
         "item": {"id": "msg_r", "type": "message", "role": "assistant", "content": []}},
        {"type": "response.output_text.delta", "output_index": 1, "content_index": 0, "delta": "Done."},
        {"type": "response.output_item.done", "output_index": 1, "item": message},
        # a relay that renumbers ids in the final response: matched by type and order instead
        completed([dict(reasoning, id="rs_other"), dict(message, id="msg_other")], USAGE),
    )
    assert items(run(data)) == [
        {"type": "thinking", "thinking": "Plan."},
        {"type": "thinking", "thinking": "", "fidelity": {"channel": "summary", "encrypted_content": "ZQ=="}},
        {"type": "text", "text": "Done."},
    ]


# -- client-side tool items the caller did not ask for (issue 13) ---------------------------------------


@pytest.mark.parametrize("item, named", [
    ({"id": "lsh_1", "type": "local_shell_call", "call_id": "call_ls", "status": "completed",
      "action": {"type": "exec", "command": ["ls", "-la"], "env": {}}}, "local_shell_call"),
    ({"id": "sh_1", "type": "shell_call", "call_id": "call_sh", "status": "completed",
      "action": {"commands": ["pwd"]}}, "shell_call"),
    ({"id": "ap_1", "type": "apply_patch_call", "call_id": "call_ap", "status": "completed",
      "operation": {"type": "update_file", "path": "a.py", "diff": "@@ -1 +1 @@\n-a\n+b\n"}}, "apply_patch_call"),
    ({"id": "ts_1", "type": "tool_search_call", "call_id": "call_ts", "execution": "client", "status": "completed",
      "arguments": {"query": "weather"}}, "tool_search_call (a client-executed tool search)"),
])
@pytest.mark.parametrize("where", ["streamed", "final_only"])
def test_a_turn_that_only_asks_the_caller_to_act_names_the_item(item, named, where):
    payloads = [created()]
    if where == "streamed":
        payloads += [{"type": "response.output_item.added", "output_index": 0, "item": dict(item, status="in_progress")},
                     {"type": "response.output_item.done", "output_index": 0, "item": item}]
    payloads.append(completed([item], USAGE))
    with pytest.raises(EmptyResponseError) as info:
        run_parser(parse_stream, [sse(*payloads)], CLIENT)
    assert str(info.value) == (
        "the openai-responses response only asked the caller to act on {}: items for tools agenthub does not "
        "declare or hand back (no text, tool call or media came with them)".format(named))
    assert info.value.item_types == [item["type"]]
    assert info.value.retryable is False


def test_a_server_side_tool_search_is_no_action_and_an_answer_beside_an_action_completes(caplog):
    search = {"id": "ts_2", "type": "tool_search_call", "execution": "server", "status": "completed",
              "arguments": {"query": "x"}}
    shell = {"id": "lsh_2", "type": "local_shell_call", "call_id": "c", "status": "completed",
             "action": {"type": "exec", "command": ["date"], "env": {}}}
    data = sse(created(), {"type": "response.output_item.done", "output_index": 0, "item": search},
               {"type": "response.output_item.done", "output_index": 1, "item": shell},
               {"type": "response.output_text.delta", "output_index": 2, "content_index": 0, "delta": "Ran it."},
               completed([search, shell]))
    with caplog.at_level("WARNING", logger="agenthub"):
        events = run(data)
    assert items(events) == [{"type": "text", "text": "Ran it."}]
    assert "asked the caller to act on local_shell_call" in caplog.text


#: LiteLLM's encrypted_content: the signed thinking blocks as JSON text (decoded again on the next turn)
LITELLM_ENC = '[{"type":"thinking","thinking":"Need the weather.","signature":"RXFvQlNpZ25lZA=="}]'


def test_litellm_bridge_order_reasoning_text_then_call_with_new_ids_in_the_final_response():
    """LiteLLM's bridge as it streams Claude: the reasoning item at index 0 (deltas without summary_index),
    the message's text at index 0 with no ``added`` of its own, the call at index 1 with its call_id as
    item id and 10-character argument deltas, the message's done last; the final response names the
    reasoning item anew and carries its ``encrypted_content``."""
    args = '{"city": "Oslo", "unit": "C"}'
    call = {"id": "toolu_7", "type": "function_call", "call_id": "toolu_7", "name": "get_weather",
            "arguments": args, "status": "completed"}
    payloads = [
        created(),
        {"type": "response.output_item.added", "output_index": 0,
         "item": {"id": "rs_stream", "type": "reasoning", "status": "in_progress", "summary": None}},
        {"type": "response.reasoning_summary_text.delta", "item_id": "rs_stream", "output_index": 0,
         "delta": "Need the "},
        {"type": "response.reasoning_summary_text.delta", "item_id": "rs_stream", "output_index": 0,
         "delta": "weather."},
        {"type": "response.reasoning_summary_text.done", "item_id": "rs_stream", "output_index": 0,
         "summary_index": 0, "text": "Need the weather."},
        {"type": "response.reasoning_summary_part.done", "item_id": "rs_stream", "output_index": 0,
         "summary_index": 0, "part": {"type": "summary_text", "text": "Need the weather."}},
        {"type": "response.output_item.done", "output_index": 0,
         "item": {"id": "rs_stream", "type": "reasoning",
                  "summary": [{"type": "summary_text", "text": "Need the weather."}]}},
        {"type": "response.output_text.delta", "item_id": "msg_s", "output_index": 0, "content_index": 0,
         "delta": "Let me check."},
        {"type": "response.output_item.added", "output_index": 1, "item": dict(call, arguments="",
                                                                                status="in_progress")},
    ]
    for start in range(0, len(args), 10):
        payloads.append({"type": "response.function_call_arguments.delta", "item_id": "toolu_7", "output_index": 1,
                         "delta": args[start:start + 10]})
    payloads += [
        {"type": "response.function_call_arguments.done", "item_id": "toolu_7", "output_index": 1, "arguments": args},
        {"type": "response.output_item.done", "output_index": 1, "item": call},
        {"type": "response.output_text.done", "item_id": "msg_s", "output_index": 0, "content_index": 0,
         "text": "Let me check."},
        {"type": "response.output_item.done", "output_index": 0,
         "item": {"id": "msg_s", "type": "message", "role": "assistant", "status": "completed",
                  "content": [{"type": "output_text", "text": "Let me check.", "annotations": []}]}},
        completed([{"id": "rs_final", "type": "reasoning", "encrypted_content": LITELLM_ENC,
                    "summary": [{"type": "summary_text", "text": "Need the weather."}]},
                   {"id": "msg_final", "type": "message", "role": "assistant", "status": "completed",
                    "content": [{"type": "output_text", "text": "Let me check.", "annotations": []}]},
                   call], USAGE),
    ]
    events = run(sse(*payloads, event_lines=True))
    fragments = [args[i:i + 10] for i in range(0, len(args), 10)]
    assert items(events) == [
        {"type": "thinking", "thinking": "Need the "},
        {"type": "thinking", "thinking": "weather."},
        {"type": "thinking", "thinking": "", "fidelity": {"channel": "summary"}},
        {"type": "text", "text": "Let me check."},
        {"type": "partial_tool_call", "name": "get_weather", "arguments": "", "tool_call_id": "toolu_7"},
    ] + [{"type": "partial_tool_call", "name": "", "arguments": f, "tool_call_id": ""} for f in fragments] + [
        {"type": "tool_call", "name": "get_weather", "arguments": {"city": "Oslo", "unit": "C"},
         "tool_call_id": "toolu_7"},
        {"type": "thinking", "thinking": "", "fidelity": {"channel": "summary", "encrypted_content": LITELLM_ENC,
                                                        "supplements": 0}},
    ]
    assert replay(collect(events)) == [
        {"type": "reasoning", "summary": [{"type": "summary_text", "text": "Need the weather."}],
         "encrypted_content": LITELLM_ENC},
        {"type": "message", "role": "assistant",
         "content": [{"type": "output_text", "text": "Let me check.", "annotations": []}]},
        {"type": "function_call", "call_id": "toolu_7", "name": "get_weather", "arguments": '{"city":"Oslo","unit":"C"}'},
        {"type": "function_call_output", "call_id": "toolu_7", "output": "ok"},
    ]
