"""Issue 31 item 3: MCP servers the provider connects to itself, ``config["mcp_servers"]``.

OpenAI Responses gets ``mcp`` tools, Anthropic the MCP connector (``mcp_servers`` + ``mcp_toolset`` tools, beta
``mcp-client-2025-11-20``); every other protocol refuses the key before anything is sent.  The request bodies are
pinned and checked against the SDKs' request TypedDicts (tests/sdk_types.py).  The output items (``mcp_list_tools``,
``mcp_call``, ``mcp_approval_request``; ``mcp_tool_use``, ``mcp_tool_result``) are server items: streams written
for this file (127.0.0.1) show them as empty text items carrying the item, never a tool call, the finish reason
unchanged, and the next turn sends each back byte for byte, its id included.  Header values are credentials:
never in an error, a trace or a recording."""

import json
import os
from typing import List

import pytest

from agenthub import AutoLLMClient, ConfigError, UnsupportedParameterError, collect
from agenthub.providers import (agenthub_server, anthropic, bedrock, gemini, gemini_interactions, openai_chat,
                                openai_responses)
from agenthub.providers._common import Endpoint
from agenthub.validate import check_config
from sdk_types import conforms
from sse_server import Answer, SSEServer

TOKEN = "mcp-secret-token-0123456789abcdef"
SERVER = {"url": "https://mcp.example.test/mcp", "name": "docs", "headers": {"Authorization": "Bearer " + TOKEN},
          "allowed_tools": ["search", "fetch"]}
TOOL = {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}
USER = [{"role": "user", "content_items": [{"type": "text", "text": "what do the docs say?"}]}]
KEY = "sk-test-0123456789abcdef"


def _plan(module, client_type, base_url, model, config, quirks=None):
    if quirks is None and base_url == "https://api.anthropic.com":
        quirks = {"first_party": True}  # what registry.resolve gives an endpoint on the anthropic host's servers
    endpoint = Endpoint(client_type, base_url, KEY, None, quirks or {})
    return module.build_request(endpoint, model, USER, check_config(config))


# -- validate ---------------------------------------------------------------------------------------------------


def test_a_server_entry_is_normalised():
    config = check_config({"mcp_servers": ({"url": "http://127.0.0.1:9/mcp", "name": "local"},
                                           dict(SERVER, allowed_tools=("search",), require_approval="never"))})
    assert config["mcp_servers"] == [
        {"url": "http://127.0.0.1:9/mcp", "name": "local"},
        {"url": "https://mcp.example.test/mcp", "name": "docs", "headers": {"Authorization": "Bearer " + TOKEN},
         "allowed_tools": ["search"], "require_approval": "never"}]
    approval = {"never": {"tool_names": ["search"]}, "always": {"read_only": False}}
    assert check_config({"mcp_servers": [dict(SERVER, require_approval=approval)]})["mcp_servers"][0][
        "require_approval"] == approval


@pytest.mark.parametrize("servers, message", [
    ([], "config['mcp_servers'] must be a non-empty list of {'url': ..., 'name': ...} dicts"),
    ({"url": "https://x.test", "name": "x"}, "config['mcp_servers'] must be a non-empty list of {'url': ..., "
                                             "'name': ...} dicts"),
    (["https://x.test"], "config['mcp_servers'][0] must be a dict with 'url' and 'name' (got str)"),
    ([{"url": "https://x.test", "name": "x", "server_label": "x"}],
     "config['mcp_servers'][0] has unknown key(s) ['server_label']; an MCP server takes: url, name, headers, "
     "allowed_tools, require_approval"),
    ([{"name": "x"}], "config['mcp_servers'][0]['url'] must be an http(s) URL with a host and no user:password@ "
                      "(got NoneType)"),
    ([{"url": "ftp://x.test/mcp", "name": "x"}], "config['mcp_servers'][0]['url'] must be an http(s) URL with a "
                                                 "host and no user:password@ (got a str)"),
    ([{"url": "https://user:" + TOKEN + "@x.test/mcp", "name": "x"}],
     "config['mcp_servers'][0]['url'] must be an http(s) URL with a host and no user:password@ (got a str)"),
    ([{"url": "https://x.test", "name": "has space"}],
     "config['mcp_servers'][0]['name'] must be 1 to 64 letters, digits, '_' or '-' (got 'has space')"),
    ([{"url": "https://x.test", "name": "x"}, {"url": "https://y.test", "name": "x"}],
     "config['mcp_servers'][1]['name'] 'x' names another server too: names must be unique"),
    ([{"url": "https://x.test", "name": "x", "headers": [("Authorization", TOKEN)]}],
     "config['mcp_servers'][0]['headers'] must be a dict of header name -> str value"),
    ([{"url": "https://x.test", "name": "x", "headers": {"Authorization": "Bearer " + TOKEN + "\r\n"}}],
     "config['mcp_servers'][0]['headers']['Authorization'] holds a carriage return (CR) at position 40 of 42: read "
     "from a file with Windows line ends?"),
    ([{"url": "https://x.test", "name": "x", "headers": {"Authorization": 12345678901}}],
     "config['mcp_servers'][0]['headers']['Authorization'] must be a str (got int)"),
    ([{"url": "https://x.test", "name": "x", "allowed_tools": "search"}],
     "config['mcp_servers'][0]['allowed_tools'] must be a list of tool names (non-empty str)"),
    ([{"url": "https://x.test", "name": "x", "require_approval": "sometimes"}],
     "config['mcp_servers'][0]['require_approval'] must be 'always', 'never' or {'always': {'tool_names': [...]}, "
     "'never': {'tool_names': [...]}} (got 'sometimes')"),
    ([{"url": "https://x.test", "name": "x", "require_approval": {"never": {"tools": ["a"]}}}],
     "config['mcp_servers'][0]['require_approval'] must be 'always', 'never' or {'always': {'tool_names': [...]}, "
     "'never': {'tool_names': [...]}} (got {'never': {'tools': ['a']}})"),
])
def test_a_bad_entry_is_a_config_error_that_shows_no_credential(servers, message):
    with pytest.raises(ConfigError) as info:
        check_config({"mcp_servers": servers})
    assert str(info.value) == message
    assert TOKEN not in str(info.value)


def test_a_bad_entry_is_refused_before_anything_is_sent():
    with SSEServer() as server:
        client = AutoLLMClient("gpt-5.5", client_type="openai-responses", base_url=server.url + "/v1", api_key=KEY)
        with pytest.raises(ConfigError):
            list(client.streaming_response(USER, {"mcp_servers": [{"url": "file:///etc", "name": "x"}]}))
        assert server.requests == []


# -- the requests -----------------------------------------------------------------------------------------------


def test_openai_responses_gets_one_mcp_tool_per_server_after_the_function_tools():
    config = {"tools": [TOOL], "mcp_servers": [dict(SERVER, require_approval={"never": {"tool_names": ["search"]}}),
                                               {"url": "http://127.0.0.1:9/mcp", "name": "local"}]}
    body = _plan(openai_responses, "openai-responses", "https://api.openai.com/v1", "gpt-5.5", config).body
    assert body["tools"] == [
        {"type": "function", "name": "get_weather", "parameters": TOOL["parameters"], "strict": False},
        {"type": "mcp", "server_label": "docs", "server_url": "https://mcp.example.test/mcp",
         "headers": {"Authorization": "Bearer " + TOKEN}, "allowed_tools": ["search", "fetch"],
         "require_approval": {"never": {"tool_names": ["search"]}}},
        {"type": "mcp", "server_label": "local", "server_url": "http://127.0.0.1:9/mcp"}]
    params = pytest.importorskip("openai.types.responses.response_create_params")
    assert conforms(body, params.ResponseCreateParamsStreaming) is None
    assert conforms(dict(body, tools=[{"type": "mcp", "server_label": "x", "url": "https://x.test"}]),
                    params.ResponseCreateParamsStreaming) == "$.tools[0]: Mcp has no field 'url'"


def test_anthropic_gets_the_mcp_connector_with_the_bearer_token_as_authorization_token():
    plan = _plan(anthropic, "anthropic", "https://api.anthropic.com", "claude-sonnet-4-6",
                 {"tools": [TOOL], "mcp_servers": [SERVER, {"url": "http://127.0.0.1:9/mcp", "name": "local"}]})
    assert plan.body["mcp_servers"] == [
        {"type": "url", "url": "https://mcp.example.test/mcp", "name": "docs", "authorization_token": TOKEN},
        {"type": "url", "url": "http://127.0.0.1:9/mcp", "name": "local"}]
    assert plan.body["tools"] == [
        {"name": "get_weather", "input_schema": TOOL["parameters"]},
        {"type": "mcp_toolset", "mcp_server_name": "docs", "default_config": {"enabled": False},
         "configs": {"search": {"enabled": True}, "fetch": {"enabled": True}}},
        {"type": "mcp_toolset", "mcp_server_name": "local"}]
    assert plan.headers["anthropic-beta"] == "mcp-client-2025-11-20"
    params = pytest.importorskip("anthropic.types.beta.message_create_params")
    assert conforms(plan.body, params.MessageCreateParamsStreaming) is None
    assert conforms(dict(plan.body, mcp_servers=[{"type": "url", "url": "https://x.test", "name": "x",
                                                  "headers": {"A": "b"}}]),
                    params.MessageCreateParamsStreaming) == (
        "$.mcp_servers[0]: BetaRequestMCPServerURLDefinitionParam has no field 'headers'")
    # the beta joins the others a request needs
    plan = _plan(anthropic, "anthropic", "https://api.anthropic.com", "claude-sonnet-4-5",
                 {"tools": [TOOL], "mcp_servers": [SERVER], "thinking_level": "low", "max_tokens": 8000})
    assert plan.headers["anthropic-beta"] == "interleaved-thinking-2025-05-14,mcp-client-2025-11-20"


@pytest.mark.parametrize("server, message", [
    (dict(SERVER, require_approval="never"),
     "anthropic: mcp_servers require_approval is OpenAI Responses' alone: the Anthropic MCP connector calls the tools "
     "without asking (leave it out, or allow only some tools with allowed_tools)"),
    (dict(SERVER, headers={"X-Api-Key": TOKEN}),
     "anthropic: mcp_servers header 'X-Api-Key' of MCP server 'docs' cannot be sent through the Anthropic MCP "
     "connector: it takes one credential, an 'Authorization: Bearer <token>' header"),
    (dict(SERVER, headers={"authorization": "Basic " + TOKEN}),
     "anthropic: mcp_servers header \"Authorization (not 'Bearer <token>')\" of MCP server 'docs' cannot be sent "
     "through the Anthropic MCP connector: it takes one credential, an 'Authorization: Bearer <token>' header"),
])
def test_what_the_anthropic_connector_cannot_carry_is_refused_naming_no_credential(server, message):
    with pytest.raises(UnsupportedParameterError) as info:
        _plan(anthropic, "anthropic", "https://api.anthropic.com", "claude-sonnet-4-6", {"mcp_servers": [server]})
    assert (str(info.value), info.value.parameter) == (message, "mcp_servers")
    assert TOKEN not in str(info.value)


def test_claude_on_vertex_has_no_mcp_connector():
    with pytest.raises(UnsupportedParameterError) as info:
        _plan(anthropic, "vertex-anthropic", "https://aiplatform.googleapis.com", "claude-sonnet-4-6",
              {"mcp_servers": [SERVER]}, {"version_in_body": "vertex-2023-10-16", "model_in_body": False})
    assert info.value.parameter == "mcp_servers"


@pytest.mark.parametrize("module, client_type, base_url, model", [
    (openai_chat, "openai-chat", "https://api.openai.com/v1", "gpt-5.5"),
    (gemini, "gemini", "https://generativelanguage.googleapis.com", "gemini-3.5-flash"),
    (gemini_interactions, "gemini-interactions", "https://generativelanguage.googleapis.com", "gemini-3.5-flash"),
    (bedrock, "bedrock", "https://bedrock-runtime.us-east-1.amazonaws.com", "us.anthropic.claude-sonnet-4-5-20250929-v1:0"),
    (agenthub_server, "agenthub", "http://127.0.0.1:9", "m"),
])
def test_every_other_protocol_refuses_the_key(module, client_type, base_url, model):
    with pytest.raises(UnsupportedParameterError) as info:
        _plan(module, client_type, base_url, model, {"mcp_servers": [SERVER]})
    assert str(info.value) == (
        "{}: mcp_servers cannot be sent over this protocol: a provider connects to MCP servers itself only over "
        "OpenAI Responses and the Anthropic Messages API (elsewhere, connect to the server yourself and pass its "
        "tools)".format(client_type))
    assert info.value.parameter == "mcp_servers"


def test_a_refusal_happens_before_anything_is_sent():
    with SSEServer() as server:
        client = AutoLLMClient("m", client_type="openai-chat", base_url=server.url + "/v1", api_key=KEY)
        with pytest.raises(UnsupportedParameterError):
            list(client.streaming_response(USER, {"mcp_servers": [SERVER]}))
        assert server.requests == []


# -- OpenAI Responses: the output items -------------------------------------------------------------------------

LIST_TOOLS = {"id": "mcpl_01", "type": "mcp_list_tools", "server_label": "docs", "tools": [
    {"name": "search", "description": "Search the docs.", "annotations": {"readOnlyHint": True},
     "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}}]}
CALL = {"id": "mcp_02", "type": "mcp_call", "status": "completed", "approval_request_id": None,
        "arguments": '{"q":"retries"}', "error": None, "name": "search", "output": "Retries back off 0.5 s, doubling.",
        "server_label": "docs"}
APPROVAL = {"id": "mcpr_03", "type": "mcp_approval_request", "arguments": '{"q":"delete"}', "name": "search",
            "server_label": "docs"}
MESSAGE = {"id": "msg_04", "type": "message", "role": "assistant", "status": "completed",
           "content": [{"type": "output_text", "text": "They back off.", "annotations": []}]}
USAGE = {"input_tokens": 40, "output_tokens": 9, "output_tokens_details": {"reasoning_tokens": 0},
         "input_tokens_details": {"cached_tokens": 0}, "total_tokens": 49}


def _sse(*payloads):
    return [("event: {}\ndata: {}\n\n".format(p["type"], json.dumps(p))).encode("utf-8") for p in payloads]


def _responses_stream(before_text=False):
    out = [{"type": "response.created", "response": {"id": "resp_1", "status": "in_progress", "output": []}}]
    index = 0
    final = []
    if before_text:
        first = dict(MESSAGE, id="msg_00", content=[{"type": "output_text", "text": "Let me look.", "annotations": []}])
        out += [{"type": "response.output_item.added", "output_index": 0, "item": dict(first, content=[])},
                {"type": "response.output_text.delta", "output_index": 0, "content_index": 0, "delta": "Let me look."},
                {"type": "response.output_item.done", "output_index": 0, "item": first}]
        final.append(first)
        index = 1
    out += [
        {"type": "response.output_item.added", "output_index": index, "item": dict(LIST_TOOLS, tools=[])},
        {"type": "response.mcp_list_tools.in_progress", "output_index": index, "item_id": "mcpl_01"},
        {"type": "response.mcp_list_tools.completed", "output_index": index, "item_id": "mcpl_01"},
        {"type": "response.output_item.done", "output_index": index, "item": LIST_TOOLS},
        {"type": "response.output_item.added", "output_index": index + 1,
         "item": dict(CALL, status="in_progress", arguments="", output=None)},
        {"type": "response.mcp_call_arguments.delta", "output_index": index + 1, "item_id": "mcp_02",
         "delta": '{"q":'},
        {"type": "response.mcp_call_arguments.delta", "output_index": index + 1, "item_id": "mcp_02",
         "delta": '"retries"}'},
        {"type": "response.mcp_call_arguments.done", "output_index": index + 1, "item_id": "mcp_02",
         "arguments": '{"q":"retries"}'},
        {"type": "response.mcp_call.completed", "output_index": index + 1, "item_id": "mcp_02"},
        {"type": "response.output_item.done", "output_index": index + 1, "item": CALL},
        {"type": "response.output_item.added", "output_index": index + 2, "item": dict(MESSAGE, content=[])},
        {"type": "response.output_text.delta", "output_index": index + 2, "content_index": 0, "delta": "They "},
        {"type": "response.output_text.delta", "output_index": index + 2, "content_index": 0, "delta": "back off."},
        {"type": "response.output_item.done", "output_index": index + 2, "item": MESSAGE},
        {"type": "response.completed", "response": {"id": "resp_1", "status": "completed", "usage": USAGE,
                                                     "output": final + [LIST_TOOLS, CALL, MESSAGE]}},
    ]
    return _sse(*out)


def _two_turns(client_type, base_url, model, first, config, follow_answer):
    """Turn 1 answered by ``first``; turn 2 (the history + a user message) by ``follow_answer``: both requests."""
    with SSEServer() as server:
        server.answers.append(Answer(first))
        server.answers.append(Answer(follow_answer))
        client = AutoLLMClient(model, client_type=client_type, base_url=base_url(server.url), api_key=KEY,
                               max_retries=0)
        events = list(client.streaming_response(USER, config))
        reply = collect(events)
        again = USER + [reply, {"role": "user", "content_items": [{"type": "text", "text": "thanks"}]}]
        list(client.streaming_response(again, config))
        return events, reply, server.requests


def _responses_done(text="ok"):
    return _sse({"type": "response.output_text.delta", "output_index": 0, "content_index": 0, "delta": text},
                {"type": "response.completed", "response": {"id": "resp_2", "status": "completed", "output": []}})


RESPONSES_CONFIG = {"mcp_servers": [{"url": "https://mcp.example.test/mcp", "name": "docs",
                                     "headers": {"Authorization": "Bearer " + TOKEN}, "require_approval": "never"}]}


def test_responses_mcp_items_are_server_items_and_go_back_byte_for_byte():
    events, reply, requests = _two_turns("openai-responses", lambda url: url + "/v1", "gpt-5.5",
                                         _responses_stream(), RESPONSES_CONFIG, _responses_done())
    items = [item for event in events for item in event["content_items"]]
    assert items == [
        {"type": "text", "text": "", "fidelity": {"server_item": LIST_TOOLS}},
        {"type": "text", "text": "", "fidelity": {"server_item": CALL}},
        {"type": "text", "text": "They "}, {"type": "text", "text": "back off."}]
    assert events[-1]["finish_reason"] == "stop"  # no tool call: nothing for a runner to execute
    assert reply["content_items"] == [
        {"type": "text", "text": "", "fidelity": {"server_item": LIST_TOOLS}},
        {"type": "text", "text": "They back off.", "fidelity": {"server_item": CALL}}]
    sent = requests[1]["body"]["input"]
    assert sent[1:] == [LIST_TOOLS, CALL,
                        {"type": "message", "role": "assistant",
                         "content": [{"type": "output_text", "text": "They back off.", "annotations": []}]},
                        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "thanks"}]}]
    assert json.dumps(sent[1]) == json.dumps(LIST_TOOLS) and json.dumps(sent[2]) == json.dumps(CALL)
    items_param = pytest.importorskip("openai.types.responses.response_input_item_param")
    # (the MCP items; agenthub's id-less assistant message is not the SDK's ResponseOutputMessageParam, as before)
    assert conforms(sent[1:3], List[items_param.ResponseInputItemParam]) is None


def test_text_before_an_mcp_item_keeps_its_place():
    events, reply, requests = _two_turns("openai-responses", lambda url: url + "/v1", "gpt-5.5",
                                         _responses_stream(before_text=True), RESPONSES_CONFIG, _responses_done())
    assert reply["content_items"] == [
        {"type": "text", "text": "Let me look.", "fidelity": {"ends_text": True}},
        {"type": "text", "text": "", "fidelity": {"server_item": LIST_TOOLS}},
        {"type": "text", "text": "They back off.", "fidelity": {"server_item": CALL}}]
    assert requests[1]["body"]["input"][1:5] == [
        {"type": "message", "role": "assistant",
         "content": [{"type": "output_text", "text": "Let me look.", "annotations": []}]},
        LIST_TOOLS, CALL,
        {"type": "message", "role": "assistant",
         "content": [{"type": "output_text", "text": "They back off.", "annotations": []}]}]


def test_an_approval_request_alone_is_a_turn_to_send_back_not_an_empty_answer():
    stream = _sse({"type": "response.created", "response": {"id": "resp_1", "status": "in_progress", "output": []}},
                  {"type": "response.output_item.added", "output_index": 0, "item": LIST_TOOLS},
                  {"type": "response.output_item.done", "output_index": 0, "item": LIST_TOOLS},
                  {"type": "response.output_item.added", "output_index": 1, "item": APPROVAL},
                  {"type": "response.output_item.done", "output_index": 1, "item": APPROVAL},
                  {"type": "response.completed", "response": {"id": "resp_1", "status": "completed", "usage": USAGE,
                                                              "output": [LIST_TOOLS, APPROVAL]}})
    config = {"mcp_servers": [{"url": "https://mcp.example.test/mcp", "name": "docs"}]}
    events, reply, requests = _two_turns("openai-responses", lambda url: url + "/v1", "gpt-5.5", stream, config,
                                         _responses_done())
    assert reply["content_items"] == [{"type": "text", "text": "", "fidelity": {"server_item": LIST_TOOLS}},
                                      {"type": "text", "text": "", "fidelity": {"server_item": APPROVAL}}]
    assert reply["finish_reason"] == "stop"
    assert requests[1]["body"]["input"][1:3] == [LIST_TOOLS, APPROVAL]


def test_an_item_only_in_the_final_response_comes_out_once():
    stream = _sse({"type": "response.created", "response": {"id": "resp_1", "status": "in_progress", "output": []}},
                  {"type": "response.output_item.added", "output_index": 0, "item": CALL},
                  {"type": "response.output_item.done", "output_index": 0, "item": CALL},
                  {"type": "response.output_text.delta", "output_index": 1, "content_index": 0, "delta": "Done."},
                  {"type": "response.completed", "response": {"id": "resp_1", "status": "completed", "usage": USAGE,
                                                              "output": [LIST_TOOLS, CALL, MESSAGE]}})
    with SSEServer() as server:
        server.answers.append(Answer(stream))
        client = AutoLLMClient("gpt-5.5", client_type="openai-responses", base_url=server.url + "/v1", api_key=KEY)
        reply = collect(client.streaming_response(USER, RESPONSES_CONFIG))
    carried = [item["fidelity"]["server_item"]["id"] for item in reply["content_items"]
               if "server_item" in (item.get("fidelity") or {})]
    assert sorted(carried) == ["mcp_02", "mcpl_01"]


# -- Anthropic: the output blocks -------------------------------------------------------------------------------

MCP_USE = {"type": "mcp_tool_use", "id": "mcptoolu_01", "name": "search", "server_name": "docs",
           "input": {"q": "retries"}}
MCP_RESULT = {"type": "mcp_tool_result", "tool_use_id": "mcptoolu_01", "is_error": False,
              "content": [{"type": "text", "text": "Retries back off 0.5 s, doubling."}]}


def _anthropic_stream():
    return _sse(
        {"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "content": [],
                                              "model": "claude-sonnet-4-6", "stop_reason": None,
                                              "usage": {"input_tokens": 40, "output_tokens": 1}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Let me look."}},
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_start", "index": 1, "content_block": dict(MCP_USE, input={})},
        {"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": '{"q": '}},
        {"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": '"retries"}'}},
        {"type": "content_block_stop", "index": 1},
        {"type": "content_block_start", "index": 2, "content_block": MCP_RESULT},
        {"type": "content_block_stop", "index": 2},
        {"type": "content_block_start", "index": 3, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 3, "delta": {"type": "text_delta", "text": "They back off."}},
        {"type": "content_block_stop", "index": 3},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 30}},
        {"type": "message_stop"})


def _anthropic_done():
    return _sse({"type": "message_start", "message": {"id": "msg_2", "type": "message", "role": "assistant",
                                                      "content": [], "model": "m", "stop_reason": None,
                                                      "usage": {"input_tokens": 1, "output_tokens": 1}}},
                {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": "ok"}},
                {"type": "content_block_stop", "index": 0},
                {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 1}},
                {"type": "message_stop"})


def test_anthropic_mcp_blocks_are_server_blocks_and_go_back_byte_for_byte():
    config = {"mcp_servers": [SERVER]}
    events, reply, requests = _two_turns("anthropic", lambda url: url, "claude-sonnet-4-6", _anthropic_stream(),
                                         config, _anthropic_done())
    assert not any(item["type"] == "tool_call" for event in events for item in event["content_items"])
    assert events[-1]["finish_reason"] == "stop"
    assert reply["content_items"] == [
        {"type": "text", "text": "Let me look."},
        {"type": "thinking", "thinking": "", "fidelity": {"server_block": MCP_USE}},
        {"type": "text", "text": "They back off.", "fidelity": {"server_block": MCP_RESULT}}]
    first, second = requests
    assert first["headers"]["anthropic-beta"] == "mcp-client-2025-11-20"
    assert second["body"]["messages"][1:] == [
        {"role": "assistant", "content": [{"type": "text", "text": "Let me look."}, MCP_USE, MCP_RESULT,
                                          {"type": "text", "text": "They back off."}]},
        {"role": "user", "content": [{"type": "text", "text": "thanks"}]}]
    beta = pytest.importorskip("anthropic.types.beta")
    assert conforms(second["body"]["messages"], List[beta.BetaMessageParam]) is None


# -- credentials: never in an error, a trace or a recording -------------------------------------------------------


def test_an_upstream_error_echoing_the_token_is_scrubbed():
    body = json.dumps({"error": {"type": "invalid_request_error", "code": "mcp_error", "param": "tools",
                                 "message": "MCP server 'docs' refused the token Bearer " + TOKEN}}).encode()
    with SSEServer() as server:
        server.answers.append(Answer([body], status=400, headers={"Content-Type": "application/json"}))
        client = AutoLLMClient("gpt-5.5", client_type="openai-responses", base_url=server.url + "/v1", api_key=KEY,
                               max_retries=0)
        with pytest.raises(Exception) as info:
            list(client.streaming_response(USER, RESPONSES_CONFIG))
    assert TOKEN not in str(info.value) and TOKEN not in repr(getattr(info.value, "_fields", ""))
    assert "refused the token ***" in str(info.value)  # (the header value "Bearer <token>" goes whole)


def test_a_trace_writes_the_header_values_as_stars(tmp_path, monkeypatch):
    from agenthub.tracer import load_trace, trace_paths

    monkeypatch.setenv("AGENTHUB_CACHE_DIR", str(tmp_path))
    with SSEServer() as server:
        server.answers.append(Answer(_responses_stream()))
        client = AutoLLMClient("gpt-5.5", client_type="openai-responses", base_url=server.url + "/v1", api_key=KEY)
        list(client.streaming_response(USER, dict(RESPONSES_CONFIG, trace_id="mcp-trace")))
    written = "".join(open(os.path.join(root, name), encoding="utf-8").read()
                      for root, _, names in os.walk(str(tmp_path)) for name in names)
    assert "mcp-trace" in written and TOKEN not in written
    assert load_trace(trace_paths("mcp-trace")["json"])["config"]["mcp_servers"][0]["headers"] == {"Authorization": "***"}
    with open(trace_paths("mcp-trace")["txt"], encoding="utf-8") as handle:
        lines = [line for line in handle.read().splitlines() if line.startswith("  ")]
    assert lines[1:4] == [  # the server items shown as what they are
        "  Server tool: mcp_list_tools on docs: search",
        '  Server tool: mcp_call search({"q":"retries"}) on docs -> Retries back off 0.5 s, doubling. id=mcp_02',
        "  Text: They back off."]


def test_a_trace_shows_anthropic_mcp_blocks_and_error_results():
    from agenthub.tracer import render_text

    history = USER + [{"role": "assistant", "content_items": [
        {"type": "thinking", "thinking": "", "fidelity": {"server_block": MCP_USE}},
        {"type": "text", "text": "They back off.", "fidelity": {"server_block": dict(MCP_RESULT, is_error=True)}},
        {"type": "tool_call", "name": "f", "arguments": {}, "tool_call_id": "c1"}]},
        {"role": "user", "content_items": [{"type": "tool_result", "tool_call_id": "c1", "text": "ValueError: no",
                                            "is_error": True}]}]
    lines = [line for line in render_text(history, {}).splitlines() if line.startswith("  ")]
    assert lines[1:] == [
        '  Server tool: mcp_tool_use search({"q": "retries"}) on docs id=mcptoolu_01',
        "  Server tool: mcp_tool_result (error) for mcptoolu_01: Retries back off 0.5 s, doubling.",
        "  Text: They back off.",
        "  Tool Call: f({}) id=c1",
        "  Tool Result [c1] (error): ValueError: no"]


def test_a_recording_holds_no_token(tmp_path):
    from agenthub.testing import record_session

    folder = str(tmp_path / "cassette")
    with SSEServer() as server:
        server.answers.append(Answer(_anthropic_stream()))
        client = AutoLLMClient("claude-sonnet-4-6", client_type="anthropic", base_url=server.url, api_key=KEY,
                               session=record_session(folder))
        list(client.streaming_response(USER, {"mcp_servers": [SERVER]}))
        assert server.requests[0]["body"]["mcp_servers"][0]["authorization_token"] == TOKEN  # sent, not recorded
    written = "".join(open(os.path.join(folder, name), encoding="utf-8").read() for name in os.listdir(folder))
    assert '"authorization_token": "***"' in written and TOKEN not in written


# -- the SDKs themselves, driven against the same local server ---------------------------------------------------


def test_the_anthropic_sdk_sends_the_same_connector_fields():
    sdk = pytest.importorskip("anthropic")
    ours = _plan(anthropic, "anthropic", "https://api.anthropic.com", "claude-sonnet-4-6",
                 {"tools": [TOOL], "mcp_servers": [SERVER]})
    with SSEServer() as server:
        server.answers.append(Answer(_anthropic_done()))
        client = sdk.Anthropic(base_url=server.url, api_key=KEY, max_retries=0)
        with client.beta.messages.stream(model="claude-sonnet-4-6", max_tokens=100, messages=[
                {"role": "user", "content": "what do the docs say?"}], mcp_servers=ours.body["mcp_servers"],
                tools=ours.body["tools"], betas=["mcp-client-2025-11-20"]) as stream:
            for _ in stream:
                pass
        sent = server.requests[0]
    assert sent["body"]["mcp_servers"] == ours.body["mcp_servers"]
    assert sent["body"]["tools"] == ours.body["tools"]
    assert sent["headers"]["anthropic-beta"] == ours.headers["anthropic-beta"]


def test_the_openai_sdk_sends_the_same_mcp_tool():
    sdk = pytest.importorskip("openai")
    ours = _plan(openai_responses, "openai-responses", "https://api.openai.com/v1", "gpt-5.5",
                 {"mcp_servers": [dict(SERVER, require_approval="never")]})
    with SSEServer() as server:
        server.answers.append(Answer(_responses_done()))
        client = sdk.OpenAI(base_url=server.url + "/v1", api_key=KEY, max_retries=0)
        for _ in client.responses.create(model="gpt-5.5", input="hi", stream=True, tools=[
                {"type": "mcp", "server_label": "docs", "server_url": "https://mcp.example.test/mcp",
                 "headers": {"Authorization": "Bearer " + TOKEN}, "allowed_tools": ["search", "fetch"],
                 "require_approval": "never"}]):
            pass
        assert server.requests[0]["body"]["tools"] == ours.body["tools"]
