"""Typed output in a tool run (issue 40 item 6): client.run / run_stateful(..., output=TYPE) against a local
server, per protocol.  Exact request bodies (the schema beside the tools), exact re-ask turns, the re-asks
used up, a refusal, max_turns, the stateful run, a journaled run resumed after its re-ask, and
docs/typed-output.md's "In a tool run" example run as written."""

import dataclasses
import json
import os
import re
import subprocess
import sys

import pytest

from agent_streams import BASES, BUILDERS, _sse, chat_calls, chat_text, responses_calls, responses_text
from doc_sections import section
from sse_server import Answer, SSEServer

from agenthub import (AutoLLMClient, ConfigError, OutputRefusedError, OutputValidationError, UpstreamError,
                      tool)
from agenthub.stores import MemoryStore
from agenthub import ResponseCache

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
USER = {"role": "user", "content_items": [{"type": "text", "text": "Weather in Paris?"}]}
MODELS = {"openai-chat": "gpt-4o-mini", "openai-responses": "gpt-5.5", "anthropic": "claude-sonnet-4-6",
          "gemini": "gemini-2.5-flash"}
CALL = [("call_1", "get_weather", '{"city": "Paris"}')]
VALID = '{"city": "Paris", "celsius": 18}'
INVALID = '{"city": "Paris", "celsius": "18"}'
REASK = ('The answer did not match the required JSON Schema:\n- celsius: expected an integer, got "18"\n'
         'Answer again with the corrected value only.')


@tool
def get_weather(city: str) -> str:
    """Current weather in a city.

    Args:
        city: The city's name.
    """
    return {"Paris": "18 C, sunny"}.get(city, "unknown")


@dataclasses.dataclass
class Report:
    city: str
    celsius: int


def client_for(server, protocol="openai-chat", model=None):
    return AutoLLMClient(model or MODELS[protocol], api_key="sk-test-run-output-0001",
                         base_url=server.url + BASES[protocol], client_type=protocol, max_retries=0)


SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}, "celsius": {"type": "integer"}},
          "required": ["city", "celsius"], "additionalProperties": False}
PARAMS = {"type": "object", "properties": {"city": {"type": "string", "description": "The city's name."}},
          "required": ["city"]}
DESCRIPTION = "Current weather in a city."

#: the first request of a run with output=Report and tools=[get_weather]: the schema beside the tools
FIRST_BODY = {
    "openai-chat": {
        "model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Weather in Paris?"}], "stream": True,
        "stream_options": {"include_usage": True},
        "response_format": {"type": "json_schema", "json_schema": {"name": "output", "schema": SCHEMA, "strict": True}},
        "tools": [{"type": "function", "function": {"name": "get_weather", "description": DESCRIPTION,
                                                    "parameters": PARAMS}}]},
    "openai-responses": {
        "model": "gpt-5.5",
        "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Weather in Paris?"}]}],
        "stream": True, "store": False, "include": ["reasoning.encrypted_content"],
        "text": {"format": {"type": "json_schema", "name": "output", "schema": SCHEMA, "strict": True}},
        "tools": [{"type": "function", "name": "get_weather", "description": DESCRIPTION, "parameters": PARAMS,
                   "strict": False}]},
    "anthropic": {
        "model": "claude-sonnet-4-6", "max_tokens": 32000,
        "messages": [{"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"}]}],
        "tools": [{"name": "get_weather", "description": DESCRIPTION, "input_schema": PARAMS}],
        "output_config": {"format": {"type": "json_schema", "schema": SCHEMA}},
        "cache_control": {"type": "ephemeral"}, "stream": True},
    "gemini": {
        "contents": [{"role": "user", "parts": [{"text": "Weather in Paris?"}]}],
        "tools": [{"functionDeclarations": [{"name": "get_weather", "description": DESCRIPTION,
                                             "parametersJsonSchema": PARAMS}]}],
        "generationConfig": {"responseMimeType": "application/json", "responseJsonSchema": SCHEMA}},
}
#: where each wire's request keeps its conversation
CONVERSATION = {"openai-chat": "messages", "openai-responses": "input", "anthropic": "messages", "gemini": "contents"}
#: the invalid answer and the re-ask as each wire carries them (the end of the request after the re-ask)
REASK_WIRE = {
    "openai-chat": [{"role": "assistant", "content": INVALID}, {"role": "user", "content": REASK}],
    "openai-responses": [
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": INVALID, "annotations": []}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": REASK}]}],
    "anthropic": [{"role": "assistant", "content": [{"type": "text", "text": INVALID}]},
                  {"role": "user", "content": [{"type": "text", "text": REASK}]}],
    "gemini": [{"role": "model", "parts": [{"text": INVALID}]}, {"role": "user", "parts": [{"text": REASK}]}],
}


def kinds(events):
    return [(e["role"], e["event_type"]) + tuple(i["type"] for i in e["content_items"]) for e in events]


def reask_message():
    return {"role": "user", "content_items": [{"type": "text", "text": REASK}]}


@pytest.mark.parametrize("protocol", sorted(BUILDERS))
def test_a_tool_call_then_a_valid_answer_the_schema_beside_the_tools(protocol):
    calls, text = BUILDERS[protocol]
    with SSEServer() as server:
        server.answers += [Answer([calls(CALL)]), Answer([text(VALID)])]
        run = client_for(server, protocol).run([USER], tools=[get_weather], output=Report)
        events = list(run)
        result = run.result()
    assert server.requests[0]["body"] == FIRST_BODY[protocol]
    # every turn goes out with the schema and the tools: the second request differs in its conversation alone
    key = CONVERSATION[protocol]
    second = dict(server.requests[1]["body"])
    assert len(second.pop(key)) == 3
    assert second == {k: v for k, v in FIRST_BODY[protocol].items() if k != key}
    assert result.stop == "done"
    assert result.output == Report(city="Paris", celsius=18)
    assert result.output_json == {"city": "Paris", "celsius": 18}
    assert result.turns == 2 and result.pending == []
    assert result.final["content_items"][0]["text"] == VALID
    assert [m["role"] for m in result.messages] == ["assistant", "user", "assistant"]
    assert [k for k in kinds(events) if k[0] == "user"] == [("user", "delta", "tool_result")]


@pytest.mark.parametrize("protocol", sorted(BUILDERS))
def test_an_invalid_answer_is_asked_again_in_the_same_loop(protocol):
    calls, text = BUILDERS[protocol]
    with SSEServer() as server:
        server.answers += [Answer([calls(CALL)]), Answer([text(INVALID)]), Answer([text(VALID)])]
        run = client_for(server, protocol).run([USER], tools=[get_weather], output=Report)
        events = list(run)
        result = run.result()
    assert len(server.requests) == 3
    third = server.requests[2]["body"]
    assert third[CONVERSATION[protocol]][-2:] == REASK_WIRE[protocol]
    assert {k: v for k, v in third.items() if k != CONVERSATION[protocol]} == \
        {k: v for k, v in FIRST_BODY[protocol].items() if k != CONVERSATION[protocol]}
    assert result.stop == "done" and result.turns == 3
    assert result.output == Report(city="Paris", celsius=18)
    # the invalid answer stays in the conversation, the re-ask is the next user turn, then the answer
    assert result.messages[2]["content_items"][0]["text"] == INVALID
    assert result.messages[3] == reask_message()
    assert result.messages[4]["content_items"][0]["text"] == VALID
    # the re-ask shows as one user event between the second turn's stop and the third turn's start
    user_events = [e for e in events if e["role"] == "user"]
    assert [{k: v for k, v in e.items() if k != "created_at"} for e in user_events][1] == {
        "role": "user", "event_type": "delta", "content_items": [{"type": "text", "text": REASK}],
        "usage_metadata": None, "finish_reason": None}


@pytest.mark.parametrize("stateful", [False, True])
def test_an_invalid_answer_of_a_run_is_not_kept_by_the_response_cache(stateful):
    # the tool call and the valid answer are kept; the invalid one is not, so the same run again asks for it
    cache = ResponseCache(MemoryStore())
    with SSEServer() as server:
        server.answers += [Answer([chat_calls(CALL)]), Answer([chat_text(INVALID)]), Answer([chat_text(VALID)]),
                           Answer([chat_text(VALID)])]
        client = AutoLLMClient(MODELS["openai-chat"], api_key="sk-test-run-output-0001", cache=cache,
                               base_url=server.url + BASES["openai-chat"], client_type="openai-chat", max_retries=0)
        start = (lambda: client.run_stateful(USER, tools=[get_weather], output=Report)) if stateful else \
            (lambda: client.run([USER], tools=[get_weather], output=Report))
        first = start()
        assert (first.result().turns, cache.stored) == (3, 2)
        if stateful:
            client.clear_history()
        again = start()
        result = again.result()
    assert (result.output, result.turns, len(server.requests)) == (Report(city="Paris", celsius=18), 2, 4)
    assert (cache.hits, cache.stored) == (1, 3)


def test_the_whole_request_after_a_reask_openai_chat():
    with SSEServer() as server:
        server.answers += [Answer([chat_calls(CALL)]), Answer([chat_text(INVALID)]), Answer([chat_text(VALID)])]
        client_for(server).run([USER], tools=[get_weather], output=Report).result()
    assert server.requests[2]["body"]["messages"] == [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "18 C, sunny"},
        {"role": "assistant", "content": INVALID},
        {"role": "user", "content": REASK}]


def test_the_reasks_used_up_raise_output_validation_error_with_the_messages_kept():
    with SSEServer() as server:
        server.answers += [Answer([chat_calls(CALL)]), Answer([chat_text(INVALID)]),
                           Answer([chat_text('{"city": "Paris"}')])]
        run = client_for(server).run([USER], tools=[get_weather], output=Report, output_retries=1)
        with pytest.raises(OutputValidationError) as caught:
            run.result()
    assert len(server.requests) == 3  # nothing more is sent
    error = caught.value
    assert error.attempts == 2
    assert error.problems == [['celsius: expected an integer, got "18"'], ["missing required field 'celsius'"]]
    assert error.candidate_text == '{"city": "Paris"}'
    assert error.candidate_json == {"city": "Paris"}
    # the run's usage so far: the tool turn's (10, 5) and two answers' (20, 3)
    assert error.usage_metadata == run.usage_metadata
    assert error.usage_metadata["prompt_tokens"] == 50 and error.usage_metadata["response_tokens"] == 11
    assert str(error).startswith("the answer did not validate as Report after 2 attempt(s): missing required field 'celsius'")
    assert [m["role"] for m in run.messages] == ["assistant", "user", "assistant", "user", "assistant"]
    assert run.messages[3] == reask_message()
    assert run.stop is None  # it raised: no stop (as when a model call raises)


def test_output_retries_zero_raises_at_the_first_invalid_answer():
    with SSEServer() as server:
        server.answers += [Answer([chat_text("not json")])]
        run = client_for(server).run([USER], tools=[get_weather], output=Report, output_retries=0)
        with pytest.raises(OutputValidationError) as caught:
            run.result()
    assert len(server.requests) == 1
    assert caught.value.attempts == 1 and caught.value.candidate_json is None
    assert len(run.messages) == 1


def test_a_reask_counts_toward_max_turns():
    with SSEServer() as server:
        server.answers += [Answer([chat_calls(CALL)]), Answer([chat_text(INVALID)])]
        result = client_for(server).run([USER], tools=[get_weather], output=Report, max_turns=2).result()
    assert len(server.requests) == 2  # the re-ask would have been a third turn: not sent
    assert result.stop == "max_turns" and result.pending == [] and result.turns == 2
    assert result.output is None and result.output_json is None
    assert result.messages[-1] == reask_message()  # resuming with messages + result.messages sends it


def test_a_refusal_raises_output_refused_error_and_is_not_asked_again():
    refusal = _sse([
        {"id": "c3", "choices": [{"index": 0, "delta": {"refusal": "I can't help with that."}, "finish_reason": None}]},
        {"id": "c3", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        {"id": "c3", "choices": [], "usage": {"prompt_tokens": 20, "completion_tokens": 3}}]) + b"data: [DONE]\n\n"
    with SSEServer() as server:
        server.answers += [Answer([chat_calls(CALL)]), Answer([refusal]), Answer([chat_text(VALID)])]
        run = client_for(server).run([USER], tools=[get_weather], output=Report)
        with pytest.raises(OutputRefusedError) as caught:
            run.result()
    assert len(server.requests) == 2
    assert caught.value.refusal == "I can't help with that."
    assert caught.value.attempts == 1 and caught.value.finish_reason == "stop"
    assert [m["role"] for m in run.messages] == ["assistant", "user", "assistant"]


def test_a_model_without_structured_outputs_gets_the_schema_in_the_system_prompt_never_a_forced_tool():
    instructions = ("Answer with a single JSON value that matches this JSON Schema, and nothing else:\n"
                    '{"properties": {"celsius": {"type": "integer"}, "city": {"type": "string"}}, '
                    '"required": ["city", "celsius"], "type": "object"}')
    _, text = BUILDERS["anthropic"]
    with SSEServer() as server:
        server.answers += [Answer([text("Here it is: " + VALID)]), Answer([text(VALID)])]
        with_tools = client_for(server, "anthropic", "claude-sonnet-4-0").run(
            [USER], tools=[get_weather], output=Report).result()
        without = client_for(server, "anthropic", "claude-sonnet-4-0").run([USER], tools=[], output=Report).result()
    assert server.requests[0]["body"] == {
        "model": "claude-sonnet-4-0", "max_tokens": 32000, "system": instructions,
        "messages": [{"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"}]}],
        "tools": [{"name": "get_weather", "description": DESCRIPTION, "input_schema": PARAMS}],
        "cache_control": {"type": "ephemeral"}, "stream": True}
    # no tools of the run's own: still the system prompt, never the forced tool `output` (a call the run lacks)
    assert server.requests[1]["body"] == {
        "model": "claude-sonnet-4-0", "max_tokens": 32000, "system": instructions,
        "messages": [{"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"}]}],
        "cache_control": {"type": "ephemeral"}, "stream": True}
    assert with_tools.output == without.output == Report(city="Paris", celsius=18)


def test_output_is_checked_before_anything_is_sent():
    with SSEServer() as server:
        client = client_for(server)
        with pytest.raises(ConfigError, match=r"config\['response_format'\] is set by run\(output=...\)"):
            client.run([USER], {"response_format": {"type": "json_object"}}, tools=[get_weather], output=Report)
        for bad in (-1, 11, True, "2"):
            with pytest.raises(ConfigError, match="output_retries must be an int from 0 to 10"):
                client.run([USER], tools=[get_weather], output=Report, output_retries=bad)
        with pytest.raises(ConfigError):
            client.run([USER], tools=[get_weather], output=object)
        with pytest.raises(ConfigError, match="output_retries"):
            client.run_stateful(USER, tools=[get_weather], output=Report, output_retries=-1)
        # without output, config's response_format goes out as before
        server.answers += [Answer([chat_text(VALID)])]
        result = client.run([USER], {"response_format": {"type": "json_object"}}, tools=[get_weather]).result()
    assert [r["body"]["response_format"] for r in server.requests] == [{"type": "json_object"}]
    assert result.output is None and result.output_json is None and result.stop == "done"


def test_run_stateful_with_output():
    with SSEServer() as server:
        server.answers += [Answer([chat_calls(CALL)]), Answer([chat_text(INVALID)]), Answer([chat_text(VALID)])]
        client = client_for(server)
        result = client.run_stateful(USER, tools=[get_weather], output=Report).result()
        history = client.get_history()
    assert result.stop == "done" and result.output == Report(city="Paris", celsius=18) and result.turns == 3
    assert [(m["role"], m["content_items"][0]["type"]) for m in history] == [
        ("user", "text"), ("assistant", "tool_call"), ("user", "tool_result"), ("assistant", "text"),
        ("user", "text"), ("assistant", "text")]
    assert history[4]["content_items"] == [{"type": "text", "text": REASK}]
    assert result.messages[3] == reask_message()
    assert server.requests[2]["body"]["messages"][-2:] == REASK_WIRE["openai-chat"]
    assert server.requests[2]["body"]["response_format"] == FIRST_BODY["openai-chat"]["response_format"]


def test_run_stateful_whose_reask_failed_leaves_the_history_at_the_invalid_answer():
    with SSEServer() as server:
        server.answers += [Answer([chat_text(INVALID)]),
                           Answer([b'{"error": {"message": "down"}}'], status=500,
                                  headers={"Content-Type": "application/json"})]
        client = client_for(server)
        run = client.run_stateful(USER, tools=[get_weather], output=Report)
        with pytest.raises(UpstreamError):
            run.result()
        history = client.get_history()
    assert [m["role"] for m in history] == ["user", "assistant"]  # the re-ask goes in with its answer
    assert history[-1]["content_items"][0]["text"] == INVALID
    assert run.messages[-1] == reask_message()


def test_run_stateful_at_max_turns_resumes_by_sending_the_reask():
    with SSEServer() as server:
        server.answers += [Answer([chat_text(INVALID)]), Answer([chat_text(VALID)])]
        client = client_for(server)
        stopped = client.run_stateful(USER, tools=[get_weather], output=Report, max_turns=1).result()
        assert [m["role"] for m in client.get_history()] == ["user", "assistant"]
        assert stopped.stop == "max_turns" and stopped.messages[-1] == reask_message()
        resumed = client.run_stateful(stopped.messages[-1], tools=[get_weather], output=Report).result()
    assert resumed.stop == "done" and resumed.output == Report(city="Paris", celsius=18)
    assert server.requests[1]["body"]["messages"][-2:] == REASK_WIRE["openai-chat"]
    assert [m["role"] for m in client.get_history()] == ["user", "assistant", "user", "assistant"]


def plain(messages):
    return [{k: v for k, v in m.items() if k != "created_at"} for m in messages]


def test_a_journaled_stateful_run_replays_its_reask_into_a_new_clients_history():
    store = MemoryStore()
    with SSEServer() as server:
        server.answers += [Answer([chat_calls(CALL)]), Answer([chat_text(INVALID)]), Answer([chat_text(VALID)])]
        first_client = client_for(server)
        first = first_client.run_stateful(USER, tools=[get_weather], output=Report, journal=store,
                                          run_id="w-s").result()
        fresh = client_for(server)  # another process would start with an empty history too
        again = fresh.run_stateful(USER, tools=[get_weather], output=Report, journal=store, run_id="w-s").result()
    assert len(server.requests) == 3
    assert (first.stop, again.stop, again.replayed_turns) == ("done", "done", 3)
    assert again.output == first.output == Report(city="Paris", celsius=18)
    assert plain(fresh.get_history()) == plain(first_client.get_history())
    assert plain(fresh.get_history())[4] == reask_message()


def test_a_journaled_run_replays_its_reask_and_goes_on_live():
    store = MemoryStore()
    with SSEServer() as server:
        server.answers += [Answer([responses_calls(CALL)]), Answer([responses_text(INVALID)]),
                           Answer([b'{"error": {"message": "down"}}'], status=500,
                                  headers={"Content-Type": "application/json"})]
        first = client_for(server, "openai-responses").run([USER], tools=[get_weather], output=Report,
                                                            journal=store, run_id="weather-1")
        with pytest.raises(UpstreamError):
            first.result()
        assert len(server.requests) == 3
        server.answers += [Answer([responses_text(VALID)])]
        again = client_for(server, "openai-responses").run([USER], tools=[get_weather], output=Report,
                                                            journal=store, run_id="weather-1")
        events = list(again)
        result = again.result()
        assert len(server.requests) == 4  # the two journaled turns were not sent again
        # the replayed invalid answer was judged again (no network): the same re-ask went out
        assert server.requests[3]["body"] == server.requests[2]["body"]
        assert server.requests[3]["body"]["input"][-2:] == REASK_WIRE["openai-responses"]
        assert result.stop == "done" and result.output == Report(city="Paris", celsius=18)
        assert result.replayed_turns == 2 and result.replayed_results == 1 and result.turns == 3
        assert [e.get("replayed", False) for e in events if e["role"] == "user"] == [True, True]
        # a finished run again: everything replayed, judged the same, nothing sent
        done = client_for(server, "openai-responses").run([USER], tools=[get_weather], output=Report,
                                                           journal=store, run_id="weather-1").result()
        assert len(server.requests) == 4
    assert done.output == result.output and done.output_json == {"city": "Paris", "celsius": 18}
    assert done.replayed_turns == 3 and done.messages == result.messages


def test_a_journal_of_a_run_without_output_is_another_run():
    from agenthub.agent import JournalError

    store = MemoryStore()
    with SSEServer() as server:
        server.answers += [Answer([chat_text(VALID)])]
        client_for(server).run([USER], tools=[get_weather], journal=store, run_id="r-1").result()
        with pytest.raises(JournalError) as caught:
            client_for(server).run([USER], tools=[get_weather], output=Report, journal=store, run_id="r-1")
    assert caught.value.reason == "mismatch"


# -- docs/typed-output.md "In a tool run" -------------------------------------------------------------------------
def test_the_tool_run_example_runs_as_written():
    (code,) = re.findall(r"```python\n(.*?)```", section("In a tool run", "docs/typed-output.md"), re.S)
    with SSEServer() as server:
        server.answers += [Answer([responses_calls([("call_1", "get_weather", '{"city": "Paris"}')])]),
                           Answer([responses_text('{"city": "Paris", "celsius": "18", "sunny": true}')]),
                           Answer([responses_text('{"city": "Paris", "celsius": 18, "sunny": true}')])]
        env = dict(os.environ, PYTHONPATH=ROOT, OPENAI_API_KEY="sk-docs-typed-output-0001",
                   OPENAI_BASE_URL=server.url + "/v1")
        done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "done 3",
        "Report(city='Paris', celsius=18, sunny=True)",
        "18",
    ]
    assert [r["path"] for r in server.requests] == ["/v1/responses"] * 3
    body = server.requests[0]["body"]
    assert body["text"]["format"]["name"] == "output" and [t["name"] for t in body["tools"]] == ["get_weather"]
