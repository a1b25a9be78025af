"""agenthub.mcp over Streamable HTTP against a fake server subprocess: both eras, the fallback, the
headers, credentials, and the faults (each a typed error within the timeout, nothing left behind)."""

import base64
import gc
import json
import threading
import time
import urllib.request

import pytest

from agenthub import mcp
from agenthub.errors import ConfigError, ServerError, StreamProtocolError, TransportError, UnsupportedOperationError
from agenthub.mcp import InputRequiredError, MCPError

import mcp_support
from mcp_support import leaked, snapshot

SECRET = "Bearer sk-test-0123456789abcdef"


@pytest.fixture(scope="module")
def servers(request):
    yield from mcp_support.lazy_servers(request, mcp_support.FAKE_HTTP)


@pytest.fixture(autouse=True)
def fresh_eras():
    yield from mcp_support.fresh_eras()


def log(server, listening=False):
    """The requests the fake saw; without ``listening``, the handshake era's listening GETs (a thread of the
    handle opens them, at a moment of its own) left out."""
    with urllib.request.urlopen(server.base + "/log", timeout=10) as answer:
        seen = json.loads(answer.read())
    if listening:
        return seen
    return [r for r in seen if r["method"] != "GET" or "Last-Event-ID" in r["headers"]]


def lower(headers):
    return {k.lower(): v for k, v in headers.items()}


def test_modern_request_carries_meta_and_the_mirrored_headers(servers):
    fake = servers("modern")
    start = len(log(fake))
    with mcp.connect(fake.url, timeout=10) as server:
        assert server.protocol_version == "2026-07-28"
        assert server.server_info == {"name": "fake", "version": "1"}
        assert server.call_tool("echo", {"text": "hi"}) == {"type": "tool_result", "text": "hi"}
    seen = log(fake)[start:]
    assert [r["body"]["method"] for r in seen] == ["server/discover", "tools/call"]
    call = seen[1]
    headers = lower(call["headers"])
    # 2026-07-28 transports/streamable-http "Request Metadata": version, method and name mirrored
    assert headers["mcp-protocol-version"] == "2026-07-28"
    assert headers["mcp-method"] == "tools/call"
    assert headers["mcp-name"] == "echo"
    assert headers["accept"] == "application/json, text/event-stream"
    assert "mcp-session-id" not in headers
    meta = call["body"]["params"]["_meta"]
    assert meta["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"
    assert meta["io.modelcontextprotocol/clientCapabilities"] == {}
    assert meta["io.modelcontextprotocol/clientInfo"]["name"] == "agenthub"
    assert not any(r["method"] == "DELETE" for r in seen)  # nothing to end: no session


def test_non_ascii_tool_name_goes_base64_in_mcp_name(servers):
    fake = servers("modern")
    start = len(log(fake))
    with mcp.connect(fake.url, timeout=10) as server:
        server.call_tool("météo", {})
    call = log(fake)[start:][-1]
    assert lower(call["headers"])["mcp-name"] == "=?base64?" + base64.b64encode("météo".encode()).decode() + "?="


def test_tools_all_pages_and_x_mcp_header_mirrored_bad_annotation_left_out(servers):
    fake = servers("modern")
    with mcp.connect(fake.url, timeout=10) as server:
        names = [tool["name"] for tool in server.list_tools()]
        # bad_header_tool marks a number: 2026-07-28 says such a tool is left out of tools/list
        assert names == ["echo", "region_tool"]
        assert server.call_tool("region_tool", {"region": "us-west1", "q": "x"})["text"] == "region header: us-west1"


def test_tool_list_is_cached_for_its_ttl(servers):
    fake = servers("modern")
    with mcp.connect(fake.url, timeout=10) as server:
        start = len(log(fake))
        server.list_tools()
        server.list_tools()  # ttlMs 60000: fresh
        assert [r["body"]["method"] for r in log(fake)[start:]] == ["tools/list", "tools/list"]  # two pages once
        server.list_tools(refresh=True)
        assert len(log(fake)) == start + 4


def test_a_list_whose_ttl_ran_out_is_listed_again(servers):
    # the cached entry's expiry was read into the name of the call's deadline: once a ttlMs ran out, the
    # next list_tools raised "no answer within the call's timeout" without sending anything
    import time

    fake = servers("modern")
    with mcp.connect(fake.url, timeout=10) as server:
        first = server.list_tools()
        fresh_until, value = server._lists["tools"]
        server._lists["tools"] = (time.monotonic() - 1.0, value)  # its ttlMs (60 s) ran out
        start = len(log(fake))
        assert server.list_tools() == first
        assert [r["body"]["method"] for r in log(fake)[start:]] == ["tools/list", "tools/list"]  # both pages


def test_legacy_server_gets_initialize_then_the_session_id_and_a_delete_on_close(servers):
    fake = servers("legacy")
    start = len(log(fake))
    with mcp.connect(fake.url, timeout=10) as server:
        assert server.protocol_version == "2025-11-25"
        assert server.call_tool("echo", {"text": "old"})["text"] == "old"
        sid = server._session.session_id
    seen = log(fake)[start:]
    assert [(r["method"], (r["body"] or {}).get("method")) for r in seen] == [
        ("POST", "server/discover"), ("POST", "initialize"), ("POST", "notifications/initialized"),
        ("POST", "tools/call"), ("DELETE", None)]
    listening = [r for r in log(fake, listening=True) if r["method"] == "GET"
                 and r["headers"].get("MCP-Session-Id") == sid]
    assert len(listening) <= 1  # the listening stream, if its thread got there before close()
    seen += listening
    assert "_meta" not in seen[1]["body"]["params"]
    assert seen[1]["body"]["params"]["protocolVersion"] == "2025-11-25"
    for request in seen[2:]:
        assert lower(request["headers"])["mcp-session-id"] == sid
        assert lower(request["headers"])["mcp-protocol-version"] == "2025-11-25"


def test_era_is_remembered_per_origin(servers):
    fake = servers("legacy")
    mcp.connect(fake.url, timeout=10).close()
    start = len(log(fake))
    with mcp.connect(fake.url, timeout=10) as server:
        assert server.protocol_version == "2025-11-25"
    assert log(fake)[start]["body"]["method"] == "initialize"  # no second probe


def test_expired_session_is_initialised_again_once(servers):
    fake = servers("legacy")
    with mcp.connect(fake.url, timeout=10) as server:
        first = server._session.session_id
        urllib.request.urlopen(urllib.request.Request(fake.base + "/expire", data=b"", method="POST"), timeout=10)
        assert server.call_tool("echo", {"text": "again"})["text"] == "again"
        assert server._session.session_id not in (None, first)


def test_legacy_server_asks_a_ping_on_the_stream_and_is_answered(servers):
    fake = servers("legacy")
    with mcp.connect(fake.url, timeout=10) as server:
        start = len(log(fake))
        assert server.call_tool("ping_first", {})["text"] == "pinged"
    answers = [r["body"] for r in log(fake)[start:] if r["body"] and "result" in r["body"]]
    assert answers == [{"jsonrpc": "2.0", "id": "srv-1", "result": {}}]


def test_dual_era_server_is_spoken_to_in_the_modern_era(servers):
    with mcp.connect(servers("dual").url, timeout=10) as server:
        assert server.protocol_version == "2026-07-28"


def test_pinned_legacy_version_on_a_dual_server(servers):
    with mcp.connect(servers("dual").url, timeout=10, protocol="2025-11-25") as server:
        assert server.protocol_version == "2025-11-25"
        assert server._session.session_id


def test_modern_only_server_refuses_a_pinned_legacy_version_with_its_own_error(servers):
    with pytest.raises(MCPError) as info:
        mcp.connect(servers("modern").url, timeout=10, protocol="2025-11-25")
    assert info.value.code == -32022 and info.value.status == 400


def test_deprecated_http_sse_transport_is_refused_clearly(servers):
    with pytest.raises(UnsupportedOperationError) as info:
        mcp.connect(servers("httpsse").url, timeout=10)
    assert "HTTP+SSE" in str(info.value) and "2024-11-05" in str(info.value)


def test_progress_notifications_then_the_result_on_an_sse_stream(servers):
    for era in ("modern", "legacy"):
        with mcp.connect(servers(era).url, timeout=10) as server:
            assert server.call_tool("progress", {})["text"] == "after progress"


def test_input_required_is_refused_saying_what_was_wanted(servers):
    with mcp.connect(servers("modern").url, timeout=10) as server:
        with pytest.raises(InputRequiredError) as info:
            server.call_tool("ask", {})
    assert "Please provide your GitHub username" in str(info.value)
    assert "elicitation/create" in str(info.value)
    assert list(info.value.input_requests) == ["github_login"]


# -- faults -------------------------------------------------------------------------------------------

def test_stream_closed_before_the_result(servers):
    with mcp.connect(servers("modern").url, timeout=10) as server:
        with pytest.raises(StreamProtocolError) as info:
            server.call_tool("cut", {})
    assert "ended before the response" in str(info.value)


def test_legacy_stream_closed_after_an_event_id_is_resumed_with_last_event_id(servers):
    fake = servers("legacy")
    with mcp.connect(fake.url, timeout=10) as server:
        start = len(log(fake))
        assert server.call_tool("resume", {})["text"] == "resumed"
        sid = server._session.session_id
    post, get = log(fake)[start:start + 2]
    assert post["method"] == "POST" and get["method"] == "GET"
    headers = lower(get["headers"])
    assert headers["last-event-id"].startswith("ev-")
    assert (headers["accept"], headers["mcp-session-id"], headers["mcp-protocol-version"]) == (
        "text/event-stream", sid, "2025-11-25")


def test_legacy_stream_cut_without_an_event_id_is_an_error(servers):
    with mcp.connect(servers("legacy").url, timeout=10) as server:
        with pytest.raises(StreamProtocolError) as info:
            server.call_tool("cut", {})
    assert "ended before the response" in str(info.value)


def test_result_for_another_id(servers):
    with mcp.connect(servers("modern").url, timeout=10) as server:
        with pytest.raises(StreamProtocolError) as info:
            server.call_tool("other_id", {})
    assert "not the response to request" in str(info.value)


def test_a_100_mb_answer_is_refused_bounded(servers):
    fake = servers("modern")
    with mcp.connect(fake.url, timeout=30) as server:
        with pytest.raises(StreamProtocolError) as info:
            server.call_tool("huge", {})
    # MAX_MESSAGE_BYTES: read no further
    assert str(info.value) == fake.url + ": an SSE line exceeds 16777216 bytes" and info.value.client == fake.url


def test_never_answering_times_out(servers):
    with mcp.connect(servers("modern").url, timeout=10) as server:
        with pytest.raises(TransportError) as info:
            server.call_tool("hang", {}, timeout=0.5)
    assert info.value.timeout is True


def test_a_legacy_call_that_times_out_is_cancelled_by_notification(servers):
    fake = servers("legacy")
    with mcp.connect(fake.url, timeout=10) as server:
        start = len(log(fake))
        with pytest.raises(TransportError):
            server.call_tool("hang", {}, timeout=0.5)
        deadline = time.monotonic() + 5  # said on a thread of its own: the call's time is up
        while len(log(fake)) < start + 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        seen = [r["body"] for r in log(fake)[start:]]
    assert seen[1] == {"jsonrpc": "2.0", "method": "notifications/cancelled",
                       "params": {"requestId": seen[0]["id"], "reason": "timeout"}}


def test_502_with_an_html_page_is_a_server_error(servers):
    with mcp.connect(servers("modern").url, timeout=10) as server:
        with pytest.raises(ServerError) as info:
            server.call_tool("bad502", {})
    assert info.value.status == 502 and "502 Bad Gateway" in str(info.value)


def hanging_call(server):
    """A thread calling the fake's ``hang`` tool, started, and the list its TransportError goes to."""
    errors = []

    def call():
        try:
            server.call_tool("hang", {})
        except TransportError as error:
            errors.append(error)

    thread = threading.Thread(target=call)
    thread.start()
    return thread, errors


def test_abort_from_another_thread(servers):
    server = mcp.connect(servers("modern").url, timeout=30)
    thread, errors = hanging_call(server)
    time.sleep(0.3)
    server.close()
    thread.join(10)
    assert not thread.is_alive() and len(errors) == 1 and errors[0].aborted is True


def test_close_cancels_a_legacy_call_in_flight_by_notification(servers):
    """2025-11-25 "Cancellation": a dropped connection is no cancellation; close() says it, before the DELETE."""
    fake = servers("legacy")
    server = mcp.connect(fake.url, timeout=30)
    start = len(log(fake))
    thread, errors = hanging_call(server)
    deadline = time.monotonic() + 10
    while len(log(fake)) == start and time.monotonic() < deadline:
        time.sleep(0.02)
    server.close()
    thread.join(10)
    assert not thread.is_alive() and len(errors) == 1 and errors[0].aborted is True
    seen = log(fake)[start:]
    assert [r["method"] for r in seen] == ["POST", "POST", "DELETE"]
    assert seen[1]["body"] == {"jsonrpc": "2.0", "method": "notifications/cancelled",
                               "params": {"requestId": seen[0]["body"]["id"],
                                          "reason": "the client closed the connection"}}


# -- credentials --------------------------------------------------------------------------------------

def test_headers_go_to_the_endpoint_and_never_into_an_error(servers):
    fake = servers("modern")
    start = len(log(fake))
    with mcp.connect(fake.url, timeout=10, headers={"Authorization": SECRET}) as server:
        with pytest.raises(MCPError) as info:
            server.call_tool("leak", {})
    assert lower(log(fake)[start]["headers"])["authorization"] == SECRET
    assert "sk-test-0123456789abcdef" not in str(info.value)
    assert "sk-test-0123456789abcdef" not in repr(info.value.__dict__)
    assert "denied for" in str(info.value)
    assert info.value.data == {"seen": {"authorization": "***"}}


def test_user_info_in_the_url_never_shows(servers):
    fake = servers("modern")
    url = fake.url.replace("http://", "http://user:hunter2-password@")
    with mcp.connect(url, timeout=10) as server:
        with pytest.raises(TransportError) as info:
            server.call_tool("hang", {}, timeout=0.3)
    assert "hunter2-password" not in str(info.value)


def test_bad_headers_are_config_errors_before_anything_is_sent():
    with pytest.raises(ConfigError):
        mcp.connect("http://127.0.0.1:9/mcp", headers={"X": "a\r\nInjected: 1"})
    with pytest.raises(ConfigError):
        mcp.connect("http://127.0.0.1:9/mcp", env={"A": "b"})
    with pytest.raises(ConfigError):
        mcp.connect("http://evil.test\\@127.0.0.1/mcp")


@pytest.mark.parametrize("headers, message", [
    ({"Authorization": " Bearer sk-mcp-secret-0123456789"}, "headers['Authorization'] starts or ends with white space"),
    ({"Authorization": "Bearer sk-mcp-secret\u200b0123456789"},
     "headers['Authorization'] holds a zero-width space (U+200B) at position 20 of 31: invisible, copied along with it?"),
    ({"Authorization": "Bearer sk-mcp-secret-\u20ac0123456789"},
     "headers['Authorization'] holds the character U+20AC at position 21 of 32: header values are Latin-1"),
    ({"X-Token": "sk-mcp-secret-a-0123456789", "x-token": "sk-mcp-secret-b-0123456789"},
     "headers names the header 'x-token' twice ('X-Token' and 'x-token'): header names are case-insensitive, so "
     "only one would be sent"),
    ({"Bad Name": "sk-mcp-secret-0123456789"}, "headers key 'Bad Name' is not a valid header name (it holds the "
                                               "character U+0020)"),
], ids=["white-space", "invisible", "not-latin-1", "named-twice", "bad-name"])
def test_headers_are_checked_as_a_model_clients_are(headers, message):
    """What a model client's default_headers refuse before anything is sent, mcp.connect took: a value requests then
    could not send (a TransportError at the first request), a header named twice (one value silently dropped), a
    name HTTP does not allow (sent as it was).  A ConfigError in the same words, never showing the value."""
    with pytest.raises(ConfigError) as info:
        mcp.connect("http://127.0.0.1:9/mcp", headers=headers)
    assert str(info.value) == message
    assert "sk-mcp-secret" not in str(info.value)


def test_a_thousand_calls_leave_threads_fds_and_processes_where_they_were(servers):
    fake = servers("modern")
    mcp.connect(fake.url, timeout=10).close()  # the server's first connection and the era memory
    before = snapshot()
    with mcp.connect(fake.url, timeout=10) as server:
        for number in range(1000):
            assert server.call_tool("echo", {"text": str(number)})["text"] == str(number)
    assert leaked(before) == []


def test_the_faults_leave_threads_fds_and_processes_where_they_were(servers):
    fake = servers("modern")
    mcp.connect(fake.url, timeout=10).close()
    gc.collect()  # what earlier tests left for the collector is not this test's
    before = snapshot()
    with mcp.connect(fake.url, timeout=10) as server:
        for name in ("cut", "other_id", "bad502", "huge", "hang", "ask"):
            with pytest.raises((StreamProtocolError, ServerError, TransportError, MCPError)):
                server.call_tool(name, {}, timeout=1.0)
        assert server.call_tool("echo", {"text": "still here"})["text"] == "still here"
    # a read that timed out leaves its connection in the cycle of urllib3's exception and traceback
    # (agenthub.transport's TransportError chains it as the cause): freed by the collector, not leaked
    gc.collect()
    assert leaked(before) == []


# -- issue 41 item 3: what a call costs ----------------------------------------------------------------------------

def test_calls_start_no_thread_each(servers, monkeypatch):
    """A step's deadline is kept by one shared thread, not a threading.Timer per call (a thread each)."""
    started = []
    real = threading.Thread.start

    def start(self):
        started.append(self.name)
        return real(self)

    with mcp.connect(servers("modern").url, timeout=10) as server:
        server.call_tool("echo", {"text": "warm"})
        monkeypatch.setattr(threading.Thread, "start", start)
        for n in range(20):
            assert server.call_tool("echo", {"text": str(n)})["text"] == str(n)
    monkeypatch.undo()
    assert len(started) <= 1, started  # was 20 (one Timer a call); at most the deadlines' thread, started again


def test_the_proxy_environment_is_read_once_per_connection_and_still_obeyed(servers, monkeypatch):
    import requests.sessions

    looked = []
    real = requests.sessions.get_environ_proxies
    monkeypatch.setattr(requests.sessions, "get_environ_proxies", lambda *a, **k: looked.append(a) or real(*a, **k))
    for name in ("NO_PROXY", "no_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    url = servers("modern").url
    with mcp.connect(url, timeout=10) as server:
        for n in range(10):
            server.call_tool("echo", {"text": str(n)})
    assert len(looked) <= 1  # was one per request
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")  # nothing listens there: the proxy is used, and fails
    with pytest.raises(TransportError):
        mcp.connect(url, timeout=10).close()
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    with mcp.connect(url, timeout=10) as server:
        assert server.call_tool("echo", {"text": "direct"})["text"] == "direct"


def test_a_deadline_ends_a_call_left_unanswered_and_the_deadlines_thread_ends(servers):
    before = snapshot()
    with mcp.connect(servers("modern").url, timeout=10) as server:
        started = time.monotonic()
        with pytest.raises(TransportError) as info:
            server.call_tool("hang", {}, timeout=0.5)
        assert time.monotonic() - started < 5
    assert info.value.timeout is True
    assert leaked(before) == []  # the deadlines' thread ends once no step waits
