"""OpenAI-compatible embeddings: request goldens, response parsing, end to end through AutoLLMClient."""

import base64
import json
import struct

import pytest

from agenthub.errors import ConfigError, EmptyResponseError, StreamProtocolError, UnsupportedParameterError, UpstreamError
from agenthub.providers._common import Endpoint
from agenthub.providers.openai_embeddings import build_request, parse_response
from agenthub.stream import StreamEnd, check_stream, collect, drive
from agenthub.validate import check_config
from conftest import sent

CLIENT = "openai-chat"


def endpoint(base_url="https://api.openai.com/v1", key="sk-test", headers=None):
    return Endpoint(CLIENT, base_url, key, headers, {"embeddings": True})


def message(*texts):
    return {"role": "user", "content_items": [{"type": "text", "text": t} for t in texts]}


def request(messages, config=None, **kwargs):
    where = endpoint(**kwargs)
    return sent(build_request(where, "text-embedding-3-small", messages, check_config(config)), where)


def test_request_golden():
    req = request([message("Hello", " world"), message(), message("Bonjour")], {"embedding_config": {"dimensions": 256}})
    assert req.method == "POST"
    assert req.url == "https://api.openai.com/v1/embeddings"
    assert req.stream is False
    assert dict(req.headers) == {"Content-Type": "application/json", "Accept": "application/json",
                                 "Authorization": "Bearer sk-test"}
    assert req.body == {"model": "text-embedding-3-small", "input": ["Hello world", " ", "Bonjour"],
                        "encoding_format": "float", "dimensions": 256}


def test_request_without_dimensions_key_or_with_extra_headers():
    keyless = endpoint("http://127.0.0.1:8080/v1/", key=None, headers={"X-A": "b"})
    req = sent(build_request(keyless, "bge-m3", [message("x")], {}), keyless)
    assert req.url == "http://127.0.0.1:8080/v1/embeddings"
    assert "Authorization" not in req.headers and req.headers["X-A"] == "b"
    assert req.body == {"model": "bge-m3", "input": ["x"], "encoding_format": "float"}


def test_request_rejects_non_text_items_and_generation_options():
    with pytest.raises(ConfigError) as info:
        request([message("ok"), {"role": "user", "content_items": [{"type": "image_url", "image_url": "https://x/y.png"}]}])
    assert "messages[1]" in str(info.value)
    for config, parameter in (({"tools": [{"name": "f"}]}, "tools"),
                              ({"image_config": {"image_size": "1K"}}, "image_config"),
                              ({"tts_config": [{"voice": "Kore"}]}, "tts_config"),
                              ({"system_prompt": "s"}, "system_prompt"),
                              ({"prompt_caching": "disable"}, "prompt_caching")):
        with pytest.raises(UnsupportedParameterError) as info:
            request([message("x")], config)
        assert info.value.parameter == parameter
    # options that do not apply to embeddings are not sent (and never an error for thinking_level)
    body = request([message("x")], {"thinking_level": "high", "max_tokens": 5, "temperature": 0.1,
                                    "trace_id": "t"}).body
    assert body == {"model": "text-embedding-3-small", "input": ["x"], "encoding_format": "float"}


PAYLOAD = {
    "object": "list",
    "data": [
        {"object": "embedding", "index": 1, "embedding": [0.5, -0.25]},
        {"object": "embedding", "index": 0, "embedding": [0.125, 1.0]},
    ],
    "model": "text-embedding-3-small",
    "usage": {"prompt_tokens": 7, "total_tokens": 7},
}


def test_response_golden():
    parts = list(parse_response(PAYLOAD, CLIENT))
    assert parts[:2] == [{"type": "embedding", "embedding": [0.125, 1.0]},
                         {"type": "embedding", "embedding": [0.5, -0.25]}]
    end = parts[2]
    assert isinstance(end, StreamEnd) and end.finish_reason == "stop"
    assert end.usage == {"cached_tokens": None, "prompt_tokens": 7, "thoughts_tokens": None, "response_tokens": None}
    events = list(drive(parse_response(PAYLOAD, CLIENT), CLIENT))
    check_stream(events)
    assert [e["event_type"] for e in events] == ["start", "delta", "delta", "stop"]
    assert collect(events)["content_items"] == parts[:2]


def test_response_base64_vectors_and_missing_usage():
    raw = base64.b64encode(struct.pack("<3f", 0.5, -2.0, 0.25)).decode("ascii")
    parts = list(parse_response({"data": [{"index": 0, "embedding": raw}]}, CLIENT))
    assert parts[0] == {"type": "embedding", "embedding": [0.5, -2.0, 0.25]}
    assert parts[1].usage == {"cached_tokens": None, "prompt_tokens": None, "thoughts_tokens": None,
                              "response_tokens": None}


def test_response_errors():
    with pytest.raises(UpstreamError) as info:
        list(parse_response({"error": {"message": "bad input", "type": "invalid_request_error"}}, CLIENT))
    assert info.value.status == 400 and info.value.message == "bad input"
    for bad in ([], {"data": None}, {"data": [{"index": 0, "embedding": "@@@"}]},
                {"data": [{"index": 0, "embedding": base64.b64encode(b"abc").decode()}]},
                {"data": [{"index": 0, "embedding": 3}]}):
        with pytest.raises(StreamProtocolError):
            list(drive(parse_response(bad, CLIENT), CLIENT))
    with pytest.raises(EmptyResponseError):
        list(drive(parse_response({"data": [], "usage": {"prompt_tokens": 0}}, CLIENT), CLIENT))


def test_end_to_end_with_autollmclient():
    responses = pytest.importorskip("responses")
    from agenthub import AutoLLMClient

    with responses.RequestsMock() as mock:
        mock.add(responses.POST, "https://emb.example.test/v1/embeddings", json=PAYLOAD, status=200)
        client = AutoLLMClient("text-embedding-3-small", api_key="k", base_url="https://emb.example.test/v1")
        events = list(client.streaming_response([message("first"), message("second")],
                                                {"embedding_config": {"dimensions": 2}}))
        check_stream(events)
        vectors = [i["embedding"] for e in events for i in e["content_items"]]
        assert vectors == [[0.125, 1.0], [0.5, -0.25]]
        assert events[-1]["usage_metadata"]["prompt_tokens"] == 7
        sent = mock.calls[0].request
        assert json.loads(sent.body) == {"model": "text-embedding-3-small", "input": ["first", "second"],
                                         "encoding_format": "float", "dimensions": 2}
        assert sent.headers["Authorization"] == "Bearer k"


def test_end_to_end_http_error():
    responses = pytest.importorskip("responses")
    from agenthub import AutoLLMClient

    with responses.RequestsMock() as mock:
        mock.add(responses.POST, "https://emb.example.test/v1/embeddings", status=400,
                 json={"error": {"message": "dimensions too large", "type": "invalid_request_error"}})
        client = AutoLLMClient("text-embedding-3-small", api_key="k", base_url="https://emb.example.test/v1")
        with pytest.raises(UpstreamError) as info:
            list(client.streaming_response([message("x")], {"embedding_config": {"dimensions": 99999}}))
        assert info.value.status == 400 and "dimensions too large" in info.value.message
