"""The tool runner (issue 30): client.run / run_stateful against a local server, per protocol.

Exact events (created_at left out) and exact follow-up request bodies: where the tool results go, their
ids, one message for a turn's parallel results.  No timed assertions: order and concurrency are forced
with events, never with sleeps.
"""

import json
import os
import subprocess
import sys
import contextvars
import threading
import time

import pytest

from agent_streams import BASES, BUILDERS, chat_calls, chat_text
from sse_server import Answer, SSEServer

import agenthub
from agenthub import AutoLLMClient, ConfigError, RunResult, UpstreamError, tool
from agenthub.testing import record_session, replay_session

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
USER = {"role": "user", "content_items": [{"type": "text", "text": "Weather in Paris and Rome?"}]}
MODELS = {"openai-chat": "gpt-4o-mini", "openai-responses": "gpt-5.5", "anthropic": "claude-sonnet-4-6",
          "gemini": "gemini-2.5-flash"}


@tool
def get_weather(city: str) -> str:
    """Current weather in a city.

    Args:
        city: The city's name.
    """
    return {"Paris": "18 C, sunny", "Rome": "24 C, clear"}.get(city, "unknown")


def client_for(server, protocol="openai-chat", **kwargs):
    return AutoLLMClient(MODELS[protocol], api_key="sk-test-runner-0001", base_url=server.url + BASES[protocol],
                         client_type=protocol, max_retries=kwargs.pop("max_retries", 0), **kwargs)


def plain(events):
    """The events without created_at (the one field a run does not fix)."""
    return [{k: v for k, v in event.items() if k != "created_at"} for event in events]


def result_event(call_id, text, is_error=False):
    item = {"type": "tool_result", "tool_call_id": call_id, "text": text}
    if is_error:
        item["is_error"] = True
    return {"role": "user", "event_type": "delta", "content_items": [item], "usage_metadata": None,
            "finish_reason": None}


def kinds(events):
    return [(e["role"], e["event_type"]) + tuple(i["type"] for i in e["content_items"]) for e in events]


TWO_CALLS = [("call_1", "get_weather", '{"city": "Paris"}'), ("call_2", "get_weather", '{"city": "Rome"}')]

#: the second request's messages, as each wire carries the first turn's two calls and their results
FOLLOW_UP = {
    "openai-chat": lambda body: body["messages"][1:],
    "openai-responses": lambda body: body["input"][1:],
    "anthropic": lambda body: body["messages"][1:],
    "gemini": lambda body: body["contents"][1:],
}
EXPECTED_FOLLOW_UP = {
    "openai-chat": [
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'}},
            {"id": "call_2", "type": "function", "function": {"name": "get_weather", "arguments": '{"city":"Rome"}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "18 C, sunny"},
        {"role": "tool", "tool_call_id": "call_2", "content": "24 C, clear"}],
    "openai-responses": [
        {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": '{"city":"Paris"}'},
        {"type": "function_call", "call_id": "call_2", "name": "get_weather", "arguments": '{"city":"Rome"}'},
        {"type": "function_call_output", "call_id": "call_1", "output": "18 C, sunny"},
        {"type": "function_call_output", "call_id": "call_2", "output": "24 C, clear"}],
    "anthropic": [
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "call_1", "name": "get_weather", "input": {"city": "Paris"}},
            {"type": "tool_use", "id": "call_2", "name": "get_weather", "input": {"city": "Rome"}}]},
        {"role": "user", "content": [  # one user message holds both results, in call order
            {"type": "tool_result", "tool_use_id": "call_1", "content": "18 C, sunny"},
            {"type": "tool_result", "tool_use_id": "call_2", "content": "24 C, clear"}]}],
    "gemini": [
        {"role": "model", "parts": [
            {"functionCall": {"id": "call_1", "name": "get_weather", "args": {"city": "Paris"}}},
            {"functionCall": {"id": "call_2", "name": "get_weather", "args": {"city": "Rome"}}}]},
        {"role": "user", "parts": [
            {"functionResponse": {"name": "get_weather", "id": "call_1", "response": {"result": "18 C, sunny"}}},
            {"functionResponse": {"name": "get_weather", "id": "call_2", "response": {"result": "24 C, clear"}}}]}],
}


@pytest.mark.parametrize("protocol", sorted(BUILDERS))
def test_two_parallel_calls_then_an_answer(protocol):
    calls, text = BUILDERS[protocol]
    with SSEServer() as server:
        server.answers += [Answer([calls(TWO_CALLS)]), Answer([text("Sunny in Paris, clear in Rome.")])]
        client = client_for(server, protocol)
        run = client.run([USER], tools=[get_weather])
        events = list(run)
        result = run.result()
    # the model turns' events are streaming_response's own: replayed alone, they fold to the same messages
    first = events[:events.index(next(e for e in events if e["event_type"] == "stop")) + 1]
    assert agenthub.collect(first) == result.messages[0]
    agenthub.check_stream(first)
    assert kinds(events) == [
        ("assistant", "start"),
        ("assistant", "delta", "partial_tool_call"), ("assistant", "delta", "partial_tool_call"),
        ("assistant", "delta", "tool_call"),
        ("assistant", "delta", "partial_tool_call"), ("assistant", "delta", "partial_tool_call"),
        ("assistant", "delta", "tool_call"),
        ("assistant", "stop"),
        ("user", "delta", "tool_result"), ("user", "delta", "tool_result"),
        ("assistant", "start"), ("assistant", "delta", "text"), ("assistant", "stop")]
    assert plain(events[8:10]) == [result_event("call_1", "18 C, sunny"), result_event("call_2", "24 C, clear")]
    assert len(server.requests) == 2
    assert FOLLOW_UP[protocol](server.requests[1]["body"]) == EXPECTED_FOLLOW_UP[protocol]
    assert result.stop == "done" and result.turns == 2 and result.pending == []
    assert result.final == result.messages[-1]
    assert result.final["content_items"] == [{"type": "text", "text": "Sunny in Paris, clear in Rome."}]
    assert [m["role"] for m in result.messages] == ["assistant", "user", "assistant"]
    assert result.messages[1] == {"role": "user", "content_items": [
        {"type": "tool_result", "tool_call_id": "call_1", "text": "18 C, sunny"},
        {"type": "tool_result", "tool_call_id": "call_2", "text": "24 C, clear"}]}
    assert result.usage_metadata == {"cached_tokens": None, "prompt_tokens": 30, "thoughts_tokens": None,
                                     "response_tokens": 8}
    usage = [m["usage_metadata"] for m in (result.messages[0], result.messages[2])]
    assert result.cost_usd == pytest.approx(agenthub.cost(MODELS[protocol], usage[0])
                                            + agenthub.cost(MODELS[protocol], usage[1]))
    json.dumps(result.messages)  # JSON-ready as they are


def test_results_go_back_in_call_order_when_the_calls_finish_in_reverse():
    second_done = threading.Event()

    @tool
    def slow(n: int) -> str:
        """Waits for the second call (so the first finishes last)."""
        if n == 1:
            assert second_done.wait(10)
        else:
            second_done.set()
        return "done {}".format(n)

    with SSEServer() as server:
        server.answers += [Answer([chat_calls([("c1", "slow", '{"n": 1}'), ("c2", "slow", '{"n": 2}')])]),
                           Answer([chat_text("ok")])]
        result = client_for(server).run([USER], tools=[slow], parallel=2).result()
    assert result.messages[1]["content_items"] == [
        {"type": "tool_result", "tool_call_id": "c1", "text": "done 1"},
        {"type": "tool_result", "tool_call_id": "c2", "text": "done 2"}]
    assert [m["tool_call_id"] for m in server.requests[1]["body"]["messages"][2:]] == ["c1", "c2"]


def test_a_turns_calls_run_at_once_with_the_default_parallel():
    """Issue 41, item 2: the calls of a turn start on one pool thread one after another and go to threads of
    their own when they take time: four calls that each wait for all four (a barrier) still all return."""
    barrier = threading.Barrier(4, timeout=30)  # a safety net against a hang, not a timing assertion

    @tool
    def meet(n: int) -> str:
        """Wait for the others."""
        barrier.wait()
        return "met {}".format(n)

    calls = [("c{}".format(n), "meet", '{{"n": {}}}'.format(n)) for n in range(4)]
    with SSEServer() as server:
        server.answers += [Answer([chat_calls(calls)]), Answer([chat_text("ok")])]
        result = client_for(server).run([USER], tools=[meet]).result()
    assert [item["text"] for item in result.messages[1]["content_items"]] == ["met 0", "met 1", "met 2", "met 3"]
    assert not barrier.broken


def test_no_more_calls_run_at_once_than_parallel():
    lock = threading.Lock()
    now, most = [0], [0]
    pair = threading.Barrier(2, timeout=30)

    @tool
    def step(n: int) -> str:
        """Count the calls running at once."""
        with lock:
            now[0] += 1
            most[0] = max(most[0], now[0])
        pair.wait()  # two at a time meet here: the run must let two run at once, and no third
        with lock:
            now[0] -= 1
        return str(n)

    calls = [("c{}".format(n), "step", '{{"n": {}}}'.format(n)) for n in range(6)]
    with SSEServer() as server:
        server.answers += [Answer([chat_calls(calls)]), Answer([chat_text("ok")])]
        result = client_for(server).run([USER], tools=[step], parallel=2).result()
    assert [item["text"] for item in result.messages[1]["content_items"]] == [str(n) for n in range(6)]
    assert most[0] == 2 and not pair.broken


def test_the_config_is_checked_once_a_run_and_sent_as_checked(monkeypatch):
    """Issue 41, item 2: the run checks its config (with the tools' schemas) once; its turns go out with the
    config as checked, each request the same as before."""
    import agenthub.agent.runner as runner_module
    import agenthub.client as client_module

    counted = []

    def counting(check):
        def wrapped(config):
            counted.append(check.__module__)
            return check(config)
        return wrapped

    monkeypatch.setattr(client_module, "check_config", counting(client_module.check_config))
    monkeypatch.setattr(runner_module, "check_config", counting(runner_module.check_config))
    config = {"temperature": 0.5, "max_tokens": 100}
    with SSEServer() as server:
        server.answers += [Answer([chat_calls(TWO_CALLS)]), Answer([chat_calls(TWO_CALLS)]), Answer([chat_text("ok")])]
        result = client_for(server).run([USER], config, tools=[get_weather]).result()
        bodies = [request["body"] for request in server.requests]
    assert result.stop == "done" and result.turns == 3
    assert len(counted) == 1  # was 4: the run's own check, then one per turn
    for body in bodies:
        assert (body["temperature"], body["max_completion_tokens"], [t["function"]["name"] for t in body["tools"]]) == (
            0.5, 100, ["get_weather"])  # (max_tokens goes out as max_completion_tokens)


def test_a_subclass_with_its_own_streaming_response_is_called_every_turn():
    turns = []

    class Counting(AutoLLMClient):
        def streaming_response(self, messages, config=None):
            turns.append(len(messages))
            return super(Counting, self).streaming_response(messages, config)

    with SSEServer() as server:
        server.answers += [Answer([chat_calls(TWO_CALLS)]), Answer([chat_text("ok")])]
        client = Counting(MODELS["openai-chat"], api_key="sk-test-runner-0001", base_url=server.url + "/v1",
                          client_type="openai-chat", max_retries=0)
        assert client.run([USER], tools=[get_weather]).result().stop == "done"
    assert turns == [1, 3]


def test_current_call_in_a_run_without_a_journal():
    """current_call() is made when a tool asks (issue 41 item 2: no key is made for a call that does not): the
    call's id, name and arguments, no run_id, a key of its own per call, the same object asked twice."""
    from agenthub.agent import CallContext, current_call

    seen = {}

    @tool
    def where(city: str) -> str:
        """Where."""
        first, again = current_call(), current_call()
        assert first is again
        seen[city] = first
        return city

    with SSEServer() as server:
        server.answers += [Answer([chat_calls([("call_1", "where", '{"city": "Paris"}'),
                                               ("call_2", "where", '{"city": "Rome"}')])]), Answer([chat_text("ok")])]
        client_for(server).run([USER], tools=[where]).result()
    paris, rome = seen["Paris"], seen["Rome"]
    assert isinstance(paris, CallContext) and current_call() is None
    assert (paris.tool_call_id, paris.name, paris.arguments, paris.run_id) == ("call_1", "where", {"city": "Paris"},
                                                                                None)
    assert (rome.tool_call_id, rome.arguments) == ("call_2", {"city": "Rome"})
    assert len(paris.idempotency_key) == 32 and paris.idempotency_key != rome.idempotency_key


def test_a_run_keeps_no_turns_request_and_history_for_its_cost():
    """Issue 41, item 2: what a turn is priced with (its cache mark, when it started) is kept, not the turn's
    Attempt, which holds the whole request and history (a run of N turns kept N of them: O(N^2) objects)."""
    import gc
    import types

    from agenthub.attempts import Attempt

    with SSEServer() as server:
        server.answers += [Answer([chat_calls(TWO_CALLS)]), Answer([chat_calls(TWO_CALLS)]), Answer([chat_text("ok")])]
        client = client_for(server)
        run = client.run([USER], tools=[get_weather])
        result = run.result()
    assert result.turns == 3 and result.cost_usd is not None
    seen, stack, found = set(), [run], []
    while stack:
        obj = stack.pop()
        if id(obj) in seen or obj is client or isinstance(obj, (type, types.ModuleType, types.FunctionType)):
            continue
        seen.add(id(obj))
        if isinstance(obj, Attempt):
            found.append(obj)
        stack.extend(gc.get_referents(obj))
    assert found == []


def test_parallel_one_runs_the_calls_one_by_one_in_the_calling_thread():
    seen = []

    @tool
    def where(n: int) -> str:
        seen.append((n, threading.current_thread() is threading.main_thread()))
        return str(n)

    with SSEServer() as server:
        server.answers += [Answer([chat_calls([("c1", "where", '{"n": 1}'), ("c2", "where", '{"n": 2}')])]),
                           Answer([chat_text("ok")])]
        client_for(server).run([USER], tools=[where], parallel=1).result()
    assert seen == [(1, True), (2, True)]


def test_error_results_and_the_loop_goes_on():
    release = threading.Event()

    @tool
    def boom(x: int) -> str:
        raise RuntimeError("disk full (key sk-test-runner-0001)")

    @tool(timeout=0.05)
    def hang() -> str:
        release.wait(10)
        return "late"

    os.environ["AGENTHUB_TEST_RUNNER_KEY"] = "sk-test-runner-0001"
    calls = [("c1", "boom", '{"x": 1}'), ("c2", "nope", '{}'), ("c3", "boom", '{"x": "one"}'),
             ("c4", "hang", '{}'), ("c5", "get_weather", '{"city": "Paris"}')]
    try:
        with SSEServer() as server:
            server.answers += [Answer([chat_calls(calls)]), Answer([chat_text("ok")])]
            run = client_for(server).run([USER], tools=[boom, hang, get_weather])
            events = list(run)
            result = run.result()
    finally:
        release.set()
        del os.environ["AGENTHUB_TEST_RUNNER_KEY"]
    for thread in threading.enumerate():  # the timed-out tool's thread ran on; released, it ends
        if thread.name.startswith("agenthub-tool-hang"):
            thread.join(5)
            assert not thread.is_alive()
    assert plain([e for e in events if e["role"] == "user"]) == [
        result_event("c1", "RuntimeError: disk full (key ***)", True),
        result_event("c2", "unknown tool 'nope'; the tools are: boom, get_weather, hang", True),
        result_event("c3", "invalid arguments for boom: x must be an integer, got a string", True),
        result_event("c4", "TimeoutError: hang did not return within 0.05 s", True),
        result_event("c5", "18 C, sunny")]
    assert result.stop == "done" and result.turns == 2
    assert [row["is_error"] for row in result.calls] == [True, True, True, True, False]
    assert "sk-test-runner-0001" not in json.dumps(server.requests[1]["body"])


def test_a_call_whose_arguments_do_not_parse_is_an_error_result_and_the_turn_goes_on():
    calls = [("c1", "get_weather", '{"city": "Par'), ("c2", "get_weather", '{"city": "Rome"}')]
    with SSEServer() as server:
        server.answers += [Answer([chat_calls(calls)]), Answer([chat_text("ok")])]
        run = client_for(server).run([USER], tools=[get_weather])
        events = list(run)
        result = run.result()
    assert kinds(events)[:8] == [
        ("assistant", "start"),
        ("assistant", "delta", "partial_tool_call"), ("assistant", "delta", "partial_tool_call"),
        ("assistant", "delta", "tool_call"),
        ("assistant", "delta", "partial_tool_call"), ("assistant", "delta", "partial_tool_call"),
        ("assistant", "delta", "tool_call"), ("assistant", "stop")]
    assert events[3]["content_items"][0] == {"type": "tool_call", "name": "get_weather", "arguments": {},
                                             "tool_call_id": "c1"}
    assert events[7]["finish_reason"] == "tool_call"
    assert plain(events[8:10]) == [
        result_event("c1", "ToolCallArgumentParseError: arguments of tool call 'get_weather' (c1) is not valid "
                           "JSON (Unterminated string starting at: line 1 column 10 (char 9)); raw arguments "
                           "(13 chars): {\"city\": \"Par", True),
        result_event("c2", "24 C, clear")]
    assert result.stop == "done"
    # outside a run, the same stream still raises (the catch is the runner's alone)
    with SSEServer() as server:
        server.answers.append(Answer([chat_calls(calls)]))
        with pytest.raises(agenthub.ToolCallArgumentParseError):
            list(client_for(server).streaming_response([USER]))


def test_max_turns_stops_with_the_calls_pending_and_nothing_more_sent():
    with SSEServer() as server:
        server.answers += [Answer([chat_calls([("c1", "get_weather", '{"city": "Paris"}')])]),
                           Answer([chat_calls([("c2", "get_weather", '{"city": "Rome"}')])])]
        result = client_for(server).run([USER], tools=[get_weather], max_turns=2).result()
        assert len(server.requests) == 2
    assert result.stop == "max_turns" and result.turns == 2
    assert result.pending == [{"type": "tool_call", "name": "get_weather", "arguments": {"city": "Rome"},
                               "tool_call_id": "c2"}]
    assert [m["role"] for m in result.messages] == ["assistant", "user", "assistant"]
    # resumed: the pending call runs, then the next turn
    with SSEServer() as server:
        server.answers.append(Answer([chat_text("ok")]))
        again = client_for(server).run([USER] + result.messages, tools=[get_weather]).result()
        assert server.requests[0]["body"]["messages"][-1] == {"role": "tool", "tool_call_id": "c2",
                                                              "content": "24 C, clear"}
    assert again.stop == "done" and again.turns == 1
    assert again.messages[0] == {"role": "user", "content_items": [
        {"type": "tool_result", "tool_call_id": "c2", "text": "24 C, clear"}]}


@tool(requires_approval=True)
def delete_file(path: str) -> str:
    """Delete a file."""
    return "deleted " + path


def test_requires_approval_without_approve_stops_and_resumes_in_a_new_process(tmp_path):
    calls = [("c1", "delete_file", '{"path": "/tmp/a"}'), ("c2", "get_weather", '{"city": "Paris"}'),
             ("c3", "delete_file", '{"path": "/tmp/b"}')]
    with SSEServer() as server:
        server.answers.append(Answer([chat_calls(calls)]))
        run = client_for(server).run([USER], tools=[delete_file, get_weather])
        events = list(run)
        result = run.result()
        assert len(server.requests) == 1
    assert result.stop == "approval"
    assert [c["tool_call_id"] for c in result.pending] == ["c1", "c3"]
    assert not [e for e in events if e["role"] == "user"]  # nothing of the turn ran
    saved = tmp_path / "run.json"
    saved.write_text(json.dumps([USER] + result.messages))
    script = """
import json, sys
sys.path.insert(0, {here!r})
from agenthub import AutoLLMClient
from test_agent_runner import delete_file, get_weather
client = AutoLLMClient("gpt-4o-mini", api_key="sk-x", base_url=sys.argv[1] + "/v1", client_type="openai-chat")
messages = json.load(open(sys.argv[2]))
result = client.run(messages, tools=[delete_file, get_weather], decisions={{"c1": True, "c3": "not that one"}}).result()
print(json.dumps([result.stop, result.messages[0]]))
""".format(here=HERE)
    with SSEServer() as server:
        server.answers.append(Answer([chat_text("done")]))
        done = subprocess.run([sys.executable, "-c", script, server.url, str(saved)], capture_output=True,
                              text=True, timeout=60, env=dict(os.environ, PYTHONPATH=ROOT + os.pathsep + HERE))
        assert done.returncode == 0, done.stderr
        body = server.requests[0]["body"]
    stop, results = json.loads(done.stdout)
    assert stop == "done"
    assert results == {"role": "user", "content_items": [
        {"type": "tool_result", "tool_call_id": "c1", "text": "deleted /tmp/a"},
        {"type": "tool_result", "tool_call_id": "c2", "text": "18 C, sunny"},
        {"type": "tool_result", "tool_call_id": "c3", "text": "denied: not that one", "is_error": True}]}
    assert body["messages"][2:] == [{"role": "tool", "tool_call_id": "c1", "content": "deleted /tmp/a"},
                                    {"role": "tool", "tool_call_id": "c2", "content": "18 C, sunny"},
                                    {"role": "tool", "tool_call_id": "c3", "content": "denied: not that one"}]


def test_approve_is_asked_for_every_call_in_order():
    asked = []

    def approve(call):
        asked.append(call["tool_call_id"])
        return {"c1": True, "c2": False, "c3": "too far", "c4": {"arguments": {"city": "Rome"}}}[call["tool_call_id"]]

    calls = [("c1", "get_weather", '{"city": "Paris"}'), ("c2", "delete_file", '{"path": "x"}'),
             ("c3", "get_weather", '{"city": "Oslo"}'), ("c4", "get_weather", '{"city": "Nice"}')]
    with SSEServer() as server:
        server.answers += [Answer([chat_calls(calls)]), Answer([chat_text("ok")])]
        result = client_for(server).run([USER], tools=[get_weather, delete_file], approve=approve).result()
    assert asked == ["c1", "c2", "c3", "c4"]
    assert result.messages[1]["content_items"] == [
        {"type": "tool_result", "tool_call_id": "c1", "text": "18 C, sunny"},
        {"type": "tool_result", "tool_call_id": "c2", "text": "denied: the user did not allow this call",
         "is_error": True},
        {"type": "tool_result", "tool_call_id": "c3", "text": "denied: too far", "is_error": True},
        {"type": "tool_result", "tool_call_id": "c4", "text": "24 C, clear"}]


def test_a_plain_tool_schema_comes_back_pending_and_the_caller_answers_it():
    schema = {"name": "ask_user", "description": "Ask the user.", "parameters": {"type": "object"}}
    calls = [("c1", "ask_user", '{"q": "which city?"}'), ("c2", "get_weather", '{"city": "Paris"}')]
    with SSEServer() as server:
        server.answers.append(Answer([chat_calls(calls)]))
        result = client_for(server).run([USER], tools=[schema, get_weather]).result()
    assert result.stop == "approval" and [c["tool_call_id"] for c in result.pending] == ["c1"]
    answer = {"role": "user", "content_items": [{"type": "tool_result", "tool_call_id": "c1", "text": "Paris"}]}
    with SSEServer() as server:
        server.answers.append(Answer([chat_text("ok")]))
        again = client_for(server).run([USER] + result.messages + [answer], tools=[schema, get_weather]).result()
        sent = server.requests[0]["body"]["messages"]
    assert sent[2:] == [{"role": "tool", "tool_call_id": "c1", "content": "Paris"},
                        {"role": "tool", "tool_call_id": "c2", "content": "18 C, sunny"}]
    assert again.messages[0] == {"role": "user", "content_items": [
        {"type": "tool_result", "tool_call_id": "c2", "text": "18 C, sunny"}]}


@pytest.mark.parametrize("protocol", ["anthropic", "gemini"])
def test_a_plain_result_and_the_runners_go_in_one_message(protocol):
    schema = {"name": "ask_user", "parameters": {"type": "object"}}
    calls, text = BUILDERS[protocol]
    first = calls([("c1", "ask_user", "{}"), ("c2", "get_weather", '{"city": "Paris"}')])
    with SSEServer() as server:
        server.answers.append(Answer([first]))
        result = client_for(server, protocol).run([USER], tools=[schema, get_weather]).result()
    answer = {"role": "user", "content_items": [{"type": "tool_result", "tool_call_id": "c1", "text": "Paris"}]}
    with SSEServer() as server:
        server.answers.append(Answer([text("ok")]))
        client_for(server, protocol).run([USER] + result.messages + [answer], tools=[schema, get_weather]).result()
        body = server.requests[0]["body"]
    turns = body["messages"] if protocol == "anthropic" else body["contents"]
    assert len(turns) == 3  # user, assistant, ONE user message with both results
    if protocol == "anthropic":
        assert [(b["tool_use_id"], b["content"]) for b in turns[2]["content"]] == [("c1", "Paris"), ("c2", "18 C, sunny")]
    else:
        assert [(p["functionResponse"]["id"], p["functionResponse"]["response"]) for p in turns[2]["parts"]] == [
            ("c1", {"result": "Paris"}), ("c2", {"result": "18 C, sunny"})]


class Files(object):
    """A tool provider (contract C2): list_tools / call_tool, and a name."""

    def __init__(self, name=None, tools=("read",)):
        self.name = name
        self.tools = tools
        self.listed = 0
        self.called = []

    def list_tools(self):
        self.listed += 1
        return [{"name": t, "description": "a file tool", "parameters": {"type": "object"}} for t in self.tools]

    def call_tool(self, name, arguments):
        self.called.append((name, arguments))
        if name == "fail":
            return {"type": "tool_result", "text": "no such file", "is_error": True}
        return {"type": "tool_result", "text": "contents of {}".format(arguments.get("path"))}


def test_tool_providers_prefix_rename_and_clash():
    files = Files("fs", tools=("read", "fail", "list.all"))
    with SSEServer() as server:
        server.answers += [Answer([BUILDERS["anthropic"][0]([
            ("c1", "fs__read", '{"path": "a.txt"}'), ("c2", "fs__fail", '{}'), ("c3", "fs__list_all", '{}')])]),
            Answer([BUILDERS["anthropic"][1]("ok")])]
        result = client_for(server, "anthropic").run([USER], tools=[files, get_weather]).result()
        names = [t["name"] for t in server.requests[0]["body"]["tools"]]
    assert names == ["fs__read", "fs__fail", "fs__list_all", "get_weather"]  # "list.all" renamed for the wire
    assert files.listed == 1  # listed once per run
    assert sorted(files.called, key=lambda c: c[0]) == [  # and back (the calls ran at once: any order)
        ("fail", {}), ("list.all", {}), ("read", {"path": "a.txt"})]
    assert result.messages[1]["content_items"] == [
        {"type": "tool_result", "tool_call_id": "c1", "text": "contents of a.txt"},
        {"type": "tool_result", "tool_call_id": "c2", "text": "no such file", "is_error": True},
        {"type": "tool_result", "tool_call_id": "c3", "text": "contents of None"}]
    client = AutoLLMClient("gpt-4o-mini", api_key="k", base_url="http://127.0.0.1:9/v1", client_type="openai-chat")
    with pytest.raises(ConfigError) as info:
        client.run([USER], tools=[Files(tools=("get_weather",)), get_weather])
    assert str(info.value) == ("two tools are named 'get_weather': provider Files's tool 'get_weather' and tool "
                               "'get_weather' (give a provider a name= for a prefix)")


@pytest.mark.parametrize("protocol, name, words", [
    ("anthropic", "get.weather", "anthropic tool names are letters, digits, '_' or '-', at most 128"),
    ("gemini", "1weather", "gemini tool names are a letter or '_' first, then letters, digits, '_', '.', ':' or "
                           "'-', at most 64"),
    ("openai-chat", "x" * 65, "openai-chat tool names are letters, digits, '_' or '-', at most 64"),
])
def test_a_tool_name_the_wire_refuses_is_a_config_error_before_anything_is_sent(protocol, name, words):
    with SSEServer() as server:
        client = client_for(server, protocol)
        with pytest.raises(ConfigError) as info:
            client.run([USER], tools=[tool(get_weather.fn, name=name)])
        assert server.requests == []
    assert str(info.value) == "tool {!r}: {!r} is not a valid tool name here ({})".format(name, name, words)
    assert tool(get_weather.fn, name="get.weather").name == "get.weather"  # fine for gemini
    client_for(server, "gemini").run([USER], tools=[tool(get_weather.fn, name="get.weather")]).close()


def test_one_tool_object_is_checked_for_each_wire_it_goes_to_and_again_when_renamed():
    # a Tool keeps the entry a run made for it (with the wire rule it was checked by): another wire checks it
    # again, and so does a new name
    long_name = tool(get_weather.fn, name="x" * 100)  # fine for anthropic (128), not for openai-chat (64)
    with SSEServer() as server:
        client_for(server, "anthropic").run([USER], tools=[long_name]).close()
        with pytest.raises(ConfigError) as info:
            client_for(server, "openai-chat").run([USER], tools=[long_name])
        assert "is not a valid tool name here" in str(info.value)
        client_for(server, "anthropic").run([USER], tools=[long_name]).close()  # still fine there
        renamed = tool(get_weather.fn)
        client_for(server, "openai-chat").run([USER], tools=[renamed]).close()
        renamed.name = "get weather"
        with pytest.raises(ConfigError) as info:
            client_for(server, "openai-chat").run([USER], tools=[renamed])
        assert str(info.value).startswith("tool 'get weather': 'get weather' is not a valid tool name here")
        renamed.name = "weather_now"
        run = client_for(server, "openai-chat").run([USER], tools=[renamed])
        assert run.tool_kind("weather_now") == "tool" and run.tool_kind("get_weather") is None
        assert [schema["name"] for schema in run.config["tools"]] == ["weather_now"]
        run.close()
        assert server.requests == []


def test_bad_input_is_refused_before_anything_is_sent():
    with SSEServer() as server:
        client = client_for(server)
        for kwargs, words in [
            ({"tools": [get_weather, get_weather]}, "two tools are named 'get_weather'"),
            ({"tools": [get_weather], "max_turns": 0}, "max_turns must be an int >= 1"),
            ({"tools": [get_weather], "parallel": 0}, "parallel must be an int >= 1"),
            ({"tools": [42]}, "tools[0] is a int"),
            ({"tools": [get_weather], "decisions": {"c1": 3}}, "decisions['c1'] must be True, False"),
            ({"tools": [get_weather], "config": {"tools": [{"name": "x"}]}}, "pass the tools as run(..., tools="),
            ({"tools": [get_weather], "config": {"temperature": "hot"}}, "temperature"),
        ]:
            with pytest.raises(ConfigError) as info:
                client.run([USER], **kwargs)
            assert words in str(info.value), str(info.value)
        assert server.requests == []


@pytest.mark.parametrize("messages, words", [
    ([1, 2], "messages[0] must be a dict (UniMessage), got int"),  # was an AttributeError
    ([], "messages is empty: send at least one user message"),
    ([{"role": "user", "content_items": "x"}], "messages[0]['content_items'] must be a list"),
    ([USER, {"role": "assistant", "content_items": [{"type": "tool_call", "tool_call_id": "c1", "name": "get_weather"}]}],
     "messages[1]['content_items'][0] (tool_call) needs 'arguments' of type dict"),
    ([USER, {"role": "assistant", "content_items": [{"type": "tool_call", "tool_call_id": "c1", "name": "get_weather",
                                                     "arguments": {}}], "finish_reason": "bogus"}],
     "messages[1]['finish_reason'] is not a FinishReason"),
])
def test_malformed_messages_are_a_config_error_naming_the_message(messages, words):
    client = AutoLLMClient("gpt-4o-mini", api_key="k", base_url="http://127.0.0.1:9/v1", client_type="openai-chat")
    with pytest.raises(ConfigError) as info:
        client.run(messages, tools=[get_weather])
    assert str(info.value).startswith(words), str(info.value)


def test_a_failed_turn_raises_and_run_messages_keeps_what_was_done():
    with SSEServer() as server:
        server.answers += [Answer([chat_calls([("c1", "get_weather", '{"city": "Paris"}')])]),
                           Answer([b'{"error": {"message": "down", "type": "server_error"}}'], status=500,
                                  headers={"Content-Type": "application/json"})]
        run = client_for(server).run([USER], tools=[get_weather])
        with pytest.raises(UpstreamError):
            for _ in run:
                pass
    assert [m["role"] for m in run.messages] == ["assistant", "user"]
    assert run.messages[1]["content_items"] == [{"type": "tool_result", "tool_call_id": "c1", "text": "18 C, sunny"}]


def test_run_stateful_grows_the_history_turn_by_turn():
    with SSEServer() as server:
        server.answers += [Answer([chat_calls([("c1", "get_weather", '{"city": "Paris"}')])]),
                           Answer([chat_text("Sunny.")])]
        client = client_for(server)
        result = client.run_stateful(USER, tools=[get_weather]).result()
        history = client.get_history()
    assert [m["role"] for m in history] == ["user", "assistant", "user", "assistant"]
    assert history[2]["content_items"] == result.messages[1]["content_items"]
    # one rule for run and run_stateful: result.messages holds what the run added, never the caller's message
    assert [m["role"] for m in result.messages] == ["assistant", "user", "assistant"]
    assert [m["content_items"] for m in result.messages] == [m["content_items"] for m in history[1:]]
    assert server.requests[1]["body"]["messages"][-1] == {"role": "tool", "tool_call_id": "c1",
                                                          "content": "18 C, sunny"}


def test_run_stateful_resumes_with_decisions_alone():
    with SSEServer() as server:
        server.answers += [Answer([chat_calls([("c1", "delete_file", '{"path": "a"}')])]), Answer([chat_text("ok")])]
        client = client_for(server)
        first = client.run_stateful(USER, tools=[delete_file]).result()
        assert first.stop == "approval" and len(client.get_history()) == 2
        second = client.run_stateful(None, tools=[delete_file], decisions={"c1": True}).result()
    assert second.stop == "done"
    assert [m["role"] for m in client.get_history()] == ["user", "assistant", "user", "assistant"]
    assert client.get_history()[2]["content_items"] == [
        {"type": "tool_result", "tool_call_id": "c1", "text": "deleted a"}]


def test_usage_and_cost_none_rules():
    with SSEServer() as server:
        server.answers += [Answer([chat_calls([("c1", "get_weather", '{"city": "Paris"}')])]),
                           Answer([chat_text("ok")])]
        client = AutoLLMClient("my-local-model", api_key="k", base_url=server.url + "/v1", client_type="openai-chat")
        result = client.run([USER], tools=[get_weather]).result()
    assert result.cost_usd is None  # unpriced
    assert result.usage_metadata["cached_tokens"] is None and result.usage_metadata["prompt_tokens"] == 30
    assert isinstance(result, RunResult)


def test_a_whole_run_replays_from_a_cassette(tmp_path):
    folder = str(tmp_path / "cassette")
    with SSEServer() as server:
        server.answers += [Answer([chat_calls(TWO_CALLS)]), Answer([chat_text("Sunny.")])]
        client = client_for(server, session=record_session(folder))
        recorded = list(client.run([USER], tools=[get_weather]))
        base_url = server.url + "/v1"
    session = replay_session(folder)
    client = AutoLLMClient("gpt-4o-mini", api_key="unused", base_url=base_url,
                           client_type="openai-chat", session=session)
    replayed = list(client.run([USER], tools=[get_weather]))
    session.cassette.assert_all_played()
    assert plain(replayed) == plain(recorded)
    assert len(replayed) == 13


def test_tool_results_as_json_and_images():
    png = b"\x89PNG\r\n\x1a\n" + b"\0" * 8

    @tool
    def data(kind: str):
        return {"json": {"a": [1, 2]}, "png": png, "num": 3.5, "text": b"plain"}[kind]

    calls = [("c1", "data", '{"kind": "json"}'), ("c2", "data", '{"kind": "png"}'), ("c3", "data", '{"kind": "num"}'),
             ("c4", "data", '{"kind": "text"}')]
    with SSEServer() as server:
        server.answers += [Answer([chat_calls(calls)]), Answer([chat_text("ok")])]
        result = client_for(server).run([USER], tools=[data]).result()
    assert result.messages[1]["content_items"] == [
        {"type": "tool_result", "tool_call_id": "c1", "text": '{"a": [1, 2]}'},
        {"type": "tool_result", "tool_call_id": "c2", "text": "",
         "images": ["data:image/png;base64,iVBORw0KGgoAAAAAAAAAAA=="]},
        {"type": "tool_result", "tool_call_id": "c3", "text": "3.5"},
        {"type": "tool_result", "tool_call_id": "c4", "text": "plain"}]


def test_a_runs_tool_threads_serve_every_turn_and_end_with_the_run():
    """Issue 41, item 2: a turn's calls go to the run's pool (threads kept between turns), not a new thread per
    call; when the run ends its threads end (idle ones at once), and each call still sees a fresh context."""
    seen = []
    marker = contextvars.ContextVar("marker", default=None)

    @tool
    def where(city: str) -> str:
        """Where it ran."""
        seen.append((threading.current_thread(), marker.get()))
        marker.set(city)  # a later call on the same thread must not see it
        return city

    calls = [("c1", "where", '{"city": "Paris"}'), ("c2", "where", '{"city": "Rome"}')]
    before = set(threading.enumerate())
    with SSEServer() as server:
        server.answers += [Answer([chat_calls(calls)]), Answer([chat_calls(calls)]), Answer([chat_calls(calls)]),
                           Answer([chat_text("ok")])]
        result = client_for(server).run([USER], tools=[where]).result()
    assert result.stop == "done" and len(seen) == 6
    assert len({thread for thread, _ in seen}) <= 3  # was 6: one thread per call
    assert [value for _, value in seen] == [None] * 6
    assert [t for t in threading.enumerate() if t not in before and t.name.startswith("agenthub-tool")] == []


def test_a_turn_of_calls_of_tools_known_quick_runs_in_the_reading_thread():
    """Issue 41, item 2: once every call of a tool in a run returned within _SPREAD_SECONDS, a turn whose calls
    are all of such tools runs them in the reading thread (no hand-off to a thread and back); the first turn's,
    of tools not known yet, on the run's threads.  Each call still sees a fresh context; the events are the
    same either way."""
    seen = []
    marker = contextvars.ContextVar("marker", default=None)

    @tool
    def where(city: str) -> str:
        """Where it ran."""
        seen.append((threading.current_thread() is threading.main_thread(), marker.get()))
        marker.set(city)
        return city

    calls = [("c1", "where", '{"city": "Paris"}'), ("c2", "where", '{"city": "Rome"}')]
    with SSEServer() as server:
        server.answers += [Answer([chat_calls(calls)]), Answer([chat_calls(calls)]), Answer([chat_calls(calls)]),
                           Answer([chat_text("ok")])]
        run = client_for(server).run([USER], tools=[where])
        events = plain(run)
        result = run.result()
    assert result.stop == "done" and result.turns == 4
    assert seen == [(False, None), (False, None), (True, None), (True, None), (True, None), (True, None)]
    assert [e for e in events if e["role"] == "user"] == [result_event("c1", "Paris"), result_event("c2", "Rome")] * 3
    assert marker.get() is None  # (the reading thread's own context is not the calls')


def test_a_call_of_a_tool_known_quick_that_takes_time_sends_the_turns_other_calls_to_threads():
    """A tool known quick whose call takes longer than _SPREAD_SECONDS: the turn's calls not started yet go to
    threads of their own (they still run at once: the barrier), and the tool's later turns run on threads."""
    import agenthub.agent.runner as runner_module

    barrier = threading.Barrier(2, timeout=30)  # a safety net against a hang, not a timing assertion
    on_main = []

    @tool
    def job(n: int, meet: bool = False, slow: bool = False) -> str:
        """A job."""
        on_main.append((n, threading.current_thread() is threading.main_thread()))
        if slow:
            time.sleep(runner_module._SPREAD_SECONDS * 5)  # (longer than the bound: a floor, not a timing assertion)
        if meet:
            barrier.wait()
        return str(n)

    first = [("c1", "job", '{"n": 1}'), ("c2", "job", '{"n": 2}')]
    second = [("c3", "job", '{"n": 3, "slow": true}'), ("c4", "job", '{"n": 4, "meet": true}'),
              ("c5", "job", '{"n": 5, "meet": true}')]
    third = [("c6", "job", '{"n": 6}'), ("c7", "job", '{"n": 7}')]
    with SSEServer() as server:
        server.answers += [Answer([chat_calls(first)]), Answer([chat_calls(second)]), Answer([chat_calls(third)]),
                           Answer([chat_text("ok")])]
        result = client_for(server).run([USER], tools=[job]).result()
    assert [item["text"] for m in result.messages[1::2] for item in m["content_items"]] == [
        str(n) for n in range(1, 8)]
    assert not barrier.broken
    assert sorted(on_main) == [(1, False), (2, False), (3, True), (4, False), (5, False), (6, False), (7, False)]


def test_a_run_read_inside_an_event_loop_keeps_a_turn_of_known_quick_calls_on_threads():
    """A run read in a thread with a running asyncio loop (a notebook, an async app calling it synchronously):
    a tool that runs its own loop (asyncio.run) works on a tool thread but not in the reading thread, so the
    calls of tools known quick stay on threads there: every turn's results as on the first."""
    import asyncio

    @tool
    def fetch(n: int) -> str:
        """Fetch, with an async client inside."""
        async def go():
            return "got {}".format(n)
        return asyncio.run(go())

    calls = [("c1", "fetch", '{"n": 1}'), ("c2", "fetch", '{"n": 2}')]

    async def main(server):
        return client_for(server).run([USER], tools=[fetch]).result()  # (read synchronously inside the loop)

    with SSEServer() as server:
        server.answers += [Answer([chat_calls(calls)]), Answer([chat_calls(calls)]), Answer([chat_text("ok")])]
        result = asyncio.run(main(server))
    assert [[item["text"] for item in m["content_items"]] for m in result.messages[1::2]] == [
        ["got 1", "got 2"], ["got 1", "got 2"]]


@pytest.mark.parametrize("parallel", [4, 1])
def test_a_run_read_inside_an_event_loop_runs_a_lone_call_and_parallel_1_on_a_thread(parallel):
    """The same for a turn's lone call and for parallel=1 (which ran in the reading thread whatever ran there): a
    tool that runs its own loop, as the ConfigError for an async tool says to do, failed with RuntimeError in a
    notebook, where a turn of two calls of it worked."""
    import asyncio

    @tool
    def fetch(n: int) -> str:
        """Fetch, with an async client inside."""
        async def go():
            return "got {} {}".format(n, threading.current_thread() is threading.main_thread())
        return asyncio.run(go())

    one = [("c1", "fetch", '{"n": 1}')]
    two = [("c2", "fetch", '{"n": 2}'), ("c3", "fetch", '{"n": 3}')]

    async def main(server):
        return client_for(server).run([USER], tools=[fetch], parallel=parallel).result()  # (read inside the loop)

    with SSEServer() as server:
        server.answers += [Answer([chat_calls(one)]), Answer([chat_calls(two)]), Answer([chat_calls(one)]),
                           Answer([chat_text("ok")])]
        result = asyncio.run(main(server))
    assert result.stop == "done"
    assert [[item["text"] for item in m["content_items"]] for m in result.messages[1::2]] == [
        ["got 1 False"], ["got 2 False", "got 3 False"], ["got 1 False"]]


def test_abort_from_a_call_of_a_tool_known_quick_keeps_the_turns_other_calls_from_starting():
    ran = []
    holder = []

    @tool
    def step(n: int, stop: bool = False) -> str:
        """A step."""
        ran.append(n)
        if stop:
            holder[0].abort()
        return str(n)

    with SSEServer() as server:
        server.answers += [Answer([chat_calls([("c1", "step", '{"n": 1}'), ("c2", "step", '{"n": 2}')])]),
                           Answer([chat_calls([("c3", "step", '{"n": 3, "stop": true}'),
                                               ("c4", "step", '{"n": 4}')])])]
        run = client_for(server).run([USER], tools=[step])
        holder.append(run)
        result = run.result()
        assert len(server.requests) == 2
    assert ran == [1, 2, 3]
    assert result.stop == "aborted" and [c["tool_call_id"] for c in result.pending] == ["c4"]
    assert result.messages[-1]["content_items"] == [{"type": "tool_result", "tool_call_id": "c3", "text": "3"}]


def test_no_thread_is_left_behind_after_a_run():
    before = set(threading.enumerate())
    with SSEServer() as server:
        server.answers += [Answer([chat_calls(TWO_CALLS)]), Answer([chat_text("ok")])]
        client_for(server).run([USER], tools=[get_weather]).result()
    left = [t for t in threading.enumerate() if t not in before and t.name.startswith("agenthub-tool")]
    for thread in left:
        thread.join(5)
    assert not [t for t in left if t.is_alive()]


#: the last message(s) of the follow-up request when the first of two calls raised (contract C3 per wire)
ERROR_FOLLOW_UP = {
    "openai-chat": [{"role": "tool", "tool_call_id": "call_1", "content": "ValueError: bad x"},
                    {"role": "tool", "tool_call_id": "call_2", "content": "24 C, clear"}],
    "openai-responses": [{"type": "function_call_output", "call_id": "call_1", "output": "ValueError: bad x"},
                         {"type": "function_call_output", "call_id": "call_2", "output": "24 C, clear"}],
    "anthropic": [{"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "call_1", "content": "ValueError: bad x", "is_error": True},
        {"type": "tool_result", "tool_use_id": "call_2", "content": "24 C, clear"}]}],
    "gemini": [{"role": "user", "parts": [
        {"functionResponse": {"name": "boom", "id": "call_1", "response": {"error": "ValueError: bad x"}}},
        {"functionResponse": {"name": "get_weather", "id": "call_2", "response": {"result": "24 C, clear"}}}]}],
}


@pytest.mark.parametrize("protocol", sorted(BUILDERS))
def test_an_error_result_on_each_wire(protocol):
    @tool
    def boom(x: int) -> str:
        raise ValueError("bad x")

    calls, text = BUILDERS[protocol]
    with SSEServer() as server:
        server.answers += [Answer([calls([("call_1", "boom", '{"x": 1}'), ("call_2", "get_weather", '{"city": "Rome"}')])]),
                           Answer([text("ok")])]
        result = client_for(server, protocol).run([USER], tools=[boom, get_weather]).result()
        sent = FOLLOW_UP[protocol](server.requests[1]["body"])
    expected = ERROR_FOLLOW_UP[protocol]
    assert sent[-len(expected):] == expected
    assert result.messages[1]["content_items"][0] == {"type": "tool_result", "tool_call_id": "call_1",
                                                      "text": "ValueError: bad x", "is_error": True}


def test_failover_applies_per_turn_and_cost_uses_the_model_that_answered():
    down = Answer([b'{"error": {"message": "overloaded", "type": "server_error"}}'], status=503,
                  headers={"Content-Type": "application/json"})
    with SSEServer() as primary, SSEServer() as backup:
        primary.answers += [down, down]
        backup.answers += [Answer([chat_calls([("c1", "get_weather", '{"city": "Paris"}')])]), Answer([chat_text("ok")])]
        fallback = AutoLLMClient("gpt-4o-mini", api_key="k2", base_url=backup.url + "/v1", client_type="openai-chat",
                                 max_retries=0)
        client = AutoLLMClient("gpt-5.5", api_key="k1", base_url=primary.url + "/v1", client_type="openai-chat",
                               max_retries=0, fallbacks=[fallback], circuit_breaker=False)
        result = client.run([USER], tools=[get_weather]).result()
        assert (len(primary.requests), len(backup.requests)) == (2, 2)
    usage = [m["usage_metadata"] for m in (result.messages[0], result.messages[2])]
    assert result.cost_usd == pytest.approx(agenthub.cost("gpt-4o-mini", usage[0]) + agenthub.cost("gpt-4o-mini", usage[1]))
    assert result.cost_usd != pytest.approx(agenthub.cost("gpt-5.5", usage[0]) + agenthub.cost("gpt-5.5", usage[1]))


def test_one_trace_holds_the_whole_run(tmp_path, monkeypatch):
    from agenthub.tracer import load_trace, trace_paths

    monkeypatch.setenv("AGENTHUB_CACHE_DIR", str(tmp_path))
    with SSEServer() as server:
        server.answers += [Answer([chat_calls(TWO_CALLS)]), Answer([chat_text("Sunny.")])]
        result = client_for(server).run([USER], {"trace_id": "agent/run_1"}, tools=[get_weather]).result()
    history = load_trace(trace_paths("agent/run_1")["json"])["history"]
    assert [m["role"] for m in history] == ["user", "assistant", "user", "assistant"]
    assert history[2]["content_items"] == result.messages[1]["content_items"]


def test_a_resumed_run_is_checked_before_any_tool_runs():
    ran = []

    @tool
    def note(text: str) -> str:
        ran.append(text)
        return "ok"

    assistant = {"role": "assistant", "content_items": [
        {"type": "tool_call", "name": "note", "arguments": {"text": "x"}, "tool_call_id": "c1"}]}
    schema = {"oneOf": [{"type": "string"}, {"type": "integer"}]}  # beyond Gemini's responseSchema subset
    config = {"response_format": {"type": "json_schema", "name": "n", "schema": schema}}
    with SSEServer() as server:
        client = AutoLLMClient("gemini-2.0-flash", api_key="k", base_url=server.url, client_type="gemini")
        with pytest.raises(agenthub.UnsupportedParameterError):  # the dialect's own refusal, at run()
            client.run([USER, assistant], config, tools=[note])
        with pytest.raises(agenthub.UnsupportedParameterError):  # a fresh run too
            client.run([USER], config, tools=[note])
        assert server.requests == [] and ran == []


def test_a_later_run_sends_one_turns_results_in_one_message():
    """previous + result.messages + [the caller's results] + the resumed run's messages holds the turn's
    results in two user messages; the next run sends them as one (Gemini wants one turn of responses)."""
    schema = {"name": "ask_user", "parameters": {"type": "object"}}
    calls, text = BUILDERS["gemini"]
    with SSEServer() as server:
        server.answers += [Answer([calls([("c1", "ask_user", "{}"), ("c2", "get_weather", '{"city": "Paris"}')])]),
                           Answer([text("Which one?")]), Answer([text("ok")])]
        client = client_for(server, "gemini")
        first = client.run([USER], tools=[schema, get_weather]).result()
        answer = {"role": "user", "content_items": [{"type": "tool_result", "tool_call_id": "c1", "text": "Paris"}]}
        second = client.run([USER] + first.messages + [answer], tools=[schema, get_weather]).result()
        history = [USER] + first.messages + [answer] + second.messages
        assert [m["role"] for m in history] == ["user", "assistant", "user", "user", "assistant"]
        question = {"role": "user", "content_items": [{"type": "text", "text": "Paris."}]}
        client.run(history + [question], tools=[schema, get_weather]).result()
        contents = server.requests[2]["body"]["contents"]
    assert [c["role"] for c in contents] == ["user", "model", "user", "model", "user"]
    assert [p["functionResponse"]["id"] for p in contents[2]["parts"]] == ["c1", "c2"]


def test_the_budget_applies_per_turn_and_the_run_keeps_what_it_did():
    with SSEServer() as server:
        server.answers += [Answer([chat_calls([("c1", "get_weather", '{"city": "Paris"}')], usage=(100000, 5))]),
                           Answer([chat_text("ok")])]
        budget = agenthub.Budget(0.01501)  # the first turn spends 0.015003 USD: the second cannot fit
        client = AutoLLMClient("gpt-4o-mini", api_key="k", base_url=server.url + "/v1", client_type="openai-chat",
                               budget=budget, max_retries=0)
        run = client.run([USER], {"max_tokens": 100}, tools=[get_weather])
        with pytest.raises(agenthub.BudgetExceededError):
            run.result()
        assert len(server.requests) == 1  # the second turn was never sent
    assert [m["role"] for m in run.messages] == ["assistant", "user"]
    assert run.cost_usd == pytest.approx(0.015003)


def test_run_stateful_a_new_question_answers_the_open_calls_in_the_same_message():
    with SSEServer() as server:
        server.answers += [Answer([chat_calls([("c1", "delete_file", '{"path": "a"}')])]), Answer([chat_text("ok")])]
        client = client_for(server)
        assert client.run_stateful(USER, tools=[delete_file]).result().stop == "approval"
        question = {"role": "user", "content_items": [{"type": "text", "text": "Never mind."}]}
        result = client.run_stateful(question, tools=[delete_file], decisions={"c1": "not now"}).result()
        sent = server.requests[1]["body"]["messages"][2:]
    assert result.stop == "done"
    assert result.messages[0] == {"role": "user", "content_items": [  # the run's results, not the caller's text
        {"type": "tool_result", "tool_call_id": "c1", "text": "denied: not now", "is_error": True}]}
    assert [m["role"] for m in client.get_history()] == ["user", "assistant", "user", "assistant"]
    assert client.get_history()[2]["content_items"] == [  # one user turn: results, then the text
        {"type": "tool_result", "tool_call_id": "c1", "text": "denied: not now", "is_error": True},
        {"type": "text", "text": "Never mind."}]
    assert sent == [{"role": "tool", "tool_call_id": "c1", "content": "denied: not now"},
                    {"role": "user", "content": "Never mind."}]


def test_a_plain_tool_schemas_call_may_be_denied_by_decision():
    schema = {"name": "ask_user", "parameters": {"type": "object"}}
    assistant = {"role": "assistant", "content_items": [
        {"type": "tool_call", "name": "ask_user", "arguments": {}, "tool_call_id": "c1"}]}
    with SSEServer() as server:
        server.answers.append(Answer([chat_text("ok")]))
        result = client_for(server).run([USER, assistant], tools=[schema], decisions={"c1": "skip it"}).result()
        still = client_for(server).run([USER, assistant], tools=[schema], decisions={"c1": True}).result()
    assert result.messages[0]["content_items"] == [
        {"type": "tool_result", "tool_call_id": "c1", "text": "denied: skip it", "is_error": True}]
    assert still.stop == "approval" and [c["tool_call_id"] for c in still.pending] == ["c1"]


@tool
def huge_log(lines: int) -> str:
    """A log of many lines."""
    return "".join("line {:07d}\n".format(n) for n in range(lines))  # 13 characters a line


def test_a_tools_output_past_max_output_chars_is_cut_with_a_marker_the_model_reads():
    """A tool's text went to the model, the run's messages and the journal whole (500 MB too): now at most
    max_output_chars characters (default MAX_OUTPUT_CHARS), the marker saying how much was cut within them."""
    import inspect

    from agenthub.agent.runner import MAX_OUTPUT_CHARS
    assert MAX_OUTPUT_CHARS == 1000000
    for method in (AutoLLMClient.run, AutoLLMClient.run_stateful):  # (the client's default is the runner's)
        assert inspect.signature(method).parameters["max_output_chars"].default == MAX_OUTPUT_CHARS
    full = "".join("line {:07d}\n".format(n) for n in range(100000))  # 1,300,000 characters
    cases = [({"max_output_chars": 100}, 8, full[:36] + "\n[... 68 more characters cut by agenthub "
                                                        "(max_output_chars=100)]"),
             ({}, 100000, full[:999928] + "\n[... 300072 more characters cut by agenthub "
                                          "(max_output_chars=1000000)]"),
             ({"max_output_chars": None}, 100000, full),
             ({"max_output_chars": 104}, 8, full[:104])]  # (exactly the limit: whole)
    for kwargs, lines, text in cases:
        with SSEServer() as server:
            server.answers += [Answer([chat_calls([("c1", "huge_log", json.dumps({"lines": lines}))])]),
                               Answer([chat_text("Read.")])]
            result = client_for(server).run([USER], tools=[huge_log], **kwargs).result()
            sent = server.requests[1]["body"]["messages"][-1]
        assert len(text) <= (kwargs.get("max_output_chars", MAX_OUTPUT_CHARS) or len(full))
        assert sent == {"role": "tool", "tool_call_id": "c1", "content": text}
        assert result.messages[1]["content_items"] == [{"type": "tool_result", "tool_call_id": "c1", "text": text}]
    with SSEServer() as server:
        for bad in (0, 99, 1.5, True, "1000"):
            with pytest.raises(ConfigError) as info:
                client_for(server).run([USER], tools=[huge_log], max_output_chars=bad)
            assert str(info.value) == "max_output_chars must be an int >= 100 or None (got {!r})".format(bad)
        assert server.requests == []
