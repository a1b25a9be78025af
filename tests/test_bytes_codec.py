"""The one ``{"__bytes__": base64}`` codec (``agenthub.types.to_jsonable`` / ``from_jsonable``) and its escape: a
dict of the caller's with that one key (a model's tool-call arguments may spell it) is written
``{"__bytes__": [its value]}``, so every value holding bytes anywhere reads back as it was, through every user of
the codec (the response cache, the journal, agenthub serve and its client, traces, saved conversations, job
files).  What earlier versions wrote (cache entries, journal entries) still reads the same: pinned below from
the exact text they wrote."""

import base64
import json
import random
import zlib

import pytest

from agenthub.types import from_jsonable, from_jsonable_exact, to_jsonable

MARK = "__bytes__"


def same(a, b):
    """``a == b`` with the types too (bytes is no str, True is no 1, a dict is no list)."""
    if type(a) is not type(b):
        return False
    if type(a) is dict:
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if type(a) is list:
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


def value(rng, depth=0, with_bytes=True):
    """A random JSON-able value: bytes anywhere (``with_bytes``), dicts spelling the marker (a string that is
    base64 or not, a list of one, several, a dict, bytes, another marker), nested."""
    kinds = 11 if depth < 4 else 4
    kind = rng.randrange(kinds)
    if kind == 0:
        return rng.choice(["", "AAAA", "aGk=", "not base64!", MARK, '{"__bytes__": "AAAA"}', "é\u6771"])
    if kind == 1:
        return rng.choice([0, 1, -7, 2.5, True, False, None])
    if kind in (2, 3):
        if with_bytes:
            return bytes(rng.randrange(256) for _ in range(rng.randrange(7)))
        return rng.choice(["AAAA", "x"])
    if kind == 4:
        return [value(rng, depth + 1, with_bytes) for _ in range(rng.randrange(4))]
    if kind == 5:
        return {rng.choice(["a", "b", MARK, "__bytes"]): value(rng, depth + 1, with_bytes)
                for _ in range(rng.randrange(4))}
    if kind in (6, 7):
        return {MARK: value(rng, depth + 1, with_bytes)}
    if kind == 8:
        return {MARK: [value(rng, depth + 1, with_bytes)]}
    if kind == 9:
        return {MARK: {MARK: [value(rng, depth + 1, with_bytes)]}}
    return {MARK: value(rng, depth + 1, with_bytes), "x": value(rng, depth + 1, with_bytes)}


def values(count, with_bytes=True, seed=20261207):
    rng = random.Random(seed)
    return [value(rng, 0, with_bytes) for _ in range(count)]


#: what the shapes that were ambiguous read back as before the escape (each a real loss)
AMBIGUOUS = [{MARK: "AAAA"}, {"arguments": {MARK: "aGk="}}, {MARK: ["x"]}, [{MARK: [{MARK: "AAAA"}]}],
             {MARK: b"\x00"}, {MARK: {MARK: "AAAA"}}]


def test_the_escape_is_written_for_a_dict_of_the_one_key_and_nothing_else():
    assert to_jsonable(b"\x00\xff") == {MARK: "AP8="}
    assert to_jsonable({MARK: "AAAA"}) == {MARK: ["AAAA"]}
    assert to_jsonable({MARK: b"\x00"}) == {MARK: [{MARK: "AA=="}]}
    assert to_jsonable({MARK: {MARK: "x"}}) == {MARK: [{MARK: ["x"]}]}
    assert to_jsonable({MARK: 1, "x": 2}) == {MARK: 1, "x": 2}  # (two keys: never taken for bytes)
    assert to_jsonable({"a": [MARK, {"b": 1}]}) == {"a": [MARK, {"b": 1}]}
    assert from_jsonable({MARK: ["AAAA"]}) == {MARK: "AAAA"}
    assert from_jsonable({MARK: 5}) == {MARK: 5}  # (never written: read as the dict it is)
    assert from_jsonable({MARK: ["a", "b"]}) == {MARK: ["a", "b"]}
    for wrong in ({MARK: 5}, {MARK: ["a", "b"]}, {MARK: []}, {MARK: None}, {MARK: "not base64!"}):
        with pytest.raises(ValueError):
            from_jsonable_exact(wrong)


@pytest.mark.parametrize("original", AMBIGUOUS)
def test_a_dict_spelling_the_marker_reads_back_as_it_was(original):
    text = json.dumps(to_jsonable(original))
    assert same(from_jsonable(json.loads(text)), original)
    assert same(from_jsonable(json.loads(text), strict=True), original)
    assert same(from_jsonable_exact(json.loads(text)), original)


def test_random_values_read_back_identical():
    for original in values(3000):
        text = json.dumps(to_jsonable(original))
        assert same(from_jsonable(json.loads(text), strict=True), original), text
        assert same(from_jsonable_exact(json.loads(text)), original), text


# -- through each user of the codec ------------------------------------------------------------------------

def _message(arguments, data):
    return {"role": "assistant", "content_items": [
        {"type": "text", "text": "x"},
        {"type": "tool_call", "name": "f", "arguments": arguments, "tool_call_id": "c1"},
        {"type": "inline_data", "data": data, "mime_type": "image/png"}]}


def _arguments(rng):
    found = value(rng, 1, with_bytes=False)  # (a model's arguments: JSON, spelling the marker or not)
    return found if type(found) is dict else {"v": found}


def _events(arguments, data):
    delta = {"role": "assistant", "event_type": "delta", "usage_metadata": None, "finish_reason": None,
             "created_at": 2}
    return [
        {"role": "assistant", "event_type": "start", "content_items": [], "usage_metadata": None,
         "finish_reason": None, "created_at": 1},
        dict(delta, content_items=[{"type": "partial_tool_call", "name": "f", "arguments": json.dumps(arguments),
                                    "tool_call_id": "c1"}]),
        dict(delta, content_items=[{"type": "tool_call", "name": "f", "arguments": arguments, "tool_call_id": "c1"}]),
        dict(delta, content_items=[{"type": "inline_data", "data": data, "mime_type": "image/png"}]),
        {"role": "assistant", "event_type": "stop", "content_items": [], "finish_reason": "tool_call",
         "created_at": 3,
         "usage_metadata": {"cached_tokens": None, "prompt_tokens": 3, "thoughts_tokens": 0, "response_tokens": 9}},
    ]


def _cached(events):
    from agenthub.cache import _decode, _Recording

    recording = _Recording("k1", None, 1 << 20)
    for event in events:
        recording.add(event)
    entry = recording.entry()
    assert entry is not None
    return entry, _decode(entry, "k1")


def test_the_cache_replays_arguments_spelling_the_marker_and_media_as_they_were():
    rng = random.Random(7)
    for _ in range(300):
        events = _events(_arguments(rng), bytes(rng.randrange(256) for _ in range(rng.randrange(1, 9))))
        entry, got = _cached(events)
        assert same(got, events)


def test_the_journal_reads_back_arguments_and_results_as_they_were():
    from agenthub.agent.journal import _with_bytes, entry_read

    rng = random.Random(11)
    for _ in range(300):
        message = _message(_arguments(rng), bytes(rng.randrange(256) for _ in range(rng.randrange(1, 9))))
        text = _with_bytes({"turn": 0, "message": message, "cost": None, "route": None, "k": "turn"}, "message")
        assert same(entry_read(json.loads(text), 0)["message"], message)
        item = {"type": "tool_result", "tool_call_id": "c1", "text": "", "content_items": [
            {"type": "inline_data", "data": b"\x01", "mime_type": "image/png"}]}
        text = _with_bytes({"turn": 0, "id": "c1", "item": item, "seconds": 0.5, "k": "result"}, "item")
        assert same(entry_read(json.loads(text), 1)["item"], item)


def test_serve_frames_and_requests_carry_them_as_they_were():
    from agenthub.apps.server import _dumps, _encode_event
    from agenthub.providers._common import Endpoint
    from agenthub.providers.agenthub_server import build_request, parse_stream
    from agenthub.sse import iter_events

    rng = random.Random(13)
    for _ in range(200):
        anything = value(rng)
        assert same(from_jsonable(json.loads(_dumps(anything)), strict=True), anything)
        arguments, data = _arguments(rng), bytes(rng.randrange(256) for _ in range(rng.randrange(1, 9)))
        events = _events(arguments, data)
        body = b"".join(_encode_event(e) for e in events) + b"data: [DONE]\n\n"
        parts = list(parse_stream(iter_events([body])))
        assert same(parts[:-1], [e["content_items"][0] for e in events[1:-1]])
        plan = build_request(Endpoint("http://127.0.0.1:9", "k"), "m", [_message(arguments, data)], {})
        sent = json.loads(json.dumps(plan.body))  # (what the server reads: from_jsonable, strict)
        assert same(from_jsonable(sent["messages"], strict=True), [_message(arguments, data)])


def test_traces_conversations_and_job_lines_read_back_as_they_were(tmp_path):
    from agenthub.apps.conversations import _dumps, _loads
    from agenthub.jobs.jobfile import JobRow, parse_line
    from agenthub.tracer import load_trace, save_trace

    rng = random.Random(17)
    for number in range(60):
        anything = value(rng)
        message = {"role": "user", "content_items": [{"type": "text", "text": "hi"}], "metadata": anything}
        paths = save_trace("t{}".format(number), "m", [message], {"metadata": anything}, root=str(tmp_path))
        trace = load_trace(paths["json"])
        assert same(trace["history"], [message]) and same(trace["config"]["metadata"], anything)
        assert same(_loads(_dumps(anything)), anything)
        arguments, data = _arguments(rng), bytes(rng.randrange(256) for _ in range(rng.randrange(1, 9)))
        row = JobRow(id="r1", model="m", messages=[{"role": "user", "content_items": [
            {"type": "inline_data", "data": data, "mime_type": "image/png"}]}, _message(arguments, data)],
            config={"extra_body": {"metadata": arguments}})
        again = parse_line(json.loads(json.dumps(row.to_json())), 1)
        assert same(again.messages, row.messages) and same(again.config, row.config)


# -- what earlier versions wrote reads the same ------------------------------------------------------------

#: an answer an earlier agenthub cached (as it wrote it: tool-call arguments spelling the marker unescaped,
#: an image's bytes as {"__bytes__": base64})
OLD_CACHE_TEXT = (
    '{"key":"k1","stored_at":1765000000000,"events":['
    '{"role":"assistant","event_type":"start","content_items":[],"usage_metadata":null,"finish_reason":null,'
    '"created_at":1},'
    '{"role":"assistant","event_type":"delta","usage_metadata":null,"finish_reason":null,"created_at":2,'
    '"content_items":[{"type":"partial_tool_call","name":"f","arguments":'
    '"{\\"a\\":{\\"__bytes__\\":\\"AAAA\\"},\\"b\\":{\\"__bytes__\\":[\\"x\\"]}}","tool_call_id":"c1"}]},'
    '{"role":"assistant","event_type":"delta","usage_metadata":null,"finish_reason":null,"created_at":2,'
    '"content_items":[{"type":"tool_call","name":"f","arguments":{"a":{"__bytes__":"AAAA"},"b":{"__bytes__":["x"]}},'
    '"tool_call_id":"c1"}]},'
    '{"role":"assistant","event_type":"delta","usage_metadata":null,"finish_reason":null,"created_at":2,'
    '"content_items":[{"type":"inline_data","data":{"__bytes__":"AP8Q"},"mime_type":"image/png"}]},'
    '{"role":"assistant","event_type":"stop","content_items":[],"finish_reason":"tool_call","created_at":3,'
    '"usage_metadata":{"cached_tokens":null,"prompt_tokens":3,"thoughts_tokens":0,"response_tokens":9}}]}')


def test_an_entry_an_earlier_version_cached_reads_the_same():
    from agenthub.cache import _decode

    raw = b"agenthub-cache/1\n" + zlib.compress(OLD_CACHE_TEXT.encode("utf-8"))
    events = _decode(raw, "k1")
    assert events[2]["content_items"][0]["arguments"] == {"a": {MARK: "AAAA"}, "b": {MARK: ["x"]}}
    assert events[3]["content_items"][0]["data"] == b"\x00\xff\x10"
    assert [e["event_type"] for e in events] == ["start", "delta", "delta", "delta", "stop"]


def test_an_answer_needing_no_escape_is_cached_as_earlier_versions_wrote_it():
    """Byte for byte the format an earlier agenthub reads (a store shared by two versions keeps working); an
    answer that needs the escape is under another magic (an earlier agenthub sees a miss, never a wrong value)."""
    old = json.loads(OLD_CACHE_TEXT)
    events = old["events"]
    events[1]["content_items"][0]["arguments"] = '{"a":"AAAA"}'
    events[2]["content_items"][0]["arguments"] = {"a": "AAAA"}
    events[3]["content_items"][0]["data"] = b"\x00\xff\x10"
    entry, got = _cached(events)
    assert entry.startswith(b"agenthub-cache/1\n")
    text = zlib.decompress(entry[len(b"agenthub-cache/1\n"):]).decode("utf-8")
    assert text.split(',"events":', 1)[1] == OLD_CACHE_TEXT.split(',"events":', 1)[1].replace(
        '{"a":{"__bytes__":"AAAA"},"b":{"__bytes__":["x"]}}', '{"a":"AAAA"}').replace(
        '"{\\"a\\":{\\"__bytes__\\":\\"AAAA\\"},\\"b\\":{\\"__bytes__\\":[\\"x\\"]}}"', '"{\\"a\\":\\"AAAA\\"}"')
    assert same(got, events)
    events[1]["content_items"][0]["arguments"] = '{"a":{"__bytes__":"AAAA"}}'
    events[2]["content_items"][0]["arguments"] = {"a": {MARK: "AAAA"}}
    entry, got = _cached(events)
    assert entry.startswith(b"agenthub-cache/1+escaped\n") and same(got, events)
    assert '"arguments":{"a":{"__bytes__":["AAAA"]}}' in zlib.decompress(entry[len(b"agenthub-cache/1+escaped\n"):]
                                                                       ).decode("utf-8")


#: a turn an earlier agenthub journaled (an answer holding bytes, so marked "bytes": true; its arguments spelling
#: the marker escaped, as the journal always wrote them)
OLD_JOURNAL_TURN = (
    '{"turn":0,"message":{"role":"assistant","content_items":['
    '{"type":"tool_call","name":"f","arguments":{"a":{"__bytes__":["AAAA"]},"b":{"__bytes__":[{"__bytes__":["x"]}]},'
    '"c":{"__bytes__":1,"d":2}},"tool_call_id":"c1"},'
    '{"type":"inline_data","data":{"__bytes__":"AP8Q"},"mime_type":"image/png"}]},'
    '"cost":null,"route":null,"bytes":true,"k":"turn"}')
OLD_JOURNAL_MESSAGE = {"role": "assistant", "content_items": [
    {"type": "tool_call", "name": "f", "arguments": {"a": {MARK: "AAAA"}, "b": {MARK: {MARK: "x"}},
                                                     "c": {MARK: 1, "d": 2}}, "tool_call_id": "c1"},
    {"type": "inline_data", "data": b"\x00\xff\x10", "mime_type": "image/png"}]}


def test_a_turn_an_earlier_version_journaled_reads_the_same_and_is_written_the_same():
    from agenthub.agent.journal import _turn_text, _with_bytes, entry_read

    assert same(entry_read(json.loads(OLD_JOURNAL_TURN), 0)["message"], OLD_JOURNAL_MESSAGE)
    assert _with_bytes({"turn": 0, "message": OLD_JOURNAL_MESSAGE, "cost": None, "route": None, "k": "turn"},
                       "message") == OLD_JOURNAL_TURN
    assert _turn_text(0, OLD_JOURNAL_MESSAGE, None, None) == OLD_JOURNAL_TURN
    # an entry not marked "bytes" was never decoded: a dict spelling the marker there is what the model sent
    plain = OLD_JOURNAL_TURN.replace(',"bytes":true', '').replace(
        ',{"type":"inline_data","data":{"__bytes__":"AP8Q"},"mime_type":"image/png"}', '')
    assert entry_read(json.loads(plain), 0)["message"]["content_items"][0]["arguments"]["a"] == {MARK: ["AAAA"]}
    with pytest.raises(ValueError, match="bytes that do not read back"):
        entry_read(json.loads(OLD_JOURNAL_TURN.replace('"AP8Q"', '["a", "b"]')), 0)


def test_base64_in_old_data_is_the_same_bytes():
    assert from_jsonable({MARK: base64.b64encode(b"\x89PNG").decode()}, strict=True) == b"\x89PNG"
