"""A base URL's query string (a gateway's ``?key=``) stays the query of every request: the request's path goes
before it, a path's own query (Gemini's ``?alt=sse``) beside it.  Before, the path was appended to the query
(``/v1?key=K/chat/completions``): the gateway saw the wrong path and a mangled key."""

import json

import pytest

from agenthub import AutoLLMClient, ConfigError, UpstreamError
from agenthub.hosts.trust import join_url
from agenthub.jobs.backends._wire import join

from faultserver import FaultServer, send, status

USER = [{"role": "user", "content_items": [{"type": "text", "text": "hi"}]}]


def _refuse(request):
    body = json.dumps({"error": {"message": "no", "type": "invalid_request_error"}}).encode()
    return [status(400, {"Content-Type": "application/json"}, framing="length"), send(body)]


@pytest.mark.parametrize("client_type, path", [
    ("openai-chat", "/v1/chat/completions?key=K1&x=2"),
    ("openai-responses", "/v1/responses?key=K1&x=2"),
    ("anthropic", "/v1/v1/messages?key=K1&x=2"),
    ("gemini", "/v1/models/m:streamGenerateContent?alt=sse&key=K1&x=2"),
    ("agenthub", "/v1/stream?key=K1&x=2"),
])
def test_the_base_urls_query_follows_the_requests_path(client_type, path):
    with FaultServer(default=_refuse) as server:
        client = AutoLLMClient("m", api_key="sk-header-key-0123456789", client_type=client_type, max_retries=0,
                               base_url=server.url + "/v1/?key=K1&x=2")
        with pytest.raises(UpstreamError):
            list(client.streaming_response(USER))
        assert [r.path for r in server.requests] == [path]


def test_join_url():
    assert join_url("https://gw.example/v1", "/models") == "https://gw.example/v1/models"
    assert join_url("https://gw.example/v1/?key=K", "/models") == "https://gw.example/v1/models?key=K"
    assert join_url("https://gw.example/v1?key=K", "/batches?limit=100") == \
        "https://gw.example/v1/batches?limit=100&key=K"
    assert join_url("https://gw.example/v1?", "/models") == "https://gw.example/v1/models"
    assert join("https://gw.example/?key=K", "/v1/messages/batches?limit=100&after_id=b") == \
        "https://gw.example/v1/messages/batches?limit=100&after_id=b&key=K"


@pytest.mark.parametrize("client_type", ["openai-chat", "anthropic", "gemini", "agenthub"])
def test_a_base_url_with_a_fragment_is_refused_before_anything_is_sent(client_type):
    with pytest.raises(ConfigError) as caught:
        AutoLLMClient("m", api_key="sk-header-key-0123456789", client_type=client_type,
                      base_url="https://gw.example/v1#frag")
    assert str(caught.value) == ("base_url takes no fragment (#...): the request's path is appended to it "
                                 "(got 'https://gw.example/v1#frag')")
