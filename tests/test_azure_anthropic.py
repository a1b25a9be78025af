"""client_type "azure-anthropic": Claude on Microsoft Foundry, one row (the anthropic dialect at the azure host).

Wire facts pinned here, from the anthropic SDK's own Foundry client (``anthropic.lib.foundry.AnthropicFoundry``,
read in anthropic 2.15.0, and driven below against a local server) and Anthropic's "Claude in Microsoft
Foundry" page: Messages at ``https://{resource}.services.ai.azure.com/anthropic/v1/messages``; the resource
from ``ANTHROPIC_FOUNDRY_RESOURCE`` unless a base URL is given (``ANTHROPIC_FOUNDRY_BASE_URL``), the two
together refused; the key from ``ANTHROPIC_FOUNDRY_API_KEY`` sent as ``x-api-key`` and, for backwards
compatibility, ``api-key``; an Azure AD (Entra ID) token provider called on every request and sent as
``Authorization: Bearer`` (then no key header); ``ANTHROPIC_API_KEY`` never sent; no model list.
"""

import json

import pytest

from agenthub import AutoLLMClient, hosts
from agenthub.errors import ConfigError, UnsupportedOperationError
from agenthub.providers._common import Endpoint
from agenthub.registry import resolve
from agenthub.validate import check_config
from sse_server import Answer, SSEServer

KEY = "foundry-key-0123456789abcdef"
RESOURCE = "contoso-ai"
ROOT = "https://contoso-ai.services.ai.azure.com/anthropic"
MODEL = "claude-sonnet-4-6"  # the deployment name is the model parameter
USER = [{"role": "user", "content_items": [{"type": "text", "text": "Weather in Paris?"}]}]


def stream(text="Sunny."):
    events = [
        ("message_start", {"type": "message_start", "message": {
            "id": "msg_f1", "type": "message", "role": "assistant", "model": MODEL, "content": [],
            "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 12, "output_tokens": 1}}}),
        ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                           "usage": {"output_tokens": 3}}),
        ("message_stop", {"type": "message_stop"}),
    ]
    return "".join("event: {}\ndata: {}\n\n".format(name, json.dumps(data)) for name, data in events).encode()


def encoded(model=MODEL, config=None, base_url=None, api_key=None, environ=None):
    environ = {"ANTHROPIC_FOUNDRY_RESOURCE": RESOURCE, "ANTHROPIC_FOUNDRY_API_KEY": KEY} if environ is None else environ
    kind, url, key, quirks = resolve(model, "azure-anthropic", base_url, api_key, environ=environ)
    row = hosts.client_type(kind)
    endpoint = Endpoint(kind, url, key, None, quirks, model)
    plan = row.protocol().build_request(endpoint, model, USER, check_config(config or {}))
    return plan, row.host.encode(plan, endpoint)


def test_the_row_is_the_anthropic_dialect_at_the_azure_host():
    row = hosts.client_type("azure-anthropic")
    assert (row.dialect, row.host_name, row.key_env) == ("anthropic", "azure", ("ANTHROPIC_FOUNDRY_API_KEY",))


def test_request_golden_with_a_key():
    plan, sent = encoded(config={"max_tokens": 64})
    assert sent.url == ROOT + "/v1/messages"
    assert dict(sent.headers) == {"Content-Type": "application/json", "Accept": "text/event-stream",
                                  "anthropic-version": "2026-10-21", "x-api-key": KEY, "api-key": KEY}
    assert "x-api-key" not in plan.headers and "api-key" not in plan.headers  # only the host adds it
    assert json.loads(sent.data) == {
        "model": MODEL, "max_tokens": 64, "messages": [{"role": "user", "content": [
            {"type": "text", "text": "Weather in Paris?"}]}], "cache_control": {"type": "ephemeral"}, "stream": True}


@pytest.mark.parametrize("base_url, environ, root", [
    (None, {"ANTHROPIC_FOUNDRY_RESOURCE": RESOURCE}, ROOT),
    (None, {"ANTHROPIC_FOUNDRY_BASE_URL": ROOT + "/"}, ROOT),
    (None, {"ANTHROPIC_FOUNDRY_BASE_URL": "https://gw.example/team/anthropic"}, "https://gw.example/team/anthropic"),
    (RESOURCE, {}, ROOT),
    (ROOT, {}, ROOT),
])
def test_where_the_resource_comes_from(base_url, environ, root):
    env = dict(environ, ANTHROPIC_FOUNDRY_API_KEY=KEY)
    _, sent = encoded(base_url=base_url, api_key=KEY if base_url else None, environ=env)
    assert sent.url == root + "/v1/messages"


def test_both_variables_are_refused_as_the_sdk_refuses_them():
    with pytest.raises(ConfigError, match="ANTHROPIC_FOUNDRY_BASE_URL and ANTHROPIC_FOUNDRY_RESOURCE are both set"):
        resolve(MODEL, "azure-anthropic", environ={"ANTHROPIC_FOUNDRY_RESOURCE": RESOURCE,
                                                   "ANTHROPIC_FOUNDRY_BASE_URL": ROOT, "ANTHROPIC_FOUNDRY_API_KEY": KEY})


@pytest.mark.parametrize("environ, words", [
    ({}, "no endpoint: pass base_url='<resource>'"),
    ({"ANTHROPIC_FOUNDRY_RESOURCE": "bad name/x"}, "must be an Azure resource name"),
    ({"ANTHROPIC_FOUNDRY_RESOURCE": RESOURCE}, "no credential for contoso-ai.services.ai.azure.com"),
    # the first-party key is never the Foundry key
    ({"ANTHROPIC_FOUNDRY_RESOURCE": RESOURCE, "ANTHROPIC_API_KEY": "sk-ant-first-party"}, "ANTHROPIC_FOUNDRY_API_KEY"),
])
def test_what_is_missing_is_said(environ, words):
    with pytest.raises(ConfigError) as info:
        resolve(MODEL, "azure-anthropic", environ=environ)
    assert words in str(info.value) and "sk-ant-first-party" not in str(info.value)


def test_the_foundry_key_goes_only_to_the_endpoint_its_variables_name():
    with pytest.raises(ConfigError, match="api_key is required with base_url 'other.services.ai.azure.com'"):
        resolve(MODEL, "azure-anthropic", "https://other.services.ai.azure.com/anthropic",
                environ={"ANTHROPIC_FOUNDRY_API_KEY": KEY})
    assert resolve(MODEL, "azure-anthropic", "http://127.0.0.1:9/anthropic", environ={})[2] is None  # loopback


def test_a_token_callable_is_sent_as_bearer_on_every_attempt():
    tokens = iter(["entra-1", "entra-2"])
    kind, url, key, quirks = resolve(MODEL, "azure-anthropic", RESOURCE, lambda: next(tokens), environ={})
    row = hosts.client_type(kind)
    endpoint = Endpoint(kind, url, key, None, quirks, MODEL)
    plan = row.protocol().build_request(endpoint, MODEL, USER, check_config({}))
    first, second = row.host.encode(plan, endpoint), row.host.encode(plan, endpoint)
    assert [first.headers["Authorization"], second.headers["Authorization"]] == ["Bearer entra-1", "Bearer entra-2"]
    assert "x-api-key" not in first.headers and "api-key" not in first.headers


def test_foundry_has_no_model_list():
    client = AutoLLMClient(MODEL, api_key=KEY, base_url=RESOURCE, client_type="azure-anthropic")
    with pytest.raises(UnsupportedOperationError):
        client.list_models()


def test_end_to_end_against_a_local_server():
    with SSEServer() as server:
        server.answers.append(Answer([stream()]))
        client = AutoLLMClient(MODEL, api_key=KEY, base_url=server.url + "/anthropic", client_type="azure-anthropic")
        events = list(client.streaming_response(USER, {"max_tokens": 64}))
    text = "".join(i.get("text", "") for e in events for i in e["content_items"] if i["type"] == "text")
    assert text == "Sunny." and events[-1]["finish_reason"] == "stop"
    [request] = server.requests
    assert request["path"] == "/anthropic/v1/messages"
    headers = {k.lower(): v for k, v in request["headers"].items()}
    assert (headers["x-api-key"], headers["api-key"], headers["anthropic-version"]) == (KEY, KEY, "2026-10-21")
    assert "authorization" not in headers


def test_the_official_sdk_sends_what_agenthub_sends():
    """AnthropicFoundry and agenthub against the same local server: the same path, credential headers,
    version header and body fields (agenthub adds its automatic cache_control)."""
    anthropic = pytest.importorskip("anthropic")
    foundry = pytest.importorskip("anthropic.lib.foundry")
    with SSEServer() as server:
        server.answers.extend([Answer([stream()]), Answer([stream()]), Answer([stream()]), Answer([stream()])])
        base = server.url + "/anthropic/"
        sdk = foundry.AnthropicFoundry(api_key=KEY, base_url=base, max_retries=0)
        with sdk.messages.stream(model=MODEL, max_tokens=64,
                                 messages=[{"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"}]}]) as s:
            assert s.get_final_text() == "Sunny."
        ours = AutoLLMClient(MODEL, api_key=KEY, base_url=base, client_type="azure-anthropic", max_retries=0)
        list(ours.streaming_response(USER, {"max_tokens": 64}))
        # Entra ID: a token provider, Bearer, no key header (both sides)
        sdk = foundry.AnthropicFoundry(azure_ad_token_provider=lambda: "entra-tok", base_url=base, max_retries=0)
        with sdk.messages.stream(model=MODEL, max_tokens=64, messages=[{"role": "user", "content": "x"}]) as s:
            s.get_final_text()
        ours = AutoLLMClient(MODEL, api_key=lambda: "entra-tok", base_url=base, client_type="azure-anthropic")
        list(ours.streaming_response(USER, {"max_tokens": 64}))
    assert anthropic.__version__
    theirs, mine, theirs_entra, mine_entra = server.requests
    assert mine["path"] == theirs["path"] == "/anthropic/v1/messages"

    def credential(request):
        headers = {k.lower(): v for k, v in request["headers"].items()}
        return {name: headers.get(name) for name in ("x-api-key", "api-key", "authorization", "anthropic-version")}

    # the same version (2026-10-21, the SDK's since its 2.0.0) and the same credential headers
    assert credential(mine) == credential(theirs) == {"x-api-key": KEY, "api-key": KEY, "authorization": None,
                                                      "anthropic-version": "2026-10-21"}
    assert credential(mine_entra) == credential(theirs_entra) == {
        "x-api-key": None, "api-key": None, "authorization": "Bearer entra-tok", "anthropic-version": "2026-10-21"}
    assert {k: v for k, v in mine["body"].items() if k != "cache_control"} == theirs["body"]
