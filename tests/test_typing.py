"""The docs' Python examples type-check under ``mypy --strict``, as a user's code would.

Every ```python block of README.md and docs/**/*.md is written out as its own module and one mypy run checks
them all (agenthub is read the way an installed, ``py.typed`` package is: errors inside the
library are not reported, its annotations are used).  Skipped when mypy is not installed.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import pytest

from doc_sections import doc_files, read

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

pytest.importorskip("mypy", reason="mypy is not installed (pip install '.[test]')")


def doc_blocks():
    """[(module name, code)]: ``readme_line_0043`` for README.md's block at line 43, ``docs_tools_line_0043`` for
    docs/tools.md's."""
    blocks = []
    for doc in doc_files():
        blocks += [(re.sub(r"\W", "_", doc[:-3].lower()) + "_line_{:04d}".format(line), code)
                   for line, code in _blocks(read(doc))]
    return blocks


def _blocks(text):
    blocks = []
    for match in re.finditer(r"^( *)```python\n(.*?)^\1```", text, re.M | re.S):
        indent = match.group(1)
        code = "".join(line[len(indent):] if line.startswith(indent) else line
                       for line in match.group(2).splitlines(True))
        line = text.count("\n", 0, match.start()) + 2  # the doc's line of the block's first line of code
        blocks.append((line, code))
    return blocks


def test_readme_has_python_blocks():
    assert len(doc_blocks()) >= 30
    assert sum(1 for name, _ in doc_blocks() if name.startswith("readme_line_")) >= 7


#: a module the README's test example imports ("your loop"), as its user would have written it
USER_PROJECT = {"myproject/__init__.py": "", "myproject/agent.py": (
    "from agenthub import AutoLLMClient\n\n\n"
    "def run_agent(client: AutoLLMClient, question: str) -> str:\n"
    "    return question\n")}

#: user code written against the public API (beyond the README): what a narrower or read-only type must accept
USER_API = """\
from typing import List, Optional, Tuple

import agenthub
from agenthub import (AssistantMessage, AutoLLMClient, Message, TextItem, ThinkingLevel, ToolSchema, UniConfig,
                      UniEvent, UniMessage, UpstreamError, collect, cost)
from agenthub.tracer import save_trace

client = AutoLLMClient("m", client_type="openai-chat", base_url="http://127.0.0.1:9/v1")
texts: List[TextItem] = [{"type": "text", "text": "hi"}]
question: UniMessage = {"role": "user", "content_items": [texts[0]]}
tools: Tuple[ToolSchema, ...] = ({"name": "now"},)
config: UniConfig = {"tools": tools, "thinking_level": ThinkingLevel.LOW, "tool_choice": ["now"],
                     "prompt_caching": "enhance"}
strongest: UniConfig = {"thinking_level": "max"}  # ThinkingLevel.MAX's string (issue 29 C4)
events: List[UniEvent] = list(client.streaming_response((question,), config))
answer: AssistantMessage = collect(events)
history: List[Message] = [question, answer]
client.set_history(history)
save_trace("run/1", "m", history, dict(config))
price: Optional[float] = cost("m", answer["usage_metadata"])
vectors: List[List[float]] = client.embed(("a", "b"))
again: AssistantMessage = client.response(history)
try:
    pass
except UpstreamError as error:
    where: Optional[str] = error.url
    status: Optional[int] = error.status
"""

#: issue 24 C1: a user's script that catches errors and reads their fields (status_code as the SDKs name it,
#: a TransportError's url), streams tool calls, asks response() for a schema and reads its usage and
#: finish reason without None checks, embeds and lists models: mypy --strict and pyright, no error
USER_SCRIPT = '''\
# a user's script: catches errors and reads their fields, streams tool calls, asks for structured output,
# embeds and lists models
import json
from typing import Any, Dict, List, Optional

from agenthub import (AgentHubError, AutoLLMClient, ConfigError, FinishReason, RateLimitError, ToolSchema,
                      TransportError, UniConfig, UniMessage, UpstreamError, UsageMetadata)

client = AutoLLMClient("gpt-5.5", api_key="sk-test", max_retries=3)
question: UniMessage = {"role": "user", "content_items": [{"type": "text", "text": "Weather in Paris?"}]}
tools: List[ToolSchema] = [{"name": "get_weather", "description": "Current weather.",
                            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}]
arguments: Dict[str, str] = {}
names: Dict[str, str] = {}
try:
    for event in client.streaming_response([question], {"tools": tools}):
        for item in event["content_items"]:
            if item["type"] == "partial_tool_call":
                names[item["tool_call_id"]] = item["name"]
                arguments[item["tool_call_id"]] = arguments.get(item["tool_call_id"], "") + item["arguments"]
            elif item["type"] == "tool_call":
                city: Any = item["arguments"].get("city")
            elif item["type"] == "text":
                print(item["text"], end="")
        if event["event_type"] == "stop":
            usage: Optional[UsageMetadata] = event["usage_metadata"]
except RateLimitError as error:
    wait: float = error.retry_after or 30.0
    hint: Optional[str] = error.hint
    code: Optional[int] = error.status_code
except UpstreamError as error:
    status: Optional[int] = error.status_code
    same: Optional[int] = error.status
    where: Optional[str] = error.url
    kind: Optional[str] = error.error_type
    request_id: Optional[str] = error.request_id
except TransportError as error:
    url: Optional[str] = error.url
    timed_out: bool = error.timeout
    again: bool = error.retryable
except ConfigError as error:
    print(str(error))
except AgentHubError as error:
    maybe: Optional[int] = error.status_code

schema: UniConfig = {"response_format": {"type": "json_schema", "name": "weather", "strict": True, "schema": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
answer = client.response([question], schema)
tokens: UsageMetadata = answer["usage_metadata"]
prompt: Optional[int] = answer["usage_metadata"]["prompt_tokens"]
finish: FinishReason = answer["finish_reason"]
text = "".join(item["text"] for item in answer["content_items"] if item["type"] == "text")
data: Any = json.loads(text)

embedder = AutoLLMClient("text-embedding-3-small", api_key="sk-test")
vectors: List[List[float]] = embedder.embed(["a", "b"])
first: float = vectors[0][0]
models: List[str] = client.list_models()
'''

#: issue 29 C3: the newcomer's script written the SDK way (harnesses/newcomer4/user_script.py), with the two
#: helpers (agenthub.user, agenthub.text) and the README's narrowing patterns: mypy --strict, no error
SDK_WAY = '''\
import json
import sys
import time
from typing import List

import agenthub
from agenthub import AgentHubError, AutoLLMClient, Budget, RateLimitError, ToolSchema, UpstreamError, jobs, text, user

client = AutoLLMClient("gpt-5.5", max_retries=1, fallbacks=["claude-sonnet-4-6"], budget=Budget(2.0))
messages = [user("Name three rivers.")]

try:
    print("input tokens:", client.count_tokens(messages))
except AgentHubError as e:
    print("count_tokens failed:", e)

try:
    resp = client.response(messages, config={"max_tokens": 200})
    print(text(resp))
    usage = resp["usage_metadata"]
    print("usage:", (usage["prompt_tokens"] or 0) + (usage["response_tokens"] or 0))
    if client.last_route is not None:
        print("answered by", client.last_route["model"])
except RateLimitError as e:
    time.sleep(e.retry_after or 1.0)
    raise
except UpstreamError as e:
    print("API error", e.status_code, e)
    if e.status_code is not None and e.status_code >= 500:
        sys.exit(1)
    raise

out = ""
for event in client.streaming_response(messages, {"max_tokens": 200, "temperature": 0.2}):
    out += text(event)
    if event["event_type"] == "stop" and event["usage_metadata"] is not None:
        print("finish:", event["finish_reason"], "tokens out:", event["usage_metadata"]["response_tokens"])

chat = AutoLLMClient("claude-sonnet-4-6")
for q in ["Pick a number from 1 to 10.", "Double it."]:
    print(q, "->", text(chat.response_stateful(user(q))))
print("history:", len(chat.get_history()))

tools: List[ToolSchema] = [{"name": "get_weather", "description": "weather",
                            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}]
weather = client.response([user("Weather in Paris?")], {"tools": tools, "max_tokens": 200})
for item in weather["content_items"]:
    if item["type"] == "tool_call":
        print("call", item["name"], item["arguments"]["city"])

price = agenthub.cost("gpt-5.5", resp["usage_metadata"])
print("cost: $%.6f" % (price or 0.0))

rows = [{"id": "r%d" % i, "model": "gpt-5.5", "messages": [user("ticket %d" % i)], "config": {"max_tokens": 20}}
        for i in range(5)]
with open("in.jsonl", "w") as f:
    for r in rows:
        f.write(json.dumps(r) + "\\n")
summary = jobs.run("in.jsonl", "out.jsonl", workers=4, rpm=600)
print("job:", summary.done, summary.failed, summary.cost_usd)
for row in jobs.read_output("out.jsonl"):
    if row["error"]:
        print(row["id"], "failed:", row["error"]["message"])
    else:
        print(row["id"], text(row["message"]))
'''

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
    """One mypy --strict run over every docs block (module name = doc and line) and the harness check."""
    tmp = tmp_path_factory.mktemp("mypy")
    src = tmp / "src"
    files = {name + ".py": code for name, code in doc_blocks()}
    files.update(USER_PROJECT)
    files["harness_wrong.py"] = WRONG
    files["user_api.py"] = USER_API
    files["user_script.py"] = USER_SCRIPT
    files["sdk_way.py"] = SDK_WAY
    for name, code in files.items():
        path = src / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(code, encoding="utf-8")
    config = tmp / "mypy.ini"
    # agenthub is read as an installed py.typed package is: its annotations count, its own errors are not reported
    # ray is an optional extra (Python 3.9+): where it is not installed its blocks see it as Any
    config.write_text("[mypy]\nstrict = True\n[mypy-agenthub.*]\nfollow_imports = silent\n"
                      "[mypy-ray.*]\nignore_missing_imports = True\n", encoding="utf-8")
    env = dict(os.environ, MYPYPATH=os.pathsep.join([ROOT, str(src)]))
    checked = [name for name in sorted(files) if "/" not in name] + ["myproject"]
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(config), "--cache-dir", CACHE,
         "--no-color-output", "--show-error-codes", "--no-error-summary"] + checked,
        cwd=str(src), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300)
    return result.stdout.decode("utf-8", "replace")


def test_every_readme_python_block_passes_mypy_strict(mypy_output):
    readme = [line for line in mypy_output.splitlines() if not line.startswith("harness_wrong.py")]
    assert readme == [], ("docs blocks (module name = doc and line) or user_api.py fail mypy --strict:\n"
                          + "\n".join(readme))


@pytest.mark.parametrize("name, script", [("user_script.py", USER_SCRIPT), ("sdk_way.py", SDK_WAY)])
def test_a_users_script_passes_pyright(tmp_path, name, script):
    pyright = shutil.which("pyright") or os.path.join(os.path.dirname(sys.executable), "pyright")
    if not os.path.exists(pyright):
        pytest.skip("pyright is not installed")
    (tmp_path / name).write_text(script, encoding="utf-8")
    (tmp_path / "pyrightconfig.json").write_text(json.dumps({"extraPaths": [ROOT], "pythonVersion": "3.8"}),
                                                 encoding="utf-8")
    result = subprocess.run([pyright, name], cwd=str(tmp_path), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, timeout=300)
    output = result.stdout.decode("utf-8", "replace")
    assert result.returncode == 0 and "0 errors" in output, output


def test_the_checker_catches_a_wrong_field_and_a_wrong_level(mypy_output):
    wrong = sorted({line.split(": error")[0] for line in mypy_output.splitlines()
                    if line.startswith("harness_wrong.py") and ": error" in line})
    assert wrong == ["harness_wrong.py:3", "harness_wrong.py:8"], mypy_output
