"""What a tool call does stays what it did (runner10): a tool that ran is never reported as one that failed to
run (what it returned cannot be sent, an around_call hook failed after it), and what a tool, a provider or an
around_call hook does to the arguments it was handed never changes the model's call in the conversation."""

import json
from typing import Any

import pytest
from agent_streams import chat_calls, chat_text
from sse_server import Answer, SSEServer

from agenthub import AutoLLMClient, tool
from agenthub.agent import ToolHook

KEY = "sk-test-side-effects-0001"
USER = {"role": "user", "content_items": [{"type": "text", "text": "Go."}]}


def client_for(server):
    return AutoLLMClient("gpt-4o-mini", api_key=KEY, base_url=server.url + "/v1", client_type="openai-chat",
                         max_retries=0)


def tool_results(request):
    return [m for m in request["body"]["messages"] if m["role"] == "tool"]


class _NoStr(object):
    def __str__(self):
        raise RuntimeError("no text")


def _circular():
    value = {"id": 7}
    value["self"] = value
    return value


RETURNED = {
    "circular": (_circular, "pay ran, but what it returned cannot be sent: ValueError: Circular reference detected"),
    "no_str": (_NoStr, "pay ran, but what it returned cannot be sent: RuntimeError: no text"),
    "bad_images": (lambda: {"type": "tool_result", "text": "paid", "images": 7},
                   "pay ran, but what it returned cannot be sent: TypeError: a tool_result's images must be a list of "
                   "data: URLs (str); got a int"),
}


@pytest.mark.parametrize("kind", sorted(RETURNED))
@pytest.mark.parametrize("calls", [[("c1", "pay", "{}")],  # inline
                                   [("c1", "pay", "{}"), ("c2", "other", "{}")]])  # on the run's threads
def test_a_tool_whose_return_value_cannot_be_sent_is_said_to_have_run(kind, calls):
    make, text = RETURNED[kind]
    ran = []

    @tool(idempotent=False)
    def pay() -> Any:
        """Pay (not safe to repeat)."""
        ran.append(1)
        return make()

    @tool
    def other() -> str:
        """Another tool."""
        return "other"

    with SSEServer() as server:
        server.answers += [Answer([chat_calls(calls)]), Answer([chat_text("ok")])]
        result = client_for(server).run([USER], tools=[pay, other]).result()
        sent = tool_results(server.requests[1])
    assert ran == [1]
    assert result.messages[1]["content_items"][0] == {"type": "tool_result", "tool_call_id": "c1", "text": text,
                                                      "is_error": True}
    assert sent[0] == {"role": "tool", "tool_call_id": "c1", "content": text}


def test_a_huge_int_a_tool_returns_is_said_to_have_run():
    @tool
    def count() -> int:
        """Count."""
        return 10 ** 5000

    with SSEServer() as server:
        server.answers += [Answer([chat_calls([("c1", "count", "{}")])]), Answer([chat_text("ok")])]
        result = client_for(server).run([USER], tools=[count]).result()
    item = result.messages[1]["content_items"][0]
    if isinstance(item["text"], str) and item["text"].startswith("1000"):  # (a Python without the digits limit)
        assert len(item["text"]) == 5001 and "is_error" not in item
    else:
        assert item["is_error"] is True
        assert item["text"].startswith("count ran, but what it returned cannot be sent: ValueError: Exceeds the limit")


class _FailsAfter(ToolHook):
    def __init__(self, returns=False):
        self.returns = returns

    def around_call(self, run, call, proceed):
        item = proceed()
        if self.returns:
            return item["text"]  # (not the item: a ConfigError)
        raise RuntimeError("audit log down")


@pytest.mark.parametrize("returns, error", [
    (False, "RuntimeError: audit log down"),
    (True, "ConfigError: an around_call hook returned a str, not the tool_result item proceed() returns"),
])
def test_an_around_call_hook_failing_after_the_tool_ran_keeps_what_the_tool_returned(returns, error):
    ran = []

    @tool(idempotent=False)
    def pay(amount: int) -> str:
        """Pay (not safe to repeat)."""
        ran.append(amount)
        return "paid {}".format(amount)

    with SSEServer() as server:
        server.answers += [Answer([chat_calls([("c1", "pay", '{"amount": 30}')])]), Answer([chat_text("ok")])]
        result = client_for(server).run([USER], tools=[pay], hooks=[_FailsAfter(returns)]).result()
    assert ran == [30]
    assert result.messages[1]["content_items"] == [{
        "type": "tool_result", "tool_call_id": "c1", "is_error": True,
        "text": "pay ran and returned: paid 30; then an around_call hook failed: " + error}]


def test_an_around_call_hook_failing_before_the_tool_ran_is_the_error_alone():
    class Refuses(ToolHook):
        def around_call(self, run, call, proceed):
            raise RuntimeError("not now")

    @tool
    def pay(amount: int) -> str:
        """Pay."""
        raise AssertionError("never runs")

    with SSEServer() as server:
        server.answers += [Answer([chat_calls([("c1", "pay", '{"amount": 30}')])]), Answer([chat_text("ok")])]
        result = client_for(server).run([USER], tools=[pay], hooks=[Refuses()]).result()
    assert result.messages[1]["content_items"] == [{
        "type": "tool_result", "tool_call_id": "c1", "is_error": True, "text": "RuntimeError: not now"}]


class _Mutating(object):
    """A tool provider whose call_tool changes the arguments it is handed (as a client library that pops its own
    keys might)."""
    name = "p"

    def list_tools(self):
        return [{"name": "t", "description": "A tool.", "parameters": {"type": "object", "properties": {}}}]

    def call_tool(self, name, arguments):
        arguments["tags"].append("added")
        arguments.pop("note")
        return "ran"


@tool
def takes_any(tags: Any, note: str) -> str:
    """A tool whose hint lets its argument through as it came."""
    tags.append("added")
    return "ran"


class _EditsInAround(ToolHook):
    def around_call(self, run, call, proceed):
        call["arguments"]["tags"].append("hook")
        call["arguments"].pop("note")
        return proceed()


@pytest.mark.parametrize("name, tools, hooks", [
    ("p__t", [_Mutating()], []),
    ("takes_any", [takes_any], []),
    ("takes_any", [takes_any], [_EditsInAround()]),
])
def test_what_a_tool_does_to_its_arguments_leaves_the_models_call_as_it_came(name, tools, hooks):
    arguments = '{"tags": ["a"], "note": "n"}'
    with SSEServer() as server:
        server.answers += [Answer([chat_calls([("c1", name, arguments)])]), Answer([chat_text("ok")])]
        result = client_for(server).run([USER], tools=tools, hooks=hooks).result()
        sent = server.requests[1]["body"]["messages"][1]["tool_calls"][0]["function"]
    assert result.messages[0]["content_items"][0]["arguments"] == {"tags": ["a"], "note": "n"}
    assert sent == {"name": name, "arguments": '{"tags":["a"],"note":"n"}'}
    assert result.messages[1]["content_items"][0]["text"] == "ran"


def test_edited_arguments_run_as_they_were_when_approved():
    """approve() answers every call of a turn before any runs: arguments it edited run as they were when it gave
    them, whatever it does to the objects afterwards (a form reused for the next call)."""
    got = []

    @tool
    def tag(tags: Any) -> str:
        """Tag."""
        got.append(list(tags))
        return "tagged"

    form = {"tags": []}

    def approve(call):
        form["tags"].clear()
        form["tags"].append(call["tool_call_id"])
        return {"arguments": form}

    calls = [("c1", "tag", '{"tags": []}'), ("c2", "tag", '{"tags": []}')]
    with SSEServer() as server:
        server.answers += [Answer([chat_calls(calls)]), Answer([chat_text("ok")])]
        result = client_for(server).run([USER], tools=[tag], approve=approve, parallel=1).result()
    assert got == [["c1"], ["c2"]]
    assert [c["arguments"] for c in result.messages[0]["content_items"]] == [{"tags": []}, {"tags": []}]


class _EditsBefore(ToolHook):
    def before_call(self, call):
        call["arguments"]["amount"] = 99  # (in place: no decision; arguments change only by {"arguments": ...})


def _edits_in_approve(call):
    call["arguments"]["amount"] += 1
    return True


@pytest.mark.parametrize("hooks, approve", [([_EditsBefore()], None), ([], _edits_in_approve)])
def test_what_before_call_or_approve_does_to_the_call_changes_neither_what_runs_nor_the_models_call(hooks, approve):
    got = []

    @tool(idempotent=False)
    def pay(amount: int) -> str:
        """Pay (not safe to repeat)."""
        got.append(amount)
        return "paid"

    with SSEServer() as server:
        server.answers += [Answer([chat_calls([("c1", "pay", '{"amount": 30}')])]), Answer([chat_text("ok")])]
        result = client_for(server).run([USER], tools=[pay], hooks=hooks, approve=approve).result()
        sent = server.requests[1]["body"]["messages"][1]["tool_calls"][0]["function"]
    assert got == [30]
    assert result.messages[0]["content_items"][0]["arguments"] == {"amount": 30}
    assert sent == {"name": "pay", "arguments": '{"amount":30}'}


def test_abort_while_approve_is_asked_asks_no_more():
    """abort() while approve() is asked for a turn's first call: none of the turn's calls runs, and approve (a
    person at a terminal, say) is asked about none of the others."""
    asked = []
    holder = {}

    @tool
    def note(text: str) -> str:
        """Note something."""
        raise AssertionError("never runs")

    def approve(call):
        asked.append(call["tool_call_id"])
        holder["run"].abort()
        return True

    calls = [("c1", "note", '{"text": "a"}'), ("c2", "note", '{"text": "b"}'), ("c3", "note", '{"text": "c"}')]
    with SSEServer() as server:
        server.answers.append(Answer([chat_calls(calls)]))
        holder["run"] = client_for(server).run([USER], tools=[note], approve=approve)
        result = holder["run"].result()
    assert asked == ["c1"]
    assert (result.stop, [c["tool_call_id"] for c in result.pending], len(result.messages)) == (
        "aborted", ["c1", "c2", "c3"], 1)


@pytest.mark.parametrize("image, shown", [
    ("data:image/png;base64,@@@", "'data:image/png;base64,@@@'"),
    ("not a url", "'not a url'"),
    ("data:image/png,rawtext", "'data:image/png,rawtext'"),
    ("data:;base64,iVBORw0KGgo=", "'data:;base64,iVBORw0KGgo='"),
    ("data:image/png;base64,@" + "A" * 100, "'data:image/png;base64,@" + "A" * 17 + "...'"),  # (its head)
])
def test_an_image_no_request_can_carry_is_the_calls_error_result_not_a_run_that_cannot_go_on(image, shown):
    """A returned tool_result item's images are data: URLs of an image (or http(s) URLs): one that is not (a
    payload that is no base64, no image type, no URL at all) made the next request a ConfigError after the tool ran,
    or went to the provider as is, and every resume of the conversation failed the same way."""
    @tool
    def chart() -> Any:
        """Draw a chart."""
        return {"type": "tool_result", "text": "a chart", "images": ["data:image/png;base64,iVBORw0KGgo=", image]}

    with SSEServer() as server:
        server.answers += [Answer([chat_calls([("c1", "chart", "{}")])]), Answer([chat_text("ok")])]
        client = AutoLLMClient("gpt-4o", api_key=KEY, base_url=server.url + "/v1", client_type="openai-chat",
                               max_retries=0)
        result = client.run([USER], tools=[chart]).result()
        sent = tool_results(server.requests[1])
    text = ("chart ran, but what it returned cannot be sent: ValueError: a tool_result's images must be data: URLs "
            "of an image (base64) or http(s) URLs; got {}".format(shown))
    assert result.stop == "done"
    assert result.messages[1]["content_items"] == [{"type": "tool_result", "tool_call_id": "c1", "text": text,
                                                    "is_error": True}]
    assert sent == [{"role": "tool", "tool_call_id": "c1", "content": text}]


def test_images_as_data_and_http_urls_go_as_they_came():
    images = ["data:image/png;base64,iVBORw0KGgo=", "https://example.com/chart.png"]

    @tool
    def chart() -> Any:
        """Draw a chart."""
        return {"type": "tool_result", "text": "a chart", "images": images}

    with SSEServer() as server:
        server.answers += [Answer([chat_calls([("c1", "chart", "{}")])]), Answer([chat_text("ok")])]
        client = AutoLLMClient("gpt-4o", api_key=KEY, base_url=server.url + "/v1", client_type="openai-chat",
                               max_retries=0)
        result = client.run([USER], tools=[chart]).result()
    assert result.messages[1]["content_items"] == [{"type": "tool_result", "tool_call_id": "c1", "text": "a chart",
                                                    "images": images}]
