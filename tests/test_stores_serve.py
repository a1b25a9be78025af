"""``agenthub serve`` rows naming a shared limiter / budget: gunicorn workers (real processes) draw from
one pace kept in an SQLite store; bad rows are ConfigErrors before anything is served."""

import json
import threading

import pytest
import requests

from agenthub.apps.server import make_app
from agenthub.errors import ConfigError
from agenthub.stores import StoreError

from jobs_server import JobServer
from server_support import Gunicorn, gunicorn_available
from store_support import free_port

KEY = "server-key-0123456789"


def _row(base_url, **extra):
    return dict({"id": "paced", "model": "deepseek-v4-flash", "client_type": "openai-chat", "base_url": base_url,
                 "api_key": "sk-upstream-0123456789", "max_retries": 3}, **extra)


@pytest.mark.parametrize("row, words", [
    ({"limiter": 600}, "limiter must be an object of rpm, tpm, store, key"),
    ({"limiter": {"rpm": 600, "burst": 3}}, "limiter must be an object of rpm, tpm, store, key"),
    ({"budget": {"max_usd": 1, "store": "ftp://x"}}, "unknown scheme 'ftp'"),
    ({"budget": {"store": "sqlite:///x.db"}}, "budget needs max_usd"),
    ({"limiter": {"rpm": -1}}, "rpm must be a positive number"),
])
def test_bad_shared_rows_are_config_errors(row, words):
    with pytest.raises(ConfigError) as info:
        make_app({"models": [_row("http://127.0.0.1:9/v1", **row)]})
    assert words in str(info.value)


def test_an_unreachable_store_refuses_the_config():
    pytest.importorskip("redis")
    url = "redis://127.0.0.1:{}/0?timeout=0.5".format(free_port())
    with pytest.raises(StoreError):
        make_app({"models": [_row("http://127.0.0.1:9/v1", budget={"max_usd": 1, "store": url})]})


def test_rows_get_their_limiter_and_budget(tmp_path):
    url = "sqlite:///" + str(tmp_path / "s.db")
    app = make_app({"models": [_row("http://127.0.0.1:9/v1", limiter={"rpm": 600, "store": url, "key": "up"},
                                    budget={"max_usd": 2.5, "store": url, "key": "team"})]})
    client = app.models["paced"].client
    assert (client.limiter.rpm, client.limiter.key, client.limiter.store.url) == (600.0, "up", url)
    assert (client.budget.max_usd, client.budget.key) == (2.5, "team")


@pytest.mark.skipif(not gunicorn_available(), reason="gunicorn is not installed (pip install '.[test]')")
def test_gunicorn_workers_share_one_pace(tmp_path):
    rpm = 600  # 10 a second, enforced upstream as a token bucket of one second's worth
    total = 40
    with JobServer(rpm=rpm) as upstream:
        config = {"models": [_row(upstream.base_url, limiter={"rpm": rpm, "store": "sqlite:///" + str(tmp_path / "s.db"),
                                                              "key": "upstream"})],
                  "api_keys": [KEY]}
        path = tmp_path / "server.json"
        path.write_text(json.dumps(config), encoding="utf-8")
        with Gunicorn(path, threads=8, workers=4) as server:
            statuses = []

            def run(n):
                for i in range(n, total, 8):
                    body = {"model": "paced", "messages": [{"role": "user", "content_items": [
                        {"type": "text", "text": "g{}".format(i)}]}]}
                    answer = requests.post(server.url + "/v1/stream", data=json.dumps(body), timeout=60,
                                           headers={"Authorization": "Bearer " + KEY,
                                                    "Content-Type": "application/json"})
                    statuses.append((answer.status_code, b"data: [DONE]" in answer.content))

            threads = [threading.Thread(target=run, args=(n,)) for n in range(8)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(120)
        ok = sorted(t for t, status in upstream.statuses if status == 200)
        late_429 = [t for t, status in upstream.statuses if status == 429 and t - ok[0] > 1.0]
    assert statuses.count((200, True)) == total
    used = (len(ok) - 1) / (ok[-1] - ok[0]) * 60
    assert late_429 == [] and used >= 0.85 * rpm, (used, len(late_429))
