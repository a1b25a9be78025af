"""Issue 24 A5: stacked content codings (``gzip, gzip``, ``x-gzip, gzip``) are inflated layer by layer
in bounded pieces, and a coding the request did not ask for is refused (never handed to a decoder
that inflates a whole chunk at once)."""

import gzip
import json
import os
import subprocess
import sys
import zlib

import pytest

from agenthub import AutoLLMClient, StreamProtocolError, Timeout, TransportError
from agenthub import transport
from faultserver import FaultServer, chat_chunk, chat_stream, hang, send, status

HERE = os.path.dirname(os.path.abspath(__file__))
USER = [{"role": "user", "content_items": [{"type": "text", "text": "hi"}]}]


def _client(server, **kwargs):
    return AutoLLMClient("m", api_key="sk-test-key-123456", base_url=server.url + "/v1", client_type="openai-chat",
                         timeout=Timeout(connect=2, read=5), max_retries=0, **kwargs)


def _text(events):
    return "".join(i["text"] for e in events for i in e["content_items"] if i["type"] == "text")


@pytest.mark.parametrize("coding", ["gzip, gzip", "x-gzip, gzip", "gzip, deflate", "deflate, x-gzip, identity"])
def test_a_stream_under_stacked_codings_decodes(coding):
    body = chat_stream("Hel", "lo")
    data = body
    for layer in (c.strip() for c in coding.split(",")):
        data = {"gzip": gzip.compress, "x-gzip": gzip.compress, "deflate": zlib.compress,
                "identity": lambda d: d}[layer](data)
    with FaultServer() as server:
        server.push([status(200, {"Content-Type": "text/event-stream", "Content-Encoding": coding}),
                     send(data[:5]), send(data[5:])])
        assert _text(_client(server).streaming_response(USER)) == "Hello"


def test_a_coding_the_request_did_not_ask_for_is_refused():
    with FaultServer() as server:
        server.push([status(200, {"Content-Type": "text/event-stream", "Content-Encoding": "br"}),
                     send(b"\x8b\x02\x80data: {}\n\n\x03")])
        with pytest.raises(StreamProtocolError, match="'br' was not asked for") as caught:
            list(_client(server).streaming_response(USER))
    assert caught.value.retryable is False


def test_a_coding_stacked_with_one_not_asked_for_is_refused():
    with FaultServer() as server:
        server.push([status(200, {"Content-Type": "text/event-stream", "Content-Encoding": "gzip, br"}),
                     send(b"\x8b\x02\x80data: {}\n\n\x03")])
        with pytest.raises(StreamProtocolError, match="'gzip, br' was not asked for"):
            list(_client(server).streaming_response(USER))


BOMB = r"""
import json, resource, sys, tracemalloc, zlib
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))  # a regression fails with MemoryError, not the machine
sys.path[:0] = [sys.argv[1], sys.argv[2]]
from faultserver import FaultServer, send, status
from agenthub import AutoLLMClient, StreamProtocolError, Timeout
coding, kind = sys.argv[3], sys.argv[4]
# the inner layer: gzip members of 1 MB of "x" (no newline), 512 MB in all; the outer layer gzips that again
member = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
member = member.compress(b"x" * (1 << 20)) + member.flush()
outer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
data = outer.compress(member * 512) + outer.flush()
headers = {"Content-Type": "application/json" if kind == "document" else "text/event-stream",
           "Content-Encoding": coding}
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
    except MemoryError:
        outcome = "MemoryError"
    peak = tracemalloc.get_traced_memory()[1]
print(json.dumps({"wire": len(data), "peak": peak, "outcome": outcome}))
"""


@pytest.mark.parametrize("coding", ["gzip, gzip", "x-gzip, gzip"])
@pytest.mark.parametrize("kind", ["stream", "document"])
def test_a_stacked_gzip_bomb_stays_within_the_limits(coding, kind):
    """A few KB on the wire that inflate to 512 MB through two gzip layers: memory stays near the
    line limit (8 MB here) or the document cap (16 MB), not the inflated size."""
    result = subprocess.run([sys.executable, "-c", BOMB, os.path.dirname(HERE), HERE, coding, kind],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    assert result.returncode == 0, result.stderr.decode()[-3000:]
    figures = json.loads(result.stdout.decode().strip().splitlines()[-1])
    assert figures["wire"] < 64 * 1024, figures
    if kind == "stream":
        assert "longer than" in figures["outcome"] or "line" in figures["outcome"], figures
        assert figures["peak"] < 40 << 20, figures
    else:
        assert "larger than" in figures["outcome"], figures
        assert figures["peak"] < 60 << 20, figures


# -- issue 24 A7 (transport): one huge HTTP chunk is read in bounded pieces ------------------------


@pytest.mark.parametrize("client_type", ["openai-chat", "agenthub"])
def test_one_huge_http_chunk_is_read_in_bounded_pieces(client_type):
    """A single 64 MB HTTP chunk (one line, no newline) against a 1 MB line limit: refused with memory
    near the limit, never the whole chunk read at once (urllib3 reads a chunk whole when asked to)."""
    import tracemalloc

    data = b"data: " + b"x" * (64 << 20)
    framed = b"%x\r\n" % len(data) + data + b"\r\n"  # built before tracing: the server's copy is not counted
    with FaultServer() as server:
        server.push([status(200, {"Content-Type": "text/event-stream"}), ("raw", framed)])
        client = AutoLLMClient("m", api_key="sk-test-key-123456", base_url=server.url, client_type=client_type,
                               timeout=Timeout(connect=2, read=10), max_retries=0, max_line_bytes=1 << 20)
        tracemalloc.start()
        try:
            with pytest.raises(StreamProtocolError) as caught:
                list(client.streaming_response(USER))
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert "longer than" in str(caught.value) or "more than" in str(caught.value) or "exceeds" in str(caught.value)
    assert peak < 8 << 20, peak


def test_an_agenthub_server_frame_over_the_limit_inside_one_read_is_refused():
    """Every frame is checked, also one that begins and ends inside a single read."""
    frame = b'data: {"x":"' + b"y" * 3000 + b'"}\n\n'
    with FaultServer() as server:
        server.push([status(200, {"Content-Type": "text/event-stream"}), send(frame)])
        client = AutoLLMClient("m", api_key="sk-test-key-123456", base_url=server.url, client_type="agenthub",
                               timeout=Timeout(connect=2, read=5), max_retries=0, max_line_bytes=1024)
        with pytest.raises(StreamProtocolError, match="more than 1024 bytes"):
            list(client.streaming_response(USER))


# -- a stop (an abort, the total deadline) holds while a compressed body inflates ------------------


@pytest.mark.parametrize("stop", ["abort", "deadline"])
def test_a_stop_holds_within_one_piece_of_a_compressed_read(monkeypatch, stop):
    """A few KB of gzip, read at once, are 32 MB of blank lines after the first event: no event, so nothing
    but the watch can end their decoding (the socket is shut down, but it is not read again until they are
    all decoded: minutes for a stacked bomb).  The stop comes while they are decoded (as the deadline's
    timer or another thread's abort would) and is seen before the next inflated piece."""
    inflated = []
    streams = []
    feed = transport._Inflater.feed

    def counted(self, data):
        for piece in feed(self, data):
            inflated.append(len(piece))
            if len(inflated) == 3:  # in the middle of the blank lines
                streams[0]._control.stop(stop)
            yield piece

    monkeypatch.setattr(transport._Inflater, "feed", counted)
    data = gzip.compress(chat_chunk("first") + b"\n" * (32 << 20), 9)
    with FaultServer() as server:
        server.push([status(200, {"Content-Type": "text/event-stream", "Content-Encoding": "gzip"}), send(data),
                     hang(30)])
        client = AutoLLMClient("m", api_key="sk-test-key-123456", base_url=server.url + "/v1",
                               client_type="openai-chat", max_retries=0,
                               timeout=Timeout(connect=2, read=30, total=600))
        stream = client.streaming_response(USER)
        streams.append(stream)
        with pytest.raises(TransportError) as info:
            list(stream)
    assert (info.value.aborted, info.value.deadline) == (stop == "abort", stop == "deadline")
    assert sum(inflated) == 3 * transport.INFLATE_PIECE, sum(inflated)
