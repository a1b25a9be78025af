"""An MCP server as a set of tools in client.run (contract C2): the runner lists the server's tools, the
model's calls go to the server (in parallel), the results go back to the model."""

import pytest

from agent_streams import chat_calls, chat_text
from sse_server import Answer, SSEServer

from agenthub import AutoLLMClient, mcp

from mcp_support import FAKE_HTTP, Subprocess, leaked, snapshot, stdio_command

USER = {"role": "user", "content_items": [{"type": "text", "text": "Say hi twice."}]}


def client_for(server):
    return AutoLLMClient("gpt-4o-mini", api_key="sk-test-mcp-runner-0001", base_url=server.url + "/v1",
                         client_type="openai-chat", max_retries=0)


def test_a_stdio_mcp_server_in_a_run_with_a_name_prefix():
    before = snapshot()
    with mcp.connect(stdio_command("modern"), timeout=10, name="fake") as tools, SSEServer() as server:
        server.answers += [Answer([chat_calls([("call_1", "fake__echo", '{"text": "hi"}'),
                                               ("call_2", "fake__echo", '{"text": "ho"}')])]),
                           Answer([chat_text("Done.")])]
        result = client_for(server).run([USER], tools=[tools]).result()
        first = server.requests[0]["body"]
    assert [t["function"]["name"] for t in first["tools"]] == ["fake__echo"]
    assert result.stop == "done"
    assert result.messages[1] == {"role": "user", "content_items": [
        {"type": "tool_result", "tool_call_id": "call_1", "text": "hi"},
        {"type": "tool_result", "tool_call_id": "call_2", "text": "ho"}]}
    assert leaked(before) == []


def test_an_http_mcp_servers_error_result_reaches_the_model_as_an_error():
    fake = Subprocess([FAKE_HTTP, "legacy"])
    try:
        with mcp.connect(fake.url, timeout=10) as tools, SSEServer() as server:
            server.answers += [Answer([chat_calls([("call_1", "echo", '{"text": "over http"}'),
                                                   ("call_2", "bad_header_tool", "{}")])]),
                               Answer([chat_text("Done.")])]
            result = client_for(server).run([USER], tools=[tools]).result()
            follow_up = server.requests[1]["body"]["messages"]
    finally:
        fake.stop()
    assert result.messages[1]["content_items"][0] == {"type": "tool_result", "tool_call_id": "call_1",
                                                      "text": "over http"}
    assert result.messages[1]["content_items"][1]["is_error"] is True
    assert follow_up[-2:] == [{"role": "tool", "tool_call_id": "call_1", "content": "over http"},
                              {"role": "tool", "tool_call_id": "call_2", "content": "unknown tool"}]


def test_a_lone_surrogate_in_a_result_does_not_end_the_run():
    # M05: a server's "\ud800" killed the run (ConfigError on the next request); it is now U+FFFD
    with mcp.connect(stdio_command("modern", "surrogate"), timeout=10, name="fake") as tools, SSEServer() as server:
        server.answers += [Answer([chat_calls([("call_1", "fake__surrogate", "{}")])]),
                           Answer([chat_text("Done.")])]
        result = client_for(server).run([USER], tools=[tools]).result()
        follow_up = server.requests[1]["body"]["messages"]
    assert result.stop == "done"
    assert result.messages[1]["content_items"][0] == {"type": "tool_result", "tool_call_id": "call_1",
                                                      "text": "a\ufffdb"}
    assert follow_up[-1] == {"role": "tool", "tool_call_id": "call_1", "content": "a\ufffdb"}
