"""The README's "MCP servers" example runs as written, against the fake server of tests/mcp_fake_http.py."""

import os
import re
import subprocess
import sys

from mcp_support import FAKE_HTTP, Subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _section():
    text = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    start = text.index("\n## MCP servers\n")
    return text[start:text.index("\n## ", start + 5)]


def test_the_mcp_example_runs_as_written():
    (code,) = re.findall(r"```python\n(.*?)```", _section(), re.S)
    server = Subprocess([FAKE_HTTP, "modern"])
    try:
        env = dict(os.environ, PYTHONPATH=ROOT, MCP_URL=server.url, MCP_TOKEN="readme-token-0123456789")
        done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    finally:
        server.stop()
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["2026-07-28", "echo", "region_tool",
                                        "{'type': 'tool_result', 'text': 'hello'}"]
