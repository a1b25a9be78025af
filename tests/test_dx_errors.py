"""Errors that say what to do, and logs on demand (AGENTHUB_LOG)."""

import json
import logging
import os
import pickle
import socket
import ssl
import subprocess
import sys

import pytest
import requests

from agenthub import AuthenticationError, AutoLLMClient, ConfigError, ServerError, TransportError, UpstreamError, \
    client as client_mod
from agenthub import transport
from agenthub.errors import safe_url, upstream_error

from sse_server import Answer, SSEServer

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
USER = {"role": "user", "content_items": [{"type": "text", "text": "hi"}]}
SECRET = "sk-secret-0123456789abcdef"


def _recording(name):
    with open(os.path.join(ROOT, "agenthub", "recordings", "openai_chat", name), "rb") as handle:
        return handle.read()


@pytest.fixture
def server():
    with SSEServer() as running:
        yield running


def _clean_env(monkeypatch):
    for name in list(os.environ):
        if name.endswith(("_API_KEY", "_BASE_URL")):
            monkeypatch.delenv(name)


# -- .url ------------------------------------------------------------------------------------------


def test_safe_url_drops_credentials_and_secret_query_parameters():
    assert safe_url("https://user:pw@gw.example.com/v1/chat?key=abc&alt=sse&X-Amz-Signature=s#frag") == (
        "https://gw.example.com/v1/chat?alt=sse")
    assert safe_url(None) is None and safe_url("") is None


def test_an_http_error_names_the_url_so_a_missing_v1_shows(server):
    server.answers.append(Answer([b'{"error": {"message": "Not Found", "type": "not_found"}}'], status=404,
                                 headers={"Content-Type": "application/json"}))
    client = AutoLLMClient("m", client_type="openai-chat", base_url=server.url, max_retries=0)  # no /v1
    with pytest.raises(UpstreamError) as info:
        list(client.streaming_response([USER]))
    error = info.value
    assert error.url == server.url + "/chat/completions"
    # issue 24 C2: the 404 also carries the hint the README promises (and str() shows hints)
    assert error.hint == ("the base_url has no /v1 (OpenAI-compatible servers answer at /v1/chat/completions and "
                          "/v1/responses): try base_url='{}/v1'".format(server.url))
    assert str(error) == "Not Found; {} (client=openai-chat, status=404, type=not_found, url={}/chat/completions)".format(
        error.hint, server.url)
    again = pickle.loads(pickle.dumps(error))
    assert again.url == error.url and str(again) == str(error)


def test_an_error_inside_the_stream_gets_the_url_too(server):
    server.answers.append(Answer([b'data: {"error": {"message": "bad thing", "type": "invalid_request_error"}}\n\n']))
    client = AutoLLMClient("m", client_type="openai-chat", base_url=server.url + "/v1", max_retries=0)
    with pytest.raises(UpstreamError) as info:
        list(client.streaming_response([USER]))
    assert info.value.url == server.url + "/v1/chat/completions"


def test_upstream_error_takes_a_url_without_its_secrets():
    error = upstream_error("gemini", {"error": {"message": "no"}}, status=400,
                           url="https://h.example/v1beta/models/m:streamGenerateContent?alt=sse&key=AIza-secret")
    assert error.url == "https://h.example/v1beta/models/m:streamGenerateContent?alt=sse"
    assert "AIza" not in str(error)


# -- TransportError, in words ----------------------------------------------------------------------


def _why(exc):
    return str(transport._transport_error("openai-chat", "POST https://api.example.com/v1/chat/completions", exc,
                                          (10, 600)))


def test_connection_refused_in_words():
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    port = holder.getsockname()[1]
    holder.close()  # nothing listens there now
    client = AutoLLMClient("m", client_type="openai-chat", base_url="http://127.0.0.1:{}/v1".format(port),
                           max_retries=0)
    with pytest.raises(TransportError) as info:
        list(client.streaming_response([USER]))
    assert str(info.value) == (
        "openai-chat: POST http://127.0.0.1:{0}/v1/chat/completions failed: connection refused by 127.0.0.1:{0}: "
        "nothing listens there (is the server running, is the port right?)".format(port))
    assert "Error" not in str(info.value).split("failed: ")[1]


@pytest.mark.parametrize("exc, words", [
    (requests.exceptions.ConnectionError(socket.gaierror(-2, "Name or service not known")),
     "the host name api.example.com did not resolve (DNS): is it spelt right, and is there a network?"),
    (requests.exceptions.SSLError(ssl.SSLCertVerificationError(
        1, "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: self-signed certificate (_ssl.c:1006)")),
     "TLS failed: the server's certificate did not verify (self-signed certificate)"),
    (requests.exceptions.SSLError(ssl.SSLError(1, "[SSL] record layer failure (_ssl.c:1006)")),
     "TLS failed: the server did not answer TLS (an http:// server behind an https:// URL?)"),
    (requests.exceptions.ConnectionError(ConnectionResetError(104, "Connection reset by peer")),
     "the connection was reset by the server"),
    (requests.exceptions.ConnectTimeout("x"), "no connection within 10s (connect timeout)"),
    (requests.exceptions.ReadTimeout("x"), "no data for 600s (idle timeout between received bytes)"),
    (requests.exceptions.ChunkedEncodingError("Connection broken: IncompleteRead(10 bytes read)"),
     "the connection broke in the middle of the answer"),
    (requests.exceptions.ConnectionError("something odd"), "the connection failed"),
])
def test_transport_errors_say_why_in_words(exc, words):
    assert _why(exc) == "openai-chat: POST https://api.example.com/v1/chat/completions failed: " + words


# -- a 401 names where the key came from --------------------------------------------------------------


def _unauthorized(server):
    server.answers.append(Answer([b'{"error": {"message": "invalid x-api-key", "type": "authentication_error"}}'],
                                 status=401, headers={"Content-Type": "application/json"}))


def test_401_with_the_api_key_argument(server):
    _unauthorized(server)
    client = AutoLLMClient("m", client_type="openai-chat", base_url=server.url + "/v1", api_key=SECRET, max_retries=0)
    with pytest.raises(AuthenticationError) as info:
        list(client.streaming_response([USER]))
    assert info.value.hint == "the key sent was the api_key argument"
    assert str(info.value).startswith("invalid x-api-key; the key sent was the api_key argument (client=")
    assert SECRET not in str(info.value) and SECRET not in repr(vars(info.value))


def test_401_with_a_key_from_its_variable(server, monkeypatch):
    _clean_env(monkeypatch)
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)  # the variable's own endpoint: the key goes there
    _unauthorized(server)
    client = AutoLLMClient("claude-sonnet-5", max_retries=0)
    with pytest.raises(AuthenticationError) as info:
        list(client.streaming_response([USER]))
    assert info.value.hint == "the key sent came from $ANTHROPIC_API_KEY"
    assert server.requests[0]["headers"]["x-api-key"] == SECRET


def test_401_when_a_key_variable_is_set_but_was_not_sent(server, monkeypatch):
    _clean_env(monkeypatch)
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    _unauthorized(server)
    client = AutoLLMClient("gpt-5.5", base_url=server.url + "/v1", max_retries=0)  # loopback: no key needed, none sent
    with pytest.raises(AuthenticationError) as info:
        list(client.streaming_response([USER]))
    assert "Authorization" not in server.requests[0]["headers"]
    assert info.value.hint == ("no key was sent: $OPENAI_API_KEY is set, but a key from the environment goes only to "
                               "its own endpoint, not to 127.0.0.1; pass api_key= to send a key there")


# -- OpenAI-shaped input --------------------------------------------------------------------------------


def _client():
    return AutoLLMClient("m", client_type="openai-chat", base_url="http://127.0.0.1:9/v1")


@pytest.mark.parametrize("messages, config, words", [
    ([{"role": "user", "content": "hi"}], None,
     "messages[0] is in OpenAI's shape ('content'); agenthub messages carry content_items, e.g. "
     "{'role': 'user', 'content_items': [{'type': 'text', 'text': 'hi'}]}"),
    ([{"role": "user", "content": [{"type": "text", "text": "look"},
                                   {"type": "image_url", "image_url": {"url": "https://x.example/a.png"}}]}], None,
     "messages[0] is in OpenAI's shape ('content'); agenthub messages carry content_items, e.g. "
     "{'role': 'user', 'content_items': [{'type': 'text', 'text': 'look'}, "
     "{'type': 'image_url', 'image_url': 'https://x.example/a.png'}]}"),
    ([{"role": "system", "content": "Be brief."}], None,
     "messages[0] is a system message in OpenAI's shape; in agenthub the system prompt is "
     "config['system_prompt'] = 'Be brief.'"),
    ([USER, {"role": "tool", "tool_call_id": "call_1", "content": "18 C"}], None,
     "messages[1] is a tool result in OpenAI's shape ({'role': 'tool', ...}); in agenthub it is an item of a user "
     "message: {'role': 'user', 'content_items': [{'type': 'tool_result', 'tool_call_id': 'call_1', 'text': '18 C'}]}"),
    ([USER], {"tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather.",
                                                          "parameters": {"type": "object"}}}]},
     "config['tools'][0] is in OpenAI's shape ({'type': 'function', 'function': {...}}); an agenthub tool is the "
     "function itself: {'name': 'get_weather', 'description': '...', 'parameters': {'type': 'object', '...': '...'}}"),
])
def test_openai_shaped_input_gets_the_agenthub_shape(messages, config, words):
    with pytest.raises(ConfigError) as info:
        _client().streaming_response(messages, config)
    assert str(info.value) == words


# -- AGENTHUB_LOG ---------------------------------------------------------------------------------------


def test_agenthub_log_attaches_one_stderr_handler(monkeypatch):
    from agenthub._log import log_from_env

    logger = logging.getLogger("agenthub")
    before, level = list(logger.handlers), logger.level
    try:
        monkeypatch.setenv("AGENTHUB_LOG", "debug")
        log_from_env()
        log_from_env()
        added = [h for h in logger.handlers if h not in before]
        assert len(added) == 1 and added[0].stream is sys.stderr and logger.level == logging.DEBUG
    finally:
        logger.handlers[:] = before
        logger.setLevel(level)
    monkeypatch.setenv("AGENTHUB_LOG", "loud")  # not a level: nothing attached
    log_from_env()
    assert logger.handlers == before


def test_agenthub_log_debug_one_record_per_attempt_and_per_stream(server):
    busy = Answer([b'{"error": {"message": "overloaded", "type": "server_error"}}'], status=503,
                  headers={"Content-Type": "application/json", "Retry-After": "0", "x-request-id": "req-busy"})
    server.answers.extend([busy, Answer([_recording("weather_answer.sse")],
                                        headers={"Content-Type": "text/event-stream", "x-request-id": "req-ok"})])
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
    env.update(PYTHONPATH=ROOT, AGENTHUB_LOG="debug", GATEWAY_KEY=SECRET, NO_PROXY="*", PYTHONIOENCODING="utf-8")
    result = subprocess.run(
        [sys.executable, "-m", "agenthub", "chat", "demo-model", "hi", "--client-type", "openai-chat", "--base-url",
         server.url + "/v1", "--api-key-env", "GATEWAY_KEY"],
        env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    err = result.stderr.decode("utf-8")
    assert result.returncode == 0, err
    assert server.requests[0]["headers"]["Authorization"] == "Bearer " + SECRET  # the key was sent ...
    assert SECRET not in err  # ... and is nowhere in the log
    records = [line.split(" agenthub ", 1)[1] for line in err.splitlines() if " agenthub " in line]
    url = server.url + "/v1/chat/completions"
    assert len(records) == 4, err
    assert records[0].startswith("DEBUG HTTP POST {} status=503 request_id=req-busy attempt=1 elapsed=".format(url))
    assert records[0].endswith(" ms -> ServerError")
    assert records[1].startswith("INFO openai-chat: retrying after ServerError (status=503")
    assert records[2].startswith("DEBUG HTTP POST {} status=200 request_id=req-ok attempt=2 elapsed=".format(url))
    assert records[3].startswith(
        "DEBUG stream finished: openai-chat, 8 events, finish_reason=stop, usage={'cached_tokens': 64, "
        "'prompt_tokens': 24, 'thoughts_tokens': 0, 'response_tokens': 14}, ")
    assert json.loads(json.dumps(records))  # plain text lines


def test_a_debug_record_never_shows_a_base_urls_query_credential(server, caplog):
    """A gateway's key in the base URL's query under a name no rule knows (Azure Functions' ?code=): the error
    shows it as ***, and so does the DEBUG record of the attempt (it showed it whole)."""
    caplog.set_level(logging.DEBUG, logger="agenthub")
    server.answers.append(Answer([b'{"error": {"message": "bad"}}'], status=500,
                                 headers={"Content-Type": "application/json"}))
    client = AutoLLMClient("m", client_type="openai-chat", base_url=server.url + "/v1?code=fn-key-0123456789&v=1",
                           api_key=SECRET, max_retries=0)
    with pytest.raises(ServerError) as info:
        client.response([{"role": "user", "content_items": [{"type": "text", "text": "hi"}]}])
    assert info.value.url == server.url + "/v1/chat/completions?code=***&v=1"
    (message,) = [r.getMessage() for r in caplog.records if r.name == "agenthub" and r.getMessage().startswith("HTTP")]
    assert message.startswith("HTTP POST {}/v1/chat/completions?code=***&v=1 status=500 request_id=None "
                              "attempt=1 elapsed=".format(server.url)), message
    assert "fn-key-0123456789" not in caplog.text


def test_debug_records_for_a_model_list_and_a_401_there(server, caplog):
    caplog.set_level(logging.DEBUG, logger="agenthub")
    server.answers.append(Answer([b'{"object": "list", "data": [{"id": "m1", "object": "model"}]}'],
                                 headers={"Content-Type": "application/json", "x-request-id": "req-list"}))
    client = AutoLLMClient("m", client_type="openai-chat", base_url=server.url + "/v1", api_key=SECRET, max_retries=0)
    assert client.list_models() == ["m1"]
    _unauthorized(server)
    with pytest.raises(AuthenticationError) as info:
        client.list_models()
    assert info.value.url == server.url + "/v1/models"
    assert info.value.hint == "the key sent was the api_key argument"
    messages = [r.getMessage() for r in caplog.records if r.name == "agenthub"]
    assert messages[0].startswith("HTTP GET {}/v1/models status=200 request_id=req-list attempt=1 elapsed=".format(
        server.url))
    assert messages[1].startswith("HTTP GET {}/v1/models status=401 request_id=None attempt=1 elapsed=".format(
        server.url)) and messages[1].endswith(" ms -> AuthenticationError")
    assert len(messages) == 2 and not any(SECRET in m for m in messages)
