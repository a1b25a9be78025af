"""A server that sends lone surrogates in its JSON (``"\\ud83d"``): an emoji's two UTF-16 halves split across two
deltas by a gateway that slices strings by UTF-16 index, or a half with no partner.  The events keep what each
delta said; the collected message holds the character (or U+FFFD for a lone half); every writer survives."""

import json
import logging

import pytest

from agenthub import AutoLLMClient, collect, jobs
from agenthub.jobs import read_output
from agenthub.jobs.jobfile import dumps_row
from agenthub.stream import whole_text
from sse_server import Answer, SSEServer

USER = {"role": "user", "content_items": [{"type": "text", "text": "Hi"}]}


def chat_body(*texts):
    chunks = [{"choices": [{"index": 0, "delta": {"content": t}, "finish_reason": None}]} for t in texts]
    chunks += [{"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
               {"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 2}}]
    return "".join("data: " + json.dumps(c) + "\n\n" for c in chunks).encode() + b"data: [DONE]\n\n"


def anthropic_body(*texts):
    events = [("message_start", {"type": "message_start", "message": {
                  "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-x", "content": [],
                  "usage": {"input_tokens": 3, "output_tokens": 0}}}),
              ("content_block_start", {"type": "content_block_start", "index": 0,
                                       "content_block": {"type": "text", "text": ""}})]
    events += [("content_block_delta", {"type": "content_block_delta", "index": 0,
                                        "delta": {"type": "text_delta", "text": t}}) for t in texts]
    events += [("content_block_stop", {"type": "content_block_stop", "index": 0}),
               ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                                  "usage": {"output_tokens": 2}}),
               ("message_stop", {"type": "message_stop"})]
    return "".join("event: {}\ndata: {}\n\n".format(name, json.dumps(data)) for name, data in events).encode()


WIRES = {"openai-chat": (chat_body, "/v1"), "anthropic": (anthropic_body, "")}


def texts_of(events):
    return [item["text"] for event in events for item in event["content_items"] if item["type"] == "text"]


@pytest.mark.parametrize("wire", sorted(WIRES))
def test_halves_split_across_two_deltas_are_one_character_in_the_message_and_the_next_turn_sends_it(wire):
    body, path = WIRES[wire]
    with SSEServer() as server:
        halves = body("A", "\ud83d", "\ude00", "B")
        assert b'"\\ud83d"' in halves and b'"\\ude00"' in halves  # what such a gateway writes
        server.answers.append(Answer([halves]))
        server.answers.append(Answer([body("ok")]))
        client = AutoLLMClient("m", client_type=wire, base_url=server.url + path, api_key="k")
        events = list(client.streaming_response([USER]))
        assert texts_of(events) == ["A", "\ud83d", "\ude00", "B"]  # each event: what its delta said
        message = collect(events)
        assert message["content_items"] == [{"type": "text", "text": "A\U0001F600B"}]
        assert texts_of(list(client.streaming_response([USER, message, USER]))) == ["ok"]
        sent = server.requests[1]["body"]
    said = sent["messages"][1]["content"]
    assert said in ("A\U0001F600B", [{"type": "text", "text": "A\U0001F600B"}])


@pytest.mark.parametrize("wire", sorted(WIRES))
def test_a_stateful_history_holds_the_character(wire):
    body, path = WIRES[wire]
    with SSEServer() as server:
        server.answers.append(Answer([body("\ud83d", "\ude00")]))
        server.answers.append(Answer([body("ok")]))
        client = AutoLLMClient("m", client_type=wire, base_url=server.url + path, api_key="k")
        assert client.response_stateful(USER)["content_items"] == [{"type": "text", "text": "\U0001F600"}]
        assert client.response_stateful(USER)["content_items"] == [{"type": "text", "text": "ok"}]
    assert [m["content_items"] for m in client.get_history()][1] == [{"type": "text", "text": "\U0001F600"}]


@pytest.mark.parametrize("wire", sorted(WIRES))
def test_a_half_without_its_partner_is_u_fffd_in_the_message_with_a_warning(wire, caplog):
    body, path = WIRES[wire]
    with SSEServer() as server:
        server.answers.append(Answer([body("x\ud83d", "y", "\ude00")]))
        client = AutoLLMClient("m", client_type=wire, base_url=server.url + path, api_key="k")
        with caplog.at_level(logging.WARNING, logger="agenthub"):
            events = list(client.streaming_response([USER]))
            message = collect(events)
    assert texts_of(events) == ["x\ud83d", "y", "\ude00"]
    assert message["content_items"] == [{"type": "text", "text": "x\ufffdy\ufffd"}]
    assert [r.getMessage() for r in caplog.records] == [
        "the answer's text held 2 lone surrogate(s) (half of a UTF-16 pair, without its other half): each is U+FFFD "
        "in the collected message"]


def test_whole_text():
    assert whole_text("plain") == "plain"
    assert whole_text("caf\xe9 \U0001F600 \ufffd") == "caf\xe9 \U0001F600 \ufffd"
    assert whole_text("\ud83d\ude00") == "\U0001F600"
    assert whole_text("\ude00\ud83d") == "\ufffd\ufffd"  # low then high: no pair
    assert whole_text("\ud83d\ud83d\ude00!") == "\ufffd\U0001F600!"
    assert whole_text("\udcff") == "\ufffd"


def test_thinking_halves_are_joined_too():
    events = [{"role": "assistant", "event_type": "start", "content_items": [], "usage_metadata": None,
               "finish_reason": None, "created_at": 1}]
    for piece in ("\ud83e", "\udd14", "hm"):
        events.append({"role": "assistant", "event_type": "delta", "content_items": [{"type": "thinking",
                       "thinking": piece}], "usage_metadata": None, "finish_reason": None, "created_at": 1})
    events.append({"role": "assistant", "event_type": "stop", "content_items": [], "usage_metadata": None,
                   "finish_reason": "stop", "created_at": 2})
    assert collect(events)["content_items"] == [{"type": "thinking", "thinking": "\U0001F914hm"}]


# -- writers -------------------------------------------------------------------------------------------------


def test_dumps_row_writes_a_lone_surrogate_as_its_escape_and_reads_back_the_same():
    row = {"id": "r1", "error": {"type": "UpstreamError", "message": "caf\xe9 \ud83d|\udcff"}}
    data = dumps_row(row)
    assert data == b'{"id":"r1","error":{"type":"UpstreamError","message":"caf\xc3\xa9 \\ud83d|\\udcff"}}\n'
    assert json.loads(data) == row


def test_a_job_whose_answer_and_error_hold_lone_surrogates_writes_every_row(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local")
    with SSEServer() as server:
        server.answers.append(Answer([chat_body("A", "\ud83d", "\ude00", "\ud83d")]))
        server.answers.append(Answer([b'{"error": {"message": "no \\ud83d here", "type": "invalid_request_error"}}'],
                                     status=400, headers={"Content-Type": "application/json"}))
        src = tmp_path / "in.jsonl"
        src.write_text("".join(json.dumps({"id": "r{}".format(i), "model": "m", "messages": [USER],
                                           "client_type": "openai-chat", "base_url": server.url + "/v1"}) + "\n"
                               for i in range(2)))
        out = str(tmp_path / "out.jsonl")
        summary = jobs.run(str(src), out, workers=1, progress=False)
    assert (summary.done, summary.failed) == (1, 1)
    rows = {row["id"]: row for row in read_output(out)}
    assert rows["r0"]["message"]["content_items"] == [{"type": "text", "text": "A\U0001F600\ufffd"}]
    assert rows["r1"]["error"]["message"].startswith("no \ud83d here (client=openai-chat, status=400")
    with open(out, "rb") as handle:
        data = handle.read()
    assert b'"text":"A\xf0\x9f\x98\x80\xef\xbf\xbd"' in data and b'"message":"no \\ud83d here (' in data
