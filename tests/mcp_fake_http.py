"""A tiny MCP server over HTTP for the tests (stdlib only, any Python): run as a subprocess,

    python tests/mcp_fake_http.py ERA PORT_FILE      ERA: modern | legacy | dual | noget | httpsse | comments | endless

- modern: 2026-07-28 only; a request without the per-request _meta (or an initialize) is answered
  400 with a HeaderMismatch / UnsupportedProtocolVersion JSON-RPC error, as the revision says.
- legacy: 2025-11-25 only; anything before initialize is a plain 400 (no JSON-RPC body), sessions
  by MCP-Session-Id, DELETE ends one, ``POST /expire`` forgets every session (the next request 404s).
- dual: both.
- httpsse: the deprecated 2024-11-05 transport (POST 405; GET opens a stream whose first event is
  ``endpoint``).
- noget: legacy, but a GET is refused (405: no listening stream).
- comments: every POST 404; a GET opens an event stream of ``: ping`` comments that never ends.
- endless: modern, but tools/list answers 1 MB pages whose cursor never ends.
- legacy, dual: a GET carrying a session id opens the session's listening stream (comments now and then);
  tools/call ``notify`` sends notifications/tools/list_changed on it (and the next tools/list is "list #2").

The tool named in tools/call chooses the answer: ``echo`` (JSON), ``progress`` (SSE: notifications,
then the result), ``cut`` (SSE closed before the result), ``other_id`` (a result for another id),
``huge`` (100 MB), ``hang`` (never answers), ``bad502`` (502 with an HTML page), ``leak`` (an error
echoing the Authorization header), ``ask`` (input_required), ``resume`` (legacy: the stream closed after a priming event; a GET with
its Last-Event-ID gets the result), ``ping_first`` (legacy: a ping request
on the stream before the result).  ``GET /log`` gives the requests seen (method, headers, body).
"""

import json
import os
import socket
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ERA = sys.argv[1] if len(sys.argv) > 1 else "modern"
LOG = []
SESSIONS = set()
RESUME = {}  # event id -> the request id whose response a GET with that Last-Event-ID gets
LOCK = threading.Lock()
LISTENING = {}  # session id -> [messages to send on its GET stream]
LISTS = [0]  # list_changed notifications sent (the tools' descriptions say it)
TOOLS = [{"name": "echo", "description": "Say it back", "inputSchema": {"type": "object", "properties": {
    "text": {"type": "string"}}}},
    {"name": "region_tool", "inputSchema": {"type": "object", "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"}, "q": {"type": "string"}}}},
    {"name": "bad_header_tool", "inputSchema": {"type": "object", "properties": {
        "n": {"type": "number", "x-mcp-header": "N"}}}}]


def page_of(cursor):
    # two pages: echo + region_tool, then bad_header_tool
    if cursor is None:
        return TOOLS[:2], "page2"
    return TOOLS[2:], None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    wbufsize = 1 << 16  # one write per answer (headers and body): no Nagle / delayed-ACK stall per call

    def log_message(self, *args):
        pass

    def _send(self, status, body=b"", ctype="application/json", headers=None):
        self.send_response(status)
        if body or ctype:
            self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        if body:
            self.wfile.write(body)

    def _json(self, status, doc, headers=None):
        self._send(status, json.dumps(doc).encode(), "application/json", headers)

    def _record(self, body):
        with LOCK:
            LOG.append({"method": self.command, "path": self.path, "headers": dict(self.headers.items()),
                        "body": body})

    def do_GET(self):
        if self.path == "/log":
            with LOCK:
                self._json(200, LOG)
            return
        self._record(None)
        last = self.headers.get("Last-Event-ID")
        with LOCK:
            ident = RESUME.pop(last, None) if last else None
        if ident is not None:
            self._sse_start()
            self._event({"jsonrpc": "2.0", "method": "notifications/progress",
                         "params": {"progressToken": "t", "progress": 2}})
            self._event({"jsonrpc": "2.0", "id": ident, "result": {"content": [{"type": "text", "text": "resumed"}]}})
            return
        if ERA == "comments":
            self._sse_start()
            try:
                for _ in range(200):
                    self.wfile.write(b": ping\n\n")
                    self.wfile.flush()
                    time.sleep(0.3)
            except OSError:
                pass
            return
        sid = self.headers.get("MCP-Session-Id")
        if ERA in ("legacy", "dual") and sid is not None:
            with LOCK:
                known = sid in SESSIONS
                LISTENING.setdefault(sid, [])
            if not known:
                return self._send(404, b"session not found", "text/plain")
            self._sse_start()
            try:
                for _ in range(600):
                    with LOCK:
                        queued, LISTENING[sid] = LISTENING.get(sid, []), []
                        alive = sid in SESSIONS
                    if not alive:
                        return
                    for doc in queued:
                        self._event(doc)
                    self.wfile.write(b": keep-alive\n\n")
                    self.wfile.flush()
                    time.sleep(0.1)
            except OSError:
                pass
            return
        if ERA == "httpsse":
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Content-Length", str(len(b"event: endpoint\ndata: /messages?s=1\n\n")))
            self.end_headers()
            self.wfile.write(b"event: endpoint\ndata: /messages?s=1\n\n")
            return
        self._send(405, b"", None)

    def do_DELETE(self):
        self._record(None)
        sid = self.headers.get("MCP-Session-Id")
        with LOCK:
            SESSIONS.discard(sid)
        self._send(200 if ERA in ("legacy", "dual") else 405, b"", None)

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        if self.path == "/expire":
            with LOCK:
                SESSIONS.clear()
            self._send(200, b"", None)
            return
        try:
            msg = json.loads(raw)
        except ValueError:
            self._send(400, b"", None)
            return
        self._record(msg)
        if ERA == "httpsse":
            self._send(405, b"Method Not Allowed", "text/plain")
            return
        if ERA == "comments":
            self._send(404, b"Not Found", "text/plain")
            return
        method = msg.get("method")
        params = msg.get("params") or {}
        meta = params.get("_meta") or {}
        modern = "io.modelcontextprotocol/protocolVersion" in meta
        if modern and ERA in ("modern", "dual", "endless"):
            return self._modern(msg, method, params, meta)
        if ERA in ("modern", "endless"):
            # a legacy request to a modern-only server: 400 with a modern error (2026-07-28 server validation)
            return self._json(400, {"jsonrpc": "2.0", "id": msg.get("id"), "error": {
                "code": -32022, "message": "Unsupported protocol version",
                "data": {"supported": ["2026-07-28"], "requested": params.get("protocolVersion")}}})
        return self._legacy(msg, method, params)

    # -- 2026-07-28 ---------------------------------------------------------------------------------
    def _modern(self, msg, method, params, meta):
        version = meta["io.modelcontextprotocol/protocolVersion"]
        if self.headers.get("MCP-Protocol-Version") != version or self.headers.get("Mcp-Method") != method:
            return self._json(400, {"jsonrpc": "2.0", "id": msg.get("id"), "error": {
                "code": -32020, "message": "Header mismatch"}})
        if version != "2026-07-28":
            return self._json(400, {"jsonrpc": "2.0", "id": msg.get("id"), "error": {
                "code": -32022, "message": "Unsupported protocol version",
                "data": {"supported": ["2026-07-28"], "requested": version}}})
        ident = msg.get("id")
        if method == "server/discover":
            return self._json(200, {"jsonrpc": "2.0", "id": ident, "result": {
                "resultType": "complete", "supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}},
                "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "fake", "version": "1"}},
                "ttlMs": 0, "cacheScope": "public"}})
        return self._answer(ident, method, params, modern=True)

    # -- 2025-11-25 ---------------------------------------------------------------------------------
    def _legacy(self, msg, method, params):
        ident = msg.get("id")
        if method == "initialize":
            sid = uuid.uuid4().hex
            with LOCK:
                SESSIONS.add(sid)
            return self._json(200, {"jsonrpc": "2.0", "id": ident, "result": {
                "protocolVersion": "2025-11-25", "capabilities": {"tools": {"listChanged": True}},
                "serverInfo": {"name": "fake-legacy", "version": "1"}}}, {"Mcp-Session-Id": sid})
        sid = self.headers.get("MCP-Session-Id")
        if sid is None:
            return self._send(400, b"Bad Request: no session", "text/plain")
        with LOCK:
            known = sid in SESSIONS
        if not known:
            return self._send(404, b"session not found", "text/plain")
        if self.headers.get("MCP-Protocol-Version") != "2025-11-25":
            return self._send(400, b"bad version header", "text/plain")
        if ident is None:  # a notification or a response
            return self._send(202, b"", None)
        return self._answer(ident, method, params, modern=False)

    # -- answers ------------------------------------------------------------------------------------
    def _result(self, ident, result, modern):
        if modern:
            result = dict(result, resultType="complete")
        return {"jsonrpc": "2.0", "id": ident, "result": result}

    def _sse_start(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True

    def _event(self, doc):
        self.wfile.write(b"data: " + json.dumps(doc).encode() + b"\n\n")
        self.wfile.flush()

    def _answer(self, ident, method, params, modern):
        if method == "tools/list" and ERA == "endless":
            tools = [{"name": "t{}".format(n), "description": "d" * 1000, "inputSchema": {"type": "object"}}
                     for n in range(1000)]
            return self._json(200, self._result(ident, {"tools": tools, "nextCursor": uuid.uuid4().hex}, modern))
        if method == "tools/list":
            tools, cursor = page_of(params.get("cursor"))
            if LISTS[0]:
                tools = [dict(tools[0], description="list #{}".format(LISTS[0] + 1))] + tools[1:]
            result = {"tools": tools}
            if cursor:
                result["nextCursor"] = cursor
            if modern:
                result["ttlMs"] = 60000
            return self._json(200, self._result(ident, result, modern))
        if method != "tools/call":
            return self._json(200, {"jsonrpc": "2.0", "id": ident, "error": {"code": -32601, "message": "no"}})
        name = params.get("name")
        args = params.get("arguments") or {}
        if name in ("echo", "region_tool"):
            text = args.get("text", "") if name == "echo" else "region header: {}".format(
                self.headers.get("Mcp-Param-Region"))
            return self._json(200, self._result(ident, {"content": [{"type": "text", "text": text}]}, modern))
        if name == "whoami":  # a debugging tool that shows the request's credentials in its result
            text = "you are {} at {}".format(self.headers.get("Authorization"), self.path)
            return self._json(200, self._result(ident, {"content": [{"type": "text", "text": text}]}, modern))
        if name == "notify":
            with LOCK:
                LISTS[0] += 1
                for queued in LISTENING.values():
                    queued.append({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
            return self._json(200, self._result(ident, {"content": [{"type": "text", "text": "notified"}]}, modern))
        if name == "progress":
            self._sse_start()
            for step in (1, 2):
                self._event({"jsonrpc": "2.0", "method": "notifications/progress",
                             "params": {"progressToken": "t", "progress": step, "total": 2}})
            self._event(self._result(ident, {"content": [{"type": "text", "text": "after progress"}]}, modern))
            return
        if name == "ping_first":
            self._sse_start()
            self._event({"jsonrpc": "2.0", "id": "srv-1", "method": "ping"})
            time.sleep(0.2)  # the client's answer arrives meanwhile (a POST of its own)
            self._event(self._result(ident, {"content": [{"type": "text", "text": "pinged"}]}, modern))
            return
        if name == "resume":  # 2025-11-25: a priming event (an id, empty data, a retry), then the connection closes
            event_id = "ev-" + uuid.uuid4().hex
            with LOCK:
                RESUME[event_id] = ident
            self._sse_start()
            self.wfile.write("id: {}\nretry: 20\ndata: \n\n".format(event_id).encode())
            self.wfile.flush()
            return
        if name == "cut":
            self._sse_start()
            self._event({"jsonrpc": "2.0", "method": "notifications/progress",
                         "params": {"progressToken": "t", "progress": 1}})
            return  # the stream ends (Connection: close) without the result
        if name == "other_id":
            return self._json(200, self._result(ident + 1000, {"content": []}, modern))
        if name == "huge":
            self._sse_start()
            chunk = b"x" * (1024 * 1024)
            try:
                self.wfile.write(b'data: {"jsonrpc":"2.0","id":' + str(ident).encode() + b',"result":{"content":'
                                 b'[{"type":"text","text":"')
                for _ in range(100):
                    self.wfile.write(chunk)
                self.wfile.write(b'"}]}}\n\n')
            except OSError:
                pass
            return
        if name == "hang":
            time.sleep(30)
            return
        if name == "bad502":
            return self._send(502, b"<html><body><h1>502 Bad Gateway</h1></body></html>", "text/html")
        if name == "leak":
            return self._json(200, {"jsonrpc": "2.0", "id": ident, "error": {
                "code": -32603, "message": "denied for " + (self.headers.get("Authorization") or ""),
                "data": {"seen": {"authorization": self.headers.get("Authorization")}}}})
        if name == "ask" and modern:
            return self._json(200, {"jsonrpc": "2.0", "id": ident, "result": {
                "resultType": "input_required", "requestState": "opaque",
                "inputRequests": {"github_login": {"method": "elicitation/create", "params": {
                    "mode": "form", "message": "Please provide your GitHub username",
                    "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}}}}}})
        return self._json(200, self._result(ident, {"content": [{"type": "text", "text": "unknown tool"}],
                                                    "isError": True}, modern))


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
