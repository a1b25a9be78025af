"""A tool_result must answer a tool_call of an earlier assistant message, and (on the wires that refuse a call left
unanswered: Anthropic, Bedrock, Responses, Gemini, and the Chat Completions hosts known to refuse it) every call must
be answered before the next assistant message: a ConfigError before anything is sent, as Gemini always refused an
unknown id (it needs the call's name)."""

import pytest

from agenthub import AutoLLMClient, ConfigError

from faultserver import FaultServer

ASK = {"role": "user", "content_items": [{"type": "text", "text": "weather?"}]}
CALL = {"role": "assistant", "content_items": [
    {"type": "tool_call", "name": "get_weather", "arguments": {"city": "Paris"}, "tool_call_id": "c1"}]}
ANSWER = {"role": "user", "content_items": [{"type": "tool_result", "tool_call_id": "c1", "text": "18 C"}]}
STRAY = {"role": "user", "content_items": [{"type": "tool_result", "tool_call_id": "zz9", "text": "18 C"}]}
LATER = {"role": "assistant", "content_items": [{"type": "text", "text": "It is 18 C."}]}
AGAIN = {"role": "user", "content_items": [{"type": "text", "text": "and tomorrow?"}]}
TOOLS = {"tools": [{"name": "get_weather", "description": "Weather.", "parameters": {"type": "object"}}]}

TYPES = ["openai-chat", "openai-responses", "anthropic", "gemini", "bedrock"]


def _client(client_type, server):
    if client_type == "bedrock":
        return AutoLLMClient("meta.llama3-3-70b-instruct-v1:0", client_type="bedrock", base_url=server.url,
                             api_key="ABSKbedrock-api-key-0003",
                             max_retries=0)
    return AutoLLMClient("m", client_type=client_type, base_url=server.url, api_key="sk-test-0001", max_retries=0)


@pytest.mark.parametrize("client_type", TYPES)
def test_a_result_for_an_unknown_call_id_is_refused_before_sending(client_type):
    with FaultServer() as server:
        with pytest.raises(ConfigError) as caught:
            list(_client(client_type, server).streaming_response([ASK, CALL, ANSWER, LATER, STRAY], TOOLS))
        assert server.requests == []
    assert "messages[4]: tool_result 'zz9' answers no tool_call of an earlier assistant message" in str(caught.value)


#: Gemini: "the number of function response parts is equal to the number of function call parts of the function
#: call turn" (a 400); the Chat Completions hosts that refuse ("An assistant message with 'tool_calls' must be
#: followed by tool messages responding to each 'tool_call_id'") are reached by their row (here DeepSeek's and
#: Moonshot's, named with client_type at the local server)
#: The Interactions API (gemini-interactions) is held to generateContent's rule: its interaction whose calls wait ends
#: requires_action, answered by one function_result step per call; the same models read the turns
REFUSING = ["openai-responses", "anthropic", "bedrock", "gemini", "gemini-interactions", "deepseek", "moonshot"]


@pytest.mark.parametrize("client_type", REFUSING)
@pytest.mark.parametrize("later", ["a user text", "another assistant turn"])
def test_a_call_left_unanswered_before_the_next_turn_is_refused_before_sending(client_type, later):
    messages = [ASK, CALL, AGAIN] if later == "a user text" else [ASK, CALL, LATER, AGAIN]
    with FaultServer() as server:
        with pytest.raises(ConfigError) as caught:
            list(_client(client_type, server).streaming_response(messages, TOOLS))
        assert server.requests == []
    assert str(caught.value).endswith(
        "messages[1]: tool_call 'c1' ('get_weather') has no tool_result in the user messages after it ({} refuses "
        "a call left unanswered); answer it, or leave the call out".format(
            "openai-chat" if client_type in ("deepseek", "moonshot") else client_type))


@pytest.mark.parametrize("client_type", ["gemini", "gemini-interactions"])
def test_of_two_calls_one_left_unanswered_is_refused_on_gemini(client_type):
    both = {"role": "assistant", "content_items": CALL["content_items"] + [
        {"type": "tool_call", "name": "get_weather", "arguments": {"city": "Rome"}, "tool_call_id": "c2"}]}
    with FaultServer() as server:
        with pytest.raises(ConfigError) as caught:
            list(_client(client_type, server).streaming_response([ASK, both, ANSWER, LATER, AGAIN], TOOLS))
        assert server.requests == []
    assert "messages[1]: tool_call 'c2' ('get_weather') has no tool_result" in str(caught.value)


def test_a_chat_completions_host_not_known_to_refuse_is_sent_the_unanswered_call():
    """A local server (vLLM, Ollama, ...) may take such a history: it is sent as it is, call and all."""
    with FaultServer() as server:
        try:
            list(_client("openai-chat", server).streaming_response([ASK, CALL, AGAIN], TOOLS))
        except ConfigError:
            raise
        except Exception:
            pass
        (sent,) = server.requests
    assert [message["role"] for message in sent.json()["messages"]] == ["user", "assistant", "user"]


@pytest.mark.parametrize("model,base_url", [("gpt-5.5", "https://api.openai.com/v1"),
                                            ("deepseek-v4-flash", "https://api.deepseek.com"),
                                            ("qwen3-max", "https://dashscope-intl.aliyuncs.com/compatible-mode/v1"),
                                            ("kimi-k2.6", "https://api.moonshot.ai/v1")])
def test_the_chat_completions_hosts_known_to_refuse_check_it(model, base_url):
    client = AutoLLMClient(model, client_type="openai-chat", base_url=base_url, api_key="sk-test-0001")
    with pytest.raises(ConfigError) as caught:
        client.plan([ASK, CALL, AGAIN], TOOLS)
    assert "tool_call 'c1' ('get_weather') has no tool_result in the user messages after it" in str(caught.value)


@pytest.mark.parametrize("client_type", TYPES)
def test_answered_calls_and_a_last_unanswered_call_are_sent(client_type):
    with FaultServer() as server:
        client = _client(client_type, server)
        for messages in ([ASK, CALL, ANSWER, LATER, AGAIN], [ASK, CALL]):
            try:
                list(client.streaming_response(messages, TOOLS))
            except ConfigError:
                raise
            except Exception:  # (the fake answers in Chat Completions' words: only the sending matters here)
                pass
        assert len(server.requests) == 2


def test_a_responses_mcp_approval_answer_is_not_taken_for_a_stray_result():
    request = {"type": "mcp_approval_request", "id": "mcpr_1", "name": "search", "arguments": "{}",
               "server_label": "docs"}
    asked = {"role": "assistant", "content_items": [{"type": "text", "text": "",
                                                     "fidelity": {"server_item": request}}]}
    answer = {"role": "user", "content_items": [{"type": "tool_result", "tool_call_id": "mcpr_1", "text": "approved",
                                                 "fidelity": {"server_item": {"type": "mcp_approval_response",
                                                                              "approval_request_id": "mcpr_1",
                                                                              "approve": True}}}]}
    with FaultServer() as server:
        try:
            list(_client("openai-responses", server).streaming_response([ASK, asked, answer]))
        except ConfigError:
            raise
        except Exception:
            pass
        (sent,) = server.requests
    assert sent.json()["input"][-1] == {"type": "mcp_approval_response", "approval_request_id": "mcpr_1",
                                        "approve": True}


def test_a_continuation_of_server_side_state_is_not_checked():
    """With extra_body's previous_response_id the calls are the server's, not in the messages sent."""
    with FaultServer() as server:
        try:
            list(_client("openai-responses", server).streaming_response(
                [STRAY], {"extra_body": {"previous_response_id": "resp_1"}}))
        except ConfigError:
            raise
        except Exception:
            pass
        (sent,) = server.requests
    assert sent.json()["input"] == [{"type": "function_call_output", "call_id": "zz9", "output": "18 C"}]
