"""The README's Python examples type-check under ``mypy --strict``, as a user's code would.

Every ```python block of README.md is written out as its own module and one mypy run checks
them all (agenthub is read the way an installed, ``py.typed`` package is: errors inside the
library are not reported, its annotations are used).  Skipped when mypy is not installed.
"""

import os
import re
import subprocess
import sys
import tempfile

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

pytest.importorskip("mypy", reason="mypy is not installed (pip install '.[test]')")


def readme_blocks():
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as handle:
        text = handle.read()
    blocks = []
    for match in re.finditer(r"^( *)```python\n(.*?)^\1```", text, re.M | re.S):
        indent = match.group(1)
        code = "".join(line[len(indent):] if line.startswith(indent) else line
                       for line in match.group(2).splitlines(True))
        line = text.count("\n", 0, match.start()) + 2  # the README line of the block's first line of code
        blocks.append((line, code))
    return blocks


def test_readme_has_python_blocks():
    assert len(readme_blocks()) >= 8


#: a module the README's test example imports ("your loop"), as its user would have written it
USER_PROJECT = {"myproject/__init__.py": "", "myproject/agent.py": (
    "from agenthub import AutoLLMClient\n\n\n"
    "def run_agent(client: AutoLLMClient, question: str) -> str:\n"
    "    return question\n")}

#: the harness itself must catch mistakes: a misspelt error field and a thinking level that does not exist
WRONG = (
    "from agenthub import RateLimitError, UniConfig\n"
    "config: UniConfig = {'thinking_level': 'medium', 'prompt_caching': 'enhance', 'tool_choice': 'auto'}\n"
    "bad: UniConfig = {'thinking_level': 'hard'}\n"
    "try:\n"
    "    pass\n"
    "except RateLimitError as error:\n"
    "    wait: float = error.retry_after or 30.0\n"
    "    oops = error.retry_afterr\n")


#: kept between runs (mypy checks what changed), one per Python version
CACHE = os.path.join(tempfile.gettempdir(), "agenthub-mypy-cache-py{}{}".format(*sys.version_info[:2]))


@pytest.fixture(scope="module")
def mypy_output(tmp_path_factory):
    """One mypy --strict run over every README block (module name = README line) and the harness check."""
    tmp = tmp_path_factory.mktemp("mypy")
    src = tmp / "src"
    files = {"readme_line_{:04d}.py".format(line): code for line, code in readme_blocks()}
    files.update(USER_PROJECT)
    files["harness_wrong.py"] = WRONG
    for name, code in files.items():
        path = src / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(code, encoding="utf-8")
    config = tmp / "mypy.ini"
    # agenthub is read as an installed py.typed package is: its annotations count, its own errors are not reported
    config.write_text("[mypy]\nstrict = True\n[mypy-agenthub.*]\nfollow_imports = silent\n", encoding="utf-8")
    env = dict(os.environ, MYPYPATH=os.pathsep.join([ROOT, str(src)]))
    checked = [name for name in sorted(files) if "/" not in name] + ["myproject"]
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(config), "--cache-dir", CACHE,
         "--no-color-output", "--show-error-codes", "--no-error-summary"] + checked,
        cwd=str(src), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300)
    return result.stdout.decode("utf-8", "replace")


def test_every_readme_python_block_passes_mypy_strict(mypy_output):
    readme = [line for line in mypy_output.splitlines() if not line.startswith("harness_wrong.py")]
    assert readme == [], "README blocks fail mypy --strict (module name = README line):\n" + "\n".join(readme)


def test_the_checker_catches_a_wrong_field_and_a_wrong_level(mypy_output):
    wrong = sorted({line.split(": error")[0] for line in mypy_output.splitlines()
                    if line.startswith("harness_wrong.py") and ": error" in line})
    assert wrong == ["harness_wrong.py:3", "harness_wrong.py:8"], mypy_output
