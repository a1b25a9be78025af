"""C3 (issue 30): ``tool_result`` items carry an optional ``"is_error": bool``, and every dialect renders it.

Each wire's request body is pinned whole for one turn that answers two parallel calls (the runner sends all of a
turn's results in one user message, in call order): the first result carries an image, the second is an error.
Where an official SDK's request types are installed, the body is checked against them (``sdk_types.conforms``
for the TypedDicts, google-genai's pydantic models, botocore's own parameter validation and serialiser)."""

import base64
import json
import os
from typing import List

import pytest

from agenthub import AutoLLMClient, ConfigError
from agenthub.providers import (agenthub_server, anthropic, bedrock, gemini, gemini_interactions, openai_chat,
                                openai_responses)
from agenthub.providers._common import Endpoint
from agenthub.validate import check_config, check_messages
from conftest import ROOT
from sdk_types import conforms
from sse_server import SSEServer

PNG = b"\x89PNG\r\n\x1a\nfake"
PNG_B64 = base64.b64encode(PNG).decode("ascii")
PNG_URI = "data:image/png;base64," + PNG_B64
ERROR_TEXT = "TimeoutError: get_time took longer than 2 s"
MESSAGES = [
    {"role": "user", "content_items": [{"type": "text", "text": "weather and time?"}]},
    {"role": "assistant", "content_items": [
        {"type": "tool_call", "name": "get_weather", "arguments": {"city": "Paris"}, "tool_call_id": "call_1"},
        {"type": "tool_call", "name": "get_time", "arguments": {}, "tool_call_id": "call_2"}]},
    {"role": "user", "content_items": [
        {"type": "tool_result", "tool_call_id": "call_1", "text": "sunny", "images": [PNG_URI]},
        {"type": "tool_result", "tool_call_id": "call_2", "text": ERROR_TEXT, "is_error": True}]},
]
TOOLS = [{"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}},
         {"name": "get_time", "parameters": {"type": "object", "properties": {}}}]
CONFIG = {"tools": TOOLS}


def _body(module, client_type, base_url, model, messages=MESSAGES, **config):
    config = check_config(dict(CONFIG, **config))
    return module.build_request(Endpoint(client_type, base_url, "k"), model, messages, config).body


def _anthropic():
    return _body(anthropic, "anthropic", "https://api.anthropic.com", "claude-sonnet-4-5")


def _bedrock():
    return _body(bedrock, "bedrock", "https://bedrock-runtime.us-east-1.amazonaws.com",
                 "us.anthropic.claude-sonnet-4-5-20250929-v1:0", prompt_caching="disable")  # (no cachePoint)


def _gemini():
    return _body(gemini, "gemini", "https://generativelanguage.googleapis.com", "gemini-3.5-flash")


def _interactions():
    return _body(gemini_interactions, "gemini-interactions", "https://generativelanguage.googleapis.com",
                 "gemini-3.5-flash")


def _chat():
    return _body(openai_chat, "openai-chat", "https://api.openai.com/v1", "gpt-5.5")


def _responses():
    return _body(openai_responses, "openai-responses", "https://api.openai.com/v1", "gpt-5.5")


# -- the data model: validate ---------------------------------------------------------------------------------


def test_is_error_true_or_false_is_accepted():
    check_messages(MESSAGES)
    check_messages([{"role": "user", "content_items": [
        {"type": "tool_result", "tool_call_id": "c", "text": "ok", "is_error": False}]}])


@pytest.mark.parametrize("value", [1, 0, "true", None, [True]])
def test_anything_but_a_bool_is_a_config_error_naming_the_field_before_anything_is_sent(value):
    bad = [MESSAGES[0], MESSAGES[1], {"role": "user", "content_items": [
        {"type": "tool_result", "tool_call_id": "call_1", "text": "x", "is_error": value}]}]
    with pytest.raises(ConfigError) as info:
        check_messages(bad)
    assert str(info.value) == ("messages[2]['content_items'][0]: tool_result 'is_error' must be a bool (True or "
                               "False), got {}".format(type(value).__name__))
    with SSEServer() as server:
        client = AutoLLMClient("m", client_type="openai-chat", base_url=server.url + "/v1", api_key="k")
        with pytest.raises(ConfigError):
            list(client.streaming_response(bad))
        assert server.requests == []


# -- each wire's body, pinned ----------------------------------------------------------------------------------


def test_anthropic_tool_results_come_first_in_one_user_turn_the_error_one_with_is_error_true():
    assert _anthropic()["messages"][1:] == [
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "call_1", "name": "get_weather", "input": {"city": "Paris"}},
            {"type": "tool_use", "id": "call_2", "name": "get_time", "input": {}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "call_1", "content": [
                {"type": "text", "text": "sunny"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG_B64}}]},
            {"type": "tool_result", "tool_use_id": "call_2", "content": ERROR_TEXT, "is_error": True}]}]


def test_anthropic_is_error_without_text_has_no_content():
    messages = MESSAGES[:2] + [{"role": "user", "content_items": [
        {"type": "tool_result", "tool_call_id": "call_1", "text": "", "is_error": True},
        {"type": "tool_result", "tool_call_id": "call_2", "text": "fine", "is_error": False}]}]
    body = _body(anthropic, "anthropic", "https://api.anthropic.com", "claude-sonnet-4-5", messages)
    assert body["messages"][2]["content"] == [
        {"type": "tool_result", "tool_use_id": "call_1", "is_error": True},
        {"type": "tool_result", "tool_use_id": "call_2", "content": "fine"}]  # False: the field left out


def test_bedrock_tool_results_are_tool_result_blocks_the_error_one_with_status_error():
    assert _bedrock()["messages"][1:] == [
        {"role": "assistant", "content": [
            {"toolUse": {"toolUseId": "call_1", "name": "get_weather", "input": {"city": "Paris"}}},
            {"toolUse": {"toolUseId": "call_2", "name": "get_time", "input": {}}}]},
        {"role": "user", "content": [
            {"toolResult": {"toolUseId": "call_1", "content": [
                {"text": "sunny"}, {"image": {"format": "png", "source": {"bytes": PNG_B64}}}]}},
            {"toolResult": {"toolUseId": "call_2", "content": [{"text": ERROR_TEXT}], "status": "error"}}]}]


def test_gemini_function_responses_share_one_content_the_error_one_as_response_error():
    # google-genai's automatic function calling writes {"result": ...} for an answer, {"error": ...} for a failure
    assert _gemini()["contents"][1:] == [
        {"role": "model", "parts": [
            {"functionCall": {"id": "call_1", "name": "get_weather", "args": {"city": "Paris"}},
             "thoughtSignature": "skip_thought_signature_validator"},
            {"functionCall": {"id": "call_2", "name": "get_time", "args": {}}}]},
        {"role": "user", "parts": [
            {"functionResponse": {"name": "get_weather", "id": "call_1", "response": {"result": "sunny"},
                                  "parts": [{"inlineData": {"mimeType": "image/png", "data": PNG_B64}}]}},
            {"functionResponse": {"name": "get_time", "id": "call_2", "response": {"error": ERROR_TEXT}}}]}]


def test_gemini_interactions_function_results_the_error_one_with_is_error_true():
    assert _interactions()["input"][1:] == [
        {"type": "thought", "signature": "skip_thought_signature_validator"},  # (unsigned calls, on Gemini 3)
        {"type": "function_call", "id": "call_1", "name": "get_weather", "arguments": {"city": "Paris"}},
        {"type": "function_call", "id": "call_2", "name": "get_time", "arguments": {}},
        {"type": "function_result", "call_id": "call_1", "name": "get_weather", "result": [
            {"type": "text", "text": "sunny"}, {"type": "image", "data": PNG_B64, "mime_type": "image/png"}]},
        {"type": "function_result", "call_id": "call_2", "name": "get_time", "result": ERROR_TEXT, "is_error": True}]


def test_chat_tool_messages_in_call_order_carry_the_text_alone_and_images_follow_as_a_user_message():
    # a tool message's content takes text parts only: the images go in the user message right after the results
    assert _chat()["messages"][1:] == [
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'}},
            {"id": "call_2", "type": "function", "function": {"name": "get_time", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
        {"role": "tool", "tool_call_id": "call_2", "content": ERROR_TEXT},
        {"role": "user", "content": [{"type": "image_url", "image_url": {"url": PNG_URI}}]}]


def test_responses_function_call_outputs_in_call_order_carry_the_text_alone():
    assert _responses()["input"][1:] == [
        {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": '{"city":"Paris"}'},
        {"type": "function_call", "call_id": "call_2", "name": "get_time", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_1", "output": [
            {"type": "input_text", "text": "sunny"},
            {"type": "input_image", "image_url": PNG_URI, "detail": "auto"}]},
        {"type": "function_call_output", "call_id": "call_2", "output": ERROR_TEXT}]


def test_the_agenthub_dialect_carries_is_error_as_it_is():
    body = _body(agenthub_server, "agenthub", "http://127.0.0.1:9", "m")
    assert body["messages"][2] == {"role": "user", "content_items": [
        {"type": "tool_result", "tool_call_id": "call_1", "text": "sunny", "images": [PNG_URI]},
        {"type": "tool_result", "tool_call_id": "call_2", "text": ERROR_TEXT, "is_error": True}]}


def test_agenthub_serve_passes_is_error_on_to_the_upstream():
    from agenthub.apps.server import make_app
    from server_support import Builtin, Route, Upstream

    with open(os.path.join(ROOT, "agenthub", "recordings", "anthropic", "weather_answer.sse"), "rb") as handle:
        answer = handle.read()
    with Upstream() as up:
        up.routes["anthropic"] = Route(answer)
        app = make_app({"models": [{"id": "claude", "model": "claude-sonnet-4-5", "client_type": "anthropic",
                                    "base_url": up.url + "/anthropic", "api_key": "sk-up-0123456789",
                                    "max_retries": 0}], "api_keys": ["server-key-0123456789"]})
        with Builtin(app) as server:
            client = AutoLLMClient("claude", client_type="agenthub", base_url=server.url,
                                   api_key="server-key-0123456789", max_retries=0)
            list(client.streaming_response(MESSAGES, dict(CONFIG)))
    (request,) = up.requests
    assert request["body"]["messages"] == _anthropic()["messages"]
    assert request["body"]["messages"][2]["content"][1]["is_error"] is True


# -- against the official SDKs' request types ------------------------------------------------------------------


def test_anthropic_body_fits_the_sdks_message_params():
    types = pytest.importorskip("anthropic.types")
    assert conforms(_anthropic()["messages"], List[types.MessageParam]) is None
    broken = json.loads(json.dumps(_anthropic()["messages"]).replace('"is_error"', '"isError"'))
    assert conforms(broken, List[types.MessageParam]) == "$[2].content[1]: ToolResultBlockParam has no field 'isError'"


def test_chat_body_fits_the_sdks_message_params():
    chat = pytest.importorskip("openai.types.chat")
    assert conforms(_chat()["messages"], List[chat.ChatCompletionMessageParam]) is None
    assert conforms([{"role": "tool", "tool_call_id": "c", "content": "x", "is_error": True}],
                    List[chat.ChatCompletionMessageParam]) is not None  # no such field: the text alone


def test_responses_body_fits_the_sdks_input_items():
    responses = pytest.importorskip("openai.types.responses")
    assert conforms(_responses()["input"], List[responses.ResponseInputItemParam]) is None
    assert conforms([{"type": "function_call_output", "call_id": "c", "output": "x", "is_error": True}],
                    List[responses.ResponseInputItemParam]) is not None  # no such field: the text alone


def test_interactions_body_fits_the_sdks_steps():
    step = pytest.importorskip("google.genai._gaos.types.interactions.step")
    assert conforms(_interactions()["input"], List[step.StepParam]) is None
    assert conforms([{"type": "function_result", "call_id": "c", "result": "x", "is_error": "yes"}],
                    List[step.StepParam]) == "$[0].is_error: 'yes' is not a bool"


def test_gemini_body_fits_the_sdks_content_model():
    genai = pytest.importorskip("google.genai.types")
    pydantic = pytest.importorskip("pydantic")
    contents = [genai.Content.model_validate(content) for content in _gemini()["contents"]]
    response = contents[2].parts[1].function_response
    assert (response.name, response.id, response.response) == ("get_time", "call_2", {"error": ERROR_TEXT})
    with pytest.raises(pydantic.ValidationError):  # the model forbids fields it does not name
        genai.Content.model_validate({"role": "user", "parts": [{"functionResponse": {"name": "f", "isError": True}}]})


def test_bedrock_body_passes_botocores_validation_and_serialises_the_same():
    session = pytest.importorskip("botocore.session")
    from botocore import serialize, validate

    ours = _bedrock()
    params = {"modelId": "m", "messages": json.loads(json.dumps(ours["messages"])), "toolConfig": ours["toolConfig"]}
    image = params["messages"][2]["content"][0]["toolResult"]["content"][1]["image"]
    image["source"]["bytes"] = base64.b64decode(image["source"]["bytes"])  # botocore takes the blob as bytes
    model = session.get_session().get_service_model("bedrock-runtime")
    operation = model.operation_model("ConverseStream")
    report = validate.ParamValidator().validate(params, operation.input_shape)
    assert not report.has_errors(), report.generate_report()
    request = serialize.create_serializer("rest-json").serialize_to_request(params, operation)
    assert json.loads(request["body"])["messages"] == ours["messages"]
    wrong = {"modelId": "m", "messages": [{"role": "user", "content": [
        {"toolResult": {"toolUseId": "c", "content": [{"text": "x"}], "isError": True}}]}]}
    report = validate.ParamValidator().validate(wrong, operation.input_shape)
    assert "isError" in report.generate_report()  # (botocore checks names and types, not enum values)
