"""The "On the providers' batch engines" subsection (docs/workloads.md) runs as written (its Python example, then its
commands), with the providers' base URLs pointed at the batch fakes."""

import json
import os
import re
import shutil
import subprocess
import sys

from doc_sections import section
from batch_fakes import KEYS, BatchFake

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _subsection():
    return section("On the providers' batch engines")


def test_the_batch_engines_example_runs_as_written(tmp_path):
    section = _subsection()
    python = re.findall(r"```python\n(.*?)```", section, re.S)
    shell = re.findall(r"```sh\n(.*?)```", section, re.S)
    assert len(python) == 1 and len(shell) == 1
    with BatchFake(polls=1) as fake:
        env = dict(os.environ, PYTHONPATH=ROOT, OPENAI_BASE_URL=fake.url + "/v1", OPENAI_API_KEY=KEYS["openai"],
                   ANTHROPIC_BASE_URL=fake.url, ANTHROPIC_API_KEY=KEYS["anthropic"])
        first = subprocess.run([sys.executable, "-c", python[0]], cwd=str(tmp_path), env=env, capture_output=True,
                               text=True, timeout=60)
        assert first.returncode == 0, first.stderr
        assert first.stdout.splitlines() == ["primes.jsonl.batch.json", "ended", "2 0 []"]
        state = open(str(tmp_path / "primes.jsonl.batch.json")).read()
        assert KEYS["openai"] not in state and KEYS["anthropic"] not in state
        rows = [json.loads(line) for line in open(str(tmp_path / "primes_out.jsonl"))]
        assert sorted((r["id"], r["backend"]) for r in rows) == [("c1", "anthropic"), ("g1", "openai")]
        assert all(r["message"]["content_items"][0]["text"] == "echo: Name a prime above 100." for r in rows)
        cli_dir = tmp_path / "cli"
        cli_dir.mkdir()
        shutil.copy(str(tmp_path / "primes.jsonl"), str(cli_dir / "primes.jsonl"))
        codes = []
        for line in shell[0].strip().splitlines():
            argv = line.split()
            assert argv[:2] == ["agenthub", "batch"]
            done = subprocess.run([sys.executable, "-m", "agenthub"] + argv[1:], cwd=str(cli_dir), env=env,
                                  capture_output=True, text=True, timeout=60)
            codes.append(done.returncode)
            if argv[2] == "submit":
                assert done.stdout.strip() == "primes.jsonl.batch.json", done.stderr
        assert codes == [0, 0, 0]
        assert len(open(str(cli_dir / "primes_out.jsonl")).read().splitlines()) == 2
