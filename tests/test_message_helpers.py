"""agenthub.user and agenthub.text (issue 29 C3): a message built and read without narrowing the item union."""

import pytest

import agenthub
from agenthub import AutoLLMClient, ConfigError, collect, text, user
from sse_server import Answer, SSEServer


def test_user_builds_a_uni_message_from_strings_and_items():
    assert user("hi") == {"role": "user", "content_items": [{"type": "text", "text": "hi"}]}
    image = {"type": "image_url", "image_url": "https://example.com/a.png"}
    assert user("Describe", image, "briefly") == {"role": "user", "content_items": [
        {"type": "text", "text": "Describe"}, image, {"type": "text", "text": "briefly"}]}
    result = {"type": "tool_result", "tool_call_id": "c1", "text": "18 °C"}
    assert user(result)["content_items"] == [result]


@pytest.mark.parametrize("parts, words", [((), "at least one part"), ((3,), "part 0 is a int"),
                                          (("a", {"text": "no type"}), "part 1 is a dict")])
def test_user_refuses_what_is_not_a_part(parts, words):
    with pytest.raises(ConfigError, match=words):
        user(*parts)


def test_text_reads_messages_and_events():
    message = {"role": "assistant", "content_items": [
        {"type": "thinking", "thinking": "hmm"}, {"type": "text", "text": "Nile, "},
        {"type": "tool_call", "tool_call_id": "c", "name": "f", "arguments": {}}, {"type": "text", "text": "Amazon"}]}
    assert text(message) == "Nile, Amazon"
    assert text(user("hi")) == "hi"
    assert text({"role": "assistant", "event_type": "stop", "content_items": []}) == ""
    with pytest.raises(ConfigError, match="a message or an event"):
        text("hi")  # type: ignore[arg-type]


def test_user_and_text_around_a_real_call():
    chunks = [b'data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"Nile"}}]}\n\n',
              b'data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},'
              b'"finish_reason":"stop"}]}\n\n', b"data: [DONE]\n\n"]
    with SSEServer() as server:
        server.answers.append(Answer(chunks))
        client = AutoLLMClient("m", client_type="openai-chat", base_url=server.url + "/v1", api_key="sk-test")
        events = list(client.streaming_response([user("Name a river.")]))
    assert "".join(text(event) for event in events) == "Nile" == text(collect(events))
    assert server.requests[0]["body"]["messages"] == [{"role": "user", "content": "Name a river."}]
    assert agenthub.user is user and agenthub.text is text
