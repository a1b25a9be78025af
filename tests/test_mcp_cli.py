"""``agenthub mcp tools`` and ``agenthub mcp call``, as a user runs them."""

import json
import subprocess
import sys

import pytest

from agenthub import mcp
from agenthub.__main__ import main
from agenthub.apps.mcp_cli import target_of

from mcp_support import FAKE_HTTP, Subprocess, stdio_command


@pytest.fixture(scope="module")
def legacy_http():
    server = Subprocess([FAKE_HTTP, "legacy"])
    yield server
    server.stop()


def test_tools_of_a_stdio_command_given_as_the_remaining_arguments(capsys):
    assert main(["mcp", "tools"] + stdio_command("modern")) == 0
    assert capsys.readouterr().out == "echo: list #1\n"


def test_tools_of_a_command_given_as_one_quoted_string(capsys):
    assert main(["mcp", "tools", "--json", " ".join(stdio_command("legacy"))]) == 0
    assert json.loads(capsys.readouterr().out) == [{"name": "echo", "description": "list #1",
                                                    "parameters": {"type": "object"}}]


def test_call_over_http_with_a_header(legacy_http, capsys):
    mcp.forget_eras()
    assert main(["mcp", "call", "--header", "Authorization: Bearer abcdefgh12345678", legacy_http.url,
                 "echo", '{"text": "from the CLI"}']) == 0
    assert capsys.readouterr().out == "from the CLI\n"


def test_a_tool_error_exits_1_and_json_shows_the_item(legacy_http, capsys):
    assert main(["mcp", "call", "--json", legacy_http.url, "nonesuch", "{}"]) == 1
    assert json.loads(capsys.readouterr().out) == {"type": "tool_result", "text": "unknown tool", "is_error": True}


@pytest.mark.parametrize("argv, words", [
    (["call", "x", "echo", "not json"], "the tool's arguments are not JSON"),
    (["call", "x", "echo", "[1]"], "must be a JSON object"),
    (["call", "echo", "{}"], "agenthub mcp call TARGET... TOOL JSON"),
    (["tools"], "name an MCP server"),
])
def test_bad_usage_is_a_config_error_exit_1(argv, words, capsys):
    assert main(["mcp"] + argv) == 1
    assert words in capsys.readouterr().err


def test_target_forms():
    assert target_of(["https://example.com/mcp"]) == "https://example.com/mcp"
    assert target_of(["python -m 'my server'"]) == ["python", "-m", "my server"]
    assert target_of(["uvx", "mcp-server-time", "--local-timezone", "UTC"]) == [
        "uvx", "mcp-server-time", "--local-timezone", "UTC"]


def test_the_installed_command_line_runs_it():
    out = subprocess.run([sys.executable, "-m", "agenthub", "mcp", "call"] + stdio_command("modern") +
                         ["echo", '{"text": "via -m"}'], capture_output=True, timeout=60)
    assert (out.returncode, out.stdout) == (0, b"via -m\n")
