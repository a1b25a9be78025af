"""agenthub.mcp over stdio against a fake server subprocess: both eras, the faults, nothing left behind."""

import json
import sys
import time
import threading

import pytest

from agenthub import mcp
from agenthub.errors import ConfigError, StreamProtocolError, TransportError

from mcp_support import leaked, snapshot, stdio_command


def test_modern_server_is_spoken_to_without_initialize():
    before = snapshot()
    with mcp.connect(stdio_command("modern"), timeout=10) as server:
        assert server.protocol_version == "2026-07-28"
        assert server.list_tools() == [{"name": "echo", "description": "list #1",
                                        "parameters": {"type": "object"}}]
        assert server.call_tool("echo", {"text": "hi"}) == {"type": "tool_result", "text": "hi"}
        # (stderr is read by a thread of its own, beside the answers: on a loaded machine it can come after them)
        deadline = time.monotonic() + 10
        while "fake server starting" not in server.stderr and time.monotonic() < deadline:
            time.sleep(0.01)
        assert "fake server starting" in server.stderr
    assert leaked(before) == []


def test_legacy_server_answering_an_error_to_discover_gets_initialize():
    with mcp.connect(stdio_command("legacy"), timeout=10) as server:
        assert server.protocol_version == "2025-11-25"
        assert server.server_info == {"name": "fake-stdio", "version": "1"}
        assert server.call_tool("echo", {"text": "old"})["text"] == "old"


def test_legacy_server_silent_before_initialize_falls_back_after_the_probe_timeout(monkeypatch):
    from agenthub.mcp import stdio

    monkeypatch.setattr(stdio, "PROBE_TIMEOUT", 0.5)
    with mcp.connect(stdio_command("silent-legacy"), timeout=10) as server:
        assert server.protocol_version == "2025-11-25"


def test_modern_server_slower_than_the_probe_is_still_spoken_to_in_its_era(monkeypatch):
    from agenthub.mcp import stdio

    monkeypatch.setattr(stdio, "PROBE_TIMEOUT", 0.3)
    with mcp.connect(stdio_command("modern", "slow-start"), timeout=10) as server:
        # the probe timed out, initialize was refused, and the DiscoverResult had come meanwhile
        assert server.protocol_version == "2026-07-28"
        assert server.call_tool("echo", {"text": "late"})["text"] == "late"


def test_list_changed_notification_makes_the_tool_list_stale():
    with mcp.connect(stdio_command("legacy"), timeout=10) as server:
        assert server.list_tools()[0]["description"] == "list #1"
        assert server.list_tools()[0]["description"] == "list #1"  # cached: no ttlMs, no notification
        server.call_tool("changed", {})
        assert server.list_tools()[0]["description"] == "list #2"
        assert server.list_tools(refresh=True)[0]["description"] == "list #3"


def test_child_exiting_mid_call_is_a_typed_error_at_once_with_its_log():
    before = snapshot()
    server = mcp.connect(stdio_command("modern", "exit"), timeout=30)
    with pytest.raises(TransportError) as info:
        server.call_tool("echo", {"text": "x"})
    assert info.value.exit_code == 3
    assert not info.value.timeout
    assert "exited with status 3" in str(info.value)
    assert "fatal: the database is gone" in str(info.value)
    with pytest.raises(TransportError):  # and so is every later call
        server.call_tool("echo", {"text": "x"})
    server.close()
    assert leaked(before) == []


def test_env_values_never_show_in_an_error():
    with mcp.connect(stdio_command("modern", "exit"), timeout=30, env={"FAKE_TOKEN": "tok-0123456789abcdef"}) as server:
        with pytest.raises(TransportError) as info:
            server.call_tool("echo", {"text": "x"})
        assert "tok-0123456789abcdef" in server.stderr  # the log itself is the caller's to read
    assert "fatal: the database is gone (token ***)" in str(info.value)


def test_the_handle_is_a_tool_provider_for_the_runner():
    # contract C2: list_tools() -> ToolSchemas, call_tool(name, arguments) -> a tool_result item, a name
    with mcp.connect(stdio_command("modern"), timeout=10, name="fake") as server:
        assert server.name == "fake"
        assert callable(server.list_tools) and callable(server.call_tool)
        assert set(server.list_tools()[0]) <= {"name", "description", "parameters"}
        assert server.call_tool("echo", {"text": "c2"}) == {"type": "tool_result", "text": "c2"}


def test_non_json_on_stdout_is_a_protocol_error_naming_the_line():
    before = snapshot()
    with mcp.connect(stdio_command("modern", "banner"), timeout=30) as server:
        with pytest.raises(StreamProtocolError) as info:
            server.call_tool("echo", {"text": "x"})
    assert "Server ready! Listening..." in str(info.value)
    assert "stdout is for the protocol alone" in str(info.value)
    assert leaked(before) == []


def test_stderr_flood_is_kept_bounded_and_never_read_as_protocol():
    from agenthub.mcp.stdio import STDERR_KEEP

    with mcp.connect(stdio_command("modern", "flood"), timeout=30) as server:
        assert server.call_tool("echo", {"text": "after the flood"})["text"] == "after the flood"
        assert len(server.stderr.encode()) <= STDERR_KEEP


def test_a_call_never_answered_times_out_and_the_handle_goes_on():
    with mcp.connect(stdio_command("modern", "hang"), timeout=10) as server:
        with pytest.raises(TransportError) as info:
            server.call_tool("echo", {"text": "x"}, timeout=0.3)
        assert info.value.timeout is True
        assert "no answer to tools/call within 0.3 s" in str(info.value)
        assert server.list_tools()[0]["name"] == "echo"  # the connection is still good


def test_close_from_another_thread_ends_a_call_in_flight():
    server = mcp.connect(stdio_command("modern", "hang"), timeout=30)
    errors = []

    def call():
        try:
            server.call_tool("echo", {"text": "x"})
        except TransportError as error:
            errors.append(error)

    thread = threading.Thread(target=call)
    thread.start()
    thread.join(0.3)
    server.close()
    thread.join(10)
    assert not thread.is_alive()
    assert len(errors) == 1 and errors[0].aborted is True


def test_shutdown_escalates_to_kill_for_a_server_ignoring_stdin_and_sigterm(monkeypatch):
    from agenthub.mcp import stdio

    monkeypatch.setattr(stdio, "SHUTDOWN_GRACE", 0.3)
    before = snapshot()
    server = mcp.connect(stdio_command("modern", "ignore-stdin-close"), timeout=10)
    process = server._channel._state.process
    server.close()
    assert process.returncode == -9
    assert leaked(before) == []


def test_a_thousand_calls_leave_threads_fds_and_processes_where_they_were():
    before = snapshot()
    with mcp.connect(stdio_command("modern"), timeout=10) as server:
        for number in range(1000):
            assert server.call_tool("echo", {"text": str(number)})["text"] == str(number)
    assert leaked(before) == []


def test_calls_from_many_threads_each_get_their_own_answer():
    with mcp.connect(stdio_command("modern"), timeout=10) as server:
        answers = {}

        def work(number):
            answers[number] = server.call_tool("echo", {"text": str(number)})["text"]

        threads = [threading.Thread(target=work, args=(n,)) for n in range(16)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(10)
        assert answers == {n: str(n) for n in range(16)}


def test_a_handle_never_closed_is_cleaned_up_by_the_garbage_collector():
    import gc

    before = snapshot()
    server = mcp.connect(stdio_command("modern"), timeout=10)
    server.call_tool("echo", {"text": "x"})
    del server
    gc.collect()
    assert leaked(before) == []


def test_no_child_left_at_interpreter_exit(tmp_path):
    import subprocess

    script = tmp_path / "leave.py"
    script.write_text(
        "import sys\nsys.path[:0] = {!r}\nfrom agenthub import mcp\n"
        "server = mcp.connect({!r}, timeout=10)\nprint(server._channel.pid, flush=True)\n".format(
            sys.path[:3], stdio_command("modern")))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, timeout=60)
    pid = int(out.stdout.decode().split()[0])
    import os

    assert not os.path.exists("/proc/{}".format(pid)) or open("/proc/{}/stat".format(pid)).read().split()[2] == "Z"


def test_bad_input_is_a_config_error_before_anything_starts():
    before = snapshot()
    with pytest.raises(ConfigError):
        mcp.connect(["python", 3])
    with pytest.raises(ConfigError):
        mcp.connect("python -m server")  # a command is a list
    with pytest.raises(ConfigError):
        mcp.connect(stdio_command("modern"), headers={"Authorization": "x"})
    with pytest.raises(ConfigError):
        mcp.connect(stdio_command("modern"), protocol="2099-01-01")
    with pytest.raises(ConfigError):
        mcp.connect(stdio_command("modern"), timeout=0)
    with pytest.raises(ConfigError) as info:
        mcp.connect(["/nonexistent/mcp-server"])
    assert "could not start" in str(info.value)
    assert leaked(before) == []


def test_bad_arguments_to_call_tool_are_config_errors():
    with mcp.connect(stdio_command("modern"), timeout=10) as server:
        with pytest.raises(ConfigError):
            server.call_tool("echo", ["not", "a", "dict"])
        with pytest.raises(ConfigError):
            server.call_tool("", {})
        with pytest.raises(ConfigError):
            server.get_prompt("p", {"n": 1})


@pytest.mark.parametrize("timeout", ["5", True, 0, -1.0, float("nan"), float("inf")])
def test_a_requests_own_timeout_that_is_no_positive_number_is_refused_before_anything_is_sent(timeout):
    with mcp.connect(stdio_command("modern"), timeout=10) as server:
        sent = []
        exchange = server._channel.exchange
        server._channel.exchange = lambda *args, **kwargs: sent.append(args) or exchange(*args, **kwargs)
        for call in (lambda: server.request("tools/list", timeout=timeout),
                     lambda: server.call_tool("echo", {"text": "hi"}, timeout=timeout)):
            with pytest.raises(ConfigError) as caught:
                call()
            assert str(caught.value) == "timeout must be a positive number of seconds (got {!r})".format(timeout)
        assert sent == []
        assert server.call_tool("echo", {"text": "hi"}, timeout=5)["text"] == "hi"
        assert len(sent) == 1


def test_close_returns_when_the_server_does_not_go_even_after_sigkill(monkeypatch, caplog):
    """A server stuck in the kernel outlives SIGKILL (no test can make one: its wait is made to time out here):
    close() waits a bounded time after SIGKILL, reports it, and returns (never a wait without end)."""
    import subprocess

    from agenthub.mcp import stdio

    monkeypatch.setattr(stdio, "SHUTDOWN_GRACE", 0.3)
    before = snapshot()
    server = mcp.connect(stdio_command("modern", "ignore-stdin-close"), timeout=10)
    process = server._channel._state.process
    waits = []

    def wait(timeout=None):
        waits.append(timeout)
        if timeout is None:
            raise AssertionError("a wait without a bound")
        raise subprocess.TimeoutExpired(process.args, timeout)

    monkeypatch.setattr(process, "wait", wait)
    with caplog.at_level("WARNING", logger="agenthub"):
        server.close()
    assert caplog.messages == ["{}: the server process (pid {}) has not exited after SIGKILL: it is left as it is "
                               "(its pipes closed, not waited for)".format(server._channel._state.label, process.pid)]
    assert waits == [0.3, 0.3, 5.0, 0.3]  # stdin closed, SIGTERM, SIGKILL, then once more: each bounded
    monkeypatch.undo()
    assert process.wait(10) == -9  # (it did go: reaped here)
    assert leaked(before) == []


@pytest.mark.parametrize("era", ["modern", "legacy"])
def test_request_params_that_are_not_an_object_are_a_config_error_before_sending(era):
    # a list or a str as params, or a _meta that is not an object: a TypeError or ValueError from dict() in the
    # modern era, sent as it was in the handshake era
    with mcp.connect(stdio_command(era), timeout=10) as server:
        for params in ([1], "abc", {"_meta": [1]}, {"_meta": "x"}):
            with pytest.raises(ConfigError) as caught:
                server.request("tools/list", params)
            assert str(caught.value) in ("params must be a dict or None (got {})".format(type(params).__name__),
                                         "params[\"_meta\"] must be a dict (got {})".format(
                                             type(params.get("_meta")).__name__ if isinstance(params, dict) else ""))
        # nothing reached the server: its first tools/list is this one
        assert server.request("tools/list", {"_meta": None})["tools"][0]["description"] == "list #1"


@pytest.mark.parametrize("ttl, lists", [(10 ** 400, 1), (1e400, 1), (60000.0, 1), (0.0, 2), (-3.0, 2), (0, 2)])
def test_a_ttl_of_any_json_number_is_read_as_one(ttl, lists):
    # 2026-07-28 CacheableResult: ttlMs is a number. An int too large for a float was an OverflowError; a float was
    # read as no ttl at all, so the list was kept until refresh=True (0.0 too, which says "stale at once")
    with mcp.connect(stdio_command("modern"), timeout=10) as server:
        asked = []

        def request(method, params=None, timeout=None, headers=None):
            asked.append(method)
            return {"tools": [{"name": "t", "inputSchema": {"type": "object"}}], "ttlMs": ttl}

        server.request = request
        for _ in range(2):
            assert server.list_tools() == [{"name": "t", "parameters": {"type": "object"}}]
        assert asked == ["tools/list"] * lists


def test_an_initialize_that_timed_out_is_not_cancelled(tmp_path):
    # 2025-11-25 "Cancellation" 2: the initialize request MUST NOT be cancelled by clients (a timed-out
    # server/discover probe, an ordinary request, is)
    from agenthub.mcp import jsonrpc
    from agenthub.mcp.stdio import StdioChannel

    seen = tmp_path / "seen"
    script = "import sys\nfor line in sys.stdin:\n    open(sys.argv[1], 'a').write(line)\n"
    channel = StdioChannel([sys.executable, "-c", script, str(seen)], timeout=10)
    try:
        for ident, method in ((1, "server/discover"), (2, "initialize")):
            with pytest.raises(TransportError):
                channel.exchange(jsonrpc.request(ident, method, {}), timeout=0.2)
        channel.post(jsonrpc.notification("notifications/last"))  # written after whatever was queued before
        deadline = time.monotonic() + 10
        while "notifications/last" not in (seen.read_text() if seen.exists() else ""):
            assert time.monotonic() < deadline, "the server never got the last notification"
            time.sleep(0.01)
        lines = [json.loads(line) for line in seen.read_text().splitlines()]
        assert [(m.get("method"), (m.get("params") or {}).get("requestId")) for m in lines] == [
            ("server/discover", None), ("notifications/cancelled", 1), ("initialize", None),
            ("notifications/last", None)]
    finally:
        channel.close()
