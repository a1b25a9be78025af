"""agenthub serve under gunicorn (gthread workers, a subprocess): the same app, a production server."""

import json
import os
import threading
import time

import pytest
import requests

from agenthub.errors import AuthenticationError, ConfigError, RateLimitError
from conftest import ROOT
from server_support import Gunicorn, Route, Upstream, gunicorn_available
from test_server import (KEY, KEEPALIVE, MESSAGES, UPSTREAM_KEY, _head, _recording, assert_same_error, direct,
                         model_rows, outcome, post, same_ids, via)

pytestmark = pytest.mark.skipif(not gunicorn_available(), reason="gunicorn is not installed (pip install '.[test]')")


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    with Upstream() as up:
        config = {"models": model_rows(up.url) + [
            {"id": "held", "model": "m", "client_type": "openai-chat", "base_url": up.url + "/held/v1",
             "max_retries": 0}],
            "api_keys": [KEY], "keepalive_seconds": 0.3, "max_body_bytes": 100000, "max_concurrent_streams": 8}
        path = tmp_path_factory.mktemp("gunicorn") / "server.json"
        path.write_text(json.dumps(config), encoding="utf-8")
        with Gunicorn(path, threads=12) as server:
            yield up, server


def _fixture(module, name):
    with open(os.path.join(ROOT, "tests", "fixtures", module, name), "rb") as handle:
        return handle.read()


@pytest.mark.parametrize("module,data", [
    ("openai_chat", _recording("openai_chat", "weather_tool_call.sse")),
    ("openai_responses", _recording("openai_responses", "weather_tool_call.sse")),
    ("anthropic", _fixture("anthropic", "thinking_text_tool_use.sse")),
    ("gemini", _fixture("gemini", "image_output.sse")),
    ("anthropic", _fixture("anthropic", "rate_limit_mid_stream.sse")),
], ids=["chat-tool-call", "responses-tool-call", "anthropic-signatures", "gemini-bytes", "anthropic-mid-stream-error"])
def test_round_trip_through_gunicorn(stack, module, data):
    up, server = stack
    up.routes[module] = Route(data, parts=3)
    want, want_error = outcome(direct(up.url, module))
    got, got_error = outcome(via(server.url, module))
    assert same_ids(got) == same_ids(want) and want
    if want_error is None:
        assert got_error is None
    else:
        assert_same_error(got_error, want_error)


def test_keep_alives_and_chunked_streaming(stack):
    up, server = stack
    up.routes["openai_chat"] = Route(_recording("openai_chat", "weather_answer.sse"), parts=2, pause=0.7)
    answer = post(server.url, {"model": "openai_chat", "messages": MESSAGES}, stream=True)
    assert answer.status_code == 200 and answer.headers["Transfer-Encoding"] == "chunked"
    raw = b"".join(answer.iter_content(None))
    assert KEEPALIVE in raw and raw.endswith(b"data: [DONE]\n\n")


def test_several_streams_at_once(stack):
    up, server = stack
    up.routes["anthropic"] = Route(_recording("anthropic", "weather_tool_call.sse"), parts=4, pause=0.1)
    want, _ = outcome(direct(up.url, "anthropic"))
    results = [None] * 6
    client = via(server.url, "anthropic")

    def run(n):
        results[n] = outcome(client)

    threads = [threading.Thread(target=run, args=(n,)) for n in range(6)]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(20)
    elapsed = time.monotonic() - started
    assert all(r is not None and r[1] is None and same_ids(r[0]) == same_ids(want) for r in results)
    assert elapsed < 6 * 0.3  # six streams of ~0.3 s each: they ran side by side


def test_a_client_disconnect_frees_the_upstream(stack):
    up, server = stack
    up.routes["held"] = Route(_head(), hold=True)
    closed = up.closed
    answer = post(server.url, {"model": "held", "messages": MESSAGES}, stream=True)
    assert next(answer.iter_content(None)).startswith(b"data: {")
    answer.close()
    assert up.wait_closed(closed + 1), "gunicorn: the upstream stayed open after the client left"
    stream = via(server.url, "held").streaming_response(MESSAGES)
    assert next(stream)["event_type"] == "start"
    stream.close()
    assert up.wait_closed(closed + 2), "gunicorn: the upstream stayed open after the stream was closed"


def test_errors_through_gunicorn(stack):
    up, server = stack
    assert requests.get(server.url + "/v1/models", timeout=5).status_code == 401
    _, error = outcome(via(server.url, "openai_chat", api_key="not-the-key"))
    assert isinstance(error, AuthenticationError) and error.status == 401
    _, error = outcome(via(server.url, "nope"))
    assert type(error) is ConfigError and "unknown model" in str(error)
    big = [{"role": "user", "content_items": [{"type": "text", "text": "x" * 150000}]}]
    assert post(server.url, {"model": "openai_chat", "messages": big}).status_code == 413
    refused = requests.get(server.url + "/v1/models", headers={"Host": "evil.example", "Authorization": "Bearer " + KEY},
                           timeout=5)
    assert refused.status_code == 400 and refused.json()["error"]["type"] == "ConfigError"
    up.routes["openai_chat"] = Route(json.dumps({"error": {"message": "slow down " + UPSTREAM_KEY,
                                                           "type": "rate_limit_exceeded"}}).encode(), status=429,
                                     headers={"Content-Type": "application/json", "retry-after": "7"})
    answer = post(server.url, {"model": "openai_chat", "messages": MESSAGES})
    assert answer.status_code == 429 and answer.headers["Retry-After"] == "7"
    assert UPSTREAM_KEY not in answer.text
    _, want = outcome(direct(up.url, "openai_chat"))
    _, got = outcome(via(server.url, "openai_chat"))
    assert isinstance(got, RateLimitError) and got.retry_after == 7.0
    assert_same_error(got, want)
    page = requests.get(server.url + "/", timeout=5)
    assert page.status_code == 200 and page.headers["Content-Security-Policy"]
