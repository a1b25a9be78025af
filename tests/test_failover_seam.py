"""Failover on the one call seam (agenthub.failover): one deadline per call across its routes, the answering
route on the stream, hooks that see every attempt of every route, and what belongs to one endpoint (its
session's credentials, per-request extra_headers) never reaching another."""

import json

import pytest

from agenthub import AutoLLMClient
from agenthub.attempts import AttemptHook
from agenthub.errors import TransportError
from faultserver import FaultServer, chat_stream, error_body, send, sleep, status, tiny_session
from faultserver import fast_backoff  # noqa: F401  (autouse: retries back off for milliseconds)

SSE = {"Content-Type": "text/event-stream"}
JSON = {"Content-Type": "application/json"}
USER = {"role": "user", "content_items": [{"type": "text", "text": "Hi"}]}
UNAVAILABLE = [status(503, JSON, framing="length"), send(error_body("unavailable"))]


pytestmark = pytest.mark.usefixtures("fresh_breakers")  # (conftest: every circuit closed before and after)


@pytest.fixture
def primary():
    with FaultServer(default=UNAVAILABLE) as srv:
        yield srv


@pytest.fixture
def backup():
    with FaultServer() as srv:  # answers every request with a Chat Completions stream of "ok"
        yield srv


def endpoint(server, model, key, **kwargs):
    return AutoLLMClient(model, client_type="openai-chat", base_url=server.url + "/v1", api_key=key, **kwargs)


def text_of(events):
    return "".join(item.get("text", "") for event in events for item in event["content_items"]
                   if item["type"] == "text")


class Recorder(AttemptHook):
    def __init__(self):
        self.calls = []

    def on_call_start(self, call):
        self.calls.append(("on_call_start", call.model))

    def before_attempt(self, attempt):
        self.calls.append(("before_attempt", attempt.model, attempt.number, attempt.call.model))

    def on_error(self, attempt, error):
        self.calls.append(("on_error", attempt.model, attempt.status))

    def on_done(self, attempt):
        self.calls.append(("on_done", attempt.model, type(attempt.error).__name__ if attempt.error else None))

    def on_call_end(self, call):
        self.calls.append(("on_call_end", call.route["model"], call.error, call.finish_reason, call.attempts))


def test_one_deadline_bounds_the_whole_call_across_its_routes(primary, backup):
    """total=1.0: the primary answers 503 after 0.8 s, the backup would answer after 0.9 s more; the call's
    one deadline ends it (before, each route started its own and the turn was answered after 1.8 s)."""
    primary.default = [sleep(0.8)] + UNAVAILABLE
    backup.default = [sleep(0.9), status(200, SSE), send(chat_stream("late"))]
    client = endpoint(primary, "m", "sk-primary-0001", max_retries=0, timeout={"total": 1.0},
                      fallbacks=[endpoint(backup, "backup-model", "sk-backup-0002", timeout={"total": 1.0})])
    with pytest.raises(TransportError) as caught:
        list(client.streaming_response([USER]))
    assert caught.value.deadline is True and caught.value.aborted is False


def test_the_stream_names_the_route_that_answered(primary, backup):
    client = endpoint(primary, "m", "sk-primary-0001", max_retries=0,
                      fallbacks=[endpoint(backup, "backup-model", "sk-backup-0002")])
    stream = client.streaming_response([USER])
    assert stream.route == {"model": "m", "client_type": "openai-chat",
                            "host": "127.0.0.1:{}".format(primary.port)}  # tried first
    assert text_of(stream) == "ok"
    assert stream.route == {"model": "backup-model", "client_type": "openai-chat",
                            "host": "127.0.0.1:{}".format(backup.port)}
    assert client.last_route == stream.route
    plain = endpoint(backup, "solo", "sk-solo-0003")
    stream = plain.streaming_response([USER])
    list(stream)
    assert stream.route == {"model": "solo", "client_type": "openai-chat", "host": "127.0.0.1:{}".format(backup.port)}


def test_the_primarys_hooks_see_every_attempt_of_every_route(primary, backup):
    own = Recorder()
    fallback = endpoint(backup, "backup-model", "sk-backup-0002", hooks=[own])
    hook = Recorder()
    client = endpoint(primary, "m", "sk-primary-0001", max_retries=1, hooks=[hook], fallbacks=[fallback])
    assert text_of(client.streaming_response([USER])) == "ok"
    assert hook.calls == [
        ("on_call_start", "m"),
        ("before_attempt", "m", 0, "m"), ("on_error", "m", 503),
        ("before_attempt", "m", 1, "m"), ("on_error", "m", 503), ("on_done", "m", "ServerError"),
        ("before_attempt", "backup-model", 0, "m"), ("on_done", "backup-model", None),
        ("on_call_end", "backup-model", None, "stop", 3),
    ]
    # the fallback's own hook sees its route's attempts (after the call's hooks), not the call's start and end
    assert own.calls == [("before_attempt", "backup-model", 0, "m"), ("on_done", "backup-model", None)]


def test_a_fallback_named_by_model_never_gets_the_primarys_session(monkeypatch, primary, backup):
    """A credential header on the primary's session= (a gateway key) stays with the primary's host."""
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-deepseek-own-0004")
    monkeypatch.setenv("DEEPSEEK_BASE_URL", backup.url + "/v1")
    session = tiny_session()
    session.headers["X-Gateway-Key"] = "gw-SESSION-SECRET123"
    try:
        client = endpoint(primary, "m", "sk-primary-0001", max_retries=0, session=session,
                          fallbacks=["deepseek-v4-flash"])
        assert text_of(client.streaming_response([USER])) == "ok"
        client.fallbacks[0]._get_session().close()
    finally:
        session.close()
    assert primary.requests[0].headers.get("x-gateway-key") == "gw-SESSION-SECRET123"
    (answered,) = backup.requests
    assert "gw-SESSION-SECRET123" not in json.dumps(dict(answered.headers))
    assert answered.headers.get("authorization") == "Bearer sk-deepseek-own-0004"


def test_per_request_extra_headers_never_reach_a_fallback(primary, backup):
    client = endpoint(primary, "m", "sk-primary-0001", max_retries=0,
                      fallbacks=[endpoint(backup, "backup-model", "sk-backup-0002")])
    config = {"extra_headers": {"cf-aig-authorization": "Bearer gwsecret-for-A", "Authorization": "Bearer gw-A"}}
    assert text_of(client.streaming_response([USER], config)) == "ok"
    assert primary.requests[0].headers.get("cf-aig-authorization") == "Bearer gwsecret-for-A"
    (answered,) = backup.requests
    assert "gwsecret-for-A" not in json.dumps(dict(answered.headers)) and "gw-A" not in json.dumps(dict(answered.headers))
    assert answered.headers.get("authorization") == "Bearer sk-backup-0002"


def test_a_stateful_turn_a_fallback_answered_is_not_chained_by_id_on_the_primary(primary, tmp_path, monkeypatch):
    """Interactions chain stateful turns by previous_interaction_id.  Turn 1 is answered by the fallback (another
    server): its interaction B1 lives there, so turn 2 on the primary sends the whole history (before: only the new
    message with previous_interaction_id 'B1', an id the primary's server does not have); the primary's own answer
    A2 is chained as ever on turn 3.  The trace keeps the history as the client does, so it names every turn's
    route."""
    from longrun_server import LongrunServer, interactions_events

    def said(text):
        return {"role": "user", "content_items": [{"type": "text", "text": text}]}

    def stream(rid, text):
        return [status(200, SSE), send(b"".join(interactions_events(rid, [text])) + b"data: [DONE]\n\n")]

    primary.push(UNAVAILABLE, stream("A2", "two"), stream("A3", "three"))
    with LongrunServer() as other:
        other.add("B1", interactions_events("B1", ["one"]), done=True)
        fallback = AutoLLMClient("gemini-3.8-flash", api_key="g-backup-0002", base_url=other.url,
                                 client_type="gemini-interactions", max_retries=0)
        client = AutoLLMClient("gemini-3.8-pro", api_key="g-primary-0001", base_url=primary.url,
                               client_type="gemini-interactions", max_retries=0, fallbacks=[fallback])
        monkeypatch.setenv("AGENTHUB_CACHE_DIR", str(tmp_path))
        for text, answer in (("first", "one"), ("second", "two"), ("third", "three")):
            assert text_of([client.response_stateful(said(text), {"trace_id": "chat"})]) == answer
    second, third = [request.json() for request in primary.requests[1:]]
    assert "previous_interaction_id" not in second
    assert second["input"] == [{"type": "user_input", "content": [{"type": "text", "text": "first"}]},
                               {"type": "model_output", "content": [{"type": "text", "text": "one"}]},
                               {"type": "user_input", "content": [{"type": "text", "text": "second"}]}]
    assert third["previous_interaction_id"] == "A2"
    assert third["input"] == [{"type": "user_input", "content": [{"type": "text", "text": "third"}]}]
    with open(str(tmp_path / "chat.json"), encoding="utf-8") as handle:
        trace = json.load(handle)
    assert [(route["model"], route["turn"]) for route in trace["routes"]] == [
        ("gemini-3.8-flash", 1), ("gemini-3.8-pro", 3), ("gemini-3.8-pro", 5)]


def test_a_fallbacks_own_total_starts_no_deadline_of_its_own(primary, backup):
    """The call's one deadline is the called client's total (none here): a fallback client's own total=0.5 does not
    start another on its route (before: its answer 1 s later was cut by a TransportError(deadline=True))."""
    backup.default = [sleep(1.0), status(200, SSE), send(chat_stream("late but whole"))]
    client = endpoint(primary, "m", "sk-primary-0001", max_retries=0,
                      fallbacks=[endpoint(backup, "backup-model", "sk-backup-0002", timeout={"total": 0.5})])
    assert text_of(list(client.streaming_response([USER]))) == "late but whole"


def test_a_fallback_named_by_model_on_the_primarys_own_host_keeps_its_key_and_default_headers(monkeypatch, backup):
    """The same origin (scheme, host, port) is the same server: the key and default_headers the caller gave
    for it (an OpenAI-Project that bills the right project) go to a fallback there too."""
    monkeypatch.delenv("DEEPSEEK_API_KEY", raising=False)
    monkeypatch.setenv("DEEPSEEK_BASE_URL", backup.url + "/v1")
    backup.push(UNAVAILABLE)
    client = endpoint(backup, "m", "sk-primary-0001", max_retries=0, fallbacks=["deepseek-v4-flash"],
                      default_headers={"OpenAI-Project": "proj-billed"})
    assert text_of(client.streaming_response([USER])) == "ok"
    first, second = backup.requests
    assert (first.json()["model"], second.json()["model"]) == ("m", "deepseek-v4-flash")
    assert second.headers.get("authorization") == "Bearer sk-primary-0001"
    assert second.headers.get("openai-project") == "proj-billed"


def test_a_fallback_named_by_model_on_another_host_gets_neither_key_nor_default_headers(monkeypatch, primary,
                                                                                        backup):
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-deepseek-own-0004")
    monkeypatch.setenv("DEEPSEEK_BASE_URL", backup.url + "/v1")
    client = endpoint(primary, "m", "sk-primary-0001", max_retries=0, fallbacks=["deepseek-v4-flash"],
                      default_headers={"X-Gateway-Key": "gw-DEFAULT-SECRET"})
    assert text_of(client.streaming_response([USER])) == "ok"
    assert primary.requests[0].headers.get("x-gateway-key") == "gw-DEFAULT-SECRET"
    (answered,) = backup.requests
    assert "gw-DEFAULT-SECRET" not in json.dumps(dict(answered.headers))
    assert answered.headers.get("authorization") == "Bearer sk-deepseek-own-0004"
