"""Gemini Interactions end to end against a local fake (tests/longrun_server.py), which google-genai's own
interactions client also reads: text, a tool round trip with requires_action, thinking with signatures,
stateful chaining by previous_interaction_id, GEMINI_API=interactions."""

import os

import pytest

from agenthub import AutoLLMClient, check_stream
from agenthub.registry import resolve
from longrun_server import LongrunServer, interactions_events

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "gemini_interactions")
MODEL = "gemini-3.8-flash"


def fixture_events(name):
    with open(os.path.join(FIXTURES, name), "rb") as handle:
        data = handle.read()
    return [block + b"\n\n" for block in data.split(b"\n\n") if block and b"[DONE]" not in block]


def client(server, **kwargs):
    return AutoLLMClient(MODEL, api_key="test-key", base_url=server.url, client_type="gemini-interactions",
                         max_retries=0, **kwargs)


@pytest.mark.parametrize("name", ["text.sse", "tool_round_trip.sse", "thinking_signatures.sse"])
def test_google_genai_reads_our_fixtures(name):
    genai = pytest.importorskip("google.genai")
    with LongrunServer() as server:
        server.add("v1_sdk", fixture_events(name), done=True)
        sdk = genai.Client(api_key="test-key", http_options={"base_url": server.url})  # its default version
        events = list(sdk.interactions.create(model=MODEL, input="hi", stream=True, store=False))
        sent = server.requests[0]
        # the GA version agenthub sends too (test_text_stream_through_the_client); the SDK's REST calls send no
        # Api-Revision since the legacy schema went (agenthub pins the revision, which the SDK's Live calls send)
        headers = {name.lower(): value for name, value in sent["headers"].items()}
        assert sent["path"] == "/v1/interactions" and "api-revision" not in headers
        assert headers["x-goog-api-key"] == "test-key"
    kinds = [type(event).__name__ for event in events]
    assert "UnknownInteractionSSEEvent" not in kinds
    assert kinds[0] == "InteractionCreatedEvent" and kinds[-1] == "InteractionCompletedEvent"
    deltas = [event.delta for event in events if event.event_type == "step.delta"]
    assert deltas and all(type(d).__name__ != "UnknownStepDeltaData" for d in deltas)


def test_google_genai_resumes_from_an_event_id_on_the_fake():
    genai = pytest.importorskip("google.genai")
    with LongrunServer() as server:
        server.add("v1_res", interactions_events("v1_res", ["a", "b", "c"]), done=True)
        sdk = genai.Client(api_key="test-key", http_options={"base_url": server.url, "api_version": "v1beta"})
        list(sdk.interactions.create(model=MODEL, input="hi", stream=True, background=True, store=True))
        rest = list(sdk.interactions.get("v1_res", stream=True, last_event_id="evt_003"))
        assert server.requests[-1]["query"] == {"stream": "true", "last_event_id": "evt_003"}
    assert [e.event_id for e in rest] == ["evt_004", "evt_005", "evt_006", "evt_007"]


def test_text_stream_through_the_client():
    with LongrunServer() as server:
        server.add("v1_t", fixture_events("text.sse"), done=True)
        events = list(client(server).streaming_response([{"role": "user", "content_items": [
            {"type": "text", "text": "Count to 5."}]}]))
        sent = server.requests[0]
    check_stream(events)
    assert "".join(i["text"] for e in events for i in e["content_items"] if i["type"] == "text") == \
        "1, 2, 3, 4, 5 \u2014 f\u00fcnf."
    assert sent["path"] == "/v1/interactions" and sent["headers"]["Api-Revision"] == "2026-05-20"
    assert sent["body"] == {"model": MODEL, "input": [{"type": "user_input", "content": [
        {"type": "text", "text": "Count to 5."}]}], "stream": True, "store": False}


def test_stateful_tool_round_trip_chains_and_a_stateless_call_resends_everything():
    tools = [{"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}]
    with LongrunServer() as server:
        server.add("v1_tool", fixture_events("tool_round_trip.sse"), done=True)
        server.add("v1_answer", fixture_events("thinking_signatures.sse"), done=True)
        server.add("v1_again", interactions_events("v1_again", ["ok"]), done=True)
        llm = client(server)
        first = llm.response_stateful({"role": "user", "content_items": [
            {"type": "text", "text": "Weather in Paris and Tokyo?"}]}, {"tools": tools})
        assert first["finish_reason"] == "tool_call"
        second = llm.response_stateful({"role": "user", "content_items": [
            {"type": "tool_result", "text": "18C", "tool_call_id": "fc_paris_1"},
            {"type": "tool_result", "text": "22C", "tool_call_id": "fc_tokyo_2"}]}, {"tools": tools})
        assert second["finish_reason"] == "stop"
        history = llm.get_history()
        llm.response(history + [{"role": "user", "content_items": [{"type": "text", "text": "thanks"}]}])
        bodies = [r["body"] for r in server.requests]
    assert len(history) == 4
    assert bodies[0]["store"] is True and "previous_interaction_id" not in bodies[0]
    assert bodies[1]["store"] is True
    assert bodies[1]["previous_interaction_id"] == "v1_ChdpbnRlcmFjdGlvbi10b29sLTAwMg"
    assert bodies[1]["input"] == [
        {"type": "function_result", "call_id": "fc_paris_1", "name": "get_weather", "result": "18C"},
        {"type": "function_result", "call_id": "fc_tokyo_2", "name": "get_weather", "result": "22C"}]
    # stateless: store false and the whole history, thought signatures included
    assert bodies[2]["store"] is False and "previous_interaction_id" not in bodies[2]
    assert [s["type"] for s in bodies[2]["input"]] == [
        "user_input", "thought", "function_call", "function_call", "function_result", "function_result",
        "thought", "model_output", "thought", "user_input"]
    assert bodies[2]["input"][6] == {"type": "thought", "signature": "EqQBsig/first=="}


def test_gemini_api_variable_routes_gemini_models_to_interactions():
    env = {"GEMINI_API_KEY": "k", "GEMINI_API": "interactions"}
    assert resolve(MODEL, environ=env)[0] == "gemini-interactions"
    assert resolve(MODEL, environ={"GEMINI_API_KEY": "k"})[0] == "gemini"
    assert resolve("gemini-3.1-flash-tts-preview", environ=env)[0] == "gemini"  # speech stays on generateContent
    assert resolve(MODEL, "gemini", environ=env)[0] == "gemini"  # a client_type given wins
    from agenthub.errors import ConfigError

    with pytest.raises(ConfigError):
        resolve(MODEL, environ={"GEMINI_API_KEY": "k", "GEMINI_API": "grpc"})


def test_longrun_keys_are_refused_where_no_protocol_reads_them():
    from agenthub.errors import UnsupportedParameterError

    chat = AutoLLMClient("gpt-x", api_key="k", base_url="http://127.0.0.1:9/v1", client_type="openai-chat")
    message = [{"role": "user", "content_items": [{"type": "text", "text": "x"}]}]
    for config in ({"background": True}, {"compaction": {"threshold": 1000}}):
        with pytest.raises(UnsupportedParameterError) as info:
            chat.streaming_response(message, config)
        assert info.value.parameter == list(config)[0]
    interactions = AutoLLMClient(MODEL, api_key="k", base_url="http://127.0.0.1:9", client_type="gemini-interactions")
    with pytest.raises(UnsupportedParameterError):
        interactions.streaming_response(message, {"compaction": {"threshold": 1000}})


def test_list_models_asks_the_same_gemini_models_endpoint():
    import json as _json

    from sse_server import Answer, SSEServer

    page = _json.dumps({"models": [{"name": "models/gemini-3.8-flash"}, {"name": "models/gemini-3.8-pro"}]}).encode()
    with SSEServer() as server:
        server.answers.append(Answer([page], headers={"Content-Type": "application/json"}, chunked=False))
        ids = client(server).list_models()
        request = server.requests[0]
    assert ids == ["gemini-3.8-flash", "gemini-3.8-pro"]
    assert request["path"] == "/v1beta/models?pageSize=1000"
    assert request["headers"]["x-goog-api-key"] == "test-key"


def test_a_stateless_answer_set_as_history_is_not_chained_on():
    """A stateless call's interaction was sent with store: false: it cannot be named later, so a stateful
    call after set_history sends the whole history (store: true), and chains from then on."""
    with LongrunServer() as server:
        server.add("v1_a", interactions_events("v1_a", ["one"]), done=True)
        server.add("v1_b", interactions_events("v1_b", ["two"]), done=True)
        server.add("v1_c", interactions_events("v1_c", ["three"]), done=True)
        llm = client(server)
        first = [{"role": "user", "content_items": [{"type": "text", "text": "a"}]}]
        answer = llm.response(first)
        llm.set_history(first + [answer])
        llm.response_stateful({"role": "user", "content_items": [{"type": "text", "text": "b"}]})
        llm.response_stateful({"role": "user", "content_items": [{"type": "text", "text": "c"}]})
        bodies = [r["body"] for r in server.requests]
    assert bodies[0]["store"] is False
    assert "previous_interaction_id" not in bodies[1] and len(bodies[1]["input"]) == 3
    assert bodies[2]["previous_interaction_id"] == "v1_b" and len(bodies[2]["input"]) == 1


def _say(text):
    return {"role": "user", "content_items": [{"type": "text", "text": text}]}


def test_a_stateful_history_given_to_another_client_is_sent_whole_not_chained_on():
    """Another client's stateful history (its answer stored on that client's endpoint, under that key) given
    by set_history: the next stateful call sends the whole history (store: true) instead of naming an
    interaction this endpoint never gave, then chains on its own answer."""
    with LongrunServer() as other, LongrunServer() as server:
        other.add("v1_a", interactions_events("v1_a", ["one"]), done=True)
        server.add("v1_b", interactions_events("v1_b", ["two"]), done=True)
        server.add("v1_c", interactions_events("v1_c", ["three"]), done=True)
        first = client(other)
        first.response_stateful(_say("a"))
        llm = client(server)
        llm.set_history(first.get_history())
        llm.response_stateful(_say("b"))
        llm.response_stateful(_say("c"))
        bodies = [r["body"] for r in server.requests]
    assert [step["type"] for step in bodies[0]["input"]] == ["user_input", "model_output", "user_input"]
    assert "previous_interaction_id" not in bodies[0] and bodies[0]["store"] is True
    assert bodies[1]["previous_interaction_id"] == "v1_b"
    assert bodies[1]["input"] == [{"type": "user_input", "content": [{"type": "text", "text": "c"}]}]


def test_another_clients_tool_turn_with_a_text_before_the_results_is_sent_whole():
    """The same when the history given has a text typed while the tools ran (it goes joined with the results)."""
    with LongrunServer() as other, LongrunServer() as server:
        other.add("v1_tool", fixture_events("tool_round_trip.sse"), done=True)
        server.add("v1_next", interactions_events("v1_next", ["done"]), done=True)
        first = client(other)
        first.response_stateful(_say("w?"))
        llm = client(server)
        llm.set_history(first.get_history() + [_say("in Celsius")])
        llm.response_stateful({"role": "user", "content_items": [
            {"type": "tool_result", "text": "18C", "tool_call_id": "fc_paris_1"},
            {"type": "tool_result", "text": "22C", "tool_call_id": "fc_tokyo_2"}]})
        body = server.requests[0]["body"]
    assert "previous_interaction_id" not in body and body["store"] is True
    assert [step["type"] for step in body["input"]][0] == "user_input"
    assert [step["type"] for step in body["input"]][-3:] == ["function_result", "function_result", "user_input"]


def test_a_history_edited_before_the_stored_answer_is_sent_whole():
    """set_history with an earlier message changed (or one changed in place): the server's stored interaction
    holds the old one, so the next stateful call sends the history as it now is rather than only the new
    message (the edit would be silently lost); a history given back unchanged still chains."""
    with LongrunServer() as server:
        for name in ("v1_a", "v1_b", "v1_c", "v1_d"):
            server.add(name, interactions_events(name, ["answer " + name]), done=True)
        llm = client(server)
        llm.response_stateful(_say("my name is Ann"))
        llm.set_history(llm.get_history())  # the same messages: chained on
        llm.response_stateful(_say("hi"))
        edited = llm.get_history()
        edited[0] = _say("my name is Bob")
        llm.set_history(edited)
        llm.response_stateful(_say("my name?"))
        llm.get_history()[0]["content_items"][0]["text"] = "my name is Cy"  # in place
        llm.response_stateful(_say("and now?"))
        bodies = [r["body"] for r in server.requests]
    assert bodies[1]["previous_interaction_id"] == "v1_a" and len(bodies[1]["input"]) == 1
    assert "previous_interaction_id" not in bodies[2]
    assert bodies[2]["input"][0] == {"type": "user_input", "content": [{"type": "text", "text": "my name is Bob"}]}
    assert len(bodies[2]["input"]) == 5
    assert "previous_interaction_id" not in bodies[3]
    assert bodies[3]["input"][0] == {"type": "user_input", "content": [{"type": "text", "text": "my name is Cy"}]}
    assert len(bodies[3]["input"]) == 7


def test_an_interactions_answer_moves_to_other_protocols_without_its_interaction_id():
    """The empty thinking item naming the interaction is left out by every other protocol (agenthub.foreign)."""
    from longrun_server import responses_events

    with LongrunServer() as server:
        server.add("v1_tool", fixture_events("tool_round_trip.sse"), done=True)
        answer = client(server).response([{"role": "user", "content_items": [{"type": "text", "text": "w?"}]}])
        server.add("resp_next", responses_events("resp_next", ["ok"]))
        results = {"role": "user", "content_items": [
            {"type": "tool_result", "text": "18C", "tool_call_id": "fc_paris_1"},
            {"type": "tool_result", "text": "22C", "tool_call_id": "fc_tokyo_2"}]}
        gpt = AutoLLMClient("gpt-5.5", api_key="k", base_url=server.url + "/v1", client_type="openai-responses")
        gpt.response([{"role": "user", "content_items": [{"type": "text", "text": "w?"}]}, answer, results])
        sent = server.requests[-1]["body"]["input"]
    assert answer["content_items"][-1] == {"type": "thinking", "thinking": "",
                                           "fidelity": {"interaction_id": "v1_ChdpbnRlcmFjdGlvbi10b29sLTAwMg"}}
    assert [i["type"] for i in sent] == ["message", "function_call", "function_call", "function_call_output",
                                         "function_call_output"]
