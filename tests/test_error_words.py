"""Issue 24 C1 and C2 at run time: status_code, a TransportError's url, the /v1 hint of a 404, the last 429's words."""

import json
import pickle

import pytest

from agenthub import AutoLLMClient
from agenthub.errors import ConfigError, RateLimitError, TransportError, UpstreamError
from sse_server import Answer, SSEServer

USER = {"role": "user", "content_items": [{"type": "text", "text": "hi"}]}
JSON = {"Content-Type": "application/json"}


def busy(retry_after=None):
    headers = dict(JSON)
    if retry_after is not None:
        headers["Retry-After"] = retry_after
    return Answer([json.dumps({"error": {"message": "Too many requests", "type": "rate_limit_error"}}).encode()],
                  status=429, headers=headers)


def test_status_code_is_the_status_and_survives_pickling():
    with SSEServer() as server:
        server.answers.append(Answer([b'{"error": {"message": "Not Found", "type": "not_found"}}'], status=404,
                                     headers=JSON))
        client = AutoLLMClient("m", client_type="openai-chat", base_url=server.url + "/v1", max_retries=0)
        with pytest.raises(UpstreamError) as info:
            list(client.streaming_response([USER]))
    error = info.value
    assert (error.status, error.status_code) == (404, 404)
    assert pickle.loads(pickle.dumps(error)).status_code == 404
    assert error.hint is None  # the base URL has its /v1: no hint
    assert ConfigError("x").status_code is None


def test_a_transport_error_names_the_url_it_went_to():
    client = AutoLLMClient("m", client_type="openai-chat", base_url="http://127.0.0.1:9/v1", max_retries=0,
                           timeout=(2, 2))
    with pytest.raises(TransportError) as info:
        list(client.streaming_response([USER]))
    assert info.value.url == "http://127.0.0.1:9/v1/chat/completions"
    assert info.value.status_code is None


@pytest.mark.parametrize("base, hinted", [("", True), ("/v1", False), ("/api/v1", False), ("/openai/v1beta", False),
                                          ("/api", False)])
def test_the_missing_v1_hint(base, hinted):
    with SSEServer() as server:
        server.answers.append(Answer([b'{"error": {"message": "Not Found"}}'], status=404, headers=JSON))
        client = AutoLLMClient("m", client_type="openai-chat", base_url=server.url + base, max_retries=0)
        with pytest.raises(UpstreamError) as info:
            list(client.streaming_response([USER]))
    if hinted:
        assert info.value.hint == ("the base_url has no /v1 (OpenAI-compatible servers answer at /v1/chat/completions "
                                   "and /v1/responses): try base_url='{}/v1'".format(server.url))
        assert info.value.hint in str(info.value)
    else:
        assert info.value.hint is None


@pytest.mark.parametrize("retries, answers, words", [
    (0, [busy("2")], "rate limited after 1 attempt: the server asks to wait 2 s and retry; "
                     "AutoLLMClient(..., max_retries=N) retries more by itself (now 0)"),
    (1, [busy("0"), busy("0")], "rate limited after 2 attempts: the server asks to wait 0 s and retry; "
                                "AutoLLMClient(..., max_retries=N) retries more by itself (now 1)"),
    (2, [busy("120")], "rate limited after 1 attempt: the server asks to wait 120 s (longer than the 60 s agenthub "
                       "waits by itself) and retry; AutoLLMClient(..., max_retries=N) retries more by itself (now 2)"),
    (0, [busy()], "rate limited after 1 attempt: the server did not say when: wait a while and retry; "
                  "AutoLLMClient(..., max_retries=N) retries more by itself (now 0)"),
])
def test_the_last_429_says_when_to_retry_and_how_to_retry_more(retries, answers, words):
    with SSEServer() as server:
        server.answers.extend(answers)
        client = AutoLLMClient("m", client_type="openai-chat", base_url=server.url + "/v1", max_retries=retries)
        with pytest.raises(RateLimitError) as info:
            list(client.streaming_response([USER]))
        assert len(server.requests) == len(answers)
    assert info.value.hint == words and words in str(info.value)
    assert info.value.status_code == 429
