"""AWS event-stream framing: every header type, every split point, both CRCs, cut bodies, limits.

Frames come from the test encoder (tests/bedrock_frames.py); each one is also decoded by botocore's own
decoder (botocore.eventstream.EventStreamBuffer) and the two decoders must agree on every message.
"""

import random
import struct
import zlib

import pytest

from agenthub.errors import StreamProtocolError
from agenthub.eventstream import EventStreamDecoder, Message, iter_messages
import bedrock_frames as bf

eventstream = pytest.importorskip("botocore.eventstream")

UUID = bytes(range(16))
ALL_TYPES = [
    ("t", bf.BOOL_TRUE, None),
    ("f", bf.BOOL_FALSE, None),
    ("byte", bf.BYTE, -7),
    ("short", bf.SHORT, -30000),
    ("int", bf.INTEGER, -2000000000),
    ("long", bf.LONG, -(2 ** 62)),
    ("bytes", bf.BYTES, b"\x00\xffbin"),
    ("str", bf.STRING, "h\u00e9llo \u4e16\u754c"),
    ("ts", bf.TIMESTAMP, 1764547200123),
    ("uuid", bf.UUID, UUID),
]
EXPECTED_ALL = {"t": True, "f": False, "byte": -7, "short": -30000, "int": -2000000000, "long": -(2 ** 62),
                "bytes": b"\x00\xffbin", "str": "h\u00e9llo \u4e16\u754c", "ts": 1764547200123, "uuid": UUID}


def ours(chunks, **kwargs):
    return list(iter_messages(chunks, **kwargs))


def botocores(data):
    buffer = eventstream.EventStreamBuffer()
    buffer.add_data(data)
    return [Message(message.headers, message.payload) for message in buffer]


def sample_stream():
    return b"".join([
        bf.encode(ALL_TYPES, b'{"a": 1}'),
        bf.encode([], b""),  # the smallest message: 16 bytes
        bf.message_start(),
        bf.text_delta("Bonjour \u2603"),
        bf.encode([("x", bf.STRING, "")], b"\x00" * 300),
        bf.exception("throttlingException", "slow down"),
        bf.error("InternalFailure", "boom"),
        bf.metadata(),
    ])


def test_every_header_type_decodes_as_botocore_decodes_it():
    frame = bf.encode(ALL_TYPES, b"payload")
    [message] = ours([frame])
    assert message.headers == EXPECTED_ALL
    assert message.payload == b"payload"
    assert message.header_types == {"t": 0, "f": 1, "byte": 2, "short": 3, "int": 4, "long": 5, "bytes": 6,
                                    "str": 7, "ts": 8, "uuid": 9}
    assert botocores(frame) == [message]


def test_same_messages_as_botocore_at_every_split_point():
    data = sample_stream()
    expected = botocores(data)
    assert len(expected) == 8
    assert ours([data]) == expected
    for i in range(len(data) + 1):
        assert ours([data[:i], data[i:]]) == expected, i
    assert ours([data[i:i + 1] for i in range(len(data))]) == expected


def test_same_messages_as_botocore_under_random_three_way_splits_and_random_frames():
    rng = random.Random(7)
    for _ in range(60):
        frames = []
        for _ in range(rng.randint(1, 5)):
            headers = rng.sample(ALL_TYPES, rng.randint(0, len(ALL_TYPES)))
            payload = bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 64)))
            frames.append(bf.encode(headers, payload))
        data = b"".join(frames)
        a, b = sorted(rng.randint(0, len(data)) for _ in range(2))
        assert ours([data[:a], data[a:b], data[b:]]) == botocores(data)


def test_accessors_name_the_bedrock_headers():
    [message] = ours([bf.exception("validationException", "bad input")])
    assert (message.message_type, message.exception_type, message.content_type) == (
        "exception", "validationException", "application/json")
    assert message.event_type is None
    [message] = ours([bf.text_delta("x")])
    assert (message.message_type, message.event_type) == ("event", "contentBlockDelta")


@pytest.mark.parametrize("where", ["prelude", "message", "payload"])
def test_a_corrupt_crc_is_a_stream_protocol_error_and_botocore_agrees(where):
    good = bf.text_delta("hello")
    bad = bf.corrupt(good, where)
    with pytest.raises(eventstream.ChecksumMismatch):
        botocores(bad)
    for chunks in ([bad], [bad[:5], bad[5:]], [bad[:13], bad[13:]], [bad[i:i + 1] for i in range(len(bad))]):
        with pytest.raises(StreamProtocolError) as info:
            ours(chunks)
        assert ("prelude" if where == "prelude" else "message") + " CRC32 mismatch" in str(info.value)
    # messages before the corrupt one come out first
    decoder = EventStreamDecoder()
    assert len(decoder.feed(good)) == 1
    with pytest.raises(StreamProtocolError):
        decoder.feed(bad)


def test_a_body_cut_inside_a_frame_is_a_stream_protocol_error_at_every_cut():
    data = bf.message_start() + bf.text_delta("hello")
    first = len(bf.message_start())
    for cut in range(1, len(data)):
        if cut == first:
            assert len(ours([data[:cut]])) == 1
            continue
        with pytest.raises(StreamProtocolError) as info:
            ours([data[:cut]])
        assert "ended inside a message" in str(info.value)
    assert ours([b""]) == []


def test_frame_size_bounded_before_the_frame_is_buffered():
    big = bf.encode([], b"x" * 5000)
    with pytest.raises(StreamProtocolError) as info:
        ours([big[:12]], max_frame_bytes=4096)  # refused from its prelude alone
    assert "longer than the limit of 4096" in str(info.value)
    assert len(ours([big], max_frame_bytes=5016)) == 1


def _raw(total, headers_length, rest=b""):
    prelude = struct.pack(">II", total, headers_length)
    prelude += struct.pack(">I", zlib.crc32(prelude))
    body = prelude + rest
    return body + struct.pack(">I", zlib.crc32(body))


@pytest.mark.parametrize("data,words", [
    (_raw(15, 0)[:15], "shorter than a message can be"),
    (_raw(20, 8, b"abcd"), "does not fit"),
    (_raw(16 + 3, 3, b"\x05ab"), "runs past"),  # name length 5, 2 bytes left
    (_raw(16 + 3, 3, b"\x01a\x0e"), "unknown type 14"),
    (_raw(16 + 4, 4, b"\x01a\x04\x00"), "runs past"),  # an int32 with one byte
    (_raw(16 + 5, 5, b"\x01a\x07\x00\x09"), "runs past"),  # a string longer than the section
    (_raw(16 + 7, 7, b"\x01a\x07\x00\x02\xff\xfe"), "not UTF-8"),
    (_raw(16 + 4, 4, b"\x01a\x00" + b"\x00"), "empty name"),
    (_raw(16 + 6, 6, b"\x01a\x00\x01a\x01"), "appears twice"),
    (_raw(16 + 3, 3, b"\x01\xff\x00"), "name is not UTF-8"),
])
def test_malformed_headers_are_stream_protocol_errors(data, words):
    with pytest.raises(StreamProtocolError) as info:
        ours([data])
    assert words in str(info.value)


def test_duplicate_header_refused_as_botocore_refuses_it():
    frame = bf.encode([("a", bf.BOOL_TRUE), ("a", bf.BOOL_FALSE)])
    with pytest.raises(eventstream.DuplicateHeader):
        botocores(frame)
    with pytest.raises(StreamProtocolError):
        ours([frame])


def test_decoder_feed_returns_messages_as_they_complete():
    frames = [bf.text_delta(str(n)) for n in range(3)]
    data = b"".join(frames)
    decoder = EventStreamDecoder()
    cut = len(frames[0]) + 3
    assert decoder.feed(data[:cut]) == ours([frames[0]])
    assert decoder.pending == 3
    assert len(decoder.feed(data[cut:])) == 2
    assert decoder.pending == 0
    decoder.close()


def test_iteration_is_lazy():
    seen = []

    def chunks():
        for frame in (bf.text_delta("a"), bf.text_delta("b")):
            seen.append(frame)
            yield frame

    gen = iter_messages(chunks())
    next(gen)
    assert len(seen) == 1


def test_message_repr_shortens_long_payloads():
    assert "..." in repr(Message({}, b"x" * 200))
    assert Message({"a": 1}, b"") != Message({"a": 2}, b"")


def test_random_bytes_and_mutated_streams_only_ever_raise_stream_protocol_error():
    rng = random.Random(11)
    good = sample_stream()
    for _ in range(400):
        data = bytearray(good)
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        if rng.random() < 0.3:
            data = data[:rng.randrange(len(data))]
        if rng.random() < 0.2:
            data = bytearray(rng.getrandbits(8) for _ in range(rng.randint(0, 64)))
        cut = rng.randint(0, len(data))
        try:
            ours([bytes(data[:cut]), bytes(data[cut:])], max_frame_bytes=1 << 16)
        except StreamProtocolError:
            pass


def test_messages_with_the_same_headers_do_not_share_them():
    first, second = ours([bf.text_delta("a"), bf.text_delta("b")])
    first.headers[":event-type"] = "changed"
    assert second.headers[":event-type"] == "contentBlockDelta"
    assert ours([bf.text_delta("c")])[0].headers[":event-type"] == "contentBlockDelta"


# -- AWS's own limits, and a header cache bounded in bytes (issue 24 A6) --------------------------------------


def _headers_of(size):
    """Header entries (BYTES values, distinct names) whose encoded section is exactly ``size`` bytes."""
    entries = []
    left = size
    n = 0
    while left:
        name = "h{}".format(n)
        overhead = 1 + len(name) + 1 + 2
        value = min(65535, left - overhead)
        if left - overhead - value and left - overhead - value < len(name) + 4 + 1:
            value -= len(name) + 5  # leave room for a last header of at least one byte of value
        entries.append((name, bf.BYTES, b"v" * value))
        left -= overhead + value
        n += 1
    section = b"".join(bf.header(*entry) for entry in entries)
    assert len(section) == size
    return entries


def _botocore_refuses(data):
    with pytest.raises(eventstream.ParserError):
        botocores(data)


def test_a_headers_section_at_awss_limit_decodes_as_botocore_decodes_it():
    from agenthub.eventstream import MAX_HEADERS_BYTES

    assert MAX_HEADERS_BYTES == 128 * 1024 == eventstream._MAX_HEADERS_LENGTH
    frame = bf.encode(_headers_of(MAX_HEADERS_BYTES), b"{}")
    assert ours([frame]) == botocores(frame)
    assert len(ours([frame[:100], frame[100:]])) == 1  # the buffered path too


def test_a_headers_section_past_awss_limit_is_refused_from_its_prelude_as_botocore_refuses_it():
    frame = bf.encode(_headers_of(128 * 1024 + 1), b"{}")
    _botocore_refuses(frame)
    for chunks in ([frame], [frame[:12]], [frame[:5], frame[5:]]):
        with pytest.raises(StreamProtocolError) as info:
            ours(chunks)
        assert "headers section of 131073 bytes is longer than AWS's limit of 131072 bytes" in str(info.value)


def test_a_payload_at_awss_limit_decodes_and_one_byte_more_is_refused_as_botocore_does():
    from agenthub.eventstream import MAX_PAYLOAD_BYTES

    assert MAX_PAYLOAD_BYTES == 24 * 1024 * 1024 == eventstream._MAX_PAYLOAD_LENGTH
    headers = [(":event-type", bf.STRING, "chunk")]
    frame = bf.encode(headers, b"p" * MAX_PAYLOAD_BYTES)
    decoded = ours([frame])
    assert len(decoded) == 1 and len(decoded[0].payload) == MAX_PAYLOAD_BYTES
    assert decoded == botocores(frame)
    over = bf.encode(headers, b"p" * (MAX_PAYLOAD_BYTES + 1))
    _botocore_refuses(over)
    for chunks in ([over], [over[:12]]):
        with pytest.raises(StreamProtocolError) as info:
            ours(chunks)
        assert "payload of 25165825 bytes is longer than AWS's limit of 25165824 bytes" in str(info.value)


def test_the_header_cache_is_bounded_in_bytes_whatever_the_server_sends():
    from agenthub import eventstream as ours_module

    ours_module._HEADER_CACHE.clear()
    # 300 messages, each with a distinct 60 KiB headers section (under AWS's limit): none is kept
    frames = (bf.encode([("big", bf.BYTES, struct.pack(">I", n) + b"x" * (60 * 1024))], b"{}") for n in range(300))
    assert sum(1 for _ in iter_messages(frames)) == 300
    held = sum(len(section) for section in ours_module._HEADER_CACHE)
    assert held == 0
    # the small sections a real stream repeats are still cached, and the cache stays within its bound
    frames = [bf.encode([(":event-type", bf.STRING, "e{}".format(n)), (":message-type", bf.STRING, "event")], b"{}")
              for n in range(1000)]
    assert len(ours(frames)) == 1000
    assert 0 < len(ours_module._HEADER_CACHE) <= ours_module._HEADER_CACHE_SIZE
    assert sum(len(section) for section in ours_module._HEADER_CACHE) <= 256 * 512
    assert all(len(section) <= 512 for section in ours_module._HEADER_CACHE)
