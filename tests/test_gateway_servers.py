"""Gateways (LiteLLM, OpenRouter, compatible proxies): what their error answers and headers look like.

Each test plays a minimal answer written for this file on a local server (tests/faultserver.py) that
reproduces one gateway behaviour, and states the exact error (or events) that must come out.
"""

import json

import pytest

from agenthub import AutoLLMClient, RateLimitError, ServerError, StreamProtocolError, UpstreamError
from agenthub.client import Timeout
from agenthub.errors import upstream_error
from faultserver import FaultServer, chat_stream, send, status, tiny_session, within
from faultserver import fast_backoff, server  # noqa: F401  (fixtures)

USER = {"role": "user", "content_items": [{"type": "text", "text": "hi"}]}
SSE = {"Content-Type": "text/event-stream"}
JSON = {"Content-Type": "application/json"}




def make(server, client_type="openai-chat", path="/v1", **kwargs):
    kwargs.setdefault("timeout", Timeout(connect=2, read=3))
    return AutoLLMClient("test-model", client_type=client_type, base_url=server.url + path,
                         session=tiny_session(), **kwargs)


def text_of(events):
    return "".join(i["text"] for e in events for i in e["content_items"] if i["type"] == "text")


def fields(error):
    return (type(error).__name__, error.status, error.error_type, error.code, error.message, error.retryable)


# -- error objects ----------------------------------------------------------------------------------

def test_a_numeric_string_code_with_a_null_type_gives_the_status():
    """LiteLLM's proxy writes ``code`` as a string status and ``type`` null (or ``"None"``) in its
    error objects, also inside a 200 stream: the code is the status, and decides retrying."""
    error = upstream_error("openai-chat", {"error": {"message": "upstream failed", "type": None, "param": None,
                                                     "code": "500"}})
    assert fields(error) == ("ServerError", 500, None, "500", "upstream failed", True)
    error = upstream_error("openai-chat", {"error": {"message": "slow down", "type": "None", "param": "None",
                                                     "code": "429"}})
    assert fields(error) == ("RateLimitError", 429, None, "429", "slow down", True)
    error = upstream_error("anthropic", {"error": {"message": "bad", "type": None, "code": "400"}}, status=500)
    assert fields(error) == ("UpstreamError", 400, None, "400", "bad", False)
    # a code that is no status: the HTTP status decides, the code stays the code
    error = upstream_error("openai-chat", {"error": {"message": "m", "type": None, "code": "model_overloaded"}},
                           status=503)
    assert fields(error) == ("ServerError", 503, "model_overloaded", "model_overloaded", "m", True)
    error = upstream_error("openai-chat", {"error": {"message": "m", "type": None, "code": "12"}}, status=502)
    assert fields(error) == ("ServerError", 502, "12", "12", "m", True)
    # a named type keeps its own meaning: the code is only the code
    error = upstream_error("openai-chat", {"error": {"message": "m", "type": "invalid_request_error", "code": "404"}},
                           status=400)
    assert fields(error) == ("UpstreamError", 400, "invalid_request_error", "404", "m", False)
    # Google's numeric code beside its status name is unchanged
    error = upstream_error("gemini", {"error": {"code": 429, "message": "q", "status": "RESOURCE_EXHAUSTED"}},
                           status=429)
    assert fields(error) == ("RateLimitError", 429, "RESOURCE_EXHAUSTED", "429", "q", True)


@within(10)
def test_a_gateway_500_with_a_string_code_in_the_stream_is_retried(server):
    body = b'data: {"error": {"message": "litellm.InternalServerError: upstream died", "type": null, ' \
           b'"param": null, "code": "500"}}\n\n'
    server.push([status(200, SSE), send(body)])
    server.push([status(200, SSE), send(chat_stream("ok"))])
    assert text_of(list(make(server).streaming_response([USER]))) == "ok"
    assert len(server.requests) == 2


@within(10)
@pytest.mark.parametrize("framing", ["length", "chunked"])
def test_an_error_body_framed_as_an_event_stream_is_read_for_its_error(server, framing):
    """A gateway answering a streamed request that failed at once: a 4xx/5xx whose body is SSE."""
    body = (b'event: error\r\ndata: {"error": {"message": "Invalid model name passed in model=test-model",'
            b' "type": "invalid_request_error", "param": "model", "code": "400"}}\r\n\r\ndata: [DONE]\r\n\r\n')
    server.push([status(400, SSE, framing), send(body)])
    with pytest.raises(UpstreamError) as info:
        list(make(server).streaming_response([USER]))
    assert fields(info.value) == ("UpstreamError", 400, "invalid_request_error", "400",
                                  "Invalid model name passed in model=test-model", False)
    assert len(server.requests) == 1
    # Anthropic-shaped, behind an Anthropic-compatible gateway
    body = b'event: error\ndata: {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}\n\n'
    for _ in range(3):
        server.push([status(529, SSE, framing), send(body)])
    with pytest.raises(ServerError) as info:
        list(make(server, "anthropic", "").streaming_response([USER]))
    assert fields(info.value) == ("ServerError", 529, "overloaded_error", None, "Overloaded", True)
    assert len(server.requests) == 1 + 3


@within(10)
def test_an_event_stream_error_body_without_an_error_object_keeps_its_text(server):
    server.push([status(502, SSE, "length"), send(b"data: upstream connect error\n\n")])
    server.push([status(502, SSE, "length"), send(b"data: upstream connect error\n\n")])
    server.push([status(502, SSE, "length"), send(b"data: upstream connect error\n\n")])
    with pytest.raises(ServerError) as info:
        list(make(server).streaming_response([USER]))
    assert info.value.message == "data: upstream connect error"


# -- Retry-After spellings ----------------------------------------------------------------------------

@within(10)
@pytest.mark.parametrize("header, value", [
    ("llm_provider-retry-after", "0.3"),          # LiteLLM passes the provider's header on, prefixed
    ("llm_provider-retry-after-ms", "300"),
    ("x-ms-retry-after-ms", "300"),                # Azure OpenAI
    ("retry-after-ms", "300"),
    ("Retry-After", "0.3"),
])
def test_retry_after_spellings_are_honoured(server, header, value):
    server.push([status(429, dict(JSON, **{header: value}), "length"),
                 send(json.dumps({"error": {"message": "rate limited", "type": None, "code": "429"}}).encode())])
    server.push([status(200, SSE), send(chat_stream("ok"))])
    client = make(server)
    assert text_of(list(client.streaming_response([USER]))) == "ok"
    waited = server.requests[1].at - server.requests[0].at
    assert 0.28 < waited < 1.5, waited


def test_the_provider_request_id_a_gateway_passed_on_is_kept():
    from agenthub.answers import request_id as _request_id, retry_after as _retry_after

    assert _request_id({"llm_provider-request-id": "req_abc"}) == "req_abc"
    assert _request_id({"x-request-id": "own", "llm_provider-request-id": "req_abc"}) == "own"
    assert _retry_after({"llm_provider-retry-after": "7", "retry-after": "3"}) == 3.0  # the gateway's own first
    assert _retry_after({"llm_provider-retry-after": " 7 "}) == 7.0
    assert _retry_after({"x-retry-after": "nonsense"}) is None


@within(10)
def test_a_gateways_own_rate_limit_on_messages_without_a_header_backs_off_and_retries(server):
    """LiteLLM's own limiter (max parallel requests, RPM) on ``/v1/messages``: a 429 with its error
    object and no Retry-After.  It is a RateLimitError retried with jittered backoff, then raised."""
    body = json.dumps({"error": {"message": "Max parallel request limit reached. Hit limit for api_key: ...",
                                 "type": "None", "param": "None", "code": "429"}}).encode()
    for _ in range(3):
        server.push([status(429, JSON, "length"), send(body)])
    with pytest.raises(RateLimitError) as info:
        list(make(server, "anthropic", "").streaming_response([USER]))
    assert fields(info.value) == ("RateLimitError", 429, None, "429",
                                  "Max parallel request limit reached. Hit limit for api_key: ...", True)
    assert info.value.retry_after is None
    assert [r.path for r in server.requests] == ["/v1/messages"] * 3


# -- whole JSON answers where a stream was asked for (a gateway that ignores stream: true) ------------

def events_of(data):
    return b"".join(b"data: " + json.dumps(d).encode() + b"\n\n" for d in data)


def stream_items(client_type, body):
    """The items (and stop event) the same answer gives when it streams, through the same client."""
    with FaultServer() as srv:
        srv.push([status(200, SSE), send(body)])
        events = list(make(srv, *ROUTES[client_type]).streaming_response([USER]))
    return strip(events)


def strip(events):
    return [{k: v for k, v in e.items() if k != "created_at"} for e in events]


ROUTES = {"anthropic": ("anthropic", ""), "openai-responses": ("openai-responses", "/v1"),
          "openai-chat": ("openai-chat", "/v1"), "gemini": ("gemini", "")}

ANTHROPIC_MESSAGE = {
    "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-6",
    "content": [
        {"type": "thinking", "thinking": "Weather tool.", "signature": "c2lnbmVk"},
        {"type": "text", "text": "Checking."},
        {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}},
    ],
    "stop_reason": "tool_use", "stop_sequence": None,
    "usage": {"input_tokens": 12, "cache_read_input_tokens": 4, "output_tokens": 30},
}
ANTHROPIC_STREAM = events_of([
    {"type": "message_start", "message": dict(ANTHROPIC_MESSAGE, content=[], stop_reason=None,
                                              usage={"input_tokens": 12, "cache_read_input_tokens": 4,
                                                     "output_tokens": 1})},
    {"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": "", "signature": ""}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "Weather tool."}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "c2lnbmVk"}},
    {"type": "content_block_stop", "index": 0},
    {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}},
    {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "Checking."}},
    {"type": "content_block_stop", "index": 1},
    {"type": "content_block_start", "index": 2, "content_block": {"type": "tool_use", "id": "toolu_1",
                                                                  "name": "get_weather", "input": {}}},
    {"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta",
                                                          "partial_json": '{"city":"Paris"}'}},
    {"type": "content_block_stop", "index": 2},
    {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 30}},
    {"type": "message_stop"},
])
RESPONSE = {
    "id": "resp_1", "object": "response", "status": "completed",
    "output": [
        {"id": "rs_1", "type": "reasoning", "encrypted_content": "ZW5j",
         "summary": [{"type": "summary_text", "text": "Weather tool."}]},
        {"id": "msg_1", "type": "message", "role": "assistant",
         "content": [{"type": "output_text", "text": "Checking.", "annotations": []}]},
        {"id": "fc_1", "type": "function_call", "call_id": "call_1", "name": "get_weather",
         "arguments": '{"city":"Paris"}'},
    ],
    "usage": {"input_tokens": 16, "input_tokens_details": {"cached_tokens": 4}, "output_tokens": 30,
              "output_tokens_details": {"reasoning_tokens": 20}, "total_tokens": 46},
}
RESPONSE_STREAM = events_of([
    {"type": "response.created", "response": dict(RESPONSE, status="in_progress", output=[])},
    {"type": "response.output_item.added", "output_index": 0, "item": {"id": "rs_1", "type": "reasoning",
                                                                        "summary": []}},
    {"type": "response.reasoning_summary_text.delta", "output_index": 0, "summary_index": 0,
     "delta": "Weather tool."},
    {"type": "response.output_item.done", "output_index": 0, "item": RESPONSE["output"][0]},
    {"type": "response.output_text.delta", "output_index": 1, "content_index": 0, "delta": "Checking."},
    {"type": "response.output_item.done", "output_index": 1, "item": RESPONSE["output"][1]},
    {"type": "response.output_item.done", "output_index": 2, "item": RESPONSE["output"][2]},
    {"type": "response.completed", "response": RESPONSE},
])
COMPLETION = {
    "id": "c1", "object": "chat.completion", "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": "Checking.", "reasoning_content": "Weather tool.",
        "tool_calls": [{"id": "call_1", "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'}}]}}],
    "usage": {"prompt_tokens": 16, "completion_tokens": 30, "total_tokens": 46},
}
COMPLETION_STREAM = events_of([
    {"id": "c1", "object": "chat.completion.chunk", "choices": [{"index": 0, "finish_reason": None, "delta": {
        "role": "assistant", "reasoning_content": "Weather tool."}}]},
    {"id": "c1", "object": "chat.completion.chunk", "choices": [{"index": 0, "finish_reason": None, "delta": {
        "content": "Checking."}}]},
    {"id": "c1", "object": "chat.completion.chunk", "choices": [{"index": 0, "finish_reason": None, "delta": {
        "tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'}}]}}]},
    {"id": "c1", "object": "chat.completion.chunk", "choices": [{"index": 0, "finish_reason": "tool_calls",
                                                                 "delta": {}}],
     "usage": {"prompt_tokens": 16, "completion_tokens": 30, "total_tokens": 46}},
]) + b"data: [DONE]\n\n"
GEMINI = {
    "candidates": [{"index": 0, "finishReason": "STOP", "content": {"role": "model", "parts": [
        {"text": "Weather tool.", "thought": True},
        {"text": "Checking."},
        {"functionCall": {"id": "fc_1", "name": "get_weather", "args": {"city": "Paris"}}, "thoughtSignature": "c2ln"}]}}],
    "usageMetadata": {"promptTokenCount": 16, "candidatesTokenCount": 10, "thoughtsTokenCount": 20,
                      "totalTokenCount": 46},
}
GEMINI_STREAM = events_of([GEMINI])


@within(20)
@pytest.mark.parametrize("client_type, document, stream", [
    ("anthropic", ANTHROPIC_MESSAGE, ANTHROPIC_STREAM),
    ("openai-responses", RESPONSE, RESPONSE_STREAM),
    ("openai-chat", COMPLETION, COMPLETION_STREAM),
    ("gemini", GEMINI, GEMINI_STREAM),
    ("gemini", [GEMINI], GEMINI_STREAM),   # streamGenerateContent without alt=sse: a JSON array of chunks
], ids=["anthropic", "openai-responses", "openai-chat", "gemini", "gemini-array"])
def test_a_whole_json_answer_gives_the_streams_events_and_is_never_retried(server, client_type, document, stream):
    """A gateway that ignores ``stream: true`` answers 200 ``application/json`` with the whole answer:
    the same events as the stream, from one request (it is complete: never retried, never billed twice)."""
    server.push([status(200, JSON, "length"), send(json.dumps(document).encode())])
    events = list(make(server, *ROUTES[client_type]).streaming_response([USER]))
    assert len(server.requests) == 1
    assert strip(events) == stream_items(client_type, stream)
    assert events[-1]["finish_reason"] == "tool_call"
    kinds = [e["content_items"][0]["type"] for e in events[1:-1]]
    assert "tool_call" in kinds and "text" in kinds and "thinking" in kinds


@within(20)
@pytest.mark.parametrize("client_type, document, finish", [
    ("anthropic", dict(ANTHROPIC_MESSAGE, content=[{"type": "text", "text": "Hi."}], stop_reason=None), "unknown"),
    ("openai-responses", {"object": "response", "status": "incomplete",
                          "incomplete_details": {"reason": "max_output_tokens"},
                          "output": [{"type": "message", "role": "assistant",
                                      "content": [{"type": "output_text", "text": "Hi."}]}]}, "length"),
    ("openai-chat", {"object": "chat.completion", "choices": [{"index": 0, "message": {"role": "assistant",
                                                                                      "content": "Hi."}}]}, "unknown"),
    ("gemini", {"candidates": [{"content": {"role": "model", "parts": [{"text": "Hi."}]}}]}, "unknown"),
])
def test_a_whole_answer_that_never_says_why_it_finished_is_still_complete(server, client_type, document, finish):
    server.push([status(200, JSON, "length"), send(json.dumps(document).encode())])
    events = list(make(server, *ROUTES[client_type]).streaming_response([USER]))
    assert [e["content_items"] for e in events[1:-1]] == [[{"type": "text", "text": "Hi."}]]
    assert events[-1]["finish_reason"] == finish
    assert len(server.requests) == 1


@within(20)
@pytest.mark.parametrize("client_type, document", [
    ("anthropic", {"id": "msg_x", "object": "something"}),
    ("openai-responses", {"id": "x", "status": "queued"}),
    ("openai-chat", {"id": "x", "choices": []}),
    ("gemini", {"modelVersion": "gemini-x"}),
])
def test_a_json_document_holding_no_answer_is_not_retried(server, client_type, document):
    server.push([status(200, JSON, "length"), send(json.dumps(document).encode())])
    with pytest.raises(StreamProtocolError) as info:
        list(make(server, *ROUTES[client_type]).streaming_response([USER]))
    assert "holds no complete answer" in str(info.value) and info.value.retryable is False
    assert len(server.requests) == 1


#: a whole document still running, per wire: (client type, base URL path, its kind, its id, the document, partial
#: output it holds, where it is retrieved)
UNFINISHED = {
    "openai-responses": ("openai-responses", "/v1", "response", "resp_9",
                         {"object": "response", "background": True, "output": []},
                         {"output": [{"type": "message", "role": "assistant",
                                      "content": [{"type": "output_text", "text": "Hal"}]}]}, "/responses/"),
    "gemini-interactions": ("gemini-interactions", "", "interaction", "v1_9", {"steps": []},
                            {"steps": [{"type": "model_output", "content": [{"type": "text", "text": "Hal"}]}]},
                            "/interactions/"),
}


@within(20)
@pytest.mark.parametrize("state", ["in_progress", "queued"])
@pytest.mark.parametrize("partial", [False, True])
@pytest.mark.parametrize("wire", sorted(UNFINISHED))
def test_a_whole_document_that_has_not_finished_says_so_with_its_status_and_id(server, wire, partial, state):
    """A Response object or an Interaction still running (a server that ignored stream, or answered a background
    request at once) is no answer, not an empty one that "finished", nor its partial text as a whole one: a
    StreamProtocolError naming the status and the id to retrieve it by, not sent again (before, an Interaction's
    partial text came back as a whole turn with finish_reason 'unknown', or an EmptyResponseError)."""
    client_type, path, kind, rid, document, output, where = UNFINISHED[wire]
    document = dict(document, id=rid, status=state, **(output if partial else {}))
    server.push([status(200, JSON, "length"), send(json.dumps(document).encode())])
    with pytest.raises(StreamProtocolError) as info:
        list(make(server, client_type, path, api_key="test-key").streaming_response([USER], {"background": True}))
    assert str(info.value) == (
        "{}: the server answered with a whole {} that has not finished (status {!r}, id {!r}): it did not stream it "
        "(a server that ignored stream: true, or one that answers a background request at once), so there is no "
        "answer yet; it is not sent again: retrieve it by its id (GET {}{}) once it has finished, or cancel "
        "it".format(client_type, kind, state, rid, where, rid))
    assert info.value._fields == {"client": client_type, "retryable": False, "response_status": state,
                                  "response_id": rid}
    assert len(server.requests) == 1


@within(20)
def test_an_anthropic_error_document_with_200_is_the_error_it_names(server):
    server.push([status(200, JSON, "length"),
                 send(b'{"type": "error", "error": {"type": "invalid_request_error", "message": "bad"}}')])
    with pytest.raises(UpstreamError) as info:
        list(make(server, "anthropic", "").streaming_response([USER]))
    assert fields(info.value) == ("UpstreamError", 400, "invalid_request_error", None, "bad", False)
    assert len(server.requests) == 1
