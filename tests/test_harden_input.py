"""Issue 12 item 7: caller input that cannot go out as JSON is a ConfigError when the stream is created."""

import pytest

from agenthub import AutoLLMClient, ConfigError

from faultserver import FaultServer

TOOL = {"name": "f", "description": "d", "parameters": {"type": "object", "properties": {"x": {"type": "string"}}}}


def _user(text="hi"):
    return {"role": "user", "content_items": [{"type": "text", "text": text}]}


def _call(arguments):
    return {"role": "assistant", "content_items": [{"type": "tool_call", "name": "f", "arguments": arguments,
                                                    "tool_call_id": "c1"}]}


def _result(text="r"):
    return {"role": "user", "content_items": [{"type": "tool_result", "text": text, "tool_call_id": "c1"}]}


def _thinking(fidelity):
    return {"role": "assistant", "content_items": [{"type": "thinking", "thinking": "hm", "fidelity": fidelity},
                                                   {"type": "text", "text": "ok"}]}


CASES = [
    ("lone surrogate in text", [_user("half an emoji \ud83d")], None, "lone surrogate"),
    ("lone surrogate in a tool result", [_user(), _call({}), _result("\udc80")], None, "lone surrogate"),
    ("lone surrogate in arguments", [_user(), _call({"x": "\ud800"}), _result()], None, "lone surrogate"),
    ("lone surrogate in a key", [_user(), _call({"\ud800": 1}), _result()], None, "lone surrogate"),
    ("lone surrogate in the system prompt", [_user()], {"system_prompt": "be \udfff"}, "lone surrogate"),
    ("bytes in arguments", [_user(), _call({"x": b"raw"}), _result()], None, "is a bytes"),
    ("a set in arguments", [_user(), _call({"x": {1, 2}}), _result()], None, "is a set"),
    ("NaN in arguments", [_user(), _call({"x": float("nan")}), _result()], None, "NaN or Infinity"),
    ("Infinity in arguments", [_user(), _call({"x": [1, float("inf")]}), _result()], None, "NaN or Infinity"),
    ("an int key in arguments", [_user(), _call({1: "x"}), _result()], None, "keys are strings"),
    ("bytes in a tool schema", [_user()], {"tools": [dict(TOOL, parameters={"type": b"object"})]}, "is a bytes"),
    ("a set in a tool schema", [_user()], {"tools": [dict(TOOL, parameters={"enum": {"a", "b"}})]}, "is a set"),
    ("NaN in a tool schema", [_user()], {"tools": [dict(TOOL, parameters={"maximum": float("nan")})]}, "NaN"),
    ("a lone surrogate in a tool description", [_user()], {"tools": [dict(TOOL, description="\ud800")]},
     "lone surrogate"),
    ("NaN temperature", [_user()], {"temperature": float("nan")}, "temperature"),
    ("infinite temperature", [_user()], {"temperature": float("inf")}, "temperature"),
    ("a mutated fidelity", [_user(), _thinking({"reasoning_details": 5}), _user()], None, "fidelity"),
    ("a fidelity holding a set", [_user(), _thinking({"reasoning_details": {1}}), _user()], None, "is a set"),
]


@pytest.mark.parametrize("client_type", ["openai-chat", "openai-responses", "anthropic", "gemini"])
@pytest.mark.parametrize("name, messages, config, word", CASES, ids=[c[0] for c in CASES])
def test_unsendable_input_is_a_config_error_before_anything_is_sent(client_type, name, messages, config, word):
    if name == "a mutated fidelity" and client_type != "openai-chat":
        pytest.skip("reasoning_details is Chat Completions' fidelity")
    if name == "a mutated fidelity":
        client_type = "openrouter"  # (the Chat host that reads reasoning_details back: a host of no row is sent none)
    with FaultServer() as server:
        client = AutoLLMClient("m", api_key="sk-test-key-123456", base_url=server.url + "/v1",
                               client_type=client_type)
        with pytest.raises(ConfigError, match=word):
            client.streaming_response(messages, config)  # raised here, not at iteration
        assert server.requests == []


@pytest.mark.parametrize("name, messages, config, word", [c for c in CASES if len(c[1]) == 1],
                         ids=[c[0] for c in CASES if len(c[1]) == 1])
def test_the_same_through_a_stateful_call(name, messages, config, word):
    client = AutoLLMClient("m", api_key="sk-test-key-123456", base_url="http://127.0.0.1:9/v1",
                           client_type="openai-chat")
    with pytest.raises(ConfigError, match=word):
        client.streaming_response_stateful(messages[0], config)
    assert client.get_history() == []


def test_a_deep_schema_is_refused_not_recursed_into():
    schema = {}
    inner = schema
    for _ in range(10000):
        inner["items"] = {}
        inner = inner["items"]
    client = AutoLLMClient("m", api_key="sk-test-key-123456", base_url="http://127.0.0.1:9/v1",
                           client_type="openai-chat")
    with pytest.raises(ConfigError, match="nests deeper than"):
        client.streaming_response([_user()], {"tools": [dict(TOOL, parameters=schema)]})


def test_what_is_json_still_goes_out():
    client = AutoLLMClient("m", api_key="sk-test-key-123456", base_url="http://127.0.0.1:9/v1",
                           client_type="openai-chat")
    client.streaming_response([_user("emoji \U0001F600 ok"), _call({"x": [1, 2.5, None, True, {"y": "é"}]}),
                               _result()], {"tools": [TOOL], "temperature": 0.0})


def _deep_object(levels):
    schema = {"type": "string"}
    for _ in range(levels):
        schema = {"type": "object", "properties": {"a": schema}, "required": ["a"], "additionalProperties": False}
    return schema


@pytest.mark.parametrize("client_type", ["openai-chat", "openai-responses"])
def test_a_deep_response_format_schema_is_refused_not_recursed_into(client_type):
    client = AutoLLMClient("gpt-5.5", api_key="sk-test-key-123456", client_type=client_type)
    with pytest.raises(ConfigError) as info:
        client.plan([_user()], {"response_format": {"type": "json_schema", "name": "n", "schema": _deep_object(3000)}})
    assert str(info.value) == "config['response_format']['schema'] nests deeper than 128 levels"


def test_a_deep_extra_body_or_tool_choice_is_a_config_error_not_a_recursion_error():
    deep = {}
    for _ in range(3000):
        deep = {"a": deep}
    client = AutoLLMClient("gpt-5.5", api_key="sk-test-key-123456", client_type="openai-responses")
    with pytest.raises(ConfigError) as info:
        client.plan([_user()], {"extra_body": {"x": deep}})
    assert str(info.value) == "config['extra_body'] nests deeper than 128 levels"
    with pytest.raises(ConfigError) as info:
        client.plan([_user()], {"tool_choice": deep})
    shown = str(info.value)  # (the value's repr where the Python can make it, 3.13 can, cut short; else a placeholder)
    assert shown.startswith("config['tool_choice'] must be 'auto', 'required', 'none' or a non-empty list of tool "
                            "names (got ") and len(shown) < 400
    assert "<a dict nested too deeply to show>" in shown or shown.endswith("...)")
