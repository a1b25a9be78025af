"""The batch engine after a kill -9 at its worst moments, two processes on one job, and answers no output line
could hold.  The kill -9s: a real child process SIGKILLed right after a
remote batch was created (paid for) and before its id reached the state file.  Submitting again finds
that batch (OpenAI and Azure: by the input file saved before the create call; Gemini: by the display name
made for it; Anthropic: the one batch of that size created while the call was in flight, proved its own at
fetch by the tag of the call in its custom ids) instead of creating, and paying for, a second one."""

import json
import os
import subprocess
import sys

import pytest

from agenthub.errors import ConfigError
from agenthub.jobs import batch as B
from batch_fakes import BatchFake, point_all_at
from batch_fakes import user as _user
from batch_fakes import write_rows as _write

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture
def fake(monkeypatch):
    with BatchFake(polls=1) as server:
        point_all_at(monkeypatch, server)
        yield server


#: a child that submits and is SIGKILLed the moment its engine's create call returned (the batch exists
#: upstream; its id was not saved yet)
_CHILD = """
import os, signal, sys
from agenthub.jobs import backends, batch
engine = backends.backend(sys.argv[2])
create = type(engine).create
def killed(self, *args, **kwargs):
    create(self, *args, **kwargs)
    os.kill(os.getpid(), signal.SIGKILL)
type(engine).create = killed
batch.submit(sys.argv[1], backend="auto")
"""

MODELS = {"openai": {"model": "gpt-5.4-mini"}, "azure": {"model": "my-deployment", "client_type": "azure"},
          "anthropic": {"model": "claude-sonnet-4-6"}, "gemini": {"model": "gemini-2.5-flash"}}


#: the same child SIGKILLed the moment its OpenAI upload's file id was saved (no batch made on it yet)
_CHILD_UPLOADED = _CHILD.replace("""def killed(self, *args, **kwargs):
    create(self, *args, **kwargs)
    os.kill(os.getpid(), signal.SIGKILL)""", """def killed(self, wire, model, api, entries, name, request, note):
    def noted(fields):
        note(fields)
        os.kill(os.getpid(), signal.SIGKILL)
    create(self, wire, model, api, entries, name, request, noted)""")


def _state(src):
    with open(src + ".batch.json") as handle:
        return json.load(handle)


def _kill_after_create(tmp_path, name, child=_CHILD, stem="in"):
    rows = [dict(MODELS[name], id="k{}".format(i), messages=_user("crash {}".format(i))) for i in range(3)]
    src = _write(tmp_path / (stem + ".jsonl"), rows)
    env = dict(os.environ, PYTHONPATH=ROOT)
    done = subprocess.run([sys.executable, "-c", child, src, name], cwd=ROOT, env=env, timeout=60,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert done.returncode == -9, done.stderr.decode()
    return src


@pytest.mark.parametrize("name", ["openai", "azure", "anthropic", "gemini"])
def test_kill_9_after_the_batch_was_created_then_submit_again_creates_no_second_batch(tmp_path, fake, name):
    src = _kill_after_create(tmp_path, name)
    assert len(fake.batches) == 1  # created upstream, then the process died
    (created,) = fake.batches.values()
    assert _state(src)["batches"][0]["remote"] is None  # its id never reached the state file
    job = B.submit(src, backend="auto")
    assert len(fake.batches) == 1  # found, not created (and paid for) again
    remote = job._state["batches"][0]["remote"]
    assert (remote.get("batch_id") or remote.get("batch_name")) == created.id
    assert "creating" not in job._state["batches"][0]
    job.wait(interval=0)
    summary = job.fetch(str(tmp_path / "out.jsonl"))
    assert (summary.done, summary.failed, summary.missing) == (3, 0, [])


@pytest.mark.parametrize("name", ["openai", "azure"])
def test_kill_9_after_the_upload_then_submit_again_creates_the_batch_once(tmp_path, fake, name):
    src = _kill_after_create(tmp_path, name, _CHILD_UPLOADED)
    assert fake.batches == {} and len(fake.files) == 1  # uploaded, no batch made on it
    marker = _state(src)["batches"][0]["creating"]
    assert marker["input_file_id"] == next(iter(fake.files)) and marker["requests"] == 3
    job = B.submit(src, backend="auto")
    assert len(fake.batches) == 1 and "creating" not in job._state["batches"][0]
    job.wait(interval=0)
    assert job.fetch(str(tmp_path / "out.jsonl")).done == 3


def test_anthropic_several_batches_of_that_size_created_meanwhile_is_refused_not_paid_twice(tmp_path, fake):
    src = _kill_after_create(tmp_path, "anthropic")
    other = _write(tmp_path / "other.jsonl", [dict(MODELS["anthropic"], id="o{}".format(i), messages=_user("o"))
                                              for i in range(3)])
    B.submit(other, backend="auto")  # another job's batch of 3 requests, created after the cut-short call
    assert len(fake.batches) == 2
    with pytest.raises(ConfigError) as caught:
        B.submit(src, backend="auto")
    assert str(caught.value) == (
        "anthropic: this job's create call was cut short, and 2 batches of 3 requests were created meanwhile ({}): "
        "agenthub cannot tell which, if any, is this job's (nothing was sent again; cancel the ones that are, then "
        "submit with another state_path)".format(", ".join(sorted(fake.batches, reverse=True))))
    assert len(fake.batches) == 2 and "creating" in _state(src)["batches"][0]  # the marker kept for a later try


def test_anthropic_a_batch_of_another_size_is_not_taken_for_the_cut_short_one(tmp_path, fake):
    other = _write(tmp_path / "other.jsonl", [dict(MODELS["anthropic"], id="o{}".format(i), messages=_user("o"))
                                              for i in range(2)])
    B.submit(other, backend="auto")
    src = _kill_after_create(tmp_path, "anthropic")
    mine = [b.id for b in fake.batches.values() if len(b.requests) == 3]
    job = B.submit(src, backend="auto")
    assert len(fake.batches) == 2 and job._state["batches"][0]["remote"] == {"batch_id": mine[0]}


#: a child SIGKILLed as its engine's create call begins (nothing created: the record keeps its marker only)
_CHILD_BEFORE = _CHILD.replace("""def killed(self, *args, **kwargs):
    create(self, *args, **kwargs)""", """def killed(self, *args, **kwargs):""")


def _answers(path):
    """{row id: the answer's text} of an output file, and how many lines it has."""
    from agenthub.jobs.jobfile import read_output

    rows = read_output(path) if os.path.exists(path) else []
    return {row["id"]: row["message"]["content_items"][0]["text"] for row in rows}, len(rows)


def _same_ids(tmp_path, stem, text):
    """Another job file of three Anthropic rows with the ids of ``_kill_after_create``'s (k0, k1, k2): the
    other half of a file split in two."""
    return _write(tmp_path / (stem + ".jsonl"), [dict(MODELS["anthropic"], id="k{}".format(i),
                                                      messages=_user("{} {}".format(text, i))) for i in range(3)])


def test_anthropic_another_jobs_batch_taken_for_a_cut_short_call_is_never_applied_and_the_rows_go_again(tmp_path,
                                                                                                         fake):
    src = _kill_after_create(tmp_path, "anthropic", _CHILD_BEFORE)  # the call never reached the engine
    assert fake.batches == {} and "creating" in _state(src)["batches"][0]
    theirs = B.submit(_same_ids(tmp_path, "other", "other"), backend="auto")  # same ids, same size, same key, now
    (their_id,) = fake.batches
    job = B.submit(src, backend="auto")  # the one batch of 3 created meanwhile: taken (nothing tells them apart yet)
    assert len(fake.batches) == 1 and job._state["batches"][0]["remote"] == {"batch_id": their_id}
    job.wait(interval=0)
    out = str(tmp_path / "out.jsonl")
    with pytest.raises(ConfigError) as caught:
        job.fetch(out)
    assert str(caught.value) == (
        "anthropic batch {}, found for a create call of this job that was cut short, is another job's: none of its 3 "
        "result(s) carries the tag of that call, and none was applied; its 3 row(s) are left to send: submit the "
        "input again with the same state file".format(their_id))
    assert _answers(out) == ({}, 0)  # (their answers under ids k0..k2 were not written as this job's)
    state = _state(src)
    assert state["not_ours"] == [their_id] and state["batches"][0]["remote"] is None
    assert "tag" not in state["batches"][0] and "recovered" not in state["batches"][0]
    assert B.load(src + ".batch.json").status().state == "submitting"
    job = B.submit(src, backend="auto")  # sent now, under a tag of its own; their batch never taken again
    assert len(fake.batches) == 2 and job._state["batches"][0]["remote"]["batch_id"] != their_id
    job.wait(interval=0)
    summary = job.fetch(out)
    assert (summary.done, summary.failed, summary.missing, summary.unknown) == (3, 0, [], 0)
    assert _answers(out) == ({"k0": "echo: crash 0", "k1": "echo: crash 1", "k2": "echo: crash 2"}, 3)
    theirs_out = str(tmp_path / "theirs.jsonl")
    assert theirs.fetch(theirs_out).done == 3  # (the other job still gets its own)
    assert _answers(theirs_out) == ({"k0": "echo: other 0", "k1": "echo: other 1", "k2": "echo: other 2"}, 3)


def _ended(fake):
    """Every batch of the fake run to its end (as if they were polled)."""
    for batch in fake.batches.values():
        fake.process(batch)


def test_anthropic_batches_of_that_size_that_ended_are_told_apart_by_their_tags_on_resume(tmp_path, fake):
    src = _kill_after_create(tmp_path, "anthropic")  # this job's batch created upstream, its id lost
    (mine,) = fake.batches
    theirs = B.submit(_same_ids(tmp_path, "other", "other"), backend="auto")  # same ids, same size, meanwhile
    (their_id,) = set(fake.batches) - {mine}
    _ended(fake)  # (both ended: their results show whose each is)
    job = B.submit(src, backend="auto")  # not refused as two candidates: the one carrying its tag is taken
    assert len(fake.batches) == 2 and job._state["batches"][0]["remote"] == {"batch_id": mine}
    out = str(tmp_path / "out.jsonl")
    assert job.fetch(out).done == 3
    assert _answers(out) == ({"k0": "echo: crash 0", "k1": "echo: crash 1", "k2": "echo: crash 2"}, 3)
    assert theirs._state["batches"][0]["remote"] == {"batch_id": their_id}


def test_anthropic_another_jobs_batch_that_ended_is_passed_over_on_resume_and_the_rows_sent(tmp_path, fake):
    src = _kill_after_create(tmp_path, "anthropic", _CHILD_BEFORE)  # the call never reached the engine
    B.submit(_same_ids(tmp_path, "other", "other"), backend="auto")
    (their_id,) = fake.batches
    _ended(fake)
    job = B.submit(src, backend="auto")  # their results carry another tag: not taken; this job's batch created
    assert len(fake.batches) == 2 and job._state["batches"][0]["remote"]["batch_id"] != their_id
    job.wait(interval=0)
    out = str(tmp_path / "out.jsonl")
    assert job.fetch(out).done == 3
    assert _answers(out) == ({"k0": "echo: crash 0", "k1": "echo: crash 1", "k2": "echo: crash 2"}, 3)
    reads = [c["path"] for c in fake.calls("GET", "/v1/messages/batches/" + their_id + "/results")]
    assert len(reads) == 1  # (read once, on resume, to tell whose it is)


def test_anthropic_a_result_without_the_tag_of_its_batchs_create_call_is_never_applied(tmp_path, fake):
    src = _same_ids(tmp_path, "in", "mine")
    job = B.submit(src, backend="auto")
    tag = job._state["batches"][0]["tag"]
    (batch,) = fake.batches.values()
    assert [cid for cid, _, _ in batch.requests] == [tag + "-k0", tag + "-k1", tag + "-k2"]
    job.wait(interval=0)
    from batch_fakes import default_answer

    stray = default_answer("anthropic", "messages", {"messages": [{"role": "user", "content": "stray"}]})
    batch.results[:0] = [("k0", "ok", 200, stray[1]), ("0000beef-k1", "ok", 200, stray[1])]  # (ahead of ours)
    out = str(tmp_path / "out.jsonl")
    summary = job.fetch(out)
    assert (summary.done, summary.unknown, summary.duplicates, summary.missing) == (3, 2, 0, [])
    assert _answers(out) == ({"k0": "echo: mine 0", "k1": "echo: mine 1", "k2": "echo: mine 2"}, 3)


def test_anthropic_a_state_from_before_tags_is_still_fetched(tmp_path, fake):
    rows = [dict(MODELS["anthropic"], id=rid, messages=_user(rid)) for rid in ("a", "r 2")]
    src = _write(tmp_path / "in.jsonl", rows)
    job = B.submit(src, backend="auto")
    (batch,) = fake.batches.values()
    batch.requests = [(cid.split("-", 1)[1], body, api) for cid, body, api in batch.requests]  # as sent untagged
    with open(src + ".batch.json") as handle:
        state = json.load(handle)
    del state["batches"][0]["tag"]  # (what an agenthub before tags saved)
    assert state["batches"][0]["custom_ids"] == {"r 2": "row-2"}
    with open(src + ".batch.json", "w") as handle:
        json.dump(state, handle)
    old = B.load(src + ".batch.json")
    old.wait(interval=0)
    out = str(tmp_path / "out.jsonl")
    summary = old.fetch(out)
    assert (summary.done, summary.unknown, summary.missing) == (2, 0, [])
    assert _answers(out) == ({"a": "echo: a", "r 2": "echo: r 2"}, 2)


def test_a_status_from_an_older_copy_keeps_the_batches_another_process_created(tmp_path, fake):
    src = _kill_after_create(tmp_path, "gemini", _CHILD_BEFORE)
    assert fake.batches == {}
    older = B.load(src + ".batch.json")  # (say `agenthub batch status` in another terminal)
    job = B.submit(src, backend="auto")  # the submission resumed: its batch created now
    assert len(fake.batches) == 1
    status = older.status()
    assert _state(src)["batches"][0]["remote"] == job._state["batches"][0]["remote"]  # not saved over
    assert status.batches[0].remote_id == job._state["batches"][0]["remote"]["batch_name"]  # (the job as it is now)
    with pytest.raises(ConfigError, match="was submitted already"):
        B.submit(src, backend="auto")
    assert len(fake.batches) == 1


_HOLDER = """
import sys
from agenthub.jobs.jobfile import OutputLock
lock = OutputLock(sys.argv[1])
print("held", flush=True)
sys.stdin.readline()
lock.release()
"""


class _Holder(object):
    """A real process holding ``<path>.lock`` (what a running fetch, submit or live run holds)."""

    def __init__(self, path):
        self.child = subprocess.Popen([sys.executable, "-c", _HOLDER, path], cwd=ROOT, env=dict(os.environ, PYTHONPATH=ROOT),
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert self.child.stdout.readline() == b"held\n"

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.child.stdin.close()
        self.child.wait(10)
        self.child.stdout.close()


def test_a_second_process_on_the_same_job_is_refused_while_one_works_on_it(tmp_path, fake):
    src = _write(tmp_path / "in.jsonl", [dict(MODELS["openai"], id="a", messages=_user("one"))])
    out = str(tmp_path / "out.jsonl")
    state = src + ".batch.json"
    with _Holder(state):
        with pytest.raises(ConfigError) as caught:
            B.submit(src, backend="auto")
        assert str(caught.value) == "another process is working on the batch job {0} (it holds {0}.lock): wait for " \
                                    "it to end".format(state)
        assert fake.calls() == [] and not os.path.exists(state)
    with _Holder(out):  # a live run (jobs.run) answering rows of the same input into out
        with pytest.raises(ConfigError, match="another run is writing"):
            B.submit(src, backend="auto", output_path=out)
        assert fake.calls() == [] and not os.path.exists(state)
    job = B.submit(src, backend="auto", output_path=out)
    with _Holder(state):
        for call in (lambda: job.fetch(out), job.cancel, lambda: B.submit(src, backend="auto")):
            with pytest.raises(ConfigError, match="another process is working on the batch job"):
                call()
        assert job.status().rows == 1  # (asking is never refused)
        assert [c["method"] for c in fake.calls(path_prefix="/v1/batches")] == ["POST", "GET"]
    with _Holder(out):  # a live run (jobs.run) writing the output
        with pytest.raises(ConfigError) as caught:
            job.fetch(out)
        assert str(caught.value) == "another run is writing {0} (it holds {0}.lock): wait for it to end, or write " \
                                    "another output file".format(out)
    job.wait(interval=0)
    assert job.fetch(out).done == 1 and not os.path.exists(out + ".lock") and not os.path.exists(state + ".lock")


def test_wait_refuses_an_interval_or_timeout_no_clock_takes(tmp_path, fake):
    src = _write(tmp_path / "in.jsonl", [dict(MODELS["anthropic"], id="a", messages=_user("one"))])
    job = B.submit(src, backend="auto")
    calls = len(fake.calls())
    for interval, timeout in ((float("inf"), None), (-1, None), (float("nan"), None), ("60", None), (1, -1),
                              (1, float("nan"))):
        with pytest.raises(ConfigError, match="must be"):  # (inf was an OverflowError after the first poll)
            job.wait(interval, timeout)
    assert len(fake.calls()) == calls  # refused before asking


# -- answers no output line could hold --------------------------------------------------------------------------


def _hostile(provider, api, body):
    """The fake's answer, but the row whose text says so gets a server block holding a number JSON has not
    (the server writes ``Infinity``: a reader takes it, a writer cannot) or nested past Python's stack."""
    from batch_fakes import default_answer, last_user_text

    status, answer = default_answer(provider, api, body)
    text = last_user_text(provider, body)
    if "INF" in text:
        answer["content"].append({"type": "server_tool_use", "id": "srv_1", "name": "web_search",
                                  "input": {"query": "x", "max_uses": float("inf"), "score": float("nan")}})
    if "DEEP" in text:
        deep = []
        for _ in range(900):
            deep = [deep]
        answer["content"].append({"type": "mystery_block", "value": deep})
    return status, answer


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="3.12 and later count the JSON encoder's depth apart from Python's frames: an answer 900 deep is written like any other (no line fails to hold it), and a deeper one the fake server could not send on the older Pythons")
def test_an_answer_no_line_could_hold_fails_alone_and_the_rest_of_the_batch_is_fetched(tmp_path, fake):
    fake.answer = _hostile
    rows = [dict(MODELS["anthropic"], id=t, messages=_user(t)) for t in ("one", "INF two", "DEEP three", "four")]
    src = _write(tmp_path / "in.jsonl", rows)
    out = str(tmp_path / "out.jsonl")
    job = B.submit(src, backend="auto")
    job.wait(interval=0)
    summary = job.fetch(out)
    assert (summary.done, summary.failed, summary.missing) == (3, 1, [])
    with open(out) as handle:
        written = {row["id"]: row for row in map(json.loads, handle)}  # (strict JSON: no NaN, no Infinity)
    block = written["INF two"]["message"]["content_items"][-1]["fidelity"]["server_block"]
    assert block["input"] == {"query": "x", "max_uses": None, "score": None}  # JSON has no such number: null
    assert written["DEEP three"]["error"]["type"] == "RecursionError" and written["DEEP three"]["message"] is None
    assert [written[t]["message"]["content_items"][0]["text"] for t in ("one", "four")] == ["echo: one", "echo: four"]


def test_a_live_answer_holding_a_number_json_has_not_is_written_and_the_job_goes_on(tmp_path, fake):
    from agenthub.jobs import run

    fake.answer = _hostile
    src = _write(tmp_path / "in.jsonl", [dict(MODELS["anthropic"], id=t, messages=_user(t)) for t in ("INF a", "b")])
    out = str(tmp_path / "out.jsonl")
    summary = run(src, out, workers=1, progress=False, max_retries=0)
    assert (summary.done, summary.failed) == (2, 0)  # (the writer's ValueError stopped the whole job)
    with open(out) as handle:
        written = {row["id"]: row for row in map(json.loads, handle)}
    assert written["INF a"]["message"]["content_items"][-1]["fidelity"]["server_block"]["input"]["max_uses"] is None


def test_the_state_and_a_rewritten_output_are_renamed_into_place_with_their_folder_synced(tmp_path, fake, monkeypatch):
    from agenthub.jobs.jobfile import OutputWriter

    synced = []
    real = os.fsync

    def fsync(fd):
        synced.append(os.readlink("/proc/self/fd/{}".format(fd)))
        return real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    B._write_state(str(tmp_path / "s.batch.json"), {"agenthub_batch": 1})
    assert synced[-1] == str(tmp_path)  # after the file's own bytes: the folder, so the rename outlives a power cut
    out = _write(tmp_path / "out.jsonl", [{"id": "a", "error": {"type": "X", "message": "m", "status": None}}])
    del synced[:]
    OutputWriter(out, retry_failed=True).close()  # the error row removed: the file rewritten, renamed over it
    assert synced[-1] == str(tmp_path) and len(synced) == 2


def test_a_batch_that_cannot_be_fetched_keeps_no_other_batchs_results_from_the_output(tmp_path, fake):
    from agenthub.errors import UpstreamError

    rows = [dict(MODELS["anthropic"], id="gone", messages=_user("one")), dict(MODELS["openai"], id="kept",
                                                                              messages=_user("two"))]
    src = _write(tmp_path / "in.jsonl", rows)
    out = str(tmp_path / "out.jsonl")
    job = B.submit(src, backend="auto")
    job.wait(interval=0)
    gone = [b.id for b in fake.batches.values() if b.kind == "anthropic"]
    del fake.batches[gone[0]]  # (deleted, archived, another workspace's key: the engine answers 404)
    with pytest.raises(UpstreamError) as caught:
        job.fetch(out)
    assert caught.value.status == 404
    with open(out) as handle:
        assert [json.loads(line)["id"] for line in handle] == ["kept"]  # (the first batch's failure wrote nothing)
    assert _state(src)["batches"][1].get("fetched_at")  # its fetch saved


def test_a_batch_that_cannot_be_cancelled_keeps_no_other_from_cancelling(tmp_path, fake):
    from agenthub.errors import UpstreamError

    fake.polls = 100  # (nothing ends by itself)
    rows = [dict(MODELS["anthropic"], id="gone", messages=_user("one")), dict(MODELS["openai"], id="run",
                                                                              messages=_user("two"))]
    job = B.submit(_write(tmp_path / "in.jsonl", rows), backend="auto")
    del fake.batches[next(b.id for b in fake.batches.values() if b.kind == "anthropic")]
    with pytest.raises(UpstreamError) as caught:
        job.cancel()
    assert caught.value.status == 404
    (running,) = fake.batches.values()
    assert running.cancel_requested  # (the first batch's 404 left it running, and paying)


# -- waiting on batches that polling cannot see end ----------------------------------------------------------------

class _Slept(Exception):
    """time.sleep in wait(): it would poll again."""


def _no_sleep(monkeypatch):
    import time
    import types

    def sleep(seconds):
        raise _Slept(seconds)

    # (the batch module's own clock only: locks and servers keep the real sleep)
    monkeypatch.setattr(B, "time", types.SimpleNamespace(time=time.time, monotonic=time.monotonic, sleep=sleep))


def test_wait_and_fetch_wait_stop_at_once_on_rows_never_created_and_say_to_submit_again(tmp_path, fake, monkeypatch,
                                                                                          capsys):
    """A submission cut short (the create call never reached the engine): the job is "submitting" and no poll
    creates its batch.  wait() and `agenthub batch fetch --wait` stop at once with the ConfigError saying to
    submit again (not after their timeout, or never); while another process holds the job (a submit under
    way) wait() goes on polling."""
    from agenthub.__main__ import main

    src = _kill_after_create(tmp_path, "anthropic", _CHILD_BEFORE)
    state = src + ".batch.json"
    _no_sleep(monkeypatch)
    expected = (
        "the batch job {0} has 3 row(s) in 1 batch(es) never created (its submission was cut short, or a batch found "
        "for them was another job's) and no process is submitting them: waiting cannot end; run `agenthub batch "
        "submit {1} --backend auto --state {0}` again (agenthub.jobs.submit with the same input and state_path) to "
        "create them".format(state, os.path.abspath(src)))
    job = B.load(state)
    with pytest.raises(ConfigError) as caught:
        job.wait(interval=3600)
    assert str(caught.value) == expected
    with _Holder(state), pytest.raises(_Slept):  # (a submit under way may create them: polled again)
        job.wait(interval=3600)
    capsys.readouterr()
    assert main(["batch", "fetch", state, "-o", str(tmp_path / "out.jsonl"), "--wait", "--interval", "3600"]) == 1
    assert capsys.readouterr().err.splitlines()[-1] == "error: ConfigError: " + expected
    assert fake.calls() == []  # (nothing was ever sent: the child died before its create call)
    job = B.submit(src, backend="auto")  # as it says: created now, and the wait ends
    monkeypatch.undo()
    assert job.wait(interval=0).done and job.fetch(str(tmp_path / "out.jsonl")).done == 3


def test_wait_stops_at_once_after_a_fetch_found_a_batch_to_be_another_jobs(tmp_path, fake, monkeypatch):
    src = _kill_after_create(tmp_path, "anthropic", _CHILD_BEFORE)
    B.submit(_same_ids(tmp_path, "other", "other"), backend="auto")
    job = B.submit(src, backend="auto")  # their batch taken for the cut-short call
    job.wait(interval=0)
    with pytest.raises(ConfigError, match="is another job's"):
        job.fetch(str(tmp_path / "out.jsonl"))
    _no_sleep(monkeypatch)
    with pytest.raises(ConfigError) as caught:
        B.load(src + ".batch.json").wait(interval=3600, timeout=7200)
    assert str(caught.value).startswith("the batch job {} has 3 row(s) in 1 batch(es) never created (its submission "
                                        "was cut short, or a batch found for them was another job's)".format(
                                            src + ".batch.json"))


def test_wait_stops_when_every_batch_left_is_in_a_state_agenthub_does_not_know(tmp_path, fake, monkeypatch, caplog):
    """A provider status agenthub has no word for is state "unknown" (never "running" forever, never fetched as
    ended): wait() returns the status as it is once only such batches are left, with a warning naming them."""
    from agenthub.jobs.backends import anthropic

    src = _write(tmp_path / "in.jsonl", [dict(MODELS["anthropic"], id="a", messages=_user("one"))])
    job = B.submit(src, backend="auto")
    real = anthropic.status_of
    monkeypatch.setattr(anthropic, "status_of", lambda batch, client: real(dict(batch, processing_status="paused"),
                                                                          client))
    _no_sleep(monkeypatch)
    with caplog.at_level("WARNING", logger="agenthub"):
        current = job.wait(interval=3600)
    (info,) = current.batches
    assert (current.state, current.done, info.status, info.state) == ("in_progress", False, "paused", "unknown")
    assert caplog.messages == ["agenthub.jobs: {}: polling stops: every batch that has not ended is in a state agenthub "
                               "does not know ({} paused); ask `status` later".format(job.state_path, info.remote_id)]
    summary = job.fetch(str(tmp_path / "out.jsonl"))
    assert (summary.done, summary.pending) == (0, ["a"])


def _one_vector_short(provider, api, body):
    from batch_fakes import default_answer

    status, answer = default_answer(provider, api, body)
    if api == "embeddings" and len(answer.get("data") or ()) > 1:
        answer["data"] = answer["data"][:-1]  # a server dropping the last input's vector
    return status, answer


def test_an_embedding_answer_short_of_vectors_is_an_error_row_on_both_paths_billed_as_sent(tmp_path, fake):
    from agenthub.jobs import run

    fake.answer = _one_vector_short
    rows = [{"id": "two", "model": "text-embedding-3-small", "messages": _user("a") + _user("bb")},
            {"id": "one", "model": "text-embedding-3-small", "messages": _user("c")}]
    src = _write(tmp_path / "in.jsonl", rows)
    for how in ("batch", "live"):
        out = str(tmp_path / (how + ".jsonl"))
        if how == "batch":
            job = B.submit(src, backend="auto")
            job.wait(interval=0)
            summary = job.fetch(out)
        else:
            summary = run(src, out, workers=1, progress=False, max_retries=0)
        assert (summary.done, summary.failed) == (1, 1)
        with open(out) as handle:
            written = {row["id"]: row for row in map(json.loads, handle)}
        short = written["two"]
        assert short["message"] is None and short["finish_reason"] is None
        assert short["error"]["type"] == "StreamProtocolError"
        assert short["error"]["message"].startswith("openai-chat: 2 inputs were sent for embedding and 1 vectors "
                                                    "came back")
        assert short["usage_metadata"]["prompt_tokens"] == 4 and short["cost_usd"] is not None
        assert written["one"]["error"] is None
        assert written["one"]["message"]["content_items"] == [{"type": "embedding", "embedding": [1.0, 0.5, -1.0]}]
