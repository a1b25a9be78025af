"""The benchmark's local SSE server: run as a separate process so its CPU is not counted.

    python bench/server.py        # prints "PORT <n>" once listening on 127.0.0.1

URL layout: ``/<mode>/<scenario>/<protocol>/<anything the client appends>``

- mode ``chunked``: ``Transfer-Encoding: chunked``, one HTTP chunk per SSE event;
  ``closed``: no length, the body ends when the server closes the connection;
  ``wait``: chunked, but the server stops for ``WAIT_S`` seconds after the first
  event that carries text (time-to-first-event); ``waitclosed``: the same, close-delimited;
  ``burst``: the whole body in one HTTP chunk, written at once (a gateway that buffers, a
  proxy, a replay); ``burstclosed``: the whole body written at once, close-delimited.
- ``/status503/...``: a 503 with a small JSON error body (Content-Length, kept alive): an overloaded endpoint.
- scenario ``text-<n>``: n text deltas; ``tool-<bytes>-<fragments>``: one tool call.

Bodies are built once per URL and kept, so serving costs the server nothing but
``sendall``: the client, not the server, is what the benchmark sees.
"""

import os
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from streams import FIRST_CONTENT, text_stream, tool_stream  # noqa: E402

WAIT_S = 1.0
_cache = {}
_lock = threading.Lock()


def _blocks(scenario, protocol):
    key = (scenario, protocol)
    with _lock:
        blocks = _cache.get(key)
        if blocks is None:
            kind, _, rest = scenario.partition("-")
            if kind == "text":
                blocks = text_stream(protocol, int(rest))
            elif kind == "tool":
                size, fragments = rest.split("-")
                blocks = tool_stream(protocol, int(size), int(fragments))
            else:
                raise ValueError(scenario)
            _cache[key] = blocks
    return blocks


def _chunked(blocks):
    return b"".join(b"%x\r\n%s\r\n" % (len(b), b) for b in blocks)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        self.do_POST()

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        parts = self.path.split("?", 1)[0].strip("/").split("/")
        if parts[0] == "status503":  # an overloaded endpoint (bench/failover.py): a sized JSON error, kept alive
            body = b'{"error": {"message": "unavailable", "type": "server_error", "code": null}}'
            self.send_response(503)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        try:
            mode, scenario, protocol = parts[0], parts[1], parts[2]
            blocks = _blocks(scenario, protocol)
        except (IndexError, ValueError, KeyError):
            self.send_error(404)
            return
        closed = mode in ("closed", "waitclosed", "burstclosed")
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        if closed:
            self.send_header("Connection", "close")
            self.close_connection = True
        else:
            self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        if closed:
            frame = b"".join
        elif mode == "burst":
            frame = lambda bs: _chunked([b"".join(bs)])  # noqa: E731  (one chunk: the whole body)
        else:
            frame = _chunked
        write = self.wfile.write
        try:
            if mode.startswith("wait"):
                first = FIRST_CONTENT[protocol] + 1
                write(frame(blocks[:first]))
                self.wfile.flush()
                time.sleep(WAIT_S)
                body = frame(blocks[first:])
            else:
                key = (mode, scenario, protocol)
                body = _cache.get(key)
                if body is None:
                    body = _cache[key] = frame(blocks)
            if mode.startswith("burst"):
                write(body if closed else body + b"0\r\n\r\n")  # everything in one write
            else:
                view = memoryview(body)
                for i in range(0, len(view), 1 << 18):
                    write(view[i:i + (1 << 18)])
                if not closed:
                    write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request, client_address):
        # a client that closed its stream early (the first-event measurement does) is no error here
        if not isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            super().handle_error(request, client_address)

    def server_bind(self):
        self.socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        super().server_bind()


def main():
    server = Server(("127.0.0.1", 0), Handler)
    print("PORT {}".format(server.server_address[1]), flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
