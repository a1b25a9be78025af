"""Typed output in bulk jobs (issue 40 item 6): jobs.run(..., output=...) and a row's "output_schema" run each
row through client.parse's loop against a local server; exact output rows, exact re-ask request bodies, exact
error rows when the re-asks run out; bad schemas refused before anything is sent."""

import dataclasses
import json
from typing import List

import pytest

from agent_streams import chat_text
from sse_server import Answer, SSEServer

from agenthub import jobs
from agenthub.errors import ConfigError
from agenthub.jobs import read_output

PERSON = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
          "required": ["name", "age"], "additionalProperties": False}
STRICT = dict(PERSON)  # (every member required already: the strict form is the schema itself)
REASK = ("The answer did not match the required JSON Schema:\n- age: expected an integer, got \"forty\"\n"
         "Answer again with the corrected value only.")


@dataclasses.dataclass
class Person:
    name: str
    age: int


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-jobs-output-0001")
    monkeypatch.setattr("agenthub.attempts.backoff", lambda attempt, retry_after: 0.01)


def _user(text):
    return {"role": "user", "content_items": [{"type": "text", "text": text}]}


def _row(server, rid, text, **extra):
    row = {"id": rid, "model": "gpt-4o-mini", "messages": [_user(text)], "config": {"max_tokens": 50},
           "client_type": "openai-chat", "base_url": server.url + "/v1"}
    row.update(extra)
    return row


def _write(path, rows):
    with open(str(path), "w") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")
    return str(path)


def _by_id(path):
    return {row["id"]: row for row in read_output(str(path))}


def _answer(obj, usage=(20, 3)):
    return Answer([chat_text(obj if isinstance(obj, str) else json.dumps(obj), usage=usage)])


def test_a_rows_output_schema_gives_its_value_and_a_reask_goes_out_as_client_parse_sends_it(tmp_path):
    with SSEServer() as server:
        server.answers += [_answer({"name": "Ann", "age": "forty"}), _answer({"name": "Ann", "age": 40})]
        src = _write(tmp_path / "in.jsonl", [_row(server, "p1", "Ann is forty.", output_schema=PERSON)])
        out = tmp_path / "out.jsonl"
        summary = jobs.run(src, str(out), workers=1, progress=False)
    assert (summary.done, summary.failed) == (1, 0)
    row = _by_id(out)["p1"]
    assert list(row) == ["id", "model", "message", "usage_metadata", "finish_reason", "cost_usd", "error", "attempts",
                         "backend", "finished_at", "value"]
    assert row["value"] == {"name": "Ann", "age": 40}
    assert (row["error"], row["attempts"], row["finish_reason"], row["backend"]) == (None, 2, "stop", "live")
    assert row["usage_metadata"] == {"cached_tokens": None, "prompt_tokens": 40, "thoughts_tokens": None,
                                     "response_tokens": 6}
    assert row["message"]["content_items"] == [{"type": "text", "text": json.dumps({"name": "Ann", "age": 40})}]
    assert row["cost_usd"] == pytest.approx(2 * (20 * 0.15 + 3 * 0.6) / 1e6)
    first, second = (r["body"] for r in server.requests)
    fmt = {"type": "json_schema", "json_schema": {"name": "output", "schema": STRICT, "strict": True}}
    assert first["response_format"] == fmt and second["response_format"] == fmt
    assert first["messages"] == [{"role": "user", "content": "Ann is forty."}]
    assert second["messages"] == [{"role": "user", "content": "Ann is forty."},
                                  {"role": "assistant", "content": json.dumps({"name": "Ann", "age": "forty"})},
                                  {"role": "user", "content": REASK}]


def test_run_output_applies_to_the_rows_without_their_own_and_a_plain_row_stays_plain(tmp_path):
    other = {"type": "array", "items": {"type": "string"}}
    with SSEServer() as server:
        server.answers += [_answer({"name": "Bo", "age": 7}), _answer({"value": ["a", "b"]}), _answer("hello")]
        src = _write(tmp_path / "in.jsonl", [_row(server, "t1", "Bo is 7."),
                                             _row(server, "t2", "two letters", output_schema=other)])
        out = tmp_path / "out.jsonl"
        summary = jobs.run(src, str(out), workers=1, progress=False, output=Person)
        assert summary.done == 2
        plain = _write(tmp_path / "plain.jsonl", [_row(server, "u1", "hi")])
        jobs.run(plain, str(tmp_path / "plain_out.jsonl"), workers=1, progress=False)
    rows = _by_id(out)
    assert rows["t1"]["value"] == {"name": "Bo", "age": 7}  # the dataclass's JSON, as Parsed.json
    assert rows["t2"]["value"] == ["a", "b"]  # the row's own schema (wrapped on the wire, unwrapped in the row)
    assert server.requests[1]["body"]["response_format"]["json_schema"]["schema"]["properties"] == {"value": other}
    assert "response_format" not in server.requests[2]["body"]
    assert "value" not in _by_id(tmp_path / "plain_out.jsonl")["u1"]


def test_when_the_reasks_run_out_the_row_is_an_output_validation_error_row_with_its_candidate(tmp_path):
    with SSEServer() as server:
        server.answers += [_answer("no json here"), _answer({"name": "Cy", "age": "forty"})]
        src = _write(tmp_path / "in.jsonl", [_row(server, "c1", "Cy", output_schema=PERSON)])
        out = tmp_path / "out.jsonl"
        summary = jobs.run(src, str(out), workers=1, progress=False, output_retries=1)
    assert (summary.done, summary.failed, len(server.requests)) == (0, 1, 2)
    assert (summary.tokens, summary.cost_usd) == (46, pytest.approx(2 * (20 * 0.15 + 3 * 0.6) / 1e6))  # (paid for)
    row = _by_id(out)["c1"]
    assert "value" not in row and row["message"] is None
    error = row["error"]
    assert list(error) == ["type", "message", "status", "problems", "candidate_text", "candidate_json"]
    assert error["type"] == "OutputValidationError" and error["status"] is None
    assert error["problems"] == [["the answer is not JSON (it begins 'no json here')"],
                                 ["age: expected an integer, got \"forty\""]]
    assert error["candidate_text"] == json.dumps({"name": "Cy", "age": "forty"})
    assert error["candidate_json"] == {"name": "Cy", "age": "forty"}
    assert row["attempts"] == 2
    assert row["usage_metadata"]["prompt_tokens"] == 40  # what the two attempts used (they were paid for)
    assert row["cost_usd"] == pytest.approx(2 * (20 * 0.15 + 3 * 0.6) / 1e6)
    # an error row counts as answered: a rerun sends nothing; retry_failed sends it again
    with SSEServer() as server:
        server.answers += [_answer({"name": "Cy", "age": 41})]
        _write(tmp_path / "in.jsonl", [_row(server, "c1", "Cy", output_schema=PERSON)])
        again = jobs.run(src, str(out), workers=1, progress=False, retry_failed=True)
    assert again.done == 1 and _by_id(out)["c1"]["value"] == {"name": "Cy", "age": 41}


def test_a_transport_error_is_the_attempt_loops_and_a_400_is_the_rows_error(tmp_path):
    with SSEServer() as server:
        server.answers += [Answer([b'{"error": {"message": "busy"}}'], status=503,
                                  headers={"Content-Type": "application/json"}),
                           _answer({"name": "Di", "age": 3}),
                           Answer([b'{"error": {"message": "bad", "type": "invalid_request_error"}}'], status=400,
                                  headers={"Content-Type": "application/json"})]
        src = _write(tmp_path / "in.jsonl", [_row(server, "d1", "Di", output_schema=PERSON),
                                             _row(server, "d2", "Ed", output_schema=PERSON)])
        out = tmp_path / "out.jsonl"
        summary = jobs.run(src, str(out), workers=1, progress=False)
    rows = _by_id(out)
    assert (summary.done, summary.failed) == (1, 1)
    assert (rows["d1"]["value"], rows["d1"]["attempts"]) == ({"name": "Di", "age": 3}, 2)  # one retry, no re-ask
    assert (rows["d2"]["error"]["type"], rows["d2"]["error"]["status"], rows["d2"]["attempts"]) == (
        "UpstreamError", 400, 1)
    assert "problems" not in rows["d2"]["error"]


def test_a_reask_that_fails_keeps_the_paid_answers_before_it_in_the_row_and_the_summary(tmp_path):
    # the first answer (paid for, and charged by the Budget) did not hold; its re-ask got a 400: the error row had
    # cost_usd and usage_metadata null, and JobSummary counted nothing (the batch engines keep the earlier rounds')
    from agenthub import Budget

    bad = Answer([b'{"error": {"message": "bad", "type": "invalid_request_error"}}'], status=400,
                 headers={"Content-Type": "application/json"})
    with SSEServer() as server:
        server.answers += [_answer({"name": "Ann", "age": "forty"}), bad]
        src = _write(tmp_path / "in.jsonl", [_row(server, "f1", "Ann", output_schema=PERSON)])
        out = tmp_path / "out.jsonl"
        budget = Budget(1.0)
        summary = jobs.run(src, str(out), workers=1, progress=False, budget=budget)
    row = _by_id(out)["f1"]
    paid = (20 * 0.15 + 3 * 0.6) / 1e6
    assert (row["error"]["type"], row["error"]["status"], row["attempts"]) == ("UpstreamError", 400, 2)
    assert row["usage_metadata"] == {"cached_tokens": None, "prompt_tokens": 20, "thoughts_tokens": None,
                                     "response_tokens": 3}
    assert row["cost_usd"] == pytest.approx(paid)
    assert (summary.failed, summary.tokens) == (1, 23)
    assert summary.cost_usd == pytest.approx(paid) and budget.spent_usd == pytest.approx(paid)


@pytest.mark.parametrize("schema, words", [
    ("a string", "line 1: 'output_schema' must be a JSON Schema object (got 'a string')"),
    ({"type": "object", "properties": {"x": {"type": "strnig"}}}, "line 1: 'output_schema': "),
    ({"type": "object", "patternProperties": {}}, "line 1: 'output_schema': "),
])
def test_a_schema_the_compiler_refuses_is_named_by_line_and_field_before_anything_is_sent(tmp_path, schema, words):
    with SSEServer() as server:
        src = _write(tmp_path / "in.jsonl", [_row(server, "b1", "x", output_schema=schema)])
        with pytest.raises(ConfigError) as caught:
            jobs.run(src, str(tmp_path / "out.jsonl"), progress=False)
    assert words in str(caught.value)
    assert server.requests == []


def test_bad_output_arguments_are_refused_before_anything_is_sent(tmp_path):
    with SSEServer() as server:
        src = _write(tmp_path / "in.jsonl", [_row(server, "b1", "x", config={"response_format": {"type": "json_object"}})])
        out = str(tmp_path / "out.jsonl")
        with pytest.raises(ConfigError, match="output: "):
            jobs.run(src, out, progress=False, output=object)
        with pytest.raises(ConfigError, match="output_retries must be an int from 0 to 10"):
            jobs.run(src, out, progress=False, output=Person, output_retries=11)
        with pytest.raises(ConfigError, match="line 1 set their own"):
            jobs.run(src, out, progress=False, output=Person)
        with pytest.raises(ConfigError, match="not on Ray"):
            jobs.run(src, out, progress=False, output=Person, engine="ray")
        both = _write(tmp_path / "both.jsonl", [_row(server, "b2", "x", output_schema=PERSON,
                                                     config={"response_format": {"type": "json_object"}})])
        with pytest.raises(ConfigError, match="line 1: 'output_schema' and config\\['response_format'\\]"):
            jobs.run(both, out, progress=False)
        tool = {"name": "look"}  # (a typed row runs no tools: a call could not be answered, nor re-asked after)
        tools = _write(tmp_path / "tools.jsonl", [_row(server, "b3", "x", config={"tools": [tool]})])
        with pytest.raises(ConfigError) as caught:
            jobs.run(tools, out, progress=False, output=Person)
        assert str(caught.value) == ("output= types each row's answer and runs no tools, and line 1 offer tools the "
                                     "model may call: leave them out (or tool_choice 'none') (nothing was sent)")
        own = _write(tmp_path / "own.jsonl", [_row(server, "b4", "x", output_schema=PERSON, config={"tools": [tool]})])
        with pytest.raises(ConfigError, match="line 1: config\\['tools'\\]: parse\\(\\) runs no tools"):
            jobs.run(own, out, progress=False)
    assert server.requests == []


def test_a_refusal_is_an_output_refused_error_row_never_asked_again(tmp_path):
    from agent_streams import _sse

    chunks = [{"id": "c", "choices": [{"index": 0, "delta": {"refusal": "I can't help with that."},
                                       "finish_reason": None}]},
              {"id": "c", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
              {"id": "c", "choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 4}}]
    with SSEServer() as server:
        server.answers += [Answer([_sse(chunks) + b"data: [DONE]\n\n"])]
        src = _write(tmp_path / "in.jsonl", [_row(server, "x1", "?", output_schema=PERSON)])
        out = tmp_path / "out.jsonl"
        summary = jobs.run(src, str(out), workers=1, progress=False)
    assert (summary.failed, len(server.requests)) == (1, 1)
    row = _by_id(out)["x1"]
    assert row["error"] == {"type": "OutputRefusedError", "status": None,
                            "message": "the model refused to answer with the output type: I can't help with that."}
    assert (row["attempts"], row["usage_metadata"]["response_tokens"]) == (1, 4)


def test_a_job_stopping_between_reasks_writes_no_row_and_a_rerun_sends_the_row_again(tmp_path, monkeypatch):
    from agenthub.jobs import runner

    stopped = []
    real = runner._TypedRow.streaming_response

    def stop_before_the_reask(self, messages, config=None):
        if len(messages) > 1:  # the re-ask: the job is told to stop (Ctrl-C) just before it
            self.job.stop_new.set()
            stopped.append(True)
        return real(self, messages, config)

    monkeypatch.setattr(runner._TypedRow, "streaming_response", stop_before_the_reask)
    with SSEServer() as server:
        server.answers += [_answer({"name": "Ann", "age": "forty"})]
        src = _write(tmp_path / "in.jsonl", [_row(server, "s1", "Ann", output_schema=PERSON)])
        out = tmp_path / "out.jsonl"
        summary = jobs.run(src, str(out), workers=1, progress=False)
        assert stopped and len(server.requests) == 1
    assert (summary.done, summary.failed, summary.left) == (0, 0, 1)
    assert read_output(str(out)) == []


def test_a_typed_row_whose_reask_request_failed_keeps_what_the_answer_before_it_cost(tmp_path):
    """The first answer did not validate (paid for), the re-ask's request failed: the error row (and the
    JobSummary) said nothing of the first answer's usage and cost; they are the error's parse_usage_metadata and
    parse_cost_usd."""
    failed = Answer([b'{"error": {"message": "down"}}'], status=500, headers={"Content-Type": "application/json"})
    with SSEServer() as server:
        server.answers += [_answer({"name": "Di", "age": "forty"}), failed]
        src = _write(tmp_path / "in.jsonl", [_row(server, "d1", "Di", output_schema=PERSON)])
        out = tmp_path / "out.jsonl"
        summary = jobs.run(src, str(out), workers=1, progress=False, max_retries=0)
    row = _by_id(out)["d1"]
    assert (row["error"]["type"], row["error"]["status"], row["attempts"]) == ("ServerError", 500, 2)
    assert row["usage_metadata"] == {"cached_tokens": None, "prompt_tokens": 20, "thoughts_tokens": None,
                                     "response_tokens": 3}
    assert row["cost_usd"] == (20 * 0.15 + 3 * 0.6) / 1e6
    assert (summary.failed, summary.tokens, summary.cost_usd) == (1, 23, (20 * 0.15 + 3 * 0.6) / 1e6)
