"""`agenthub chat MODEL "..." --schema FILE.json|JSON|'name str, age int'` (issue 40 item 6): the answer goes
through client.parse's loop and stdout gets the validated JSON (one line in a pipe or with --json); the concise
form's parser; bad schemas refused before anything is sent.  Real processes against a local server."""

import json
import os
import subprocess
import sys

import pytest

from agenthub.apps.chat import concise_schema
from agenthub.errors import ConfigError

from conftest import chat_answer, local, server  # noqa: F401  (server: the fixture)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REASK = ("The answer did not match the required JSON Schema:\n- age: expected an integer, got \"forty\"\n"
         "Answer again with the corrected value only.")


def _env():
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
    env.update(PYTHONPATH=ROOT, NO_PROXY="*", PYTHONIOENCODING="utf-8", AGENTHUB_LOG_PROMPTS="0")
    return env


def _chat(server, *argv):
    return subprocess.run([sys.executable, "-m", "agenthub", "chat", "m"] + list(argv) + local(server),
                          capture_output=True, text=True, env=_env(), cwd=ROOT, timeout=60)


def test_the_concise_form_is_a_json_schema():
    assert concise_schema("name str, age int, score float, ok bool, tags list[str], grid list[list[int]], nick str?") == {
        "type": "object", "properties": {
            "name": {"type": "string"}, "age": {"type": "integer"}, "score": {"type": "number"},
            "ok": {"type": "boolean"}, "tags": {"type": "array", "items": {"type": "string"}},
            "grid": {"type": "array", "items": {"type": "array", "items": {"type": "integer"}}},
            "nick": {"type": "string"}},
        "required": ["name", "age", "score", "ok", "tags", "grid"], "additionalProperties": False}
    assert concise_schema("name: str") == concise_schema("name str")


@pytest.mark.parametrize("text, words", [
    ("name string", "field 'name' has the type 'string'; the concise form takes str, int, float, bool and list[T]"),
    ("tags list[dict]", "field 'tags' has the type 'dict'"),
    ("name str, , age int", "an empty field"),
    ("age", "'age' is not a field (NAME TYPE"),
    ("a int, a str", "the field 'a' is given twice"),
])
def test_the_concise_form_refuses_anything_else_naming_the_field(text, words):
    with pytest.raises(ConfigError) as caught:
        concise_schema(text)
    assert words in str(caught.value)


def test_schema_prints_the_validated_json_after_a_reask(server):
    server.answers.extend([chat_answer('{"name": "Ann", "age": "forty", "tags": []}'),
                           chat_answer('Sure: {"name": "Ann", "age": 40, "tags": ["x"]}')])
    done = _chat(server, "Ann is forty.", "--schema", "name str, age int, tags list[str], nick str?")
    assert done.returncode == 0, done.stderr
    assert done.stdout == '{"name": "Ann", "age": 40, "tags": ["x"]}\n'
    assert done.stderr.splitlines() == [
        "[valid after 2 attempts: the answers before did not match the schema]",
        "[done: stop] tokens: prompt 6, cached ?, thinking ?, response 2"]
    first, second = (r["body"] for r in server.requests)
    assert first["response_format"] == {"type": "json_schema", "json_schema": {"name": "output", "strict": True, "schema": {
        "type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"},
                                         "tags": {"type": "array", "items": {"type": "string"}},
                                         "nick": {"type": ["string", "null"]}},
        "required": ["name", "age", "tags", "nick"], "additionalProperties": False}}}
    assert second["messages"][1:] == [{"role": "assistant", "content": '{"name": "Ann", "age": "forty", "tags": []}'},
                                      {"role": "user", "content": REASK}]


def test_schema_from_a_file_and_json_print_one_line(server, tmp_path):
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    path = tmp_path / "city.json"
    path.write_text(json.dumps(schema), encoding="utf-8")
    server.answers.append(chat_answer('{"city": "Oslo"}'))
    done = _chat(server, "Capital of Norway?", "--schema", str(path), "--json")
    assert done.returncode == 0, done.stderr
    assert done.stdout == '{"city": "Oslo"}\n'


def test_when_the_reasks_run_out_the_error_is_one_line_and_exit_status_1(server):
    server.answers.extend([chat_answer('{"age": "x"}') for _ in range(3)])
    done = _chat(server, "?", "--schema", "age int")
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.startswith("error: OutputValidationError: the answer did not validate")
    assert len(server.requests) == 3  # the first answer and two re-asks


@pytest.mark.parametrize("schema, words", [
    ("name string", "error: ConfigError: --schema: field 'name' has the type 'string'"),
    ('{"type": "object", "properties": {"x": {"type": "strnig"}}}', "error: ConfigError: --schema: "),
    ('{"type": "object"', "error: ConfigError: --schema is neither a JSON Schema nor a file holding one"),
])
def test_a_bad_schema_is_refused_before_anything_is_sent(server, schema, words):
    done = _chat(server, "?", "--schema", schema)
    assert done.returncode == 1
    assert done.stderr.startswith(words), done.stderr
    assert server.requests == []
