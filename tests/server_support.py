"""Helpers for the agenthub serve tests: a scripted upstream that sees its connections close,
the app on the built-in server, and the app under gunicorn (a subprocess).  127.0.0.1 only;
every wait is bounded."""

import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


class Route(object):
    """What the upstream answers on /<name>/...: ``body`` (bytes), sent in ``parts`` pieces split at
    event boundaries with ``pause`` seconds between them (``delay`` before the first); ``hold``: after
    the body, keep the connection open (sending nothing) until the client closes it."""

    def __init__(self, body=b"", status=200, headers=None, pause=0.0, delay=0.0, parts=1, hold=False):
        self.body = body
        self.status = status
        self.headers = dict(headers or {"Content-Type": "text/event-stream"})
        self.pause = pause
        self.delay = delay
        self.parts = parts
        self.hold = hold


def split_events(body, parts):
    """``body`` in ``parts`` pieces, each ending at an SSE event boundary."""
    if parts <= 1:
        return [body]
    events = [e + b"\n\n" for e in body.replace(b"\r\n", b"\n").split(b"\n\n") if e.strip()]
    size = max(1, len(events) // parts)
    return [b"".join(events[i:i + size]) for i in range(0, len(events), size)]


class _UpstreamHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):  # noqa: N802
        server = self.server
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        name = self.path.strip("/").split("/")[0]
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw
        with server.lock:
            server.requests.append({"route": name, "path": self.path, "headers": dict(self.headers), "body": body})
            route = server.routes.get(name)
            if isinstance(route, list):
                route = route.pop(0) if len(route) > 1 else route[0]
        if route is None:
            self.send_error(404)
            return
        if route.delay:
            time.sleep(route.delay)
        self.send_response(route.status)
        for key, value in route.headers.items():
            self.send_header(key, value)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            for n, piece in enumerate(split_events(route.body, route.parts)):
                if n and route.pause:
                    time.sleep(route.pause)
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                self.wfile.flush()
            if route.hold:
                self._wait_for_close()
                return
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
            self._closed()

    def _wait_for_close(self):
        sock = self.connection
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            readable, _, _ = select.select([sock], [], [], 0.05)
            if readable:
                try:
                    data = sock.recv(1024)
                except OSError:
                    data = b""
                if not data:
                    break
        self.close_connection = True
        self._closed()

    def _closed(self):
        with self.server.lock:
            self.server.closed += 1
        self.server.closed_event.set()

    do_GET = do_POST


class _UpstreamServer(ThreadingHTTPServer):
    daemon_threads = True

    def get_request(self):
        conn, address = ThreadingHTTPServer.get_request(self)
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return conn, address

    def handle_error(self, request, client_address):
        pass


class Upstream(object):
    """with Upstream() as up: up.routes["chat"] = Route(body); base_url = up.url + "/chat/v1"."""

    def __init__(self):
        self._server = _UpstreamServer(("127.0.0.1", 0), _UpstreamHandler)
        self._server.routes = {}
        self._server.requests = []
        self._server.closed = 0
        self._server.closed_event = threading.Event()
        self._server.lock = threading.Lock()
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)

    routes = property(lambda self: self._server.routes)
    requests = property(lambda self: self._server.requests)
    closed = property(lambda self: self._server.closed)
    closed_event = property(lambda self: self._server.closed_event)

    @property
    def url(self):
        return "http://127.0.0.1:{}".format(self._server.server_address[1])

    def wait_closed(self, count, timeout=10.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.closed >= count:
                return True
            time.sleep(0.02)
        return False

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._server.shutdown()
        self._server.server_close()


class Builtin(object):
    """The app on agenthub.server.serve (the built-in threading server), in a daemon thread."""

    def __init__(self, app):
        from agenthub.server import serve

        self.app = app
        self.server, self.url = serve(app, "127.0.0.1", 0)
        self._thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


def free_port():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


def gunicorn_available():
    try:
        import gunicorn  # noqa: F401
    except ImportError:
        return False
    return True


class Gunicorn(object):
    """``gunicorn -k gthread`` serving ``make_app(config_path)`` on 127.0.0.1 (a subprocess)."""

    def __init__(self, config_path, threads=8, workers=1, timeout=20.0):
        self.port = free_port()
        self.url = "http://127.0.0.1:{}".format(self.port)
        env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
        self.process = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "-k", "gthread", "--threads", str(threads), "-w", str(workers),
             "-b", "127.0.0.1:{}".format(self.port), "--graceful-timeout", "2", "--log-level", "warning",
             "agenthub.server:make_app({!r})".format(str(config_path))],
            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + timeout
        while True:
            if self.process.poll() is not None:
                out, err = self.process.communicate()
                raise RuntimeError("gunicorn exited: {}".format(err.decode("utf-8", "replace")[-2000:]))
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError("gunicorn did not start within {}s".format(timeout))
                time.sleep(0.05)

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)  # gunicorn's quick shutdown
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        self.process.stdout.close()
        self.process.stderr.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
