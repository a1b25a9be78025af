"""agenthub serve's answers when a row's budget or store refuses (issue 37 V01, V03): a BudgetExceededError is
402 with its fields, a StoreError 503 typed StoreError, retryable, with a Retry-After; and the built-in
server's listen backlog holds a burst of clients."""

import json
import socket

import pytest
import requests

from agenthub import AutoLLMClient, BudgetExceededError
from agenthub.apps.server import make_app
from agenthub.stores import StoreError

from jobs_server import JobServer
from server_support import Builtin
from store_support import REDIS_SERVER, RedisServer

KEY = "server-key-0123456789"
BODY = {"model": "row", "messages": [{"role": "user", "content_items": [{"type": "text", "text": "hi"}]}],
        "config": {"max_tokens": 64}}


def _app(base_url, **row):
    return make_app({"models": [dict({"id": "row", "model": "deepseek-v4-flash", "client_type": "openai-chat",
                                      "base_url": base_url, "api_key": "sk-upstream-0123456789", "max_retries": 0},
                                     **row)], "api_keys": [KEY]})


def _post(url, body=BODY):
    return requests.post(url + "/v1/stream", data=json.dumps(body), timeout=30,
                         headers={"Authorization": "Bearer " + KEY, "Content-Type": "application/json"})


def test_a_budget_refusal_is_a_402_with_its_fields():
    with JobServer() as upstream, Builtin(_app(upstream.base_url, budget={"max_usd": 0.0000001})) as server:
        answer = _post(server.url)
        assert answer.status_code == 402
        error = answer.json()["error"]
        assert error["type"] == "BudgetExceededError" and error["retryable"] is False
        assert error["limit_usd"] == 0.0000001 and error["needed_usd"] > error["limit_usd"]
        assert "spent_usd" in error and sum(upstream.counts.values()) == 0
        client = AutoLLMClient("row", client_type="agenthub", base_url=server.url, api_key=KEY, max_retries=0)
        with pytest.raises(BudgetExceededError):
            client.response(BODY["messages"], {"max_tokens": 64})


@pytest.mark.skipif(REDIS_SERVER is None, reason="redis-server is not installed")
def test_a_store_that_went_away_is_a_503_store_error_with_retry_after(caplog):
    """The caller learns what failed, not where: the store's address (a Redis host and port, a SQLite file's path)
    is the server's business, in its log line, as an upstream's address is (before: in the caller's message)."""
    pytest.importorskip("redis")
    with RedisServer() as redis_server, JobServer() as upstream:
        url = redis_server.url + "?timeout=1"
        with Builtin(_app(upstream.base_url, budget={"max_usd": 1, "store": url, "key": "serve"})) as server:
            assert _post(server.url).status_code == 200
            redis_server.stop()
            with caplog.at_level("WARNING", logger="agenthub.server"):
                answer = _post(server.url)
            assert answer.status_code == 503 and answer.headers["Retry-After"] == "5"
            error = answer.json()["error"]
            assert error == {"type": "StoreError", "message": "agenthub serve: the model row's shared store (its "
                             "limiter or budget) could not answer; nothing was sent upstream", "retryable": True}
            logged = [r.getMessage() for r in caplog.records if r.name == "agenthub.server"]
            assert len(logged) == 1 and "unreachable" in logged[0] and redis_server.url.split("//")[1] in logged[0]
            client = AutoLLMClient("row", client_type="agenthub", base_url=server.url, api_key=KEY, max_retries=0)
            with pytest.raises(StoreError) as info:
                client.response(BODY["messages"], {"max_tokens": 64})
            assert info.value.retryable is True
        assert sum(upstream.counts.values()) == 1


def test_the_listen_backlog_holds_a_burst_of_connections():
    from agenthub.server import serve

    app = make_app({"models": [{"id": "row", "model": "deepseek-v4-flash", "client_type": "openai-chat",
                                "base_url": "http://127.0.0.1:9/v1", "api_key": "sk-upstream-0123456789"}],
                    "max_concurrent_streams": 200})
    server, _ = serve(app, "127.0.0.1", 0)
    sockets = []
    try:
        assert server.request_queue_size >= 200
        host, port = server.server_address[:2]
        # nothing accepts yet (no serve_forever): the kernel queues the connections up to the backlog; with
        # socketserver's default of 5 the sixth or so waited (dropped SYNs: reset under a real burst)
        for _ in range(100):
            sockets.append(socket.create_connection((host, port), timeout=3))
    finally:
        for sock in sockets:
            sock.close()
        server.server_close()
