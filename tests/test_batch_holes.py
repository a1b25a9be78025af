"""Issue 29 D1: the batch engine against hostile or broken inputs (results downloads, result keys, state
files, input files changed after submit, concurrent runs, odd row ids, huge job lines)."""

import json
import sys

import pytest

from agenthub.errors import StreamProtocolError  # noqa: F401
from agenthub.jobs.backends._wire import BadLine, Wire
from agenthub.providers._common import Endpoint


class _Body(object):
    def __init__(self, chunks):
        self.chunks = chunks
        self.read = 0
        self.closed = False

    def __iter__(self):
        for chunk in self.chunks:
            self.read += 1
            yield chunk

    def close(self):
        self.closed = True


def _wire(chunks, limit=None):
    wire = Wire("anthropic", Endpoint("anthropic", "http://127.0.0.1:9", "k-0123456789"))
    body = _Body(chunks)
    wire.raw = lambda *args, **kwargs: body
    if limit is not None:
        wire.max_line_bytes = limit
    return wire, body


def _lines(chunks, limit=None):
    wire, body = _wire(chunks, limit)
    out = [item.reason if isinstance(item, BadLine) else item for item in wire.lines("http://127.0.0.1:9/r")]
    assert body.closed
    return out


def test_results_lines_come_whole_whatever_the_cuts():
    text = b'{"a": 1}\n\n{"b": "x\\ny"}\n{"c": [1, 2]}\nnot json\n{"d": 4}'
    for size in (1, 2, 3, 5, 7, len(text)):
        chunks = [text[i:i + size] for i in range(0, len(text), size)]
        assert _lines(chunks) == [{"a": 1}, {"b": "x\ny"}, {"c": [1, 2]},
                                  "anthropic: line 5 of the batch results is not JSON", {"d": 4}], size


def test_one_long_results_line_is_read_in_linear_work():
    """64 KiB pieces of a 32 MB line: each piece is searched once and the line joined once (work counted, not
    timed: every find/split/index on a bytes object of this thread, by its size)."""
    line = b'{"custom_id": "r1", "pad": "' + b"A" * (32 << 20) + b'"}\n'
    chunks = [line[i:i + 65536] for i in range(0, len(line), 65536)]
    scanned = [0]

    def profile(frame, event, arg):
        if event == "c_call" and getattr(arg, "__name__", "") in ("find", "split", "index", "rfind", "partition"):
            target = getattr(arg, "__self__", None)
            if isinstance(target, (bytes, bytearray)):
                scanned[0] += len(target)

    wire, body = _wire(chunks)
    sys.setprofile(profile)
    try:
        items = list(wire.lines("http://127.0.0.1:9/r"))
    finally:
        sys.setprofile(None)
    assert [item["custom_id"] for item in items] == ["r1"] and len(items[0]["pad"]) == 32 << 20
    assert scanned[0] < 3 * len(line), scanned  # before: the whole unfinished line again for every piece


def test_a_line_above_the_limit_is_a_bad_line_not_kept_and_the_next_lines_still_come():
    chunks = [b'{"a": 1}\n{"big": "', b"x" * 40, b"x" * 40, b'"}\n{"b": 2}\n', b'{"tail": "' + b"y" * 90]
    assert _lines(chunks, limit=64) == [{"a": 1}, "anthropic: line 2 of the batch results is longer than 64 bytes",
                                        {"b": 2}, "anthropic: line 4 of the batch results is longer than 64 bytes"]
    # a line that never ends is read past in bounded memory: one BadLine, nothing kept
    wire, body = _wire(iter([b'{"a": 1}\n'] + [b"z" * 1000] * 2000), limit=4096)
    items = list(wire.lines("http://127.0.0.1:9/r"))
    assert [i if not isinstance(i, BadLine) else i.reason for i in items] == [
        {"a": 1}, "anthropic: line 2 of the batch results is longer than 4096 bytes"]
