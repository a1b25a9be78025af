"""What a ResponseCache keys on (issue 37 A8, S01): what makes the answer different (the headers a caller
set, the base URL's query, the base path in the hooks= form, and the account when the body names
server-side state), never the credential otherwise; its files (S03); its memory (S07)."""

import os
import stat

import pytest

from agenthub import AutoLLMClient, ConfigError, ResponseCache
from agenthub.cache import request_key
from agenthub.types import HttpRequest

from jobs_server import JobServer


def _user(text):
    return [{"role": "user", "content_items": [{"type": "text", "text": text}]}]


def _client(server, cache, path="/v1", api_key="sk-tenant-A-1111111111", hook=False, **kwargs):
    base = server.base_url[:-len("/v1")] + path
    if hook:
        kwargs["hooks"] = [cache]
    else:
        kwargs["cache"] = cache
    return AutoLLMClient("deepseek-v4-flash", client_type="openai-chat", base_url=base, api_key=api_key, **kwargs)


def _pair(tmp_path, make_a, make_b, config_a=None, config_b=None, text="summarise my file"):
    """How many requests the server got for two clients asking the same (2: B missed; 1: B got A's answer)."""
    cache = ResponseCache(str(tmp_path / "answers"))
    try:
        with JobServer() as server:
            make_a(server, cache).response(_user(text), dict(config_a or {}, max_tokens=8))
            make_b(server, cache).response(_user(text), dict(config_b or {}, max_tokens=8))
            return server.counts[text]
    finally:
        cache.close()


def test_two_api_keys_of_a_plain_request_still_share_an_entry(tmp_path):
    assert _pair(tmp_path, lambda s, c: _client(s, c, api_key="sk-tenant-A-1111111111"),
                 lambda s, c: _client(s, c, api_key="sk-tenant-B-2222222222")) == 1


def test_a_body_naming_server_side_state_is_keyed_with_the_credential(tmp_path):
    state = {"extra_body": {"previous_response_id": "resp_A_private_conversation"}}
    assert _pair(tmp_path, lambda s, c: _client(s, c, api_key="sk-tenant-A-1111111111"),
                 lambda s, c: _client(s, c, api_key="sk-tenant-B-2222222222"), state, state) == 2
    # the same key: one entry
    assert _pair(tmp_path / "same", lambda s, c: _client(s, c), lambda s, c: _client(s, c), state, state) == 1


@pytest.mark.parametrize("where", ["extra_headers", "default_headers"])
def test_a_tenant_header_splits_the_key(tmp_path, where):
    if where == "extra_headers":
        got = _pair(tmp_path, _client, _client, {"extra_headers": {"x-tenant": "A"}}, {"extra_headers": {"x-tenant": "B"}})
    else:
        got = _pair(tmp_path, lambda s, c: _client(s, c, default_headers={"x-tenant": "A"}),
                    lambda s, c: _client(s, c, default_headers={"x-tenant": "B"}))
    assert got == 2


def test_the_base_url_query_splits_the_key(tmp_path):
    assert _pair(tmp_path, lambda s, c: _client(s, c, path="/v1?key=tenantAkey123456"),
                 lambda s, c: _client(s, c, path="/v1?key=tenantBkey654321")) == 2


@pytest.mark.parametrize("hook", [False, True], ids=["cache=", "hooks="])
def test_the_base_path_splits_the_key_in_both_forms(tmp_path, hook):
    assert _pair(tmp_path, lambda s, c: _client(s, c, path="/tenantA/v1", hook=hook),
                 lambda s, c: _client(s, c, path="/tenantB/v1", hook=hook)) == 2
    assert _pair(tmp_path / "same", lambda s, c: _client(s, c, hook=hook), lambda s, c: _client(s, c, hook=hook)) == 1


def test_request_key_rules():
    plan = HttpRequest("POST", "/responses", {"x-tenant": "A", "Authorization": "Bearer sk-1", "traceparent": "00-1"},
                       {"model": "m", "input": []})
    same = HttpRequest("POST", "/responses", {"x-tenant": "A", "Authorization": "Bearer sk-2", "traceparent": "00-2"},
                       {"model": "m", "input": []})
    assert request_key("openai-responses", "e", plan) == request_key("openai-responses", "e", same)
    for field, value in (("previous_response_id", "resp_1"), ("conversation", {"id": "conv_1"}),
                         ("vector_store_ids", ["vs_1"]), ("file_id", "file_1")):
        body = {"model": "m", "input": [{"content": [{field: value}]}]}
        stateful = HttpRequest("POST", "/responses", {}, body)
        assert request_key("openai-responses", "e", stateful) is None  # no credential known: never cached
        one = request_key("openai-responses", "e", stateful, lambda: ["sk-1"])
        assert one is not None and one != request_key("openai-responses", "e", stateful, lambda: ["sk-2"])


# -- files (S03) ---------------------------------------------------------------------------------------------------

@pytest.mark.skipif(os.name != "posix", reason="POSIX modes")
def test_cache_files_are_the_user_s_own(tmp_path):
    folder = tmp_path / "answers"
    cache = ResponseCache(str(folder))
    with JobServer() as server:
        _client(server, cache).response(_user("mode"), {"max_tokens": 8})
    cache.close()
    assert stat.S_IMODE(os.stat(str(folder)).st_mode) == 0o700
    names = os.listdir(str(folder))
    assert names and all(stat.S_IMODE(os.stat(str(folder / n)).st_mode) == 0o600 for n in names)
    db = tmp_path / "state.db"
    ResponseCache("sqlite:///" + str(db)).close()
    assert stat.S_IMODE(os.stat(str(db)).st_mode) == 0o600


@pytest.mark.skipif(os.name != "posix", reason="POSIX modes")
@pytest.mark.parametrize("what", ["folder", "file"])
def test_a_cache_others_can_write_is_refused(tmp_path, what):
    folder = tmp_path / "shared"
    folder.mkdir()
    target = folder / "agenthub-cache.sqlite3"
    if what == "file":
        target.write_bytes(b"")
        os.chmod(str(folder), 0o700)
        os.chmod(str(target), 0o666)
    else:
        os.chmod(str(folder), 0o777)
    with pytest.raises(ConfigError, match="others can write"):
        ResponseCache(str(folder))
    with pytest.raises(ConfigError, match="others can write"):
        ResponseCache("sqlite:///" + str(target) if what == "file" else "sqlite:///" + str(folder / "x.db"))


def test_a_store_file_another_user_owns_is_refused(tmp_path, monkeypatch):
    from agenthub.stores import files

    folder = tmp_path / "answers"
    ResponseCache(str(folder)).close()
    monkeypatch.setattr(files, "_uid", lambda: os.getuid() + 1)  # as if the files were another user's
    with pytest.raises(ConfigError, match="another user owns"):
        ResponseCache(str(folder))


# -- memory (S07) ----------------------------------------------------------------------------------------------------

class _Call(object):
    def __init__(self):
        self.kind, self.client_type, self.model = "stream", "openai-chat", "deepseek-v4-flash"
        self.request = HttpRequest("POST", "/chat/completions", {}, {"model": "deepseek-v4-flash", "n": 1})
        self.route = {"model": "deepseek-v4-flash", "client_type": "openai-chat", "host": "h:1"}
        self.answer = self.cache = self.error = None


def _events(deltas, text):
    usage = {"prompt_tokens": 1, "cached_tokens": 0, "thoughts_tokens": 0, "response_tokens": deltas}
    yield {"role": "assistant", "event_type": "start", "content_items": [], "created_at": 1}
    for i in range(deltas):
        yield {"role": "assistant", "event_type": "delta", "created_at": 1,
               "content_items": [{"type": "text", "text": text() if callable(text) else text + str(i)}]}
    yield {"role": "assistant", "event_type": "stop", "content_items": [], "created_at": 1,
           "usage_metadata": usage, "finish_reason": "stop"}


def _record(cache, deltas, text):
    call = _Call()
    cache.on_call_start(call)
    for event in _events(deltas, text):
        cache.on_event(call, event)
    cache.on_call_end(call)


def test_a_large_answer_is_recorded_compressed_as_it_comes(tmp_path):
    import tracemalloc

    cache = ResponseCache(str(tmp_path / "answers"), max_bytes=64 << 20)
    tracemalloc.start()
    try:
        _record(cache, 6000, "the same words again and again " * 100)  # about 19 MB of events as JSON
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert cache.stored == 1
    assert peak < 12 << 20  # (the events were never all kept: only the first 4 MiB, for the whole check)
    call = _Call()
    cache.on_call_start(call)
    replayed = list(call.answer)
    assert len(replayed) == 6002 and replayed[-1]["usage_metadata"]["response_tokens"] == 6000
    cache.close()


def test_recording_stops_past_max_bytes(tmp_path):
    cache = ResponseCache(str(tmp_path / "answers"), max_bytes=4096)
    _record(cache, 400, lambda: os.urandom(64).hex())  # past 4 KiB compressed
    assert cache.stored == 0
    _record(cache, 3, "small")
    assert cache.stored == 1
    cache.close()


def test_an_entry_that_decompresses_past_the_bound_is_a_miss_never_held_whole(tmp_path, monkeypatch):
    import tracemalloc
    import zlib

    from agenthub import cache as cache_module

    monkeypatch.setattr(cache_module, "MAX_ENTRY_TEXT", 1 << 20)
    cache = ResponseCache(str(tmp_path / "answers"), max_bytes=64 << 20)
    call = _Call()
    key = request_key("openai-chat", "h:1", call.request)
    packer = zlib.compressobj(9)
    bomb = [packer.compress(('{"key":"%s","events":[' % key).encode())]
    chunk = b" " * (1 << 20)
    bomb += [packer.compress(chunk) for _ in range(48)]  # 48 MiB of blanks: a valid JSON once decompressed...
    bomb += [packer.compress(b"]}"), packer.flush()]
    cache.store.cache_put(key, cache_module._MAGIC + b"".join(bomb), None, 64 << 20)
    tracemalloc.start()
    try:
        cache.on_call_start(call)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert call.answer is None and cache.misses == 1  # ...but past the bound: a miss, never decompressed whole
    assert peak < 4 << 20
    assert cache.store.cache_get(key) is None  # and removed
    cache.on_call_end(call)
    _record(cache, 200, lambda: os.urandom(4096).hex()[:6000])  # an answer past the bound is never stored
    _record(cache, 3, "small")
    assert cache.stored == 1
    cache.close()
