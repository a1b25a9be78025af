"""``agenthub batch run``: exit codes and what it prints, against a local server."""

import json
import os
import signal
import subprocess
import sys
import time

from agenthub.__main__ import main
from agenthub.jobs import read_output

from jobs_server import JobServer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _job(tmp_path, server, texts, model="deepseek-v4-flash"):
    path = tmp_path / "in.jsonl"
    with open(str(path), "w") as f:
        for i, text in enumerate(texts):
            f.write(json.dumps({"id": "q{}".format(i), "model": model, "client_type": "openai-chat",
                                "base_url": server.base_url,
                                "messages": [{"role": "user", "content_items": [{"type": "text", "text": text}]}]})
                    + "\n")
    return str(path)


def test_batch_run_exit_0_then_resume(tmp_path, capsys):
    with JobServer() as server:
        src = _job(tmp_path, server, ["a", "b"])
        out = str(tmp_path / "out.jsonl")
        assert main(["batch", "run", src, "-o", out, "--workers", "2", "--rpm", "6000"]) == 0
        err = capsys.readouterr().err
        assert "agenthub batch run: 2 done, 0 failed, 0 skipped of 2 rows; 30 tokens, $" in err
        assert main(["batch", "run", src, "-o", out, "--no-progress"]) == 0
        assert "0 done, 0 failed, 2 skipped of 2 rows" in capsys.readouterr().err
        assert sum(server.counts.values()) == 2
    assert sorted(r["id"] for r in read_output(out)) == ["q0", "q1"]


def test_batch_run_shows_a_cheap_jobs_cost_not_zero(tmp_path, capsys):
    """Two rows at $0.0000045 each: the progress line and the summary say $0.000009 (as chat's usage line
    prices a turn), not the $0.0000 four decimals made of it.  (A model of one price at every hour: DeepSeek's
    cost depends on the time of day.)"""
    with JobServer() as server:
        src = _job(tmp_path, server, ["a", "b"], model="gpt-4o-mini")
        out = str(tmp_path / "out.jsonl")
        assert main(["batch", "run", src, "-o", out, "--workers", "1", "--rpm", "6000"]) == 0
        err = capsys.readouterr().err
    assert [row["cost_usd"] for row in read_output(out)] == [4.5e-06, 4.5e-06]
    assert "agenthub batch run: 2 done, 0 failed, 0 skipped of 2 rows; 30 tokens, $0.000009; " in err
    assert "agenthub.jobs: 2/2 rows, " in err and ", 30 tokens, $0.000009\n" in err


def test_batch_run_exit_3_when_rows_failed(tmp_path, capsys):
    with JobServer() as server:
        src = _job(tmp_path, server, ["a", "fail:400"])
        out = str(tmp_path / "out.jsonl")
        assert main(["batch", "run", src, "-o", out, "--no-progress"]) == 3
        assert "1 done, 1 failed" in capsys.readouterr().err


def test_a_rerun_exits_3_while_rows_have_error_rows_from_before(tmp_path, capsys):
    # the rerun wrote nothing and exited 0 ("every row has an answer") with q1's error row in the output
    from agenthub import jobs

    with JobServer() as server:
        src = _job(tmp_path, server, ["a", "fail:400", "b"])
        out = str(tmp_path / "out.jsonl")
        with open(src) as f:
            lines = f.readlines()
        with open(src, "w") as f:
            f.writelines(lines[:2])
        assert main(["batch", "run", src, "-o", out, "--no-progress"]) == 3
        capsys.readouterr()
        with open(src, "a") as f:  # (the file grew: the rerun answers the new row, and q1 keeps its error row)
            f.write(lines[2])
        assert main(["batch", "run", src, "-o", out, "--no-progress"]) == 3
        assert capsys.readouterr().err.startswith(
            "agenthub batch run: 1 done, 0 failed, 2 skipped of 3 rows; 15 tokens, $")
        summary = jobs.run(src, out, progress=False)
        assert (summary.done, summary.failed, summary.skipped, summary.failed_total) == (0, 0, 3, 1)
        assert main(["batch", "run", src, "-o", out, "--no-progress", "--retry-failed"]) == 3  # (it fails again)
        assert "0 done, 1 failed, 2 skipped of 3 rows" in capsys.readouterr().err
        assert server.counts == {"a": 1, "fail:400": 2, "b": 1}
        with open(out) as f:
            rows = [json.loads(line) for line in f]
        assert rows[0]["id"] == "q0" and rows[0]["error"] is None
        before = dict(rows[0], error={"type": "ConfigError", "message": "x", "status": None})
        with open(out, "w") as f:  # q0: an error row, then its answer (answered: not an error row of the job)
            f.writelines(json.dumps(row) + "\n" for row in [before] + rows)
        summary = jobs.run(src, out, progress=False)
        assert (summary.skipped, summary.failed_total) == (3, 1)
        assert main(["batch", "run", src, "-o", out, "--no-progress"]) == 3
        err = capsys.readouterr().err
        assert err.startswith("agenthub batch run: 0 done, 0 failed, 3 skipped of 3 rows; 0 tokens, $0.00; ")
        assert err.endswith(" s; 1 rows have error rows in all (--retry-failed sends them again)\n")


def test_batch_run_exit_1_on_a_bad_job_nothing_sent(tmp_path, capsys):
    with JobServer() as server:
        src = _job(tmp_path, server, ["a", "b"])
        with open(src, "a") as f:
            f.write('{"id": "q0", "model": "x", "messages": []}\n')
        assert main(["batch", "run", src, "-o", str(tmp_path / "out.jsonl")]) == 1
        err = capsys.readouterr().err
        assert err.startswith("error: ConfigError: the job file") and "line 3: duplicate id 'q0' (first on line 1)" in err
        assert not server.counts


def test_batch_run_bad_usage_is_exit_2(tmp_path, capsys):
    for argv in (["batch", "run", "in.jsonl"], ["batch", "run", "in.jsonl", "-o", "o", "--workers", "0"],
                 ["batch", "run", "in.jsonl", "-o", "o", "--engine", "spark"]):
        try:
            main(argv)
        except SystemExit as exc:
            assert exc.code == 2
        else:
            raise AssertionError(argv)


def test_ctrl_c_exits_130_and_the_rerun_finishes(tmp_path):
    with JobServer() as server:
        src = _job(tmp_path, server, ["sleep:0.2 {}".format(i) for i in range(20)])
        out = str(tmp_path / "out.jsonl")
        env = dict(os.environ, PYTHONPATH=ROOT, TMPDIR=str(tmp_path))
        child = subprocess.Popen([sys.executable, "-m", "agenthub", "batch", "run", src, "-o", out, "--workers", "2"],
                                 cwd=ROOT, env=env, stderr=subprocess.PIPE)
        try:
            deadline = time.monotonic() + 20
            while not os.path.exists(out) or os.path.getsize(out) == 0:
                assert time.monotonic() < deadline and child.poll() is None
                time.sleep(0.01)
            child.send_signal(signal.SIGINT)
            _, err = child.communicate(timeout=20)
        finally:
            if child.poll() is None:
                child.kill()
                child.wait(5)
        assert child.returncode == 130, err
        assert b"interrupted: no new rows" in err and b"run the same command again" in err
        first = len(read_output(out))
        assert 0 < first < 20 and sum(server.counts.values()) == first
        assert main(["batch", "run", src, "-o", out, "--workers", "4", "--no-progress"]) == 0
        assert set(server.counts.values()) == {1} and len(read_output(out)) == 20


def test_the_positive_number_option_type_is_written_once():
    """Issue 36 item 5: ``jobs`` and ``batch`` options share one positive-number type."""
    import argparse

    import pytest

    from agenthub.jobs import batch_cli, cli

    assert cli._positive is batch_cli.positive
    assert batch_cli.positive(int)("3") == 3 and batch_cli._seconds("0.5") == 0.5
    for bad, words in (("0", "must be a finite number > 0"), ("-1", "must be a finite number > 0"),
                       ("x", "'x' is not a number"), ("nan", "must be a finite number > 0"),
                       ("inf", "must be a finite number > 0 (got inf)"), ("1e999", "(got 1e999)")):  # (inf: sleep
        # raised OverflowError on the first poll of --wait --interval inf)
        with pytest.raises(argparse.ArgumentTypeError) as error:
            batch_cli.positive(float)(bad)
        assert words in str(error.value)
    with pytest.raises(argparse.ArgumentTypeError, match="is not a number of seconds"):
        batch_cli._seconds("soon")
