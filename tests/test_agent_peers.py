"""agenthub's runner beside anthropic's tool_runner (the SDK's own loop), against the same local server and
the same scripted turns: the request sequences are compared (docs/agent-runner-peers.md writes down each
difference).  Skipped without the anthropic SDK (it is in the 3.13 test venv)."""


import json

import pytest

from agent_streams import anthropic_calls, anthropic_text
from sse_server import Answer, SSEServer

from agenthub import AutoLLMClient, tool

anthropic = pytest.importorskip("anthropic")
beta_tool = pytest.importorskip("anthropic").beta_tool

CALLS = [("call_1", "get_weather", '{"city": "Paris"}'), ("call_2", "boom", '{"x": 1}'),
         ("call_3", "get_weather", '{"city": "Rome"}')]
QUESTION = "Weather in Paris and Rome?"


def get_weather(city: str) -> str:
    """Current weather in a city.

    Args:
        city: The city's name.
    """
    return {"Paris": "18 C, sunny", "Rome": "24 C, clear"}.get(city, "unknown")


def boom(x: int) -> str:
    """Fails."""
    raise ValueError("bad x")


def _answers(server):
    server.answers += [Answer([anthropic_calls(CALLS)]), Answer([anthropic_text("ok")])]


def _sdk_requests():
    with SSEServer() as server:
        _answers(server)
        client = anthropic.Anthropic(api_key="sk-ant-peer", base_url=server.url, max_retries=0)
        runner = client.beta.messages.tool_runner(
            model="claude-sonnet-4-6", max_tokens=1000, tools=[beta_tool(get_weather), beta_tool(boom)],
            messages=[{"role": "user", "content": QUESTION}], stream=True, thread=False)
        for stream in runner:
            for _ in stream:
                pass
        client.close()
        return [r["body"] for r in server.requests]


def _agenthub_requests():
    with SSEServer() as server:
        _answers(server)
        client = AutoLLMClient("claude-sonnet-4-6", api_key="sk-ant-peer", base_url=server.url,
                               client_type="anthropic", max_retries=0)
        question = {"role": "user", "content_items": [{"type": "text", "text": QUESTION}]}
        client.run([question], {"max_tokens": 1000}, tools=[tool(get_weather), tool(boom)]).result()
        return [r["body"] for r in server.requests]


def test_the_same_request_sequence_as_anthropics_tool_runner(caplog):
    sdk, ours = _sdk_requests(), _agenthub_requests()
    assert len(sdk) == len(ours) == 2
    # same placement: the assistant turn as it came, then ONE user message with every tool_result in call
    # order and the exact tool_use ids; the failing call marked is_error
    assert [m["role"] for m in sdk[1]["messages"]] == [m["role"] for m in ours[1]["messages"]] == \
        ["user", "assistant", "user"]
    assert sdk[1]["messages"][1]["content"] == ours[1]["messages"][1]["content"]
    sdk_results, our_results = sdk[1]["messages"][2]["content"], ours[1]["messages"][2]["content"]
    assert [(r["tool_use_id"], r.get("is_error", False)) for r in sdk_results] == \
        [(r["tool_use_id"], r.get("is_error", False)) for r in our_results] == \
        [("call_1", False), ("call_2", True), ("call_3", False)]
    # the differences docs/agent-runner-peers.md explains
    assert sdk_results[1]["content"] == "ValueError('bad x')"  # repr of the exception (and a traceback logged)
    assert our_results[1]["content"] == "ValueError: bad x"   # type and text, nothing else
    assert [r["content"] for r in sdk_results[::2]] == [r["content"] for r in our_results[::2]]
    sdk_schema = {t["name"]: t["input_schema"] for t in sdk[0]["tools"]}
    our_schema = {t["name"]: t["input_schema"] for t in ours[0]["tools"]}
    assert sdk_schema["boom"] == {"additionalProperties": False, "properties": {"x": {"title": "X", "type": "integer"}},
                                  "required": ["x"], "type": "object"}
    assert our_schema["boom"] == {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}
    assert sdk[0]["messages"][0] == {"role": "user", "content": QUESTION}
    assert ours[0]["messages"][0] == {"role": "user", "content": [{"type": "text", "text": QUESTION}]}


def test_the_same_request_sequence_as_google_genai_automatic_function_calling():
    genai = pytest.importorskip("google.genai")
    from google.genai import types as genai_types

    from agent_streams import gemini_calls, gemini_text

    def document(parts):
        return json.dumps({"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP",
                                           "index": 0}],
                           "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5}}).encode()

    calls = [{"functionCall": {"id": call_id, "name": name, "args": json.loads(args)}} for call_id, name, args in CALLS]
    with SSEServer() as server:
        headers = {"Content-Type": "application/json"}
        server.answers += [Answer([document(calls)], headers=headers), Answer([document([{"text": "ok"}])],
                                                                             headers=headers)]
        client = genai.Client(api_key="k-genai-peer", http_options=genai_types.HttpOptions(base_url=server.url))
        client.models.generate_content(model="gemini-2.5-flash", contents=QUESTION,
                                       config=genai_types.GenerateContentConfig(tools=[get_weather, boom]))
        sdk = [r["body"] for r in server.requests]
    with SSEServer() as server:
        server.answers += [Answer([gemini_calls(CALLS)]), Answer([gemini_text("ok")])]
        client = AutoLLMClient("gemini-2.5-flash", api_key="k-genai-peer", base_url=server.url, client_type="gemini")
        question = {"role": "user", "content_items": [{"type": "text", "text": QUESTION}]}
        client.run([question], tools=[tool(get_weather), tool(boom)]).result()
        ours = [r["body"] for r in server.requests]
    assert len(sdk) == len(ours) == 2
    assert [c["role"] for c in sdk[1]["contents"]] == [c["role"] for c in ours[1]["contents"]] == \
        ["user", "model", "user"]
    sdk_responses = [p["functionResponse"] for p in sdk[1]["contents"][2]["parts"]]
    our_responses = [p["functionResponse"] for p in ours[1]["contents"][2]["parts"]]
    assert [r["name"] for r in sdk_responses] == [r["name"] for r in our_responses] == \
        ["get_weather", "boom", "get_weather"]  # one user turn, call order
    # the differences docs/agent-runner-peers.md explains
    assert [r.get("id") for r in sdk_responses] == [None, None, None]  # the SDK drops the call ids
    assert [r["id"] for r in our_responses] == ["call_1", "call_2", "call_3"]
    assert sdk_responses[1]["response"] == {"error": "Failed to invoke function boom with converted arguments "
                                                     "{'x': 1} from model returned function call argument {'x': 1} "
                                                     "because of error bad x"}
    assert our_responses[1]["response"] == {"error": "ValueError: bad x"}
    sdk_tool = sdk[0]["tools"][0]["functionDeclarations"][0]
    our_tool = ours[0]["tools"][0]["functionDeclarations"][0]
    assert sdk_tool["description"] == "Current weather in a city.\n\nArgs:\n    city: The city's name."
    assert our_tool["description"] == "Current weather in a city."
    assert our_tool["parametersJsonSchema"]["properties"]["city"] == {"type": "string",
                                                                      "description": "The city's name."}


def test_the_same_request_sequence_as_openai_agents_runner():
    pytest.importorskip("agents")
    from agents import (Agent, Runner, function_tool, set_default_openai_api, set_default_openai_client,
                        set_tracing_disabled)
    from openai import AsyncOpenAI

    from agent_streams import chat_calls, chat_text

    def completion(message, finish):
        return json.dumps({"id": "cc1", "object": "chat.completion", "created": 1, "model": "gpt-4o-mini",
                           "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                           "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}).encode()

    calls = [{"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}
             for call_id, name, args in CALLS]
    with SSEServer() as server:
        headers = {"Content-Type": "application/json"}
        server.answers += [
            Answer([completion({"role": "assistant", "content": None, "tool_calls": calls}, "tool_calls")],
                   headers=headers),
            Answer([completion({"role": "assistant", "content": "ok"}, "stop")], headers=headers)]
        set_tracing_disabled(True)
        set_default_openai_api("chat_completions")
        sdk_client = AsyncOpenAI(base_url=server.url + "/v1", api_key="k-agents-peer", max_retries=0)
        set_default_openai_client(sdk_client)
        agent = Agent(name="peer", tools=[function_tool(get_weather), function_tool(boom)], model="gpt-4o-mini")
        try:
            assert Runner.run_sync(agent, QUESTION).final_output == "ok"
        finally:  # run_sync ran on this thread's default loop and left it open: its client, executor and loop closed
            import asyncio

            loop = asyncio.get_event_loop_policy().get_event_loop()
            loop.run_until_complete(sdk_client.close())
            loop.run_until_complete(loop.shutdown_default_executor())
            loop.close()
            asyncio.set_event_loop(None)
        sdk = [r["body"] for r in server.requests]
    with SSEServer() as server:
        server.answers += [Answer([chat_calls(CALLS)]), Answer([chat_text("ok")])]
        client = AutoLLMClient("gpt-4o-mini", api_key="k-agents-peer", base_url=server.url + "/v1",
                               client_type="openai-chat", max_retries=0)
        question = {"role": "user", "content_items": [{"type": "text", "text": QUESTION}]}
        client.run([question], tools=[tool(get_weather), tool(boom)]).result()
        ours = [r["body"] for r in server.requests]
    assert len(sdk) == len(ours) == 2
    sdk_tail, our_tail = sdk[1]["messages"][1:], ours[1]["messages"][1:]
    assert [m["role"] for m in sdk_tail] == [m["role"] for m in our_tail] == ["assistant", "tool", "tool", "tool"]
    assert [c["id"] for c in sdk_tail[0]["tool_calls"]] == [c["id"] for c in our_tail[0]["tool_calls"]] == \
        ["call_1", "call_2", "call_3"]
    assert [m["tool_call_id"] for m in sdk_tail[1:]] == [m["tool_call_id"] for m in our_tail[1:]]
    assert [sdk_tail[1]["content"], sdk_tail[3]["content"]] == [our_tail[1]["content"], our_tail[3]["content"]]
    # the differences docs/agent-runner-peers.md explains
    assert sdk_tail[2]["content"] == "An error occurred while running the tool. Please try again."
    assert our_tail[2]["content"] == "ValueError: bad x"
    sdk_tool = sdk[0]["tools"][1]["function"]
    assert sdk_tool["strict"] is True and sdk_tool["parameters"]["additionalProperties"] is False
    assert "strict" not in ours[0]["tools"][1]["function"]
