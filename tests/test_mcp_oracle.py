"""agenthub.mcp against the official ``mcp`` SDK (test-only, Python >= 3.10): the SDK's server in its
Streamable HTTP modes (stateful, json_response, stateless_http) and on stdio, in both eras, and the
registry's ``mcp-server-time``; what agenthub gets is compared with what the official client gets for
the same calls (the official client runs in a subprocess: its event loop and threads stay there)."""

import base64
import contextlib
import json
import os
import subprocess
import sys

import pytest

if sys.version_info < (3, 10):
    pytest.skip("the official mcp SDK needs Python >= 3.10", allow_module_level=True)
pytest.importorskip("mcp", reason="the official mcp SDK (test extra) is not installed")

from agenthub import mcp  # noqa: E402
from agenthub.mcp import results  # noqa: E402

from mcp_support import HERE, OFFICIAL, Subprocess, leaked, snapshot  # noqa: E402

CLIENT = os.path.join(HERE, "mcp_official_client.py")
PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")
CALLS = [("echo", {"text": "hi"}), ("two_parts", {"a": "x", "b": "y"}), ("add", {"a": 1, "b": 2}),
         ("picture", {}), ("fail", {"why": "no"}), ("slow", {"steps": 3}), ("météo", {"city": "Paris"}),
         ("attachment", {})]


def official(mode, *target):
    out = subprocess.run([sys.executable, CLIENT, mode] + list(target), capture_output=True, timeout=120)
    assert out.returncode == 0, out.stderr.decode("utf-8", "replace")[-2000:]
    return json.loads(out.stdout)


def ours(target, protocol):
    with mcp.connect(target, timeout=30, protocol=protocol) as server:
        return {"protocol_version": server.protocol_version, "tools": server.list_tools(),
                "calls": [server.call_tool(name, args) for name, args in CALLS],
                "resources": server.list_resources(), "read": server.read_resource("note://hello"),
                "prompts": server.list_prompts(), "prompt": server.get_prompt("review", {"code": "x=1"})}


def compare(mine, theirs):
    assert mine["protocol_version"] == theirs["protocol_version"]
    assert mine["tools"] == [results.tool_schema(tool) for tool in theirs["tools"]]
    assert mine["calls"] == [results.tool_result(call) for call in theirs["calls"]]
    assert mine["resources"] == theirs["resources"]
    assert mine["read"] == theirs["read"]
    assert mine["prompts"] == theirs["prompts"]
    assert mine["prompt"] == results.prompt_messages(theirs["prompt"])
    # and what that is, spelled out once
    assert mine["calls"][0] == {"type": "tool_result", "text": "hi"}
    assert mine["calls"][1] == {"type": "tool_result", "text": "x\ny"}
    assert mine["calls"][3]["images"][0].startswith("data:image/png;base64,iVBORw0KGgo")
    assert mine["calls"][4]["is_error"] is True
    assert mine["calls"][5] == {"type": "tool_result", "text": "done after 3"}
    # an embedded image is an image too (its blob was only a line naming its URI)
    assert mine["calls"][7] == {"type": "tool_result", "text": "[resource: file:///pixel.png]\nnotes",
                                "images": ["data:image/png;base64," + base64.b64encode(PNG).decode("ascii")]}


@pytest.fixture(scope="module", params=["stateful", "json", "stateless"])
def http_server(request):
    server = Subprocess([OFFICIAL, "http", request.param], wait=60)
    yield server
    server.stop()


@pytest.mark.parametrize("protocol, mode, version", [("auto", "auto", "2026-07-28"),
                                                     ("2025-11-25", "legacy", "2025-11-25")])
def test_official_http_server_same_answers_as_the_official_client(http_server, protocol, mode, version):
    mcp.forget_eras()
    mine = ours(http_server.url, protocol)
    assert mine["protocol_version"] == version
    compare(mine, official(mode, http_server.url))


@pytest.mark.parametrize("protocol, mode, version", [("auto", "auto", "2026-07-28"),
                                                     ("2025-11-25", "legacy", "2025-11-25")])
def test_official_stdio_server_same_answers_as_the_official_client(protocol, mode, version):
    before = snapshot()
    command = [sys.executable, OFFICIAL, "stdio"]
    mine = ours(command, protocol)
    assert mine["protocol_version"] == version
    assert leaked(before) == []
    compare(mine, official(mode, "stdio", *command))


def test_mcp_server_time_from_the_registry():
    pytest.importorskip("mcp_server_time", reason="mcp-server-time (test extra) is not installed")
    before = snapshot()
    with mcp.connect([sys.executable, "-m", "mcp_server_time", "--local-timezone", "UTC"], timeout=30,
                     name="time") as server:
        assert [tool["name"] for tool in server.list_tools()] == ["get_current_time", "convert_time"]
        answer = server.call_tool("convert_time", {"source_timezone": "UTC", "time": "12:00",
                                                   "target_timezone": "Asia/Tokyo"})
        document = json.loads(answer["text"])
        assert document["target"]["timezone"] == "Asia/Tokyo"
        assert document["target"]["datetime"].endswith("T21:00:00+09:00")
        assert document["time_difference"] == "+9.0h"
        refused = server.call_tool("convert_time", {"source_timezone": "Nowhere/Atlantis", "time": "12:00",
                                                    "target_timezone": "UTC"})
        assert refused.get("is_error") is True and "Atlantis" in refused["text"]
    assert leaked(before) == []


def test_official_server_list_changed_reaches_the_handle_in_the_handshake_era():
    import time

    server = Subprocess([OFFICIAL, "http", "grow"], wait=60)
    try:
        mcp.forget_eras()
        with mcp.connect(server.url, timeout=30, protocol="2025-11-25") as handle:
            names = [tool["name"] for tool in handle.list_tools()]
            assert "grow" in names and "grown" not in names
            assert handle.call_tool("grow", {})["text"] == "grown"
            deadline = time.monotonic() + 10
            while "grown" not in [tool["name"] for tool in handle.list_tools()]:  # stale for good before
                assert time.monotonic() < deadline, "list_changed never reached the handle"
                time.sleep(0.05)
    finally:
        server.stop()


def test_official_stateless_server_in_the_handshake_era_lists_tools_afresh():
    # a stateless server gives no session: its GET stream is nobody's, list_changed never reaches the
    # handle, so the list is not cached (differential.md D4: it stayed stale for good, refresh=True aside)
    server = Subprocess([OFFICIAL, "http", "stateless-grow"], wait=60)
    try:
        mcp.forget_eras()
        with mcp.connect(server.url, timeout=30, protocol="2025-11-25") as handle:
            assert handle.protocol_version == "2025-11-25"
            assert "grown" not in [tool["name"] for tool in handle.list_tools()]
            assert handle.call_tool("grow", {})["text"] == "grown"
            assert "grown" in [tool["name"] for tool in handle.list_tools()]
            assert not handle._channel.hears_changes
    finally:
        server.stop()


def _end_session(url, handle):
    """End ``handle``'s session on the server, as an expiry would (the handle is not told)."""
    import requests

    answer = requests.delete(url, headers={"Mcp-Session-Id": handle._session.session_id,
                                           "MCP-Protocol-Version": handle.protocol_version}, timeout=10)
    assert answer.status_code == 200


def _names(handle):
    return [tool["name"] for tool in handle.list_tools()]


@contextlib.contextmanager
def _two_handles():
    """(url, handle, other): two handshake-era handles on one official ``grow`` server, ``handle``'s tools listed."""
    server = Subprocess([OFFICIAL, "http", "grow"], wait=60)
    try:
        mcp.forget_eras()
        with mcp.connect(server.url, timeout=30, protocol="2025-11-25") as handle, \
                mcp.connect(server.url, timeout=30, protocol="2025-11-25") as other:
            assert "grown" not in _names(handle)
            yield server.url, handle, other
    finally:
        server.stop()


def test_official_server_a_list_is_not_trusted_once_list_changed_can_no_longer_be_heard():
    # the session ends on the server: the listening stream gets a 404 and stops for good; a list cached while
    # it listened was kept for ever after, though no list_changed could reach the handle any more
    import time

    with _two_handles() as (url, handle, other):
        assert handle._channel.hears_changes
        first = handle._session.session_id
        _end_session(url, handle)
        deadline = time.monotonic() + 10
        while handle._channel.hears_changes:  # the listening stream reconnects, gets a 404, and stops
            assert time.monotonic() < deadline, "the listening stream never stopped"
            time.sleep(0.05)
        assert other.call_tool("grow", {})["text"] == "grown"  # its list_changed goes to `other` only
        assert "grown" in _names(handle)  # listed afresh: a 404, a new session, once
        assert handle._session.session_id not in (None, first)


def test_official_server_an_expired_session_is_renewed_once_and_the_call_goes_through():
    with _two_handles() as (url, handle, _):
        first = handle._session.session_id
        assert handle.call_tool("echo", {"text": "a"}) == {"type": "tool_result", "text": "a"}
        _end_session(url, handle)
        assert handle.call_tool("echo", {"text": "b"}) == {"type": "tool_result", "text": "b"}
        assert handle._session.session_id not in (None, first)
        assert handle.protocol_version == "2025-11-25"


def test_official_server_a_new_session_lists_afresh():
    # a list_changed sent while the session was gone reached nobody: the lists of the old session are dropped
    with _two_handles() as (url, handle, other):
        _end_session(url, handle)
        assert other.call_tool("grow", {})["text"] == "grown"
        assert handle.call_tool("echo", {"text": "a"})["text"] == "a"  # a 404, a new session
        assert "grown" in _names(handle)


@pytest.mark.parametrize("protocol, version", [("auto", "2026-07-28"), ("2025-11-25", "2025-11-25")])
def test_official_paged_server_every_page_of_each_list(protocol, version):
    # page 1's nextCursor is "": a cursor, sent back as it is (not the end of the list, nor a first page again)
    before = snapshot()
    command = [sys.executable, os.path.join(HERE, "mcp_official_paged.py")]
    with mcp.connect(command, timeout=30, protocol=protocol) as server:
        assert server.protocol_version == version
        assert [tool["name"] for tool in server.list_tools()] == ["t0", "t1", "t2"]
        assert [(r["uri"], r["name"]) for r in server.list_resources()] == [
            ("note://0", "r0"), ("note://1", "r1"), ("note://2", "r2")]
        assert [prompt["name"] for prompt in server.list_prompts()] == ["p0", "p1", "p2"]
    assert leaked(before) == []
