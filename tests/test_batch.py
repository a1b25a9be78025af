"""agenthub.jobs.submit / load / BatchJob against the batch fakes (tests/batch_fakes.py, themselves
proven against the official SDKs in test_batch_fakes_sdk.py), and the backends' parsers against the
documented result files in tests/fixtures/batch."""

import json
import os
import re
import types

import pytest

import agenthub

from agenthub import AutoLLMClient
from agenthub.errors import ConfigError
from agenthub.jobs import batch as B
from agenthub.jobs.backends import anthropic as anthropic_backend
from agenthub.jobs.backends import backend, dumps_entry
from agenthub.jobs.backends import gemini as gemini_backend
from agenthub.jobs.backends import openai as openai_backend
from agenthub.jobs import run
from agenthub.jobs.jobfile import JobRow, read_output
from agenthub.providers import protocol
from batch_fakes import KEYS, BatchFake, point_at

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "fixtures", "batch")
#: what may differ between two runs of the same row: when it finished, and on which engine
VOLATILE = ("finished_at", "backend")


def _fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        if name.endswith(".jsonl"):
            return [json.loads(line) for line in handle if line.strip()]
        return json.load(handle)


def _user(text):
    return [{"role": "user", "content_items": [{"type": "text", "text": text}]}]


def _write(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return str(path)


@pytest.fixture
def fake(monkeypatch):
    with BatchFake(polls=2) as server:
        point_at(monkeypatch, server)
        monkeypatch.setenv("AZURE_OPENAI_API_KEY", KEYS["azure"])
        monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", server.url)
        yield server


MIXED = [
    {"id": "r1", "model": "gpt-5.4-mini", "messages": _user("hello one"), "config": {"max_tokens": 20}},
    {"id": "r 2", "model": "claude-sonnet-4-6", "messages": _user("hello two"), "config": {"max_tokens": 20}},
    {"id": "r3", "model": "gemini-2.5-flash", "messages": _user("hello three"), "config": {"temperature": 0.2}},
    {"id": "r4", "model": "text-embedding-3-small", "messages": _user("embed me")},
    {"id": "r5", "model": "gpt-4.1-mini", "client_type": "openai-chat", "messages": _user("FAIL please")},
    {"id": "r6", "model": "my-deployment", "client_type": "azure", "messages": _user("azure hi")},
    {"id": "r7", "model": "gpt-4.1-mini", "client_type": "openai-chat", "messages": _user("chat two")},
    {"id": "r8", "model": "gemini-embedding-001", "messages": _user("embed one"),
     "config": {"embedding_config": {"dimensions": 3}}},
    {"id": "r9", "model": "gemini-embedding-001", "messages": _user("first text") + _user("second, longer text")},
    {"id": "r10", "model": "my-responses-deployment", "client_type": "azure-responses", "messages": _user("azure r")},
]


# -- the rows are the live runner's rows ------------------------------------------------------------


def _live_rows(path, out):
    """The live runner's rows for the same job file (against the fake's live endpoints)."""
    summary = run(path, out, workers=2, progress=False, max_retries=0)
    assert summary.done + summary.failed == summary.total
    return {row["id"]: row for row in read_output(out)}


def _comparable(row):
    row = {k: v for k, v in row.items() if k not in VOLATILE}
    if row.get("message"):
        row["message"] = {k: v for k, v in row["message"].items() if k != "created_at"}
    if row.get("error"):
        row["error"] = dict(row["error"], message=row["error"]["message"].split(" (client=")[0])
    return row


def test_batched_rows_equal_live_rows_field_by_field(fake, tmp_path):
    path = _write(tmp_path / "in.jsonl", MIXED)
    live = _live_rows(path, str(tmp_path / "live.jsonl"))
    job = B.submit(path, backend="auto")
    assert job.wait(interval=0.01, timeout=10).done
    summary = job.fetch(str(tmp_path / "out.jsonl"))
    assert (summary.done, summary.failed, summary.skipped, summary.missing, summary.pending) == (9, 1, 0, [], [])
    batched = {row["id"]: row for row in read_output(str(tmp_path / "out.jsonl"))}
    assert sorted(batched) == sorted(live)
    for rid, row in batched.items():
        want, got = _comparable(live[rid]), _comparable(row)
        live_cost, batch_cost = want.pop("cost_usd"), got.pop("cost_usd")
        assert got == want, rid
        assert batch_cost == agenthub.cost(row["model"], row["usage_metadata"], batch=True), rid
        if rid in ("r1", "r 2", "r3"):  # the catalog's batch prices for these: half the list price
            assert batch_cost == pytest.approx(live_cost / 2), rid
    assert {row["backend"] for row in batched.values()} == {"openai", "anthropic", "gemini", "azure"}
    assert batched["r1"]["cost_usd"] is not None and batched["r 2"]["cost_usd"] is not None
    assert batched["r5"]["error"]["status"] == 400 and batched["r5"]["error"]["type"] == "UpstreamError"


def test_fixture_results_parse_as_the_live_whole_answer(fake, tmp_path):
    """Each documented result file, read by its backend, gives the rows the live call gives for the same body."""
    cases = [
        ("openai", "openai-chat", _fixture("openai_output.jsonl") + _fixture("openai_errors.jsonl"),
         openai_backend.parse_line, lambda line: line["response"]["body"] if line["response"] else None),
        ("anthropic", "anthropic", _fixture("anthropic_results.jsonl"), anthropic_backend.parse_line,
         lambda line: line["result"].get("message")),
    ]
    for name, kind, lines, parse, body_of in cases:
        outcomes = [parse(line, kind) for line in lines]
        by_id = {cid: (outcome, payload) for cid, outcome, payload in outcomes}
        assert by_id["row-d"][0] == "not_run" and by_id["row-c"][0] == "error"
        for line in lines:
            body = body_of(line)
            cid = line["custom_id"]
            if by_id[cid][0] != "ok":
                continue
            assert by_id[cid][1] == body
            row = JobRow(id=cid, model="m", messages=_user("x"))
            got = B.answer_row(row, protocol(kind), kind, body, name)
            assert got["error"] is None
            live = _collect_live(kind, body)
            assert _comparable(got)["message"] == {k: v for k, v in live.items() if k != "created_at"}
    operation = _fixture("gemini_operation.json")
    info = gemini_backend.status_of(operation, "gemini")
    assert info["state"] == "completed" and info["counts"]["total"] == 3
    outcomes = list(gemini_backend.GEMINI.results(types.SimpleNamespace(client_type="gemini"), {}, info))
    assert [(c, o) for c, o, _ in outcomes] == [("row-b", "ok"), ("row-a", "ok"), ("row-c", "error")]
    for cid, outcome, payload in outcomes[:2]:
        got = B.answer_row(JobRow(id=cid, model="m", messages=[]), protocol("gemini"), "gemini", payload, "gemini")
        live = {k: v for k, v in _collect_live("gemini", payload).items() if k != "created_at"}
        assert _minted(_comparable(got)["message"]) == _minted(live)
    assert outcomes[2][2] == (400, {"error": {"code": 400, "message": "Request contains an invalid argument.",
                                              "status": "INVALID_ARGUMENT"}})
    file_lines = [gemini_backend.parse_item(line, "gemini", inline=False) for line in _fixture("gemini_responses.jsonl")]
    assert [(c, o) for c, o, _ in file_lines] == [("row-b", "ok"), ("row-c", "error")]


def _minted(message):
    """Gemini sends no tool call ids: the parser mints one per call (``call_<random>_<n>``), live and batched
    alike, so two parses of one answer differ there only."""
    items = []
    for item in message["content_items"]:
        if item.get("type") == "tool_call":
            assert item["tool_call_id"].startswith("call_")
            item = dict(item, tool_call_id="call_*")
        items.append(item)
    return dict(message, content_items=items)


def _collect_live(kind, body):
    """What client.response gives when the server answers ``body`` as one JSON document."""
    from batch_fakes import BatchFake as Fake

    paths = {"openai-chat": "/v1", "anthropic": "", "gemini": ""}
    with Fake(answer=lambda provider, api, request: (200, body), require_keys=False) as server:
        client = AutoLLMClient("m", client_type=kind, base_url=server.url + paths[kind], max_retries=0)
        return client.response(_user("x"), {"max_tokens": 10} if kind == "anthropic" else None)


def test_fixture_tool_calls_keep_their_ids_and_arguments():
    lines = _fixture("openai_output.jsonl")
    body = [line for line in lines if line["custom_id"] == "row-a"][0]["response"]["body"]
    row = B.answer_row(JobRow(id="row-a", model="gpt-4.1-mini", messages=[]), protocol("openai-chat"), "openai-chat",
                       body, "openai")
    assert row["finish_reason"] == "tool_call"
    assert row["message"]["content_items"] == [
        {"type": "tool_call", "name": "get_weather", "arguments": {"city": "Oslo"}, "tool_call_id": "call_1"}]
    assert row["usage_metadata"]["prompt_tokens"] == 40 and row["usage_metadata"]["response_tokens"] == 12
    assert row["cost_usd"] == agenthub.cost("gpt-4.1-mini", row["usage_metadata"], batch=True)


# -- what goes on the wire ---------------------------------------------------------------------------


def test_request_lines_are_the_live_bodies_without_streaming(fake, tmp_path):
    path = _write(tmp_path / "in.jsonl", MIXED)
    job = B.submit(path, backend="auto")
    uploads = fake.calls("POST", "/v1/files")
    lines = [json.loads(line) for call in uploads for line in _file_of(call).splitlines()]
    by_id = {line["custom_id"]: line for line in lines}
    assert by_id["r1"] == {"custom_id": "r1", "method": "POST", "url": "/v1/responses", "body": {
        "model": "gpt-5.4-mini", "input": [{"type": "message", "role": "user",
                                            "content": [{"type": "input_text", "text": "hello one"}]}],
        "store": False, "include": ["reasoning.encrypted_content"], "max_output_tokens": 20}}
    assert by_id["r7"] == {"custom_id": "r7", "method": "POST", "url": "/v1/chat/completions",
                           "body": {"model": "gpt-4.1-mini", "messages": [{"role": "user", "content": "chat two"}]}}
    assert by_id["r4"]["url"] == "/v1/embeddings" and by_id["r4"]["body"]["input"] == ["embed me"]
    creates = [json.loads(call["body"]) for call in fake.calls("POST", "/v1/batches")]
    assert sorted(c["endpoint"] for c in creates) == ["/v1/chat/completions", "/v1/embeddings", "/v1/responses"]
    assert all(c["completion_window"] == "24h" for c in creates)
    # one file per model and endpoint: gpt-4.1-mini's two chat rows share one
    assert sorted(len(_file_of(call).splitlines()) for call in uploads) == [1, 1, 2]
    azure = fake.calls("POST", "/openai/v1/batches")
    assert [json.loads(c["body"])["endpoint"] for c in azure] == ["/chat/completions", "/chat/completions"]
    azure_lines = [json.loads(_file_of(call)) for call in fake.calls("POST", "/openai/v1/files")]
    assert [(line["url"], line["body"]["model"]) for line in azure_lines] == [
        ("/v1/chat/completions", "my-deployment"), ("/v1/responses", "my-responses-deployment")]
    assert all(c["headers"].get("api-key") == KEYS["azure"] for c in fake.calls(path_prefix="/openai/"))
    ant = json.loads(fake.calls("POST", "/v1/messages/batches")[0]["body"])
    (tag,) = [b["tag"] for b in job._state["batches"] if b["backend"] == "anthropic"]  # (its create call's)
    assert re.match(r"\A[0-9a-f]{8}\Z", tag)
    assert ant["requests"] == [{"custom_id": tag + "-row-2", "params": {
        "model": "claude-sonnet-4-6", "max_tokens": 20,
        "messages": [{"role": "user", "content": [{"type": "text", "text": "hello two"}]}],
        "cache_control": {"type": "ephemeral"}}}]
    gem = json.loads(fake.calls("POST", "/v1beta/models/gemini-2.5-flash:batchGenerateContent")[0]["body"])
    # a display name unique to the call (a create call cut short is found by it: test_batch_crash.py)
    assert re.match(r"\Aagenthub-in-3-[0-9a-f]{8}\.jsonl\Z", gem["batch"].pop("display_name"))
    assert gem == {"batch": {"input_config": {"requests": {"requests": [
        {"request": {"contents": [{"role": "user", "parts": [{"text": "hello three"}]}],
                     "generationConfig": {"temperature": 0.2}}, "metadata": {"key": "r3"}}]}}}}


def _file_of(call):
    from batch_fakes import _multipart

    fields, files = _multipart(call["headers"]["Content-Type"], call["body"])
    assert fields == {"purpose": "batch"}
    return files["file"][1].decode()


def test_the_state_file_says_where_rows_went_and_holds_no_key(fake, tmp_path):
    path = _write(tmp_path / "in.jsonl", MIXED)
    job = B.submit(path, backend="auto")
    assert job.state_path == path + ".batch.json"
    text = open(job.state_path).read()
    for key in KEYS.values():
        assert key not in text
    state = json.loads(text)
    assert state["agenthub_batch"] == 1 and state["input_path"] == path
    placed = {rid: b["backend"] for b in state["batches"] for rid in b["ids"]}
    assert placed == {"r1": "openai", "r 2": "anthropic", "r3": "gemini", "r4": "openai", "r5": "openai",
                      "r6": "azure", "r7": "openai", "r8": "gemini", "r9": "gemini", "r10": "azure"}
    anthropic = [b for b in state["batches"] if b["backend"] == "anthropic"][0]
    assert anthropic["custom_ids"] == {"r 2": "row-2"}  # "r 2" does not match ^[a-zA-Z0-9_-]{1,64}$
    assert all(b["remote"] for b in state["batches"])


def test_a_later_process_loads_the_state_and_fetches(fake, tmp_path):
    path = _write(tmp_path / "in.jsonl", MIXED[:3])
    state_path = str(tmp_path / "job.state.json")
    B.submit(path, backend="auto", state_path=state_path)
    job = B.load(state_path)
    assert job.status().state == "in_progress"
    assert job.status().done
    out = str(tmp_path / "out.jsonl")
    first = job.fetch(out)
    again = B.load(state_path).fetch(out)
    assert (first.done, again.done, again.skipped) == (3, 0, 3)
    assert len(read_output(out)) == 3


def test_fetch_into_the_input_or_the_state_file_is_refused_and_nothing_is_written(fake, tmp_path):
    # fetch(IN) read the input's rows as answers: every result skipped, "0 answers written", exit 0, the paid
    # results never applied (jobs.run refuses an output that is its input; fetch did not)
    path = _write(tmp_path / "in.jsonl", MIXED[:1])
    before = (tmp_path / "in.jsonl").read_bytes()
    os.symlink(path, str(tmp_path / "link.jsonl"))
    with pytest.raises(ConfigError) as caught:
        B.submit(path, backend="auto", output_path=str(tmp_path / "link.jsonl"))
    assert str(caught.value) == "the output file must not be the input file ({})".format(path)
    assert fake.calls("POST") == []
    job = B.submit(path, backend="auto")
    assert job.wait(interval=0.01, timeout=10).done
    state = (tmp_path / "in.jsonl.batch.json").read_bytes()
    for target, what, named in ((path, "input", job.input_path), (str(tmp_path / "link.jsonl"), "input",
                                                                    job.input_path),
                                (job.state_path, "state", job.state_path)):
        with pytest.raises(ConfigError) as caught:
            job.fetch(target)
        assert str(caught.value) == "the output file must not be the {} file ({})".format(what, named)
    assert (tmp_path / "in.jsonl").read_bytes() == before and (tmp_path / "in.jsonl.batch.json").read_bytes() == state
    (tmp_path / "folder").mkdir()
    with pytest.raises(ConfigError) as caught:
        job.fetch(str(tmp_path / "folder"))
    assert str(caught.value) == "{} is a folder, not a file".format(tmp_path / "folder")
    summary = job.fetch(str(tmp_path / "out.jsonl"))
    assert (summary.done, summary.skipped) == (1, 0)


def test_submit_sends_only_the_lines_its_check_read(fake, tmp_path, monkeypatch):
    # a line appended between the check and the planning was planned unchecked: here the same id twice, both sent
    path = _write(tmp_path / "in.jsonl", MIXED[:1])
    real = B.read_jobs

    def read_then_grow(*args, **kwargs):
        job = real(*args, **kwargs)
        with open(path, "a") as handle:
            handle.write(json.dumps(dict(MIXED[0], messages=_user("again"))) + "\n")
        return job

    monkeypatch.setattr(B, "read_jobs", read_then_grow)
    job = B.submit(path, backend="auto")
    assert [record["ids"] for record in job._state["batches"]] == [["r1"]]
    assert [[cid for cid, _, _ in batch.requests] for batch in fake.batches.values()] == [["r1"]]


def test_fetch_before_the_end_reports_pending_rows(fake, tmp_path):
    path = _write(tmp_path / "in.jsonl", MIXED[:1])
    job = B.submit(path, backend="openai")
    summary = job.fetch(str(tmp_path / "out.jsonl"))
    assert (summary.done, summary.pending) == (0, ["r1"])


# -- faults: expiry, cancel, bad input ---------------------------------------------------------------


@pytest.mark.parametrize("rows", [
    [{"id": "a%d" % i, "model": "gpt-4.1-mini", "client_type": "openai-chat", "messages": _user("t%d" % i)}
     for i in range(3)],
    [{"id": "a%d" % i, "model": "claude-sonnet-4-6", "messages": _user("t%d" % i), "config": {"max_tokens": 5}}
     for i in range(3)],
])
def test_an_expired_batch_reports_the_rows_without_a_result(fake, tmp_path, rows):
    fake.run_only = 1
    path = _write(tmp_path / "in.jsonl", rows)
    job = B.submit(path, backend="auto")
    status = job.wait(interval=0.01, timeout=10)
    assert status.done and status.batches[0].state in ("expired", "completed")
    out = str(tmp_path / "out.jsonl")
    summary = job.fetch(out)
    assert (summary.done, summary.failed, sorted(summary.missing)) == (1, 0, ["a1", "a2"])
    assert [row["id"] for row in read_output(out)] == ["a0"]


def test_the_live_runner_finishes_what_an_expired_batch_left(fake, tmp_path):
    fake.run_only = 2
    rows = [{"id": "x%d" % i, "model": "claude-sonnet-4-6", "messages": _user("t%d" % i), "config": {"max_tokens": 5}}
            for i in range(5)]
    path = _write(tmp_path / "in.jsonl", rows)
    out = str(tmp_path / "out.jsonl")
    job = B.submit(path, backend="anthropic")
    assert job.wait(interval=0.01, timeout=10).done
    assert sorted(job.fetch(out).missing) == ["x2", "x3", "x4"]
    live_before = len(fake.calls("POST", "/v1/messages"))
    summary = run(path, out, workers=2, progress=False)
    assert (summary.done, summary.skipped) == (3, 2)
    assert len(fake.calls("POST", "/v1/messages")) - live_before == 3  # only the rows without a result
    rows_out = read_output(out)
    assert sorted(r["id"] for r in rows_out) == ["x0", "x1", "x2", "x3", "x4"]
    assert sorted((r["id"], r["backend"]) for r in rows_out)[:2] == [("x0", "anthropic"), ("x1", "anthropic")]
    assert job.fetch(out).skipped == 2  # fetching again writes nothing twice


def test_cancel_stops_the_batches_and_fetch_lists_what_never_ran(fake, tmp_path):
    fake.polls = 100
    path = _write(tmp_path / "in.jsonl", MIXED[:3])
    job = B.submit(path, backend="auto")
    status = job.cancel()
    assert [b.state for b in status.batches] == ["cancelling", "cancelling", "cancelled"]
    assert job.status().state == "ended"
    summary = job.fetch(str(tmp_path / "out.jsonl"))
    assert summary.done == 0 and sorted(summary.missing) == ["r 2", "r1", "r3"]


def test_bad_rows_are_listed_together_and_nothing_is_sent(fake, tmp_path, monkeypatch):
    monkeypatch.delenv("GEMINI_API_KEY")
    monkeypatch.delenv("GEMINI_BASE_URL")
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-deepseek-test")
    rows = [
        {"id": "ok", "model": "gpt-5.4-mini", "messages": _user("x")},
        {"id": "claude", "model": "claude-sonnet-4-6", "messages": _user("x"), "config": {"max_tokens": 5}},
        {"id": "nokey", "model": "gemini-2.5-flash", "messages": _user("x")},
        {"id": "deepseek", "model": "deepseek-chat", "messages": _user("x")},
        {"id": "headers", "model": "gpt-5.4-mini", "messages": _user("x"), "config": {"extra_headers": {"x-a": "1"}}},
        {"id": "unknown", "model": "mystery-model", "messages": _user("x")},
    ]
    path = _write(tmp_path / "in.jsonl", rows)
    with pytest.raises(ConfigError) as info:
        B.submit(path, backend="openai")
    text = str(info.value)
    assert "5 row(s)" in text and "nothing was sent" in text
    for line, rid in ((2, "claude"), (3, "nokey"), (4, "deepseek"), (5, "headers"), (6, "unknown")):
        assert "line {} ('{}')".format(line, rid) in text
    assert "not to the openai backend" in text and "no API key" in text and "sk-deepseek-test" not in text
    assert "https://api.deepseek.com, which is not OpenAI's own endpoint" in text
    assert "extra_headers cannot travel" in text and "cannot route model 'mystery-model'" in text
    assert fake.requests == [] and not os.path.exists(path + ".batch.json")


def test_unsupported_batch_apis_are_refused_before_sending(fake, tmp_path):
    rows = [{"id": "z", "model": "text-embedding-3-small", "client_type": "azure", "messages": _user("x")}]
    with pytest.raises(ConfigError) as info:
        B.submit(_write(tmp_path / "in.jsonl", rows), backend="auto")
    assert "line 1 ('z'): client_type 'azure' does not serve embedding models" in str(info.value)
    assert backend("azure").why_not("embeddings").startswith("Azure OpenAI's batch API does not take embeddings")
    assert fake.requests == []


def test_a_submitted_state_is_not_submitted_twice(fake, tmp_path):
    path = _write(tmp_path / "in.jsonl", MIXED[:1])
    B.submit(path, backend="openai")
    with pytest.raises(ConfigError, match="submitted already"):
        B.submit(path, backend="openai")
    assert len(fake.calls("POST", "/v1/batches")) == 1


def test_a_cut_short_submission_resumes_where_it_stopped(fake, tmp_path, monkeypatch):
    path = _write(tmp_path / "in.jsonl", MIXED[:3])
    real = anthropic_backend.AnthropicBatches.create

    def broken(self, *args, **kwargs):
        raise ConnectionError("the network went away")

    monkeypatch.setattr(anthropic_backend.AnthropicBatches, "create", broken)
    with pytest.raises(ConnectionError):
        B.submit(path, backend="auto")
    state = json.load(open(path + ".batch.json"))
    assert [bool(b["remote"]) for b in state["batches"]] == [True, False, False]
    monkeypatch.setattr(anthropic_backend.AnthropicBatches, "create", real)
    job = B.submit(path, backend="auto")
    assert all(b["remote"] for b in job._state["batches"])
    assert len(fake.calls("POST", "/v1/batches")) == 1  # the OpenAI batch was not sent again
    assert job.wait(interval=0.01, timeout=10).done
    assert job.fetch(str(tmp_path / "out.jsonl")).done == 3


def test_output_path_leaves_finished_rows_out(fake, tmp_path):
    path = _write(tmp_path / "in.jsonl", MIXED[:3])
    out = tmp_path / "out.jsonl"
    out.write_text(json.dumps({"id": "r1", "model": "gpt-5.4-mini", "message": None, "usage_metadata": None,
                               "finish_reason": None, "cost_usd": None, "error": None, "attempts": 1,
                               "backend": "live", "finished_at": "x"}) + "\n")
    job = B.submit(path, backend="auto", output_path=str(out))
    assert sorted(rid for b in job._state["batches"] for rid in b["ids"]) == ["r 2", "r3"]


# -- limits and the large-input paths ---------------------------------------------------------------


def test_documented_per_batch_limits():
    assert (backend("openai").max_requests, backend("openai").max_bytes, backend("openai").max_weight) == (
        50000, 200 * 1000 * 1000, 50000)
    assert (backend("azure").max_requests, backend("azure").max_bytes) == (100000, 200 * 1000 * 1000)
    assert (backend("anthropic").max_requests, backend("anthropic").max_bytes) == (100000, 256 * 1000 * 1000)
    assert backend("gemini").max_bytes == 2 * 1000 * 1000 * 1000
    assert gemini_backend.INLINE_MAX_BYTES == 20 * 1000 * 1000


def test_split_keeps_each_batch_within_the_limits():
    engine = backend("openai")
    entries = [("c%d" % i, b"x" * 10, 0) for i in range(50001)]
    assert [len(c) for c in engine.split(entries)] == [50000, 1]
    inputs = [("e%d" % i, b"x", 20000) for i in range(3)]
    assert [len(c) for c in engine.split(inputs)] == [2, 1]  # 50,000 embedding inputs at most
    big = [("b%d" % i, b"x" * (90 * 1000 * 1000), 0) for i in range(3)]
    assert [len(c) for c in engine.split(big)] == [2, 1]  # 200 MB at most
    ant = [("a%d" % i, b"x" * (100 * 1000 * 1000), 0) for i in range(3)]
    assert [len(c) for c in backend("anthropic").split(ant)] == [2, 1]  # 256 MB at most


def test_a_group_over_the_limit_goes_in_several_batches(fake, tmp_path, monkeypatch):
    monkeypatch.setattr(openai_backend.OpenAIBatches, "max_requests", 2)
    rows = [{"id": "s%d" % i, "model": "gpt-4.1-mini", "client_type": "openai-chat", "messages": _user("t%d" % i)}
            for i in range(5)]
    job = B.submit(_write(tmp_path / "in.jsonl", rows), backend="openai")
    assert [b["ids"] for b in job._state["batches"]] == [["s0", "s1"], ["s2", "s3"], ["s4"]]
    assert len(fake.calls("POST", "/v1/batches")) == 3
    assert job.wait(interval=0.01, timeout=10).done
    assert job.fetch(str(tmp_path / "out.jsonl")).done == 5


def test_gemini_above_the_inline_limit_uploads_a_file(fake, tmp_path, monkeypatch):
    monkeypatch.setattr(gemini_backend, "INLINE_MAX_BYTES", 10)
    rows = [{"id": "g%d" % i, "model": "gemini-2.5-flash", "messages": _user("t%d" % i)} for i in range(2)]
    job = B.submit(_write(tmp_path / "in.jsonl", rows), backend="gemini")
    start, session = fake.calls("POST", "/upload/v1beta/files")
    assert start["headers"]["X-Goog-Upload-Protocol"] == "resumable"
    assert start["headers"]["X-Goog-Upload-Command"] == "start"
    assert start["headers"]["X-Goog-Upload-Header-Content-Length"] == str(len(session["body"]))
    assert session["headers"]["X-Goog-Upload-Command"] == "upload, finalize"
    assert [json.loads(x)["key"] for x in session["body"].splitlines()] == ["g0", "g1"]
    create = json.loads(fake.calls("POST", "/v1beta/models/")[0]["body"])
    assert create["batch"]["input_config"] == {"file_name": job._state["batches"][0]["remote"]["input_file"]}
    assert job.wait(interval=0.01, timeout=10).done
    assert job.fetch(str(tmp_path / "out.jsonl")).done == 2
    assert fake.calls("GET", "/download/v1beta/files/")  # the documented download path


def test_anthropic_results_url_elsewhere_never_gets_the_key(fake, tmp_path, monkeypatch):
    real = anthropic_backend.status_of

    def moved(batch, client):
        info = real(batch, client)
        if info["results_url"]:
            info["results_url"] = "https://elsewhere.example/results"
        return info

    monkeypatch.setattr(anthropic_backend, "status_of", moved)
    path = _write(tmp_path / "in.jsonl", MIXED[1:2])
    job = B.submit(path, backend="anthropic")
    assert job.wait(interval=0.01, timeout=10).done
    assert job.fetch(str(tmp_path / "out.jsonl")).done == 1
    assert fake.calls("GET", "/v1/messages/batches/msgbatch_0001/results")


def test_result_lines_for_unknown_custom_ids_are_ignored(tmp_path):
    line = {"id": "x", "custom_id": "nobody", "response": {"status_code": 200, "body": {}}, "error": None}
    assert openai_backend.parse_line(line, "openai-chat") == ("nobody", "ok", {})
    assert dumps_entry({"a": "é"}) == '{"a":"é"}\n'.encode()


def test_a_key_the_server_echoes_never_reaches_the_error(fake, tmp_path, monkeypatch):
    from agenthub.errors import AuthenticationError

    fake.echo_keys = True
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong-but-secret-1234")
    path = _write(tmp_path / "in.jsonl", MIXED[:1])
    with pytest.raises(AuthenticationError) as info:
        B.submit(path, backend="openai")
    assert "Incorrect API key provided: *** (" in str(info.value)
    assert "sk-wrong-but-secret-1234" not in str(info.value) + repr(info.value.args)
    assert "sk-wrong-but-secret-1234" not in open(path + ".batch.json").read()


def test_a_traced_row_is_traced_when_its_answer_is_fetched(fake, tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTHUB_CACHE_DIR", str(tmp_path / "cache"))
    rows = [dict(MIXED[1], config={"max_tokens": 20, "trace_id": "evals/row2"})]
    job = B.submit(_write(tmp_path / "in.jsonl", rows), backend="anthropic")
    assert job.wait(interval=0.01, timeout=10).done
    assert job.fetch(str(tmp_path / "out.jsonl")).done == 1
    trace = json.load(open(str(tmp_path / "cache" / "evals" / "row2.json")))
    text = json.dumps(trace)
    assert "hello two" in text and "echo: hello two" in text
    bad = [dict(MIXED[1], config={"max_tokens": 20, "trace_id": "../outside"})]
    with pytest.raises(ConfigError, match="trace_id"):
        B.submit(_write(tmp_path / "bad.jsonl", bad), backend="anthropic")


def test_a_failed_batch_says_why_and_its_rows_have_no_result():
    info = openai_backend.status_of({"status": "failed", "errors": {"object": "list", "data": [
        {"code": "empty_file", "message": "The input file is empty."}]}}, "openai-chat")
    assert (info["state"], info["errors"]) == ("failed", ["empty_file: The input file is empty."])
    azure = openai_backend.status_of({"status": "Finalizing", "request_counts": {"total": 3}}, "azure")
    assert (azure["status"], azure["state"], azure["counts"]["total"]) == ("finalizing", "running", 3)
    gem = gemini_backend.status_of({"name": "batches/x", "metadata": {"state": "JOB_STATE_EXPIRED"}}, "gemini")
    assert gem["state"] == "expired" and gem["output"] is None
    ant = anthropic_backend.status_of({"processing_status": "canceling", "request_counts": {"processing": 2}}, "a")
    assert ant["state"] == "cancelling"


def test_batch_cost_is_the_catalogs_batch_price():
    usage = {"prompt_tokens": 1000000, "response_tokens": 0, "cached_tokens": None, "thoughts_tokens": None}
    assert B.batch_cost("claude-sonnet-4-6", usage) == agenthub.cost("claude-sonnet-4-6", usage, batch=True)
    assert B.batch_cost("claude-sonnet-4-6", usage) == pytest.approx(agenthub.cost("claude-sonnet-4-6", usage) / 2)
    assert B.batch_cost("no-such-model", usage) is None


def test_made_custom_ids_never_collide_with_a_row_id(fake, tmp_path):
    rows = [{"id": "row-2", "model": "claude-sonnet-4-6", "messages": _user("a"), "config": {"max_tokens": 5}},
            {"id": "needs a custom id", "model": "claude-sonnet-4-6", "messages": _user("b"), "config": {"max_tokens": 5}},
            {"id": "x" * 65, "model": "claude-sonnet-4-6", "messages": _user("c"), "config": {"max_tokens": 5}},
            {"id": "y" * 56, "model": "claude-sonnet-4-6", "messages": _user("d"), "config": {"max_tokens": 5}},
            {"id": "z" * 55, "model": "claude-sonnet-4-6", "messages": _user("e"), "config": {"max_tokens": 5}}]
    job = B.submit(_write(tmp_path / "in.jsonl", rows), backend="anthropic")
    record = job._state["batches"][0]
    # 56 characters fit Anthropic's 64 alone, not behind the 9 of the create call's tag
    assert record["custom_ids"] == {"needs a custom id": "row-2-2", "x" * 65: "row-3", "y" * 56: "row-4"}
    tag = record["tag"]
    sent = [r["custom_id"] for r in json.loads(fake.calls("POST", "/v1/messages/batches")[0]["body"])["requests"]]
    assert sent == [tag + "-row-2", tag + "-row-2-2", tag + "-row-3", tag + "-row-4", tag + "-" + "z" * 55]
    assert job.wait(interval=0.01, timeout=10).done
    out = str(tmp_path / "out.jsonl")
    assert job.fetch(out).done == 5
    texts = {r["id"]: r["message"]["content_items"][0]["text"] for r in read_output(out)}
    assert texts == {"row-2": "echo: a", "needs a custom id": "echo: b", "x" * 65: "echo: c", "y" * 56: "echo: d",
                     "z" * 55: "echo: e"}


def test_a_row_id_ending_in_a_newline_gets_a_made_custom_id_not_a_refused_batch(fake, tmp_path):
    # Anthropic's custom_id pattern ends the string at "$" (JSON Schema's, as ECMAScript reads it), Python's "$" also
    # before a last newline: an id "r1\n" (a line read without its newline stripped) went out as it was, and
    # Anthropic refused the whole create call (every row of the batch with it); past 64 characters the same way
    rows = [{"id": "r1\n", "model": "claude-sonnet-4-6", "messages": _user("a"), "config": {"max_tokens": 5}},
            {"id": "w" * 55 + "\n", "model": "claude-sonnet-4-6", "messages": _user("b"), "config": {"max_tokens": 5}},
            {"id": "o" * 64 + "\n", "model": "gpt-4.1-mini", "messages": _user("c"), "config": {"max_tokens": 5}}]
    job = B.submit(_write(tmp_path / "in.jsonl", rows), backend="auto")
    records = {r["backend"]: r for r in job._state["batches"]}
    assert records["anthropic"]["custom_ids"] == {"r1\n": "row-1", "w" * 55 + "\n": "row-2"}
    assert records["openai"]["custom_ids"] == {"o" * 64 + "\n": "row-3"}
    tag = records["anthropic"]["tag"]
    sent = [r["custom_id"] for r in json.loads(fake.calls("POST", "/v1/messages/batches")[0]["body"])["requests"]]
    assert sent == [tag + "-row-1", tag + "-row-2"]
    assert job.wait(interval=0.01, timeout=10).done
    out = str(tmp_path / "out.jsonl")
    assert job.fetch(out).done == 3
    texts = {r["id"]: r["message"]["content_items"][0]["text"] for r in read_output(out)}
    assert texts == {"r1\n": "echo: a", "w" * 55 + "\n": "echo: b", "o" * 64 + "\n": "echo: c"}


def test_every_documented_status_has_its_state():
    # OpenAI Batch guide, "4. Check the status of a batch" (Azure's list is the same words, capitalised at times)
    openai = {"validating": "pending", "failed": "failed", "in_progress": "running", "finalizing": "running",
              "completed": "completed", "expired": "expired", "cancelling": "cancelling", "cancelled": "cancelled"}
    for status, state in openai.items():
        assert openai_backend.status_of({"status": status.capitalize()}, "openai-chat")["state"] == state
    # Anthropic MessageBatch.processing_status
    for status, state in {"in_progress": "running", "canceling": "cancelling", "ended": "completed"}.items():
        assert anthropic_backend.status_of({"processing_status": status}, "anthropic")["state"] == state
    # Gemini batch states (the REST names and the SDK's JOB_STATE_ spellings)
    gemini = {"PENDING": "pending", "RUNNING": "running", "SUCCEEDED": "completed", "FAILED": "failed",
              "CANCELLED": "cancelled", "EXPIRED": "expired"}
    for name, state in gemini.items():
        for prefix in ("BATCH_STATE_", "JOB_STATE_"):
            assert gemini_backend.status_of({"metadata": {"state": prefix + name}}, "gemini")["state"] == state
    assert {"completed", "failed", "expired", "cancelled"} == set(B.TERMINAL)


def test_unreadable_result_lines_are_counted_and_the_others_still_come_through(fake, tmp_path):
    rows = [{"id": "u%d" % i, "model": "gpt-4.1-mini", "client_type": "openai-chat", "messages": _user("t%d" % i)}
            for i in range(3)]
    job = B.submit(_write(tmp_path / "in.jsonl", rows), backend="openai")
    assert job.wait(interval=0.01, timeout=10).done
    batch = list(fake.batches.values())[0]
    good, second, third = fake.files[batch.output_file_id]["bytes"].splitlines()
    no_id = json.loads(third)
    del no_id["custom_id"]
    fake.files[batch.output_file_id]["bytes"] = b"\n".join([good, b"{not json", json.dumps(no_id).encode()]) + b"\n"
    summary = job.fetch(str(tmp_path / "out.jsonl"))
    assert (summary.done, summary.unreadable, sorted(summary.missing)) == (1, 2, ["u1", "u2"])
    assert [r["id"] for r in read_output(str(tmp_path / "out.jsonl"))] == ["u0"]


def test_gemini_embeddings_rows_go_as_one_request_per_text(fake, tmp_path, monkeypatch):
    rows = [row for row in MIXED if row["id"] in ("r8", "r9")]
    job = B.submit(_write(tmp_path / "in.jsonl", rows), backend="gemini")
    create = json.loads(fake.calls("POST", "/v1beta/models/gemini-embedding-001:asyncBatchEmbedContent")[0]["body"])
    assert create["batch"]["input_config"]["requests"]["requests"] == [
        {"request": {"content": {"parts": [{"text": "embed one"}]}, "outputDimensionality": 3},
         "metadata": {"key": "r8#0/1"}},
        {"request": {"content": {"parts": [{"text": "first text"}]}}, "metadata": {"key": "r9#0/2"}},
        {"request": {"content": {"parts": [{"text": "second, longer text"}]}}, "metadata": {"key": "r9#1/2"}}]
    assert job.wait(interval=0.01, timeout=10).done
    out = str(tmp_path / "out.jsonl")
    assert job.fetch(out).done == 2
    vectors = {r["id"]: [i["embedding"] for i in r["message"]["content_items"]] for r in read_output(out)}
    assert vectors == {"r8": [[9.0, 0.25, -0.5]], "r9": [[10.0, 0.25, -0.5], [19.0, 0.25, -0.5]]}
    # above the inline limit: the same requests as file lines
    monkeypatch.setattr(gemini_backend, "INLINE_MAX_BYTES", 10)
    B.submit(_write(tmp_path / "big.jsonl", rows), backend="gemini")
    session = fake.calls("POST", "/upload/v1beta/files")[-1]
    assert [json.loads(x)["key"] for x in session["body"].splitlines()] == ["r8#0/1", "r9#0/2", "r9#1/2"]


def test_a_gemini_embedding_row_whose_id_holds_a_newline_gets_its_vectors(fake, tmp_path):
    # its parts' keys ("a\nb#0/2") were read with a "." that stops at a newline: every answer was an unreadable
    # one, and the row (paid for) was listed missing, for a live run to pay for again
    rows = [dict(row, id="line one\nline two") for row in MIXED if row["id"] == "r9"]
    job = B.submit(_write(tmp_path / "in.jsonl", rows), backend="gemini")
    assert job.wait(interval=0.01, timeout=10).done
    out = str(tmp_path / "out.jsonl")
    summary = job.fetch(out)
    assert (summary.done, summary.unreadable, summary.missing) == (1, 0, [])
    vectors = {r["id"]: [i["embedding"] for i in r["message"]["content_items"]] for r in read_output(out)}
    assert vectors == {"line one\nline two": [[10.0, 0.25, -0.5], [19.0, 0.25, -0.5]]}


def test_embeddings_parts_are_put_together_whatever_their_order():
    first = {"embedding": {"values": [1.0]}, "usageMetadata": {"promptTokenCount": 2}}
    second = {"embedding": {"values": [2.0]}, "usageMetadata": {"promptTokenCount": 3}}
    items = [("a#1/2", "ok", second), ("b#0/1", "error", (None, {"error": {"code": 400}})), ("a#0/2", "ok", first),
             ("c#0/2", "ok", first), ("junk", "ok", first)]
    out = list(gemini_backend._assembled(iter(items)))
    assert out == [("b", "error", (None, {"error": {"code": 400}})),
                   ("a", "ok", {"embeddings": [{"values": [1.0]}, {"values": [2.0]}],
                                "usageMetadata": {"promptTokenCount": 5}}),
                   ("", "bad", "gemini: an embeddings batch answer with a key agenthub did not make")]


@pytest.mark.parametrize("code, status, error_class, error_type, retryable", [
    (8, 429, "RateLimitError", "RESOURCE_EXHAUSTED", True),
    (13, 500, "ServerError", "INTERNAL", True),
    (3, 400, "UpstreamError", "INVALID_ARGUMENT", False),
])
def test_gemini_batch_rpc_error_items_become_the_rows_the_live_call_gives(code, status, error_class, error_type,
                                                                           retryable):
    # issue 29 A5: a batch item's error is a google.rpc.Status (the code is an RPC code, not an HTTP status)
    item = {"metadata": {"key": "r1"}, "error": {"code": code, "message": "it failed"}}
    key, outcome, (got_status, body) = gemini_backend.parse_item(item, "gemini", inline=True)
    assert (key, outcome, got_status) == ("r1", "error", status)
    row = B.failed_row(JobRow(id="r1", model="gemini-3.5-flash", messages=[]), "gemini", got_status, body, "gemini")
    error = row["error"]
    assert (error["status"], error["type"]) == (status, error_class) and error_type in error["message"], error
    # what the live call raises for the same failure (an HTTP error answer with the RPC status body)
    live = agenthub.errors.upstream_error("gemini", {"error": {"code": status, "message": "it failed",
                                                               "status": error_type}}, status=status)
    assert (type(live).__name__, live.status, live.retryable) == (error_class, status, retryable)


def _long_answers(provider, api, body):
    """The fake's answer, 1.2 MB long for Gemini (15 of them inline: about 18 MB in the batch operation)."""
    from batch_fakes import default_answer

    status, answer = default_answer(provider, api, body)
    if provider == "gemini" and status == 200 and api != "embeddings":
        answer["candidates"][0]["content"]["parts"][0]["text"] = "z" * 1200000
    return status, answer


def test_a_gemini_inline_batch_whose_answers_pass_the_document_limit_is_read(tmp_path, monkeypatch):
    # issue 29 A10: ~18 MB of inlined answers could never be read (16 MiB document limit): paid, unreachable
    from agenthub.transport import MAX_DOCUMENT_BYTES

    assert 15 * 1200000 > MAX_DOCUMENT_BYTES
    with BatchFake(answer=_long_answers, polls=2) as server:
        point_at(monkeypatch, server)
        rows = [{"id": "g%d" % i, "model": "gemini-2.5-flash", "messages": _user("t%d" % i),
                 "config": {"max_tokens": 400000}} for i in range(15)]
        job = B.submit(_write(tmp_path / "in.jsonl", rows), backend="gemini")
        assert not server.calls("POST", "/upload/v1beta/files")  # inline: the answers' bound fits the operation
        assert job.wait(interval=0.01, timeout=30).done
        assert B.load(job.state_path).status().state == "ended"
        summary = job.fetch(str(tmp_path / "out.jsonl"))
    assert summary.done == 15 and not summary.missing
    out = read_output(str(tmp_path / "out.jsonl"))
    assert sorted(row["id"] for row in out) == sorted("g%d" % i for i in range(15))
    assert all(len(row["message"]["content_items"][0]["text"]) == 1200000 for row in out)


def test_gemini_rows_whose_answers_could_outgrow_the_operation_go_through_a_file(fake, tmp_path, monkeypatch):
    monkeypatch.setattr(gemini_backend, "OPERATION_MAX_BYTES", 100000)
    small = [{"id": "s%d" % i, "model": "gemini-2.5-flash", "messages": _user("t%d" % i),
              "config": {"max_tokens": 100}} for i in range(2)]
    B.submit(_write(tmp_path / "small.jsonl", small), backend="gemini", state_path=str(tmp_path / "a.json"))
    assert not fake.calls("POST", "/upload/v1beta/files")  # 2 x (4096 + 8 x 100) bytes fit: inline
    big = [dict(row, config={"max_tokens": 20000}) for row in small]
    job = B.submit(_write(tmp_path / "big.jsonl", big), backend="gemini", state_path=str(tmp_path / "b.json"))
    assert len(fake.calls("POST", "/upload/v1beta/files")) == 2  # 2 x (4096 + 8 x 20000) may not: a file
    assert job.wait(interval=0.01, timeout=10).done
    assert job.fetch(str(tmp_path / "out.jsonl")).done == 2


def test_a_batch_answer_whose_usage_counts_no_input_is_unpriced_as_a_live_one():
    """One rule for every path (catalog.counted_input): a live answer whose usage counts no input is unpriced; a
    batch answer's was priced at its output alone."""
    from agenthub.catalog import call_cost

    for usage in ({"prompt_tokens": 0, "cached_tokens": None, "thoughts_tokens": None, "response_tokens": 7},
                  {"prompt_tokens": None, "cached_tokens": None, "thoughts_tokens": None, "response_tokens": 7}):
        assert call_cost("claude-sonnet-4-6", usage) is None
        assert B.batch_cost("claude-sonnet-4-6", usage) is None
