"""Local HTTP servers for end-to-end tests, on one skeleton: scripted answers, recorded requests.

``LocalServer`` is the skeleton every threaded test server here shares (127.0.0.1 only, daemon
threads, quiet errors, a bounded shutdown); a server plugs in ``respond(handler, raw)``, which
records the request and writes the answer with ``handler.send(...)``, the one body writer.
``SSEServer`` (this module), ``bedrock_server.BedrockServer`` and ``server_support.Upstream`` are
the three servers built on it.
"""

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):  # noqa: N802
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        self.server.owner.respond(self, raw)

    do_GET = do_POST

    def log_message(self, *args):
        pass

    def send(self, status, headers, chunks, chunked=True, pause=0.0, pause_first=True, gate=None, end=True):
        """The body writer: status and headers, then ``chunks`` (one HTTP chunk each when ``chunked``,
        else close-delimited), ``pause`` seconds before each (not the first unless ``pause_first``), a
        ``gate`` event waited on (at most 5 s) after the first; ``end``: write the last chunk.  ->
        False when the client went away meanwhile."""
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
        else:
            self.send_header("Connection", "close")
        self.end_headers()
        try:
            for n, chunk in enumerate(chunks):
                if pause and (n or pause_first) and self.server.closing.wait(pause):
                    self.close_connection = True  # the server closed meanwhile: this answer ends here, and its thread
                    return False
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk) if chunked else chunk)
                self.wfile.flush()
                if n == 0 and gate is not None:
                    deadline = time.monotonic() + 5
                    while not self.server.closing.is_set() and time.monotonic() < deadline:  # (ends if it closes)
                        if gate.wait(min(0.05, max(0.0, deadline - time.monotonic()))):
                            break
            if not chunked:
                self.close_connection = True
            elif end:
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
            return False
        return True


def track_connections(server):
    """The connections ``server`` (a socketserver server) accepts from now on: a list it fills."""
    connections = []
    accept = server.get_request

    def get_request():
        conn, address = accept()
        connections.append(conn)
        return conn, address

    server.get_request = get_request
    return connections


def read_until_closed(sock, wait):
    """What the server sends on ``sock`` until it closes the connection (None: still open after a wait of ``wait``
    seconds for more)."""
    sock.settimeout(wait)
    got = b""
    while True:
        try:
            piece = sock.recv(65536)
        except socket.timeout:
            return None
        if not piece:
            return got
        got += piece


def trickled_until_closed(address, data, limit):
    """Send ``data`` to ``address`` a byte at a time on a new connection (at most ``limit`` seconds): the seconds
    until the server closed the connection, or None when it was still open when the bytes or the time ran out."""
    sock = socket.create_connection(address, timeout=5)
    started = time.monotonic()
    try:
        for byte in data:
            try:
                sock.sendall(bytes([byte]))
            except OSError:
                return time.monotonic() - started
            sock.settimeout(0.05)
            try:
                if sock.recv(1) == b"":
                    return time.monotonic() - started
            except socket.timeout:
                pass
            if time.monotonic() - started > limit:
                return None
        return None
    finally:
        sock.close()


def close_server(server, connections):
    """Stop ``server`` and end its ``connections``: a client that keeps its own open (a pool's keep-alive
    connection, a browser's) would keep their handler threads waiting for its next request."""
    server.shutdown()
    server.server_close()
    for conn in connections:
        try:
            conn.shutdown(socket.SHUT_RDWR)
        except OSError:  # closed already
            pass


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    nodelay = False

    def __init__(self, *args, **kwargs):
        ThreadingHTTPServer.__init__(self, *args, **kwargs)
        self.closing = threading.Event()  # set when the server closes: a paused answer stops waiting
        self.connections = track_connections(self)  # ended when the server closes

    def get_request(self):
        conn, address = ThreadingHTTPServer.get_request(self)
        if self.nodelay:
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return conn, address

    def handle_error(self, request, client_address):
        pass


class LocalServer(object):
    """The skeleton: ``with Server() as server: ... server.url``.  Subclasses write ``respond``."""

    #: send each write at once (TCP_NODELAY)
    nodelay = False

    def __init__(self):
        self._server = _HTTPServer(("127.0.0.1", 0), _Handler)
        self._server.owner = self
        self._server.nodelay = self.nodelay
        self.requests = []
        self.lock = threading.Lock()
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def respond(self, handler, raw):  # pragma: no cover - every server writes its own
        raise NotImplementedError

    @property
    def url(self):
        return "http://127.0.0.1:{}".format(self._server.server_address[1])

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._server.closing.set()
        close_server(self._server, self._server.connections)


def json_or_raw(raw):
    try:
        return json.loads(raw) if raw else None
    except ValueError:
        return raw


class Answer(object):
    """One scripted answer: status, headers, body chunks (bytes) and a pause before each chunk."""

    def __init__(self, chunks=(), status=200, headers=None, pause=0.0, chunked=True, gate=None):
        self.chunks = list(chunks)
        self.status = status
        self.headers = dict(headers or {"Content-Type": "text/event-stream"})
        self.pause = pause
        self.chunked = chunked
        self.gate = gate  # a threading.Event to wait on (at most 5 s) after the first chunk


class SSEServer(LocalServer):
    """with SSEServer() as server: server.answers.append(Answer(...)); server.url -> base URL."""

    def __init__(self):
        LocalServer.__init__(self)
        self.answers = []

    def respond(self, handler, raw):
        self.requests.append({"path": handler.path, "headers": dict(handler.headers), "body": json_or_raw(raw)})
        answer = self.answers.pop(0) if self.answers else Answer([b"data: [DONE]\n\n"])
        handler.send(answer.status, answer.headers, answer.chunks, answer.chunked, answer.pause, gate=answer.gate)


def close_upstream(app):
    """Close the keep-alive connections an AgentHubApp's clients pooled to their upstreams, and the stores of their
    rows' limiters and budgets (a settlement a store did not take is tried once more, then let go: else the process's
    lease thread retried it for up to a day, into every later test).  A test's app is let go only once pytest drops
    the fixture's value, after the leak guard has looked: closed here, on purpose."""
    for model in app.models.values():
        for client in (model.client,) + tuple(model.client.fallbacks):
            session = client.__dict__.get("_session")
            if session is not None:
                session.close()
            for shared in (getattr(client, "budget", None), getattr(client, "limiter", None)):
                store = getattr(shared, "store", None)
                if store is not None:
                    store.close()
