"""Azure OpenAI: client_type "azure" (Chat Completions) and "azure-responses" (Responses).

Wire facts pinned here (Microsoft's Azure OpenAI REST reference and "API version lifecycle" page):
the dated API puts the deployment in the path, ``/openai/deployments/{deployment}/chat/completions``,
with ``api-version`` (2024-10-21 is the latest GA version); the v1 API (GA since August 2025) is
``/openai/v1/chat/completions`` and ``/openai/v1/responses`` with the deployment as ``model`` and no
api-version; a key goes in the ``api-key`` header, a Microsoft Entra ID token in ``Authorization:
Bearer``.  The streams in tests/fixtures/azure were written for these tests after the chunks Azure
documents: ``prompt_filter_results`` with empty ``choices``, annotation chunks with
``content_filter_results`` / ``content_filter_offsets`` and no delta, ``finish_reason:
"content_filter"`` from the asynchronous filter, the usage chunk with empty ``choices``.
"""

import json
import os

import pytest

from agenthub import AutoLLMClient
from agenthub.errors import AuthenticationError, ConfigError, RateLimitError, UpstreamError
from agenthub import hosts
from agenthub.hosts import azure
from agenthub.providers import openai_chat, openai_responses
from agenthub.providers._common import Endpoint
from agenthub.registry import resolve
from agenthub.stream import check_stream, collect
from agenthub.validate import check_config
from conftest import run_parser, splits, strip_ids, summarize
from sse_server import Answer, SSEServer

HERE = os.path.dirname(os.path.abspath(__file__))
KEY = "azkey-0123456789abcdef"
RESOURCE = "https://contoso-east.openai.azure.com"
ENV = {"AZURE_OPENAI_ENDPOINT": RESOURCE, "AZURE_OPENAI_API_KEY": KEY}
USER = [{"role": "user", "content_items": [{"type": "text", "text": "Weather in Paris?"}]}]
TOOLS = [{"name": "get_weather", "description": "Current weather.",
          "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}]


def fixture(name):
    with open(os.path.join(HERE, "fixtures", "azure", name), "rb") as handle:
        return handle.read()


def plan(client_type, model="my-gpt5", config=None, base_url=None, api_key=None, environ=ENV, messages=USER):
    kind, url, key, quirks = resolve(model, client_type, base_url, api_key, environ=environ)
    row = hosts.client_type(kind)
    endpoint = Endpoint(kind, url, key, None, quirks, model)
    request = row.protocol().build_request(endpoint, model, messages, check_config(config or {}))
    return request, row.host.encode(request, endpoint)


# -- URLs ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("base, api, version, url", [
    (RESOURCE, "chat", "2024-10-21",
     RESOURCE + "/openai/deployments/my-gpt5/chat/completions?api-version=2024-10-21"),
    (RESOURCE + "/", "chat", "2025-04-01-preview",
     RESOURCE + "/openai/deployments/my-gpt5/chat/completions?api-version=2025-04-01-preview"),
    (RESOURCE + "/openai", "chat", "2024-10-21",
     RESOURCE + "/openai/deployments/my-gpt5/chat/completions?api-version=2024-10-21"),
    (RESOURCE + "/openai/v1", "chat", "2024-10-21", RESOURCE + "/openai/v1/chat/completions"),
    (RESOURCE + "/openai/v1/", "responses", "2024-10-21", RESOURCE + "/openai/v1/responses"),
    (RESOURCE, "responses", "2024-10-21", RESOURCE + "/openai/v1/responses"),
    (RESOURCE + "/openai/deployments/other", "chat", "2024-10-21",
     RESOURCE + "/openai/deployments/other/chat/completions?api-version=2024-10-21"),
    ("https://apim.example.com/team-a", "chat", "2024-10-21",
     "https://apim.example.com/team-a/openai/deployments/my-gpt5/chat/completions?api-version=2024-10-21"),
    ("https://x.services.ai.azure.com/openai/v1", "responses", "", "https://x.services.ai.azure.com/openai/v1/responses"),
])
def test_request_urls(base, api, version, url):
    assert azure.request_url(base, "my-gpt5", api, version) == url


def test_chat_request_golden_with_a_key():
    planned, sent = plan("azure", config={"max_tokens": 50, "tools": TOOLS})
    assert sent.url == RESOURCE + "/openai/deployments/my-gpt5/chat/completions?api-version=2024-10-21"
    assert dict(sent.headers) == {"Content-Type": "application/json", "Accept": "text/event-stream", "api-key": KEY}
    assert "api-key" not in planned.headers and "Authorization" not in planned.headers  # only encode adds it
    assert json.loads(sent.data) == {
        "model": "my-gpt5", "messages": [{"role": "user", "content": "Weather in Paris?"}], "stream": True,
        "stream_options": {"include_usage": True}, "max_tokens": 50,  # 2024-10-21 has no max_completion_tokens
        "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Current weather.",
                                                    "parameters": TOOLS[0]["parameters"]}}]}
    assert KEY.encode() not in sent.data and KEY not in sent.url


def test_responses_request_golden():
    _, sent = plan("azure-responses", model="gpt-5-mini", config={"max_tokens": 50})
    assert sent.url == RESOURCE + "/openai/v1/responses"
    assert dict(sent.headers) == {"Content-Type": "application/json", "Accept": "text/event-stream", "api-key": KEY}
    body = json.loads(sent.data)
    assert body == {"model": "gpt-5-mini", "input": [{"type": "message", "role": "user", "content": [
        {"type": "input_text", "text": "Weather in Paris?"}]}], "stream": True, "store": False,
        "include": ["reasoning.encrypted_content"], "max_output_tokens": 50}


@pytest.mark.parametrize("base, version, field", [
    (RESOURCE, None, "max_tokens"), (RESOURCE, "2024-06-01", "max_tokens"),
    (RESOURCE, "2024-08-01-preview", "max_tokens"), (RESOURCE, "2024-09-01-preview", "max_completion_tokens"),
    (RESOURCE, "2025-04-01-preview", "max_completion_tokens"), (RESOURCE, "2025-11-01", "max_completion_tokens"),
    (RESOURCE + "/openai/v1", None, "max_completion_tokens"),
])
def test_the_max_tokens_field_follows_the_api_version(base, version, field):
    environ = {"AZURE_OPENAI_ENDPOINT": base, "AZURE_OPENAI_API_KEY": KEY}
    if version:
        environ["OPENAI_API_VERSION"] = version
    body = json.loads(plan("azure", config={"max_tokens": 9}, environ=environ)[1].data)
    assert {k: v for k, v in body.items() if k.startswith("max_")} == {field: 9}


def test_api_version_from_the_environment():
    _, sent = plan("azure", environ=dict(ENV, OPENAI_API_VERSION="2025-04-01-preview"))
    assert sent.url.endswith("/chat/completions?api-version=2025-04-01-preview")
    with pytest.raises(ConfigError, match="OPENAI_API_VERSION"):
        plan("azure", environ=dict(ENV, OPENAI_API_VERSION="2024-10-21&x=1"))


def test_token_provider_is_called_per_encode_and_sent_as_bearer():
    tokens = iter(["entra-token-1", "entra-token-2"])
    calls = []

    def provider():
        calls.append(1)
        return next(tokens)

    kind, url, key, quirks = resolve("my-gpt5", "azure", RESOURCE, provider, environ={})
    assert key is provider
    endpoint = Endpoint(kind, url, key, None, quirks, "my-gpt5")
    request = openai_chat.build_request(endpoint, "my-gpt5", USER, check_config({}))
    assert calls == []  # planning calls nothing
    first = azure.HOST.encode(request, endpoint)
    second = azure.HOST.encode(request, endpoint)
    assert first.headers["Authorization"] == "Bearer entra-token-1"
    assert second.headers["Authorization"] == "Bearer entra-token-2"
    assert "api-key" not in first.headers and len(calls) == 2


def test_credential_headers_of_the_caller_win():
    endpoint = Endpoint("azure", RESOURCE, KEY, {"api-key": "from-default-headers"}, {"api_version": "2024-10-21"})
    sent = azure.HOST.encode(openai_chat.build_request(endpoint, "d", USER, check_config({})), endpoint)
    assert sent.headers["api-key"] == "from-default-headers" and "Authorization" not in sent.headers


@pytest.mark.parametrize("returned, error", [
    ("", ConfigError), (None, ConfigError), (42, ConfigError), ("tok\r\nX-Evil: 1", ConfigError),
    ('{"type": "service_account", "private_key": "-----BEGIN PRIVATE KEY-----\\nMII\\n"}', ConfigError),
])
def test_bad_token_provider_results_are_refused(returned, error):
    endpoint = Endpoint("azure", RESOURCE, lambda: returned, None, {})
    request = openai_chat.build_request(endpoint, "d", USER, check_config({}))
    with pytest.raises(error) as info:
        azure.HOST.encode(request, endpoint)
    assert "PRIVATE KEY" not in str(info.value)


@pytest.mark.parametrize("returned, problem", [
    ("entra-\u6f22-token", "holds the character U+6F22 at position 6 of 13: header values are Latin-1"),
    ("entra-\u2028-token", "holds a line separator (U+2028) at position 6 of 13: invisible, copied along with it?"),
    ("entra-\u00a0-token", "holds a no-break space (U+00A0) at position 6 of 13: invisible, copied along with it?"),
], ids=["not-latin-1", "line-separator", "no-break-space"])
def test_a_token_that_cannot_be_a_header_value_is_the_config_error_a_key_gets(returned, problem):
    """As a string key with the same character is refused when the client is made: a ConfigError naming
    the character and its place (it was a TransportError "could not be prepared", or sent with an
    invisible character the server refuses)."""
    endpoint = Endpoint("azure", RESOURCE, lambda: returned, None, {})
    request = openai_chat.build_request(endpoint, "d", USER, check_config({}))
    with pytest.raises(ConfigError) as info:
        azure.HOST.encode(request, endpoint)
    assert str(info.value) == "azure: the token from api_key " + problem


def test_a_provider_that_raises_is_an_authentication_error():
    def provider():
        raise RuntimeError("no managed identity here")

    endpoint = Endpoint("azure", RESOURCE, provider, None, {})
    with pytest.raises(AuthenticationError) as info:
        azure.HOST.encode(openai_chat.build_request(endpoint, "d", USER, check_config({})), endpoint)
    assert info.value.retryable is False and isinstance(info.value.__cause__, RuntimeError)


# -- resolution and the credential rule -------------------------------------------------------------


def test_endpoint_and_key_from_the_environment():
    assert resolve("my-gpt5", "azure", environ=ENV) == (
        "azure", RESOURCE, KEY, {"api_version": "2024-10-21", "max_tokens_field": "max_tokens", "strict_subset": True,
                                 "answers_required": True, "image_subset": True})
    assert resolve("my-gpt5", "azure-openai", environ=ENV)[0] == "azure"
    assert resolve("my-gpt5", "azure-responses", environ=ENV)[:3] == ("azure-responses", RESOURCE, KEY)


def test_no_endpoint_says_how_to_give_one():
    with pytest.raises(ConfigError, match=r"AZURE_OPENAI_ENDPOINT"):
        resolve("my-gpt5", "azure", environ={"AZURE_OPENAI_API_KEY": KEY})


def test_no_credential_says_how_to_give_one():
    with pytest.raises(ConfigError, match=r"pass api_key= or set AZURE_OPENAI_API_KEY \(api_key may also be a "
                                          r"callable returning a Microsoft Entra ID token\)"):
        resolve("my-gpt5", "azure", environ={"AZURE_OPENAI_ENDPOINT": RESOURCE})


def test_the_environment_key_goes_only_to_the_environment_endpoint():
    with pytest.raises(ConfigError, match="api_key is required with base_url 'other.openai.azure.com'"):
        resolve("my-gpt5", "azure", "https://other.openai.azure.com", environ=ENV)
    assert resolve("my-gpt5", "azure", "https://other.openai.azure.com", "k2", environ=ENV)[1:3] == (
        "https://other.openai.azure.com", "k2")
    assert resolve("my-gpt5", "azure", "http://127.0.0.1:9", environ=ENV)[2] is None  # loopback: no key needed


@pytest.mark.parametrize("model", ["a/b", "has space", "q?x", "", "frag#1", "pct%2F"])
def test_deployment_names_that_cannot_go_in_a_path(model):
    with pytest.raises(ConfigError):
        resolve(model, "azure", environ=ENV)


def test_an_endpoint_with_a_query_string_is_refused():
    with pytest.raises(ConfigError, match="query"):
        resolve("d", "azure", RESOURCE + "?api-version=2024-10-21", KEY, environ={})


@pytest.mark.parametrize("client_type, endpoint", [
    ("azure", RESOURCE + "/?"), ("azure", RESOURCE + "#eu"), ("azure-responses", RESOURCE + "/openai/v1?"),
    ("azure-anthropic", "https://contoso.services.ai.azure.com/anthropic?"),
    ("azure-anthropic", "https://contoso.services.ai.azure.com/anthropic#x"),
])
def test_an_endpoint_with_an_empty_query_or_a_fragment_is_refused(client_type, endpoint):
    """A bare ``?`` (no query after it) or a ``#``: the request's path was appended after it (into the query,
    or into a fragment that is never sent)."""
    with pytest.raises(ConfigError) as info:
        resolve("d", client_type, endpoint, KEY, environ={})
    assert "base_url takes no query string" in str(info.value)


@pytest.mark.parametrize("name", ["..", ".", "%2e%2E", "%2E"])
def test_a_deployment_in_the_endpoint_path_that_is_a_dot_segment_is_refused(name):
    """``.../openai/deployments/..`` would send the request to ``/openai/chat/completions``: another resource."""
    with pytest.raises(ConfigError) as info:
        resolve("d", "azure", RESOURCE + "/openai/deployments/" + name, KEY, environ={})
    assert str(info.value) == ("azure: the deployment {!r} in base_url is a dot segment: the request would reach "
                               "another resource; it was not sent".format(name))


def test_a_token_callable_is_refused_where_it_is_not_taken():
    with pytest.raises(ConfigError, match="token callable is taken by azure, azure-responses"):
        resolve("gpt-5.5", api_key=lambda: "t", environ={})


# -- the streams Azure sends ---------------------------------------------------------------------


def parse(module, data):
    reference = None
    for chunks in splits(data, samples=6):
        events = run_parser(module.parse_stream, chunks, "azure", tool_id_prefix="call_t_")
        check_stream(events)
        if reference is None:
            reference = strip_ids(events)
        assert strip_ids(events) == reference
    return events


def test_content_filter_chunks_and_annotations_are_skipped():
    events = parse(openai_chat, fixture("chat_content_filter.sse"))
    assert summarize(events) == {
        "text": "Paris is the capital of France.", "thinking": "", "tool_calls": [], "finish_reason": "stop",
        "usage": {"cached_tokens": 0, "prompt_tokens": 21, "thoughts_tokens": 64, "response_tokens": 8}}
    assert [e["event_type"] for e in events] == ["start", "delta", "delta", "delta", "stop"]


def test_a_completion_stopped_by_the_asynchronous_filter():
    events = parse(openai_chat, fixture("chat_filtered.sse"))
    assert summarize(events)["text"] == "Hey Jude,"
    assert events[-1]["finish_reason"] == "unknown"


def test_tool_call_fragments_around_annotations():
    events = parse(openai_chat, fixture("chat_tool_call.sse"))
    assert summarize(events)["tool_calls"] == [{"name": "get_weather", "id": "call_az7", "arguments": {"city": "Paris"}}]
    assert events[-1]["finish_reason"] == "tool_call"
    assert events[-1]["usage_metadata"] == {"cached_tokens": 64, "prompt_tokens": 16, "thoughts_tokens": 0,
                                            "response_tokens": 18}


def test_responses_with_an_annotation_event():
    events = parse(openai_responses, fixture("responses_annotation_tool_call.sse"))
    assert summarize(events) == {
        "text": "Paris: 18 °C.", "thinking": "",
        "tool_calls": [{"name": "get_weather", "id": "call_az1", "arguments": {"city": "Paris"}}],
        "finish_reason": "tool_call",
        "usage": {"cached_tokens": 0, "prompt_tokens": 40, "thoughts_tokens": 12, "response_tokens": 18}}
    thinking = collect(events)["content_items"][0]
    assert thinking["fidelity"]["encrypted_content"] == "gAAAAazureEncrypted=="


# -- end to end over a local server ----------------------------------------------------------------


def sse_answer(data, parts=3):
    """The recording in ``parts`` pieces cut at odd places (not at event boundaries)."""
    size = len(data) // parts + 7
    return Answer([data[i:i + size] for i in range(0, len(data), size)])


@pytest.mark.parametrize("path_kind", ["deployments", "v1"])
@pytest.mark.parametrize("credential", ["key", "entra"])
def test_chat_end_to_end_stateful_tool_round_trip(path_kind, credential):
    issued = []

    def entra():
        issued.append("entra-{}".format(len(issued) + 1))
        return issued[-1]

    with SSEServer() as server:
        server.answers.extend([sse_answer(fixture("chat_tool_call.sse")), sse_answer(fixture("chat_content_filter.sse"))])
        base = server.url + ("/openai/v1" if path_kind == "v1" else "")
        client = AutoLLMClient("my-gpt5", api_key=KEY if credential == "key" else entra, base_url=base,
                               client_type="azure")
        first = list(client.streaming_response_stateful(USER[0], {"tools": TOOLS}))
        call = [i for e in first for i in e["content_items"] if i["type"] == "tool_call"][0]
        result = {"role": "user", "content_items": [
            {"type": "tool_result", "tool_call_id": call["tool_call_id"], "text": "18 °C"}]}
        second = list(client.streaming_response_stateful(result, {"tools": TOOLS}))
    assert summarize(second)["text"] == "Paris is the capital of France."
    assert len(client.get_history()) == 4
    paths = [r["path"] for r in server.requests]
    if path_kind == "v1":
        assert paths == ["/openai/v1/chat/completions"] * 2
    else:
        assert paths == ["/openai/deployments/my-gpt5/chat/completions?api-version=2024-10-21"] * 2
    for n, request in enumerate(server.requests):
        headers = {k.lower(): v for k, v in request["headers"].items()}
        if credential == "key":
            assert headers["api-key"] == KEY and "authorization" not in headers
        else:
            assert headers["authorization"] == "Bearer entra-{}".format(n + 1) and "api-key" not in headers
        assert request["body"]["model"] == "my-gpt5"
    messages = server.requests[1]["body"]["messages"]
    assert messages[1]["tool_calls"][0]["id"] == "call_az7"
    assert messages[2] == {"role": "tool", "tool_call_id": "call_az7", "content": "18 °C"}


@pytest.mark.parametrize("credential", ["key", "entra"])
def test_responses_end_to_end_stateless(credential):
    with SSEServer() as server:
        server.answers.append(sse_answer(fixture("responses_annotation_tool_call.sse"), 5))
        client = AutoLLMClient("gpt-5-mini", api_key=KEY if credential == "key" else (lambda: "entra-r"),
                               base_url=server.url, client_type="azure-responses")
        events = list(client.streaming_response(USER, {"tools": TOOLS}))
    assert summarize(events)["text"] == "Paris: 18 °C."
    (request,) = server.requests
    assert request["path"] == "/openai/v1/responses"
    headers = {k.lower(): v for k, v in request["headers"].items()}
    assert (headers.get("api-key"), headers.get("authorization")) == (
        (KEY, None) if credential == "key" else (None, "Bearer entra-r"))


def test_a_retry_asks_the_token_provider_again():
    issued = []

    def entra():
        issued.append("entra-{}".format(len(issued) + 1))
        return issued[-1]

    throttled = Answer([json.dumps({"error": {"code": "429", "message": "Requests to the ChatCompletions_Create "
                                               "Operation have exceeded call rate limit."}}).encode()],
                       status=429, headers={"Content-Type": "application/json", "Retry-After": "0"})
    with SSEServer() as server:
        server.answers.extend([throttled, sse_answer(fixture("chat_content_filter.sse"))])
        client = AutoLLMClient("my-gpt5", api_key=entra, base_url=server.url, client_type="azure")
        events = list(client.streaming_response(USER))
    assert summarize(events)["finish_reason"] == "stop"
    assert [r["headers"].get("Authorization") for r in server.requests] == ["Bearer entra-1", "Bearer entra-2"]


def test_a_filtered_prompt_is_an_upstream_error_not_retried():
    filtered = {"error": {"message": "The response was filtered due to the prompt triggering Azure OpenAI's "
                                     "content management policy.", "type": None, "param": "prompt",
                          "code": "content_filter", "status": 400,
                          "innererror": {"code": "ResponsibleAIPolicyViolation", "content_filter_result": {
                              "hate": {"filtered": True, "severity": "high"}}}}}
    with SSEServer() as server:
        server.answers.append(Answer([json.dumps(filtered).encode()], status=400,
                                     headers={"Content-Type": "application/json"}))
        client = AutoLLMClient("my-gpt5", api_key=KEY, base_url=server.url, client_type="azure")
        with pytest.raises(UpstreamError) as info:
            list(client.streaming_response(USER))
    assert (info.value.status, info.value.code, info.value.retryable) == (400, "content_filter", False)
    assert len(server.requests) == 1 and KEY not in str(info.value)


def test_a_rejected_key_is_an_authentication_error_without_the_key():
    denied = {"error": {"code": "401", "message": "Access denied due to invalid subscription key " + KEY}}
    with SSEServer() as server:
        server.answers.append(Answer([json.dumps(denied).encode()], status=401,
                                     headers={"Content-Type": "application/json"}))
        client = AutoLLMClient("my-gpt5", api_key=KEY, base_url=server.url, client_type="azure")
        with pytest.raises(AuthenticationError) as info:
            list(client.streaming_response(USER))
    assert KEY not in str(info.value) and "***" in str(info.value)


def test_retries_stop_at_max_retries():
    busy = lambda: Answer([b'{"error": {"code": "429", "message": "slow down"}}'], status=429,  # noqa: E731
                          headers={"Content-Type": "application/json", "Retry-After": "0"})
    with SSEServer() as server:
        server.answers.extend([busy(), busy()])
        client = AutoLLMClient("my-gpt5", api_key=KEY, base_url=server.url, client_type="azure", max_retries=1)
        with pytest.raises(RateLimitError):
            list(client.streaming_response(USER))
    assert len(server.requests) == 2


def test_the_responses_record_shares_the_azure_credentials():
    assert hosts.client_type("azure-responses").host.encode == azure.HOST.encode
    assert hosts.client_type("azure-responses").protocol().parse_stream is openai_responses.parse_stream
    assert hosts.client_type("azure").protocol().parse_stream is openai_chat.parse_stream


@pytest.mark.parametrize("client_type, suffix", [("azure", ""), ("azure-responses", "/openai/v1"),
                                                 ("azure", "/openai/deployments/d1")])
def test_list_models_asks_the_v1_api(client_type, suffix):
    listing = {"object": "list", "data": [{"id": "gpt-5-mini", "object": "model"}, {"id": "o4-mini", "object": "model"}]}
    with SSEServer() as server:
        server.answers.append(Answer([json.dumps(listing).encode()], headers={"Content-Type": "application/json"}))
        client = AutoLLMClient("d1", api_key=lambda: "entra-m", base_url=server.url + suffix, client_type=client_type)
        assert client.list_models() == ["gpt-5-mini", "o4-mini"]
    (request,) = server.requests
    assert request["path"] == "/openai/v1/models" and request["headers"]["Authorization"] == "Bearer entra-m"


@pytest.mark.parametrize("suffix, path", [
    ("", "/openai/deployments/my-gpt5/chat/completions?api-version=2025-04-01-preview"),
    ("/openai/v1/", "/openai/v1/chat/completions"),
])
def test_endpoint_key_and_version_from_the_environment_end_to_end(monkeypatch, suffix, path):
    with SSEServer() as server:
        monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", server.url + suffix)
        monkeypatch.setenv("AZURE_OPENAI_API_KEY", KEY)
        monkeypatch.setenv("OPENAI_API_VERSION", "2025-04-01-preview")
        server.answers.append(sse_answer(fixture("chat_content_filter.sse"), 7))
        events = list(AutoLLMClient("my-gpt5", client_type="azure").streaming_response(USER, {"max_tokens": 30}))
    assert summarize(events)["text"] == "Paris is the capital of France."
    (request,) = server.requests
    assert request["path"] == path and request["headers"]["api-key"] == KEY
    assert request["body"]["max_completion_tokens"] == 30 and "max_tokens" not in request["body"]


def test_an_error_object_inside_the_stream_is_raised_with_its_code():
    data = fixture("chat_filtered.sse").split(b"data: {\"id\":\"\",\"object\":\"\"", 2)
    stream = data[0] + b"data: {\"id\":\"\",\"object\":\"\"" + data[1] + (
        b'data: {"error": {"message": "The response was filtered", "code": "content_filter", "status": 400}}\n\n')
    with pytest.raises(UpstreamError) as info:
        run_parser(openai_chat.parse_stream, [stream], "azure")
    assert (info.value.code, info.value.retryable) == ("content_filter", False)
