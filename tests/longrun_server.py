"""A local fake of the two resumable stream APIs, on 127.0.0.1 only (daemon threads, bounded waits).

- OpenAI Responses: ``POST /v1/responses`` (``stream: true``), ``GET /v1/responses/{id}?stream=true
  &starting_after=N`` (the events after sequence number N), ``POST /v1/responses/{id}/cancel``.
- Gemini Interactions: ``POST /v1/interactions``, ``GET /v1/interactions/{id}?stream=true
  &last_event_id=E`` (the events after E), ``POST /v1/interactions/{id}/cancel``.
- Anthropic Messages: ``POST /v1/messages`` plays its script (no resume: the compaction tests).

Each created response plays a script: a list of SSE event bytes (one ``event:``/``data:`` block each).
``cuts`` is a list of byte offsets: connection number i (the POST is 0, each GET after it 1, 2, ...)
closes abruptly after sending ``cuts[i]`` bytes of what it would send (None: sends it all).
"""

import json
import time
from urllib.parse import parse_qs, unquote, urlsplit

from sse_server import LocalServer, json_or_raw


def responses_events(response_id, texts, usage=None):
    """A Responses stream: created, in_progress, one message with the text deltas, completed."""
    events = []

    def add(kind, body):
        body = dict(body, type=kind, sequence_number=len(events))
        events.append(("event: {}\ndata: {}\n\n".format(kind, json.dumps(body, separators=(",", ":")))).encode())

    base = {"id": response_id, "object": "response", "status": "in_progress", "background": True, "output": []}
    add("response.created", {"response": base})
    add("response.in_progress", {"response": base})
    item = {"id": "msg_1", "type": "message", "status": "in_progress", "role": "assistant", "content": []}
    add("response.output_item.added", {"output_index": 0, "item": item})
    add("response.content_part.added", {"item_id": "msg_1", "output_index": 0, "content_index": 0,
                                        "part": {"type": "output_text", "text": "", "annotations": []}})
    for text in texts:
        add("response.output_text.delta", {"item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": text})
    full = "".join(texts)
    add("response.output_text.done", {"item_id": "msg_1", "output_index": 0, "content_index": 0, "text": full})
    part = {"type": "output_text", "text": full, "annotations": []}
    add("response.content_part.done", {"item_id": "msg_1", "output_index": 0, "content_index": 0, "part": part})
    done_item = dict(item, status="completed", content=[part])
    add("response.output_item.done", {"output_index": 0, "item": done_item})
    final = dict(base, status="completed", output=[done_item],
                 usage=usage or {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0},
                                 "output_tokens": len(texts), "output_tokens_details": {"reasoning_tokens": 0},
                                 "total_tokens": 10 + len(texts)})
    add("response.completed", {"response": final})
    return events


def interactions_events(interaction_id, texts, status="completed"):
    """An Interactions stream: created, a model_output step with the text deltas, completed, [DONE]."""
    events = []

    def add(kind, body):
        body = dict(body, event_type=kind, event_id="evt_{:03d}".format(len(events) + 1))
        events.append(("event: {}\ndata: {}\n\n".format(kind, json.dumps(body, separators=(",", ":")))).encode())

    add("interaction.created", {"interaction": {"id": interaction_id, "status": "in_progress"}})
    add("step.start", {"index": 0, "step": {"type": "model_output"}})
    for text in texts:
        add("step.delta", {"index": 0, "delta": {"type": "text", "text": text}})
    add("step.stop", {"index": 0})
    add("interaction.completed", {"interaction": {"id": interaction_id, "status": status, "usage": {
        "total_input_tokens": 7, "total_output_tokens": len(texts)}}})
    return events


class Script(object):
    def __init__(self, events, cuts=(), done=False, hold=None):
        self.events = list(events)
        self.cuts = list(cuts)
        self.done = done  # append ``data: [DONE]`` (Interactions)
        self.hold = hold  # (event index, threading.Event): wait (<= 5 s) before sending that event
        self.connections = 0
        self.cancelled = False
        self.replay_all = False  # a GET ignores its cursor and replays the stream from its start
        self.close_delimited = False  # bodies end by closing the connection (no chunks): a cut is a clean end


class LongrunServer(LocalServer):
    """with LongrunServer() as server: server.add(resource_id, events, cuts=[...]); server.url."""

    def __init__(self):
        LocalServer.__init__(self)
        self.scripts = []
        self.created = {}
        self.get_failures = []  # statuses the next GETs answer before streaming

    def add(self, resource_id, events, cuts=(), done=False, hold=None):
        script = Script(events, cuts, done, hold)
        script.resource_id = resource_id
        self.scripts.append(script)
        return script

    def respond(self, handler, raw):
        method = handler.command
        body = json_or_raw(raw) if method == "POST" else None
        url = urlsplit(handler.path)
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        with self.lock:
            self.requests.append({"method": method, "path": url.path, "query": query, "body": body,
                                  "headers": dict(handler.headers)})
        parts = [unquote(p) for p in url.path.strip("/").split("/")]
        if method == "POST" and parts[-1] in ("responses", "interactions", "messages"):
            script = self.scripts.pop(0)
            self.created[script.resource_id] = script
            return self._play(handler, script, 0)
        if method == "POST" and parts[-1] == "cancel":
            script = self.created.get(parts[-2])
            if script is None:
                return self._json(handler, 404, {"error": {"message": "no such response"}})
            script.cancelled = True
            return self._json(handler, 200, {"id": parts[-2], "status": "cancelled"})
        if method == "GET":
            script = self.created.get(parts[-1])
            if script is None:
                return self._json(handler, 404, {"error": {"message": "no such response"}})
            if self.get_failures:
                status = self.get_failures.pop(0)
                return self._json(handler, status, {"error": {"message": "try again", "type": "server_error"}})
            start = 0
            if script.replay_all:
                pass
            elif "starting_after" in query:
                start = int(query["starting_after"]) + 1
            elif "last_event_id" in query:
                start = int(query["last_event_id"].split("_")[1])
            return self._play(handler, script, start)
        return self._json(handler, 404, {"error": {"message": "unknown path " + url.path}})

    @staticmethod
    def _json(handler, status, payload):
        data = json.dumps(payload).encode()
        handler.send(status, {"Content-Type": "application/json", "Content-Length": str(len(data))}, [data],
                     chunked=False)

    @staticmethod
    def _play(handler, script, start):
        number = script.connections
        script.connections += 1
        cut = script.cuts[number] if number < len(script.cuts) else None
        events = script.events[start:] + ([b"data: [DONE]\n\n"] if script.done else [])

        def chunks():
            sent = 0
            for index, event in enumerate(events):
                if script.hold is not None and start + index == script.hold[0]:
                    script.hold[1].wait(5)
                if script.cancelled:
                    return
                if cut is not None and sent + len(event) > cut:
                    piece = event[:cut - sent]
                    if piece:
                        yield piece
                    return  # no terminating chunk follows: the client sees a broken body
                yield event
                sent += len(event)

        handler.send(200, {"Content-Type": "text/event-stream"}, chunks(), chunked=not script.close_delimited,
                     end=cut is None)
        if cut is not None:
            handler.close_connection = True


def boundaries(events):
    """The byte offset where each of ``events`` ends (a cut there falls between two events)."""
    out, total = [], 0
    for event in events:
        total += len(event)
        out.append(total)
    return out


def wait_for(predicate, seconds=5.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return predicate()
