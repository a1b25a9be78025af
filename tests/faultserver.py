"""A local HTTP/1.1 server that misbehaves on purpose, for the fault tests.

It listens on 127.0.0.1 (a free port), speaks just enough HTTP to answer a POST,
and plays a *script* for each request: a list of steps such as ``status(200)``,
``send(b"data: ...\\n\\n")``, ``sleep(0.2)``, ``drop()``.  Scripts are queued with
``server.push(script, ...)``; when the queue is empty the ``default`` script
(or callable ``default(request) -> script``) answers.

Body framing is chosen by ``status(..., framing=...)``:

- ``"chunked"`` (default): each ``send`` is one HTTP chunk; a clean end writes the
  last chunk, a ``drop()`` closes the socket without it;
- ``"close"``: no length, the body ends when the server closes the socket (so a
  dropped connection looks like a clean end: only the SSE terminal marker can tell);
- ``"length"``: the body of all ``send`` steps is collected and sent with a
  Content-Length (for error answers).

Everything is bounded: each step has a size or a time, ``hang`` waits at most its
timeout, connections idle for ``idle_timeout`` are closed, and the server stops by
itself after ``lifetime`` seconds even if a test forgets to stop it.  It records each
request (``requests``) and, for each connection, when the client closed it
(``closed``), so tests can check that a connection was released.
"""

import json
import select
import socket
import struct
import threading
import time

import pytest

__all__ = ["FaultServer", "status", "send", "sleep", "drop", "end", "hang", "trickle", "sse", "chat_chunk",
           "chat_stream", "error_body", "within", "tiny_session", "pool_free", "raw", "reset"]


# -- script steps ---------------------------------------------------------------------------------

def status(code=200, headers=None, framing="chunked", reason=None):
    return ("status", code, dict(headers or {}), framing, reason)


def send(data):
    return ("send", data if isinstance(data, bytes) else data.encode("utf-8"))


def sleep(seconds):
    return ("sleep", float(seconds))


def drop():
    """Close the socket now (mid-body: no last chunk, no terminal marker)."""
    return ("drop",)


def end():
    return ("end",)


def raw(data):
    """Bytes written to the socket as they are, outside any body framing (broken chunk sizes, ...)."""
    return ("raw", data if isinstance(data, bytes) else data.encode("latin-1"))


def reset():
    """Abort the connection with a TCP reset (RST), not a clean close."""
    return ("reset",)


def hang(timeout=5.0):
    """Send nothing more; wait until the client closes the connection (or ``timeout``)."""
    return ("hang", float(timeout))


def trickle(data, every=0.01):
    """Send ``data`` one byte at a time, ``every`` seconds apart."""
    return ("trickle", data if isinstance(data, bytes) else data.encode("utf-8"), float(every))


# -- payload helpers ------------------------------------------------------------------------------

def sse(data, event=None):
    """One SSE event (``data`` is JSON-encoded unless it is already str/bytes)."""
    if not isinstance(data, (str, bytes)):
        data = json.dumps(data)
    if isinstance(data, bytes):
        data = data.decode("utf-8")
    head = "event: {}\n".format(event) if event else ""
    return (head + "data: " + data + "\n\n").encode("utf-8")


def chat_chunk(content=None, finish=None, usage=None):
    delta = {} if content is None else {"content": content}
    chunk = {"id": "c1", "object": "chat.completion.chunk", "model": "m",
             "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    if usage is not None:
        chunk["choices"] = []
        chunk["usage"] = usage
    return sse(chunk)


def chat_stream(*texts):
    """A complete Chat Completions stream answering ``texts``: one chunk each, finish, usage, [DONE]."""
    body = b"".join(chat_chunk(t) for t in texts)
    body += chat_chunk(finish="stop")
    body += chat_chunk(usage={"prompt_tokens": 3, "completion_tokens": len(texts), "total_tokens": 3 + len(texts)})
    return body + b"data: [DONE]\n\n"


def error_body(message="boom", kind="server_error", code=None):
    return json.dumps({"error": {"message": message, "type": kind, "code": code}}).encode("utf-8")


# -- the server -----------------------------------------------------------------------------------

class Request(object):
    __slots__ = ("method", "path", "headers", "body", "at", "connection")

    def __init__(self, method, path, headers, body, connection):
        self.method = method
        self.path = path
        self.headers = headers
        self.body = body
        self.at = time.monotonic()
        self.connection = connection

    def json(self):
        return json.loads(self.body.decode("utf-8"))

    def __repr__(self):
        return "Request({} {})".format(self.method, self.path)


class _Dropped(Exception):
    pass


class FaultServer(object):
    """``with FaultServer() as server: ... server.url ...``"""

    def __init__(self, default=None, lifetime=120.0, idle_timeout=10.0):
        self.default = default if default is not None else [status(200, {"Content-Type": "text/event-stream"}),
                                                            send(chat_stream("ok"))]
        self.lifetime = lifetime
        self.idle_timeout = idle_timeout
        self.requests = []  # type: list
        self.closed = {}  # connection number -> monotonic time the client closed it
        self.errors = []  # type: list  # unexpected server-side exceptions (a test may assert it is empty)
        self._scripts = []  # type: list
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._connections = 0
        self._open = set()
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(128)
        self._listener.settimeout(0.02)
        self.port = self._listener.getsockname()[1]
        self.url = "http://127.0.0.1:{}".format(self.port)
        self._started = time.monotonic()
        self._thread = threading.Thread(target=self._serve, name="faultserver", daemon=True)
        self._thread.start()

    # -- control ----------------------------------------------------------------------------------
    def push(self, *scripts):
        with self._lock:
            self._scripts.extend(scripts)
        return self

    def stop(self):
        self._stop.set()
        self._thread.join(5)
        try:
            self._listener.close()
        except OSError:
            pass
        for sock in list(self._open):
            try:  # (a shutdown wakes a thread reading it; a close alone may not)
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            try:
                sock.close()
            except OSError:
                pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()

    @property
    def connections(self):
        return self._connections

    def wait_closed(self, connection, timeout=2.0):
        """True once the client closed connection number ``connection`` (1-based), within ``timeout``."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if connection in self.closed:
                return True
            time.sleep(0.005)
        return connection in self.closed

    def wait_requests(self, count, timeout=2.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and len(self.requests) < count:
            time.sleep(0.005)
        return len(self.requests) >= count

    # -- serving ----------------------------------------------------------------------------------
    def _serve(self):
        while not self._stop.is_set() and time.monotonic() - self._started < self.lifetime:
            try:
                sock, _ = self._listener.accept()
            except socket.timeout:
                continue
            except OSError:
                break
            with self._lock:
                self._connections += 1
                number = self._connections
            self._open.add(sock)
            threading.Thread(target=self._connection, args=(sock, number), daemon=True).start()
        self._stop.set()

    def _next_script(self, request):
        with self._lock:
            script = self._scripts.pop(0) if self._scripts else self.default
        return script(request) if callable(script) else script

    def _connection(self, sock, number):
        buffer = b""
        try:
            # (inside the try: ``stop`` may close the socket before this thread first runs, an EBADF here)
            sock.settimeout(self.idle_timeout)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # each step leaves at once
            while not self._stop.is_set():
                request, buffer = self._read_request(sock, buffer, number)
                if request is None:
                    self.closed.setdefault(number, time.monotonic())
                    return
                self.requests.append(request)
                keep = self._play(sock, self._next_script(request), number)
                if not keep:
                    return
        except _Dropped:
            return
        except (OSError, ValueError):
            self.closed.setdefault(number, time.monotonic())
        except Exception as exc:  # pragma: no cover - a bug in a script
            self.errors.append(exc)
        finally:
            self._open.discard(sock)
            try:
                sock.close()
            except OSError:
                pass

    def _read_request(self, sock, buffer, number):
        while b"\r\n\r\n" not in buffer:
            if len(buffer) > 1 << 20:
                raise ValueError("request head too large")
            try:
                data = sock.recv(65536)
            except socket.timeout:
                return None, b""
            if not data:
                return None, b""
            buffer += data
        head, _, rest = buffer.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        method, path, _ = lines[0].split(" ", 2)
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        length = int(headers.get("content-length") or 0)
        while len(rest) < length:
            data = sock.recv(65536)
            if not data:
                return None, b""
            rest += data
        body, buffer = rest[:length], rest[length:]
        return Request(method, path, headers, body, number), buffer

    def _play(self, sock, script, number):
        framing = "chunked"
        pending = []  # "length" framing: the body, sent at the end
        head = None
        ended = False
        for step in script:
            kind = step[0]
            if kind == "status":
                _, code, headers, framing, reason = step
                head = (code, headers, reason)
                if framing != "length":
                    self._head(sock, code, headers, reason, framing, None)
            elif kind == "send":
                if framing == "length":
                    pending.append(step[1])
                else:
                    self._body(sock, step[1], framing)
            elif kind == "trickle":
                for i in range(len(step[1])):
                    self._body(sock, step[1][i:i + 1], framing)
                    if self._stop.wait(step[2]):  # the server stopped: the connection ends, and its thread
                        raise _Dropped()
            elif kind == "sleep":
                if self._stop.wait(step[1]):
                    raise _Dropped()
            elif kind == "hang":
                self._hang(sock, step[1], number)
                return False
            elif kind == "drop":
                self._drop(sock)
                raise _Dropped()
            elif kind == "raw":
                sock.sendall(step[1])
            elif kind == "reset":
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                sock.close()
                raise _Dropped()
            elif kind == "end":
                ended = True
                break
        if framing == "length":
            code, headers, reason = head if head else (200, {}, None)
            body = b"".join(pending)
            self._head(sock, code, headers, reason, "length", len(body))
            sock.sendall(body)
            return True
        if framing == "chunked":
            sock.sendall(b"0\r\n\r\n")
            return True
        # "close": the end of the body is the end of the connection
        del ended
        sock.shutdown(socket.SHUT_WR)
        self._hang(sock, 2.0, number)
        return False

    def _head(self, sock, code, headers, reason, framing, length):
        lines = ["HTTP/1.1 {} {}".format(code, reason or _REASONS.get(code, "Status"))]
        headers = dict(headers)
        headers.setdefault("Content-Type", "text/event-stream" if code < 300 else "application/json")
        if framing == "chunked":
            headers["Transfer-Encoding"] = "chunked"
        elif framing == "length":
            headers["Content-Length"] = str(length)
        else:
            headers["Connection"] = "close"
        for name, value in headers.items():
            lines.append("{}: {}".format(name, value))
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))

    @staticmethod
    def _body(sock, data, framing):
        if not data:
            return
        if framing == "chunked":
            sock.sendall(b"%x\r\n" % len(data) + data + b"\r\n")
        else:
            sock.sendall(data)

    def _hang(self, sock, timeout, number):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not self._stop.is_set():
            readable, _, _ = select.select([sock], [], [], 0.01)
            if readable:
                try:
                    data = sock.recv(65536)
                except OSError:
                    data = b""
                if not data:
                    self.closed.setdefault(number, time.monotonic())
                    return

    @staticmethod
    def _drop(sock):
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


_REASONS = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found",
            307: "Temporary Redirect", 408: "Request Timeout", 409: "Conflict", 429: "Too Many Requests",
            500: "Internal Server Error", 502: "Bad Gateway", 503: "Service Unavailable", 504: "Gateway Timeout",
            529: "Overloaded"}


# -- test helpers ---------------------------------------------------------------------------------

def within(seconds):
    """Decorator: fail (instead of hanging the suite) when the test takes longer than ``seconds``."""
    import functools

    def wrap(test):
        @functools.wraps(test)
        def run(*args, **kwargs):
            outcome = {}

            def target():
                try:
                    outcome["value"] = test(*args, **kwargs)
                except BaseException as exc:  # re-raised in the test's thread
                    outcome["error"] = exc

            thread = threading.Thread(target=target, name="test-" + test.__name__, daemon=True)
            thread.start()
            thread.join(seconds)
            if thread.is_alive():
                raise AssertionError("{} hung: still running after {}s".format(test.__name__, seconds))
            if "error" in outcome:
                raise outcome["error"]
            return outcome.get("value")

        return run

    return wrap


def tiny_session():
    """A requests.Session whose pool holds one connection and blocks for it: a leak hangs the next call."""
    import requests
    from requests.adapters import HTTPAdapter

    session = requests.Session()
    adapter = HTTPAdapter(pool_connections=1, pool_maxsize=1, pool_block=True)
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session


def pool_free(session, url):
    """True when every connection slot of ``session``'s pool for ``url`` is back in the pool."""
    adapter = session.get_adapter(url)
    pool = adapter.poolmanager.connection_from_url(url)
    return pool.pool.qsize() == pool.pool.maxsize


# -- fixtures the fault tests share (import them into a test module: ``from faultserver import fast_backoff``) --


@pytest.fixture(autouse=True)
def fast_backoff(monkeypatch):
    """Retries back off for milliseconds, not seconds (the rules under test stay the same)."""
    import agenthub.client as client_module

    monkeypatch.setattr(client_module, "BACKOFF_BASE", 0.01)
    monkeypatch.setattr(client_module, "BACKOFF_CAP", 0.02)


@pytest.fixture
def server():
    """A FaultServer on 127.0.0.1 for one test; it must have seen no handler errors."""
    with FaultServer() as srv:
        yield srv
        assert not srv.errors
