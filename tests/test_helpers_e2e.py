"""The one-call helpers end to end, per protocol, over a local server on 127.0.0.1:
``response()`` / ``response_stateful()`` (the collected turn), ``embed()`` (vectors in input
order) and ``list_models()`` (asked live, every page), with the new config keys on the wire."""

import json
import os

import pytest

from agenthub import AutoLLMClient
from agenthub.errors import (AuthenticationError, ConfigError, StreamProtocolError, UnsupportedOperationError,
                             UnsupportedParameterError)
from sse_server import Answer, SSEServer

USER = {"role": "user", "content_items": [{"type": "text", "text": "Hi"}]}
JSON = {"Content-Type": "application/json"}


def sse(*events, done=False, named=False):
    out = ""
    for event in events:
        if named:
            out += "event: {}\n".format(event["type"])
        out += "data: " + json.dumps(event) + "\n\n"
    return (out + ("data: [DONE]\n\n" if done else "")).encode("utf-8")


def document(payload, status=200, headers=None):
    return Answer([json.dumps(payload).encode("utf-8")], status=status, headers=dict(JSON, **(headers or {})))


def without_time(message):
    return {k: v for k, v in message.items() if k != "created_at"}


@pytest.fixture
def server():
    with SSEServer() as s:
        yield s


HELLO_MESSAGE = {"role": "assistant", "content_items": [{"type": "text", "text": "Hello"}], "finish_reason": "stop"}

#: per protocol: (client kwargs, a streamed "Hello" answer, its usage, the path it is posted to)
STREAMS = {
    "openai-chat": (
        {"client_type": "openai-chat", "base_url_path": "/v1"},
        sse({"choices": [{"index": 0, "delta": {"content": "Hel"}, "finish_reason": None}]},
            {"choices": [{"index": 0, "delta": {"content": "lo"}, "finish_reason": "stop"}]},
            {"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 2}}, done=True),
        {"cached_tokens": None, "prompt_tokens": 3, "thoughts_tokens": None, "response_tokens": 2},
        "/v1/chat/completions"),
    "openai-responses": (
        {"client_type": "openai-responses", "base_url_path": "/v1"},
        sse({"type": "response.output_text.delta", "output_index": 0, "content_index": 0, "delta": "Hel"},
            {"type": "response.output_text.delta", "output_index": 0, "content_index": 0, "delta": "lo"},
            {"type": "response.completed", "response": {"status": "completed", "output": [],
                                                        "usage": {"input_tokens": 3, "output_tokens": 2}}}),
        {"cached_tokens": None, "prompt_tokens": 3, "thoughts_tokens": None, "response_tokens": 2},
        "/v1/responses"),
    "anthropic": (
        {"client_type": "anthropic", "base_url_path": ""},
        sse({"type": "message_start", "message": {"usage": {"input_tokens": 3, "output_tokens": 0}}},
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hello"}},
            {"type": "content_block_stop", "index": 0},
            {"type": "message_delta", "delta": {"stop_reason": "stop_sequence"}, "usage": {"output_tokens": 2}},
            {"type": "message_stop"}, named=True),
        {"cached_tokens": None, "prompt_tokens": 3, "thoughts_tokens": None, "response_tokens": 2},
        "/v1/messages"),
    "gemini": (
        {"client_type": "gemini", "base_url_path": ""},
        sse({"candidates": [{"content": {"role": "model", "parts": [{"text": "Hello"}]}, "finishReason": "STOP"}],
             "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 2}}),
        {"cached_tokens": None, "prompt_tokens": 3, "thoughts_tokens": None, "response_tokens": 2},
        "/v1beta/models/m:streamGenerateContent?alt=sse"),
}

#: per protocol: a config with the new keys the protocol takes, and where they must show in the body
CONFIGS = {
    "openai-chat": ({"top_p": 0.5, "seed": 3, "stop": ["END"], "response_format": {"type": "json_object"}},
                    {"top_p": 0.5, "seed": 3, "stop": ["END"], "response_format": {"type": "json_object"}}),
    "openai-responses": ({"top_p": 0.5, "response_format": {"type": "json_object"}},
                         {"top_p": 0.5, "text": {"format": {"type": "json_object"}}}),
    "anthropic": ({"top_p": 0.5, "stop": ["END"], "max_tokens": 10},
                  {"top_p": 0.5, "stop_sequences": ["END"], "max_tokens": 10}),
    "gemini": ({"top_p": 0.5, "seed": 3, "stop": ["END"], "response_format": {"type": "json_object"}},
               {"generationConfig": {"topP": 0.5, "seed": 3, "stopSequences": ["END"],
                                     "responseMimeType": "application/json", "topK": 2}}),
}


def client_for(server, protocol, model="m", **kwargs):
    options, _, _, _ = STREAMS[protocol]
    return AutoLLMClient(model, client_type=options["client_type"], base_url=server.url + options["base_url_path"],
                         api_key=kwargs.pop("api_key", "sk-local-0001"), **kwargs)


@pytest.mark.parametrize("protocol", sorted(STREAMS))
def test_response_returns_the_collected_message_with_the_new_keys_on_the_wire(server, protocol):
    _, stream, usage, path = STREAMS[protocol]
    server.answers.append(Answer([stream]))
    client = client_for(server, protocol)
    config, wire = CONFIGS[protocol]
    extra_body = {"generationConfig": {"topK": 2}} if protocol == "gemini" else {"x_extra": {"deep": True}}
    message = client.response([USER], dict(config, extra_body=extra_body, extra_headers={"X-Tenant": "t-42"}))
    assert without_time(message) == dict(HELLO_MESSAGE, usage_metadata=usage)
    assert isinstance(message["created_at"], int)
    (request,) = server.requests
    assert request["path"] == path
    body = request["body"]
    for key, value in wire.items():
        assert body[key] == value, key
    if protocol != "gemini":
        assert body["x_extra"] == {"deep": True}  # extra_body merged last
    assert request["headers"]["X-Tenant"] == "t-42"  # extra_headers on this request


@pytest.mark.parametrize("protocol", sorted(STREAMS))
def test_response_stateful_grows_the_history(server, protocol):
    _, stream, _, _ = STREAMS[protocol]
    server.answers.extend([Answer([stream]), Answer([stream])])
    client = client_for(server, protocol)
    first = client.response_stateful(USER)
    assert first["content_items"] == [{"type": "text", "text": "Hello"}]
    second = client.response_stateful({"role": "user", "content_items": [{"type": "text", "text": "Again"}]})
    history = client.get_history()
    assert [m["role"] for m in history] == ["user", "assistant", "user", "assistant"]
    assert history[1] == first and history[3] == second
    assert len(server.requests) == 2
    assert "Hello" in json.dumps(server.requests[1]["body"])  # the first answer went back as history


@pytest.mark.parametrize("protocol", sorted(STREAMS))
def test_response_refuses_before_sending(server, protocol):
    client = client_for(server, protocol)
    refusals = {"openai-chat": {"stop": list("abcde")}, "openai-responses": {"stop": ["END"]},
                "anthropic": {"seed": 1}, "gemini": {"stop": list("abcdef")}}
    with pytest.raises(UnsupportedParameterError):
        client.response([USER], refusals[protocol])
    with pytest.raises(ConfigError):
        client.response([USER], {"response_format": {"type": "json_schema", "schema": {}}})  # no name
    assert server.requests == []


def test_extra_header_values_never_show_in_errors_or_traces(server, tmp_path, monkeypatch):
    secret = "tenant-secret-7f3a9c"
    server.answers.append(document({"error": {"message": "bad tenant " + secret, "type": "invalid_request_error"}},
                                   status=401))
    client = client_for(server, "openai-chat", max_retries=0)
    with pytest.raises(AuthenticationError) as info:
        client.response([USER], {"extra_headers": {"X-Tenant-Token": "Bearer " + secret}})
    assert secret not in str(info.value) and secret not in repr(info.value.message)
    assert server.requests[0]["headers"]["X-Tenant-Token"] == "Bearer " + secret  # it was sent
    monkeypatch.setenv("AGENTHUB_CACHE_DIR", str(tmp_path))
    server.answers.append(Answer([STREAMS["openai-chat"][1]]))
    client.response([USER], {"extra_headers": {"X-Tenant-Token": secret}, "trace_id": "run1"})
    written = "".join(open(os.path.join(tmp_path, name), encoding="utf-8").read() for name in os.listdir(tmp_path))
    assert "X-Tenant-Token" in written and secret not in written


# -- embed ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("client_type", ["openai-chat", "openai-responses"])
def test_embed_openai_compatible_vectors_in_input_order(server, client_type):
    server.answers.append(document({"object": "list", "data": [
        {"object": "embedding", "index": 1, "embedding": [0.5, 0.25]},
        {"object": "embedding", "index": 0, "embedding": [1.0, -1.0]}], "usage": {"prompt_tokens": 4}}))
    client = AutoLLMClient("text-embedding-3-small", client_type=client_type, base_url=server.url + "/v1",
                           api_key="sk-local-0001")
    assert client.embed(["first", "second"], {"embedding_config": {"dimensions": 2}}) == [[1.0, -1.0], [0.5, 0.25]]
    (request,) = server.requests
    assert request["path"] == "/v1/embeddings"
    assert request["body"] == {"model": "text-embedding-3-small", "input": ["first", "second"],
                               "encoding_format": "float", "dimensions": 2}
    assert client.embed([]) == [] and len(server.requests) == 1  # nothing to embed: nothing sent


def test_embed_gemini_batch(server):
    server.answers.append(document({"embeddings": [{"values": [0.1, 0.2]}, {"values": [0.3, 0.4]}]}))
    client = AutoLLMClient("gemini-embedding-001", base_url=server.url, api_key="gm-local-0001")
    assert client.embed(["a", "b"]) == [[0.1, 0.2], [0.3, 0.4]]
    (request,) = server.requests
    assert request["path"] == "/v1beta/models/gemini-embedding-001:batchEmbedContents"
    assert request["body"] == {"requests": [
        {"model": "models/gemini-embedding-001", "content": {"parts": [{"text": "a"}]}},
        {"model": "models/gemini-embedding-001", "content": {"parts": [{"text": "b"}]}}]}


def test_embed_count_mismatch_is_a_protocol_error(server):
    server.answers.append(document({"data": [{"index": 0, "embedding": [1.0]}]}))
    client = AutoLLMClient("text-embedding-3-small", base_url=server.url + "/v1", api_key="sk-local-0001")
    with pytest.raises(StreamProtocolError, match="2 texts were sent for embedding and 1 vectors came back"):
        client.embed(["a", "b"])


def test_embed_needs_an_embedding_model_and_strings(server):
    with pytest.raises(UnsupportedOperationError) as info:
        client_for(server, "anthropic", "claude-sonnet-4-6").embed(["a"])
    assert (info.value.client, info.value.operation) == ("anthropic", "embed")
    with pytest.raises(ConfigError, match="embed takes a list of strings"):
        AutoLLMClient("text-embedding-3-small", base_url=server.url + "/v1", api_key="k").embed("just one")
    assert server.requests == []


# -- list_models ------------------------------------------------------------------------------------


@pytest.mark.parametrize("client_type", ["openai-chat", "openai-responses"])
def test_list_models_openai_compatible(server, client_type):
    server.answers.append(document({"object": "list", "data": [{"id": "qwen3:8b", "object": "model"},
                                                               {"id": "gpt-oss:20b", "object": "model"}]}))
    client = AutoLLMClient("any", client_type=client_type, base_url=server.url + "/v1", api_key="sk-local-0001")
    assert client.list_models() == ["qwen3:8b", "gpt-oss:20b"]
    (request,) = server.requests
    assert request["path"] == "/v1/models" and request["body"] is None
    assert request["headers"]["Authorization"] == "Bearer sk-local-0001"
    assert request["headers"]["Accept"] == "application/json" and "Content-Type" not in request["headers"]


def test_list_models_openai_compatible_server_that_pages(server):
    server.answers.extend([
        document({"object": "list", "data": [{"id": "a"}, {"id": "b"}], "has_more": True}),
        document({"object": "list", "data": [{"id": "c"}], "has_more": False}),
    ])
    client = AutoLLMClient("any", client_type="openai-chat", base_url=server.url + "/v1", api_key="k-local-0001")
    assert client.list_models() == ["a", "b", "c"]
    assert [r["path"] for r in server.requests] == ["/v1/models", "/v1/models?after=b"]


def test_list_models_anthropic_pages_with_after_id(server):
    server.answers.extend([
        document({"data": [{"type": "model", "id": "claude-opus-4-8"}, {"type": "model", "id": "claude-sonnet-4-6"}],
                  "has_more": True, "first_id": "claude-opus-4-8", "last_id": "claude-sonnet-4-6"}),
        document({"data": [{"type": "model", "id": "claude-haiku-4-5"}], "has_more": False,
                  "first_id": "claude-haiku-4-5", "last_id": "claude-haiku-4-5"}),
    ])
    client = client_for(server, "anthropic", "claude-sonnet-4-6", api_key="sk-ant-local-0001")
    assert client.list_models() == ["claude-opus-4-8", "claude-sonnet-4-6", "claude-haiku-4-5"]
    assert [r["path"] for r in server.requests] == ["/v1/models?limit=1000",
                                                    "/v1/models?limit=1000&after_id=claude-sonnet-4-6"]
    headers = server.requests[0]["headers"]
    assert headers["x-api-key"] == "sk-ant-local-0001" and headers["anthropic-version"] == "2023-06-01"
    assert "Authorization" not in headers


def test_list_models_gemini_pages_with_page_tokens_and_drops_the_prefix(server):
    server.answers.extend([
        document({"models": [{"name": "models/gemini-3.5-flash", "displayName": "Gemini 3.5 Flash"}],
                  "nextPageToken": "page 2/="}),
        document({"models": [{"name": "models/gemini-embedding-001"}, {"name": "tunedModels/mine"}]}),
    ])
    client = client_for(server, "gemini", "gemini-3.5-flash", api_key="gm-local-0001")
    assert client.list_models() == ["gemini-3.5-flash", "gemini-embedding-001", "tunedModels/mine"]
    assert [r["path"] for r in server.requests] == ["/v1beta/models?pageSize=1000",
                                                    "/v1beta/models?pageSize=1000&pageToken=page%202%2F%3D"]
    assert server.requests[0]["headers"]["x-goog-api-key"] == "gm-local-0001"


def test_list_models_retries_and_typed_errors(server):
    server.answers.extend([
        document({"error": {"message": "overloaded", "type": "overloaded_error"}}, status=503,
                 headers={"Retry-After": "0"}),
        document({"data": [{"id": "m1"}]}),
    ])
    client = AutoLLMClient("any", client_type="openai-chat", base_url=server.url + "/v1", api_key="k-local-0001")
    assert client.list_models() == ["m1"] and len(server.requests) == 2
    server.answers.append(document({"error": {"message": "bad key k-local-0001", "type": "auth"}}, status=401))
    with pytest.raises(AuthenticationError) as info:
        client.list_models()
    assert "k-local-0001" not in str(info.value)
    server.answers.append(document({"models": "not a list"}))
    with pytest.raises(StreamProtocolError, match="the model list has no 'data' list"):
        client.list_models()


def test_list_models_a_server_that_pages_forever_is_cut_off(server, monkeypatch):
    from agenthub import client as client_module

    monkeypatch.setattr(client_module, "MAX_MODEL_PAGES", 3)
    for n in range(3):
        server.answers.append(document({"data": [{"id": "m%d" % n}], "has_more": True}))
    client = AutoLLMClient("any", client_type="openai-chat", base_url=server.url + "/v1", api_key="k-local-0001")
    assert client.list_models() == ["m0", "m1", "m2"] and len(server.requests) == 3


def test_module_list_models_is_still_the_registry():
    import agenthub

    rows = agenthub.list_models()
    assert rows and all(isinstance(row, dict) and "client_type" in row for row in rows)


def test_extra_header_values_are_scrubbed_from_recordings(server, tmp_path):
    from agenthub.testing import cassette_session

    secret = "hdr-secret-91c2e4"
    stream = sse({"choices": [{"index": 0, "delta": {"content": "echo " + secret}, "finish_reason": "stop"}]},
                 done=True)
    server.answers.append(Answer([stream]))
    folder = str(tmp_path / "cassette")
    client = client_for(server, "openai-chat", session=cassette_session(folder, record=True))
    message = client.response([USER], {"extra_headers": {"X-Tenant-Token": secret}})
    assert message["content_items"] == [{"type": "text", "text": "echo " + secret}]
    assert server.requests[0]["headers"]["X-Tenant-Token"] == secret
    written = ""
    for name in sorted(os.listdir(folder)):
        with open(os.path.join(folder, name), "rb") as handle:
            written += handle.read().decode("utf-8")
    assert "echo " in written and secret not in written
