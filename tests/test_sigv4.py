"""SigV4 in the standard library (agenthub.aws) against botocore's signer; credentials, region, endpoints."""

import datetime
import pickle

import pytest

from agenthub.hosts import aws
from agenthub.hosts.aws import BedrockAuth, Credentials, credentials_from, region_from, resolve_bedrock, sign_v4
from agenthub.errors import ConfigError
import bedrock_frames as bf

pytest.importorskip("botocore.auth")

WHEN = datetime.datetime(2026, 12, 1, 9, 30, 5, tzinfo=datetime.timezone.utc)
STAMP = "20261201T093005Z"
AK, SK, TOKEN = "AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "FwoGZXIvYXdzEBYaDH+session/token=="
MODELS = ["us.anthropic.claude-sonnet-4-5-20250929-v1:0", "anthropic.claude-3-haiku-20240307-v1:0",
          "amazon.nova-pro-v1:0", "global.anthropic.claude-opus-4-5-20251101-v1:0", "meta.llama3-70b-instruct-v1:0",
          "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-3-7-sonnet-20250219-v1:0",
          "mistral.mistral-large-2407-v1:0", "weird id with spaces+plus~tilde"]


def _url(model, host="https://bedrock-runtime.us-east-1.amazonaws.com"):
    return host + "/model/" + aws.encode_path_segment(model) + "/converse-stream"


def test_model_ids_are_path_encoded_as_botocore_encodes_uri_labels():
    from botocore.utils import percent_encode

    for model in MODELS:
        assert aws.encode_path_segment(model) == percent_encode(model)
    assert aws.encode_path_segment(MODELS[0]) == "us.anthropic.claude-sonnet-4-5-20250929-v1%3A0"
    assert "%2F" in aws.encode_path_segment(MODELS[5])


@pytest.mark.parametrize("token", [None, TOKEN], ids=["no-token", "session-token"])
@pytest.mark.parametrize("model", MODELS)
def test_signature_equals_botocore_sigv4auth(model, token):
    url = _url(model)
    body = '{"messages":[{"role":"user","content":[{"text":"h\u00e9llo  w\u00f6rld"}]}]}'.encode("utf-8")
    headers = {"Content-Type": "application/json", "Accept": "application/vnd.amazon.eventstream",
               "X-Custom": "  two   spaces  "}
    ours = sign_v4("POST", url, headers, body, Credentials(AK, SK, token), "us-east-1", "bedrock", WHEN)
    theirs = bf.botocore_sign("POST", url, headers, body, AK, SK, token, "us-east-1", STAMP)
    assert ours["Authorization"] == theirs["Authorization"]
    assert ours["X-Amz-Date"] == theirs["X-Amz-Date"] == STAMP
    assert ours.get("X-Amz-Security-Token") == theirs.get("X-Amz-Security-Token") == token
    assert ours["Authorization"].startswith(
        "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20261201/us-east-1/bedrock/aws4_request, SignedHeaders=accept;"
        "content-type;host;x-amz-date;{}x-custom, Signature=".format("x-amz-security-token;" if token else ""))
    ok, access_key, region = bf.verify_sigv4("POST", url, ours, body, SK)
    assert (ok, access_key, region) == (True, AK, "us-east-1")


def test_the_path_is_signed_double_encoded():
    text, names = aws.canonical_request("POST", _url(MODELS[0]), {"Host": "h"}, b"")
    assert text.splitlines()[1] == "/model/us.anthropic.claude-sonnet-4-5-20250929-v1%253A0/converse-stream"
    assert names == "host"


@pytest.mark.parametrize("url", [
    "http://127.0.0.1:8123/model/m/converse-stream",
    "https://[::1]:9443/model/m/converse-stream",
    "https://bedrock-runtime.eu-west-1.amazonaws.com:443/model/m/converse-stream",
    "https://example.com/a/./b/../c//converse-stream?b=2&a=1&a=0&x=%2F",
])
def test_hosts_ports_dot_segments_and_query_sign_as_botocore(url):
    body = b"{}"
    ours = sign_v4("POST", url, {"Content-Type": "application/json"}, body, Credentials(AK, SK), "eu-west-1",
                   when=WHEN)
    theirs = bf.botocore_sign("POST", url, {"Content-Type": "application/json"}, body, AK, SK, None, "eu-west-1",
                              STAMP)
    assert ours["Authorization"] == theirs["Authorization"]


def test_any_change_to_the_body_or_a_header_breaks_the_signature():
    url = _url(MODELS[0])
    signed = sign_v4("POST", url, {"Content-Type": "application/json"}, b'{"a":1}', Credentials(AK, SK),
                     "us-east-1", when=WHEN)
    assert bf.verify_sigv4("POST", url, signed, b'{"a":1}', SK)[0]
    assert not bf.verify_sigv4("POST", url, signed, b'{"a":2}', SK)[0]
    assert not bf.verify_sigv4("POST", url, dict(signed, **{"Content-Type": "text/plain"}), b'{"a":1}', SK)[0]
    assert not bf.verify_sigv4("POST", url, signed, b'{"a":1}', SK + "x")[0]


def test_resigning_replaces_the_old_signature_and_date():
    url = _url(MODELS[0])
    first = sign_v4("POST", url, {}, b"", Credentials(AK, SK, TOKEN), "us-east-1", when=WHEN)
    later = WHEN + datetime.timedelta(seconds=30)
    again = sign_v4("POST", url, first, b"", Credentials(AK, SK, TOKEN), "us-east-1", when=later)
    assert again["X-Amz-Date"] == "20261201T093035Z"
    assert again["Authorization"] != first["Authorization"]
    assert bf.verify_sigv4("POST", url, again, b"", SK)[0]
    assert sum(1 for k in again if k.lower() == "authorization") == 1


def test_secrets_never_in_reprs_or_pickled_reprs():
    creds = Credentials(AK, SK, TOKEN, "environment")
    auth = BedrockAuth("sigv4", credentials=creds, region="us-east-1")
    for text in (repr(creds), repr(auth), repr(pickle.loads(pickle.dumps(auth)))):
        assert SK not in text and TOKEN not in text and AK not in text
    assert repr(BedrockAuth("bearer", token="ABSKsecretvalue")) == "BedrockAuth(bearer, token='***')"
    assert pickle.loads(pickle.dumps(creds)) == creds
    assert sorted(auth.secrets()) == sorted([SK, TOKEN])


# -- credentials, region, endpoint ---------------------------------------------------------------------


def _home(tmp_path, credentials=None, config=None):
    aws_dir = tmp_path / ".aws"
    aws_dir.mkdir(exist_ok=True)
    if credentials is not None:
        (aws_dir / "credentials").write_text(credentials)
    if config is not None:
        (aws_dir / "config").write_text(config)
    return {"HOME": str(tmp_path)}


def test_environment_credentials_first(tmp_path):
    env = dict(_home(tmp_path, "[default]\naws_access_key_id = FILEKEY\naws_secret_access_key = FILESECRET\n"),
               AWS_ACCESS_KEY_ID=AK, AWS_SECRET_ACCESS_KEY=SK, AWS_SESSION_TOKEN=TOKEN)
    assert credentials_from(env) == Credentials(AK, SK, TOKEN)
    assert credentials_from(env).source == "environment"
    with pytest.raises(ConfigError) as info:
        credentials_from({"AWS_ACCESS_KEY_ID": AK, "HOME": str(tmp_path)})
    assert "AWS_SECRET_ACCESS_KEY is not set" in str(info.value) and AK not in str(info.value)


def test_shared_files_profiles_and_their_variables(tmp_path):
    env = _home(tmp_path,
                "[default]\naws_access_key_id = K1\naws_secret_access_key = S1\n\n"
                "[work]\naws_access_key_id = K2\naws_secret_access_key = S2\naws_session_token = T2\n",
                "[default]\nregion = eu-west-3\n\n[profile work]\nregion = ap-south-1\n\n"
                "[profile cfgonly]\naws_access_key_id = K3\naws_secret_access_key = S3\nregion = us-west-2\n")
    assert credentials_from(env) == Credentials("K1", "S1")
    assert region_from(env) == "eu-west-3"
    work = dict(env, AWS_PROFILE="work")
    assert credentials_from(work) == Credentials("K2", "S2", "T2")
    assert credentials_from(work).source == "credentials file (profile work)"
    assert region_from(work) == "ap-south-1"
    assert region_from(dict(work, AWS_DEFAULT_REGION="sa-east-1")) == "sa-east-1"
    assert region_from(dict(work, AWS_DEFAULT_REGION="sa-east-1", AWS_REGION="ca-central-1")) == "ca-central-1"
    cfg = dict(env, AWS_DEFAULT_PROFILE="cfgonly")
    assert credentials_from(cfg) == Credentials("K3", "S3") and region_from(cfg) == "us-west-2"
    other = tmp_path / "elsewhere"
    other.write_text("[default]\naws_access_key_id = K4\naws_secret_access_key = S4\n")
    cfgfile = tmp_path / "cfg"
    cfgfile.write_text("[default]\nregion = me-south-1\n")
    moved = dict(env, AWS_SHARED_CREDENTIALS_FILE=str(other), AWS_CONFIG_FILE=str(cfgfile))
    assert credentials_from(moved) == Credentials("K4", "S4") and region_from(moved) == "me-south-1"
    assert credentials_from({"HOME": str(tmp_path / "nothing")}) is None
    with pytest.raises(ConfigError) as info:
        credentials_from(dict(env, AWS_PROFILE="missing"))
    assert "'missing' is in neither" in str(info.value)


@pytest.mark.parametrize("text, problem", [
    ("[default]\naws_access_key_id = AKIDEXAMPLE\naws_secret_access_key = {sk}\naws_secret_access_key = {sk}\n",
     "line 4: an option repeated in the section [default]"),
    ("[default]\naws_access_key_id = AKIDEXAMPLE\n[default]\naws_secret_access_key = {sk}\n",
     "line 3: the section [default] appears twice"),
    ("aws_secret_access_key = {sk}\n[default]\n", "line 1: a line before any [section]"),
    ("[default]\naws_access_key_id = AKIDEXAMPLE\n{sk}\n", "line 3: a line that is neither a [section] nor name = value"),
    (b"[default]\naws_secret_access_key = \xff{sk}\n", "it is not UTF-8"),
], ids=["repeated-option", "repeated-section", "before-any-section", "stray-line", "not-utf-8"])
def test_a_malformed_credentials_file_names_the_file_and_the_line_never_the_secret(tmp_path, text, problem):
    home = _home(tmp_path)
    path = tmp_path / ".aws" / "credentials"
    if isinstance(text, bytes):
        path.write_bytes(text.replace(b"{sk}", SK.encode()))
    else:
        path.write_text(text.format(sk=SK))
    with pytest.raises(ConfigError) as info:
        credentials_from(home)
    assert str(info.value) == "cannot read the AWS file {}: {}".format(path, problem)
    assert info.value.__cause__ is None and info.value.__suppress_context__


def test_profiles_agenthub_cannot_resolve_say_how_to_export(tmp_path):
    env = dict(_home(tmp_path, "", "[profile sso]\nsso_session = corp\nsso_account_id = 1\nregion = us-east-1\n"),
               AWS_PROFILE="sso")
    with pytest.raises(ConfigError) as info:
        credentials_from(env)
    assert "sso_session" in str(info.value) and "export-credentials" in str(info.value)


def test_resolve_default_endpoint_from_the_region_and_sigv4(tmp_path):
    env = dict(_home(tmp_path), AWS_ACCESS_KEY_ID=AK, AWS_SECRET_ACCESS_KEY=SK, AWS_REGION="eu-central-1")
    url, auth = resolve_bedrock(environ=env)
    assert url == "https://bedrock-runtime.eu-central-1.amazonaws.com"
    assert (auth.kind, auth.region, auth.credentials) == ("sigv4", "eu-central-1", Credentials(AK, SK))
    assert resolve_bedrock(environ=dict(env, AWS_REGION="cn-north-1"))[0] == \
        "https://bedrock-runtime.cn-north-1.amazonaws.com.cn"
    with pytest.raises(ConfigError) as info:
        resolve_bedrock(environ=dict(_home(tmp_path), AWS_ACCESS_KEY_ID=AK, AWS_SECRET_ACCESS_KEY=SK))
    assert "AWS_REGION" in str(info.value)
    with pytest.raises(ConfigError) as info:
        resolve_bedrock(environ=dict(_home(tmp_path), AWS_REGION="us-east-1"))
    assert "no AWS credentials" in str(info.value) and "AWS_BEARER_TOKEN_BEDROCK" in str(info.value)


@pytest.mark.parametrize("region", ["us-east-1", "cn-north-1", "us-gov-west-1", "us-iso-east-1", "us-isob-east-1",
                                    "us-isof-south-1", "eu-isoe-west-1", "eusc-de-east-1"])
def test_each_partitions_endpoint_is_botocores_and_its_host_is_trusted(tmp_path, region):
    """The default endpoint is in the region's partition (its DNS suffix: amazonaws.com.cn, c2s.ic.gov,
    amazonaws.eu, ...), as botocore resolves it; that host gets the credentials and names its region."""
    import botocore.session

    expected = botocore.session.get_session().create_client(
        "bedrock-runtime", region_name=region, aws_access_key_id=AK, aws_secret_access_key=SK).meta.endpoint_url
    assert aws.default_endpoint(region) == expected
    assert aws.is_aws_host(expected) and aws.region_from_host(expected) == region
    env = dict(_home(tmp_path), AWS_ACCESS_KEY_ID=AK, AWS_SECRET_ACCESS_KEY=SK, AWS_REGION=region)
    url, auth = resolve_bedrock(environ=env)
    assert (url, auth.kind, auth.region) == (expected, "sigv4", region)
    url, auth = resolve_bedrock(base_url=expected, environ=dict(env, AWS_REGION="us-west-2"))
    assert (url, auth.kind, auth.region) == (expected, "sigv4", region)


def test_resolve_bearer_token_wins_over_sigv4_and_is_sent_without_signature(tmp_path):
    env = dict(_home(tmp_path), AWS_ACCESS_KEY_ID=AK, AWS_SECRET_ACCESS_KEY=SK, AWS_REGION="us-west-2",
               AWS_BEARER_TOKEN_BEDROCK="ABSKbedrockapikey")
    url, auth = resolve_bedrock(environ=env)
    assert (url, auth.kind, auth.token) == ("https://bedrock-runtime.us-west-2.amazonaws.com", "bearer",
                                            "ABSKbedrockapikey")
    headers = auth.apply("POST", url + "/model/m/converse-stream", {"Content-Type": "application/json"}, b"{}")
    assert headers == {"Content-Type": "application/json", "Authorization": "Bearer ABSKbedrockapikey"}
    url, auth = resolve_bedrock(api_key="ABSKexplicit", environ=env)
    assert (auth.kind, auth.token) == ("bearer", "ABSKexplicit")


def test_endpoint_variables_and_the_credential_rule(tmp_path):
    env = dict(_home(tmp_path), AWS_ACCESS_KEY_ID=AK, AWS_SECRET_ACCESS_KEY=SK, AWS_REGION="us-east-1")
    url, auth = resolve_bedrock(environ=dict(env, AWS_ENDPOINT_URL="http://127.0.0.1:4566/"))
    assert (url, auth.kind) == ("http://127.0.0.1:4566", "sigv4")
    both = dict(env, AWS_ENDPOINT_URL="https://a.example", AWS_ENDPOINT_URL_BEDROCK_RUNTIME="https://b.example")
    assert resolve_bedrock(environ=both)[0] == "https://b.example"
    assert resolve_bedrock(base_url="https://b.example", environ=both)[1].kind == "sigv4"  # the variable's own
    # an AWS host given as base_url: credentials go, signed for the region its name says
    url, auth = resolve_bedrock(base_url="https://bedrock-runtime.ap-northeast-1.amazonaws.com", environ=env)
    assert (auth.kind, auth.region) == ("sigv4", "ap-northeast-1")
    vpce = "https://vpce-0abc-xyz.bedrock-runtime.eu-west-2.vpce.amazonaws.com"
    assert resolve_bedrock(base_url=vpce, environ=env)[1].region == "eu-west-2"
    # anywhere else: environment credentials never go
    for variables in (env, dict(env, AWS_BEARER_TOKEN_BEDROCK="ABSKbedrockapikey")):
        with pytest.raises(ConfigError) as info:
            resolve_bedrock(base_url="https://gateway.example.com", environ=variables)
        assert "api_key is required" in str(info.value)
        assert SK not in str(info.value) and "ABSK" not in str(info.value)
    url, auth = resolve_bedrock(base_url="https://gateway.example.com", api_key="gwkey", environ=env)
    assert (url, auth.kind, auth.token) == ("https://gateway.example.com", "bearer", "gwkey")
    url, auth = resolve_bedrock(base_url="http://localhost:8000", environ=env)
    assert (url, auth.kind) == ("http://localhost:8000", "none")
    assert auth.apply("POST", url, {"Authorization": "x"}, b"") == {"Authorization": "x"}  # the caller's, as set
    with pytest.raises(ConfigError):
        resolve_bedrock(base_url="ftp://x", environ=env)


@pytest.mark.parametrize("where", ["base_url", "AWS_ENDPOINT_URL_BEDROCK_RUNTIME", "AWS_ENDPOINT_URL"])
@pytest.mark.parametrize("endpoint", ["https://bedrock-runtime.us-east-1.amazonaws.com/gw?tenant=a",
                                      "https://bedrock-runtime.us-east-1.amazonaws.com/gw?",
                                      "https://bedrock-runtime.us-east-1.amazonaws.com/gw#eu"],
                         ids=["query", "empty-query", "fragment"])
def test_an_endpoint_with_a_query_or_a_fragment_is_refused_before_anything_is_sent(tmp_path, where, endpoint):
    """The model's path is appended to the endpoint: after a ``?`` it would be the query (the request would
    go to the endpoint's root, signed for another path), after a ``#`` it would never be sent at all."""
    env = dict(_home(tmp_path), AWS_ACCESS_KEY_ID=AK, AWS_SECRET_ACCESS_KEY=SK, AWS_REGION="us-east-1")
    if where != "base_url":
        env[where] = endpoint
    with pytest.raises(ConfigError) as info:
        resolve_bedrock(base_url=endpoint if where == "base_url" else None, environ=env)
    assert str(info.value) == ("{} takes no query string or fragment: the request's path is appended to it (got "
                               "'bedrock-runtime.us-east-1.amazonaws.com')".format(where))


def test_an_endpoint_is_kept_in_the_form_requests_sends_it(tmp_path):
    env = dict(_home(tmp_path), AWS_ACCESS_KEY_ID=AK, AWS_SECRET_ACCESS_KEY=SK, AWS_REGION="us-east-1")
    url, _ = resolve_bedrock(base_url="https://bedrock-runtime.us-east-1.amazonaws.com/gw/50%off/caf\u00e9/",
                             environ=env)
    assert url == "https://bedrock-runtime.us-east-1.amazonaws.com/gw/50%25off/caf%C3%A9"


def test_explicit_credentials_object_as_api_key(tmp_path):
    env = dict(_home(tmp_path), AWS_REGION="us-east-2")
    url, auth = resolve_bedrock(api_key=Credentials(AK, SK), environ=env)
    assert (url, auth.kind, auth.region) == ("https://bedrock-runtime.us-east-2.amazonaws.com", "sigv4", "us-east-2")
    url, auth = resolve_bedrock(base_url="https://proxy.example", api_key=Credentials(AK, SK), environ=env)
    assert (url, auth.kind) == ("https://proxy.example", "sigv4")


@pytest.mark.parametrize("token", [b"FwoGZXIvYXdzEBYa", 12345, ["FwoG"]], ids=["bytes", "int", "list"])
def test_a_session_token_that_is_not_a_string_is_refused_not_dropped(token):
    """Signed without it the request is a 403 (the temporary key needs its token): a ConfigError instead."""
    with pytest.raises(ConfigError) as info:
        Credentials(AK, SK, token)
    assert str(info.value) == "the AWS session token must be a string (got {})".format(type(token).__name__)
    assert Credentials(AK, SK, "").token is None and Credentials(AK, SK, None).token is None


def test_a_token_provider_is_asked_once_per_request(tmp_path):
    tokens = iter(["ABSKfirst-token-0001", "ABSKsecond-token-0002"])
    url, auth = resolve_bedrock(api_key=lambda: next(tokens), environ=dict(_home(tmp_path), AWS_REGION="us-east-1"))
    assert auth.kind == "bearer" and "ABSK" not in repr(auth)
    assert auth.apply("POST", url, {}, b"")["Authorization"] == "Bearer ABSKfirst-token-0001"
    assert auth.apply("POST", url, {}, b"")["Authorization"] == "Bearer ABSKsecond-token-0002"
    with pytest.raises(ConfigError):
        resolve_bedrock(api_key=b"bytes", environ=dict(_home(tmp_path), AWS_REGION="us-east-1"))


def test_the_documented_module_names_are_the_hosts_modules():
    import agenthub.aws
    import agenthub.gcp
    import agenthub.hosts.aws
    import agenthub.hosts.gcp
    from agenthub import gcp
    from agenthub.aws import Credentials

    assert agenthub.aws is agenthub.hosts.aws and agenthub.gcp is agenthub.hosts.gcp is gcp
    assert Credentials is agenthub.hosts.aws.Credentials
