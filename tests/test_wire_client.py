"""Every recording in ../shared/wire through the whole client: the recorded body served by a local HTTP server,
read by ``AutoLLMClient.streaming_response`` with the protocol's client_type, must give what its sidecar says
(text, thinking, tool calls, finish_reason, usage, the in-stream error and its class), as a stream that keeps
the grammar.  The per-protocol tests (test_openai_chat.py, test_anthropic.py, ...) drive the parsers on the
same bytes; this one checks nothing between the socket and the caller changes the answer."""

import pytest

from agenthub import AutoLLMClient, check_stream, collect
from agenthub.errors import (
    RateLimitError,
    ServerError,
    ToolCallArgumentParseError,
    UpstreamError,
)
from conftest import summarize, wire_params
from sse_server import Answer, SSEServer
from test_anthropic import expected_usage as anthropic_usage
from test_openai_chat import expected_usage as chat_usage
from test_openai_responses import expected_usage as responses_usage

NONE = {"cached_tokens": None, "prompt_tokens": None, "thoughts_tokens": None, "response_tokens": None}


def gemini_usage(raw):
    cached = raw.get("cached")
    return {"cached_tokens": cached, "prompt_tokens": raw["input"] - (cached or 0),
            "thoughts_tokens": raw.get("reasoning"), "response_tokens": raw["output"]}


#: protocol folder -> (client_type, model, the base_url's path after the server's root, usage mapping)
PROTOCOLS = {
    "openai_chat": ("openai-chat", "gpt-4o", "/v1", chat_usage),
    "openai_responses": ("openai-responses", "gpt-4o", "/v1", responses_usage),
    "anthropic": ("anthropic", "claude-sonnet-4-5", "", anthropic_usage),
    "gemini": ("gemini", "gemini-2.5-pro", "", gemini_usage),
}

#: the class each recorded in-stream error is raised as, and whether it is retryable (the API's tree: Anthropic's
#: overload is a 529, a ServerError; a spent quota is OpenAI's 429, a RateLimitError never retried, as
#: docs/reliability.md says; a request the server found invalid stays a plain UpstreamError)
ERROR_CLASSES = {
    "anthropic/docs_error_event": (ServerError, True),
    "openai_chat/groq_error_event_after_reasoning": (UpstreamError, False),
    "openai_responses/error_event_then_failed": (RateLimitError, False),
}

CASES = [pytest.param(protocol, *param.values, id=protocol + "/" + (param.id or "absent"), marks=param.marks)
         for protocol in PROTOCOLS for param in wire_params(protocol)]


@pytest.fixture(scope="module")
def server():
    with SSEServer() as running:
        yield running


def stream(server, protocol, data):
    client_type, model, path, _ = PROTOCOLS[protocol]
    server.answers[:] = [Answer([data])]
    client = AutoLLMClient(model, api_key="test-key", base_url=server.url + path + "/", client_type=client_type,
                           max_retries=0)
    return list(client.streaming_response(messages=[{"role": "user", "content_items": [{"type": "text",
                                                                                         "text": "hi"}]}]))


@pytest.mark.parametrize("protocol,name,data,sidecar", CASES)
def test_recorded_stream_through_the_client_matches_its_sidecar(server, protocol, name, data, sidecar):
    expect = sidecar["expect"]
    if expect["error"]:
        with pytest.raises(UpstreamError) as info:
            stream(server, protocol, data)
        error = info.value
        assert (type(error), error.retryable) == ERROR_CLASSES[protocol + "/" + name]
        assert expect["error"].endswith(": " + error.message)
        raw = sidecar["expect_extras"]["error_raw"]
        assert error.message == raw["message"]
        assert (error.code, error.status) == (raw.get("code"), raw.get("status_code", error.status))
        assert error.client == PROTOCOLS[protocol][0]
        return
    if any(call["arguments"] is None for call in expect["tool_calls"]):
        with pytest.raises(ToolCallArgumentParseError):
            stream(server, protocol, data)
        return
    events = stream(server, protocol, data)
    check_stream(events)
    got = summarize(events)
    assert got["text"] == expect["text"]
    assert got["thinking"] == expect["thinking"]
    assert got["finish_reason"] == expect["finish_reason"]
    assert got["usage"] == (NONE if expect["usage"] is None else PROTOCOLS[protocol][3](expect["usage"]))
    assert [(c["name"], c["arguments"]) for c in got["tool_calls"]] == [
        (c["name"], c["arguments"]) for c in expect["tool_calls"]]
    for call, want in zip(got["tool_calls"], expect["tool_calls"]):
        assert call["id"] == want["id"] if want["id"] is not None else call["id"]
    assert len({c["id"] for c in got["tool_calls"]}) == len(got["tool_calls"])
    message = collect(events)
    assert (message["finish_reason"], message["usage_metadata"]) == (got["finish_reason"], got["usage"])
    assert [i["tool_call_id"] for i in message["content_items"] if i["type"] == "tool_call"] == [
        c["id"] for c in got["tool_calls"]]
