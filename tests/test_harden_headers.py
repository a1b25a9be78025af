"""Issue 12 item 6: every header the caller supplied and every credential header is secret in errors,
logs, traces and recordings; user:password@ in base_url never shows."""

import json
import logging
import os

import pytest
import requests

from agenthub import AutoLLMClient, TransportError, UpstreamError
from agenthub._redact import CUT_MARKER, redact_headers, redact_url, scrub_text, secret_values
from agenthub.testing import record_session

from faultserver import FaultServer, send, status
from faultserver import fast_backoff  # noqa: F401  (fixtures)

KEY = "sk-proj-the-real-key-0123456789"
HEADERS = {"Helicone-Auth": "Bearer hel-sk-helicone-secret-42", "X-Auth": "xauth-plain-secret-77",
           "Cookie": "session=cookie-secret-value-99; theme=dark", "X-Custom-Route": "customer-route-5566",
           "cf-aig-authorization": "Bearer cf-gateway-secret-31"}
SECRETS = ["sk-proj-the-real-key-0123456789", "hel-sk-helicone-secret-42", "xauth-plain-secret-77",
           "cookie-secret-value-99", "customer-route-5566", "cf-gateway-secret-31"]
USER = [{"role": "user", "content_items": [{"type": "text", "text": "hi"}]}]



def _echo(code):
    """A server whose answer repeats every request header (as some gateways' error pages do)."""
    def script(request):
        echoed = "; ".join("{}={}".format(k, v) for k, v in sorted(request.headers.items()))
        body = json.dumps({"error": {"message": "bad request, headers: " + echoed, "type": "invalid_request_error",
                                     "param": echoed}}).encode()
        return [status(code, {"Content-Type": "application/json", "X-Echo": echoed}, framing="length"), send(body)]
    return script


def _everything(error):
    parts = [str(error), repr(error), repr(error.args)]
    parts.extend(repr(v) for v in vars(error).values())
    return "\n".join(parts)


def test_gateway_and_caller_headers_are_scrubbed_from_errors(caplog):
    with FaultServer(default=_echo(400)) as server:
        client = AutoLLMClient("m", api_key=KEY, base_url=server.url + "/v1", client_type="openai-chat",
                               default_headers=HEADERS)
        with caplog.at_level(logging.DEBUG, logger="agenthub"), pytest.raises(UpstreamError) as caught:
            list(client.streaming_response(USER))
        assert server.requests[0].headers["helicone-auth"] == HEADERS["Helicone-Auth"]  # sent, as asked
    text = _everything(caught.value) + "\n".join(r.getMessage() for r in caplog.records)
    assert "bad request, headers:" in text
    for secret in SECRETS:
        assert secret not in text, secret


def test_a_retried_error_logs_no_header(caplog):
    with FaultServer(default=_echo(503)) as server:
        client = AutoLLMClient("m", api_key=KEY, base_url=server.url + "/v1", client_type="openai-chat",
                               default_headers=HEADERS, max_retries=1)
        with caplog.at_level(logging.DEBUG, logger="agenthub"), pytest.raises(UpstreamError) as caught:
            list(client.streaming_response(USER))
        assert len(server.requests) == 2
    text = _everything(caught.value) + "\n".join(r.getMessage() for r in caplog.records)
    for secret in SECRETS:
        assert secret not in text, secret


@pytest.mark.parametrize("code", [503, 200])
def test_a_request_id_made_of_a_credential_is_not_logged(caplog, code):
    """The DEBUG record of an attempt showed the server's request id as it came: a gateway that makes it of what
    it was sent (here the X-Auth value) put the credential in the log, the error's request_id being scrubbed."""
    def script(request):
        head = {"Content-Type": "application/json" if code != 200 else "text/event-stream",
                "X-Request-Id": "req-" + request.headers.get("x-auth", "")}
        if code != 200:
            return [status(code, head, framing="length"),
                    send(json.dumps({"error": {"message": "busy", "type": "overloaded"}}).encode())]
        return [status(200, head), send(b'data: {"choices": [{"index": 0, "delta": {"content": "ok"}}]}\n\n'
                                        b"data: [DONE]\n\n")]

    with FaultServer(default=script) as server:
        client = AutoLLMClient("m", api_key=KEY, base_url=server.url + "/v1", client_type="openai-chat",
                               default_headers=HEADERS, max_retries=0)
        with caplog.at_level(logging.DEBUG, logger="agenthub"):
            if code == 200:
                list(client.streaming_response(USER))
            else:
                with pytest.raises(UpstreamError) as caught:
                    list(client.streaming_response(USER))
                assert caught.value.request_id == "req-***"
    [record] = [r.getMessage() for r in caplog.records if r.getMessage().startswith("HTTP POST")]
    assert "status={} request_id=req-*** attempt=1".format(code) in record
    assert "xauth-plain-secret-77" not in "\n".join(r.getMessage() for r in caplog.records)


def test_recordings_hold_no_header_value(tmp_path):
    folder = str(tmp_path / "cassette")

    def script(request):
        echoed = json.dumps(request.headers).encode()
        return [status(200, {"Content-Type": "text/event-stream", "X-Request-Id": request.headers.get("x-auth", "")}),
                send(b"data: " + json.dumps({"choices": [{"index": 0, "delta": {"content": echoed.decode()}}]}).encode()
                     + b"\n\ndata: [DONE]\n\n")]

    with FaultServer(default=script) as server:
        client = AutoLLMClient("m", api_key=KEY, base_url=server.url + "/v1", client_type="openai-chat",
                               default_headers=HEADERS, session=record_session(folder))
        events = list(client.streaming_response(USER))
    assert "xauth-plain-secret-77" in json.dumps(events)  # the echo is real
    written = ""
    for name in sorted(os.listdir(folder)):
        with open(os.path.join(folder, name), encoding="utf-8") as handle:
            written += handle.read()
    for secret in SECRETS:
        assert secret not in written, secret
    assert "***" in written


def test_user_and_password_in_base_url_never_show():
    client = AutoLLMClient("m", api_key=KEY, base_url="http://alice:hunter2-password-x@127.0.0.1:9/v1",
                           client_type="openai-chat", max_retries=0)
    assert "hunter2-password-x" not in repr(client) and "alice" not in repr(client)
    assert repr(client) == "AutoLLMClient(model='m', client_type='openai-chat', base_url='http://***@127.0.0.1:9/v1')"
    assert "hunter2-password-x" not in repr(client._endpoint)
    with pytest.raises(TransportError) as caught:
        list(client.streaming_response(USER))  # port 9: connection refused
    assert "127.0.0.1:9" in str(caught.value)
    assert "hunter2-password-x" not in _everything(caught.value) and "alice:" not in str(caught.value)


def test_the_redaction_rules():
    assert redact_url("https://u:p@h.example/v1?x=1") == "https://***@h.example/v1?x=1"
    assert redact_url("https://h.example/v1") == "https://h.example/v1"
    headers = {"Content-Type": "application/json", "Authorization": "Bearer " + KEY, "X-Whatever": "abcdefghij"}
    assert redact_headers(headers) == {"Content-Type": "application/json", "Authorization": "***",
                                       "X-Whatever": "***"}
    assert redact_headers({"User-Agent": "my-secret-agent"}, caller=["user-agent"]) == {"User-Agent": "***"}
    found = secret_values({"Cookie": "a=cookie-secret-value-99; b=short", "Accept": "text/event-stream",
                           "Authorization": "AWS4-HMAC-SHA256 Credential=AKIAEXAMPLE123/20260101/us-east-1/"
                                            "bedrock/aws4_request, Signature=abcdef0123456789"})
    assert "cookie-secret-value-99" in found and "AKIAEXAMPLE123" in found and "abcdef0123456789" in found
    assert "text/event-stream" not in found and "short" not in found
    # a SigV4 scope's date, region, service and "aws4_request" are no credential (a recording scrubbed
    # "us-east-1" out of the answer's event-stream frames, which then failed their CRC on replay)
    assert not {"20260101", "us-east-1", "aws4_request"} & set(found)


def test_a_base_urls_user_and_password_never_replace_the_keys_authorization():
    """Round 3's B08: requests built ``Authorization: Basic`` from the base URL's user:password@ over the key's
    Bearer, so the key was never sent and nothing said so; the key's Authorization goes, the userinfo does not."""
    from sse_server import Answer, SSEServer
    from agent_streams import chat_text

    with SSEServer() as server:
        server.answers.append(Answer([chat_text("ok")]))
        base = server.url.replace("http://", "http://alice:hunter2-password-x@") + "/v1"
        client = AutoLLMClient("m", api_key=KEY, base_url=base, client_type="openai-chat", max_retries=0)
        list(client.streaming_response(USER))
    headers = {k.lower(): v for k, v in server.requests[0]["headers"].items()}
    assert headers["authorization"] == "Bearer " + KEY


def test_what_a_cut_left_of_a_secret_is_scrubbed_too():
    key = "sk-proj-SECRET-0123456789"
    secrets = [key, "Bearer " + key]
    # a whole one anywhere; the head of one ending a cut text or its head part, the tail of one starting its tail part
    assert scrub_text("a " + key + " b", secrets) == "a *** b"
    assert scrub_text("dump: " + key[:13] + CUT_MARKER + key[9:] + " end", secrets) == "dump: ***" + CUT_MARKER + "*** end"
    assert scrub_text("head" + CUT_MARKER + "Authorization: Bearer sk-proj-SEC", secrets) == "head" + CUT_MARKER \
        + "Authorization: ***"
    # not cut (no marker): a word that happens to begin a secret stays; nor are pieces of fewer than 4 characters
    assert scrub_text("expected Bearer", secrets) == "expected Bearer"
    assert scrub_text("x sk-" + CUT_MARKER + "ET-0123456789 y", secrets) == "x sk-" + CUT_MARKER + "*** y"
    assert scrub_text("a sk-" + CUT_MARKER + "789 b", secrets) == "a sk-" + CUT_MARKER + "789 b"
