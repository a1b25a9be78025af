"""Helpers for the agenthub serve tests: a scripted upstream that sees its connections close,
the app on the built-in server, and the app under gunicorn (a subprocess).  127.0.0.1 only;
every wait is bounded."""

import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time

from sse_server import LocalServer, close_server, close_upstream, json_or_raw, track_connections

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


class Upstream(LocalServer):
    """with Upstream() as up: up.routes["chat"] = Route(body); base_url = up.url + "/chat/v1"."""

    nodelay = True

    def __init__(self):
        LocalServer.__init__(self)
        self.routes = {}
        self.closed = 0
        self.closed_event = threading.Event()

    def respond(self, handler, raw):
        name = handler.path.strip("/").split("/")[0]
        with self.lock:
            self.requests.append({"route": name, "path": handler.path, "headers": dict(handler.headers),
                                  "body": json_or_raw(raw)})
            route = self.routes.get(name)
            if isinstance(route, list):
                route = route.pop(0) if len(route) > 1 else route[0]
        if route is None:
            handler.send_error(404)
            return
        if route.delay:
            time.sleep(route.delay)
        if not handler.send(route.status, route.headers, split_events(route.body, route.parts), pause=route.pause,
                            pause_first=False, end=not route.hold):
            self._closed()
        elif route.hold:
            self._wait_for_close(handler)

    def _wait_for_close(self, handler):
        sock = handler.connection
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
        handler.close_connection = True
        self._closed()

    def _closed(self):
        with self.lock:
            self.closed += 1
        self.closed_event.set()

    def wait_closed(self, count, timeout=10.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.closed >= count:
                return True
            time.sleep(0.02)
        return False


class Builtin(object):
    """The app on agenthub.server.serve (the built-in threading server), in a daemon thread."""

    def __init__(self, app):
        from agenthub.server import serve

        self.app = app
        self.server, self.url = serve(app, "127.0.0.1", 0)
        self._connections = track_connections(self.server)
        self._thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        close_server(self.server, self._connections)
        close_upstream(self.app)


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
