"""Server-side compaction (issue 22): OpenAI Responses and Anthropic, a three-compaction conversation each
against a local fake (the right items resent), foreign compaction items dropped with a warning, and the
cost of a compacted Claude turn equal to the sum of its iterations.

Wire shapes: OpenAI https://developers.openai.com/api/docs/guides/compaction and the openai SDK
(``ResponseCompactionItem``: id, type "compaction", encrypted_content; ``ContextManagement``: type,
compact_threshold); Anthropic https://platform.claude.com/docs/en/build-with-claude/compaction and the
anthropic SDK (``BetaCompact20260112EditParam``, ``BetaCompactionBlock``, ``BetaCompactionContentBlockDelta``,
``BetaUsage.iterations``: "A compaction entry's tokens are not included in the top-level usage fields")."""

import json
import logging

import pytest

from agenthub import AutoLLMClient, check_stream, collect, cost
from agenthub.errors import UnsupportedParameterError
from longrun_server import LongrunServer

CONFIG = {"compaction": {"threshold": 100000}}


def _sse(kind, body):
    return ("event: {}\ndata: {}\n\n".format(kind, json.dumps(dict(body, type=kind), separators=(",", ":")))).encode()


def responses_turn(rid, text, compaction=None):
    """A Responses stream: an optional compaction output item (added/done), then one message."""
    events = []

    def add(kind, body):
        events.append(_sse(kind, dict(body, sequence_number=len(events))))

    add("response.created", {"response": {"id": rid, "status": "in_progress", "output": []}})
    output = []
    index = 0
    if compaction:
        item = {"id": "cmp_" + compaction, "type": "compaction", "encrypted_content": "enc-" + compaction}
        add("response.output_item.added", {"output_index": 0, "item": {"id": item["id"], "type": "compaction"}})
        add("response.compaction.compacting", {"item_id": item["id"], "output_index": 0})
        add("response.output_item.done", {"output_index": 0, "item": item})
        output.append(item)
        index = 1
    message = {"id": "msg_" + rid, "type": "message", "role": "assistant", "status": "in_progress", "content": []}
    add("response.output_item.added", {"output_index": index, "item": message})
    add("response.output_text.delta", {"item_id": message["id"], "output_index": index, "content_index": 0,
                                       "delta": text})
    done = dict(message, status="completed", content=[{"type": "output_text", "text": text, "annotations": []}])
    add("response.output_item.done", {"output_index": index, "item": done})
    output.append(done)
    add("response.completed", {"response": {"id": rid, "status": "completed", "output": output, "usage": {
        "input_tokens": 50, "output_tokens": 5, "total_tokens": 55}}})
    return events


def anthropic_turn(text, compaction=None, usage=None):
    events = [_sse("message_start", {"message": {"id": "msg_x", "type": "message", "role": "assistant",
                                                 "content": [], "usage": {"input_tokens": 10, "output_tokens": 1}}})]
    index = 0
    if compaction:
        events.append(_sse("content_block_start", {"index": 0, "content_block": {"type": "compaction", "content": None}}))
        events.append(_sse("content_block_delta", {"index": 0, "delta": {
            "type": "compaction_delta", "content": "Summary " + compaction, "encrypted_content": "enc-" + compaction}}))
        events.append(_sse("content_block_stop", {"index": 0}))
        index = 1
    events.append(_sse("content_block_start", {"index": index, "content_block": {"type": "text", "text": ""}}))
    events.append(_sse("content_block_delta", {"index": index, "delta": {"type": "text_delta", "text": text}}))
    events.append(_sse("content_block_stop", {"index": index}))
    events.append(_sse("message_delta", {"delta": {"stop_reason": "end_turn"},
                                         "usage": usage or {"input_tokens": 10, "output_tokens": 5}}))
    events.append(_sse("message_stop", {}))
    return events


def user(text):
    return {"role": "user", "content_items": [{"type": "text", "text": text}]}


PLAN = [("a1", None), ("a2", "c1"), ("a3", None), ("a4", "c2"), ("a5", "c3"), ("a6", None)]


def run_conversation(server, make_client, add_turn):
    for n, (text, compaction) in enumerate(PLAN):
        add_turn(server, n, text, compaction)
    client = make_client(server)
    for n in range(len(PLAN)):
        answer = client.response_stateful(user("t{}".format(n + 1)), CONFIG)
        assert answer["content_items"][-1] == {"type": "text", "text": PLAN[n][0]}
    return client


def openai_client(server):
    return AutoLLMClient("gpt-5.5", api_key="test-key", base_url=server.url + "/v1", client_type="openai-responses")


def anthropic_client(server):
    return AutoLLMClient("claude-sonnet-4-6", api_key="test-key", base_url=server.url, client_type="anthropic")


def _openai_input_summary(body):
    out = []
    for item in body["input"]:
        if item["type"] == "compaction":
            assert set(item) == {"type", "encrypted_content"}  # no id is sent
            out.append("C:" + item["encrypted_content"])
        elif item["type"] == "message":
            out.append(item["role"][0] + ":" + item["content"][0]["text"])
        else:
            out.append(item["type"])
    return out


def test_three_compactions_on_openai_resend_only_what_follows_the_latest():
    with LongrunServer() as server:
        client = run_conversation(server, openai_client, lambda s, n, text, c: s.add(
            "resp_{}".format(n), responses_turn("resp_{}".format(n), text, c)))
        bodies = [r["body"] for r in server.requests]
    assert all(b["context_management"] == [{"type": "compaction", "compact_threshold": 100000}] for b in bodies)
    assert [_openai_input_summary(b) for b in bodies] == [
        ["u:t1"],
        ["u:t1", "a:a1", "u:t2"],
        ["C:enc-c1", "a:a2", "u:t3"],
        ["C:enc-c1", "a:a2", "u:t3", "a:a3", "u:t4"],
        ["C:enc-c2", "a:a4", "u:t5"],
        ["C:enc-c3", "a:a5", "u:t6"],
    ]
    history = client.get_history()
    assert len(history) == 12  # every message is kept locally, compactions included
    kinds = [[i["type"] for i in m["content_items"]] for m in history if m["role"] == "assistant"]
    assert kinds == [["text"], ["compaction", "text"], ["text"], ["compaction", "text"], ["compaction", "text"],
                     ["text"]]
    assert history[3]["content_items"][0] == {"type": "compaction", "fidelity": {"format": "openai", "item": {
        "type": "compaction", "id": "cmp_c1", "encrypted_content": "enc-c1"}}}


def test_three_compactions_on_anthropic_replay_every_block_where_it_came():
    with LongrunServer() as server:
        run_conversation(server, anthropic_client, lambda s, n, text, c: s.add("m{}".format(n), anthropic_turn(text, c)))
        requests = list(server.requests)
    for request in requests:
        assert request["body"]["context_management"] == {"edits": [
            {"type": "compact_20260112", "trigger": {"type": "input_tokens", "value": 100000}}]}
        assert "compact-2026-01-12" in request["headers"]["anthropic-beta"]
    last = requests[-1]["body"]["messages"]
    assert [m["role"] for m in last] == ["user", "assistant"] * 5 + ["user"]
    compactions = [(i, b) for i, m in enumerate(last) for b in m["content"] if b["type"] == "compaction"]
    assert compactions == [
        (3, {"type": "compaction", "content": "Summary c1", "encrypted_content": "enc-c1"}),
        (7, {"type": "compaction", "content": "Summary c2", "encrypted_content": "enc-c2"}),
        (9, {"type": "compaction", "content": "Summary c3", "encrypted_content": "enc-c3"}),
    ]
    assert last[9]["content"][1]["type"] == "text" and last[9]["content"][1]["text"] == "a5"


def test_a_compaction_item_the_protocol_cannot_read_is_dropped_with_a_warning(caplog):
    with LongrunServer() as server:
        client = run_conversation(server, openai_client, lambda s, n, text, c: s.add(
            "resp_{}".format(n), responses_turn("resp_{}".format(n), text, c)))
        history = client.get_history()
        server.add("m_next", anthropic_turn("on claude"))
        claude = anthropic_client(server)
        with caplog.at_level(logging.WARNING, logger="agenthub"):
            answer = claude.response(history + [user("t7")], CONFIG)
        body = server.requests[-1]["body"]
    assert answer["content_items"] == [{"type": "text", "text": "on claude"}]
    assert not any(b["type"] == "compaction" for m in body["messages"] for b in m["content"])
    assert len(body["messages"]) == 13  # the messages before the compactions go in full
    warnings = [r for r in caplog.records if "compaction item from openai" in r.getMessage()]
    assert len(warnings) == 3


def test_compaction_on_protocols_without_it_and_too_small_a_threshold_are_refused():
    message = [user("x")]
    claude = AutoLLMClient("claude-sonnet-4-6", api_key="k", base_url="http://127.0.0.1:9", client_type="anthropic")
    with pytest.raises(UnsupportedParameterError) as info:
        claude.streaming_response(message, {"compaction": {"threshold": 1000}})
    assert "50000" in str(info.value)
    gemini = AutoLLMClient("gemini-3.8-flash", api_key="k", base_url="http://127.0.0.1:9", client_type="gemini")
    with pytest.raises(UnsupportedParameterError):
        gemini.streaming_response(message, {"compaction": {"threshold": 100000}})


def test_cost_of_a_compacted_claude_turn_is_the_sum_of_its_iterations():
    compaction_pass = {"type": "compaction", "input_tokens": 180000, "cache_creation_input_tokens": 0,
                       "cache_read_input_tokens": 0, "output_tokens": 3500}
    message_pass = {"type": "message", "input_tokens": 23000, "cache_creation_input_tokens": 1000,
                    "cache_read_input_tokens": 6000, "output_tokens": 800}
    top = {key: message_pass[key] for key in ("input_tokens", "cache_creation_input_tokens",
                                              "cache_read_input_tokens", "output_tokens")}
    usage = dict(top, iterations=[compaction_pass, message_pass])
    with LongrunServer() as server:
        server.add("m", anthropic_turn("done", "c9", usage=usage))
        events = list(AutoLLMClient("claude-opus-4-8", api_key="test-key", base_url=server.url,
                                    client_type="anthropic").streaming_response([user("go")], CONFIG))
    check_stream(events)
    buckets = events[-1]["usage_metadata"]
    assert buckets == {"cached_tokens": 6000, "prompt_tokens": 180000 + 23000 + 1000, "thoughts_tokens": None,
                       "response_tokens": 3500 + 800}

    def one(entry):
        return cost("claude-opus-4-8", {"cached_tokens": entry["cache_read_input_tokens"],
                                          "prompt_tokens": entry["input_tokens"] + entry["cache_creation_input_tokens"],
                                          "thoughts_tokens": None, "response_tokens": entry["output_tokens"]},
                    cache_writes=entry["cache_creation_input_tokens"])  # (writes billed at their write price)

    assert buckets.cache_write == 1000  # the usage carries the write count: cost() prices it (issue 38)
    assert cost("claude-opus-4-8", buckets) == pytest.approx(one(compaction_pass) + one(message_pass))
    assert collect(events)["content_items"][0]["type"] == "compaction"


def test_collect_and_check_stream_know_the_compaction_item():
    from agenthub.errors import StreamProtocolError
    from agenthub.stream import StreamEnd, drive

    item = {"type": "compaction", "fidelity": {"format": "openai", "item": {"type": "compaction",
                                                                          "encrypted_content": "e"}}}
    events = list(drive(iter([item, {"type": "text", "text": "hi"}, StreamEnd(None, "stop")]), "t"))
    check_stream(events)
    assert collect(events)["content_items"] == [item, {"type": "text", "text": "hi"}]
    only = list(drive(iter([item, StreamEnd(None, "stop")]), "t"))  # a compaction alone is worth replaying
    check_stream(only)
    bad = [dict(e) for e in events]
    bad[1] = dict(bad[1], content_items=[{"type": "compaction"}])
    with pytest.raises(StreamProtocolError):
        check_stream(bad)


def test_the_sdks_read_the_fake_compaction_streams():
    """openai's and anthropic's own clients read the compaction streams this file's fakes send."""
    openai = pytest.importorskip("openai")
    anthropic_sdk = pytest.importorskip("anthropic")
    with LongrunServer() as server:
        server.add("resp_c", responses_turn("resp_c", "after", "c1"))
        server.add("m_c", anthropic_turn("after", "c1"))
        oa = openai.OpenAI(api_key="k", base_url=server.url + "/v1", max_retries=0)
        events = list(oa.responses.create(model="gpt-5.5", input="hi", stream=True,
                                          context_management=[{"type": "compaction", "compact_threshold": 100000}]))
        an = anthropic_sdk.Anthropic(api_key="k", base_url=server.url, max_retries=0)
        with an.beta.messages.stream(model="claude-sonnet-4-6", max_tokens=100, betas=["compact-2026-01-12"],
                                     messages=[{"role": "user", "content": "hi"}],
                                     context_management={"edits": [{"type": "compact_20260112", "trigger": {
                                         "type": "input_tokens", "value": 100000}}]}) as stream:
            message = stream.get_final_message()
        bodies = [r["body"] for r in server.requests]
        beta = server.requests[1]["headers"]["anthropic-beta"]
    final = events[-1].response
    assert [o.type for o in final.output] == ["compaction", "message"]
    assert final.output[0].encrypted_content == "enc-c1"
    assert bodies[0]["context_management"] == [{"type": "compaction", "compact_threshold": 100000}]
    assert [b.type for b in message.content] == ["compaction", "text"]
    assert (message.content[0].content, message.content[0].encrypted_content) == ("Summary c1", "enc-c1")
    assert beta == "compact-2026-01-12"


# -- pinned fixtures (tests/fixtures/*/README.md cite their sources) -------------------------------------------


def _fixture(folder, name):
    import os

    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", folder, name), "rb") as handle:
        return handle.read()


def test_responses_compaction_fixture_at_every_byte_split():
    from agenthub.providers import openai_responses
    from conftest import every_split, run_parser, strip_ids

    data = _fixture("openai_responses", "compaction_then_text.sse")
    whole = run_parser(openai_responses.parse_stream, [data], "openai-responses")
    check_stream(whole)
    assert collect(whole)["content_items"] == [
        {"type": "compaction", "fidelity": {"format": "openai", "item": {
            "type": "compaction", "id": "cmp_01", "encrypted_content": "gAAAAABpc29tZS1vcGFxdWUtY29tcGFjdGlvbg=="}}},
        {"type": "text", "text": "The migration plan is in three steps."}]
    for chunks in every_split(data):
        assert strip_ids(run_parser(openai_responses.parse_stream, chunks, "openai-responses")) == strip_ids(whole)


def test_anthropic_compaction_fixture_at_every_byte_split_and_its_cost():
    from agenthub.providers import anthropic
    from conftest import every_split, run_parser, strip_ids

    data = _fixture("anthropic", "compaction_iterations.sse")
    whole = run_parser(anthropic.parse_stream, [data], "anthropic")
    check_stream(whole)
    block = {"type": "compaction", "content": "Summary: the user is migrating a database; steps one and two are done.",
             "encrypted_content": "Eo8BCkYIBRgCKkB2"}
    assert collect(whole)["content_items"] == [
        {"type": "compaction", "fidelity": {"format": "anthropic", "block": block}},
        {"type": "text", "text": "Step three: switch the reads."}]
    usage = whole[-1]["usage_metadata"]
    assert usage == {"cached_tokens": 4000, "prompt_tokens": 152000 + 21000, "thoughts_tokens": None,
                     "response_tokens": 2100 + 600}
    by_pass = cost("claude-sonnet-4-6", {"cached_tokens": 0, "prompt_tokens": 152000, "thoughts_tokens": None,
                                         "response_tokens": 2100}) + \
        cost("claude-sonnet-4-6", {"cached_tokens": 4000, "prompt_tokens": 21000, "thoughts_tokens": None,
                                   "response_tokens": 600})
    assert cost("claude-sonnet-4-6", usage) == pytest.approx(by_pass)
    for chunks in every_split(data):
        assert strip_ids(run_parser(anthropic.parse_stream, chunks, "anthropic")) == strip_ids(whole)


def test_a_trace_says_where_the_context_was_compacted():
    from agenthub.tracer import render_text

    history = [user("t1"), {"role": "assistant", "content_items": [
        {"type": "compaction", "fidelity": {"format": "anthropic", "block": {"type": "compaction", "content": "s"}}},
        {"type": "text", "text": "a1"}]}]
    text = render_text(history, {})
    assert "  Compaction: the context before it, compacted server-side (anthropic)\n  Text: a1" in text
    assert '"content": "s"' not in text  # the opaque block is not printed
