"""The stream driver, collect and check_stream."""

import pytest

from agenthub import check_stream, collect
from agenthub.errors import ConfigError, EmptyResponseError, StreamProtocolError
from agenthub.stream import StreamEnd, drive

USAGE = {"cached_tokens": 1, "prompt_tokens": 2, "thoughts_tokens": 3, "response_tokens": 4}


def kinds(events):
    return [(e["event_type"], [i["type"] for i in e["content_items"]]) for e in events]


def test_drive_grammar_start_before_first_item_one_item_per_delta_single_stop():
    parts = [{"type": "thinking", "thinking": "hm"}, {"type": "text", "text": "hi"}, StreamEnd(USAGE, "stop")]
    events = list(drive(iter(parts), "c"))
    assert kinds(events) == [("start", []), ("delta", ["thinking"]), ("delta", ["text"]), ("stop", [])]
    assert events[-1]["usage_metadata"] == USAGE and events[-1]["finish_reason"] == "stop"
    assert all(type(e["created_at"]) is int and e["role"] == "assistant" for e in events)
    check_stream(events)


def test_drive_start_is_lazy_so_a_failure_before_content_yields_nothing():
    def parts():
        raise StreamProtocolError("boom")
        yield  # pragma: no cover

    stream = drive(parts(), "c")
    with pytest.raises(StreamProtocolError):
        next(stream)


def test_missing_usage_gives_four_none_buckets_and_missing_finish_is_unknown():
    events = list(drive(iter([{"type": "text", "text": "x"}, StreamEnd(None, None)]), "c"))
    assert events[-1]["usage_metadata"] == {"cached_tokens": None, "prompt_tokens": None,
                                            "thoughts_tokens": None, "response_tokens": None}
    assert events[-1]["finish_reason"] == "unknown"


@pytest.mark.parametrize("said,expected", [("stop", "tool_call"), (None, "tool_call"), ("length", "length"),
                                           ("unknown", "unknown"), ("tool_call", "tool_call")])
def test_tool_calls_turn_stop_into_tool_call(said, expected):
    parts = [{"type": "partial_tool_call", "name": "f", "arguments": "", "tool_call_id": "1"},
             {"type": "tool_call", "name": "f", "arguments": {}, "tool_call_id": "1"}, StreamEnd(USAGE, said)]
    assert list(drive(iter(parts), "c"))[-1]["finish_reason"] == expected


def test_items_arriving_while_a_call_streams_follow_the_complete_call():
    call = [{"type": "partial_tool_call", "name": "f", "arguments": "{", "tool_call_id": "1"},
            {"type": "partial_tool_call", "name": "", "arguments": "}", "tool_call_id": ""},
            {"type": "tool_call", "name": "f", "arguments": {}, "tool_call_id": "1"}]
    parts = [call[0], {"type": "text", "text": "a"}, call[1], {"type": "thinking", "thinking": "b"}, call[2],
             {"type": "text", "text": "c"}, StreamEnd(USAGE, "tool_call")]
    events = list(drive(iter(parts), "c"))
    check_stream(events)
    assert [e["content_items"][0] for e in events[1:-1]] == call + [
        {"type": "text", "text": "a"}, {"type": "thinking", "thinking": "b"}, {"type": "text", "text": "c"}]


def test_cut_stream_is_a_protocol_error():
    with pytest.raises(StreamProtocolError, match="terminal marker") as info:
        list(drive(iter([{"type": "text", "text": "x"}]), "openai-chat"))
    assert info.value.client == "openai-chat"


@pytest.mark.parametrize("items", [[], [{"type": "thinking", "thinking": "only"}],
                                   [{"type": "text", "text": "", "fidelity": {"signature": "s"}}]])
def test_turn_with_nothing_to_replay_is_empty_response(items):
    with pytest.raises(EmptyResponseError) as info:
        list(drive(iter(items + [StreamEnd(USAGE, "stop")]), "anthropic"))
    assert info.value.finish_reason == "stop" and info.value.usage_metadata == USAGE
    assert info.value.client == "anthropic"


def test_malformed_payload_errors_become_protocol_errors():
    def parts():
        yield {"type": "text", "text": "x"}
        {}["missing"]

    with pytest.raises(StreamProtocolError, match="KeyError"):
        list(drive(parts(), "c"))


def ev(kind, items=(), usage=None, finish=None):
    return {"role": "assistant", "event_type": kind, "content_items": list(items), "usage_metadata": usage,
            "finish_reason": finish, "created_at": 1}


def test_collect_merges_and_keeps_fidelity_exactly():
    sig = {"signature": "abc=="}
    events = [
        ev("start"),
        ev("delta", [{"type": "thinking", "thinking": "a"}]),
        ev("delta", [{"type": "thinking", "thinking": "b"}]),
        ev("delta", [{"type": "thinking", "thinking": "", "fidelity": sig}]),  # closes the item
        ev("delta", [{"type": "thinking", "thinking": "c"}]),  # a new thinking block
        ev("delta", [{"type": "thinking", "thinking": "", "fidelity": {"signature": "2"}}]),
        ev("delta", [{"type": "text", "text": "x", "fidelity": {"phase": "commentary"}}]),
        ev("delta", [{"type": "text", "text": "y", "fidelity": {"phase": "commentary"}}]),
        ev("delta", [{"type": "text", "text": "z", "fidelity": {"phase": "final_answer"}}]),
        ev("delta", [{"type": "text", "text": ""}]),
        ev("delta", [{"type": "partial_tool_call", "name": "f", "arguments": "{}", "tool_call_id": "1"}]),
        ev("delta", [{"type": "tool_call", "name": "f", "arguments": {}, "tool_call_id": "1"}]),
        ev("delta", [{"type": "text", "text": "after"}]),
        ev("stop", usage=USAGE, finish="tool_call"),
    ]
    message = collect(events)
    assert message == {
        "role": "assistant",
        "content_items": [
            {"type": "thinking", "thinking": "ab", "fidelity": sig},
            {"type": "thinking", "thinking": "c", "fidelity": {"signature": "2"}},
            {"type": "text", "text": "xy", "fidelity": {"phase": "commentary"}},
            {"type": "text", "text": "z", "fidelity": {"phase": "final_answer"}},
            {"type": "tool_call", "name": "f", "arguments": {}, "tool_call_id": "1"},
            {"type": "text", "text": "after"},
        ],
        "usage_metadata": USAGE,
        "finish_reason": "tool_call",
        "created_at": 1,
    }
    assert message["content_items"][0]["fidelity"] is sig  # passed through, never rebuilt


def test_collect_does_not_mutate_events():
    item = {"type": "text", "text": "a"}
    events = [ev("start"), ev("delta", [item]), ev("delta", [{"type": "text", "text": "b"}]), ev("stop", usage=USAGE, finish="stop")]
    collect(events)
    assert item == {"type": "text", "text": "a"}


@pytest.mark.parametrize("events", [None, 5, "abc", [None], [{"event_type": "delta", "content_items": "ab"}],
                                    [{"event_type": "delta", "content_items": [{"type": "text", "text": 5}]}],
                                    [{"event_type": "delta", "content_items": [7]}]])
def test_collect_of_what_is_no_event_list_is_a_config_error(events):
    # was: AttributeError / TypeError out of the library (the API: anything but an AgentHubError is a bug)
    with pytest.raises(ConfigError, match=r"collect takes UniEvents.*check_stream"):
        collect(events)


def test_collect_lets_an_error_of_the_events_own_iterator_out_as_it_is():
    def events():
        yield ev("start")
        raise TypeError("the caller's generator broke")

    with pytest.raises(TypeError, match="the caller's generator broke"):
        collect(events())


@pytest.mark.parametrize("events", [None, 5])
def test_check_stream_of_what_is_not_iterable_names_it(events):
    with pytest.raises(StreamProtocolError, match="events are an iterable of UniEvents"):
        check_stream(events)


def test_signature_only_item_is_kept():
    events = [ev("start"), ev("delta", [{"type": "text", "text": "", "fidelity": {"thought_signature": "s"}}]),
              ev("stop", usage=USAGE, finish="stop")]
    assert collect(events)["content_items"] == [{"type": "text", "text": "", "fidelity": {"thought_signature": "s"}}]


GOOD = [ev("start"), ev("delta", [{"type": "partial_tool_call", "name": "f", "arguments": "{\"a\"", "tool_call_id": "1"}]),
        ev("delta", [{"type": "partial_tool_call", "name": "", "arguments": ":1}", "tool_call_id": ""}]),
        ev("delta", [{"type": "tool_call", "name": "f", "arguments": {"a": 1}, "tool_call_id": "1"}]),
        ev("stop", usage=USAGE, finish="tool_call")]


def test_check_stream_accepts_a_good_stream():
    check_stream(GOOD)


def broken(index, **changes):
    events = [dict(e) for e in GOOD]
    events[index].update(changes)
    return events


@pytest.mark.parametrize("events,rule", [
    ([], "rule 1"),
    (broken(0, event_type="delta"), "rule 1"),
    (broken(0, content_items=[{"type": "text", "text": "x"}]), "rule 1"),
    (broken(4, event_type="delta"), "rule 3"),
    (broken(4, usage_metadata=None), "rule 3"),
    (broken(4, usage_metadata={"prompt_tokens": 1}), "rule 3"),
    (broken(4, usage_metadata=dict(USAGE, prompt_tokens=-1)), "rule 3"),
    (broken(4, finish_reason=None), "rule 3"),
    (broken(4, finish_reason="stop"), "rule 6"),
    (broken(1, event_type="unused"), "rule 4"),
    (broken(1, usage_metadata=USAGE), "rule 2"),
    (broken(1, content_items=[]), "rule 2"),
    (broken(1, created_at=1.5), "rule 7"),
    (broken(1, content_items=[{"type": "partial_tool_call", "name": "", "arguments": "", "tool_call_id": "1"}]), "rule 5"),
    (broken(2, content_items=[{"type": "partial_tool_call", "name": "f", "arguments": ":1}", "tool_call_id": "2"}]), "rule 5"),
    (broken(2, content_items=[{"type": "text", "text": "interleaved"}]), "rule 5"),
    (broken(3, content_items=[{"type": "tool_call", "name": "f", "arguments": {"a": 2}, "tool_call_id": "1"}]), "rule 5"),
    (broken(3, content_items=[{"type": "tool_call", "name": "g", "arguments": {"a": 1}, "tool_call_id": "1"}]), "rule 5"),
    (GOOD[:3] + GOOD[4:], "rule 5"),
    (broken(2, content_items=[{"type": "bogus"}]), "unknown content item"),
])
def test_check_stream_names_the_first_broken_rule(events, rule):
    with pytest.raises(StreamProtocolError, match=rule):
        check_stream(events)
