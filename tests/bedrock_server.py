"""A local Amazon Bedrock for end-to-end tests: checks each request's SigV4 signature with botocore (or its
Bearer key) and answers ConverseStream in event-stream frames.

Serves on 127.0.0.1 only, in daemon threads.  ``answer`` is a list of scripted answers or a function of
the request (for stateful conversations); every request is recorded with what the check found.
"""

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import bedrock_frames as bf

EVENTSTREAM = "application/vnd.amazon.eventstream"


class Reply(object):
    """One answer: status, headers, body chunks, an optional pause before each chunk."""

    def __init__(self, chunks=(), status=200, headers=None, pause=0.0):
        self.chunks = list(chunks)
        self.status = status
        self.headers = dict(headers or {"Content-Type": EVENTSTREAM})
        self.pause = pause


def frames_reply(frames, split=None, **kwargs):
    """A Reply sending ``frames`` (a list of messages) joined, cut into ``split``-byte chunks when given."""
    data = b"".join(frames)
    if split:
        chunks = [data[i:i + split] for i in range(0, len(data), split)]
    else:
        chunks = [frame for frame in frames]
    return Reply(chunks, **kwargs)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):  # noqa: N802
        server = self.server
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        headers = dict(self.headers.items())
        url = "http://{}{}".format(self.headers.get("Host"), self.path)
        auth = headers.get("Authorization", "")
        if auth.startswith("AWS4-HMAC-SHA256"):
            ok, access_key, region = bf.verify_sigv4(self.command, url, headers, raw, server.secret_key)
            check = {"kind": "sigv4", "ok": ok, "access_key": access_key, "region": region}
        elif auth.startswith("Bearer "):
            check = {"kind": "bearer", "ok": auth[7:] == server.bearer, "token": auth[7:]}
        else:
            check = {"kind": "none", "ok": False}
        try:
            body = json.loads(raw.decode("utf-8"))
        except ValueError:
            body = None
        request = {"path": self.path, "headers": headers, "raw": raw, "body": body, "auth": check}
        server.requests.append(request)
        if server.enforce and not check["ok"]:
            reply = Reply([json.dumps({"message": "The request signature we calculated does not match the signature "
                                                  "you provided."}).encode()], status=403,
                          headers={"Content-Type": "application/json",
                                   "x-amzn-ErrorType": "InvalidSignatureException:http://internal.amazon.com/",
                                   "x-amzn-RequestId": "req-403"})
        elif callable(server.answer):
            reply = server.answer(request)
        elif server.answer:
            reply = server.answer.pop(0)
        else:
            reply = frames_reply(bf.text_stream("ok"))
        self.send_response(reply.status)
        for key, value in reply.headers.items():
            self.send_header(key, value)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            for chunk in reply.chunks:
                if reply.pause:
                    time.sleep(reply.pause)
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    do_GET = do_POST

    def log_message(self, *args):
        pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        pass


class BedrockServer(object):
    """with BedrockServer(secret_key=...) as server: server.answer.append(Reply(...)); server.url."""

    def __init__(self, secret_key="", bearer="", enforce=True):
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.secret_key = secret_key
        self._server.bearer = bearer
        self._server.enforce = enforce
        self._server.answer = []
        self._server.requests = []
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def answer(self):
        return self._server.answer

    @answer.setter
    def answer(self, value):
        self._server.answer = value

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
