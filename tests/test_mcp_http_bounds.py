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

from mcp_support import FAKE_HTTP, Subprocess, leaked, snapshot


@pytest.fixture(scope="module")
def servers():
    started = {}

    def get(era):
        if era not in started:
            started[era] = Subprocess([FAKE_HTTP, era])
        return started[era]

    yield get
    for server in started.values():
        server.stop()


@pytest.fixture(autouse=True)
def fresh_eras():
    mcp.forget_eras()
    yield
    mcp.forget_eras()


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
    assert box["seconds"] < 10
    gc.collect()
    assert leaked(before) == []
