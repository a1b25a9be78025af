"""The "Bulk jobs" section (docs/workloads.md) runs as written (its Python example, then its command line), with
the providers' base URLs pointed at a local server."""

import os
import re
import subprocess
import sys

from doc_sections import section
from jobs_server import JobServer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _section():
    text = section("Bulk jobs")
    sub = text.find("\n### ")  # the subsections run in their own tests (batch engines: test_batch_readme)
    return text[:sub] if sub != -1 else text


def test_the_bulk_jobs_example_runs_as_written(tmp_path):
    section = _section()
    python = re.findall(r"```python\n(.*?)```", section, re.S)
    shell = re.findall(r"```sh\n(.*?)```", section, re.S)
    assert len(python) == 1 and len(shell) == 1
    with JobServer() as server:
        env = dict(os.environ, PYTHONPATH=ROOT, DEEPSEEK_BASE_URL=server.base_url, OPENAI_BASE_URL=server.base_url,
                   DEEPSEEK_API_KEY="sk-readme-deepseek-unused", OPENAI_API_KEY="sk-readme-openai-unused")
        first = subprocess.run([sys.executable, "-c", python[0]], cwd=str(tmp_path), env=env, capture_output=True,
                               text=True, timeout=60)
        assert first.returncode == 0, first.stderr
        lines = first.stdout.splitlines()
        assert lines[0] == "3 0 0"
        assert sorted(line.split(" ", 1)[0] for line in lines[1:]) == ["e1", "t1", "t2"]
        assert any(line.startswith("t1 echo: I was charged twice ") for line in lines[1:])
        assert server.counts["embed:I was charged twice"] == 1
        again = subprocess.run([sys.executable, "-c", python[0]], cwd=str(tmp_path), env=env, capture_output=True,
                               text=True, timeout=60)
        assert again.stdout.splitlines()[0] == "0 0 3"  # the rerun of the comment
        argv = shell[0].split()
        assert argv[:3] == ["agenthub", "batch", "run"]
        cli = subprocess.run([sys.executable, "-m", "agenthub"] + argv[1:], cwd=str(tmp_path), env=env,
                             capture_output=True, text=True, timeout=60)
        assert cli.returncode == 0, cli.stderr
        assert "0 done, 0 failed, 3 skipped of 3 rows" in cli.stderr
        assert sum(server.counts.values()) == 3
