"""One owner at a time across a stall (issue 39 item 4): a worker whose process stood still past its lease (a paused
VM, SIGSTOP, a store out of reach) while another worker took the run over and finished it sends no model request
when it goes on: its lease thread would take the released run again and the request went out, paid a second
time, before its next write was refused.  Real processes: the first worker is stopped with SIGSTOP by a
hook once the first turn's results are in, the second resumes and ends the run, then the first is let go on with SIGCONT."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
from agent_streams import chat_calls, chat_text
from sse_server import Answer, SSEServer

from agenthub import AutoLLMClient, tool
from agenthub.agent.journal import RunLockedError

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
KEY = "sk-test-journal-lease-0001"
USER = {"role": "user", "content_items": [{"type": "text", "text": "Look Rome up."}]}

#: the first worker: stops itself (SIGSTOP) once its first turn's results are in (a quick idempotent result: not
#: stored before the next request, which needs no store write then)
CHILD = textwrap.dedent("""
    import os, signal, sys
    sys.path.insert(0, sys.argv[1])
    import agenthub.stores.journal as rows
    rows.JOURNAL_LEASE = 1.0  # its lease lapses a second after it stops
    from agenthub import AutoLLMClient, tool

    @tool
    def look_up(city: str) -> str:
        \"\"\"Look a city up.\"\"\"
        return city + ": open"

    class Stall(object):  # the process stands still once the turn's results are in, before the next request
        def on_results(self, run, message):
            print("results", run.turns, flush=True)
            os.kill(os.getpid(), signal.SIGSTOP)

    client = AutoLLMClient("gpt-4o-mini", api_key=os.environ["KEY"], base_url=os.environ["URL"] + "/v1",
                           client_type="openai-chat", max_retries=0)
    user = {"role": "user", "content_items": [{"type": "text", "text": "Look Rome up."}]}
    try:
        result = client.run([user], tools=[look_up], journal=os.environ["JOURNAL"], run_id="look-1",
                            hooks=[Stall()]).result()
        print("stop", result.stop, flush=True)
    except Exception as exc:
        print("raised", type(exc).__name__, exc, flush=True)
""")

ran = []


@tool
def look_up(city: str) -> str:
    """Look a city up."""
    ran.append(city)
    return city + ": open"


def _stopped(pid):
    with open("/proc/{}/stat".format(pid)) as stat:
        return stat.read().rsplit(")", 1)[1].split()[0] == "T"


def test_a_worker_that_stood_still_past_its_lease_sends_nothing_for_a_run_another_worker_ended(store_url):
    ran.clear()
    with SSEServer() as server:
        server.answers += [Answer([chat_calls([("c1", "look_up", '{"city": "Rome"}')])]),
                           Answer([chat_text("Rome is open.")]), Answer([chat_text("Paid twice.")])]
        env = dict(os.environ, KEY=KEY, URL=server.url, JOURNAL=store_url, PYTHONPATH=ROOT)
        child = subprocess.Popen([sys.executable, "-c", CHILD, ROOT], stdout=subprocess.PIPE, env=env)
        try:
            assert child.stdout.readline().decode().split() == ["results", "1"]
            deadline = time.monotonic() + 10
            while not _stopped(child.pid):
                assert time.monotonic() < deadline
                time.sleep(0.01)
            # the second worker: waits for the stopped one's lease to lapse, takes the run over, ends it
            client = AutoLLMClient("gpt-4o-mini", api_key=KEY, base_url=server.url + "/v1",
                                   client_type="openai-chat", max_retries=0)
            result = client.run([USER], tools=[look_up], journal=store_url, run_id="look-1",
                                journal_wait=10).result()
            assert (result.stop, result.replayed_turns, ran, len(server.requests)) == ("done", 1, ["Rome"], 2)  # (look_up again: its result waited)
            child.send_signal(signal.SIGCONT)  # the first worker goes on where it stood
            out = child.stdout.read().decode().split()
            assert child.wait(30) == 0
        finally:
            if child.poll() is None:
                child.kill()
                child.wait(10)
            child.stdout.close()
        assert len(server.requests) == 2  # the first worker sent nothing more: the turn is not paid twice
        assert out[:2] == ["raised", "StoreError"] and "another worker" in " ".join(out)
        # the run is the second worker's, ended: given again at once, nothing sent
        again = client.run([USER], tools=[look_up], journal=store_url, run_id="look-1").result()
        assert (again.stop, again.turns, again.replayed_turns, len(server.requests)) == ("done", 2, 2, 2)


#: a worker whose lease thread renews as its run ends (its claim taking the lease the run's end let go, 0.5 s before
#: the renewal sees the run closed and lets it go again), and that exits at once
EXITING = textwrap.dedent("""
    import os, sys, threading, time
    sys.path.insert(0, sys.argv[1])
    import agenthub.stores.journal as rows
    rows.JOURNAL_LEASE = 30.0
    from agenthub import AutoLLMClient
    from agenthub.agent import journal as journal_module

    claims, ended, claimed = threading.Event(), threading.Event(), threading.Event()
    real = journal_module.Journal.renew

    def renew(self, strict=False):  # (the lease thread's renewal: its claim once the run ended, then slow)
        store = self.store
        claim = store.journal_claim

        def slow(*args, **kwargs):
            claims.set()
            ended.wait(10)
            left = claim(*args, **kwargs)  # (takes the lease the run's end let go)
            claimed.set()
            time.sleep(0.5)
            return left

        store.journal_claim = slow
        try:
            return real(self, strict)
        finally:
            store.journal_claim = claim

    journal_module.Journal.renew = renew
    if os.environ.get("WITHOUT_EXIT_WAIT"):  # (as before: the exit does not wait for the renewal)
        import atexit
        atexit.unregister(journal_module._RENEWER.stop_at_exit)

    client = AutoLLMClient("gpt-4o-mini", api_key=os.environ["KEY"], base_url=os.environ["URL"] + "/v1",
                           client_type="openai-chat", max_retries=0)
    user = {"role": "user", "content_items": [{"type": "text", "text": "Say hi."}]}
    stream = client.run([user], tools=[], journal=os.environ["JOURNAL"], run_id="exit-1")
    for event in stream:
        journal_module._RENEWER._journals[stream._journal.journal] = 0.0  # (due now)
        with journal_module._RENEWER._cond:
            journal_module._RENEWER._cond.notify_all()
        assert claims.wait(10)
        break
    for event in stream:
        pass
    print("stop", stream.result().stop, flush=True)
    ended.set()
    assert claimed.wait(10)  # (and the process exits at once, the renewal under way)
""")


@pytest.mark.parametrize("wait", [True, False], ids=["exit-waits", "without-the-wait"])
def test_a_worker_exiting_during_a_renewal_leaves_its_ended_run_free(store_url, wait):
    """The lease thread is a daemon: a process that exited in the middle of its renewal (the claim made, the release
    the renewal makes for a run closed meanwhile not yet) left the ended run's lease held for a whole lease (30 s
    by default): every resume of the run refused as owned by a live worker.  Now the exit waits for the renewal under
    way (``_Renewer.stop_at_exit``): the run is free at once."""
    with SSEServer() as server:
        server.answers += [Answer([chat_text("Hi.")])]
        env = dict(os.environ, KEY=KEY, URL=server.url, JOURNAL=store_url, PYTHONPATH=ROOT)
        if not wait:
            env["WITHOUT_EXIT_WAIT"] = "1"
        done = subprocess.run([sys.executable, "-c", EXITING, ROOT], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              env=env, timeout=60)
        assert (done.returncode, done.stdout.decode().split()) == (0, ["stop", "done"])
        assert b"Traceback" not in done.stderr, done.stderr.decode()
        client = AutoLLMClient("gpt-4o-mini", api_key=KEY, base_url=server.url + "/v1", client_type="openai-chat",
                               max_retries=0)
        user = {"role": "user", "content_items": [{"type": "text", "text": "Say hi."}]}
        if not wait:  # (the test can fail: without the wait, the ended run stays held by the exited worker)
            with pytest.raises(RunLockedError) as caught:
                client.run([user], tools=[], journal=store_url, run_id="exit-1")
            assert caught.value.retry_after > 20
            return
        again = client.run([user], tools=[], journal=store_url, run_id="exit-1").result()  # (no journal_wait: free now)
        assert (again.stop, again.replayed_turns, len(server.requests)) == ("done", 1, 1)
