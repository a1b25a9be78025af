"""docs/typed-output.md's example runs as written against a local Responses server answering JSON, and prints
what its comments say."""

import json
import os
import re
import subprocess
import sys

from agent_streams import responses_text
from doc_sections import section
from sse_server import Answer, SSEServer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ANSWER = {"number": "F-7", "items": [{"name": "pen", "price": 1.5}, {"name": "pen", "price": 1.5}], "note": None}


def test_the_typed_output_example_runs_as_written():
    (code,) = re.findall(r"```python\n(.*?)```", section("Typed output", "docs/typed-output.md"), re.S)
    with SSEServer() as server:
        server.answers += [Answer([responses_text(json.dumps(ANSWER))]) for _ in range(2)]
        env = dict(os.environ, PYTHONPATH=ROOT, OPENAI_API_KEY="sk-docs-typed-output-0001",
                   OPENAI_BASE_URL=server.url + "/v1")
        done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "Invoice(number='F-7', items=[Item(name='pen', price=1.5), Item(name='pen', price=1.5)], note=None)",
        "1 F-7",
        "1 {'number': 'F-7', 'items': [{'name': 'pen', 'price': 1.5}, {'name': 'pen', 'price': 1.5}], 'note': None}",
        "F-7",
    ]
    assert [r["path"] for r in server.requests] == ["/v1/responses", "/v1/responses"]
    assert server.requests[0]["body"]["text"]["format"]["name"] == "output"


def test_the_front_page_example_runs_as_written():
    (code,) = re.findall(r"```python\n(.*?)```", section("Typed output", "README.md"), re.S)
    with SSEServer() as server:
        server.answers += [Answer([responses_text('{"name": "Tokyo", "country": "Japan", "population": 14000000}')])]
        env = dict(os.environ, PYTHONPATH=ROOT, OPENAI_API_KEY="sk-docs-typed-output-0001",
                   OPENAI_BASE_URL=server.url + "/v1")
        done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Tokyo 14000000\n"
