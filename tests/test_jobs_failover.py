"""agenthub.jobs.run(..., fallbacks=[...]): the primary endpoint is down, every row is answered by the
fallback; each output row keeps its own model, and JobSummary.routes says which endpoint answered."""

import json
import os
import threading

import pytest

from agenthub import AutoLLMClient, jobs
from agenthub.errors import ConfigError
from faultserver import FaultServer, error_body, status, send

JSON = {"Content-Type": "application/json"}


pytestmark = pytest.mark.usefixtures("fresh_breakers")  # (conftest: every circuit closed before and after)


def _job(path, primary_url, count):
    with open(str(path), "w") as f:
        for i in range(count):
            f.write(json.dumps({"id": "r{}".format(i), "model": "primary-model", "client_type": "openai-chat",
                                "base_url": primary_url + "/v1", "config": {"max_tokens": 8},
                                "messages": [{"role": "user", "content_items": [{"type": "text",
                                                                                 "text": "q{}".format(i)}]}]}) + "\n")


def test_a_down_primary_is_answered_by_the_fallback_row_by_row(tmp_path):
    rows = 5
    with FaultServer(default=[status(503, JSON, framing="length"), send(error_body("unavailable"))]) as primary, \
            FaultServer() as backup:
        _job(tmp_path / "in.jsonl", primary.url, rows)
        backup_client = AutoLLMClient("backup-model", client_type="openai-chat", base_url=backup.url + "/v1",
                                      api_key="sk-backup-0002", max_retries=0)
        summary = jobs.run(str(tmp_path / "in.jsonl"), str(tmp_path / "out.jsonl"), workers=1, progress=False,
                           fallbacks=[backup_client], max_retries=0)
        out = sorted(jobs.read_output(str(tmp_path / "out.jsonl")), key=lambda row: row["id"])
        primary_posts = [r for r in primary.requests if r.method == "POST"]
        backup_bodies = [json.loads(r.body) for r in backup.requests]
    assert (summary.done, summary.failed, summary.skipped) == (rows, 0, 0)
    assert summary.routes == {"backup-model (openai-chat, 127.0.0.1:{})".format(backup.port): rows}
    assert [row["id"] for row in out] == ["r{}".format(i) for i in range(rows)]
    for row in out:
        assert row["model"] == "primary-model" and row["backend"] == "live" and row["error"] is None
        # the sends of the row's call, every route counted: the primary's one and the backup's (the primary's
        # circuit is open from row 4 on: the backup's alone)
        assert row["attempts"] == (2 if row["id"] in ("r0", "r1", "r2") else 1)
        assert row["route"] == {"model": "backup-model", "client_type": "openai-chat",
                                "host": "127.0.0.1:{}".format(backup.port)}
        assert [i["text"] for i in row["message"]["content_items"]] == ["ok"]
    # the primary's circuit opened after its 3 failures (the breaker's default): rows 4 and 5 skipped it
    assert len(primary_posts) == 3
    assert [b["model"] for b in backup_bodies] == ["backup-model"] * rows
    assert sorted(b["messages"][-1]["content"] for b in backup_bodies) == ["q{}".format(i) for i in range(rows)]


def test_routes_name_the_rows_own_endpoint_when_it_answers(tmp_path):
    with FaultServer() as primary, FaultServer() as backup:
        _job(tmp_path / "in.jsonl", primary.url, 3)
        summary = jobs.run(str(tmp_path / "in.jsonl"), str(tmp_path / "out.jsonl"), workers=2, progress=False,
                           fallbacks=[AutoLLMClient("backup-model", client_type="openai-chat",
                                                    base_url=backup.url + "/v1", api_key="sk-backup-0002")])
        assert backup.requests == []
    # host:port: the port is not the scheme's (issue 29 C5)
    assert summary.done == 3 and summary.routes == {"primary-model (openai-chat, 127.0.0.1:{})".format(primary.port): 3}


def test_fallbacks_are_checked_before_anything_is_sent(tmp_path):
    _job(tmp_path / "in.jsonl", "http://127.0.0.1:9", 1)
    with pytest.raises(ConfigError, match="fallbacks must be a list"):
        jobs.run(str(tmp_path / "in.jsonl"), str(tmp_path / "out.jsonl"), fallbacks="backup-model")
    with pytest.raises(ConfigError, match="fallbacks= is for the runner's own clients: with client_factory"):
        jobs.run(str(tmp_path / "in.jsonl"), str(tmp_path / "out.jsonl"), fallbacks=["backup-model"],
                 client_factory=lambda *route: None)
    with pytest.raises(ConfigError, match=r"(?s)1 route\(s\) of the job cannot be used.*each fallbacks entry"):
        jobs.run(str(tmp_path / "in.jsonl"), str(tmp_path / "out.jsonl"), fallbacks=[3])
    assert not (tmp_path / "out.jsonl").exists() or (tmp_path / "out.jsonl").read_text() == ""


@pytest.mark.fds_kept("Ray's runtime")
def test_on_ray_every_rows_client_gets_the_fallbacks_too(tmp_path):
    ray = pytest.importorskip("ray")  # run with /work/venv/312ray/bin/python
    pytest.importorskip("ray.data")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, runtime_env={"env_vars": {"PYTHONPATH": root}})
    try:
        with FaultServer(default=[status(503, JSON, framing="length"), send(error_body("unavailable"))]) as primary, \
                FaultServer() as backup:
            _job(tmp_path / "in.jsonl", primary.url, 4)
            fallback = AutoLLMClient("backup-model", client_type="openai-chat", base_url=backup.url + "/v1",
                                     api_key="sk-backup-0002", max_retries=0)
            summary = jobs.run(str(tmp_path / "in.jsonl"), str(tmp_path / "out.jsonl"), engine="ray", workers=2,
                               progress=False, fallbacks=[fallback])
            out = list(jobs.read_output(str(tmp_path / "out.jsonl")))
            backup_bodies = [json.loads(r.body) for r in backup.requests]
    finally:
        ray.shutdown()
    assert (summary.done, summary.failed) == (4, 0) and summary.routes == {}
    assert sorted(row["id"] for row in out) == ["r0", "r1", "r2", "r3"]
    assert all(row["model"] == "primary-model" and row["error"] is None and row["backend"] == "ray" for row in out)
    assert all([i["text"] for i in row["message"]["content_items"]] == ["ok"] for row in out)
    assert sorted(b["messages"][-1]["content"] for b in backup_bodies) == ["q0", "q1", "q2", "q3"]


def test_a_row_answered_by_the_fallback_is_priced_as_the_model_that_answered(tmp_path, monkeypatch):
    """Issue 29 A2: the row keeps its own model; its cost_usd is the answering model's price, its route says
    who answered (before, the row was priced as the primary: 21x too high here)."""
    from agenthub import cost

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-primary")
    with FaultServer(default=[status(503, JSON, framing="length"), send(error_body("unavailable"))]) as primary, \
            FaultServer() as backup:
        with open(str(tmp_path / "in.jsonl"), "w") as f:
            f.write(json.dumps({"id": "r0", "model": "claude-sonnet-4-6", "client_type": "anthropic",
                                "base_url": primary.url, "config": {"max_tokens": 8},
                                "messages": [{"role": "user", "content_items": [{"type": "text", "text": "q"}]}]})
                    + "\n")
        fallback = AutoLLMClient("deepseek-v4-flash", client_type="openai-chat", base_url=backup.url + "/v1",
                                 api_key="sk-backup-0002", max_retries=0)
        jobs.run(str(tmp_path / "in.jsonl"), str(tmp_path / "out.jsonl"), workers=1, progress=False,
                 fallbacks=[fallback], max_retries=0)
        (row,) = jobs.read_output(str(tmp_path / "out.jsonl"))
    assert row["error"] is None and row["model"] == "claude-sonnet-4-6"
    assert row["route"] == {"model": "deepseek-v4-flash", "client_type": "openai-chat",
                            "host": "127.0.0.1:{}".format(backup.port)}
    assert row["cost_usd"] == cost("deepseek-v4-flash", row["usage_metadata"])
    assert row["cost_usd"] != cost("claude-sonnet-4-6", row["usage_metadata"])


def test_rows_starting_during_the_primarys_pause_go_to_the_fallback_at_once(tmp_path):
    """Issue 37 B9 (differential D3): the primary's 429 says Retry-After: 60; the rows that start while that
    pause holds it go to the fallback at once, nothing sent to the primary (before: each waited the 60 s)."""
    busy = [status(429, dict(JSON, **{"Retry-After": "60"}), framing="length"), send(error_body("rate limited"))]
    rows = 4
    with FaultServer(default=busy) as primary, FaultServer() as backup:
        _job(tmp_path / "in.jsonl", primary.url, rows)
        backup_client = AutoLLMClient("backup-model", client_type="openai-chat", base_url=backup.url + "/v1",
                                      api_key="sk-backup-0002", max_retries=0)
        result = {}

        def run():
            result["summary"] = jobs.run(str(tmp_path / "in.jsonl"), str(tmp_path / "out.jsonl"), workers=1,
                                         progress=False, fallbacks=[backup_client], max_retries=0)

        worker = threading.Thread(target=run, daemon=True)
        worker.start()
        worker.join(40)  # generous against the noise, far below the 60 s pause each waited out before
        assert not worker.is_alive(), "a row waited out the primary's pause"
        primary_posts = [r for r in primary.requests if r.method == "POST"]
    summary = result["summary"]
    assert (summary.done, summary.failed) == (rows, 0)
    assert len(primary_posts) == 1
    out = sorted(jobs.read_output(str(tmp_path / "out.jsonl")), key=lambda row: row["id"])
    # the first row's call sent twice (the primary's 429, the backup); the others once: the skip sent nothing
    assert [row["attempts"] for row in out] == [2, 1, 1, 1]
    assert all(row["route"]["model"] == "backup-model" for row in out)
