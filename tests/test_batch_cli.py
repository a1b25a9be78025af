"""``agenthub batch submit|status|fetch|cancel`` against the batch fakes: what they print and their exit codes."""

import json

import pytest

from agenthub.__main__ import main
from agenthub.jobs.jobfile import read_output
from batch_fakes import KEYS, BatchFake, point_at


@pytest.fixture
def fake(monkeypatch):
    with BatchFake(polls=2) as server:
        point_at(monkeypatch, server)
        yield server


def _job(tmp_path, texts, model="claude-sonnet-4-6"):
    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps({"id": "q%d" % i, "model": model, "config": {"max_tokens": 5},
                                        "messages": [{"role": "user", "content_items": [{"type": "text", "text": t}]}]})
                            + "\n" for i, t in enumerate(texts)))
    return str(path)


def test_submit_status_fetch_round_trip(fake, tmp_path, capsys):
    fake.polls = 3  # submit asks once, then status twice
    path = _job(tmp_path, ["one", "two", "FAIL three"])
    assert main(["batch", "submit", path, "--backend", "anthropic"]) == 0
    out, err = capsys.readouterr()
    state = out.strip()
    assert state == path + ".batch.json" and "anthropic claude-sonnet-4-6 msgbatch_" in err
    assert KEYS["anthropic"] not in out + err
    assert main(["batch", "status", state]) == 4  # not ended yet
    assert "in_progress" in capsys.readouterr()[0]
    assert main(["batch", "status", state, "--json"]) == 0
    status = json.loads(capsys.readouterr()[0])
    assert status["state"] == "ended" and status["done"] is True and status["batches"][0]["rows"] == 3
    output = str(tmp_path / "out.jsonl")
    assert main(["batch", "fetch", state, "-o", output]) == 3  # one error row
    err = capsys.readouterr()[1]
    assert "2 answers and 1 error rows written" in err
    assert sorted(r["id"] for r in read_output(output)) == ["q0", "q1", "q2"]
    assert main(["batch", "fetch", state, "-o", output]) == 3
    assert "0 answers and 0 error rows written to {}, 3 already there".format(output) in capsys.readouterr()[1]


def test_fetch_wait_and_rows_without_a_result(fake, tmp_path, capsys):
    fake.run_only = 1
    path = _job(tmp_path, ["a", "b"])
    assert main(["batch", "submit", path, "--backend", "auto"]) == 0
    state = capsys.readouterr()[0].strip()
    output = str(tmp_path / "out.jsonl")
    assert main(["batch", "fetch", state, "-o", output, "--wait", "--interval", "0.01", "--timeout", "10"]) == 5
    err = capsys.readouterr()[1]
    assert "1 rows never ran" in err and "agenthub batch run {} -o {}".format(path, output) in err
    assert main(["batch", "run", path, "-o", output, "--no-progress"]) == 0
    assert sorted(r["id"] for r in read_output(output)) == ["q0", "q1"]


def test_cancel_and_a_fetch_of_a_running_job(fake, tmp_path, capsys):
    fake.polls = 100
    path = _job(tmp_path, ["a"], model="gpt-4.1-mini")
    assert main(["batch", "submit", path, "--backend", "openai"]) == 0
    state = capsys.readouterr()[0].strip()
    assert main(["batch", "fetch", state, "-o", str(tmp_path / "out.jsonl")]) == 4
    assert "not every batch has ended" in capsys.readouterr()[1]
    assert main(["batch", "cancel", state]) == 0
    assert "cancelling" in capsys.readouterr()[0]
    assert main(["batch", "status", state]) == 0
    assert "cancelled" in capsys.readouterr()[0]


def test_a_refused_submission_exits_1_and_sends_nothing(fake, tmp_path, capsys):
    path = _job(tmp_path, ["a"], model="gemini-2.5-flash")
    assert main(["batch", "submit", path, "--backend", "openai"]) == 1
    err = capsys.readouterr()[1]
    assert "nothing was sent" in err and "line 1 ('q0')" in err
    assert fake.requests == []
    with pytest.raises(SystemExit) as info:
        main(["batch", "submit", path, "--backend", "nope"])
    assert info.value.code == 2
