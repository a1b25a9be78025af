"""Bedrock end to end: AutoLLMClient against a local Bedrock (tests/bedrock_server.py) that checks every
request's SigV4 signature with botocore and answers in event-stream frames.

Stateless and stateful turns, reasoning + a tool call and the tool round trip, Bedrock API keys, exception
frames, HTTP errors, a bad CRC, a cut body, one byte per chunk, retries signed afresh, a whole JSON answer.
"""

import base64
import json
import os

import pytest

from agenthub import AutoLLMClient, check_stream, collect
from agenthub.errors import (AuthenticationError, ConfigError, RateLimitError, ServerError, StreamProtocolError,
                             UpstreamError)
import bedrock_frames as bf
from bedrock_server import BedrockServer, Reply, frames_reply

pytest.importorskip("botocore.auth")

MODEL = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
AK, SK, TOKEN = "AKIAEXAMPLE0001", "local/secret+key/0002", "IQoJb3JpZ2luX2VjEXAMPLE//token=="
USER = {"role": "user", "content_items": [{"type": "text", "text": "Weather in Paris?"}]}
TOOLS = [{"name": "get_weather", "description": "Current weather.",
          "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}]


@pytest.fixture
def aws_env(monkeypatch, tmp_path):
    for name in list(os.environ):
        if name.startswith("AWS_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("AWS_REGION", "us-west-2")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", AK)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SK)
    monkeypatch.setenv("AWS_SESSION_TOKEN", TOKEN)
    return monkeypatch


@pytest.fixture
def server(aws_env):
    with BedrockServer(secret_key=SK, bearer="ABSKbedrock-api-key-0003") as srv:
        aws_env.setenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", srv.url)
        yield srv


def client(**kwargs):
    kwargs.setdefault("max_retries", 0)
    return AutoLLMClient(MODEL, client_type="bedrock", **kwargs)


def deltas(events):
    return [i for e in events for i in e["content_items"]]


def test_text_turn_signed_with_sigv4_and_the_session_token(server):
    server.answer.append(frames_reply(bf.text_stream("Hello", " there", input_tokens=9, output_tokens=2)))
    events = list(client().streaming_response([USER], {"max_tokens": 50}))
    check_stream(events)
    assert deltas(events) == [{"type": "text", "text": "Hello"}, {"type": "text", "text": " there"}]
    assert events[-1]["usage_metadata"] == {"cached_tokens": None, "prompt_tokens": 9, "thoughts_tokens": None,
                                            "response_tokens": 2}
    [request] = server.requests
    assert request["auth"] == {"kind": "sigv4", "ok": True, "access_key": AK, "region": "us-west-2"}
    assert request["path"] == "/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse-stream"
    assert request["headers"]["X-Amz-Security-Token"] == TOKEN
    assert request["headers"]["Accept"] == "application/vnd.amazon.eventstream"
    assert request["raw"] == json.dumps(request["body"], ensure_ascii=False, separators=(",", ":")).encode()
    assert request["body"]["messages"] == [{"role": "user", "content": [
        {"text": "Weather in Paris?"}, {"cachePoint": {"type": "default"}}]}]
    assert request["body"]["inferenceConfig"] == {"maxTokens": 50}


def test_bedrock_api_key_is_sent_as_bearer_without_a_signature(server, aws_env):
    aws_env.setenv("AWS_BEARER_TOKEN_BEDROCK", "ABSKbedrock-api-key-0003")
    events = list(client().streaming_response([USER]))
    assert deltas(events) == [{"type": "text", "text": "ok"}]
    [request] = server.requests
    assert request["auth"] == {"kind": "bearer", "ok": True, "token": "ABSKbedrock-api-key-0003"}
    assert "X-Amz-Date" not in request["headers"] and "X-Amz-Security-Token" not in request["headers"]


def test_a_wrong_secret_is_refused_by_the_server_as_an_authentication_error(server, aws_env):
    aws_env.setenv("AWS_SECRET_ACCESS_KEY", "not-the-right-secret")
    with pytest.raises(AuthenticationError) as info:
        list(client().streaming_response([USER]))
    error = info.value
    assert (error.status, error.error_type, error.request_id) == (403, "InvalidSignatureException", "req-403")
    assert "not-the-right-secret" not in str(error) and TOKEN not in str(error)


@pytest.mark.parametrize("prefix, sent", [
    ("/gw/caf\u00e9", "/gw/caf%C3%A9"),             # a non-ASCII letter: requests sends it UTF-8 percent-encoded
    ("/gw/[eu]", "/gw/%5Beu%5D"),                  # brackets: percent-encoded on the wire
    ("/gw/50%off", "/gw/50%25off"),                # a lone %: requests escapes it (and so every other % too)
    ("/gw/%7Euser/%41", "/gw/~user/A"),            # an escaped unreserved character: sent plain
], ids=["non-ascii", "brackets", "lone-percent", "escaped-unreserved"])
def test_an_endpoint_path_requests_requotes_is_signed_as_it_is_sent(server, aws_env, prefix, sent):
    """The signature covers the path the server receives: requests re-quotes a URL before it sends it, so
    the canonical request is made from that form (signing the URL as written was a 403 from AWS)."""
    aws_env.setenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", server.url + prefix)
    events = list(client().streaming_response([USER]))
    assert deltas(events) == [{"type": "text", "text": "ok"}]
    [request] = server.requests
    assert request["path"] == sent + "/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse-stream"
    assert request["auth"] == {"kind": "sigv4", "ok": True, "access_key": AK, "region": "us-west-2"}


@pytest.mark.parametrize("default_headers, extra_headers, what", [
    ({"X-Tenant": "a", "x-tenant": "b"}, {}, "default_headers"),
    ({}, {"X-Tenant": "a", "x-tenant": "b"}, "config['extra_headers']"),
])
def test_a_header_named_twice_in_two_cases_is_refused_before_anything_is_sent(server, default_headers, extra_headers,
                                                                              what):
    """HTTP header names are case-insensitive: requests sends one of the two values (the last), while the
    signature covered both (a 403, and a value silently dropped on every other route)."""
    with pytest.raises(ConfigError) as info:
        list(client(default_headers=default_headers).streaming_response([USER], {"extra_headers": extra_headers}))
    assert str(info.value) == ("{} names the header 'x-tenant' twice ('X-Tenant' and 'x-tenant'): header names are "
                               "case-insensitive, so only one would be sent".format(what))
    assert server.requests == []


def test_an_authorization_header_the_caller_set_is_sent_as_every_other_route_sends_it(server, aws_env):
    """A local Bedrock-speaking gateway without AWS credentials, or a Bedrock API key beside a header of the
    caller's: the caller's Authorization goes as it is (as on the openai, anthropic, gemini, azure and
    vertex hosts), where it was dropped (no credentials) or replaced by the key."""
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL_BEDROCK_RUNTIME"):
        aws_env.delenv(name)
    server.enforce = False
    list(client(base_url=server.url, default_headers={"Authorization": "Bearer gateway-key-0004"})
         .streaming_response([USER]))
    list(client(base_url=server.url, api_key="ABSKbedrock-api-key-0003").streaming_response(
        [USER], {"extra_headers": {"authorization": "Bearer gateway-key-0005"}}))
    list(client(base_url=server.url).streaming_response([USER]))
    assert [{k: v for k, v in request["headers"].items() if k.lower() == "authorization"}
            for request in server.requests] == [{"Authorization": "Bearer gateway-key-0004"},
                                                {"authorization": "Bearer gateway-key-0005"}, {}]


@pytest.mark.parametrize("default_headers, extra_headers, what, name", [
    ({"Authorization": "Bearer gateway-key-0006"}, {}, "default_headers", "Authorization"),
    ({}, {"authorization": "Bearer gateway-key-0007"}, "config['extra_headers']", "authorization"),
    ({}, {"X-Amz-Date": "20260101T000000Z"}, "config['extra_headers']", "X-Amz-Date"),
    ({"x-amz-security-token": "caller-token-0008"}, {}, "default_headers", "x-amz-security-token"),
    ({}, {"Host": "gateway.example"}, "config['extra_headers']", "Host"),
], ids=["default-authorization", "extra-authorization", "amz-date", "security-token", "host"])
def test_a_header_the_sigv4_signature_writes_is_refused_before_anything_is_sent(server, default_headers,
                                                                                extra_headers, what, name):
    """Under SigV4 the signature writes Authorization, X-Amz-Date, X-Amz-Security-Token and Host: a caller's
    value under one of those names was replaced silently (never sent); it is a ConfigError naming the header,
    never its value."""
    with pytest.raises(ConfigError) as info:
        list(client(default_headers=default_headers).streaming_response([USER], {"extra_headers": extra_headers}))
    assert str(info.value) == (
        "{} sets {!r}, which this Bedrock client's SigV4 signature writes itself: it would be replaced, never sent. "
        "Leave it out (a gateway that takes its own Authorization is reached with api_key= set to its key, or "
        "without AWS credentials)".format(what, name))
    assert server.requests == []


def test_a_sessions_authorization_is_refused_under_sigv4_too(server):
    """requests adds a session's headers under the request's own: the signature's Authorization replaced the
    session's silently."""
    import requests

    session = requests.Session()
    session.headers["Authorization"] = "Bearer gateway-key-0009"
    try:
        with pytest.raises(ConfigError) as info:
            client(session=session)
        assert str(info.value).startswith("session.headers sets 'Authorization', which this Bedrock client's SigV4 "
                                          "signature writes itself")
        assert "gateway-key-0009" not in str(info.value)
        del session.headers["Authorization"]
        assert deltas(list(client(session=session).streaming_response([USER]))) == [{"type": "text", "text": "ok"}]
    finally:
        session.close()
    assert [request["auth"]["kind"] for request in server.requests] == ["sigv4"]


REASONING_AND_TOOL = [
    bf.message_start(),
    bf.reasoning_delta(0, text="Paris weather: "), bf.reasoning_delta(0, text="call the tool."),
    bf.reasoning_delta(0, signature="ErUBCkYIBBgCIkB0c2lnbmF0dXJl"), bf.block_stop(0),
    bf.reasoning_delta(1, redacted=b"\x8f\x00opaque"), bf.block_stop(1),
    bf.text_delta("Checking.", 2), bf.block_stop(2),
    bf.tool_start("tooluse_P4r1s", "get_weather", 3),
    bf.tool_delta('{"city":', 3), bf.tool_delta(' "Paris"}', 3), bf.block_stop(3),
    bf.message_stop("tool_use"),
    bf.metadata(input_tokens=30, output_tokens=60, cache_write=2000),
]


def test_stateful_reasoning_tool_call_and_the_round_trip(server):
    def answer(request):
        messages = request["body"]["messages"]
        if len(messages) == 1:
            return frames_reply(REASONING_AND_TOOL)
        return frames_reply(bf.text_stream("It is 18 C and sunny in Paris.", input_tokens=40, output_tokens=12,
                                           cache_read=2000))

    server.answer = answer
    agent = client()
    calls = []
    events = list(agent.streaming_response_stateful(USER, {"tools": TOOLS, "thinking_level": "low"}))
    check_stream(events)
    for item in deltas(events):
        if item["type"] == "tool_call":
            calls.append(item)
    assert calls == [{"type": "tool_call", "name": "get_weather", "arguments": {"city": "Paris"},
                      "tool_call_id": "tooluse_P4r1s"}]
    assert events[-1]["finish_reason"] == "tool_call"
    assert events[-1]["usage_metadata"]["prompt_tokens"] == 2030
    first = server.requests[0]["body"]
    assert first["additionalModelRequestFields"] == {"thinking": {"type": "enabled", "budget_tokens": 1024},
                                                     "anthropic_beta": ["interleaved-thinking-2025-05-14"]}
    result = {"role": "user", "content_items": [{"type": "tool_result", "tool_call_id": "tooluse_P4r1s",
                                                 "text": "18 C, sunny"}]}
    events = list(agent.streaming_response_stateful(result, {"tools": TOOLS, "thinking_level": "low"}))
    assert "".join(i["text"] for i in deltas(events)) == "It is 18 C and sunny in Paris."
    assert events[-1]["usage_metadata"]["cached_tokens"] == 2000
    second = server.requests[1]
    assert second["auth"]["ok"] is True
    assert second["body"]["messages"][1] == {"role": "assistant", "content": [
        {"reasoningContent": {"reasoningText": {"text": "Paris weather: call the tool.",
                                                "signature": "ErUBCkYIBBgCIkB0c2lnbmF0dXJl"}}},
        {"reasoningContent": {"redactedContent": base64.b64encode(b"\x8f\x00opaque").decode()}},
        {"text": "Checking."},
        {"toolUse": {"toolUseId": "tooluse_P4r1s", "name": "get_weather", "input": {"city": "Paris"}}}]}
    assert second["body"]["messages"][2] == {"role": "user", "content": [
        {"toolResult": {"toolUseId": "tooluse_P4r1s", "content": [{"text": "18 C, sunny"}]}},
        {"cachePoint": {"type": "default"}}]}
    history = agent.get_history()
    assert len(history) == 4 and history[3]["finish_reason"] == "stop"


def test_one_byte_per_chunk_gives_the_same_events(server):
    server.answer.append(frames_reply(REASONING_AND_TOOL))
    server.answer.append(frames_reply(REASONING_AND_TOOL, split=1))
    whole = list(client().streaming_response([USER], {"tools": TOOLS}))
    split = list(client().streaming_response([USER], {"tools": TOOLS}))
    strip = lambda events: [{k: v for k, v in e.items() if k != "created_at"} for e in events]  # noqa: E731
    assert strip(split) == strip(whole)
    assert collect(split)["content_items"][0]["fidelity"] == {"signature": "ErUBCkYIBBgCIkB0c2lnbmF0dXJl"}


@pytest.mark.parametrize("kind, cls, status", [
    ("validationException", UpstreamError, 400),
    ("throttlingException", RateLimitError, 429),
    ("modelStreamErrorException", ServerError, 424),
    ("serviceUnavailableException", ServerError, 503),
    ("accessDeniedException", AuthenticationError, 403),
])
def test_exception_frames_after_content(server, kind, cls, status):
    frames = [bf.message_start(), bf.text_delta("Part"), bf.exception(kind, "stream failed: " + kind)]
    server.answer.append(frames_reply(frames))
    seen = []
    with pytest.raises(UpstreamError) as info:
        for event in client(max_retries=2).streaming_response([USER]):
            seen.append(event)
    assert type(info.value) is cls and info.value.status == status and info.value.error_type == kind
    assert deltas(seen) == [{"type": "text", "text": "Part"}]
    assert len(server.requests) == 1  # content reached the caller: never restarted


def test_throttling_before_any_content_is_retried_and_each_attempt_signed(server):
    server.answer.append(frames_reply([bf.message_start(), bf.exception("throttlingException", "Too many requests")]))
    server.answer.append(frames_reply(bf.text_stream("fine")))
    events = list(client(max_retries=2).streaming_response([USER]))
    assert deltas(events) == [{"type": "text", "text": "fine"}]
    assert [r["auth"]["ok"] for r in server.requests] == [True, True]


def test_http_errors_map_by_status_and_error_type(server):
    server.answer.append(Reply([b'{"message":"The provided model identifier is invalid."}'], status=400,
                               headers={"Content-Type": "application/json",
                                        "x-amzn-ErrorType": "ValidationException:http://internal.amazon.com/coral/",
                                        "x-amzn-RequestId": "a1b2"}))
    with pytest.raises(UpstreamError) as info:
        list(client().streaming_response([USER]))
    error = info.value
    assert (type(error), error.status, error.error_type, error.message, error.request_id, error.retryable) == (
        UpstreamError, 400, "ValidationException", "The provided model identifier is invalid.", "a1b2", False)
    server.answer.append(Reply([b'{"message":"Too many tokens, please wait before trying again."}'], status=429,
                               headers={"Content-Type": "application/json",
                                        "x-amzn-ErrorType": "ThrottlingException"}))
    with pytest.raises(RateLimitError) as info:
        list(client().streaming_response([USER]))
    assert info.value.error_type == "ThrottlingException" and info.value.retryable is True
    server.answer.append(Reply([b'{"message":"Model not found"}'], status=404, headers={
        "Content-Type": "application/json", "x-amzn-ErrorType": "com.amazon.coral#ResourceNotFoundException"}))
    with pytest.raises(UpstreamError) as info:
        list(client().streaming_response([USER]))
    assert (info.value.status, info.value.error_type) == (404, "ResourceNotFoundException")


def test_a_bad_crc_and_a_cut_body_are_stream_protocol_errors(server):
    frames = bf.text_stream("hello", "world")
    frames[2] = bf.corrupt(frames[2], "payload")
    server.answer.append(frames_reply(frames))
    with pytest.raises(StreamProtocolError, match="CRC32"):
        list(client().streaming_response([USER]))
    data = b"".join(bf.text_stream("hello"))
    server.answer.append(Reply([data[:-7]]))
    with pytest.raises(StreamProtocolError) as info:
        list(client().streaming_response([USER]))
    assert "ended inside a message" in str(info.value)


def test_a_whole_converse_json_answer_is_read_too(server):
    answer = {"output": {"message": {"role": "assistant", "content": [{"text": "Whole answer."}]}},
              "stopReason": "end_turn", "usage": {"inputTokens": 5, "outputTokens": 2, "totalTokens": 7},
              "metrics": {"latencyMs": 9}}
    server.answer.append(Reply([json.dumps(answer).encode()], headers={"Content-Type": "application/json"}))
    events = list(client().streaming_response([USER]))
    check_stream(events)
    assert deltas(events) == [{"type": "text", "text": "Whole answer."}]


def test_environment_credentials_never_go_to_another_endpoint(aws_env):
    with pytest.raises(ConfigError) as info:
        client(base_url="https://bedrock-gateway.example.com")
    assert "api_key is required" in str(info.value) and SK not in str(info.value)
    gateway = client(base_url="https://bedrock-gateway.example.com", api_key="gw-key-0004")
    assert gateway.base_url == "https://bedrock-gateway.example.com"
    assert SK not in repr(gateway) and "gw-key-0004" not in repr(gateway._endpoint)


def test_routed_by_name_without_client_type(aws_env):
    agent = AutoLLMClient("global.anthropic.claude-opus-4-5-20251101-v1:0")
    assert (agent.client_type, agent.base_url) == ("bedrock", "https://bedrock-runtime.us-west-2.amazonaws.com")


def test_a_token_provider_as_api_key_is_called_for_every_attempt(server):
    calls = []

    def provider():
        calls.append(1)
        return "ABSKbedrock-api-key-0003"

    server.answer.append(frames_reply([bf.message_start(), bf.exception("serviceUnavailableException", "later")]))
    server.answer.append(frames_reply(bf.text_stream("ok")))
    events = list(client(api_key=provider, max_retries=1).streaming_response([USER]))
    assert deltas(events) == [{"type": "text", "text": "ok"}]
    assert len(calls) == 2 and [r["auth"]["kind"] for r in server.requests] == ["bearer", "bearer"]


def test_explicit_credentials_as_api_key(server, aws_env):
    from agenthub.hosts.aws import Credentials

    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        aws_env.delenv(name)
    events = list(client(api_key=Credentials(AK, SK)).streaming_response([USER]))
    assert deltas(events) == [{"type": "text", "text": "ok"}]
    assert server.requests[0]["auth"]["ok"] is True
    assert "X-Amz-Security-Token" not in server.requests[0]["headers"]
    with pytest.raises(ConfigError):
        AutoLLMClient("claude-sonnet-4-6", api_key=Credentials(AK, SK))


def test_record_and_replay_works_for_bedrock(aws_env, tmp_path):
    from agenthub.testing import Cassette, Interaction, replay_session

    cassette = Cassette(interactions=[Interaction(None, headers={"Content-Type": "application/vnd.amazon.eventstream"},
                                                  body=b"".join(REASONING_AND_TOOL))])
    events = list(client(session=replay_session(cassette, chunk_size=1)).streaming_response([USER], {"tools": TOOLS}))
    check_stream(events)
    assert [i["name"] for i in deltas(events) if i["type"] == "tool_call"] == ["get_weather"]
    [sent] = cassette.requests
    assert sent["url"].endswith("/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse-stream")


def test_a_recorded_bedrock_stream_replays_its_frames_whole(server, tmp_path):
    """The recorder scrubbed the SigV4 scope's region and date (taken for secrets) out of the event-stream bytes:
    a frame holding "us-west-2" changed length and failed its CRC on replay. A real secret echoed in a frame (the
    access key id here) is scrubbed inside the frame, which is written anew."""
    from agenthub.testing import record_session, replay_session

    server.answer.append(frames_reply(bf.text_stream("Deployed in us-west-2 by " + AK, ".", input_tokens=9,
                                                     output_tokens=2)))
    folder = str(tmp_path / "cassette")
    live = list(client(session=record_session(folder)).streaming_response([USER], {"max_tokens": 50}))
    assert [i["text"] for i in deltas(live)] == ["Deployed in us-west-2 by " + AK, "."]
    with open(os.path.join(folder, "001.body"), "rb") as handle:
        recorded = handle.read()
    assert AK.encode() not in recorded and b"us-west-2" in recorded
    replayed = list(client(session=replay_session(folder)).streaming_response([USER], {"max_tokens": 50}))
    check_stream(replayed)
    assert [i["text"] for i in deltas(replayed)] == ["Deployed in us-west-2 by ***", "."]
    assert [e["usage_metadata"] for e in replayed] == [e["usage_metadata"] for e in live]


def test_list_models_asks_the_control_plane_signed(server):
    server.answer.append(Reply([json.dumps({"modelSummaries": [{"modelId": "anthropic.claude-sonnet-4-6"},
                                                                {"modelId": "amazon.nova-pro-v1:0"}],
                                            "nextToken": "page 2"}).encode()],
                               headers={"Content-Type": "application/json"}))
    server.answer.append(Reply([json.dumps({"modelSummaries": [{"modelId": "meta.llama3-3-70b-instruct-v1:0"}]}).encode()],
                               headers={"Content-Type": "application/json"}))
    assert client().list_models() == ["anthropic.claude-sonnet-4-6", "amazon.nova-pro-v1:0",
                                      "meta.llama3-3-70b-instruct-v1:0"]
    assert [r["path"] for r in server.requests] == ["/foundation-models", "/foundation-models?nextToken=page%202"]
    assert all(r["auth"]["ok"] for r in server.requests)


def test_a_next_page_token_that_is_not_text_is_a_stream_protocol_error(server):
    """JSON may spell a lone surrogate (``"\\ud800"``): no URL can carry it back, so the page is refused
    with a typed error instead of the UnicodeEncodeError building the next request raised."""
    server.answer.append(Reply([b'{"modelSummaries": [{"modelId": "a"}], "nextToken": "\\ud800page"}'],
                               headers={"Content-Type": "application/json"}))
    with pytest.raises(StreamProtocolError) as info:
        client().list_models()
    assert str(info.value).startswith("bedrock: the model list's next page token is not text that can be sent back "
                                      "(a lone surrogate)")
    assert [r["path"] for r in server.requests] == ["/foundation-models"]


def test_the_control_plane_host_of_an_aws_endpoint():
    from agenthub.providers import bedrock
    from agenthub.providers._common import Endpoint
    from conftest import sent

    for runtime, control in (("https://bedrock-runtime.eu-west-1.amazonaws.com", "https://bedrock.eu-west-1.amazonaws.com"),
                             ("https://bedrock-runtime-fips.us-east-1.amazonaws.com",
                              "https://bedrock-fips.us-east-1.amazonaws.com"),
                             ("http://127.0.0.1:9", "http://127.0.0.1:9")):
        where = Endpoint("bedrock", runtime, None, None, {})
        request = sent(bedrock.models_request(where), where)
        assert request.url == control + "/foundation-models" and request.method == "GET"
