"""Strict schemas on the OpenAI wires: only what OpenAI's strict mode documents goes out with ``strict: true``.

OpenAI, "Structured model outputs", "Supported schemas" (https://platform.openai.com/docs/guides/structured-outputs
#supported-schemas; the same list in Azure OpenAI's "Structured outputs" page), as read in December 2026 and pinned
in ``DOCUMENTED`` below.  Typed output's strict form holding anything else (a ``Set``'s ``uniqueItems``, a fixed
``Tuple``'s ``prefixItems``, ``oneOf``, ``allOf``, a format outside the nine) goes with ``strict: false``, its answer
validated here and re-asked; a strict schema of the caller's own that the page says strict mode refuses (a keyword
it calls "not yet supported", an object without ``additionalProperties: false``, a property left out of
``required``, a root that is no object) is an UnsupportedParameterError before sending on OpenAI's API and Azure
OpenAI (a compatible server gets it as it is).  Exact bodies and errors."""

import dataclasses
import json
from typing import Any, Dict, FrozenSet, List, Tuple

import pytest

from agent_streams import BASES, chat_text, responses_text
from sse_server import Answer, SSEServer
from test_output_anthropic_schema import Bounds, canonical, encoded, sent_schema

import agenthub
from agenthub import AutoLLMClient, OutputValidationError
from agenthub.errors import UnsupportedParameterError
from agenthub.output import shape

try:
    from typing import Annotated
except ImportError:  # 3.8
    from typing_extensions import Annotated

USER = agenthub.user("The order, please.")
KEY = "sk-test-strict-0001"

#: the page's facts, pinned: what strict mode takes, and what it calls "not yet supported" (fine-tuned models
#: additionally refuse minLength, maxLength, pattern, format, minimum, maximum, multipleOf, patternProperties,
#: minItems and maxItems; the base models take them)
DOCUMENTED = {
    "types": ["string", "number", "boolean", "integer", "object", "array", "enum", "anyOf"],
    "string": ["pattern", "format"],
    "formats": ["date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"],
    "number": ["multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum"],
    "array": ["minItems", "maxItems"],
    "not yet supported": ["allOf", "not", "dependentRequired", "dependentSchemas", "if", "then", "else"],
}


def test_the_documented_subset_is_what_agenthub_holds_a_strict_schema_to():
    assert sorted(shape.OPENAI_STRICT_FORMATS) == sorted(DOCUMENTED["formats"])
    assert sorted(shape.OPENAI_STRICT_UNSUPPORTED) == sorted(DOCUMENTED["not yet supported"])
    keywords = DOCUMENTED["string"] + DOCUMENTED["number"] + DOCUMENTED["array"] + ["minLength", "maxLength"]
    structure = ["type", "properties", "required", "additionalProperties", "items", "anyOf", "enum", "const", "$ref",
                 "$defs", "definitions"]
    assert sorted(shape.OPENAI_STRICT_KEYWORDS) == sorted(keywords + structure)
    assert not shape.OPENAI_STRICT_KEYWORDS & shape.OPENAI_STRICT_UNSUPPORTED


@dataclasses.dataclass
class Line:
    sku: Annotated[str, Bounds(min_length=3, max_length=8, pattern="^[A-Z]+$")]
    qty: Annotated[int, Bounds(ge=1, le=99, multiple_of=1)]


@dataclasses.dataclass
class Order:
    lines: Annotated[List[Line], Bounds(min_length=1, max_length=5)]
    total: Annotated[float, Bounds(gt=0)]


@dataclasses.dataclass
class Tagged:
    name: str
    tags: FrozenSet[str]


@dataclasses.dataclass
class Point:
    name: str
    at: Tuple[float, float]


def client_for(server: SSEServer, protocol: str) -> AutoLLMClient:
    return AutoLLMClient("gpt-5.5", api_key=KEY, base_url=server.url + BASES[protocol], client_type=protocol,
                         max_retries=0)


def sent_strict(server: SSEServer) -> List[Any]:
    """(strict, schema) of the Chat then the Responses request."""
    chat, responses = (r["body"] for r in server.requests)
    return [(chat["response_format"]["json_schema"]["strict"], chat["response_format"]["json_schema"]["schema"]),
            (responses["text"]["format"]["strict"], responses["text"]["format"]["schema"])]


def test_a_type_within_the_documented_subset_goes_strict_with_its_bounds():
    answer = {"lines": [{"sku": "PEN", "qty": 2}], "total": 3.5}
    with SSEServer() as server:
        server.answers += [Answer([chat_text(json.dumps(answer))]), Answer([responses_text(json.dumps(answer))])]
        assert client_for(server, "openai-chat").parse([USER], Order).value == Order([Line("PEN", 2)], 3.5)
        client_for(server, "openai-responses").parse([USER], Order)
    assert sent_strict(server) == [(True, sent_schema(Order))] * 2
    assert sent_schema(Order)["$defs"]["Line"]["properties"]["qty"] == {
        "type": "integer", "minimum": 1, "maximum": 99, "multipleOf": 1}


@pytest.mark.parametrize("output, keyword, answer, value", [
    (Tagged, "uniqueItems", {"name": "a", "tags": ["x", "y"]}, Tagged("a", frozenset(["x", "y"]))),
    (Point, "prefixItems", {"name": "p", "at": [1, 2.5]}, Point("p", (1.0, 2.5))),
])
def test_a_keyword_outside_the_subset_sends_the_type_not_strict(output, keyword, answer, value):
    with SSEServer() as server:
        server.answers += [Answer([chat_text(json.dumps(answer))]), Answer([responses_text(json.dumps(answer))])]
        assert client_for(server, "openai-chat").parse([USER], output).value == value
        assert client_for(server, "openai-responses").parse([USER], output).value == value
    assert sent_strict(server) == [(False, sent_schema(output))] * 2
    assert keyword in json.dumps(sent_schema(output))


def test_an_answer_past_the_schema_sent_not_strict_is_refused_here_and_asked_again():
    with SSEServer() as server:
        server.answers += [Answer([chat_text(json.dumps({"name": "p", "at": [1]}))])]
        with pytest.raises(OutputValidationError) as caught:
            client_for(server, "openai-chat").parse([USER], Point, retries=0)
    assert caught.value.problems == [["at: expected 2 items, got 1"]]  # (per attempt)
    assert server.requests[0]["body"]["response_format"]["json_schema"]["strict"] is False


@pytest.mark.parametrize("schema", [
    {"type": "object", "properties": {"a": {"oneOf": [{"type": "integer"}, {"type": "string"}]}}},
    {"type": "object", "properties": {"a": {"allOf": [{"type": "integer"}, {"minimum": 1}]}}},
    {"type": "object", "properties": {"a": {"type": "string", "format": "uri"}}},
    {"type": "object", "properties": {"a": {"type": "integer", "not": {"const": 3}}}},
    {"type": "object", "properties": {"a": {"type": "object", "properties": {}, "minProperties": 1}}},
])
def test_a_json_schema_outside_the_subset_goes_not_strict(schema):
    strict, _ = shape.strict_schema(schema)
    assert shape.strict_holds(strict) is False
    assert shape.strict_holds(shape.strict_schema({"type": "object", "properties": {"a": {"type": "integer"}}})[0])


OPENAI = ("openai-chat", "gpt-5.5", {"api_key": KEY})
ROUTES = [OPENAI, ("openai-responses", "gpt-5.5", {"api_key": KEY}),
          ("azure", "my-gpt5", {"AZURE_OPENAI_ENDPOINT": "https://res-1.openai.azure.com",
                                "AZURE_OPENAI_API_KEY": "azure-key-0001"})]
ALL_OF = {"type": "object", "properties": {"n": {"allOf": [{"type": "integer"}, {"minimum": 1}]}}, "required": ["n"],
          "additionalProperties": False}
FIX = ": send it with strict False (the answer is then not held to the schema), or change the schema"


@pytest.mark.parametrize("schema, problem", [
    (ALL_OF, "['properties']['n']['allOf'] is not supported in strict mode (allOf, dependentRequired, "
             "dependentSchemas, else, if, not, then are not)"),
    ({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
     " is an object without additionalProperties false (strict mode needs it on every object)"),
    ({"type": "object", "properties": {"n": {"type": "integer"}, "m": {"type": "string"}, "o": {"type": "string"}},
      "required": ["m"], "additionalProperties": False},
     "['required'] leaves out 'n', 'o' (strict mode needs every property required: make it nullable instead)"),
    ({"type": "object", "properties": {"p": {"type": "array", "items": {"type": "object", "properties": {}}}},
      "required": ["p"], "additionalProperties": False},
     "['properties']['p']['items'] is an object without additionalProperties false (strict mode needs it on every "
     "object)"),
])
@pytest.mark.parametrize("kind, model, environ", ROUTES)
def test_a_strict_schema_of_yours_openai_documents_it_refuses_is_refused_before_sending(kind, model, environ, schema,
                                                                                       problem):
    with pytest.raises(UnsupportedParameterError) as caught:
        encoded(kind, model, None, dict(environ),
                response_format={"type": "json_schema", "name": "n", "schema": schema})  # (strict: True unsaid)
    assert str(caught.value) == "{}: response_format schema{}{}".format(kind, problem, FIX)
    assert caught.value.parameter == "response_format"
    tool = {"name": "count", "strict": True, "parameters": schema}
    with pytest.raises(UnsupportedParameterError) as caught:
        encoded(kind, model, None, dict(environ), tools=[tool])
    assert str(caught.value) == "{}: tools strict tool 'count': parameters{}{}".format(kind, problem, FIX)
    assert caught.value.parameter == "tools"
    body = encoded(kind, model, None, dict(environ), tools=[dict(tool, strict=False)],
                   response_format={"type": "json_schema", "name": "n", "schema": schema, "strict": False})
    assert canonical(body).get("tools")  # not strict: sent as it is


@pytest.mark.parametrize("kind, model, environ", ROUTES)
def test_a_strict_response_format_of_yours_must_be_an_object_at_its_root(kind, model, environ):
    for schema in ({"type": "array", "items": {"type": "integer"}},
                   {"anyOf": [{"type": "integer"}, {"type": "string"}]}):
        with pytest.raises(UnsupportedParameterError) as caught:
            encoded(kind, model, None, dict(environ),
                    response_format={"type": "json_schema", "name": "n", "schema": schema, "strict": True})
        assert str(caught.value) == ("{}: response_format schema is not an object at its root (strict mode takes an "
                                     "object there, not an array or an anyOf){}".format(kind, FIX))
    with pytest.raises(UnsupportedParameterError) as caught:  # a strict tool without parameters: its {} is open
        encoded(kind, model, None, dict(environ), tools=[{"name": "ping", "strict": True}])
    assert str(caught.value) == ("{}: tools strict tool 'ping': parameters is an object without additionalProperties "
                                 "false (strict mode needs it on every object){}".format(kind, FIX))


def test_a_compatible_server_gets_your_strict_schema_as_it_is():
    tool = {"name": "count", "strict": True, "parameters": ALL_OF}
    with SSEServer() as server:
        server.answers += [Answer([chat_text("{}")])]
        AutoLLMClient("local-model", api_key=KEY, base_url=server.url + "/v1", client_type="openai-chat",
                      max_retries=0).response([USER], {"tools": [tool]})
    assert server.requests[0]["body"]["tools"] == [{"type": "function", "function": {
        "name": "count", "parameters": ALL_OF, "strict": True}}]


# -- the size limits ("Objects have limitations on nesting depth and size", "Limitations on total string size",
# -- "Limitations on enum size"): each pinned at its edge, in a strict schema of yours and in typed output's

def _closed(properties):
    return {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}


def _nested_objects(below_root):
    schema = {"type": "string"}
    for _ in range(below_root + 1):
        schema = _closed({"a": schema})
    return schema


def _with_properties(count):
    return _closed({"p{}".format(i): {"type": "integer"} for i in range(count)})


def _with_enums(count):
    return _closed({"a": {"enum": list(range(500))}, "b": {"enum": list(range(count - 500))}})


def _with_large_enum(chars):
    return _closed({"a": {"type": "string", "enum": ["x" * 60] * 250 + ["y" * (chars - 15000)]}})


def _with_text(chars):
    return _closed({"a": {"type": "string", "enum": ["x" * 12000] * 9 + ["x" * (chars - 108001)]}})


SIZES = [  # (the schema at the limit, one past it, the words of the one past)
    (_nested_objects(10), _nested_objects(11),
     "['properties']['a']" * 11 + " nests objects 11 levels below the root (strict mode takes at most 10)"),
    (_with_properties(5000), _with_properties(5001), " has 5001 object properties (strict mode takes at most 5000)"),
    (_with_enums(1000), _with_enums(1001), " has 1001 enum values (strict mode takes at most 1000)"),
    (_with_large_enum(15000), _with_large_enum(15001),
     "['properties']['a']['enum'] has 251 values of 15001 characters (strict mode takes at most 15000 characters in "
     "an enum of more than 250 values)"),
    (_with_text(120000), _with_text(120001),
     "'s property names, definition names, enum and const values come to 120001 characters (strict mode takes at "
     "most 120000)"),
]


@pytest.mark.parametrize("fits, past, problem", SIZES)
@pytest.mark.parametrize("kind, model, environ", ROUTES)
def test_a_strict_schema_of_yours_past_a_size_limit_is_refused_before_sending(kind, model, environ, fits, past,
                                                                             problem):
    body = encoded(kind, model, None, dict(environ), response_format={"type": "json_schema", "name": "n", "schema": fits})
    assert canonical(body) != {}
    with pytest.raises(UnsupportedParameterError) as caught:
        encoded(kind, model, None, dict(environ), response_format={"type": "json_schema", "name": "n", "schema": past})
    assert str(caught.value) == "{}: response_format schema{}{}".format(kind, problem, FIX)
    with pytest.raises(UnsupportedParameterError) as caught:
        encoded(kind, model, None, dict(environ), tools=[{"name": "count", "strict": True, "parameters": past}])
    assert str(caught.value) == "{}: tools strict tool 'count': parameters{}{}".format(kind, problem, FIX)


@pytest.mark.parametrize("fits, past, problem", SIZES)
def test_typed_output_past_a_size_limit_goes_not_strict(fits, past, problem):
    assert shape.strict_holds(shape.strict_schema(fits)[0]) is True
    assert shape.strict_holds(shape.strict_schema(past)[0]) is False
    with SSEServer() as server:
        server.answers += [Answer([chat_text("not JSON")])]
        with pytest.raises(OutputValidationError):  # (the answer does not matter here: what went out does)
            client_for(server, "openai-chat").parse([USER], past, retries=0)
    assert server.requests[0]["body"]["response_format"]["json_schema"]["strict"] is False
