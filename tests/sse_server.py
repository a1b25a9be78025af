"""A small local HTTP server for end-to-end tests: scripted answers, recorded requests.

Serves on 127.0.0.1 only, in daemon threads; every wait is bounded.
"""

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Answer(object):
    """One scripted answer: status, headers, body chunks (bytes) and a pause before each chunk."""

    def __init__(self, chunks=(), status=200, headers=None, pause=0.0, chunked=True, gate=None):
        self.chunks = list(chunks)
        self.status = status
        self.headers = dict(headers or {"Content-Type": "text/event-stream"})
        self.pause = pause
        self.chunked = chunked
        self.gate = gate  # a threading.Event to wait on (at most 5 s) after the first chunk


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):  # noqa: N802
        server = self.server
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw
        server.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
        answer = server.answers.pop(0) if server.answers else Answer([b"data: [DONE]\n\n"])
        self.send_response(answer.status)
        for key, value in answer.headers.items():
            self.send_header(key, value)
        if answer.chunked:
            self.send_header("Transfer-Encoding", "chunked")
        else:
            self.send_header("Connection", "close")
        self.end_headers()
        try:
            for n, chunk in enumerate(answer.chunks):
                if answer.pause:
                    time.sleep(answer.pause)
                if answer.chunked:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                else:
                    self.wfile.write(chunk)
                self.wfile.flush()
                if n == 0 and answer.gate is not None:
                    answer.gate.wait(5)
            if answer.chunked:
                self.wfile.write(b"0\r\n\r\n")
            else:
                self.close_connection = True
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    do_GET = do_POST

    def log_message(self, *args):
        pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        pass


class SSEServer(object):
    """with SSEServer() as server: server.answers.append(Answer(...)); server.url -> base URL."""

    def __init__(self, handler=None):
        self._server = _Server(("127.0.0.1", 0), handler or _Handler)
        self._server.answers = []
        self._server.requests = []
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def answers(self):
        return self._server.answers

    @property
    def requests(self):
        return self._server.requests

    @property
    def url(self):
        return "http://127.0.0.1:{}".format(self._server.server_address[1])

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._server.shutdown()
        self._server.server_close()
