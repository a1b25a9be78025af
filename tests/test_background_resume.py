"""Background responses resume after a cut (agenthub.resume): OpenAI Responses and Gemini Interactions
against a local fake (tests/longrun_server.py) that breaks the connection at a chosen byte offset.

Every cut at an event boundary and at random byte offsets is resumed by exactly one GET from the last
event passed on, and the caller sees every delta once; a reconnect never POSTs again; abort cancels."""

import random
import threading

import pytest

from agenthub import AutoLLMClient, check_stream, collect
from agenthub.errors import StreamProtocolError, TransportError, UpstreamError
from faultserver import fast_backoff  # noqa: F401  (autouse: retries back off for milliseconds)
from longrun_server import LongrunServer, boundaries, interactions_events, responses_events, wait_for

TEXTS = ["Long ", "agent ", "turns ", "are ", "where ", "streams ", "get ", "cut", "\u2014", "f\u00fcnf."]
USER = [{"role": "user", "content_items": [{"type": "text", "text": "go"}]}]


def responses_client(server, **kwargs):
    return AutoLLMClient("gpt-5.5", api_key="test-key", base_url=server.url + "/v1", client_type="openai-responses",
                         **kwargs)


def interactions_client(server, **kwargs):
    return AutoLLMClient("gemini-3.8-flash", api_key="test-key", base_url=server.url,
                         client_type="gemini-interactions", **kwargs)


def texts_of(events):
    return [i["text"] for e in events for i in e["content_items"] if i["type"] == "text" and i["text"]]


def run(server, make_client, rid, events, cuts, done=False):
    server.add(rid, events, cuts=cuts, done=done)
    out = list(make_client(server).streaming_response(USER, {"background": True}))
    check_stream(out)
    return out


def requests_of(server, method):
    return [r for r in server.requests if r["method"] == method]


def test_responses_background_request_asks_to_store():
    with LongrunServer() as server:
        run(server, responses_client, "resp_a", responses_events("resp_a", TEXTS), [])
        post = server.requests[0]
    assert post["path"] == "/v1/responses"
    assert (post["body"]["background"], post["body"]["store"], post["body"]["stream"]) == (True, True, True)
    assert len(server.requests) == 1  # nothing broke: no GET, no cancel


def test_responses_cut_at_every_event_boundary_is_resumed_once():
    events = responses_events("resp_b", TEXTS)
    ends = boundaries(events)
    with LongrunServer() as server:
        for k in range(len(events) - 1):  # after response.created ... before response.completed
            before = len(server.requests)
            out = run(server, responses_client, "resp_b", events, [ends[k]])
            mine = server.requests[before:]
            assert texts_of(out) == TEXTS, k
            gets = [r for r in mine if r["method"] == "GET"]
            assert [r["method"] for r in mine] == ["POST", "GET"], k
            assert gets[0]["path"] == "/v1/responses/resp_b"
            assert gets[0]["query"] == {"stream": "true", "starting_after": str(k)}, k
            assert collect(out)["content_items"][0]["text"] == "".join(TEXTS)


def test_responses_cut_at_random_byte_offsets_is_resumed_once():
    events = responses_events("resp_c", TEXTS)
    ends = boundaries(events)
    rng = random.Random(22)
    offsets = sorted(rng.sample(range(ends[0] + 1, ends[-1] - 1), 30))
    with LongrunServer() as server:
        for offset in offsets:
            before = len(server.requests)
            out = run(server, responses_client, "resp_c", events, [offset])
            mine = server.requests[before:]
            assert texts_of(out) == TEXTS, offset
            assert [r["method"] for r in mine] == ["POST", "GET"], offset
            whole = [n for n, end in enumerate(ends) if end <= offset]  # events that arrived whole
            assert mine[1]["query"]["starting_after"] == str(whole[-1]), offset


def test_two_cuts_two_reconnects_and_a_failed_get_is_retried():
    events = responses_events("resp_d", TEXTS)
    ends = boundaries(events)
    with LongrunServer() as server:
        server.get_failures.append(503)
        # the POST is cut after event 3; the 503 is retried; that GET is cut after 2 more events
        out = run(server, responses_client, "resp_d", events, [ends[3], ends[5] - ends[3]])
        gets = requests_of(server, "GET")
    assert texts_of(out) == TEXTS
    assert len(requests_of(server, "POST")) == 1
    assert [g["query"]["starting_after"] for g in gets] == ["3", "3", "5"]


def test_a_cut_before_the_response_id_is_an_ordinary_retry():
    events = responses_events("resp_e", TEXTS)
    with LongrunServer() as server:
        server.add("resp_e", events, cuts=[10])  # inside response.created: no id yet
        server.add("resp_e2", responses_events("resp_e2", TEXTS))
        out = list(responses_client(server).streaming_response(USER, {"background": True}))
    assert texts_of(out) == TEXTS
    assert [r["method"] for r in server.requests] == ["POST", "POST"]


def test_resume_that_keeps_failing_raises_never_posts_again_and_leaves_the_response_running(caplog):
    """Issue 29 D3: giving up on resuming is not a reason to cancel (paid) work the caller did not stop."""
    events = responses_events("resp_f", TEXTS)
    ends = boundaries(events)
    with LongrunServer() as server:
        server.get_failures.extend([500, 500, 500])
        server.add("resp_f", events, cuts=[ends[4]])
        stream = responses_client(server, max_retries=2).streaming_response(USER, {"background": True})
        with pytest.raises(UpstreamError):
            list(stream)
        methods = [(r["method"], r["path"]) for r in server.requests]
    assert methods == [("POST", "/v1/responses")] + [("GET", "/v1/responses/resp_f")] * 3
    assert "background response resp_f is left running (not cancelled)" in caplog.text


def test_abort_cancels_the_background_response():
    events = responses_events("resp_g", TEXTS)
    gate = threading.Event()
    with LongrunServer() as server:
        script = server.add("resp_g", events, hold=(7, gate))
        stream = responses_client(server).streaming_response(USER, {"background": True})
        seen = []
        with pytest.raises(TransportError) as info:
            for event in stream:
                seen.append(event)
                if texts_of([event]):
                    stream.abort()
        gate.set()
        assert info.value.aborted is True
        assert wait_for(lambda: script.cancelled)
        cancel = [r for r in server.requests if r["path"] == "/v1/responses/resp_g/cancel"]
    assert len(cancel) == 1 and cancel[0]["method"] == "POST"
    assert cancel[0]["headers"]["Authorization"] == "Bearer test-key"
    assert not requests_of(server, "GET")


def test_closing_a_background_stream_early_cancels_it_too():
    events = responses_events("resp_h", TEXTS)
    with LongrunServer() as server:
        script = server.add("resp_h", events)
        stream = responses_client(server).streaming_response(USER, {"background": True})
        for event in stream:
            if texts_of([event]):
                break
        stream.close()
        assert wait_for(lambda: script.cancelled)


def test_without_background_a_cut_after_the_first_event_stays_an_error():
    events = responses_events("resp_i", TEXTS)
    ends = boundaries(events)
    with LongrunServer() as server:
        server.add("resp_i", events, cuts=[ends[6]])
        with pytest.raises((StreamProtocolError, TransportError)):
            list(responses_client(server).streaming_response(USER))
        assert [r["method"] for r in server.requests] == ["POST"]


def test_interactions_cut_at_every_event_boundary_and_random_offsets():
    events = interactions_events("v1_bg", TEXTS)
    ends = boundaries(events)
    rng = random.Random(7)
    cuts = ends[:-1] + rng.sample(range(ends[0] + 1, ends[-1] - 1), 15)
    with LongrunServer() as server:
        for cut in cuts:
            before = len(server.requests)
            out = run(server, interactions_client, "v1_bg", events, [cut], done=True)
            mine = server.requests[before:]
            assert texts_of(out) == TEXTS, cut
            assert [r["method"] for r in mine] == ["POST", "GET"], cut
            whole = [n for n, end in enumerate(ends) if end <= cut]
            assert mine[1]["path"] == "/v1/interactions/v1_bg"
            assert mine[1]["query"] == {"stream": "true", "last_event_id": "evt_{:03d}".format(whole[-1] + 1)}, cut
        assert mine[0]["body"]["background"] is True and mine[0]["body"]["store"] is True


def test_interactions_abort_cancels():
    events = interactions_events("v1_ab", TEXTS)
    gate = threading.Event()
    with LongrunServer() as server:
        script = server.add("v1_ab", events, hold=(5, gate), done=True)
        stream = interactions_client(server).streaming_response(USER, {"background": True})
        with pytest.raises(TransportError):
            for event in stream:
                if texts_of([event]):
                    stream.abort()
        gate.set()
        assert wait_for(lambda: script.cancelled)
        assert [r["path"] for r in server.requests][-1] == "/v1/interactions/v1_ab/cancel"


def test_chat_background_flag_resumes_a_cut_answer(capsys):
    from agenthub.__main__ import main

    events = responses_events("resp_cli", TEXTS)
    ends = boundaries(events)
    with LongrunServer() as server:
        server.add("resp_cli", events, cuts=[ends[6]])
        code = main(["chat", "gpt-5.5", "go", "--background", "--client-type", "openai-responses",
                     "--base-url", server.url + "/v1"])
        methods = [(r["method"], r["path"]) for r in server.requests]
        body = server.requests[0]["body"]
    assert code == 0
    assert capsys.readouterr().out == "".join(TEXTS) + "\n"
    assert (body["background"], body["store"]) == (True, True)
    assert methods == [("POST", "/v1/responses"), ("GET", "/v1/responses/resp_cli")]


def test_chat_background_flag_on_a_protocol_without_it_is_refused(capsys):
    from agenthub.__main__ import main

    code = main(["chat", "some-model", "go", "--background", "--client-type", "openai-chat",
                 "--base-url", "http://127.0.0.1:9/v1"])
    assert code != 0
    assert "background" in capsys.readouterr().err


def test_openai_sdk_reads_the_fake_background_endpoints():
    """The fake's POST stream, GET ?stream=true&starting_after= and cancel, as openai's own client uses them."""
    openai = pytest.importorskip("openai")
    with LongrunServer() as server:
        server.add("resp_sdk", responses_events("resp_sdk", TEXTS))
        sdk = openai.OpenAI(api_key="test-key", base_url=server.url + "/v1", max_retries=0)
        first = list(sdk.responses.create(model="gpt-5.5", input="hi", background=True, stream=True))
        rest = list(sdk.responses.retrieve("resp_sdk", stream=True, starting_after=5))
        cancelled = sdk.responses.cancel("resp_sdk")
        requests = list(server.requests)
    assert first[-1].type == "response.completed" and first[-1].response.status == "completed"
    assert "".join(e.delta for e in first if e.type == "response.output_text.delta") == "".join(TEXTS)
    assert [e.sequence_number for e in rest] == list(range(6, len(first)))
    assert cancelled.status == "cancelled"
    assert [(r["method"], r["path"]) for r in requests] == [
        ("POST", "/v1/responses"), ("GET", "/v1/responses/resp_sdk"), ("POST", "/v1/responses/resp_sdk/cancel")]
    assert requests[0]["body"]["background"] is True
    assert requests[1]["query"] == {"stream": "true", "starting_after": "5"}


def test_azure_responses_background_resumes_and_cancels_at_the_v1_root():
    """Azure OpenAI's v1 API serves GET /openai/v1/responses/{id} and POST .../cancel for background responses
    (https://ai.azure.com/api-reference/llm/responses/cancel-response.md)."""
    events = responses_events("resp_az", TEXTS)
    ends = boundaries(events)
    with LongrunServer() as server:
        server.add("resp_az", events, cuts=[ends[5]])
        azure = AutoLLMClient("my-deployment", api_key="az-key", base_url=server.url, client_type="azure-responses")
        out = list(azure.streaming_response(USER, {"background": True}))
        requests = list(server.requests)
        script = server.add("resp_az2", responses_events("resp_az2", TEXTS))
        stream = azure.streaming_response(USER, {"background": True})
        for event in stream:
            if texts_of([event]):
                break
        stream.close()
        assert wait_for(lambda: script.cancelled)
        cancel = server.requests[-1]
    assert texts_of(out) == TEXTS
    assert [(r["method"], r["path"]) for r in requests] == [
        ("POST", "/openai/v1/responses"), ("GET", "/openai/v1/responses/resp_az")]
    assert requests[1]["query"] == {"stream": "true", "starting_after": "5"}
    assert requests[1]["headers"]["api-key"] == "az-key"
    assert (cancel["method"], cancel["path"], cancel["headers"]["api-key"]) == (
        "POST", "/openai/v1/responses/resp_az2/cancel", "az-key")


# -- issue 29 D3 ---------------------------------------------------------------------------------------------


def _without_event_ids(events):
    return [e.replace(b'"event_id"', b'"no_event_id"') for e in events]


@pytest.mark.parametrize("strip_ids", [False, True])
def test_interactions_replayed_from_the_start_on_resume_repeats_nothing(strip_ids):
    """A server that ignores last_event_id (or sends no event ids) and replays the whole stream: each event
    the caller has is dropped, by its event id (or, without ids, by its index)."""
    events = interactions_events("v1_rp", TEXTS)
    events = _without_event_ids(events) if strip_ids else events
    ends = boundaries(events)
    with LongrunServer() as server:
        for cut in (ends[1], ends[3], ends[6]):
            before = len(server.requests)
            server.add("v1_rp", events, cuts=[cut], done=True).replay_all = True
            out = list(interactions_client(server).streaming_response(USER, {"background": True}))
            check_stream(out)
            assert texts_of(out) == TEXTS, cut
            assert [r["method"] for r in server.requests[before:]] == ["POST", "GET"], cut


@pytest.mark.parametrize("rid", ["..", ".", "%2e%2e", "%2E"])
@pytest.mark.parametrize("make, events_of", [(responses_client, responses_events),
                                             (interactions_client, interactions_events)])
def test_a_response_id_that_would_leave_its_url_segment_is_never_requested(rid, make, events_of):
    events = events_of(rid, TEXTS)
    ends = boundaries(events)
    with LongrunServer() as server:
        server.add(rid, events, cuts=[ends[3]], done=events_of is interactions_events)
        with pytest.raises(StreamProtocolError, match="no usable id"):
            list(make(server).streaming_response(USER, {"background": True}))
        assert [r["method"] for r in server.requests] == ["POST"]  # no GET of /v1/ or ..., no cancel


# -- a body that ends cleanly inside a character (review 15b) ---------------------------------------------------


def _raw_utf8(events):
    """``events`` with their JSON's non-ASCII text as raw UTF-8 (as servers send it), not \\u escapes."""
    import json

    out = []
    for event in events:
        head, _, data = event.decode("utf-8").partition("data: ")
        data = json.dumps(json.loads(data), separators=(",", ":"), ensure_ascii=False)
        out.append((head + "data: " + data + "\n\n").encode("utf-8"))
    return out


@pytest.mark.parametrize("make, events_of", [(responses_client, responses_events),
                                             (interactions_client, interactions_events)])
def test_a_close_delimited_body_cut_inside_a_character_is_resumed_once(make, events_of):
    """A body that ends by closing its connection ends cleanly wherever it is cut: cut inside a character's bytes,
    it was a StreamProtocolError ("not valid UTF-8"), the response left running and nothing resumed, where a cut
    a byte earlier is resumed."""
    texts = ["f\u00fcnf ", "\u65e5\u672c\u8a9e\u306e", "\u30c6\u30ad\u30b9\u30c8", "ende"]
    rid = "resp_u8" if events_of is responses_events else "v1_u8"
    events = _raw_utf8(events_of(rid, texts))
    ends = boundaries(events)
    index = 5 if events_of is responses_events else 3  # the event of the second text
    start = events[index].index("\u65e5".encode("utf-8"))
    with LongrunServer() as server:
        for inside in (1, 2):  # after the first, after the second of its three bytes
            before = len(server.requests)
            script = server.add(rid, events, cuts=[ends[index - 1] + start + inside],
                                done=events_of is interactions_events)
            script.close_delimited = True
            out = list(make(server).streaming_response(USER, {"background": True}))
            check_stream(out)
            mine = server.requests[before:]
            assert texts_of(out) == texts, inside
            assert [(r["method"], r["path"]) for r in mine] == [("POST", mine[0]["path"]), ("GET", mine[0]["path"]
                                                                                           + "/" + rid)], inside
            assert mine[1]["query"] == ({"stream": "true", "starting_after": str(index - 1)}
                                        if events_of is responses_events
                                        else {"stream": "true", "last_event_id": "evt_{:03d}".format(index)}), inside


def test_an_sse_body_that_ends_inside_a_character_is_a_cut_and_invalid_bytes_stay_invalid():
    from agenthub.sse import iter_events

    whole = "data: {\"t\":\"\u65e5\"}\n\n".encode("utf-8")
    with pytest.raises(StreamProtocolError) as info:
        list(iter_events([whole[:whole.index(b"\xe6") + 2]]))
    assert (str(info.value), info.value.truncated, info.value.retryable) == (
        "the stream ended in the middle of a UTF-8 character (cut off?)", True, True)
    with pytest.raises(StreamProtocolError) as info:
        list(iter_events([b'data: {"t":"a\xff\xfe']))
    assert str(info.value).startswith("the stream is not valid UTF-8") and info.value.truncated is False
