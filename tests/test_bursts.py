"""Issue 24 D: a whole answer arriving in one write (a gateway that buffers, a proxy, a replay) is read
in bounded pieces and its first event is decoded from a small first piece, not after the whole read.
(The speed itself is measured in bench/, mode "burst", never in a timed unit test.)"""

import time

from agenthub import AutoLLMClient, Timeout
from agenthub.stream import now_ms
from faultserver import FaultServer, chat_chunk, chat_stream, send, sleep, status

USER = {"role": "user", "content_items": [{"type": "text", "text": "hi"}]}
SSE = {"Content-Type": "text/event-stream"}


def _spy(client, seen):
    """The client's protocol, recording the size of every piece of the body handed to its framing."""
    real = client._protocol

    class Spy(object):
        def __getattr__(self, name):
            return getattr(real, name)

        def read(self, body, *args):
            pieces = body.iter_chunks

            def counted(*args):
                for piece in pieces(*args):
                    seen.append(len(piece))
                    yield piece

            body.iter_chunks = counted
            return real.read(body, *args)

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


def _events(steps):
    with FaultServer() as server:
        server.push([status(200, SSE, "chunked")] + steps)
        client = AutoLLMClient("m", api_key="sk-test-key-123456", base_url=server.url + "/v1",
                               client_type="openai-chat", timeout=Timeout(connect=2, read=10), max_retries=0)
        before = now_ms()
        stream = client.streaming_response([USER])
        events = [next(stream)]
        time.sleep(0.12)  # a slow caller: the events already read keep the time their bytes were read
        events.extend(stream)
        return before, now_ms(), events


def test_created_at_is_when_the_bytes_of_the_event_were_read():
    """Every event of one read (a burst's many) carries the time those bytes were read, however long the
    caller takes to ask for them; bytes read later carry a later time."""
    first = b"".join(chat_chunk("w{} ".format(i)) for i in range(50))  # one write
    before, after, events = _events([send(first), sleep(0.3), send(chat_chunk("late", finish="stop")),
                                     send(b"data: [DONE]\n\n")])
    texts = [e for e in events if any(i["type"] == "text" for i in e["content_items"])]
    assert len(texts) == 51
    burst = {e["created_at"] for e in texts[:50]}
    assert len(burst) == 1, sorted(burst)  # one read: one time, though the caller slept 120 ms in it
    read_at = burst.pop()
    assert before <= events[0]["created_at"] <= read_at < before + 100  # read at once, not after the caller's sleep
    assert texts[50]["created_at"] >= read_at + 250  # the last event's bytes came 300 ms later
    assert events[-1]["event_type"] == "stop" and texts[50]["created_at"] <= events[-1]["created_at"] <= after
