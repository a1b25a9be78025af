"""agenthub.mcp over Streamable HTTP: every step within its timeout in all (issue 37 B3/H02), the bounds on
tools/list pages (B10/M07), and the handshake era's listening stream (C2/D4)."""

import gc
import json
import threading
import time
import urllib.request

import pytest

from agenthub import mcp
from agenthub.errors import StreamProtocolError, UpstreamError

import mcp_support
from mcp_support import FAKE_HTTP, leaked, snapshot


@pytest.fixture(scope="module")
def servers(request):
    yield from mcp_support.lazy_servers(request, FAKE_HTTP)


@pytest.fixture(autouse=True)
def fresh_eras():
    yield from mcp_support.fresh_eras()


def log(server):
    with urllib.request.urlopen(server.base + "/log", timeout=10) as answer:
        return json.loads(answer.read())


# -- B3 (H02) ------------------------------------------------------------------------------------------------

def test_connect_returns_within_its_timeout_against_a_404_and_an_endless_stream_of_comments(servers):
    fake = servers("comments")
    before = snapshot()
    box = {}

    def run():
        started = time.monotonic()
        try:
            mcp.connect(fake.url, timeout=3)
        except Exception as error:  # noqa: B902 - handed to the test
            box["error"] = error
        box["seconds"] = time.monotonic() - started

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(30)  # never returned before
    assert not thread.is_alive()
    assert isinstance(box["error"], UpstreamError) and box["error"].status == 404
    assert box["seconds"] < 10  # the probe stops at the first block, a comment
    gc.collect()
    assert leaked(before) == []


# -- C2 (D4) -------------------------------------------------------------------------------------------------

def _until(check, seconds=10.0):
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_the_handshake_era_listens_for_list_changed_and_the_tool_list_follows(servers):
    fake = servers("legacy")
    mcp.connect(fake.url, timeout=10).close()  # the server's first connection
    gc.collect()
    before = snapshot()
    with mcp.connect(fake.url, timeout=10) as server:
        first = server.list_tools()[0]["description"]
        assert server.list_tools()[0]["description"] == first  # cached: the server can tell when it changes
        sid = server._session.session_id
        assert _until(lambda: any(r["method"] == "GET" and r["headers"].get("MCP-Session-Id") == sid
                                  for r in log(fake)))
        server.call_tool("notify", {})  # list_changed, sent on the listening stream
        assert _until(lambda: server.list_tools()[0]["description"] != first)
    gets = [r for r in log(fake) if r["method"] == "GET" and r["headers"].get("MCP-Session-Id") == sid]
    assert gets[0]["headers"]["Accept"] == "text/event-stream" and "Content-Type" not in gets[0]["headers"]
    assert gets[0]["headers"]["MCP-Protocol-Version"] == "2025-11-25"
    gc.collect()
    assert leaked(before) == []


def test_without_a_listening_stream_a_handshake_era_list_is_not_cached(servers):
    fake = servers("noget")  # legacy, but a GET is refused (405): the server cannot say that a list changed
    with mcp.connect(fake.url, timeout=10) as server:
        assert _until(lambda: not server._channel.hears_changes)
        start = len(log(fake))
        server.list_tools()
        server.list_tools()
        assert [r["body"]["method"] for r in log(fake)[start:]] == ["tools/list"] * 4  # two pages, twice


# -- B10 + M07: the tools a server adds, the sum of list pages ------------------------------------------------

def test_endless_list_pages_end_in_a_typed_error_at_the_item_bound(servers):
    fake = servers("endless")  # 1,000 tools of 1 KB a page, a new cursor every time (a MemoryError before)
    with mcp.connect(fake.url, timeout=30, max_tools=None) as server:
        with pytest.raises(StreamProtocolError) as info:
            server.list_tools()
    assert "more than 10000 items (MAX_LIST_ITEMS) over its pages" in str(info.value)


def test_endless_list_pages_end_in_a_typed_error_at_the_byte_bound(servers, monkeypatch):
    from agenthub.mcp import handle

    monkeypatch.setattr(handle, "MAX_LIST_ITEMS", 10 ** 9)
    monkeypatch.setattr(handle, "MAX_LIST_BYTES", 4 * 1024 * 1024)
    with mcp.connect(servers("endless").url, timeout=30, max_tools=None) as server:
        with pytest.raises(StreamProtocolError) as info:
            server.list_tools()
    assert "more than 4194304 bytes (MAX_LIST_BYTES)" in str(info.value)


def test_a_server_offering_more_tools_than_max_tools_is_a_config_error_naming_it(servers):
    from agenthub.errors import ConfigError

    with mcp.connect(servers("modern").url, timeout=10, name="big", max_tools=2) as server:
        with pytest.raises(ConfigError) as info:
            server.list_tools()
        assert str(info.value).startswith("MCP server big offers 3 tools, more than max_tools=2")
    with pytest.raises(ConfigError):
        mcp.connect(servers("modern").url, max_tools=0)
    with mcp.connect(servers("endless").url, timeout=30) as server:  # the default cap: 1000
        with pytest.raises((ConfigError, StreamProtocolError)):
            server.list_tools()
