"""A local OpenAI-compatible server for the bulk-job tests (127.0.0.1 only, daemon threads, bounded waits).

``/v1/chat/completions`` streams ``echo: <the last user text>`` (Chat Completions SSE, usage chunk
included); ``/v1/embeddings`` answers one vector per input.  What a prompt asks for changes the answer:
``fail:400`` a 400, ``fail:500`` a 500 every time, ``fail:429once`` a 429 with Retry-After the first time,
``sleep:<seconds>`` a pause before answering.  Every request is counted by its prompt text.

``rpm=`` makes it enforce a rate as a token bucket (``rpm / 60`` per second, ``burst`` at most), the way
the providers document a per-minute limit may be enforced over shorter periods: a request finding the
bucket empty gets a 429 with ``Retry-After``.  ``headers=`` adds headers to every 200 answer.
"""

import json
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from sse_server import close_server, track_connections


def _text_of(body):
    messages = body.get("messages") or []
    for message in reversed(messages):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):
                return "".join(part.get("text", "") for part in content if isinstance(part, dict))
            return content or ""
    return ""


def _sse(obj):
    return b"data: " + json.dumps(obj).encode("utf-8") + b"\n\n"


def chat_body(text, model="m"):
    answer = "echo: " + text
    chunk = {"id": "c1", "object": "chat.completion.chunk", "model": model}
    out = _sse(dict(chunk, choices=[{"index": 0, "delta": {"role": "assistant", "content": answer},
                                     "finish_reason": None}]))
    out += _sse(dict(chunk, choices=[{"index": 0, "delta": {}, "finish_reason": "stop"}]))
    out += _sse(dict(chunk, choices=[], usage={"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}))
    return out + b"data: [DONE]\n\n"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def _send(self, status, body, content_type="application/json", headers=None):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        try:  # (the head too: a client that has gone, an aborted row, breaks the pipe at its write)
            self.end_headers()
            self.wfile.write(body)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass

    def do_POST(self):  # noqa: N802
        server = self.server.owner
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw)
        except ValueError:
            return self._send(400, b'{"error": {"message": "not JSON", "type": "invalid_request_error"}}')
        now = time.monotonic()
        if self.path.endswith("/embeddings"):
            inputs = body.get("input")
            inputs = inputs if isinstance(inputs, list) else [inputs]
            key = "embed:" + "|".join(map(str, inputs))
        else:
            key = _text_of(body)
        with server.lock:
            server.counts[key] += 1
            server.models[key] = body.get("model")
            nth = server.counts[key]
            server.log.append((now, key, self.headers.get("Authorization")))
            limited = server.take(now)
        if limited is not None:
            server.statuses.append((now, 429))
            return self._send(429, json.dumps({"error": {"message": "Rate limit reached for requests",
                                                          "type": "requests", "code": "rate_limit_exceeded"}}).encode(),
                              headers={"Retry-After": "{:.3f}".format(limited), "x-ratelimit-remaining-requests": "0",
                                       "x-ratelimit-reset-requests": "{:.0f}ms".format(limited * 1000)})
        if key.startswith("sleep:"):  # (a closed server's waits end at once: its threads with them)
            server.closing.wait(min(5.0, float(key.split(":", 1)[1].split()[0])))
        elif server.delay:
            server.closing.wait(server.delay)
        if key in server.broken:
            server.statuses.append((now, 503))
            return self._send(503, b'{"error": {"message": "overloaded", "type": "server_error"}}')
        if key.startswith("fail:401"):
            server.statuses.append((now, 401))
            echoed = json.dumps({"error": {"message": "bad key " + str(self.headers.get("Authorization")),
                                           "type": "invalid_request_error"}})
            return self._send(401, echoed.encode())
        if key.startswith("fail:400"):
            server.statuses.append((now, 400))
            return self._send(400, b'{"error": {"message": "bad request for this row", "type": "invalid_request_error"}}')
        if key.startswith("fail:500"):
            server.statuses.append((now, 500))
            return self._send(500, b'{"error": {"message": "server fell over", "type": "server_error"}}')
        if key.startswith("fail:429once") and nth == 1:
            server.statuses.append((now, 429))
            return self._send(429, b'{"error": {"message": "slow down", "type": "rate_limit_error"}}',
                              headers={"Retry-After": "0.3"})
        server.statuses.append((now, 200))
        if self.path.endswith("/embeddings"):
            data = [{"object": "embedding", "index": i, "embedding": [float(len(str(t))), 0.5]}
                    for i, t in enumerate(inputs)]
            payload = {"object": "list", "data": data, "model": body.get("model"),
                       "usage": {"prompt_tokens": 4, "total_tokens": 4}}
            return self._send(200, json.dumps(payload).encode(), headers=server.headers)
        return self._send(200, chat_body(key, body.get("model", "m")), "text/event-stream", server.headers)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


class JobServer(object):
    def __init__(self, rpm=None, burst=None, delay=0.0, headers=None):
        self.counts = Counter()
        self.models = {}  # prompt text -> the model the last request for it named
        self.log = []
        self.statuses = []
        self.lock = threading.Lock()
        self.closing = threading.Event()  # set when the server closes
        self.delay = delay
        self.broken = set()  # prompt texts answered 503 while they are here
        self.headers = dict(headers or {})
        self.rpm = rpm
        self.burst = burst if burst is not None else (max(1.0, rpm / 60.0) if rpm else None)
        self._tokens = self.burst
        self._at = time.monotonic()
        self._httpd = _Server(("127.0.0.1", 0), _Handler)
        self._connections = track_connections(self._httpd)  # (ended when it closes)
        self._httpd.owner = self
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def take(self, now):
        """None when a request may go; else the seconds until the bucket holds one again."""
        if self.rpm is None:
            return None
        rate = self.rpm / 60.0
        self._tokens = min(self.burst, self._tokens + (now - self._at) * rate)
        self._at = now
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return None
        return (1.0 - self._tokens) / rate

    @property
    def base_url(self):
        return "http://127.0.0.1:{}/v1".format(self._httpd.server_address[1])

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self.closing.set()
        close_server(self._httpd, self._connections)
        self._thread.join(5)
