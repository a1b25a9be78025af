"""Issue 39 item 3: the model request in flight when a journaled run died is re-attached by id where the wire
keeps it (a background Responses turn, a background Gemini Interaction: ``config["background"]``), not paid
again.  The run journals the response's id (an ``attach`` entry) as soon as its stream names it; a resume
finds that id with no answer journaled and streams the response again from its start by a GET (no POST),
its events live (not replayed), its cost counted once.  A response the server no longer has (404), or one
that failed, is sent again with a warning and a ``detach`` entry; a run without ``background`` sends the
request again, as before.  Real processes killed with SIGKILL; local fakes that count requests
(tests/longrun_server.py)."""

import contextlib
import io
import json
import logging
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from longrun_server import LongrunServer, interactions_events, responses_events

from agenthub import AutoLLMClient, Budget, ResponseCache, tool
from agenthub.attempts import AttemptHook
from agenthub.__main__ import main
from agenthub.errors import UpstreamError
from agenthub.stores import MemoryStore, StoreError, open_store

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
KEY = "sk-test-reattach-key-0001"
USER = {"role": "user", "content_items": [{"type": "text", "text": "What is open in Rome?"}]}
CONFIG = {"background": True, "max_tokens": 200}
#: wire: (model, base URL path, resource path: its POST and, with an id after it, its GET)
WIRES = {"openai-responses": ("gpt-5.5", "/v1", "/v1/responses"),
         "gemini-interactions": ("gemini-3.5-flash", "", "/v1/interactions")}


@tool
def look_up(city: str) -> str:
    """Look a city up."""
    return city + ": the museum is open"


# -- the streams: a turn that calls look_up, then a text answer -------------------------------------------------
def _sse(kind, body):
    return ("event: {}\ndata: {}\n\n".format(kind, json.dumps(body, separators=(",", ":")))).encode()


def responses_call(rid):
    events = []

    def add(kind, body):
        events.append(_sse(kind, dict(body, type=kind, sequence_number=len(events))))

    base = {"id": rid, "object": "response", "status": "in_progress", "background": True, "output": []}
    add("response.created", {"response": base})
    add("response.in_progress", {"response": base})
    item = {"id": "fc_1", "type": "function_call", "status": "in_progress", "arguments": "", "call_id": "call_1",
            "name": "look_up"}
    add("response.output_item.added", {"output_index": 0, "item": item})
    add("response.function_call_arguments.delta", {"item_id": "fc_1", "output_index": 0, "delta": '{"city": "Rome"}'})
    done = dict(item, status="completed", arguments='{"city": "Rome"}')
    add("response.output_item.done", {"output_index": 0, "item": done})
    add("response.completed", {"response": dict(base, status="completed", output=[done], usage={
        "input_tokens": 30, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 12,
        "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 42})})
    return events


def interactions_call(iid):
    events = []

    def add(kind, body):
        events.append(_sse(kind, dict(body, event_type=kind, event_id="evt_{:03d}".format(len(events) + 1))))

    add("interaction.created", {"interaction": {"id": iid, "status": "in_progress"}})
    add("interaction.status_update", {"interaction_id": iid, "status": "in_progress"})
    add("step.start", {"index": 0, "step": {"type": "function_call", "id": "call_1", "name": "look_up",
                                            "arguments": {"city": "Rome"}}})
    add("step.stop", {"index": 0})
    add("interaction.completed", {"interaction": {"id": iid, "status": "requires_action", "usage": {
        "total_input_tokens": 30, "total_output_tokens": 12}}})
    return events


def script(server, wire, hold=None, first="res_turn1"):
    """The two turns of the run on ``server`` (the first one held before its third event by ``hold``)."""
    if wire == "openai-responses":
        server.add(first, responses_call(first), hold=hold)
        server.add("res_turn2", responses_events("res_turn2", ["The museum ", "is open."]))
    else:
        server.add(first, interactions_call(first), done=True, hold=hold)
        server.add("res_turn2", interactions_events("res_turn2", ["The museum ", "is open."]), done=True)


def client_for(server, wire, **kwargs):
    model, path, _ = WIRES[wire]
    return AutoLLMClient(model, api_key=KEY, base_url=server.url + path, client_type=wire, max_retries=0, **kwargs)


def posts(server, wire):
    return [r for r in server.requests if r["method"] == "POST" and r["path"] == WIRES[wire][2]]


def gets(server):
    return [(r["path"], r["query"]) for r in server.requests if r["method"] == "GET"]


def plain(messages):
    return [{k: v for k, v in m.items() if k != "created_at"} for m in messages]


def kinds(store, run_id):
    return [json.loads(e)["k"] for e in store.journal_entries(run_id)]


def uninterrupted(wire):
    with LongrunServer() as server:
        script(server, wire)
        result = client_for(server, wire).run([USER], dict(CONFIG), tools=[look_up]).result()
        bodies = [r["body"] for r in posts(server, wire)]
    return result, bodies


# -- a real process killed with the response's id journaled and its answer not in ---------------------------------
CHILD = textwrap.dedent("""
    import json, os, sys
    sys.path.insert(0, sys.argv[1])
    import agenthub.stores.journal as rows
    rows.JOURNAL_LEASE = 1.0  # a killed owner's lease lapses in a second here
    from agenthub import AutoLLMClient, tool

    @tool
    def look_up(city: str) -> str:
        \"\"\"Look a city up.\"\"\"
        return city + ": the museum is open"

    wire, model, path = os.environ["WIRE"], os.environ["MODEL"], os.environ["BASE_PATH"]
    client = AutoLLMClient(model, api_key=os.environ["KEY"], base_url=os.environ["URL"] + path, client_type=wire,
                           max_retries=0)
    user = {"role": "user", "content_items": [{"type": "text", "text": "What is open in Rome?"}]}
    client.run([user], json.loads(os.environ["CONFIG"]), tools=[look_up], journal=os.environ["JOURNAL"],
               run_id="bg-1").result()
    print("finished", flush=True)  # (never reached: killed in the first turn)
""")


def kill_once_attached(server, wire, journal, config=CONFIG):
    """Run the child; SIGKILL it once its journal holds the first turn's response id (the server holds
    that response's stream after its first events, so the turn cannot have completed); without
    ``background``, once the first request has reached the server (a plain request in flight is not
    journaled: it is sent again on resume)."""
    model, path, _ = WIRES[wire]
    env = dict(os.environ, KEY=KEY, URL=server.url, JOURNAL=journal, WIRE=wire, MODEL=model, BASE_PATH=path,
               PYTHONPATH=ROOT, CONFIG=json.dumps(config))
    store = open_store(journal)
    child = subprocess.Popen([sys.executable, "-c", CHILD, ROOT], stdout=subprocess.PIPE, env=env)

    def ready():
        if config.get("background"):
            return "attach" in kinds(store, "bg-1")
        return len(posts(server, wire)) == 1

    try:
        deadline = time.monotonic() + 30
        while not ready():
            assert child.poll() is None, "the child ended first"
            assert time.monotonic() < deadline, "no attach entry came"
            time.sleep(0.02)
        child.send_signal(signal.SIGKILL)
        assert child.wait(10) == -signal.SIGKILL
        assert child.stdout.read() == b""
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(10)
        child.stdout.close()
    entries = [json.loads(e) for e in store.journal_entries("bg-1")]
    close = getattr(store, "close", None)
    if close is not None:
        close()
    return entries


@pytest.mark.parametrize("wire", sorted(WIRES))
def test_killed_with_the_response_in_flight_the_resume_re_attaches_by_id_and_pays_once(tmp_path, wire, monkeypatch):
    journal = "sqlite:///" + str(tmp_path / "runs.db")
    clean, clean_bodies = uninterrupted(wire)
    release = threading.Event()
    with LongrunServer() as server:
        script(server, wire, hold=(2, release))
        try:
            entries = kill_once_attached(server, wire, journal)
        finally:
            release.set()
        assert len(posts(server, wire)) == 1 and gets(server) == []  # the first turn was sent once, by the child
        told = io.StringIO()
        monkeypatch.setattr(sys, "stdout", told)
        assert main(["runs", "show", "bg-1", "--journal", journal]) == 0
        assert main(["runs", "resume", "bg-1", "--journal", journal, "--json"]) == 0
        monkeypatch.undo()
        budget = Budget(1.0)
        result = client_for(server, wire, budget=budget).run([USER], dict(CONFIG), tools=[look_up], journal=journal,
                                                              run_id="bg-1", journal_wait=10).result()
        sent = posts(server, wire)
        got = gets(server)
        cancels = [r for r in server.requests if r["path"].endswith("/cancel")]
    model, path, kind = WIRES[wire]
    # the journal held the id (no URL, no key), and no answer for the turn
    assert [e["k"] for e in entries] == ["header", "attach"]
    host = server.url.split("//")[1]
    assert entries[1] == {"k": "attach", "turn": 0, "id": "res_turn1", "wire": wire,
                          "route": {"model": model, "client_type": wire, "host": host}}
    # the resume: no POST for the first turn, one GET of it by id from its start; the second turn live
    assert len(sent) == 2 and cancels == []
    assert got == [(kind + "/res_turn1", {"stream": "true"})]
    assert [r["body"] for r in sent] == clean_bodies  # the same requests as an uninterrupted run's
    assert (result.stop, result.turns, result.replayed_turns, result.reattached_turns) == ("done", 2, 0, 1)
    assert plain(result.messages) == plain(clean.messages)
    assert result.usage_metadata == clean.usage_metadata
    assert result.cost_usd == clean.cost_usd and result.cost_usd > 0  # counted once
    # the budget of the resuming process: the re-attached turn charged once (it was never settled), and the next
    assert budget.requests == 2 and budget.spent_usd == pytest.approx(result.cost_usd)
    assert kinds(open_store(journal), "bg-1") == ["header", "attach", "turn", "result", "attach", "turn",
                                                  "done"]
    # agenthub runs show / resume say the turn in flight is re-attached, not sent again
    lines = told.getvalue().splitlines()
    assert "turn 1: request sent as background response res_turn1, no answer journaled (a resume re-attaches to it " \
           "by its id: not sent again)" in lines
    facts = json.loads(lines[-1])
    assert (facts["in_flight"], facts["attached"]) == (0, "res_turn1")  # (its state: "owned" until the lease lapses)


@pytest.mark.parametrize("background", [True, False])
def test_killed_with_the_response_in_flight_and_gone_or_not_background_the_resume_sends_it_again_once(
        tmp_path, caplog, background):
    wire = "openai-responses"
    config = dict(CONFIG, background=background)
    journal = "sqlite:///" + str(tmp_path / "runs.db")
    release = threading.Event()
    with LongrunServer() as server:
        server.add("res_turn1", responses_call("res_turn1"), hold=(2, release))
        server.add("res_again", responses_call("res_again"))
        server.add("res_turn2", responses_events("res_turn2", ["The museum ", "is open."]))
        try:
            entries = kill_once_attached(server, wire, journal, config)
        finally:
            release.set()
        del server.created["res_turn1"]  # expired meanwhile: its GET answers 404
        with caplog.at_level(logging.WARNING, logger="agenthub"):
            result = client_for(server, wire).run([USER], dict(config), tools=[look_up], journal=journal,
                                                  run_id="bg-1", journal_wait=10).result()
        sent = posts(server, wire)
        got = gets(server)
    assert [e["k"] for e in entries] == (["header", "attach"] if background else [])
    assert result.stop == "done" and result.turns == 2 and result.reattached_turns == 0
    assert len(sent) == 3 and sent[0]["body"] == sent[1]["body"]  # the first turn sent again, once
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    if background:
        assert got == [("/v1/responses/res_turn1", {"stream": "true"})]  # tried by id first: gone
        assert len(warned) == 1 and "res_turn1 is not re-attached: the server no longer has it (HTTP 404)" in warned[0]
    else:
        assert got == [] and warned == []  # nothing to re-attach to: sent again, as before


def test_the_re_attached_turns_events_are_live_and_a_valid_stream(tmp_path):
    from agenthub import check_stream

    store = _Failing({"turn"})
    with LongrunServer() as server:
        script(server, "openai-responses")
        client = client_for(server, "openai-responses")
        with pytest.raises(StoreError):
            client.run([USER], dict(CONFIG), tools=[look_up], journal=store, run_id="bg-2").result()
        store.failing = set()
        events = list(client.run([USER], dict(CONFIG), tools=[look_up], journal=store, run_id="bg-2"))
    assistant = [e for e in events if e["role"] == "assistant"]
    starts = [n for n, e in enumerate(assistant) if e["event_type"] == "start"]
    assert len(starts) == 2
    for start, end in zip(starts, starts[1:] + [len(assistant)]):
        check_stream(assistant[start:end])
    assert not any(e.get("replayed") for e in events)


# -- a journal store that fails at a kind of entry: the run stops there, in this process ---------------------------
class _Failing(MemoryStore):
    def __init__(self, failing):
        MemoryStore.__init__(self)
        self.failing = set(failing)

    def journal_append_many(self, run_id, owner, seq, entries, ttl=None):
        if any(json.loads(entry)["k"] in self.failing for entry in entries):
            raise StoreError("the store went away")  # (one write: all of it or none)
        MemoryStore.journal_append_many(self, run_id, owner, seq, entries, ttl)


def stopped_after_the_first_answer(server, wire, run_id="bg-3"):
    """A journaled run on ``server`` whose journal fails when the first turn's answer is written: the response
    completed server-side, only its id is journaled (what a crash right after the stop event leaves)."""
    store = _Failing({"turn"})
    with pytest.raises(StoreError, match="the store went away"):
        client_for(server, wire).run([USER], dict(CONFIG), tools=[look_up], journal=store, run_id=run_id).result()
    assert kinds(store, run_id) == ["header", "attach"]
    store.failing = set()
    return store


def stopped_with_another_answer_next(server, wire):
    """``stopped_after_the_first_answer`` with the first turn answered again by a new response (res_again)
    when it is sent again."""
    script(server, wire)
    server.add("res_again", responses_call("res_again"))
    server.scripts.append(server.scripts.pop(1))
    return stopped_after_the_first_answer(server, wire)


@pytest.mark.parametrize("wire", sorted(WIRES))
def test_a_finished_response_found_on_re_attach_gives_its_whole_output(wire):
    clean, _ = uninterrupted(wire)
    with LongrunServer() as server:
        script(server, wire)
        store = stopped_after_the_first_answer(server, wire)
        assert len(posts(server, wire)) == 1
        result = client_for(server, wire).run([USER], dict(CONFIG), tools=[look_up], journal=store,
                                              run_id="bg-3").result()
        assert len(posts(server, wire)) == 2 and len(gets(server)) == 1
    assert plain(result.messages) == plain(clean.messages) and result.cost_usd == clean.cost_usd


def test_a_response_the_server_no_longer_has_is_sent_again_once_with_a_warning(caplog):
    wire = "openai-responses"
    clean, clean_bodies = uninterrupted(wire)
    with LongrunServer() as server:
        script(server, wire)
        server.add("res_again", responses_call("res_again"))  # what the re-sent first turn plays
        server.scripts.append(server.scripts.pop(1))  # (turn 2's answer after it)
        store = stopped_after_the_first_answer(server, wire)
        del server.created["res_turn1"]  # expired: GET answers 404
        with caplog.at_level(logging.WARNING, logger="agenthub"):
            result = client_for(server, wire).run([USER], dict(CONFIG), tools=[look_up], journal=store,
                                                  run_id="bg-3").result()
        sent = posts(server, wire)
        got = gets(server)
    assert got == [("/v1/responses/res_turn1", {"stream": "true"})]
    assert len(sent) == 3 and [r["body"] for r in sent[1:]] == clean_bodies  # the first turn re-sent once
    assert plain(result.messages) == plain(clean.messages)
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warned == ["run 'bg-3': turn 0: background response res_turn1 is not re-attached: the server no longer "
                      "has it (HTTP 404); the request is sent again"]
    entries = [json.loads(e) for e in store.journal_entries("bg-3")]
    assert entries[2] == {"k": "detach", "turn": 0, "id": "res_turn1", "reason": "the server no longer has it (HTTP 404)"}
    assert [e["k"] for e in entries] == ["header", "attach", "detach", "attach", "turn", "result", "attach",
                                         "turn", "done"]
    assert entries[3]["id"] == "res_again"


def test_a_response_that_failed_is_sent_again():
    wire = "openai-responses"
    clean, _ = uninterrupted(wire)
    with LongrunServer() as server:
        store = stopped_with_another_answer_next(server, wire)
        failed = {"type": "response.failed", "sequence_number": 2, "response": {
            "id": "res_turn1", "object": "response", "status": "failed",
            "error": {"code": "server_error", "message": "the model failed"}}}
        server.created["res_turn1"].events[2:] = [_sse("response.failed", failed)]
        result = client_for(server, wire).run([USER], dict(CONFIG), tools=[look_up], journal=store,
                                              run_id="bg-3").result()
        assert len(posts(server, wire)) == 3 and len(gets(server)) == 1
    assert plain(result.messages) == plain(clean.messages)
    entries = [json.loads(e) for e in store.journal_entries("bg-3")]
    assert entries[2]["k"] == "detach" and entries[2]["reason"].startswith("it failed")


def test_a_run_without_background_sends_the_request_in_flight_again():
    wire = "openai-responses"
    with LongrunServer() as server:
        server.add("res_turn1", responses_call("res_turn1"))
        server.add("res_again", responses_call("res_again"))
        server.add("res_turn2", responses_events("res_turn2", ["The museum ", "is open."]))
        store = _Failing({"turn"})
        client = client_for(server, wire)
        with pytest.raises(StoreError):
            client.run([USER], {"max_tokens": 200}, tools=[look_up], journal=store, run_id="bg-4").result()
        assert kinds(store, "bg-4") == []  # no id journaled: nothing to re-attach to
        store.failing = set()
        result = client.run([USER], {"max_tokens": 200}, tools=[look_up], journal=store, run_id="bg-4").result()
        assert len(posts(server, wire)) == 3 and gets(server) == []
    assert result.stop == "done" and result.turns == 2 and result.reattached_turns == 0


def test_a_response_started_on_another_route_is_sent_again():
    wire = "openai-responses"
    with LongrunServer() as server:
        store = stopped_with_another_answer_next(server, wire)
        other = AutoLLMClient("gpt-5.5", api_key=KEY, base_url="http://localhost:{}/v1".format(
            server.url.rsplit(":", 1)[1]), client_type=wire, max_retries=0)  # the same server by another host name
        result = other.run([USER], dict(CONFIG), tools=[look_up], journal=store, run_id="bg-3").result()
        assert len(posts(server, wire)) == 3 and gets(server) == []
    assert result.stop == "done"
    entries = [json.loads(e) for e in store.journal_entries("bg-3")]
    assert entries[2]["k"] == "detach" and entries[2]["reason"].startswith("it was started on another route")


def _dead_url():
    """A 127.0.0.1 URL nothing listens on (a port bound, then closed): a connection there is refused."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return "http://127.0.0.1:{}/v1".format(port)


@pytest.mark.parametrize("wire", sorted(WIRES))
def test_a_response_a_fallback_started_is_re_attached_on_that_fallback(wire):
    clean, _ = uninterrupted(wire)
    model, path, resource = WIRES[wire]
    with LongrunServer() as server:
        script(server, wire)

        def primary():  # refused at once: every turn moves to the fallback, which starts the response
            return AutoLLMClient("other-model", api_key=KEY, base_url=_dead_url(), client_type=wire, max_retries=0,
                                 fallbacks=[client_for(server, wire)])

        store = _Failing({"turn"})
        with pytest.raises(StoreError):
            primary().run([USER], dict(CONFIG), tools=[look_up], journal=store, run_id="bg-f").result()
        attach = [json.loads(e) for e in store.journal_entries("bg-f")][1]
        assert attach["k"] == "attach" and attach["route"]["model"] == model
        store.failing = set()
        result = primary().run([USER], dict(CONFIG), tools=[look_up], journal=store, run_id="bg-f").result()
        assert len(posts(server, wire)) == 2  # the first turn once (before the failure), the second once
        assert gets(server) == [(resource + "/res_turn1", {"stream": "true"})]
    assert (result.stop, result.turns, result.reattached_turns) == ("done", 2, 1)
    assert plain(result.messages) == plain(clean.messages) and result.cost_usd == clean.cost_usd
    assert "detach" not in kinds(store, "bg-f")


def test_run_stateful_re_attaches_into_a_new_clients_history():
    wire = "openai-responses"
    with LongrunServer() as server:
        script(server, wire)
        clean = client_for(server, wire)
        clean.run_stateful(USER, dict(CONFIG), tools=[look_up]).result()
        clean_bodies = [r["body"] for r in posts(server, wire)]
    with LongrunServer() as server:
        script(server, wire)
        first = client_for(server, wire)
        store = _Failing({"turn"})
        with pytest.raises(StoreError):
            first.run_stateful(USER, dict(CONFIG), tools=[look_up], journal=store, run_id="bg-s").result()
        store.failing = set()
        fresh = client_for(server, wire)
        result = fresh.run_stateful(USER, dict(CONFIG), tools=[look_up], journal=store, run_id="bg-s").result()
        sent = posts(server, wire)
        assert len(sent) == 2 and len(gets(server)) == 1
    assert (result.stop, result.turns, result.replayed_turns, result.reattached_turns) == ("done", 2, 0, 1)
    history = plain(fresh.get_history())
    assert [m["role"] for m in history] == ["user", "assistant", "user", "assistant"]
    assert history[0]["content_items"] == USER["content_items"]
    assert history == plain(clean.get_history())
    assert [r["body"] for r in sent] == clean_bodies  # the second turn as an uninterrupted run sends it


def test_a_failure_mid_turn_journals_detach_so_the_resume_sends_the_turn_again():
    wire = "openai-responses"
    with LongrunServer() as server:
        events = responses_call("res_turn1")
        failed = {"type": "response.failed", "sequence_number": 4, "response": {
            "id": "res_turn1", "object": "response", "status": "failed",
            "error": {"code": "server_error", "message": "the model failed"}}}
        server.add("res_turn1", events[:4] + [_sse("response.failed", failed)])
        server.add("res_again", responses_call("res_again"))
        server.add("res_turn2", responses_events("res_turn2", ["The museum ", "is open."]))
        store = MemoryStore()
        client = client_for(server, wire)
        with pytest.raises(UpstreamError, match="the model failed"):
            client.run([USER], dict(CONFIG), tools=[look_up], journal=store, run_id="bg-5").result()
        assert kinds(store, "bg-5") == ["header", "attach", "detach"]
        result = client.run([USER], dict(CONFIG), tools=[look_up], journal=store, run_id="bg-5").result()
        assert len(posts(server, wire)) == 3 and gets(server) == []  # sent again, not re-attached to what failed
    assert result.stop == "done" and result.turns == 2 and result.reattached_turns == 0


def test_a_re_attach_is_never_answered_from_a_response_cache():
    wire = "openai-responses"
    with LongrunServer() as server:
        server.created["res_turn1"] = server.add("res_turn1", responses_call("res_turn1"))  # (started elsewhere)
        cache = ResponseCache(MemoryStore())
        client = client_for(server, wire, cache=cache)
        first = list(client._reattach("res_turn1", dict(CONFIG), messages=[USER]))
        again = list(client._reattach("res_turn1", dict(CONFIG), messages=[USER]))
        assert gets(server) == [("/v1/responses/res_turn1", {"stream": "true"})] * 2 and posts(server, wire) == []
    assert [e["event_type"] for e in first] == [e["event_type"] for e in again]
    assert (cache.hits, cache.misses) == (0, 0)


class _Documents(LongrunServer):
    """A server whose GET of a finished response answers the whole Response object (one JSON document)."""

    def respond(self, handler, raw):
        if handler.command == "GET" and "res_turn1" in handler.path:
            with self.lock:
                self.requests.append({"method": "GET", "path": handler.path.split("?")[0],
                                      "query": {"stream": "true"}, "body": None, "headers": dict(handler.headers)})
            final = json.loads(self.created["res_turn1"].events[-1].split(b"data: ", 1)[1])["response"]
            return self._json(handler, 200, final)
        return LongrunServer.respond(self, handler, raw)


def test_a_finished_response_answered_as_one_document_gives_its_whole_output():
    wire = "openai-responses"
    clean, _ = uninterrupted(wire)
    with _Documents() as server:
        script(server, wire)
        store = stopped_after_the_first_answer(server, wire)
        result = client_for(server, wire).run([USER], dict(CONFIG), tools=[look_up], journal=store,
                                              run_id="bg-3").result()
        assert len(posts(server, wire)) == 2 and len(gets(server)) == 1
    assert plain(result.messages) == plain(clean.messages) and result.cost_usd == clean.cost_usd


def test_a_journaled_id_that_would_leave_its_url_segment_is_never_asked_for():
    wire = "openai-responses"
    with LongrunServer() as server:
        store = stopped_with_another_answer_next(server, wire)
        route = json.loads(store.journal_entries("bg-3")[1])["route"]
        assert store.journal_claim("bg-3", "editor", 30.0) is None  # (someone wrote another id into the journal)
        store.journal_append("bg-3", "editor", 2, json.dumps({"k": "attach", "turn": 0, "id": "..", "wire": wire,
                                                               "route": route}))
        store.journal_release("bg-3", "editor")
        result = client_for(server, wire).run([USER], dict(CONFIG), tools=[look_up], journal=store,
                                              run_id="bg-3").result()
        assert gets(server) == [] and len(posts(server, wire)) == 3
    assert result.stop == "done"
    entries = [json.loads(e) for e in store.journal_entries("bg-3")]
    assert entries[3] == {"k": "detach", "turn": 0, "id": "..", "reason": "it cannot be asked for (StreamProtocolError)"}


class _StillRunning(LongrunServer):
    """A server whose GET of res_turn1 answers the whole object, still in progress (it ignored stream=true)."""

    def respond(self, handler, raw):
        if handler.command == "GET" and "res_turn1" in handler.path:
            with self.lock:
                self.requests.append({"method": "GET", "path": handler.path.split("?")[0],
                                      "query": {"stream": "true"}, "body": None, "headers": dict(handler.headers)})
            if "/responses/" in handler.path:
                return self._json(handler, 200, {"id": "res_turn1", "object": "response", "status": "in_progress",
                                                 "background": True, "output": []})
            return self._json(handler, 200, {"id": "res_turn1", "status": "in_progress"})
        return LongrunServer.respond(self, handler, raw)


@pytest.mark.parametrize("wire", sorted(WIRES))
def test_a_response_still_running_on_re_attach_is_not_sent_again(wire):
    """The re-attaching GET answers the response as one document still in_progress: no answer yet, and the turn is
    not paid for again: the run stops with the StreamProtocolError naming it, the journal keeps its id (before, on
    Interactions: an EmptyResponseError, and the journal marked it detached as if it had been cancelled, so the
    next resume would POST the turn a second time while the first still ran)."""
    from agenthub.errors import StreamProtocolError

    with _StillRunning() as server:
        script(server, wire)
        store = stopped_after_the_first_answer(server, wire)
        with pytest.raises(StreamProtocolError) as caught:
            client_for(server, wire).run([USER], dict(CONFIG), tools=[look_up], journal=store, run_id="bg-3").result()
        assert len(posts(server, wire)) == 1 and gets(server) == [(WIRES[wire][2] + "/res_turn1", {"stream": "true"})]
    assert (caught.value.response_status, caught.value.response_id) == ("in_progress", "res_turn1")
    assert kinds(store, "bg-3") == ["header", "attach"]


# -- a run that stopped itself cancelled its background response: a resume sends the turn again (review 15b) --------
def _cancelled_replay(wire, rid, events, upto):
    """What the server keeps of ``rid`` once cancelled after ``events[:upto]``: those events, then (Interactions)
    ``interaction.completed`` with status cancelled, sent "when the Interaction receives Complete/Cancel"
    (google-genai's InteractionCompletedEvent); Responses has no stream event for a cancel: they alone."""
    if wire == "openai-responses":
        return events[:upto]
    return events[:upto] + [_sse("interaction.completed", {
        "event_type": "interaction.completed", "event_id": "evt_{:03d}".format(upto + 1),
        "interaction": {"id": rid, "status": "cancelled"}})]


class _Interrupt(AttemptHook):
    """A KeyboardInterrupt raised in the reading thread while the model stream is read, at its first text."""

    wants_events = True

    def __init__(self, armed):
        self.armed = armed

    def on_event(self, call, event):
        if self.armed and any(i.get("text") for i in event["content_items"]):
            raise KeyboardInterrupt


@pytest.mark.parametrize("wire", sorted(WIRES))
@pytest.mark.parametrize("how", ["abort", "close", "interrupt"])
def test_a_run_stopped_mid_turn_journals_its_cancelled_response_detached_and_the_resume_sends_it_again(wire, how):
    """The run's abort (or its close, or a KeyboardInterrupt in the reading thread) cancels the turn's background
    response server-side; its id stayed journaled as attached, so a resume re-attached to the response the run had
    cancelled: on Interactions it took the cancelled, cut answer ("The museum ") as the turn's; on Responses each
    resume failed on a stream that brings nothing new."""
    model, path, resource = WIRES[wire]
    events_of = responses_events if wire == "openai-responses" else interactions_events
    texts = ["The museum ", "is ", "open."]
    first = events_of("res_cut", texts)
    upto = 5 if wire == "openai-responses" else 3  # up to the first text delta
    gate = threading.Event()
    with LongrunServer() as server:
        cut = server.add("res_cut", first, hold=(upto, gate), done=wire != "openai-responses")
        server.add("res_fresh", events_of("res_fresh", texts), done=wire != "openai-responses")
        store = MemoryStore()
        interrupt = _Interrupt(how == "interrupt")  # (a Ctrl-C while the stream is read: inside it)
        client = client_for(server, wire, hooks=[interrupt])
        run = client.run([USER], dict(CONFIG), tools=[look_up], journal=store, run_id="bg-x")
        with pytest.raises(KeyboardInterrupt) if how == "interrupt" else contextlib.nullcontext():
            for event in run:
                if event["event_type"] == "delta" and any(i.get("text") for i in event["content_items"]):
                    if how == "abort":
                        run.abort()
                    else:
                        run.close()
                        break
        interrupt.armed = False
        gate.set()
        assert cut.cancelled
        cut.events[:] = _cancelled_replay(wire, "res_cut", first, upto)
        cut.cancelled = False  # (the fake's GET plays what it keeps)
        entries = [json.loads(e) for e in store.journal_entries("bg-x")]
        result = client.run([USER], dict(CONFIG), tools=[look_up], journal=store, run_id="bg-x").result()
        methods = [(r["method"], r["path"]) for r in server.requests]
    assert [e["k"] for e in entries][:3] == ["header", "attach", "detach"]
    assert entries[2] == {"k": "detach", "turn": 0, "id": "res_cut",
                          "reason": "it was cancelled when the run stopped"}
    assert methods == [("POST", resource), ("POST", resource + "/res_cut/cancel"), ("POST", resource)]
    assert (result.stop, result.turns, result.reattached_turns) == ("done", 1, 0)
    assert [i["text"] for i in result.final["content_items"] if i["type"] == "text"] == ["".join(texts)]


def test_an_interaction_id_that_is_no_string_is_not_journaled_and_the_journal_stays_readable():
    """A server naming its interaction by a number: the id was journaled as it came, and the journal's reader refuses
    an attach entry whose id is no string, so the run's own journal was "corrupt": given again, the finished run
    raised JournalError instead of its result."""
    wire = "gemini-interactions"
    events = [e.replace(b'"id":"12345"', b'"id":12345') for e in interactions_events("12345", ["The museum ", "is open."])]
    with LongrunServer() as server:
        server.add("12345", events, done=True)
        store = MemoryStore()
        client = client_for(server, wire)
        first = client.run([USER], dict(CONFIG), tools=[look_up], journal=store, run_id="bg-n").result()
        again = client.run([USER], dict(CONFIG), tools=[look_up], journal=store, run_id="bg-n").result()
        assert [(r["method"], r["path"]) for r in server.requests] == [("POST", "/v1/interactions")]
    assert kinds(store, "bg-n") == ["header", "turn", "done"]
    assert (first.stop, again.stop, again.replayed_turns) == ("done", "done", 1)
    assert plain(again.messages) == plain(first.messages)
