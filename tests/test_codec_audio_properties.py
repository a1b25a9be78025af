"""Property tests (hypothesis) over two readers of untrusted input: the audio length readers of
``agenthub.estimate`` (bytes a user or a server hands over: never a crash, a hang or a negative, infinite or NaN
length), and the one ``{"__bytes__"}`` codec through each of its users (saved conversations, traces, the response
cache, the journal, agenthub serve's frames, job files): every value, nested, with bytes anywhere, dicts spelling
the marker, escape-looking strings and any code point (lone surrogates too), reads back as it was."""

import json
import math
import os
import struct
import tempfile

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from test_bytes_codec import _events, _message, same  # noqa: E402

from agenthub.estimate import audio_seconds, audio_tokens, estimate_tokens, unknown_audio  # noqa: E402
from agenthub.errors import ConfigError  # noqa: E402

SETTINGS = settings(max_examples=300, deadline=None, derandomize=True, database=None,
                    suppress_health_check=list(HealthCheck))

#: the first bytes each reader is chosen by, so the random rest reaches the reader's own walk
_HEADS = [b"RIFF\x00\x00\x00\x00WAVE", b"RIFF\x00\x00\x00\x00WAVEfmt \x10\x00\x00\x00", b"fLaC", b"fLaC\x00",
          b"OggS\x00\x02", b"\x00\x00\x00\x10ftypM4A ", b"\x00\x00\x00\x01ftyp", b"ID3\x04\x00\x00", b"\xff\xfb",
          b"\xff\xf1", b"\xff\xe3", b"\xff\xf9\x4c"]
_TYPES = [None, "audio/mpeg", "audio/L16;codec=pcm;rate=24000", "audio/pcm;rate=0", "audio/L16;rate=x",
          "audio/pcm;rate=16000;channels=0", "audio/L24;rate=99999999999;channels=99999", "audio/basic;rate=8000"]


def _box(kind, body, size=None):
    return struct.pack(">I", 8 + len(body) if size is None else size) + kind + body


#: hand-made hostile files: sizes of 0, 1 (64-bit, huge or too small), past the end; zero rates and scales
HOSTILE = [
    b"\x00\x00\x00\x14ftypM4A \x00\x00\x00\x00M4A " + _box(b"moov", b"", size=0),
    b"\x00\x00\x00\x14ftypM4A \x00\x00\x00\x00M4A " + _box(b"moov", _box(b"mvhd", b"", size=1) + b"\xff" * 8),
    b"\x00\x00\x00\x14ftypM4A \x00\x00\x00\x00M4A " + struct.pack(">I", 1) + b"moov" + struct.pack(">Q", 2 ** 64 - 1),
    b"\x00\x00\x00\x14ftypM4A \x00\x00\x00\x00M4A " + struct.pack(">I", 1) + b"moov" + struct.pack(">Q", 4),
    b"\x00\x00\x00\x14ftypM4A \x00\x00\x00\x00M4A " + _box(b"moov", _box(b"mvhd", b"\x00" * 100) +
                                                         _box(b"mvex", _box(b"mehd", b"\x01"))),
    b"\x00\x00\x00\x14ftypM4A \x00\x00\x00\x00M4A " + _box(b"moov", _box(b"mvhd", b"")),
    b"fLaC\x00\x00\x00\x22" + b"\x00" * 34,  # (a zero rate)
    b"RIFF\x00\x00\x00\x00WAVEfmt \x10\x00\x00\x00" + b"\x00" * 16,  # (a zero byte rate)
    b"RIFF\x00\x00\x00\x00WAVEJUNK\xff\xff\xff\xff" + b"\x00" * 64,
    b"OggS\x00\x02" + b"\x00" * 20 + b"\x01\x13OpusHead" + b"\x00" * 11 + b"OggS\x00\x04" + b"\xff" * 40,
    b"OggS\x00\x02" + b"\x00" * 20 + b"\x01\x1e\x01vorbis" + b"\x00" * 30,  # (a zero rate)
    b"ID3\x04\x00\x10\x7f\x7f\x7f\x7f" + b"\xff" * 64,
    b"fLaC\x00\x00\x00\x22" + b"\xff" * 34,  # (the longest a STREAMINFO says: 2 ** 36 - 1 samples at 1 MHz)
    b"\xff\xf1\x50\x80\x00\x1f\xfc" * 4000,  # (ADTS frames of 0 bytes said)
    b"\xff\xfb\x90\x00" * 3000,
]


@SETTINGS
@given(st.sampled_from(_HEADS), st.binary(max_size=600), st.sampled_from(_TYPES))
def test_the_audio_readers_take_any_bytes(head, rest, mime_type):
    for data in (head + rest, rest, head):
        seconds = audio_seconds(data, mime_type)
        assert seconds is None or (type(seconds) is float and seconds >= 0 and math.isfinite(seconds))
        messages = [{"role": "user", "content_items": [
            {"type": "inline_data", "data": data, "mime_type": mime_type or "audio/mpeg"}]}]
        assert audio_tokens(messages) >= 1600 and estimate_tokens(messages) >= audio_tokens(messages)
        assert unknown_audio(messages) == (1 if audio_seconds(data, mime_type or "audio/mpeg") is None else 0)


def test_hostile_audio_headers_say_no_length_or_a_finite_one():
    for data in HOSTILE:
        seconds = audio_seconds(data)
        assert seconds is None or (seconds >= 0 and math.isfinite(seconds)), data[:16]
    assert [audio_seconds(data) for data in HOSTILE[:12]] == [None] * 12
    assert audio_seconds(HOSTILE[12]) == pytest.approx((2 ** 36 - 1) / float(0xFFFFF), rel=1e-12)


_CHARS = st.characters(blacklist_categories=())  # (every code point: lone surrogates too)
_TEXT = st.one_of(st.text(_CHARS, max_size=6), st.sampled_from(["__bytes__", "AAAA", '"__bytes__"', "\\u005f"]))
_KEYS = st.one_of(st.sampled_from(["__bytes__", "a", "data"]), st.text(_CHARS, max_size=4))
_LEAVES = st.one_of(st.none(), st.booleans(), st.integers(-2 ** 70, 2 ** 70),
                    st.floats(allow_nan=False, allow_infinity=False), _TEXT, st.binary(max_size=6))
_VALUES = st.recursive(_LEAVES, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                        st.dictionaries(_KEYS, inner, max_size=3)), max_leaves=15)
_JSON = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), _TEXT),
                     lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(_KEYS, inner, max_size=3)),
                     max_leaves=10)
_ARGUMENTS = st.dictionaries(_KEYS, _JSON, max_size=3)  # (a model's tool-call arguments: JSON, spelling it or not)


def test_every_user_of_the_codec_reads_back_what_it_wrote():
    from agenthub.agent.journal import _with_bytes, entry_read
    from agenthub.apps.conversations import _dumps, _loads
    from agenthub.apps.server import _dumps as served, _encode_event
    from agenthub.cache import _decode, _Recording
    from agenthub.jobs.jobfile import JobRow, read_jobs
    from agenthub.providers.agenthub_server import parse_stream
    from agenthub.sse import iter_events
    from agenthub.stream import surrogates_escaped
    from agenthub.tracer import load_trace, save_trace
    from agenthub.types import from_jsonable

    with tempfile.TemporaryDirectory() as root:
        count = [0]

        @SETTINGS
        @given(_VALUES, _ARGUMENTS, st.binary(min_size=1, max_size=6))
        def check(anything, arguments, data):
            count[0] += 1
            assert same(_loads(_dumps(anything)), anything)  # a saved conversation
            message = {"role": "user", "content_items": [{"type": "text", "text": "hi"}], "metadata": anything}
            trace = load_trace(save_trace("t{}".format(count[0]), "m", [message], {"metadata": anything},
                                          root=root)["json"])
            assert same(trace["history"], [message]) and same(trace["config"]["metadata"], anything)
            events = _events(arguments, data)
            recording = _Recording("k1", None, 1 << 20)
            for event in events:
                recording.add(event)
            entry = recording.entry()
            assert entry is not None and same(_decode(entry, "k1"), events)  # the response cache
            spoken = _message(arguments, data)
            text = _with_bytes({"turn": 0, "message": spoken, "cost": None, "route": None, "k": "turn"}, "message")
            assert same(entry_read(json.loads(text), 0)["message"], spoken)  # the journal
            assert same(from_jsonable(json.loads(served(anything)), strict=True), anything)  # serve, both ways
            body = b"".join(_encode_event(event) for event in events) + b"data: [DONE]\n\n"
            assert same(list(parse_stream(iter_events([body])))[:-1], [e["content_items"][0] for e in events[1:-1]])
            row = JobRow(id="r1", model="m", messages=[spoken], config={"extra_body": {"metadata": arguments}})
            path = os.path.join(root, "j{}.jsonl".format(count[0]))
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(surrogates_escaped(json.dumps(row.to_json(), ensure_ascii=False)) + "\n")
            try:
                json.dumps(arguments, ensure_ascii=False).encode("utf-8")
            except UnicodeEncodeError:  # a lone surrogate (in a name or a value): a row nothing can send, refused
                with pytest.raises(ConfigError, match="holds a lone surrogate"):
                    read_jobs(path)
                return
            read = read_jobs(path)
            assert not read.invalid and same(read.rows[0].messages, row.messages) and \
                same(read.rows[0].config, row.config)  # a job file

        check()
