"""Anthropic API version 2026-10-21 (issue 38 item 3): which version each route sends, how the key travels
under it, what it refuses before sending, and the pin ``AutoLLMClient(..., anthropic_version=...)``.

Wire facts pinned here, from Anthropic's "Migrating to API version 2026-10-21" page and the official SDK
(anthropic 2.x, ``_constants.ANTHROPIC_API_VERSION = "2026-10-21"``; 1.x sent ``2023-06-01``): the version
is a header on the first-party API and Foundry and the body's ``anthropic_version`` on Vertex AI (where
2023-06-01 was named ``vertex-2023-10-16``); the SDK sends the first-party key as ``Authorization: Bearer``
(1.x: ``x-api-key``), Foundry's as ``x-api-key`` + ``api-key``; under 2026-10-21 ``temperature``, ``top_p``
and ``top_k`` are a 400 even at their defaults, and so is a document block placed directly in an
assistant turn (and a user text block with non-empty citations, which agenthub never sends: a user text
item's fidelity is not replayed).  Bedrock's legacy models (before Claude 4.7) do not take 2026-10-21;
agenthub's Bedrock wire is Converse, which carries no Anthropic version (the per-model rules apply there).
"""

import base64
import json

import pytest

from agenthub import AutoLLMClient
from agenthub.errors import ConfigError, UnsupportedParameterError
from agenthub.providers import anthropic
from agenthub import validate
from sse_server import Answer, SSEServer

KEY = "sk-ant-api03-version-test"
USER = [{"role": "user", "content_items": [{"type": "text", "text": "Hi"}]}]
PIN = "or pin the previous version with AutoLLMClient(..., anthropic_version='2023-06-01')"


def sent(client, config=None, messages=USER):
    """What ``client`` would send for one turn: the plan encoded by its host (URL, headers with the
    credential, body), without any network."""
    request = client._host.encode(client.plan(messages, config or {}), client._endpoint)
    return request, json.loads(request.data)


def first_party(**kwargs):
    return AutoLLMClient("claude-sonnet-4-6", api_key=KEY, client_type="anthropic", **kwargs)


def test_the_versions_known_are_one_list():
    assert validate.ANTHROPIC_VERSIONS == anthropic.ANTHROPIC_VERSIONS == ("2026-10-21", "2023-06-01")


def test_first_party_sends_2026_10_21_and_the_key_as_bearer():
    request, body = sent(first_party())
    assert request.url == "https://api.anthropic.com/v1/messages"
    assert dict(request.headers) == {"Content-Type": "application/json", "Accept": "text/event-stream",
                                     "anthropic-version": "2026-10-21", "Authorization": "Bearer " + KEY}
    assert body == {"model": "claude-sonnet-4-6", "max_tokens": 32000,
                    "messages": [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}],
                    "cache_control": {"type": "ephemeral"}, "stream": True}


def test_first_party_pinned_to_2023_06_01_sends_x_api_key_and_takes_sampling():
    request, body = sent(first_party(anthropic_version="2023-06-01"), {"temperature": 0.3})
    assert dict(request.headers) == {"Content-Type": "application/json", "Accept": "text/event-stream",
                                     "anthropic-version": "2023-06-01", "x-api-key": KEY}
    assert body["temperature"] == 0.3


def test_an_anthropic_version_in_default_headers_is_a_pin_too():
    client = first_party(default_headers={"anthropic-version": "2023-06-01"})
    request, body = sent(client, {"top_p": 0.9})
    assert (request.headers["anthropic-version"], request.headers["x-api-key"], body["top_p"]) == (
        "2023-06-01", KEY, 0.9)


def test_an_anthropic_version_in_extra_headers_pins_that_request():
    client = first_party()
    config = {"temperature": 0.4, "extra_headers": {"anthropic-version": "2023-06-01"}}
    request = client._host.encode(client.plan(USER, config), client._endpoint)
    assert (request.headers["anthropic-version"], request.headers["x-api-key"]) == ("2023-06-01", KEY)
    assert json.loads(request.data)["temperature"] == 0.4


@pytest.mark.parametrize("config,parameter", [
    ({"temperature": 0.3}, "temperature"),
    ({"temperature": 1.0}, "temperature"),  # even the default value: never a silent drop
    ({"top_p": 0.9}, "top_p"),
    ({"extra_body": {"top_k": 40}}, "extra_body['top_k']"),
    ({"extra_body": {"temperature": 1}}, "extra_body['temperature']"),
])
def test_sampling_under_2026_10_21_is_refused_naming_the_pin(config, parameter):
    with pytest.raises(UnsupportedParameterError) as info:
        first_party().plan(USER, config)
    assert (info.value.client, info.value.parameter) == ("anthropic", parameter)
    assert str(info.value) == (
        "anthropic: {} cannot be sent under Anthropic API version 2026-10-21, which removed temperature, top_p and "
        "top_k (a 400 even at their default values): leave it out, {}".format(parameter, PIN))


PDF = b"%PDF-1.7 fake"


@pytest.mark.parametrize("item", [
    {"type": "inline_data", "data": PDF, "mime_type": "application/pdf"},
    {"type": "image_url", "image_url": "https://docs.example/spec.pdf"},
    {"type": "image_url", "image_url": "data:application/pdf;base64," + base64.b64encode(PDF).decode()},
    {"type": "text", "text": "", "fidelity": {"server_block": {"type": "document", "source": {
        "type": "text", "media_type": "text/plain", "data": "x"}}}},
])
def test_a_document_in_an_assistant_turn_is_refused_under_2026_10_21(item):
    messages = USER + [{"role": "assistant", "content_items": [item, {"type": "text", "text": "Read."}]},
                       {"role": "user", "content_items": [{"type": "text", "text": "Summarise it."}]}]
    with pytest.raises(UnsupportedParameterError) as info:
        first_party().plan(messages)
    assert (info.value.client, info.value.parameter) == ("anthropic", "messages")
    assert str(info.value) == (
        "anthropic: messages hold a document (PDF) in assistant turn messages[1], which Anthropic API version "
        "2026-10-21 refuses: send the document in a user message, " + PIN)
    # the same turn under 2023-06-01 (pinned) goes out: agenthub leaves an assistant's media out, as before
    first_party(anthropic_version="2023-06-01").plan(messages)


def test_documents_in_user_turns_and_citations_replayed_in_assistant_turns_are_accepted():
    citation = {"type": "char_location", "cited_text": "x", "document_index": 0, "start_char_index": 0,
                "end_char_index": 1}
    messages = [{"role": "user", "content_items": [{"type": "inline_data", "data": PDF, "mime_type": "application/pdf"},
                                                   {"type": "text", "text": "Cite it.", "fidelity": {
                                                       "citations": [citation]}}]},
                {"role": "assistant", "content_items": [{"type": "text", "text": "x", "fidelity": {
                    "citations": [citation]}}]},
                {"role": "user", "content_items": [{"type": "text", "text": "More."}]}]
    _, body = sent(first_party(), {}, messages)
    user, assistant = body["messages"][0]["content"], body["messages"][1]["content"]
    assert user == [{"type": "document", "source": {"type": "base64", "media_type": "application/pdf",
                                                   "data": base64.b64encode(PDF).decode()}},
                    {"type": "text", "text": "Cite it."}]  # a user text block never carries citations
    assert assistant == [{"type": "text", "text": "x", "citations": [citation]}]


def test_a_gateway_gets_2023_06_01_unless_pinned():
    gateway = AutoLLMClient("glm-4.6", api_key="gw-key", base_url="https://gw.example/anthropic",
                            client_type="anthropic")
    request, body = sent(gateway, {"temperature": 0.5})
    assert (request.headers["anthropic-version"], request.headers["x-api-key"], body["temperature"]) == (
        "2023-06-01", "gw-key", 0.5)
    newer = AutoLLMClient("glm-4.6", api_key="gw-key", base_url="https://gw.example/anthropic",
                          client_type="anthropic", anthropic_version="2026-10-21")
    request, body = sent(newer)
    assert (request.headers["anthropic-version"], request.headers["x-api-key"]) == ("2026-10-21", "gw-key")
    assert "authorization" not in {k.lower() for k in request.headers}  # a gateway reads the key where it did


def test_foundry_sends_2026_10_21_with_its_key_headers(monkeypatch):
    client = AutoLLMClient("claude-sonnet-4-6", api_key="foundry-key", base_url="contoso-ai",
                           client_type="azure-anthropic")
    request, _ = sent(client)
    assert request.url == "https://contoso-ai.services.ai.azure.com/anthropic/v1/messages"
    assert dict(request.headers) == {"Content-Type": "application/json", "Accept": "text/event-stream",
                                     "anthropic-version": "2026-10-21", "x-api-key": "foundry-key",
                                     "api-key": "foundry-key"}
    with pytest.raises(UnsupportedParameterError) as info:
        client.plan(USER, {"temperature": 0.2})
    assert info.value.client == "azure-anthropic"
    pinned = AutoLLMClient("claude-sonnet-4-6", api_key="foundry-key", base_url="contoso-ai",
                           client_type="azure-anthropic", anthropic_version="2023-06-01")
    request, body = sent(pinned, {"temperature": 0.2})
    assert (request.headers["anthropic-version"], body["temperature"]) == ("2023-06-01", 0.2)


VERTEX = "https://aiplatform.googleapis.com/v1/projects/vtx-proj-123/locations/global"


def test_vertex_puts_2026_10_21_in_the_body_and_the_old_version_under_its_vertex_name():
    client = AutoLLMClient("claude-sonnet-4-6", api_key="ya29.tok", base_url=VERTEX, client_type="vertex")
    request, body = sent(client)
    assert request.url == VERTEX + "/publishers/anthropic/models/claude-sonnet-4-6:streamRawPredict"
    assert dict(request.headers) == {"Content-Type": "application/json", "Accept": "text/event-stream",
                                     "Authorization": "Bearer ya29.tok"}
    assert body == {"anthropic_version": "2026-10-21", "max_tokens": 32000,
                    "messages": [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}], "stream": True}
    with pytest.raises(UnsupportedParameterError) as info:
        client.plan(USER, {"top_p": 0.5})
    assert (info.value.client, info.value.parameter) == ("vertex-anthropic", "top_p")
    pinned = AutoLLMClient("claude-sonnet-4-6", api_key="ya29.tok", base_url=VERTEX, client_type="vertex",
                           anthropic_version="2023-06-01")
    request, body = sent(pinned, {"top_p": 0.5})
    assert (body["anthropic_version"], body["top_p"]) == ("vertex-2023-10-16", 0.5)
    assert "anthropic-version" not in {k.lower() for k in request.headers}


BEDROCK_ENV = {"AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY": "secret", "AWS_REGION": "us-east-1"}


def test_bedrock_converse_keeps_the_per_model_rules(monkeypatch):
    for name, value in BEDROCK_ENV.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    monkeypatch.delenv("AWS_BEARER_TOKEN_BEDROCK", raising=False)
    old = AutoLLMClient("us.anthropic.claude-sonnet-4-5-20250929-v1:0", client_type="bedrock")
    plan = old.plan(USER, {"temperature": 0.3})
    assert plan.url == "/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse-stream"
    assert plan.body == {"messages": [{"role": "user", "content": [{"text": "Hi"}, {"cachePoint": {"type": "default"}}]}],
                         "inferenceConfig": {"maxTokens": 32000, "temperature": 0.3}}  # no version anywhere
    new = AutoLLMClient("us.anthropic.claude-opus-4-7", client_type="bedrock")
    assert new.plan(USER).body == {"messages": [{"role": "user", "content": [{"text": "Hi"}, {"cachePoint": {
        "type": "default"}}]}], "inferenceConfig": {"maxTokens": 32000}}
    with pytest.raises(UnsupportedParameterError) as info:
        new.plan(USER, {"temperature": 0.3})
    assert str(info.value) == ("bedrock: temperature is not accepted by 'us.anthropic.claude-opus-4-7' (sampling "
                               "parameters were removed; only 1 is allowed)")
    with pytest.raises(ConfigError) as error:
        AutoLLMClient("us.anthropic.claude-opus-4-7", client_type="bedrock", anthropic_version="2023-06-01")
    assert str(error.value) == (
        "anthropic_version applies to Claude over the Anthropic Messages API (client types anthropic, "
        "azure-anthropic, vertex-anthropic), not to client type 'bedrock': its bedrock dialect carries no "
        "Anthropic API version")


@pytest.mark.parametrize("value", ["2024-01-01", "latest", 20261021])
def test_an_unknown_version_is_a_config_error(value):
    with pytest.raises(ConfigError) as info:
        first_party(anthropic_version=value)
    assert str(info.value).startswith("anthropic_version must be one of '2026-10-21', '2023-06-01' (got ")


def test_a_pin_on_another_protocol_is_a_config_error():
    with pytest.raises(ConfigError) as info:
        AutoLLMClient("gpt-5.5", api_key="sk-test", client_type="openai-responses", anthropic_version="2023-06-01")
    assert str(info.value).endswith(
        "not to client type 'openai-responses': its openai-responses dialect carries no Anthropic API version")


def _stream():
    events = [
        ("message_start", {"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant",
                                                                "content": [], "model": "claude-sonnet-4-6",
                                                                "usage": {"input_tokens": 3, "output_tokens": 0}}}),
        ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text",
                                                                                              "text": ""}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta",
                                                                                      "text": "Hello."}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                           "usage": {"output_tokens": 2}}),
        ("message_stop", {"type": "message_stop"}),
    ]
    return "".join("event: {}\ndata: {}\n\n".format(n, json.dumps(d)) for n, d in events).encode()


def test_the_pin_reaches_the_wire_end_to_end():
    with SSEServer() as server:
        server.answers.extend([Answer([_stream()]), Answer([_stream()])])
        for version in ("2026-10-21", "2023-06-01"):
            client = AutoLLMClient("claude-sonnet-4-6", api_key=KEY, base_url=server.url, client_type="anthropic",
                                   anthropic_version=version, max_retries=0)
            assert client.response(USER)["content_items"][0]["text"] == "Hello."
    versions = [{k.lower(): v for k, v in r["headers"].items()}["anthropic-version"] for r in server.requests]
    assert versions == ["2026-10-21", "2023-06-01"]
