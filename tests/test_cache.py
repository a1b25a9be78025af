"""agenthub.ResponseCache: a hook of the attempt loop that stores complete streams and replays them
(against a local server that counts what it was sent)."""

import json
import os
import sqlite3
import time
import zlib
from unittest.mock import ANY

import pytest
import requests

from agenthub import AutoLLMClient, Budget, BudgetExceededError, ConfigError, RateLimiter, ResponseCache, check_stream
from agenthub.stores import MemoryStore

from jobs_server import JobServer

KEY = "sk-cache-test-0123456789"


def _user(text):
    return [{"role": "user", "content_items": [{"type": "text", "text": text}]}]


def _client(server, cache, **kwargs):
    kwargs.setdefault("api_key", KEY)
    return AutoLLMClient("deepseek-v4-flash", client_type="openai-chat", base_url=server.base_url, cache=cache,
                         **kwargs)


def _without_times(events):
    return [{k: v for k, v in e.items() if k != "created_at"} for e in events]


def _fake_redis():
    fakeredis = pytest.importorskip("fakeredis")
    pytest.importorskip("lupa")
    from agenthub.stores.redis import RedisStore

    return RedisStore("redis://fake:6379/0", client=fakeredis.FakeRedis())


@pytest.fixture(params=["directory", "sqlite", "redis"])
def cache(request, tmp_path):
    if request.param == "directory":
        made = ResponseCache(str(tmp_path / "answers"), ttl=3600)
    elif request.param == "sqlite":
        made = ResponseCache("sqlite:///" + str(tmp_path / "cache.db"))
    else:
        made = ResponseCache(_fake_redis())
    yield made
    made.close()


def test_a_hit_replays_the_stream_and_sends_nothing(cache):
    # the test's own session, closed at the end: with fakeredis, lupa's Lua runtime (not seen by the collector)
    # keeps a traceback that reaches this client, whose pooled connection then kept the server's thread alive
    with JobServer() as server, requests.Session() as session:
        client = _client(server, cache, session=session)
        first = list(client.streaming_response(_user("cached"), {"max_tokens": 8}))
        route = {"model": "deepseek-v4-flash", "client_type": "openai-chat", "host": client.last_route["host"]}
        assert client.last_route == route and client.last_route["host"].startswith("127.0.0.1")
        time.sleep(0.01)
        stream = client.streaming_response(_user("cached"), {"max_tokens": 8})
        again = list(stream)
        assert dict(server.counts) == {"cached": 1}  # the second call was never sent
    check_stream(again)
    assert _without_times(again) == _without_times(first)  # the same events, usage and fidelity included
    assert again[-1]["usage_metadata"] == first[-1]["usage_metadata"] and again[-1]["usage_metadata"]
    assert again[0]["created_at"] > first[0]["created_at"]  # stamped when replayed
    assert client.last_route == dict(route, cache="hit")
    assert (cache.hits, cache.misses, cache.stored) == (1, 1, 1)


def test_the_key_leaves_out_the_api_key_and_keeps_the_host_and_the_body(tmp_path):
    cache = ResponseCache(str(tmp_path / "answers"))
    with JobServer() as one, JobServer() as other:
        _client(one, cache, api_key="sk-first-key-000000000").response(_user("same"), {"max_tokens": 8})
        _client(one, cache, api_key="sk-second-key-11111111").response(_user("same"), {"max_tokens": 8})
        assert one.counts["same"] == 1  # two API keys, one entry
        _client(other, cache).response(_user("same"), {"max_tokens": 8})
        assert other.counts["same"] == 1  # another host (port): another entry
        _client(one, cache).response(_user("same"), {"max_tokens": 9})
        _client(one, cache).response(_user("same"), {"max_tokens": 8, "tools": [
            {"name": "f", "description": "d", "parameters": {"type": "object", "properties": {}}}]})
        assert one.counts["same"] == 3  # a config key or a tool changes the body: misses
    cache.close()


def test_a_hit_is_not_charged_and_is_served_when_the_budget_could_not_afford_a_live_call(tmp_path):
    cache = ResponseCache(str(tmp_path / "answers"))
    with JobServer() as server:
        _client(server, cache).response(_user("paid once"), {"max_tokens": 8})
        budget = Budget(max_usd=1e-9)  # affords no live call
        limiter = RateLimiter(rpm=1)  # one a minute: a second live call would wait
        client = _client(server, cache, budget=budget, limiter=limiter)
        answer = client.response(_user("paid once"), {"max_tokens": 8})
        assert answer["content_items"] == [{"type": "text", "text": "echo: paid once"}]
        assert (budget.spent_usd, budget.reserved_usd, budget.requests, limiter.requests) == (0.0, 0.0, 0, 0)
        with pytest.raises(BudgetExceededError):
            client.response(_user("not cached"), {"max_tokens": 8})
        assert dict(server.counts) == {"paid once": 1}
    cache.close()


def test_only_a_complete_stream_is_stored(tmp_path):
    cache = ResponseCache(str(tmp_path / "answers"))
    with JobServer() as server:
        client = _client(server, cache)
        stream = client.streaming_response(_user("closed early"), {"max_tokens": 8})
        next(iter(stream))
        stream.close()
        client.response(_user("closed early"), {"max_tokens": 8})  # not stored: sent again
        assert server.counts["closed early"] == 2 and cache.stored == 1
        server.broken.add("broken")  # a 503 every time: nothing to store
        with pytest.raises(Exception):
            _client(server, cache, max_retries=0).response(_user("broken"), {"max_tokens": 8})
        assert cache.stored == 1
    cache.close()


def test_a_corrupt_entry_is_a_miss_and_is_removed(tmp_path):
    folder = tmp_path / "answers"
    cache = ResponseCache(str(folder))
    with JobServer() as server:
        client = _client(server, cache)
        client.response(_user("spoiled"), {"max_tokens": 8})
        conn = sqlite3.connect(str(folder / "agenthub-cache.sqlite3"))
        with conn:  # (commits; the connection is closed below)
            conn.execute("UPDATE agenthub_cache SET value = ?", (b"agenthub-cache/1\nnot zlib at all",))
        conn.close()
        assert client.response(_user("spoiled"), {"max_tokens": 8})["content_items"][0]["text"] == "echo: spoiled"
        assert server.counts["spoiled"] == 2  # a miss, sent again, and stored afresh
        client.response(_user("spoiled"), {"max_tokens": 8})
        assert server.counts["spoiled"] == 2 and cache.hits == 1
    cache.close()


def _entry(doc):
    return b"agenthub-cache/1\n" + zlib.compress(json.dumps(doc).encode())


@pytest.mark.parametrize("raw", [
    b"", b"garbage", b"agenthub-cache/9\nx", b"agenthub-cache/1\n" + b"x" * 40,
    _entry({"key": "another request's key", "events": []}), _entry([1, 2]),
    _entry({"key": None, "events": [{"event_type": "start"}]}),  # (the test puts the right key in)
    b"agenthub-cache/1\n" + zlib.compress(b'{"key": "k", "events": ' + b"[" * 100000 + b"]" * 100000 + b"}"),
], ids=["empty", "garbage", "another-version", "not-zlib", "another-key", "not-an-object", "no-stop",
        "nested-past-the-recursion-limit"])
def test_entries_that_are_not_whole_are_misses(raw):
    store = MemoryStore()
    cache = ResponseCache(store)
    with JobServer() as server:
        client = AutoLLMClient("deepseek-v4-flash", client_type="openai-chat", base_url=server.base_url,
                               api_key=KEY, hooks=[cache])  # a cache as a plain hook: keyed by host
        client.response(_user("x"), {"max_tokens": 8})
        (key,) = list(store._cache)
        if b"null" in raw:
            raw = _entry({"key": key, "events": [{"event_type": "start"}]})
        store.cache_put(key, raw, None, 1 << 20)
        client.response(_user("x"), {"max_tokens": 8})
        assert server.counts["x"] == 2


def test_bypass_neither_reads_nor_writes(tmp_path):
    cache = ResponseCache(str(tmp_path / "answers"))
    with JobServer() as server:
        client = _client(server, cache)
        client.response(_user("fresh"), {"max_tokens": 8})
        with cache.bypass():
            client.response(_user("fresh"), {"max_tokens": 8})
            client.response(_user("unseen"), {"max_tokens": 8})
        assert client.last_route.get("cache") is None
        client.response(_user("fresh"), {"max_tokens": 8})
        client.response(_user("unseen"), {"max_tokens": 8})
        assert dict(server.counts) == {"fresh": 2, "unseen": 2}
    cache.close()


def test_entries_expire_after_the_ttl(tmp_path):
    cache = ResponseCache(str(tmp_path / "answers"), ttl=0.2)
    with JobServer() as server:
        client = _client(server, cache)
        client.response(_user("brief"), {"max_tokens": 8})
        client.response(_user("brief"), {"max_tokens": 8})
        assert server.counts["brief"] == 1
        time.sleep(0.3)
        client.response(_user("brief"), {"max_tokens": 8})
        assert server.counts["brief"] == 2
    cache.close()


def test_a_stateful_turn_answered_from_the_cache_grows_the_history(tmp_path):
    cache = ResponseCache(str(tmp_path / "answers"))
    with JobServer() as server:
        _client(server, cache).response(_user("remember"), {"max_tokens": 8})
        client = _client(server, cache)
        client.response_stateful(_user("remember")[0], {"max_tokens": 8})
        assert server.counts["remember"] == 1
        assert [m["role"] for m in client.get_history()] == ["user", "assistant"]
        assert client.get_history()[1]["content_items"] == [{"type": "text", "text": "echo: remember"}]
    cache.close()


def test_entries_hold_no_credential_and_the_trace_says_hit(tmp_path):
    folder = tmp_path / "answers"
    cache = ResponseCache(str(folder))
    with JobServer() as server:
        client = _client(server, cache)
        client.response(_user("traced"), {"max_tokens": 8})
        client.response(_user("traced"), {"max_tokens": 8, "trace_id": "cache-hit-trace"})
    raw = b""
    for name in os.listdir(str(folder)):
        with open(str(folder / name), "rb") as handle:
            raw += handle.read()
    assert KEY.encode() not in raw and b"Authorization" not in raw
    from agenthub.tracer import trace_paths

    with open(trace_paths("cache-hit-trace")["json"], encoding="utf-8") as handle:
        trace = json.load(handle)
    assert [dict(r, turn=None, host=None) for r in trace["routes"]] == [
        {"model": "deepseek-v4-flash", "client_type": "openai-chat", "host": None, "cache": "hit", "turn": None}]
    cache.close()


@pytest.mark.parametrize("bad, words", [
    ({"store": None}, "needs a store"),
    ({"store": "ftp://x"}, "unknown scheme"),
    ({"ttl": 0}, "ttl must be a positive number"),
    ({"ttl": "1h"}, "ttl must be a positive number"),
    ({"max_bytes": 10}, "max_bytes must be an int >= 1024"),
])
def test_bad_cache_arguments_are_config_errors(tmp_path, bad, words):
    kwargs = dict({"store": str(tmp_path / "c")}, **bad)
    store = kwargs.pop("store")
    with pytest.raises(ConfigError, match=words):
        ResponseCache(store, **kwargs)


def test_cache_must_be_a_response_cache():
    with pytest.raises(ConfigError, match="cache must be an agenthub.ResponseCache"):
        AutoLLMClient("deepseek-v4-flash", api_key=KEY, cache="/tmp/somewhere")


def test_the_cli_chat_cache(tmp_path, capsys):
    from agenthub.__main__ import main

    with JobServer() as server:
        args = ["chat", "deepseek-v4-flash", "hello cli", "--client-type", "openai-chat", "--base-url", server.base_url,
                "--max-tokens", "8", "--no-log", "--cache", str(tmp_path / "answers")]
        assert main(args) == 0
        assert main(args) == 0
        assert server.counts["hello cli"] == 1  # the second run was answered from the cache
    out = capsys.readouterr().out
    assert out.count("echo: hello cli") == 2


def test_job_rows_hit_the_cache(tmp_path):
    from agenthub import jobs

    cache = ResponseCache(str(tmp_path / "answers"))
    with JobServer() as server:
        src = str(tmp_path / "in.jsonl")
        with open(src, "w") as handle:
            for i in range(4):
                handle.write(json.dumps({"id": "r{}".format(i), "model": "deepseek-v4-flash", "client_type": "openai-chat",
                                         "base_url": server.base_url, "messages": _user("row {}".format(i % 2)),
                                         "config": {"max_tokens": 8}}) + "\n")
        summary = jobs.run(src, str(tmp_path / "out.jsonl"), workers=1, progress=False, cache=cache)
        assert summary.done == 4
        assert dict(server.counts) == {"row 0": 1, "row 1": 1}  # rows 2 and 3 repeat rows 0 and 1: hits
        assert cache.hits == 2
    cache.close()  # (its SQLite connections, one per worker thread)


def test_a_hit_on_a_client_with_fallbacks_names_the_hit_as_its_last_route(tmp_path):
    cache = ResponseCache(MemoryStore())
    with JobServer() as server, JobServer() as other:
        backup = AutoLLMClient("deepseek-v4-pro", client_type="openai-chat", base_url=other.base_url, api_key=KEY)
        client = _client(server, cache, fallbacks=[backup])
        list(client.streaming_response(_user("cached"), {"max_tokens": 8}))
        client.last_route = None
        stream = client.streaming_response(_user("cached"), {"max_tokens": 8})
        list(stream)
        assert dict(server.counts) == {"cached": 1} and not other.counts
    assert stream.route["cache"] == "hit" and client.last_route == stream.route


def test_the_cli_chat_prices_a_cache_hit_at_nothing(tmp_path, capsys, monkeypatch):
    """The usage line of a turn answered from the cache says what was paid for it, nothing, as the chat log, the
    Budget and runs count it (it said the list price of the usage again: $0.000005); with --tool too."""
    from agenthub.__main__ import main
    from money_clock import fix_clock

    fix_clock(monkeypatch, "12:00")  # (deepseek prices by the time of day)

    tools = tmp_path / "cli_tools.py"
    tools.write_text('def noop() -> str:\n    """Do nothing."""\n    return "ok"\n')
    with JobServer() as server:
        args = ["chat", "deepseek-v4-flash", "hello cli", "--client-type", "openai-chat", "--base-url", server.base_url,
                "--max-tokens", "8", "--no-log", "--cache", str(tmp_path / "answers")]
        for extra in ([], ["--tool", str(tools) + ":noop", "--yes"]):
            assert main(args + extra) == 0
            assert main(args + extra) == 0
        assert server.counts["hello cli"] == 2  # once without tools, once with: the other runs were hits
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("[done: ")]
    paid = "[done: stop] tokens: prompt 10, cached ?, thinking ?, response 5, cost $0.000005"
    assert lines == [paid, "[done: stop] tokens: prompt 10, cached ?, thinking ?, response 5, cost $0.00"] * 2


def _delta(items):
    return lambda events: events[:1] + [{"role": "assistant", "event_type": "delta", "content_items": items,
                                         "created_at": 1}] + events[1:]


@pytest.mark.parametrize("spoil", [
    _delta("not a list"), _delta([{"type": "text"}]), _delta([{"type": "tool_call", "name": 5}]),
    _delta([{"type": ["text"]}]), lambda events: events[:-1] + [dict(events[-1], finish_reason=["stop"])],
], ids=["items-not-a-list", "text-without-text", "tool-call-named-by-a-number", "item-type-a-list",
        "finish-reason-a-list"])
def test_an_entry_whose_events_break_the_stream_grammar_is_a_miss_and_is_removed(spoil):
    store = MemoryStore()
    cache = ResponseCache(store)
    with JobServer() as server:
        client = AutoLLMClient("deepseek-v4-flash", client_type="openai-chat", base_url=server.base_url,
                               api_key=KEY, cache=cache)
        first = client.response(_user("x"), {"max_tokens": 8})
        (key,) = list(store._cache)
        events = json.loads(zlib.decompress(store._cache[key][0][len(b"agenthub-cache/1\n"):]))["events"]
        store.cache_put(key, _entry({"key": key, "events": spoil(events)}), None, 1 << 20)
        assert client.response(_user("x"), {"max_tokens": 8}) == dict(first, created_at=ANY)  # sent again
        assert server.counts["x"] == 2 and cache.hits == 0 and cache.misses == 2 and cache.stored == 2
        assert client.response(_user("x"), {"max_tokens": 8}) == dict(first, created_at=ANY)  # the new entry
        assert server.counts["x"] == 2 and cache.hits == 1
    cache.close()


def test_an_answer_holding_media_is_stored_and_replayed_with_its_bytes(cache):
    """A media item's bytes (an image model's answer) made the answer JSON could not hold: it was never stored,
    each call paid again for the same image.  Stored as {"__bytes__": base64}, replayed as the bytes; a tool
    call's arguments of that shape stay as the model wrote them."""
    from server_support import Route, Upstream

    fixture = os.path.join(os.path.dirname(__file__), "fixtures", "gemini", "image_output.sse")
    with open(fixture, "rb") as handle:
        body = handle.read()
    with Upstream() as up, requests.Session() as session:
        up.routes["gem"] = Route(body)
        client = AutoLLMClient("gemini-3-pro-image-preview", client_type="gemini", base_url=up.url + "/gem",
                               api_key=KEY, max_retries=0, cache=cache, session=session)
        first = list(client.streaming_response(_user("draw"), {"max_tokens": 2000}))
        again = list(client.streaming_response(_user("draw"), {"max_tokens": 2000}))
        assert len(up.requests) == 1  # the second call was never sent
    check_stream(again)
    media = [(item["type"], type(item["data"]), item["data"][:4]) for e in again for item in e["content_items"] or ()
             if "data" in item]
    assert media == [("inline_thinking", bytes, b"\x89PNG"), ("inline_data", bytes, b"\x89PNG")]
    from agenthub.cache import _media_read

    call = {"type": "tool_call", "name": "f", "tool_call_id": "c1", "arguments": {"__bytes__": "AAAA"}}
    assert _media_read({"content_items": [dict(call)]}) == {"content_items": [call]}
    assert _media_read({"content_items": [{"type": "inline_data", "mime_type": "image/png",
                                           "data": {"__bytes__": "not base64!"}}]}) is None
    assert _without_times(again) == _without_times(first)
    assert (cache.hits, cache.misses, cache.stored) == (1, 1, 1)
