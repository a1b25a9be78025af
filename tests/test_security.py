"""Keys stay secret (repr, errors, logs, trace files, URLs), TLS is verified, trace ids stay inside
the cache directory, and no error dumps a whole request body or an inline image."""

import base64
import glob
import importlib
import io
import logging
import os
import pickle
import re
import threading
import traceback

import pytest

import agenthub
from agenthub import AgentHubError, AutoLLMClient, ConfigError, TransportError, UpstreamError
from agenthub.client import Timeout
from faultserver import (FaultServer, chat_chunk, chat_stream, drop, hang, send, sse, status,
                         within)
from faultserver import fast_backoff  # noqa: F401  (fixtures)

KEY = "sk-test-SECRET-9f8e7d6c5b4a3210zyxw"
SSE = {"Content-Type": "text/event-stream"}
USER = {"role": "user", "content_items": [{"type": "text", "text": "hi"}]}
CLIENT_TYPES = {"openai_chat": "openai-chat", "anthropic": "anthropic", "gemini": "gemini",
                "openai_responses": "openai-responses"}



def echo_headers(request):
    """An error answer that repeats every request header back (as some proxies do)."""
    import json

    message = "denied for " + json.dumps(request.headers)
    return [status(401, {}, "length"), send(json.dumps({"error": {"message": message, "type": "auth"}}))]


def echo_in_stream(request):
    import json

    return [status(200, SSE), send(chat_chunk("x")),
            send(sse({"error": {"message": "bad " + json.dumps(request.headers), "type": "server_error"}}))]


def everything_about(error):
    """Every text an error shows: str, repr, args, fields, the formatted traceback with its causes."""
    parts = [str(error), repr(error), repr(error.args), repr(vars(error))]
    parts.extend(traceback.format_exception(type(error), error, error.__traceback__))
    try:
        parts.append(repr(vars(pickle.loads(pickle.dumps(error)))))
    except Exception as exc:  # pragma: no cover - reported below
        parts.append("unpicklable: {}".format(exc))
    return "\n".join(parts)


@within(30)
def test_the_key_appears_nowhere(tmp_path, monkeypatch):
    """Drive every kind of outcome with a key set; scan errors, logs, reprs and trace files for it."""
    monkeypatch.setenv("AGENTHUB_CACHE_DIR", str(tmp_path))
    log = io.StringIO()
    handler = logging.StreamHandler(log)
    handler.setLevel(logging.DEBUG)
    handler.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))
    root = logging.getLogger()
    old_level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    seen = []
    try:
        with FaultServer() as server:
            scripts = [
                echo_headers,
                echo_in_stream,
                [status(500, {}, "length"), send(b"oops")],
                [status(200, SSE), send(chat_chunk("x")), hang(3)],
                [status(200, SSE), send(chat_chunk("x")), drop()],
                [status(200, SSE), send(b"data: {broken\n\n")],
                [status(429, {"Retry-After": "999"}, "length"), send(b"{}")],
            ]
            for script in scripts:
                server.default = script
                client = AutoLLMClient("test-model", api_key=KEY, client_type="openai-chat",
                                       base_url=server.url + "/v1", timeout=Timeout(1, 0.3), max_retries=1)
                seen.append(repr(client))
                seen.append(str(client))
                seen.append(repr(vars(client)))
                with pytest.raises(AgentHubError) as info:
                    list(client.streaming_response_stateful(USER, {"trace_id": "run/1"}))
                seen.append(everything_about(info.value))
            # an abort, a success with a trace file, and a refused connection
            server.default = [status(200, SSE), send(chat_chunk("x")), hang(3)]
            client = AutoLLMClient("test-model", api_key=KEY, client_type="openai-chat", base_url=server.url + "/v1")
            stream = client.streaming_response([USER])
            next(stream)
            threading.Timer(0.05, stream.abort).start()
            with pytest.raises(TransportError) as info:
                list(stream)
            seen.append(everything_about(info.value))
            server.default = [status(200, SSE), send(chat_stream("fine"))]
            list(client.streaming_response_stateful(USER, {"trace_id": "run/2"}))
            seen.append(repr(client.get_history()))
            for request in server.requests:  # the key only ever travelled in a header, never in the URL
                assert KEY not in request.path
                assert KEY in request.headers.get("authorization", "")
        client = AutoLLMClient("test-model", api_key=KEY, client_type="openai-chat",
                               base_url="http://127.0.0.1:9/v1", timeout=(0.5, 0.5), max_retries=0)
        with pytest.raises(TransportError) as info:
            list(client.streaming_response([USER]))
        seen.append(everything_about(info.value))
    finally:
        root.removeHandler(handler)
        root.setLevel(old_level)
    seen.append(log.getvalue())
    files = [path for path in glob.glob(os.path.join(str(tmp_path), "**", "*"), recursive=True) if os.path.isfile(path)]
    assert any(path.endswith(".json") for path in files) and any(path.endswith(".txt") for path in files)
    for path in files:
        with open(path, "rb") as handle:
            seen.append(handle.read().decode("utf-8", "replace"))
    everything = "\n".join(seen)
    assert "retrying" in everything  # the logs were captured
    assert "***" in everything  # an echoed key was found and masked
    for secret in (KEY, KEY[3:], KEY[-16:]):
        assert secret not in everything


@pytest.mark.parametrize("protocol", sorted(CLIENT_TYPES))
def test_keys_travel_in_headers_never_in_the_url(protocol):
    try:
        module = importlib.import_module("agenthub.providers." + protocol)
    except ImportError:
        pytest.skip(protocol + " is not written yet")
    from agenthub.providers._common import Endpoint

    endpoint = Endpoint(CLIENT_TYPES[protocol], "https://example.invalid", KEY)
    from conftest import sent

    request = sent(module.build_request(endpoint, "some-model", [USER], {}), endpoint)
    assert KEY not in request.url
    assert any(KEY in value for value in request.headers.values())
    assert KEY not in repr(request) and KEY not in repr(endpoint)
    client = AutoLLMClient("some-model", api_key=KEY, client_type=CLIENT_TYPES[protocol],
                           base_url="https://example.invalid")
    assert KEY not in repr(client) and KEY not in str(client)


def test_tls_verification_is_on_by_default():
    from agenthub import transport

    session = transport.new_session()
    assert session.verify is True
    client = AutoLLMClient("m", api_key=KEY, client_type="openai-chat", base_url="https://example.invalid/v1")
    assert client._get_session().verify is True
    package = os.path.dirname(agenthub.__file__)
    for path in glob.glob(os.path.join(package, "**", "*.py"), recursive=True):
        with open(path, encoding="utf-8") as handle:
            source = handle.read()
        assert not re.search(r"verify\s*=\s*False", source), path
        assert "CERT_NONE" not in source and "_create_unverified_context" not in source, path


@within(10)
def test_a_self_signed_server_is_refused():
    """A TLS server whose certificate nobody vouches for: TransportError, nothing is read."""
    import socket
    import ssl
    import subprocess
    import tempfile

    folder = tempfile.mkdtemp()
    cert, key = os.path.join(folder, "c.pem"), os.path.join(folder, "k.pem")
    try:
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert,
                        "-days", "1", "-subj", "/CN=127.0.0.1"], check=True, capture_output=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        pytest.skip("openssl is not available to make a certificate")
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    port = listener.getsockname()[1]
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)

    def serve():
        listener.settimeout(5)
        try:
            conn, _ = listener.accept()
            with context.wrap_socket(conn, server_side=True) as tls:
                tls.recv(1024)
        except (OSError, ssl.SSLError):
            pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    client = AutoLLMClient("m", api_key=KEY, client_type="openai-chat", base_url="https://127.0.0.1:{}/v1".format(port),
                           max_retries=0, timeout=(2, 2))
    with pytest.raises(TransportError) as info:
        list(client.streaming_response([USER]))
    assert KEY not in everything_about(info.value)
    thread.join(5)
    listener.close()


@pytest.mark.parametrize("trace_id", ["../escape", "a/../../b", "/etc/passwd", "..", "a/./b", "", " ", "a//b",
                                      "C:\\windows", "a\x00b", "\\\\server\\share"])
def test_trace_id_traversal_is_refused_before_sending(trace_id, tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTHUB_CACHE_DIR", str(tmp_path))
    client = AutoLLMClient("m", client_type="openai-chat", base_url="http://127.0.0.1:9/v1", max_retries=0)
    with pytest.raises(ConfigError):
        client.streaming_response([USER], {"trace_id": trace_id})
    with pytest.raises(ConfigError):
        client.streaming_response_stateful(USER, {"trace_id": trace_id})
    assert os.listdir(str(tmp_path)) == []


@within(10)
def test_errors_never_dump_the_request_body_or_an_image():
    """The server echoes the whole request (with a 1 MB image) in its error: the error stays short."""
    image = base64.b64encode(os.urandom(750000)).decode("ascii")

    def echo_body(request):
        return [status(400, {}, "length"), send(b'{"error": {"message": "invalid request: ' +
                                                request.body.replace(b'"', b"'") + b'", "type": "invalid"}}')]

    message = {"role": "user", "content_items": [
        {"type": "text", "text": "look"},
        {"type": "image_url", "image_url": "data:image/png;base64," + image}]}
    with FaultServer(default=echo_body) as server:
        client = AutoLLMClient("m", client_type="openai-chat", base_url=server.url + "/v1", max_retries=0)
        with pytest.raises(UpstreamError) as info:
            list(client.streaming_response([message]))
        # garbage answers too: HTML, binary
        server.default = [status(502, {}, "length"), send(b"<html>" + image.encode() + b"</html>")]
        with pytest.raises(UpstreamError) as other:
            list(client.streaming_response([message]))
    for error in (info.value, other.value):
        text = everything_about(error)
        assert len(str(error)) < 3000
        assert image[1000:1400] not in text
    # a malformed image is refused before sending, without quoting it
    broken = {"role": "user", "content_items": [{"type": "image_url", "image_url": "data:image/png;base64," +
                                                 image[:-3] + "!!!"}]}
    with pytest.raises(ConfigError) as refused:
        client.streaming_response([broken])
    assert len(str(refused.value)) < 500
    with pytest.raises(ConfigError) as refused:
        client.streaming_response([{"role": "user", "content_items": [
            {"type": "inline_data", "data": image, "mime_type": "image/png"}]}])
    assert len(str(refused.value)) < 500


def test_pickled_clients_carry_the_key_but_never_show_it():
    client = AutoLLMClient("m", api_key=KEY, client_type="openai-chat", base_url="https://example.invalid/v1")
    clone = pickle.loads(pickle.dumps(client))
    assert clone._endpoint.api_key == KEY  # a worker process needs it to call the provider
    assert KEY not in repr(clone) and KEY not in repr(vars(clone))
