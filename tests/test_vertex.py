"""Google Vertex AI: client_type "vertex" (Gemini through generateContent, Claude through Anthropic
Messages), and the google-auth glue in agenthub.gcp.

Wire facts pinned here (Vertex AI REST reference, Anthropic's Vertex client, google-genai): the
resource prefix ``/v1/projects/{project}/locations/{location}``; Gemini at
``/publishers/google/models/{model}:streamGenerateContent?alt=sse``; Claude at
``/publishers/anthropic/models/{model}:streamRawPredict`` with ``anthropic_version:
"2026-10-21"`` in the body (``"vertex-2023-10-16"`` under a pinned 2023-06-01) and no ``model``; hosts ``{location}-aiplatform.googleapis.com``,
``aiplatform.googleapis.com`` for ``global``, ``aiplatform.{us,eu}.rep.googleapis.com``; the token
as ``Authorization: Bearer``.  The service-account flow is google-auth's own (the JWT-bearer grant,
RS256 over the assertion) against a token endpoint on 127.0.0.1 that checks the signature with the
public half of a key generated here.  The streams in tests/fixtures/vertex were written for these
tests (Vertex's SSE ends lines with CRLF).
"""

import base64
import json
import os
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from agenthub import AutoLLMClient, hosts
from agenthub.errors import AuthenticationError, ConfigError, TransportError
from agenthub.hosts import vertex
from agenthub.providers import gemini
from agenthub.providers._common import Endpoint
from agenthub.registry import resolve
from agenthub.stream import check_stream
from agenthub.validate import check_config
from conftest import run_parser, splits, strip_ids, summarize
from faultserver import within
from sse_server import Answer, SSEServer, close_server, track_connections

HERE = os.path.dirname(os.path.abspath(__file__))
PROJECT = "vtx-proj-123"
USER = [{"role": "user", "content_items": [{"type": "text", "text": "Weather in Paris?"}]}]
TOOLS = [{"name": "get_weather", "description": "Current weather.",
          "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}]
SCOPE = "https://www.googleapis.com/auth/cloud-platform"
GOOGLE_ENV = ("GOOGLE_APPLICATION_CREDENTIALS", "GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION", "VERTEX_BASE_URL",
              "GCLOUD_PROJECT", "CLOUDSDK_CONFIG", "GOOGLE_CLOUD_QUOTA_PROJECT")


def fixture(name):
    with open(os.path.join(HERE, "fixtures", "vertex", name), "rb") as handle:
        return handle.read()


@pytest.fixture
def clean_env(monkeypatch, tmp_path):
    for name in GOOGLE_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path / "no-gcloud"))  # no gcloud user credentials
    monkeypatch.setenv("NO_GCE_CHECK", "True")  # google-auth: never probe a metadata server here
    return monkeypatch


# -- URLs and resolution ------------------------------------------------------------------------------


@pytest.mark.parametrize("location, root", [
    ("global", "https://aiplatform.googleapis.com"), ("us-east5", "https://us-east5-aiplatform.googleapis.com"),
    ("europe-west4", "https://europe-west4-aiplatform.googleapis.com"), ("us", "https://aiplatform.us.rep.googleapis.com"),
    ("eu", "https://aiplatform.eu.rep.googleapis.com"),
])
def test_host_root(location, root):
    assert vertex.host_root(location) == root


def test_model_urls():
    prefix = "https://aiplatform.googleapis.com/v1/projects/p-1/locations/global"
    assert vertex.model_url(prefix, "gemini-3.5-flash") == (
        prefix + "/publishers/google/models/gemini-3.5-flash:streamGenerateContent?alt=sse")
    assert vertex.model_url(prefix, "claude-sonnet-4-6@20260101") == (
        prefix + "/publishers/anthropic/models/claude-sonnet-4-6@20260101:streamRawPredict")


def test_project_and_location_from_the_environment(clean_env):
    env = {"GOOGLE_CLOUD_PROJECT": PROJECT, "GOOGLE_CLOUD_LOCATION": "us-east5"}
    assert resolve("gemini-3.5-flash", "vertex", api_key="ya29.tok", environ=env) == (
        "vertex", "https://us-east5-aiplatform.googleapis.com/v1/projects/vtx-proj-123/locations/us-east5",
        "ya29.tok", {"schema_additional_properties": True})
    kind, url, _, _ = resolve("claude-opus-4-8", "vertex", api_key="ya29.tok", environ={"GOOGLE_CLOUD_PROJECT": PROJECT})
    assert (kind, url) == ("vertex-anthropic", "https://aiplatform.googleapis.com/v1/projects/vtx-proj-123/locations/global")
    assert resolve("gemini-3.5-flash", "vertex-ai", api_key="t", environ=env)[0] == "vertex"


def test_project_and_location_from_base_url(clean_env):
    base = "https://aiplatform.googleapis.com/v1/projects/other-proj/locations/global"
    env = {"GOOGLE_CLOUD_PROJECT": PROJECT, "GOOGLE_CLOUD_LOCATION": "us-east5"}
    assert resolve("gemini-3.5-flash", "vertex", base, "t", environ=env)[1] == base
    # a host root keeps the environment's project and location
    assert resolve("gemini-3.5-flash", "vertex", "https://vertex-proxy.example.com", "t", environ=env)[1] == (
        "https://vertex-proxy.example.com/v1/projects/vtx-proj-123/locations/us-east5")
    assert resolve("gemini-3.5-flash", "vertex", "https://us-east5-aiplatform.googleapis.com/v1/", "t",
                   environ=env)[1] == "https://us-east5-aiplatform.googleapis.com/v1/projects/vtx-proj-123/locations/us-east5"
    assert resolve("gemini-3.5-flash", "vertex", environ=dict(env, VERTEX_BASE_URL="http://127.0.0.1:9"),
                   api_key="t")[1] == "http://127.0.0.1:9/v1/projects/vtx-proj-123/locations/us-east5"


@pytest.mark.parametrize("where", ["base_url", "VERTEX_BASE_URL"])
@pytest.mark.parametrize("named", ["https://vertex-proxy.example.com/gw?tenant=a", "https://vertex-proxy.example.com/gw?",
                                   "https://vertex-proxy.example.com#eu",
                                   "https://aiplatform.googleapis.com/v1/projects/p-123/locations/global#x"],
                         ids=["query", "empty-query", "fragment", "fragment-after-location"])
def test_a_base_url_with_a_query_or_a_fragment_is_refused(clean_env, where, named):
    """The resource prefix and the method are appended to the base URL: after a ``#`` they were never sent
    (the request went to the proxy's root), after a bare ``?`` they were the query."""
    env = {"GOOGLE_CLOUD_PROJECT": PROJECT}
    if where != "base_url":
        env[where] = named
    with pytest.raises(ConfigError) as info:
        resolve("gemini-3.5-flash", "vertex", named if where == "base_url" else None, "t", environ=env)
    assert str(info.value) == "vertex: the base URL takes no query string or fragment (the request's path is " \
                              "appended to it)"


def test_no_project_says_how_to_name_one(clean_env):
    with pytest.raises(ConfigError, match=r"GOOGLE_CLOUD_PROJECT or pass base_url='https://aiplatform"
                                          r"\.googleapis\.com/v1/projects/<project>/locations/global'"):
        resolve("gemini-3.5-flash", "vertex", api_key="t", environ={})


@pytest.mark.parametrize("env, model", [
    ({"GOOGLE_CLOUD_PROJECT": "p/../x"}, "gemini-3.5-flash"),
    ({"GOOGLE_CLOUD_PROJECT": PROJECT, "GOOGLE_CLOUD_LOCATION": "us east"}, "gemini-3.5-flash"),
    ({"GOOGLE_CLOUD_PROJECT": PROJECT}, "gemini/../../x"),
    ({"GOOGLE_CLOUD_PROJECT": PROJECT}, "gemini-3.5-flash:generateContent"),
])
def test_path_parts_that_cannot_go_in_a_url(clean_env, env, model):
    with pytest.raises(ConfigError):
        resolve(model, "vertex", api_key="t", environ=env)


def test_a_token_given_as_its_header_value(clean_env):
    assert resolve("gemini-3.5-flash", "vertex", api_key="Bearer ya29.abc", environ={"GOOGLE_CLOUD_PROJECT": "p-12"})[2] \
        == "ya29.abc"


def test_a_credentials_file_path_as_api_key_is_refused(clean_env):
    with pytest.raises(ConfigError, match="GOOGLE_APPLICATION_CREDENTIALS"):
        resolve("gemini-3.5-flash", "vertex", api_key="/home/me/keys/sa.json", environ={"GOOGLE_CLOUD_PROJECT": "p-12"})


def test_whole_json_answers_are_read_by_the_wrapped_protocols():
    from agenthub.providers import anthropic, gemini, openai_chat, openai_responses

    for mine, theirs in (("vertex", gemini), ("vertex-anthropic", anthropic), ("azure", openai_chat),
                         ("azure-responses", openai_responses), ("azure-anthropic", anthropic)):
        assert hosts.client_type(mine).protocol().parse_document is theirs.PROTOCOL.parse_document
        assert hosts.client_type(mine).protocol().framing is theirs.PROTOCOL.framing


def test_google_credentials_go_only_to_google_hosts(clean_env):
    with pytest.raises(ConfigError, match="api_key is required with base_url 'vertex-proxy.example.com'"):
        resolve("gemini-3.5-flash", "vertex", "https://vertex-proxy.example.com", environ={"GOOGLE_CLOUD_PROJECT": "p-12"})


# -- request goldens --------------------------------------------------------------------------------


def encoded(model, config=None, api_key="ya29.static-token", messages=USER):
    kind, url, key, quirks = resolve(model, "vertex", api_key=api_key, environ={"GOOGLE_CLOUD_PROJECT": PROJECT})
    row = hosts.client_type(kind)
    endpoint = Endpoint(kind, url, key, None, quirks, model)
    return row.host.encode(row.protocol().build_request(endpoint, model, messages, check_config(config or {})), endpoint)


def test_gemini_request_golden():
    sent = encoded("gemini-3.5-flash", {"max_tokens": 64, "tools": TOOLS})
    assert sent.url == ("https://aiplatform.googleapis.com/v1/projects/vtx-proj-123/locations/global/publishers/google/"
                        "models/gemini-3.5-flash:streamGenerateContent?alt=sse")
    assert dict(sent.headers) == {"Content-Type": "application/json", "Accept": "text/event-stream",
                                  "Authorization": "Bearer ya29.static-token"}
    assert json.loads(sent.data) == {
        "contents": [{"role": "user", "parts": [{"text": "Weather in Paris?"}]}],
        "tools": [{"functionDeclarations": [{"name": "get_weather", "description": "Current weather.",
                                             "parametersJsonSchema": TOOLS[0]["parameters"]}]}],
        "generationConfig": {"maxOutputTokens": 64}}


def test_claude_request_golden():
    sent = encoded("claude-sonnet-4-6@20260101", {"max_tokens": 64, "tools": TOOLS, "system_prompt": "Be brief."})
    assert sent.url == ("https://aiplatform.googleapis.com/v1/projects/vtx-proj-123/locations/global/publishers/"
                        "anthropic/models/claude-sonnet-4-6@20260101:streamRawPredict")
    assert dict(sent.headers) == {"Content-Type": "application/json", "Accept": "text/event-stream",
                                  "Authorization": "Bearer ya29.static-token"}
    body = json.loads(sent.data)
    assert list(body)[0] == "anthropic_version"
    assert body == {
        "anthropic_version": "2026-10-21", "max_tokens": 64, "system": "Be brief.",
        "messages": [{"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"}]}],
        "tools": [{"name": "get_weather", "description": "Current weather.", "input_schema": TOOLS[0]["parameters"]}],
        "stream": True}


def test_claude_prompt_caching_sends_no_top_level_field():
    body = json.loads(encoded("claude-sonnet-4-6", {"prompt_caching": "enable"}).data)
    assert "cache_control" not in body and "model" not in body


def test_a_token_callable_is_called_per_encode():
    tokens = iter(["ya29.one", "ya29.two"])
    kind, url, key, quirks = resolve("gemini-3.5-flash", "vertex", api_key=lambda: next(tokens),
                                     environ={"GOOGLE_CLOUD_PROJECT": PROJECT})
    endpoint = Endpoint(kind, url, key, None, quirks, "gemini-3.5-flash")
    request = gemini.build_request(endpoint, "gemini-3.5-flash", USER, check_config({}))
    assert [vertex.HOST.encode(request, endpoint).headers["Authorization"] for _ in range(2)] == [
        "Bearer ya29.one", "Bearer ya29.two"]


# -- the streams ------------------------------------------------------------------------------------


def parse(record, data):
    reference = None
    for chunks in splits(data, samples=6):
        events = run_parser(record.parse_stream, chunks, record.name, tool_id_prefix="call_t_")
        check_stream(events)
        if reference is None:
            reference = strip_ids(events)
        assert strip_ids(events) == reference
    return events


def test_gemini_stream_with_crlf_lines():
    events = parse(hosts.client_type("vertex").protocol(), fixture("gemini_text.sse"))
    assert summarize(events) == {
        "text": "Paris is the capital of France.", "thinking": "Checking the capital.", "tool_calls": [],
        "finish_reason": "stop",
        "usage": {"cached_tokens": None, "prompt_tokens": 12, "thoughts_tokens": 19, "response_tokens": 9}}


def test_claude_stream_thinking_and_tool_use():
    events = parse(hosts.client_type("vertex-anthropic").protocol(), fixture("claude_thinking_tool_use.sse"))
    assert summarize(events)["tool_calls"] == [
        {"name": "get_weather", "id": "toolu_vrtx_01", "arguments": {"city": "Paris"}}]
    signed = [i for e in events for i in e["content_items"] if i.get("fidelity", {}).get("signature")]
    assert signed[0]["fidelity"]["signature"] == "RXVWZXJ0ZXhTaWc="


# -- service-account JSON as api_key: refused for every client -------------------------------------------


def _sa_text(private_key="-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----\n"):
    return json.dumps({"type": "service_account", "project_id": PROJECT, "private_key_id": "abc",
                       "private_key": private_key, "client_email": "a@vtx-proj-123.iam.gserviceaccount.com",
                       "token_uri": "https://oauth2.googleapis.com/token"})


@pytest.mark.parametrize("client_type", sorted(hosts.CLIENT_TYPES))
def test_a_service_account_json_as_api_key_is_refused_for_every_client(client_type, clean_env):
    clean_env.setenv("GOOGLE_CLOUD_PROJECT", PROJECT)
    clean_env.setenv("AZURE_OPENAI_ENDPOINT", "http://127.0.0.1:9")
    with SSEServer() as server:
        for text in (_sa_text(), "  " + _sa_text() + "\n", '{"private_key": "x"}', _sa_text()[:-20]):
            with pytest.raises(ConfigError) as info:
                AutoLLMClient("gemini-3.5-flash", api_key=text, base_url=server.url, client_type=client_type)
            message = str(info.value)
            assert "not sent" in message and "MIIE" not in message and "PRIVATE KEY" not in message
    assert server.requests == []


def test_a_service_account_json_in_a_key_variable_is_refused(clean_env):
    with pytest.raises(ConfigError, match="private key"):
        resolve("gpt-5.5", environ={"OPENAI_API_KEY": _sa_text()})
    with pytest.raises(ConfigError, match="private key"):
        resolve("my-gpt", "azure", environ={"AZURE_OPENAI_ENDPOINT": "https://r.openai.azure.com",
                                            "AZURE_OPENAI_API_KEY": _sa_text()})


def test_a_pem_private_key_is_refused_and_plain_json_keys_are_not():
    with pytest.raises(ConfigError):
        resolve("gpt-5.5", api_key="-----BEGIN RSA PRIVATE KEY-----\nabc\n-----END RSA PRIVATE KEY-----", environ={})
    assert resolve("gpt-5.5", api_key='{"token": "abc"}', environ={})[2] == '{"token": "abc"}'


# -- without the extra ---------------------------------------------------------------------------------


def test_without_google_auth_a_token_works_and_adc_names_the_extra(clean_env):
    for name in [m for m in sys.modules if m == "google" or m.startswith("google.")]:
        clean_env.delitem(sys.modules, name)
    clean_env.setitem(sys.modules, "google", None)  # import google.auth -> ImportError
    clean_env.setenv("GOOGLE_CLOUD_PROJECT", PROJECT)
    client = AutoLLMClient("gemini-3.5-flash", api_key="ya29.token", client_type="vertex")
    assert client.client_type == "vertex"
    with pytest.raises(ConfigError, match=r"pip install '\.\[vertex\]' from agenthub's checkout"):
        AutoLLMClient("gemini-3.5-flash", client_type="vertex")


# -- the service-account flow, through google-auth, against a local token endpoint -------------------------


def _b64url(data):
    return base64.urlsafe_b64decode(data + "=" * (-len(data) % 4))


class TokenEndpoint(object):
    """An OAuth token endpoint on 127.0.0.1 that checks google-auth's JWT-bearer assertions."""

    def __init__(self, public_key, email, expires_in=3600, pause=0.0):
        self.public_key = public_key
        self.email = email
        self.expires_in = expires_in
        self.pause = pause
        self.grants = []
        self.failures = []
        self.refuse = False
        self.trickle = 0.0  # seconds between the answer's bytes (0: written at once)
        self.closed = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802
                form = urllib.parse.parse_qs(self.rfile.read(int(self.headers["Content-Length"])).decode())
                try:
                    status, answer = outer.answer(form, self.path)
                except Exception as exc:  # a failed check: the test sees it in .failures and in the error
                    outer.failures.append(repr(exc))
                    status, answer = 500, {"error": "check_failed", "error_description": repr(exc)}
                if outer.pause:
                    time.sleep(outer.pause)
                data = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if not outer.trickle:
                    self.wfile.write(data)
                    return
                for index in range(len(data)):  # a byte at a time: every read well within any read timeout
                    if outer.closed.wait(outer.trickle):
                        return
                    self.wfile.write(data[index:index + 1])
                    self.wfile.flush()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._connections = track_connections(self.server)  # (ended when it closes)
        self.server.daemon_threads = True
        self.url = "http://127.0.0.1:{}/token".format(self.server.server_address[1])
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def answer(self, form, path):
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import padding

        assert form["grant_type"] == ["urn:ietf:params:oauth:grant-type:jwt-bearer"]
        head, claims, signature = form["assertion"][0].split(".")
        self.public_key.verify(_b64url(signature), (head + "." + claims).encode(), padding.PKCS1v15(), hashes.SHA256())
        header, payload = json.loads(_b64url(head)), json.loads(_b64url(claims))
        assert header["alg"] == "RS256" and header["kid"] == "key-1"
        # google-auth signs for Google's OAuth audience whatever token_uri the file names
        assert (payload["iss"], payload["aud"], payload["scope"]) == (
            self.email, "https://oauth2.googleapis.com/token", SCOPE)
        assert 0 < payload["exp"] - payload["iat"] <= 3600
        self.grants.append(payload)
        if self.refuse == "echo":  # (an endpoint that quotes the request it refused: the signed assertion)
            return 400, {"error": "invalid_grant", "error_description": "refused assertion=" + form["assertion"][0]}
        if self.refuse:
            return 400, {"error": "invalid_grant", "error_description": "Invalid JWT Signature."}
        return 200, {"access_token": "ya29.local-{}".format(len(self.grants)), "expires_in": self.expires_in,
                     "token_type": "Bearer"}

    def close(self):
        self.closed.set()
        close_server(self.server, self._connections)


@pytest.fixture(scope="module")
def rsa_key():
    """One RSA key for the module (generated here, never stored)."""
    pytest.importorskip("google.auth")
    from cryptography.hazmat.primitives.asymmetric import rsa

    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@pytest.fixture
def service_account(clean_env, tmp_path, rsa_key):
    from cryptography.hazmat.primitives import serialization

    key = rsa_key
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption()).decode()
    email = "agent@{}.iam.gserviceaccount.com".format(PROJECT)
    endpoint = TokenEndpoint(key.public_key(), email)
    path = tmp_path / "sa.json"
    path.write_text(json.dumps({"type": "service_account", "project_id": PROJECT, "private_key_id": "key-1",
                                "private_key": pem, "client_email": email, "client_id": "1",
                                "token_uri": endpoint.url}))
    clean_env.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(path))
    endpoint.path = str(path)
    endpoint.pem = pem
    yield endpoint
    endpoint.close()


PEM_BODY = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7"


@pytest.mark.parametrize("content, reason", [
    # a stray byte after the JSON: google-auth's error carried the whole file, the private key with it
    (json.dumps({"type": "service_account", "project_id": PROJECT, "private_key_id": "k", "client_email": "a@b.c",
                 "private_key": "-----BEGIN PRIVATE KEY-----\n" + PEM_BODY + "\n-----END PRIVATE KEY-----\n"}
                ).encode() + b"\xff", "File {path} is not a valid json file."),
    (b"[1]", "the credentials file {path} could not be read as credentials (google-auth raised AttributeError)"),
    (b'"text"', "the credentials file {path} could not be read as credentials (google-auth raised AttributeError)"),
    (b"[" * 100000, "the credentials file {path} could not be read as credentials (google-auth raised RecursionError)"),
], ids=["stray-byte", "list", "string", "deep"])
def test_a_broken_credentials_file_is_a_config_error_that_shows_no_key(clean_env, tmp_path, content, reason):
    pytest.importorskip("google.auth")
    from agenthub.hosts import gcp

    path = tmp_path / "sa.json"
    path.write_bytes(content)
    clean_env.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(path))
    with pytest.raises(ConfigError) as info:
        gcp.application_default()
    assert str(info.value) == (
        "Vertex AI: no Google credentials: {} (set GOOGLE_APPLICATION_CREDENTIALS to a service-account file, run "
        "`gcloud auth application-default login`, or pass an access token as api_key)".format(
            reason.format(path=path)))
    with pytest.raises(ConfigError) as read:
        gcp.service_account_file(str(path))
    assert str(read.value).startswith("cannot read service-account file {!r}: ".format(str(path)))
    import traceback

    for error in (info.value, read.value):  # neither in the message nor in a chained exception
        assert PEM_BODY not in "".join(traceback.format_exception(type(error), error, error.__traceback__))


def test_application_default_credentials_and_project_from_the_file(service_account):
    from agenthub.hosts import gcp

    token, project = gcp.application_default()
    assert project == PROJECT and service_account.grants == []  # nothing fetched yet
    assert token() == "ya29.local-1" and token() == "ya29.local-1"  # cached
    assert len(service_account.grants) == 1 and "ya29" not in repr(token)


def test_the_token_is_renewed_before_it_expires(service_account, monkeypatch):
    from agenthub.hosts import gcp

    token = gcp.service_account_file(service_account.path)
    assert token.project == PROJECT
    assert token() == "ya29.local-1"
    later = gcp._utcnow() + __import__("datetime").timedelta(seconds=3600 - gcp.REFRESH_MARGIN + 5)
    monkeypatch.setattr(gcp, "_utcnow", lambda: later)
    assert token() == "ya29.local-2"  # within the margin: renewed although not yet expired
    assert token.refreshes == 2


def test_concurrent_callers_share_one_refresh(service_account):
    from agenthub.hosts import gcp

    service_account.pause = 0.3
    token = gcp.service_account_file(service_account.path)
    got = []
    threads = [threading.Thread(target=lambda: got.append(token())) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert got == ["ya29.local-1"] * 8 and len(service_account.grants) == 1


@pytest.mark.parametrize("answer, raised", [
    ([1, 2], "TypeError"),
    ("a string", "TypeError"),
    ({"access_token": "ya29.secret-token", "expires_in": "soon"}, "ValueError"),
    ({"access_token": "ya29.secret-token", "expires_in": float("inf")}, "OverflowError"),
    ({"access_token": "ya29.secret-token", "expires_in": 10 ** 30}, "OverflowError"),
], ids=["list", "string", "text-expiry", "infinite-expiry", "huge-expiry"])
def test_an_unreadable_token_answer_is_an_upstream_error(service_account, answer, raised):
    """A token endpoint that answers 200 with something google-auth cannot read: a typed error naming the
    token endpoint, never the TypeError / ValueError / OverflowError google-auth raised, whose text (the
    answer's, with its token) is not chained."""
    import traceback

    from agenthub.errors import UpstreamError
    from agenthub.hosts import gcp

    service_account.answer = lambda form, path: (200, answer)
    token = gcp.service_account_file(service_account.path)
    with pytest.raises(UpstreamError) as info:
        token()
    assert type(info.value) is UpstreamError
    assert (info.value.message, info.value.client, info.value.error_type, info.value.retryable) == (
        "Vertex AI: the Google token endpoint's answer could not be read (google-auth raised {})".format(raised),
        "vertex", "token_response", False)
    assert info.value.__cause__ is None and info.value.__suppress_context__
    assert "ya29" not in "".join(traceback.format_exception(type(info.value), info.value, info.value.__traceback__))


@pytest.mark.skipif(not hasattr(os, "register_at_fork"), reason="no fork")
@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # 3.12+: fork with threads running
def test_a_forked_child_refreshes_on_its_own_while_the_parent_was_refreshing():
    """A fork while another thread refreshes (holds the lock): the child neither waits forever on that lock
    nor refreshes over the parent's HTTP session (its pooled connections are the parent's sockets)."""
    pytest.importorskip("google.auth")
    from agenthub.hosts import gcp
    from forking import forked_child_uses

    parents_session = object()

    class Credentials(object):
        token = None
        expiry = None

        def refresh(self, request):
            self.token = "ya29.child" if request is not parents_session else "ya29.over-the-parents-session"

    token = gcp.GoogleToken(Credentials())
    token._request = parents_session

    def use():
        assert token() == "ya29.child"

    assert forked_child_uses(token, use) == 0


def test_a_refused_grant_is_an_authentication_error_and_nothing_is_sent(service_account):
    service_account.refuse = True
    with SSEServer() as server:
        client = AutoLLMClient("gemini-3.5-flash", base_url=server.url, client_type="vertex")
        with pytest.raises(AuthenticationError, match="invalid_grant") as info:
            list(client.streaming_response(USER))
    assert server.requests == [] and info.value.retryable is False
    assert "PRIVATE" not in str(info.value)


def test_an_assertion_echoed_by_the_token_endpoint_is_not_shown(service_account):
    import traceback

    service_account.refuse = "echo"
    seen = []
    answer = service_account.answer
    service_account.answer = lambda form, path: seen.append(form["assertion"][0]) or answer(form, path)
    with SSEServer() as server:
        client = AutoLLMClient("gemini-3.5-flash", base_url=server.url, client_type="vertex", max_retries=0)
        with pytest.raises(AuthenticationError) as info:
            list(client.streaming_response(USER))
    assert server.requests == [] and len(seen) == 1
    assert str(info.value).startswith("Vertex AI: the Google token endpoint refused the credentials: "
                                      "('invalid_grant: refused assertion=***', ")
    shown = "".join(traceback.format_exception(type(info.value), info.value, info.value.__traceback__))
    assert seen[0].rsplit(".", 1)[1][-40:] not in shown and seen[0][:60] not in shown

def test_an_unreachable_token_endpoint_is_a_transport_error(service_account, tmp_path):
    with open(service_account.path) as handle:
        data = json.load(handle)
    data["token_uri"] = "http://127.0.0.1:9/token"  # nothing listens there
    (tmp_path / "sa.json").write_text(json.dumps(data))
    with SSEServer() as server:
        client = AutoLLMClient("gemini-3.5-flash", base_url=server.url, client_type="vertex", max_retries=0)
        with pytest.raises(TransportError):
            list(client.streaming_response(USER))
    assert server.requests == []


@within(20)
def test_a_token_endpoint_trickling_its_answer_is_cut_at_the_token_timeout(service_account, monkeypatch):
    # each byte comes well within the read timeout, so only a deadline for the whole refresh ends it (the answer,
    # about 110 bytes at 0.3 s each, would take 33 s)
    from agenthub.hosts import gcp

    monkeypatch.setattr(gcp, "TOKEN_TIMEOUT", 1.0)
    service_account.trickle = 0.3
    token = gcp.service_account_file(service_account.path)
    with pytest.raises(TransportError) as info:
        token()
    assert str(info.value) == "Vertex AI: the Google token endpoint did not answer within 1 s (TOKEN_TIMEOUT)"
    assert (info.value.client, info.value.timeout, info.value.retryable) == ("vertex", True, True)
    assert len(service_account.grants) == 1 and token.refreshes == 0
    service_account.trickle = 0.0  # the next refresh starts a deadline of its own
    assert token() == "ya29.local-2"


@within(20)
@pytest.mark.parametrize("stop", ["deadline", "abort"])
def test_a_calls_deadline_or_abort_stops_a_token_refresh_trickling_in(service_account, stop):
    # the refresh has 30 s of its own (TOKEN_TIMEOUT); the call's total deadline, or its abort, ends it sooner
    from agenthub.attempts import Timeout

    service_account.trickle = 0.3
    with SSEServer() as server:
        client = AutoLLMClient("gemini-3.5-flash", base_url=server.url, client_type="vertex", max_retries=0,
                               timeout=Timeout(total=1.0) if stop == "deadline" else None)
        stream = client.streaming_response(USER)
        if stop == "abort":
            threading.Timer(0.5, stream.abort).start()  # (it has fired when the stream ends: the abort ends it)
        with pytest.raises(TransportError) as info:
            list(stream)
    assert server.requests == []
    assert (info.value.deadline, info.value.aborted, info.value.retryable) == (stop == "deadline", stop == "abort",
                                                                              False)
    assert str(info.value) == ("vertex: the total deadline of 1.0s was exceeded" if stop == "deadline"
                               else "vertex: the stream was aborted by the caller")
    assert str(info.value.__cause__) == "Vertex AI: the token's refresh was stopped with the call"


def _answer(data, parts=4):
    size = len(data) // parts + 5
    return Answer([data[i:i + size] for i in range(0, len(data), size)])


@pytest.mark.parametrize("model, turn1, turn2, path", [
    ("gemini-3.5-flash", "gemini_tool_call.sse", "gemini_text.sse",
     "/v1/projects/vtx-proj-123/locations/global/publishers/google/models/gemini-3.5-flash:streamGenerateContent?alt=sse"),
    ("claude-sonnet-4-6@20260101", "claude_thinking_tool_use.sse", "claude_text.sse",
     "/v1/projects/vtx-proj-123/locations/global/publishers/anthropic/models/claude-sonnet-4-6@20260101:streamRawPredict"),
])
def test_end_to_end_through_the_service_account_flow(service_account, model, turn1, turn2, path):
    with SSEServer() as server:
        server.answers.extend([_answer(fixture(turn1)), _answer(fixture(turn2)), _answer(fixture(turn2), 2)])
        client = AutoLLMClient(model, base_url=server.url, client_type="vertex")
        first = list(client.streaming_response_stateful(USER[0], {"tools": TOOLS}))
        call = [i for e in first for i in e["content_items"] if i["type"] == "tool_call"][0]
        result = {"role": "user", "content_items": [
            {"type": "tool_result", "tool_call_id": call["tool_call_id"], "text": "18 °C"}]}
        second = list(client.streaming_response_stateful(result, {"tools": TOOLS}))
        stateless = list(client.streaming_response(USER))
    assert summarize(second)["finish_reason"] == "stop" and summarize(stateless) == summarize(second)
    assert len(client.get_history()) == 4
    assert [r["path"] for r in server.requests] == [path] * 3
    assert [r["headers"]["Authorization"] for r in server.requests] == ["Bearer ya29.local-1"] * 3
    assert len(service_account.grants) == 1  # one token for the three requests
    replay = server.requests[1]["body"]
    if model.startswith("claude"):
        assert all(r["body"]["anthropic_version"] == "2026-10-21" and "model" not in r["body"]
                   for r in server.requests)
        assert "anthropic-version" not in {k.lower() for k in server.requests[0]["headers"]}
        assistant, tool = replay["messages"][1], replay["messages"][2]
        assert assistant["content"][0] == {"type": "thinking", "thinking": "Need the weather tool.",
                                           "signature": "RXVWZXJ0ZXhTaWc="}
        assert tool["content"][0]["tool_use_id"] == "toolu_vrtx_01"
    else:
        model_turn, answer = replay["contents"][1], replay["contents"][2]
        assert model_turn["role"] == "model"
        assert model_turn["parts"][0]["thoughtSignature"] == "c2lnLXZlcnRleC1jYWxs"
        assert answer["parts"][0]["functionResponse"]["name"] == "get_weather"
    for request in server.requests:
        assert service_account.pem[40:80] not in json.dumps(request)


def test_an_overload_before_any_content_is_retried_with_the_cached_token(service_account):
    with SSEServer() as server:
        server.answers.extend([Answer([fixture("claude_overloaded.sse")]), _answer(fixture("claude_text.sse"))])
        client = AutoLLMClient("claude-sonnet-4-6", base_url=server.url, client_type="vertex")
        events = list(client.streaming_response(USER))
    assert summarize(events)["text"] == "It is 18 °C in Paris."
    assert len(server.requests) == 2 and len(service_account.grants) == 1


def test_a_google_error_answer(service_account):
    denied = [{"error": {"code": 403, "message": "Permission 'aiplatform.endpoints.predict' denied on resource",
                         "status": "PERMISSION_DENIED"}}]
    with SSEServer() as server:
        server.answers.append(Answer([json.dumps(denied).encode()], status=403,
                                     headers={"Content-Type": "application/json"}))
        client = AutoLLMClient("gemini-3.5-flash", base_url=server.url, client_type="vertex")
        with pytest.raises(AuthenticationError) as info:
            list(client.streaming_response(USER))
    assert (info.value.status, info.value.error_type) == (403, "PERMISSION_DENIED")
    assert "ya29.local-1" not in str(info.value)


def test_vertex_base_url_from_the_environment_gets_the_credentials(service_account):
    with SSEServer() as server:
        service_account.grants.clear()
        os.environ["VERTEX_BASE_URL"] = server.url
        try:
            server.answers.append(_answer(fixture("gemini_text.sse")))
            client = AutoLLMClient("gemini-3.5-flash", client_type="vertex")
            assert client.base_url == server.url + "/v1/projects/vtx-proj-123/locations/global"
            list(client.streaming_response(USER))
        finally:
            del os.environ["VERTEX_BASE_URL"]
    assert server.requests[0]["headers"]["Authorization"] == "Bearer ya29.local-1"


def test_a_pickled_client_loads_its_credentials_again_where_it_lands(service_account):
    import pickle

    with SSEServer() as server:
        server.answers.extend([_answer(fixture("gemini_text.sse")), _answer(fixture("gemini_text.sse"))])
        client = AutoLLMClient("gemini-3.5-flash", base_url=server.url, client_type="vertex")
        list(client.streaming_response(USER))
        data = pickle.dumps(client)
        assert service_account.pem[40:80].encode() not in data and b"ya29.local" not in data
        copy = pickle.loads(data)
        list(copy.streaming_response(USER))
    assert [r["headers"]["Authorization"] for r in server.requests] == ["Bearer ya29.local-1", "Bearer ya29.local-2"]


def test_no_credentials_anywhere_is_a_config_error(clean_env):
    pytest.importorskip("google.auth")
    clean_env.setenv("GOOGLE_CLOUD_PROJECT", PROJECT)
    with pytest.raises(ConfigError, match="no Google credentials.*GOOGLE_APPLICATION_CREDENTIALS"):
        AutoLLMClient("gemini-3.5-flash", client_type="vertex")


@pytest.mark.parametrize("model, document, text", [
    ("claude-sonnet-4-6", {"id": "msg_vrtx_doc", "type": "message", "role": "assistant", "model": "claude-sonnet-4-6",
                           "content": [{"type": "text", "text": "Whole answer."}], "stop_reason": "end_turn",
                           "stop_sequence": None, "usage": {"input_tokens": 5, "output_tokens": 3}}, "Whole answer."),
    ("gemini-3.5-flash", [{"candidates": [{"content": {"role": "model", "parts": [{"text": "Whole "}]}}]},
                          {"candidates": [{"content": {"role": "model", "parts": [{"text": "answer."}]},
                                           "finishReason": "STOP"}],
                           "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 3, "totalTokenCount": 8}}],
     "Whole answer."),
])
def test_a_whole_json_answer_instead_of_a_stream(model, document, text):
    with SSEServer() as server:
        server.answers.append(Answer([json.dumps(document).encode()], headers={"Content-Type": "application/json"}))
        client = AutoLLMClient(model, api_key="ya29.t", base_url=server.url + "/v1/projects/p-123/locations/us-east5",
                               client_type="vertex")
        events = list(client.streaming_response(USER))
    check_stream(events)
    assert summarize(events)["text"] == text and summarize(events)["finish_reason"] == "stop"
    assert server.requests[0]["path"].startswith("/v1/projects/p-123/locations/us-east5/publishers/")


def test_a_quota_project_in_the_credentials_is_sent():
    """gcloud user credentials carry a quota project; google-auth sends it as x-goog-user-project."""
    pytest.importorskip("google.auth")  # GoogleToken refreshes through google-auth's transport
    from agenthub.hosts import gcp

    class UserCredentials(object):  # the attributes google-auth's user credentials have
        token, expiry, quota_project_id = None, None, "billing-proj-9"

        def refresh(self, request):
            self.token = "ya29.user"

    token = gcp.GoogleToken(UserCredentials(), PROJECT)
    token._request = gcp._TimedRequest(type("Unused", (), {"session": None})())  # refresh() above never uses it
    sent = encoded("gemini-3.5-flash", api_key=token)
    assert (sent.headers["Authorization"], sent.headers["x-goog-user-project"]) == ("Bearer ya29.user", "billing-proj-9")
    assert "x-goog-user-project" not in encoded("gemini-3.5-flash").headers


def test_an_echoed_token_is_masked_in_errors(service_account):
    echo = {"error": {"code": 401, "message": "Request had invalid authentication credentials: Bearer ya29.local-1",
                      "status": "UNAUTHENTICATED"}}
    with SSEServer() as server:
        server.answers.append(Answer([json.dumps(echo).encode()], status=401,
                                     headers={"Content-Type": "application/json"}))
        client = AutoLLMClient("gemini-3.5-flash", base_url=server.url, client_type="vertex")
        with pytest.raises(AuthenticationError) as info:
            list(client.streaming_response(USER))
    assert "ya29.local-1" not in str(info.value) and "***" in str(info.value)
