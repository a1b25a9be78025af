"""The attempt loop written once (agenthub.client): its hooks, for streams and for documents alike,
and the shared modules that name no vendor."""

import json
import os
import re
import threading
import time

import pytest

from agenthub import AutoLLMClient, ConfigError, ServerError, TransportError
from agenthub.attempts import AttemptHook
from agenthub.client import Timeout
from faultserver import chat_stream, error_body, send, status, tiny_session, within
from faultserver import fast_backoff, server  # noqa: F401  (fixtures)

USER = {"role": "user", "content_items": [{"type": "text", "text": "hi"}]}
SSE = {"Content-Type": "text/event-stream"}
HERE = os.path.dirname(os.path.abspath(__file__))


def make(server, **kwargs):
    return AutoLLMClient("test-model", client_type="openai-chat", base_url=server.url + "/v1", api_key="sk-hook-secret-1",
                         session=tiny_session(), timeout=Timeout(connect=2, read=3), **kwargs)


class Recorder(AttemptHook):
    def __init__(self):
        self.calls = []

    def before_attempt(self, attempt):
        self.calls.append(("before_attempt", attempt.kind, attempt.number, attempt.status, attempt.delivered))

    def after_response(self, attempt):
        self.calls.append(("after_response", attempt.kind, attempt.number, attempt.status,
                           attempt.headers.get("x-ratelimit-remaining-requests")))

    def on_error(self, attempt, error):
        self.calls.append(("on_error", attempt.kind, attempt.number, attempt.status, type(error).__name__,
                           attempt.headers.get("x-ratelimit-remaining-requests") if attempt.headers else None,
                           attempt.retry, attempt.delivered))

    def on_done(self, attempt):
        self.calls.append(("on_done", attempt.kind, attempt.number, attempt.delivered, attempt.usage,
                           type(attempt.error).__name__ if attempt.error is not None else None))


@within(20)
def test_a_hook_sees_every_step_of_a_stream_in_order(server):
    server.push([status(503, {"x-ratelimit-remaining-requests": "0"}, "length"), send(error_body())],
                [status(200, dict(SSE, **{"x-ratelimit-remaining-requests": "41"})), send(chat_stream("a", "b"))])
    hook = Recorder()
    client = make(server, hooks=[hook])
    events = list(client.streaming_response([USER]))
    usage = events[-1]["usage_metadata"]
    assert usage["prompt_tokens"] == 3 and usage["response_tokens"] == 2
    assert hook.calls == [
        ("before_attempt", "stream", 0, None, 0),
        ("on_error", "stream", 0, 503, "ServerError", "0", True, 0),
        ("before_attempt", "stream", 1, None, 0),
        ("after_response", "stream", 1, 200, "41"),
        ("on_done", "stream", 1, len(events), usage, None),
    ]


@within(20)
def test_a_document_call_runs_the_same_loop_and_hooks(server):
    models = json.dumps({"object": "list", "data": [{"id": "m1", "object": "model"}]}).encode()
    server.push([status(500, {}, "length"), send(error_body())],
                [status(200, {"Content-Type": "application/json"}, "length"), send(models)])
    hook = Recorder()
    client = make(server, hooks=[hook])
    assert client.list_models() == ["m1"]
    assert [step[:3] for step in hook.calls] == [("before_attempt", "document", 0), ("on_error", "document", 0),
                                                 ("before_attempt", "document", 1), ("after_response", "document", 1),
                                                 ("on_done", "document", 1)]
    assert hook.calls[-1] == ("on_done", "document", 1, 1, None, None)


@within(20)
def test_the_final_error_reaches_on_done_scrubbed_and_a_hook_may_stop_the_retries(server):
    server.push([status(503, {}, "length"), send(error_body("no sk-hook-secret-1 here"))])

    class NoRetry(Recorder):
        def on_error(self, attempt, error):
            super(NoRetry, self).on_error(attempt, error)
            attempt.retry = False

    hook = NoRetry()
    client = make(server, hooks=[hook])
    try:
        list(client.streaming_response([USER]))
    except ServerError as exc:
        assert "sk-hook-secret-1" not in str(exc) and "***" in str(exc)
    else:
        raise AssertionError("no error")
    assert len(server.requests) == 1
    assert [step[0] for step in hook.calls] == ["before_attempt", "on_error", "on_done"]
    assert hook.calls[-1] == ("on_done", "stream", 0, 0, None, "ServerError")


@within(20)
def test_on_call_start_may_answer_the_call_and_nothing_is_sent(server):
    """A hook answering a call (what a response cache does): no request, no before_attempt, no on_done; the
    events are the answer, on_call_end sees the call's usage and finish reason."""
    answer = [{"role": "assistant", "event_type": "start", "content_items": [], "usage_metadata": None,
               "finish_reason": None, "created_at": 7},
              {"role": "assistant", "event_type": "stop", "content_items": [],
               "usage_metadata": {"prompt_tokens": 1, "thoughts_tokens": 0, "response_tokens": 2, "cached_tokens": 0},
               "finish_reason": "stop", "created_at": 9}]

    class Answers(Recorder):
        def on_call_start(self, call):
            self.calls.append(("on_call_start", call.kind, call.answer))
            call.answer, call.cache = iter(answer), "hit"

        def on_call_end(self, call):
            self.calls.append(("on_call_end", call.cache, call.first_event_ms, call.usage, call.finish_reason,
                               call.error))

    hook, later = Answers(), Recorder()
    client = make(server, hooks=[hook, later])
    assert list(client.streaming_response([USER])) == answer
    assert server.requests == [] and later.calls == []
    assert hook.calls == [("on_call_start", "stream", None),
                          ("on_call_end", "hit", 7, answer[1]["usage_metadata"], "stop", None)]


@within(20)
@pytest.mark.parametrize("with_fallback", [False, True])
def test_a_raising_end_hook_never_skips_the_later_hooks_ends(server, with_fallback):
    """A hook's on_done or on_call_end raising: every later hook's still runs (a process-wide budget settles its
    hold, telemetry ends its span); each step's first exception is raised once every hook had that step (the
    on_call_end one last, its context the on_done one)."""

    class Raising(AttemptHook):
        def on_done(self, attempt):
            raise RuntimeError("on_done broke")

        def on_call_end(self, call):
            raise ValueError("on_call_end broke")

    class Ends(AttemptHook):
        def __init__(self):
            self.calls = []

        def on_done(self, attempt):
            self.calls.append(("on_done", attempt.model))

        def on_call_end(self, call):
            self.calls.append(("on_call_end", call.model, call.finish_reason))

    server.push([status(200, SSE), send(chat_stream("a"))])
    later, registered = Ends(), Ends()
    kwargs = {"fallbacks": [make(server)]} if with_fallback else {}
    client = make(server, hooks=[Raising(), later], **kwargs)
    from agenthub import attempts

    attempts.register(registered)
    try:
        with pytest.raises(ValueError, match="on_call_end broke") as raised:
            list(client.streaming_response([USER]))
    finally:
        attempts.unregister(registered)
    assert isinstance(raised.value.__context__, RuntimeError) and str(raised.value.__context__) == "on_done broke"
    assert later.calls == registered.calls == [("on_done", "test-model"), ("on_call_end", "test-model", "stop")]


@within(20)
def test_on_event_runs_only_for_a_hook_that_wants_events(server):
    server.push([status(200, SSE), send(chat_stream("a", "b"))], [status(200, SSE), send(chat_stream("c"))])

    class Quiet(AttemptHook):
        def on_event(self, call, event):
            raise AssertionError("on_event without wants_events")

    class Listener(AttemptHook):
        wants_events = True

        def __init__(self):
            self.seen = []
            self.ends = []

        def on_event(self, call, event):
            self.seen.append(event["event_type"])

        def on_call_end(self, call):
            self.ends.append((call.route, call.server[0], call.finish_reason, call.attempts))

    quiet = make(server, hooks=[Quiet()])
    assert [e["event_type"] for e in quiet.streaming_response([USER])][-1] == "stop"
    listener = Listener()
    events = list(make(server, hooks=[listener]).streaming_response([USER]))
    assert listener.seen == [e["event_type"] for e in events]
    assert listener.ends == [({"model": "test-model", "client_type": "openai-chat",
                               "host": "127.0.0.1:{}".format(server.port)}, "127.0.0.1", "stop", 1)]


VENDORS = re.compile(r"openai|anthropic|claude|gemini|google|goog\b|x-goog|vertex|bedrock|amazon|amzn|\baws\b|azure|"
                     r"x-ms-|litellm|llm_provider|mistral|deepseek|boto|client\s*==\s*[\"']agenthub[\"']", re.I)


def test_errors_and_transport_name_no_vendor():
    for name in ("errors.py", "transport.py"):
        with open(os.path.join(HERE, "..", "agenthub", name), encoding="utf-8") as handle:
            for number, line in enumerate(handle, 1):
                found = VENDORS.search(line)
                assert found is None, "agenthub/{}:{} names {!r}: {}".format(name, number, found.group(0), line.strip())


def test_hooks_are_given_to_the_constructor_and_read_back_as_a_tuple():
    from agenthub import ConfigError, RateLimiter
    from agenthub.limiter import LimiterHook

    hook = AttemptHook()
    client = AutoLLMClient("m", client_type="openai-chat", base_url="http://127.0.0.1:9/v1", api_key="k",
                           limiter=RateLimiter(rpm=60), hooks=[hook])
    assert isinstance(client.hooks, tuple)
    assert [type(h) for h in client.hooks] == [LimiterHook, AttemptHook] and client.hooks[1] is hook
    assert isinstance(client.hooks[0], AttemptHook)  # the limiter's hook is one too
    try:
        client.hooks = ()
    except AttributeError:
        pass
    else:
        raise AssertionError("client.hooks is read-only")
    for bad in ("not a list", [object()]):
        try:
            AutoLLMClient("m", client_type="openai-chat", base_url="http://127.0.0.1:9/v1", api_key="k", hooks=bad)
        except ConfigError:
            pass
        else:
            raise AssertionError("hooks={!r} was taken".format(bad))


def test_process_wide_hooks_register_once_and_unregister():
    from agenthub import attempts

    hook = AttemptHook()
    assert attempts.registered() == ()
    attempts.register(hook)
    attempts.register(hook)
    try:
        assert attempts.registered() == (hook,)
    finally:
        attempts.unregister(hook)
    attempts.unregister(hook)  # not registered: nothing happens
    assert attempts.registered() == ()


def test_the_retry_constants_live_once_and_the_clients_names_still_patch_them(monkeypatch):
    import agenthub.client as client_module
    from agenthub import attempts

    assert client_module.BACKOFF_BASE == attempts.BACKOFF_BASE and client_module.RETRY_AFTER_CAP == attempts.RETRY_AFTER_CAP
    monkeypatch.setattr(client_module, "BACKOFF_BASE", 0.125)
    assert attempts.BACKOFF_BASE == 0.125
    monkeypatch.undo()
    assert attempts.BACKOFF_BASE == 0.5


@within(20)
def test_the_batch_wire_runs_the_same_loop(server):
    """jobs/backends/_wire.Wire has no retry loop of its own: a 503 on a GET is retried by the attempt loop (its
    backoff, scrubbing), a POST that creates something is not repeated after a connection failure."""
    from agenthub.errors import TransportError
    from agenthub.jobs.backends._wire import Wire
    from agenthub.providers._common import Endpoint
    from faultserver import drop

    wire = Wire("openai-chat", Endpoint("openai-chat", server.url + "/v1", "sk-wire-secret-1", None, {}, "m"),
                session=tiny_session(), max_retries=2)
    server.push([status(503, {}, "length"), send(error_body("down sk-wire-secret-1"))],
                [status(200, {"Content-Type": "application/json"}, "length"), send(b'{"id": "batch_1"}')])
    assert wire.json("GET", server.url + "/v1/batches/batch_1") == {"id": "batch_1"}
    assert [r.method for r in server.requests] == ["GET", "GET"]
    server.push([drop()])
    try:
        wire.json("POST", server.url + "/v1/batches", body={"input_file_id": "f"})
    except TransportError as exc:
        assert "sk-wire-secret-1" not in str(exc)
    else:
        raise AssertionError("no error")
    assert [r.method for r in server.requests] == ["GET", "GET", "POST"]
    wire.session.close()


@within(20)
def test_a_registered_hook_runs_on_every_client_after_the_clients_own(server):
    from agenthub import attempts

    order = []

    class Named(AttemptHook):
        def __init__(self, name):
            self.name = name

        def on_call_start(self, call):
            order.append(("start", self.name))

        def before_attempt(self, attempt):
            order.append(("before", self.name))

        def on_call_end(self, call):
            order.append(("end", self.name, call.error))

    server.push([status(200, SSE), send(chat_stream("a"))], [status(200, SSE), send(chat_stream("b"))])
    everywhere = Named("process")
    attempts.register(everywhere)
    try:
        list(make(server, hooks=[Named("own")]).streaming_response([USER]))
        list(make(server).streaming_response([USER]))
    finally:
        attempts.unregister(everywhere)
    assert order == [("start", "own"), ("start", "process"), ("before", "own"), ("before", "process"),
                     ("end", "own", None), ("end", "process", None),
                     ("start", "process"), ("before", "process"), ("end", "process", None)]


def test_a_calls_config_is_checked_once(monkeypatch):
    """Issue 36 item 5: streaming_response and count_tokens check the config once (``plan`` checks its own)."""
    import agenthub.client as client_module

    seen = []
    real = client_module.check_config

    def counting(config):
        seen.append(config)
        return real(config)

    monkeypatch.setattr(client_module, "check_config", counting)
    client = AutoLLMClient("test-model", client_type="openai-chat", base_url="http://127.0.0.1:9/v1", api_key="k")
    config = {"max_tokens": 8}
    client.streaming_response([USER], config).close()
    assert seen == [config]
    del seen[:]
    client.count_tokens([USER], config, estimate=True)
    assert seen == [config]
    del seen[:]
    client.plan([USER], config)
    assert seen == [config]


def test_the_deadline_timer_is_built_in_one_place():
    """Issue 36 item 5: the attempt loop and the route loop share ``attempts.start_deadline``."""
    from agenthub.attempts import start_deadline

    sources = {}
    for name in ("attempts.py", "failover.py"):
        with open(os.path.join(HERE, os.pardir, "agenthub", name), encoding="utf-8") as f:
            sources[name] = f.read()
    assert sources["attempts.py"].count("threading.Timer(") == 1 and "threading.Timer(" not in sources["failover.py"]

    class Watch(object):
        reason = None

        def stop(self, reason):
            self.reason = reason

    assert start_deadline(Watch(), None) == (None, None)
    watch = Watch()
    deadline, timer = start_deadline(watch, 0.01)
    timer.join(5)
    assert watch.reason == "deadline" and deadline is not None


def test_the_batch_wire_runs_the_attempt_loop_without_the_client():
    """Issue 36 item 5: jobs/backends/_wire.py takes Timeout from agenthub.attempts (not the client), and its
    attempt loop's plan is the request builder each attempt calls (no unused argument)."""
    with open(os.path.join(HERE, os.pardir, "agenthub", "jobs", "backends", "_wire.py"), encoding="utf-8") as f:
        source = f.read()
    assert "from ...client" not in source and "lambda planned" not in source


def test_the_dead_stop_helpers_are_gone():
    """Issue 36 item 5: attempts.is_stop and attempts.stopped had no caller."""
    import agenthub.attempts as attempts

    assert not hasattr(attempts, "is_stop") and not hasattr(attempts, "stopped")


class Delay(AttemptHook):
    """An on_error hook that sets its own wait before the retry."""

    def __init__(self, delay):
        self.delay = delay
        self.seen = threading.Event()

    def on_error(self, attempt, error):
        attempt.delay = self.delay
        self.seen.set()


@within(20)
def test_a_hooks_wait_past_the_deadline_raises_the_error_at_once(server):
    """total=5 and a hook asking for 30 s: the 503 is raised now, as for a server's Retry-After past the deadline
    (before: the wait ran into the deadline and the call ended 5 s later with TransportError(deadline=True))."""
    server.push([status(503, {}, "length"), send(error_body())])
    client = make(server, hooks=[Delay(30.0)])
    client.timeout = Timeout(connect=2, read=3, total=5)
    try:
        list(client.streaming_response([USER]))
    except ServerError as exc:
        assert exc.status == 503
    else:
        raise AssertionError("no error")
    assert len(server.requests) == 1


@within(20)
def test_a_hooks_wait_too_long_for_a_lock_is_cut_short_by_abort(server):
    """1e10 s (more than a lock's wait can take) and no deadline: the wait runs until abort() ends it (before: an
    OverflowError out of the sleep)."""
    server.push([status(503, {}, "length"), send(error_body())])
    hook = Delay(1e10)
    stream = make(server, hooks=[hook]).streaming_response([USER])
    stopper = threading.Thread(target=lambda: hook.seen.wait(10) and stream.abort())
    stopper.start()
    try:
        list(stream)
    except TransportError as exc:
        assert (exc.aborted, exc.deadline) == (True, False)
    else:
        raise AssertionError("no error")
    finally:
        stopper.join(10)
    assert len(server.requests) == 1


@within(20)
def test_a_hooks_wait_that_is_no_number_is_a_config_error(server):
    server.push([status(503, {}, "length"), send(error_body())])
    try:
        list(make(server, hooks=[Delay("soon")]).streaming_response([USER]))
    except ConfigError as exc:
        assert str(exc) == ("openai-chat: an on_error hook set attempt.delay to a str: it takes seconds (a number, or "
                            "None for no retry)")
    else:
        raise AssertionError("no error")
    assert len(server.requests) == 1


def test_the_backoff_of_a_late_retry_stays_within_its_cap():
    from agenthub.attempts import BACKOFF_CAP, backoff

    waits = [backoff(n, None) for n in (0, 10, 1023, 1024, 10 ** 6)]
    assert all(0.0 <= wait <= BACKOFF_CAP for wait in waits)  # before: OverflowError from the 1024th on


@within(60)
def test_a_client_retrying_past_a_thousand_times_goes_on(server, monkeypatch):
    """max_retries=2000 (retry for as long as it takes): the 1025th retry waits as the others (before: an
    OverflowError out of the backoff, 2**1024 being no float)."""
    import agenthub.client as client_module

    monkeypatch.setattr(client_module, "BACKOFF_BASE", 0.0)
    count = []

    def answer(request):
        count.append(1)
        if len(count) <= 1030:
            return [status(503, {}, "length"), send(error_body())]
        return [status(200, SSE), send(chat_stream("at last"))]

    server.default = answer
    events = list(make(server, max_retries=2000).streaming_response([USER]))
    assert [i["text"] for e in events for i in e["content_items"] if i["type"] == "text"] == ["at last"]
    assert len(server.requests) == 1031


@pytest.fixture
def new_york(monkeypatch):
    """The process's local zone is UTC-5 (restored after)."""
    if not hasattr(time, "tzset"):
        pytest.skip("needs time.tzset")
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


@within(20)
def test_a_retry_after_date_without_a_zone_is_read_as_gmt(server, new_york):
    """RFC 9110 asks recipients to take asctime's form (no zone) and every HTTP date is GMT: 30 s ahead is about 30 s
    wherever the client runs (before, in New York: 18,030 s, more than the client waits, a limiter paused for 10
    minutes; in Tokyo: 0, retried at once)."""
    from agenthub import RateLimitError

    def answer(request):
        ahead = time.gmtime(time.time() + 30)
        return [status(429, {"Retry-After": time.strftime("%a %b %d %H:%M:%S %Y", ahead)}, "length"),
                send(error_body("slow down", "rate_limit_error"))]

    server.default = answer
    try:
        list(make(server, max_retries=0).streaming_response([USER]))
    except RateLimitError as exc:
        assert 20 < exc.retry_after <= 30
    else:
        raise AssertionError("no error")
