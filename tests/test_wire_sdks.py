"""Issue 24 B2-B5: what agenthub sends, against the official SDKs' request builders (openai, anthropic),
each SDK driving the same local server (sse_server.SSEServer, 127.0.0.1) as agenthub, so the two bodies
are compared field by field.  No config key the caller set is dropped in silence."""

import json

import pytest

from agenthub import AutoLLMClient, UnsupportedParameterError
from agenthub.providers import anthropic as anthropic_wire
from agenthub.providers._common import Endpoint
from agenthub.validate import check_config
from faultserver import chat_stream
from sse_server import Answer, SSEServer

USER = [{"role": "user", "content_items": [{"type": "text", "text": "hi"}]}]
KEY = "sk-test-0123456789"


def _chat_answer():
    return Answer([chat_stream("ok")])


def _agenthub_body(client_type, model, config, **kwargs):
    with SSEServer() as server:
        server.answers.append(_chat_answer())
        base_url = server.url + "/v1" if client_type == "openai-chat" else server.url  # (127.0.0.1 only)
        client = AutoLLMClient(model, client_type=client_type, base_url=base_url, api_key=KEY, **kwargs)
        list(client.streaming_response(USER, config))
        return server.requests[0]


def _openai_sdk_body(**create):
    openai = pytest.importorskip("openai")
    with SSEServer() as server:
        server.answers.append(_chat_answer())
        client = openai.OpenAI(base_url=server.url + "/v1", api_key=KEY, max_retries=0)
        for _ in client.chat.completions.create(stream=True, **create):
            pass
        return server.requests[0]["body"]


# -- B2: thinking_level on a generic Chat endpoint and on Azure Chat is reasoning_effort --------------------


@pytest.mark.parametrize("level", ["none", "low", "medium", "high", "xhigh", "max"])
def test_thinking_level_on_a_generic_chat_endpoint_is_the_openai_sdks_reasoning_effort(level):
    sent = _agenthub_body("openai-chat", "my-model", {"thinking_level": level})
    sdk = _openai_sdk_body(model="my-model", messages=[{"role": "user", "content": "hi"}], reasoning_effort=level,
                           stream_options={"include_usage": True})
    assert sent["body"]["reasoning_effort"] == sdk["reasoning_effort"] == level
    assert sent["body"] == sdk


def test_thinking_level_on_azure_chat_is_reasoning_effort():
    sent = _agenthub_body("azure", "my-gpt5", {"thinking_level": "high"})
    assert sent["body"]["reasoning_effort"] == "high"


def test_thinking_summary_false_cannot_be_sent_over_chat_completions():
    with SSEServer() as server:
        client = AutoLLMClient("my-model", client_type="openai-chat", base_url=server.url + "/v1", api_key=KEY)
        with pytest.raises(UnsupportedParameterError) as info:
            list(client.streaming_response(USER, {"thinking_summary": False}))
        assert info.value.parameter == "thinking_summary" and server.requests == []


def _anthropic_sdk_body(**create):
    anthropic = pytest.importorskip("anthropic")
    done = [b'event: message_start\ndata: {"type":"message_start","message":{"id":"m","type":"message","role":'
            b'"assistant","content":[],"model":"x","stop_reason":null,"usage":{"input_tokens":1,"output_tokens":1}}}\n\n',
            b'event: message_stop\ndata: {"type":"message_stop"}\n\n']
    with SSEServer() as server:
        server.answers.append(Answer(done))
        client = anthropic.Anthropic(base_url=server.url, api_key=KEY, max_retries=0)
        with client.messages.stream(**create) as stream:
            for _ in stream:
                pass
        return server.requests[0]["body"]


def test_thinking_summary_false_on_budget_thinking_is_display_omitted_as_the_anthropic_api_takes_it():
    endpoint = Endpoint("anthropic", "https://api.anthropic.com", KEY)
    config = check_config({"thinking_level": "medium", "thinking_summary": False, "max_tokens": 16000})
    ours = anthropic_wire.build_request(endpoint, "claude-sonnet-4-5", USER, config).body
    assert ours["thinking"] == {"type": "enabled", "budget_tokens": 4096, "display": "omitted"}
    sdk = _anthropic_sdk_body(model="claude-sonnet-4-5", max_tokens=16000,
                              messages=[{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
                              thinking={"type": "enabled", "budget_tokens": 4096, "display": "omitted"})
    assert ours["thinking"] == sdk["thinking"]
    # True is the default display of budget thinking (summarized): nothing to send
    config = check_config({"thinking_level": "medium", "thinking_summary": True, "max_tokens": 16000})
    assert anthropic_wire.build_request(endpoint, "claude-sonnet-4-5", USER, config).body["thinking"] == {
        "type": "enabled", "budget_tokens": 4096}


# -- B3: Azure Responses asks for the encrypted reasoning only of a deployment that reasons -------------------


def _azure_responses_body(model, config, quirks=None):
    from agenthub.providers import openai_responses

    endpoint = Endpoint("azure-responses", "https://res.openai.azure.com", None, None, quirks or {})
    return openai_responses.build_request(endpoint, model, USER, check_config(config)).body


def test_a_deployment_of_unknown_name_is_not_asked_for_encrypted_reasoning_unless_reasoning_is_requested():
    assert "include" not in _azure_responses_body("my-deployment", {})
    assert "include" not in _azure_responses_body("my-deployment", {"thinking_level": "none"})
    assert _azure_responses_body("my-deployment", {"thinking_level": "high"})["include"] == [
        "reasoning.encrypted_content"]
    assert _azure_responses_body("my-deployment", {"thinking_summary": True})["include"] == [
        "reasoning.encrypted_content"]
    # a row that says the deployment reasons, and a deployment named after a reasoning model
    assert _azure_responses_body("my-deployment", {}, {"reasoning": True})["include"] == [
        "reasoning.encrypted_content"]
    assert "include" not in _azure_responses_body("my-deployment", {"thinking_level": "high"}, {"reasoning": False})
    assert _azure_responses_body("gpt-5-mini", {})["include"] == ["reasoning.encrypted_content"]
    assert "include" not in _azure_responses_body("gpt-4.1", {})


def test_azure_responses_end_to_end_sends_no_include_to_a_plain_deployment():
    done = [b'data: {"type":"response.output_text.delta","output_index":0,"delta":"ok"}\n\n',
            b'data: {"type":"response.completed","response":{"status":"completed","output":[]}}\n\n']
    with SSEServer() as server:
        server.answers.append(Answer(done))
        client = AutoLLMClient("chat-deployment", client_type="azure-responses", base_url=server.url, api_key=KEY)
        list(client.streaming_response(USER))
        assert "include" not in server.requests[0]["body"]


# -- B4: "strict": true on a tool, where each wire has it ----------------------------------------------------

WEATHER = {"name": "get_weather", "description": "Weather.",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"],
                          "additionalProperties": False}}


def _plan(module, client_type, base_url, model, config):
    endpoint = Endpoint(client_type, base_url, KEY)
    return module.build_request(endpoint, model, USER, check_config(config)).body


def test_a_strict_tool_over_chat_is_function_strict_as_the_openai_sdk_sends_it():
    from agenthub.providers import openai_chat

    for strict in (True, False):
        ours = _plan(openai_chat, "openai-chat", "http://127.0.0.1:9/v1", "m",
                     {"tools": [dict(WEATHER, strict=strict)]})["tools"]
        sdk = _openai_sdk_body(model="m", messages=[{"role": "user", "content": "hi"}], tools=[
            {"type": "function", "function": {"name": "get_weather", "description": "Weather.",
                                              "parameters": WEATHER["parameters"], "strict": strict}}])["tools"]
        assert ours == sdk and ours[0]["function"]["strict"] is strict
    # not asked: no field (the server's default)
    assert "strict" not in _plan(openai_chat, "openai-chat", "http://127.0.0.1:9/v1", "m",
                                 {"tools": [WEATHER]})["tools"][0]["function"]


def test_a_strict_tool_over_responses_is_the_tools_strict_false_when_not_asked():
    from agenthub.providers import openai_responses

    openai = pytest.importorskip("openai")
    for tool, strict in ((dict(WEATHER, strict=True), True), (WEATHER, False)):
        ours = _plan(openai_responses, "openai-responses", "http://127.0.0.1:9/v1", "gpt-5.5", {"tools": [tool]})
        done = [b'data: {"type":"response.completed","response":{"id":"r","object":"response","status":"completed",'
                b'"output":[],"created_at":1,"model":"gpt-5.5","tools":[],"parallel_tool_calls":true,'
                b'"tool_choice":"auto"}}\n\n']
        with SSEServer() as server:
            server.answers.append(Answer(done))
            client = openai.OpenAI(base_url=server.url + "/v1", api_key=KEY, max_retries=0)
            for _ in client.responses.create(model="gpt-5.5", input="hi", stream=True, tools=[
                    {"type": "function", "name": "get_weather", "description": "Weather.",
                     "parameters": WEATHER["parameters"], "strict": strict}]):
                pass
            sdk = server.requests[0]["body"]["tools"]
        assert ours["tools"] == sdk and ours["tools"][0]["strict"] is strict


def test_a_strict_tool_over_anthropic_is_the_tools_strict_on_models_with_structured_outputs():
    ours = _plan(anthropic_wire, "anthropic", "https://api.anthropic.com", "claude-sonnet-4-5",
                 {"tools": [dict(WEATHER, strict=True)]})["tools"]
    sdk = _anthropic_sdk_body(model="claude-sonnet-4-5", max_tokens=100,
                              messages=[{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
                              tools=[{"name": "get_weather", "description": "Weather.",
                                      "input_schema": WEATHER["parameters"], "strict": True}])["tools"]
    assert ours == sdk
    with pytest.raises(UnsupportedParameterError) as info:  # Claude Sonnet 4 (4.0): no structured outputs
        _plan(anthropic_wire, "anthropic", "https://api.anthropic.com", "claude-sonnet-4-20250514",
              {"tools": [dict(WEATHER, strict=True)]})
    assert info.value.parameter == "tools"


def test_a_strict_tool_over_bedrock_is_the_tool_specs_strict_as_botocore_serialises_it():
    from agenthub.providers import bedrock

    botocore = pytest.importorskip("botocore.session")
    from botocore import serialize

    ours = _plan(bedrock, "bedrock", "https://bedrock-runtime.us-east-1.amazonaws.com",
                 "us.anthropic.claude-sonnet-4-5-20250929-v1:0", {"tools": [dict(WEATHER, strict=True)],
                                                                   "prompt_caching": "disable"})
    model = botocore.get_session().get_service_model("bedrock-runtime")
    if "strict" not in model.shape_for("ToolSpecification").members:
        pytest.skip("this botocore predates ToolSpecification.strict")
    request = serialize.create_serializer("rest-json").serialize_to_request({
        "modelId": "m", "messages": [{"role": "user", "content": [{"text": "hi"}]}],
        "toolConfig": {"tools": [{"toolSpec": {"name": "get_weather", "description": "Weather.", "strict": True,
                                               "inputSchema": {"json": WEATHER["parameters"]}}}]}},
        model.operation_model("ConverseStream"))
    assert ours["toolConfig"]["tools"] == json.loads(request["body"])["toolConfig"]["tools"]


def test_a_strict_tool_is_refused_where_the_wire_has_no_strict_mode():
    from agenthub.providers import gemini

    with pytest.raises(UnsupportedParameterError) as info:
        _plan(gemini, "gemini", "https://generativelanguage.googleapis.com", "gemini-3.5-flash",
              {"tools": [dict(WEATHER, strict=True)]})
    assert info.value.parameter == "tools"
    assert _plan(gemini, "gemini", "https://generativelanguage.googleapis.com", "gemini-3.5-flash",
                 {"tools": [dict(WEATHER, strict=False)]})["tools"]  # not strict: nothing to refuse


# -- B5: client_type "agenthub": extra_body / extra_headers refused before sending; list_models -------------


@pytest.mark.parametrize("key, value", [("extra_body", {"model": "another"}), ("extra_headers", {"X-A": "1"}),
                                        ("extra_body", {})])
def test_extra_body_and_headers_are_refused_before_anything_reaches_an_agenthub_server(key, value):
    with SSEServer() as server:
        client = AutoLLMClient("fast", client_type="agenthub", base_url=server.url, api_key=KEY)
        with pytest.raises(UnsupportedParameterError) as info:
            list(client.streaming_response(USER, {key: value}))
        assert info.value.parameter == key and info.value.client == "agenthub" and server.requests == []


def test_list_models_reads_the_servers_models_table():
    from agenthub.server import make_app
    from server_support import Builtin

    rows = [{"id": name, "model": "m", "client_type": "openai-chat", "base_url": "http://127.0.0.1:9/v1",
             "api_key": "upstream-key", "max_retries": 0} for name in ("fast", "smart", "cheap")]
    with Builtin(make_app({"models": rows, "api_keys": [KEY]})) as server:
        client = AutoLLMClient("fast", client_type="agenthub", base_url=server.url, api_key=KEY)
        assert client.list_models() == ["fast", "smart", "cheap"]
        # a trailing /v1 names the same server
        assert AutoLLMClient("fast", client_type="agenthub", base_url=server.url + "/v1",
                             api_key=KEY).list_models() == ["fast", "smart", "cheap"]
