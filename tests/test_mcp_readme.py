"""The "MCP servers" example (docs/mcp.md) and the README's short "MCP" one run as written, against the fake
server of tests/mcp_fake_http.py."""

import os
import re
import subprocess
import sys

from doc_sections import section
from mcp_support import FAKE_HTTP, Subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _section():
    return section("MCP servers")


def _run(code):
    server = Subprocess([FAKE_HTTP, "modern"])
    try:
        env = dict(os.environ, PYTHONPATH=ROOT, MCP_URL=server.url, MCP_TOKEN="readme-token-0123456789")
        done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    finally:
        server.stop()
    assert done.returncode == 0, done.stderr
    assert "readme-token-0123456789" not in done.stdout + done.stderr
    return done.stdout.splitlines()


def test_the_mcp_example_runs_as_written():
    (code,) = re.findall(r"```python\n(.*?)```", _section(), re.S)
    assert _run(code) == ["2026-07-28", "echo", "region_tool", "{'type': 'tool_result', 'text': 'hello'}"]


def test_the_front_page_mcp_example_runs_as_written():
    (code,) = re.findall(r"```python\n(.*?)```", section("MCP", "README.md"), re.S)
    assert _run(code) == ["['echo', 'region_tool']", "{'type': 'tool_result', 'text': 'hello'}"]
