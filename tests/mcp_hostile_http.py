"""A hostile Streamable HTTP MCP server for the tests (stdlib only, any Python): run as a subprocess,

    python tests/mcp_hostile_http.py GET_MODE PORT_FILE      GET_MODE: refuse | stall | ask

Handshake era (2025-06-18) with sessions: ``server/discover`` is a plain 400 (the client falls back),
``initialize`` gives an ``Mcp-Session-Id``, a notification or a response is 202 (but for
``notifications/cancelled``: read, never answered), a DELETE 200.
GET (the listening stream): ``refuse`` answers 405; ``stall`` takes the request and never sends a head; ``ask``
sends a ``ping`` request (whose answer's POST is never answered), then comments; ``flap`` sends ``retry: 0`` and
one notification, then ends the stream (each time: ``GET /gets`` counts them).

tools/call by name:

- ``ask_surrogate``: an SSE answer whose first event is a request from the server whose method holds a lone
  surrogate (``"\\ud800"`` in its JSON), then the result once the client's answer to it has come.
- ``ask_stall``: an SSE answer whose first event is a ``ping`` request; the client's POST of the answer to it
  is read and never answered (no head), and the stream sends nothing more.
- ``leak_sse``: an SSE answer whose one event is a JSON-RPC error echoing the Authorization header (its
  message and its data).
- ``hang``: never answered.
- ``gone``: a 404 (the session is gone), and the next ``initialize`` is never answered.
- ``redirect``: a 307 to ``/elsewhere`` on this server.
- ``echo``: the text back (JSON).

``GET /log`` gives the messages POSTed (their JSON bodies, as text).
"""

import json
import os
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

GET_MODE = sys.argv[1] if len(sys.argv) > 1 else "refuse"
LOG = []
LOCK = threading.Lock()
GETS = [0]  # listening streams opened (flap)
ANSWERED = threading.Event()  # the client answered the server's request
STALL_INIT = threading.Event()  # the next initialize is never answered


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def _send(self, status, body=b"", ctype=None, headers=None):
        self.send_response(status)
        if ctype:
            self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        if body:
            self.wfile.write(body)

    def _json(self, doc, headers=None):
        self._send(200, json.dumps(doc).encode(), "application/json", headers)

    def _sse_start(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True

    def _event(self, text):
        self.wfile.write(b"data: " + text.encode() + b"\n\n")
        self.wfile.flush()

    def do_GET(self):
        if self.path == "/log":
            with LOCK:
                return self._send(200, json.dumps(LOG).encode(), "application/json")
        if self.path == "/gets":
            with LOCK:
                return self._send(200, json.dumps(GETS[0]).encode(), "application/json")
        if GET_MODE == "flap":  # one message a stream, and "reconnect at once"
            with LOCK:
                GETS[0] += 1
            self._sse_start()
            self.wfile.write(b"retry: 0\ndata: " + json.dumps({"jsonrpc": "2.0", "method": "notifications/message",
                                                               "params": {"level": "info", "data": "hi"}}).encode()
                             + b"\n\n")
            self.wfile.flush()
            return
        if GET_MODE == "stall":
            time.sleep(60)  # the head never comes
            return
        if GET_MODE == "ask":  # a ping whose answer's POST is never answered, then comments
            self._sse_start()
            try:
                self._event(json.dumps({"jsonrpc": "2.0", "id": "s-stall", "method": "ping"}))
                for _ in range(600):
                    self.wfile.write(b": keep-alive\n\n")
                    self.wfile.flush()
                    time.sleep(0.1)
            except OSError:
                pass
            return
        self._send(405)

    def do_DELETE(self):
        self._send(200)

    def do_POST(self):
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        text = raw.decode("utf-8", "replace")
        with LOCK:
            LOG.append(text)
        msg = json.loads(raw)
        method, ident = msg.get("method"), msg.get("id")
        if method == "server/discover":
            return self._send(400, b"Bad Request", "text/plain")
        if method == "initialize":
            if STALL_INIT.is_set():  # once, after a ``gone``
                STALL_INIT.clear()
                time.sleep(60)
                return
            return self._json({"jsonrpc": "2.0", "id": ident, "result": {
                "protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                "serverInfo": {"name": "hostile", "version": "1"}}}, {"Mcp-Session-Id": uuid.uuid4().hex})
        if method is None:  # a response to the server's own request
            if ident == "s-stall":
                time.sleep(60)  # read, never answered
                return
            ANSWERED.set()
            return self._send(202)
        if method == "notifications/cancelled":
            time.sleep(60)  # read, never answered
            return
        if ident is None:
            return self._send(202)
        if method != "tools/call":
            return self._json({"jsonrpc": "2.0", "id": ident, "error": {"code": -32601, "message": "no"}})
        name = (msg.get("params") or {}).get("name")
        args = (msg.get("params") or {}).get("arguments") or {}
        if name == "ask_surrogate":
            ANSWERED.clear()
            self._sse_start()
            self._event('{"jsonrpc": "2.0", "id": "s-1", "method": "sampling/createMessage\\ud800"}')
            ANSWERED.wait(10)
            self._event(json.dumps({"jsonrpc": "2.0", "id": ident, "result": {
                "content": [{"type": "text", "text": "answered" if ANSWERED.is_set() else "no answer"}]}}))
            return
        if name == "leak_sse":  # an error answer on a stream, echoing the caller's Authorization header
            self._sse_start()
            seen = self.headers.get("Authorization") or ""
            self._event(json.dumps({"jsonrpc": "2.0", "id": ident, "error": {
                "code": -32603, "message": "denied for " + seen, "data": {"seen": seen}}}))
            return
        if name == "bad_utf8_json":
            body = b'{"jsonrpc": "2.0", "id": ' + str(ident).encode() + b', "result": {"content": [{"type": "text", ' \
                b'"text": "a\xff\xfeb"}]}}'
            return self._send(200, body, "application/json")
        if name == "bad_utf8_sse":
            self._sse_start()
            self.wfile.write(b'data: {"jsonrpc": "2.0", "id": ' + str(ident).encode() + b', "result": {"content": '
                             b'[{"type": "text", "text": "a\xff\xfeb"}]}}\n\n')
            return
        if name == "comments":  # an SSE answer of comments only, forever
            self._sse_start()
            try:
                for _ in range(1200):
                    self.wfile.write(b": ping\n\n")
                    self.wfile.flush()
                    time.sleep(0.05)
            except OSError:
                pass
            return
        if name == "trickle":  # a JSON answer one byte at a time, never done
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "100000")
            self.end_headers()
            try:
                for _ in range(100000):
                    self.wfile.write(b" ")
                    self.wfile.flush()
                    time.sleep(0.05)
            except OSError:
                pass
            return
        if name == "cut_json":  # fewer bytes than its Content-Length, then the connection closes
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "1000")
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(b'{"jsonrpc": "2.0", "id": ')
            self.close_connection = True
            return
        if name == "html200":
            return self._send(200, b"<html><body>Welcome</body></html>", "text/html")
        if name == "many_headers":
            self.send_response(200)
            for number in range(150):
                self.send_header("X-H{}".format(number), "v")
            body = json.dumps({"jsonrpc": "2.0", "id": ident, "result": {"content": []}}).encode()
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        if name == "long_header":
            self.send_response(200)
            self.send_header("X-Long", "v" * 100000)
            body = json.dumps({"jsonrpc": "2.0", "id": ident, "result": {"content": []}}).encode()
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        if name == "not_jsonrpc":
            return self._json({"hello": "world"})
        if name == "batch":
            return self._json([{"jsonrpc": "2.0", "id": ident, "result": {"content": [{"type": "text", "text": "b"}]}}])
        if name == "other_id_sse":
            self._sse_start()
            self._event(json.dumps({"jsonrpc": "2.0", "id": 999999, "result": {"content": []}}))
            return
        if name == "long_line_sse":  # an SSE data line of 20 MB that never ends
            self._sse_start()
            try:
                self.wfile.write(b"data: ")
                for _ in range(20):
                    self.wfile.write(b"x" * (1024 * 1024))
                time.sleep(30)
            except OSError:
                pass
            return
        if name == "int_digits":  # an id of 5000 digits
            return self._send(200, b'{"jsonrpc": "2.0", "id": ' + b"1" * 5000 + b', "result": {}}', "application/json")
        if name == "deep":  # a result nested 100,000 deep
            return self._send(200, b'{"jsonrpc": "2.0", "id": ' + str(ident).encode() + b', "result": {"a": '
                              + b"[" * 100000 + b"]" * 100000 + b"}}", "application/json")
        if name == "redirect":  # to another path of this server (a request there is logged)
            return self._send(307, b"", None, {"Location": "http://127.0.0.1:{}/elsewhere".format(
                self.server.server_address[1])})
        if name == "gone":  # the session is gone (404), and the initialize that follows is never answered
            STALL_INIT.set()
            return self._send(404, b"session not found", "text/plain")
        if name == "hang":
            time.sleep(60)
            return
        if name == "ask_stall":
            self._sse_start()
            self._event(json.dumps({"jsonrpc": "2.0", "id": "s-stall", "method": "ping"}))
            time.sleep(60)
            return
        return self._json({"jsonrpc": "2.0", "id": ident, "result": {
            "content": [{"type": "text", "text": args.get("text", "")}]}})


def main():
    port_file = sys.argv[2]
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    with open(port_file + ".tmp", "w") as handle:
        handle.write(str(server.server_address[1]))
    os.replace(port_file + ".tmp", port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
