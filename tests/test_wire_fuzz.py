"""The recorded provider streams (../shared/wire, agenthub/recordings, and each relayed by an agenthub server
on its three wires), mutated by a seeded fuzzer (tests/wirefuzz.py), read the way the client reads them.

- A body that means the same to any SSE reader (other chunking, CRLF or CR, a byte order mark, comment
  keep-alives, blank lines, ``data:`` without its space, ``id`` / ``retry`` fields) gives exactly the
  outcome of the recording.
- A broken body (truncated, events or lines dropped, repeated or swapped, JSON values of another type,
  huge numbers, NaN / Infinity, deep nesting, lone surrogates, invalid UTF-8) gives an AgentHubError, or a
  stream check_stream accepts, whose collected turn the next request can carry back (the message check
  passes, the body is strict JSON; but for what a fidelity holds, kept as it came); a truncated body that
  still completes has all of the answer's text.
- The (event, data) path ``Protocol.read`` takes and ``parse_stream`` over SSEEvents agree.

Nothing else may escape: a KeyError, an OverflowError, a UnicodeEncodeError on the next turn are failures.
"""

import json
import os

import pytest

import wirefuzz
from agenthub import check_stream, collect
from conftest import WIRE_DIR

pytestmark = pytest.mark.skipif(not os.path.isdir(WIRE_DIR), reason="../shared/wire is absent")

SEED = 20261207
CASES = 800


def _problem(folder, kind, chunks, original, sidecar):
    """None, or what is wrong with the outcome of one case."""
    got = wirefuzz.outcome(folder, chunks)
    if folder not in ("bedrock", "agenthub"):
        other = wirefuzz.outcome(folder, chunks, tuples=False)
        if wirefuzz.comparable(other) != wirefuzz.comparable(got):
            return "the two read paths differ: {} / {}".format(str(got)[:200], str(other)[:200])
    if kind in wirefuzz.SAME:
        expected = wirefuzz.comparable(wirefuzz.outcome(folder, [original]))
        if wirefuzz.comparable(got) != expected:
            return "not the recording's outcome: {} / {}".format(str(got)[:200], str(expected)[:200])
        return None
    if got[0] != "ok":
        return None
    events = got[1]
    check_stream(events)
    message = collect(events)
    data, error = wirefuzz.next_request(folder, message)
    if error is not None and "['fidelity']" not in str(error):
        # (a server's NaN, lone surrogate or deep nesting inside a fidelity is kept as it came: the answer is
        # written, a job's row too; only the next turn refuses it: test_stream_sendable.py's docstring)
        return "an answer the next turn refuses: {!r}".format(error)[:300]
    json.dumps(message, default=lambda value: value.hex(), allow_nan=False)
    if kind == "truncate" and sidecar is not None:
        text = "".join(i["text"] for e in events for i in e["content_items"] if i["type"] == "text")
        if text != sidecar["expect"]["text"]:
            return "a cut answer completed without all its text: {!r}".format(text[-80:])
    return None


def test_mutated_recordings_give_the_same_answer_a_typed_error_or_an_answer_that_can_be_sent_back():
    problems = []
    kinds = set()
    for folder, name, kind, chunks, original, sidecar in wirefuzz.cases(SEED, CASES):
        kinds.add(kind)
        try:
            problem = _problem(folder, kind, chunks, original, sidecar)
        except Exception as exc:  # noqa: BLE001 - anything escaping is what this test looks for
            problem = "{}: {}".format(type(exc).__name__, str(exc)[:200])
        if problem is not None:
            problems.append((folder, name, kind, problem))
    assert problems == []
    assert kinds == set(wirefuzz.SAME + wirefuzz.BROKEN)  # every mutation ran


def test_the_fuzzer_is_deterministic():
    first = [(f, n, k, b"".join(c)) for f, n, k, c, _, _ in wirefuzz.cases(SEED, 40)]
    assert first == [(f, n, k, b"".join(c)) for f, n, k, c, _, _ in wirefuzz.cases(SEED, 40)]
    assert {f for f, _, _, _ in first} >= {"openai_chat", "anthropic", "gemini", "openai_responses"}
