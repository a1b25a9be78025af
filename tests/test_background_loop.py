"""The reconnect of a background stream is the attempt loop's next attempt (agenthub.client._run), not a
loop of its own: every hook sees the resuming GET, and its retries and backoff follow max_retries and the
total deadline through the same code as the POST's.  Local fake: tests/longrun_server.py."""

import threading
import time

import pytest

from agenthub import AutoLLMClient, RateLimiter, Timeout
from agenthub import attempts
from agenthub.attempts import AttemptHook
from agenthub.errors import ServerError, TransportError, UpstreamError
from faultserver import fast_backoff  # noqa: F401  (autouse: retries back off for milliseconds)
from longrun_server import LongrunServer, boundaries, interactions_events, responses_events, wait_for

TEXTS = ["one ", "two ", "three ", "four ", "five"]
USER = [{"role": "user", "content_items": [{"type": "text", "text": "go"}]}]


class Recorder(AttemptHook):
    """Every hook call as (hook, attempt number, method, resuming, status or error type, retry)."""

    def __init__(self):
        self.calls = []

    def _note(self, name, attempt, extra=None, retry=None):
        method = getattr(attempt.request, "method", None)
        self.calls.append((name, attempt.number, method, attempt.resuming, extra, retry))

    def before_attempt(self, attempt):
        self._note("before", attempt)

    def after_response(self, attempt):
        self._note("after", attempt, attempt.status)

    def on_error(self, attempt, error):
        self._note("error", attempt, type(error).__name__, attempt.retry)

    def on_done(self, attempt):
        self._note("done", attempt, type(attempt.error).__name__ if attempt.error else None)


def cut_after_event_4(server, rid, get_failures):
    """Script ``rid`` cut after its fifth event, the next GETs answering ``get_failures`` first."""
    server.get_failures.extend(get_failures)
    events = responses_events(rid, TEXTS)
    return server.add(rid, events, cuts=[boundaries(events)[4]])


def client_for(server, **kwargs):
    return AutoLLMClient("gpt-5.5", api_key="test-key", base_url=server.url + "/v1", client_type="openai-responses",
                         **kwargs)


def texts_of(events):
    return [i["text"] for e in events for i in e["content_items"] if i["type"] == "text" and i["text"]]


def test_every_hook_sees_the_resuming_get_and_its_failed_try():
    events = responses_events("resp_h1", TEXTS)
    ends = boundaries(events)
    with LongrunServer() as server:
        server.get_failures.append(503)
        server.add("resp_h1", events, cuts=[ends[5] - 7])  # cut inside event 5 (the second delta)
        recorder = Recorder()
        client = client_for(server, hooks=[recorder])
        out = list(client.streaming_response(USER, {"background": True}))
        methods = [(r["method"], r["query"].get("starting_after")) for r in server.requests]
    assert texts_of(out) == TEXTS
    assert methods == [("POST", None), ("GET", "4"), ("GET", "4")]
    assert recorder.calls == [
        ("before", 0, "POST", None, None, None),
        ("after", 0, "POST", None, 200, None),
        # the cut after the id was known: resumed at once (retry True) by the loop's next attempt, a GET
        ("error", 0, "POST", None, "TransportError", True),
        ("before", 1, "GET", "resp_h1", None, None),
        ("error", 1, "GET", "resp_h1", "ServerError", True),  # the 503: retried like any attempt
        ("before", 2, "GET", "resp_h1", None, None),
        ("after", 2, "GET", "resp_h1", 200, None),
        ("done", 2, "GET", "resp_h1", None, None),
    ]


def test_a_limiter_takes_a_turn_for_each_resuming_get_and_counts_the_tokens_once():
    events = responses_events("resp_h2", TEXTS)
    ends = boundaries(events)
    limiter = RateLimiter(rpm=6000, tpm=10_000_000)
    with LongrunServer() as server:
        server.add("resp_h2", events, cuts=[ends[3], ends[6] - ends[3]])  # two cuts: a POST and two GETs
        out = list(client_for(server, limiter=limiter).streaming_response(USER, {"background": True}))
        gets = [r for r in server.requests if r["method"] == "GET"]
    assert texts_of(out) == TEXTS
    assert len(gets) == 2
    assert limiter.requests == 3  # the POST and both GETs each took a turn
    assert limiter.tokens == 10 + len(TEXTS)  # the answer's usage, settled once on the POST's ticket


def test_resuming_gets_that_keep_failing_follow_max_retries_with_the_loops_backoff(monkeypatch):
    waits = []
    backoff = attempts.backoff

    def spy(attempt, retry_after):
        delay = backoff(attempt, retry_after)
        waits.append(attempt)
        return delay

    monkeypatch.setattr(attempts, "backoff", spy)
    with LongrunServer() as server:
        cut_after_event_4(server, "resp_h3", [500, 500, 500, 500])
        recorder = Recorder()
        client = client_for(server, max_retries=1, hooks=[recorder])
        with pytest.raises(ServerError) as info:
            list(client.streaming_response(USER, {"background": True}))
        methods = [r["method"] for r in server.requests]
    assert info.value.status == 500
    assert methods == ["POST", "GET", "GET"]  # max_retries=1: one GET and one retry of it; left running (D3)
    assert waits == [0]  # the one backoff, counted afresh from the cut
    errors = [c for c in recorder.calls if c[0] == "error"]
    assert [(c[1], c[2], c[5]) for c in errors] == [(0, "POST", True), (1, "GET", True), (2, "GET", False)]
    assert recorder.calls[-1] == ("done", 2, "GET", "resp_h3", "ServerError", None)


def test_a_resuming_gets_backoff_that_would_pass_the_deadline_is_not_waited_for(monkeypatch):
    monkeypatch.setattr(attempts, "backoff", lambda attempt, retry_after: 30.0)
    with LongrunServer() as server:
        cut_after_event_4(server, "resp_h4", [503])
        client = client_for(server, timeout=Timeout(5, 5, total=10))
        started = time.monotonic()
        with pytest.raises(UpstreamError) as info:
            list(client.streaming_response(USER, {"background": True}))
        elapsed = time.monotonic() - started
        gets = [r for r in server.requests if r["method"] == "GET"]
    assert info.value.status == 503 and not isinstance(info.value, TransportError)
    assert len(gets) == 1  # the same rule as the POST's retries: a wait past the deadline is not begun
    assert elapsed < 5.0


def test_a_resumes_retry_that_fits_the_deadline_is_waited_for_and_the_next_is_not(monkeypatch):
    monkeypatch.setattr(attempts, "backoff", lambda attempt, retry_after: 0.6 if attempt == 0 else 5.0)
    with LongrunServer() as server:
        cut_after_event_4(server, "resp_h5", [503, 503])
        client = client_for(server, timeout=Timeout(5, 5, total=1.5))
        with pytest.raises(UpstreamError) as info:
            list(client.streaming_response(USER, {"background": True}))
        gets = [r for r in server.requests if r["method"] == "GET"]
    # the first GET's retry fits in the deadline (0.6 s); the second's 5 s would not: raised, not waited for
    assert len(gets) == 2 and info.value.status == 503


def test_an_abort_during_a_resumes_backoff_ends_it_at_once_and_cancels(monkeypatch):
    monkeypatch.setattr(attempts, "backoff", lambda attempt, retry_after: 30.0)
    with LongrunServer() as server:
        script = cut_after_event_4(server, "resp_h6", [503])
        stream = client_for(server).streaming_response(USER, {"background": True})
        timer = threading.Timer(0.3, stream.abort)
        timer.start()
        started = time.monotonic()
        try:
            with pytest.raises(TransportError) as info:
                list(stream)
        finally:
            timer.cancel()
        elapsed = time.monotonic() - started
        assert wait_for(lambda: script.cancelled)
        gets = [r for r in server.requests if r["method"] == "GET"]
    assert info.value.aborted is True
    assert len(gets) == 1 and elapsed < 5.0  # the 30 s backoff of the loop was cut short by the abort


def test_interactions_resume_is_an_attempt_the_hooks_see():
    events = interactions_events("v1_hk", TEXTS)
    ends = boundaries(events)
    with LongrunServer() as server:
        server.add("v1_hk", events, cuts=[ends[4]], done=True)
        recorder = Recorder()
        client = AutoLLMClient("gemini-3.8-flash", api_key="test-key", base_url=server.url,
                               client_type="gemini-interactions", hooks=[recorder])
        out = list(client.streaming_response(USER, {"background": True}))
        gets = [r for r in server.requests if r["method"] == "GET"]
    assert texts_of(out) == TEXTS
    assert [g["query"]["last_event_id"] for g in gets] == ["evt_005"]
    assert [c[:4] for c in recorder.calls] == [("before", 0, "POST", None), ("after", 0, "POST", None),
                                              ("error", 0, "POST", None), ("before", 1, "GET", "v1_hk"),
                                              ("after", 1, "GET", "v1_hk"), ("done", 1, "GET", "v1_hk")]


def test_an_abort_waits_for_the_cancel_no_longer_than_cancel_seconds(monkeypatch, caplog):
    """The cancel an abort sends has a deadline of its own (background.CANCEL_SECONDS, 0.3 s here): a server that
    trickles its answer (a byte every 0.2 s, never silent for a read timeout) no longer holds the aborted reader
    until it is done (before: 45 s for 90 bytes; without end for more)."""
    import json

    from agenthub import background
    from faultserver import FaultServer, hang, send, status, trickle

    monkeypatch.setattr(background, "CANCEL_SECONDS", 0.3)
    events = responses_events("resp_tr", TEXTS)
    seen = threading.Event()

    def answer(request):
        if request.path.endswith("/cancel"):
            seen.set()
            return [status(200, {"Content-Type": "application/json"}),
                    trickle(json.dumps({"id": "resp_tr", "status": "cancelled", "pad": "x" * 50}), every=0.2)]
        return [status(200, {"Content-Type": "text/event-stream"}), send(b"".join(events[:5])), hang(20)]

    with FaultServer(default=answer) as server:
        stream = client_for(server, max_retries=0).streaming_response(USER, {"background": True})
        with pytest.raises(TransportError) as info:
            for event in stream:
                if texts_of([event]):
                    stream.abort()
        assert seen.is_set()
        assert [r.path for r in server.requests] == ["/v1/responses", "/v1/responses/resp_tr/cancel"]
    assert info.value.aborted is True
    assert "openai-responses: cancelling background response resp_tr failed: no answer within 0.3 s" in caplog.text
