"""Runs that survive a crash (issue 39): a journaled run killed with SIGKILL in a real process at a tool, at a
model request and at a side effect, resumed in another process with the same run_id against the same local
server that counts requests: no completed turn is sent (paid) twice, an idempotent tool interrupted runs again
with the same idempotency key, a non-idempotent one comes back pending (at most once), the transcript equals
an uninterrupted run's.  Also: one owner at a time, a finished run's result again at once, refusals of another
run under the same id, another format, a corrupt entry; no key in the journal."""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
import textwrap

import pytest

from agent_streams import chat_calls, chat_text
from sse_server import Answer, SSEServer

from agenthub import AutoLLMClient, ConfigError, tool
from agenthub.agent import JournalError, RunLockedError, current_call
from agenthub.stores import MemoryStore, StoreError, open_store

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
KEY = "sk-test-journal-key-0001"
USER = {"role": "user", "content_items": [{"type": "text", "text": "Book the trip."}]}

#: the child: a journaled run whose tools print what they do; HANG=<tool> makes that tool wait to be killed
CHILD = textwrap.dedent("""
    import os, sys, time
    sys.path.insert(0, sys.argv[1])
    import agenthub.stores.journal as rows
    rows.JOURNAL_LEASE = 1.0  # a killed owner's lease lapses in a second here
    from agenthub import AutoLLMClient, tool
    from agenthub.agent import current_call

    def say(*words):
        print(*words, flush=True)

    @tool
    def look_up(city: str) -> str:
        \"\"\"Look a city up.\"\"\"
        say("look_up", city, current_call().idempotency_key)
        if os.environ.get("HANG") == "look_up":
            time.sleep(60)
        if os.environ.get("SLOW") == "look_up":  # (longer than QUICK: its result is stored before the next request)
            time.sleep(0.2)
        return city + ": open"

    @tool(idempotent=False)
    def pay(amount: int) -> str:
        \"\"\"Pay.\"\"\"
        say("pay", amount, current_call().idempotency_key)
        if os.environ.get("HANG") == "pay":
            time.sleep(60)
        return "paid"

    client = AutoLLMClient("gpt-4o-mini", api_key=os.environ["KEY"], base_url=os.environ["URL"] + "/v1",
                           client_type="openai-chat", max_retries=0)
    user = {"role": "user", "content_items": [{"type": "text", "text": "Book the trip."}]}
    result = client.run([user], tools=[look_up, pay], journal=os.environ["JOURNAL"], run_id="trip-1").result()
    say("stop", result.stop, result.turns)
""")


@tool
def look_up(city: str) -> str:
    """Look a city up."""
    ran.append(("look_up", city, current_call().idempotency_key))
    return city + ": open"


@tool(idempotent=False)
def pay(amount: int) -> str:
    """Pay."""
    ran.append(("pay", amount, current_call().idempotency_key))
    return "paid"


ran = []
TOOLS = [look_up, pay]
SCRIPT = [chat_calls([("c1", "look_up", '{"city": "Rome"}')]), chat_calls([("c2", "pay", '{"amount": 30}')]),
          chat_text("Booked.")]


@pytest.fixture(autouse=True)
def clean():
    ran.clear()


def client_for(server):
    return AutoLLMClient("gpt-4o-mini", api_key=KEY, base_url=server.url + "/v1", client_type="openai-chat",
                         max_retries=0)


def child_until(server, journal, hang, marker, requests=None, slow=""):
    """Start the child; read its lines until one starts with ``marker``; kill it with SIGKILL there (with
    ``requests``: once the server has that many requests, so none of the child's arrives after the kill);
    ``slow``: the tool that takes 0.2 s."""
    env = dict(os.environ, KEY=KEY, URL=server.url, JOURNAL=journal, HANG=hang, SLOW=slow, PYTHONPATH=ROOT)
    child = subprocess.Popen([sys.executable, "-c", CHILD, ROOT], stdout=subprocess.PIPE, env=env)
    lines = []
    try:
        while True:
            line = child.stdout.readline().decode()
            assert line, "the child ended before {!r}: {}".format(marker, lines)
            lines.append(line.split())
            if line.startswith(marker):
                break
        deadline = time.monotonic() + 10
        while requests is not None and len(server.requests) < requests:
            assert time.monotonic() < deadline, "the child's request {} never came".format(requests)
            time.sleep(0.01)
        child.send_signal(signal.SIGKILL)
        child.wait(10)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(10)
        child.stdout.close()
    return lines


def plain(messages):
    return [{k: v for k, v in m.items() if k != "created_at"} for m in messages]


def bodies(server):
    return [request["body"]["messages"] for request in server.requests]


def uninterrupted():
    with SSEServer() as server:
        server.answers += [Answer([answer]) for answer in SCRIPT]
        result = client_for(server).run([USER], tools=TOOLS).result()
    ran.clear()
    return result, bodies(server)


def test_killed_at_an_idempotent_tool_the_resume_runs_it_again_and_pays_no_turn_twice(store_url):
    journal = store_url  # SQLite, then a real redis-server
    clean_result, clean_bodies = uninterrupted()
    with SSEServer() as server:
        server.answers += [Answer([answer]) for answer in SCRIPT]
        lines = child_until(server, journal, "look_up", "look_up")
        assert len(server.requests) == 1  # the first turn was paid for once, by the killed process
        result = client_for(server).run([USER], tools=TOOLS, journal=journal, run_id="trip-1",
                                        journal_wait=10).result()  # (the killed owner's lease lapses first)
    assert result.stop == "done" and result.turns == 3
    assert (result.replayed_turns, result.replayed_results) == (1, 0)
    assert len(server.requests) == 3  # turns 2 and 3 live; turn 1 never again
    assert bodies(server) == clean_bodies
    # at least once: the interrupted look_up ran again here, under the key it had in the killed process
    assert ran[0] == ("look_up", "Rome", lines[-1][2])
    assert [r[0] for r in ran] == ["look_up", "pay"]
    assert plain(result.messages) == plain(clean_result.messages)


def test_killed_in_a_side_effect_the_resume_hands_it_back_pending_and_runs_it_at_most_once(store_url):
    journal = store_url
    with SSEServer() as server:
        server.answers += [Answer([answer]) for answer in SCRIPT]
        child_until(server, journal, "pay", "pay")
        assert len(server.requests) == 2
        client = client_for(server)
        first = client.run([USER], tools=TOOLS, journal=journal, run_id="trip-1", journal_wait=10).result()
        assert (first.stop, first.interrupted, [c["tool_call_id"] for c in first.pending]) == ("approval", ["c2"],
                                                                                               ["c2"])
        assert ran == [] and len(server.requests) == 2  # nothing ran, nothing was sent
        # the user checked the payment went through: deny running it again; the run goes on
        second = client.run([USER], tools=TOOLS, journal=journal, run_id="trip-1",
                            decisions={"c2": "it went through before the crash"}).result()
    assert second.stop == "done" and ran == []
    assert len(server.requests) == 3
    assert server.requests[2]["body"]["messages"][-1] == {
        "role": "tool", "tool_call_id": "c2", "content": "denied: it went through before the crash"}


def _killed_in_the_second_request(tmp_path, slow):
    """The child killed while the second turn's request is answered (look_up ran in the first); the run resumed
    here: (the result, the child's lines)."""
    journal = "sqlite:///" + str(tmp_path / "runs.db")
    with SSEServer() as server:
        hold = Answer([b"data: " + json.dumps({"id": "x", "choices": [{"index": 0, "delta": {"content": "Bo"},
                                                                       "finish_reason": None}]}).encode() + b"\n\n",
                       b""], pause=30)  # the second turn's answer never completes: the child is killed in it
        server.answers += [Answer([SCRIPT[0]]), hold]
        lines = child_until(server, journal, "", "look_up", requests=2, slow=slow)
        # (killed while the second turn's request is answered: no request of the child's comes after the swap)
        server.answers[:] = [Answer([SCRIPT[1]]), Answer([SCRIPT[2]])]
        result = client_for(server).run([USER], tools=TOOLS, journal=journal, run_id="trip-1",
                                        journal_wait=10).result()
        assert [len(r["body"]["messages"]) for r in server.requests] == [1, 3, 3, 5]
    assert result.stop == "done" and result.replayed_turns == 1
    return result, lines


def test_killed_while_the_model_answers_a_quick_idempotent_result_is_run_again(tmp_path):
    # look_up took less than QUICK: its result waited for the next write (the second turn's answer), so it runs
    # again on resume (at least once), with the same idempotency key
    result, lines = _killed_in_the_second_request(tmp_path, slow="")
    assert lines[0][:2] == ["look_up", "Rome"]
    assert ran == [("look_up", "Rome", lines[0][2]), ("pay", 30, ran[1][2])]
    assert result.replayed_results == 0


def test_killed_while_the_model_answers_a_slow_result_is_not_run_again(tmp_path):
    # look_up took 0.2 s (more than QUICK): its result was journaled before the second request went out
    result, lines = _killed_in_the_second_request(tmp_path, slow="look_up")
    assert lines[0][:2] == ["look_up", "Rome"]
    assert [r[0] for r in ran] == ["pay"]
    assert result.replayed_results == 1


def test_a_finished_run_gives_its_result_again_at_once(tmp_path):
    journal = "sqlite:///" + str(tmp_path / "runs.db")
    with SSEServer() as server:
        server.answers += [Answer([answer]) for answer in SCRIPT]
        client = client_for(server)
        first = client.run([USER], tools=TOOLS, journal=journal, run_id="trip-1").result()
        store = open_store(journal)
        written = store.journal_entries("trip-1")
        events = list(client.run([USER], tools=TOOLS, journal=journal, run_id="trip-1"))
        again = client.run([USER], tools=TOOLS, journal=journal, run_id="trip-1").result()
        # asked for again, the journal is read, not written: no more entries (one 'done' a time before)
        assert store.journal_entries("trip-1") == written
        store.close()
        assert client.run([USER], tools=TOOLS, journal=journal, run_id="trip-1").result().stop == "done"  # (let go)
    assert len(server.requests) == 3 and [r[0] for r in ran] == ["look_up", "pay"]
    assert (again.stop, again.turns, plain(again.messages), again.usage_metadata) == (
        first.stop, first.turns, plain(first.messages), first.usage_metadata)
    assert again.cost_usd == first.cost_usd  # the run's whole cost, across every process it ran in
    assert (again.replayed_turns, again.replayed_results) == (3, 2)
    assert all(event.get("replayed") is True for event in events)
    from agenthub import check_stream
    starts = [n for n, e in enumerate(events) if e["role"] == "assistant" and e["event_type"] == "start"]
    for start, end in zip(starts, starts[1:] + [len(events)]):
        check_stream([e for e in events[start:end] if e["role"] == "assistant"])


def test_a_live_owner_keeps_the_run_and_a_killed_owners_run_passes_to_the_next(tmp_path):
    journal = "sqlite:///" + str(tmp_path / "runs.db")
    env = None
    with SSEServer() as server:
        server.answers += [Answer([answer]) for answer in SCRIPT]
        env = dict(os.environ, KEY=KEY, URL=server.url, JOURNAL=journal, HANG="look_up", PYTHONPATH=ROOT)
        child = subprocess.Popen([sys.executable, "-c", CHILD, ROOT], stdout=subprocess.PIPE, env=env)
        try:
            assert child.stdout.readline().startswith(b"look_up")
            with pytest.raises(RunLockedError) as caught:
                client_for(server).run([USER], tools=TOOLS, journal=journal, run_id="trip-1")
            assert caught.value.reason == "locked" and 0 < caught.value.retry_after <= 1.0
            child.send_signal(signal.SIGKILL)
            child.wait(10)
            result = client_for(server).run([USER], tools=TOOLS, journal=journal, run_id="trip-1",
                                            journal_wait=10).result()
        finally:
            if child.poll() is None:
                child.kill()
                child.wait(10)
            child.stdout.close()
    assert result.stop == "done"


def test_another_run_under_the_same_id_is_refused_not_merged(tmp_path):
    journal = "sqlite:///" + str(tmp_path / "runs.db")
    with SSEServer() as server:
        server.answers += [Answer([answer]) for answer in SCRIPT]
        client_for(server).run([USER], tools=TOOLS, journal=journal, run_id="trip-1").result()
        other = {"role": "user", "content_items": [{"type": "text", "text": "Book another trip."}]}
        with pytest.raises(JournalError) as caught:
            client_for(server).run([other], tools=TOOLS, journal=journal, run_id="trip-1")
        assert caught.value.reason == "mismatch"
        with pytest.raises(JournalError) as caught:
            client_for(server).run([USER], tools=[look_up], journal=journal, run_id="trip-1")
        assert caught.value.reason == "mismatch"
    assert len(server.requests) == 3


def test_a_corrupt_entry_or_another_format_is_refused(tmp_path):
    path = tmp_path / "runs.db"
    journal = "sqlite:///" + str(path)
    with SSEServer() as server:
        server.answers += [Answer([answer]) for answer in SCRIPT]
        client_for(server).run([USER], tools=TOOLS, journal=journal, run_id="trip-1").result()
        with sqlite3.connect(str(path)) as conn:
            conn.execute("UPDATE agenthub_journal SET entry = '{not json' WHERE run_id = 'trip-1' AND seq = 2")
        with pytest.raises(JournalError, match="entry 2 is corrupt: refusing to replay it"):
            client_for(server).run([USER], tools=TOOLS, journal=journal, run_id="trip-1")
        with sqlite3.connect(str(path)) as conn:
            conn.execute("UPDATE agenthub_journal SET entry = '{\"k\": \"header\", \"format\": 99}' "
                         "WHERE run_id = 'trip-1' AND seq = 0")
        conn.close()
        with pytest.raises(JournalError) as caught:
            client_for(server).run([USER], tools=TOOLS, journal=journal, run_id="trip-1")
        assert caught.value.reason == "format"
    assert len(server.requests) == 3


def test_no_key_reaches_the_journal(tmp_path):
    path = tmp_path / "runs.db"
    with SSEServer() as server:
        server.answers += [Answer([answer]) for answer in SCRIPT]
        client_for(server).run([USER], {"extra_headers": {"X-Tenant-Token": "tenant-secret-0123456789"}},
                               tools=TOOLS, journal="sqlite:///" + str(path), run_id="trip-1").result()
    data = path.read_bytes() + b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.name != "runs.db")
    assert KEY.encode() not in data and b"tenant-secret-0123456789" not in data



def test_a_tool_error_echoing_the_runs_credentials_reaches_neither_journal_nor_model(tmp_path):
    """A tool's error text is scrubbed of the run's credentials as of the client's: its config's extra_headers,
    extra_body's fields named like a credential, a session='s headers (a tool that called the same service with
    them and failed may quote them)."""
    import requests

    tenant, body_key, session_key = "tenant-secret-0123456789", "body-secret-0123456789", "session-secret-0123456789"

    @tool
    def fetch(city: str) -> str:
        """Fetch."""
        raise RuntimeError("refused: {} {} {} {}".format(KEY, tenant, body_key, session_key))

    path = tmp_path / "runs.db"
    session = requests.Session()
    session.headers["X-Session-Token"] = session_key
    with SSEServer() as server:
        server.answers += [Answer([chat_calls([("c1", "fetch", '{"city": "Rome"}')])]), Answer([chat_text("No.")])]
        client = AutoLLMClient("gpt-4o-mini", api_key=KEY, base_url=server.url + "/v1", client_type="openai-chat",
                               max_retries=0, session=session)
        result = client.run([USER], {"extra_headers": {"X-Tenant-Token": tenant}, "extra_body": {"api_key": body_key}},
                            tools=[fetch], journal="sqlite:///" + str(path), run_id="trip-1").result()
    session.close()
    told = "RuntimeError: refused: *** *** *** ***"
    assert result.messages[1]["content_items"][0]["text"] == told
    assert server.requests[1]["body"]["messages"][2]["content"] == told
    data = b"".join(p.read_bytes() for p in tmp_path.iterdir())
    assert told.encode() in data
    for secret in (KEY, tenant, body_key, session_key):
        assert secret.encode() not in data

class _GoingAway(MemoryStore):
    def __init__(self, after):
        MemoryStore.__init__(self)
        self.after = after

    def journal_append_many(self, run_id, owner, seq, entries, ttl=None):
        if seq + len(entries) > self.after:
            raise StoreError("the store went away")
        MemoryStore.journal_append_many(self, run_id, owner, seq, entries, ttl)


def test_a_journal_that_goes_away_fails_the_run_with_a_typed_error_and_keeps_what_was_done():
    store = _GoingAway(after=4)  # header, turn 1, look_up's result, turn 2: pay's start cannot be written
    with SSEServer() as server:
        server.answers += [Answer([answer]) for answer in SCRIPT]
        run = client_for(server).run([USER], tools=TOOLS, journal=store, run_id="trip-1")
        with pytest.raises(StoreError, match="the store went away"):
            run.result()
    assert [json.loads(e)["k"] for e in store.journal_entries("trip-1")] == ["header", "turn", "result", "turn"]
    assert [r[0] for r in ran] == ["look_up"]  # pay, not journaled as started, never ran (at most once)


def test_bad_journal_arguments_are_refused_before_anything_is_sent(tmp_path):
    with SSEServer() as server:
        client = client_for(server)
        with pytest.raises(ConfigError, match="both journal= .* and run_id="):
            client.run([USER], tools=TOOLS, run_id="x")
        with pytest.raises(ConfigError, match="run_id must be 1 to 200 printable characters"):
            client.run([USER], tools=TOOLS, journal=MemoryStore(), run_id="")
        with pytest.raises(ConfigError, match="journal ttl must be a number of seconds"):
            client.run([USER], tools=TOOLS, journal=MemoryStore(), run_id="x", journal_ttl=0)
        for ttl in (float("inf"), 1e15, 10 ** 9):  # (Redis refused such an expiry mid-run; every store refuses it now)
            with pytest.raises(ConfigError, match=r"^journal ttl must be a number of seconds > 0 and below 10\*\*9 "):
                client.run([USER], tools=TOOLS, journal=MemoryStore(), run_id="x", journal_ttl=ttl)
    assert server.requests == []


def test_current_call_outside_a_tool_is_none_and_keys_are_stable_without_a_journal():
    assert current_call() is None
    with SSEServer() as server:
        server.answers += [Answer([answer]) for answer in SCRIPT]
        client_for(server).run([USER], tools=TOOLS).result()
    assert [r[0] for r in ran] == ["look_up", "pay"] and len({r[2] for r in ran}) == 2


def test_run_stateful_resumes_into_a_new_clients_history(tmp_path):
    journal = "sqlite:///" + str(tmp_path / "runs.db")
    with SSEServer() as server:
        server.answers += [Answer([answer]) for answer in SCRIPT]
        first_client = client_for(server)
        first = first_client.run_stateful(USER, tools=TOOLS, journal=journal, run_id="trip-s").result()
        fresh = client_for(server)  # another process would start with an empty history too
        again = fresh.run_stateful(USER, tools=TOOLS, journal=journal, run_id="trip-s").result()
    assert len(server.requests) == 3 and [r[0] for r in ran] == ["look_up", "pay"]
    assert (first.stop, again.stop, again.replayed_turns, again.replayed_results) == ("done", "done", 3, 2)
    assert plain(fresh.get_history()) == plain(first_client.get_history())


class _Counting(MemoryStore):
    def __init__(self):
        MemoryStore.__init__(self)
        self.writes = []

    def journal_append_many(self, run_id, owner, seq, entries, ttl=None):
        self.writes.append([json.loads(e)["k"] for e in entries])
        MemoryStore.journal_append_many(self, run_id, owner, seq, entries, ttl)


def test_a_turn_is_stored_at_once_a_side_effect_before_it_starts_and_as_it_ends_the_rest_with_the_next_write():
    """What must be durable is, when it must be (the turn at its end; a non-idempotent call before it starts,
    its result as it ends); an idempotent call's result goes with the next write: before the next request when
    such results took QUICK seconds or more, else with the next turn (a crash in the request runs them again):
    5 store writes for this run, not one an entry (12)."""
    store = _Counting()
    seen = []

    def stored():
        return [(e["k"], e.get("id")) for e in map(json.loads, store.journal_entries("trip-w"))]

    @tool
    def note(city: str) -> str:
        """Note a city."""
        seen.append(("note", city, stored()))
        return city

    @tool(idempotent=False)
    def charge(amount: int) -> str:
        """Charge."""
        seen.append(("charge", amount, stored()))
        return "charged"

    with SSEServer() as server:
        server.answers += [Answer([chat_calls([("c1", "note", '{"city": "Rome"}'), ("c2", "charge", '{"amount": 3}'),
                                               ("c3", "note", '{"city": "Oslo"}')])]),
                           Answer([chat_text("Done.")])]
        result = client_for(server).run([USER], tools=[note, charge], journal=store, run_id="trip-w",
                                        parallel=1).result()  # (one call at a time: what each one sees is fixed)
    assert result.stop == "done"
    assert seen == [
        ("note", "Rome", [("header", None), ("turn", None), ("call", "c2")]),
        ("charge", 3, [("header", None), ("turn", None), ("call", "c2")]),  # stored before it started
        ("note", "Oslo", [("header", None), ("turn", None), ("call", "c2"), ("result", "c1"), ("result", "c2")]),
    ]
    assert store.writes == [["header", "turn"], ["call"], ["result", "result"], ["result", "turn"], ["done"]]
    again = client_for(server).run([USER], tools=[note, charge], journal=store, run_id="trip-w", parallel=1).result()
    assert (again.replayed_turns, again.replayed_results, plain(again.messages)) == (2, 3, plain(result.messages))


@pytest.mark.parametrize("results, flushed", [
    ([("c1", 0.01), ("c2", 0.03)], False),  # quick together (0.04 s): they wait for the next turn's write
    ([("c1", 0.03), ("c2", 0.03)], True),  # 0.06 s together: stored before the request (no tool time redone)
    ([("c1", 0.05)], True),  # QUICK itself is not quick
    ([("c1", 0.0), ("c9", 0.0)], True),  # c9 never started as an idempotent call (a denial, an error): stored first
    ([("c1", 0.0), ("c2", 0.0, "Rome \udcff")], True),  # a lone surrogate: stored (escaped) before the request
])
def test_the_results_of_quick_idempotent_calls_wait_for_the_next_write(results, flushed):
    from agenthub.agent.journal import QUICK, RunJournal

    assert QUICK == 0.05
    store = _Counting()
    journal = RunJournal(store, "quick-1", "print")
    journal.answered(0, {"role": "assistant", "content_items": []}, None, None)
    journal.starting(0, [({"tool_call_id": "c1", "name": "note", "arguments": {}}, False, None),
                         ({"tool_call_id": "c2", "name": "note", "arguments": {}}, False, None)])
    for call_id, seconds, *text in results:
        journal.finished(0, call_id, {"type": "tool_result", "tool_call_id": call_id,
                                      "text": text[0] if text else "ok"}, seconds)
    journal.request(1)
    assert store.writes == [["header", "turn"]] + ([["result"] * len(results)] if flushed else [])
    journal.answered(1, {"role": "assistant", "content_items": []}, None, None)
    assert store.writes[1:] == [["result"] * len(results)] * flushed + [["result"] * (not flushed) * len(results)
                                                                        + ["turn"]]
    journal.done("done", [])
    assert [json.loads(e)["k"] for e in store.journal_entries("quick-1")] == \
        ["header", "turn"] + ["result"] * len(results) + ["turn", "done"]


def test_quick_results_waiting_go_with_a_background_responses_id_and_a_resume_reads_them():
    """The request that carried quick results became a background response: its id's write stores them first
    (the journal holds what the response was asked with); a resume re-attaches with them replayed."""
    from agenthub.agent.journal import RunJournal

    store = _Counting()
    journal = RunJournal(store, "quick-2", "print")
    journal.answered(0, {"role": "assistant", "content_items": []}, None, None)
    journal.starting(0, [({"tool_call_id": "c1", "name": "note", "arguments": {}}, False, None)])
    journal.finished(0, "c1", {"type": "tool_result", "tool_call_id": "c1", "text": "ok"}, 0.001)
    journal.request(1)
    journal.attached(1, "resp_1", "openai-responses", {"model": "m", "client_type": "openai-responses",
                                                        "host": "api.openai.com"})
    assert store.writes == [["header", "turn"], ["result", "attach"]]
    journal.close()
    again = RunJournal(store, "quick-2", "print")
    try:
        assert again.result(0, "c1") == {"type": "tool_result", "tool_call_id": "c1", "text": "ok"}
        assert again.attachment(1) == {"k": "attach", "turn": 1, "id": "resp_1", "wire": "openai-responses",
                                       "route": {"model": "m", "client_type": "openai-responses",
                                                 "host": "api.openai.com"}}
    finally:
        again.close()


@pytest.mark.parametrize("kept", [False, True])
def test_no_request_goes_out_once_another_worker_took_the_run_over(kept):
    """The lease thread found another owner: the next model request is refused (StoreError) whether or not
    results wait for a write (that worker sends it: sent here too, it would be paid twice)."""
    from agenthub.agent.journal import RunJournal

    store = _Counting()
    journal = RunJournal(store, "lost-1", "print")
    try:
        journal.answered(0, {"role": "assistant", "content_items": []}, None, None)
        if kept:
            journal.starting(0, [({"tool_call_id": "c1", "name": "note", "arguments": {}}, False, None)])
            journal.finished(0, "c1", {"type": "tool_result", "tool_call_id": "c1", "text": "ok"}, 0.001)
        store.journal_release("lost-1", journal.journal.owner)
        assert store.journal_claim("lost-1", "another-worker") is None
        journal.journal.renew()  # (what the lease thread does a third of a lease on)
        with pytest.raises(StoreError) as info:
            journal.request(1)
        assert str(info.value) == "the journal of run 'lost-1': another worker took the run over"
        assert store.writes == [["header", "turn"]]
    finally:
        journal.close()


def test_runs_one_after_another_reuse_the_store_of_their_url_and_the_lease_thread(tmp_path, monkeypatch):
    """A store URL is opened once a process (not once a run), an SQLite file removed since is opened anew, a
    forked child opens its own; the lease thread of one run serves the next."""
    import agenthub.agent.journal as journal_module

    opened = []
    real = journal_module.open_store
    monkeypatch.setattr(journal_module, "open_store", lambda spec: opened.append(spec) or real(spec))
    url = "sqlite:///" + str(tmp_path / "runs.db")
    with SSEServer() as server:
        server.answers += [Answer([chat_text("one")]), Answer([chat_text("two")]), Answer([chat_text("three")])]
        client = client_for(server)
        assert client.run([USER], tools=TOOLS, journal=url, run_id="r-1").result().stop == "done"
        thread = journal_module._RENEWER._thread
        assert thread is not None and thread.is_alive()  # (lingering for the next run)
        assert client.run([USER], tools=TOOLS, journal=url, run_id="r-2").result().stop == "done"
        assert journal_module._RENEWER._thread is thread and opened == [url]
        for name in os.listdir(str(tmp_path)):
            os.remove(str(tmp_path / name))
        assert client.run([USER], tools=TOOLS, journal=url, run_id="r-3").result().stop == "done"
    assert opened == [url, url]  # the file was removed: opened anew, the run journaled in the new file
    assert [r["run_id"] for r in real(url).journal_runs()] == ["r-3"]
    store = journal_module._open(url)
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its own store, never its parent's connection
        try:
            os.write(writer, b"own" if journal_module._open(url) is not store and len(opened) == 3 else b"shared")
        finally:
            os._exit(0)
    os.close(writer)
    try:
        assert os.read(reader, 10) == b"own"
    finally:
        os.close(reader)
        os.waitpid(pid, 0)


def test_a_run_keeps_its_lease_past_its_length_and_the_lease_thread_ends_after_the_last_run(monkeypatch):
    import time

    import agenthub.agent.journal as journal_module
    from agenthub.agent.journal import Journal

    monkeypatch.setattr(journal_module, "JOURNAL_LEASE", 0.3)  # (the thread lingers a third of it)
    store = MemoryStore()
    journal = Journal(store, "long-1", lease=0.3)
    journal.open("print")
    try:
        time.sleep(0.8)  # more than twice its lease: renewed every 0.1 s
        assert store.journal_claim("long-1", "another", 0.3) is not None
    finally:
        journal.close()
    assert store.journal_claim("long-1", "another", 0.3) is None  # let go at close
    deadline = time.monotonic() + 10
    while journal_module._RENEWER._thread is not None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert journal_module._RENEWER._thread is None


#: the entries' encoder of the journals written before (a journal's text stays what it was)
_WRITTEN_BEFORE = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode


def test_a_journaled_turn_is_priced_once_and_its_entries_are_the_text_they_were(monkeypatch):
    """The turn's cost the journal keeps is the one the run counts (reckoned once a turn, not again by
    cost_usd); the entries are the same JSON text as before (compact, non-ASCII kept), so journals written
    before replay as they did; a call's digest is the canonical JSON's."""
    import decimal
    import hashlib

    import agenthub.agent.runner as runner
    from agenthub.agent import journal as seam

    priced = []
    real = runner.call_cost

    def counting(*args, **kwargs):
        priced.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(runner, "call_cost", counting)
    store = MemoryStore()
    script = [chat_calls([("c1", "look_up", '{"city": "Zürich \\u2028 \\"q\\""}'), ("c2", "pay", '{"amount": 30}')]),
              chat_text("Booked in Zürich.")]
    with SSEServer() as server:
        server.answers += [Answer([answer]) for answer in script]
        plain_run = client_for(server).run([USER], tools=TOOLS).result()
        ran.clear()
        server.answers += [Answer([answer]) for answer in script]
        del priced[:]
        result = client_for(server).run([USER], tools=TOOLS, journal=store, run_id="trip-p").result()
    assert priced == ["gpt-4o-mini", "gpt-4o-mini"]  # (one a turn: cost_usd took the journal's)
    assert result.cost_usd == plain_run.cost_usd and result.cost_usd is not None
    texts = store.journal_entries("trip-p")
    entries = [json.loads(text) for text in texts]
    assert [e["k"] for e in entries] == ["header", "turn", "call", "result", "result", "turn", "done"]
    assert [text == _WRITTEN_BEFORE(entry) for text, entry in zip(texts, entries)] == [True] * 7
    assert "Zürich" in texts[1] and sum(e.get("cost") or 0 for e in entries) == result.cost_usd
    canonical = json.dumps({"amount": 30}, sort_keys=True, separators=(",", ":"), ensure_ascii=True, default=repr)
    assert entries[2]["digest"] == hashlib.sha256(canonical.encode()).hexdigest()[:32]
    again = client_for(server).run([USER], tools=TOOLS, journal=store, run_id="trip-p").result()
    assert (again.replayed_turns, plain(again.messages), again.cost_usd) == (2, plain(result.messages),
                                                                              result.cost_usd)
    for value in ({"b": [1, 2.5, None, True], "a": {"é": "\u2028", "z": float("inf")}}, {"x": decimal.Decimal("1.5")},
                  [1, "two"], "three", {}):
        text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True, default=repr)
        assert seam.arguments_digest(value) == hashlib.sha256(text.encode()).hexdigest()[:32]
    cyclic = {}
    cyclic["self"] = cyclic
    with pytest.raises(ValueError, match="Circular reference"):
        seam._ENCODE(cyclic)
    with pytest.raises(ValueError, match="Out of range float"):
        seam._ENCODE({"x": float("nan")})
    with pytest.raises(TypeError, match="not JSON serializable"):
        seam._ENCODE({"x": object()})
    assert seam._ENCODE({"x": cyclic["self"] is cyclic}) == '{"x":true}'  # (usable after the errors)


def test_a_call_entry_and_a_route_kept_from_the_last_turn_are_the_text_they_were():
    """The ``call`` entry written around its fields, and a turn's route taken from the last turn's when it is the
    same (same keys, same order, same text values): the text the whole entry encoded gives, whatever the values."""
    from agenthub.agent import journal as seam

    for turn, call_id, name in [(1, "c1", "pay"), (2, "c\u2028\"x", "é"), (3, "c", None), (True, "c", "n"), (4, 5, "n")]:
        digest = seam.arguments_digest({"n": turn})
        assert seam._call_text(turn, call_id, name, digest) == _WRITTEN_BEFORE(
            {"turn": turn, "id": call_id, "name": name, "digest": digest, "k": "call"})
    journal = seam.RunJournal.__new__(seam.RunJournal)  # (its route memory alone)
    journal._route = ((), "{}")
    same = {"model": "m", "client_type": "openai-chat", "host": "127.0.0.1:1"}
    for route in [None, {}, same, dict(same), {"client_type": "openai-chat", "model": "m", "host": "127.0.0.1:1"},
                  dict(same, host=None), dict(same, host=None), {"model": 1}, {"model": True}, {"model": 1.0}, same]:
        for cost in (0.5, None, "x"):
            assert seam._turn_text(1, {"role": "assistant"}, cost, journal._route_text(route)) == _WRITTEN_BEFORE(
                {"turn": 1, "message": {"role": "assistant"}, "cost": cost, "route": dict(route or {}), "k": "turn"})


def test_a_result_entry_is_the_text_it_was_whatever_its_item():
    """The ``result`` entry written around a text result's values (``{"type": "tool_result", "tool_call_id",
    "text"}`` of strings, in that order) and around any other item: the text the whole entry encoded gives."""

    class Text(str):
        pass

    items = [{"type": "tool_result", "tool_call_id": "c1", "text": "done"},
             {"type": "tool_result", "tool_call_id": "other", "text": "é \u2028 \"quoted\" \\ \n\t\x00"},
             {"type": "tool_result", "tool_call_id": "c1", "text": Text("sub")},
             {"type": Text("tool_result"), "tool_call_id": "c1", "text": "t"},
             {"type": "tool_result", "tool_call_id": 7, "text": "t"},
             {"type": "tool_result", "tool_call_id": "c1", "text": None},
             {"type": "tool_result", "tool_call_id": "c1", "text": "t", "is_error": True},
             {"tool_call_id": "c1", "type": "tool_result", "text": "t"},
             {"type": "tool_call", "tool_call_id": "c1", "text": "t"},
             {"type": "tool_result", "tool_call_id": "c1"},
             {"type": "tool_result", "tool_call_id": "c1", "content": [{"type": "text", "text": "t"}]}]
    for item in items:
        for turn, call_id, seconds in [(1, "c1", 0.25), (2, "c\u2028\"x", 8.2e-05), (3, "c1", None), (True, "c1", 1.0),
                                       (4, 5, 0.5), (5, "c1", float("inf"))]:
            _same_result_text(turn, call_id, item, seconds)


def _same_result_text(turn, call_id, item, seconds):
    """The text result's template gives the whole entry's encoding (or the encoder's ValueError)."""
    from agenthub.agent import journal as seam

    entry = {"turn": turn, "id": call_id, "item": item, "seconds": seconds, "k": "result"}
    try:
        expected = _WRITTEN_BEFORE(entry)
    except ValueError:
        with pytest.raises(ValueError):
            seam._result_text(turn, call_id, item, seconds)
        return
    assert seam._result_text(turn, call_id, item, seconds) == expected, entry


def test_a_result_entry_is_the_text_it_was_for_odd_texts_ids_numbers_and_keys():
    """The text result's template against the whole entry encoded, on what the first test does not try: lone
    surrogates and control characters in the text and the ids, an id equal to the call's or not, extra or other
    keys (``is_error`` after ``text``, a key of a str subclass, a dict subclass), and seconds that are -0.0, tiny,
    huge, negative, an int, NaN or infinite (the encoder's ValueError, as before), turns of int subclasses."""

    class Text(str):
        pass

    class Item(dict):
        pass

    class Turn(int):
        pass

    texts = ["", "\ud800", "a\udfffb", "\x00\x01\x1f\x7f\x80\x9f", "\u2028\u2029\ufeff", "\U0001F600", "\\\"/"]
    ids = ["c1", "", "\udc80", "c\x00\n"]
    items = []
    for text in texts:
        for result_id in ids:
            items += [{"type": "tool_result", "tool_call_id": result_id, "text": text},
                      {"type": "tool_result", "tool_call_id": result_id, "text": text, "is_error": True},
                      Item(type="tool_result", tool_call_id=result_id, text=text),
                      {Text("type"): "tool_result", "tool_call_id": result_id, "text": text}]
    numbers = [-0.0, 5e-324, 1e308, -1.5, 1e16, 3, float("nan"), float("-inf")]
    for item in items:
        for call_id in ids:
            for turn, seconds in [(1, numbers[len(call_id) % 8]), (Turn(2), 0.5), (0, numbers[len(item) % 8]),
                                  (3, numbers[(len(item["text"]) + len(call_id)) % 8])]:
                _same_result_text(turn, call_id, item, seconds)


@tool
def echo_raw(city: str) -> str:
    """Echo a city with what its bytes decoded to (a lone surrogate where they were not UTF-8)."""
    ran.append(("echo_raw", city))
    return city + (" \udcff" if city == "Rome" else " \ud83d\ude00")


def test_a_tool_result_with_a_lone_surrogate_goes_on_as_u_fffd_and_replays_the_same(store_url):
    """A tool's text holding a lone surrogate (bytes decoded with surrogateescape) is U+FFFD in its result, as it
    is without a journal (and as an MCP server's): a run journaled on SQLite or Redis stores that result, sends
    the next request and is done; the resumed run replays it, sending nothing.  The two halves of one character
    side by side are that character."""
    script = [chat_calls([("c1", "echo_raw", '{"city": "Rome"}')]), chat_text("Done.")]
    outcomes = []
    for journal in (None, MemoryStore(), store_url, store_url):
        with SSEServer() as server:
            server.answers += [Answer([answer]) for answer in script]
            kwargs = {} if journal is None else {"journal": journal, "run_id": "raw-1"}
            result = client_for(server).run([USER], tools=[echo_raw], **kwargs).result()
            sent = [m for m in server.requests[1]["body"]["messages"] if m["role"] == "tool"] \
                if server.requests else None
            outcomes.append((result.stop, plain(result.messages)[1], sent, len(server.requests)))
    rome = {"role": "user", "content_items": [{"type": "tool_result", "tool_call_id": "c1", "text": "Rome \ufffd"}]}
    live = ("done", rome, [{"role": "tool", "tool_call_id": "c1", "content": "Rome \ufffd"}], 2)
    assert outcomes == [live] * 3 + [("done", rome, None, 0)]  # (resumed: the result replayed, nothing sent)
    assert ran == [("echo_raw", "Rome")] * 3
    with SSEServer() as server:
        server.answers += [Answer([chat_calls([("c1", "echo_raw", '{"city": "Oslo"}')])]), Answer([chat_text("Ok.")])]
        result = client_for(server).run([USER], tools=[echo_raw], journal=store_url, run_id="raw-2").result()
    assert result.messages[1]["content_items"][0]["text"] == "Oslo \U0001F600"


def test_a_stopped_worker_that_finds_its_run_taken_over_and_ended_lets_go_of_the_lease_it_took_again():
    """A worker that stood still past its lease renews it when it goes on: the claim takes the lease again (the
    worker that took the run over ended it and let it go), and the entries written since say the run is no longer
    this worker's (``_lost``).  That lease was kept: every resume of the ended run was refused for a lease
    (``RunLockedError``, 30 s by default; CI saw it on Redis in test_journal_lease).  It is let go at once."""
    from agenthub.agent import RunLockedError
    from agenthub.agent.journal import _RENEWER, Journal

    store = MemoryStore()
    stood = Journal(store, "stood-1", lease=60)
    stood.open("print")
    stood.write("request", turn=0)
    _RENEWER.discard(stood)  # (its process stands still: nothing renews its lease)
    store.journal_release("stood-1", stood.owner)  # (its lease lapsed)
    taker = Journal(store, "stood-1", lease=60)
    assert [entry["k"] for entry in taker.open("print")] == ["request"]
    taker.write("request", turn=1)
    taker.close()  # (ended: let go)
    stood._held = 0.0  # (its last renewal long ago: a lapse is possible)
    stood.renew()
    assert "another worker took the run over" in str(stood._lost)
    again = Journal(store, "stood-1", wait=0)
    try:
        assert [entry["k"] for entry in again.open("print")] == ["request", "request"]  # (before: RunLockedError)
    except RunLockedError as exc:  # pragma: no cover - the bug
        raise AssertionError("the ended run is held by the stopped worker: {}".format(exc))
    finally:
        again.close()
        stood.close()
