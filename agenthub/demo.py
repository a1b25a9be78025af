"""A replay demo that needs no key and no network.

A local server on 127.0.0.1 answers with the project's own recorded streams
(``agenthub/recordings``); the real client, transport, SSE framing, parser and
tool-call machine handle them.  It plays a tool-calling turn, runs the tool,
and streams the answer.
"""

import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable, Dict, Optional

RECORDINGS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "recordings")


def recording(protocol: str, name: str) -> bytes:
    with open(os.path.join(RECORDINGS, protocol, name), "rb") as handle:
        return handle.read()


class _ReplayHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    choose = None  # type: Callable[[dict], bytes]

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        payload = type(self).choose(body)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for start in range(0, len(payload), 97):  # odd-sized chunks: framing is exercised
            piece = payload[start:start + 97]
            self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
        self.wfile.write(b"0\r\n\r\n")

    def log_message(self, *args) -> None:
        pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address) -> None:  # a client hanging up is not news
        pass


def serve(choose: Callable[[dict], bytes]):
    """Start a replay server on 127.0.0.1; returns (server, base_url). Call server.shutdown() to stop."""
    handler = type("Handler", (_ReplayHandler,), {"choose": staticmethod(choose)})
    server = _Server(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return server, "http://127.0.0.1:{}/v1".format(server.server_address[1])


def _chat_choice(body: dict) -> bytes:
    last = body["messages"][-1]
    if last.get("role") == "tool":
        return recording("openai_chat", "weather_answer.sse")
    return recording("openai_chat", "weather_tool_call.sse")


def run(out: Callable[[str], None] = print, write: Optional[Callable[[str], None]] = None) -> Dict[str, object]:
    """Play the demo; returns the final history."""
    from .client import AutoLLMClient

    import sys

    write = write or (lambda s: (sys.stdout.write(s), sys.stdout.flush()))
    server, base_url = serve(_chat_choice)
    try:
        client = AutoLLMClient("demo-model", client_type="openai-chat", base_url=base_url)
        config = {"tools": [{"name": "get_weather", "description": "Current weather in a city.",
                             "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                            "required": ["city"]}}]}
        out("agenthub demo: a recorded Chat Completions conversation replayed from 127.0.0.1 (no key, no network)")
        message = {"role": "user", "content_items": [{"type": "text", "text": "What's the weather in Paris?"}]}
        out("user> What's the weather in Paris?")
        while True:
            calls = []
            for event in client.streaming_response_stateful(message, config):
                for item in event["content_items"]:
                    if item["type"] == "thinking":
                        write("[thinking] " + item["thinking"] + "\n")
                    elif item["type"] == "text":
                        write(item["text"])
                    elif item["type"] == "tool_call":
                        calls.append(item)
                        write("[tool call] {}({})\n".format(item["name"], json.dumps(item["arguments"])))
                if event["event_type"] == "stop":
                    usage = event["usage_metadata"]
                    write("\n[stop] finish_reason={} usage={}\n".format(event["finish_reason"], usage))
            if not calls:
                break
            results = []
            for call in calls:
                result = "18 °C, sunny" if call["name"] == "get_weather" else "unknown tool"
                out("[tool result] {} -> {}".format(call["tool_call_id"], result))
                results.append({"type": "tool_result", "text": result, "tool_call_id": call["tool_call_id"]})
            message = {"role": "user", "content_items": results}
        history = client.get_history()
        out("history: {} messages".format(len(history)))
        return {"history": history}
    finally:
        server.shutdown()
        server.server_close()
