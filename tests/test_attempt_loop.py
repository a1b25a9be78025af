"""The attempt loop written once (agenthub.client): its hooks, for streams and for documents alike,
and the shared modules that name no vendor."""

import json
import os
import re

from agenthub import AutoLLMClient, ServerError
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
def test_a_fallback_set_before_anything_was_delivered_is_yielded_instead_of_the_error(server):
    server.push([status(400, {}, "length"), send(error_body("bad", "invalid_request_error"))])
    spare = [{"role": "assistant", "event_type": "start", "content_items": [], "usage_metadata": None,
              "finish_reason": None, "created_at": 1}]

    class Failover(AttemptHook):
        def on_error(self, attempt, error):
            if not attempt.retry and not attempt.delivered:
                attempt.fallback = iter(spare)

    client = make(server, hooks=[Failover()])
    assert list(client.streaming_response([USER])) == spare


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
