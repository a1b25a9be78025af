"""Issue 12 item 3: keys and header values with CR/LF or invisible characters, exceptions that carry a
secret, and errors that happened before anything was sent."""

import dataclasses
import logging
import traceback
import types

import pytest

from agenthub import AutoLLMClient, ConfigError, Timeout, TransportError
from agenthub.providers._common import HttpRequest
from agenthub import transport

from faultserver import FaultServer
from faultserver import fast_backoff  # noqa: F401  (fixtures)

KEY = "sk-proj-REALKEY-0123456789abcdef"
USER = [{"role": "user", "content_items": [{"type": "text", "text": "hi"}]}]



BAD = [
    (KEY + "\r", "carriage return"), (KEY + "\r\n", "carriage return"), (KEY + "\n", "line feed"),
    (KEY[:5] + "\u200b" + KEY[5:], "zero-width space"), ("\ufeff" + KEY, "byte order mark"),
    (KEY + "\x00", "NUL"), (KEY[:4] + "\x1b" + KEY[4:], "control character"), (KEY + "\u00a0", "no-break space"),
    (" " + KEY, "white space"), (KEY + " ", "white space"), (KEY + "\t", "tab"), (KEY + "\u4e2d", "Latin-1"),
]


@pytest.mark.parametrize("key, problem", BAD, ids=[p + str(i) for i, (_, p) in enumerate(BAD)])
def test_a_key_with_a_stray_character_is_a_config_error_at_construction(key, problem):
    with pytest.raises(ConfigError, match=problem) as caught:
        AutoLLMClient("m", api_key=key, base_url="http://127.0.0.1:9/v1", client_type="openai-chat")
    shown = str(caught.value) + repr(caught.value) + "".join(traceback.format_exception(
        type(caught.value), caught.value, caught.value.__traceback__))
    assert "REALKEY" not in shown
    assert caught.value.__cause__ is None


def test_a_key_from_a_crlf_env_file_is_a_config_error(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY + "\r")
    with pytest.raises(ConfigError, match="carriage return.*Windows line ends") as caught:
        AutoLLMClient("gpt-5.5")
    assert "REALKEY" not in str(caught.value) and "environment" in str(caught.value)


@pytest.mark.parametrize("headers, problem", [
    ({"X-Gateway-Key": "gw-secret-value\r\nX-Injected: 1"}, "carriage return"),
    ({"X-Gateway-Key": "gw-secret\u200bvalue"}, "zero-width"),
    ({"X Bad Name": "v"}, "not a valid header name"),
    ({"X-Bad:Name": "v"}, "not a valid header name"),
    ({"": "v"}, "not a valid header name"),
])
def test_a_default_header_with_a_stray_character_is_a_config_error(headers, problem):
    with pytest.raises(ConfigError, match=problem) as caught:
        AutoLLMClient("m", api_key=KEY, base_url="http://127.0.0.1:9/v1", client_type="openai-chat",
                      default_headers=headers)
    assert "gw-secret" not in str(caught.value)



def test_a_header_requests_refuses_is_not_chained_not_retried_and_not_shown(monkeypatch, caplog):
    """A token with a stray CRLF (from a token callable): requests refuses the header and puts its value
    in its exception; the library must not chain it, nor retry what was never sent."""
    token = "tok-SECRETTOKEN-0123456789\r\n"
    with FaultServer() as server:
        client = AutoLLMClient("m", api_key=KEY, base_url=server.url + "/v1", client_type="openai-chat",
                               max_retries=2, timeout=Timeout(connect=2, read=2))
        original = client._host.encode
        monkeypatch.setattr(client, "_host", types.SimpleNamespace(encode=lambda request, endpoint: _with_header(
            original(request, endpoint), token)))
        with caplog.at_level(logging.DEBUG, logger="agenthub"), pytest.raises(TransportError) as caught:
            list(client.streaming_response(USER))
        assert server.requests == []
    error = caught.value
    assert error.retryable is False and "nothing was sent" in str(error)
    assert error.__cause__ is None and (error.__context__ is None or error.__suppress_context__)
    printed = "".join(traceback.format_exception(type(error), error, error.__traceback__))
    assert "SECRETTOKEN" not in printed and "SECRETTOKEN" not in repr(error)
    assert not [r for r in caplog.records if "retrying" in r.getMessage()]


def _with_header(request, token):
    headers = dict(request.headers)
    headers["Authorization"] = "Bearer " + token
    return dataclasses.replace(request, headers=headers)


def test_a_safe_cause_is_still_chained():
    """A refused connection carries no secret: it stays the cause (for debugging) and is retried."""
    client = AutoLLMClient("m", api_key=KEY, base_url="http://127.0.0.1:9/v1", client_type="openai-chat",
                           max_retries=0)
    with pytest.raises(TransportError) as caught:
        list(client.streaming_response(USER))
    assert caught.value.__cause__ is not None and caught.value.retryable is True


def test_a_cause_that_echoes_a_secret_is_dropped():
    request = HttpRequest("POST", "http://127.0.0.1:9/v1/x", {"Authorization": "Bearer " + KEY}, None)
    assert transport._safe_cause(OSError("connect failed for " + KEY), request) is None
    inner = OSError("deep " + KEY)
    outer = OSError("outer")
    outer.__cause__ = inner
    assert transport._safe_cause(outer, request) is None
    plain = OSError("refused")
    assert transport._safe_cause(plain, request) is plain


def test_a_netrc_credential_is_never_sent_nor_shown(monkeypatch, tmp_path, caplog):
    """requests reads ~/.netrc when a request carries no Authorization of its own (Anthropic's x-api-key,
    Gemini's x-goog-api-key): it added ``Authorization: Basic <netrc login:password>``, a credential the
    caller never gave agenthub and which no scrub list held, so a server echoing it put it in the error,
    the log, the trace and the recording.  agenthub's requests do not read ~/.netrc (the proxies of the
    environment still apply)."""
    import base64
    import json
    import os

    from agenthub.testing import record_session
    from faultserver import send, status

    home = tmp_path / "home"
    home.mkdir()
    netrc = home / ".netrc"
    netrc.write_text("machine 127.0.0.1 login netrc-user password netrc-pass-5f3a9\n")
    os.chmod(str(netrc), 0o600)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("NETRC", raising=False)
    basic = base64.b64encode(b"netrc-user:netrc-pass-5f3a9").decode("ascii")
    secrets = ("netrc-pass-5f3a9", basic)

    def echo(request):  # an error page that repeats the Authorization it was sent
        said = request.headers.get("authorization", "none")
        body = json.dumps({"type": "error", "error": {"type": "authentication_error", "message": "got " + said}})
        return [status(401, {"Content-Type": "application/json"}, "length"), send(body)]

    cassette = tmp_path / "cassette"
    session = record_session(str(cassette))
    with FaultServer(default=echo) as server:
        client = AutoLLMClient("claude-test", client_type="anthropic", base_url=server.url, api_key="sk-ant-key-1",
                               session=session, max_retries=0)
        caplog.set_level(logging.DEBUG, logger="agenthub")
        with pytest.raises(Exception) as info:
            list(client.streaming_response([{"role": "user", "content_items": [{"type": "text", "text": "hi"}]}],
                                           {"trace_id": "netrc-check"}))
        session.close()
    assert [r.headers.get("authorization") for r in server.requests] == [None]
    assert str(info.value).startswith("got none; ")
    shown = [str(info.value), repr(info.value), "".join(traceback.format_exception(
        type(info.value), info.value, info.value.__traceback__)), caplog.text]
    for folder in (str(cassette), os.environ["AGENTHUB_HOME"]):
        for root, _, names in os.walk(folder):
            for name in names:
                with open(os.path.join(root, name), "rb") as handle:
                    shown.append(handle.read().decode("utf-8", "replace"))
    assert any("netrc-check" in text or "got none" in text for text in shown[4:])  # the trace, the recording
    assert not [text for text in shown if any(secret in text for secret in secrets)]
