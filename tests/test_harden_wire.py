"""Issue 12 items 2 and 8: what a server sends: BOMs, retry fields, SSE labelled JSON, a 407 on CONNECT,
gzip that expands without bound, one-document answers past the cap."""

import gzip
import json
import os
import socket
import subprocess
import sys
import threading
import zlib

import pytest

from agenthub import AutoLLMClient, RateLimitError, StreamProtocolError, Timeout, TransportError, UpstreamError
from agenthub import transport
from agenthub.sse import SSEDecoder

from faultserver import FaultServer, chat_chunk, chat_stream, error_body, send, status
from faultserver import fast_backoff  # noqa: F401  (fixtures)

HERE = os.path.dirname(os.path.abspath(__file__))
USER = [{"role": "user", "content_items": [{"type": "text", "text": "hi"}]}]
BOM = b"\xef\xbb\xbf"



def _client(server, **kwargs):
    kwargs.setdefault("timeout", Timeout(connect=2, read=5))
    return AutoLLMClient("m", api_key="sk-test-key-123456", base_url=server.url + "/v1", client_type="openai-chat",
                         **kwargs)


def _text(events):
    return "".join(i["text"] for e in events for i in e["content_items"] if i["type"] == "text")


# -- item 8 --------------------------------------------------------------------------------------


def test_an_error_body_opening_with_a_bom_is_understood():
    with FaultServer() as server:
        server.push([status(429, {"Content-Type": "application/json"}, framing="length"),
                     send(BOM + error_body("You exceeded your current quota", "insufficient_quota",
                                           "insufficient_quota"))])
        with pytest.raises(RateLimitError) as caught:
            list(_client(server).streaming_response(USER))
        assert len(server.requests) == 1  # a spent quota is not retried: the code was read through the BOM
    assert caught.value.error_type == "insufficient_quota" and caught.value.retryable is False
    assert "You exceeded your current quota" in str(caught.value)


def test_a_json_answer_opening_with_a_bom_is_read():
    document = {"id": "c1", "object": "chat.completion", "model": "m",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": "whole answer"},
                             "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}}
    with FaultServer() as server:
        server.push([status(200, {"Content-Type": "application/json"}, framing="length"),
                     send(BOM + json.dumps(document).encode())])
        events = list(_client(server).streaming_response(USER))
    assert _text(events) == "whole answer" and events[-1]["finish_reason"] == "stop"


def test_a_json_error_document_with_a_bom_in_a_2xx_answer_raises_what_it_names():
    with FaultServer() as server:
        server.push([status(200, {"Content-Type": "application/json"}, framing="length"),
                     send(BOM + error_body("bad model", "invalid_request_error", "model_not_found"))])
        with pytest.raises(UpstreamError) as caught:
            list(_client(server).streaming_response(USER))
    assert caught.value.error_type == "invalid_request_error" and "bad model" in str(caught.value)


@pytest.mark.parametrize("value", [b"abc", b"9" * 5000, "\u0663".encode(), b"-1", b"1e3", b" 10", b"99999999999"],
                         ids=["letters", "5000-digits", "arabic-digit", "negative", "exponent", "space", "11-digits"])
def test_a_retry_field_that_is_not_a_sane_number_is_ignored(value):
    body = b"retry: " + value + b"\n" + chat_chunk("Hel") + b"retry:" + value + b"\n\n" + chat_stream("lo")
    with FaultServer() as server:
        server.push([status(200, {"Content-Type": "text/event-stream"}), send(body)])
        events = list(_client(server).streaming_response(USER))
    assert _text(events) == "Hello"


def test_the_retry_field_rules():
    decoder = SSEDecoder()
    events = decoder.feed(b"retry: 3000\ndata: a\n\nretry: \xd9\xa3\ndata: b\n\nretry: " + b"9" * 11 + b"\ndata: c\n\n")
    assert [(e.data, e.retry) for e in events] == [("a", 3000), ("b", None), ("c", None)]


@pytest.mark.parametrize("prefix", [b"", BOM, b"\n", b": keep-alive\n\n"])
def test_sse_labelled_application_json_is_read_as_a_stream(prefix):
    with FaultServer() as server:
        server.push([status(200, {"Content-Type": "application/json"}), send(prefix + chat_chunk("Hel")),
                     send(chat_stream("lo"))])
        events = list(_client(server).streaming_response(USER))
    assert _text(events) == "Hello" and events[-1]["event_type"] == "stop"


class _Proxy(object):
    """An HTTP proxy that answers every CONNECT with 407 (or ``answer``)."""

    def __init__(self, answer=b"HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=\"p\"\r\n"):
        self.connects = []
        self._answer = answer
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(16)
        self._sock.settimeout(0.05)
        self.url = "http://127.0.0.1:{}".format(self._sock.getsockname()[1])
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self):
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except socket.timeout:
                continue
            with conn:
                conn.settimeout(2)
                head = b""
                while b"\r\n\r\n" not in head:
                    data = conn.recv(4096)
                    if not data:
                        break
                    head += data
                self.connects.append(head.split(b"\r\n", 1)[0])
                conn.sendall(self._answer + b"Content-Length: 0\r\n\r\n")

    def close(self):
        self._stop.set()
        self._thread.join(2)
        self._sock.close()


def _through_proxy(proxy, proxy_url, max_retries):
    """The TransportError of one call to https://llm.example.com through ``proxy`` (named ``proxy_url``)."""
    try:
        session = transport.new_session()
        session.trust_env = False
        session.proxies = {"https": proxy_url}
        client = AutoLLMClient("m", api_key="sk-test-key-123456", base_url="https://llm.example.com/v1",
                               client_type="openai-chat", session=session, max_retries=max_retries,
                               timeout=Timeout(connect=2, read=2))
        with pytest.raises(TransportError) as caught:
            list(client.streaming_response(USER))
    finally:
        proxy.close()
    return caught.value


def test_a_407_on_proxy_connect_is_not_retried():
    proxy = _Proxy()
    error = _through_proxy(proxy, proxy.url, max_retries=2)
    assert [c.rsplit(b" ", 1)[0] for c in proxy.connects] == [b"CONNECT llm.example.com:443"]
    assert error.retryable is False
    assert "407 Proxy Authentication Required" in str(error)


def test_a_proxy_that_will_not_tunnel_is_named_as_the_failing_hop():
    proxy = _Proxy(answer=b"HTTP/1.1 502 Bad Gateway\r\n")
    error = _through_proxy(proxy, proxy.url.replace("://", "://user:pw-proxy-secret@"), max_retries=0)
    assert str(error) == (
        "openai-chat: POST https://llm.example.com/v1/chat/completions failed: the proxy {} did not open a tunnel "
        "to llm.example.com (it answered 502 Bad Gateway)".format(proxy.url.replace("://", "://***@")))
    assert "pw-proxy-secret" not in str(error)


# -- item 2 --------------------------------------------------------------------------------------


def test_gzip_and_deflate_streams_still_decode():
    body = chat_stream("Hel", "lo")
    for coding, data in (("gzip", gzip.compress(body)), ("deflate", zlib.compress(body)),
                         ("deflate", zlib.compress(body)[2:-4])):
        with FaultServer() as server:
            server.push([status(200, {"Content-Type": "text/event-stream", "Content-Encoding": coding}),
                         send(data[:7]), send(data[7:])])
            events = list(_client(server).streaming_response(USER))
            assert server.requests[0].headers["accept-encoding"] == "gzip, deflate"
        assert _text(events) == "Hello", coding


def test_a_one_document_answer_past_the_cap_is_a_typed_error(monkeypatch):
    monkeypatch.setattr(transport, "MAX_DOCUMENT_BYTES", 100000)
    big = json.dumps({"object": "chat.completion", "choices": [{"index": 0, "message": {
        "role": "assistant", "content": "x" * 300000}, "finish_reason": "stop"}]}).encode()
    for headers, data in (({}, big), ({"Content-Encoding": "gzip"}, gzip.compress(big))):
        headers = dict(headers, **{"Content-Type": "application/json"})
        with FaultServer() as server:
            server.push([status(200, headers), send(data)])
            with pytest.raises(StreamProtocolError, match="larger than 100000 bytes") as caught:
                list(_client(server).streaming_response(USER))
            assert len(server.requests) == 1
        assert caught.value.retryable is False


BOMB = r"""
import json, resource, sys, threading, tracemalloc, zlib
# a hard ceiling: a regression fails here with MemoryError instead of taking the machine's memory
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
sys.path[:0] = [sys.argv[1], sys.argv[2]]
from faultserver import FaultServer, send, status
from agenthub import AutoLLMClient, StreamProtocolError, Timeout
wire = int(sys.argv[3])
kind = sys.argv[4]
# one HTTP chunk of gzip that inflates to ~1000 times its size with no newline in it (gzip members of
# 1 MB of "x" each, one after the other: a valid gzip body)
member = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
member = member.compress(b"x" * (1 << 20)) + member.flush()
data = member * (wire // len(member))
headers = {"Content-Type": "application/json" if kind == "document" else "text/event-stream",
           "Content-Encoding": "gzip"}
with FaultServer() as server:
    server.push([status(200, headers), send(data)])
    client = AutoLLMClient("m", api_key="sk-test-key-123456", base_url=server.url + "/v1", client_type="openai-chat",
                           max_line_bytes=8 << 20, timeout=Timeout(connect=5, read=20), max_retries=0)
    tracemalloc.start()
    try:
        list(client.streaming_response([{"role": "user", "content_items": [{"type": "text", "text": "hi"}]}]))
        outcome = "no error"
    except StreamProtocolError as exc:
        outcome = str(exc)
    peak = tracemalloc.get_traced_memory()[1]
print(json.dumps({"wire": len(data), "peak": peak, "rss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                  "outcome": outcome}))
"""


@pytest.mark.parametrize("kind", ["stream", "document"])
def test_a_gzip_bomb_stays_within_the_limits(kind):
    """About 1 MB of gzip that inflates to 1 GB with no newline: memory stays near the line limit
    (8 MB here) or the document cap (16 MB), not the inflated size."""
    result = subprocess.run([sys.executable, "-c", BOMB, os.path.dirname(HERE), HERE, str(1 << 20), kind],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    assert result.returncode == 0, result.stderr.decode()[-3000:]
    figures = json.loads(result.stdout.decode().strip().splitlines()[-1])
    assert 900000 < figures["wire"] < 1200000
    if kind == "stream":
        assert "longer than" in figures["outcome"] or "line" in figures["outcome"], figures
        assert figures["peak"] < 40 << 20, figures
    else:
        assert "larger than" in figures["outcome"], figures
        assert figures["peak"] < 60 << 20, figures
    print(figures)
