"""Minimal streams for the tool-runner tests, one builder pair per protocol: a turn that calls tools
(``calls``: [(tool_call_id, name, arguments text)]) and a turn that answers with text.  Written for
these tests (the shapes follow each protocol's documented stream), usage small and fixed."""

import json


def _sse(events, named=False):
    out = []
    for event in events:
        if named:
            out.append("event: {}\n".format(event["type"]))
        out.append("data: {}\n\n".format(json.dumps(event, ensure_ascii=False)))
    return "".join(out).encode("utf-8")


# -- Chat Completions ------------------------------------------------------------------------------------------
def chat_calls(calls, usage=(10, 5)):
    chunks = []
    for n, (call_id, name, args) in enumerate(calls):
        chunks.append({"id": "c1", "choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": n, "id": call_id, "type": "function", "function": {"name": name, "arguments": ""}}]},
            "finish_reason": None}]})
        chunks.append({"id": "c1", "choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": n, "function": {"arguments": args}}]}, "finish_reason": None}]})
    chunks.append({"id": "c1", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
    chunks.append({"id": "c1", "choices": [], "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1]}})
    return _sse(chunks) + b"data: [DONE]\n\n"


def chat_text(text, usage=(20, 3)):
    chunks = [{"id": "c2", "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]},
              {"id": "c2", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
              {"id": "c2", "choices": [], "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1]}}]
    return _sse(chunks) + b"data: [DONE]\n\n"


# -- Responses -------------------------------------------------------------------------------------------------
def _response(rid, output, usage):
    return {"id": rid, "object": "response", "status": "completed", "output": output,
            "usage": {"input_tokens": usage[0], "output_tokens": usage[1]}}


def responses_calls(calls, usage=(10, 5)):
    events = [{"type": "response.created", "response": {"id": "resp_1", "status": "in_progress", "output": []}}]
    output = []
    for n, (call_id, name, args) in enumerate(calls):
        item = {"id": "fc_{}".format(n), "type": "function_call", "status": "in_progress", "arguments": "",
                "call_id": call_id, "name": name}
        events.append({"type": "response.output_item.added", "output_index": n, "item": item})
        events.append({"type": "response.function_call_arguments.delta", "item_id": item["id"], "output_index": n,
                       "delta": args})
        done = dict(item, status="completed", arguments=args)
        events.append({"type": "response.output_item.done", "output_index": n, "item": done})
        output.append(done)
    events.append({"type": "response.completed", "response": _response("resp_1", output, usage)})
    return _sse(events, named=True)


def responses_text(text, usage=(20, 3)):
    msg = {"id": "msg_2", "type": "message", "status": "completed", "role": "assistant",
           "content": [{"type": "output_text", "text": text, "annotations": []}]}
    events = [{"type": "response.created", "response": {"id": "resp_2", "status": "in_progress", "output": []}},
              {"type": "response.output_item.added", "output_index": 0,
               "item": dict(msg, status="in_progress", content=[])},
              {"type": "response.content_part.added", "item_id": "msg_2", "output_index": 0, "content_index": 0,
               "part": {"type": "output_text", "text": "", "annotations": []}},
              {"type": "response.output_text.delta", "item_id": "msg_2", "output_index": 0, "content_index": 0,
               "delta": text},
              {"type": "response.output_item.done", "output_index": 0, "item": msg},
              {"type": "response.completed", "response": _response("resp_2", [msg], usage)}]
    return _sse(events, named=True)


# -- Anthropic -------------------------------------------------------------------------------------------------
def _message_start(mid, usage):
    return {"type": "message_start", "message": {"id": mid, "type": "message", "role": "assistant",
            "model": "claude-sonnet-4-6", "content": [], "stop_reason": None,
            "usage": {"input_tokens": usage[0], "output_tokens": 1}}}


def anthropic_calls(calls, usage=(10, 5)):
    events = [_message_start("msg_1", usage)]
    for n, (call_id, name, args) in enumerate(calls):
        events.append({"type": "content_block_start", "index": n,
                       "content_block": {"type": "tool_use", "id": call_id, "name": name, "input": {}}})
        events.append({"type": "content_block_delta", "index": n,
                       "delta": {"type": "input_json_delta", "partial_json": args}})
        events.append({"type": "content_block_stop", "index": n})
    events.append({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": usage[1]}})
    events.append({"type": "message_stop"})
    return _sse(events, named=True)


def anthropic_text(text, usage=(20, 3)):
    events = [_message_start("msg_2", usage),
              {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
              {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}},
              {"type": "content_block_stop", "index": 0},
              {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": usage[1]}},
              {"type": "message_stop"}]
    return _sse(events, named=True)


# -- Gemini ----------------------------------------------------------------------------------------------------
def gemini_calls(calls, usage=(10, 5)):
    parts = [{"functionCall": {"id": call_id, "name": name, "args": json.loads(args)}} for call_id, name, args in calls]
    chunk = {"candidates": [{"content": {"role": "model", "parts": parts}, "index": 0, "finishReason": "STOP"}],
             "usageMetadata": {"promptTokenCount": usage[0], "candidatesTokenCount": usage[1]}}
    return _sse([chunk])


def gemini_text(text, usage=(20, 3)):
    chunk = {"candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "index": 0,
                             "finishReason": "STOP"}],
             "usageMetadata": {"promptTokenCount": usage[0], "candidatesTokenCount": usage[1]}}
    return _sse([chunk])


BUILDERS = {"openai-chat": (chat_calls, chat_text), "openai-responses": (responses_calls, responses_text),
            "anthropic": (anthropic_calls, anthropic_text), "gemini": (gemini_calls, gemini_text)}
BASES = {"openai-chat": "/v1", "openai-responses": "/v1", "anthropic": "", "gemini": ""}
