"""Typed output (issue 40): client.parse / streaming_parse on every wire against a local server.

Exact request bodies (the schema as each wire takes it, the re-ask turns), exact values and errors; the
fallbacks (a forced tool where a model has no structured outputs, JSON mode plus the schema in the system
prompt where the endpoint has no JSON Schema); transport errors retried by the attempt loop, never
re-asked; refusals never re-asked; the last candidate kept when the re-asks run out."""

import dataclasses
import enum
import json
import pickle
import sys
from typing import Any, Dict, List, Literal, Optional, Union

import pytest

from agent_streams import BASES, anthropic_calls, chat_text, gemini_text, responses_text, anthropic_text, _sse
from sse_server import Answer, SSEServer

import agenthub
from agenthub import AutoLLMClient, ConfigError, OutputRefusedError, OutputValidationError, Parsed
from agenthub.output.shape import shape, strict_schema
from agenthub.stores import MemoryStore

USER = agenthub.user("The invoice, please.")
MODELS = {"openai-chat": "gpt-4o-mini", "openai-responses": "gpt-5.5", "anthropic": "claude-sonnet-4-6",
          "gemini": "gemini-2.5-flash"}
TEXT = {"openai-chat": chat_text, "openai-responses": responses_text, "anthropic": anthropic_text,
        "gemini": gemini_text}


class Kind(enum.Enum):
    GOODS = "goods"
    SERVICE = "service"


@dataclasses.dataclass
class Item:
    name: str
    price: float


@dataclasses.dataclass
class Invoice:
    number: str
    items: List[Item]
    kind: Kind
    note: Optional[str] = None


GOOD = {"number": "F-1", "items": [{"name": "pen", "price": 1.5}], "kind": "goods", "note": None}
BAD = {"number": "F-1", "items": [{"name": "pen", "price": "12,50"}], "kind": "food", "note": None}
VALUE = Invoice("F-1", [Item("pen", 1.5)], Kind.GOODS)
ITEM = {"type": "object", "properties": {"name": {"type": "string"}, "price": {"type": "number"}},
        "required": ["name", "price"], "additionalProperties": False}
STRICT = {"type": "object", "properties": {
    "number": {"type": "string"}, "items": {"type": "array", "items": {"$ref": "#/$defs/Item"}},
    "kind": {"enum": ["goods", "service"], "type": "string"},
    "note": {"anyOf": [{"type": "string"}, {"type": "null"}]}},
    "required": ["number", "items", "kind", "note"], "$defs": {"Item": ITEM}, "additionalProperties": False}
#: where each wire carries the schema
SCHEMA_AT = {
    "openai-chat": lambda body: body["response_format"],
    "openai-responses": lambda body: body["text"]["format"],
    "anthropic": lambda body: body["output_config"]["format"],
    "gemini": lambda body: body["generationConfig"],
}
SCHEMA_SENT = {
    "openai-chat": {"type": "json_schema", "json_schema": {"name": "output", "schema": STRICT, "strict": True}},
    "openai-responses": {"type": "json_schema", "name": "output", "schema": STRICT, "strict": True},
    "anthropic": {"type": "json_schema", "schema": STRICT},
    "gemini": {"responseMimeType": "application/json", "responseJsonSchema": STRICT},
}
REASK = ("The answer did not match the required JSON Schema:\n- items[0].price: expected a number, got \"12,50\"\n"
         "- kind: expected one of \"goods\", \"service\", got \"food\"\nAnswer again with the corrected value only.")


def client_for(server, protocol, model=None, **kwargs):
    return AutoLLMClient(model or MODELS[protocol], api_key="sk-test-output-0001",
                         base_url=server.url + BASES[protocol], client_type=protocol,
                         max_retries=kwargs.pop("max_retries", 0), **kwargs)


@pytest.mark.parametrize("protocol", sorted(MODELS))
def test_an_answer_that_does_not_validate_is_asked_again_with_its_problems(protocol):
    text = TEXT[protocol]
    with SSEServer() as server:
        server.answers += [Answer([text("Here:\n```json\n" + json.dumps(BAD) + "\n```")]),
                           Answer([text(json.dumps(GOOD))])]
        parsed = client_for(server, protocol).parse([USER], Invoice)
    assert parsed.value == VALUE
    assert (parsed.attempts, parsed.json) == (2, GOOD)
    assert parsed.usage_metadata == {"cached_tokens": None, "prompt_tokens": 40, "thoughts_tokens": None,
                                     "response_tokens": 6}
    assert agenthub.text(parsed.message) == json.dumps(GOOD)
    first, second = (r["body"] for r in server.requests)
    assert SCHEMA_AT[protocol](first) == SCHEMA_SENT[protocol]
    assert SCHEMA_AT[protocol](second) == SCHEMA_SENT[protocol]
    # the invalid answer goes back as the assistant turn it was, the problems as the next user turn
    assert [m["role"] for m in parsed.messages] == ["assistant", "user"]
    assert parsed.messages[1] == {"role": "user", "content_items": [{"type": "text", "text": REASK}]}
    assert agenthub.text(parsed.messages[0]).endswith(json.dumps(BAD) + "\n```")


def test_the_chat_wire_carries_the_reask_as_two_more_messages():
    with SSEServer() as server:
        server.answers += [Answer([chat_text(json.dumps(BAD))]), Answer([chat_text(json.dumps(GOOD))])]
        client_for(server, "openai-chat").parse([USER], Invoice)
    assert server.requests[1]["body"]["messages"] == [
        {"role": "user", "content": "The invoice, please."},
        {"role": "assistant", "content": json.dumps(BAD)},
        {"role": "user", "content": REASK}]


def test_when_the_reasks_run_out_the_last_candidate_and_every_attempts_problems_are_kept():
    with SSEServer() as server:
        server.answers += [Answer([chat_text("not json at all")]), Answer([chat_text(json.dumps(BAD))])]
        with pytest.raises(OutputValidationError) as caught:
            client_for(server, "openai-chat").parse([USER], Invoice, retries=1)
    error = caught.value
    assert len(server.requests) == 2
    assert (error.candidate_text, error.candidate_json, error.attempts) == (json.dumps(BAD), BAD, 2)
    assert error.problems == [["the answer is not JSON (it begins 'not json at all')"],
                              ['items[0].price: expected a number, got "12,50"',
                               'kind: expected one of "goods", "service", got "food"']]
    assert error.usage_metadata == {"cached_tokens": None, "prompt_tokens": 40, "thoughts_tokens": None,
                                    "response_tokens": 6}
    assert str(error).startswith("the answer did not validate as Invoice after 2 attempt(s): items[0].price")
    again = pickle.loads(pickle.dumps(error))
    assert (type(again), again.problems, again.candidate_json) == (OutputValidationError, error.problems, BAD)


def test_the_error_answers_to_the_api_names_candidate_and_errors_too():
    # API.md names OutputValidationError's fields .candidate (last text and JSON) and .errors (per attempt)
    error = OutputValidationError("no", candidate_text="[1", candidate_json=None, problems=[["not JSON"]], attempts=1)
    assert (error.candidate, error.errors) == ({"text": "[1", "json": None}, [["not JSON"]])
    again = pickle.loads(pickle.dumps(OutputValidationError("no", candidate_text="{}", candidate_json={},
                                                            problems=[["x: missing"]], attempts=1)))
    assert (again.candidate, again.errors) == ({"text": "{}", "json": {}}, [["x: missing"]])


def test_a_transport_error_is_the_attempt_loops_retry_never_a_reask():
    with SSEServer() as server:
        server.answers += [Answer([b'{"error": {"message": "busy"}}'], status=503,
                                  headers={"Content-Type": "application/json"}),
                           Answer([chat_text(json.dumps(GOOD))])]
        parsed = client_for(server, "openai-chat", max_retries=1).parse([USER], Invoice)
    assert (parsed.value, parsed.attempts, parsed.messages) == (VALUE, 1, [])
    assert len(server.requests) == 2
    assert server.requests[0]["body"] == server.requests[1]["body"]


def test_a_refusal_is_a_typed_error_never_asked_again():
    chunks = [{"id": "c", "choices": [{"index": 0, "delta": {"refusal": "I can't help with that."},
                                       "finish_reason": None}]},
              {"id": "c", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
              {"id": "c", "choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 4}}]
    with SSEServer() as server:
        server.answers += [Answer([_sse(chunks) + b"data: [DONE]\n\n"])]
        with pytest.raises(OutputRefusedError) as caught:
            client_for(server, "openai-chat").parse([USER], Invoice)
    assert len(server.requests) == 1
    assert (caught.value.refusal, caught.value.attempts, caught.value.finish_reason) == (
        "I can't help with that.", 1, "stop")


def test_streamed_values_grow_and_a_reask_starts_a_new_one():
    with SSEServer() as server:
        server.answers += [Answer([chat_text(json.dumps(BAD))]), Answer([chat_text(json.dumps(GOOD))])]
        stream = client_for(server, "openai-chat").streaming_parse([USER], Invoice)
        seen = []
        for value in stream:
            seen.append((stream.attempt, json.loads(json.dumps(value))))
        parsed = stream.result()
    assert parsed.value == VALUE
    # one text delta per answer here: each attempt shows its whole value once, as a new object
    assert seen == [(1, BAD), (2, GOOD)]


def test_a_value_that_is_not_an_object_goes_out_wrapped_and_comes_back_unwrapped():
    with SSEServer() as server:
        server.answers += [Answer([chat_text(json.dumps({"value": [{"name": "pen", "price": 2}]}))])]
        parsed = client_for(server, "openai-chat").parse([USER], List[Item])
    assert parsed.value == [Item("pen", 2.0)]
    assert parsed.json == [{"name": "pen", "price": 2}]
    assert server.requests[0]["body"]["response_format"]["json_schema"]["schema"] == {
        "type": "object", "properties": {"value": {"type": "array", "items": {"$ref": "#/$defs/Item"}}},
        "required": ["value"], "additionalProperties": False, "$defs": {"Item": ITEM}}


def test_a_json_schema_dict_gives_the_validated_json():
    schema = {"type": "object", "properties": {"label": {"enum": ["spam", "ham"]}, "score": {"type": "number"}},
              "required": ["label"]}
    with SSEServer() as server:
        server.answers += [Answer([chat_text('{"label": "ham", "score": null}')])]
        parsed = client_for(server, "openai-chat").parse([USER], schema)
    assert parsed.value == {"label": "ham"}  # the null strict mode asked for an optional field is "left out"
    assert server.requests[0]["body"]["response_format"]["json_schema"]["schema"] == {
        "type": "object", "properties": {"label": {"enum": ["spam", "ham"]},
                                         "score": {"type": ["number", "null"]}},
        "required": ["label", "score"], "additionalProperties": False}


def test_a_claude_model_without_structured_outputs_gets_a_forced_tool():
    with SSEServer() as server:
        server.answers += [Answer([anthropic_calls([("toolu_1", "output", json.dumps(GOOD))])])]
        parsed = client_for(server, "anthropic", model="claude-sonnet-4-0").parse([USER], Invoice)
    body = server.requests[0]["body"]
    assert parsed.value == VALUE
    assert body["tool_choice"] == {"type": "tool", "name": "output"}
    assert body["tools"] == [{"name": "output", "description": "Answer with the requested value.",
                              "input_schema": STRICT}]
    assert "output_config" not in body or "format" not in body["output_config"]


def test_an_endpoint_in_json_mode_only_gets_the_schema_in_the_system_prompt():
    with SSEServer() as server:
        server.answers += [Answer([chat_text(json.dumps(GOOD))])]
        client = AutoLLMClient("kimi-k2.6", api_key="sk-test-output-0001", base_url=server.url + "/v1",
                               client_type="moonshot", max_retries=0)  # the row named: its quirks follow it here
        parsed = client.parse([USER], Invoice)
    body = server.requests[0]["body"]
    assert parsed.value == VALUE
    assert body["response_format"] == {"type": "json_object"}
    system = body["messages"][0]
    assert system["role"] == "system"
    assert system["content"].startswith("Answer with a single JSON value that matches this JSON Schema, and nothing "
                                        "else:\n{")


@pytest.mark.parametrize("output, message", [
    (object, "has no JSON Schema"),
    (lambda x: x, "has no JSON Schema"),
])
def test_a_type_that_cannot_be_a_schema_is_refused_before_anything_is_sent(output, message):
    with SSEServer() as server:
        with pytest.raises(ConfigError) as caught:
            client_for(server, "openai-chat").parse([USER], output)
    assert message in str(caught.value)
    assert server.requests == []


def test_bad_arguments_are_refused_before_anything_is_sent():
    with SSEServer() as server:
        client = client_for(server, "openai-chat")
        with pytest.raises(ConfigError, match="retries must be an int from 0 to 10"):
            client.parse([USER], Invoice, retries=-1)
        with pytest.raises(ConfigError, match=r"config\['response_format'\] is set by parse\(\)"):
            client.parse([USER], Invoice, config={"response_format": {"type": "json_object"}})
    assert server.requests == []


def test_a_parsed_value_pickles():
    with SSEServer() as server:
        server.answers += [Answer([chat_text(json.dumps(GOOD))])]
        parsed = client_for(server, "openai-chat").parse([USER], Invoice)
    again = pickle.loads(pickle.dumps(parsed))
    assert isinstance(again, Parsed) and again.value == VALUE and again.json == GOOD


def test_strict_form_makes_optional_members_nullable_and_required():
    schema = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string", "default": "x"}},
              "required": ["a"]}
    strict, added = strict_schema(schema)
    assert strict == {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": ["string", "null"]}},
                      "required": ["a", "b"], "additionalProperties": False}
    assert list(added.values()) == [["b"]]


_HUGE = "1" + "0" * 400
_LONG = "7" * 5000
_INT_LIMIT = bool(getattr(sys, "get_int_max_str_digits", lambda: 0)())


@pytest.mark.parametrize("answer, problem", [
    ('{"number": "F-1", "items": [{"name": "pen", "price": ' + _HUGE + '}], "kind": "goods"}',
     "items[0].price: expected a number, got " + _HUGE[:57] + "..."),
    ('{"number": "F-1", "items": [{"name": "pen", "price": 1e400}], "kind": "goods"}',
     "the answer is not JSON (it begins '{\"number\": \"F-1\", \"items\": [{\"name\": \"pen\", \"price\": 1e400}], "
     "\"kind\": \"goods\"}')"),
    ('{"number": "F-1", "items": [], "kind": "goods", "note": ' + _LONG + '}',
     "the answer is not JSON (it begins {!r})".format('{"number": "F-1", "items": [], "kind": "goods", "note": '
                                                      + _LONG[:24])
     if _INT_LIMIT else "note: expected a string, got " + _LONG[:57] + "..."),
    ("[" * 100000 + "]" * 100000, "the answer's JSON is nested too deeply to read"),
    ('{"number": "F-\\ud800", "items": [], "kind": "goods"}',
     "the answer's JSON holds a string that is not valid Unicode (a lone surrogate)"),
], ids=["int-past-float", "1e400", "int-past-digits", "deep", "lone-surrogate"])
def test_an_answer_past_pythons_bounds_is_asked_again_never_an_untyped_error(answer, problem):
    """A float field's int past a float's range (was OverflowError), 1e400 (was inf in the value), an int of
    more digits than Python reads (was ValueError out of the streamed reader), nesting past the decoder's
    stack (was RecursionError), a lone surrogate (was in the value: a job's output row could not be written):
    each is a problem the model is told, and the next answer holds."""
    with SSEServer() as server:
        server.answers += [Answer([chat_text(answer)]), Answer([chat_text(json.dumps(GOOD))])]
        stream = client_for(server, "openai-chat").streaming_parse([USER], Invoice)
        attempts = [stream.attempt for _ in stream]
        parsed = stream.result()
    assert (parsed.value, parsed.attempts, attempts[-1]) == (VALUE, 2, 2)
    assert parsed.messages[1] == {"role": "user", "content_items": [{"type": "text", "text": (
        "The answer did not match the required JSON Schema:\n- " + problem
        + "\nAnswer again with the corrected value only.")}]}


def test_strict_form_reaches_an_optional_object_made_nullable():
    """An optional inline object (a JSON Schema type, a job row's ``output_schema``) becomes
    ``["object", "null"]``: its own members are still all required and closed (they were left as they were,
    which OpenAI's strict mode refuses)."""
    address = {"type": "object", "properties": {"city": {"type": "string"}, "zip": {"type": "string"}},
               "required": ["city"]}
    schema = {"type": "object", "properties": {"address": address,
                                               "owner": dict(address, type=["object", "null"])}}
    strict, _ = strict_schema(schema)
    closed = {"properties": {"city": {"type": "string"}, "zip": {"type": ["string", "null"]}},
              "required": ["city", "zip"], "additionalProperties": False}
    assert strict == {"type": "object", "properties": {"address": dict(closed, type=["object", "null"]),
                                                       "owner": dict(closed, type=["object", "null"])},
                      "required": ["address", "owner"], "additionalProperties": False}
    with SSEServer() as server:
        server.answers += [Answer([chat_text('{"address": {"city": "Oslo", "zip": null}, "owner": null}')])]
        parsed = client_for(server, "openai-chat").parse([USER], schema)
    assert parsed.value == {"address": {"city": "Oslo"}, "owner": None}
    assert server.requests[0]["body"]["response_format"]["json_schema"]["schema"] == strict


@dataclasses.dataclass
class Tagged:
    name: str
    tags: Dict[str, int] = dataclasses.field(default_factory=dict)


@pytest.mark.parametrize("output, answer, value", [
    (Dict[str, float], {"value": {"a": 1, "b": 2.5}}, {"a": 1.0, "b": 2.5}),
    (Tagged, {"name": "x", "tags": {"k": 3}}, Tagged("x", {"k": 3})),
    (Optional[Tagged], {"value": None}, None),
    (List[Any], {"value": [1, "a"]}, [1, "a"]),
    (list, {"value": [{}]}, [{}]),
])
def test_a_type_strict_mode_cannot_hold_goes_out_not_strict(output, answer, value):
    """An open map (``Dict[str, X]``), ``Any`` or a bare ``list`` has no strict form (OpenAI answers 400
    "additionalProperties ... must be false"): the schema goes with ``strict: false``, the answer validated."""
    with SSEServer() as server:
        server.answers += [Answer([chat_text(json.dumps(answer))]), Answer([responses_text(json.dumps(answer))])]
        chat = client_for(server, "openai-chat").parse([USER], output)
        responses = client_for(server, "openai-responses").parse([USER], output)
    assert chat.value == responses.value == value
    first, second = (r["body"] for r in server.requests)
    assert (first["response_format"]["json_schema"]["strict"], second["text"]["format"]["strict"]) == (False, False)
    assert first["response_format"]["json_schema"]["schema"] == second["text"]["format"]["schema"]


def test_strict_holds_for_closed_types():
    for output in (Invoice, List[Item], Optional[Invoice], Kind, int):
        with SSEServer() as server:
            server.answers += [Answer([chat_text("{}")])]
            with pytest.raises(OutputValidationError):
                client_for(server, "openai-chat").parse([USER], output, retries=0)
        assert server.requests[0]["body"]["response_format"]["json_schema"]["strict"] is True


@dataclasses.dataclass
class Cat:
    kind: Literal["cat"]
    lives: int = 9


@dataclasses.dataclass
class Dog:
    kind: Literal["dog"]
    bark: str = "woof"


def test_a_union_branchs_left_out_members_are_that_branchs():
    """Strict mode makes the model send every member, a null for one left out: in a union of dataclasses the
    null is left out by the branch the answer is (it was the first branch's reading: Dog's ``bark: null``
    was Dog's problem, and the answer was re-asked until the re-asks ran out)."""
    answer = {"value": [{"kind": "cat", "lives": None}, {"kind": "dog", "bark": None}, {"kind": "cat", "lives": 3}]}
    with SSEServer() as server:
        server.answers += [Answer([chat_text(json.dumps(answer))])]
        parsed = client_for(server, "openai-chat").parse([USER], List[Union[Cat, Dog]])
    assert parsed.value == [Cat("cat"), Dog("dog"), Cat("cat", 3)]
    assert (parsed.attempts, parsed.json) == (1, [{"kind": "cat"}, {"kind": "dog"}, {"kind": "cat", "lives": 3}])


def test_result_after_the_error_was_seen_raises_it_again():
    """A call's error seen while iterating (a cut stream) is raised again by ``result()`` (it was a bare
    AssertionError, and None under ``python -O``); ``result()`` after ``close()`` is a ConfigError."""
    cut = _sse([{"id": "c", "choices": [{"index": 0, "delta": {"content": '{"number": "F-1", '},
                                         "finish_reason": None}]}])
    with SSEServer() as server:
        server.answers += [Answer([cut])]
        stream = client_for(server, "openai-chat").streaming_parse([USER], Invoice)
        with pytest.raises(agenthub.StreamProtocolError) as first:
            for _ in stream:
                pass
        with pytest.raises(agenthub.StreamProtocolError) as again:
            stream.result()
    assert again.value is first.value and type(first.value) is agenthub.StreamProtocolError
    with SSEServer() as server:
        server.answers += [Answer([chat_text(json.dumps(GOOD))])]
        stream = client_for(server, "openai-chat").streaming_parse([USER], Invoice)
        stream.close()
        with pytest.raises(ConfigError, match=r"^the parse ended without a result \(it was closed before its end\)$"):
            stream.result()


def test_strict_form_leaves_json_values_as_they_are():
    """``const``, ``enum`` and ``examples`` hold JSON data, not schemas: an object there keeps its keys (its
    ``default`` was dropped, a ``properties`` member was made "strict")."""
    setting = {"default": 1, "properties": {"x": 2}}
    schema = {"type": "object", "properties": {"s": {"const": setting, "examples": [setting]},
                                               "t": {"enum": [setting, None]}}, "required": ["s", "t"]}
    strict, _ = strict_schema(schema)
    assert strict["properties"] == {"s": {"const": setting, "examples": [setting]}, "t": {"enum": [setting, None]}}
    assert setting == {"default": 1, "properties": {"x": 2}}


def test_a_json_schema_with_definitions_or_a_root_ref_reads_its_nulls_as_left_out():
    """``#/definitions/X`` (draft 7: zod-to-json-schema, pydantic v1) and ``#`` are followed as ``#/$defs/X``
    is: the null strict mode asked for a left-out member of theirs is "left out" (it was a problem, every
    time: strict mode sends it again)."""
    tree = {"type": "object", "properties": {"name": {"type": "string"}, "kid": {"$ref": "#"},
                                             "size": {"$ref": "#/definitions/Size"}}, "required": ["name"],
            "definitions": {"Size": {"type": "object", "properties": {"cm": {"type": "number"},
                                                                      "note": {"type": "string"}},
                                     "required": ["cm"]}}}
    answer = {"name": "a", "kid": {"name": "b", "kid": None, "size": {"cm": 2, "note": None}},
              "size": None}
    with SSEServer() as server:
        server.answers += [Answer([chat_text(json.dumps(answer))])]
        parsed = client_for(server, "openai-chat").parse([USER], tree)
    assert (parsed.value, parsed.attempts) == ({"name": "a", "kid": {"name": "b", "size": {"cm": 2}}}, 1)


def test_a_json_schema_that_is_no_object_keeps_its_root_ref_and_definitions_when_wrapped():
    """Wrapped as {"value": ...}, a schema's ``#`` would name the wrapper and its ``definitions`` would sit
    under ``value``: the schema goes to $defs (``#`` names it there) and ``definitions`` stays at the root."""
    nested = {"type": "array", "items": {"anyOf": [{"type": "integer"}, {"$ref": "#"}, {"$ref": "#/definitions/O"}]},
              "definitions": {"O": {"type": "object", "properties": {"k": {"type": "string"}}}}}
    with SSEServer() as server:
        server.answers += [Answer([chat_text(json.dumps({"value": [1, [2, [3]], {"k": None}]}))])]
        parsed = client_for(server, "openai-chat").parse([USER], nested)
    assert parsed.value == [1, [2, [3]], {}]
    assert server.requests[0]["body"]["response_format"]["json_schema"]["schema"] == {
        "type": "object", "properties": {"value": {"$ref": "#/$defs/value"}}, "required": ["value"],
        "additionalProperties": False,
        "definitions": {"O": {"type": "object", "properties": {"k": {"type": ["string", "null"]}}, "required": ["k"],
                              "additionalProperties": False}},
        "$defs": {"value": {"type": "array", "items": {"anyOf": [
            {"type": "integer"}, {"$ref": "#/$defs/value"}, {"$ref": "#/definitions/O"}]}}}}


@pytest.mark.parametrize("protocol", sorted(MODELS))
def test_an_answer_that_fails_validation_is_not_kept_by_the_response_cache(protocol):
    # a re-run of the same parse must ask the model again, not replay the same failing answer
    text = TEXT[protocol]
    cache = agenthub.ResponseCache(MemoryStore())
    with SSEServer() as server:
        server.answers += [Answer([text(json.dumps(BAD))]), Answer([text(json.dumps(GOOD))]),
                           Answer([text(json.dumps(GOOD))])]
        client = client_for(server, protocol, cache=cache)
        first = client.parse([USER], Invoice)
        assert (first.attempts, cache.stored) == (2, 1)  # the re-ask's valid answer alone
        again = client.parse([USER], Invoice)
    assert (again.value, again.attempts, len(server.requests)) == (VALUE, 1, 3)
    assert (cache.hits, cache.misses, cache.stored) == (0, 3, 2)
    assert server.requests[2]["body"] == server.requests[0]["body"]


def test_a_failing_answer_the_cache_held_already_is_removed_when_replayed():
    # stored by a plain call of the same request (a cache knows nothing of types): parse replays it, judges it and
    # drops it, so the next parse asks the model again
    cache = agenthub.ResponseCache(MemoryStore())
    with SSEServer() as server:
        server.answers += [Answer([chat_text(json.dumps(BAD))]), Answer([chat_text(json.dumps(GOOD))]),
                           Answer([chat_text(json.dumps(GOOD))])]
        client = client_for(server, "openai-chat", cache=cache)
        client.response([USER], shape(client, [USER], Invoice, {}).config)
        assert cache.stored == 1
        first = client.parse([USER], Invoice)                 # the stored BAD replayed, then re-asked
        assert (first.attempts, cache.hits, len(server.requests)) == (2, 1, 2)
        again = client.parse([USER], Invoice)                 # asked again (the third answer), not BAD replayed
        assert (again.attempts, cache.hits, len(server.requests)) == (1, 1, 3)
        third = client.parse([USER], Invoice)                 # what held is kept and replayed
    assert (third.value, third.attempts, cache.hits, len(server.requests)) == (VALUE, 1, 2, 3)


def test_an_answer_nested_past_max_depth_is_a_problem_and_its_error_pickles():
    """A recursive type's answer 600 arrays deep parses, but neither a pickle (Parsed and the error cross
    processes) nor a job's output row holds it: a problem like any other, the candidate's text kept."""
    deep = "[" * 600 + "]" * 600
    with SSEServer() as server:
        server.answers += [Answer([chat_text(deep)])]
        with pytest.raises(OutputValidationError) as caught:
            client_for(server, "openai-chat").parse([USER], {"type": "array", "items": {"$ref": "#"}}, retries=0)
    error = pickle.loads(pickle.dumps(caught.value))
    assert (error.problems, error.candidate_json, error.candidate_text) == (
        [["the answer's JSON nests deeper than 128 levels"]], None, deep)


def test_a_long_list_of_problems_is_cut_with_a_count():
    """Every item of a long list wrong: the re-ask, the error and a job row hold the first 50 and how many more
    (they held them all: an answer of 100,000 bad items made a re-ask as large, paid for as input)."""
    bad = {"number": "F-1", "items": [{"name": "pen", "price": "x"}] * 60, "kind": "goods"}
    with SSEServer() as server:
        server.answers += [Answer([chat_text(json.dumps(bad))]), Answer([chat_text(json.dumps(bad))])]
        with pytest.raises(OutputValidationError) as caught:
            client_for(server, "openai-chat").parse([USER], Invoice, retries=1)
    lines = ['items[{}].price: expected a number, got "x"'.format(i) for i in range(50)] + ["(and 10 more problems)"]
    assert caught.value.problems == [lines, lines]
    reask = server.requests[1]["body"]["messages"][-1]["content"]
    assert reask == ("The answer did not match the required JSON Schema:\n" + "\n".join("- " + line for line in lines)
                     + "\nAnswer again with the corrected value only.")


def test_a_boolean_json_schema_as_the_output_type():
    """True (any JSON value) is asked for as Any is; False (no value) is a ConfigError before sending (both were a
    TypeError from building the request)."""
    with SSEServer() as server:
        server.answers += [Answer([chat_text('{"value": {"any": [1, "json"]}}')])]
        parsed = client_for(server, "openai-chat").parse([USER], True)
    assert (parsed.value, parsed.json) == ({"any": [1, "json"]}, {"any": [1, "json"]})
    assert server.requests[0]["body"]["response_format"] == {"type": "json_schema", "json_schema": {
        "name": "output", "schema": {"type": "object", "properties": {"value": {}}, "required": ["value"],
                                     "additionalProperties": False}, "strict": False}}
    with pytest.raises(ConfigError) as caught:
        client_for(server, "openai-chat").parse([USER], False)
    assert str(caught.value) == "the output type False is a JSON Schema no value holds: nothing could be answered"


def test_a_required_name_that_is_no_property_is_not_closed_out():
    """``required`` naming a member ``properties`` does not describe: the strict form closed the object without it,
    so no answer could hold the schema (each re-ask refused the same, and was paid for); it goes as a property of
    any value (not strict: strict mode has no such property)."""
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a", "b"]}
    with SSEServer() as server:
        server.answers += [Answer([chat_text('{"a": 1, "b": [true]}')])]
        parsed = client_for(server, "openai-chat").parse([USER], schema, retries=0)
    assert parsed.value == {"a": 1, "b": [True]}
    assert server.requests[0]["body"]["response_format"]["json_schema"] == {"name": "output", "strict": False, "schema": {
        "type": "object", "properties": {"a": {"type": "integer"}, "b": {}}, "required": ["a", "b"],
        "additionalProperties": False}}


def test_the_money_of_the_attempts_before_a_calls_error_is_on_the_stream_and_the_error():
    """A re-ask whose request failed raises the call's error: the attempt before it was paid for, and the stream
    and the error (``parse_usage_metadata``, ``parse_cost_usd``: client.parse hands back no stream) say what
    it came to."""
    spent = {"cached_tokens": None, "prompt_tokens": 20, "thoughts_tokens": None, "response_tokens": 3}
    price = agenthub.cost("gpt-4o-mini", spent)
    assert price == (20 * 0.15 + 3 * 0.6) / 1e6
    failed = Answer([b'{"error": {"message": "down"}}'], status=500, headers={"Content-Type": "application/json"})
    errors = []
    with SSEServer() as server:
        server.answers += [Answer([chat_text(json.dumps(BAD))]), failed] * 2 + [failed]
        stream = client_for(server, "openai-chat").streaming_parse([USER], Invoice)
        assert (stream.usage_metadata, stream.cost_usd) == (None, None)
        for parse in (stream.result, lambda: client_for(server, "openai-chat").parse([USER], Invoice),
                      lambda: client_for(server, "openai-chat").parse([USER], Invoice)):  # (the last: one request)
            try:
                parse()
            except agenthub.UpstreamError as exc:
                exc.__traceback__ = None  # (its frames hold the client)
                errors.append(exc)
    assert stream.attempt == 2
    assert (stream.usage_metadata, stream.cost_usd) == (spent, price)
    assert [error.status for error in errors] == [500, 500, 500]
    for error in (errors[0], errors[1], pickle.loads(pickle.dumps(errors[1]))):
        assert (error.parse_usage_metadata, error.parse_cost_usd) == (spent, price)
    assert (errors[2].parse_usage_metadata, errors[2].parse_cost_usd) == (None, None)  # nothing ended: none spent


def test_tools_the_model_may_call_are_refused_before_sending():
    """parse() runs no tools: a call the model made went back unanswered in the re-ask, a request the APIs refuse
    (paid for the first attempt, then a 400). A tool run types its answer (client.run(..., output=))."""
    tool = {"name": "look", "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}
    with SSEServer() as server:
        server.answers += [Answer([chat_text(json.dumps(GOOD))])]
        client = client_for(server, "openai-chat")
        for config in ({"tools": [tool]}, {"tools": [tool], "tool_choice": "auto"}):
            with pytest.raises(ConfigError) as caught:
                client.parse([USER], Invoice, config)
            assert str(caught.value) == (
                "config['tools']: parse() runs no tools, and the model may call them: use client.run(messages, "
                "tools=[...], output=...) for a typed answer with tools (or tool_choice 'none')")
        assert server.requests == []
        assert client.parse([USER], Invoice, {"tools": [tool], "tool_choice": "none"}).value == VALUE


def test_a_strict_pydantic_model_takes_the_json_an_answer_holds():
    """A pydantic model with ``strict=True`` (a usual choice for a model's output: no coercion) was validated as
    Python objects: strict Python mode takes only a ``date``, an Enum member, a tuple, a UUID instance, never the
    JSON string or array a model writes for them, so every answer was re-asked and the call failed, each attempt
    paid for. It is validated as the JSON it is now (pydantic's JSON mode), as pydantic validates such a reply."""
    pydantic = pytest.importorskip("pydantic", minversion="2")
    import datetime
    import uuid
    from typing import Tuple

    class Booking(pydantic.BaseModel):
        model_config = pydantic.ConfigDict(strict=True)
        day: datetime.date
        kind: Kind
        seats: Tuple[int, int]
        ref: uuid.UUID

    answer = {"day": "2026-12-07", "kind": "goods", "seats": [3, 4], "ref": "12345678-1234-5678-1234-567812345678"}
    with SSEServer() as server:
        server.answers += [Answer([chat_text(json.dumps(answer))])]
        parsed = client_for(server, "openai-chat").parse([USER], Booking, retries=0)
    assert len(server.requests) == 1
    assert parsed.value == Booking(day=datetime.date(2026, 12, 7), kind=Kind.GOODS, seats=(3, 4),
                                   ref=uuid.UUID("12345678-1234-5678-1234-567812345678"))
    assert (parsed.attempts, parsed.json) == (1, answer)
    with SSEServer() as server:  # (still strict: a number as a string is refused, as pydantic refuses it)
        server.answers += [Answer([chat_text(json.dumps(dict(answer, seats=["3", 4])))])]
        with pytest.raises(OutputValidationError) as caught:
            client_for(server, "openai-chat").parse([USER], Booking, retries=0)
    assert caught.value.problems == [["seats[0]: Input should be a valid integer"]]


def test_a_null_for_an_optional_property_under_all_of_is_left_out():
    """``allOf: [{"$ref": ...}]`` (how pydantic v1 and many hand-written schemas give a nested object a description
    or a default): the strict form makes the nested object's optional properties required and nullable, but the
    null the model then writes was not read back as "left out" under an ``allOf``, so every such answer failed
    (``ship.zip: expected a string, got null``), was re-asked and paid for."""
    address = {"type": "object", "properties": {"city": {"type": "string"}, "zip": {"type": "string"}},
               "required": ["city"]}
    schema = {"type": "object", "$defs": {"Address": address}, "required": ["ship"], "properties": {
        "ship": {"description": "Where it goes.", "allOf": [{"$ref": "#/$defs/Address"}]},
        "bill": {"anyOf": [{"allOf": [{"$ref": "#/$defs/Address"}]}, {"type": "null"}]},
        "old": {"type": "array", "items": {"allOf": [{"$ref": "#/$defs/Address"}]}}}}
    answer = {"ship": {"city": "Oslo", "zip": None}, "bill": {"city": "Bergen", "zip": None},
              "old": [{"city": "Rome", "zip": None}]}
    kept = {"ship": {"city": "Oslo"}, "bill": {"city": "Bergen"}, "old": [{"city": "Rome"}]}
    with SSEServer() as server:
        server.answers += [Answer([chat_text(json.dumps(answer))])]
        parsed = client_for(server, "openai-chat").parse([USER], schema, retries=0)
    sent = server.requests[0]["body"]["response_format"]["json_schema"]["schema"]
    assert sent["$defs"]["Address"]["properties"]["zip"] == {"type": ["string", "null"]}
    assert (parsed.value, parsed.json, parsed.attempts) == (kept, kept, 1)
    v1 = pytest.importorskip("pydantic.v1") if sys.version_info >= (3, 9) else None
    if v1 is None:
        return

    class Address(v1.BaseModel):
        city: str
        zip: str = "0000"

    class Order(v1.BaseModel):
        ship: Address = v1.Field(..., description="Where it goes.")

    with SSEServer() as server:
        server.answers += [Answer([chat_text(json.dumps({"ship": {"city": "Oslo", "zip": None}}))])]
        parsed = client_for(server, "openai-chat").parse([USER], Order, retries=0)
    assert parsed.value == Order(ship=Address(city="Oslo", zip="0000"))


@pytest.mark.parametrize("schema, words", [
    ({"type": "object", "properties": {"p": {"type": "string", "format": ["date"]}}, "required": ["p"]},
     "schema.properties.p.format: must be a string, got [\"date\"]"),
    ({"type": "object", "properties": {"p": {"type": "integer", "description": 5}}, "required": ["p"]},
     "schema.properties.p.description: must be a string, got 5"),
    ({"type": "array", "items": True, "prefixItems": 1.5}, "schema.prefixItems: must be an array of schemas, got 1.5"),
    ({"type": "object", "additionalProperties": False, "properties": [{}]},
     "schema.properties: must be an object of schemas, got [{}]"),
])
@pytest.mark.parametrize("model", ["gpt-5.4-mini", "claude-sonnet-4-6", "gemini-2.5-flash"])
def test_a_schema_with_a_keyword_of_the_wrong_type_is_a_config_error_before_sending(schema, words, model):
    """A JSON Schema given as the output type with a ``format`` that is not a string (a TypeError: unhashable
    list, in the strict check), ``prefixItems`` or ``properties`` of the wrong type (a TypeError in the compiler,
    read by a keyword checked before their own), or a ``description`` that is not a string (sent as it was: a
    400) is a ConfigError naming the place, nothing sent."""
    with SSEServer() as server:
        client = AutoLLMClient(model, api_key="sk-test-output-0001", base_url=server.url + "/v1", max_retries=0)
        with pytest.raises(ConfigError) as caught:
            client.parse([USER], schema)
        assert server.requests == []
    assert words in str(caught.value)


@dataclasses.dataclass
class Order:
    sku: str
    qty: int = 1
    gift: bool = False


@pytest.mark.parametrize("model, client_type, mode", [
    ("kimi-k2.6", "moonshot", "json_object"),                      # JSON mode, the schema in the system prompt
    ("gpt-5.4-mini", "openai-chat", "schema"),                     # strict mode (as before)
])
def test_a_null_for_an_optional_field_is_left_out_on_every_wire(model, client_type, mode):
    """Where the schema goes in the system prompt (JSON mode, or no structured output at all), a model that writes
    ``null`` for a field it leaves to its default (``"qty": null``: models write every key) had its answer refused
    and re-asked, each re-ask paid for, where the same answer on a strict-mode wire held: a null for a property
    that is optional and not nullable is read as "left out" on every wire now."""
    with SSEServer() as server:
        server.answers += [Answer([chat_text(json.dumps({"sku": "pen", "qty": None, "gift": None}))])]
        client = AutoLLMClient(model, api_key="sk-test-output-0001", base_url=server.url + "/v1",
                               client_type=client_type, max_retries=0)
        assert shape(client, [USER], Order, {}).mode == mode
        parsed = client.parse([USER], Order, retries=0)
    assert len(server.requests) == 1
    assert (parsed.value, parsed.json, parsed.attempts) == (Order("pen"), {"sku": "pen"}, 1)


@dataclasses.dataclass
class Pick:
    sku: str
    color: Literal["red", "blue", None] = "red"


def test_a_null_an_optional_literal_allows_is_kept_not_read_as_left_out():
    """``Literal["red", "blue", None] = "red"`` is ``{"enum": ["red", "blue", null]}``, no ``type``: a null is one of
    its values, yet it was read as a null the strict form added for a property left out, so the model's explicit
    ``null`` became the default ``"red"``, silently, on every wire (a pydantic model's field too)."""
    with SSEServer() as server:
        server.answers += [Answer([chat_text(json.dumps({"sku": "pen", "color": None}))])] * 2
        client = client_for(server, "openai-chat")
        parsed = client.parse([USER], Pick, retries=0)
        sent = server.requests[0]["body"]["response_format"]["json_schema"]["schema"]
        assert sent["properties"]["color"] == {"enum": ["red", "blue", None]}
        assert (parsed.value, parsed.json) == (Pick("pen", None), {"sku": "pen", "color": None})
        pydantic = pytest.importorskip("pydantic")

        class Picked(pydantic.BaseModel):
            sku: str
            color: Literal["red", "blue", None] = "red"

        assert client.parse([USER], Picked, retries=0).value == Picked(sku="pen", color=None)

        class Color(enum.Enum):
            RED = "red"
            UNSET = None

        class Painted(pydantic.BaseModel):  # (an Enum is a $ref to its definition, which holds the null)
            sku: str
            color: Color = Color.RED

        server.answers += [Answer([chat_text(json.dumps({"sku": "pen", "color": None}))])]
        assert client.parse([USER], Painted, retries=0).value == Painted(sku="pen", color=Color.UNSET)


def test_a_pydantic_union_of_a_date_or_uuid_and_a_str_reads_as_pydantic_reads_the_json():
    """Python mode first (a speed-up) read ``Union[date, str]`` and ``Union[UUID, str]`` as the str: in Python mode
    a str is the exact match, where JSON mode (``model_validate_json``, how pydantic and the SDKs read a JSON reply,
    and what agenthub did before) gives the date and the UUID.  A model with such a union is read in JSON mode."""
    pydantic = pytest.importorskip("pydantic", minversion="2")
    import datetime
    import uuid

    class Slot(pydantic.BaseModel):
        day: Union[datetime.date, str]
        ref: Union[uuid.UUID, str]
        note: Optional[str] = None

    answer = {"day": "2026-12-07", "ref": "12345678-1234-5678-1234-567812345678", "note": "x"}
    with SSEServer() as server:
        server.answers += [Answer([chat_text(json.dumps(answer))])]
        parsed = client_for(server, "openai-chat").parse([USER], Slot, retries=0)
    assert parsed.value == Slot.model_validate_json(json.dumps(answer))
    assert (type(parsed.value.day), type(parsed.value.ref)) == (datetime.date, uuid.UUID)


def test_a_null_a_union_branch_or_an_allof_wrapped_ref_allows_is_kept_not_read_as_left_out():
    """``Union[Color, int] = 3`` where the Enum ``Color`` has a None member is ``anyOf: [{"$ref": Color}, {"type":
    "integer"}]``, and pydantic v1 (or a schema written by hand) wraps a described Enum as ``allOf: [{"$ref": ...}]``:
    the null lies behind the ``$ref``, which only a property's own ``$ref`` was followed for, so the model's explicit
    ``null`` became the default (3, "red"), silently."""
    schema = {"type": "object", "required": ["sku"],
              "properties": {"sku": {"type": "string"},
                             "color": {"allOf": [{"$ref": "#/definitions/Color"}], "description": "its color"},
                             "size": {"anyOf": [{"$ref": "#/definitions/Color"}, {"type": "integer"}]}},
              "definitions": {"Color": {"enum": ["red", None]}}}
    answer = {"sku": "pen", "color": None, "size": None}
    with SSEServer() as server:
        server.answers += [Answer([chat_text(json.dumps(answer))])] * 2
        client = client_for(server, "openai-chat")
        assert client.parse([USER], schema, retries=0).json == answer
        pydantic = pytest.importorskip("pydantic")

        class Color(enum.Enum):
            RED = "red"
            UNSET = None

        class Painted(pydantic.BaseModel):
            sku: str
            size: Union[Color, int] = 3

        assert client.parse([USER], Painted, retries=0).value == Painted(sku="pen", size=Color.UNSET)
