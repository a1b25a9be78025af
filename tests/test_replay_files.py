"""agenthub.testing's cassette files: read back only when whole (CassetteError naming the file), written by
several recorders at once without one overwriting another's exchange, and replayed for requests whose
credentials recording scrubbed."""

import json
import os
import subprocess
import sys
import textwrap
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from agenthub import AgentHubError, AutoLLMClient, TransportError, check_stream
from agenthub.testing import Cassette, CassetteError, Interaction, ReplayMismatchError, record_session, replay_session
from faultserver import fast_backoff  # noqa: F401  (autouse: retries back off for milliseconds)
from sse_server import close_server, track_connections
from test_replay import KEY, _recording, _Upstream

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
ANTHROPIC = os.path.join(ROOT, "agenthub", "recordings", "anthropic", "weather_answer.sse")
TOKEN = "mcp-secret-token-0123456789abcdef"
USER = [{"role": "user", "content_items": [{"type": "text", "text": "What's the weather in Paris?"}]}]


def _strip(events):
    return [{k: v for k, v in e.items() if k != "created_at"} for e in events]


# -- a request whose credential recording scrubbed still replays --------------------------------------------------


def test_a_recording_of_a_request_carrying_an_mcp_token_replays(tmp_path):
    """The recorded body holds authorization_token "***": the replaying request (same token, or another) was
    compared with its real token and never matched (ReplayMismatchError on every replay of such a call)."""
    with open(ANTHROPIC, "rb") as handle:
        answer = handle.read()
    server = _Upstream([(200, "text/event-stream", answer)])
    config = {"mcp_servers": [{"url": "https://mcp.example.test/mcp", "name": "docs",
                               "headers": {"Authorization": "Bearer " + TOKEN}}]}
    folder = str(tmp_path / "mcp")
    try:
        live = AutoLLMClient("claude-sonnet-4-6", client_type="anthropic", api_key=KEY,
                             base_url=server.base_url, session=record_session(folder))
        recorded = list(live.streaming_response(USER, config))
        assert server.seen[0][2]["mcp_servers"][0]["authorization_token"] == TOKEN  # sent, not kept
    finally:
        server.close()
    with open(os.path.join(folder, "001.json"), encoding="utf-8") as handle:
        assert json.load(handle)["request"]["body"]["mcp_servers"][0]["authorization_token"] == "***"
    for token in (TOKEN, "another-mcp-token-for-the-replay"):
        other = {"mcp_servers": [dict(config["mcp_servers"][0], headers={"Authorization": "Bearer " + token})]}
        session = replay_session(folder)
        replay = AutoLLMClient("claude-sonnet-4-6", client_type="anthropic", api_key="replay-unused",
                               base_url=server.base_url, session=session)
        assert _strip(list(replay.streaming_response(USER, other))) == _strip(recorded)
        session.cassette.assert_all_played()
        # what the code sent stays what it sent (cassette.requests, for assertions)
        assert session.cassette.requests[0]["body"]["mcp_servers"][0]["authorization_token"] == token


def test_a_replayed_request_is_compared_with_its_credentials_scrubbed_and_the_error_shows_none():
    recorded = {"method": "POST", "url": "https://api.example.com/v1/messages",
                "body": {"mcp_servers": [{"authorization_token": "***"}], "q": "a"}}
    cassette = Cassette(interactions=[Interaction(recorded, body=b"ok", name="001")])
    with pytest.raises(ReplayMismatchError) as info:
        cassette.play("POST", "https://api.example.com/v1/messages",
                      json.dumps({"mcp_servers": [{"authorization_token": TOKEN}], "q": "b"}), [TOKEN])
    assert str(info.value) == ("replay: request #1 (POST https://api.example.com/v1/messages) matches no recorded "
                               "exchange in memory; the next unplayed one (001) differs: body.q: 'b' (recorded 'a')")
    assert cassette.play("POST", "https://api.example.com/v1/messages",
                         json.dumps({"mcp_servers": [{"authorization_token": TOKEN}], "q": "a"}), [TOKEN])[2] == b"ok"


def test_one_json_number_matches_another_spelling_of_it_and_a_bool_does_not():
    recorded = {"method": "POST", "url": "https://api.example.com/v1/chat/completions",
                "body": {"temperature": 1, "top_p": 0.5, "stream": True}}
    cassette = Cassette(interactions=[Interaction(recorded, body=b"ok", name="001")])
    url = "https://api.example.com/v1/chat/completions"
    with pytest.raises(ReplayMismatchError, match=r"differs: body.stream: 1 \(recorded true\)$"):
        cassette.play("POST", url, b'{"temperature": 1, "top_p": 0.5, "stream": 1}')
    assert cassette.play("POST", url, b'{"stream": true, "top_p": 5e-1, "temperature": 1.0}')[2] == b"ok"


# -- a secret echoed by the server in a JSON string's escapes -------------------------------------------------------


def test_a_secret_echoed_with_json_escapes_is_scrubbed(tmp_path):
    gateway = "gw/tok+en/0123456789=="
    denied = {"error": {"message": "bad gateway token " + gateway, "type": "invalid_request_error"}}
    body = json.dumps(denied).replace("/", "\\/").encode()  # (as servers that escape '/' write it)
    server = _Upstream([(401, "application/json", body)])
    try:
        folder = str(tmp_path / "denied")
        client = AutoLLMClient("m", api_key=KEY, base_url=server.base_url, client_type="openai-chat",
                               max_retries=0, default_headers={"X-Gateway-Token": gateway},
                               session=record_session(folder))
        with pytest.raises(AgentHubError):
            list(client.streaming_response(USER))
        assert server.seen[0][1]["X-Gateway-Token"] == gateway
    finally:
        server.close()
    with open(os.path.join(folder, "001.body.json"), "rb") as handle:
        assert handle.read() == b'{"error": {"message": "bad gateway token ***", "type": "invalid_request_error"}}'


# -- files that are not whole recordings ----------------------------------------------------------------------------

GOOD = {"agenthub_recording": 1,
        "request": {"method": "POST", "url": "https://api.example.com/v1/chat/completions", "body": {}},
        "response": {"status": 200, "headers": {"Content-Type": "text/event-stream"}, "body_file": "001.sse"}}


def _with(part, **changes):
    return json.dumps(dict(GOOD, **{part: dict(GOOD[part], **changes)})).encode()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
@pytest.mark.parametrize("which", ["meta", "body"])
def test_a_recording_file_that_is_no_regular_file_is_refused_unread(tmp_path, which):
    """A FIFO (or a link to one, or to /dev/zero) was opened and read: the replay blocked forever (or read
    without end)."""
    folder = tmp_path / "cassette"
    folder.mkdir()
    if which == "meta":
        os.mkfifo(str(folder / "001.json"))
        why = "it cannot be read (not a regular file)"
    else:
        (folder / "001.json").write_text(json.dumps(dict(GOOD, response=dict(GOOD["response"], body_file="001.body"))))
        os.symlink("/dev/zero", str(folder / "001.body"))
        why = "its body file 001.body cannot be read (not a regular file)"
    with pytest.raises(CassetteError) as info:
        Cassette(str(folder))
    assert str(info.value) == "replay: {} is not a readable agenthub recording: {}".format(folder / "001.json", why)


@pytest.mark.parametrize("meta, body, why", [
    (json.dumps(GOOD).encode()[:50], True, "it is not whole JSON (JSONDecodeError)"),
    (b"", True, "it is not whole JSON (JSONDecodeError)"),
    (b"\xff\xfe{}", True, "it is not whole JSON (UnicodeDecodeError)"),
    (b"[" * 100000 + b"]" * 100000, True, "it is not whole JSON (RecursionError)"),
    (b"[1, 2]", True, "no agenthub_recording format"),
    (json.dumps(dict(GOOD, agenthub_recording=2)).encode(), True,
     "format 2 (this agenthub reads format 1: record it again)"),
    (json.dumps(GOOD).encode(), False, "its body file 001.sse cannot be read (No such file or directory)"),
    (_with("response", status="200"), True, "its response status is '200' (an HTTP status 100-599 is needed)"),
    (_with("response", status=1e400), True, "its response status is Infinity (an HTTP status 100-599 is needed)"),
    (_with("response", status=True), True, "its response status is true (an HTTP status 100-599 is needed)"),
    (_with("response", status=99), True, "its response status is 99 (an HTTP status 100-599 is needed)"),
    (_with("response", headers=["Content-Type"]), True, "its response headers are not an object of strings"),
    (_with("response", headers={"Content-Type": 5}), True, "its response headers are not an object of strings"),
    (_with("response", body_file="../001.sse"), True,
     "its response body_file is '../001.sse' (a file name in the cassette's folder is needed)"),
    (_with("response", body_file=""), True,
     "its response body_file is '' (a file name in the cassette's folder is needed)"),
    (json.dumps(dict(GOOD, response=[1])).encode(), True, "its response is not an object"),
    (json.dumps(dict(GOOD, request="POST /v1")).encode(), True,
     "its request is not {method, url, body} with method and URL strings"),
    (_with("request", method=5), True, "its request is not {method, url, body} with method and URL strings"),
], ids=["cut-short", "empty", "not-utf8", "nested-deep", "not-an-object", "another-format", "no-body-file",
        "status-a-string", "status-infinite", "status-a-bool", "status-99", "headers-a-list", "header-a-number",
        "body-file-outside", "body-file-empty", "response-a-list", "request-a-string", "method-a-number"])
def test_a_file_that_is_not_a_whole_recording_is_a_cassette_error_naming_it(tmp_path, meta, body, why):
    """Each raised JSONDecodeError, FileNotFoundError, OverflowError, TypeError, AttributeError, RecursionError,
    or loaded a status requests cannot carry, or was skipped (another format: every replay then a mismatch)."""
    folder = tmp_path / "cassette"
    folder.mkdir()
    (folder / "001.json").write_bytes(meta)
    if body:
        (folder / "001.sse").write_bytes(b"data: [DONE]\n\n")
    with pytest.raises(CassetteError) as info:
        replay_session(str(folder))
    assert str(info.value) == "replay: {} is not a readable agenthub recording: {}".format(folder / "001.json", why)
    assert isinstance(info.value, AgentHubError) and isinstance(info.value, ValueError)
    with pytest.raises(CassetteError):
        Cassette(str(folder))


# -- two processes recording into one folder --------------------------------------------------------------------------

_RECORDER = textwrap.dedent("""
    import sys
    from agenthub import AutoLLMClient
    from agenthub.testing import record_session

    folder, base_url, name = sys.argv[1:4]
    session = record_session(folder)
    print("ready", flush=True)
    sys.stdin.readline()  # both recorders emptied the folder: now both record at once
    client = AutoLLMClient("demo-model", api_key="sk-recorder-0123456789", base_url=base_url,
                           client_type="openai-chat", session=session)
    for i in range(6):
        list(client.streaming_response([{"role": "user", "content_items": [
            {"type": "text", "text": "{} {}".format(name, i)}]}]))
    print("done", flush=True)
""")


def test_two_processes_recording_into_one_folder_keep_every_exchange(tmp_path):
    """Both numbered their exchanges 001, 002, ... in memory and wrote over each other's files (a .json of
    one process beside the .sse of the other)."""
    server = _Upstream([(200, "text/event-stream", _recording("weather_answer.sse"))] * 12)
    folder = str(tmp_path / "shared")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
    procs = [subprocess.Popen([sys.executable, "-c", _RECORDER, folder, server.base_url, name], env=env,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, universal_newlines=True)
             for name in ("first", "second")]
    try:
        for proc in procs:
            assert proc.stdout.readline() == "ready\n"
        for proc in procs:
            proc.stdin.write("go\n")
            proc.stdin.flush()
        for proc in procs:
            assert proc.stdout.readline() == "done\n"
            proc.stdin.close()
            assert proc.wait(timeout=60) == 0
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=30)
            proc.stdout.close()
            if not proc.stdin.closed:
                proc.stdin.close()
        server.close()
    assert sorted(os.listdir(folder)) == sorted(
        "{:03d}.{}".format(n, ext) for n in range(1, 13) for ext in ("json", "sse"))
    questions = []
    for n in range(1, 13):
        with open(os.path.join(folder, "{:03d}.json".format(n)), encoding="utf-8") as handle:
            meta = json.load(handle)
        assert meta["response"]["body_file"] == "{:03d}.sse".format(n)
        questions.append(meta["request"]["body"]["messages"][0]["content"])
    assert sorted(questions) == sorted("{} {}".format(name, i) for name in ("first", "second") for i in range(6))
    session = replay_session(folder)
    client = AutoLLMClient("demo-model", api_key="replay-unused", base_url=server.base_url,
                           client_type="openai-chat", session=session)
    for question in sorted(questions):
        check_stream(list(client.streaming_response([{"role": "user", "content_items": [
            {"type": "text", "text": question}]}])))
    session.cassette.assert_all_played()


# -- a body whose reading failed replays as that failure ---------------------------------------------------------------


class _Cutting(object):
    """A loopback Chat Completions server whose replies may break off: (body, cut[, content type[, status[,
    headers]]]) sends
    ``body[:cut]`` as a chunk and closes the connection without the last chunk (cut None: the whole body;
    content type None: no Content-Type header)."""

    def __init__(self, replies):
        self.replies = list(replies)
        self.seen = 0
        upstream = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):  # noqa: N802
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                upstream.seen += 1
                reply = upstream.replies.pop(0) + (None, None, None)
                body, cut, kind = reply[0], reply[1], reply[2] if len(reply) > 5 else "text/event-stream"
                self.send_response(reply[3] or 200)
                if kind is not None:
                    self.send_header("Content-Type", kind)
                for name, value in (reply[4] or {}).items():
                    self.send_header(name, value)
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                piece = body if cut is None else body[:cut]
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                if cut is None:
                    self.wfile.write(b"0\r\n\r\n")
                else:
                    self.close_connection = True
                self.wfile.flush()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._connections = track_connections(self.server)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.base_url = "http://127.0.0.1:{}/v1".format(self.server.server_address[1])

    def close(self):
        close_server(self.server, self._connections)


def _ask(client):
    got = []
    try:
        for event in client.streaming_response(USER):
            got.append(event)
    except AgentHubError as exc:
        return _strip(got), (type(exc).__name__, str(exc), exc.retryable)
    return _strip(got), None


def test_a_connection_broken_before_the_first_event_replays_as_broken_and_is_retried_again(tmp_path):
    """Recorded as the bytes read and nothing else: the replay ended cleanly there, a StreamProtocolError
    ('malformed payload') that is not retried, where the live call had retried and answered."""
    answer = _recording("weather_answer.sse")
    server = _Cutting([(answer, 40), (answer, None)])
    folder = str(tmp_path / "retried")
    try:
        live = _ask(AutoLLMClient("demo-model", api_key=KEY, base_url=server.base_url, client_type="openai-chat",
                                  session=record_session(folder)))
        assert server.seen == 2 and live[1] is None
    finally:
        server.close()
    with open(os.path.join(folder, "001.json"), encoding="utf-8") as handle:
        assert json.load(handle)["response"]["read_error"]["timeout"] is False
    session = replay_session(folder)
    assert _ask(AutoLLMClient("demo-model", api_key="replay-unused", base_url=server.base_url,
                              client_type="openai-chat", session=session)) == live
    session.cassette.assert_all_played()


def test_a_connection_broken_mid_stream_replays_as_the_same_error(tmp_path):
    answer = _recording("weather_answer.sse")
    server = _Cutting([(answer, len(answer) - 60)])
    folder = str(tmp_path / "broken")
    try:
        live = _ask(AutoLLMClient("demo-model", api_key=KEY, base_url=server.base_url, client_type="openai-chat",
                                  max_retries=0, session=record_session(folder)))
    finally:
        server.close()
    # (urllib3 2.x: "the connection failed"; 1.x words it as "the connection broke in the middle of the answer")
    assert live[0] and live[1][0] == "TransportError" and live[1][1].startswith(
        "openai-chat: reading the stream failed: the connection ") and live[1][2] is True
    replayed = _ask(AutoLLMClient("demo-model", api_key="replay-unused", base_url=server.base_url,
                                  client_type="openai-chat", max_retries=0,
                                  session=replay_session(folder)))
    assert replayed == live


@pytest.mark.parametrize("read_error, why, timeout", [
    ({"words": "('Connection broken: IncompleteRead(12 bytes read, 30 more expected)', IncompleteRead(...))",
      "timeout": False}, "the connection broke in the middle of the answer", False),
    ({"words": "[Errno 104] Connection reset by peer", "timeout": False, "errno": 104,
      "strerror": "Connection reset by peer"}, "the connection was reset by the server", False),
    ({"words": "Read timed out.", "timeout": True}, "no data for 7.0s (idle timeout between received bytes)", True),
], ids=["broken", "reset", "timeout"])
def test_a_recorded_read_error_is_raised_after_the_recorded_bytes(read_error, why, timeout):
    answer = _recording("weather_answer.sse")
    cut = answer.index(b"\n\n", answer.index(b"\n\n") + 2) + 2  # after the second chunk (role, "It is ")
    cassette = Cassette(interactions=[Interaction(None, body=answer[:cut], read_error=read_error)])
    client = AutoLLMClient("demo-model", api_key="replay-unused", base_url="https://api.example.com/v1",
                           client_type="openai-chat", max_retries=0, timeout=(3.0, 7.0),
                           session=replay_session(cassette, chunk_size=5))
    events, error = _ask(client)
    assert [(e["event_type"], e["content_items"]) for e in events] == [
        ("start", []), ("delta", [{"type": "text", "text": "It is "}])]
    assert error == ("TransportError", "openai-chat: reading the stream failed: " + why, True)


# -- a fallback named by its model shares a replay (or a credential-free recording) ---------------------------------


def test_a_failover_to_a_fallback_named_by_its_model_is_recorded_and_replayed(tmp_path, monkeypatch):
    """The fallback built from a model name had a session of its own: its exchange was never recorded, and
    on replay it went past the cassette to the network (here: the local server, asked a third time)."""
    with open(os.path.join(ROOT, "agenthub", "recordings", "openai_responses", "weather_answer.sse"), "rb") as handle:
        answer = handle.read()
    overloaded = b'{"error": {"message": "overloaded", "type": "server_error"}}'
    server = _Upstream([(503, "application/json", overloaded), (200, "text/event-stream", answer)])
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    folder = str(tmp_path / "failover")
    try:
        live = AutoLLMClient("demo-model", client_type="openai-chat", api_key=KEY, base_url=server.base_url,
                             max_retries=0, fallbacks=["gpt-4.1-mini"], session=record_session(folder))
        recorded = list(live.streaming_response(USER))
        assert live.last_route == {"model": "gpt-4.1-mini", "client_type": "openai-responses",
                                   "host": server.base_url.split("/")[2]}
        assert sorted(os.listdir(folder)) == ["001.body.json", "001.json", "002.json", "002.sse"]
        session = replay_session(folder)
        replay = AutoLLMClient("demo-model", client_type="openai-chat", api_key="replay-unused",
                               base_url=server.base_url, max_retries=0, fallbacks=["gpt-4.1-mini"], session=session)
        assert _strip(list(replay.streaming_response(USER))) == _strip(recorded)
        session.cassette.assert_all_played()
        assert [path for path, _, _ in server.seen] == ["/v1/chat/completions", "/v1/responses"]  # never a third
    finally:
        server.close()


def test_a_recording_session_carrying_a_credential_is_not_shared_with_a_fallback(tmp_path, monkeypatch):
    import requests

    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    own = requests.Session()
    own.headers["X-Tenant-Token"] = "tenant-secret-0123456789"
    recording = record_session(str(tmp_path / "own"), session=own)
    client = AutoLLMClient("demo-model", client_type="openai-chat", api_key=KEY, base_url="http://127.0.0.1:9/v1",
                           fallbacks=["gpt-4.1-mini"], session=recording)
    assert client.fallbacks[0]._session is None  # its own, made when it first sends
    plain = record_session(str(tmp_path / "plain"), session=requests.Session())  # (yours: its adapters may add some)
    assert AutoLLMClient("demo-model", client_type="openai-chat", api_key=KEY, base_url="http://127.0.0.1:9/v1",
                         fallbacks=["gpt-4.1-mini"], session=plain).fallbacks[0]._session is None
    replaying = AutoLLMClient("demo-model", client_type="openai-chat", api_key=KEY,
                              base_url="http://127.0.0.1:9/v1", fallbacks=["gpt-4.1-mini"],
                              session=replay_session(Cassette(interactions=[Interaction(None)])))
    assert replaying.fallbacks[0]._session is replaying._session


def test_an_answer_without_a_content_type_is_recorded_and_replayed_without_one(tmp_path):
    """The recorder gave it Content-Type: text/event-stream (an Interaction's default for a scripted reply),
    so the file said what the server never sent and the replay read it as a declared stream."""
    document = json.dumps({"object": "list", "data": [{"object": "embedding", "index": 0, "embedding": [0.5, -0.25]}],
                           "model": "text-embedding-3-small", "usage": {"prompt_tokens": 3, "total_tokens": 3}})
    server = _Cutting([(document.encode(), None, None)])
    folder = str(tmp_path / "untyped")
    try:
        live = AutoLLMClient("text-embedding-3-small", api_key=KEY, base_url=server.base_url,
                             session=record_session(folder))
        recorded = _strip(list(live.streaming_response(USER)))
    finally:
        server.close()
    with open(os.path.join(folder, "001.json"), encoding="utf-8") as handle:
        assert json.load(handle)["response"] == {"status": 200, "headers": {}, "body_file": "001.body"}
    replay = AutoLLMClient("text-embedding-3-small", api_key="replay-unused", base_url=server.base_url,
                           session=replay_session(folder))
    assert _strip(list(replay.streaming_response(USER))) == recorded
    assert [i for e in recorded for i in e["content_items"]] == [{"type": "embedding", "embedding": [0.5, -0.25]}]


def test_the_answer_headers_the_reader_reads_are_recorded(tmp_path):
    """Only six were kept: an AWS error type, a gateway's retry-after or request id, the rate-limit headers a
    RateLimiter paces by were dropped, so the replayed error was another (no error_type, no request_id)."""
    headers = {"x-amzn-errortype": "ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/",
               "llm_provider-retry-after": "2", "x-amzn-RequestId": "req-abc-123",
               "x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "2s", "x-internal-debug": "no"}
    server = _Cutting([(b'{"message": "Too many requests, please wait."}', None, "application/json", 429, headers)])
    folder = str(tmp_path / "throttled")

    def error_of(client):
        with pytest.raises(AgentHubError) as info:
            list(client.streaming_response(USER))
        error = info.value
        return type(error).__name__, str(error), error.error_type, error.request_id, error.retry_after

    try:
        live = error_of(AutoLLMClient("demo-model", api_key=KEY, base_url=server.base_url, client_type="openai-chat",
                                      max_retries=0, session=record_session(folder)))
    finally:
        server.close()
    assert live[2:] == ("ThrottlingException", "req-abc-123", 2.0)
    with open(os.path.join(folder, "001.json"), encoding="utf-8") as handle:
        kept = json.load(handle)["response"]["headers"]
    assert sorted(kept) == ["Content-Type", "llm_provider-retry-after", "x-amzn-RequestId", "x-amzn-errortype",
                            "x-ratelimit-remaining-requests", "x-ratelimit-reset-requests"]
    assert error_of(AutoLLMClient("demo-model", api_key="replay-unused", base_url=server.base_url,
                                  client_type="openai-chat", max_retries=0, session=replay_session(folder))) == live


# -- a cassette folder that cannot be written ------------------------------------------------------------------------


def test_a_cassette_folder_that_cannot_be_made_is_a_config_error_before_anything_is_sent(tmp_path):
    """The recorder swallowed the failure at every exchange (its body's close): the calls went on, live and
    paid for, and nothing was recorded."""
    from agenthub import ConfigError

    taken = tmp_path / "a-file"
    taken.write_bytes(b"")
    with pytest.raises(ConfigError) as info:
        record_session(str(taken / "cassette"))
    assert str(info.value) == "record_session: the cassette folder {!r} cannot be made (Not a directory)".format(
        str(taken / "cassette"))


def test_an_exchange_that_cannot_be_written_is_logged_and_the_call_stands(tmp_path, caplog):
    folder = tmp_path / "cassette"
    server = _Upstream([(200, "text/event-stream", _recording("weather_answer.sse"))])
    try:
        client = AutoLLMClient("demo-model", api_key=KEY, base_url=server.base_url, client_type="openai-chat",
                               session=record_session(str(folder)))
        folder.mkdir(exist_ok=True)
        folder.rmdir()
        folder.write_bytes(b"")  # (the folder replaced by a file meanwhile)
        with caplog.at_level("ERROR", logger="agenthub"):
            events = list(client.streaming_response(USER))
    finally:
        server.close()
    assert events[-1]["finish_reason"] == "stop"
    assert [r.getMessage() for r in caplog.records if r.name == "agenthub"] == [
        "recording: the exchange POST {}/chat/completions was not written to the cassette {} (FileExistsError: "
        "[Errno 17] File exists: {!r})".format(server.base_url, folder, str(folder))]


# -- replay_session's arguments ----------------------------------------------------------------------------------------


def test_match_body_given_with_a_cassette_is_not_lost():
    """replay_session(cassette, match_body=False) ignored match_body: the Cassette's own (True) compared bodies."""
    recorded = {"method": "POST", "url": "https://api.example.com/v1/chat/completions", "body": {"q": "recorded"}}
    cassette = Cassette(interactions=[Interaction(recorded, body=b"ok", name="001")])
    session = replay_session(cassette, match_body=False)
    assert session.cassette is cassette and cassette.match_body is False
    assert session.post("https://api.example.com/v1/chat/completions", json={"q": "another"}).content == b"ok"


@pytest.mark.parametrize("chunk_size", [0, -5, 1.5, "64", True])
def test_a_chunk_size_that_is_no_byte_count_is_a_config_error(chunk_size):
    """It was taken as it came: "64" raised TypeError inside the transport, read as a connection failure."""
    from agenthub import ConfigError

    with pytest.raises(ConfigError) as info:
        replay_session(Cassette(interactions=[Interaction(None)]), chunk_size=chunk_size)
    assert str(info.value) == ("replay_session: chunk_size must be a whole number of bytes >= 1 (or None), "
                               "not {!r}".format(chunk_size))


# -- a background stream resumed after cuts ---------------------------------------------------------------------------


@pytest.mark.parametrize("protocol", ["responses", "interactions"])
def test_a_background_stream_resumed_after_cuts_replays_its_reconnects(tmp_path, protocol):
    from longrun_server import LongrunServer, boundaries, interactions_events, responses_events

    texts = ["Long ", "agent ", "turns ", "are ", "where ", "streams ", "get ", "cut."]
    rid = "resp_r" if protocol == "responses" else "int_r"
    if protocol == "responses":
        events = responses_events(rid, texts)
        make = lambda server, **kw: AutoLLMClient("gpt-5.5", api_key="test-key-0123456789", base_url=server.url + "/v1",
                                                  client_type="openai-responses", **kw)
    else:
        events = interactions_events(rid, texts)
        make = lambda server, **kw: AutoLLMClient("gemini-3.8-flash", api_key="test-key-0123456789",
                                                  base_url=server.url, client_type="gemini-interactions", **kw)
    ends = boundaries(events)
    folder = str(tmp_path / "background")
    with LongrunServer() as server:
        server.add(rid, events, cuts=[ends[2] + 5, ends[5]])  # a cut mid-event, then one at an event's end
        live = _strip(list(make(server, session=record_session(folder)).streaming_response(USER,
                                                                                           {"background": True})))
        sent = [r["method"] for r in server.requests]
        session = replay_session(folder)
        replayed = list(make(server, session=session).streaming_response(USER, {"background": True}))
        assert [r["method"] for r in server.requests] == sent == ["POST", "GET", "GET"]  # the replay sent none
    check_stream(replayed)
    assert _strip(replayed) == live
    assert "".join(i["text"] for e in replayed for i in e["content_items"] if i["type"] == "text") == "".join(texts)
    session.cassette.assert_all_played()


def test_an_event_stream_is_scrubbed_frame_by_frame_headers_too():
    """Every frame still decodes (lengths and CRCs made anew where a secret went), the frames without one are
    the bytes they were, and a cut after the last whole frame is scrubbed as bytes."""
    import bedrock_frames as bf
    from agenthub.eventstream import EventStreamDecoder
    from agenthub.testing import _scrub_frames

    secret = "AKIASECRET0123456789"
    plain = bf.event("messageStart", {"role": "assistant"})
    echoed = bf.encode([(":event-type", bf.STRING, "contentBlockDelta"), ("x-echo", bf.STRING, "by " + secret),
                        ("x-n", bf.INTEGER, 7), ("x-flag", bf.BOOL_TRUE)],
                       json.dumps({"delta": {"text": "key " + secret}}).encode())
    cut = bf.event("messageStop", {"note": secret})[:-6]  # (its CRC and closing quote and brace)
    scrubbed = _scrub_frames(plain + echoed + cut, [secret.encode()])
    assert scrubbed.startswith(plain) and secret.encode() not in scrubbed
    decoder = EventStreamDecoder()
    messages = decoder.feed(scrubbed[:len(scrubbed) - len(_scrub_frames(cut, [secret.encode()]))])
    assert [(m.headers, m.payload) for m in messages] == [
        ({":event-type": "messageStart", ":content-type": "application/json", ":message-type": "event"},
         b'{"role": "assistant"}'),
        ({":event-type": "contentBlockDelta", "x-echo": "by ***", "x-n": 7, "x-flag": True},
         b'{"delta": {"text": "key ***"}}')]
    assert secret.encode() in cut and scrubbed.endswith(cut.replace(secret.encode(), b"***"))


# -- recording through a session of the caller's ----------------------------------------------------------------------


def test_recording_through_a_session_of_yours_keeps_its_adapters_and_records_every_host(tmp_path):
    """record_session(folder, session=yours) mounted its recorder on https:// and http:// only: an adapter yours
    mounted for a host (a longer prefix, which requests prefers) sent past the recorder, nothing recorded; and
    yours on https:// (its TLS, pool or retry settings) was replaced by a default one."""
    import requests

    sent = []

    class Counting(requests.adapters.HTTPAdapter):
        def send(self, request, **kwargs):
            sent.append(request.url)
            return super(Counting, self).send(request, **kwargs)

    server = _Upstream([(200, "text/event-stream", _recording("weather_answer.sse"))])
    folder = str(tmp_path / "yours")
    own = requests.Session()
    own.mount(server.base_url.rsplit("/", 1)[0] + "/", Counting())
    try:
        session = record_session(folder, session=own)
        assert session is own
        live = _strip(list(AutoLLMClient("demo-model", api_key=KEY, base_url=server.base_url,
                                         client_type="openai-chat", session=session).streaming_response(USER)))
    finally:
        server.close()
        own.close()
    assert sent == [server.base_url + "/chat/completions"]  # yours sent it
    assert sorted(os.listdir(folder)) == ["001.json", "001.sse"]  # and it was recorded
    replay = AutoLLMClient("demo-model", api_key="replay-unused", base_url=server.base_url,
                           client_type="openai-chat", session=replay_session(folder))
    assert _strip(list(replay.streaming_response(USER))) == live
