"""A server that sends lone surrogates in its JSON (``"\\ud83d"``): an emoji's two UTF-16 halves split across two
deltas by a gateway that slices strings by UTF-16 index, or a half with no partner.  The events keep what each
delta said; the collected message holds the character (or U+FFFD for a lone half); every writer survives."""

import io
import json
import logging
import os
import subprocess
import sys

import pytest

from agenthub import AutoLLMClient, check_stream, collect, jobs
from agenthub.apps.conversations import Log
from agenthub.errors import ToolCallArgumentParseError
from agenthub.apps.terminal import Printer
from agenthub.apps.viewer import page
from agenthub.jobs import read_output
from agenthub.jobs.batch import _write_state
from agenthub.jobs.jobfile import dumps_row
from agenthub.stream import whole_text
from agenthub.tracer import load_trace, save_trace
from sse_server import Answer, SSEServer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
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


def _strict_utf8():
    return io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="strict", newline="")


def _delta(kind, text):
    return {"role": "assistant", "event_type": "delta", "content_items": [{"type": kind, kind: text}],
            "usage_metadata": None, "finish_reason": None, "created_at": 1}


def test_the_printer_writes_the_character_and_u_fffd_for_a_lone_half_to_a_strict_utf8_stream():
    out, err = _strict_utf8(), _strict_utf8()
    printer = Printer(out, err=err, color=False)
    for kind, text in [("text", "A"), ("text", "\ud83d"), ("text", "\ude00B\ud83d"), ("thinking", "\ud83e"),
                       ("thinking", "\udd14?\ude00"), ("text", "x\ud83d")]:
        printer.event(_delta(kind, text))
    printer.break_line()
    assert out.buffer.getvalue() == "A\U0001F600B\ufffd\nx\ufffd\n".encode("utf-8")
    assert err.buffer.getvalue() == "[thinking] \U0001F914?\ufffd\n".encode("utf-8")


def _cli(server, *extra):
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
    env.update(PYTHONPATH=ROOT, NO_PROXY="*", PYTHONIOENCODING="utf-8", OPENAI_API_KEY="sk-local")
    return subprocess.run([sys.executable, "-m", "agenthub", "chat", "m", "--client-type", "openai-chat",
                           "--base-url", server.url + "/v1", "hello"] + list(extra),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=ROOT, timeout=60)


def test_agenthub_chat_prints_the_character_and_json_events_as_sent():
    """Before: ``error: UnicodeEncodeError`` after "A", exit 1, the rest of the answer lost."""
    with SSEServer() as server:
        server.answers.append(Answer([chat_body("A", "\ud83d", "\ude00", "B", "\ud83d")]))
        server.answers.append(Answer([chat_body("\ud83d", "\ude00")]))
        shown = _cli(server)
        as_json = _cli(server, "--json")
    assert (shown.returncode, shown.stdout) == (0, "A\U0001F600B\ufffd\n".encode("utf-8")), shown.stderr
    assert as_json.returncode == 0, as_json.stderr
    lines = as_json.stdout.splitlines()
    assert [json.loads(line)["content_items"] for line in lines[1:3]] == [[{"type": "text", "text": "\ud83d"}],
                                                                         [{"type": "text", "text": "\ude00"}]]
    assert b'"text": "\\ud83d"' in lines[1] and b'"text": "\\ude00"' in lines[2]


def test_the_conversation_log_keeps_a_lone_surrogate_it_cannot_store_raw():
    log = Log()
    try:
        conversation = log.start("m", "openai-chat", "127.0.0.1", None)
        answer = {"role": "assistant", "content_items": [{"type": "text", "text": "ok", "fidelity": {"sig": "s\ud83d"}}],
                  "usage_metadata": None, "finish_reason": "stop"}
        log.add_turn(conversation, "m", USER, answer, None)
        assert log.history(conversation) == [USER, answer]
    finally:
        log.close()


def test_a_trace_with_a_lone_surrogate_is_written_and_reads_back_the_same(tmp_path):
    tool = {"role": "user", "content_items": [{"type": "tool_result", "text": "bytes \udcff", "tool_call_id": "c1"}]}
    paths = save_trace("t1", "m", [USER, tool], {}, root=str(tmp_path))
    assert load_trace(paths["json"])["history"] == [USER, tool]
    with open(paths["json"], "rb") as handle:
        assert b'"text": "bytes \\udcff"' in handle.read()
    with open(paths["txt"], "rb") as handle:
        assert b"bytes \\udcff" in handle.read()


def test_agenthub_trace_show_prints_a_lone_surrogate_as_its_escape(tmp_path, capsys):
    """Before: ``error: UnicodeEncodeError``, exit 1 (a strict UTF-8 stdout)."""
    from agenthub.__main__ import main

    tool = {"role": "user", "content_items": [{"type": "tool_result", "text": "bytes \udcff", "tool_call_id": "c1"}]}
    paths = save_trace("t1", "m", [USER, tool], {}, root=str(tmp_path))
    assert main(["trace", "show", paths["json"]]) == 0
    shown = capsys.readouterr().out
    assert "bytes \\udcff" in shown
    with open(paths["txt"], encoding="utf-8") as handle:
        assert handle.read() == shown


def test_the_viewer_page_embeds_a_lone_surrogate_as_its_escape():
    data = page({"history": [{"role": "user", "content_items": [{"type": "text", "text": "b \udcff"}]}]})
    assert b'"text": "b \\udcff"' in data


def test_a_batch_state_file_keeps_a_lone_surrogate_as_its_escape(tmp_path):
    path = str(tmp_path / "state.json")
    _write_state(path, {"last": {"message": "odd \ud83d"}})
    with open(path, "rb") as handle:
        assert handle.read() == b'{\n "last": {\n  "message": "odd \\ud83d"\n }\n}\n'
    with open(path, encoding="utf-8") as handle:
        assert json.load(handle) == {"last": {"message": "odd \ud83d"}}


def test_ray_columns_carry_a_lone_surrogate_as_its_escape():
    """Arrow keeps strings as UTF-8 (``pyarrow.array(["\\ud83d"])`` raises): the JSON columns escape it."""
    from agenthub.ray import columns_of, to_row

    row = {"id": "r1", "message": None, "error": {"type": "UpstreamError", "message": "no \ud83d here"}}
    columns = columns_of([row])
    assert columns["error"] == ['{"type": "UpstreamError", "message": "no \\ud83d here"}']
    columns["error"][0].encode("utf-8")
    assert to_row({key: values[0] for key, values in columns.items()})["error"] == row["error"]


def _text_then_call(*texts):
    """A Chat Completions turn: ``texts`` as deltas, then a call of ``where`` (c1)."""
    chunks = [{"choices": [{"index": 0, "delta": {"content": t}, "finish_reason": None}]} for t in texts]
    chunks += [{"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "c1", "type": "function",
                                                                   "function": {"name": "where", "arguments": "{}"}}]},
                             "finish_reason": None}]},
               {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}]
    return "".join("data: " + json.dumps(c) + "\n\n" for c in chunks).encode() + b"data: [DONE]\n\n"


def test_a_journaled_tool_run_keeps_the_character_and_sends_it_back(tmp_path):
    """Before: the run's assistant message held the two halves: journaled on SQLite it was a JournalError
    ("two lone surrogates side by side"), and without a journal the next turn was a ConfigError."""
    from agenthub import tool

    @tool
    def where() -> str:
        """Where we are."""
        return "Paris"

    for journal in ("sqlite:///" + str(tmp_path / "state.db"), None):
        with SSEServer() as server:
            server.answers.append(Answer([_text_then_call("On it ", "\ud83d", "\ude00")]))
            server.answers.append(Answer([chat_body("Paris ", "\ud83c", "\uddeb\ud83c", "\uddf7")]))
            client = AutoLLMClient("m", client_type="openai-chat", base_url=server.url + "/v1", api_key="k")
            kwargs = {} if journal is None else {"journal": journal, "run_id": "emoji-1"}
            result = client.run([USER], tools=[where], **kwargs).result()
            sent = server.requests[1]["body"]["messages"][1]
        assert result.messages[0]["content_items"][0] == {"type": "text", "text": "On it \U0001F600"}
        assert result.final["content_items"] == [{"type": "text", "text": "Paris \U0001F1EB\U0001F1F7"}]
        assert sent["content"] == "On it \U0001F600"


# -- tool-call arguments -------------------------------------------------------------------------------------------

SAY = {"name": "say", "description": "Say it.", "parameters": {"type": "object", "properties": {"text": {"type": "string"}}}}


def chat_call_body(*fragments):
    chunks = [{"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "c1", "type": "function",
                                                                  "function": {"name": "say", "arguments": ""}}]},
                            "finish_reason": None}]}]
    chunks += [{"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": f}}]},
                             "finish_reason": None}]} for f in fragments]
    chunks += [{"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}]
    return "".join("data: " + json.dumps(c) + "\n\n" for c in chunks).encode() + b"data: [DONE]\n\n"


def anthropic_call_body(*fragments):
    events = [("message_start", {"type": "message_start", "message": {
                  "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-x", "content": [],
                  "usage": {"input_tokens": 3, "output_tokens": 0}}}),
              ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {
                  "type": "tool_use", "id": "c1", "name": "say", "input": {}}})]
    events += [("content_block_delta", {"type": "content_block_delta", "index": 0,
                                        "delta": {"type": "input_json_delta", "partial_json": f}}) for f in fragments]
    events += [("content_block_stop", {"type": "content_block_stop", "index": 0}),
               ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "tool_use"},
                                  "usage": {"output_tokens": 2}}),
               ("message_stop", {"type": "message_stop"})]
    return "".join("event: {}\ndata: {}\n\n".format(name, json.dumps(data)) for name, data in events).encode()


CALL_WIRES = {"openai-chat": (chat_call_body, "/v1"), "anthropic": (anthropic_call_body, "")}


@pytest.mark.parametrize("wire", sorted(CALL_WIRES))
def test_a_character_split_between_two_argument_fragments_is_that_character(wire):
    """Before: ToolCallArgumentParseError ("hold a lone surrogate") for arguments that are fine."""
    body, path = CALL_WIRES[wire]
    with SSEServer() as server:
        server.answers.append(Answer([body('{"text": "hi \ud83d', '\ude00"}')]))
        client = AutoLLMClient("m", client_type=wire, base_url=server.url + path, api_key="k")
        events = list(client.streaming_response([USER], {"tools": [SAY]}))
    check_stream(events)
    fragments = [e["content_items"][0]["arguments"] for e in events
                 if e["content_items"] and e["content_items"][0]["type"] == "partial_tool_call"]
    assert "".join(fragments) == '{"text": "hi \ud83d\ude00"}'  # each fragment: what the server sent
    assert collect(events)["content_items"] == [
        {"type": "tool_call", "name": "say", "arguments": {"text": "hi \U0001F600"}, "tool_call_id": "c1"}]


@pytest.mark.parametrize("wire", sorted(CALL_WIRES))
def test_a_half_alone_in_arguments_is_still_refused(wire):
    body, path = CALL_WIRES[wire]
    with SSEServer() as server:
        server.answers.append(Answer([body('{"text": "hi \ud83d', '!"}')]))
        client = AutoLLMClient("m", client_type=wire, base_url=server.url + path, api_key="k")
        with pytest.raises(ToolCallArgumentParseError) as info:
            list(client.streaming_response([USER], {"tools": [SAY]}))
    assert str(info.value).startswith("arguments of tool call 'say' (c1) hold a lone surrogate (a string no UTF-8 can "
                                      "carry)")
    assert (info.value.tool_name, info.value.tool_call_id) == ("say", "c1")


def test_batch_status_shows_an_engines_error_with_a_lone_surrogate(monkeypatch, capsys):
    """Before: UnicodeEncodeError on a strict UTF-8 stdout, for ``--json`` and for the summary."""
    from agenthub.__main__ import main
    from agenthub.jobs import batch

    status = batch.BatchStatus("ended", 1, [batch.BatchInfo("openai", "m", "chat", 1, "batch_1", "failed", "failed",
                                                            {}, ["line 1: bad \ud83d"])])
    monkeypatch.setattr(batch, "load", lambda path, **kwargs: type("Job", (), {"status": lambda self: status})())
    assert main(["batch", "status", "state.json", "--json"]) == 0
    out = capsys.readouterr()[0]
    assert '"errors": ["line 1: bad \\ud83d"]' in out
    assert json.loads(out)["batches"][0]["errors"] == ["line 1: bad \ud83d"]
    assert main(["batch", "status", "state.json"]) == 0
    assert capsys.readouterr()[0] == ("ended: 1 row(s) in 1 batch(es)\n"
                                      "  openai m batch_1 (1 rows): failed; line 1: bad \\ud83d\n")


class _Text(str):
    """A str subclass: stored like any str, but its size is not a plain str's (the one-byte look does not apply)."""


def test_text_is_utf8_for_every_kind_of_str_storage():
    from agenthub.stream import text_is_utf8
    from agenthub.types import lone_surrogate_in

    cases = [("", True), ("plain", True), ("café\x00\xff" * 300, True), ("\u0100", True), ("日本" * 500, True),
             ("\U0001f600", True), ("\ud83d", False), ("\ude00", False), ("x\ud83d\ude00", False),
             ("café" * 300 + "\ud800", False), ("日本" + "\udfff", False), ("\U0001f600\ud800", False),
             ("Ā" * 3 + "é", True), ("Āé"[1:] * 1000, True), (_Text("café"), True), (_Text("a\ud800"), False)]
    assert [text_is_utf8(text) for text, _ in cases] == [can for _, can in cases]
    assert [lone_surrogate_in(text) for text, _ in cases] == [not can for _, can in cases]
