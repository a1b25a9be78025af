"""The config keys beyond the seed (issue 11): response_format, top_p, stop, seed, fast_mode,
extra_body, extra_headers and ThinkingLevel.MAX.

Request goldens (exact JSON bodies and headers) per protocol, and every refusal: an
UnsupportedParameterError (or a ConfigError for malformed input) before anything is sent.
The wire fields were checked against the providers' current API references:

- Chat Completions ``response_format: {"type": "json_schema", "json_schema": {name, schema,
  strict}}``, ``top_p``, ``stop`` (up to 4), ``seed``, ``service_tier: "priority"``;
- Responses ``text.format: {"type": "json_schema", name, schema, strict}``, ``top_p``, no stop
  and no seed; GPT-5 / o-series take no sampling parameters, GPT-5.1+ take them only at
  reasoning effort none;
- Anthropic ``output_config.format: {"type": "json_schema", "schema"}`` (generally available: no
  beta header; no schema-less JSON mode), ``top_p`` (>= 0.95 while thinking; not with
  temperature on Claude 4.5 / 4.6; removed on 4.7+), ``stop_sequences``, no seed, fast mode
  ``speed: "fast"`` + ``anthropic-beta: fast-mode-2026-02-01``;
- Gemini ``generationConfig.responseMimeType: "application/json"`` + ``responseJsonSchema``
  (``responseSchema`` on Gemini 1.x / 2.0), ``topP``, ``stopSequences`` (up to 5), ``seed``,
  top-level ``serviceTier: "priority"``.
"""

import copy
import json

import pytest

from agenthub import ThinkingLevel
from agenthub.errors import ConfigError, UnsupportedParameterError
from agenthub.providers import anthropic, gemini, openai_chat, openai_responses
from agenthub.providers._common import Endpoint, apply_extras, deep_merge
from agenthub.registry import resolve
from agenthub.validate import check_config
from conftest import run_parser, sent

USER = [{"role": "user", "content_items": [{"type": "text", "text": "Hi"}]}]
SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}, "temp_c": {"type": "number"}},
          "required": ["city", "temp_c"], "additionalProperties": False}
JSON_SCHEMA = {"type": "json_schema", "name": "weather", "schema": SCHEMA}
TOOLS = [{"name": "get_weather", "parameters": {"type": "object", "properties": {}}}]

CHAT = Endpoint("openai-chat", "https://api.example.com/v1", "sk-test")
RESPONSES = Endpoint("openai-responses", "https://api.openai.com/v1", "sk-test")
ANTHROPIC = Endpoint("anthropic", "https://api.anthropic.com", "sk-ant-test", quirks={"first_party": True})
#: the first-party API with 2023-06-01 pinned (AutoLLMClient(..., anthropic_version="2023-06-01")): sampling allowed
ANTHROPIC_2023 = Endpoint("anthropic", "https://api.anthropic.com", "sk-ant-test",
                          quirks={"first_party": True, "anthropic_version": "2023-06-01"})
GEMINI = Endpoint("gemini", "https://generativelanguage.googleapis.com", "gm-test")


def plan(module, endpoint, model, config, messages=USER):
    """What the client sends: build_request, then the extras merged on the plan, then the host's encode."""
    cfg = check_config(config)
    return sent(apply_extras(module.build_request(endpoint, model, messages, cfg), cfg), endpoint)


def refused(module, endpoint, model, config, parameter):
    with pytest.raises(UnsupportedParameterError) as info:
        plan(module, endpoint, model, config)
    assert (info.value.client, info.value.parameter) == (endpoint.client_type, parameter)
    return info.value


def routed(model, config, client_type=None):
    """A registry row's endpoint (quirks included), as AutoLLMClient would build it."""
    env = {"DEEPSEEK_API_KEY": "k", "ZAI_API_KEY": "k", "OPENROUTER_API_KEY": "k", "MOONSHOT_API_KEY": "k",
           "DASHSCOPE_API_KEY": "k"}
    kind, url, key, quirks = resolve(model, client_type, environ=env)
    module = {"openai-chat": openai_chat, "anthropic": anthropic}[kind]
    return plan(module, Endpoint(kind, url, key, quirks=quirks), model, config)


# -- validation -------------------------------------------------------------------------------------


def test_the_new_keys_are_normalised_and_the_callers_objects_untouched():
    config = {"response_format": dict(JSON_SCHEMA), "top_p": 0.5, "stop": "END", "seed": 3, "fast_mode": False,
              "extra_body": {"a": {"b": [1, 2]}}, "extra_headers": {"X-Trace": "t-1"}}
    before = copy.deepcopy(config)
    out = check_config(config)
    assert out == {"response_format": {"type": "json_schema", "name": "weather", "schema": SCHEMA, "strict": True},
                   "top_p": 0.5, "stop": ["END"], "seed": 3, "fast_mode": False,
                   "extra_body": {"a": {"b": [1, 2]}}, "extra_headers": {"X-Trace": "t-1"}}
    assert config == before
    assert out["extra_body"]["a"] is not config["extra_body"]["a"]  # a copy: merging never touches the caller's
    assert check_config({"response_format": {"type": "json_object"}})["response_format"] == {"type": "json_object"}
    assert check_config({"response_format": dict(JSON_SCHEMA, strict=False, description="d")})["response_format"] == {
        "type": "json_schema", "name": "weather", "schema": SCHEMA, "strict": False, "description": "d"}
    assert ThinkingLevel.MAX.value == "max" and check_config({"thinking_level": "max"})["thinking_level"] \
        is ThinkingLevel.MAX


@pytest.mark.parametrize("config,match", [
    ({"response_format": "json"}, r"config\['response_format'\] must be"),
    ({"response_format": {"type": "yaml"}}, r"config\['response_format'\] must be"),
    ({"response_format": {"type": "json_schema", "schema": SCHEMA}}, r"needs a 'name'"),
    ({"response_format": {"type": "json_schema", "name": "", "schema": SCHEMA}}, r"needs a 'name'"),
    ({"response_format": {"type": "json_schema", "name": "a b", "schema": SCHEMA}}, r"a-z, A-Z, 0-9, _ and -"),
    ({"response_format": {"type": "json_schema", "name": "w\n", "schema": SCHEMA}}, r"a-z, A-Z, 0-9, _ and -"),
    ({"response_format": {"type": "json_schema", "name": "w" * 65, "schema": SCHEMA}}, r"at most 64"),
    ({"response_format": {"type": "json_schema", "name": "w", "schema": "{}"}}, r"\['schema'\] must be a JSON Schema dict"),
    ({"response_format": {"type": "json_schema", "name": "w"}}, r"\['schema'\] must be a JSON Schema dict"),
    ({"response_format": {"type": "json_schema", "name": "w", "schema": [SCHEMA]}}, r"must be a JSON Schema dict"),
    ({"response_format": {"type": "json_schema", "name": "w", "schema": {}, "strict": "yes"}}, r"'strict'\] must be a bool"),
    ({"response_format": {"type": "json_schema", "name": "w", "schema": {}, "json_schema": {}}}, r"unknown key"),
    ({"response_format": {"type": "json_object", "schema": {}}}, r"unknown key"),
    ({"top_p": 1.5}, r"top_p'\] must be a number from 0 to 1"),
    ({"top_p": True}, r"top_p'\] must be a number"),
    ({"stop": []}, r"stop'\] must be a non-empty string"),
    ({"stop": ["a", ""]}, r"stop'\] must be"),
    ({"stop": 5}, r"stop'\] must be"),
    ({"seed": 1.5}, r"seed'\] must be an int"),
    ({"seed": True}, r"seed'\] must be an int"),
    ({"fast_mode": "yes"}, r"fast_mode'\] must be a bool"),
    ({"extra_body": [1]}, r"extra_body'\] must be a dict"),
    ({"extra_body": {1: 2}}, r"extra_body'\] must be a dict with str keys"),
    ({"extra_headers": "X: y"}, r"extra_headers'\] must be a dict"),
    ({"extra_headers": {"X-Key": 5}}, r"must be a str without CR, LF or NUL"),
    ({"extra_headers": {"X-Key": "v\r\nInjected: 1"}}, r"must be a str without CR, LF or NUL"),
    ({"extra_headers": {"Bad Name": "v"}}, r"invalid header name"),
    ({"extra_headers": {"X-A\n": "v"}}, r"invalid header name"),
    ({"thinking_level": "maximum"}, r"ThinkingLevel \(none, low, medium, high, xhigh, max\)"),
])
def test_malformed_new_keys_are_config_errors(config, match):
    with pytest.raises(ConfigError, match=match) as info:
        check_config(config)
    assert not isinstance(info.value, UnsupportedParameterError)
    assert "Injected" not in str(info.value)  # a header value is never shown (it may be a credential)


# -- Chat Completions -------------------------------------------------------------------------------


def test_chat_golden_every_new_key():
    request = plan(openai_chat, CHAT, "gpt-4.1", {
        "max_tokens": 50, "response_format": JSON_SCHEMA, "top_p": 0.9, "stop": ["END", "##"], "seed": 7,
        "fast_mode": True, "extra_body": {"verbosity": "low", "stream_options": {"extra": 1}},
        "extra_headers": {"X-Request-Tag": "t1", "accept": "text/event-stream; q=1"}})
    assert request.body == {
        "model": "gpt-4.1",
        "messages": [{"role": "user", "content": "Hi"}],
        "stream": True,
        "stream_options": {"include_usage": True, "extra": 1},
        "max_completion_tokens": 50,
        "top_p": 0.9,
        "stop": ["END", "##"],
        "seed": 7,
        "response_format": {"type": "json_schema", "json_schema": {"name": "weather", "schema": SCHEMA, "strict": True}},
        "service_tier": "priority",
        "verbosity": "low",
    }
    assert request.headers == {"Content-Type": "application/json", "Authorization": "Bearer sk-test",
                               "X-Request-Tag": "t1", "accept": "text/event-stream; q=1"}


@pytest.mark.parametrize("response_format,wire", [
    ({"type": "json_object"}, {"type": "json_object"}),
    (dict(JSON_SCHEMA, strict=False, description="A city's weather"),
     {"type": "json_schema", "json_schema": {"name": "weather", "description": "A city's weather", "schema": SCHEMA,
                                             "strict": False}}),
    ({"type": "text"}, None),  # the default: nothing sent
])
def test_chat_response_formats(response_format, wire):
    assert plan(openai_chat, CHAT, "m", {"response_format": response_format}).body.get("response_format") == wire


def test_chat_refusals():
    refused(openai_chat, CHAT, "m", {"stop": ["a", "b", "c", "d", "e"]}, "stop")  # up to 4
    assert plan(openai_chat, CHAT, "m", {"stop": ["a", "b", "c", "d"]}).body["stop"] == ["a", "b", "c", "d"]
    older = Endpoint("openai-chat", "http://127.0.0.1:8000/v1", quirks={"response_formats": ("text", "json_object")})
    error = refused(openai_chat, older, "m", {"response_format": JSON_SCHEMA}, "response_format")
    assert "'json_schema' is not available on this server (it takes: text, json_object)" in str(error)
    assert plan(openai_chat, older, "m", {"response_format": {"type": "json_object"}}).body["response_format"] == {
        "type": "json_object"}
    with pytest.raises(UnsupportedParameterError, match="no priority tier"):
        routed("deepseek-v4-flash", {"fast_mode": True})
    for model in ("deepseek-v4-flash", "glm-5.1", "kimi-k3", "moonshot-v1-32k"):  # JSON mode, no json_schema
        with pytest.raises(UnsupportedParameterError, match="it takes: text, json_object"):
            routed(model, {"response_format": JSON_SCHEMA})
        assert routed(model, {"response_format": {"type": "json_object"}}).body["response_format"] == {
            "type": "json_object"}
    assert routed("qwen3-max", {"response_format": JSON_SCHEMA}).body["response_format"]["type"] == "json_schema"
    assert "service_tier" not in routed("deepseek-v4-flash", {"fast_mode": False}).body


def test_zai_streams_tool_arguments_only_when_asked():
    body = routed("glm-5.1", {"tools": TOOLS})
    assert body.body["tool_stream"] is True and body.body["tools"][0]["function"]["name"] == "get_weather"
    assert "tool_stream" not in routed("glm-5.1", {}).body
    assert routed("glm-5.3", {"tools": TOOLS}).body["tool_stream"] is True
    assert "tool_stream" not in routed("deepseek-v4-flash", {"tools": TOOLS}).body


def test_chat_max_rides_each_vendors_top_level():
    assert routed("deepseek-v4-flash", {"thinking_level": "max"}).body["reasoning_effort"] == "max"
    assert routed("glm-5.3", {"thinking_level": ThinkingLevel.MAX}).body["reasoning_effort"] == "max"
    assert routed("kimi-k3", {"thinking_level": "max"}).body["reasoning_effort"] == "max"
    assert routed("moonshotai/kimi-k2.6", {"thinking_level": "max"}).body["reasoning"] == {"effort": "xhigh"}
    assert routed("qwen3:8b", {"thinking_level": "max"}, "ollama").body["reasoning_effort"] == "high"
    assert routed("glm-5.1", {"thinking_level": "max"}).body["thinking"] == {"type": "enabled"}


def test_chat_stop_sequence_finishes_are_stop():
    data = b'data: {"choices": [{"index": 0, "delta": {"content": "ok"}, "finish_reason": "stop_sequence"}]}\n\n' \
           b"data: [DONE]\n\n"
    assert run_parser(openai_chat.parse_stream, [data], "openai-chat")[-1]["finish_reason"] == "stop"


# -- Responses --------------------------------------------------------------------------------------


def test_responses_golden_every_new_key():
    request = plan(openai_responses, RESPONSES, "gpt-4.1", {
        "max_tokens": 50, "response_format": JSON_SCHEMA, "top_p": 0.9, "temperature": 0.2, "fast_mode": True,
        "extra_body": {"text": {"verbosity": "low"}, "prompt_cache_key": "k1"}})
    assert request.body == {
        "model": "gpt-4.1",
        "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Hi"}]}],
        "stream": True,
        "store": False,
        "max_output_tokens": 50,
        "temperature": 0.2,
        "top_p": 0.9,
        "text": {"format": {"type": "json_schema", "name": "weather", "schema": SCHEMA, "strict": True},
                 "verbosity": "low"},
        "service_tier": "priority",
        "prompt_cache_key": "k1",
    }
    assert plan(openai_responses, RESPONSES, "gpt-4.1", {"response_format": {"type": "json_object"}}).body["text"] == {
        "format": {"type": "json_object"}}


def test_responses_refusals():
    refused(openai_responses, RESPONSES, "gpt-4.1", {"stop": ["END"]}, "stop")  # the Responses API has none
    refused(openai_responses, RESPONSES, "gpt-4.1", {"seed": 1}, "seed")
    gateway = Endpoint("openai-responses", "https://gw.example/v1", "k",
                       quirks={"fast_mode": False, "response_formats": ("text",)})
    refused(openai_responses, gateway, "m", {"fast_mode": True}, "fast_mode")
    refused(openai_responses, gateway, "m", {"response_format": {"type": "json_object"}}, "response_format")


@pytest.mark.parametrize("model,config,parameter", [
    # GPT-5 and the o-series take no sampling parameters at all
    ("gpt-5", {"temperature": 0.5}, "temperature"),
    ("gpt-5-mini", {"top_p": 0.9}, "top_p"),
    ("o4-mini", {"top_p": 0.5}, "top_p"),
    ("gpt-5-pro", {"temperature": 0.2, "thinking_level": "high"}, "temperature"),
    ("gpt-5.1", {"temperature": 0.2, "thinking_level": "none"}, "temperature"),  # 5.2 was the first to take them
    ("gpt-5.2-chat-latest", {"temperature": 0.7}, "temperature"),
    # GPT-5.1 and later take them only at reasoning effort none
    ("gpt-5.2", {"temperature": 0.5, "thinking_level": "high"}, "temperature"),
    ("gpt-5.5", {"top_p": 0.9, "thinking_level": "low"}, "top_p"),
    ("gpt-5.6-terra", {"top_p": 0.9, "thinking_level": ThinkingLevel.MAX}, "top_p"),
])
def test_reasoning_models_refuse_sampling_parameters(model, config, parameter):
    error = refused(openai_responses, RESPONSES, model, config, parameter)
    assert model in str(error)


def test_sampling_parameters_reach_the_models_that_take_them():
    body = plan(openai_responses, RESPONSES, "gpt-5.2", {"temperature": 0.5, "top_p": 0.8, "thinking_level": "none"}).body
    assert (body["temperature"], body["top_p"], body["reasoning"]) == (0.5, 0.8, {"effort": "none"})
    body = plan(openai_responses, RESPONSES, "gpt-5.5", {"temperature": 0.5}).body  # default effort none
    assert body["temperature"] == 0.5 and "reasoning" not in body
    assert plan(openai_responses, RESPONSES, "gpt-5", {"temperature": 1, "top_p": 1}).body["top_p"] == 1
    assert plan(openai_responses, RESPONSES, "my-local-model", {"top_p": 0.3}).body["top_p"] == 0.3


@pytest.mark.parametrize("model,effort", [
    ("gpt-5.5", "xhigh"), ("gpt-5", "high"), ("o3", "high"), ("gpt-5-pro", "high"), ("gpt-5.1", "high"),
    ("some-other-server-model", "xhigh"),
])
def test_responses_max_is_the_models_top_effort(model, effort):
    assert plan(openai_responses, RESPONSES, model, {"thinking_level": "max"}).body["reasoning"] == {"effort": effort}


# -- Anthropic --------------------------------------------------------------------------------------


def test_anthropic_golden_every_new_key():  # top_p: 2023-06-01 pinned (the key then goes as x-api-key)
    request = plan(anthropic, ANTHROPIC_2023, "claude-sonnet-4-5", {
        "max_tokens": 50, "response_format": JSON_SCHEMA, "top_p": 0.9, "stop": ["END", "\n\nObservation:"],
        "extra_body": {"metadata": {"user_id": "u-1"}, "cache_control": None}})
    assert request.body == {
        "model": "claude-sonnet-4-5",
        "max_tokens": 50,
        "messages": [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}],
        "top_p": 0.9,
        "stop_sequences": ["END", "\n\nObservation:"],
        "output_config": {"format": {"type": "json_schema", "schema": SCHEMA}},
        "stream": True,
        "metadata": {"user_id": "u-1"},  # extra_body; its None removed the automatic cache_control
    }
    assert request.headers == {"Content-Type": "application/json", "Accept": "text/event-stream",
                               "anthropic-version": "2023-06-01", "x-api-key": "sk-ant-test"}


def test_anthropic_structured_output_beside_an_effort():
    body = plan(anthropic, ANTHROPIC, "claude-opus-4-8", {"response_format": JSON_SCHEMA, "thinking_level": "high",
                                                           "max_tokens": 1000}).body
    assert body["thinking"] == {"type": "adaptive"}
    assert body["output_config"] == {"effort": "high", "format": {"type": "json_schema", "schema": SCHEMA}}


@pytest.mark.parametrize("model,config,parameter", [
    ("claude-sonnet-4-5", {"response_format": {"type": "json_object"}}, "response_format"),  # no schema-less JSON mode
    ("claude-3-5-sonnet-latest", {"response_format": JSON_SCHEMA}, "response_format"),  # no structured outputs
    ("claude-opus-4-20250514", {"response_format": JSON_SCHEMA}, "response_format"),
    ("claude-3-7-sonnet-latest", {"response_format": JSON_SCHEMA}, "response_format"),
    ("claude-sonnet-4-5", {"seed": 1}, "seed"),
    ("claude-opus-4-7", {"top_p": 0.9}, "top_p"),  # sampling parameters removed
    ("claude-sonnet-5", {"top_p": 0.9}, "top_p"),
    ("claude-sonnet-4-5", {"top_p": 0.9, "thinking_level": "high"}, "top_p"),  # under 0.95 while thinking
    ("claude-sonnet-4-5", {"top_p": 0.9, "temperature": 0.3}, "top_p"),  # one or the other on 4.5 / 4.6
    ("claude-opus-4-8", {"fast_mode": True}, "fast_mode"),  # removed from Opus 4.8 (2026-11-30)
    ("claude-sonnet-5", {"fast_mode": True}, "fast_mode"),
])
def test_anthropic_refusals(model, config, parameter):  # the per-model rules of 2023-06-01 (pinned)
    refused(anthropic, ANTHROPIC_2023, model, config, parameter)


def test_anthropic_sampling_that_is_accepted():  # under 2023-06-01 (pinned)
    assert plan(anthropic, ANTHROPIC_2023, "claude-sonnet-4-5", {"top_p": 0.96, "thinking_level": "high"}
                ).body["top_p"] == 0.96
    body = plan(anthropic, ANTHROPIC_2023, "claude-3-5-haiku-latest", {"top_p": 0.5, "temperature": 0.3}).body
    assert (body["top_p"], body["temperature"]) == (0.5, 0.3)
    assert plan(anthropic, ANTHROPIC, "claude-opus-4-1", {"response_format": JSON_SCHEMA}).body["output_config"] == {
        "format": {"type": "json_schema", "schema": SCHEMA}}


@pytest.mark.parametrize("model", ["claude-opus-5-5", "claude-opus-5", "claude-fable-5-2"])
def test_anthropic_fast_mode(model):
    request = plan(anthropic, ANTHROPIC, model, {"fast_mode": True, "max_tokens": 100,
                                                 "extra_headers": {"anthropic-beta": "context-1m-2025-08-07"}})
    assert request.body["speed"] == "fast"
    # extra_headers win over what the plan had: the caller names every beta it wants
    assert request.headers["anthropic-beta"] == "context-1m-2025-08-07"
    request = plan(anthropic, ANTHROPIC, model, {"fast_mode": True, "max_tokens": 100})
    assert request.headers["anthropic-beta"] == "fast-mode-2026-02-01"
    gateway = Endpoint("anthropic", "https://gw.example", "k")
    refused(anthropic, gateway, model, {"fast_mode": True}, "fast_mode")
    allowed = Endpoint("anthropic", "https://gw.example", "k", quirks={"fast_mode": True})
    assert plan(anthropic, allowed, model, {"fast_mode": True}).body["speed"] == "fast"


@pytest.mark.parametrize("model,config,thinking,effort", [
    ("claude-opus-4-8", {}, {"type": "adaptive"}, "max"),
    ("claude-opus-4-6", {}, {"type": "adaptive"}, "max"),
    ("claude-mythos-preview", {}, {"type": "adaptive"}, "max"),
    ("claude-next-9", {}, {"type": "adaptive"}, "xhigh"),  # a newer model: the top effort the table knows
    ("claude-sonnet-4-5", {"max_tokens": 64000}, {"type": "enabled", "budget_tokens": 32768}, None),
    ("claude-sonnet-4-5", {"max_tokens": 8000}, {"type": "enabled", "budget_tokens": 3904}, None),
])
def test_anthropic_max(model, config, thinking, effort):
    body = plan(anthropic, ANTHROPIC, model, dict(config, thinking_level=ThinkingLevel.MAX)).body
    assert body["thinking"] == thinking
    assert body.get("output_config") == ({"effort": effort} if effort else None)


def test_anthropic_gateways_reading_bearer_get_only_authorization():
    kind, url, key, quirks = resolve("glm-5.1", "zai-anthropic", environ={"ZAI_API_KEY": "zai-key-1"})
    assert (kind, url, quirks) == ("anthropic", "https://api.z.ai/api/anthropic", {"auth": "bearer"})
    headers = plan(anthropic, Endpoint(kind, url, key, quirks=quirks), "glm-5.1", {}).headers
    assert headers == {"Content-Type": "application/json", "Accept": "text/event-stream",
                       "anthropic-version": "2023-06-01", "Authorization": "Bearer zai-key-1"}
    kind, url, key, quirks = resolve("anthropic/claude-sonnet-4.6", "openrouter-anthropic",
                                     environ={"OPENROUTER_API_KEY": "or-key-1"})
    assert url == "https://openrouter.ai/api" and quirks == {"auth": "bearer"}
    # never both, and never a bearer token to api.anthropic.com, whatever the quirks say
    first_party = Endpoint("anthropic", "https://api.anthropic.com", "sk-ant-1", quirks={"auth": "bearer"})
    headers = plan(anthropic, first_party, "claude-sonnet-4-6", {}).headers
    assert headers["x-api-key"] == "sk-ant-1" and "Authorization" not in headers
    models = sent(anthropic.models_request(Endpoint(kind, url, key, quirks=quirks)), Endpoint(kind, url, key, quirks=quirks))
    assert models.headers["Authorization"] == "Bearer or-key-1" and "x-api-key" not in models.headers


def test_anthropic_stop_sequence_finishes_are_stop():
    events = [
        {"type": "message_start", "message": {"usage": {"input_tokens": 3, "output_tokens": 0}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "ok"}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "stop_sequence", "stop_sequence": "END"},
         "usage": {"output_tokens": 1}},
        {"type": "message_stop"},
    ]
    data = "".join("event: {}\ndata: {}\n\n".format(e["type"], json.dumps(e)) for e in events).encode()
    assert run_parser(anthropic.parse_stream, [data], "anthropic")[-1]["finish_reason"] == "stop"


# -- Gemini -----------------------------------------------------------------------------------------


def test_gemini_golden_every_new_key():
    request = plan(gemini, GEMINI, "gemini-3.5-flash", {
        "max_tokens": 50, "response_format": JSON_SCHEMA, "top_p": 0.9, "stop": ["END"], "seed": 7,
        "fast_mode": True,
        "extra_body": {"generationConfig": {"topK": 40, "seed": 8},
                       "safetySettings": [{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE"}]}})
    assert request.body == {
        "contents": [{"role": "user", "parts": [{"text": "Hi"}]}],
        "generationConfig": {"maxOutputTokens": 50, "topP": 0.9, "stopSequences": ["END"], "seed": 8,
                             "responseMimeType": "application/json", "responseJsonSchema": SCHEMA, "topK": 40},
        "serviceTier": "priority",
        "safetySettings": [{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE"}],
    }
    assert request.url == ("https://generativelanguage.googleapis.com/v1beta/models/gemini-3.5-flash:"
                           "streamGenerateContent?alt=sse")


def test_gemini_response_formats():
    config = {"response_format": {"type": "json_object"}}
    assert plan(gemini, GEMINI, "gemini-3.5-flash", config).body["generationConfig"] == {
        "responseMimeType": "application/json"}
    assert plan(gemini, GEMINI, "gemini-2.0-flash", {"response_format": JSON_SCHEMA}).body["generationConfig"] == {
        "responseMimeType": "application/json", "responseSchema": {  # the OpenAPI subset (issue 24 B1)
            "type": "OBJECT", "properties": {"city": {"type": "STRING"}, "temp_c": {"type": "NUMBER"}},
            "required": ["city", "temp_c"], "additionalProperties": False, "propertyOrdering": ["city", "temp_c"]}}


def test_gemini_refusals():
    refused(gemini, GEMINI, "gemini-3.5-flash", {"stop": ["1", "2", "3", "4", "5", "6"]}, "stop")  # up to 5
    assert len(plan(gemini, GEMINI, "gemini-3.5-flash", {"stop": list("12345")}).body["generationConfig"][
        "stopSequences"]) == 5
    tts = Endpoint("gemini", GEMINI.base_url, "g", quirks={"tts": True})
    refused(gemini, tts, "gemini-3.1-flash-tts-preview", {"response_format": {"type": "json_object"}}, "response_format")
    vertex_like = Endpoint("gemini", GEMINI.base_url, "g", quirks={"fast_mode": False})
    refused(gemini, vertex_like, "gemini-3.5-flash", {"fast_mode": True}, "fast_mode")


@pytest.mark.parametrize("model,thinking", [
    ("gemini-3.5-flash", {"thinkingLevel": "HIGH"}),
    ("gemini-3-pro-preview", {"thinkingLevel": "HIGH"}),
    ("gemini-2.5-pro", {"thinkingBudget": 32768}),
    ("gemini-2.5-flash", {"thinkingBudget": 24576}),
])
def test_gemini_max(model, thinking):
    assert plan(gemini, GEMINI, model, {"thinking_level": "max"}).body["generationConfig"] == {"thinkingConfig": thinking}


# -- extra_body / extra_headers ---------------------------------------------------------------------


def test_deep_merge_rules():
    base = {"a": {"b": 1, "c": [1]}, "d": 2, "e": {"f": 1}}
    extra = {"a": {"c": [2], "g": {"h": None, "i": 3}}, "d": None, "e": 5, "new": (1, 2)}
    assert deep_merge(base, extra) == {"a": {"b": 1, "c": [2], "g": {"i": 3}}, "e": 5, "new": [1, 2]}
    assert base == {"a": {"b": 1, "c": [1]}, "d": 2, "e": {"f": 1}}  # not modified


def test_extras_apply_to_the_plan_and_nothing_else():
    plain = openai_chat.build_request(CHAT, "m", USER, check_config({}))
    assert apply_extras(plain, {}) is plain
    merged = plan(openai_chat, CHAT, "m", {"extra_body": {"chat_template_kwargs": {"enable_thinking": False},
                                                          "stream_options": None},
                                           "extra_headers": {"authorization": "Bearer other-key"}})
    assert merged.body == {"model": "m", "messages": [{"role": "user", "content": "Hi"}], "stream": True,
                           "chat_template_kwargs": {"enable_thinking": False}}
    # a header given again in another case replaces the planned one (never two Authorization headers)
    assert merged.headers == {"Content-Type": "application/json", "Accept": "text/event-stream",
                              "authorization": "Bearer other-key"}
    assert json.loads(merged.content()) == merged.body  # what encode sends is the merged body


def test_every_config_key_has_one_checker_in_the_table():
    """check_config is a table of per-key checkers (validate.CHECKS), run in its order: a key of CONFIG_KEYS
    without its row would pass unchecked."""
    from agenthub import validate

    keys = [key for key, _ in validate.CHECKS]
    assert sorted(keys) == sorted(validate.CONFIG_KEYS) and len(set(keys)) == len(keys)
    assert keys.index("tools") < keys.index("tool_choice")  # a tool_choice names tools checked before it


def test_the_first_bad_key_in_the_tables_order_is_the_one_named():
    from agenthub import ConfigError
    from agenthub.validate import check_config

    with pytest.raises(ConfigError) as caught:
        check_config({"extra_headers": 1, "seed": "x", "max_tokens": 0})
    assert str(caught.value) == "config['max_tokens'] must be a positive int (got 0)"
    with pytest.raises(ConfigError) as caught:
        check_config({"tool_choice": ["get"], "tools": [{"name": "other"}]})
    assert str(caught.value) == "config['tool_choice'] names tool(s) not in config['tools']: ['get']"


def test_tool_choice_required_with_no_tool_to_call_is_a_config_error_before_sending():
    """'required' with no tool anywhere can be met by no model (Chat Completions answers 400:
    "'tool_choice' is only allowed when 'tools' are specified"); it is a ConfigError before anything is sent.
    Tools the request gets another way (provider-side MCP servers, built-in tools in extra_body) are tools.
    A config alone may hold it (agenthub serve's default_config, whose callers send the tools)."""
    from agenthub import AutoLLMClient, user
    from agenthub.server import make_app

    client = AutoLLMClient("m", client_type="openai-responses", base_url="http://127.0.0.1:9/v1", api_key="k")
    for config in ({"tool_choice": "required"}, {"tool_choice": "required", "tools": []}):
        with pytest.raises(ConfigError) as caught:
            client.plan([user("hi")], config)
        assert str(caught.value) == ("config['tool_choice'] 'required' needs a tool to call: config['tools'] "
                                     "has none (give the tools, or leave tool_choice out)")
        with pytest.raises(ConfigError):
            client.streaming_response([user("hi")], config)
    for config in ({"tool_choice": "required", "tools": [{"name": "get"}]},
                   {"tool_choice": "required", "mcp_servers": [{"url": "https://mcp.example.com/mcp", "name": "docs"}]},
                   {"tool_choice": "required", "extra_body": {"tools": [{"type": "web_search"}]}},
                   {"tool_choice": "none"}, {"tool_choice": "auto"}):
        client.plan([user("hi")], config)
    check_config({"tool_choice": "required"})
    make_app({"models": [{"id": "forced", "model": "m", "client_type": "openai-responses", "api_key": "k",
                          "base_url": "http://127.0.0.1:9/v1", "default_config": {"tool_choice": "required"}}]})
