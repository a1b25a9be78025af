"""agenthub.jobs.run against a local OpenAI-compatible server: rows, resume, torn lines, retry_failed,
faults, preflight, progress, Ctrl-C, kill -9 and a rerun, pacing within a server-enforced RPM."""

import _thread
import json
import os
import random
import subprocess
import sys
import threading
import time

import pytest

from agenthub import jobs
from agenthub.errors import ConfigError
from agenthub.jobs import finished_ids, read_output, runner

from jobs_server import JobServer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(autouse=True)
def _fast(monkeypatch):
    monkeypatch.setattr("agenthub.attempts.backoff", lambda attempt, retry_after: 0.01 if retry_after is None
                        else (None if retry_after > 60 else retry_after))


def _read(path, mode="r"):
    """The whole file at ``path`` (closed after: no handle left to the garbage collector)."""
    with open(path, mode) as handle:
        return handle.read()


def _user(text):
    return {"role": "user", "content_items": [{"type": "text", "text": text}]}


def _rows(server, texts, model="deepseek-v4-flash", **config):
    return [{"id": "r{}".format(i), "model": model, "messages": [_user(t)], "config": dict(max_tokens=16, **config),
             "client_type": "openai-chat", "base_url": server.base_url} for i, t in enumerate(texts)]


def _write(path, rows):
    with open(str(path), "w") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")
    return str(path)


def _by_id(path):
    return {row["id"]: row for row in read_output(str(path))}


def test_rows_are_answered_and_written_with_the_output_shape(tmp_path):
    with JobServer() as server:
        src = _write(tmp_path / "in.jsonl", _rows(server, ["alpha", "beta", "gamma"]))
        out = str(tmp_path / "out.jsonl")
        summary = jobs.run(src, out, workers=2, progress=False)
        assert (summary.done, summary.failed, summary.skipped, summary.total) == (3, 0, 0, 3)
        assert summary.tokens == 45 and summary.wall_s > 0
        assert sorted(server.counts.items()) == [("alpha", 1), ("beta", 1), ("gamma", 1)]
    rows = _by_id(out)
    row = rows["r1"]
    assert list(row) == ["id", "model", "message", "usage_metadata", "finish_reason", "cost_usd", "error",
                         "attempts", "backend", "finished_at"]
    assert row["message"]["role"] == "assistant"
    assert row["message"]["content_items"] == [{"type": "text", "text": "echo: beta"}]
    assert row["usage_metadata"] == {"cached_tokens": None, "prompt_tokens": 10, "thoughts_tokens": None,
                                     "response_tokens": 5}
    assert (row["finish_reason"], row["error"], row["attempts"], row["backend"]) == ("stop", None, 1, "live")
    assert row["cost_usd"] is not None and row["cost_usd"] > 0
    assert summary.cost_usd == pytest.approx(sum(r["cost_usd"] for r in rows.values()))


def test_a_rerun_skips_finished_rows_and_sends_only_new_ones(tmp_path):
    with JobServer() as server:
        rows = _rows(server, ["a", "b", "c", "d", "e"])
        src = _write(tmp_path / "in.jsonl", rows[:3])
        out = str(tmp_path / "out.jsonl")
        jobs.run(src, out, progress=False)
        _write(tmp_path / "in.jsonl", rows)
        summary = jobs.run(src, out, progress=False)
        assert (summary.done, summary.skipped) == (2, 3)
        assert set(server.counts.values()) == {1} and len(server.counts) == 5
        again = jobs.run(src, out, progress=False)
        assert (again.done, again.skipped) == (0, 5) and sum(server.counts.values()) == 5
    assert sorted(_by_id(out)) == ["r0", "r1", "r2", "r3", "r4"]


def test_a_torn_last_line_is_cut_and_its_row_sent_again(tmp_path):
    with JobServer() as server:
        src = _write(tmp_path / "in.jsonl", _rows(server, ["a", "b", "c"]))
        out = str(tmp_path / "out.jsonl")
        jobs.run(src, out, progress=False)
        lines = _read(out, "rb").splitlines(True)
        torn_id = json.loads(lines[-1])["id"]
        with open(out, "wb") as f:
            f.write(b"".join(lines[:-1]) + lines[-1][:25])
        summary = jobs.run(src, out, progress=False)
        assert (summary.done, summary.skipped) == (1, 2)
        text = {"r0": "a", "r1": "b", "r2": "c"}[torn_id]
        assert server.counts[text] == 2 and sum(server.counts.values()) == 4
    assert sorted(_by_id(out)) == ["r0", "r1", "r2"]
    assert all(line.endswith(b"\n") for line in _read(out, "rb").splitlines(True))


def test_a_failing_row_gets_an_error_row_and_retry_failed_replaces_it(tmp_path):
    with JobServer() as server:
        src = _write(tmp_path / "in.jsonl", _rows(server, ["ok", "flaky", "fail:400 always"]))
        out = str(tmp_path / "out.jsonl")
        server.broken.add("flaky")
        summary = jobs.run(src, out, progress=False, max_retries=2)
        assert (summary.done, summary.failed) == (1, 2)
        rows = _by_id(out)
        assert rows["r1"]["error"]["type"] == "ServerError" and rows["r1"]["error"]["status"] == 503
        assert rows["r1"]["attempts"] == 3 and server.counts["flaky"] == 3
        assert rows["r2"]["error"]["status"] == 400 and rows["r2"]["attempts"] == 1  # not retryable
        assert "bad request for this row" in rows["r2"]["error"]["message"]
        assert rows["r1"]["message"] is None and rows["r1"]["usage_metadata"] is None
        # error rows count as finished...
        assert jobs.run(src, out, progress=False).skipped == 3 and server.counts["flaky"] == 3
        # ... unless retry_failed: re-sent, and their error rows replaced
        server.broken.clear()
        summary = jobs.run(src, out, progress=False, retry_failed=True)
        assert (summary.done, summary.failed, summary.skipped) == (1, 1, 1)
        assert server.counts["flaky"] == 4 and server.counts["ok"] == 1
    rows = read_output(out)
    assert sorted(r["id"] for r in rows) == ["r0", "r1", "r2"]
    assert [r["error"] for r in rows if r["id"] == "r1"] == [None]


def test_a_429_pauses_the_job_and_the_row_is_retried(tmp_path):
    with JobServer() as server:
        src = _write(tmp_path / "in.jsonl", _rows(server, ["fail:429once", "b", "c", "d"]))
        out = str(tmp_path / "out.jsonl")
        limiter = jobs.runner.RateLimiter()
        summary = jobs.run(src, out, workers=1, progress=False, limiter=limiter)
        assert summary.done == 4
        assert _by_id(out)["r0"]["attempts"] == 2 and server.counts["fail:429once"] == 2
        assert limiter.pauses == 1
        # the rows after it waited for the Retry-After (0.3 s): no request in between
        times = [t for t, _, _ in server.log]
        assert times[1] - times[0] >= 0.29


def test_unknown_models_and_missing_keys_are_all_listed_before_anything_is_sent(tmp_path, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    with JobServer() as server:
        rows = _rows(server, ["a", "b"])
        rows.append({"id": "x1", "model": "no-such-model-9", "messages": [_user("c")]})
        rows.append({"id": "x2", "model": "claude-sonnet-4-5", "messages": [_user("d")]})
        rows.append({"id": "x3", "model": "no-such-model-9", "messages": [_user("e")]})
        rows.append({"id": "x4", "model": "deepseek-v4-flash", "messages": [_user("f")],
                     "config": {"embedding_config": {"dimensions": 8}}, "client_type": "openai-chat",
                     "base_url": server.base_url})
        src = _write(tmp_path / "in.jsonl", rows)
        out = str(tmp_path / "out.jsonl")
        with pytest.raises(ConfigError) as info:
            jobs.run(src, out, progress=False)
        assert not server.counts and not os.path.exists(out)
    text = str(info.value)
    assert "3 route(s)" in text
    assert "'no-such-model-9' (lines 3, 5): cannot route model" in text
    assert "'claude-sonnet-4-5' (line 4): no API key" in text and "ANTHROPIC_API_KEY" in text
    assert "(line 6): embedding_config on a model that is not an embedding model" in text


def test_embedding_rows_give_embedding_items(tmp_path):
    with JobServer() as server:
        rows = _rows(server, ["chat row"])
        rows.append({"id": "e1", "model": "text-embedding-3-small", "messages": [_user("vector me")],
                     "config": {"embedding_config": {"dimensions": 2}}, "client_type": "openai-chat",
                     "base_url": server.base_url})
        src = _write(tmp_path / "in.jsonl", rows)
        out = str(tmp_path / "out.jsonl")
        assert jobs.run(src, out, progress=False).done == 2
        assert server.counts["embed:vector me"] == 1
    row = _by_id(out)["e1"]
    assert row["message"]["content_items"] == [{"type": "embedding", "embedding": [9.0, 0.5]}]
    assert row["error"] is None and row["usage_metadata"]["prompt_tokens"] == 4


def test_skip_invalid_writes_error_rows_for_bad_lines_once(tmp_path):
    with JobServer() as server:
        rows = _rows(server, ["a", "b"])
        rows[1]["config"] = {"max_tokens": "many"}
        src = _write(tmp_path / "in.jsonl", rows)
        out = str(tmp_path / "out.jsonl")
        with pytest.raises(ConfigError) as info:
            jobs.run(src, out, progress=False)
        assert "line 2: config['max_tokens'] must be a positive int" in str(info.value) and not server.counts
        summary = jobs.run(src, out, progress=False, skip_invalid=True)
        assert (summary.done, summary.failed) == (1, 1)
        assert jobs.run(src, out, progress=False, skip_invalid=True).skipped == 2
    bad = _by_id(out)["r1"]
    assert bad["error"]["type"] == "ConfigError" and bad["attempts"] == 0 and len(read_output(out)) == 2


def test_progress_callable_plain_lines_and_no_key_anywhere(tmp_path, monkeypatch, capsys):
    secret = "sk-proj-jobsecret0123456789abcdef"
    with JobServer() as server:
        monkeypatch.setenv("OPENAI_API_KEY", secret)
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        rows = [{"id": "k{}".format(i), "model": "gpt-4.1-mini", "messages": [_user(t)], "client_type": "openai-chat"}
                for i, t in enumerate(["one", "two", "fail:401 echo"])]
        src = _write(tmp_path / "in.jsonl", rows)
        out = str(tmp_path / "out.jsonl")
        seen = []
        summary = jobs.run(src, out, progress=seen.append)
        assert (summary.done, summary.failed) == (2, 1)
        assert [s["done"] + s["failed"] for s in seen] == [1, 2, 3, 3] and seen[-1]["final"] is True
        assert seen[-1]["total"] == 3 and seen[-1]["tokens"] == 30 and seen[-1]["eta_s"] == 0
        assert all(auth == "Bearer " + secret for _, _, auth in server.log)  # the key did go to the server...
        jobs.run(src, out, retry_failed=True)  # default progress, stderr not a terminal: plain lines
    err = capsys.readouterr().err
    assert err.startswith("agenthub.jobs: 3/3 rows, 1 failed, 2 skipped") or "agenthub.jobs: 3/3 rows" in err
    bad = _by_id(out)["k2"]
    assert bad["error"]["status"] == 401 and "bad key" in bad["error"]["message"]
    for text in (_read(out), _read(src), err, json.dumps(seen)):
        assert secret not in text and secret[8:20] not in text  # ... and nowhere else


def test_ctrl_c_lets_rows_in_flight_finish_and_leaves_the_output_resumable(tmp_path):
    with JobServer() as server:
        src = _write(tmp_path / "in.jsonl", _rows(server, ["sleep:0.3 #{}".format(i) for i in range(12)]))
        out = str(tmp_path / "out.jsonl")
        timer = threading.Timer(0.45, _thread.interrupt_main)
        timer.start()
        try:
            summary = jobs.run(src, out, workers=3, progress=False, grace=5.0)
        finally:
            timer.cancel()
        assert summary.interrupted
        first = sum(server.counts.values())
        assert 3 <= first < 12 and summary.done == first == len(read_output(out))  # every started row finished
        again = jobs.run(src, out, workers=4, progress=False)
        assert again.skipped == first and again.done == 12 - first
        assert set(server.counts.values()) == {1}


def test_ctrl_c_after_the_grace_aborts_rows_in_flight_without_a_row(tmp_path):
    with JobServer() as server:
        src = _write(tmp_path / "in.jsonl", _rows(server, ["sleep:3 #{}".format(i) for i in range(4)]))
        out = str(tmp_path / "out.jsonl")
        timer = threading.Timer(0.3, _thread.interrupt_main)
        timer.start()
        started = time.monotonic()
        try:
            summary = jobs.run(src, out, workers=2, progress=False, grace=0.2)
        finally:
            timer.cancel()
        assert summary.interrupted and time.monotonic() - started < 2.5
        assert summary.done == 0 and read_output(out) == [] and sum(server.counts.values()) == 2


def test_the_writer_waits_for_workers_even_when_thread_state_lies(tmp_path, monkeypatch):
    # bpo-45274 (3.11, 3.12): a KeyboardInterrupt inside Thread.join can mark a running worker stopped, so
    # is_alive() says False while it still waits for its answer; the job must not close its output under it
    with JobServer() as server:
        src = _write(tmp_path / "in.jsonl", _rows(server, ["sleep:0.3 #{}".format(i) for i in range(4)]))
        out = str(tmp_path / "out.jsonl")
        alive, join = threading.Thread.is_alive, threading.Thread.join
        ours = lambda thread: thread.name.startswith("agenthub-job-")  # noqa: E731
        monkeypatch.setattr(threading.Thread, "is_alive", lambda self: False if ours(self) else alive(self))
        monkeypatch.setattr(threading.Thread, "join", lambda self, timeout=None: None if ours(self) else
                            join(self, timeout))
        summary = jobs.run(src, out, workers=2, progress=False)
        monkeypatch.undo()
        assert summary.done == 4 and len(read_output(out)) == 4 and sum(server.counts.values()) == 4
        for thread in [t for t in threading.enumerate() if ours(t)]:
            thread.join(5)  # they left their loop before run returned: only the thread's exit is left
        assert not [t for t in threading.enumerate() if ours(t)]


_CHILD = """
import sys
from agenthub.jobs import run
run(sys.argv[1], sys.argv[2], workers=4, progress=False)
"""


def test_kill_9_at_a_random_moment_then_a_rerun_sends_no_finished_row_twice(tmp_path):
    with JobServer(delay=0.005) as server:
        src = _write(tmp_path / "in.jsonl", _rows(server, ["row {}".format(i) for i in range(300)]))
        out = str(tmp_path / "out.jsonl")
        env = dict(os.environ, PYTHONPATH=ROOT, TMPDIR=str(tmp_path))  # the killed run's id index stays in tmp_path
        child = subprocess.Popen([sys.executable, "-c", _CHILD, src, out], cwd=ROOT, env=env)
        try:
            deadline = time.monotonic() + 20
            while not os.path.exists(out) or os.path.getsize(out) < 2000:  # it is writing rows
                assert time.monotonic() < deadline and child.poll() is None
                time.sleep(0.01)
            time.sleep(random.uniform(0.0, 0.3))
            child.kill()
        finally:
            child.wait(10)
        assert child.returncode == -9
        before = finished_ids(out)  # what the killed run finished (a torn last line cut away)
        sent_before = dict(server.counts)
        assert 0 < len(before) < 300
        summary = jobs.run(src, out, workers=4, progress=False)
        assert summary.skipped == len(before) and summary.done == 300 - len(before)
        finished_texts = {"row {}".format(int(i[1:])) for i in before}
        assert all(server.counts[t] == 1 for t in finished_texts)  # zero duplicates for finished rows
        in_flight = [t for t, n in server.counts.items() if n > 1]
        assert len(in_flight) <= 4 and all(sent_before.get(t) == 1 for t in in_flight)
    rows = read_output(out)
    assert len(rows) == 300 and len({r["id"] for r in rows}) == 300


def test_pacing_uses_the_servers_rpm_without_429s(tmp_path):
    rpm = 1200  # 20 a second, enforced by the server as a token bucket of one second's worth
    with JobServer(rpm=rpm) as server:
        src = _write(tmp_path / "in.jsonl", _rows(server, ["p{}".format(i) for i in range(70)]))
        out = str(tmp_path / "out.jsonl")
        summary = jobs.run(src, out, workers=8, rpm=rpm, progress=False)
        assert summary.done == 70
        ok = [t for t, status in server.statuses if status == 200]
        start = ok[0]
        late_429 = [t for t, status in server.statuses if status == 429 and t - start > 1.0]
        used = (len(ok) - 1) / (ok[-1] - start) * 60
        assert late_429 == [] and used >= 0.85 * rpm, (used, len(late_429))


def test_an_invalid_line_skipped_with_skip_invalid_is_never_sent(tmp_path):
    with JobServer() as server:
        rows = _rows(server, ["good", "negative max_tokens", "bad role"])
        rows[1]["config"] = {"max_tokens": -1}  # the shape of a row, the value not
        rows[2]["messages"] = [{"role": "system", "content_items": [{"type": "text", "text": "bad role"}]}]
        src = _write(tmp_path / "in.jsonl", rows)
        out = str(tmp_path / "out.jsonl")
        summary = jobs.run(src, out, progress=False, skip_invalid=True)
        assert (summary.done, summary.failed) == (1, 2)
        assert dict(server.counts) == {"good": 1}
        again = jobs.run(src, out, progress=False, skip_invalid=True, retry_failed=True)
        assert (again.done, again.failed, again.skipped) == (0, 2, 1) and dict(server.counts) == {"good": 1}
    assert sorted((r["id"], r["error"] is None) for r in read_output(out)) == [
        ("r0", True), ("r1", False), ("r2", False)]


def test_an_invalid_lines_stand_in_id_never_takes_the_id_of_a_row_of_the_file(tmp_path):
    # line 1 has no usable id: its error row's id was "line-1", which row 2 has as its own id; row 2 was marked
    # answered by that error row, never sent, and no rerun sent it
    with JobServer() as server:
        rows = _rows(server, ["real", "other"])
        rows[0]["id"], rows[1]["id"] = "line-1", "line-1-2"
        src = str(tmp_path / "in.jsonl")
        with open(src, "w") as f:
            f.write("not json\n" + json.dumps(rows[0]) + "\n[]\n" + json.dumps(rows[1]) + "\n")
        out = str(tmp_path / "out.jsonl")
        summary = jobs.run(src, out, progress=False, skip_invalid=True)
        assert (summary.done, summary.failed, summary.skipped, summary.total) == (2, 2, 0, 4)
        assert dict(server.counts) == {"real": 1, "other": 1}
        again = jobs.run(src, out, progress=False, skip_invalid=True)
        assert (again.done, again.failed, again.skipped) == (0, 0, 4) and dict(server.counts) == {"real": 1, "other": 1}
    assert sorted((r["id"], r["error"] and r["error"]["message"]) for r in read_output(out)) == [
        ("line-1", None), ("line-1-2", None), ("line-1-3", "line 1: not valid JSON (Expecting value: line 1 column 1 "
                                                           "(char 0))"),
        ("line-3", "line 3: a job line must be a JSON object, got list")]


def test_rows_beyond_the_budget_get_error_rows_and_are_never_sent(tmp_path):
    from agenthub import Budget
    from agenthub.budget import worst_case_usd

    with JobServer() as server:
        src = _write(tmp_path / "in.jsonl", _rows(server, ["b{}".format(i) for i in range(8)]))
        out = str(tmp_path / "out.jsonl")
        rows = list(jobs.iter_rows(src))
        need = worst_case_usd("deepseek-v4-flash", jobs.runner.estimate_tokens(rows[0].messages, {}), 16)
        budget = Budget(max_usd=need * 2.5)  # room for two worst cases, then the answers' real cost counts
        summary = jobs.run(src, out, workers=1, progress=False, budget=budget)
        assert summary.done >= 2 and summary.failed >= 1 and summary.done + summary.failed == 8
        assert budget.spent_usd <= budget.max_usd
        got = _by_id(out)
        refused = [r for r in got.values() if r["error"] is not None]
        assert {r["error"]["type"] for r in refused} == {"BudgetExceededError"}
        assert {r["attempts"] for r in refused} == {0}
        assert sum(server.counts.values()) == summary.done  # the refused rows never reached the server
        assert all(server.counts["b{}".format(int(r["id"][1:]))] == 0 for r in refused)
        # a new budget and retry_failed: the refused rows are sent now
        again = jobs.run(src, out, workers=2, progress=False, budget=Budget(max_usd=1.0), retry_failed=True)
        assert again.done == summary.failed and set(server.counts.values()) == {1}
        with pytest.raises(ConfigError):
            jobs.run(src, out, budget=Budget(1.0), engine="ray")
        with pytest.raises(ConfigError):
            jobs.run(src, out, budget=Budget(1.0), client_factory=lambda *route: None)
        with pytest.raises(ConfigError):
            jobs.run(src, out, budget={"max_usd": 1})


def test_a_long_pause_is_announced_in_plain_lines(tmp_path, capsys, monkeypatch):
    """Issue 29 C2: with stderr not a terminal, a 60 s Retry-After pause printed nothing.  A wait of
    ANNOUNCE_WAIT seconds or more gets one plain line (lowered here so the test waits 0.3 s)."""
    monkeypatch.setattr(jobs.runner, "ANNOUNCE_WAIT", 0.25)
    with JobServer() as server:
        src = _write(tmp_path / "in.jsonl", _rows(server, ["fail:429once", "b"]))
        out = str(tmp_path / "out.jsonl")
        summary = jobs.run(src, out, workers=1, progress=None)
        assert summary.done == 2
    lines = capsys.readouterr().err.splitlines()
    assert "agenthub.jobs: row r0: RateLimitError (status 429): waiting 0.3 s as the server asked (Retry-After) " \
           "before attempt 2" in lines, lines
    assert lines[-1].startswith("agenthub.jobs: 2/2 rows")
    monkeypatch.setattr(jobs.runner, "ANNOUNCE_WAIT", 3.0)
    with JobServer() as server:
        src = _write(tmp_path / "in2.jsonl", _rows(server, ["fail:429once", "b"]))
        jobs.run(src, str(tmp_path / "out2.jsonl"), workers=1, progress=None)
    assert not any("waiting" in line for line in capsys.readouterr().err.splitlines())


def test_a_user_password_base_url_never_reaches_output_rows_in_any_spelling(tmp_path, monkeypatch):
    """Issue 29 D1 (B08): requests sends user:password@ as ``Authorization: Basic base64(user:password)``;
    a server that echoes it finds that value scrubbed from the error row too."""
    import base64
    password = "pw-in-the-base-url-K8j7H6"
    basic = base64.b64encode(("user:" + password).encode()).decode()
    with JobServer() as server:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-proj-jobsecret0123456789abcdef")
        base = server.base_url.replace("http://", "http://user:{}@".format(password))
        rows = [{"id": "b0", "model": "gpt-4.1-mini", "messages": [_user("fail:401 echo")], "client_type": "openai-chat",
                 "base_url": base}]
        out = str(tmp_path / "out.jsonl")
        jobs.run(_write(tmp_path / "in.jsonl", rows), out, progress=False)
        assert [auth for _, _, auth in server.log] == ["Basic " + basic]  # what requests did send
    row = _by_id(out)["b0"]
    assert row["error"]["status"] == 401 and row["error"]["message"].startswith("bad key ")
    text = _read(out)
    assert basic not in text and password not in text and basic[:12] not in text


# -- issue 29 D1: odd row ids, huge lines, two runs on one output --------------------------------------------


def test_a_lone_surrogate_row_id_is_an_invalid_line_not_a_crash(tmp_path):
    with JobServer() as server:
        good = _rows(server, ["fine"])[0]
        src = str(tmp_path / "in.jsonl")
        with open(src, "w") as f:
            f.write(json.dumps(good) + "\n")
            f.write(json.dumps(dict(good, id="\ud800x", messages=[_user("odd")])) + "\n")  # "\\ud800x" in the file
        with pytest.raises(ConfigError) as info:
            jobs.run(src, str(tmp_path / "out.jsonl"), progress=False)
        assert "line 2: 'id' is not valid Unicode (it holds a lone surrogate)" in str(info.value)
        summary = jobs.run(src, str(tmp_path / "out.jsonl"), progress=False, skip_invalid=True)
        assert (summary.done, summary.failed) == (1, 1)
        assert dict(server.counts) == {"fine": 1}
    rows = _by_id(str(tmp_path / "out.jsonl"))
    assert sorted(rows) == ["line-2", "r0"]
    assert rows["line-2"]["error"]["message"] == "line 2: 'id' is not valid Unicode (it holds a lone surrogate)"


def test_a_job_line_above_the_limit_is_an_invalid_line_read_past_in_bounded_memory(tmp_path, monkeypatch):
    from agenthub.jobs import jobfile
    monkeypatch.setattr(jobfile, "MAX_JOB_LINE_BYTES", 4096)
    monkeypatch.setattr(jobfile, "_READ_PIECE", 1024)
    with JobServer() as server:
        rows = _rows(server, ["one", "x" * 20000, "three"])
        src = _write(tmp_path / "in.jsonl", rows)
        with pytest.raises(ConfigError) as info:
            jobs.run(src, str(tmp_path / "out.jsonl"), progress=False)
        assert "line 2: longer than 4096 bytes" in str(info.value)
        read = []

        class Spy(object):  # every read of the file is at most the limit (+1): the line is never held whole
            def __init__(self, handle):
                self.handle = handle

            def readline(self, size=-1):
                read.append(size)
                return self.handle.readline(size)

        with open(src, "rb") as handle:
            out = list(jobfile._bounded_lines(Spy(handle)))
        assert [(n, raw is None) for n, raw in out] == [(1, False), (2, True), (3, False)]
        assert read and max(read) == 4097 and min(read) > 0
        summary = jobs.run(src, str(tmp_path / "out.jsonl"), progress=False, skip_invalid=True)
        assert (summary.done, summary.failed) == (2, 1)
        assert dict(server.counts) == {"one": 1, "three": 1}
    # (a line not read has no id: its error row is named by its line, as for any line that is not JSON)
    assert _by_id(str(tmp_path / "out.jsonl"))["line-2"]["error"]["message"] == "line 2: longer than 4096 bytes"


def test_a_second_run_on_the_same_output_is_refused_while_the_first_runs(tmp_path):
    """Two processes: the first holds <output>.lock while it runs; the second is refused at once (before, both
    sent every row and wrote each twice)."""
    with JobServer() as server:
        rows = _rows(server, ["sleep:2 first"] + ["row %d" % i for i in range(5)])
        src = _write(tmp_path / "in.jsonl", rows)
        out = str(tmp_path / "out.jsonl")
        code = "import sys; from agenthub import jobs; s = jobs.run(sys.argv[1], sys.argv[2], workers=2, " \
               "progress=False); print(s.done)"
        child = subprocess.Popen([sys.executable, "-c", code, src, out], cwd=ROOT, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, env=dict(os.environ, PYTHONPATH=ROOT, NO_PROXY="*"))
        try:
            deadline = time.monotonic() + 30
            while server.counts.get("sleep:2 first", 0) == 0 and time.monotonic() < deadline:
                time.sleep(0.02)  # the first run is sending: it holds the lock
            assert server.counts.get("sleep:2 first") == 1
            with pytest.raises(ConfigError) as info:
                jobs.run(src, out, progress=False)
            assert str(info.value) == ("another run is writing {0} (it holds {0}.lock): wait for it to end, or write "
                                       "another output file".format(out))
            stdout, stderr = child.communicate(timeout=60)
        finally:
            if child.poll() is None:
                child.kill()
                child.communicate()
        assert child.returncode == 0, stderr
        assert stdout.decode().strip() == "6"
        assert all(count == 1 for count in server.counts.values()) and len(server.counts) == 6
        assert jobs.run(src, out, progress=False).skipped == 6  # the lock is free again once a run ends
        assert not os.path.exists(out + ".lock")  # and its file is gone (issue 37 D: it was left behind)


def test_the_output_lock_is_removed_when_its_run_ends_and_a_stale_open_tries_again(tmp_path):
    """A run removes <output>.lock (while it still holds it) when it ends; a run that locked the file the path
    no longer names takes the path's new file instead, so two runs never both hold the output."""
    import fcntl

    from agenthub.jobs.jobfile import OutputLock

    out = str(tmp_path / "out.jsonl")
    first = OutputLock(out)
    assert os.path.exists(out + ".lock")
    with pytest.raises(ConfigError):
        OutputLock(out)
    first.release()
    assert not os.path.exists(out + ".lock")
    # the race: a file opened (and locked) just after its holder removed it is not the lock any more
    stale = os.open(out + ".lock", os.O_RDWR | os.O_CREAT, 0o600)
    os.unlink(out + ".lock")
    fcntl.flock(stale, fcntl.LOCK_EX | fcntl.LOCK_NB)  # someone holds the stale file: it locks nothing now
    try:
        second = OutputLock(out)
        with pytest.raises(ConfigError):
            OutputLock(out)  # the new file is held
        second.release()
    finally:
        os.close(stale)
    assert not os.path.exists(out + ".lock")


def test_the_rows_of_a_job_files_first_lines_are_decoded_once_the_lines_after_them_read_from_their_offset(
        tmp_path, monkeypatch):
    """Issue 41 item 6: the up-front check keeps the rows of the first HEAD_BYTES of lines (memory stays flat
    past them), the run takes those as they are and reads the lines after them again, starting at their
    offset; blank and invalid lines in the head are passed over; a resumed run's finished rows are not sent."""
    from agenthub.jobs import jobfile

    with JobServer() as server:
        rows = _rows(server, ["a", "b", "c", "d", "e", "f"])
        text = [json.dumps(r) for r in rows]
        lines = text[:2] + ["", "{not json"] + text[2:]  # the head: lines 1-5 (a blank and an invalid one among them)
        path = tmp_path / "in.jsonl"
        path.write_text("\n".join(lines) + "\n")
        monkeypatch.setattr(runner, "HEAD_BYTES", sum(len(line) + 1 for line in lines[:5]))
        made = []
        real = jobfile._fast_row
        monkeypatch.setattr(jobfile, "_fast_row",
                            lambda obj, number, *more: (made.append(number), real(obj, number, *more))[1])
        out = str(tmp_path / "out.jsonl")
        summary = jobs.run(str(path), out, progress=False, skip_invalid=True)
        assert (summary.done, summary.failed, summary.skipped) == (6, 1, 0)
        assert made == [6, 7, 8]  # lines 1-5 were the head's: not decoded again
        assert sorted(server.counts.items()) == [(t, 1) for t in "abcdef"]
        rerun = jobs.run(str(path), out, progress=False, skip_invalid=True)
        assert (rerun.done, rerun.failed, rerun.skipped) == (0, 0, 7)
        assert sorted(server.counts.items()) == [(t, 1) for t in "abcdef"]
    by_id = _by_id(out)
    assert sorted(by_id) == ["line-4", "r0", "r1", "r2", "r3", "r4", "r5"]
    assert by_id["r4"]["message"]["content_items"][0]["text"].endswith("e")


def test_a_resumed_run_reads_past_its_finished_lines_without_decoding_them(tmp_path, monkeypatch):
    """Issue 41 item 6: the lines before the first one still to do are not turned into rows again."""
    from agenthub.jobs import jobfile

    with JobServer() as server:
        rows = _rows(server, ["a", "b", "c", "d", "e", "f"])
        src = _write(tmp_path / "in.jsonl", rows[:2] + [rows[3]])
        out = str(tmp_path / "out.jsonl")
        jobs.run(src, out, progress=False)  # r0, r1 and r3 are done: r2 (line 3) is the first left
        _write(tmp_path / "in.jsonl", rows)
        made = []
        real = jobfile._fast_row
        monkeypatch.setattr(jobfile, "_fast_row",
                            lambda obj, number, *more: (made.append(number), real(obj, number, *more))[1])
        monkeypatch.setattr(runner, "HEAD_BYTES", 0)  # (no head kept: every row is read again)
        summary = jobs.run(src, out, progress=False)
        assert (summary.done, summary.skipped) == (3, 3)
        assert made == [3, 4, 5, 6]  # line 4 (r3, done) is decoded and passed over, lines 1-2 are not
        assert sorted(server.counts.items()) == [(t, 1) for t in "abcdef"]
    assert sorted(_by_id(out)) == ["r0", "r1", "r2", "r3", "r4", "r5"]


def test_rows_after_the_last_finished_one_are_not_looked_up(tmp_path, monkeypatch):
    """Issue 41 item 6: a fresh run looks up no row in the id index; a resumed one only those up to the
    last finished line."""
    from agenthub.jobs.jobfile import IdIndex

    looked = []
    real = IdIndex.is_done
    monkeypatch.setattr(IdIndex, "is_done", lambda self, rid: (looked.append(rid), real(self, rid))[1])
    with JobServer() as server:
        rows = _rows(server, ["a", "b", "c", "d", "e", "f"])
        src = _write(tmp_path / "in.jsonl", rows[:2] + [rows[3]])
        out = str(tmp_path / "out.jsonl")
        jobs.run(src, out, progress=False)
        assert looked == []
        _write(tmp_path / "in.jsonl", rows)
        summary = jobs.run(src, out, progress=False)
        assert (summary.done, summary.skipped) == (3, 3)
        assert looked == ["r2", "r3"]
        assert sorted(server.counts.items()) == [(t, 1) for t in "abcdef"]


def test_the_jobs_hook_with_only_pauses_to_wait_out_reads_what_can_pause_and_skips_the_rest():
    """Issue 41 item 6: the run's own limiter (no rpm/tpm) only waits out pauses, so the job's hook passes an
    attempt on when no pause holds any endpoint, and reads an answer's head only when it has rate-limit headers;
    an exhausted one still pauses the endpoint, and the next attempt there waits it out."""
    import requests.structures

    from agenthub import RateLimiter
    from agenthub.attempts import Attempt
    from agenthub.jobs.runner import Job, JobSummary, Progress

    limiter = RateLimiter()
    job = Job(iter(()), {}, None, limiter, JobSummary(), Progress(False, 0, 0), 0, pauses_only=True)
    hook = job.row_hook
    job.local.pace = True
    attempt = Attempt("stream", "openai-chat", "deepseek-v4-flash", None, server=("127.0.0.1", 9))
    hook.before_attempt(attempt)  # nothing holds it
    attempt.status, attempt.headers = 200, requests.structures.CaseInsensitiveDict({"Content-Type": "text/event-stream"})
    hook.after_response(attempt)
    assert limiter.paused_for() == 0 and hook._keys == {}
    hook.on_done(attempt)
    attempt.headers = requests.structures.CaseInsensitiveDict({"X-RateLimit-Remaining-Requests": "0",
                                                               "X-RateLimit-Reset-Requests": "30s"})
    hook.after_response(attempt)
    assert 25 < limiter.paused_for(("openai-chat", ("127.0.0.1", 9), "deepseek-v4-flash")) <= 30
    assert limiter.paused_for(("openai-chat", ("127.0.0.2", 9), "deepseek-v4-flash")) == 0
    hook.on_done(attempt)
    assert hook._keys == {}
    waited = []
    nxt = Attempt("stream", "openai-chat", "deepseek-v4-flash", None, server=("127.0.0.1", 9))
    hook.pause = lambda attempt, seconds: waited.append(seconds) or False  # (stopped at once: not sent)
    with pytest.raises(Exception):
        hook.before_attempt(nxt)
    assert len(waited) == 1 and 25 < waited[0] <= 30


def test_a_head_rows_messages_and_config_are_checked_once_a_run_and_sent_as_before(tmp_path, monkeypatch):
    """Issue 41 item 6: the up-front check passes each row's messages and each distinct flat config; the rows of
    the head reach the runner's AutoLLMClients without a second check of either (the rows after the head have
    their messages checked again by the client: they were read again), and the requests are the same."""
    from agenthub import validate
    from agenthub.jobs import jobfile

    counts = {"message": 0, "config": 0}
    real_message, real_config = validate.check_message, validate.check_config

    def check_message(*args, **kwargs):
        counts["message"] += 1
        return real_message(*args, **kwargs)

    def check_config(*args, **kwargs):
        counts["config"] += 1
        return real_config(*args, **kwargs)

    monkeypatch.setattr(validate, "check_message", check_message)
    for module in (jobfile, runner):
        monkeypatch.setattr(module, "check_config", check_config)
    with JobServer() as server:
        rows = _rows(server, ["a", "b", "c", "d"])
        rows[3]["config"] = {"max_tokens": 17}
        src = _write(tmp_path / "in.jsonl", rows)
        monkeypatch.setattr(runner, "HEAD_BYTES", sum(len(json.dumps(r)) + 1 for r in rows[:3]))
        summary = jobs.run(src, str(tmp_path / "out.jsonl"), progress=False, workers=1)
        assert summary.done == 4
        # up front: 4 messages, 2 configs; the run: 2 configs (one each), line 4's message (after the head)
        assert counts == {"message": 5, "config": 4}
        assert sorted(server.counts.items()) == [(t, 1) for t in "abcd"]
    by_id = _by_id(str(tmp_path / "out.jsonl"))
    assert [by_id["r{}".format(i)]["message"]["content_items"][0]["text"][-1] for i in range(4)] == list("abcd")


@pytest.mark.parametrize("last", ["bad message", "bad config", "duplicate id", "lone surrogate id"])
def test_a_bad_last_row_past_the_head_and_the_first_batches_is_refused_before_any_request(tmp_path, monkeypatch,
                                                                                          last):
    """Issue 41 item 6 (the up-front check made cheaper: ids settled a batch at a time with a fast path when none
    is a duplicate, an ASCII id not encoded to be checked): a bad row anywhere, here the last of 1,200 lines (past
    the head and two batches of 512 ids), still refuses the whole job before anything is sent, with the same
    typed error and fields; the good rows, ASCII ids or not, run as before."""
    with JobServer() as server:
        rows = _rows(server, ["t{}".format(n) for n in range(1200)])
        rows[7]["id"] = "r\u00e9-7"  # a valid id that is not ASCII
        rows[8]["messages"] = [_user("a \\ backslash, a \"quote\" and \u00e9")]  # escapes but no \u spelling
        bad = dict(rows[-1])
        if last == "bad message":
            bad["messages"] = [{"role": "system", "content_items": [{"type": "text", "text": "x"}]}]
            reason = "messages[0]['role'] must be 'user' or 'assistant' (got 'system')"
        elif last == "bad config":
            bad["config"] = {"max_tokens": "many"}
            reason = "config['max_tokens'] must be a positive int"
        elif last == "duplicate id":
            bad["id"] = "r0"
            reason = "duplicate id 'r0' (first on line 1)"
        else:
            bad["id"] = "\ud800x"
            reason = "'id' is not valid Unicode (it holds a lone surrogate)"
        src = _write(tmp_path / "in.jsonl", rows[:-1] + [bad])
        monkeypatch.setattr(runner, "HEAD_BYTES", 50 * 1024)  # the head ends near line 200
        out = str(tmp_path / "out.jsonl")
        with pytest.raises(ConfigError) as info:
            jobs.run(src, out, progress=False)
        assert not server.counts and not os.path.exists(out)
        assert info.value.lines == [1200]
        assert str(info.value).split("\n")[1].startswith("  line 1200: " + reason)
        if last == "duplicate id":
            return
        summary = jobs.run(src, out, progress=False, skip_invalid=True)
        assert (summary.done, summary.failed) == (1199, 1)
        assert sum(server.counts.values()) == 1199 and server.counts["a \\ backslash, a \"quote\" and \u00e9"] == 1
    by_id = _by_id(out)
    assert len(by_id) == 1200 and by_id["r\u00e9-7"]["error"] is None
    assert by_id["r8"]["message"]["content_items"][0]["text"] == "echo: a \\ backslash, a \"quote\" and \u00e9"
    assert by_id["line-1200" if last == "lone surrogate id" else "r1199"]["error"]["type"] == "ConfigError"


def test_a_ray_text_line_that_is_no_job_line_is_its_rows_error_in_its_own_words():
    # Predictor needs no Ray: a line nested past the stack raised RecursionError out of the batch (the whole
    # map_batches task failed), and every other bad line's error read "unknown key(s) ['_bad']"
    from agenthub.ray import Predictor

    predictor = Predictor(model="deepseek-v4-flash")
    try:
        rows = predictor.rows({"text": ["[" * 100000 + "]" * 100000, "[1]", "{nope"]})
    finally:
        predictor._pool.shutdown()
    assert [(row["id"], row["model"], row["attempts"], row["backend"]) for row in rows] == [
        ("row-0", "deepseek-v4-flash", 0, "ray"), ("row-1", "deepseek-v4-flash", 0, "ray"),
        ("row-2", "deepseek-v4-flash", 0, "ray")]
    assert [row["error"] for row in rows] == [
        {"type": "ConfigError", "message": "nested too deeply to be read as JSON", "status": None},
        {"type": "ConfigError", "message": "a job line must be a JSON object, got list", "status": None},
        {"type": "ConfigError", "message": "not valid JSON (Expecting property name enclosed in double quotes: line 1 "
                                           "column 2 (char 1))", "status": None}]


def test_an_output_path_that_is_a_folder_is_a_config_error_before_anything_is_sent(tmp_path):
    # it was IsADirectoryError out of the output scan (after the job file was read and checked)
    with JobServer() as server:
        src = _write(tmp_path / "in.jsonl", _rows(server, ["a"]))
        folder = tmp_path / "answers"
        folder.mkdir()
        with pytest.raises(ConfigError) as caught:
            jobs.run(src, str(folder), progress=False)
        assert str(caught.value) == "{} is a folder, not a file".format(folder)
        assert not server.counts and os.listdir(str(folder)) == []


def test_lines_written_to_the_job_file_after_its_check_are_not_sent(tmp_path):
    # rows appended while the job ran were read and sent unchecked: a repeated id sent (and paid) twice, a row of an
    # unknown model a KeyError out of jobs.run
    with JobServer() as server:
        rows = _rows(server, ["a", "b", "c"])
        src = _write(tmp_path / "in.jsonl", rows)
        out = str(tmp_path / "out.jsonl")
        appended = []

        def grow(snapshot):
            if not appended:
                appended.append(True)
                with open(src, "a") as f:
                    f.write(json.dumps(dict(rows[2], messages=[_user("again")])) + "\n")
                    f.write(json.dumps({"id": "new", "model": "no-such-model", "messages": [_user("x")]}) + "\n")

        summary = jobs.run(src, out, workers=1, progress=grow)
        assert (summary.done, summary.failed, summary.total) == (3, 0, 3)
        assert dict(server.counts) == {"a": 1, "b": 1, "c": 1}
    assert sorted(row["id"] for row in read_output(out)) == ["r0", "r1", "r2"]


def test_an_output_file_saved_with_a_byte_order_mark_still_counts_its_first_row_as_answered(tmp_path):
    # an editor's "UTF-8 with BOM" save of the output: its first line was unreadable, so that row was sent (and paid
    # for) again and read_output left it out
    with JobServer() as server:
        src = _write(tmp_path / "in.jsonl", _rows(server, ["a", "b"]))
        out = tmp_path / "out.jsonl"
        jobs.run(src, str(out), workers=1, progress=False)
        out.write_bytes(b"\xef\xbb\xbf" + out.read_bytes())
        again = jobs.run(src, str(out), workers=1, progress=False)
        assert (again.done, again.skipped) == (0, 2) and dict(server.counts) == {"a": 1, "b": 1}
    assert sorted(row["id"] for row in read_output(str(out))) == ["r0", "r1"]
    assert finished_ids(str(out)) == {"r0", "r1"}


def test_an_output_whose_last_row_lost_its_newline_keeps_that_row(tmp_path):
    # an editor saving the output without a final newline: the last row was cut away as a torn line, and its row
    # sent (and paid for) again
    from agenthub.jobs import OutputWriter, output_row

    with JobServer() as server:
        rows = _rows(server, ["a", "b", "c"])
        src = _write(tmp_path / "in.jsonl", rows[:2])
        out = tmp_path / "out.jsonl"
        jobs.run(src, str(out), workers=1, progress=False)
        out.write_bytes(out.read_bytes().rstrip(b"\n"))
        _write(tmp_path / "in.jsonl", rows)
        again = jobs.run(src, str(out), workers=1, progress=False)
        assert (again.done, again.skipped) == (1, 2) and dict(server.counts) == {"a": 1, "b": 1, "c": 1}
    assert [row["id"] for row in read_output(str(out))] == ["r0", "r1", "r2"]
    alone = tmp_path / "alone.jsonl"
    alone.write_bytes(out.read_bytes().rstrip(b"\n"))
    row = jobs.JobRow(id="r3", model="m", messages=[], line=4)
    with OutputWriter(str(alone)) as writer:  # (the writer alone reads the file from its end)
        writer.write(output_row(row, message=None, usage_metadata=None, finish_reason="stop", cost_usd=None,
                                error=None, attempts=1, backend="live"))
    assert [row["id"] for row in read_output(str(alone))] == ["r0", "r1", "r2", "r3"]
    torn = tmp_path / "torn.jsonl"
    torn.write_bytes(out.read_bytes() + b'{"id": "r9", "mod')
    assert finished_ids(str(torn)) == {"r0", "r1", "r2"} and torn.read_bytes() == out.read_bytes()
