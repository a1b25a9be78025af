"""Failover of a background response (config["background"]): once the primary's response exists upstream and
is left running (its stream broke and resuming it gave up), the turn is not sent again to a fallback, which
would start and bill a second answer beside it; a background response that ended upstream (failed) before any
content still falls over as any failure before the first event does."""

import json

import pytest

from agenthub import AutoLLMClient, Budget
from agenthub.attempts import AttemptHook
from agenthub.errors import ServerError
from faultserver import fast_backoff  # noqa: F401  (autouse: retries back off for milliseconds)
from longrun_server import LongrunServer, boundaries, interactions_events, responses_events

USER = [{"role": "user", "content_items": [{"type": "text", "text": "go"}]}]

pytestmark = pytest.mark.usefixtures("fresh_breakers")  # (conftest: every circuit closed before and after)


def texts_of(events):
    return [i["text"] for e in events for i in e["content_items"] if i["type"] == "text" and i["text"]]


def responses_client(server, key, **kwargs):
    return AutoLLMClient("gpt-5.5", api_key=key, base_url=server.url + "/v1", client_type="openai-responses",
                         **kwargs)


def interactions_client(server, key, **kwargs):
    return AutoLLMClient("gemini-3.8-flash", api_key=key, base_url=server.url, client_type="gemini-interactions",
                         **kwargs)


def test_a_background_response_left_running_is_not_answered_again_by_the_fallback(caplog):
    """The primary's stream is cut after response.in_progress (its id known, nothing yielded) and every GET
    that resumes it fails: the ServerError is raised naming the running response; the fallback gets nothing
    (before: the fallback answered with a second paid response while resp_p kept running upstream)."""
    events = responses_events("resp_p", ["a", "b"])
    with LongrunServer() as primary, LongrunServer() as backup:
        primary.add("resp_p", events, cuts=[boundaries(events)[1]])
        primary.get_failures.extend([500, 500])
        backup.add("resp_b", responses_events("resp_b", ["x"]))
        client = responses_client(primary, "sk-primary-0001", max_retries=1,
                                  fallbacks=[responses_client(backup, "sk-backup-0002", max_retries=0)])
        stream = client.streaming_response(USER, {"background": True})
        with pytest.raises(ServerError) as caught:
            list(stream)
        assert [(r["method"], r["path"]) for r in primary.requests] == [
            ("POST", "/v1/responses"), ("GET", "/v1/responses/resp_p"), ("GET", "/v1/responses/resp_p")]
        assert backup.requests == []
        assert primary.created["resp_p"].cancelled is False
    assert caught.value.status == 500
    assert caught.value.url.endswith("/v1/responses/resp_p?stream=true&starting_after=1")
    assert "background response resp_p is left running (not cancelled)" in caplog.text
    assert "fallback" not in caplog.text


def test_an_interaction_left_running_is_not_answered_again_by_the_fallback():
    events = interactions_events("v1_p", ["a", "b"])
    with LongrunServer() as primary, LongrunServer() as backup:
        primary.add("v1_p", events, cuts=[boundaries(events)[0]], done=True)
        primary.get_failures.extend([503])
        backup.add("v1_b", interactions_events("v1_b", ["x"]), done=True)
        client = interactions_client(primary, "g-primary-0001", max_retries=0,
                                     fallbacks=[interactions_client(backup, "g-backup-0002", max_retries=0)])
        with pytest.raises(ServerError) as caught:
            list(client.streaming_response(USER, {"background": True}))
        assert [r["method"] for r in primary.requests] == ["POST", "GET"]
        assert backup.requests == []
    assert caught.value.status == 503


def failed_upstream(response_id):
    """A background response's stream: response.created, then response.failed (server_error), no content."""
    created = {"id": response_id, "object": "response", "status": "in_progress", "background": True, "output": []}
    failed = dict(created, status="failed", error={"code": "server_error", "message": "The model is overloaded"})
    return [("event: {}\ndata: {}\n\n".format(kind, json.dumps(dict(body, type=kind, sequence_number=n)))).encode()
            for n, (kind, body) in enumerate([("response.created", {"response": created}),
                                              ("response.failed", {"response": failed})])]


def test_a_background_response_that_failed_upstream_before_content_still_falls_over():
    """response.failed (server_error) right after response.created: the response ended upstream, nothing runs
    on; the turn goes to the fallback, whose answer is the stream's."""
    with LongrunServer() as primary, LongrunServer() as backup:
        primary.add("resp_f", failed_upstream("resp_f"))
        backup.add("resp_b", responses_events("resp_b", ["x", "y"]))
        client = responses_client(primary, "sk-primary-0001", max_retries=0,
                                  fallbacks=[responses_client(backup, "sk-backup-0002", max_retries=0)])
        stream = client.streaming_response(USER, {"background": True})
        out = list(stream)
        assert [r["method"] for r in primary.requests] == ["POST"]
        assert [r["method"] for r in backup.requests] == ["POST"]
    assert texts_of(out) == ["x", "y"]
    assert stream.route["host"] == backup.url.split("//")[1]


class Ends(AttemptHook):
    def __init__(self):
        self.ends = []

    def on_call_end(self, call):
        self.ends.append((call.response_id, call.route["host"], call.cut_usd))


# gpt-5.5: "go" is 5 estimated input tokens at $5/M + 100 output tokens at $30/M held; the fake's usage: 10 input
# tokens, 10 output tokens
GPT_HOLD = (5 * 5 + 100 * 30) / 1e6
GPT_ACTUAL = (10 * 5 + 10 * 30) / 1e6


def test_after_a_failover_the_call_names_and_counts_the_answering_routes_response():
    """The primary's background response fails upstream before content (its id resp_f known); the fallback's
    first POST is cut before its id, its retry answers resp_d.  The call's response_id is resp_d (before: resp_f,
    the failed response of another route, in on_call_end and telemetry), and the fallback's cut POST is counted
    at its hold (before: taken for a resume of resp_f, uncounted), the primary's declared failure not at all."""
    budget = Budget(1)
    ends = Ends()
    with LongrunServer() as primary, LongrunServer() as backup:
        primary.add("resp_f", failed_upstream("resp_f"))
        backup.add("resp_c", responses_events("resp_c", ["x"] * 10), cuts=[10])  # inside response.created
        backup.add("resp_d", responses_events("resp_d", ["x"] * 10))
        client = responses_client(primary, "sk-primary-0001", max_retries=0, budget=budget, hooks=[ends],
                                  fallbacks=[responses_client(backup, "sk-backup-0002", max_retries=1)])
        stream = client.streaming_response(USER, {"background": True, "max_tokens": 100})
        assert texts_of(list(stream)) == ["x"] * 10
        assert [r["method"] for r in primary.requests] == ["POST"]
        assert [r["method"] for r in backup.requests] == ["POST", "POST"]
        host = backup.url.split("//")[1]
    assert ends.ends == [("resp_d", host, pytest.approx(GPT_HOLD, rel=1e-12))]
    assert budget.spent_usd == pytest.approx(GPT_HOLD + GPT_ACTUAL, rel=1e-12)
    assert budget.reserved_usd == 0.0


def test_a_background_response_that_failed_upstream_gives_its_hold_back():
    """An error the provider declares on the stream is taken as unbilled, a background response's too (before:
    its whole hold was counted, as if it ran on)."""
    budget = Budget(1)
    with LongrunServer() as server:
        server.add("resp_f", failed_upstream("resp_f"))
        client = responses_client(server, "sk-primary-0001", max_retries=0, budget=budget)
        with pytest.raises(ServerError):
            list(client.streaming_response(USER, {"background": True, "max_tokens": 100}))
    assert (budget.spent_usd, budget.reserved_usd) == (0.0, 0.0)
