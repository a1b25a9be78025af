"""agenthub.mcp against hostile servers, fresh eyes (seventh session): a server's own request whose text cannot
be encoded back, the answer to a server's request that the server never takes, a lone surrogate in a caller's
arguments; each a typed error or an answer within the call's own timeout, nothing left behind."""

import json
import os
import sys
import time
import urllib.request

import pytest

from agenthub import mcp
from agenthub.errors import TransportError

import leakguard
from mcp_support import HERE, Subprocess, leaked, snapshot, stdio_command

HOSTILE_HTTP = os.path.join(HERE, "mcp_hostile_http.py")


@pytest.fixture(scope="module")
def hostile(request):
    started = {}

    def get(mode="refuse"):
        if mode not in started:
            with leakguard.owned_by(request):  # the module's server, whichever test asks for it first
                started[mode] = Subprocess([HOSTILE_HTTP, mode])
        return started[mode]

    yield get
    for server in started.values():
        server.stop()


@pytest.fixture(autouse=True)
def fresh_eras():
    mcp.forget_eras()
    yield
    mcp.forget_eras()


def posted(server):
    with urllib.request.urlopen(server.base + "/log", timeout=10) as answer:
        return [json.loads(text) for text in json.loads(answer.read())]


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


@pytest.mark.skipif(sys.platform == "win32", reason="the fake stdio server's shell-free command is POSIX-tested")
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
