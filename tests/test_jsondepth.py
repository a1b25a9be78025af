"""JSON nested near the recursion limit never aborts the interpreter (agenthub._jsondepth).

On Python 3.8 to 3.10, a RecursionError raised deep down leaves the thread "overflowed" until its stack is back
50 frames under the limit; a garbage collection the decoder's allocations start there runs finalizers (and
``gc.callbacks``: Hypothesis installs one) at that depth, and once one of them reaches the limit the decoder goes
on down and the process dies of SIGABRT ("Fatal Python error: Cannot recover from stack overflow"), no exception.
CI's 3.8 suite died that way twice in test_output_partial.py (find_json on an answer 100000 levels deep, with
Hypothesis' callback installed), with no output: the message went to pytest's captured stderr.
"""

import os
import subprocess
import sys

import pytest

from agenthub import _jsondepth
from agenthub.output.partial import find_json

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: a child that starts a garbage collection at every depth near the limit while deep answers are read, with a
#: finalizer that needs 30 frames: each reader must give its usual answer, and the child exit 0
SCRIPT = r"""
import gc, json, sys
sys.path.insert(0, sys.argv[1])
from agenthub import _jsondepth
from agenthub.output.partial import find_json
from agenthub.providers._common import data_payloads
from agenthub.sse import json_loads
from agenthub.toolcalls import read_arguments

if sys.argv[2] == "unguarded":
    _jsondepth.GUARDED = False  # (check reads it at each call: the readers below go as they did before)


class Junk:
    def __init__(self):
        self.me = self  # (a cycle: only a collection frees it, and runs its finalizer where it runs)

    def __del__(self):
        def down(n):
            return down(n - 1) if n else 0
        try:
            down(30)
        except RecursionError:
            pass


deep = "[" * 100000 + "]" * 100000
readers = [
    ("find_json", lambda: find_json(deep)[1]),
    ("json_loads", lambda: json_loads(deep)),
    ("data_payloads", lambda: list(data_payloads([("message", deep)]))),
    ("read_arguments", lambda: read_arguments('{"a": ' + deep + "}")),
]
seen = {}
for threshold in range(900, 1100, 3):
    for name, read in readers:
        gc.collect()
        gc.set_threshold(threshold)
        Junk()
        try:
            outcome = read()
        except RecursionError:
            outcome = "RecursionError"
        finally:
            gc.set_threshold(700)
        seen.setdefault(name, set()).add(outcome)
print(json.dumps({name: sorted(outcomes) for name, outcomes in sorted(seen.items())}))
"""


def _child(mode):
    return subprocess.run([sys.executable, "-c", SCRIPT, ROOT, mode], capture_output=True, text=True, timeout=300)


def test_deep_json_read_while_a_collection_runs_finalizers_deep_down_never_aborts():
    done = _child("guarded")
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.strip() == (
        '{"data_payloads": ["RecursionError"], "find_json": ["the answer\'s JSON is nested too deeply to read"], '
        '"json_loads": ["RecursionError"], "read_arguments": ["RecursionError"]}')


@pytest.mark.skipif(sys.version_info >= (3, 9), reason="this child aborts on 3.8; on 3.9 it exits 0 (the state is "
                    "there, this script does not reach it), 3.10 keeps the state only while the error is being made, "
                    "3.11 and later none")
def test_without_the_measure_the_same_child_dies_of_sigabrt():
    """The test above can fail: with the measure switched off, Python 3.8 aborts in the same child."""
    done = _child("unguarded")
    assert done.returncode == -6, (done.returncode, done.stdout, done.stderr[-500:])
    assert "Fatal Python error: Cannot recover from stack overflow" in done.stderr


@pytest.mark.skipif(not _jsondepth.GUARDED, reason="a no-op on 3.11 and later")
def test_check_raises_the_decoders_own_error_or_recursion_error_and_leaves_what_it_can_read():
    deep = "[" * 5000 + "]" * 5000
    with pytest.raises(RecursionError) as caught:
        _jsondepth.check(deep)
    # (in the decoder's own words: the readers that show it, a batch state file's ConfigError say, read the same)
    assert str(caught.value) == "maximum recursion depth exceeded while decoding a JSON array from a unicode string"
    with pytest.raises(RecursionError, match="^maximum recursion depth exceeded while decoding a JSON object from"):
        _jsondepth.check('{"a": ' * 5000)
    with pytest.raises(RecursionError):
        _jsondepth.check(deep.encode("utf-8"))
    # not JSON before it goes deep: the decoder's own error, at the same place
    with pytest.raises(ValueError) as caught:
        _jsondepth.check("[1, x" + deep)
    assert str(caught.value) == "Expecting value: line 1 column 5 (char 4)"
    # a value that ends before the deep part: read by the decoder without going deeper
    _jsondepth.check("[1] " + deep)
    # brackets inside strings are no nesting; whitespace before the value is skipped as json.loads does
    _jsondepth.check(" \n" + '["' + "[" * 5000 + '"]')
    _jsondepth.check("[" * 100 + "]" * 100)
    # more brackets than the room, the room-th of them inside a string: read as the text running out, then measured
    _jsondepth.check('["' + "[" * 5000 + '", 1]')
    _jsondepth.check(('["' + "[" * 5000 + '", 1]').encode("utf-8"))
    # a parse hook's refusal before the cut (find_json's NaN) is that refusal, not "too deep"
    assert find_json('{"a": NaN, "b": [' * 5000) == (
        None, "the answer is not JSON (it begins {!r})".format(('{"a": NaN, "b": [' * 5)[:80]))


def test_the_same_answers_on_every_python():
    """What the measure refuses is what the decoder refuses on 3.11 and later: deep, too deep; broken, broken."""
    # (100000 levels: past every Python's decoder; 3.12 and later read a few thousand where 3.8 reads about 1000)
    assert find_json("[" * 100000 + "]" * 100000) == (None, "the answer's JSON is nested too deeply to read")
    assert find_json("[" * 100000 + "x") == (None, "the answer's JSON is nested too deeply to read")  # (x: too far)
    assert find_json('{"a": NaN, "b": [' * 30000) == (None, "the answer is not JSON (it begins {!r})".format(
        ('{"a": NaN, "b": [' * 5)[:80]))  # (broken before it is deep: NaN)
    assert find_json('{"a": "' + "[" * 100000 + '"}') == ({"a": "[" * 100000}, None)


@pytest.mark.skipif(not _jsondepth.GUARDED, reason="a no-op on 3.11 and later")
def test_a_broken_answer_with_many_brackets_costs_no_measure(monkeypatch):
    """An answer broken before it is deep (find_json's tries, 64 of them on a large one) is refused by the read of
    its beginning alone: its depth is never measured (each measure a pass over the whole text)."""
    def measured(text, past):
        raise AssertionError("measured")

    monkeypatch.setattr(_jsondepth, "_deepest", measured)
    assert find_json('{"a": NaN, "b": [' * 5000) == (None, "the answer is not JSON (it begins {!r})".format(
        ('{"a": NaN, "b": [' * 5)[:80]))
    with pytest.raises(ValueError) as caught:
        _jsondepth.check("[1, 2, x" + "[" * 5000)
    assert str(caught.value) == "Expecting value: line 1 column 8 (char 7)"
    _jsondepth.check("[1, 2] " + "[" * 5000)  # (a value that ends first: all the decoder reads)



@pytest.mark.skipif(not _jsondepth.GUARDED, reason="a no-op on 3.11 and later")
def test_bytes_are_read_in_the_encoding_json_loads_reads_them_in():
    """json.loads takes bytes in UTF-8 (a byte order mark too), UTF-16 or UTF-32; the measure read them as UTF-8
    (each bracket of UTF-16 followed by a NUL: 'Expecting value'), refusing a flat list of 1,000 objects."""
    text = '[{"a": "\u00e9"}' + ', {"a": "\u00e9"}' * 999 + "]"
    value = [{"a": "\u00e9"}] * 1000
    for raw in (text.encode("utf-16"), text.encode("utf-16-le"), text.encode("utf-16-be"), text.encode("utf-32"),
                text.encode("utf-32-le"), b"\xef\xbb\xbf" + text.encode("utf-8"), bytearray(text.encode("utf-8"))):
        assert _jsondepth.loads(raw) == value
    deep = "[" * 5000 + "]" * 5000
    for raw in (deep.encode("utf-16"), deep.encode("utf-32-be"), b"\xef\xbb\xbf" + deep.encode("utf-8")):
        with pytest.raises(RecursionError, match="^maximum recursion depth exceeded while decoding a JSON array"):
            _jsondepth.check(raw)
    # bytes that are no UTF-8: json.loads' own UnicodeDecodeError, as without the measure
    with pytest.raises(UnicodeDecodeError):
        _jsondepth.loads(b"[" + b'"\xff", ' * 2000 + b"1]")
    # a str beginning with a byte order mark: json.loads' own words
    with pytest.raises(ValueError) as caught:
        _jsondepth.loads("\ufeff" + text)
    assert str(caught.value) == "Unexpected UTF-8 BOM (decode using utf-8-sig): line 1 column 1 (char 0)"


@pytest.mark.skipif(not _jsondepth.GUARDED, reason="a no-op on 3.11 and later")
def test_a_string_left_open_is_one_token_of_the_cut_finding_pass():
    """The pass that finds where a text goes past the room met each quote of a string left open (or opened by a
    stray backslash's quote) with a match tried to the text's end and failed: quadratic, 51 KB of '\\"' after a
    broken text took 10 s on 3.8 where json.loads refuses it at once.  Each quote now begins one token."""
    tail = ',\\"' * 1000 + "[" * 2000
    assert _jsondepth._BRACKET_OR_STRING.match('"' + tail).end() == 1 + len(tail)
    assert _jsondepth._BRACKET_OR_STRING.match('"a\\\n[[').end() == 6  # (a backslash before a line break too)
    broken = '["' + "[" * 1000 + '"' + tail  # (the room-th bracket inside the string: the beginning runs out)
    with pytest.raises(ValueError) as caught:
        _jsondepth.loads(broken)
    assert str(caught.value) == "Expecting value: line 1 column 1005 (char 1004)"  # (json.loads' own: the backslash)


@pytest.mark.parametrize("value", [None, 5, [1] * 200, {"a": 1}, ("[",) * 200])
def test_what_is_no_text_gets_the_decoders_own_type_error(value):
    with pytest.raises(TypeError) as caught:
        _jsondepth.loads(value)
    assert str(caught.value) == "the JSON object must be str, bytes or bytearray, not {}".format(type(value).__name__)


@pytest.mark.skipif(not _jsondepth.GUARDED, reason="a no-op on 3.11 and later")
def test_a_text_deep_from_its_start_is_summed_until_it_goes_past_the_room(monkeypatch):
    """find_json tries up to 64 places of an answer; each try past the room summed every bracket from there to the
    end (a model stuck writing '[' to its output limit: a megabyte of them took 4 s on 3.8, where the decoder
    takes 0.09 s).  Each try now sums one part of ``_PART`` brackets and stops: it went past already."""
    from itertools import accumulate

    summed = [0]

    def counted(steps, **options):
        for value in accumulate(steps, **options):
            summed[0] += 1
            yield value

    monkeypatch.setattr(_jsondepth, "accumulate", counted)
    assert find_json("[" * 200000) == (None, "the answer's JSON is nested too deeply to read")
    assert 0 < summed[0] <= 65 * (_jsondepth._PART + 1)  # (the whole answer, then 64 tries: one part each)
    # a string whose brackets run past a part's end: the next part begins inside it
    crossing = '["' + "[" * _jsondepth._PART + '", '
    with pytest.raises(RecursionError):
        _jsondepth.check(crossing + "[" * 5000)
    assert _jsondepth.loads(crossing + "[1], " * 3000 + "1]") == ["[" * _jsondepth._PART] + [[1]] * 3000 + [1]
    # a part wholly inside a string counts none of its brackets, a stray closing bracket counts as before
    assert _jsondepth._deepest('["' + "[" * (3 * _jsondepth._PART) + '", [[1]]]', 10 ** 6) == 3
    assert _jsondepth._deepest("]" + "[" * 10, 10 ** 6) == 9
