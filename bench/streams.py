"""Realistic wire streams for the benchmark, one generator per protocol and scenario.

Each function returns a list of SSE event blocks (bytes, each ending in a blank
line); the server sends every block as one HTTP chunk, as real servers flush one
event at a time.  Payloads follow the providers' documented event formats and
the recordings in ../shared/wire: the same fields, ids, usage objects and
terminal markers, so JSON decoding costs what it costs in production.
"""

import json

__all__ = ["PROTOCOLS", "FIRST_CONTENT", "text_stream", "tool_stream", "tool_arguments", "expected_text", "WORDS"]

PROTOCOLS = ("openai-chat", "openai-responses", "anthropic", "gemini")

#: index of the first event that carries text in each protocol's text stream
FIRST_CONTENT = {"openai-chat": 1, "openai-responses": 4, "anthropic": 3, "gemini": 0}

#: token-sized pieces; a few non-ASCII ones so UTF-8 decoding is exercised
WORDS = (
    " the", " quick", " brown", " fox", " jumps", " over", " lazy", " dog", ".", " It", " was", " a",
    " bright", " cold", " day", " in", " April", ",", " and", " clocks", " were", " striking", " thirteen",
    " café", " naïve", " 東京", " — ", "\n\n", " \"quoted\"", " 42", " résumé", " ok",
)


def _compact(obj):
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def _gemini_json(obj):
    # Gemini's SSE payloads are spaced like {"candidates": [...],"usageMetadata": {...}}
    return json.dumps(obj, ensure_ascii=False, separators=(",", ": "))


def _data(payload, event=None):
    head = "event: {}\n".format(event) if event else ""
    return (head + "data: " + payload + "\n\n").encode("utf-8")


def words(n):
    return [WORDS[i % len(WORDS)] for i in range(n)]


def expected_text(n):
    return "".join(words(n))


# -- text ------------------------------------------------------------------------------------------


def text_stream(protocol, n):
    """A stream with ``n`` text deltas (one per SSE event), plus the protocol's own framing events."""
    return _TEXT[protocol](words(n))


def _chat_text(pieces):
    base = {"id": "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG", "object": "chat.completion.chunk",
            "created": 1741570283, "model": "gpt-4o-2024-08-06", "service_tier": "default",
            "system_fingerprint": "fp_eb9dce56a8"}
    out = [_data(_compact(dict(base, choices=[{"index": 0, "delta": {"role": "assistant", "content": "",
                                                                      "refusal": None},
                                                "logprobs": None, "finish_reason": None}], usage=None)))]
    for piece in pieces:
        out.append(_data(_compact(dict(base, choices=[{"index": 0, "delta": {"content": piece}, "logprobs": None,
                                                       "finish_reason": None}], usage=None))))
    out.append(_data(_compact(dict(base, choices=[{"index": 0, "delta": {}, "logprobs": None,
                                                   "finish_reason": "stop"}], usage=None))))
    out.append(_data(_compact(dict(base, choices=[], usage=_chat_usage(len(pieces))))))
    out.append(b"data: [DONE]\n\n")
    return out


def _chat_usage(n):
    return {"prompt_tokens": 19, "completion_tokens": n, "total_tokens": 19 + n,
            "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0,
                                          "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}}


_RESP_ID = "resp_67ccd2bed1ec8190b14f964abc0542670bb6a6b452d3795b"
_MSG_ID = "msg_67ccd2bf17f0819081ff3bb2cf6508e60bb6a6b452d3795b"


def _response(status, output, usage):
    return {"id": _RESP_ID, "object": "response", "created_at": 1741476542, "status": status, "error": None,
            "incomplete_details": None, "instructions": None, "max_output_tokens": None,
            "model": "gpt-4.1-2025-04-14", "output": output, "parallel_tool_calls": True,
            "previous_response_id": None, "reasoning": {"effort": None, "summary": None}, "store": True,
            "temperature": 1.0, "text": {"format": {"type": "text"}}, "tool_choice": "auto", "tools": [],
            "top_p": 1.0, "truncation": "disabled", "usage": usage, "user": None, "metadata": {}}


def _responses_usage(n):
    return {"input_tokens": 37, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": n,
            "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 37 + n}


class _Seq(object):
    def __init__(self):
        self.n = 0

    def ev(self, kind, **fields):
        payload = {"type": kind, "sequence_number": self.n}
        payload.update(fields)
        self.n += 1
        return _data(_compact(payload), kind)


def _responses_text(pieces):
    seq = _Seq()
    text = "".join(pieces)
    message_open = {"id": _MSG_ID, "type": "message", "status": "in_progress", "content": [], "role": "assistant"}
    part = {"type": "output_text", "annotations": [], "logprobs": [], "text": text}
    message_done = {"id": _MSG_ID, "type": "message", "status": "completed", "content": [part], "role": "assistant"}
    out = [
        seq.ev("response.created", response=_response("in_progress", [], None)),
        seq.ev("response.in_progress", response=_response("in_progress", [], None)),
        seq.ev("response.output_item.added", output_index=0, item=message_open),
        seq.ev("response.content_part.added", item_id=_MSG_ID, output_index=0, content_index=0,
               part={"type": "output_text", "annotations": [], "logprobs": [], "text": ""}),
    ]
    for piece in pieces:
        out.append(seq.ev("response.output_text.delta", item_id=_MSG_ID, output_index=0, content_index=0,
                          delta=piece, logprobs=[]))
    out += [
        seq.ev("response.output_text.done", item_id=_MSG_ID, output_index=0, content_index=0, text=text, logprobs=[]),
        seq.ev("response.content_part.done", item_id=_MSG_ID, output_index=0, content_index=0, part=part),
        seq.ev("response.output_item.done", output_index=0, item=message_done),
        seq.ev("response.completed", response=_response("completed", [message_done], _responses_usage(len(pieces)))),
    ]
    return out


def _anthropic_start():
    return _data(_compact({"type": "message_start", "message": {
        "id": "msg_01XFDUDYJgAACzvnptvVoYEL", "type": "message", "role": "assistant", "content": [],
        "model": "claude-sonnet-4-5-20250929", "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": 25, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
                  "output_tokens": 1, "service_tier": "standard"}}}), "message_start")


def _anthropic_end(reason, n):
    return [
        _data(_compact({"type": "message_delta", "delta": {"stop_reason": reason, "stop_sequence": None},
                        "usage": {"output_tokens": n}}), "message_delta"),
        _data(_compact({"type": "message_stop"}), "message_stop"),
    ]


def _anthropic_text(pieces):
    out = [
        _anthropic_start(),
        _data(_compact({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
              "content_block_start"),
        _data('{"type": "ping"}', "ping"),
    ]
    for piece in pieces:
        out.append(_data(_compact({"type": "content_block_delta", "index": 0,
                                   "delta": {"type": "text_delta", "text": piece}}), "content_block_delta"))
    out.append(_data(_compact({"type": "content_block_stop", "index": 0}), "content_block_stop"))
    return out + _anthropic_end("end_turn", len(pieces))


def _gemini_chunk(parts, finish=None, n=0):
    candidate = {"content": {"parts": parts, "role": "model"}, "index": 0}
    usage = {"promptTokenCount": 9, "totalTokenCount": 9 + n,
             "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 9}]}
    if finish:
        candidate["finishReason"] = finish
        usage["candidatesTokenCount"] = n
        usage["candidatesTokensDetails"] = [{"modality": "TEXT", "tokenCount": n}]
    # Gemini's alt=sse framing ends lines with CRLF (see ../shared/wire/gemini)
    return ("data: " + _gemini_json({"candidates": [candidate], "usageMetadata": usage,
                                     "modelVersion": "gemini-2.5-flash", "responseId": "w1peaMz6INOvnvgPgYfPiQY"})
            + "\r\n\r\n").encode("utf-8")


def _gemini_text(pieces):
    out = [_gemini_chunk([{"text": piece}], None, i) for i, piece in enumerate(pieces[:-1])]
    out.append(_gemini_chunk([{"text": pieces[-1]}], "STOP", len(pieces)))
    return out


_TEXT = {"openai-chat": _chat_text, "openai-responses": _responses_text, "anthropic": _anthropic_text,
         "gemini": _gemini_text}


# -- one big tool call ---------------------------------------------------------------------------------


def tool_arguments(size):
    """A JSON object of about ``size`` bytes: a file write with escapes, as a coding agent sends."""
    line = 'def handler(event):  # "quoted" \\ back\tslash, café\n    return {"ok": True}\n'
    content = (line * (size // len(line) + 1))[: max(0, size - 40)]
    return _compact({"path": "src/generated/module.py", "content": content})


def tool_stream(protocol, size, fragments):
    """One tool call whose ~``size`` bytes of arguments arrive in ``fragments`` pieces."""
    args = tool_arguments(size)
    return _TOOL[protocol](_split(args, fragments), args)


def _split(text, n):
    """``text`` in ``n`` nearly equal pieces (cut anywhere: inside strings, escapes and keys)."""
    n = max(1, min(n, len(text)))
    return [text[len(text) * i // n:len(text) * (i + 1) // n] for i in range(n)]


_CALL_ID = "call_kL0PCQV7M2WMoVX8V8OtYSAL"
_NAME = "write_file"


def _chat_tool(pieces, args):
    base = {"id": "chatcmpl-ABfw8AOXnoa2kzy11vVTSjuQhHCQr", "object": "chat.completion.chunk",
            "created": 1727346176, "model": "gpt-4o-2024-08-06", "system_fingerprint": "fp_7568d46099"}
    out = [_data(_compact(dict(base, choices=[{"index": 0, "delta": {
        "role": "assistant", "content": None, "tool_calls": [{"index": 0, "id": _CALL_ID, "type": "function",
                                                              "function": {"name": _NAME, "arguments": ""}}],
        "refusal": None}, "logprobs": None, "finish_reason": None}])))]
    for piece in pieces:
        out.append(_data(_compact(dict(base, choices=[{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "function": {"arguments": piece}}]}, "logprobs": None, "finish_reason": None}]))))
    out.append(_data(_compact(dict(base, choices=[{"index": 0, "delta": {}, "logprobs": None,
                                                   "finish_reason": "tool_calls"}]))))
    out.append(_data(_compact(dict(base, choices=[], usage=_chat_usage(len(pieces))))))
    out.append(b"data: [DONE]\n\n")
    return out


def _responses_tool(pieces, args):
    seq = _Seq()
    fc_id = "fc_67e554a1de488191af0831d35cbe082e0794405d35281ae2"
    item = {"type": "function_call", "id": fc_id, "call_id": _CALL_ID, "name": _NAME, "arguments": "",
            "status": "in_progress"}
    done = dict(item, arguments=args, status="completed")
    out = [
        seq.ev("response.created", response=_response("in_progress", [], None)),
        seq.ev("response.in_progress", response=_response("in_progress", [], None)),
        seq.ev("response.output_item.added", output_index=0, item=item),
    ]
    for piece in pieces:
        out.append(seq.ev("response.function_call_arguments.delta", item_id=fc_id, output_index=0, delta=piece))
    out += [
        seq.ev("response.function_call_arguments.done", item_id=fc_id, output_index=0, arguments=args),
        seq.ev("response.output_item.done", output_index=0, item=done),
        seq.ev("response.completed", response=_response("completed", [done], _responses_usage(len(pieces)))),
    ]
    return out


def _anthropic_tool(pieces, args):
    out = [
        _anthropic_start(),
        _data(_compact({"type": "content_block_start", "index": 0, "content_block": {
            "type": "tool_use", "id": "toolu_01T1x1fJ34qAmk2tNTrN7Up6", "name": _NAME, "input": {}}}),
            "content_block_start"),
        _data(_compact({"type": "content_block_delta", "index": 0,
                        "delta": {"type": "input_json_delta", "partial_json": ""}}), "content_block_delta"),
    ]
    for piece in pieces:
        out.append(_data(_compact({"type": "content_block_delta", "index": 0,
                                   "delta": {"type": "input_json_delta", "partial_json": piece}}),
                         "content_block_delta"))
    out.append(_data(_compact({"type": "content_block_stop", "index": 0}), "content_block_stop"))
    return out + _anthropic_end("tool_use", len(pieces))


def _gemini_tool(pieces, args):
    """Vertex AI's streamed function-call arguments (streamFunctionCallArguments): partialArgs string pieces."""
    value = json.loads(args)
    out = [_gemini_chunk([{"functionCall": {"name": _NAME, "willContinue": True}}])]
    out.append(_gemini_chunk([{"functionCall": {"partialArgs": [
        {"jsonPath": "$.path", "stringValue": value["path"]}], "willContinue": True}}]))
    for piece in _split(value["content"], len(pieces) - 1):
        out.append(_gemini_chunk([{"functionCall": {"partialArgs": [
            {"jsonPath": "$.content", "stringValue": piece, "willContinue": True}],
            "willContinue": True}}]))
    out.append(_gemini_chunk([{"functionCall": {"partialArgs": [{"jsonPath": "$.content", "stringValue": ""}],
                                                "willContinue": True}}]))
    out.append(_gemini_chunk([{"functionCall": {}}], "STOP", len(pieces)))
    return out


_TOOL = {"openai-chat": _chat_tool, "openai-responses": _responses_tool, "anthropic": _anthropic_tool,
         "gemini": _gemini_tool}
