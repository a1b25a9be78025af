"""agenthub.resume.Resumable on its own: the frames it passes on across scripted connections (pure, no I/O)."""

import pytest

from agenthub.errors import StreamProtocolError, TransportError
from agenthub.providers import openai_responses
from agenthub.resume import RESUMED, Resumable
from agenthub.sse import SSEEvent


def event(seq, kind="response.output_text.delta", rid=None):
    body = '{"type":"%s","sequence_number":%d%s}' % (kind, seq, ',"response":{"id":"%s"}' % rid if rid else "")
    return SSEEvent(body, kind)


def broken(frames, error=None):
    for frame in frames:
        yield frame
    if error is not None:
        raise error


def test_replayed_events_are_dropped_and_cursors_follow_the_last_one_passed_on():
    first = [event(0, "response.created", "resp_1"), event(1), event(2)]
    again = [event(1), event(2), event(3), event(4, "response.completed")]
    asked = []

    def reconnect(rid, cursor):
        asked.append((rid, cursor))
        return iter(again)

    resumable = Resumable(broken(first, TransportError("reset")), openai_responses.frame_cursor, reconnect, True)
    seqs = [int(f.data.split('"sequence_number":')[1].split(",")[0].rstrip("}")) for f in resumable]
    assert seqs == [0, 1, 2, 3, 4]
    assert asked == [("resp_1", 2)]
    assert (resumable.reconnects, resumable.complete, resumable.cursor) == (1, True, 4)


def test_a_cut_before_the_id_is_the_callers_error_and_a_half_event_after_it_is_a_cut():
    with pytest.raises(TransportError):
        list(Resumable(broken([], TransportError("reset")), openai_responses.frame_cursor, None, True))
    with pytest.raises(StreamProtocolError):
        list(Resumable(iter([SSEEvent('{"type":"resp')]), openai_responses.frame_cursor, None, True))
    half = [event(0, "response.created", "r"), SSEEvent('{"type":"response.output_te')]
    resumable = Resumable(iter(half), openai_responses.frame_cursor,
                          lambda rid, cursor: iter([event(1, "response.completed")]), True)
    assert len(list(resumable)) == 2 and resumable.reconnects == 1


def test_reconnects_without_progress_end_the_stream_marked_as_resumed():
    def reconnect(rid, cursor):
        return broken([], TransportError("reset again"))

    resumable = Resumable(broken([event(0, "response.created", "r")], TransportError("reset")),
                          openai_responses.frame_cursor, reconnect, True, max_stalls=2)
    with pytest.raises(TransportError) as info:
        list(resumable)
    assert getattr(info.value, RESUMED) == "r"
    assert resumable.reconnects == 2


def test_a_clean_end_without_the_terminal_event_is_a_cut_too():
    resumable = Resumable(iter([event(0, "response.created", "r"), event(1)]), openai_responses.frame_cursor,
                          lambda rid, cursor: iter([event(2, "response.completed")]), True)
    assert len(list(resumable)) == 3 and resumable.complete


def test_a_json_value_that_is_no_event_goes_to_the_parser():
    frames = [event(0, "response.created", "r"), SSEEvent("[1, 2]"), event(1, "response.completed")]
    assert [f.data for f in Resumable(iter(frames), openai_responses.frame_cursor, None, True)][1] == "[1, 2]"
