"""One local server (127.0.0.1, a free port) that answers every protocol agenthub speaks, for the
documentation blocks (``tests/test_docs_blocks.py``).

Streams are the project's own recordings (``agenthub/recordings/<protocol>/``): a request offering
tools whose conversation has no tool result yet gets ``weather_tool_call.sse`` (a ``get_weather``
call for Paris), any other request ``weather_answer.sse`` ("It is 18 °C and sunny in Paris ...").
Around them: token counts (``count_tokens`` / ``countTokens`` / ``input_tokens``), embeddings (one
vector per input, of the ``dimensions`` asked), model lists, Gemini Interactions and the ``agenthub``
dialect (``agenthub serve``'s ``/v1/stream``).  A request it has no answer for gets a 404 whose
message names the method and path, and is kept in ``unknown`` (the runner prints it).

Daemon threads, bounded reads; ``close()`` stops the server and joins its thread.
"""

import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from sse_server import close_server, track_connections

RECORDINGS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "agenthub", "recordings")
MODELS = ("gpt-5.5", "claude-sonnet-4-6", "gemini-3.5-flash")


def _recording(protocol, name):
    with open(os.path.join(RECORDINGS, protocol, name), "rb") as handle:
        return handle.read()


def _sse(obj, event=None):
    head = "event: {}\n".format(event).encode() if event else b""
    return head + b"data: " + json.dumps(obj).encode("utf-8") + b"\n\n"


def _wants_tool_call(body, protocol):
    """Tools offered and no tool result in the conversation yet: the recorded tool call."""
    if not isinstance(body, dict):
        return False
    if protocol == "gemini":
        if not body.get("tools"):
            return False
        return not any("functionResponse" in part for content in body.get("contents") or []
                       for part in (content.get("parts") or []) if isinstance(part, dict))
    if not body.get("tools"):
        return False
    if protocol == "openai_responses":
        items = body.get("input") if isinstance(body.get("input"), list) else []
        return not any(isinstance(i, dict) and i.get("type") == "function_call_output" for i in items)
    messages = body.get("messages") or []
    if protocol == "anthropic":
        return not any(isinstance(part, dict) and part.get("type") == "tool_result"
                       for m in messages if isinstance(m.get("content"), list) for part in m["content"])
    return not any(m.get("role") == "tool" for m in messages)


def _interactions_stream():
    out = _sse({"event_type": "interaction.start", "interaction": {"id": "v1_docs", "status": "in_progress"}},
               "interaction.start")
    out += _sse({"event_type": "step.start", "index": 0, "step": {"type": "model_output"}}, "step.start")
    out += _sse({"event_type": "step.delta", "index": 0, "delta": {"type": "text", "text": "18 °C in Paris."}},
                "step.delta")
    return out + _sse({"event_type": "interaction.completed", "interaction": {
        "id": "v1_docs", "status": "completed", "usage": {"total_input_tokens": 12, "total_output_tokens": 6}}},
        "interaction.completed")


def _agenthub_stream(model):
    text = {"role": "assistant", "event_type": "delta", "created_at": 0, "finish_reason": None,
            "usage_metadata": None, "content_items": [{"type": "text", "text": "Nile, Amazon, Yangtze."}]}
    stop = dict(text, event_type="stop", content_items=[], finish_reason="stop", usage_metadata={
        "cached_tokens": 0, "prompt_tokens": 12, "thoughts_tokens": 0, "response_tokens": 6})
    return _sse(text) + _sse(stop)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def _send(self, status, body, content_type="application/json"):
        if not isinstance(body, bytes):
            body = json.dumps(body).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            self.wfile.write(body)
            self.wfile.flush()
        except OSError:
            pass

    def _unknown(self):
        self.server.owner.unknown.append("{} {}".format(self.command, self.path))
        self._send(404, {"error": {"message": "the docs fake has no answer for {} {}".format(
            self.command, self.path), "type": "not_found_error"}})

    def do_GET(self):  # noqa: N802
        path = self.path.split("?", 1)[0]
        self.server.owner.requests.append(("GET", path))
        if path.endswith("/v1beta/models"):
            return self._send(200, {"models": [{"name": "models/" + m} for m in MODELS]})
        if path.endswith("/models"):
            return self._send(200, {"object": "list", "has_more": False, "data": [
                {"id": m, "object": "model", "type": "model"} for m in MODELS]})
        return self._unknown()

    def do_POST(self):  # noqa: N802
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(min(length, 1 << 24))
        try:
            body = json.loads(raw.decode("utf-8")) if raw else {}
        except ValueError:
            body = {}
        path = self.path.split("?", 1)[0]
        self.server.owner.requests.append(("POST", path))
        sse = "text/event-stream"
        if path.endswith("/count_tokens"):
            return self._send(200, {"input_tokens": 412})
        if path.endswith("/input_tokens"):
            return self._send(200, {"object": "response.input_tokens", "input_tokens": 412})
        if path.endswith(":countTokens"):
            return self._send(200, {"totalTokens": 412})
        if path.endswith("/embeddings"):
            inputs = body.get("input")
            inputs = inputs if isinstance(inputs, list) else [inputs]
            size = body.get("dimensions") or 8
            return self._send(200, {"object": "list", "model": body.get("model"), "data": [
                {"object": "embedding", "index": i, "embedding": [0.5] * size} for i in range(len(inputs))],
                "usage": {"prompt_tokens": 4 * len(inputs), "total_tokens": 4 * len(inputs)}})
        name = "weather_answer.sse"
        if path.endswith("/chat/completions"):
            name = "weather_tool_call.sse" if _wants_tool_call(body, "openai_chat") else name
            return self._send(200, _recording("openai_chat", name), sse)
        if path.endswith("/responses"):
            name = "weather_tool_call.sse" if _wants_tool_call(body, "openai_responses") else name
            return self._send(200, _recording("openai_responses", name), sse)
        if path.endswith("/messages"):
            name = "weather_tool_call.sse" if _wants_tool_call(body, "anthropic") else name
            return self._send(200, _recording("anthropic", name), sse)
        if ":streamGenerateContent" in path:
            name = "weather_tool_call.sse" if _wants_tool_call(body, "gemini") else name
            return self._send(200, _recording("gemini", name), sse)
        if path.endswith("/converse-stream"):
            name = "weather_tool_call.sse" if body.get("toolConfig") and not any(
                "toolResult" in part for m in body.get("messages") or [] for part in m.get("content") or []) else name
            return self._send(200, _recording("bedrock", name), "application/vnd.amazon.eventstream")
        if path.endswith("/interactions"):
            return self._send(200, _interactions_stream(), sse)
        if path.endswith("/v1/stream"):
            return self._send(200, _agenthub_stream(body.get("model")), sse)
        return self._unknown()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


class DocsFake(object):
    """``with DocsFake() as fake:`` ``fake.url`` is ``http://127.0.0.1:<port>``."""

    def __init__(self):
        self.requests = []
        self.unknown = []
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._connections = track_connections(self._server)  # (ended when it closes)
        self._server.owner = self
        self.port = self._server.server_address[1]
        self.url = "http://127.0.0.1:{}".format(self.port)
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def close(self):
        close_server(self._server, self._connections)
        self._thread.join(10)

    def __exit__(self, *exc):
        self.close()
