"""agenthub.mcp over stdio against servers that misbehave as processes: what they inherit, what they spawn,
a server that stops reading its stdin, a silent one, close() from another thread (issue 37 A5, B2, B4)."""

import json
import sys
import threading
import time

import pytest

from agenthub import mcp
from agenthub.errors import TransportError

from mcp_support import FAKE_STDIO, leaked, snapshot, stdio_command

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX process groups and /proc")


def _in_thread(work):
    """Run ``work`` in a thread; (thread, box) with box["value"] or box["error"] and box["at"] (when it ended)."""
    box = {}

    def run():
        try:
            box["value"] = work()
        except BaseException as error:  # noqa: B902 - handed to the test
            box["error"] = error
        box["at"] = time.monotonic()

    thread = threading.Thread(target=run)
    thread.start()
    return thread, box


# -- A5 (M03): the environment, the process group -------------------------------------------------------------

def test_a_server_gets_the_safe_variables_and_env_only(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-parent-0123456789")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-parent-0123456789")
    monkeypatch.setenv("HOME", "/home/someone")
    with mcp.connect(stdio_command("modern"), timeout=10, env={"SERVER_TOKEN": "given"}) as server:
        seen = json.loads(server.call_tool("env", {})["text"])
    assert "OPENAI_API_KEY" not in seen and "ANTHROPIC_API_KEY" not in seen
    assert seen["SERVER_TOKEN"] == "given" and seen["HOME"] == "/home/someone"
    assert set(seen) - {"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "SERVER_TOKEN"} <= {
        "LC_CTYPE", "PYTHONCOERCECLOCALE"}  # what Python itself may set at start-up


def test_inherit_env_hands_over_the_whole_environment(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-parent-0123456789")
    with mcp.connect(stdio_command("modern"), timeout=10, inherit_env=True, env={"EXTRA": "1"}) as server:
        seen = json.loads(server.call_tool("env", {})["text"])
    assert seen["OPENAI_API_KEY"] == "sk-parent-0123456789" and seen["EXTRA"] == "1"


def test_inherit_env_is_for_a_command_only():
    from agenthub.errors import ConfigError

    with pytest.raises(ConfigError):
        mcp.connect("http://127.0.0.1:9/mcp", inherit_env=True)


def test_a_process_the_server_spawned_does_not_outlive_close():
    before = snapshot()
    command = ["sh", "-c", "sleep 60 & exec \"$0\" \"$@\"", sys.executable, FAKE_STDIO, "modern"]
    with mcp.connect(command, timeout=10) as server:
        assert server.call_tool("echo", {"text": "hi"})["text"] == "hi"
        assert len(leaked(before, wait=0)) >= 2  # the server and its sleep are seen while they run
    assert leaked(before) == []


# -- B2 (M02): a server that stops reading its stdin ----------------------------------------------------------

def test_a_big_call_to_a_server_that_stopped_reading_ends_within_its_timeout():
    before = snapshot()
    started = time.monotonic()
    server = mcp.connect(stdio_command("modern"), timeout=10)
    with pytest.raises(TransportError):
        server.call_tool("deaf", {}, timeout=0.5)  # it reads nothing from now on
    with pytest.raises(TransportError) as info:
        server.call_tool("echo", {"text": "x" * (2 * 1024 * 1024)}, timeout=2)
    assert info.value.timeout is True
    assert "did not read its stdin" in str(info.value) and "ended" in str(info.value)
    server.close()
    assert time.monotonic() - started < 30  # hung for good before
    assert leaked(before) == []


def test_close_from_another_thread_does_not_wait_on_a_stuck_write():
    before = snapshot()
    server = mcp.connect(stdio_command("modern"), timeout=30)
    with pytest.raises(TransportError):
        server.call_tool("deaf", {}, timeout=0.5)
    thread, box = _in_thread(lambda: server.call_tool("echo", {"text": "x" * (2 * 1024 * 1024)}))
    time.sleep(0.5)
    server.close()
    closed = time.monotonic()
    thread.join(30)
    assert not thread.is_alive()
    assert isinstance(box["error"], TransportError) and box["error"].aborted is True
    # the call ended by close(), not by a timeout: its thread notes the time when it next runs, which on a loaded
    # machine can be a while after close() returned (the call has no timeout of its own short of connect's 30 s)
    assert box["at"] - closed < 10.0
    assert leaked(before) == []


def test_a_flood_of_server_requests_never_blocks_the_reader_or_the_caller():
    before = snapshot()
    started = time.monotonic()
    server = mcp.connect(stdio_command("legacy"), timeout=10)
    with pytest.raises(TransportError) as info:
        server.call_tool("pings", {}, timeout=3)  # 20,000 pings whose answers fill the pipe it does not read
    assert info.value.timeout is True
    server.close()
    assert time.monotonic() - started < 30  # hung for good before
    assert leaked(before) == []


# -- B4 (D1): close() and connect() within the timeout, a clear abort ---------------------------------------

def test_close_ends_the_call_in_flight_at_once_with_an_abort():
    before = snapshot()
    server = mcp.connect(stdio_command("modern", "ignore-stdin-close"), timeout=8)
    thread, box = _in_thread(lambda: server.call_tool("deaf", {}))
    time.sleep(0.5)
    started = time.monotonic()
    server.close()
    closed = time.monotonic()
    thread.join(10)
    error = box["error"]
    assert isinstance(error, TransportError) and error.aborted is True
    assert "the MCP connection is closed" in str(error)
    assert box["at"] <= closed  # not after the server was made to exit
    assert closed - started < 8  # within the timeout (two graces of a quarter of it, then SIGKILL)
    assert leaked(before) == []


def test_connect_to_a_silent_server_gives_up_within_its_timeout():
    before = snapshot()
    started = time.monotonic()
    with pytest.raises(TransportError) as info:
        mcp.connect(stdio_command("modern", "silent"), timeout=4)
    assert info.value.timeout is True
    assert time.monotonic() - started < 7  # twice the timeout and a 2 s grace before (10 s)
    assert leaked(before) == []


# -- 41.3: stdout read in chunks, the line cap kept ------------------------------------------------------------

def test_a_big_answer_is_read_whole_and_a_line_past_the_cap_is_refused(monkeypatch):
    from agenthub.errors import StreamProtocolError
    from agenthub.mcp import stdio

    with mcp.connect(stdio_command("modern"), timeout=30) as server:
        assert len(server.call_tool("burst", {})["text"]) == 8 * 1024 * 1024
    monkeypatch.setattr(stdio, "MAX_LINE_BYTES", 1024 * 1024)
    before = snapshot()
    with mcp.connect(stdio_command("modern"), timeout=30) as server:
        with pytest.raises(StreamProtocolError) as info:
            server.call_tool("burst", {})
    assert "longer than 1048576 bytes" in str(info.value)
    assert leaked(before) == []
