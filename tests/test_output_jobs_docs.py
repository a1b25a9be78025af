"""docs/typed-output.md's "Jobs and batch engines" and "Command line" examples run as written against the
batch fake (tests/batch_fakes.py: the providers' batch engines and their live endpoints), in real processes,
and print what the page says."""

import json
import os
import re
import shlex
import subprocess
import sys

from batch_fakes import KEYS, BatchFake, default_answer, last_user_text
from doc_sections import section

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _answer(provider, api, body):
    """Ann's age comes as a word first (so it is re-asked), then as a number; Bo's at once."""
    text = last_user_text(provider, body)
    if text.startswith("The answer did not match"):
        value = {"name": "Ann", "age": 40}  # type: object
    elif text == "Bo is 7.":
        value = {"name": "Bo", "age": 7}
    else:
        value = {"name": "Ann", "age": "forty"}
    status, doc = default_answer(provider, api, body)
    doc["output"][0]["content"][0]["text"] = json.dumps(value)
    return status, doc


def _env(server):
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
    env.update(PYTHONPATH=ROOT, OPENAI_API_KEY=KEYS["openai"], OPENAI_BASE_URL=server.url + "/v1", NO_PROXY="*",
               AGENTHUB_LOG_PROMPTS="0", PYTHONIOENCODING="utf-8")
    return env


def test_the_jobs_and_batch_example_runs_as_written(tmp_path):
    (code,) = re.findall(r"```python\n(.*?)```", section("Jobs and batch engines", "docs/typed-output.md"), re.S)
    with BatchFake(answer=_answer, polls=1) as server:
        done = subprocess.run([sys.executable, "-c", code], env=_env(server), cwd=str(tmp_path),
                              capture_output=True, text=True, timeout=120)
        batches = len(server.batches)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "p1 2 {'name': 'Ann', 'age': 40}",
        "p2 1 {'name': 'Bo', 'age': 7}",
        "[('p1', 2), ('p2', 1)]",
    ]
    assert batches == 2  # the rows, then p1's re-ask round


def test_the_command_line_example_runs_as_written(tmp_path):
    (block,) = re.findall(r"```sh\n(.*?)```", section("Command line", "docs/typed-output.md"), re.S)
    (tmp_path / "person.json").write_text(json.dumps(
        {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
         "required": ["name", "age"]}), encoding="utf-8")
    lines = block.splitlines()
    with BatchFake(answer=_cli_answer, polls=1) as server:
        for n, line in enumerate(lines):
            if not line.startswith("$ "):
                continue
            argv = shlex.split(line[2:])
            assert argv[0] == "agenthub"
            done = subprocess.run([sys.executable, "-m", "agenthub"] + argv[1:], env=_env(server), cwd=str(tmp_path),
                                  capture_output=True, text=True, timeout=60)
            assert done.returncode == 0, done.stderr
            assert done.stdout == lines[n + 1] + "\n"


def _cli_answer(provider, api, body):
    text = last_user_text(provider, body)
    value = {"name": "Ann", "age": 40} if text == "Ann is forty." else \
        {"name": "Ann", "age": 40, "hobbies": ["chess"], "nick": None}
    status, doc = default_answer(provider, api, body)
    doc["output"][0]["content"][0]["text"] = json.dumps(value)
    return status, doc
