"""Issue 24 A1: every host rule decides on the host the connecting parser sees (agenthub.hosts.trust).

``https://attacker.test\\.amazonaws.com`` is ``attacker.test\\.amazonaws.com`` to urllib.parse (which
the host rules used) and ``attacker.test`` to urllib3's parse_url (which requests connects with): AWS,
Google and loopback rules said yes to a host that was not the one reached.  A base URL whose
authority holds characters outside RFC 3986 is now refused before anything is sent, and on the URLs
that are accepted every parser reads the same host.
"""

import urllib.parse

import pytest
import requests
import urllib3

from agenthub import AutoLLMClient
from agenthub.apps import server as app_server
from agenthub.errors import ConfigError
from agenthub.hosts import aws, trust
from agenthub.registry import resolve

AWS_ENV = {"AWS_ACCESS_KEY_ID": "AKIAEXAMPLE0001", "AWS_SECRET_ACCESS_KEY": "aws-secret-0002",
           "AWS_SESSION_TOKEN": "session-token-0003", "AWS_REGION": "us-east-1"}
HOSTILE = [
    "https://attacker.test\\.amazonaws.com",
    "https://attacker.test\\@bedrock-runtime.us-east-1.amazonaws.com",
    "https://attacker.test\\.googleapis.com",
    "https://attacker.test\\@aiplatform.googleapis.com",
    "http://attacker.test\\@127.0.0.1",
    "http://attacker.test\\@localhost:8000/v1",
]


def test_the_parsers_disagree_on_the_hostile_urls():
    """The premise, pinned: urllib.parse and urllib3 (requests' parser) see two hosts in each."""
    for url in HOSTILE:
        assert urllib3.util.parse_url(url).host == "attacker.test", url
        assert urllib.parse.urlsplit(url).hostname != "attacker.test", url


@pytest.mark.parametrize("url", HOSTILE)
def test_a_hostile_base_url_is_refused_before_anything_is_sent(url):
    with pytest.raises(ConfigError) as info:
        trust.check_base_url(url)
    assert "refused" in str(info.value) and "\\\\" in str(info.value)  # names the character
    assert trust.url_host(url) == ""
    assert not trust.is_loopback(url) and not aws.is_aws_host(url)


@pytest.mark.parametrize("url", [u for u in HOSTILE if "amazonaws" in u])
def test_aws_credentials_never_go_through_a_backslash(url):
    with pytest.raises(ConfigError, match="refused"):
        resolve("us.anthropic.claude-sonnet-4-5-20250929-v1:0", "bedrock", url, environ=AWS_ENV)
    with pytest.raises(ConfigError, match="refused"):  # nor from the variable that names the endpoint
        resolve("us.anthropic.claude-sonnet-4-5-20250929-v1:0", "bedrock",
                environ=dict(AWS_ENV, AWS_ENDPOINT_URL_BEDROCK_RUNTIME=url))


@pytest.fixture
def ambient_google(monkeypatch):
    """Application default credentials that would be sent (a stand-in for google-auth)."""
    from agenthub.hosts import gcp

    calls = []

    def application_default(project=None):
        calls.append(1)
        return (lambda: "ya29.ambient-token"), "vtx-proj-123"

    monkeypatch.setattr(gcp, "application_default", application_default)
    return calls


@pytest.mark.parametrize("url", [u for u in HOSTILE if "googleapis" in u or "127.0.0.1" in u or "localhost" in u])
def test_google_credentials_never_go_through_a_backslash(url, ambient_google):
    with pytest.raises(ConfigError, match="refused"):
        resolve("gemini-3.5-flash", "vertex", url, environ={"GOOGLE_CLOUD_PROJECT": "vtx-proj-123"})
    with pytest.raises(ConfigError, match="refused"):
        resolve("gemini-3.5-flash", "vertex", environ={"GOOGLE_CLOUD_PROJECT": "vtx-proj-123", "VERTEX_BASE_URL": url})
    assert ambient_google == []  # the credentials were never even loaded


@pytest.mark.parametrize("client_type, url", [
    ("openai-chat", "http://attacker.test\\@127.0.0.1:8000/v1"),  # the loopback rule (no key needed there)
    ("anthropic", "http://attacker.test\\@localhost:9"),
    ("azure", "https://attacker.test\\.openai.azure.com"),
    ("azure-anthropic", "https://attacker.test\\.services.ai.azure.com/anthropic"),
    ("agenthub", "http://attacker.test\\@127.0.0.1:8787"),
])
def test_every_route_refuses_it(client_type, url):
    with pytest.raises(ConfigError, match="refused"):
        AutoLLMClient("m", api_key="k-0123456789", base_url=url, client_type=client_type)
    with pytest.raises(ConfigError, match="refused"):
        AutoLLMClient("m", base_url=url, client_type=client_type)


def test_a_key_variable_never_follows_a_backslash_in_its_base_url_variable():
    with pytest.raises(ConfigError, match="OPENAI_BASE_URL refused"):
        resolve("gpt-5.5", environ={"OPENAI_API_KEY": "sk-0004", "OPENAI_BASE_URL": "https://attacker.test\\@api.openai.com/v1"})


@pytest.mark.parametrize("url", [
    "https://api.openai.com/v1", "http://127.0.0.1:8000/v1", "http://localhost:11434/v1", "https://[::1]:8443/x",
    "http://user:pa%40ss@127.0.0.1:9/v1", "https://bedrock-runtime.eu-west-1.amazonaws.com",
    "https://my_host.internal:4000", "https://aiplatform.googleapis.com/v1/projects/p/locations/global",
    "https://contoso.openai.azure.com/openai/v1/", "https://API.Example.COM./v1?x=1#frag", "http://10.0.0.7",
])
def test_on_the_urls_accepted_every_parser_sees_the_same_host(url):
    ours = trust.url_host(trust.check_base_url(url))
    theirs = urllib3.util.parse_url(url).host.strip("[]").lower()
    prepared = requests.Request("GET", url).prepare().url
    assert ours == theirs == urllib.parse.urlsplit(url).hostname == urllib3.util.parse_url(prepared).host.strip("[]").lower()


@pytest.mark.parametrize("text", ["attacker.test\\", "a b", "a@b", "[::1", "[nothost]", "host:99999", "h%2e", "",
                                  "x\r\nHost: y", "\u0131.example"])
def test_not_one_rfc_3986_host(text):
    assert trust.authority_host(text) == ""
    assert not trust.is_loopback_host(text)


def test_loopback_hosts():
    for host in ("localhost", "LOCALHOST:8080", "a.localhost", "127.0.0.1", "127.1.2.3:9", "::1", "[::1]", "[::1]:8"):
        assert trust.is_loopback_host(host), host
    for host in ("localhost.", "127.0.0.1.nip.io", "0.0.0.0", "example.com", "127.0.0.1\\@x"):
        assert not trust.is_loopback_host(host), host


def test_serve_reads_host_headers_and_bind_addresses_by_the_same_rule():
    assert app_server._host_name("LocalHost:8080") == "localhost"
    assert app_server._host_name("[::1]:9") == "[::1]"
    assert app_server._host_name("localhost\\@evil.test") == ""
    models = [{"id": "m", "model": "m", "client_type": "openai-chat", "base_url": "http://127.0.0.1:9/v1"}]
    with pytest.raises(ConfigError, match="allowed_hosts"):
        app_server.load_config({"models": models, "allowed_hosts": ["good.example", "bad\\host"]})
    app = app_server.make_app({"models": models, "allowed_hosts": ["localhost"]})
    with pytest.raises(Exception) as info:
        app._check_host({"HTTP_HOST": "localhost\\@evil.test"})
    assert getattr(info.value, "status", None) == 400
    with pytest.raises(ConfigError, match="needs keys"):  # a bind address that is not loopback, read the same way
        app_server.serve({"models": models}, host="127.0.0.1\\@0.0.0.0", port=0)


# -- issue 24 A7, host side ------------------------------------------------------------------------

import base64  # noqa: E402
import json  # noqa: E402

SONNET = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
SA_JSON = json.dumps({"type": "service_account", "project_id": "p-1", "private_key_id": "abc",
                      "private_key": "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0B\n-----END PRIVATE KEY-----\n",
                      "client_email": "a@p-1.iam.gserviceaccount.com"})


@pytest.mark.parametrize("model", [".", "..", "%2e%2e", "%2E", "tunedModels/..", "models/../../v1/files", " .. "])
@pytest.mark.parametrize("client_type, base_url", [
    ("gemini", "http://127.0.0.1:9"), ("bedrock", "http://127.0.0.1:9"), ("azure", "http://127.0.0.1:9"),
    ("openai-chat", "http://127.0.0.1:9/v1"), ("anthropic", "http://127.0.0.1:9"),
])
def test_dot_segments_in_a_model_id_are_refused(client_type, base_url, model):
    with pytest.raises(ConfigError, match="path segment"):
        AutoLLMClient(model, api_key="k-0123456789", base_url=base_url, client_type=client_type)


def test_model_ids_with_dots_inside_a_segment_still_route():
    for model in ("gemini-2.5-flash", "tunedModels/my.tune", "meta.llama3-3-70b-instruct-v1:0", "a..b", ".hidden"):
        AutoLLMClient(model, api_key="k-0123456789", base_url="http://127.0.0.1:9", client_type="gemini")


@pytest.mark.parametrize("text", [
    SA_JSON,
    base64.b64encode(SA_JSON.encode()).decode(),
    base64.urlsafe_b64encode(SA_JSON.encode()).decode().rstrip("="),
    base64.b64encode(b"-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----\n").decode(),
])
def test_a_service_account_json_in_the_bedrock_key_variable_or_base64_anywhere_is_not_sent(text):
    with pytest.raises(ConfigError) as info:
        resolve(SONNET, "bedrock", environ={"AWS_BEARER_TOKEN_BEDROCK": text, "AWS_REGION": "us-east-1"})
    assert "not sent" in str(info.value) and "MIIE" not in str(info.value) and text[:20] not in str(info.value)
    for client_type, env in (("bedrock", {"AWS_REGION": "us-east-1"}), ("openai-chat", {}), ("anthropic", {})):
        with pytest.raises(ConfigError, match="not sent"):
            resolve(SONNET if client_type == "bedrock" else "m", client_type, "http://127.0.0.1:9", api_key=text,
                    environ=env)
    with pytest.raises(ConfigError, match="not sent"):
        resolve("gpt-5.5", environ={"OPENAI_API_KEY": text})


def test_keys_that_happen_to_be_base64_still_go():
    for key in ("c2stcHJvai0wMTIzNDU2Nzg5YWJjZGVm", "ABSKQmVkcm9ja0FQSUtleS0wMTIzNDU2Nzg5", "sk-proj-0123456789abcdef"):
        assert resolve("m", "openai-chat", "http://127.0.0.1:9/v1", api_key=key, environ={})[2] == key


@pytest.mark.parametrize("name", ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"])
@pytest.mark.parametrize("bad", ["\r", "\n", "\r\n"])
def test_bedrock_environment_credentials_with_cr_or_lf_fail_at_construction(name, bad, monkeypatch):
    for variable in [v for v in list(__import__("os").environ) if v.startswith("AWS_")]:
        monkeypatch.delenv(variable)
    env = dict(AWS_ENV)
    env[name] = env[name] + bad
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    with pytest.raises(ConfigError) as info:
        AutoLLMClient(SONNET, client_type="bedrock")
    assert name in str(info.value) and env[name].strip() not in str(info.value)


def test_a_bedrock_key_with_cr_or_lf_fails_at_construction(monkeypatch):
    for variable in [v for v in list(__import__("os").environ) if v.startswith("AWS_")]:
        monkeypatch.delenv(variable)
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.setenv("AWS_BEARER_TOKEN_BEDROCK", "ABSKbedrock-key-0123\r\n")
    with pytest.raises(ConfigError, match="AWS_BEARER_TOKEN_BEDROCK holds"):
        AutoLLMClient(SONNET, client_type="bedrock")


def test_a_bedrock_key_goes_only_over_https_as_botocore_requires():
    botocore_auth = pytest.importorskip("botocore.auth")
    from botocore.awsrequest import AWSRequest
    from botocore.exceptions import InvalidEndpointConfigurationError
    from botocore.tokens import FrozenAuthToken

    signer = botocore_auth.BearerAuth(FrozenAuthToken("ABSK-key"))
    if "HTTPS" in __import__("inspect").getsource(botocore_auth.BearerAuth.add_auth):  # newer botocore (1.44.8 has it, 1.37.38 not yet)
        with pytest.raises(InvalidEndpointConfigurationError):  # the fact pinned: botocore refuses Bearer over http
            signer.add_auth(AWSRequest("POST", "http://bedrock.example.internal/model/x/converse-stream"))
    for url in ("http://bedrock.example.internal", "http://10.0.0.5:8080"):
        with pytest.raises(ConfigError, match="only over https"):
            resolve(SONNET, "bedrock", url, api_key="ABSK-key", environ={"AWS_REGION": "us-east-1"})
        with pytest.raises(ConfigError, match="only over https"):
            resolve(SONNET, "bedrock", url, api_key=lambda: "ABSK-key", environ={"AWS_REGION": "us-east-1"})
        with pytest.raises(ConfigError, match="only over https"):
            resolve(SONNET, "bedrock", environ={"AWS_REGION": "us-east-1", "AWS_BEARER_TOKEN_BEDROCK": "ABSK-key",
                                                "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": url})
    for url in ("https://bedrock.example.internal", "http://127.0.0.1:9"):  # TLS, or a local server
        assert resolve(SONNET, "bedrock", url, api_key="ABSK-key", environ={"AWS_REGION": "us-east-1"})[1] == url


def test_origins_and_server_handed_urls_are_read_by_the_same_rule():
    from agenthub.jobs.backends._wire import same_origin

    base = "https://api.openai.com/v1"
    assert same_origin("https://api.openai.com/v1/files/f-1/content", base)
    assert same_origin("https://API.openai.com:443/x", base)
    for hostile in ("https://attacker.test\\@api.openai.com/v1/files", "https://attacker.test\\.api.openai.com/x",
                    "https://a@b@api.openai.com/x", "http://api.openai.com/v1", "https://api.openai.com:8443/x"):
        assert not same_origin(hostile, base), hostile  # the key never follows such a URL
    assert app_server._same_origin("http://localhost:8787", "localhost:8787")
    assert app_server._same_origin("http://[::1]:8787", "[::1]:8787")
    for origin in ("http://attacker.test\\@localhost:8787", "http://localhost\\.attacker.test:8787",
                   "http://user@localhost:8787", "null", "http://localhost:8787/x"):
        assert not app_server._same_origin(origin, "localhost:8787"), origin


@pytest.mark.parametrize("url, named", [
    ("https://api.deepseek.com", "api.deepseek.com"), ("https://api.openai.com:443/v1", "api.openai.com"),
    ("http://gateway:80/v1", "gateway"), ("http://127.0.0.1:8000/v1", "127.0.0.1:8000"),
    ("https://gw.example.com:8443", "gw.example.com:8443"), ("http://[::1]:4000/v1", "[::1]:4000"),
    ("http://[::1]/v1", "::1"), ("not a url", "")])
def test_a_route_names_the_port_when_it_is_not_the_schemes(url, named):
    """Issue 29 C5: last_route / JobSummary.routes tell two gateways on one host apart (the breaker's key)."""
    assert trust.route_host(url) == named
