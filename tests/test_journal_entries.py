"""What a journal entry may hold and what a resume takes from one (issue 39): a turn whose answer holds bytes (a
Gemini image, a thought image) is journaled and replayed as the same bytes, a dict of the model's that looks like
the bytes' JSON form stays a dict; an entry that is JSON of the wrong shape (a field missing or of another type, a
turn message the data model refuses, a kind no agenthub writes) is refused with JournalError ``"corrupt"`` before
anything is replayed or sent (it raised KeyError / TypeError / ValueError, or was replayed as the run's answer),
and ``agenthub runs show`` shows it as corrupt instead of a traceback."""

import base64
import io
import json

import pytest

from agent_streams import _sse, gemini_text
from sse_server import Answer, SSEServer

from agenthub import AutoLLMClient, check_stream, tool
from agenthub.agent import JournalError
from agenthub.stores import MemoryStore, open_store

USER = {"role": "user", "content_items": [{"type": "text", "text": "Draw Rome, then look it up."}]}
PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe"
THOUGHT = b"\x00\x01\x02 a thought image"
#: the model's own arguments that look like the bytes' JSON form: a dict, not bytes, on replay too
LOOKALIKE = {"__bytes__": "QUJD"}

ran = []


@tool
def look_up(city: str, note: dict) -> str:
    """Look a city up."""
    ran.append((city, note))
    return city + ": open"


def image_turn():
    parts = [{"inlineData": {"mimeType": "image/png", "data": base64.b64encode(PNG).decode()}},
             {"inlineData": {"mimeType": "image/png", "data": base64.b64encode(THOUGHT).decode()}, "thought": True},
             {"functionCall": {"id": "c1", "name": "look_up", "args": {"city": "Rome", "note": LOOKALIKE}}}]
    chunk = {"candidates": [{"content": {"role": "model", "parts": parts}, "index": 0, "finishReason": "STOP"}],
             "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5,
                               "candidatesTokensDetails": [{"modality": "IMAGE", "tokenCount": 3}]}}
    return _sse([chunk])


def gemini_client(server):
    return AutoLLMClient("gemini-2.5-flash", api_key="k-entries", base_url=server.url, client_type="gemini",
                         max_retries=0)


def plain(messages):
    return [{k: v for k, v in m.items() if k != "created_at"} for m in messages]


def test_a_turn_holding_bytes_is_journaled_and_replayed_as_the_same_bytes(store_url):
    ran.clear()
    with SSEServer() as server:
        server.answers += [Answer([image_turn()]), Answer([gemini_text("Rome is open.")])]
        first = gemini_client(server).run([USER], tools=[look_up], journal=store_url, run_id="draw-1").result()
        assert (first.stop, first.turns, len(server.requests), ran) == ("done", 2, 2, [("Rome", LOOKALIKE)])
        items = first.messages[0]["content_items"]
        assert [(i["type"], i.get("data")) for i in items[:2]] == [("inline_data", PNG), ("inline_thinking", THOUGHT)]
        # the finished run again: its result at once, from the journal, the same bytes and the same dict
        events = []
        run = gemini_client(server).run([USER], tools=[look_up], journal=store_url, run_id="draw-1")
        events.extend(run)
        again = run.result()
    assert len(server.requests) == 2 and ran == [("Rome", LOOKALIKE)]  # nothing sent, nothing run again
    assert (again.stop, again.turns, again.replayed_turns, again.replayed_results) == ("done", 2, 2, 1)
    assert plain(again.messages) == plain(first.messages)
    assert getattr(again.messages[0]["usage_metadata"], "output_image_tokens", None) == 3  # (priced as the live)
    assert (again.usage_metadata, again.cost_usd) == (first.usage_metadata, first.cost_usd)
    replayed = again.messages[0]["content_items"]
    assert type(replayed[0]["data"]) is bytes and replayed[0]["data"] == PNG and replayed[1]["data"] == THOUGHT
    assert replayed[2]["arguments"] == {"city": "Rome", "note": LOOKALIKE}
    turn = [e for e in events if e["role"] == "assistant"]
    assert all(e.get("replayed") is True for e in turn)
    first_turn = turn[:turn.index(next(e for e in turn if e["event_type"] == "stop")) + 1]
    check_stream(first_turn)
    assert [i.get("data") for e in first_turn for i in e["content_items"] if i["type"].startswith("inline")] == \
        [PNG, THOUGHT]


def _journal_with(store, second):
    """A finished run's journal (its header from a real run) with ``second`` as the entry after the header."""
    with SSEServer() as server:
        server.answers += [Answer([gemini_text("Rome is open.")])]
        gemini_client(server).run([USER], tools=[look_up], journal=store, run_id="r-1").result()
    header = store.journal_entries("r-1")[0]
    store.journal_forget("r-1")
    store.journal_claim("r-1", "writer", 30.0)
    store.journal_append_many("r-1", "writer", 0, [header, json.dumps(second)])
    store.journal_release("r-1", "writer")


ANSWER = {"role": "assistant", "content_items": [{"type": "text", "text": "Rome is open."}], "finish_reason": "stop"}
CORRUPT = [
    {"k": "call"},  # KeyError 'turn'
    {"k": "result", "turn": 0},  # KeyError 'id'
    {"k": "call", "turn": [], "id": "c1", "name": "look_up", "digest": "d"},  # TypeError: unhashable
    {"k": "turn"},  # KeyError 'message'
    {"k": "turn", "turn": 0, "message": "x", "cost": None, "route": {}},  # ValueError from dict()
    {"k": "turn", "turn": 0, "cost": None, "route": {},
     "message": {"role": "assistant", "content_items": [{"type": "tool_call"}]}},  # KeyError 'name'
    {"k": "turn", "turn": 0, "cost": None, "route": {},
     "message": {"role": "assistant", "content_items": [{"type": "text", "text": 3}]}},  # replayed as the answer
    {"k": "turn", "turn": 0, "cost": "1.5", "route": {}, "message": ANSWER},  # TypeError in the run's cost
    {"k": "turn", "turn": 0, "cost": None, "route": {}, "bytes": True,
     "message": dict(ANSWER, content_items=[{"type": "inline_data", "mime_type": "image/png",
                                             "data": {"__bytes__": "not base64!"}}])},
    {"k": "result", "turn": 0, "id": "c1", "item": "paid", "seconds": 0.1},
    {"k": "done", "stop": "done", "pending": [["c1"]]},
    {"k": "started", "turn": 0},  # no agenthub writes it
    {"k": "turn", "turn": 1, "cost": None, "route": {}, "message": ANSWER},  # replayed as turn 0
    {"k": "attach", "turn": 0, "id": "resp_1", "wire": "openai-responses", "route": ["gpt-5.5"]},  # AttributeError
    {"k": "turn", "turn": 0, "cost": None, "route": {},
     "message": dict(ANSWER, usage_metadata=[40])},  # AttributeError summing the run's usage; runs show too
    {"k": "turn", "turn": 0, "cost": None, "route": {},  # TypeError summing; runs show cleared the screen
     "message": dict(ANSWER, usage_metadata={"prompt_tokens": "\x1b[2J", "response_tokens": 5})},
    {"k": "turn", "turn": 0, "cost": None, "route": {},
     "message": dict(ANSWER, usage_metadata={"prompt_tokens": True})},  # a bool is no count
]


@pytest.mark.parametrize("entry", CORRUPT, ids=[str(n) for n in range(len(CORRUPT))])
def test_an_entry_of_the_wrong_shape_is_refused_as_corrupt_before_anything_is_sent(entry):
    store = MemoryStore()
    _journal_with(store, entry)
    with SSEServer() as server:
        with pytest.raises(JournalError) as caught:
            gemini_client(server).run([USER], tools=[look_up], journal=store, run_id="r-1").result()
        assert server.requests == []
    assert caught.value.reason == "corrupt" and caught.value.run_id == "r-1"
    assert "entry 1 is corrupt" in str(caught.value)
    assert store.journal_claim("r-1", "next", 30.0) is None  # the claim was let go


@pytest.mark.parametrize("entry", CORRUPT, ids=[str(n) for n in range(len(CORRUPT))])
def test_runs_show_says_an_entry_of_the_wrong_shape_is_corrupt(entry, tmp_path):
    journal = "sqlite:///" + str(tmp_path / "runs.db")
    store = open_store(journal)
    try:
        _journal_with(store, entry)
    finally:
        store.close()
    _shown_corrupt(journal)


def _shown_corrupt(journal):
    """``agenthub runs show r-1`` on ``journal`` says its entry 1 is corrupt."""
    import argparse

    from agenthub.apps import runs_cli

    out = io.StringIO()
    assert runs_cli.run(argparse.Namespace(runs_command="show", journal=journal, run_id="r-1", json=False), out) == 0
    assert "entry 1: corrupt (a resume refuses this journal: JournalError)" in out.getvalue()


def _mcp_config(token, url="https://mcp.example.com/mcp"):
    return {"mcp_servers": [{"url": url, "name": "docs", "headers": {"Authorization": "Bearer " + token}}]}


def _responses_client(server):
    return AutoLLMClient("gpt-5.5", api_key="k-entries", base_url=server.url + "/v1", client_type="openai-responses",
                         max_retries=0)


def test_a_resume_with_a_renewed_mcp_server_token_is_the_same_run():
    """``config["mcp_servers"][i]["headers"]`` are credentials (a bearer token, often minted anew by each process
    or refreshed within the hour), as ``extra_headers`` are: they do not make another run.  The journal refused
    the resume of a run whose token was renewed as belonging to another run; another server URL still is one."""
    from agent_streams import responses_text

    store = MemoryStore()

    with SSEServer() as server:
        server.answers.append(Answer([responses_text("Done.")]))
        client = _responses_client(server)
        def run(token, url="https://mcp.example.com/mcp"):
            return client.run([USER], tools=[look_up], config=_mcp_config(token, url), journal=store, run_id="mcp-1")

        first, again = run("token-one").result(), run("token-two").result()
        assert (first.stop, again.stop, again.replayed_turns, len(server.requests)) == ("done", "done", 1, 1)
        with pytest.raises(JournalError) as caught:
            run("token-two", "https://other.example.com/mcp")
        assert caught.value.reason == "mismatch" and len(server.requests) == 1
    assert "token-" not in "".join(store.journal_entries("mcp-1"))


def test_a_run_id_ending_in_entries_is_refused_before_anything_is_sent():
    """On Redis a run's entries are kept under ``<run_id>:entries``: a run_id ending so named another run's entries
    (forgetting it removed them, its writes failed with WRONGTYPE).  Refused on every store, one rule."""
    from agenthub import ConfigError

    with SSEServer() as server:
        with pytest.raises(ConfigError, match="run_id must be 1 to 200 printable characters, not ending in "
                                              "':entries' .got 'ticket-1:entries'."):
            gemini_client(server).run([USER], tools=[look_up], journal=MemoryStore(), run_id="ticket-1:entries")
        assert server.requests == []


@pytest.mark.parametrize("store_url", ["redis"], indirect=True)
def test_an_entry_redis_holds_as_bytes_that_are_not_utf8_is_corrupt_not_a_unicode_error(store_url):
    """Redis keeps what any client wrote: an entry that is not UTF-8 raised UnicodeDecodeError out of the resume,
    the store's journal_entries and ``runs show``."""
    redis = pytest.importorskip("redis")
    with SSEServer() as server:
        server.answers.append(Answer([gemini_text("Rome is open.")]))
        gemini_client(server).run([USER], tools=[look_up], journal=store_url, run_id="r-1").result()
        raw = redis.Redis.from_url(store_url)
        try:
            from agenthub.stores.redis import PREFIX

            raw.lset(PREFIX + "journal:r-1:entries", 1, b"\xff\xfe{")
        finally:
            raw.close()
        with pytest.raises(JournalError) as caught:
            gemini_client(server).run([USER], tools=[look_up], journal=store_url, run_id="r-1").result()
        assert (caught.value.reason, len(server.requests)) == ("corrupt", 1)
    store = open_store(store_url)
    try:
        assert store.journal_entries("r-1")[1] == "\ufffd\ufffd\ufffd{"
    finally:
        store.close()
    _shown_corrupt(store_url)


def test_a_turn_holding_a_lone_surrogate_is_not_taken_for_corrupt():
    """The entry check reads a turn's message as the data model has it; a lone surrogate in its text, or in the name
    of a tool call's argument (it was taken for corrupt there), is what the journal stores escaped and reads back
    (the wire's concern, as it was live), not a corrupt entry."""
    from agenthub.agent.journal import _checked_message

    call = {"type": "tool_call", "tool_call_id": "c1", "name": "look_up", "arguments": {"\ud800": None}}
    assert _checked_message(dict(ANSWER, content_items=[call]), "assistant")
    store = MemoryStore()
    odd = dict(ANSWER, content_items=[{"type": "text", "text": "Rome \ud800 is open."}])
    _journal_with(store, {"k": "turn", "turn": 0, "cost": 0.5, "route": {}, "message": odd})
    with SSEServer() as server:
        result = gemini_client(server).run([USER], tools=[look_up], journal=store, run_id="r-1").result()
        assert server.requests == []
    assert (result.stop, result.replayed_turns, result.cost_usd) == ("done", 1, 0.5)
    assert result.final["content_items"] == [{"type": "text", "text": "Rome \ud800 is open."}]


def test_a_replayed_run_says_what_its_cut_attempts_were_counted_as_the_uninterrupted_run_did(monkeypatch):
    """RunResult.cut_usd (what a Budget counted for attempts cut after the provider took them) is journaled with
    the turn: a run replayed from its journal said None where the run it replays said the cut's hold (cost_usd
    + cut_usd no longer summed to what the Budget charged the run); a turn entry written before says nothing of
    cuts and still reads (None)."""
    import agenthub.client as client_module
    from agenthub import Budget
    from test_budget_cuts import ACTUAL, HEAD, HI, HOLD, WHOLE, _claude

    monkeypatch.setattr(client_module, "BACKOFF_BASE", 0.01)
    monkeypatch.setattr(client_module, "BACKOFF_CAP", 0.02)
    store = MemoryStore()
    budget = Budget(1)
    with SSEServer() as server:
        server.answers.extend([Answer([HEAD]), Answer([WHOLE])])
        live = _claude(server.url, budget, max_retries=1).run(HI, {"max_tokens": 1000}, tools=[], journal=store,
                                                               run_id="cut-1").result()
        replayed = _claude(server.url, Budget(1), max_retries=1).run(HI, {"max_tokens": 1000}, tools=[],
                                                                       journal=store, run_id="cut-1").result()
        assert len(server.requests) == 2  # (the replay sent nothing)
    assert (live.cost_usd, live.cut_usd) == (pytest.approx(ACTUAL, rel=1e-12), pytest.approx(HOLD, rel=1e-12))
    assert live.cost_usd + live.cut_usd == pytest.approx(budget.spent_usd, rel=1e-12)
    assert replayed.replayed_turns == 1
    assert (replayed.cost_usd, replayed.cut_usd) == (live.cost_usd, live.cut_usd)
    turn = [json.loads(text) for text in store.journal_entries("cut-1") if '"k":"turn"' in text][0]
    assert turn["cut"] == live.cut_usd
    # a journal written before cuts were kept: the same entries, its turn entry without "cut"
    texts = [json.dumps(dict((k, v) for k, v in json.loads(text).items() if k != "cut"), separators=(",", ":"),
                        ensure_ascii=False) if '"k":"turn"' in text else text
             for text in store.journal_entries("cut-1")]
    store.journal_forget("cut-1")
    store.journal_claim("cut-1", "writer", 30.0)
    store.journal_append_many("cut-1", "writer", 0, texts)
    store.journal_release("cut-1", "writer")
    with SSEServer() as server:
        again = _claude(server.url, Budget(1)).run(HI, {"max_tokens": 1000}, tools=[], journal=store,
                                                   run_id="cut-1").result()
        assert server.requests == []
    assert (again.replayed_turns, again.cost_usd, again.cut_usd) == (1, live.cost_usd, None)


def _headers_fingerprint(model, messages, tools, config):
    """The fingerprint agenthub wrote in a journal's header before ceee8f2 ("the fingerprint leaves out the headers
    of config['mcp_servers']", ``git log -p agenthub/agent/journal.py``): the MCP servers' headers in it."""
    import hashlib

    kept = {k: v for k, v in config.items() if k not in ("extra_headers", "trace_id") and k != "tools"}
    text = json.dumps([1, model, list(messages), list(tools), kept], sort_keys=True, separators=(",", ":"),
                      ensure_ascii=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()


@pytest.mark.parametrize("stateful", [False, True])
def test_a_journal_written_before_the_mcp_headers_left_the_fingerprint_is_still_this_run(monkeypatch, stateful):
    """A journal whose header holds the fingerprint of the format before (the MCP servers' headers digested with
    the rest) was refused as another run by every resume since, the same headers given again included.  It is
    this run when that older fingerprint is the one the run's own config gives; other servers still are not."""
    from agent_streams import responses_text
    from agenthub.agent import journal as journal_module

    real = journal_module.fingerprint
    given = []
    monkeypatch.setattr(journal_module, "fingerprint", lambda *args: given.append(args) or real(*args))
    store = MemoryStore()

    with SSEServer() as server:
        server.answers.append(Answer([responses_text("Done.")]))
        client = _responses_client(server)

        def run(cfg):
            if stateful:
                client.clear_history()
                return client.run_stateful(USER, tools=[look_up], config=cfg, journal=store, run_id="mcp-old")
            return client.run([USER], tools=[look_up], config=cfg, journal=store, run_id="mcp-old")

        assert run(_mcp_config("token-one")).result().stop == "done"
        # the journal as an agenthub of before wrote it: the same entries under the older header
        entries = [json.loads(text) for text in store.journal_entries("mcp-old")]
        assert entries[0]["fingerprint"] == real(*given[0])
        entries[0]["fingerprint"] = _headers_fingerprint(*given[0])
        assert entries[0]["fingerprint"] != real(*given[0])
        assert store.journal_forget("mcp-old")
        assert store.journal_claim("mcp-old", "old-agenthub") is None
        store.journal_append_many("mcp-old", "old-agenthub", 0, [json.dumps(entry) for entry in entries])
        store.journal_release("mcp-old", "old-agenthub")
        again = run(_mcp_config("token-one")).result()
        assert (again.stop, again.replayed_turns, len(server.requests)) == ("done", 1, 1)
        for other in (_mcp_config("token-one", "https://other.example.com/mcp"), _mcp_config("token-two")):
            with pytest.raises(JournalError) as caught:  # (a renewed token: the older digest cannot tell it)
                run(other)
            assert caught.value.reason == "mismatch" and len(server.requests) == 1
