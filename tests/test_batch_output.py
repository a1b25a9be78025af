"""Typed output on the providers' batch engines (issue 40 item 6): a typed row's schema goes out as
client.parse sends it on its wire; fetch validates each answer; the rows that did not hold go into a new
batch round with the invalid answer as the assistant turn and the problems as the next user turn (as
agenthub.output.shape builds them), at batch price, at most output_retries rounds; exact output rows and
request bodies against tests/batch_fakes.py."""

import dataclasses
import json
import time
import types

import pytest

from agenthub import jobs
from agenthub.errors import ConfigError
from agenthub.jobs import batch as B
from agenthub.jobs.jobfile import read_output
from batch_fakes import BatchFake, default_answer, last_user_text, point_at

PERSON = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
          "required": ["name", "age"], "additionalProperties": False}
BAD = {"name": "Ann", "age": "forty"}
GOOD = {"name": "Ann", "age": 40}
REASK = ("The answer did not match the required JSON Schema:\n- age: expected an integer, got \"forty\"\n"
         "Answer again with the corrected value only.")


@dataclasses.dataclass
class Person:
    name: str
    age: int


def _with_text(provider, api, body, text):
    """default_answer's document for ``body``, its answer text replaced by ``text``."""
    status, doc = default_answer(provider, api, body)
    if provider == "anthropic":
        doc["content"][0]["text"] = text
    elif provider == "gemini":
        doc["candidates"][0]["content"]["parts"][0]["text"] = text
    elif api == "responses":
        doc["output"][0]["content"][0]["text"] = text
    else:
        doc["choices"][0]["message"]["content"] = text
    return status, doc


def fixes_on_reask(provider, api, body):
    """BAD to a first request, GOOD to a re-ask; GOOD at once to a prompt saying "valid"."""
    text = last_user_text(provider, body)
    if text == "no type":
        return default_answer(provider, api, body)
    good = text.startswith("The answer did not match") or "valid" in text
    return _with_text(provider, api, body, json.dumps(GOOD if good else BAD))


def never_fixes(provider, api, body):
    return _with_text(provider, api, body, json.dumps(BAD))


def _user(text):
    return [{"role": "user", "content_items": [{"type": "text", "text": text}]}]


def _write(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return str(path)


def _fake(monkeypatch, answer):
    server = BatchFake(answer=answer, polls=1)
    point_at(monkeypatch, server)
    return server


def _bodies(server):
    """Every batch's request bodies, in the order the batches were created: [[(custom_id, body), ...], ...]
    (an Anthropic custom id without the tag of its create call in front: ``_tags`` has them)."""
    with server.lock:
        return [[(_untagged(batch, cid), body) for cid, body, _ in batch.requests] for batch in server.batches.values()]


def _untagged(batch, cid):
    if batch.kind != "anthropic":
        return cid
    tag, _, rest = cid.partition("-")
    assert len(tag) == 8 and int(tag, 16) >= 0 and rest, cid
    return rest


def _tags(server):
    """The tag in front of each Anthropic batch's custom ids, in creation order (one per batch)."""
    with server.lock:
        tags = [sorted(set(cid[:8] for cid, _, _ in b.requests)) for b in server.batches.values()
                if b.kind == "anthropic"]
    assert all(len(t) == 1 for t in tags), tags
    return [t[0] for t in tags]


def _done(job, out):
    assert job.wait(interval=0.01, timeout=10).done
    return job.fetch(out)


ROWS = [
    {"id": "chat", "model": "gpt-4.1-mini", "client_type": "openai-chat", "messages": _user("Ann is forty."),
     "config": {"max_tokens": 50}, "output_schema": PERSON},
    {"id": "claude", "model": "claude-sonnet-4-6", "messages": _user("Ann is forty."), "config": {"max_tokens": 50},
     "output_schema": PERSON},
    {"id": "gem", "model": "gemini-2.5-flash", "messages": _user("Ann is forty."), "output_schema": PERSON},
    {"id": "ok", "model": "gpt-4.1-mini", "client_type": "openai-chat", "messages": _user("valid at once"),
     "config": {"max_tokens": 50}, "output_schema": PERSON},
    {"id": "plain", "model": "gpt-4.1-mini", "client_type": "openai-chat", "messages": _user("no type")},
]


def test_rows_that_do_not_validate_go_into_a_second_round_with_their_problems(monkeypatch, tmp_path):
    out = str(tmp_path / "out.jsonl")
    with _fake(monkeypatch, fixes_on_reask) as server:
        job = B.submit(_write(tmp_path / "in.jsonl", ROWS), backend="auto")
        first = _done(job, out)
        assert (first.done, first.failed, first.missing) == (2, 0, [])
        assert sorted(first.pending) == ["chat", "claude", "gem"]  # in the re-ask round now
        rows = {r["id"]: r for r in read_output(out)}
        assert sorted(rows) == ["ok", "plain"]
        assert (rows["ok"]["value"], rows["ok"]["attempts"]) == (GOOD, 1)
        assert "value" not in rows["plain"] and rows["plain"]["message"]["content_items"][0]["text"] == "echo: no type"
        second = _done(B.load(job.state_path), out)  # (another process: the rounds are in the state file)
        assert (second.done, second.failed, second.pending, second.missing) == (3, 0, [], [])
        assert _done(B.load(job.state_path), out).done == 0  # fetching again writes nothing twice
        bodies = _bodies(server)
        tags = _tags(server)
    # a re-ask round's Anthropic batch carries a tag of its own (its create call's), kept in the state
    assert len(set(tags)) == 2 and tags == [b["tag"] for b in B.load(job.state_path)._state["batches"]
                                            if b["backend"] == "anthropic"]
    rows = {r["id"]: r for r in read_output(out)}
    assert len(rows) == 5 and len(read_output(out)) == 5
    for rid in ("chat", "claude", "gem"):
        row = rows[rid]
        assert (row["value"], row["attempts"], row["error"]) == (GOOD, 2, None), rid
        assert json.loads(row["message"]["content_items"][0]["text"]) == GOOD
    # usage and batch-price cost summed over the two rounds
    chat = rows["chat"]
    turns = [{"prompt_tokens": len(text.split()) + 3, "response_tokens": len(text.split()) + 1}  # (the fake's counts)
             for text in ("Ann is forty.", REASK)]
    assert chat["usage_metadata"] == {"cached_tokens": None, "thoughts_tokens": None,
                                      "prompt_tokens": sum(t["prompt_tokens"] for t in turns),
                                      "response_tokens": sum(t["response_tokens"] for t in turns)}
    assert chat["cost_usd"] == pytest.approx(sum(B.batch_cost("gpt-4.1-mini", t) for t in turns))
    # round 1: the schema as client.parse sends it on each wire; round 2: the re-ask turns, on the same wire
    round1 = dict(kv for batch in bodies[:3] for kv in batch)
    round2 = dict(kv for batch in bodies[3:] for kv in batch)
    assert sorted(round2) == ["chat", "claude", "gem"]
    strict = {"type": "json_schema", "json_schema": {"name": "output", "schema": PERSON, "strict": True}}
    assert round1["chat"]["response_format"] == round2["chat"]["response_format"] == strict
    assert round1["chat"]["messages"] == [{"role": "user", "content": "Ann is forty."}]
    assert round2["chat"]["messages"] == [{"role": "user", "content": "Ann is forty."},
                                          {"role": "assistant", "content": json.dumps(BAD)},
                                          {"role": "user", "content": REASK}]
    assert round2["claude"]["output_config"] == {"format": {"type": "json_schema", "schema": PERSON}}
    assert [m["role"] for m in round2["claude"]["messages"]] == ["user", "assistant", "user"]
    assert round2["claude"]["messages"][2]["content"] == [{"type": "text", "text": REASK}]
    assert round2["gem"]["generationConfig"]["responseJsonSchema"] == PERSON
    assert [c["role"] for c in round2["gem"]["contents"]] == ["user", "model", "user"]
    assert round2["gem"]["contents"][2]["parts"] == [{"text": REASK}]


def test_fetch_without_the_input_file_is_refused_when_rows_need_it_and_goes_on_when_none_do(monkeypatch, tmp_path):
    # with the input moved away, a typed row's answer that did not hold was written as a plain answer (no "value",
    # no re-ask round) and a traced row went untraced: the row's own output type is only in the input
    out = str(tmp_path / "out.jsonl")
    path = tmp_path / "in.jsonl"
    with _fake(monkeypatch, fixes_on_reask) as server:
        job = B.submit(_write(path, [ROWS[0], ROWS[4]]), backend="openai")
        assert job.wait(interval=0.01, timeout=10).done
        assert job._state["input_needed"] == ["output type"]
        path.rename(tmp_path / "moved.jsonl")
        with pytest.raises(ConfigError) as caught:
            B.load(job.state_path).fetch(out)
        assert str(caught.value) == (
            "the input file {} is not there, and a fetch reads rows of this job from it (their output type): restore "
            "it to fetch (nothing was fetched)".format(job.input_path))
        assert read_output(out) == []
        (tmp_path / "moved.jsonl").rename(path)
        summary = B.load(job.state_path).fetch(out)
        assert (summary.done, summary.pending) == (1, ["chat"])  # (plain answered; chat in its re-ask round)
        traced = dict(ROWS[4], id="t", config={"trace_id": "tr-1"})
        other = B.submit(_write(tmp_path / "traced.jsonl", [traced]), backend="openai",
                         state_path=str(tmp_path / "traced.state"))
        typed = B.submit(_write(tmp_path / "typed.jsonl", [ROWS[4]]), backend="openai", output=Person,
                         state_path=str(tmp_path / "typed.state"))
        plain = B.submit(_write(tmp_path / "plain.jsonl", [ROWS[4]]), backend="openai",
                         state_path=str(tmp_path / "plain.state"))
        assert (other._state["input_needed"], typed._state["input_needed"]) == (["trace_id"], ["output type"])
        assert "input_needed" not in plain._state
        assert plain.wait(interval=0.01, timeout=10).done
        (tmp_path / "plain.jsonl").unlink()  # no row needs it: the results are fetched as before
        assert B.load(plain.state_path).fetch(str(tmp_path / "plain_out.jsonl")).done == 1


def test_when_the_rounds_run_out_the_row_is_an_output_validation_error_row(monkeypatch, tmp_path):
    out = str(tmp_path / "out.jsonl")
    with _fake(monkeypatch, never_fixes) as server:
        job = B.submit(_write(tmp_path / "in.jsonl", ROWS[:1]), backend="openai", output_retries=1)
        assert _done(job, out).pending == ["chat"]
        last = _done(job, out)
        assert (last.done, last.failed, last.failed_total, last.pending) == (0, 1, 1, [])
        assert len(server.batches) == 2
    (row,) = read_output(out)
    assert "value" not in row and row["attempts"] == 2
    assert row["error"] == {
        "type": "OutputValidationError", "status": None,
        "message": "the answer did not validate as the JSON Schema 'given' after 2 attempt(s): "
                   "age: expected an integer, got \"forty\"",
        "problems": [["age: expected an integer, got \"forty\""], ["age: expected an integer, got \"forty\""]],
        "candidate_text": json.dumps(BAD), "candidate_json": BAD}
    assert row["usage_metadata"]["response_tokens"] == len("Ann is forty.".split()) + len(REASK.split()) + 2
    assert row["cost_usd"] > 0  # both rounds were paid for


def test_submit_output_types_every_row_without_its_own_and_zero_retries_sends_one_round(monkeypatch, tmp_path):
    out = str(tmp_path / "out.jsonl")
    rows = [{"id": "a", "model": "gpt-4.1-mini", "client_type": "openai-chat", "messages": _user("valid")},
            {"id": "b", "model": "gpt-4.1-mini", "client_type": "openai-chat", "messages": _user("Ann")}]
    with _fake(monkeypatch, fixes_on_reask) as server:
        job = B.submit(_write(tmp_path / "in.jsonl", rows), backend="openai", output=Person, output_retries=0)
        summary = _done(job, out)
        assert (summary.done, summary.failed, summary.pending) == (1, 1, [])
        (batch,) = _bodies(server)
    assert batch[0][1]["response_format"]["json_schema"]["schema"] == PERSON  # the dataclass's schema
    got = {r["id"]: r for r in read_output(out)}
    assert got["a"]["value"] == GOOD
    assert got["b"]["error"]["type"] == "OutputValidationError" and got["b"]["attempts"] == 1
    with open(job.state_path) as handle:
        state = json.load(handle)
    assert (state["output"], state["output_retries"]) == (  # the type's JSON Schema: a later process checks with it
        {"type": "object", "properties": PERSON["properties"], "required": ["name", "age"]}, 0)


def test_bad_typed_input_is_refused_before_anything_is_sent(monkeypatch, tmp_path):
    with _fake(monkeypatch, fixes_on_reask) as server:
        bad = dict(ROWS[0], output_schema={"type": "object", "properties": {"x": {"type": "strnig"}}})
        with pytest.raises(ConfigError, match="line 1: 'output_schema': "):
            B.submit(_write(tmp_path / "bad.jsonl", [bad]), backend="openai")
        with pytest.raises(ConfigError, match="output: "):
            B.submit(_write(tmp_path / "in.jsonl", ROWS[4:]), backend="openai", output=object)
        clash = dict(ROWS[4], config={"response_format": {"type": "json_object"}})
        with pytest.raises(ConfigError, match="line 1 .*the output type sets response_format"):
            B.submit(_write(tmp_path / "clash.jsonl", [clash]), backend="openai", output=Person)
        tools = dict(ROWS[4], config={"tools": [{"name": "look"}]})  # (a call the re-ask round could not answer)
        with pytest.raises(ConfigError, match=r"line 1 .*config\['tools'\]: parse\(\) runs no tools"):
            B.submit(_write(tmp_path / "tools.jsonl", [tools]), backend="openai", output=Person)
        emb = {"id": "e", "model": "text-embedding-3-small", "messages": _user("x"), "output_schema": PERSON}
        with pytest.raises(ConfigError, match="an embedding row has no output type"):
            B.submit(_write(tmp_path / "emb.jsonl", [emb]), backend="openai")
        assert server.requests == []


def test_a_state_file_with_malformed_rounds_is_refused(monkeypatch, tmp_path):
    out = str(tmp_path / "out.jsonl")
    with _fake(monkeypatch, fixes_on_reask):
        job = B.submit(_write(tmp_path / "in.jsonl", ROWS[:1]), backend="openai")
        _done(job, out)
    with open(job.state_path) as handle:
        state = json.load(handle)
    assert state["batches"][1]["round"] == 2 and state["batches"][0]["reasked"] == ["chat"]
    state["batches"][1]["typed"]["chat"]["attempt"] = "one"
    with open(job.state_path, "w") as handle:
        json.dump(state, handle)
    with pytest.raises(ConfigError, match="batches\\[1\\].typed\\['chat'\\] is not a row's earlier rounds"):
        jobs.load(job.state_path)
    state["batches"][1]["typed"]["chat"]["attempt"] = 1
    state["output"] = {"type": "strnig"}
    with open(job.state_path, "w") as handle:
        json.dump(state, handle)
    with pytest.raises(ConfigError, match="output is not a JSON Schema the typed output takes"):
        jobs.load(job.state_path)


def test_batch_fetch_wait_waits_for_the_reask_rounds_too(monkeypatch, tmp_path, capsys):
    from agenthub.__main__ import main

    out = str(tmp_path / "out.jsonl")
    with _fake(monkeypatch, fixes_on_reask):
        path = _write(tmp_path / "in.jsonl", ROWS[:2])
        assert main(["batch", "submit", path, "--backend", "auto"]) == 0
        state = capsys.readouterr().out.strip()
        assert main(["batch", "fetch", state, "-o", out, "--wait", "--interval", "0.01", "--timeout", "20"]) == 0
    err = capsys.readouterr().err
    assert "agenthub batch fetch: 2 answers and 0 error rows written to" in err
    assert {r["id"]: (r["value"], r["attempts"]) for r in read_output(out)} == {"chat": (GOOD, 2), "claude": (GOOD, 2)}


def test_a_cancelled_job_sends_no_new_round_and_lists_those_rows_as_missing(monkeypatch, tmp_path):
    out = str(tmp_path / "out.jsonl")
    with _fake(monkeypatch, fixes_on_reask) as server:
        job = B.submit(_write(tmp_path / "in.jsonl", ROWS[:1] + ROWS[3:4]), backend="openai")
        assert job.wait(interval=0.01, timeout=10).done
        job.cancel()  # every batch had ended: nothing to cancel remotely, but no re-ask round is sent now
        summary = job.fetch(out)
        assert (summary.done, summary.pending, summary.missing) == (1, [], ["chat"])
        assert len(server.batches) == 1
    assert [r["id"] for r in read_output(out)] == ["ok"]


def test_batch_fetch_wait_creates_a_reask_round_a_cut_short_fetch_left_and_waits_for_it(monkeypatch, tmp_path, capsys):
    """A fetch planned the re-ask round and its create call failed: the job is "submitting" with no process on
    it.  `fetch --wait` does not poll that until its timeout: its fetch creates the round, then it waits for it."""
    from agenthub.__main__ import main
    from agenthub.errors import TransportError

    out = str(tmp_path / "out.jsonl")
    real = B.BatchJob._create
    cut = [1]

    def create(self, entries, samples):
        if cut and any("round" in self._state["batches"][index] for index in entries):
            cut.pop()
            raise TransportError("the connection was reset")
        return real(self, entries, samples)

    monkeypatch.setattr(B.BatchJob, "_create", create)
    with _fake(monkeypatch, fixes_on_reask) as server:
        job = B.submit(_write(tmp_path / "in.jsonl", ROWS[:1]), backend="openai")
        assert job.wait(interval=0.01, timeout=10).done
        with pytest.raises(TransportError):
            job.fetch(out)
        assert B.load(job.state_path).status().state == "submitting" and len(server.batches) == 1
        capsys.readouterr()
        server.polls = 2  # (the round ends at its second look: the fetch that creates it sees it running)

        def sleep(seconds):
            raise AssertionError("polled again after {} s: the job cannot go on without a fetch".format(seconds))

        monkeypatch.setattr(B, "time", types.SimpleNamespace(time=time.time, monotonic=time.monotonic, sleep=sleep))
        assert main(["batch", "fetch", job.state_path, "-o", out, "--wait", "--interval", "3600"]) == 0
        assert len(server.batches) == 2
    assert capsys.readouterr().err.splitlines()[-1].startswith(
        "agenthub batch fetch: 1 answers and 0 error rows written to")
    assert {r["id"]: (r["value"], r["attempts"]) for r in read_output(out)} == {"chat": (GOOD, 2)}


def test_a_reask_rounds_answer_that_does_not_parse_keeps_the_cost_of_the_rounds_before(monkeypatch, tmp_path):
    # the first round's answer (paid for, at batch price) did not validate; the re-ask round's answer did not parse:
    # its error row had usage_metadata and cost_usd None, as if nothing had been paid (the live run and a failed
    # re-ask request both keep what the earlier rounds cost)
    def unreadable_reask(provider, api, body):
        if last_user_text(provider, body).startswith("The answer did not match"):
            return 200, {"id": "x", "object": "chat.completion", "choices": 5}
        return _with_text(provider, api, body, json.dumps(BAD))

    out = str(tmp_path / "out.jsonl")
    with _fake(monkeypatch, unreadable_reask):
        job = B.submit(_write(tmp_path / "in.jsonl", ROWS[:1]), backend="openai")
        assert _done(job, out).pending == ["chat"]
        last = _done(job, out)
        assert (last.done, last.failed, last.pending) == (0, 1, [])
    (row,) = read_output(out)
    first = {"cached_tokens": None, "thoughts_tokens": None, "prompt_tokens": len("Ann is forty.".split()) + 3,
             "response_tokens": len("Ann is forty.".split()) + 1}
    assert row["error"] == {"type": "StreamProtocolError", "status": None,
                            "message": "malformed payload in the openai-chat stream: TypeError: 'int' object is not "
                                       "subscriptable"}
    assert (row["attempts"], row["message"], row["usage_metadata"]) == (2, None, first)
    assert row["cost_usd"] == B.batch_cost("gpt-4.1-mini", first) > 0
