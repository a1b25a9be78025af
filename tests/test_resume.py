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


# -- issue 29 D3 ---------------------------------------------------------------------------------------------

from agenthub.providers import gemini_interactions  # noqa: E402
from agenthub.providers._common import Endpoint  # noqa: E402
from agenthub.resume import MAX_RESUMES, resume_delay  # noqa: E402


def test_a_server_bringing_one_event_per_connection_is_resumed_a_bounded_number_of_times_with_backoff():
    waits = []
    served = [0]

    def reconnect(rid, cursor):
        served[0] += 1
        return broken([event(cursor + 1)], TransportError("reset"))  # one new event, then cut again

    resumable = Resumable(broken([event(0, "response.created", "r")], TransportError("reset")),
                          openai_responses.frame_cursor, reconnect, True, client="openai-responses",
                          sleep=waits.append)
    with pytest.raises(StreamProtocolError, match="gave up resuming it .it is left running.") as info:
        list(resumable)
    assert getattr(info.value, RESUMED) == "r"
    assert served[0] == resumable.reconnects == MAX_RESUMES == 50
    assert waits == [resume_delay(n) for n in range(2, MAX_RESUMES + 1)]
    assert waits[:6] == [0.5, 1.0, 2.0, 4.0, 8.0, 8.0] and set(waits[4:]) == {8.0}
    assert resume_delay(1) == 0.0  # the first resume goes at once


def interaction_event(index, kind="step.delta", rid=None, with_id=True):
    body = {"event_type": kind}
    if with_id:
        body["event_id"] = "evt_%d" % index
    if rid:
        body["interaction"] = {"id": rid}
    return SSEEvent(__import__("json").dumps(body), kind)


@pytest.mark.parametrize("with_id", [True, False])
def test_opaque_cursors_drop_every_event_passed_on_when_the_server_replays_from_the_start(with_id):
    stream = [interaction_event(0, "interaction.created", "v1", with_id)] + [
        interaction_event(n, with_id=with_id) for n in range(1, 5)] + [
        interaction_event(5, "interaction.completed", with_id=with_id)]
    asked = []

    def reconnect(rid, cursor):
        asked.append(cursor)
        return iter(stream)  # the whole stream again, whatever the cursor

    resumable = Resumable(broken(stream[:3], TransportError("reset")), gemini_interactions.frame_cursor, reconnect)
    passed = [f.data for f in resumable]
    assert passed == [f.data for f in stream]
    assert asked == (["evt_2"] if with_id else [None])


@pytest.mark.parametrize("rid", [".", "..", "%2e%2E", " .. ", ""])
def test_ids_that_would_leave_their_segment_make_no_request(rid):
    for module in (openai_responses, gemini_interactions):
        endpoint = Endpoint("openai-responses" if module is openai_responses else "gemini-interactions",
                            "http://127.0.0.1:9", "k")
        for make in (lambda: module.resume_request(endpoint, rid, None), lambda: module.cancel_request(endpoint, rid)):
            with pytest.raises(StreamProtocolError, match="no usable id"):
                make()
    assert openai_responses.resume_request(endpoint, "resp_.x", None).url == "/responses/resp_.x?stream=true"


def test_two_deltas_sharing_a_sequence_number_on_one_connection_both_pass():
    """Round 3's R02 (c): a server that numbers two different deltas alike (no cut): both reach the parser (the
    second was dropped as a replay: its text lost without an error); a resumed connection's replay is still
    dropped, and only that."""
    def delta(seq, text):
        return SSEEvent('{"type":"response.output_text.delta","sequence_number":%d,"delta":"%s"}' % (seq, text),
                        "response.output_text.delta")

    first = [event(0, "response.created", "resp_1"), delta(1, "a"), delta(2, "b"), delta(2, "c"), delta(4, "d")]
    again = [delta(2, "c"), delta(4, "d"), delta(5, "e"), delta(5, "f"), event(7, "response.completed")]
    resumable = Resumable(broken(first, TransportError("reset")), openai_responses.frame_cursor,
                          lambda rid, cursor: iter(again), True)
    texts = [f.data.split('"delta":"')[1][0] for f in resumable if '"delta"' in f.data]
    assert texts == ["a", "b", "c", "d", "e", "f"]
    assert resumable.complete
