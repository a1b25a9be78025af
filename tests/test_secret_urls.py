"""A credential written into a URL the caller gives (an MCP server's ``?token=``, a gateway base URL's ``?key=``
or ``user:password@``) never shows: not in an error (its message, fields, chained causes: the whole traceback),
a repr, a job's refusal or a batch state file."""

import json
import logging
import os
import socket
import traceback

import pytest

from agenthub import AutoLLMClient, ConfigError, TransportError, UpstreamError, mcp
from agenthub.jobs.runner import build_clients

from faultserver import FaultServer, send, status

TOKEN = "qtok-url-secret-Q7w6E5r4"
PASSWORD = "pw-url-secret-Z1x2C3v4"
USER = [{"role": "user", "content_items": [{"type": "text", "text": "hi"}]}]


def _traceback(error):
    """Everything a traceback of ``error`` prints (its causes and contexts too), and its fields."""
    text = "".join(traceback.format_exception(type(error), error, error.__traceback__))
    return text + repr(error) + repr(error.args) + "".join(repr(v) for v in vars(error).values())


def _refused_port():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there now: a connection is refused
    return port


def _echo_path(request):
    """A server whose 401 repeats the request's path and query (as many error pages do)."""
    body = json.dumps({"error": {"message": "invalid credentials at " + request.path,
                                 "type": "authentication_error"}}).encode()
    return [status(401, {"Content-Type": "application/json"}, framing="length"), send(body)]


def test_an_mcp_url_token_echoed_by_the_server_is_scrubbed():
    with FaultServer(default=_echo_path) as server:
        with pytest.raises(UpstreamError) as caught:
            mcp.connect(server.url + "/mcp?token=" + TOKEN, timeout=10)
        assert server.requests[0].path == "/mcp?token=" + TOKEN  # sent, as given
    assert str(caught.value).startswith("invalid credentials at /mcp?token=*** (")
    assert TOKEN not in _traceback(caught.value)


def test_an_mcp_url_token_is_not_in_a_connection_failure_traceback():
    with pytest.raises(TransportError) as caught:
        mcp.connect("http://127.0.0.1:{}/mcp?token={}".format(_refused_port(), TOKEN), timeout=10)
    assert "connection refused" in str(caught.value)
    assert TOKEN not in _traceback(caught.value)


def test_a_base_url_query_key_is_not_in_reprs_or_tracebacks():
    client = AutoLLMClient("m", api_key="sk-header-key-0123456789", client_type="openai-chat", max_retries=0,
                           base_url="http://127.0.0.1:{}/v1?key={}".format(_refused_port(), TOKEN))
    assert repr(client).endswith("/v1?key=***')") and TOKEN not in repr(client)
    assert TOKEN not in repr(client.endpoint)
    assert TOKEN in client.credential_values()  # (what tool errors and serve's answers are scrubbed of)
    with pytest.raises(TransportError) as caught:
        list(client.streaming_response(USER))
    assert TOKEN not in _traceback(caught.value)


def test_a_base_url_query_key_echoed_by_the_server_is_scrubbed():
    with FaultServer(default=_echo_path) as server:
        client = AutoLLMClient("m", api_key="sk-header-key-0123456789", client_type="openai-chat", max_retries=0,
                               base_url=server.url + "/v1?key=" + TOKEN)
        with pytest.raises(UpstreamError) as caught:
            list(client.streaming_response(USER))
    assert "invalid credentials at /v1/chat/completions?key=***" in str(caught.value)
    assert TOKEN not in _traceback(caught.value)


@pytest.mark.parametrize("url", [
    "htps://alice:{}@gw.example/v1",  # a scheme typo
    "https:/alice:{}@gw.example/v1",  # one slash
    "https:// alice:{}@gw.example/v1",  # a space
    "ftp://gw.example/v1?key={}",
])
@pytest.mark.parametrize("client_type", ["openai-chat", "azure"])
def test_a_refused_base_url_is_named_without_its_credentials(url, client_type):
    with pytest.raises(ConfigError) as caught:
        AutoLLMClient("m", api_key="sk-header-key-0123456789", client_type=client_type,
                      base_url=url.format(PASSWORD))
    assert str(caught.value).startswith("base_url must be an http(s) URL ")
    assert PASSWORD not in _traceback(caught.value)


def test_a_job_route_that_cannot_be_built_is_named_without_its_credentials(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    routes = {("gpt-4o", "openai-chat", "https://alice:{}@gw.example/v1".format(PASSWORD)): [1],
              ("gpt-4o", "openai-chat", "https://gw.example/v1?key={}".format(TOKEN)): [2]}
    with pytest.raises(ConfigError) as caught:
        build_clients(routes)
    text = str(caught.value)
    assert "base_url=https://***@gw.example/v1) (line 1)" in text
    assert "base_url=https://gw.example/v1?key=***) (line 2)" in text
    assert PASSWORD not in _traceback(caught.value) and TOKEN not in _traceback(caught.value)


def test_a_batch_state_file_holds_no_base_url_query_key(tmp_path, monkeypatch):
    from agenthub import AgentHubError
    from agenthub.jobs import batch as B

    from batch_fakes import BatchFake

    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-the-fakes-key-0123")
    path = tmp_path / "in.jsonl"
    with BatchFake() as server:
        path.write_text(json.dumps({"id": "r1", "model": "gpt-5.4-mini", "client_type": "openai-chat",
                                    "base_url": server.url + "/v1?key=" + TOKEN, "messages": USER}) + "\n")
        with pytest.raises(AgentHubError) as caught:
            B.submit(str(path), backend="auto")
    assert TOKEN not in _traceback(caught.value)
    state = json.loads((tmp_path / "in.jsonl.batch.json").read_text())
    assert [(b["base_url"], b["row_base_url"]) for b in state["batches"]] == [
        (server.url + "/v1?key=***", server.url + "/v1?key=***")]


def test_batch_results_lines_are_scrubbed_of_a_base_url_query_key():
    from agenthub.jobs.backends._wire import Wire
    from agenthub.providers._common import Endpoint

    class Body(object):
        def __iter__(self):
            yield json.dumps({"custom_id": "r1", "error": {"message": "bad key " + TOKEN}}).encode() + b"\n"

        def close(self):
            pass

    wire = Wire("openai-chat", Endpoint("openai-chat", "http://127.0.0.1:9/v1?key=" + TOKEN, "sk-0123456789abc"))
    wire.raw = lambda *args, **kwargs: Body()
    assert list(wire.lines("http://127.0.0.1:9/r")) == [{"custom_id": "r1", "error": {"message": "bad key ***"}}]


def test_a_recording_holds_no_url_query_credential(tmp_path):
    """The recorded URL leaves a ``key=`` out (testing.clean_url); a body that echoes it holds ``***`` too."""
    from agenthub.testing import record_session

    folder = str(tmp_path / "cassette")
    session = record_session(folder)
    try:
        with FaultServer(default=_echo_path) as server:
            client = AutoLLMClient("m", api_key="sk-header-key-0123456789", client_type="openai-chat", max_retries=0,
                                   base_url=server.url + "/v1?key=" + TOKEN, session=session)
            with pytest.raises(UpstreamError):
                list(client.streaming_response(USER))
    finally:
        session.close()
    with open(os.path.join(folder, "001.json"), encoding="utf-8") as handle:
        assert json.load(handle)["request"]["url"] == server.url + "/v1/chat/completions"
    with open(os.path.join(folder, "001.body.json"), encoding="utf-8") as handle:
        assert json.load(handle) == {"error": {"message": "invalid credentials at /v1/chat/completions?key=***",
                                               "type": "authentication_error"}}


def test_a_percent_encoded_base_url_password_the_server_decoded_and_echoed_is_scrubbed():
    """``user:p%40ss@``: requests sends ``Basic base64(user:p@ss)``; a gateway echoing the password it decoded
    echoes ``p@ss``, the spelling the URL does not hold."""
    import base64

    def echo_basic(request):
        basic = request.headers.get("authorization", "").split(" ", 1)[-1]
        body = json.dumps({"error": {"message": "wrong password " + base64.b64decode(basic).decode().split(":")[1],
                                     "type": "authentication_error"}}).encode()
        return [status(401, {"Content-Type": "application/json"}, framing="length"), send(body)]

    with FaultServer(default=echo_basic) as server:
        client = AutoLLMClient("claude-x", api_key="sk-ant-header-key-0123", client_type="anthropic", max_retries=0,
                               base_url=server.url.replace("://", "://user:p%40ss-" + PASSWORD + "@"))
        with pytest.raises(UpstreamError) as caught:
            list(client.streaming_response(USER))
        assert server.requests[0].headers["x-api-key"] == "sk-ant-header-key-0123"
    assert str(caught.value).startswith("wrong password ***; ")
    assert PASSWORD not in _traceback(caught.value)


def _echo_key(request):
    body = json.dumps({"error": {"message": "invalid key " + request.headers.get("authorization", ""),
                                 "type": "invalid_request_error"}}).encode()
    return [status(400, {"Content-Type": "application/json"}, framing="length"), send(body)]


def test_an_abort_that_wins_over_an_echoing_error_chains_it_scrubbed():
    """The caller aborts just as an error answer that echoes the key was read: the TransportError 'aborted'
    chains that answer's error, scrubbed as the error itself would have been."""
    key = "sk-echoed-on-abort-0123456789"
    with FaultServer(default=_echo_key) as server:
        client = AutoLLMClient("m", api_key=key, base_url=server.url + "/v1", client_type="openai-chat",
                               max_retries=0)
        explain, streams = client._explain, []
        client._explain = lambda exc, request: (explain(exc, request), streams[0].abort())  # (the abort arrives)
        streams.append(client.streaming_response(USER))
        with pytest.raises(TransportError) as caught:
            list(streams[0])
    assert caught.value.aborted is True
    cause = caught.value.__cause__
    assert isinstance(cause, UpstreamError) and str(cause).startswith("invalid key *** (")
    assert key not in _traceback(caught.value)


def test_an_mcp_abort_that_wins_over_an_echoing_error_chains_it_scrubbed(monkeypatch):
    """As above for an MCP server: the error answer (echoing the URL's token and the caller's header) read as
    the caller aborts is the 'aborted' error's cause, scrubbed."""
    from agenthub.mcp import http as mcp_http

    opened = mcp_http._transport.open_stream

    def open_stream(*args, **kwargs):
        body = opened(*args, **kwargs)
        body_open = body.open

        def open_then_abort(*more):
            try:
                return body_open(*more)
            except UpstreamError:
                kwargs["watch"].stop("abort")  # (the caller's abort arrives as the error answer was read)
                raise

        body.open = open_then_abort
        return body

    monkeypatch.setattr(mcp_http._transport, "open_stream", open_stream)
    header = "hdr-url-secret-M3n4B5v6"

    def echo(request):
        body = json.dumps({"error": {"message": "refused {} {}".format(request.path, request.headers.get("x-team")),
                                     "type": "authentication_error"}}).encode()
        return [status(401, {"Content-Type": "application/json"}, framing="length"), send(body)]

    with FaultServer(default=echo) as server:
        with pytest.raises(TransportError) as caught:
            mcp.connect(server.url + "/mcp?token=" + TOKEN, headers={"X-Team": header}, timeout=10)
    assert caught.value.aborted is True
    assert str(caught.value.__cause__).startswith("refused /mcp?token=*** *** (")
    text = _traceback(caught.value)
    assert TOKEN not in text and header not in text


def test_a_stdio_server_given_the_whole_environment_is_scrubbed_of_its_secrets(monkeypatch):
    """inherit_env=True hands the server every variable: one whose log prints a key (or a URL's password) before
    it exits is shown with ``***`` in the error, as env= values are."""
    import sys

    monkeypatch.setenv("S8_API_KEY", "sk-env-secret-in-stderr-12345")
    monkeypatch.setenv("S8_DATABASE", "postgres://app:" + PASSWORD + "@db.example/x")
    code = ("import os, sys; sys.stderr.write('boot failed: key=' + os.environ['S8_API_KEY'] + ' db='"
            " + os.environ['S8_DATABASE'] + '\\n'); sys.exit(3)")
    with pytest.raises(TransportError) as caught:
        mcp.connect([sys.executable, "-c", code], timeout=30, inherit_env=True)
    assert str(caught.value).endswith("its log ends with: boot failed: key=*** db=postgres://***@db.example/x")
    text = _traceback(caught.value)
    assert "sk-env-secret-in-stderr-12345" not in text and PASSWORD not in text


def _proxy_env(monkeypatch, proxy):
    for name in ("NO_PROXY", "no_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy", "http_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", proxy)


def test_a_proxy_echoing_its_credentials_is_scrubbed(monkeypatch):
    """An http:// request through a proxy of the environment carries ``Proxy-Authorization: Basic
    base64(user:password)``; a proxy whose error page repeats it shows ``***``."""
    def echo(request):
        body = "proxy refused {} for {}".format(request.headers.get("proxy-authorization"), request.path).encode()
        return [status(407, {"Content-Type": "text/plain"}, framing="length"), send(body)]

    with FaultServer(default=echo) as proxy:
        _proxy_env(monkeypatch, proxy.url.replace("://", "://user:" + PASSWORD + "@"))
        client = AutoLLMClient("m", api_key="sk-header-key-0123456789", client_type="openai-chat", max_retries=0,
                               base_url="http://api.example.com/v1")
        with pytest.raises(UpstreamError) as caught:
            list(client.streaming_response(USER))
        assert proxy.requests[0].path == "http://api.example.com/v1/chat/completions"  # (it went to the proxy)
    assert str(caught.value).startswith("proxy refused Basic *** for http://api.example.com/v1/chat/completions")
    assert PASSWORD not in _traceback(caught.value)
    assert "dXNlcjpwdy11cmwtc2VjcmV0LVoxeDJDM3Y0" not in _traceback(caught.value)  # base64 of user:PASSWORD


def test_a_malformed_proxy_url_is_named_without_its_password(monkeypatch):
    _proxy_env(monkeypatch, "http://user:{}@127.0.0.1:99999".format(PASSWORD))  # a port out of range
    client = AutoLLMClient("m", api_key="sk-header-key-0123456789", client_type="openai-chat", max_retries=0,
                           base_url="http://api.example.com/v1")
    with pytest.raises(TransportError) as caught:
        list(client.streaming_response(USER))
    assert str(caught.value) == ("openai-chat: POST http://api.example.com/v1/chat/completions failed: the URL is "
                                 "not one requests can send to (Failed to parse: http://***@127.0.0.1:99999)")
    assert PASSWORD not in _traceback(caught.value)


def test_the_sent_request_a_hook_sees_shows_no_url_credential():
    from agenthub.attempts import AttemptHook

    seen = []

    class Hook(AttemptHook):
        def on_error(self, call, error):
            seen.append(repr(call.sent))

    port = _refused_port()
    client = AutoLLMClient("m", api_key="sk-header-key-0123456789", client_type="openai-chat", max_retries=0,
                           hooks=[Hook()],
                           base_url="http://alice:{}@127.0.0.1:{}/v1?key={}".format(PASSWORD, port, TOKEN))
    with pytest.raises(TransportError):
        list(client.streaming_response(USER))
    assert seen == ["HttpRequest(method='POST', url='http://127.0.0.1:{}/v1/chat/completions', stream=True)".format(port)]


def test_the_headers_and_auth_of_a_callers_session_are_scrubbed():
    """``session=`` with headers of its own (a gateway's key) and ``auth``: requests adds both to every request;
    a server echoing the request's headers shows ``***`` for them, as for default_headers."""
    import requests

    def echo(request):
        body = json.dumps({"error": {"message": "gateway {} {}".format(request.headers.get("x-gateway-key"),
                                                                        request.headers.get("authorization")),
                                     "type": "invalid_request_error"}}).encode()
        return [status(400, {"Content-Type": "application/json"}, framing="length"), send(body)]

    session = requests.Session()
    session.headers["X-Gateway-Key"] = "gw-session-secret-123456"
    session.auth = ("bob", PASSWORD)
    try:
        # (x-api-key at a gateway: requests sends the session's Basic auth)
        with FaultServer(default=echo) as server:
            client = AutoLLMClient("claude-x", api_key="sk-ant-0123456789abc", client_type="anthropic",
                                   base_url=server.url, session=session, max_retries=0)
            with pytest.raises(UpstreamError) as caught:
                list(client.streaming_response(USER))
    finally:
        session.close()
    assert str(caught.value).startswith("gateway *** Basic *** (")
    text = _traceback(caught.value)
    assert "gw-session-secret-123456" not in text and PASSWORD not in text
    assert "Ym9iOnB3LXVybC1zZWNyZXQtWjF4MkMzdjQ=" not in text  # base64 of bob:PASSWORD


def test_agenthub_chat_names_a_clashing_mcp_server_without_its_credentials(monkeypatch):
    from agenthub.apps.chat import _check_tool_names

    class Server(object):
        name = None

        def list_tools(self):
            return [{"name": "search"}]

    monkeypatch.setenv("S8_GITHUB_TOKEN", "ghp-env-secret-0123456789")
    specs = ["https://one.example/mcp?token=" + TOKEN, "npx -y server-github --token ghp-env-secret-0123456789"]
    with pytest.raises(ConfigError) as caught:
        _check_tool_names([], [], specs, [Server(), Server()])
    assert str(caught.value) == (
        "two tools are named 'search': one from --mcp 'https://one.example/mcp?token=***' and one from --mcp "
        "'npx -y server-github --token ***'; name a server to prefix its tools (NAME__search): --mcp "
        "NAME=npx -y server-github --token ***")


@pytest.mark.parametrize("spec", [
    "redis:/:{}@localhost:6379",  # one slash
    "redis:{}@localhost",
    "redis //:{}@localhost",  # not a scheme
    "sqlite://:{}@host/x",  # a host in an SQLite URL
])
def test_a_malformed_store_url_is_named_without_its_password(spec):
    from agenthub.stores import open_store

    with pytest.raises(ConfigError) as caught:
        open_store(spec.format(PASSWORD))
    assert str(caught.value).startswith("store '") and "***@" in str(caught.value)
    assert PASSWORD not in _traceback(caught.value)


@pytest.mark.parametrize("as_json", [False, True])
def test_agenthub_models_shows_an_endpoint_variable_without_its_credentials(as_json):
    import io

    from agenthub.apps.terminal import print_models

    out = io.StringIO()
    print_models(out, as_json=as_json, routes=True,
                 environ={"OPENAI_BASE_URL": "https://alice:{}@gw.example/v1?key={}".format(PASSWORD, TOKEN)})
    text = out.getvalue()
    assert "https://***@gw.example/v1?key=***" in text
    assert PASSWORD not in text and TOKEN not in text


def test_an_mcp_servers_own_credential_in_its_tool_result_never_reaches_the_model():
    """A stdio server given a token in env= whose tool answers with its environment: the model gets the result
    with the token as ``***`` (the result stays a result), and so do the run's messages."""
    from agent_streams import chat_calls, chat_text
    from mcp_support import stdio_command
    from sse_server import Answer, SSEServer

    env = {"FAKE_TOKEN": TOKEN, "FAKE_ANNOTATIONS": json.dumps({"env": {}})}  # (lists a tool "env")
    with mcp.connect(stdio_command("modern", "annotated"), timeout=30, env=env) as tools, SSEServer() as server:
        server.answers += [Answer([chat_calls([("call_1", "env", "{}")])]), Answer([chat_text("Done.")])]
        client = AutoLLMClient("gpt-4o-mini", api_key="sk-test-mcp-runner-0001", base_url=server.url + "/v1",
                               client_type="openai-chat", max_retries=0)
        result = client.run([{"role": "user", "content_items": [{"type": "text", "text": "env?"}]}],
                            tools=[tools]).result()
        assert TOKEN in json.loads(tools.call_tool("env", {})["text"]).values()  # (the server does answer it)
        sent = json.dumps(server.requests[1]["body"])
    item = result.messages[1]["content_items"][0]
    assert "is_error" not in item and json.loads(item["text"])["FAKE_TOKEN"] == "***"
    assert TOKEN not in sent and TOKEN not in json.dumps(result.messages)


@pytest.mark.parametrize("scheme", ["http", "https"])
def test_a_proxy_that_refuses_is_named_as_the_failing_hop_without_its_password(monkeypatch, scheme):
    """A proxy of the environment that nothing listens on: the error blames the proxy (not the target, which
    was never reached) and shows the proxy's address with its user:password as ***."""
    for name in ("NO_PROXY", "no_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy", "http_proxy",
                 "HTTP_PROXY"):
        monkeypatch.delenv(name, raising=False)
    port = _refused_port()
    monkeypatch.setenv(scheme.upper() + "_PROXY", "http://user:{}@127.0.0.1:{}".format(PASSWORD, port))
    client = AutoLLMClient("m", api_key="sk-header-key-0123456789", client_type="openai-chat", max_retries=0,
                           base_url=scheme + "://api.example.com/v1")
    with pytest.raises(TransportError) as caught:
        list(client.streaming_response(USER))
    assert str(caught.value) == (
        "openai-chat: POST {}://api.example.com/v1/chat/completions failed: connection refused by the proxy "
        "http://***@127.0.0.1:{}: nothing listens there (is the proxy running, is its port right?)".format(scheme, port))
    assert caught.value.retryable is True
    assert PASSWORD not in _traceback(caught.value)


def test_a_base_url_query_key_is_not_in_urllib3s_debug_log(caplog):
    caplog.set_level(logging.DEBUG)
    with FaultServer(default=_echo_path) as server:
        client = AutoLLMClient("m", api_key="sk-header-key-0123456789", client_type="openai-chat", max_retries=0,
                               base_url=server.url + "/v1?key=" + TOKEN + "&code=" + PASSWORD)
        with pytest.raises(UpstreamError):
            list(client.streaming_response(USER))
    lines = [r.getMessage() for r in caplog.records if r.name == "urllib3.connectionpool" and "POST" in r.getMessage()]
    assert lines == ['{} "POST /v1/chat/completions?key=***&code=*** HTTP/1.1" 401 {}'.format(
        server.url, lines[0].rsplit(" ", 1)[1])]
    assert TOKEN not in caplog.text and PASSWORD not in caplog.text
