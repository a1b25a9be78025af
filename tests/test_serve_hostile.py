"""agenthub serve against hostile callers (issue 24 A2, A3, A7): cross-site requests, bodies that are not
JSON, slow or stopped clients, malformed framing, and what an error may tell a caller.

Raw sockets talk to the built-in server on 127.0.0.1; every wait is bounded."""

import io
import json
import logging
import socket
import threading
import time

import pytest
import requests

from agenthub import AutoLLMClient
from agenthub.apps import server as server_module
from agenthub.apps.server import make_app
from agenthub.errors import AgentHubError, ConfigError, TransportError
from server_support import Builtin, Route, Upstream
from sse_server import read_until_closed, trickled_until_closed

KEY = "server-key-0123456789"
MESSAGES = [{"role": "user", "content_items": [{"type": "text", "text": "Hi"}]}]
BODY = json.dumps({"model": "chat", "messages": MESSAGES}).encode("utf-8")


def chat_sse(pieces, size=1, end=True):
    """An OpenAI Chat Completions stream of ``pieces`` text deltas of ``size`` characters, then (``end``) stop."""
    chunks = [{"id": "c1", "object": "chat.completion.chunk", "model": "m",
               "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]}]
    chunks += [{"id": "c1", "object": "chat.completion.chunk", "model": "m",
                "choices": [{"index": 0, "delta": {"content": "x" * size}, "finish_reason": None}]}
               for _ in range(pieces)]
    if not end:
        return b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks)
    chunks.append({"id": "c1", "object": "chat.completion.chunk", "model": "m",
                   "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
                   "usage": {"prompt_tokens": 3, "completion_tokens": pieces, "total_tokens": 3 + pieces}})
    return b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"


def app_for(up, **settings):
    config = {"models": [{"id": "chat", "model": "m", "client_type": "openai-chat", "base_url": up.url + "/chat/v1",
                          "max_retries": 0}], "keepalive_seconds": 5}
    config.update(settings)
    return make_app(config)


@pytest.fixture()
def upstream():
    with Upstream() as up:
        up.routes["chat"] = Route(chat_sse(3))
        yield up


@pytest.fixture()
def site(upstream):
    app = app_for(upstream, header_timeout_seconds=0.5, body_timeout_seconds=0.5, write_timeout_seconds=0.5)
    with Builtin(app) as server:
        yield upstream, app, server


def post(server, body=BODY, headers=None):
    all_headers = {"Content-Type": "application/json"}
    all_headers.update(headers or {})
    return requests.post(server.url + "/v1/stream", data=body, headers={k: v for k, v in all_headers.items() if v},
                         timeout=10)


def raw(server, data, wait=3.0):
    """Send ``data`` on a new connection and read until the server closes it (at most ``wait`` s):
    (what came back, the seconds it took); ``None`` for the bytes when the server kept the connection open."""
    host, port = server.server.server_address[:2]
    sock = socket.create_connection((host, port), timeout=wait)
    started = time.monotonic()
    try:
        if data:
            sock.sendall(data)
        return read_until_closed(sock, wait), time.monotonic() - started
    finally:
        sock.close()


def head(method="POST", path="/v1/stream", host="127.0.0.1", **headers):
    lines = ["{} {} HTTP/1.1".format(method, path), "Host: " + host]
    lines += ["{}: {}".format(k.replace("_", "-"), v) for k, v in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def status_of(answer):
    return int(answer.split(b" ", 2)[1]) if answer else None


def error_of(answer):
    return json.loads(answer.split(b"\r\n\r\n", 1)[1].split(b"\r\n", 2)[1] if b"chunked" in answer.lower()
                      else answer.split(b"\r\n\r\n", 1)[1])["error"]


# -- A2: cross-site requests -------------------------------------------------------------------------------


@pytest.mark.parametrize("headers", [
    {"Origin": "http://evil.example"},
    {"Origin": "null"},                                   # a sandboxed frame, a file: page
    {"Origin": "http://127.0.0.1:1"},                     # another port on the same machine
    {"Origin": "http://localhost.evil.example"},
    {"Sec-Fetch-Site": "cross-site"},                      # no Origin, but the browser says where it came from
    {"Origin": "http://evil.example", "Content-Type": "text/plain"},  # the form a page can post without a preflight
])
def test_a_cross_site_request_is_refused_before_anything_is_sent(site, headers):
    up, app, server = site
    seen = len(up.requests)
    answer = post(server, headers=headers)
    assert answer.status_code == 403
    assert answer.json()["error"]["type"] == "ConfigError"
    assert answer.json()["error"]["message"].startswith("a cross-site request is refused")
    models = requests.get(server.url + "/v1/models", headers=headers, timeout=10)
    assert models.status_code == 403
    assert len(up.requests) == seen  # the upstream key was not spent


def test_the_servers_own_origin_is_answered(site):
    up, app, server = site
    port = server.url.rsplit(":", 1)[1]
    for origin, site_header in (("http://127.0.0.1:" + port, "same-origin"), (None, "none"), (None, None)):
        answer = post(server, headers={"Origin": origin, "Sec-Fetch-Site": site_header})
        assert answer.status_code == 200, (origin, answer.text)
        assert answer.text.endswith("data: [DONE]\n\n")
    # the page itself opens from a link on another site (a navigation), and its own fetches are same-origin
    assert requests.get(server.url + "/", headers={"Sec-Fetch-Site": "cross-site"}, timeout=10).status_code == 200


def test_same_origin_rule():
    same = server_module._same_origin
    assert same("http://127.0.0.1:8787", "127.0.0.1:8787")
    assert same("http://LOCALHOST:8787", "localhost:8787")
    assert same("https://api.example.com", "api.example.com")        # behind a TLS proxy: the default port
    assert same("http://[::1]:8787", "[::1]:8787")
    assert not same("http://127.0.0.1:8788", "127.0.0.1:8787")
    assert not same("https://api.example.com:444", "api.example.com")
    assert not same("http://evil.example", "127.0.0.1:8787")
    assert not same("null", "127.0.0.1:8787")
    assert not same("file://", "127.0.0.1:8787")
    assert not same("http://127.0.0.1:8787/path", "127.0.0.1:8787")
    assert not same("http://user@127.0.0.1:8787", "127.0.0.1:8787")
    assert not same("http://127.0.0.1:x", "127.0.0.1:8787")


@pytest.mark.parametrize("content_type", [None, "text/plain", "application/x-www-form-urlencoded",
                                          "multipart/form-data; boundary=x", "application/jsonx"])
def test_a_post_that_does_not_say_json_is_a_415(site, content_type):
    up, app, server = site
    seen = len(up.requests)
    answer = requests.post(server.url + "/v1/stream", data=BODY, timeout=10,
                           headers={"Content-Type": content_type} if content_type else {})
    assert answer.status_code == 415
    assert answer.json()["error"]["type"] == "ConfigError"
    assert "Content-Type: application/json" in answer.json()["error"]["message"]
    assert len(up.requests) == seen


def test_json_with_parameters_is_json(site):
    up, app, server = site
    answer = post(server, headers={"Content-Type": "Application/JSON; charset=utf-8"})
    assert answer.status_code == 200 and answer.text.endswith("data: [DONE]\n\n")


# -- A3: a client that stops reading -------------------------------------------------------------------------


def _environ(body=BODY, **extra):
    return dict({"REQUEST_METHOD": "POST", "PATH_INFO": "/v1/stream", "HTTP_HOST": "127.0.0.1",
                 "CONTENT_TYPE": "application/json", "CONTENT_LENGTH": str(len(body)), "wsgi.input": io.BytesIO(body)},
                **extra)


def _call(app, body=BODY, **extra):
    statuses = []
    result = app(_environ(body, **extra), lambda status, headers, exc_info=None: statuses.append(status))
    return statuses[0], result


def _all_slots_free(app, timeout=5.0):
    """Every one of the app's stream slots can be taken (within ``timeout``): they are given back at once."""
    taken = 0
    try:
        while taken < app.max_concurrent_streams and app._slots.acquire(timeout=timeout):
            taken += 1
        return taken == app.max_concurrent_streams
    finally:
        for _ in range(taken):
            app._slots.release()


def _wait(condition, timeout=5.0):
    deadline = time.monotonic() + timeout
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.01)
    return condition()


def test_a_stream_keeps_its_slot_until_its_response_is_closed(upstream):
    """The upstream answered whole and was read to its end, but the response is still open (a client that
    stops reading): the slot stays taken, so max_concurrent_streams bounds the answers held for clients."""
    app = app_for(upstream, max_concurrent_streams=1)
    status, held = _call(app)
    assert status == "200 OK"
    assert _wait(lambda: app.open_streams == 0), "the upstream was not read to its end"
    status, refused = _call(app)
    assert status == "503 Service Unavailable"
    assert json.loads(b"".join(refused))["error"]["type"] == "ServerError"
    held.close()
    status, body = _call(app)
    assert status == "200 OK"
    assert b"".join(body).endswith(b"data: [DONE]\n\n")
    body.close()


@pytest.mark.parametrize("items", [False, True])
def test_the_frames_waiting_for_a_slow_client_are_bounded_in_bytes(upstream, items):
    """64 events of 64 KB each: the server reads the upstream only while less than MAX_QUEUED_BYTES wait (on
    the items wire too, whose pieces are queued unencoded)."""
    upstream.routes["chat"] = Route(chat_sse(64, 65536))
    app = app_for(upstream)
    status, body = _call(app, **({"HTTP_X_AGENTHUB_WIRE": "items"} if items else {}))
    assert status == "200 OK"
    pump = body._pump
    assert _wait(lambda: pump.put_bytes > server_module.MAX_QUEUED_BYTES)
    time.sleep(0.3)  # the reader would go on here if nothing held it back
    assert pump.queued_bytes() <= server_module.MAX_QUEUED_BYTES + 70000
    assert app.open_streams == 1  # still reading the upstream: waiting for room
    frames = b"".join(body)  # the client reads again: everything arrives
    body.close()
    if items:
        pieces = [p for f in frames.split(b"\n\n") if f.startswith(b"data: [\"") for p in json.loads(f[6:])]
        assert [len(p) for p in pieces if p] == [65536] * 64 and frames.endswith(b"data: [DONE]\n\n")
    else:
        assert frames.count(b'"type":"text"') == 64 and frames.endswith(b"data: [DONE]\n\n")
    assert _wait(lambda: app.open_streams == 0)


def test_a_client_that_stops_reading_is_cut_off_by_the_write_timeout(site):
    """The built-in server gives up a write after write_timeout_seconds: the response is closed, the
    upstream stream aborted and the slot free."""
    up, app, server = site
    # 25 MB, and then the upstream goes quiet without ending: only the server can end this stream
    up.routes["chat"] = Route(chat_sse(400, 65536, end=False), hold=True)
    closed = up.closed
    host, port = server.server.server_address[:2]
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.settimeout(10)
    sock.connect((host, port))
    try:
        sock.sendall(head(Content_Type="application/json", Content_Length=len(BODY)) + BODY)
        assert sock.recv(100).startswith(b"HTTP/1.1 200")
        # the client reads no more; the server's write blocks, then times out
        assert _wait(lambda: up.closed > closed, timeout=15), "the upstream stream was not closed"
        assert _wait(lambda: app.open_streams == 0, timeout=5)
        assert _all_slots_free(app)  # every slot is free again
    finally:
        sock.close()


# -- A3 / A7: socket timeouts and framing of the built-in server -------------------------------------------


def test_an_idle_connection_is_closed_after_the_header_timeout(site):
    up, app, server = site
    answer, seconds = raw(server, b"", wait=5)
    assert answer == b"" and seconds < 3


def test_headers_sent_a_byte_at_a_time_are_cut_at_the_header_timeout(site):
    up, app, server = site
    request = head(Content_Type="application/json", Content_Length=len(BODY), X_Padding="p" * 200)
    seconds = trickled_until_closed(server.server.server_address[:2], request[:-4], 5)  # never the blank line
    assert seconds is not None and seconds < 3


def test_a_body_shorter_than_its_length_is_a_408_after_the_body_timeout(site):
    up, app, server = site
    answer, seconds = raw(server, head(Content_Type="application/json", Content_Length=len(BODY)) + BODY[:10])
    assert status_of(answer) == 408, answer
    assert error_of(answer)["type"] == "ConfigError"
    assert seconds < 3


def test_a_body_trickled_a_byte_a_read_is_a_408_once_its_whole_time_is_up(site):
    """Each byte comes within body_timeout (0.5 s), so no single read times out: the whole body still has
    body_timeout plus a second per MIN_BODY_BYTES_PER_SECOND of its length, and then it is a 408 (before, the
    connection and its thread were held as long as the client kept trickling)."""
    up, app, server = site
    host, port = server.server.server_address[:2]
    sock = socket.create_connection((host, port), timeout=5)
    answer = b""
    try:
        sock.sendall(head(Content_Type="application/json", Content_Length=len(BODY)))
        for byte in BODY[:60]:  # 60 bytes a fifth of a second apart: 12 s, far past the body's 0.5 s
            try:
                sock.sendall(bytes([byte]))
            except OSError:  # the server answered and closed
                break
            sock.settimeout(0.2)
            try:
                piece = sock.recv(65536)
            except socket.timeout:
                continue
            answer += piece
            if not piece or b"\r\n\r\n" in answer:
                break
        sock.settimeout(5)
        while answer:  # the rest, until the server closes the connection
            piece = sock.recv(65536)
            if not piece:
                break
            answer += piece
    finally:
        sock.close()
    assert status_of(answer) == 408, answer
    assert error_of(answer) == {"type": "ConfigError", "message": "the request body did not arrive in time",
                                "retryable": False}


def test_connections_past_max_connections_are_refused_at_once_without_a_thread(upstream):
    """Each connection is served by a thread of its own: clients that open many and send nothing (or trickle)
    made as many threads.  Past max_connections a connection is answered 503 in the accepting thread."""
    app = app_for(upstream, max_connections=2, header_timeout_seconds=30)
    assert app_for(upstream).max_connections == 2 * 64 + 64  # two per stream allowed, and 64 more
    with pytest.raises(ConfigError, match="max_connections must be a positive int"):
        app_for(upstream, max_connections=0)
    with Builtin(app) as server:
        host, port = server.server.server_address[:2]
        held = [socket.create_connection((host, port), timeout=5) for _ in range(2)]
        try:
            for sock in held:
                sock.sendall(b"POST /v1/stream HTTP/1.1\r\n")  # and nothing more: each holds a thread
            deadline = time.monotonic() + 10
            while len(server._connections) < 2 and time.monotonic() < deadline:
                time.sleep(0.01)
            answer = raw(server, b"", wait=5)[0]  # (answered before it sends anything)
        finally:
            for sock in held:
                sock.close()
        assert status_of(answer) == 503, answer
        assert b"\r\nRetry-After: 1\r\n" in answer
        assert error_of(answer) == {"type": "ServerError", "message": "the server is at its limit of 2 connections",
                                    "retryable": True}
        deadline = time.monotonic() + 10
        while True:  # the held connections' threads end once their clients left: there is room again
            answer = raw(server, head(method="GET", path="/v1/models"), wait=5)[0]
            if status_of(answer) != 503 or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert status_of(answer) == 200, answer


def test_a_chunked_request_body_is_a_411_at_once(site):
    up, app, server = site
    chunked = b"%x\r\n%s\r\n" % (len(BODY), BODY)  # no final chunk: a server reading to the end would hang
    answer, seconds = raw(server, head(Content_Type="application/json", Transfer_Encoding="chunked") + chunked)
    assert status_of(answer) == 411, answer
    assert "Content-Length is required" in error_of(answer)["message"]
    assert seconds < 1


@pytest.mark.parametrize("length", ["1_298", "+12", " 12x", "0x10", "-1", "1" * 30])
def test_a_content_length_that_is_not_digits_is_a_400(site, length):
    up, app, server = site
    request = head(Content_Type="application/json").replace(b"\r\n\r\n", b"\r\nContent-Length: " +
                                                            length.encode() + b"\r\n\r\n")
    answer, seconds = raw(server, request + BODY)
    assert status_of(answer) == 400, answer
    assert error_of(answer)["message"] == "a malformed Content-Length"


def test_the_timeouts_are_in_the_config_and_checked():
    with Upstream() as up:
        app = app_for(up)
        assert app.timeouts == {"header_timeout_seconds": 10.0, "body_timeout_seconds": 20.0,
                                "write_timeout_seconds": 30.0}
        for bad in (0, -1, "5", True, 3600):
            with pytest.raises(ConfigError, match="write_timeout_seconds must be a number of seconds"):
                app_for(up, write_timeout_seconds=bad)


# -- A7: what an error tells the caller ------------------------------------------------------------------------


def _closed_port():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


def test_a_transport_error_does_not_show_the_upstream_address(caplog):
    port = _closed_port()
    app = make_app({"models": [{"id": "chat", "model": "m", "client_type": "openai-chat",
                                "base_url": "http://127.0.0.1:{}/internal/v1".format(port), "max_retries": 0}]})
    with Builtin(app) as server:
        with caplog.at_level(logging.INFO, logger="agenthub.server"):
            answer = post(server)
        assert answer.status_code == 502
        error = answer.json()["error"]
        assert error == {"type": "TransportError", "message": "agenthub serve: the upstream could not be reached "
                         "or broke off", "client": "openai-chat", "timeout": False, "retryable": True}
        assert str(port) not in answer.text and "internal" not in answer.text
        client = AutoLLMClient("chat", client_type="agenthub", base_url=server.url, max_retries=0)
        with pytest.raises(TransportError) as caught:
            list(client.streaming_response(MESSAGES))
        assert str(port) not in str(caught.value) and "internal" not in str(caught.value)
    # the operator still sees where: one line in the server's log
    lines = [r.getMessage() for r in caplog.records if "outcome=TransportError" in r.getMessage()]
    assert len(lines) == 1 and "127.0.0.1:{}/internal/v1/chat/completions".format(port) in lines[0]


def _nested(depth, leaf):
    text = json.dumps(leaf)
    return "[" * depth + text + "]" * depth


@pytest.mark.parametrize("config_text", [
    '{"__bytes__": "aGk="}',                                            # config that decodes to bytes
    '{"metadata": ' + _nested(3000, {"__bytes__": "aGk="}) + '}',      # deep nesting next to a bytes item
])
def test_a_config_that_is_bytes_or_nested_too_deep_is_a_400_and_one_line(site, caplog, config_text):
    up, app, server = site
    seen = len(up.requests)
    body = ('{"model": "chat", "messages": ' + json.dumps(MESSAGES) + ', "config": ' + config_text + '}').encode()
    with caplog.at_level(logging.DEBUG, logger="agenthub.server"):
        answer = post(server, body=body)
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["type"] == "ConfigError"
    assert [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR] == []  # no traceback
    assert len(up.requests) == seen


def test_messages_nested_too_deep_next_to_bytes_are_a_400(site, caplog):
    up, app, server = site
    messages = '[{"role": "user", "content_items": [{"type": "text", "text": "hi", "x": ' + _nested(
        3000, {"__bytes__": "aGk="}) + '}]}]'
    body = ('{"model": "chat", "messages": ' + messages + '}').encode()
    with caplog.at_level(logging.DEBUG, logger="agenthub.server"):
        answer = post(server, body=body)
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["type"] == "ConfigError"
    assert [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR] == []


def test_several_slow_clients_do_not_hold_threads_forever(site):
    """Connections that send half a request and wait: each is closed within the timeouts, in parallel."""
    up, app, server = site
    results = []

    def one(data):
        results.append(raw(server, data, wait=5))

    threads = [threading.Thread(target=one, args=(data,)) for data in (
        b"", b"POST /v1/stream HTTP/1.1\r\n", head(Content_Type="application/json", Content_Length=100) + b"{") * 3]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert len(results) == 9
    assert all(answer is not None and seconds < 3 for answer, seconds in results), results


# -- a client that leaves while the upstream is silent -------------------------------------------------------------


def _leave_after(server, events):
    """Open a stream, read its head and ``events`` data frames, and close the connection: the seconds since."""
    host, port = server.server.server_address[:2]
    sock = socket.create_connection((host, port), timeout=10)
    try:
        sock.sendall(head(Content_Type="application/json", Content_Length=len(BODY)) + BODY)
        got = b""
        while b"\r\n\r\n" not in got or got.count(b"data: ") < events:
            piece = sock.recv(65536)
            assert piece, got
            got += piece
    finally:
        sock.close()
    return time.monotonic()


@pytest.mark.parametrize("events", [0, 2], ids=["before the first event", "after two events"])
def test_a_client_that_leaves_while_the_upstream_is_silent_ends_the_stream_at_once(events):
    """The server noticed a client gone only when a write failed: with a silent upstream (a model thinking), the
    second keep-alive, twice keepalive_seconds later (30 s by default), while the upstream went on (and billed).
    The built-in server now looks at the connection while it waits: the upstream is aborted within a second or
    so.  (keepalive_seconds is 30 here; the upstream holds the connection at most 20 s of its own.)"""
    with Upstream() as up:
        up.routes["chat"] = Route(chat_sse(1, end=False) if events else b": thinking\n\n", hold=True)
        app = app_for(up, keepalive_seconds=30)
        with Builtin(app) as server:
            if not events:  # (the head comes with the first keep-alive or event: the client leaves before either)
                host, port = server.server.server_address[:2]
                sock = socket.create_connection((host, port), timeout=10)
                sock.sendall(head(Content_Type="application/json", Content_Length=len(BODY)) + BODY)
                assert _wait(lambda: app.open_streams == 1 and len(up.requests) == 1)
                sock.close()
                left = time.monotonic()
            else:
                left = _leave_after(server, events)
            assert up.wait_closed(1, timeout=8)  # the upstream connection is closed: the model stops
            assert time.monotonic() - left < 8
            assert _wait(lambda: app.open_streams == 0)
            assert _all_slots_free(app)  # (the slot is given back after the gauge is lowered: both are done)
            assert app.metrics.render().count('agenthub_open_streams{model="chat"} 0') == 1


UPSTREAM_KEY = "sk-upstream-SECRET-0123456789abcdefghijklmnopqrstuv"


def _cut_echoes():
    """Upstream error answers that echo the row's key where agenthub cuts the text: at the end of the 64 KiB it reads
    of an error body, and across errors.preview's head and its tail (an error message of more than 2000 characters),
    and across the tail's start."""
    page = ("<html><body><pre>" + "request dump " * 6000 + "Authorization: Bearer " + UPSTREAM_KEY
            + "</pre></body></html>").encode("utf-8")  # the key straddles the 64 KiB read
    at = 64 * 1024 - 20  # (its first 20 characters inside what is read)
    page = page[:at - len("Authorization: Bearer ") - 20] + ("Authorization: Bearer " + UPSTREAM_KEY).encode() \
        + b" " * 70000
    head = "x" * (991 - 20) + UPSTREAM_KEY + "y" * 3000  # (preview keeps 991 characters each side of its marker)
    tail = "x" * 3000 + UPSTREAM_KEY + "y" * (991 - len(UPSTREAM_KEY) + 20)
    return [
        Route(page, status=502, headers={"Content-Type": "text/html"}),
        Route(json.dumps({"error": {"message": head, "type": "server_error"}}).encode(), status=500,
              headers={"Content-Type": "application/json"}),
        Route(json.dumps({"error": {"message": tail, "type": "server_error"}}).encode(), status=500,
              headers={"Content-Type": "application/json"}),
    ]


@pytest.mark.parametrize("which", [0, 1, 2], ids=["body-cut", "preview-head", "preview-tail"])
def test_an_upstream_error_echoing_the_key_where_it_is_cut_shows_no_piece_of_it(which, caplog):
    """A key an upstream's error echoes is scrubbed whole; one that a cut left in pieces (the error body read up to
    its cap, the message's head and tail kept around the marker) was shown in part: 20 or more of its characters
    reached the caller of the server and the log."""
    with Upstream() as up:
        up.routes["chat"] = _cut_echoes()[which]
        app = make_app({"models": [{"id": "chat", "model": "m", "client_type": "openai-chat", "base_url": up.url
                                    + "/chat/v1", "api_key": UPSTREAM_KEY, "max_retries": 0}]})
        with Builtin(app) as server:
            with caplog.at_level(logging.INFO, logger="agenthub.server"):
                answer = post(server)
            client = AutoLLMClient("chat", client_type="agenthub", base_url=server.url, max_retries=0)
            with pytest.raises(AgentHubError) as caught:
                list(client.streaming_response(MESSAGES))
    assert answer.status_code in (500, 502)
    message = answer.json()["error"]["message"]
    assert "...[truncated]...***" in message or "***...[truncated]..." in message or message.endswith("***")
    shown = [answer.text, str(caught.value)] + [record.getMessage() for record in caplog.records]
    pieces = [UPSTREAM_KEY[i:i + 8] for i in range(len(UPSTREAM_KEY) - 7)]  # any 8 characters of it in a row
    assert [piece for text in shown for piece in pieces if piece in text] == []
