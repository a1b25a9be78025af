"""A local Amazon Bedrock for end-to-end tests: checks each request's SigV4 signature with botocore (or its
Bearer key) and answers ConverseStream in event-stream frames.

Serves on 127.0.0.1 only, in daemon threads.  ``answer`` is a list of scripted answers or a function of
the request (for stateful conversations); every request is recorded with what the check found.
"""

import json

import bedrock_frames as bf
from sse_server import LocalServer

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


class BedrockServer(LocalServer):
    """with BedrockServer(secret_key=...) as server: server.answer.append(Reply(...)); server.url."""

    def __init__(self, secret_key="", bearer="", enforce=True):
        LocalServer.__init__(self)
        self.secret_key = secret_key
        self.bearer = bearer
        self.enforce = enforce
        self.answer = []

    def respond(self, handler, raw):
        headers = dict(handler.headers.items())
        url = "http://{}{}".format(handler.headers.get("Host"), handler.path)
        auth = headers.get("Authorization", "")
        if auth.startswith("AWS4-HMAC-SHA256"):
            ok, access_key, region = bf.verify_sigv4(handler.command, url, headers, raw, self.secret_key)
            check = {"kind": "sigv4", "ok": ok, "access_key": access_key, "region": region}
        elif auth.startswith("Bearer "):
            check = {"kind": "bearer", "ok": auth[7:] == self.bearer, "token": auth[7:]}
        else:
            check = {"kind": "none", "ok": False}
        try:
            body = json.loads(raw.decode("utf-8"))
        except ValueError:
            body = None
        request = {"path": handler.path, "headers": headers, "raw": raw, "body": body, "auth": check}
        self.requests.append(request)
        if self.enforce and not check["ok"]:
            reply = Reply([json.dumps({"message": "The request signature we calculated does not match the signature "
                                                  "you provided."}).encode()], status=403,
                          headers={"Content-Type": "application/json",
                                   "x-amzn-ErrorType": "InvalidSignatureException:http://internal.amazon.com/",
                                   "x-amzn-RequestId": "req-403"})
        elif callable(self.answer):
            reply = self.answer(request)
        elif self.answer:
            reply = self.answer.pop(0)
        else:
            reply = frames_reply(bf.text_stream("ok"))
        handler.send(reply.status, reply.headers, reply.chunks, pause=reply.pause)
