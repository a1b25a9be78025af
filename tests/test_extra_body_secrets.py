"""A credential the caller puts in ``extra_body`` under a name of its own (``{"api_key": ...}``, ``{"token": ...}``,
``{"x_secret": ...}``, a gateway's ``{"auth": {"password": ...}}``): sent as written, and never recorded as sent:
``***`` in traces, scrubbed from cassettes (which still replay) and from errors, absent from the journal.  One rule
decides which names hold a credential: ``agenthub._redact.is_secret_name``."""

import json
import os

import pytest

from agenthub import AgentHubError, AutoLLMClient
from agenthub._redact import is_secret_name, named_secrets, redact_named
from agenthub.testing import record_session, replay_session
from agenthub.tracer import load_trace
from sse_server import Answer, SSEServer
from test_replay import KEY, _recording, _Upstream

API_KEY = "gw-api-key-0123456789abcdef"
TOKEN = "gw-token-fedcba9876543210"
X_SECRET = "x-secret-value-00112233"
PASSWORD = "hunter2-but-longer-0042"
EXTRA = {"api_key": API_KEY, "token": TOKEN, "x_secret": X_SECRET, "auth": {"user": "me", "password": PASSWORD},
         "prompt_cache_key": "tenant-7-cache-route", "max_tokens": 64, "metadata": {"team": "search-quality"}}
SECRETS = (API_KEY, TOKEN, X_SECRET, PASSWORD)
USER = [{"role": "user", "content_items": [{"type": "text", "text": "What's the weather in Paris?"}]}]


@pytest.mark.parametrize("name", ["api_key", "apiKey", "APIKey", "x-api-key", "key", "keys", "token", "access_token",
                                  "idToken", "x_secret", "client_secret", "password", "passwd", "auth",
                                  "Authorization", "credentials", "cookie", "secret_key", "private_key",
                                  "session_token", "APIKEY"])
def test_names_that_hold_a_credential(name):
    assert is_secret_name(name) is True


@pytest.mark.parametrize("name", ["max_tokens", "maxTokens", "budget_tokens", "prompt_cache_key", "idempotency_key",
                                  "cache_key", "partition_key", "key_id", "author", "secretary", "signature",
                                  "thoughtSignature", "tokenizer", "service_tier", "metadata", "", 7, None])
def test_names_that_do_not(name):
    assert is_secret_name(name) is False


def test_the_values_under_such_names_at_any_depth_strings_only():
    assert named_secrets(EXTRA) == sorted(SECRETS, key=lambda s: (-len(s), s))  # ("me": shorter than a secret)
    assert named_secrets({"servers": [{"name": "a", "headers": {"X-Api-Key": API_KEY}}], "token": 12345678}) == [
        API_KEY]
    assert redact_named(EXTRA) == {"api_key": "***", "token": "***", "x_secret": "***",
                                   "auth": {"user": "***", "password": "***"},
                                   "prompt_cache_key": "tenant-7-cache-route", "max_tokens": 64,
                                   "metadata": {"team": "search-quality"}}


def test_a_recording_holds_none_and_replays_with_other_values(tmp_path):
    server = _Upstream([(200, "text/event-stream", _recording("weather_answer.sse"))])
    folder = str(tmp_path / "gateway")
    try:
        live = AutoLLMClient("demo-model", api_key=KEY, base_url=server.base_url, client_type="openai-chat",
                             session=record_session(folder))
        recorded = list(live.streaming_response(USER, {"extra_body": EXTRA}))
        sent = server.seen[0][2]
        assert {name: sent[name] for name in EXTRA} == EXTRA  # sent as written
    finally:
        server.close()
    data = b"".join(path.read_bytes() for path in sorted((tmp_path / "gateway").iterdir()))
    assert [secret for secret in SECRETS if secret.encode() in data] == []
    with open(os.path.join(folder, "001.json"), encoding="utf-8") as handle:
        body = json.load(handle)["request"]["body"]
    assert {name: body[name] for name in EXTRA} == {
        "api_key": "***", "token": "***", "x_secret": "***", "auth": {"user": "me", "password": "***"},
        "prompt_cache_key": "tenant-7-cache-route", "max_tokens": 64, "metadata": {"team": "search-quality"}}
    other = dict(EXTRA, api_key="another-api-key-for-the-replay", token="another-token-for-the-replay")
    for extra in (EXTRA, other):
        session = replay_session(folder)
        replay = AutoLLMClient("demo-model", api_key="replay-unused", base_url=server.base_url,
                               client_type="openai-chat", session=session)
        assert [e["content_items"] for e in replay.streaming_response(USER, {"extra_body": extra})] == [
            e["content_items"] for e in recorded]
        session.cassette.assert_all_played()


def test_an_error_echoing_the_body_shows_none():
    """A gateway's 400 that quotes the request it refused (as some do): the error's text and fields hold ***."""
    echoed = {"error": {"message": "unknown fields in " + json.dumps(EXTRA), "type": "invalid_request_error"}}
    server = _Upstream([(400, "application/json", json.dumps(echoed).encode())])
    try:
        client = AutoLLMClient("demo-model", api_key=KEY, base_url=server.base_url, client_type="openai-chat",
                               max_retries=0)
        with pytest.raises(AgentHubError) as info:
            list(client.streaming_response(USER, {"extra_body": EXTRA}))
    finally:
        server.close()
    shown = str(info.value) + repr(info.value) + repr(vars(info.value))
    assert "unknown fields in" in shown
    assert [secret for secret in SECRETS if secret in shown] == []


def test_a_trace_writes_them_as_stars(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTHUB_CACHE_DIR", str(tmp_path))
    server = _Upstream([(200, "text/event-stream", _recording("weather_answer.sse"))])
    try:
        client = AutoLLMClient("demo-model", api_key=KEY, base_url=server.base_url, client_type="openai-chat")
        list(client.streaming_response(USER, {"extra_body": EXTRA, "trace_id": "gw/run1"}))
    finally:
        server.close()
    data = (tmp_path / "gw" / "run1.json").read_bytes() + (tmp_path / "gw" / "run1.txt").read_bytes()
    assert [secret for secret in SECRETS if secret.encode() in data] == []
    assert load_trace(str(tmp_path / "gw" / "run1.json"))["config"]["extra_body"] == redact_named(EXTRA)


def test_the_journal_holds_none(tmp_path):
    from agent_streams import chat_text

    path = tmp_path / "runs.db"
    with SSEServer() as server:
        server.answers.append(Answer([chat_text("Sunny.")]))
        client = AutoLLMClient("gpt-4o-mini", api_key=KEY, base_url=server.url + "/v1", client_type="openai-chat",
                               max_retries=0)
        client.run(USER, {"extra_body": EXTRA}, tools=[], journal="sqlite:///" + str(path), run_id="gw-1").result()
        assert server.requests[0]["body"]["api_key"] == API_KEY
    data = b"".join(p.read_bytes() for p in tmp_path.iterdir())
    assert [secret for secret in SECRETS if secret.encode() in data] == []


@pytest.mark.parametrize("extra, shown", [
    ({"api_key": b"sk-secret-bytes-0123456789"}, "config['extra_body']['api_key'] is a bytes"),
    ({"auth": {"password": bytearray(b"sk-secret-bytes-0123456789")}},
     "config['extra_body']['auth']['password'] is a bytearray"),
    ({"secrets": [{"sk-secret-in-a-set-0123456789"}]}, "config['extra_body']['secrets'][0] is a set"),
])
def test_a_value_json_cannot_carry_under_such_a_name_is_refused_without_showing_it(extra, shown):
    """The ConfigError showed the value's repr (a key passed as bytes, in the message a log keeps)."""
    from agenthub.errors import ConfigError
    from agenthub.validate import check_config

    with pytest.raises(ConfigError) as info:
        check_config({"extra_body": extra})
    assert str(info.value) == shown + ": only dicts, lists, strings, numbers, booleans and None can be sent as JSON"


def test_elsewhere_the_value_is_still_shown():
    from agenthub.errors import ConfigError
    from agenthub.validate import check_config

    with pytest.raises(ConfigError) as info:
        check_config({"extra_body": {"metadata": {"team": b"search"}}})
    assert str(info.value) == ("config['extra_body']['metadata']['team'] is a bytes (b'search'): only dicts, lists, "
                               "strings, numbers, booleans and None can be sent as JSON")


def test_a_batch_row_whose_error_echoes_one_holds_none_as_the_live_row(tmp_path, monkeypatch):
    """A provider's per-row error that quotes the request (the batch results file): the live runner's row was
    scrubbed (the client's error), the batched row kept the value."""
    from agenthub.jobs import batch as B
    from agenthub.jobs import run
    from agenthub.jobs.jobfile import read_output
    from batch_fakes import BatchFake, default_answer, point_at

    def answer(provider, api, body):
        if "api_key" in body:
            return 400, {"error": {"message": "unknown field api_key: " + body["api_key"],
                                   "type": "invalid_request_error", "param": None, "code": None}}
        return default_answer(provider, api, body)

    rows = [{"id": "r1", "model": "gpt-4.1-mini", "client_type": "openai-chat",
             "messages": [{"role": "user", "content_items": [{"type": "text", "text": "hi"}]}],
             "config": {"extra_body": {"api_key": API_KEY}}}]
    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    with BatchFake(answer=answer, polls=1) as server:
        point_at(monkeypatch, server)
        run(str(path), str(tmp_path / "live.jsonl"), workers=1, progress=False, max_retries=0)
        job = B.submit(str(path), backend="openai")
        assert job.wait(interval=0.01, timeout=10).done
        job.fetch(str(tmp_path / "batch.jsonl"))
    for name in ("live.jsonl", "batch.jsonl"):
        [row] = read_output(str(tmp_path / name))
        assert row["error"]["message"].startswith("unknown field api_key: ***"), (name, row["error"])
        assert API_KEY not in (tmp_path / name).read_text()
