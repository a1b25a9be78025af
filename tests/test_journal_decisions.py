"""Approvals and decisions in journaled runs (docs/tools.md, "Approval" and "At least once, at most once").

- A decision runs an approved ``@tool(idempotent=False)`` call once: when the process running it is killed
  mid-call, the same command again (the same ``decisions=``, the same ``run_id``) does not run it a second
  time; the resume hands it back as interrupted, and only a decision given after that runs it again (once).
- A run refused while it is set up (a decision for a call it does not resume), or closed before it is read,
  lets its journal's claim go at once: the corrected call right after is not locked out for the lease's 30 s,
  and nothing is journaled (a closed run has no result, not an empty turn stored as the answer).
- A journaled run stopped for approval takes ``decisions=`` under its ``run_id``, for the turn it stopped on.
- A call whose streamed arguments did not parse (``{}`` in the message) has its error result journaled with
  its turn: a SIGKILLed run's resume does not run the tool with its defaults."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
from agent_streams import chat_calls, chat_text
from sse_server import Answer, SSEServer
from store_support import killed_after

from agenthub import AutoLLMClient, ConfigError, tool
from agenthub.agent import call_digest, current_call, runner
from agenthub.agent.journal import arguments_digest
from agenthub.stores import MemoryStore, open_store

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
KEY = "sk-test-journal-decide-0001"
USER = {"role": "user", "content_items": [{"type": "text", "text": "Pay the invoice."}]}
CALL = chat_calls([("c1", "pay", '{"amount": 30}')])

#: the child: the approved call resumed with a journal; pay prints, then waits to be killed
CHILD = textwrap.dedent("""
    import json, os, sys, time
    sys.path.insert(0, sys.argv[1])
    import agenthub.stores.journal as rows
    rows.JOURNAL_LEASE = 1.0  # a killed owner's lease lapses in a second here
    from agenthub import AutoLLMClient, tool

    @tool(requires_approval=True, idempotent=False)
    def pay(amount: int) -> str:
        \"\"\"Pay.\"\"\"
        print("pay", amount, flush=True)
        time.sleep(60)
        return "paid"

    client = AutoLLMClient("gpt-4o-mini", api_key=os.environ["KEY"], base_url=os.environ["URL"] + "/v1",
                           client_type="openai-chat", max_retries=0)
    client.run(json.loads(os.environ["MESSAGES"]), tools=[pay], decisions=json.loads(os.environ["DECISIONS"]),
               journal=os.environ["JOURNAL"], run_id="pay-1").result()
""")

ran = []
crash = []
keys = []  # pay's current_call().idempotency_key, each time it runs


@tool(requires_approval=True, idempotent=False)
def pay(amount: int) -> str:
    """Pay."""
    ran.append(amount)
    keys.append(current_call().idempotency_key)
    if crash:
        crash.pop()
        raise SystemExit("the process dies here")
    return "paid"


@pytest.fixture(autouse=True)
def clean():
    ran.clear()
    del crash[:]
    del keys[:]
    runner._SHOWN.clear()
    runner._RAN.clear()


def client_for(server):
    return AutoLLMClient("gpt-4o-mini", api_key=KEY, base_url=server.url + "/v1", client_type="openai-chat",
                         max_retries=0)


def approval_stop(server):
    """The run stopped for pay(30)'s approval (no journal): the saved state to resume."""
    server.answers.append(Answer([CALL]))
    first = client_for(server).run([USER], tools=[pay]).result()
    assert (first.stop, [c["tool_call_id"] for c in first.pending], ran) == ("approval", ["c1"], [])
    return json.loads(json.dumps([USER] + first.messages)), first.pending[0]


#: CHILD whose pay prints its idempotency key too
KEY_CHILD = CHILD.replace('print("pay", amount, flush=True)',
                          'print("pay", amount, current_call().idempotency_key, flush=True)').replace(
    "from agenthub import AutoLLMClient, tool",
    "from agenthub import AutoLLMClient, tool\nfrom agenthub.agent import current_call")


def killed_in_pay(server, journal, messages, decisions, script=CHILD, amount=30):
    """The child killed while pay(amount) runs (it printed so): the words it printed."""
    env = dict(os.environ, KEY=KEY, URL=server.url, JOURNAL=journal, MESSAGES=json.dumps(messages),
               DECISIONS=json.dumps(decisions), PYTHONPATH=ROOT)
    line = killed_after(script, [ROOT], env, 1)[0]
    assert line.split()[:2] == ["pay", str(amount)], line
    return line.split()


@pytest.mark.parametrize("by", ["id", "digest"])
def test_an_approved_side_effect_killed_mid_call_is_not_run_again_by_the_same_decisions(store_url, by):
    journal = store_url  # SQLite, then a real redis-server
    with SSEServer() as server:
        messages, shown = approval_stop(server)
        decisions = {"c1": True} if by == "id" else {call_digest(shown): True}
        killed_in_pay(server, journal, messages, decisions)  # pay(30) started there: the child printed it
        assert len(server.requests) == 1
        client = client_for(server)
        # the supervisor runs the same command again: the approval was for the run that died in pay
        again = client.run(messages, tools=[pay], decisions=decisions, journal=journal, run_id="pay-1",
                           journal_wait=10).result()
        assert (again.stop, again.interrupted, again.pending) == ("approval", ["c1"], [shown])
        assert ran == [] and len(server.requests) == 1  # not run, nothing sent
        # shown as interrupted, the user checked: it did not go through; run it again, once
        server.answers.append(Answer([chat_text("Paid.")]))
        done = client.run(messages, tools=[pay], decisions=decisions, journal=journal, run_id="pay-1").result()
        assert (done.stop, ran) == ("done", [30])
        # the same command once more: the finished run's result, nothing run or sent
        last = client.run(messages, tools=[pay], decisions=decisions, journal=journal, run_id="pay-1").result()
    assert (last.stop, ran, len(server.requests)) == ("done", [30], 2)
    assert server.requests[1]["body"]["messages"][-1] == {"role": "tool", "tool_call_id": "c1", "content": "paid"}


def test_a_decision_given_after_the_interruption_covers_one_more_start_only():
    store = MemoryStore()
    with SSEServer() as server:
        messages, _ = approval_stop(server)
        client = client_for(server)
        crash.append(1)
        with pytest.raises(SystemExit):
            client.run(messages, tools=[pay], decisions={"c1": True}, journal=store, run_id="pay-1").result()
        shown = client.run(messages, tools=[pay], decisions={"c1": True}, journal=store, run_id="pay-1").result()
        assert (shown.stop, shown.interrupted, ran) == ("approval", ["c1"], [30])
        crash.append(1)  # run again on the decision given after it was shown, and killed in it again
        with pytest.raises(SystemExit):
            client.run(messages, tools=[pay], decisions={"c1": True}, journal=store, run_id="pay-1").result()
        assert ran == [30, 30]
        again = client.run(messages, tools=[pay], decisions={"c1": True}, journal=store, run_id="pay-1").result()
        assert (again.stop, again.interrupted, ran) == ("approval", ["c1"], [30, 30])
        denied = client.run(messages, tools=[pay], decisions={"c1": "it went through"}, journal=store,
                            run_id="pay-1")
        server.answers.append(Answer([chat_text("Fine.")]))
        assert denied.result().stop == "done"
    assert ran == [30, 30] and len(server.requests) == 2
    assert server.requests[1]["body"]["messages"][-1] == {"role": "tool", "tool_call_id": "c1",
                                                          "content": "denied: it went through"}


def test_a_run_refused_while_it_is_set_up_lets_its_claim_go_and_journals_nothing(store_url):
    journal = store_url
    with SSEServer() as server:
        messages, _ = approval_stop(server)
        client = client_for(server)
        with pytest.raises(ConfigError, match=r"decisions for calls this run does not resume .*'c9'"):
            client.run(messages, tools=[pay], decisions={"c9": True}, journal=journal, run_id="pay-1")
        server.answers.append(Answer([chat_text("Paid.")]))
        started = time.monotonic()
        result = client.run(messages, tools=[pay], decisions={"c1": True}, journal=journal, run_id="pay-1").result()
        assert time.monotonic() - started < 5  # (not RunLockedError, nor a wait for the lease)
    assert (result.stop, ran, len(server.requests)) == ("done", [30], 2)
    assert result.replayed_results == 0


def test_a_new_run_refused_while_it_is_set_up_leaves_no_journal():
    store = MemoryStore()
    with SSEServer() as server:
        messages, _ = approval_stop(server)
        with pytest.raises(ConfigError, match="decisions for calls this run does not resume"):
            client_for(server).run(messages, tools=[pay], decisions={"c9": True}, journal=store, run_id="pay-1")
    assert store.journal_entries("pay-1") == []
    assert len(server.requests) == 1


@tool(requires_approval=True)
def delete_file(path: str) -> str:
    """Delete a file."""
    ran.append(path)
    return "deleted " + path


def test_a_journaled_run_stopped_for_approval_takes_the_decisions_under_its_run_id(store_url):
    """The same call again with decisions= resumes it (its journal replayed, nothing sent again); the decided
    call runs once, and the same command once more gives the run's result, nothing run or sent."""
    journal = store_url
    with SSEServer() as server:
        server.answers += [Answer([chat_calls([("c1", "delete_file", '{"path": "old.log"}')])]),
                           Answer([chat_text("Deleted.")])]
        client = client_for(server)
        first = client.run([USER], tools=[delete_file], journal=journal, run_id="del-1").result()
        assert (first.stop, [c["tool_call_id"] for c in first.pending], ran) == ("approval", ["c1"], [])
        with pytest.raises(ConfigError, match=r"decisions for calls this run does not resume .*'c2'"):
            client.run([USER], tools=[delete_file], journal=journal, run_id="del-1", decisions={"c2": True})
        second = client.run([USER], tools=[delete_file], journal=journal, run_id="del-1",
                            decisions={"c1": True}).result()
        assert (second.stop, second.turns, second.replayed_turns, ran) == ("done", 2, 1, ["old.log"])
        again = client.run([USER], tools=[delete_file], journal=journal, run_id="del-1",
                           decisions={"c1": True}).result()
    assert (again.stop, again.replayed_turns, again.replayed_results, ran) == ("done", 2, 1, ["old.log"])
    assert len(server.requests) == 2
    assert server.requests[1]["body"]["messages"][-1] == {"role": "tool", "tool_call_id": "c1",
                                                          "content": "deleted old.log"}


def two_stops_under_call_0(server):
    """A server numbering the calls of each answer: call_0 = delete_file("old.log"), then call_0 =
    delete_file("/home/user"), then an answer."""
    server.answers += [Answer([chat_calls([("call_0", "delete_file", '{"path": "old.log"}')])]),
                       Answer([chat_calls([("call_0", "delete_file", '{"path": "/home/user"}')])]),
                       Answer([chat_text("Done.")])]
    return client_for(server)


def test_a_journaled_approval_binds_the_decision_to_the_turn_it_stopped_on():
    """A saved state's waiting call decided and run, then the next turn stops for approval under the same id
    (a server numbering calls per answer): the decisions of the resume are for that turn's call only."""
    store = MemoryStore()
    with SSEServer() as server:
        client = two_stops_under_call_0(server)
        first = client.run([USER], tools=[delete_file]).result()
        saved = json.loads(json.dumps([USER] + first.messages))
        second = client.run(saved, tools=[delete_file], decisions={"call_0": True}, journal=store,
                            run_id="del-2").result()
        assert (second.stop, [c["arguments"] for c in second.pending], ran) == ("approval", [{"path": "/home/user"}],
                                                                                ["old.log"])
        third = client.run(saved, tools=[delete_file], decisions={"call_0": "not my home"}, journal=store,
                           run_id="del-2").result()
    assert (third.stop, third.replayed_turns, third.replayed_results, ran) == ("done", 1, 1, ["old.log"])
    assert server.requests[2]["body"]["messages"][-1] == {"role": "tool", "tool_call_id": "call_0",
                                                          "content": "denied: not my home"}


@pytest.mark.parametrize("how", ["close", "with"])
def test_a_journaled_run_closed_before_it_is_read_lets_its_claim_go_and_journals_nothing(how):
    store = MemoryStore()
    with SSEServer() as server:
        server.answers.append(Answer([chat_text("Paid.")]))
        client = client_for(server)
        run = client.run([USER], tools=[pay], journal=store, run_id="pay-1")
        if how == "close":
            run.close()
        else:
            with pytest.raises(KeyError):
                with run:
                    raise KeyError("the caller's own error, before reading the run")
        assert store.journal_entries("pay-1") == []
        with pytest.raises(ConfigError) as caught:
            run.result()  # (a closed run has no result: not an empty turn, journaled as the answer)
        assert str(caught.value) == "the run ended without a result (it was closed, or a model call raised)"
        result = client.run([USER], tools=[pay], journal=store, run_id="pay-1").result()  # not RunLockedError
    assert (result.stop, result.turns, result.replayed_turns, len(server.requests)) == ("done", 1, 0, 1)
    assert result.final["content_items"] == [{"type": "text", "text": "Paid."}]


def test_a_run_closed_before_it_is_read_has_no_result():
    with SSEServer() as server:
        run = client_for(server).run([USER], tools=[pay])
        run.close()
        with pytest.raises(ConfigError, match=r"the run ended without a result \(it was closed"):
            run.result()
    assert server.requests == []


#: the child: a turn with a call whose arguments were cut (send_report, all defaults) and a look_up that hangs
CUT_CHILD = textwrap.dedent("""
    import os, sys, time
    sys.path.insert(0, sys.argv[1])
    import agenthub.stores.journal as rows
    rows.JOURNAL_LEASE = 1.0
    from agenthub import AutoLLMClient, tool

    @tool(idempotent=False)
    def send_report(to: str = "everyone@corp.example") -> str:
        \"\"\"Send the report.\"\"\"
        print("send_report", to, flush=True)
        return "sent"

    @tool
    def look_up(city: str) -> str:
        \"\"\"Look a city up.\"\"\"
        print("look_up", city, flush=True)
        time.sleep(60)
        return city + ": open"

    client = AutoLLMClient("gpt-4o-mini", api_key=os.environ["KEY"], base_url=os.environ["URL"] + "/v1",
                           client_type="openai-chat", max_retries=0)
    user = {"role": "user", "content_items": [{"type": "text", "text": "Pay the invoice."}]}
    client.run([user], tools=[send_report, look_up], journal=os.environ["JOURNAL"], run_id="cut-1").result()
""")


def test_a_call_whose_arguments_did_not_parse_is_not_run_with_none_after_a_crash(store_url):
    """Killed while the turn's other call runs: the resume does not run send_report() with its defaults (the
    message holds {} for the call whose arguments were cut): its error result was journaled with the turn."""
    journal = store_url

    @tool(idempotent=False)
    def send_report(to: str = "everyone@corp.example") -> str:
        """Send the report."""
        ran.append(("send_report", to))
        return "sent"

    @tool
    def look_up(city: str) -> str:
        """Look a city up."""
        ran.append(("look_up", city))
        return city + ": open"

    error = ("ToolCallArgumentParseError: arguments of tool call 'send_report' (c1) is not valid JSON (Unterminated "
             "string starting at: line 1 column 8 (char 7)); raw arguments (22 chars): {\"to\": \"boss@corp.exam")
    with SSEServer() as server:
        server.answers += [Answer([chat_calls([("c1", "send_report", '{"to": "boss@corp.exam'),
                                               ("c2", "look_up", '{"city": "Rome"}')])]),
                           Answer([chat_text("Done.")])]
        env = dict(os.environ, KEY=KEY, URL=server.url, JOURNAL=journal, PYTHONPATH=ROOT)
        child = subprocess.Popen([sys.executable, "-c", CUT_CHILD, ROOT], stdout=subprocess.PIPE, env=env)
        try:
            assert child.stdout.readline().decode() == "look_up Rome\n"
            child.send_signal(signal.SIGKILL)
            assert child.wait(10) == -signal.SIGKILL
            assert child.stdout.read() == b""
        finally:
            if child.poll() is None:
                child.kill()
                child.wait(10)
            child.stdout.close()
        user = {"role": "user", "content_items": [{"type": "text", "text": "Pay the invoice."}]}
        result = client_for(server).run([user], tools=[send_report, look_up], journal=journal, run_id="cut-1",
                                        journal_wait=10).result()
    assert ran == [("look_up", "Rome")]  # the idempotent call again (at least once); send_report never
    assert (result.stop, result.replayed_turns, result.replayed_results) == ("done", 1, 1)
    assert [m for m in server.requests[1]["body"]["messages"] if m["role"] == "tool"] == [
        {"role": "tool", "tool_call_id": "c1", "content": error},
        {"role": "tool", "tool_call_id": "c2", "content": "Rome: open"}]


def journal_for(kind, tmp_path):
    return MemoryStore() if kind == "memory" else "sqlite:///" + str(tmp_path / "runs.db")


def plain(messages):
    return [{k: v for k, v in m.items() if k != "created_at"} for m in messages]


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
@pytest.mark.parametrize("again", ["none", "same-message"])
def test_run_stateful_resumes_a_journaled_approval_stop_on_the_same_client(kind, again, tmp_path):
    """The client's history holds the run's first turn (the call waiting): run_stateful(None, decisions=...) (or
    the same call again, the same message) under the run_id resumes the journaled run, not a JournalError
    mismatch; the history ends as a fresh client's resume leaves it, and the call ran once."""
    journal = journal_for(kind, tmp_path)
    with SSEServer() as server:
        server.answers += [Answer([chat_calls([("c1", "delete_file", '{"path": "old.log"}')])]),
                           Answer([chat_text("Deleted.")])]
        client = client_for(server)
        first = client.run_stateful(USER, tools=[delete_file], journal=journal, run_id="del-s").result()
        assert (first.stop, [c["tool_call_id"] for c in first.pending], ran) == ("approval", ["c1"], [])
        message = None if again == "none" else USER
        second = client.run_stateful(message, tools=[delete_file], decisions={"c1": True}, journal=journal,
                                     run_id="del-s").result()
        assert (second.stop, second.turns, second.replayed_turns, ran) == ("done", 2, 1, ["old.log"])
        history = plain(client.get_history())
        fresh = client_for(server)  # the same run resumed on a new client: nothing run or sent
        third = fresh.run_stateful(USER, tools=[delete_file], decisions={"c1": True}, journal=journal,
                                   run_id="del-s").result()
    assert (third.stop, third.replayed_turns, third.replayed_results, ran) == ("done", 2, 1, ["old.log"])
    assert len(server.requests) == 2
    assert server.requests[1]["body"]["messages"][1:] == [
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {
            "name": "delete_file", "arguments": '{"path":"old.log"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "deleted old.log"}]
    assert [m["role"] for m in history] == ["user", "assistant", "user", "assistant"]
    assert history == plain(fresh.get_history())


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_run_stateful_without_a_message_gives_a_finished_runs_result_again(kind, tmp_path):
    """run_stateful(None, run_id=...) on the client whose history holds a journaled run that finished gives that
    run's RunResult again at once (from the journal: nothing run or sent, the history as it was); under a run_id
    with nothing journaled it is still the ConfigError, and nothing is journaled for it."""
    journal = journal_for(kind, tmp_path)
    with SSEServer() as server:
        server.answers += [Answer([chat_calls([("c1", "delete_file", '{"path": "old.log"}')])]),
                           Answer([chat_text("Deleted.")])]
        client = client_for(server)
        done = client.run_stateful(USER, tools=[delete_file], approve=lambda call: True, journal=journal,
                                   run_id="del-s").result()
        history = plain(client.get_history())
        again = client.run_stateful(None, tools=[delete_file], journal=journal, run_id="del-s").result()
        with pytest.raises(ConfigError) as caught:
            client.run_stateful(None, tools=[delete_file], journal=journal, run_id="del-new")
    assert str(caught.value) == "run_stateful needs a message (nothing is waiting for a decision)"
    assert (done.stop, done.turns, ran, len(server.requests)) == ("done", 2, ["old.log"], 2)
    assert (again.stop, again.final, plain(again.messages), again.turns, again.run_id) == (
        done.stop, done.final, plain(done.messages), 2, "del-s")
    assert (again.replayed_turns, again.replayed_results) == (2, 1)
    assert plain(client.get_history()) == history
    assert open_store(journal).journal_entries("del-new") == []


def test_run_stateful_on_the_same_client_resumes_only_the_runs_own_history():
    """Another message, or a history whose journaled turn was edited since (other arguments under the id), is
    another run: refused (JournalError mismatch), nothing run or sent, the client's history left as it was."""
    from agenthub.agent import JournalError

    store = MemoryStore()
    other = {"role": "user", "content_items": [{"type": "text", "text": "Delete new.log"}]}
    with SSEServer() as server:
        server.answers.append(Answer([chat_calls([("c1", "delete_file", '{"path": "old.log"}')])]))
        client = client_for(server)
        assert client.run_stateful(USER, tools=[delete_file], journal=store, run_id="del-s").result().stop == "approval"
        kept = client.get_history()
        with pytest.raises(JournalError) as caught:
            client.run_stateful(other, tools=[delete_file], journal=store, run_id="del-s")
        assert caught.value.reason == "mismatch"
        edited = json.loads(json.dumps(kept))
        edited[-1]["content_items"][-1]["arguments"] = {"path": "/home/user"}
        client.set_history(edited)
        with pytest.raises(JournalError) as caught:
            client.run_stateful(None, tools=[delete_file], decisions={"c1": True}, journal=store, run_id="del-s")
        assert caught.value.reason == "mismatch"
    assert client.get_history() == edited and ran == [] and len(server.requests) == 1


EDIT = {"c1": {"arguments": {"amount": 31}}}


def edited_and_killed(server, journal):
    """pay(30) approved as pay(31) (``EDIT``), the child killed in it, and the same command run again here: (the
    messages, the model's call, the words the child printed, the client, that resume's result)."""
    messages, model = approval_stop(server)
    words = killed_in_pay(server, journal, messages, EDIT, script=KEY_CHILD, amount=31)
    client = client_for(server)
    shown = client.run(messages, tools=[pay], decisions=EDIT, journal=journal, run_id="pay-1",
                       journal_wait=10).result()
    return messages, model, words, client, shown


def test_an_edited_decision_has_its_own_idempotency_key_the_same_after_a_crash(tmp_path):
    """The key names the action: run id, turn, call id and the arguments actually run.  pay(31) (the user's edit of
    the model's pay(30)) killed mid-call in a real process keeps its key when the same edit runs it again after
    the interruption; the model's own arguments (approved as they are, or an edit that changes nothing) get
    another key, so an API deduplicating by it never answers one payment with the other's result."""
    journal = "sqlite:///" + str(tmp_path / "runs.db")
    with SSEServer() as server:
        messages, _, words, client, shown = edited_and_killed(server, journal)
        assert (shown.stop, shown.interrupted, ran) == ("approval", ["c1"], [])
        server.answers.append(Answer([chat_text("Paid.")]))
        again = client.run(messages, tools=[pay], decisions=EDIT, journal=journal, run_id="pay-1").result()
        assert again.stop == "done"
        for decision in (True, {"arguments": {"amount": 30}}):  # the model's pay(30), as another run of the same id
            server.answers.append(Answer([chat_text("Paid.")]))
            runner._RAN.clear()  # (this process's memory of the state's side effect run: forgotten here)
            client.run(messages, tools=[pay], decisions={"c1": decision}, journal=MemoryStore(),
                       run_id="pay-1").result()
    assert ran == [31, 30, 30]
    assert keys[0] == words[2] and len(keys[0]) == 32  # the same action before and after the crash: one key
    assert keys[1] == keys[2] != keys[0]  # another action: another key
    started = [json.loads(e) for e in open_store(journal).journal_entries("pay-1")]
    assert [e["digest"] for e in started if e["k"] == "call"] == [arguments_digest({"amount": 31})] * 2


@pytest.mark.parametrize("by", ["id", "digest"])
def test_an_edited_call_killed_mid_call_is_shown_and_approved_with_the_arguments_it_ran_with(tmp_path, by):
    """pay(30) edited by the decision to pay(31), killed mid-call in a real process: the resume shows the call
    interrupted with the arguments it ran with (31, the ones approved, not the model's 30), and ``True`` for it (by
    id, or by the digest of the call shown) runs pay(31) once, with the key it had before the crash."""
    journal = "sqlite:///" + str(tmp_path / "runs.db")
    with SSEServer() as server:
        messages, model, words, client, shown = edited_and_killed(server, journal)
        assert (shown.stop, shown.interrupted, shown.pending) == (
            "approval", ["c1"], [dict(model, arguments={"amount": 31})])
        assert ran == [] and len(server.requests) == 1
        decisions = {"c1": True} if by == "id" else {call_digest(shown.pending[0]): True}
        server.answers.append(Answer([chat_text("Paid.")]))
        done = client.run(messages, tools=[pay], decisions=decisions, journal=journal, run_id="pay-1").result()
    assert (done.stop, ran, keys, len(server.requests)) == ("done", [31], [words[2]], 2)
    assert server.requests[1]["body"]["messages"][-1] == {"role": "tool", "tool_call_id": "c1", "content": "paid"}
    started = [json.loads(e) for e in open_store(journal).journal_entries("pay-1") if '"k":"call"' in e]
    assert started == [{"turn": -1, "id": "c1", "name": "pay", "digest": arguments_digest({"amount": 31}),
                        "arguments": {"amount": 31}, "k": "call"}] * 2


@pytest.mark.parametrize("start", ["journaled", "saved"])
def test_an_id_decision_given_again_does_not_approve_a_later_stops_call_under_the_same_id(start):
    """A server numbering the calls of each answer: the run stopped on call_0 = delete_file("old.log") (journaled,
    or a saved state the journaled run resumed), the approval {"call_0": True} ran it, and the run stopped again on
    call_0 = delete_file("/home/user").  The same command delivered again (a retry, a double submit) must not
    approve that other call: a decision by id cannot tell the two apart (ConfigError, nothing run or sent); keyed
    by call_digest it can."""
    store = MemoryStore()
    with SSEServer() as server:
        client = two_stops_under_call_0(server)
        if start == "journaled":
            messages = [USER]
            assert client.run(messages, tools=[delete_file], journal=store, run_id="del-3").result().stop == "approval"
        else:
            messages = json.loads(json.dumps([USER] + client.run([USER], tools=[delete_file]).result().messages))
        second = client.run(messages, tools=[delete_file], decisions={"call_0": True}, journal=store,
                            run_id="del-3").result()
        assert (second.stop, [c["arguments"] for c in second.pending], ran) == ("approval", [{"path": "/home/user"}],
                                                                                ["old.log"])
        with pytest.raises(ConfigError) as caught:
            client.run(messages, tools=[delete_file], decisions={"call_0": True}, journal=store, run_id="del-3")
        assert str(caught.value) == (
            "decisions['call_0']: this run decided another call under that id before ({}); the call waiting now is "
            "another one: a decision by id cannot tell them apart; key it by call_digest(call)".format(
                "in turn 0" if start == "journaled" else "in the saved state it resumed"))
        assert ran == ["old.log"] and len(server.requests) == 2
        third = client.run(messages, tools=[delete_file], decisions={call_digest(second.pending[0]): True},
                           journal=store, run_id="del-3").result()
    assert (third.stop, ran) == ("done", ["old.log", "/home/user"])


def test_an_approved_side_effect_run_from_the_saved_state_is_not_run_again_by_the_journaled_run_it_came_from():
    """One approval, two ways to resume the same stop in one process: the saved state under another run_id ran
    pay(30); the journaled run that stopped (the same call again with the same decisions) hands it back as
    interrupted instead of paying twice (the process remembers the conversation's call ran: at most once)."""
    store = MemoryStore()
    with SSEServer() as server:
        server.answers += [Answer([CALL]), Answer([chat_text("Paid.")]), Answer([chat_text("Paid.")])]
        client = client_for(server)
        first = client.run([USER], tools=[pay], journal=store, run_id="pay-a").result()
        saved = json.loads(json.dumps([USER] + first.messages))
        other = client.run(saved, tools=[pay], decisions={"c1": True}, journal=store, run_id="pay-b").result()
        assert (other.stop, ran) == ("done", [30])
        again = client.run([USER], tools=[pay], decisions={"c1": True}, journal=store, run_id="pay-a").result()
    assert (again.stop, again.interrupted, [c["tool_call_id"] for c in again.pending]) == ("approval", ["c1"], ["c1"])
    assert ran == [30] and len(server.requests) == 2
