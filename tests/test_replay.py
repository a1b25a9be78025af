"""agenthub.testing: record real exchanges (here: a loopback server) and replay them offline."""

import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from agenthub import AutoLLMClient, ConfigError, RateLimitError, StreamProtocolError, check_stream
from agenthub.testing import (Cassette, Interaction, ReplayMismatchError, cassette_session, clean_url,
                              record_session, replay_session)
from sse_server import close_server, track_connections

HERE = os.path.dirname(os.path.abspath(__file__))
RECORDINGS = os.path.join(os.path.dirname(HERE), "agenthub", "recordings", "openai_chat")
TOOLS = [{"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}]
KEY = "sk-test-secret-0123456789"


def _recording(name):
    with open(os.path.join(RECORDINGS, name), "rb") as handle:
        return handle.read()


class _Upstream(object):
    """A loopback Chat Completions server: answers the weather conversation, keeps what it was sent."""

    def __init__(self, replies):
        self.replies = list(replies)  # (status, content_type, body)
        self.seen = []
        upstream = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                upstream.seen.append((self.path, dict(self.headers), json.loads(self.rfile.read(length))))
                status, kind, body = upstream.replies.pop(0)
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Transfer-Encoding", "chunked")
                self.send_header("x-request-id", "req-1")
                self.end_headers()
                for start in range(0, len(body), 61):
                    piece = body[start:start + 61]
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                self.wfile.write(b"0\r\n\r\n")

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._connections = track_connections(self.server)  # (ended when it closes)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.base_url = "http://127.0.0.1:{}/v1".format(self.server.server_address[1])

    def close(self):
        close_server(self.server, self._connections)


@pytest.fixture
def upstream():
    server = _Upstream([
        (200, "text/event-stream", _recording("weather_tool_call.sse")),
        (200, "text/event-stream", _recording("weather_answer.sse")),
    ])
    yield server
    server.close()


def _conversation(client, question="What's the weather in Paris?"):
    """The user's agent loop under test: ask, run the tool, ask again. Returns every event."""
    events = []
    message = {"role": "user", "content_items": [{"type": "text", "text": question}]}
    for _ in range(3):
        turn = list(client.streaming_response_stateful(message, {"tools": TOOLS}))
        check_stream(turn)
        events.extend(turn)
        calls = [i for e in turn for i in e["content_items"] if i["type"] == "tool_call"]
        if not calls:
            return events
        message = {"role": "user", "content_items": [
            {"type": "tool_result", "text": "18 °C, sunny", "tool_call_id": c["tool_call_id"]} for c in calls]}
    return events


def _strip(events):
    return [{k: v for k, v in e.items() if k != "created_at"} for e in events]


def test_record_then_replay_gives_the_same_events(upstream, tmp_path):
    folder = str(tmp_path / "weather")
    live = AutoLLMClient("demo-model", api_key=KEY, base_url=upstream.base_url,
                         client_type="openai-chat", session=record_session(folder))
    recorded = _conversation(live)
    assert sorted(os.listdir(folder)) == ["001.json", "001.sse", "002.json", "002.sse"]

    session = replay_session(folder)
    replayed = _conversation(AutoLLMClient("demo-model", api_key="unused", base_url=upstream.base_url,
                                           client_type="openai-chat", session=session))
    assert _strip(replayed) == _strip(recorded)
    session.cassette.assert_all_played()
    assert len(upstream.seen) == 2  # the replay never reached the server


def test_recording_holds_the_wire_bytes_and_no_secret(upstream, tmp_path):
    folder = str(tmp_path / "weather")
    client = AutoLLMClient("demo-model", api_key=KEY, base_url=upstream.base_url,
                           client_type="openai-chat", session=record_session(folder))
    _conversation(client)
    with open(os.path.join(folder, "001.sse"), "rb") as handle:
        assert handle.read() == _recording("weather_tool_call.sse")
    with open(os.path.join(folder, "001.json"), encoding="utf-8") as handle:
        meta = json.load(handle)
    assert meta == {
        "agenthub_recording": 1,
        "request": {
            "method": "POST",
            "url": upstream.base_url + "/chat/completions",
            "body": {"model": "demo-model", "messages": [{"role": "user", "content": "What's the weather in Paris?"}],
                     "stream": True, "stream_options": {"include_usage": True},
                     "tools": [{"type": "function", "function": {"name": "get_weather",
                                                                 "parameters": TOOLS[0]["parameters"]}}]},
        },
        "response": {"status": 200, "headers": {"Content-Type": "text/event-stream", "x-request-id": "req-1"},
                     "body_file": "001.sse"},
    }
    for name in os.listdir(folder):
        with open(os.path.join(folder, name), "rb") as handle:
            assert KEY.encode() not in handle.read(), name
    assert upstream.seen[0][1]["Authorization"] == "Bearer " + KEY  # it was sent, just not kept


def test_a_secret_echoed_by_the_server_is_scrubbed(tmp_path):
    denied = {"error": {"message": "bad key " + KEY, "type": "invalid_request_error"}}
    server = _Upstream([(401, "application/json", json.dumps(denied).encode())])
    try:
        folder = str(tmp_path / "denied")
        client = AutoLLMClient("m", api_key=KEY, base_url=server.base_url, client_type="openai-chat",
                               session=record_session(folder))
        with pytest.raises(Exception):
            list(client.streaming_response([{"role": "user", "content_items": [{"type": "text", "text": "x"}]}]))
        with open(os.path.join(folder, "001.body.json"), "rb") as handle:
            assert handle.read() == b'{"error": {"message": "bad key ***", "type": "invalid_request_error"}}'
    finally:
        server.close()


def test_a_changed_request_fails_loudly(upstream, tmp_path):
    folder = str(tmp_path / "weather")
    _conversation(AutoLLMClient("demo-model", api_key=KEY, base_url=upstream.base_url, client_type="openai-chat",
                                session=record_session(folder)))
    client = AutoLLMClient("demo-model", api_key="unused", base_url=upstream.base_url, client_type="openai-chat",
                           session=replay_session(folder))
    with pytest.raises(ReplayMismatchError) as info:
        _conversation(client, "And in Rome?")
    assert str(info.value) == (
        "replay: request #1 (POST {}/chat/completions) matches no recorded exchange in {}; the next unplayed one "
        "(001) differs: body.messages[0].content: 'And in Rome?' (recorded \"What's the weather in Paris?\")".format(
            upstream.base_url, folder))
    assert isinstance(info.value, AssertionError)
    assert client.get_history() == []  # the failed turn left history alone


def test_more_requests_than_recorded_fail_loudly():
    cassette = Cassette(interactions=[Interaction(None, body=_recording("weather_answer.sse"), name="001")])
    client = AutoLLMClient("m", base_url="http://127.0.0.1:9/v1", client_type="openai-chat",
                           session=replay_session(cassette))
    message = [{"role": "user", "content_items": [{"type": "text", "text": "x"}]}]
    assert list(client.streaming_response(message))[-1]["finish_reason"] == "stop"
    with pytest.raises(ReplayMismatchError, match=r"^replay: request #2 \(POST http://127.0.0.1:9/v1/chat/completions"
                                                  r"\) matches no recorded exchange in memory: all 1 recorded "
                                                  r"exchanges were already played$"):
        list(client.streaming_response(message))


def _request(text, call_id=None):
    body = {"model": "m", "messages": [{"role": "user", "content": text}]}
    if call_id:
        body["messages"].append({"role": "tool", "tool_call_id": call_id, "content": "ok"})
    return {"method": "POST", "url": "https://api.example.com/v1/chat/completions", "body": body}


def test_ids_are_not_compared_and_match_body_can_be_off():
    cassette = Cassette(interactions=[Interaction(_request("hi", "call_abc"), body=b"one", name="001")])
    body = json.dumps(_request("hi", "call_xyz")["body"]).encode()
    assert cassette.play("POST", "https://api.example.com/v1/chat/completions", body)[2] == b"one"

    loose = Cassette(interactions=[Interaction(_request("hi"), body=b"two", name="001")], match_body=False)
    assert loose.play("post", "https://api.example.com/v1/chat/completions", b'{"other": 1}')[2] == b"two"
    with pytest.raises(ReplayMismatchError, match=r"differs: URL https://api.example.com/v1/embeddings != recorded"):
        Cassette(interactions=[Interaction(_request("hi"), name="001")], match_body=False).play(
            "POST", "https://api.example.com/v1/embeddings", b"{}")


def test_requests_are_kept_for_assertions():
    cassette = Cassette(interactions=[Interaction(None, body=_recording("weather_answer.sse"))])
    client = AutoLLMClient("m", base_url="http://127.0.0.1:9/v1", client_type="openai-chat",
                           session=replay_session(cassette))
    list(client.streaming_response([{"role": "user", "content_items": [{"type": "text", "text": "x"}]}],
                                   {"max_tokens": 9, "system_prompt": "be brief"}))
    assert cassette.requests == [{"method": "POST", "url": "http://127.0.0.1:9/v1/chat/completions", "body": {
        "model": "m", "messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "x"}],
        "stream": True, "stream_options": {"include_usage": True}, "max_completion_tokens": 9}}]


def test_assert_all_played():
    cassette = Cassette(interactions=[Interaction(None, name="001"), Interaction(None, name="002")])
    cassette.play("POST", "http://x/v1", None)
    with pytest.raises(ReplayMismatchError, match=r"^replay: 1 recorded exchange\(s\) in memory were never "
                                                  r"requested: 002$"):
        cassette.assert_all_played()


def test_replaying_an_empty_folder_is_an_error(tmp_path):
    with pytest.raises(ReplayMismatchError, match="no recorded exchange in .*record it first: AGENTHUB_RECORD=1"):
        replay_session(str(tmp_path / "nothing"))


@pytest.mark.parametrize("chunk_size", [1, 7, None])
def test_any_chunking_replays_the_same(chunk_size):
    cassette = Cassette(interactions=[Interaction(None, body=_recording("weather_tool_call.sse"))])
    client = AutoLLMClient("m", base_url="http://127.0.0.1:9/v1", client_type="openai-chat",
                           session=replay_session(cassette, chunk_size=chunk_size))
    events = list(client.streaming_response([{"role": "user", "content_items": [{"type": "text", "text": "x"}]}],
                                            {"tools": TOOLS}))
    calls = [i for e in events for i in e["content_items"] if i["type"] == "tool_call"]
    assert calls == [{"type": "tool_call", "name": "get_weather", "arguments": {"city": "Paris"},
                      "tool_call_id": "call_demo_1"}]


def test_recorded_errors_replay_as_errors():
    cassette = Cassette(interactions=[Interaction(
        None, 429, {"Content-Type": "application/json", "retry-after": "3"},
        b'{"error": {"message": "slow down", "type": "rate_limit_exceeded"}}')])
    client = AutoLLMClient("m", base_url="http://127.0.0.1:9/v1", client_type="openai-chat", max_retries=0,
                           session=replay_session(cassette))
    with pytest.raises(RateLimitError) as info:
        list(client.streaming_response([{"role": "user", "content_items": [{"type": "text", "text": "x"}]}]))
    assert (info.value.status, info.value.retry_after, info.value.message) == (429, 3.0, "slow down")


def test_a_stream_left_early_is_recorded_as_far_as_it_was_read(upstream, tmp_path):
    folder = str(tmp_path / "early")
    client = AutoLLMClient("demo-model", api_key=KEY, base_url=upstream.base_url, client_type="openai-chat",
                           session=record_session(folder))
    stream = client.streaming_response([{"role": "user", "content_items": [{"type": "text", "text": "x"}]}],
                                       {"tools": TOOLS})
    next(stream)
    next(stream)
    stream.close()
    with open(os.path.join(folder, "001.sse"), "rb") as handle:
        kept = handle.read()
    assert 0 < len(kept) < len(_recording("weather_tool_call.sse"))
    assert _recording("weather_tool_call.sse").startswith(kept)
    replay = AutoLLMClient("demo-model", api_key="x", base_url=upstream.base_url, client_type="openai-chat",
                           session=replay_session(folder, match_body=False))
    with pytest.raises(StreamProtocolError):  # the cut is replayed as it was seen
        list(replay.streaming_response([{"role": "user", "content_items": [{"type": "text", "text": "x"}]}]))


def test_cassette_session_switches_on_the_environment(upstream, tmp_path, monkeypatch):
    folder = str(tmp_path / "switch")
    monkeypatch.setenv("AGENTHUB_RECORD", "1")
    recording = cassette_session(folder)
    assert type(recording.get_adapter("http://x")).__name__ == "RecordingAdapter"
    monkeypatch.delenv("AGENTHUB_RECORD")
    with pytest.raises(ReplayMismatchError):
        cassette_session(folder)  # nothing recorded yet
    assert type(cassette_session(folder, record=True).get_adapter("https://x")).__name__ == "RecordingAdapter"


def test_clean_url_drops_secret_query_parameters():
    assert clean_url("https://u:p@generativelanguage.googleapis.com/v1beta/models/g:streamGenerateContent"
                     "?alt=sse&key=AIza123&access_token=t") == \
        "https://generativelanguage.googleapis.com/v1beta/models/g:streamGenerateContent?alt=sse"


def test_embeddings_replay_through_the_json_path():
    cassette = Cassette(interactions=[Interaction(None, 200, {"Content-Type": "application/json"}, json.dumps({
        "object": "list", "data": [{"object": "embedding", "index": 0, "embedding": [0.5, -0.25]}],
        "model": "text-embedding-3-small", "usage": {"prompt_tokens": 3, "total_tokens": 3}}).encode())])
    client = AutoLLMClient("text-embedding-3-small", api_key="unused", session=replay_session(cassette))
    events = list(client.streaming_response([{"role": "user", "content_items": [{"type": "text", "text": "x"}]}]))
    assert [i for e in events for i in e["content_items"]] == [{"type": "embedding", "embedding": [0.5, -0.25]}]


def test_replay_needs_no_session_of_its_own_kind():
    with pytest.raises(ConfigError):
        AutoLLMClient("gpt-5.5", base_url="https://api.example.com/v1", session=replay_session(Cassette()))


def test_the_recorders_body_has_read1_only_where_urllib3_has_it():
    """On urllib3 1.x (Python 3.8's venvs) the body has no read1: the recorder claimed one and every recorded
    stream failed ("reading the stream failed"); found by running the README's record-and-replay block."""
    from agenthub.transport import _TeeBody

    class OneX(object):  # urllib3 1.x's HTTPResponse: stream() and read(), no read1
        def stream(self, amt=None, decode_content=None):
            yield b"data: 1\n\n"

    class TwoX(OneX):
        def read1(self, amt=None, decode_content=None):
            return b""

    kept = []
    old = _TeeBody(OneX(), kept.append)
    assert not hasattr(old, "read1")
    assert list(old.stream(10)) == [b"data: 1\n\n"] and kept == [b"data: 1\n\n"]
    assert hasattr(_TeeBody(TwoX(), kept.append), "read1")
    assert _TeeBody(TwoX(), kept.append).read1(10) == b""
