"""The incremental JSON reader behind streamed typed output (issue 40, item 5): every split of a document
gives the document; what it shows on the way is always a part of the final value; not-JSON stops it with
a position; linear work (measured in bench/typed_output.py, not timed here)."""

import copy
import json
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agenthub.output.partial import PartialJSON
from agenthub.output.parse import find_json

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-10 ** 12, 10 ** 12)
    | st.floats(allow_nan=False, allow_infinity=False, width=64) | st.text(max_size=12),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4),
    max_leaves=25)
CONTAINER = st.one_of(st.lists(JSON, max_size=4), st.dictionaries(st.text(max_size=6), JSON, max_size=4))


def _part_of(partial, final):
    """``partial`` is what the reader may show of ``final``: complete members and elements equal the
    final ones; the last one of a container may be a container still being written."""
    if isinstance(final, dict):
        assert isinstance(partial, dict)
        keys = list(partial)
        assert keys == list(final)[:len(keys)]
        for n, key in enumerate(keys):
            if n == len(keys) - 1 and isinstance(final[key], (dict, list)):
                _part_of(partial[key], final[key])
            else:
                assert partial[key] == final[key]
    elif isinstance(final, list):
        assert isinstance(partial, list)
        assert len(partial) <= len(final)
        for n, value in enumerate(partial):
            if n == len(partial) - 1 and isinstance(final[n], (dict, list)):
                _part_of(value, final[n])
            else:
                assert value == final[n]
    else:
        assert partial == final


@settings(max_examples=300, deadline=None)
@given(CONTAINER, st.booleans(), st.data())
def test_every_split_reads_the_document_and_shows_only_parts_of_it(document, ascii_only, data):
    text = json.dumps(document, ensure_ascii=ascii_only, indent=data.draw(st.sampled_from([None, 1])))
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=12)))
    reader = PartialJSON()
    start = 0
    for cut in cuts + [len(text)]:
        reader.feed(text[start:cut])
        start = cut
        assert reader.error is None
        if reader.value is not None:
            _part_of(copy.deepcopy(reader.value), json.loads(text))
    assert reader.done
    assert reader.value == json.loads(text)


def test_what_it_shows_as_an_object_streams_in():
    text = '{"name": "Ann", "tags": ["a", "b"], "address": {"city": "Rome", "zip": "00100"}, "age": 31}'
    seen = []
    reader = PartialJSON()
    for char in text:
        reader.feed(char)
        if not seen or seen[-1] != reader.value:
            seen.append(copy.deepcopy(reader.value))
    assert seen == [
        {},
        {"name": "Ann"},
        {"name": "Ann", "tags": []},
        {"name": "Ann", "tags": ["a"]},
        {"name": "Ann", "tags": ["a", "b"]},
        {"name": "Ann", "tags": ["a", "b"], "address": {}},
        {"name": "Ann", "tags": ["a", "b"], "address": {"city": "Rome"}},
        {"name": "Ann", "tags": ["a", "b"], "address": {"city": "Rome", "zip": "00100"}},
        {"name": "Ann", "tags": ["a", "b"], "address": {"city": "Rome", "zip": "00100"}, "age": 31},
    ]
    assert reader.done


def test_prose_and_a_fence_before_the_json_are_skipped():
    reader = PartialJSON()
    for piece in ["Sure! Here it is:\n```js", "on\n{\"a\": [1, 2", "]}\n```\nAnything else?"]:
        reader.feed(piece)
    assert reader.value == {"a": [1, 2]} and reader.done and reader.error is None


def test_escapes_and_surrogate_pairs_cut_anywhere():
    text = json.dumps({"s": "\u00e9 \U0001F600 \"q\" \\ \n end"}, ensure_ascii=True)
    for cut in range(len(text) + 1):
        reader = PartialJSON()
        reader.feed(text[:cut])
        reader.feed(text[cut:])
        assert reader.value == {"s": "\u00e9 \U0001F600 \"q\" \\ \n end"}, cut


@pytest.mark.parametrize("text, error, value", [
    ('{"a" 1}', "expected ':' at character 5", {}),
    ('{"a": 1,}', "expected a member name at character 8", {"a": 1}),
    ('[1, ]', "not JSON at character 4", [1]),
    ('{"a": tru }', "not JSON at character 6", {}),
    ('{"a": 01}', "not a JSON number at character 6", {}),
    ('{"a": "\\x"}', "bad escape at character 7", {}),
])
def test_what_is_not_json_stops_the_reading_with_its_position(text, error, value):
    reader = PartialJSON()
    reader.feed(text)
    reader.feed(" ")
    assert (reader.error, reader.value, reader.done) == (error, value, False)


def test_a_second_document_after_the_first_is_not_read():
    reader = PartialJSON()
    reader.feed('{"a": 1} {"b": 2}')
    assert (reader.value, reader.done, reader.error) == ({"a": 1}, True, None)


def test_nesting_is_bounded():
    reader = PartialJSON(max_depth=10)
    reader.feed("[" * 11)
    assert reader.error == "nested deeper than 10 at character 10"
    reader = PartialJSON()  # (by default at MAX_DEPTH: what find_json refuses is never a partial value)
    reader.feed("[" * 129)
    assert reader.error == "nested deeper than 128 at character 128"


@pytest.mark.parametrize("text, error, value", [
    ('{"a": 1, "b": 1e400, "c": 2}', "a number past a float's range at character 14", {"a": 1}),
    ('{"a": [-1e400]', "a number past a float's range at character 7", {"a": []}),
    ('{"a": "x", "b": "y\\ud800z"}', "a string that is not valid Unicode (a lone surrogate) at character 18",
     {"a": "x"}),
    ('{"\\udc00": 1}', "a string that is not valid Unicode (a lone surrogate) at character 2", {}),
    ('{"a": "\\ud83d\\ude00", "b": "\\ud83d"}',
     "a string that is not valid Unicode (a lone surrogate) at character 28", {"a": "\U0001F600"}),
])
def test_what_find_json_refuses_stops_the_streamed_reader(text, error, value):
    """What the whole answer's check refuses (1e400, a lone surrogate) never shows in a partial value: inf or
    a lone surrogate there broke a caller's json.dumps(allow_nan=False) or UTF-8 write of the progress."""
    reader = PartialJSON()
    reader.feed(text)
    reader.feed(" ")
    assert (reader.error, reader.value) == (error, value)


def test_raw_utf16_halves_in_the_deltas_read_as_the_collected_text_reads_them():
    """A gateway slicing by UTF-16 index sends a character's halves in two deltas: the collected message joins
    them (agenthub.stream.whole_text), and so does the partial value; a half without its partner is U+FFFD."""
    reader = PartialJSON()
    for piece in ('{"a": "x\ud83d', '\ude00y", "b": "\udc00"', "}"):
        reader.feed(piece)
    assert (reader.value, reader.error, reader.done) == ({"a": "x\U0001F600y", "b": "\ufffd"}, None, True)


@pytest.mark.parametrize("text, value, why", [
    ('{"a": 1}', {"a": 1}, None),
    ('Here you go:\n```json\n{"a": [1, 2]}\n```', {"a": [1, 2]}, None),
    ('I think [the answer] is {"a": 2} indeed', {"a": 2}, None),
    ('{"a": NaN}', None, "the answer is not JSON (it begins '{\"a\": NaN}')"),
    ('   ', None, "the answer is empty"),
    ('no json here', None, "the answer is not JSON (it begins 'no json here')"),
    # a document that begins as JSON and closes but does not parse: no member inside it is read as the answer
    ('{"a": NaN, "b": {"c": 1}}', None, "the answer is not JSON (it begins '{\"a\": NaN, \"b\": {\"c\": 1}}')"),
    ('{"s": "}{", "x": NaN} then {"ok": 1}', {"ok": 1}, None),
    ('Not {"a": \'x\'} but {"a": 1}', {"a": 1}, None),
    ('[Result: {"a": 1}]', {"a": 1}, None),
    # a lone surrogate (JSON's escape lets it through): no valid Unicode, refused as pydantic refuses it
    ('{"a": "\\ud800"}', None, "the answer's JSON holds a string that is not valid Unicode (a lone surrogate)"),
    ('Sure: {"\\udc00": 1}', None, "the answer's JSON holds a string that is not valid Unicode (a lone surrogate)"),
    ('{"a": "\ud800"}', None, "the answer's JSON holds a string that is not valid Unicode (a lone surrogate)"),
    ('{"a": "\\ud83d\\ude00", "b": "\\\\ud800"}', {"a": "\U0001F600", "b": "\\ud800"}, None),
])
def test_find_json_finds_the_document_in_an_answer(text, value, why):
    assert find_json(text) == (value, why)


def test_a_long_number_is_read_in_linear_time():
    """A model that writes 0.333... to its output limit: the number's read pieces are kept apart (as a
    string's), so the unread tail stays a few characters and the reading linear (it was quadratic: 80,000
    deltas of "3333" took 34 s)."""
    reader = PartialJSON()
    reader.feed('{"x": 0.')
    longest = 0
    for _ in range(20000):
        reader.feed("3333")
        longest = max(longest, len(reader._text) - reader._pos)
    assert (reader.value, longest) == ({}, 0)
    reader.feed(', "y": -12')
    reader.feed("5e-1}")
    assert (reader.value, reader.done, reader.error) == ({"x": float("0." + "3" * 80000), "y": -125e-1}, True, None)


@pytest.mark.parametrize("deltas, value", [
    (['{"n": 1', '2', '3', '4}'], {"n": 1234}),
    (['{"n": -', '0.5', 'e', '+', '2, "m": 1', '}'], {"n": -50.0, "m": 1}),
    (['{"n": 1', '2', '.', '}'], {}),
    (['[1', '0', ', 2', '0', ']'], [10, 20]),
])
def test_a_number_cut_anywhere_is_read_whole(deltas, value):
    reader = PartialJSON()
    for delta in deltas:
        reader.feed(delta)
    assert reader.value == value


def test_a_number_too_long_for_an_int_stops_the_reading():
    """More digits than Python reads into an int (4300 from 3.11, and patched 3.8): the reader stops as it
    does on anything that is not JSON (it raised ValueError out of streaming_parse)."""
    reader = PartialJSON()
    reader.feed('{"a": 1, "b": ' + "7" * 5000)
    reader.feed("}")
    if hasattr(sys, "get_int_max_str_digits") and sys.get_int_max_str_digits():
        assert (reader.value, reader.error) == ({"a": 1}, "a number too long to read at character 14")
    else:  # pragma: no cover - a Python without the limit reads it
        assert (reader.value, reader.error) == ({"a": 1, "b": int("7" * 5000)}, None)


def test_find_json_bounds_what_it_reads():
    """Nesting past the decoder's stack and a number past a float's range (1e400: infinity, which no JSON
    value nor output row holds) are answers that are not read as values, never RecursionError or inf."""
    assert find_json("[" * 100000 + "]" * 100000) == (None, "the answer's JSON is nested too deeply to read")
    assert find_json("Sure: " + "{\"a\": " * 50000 + "1" + "}" * 50000) == (
        None, "the answer's JSON is nested too deeply to read")
    assert find_json('{"a": 1e400}') == (None, "the answer is not JSON (it begins '{\"a\": 1e400}')")
    assert find_json('{"a": -1e400}') == (None, "the answer is not JSON (it begins '{\"a\": -1e400}')")
    assert find_json('{"a": 1e308, "b": 1' + "0" * 400 + '}') == ({"a": 1e308, "b": 10 ** 400}, None)
    # what parses but nests past MAX_DEPTH (the tool-call arguments' rule) is no value either: deeper, no pickle,
    # output row or next request would hold it
    assert find_json("[" * 128 + "]" * 128)[1] is None
    assert find_json("[" * 129 + "]" * 129) == (None, "the answer's JSON nests deeper than 128 levels")
    assert find_json("Here: " + '{"a": ' * 600 + "1" + "}" * 600) == (
        None, "the answer's JSON nests deeper than 128 levels")


def test_find_json_on_a_huge_broken_answer_is_quick():
    """Looking for where each broken document closes is bounded for the whole answer (unbounded, each of
    the 64 tries scanned to the end: this answer took about 10 s, 8 MB took 88 s)."""
    import time

    started = time.perf_counter()
    assert find_json('{"a": NaN, "b": [' * 60000) == (
        None, "the answer is not JSON (it begins {!r})".format(('{"a": NaN, "b": [' * 5)[:80]))
    assert find_json('{"a": "' + "x" * 1000000 + '", "b": NaN} then {"ok": 1}') == ({"ok": 1}, None)
    assert time.perf_counter() - started < 3
