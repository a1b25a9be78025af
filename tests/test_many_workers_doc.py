"""docs/many-workers.md: its code blocks run as written (each Python block in a fresh interpreter, the
provider's base URL pointed at a local server, the store at a temporary SQLite file or a local
redis-server; the serve config through make_app)."""

import json
import os
import re
import subprocess
import sys

import pytest

from jobs_server import JobServer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _blocks(language):
    with open(os.path.join(ROOT, "docs", "many-workers.md"), encoding="utf-8") as handle:
        text = handle.read()
    return re.findall(r"```{}\n(.*?)```".format(language), text, re.S)


def _block(needle):
    (code,) = [block for block in _blocks("python") if needle in block]
    return code


def _run(code, server, **env):
    environ = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.path.join(ROOT, "tests"),
                   DEEPSEEK_BASE_URL=server.base_url, DEEPSEEK_API_KEY="sk-doc-test-0123456789", **env)
    done = subprocess.run([sys.executable, "-c", code], env=environ, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_every_python_block_is_tested():
    assert len(_blocks("python")) == 4


def test_the_shared_limiter_and_budget_block(store_url):
    code = _block("nightly-eval")
    with JobServer() as server:
        first = _run(code, server, AGENTHUB_STORE=store_url).splitlines()
        second = _run(code, server, AGENTHUB_STORE=store_url).splitlines()
        assert server.counts["hello"] == 2
    assert first[0] == second[0] == "echo: hello"
    spent_once = float(first[1].split()[1])
    spent_twice = float(second[1].split()[1])
    assert spent_once > 0 and spent_twice == pytest.approx(2 * spent_once, rel=1e-3)  # one account, two processes


def test_the_several_machines_block(tmp_path, store_url):
    code = _block("JOB_INPUT")
    with JobServer() as server:
        src = tmp_path / "in.jsonl"
        src.write_text("".join(json.dumps({"id": "m{}".format(i), "model": "deepseek-v4-flash", "messages": [
            {"role": "user", "content_items": [{"type": "text", "text": "machine {}".format(i)}]}],
            "config": {"max_tokens": 8}}) + "\n" for i in range(6)), encoding="utf-8")
        out = _run(code, server, AGENTHUB_STORE=store_url, JOB_INPUT=str(src), JOB_OUTPUT=str(tmp_path / "out.jsonl"))
        assert sum(server.counts.values()) == 6
    assert out.split() == ["6", "0"]


def test_the_cache_block(tmp_path):
    code = _block("ResponseCache")
    with JobServer() as server:
        out = _run(code, server, CACHE_DIR=str(tmp_path / "answers"))
        assert server.counts["What is 2 + 2?"] == 2  # the first call and the bypassed one
    assert out.split() == ["1", "1"]


def test_the_ray_block(tmp_path):
    pytest.importorskip("ray")
    pytest.importorskip("ray.data")
    code = _block("ray.init")
    with JobServer(rpm=600) as server:
        out = _run(code, server, AGENTHUB_STORE="sqlite:///" + str(tmp_path / "ray.db"))
        assert sum(server.counts.values()) == 8 and [s for _, s in server.statuses].count(429) == 0
    assert out.strip() == str(sorted("echo: row {}".format(i) for i in range(8)))


def test_the_serve_config_block(tmp_path):
    from agenthub.apps.server import make_app

    (config,) = _blocks("json")
    environ = {"DEEPSEEK_API_KEY": "sk-doc-test-0123456789", "AGENTHUB_STORE": "sqlite:///" + str(tmp_path / "s.db"),
               "AGENTHUB_SERVER_KEY": "server-key-0123456789"}
    app = make_app(json.loads(config), environ=environ)
    client = app.models["fast"].client
    assert (client.limiter.rpm, client.limiter.key, client.budget.max_usd, client.budget.key) == (
        500.0, "deepseek", 100.0, "serve")
