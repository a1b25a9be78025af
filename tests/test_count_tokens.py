"""Issue 23 §2: client.count_tokens over each provider's count endpoint, against a local fake that the
official SDKs (anthropic, AnthropicVertex, openai, google-genai, botocore) drive too, so the fake speaks
the documented wire; the count request carries exactly what streaming_response sends, minus the
generation-only fields.

Endpoints: Anthropic POST /v1/messages/count_tokens -> {"input_tokens"}
(https://platform.claude.com/docs/en/build-with-claude/token-counting); Claude on Vertex AI
.../publishers/anthropic/models/count-tokens:rawPredict with the model in the body; OpenAI
POST /v1/responses/input_tokens -> {"object": "response.input_tokens", "input_tokens"}; Gemini
POST /v1beta/models/{m}:countTokens with generateContentRequest -> {"totalTokens"}
(https://ai.google.dev/api/tokens); Vertex Gemini .../publishers/google/models/{m}:countTokens with
contents / systemInstruction / tools; Bedrock POST /model/{id}/count-tokens with
{"input": {"converse": ...}} -> {"inputTokens"} (bedrock-runtime 2023-09-30 CountTokens).
"""

import base64
import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from agenthub import AutoLLMClient, ConfigError, StreamProtocolError, UnsupportedOperationError, UpstreamError
from agenthub.budget import estimate_tokens
from sse_server import close_server, track_connections

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16
MESSAGES = [
    {"role": "user", "content_items": [{"type": "text", "text": "What is in this picture, and the weather?"},
                                       {"type": "inline_data", "mime_type": "image/png", "data": PNG}]},
    {"role": "assistant", "content_items": [{"type": "tool_call", "name": "get_weather", "arguments": {"city": "Paris"},
                                             "tool_call_id": "call_1"}]},
    {"role": "user", "content_items": [{"type": "tool_result", "text": "18 C, sunny", "tool_call_id": "call_1"}]},
]
TOOLS = [{"name": "get_weather", "description": "Current weather in a city.",
          "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}]
CONFIG = {"system_prompt": "Answer briefly.", "tools": TOOLS, "max_tokens": 300, "temperature": 0.2}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):  # noqa: N802
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = json.loads(raw) if raw else None
        path = self.path.split("?")[0]
        with self.server.lock:
            self.server.requests.append({"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()},
                                         "body": body})
        count = len(raw)  # the count answered is the size of what came: it ties the answer to the request
        if path.endswith("/v1/messages/count_tokens") or path.endswith("/models/count-tokens:rawPredict"):
            answer = {"input_tokens": count}
        elif path.endswith("/responses/input_tokens"):
            answer = {"object": "response.input_tokens", "input_tokens": count}
        elif path.endswith(":countTokens"):
            if not isinstance(body, dict) or not (("contents" in body) ^ ("generateContentRequest" in body)):
                return self._send(400, {"error": {"code": 400, "message": "contents or generateContentRequest",
                                                  "status": "INVALID_ARGUMENT"}})
            if "generateContentRequest" in body and not str(body["generateContentRequest"].get("model", "")).startswith(
                    "models/"):
                return self._send(400, {"error": {"code": 400, "message": "model is required",
                                                  "status": "INVALID_ARGUMENT"}})
            answer = {"totalTokens": count, "promptTokensDetails": [{"modality": "TEXT", "tokenCount": count}]}
        elif path.endswith("/count-tokens"):
            if not isinstance(body, dict) or "converse" not in (body.get("input") or {}):
                return self._send(400, {"message": "input.converse is required"})
            answer = {"inputTokens": count}
        else:  # a generation request: recorded, then refused (the tests read what it carried)
            return self._send(400, {"error": {"type": "invalid_request_error", "message": "recorded only"}})
        return self._send(200, answer)

    def _send(self, status, document):
        data = json.dumps(document).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class FakeCounter(object):
    def __enter__(self):
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._connections = track_connections(self.httpd)  # (ended when it closes)
        self.httpd.daemon_threads = True
        self.httpd.requests = []
        self.httpd.lock = threading.Lock()
        self.url = "http://127.0.0.1:{}".format(self.httpd.server_address[1])
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()
        return self

    @property
    def requests(self):
        return self.httpd.requests

    def __exit__(self, *exc):
        close_server(self.httpd, self._connections)
        self.thread.join(5)


@pytest.fixture
def fake():
    with FakeCounter() as server:
        yield server


def _sent_and_counted(client, server, config=CONFIG):
    """(the streaming request's body, the count request) for the same messages and config."""
    with pytest.raises(UpstreamError):
        list(client.streaming_response(MESSAGES, config))
    stream = server.requests[-1]
    count = client.count_tokens(MESSAGES, config)
    counted = server.requests[-1]
    assert count == len(json.dumps(counted["body"], ensure_ascii=False, separators=(",", ":")).encode())
    return stream, counted


# -- the official SDKs against the fake -----------------------------------------------------------


def test_the_sdks_count_against_the_fake(fake, monkeypatch):
    anthropic = pytest.importorskip("anthropic")
    openai = pytest.importorskip("openai")
    genai = pytest.importorskip("google.genai")
    botocore_session = pytest.importorskip("botocore.session")
    for name in list(os.environ):
        if name.startswith(("AWS_", "ANTHROPIC_", "OPENAI_", "GOOGLE_", "GEMINI_")):
            monkeypatch.delenv(name)

    got = anthropic.Anthropic(api_key="sk-ant-test", base_url=fake.url, max_retries=0).messages.count_tokens(
        model="claude-sonnet-4-6", system="Answer briefly.", messages=[{"role": "user", "content": "Hi"}])
    assert fake.requests[-1]["path"] == "/v1/messages/count_tokens" and got.input_tokens > 0

    vertex = anthropic.AnthropicVertex(region="us-east5", project_id="vtx-proj-123", access_token="ya29.t",
                                       base_url=fake.url + "/v1", max_retries=0)
    got = vertex.messages.count_tokens(model="claude-sonnet-4-6", messages=[{"role": "user", "content": "Hi"}])
    assert fake.requests[-1]["path"] == (
        "/v1/projects/vtx-proj-123/locations/us-east5/publishers/anthropic/models/count-tokens:rawPredict")
    assert fake.requests[-1]["body"]["model"] == "claude-sonnet-4-6" and got.input_tokens > 0

    got = openai.OpenAI(api_key="sk-test", base_url=fake.url + "/v1", max_retries=0).responses.input_tokens.count(
        model="gpt-5.5", input="Hi", instructions="Answer briefly.")
    assert fake.requests[-1]["path"] == "/v1/responses/input_tokens" and got.input_tokens > 0

    client = genai.Client(api_key="gm-test", http_options={"base_url": fake.url, "api_version": "v1beta"})
    got = client.models.count_tokens(model="gemini-3.5-flash", contents="Hi")
    assert fake.requests[-1]["path"] == "/v1beta/models/gemini-3.5-flash:countTokens" and got.total_tokens > 0

    bedrock = botocore_session.get_session().create_client(
        "bedrock-runtime", region_name="us-east-1", endpoint_url=fake.url, aws_access_key_id="AKIDEXAMPLE",
        aws_secret_access_key="secret")
    got = bedrock.count_tokens(modelId="anthropic.claude-sonnet-4-6", input={"converse": {
        "messages": [{"role": "user", "content": [{"text": "Hi"}]}], "system": [{"text": "Answer briefly."}]}})
    assert fake.requests[-1]["path"] == "/model/anthropic.claude-sonnet-4-6/count-tokens" and got["inputTokens"] > 0


# -- agenthub: the count request is the streaming request minus generation-only fields --------------


def test_anthropic_counts_what_it_would_send(fake):
    client = AutoLLMClient("claude-sonnet-4-6", api_key="sk-ant-test", base_url=fake.url, max_retries=0)
    stream, counted = _sent_and_counted(client, fake)
    assert stream["path"] == "/v1/messages" and counted["path"] == "/v1/messages/count_tokens"
    sent = stream["body"]
    assert counted["body"] == {key: sent[key] for key in ("model", "messages", "system", "tools", "cache_control")}
    assert set(sent) - set(counted["body"]) == {"max_tokens", "stream", "temperature"}
    assert any(block["type"] == "image" for block in counted["body"]["messages"][0]["content"])
    assert counted["headers"]["x-api-key"] == "sk-ant-test" and counted["headers"]["accept"] == "application/json"
    assert counted["headers"]["anthropic-version"] == stream["headers"]["anthropic-version"]


def test_openai_responses_counts_what_it_would_send(fake):
    client = AutoLLMClient("gpt-5.5", api_key="sk-test", base_url=fake.url + "/v1", max_retries=0)
    config = {k: v for k, v in CONFIG.items() if k != "temperature"}
    stream, counted = _sent_and_counted(client, fake, dict(config, thinking_level="low"))
    assert (stream["path"], counted["path"]) == ("/v1/responses", "/v1/responses/input_tokens")
    sent = stream["body"]
    kept = {"model", "input", "instructions", "tools", "tool_choice", "parallel_tool_calls", "reasoning", "text",
            "truncation"}
    assert counted["body"] == {key: value for key, value in sent.items() if key in kept}
    assert {"input", "instructions", "tools", "reasoning"} <= set(counted["body"])
    assert "max_output_tokens" in sent and "stream" in sent
    assert not {"max_output_tokens", "stream", "store", "include"} & set(counted["body"])
    assert counted["headers"]["authorization"] == "Bearer sk-test"


def test_gemini_counts_inside_generate_content_request(fake):
    client = AutoLLMClient("gemini-3.5-flash", api_key="gm-test", base_url=fake.url, max_retries=0)
    stream, counted = _sent_and_counted(client, fake)
    assert stream["path"] == "/v1beta/models/gemini-3.5-flash:streamGenerateContent?alt=sse"
    assert counted["path"] == "/v1beta/models/gemini-3.5-flash:countTokens"
    assert counted["body"] == {"generateContentRequest": dict(stream["body"], model="models/gemini-3.5-flash")}
    inner = counted["body"]["generateContentRequest"]
    assert inner["systemInstruction"] and inner["tools"] and inner["contents"][0]["parts"][1]["inlineData"][
        "data"] == base64.b64encode(PNG).decode()
    assert counted["headers"]["x-goog-api-key"] == "gm-test"


def test_vertex_counts_gemini_and_claude(fake, monkeypatch):
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "vtx-proj-123")
    monkeypatch.setenv("GOOGLE_CLOUD_LOCATION", "us-east5")
    base = fake.url + "/v1/projects/vtx-proj-123/locations/us-east5"
    client = AutoLLMClient("gemini-3.5-flash", api_key="ya29.t", base_url=base, client_type="vertex", max_retries=0)
    stream, counted = _sent_and_counted(client, fake)
    assert counted["path"] == "/v1/projects/vtx-proj-123/locations/us-east5/publishers/google/models/gemini-3.5-flash:countTokens"
    sent = stream["body"]
    assert counted["body"] == {key: sent[key] for key in ("contents", "systemInstruction", "tools")}
    assert "generationConfig" in sent and counted["headers"]["authorization"] == "Bearer ya29.t"

    # (CONFIG has a temperature: 2023-06-01 pinned, which Vertex AI names vertex-2023-10-16 in the body)
    claude = AutoLLMClient("claude-sonnet-4-6", api_key="ya29.t", base_url=base, client_type="vertex", max_retries=0,
                           anthropic_version="2023-06-01")
    stream, counted = _sent_and_counted(claude, fake)
    assert stream["body"]["anthropic_version"] == "vertex-2023-10-16" and stream["body"]["temperature"] == 0.2
    assert stream["path"].endswith("/publishers/anthropic/models/claude-sonnet-4-6:streamRawPredict")
    assert counted["path"] == "/v1/projects/vtx-proj-123/locations/us-east5/publishers/anthropic/models/count-tokens:rawPredict"
    sent = stream["body"]
    assert counted["body"] == dict({key: sent[key] for key in ("anthropic_version", "messages", "system", "tools")},
                                   model="claude-sonnet-4-6")


def test_bedrock_counts_the_converse_input(fake, monkeypatch):
    for name in list(os.environ):
        if name.startswith("AWS_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_REGION", "us-west-2")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAEXAMPLE0001")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "local/secret+key/0002")
    monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", fake.url)
    client = AutoLLMClient("us.anthropic.claude-sonnet-4-5-20250929-v1:0", max_retries=0)
    stream, counted = _sent_and_counted(client, fake)
    assert stream["path"] == "/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse-stream"
    assert counted["path"] == "/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/count-tokens"
    sent = stream["body"]
    assert counted["body"] == {"input": {"converse": {key: sent[key] for key in ("messages", "system", "toolConfig")}}}
    assert "inferenceConfig" in sent
    assert counted["headers"]["authorization"].startswith("AWS4-HMAC-SHA256 Credential=AKIAEXAMPLE0001/")
    assert counted["headers"]["accept"] == "application/json"


# -- elsewhere: UnsupportedOperationError, or the local estimate ------------------------------------


def test_chat_completions_has_no_count_endpoint_unless_an_estimate_is_asked(fake):
    client = AutoLLMClient("deepseek-v4-flash", api_key="sk-test", base_url=fake.url + "/v1", max_retries=0)
    with pytest.raises(UnsupportedOperationError) as caught:
        client.count_tokens(MESSAGES, CONFIG)
    assert caught.value.operation == "count_tokens" and "estimate=True" in str(caught.value)
    assert client.count_tokens(MESSAGES, CONFIG, estimate=True) == estimate_tokens(MESSAGES, CONFIG)
    assert fake.requests == []  # nothing was sent
    with pytest.raises(ConfigError):
        client.count_tokens(MESSAGES, CONFIG, estimate="yes")
    with pytest.raises(ConfigError):
        client.count_tokens([{"role": "robot", "content_items": []}])


def test_a_count_answer_without_a_count_is_a_protocol_error():
    from agenthub.providers import counting

    with pytest.raises(StreamProtocolError):
        counting.parse_count("anthropic", {"tokens": 3}, "input_tokens")
    with pytest.raises(StreamProtocolError):
        counting.parse_count("gemini", [1], "totalTokens")
    with pytest.raises(StreamProtocolError):
        counting.parse_count("bedrock", {"inputTokens": -1}, "inputTokens")
    assert counting.parse_count("gemini", {"promptTokensDetails": []}, "totalTokens") == 0  # protobuf JSON drops a zero
    assert counting.parse_count("bedrock", {"inputTokens": 12}, "inputTokens") == 12


def test_hosts_without_a_documented_count_endpoint_say_so(monkeypatch):
    monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", "https://res.openai.azure.com")
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", "az-test-key")
    monkeypatch.setenv("OPENAI_API_VERSION", "preview")
    client = AutoLLMClient("my-deployment", client_type="azure-responses", max_retries=0)
    with pytest.raises(UnsupportedOperationError):
        client.count_tokens(MESSAGES)
    assert client.count_tokens(MESSAGES, estimate=True) == estimate_tokens(MESSAGES)
