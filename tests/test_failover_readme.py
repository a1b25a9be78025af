"""The "Failover" example (docs/reliability.md) runs as written, with the providers' base URLs pointed at local servers:
Anthropic answers 529, DeepSeek (the first fallback) answers, OpenAI (the second) is never asked."""

import ast
import os
import re
import subprocess
import sys

from doc_sections import section
from faultserver import FaultServer, error_body, send, status

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _section():
    return section("Failover", "docs/reliability.md")  # the README's front page has a short one of its own


def test_the_failover_example_runs_as_written():
    (code,) = re.findall(r"```python\n(.*?)```", _section(), re.S)
    overloaded = [status(529, {"Content-Type": "application/json"}, framing="length"),
                  send(error_body("Overloaded", "overloaded_error"))]
    with FaultServer(default=overloaded) as anthropic, FaultServer() as deepseek, FaultServer() as openai:
        env = dict(os.environ, PYTHONPATH=ROOT, AGENTHUB_LOG="info",
                   ANTHROPIC_BASE_URL=anthropic.url, ANTHROPIC_API_KEY="sk-ant-readme-0001",
                   DEEPSEEK_BASE_URL=deepseek.url, DEEPSEEK_API_KEY="sk-deepseek-readme-0002",
                   OPENAI_BASE_URL=openai.url + "/v1", OPENAI_API_KEY="sk-openai-readme-0003")
        done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
        asked = (len(anthropic.requests), len(deepseek.requests), len(openai.requests))
    assert done.returncode == 0, done.stderr
    answer, route = done.stdout.splitlines()
    assert answer == "ok"
    # the port is named: two endpoints on one host read apart (issue 29 C5)
    assert ast.literal_eval(route) == {"model": "deepseek-v4-flash", "client_type": "openai-chat",
                                       "host": "127.0.0.1:{}".format(deepseek.port)}
    assert asked == (2, 1, 0)  # max_retries=1 on the primary, then the first fallback answered
    skipped = [line for line in done.stderr.splitlines() if "agenthub fallback:" in line]
    assert len(skipped) == 1 and skipped[0].endswith(
        "agenthub fallback: claude-sonnet-4-6 (anthropic, 127.0.0.1:{}) skipped: ServerError 529".format(
            anthropic.port)), done.stderr
    assert "readme-000" not in done.stderr
