"""Failover of a background response (config["background"]): once the primary's response exists upstream and
is left running (its stream broke and resuming it gave up), the turn is not sent again to a fallback, which
would start and bill a second answer beside it; a background response that ended upstream (failed) before any
content still falls over as any failure before the first event does."""

import json

import pytest

from agenthub import AutoLLMClient
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


def test_a_background_response_that_failed_upstream_before_content_still_falls_over():
    """response.failed (server_error) right after response.created: the response ended upstream, nothing runs
    on; the turn goes to the fallback, whose answer is the stream's."""
    created = {"id": "resp_f", "object": "response", "status": "in_progress", "background": True, "output": []}
    failed = dict(created, status="failed", error={"code": "server_error", "message": "The model is overloaded"})
    events = [("event: {}\ndata: {}\n\n".format(kind, json.dumps(dict(body, type=kind, sequence_number=n)))).encode()
              for n, (kind, body) in enumerate([("response.created", {"response": created}),
                                                ("response.failed", {"response": failed})])]
    with LongrunServer() as primary, LongrunServer() as backup:
        primary.add("resp_f", events)
        backup.add("resp_b", responses_events("resp_b", ["x", "y"]))
        client = responses_client(primary, "sk-primary-0001", max_retries=0,
                                  fallbacks=[responses_client(backup, "sk-backup-0002", max_retries=0)])
        stream = client.streaming_response(USER, {"background": True})
        out = list(stream)
        assert [r["method"] for r in primary.requests] == ["POST"]
        assert [r["method"] for r in backup.requests] == ["POST"]
    assert texts_of(out) == ["x", "y"]
    assert stream.route["host"] == backup.url.split("//")[1]
