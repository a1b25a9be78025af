"""A provider's MCP server asking for approval (issue 37 C1): an OpenAI Responses turn whose only output is an
``mcp_approval_request`` stops the run for approval with the request in ``pending`` as a call; a decision (or
``approve``) answers it with an ``mcp_approval_response`` on the next request."""

import json

from agent_streams import _sse, responses_text
from sse_server import Answer, SSEServer

from agenthub import AutoLLMClient, tool

USER = {"role": "user", "content_items": [{"type": "text", "text": "Which repos are open?"}]}
REQUEST = {"id": "mcpr_1", "type": "mcp_approval_request", "server_label": "github", "name": "list_repos",
           "arguments": '{"owner": "octo"}'}
SERVERS = {"mcp_servers": [{"name": "github", "url": "https://mcp.example.com/mcp"}]}


@tool(name="list_repos")
def local_list_repos(owner: str) -> str:
    """A local tool of the same name: never run for the server's request."""
    raise AssertionError("the local tool ran")


def approval_turn():
    events = [{"type": "response.created", "response": {"id": "resp_1", "status": "in_progress", "output": []}},
              {"type": "response.output_item.added", "output_index": 0, "item": REQUEST},
              {"type": "response.output_item.done", "output_index": 0, "item": REQUEST},
              {"type": "response.completed", "response": {"id": "resp_1", "object": "response",
                                                           "status": "completed", "output": [REQUEST],
                                                           "usage": {"input_tokens": 10, "output_tokens": 5}}}]
    return _sse(events, named=True)


def client_for(server):
    return AutoLLMClient("gpt-5.5", api_key="sk-test-mcpapproval-01", base_url=server.url + "/v1",
                         client_type="openai-responses", max_retries=0)


CALL = {"type": "tool_call", "name": "list_repos", "arguments": {"owner": "octo"}, "tool_call_id": "mcpr_1",
        "fidelity": {"server_item": REQUEST}}


def test_an_approval_request_stops_the_run_and_a_decision_answers_it():
    with SSEServer() as server:
        server.answers += [Answer([approval_turn()]), Answer([responses_text("octo/a, octo/b")])]
        client = client_for(server)
        stopped = client.run([USER], SERVERS, tools=[local_list_repos]).result()
        assert stopped.stop == "approval" and stopped.pending == [CALL]
        saved = json.loads(json.dumps([USER] + stopped.messages))
        done = client.run(saved, SERVERS, tools=[local_list_repos], decisions={"mcpr_1": True}).result()
        sent = server.requests[1]["body"]["input"]
    assert done.stop == "done"
    assert sent[-2:] == [REQUEST, {"type": "mcp_approval_response", "approval_request_id": "mcpr_1", "approve": True}]
    assert done.messages[0] == {"role": "user", "content_items": [{
        "type": "tool_result", "tool_call_id": "mcpr_1", "text": "approved",
        "fidelity": {"server_item": {"type": "mcp_approval_response", "approval_request_id": "mcpr_1",
                                     "approve": True}}}]}


def test_approve_is_asked_and_a_reason_denies_it():
    asked = []
    with SSEServer() as server:
        server.answers += [Answer([approval_turn()]), Answer([responses_text("ok")])]
        result = client_for(server).run([USER], SERVERS, tools=[local_list_repos],
                                        approve=lambda call: asked.append(call) or "not today").result()
        sent = server.requests[1]["body"]["input"]
    assert result.stop == "done" and asked == [CALL]
    assert sent[-1] == {"type": "mcp_approval_response", "approval_request_id": "mcpr_1", "approve": False,
                        "reason": "not today"}
    assert result.messages[1]["content_items"][0]["text"] == "denied: not today"


def test_an_approval_request_whose_arguments_are_an_object_or_a_number_is_shown_not_a_crash():
    """A compatible server that sends the request's arguments as a JSON object (not a string holding one), or as
    something else: the call shows the object as its arguments (anything else under "arguments")."""
    global REQUEST
    kept = REQUEST
    try:
        for arguments, shown in (({"owner": "octo"}, {"owner": "octo"}), (7, {"arguments": 7}),
                                 (["a"], {"arguments": ["a"]})):
            REQUEST = dict(kept, arguments=arguments)
            with SSEServer() as server:
                server.answers += [Answer([approval_turn()])]
                stopped = client_for(server).run([USER], SERVERS, tools=[local_list_repos]).result()
            assert stopped.stop == "approval"
            assert stopped.pending == [dict(CALL, arguments=shown, fidelity={"server_item": REQUEST})]
    finally:
        REQUEST = kept
