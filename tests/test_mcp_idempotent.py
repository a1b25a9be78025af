"""An MCP server's tool annotations in a journaled run (docs/mcp.md "Tools that must not run twice"): the
handle keeps each listed tool's ``annotations`` (never sent to the model) and answers ``idempotent(name)``:
False only when the server declared the tool non-idempotent (readOnlyHint not true, and idempotentHint false
or destructiveHint true).  Such a tool runs at most once in a journaled run, as an ``@tool(idempotent=False)``:
a run killed inside its call hands it back pending on resume instead of calling the server again; a tool
without annotations keeps at least once (called again)."""

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

from agenthub import AutoLLMClient, ConfigError, mcp
from agenthub.agent import runner
from mcp_support import FAKE_STDIO, stdio_command

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
KEY = "sk-test-mcp-idempotent-0001"
USER = {"role": "user", "content_items": [{"type": "text", "text": "Clean up."}]}

#: the child: a journaled run whose model calls the MCP tool argv[3]; the server never answers it (FAKE_HOLD)
CHILD = textwrap.dedent("""
    import json, os, sys
    sys.path.insert(0, sys.argv[1])
    import agenthub.stores.journal as rows
    rows.JOURNAL_LEASE = 1.0  # a killed owner's lease lapses in a second here
    from agenthub import AutoLLMClient, mcp

    client = AutoLLMClient("gpt-4o-mini", api_key=os.environ["KEY"], base_url=os.environ["URL"] + "/v1",
                           client_type="openai-chat", max_retries=0)
    with mcp.connect([sys.executable, sys.argv[2], "legacy", "annotated"], timeout=30,
                     env={"FAKE_CALLS": os.environ["FAKE_CALLS"], "FAKE_HOLD": sys.argv[3]}) as tools:
        client.run(json.loads(os.environ["MESSAGES"]), tools=[tools], journal=os.environ["JOURNAL"],
                   run_id="clean-1").result()
""")


@pytest.fixture(autouse=True)
def clean():
    runner._SHOWN.clear()
    runner._RAN.clear()


def client_for(server):
    return AutoLLMClient("gpt-4o-mini", api_key=KEY, base_url=server.url + "/v1", client_type="openai-chat",
                         max_retries=0)


def connect(calls, annotations=None):
    env = {"FAKE_CALLS": calls}
    if annotations is not None:
        env["FAKE_ANNOTATIONS"] = json.dumps(annotations)
    return mcp.connect(stdio_command("legacy", "annotated"), timeout=30, env=env)


def test_the_tools_sent_to_the_model_carry_no_annotations(tmp_path):
    with connect(str(tmp_path / "calls")) as tools, SSEServer() as server:
        server.answers.append(Answer([chat_text("Nothing to do.")]))
        result = client_for(server).run([USER], tools=[tools]).result()
        sent = server.requests[0]["body"]["tools"]
        listed = tools.list_tools()
    assert result.stop == "done"
    assert listed == [
        {"name": "echo", "description": "list #1", "parameters": {"type": "object"}},
        {"name": "wipe", "description": "Wipes a disk.", "parameters": {"type": "object"}},
        {"name": "note", "description": "Notes a line.", "parameters": {"type": "object"}}]
    assert sent == [
        {"type": "function", "function": {"name": "echo", "description": "list #1", "parameters": {"type": "object"}}},
        {"type": "function", "function": {"name": "wipe", "description": "Wipes a disk.",
                                          "parameters": {"type": "object"}}},
        {"type": "function", "function": {"name": "note", "description": "Notes a line.",
                                          "parameters": {"type": "object"}}}]


def test_idempotent_follows_the_servers_explicit_hints_only(tmp_path):
    annotations = {
        "read_only_destructive": {"readOnlyHint": True, "destructiveHint": True},  # read-only: the rest is moot
        "not_idempotent": {"idempotentHint": False},
        "destructive_idempotent": {"destructiveHint": True, "idempotentHint": True},  # destructive wins
        "idempotent": {"idempotentHint": True},
        "additive": {"destructiveHint": False},  # idempotentHint absent: not declared non-idempotent
        "empty": {},  # the spec's defaults (destructive, not idempotent) are not a declaration
        "title_only": {"title": "Just a title"},
        "strings": {"destructiveHint": "true", "idempotentHint": "false", "readOnlyHint": 0},
        "not_a_dict": ["destructiveHint"],
        "null": None,
        "read_only_string": {"readOnlyHint": "yes", "destructiveHint": True},  # a non-bool hint is no hint
    }
    with connect(str(tmp_path / "calls"), annotations) as tools:
        tools.list_tools()
        answers = {name: tools.idempotent(name) for name in ["echo", "wipe", "note", "unknown"] + list(annotations)}
    assert answers == {
        "echo": True, "wipe": False, "note": True, "unknown": True,
        "read_only_destructive": True, "not_idempotent": False, "destructive_idempotent": False,
        "idempotent": True, "additive": True, "empty": True, "title_only": True, "strings": True,
        "not_a_dict": True, "null": True, "read_only_string": False}


class Provider(object):
    """A plain tool provider whose ``idempotent`` is given."""

    def __init__(self, idempotent):
        self.idempotent = idempotent
        self.called = []

    def list_tools(self):
        return [{"name": "wipe", "parameters": {"type": "object"}}]

    def call_tool(self, name, arguments):
        self.called.append(name)
        return {"type": "tool_result", "text": "wiped"}


@pytest.mark.parametrize("idempotent, problem", [
    (lambda name: 1 / 0, "provider Provider's idempotent('wipe') raised ZeroDivisionError"),
    (lambda name: "no", "provider Provider's idempotent('wipe') gave a str, not a bool")])
def test_a_providers_idempotent_that_fails_is_a_config_error(idempotent, problem):
    with SSEServer() as server:
        with pytest.raises(ConfigError) as caught:
            client_for(server).run([USER], tools=[Provider(idempotent)]).result()
        assert server.requests == []
    assert str(caught.value) == problem


def test_an_around_call_hook_may_proceed_once_for_a_provider_tool_declared_non_idempotent():
    class Retry(object):
        def around_call(self, run, call, proceed):
            proceed()
            return proceed()

    provider = Provider(lambda name: name != "wipe")
    with SSEServer() as server:
        server.answers += [Answer([chat_calls([("c1", "wipe", "{}")])]), Answer([chat_text("Done.")])]
        result = client_for(server).run([USER], tools=[provider], hooks=[Retry()]).result()
        sent = server.requests[1]["body"]["messages"][-1]
    assert (result.stop, provider.called) == ("done", ["wipe"])
    assert sent == {"role": "tool", "tool_call_id": "c1", "content": "wipe ran and returned: wiped; then an "
                    "around_call hook failed: ConfigError: tool 'wipe' is declared non-idempotent: an around_call "
                    "hook may proceed() once (it ran already)"}


def killed_in_call(server, journal, calls, name):
    """The child's journaled run, SIGKILLed while the server holds ``name``'s call (the server then exits)."""
    env = dict(os.environ, KEY=KEY, URL=server.url, JOURNAL=journal, MESSAGES=json.dumps([USER]),
               FAKE_CALLS=calls, PYTHONPATH=ROOT)
    child = subprocess.Popen([sys.executable, "-c", CHILD, ROOT, FAKE_STDIO, name], env=env,
                             stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while not os.path.exists(calls + ".pid"):
            assert child.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        time.sleep(0.05)  # (the pid file is written whole)
        with open(calls + ".pid") as f:
            held = int(f.read())
        child.send_signal(signal.SIGKILL)
        assert child.wait(10) == -signal.SIGKILL
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(10)
    # the server sees its stdin close and exits; orphaned, it is this process's child (mcp_support makes this
    # process a child subreaper): reaped here
    deadline = time.monotonic() + 10
    while True:
        try:
            if os.waitpid(held, os.WNOHANG)[0] == held:
                break
        except ChildProcessError:  # (not adopted: polled)
            try:
                os.kill(held, 0)
            except OSError:
                break
        assert time.monotonic() < deadline, "the held MCP server did not exit"
        time.sleep(0.05)


def lines(path):
    with open(path) as f:
        return f.read().splitlines()


def test_a_destructive_mcp_tool_killed_mid_call_is_handed_back_not_called_again(tmp_path):
    journal = "sqlite:///" + str(tmp_path / "state.db")
    calls = str(tmp_path / "calls")
    with SSEServer() as server:
        server.answers.append(Answer([chat_calls([("c1", "wipe", '{"disk": "d1"}')])]))
        killed_in_call(server, journal, calls, "wipe")
        assert (lines(calls), len(server.requests)) == (["wipe"], 1)
        client = client_for(server)
        with connect(calls) as tools:
            again = client.run([USER], tools=[tools], journal=journal, run_id="clean-1", journal_wait=10).result()
            assert (again.stop, again.interrupted, again.replayed_turns) == ("approval", ["c1"], 1)
            assert again.pending == [{"type": "tool_call", "tool_call_id": "c1", "name": "wipe",
                                      "arguments": {"disk": "d1"}}]
            assert (lines(calls), len(server.requests)) == (["wipe"], 1)  # not called again, nothing sent
            # the user checked: it did not go through; run it again, once
            server.answers.append(Answer([chat_text("Wiped.")]))
            done = client.run([USER], tools=[tools], decisions={"c1": True}, journal=journal,
                              run_id="clean-1").result()
    assert (done.stop, done.interrupted, lines(calls), len(server.requests)) == ("done", [], ["wipe", "wipe"], 2)
    assert server.requests[1]["body"]["messages"][-1] == {"role": "tool", "tool_call_id": "c1", "content": "wipe"}


def test_an_unannotated_mcp_tool_killed_mid_call_is_called_again(tmp_path):
    journal = "sqlite:///" + str(tmp_path / "state.db")
    calls = str(tmp_path / "calls")
    with SSEServer() as server:
        server.answers.append(Answer([chat_calls([("c1", "note", '{"text": "hello"}')])]))
        killed_in_call(server, journal, calls, "note")
        assert lines(calls) == ["note"]
        server.answers.append(Answer([chat_text("Noted.")]))
        with connect(calls) as tools:
            again = client_for(server).run([USER], tools=[tools], journal=journal, run_id="clean-1",
                                           journal_wait=10).result()
    assert (again.stop, again.interrupted, again.replayed_turns) == ("done", [], 1)
    assert (lines(calls), len(server.requests)) == (["note", "note"], 2)  # at least once: called again
    assert server.requests[1]["body"]["messages"][-1] == {"role": "tool", "tool_call_id": "c1", "content": "hello"}
