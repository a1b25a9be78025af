"""Typed output on Claude: the JSON Schema cut to the subset Anthropic's structured outputs take.

Anthropic answers 400 to what its structured outputs do not take ("JSON Schema limitations" of
platform.claude.com/docs/en/build-with-claude/structured-outputs: numeric bounds, string lengths, array bounds
past minItems 1, formats outside its ten, recursive schemas, additionalProperties other than false).  A bound
goes into the description (the model still reads it) and the answer is checked against the whole schema here;
what cannot be said at all (a recursive type, an open map) is refused before sending, so typed output takes
its next way (a forced tool).  Exact bodies on the Anthropic API, Claude on Vertex AI and on Foundry; the
official SDK's ``transform_schema`` as a differential oracle when it is installed."""

import dataclasses
import json
import re
from typing import Any, Dict, List, Optional

import pytest

from agent_streams import anthropic_calls, anthropic_text
from sse_server import Answer, SSEServer

import agenthub
from agenthub import AutoLLMClient, OutputValidationError, hosts
from agenthub.errors import UnsupportedParameterError
from agenthub.output.shape import strict_schema
from agenthub.providers._common import Endpoint
from agenthub.providers.anthropic import structured_schema
from agenthub.registry import resolve
from agenthub.typeschema import compile as compile_type
from agenthub.validate import check_config

try:
    from typing import Annotated
except ImportError:  # 3.8
    from typing_extensions import Annotated

USER = agenthub.user("The order, please.")


class Bounds(object):
    """Constraint metadata as annotated_types / pydantic's Field carry it (read duck-typed)."""

    def __init__(self, **kwargs: Any) -> None:
        self.__dict__.update(kwargs)


@dataclasses.dataclass
class Line:
    sku: Annotated[str, Bounds(min_length=3, max_length=8, pattern="^[A-Z]+$")]
    qty: Annotated[int, "How many.", Bounds(ge=1, le=99)]


@dataclasses.dataclass
class Order:
    lines: Annotated[List[Line], Bounds(min_length=2)]
    email: Annotated[str, Bounds(pattern=".+@.+")]
    discount: Optional[Annotated[float, Bounds(gt=0, lt=1)]] = None


LINE_SENT = {"type": "object", "properties": {
    "sku": {"type": "string", "description": '{"minLength":3,"maxLength":8,"pattern":"^[A-Z]+$"}'},
    "qty": {"type": "integer", "description": 'How many.\n\n{"minimum":1,"maximum":99}'}},
    "required": ["sku", "qty"], "additionalProperties": False}
ORDER_SENT = {"type": "object", "properties": {
    "lines": {"type": "array", "items": {"$ref": "#/$defs/Line"}, "description": '{"minItems":2}'},
    "email": {"type": "string", "description": '{"pattern":".+@.+"}'},
    "discount": {"anyOf": [{"type": "number", "description": '{"exclusiveMinimum":0,"exclusiveMaximum":1}'},
                           {"type": "null"}]}},
    "required": ["lines", "email", "discount"], "$defs": {"Line": LINE_SENT}, "additionalProperties": False}
GOOD = {"lines": [{"sku": "PEN", "qty": 2}, {"sku": "INK", "qty": 1}], "email": "a@b.c", "discount": None}


def canonical(value: Any) -> Any:
    """Key order left out (the wire's JSON keeps it; the assertions compare content)."""
    return json.loads(json.dumps(value, sort_keys=True))


def sent_schema(output: Any) -> Dict[str, Any]:
    """What shape() puts in response_format (the strict form of the compiled type)."""
    return strict_schema(compile_type(output).schema)[0]


def test_bounds_leave_the_schema_sent_to_claude_for_its_descriptions():
    with SSEServer() as server:
        server.answers += [Answer([anthropic_text(json.dumps(GOOD))])]
        client = AutoLLMClient("claude-sonnet-4-6", api_key="sk-test-output-0001", base_url=server.url,
                               client_type="anthropic", max_retries=0)
        parsed = client.parse([USER], Order)
    body = server.requests[0]["body"]
    assert canonical(body["output_config"]) == canonical(
        {"format": {"type": "json_schema", "schema": ORDER_SENT}})
    assert parsed.value == Order([Line("PEN", 2), Line("INK", 1)], "a@b.c")


def test_an_answer_past_a_bound_left_out_of_the_sent_schema_is_refused_here_and_asked_again():
    # Claude's decoding no longer holds these bounds: the answer is checked against the whole schema here
    first = {"lines": [{"sku": "PEN", "qty": 1}], "email": "nobody", "discount": 1.5}
    second = {"lines": [{"sku": "pen", "qty": 0}, {"sku": "INKPOTSXL", "qty": 100}], "email": "a@b.c",
              "discount": 0}
    with SSEServer() as server:
        server.answers += [Answer([anthropic_text(json.dumps(first))]), Answer([anthropic_text(json.dumps(second))])]
        client = AutoLLMClient("claude-sonnet-4-6", api_key="sk-test-output-0001", base_url=server.url,
                               client_type="anthropic", max_retries=0)
        with pytest.raises(OutputValidationError) as caught:
            client.parse([USER], Order, retries=1)
    problems = [['lines: expected at least 2 items, got [{"sku": "PEN", "qty": 1}]',
                 'email: expected a string matching ".+@.+", got "nobody"',
                 "discount: expected < 1, got 1.5"],
                ['lines[0].sku: expected a string matching "^[A-Z]+$", got "pen"',
                 "lines[0].qty: expected >= 1, got 0",
                 'lines[1].sku: expected at most 8 characters, got "INKPOTSXL"',
                 "lines[1].qty: expected <= 99, got 100",
                 "discount: expected > 0, got 0"]]
    assert caught.value.problems == problems
    assert (caught.value.attempts, caught.value.candidate_json) == (2, second)
    reask = server.requests[1]["body"]
    assert reask["messages"][-1]["content"] == [{"type": "text", "text": (
        "The answer did not match the required JSON Schema:\n" + "\n".join("- " + p for p in problems[0])
        + "\nAnswer again with the corrected value only.")}]
    assert canonical(reask["output_config"]["format"]["schema"]) == canonical(ORDER_SENT)


def encoded(kind: str, model: str, output: Any, environ: Dict[str, str], **more: Any) -> Dict[str, Any]:
    """The JSON body a ``kind`` endpoint's plan sends (nothing is sent): typed output's schema for ``output``
    (None: none) and the ``more`` config (``tools=[...]``)."""
    found, url, key, quirks = resolve(model, kind, None, environ.pop("api_key", None), environ=environ)
    row = hosts.client_type(found)
    endpoint = Endpoint(found, url, key, None, quirks, model)
    config = dict({"max_tokens": 64}, **more)  # type: Dict[str, Any]
    if output is not None:
        config["response_format"] = {"type": "json_schema", "name": "output", "schema": sent_schema(output),
                                     "strict": True}
    plan = row.protocol().build_request(endpoint, model, [USER], check_config(config))
    return json.loads(row.host.encode(plan, endpoint).data)


@pytest.mark.parametrize("kind, model, environ, version", [
    ("vertex", "claude-sonnet-4-6", {"GOOGLE_CLOUD_PROJECT": "vtx-proj-123", "api_key": "ya29.static-token"},
     "2026-10-21"),
    ("azure-anthropic", "claude-sonnet-4-6", {"ANTHROPIC_FOUNDRY_RESOURCE": "res-1",
                                              "ANTHROPIC_FOUNDRY_API_KEY": "foundry-key-0001"}, None),
])
def test_claude_on_vertex_and_foundry_gets_the_same_schema(kind, model, environ, version):
    body = encoded(kind, model, Order, dict(environ))
    assert canonical(body["output_config"]) == canonical({"format": {"type": "json_schema", "schema": ORDER_SENT}})
    assert body.get("anthropic_version") == version


def test_what_the_subset_takes_is_sent_as_it_is():
    schema = {"type": "object", "title": "T", "$schema": "https://json-schema.org/draft/2020-12/schema",
              "properties": {
                  "when": {"type": "string", "format": "date-time", "default": "2026-01-01T00:00:00Z"},
                  "site": {"type": "string", "format": "idn-hostname"},
                  "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 3,
                           "uniqueItems": True},
                  "kind": {"enum": ["a", 1, True, None]}, "one": {"const": "x"},
                  "either": {"oneOf": [{"type": "integer", "multipleOf": 5}, {"type": "string"}]},
                  "both": {"allOf": [{"$ref": "#/$defs/P"}], "description": "A point."}},
              "required": ["when"], "additionalProperties": False,
              "$defs": {"P": {"type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"],
                              "additionalProperties": False, "minProperties": 1}}}
    assert structured_schema("anthropic", schema) == {
        "type": "object", "title": "T", "properties": {
            "when": {"type": "string", "format": "date-time", "default": "2026-01-01T00:00:00Z"},
            "site": {"type": "string", "description": '{"format":"idn-hostname"}'},
            "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1,
                     "description": '{"maxItems":3,"uniqueItems":true}'},
            "kind": {"enum": ["a", 1, True, None]}, "one": {"const": "x"},
            "either": {"anyOf": [{"type": "integer", "description": '{"multipleOf":5}'}, {"type": "string"}]},
            "both": {"$ref": "#/$defs/P", "description": "A point."}},
        "required": ["when"], "additionalProperties": False,
        "$defs": {"P": {"type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"],
                        "additionalProperties": False, "description": '{"minProperties":1}'}}}
    assert schema["properties"]["tags"]["maxItems"] == 3  # (a copy: the caller's schema is left as it was)


@dataclasses.dataclass
class Tree:
    label: str
    children: List["Tree"]


@pytest.mark.parametrize("schema, words", [
    ({"type": "object", "properties": {"next": {"$ref": "#"}}, "required": ["next"], "additionalProperties": False},
     "schema refers to '#' from inside it: a recursive schema cannot be sent"),
    ({"type": "object", "properties": {"n": {"$ref": "#/$defs/N"}}, "additionalProperties": False,
      "$defs": {"N": {"type": "object", "properties": {"m": {"$ref": "#/$defs/M"}}, "additionalProperties": False},
                "M": {"anyOf": [{"$ref": "#/$defs/N"}, {"type": "null"}]}}},
     "schema refers to '#/$defs/N' from inside it: a recursive schema cannot be sent"),
    ({"type": "object", "properties": {"m": {"type": "object", "additionalProperties": {"type": "integer"}}},
      "additionalProperties": False},
     "schema['properties']['m']['additionalProperties'] is {\"type\":\"integer\"}: only false is taken (an open "
     "map cannot be sent)"),
    ({"type": "object", "properties": {"m": {"type": "object"}}, "additionalProperties": False},
     "schema['properties']['m'] is an object without additionalProperties false (an open map cannot be sent)"),
    ({"type": "object", "properties": {"e": {"enum": [[1], "a"]}}, "additionalProperties": False},
     "schema['properties']['e']['enum'] has a value that is not a string, number, boolean or null"),
    ({"type": "object", "properties": {"r": {"$ref": "https://example.com/s.json"}}, "additionalProperties": False},
     "schema['properties']['r']['$ref'] is 'https://example.com/s.json': only a local $ref under $defs is taken"),
    ({"type": "object", "properties": {"a": {"allOf": [{"$ref": "#/$defs/P"}, {"type": "object"}]}},
      "additionalProperties": False, "$defs": {"P": {"type": "integer"}}},
     "schema['properties']['a']['allOf'] has a $ref beside other schemas"),
    ({"type": "object", "properties": {"x": {}}, "required": ["x"], "additionalProperties": False},
     "schema['properties']['x'] names no type (Any, or only keywords the subset lacks)"),
    ({"type": "object", "properties": {"x": {"not": {"type": "null"}}}, "additionalProperties": False},
     "schema['properties']['x'] names no type (Any, or only keywords the subset lacks)"),
])
def test_what_the_subset_cannot_say_is_refused_before_sending(schema, words):
    with pytest.raises(UnsupportedParameterError) as caught:
        structured_schema("anthropic", schema)
    assert str(caught.value) == ("anthropic: response_format schema: " + words
                                 + ": Anthropic's structured outputs take a subset of JSON Schema")
    assert caught.value.parameter == "response_format"


def test_a_recursive_type_goes_to_claude_as_a_forced_tool():
    answer = {"value": {"label": "root", "children": [{"label": "leaf", "children": []}]}}  # (wrapped: its # ref)
    with SSEServer() as server:
        server.answers += [Answer([anthropic_calls([("toolu_1", "output", json.dumps(answer))])])]
        client = AutoLLMClient("claude-sonnet-4-6", api_key="sk-test-output-0001", base_url=server.url,
                               client_type="anthropic", max_retries=0)
        parsed = client.parse([USER], Tree)
    body = server.requests[0]["body"]
    assert parsed.value == Tree("root", [Tree("leaf", [])])
    assert "format" not in (body.get("output_config") or {})
    assert body["tool_choice"] == {"type": "tool", "name": "output"}
    tree = {"type": "object", "properties": {"label": {"type": "string"},
                                             "children": {"type": "array", "items": {"$ref": "#/$defs/Tree"}}},
            "required": ["label", "children"], "additionalProperties": False}
    assert body["tools"] == [{"name": "output", "description": "Answer with the requested value.", "input_schema": {
        "type": "object", "properties": {"value": {"$ref": "#/$defs/Tree"}}, "required": ["value"],
        "additionalProperties": False, "$defs": {"Tree": tree}}}]


def test_an_open_map_goes_to_claude_as_a_forced_tool():
    with SSEServer() as server:
        server.answers += [Answer([anthropic_calls([("toolu_1", "output", '{"value": {"pens": 2}}')])])]
        client = AutoLLMClient("claude-sonnet-4-6", api_key="sk-test-output-0001", base_url=server.url,
                               client_type="anthropic", max_retries=0)
        parsed = client.parse([USER], Dict[str, int])
    body = server.requests[0]["body"]
    assert parsed.value == {"pens": 2}
    assert body["tools"][0]["input_schema"]["properties"]["value"] == {
        "type": "object", "additionalProperties": {"type": "integer"}}


# -- the official SDK's transform_schema as an oracle: the same keywords kept, the same ones moved ----------

def _described(text: Optional[str]) -> List[str]:
    """The keyword names a description says were moved into it (the SDK writes ``{name: value, ...}``, this
    module JSON), sorted."""
    if not text:
        return []
    tail = text.rsplit("\n\n", 1)[-1]
    return sorted(re.findall(r'"?([A-Za-z$]+)"?:', tail)) if tail.startswith("{") else []


def _shape(schema: Any) -> Any:
    """``schema`` with each description reduced to the keyword names moved into it."""
    if isinstance(schema, list):
        return [_shape(child) for child in schema]
    if not isinstance(schema, dict):
        return schema
    out = {key: _shape(value) for key, value in schema.items() if key != "description"}
    if schema.get("description"):
        out["description"] = _described(schema["description"])
    return out


def _oracle_cases() -> List[Any]:
    pydantic = pytest.importorskip("pydantic")

    class Item(pydantic.BaseModel):
        name: str = pydantic.Field(min_length=1, max_length=40, pattern="^[a-z ]+$")
        price: float = pydantic.Field(gt=0, le=10000, description="Unit price.")
        qty: int = pydantic.Field(ge=1, multiple_of=1)

    class Invoice(pydantic.BaseModel):
        items: List[Item] = pydantic.Field(min_length=1, max_length=50)
        codes: List[str] = pydantic.Field(min_length=3)
        issued: str = pydantic.Field(json_schema_extra={"format": "date"})
        site: str = pydantic.Field(json_schema_extra={"format": "iri"})

    return [Order, Line, Item, Invoice]


def sdk_transform() -> Any:
    """The official SDK's ``transform_schema`` (the test is skipped without it)."""
    anthropic = pytest.importorskip("anthropic")
    transform = getattr(anthropic, "transform_schema", None)
    if transform is None:
        pytest.skip("this anthropic SDK has no transform_schema")
    return transform


def test_the_official_sdk_moves_the_same_keywords_out_of_the_schema():
    transform = sdk_transform()
    for output in _oracle_cases():
        strict = sent_schema(output)
        ours = structured_schema("anthropic", strict)
        theirs = transform(strict)
        assert _shape(ours) == _shape(theirs), output


# -- the complexity limits: 16 properties with a union type, 24 left out of required, per request -------------

def optional_fields(count: int) -> Any:
    return dataclasses.make_dataclass("Wide{}".format(count), [("f{}".format(i), Optional[int], None)
                                                               for i in range(count)])


@pytest.mark.parametrize("count, mode", [(16, "schema"), (17, "tool")])
def test_past_sixteen_optional_fields_a_type_goes_to_claude_as_a_forced_tool(count, mode):
    wide = optional_fields(count)
    answer = json.dumps({"f0": 1})
    with SSEServer() as server:
        server.answers += [Answer([anthropic_calls([("toolu_1", "output", answer)]) if mode == "tool"
                                   else anthropic_text(answer)])]
        client = AutoLLMClient("claude-sonnet-4-6", api_key="sk-test-output-0001", base_url=server.url,
                               client_type="anthropic", max_retries=0)
        parsed = client.parse([USER], wide)
    body = server.requests[0]["body"]
    assert parsed.value == wide(f0=1)
    union = {"anyOf": [{"type": "integer"}, {"type": "null"}]}
    schema = {"type": "object", "properties": {"f{}".format(i): union for i in range(count)},
              "required": ["f{}".format(i) for i in range(count)], "additionalProperties": False}
    if mode == "schema":
        assert body["output_config"] == {"format": {"type": "json_schema", "schema": schema}}
        assert "tools" not in body
    else:
        assert "output_config" not in body
        assert body["tools"] == [{"name": "output", "description": "Answer with the requested value.",
                                  "input_schema": schema}]


def test_the_limits_count_the_strict_tools_of_the_request_and_each_definition_once():
    from agenthub.providers.anthropic import structured_limits

    item = {"type": "object", "properties": {"a": {"anyOf": [{"type": "string"}, {"type": "null"}]},
                                             "b": {"type": "string"}}, "required": ["a", "b"]}
    output = {"type": "object", "properties": {"x": {"$ref": "#/$defs/I"}, "y": {"$ref": "#/$defs/I"}},
              "required": ["x", "y"], "$defs": {"I": item}}
    tool = {"type": "object", "properties": {"t{}".format(i): {"type": ["string", "null"]} for i in range(15)},
            "required": []}
    structured_limits("anthropic", [output, tool])  # 16 unions (I once), 15 optional
    loose = {"type": "object", "properties": {"o{}".format(i): {"type": "integer"} for i in range(10)}}
    with pytest.raises(UnsupportedParameterError) as caught:
        structured_limits("anthropic", [output, tool, loose])
    assert str(caught.value) == ("anthropic: response_format schema: 25 properties left out of required across "
                                 "the request's strict schemas: Anthropic's structured outputs take at most 24")
    tool["properties"]["t15"] = {"anyOf": [{"type": "integer"}, {"type": "null"}]}
    with pytest.raises(UnsupportedParameterError) as caught:
        structured_limits("anthropic", [output, tool])
    assert str(caught.value) == (
        "anthropic: response_format schema: 17 properties with a union type (anyOf or a type list: each optional "
        "field of typed output is one) across the request's strict schemas: Anthropic's structured outputs take "
        "at most 16")


def test_a_strict_tool_beside_the_output_schema_counts_toward_the_limits():
    with SSEServer() as server:
        client = AutoLLMClient("claude-sonnet-4-6", api_key="sk-test-output-0001", base_url=server.url,
                               client_type="anthropic", max_retries=0)
        tools = [{"name": "look", "strict": True, "parameters": {
            "type": "object", "properties": {"q": {"type": ["string", "null"]}}, "required": ["q"],
            "additionalProperties": False}}]
        config = {"tools": tools, "response_format": {"type": "json_schema", "name": "output",
                                                      "schema": sent_schema(optional_fields(16))}}
        with pytest.raises(UnsupportedParameterError) as caught:
            client.plan([USER], config)
    assert "17 properties with a union type" in str(caught.value)
    assert server.requests == []


def test_claude_on_bedrock_gets_the_same_schema_and_other_models_there_the_whole_one():
    environ = {"AWS_BEARER_TOKEN_BEDROCK": "ABSKbedrock-api-key-0004", "AWS_REGION": "us-east-1"}
    claude = encoded("bedrock", "anthropic.claude-sonnet-4-6", Order, dict(environ))
    structure = claude["outputConfig"]["textFormat"]["structure"]["jsonSchema"]
    assert canonical(json.loads(structure["schema"])) == canonical(ORDER_SENT)
    llama = encoded("bedrock", "meta.llama3-3-70b-instruct-v1:0", Order, dict(environ))
    whole = json.loads(llama["outputConfig"]["textFormat"]["structure"]["jsonSchema"]["schema"])
    assert canonical(whole) == canonical(sent_schema(Order))
    assert whole["properties"]["email"] == {"type": "string", "pattern": ".+@.+"}


def test_a_recursive_type_is_refused_for_claude_on_bedrock_before_sending():
    environ = {"AWS_BEARER_TOKEN_BEDROCK": "ABSKbedrock-api-key-0004", "AWS_REGION": "us-east-1"}
    with pytest.raises(UnsupportedParameterError) as caught:
        encoded("bedrock", "anthropic.claude-sonnet-4-6", Tree, dict(environ))
    assert caught.value.parameter == "response_format"
    assert "a recursive schema cannot be sent" in str(caught.value)  # (so typed output takes the forced tool)


# -- strict tools: their input_schema is held to the same subset on every Claude route, and the runner holds the
# -- model's arguments to the whole schema (the bounds left the wire) ------------------------------------------

ORDER_TOOL = {"name": "order", "description": "Place an order.", "strict": True, "parameters": sent_schema(Order)}
#: a tool that is not strict: its schema goes as it is, bounds and all
NOTE_TOOL = {"name": "note", "parameters": {"type": "object", "required": ["text"],
                                            "properties": {"text": {"type": "string", "maxLength": 9}}}}
BEDROCK = {"AWS_BEARER_TOKEN_BEDROCK": "ABSKbedrock-api-key-0004", "AWS_REGION": "us-east-1"}
CLAUDE_ROUTES = [
    ("anthropic", "claude-sonnet-4-6", {"api_key": "sk-test-output-0001"}),
    ("vertex", "claude-sonnet-4-6", {"GOOGLE_CLOUD_PROJECT": "vtx-proj-123", "api_key": "ya29.static-token"}),
    ("azure-anthropic", "claude-sonnet-4-6", {"ANTHROPIC_FOUNDRY_RESOURCE": "res-1",
                                              "ANTHROPIC_FOUNDRY_API_KEY": "foundry-key-0001"}),
    ("bedrock", "anthropic.claude-sonnet-4-6", BEDROCK),
]


def sent_tools(kind: str, body: Dict[str, Any]) -> List[Dict[str, Any]]:
    """The tools of a body in the Messages API's words (Bedrock's toolSpecs read back; its cache point left out)."""
    if kind != "bedrock":
        return body["tools"]
    return [dict({k: v for k, v in spec["toolSpec"].items() if k != "inputSchema"},
                 input_schema=spec["toolSpec"]["inputSchema"]["json"])
            for spec in body["toolConfig"]["tools"] if "toolSpec" in spec]


@pytest.mark.parametrize("kind, model, environ", CLAUDE_ROUTES)
def test_a_strict_tools_schema_goes_to_claude_cut_to_the_subset_on_every_route(kind, model, environ):
    body = encoded(kind, model, None, dict(environ), tools=[ORDER_TOOL, NOTE_TOOL])
    assert canonical(sent_tools(kind, body)) == canonical([
        {"name": "order", "description": "Place an order.", "input_schema": ORDER_SENT, "strict": True},
        {"name": "note", "input_schema": NOTE_TOOL["parameters"]}])
    assert ORDER_TOOL["parameters"]["properties"]["email"] == {"type": "string", "pattern": ".+@.+"}  # (a copy)


def test_a_strict_tool_goes_whole_to_the_other_models_on_bedrock():
    body = encoded("bedrock", "meta.llama3-3-70b-instruct-v1:0", None, dict(BEDROCK), tools=[ORDER_TOOL])
    assert body["toolConfig"]["tools"] == [{"toolSpec": {
        "name": "order", "description": "Place an order.", "inputSchema": {"json": sent_schema(Order)},
        "strict": True}}]


OPEN_MAP = {"type": "object", "properties": {"counts": {"type": "object", "additionalProperties": {"type": "integer"}}},
            "required": ["counts"], "additionalProperties": False}


@pytest.mark.parametrize("kind, model, environ", [CLAUDE_ROUTES[0], CLAUDE_ROUTES[3]])
@pytest.mark.parametrize("parameters, words", [
    (sent_schema(Tree), "input_schema refers to '#/$defs/Tree' from inside it: a recursive schema cannot be sent"),
    (OPEN_MAP, "input_schema['properties']['counts']['additionalProperties'] is {\"type\":\"integer\"}: only false "
               "is taken (an open map cannot be sent)"),
    ({"type": "object", "properties": {"q": {"type": "string"}}},
     "input_schema is an object without additionalProperties false (an open map cannot be sent)"),
])
def test_a_strict_tool_the_subset_cannot_say_is_refused_naming_it_before_sending(kind, model, environ, parameters,
                                                                                 words):
    tool = {"name": "walk", "strict": True, "parameters": parameters}
    with pytest.raises(UnsupportedParameterError) as caught:
        encoded(kind, model, None, dict(environ), tools=[NOTE_TOOL, tool])
    assert str(caught.value) == ("{}: tools strict tool 'walk': {}: Anthropic's structured outputs take a subset of "
                                 "JSON Schema".format(kind, words))
    assert caught.value.parameter == "tools"
    assert encoded(kind, model, None, dict(environ), tools=[dict(tool, strict=False)])  # not strict: sent as it is


@pytest.mark.parametrize("kind, model, environ", [CLAUDE_ROUTES[0], CLAUDE_ROUTES[3]])
def test_strict_tools_alone_are_held_to_the_complexity_limits(kind, model, environ):
    union = {"type": "object", "properties": {"f{}".format(i): {"type": ["integer", "null"]} for i in range(9)},
             "required": ["f{}".format(i) for i in range(9)], "additionalProperties": False}
    tools = [{"name": "a", "strict": True, "parameters": union}, {"name": "b", "strict": True, "parameters": union}]
    with pytest.raises(UnsupportedParameterError) as caught:
        encoded(kind, model, None, dict(environ), tools=tools)
    assert str(caught.value) == (
        "{}: tools 18 properties with a union type (anyOf or a type list: each optional field of typed output is "
        "one) across the request's strict schemas: Anthropic's structured outputs take at most 16".format(kind))
    assert caught.value.parameter == "tools"
    assert encoded(kind, model, None, dict(environ), tools=tools[:1])  # 9: taken


def test_the_official_sdk_cuts_a_strict_tools_schema_the_same_way():
    transform = sdk_transform()
    for output in _oracle_cases():
        tool = {"name": "t", "strict": True, "parameters": sent_schema(output)}
        ours = encoded("anthropic", "claude-sonnet-4-6", None, {"api_key": "sk-test-output-0001"}, tools=[tool])
        assert _shape(ours["tools"][0]["input_schema"]) == _shape(transform(sent_schema(output))), output


def test_the_runner_holds_a_strict_tools_arguments_to_the_whole_schema_the_wire_left_out():
    bad = {"lines": [{"sku": "pen", "qty": 0}], "email": "nobody", "discount": None}
    with SSEServer() as server:
        server.answers += [Answer([anthropic_calls([("toolu_1", "order", json.dumps(bad))])]),
                           Answer([anthropic_calls([("toolu_2", "order", json.dumps(GOOD))])])]
        client = AutoLLMClient("claude-sonnet-4-6", api_key="sk-test-output-0001", base_url=server.url,
                               client_type="anthropic", max_retries=0)
        result = client.run([USER], tools=[ORDER_TOOL]).result()
        second = server.requests[1]["body"]
    assert canonical(server.requests[0]["body"]["tools"]) == canonical([
        {"name": "order", "description": "Place an order.", "input_schema": ORDER_SENT, "strict": True}])
    assert second["messages"][-1] == {"role": "user", "content": [{
        "type": "tool_result", "tool_use_id": "toolu_1", "is_error": True, "content": (
            "invalid arguments for order: lines[0].sku must be a string matching \"^[A-Z]+$\", got 'pen'; "
            "lines[0].qty must be >= 1, got 0; lines must be at least 2 items, got [{'sku': 'pen', 'qty': 0}]; "
            "email must be a string matching \".+@.+\", got 'nobody'")}]}
    assert result.stop == "approval"  # the good call: handed back for the caller to run (a plain ToolSchema)
    assert [(c["tool_call_id"], c["arguments"]) for c in result.pending] == [("toolu_2", GOOD)]


class Orders(object):
    """A tool provider whose one tool is strict."""

    def __init__(self) -> None:
        self.called = []  # type: List[Any]

    def list_tools(self) -> List[Dict[str, Any]]:
        return [ORDER_TOOL]

    def call_tool(self, name: str, arguments: Dict[str, Any]) -> Dict[str, Any]:
        self.called.append(arguments)
        return {"type": "tool_result", "text": "placed"}


@pytest.mark.parametrize("edited", [False, True])
def test_a_providers_strict_tool_is_not_called_with_arguments_past_its_schema(edited):
    """The model's arguments, or those a decision edited (approve's, a before_call hook's), are held to the strict
    schema: the call is an error result, the provider is not called with them."""
    bad = dict(GOOD, discount=1.5)
    provider = Orders()
    first = GOOD if edited else bad
    approve = (lambda call: {"arguments": bad} if call["tool_call_id"] == "toolu_1" else True) if edited else None
    with SSEServer() as server:
        server.answers += [Answer([anthropic_calls([("toolu_1", "order", json.dumps(first)),
                                                    ("toolu_2", "order", json.dumps(GOOD))])]),
                           Answer([anthropic_text("Done.")])]
        client = AutoLLMClient("claude-sonnet-4-6", api_key="sk-test-output-0001", base_url=server.url,
                               client_type="anthropic", max_retries=0)
        result = client.run([USER], tools=[provider], approve=approve).result()
        second = server.requests[1]["body"]
    assert provider.called == [GOOD]
    assert second["messages"][-1]["content"] == [
        {"type": "tool_result", "tool_use_id": "toolu_1", "is_error": True,
         "content": "invalid arguments for order: discount fits none of the allowed types (discount must be < 1, "
                    "got 1.5; discount must be null)"},
        {"type": "tool_result", "tool_use_id": "toolu_2", "content": "placed"}]
    assert result.stop == "done"


def test_a_strict_tool_whose_schema_agenthub_cannot_check_is_a_config_error_before_sending():
    tool = {"name": "find", "strict": True, "parameters": {
        "type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"], "additionalProperties": False,
        "patternProperties": {"^x": {"type": "string"}}}}
    with SSEServer() as server:
        client = AutoLLMClient("claude-sonnet-4-6", api_key="sk-test-output-0001", base_url=server.url,
                               client_type="anthropic", max_retries=0)
        with pytest.raises(agenthub.ConfigError) as caught:
            client.run([USER], tools=[tool]).result()
        assert server.requests == []
    assert str(caught.value) == (
        "the ToolSchema 'find' is strict, and its parameters cannot be checked here (schema: the schema keyword "
        "'patternProperties' is outside the subset agenthub checks): leave strict out, or keep to the keywords "
        "agenthub checks (agenthub.typeschema)")
