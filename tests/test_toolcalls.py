"""The tool-call state machine, table-driven over what real servers send (peers.md 2A items 1-15)."""

import json

import pytest

from agenthub.errors import StreamProtocolError, ToolCallArgumentParseError
from agenthub.toolcalls import MAX_DEPTH, ToolCallAssembler


def announce(name, call_id, arguments=""):
    return {"type": "partial_tool_call", "name": name, "arguments": arguments, "tool_call_id": call_id}


def frag(arguments):
    return {"type": "partial_tool_call", "name": "", "arguments": arguments, "tool_call_id": ""}


def call(name, call_id, arguments):
    return {"type": "tool_call", "name": name, "arguments": arguments, "tool_call_id": call_id}


def run(steps):
    """steps: dicts of feed() keyword arguments, or ("close", kwargs), ending with finish()."""
    machine = ToolCallAssembler("test", id_prefix="syn_")
    items = []
    for step in steps:
        if isinstance(step, tuple):
            items.extend(machine.close(**step[1]))
        else:
            items.extend(machine.feed(**step))
    items.extend(machine.finish())
    return items


def f(index=None, id=None, name=None, args=None, **extra):
    step = {"index": index, "tool_call_id": id, "name": name, "arguments": args}
    step.update(extra)
    return step


CASES = {
    "openai: id and name first, arguments streamed": (
        [f(0, "c1", "get", ""), f(0, args='{"ci'), f(0, args='ty": "Paris"}')],
        [announce("get", "c1"), frag('{"ci'), frag('ty": "Paris"}'), call("get", "c1", {"city": "Paris"})],
    ),
    "openai: two calls at indexes 0 and 1": (
        [f(0, "c1", "a", ""), f(0, args='{"x":1}'), f(1, "c2", "b", ""), f(1, args='{"y":'), f(1, args="2}")],
        [announce("a", "c1"), frag('{"x":1}'), call("a", "c1", {"x": 1}),
         announce("b", "c2"), frag('{"y":'), frag("2}"), call("b", "c2", {"y": 2})],
    ),
    "item 1: no index at all, ids carry identity": (
        [f(None, "c1", "a", '{"x": 1}'), f(None, "c2", "b", '{"y": 2}')],
        [announce("a", "c1"), frag('{"x": 1}'), call("a", "c1", {"x": 1}),
         announce("b", "c2"), frag('{"y": 2}'), call("b", "c2", {"y": 2})],
    ),
    "item 1: no index and no id: fragments continue the latest call": (
        [f(name="a", args='{"x"'), f(args=": 1}")],
        [announce("a", "syn_0", '{"x"'), frag(": 1}"),
         call("a", "syn_0", {"x": 1})],
    ),
    "item 2: every call at index 0, a new id starts a new call": (
        [f(0, "c1", "a", ""), f(0, args='{"x":1}'), f(0, "c2", "a", ""), f(0, args='{"x":2}')],
        [announce("a", "c1"), frag('{"x":1}'), call("a", "c1", {"x": 1}),
         announce("a", "c2"), frag('{"x":2}'), call("a", "c2", {"x": 2})],
    ),
    "item 2: index 0 reused with a new id before the first call's JSON is whole: buffered, then in order": (
        [f(0, "c1", "a", '{"x":'), f(0, "c2", "b", '{"y":2}'), f(None, "c1", None, "1}")],
        [announce("a", "c1", '{"x":'), frag("1}"), call("a", "c1", {"x": 1}),
         announce("b", "c2"), frag('{"y":2}'), call("b", "c2", {"y": 2})],
    ),
    "calls announced without an index, then fed by index (their position)": (
        [f(None, "c1", "a", ""), f(None, "c2", "b", ""), f(0, args='{"x":1}'), f(1, args='{"y":2}')],
        [announce("a", "c1"), frag('{"x":1}'), call("a", "c1", {"x": 1}),
         announce("b", "c2"), frag('{"y":2}'), call("b", "c2", {"y": 2})],
    ),
    "item 3: one chunk per complete call (Groq)": (
        [f(0, "c1", "a", '{"x":1}'), f(1, "c2", "a", '{"x":2}'), f(2, "c3", "a", '{"x":3}')],
        [announce("a", "c1"), frag('{"x":1}'), call("a", "c1", {"x": 1}),
         announce("a", "c2"), frag('{"x":2}'), call("a", "c2", {"x": 2}),
         announce("a", "c3"), frag('{"x":3}'), call("a", "c3", {"x": 3})],
    ),
    "item 4: several entries for one index in one chunk": (
        [f(0, "c1", "a", ""), f(0, args='{"x"'), f(0, args=":1}")],
        [announce("a", "c1"), frag('{"x"'), frag(":1}"), call("a", "c1", {"x": 1})],
    ),
    "item 5: same index, different ids, interleaved (parallel calls)": (
        [f(0, "c1", "a", '{"x":'), f(0, "c2", "b", '{"y":'), f(None, "c2", None, "2}"), f(None, "c1", None, "1}")],
        [announce("a", "c1", '{"x":'), frag("1}"), call("a", "c1", {"x": 1}),
         announce("b", "c2", '{"y":2}'), call("b", "c2", {"y": 2})],
    ),
    "item 6: the whole JSON resent in every chunk ({} then the full object)": (
        [f(0, "c1", "a", "{}"), f(0, "c1", "a", '{"stock": "MSFT"}'), f(0, "c1", "a", '{"stock": "MSFT"}')],
        [announce("a", "c1"), frag('{"stock": "MSFT"}'), call("a", "c1", {"stock": "MSFT"})],
    ),
    "item 6: growing snapshots: only the new suffix is appended": (
        [f(0, "c1", "a", '{"ci'), f(0, None, None, '{"city": "Par'), f(0, None, None, '{"city": "Paris"}')],
        [announce("a", "c1", '{"ci'), frag('ty": "Par'), frag('is"}'), call("a", "c1", {"city": "Paris"})],
    ),
    "item 7: name and id repeated on every fragment are identity, not text": (
        [f(0, "c1", "get", '{"a"'), f(0, "c1", "get", ": 1"), f(0, "c1", "get", "}")],
        [announce("get", "c1", '{"a"'), frag(": 1"), frag("}"), call("get", "c1", {"a": 1})],
    ),
    "item 8: arguments null": (
        [f(0, "c1", "a", None), f(0, args=None), f(0, args='{"x": 1}'), f(0, args=None)],
        [announce("a", "c1"), frag('{"x": 1}'), call("a", "c1", {"x": 1})],
    ),
    "item 8: first fragment duplicated": (
        [f(0, "c1", "a", "{}"), f(0, args="{}")],
        [announce("a", "c1"), frag("{}"), call("a", "c1", {})],
    ),
    "item 11: index as text, placeholder id 'null'": (
        [f("0", "c1", "a", '{"x"'), f("0", "null", None, ":1}")],
        [announce("a", "c1", '{"x"'), frag(":1}"), call("a", "c1", {"x": 1})],
    ),
    "item 12: empty arguments mean {}": (
        [f(0, "c1", "ping", "")],
        [announce("ping", "c1"), call("ping", "c1", {})],
    ),
    "item 12: whitespace-only arguments mean {}": (
        [f(0, "c1", "ping", "  "), f(0, args="\n")],
        [announce("ping", "c1", "  "), frag("\n"), call("ping", "c1", {})],
    ),
    "item 13: a seed (start carrying input) is replaced by fragments that follow": (
        [f(0, "t1", "a", "", seed='{"x": 1}'), f(0, args='{"x"'), f(0, args=": 2}"), ("close", {"index": 0})],
        [announce("a", "t1"), frag('{"x"'), frag(": 2}"), call("a", "t1", {"x": 2})],
    ),
    "item 13: a seed with no fragments is the arguments": (
        [f(0, "t1", "a", "", seed='{"x": 1}'), ("close", {"index": 0})],
        [announce("a", "t1"), frag('{"x": 1}'), call("a", "t1", {"x": 1})],
    ),
    "same tool twice on index 0 with no ids: a named fragment opening a new object is a new call": (
        [f(0, None, "a", '{"x": 1}'), f(0, None, "a", '{"x": 2}')],
        [announce("a", "syn_0"), frag('{"x": 1}'), call("a", "syn_0", {"x": 1}),
         announce("a", "syn_1"), frag('{"x": 2}'), call("a", "syn_1", {"x": 2})],
    ),
    "a different name on an occupied slot starts a new call": (
        [f(0, None, "a", '{"x": 1}'), f(0, None, "b", '{"y": 2}')],
        [announce("a", "syn_0"), frag('{"x": 1}'), call("a", "syn_0", {"x": 1}),
         announce("b", "syn_1"), frag('{"y": 2}'), call("b", "syn_1", {"y": 2})],
    ),
    "arguments sent as a JSON object instead of text": (
        [f(None, "c1", "a", {"x": [1, "é"]})],
        [announce("a", "c1"), frag('{"x": [1, "é"]}'), call("a", "c1", {"x": [1, "é"]})],
    ),
    "name arriving after the id: announced once the name is known": (
        [f(0, "c1", None, ""), f(0, None, None, '{"x":'), f(0, None, "a", "1}")],
        [announce("a", "c1", '{"x":1}'), call("a", "c1", {"x": 1})],
    ),
    "explicit close of a later call waits for the earlier one": (
        [f(0, "c1", "a", '{"x":'), f(1, "c2", "b", '{"y":2}'), ("close", {"index": 1}), f(0, args="1}"),
         ("close", {"index": 0})],
        [announce("a", "c1", '{"x":'), frag("1}"), call("a", "c1", {"x": 1}),
         announce("b", "c2"), frag('{"y":2}'), call("b", "c2", {"y": 2})],
    ),
    "whitespace or an identical resend after a call closed is ignored": (
        [f(0, "c1", "a", '{"x": 1}'), ("close", {"index": 0}), f(0, args=" "), f(0, args='{"x": 1}')],
        [announce("a", "c1"), frag('{"x": 1}'), call("a", "c1", {"x": 1})],
    ),
    "fidelity rides on the complete call": (
        [f(None, "c1", "a", '{"x": 1}', fidelity={"thought_signature": "sig"})],
        [announce("a", "c1"), frag('{"x": 1}'),
         dict(call("a", "c1", {"x": 1}), fidelity={"thought_signature": "sig"})],
    ),
}


@pytest.mark.parametrize("steps,expected", list(CASES.values()), ids=list(CASES))
def test_quirks(steps, expected):
    items = run(steps)
    assert items == expected
    # the invariant consumers rely on: each call's fragments concatenate to its arguments
    open_fragments = []
    for item in items:
        if item["type"] == "partial_tool_call":
            open_fragments.append(item["arguments"])
        else:
            joined = "".join(open_fragments)
            assert (json.loads(joined) if joined.strip() else {}) == item["arguments"]
            open_fragments = []


@pytest.mark.parametrize("raw,what", [
    ('{"city": "Par', "is not valid JSON"),  # truncated (max_tokens)
    ('{"a": 1}{"a": 2}', "is not valid JSON"),  # the model concatenated two objects (litellm#40582)
    ("[1, 2]", "is not a JSON object"),
    ('"text"', "is not a JSON object"),
    ("{'single': 'quotes'}", "is not valid JSON"),
])
def test_bad_arguments_raise_with_every_field(raw, what):
    machine = ToolCallAssembler("openai-chat", id_prefix="x")
    machine.feed(0, "call_9", "lookup", "")
    for i in range(0, len(raw), 3):
        machine.feed(0, None, None, raw[i:i + 3])
    with pytest.raises(ToolCallArgumentParseError) as info:
        machine.finish()
    error = info.value
    assert what in str(error)
    assert (error.client, error.tool_name, error.tool_call_id) == ("openai-chat", "lookup", "call_9")
    assert error.raw_arguments_length == len(raw)
    assert error.raw_arguments_preview == raw
    assert isinstance(error, ValueError)


def test_preview_is_at_most_160_characters_head_and_tail():
    raw = '{"text": "' + "x" * 1000 + '"'
    machine = ToolCallAssembler("c", id_prefix="x")
    machine.feed(0, "id", "n", raw)
    with pytest.raises(ToolCallArgumentParseError) as info:
        machine.finish()
    preview = info.value.raw_arguments_preview
    assert len(preview) <= 160 and preview.startswith('{"text": "xxx') and preview.endswith("xxx\"")
    assert "...[truncated]..." in preview
    assert info.value.raw_arguments_length == len(raw)


def test_non_whitespace_after_a_closed_call_raises():
    machine = ToolCallAssembler("c", id_prefix="x")
    machine.feed(0, "id", "n", '{"a": 1}')
    machine.close(index=0)
    with pytest.raises(ToolCallArgumentParseError) as info:
        machine.feed(0, None, None, ', "b": 2}')
    assert info.value.tool_call_id == "id"


def test_arguments_for_a_call_that_never_got_a_name():
    machine = ToolCallAssembler("c", id_prefix="x")
    machine.feed(0, "id", None, '{"a": 1}')
    with pytest.raises(StreamProtocolError, match="never got a name"):
        machine.finish()
    # a nameless slot with nothing in it is dropped
    assert ToolCallAssembler("c").feed(0, None, None, None) == []


def test_synthetic_ids_are_unique_across_machines():
    a = ToolCallAssembler("c")
    b = ToolCallAssembler("c")
    id_a = a.feed(None, None, "n", "")[0]["tool_call_id"]
    id_b = b.feed(None, None, "n", "")[0]["tool_call_id"]
    assert id_a and id_b and id_a != id_b


def test_large_arguments_are_linear_and_exact():
    payload = {"blob": "y" * 200000, "n": list(range(1000))}
    text = json.dumps(payload)
    machine = ToolCallAssembler("c", id_prefix="x")
    items = machine.feed(0, "id", "big", "")
    for i in range(0, len(text), 7):
        items.extend(machine.feed(0, None, None, text[i:i + 7]))
    items.extend(machine.finish())
    assert items[-1]["arguments"] == payload
    assert "".join(i["arguments"] for i in items[:-1]) == text
    assert machine.completed == 1


# -- issue 41 item 5: whole arguments that arrive parsed are not parsed again -------------------------------


def test_whole_arguments_that_arrive_parsed_are_not_parsed_again(monkeypatch):
    import agenthub.toolcalls as toolcalls

    parses = []
    real = toolcalls._loads
    monkeypatch.setattr(toolcalls, "_loads", lambda text: (parses.append(len(text)), real(text))[1])
    args = {"path": "a.txt", "content": "h\u00e9llo \"x\"\n" * 1000, "n": [1, 2.5, None, True, {"k": []}]}
    asm = ToolCallAssembler("gemini", id_prefix="p_")
    items = asm.feed(0, "c1", "write", args) + asm.close(index=0)
    text = json.dumps(args, ensure_ascii=False)
    assert items == [
        {"type": "partial_tool_call", "name": "write", "arguments": "", "tool_call_id": "c1"},
        {"type": "partial_tool_call", "name": "", "arguments": text, "tool_call_id": ""},
        {"type": "tool_call", "name": "write", "arguments": args, "tool_call_id": "c1"},
    ]
    assert parses == []


@pytest.mark.parametrize("args, expected", [
    ({"t": (1, 2)}, {"t": [1, 2]}),  # not what JSON gives back: serialised and parsed, as before
    ({"k": 1}, {"k": 1}),
])
def test_whole_arguments_not_plain_json_go_through_their_text(args, expected):
    asm = ToolCallAssembler("gemini", id_prefix="p_")
    items = asm.feed(0, "c1", "f", args) + asm.close(index=0)
    assert items[1]["arguments"] == json.dumps(args, ensure_ascii=False)
    assert items[-1]["arguments"] == expected
    assert type(items[-1]["arguments"]["t" if "t" in expected else next(iter(expected))]) is type(
        next(iter(expected.values())))


def test_whole_arguments_holding_infinity_are_refused_as_their_text_is():
    """Infinity has no JSON: arguments that came parsed with it go through their text ("Infinity"), which the
    strict reading refuses (the runner's unparseable-arguments error result, issue 37 B6)."""
    from agenthub.errors import ToolCallArgumentParseError

    asm = ToolCallAssembler("gemini", id_prefix="p_")
    assert asm.feed(0, "c1", "f", {"n": float("inf")}) == [
        {"type": "partial_tool_call", "name": "f", "arguments": "", "tool_call_id": "c1"}]
    with pytest.raises(ToolCallArgumentParseError, match="Infinity is not a JSON number"):
        asm.close(index=0)


def test_whole_arguments_too_deep_are_refused_as_before():
    deep = {}  # type: dict
    node = deep
    for _ in range(MAX_DEPTH + 2):
        node["a"] = {}
        node = node["a"]
    asm = ToolCallAssembler("gemini", id_prefix="p_")
    with pytest.raises(ToolCallArgumentParseError, match="deeper"):
        asm.feed(0, "c1", "f", deep) + asm.close(index=0)


def test_whole_arguments_then_a_larger_object_replace_it():
    asm = ToolCallAssembler("gemini", id_prefix="p_")
    items = asm.feed(0, "c1", "f", {"a": 1}) + asm.feed(0, "c1", "f", {"a": 1, "b": 2}) + asm.close(index=0)
    assert items[-1]["arguments"] == {"a": 1, "b": 2}
    assert "".join(i["arguments"] for i in items[:-1]) == '{"a": 1, "b": 2}'


# -- the strict reading of a lone surrogate, on both paths, without serialising the value again (issue 41 item 5) -

_KINDS = ["plain ascii", "caf\u00e9 \"x\"\n", "\u4e2d\u6587", "\U0001f600 emoji"]  # one, one, two, four bytes a character


@pytest.mark.parametrize("kind", _KINDS)
@pytest.mark.parametrize("how", ["parsed", "escaped", "raw"])
def test_a_lone_surrogate_is_refused_whatever_else_the_arguments_hold(kind, how):
    """Parsed arguments (Gemini), text with a ``\\ud800`` escape, text holding the code point itself: each
    refused, beside text of every storage kind; the same arguments without it pass, a pair escaped too."""
    if how == "parsed":
        bad, good = {"k": kind, "s": "\ud800" + kind}, {"k": kind, "s": kind}
    elif how == "escaped":
        bad = json.dumps({"k": kind}, ensure_ascii=False)[:-1] + ', "s": "\\ud800"}'
        good = json.dumps({"k": kind}, ensure_ascii=False)[:-1] + ', "s": "\\ud83d\\ude00 \\u00e9"}'
    else:
        bad = json.dumps({"k": kind, "s": kind + "\udc80"}, ensure_ascii=False)
        good = json.dumps({"k": kind, "s": kind}, ensure_ascii=False)
    asm = ToolCallAssembler("gemini", id_prefix="p_")
    asm.feed(0, "c1", "f", bad)
    with pytest.raises(ToolCallArgumentParseError, match="lone surrogate"):
        asm.close(index=0)
    asm = ToolCallAssembler("gemini", id_prefix="p_")
    items = asm.feed(0, "c1", "f", good) + asm.close(index=0)
    expected = good if how == "parsed" else json.loads(good)
    assert items[-1] == call("f", "c1", expected)
    if how == "escaped":
        assert expected["s"] == "\U0001f600 \u00e9"


def test_the_strict_reading_serialises_no_value_again(monkeypatch):
    """Arguments that came parsed are made text once (the fragment's, as json.dumps makes it: the same text),
    and arguments that came as text without a ``\\u`` escape are checked for a lone surrogate in that text,
    not in their value serialised again."""
    import agenthub.toolcalls as toolcalls

    dumped = []
    real = json.dumps
    monkeypatch.setattr(toolcalls.json, "dumps", lambda value, **kw: (dumped.append(value), real(value, **kw))[1])
    args = {"path": "a.txt", "content": "h\u00e9llo \"x\"\n" * 100, "n": [1, 2.5, None, True, {"k": []}]}
    asm = ToolCallAssembler("gemini", id_prefix="p_")
    items = asm.feed(0, "c1", "write", args) + asm.close(index=0)
    text = real(args, ensure_ascii=False)
    asm = ToolCallAssembler("openai", id_prefix="p_")
    streamed = asm.feed(0, "c2", "write", "") + asm.feed(0, None, None, text[:50]) + asm.feed(0, None, None, text[50:])
    streamed += asm.finish()
    assert dumped == []
    assert items == [announce("write", "c1"), frag(text), call("write", "c1", args)]
    assert streamed == [announce("write", "c2"), frag(text[:50]), frag(text[50:]), call("write", "c2", args)]
