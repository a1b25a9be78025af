"""Issue 24 D: a whole answer arriving in one write (a gateway that buffers, a proxy, a replay) is read
in bounded pieces and its first event is decoded from a small first piece, not after the whole read.
(The speed itself is measured in bench/, mode "burst", never in a timed unit test.)"""

from agenthub import AutoLLMClient, Timeout
from faultserver import FaultServer, chat_stream, send, status

USER = {"role": "user", "content_items": [{"type": "text", "text": "hi"}]}
SSE = {"Content-Type": "text/event-stream"}


def _spy(client, seen):
    """The client's protocol, recording the size of every piece of the body handed to its framing."""
    real = client._protocol

    class Spy(object):
        def __getattr__(self, name):
            return getattr(real, name)

        def read(self, body, client_type, max_line_bytes, document=False):
            pieces = body.iter_chunks

            def counted():
                for piece in pieces():
                    seen.append(len(piece))
                    yield piece

            body.iter_chunks = counted
            return real.read(body, client_type, max_line_bytes, document)

    client._protocol = Spy()


def _burst(framing):
    words = ["w{} ".format(i) for i in range(20000)]
    body = chat_stream(*words)  # about 3 MB
    with FaultServer() as server:
        server.push([status(200, SSE, framing), send(body)])  # one write: one HTTP chunk, or the whole body
        client = AutoLLMClient("m", api_key="sk-test-key-123456", base_url=server.url + "/v1",
                               client_type="openai-chat", timeout=Timeout(connect=2, read=10), max_retries=0)
        seen = []
        _spy(client, seen)
        stream = client.streaming_response([USER])
        events = []
        for event in stream:
            events.append(event)
            if any(item["type"] == "text" for item in event["content_items"]):
                break
        at_first = list(seen)
        events.extend(stream)
    text = "".join(i["text"] for e in events for i in e["content_items"] if i["type"] == "text")
    return at_first, text, "".join(words), events[-1]["finish_reason"]


def test_the_first_event_of_one_huge_chunk_is_decoded_from_a_small_first_piece():
    at_first, text, want, finish = _burst("chunked")
    assert at_first[0] <= 4096, at_first[:3]
    assert sum(at_first) <= 4096 + 64 * 1024, at_first[:3]  # nothing past the first bounded read
    assert text == want and finish == "stop"


def test_the_first_event_of_a_close_delimited_burst_is_decoded_from_a_small_first_piece():
    at_first, text, want, finish = _burst("close")
    assert at_first[0] <= 4096, at_first[:3]
    assert sum(at_first) <= 4096 + 64 * 1024, at_first[:3]
    assert text == want and finish == "stop"
