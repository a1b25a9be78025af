"""The trace viewer as a network server (``agenthub trace view --host 0.0.0.0 --key-env NAME``): what a client
that has not shown the key can hold (a connection that sends nothing, a request trickled a byte at a time, many
connections at once: each held a thread of its own for as long as the client liked), what a link in the traces
folder can reach (a file or folder outside it), a key holding a ``+`` given once in the address, files in the folder
that are no trace a browser can show (nested past the parser's stack, NaN), and IPv6 loopback."""

import http.client
import json
import os
import socket
import time

import pytest

from agenthub.apps import viewer as viewer_module
from agenthub.apps.viewer import COOKIE, serve_in_thread
from agenthub.tracer import save_trace
from sse_server import close_server, read_until_closed, track_connections, trickled_until_closed

KEY = "viewer-key-0123456789abcdef"
HISTORY = [{"role": "user", "content_items": [{"type": "text", "text": "the plan"}]},
           {"role": "assistant", "content_items": [{"type": "text", "text": "noted"}]}]


@pytest.fixture
def short_timeouts(monkeypatch):
    monkeypatch.setattr(viewer_module, "HEADER_TIMEOUT_SECONDS", 0.5)


@pytest.fixture
def viewer(tmp_path, short_timeouts, monkeypatch):
    # (a limit of two connections for the 503 test: a test of this fixture sends one request at a time, and one
    # sending several could find the server not done with the two before it)
    monkeypatch.setattr(viewer_module, "MAX_CONNECTIONS", 2)
    save_trace("run1", "demo-model", HISTORY, {}, root=str(tmp_path))
    server, url = serve_in_thread(str(tmp_path), key=KEY)
    connections = server.tracked = track_connections(server)
    yield server
    close_server(server, connections)


def _connect(server):
    return socket.create_connection(server.server_address[:2], timeout=5)


def _get(server, path, headers=None):
    connection = http.client.HTTPConnection(*server.server_address[:2], timeout=10)
    try:
        connection.request("GET", path, headers=headers or {})
        answer = connection.getresponse()
        return answer.status, dict(answer.getheaders()), answer.read()
    finally:
        connection.close()


def test_a_connection_that_sends_nothing_is_closed_after_the_header_timeout(viewer):
    sock = _connect(viewer)
    try:
        assert read_until_closed(sock, 5) == b""  # closed by the server (before: held open, a thread with it, for good)
    finally:
        sock.close()


def test_a_request_trickled_a_byte_at_a_time_is_cut_at_the_header_timeout(viewer):
    """Each byte comes well within any per-read timeout; the whole request head still has only its deadline."""
    request = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Padding: " + b"p" * 200 + b"\r\n\r\n"
    assert trickled_until_closed(viewer.server_address[:2], request[:-4], 10) is not None  # never the blank line


def test_connections_past_the_limit_are_answered_503_at_once(viewer):
    held = [_connect(viewer) for _ in range(2)]
    try:
        for sock in held:
            sock.sendall(b"GET / HTTP/1.1\r\n")  # and nothing more: each holds a thread (till the header timeout)
        deadline = time.monotonic() + 5
        while len(viewer.tracked) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        sock = _connect(viewer)
        try:
            answer = read_until_closed(sock, 5)
        finally:
            sock.close()
    finally:
        for sock in held:
            sock.close()
    assert answer is not None and answer.startswith(b"HTTP/1.1 503 Service Unavailable\r\n")
    assert b"\r\nRetry-After: 1\r\n" in answer
    assert answer.endswith(b"\r\n\r\nthe trace viewer is at its limit of 2 connections\n")
    deadline = time.monotonic() + 10
    while True:  # the held connections' threads end once their clients left: there is room again
        status = _get(viewer, "/", {"Authorization": "Bearer " + KEY})[0]
        if status != 503 or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert status == 200


@pytest.fixture
def linked(tmp_path, short_timeouts):
    """A traces folder holding a link to a trace-shaped file outside it, and a link to a folder outside it."""
    outside = tmp_path / "outside"
    save_trace("private/secret", "demo-model", HISTORY, {}, root=str(outside))
    root = tmp_path / "traces"
    save_trace("run1", "demo-model", HISTORY, {}, root=str(root))
    os.symlink(str(outside / "private" / "secret.json"), str(root / "leak.json"))
    os.symlink(str(outside / "private" / "secret.txt"), str(root / "leak.txt"))
    os.symlink(str(outside / "private"), str(root / "elsewhere"))
    os.symlink(str(root / "run1.json"), str(root / "alias.json"))  # a link that stays inside: served
    server, url = serve_in_thread(str(root))
    connections = track_connections(server)
    yield server
    close_server(server, connections)


@pytest.mark.parametrize("path", ["/trace/leak", "/raw/leak.json", "/raw/leak.txt", "/trace/elsewhere/secret",
                                  "/raw/elsewhere/secret.json", "/raw/elsewhere/secret.txt"])
def test_a_link_out_of_the_folder_is_not_followed(linked, path):
    status, _, body = _get(linked, path)
    assert (status, body) == (404, b"not found\n")


def test_the_list_shows_no_trace_outside_the_folder(linked):
    status, _, body = _get(linked, "/")
    assert status == 200
    assert b'"trace_id":"run1"' in body.replace(b" ", b"") and b'"trace_id":"alias"' in body.replace(b" ", b"")
    assert b"leak" not in body and b"secret" not in body


def test_a_link_inside_the_folder_is_served(linked):
    status, _, body = _get(linked, "/raw/alias.json")
    assert status == 200 and b"the plan" in body


def test_a_key_holding_a_plus_works_once_in_the_address(tmp_path, short_timeouts):
    """A key of base64 characters (what ``--key-env`` allows: letters, digits and ``._~+/=-``) pasted into the
    address: a ``+`` there is the character itself, not a space (before: the key was refused with a 401)."""
    key = "k+ey/with=plus-0123456789"
    save_trace("run1", "demo-model", HISTORY, {}, root=str(tmp_path))
    server, url = serve_in_thread(str(tmp_path), key=key)
    connections = track_connections(server)
    try:
        status, headers, _ = _get(server, "/trace/run1?key=" + key + "&x=1")
        assert status == 303 and headers["Location"] == "/trace/run1?x=1"
        cookie = "{}_{}={}".format(COOKIE, server.server_address[1], server.session.decode())
        assert headers["Set-Cookie"] == cookie + "; HttpOnly; SameSite=Strict; Path=/"
        status, _, _ = _get(server, "/trace/run1?key=" + key.replace("+", "%2B").replace("/", "%2F"))
        assert status == 303
        status, _, body = _get(server, "/trace/run1", {"Cookie": cookie})
        assert status == 200 and b"the plan" in body
    finally:
        close_server(server, connections)


def test_the_key_given_once_redirects_to_this_viewer_only(viewer):
    """``//host/...`` as the path: the redirect that drops the key names a path here, not another site."""
    status, headers, _ = _get(viewer, "//evil.example/x?key=" + KEY)
    assert status == 303 and headers["Location"] == "/evil.example/x"


def _embedded(html):
    """The page's data, read as a browser's JSON.parse reads it (no NaN, no Infinity)."""
    text = html.split(b'<script id="data" type="application/json">', 1)[1].split(b"</script>", 1)[0].decode()

    def refuse(name):
        raise ValueError("JSON.parse has no " + name)
    return json.loads(text, parse_constant=refuse)


@pytest.fixture
def odd_files(tmp_path, short_timeouts):
    """Beside a trace: a JSON file nested past the parser's stack, and a trace holding numbers JSON has not."""
    save_trace("run1", "demo-model", HISTORY, {}, root=str(tmp_path))
    (tmp_path / "deep.json").write_text("[" * 100000 + "]" * 100000)
    (tmp_path / "odd.json").write_text('{"history": [{"role": "user", "content_items": [{"type": "text", "text": '
                                       '"hi"}]}], "model": NaN, "timestamp": 1e999, "config": {"temperature": '
                                       '-Infinity}}')
    server, url = serve_in_thread(str(tmp_path))
    connections = track_connections(server)
    yield server
    close_server(server, connections)


def test_a_file_nested_too_deep_is_no_trace_and_the_rest_is_shown(odd_files):
    """Before: every page (the list is in each) closed the connection with a RecursionError's traceback."""
    status, _, html = _get(odd_files, "/")
    assert status == 200
    assert sorted(t["trace_id"] for t in _embedded(html)["traces"]) == ["odd", "run1"]
    assert _get(odd_files, "/trace/deep")[:3:2] == (404, b"not found\n")
    status, _, html = _get(odd_files, "/trace/run1")
    assert status == 200 and _embedded(html)["trace"]["history"] == HISTORY


def test_numbers_json_has_not_are_null_on_the_page(odd_files):
    """A trace (or one in the list) holding NaN or Infinity: the page's data was no JSON a browser reads, so every
    page stayed blank."""
    status, _, html = _get(odd_files, "/trace/odd")
    assert status == 200
    data = _embedded(html)
    assert (data["trace"]["model"], data["trace"]["timestamp"], data["trace"]["config"]) == (
        None, None, {"temperature": None})
    assert [t for t in data["traces"] if t["trace_id"] == "odd"] == [
        {"trace_id": "odd", "model": None, "timestamp": None, "messages": 1}]


@pytest.mark.parametrize("host", ["::1", "[::1]"])
def test_the_viewer_listens_on_ipv6_loopback(tmp_path, host):
    """``agenthub trace view --host ::1`` was refused by the socket ("Address family for hostname not supported"):
    the viewer's server was IPv4 only, though ::1 passes its loopback rule (agenthub serve listens there)."""
    if not socket.has_ipv6:
        pytest.skip("no IPv6")
    save_trace("run1", "demo-model", HISTORY, {}, root=str(tmp_path))
    server, url = serve_in_thread(str(tmp_path), host=host)
    connections = track_connections(server)
    try:
        port = server.server_address[1]
        assert url == "http://[::1]:{}/".format(port)
        for name, status in (("[::1]:{}".format(port), 200), ("localhost:{}".format(port), 200),
                             ("evil.example:{}".format(port), 421)):
            connection = http.client.HTTPConnection("::1", port, timeout=10)
            try:
                connection.putrequest("GET", "/trace/run1", skip_host=True)
                connection.putheader("Host", name)
                connection.endheaders()
                answer = connection.getresponse()
                assert (name, answer.status) == (name, status)
                assert (b"the plan" in answer.read()) is (status == 200)
            finally:
                connection.close()
    finally:
        close_server(server, connections)
