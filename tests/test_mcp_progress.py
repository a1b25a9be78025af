"""``on_progress`` of an MCP call (MCP "Progress", 2025-11-25 basic/utilities/progress, 2026-07-28
basic/patterns/progress): the request carries ``_meta.progressToken`` (its own id, as the official SDK does),
each ``notifications/progress`` for it reaches the callback as (progress, total, message), as the official
client's ``progress_callback`` gets them; the call's timeout stays a wall-clock deadline."""

import logging
import sys

import pytest

from agenthub import ConfigError, mcp
from mcp_support import OFFICIAL, Subprocess, leaked, snapshot
from test_mcp_hostile import hostile_stdio
from test_mcp_http import fresh_eras, servers  # noqa: F401  (the fake HTTP servers; the eras forgotten)

posix = pytest.mark.skipif(sys.platform == "win32", reason="POSIX process groups")
STEPS = [(1.0, 3.0, None), (2.0, 3.0, None), (3.0, 3.0, "the last step")]


def official_sdk():
    if sys.version_info < (3, 10):
        pytest.skip("the official mcp SDK needs Python >= 3.10")
    pytest.importorskip("mcp", reason="the official mcp SDK (test extra) is not installed")


@pytest.mark.parametrize("protocol", ["auto", "2025-11-25"])
def test_official_stdio_server_reports_progress_to_on_progress(protocol):
    official_sdk()
    before = snapshot()
    heard = []
    with mcp.connect([sys.executable, OFFICIAL, "stdio"], timeout=30, protocol=protocol) as server:
        result = server.call_tool("slow", {"steps": 3}, on_progress=lambda *args: heard.append(args))
        assert result == {"type": "tool_result", "text": "done after 3"}
        assert heard == STEPS
        heard[:] = []
        assert server.call_tool("slow", {"steps": 2}) == {"type": "tool_result", "text": "done after 2"}
        assert heard == []  # no callback: no token, no progress
    assert leaked(before) == []


@pytest.mark.parametrize("mode, heard_steps", [("stateful", STEPS), ("stateless", STEPS),
                                               ("json", [])])  # (a JSON answer carries no notification)
def test_official_http_server_reports_progress_to_on_progress(mode, heard_steps):
    official_sdk()
    server = Subprocess([OFFICIAL, "http", mode], wait=60)
    try:
        for protocol in ("auto", "2025-11-25"):
            mcp.forget_eras()
            heard = []
            with mcp.connect(server.url, timeout=30, protocol=protocol) as handle:
                result = handle.call_tool("slow", {"steps": 3}, on_progress=lambda *args: heard.append(args))
            assert result == {"type": "tool_result", "text": "done after 3"}
            assert heard == heard_steps, protocol
    finally:
        server.stop()


def test_the_token_is_the_requests_id_and_another_tokens_progress_is_not_delivered(servers):
    import requests

    for era in ("modern", "legacy"):
        heard = []
        mcp.forget_eras()
        with mcp.connect(servers(era).url, timeout=10) as server:
            # the fake sends its progress with the token "t": not this request's
            assert server.call_tool("progress", {}, on_progress=lambda *args: heard.append(args))["text"] == \
                "after progress"
        assert heard == []
        sent = [entry for entry in requests.get(servers(era).base + "/log", timeout=10).json()
                if entry["body"] and entry["body"].get("method") == "tools/call"][-1]["body"]
        assert sent["params"]["_meta"]["progressToken"] == sent["id"]


def test_bad_on_progress_is_refused_before_anything_is_sent(servers):
    with mcp.connect(servers("modern").url, timeout=10) as server:
        with pytest.raises(ConfigError) as info:
            server.call_tool("echo", {"text": "x"}, on_progress="print")
        assert str(info.value) == "on_progress must be a callable (progress, total, message) or None (got str)"
        with pytest.raises(ConfigError) as info:
            server.request("tools/call", {"name": "echo", "arguments": {}, "_meta": {"progressToken": "mine"}},
                           on_progress=print)
        assert str(info.value) == ("params[\"_meta\"] has a progressToken and on_progress is given: the token "
                                   "on_progress asks for is the request's id")


@posix
def test_odd_progress_values_are_skipped_and_a_raising_callback_is_logged(caplog):
    before = snapshot()
    heard = []
    with mcp.connect(hostile_stdio("odd-progress"), timeout=10, env={"SERVER_TOKEN": "tok-0123456789abcdef"}) \
            as server:
        # true, "5", 10**400 (an OverflowError as a float), NaN, Infinity: skipped; a total or message of the
        # wrong type (or past a float's range) is None; another request's token is not this call's; a message
        # echoing a secret the handle holds (env=) has it as *** (as an error answer has)
        assert server.call_tool("echo", {"text": "hi"}, on_progress=lambda *args: heard.append(args)) == {
            "type": "tool_result", "text": "hi"}
        assert heard == [(1.0, None, None), (2.5, None, "m ***")]

        def broken(progress, total, message):
            heard.append(progress)
            raise ValueError("the callback broke")

        heard[:] = []
        with caplog.at_level(logging.WARNING, logger="agenthub"):
            assert server.call_tool("echo", {"text": "again"}, on_progress=broken)["text"] == "again"
        assert heard == [1.0, 2.5]
        assert [record.getMessage() for record in caplog.records] == [
            "python: an on_progress callback of tools/call raised ValueError (the call goes on)"] * 2
    assert leaked(before) == []


@posix
def test_a_call_on_the_same_stdio_handle_from_on_progress_is_refused_at_once():
    """On stdio the callback runs on the thread that reads the server's messages: a call from there would wait
    for its own answer, which that thread reads, until the call's timeout; it is a ConfigError at once."""
    official_sdk()
    raised = []
    with mcp.connect([sys.executable, OFFICIAL, "stdio"], timeout=30) as server:
        def nested(progress, total, message):
            try:
                server.call_tool("echo", {"text": "inner"})
            except ConfigError as error:
                raised.append(str(error))

        assert server.call_tool("slow", {"steps": 1}, on_progress=nested)["text"] == "done after 1"
    assert raised == ["python: a request from an on_progress callback on stdio would wait for itself"]
