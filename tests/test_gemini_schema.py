"""Issue 24 B1: Gemini 1.x / 2.0 take the OpenAPI subset in ``responseSchema``; the caller's JSON Schema is
converted as google-genai's own transformer converts it (``_transformers.process_schema``: $defs inlined,
null types as ``nullable``, a string const as a one-value enum, ``propertyOrdering`` in the caller's
order), and what the subset cannot say is refused before sending.  Models from 2.5 keep the schema as
it is, in ``responseJsonSchema``.  The SDK's own request (google-genai driving a local server) is the
reference: the same schema must give the same responseSchema."""

import json
import re

import pytest

from agenthub import AutoLLMClient, UnsupportedParameterError
from agenthub.providers import gemini
from agenthub.providers._common import Endpoint
from sse_server import Answer, SSEServer

GEMINI = Endpoint("gemini", "https://generativelanguage.googleapis.com", "gm-test")
VERTEX = Endpoint("vertex", "https://aiplatform.googleapis.com/v1/projects/p/locations/global", None,
                  quirks={"schema_additional_properties": True})  # the vertex row's quirk
USER = {"role": "user", "content_items": [{"type": "text", "text": "hi"}]}

PERSON = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$defs": {"Pet": {"type": "object", "title": "Pet",
                      "properties": {"kind": {"const": "dog", "type": "string"}, "name": {"type": "string"}},
                      "required": ["kind", "name"]}},
    "type": "object",
    "title": "Person",
    "properties": {
        "name": {"type": "string", "description": "full name"},
        "age": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None},
        "pets": {"type": "array", "items": {"$ref": "#/$defs/Pet"}, "maxItems": 3},
        "mood": {"type": "string", "enum": ["happy", "sad"]},
    },
    "required": ["name", "pets"],
}


def _sent(model, schema, endpoint=GEMINI):
    config = {"response_format": {"type": "json_schema", "name": "out", "schema": schema, "strict": True}}
    return gemini.build_request(endpoint, model, [USER], config).body["generationConfig"]


def _camel(value):
    """google-genai writes some proto fields in snake case (property_ordering): the API reads both spellings."""
    if isinstance(value, dict):
        return {re.sub(r"_([a-z])", lambda m: m.group(1).upper(), k): _camel(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_camel(v) for v in value]
    return value


def _sdk_response_schema(schema):
    """The generationConfig.responseSchema google-genai sends for ``schema`` (its client against a local server)."""
    genai = pytest.importorskip("google.genai")
    from google.genai import types

    done = {"candidates": [{"content": {"parts": [{"text": "{}"}], "role": "model"}, "finishReason": "STOP",
                            "index": 0}]}
    with SSEServer() as server:
        server.answers.append(Answer([("data: " + json.dumps(done) + "\r\n\r\n").encode()]))
        client = genai.Client(api_key="gm-test", http_options=types.HttpOptions(base_url=server.url))
        config = types.GenerateContentConfig(response_mime_type="application/json",
                                             response_schema=json.loads(json.dumps(schema)))
        for _ in client.models.generate_content_stream(model="gemini-2.0-flash", contents="hi", config=config):
            pass
        return server.requests[0]["body"]["generationConfig"]["responseSchema"]


def test_a_gemini_2_0_schema_is_the_one_google_genai_sends():
    ours = _sent("gemini-2.0-flash", PERSON)
    assert ours["responseMimeType"] == "application/json" and "responseJsonSchema" not in ours
    # (google-genai's Schema refuses the $schema annotation outright: we leave it out, as it says nothing)
    assert ours["responseSchema"] == _camel(_sdk_response_schema({k: v for k, v in PERSON.items() if k != "$schema"}))


def test_the_conversion_exactly():
    assert _sent("gemini-1.5-pro", PERSON)["responseSchema"] == {
        "type": "OBJECT",
        "title": "Person",
        "properties": {
            "name": {"type": "STRING", "description": "full name"},
            "age": {"type": "INTEGER", "nullable": True},
            "pets": {"type": "ARRAY", "maxItems": 3, "items": {
                "type": "OBJECT", "title": "Pet",
                "properties": {"kind": {"type": "STRING", "enum": ["dog"]}, "name": {"type": "STRING"}},
                "required": ["kind", "name"], "propertyOrdering": ["kind", "name"]}},
            "mood": {"type": "STRING", "enum": ["happy", "sad"]},
        },
        "required": ["name", "pets"],
        "propertyOrdering": ["name", "age", "pets", "mood"],
    }
    # JSON Schema's type lists with null, and a bare const
    assert _sent("gemini-2.0-flash", {"type": ["string", "null"], "examples": ["a"]})["responseSchema"] == {
        "type": "STRING", "example": "a", "nullable": True}
    assert _sent("gemini-2.0-flash", {"const": "yes"})["responseSchema"] == {"type": "STRING", "enum": ["yes"]}


def test_gemini_2_5_and_later_keep_the_json_schema_as_it_is():
    for model in ("gemini-2.5-flash", "gemini-3.5-flash"):
        sent = _sent(model, PERSON)
        assert sent["responseJsonSchema"] == PERSON and "responseSchema" not in sent


@pytest.mark.parametrize("schema, why", [
    ({"type": "object", "properties": {"next": {"$ref": "#/$defs/Node"}}, "$defs": {"Node": {
        "type": "object", "properties": {"next": {"$ref": "#/$defs/Node"}}}}}, "recursively"),
    ({"oneOf": [{"type": "string"}, {"type": "integer"}]}, "'oneOf'] has no equivalent"),
    ({"type": "integer", "enum": [1, 2]}, "values other than strings"),
    ({"type": "integer", "const": 3}, "only a string can be a one-value enum"),
    ({"type": ["string", "integer"]}, "one type (and null)"),
    ({"type": "object", "additionalProperties": {"type": "string"}}, "the Gemini API has no additionalProperties"),
    ({"type": "number", "exclusiveMinimum": 0}, "'exclusiveMinimum'] has no equivalent"),
    ({"$ref": "https://example.com/s.json"}, "not under $defs"),
])
def test_what_the_subset_cannot_say_is_refused_before_sending(schema, why):
    with pytest.raises(UnsupportedParameterError) as info:
        _sent("gemini-2.0-flash", schema)
    assert info.value.parameter == "response_format" and why in str(info.value)
    _sent("gemini-2.5-flash", schema)  # a JSON Schema model takes it


def test_vertex_keeps_additional_properties():
    schema = {"type": "object", "additionalProperties": {"type": "string"}}
    assert _sent("gemini-2.0-flash", schema, VERTEX)["responseSchema"] == {
        "type": "OBJECT", "additionalProperties": {"type": "STRING"}}


def test_the_client_refuses_before_anything_is_sent():
    with SSEServer() as server:
        client = AutoLLMClient("gemini-2.0-flash", client_type="gemini", base_url=server.url, api_key="gm-test")
        with pytest.raises(UnsupportedParameterError):
            client.response([USER], {"response_format": {"type": "json_schema", "name": "o", "strict": True,
                                                         "schema": {"oneOf": [{"type": "string"}]}}})
        assert server.requests == []


def test_a_keyword_gemini_ignores_stays_in_the_schema_and_typed_output_checks_the_answer_against_it():
    """Gemini's "JSON schema support" (https://ai.google.dev/gemini-api/docs/structured-output, "Limitations"):
    "The model ignores unsupported properties" (its list: type, title, description, properties, required,
    additionalProperties, enum, format, minimum, maximum, items, prefixItems, minItems, maxItems).  So a
    ``pattern`` or ``minLength`` goes in ``responseJsonSchema`` as it is (no 400), the model may not hold it,
    and typed output holds the answer to it here: refused and asked again."""
    from agent_streams import gemini_text

    schema = {"type": "object", "properties": {"code": {"type": "string", "pattern": "^[A-Z]{3}$", "minLength": 3}},
              "required": ["code"], "additionalProperties": False}
    with SSEServer() as server:
        server.answers += [Answer([gemini_text('{"code": "ab"}')]), Answer([gemini_text('{"code": "ABC"}')])]
        client = AutoLLMClient("gemini-2.5-flash", client_type="gemini", base_url=server.url, api_key="gm-test",
                               max_retries=0)
        parsed = client.parse([USER], schema, retries=1)
    assert parsed.value == {"code": "ABC"}
    assert [r["body"]["generationConfig"]["responseJsonSchema"] for r in server.requests] == [schema, schema]
    assert server.requests[1]["body"]["contents"][-1] == {"role": "user", "parts": [{"text": (
        "The answer did not match the required JSON Schema:\n- code: expected a string matching \"^[A-Z]{3}$\", "
        "got \"ab\"\n- code: expected at least 3 characters, got \"ab\"\nAnswer again with the corrected value "
        "only.")}]}


def test_a_nullable_enum_is_an_enum_of_its_strings_and_nullable():
    """``"enum": ["low", "high", null]`` (the nullable enum OpenAI's strict mode asks for, and what typed output's
    strict form makes of a ``Literal`` field with a default) was refused on Gemini 1.x / 2.0 ("values other than
    strings"): a user's response_format failed, and typed output fell back from the native schema to a forced
    tool. The subset says it: the strings as the enum, and ``nullable``."""
    schema = {"type": "object", "additionalProperties": False, "required": ["priority"],
              "properties": {"priority": {"type": ["string", "null"], "enum": ["low", "high", None]}}}
    assert _sent("gemini-2.0-flash", schema)["responseSchema"] == {
        "type": "OBJECT", "additionalProperties": False, "required": ["priority"],
        "properties": {"priority": {"type": "STRING", "enum": ["low", "high"], "nullable": True}}}
    with pytest.raises(UnsupportedParameterError):
        _sent("gemini-2.0-flash", {"type": "integer", "enum": [1, None]})  # (still strings only)

    import dataclasses
    from typing import Literal

    import agenthub
    from agenthub.output.shape import shape

    @dataclasses.dataclass
    class Ticket:
        title: str
        priority: Literal["low", "high"] = "low"

    client = AutoLLMClient("gemini-2.0-flash", api_key="gm-test")
    assert shape(client, [agenthub.user("x")], Ticket, {}).mode == "schema"  # (not the forced tool)
