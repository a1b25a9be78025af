"""Issue 29 D1: the batch engine against hostile or broken inputs (results downloads, result keys, state
files, input files changed after submit, concurrent runs, odd row ids, huge job lines)."""

import json
import sys

import pytest

from agenthub.errors import StreamProtocolError  # noqa: F401
from agenthub.jobs.backends._wire import BadLine, Wire
from agenthub.providers._common import Endpoint


class _Body(object):
    def __init__(self, chunks):
        self.chunks = chunks
        self.read = 0
        self.closed = False

    def __iter__(self):
        for chunk in self.chunks:
            self.read += 1
            yield chunk

    def close(self):
        self.closed = True


def _wire(chunks, limit=None):
    wire = Wire("anthropic", Endpoint("anthropic", "http://127.0.0.1:9", "k-0123456789"))
    body = _Body(chunks)
    wire.raw = lambda *args, **kwargs: body
    if limit is not None:
        wire.max_line_bytes = limit
    return wire, body


def _lines(chunks, limit=None):
    wire, body = _wire(chunks, limit)
    out = [item.reason if isinstance(item, BadLine) else item for item in wire.lines("http://127.0.0.1:9/r")]
    assert body.closed
    return out


def test_results_lines_come_whole_whatever_the_cuts():
    text = b'{"a": 1}\n\n{"b": "x\\ny"}\n{"c": [1, 2]}\nnot json\n{"d": 4}'
    for size in (1, 2, 3, 5, 7, len(text)):
        chunks = [text[i:i + size] for i in range(0, len(text), size)]
        assert _lines(chunks) == [{"a": 1}, {"b": "x\ny"}, {"c": [1, 2]},
                                  "anthropic: line 5 of the batch results is not JSON", {"d": 4}], size


def test_one_long_results_line_is_read_in_linear_work():
    """64 KiB pieces of a 32 MB line: each piece is searched once and the line joined once (work counted, not
    timed: every find/split/index on a bytes object of this thread, by its size)."""
    line = b'{"custom_id": "r1", "pad": "' + b"A" * (32 << 20) + b'"}\n'
    chunks = [line[i:i + 65536] for i in range(0, len(line), 65536)]
    scanned = [0]

    def profile(frame, event, arg):
        if event == "c_call" and getattr(arg, "__name__", "") in ("find", "split", "index", "rfind", "partition"):
            target = getattr(arg, "__self__", None)
            if isinstance(target, (bytes, bytearray)):
                scanned[0] += len(target)

    wire, body = _wire(chunks)
    sys.setprofile(profile)
    try:
        items = list(wire.lines("http://127.0.0.1:9/r"))
    finally:
        sys.setprofile(None)
    assert [item["custom_id"] for item in items] == ["r1"] and len(items[0]["pad"]) == 32 << 20
    assert scanned[0] < 3 * len(line), scanned  # before: the whole unfinished line again for every piece


def test_a_line_above_the_limit_is_a_bad_line_not_kept_and_the_next_lines_still_come():
    chunks = [b'{"a": 1}\n{"big": "', b"x" * 40, b"x" * 40, b'"}\n{"b": 2}\n', b'{"tail": "' + b"y" * 90]
    assert _lines(chunks, limit=64) == [{"a": 1}, "anthropic: line 2 of the batch results is longer than 64 bytes",
                                        {"b": 2}, "anthropic: line 4 of the batch results is longer than 64 bytes"]
    # a long line is read past in bounded memory: one BadLine, nothing kept, the next line comes
    wire, body = _wire(iter([b'{"a": 1}\n'] + [b"z" * 1000] * 60 + [b'\n{"b": 2}\n']), limit=4096)
    items = list(wire.lines("http://127.0.0.1:9/r"))
    assert [i if not isinstance(i, BadLine) else i.reason for i in items] == [
        {"a": 1}, "anthropic: line 2 of the batch results is longer than 4096 bytes", {"b": 2}]


def test_a_results_line_that_never_ends_stops_the_download():
    """Round 3's B04: an endless line was read past forever (bounded memory, no bound in time). Past 16 times
    the line limit the download stops, with a BadLine saying so, and the body is closed."""
    import itertools

    endless = itertools.islice(itertools.repeat(b"z" * 1000), 5000)  # (finite: before the fix it read all 5 MB)
    wire, body = _wire(itertools.chain([b'{"a": 1}\n{"x": "'], endless), limit=4096)
    items = list(wire.lines("http://127.0.0.1:9/r"))
    assert [i if not isinstance(i, BadLine) else i.reason for i in items] == [
        {"a": 1}, "anthropic: line 2 of the batch results goes on past 65536 bytes: the download stopped there, the "
                  "rest of the results was not read"]
    assert body.closed and body.read <= 70  # 64 KiB and a little more read, never the endless rest


# -- result keys (B05) -----------------------------------------------------------------------------------------

from agenthub.jobs.backends import gemini as gemini_backend  # noqa: E402

_BAD_KEY = "gemini: an embeddings batch answer with a key agenthub did not make"
_ONE = {"embedding": {"values": [1.0]}}
_TWO = {"embedding": {"values": [2.0]}}


@pytest.mark.parametrize("items", [
    [("r2#0/1", "ok", _ONE)],                            # claims a one-part row: r2 was sent as two parts
    [("r2#\u00b2/2", "ok", _ONE)],                       # a non-ASCII digit (isdigit() says yes, int() fails)
    [("r2#5/2", "ok", _ONE)],
    [("r2#0/2", "ok", _ONE), ("r2#0/2", "ok", _TWO)],    # the same part twice: still one part of two
    [("nobody#0/1", "ok", _ONE)],                        # a row that was not submitted
])
def test_an_embeddings_result_key_that_disagrees_with_the_submission_is_reported_never_applied(items):
    out = list(gemini_backend._assembled(iter(items), {"r2": 2}))
    assert all(outcome == "bad" for _, outcome, _ in out) and len(out) >= 1
    assert {payload for _, _, payload in out} <= {_BAD_KEY, "gemini: an embeddings batch answer repeats part "
                                                            "'r2#0/2'"}


def test_embeddings_parts_make_a_row_when_all_submitted_parts_came_and_a_repeat_is_passed_on_as_such():
    items = [("r2#1/2", "ok", _TWO), ("r2#0/2", "ok", _ONE), ("r2#0/2", "ok", _ONE)]
    out = list(gemini_backend._assembled(iter(items), {"r2": 2}))
    assert out == [("r2", "ok", {"embeddings": [{"values": [1.0]}, {"values": [2.0]}]}), ("r2", "ok", _ONE)]


def test_the_submitted_part_counts_travel_in_the_state(monkeypatch):
    sent = {}

    class _W(object):
        client_type = "gemini"

        def json(self, method, url, body=None, **kwargs):
            sent["body"] = body
            return {"name": "batches/b1"}

    monkeypatch.setattr(gemini_backend, "version_root", lambda wire: "http://127.0.0.1:9/v1beta")
    entries = [gemini_backend._dumps({"key": "r1", "parts": [{"content": 1}]}),
               gemini_backend._dumps({"key": "r2", "parts": [{"content": 1}, {"content": 2}]})]
    remote = gemini_backend.GEMINI.create(_W(), "gemini-embedding-001", "embeddings", entries, "n.jsonl", None)
    assert remote == {"batch_name": "batches/b1", "input_file": None, "api": "embeddings", "parts": {"r1": 1, "r2": 2}}


# -- fetch: unknown and repeated result keys (B05), through the fake engine ------------------------------------

import os  # noqa: E402

from agenthub.jobs import batch as B  # noqa: E402
from agenthub.jobs import read_output  # noqa: E402
from batch_fakes import BatchFake, point_at  # noqa: E402


@pytest.fixture
def fake(monkeypatch):
    with BatchFake(polls=1) as server:
        point_at(monkeypatch, server)
        yield server


def _user(text):
    return [{"role": "user", "content_items": [{"type": "text", "text": text}]}]


def _write(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return str(path)


def _submitted(fake, tmp_path, n=3):
    rows = [{"id": "u%d" % i, "model": "gpt-4.1-mini", "client_type": "openai-chat", "messages": _user("t%d" % i)}
            for i in range(n)]
    job = B.submit(_write(tmp_path / "in.jsonl", rows), backend="openai")
    assert job.wait(interval=0.01, timeout=10).done
    return job, list(fake.batches.values())[0]


def test_unknown_and_repeated_result_keys_are_reported_and_never_applied(fake, tmp_path):
    job, batch = _submitted(fake, tmp_path)
    lines = fake.files[batch.output_file_id]["bytes"].splitlines()
    first = json.loads(lines[0])
    forged = dict(json.loads(lines[1]), custom_id=first["custom_id"])  # u1's answer under u0's key, after u0's
    stranger = dict(json.loads(lines[2]), custom_id="nobody")
    fake.files[batch.output_file_id]["bytes"] = b"\n".join(
        [lines[0], json.dumps(forged).encode(), json.dumps(stranger).encode(), lines[2]]) + b"\n"
    summary = job.fetch(str(tmp_path / "out.jsonl"))
    assert (summary.done, summary.unknown, summary.duplicates, summary.missing) == (2, 1, 1, ["u1"])
    written = {r["id"]: r for r in read_output(str(tmp_path / "out.jsonl"))}
    assert sorted(written) == ["u0", "u2"]
    answer = first["response"]["body"]["choices"][0]["message"]["content"]
    assert written["u0"]["message"]["content_items"] == [{"type": "text", "text": answer}]


# -- a malformed state file (B07) ------------------------------------------------------------------------------

import copy  # noqa: E402

from agenthub.errors import ConfigError  # noqa: E402


def _edit(state, change):
    state = copy.deepcopy(state)
    change(state)
    return state


@pytest.mark.parametrize("label, change, field", [
    ("unknown backend", lambda s: s["batches"][0].update(backend="nope"), "batches[0].backend"),
    ("a record without fields", lambda s: s.update(batches=[{"remote": {"batch_id": "b"}}]), "batches[0].backend"),
    ("ids not a list", lambda s: s["batches"][0].update(ids=5), "batches[0].ids"),
    ("an id not a string", lambda s: s["batches"][0].update(ids=["u0", 7]), "batches[0].ids"),
    ("remote not an object", lambda s: s["batches"][0].update(remote="batch_1"), "batches[0].remote"),
    ("model not a string", lambda s: s["batches"][0].update(model=["gpt"]), "batches[0].model"),
    ("custom_ids not an object", lambda s: s["batches"][0].update(custom_ids=[1]), "batches[0].custom_ids"),
    ("batch_id with dot segments", lambda s: s["batches"][0]["remote"].update(batch_id="../../../steal"),
     "batches[0].remote.batch_id"),
    ("batch_id a dot segment", lambda s: s["batches"][0]["remote"].update(batch_id=".."), "batches[0].remote.batch_id"),
    ("a record not an object", lambda s: s.update(batches=[5]), "batches[0]"),
    ("job backend unknown", lambda s: s.update(backend=3), "backend"),
    ("input_path missing", lambda s: s.pop("input_path"), "input_path"),
    ("a create marker without its time", lambda s: s["batches"][0].update(creating={"name": "n", "requests": 2}),
     "batches[0].creating"),
    ("a create marker's file id a path", lambda s: s["batches"][0].update(creating={
        "at": 1.0, "name": "n", "requests": 2, "input_file_id": "../x"}), "batches[0].creating"),
    ("a create marker's time not finite", lambda s: s["batches"][0].update(creating={
        "at": float("inf"), "name": "n", "requests": 2}), "batches[0].creating"),
    ("a create call's tag not 8 hex digits", lambda s: s["batches"][0].update(tag="ab-cd"), "batches[0].tag"),
    ("recovered not a bool", lambda s: s["batches"][0].update(recovered="yes"), "batches[0].recovered"),
    ("not_ours not a list of ids", lambda s: s.update(not_ours="msgbatch_1"), "not_ours"),
])
def test_a_malformed_state_file_is_a_config_error_naming_the_file_and_field(fake, tmp_path, label, change, field):
    job, _ = _submitted(fake, tmp_path, n=2)
    with open(job.state_path) as handle:
        state = json.load(handle)
    bad = str(tmp_path / "bad.batch.json")
    with open(bad, "w") as handle:
        json.dump(_edit(state, change), handle)
    before = len(fake.requests) if hasattr(fake, "requests") else None
    with pytest.raises(ConfigError) as info:
        job2 = B.load(bad)
        job2.status()
        job2.fetch(str(tmp_path / "out.jsonl"))
    assert str(info.value).startswith("the batch state file {} is malformed: {} ".format(bad, field)), label
    if before is not None:
        assert len(fake.requests) == before


# -- an input file changed after submit (B09) ------------------------------------------------------------------


def test_fetch_refuses_an_input_whose_submitted_rows_changed_and_takes_one_that_only_grew(fake, tmp_path):
    job, _ = _submitted(fake, tmp_path, n=3)
    src = job.input_path
    with open(src) as handle:
        original = handle.read()
    state = json.load(open(job.state_path))
    assert sorted(state["row_sha256"]) == ["u0", "u1", "u2"] and all(len(v) == 32 for v in state["row_sha256"].values())
    edited = original.replace('"gpt-4.1-mini"', '"gpt-5.5-pro"', 1)
    for text, wanted in ((edited, "1 row(s) edited or gone: 'u0'"),
                         ("".join(original.splitlines(True)[1:]), "1 row(s) edited or gone: 'u0'")):
        with open(src, "w") as handle:
            handle.write(text)
        with pytest.raises(ConfigError) as info:
            B.load(job.state_path).fetch(str(tmp_path / "out.jsonl"))
        assert str(info.value).startswith("the input file {} changed since its rows were submitted ({})".format(
            src, wanted))
        assert not os.path.exists(str(tmp_path / "out.jsonl"))
    with open(src, "w") as handle:  # a row added after the submission is no change to the submitted ones
        handle.write(original + json.dumps({"id": "new", "model": "gpt-4.1-mini", "messages": _user("later")}) + "\n")
    summary = B.load(job.state_path).fetch(str(tmp_path / "out.jsonl"))
    assert summary.done == 3
    assert {r["model"] for r in read_output(str(tmp_path / "out.jsonl"))} == {"gpt-4.1-mini"}


# -- round 3's B08: the base64 of a base URL's user:password in what the batch commands print and write ------------


def test_an_echoed_credential_is_starred_in_results_lines_and_json_answers():
    """A server echoing ``Authorization: Basic base64(user:password)`` (what requests sends for a base URL's
    ``user:password@``) or the key: the results rows (``batch output``) and the JSON answers (``submit`` /
    ``status``: a batch's errors) hold ``***``."""
    import base64

    password = "pw-ADV3-in-base-url-K8j7H6"
    basic = base64.b64encode(("user:" + password).encode()).decode()
    wire = Wire("openai-chat", Endpoint("openai-chat", "http://user:{}@127.0.0.1:9/v1".format(password),
                                        "sk-echoed-key-0123456789"))
    echo = "you sent Basic {} and Bearer sk-echoed-key-0123456789 ({})".format(basic, password)
    line = json.dumps({"custom_id": "r1", "response": {"status_code": 401, "body": {"error": {"message": echo}}}})
    wire.raw = lambda *args, **kwargs: _Body([line.encode() + b"\n", line.encode()])
    rows = list(wire.lines("http://127.0.0.1:9/r"))
    assert [row["response"]["body"]["error"]["message"] for row in rows] == ["you sent Basic *** and *** (***)"] * 2
    deep = {"errors": {"data": [{"code": "x", "message": echo, echo: [echo]}]}}
    for _ in range(3000):  # a deep answer: walked without recursion
        deep = {"next": deep}
    wire._retry = lambda *args, **kwargs: deep
    answer = wire.json("GET", "http://127.0.0.1:9/v1/batches/b")
    for _ in range(3000):
        answer = answer["next"]
    assert answer == {"errors": {"data": [{"code": "x", "message": "you sent Basic *** and *** (***)",
                                           "you sent Basic *** and *** (***)": [
                                               "you sent Basic *** and *** (***)"]}]}}


def test_a_gateway_speaking_a_vendors_protocol_has_no_batch_engine_of_that_vendor(tmp_path, monkeypatch):
    """The engine's vendor is the client-type row's provider; a route of another vendor (its Route.provider)
    is refused before anything is sent, whichever engine (issue 36 item 1: no table of vendor names)."""
    from agenthub.errors import ConfigError
    from agenthub.jobs import batch as B

    monkeypatch.setenv("ZAI_API_KEY", "zai-test-key")
    monkeypatch.setenv("OPENROUTER_API_KEY", "or-test-key")
    rows = [{"id": "zai", "model": "glm-5.1", "client_type": "zai-anthropic", "messages": [
                {"role": "user", "content_items": [{"type": "text", "text": "x"}]}], "config": {"max_tokens": 5}},
            {"id": "or", "model": "anthropic/claude-sonnet-4.6", "messages": [
                {"role": "user", "content_items": [{"type": "text", "text": "x"}]}]}]
    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    with pytest.raises(ConfigError) as info:
        B.submit(str(path), backend="auto")
    text = str(info.value)
    assert "https://api.z.ai/api/anthropic, which is not Anthropic's own endpoint: no anthropic batch engine" in text
    assert "https://openrouter.ai/api/v1, which is not OpenAI's own endpoint: no openai batch engine" in text
    assert "zai-test-key" not in text and "or-test-key" not in text


def test_a_state_file_nested_past_the_stack_is_a_config_error(tmp_path):
    from agenthub.errors import ConfigError
    from agenthub.jobs import batch as B

    path = tmp_path / "in.jsonl.batch.json"
    path.write_text('{"agenthub_batch": 1, "batches": ' + "[" * 100000 + "]" * 100000 + "}")
    with pytest.raises(ConfigError) as caught:
        B.load(str(path))
    assert str(caught.value).startswith("the batch state file {} is not JSON (maximum recursion depth".format(path))


def test_gemini_counts_that_are_no_count_are_unknown_not_a_crash():
    import json

    from agenthub.jobs.backends import gemini

    operation = json.loads('{"metadata": {"state": "BATCH_STATE_RUNNING", "batchStats": {"requestCount": 1e999, '
                           '"successfulRequestCount": NaN, "failedRequestCount": "-3", "pendingRequestCount": [1]}}}')
    assert gemini.status_of(operation, "gemini")["counts"] == {"total": None, "succeeded": None, "failed": -3,
                                                               "pending": None}


def test_a_responses_answer_whose_status_is_no_string_is_read_not_a_type_error(monkeypatch):
    from agenthub import AutoLLMClient
    from agenthub.jobs.batch import answer_row
    from agenthub.jobs.jobfile import JobRow

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    client = AutoLLMClient("gpt-5.4-mini", client_type="openai-responses")
    for status in ([], {"a": 1}):
        body = {"id": "r", "object": "response", "status": status, "model": "m",
                "output": [{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "hi"}]}],
                "usage": {"input_tokens": 3, "output_tokens": 2}}
        row = answer_row(JobRow(id="a", model="gpt-5.4-mini", messages=[]), client.protocol, "openai-responses", body,
                         "openai")
        assert row["error"] is None and row["message"]["content_items"] == [{"type": "text", "text": "hi"}]


def test_a_result_item_of_a_shape_no_parser_foresaw_is_read_or_unreadable_not_a_crash():
    from agenthub.jobs.backends import gemini as gemini_backend
    from agenthub.jobs.backends import openai as openai_backend
    from agenthub.jobs.backends._base import outcomes

    coded = {"custom_id": "c", "response": None, "error": {"code": ["batch_expired"], "message": "m"}}
    assert list(outcomes([coded], lambda item: openai_backend.parse_line(item, "openai"))) == [
        ("c", "error", (None, {"error": {"code": ["batch_expired"], "message": "m"}}))]  # (a TypeError: unhashable)
    keyless = {"metadata": "k", "response": {}}
    assert list(outcomes([keyless], lambda item: gemini_backend.parse_item(item, "gemini", inline=True))) == [
        ("", "bad", "gemini: a batch response without its request's key")]  # (an AttributeError)
    assert list(outcomes([{"x": 1}], lambda item: item["custom_id"])) == [
        ("", "bad", "a result item of an unexpected shape (KeyError: 'custom_id')")]


def test_an_openai_batch_whose_errors_data_is_no_list_has_a_status():
    from agenthub.jobs.backends import openai as openai_backend

    info = openai_backend.status_of({"status": "failed", "errors": {"object": "list", "data": 5}}, "openai")
    assert (info["state"], info["errors"]) == ("failed", [])


@pytest.mark.parametrize("status, state", [
    ("BATCH_STATE_SUCCEEDED", "completed"), ("JOB_STATE_SUCCEEDED", "completed"),
    # Vertex AI's JobState for a job that ended with some of its requests failed: its results are read (each failed
    # request is that row's error), it is not left "unknown" (wait() would give up on it)
    ("JOB_STATE_PARTIALLY_SUCCEEDED", "completed"), ("JOB_STATE_PAUSED", "unknown")])
def test_gemini_batch_states_ended_with_some_requests_failed_are_completed(status, state):
    info = gemini_backend.status_of({"name": "batches/1", "metadata": {"state": status}}, "gemini")
    assert (info["status"], info["state"]) == (status, state)
