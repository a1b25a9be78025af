"""A decision covers exactly the pending call it was given for (issue 37 A1; adversarial4 T07, T08).

- a decision applies to the calls the run was resumed with, once: a later turn's call under the same id
  (servers that number calls per answer) asks again;
- two calls of one turn sharing an id: none runs (StreamProtocolError from a model turn, ConfigError from a
  saved state);
- keyed by ``call_digest(call)``, a decision binds the id, the name and the arguments: a saved state edited
  after the decision stops for approval again;
- a decision for a call the run does not resume is a ConfigError;
- in one process, an ``@tool(idempotent=False)`` call a saved state's resume ran is not run again by another
  resume of that state (the same ``decisions=`` again after the next request failed, ``run`` after
  ``run_stateful``): it is handed back pending and interrupted, and runs only on a decision given after that.
Also (issue 37 D): the calls of a turn that did not finish with tool_call or stop need a decision."""

import copy
import json

import pytest
from agent_streams import chat_calls, chat_text
from sse_server import Answer, SSEServer

from agenthub import AutoLLMClient, ConfigError, StreamProtocolError, UpstreamError, tool
from agenthub.agent import call_digest, runner

USER = {"role": "user", "content_items": [{"type": "text", "text": "Delete old.log"}]}
ran = []


@tool(requires_approval=True)
def delete_file(path: str) -> str:
    """Delete a file."""
    ran.append(("delete_file", path))
    return "deleted " + path


@tool(requires_approval=True)
def wipe_disk(device: str) -> str:
    """Wipe a disk."""
    ran.append(("wipe_disk", device))
    return "wiped " + device


TOOLS = [delete_file, wipe_disk]


@pytest.fixture(autouse=True)
def clean():
    ran.clear()
    runner._SHOWN.clear()  # what this process showed in pending (each test starts with nothing shown)
    runner._RAN.clear()  # the side effects this process ran from a saved state


def client_for(server):
    return AutoLLMClient("gpt-4o-mini", api_key="sk-test-decide-0001", base_url=server.url + "/v1",
                         client_type="openai-chat", max_retries=0)


def stopped_for_approval(server):
    server.answers.append(Answer([chat_calls([("call_0", "delete_file", '{"path": "old.log"}')])]))
    first = client_for(server).run([USER], tools=TOOLS).result()
    assert first.stop == "approval" and ran == []
    return first


def test_a_decision_does_not_cover_a_later_turns_call_with_the_same_id():
    """T08 (a): the server numbers calls per answer; the approval of call_0 = old.log is not one of
    call_0 = /home/user in the next turn."""
    with SSEServer() as server:
        first = stopped_for_approval(server)
        server.answers += [Answer([chat_calls([("call_0", "delete_file", '{"path": "/home/user"}')])])]
        second = client_for(server).run([USER] + first.messages, tools=TOOLS, decisions={"call_0": True}).result()
    assert ran == [("delete_file", "old.log")]
    assert second.stop == "approval" and [c["arguments"] for c in second.pending] == [{"path": "/home/user"}]


def test_run_stateful_a_decision_does_not_cover_a_later_turns_call_with_the_same_id():
    """And the state is the client's history, not the command: {"call_0": True} delivered again (a retry, a double
    submit) after it ran old.log and the run stopped on call_0 = /home/user must not approve that call: this
    process decided another call_0 in an earlier turn of the conversation (ConfigError, nothing run or sent);
    keyed by call_digest it runs."""
    with SSEServer() as server:
        server.answers += [Answer([chat_calls([("call_0", "delete_file", '{"path": "old.log"}')])]),
                           Answer([chat_calls([("call_0", "delete_file", '{"path": "/home/user"}')])])]
        client = client_for(server)
        assert client.run_stateful(USER, tools=TOOLS).result().stop == "approval"
        second = client.run_stateful(None, tools=TOOLS, decisions={"call_0": True}).result()
        assert ran == [("delete_file", "old.log")]
        assert second.stop == "approval" and [c["arguments"] for c in second.pending] == [{"path": "/home/user"}]
        with pytest.raises(ConfigError) as caught:
            client.run_stateful(None, tools=TOOLS, decisions={"call_0": True})
        assert str(caught.value) == (
            "decisions['call_0']: this run decided another call under that id before (in an earlier turn); the call "
            "waiting now is another one: a decision by id cannot tell them apart; key it by call_digest(call)")
        assert ran == [("delete_file", "old.log")] and len(server.requests) == 2
        server.answers.append(Answer([chat_text("Done.")]))
        third = client.run_stateful(None, tools=TOOLS, decisions={call_digest(second.pending[0]): True}).result()
    assert third.stop == "done" and ran == [("delete_file", "old.log"), ("delete_file", "/home/user")]


def test_two_calls_of_one_turn_with_one_id_run_neither():
    """T08 (b): their results could not be told apart, nor a decision given for one of them."""
    chunks = [{"id": "c1", "choices": [{"index": 0, "delta": {"tool_calls": [
        {"index": n, "id": "dup", "type": "function", "function": {"name": "delete_file", "arguments": args}}]},
        "finish_reason": None}]} for n, args in enumerate(['{"path": "old.log"}', '{"path": "/etc"}'])]
    chunks.append({"id": "c1", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
    body = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"
    with SSEServer() as server:
        server.answers += [Answer([body])]
        run = client_for(server).run([USER], tools=TOOLS, approve=lambda call: True)
        with pytest.raises(StreamProtocolError) as caught:
            run.result()
    assert str(caught.value) == "the model's turn has several tool calls with the id dup: none of them was run"
    assert ran == [] and [m["role"] for m in run.messages] == ["assistant"]


def tampered(first, change):
    state = json.loads(json.dumps([USER] + first.messages))
    change(state[-1]["content_items"])
    return state


def edit_arguments(items):
    items[-1]["arguments"] = {"path": "/home/user/thesis.tex"}


def second_call_same_id(items):
    items.append(dict(copy.deepcopy(items[-1]), arguments={"path": "/home/user/.ssh/id_ed25519"}))


def moved_to_another_tool(items):
    items[-1]["name"], items[-1]["arguments"] = "wipe_disk", {"device": "/dev/sda"}


@pytest.mark.parametrize("change", [edit_arguments, moved_to_another_tool])
def test_a_digest_decision_does_not_run_a_call_edited_after_it(change):
    """T07: the user approved delete_file("old.log") by its digest; the saved state was edited before the
    resume: the run stops for approval again, showing the call as it now is, and nothing runs."""
    with SSEServer() as server:
        first = stopped_for_approval(server)
        decisions = {call_digest(call): True for call in first.pending}
        state = tampered(first, change)
        result = client_for(server).run(state, tools=TOOLS, decisions=decisions).result()
        assert len(server.requests) == 1  # nothing was sent
    assert ran == [] and result.stop == "approval"
    assert result.pending == [state[-1]["content_items"][-1]]


def test_a_saved_state_with_two_calls_under_one_id_is_refused():
    with SSEServer() as server:
        first = stopped_for_approval(server)
        state = tampered(first, second_call_same_id)
        for decisions in ({"call_0": True}, {call_digest(first.pending[0]): True}):
            with pytest.raises(ConfigError, match=r"the calls to resume share a tool_call_id \(call_0\)"):
                client_for(server).run(state, tools=TOOLS, decisions=decisions)
    assert ran == []


def test_a_digest_decision_runs_the_call_it_was_given_for_once():
    with SSEServer() as server:
        first = stopped_for_approval(server)
        server.answers += [Answer([chat_text("Done.")])]
        decisions = {call_digest(call): True for call in first.pending}
        result = client_for(server).run(json.loads(json.dumps([USER] + first.messages)), tools=TOOLS,
                                        decisions=decisions).result()
    assert result.stop == "done" and ran == [("delete_file", "old.log")]
    assert call_digest(first.pending[0]) == call_digest(
        {"tool_call_id": "call_0", "name": "delete_file", "arguments": {"path": "old.log"}})
    assert call_digest(first.pending[0]).startswith("sha256:") and len(call_digest(first.pending[0])) == 71


def test_a_decision_for_a_call_the_run_does_not_resume_is_refused():
    with SSEServer() as server:
        first = stopped_for_approval(server)
        with pytest.raises(ConfigError, match=r"decisions for calls this run does not resume .*'call_a'"):
            client_for(server).run([USER] + first.messages, tools=TOOLS, decisions={"call_a": True})
    assert ran == []


def test_a_digest_decision_when_no_call_waits_is_refused_before_anything_is_sent():
    """A digest that matches no waiting call is let go when calls wait (its call changed: it asks again);
    with none waiting, it is for a call the run does not resume."""
    decisions = {call_digest({"tool_call_id": "call_0", "name": "delete_file", "arguments": {"path": "old.log"}}): True}
    with SSEServer() as server:
        client = client_for(server)
        for start in (lambda: client.run([USER], tools=TOOLS, decisions=decisions),
                      lambda: client.run_stateful(USER, tools=TOOLS, decisions=decisions)):
            with pytest.raises(ConfigError) as caught:
                start()
            assert str(caught.value) == ("decisions for calls this run does not resume (a decision covers one of the "
                                         "calls waiting when the run starts): {!r}".format(list(decisions)[0]))
        assert server.requests == [] and client.get_history() == []
    assert ran == []


def test_the_calls_of_a_turn_cut_short_are_not_run_without_a_decision():
    """Issue 37 D: a turn that ended otherwise than with tool_call or stop (here: length) does not run its
    calls as asked: they wait in pending (with approve=, approve is asked)."""
    @tool
    def read_file(path: str) -> str:
        """Read a file."""
        ran.append(("read_file", path))
        return "contents"

    cut = chat_calls([("c1", "read_file", '{"path": "a.txt"}')]).replace(b'"finish_reason": "tool_calls"',
                                                                           b'"finish_reason": "length"')
    with SSEServer() as server:
        server.answers += [Answer([cut]), Answer([cut]), Answer([chat_text("ok")])]
        stopped = client_for(server).run([USER], tools=[read_file]).result()
        asked = []
        done = client_for(server).run([USER], tools=[read_file], approve=lambda c: asked.append(c) or True).result()
    assert stopped.final["finish_reason"] == "length"
    assert stopped.stop == "approval" and [c["tool_call_id"] for c in stopped.pending] == ["c1"]
    assert done.stop == "done" and [c["tool_call_id"] for c in asked] == ["c1"]
    assert ran == [("read_file", "a.txt")]


@pytest.mark.parametrize("change", [edit_arguments, moved_to_another_tool])
def test_a_decision_by_id_covers_only_the_call_this_process_showed(change):
    """T07 as the harness writes it: decisions keyed by tool_call_id, the saved state edited after the user
    saw the pending call: in the process that showed it, the edited call stops for approval again."""
    with SSEServer() as server:
        first = stopped_for_approval(server)
        state = tampered(first, change)
        result = client_for(server).run(state, tools=TOOLS, decisions={"call_0": True}).result()
        assert len(server.requests) == 1  # nothing was sent
    assert ran == [] and result.stop == "approval"
    assert result.pending == [state[-1]["content_items"][-1]]


def test_a_decision_by_id_runs_the_call_this_process_showed():
    with SSEServer() as server:
        first = stopped_for_approval(server)
        server.answers += [Answer([chat_text("Done.")])]
        result = client_for(server).run(json.loads(json.dumps([USER] + first.messages)), tools=TOOLS,
                                        decisions={"call_0": True}).result()
    assert result.stop == "done" and ran == [("delete_file", "old.log")]


@tool(requires_approval=True, idempotent=False)
def pay(amount: int) -> str:
    """Pay."""
    ran.append(("pay", amount))
    return "paid"


def test_the_same_decisions_again_after_the_next_request_failed_do_not_run_a_side_effect_twice():
    with SSEServer() as server:
        server.answers += [Answer([chat_calls([("c1", "pay", '{"amount": 30}')])]), Answer([b"busy"], status=503)]
        client = client_for(server)
        first = client.run([USER], tools=[pay]).result()
        saved = json.loads(json.dumps([USER] + first.messages))
        decisions = {"c1": True}
        with pytest.raises(UpstreamError):
            client.run(saved, tools=[pay], decisions=decisions).result()  # pay ran; the next request failed
        assert ran == [("pay", 30)] and len(server.requests) == 2
        again = client.run(saved, tools=[pay], decisions=decisions).result()  # a retry of the whole resume
        assert (again.stop, again.interrupted, again.pending) == ("approval", ["c1"], first.pending)
        assert ran == [("pay", 30)] and len(server.requests) == 2  # not run, nothing sent
        server.answers.append(Answer([chat_text("Paid.")]))
        told = client.run(saved, tools=[pay], decisions={"c1": "it went through"}).result()
    assert told.stop == "done" and ran == [("pay", 30)]
    assert server.requests[2]["body"]["messages"][-1] == {"role": "tool", "tool_call_id": "c1",
                                                          "content": "denied: it went through"}


def test_run_after_run_stateful_on_the_same_state_does_not_run_a_side_effect_twice():
    with SSEServer() as server:
        server.answers += [Answer([chat_calls([("c1", "pay", '{"amount": 30}')])]), Answer([chat_text("Paid.")]),
                           Answer([chat_text("Paid.")])]
        client = client_for(server)
        assert client.run_stateful(USER, tools=[pay]).result().stop == "approval"
        saved = json.loads(json.dumps(client.get_history()))
        assert client.run_stateful(None, tools=[pay], decisions={"c1": True}).result().stop == "done"
        again = client_for(server).run(saved, tools=[pay], decisions={"c1": True}).result()
        assert (again.stop, again.interrupted, [c["tool_call_id"] for c in again.pending]) == ("approval", ["c1"],
                                                                                               ["c1"])
        assert ran == [("pay", 30)] and len(server.requests) == 2
        # shown again, decided again (the user wants a second payment): it runs, once more
        last = client_for(server).run(saved, tools=[pay], decisions={"c1": True}).result()
    assert last.stop == "done" and ran == [("pay", 30), ("pay", 30)] and len(server.requests) == 3


def test_a_side_effect_of_a_saved_state_runs_again_from_another_conversation():
    """The memory is of this conversation's call: the same call (id, name, arguments) after another question
    is another call."""
    other = {"role": "user", "content_items": [{"type": "text", "text": "Pay the other invoice."}]}
    with SSEServer() as server:
        server.answers += [Answer([chat_calls([("c1", "pay", '{"amount": 30}')])]),
                           Answer([chat_calls([("c1", "pay", '{"amount": 30}')])]),
                           Answer([chat_text("Paid.")]), Answer([chat_text("Paid.")])]
        client = client_for(server)
        states = [[question] + client.run([question], tools=[pay]).result().messages for question in (USER, other)]
        results = [client.run(state, tools=[pay], decisions={"c1": True}).result() for state in states]
    assert [r.stop for r in results] == ["done", "done"] and ran == [("pay", 30), ("pay", 30)]


@tool(idempotent=False)
def send_report(to: str = "everyone@corp.example") -> str:
    """Send the report."""
    ran.append(("send_report", to))
    return "sent to " + to


CUT = [("c1", "send_report", '{"to": "boss@corp.exam'), ("c2", "delete_file", '{"path": "old.log"}')]
CUT_ERROR = ("ToolCallArgumentParseError: arguments of tool call 'send_report' (c1) is not valid JSON (Unterminated "
             "string starting at: line 1 column 8 (char 7)); raw arguments (22 chars): {\"to\": \"boss@corp.exam")


@pytest.mark.parametrize("stateful", [False, True])
def test_a_call_whose_arguments_did_not_parse_is_answered_when_the_turn_stops_for_approval(stateful):
    """The message holds {} as its arguments: a resume from it ran send_report() with its default (the report
    to everyone) where the live turn answered an error.  It is answered as the run stops, in one results message
    with the decided call's result on resume."""
    with SSEServer() as server:
        server.answers += [Answer([chat_calls(CUT)]), Answer([chat_text("Done.")])]
        client = client_for(server)
        first = client.run_stateful(USER, tools=[send_report, delete_file]) if stateful else \
            client.run([USER], tools=[send_report, delete_file])
        events = list(first)
        first = first.result()
        assert (first.stop, [c["tool_call_id"] for c in first.pending]) == ("approval", ["c2"])
        assert first.messages[-1] == {"role": "user", "content_items": [
            {"type": "tool_result", "tool_call_id": "c1", "text": CUT_ERROR, "is_error": True}]}
        assert events[-1]["content_items"] == first.messages[-1]["content_items"]  # (its result event)
        assert [(c["tool_call_id"], c["is_error"]) for c in first.calls] == [("c1", True)]
        second = client.run_stateful(None, tools=[send_report, delete_file], decisions={"c2": True}) if stateful \
            else client.run(json.loads(json.dumps([USER] + first.messages)), tools=[send_report, delete_file],
                            decisions={"c2": True})
        assert second.result().stop == "done"
    assert ran == [("delete_file", "old.log")]
    assert [m for m in server.requests[1]["body"]["messages"] if m["role"] == "tool"] == [
        {"role": "tool", "tool_call_id": "c1", "content": CUT_ERROR},
        {"role": "tool", "tool_call_id": "c2", "content": "deleted old.log"}]


def test_a_call_whose_arguments_did_not_parse_is_answered_not_handed_back_at_max_turns():
    with SSEServer() as server:
        server.answers += [Answer([chat_calls(CUT)])]
        result = client_for(server).run([USER], tools=[send_report, delete_file], max_turns=1).result()
    assert (result.stop, [c["tool_call_id"] for c in result.pending]) == ("max_turns", ["c2"])
    assert result.messages[-1]["content_items"] == [
        {"type": "tool_result", "tool_call_id": "c1", "text": CUT_ERROR, "is_error": True}]
    assert ran == []


def test_a_call_whose_arguments_did_not_parse_is_answered_when_the_run_is_aborted_in_its_turn():
    """abort() while the turn's first call runs (one at a time): the cut call after it gets its error result,
    not a place in pending with {} as its arguments."""
    import threading

    started, release = threading.Event(), threading.Event()

    @tool(name="look_up")
    def look_up(city: str) -> str:
        """Look a city up."""
        started.set()
        assert release.wait(30)
        ran.append(("look_up", city))
        return city + ": open"

    calls = [("c0", "look_up", '{"city": "Rome"}')] + CUT
    with SSEServer() as server:
        server.answers += [Answer([chat_calls(calls)])]
        run = client_for(server).run([USER], tools=[look_up, send_report, delete_file], parallel=1,
                                     approve=lambda call: True)
        reader = threading.Thread(target=run.result)
        reader.start()
        assert started.wait(30)
        run.abort()
        release.set()
        reader.join(30)
        result = run.result()
    assert result.stop == "aborted" and ran == [("look_up", "Rome")]
    assert [c["tool_call_id"] for c in result.pending] == ["c2"]
    assert [(i["tool_call_id"], i.get("is_error", False)) for i in result.messages[-1]["content_items"]] == [
        ("c0", False), ("c1", True)]


def test_two_threads_resuming_one_state_with_one_decision_run_the_side_effect_once():
    """A double submit of one approval (two requests of a server, two threads): the first resume takes the call
    as it plans it, so the second, planned meanwhile, hands it back instead of running it too."""
    import threading

    from agenthub.agent import ToolHook

    @tool
    def note(text: str) -> str:
        """Note something."""
        ran.append(("note", text))
        return "noted"

    planning, second_done = threading.Event(), threading.Event()

    class Slow(ToolHook):  # holds the first resume between its two calls' planning
        def before_call(self, call):
            if call["tool_call_id"] == "c2":
                planning.set()
                assert second_done.wait(30)
            return None

    tools = [pay, note]
    with SSEServer() as server:
        server.answers += [Answer([chat_calls([("c1", "pay", '{"amount": 30}'), ("c2", "note", '{"text": "x"}')])]),
                           Answer([chat_text("Paid.")])]
        first = client_for(server).run([USER], tools=tools).result()
        saved = json.loads(json.dumps([USER] + first.messages))
        outcome = {}
        one = threading.Thread(target=lambda: outcome.setdefault("one", client_for(server).run(
            saved, tools=tools, decisions={"c1": True}, hooks=[Slow()]).result()))
        one.start()
        try:
            assert planning.wait(30)
            two = client_for(server).run(saved, tools=tools, decisions={"c1": True}).result()
        finally:
            second_done.set()
            one.join(30)
    assert (two.stop, two.interrupted) == ("approval", ["c1"])
    assert outcome["one"].stop == "done"
    assert sorted(ran) == [("note", "x"), ("pay", 30)] and len(server.requests) == 2


def test_a_resume_that_raises_before_its_calls_run_leaves_no_side_effect_taken():
    @tool
    def note(text: str) -> str:
        """Note something."""
        ran.append(("note", text))
        return "noted"

    def broken_approve(call):
        raise LookupError("the approval service is down")

    tools = [pay, note]
    with SSEServer() as server:
        server.answers += [Answer([chat_calls([("c1", "pay", '{"amount": 30}'), ("c2", "note", '{"text": "x"}')])]),
                           Answer([chat_text("Paid.")])]
        first = client_for(server).run([USER], tools=tools).result()
        saved = json.loads(json.dumps([USER] + first.messages))
        with pytest.raises(LookupError):
            client_for(server).run(saved, tools=tools, decisions={"c1": True}, approve=broken_approve).result()
        assert ran == []
        again = client_for(server).run(saved, tools=tools, decisions={"c1": True}).result()
    assert (again.stop, again.interrupted) == ("done", [])  # not handed back: it never ran
    assert sorted(ran) == [("note", "x"), ("pay", 30)]


def test_an_id_decision_does_not_cover_a_tampered_call_this_process_showed_in_another_conversation():
    """Servers that number calls per answer give every conversation a call_0: this process showed another user's
    call_0 = delete_file("/home/user"); this conversation's saved state, edited to that call, is not covered by the
    approval of its own call_0 = delete_file("old.log") (the shown calls are remembered per conversation)."""
    other = {"role": "user", "content_items": [{"type": "text", "text": "Clean my home folder"}]}
    with SSEServer() as server:
        first = stopped_for_approval(server)
        server.answers.append(Answer([chat_calls([("call_0", "delete_file", '{"path": "/home/user"}')])]))
        assert client_for(server).run([other], tools=TOOLS).result().stop == "approval"  # shown to someone else
        state = tampered(first, lambda items: items[-1].update(arguments={"path": "/home/user"}))
        result = client_for(server).run(state, tools=TOOLS, decisions={"call_0": True}).result()
        assert len(server.requests) == 2  # nothing was sent
    assert ran == [] and result.stop == "approval"
    assert result.pending == [state[-1]["content_items"][-1]]



@tool(requires_approval=True, idempotent=False)
def transfer(amount) -> str:
    """Transfer an amount (no hint: any JSON value)."""
    ran.append(("transfer", amount))
    return "sent {}".format(amount)


def _json_words(value):
    """json's own words for a value it cannot write (3.13 adds the value to a NaN's: "...: nan")."""
    try:
        json.dumps(value, allow_nan=False)
    except ValueError as exc:
        return "ValueError: {}".format(exc)
    raise AssertionError("json wrote {!r}".format(value))


NOT_JSON = [({1, 2}, "TypeError: Object of type set is not JSON serializable"),
            (float("nan"), _json_words(float("nan"))),
            (object(), "TypeError: Object of type object is not JSON serializable")]


@pytest.mark.parametrize("value, why", NOT_JSON)
def test_edited_arguments_json_cannot_hold_are_a_config_error_before_anything_is_sent(value, why):
    """Edited arguments stand in for the model's, which are JSON (a journal keeps them, a digest binds them):
    given up front (decisions=) the run refuses them before sending; from approve() or a hook, before the call
    runs, nothing of the turn run."""
    from agenthub.stores import MemoryStore

    with SSEServer() as server:
        server.answers.append(Answer([chat_calls([("call_0", "transfer", '{"amount": 5}')])]))
        first = client_for(server).run([USER], tools=[transfer]).result()
        assert first.stop == "approval"
        with pytest.raises(ConfigError) as info:
            client_for(server).run([USER] + first.messages, tools=[transfer],
                                   decisions={"call_0": {"arguments": {"amount": value}}})
        assert str(info.value) == "decisions['call_0']: its arguments must be JSON ({})".format(why)
        assert len(server.requests) == 1
        server.answers.append(Answer([chat_calls([("call_1", "transfer", '{"amount": 5}')])]))
        with pytest.raises(ConfigError) as info:
            client_for(server).run([USER], tools=[transfer], journal=MemoryStore(), run_id="t-1",
                                   approve=lambda call: {"arguments": {"amount": value}}).result()
        assert str(info.value) == "approve()'s answer for call_1: its arguments must be JSON ({})".format(why)
    assert ran == []


@pytest.mark.parametrize("how", ["abort", "after_call"])
def test_a_resume_ended_before_its_call_started_leaves_no_side_effect_taken(how):
    """A resume of a saved state that ends before its at-most-once call starts (abort() while approve() is asked,
    an after_call hook that raised on an earlier call of the turn) ran nothing: the next resume runs it on the
    decision given, not handing it back as interrupted."""
    from agenthub.agent import ToolHook

    @tool
    def note(text: str) -> str:
        """Note something."""
        ran.append(("note", text))
        return "noted"

    class Raises(ToolHook):
        def after_call(self, call, result, seconds):
            raise LookupError("the audit service is down")

    tools = [note, pay]
    holder = {}

    def approve(call):
        holder["run"].abort()
        return True

    with SSEServer() as server:
        server.answers += [Answer([chat_calls([("c1", "note", '{"text": "x"}'), ("c2", "pay", '{"amount": 30}')])]),
                           Answer([chat_text("Paid.")])]
        first = client_for(server).run([USER], tools=tools).result()
        assert (first.stop, [c["tool_call_id"] for c in first.pending]) == ("approval", ["c2"])
        saved = json.loads(json.dumps([USER] + first.messages))
        if how == "abort":
            holder["run"] = client_for(server).run(saved, tools=tools, approve=approve)
            stopped = holder["run"].result()
            assert (stopped.stop, [c["tool_call_id"] for c in stopped.pending]) == ("aborted", ["c1", "c2"])
            assert ran == []
        else:
            run = client_for(server).run(saved, tools=tools, decisions={"c2": True}, hooks=[Raises()], parallel=1)
            with pytest.raises(LookupError):
                run.result()
            assert ran == [("note", "x")] and run.messages[0]["content_items"][0]["tool_call_id"] == "c1"
            saved = saved + run.messages
        again = client_for(server).run(saved, tools=tools, decisions={"c2": True}).result()
    assert (again.stop, again.interrupted) == ("done", [])  # not handed back: it never ran
    assert ran[-1] == ("pay", 30) and ran.count(("pay", 30)) == 1


def test_run_stateful_with_a_message_while_calls_wait_for_a_decision_does_not_drop_the_message():
    """A message given to run_stateful goes with the results of the calls waiting: when they still need a decision
    (none was given), the run cannot send it, and it was dropped (the run stopped for approval again, the message in
    neither the history nor the result). A ConfigError now, nothing run or sent, the history as it was; given with
    the decisions, the message goes with the results in one user turn."""
    with SSEServer() as server:
        server.answers.append(Answer([chat_calls([("c1", "delete_file", '{"path": "old.log"}')])]))
        client = client_for(server)
        assert client.run_stateful(USER, tools=TOOLS).result().stop == "approval"
        history = client.get_history()
        later = {"role": "user", "content_items": [{"type": "text", "text": "Not that one: new.log"}]}
        with pytest.raises(ConfigError) as caught:
            client.run_stateful(later, tools=TOOLS).result()
        assert str(caught.value) == (
            "run_stateful was given a message while calls wait for a decision (c1), and none came: the message goes "
            "with their results; give decisions=... for them (a reason denies one) with the message")
        assert client.get_history() == history and ran == [] and len(server.requests) == 1
        server.answers.append(Answer([chat_text("Done.")]))
        done = client.run_stateful(later, tools=TOOLS, decisions={"c1": "the user wants new.log"}).result()
        sent = server.requests[1]["body"]["messages"][-2:]
    assert done.stop == "done" and ran == []
    assert sent == [{"role": "tool", "tool_call_id": "c1", "content": "denied: the user wants new.log"},
                    {"role": "user", "content": "Not that one: new.log"}]


@pytest.mark.parametrize("arguments, key", [({1: 5}, "1 is a int"),
                                            ({"amount": 5, "meta": {None: "x"}}, "None is a NoneType"),
                                            ({"amount": [{True: 1}]}, "True is a bool")])
def test_edited_arguments_with_a_key_json_has_no_such_key_for_are_a_config_error(arguments, key):
    """JSON's object keys are strings: json would write 1, None or True as "1", "null", "true" (two keys could
    become one), so the tool would not run with what was approved: refused as other values JSON cannot hold."""
    with SSEServer() as server:
        server.answers.append(Answer([chat_calls([("call_0", "transfer", '{"amount": 5}')])]))
        first = client_for(server).run([USER], tools=[transfer]).result()
        with pytest.raises(ConfigError) as info:
            client_for(server).run([USER] + first.messages, tools=[transfer],
                                   decisions={"call_0": {"arguments": arguments}})
        assert len(server.requests) == 1
    assert str(info.value) == ("decisions['call_0']: its arguments must be JSON (the key {}: JSON's object keys are "
                               "strings)".format(key))
    assert ran == []
