"""agenthub.ray on a local Ray (num_cpus=2) against a local server; skipped where ray is not installed
(run with /work/venv/312ray/bin/python)."""

import json
import os

import pytest

ray = pytest.importorskip("ray")
pytest.importorskip("ray.data")

from agenthub import jobs  # noqa: E402
from agenthub.jobs import read_output  # noqa: E402
from agenthub.ray import Predictor, to_row  # noqa: E402

from jobs_server import JobServer  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Ray's runtime keeps its connections, event fds and log files for the process, past ray.shutdown()
pytestmark = pytest.mark.fds_kept("Ray's runtime")


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": ROOT}})
    try:
        yield
    finally:
        ray.shutdown()


def _user(text):
    return {"role": "user", "content_items": [{"type": "text", "text": text}]}


def test_predictor_in_map_batches(local_ray):
    with JobServer() as server:
        rows = [{"id": "p{}".format(i), "messages": [_user("ray {}".format(i))], "config": {"max_tokens": 8}}
                for i in range(6)]
        rows[5]["model"] = "deepseek-v4-pro"  # a row's own model wins
        rows.append({"id": "bad", "messages": [], "config": {}})
        ds = ray.data.from_items(rows).map_batches(
            Predictor, fn_constructor_kwargs={"model": "deepseek-v4-flash", "client_type": "openai-chat",
                                              "base_url": server.base_url, "workers": 2, "rpm": 6000, "shares": 2},
            concurrency=2, batch_size=2)
        results = {r["id"]: to_row(r) for r in ds.take_all()}
        assert sorted(results) == ["bad", "p0", "p1", "p2", "p3", "p4", "p5"]
        assert all(server.counts["ray {}".format(i)] == 1 for i in range(6)) and sum(server.counts.values()) == 6
        assert server.models["ray 0"] == "deepseek-v4-flash" and server.models["ray 5"] == "deepseek-v4-pro"
    row = results["p3"]
    assert list(row) == ["id", "model", "message", "usage_metadata", "finish_reason", "cost_usd", "error",
                         "attempts", "backend", "finished_at"]
    assert row["message"]["content_items"] == [{"type": "text", "text": "echo: ray 3"}]
    assert (row["finish_reason"], row["error"], row["attempts"], row["backend"]) == ("stop", None, 1, "ray")
    assert row["usage_metadata"]["prompt_tokens"] == 10 and row["cost_usd"] > 0
    assert results["p5"]["model"] == "deepseek-v4-pro"
    assert results["bad"]["error"]["type"] == "ConfigError" and results["bad"]["message"] is None


def test_run_with_engine_ray_writes_resumable_rows(local_ray, tmp_path):
    with JobServer() as server:
        src = str(tmp_path / "in.jsonl")
        with open(src, "w") as f:
            for i in range(8):
                f.write(json.dumps({"id": "j{}".format(i), "model": "deepseek-v4-flash", "client_type": "openai-chat",
                                    "base_url": server.base_url, "messages": [_user("job {}".format(i))]}) + "\n")
        out = str(tmp_path / "out.jsonl")
        with open(out, "w") as f:  # j0 already answered by an earlier run
            f.write(json.dumps({"id": "j0", "model": "deepseek-v4-flash", "message": None, "usage_metadata": None,
                                "finish_reason": "stop", "cost_usd": None, "error": None, "attempts": 1,
                                "backend": "live", "finished_at": "2026-12-01T00:00:00Z"}) + "\n")
        summary = jobs.run(src, out, engine="ray", workers=4, rpm=6000, progress=False, actors=2)
        assert (summary.done, summary.failed, summary.skipped, summary.total) == (7, 0, 1, 8)
        assert summary.tokens == 7 * 15 and summary.cost_usd > 0
        assert server.counts["job 0"] == 0 and all(server.counts["job {}".format(i)] == 1 for i in range(1, 8))
        again = jobs.run(src, out, engine="ray", progress=False)
        assert (again.done, again.skipped) == (0, 8) and sum(server.counts.values()) == 7
    rows = {r["id"]: r for r in read_output(out)}
    assert sorted(rows) == ["j{}".format(i) for i in range(8)]
    assert rows["j4"]["backend"] == "ray" and rows["j4"]["message"]["content_items"][0]["text"] == "echo: job 4"


def test_actors_with_a_limiter_store_draw_from_one_pace(local_ray, tmp_path):
    rpm = 600  # 10 a second, enforced by the server as a token bucket of one second's worth
    with JobServer(rpm=rpm) as server:
        url = "sqlite:///" + str(tmp_path / "pace.db")
        rows = [{"id": "s{}".format(i), "messages": [_user("shared {}".format(i))], "config": {"max_tokens": 8}}
                for i in range(40)]
        ds = ray.data.from_items(rows).map_batches(
            Predictor, fn_constructor_kwargs={"model": "deepseek-v4-flash", "client_type": "openai-chat",
                                              "base_url": server.base_url, "workers": 4, "rpm": rpm,
                                              "limiter_store": url, "max_retries": 0},
            concurrency=2, batch_size=8)
        results = [to_row(r) for r in ds.take_all()]
        ok = sorted(t for t, status in server.statuses if status == 200)
        late_429 = [t for t, status in server.statuses if status == 429 and t - ok[0] > 1.0]
    # both actors at the full rpm, each alone, would send twice the rate: one shared pace sends none too many
    assert len(results) == 40 and all(r["error"] is None for r in results)
    assert late_429 == [] and len(ok) == 40


def test_run_with_engine_ray_takes_a_limiter_store(local_ray, tmp_path):
    with JobServer(rpm=1200) as server:
        src = str(tmp_path / "in.jsonl")
        with open(src, "w") as f:
            for i in range(12):
                f.write(json.dumps({"id": "k{}".format(i), "model": "deepseek-v4-flash", "client_type": "openai-chat",
                                    "base_url": server.base_url, "messages": [_user("store {}".format(i))]}) + "\n")
        out = str(tmp_path / "out.jsonl")
        summary = jobs.run(src, out, engine="ray", workers=4, rpm=1200, progress=False, actors=2, max_retries=0,
                           limiter_store="sqlite:///" + str(tmp_path / "pace.db"), limiter_key="job")
        assert (summary.done, summary.failed) == (12, 0)
        assert [s for _, s in server.statuses].count(429) == 0
