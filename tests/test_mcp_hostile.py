"""agenthub.mcp against hostile servers, fresh eyes (seventh session): a server's own request whose text cannot
be encoded back, the answer to a server's request that the server never takes, a lone surrogate in a caller's
arguments; each a typed error or an answer within the call's own timeout, nothing left behind."""

import json
import os
import signal
import sys
import threading
import time
import urllib.request

import pytest

from agenthub import mcp
from agenthub.errors import TransportError

import mcp_support
from mcp_support import HERE, leaked, snapshot, stdio_command

HOSTILE_HTTP = os.path.join(HERE, "mcp_hostile_http.py")
URLLIB3_1 = __import__("urllib3").__version__.startswith("1.")
posix = pytest.mark.skipif(sys.platform == "win32", reason="POSIX process groups and /proc")


@pytest.fixture(scope="module")
def hostile(request):
    yield from mcp_support.lazy_servers(request, HOSTILE_HTTP, default="refuse")


@pytest.fixture(autouse=True)
def fresh_eras():
    yield from mcp_support.fresh_eras()


def posted(server):
    """The JSON messages POSTed to the server, in order (a body that is none, a POST cut before its body, left out:
    each call leaves out the same ones, so a count taken before stays an index into what comes after)."""
    with urllib.request.urlopen(server.base + "/log", timeout=10) as answer:
        texts = json.loads(answer.read())
    out = []
    for text in texts:
        try:
            doc = json.loads(text)
        except ValueError:
            continue
        if isinstance(doc, dict):
            out.append(doc)
    return out


# -- a lone surrogate in what the client sends -------------------------------------------------------------

def test_a_server_request_whose_method_holds_a_lone_surrogate_is_refused_and_the_call_answered(hostile):
    fake = hostile()
    before = snapshot()
    with mcp.connect(fake.url, timeout=10) as server:
        assert server.protocol_version == "2025-06-18"
        # its answer names the method, lone surrogate and all: it must still be encodable (it was a
        # UnicodeEncodeError out of call_tool)
        assert server.call_tool("ask_surrogate", {}, timeout=5) == {"type": "tool_result", "text": "answered"}
    answers = [doc for doc in posted(fake) if doc.get("id") == "s-1"]
    assert answers == [{"jsonrpc": "2.0", "id": "s-1", "error": {
        "code": -32601, "message": "agenthub does not offer sampling/createMessage\ud800"}}]
    assert leaked(before) == []


@posix
def test_a_lone_surrogate_in_the_arguments_is_sent_escaped_not_a_unicode_error():
    before = snapshot()
    with mcp.connect(stdio_command("modern"), timeout=10) as server:
        # the server reads "a\ud800b" and says it back; the client's result has U+FFFD in its place
        assert server.call_tool("echo", {"text": "a\ud800b"}) == {"type": "tool_result", "text": "a\ufffdb"}
        assert server.call_tool("echo", {"text": "after"})["text"] == "after"
    assert leaked(before) == []


# -- the answer to a server's own request, within the call's deadline -----------------------------------------

def test_the_answer_to_a_server_request_never_taken_does_not_outlast_the_calls_timeout(hostile):
    fake = hostile()
    before = snapshot()
    with mcp.connect(fake.url, timeout=30) as server:
        started = time.monotonic()
        with pytest.raises(TransportError) as info:
            server.call_tool("ask_stall", {}, timeout=2)  # the POST of the ping's answer gets no head
        elapsed = time.monotonic() - started
    assert info.value.timeout is True and info.value.aborted is False
    assert "no response within the timeout of 2 s (in all)" in str(info.value)
    assert 1.9 <= elapsed < 5.0  # the connection's 30 s before
    assert leaked(before) == []


# -- stdio: pipes, ids, the server's own requests -----------------------------------------------------------------

HOSTILE_STDIO = os.path.join(HERE, "mcp_hostile_stdio.py")


def hostile_stdio(fault):
    return [sys.executable, HOSTILE_STDIO, fault]


def _threads_of(pid):
    return sorted(t.name for t in threading.enumerate() if t.name.endswith("-{}".format(pid)))


@posix
def test_close_returns_at_once_though_a_process_outside_the_group_keeps_the_pipes_open():
    before = snapshot()
    server = mcp.connect(hostile_stdio("setsid-child"), timeout=8)
    try:
        assert server.call_tool("echo", {"text": "hi"})["text"] == "hi"
        pid = server._channel.pid
        deadline = time.monotonic() + 5
        while "child " not in server.stderr and time.monotonic() < deadline:
            time.sleep(0.02)
        child = int(server.stderr.split("child ", 1)[1].split()[0])
        started = time.monotonic()
        server.close()
        elapsed = time.monotonic() - started
        # the readers were blocked on pipes the child keeps open: close() waited 2 s for each, then left them
        assert _threads_of(pid) == []
        assert elapsed < 1.5
    finally:
        server.close()
        try:
            os.kill(child, signal.SIGKILL)  # in a session of its own: not the server's group, not close()'s to end
        except (NameError, OSError):
            pass
    assert leaked(before) == []


@posix
def test_the_servers_own_requests_are_refused_but_ping_is_answered():
    before = snapshot()
    with mcp.connect(hostile_stdio("ask"), timeout=10) as server:
        answers = json.loads(server.call_tool("echo", {})["text"])
    # agenthub declares no client capabilities: sampling, roots and elicitation are "method not found"
    assert answers == [
        {"jsonrpc": "2.0", "id": "srv-0", "error": {"code": -32601,
                                                    "message": "agenthub does not offer sampling/createMessage"}},
        {"jsonrpc": "2.0", "id": "srv-1", "error": {"code": -32601, "message": "agenthub does not offer roots/list"}},
        {"jsonrpc": "2.0", "id": "srv-2", "error": {"code": -32601,
                                                    "message": "agenthub does not offer elicitation/create"}},
        {"jsonrpc": "2.0", "id": "srv-3", "result": {}}]
    assert leaked(before) == []


@posix
@pytest.mark.parametrize("fault", ["other-id", "null-id-error"])
def test_an_answer_for_no_pending_call_is_a_timeout_within_the_calls_deadline(fault):
    before = snapshot()
    with mcp.connect(hostile_stdio(fault), timeout=10) as server:
        started = time.monotonic()
        with pytest.raises(TransportError) as info:
            server.call_tool("echo", {"text": "hi"}, timeout=1)
        elapsed = time.monotonic() - started
    assert info.value.timeout is True and "no answer to tools/call within 1 s" in str(info.value)
    assert 0.9 <= elapsed < 3.0
    assert leaked(before) == []


@posix
def test_answers_to_ids_the_client_never_used_are_dropped_not_kept():
    # a server could otherwise make the client hold many big answers nobody will ever ask for
    before = snapshot()
    with mcp.connect(hostile_stdio("unknown-ids"), timeout=10) as server:
        assert server.call_tool("echo", {"text": "hi"})["text"] == "hi"  # after the 20 answers for no one
        assert server._channel._state.late == {}
        assert server._channel.late_answer("nobody-19") is None
    assert leaked(before) == []


@posix
def test_a_server_that_closes_stdout_and_lingers_fails_the_call_and_is_killed_on_close():
    before = snapshot()
    server = mcp.connect(hostile_stdio("close-stdout"), timeout=8)  # it ignores SIGTERM
    started = time.monotonic()
    with pytest.raises(TransportError) as info:
        server.call_tool("echo", {"text": "hi"}, timeout=6)
    assert time.monotonic() - started < 4.0  # the reader's 2 s wait for an exit status, not the call's 6 s
    assert info.value.exit_code is None and info.value.timeout is False
    assert "closed its stdout before answering" in str(info.value)
    started = time.monotonic()
    server.close()
    assert time.monotonic() - started < 6.0  # two graces of 2 s, then SIGKILL
    assert leaked(before) == []


@posix
def test_bytes_that_are_not_utf8_on_stdout_are_a_protocol_error():
    from agenthub.errors import StreamProtocolError

    before = snapshot()
    with mcp.connect(hostile_stdio("bad-bytes"), timeout=8) as server:
        with pytest.raises(StreamProtocolError) as info:
            server.call_tool("echo", {"text": "hi"})
        assert "not a JSON-RPC message on stdout" in str(info.value) and "garbage" in str(info.value)
        with pytest.raises(StreamProtocolError):  # the connection is broken for every later call
            server.call_tool("echo", {"text": "again"})
    assert leaked(before) == []


# -- credentials echoed in an error answer ------------------------------------------------------------------------

def test_an_error_answer_on_a_stream_echoing_the_authorization_header_is_scrubbed(hostile):
    from agenthub.mcp import MCPError

    fake = hostile()
    before = snapshot()
    with mcp.connect(fake.url, timeout=10, headers={"Authorization": "Bearer sk-test-0123456789abcdef"}) as server:
        with pytest.raises(MCPError) as info:
            server.call_tool("leak_sse", {})  # a JSON answer's error was scrubbed; one on an SSE stream was not
    assert info.value.code == -32603 and info.value.method == "tools/call" and info.value.status == 200
    assert info.value.message == "denied for ***" and info.value.data == {"seen": "***"}
    assert "sk-test-0123456789abcdef" not in str(info.value) + repr(info.value.__dict__) + repr(info.value.args)
    assert leaked(before) == []


@posix
def test_an_error_answer_echoing_an_env_value_is_scrubbed():
    from agenthub.mcp import MCPError

    before = snapshot()
    with mcp.connect(hostile_stdio("leak-env"), timeout=10, env={"SERVER_TOKEN": "tok-0123456789abcdef"}) as server:
        with pytest.raises(MCPError) as info:
            server.call_tool("echo", {})
    assert info.value.code == -32603 and info.value.method == "tools/call" and info.value.status is None
    assert info.value.message == "bad token ***" and info.value.data == {"token": "***"}
    assert "tok-0123456789abcdef" not in str(info.value) + repr(info.value.__dict__) + repr(info.value.args)
    assert leaked(before) == []


@posix
def test_a_progress_token_that_is_no_valid_id_does_not_kill_the_reader(monkeypatch):
    died = []
    monkeypatch.setattr(threading, "excepthook", died.append)
    before = snapshot()
    with mcp.connect(hostile_stdio("list-token"), timeout=10) as server:
        started = time.monotonic()
        # the token [id] was looked up among the calls in flight: a TypeError (unhashable) ended the stdout
        # reader, and this call (and every later one) waited for its timeout though the server had answered
        assert server.call_tool("echo", {"text": "hi"}, timeout=5) == {"type": "tool_result", "text": "hi"}
        assert server.call_tool("echo", {"text": "again"}, timeout=5)["text"] == "again"
        assert time.monotonic() - started < 2.0
    assert died == []
    assert leaked(before) == []


@posix
def test_a_server_that_exits_in_the_middle_of_a_message_says_its_exit_status():
    before = snapshot()
    with mcp.connect(hostile_stdio("half-line"), timeout=10) as server:
        started = time.monotonic()
        with pytest.raises(TransportError) as info:
            server.call_tool("echo", {"text": "hi"})
        assert time.monotonic() - started < 3.0
    # it was a StreamProtocolError advising that "a log belongs on stderr", the exit status lost
    assert info.value.exit_code == 5 and info.value.timeout is False
    assert str(info.value) == ("python: the server process exited with status 5 in the middle of a message "
                               "(its last 63 bytes were no complete line)")
    assert leaked(before) == []


# -- HTTP answers that are broken on the wire: each a typed error within the call's timeout --------------------

@pytest.mark.parametrize("tool,kind,words", [
    ("bad_utf8_sse", "StreamProtocolError", "not valid UTF-8"),
    ("comments", "TransportError", "no response within the timeout of 1 s (in all)"),
    ("trickle", "TransportError", "no response within the timeout of 1 s (in all)"),
    # urllib3 1.x does not enforce Content-Length: the short body is read as bad JSON
    ("cut_json", "StreamProtocolError" if URLLIB3_1 else "TransportError",
     "neither a stream nor JSON" if URLLIB3_1 else "the connection broke in the middle of the answer"),
    ("html200", "StreamProtocolError", "got an HTML page"),
    ("many_headers", "TransportError", "the connection failed"),
    ("long_header", "TransportError", "the connection failed"),
    ("not_jsonrpc", "StreamProtocolError", "not JSON-RPC 2.0"),
    ("batch", "StreamProtocolError", "not JSON-RPC 2.0"),
    ("other_id_sse", "StreamProtocolError", "the stream answered request '999999'"),
    ("long_line_sse", "StreamProtocolError", "exceeds 16777216 bytes"),
    ("int_digits", "StreamProtocolError", "neither a stream nor JSON"),
    ("deep", "StreamProtocolError", "neither a stream nor JSON"),
])
def test_a_broken_answer_is_a_typed_error_within_the_calls_timeout_and_the_next_call_works(hostile, tool, kind,
                                                                                            words):
    from agenthub import errors

    fake = hostile()
    mcp.connect(fake.url, timeout=10).close()  # what a first connection sets up for the process is not this test's
    before = snapshot()
    with mcp.connect(fake.url, timeout=10) as server:
        started = time.monotonic()
        with pytest.raises(getattr(errors, kind)) as info:
            server.call_tool(tool, {}, timeout=1)
        assert time.monotonic() - started < 2.5
        assert words in str(info.value)
        # which server: an SSE stream's own errors (not UTF-8, a line too long) named none
        assert str(info.value).startswith(fake.url + ": ") and info.value.client == fake.url
        del info  # its traceback holds the broken connection until collected
        assert server.call_tool("echo", {"text": "still"}, timeout=5)["text"] == "still"
    assert leaked(before) == []


def test_bytes_that_are_not_utf8_in_a_json_answer_become_replacement_characters(hostile):
    with mcp.connect(hostile().url, timeout=10) as server:
        assert server.call_tool("bad_utf8_json", {}) == {"type": "tool_result", "text": "a\ufffd\ufffdb"}


def test_a_timed_out_calls_cancellation_does_not_outlast_the_calls_timeout(hostile):
    fake = hostile()
    before = snapshot()
    server = mcp.connect(fake.url, timeout=10)
    try:
        start = len(posted(fake))
        started = time.monotonic()
        with pytest.raises(TransportError) as info:
            server.call_tool("hang", {}, timeout=2)  # and the server never answers the POST of its cancellation
        elapsed = time.monotonic() - started
        assert info.value.timeout is True and "no response within the timeout of 2 s (in all)" in str(info.value)
        del info
        assert 1.9 <= elapsed < 3.0  # the cancellation's POST took up to 5 s more, in the caller's thread
        # the cancellation is still said (2025-11-25 "Cancellation": a dropped connection is none)
        call = [doc for doc in posted(fake)[start:] if (doc.get("params") or {}).get("name") == "hang"][-1]
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            cancels = [doc for doc in posted(fake)[start:] if doc.get("method") == "notifications/cancelled"]
            if cancels:
                break
            time.sleep(0.05)
        assert cancels == [{"jsonrpc": "2.0", "method": "notifications/cancelled",
                            "params": {"requestId": call["id"], "reason": "timeout"}}]
    finally:
        started = time.monotonic()
        server.close()
        assert time.monotonic() - started < 4.0  # its cancellation said once more, 2 s at most, then the DELETE
    assert leaked(before) == []


@pytest.mark.parametrize("mode", ["ask", "stall"])
def test_close_ends_a_listening_stream_stuck_on_its_head_or_on_the_answer_to_a_servers_ping(hostile, mode):
    fake = hostile(mode)
    before = snapshot()
    server = mcp.connect(fake.url, timeout=10)
    deadline = time.monotonic() + 5
    while mode == "ask" and time.monotonic() < deadline and not any(
            doc.get("id") == "s-stall" and "result" in doc for doc in posted(fake)):
        time.sleep(0.05)  # the listener answered the ping: its POST now waits for a head that never comes
    assert server.call_tool("echo", {"text": "x"}, timeout=5)["text"] == "x"
    started = time.monotonic()
    server.close()
    assert time.monotonic() - started < 1.0
    assert leaked(before) == []


def test_a_listening_stream_ended_after_each_message_with_retry_0_is_not_reopened_in_a_busy_loop(hostile,
                                                                                                  monkeypatch):
    # each stream brings a message, so none is quiet and no backoff grows: the server's "retry: 0" alone would have
    # the listener reopen it at once, for as long as the handle is open
    from agenthub import transport
    from agenthub.mcp import http

    waits = []
    sleep = transport.Watch.sleep

    def recorded(self, seconds):
        if threading.current_thread().name == "agenthub-mcp-listen":
            waits.append(seconds)
        return sleep(self, seconds)

    monkeypatch.setattr(transport.Watch, "sleep", recorded)
    fake = hostile("flap")
    before = snapshot()
    with mcp.connect(fake.url, timeout=10) as server:
        deadline = time.monotonic() + 10
        while len(waits) < 3 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert server.call_tool("echo", {"text": "x"}, timeout=5)["text"] == "x"
    assert len(waits) >= 3
    assert min(waits) == http.LISTEN_MIN_WAIT == 0.1
    assert leaked(before) == []


def test_a_redirect_is_not_followed_and_the_headers_stay_home(hostile):
    from agenthub.errors import UpstreamError

    fake = hostile()
    start = len(posted(fake))
    with mcp.connect(fake.url, timeout=10, headers={"Authorization": "Bearer sk-test-0123456789abcdef"}) as server:
        with pytest.raises(UpstreamError) as info:
            server.call_tool("redirect", {})
    assert info.value.status == 307 and str(info.value).startswith("HTTP 307 Temporary Redirect")
    assert [doc.get("method") for doc in posted(fake)[start:]] == ["server/discover", "initialize",
                                                                   "notifications/initialized", "tools/call"]


@posix
def test_arguments_json_cannot_carry_are_a_config_error_and_the_connection_stays_usable():
    import datetime

    from agenthub.errors import ConfigError

    with mcp.connect(stdio_command("modern"), timeout=10) as server:
        with pytest.raises(ConfigError) as info:  # json.loads reads NaN from a model's arguments: a ValueError
            server.call_tool("echo", {"n": float("nan")})
        assert str(info.value) == ("tools/call cannot be sent as JSON: it holds a number JSON cannot carry (NaN or "
                                   "Infinity)")
        with pytest.raises(ConfigError) as info:  # a TypeError
            server.call_tool("echo", {"day": datetime.date(2026, 12, 6)})
        assert str(info.value) == "tools/call cannot be sent as JSON: Object of type date is not JSON serializable"
        deep = []  # type: list
        for _ in range(100000):
            deep = [deep]
        with pytest.raises(ConfigError) as info:  # a RecursionError, raised out of call_tool as it was
            server.call_tool("echo", {"deep": deep})
        assert str(info.value) == "tools/call cannot be sent as JSON: it is nested too deeply"
        assert server.call_tool("echo", {"text": "ok"})["text"] == "ok"


@posix
def test_close_ends_a_write_stuck_on_a_pipe_that_a_process_outside_the_group_holds():
    before = snapshot()
    server = mcp.connect(hostile_stdio("setsid-stdin"), timeout=8)
    child = None
    try:
        deadline = time.monotonic() + 5
        while "child " not in server.stderr and time.monotonic() < deadline:
            time.sleep(0.02)
        child = int(server.stderr.split("child ", 1)[1].split()[0])
        pid = server._channel.pid
        with pytest.raises(TransportError):
            server.call_tool("deaf", {}, timeout=0.5)  # it reads nothing from now on
        with pytest.raises(TransportError) as info:  # the write fills the pipe and blocks
            server.call_tool("echo", {"text": "x" * (2 * 1024 * 1024)}, timeout=1)
        assert info.value.timeout is True and "did not read its stdin" in str(info.value)
        del info
        started = time.monotonic()
        server.close()
        elapsed = time.monotonic() - started
        # the server was killed, but the child keeps the pipe's read end: the write stayed blocked, close()
        # waited 2 s for the writer and left it
        assert _threads_of(pid) == []
        assert elapsed < 1.5
    finally:
        server.close()
        if child is not None:
            try:
                os.kill(child, signal.SIGKILL)
            except OSError:
                pass
    assert leaked(before) == []


@posix
def test_a_server_that_closed_its_stdin_and_lingers_fails_the_next_call_at_once():
    before = snapshot()
    with mcp.connect(hostile_stdio(""), timeout=20) as server:
        assert server.call_tool("shut", {})["text"] == "shut"
        started = time.monotonic()
        with pytest.raises(TransportError) as info:
            server.call_tool("echo", {"text": "hi"})
        # each call waited for its 20 s, then the server was ended as one that does not read its stdin; now the
        # writer gives a server that exits 3 s to do so (the reader then says why), and this one does not
        assert time.monotonic() - started < 6.0
        assert str(info.value) == "python: the server closed its stdin (it reads no more requests)"
        assert info.value.timeout is False and info.value.exit_code is None
        with pytest.raises(TransportError):
            server.call_tool("echo", {"text": "again"})
        del info
    assert leaked(before) == []


def test_a_call_whose_session_is_gone_starts_a_new_one_within_the_calls_timeout(hostile):
    fake = hostile()
    before = snapshot()
    with mcp.connect(fake.url, timeout=20) as server:
        started = time.monotonic()
        with pytest.raises(TransportError) as info:
            server.call_tool("gone", {}, timeout=2)  # a 404; the initialize that follows is never answered
        elapsed = time.monotonic() - started
        assert info.value.timeout is True
        del info
    assert 1.9 <= elapsed < 3.5  # the new session's initialize had the connection's 20 s of its own
    assert leaked(before) == []


def test_close_from_another_thread_ends_a_call_that_is_starting_a_new_session_at_once(hostile):
    fake = hostile()
    before = snapshot()
    server = mcp.connect(fake.url, timeout=20)
    box = {}

    def call():
        try:
            server.call_tool("gone", {}, timeout=15)  # a 404; the initialize that follows is never answered
        except Exception as error:  # noqa: B902 - handed to the test
            box["error"] = error

    thread = threading.Thread(target=call)
    thread.start()
    time.sleep(0.5)
    started = time.monotonic()
    server.close()  # it waited for the handle's lock, which the new session's initialize held
    elapsed = time.monotonic() - started
    thread.join(20)
    assert elapsed < 3.0
    assert isinstance(box["error"], TransportError) and box["error"].aborted is True
    del box
    assert leaked(before) == []
