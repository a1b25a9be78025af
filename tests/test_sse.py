"""SSE framing: every line ending, every split, comments, fields, UTF-8, limits."""

import pytest

from agenthub import sse as sse_module
from agenthub.errors import StreamProtocolError, TransportError
from agenthub.sse import SSEDecoder, SSEEvent, iter_event_data, iter_events
from conftest import boundary_splits, every_split, wire_streams


def decode(chunks, **kwargs):
    decoder = SSEDecoder(**kwargs)
    events = []
    for chunk in chunks:
        events.extend(decoder.feed(chunk))
    events.extend(decoder.flush())
    return events


BASIC = [SSEEvent("a"), SSEEvent("b", event="ping"), SSEEvent("c\nd", id="7")]


@pytest.mark.parametrize("newline", [b"\n", b"\r", b"\r\n"])
def test_line_endings_split_every_way(newline):
    body = newline.join([b"data: a", b"", b"event: ping", b"data:b", b"", b": comment", b"id: 7",
                         b"data: c", b"data: d", b"", b""])
    for chunks in every_split(body):
        assert decode(chunks) == BASIC
    assert decode([body[i:i + 1] for i in range(len(body))]) == BASIC


def test_crlf_split_between_cr_and_lf_is_one_line_end():
    # a CRLF straddling two chunks must not produce an extra blank line (psf/requests#5540)
    assert decode([b"event: x\r", b"\ndata: 1\r\n\r\n"]) == [SSEEvent("1", event="x")]
    assert decode([b"data: 1\r", b"\n", b"\r", b"\n"]) == [SSEEvent("1")]


def test_data_with_and_without_space_and_only_one_space_stripped():
    assert decode([b"data:x\n\ndata: x\n\ndata:  x\n\n"]) == [SSEEvent("x"), SSEEvent("x"), SSEEvent(" x")]


def test_multi_line_data_joined_with_lf():
    assert decode([b"data: {\ndata: \"a\": 1\ndata: }\n\n"]) == [SSEEvent('{\n"a": 1\n}')]


def test_comments_and_unknown_fields_ignored_and_event_without_data_dropped():
    body = b": OPENROUTER PROCESSING\n\nevent: ping\n\nfoo: bar\nretry: 10\ndata: x\n\n"
    assert decode([body]) == [SSEEvent("x", retry=10)]


def test_event_name_applies_to_one_event_and_id_persists():
    body = b"event: a\nid: 1\ndata: x\n\ndata: y\n\n"
    assert decode([body]) == [SSEEvent("x", event="a", id="1"), SSEEvent("y", id="1")]


def test_last_event_without_blank_line_is_dispatched_at_flush():
    assert decode([b"data: [DONE]"]) == [SSEEvent("[DONE]")]
    assert decode([b"data: a\n"]) == [SSEEvent("a")]
    assert decode([b"data: a\r"]) == [SSEEvent("a")]


def test_multibyte_utf8_split_inside_a_character():
    text = "温度 18 °C ✓ 😊"
    body = ("data: " + text + "\n\n").encode("utf-8")
    for chunks in every_split(body):
        assert decode(chunks) == [SSEEvent(text)]


def test_u2028_and_other_unicode_line_separators_stay_inside_data():
    text = "a\u2028b\u2029c\x85d\x0be\x0cf"
    assert decode([("data: " + text + "\n\n").encode("utf-8")]) == [SSEEvent(text)]


def test_invalid_utf8_is_a_stream_protocol_error():
    with pytest.raises(StreamProtocolError, match="UTF-8"):
        decode([b"data: \xff\xfe\n\n"])
    with pytest.raises(StreamProtocolError, match="UTF-8"):
        decode([b"event: \xc3\n\n"])


def test_line_longer_than_the_limit_is_refused():
    with pytest.raises(StreamProtocolError, match="exceeds 16 bytes"):
        decode([b"data: 0123456789abcdef\n\n"], max_line_bytes=16)
    with pytest.raises(StreamProtocolError, match="exceeds 16 bytes"):  # arriving in pieces, no newline yet
        decode([b"data: 01234", b"56789abcdef", b"XYZ"], max_line_bytes=16)
    assert decode([b"data: 0123456789\n\n"], max_line_bytes=16) == [SSEEvent("0123456789")]


def test_empty_chunks_and_iter_events():
    assert list(iter_events([b"", b"data: a\n", b"", b"\n"])) == [SSEEvent("a")]


@pytest.mark.skipif(not wire_streams("openai_chat"), reason="../shared/wire is absent")
@pytest.mark.parametrize("protocol", ["openai_chat", "openai_responses", "anthropic", "gemini"])
def test_recorded_streams_decode_identically_at_every_split(protocol):
    for name, data, _ in wire_streams(protocol):
        whole = decode([data])
        assert whole, name
        for chunks in boundary_splits(data):
            assert decode(chunks) == whole, (name, len(chunks[0]))
        assert decode([data[i:i + 1] for i in range(len(data))]) == whole


def test_a_byte_order_mark_opening_the_body_is_dropped():
    body = b"\xef\xbb\xbfdata: a\n\ndata: b\n\n"
    assert decode([body]) == [SSEEvent("a"), SSEEvent("b")]
    assert list(iter_events([body[:5], body[5:]])) == [SSEEvent("a"), SSEEvent("b")]
    assert list(iter_events([body])) == [SSEEvent("a"), SSEEvent("b")]


def _pairs(events):
    return [(event.event, event.data) for event in events]


@pytest.mark.parametrize("newline", [b"\n", b"\r", b"\r\n"])
def test_pairs_are_the_events_name_and_data_at_every_split(newline):
    """SSEDecoder(pairs=True) and iter_event_data: the same framing as SSEEvents, as (event, data) tuples."""
    body = newline.join([b"data: a", b"", b"event: ping", b"data:b", b"", b": comment", b"id: 7",
                         b"retry: 30", b"data: c", b"data: d", b"", b"event: x", b"data: e", b"", b"data: f"])
    expected = [("message", "a"), ("ping", "b"), ("message", "c\nd"), ("x", "e"), ("message", "f")]
    assert _pairs(decode([body])) == expected
    for chunks in every_split(body):
        assert decode(chunks, pairs=True) == expected
        assert list(iter_event_data(chunks)) == expected
    assert list(iter_event_data([b"\xef\xbb\xbf" + body])) == expected
    # one event per chunk (iter_events' own fast path), then the general path, then one event again
    chunks = [b"data: a\n\n", b"event: n\ndata: b\n\n", b"data: c\r\n\r\n", b"data: d\n", b"\ndata: e\n\n"]
    assert list(iter_event_data(chunks)) == _pairs(iter_events(chunks)) == [
        ("message", "a"), ("n", "b"), ("message", "c"), ("message", "d"), ("message", "e")]


def test_pairs_raise_the_same_errors():
    for chunks in ([b"data: \xff\n\n"], [b"data: 0123456789abcdef0\n\n"], [b"data: 0123", b"456789abcdef0\n\n"]):
        with pytest.raises(StreamProtocolError) as as_events:
            list(iter_events(chunks, max_line_bytes=16))
        with pytest.raises(StreamProtocolError) as as_pairs:
            list(iter_event_data(chunks, max_line_bytes=16))
        assert str(as_pairs.value) == str(as_events.value)


@pytest.mark.skipif(not wire_streams("openai_chat"), reason="../shared/wire is absent")
@pytest.mark.parametrize("protocol", ["openai_chat", "openai_responses", "anthropic", "gemini"])
def test_recorded_streams_as_pairs(protocol):
    for name, data, _ in wire_streams(protocol):
        whole = _pairs(decode([data]))
        for chunks in boundary_splits(data):
            assert list(iter_event_data(chunks)) == whole, (name, len(chunks[0]))


def test_a_byte_order_mark_cut_across_the_first_chunks_is_still_dropped():
    from agenthub.sse import SSEDecoder

    body = b"\xef\xbb\xbfdata: {\"a\":1}\n\n"
    for first in (1, 2):
        decoder = SSEDecoder()
        events = decoder.feed(body[:first]) + decoder.feed(body[first:3]) + decoder.feed(body[3:]) + decoder.flush()
        assert [e.data for e in events] == ['{"a":1}'], first
    decoder = SSEDecoder()  # its first byte alone, the rest with the first event
    assert decoder.feed(b"\xef") == []
    assert [e.data for e in decoder.feed(b"\xbb\xbfdata: x\n\n")] == ["x"]


# -- bursts: many events in one chunk (SSEDecoder._burst) decode as they would line by line ---------------

_VOCABULARY = [b"data: {\"a\": 1}", b"data: x", b"data:x", b"data:  two", b"data: \xc3\xa9t\xc3\xa9 \xe2\x80\xa8",
               b"data:", b"data", b"data: [DONE]", b"event: ping", b"event:", b"event: ", b"event:x",
               b"event: \xe2\x9c\x93", b": comment", b":", b"id: 7", b"id: a\x00b", b"id", b"retry: 1500",
               b"retry: x", b"foo: bar", b"data: " + b"y" * 40]
_HOSTILE = [b"data: \xff\xfe", b"event: \xc3", b"data: " + b"z" * 90, b"\xef\xbb\xbf"]


def _random_body(rng, hostile):
    newline = rng.choice([b"\n", b"\n", b"\r\n"])
    lines = [b"\xef\xbb\xbf"] if rng.random() < 0.1 else []
    for _ in range(rng.randrange(1, 40)):
        shape = rng.random()
        if shape < 0.4:
            lines += [b"data: {\"n\": %d}" % rng.randrange(1000), b""]
        elif shape < 0.7:
            lines += [b"event: e%d" % rng.randrange(5), b"data: {\"n\": %d}" % rng.randrange(1000), b""]
        else:
            pool = _VOCABULARY + (_HOSTILE if hostile else [])
            lines += [rng.choice(pool) for _ in range(rng.randrange(1, 4))] + [b""] * rng.randrange(0, 3)
    ends = [newline if rng.random() > 0.03 else rng.choice([b"\r", b"\n", b"\r\n"]) for _ in lines]
    body = b"".join(line + end for line, end in zip(lines, ends))
    return body[:rng.randrange(len(body) + 1)] if rng.random() < 0.2 else body


def _outcome(chunks, **kwargs):
    try:
        return decode(chunks, **kwargs)
    except StreamProtocolError as exc:
        return "error: {}".format(exc)


@pytest.mark.parametrize("pairs", [False, True])
def test_a_burst_decodes_as_its_bytes_one_by_one(pairs):
    """A chunk of many events (a whole answer in one write) takes a path of its own (split at the blank
    lines): it gives the events, the state between chunks and the errors of the line-by-line path (a
    chunk of one byte never has two blank lines), whatever the lines and however the body is cut."""
    import random

    rng = random.Random(20261201)
    bursts = 0
    for case in range(400):
        body = _random_body(rng, hostile=case % 4 == 0)
        limit = rng.choice([64 * 1024 * 1024, 64 * 1024 * 1024, 80, 300])
        expected = _outcome([body[i:i + 1] for i in range(len(body))], max_line_bytes=limit, pairs=pairs)
        assert _outcome([body], max_line_bytes=limit, pairs=pairs) == expected, (body, limit)
        cuts = sorted(rng.sample(range(len(body) + 1), min(3, len(body) + 1)))
        pieces = [body[a:b] for a, b in zip([0] + cuts, cuts + [len(body)])]
        assert _outcome(pieces, max_line_bytes=limit, pairs=pairs) == expected, (pieces, limit)
        bursts += body.count(b"\n\n") >= 2 and len(body) <= limit
    assert bursts > 150  # the burst path was taken, not only the line path


def test_a_burst_keeps_the_ids_the_retry_and_an_unfinished_event():
    body = (b"id: 1\ndata: a\n\ndata: b\n\nretry: 20\n\ndata: c\n\nevent: x\ndata: d\n\nid: 2\ndata: e\n\n"
            b"event: tail\ndata: f")
    assert decode([body]) == [SSEEvent("a", id="1"), SSEEvent("b", id="1"), SSEEvent("c", id="1", retry=20),
                              SSEEvent("d", event="x", id="1"), SSEEvent("e", id="2"),
                              SSEEvent("f", event="tail", id="2")]
    decoder = SSEDecoder()
    assert [e.data for e in decoder.feed(body)] == ["a", "b", "c", "d", "e"]
    assert decoder.feed(b"g\n\n") == [SSEEvent("fg", event="tail", id="2")]


def test_a_multi_line_event_over_the_limit_is_refused_inside_a_large_chunk():
    body = b"data: 0123456789\ndata: 0123456789\n\n"  # each line within 16 bytes, the event's data not
    with pytest.raises(StreamProtocolError, match="an SSE event exceeds 16 bytes"):
        decode([body], max_line_bytes=16)
    with pytest.raises(StreamProtocolError, match="an SSE event exceeds 16 bytes"):
        decode([body[i:i + 1] for i in range(len(body))], max_line_bytes=16)


def _peak(work):
    """What ``work()`` allocated at most at once, in bytes (tracemalloc), and its result."""
    import tracemalloc

    tracemalloc.start()
    try:
        result = work()
        return tracemalloc.get_traced_memory()[1], result
    finally:
        tracemalloc.stop()


def test_a_line_held_over_many_reads_is_joined_once_and_decoded_from_the_join():
    """A line longer than a read (a whole tool call's arguments in one event, issue 41 item 5) arrives in pieces:
    at its end the pieces and the end are joined once and its data decoded from that join, with no other copy
    (it was joined, joined again with its end, sliced, then decoded: four copies alive at once)."""
    for unit in (b"x\\n", b"x\\n\xc3\xa9"):  # (ASCII, and not: UTF-8's decoder takes more memory for the latter)
        line = b'data: {"a": "' + unit * (1000000 // len(unit)) + b'"}'
        body = line + b"\r\n\r\n"
        pieces = [body[i:i + 65536] for i in range(0, len(body), 65536)]
        decoder = SSEDecoder(pairs=True)
        for piece in pieces[:-1]:
            assert decoder.feed(piece) == []
        peak, events = _peak(lambda: decoder.feed(pieces[-1]))
        data = line[6:]
        decoding, text = _peak(lambda: data.decode("utf-8"))
        assert events == [("message", text)]
        assert peak < len(line) + decoding + 100000, (unit, peak / len(line), decoding / len(line))


def test_the_size_of_an_event_spread_over_many_reads_measures_each_data_line_once():
    # a server trickling one data line per read: the event's size is checked after each read, and must not be
    # measured from its first line each time (that is quadratic: 40,000 lines took seconds)
    class Measured(list):
        measured = 0

        def __iter__(self):
            Measured.measured += len(self)
            return list.__iter__(self)

        def __getitem__(self, index):
            part = list.__getitem__(self, index)
            if isinstance(index, slice):
                Measured.measured += len(part)
            return part

    decoder = SSEDecoder(max_line_bytes=1024 * 1024)
    decoder.feed(b"data: first\n")
    decoder._data = Measured(decoder._data)
    for _ in range(2000):
        assert decoder.feed(b"data: x\n") == []
    assert len(decoder._data) == 2001
    assert Measured.measured <= 2 * 2001, Measured.measured
    assert decoder.feed(b"\n") == [SSEEvent("first" + "\nx" * 2000)]


def test_empty_data_lines_count_toward_the_event_limit():
    decoder = SSEDecoder(max_line_bytes=100)
    decoder.feed(b"data: " + b"y" * 50 + b"\n")
    with pytest.raises(StreamProtocolError, match="an SSE event exceeds 100 bytes"):
        for _ in range(60):  # 50 characters and 60 LFs: 110 characters once joined
            decoder.feed(b"data:\n")
    decoder = SSEDecoder(max_line_bytes=100)
    decoder.feed(b"data: " + b"y" * 50 + b"\n")
    for _ in range(50):  # exactly 100 once joined: within the limit
        decoder.feed(b"data:\n")
    assert decoder.feed(b"\n") == [SSEEvent("y" * 50 + "\n" * 50)]


# -- Timeout.events: reads that complete no event (comments, blank lines, keep-alive bytes) ---------------


def _clocked(monkeypatch, chunks):
    """``chunks`` read one a second: the framing's clock reads 0, 1, 2, ... (one tick per read of it)."""
    ticks = iter(range(1000))
    monkeypatch.setattr(sse_module, "monotonic", lambda: float(next(ticks)))
    return chunks


@pytest.mark.parametrize("framing", [iter_events, iter_event_data])
def test_reads_of_only_comments_end_the_stream_past_the_events_timeout(monkeypatch, framing):
    quiet = [b": keep-alive\n\n", b"\n", b": OPENROUTER PROCESSING\n\n", b"\r\n", b": ping\n\n"]
    chunks = _clocked(monkeypatch, [b"data: a\n\n"] + quiet + [b"data: never\n\n"])
    got = []
    with pytest.raises(TransportError) as caught:
        for frame in framing(chunks, 1024, 2.5, "openai-chat"):
            got.append(frame)
    assert [getattr(f, "data", None) or f[1] for f in got] == ["a"]  # the clock: 0 at the first comment, 3 at the 4th
    error = caught.value
    assert (error.client, error.timeout, error.retryable, error.deadline) == ("openai-chat", True, True, False)
    assert str(error) == ("openai-chat: no SSE event for 2.5s, only comments or keep-alive bytes (the events "
                          "timeout: Timeout(events=...))")


def test_an_event_restarts_the_events_clock_and_none_means_no_limit(monkeypatch):
    comment = b": keep-alive\n\n"
    body = [comment, comment, comment, b"data: 1\n\n", comment, comment, comment, b"event: x\ndata: 2\n\n",
            comment, comment, b"data: 3", b"\n\n", comment, comment, comment]  # (a part of an event is no event)
    assert [e.data for e in iter_events(_clocked(monkeypatch, list(body)), 1024, 2.5)] == ["1", "2", "3"]
    assert [e.data for e in iter_events(_clocked(monkeypatch, body * 50), 1024)] == ["1", "2", "3"] * 50
    assert [e.data for e in iter_events(_clocked(monkeypatch, body * 50), 1024, None)] == ["1", "2", "3"] * 50


@pytest.mark.parametrize("framing", [iter_events, iter_event_data])
def test_keepalive_events_do_not_restart_the_events_clock(monkeypatch, framing):
    """Anthropic's ``ping`` is an SSE event but no content: a body of only pings restarted the events clock
    at each one and was held for ever.  Named as keep-alives, they are handed on (the parser skips them) and
    count as reads that completed no event; any other event restarts the clock."""
    ping = b'event: ping\ndata: {"type": "ping"}\n\n'
    chunks = _clocked(monkeypatch, [b"event: message_start\ndata: {}\n\n"] + [ping] * 5 + [b"data: never\n\n"])
    got = []
    with pytest.raises(TransportError) as caught:
        for frame in framing(chunks, 1024, 2.5, "anthropic", keepalives=("ping",)):
            got.append(frame)
    names = [getattr(f, "event", None) or f[0] for f in got]
    assert names == ["message_start", "ping", "ping", "ping"]  # the clock: 0 at the first ping, 3 at the 4th
    assert str(caught.value) == ("anthropic: no SSE event for 2.5s, only comments or keep-alive bytes (the events "
                                 "timeout: Timeout(events=...))")
    assert (caught.value.timeout, caught.value.retryable) == (True, True)
    # a ping in the same read as a comment, a ping split across reads, then a real event: it restarts the clock
    body = [b": x\n\n" + ping, ping[:9], ping[9:], b"event: content_block_delta\ndata: {}\n\n", ping, ping, ping,
            b"data: {}\n\n"]
    frames = list(framing(_clocked(monkeypatch, body), 1024, 2.5, "anthropic", keepalives=("ping",)))
    assert [getattr(f, "event", None) or f[0] for f in frames] == ["ping", "ping", "content_block_delta", "ping",
                                                                   "ping", "ping", "message"]
    # without keepalives a ping is an event like any other (the default: nothing changes for other wires)
    frames = list(framing(_clocked(monkeypatch, [ping] * 20), 1024, 2.5, "anthropic"))
    assert len(frames) == 20
