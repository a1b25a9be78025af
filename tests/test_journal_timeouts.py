"""A timed-out call of a tool that must not run twice (docs/tools.md "Parallel tools" and "At least once, at most
once"): Python cannot stop its thread, so its side effect may still happen after the model heard of the timeout.

- the model is told so (the timeout result says the call may still complete and is not safe to repeat);
- a call repeating it in the run (the same tool, the same arguments) does not run while it still runs; once it
  has returned, the first such call is answered with its late outcome instead of running (the next one runs);
  a call with other arguments runs as ever;
- journaled, its result is stored as unsettled: when the process running it is killed, the resumed run cannot
  learn how it ended, and a call repeating it is not run (its outcome is unknown).
The timing is the tool's own timeout, and events: no timed assertion."""

import os
import textwrap
import threading
import time

import pytest
from agent_streams import chat_calls, chat_text
from sse_server import Answer, SSEServer
from store_support import killed_after

from agenthub import AutoLLMClient, tool

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
KEY = "sk-test-journal-timeout-01"
USER = {"role": "user", "content_items": [{"type": "text", "text": "Pay the invoice."}]}
TIMED_OUT = ("TimeoutError: pay did not return within 0.5 s; pay is not safe to repeat (idempotent=False) and may "
             "still complete: do not call it again before checking whether it took effect")

ran = []
release = threading.Event()


@tool(idempotent=False, timeout=0.5)
def pay(amount: int) -> str:
    """Pay."""
    ran.append(amount)
    release.wait(30)  # (the first call: held past its timeout until the test lets it go)
    return "paid {}".format(amount)


@pytest.fixture(autouse=True)
def clean():
    ran.clear()
    release.clear()
    yield
    release.set()


def client_for(server):
    return AutoLLMClient("gpt-4o-mini", api_key=KEY, base_url=server.url + "/v1", client_type="openai-chat",
                         max_retries=0)


def tool_messages(server):
    return [[m for m in request["body"]["messages"] if m["role"] == "tool"][-1:] for request in server.requests[1:]]


#: a repeat's arguments: as the first call's, or with the amount as a whole float (the same int reaches pay)
AGAIN = ['{"amount": 30}', '{"amount": 30.0}']


@pytest.mark.parametrize("again", AGAIN)
def test_a_repeat_of_a_timed_out_side_effect_does_not_run_while_it_may_still_complete(again):
    runs = []

    class LetGo(object):
        def after_call(self, call, item, seconds):
            if call["tool_call_id"] == "c2":  # refused while pay(30) still runs: now it returns
                release.set()
                deadline = time.monotonic() + 30
                while any(t.running for t in runs[0]._abandoned) and time.monotonic() < deadline:
                    time.sleep(0.001)  # (until its thread has reported how it ended)

    with SSEServer() as server:
        server.answers += [Answer([chat_calls([("c1", "pay", '{"amount": 30}')])]),
                           Answer([chat_calls([("c2", "pay", again), ("c2b", "pay", '{"amount": 31}')])]),
                           Answer([chat_calls([("c3", "pay", again)])]),
                           Answer([chat_calls([("c4", "pay", again)])]),
                           Answer([chat_text("Paid twice.")])]
        run = client_for(server).run([USER], tools=[pay], hooks=[LetGo()])
        runs.append(run)
        result = run.result()
    assert result.stop == "done" and ran == [30, 31, 30]  # pay(30) ran twice: c1 and, told how c1 ended, c4
    assert [m[0]["content"] for m in tool_messages(server)[:1]] == [TIMED_OUT]
    assert [m for m in server.requests[2]["body"]["messages"] if m["role"] == "tool"][1:] == [
        {"role": "tool", "tool_call_id": "c2", "content": "not run: call c1 of pay with the same arguments timed out "
                                                          "and still runs; it may still complete (pay is not safe to "
                                                          "repeat)"},
        {"role": "tool", "tool_call_id": "c2b", "content": "paid 31"}]
    assert tool_messages(server)[2:] == [
        [{"role": "tool", "tool_call_id": "c3", "content": "not run: call c1 of pay with the same arguments timed out, "
                                                           "then returned: paid 30"}],
        [{"role": "tool", "tool_call_id": "c4", "content": "paid 30"}]]
    assert [(c["tool_call_id"], c["is_error"]) for c in result.calls] == [
        ("c1", True), ("c2", True), ("c2b", False), ("c3", True), ("c4", False)]


#: the child: pay(30) times out and runs on; the child is killed once its timeout result is journaled
CHILD = textwrap.dedent("""
    import os, sys, time
    sys.path.insert(0, sys.argv[1])
    import agenthub.stores.journal as rows
    rows.JOURNAL_LEASE = 1.0  # a killed owner's lease lapses in a second here
    from agenthub import AutoLLMClient, tool

    @tool(idempotent=False, timeout=0.5)
    def pay(amount: int) -> str:
        \"\"\"Pay.\"\"\"
        print("pay", amount, flush=True)
        time.sleep(60)
        return "paid {}".format(amount)

    class Told(object):
        def after_call(self, call, item, seconds):  # (after its result is journaled)
            print("after", call["tool_call_id"], flush=True)
            time.sleep(60)

    client = AutoLLMClient("gpt-4o-mini", api_key=os.environ["KEY"], base_url=os.environ["URL"] + "/v1",
                           client_type="openai-chat", max_retries=0)
    user = {"role": "user", "content_items": [{"type": "text", "text": "Pay the invoice."}]}
    client.run([user], tools=[pay], hooks=[Told()], journal=os.environ["JOURNAL"], run_id="pay-t").result()
""")


@pytest.mark.parametrize("first, again", [(AGAIN[0], AGAIN[0]), (AGAIN[0], AGAIN[1]), (AGAIN[1], AGAIN[0])])
def test_a_journaled_timed_out_side_effect_is_not_repeated_after_the_process_running_it_is_killed(store_url, first,
                                                                                                   again):
    journal = store_url
    with SSEServer() as server:
        server.answers += [Answer([chat_calls([("c1", "pay", first)])]),
                           Answer([chat_calls([("c2", "pay", again)])]),
                           Answer([chat_text("I could not tell whether it went through.")])]
        env = dict(os.environ, KEY=KEY, URL=server.url, JOURNAL=journal, PYTHONPATH=ROOT)
        assert killed_after(CHILD, [ROOT], env, 2) == ["pay 30\n", "after c1\n"]  # (its timeout result journaled)
        result = client_for(server).run([USER], tools=[pay], journal=journal, run_id="pay-t",
                                        journal_wait=10).result()
    assert (result.stop, result.replayed_turns, result.replayed_results, ran) == ("done", 1, 1, [])
    assert tool_messages(server) == [
        [{"role": "tool", "tool_call_id": "c1", "content": TIMED_OUT}],
        [{"role": "tool", "tool_call_id": "c2", "content": "not run: call c1 of pay with the same arguments timed out "
                                                           "and its outcome is unknown (the process running it "
                                                           "stopped); pay is not safe to repeat"}]]


def test_two_calls_of_one_turn_with_the_same_arguments_that_timed_out_hold_a_repeat_until_both_returned():
    """pay(30) twice in one turn (c1, c2), both timed out and running on: a repeat does not run while either runs
    (the later one's entry replaced the earlier's: once c2 returned, a repeat ran while c1 could still pay)."""
    from agenthub.agent import current_call

    gates = {"c1": threading.Event(), "c2": threading.Event()}
    runs = []
    paid = []

    @tool(idempotent=False, timeout=0.5)
    def pay_twice(amount: int) -> str:
        """Pay."""
        call = current_call()
        paid.append(call.tool_call_id)
        gates.get(call.tool_call_id, release).wait(30)
        return "paid {} ({})".format(amount, call.tool_call_id)

    def returned(call_id, left):
        gates[call_id].set()
        deadline = time.monotonic() + 30
        while sum(t.running for t in runs[0]._abandoned) > left and time.monotonic() < deadline:
            time.sleep(0.001)  # (until its thread has reported how it ended)

    class LetGo(object):
        def after_call(self, call, item, seconds):
            if call["tool_call_id"] in ("c3", "c4"):  # c2 returns after c3 is refused, c1 after c4
                returned(*{"c3": ("c2", 1), "c4": ("c1", 0)}[call["tool_call_id"]])

    with SSEServer() as server:
        server.answers += [Answer([chat_calls([("c1", "pay_twice", '{"amount": 30}'),
                                               ("c2", "pay_twice", '{"amount": 30}')])]),
                           Answer([chat_calls([("c3", "pay_twice", '{"amount": 30}')])]),
                           Answer([chat_calls([("c4", "pay_twice", '{"amount": 30}')])]),
                           Answer([chat_calls([("c5", "pay_twice", '{"amount": 30}')])]),
                           Answer([chat_text("Paid.")])]
        run = client_for(server).run([USER], tools=[pay_twice], hooks=[LetGo()])
        runs.append(run)
        result = run.result()
    head = "not run: call {} of pay_twice with the same arguments timed out"
    assert result.stop == "done" and sorted(paid) == ["c1", "c2"]  # the repeats never ran
    assert [m[0]["content"] for m in tool_messages(server)[1:]] == [
        head.format("c1") + " and still runs; it may still complete (pay_twice is not safe to repeat)",
        head.format("c1") + " and still runs; it may still complete (pay_twice is not safe to repeat)",
        head.format("c1") + ", then returned: paid 30 (c1); " + head.format("c2") + ", then returned: paid 30 (c2)"]


def test_two_journaled_timed_out_calls_with_the_same_arguments_are_both_named_after_a_kill(store_url):
    """pay(30) twice in one turn (c1, c1b), both timed out and journaled unsettled, then the process was killed:
    the journal's ``unsettled()`` kept one call id per (tool, arguments), so the resumed run named c1b alone
    (c1, whose payment may as well have gone through, was forgotten).  Both are named now."""
    journal = store_url
    two = CHILD.replace('print("after", call["tool_call_id"], flush=True)\n        time.sleep(60)',
                        'print("after", call["tool_call_id"], flush=True)\n'
                        '        if call["tool_call_id"] == "c1b":\n            time.sleep(60)')
    # (two threads print here: one write each, whole lines, never "pay 30pay" as print's pieces interleave on 3.8)
    two = two.replace('print("pay", amount, flush=True)', 'sys.stdout.write("pay %d\\n" % amount); sys.stdout.flush()')
    two = two.replace('print("after", call["tool_call_id"], flush=True)',
                      'sys.stdout.write("after %s\\n" % call["tool_call_id"]); sys.stdout.flush()')
    assert two.count("sys.stdout.write") == 2
    with SSEServer() as server:
        server.answers += [Answer([chat_calls([("c1", "pay", '{"amount": 30}'), ("c1b", "pay", '{"amount": 30}')])]),
                           Answer([chat_calls([("c2", "pay", '{"amount": 30}')])]),
                           Answer([chat_text("I could not tell whether they went through.")])]
        env = dict(os.environ, KEY=KEY, URL=server.url, JOURNAL=journal, PYTHONPATH=ROOT)
        printed = killed_after(two, [ROOT], env, 4)
        assert sorted(printed) == ["after c1\n", "after c1b\n", "pay 30\n", "pay 30\n"]
        result = client_for(server).run([USER], tools=[pay], journal=journal, run_id="pay-t",
                                        journal_wait=10).result()
    assert (result.stop, result.replayed_turns, result.replayed_results, ran) == ("done", 1, 2, [])
    assert tool_messages(server)[-1] == [
        {"role": "tool", "tool_call_id": "c2", "content": "not run: calls c1, c1b of pay with the same arguments "
                                                          "timed out and their outcome is unknown (the process "
                                                          "running them stopped); pay is not safe to repeat"}]
