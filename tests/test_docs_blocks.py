"""Every ```python block of README.md and docs/**/*.md RUNS, as printed, against a local fake (issue 29 B1).

Each block is written to a file of its own (``README.md_line_0043.py``: the doc and the line of the block's
first line of code) and run by this Python in an empty folder, with every provider's base URL pointed at
one local server (``docs_fake.DocsFake``: the project's recordings for each protocol, token counts,
embeddings, model lists) and a made-up key in every key variable the docs name.  The blocks'
own ``127.0.0.1:8787`` (``agenthub serve``'s default port) is the fake too.  A block passes when it exits 0
and every request it made had an answer (none of the fake's 404s).

A block may say how it is run instead, on the line before its fence (an HTML comment, invisible on GitHub):
- ``<!-- run by tests/test_x.py -->``: another test runs it (with a server of its own); the file must exist;
- ``<!-- not run: why -->``: it cannot run here (a live key, a cloud's own credentials); kept few.
Every other block runs here, also when a test of its own runs it with sharper assertions.

A block whose first line is ``# tests/<name>.py`` is a pytest module: it is written at that path, beside a
small ``myproject/agent.py`` (the tool loop it imports), and run by pytest twice, recording from the fake
(``AGENTHUB_RECORD=1``) and then replaying with the fake stopped.
"""

import json
import os
import re
import subprocess
import sys

import pytest

from doc_sections import doc_files, section
from docs_fake import DocsFake

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

DOCS = doc_files()  # README.md and docs/**/*.md
MARKER = re.compile(r"<!--\s*(run by|not run:)\s*(.*?)\s*-->")
#: at most this many blocks may be "not run": each needs a reason a reader accepts
MAX_NOT_RUN = 4


class Block(object):
    def __init__(self, doc, line, code, heading, marker):
        self.doc, self.line, self.code, self.heading, self.marker = doc, line, code, heading, marker

    @property
    def name(self):
        return "{}:{}".format(self.doc, self.line)


def _blocks(doc):
    with open(os.path.join(ROOT, doc), encoding="utf-8") as handle:
        text = handle.read()
    found = []
    for match in re.finditer(r"^( *)```python\n(.*?)^\1```", text, re.M | re.S):
        indent = match.group(1)
        code = "".join(line[len(indent):] if line.startswith(indent) else line
                       for line in match.group(2).splitlines(True))
        line = text.count("\n", 0, match.start()) + 2  # the doc's line of the block's first line of code
        before = [row for row in text[:match.start()].splitlines() if row.strip()]
        marker = MARKER.search(before[-1]) if before else None
        headings = re.findall(r"^#{1,6} .*$", text[:match.start()], re.M)
        found.append(Block(doc, line, code, headings[-1] if headings else "", marker))
    return found


ALL = [block for doc in DOCS for block in _blocks(doc)]


def _runner_elsewhere(block):
    """The test file that runs this block, or None."""
    if block.marker is not None and block.marker.group(1) == "run by":
        return block.marker.group(2).split()[0].split("::")[0]
    return None


def _not_run(block):
    if block.marker is not None and block.marker.group(1) == "not run:":
        return block.marker.group(2)
    return None


HERE_RUN = [b for b in ALL if _runner_elsewhere(b) is None and _not_run(b) is None]


def _env(fake, home):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTHUB_", "AWS_", "AZURE_", "GOOGLE_"))
           and not k.endswith(("_API_KEY", "_BASE_URL"))}
    url = fake.url
    env.update(PYTHONPATH=ROOT, HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"),
               XDG_DATA_HOME=str(home / ".local"), PYTHONDONTWRITEBYTECODE="1")
    for vendor in ("OPENAI", "ANTHROPIC", "GEMINI", "DEEPSEEK", "OPENROUTER", "MOONSHOT", "ZAI", "DASHSCOPE",
                   "MINIMAX", "XAI", "MISTRAL", "GROQ", "TOGETHER", "FIREWORKS"):
        env[vendor + "_API_KEY"] = "sk-docs-{}-0000".format(vendor.lower())
        env[vendor + "_BASE_URL"] = url + "/v1" if vendor == "OPENAI" else url
    env.update(AZURE_OPENAI_ENDPOINT=url, AZURE_OPENAI_API_KEY="azure-docs-0000", MY_ENTRA_TOKEN="entra-docs-0000",
               AWS_BEARER_TOKEN_BEDROCK="bedrock-docs-0000", AWS_REGION="us-east-1",
               AWS_ENDPOINT_URL_BEDROCK_RUNTIME=url, GATEWAY_KEY="gw-docs-0000",
               AGENTHUB_SERVER_KEY="serve-docs-0000", GOOGLE_CLOUD_PROJECT="docs-project")
    # application default credentials of the kind `gcloud auth application-default login` writes: read without
    # the network (a token would only be asked for when a request is sent, and no Vertex block sends one)
    adc = home / "adc.json"
    adc.write_text(json.dumps({"type": "authorized_user", "client_id": "docs.apps.googleusercontent.com",
                               "client_secret": "docs-0000", "refresh_token": "docs-0000"}), encoding="utf-8")
    env["GOOGLE_APPLICATION_CREDENTIALS"] = str(adc)
    return env


def _code(block, fake):
    return block.code.replace("http://127.0.0.1:8787", fake.url)


#: the loop the README's test example imports ("your loop: takes a client, returns the final answer")
AGENT = '''\
from typing import List

from agenthub import AutoLLMClient, ToolCallItem, ToolSchema, UniMessage

TOOLS: List[ToolSchema] = [{"name": "get_weather", "parameters": {"type": "object", "properties": {
    "city": {"type": "string"}}, "required": ["city"]}}]


def run_agent(client: AutoLLMClient, question: str) -> str:
    message: UniMessage = {"role": "user", "content_items": [{"type": "text", "text": question}]}
    while True:
        answer = client.response_stateful(message, {"tools": TOOLS})
        calls: List[ToolCallItem] = [i for i in answer["content_items"] if i["type"] == "tool_call"]
        if not calls:
            return "".join(i["text"] for i in answer["content_items"] if i["type"] == "text")
        message = {"role": "user", "content_items": [{"type": "tool_result", "tool_call_id": c["tool_call_id"],
                   "text": "18 °C, sunny"} for c in calls]}
'''


def _tail(text, lines=25):
    return "\n".join(text.strip().splitlines()[-lines:])


def _failure(block, what, output):
    return ("{} (section {!r}) {}:\n{}\n(a block that needs a server of its own: put <!-- run by tests/test_x.py --> "
            "on the line before its fence; one that needs a live key: <!-- not run: why -->)").format(
                block.name, block.heading, what, _tail(output))


def _run_pytest_module(block, fake, tmp_path):
    first = block.code.splitlines()[0]
    relative = first[1:].strip()
    target = tmp_path / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(_code(block, fake), encoding="utf-8")
    (tmp_path / "myproject").mkdir(exist_ok=True)
    (tmp_path / "myproject" / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / "myproject" / "agent.py").write_text(AGENT, encoding="utf-8")
    env = _env(fake, tmp_path)
    env["PYTHONPATH"] = os.pathsep.join([ROOT, str(tmp_path)])
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", relative]
    recorded = subprocess.run(argv, cwd=str(tmp_path), env=dict(env, AGENTHUB_RECORD="1"),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
    assert recorded.returncode == 0, _failure(block, "fails under pytest, recording", recorded.stdout.decode())
    asked = len(fake.requests)
    fake.close()  # the replay must not need it
    replayed = subprocess.run(argv, cwd=str(tmp_path), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              timeout=120)
    assert replayed.returncode == 0, _failure(block, "fails under pytest, replaying", replayed.stdout.decode())
    assert asked >= 2 and len(fake.requests) == asked


@pytest.mark.parametrize("block", HERE_RUN, ids=[b.name for b in HERE_RUN])
def test_the_block_runs_as_printed(block, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    work = tmp_path / "work"
    work.mkdir()
    with DocsFake() as fake:
        if re.match(r"# tests/\S+\.py$", block.code.splitlines()[0]):
            return _run_pytest_module(block, fake, work)
        script = work / "{}_line_{:04d}.py".format(block.doc.replace("/", "_"), block.line)
        script.write_text(_code(block, fake), encoding="utf-8")
        try:
            done = subprocess.run([sys.executable, script.name], cwd=str(work), env=_env(fake, home),
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=90)
        except subprocess.TimeoutExpired as exc:
            pytest.fail(_failure(block, "did not finish in 90 s", (exc.output or b"").decode("utf-8", "replace")))
        output = done.stdout.decode("utf-8", "replace")
        # a traceback names the script's line: say the doc's line too
        output = re.sub(r'File ".*?{}", line (\d+)'.format(re.escape(script.name)),
                        lambda m: "{} line {}".format(block.doc, block.line + int(m.group(1)) - 1), output)
        assert done.returncode == 0, _failure(block, "exits {}".format(done.returncode), output)
        assert fake.unknown == [], _failure(block, "asked what the fake cannot answer: {}".format(fake.unknown),
                                            output)


def test_the_runner_finds_the_blocks():
    assert sum(1 for b in ALL if b.doc == "README.md") >= 7  # the front page: one example per capability
    assert sum(1 for b in ALL if b.doc != "README.md") >= 25
    assert len(HERE_RUN) >= 25


def test_blocks_not_run_here_say_why_and_are_few():
    not_run = [(b.name, _not_run(b)) for b in ALL if _not_run(b) is not None]
    assert len(not_run) <= MAX_NOT_RUN, not_run
    assert all(len(reason) > 10 for _, reason in not_run), not_run
    for block in ALL:
        elsewhere = _runner_elsewhere(block)
        if elsewhere is not None:
            assert os.path.isfile(os.path.join(ROOT, elsewhere)), "{} names {}, which does not exist".format(
                block.name, elsewhere)


def _user_facing_files():
    files = [os.path.join(ROOT, doc) for doc in DOCS]
    for folder, _, names in os.walk(os.path.join(ROOT, "agenthub")):
        files += [os.path.join(folder, name) for name in names if name.endswith(".py")]
    return files


def test_install_hints_work_from_a_checkout():
    """agenthub is installed from its checkout, not from a registry: an extra is ``pip install '.[vertex]'``
    (issue 29 B3); ``pip install 'agenthub[vertex]'`` fails with "No matching distribution"."""
    wrong = []
    for path in _user_facing_files():
        with open(path, encoding="utf-8") as handle:
            for number, line in enumerate(handle, 1):
                if re.search(r"agenthub\[[\w,]+\]", line):
                    wrong.append("{}:{}: {}".format(os.path.relpath(path, ROOT), number, line.strip()))
    assert wrong == []


def test_the_missing_extra_errors_say_how_to_install_it_from_a_checkout(monkeypatch):
    from agenthub.errors import ConfigError
    from agenthub.hosts import gcp

    monkeypatch.setitem(sys.modules, "google.auth", None)
    monkeypatch.setitem(sys.modules, "google", None)
    with pytest.raises(ConfigError) as caught:
        gcp.application_default()
    assert "pip install '.[vertex]'" in str(caught.value)
    assert "from agenthub's checkout" in str(caught.value)


def test_the_docs_say_where_shared_comes_from_and_what_it_adds():
    text = section("Development")  # docs/extending.md
    assert "../shared" in text and "not in the repository" in text
    assert "74 more tests" in text and "shared/wire" in text
