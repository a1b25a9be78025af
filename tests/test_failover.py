"""Failover (AutoLLMClient(fallbacks=...)): tried in order only while no event reached the caller,
the circuit breaker skips endpoints that are down, and which endpoint answered is never hidden.

Every primary protocol meets every fault against local servers on 127.0.0.1 (agenthub's FaultServer):
HTTP 529 / 503 / 500, connection refused, a stall before the first byte, an in-stream error before any
content; and after content, a failure is raised as it is, with no fallback and no duplicated delta.
"""

import json
import logging
import socket
import time

import pytest

from agenthub import AutoLLMClient, breaker, check_stream
from agenthub.errors import (AgentHubError, ConfigError, ServerError, StreamProtocolError, TransportError,
                             UpstreamError)
from faultserver import FaultServer, chat_stream, drop, error_body, fast_backoff, hang, send, sse, status  # noqa: F401
from test_helpers_e2e import STREAMS

SSE = {"Content-Type": "text/event-stream"}
JSON = {"Content-Type": "application/json"}
USER = {"role": "user", "content_items": [{"type": "text", "text": "Hi"}]}
PROTOCOLS = sorted(STREAMS)

#: an in-stream error before any content, per protocol that has one (a retryable overload)
IN_STREAM_ERRORS = {
    "anthropic": sse({"type": "message_start", "message": {"usage": {"input_tokens": 3, "output_tokens": 0}}},
                     event="message_start")
    + sse({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}, event="error"),
    "openai-responses": sse({"type": "response.created", "response": {"status": "in_progress"}})
    + sse({"type": "response.failed", "response": {"status": "failed", "error": {
        "code": "server_error", "message": "The server had an error while processing your request."}}}),
    "openai-chat": sse({"error": {"message": "overloaded", "type": "server_error", "code": 503}}),
}

#: the first content event of each protocol's stream, then a cut (for "after content")
FIRST_DELTA = {
    "openai-chat": sse({"choices": [{"index": 0, "delta": {"content": "Hel"}, "finish_reason": None}]}),
    "openai-responses": sse({"type": "response.output_text.delta", "output_index": 0, "content_index": 0,
                             "delta": "Hel"}),
    "anthropic": sse({"type": "message_start", "message": {"usage": {"input_tokens": 3, "output_tokens": 0}}},
                     event="message_start")
    + sse({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
          event="content_block_start")
    + sse({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hel"}},
          event="content_block_delta"),
    "gemini": sse({"candidates": [{"content": {"role": "model", "parts": [{"text": "Hel"}]}}]}),
}

FALLBACK_EVENTS_TEXT = "ok"


pytestmark = pytest.mark.usefixtures("fresh_breakers")  # (conftest: every circuit closed before and after)


@pytest.fixture
def primary():
    with FaultServer(default=[status(500, JSON, framing="length"), send(error_body())]) as srv:
        yield srv


@pytest.fixture
def backup():
    with FaultServer() as srv:  # answers every request with a Chat Completions stream of "ok"
        yield srv


def client(server, protocol, **kwargs):
    options = STREAMS[protocol][0]
    return AutoLLMClient("m", client_type=options["client_type"], base_url=server.url + options["base_url_path"],
                         api_key="sk-primary-0001", **kwargs)


def backup_client(server, **kwargs):
    return AutoLLMClient("backup-model", client_type="openai-chat", base_url=server.url + "/v1",
                         api_key="sk-backup-0002", **kwargs)


def text_of(events):
    return "".join(item.get("text", "") for event in events for item in event["content_items"]
                   if item["type"] == "text")


def refused_port():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there now
    return port


FAULTS = {
    "529": [status(529, JSON, framing="length"), send(error_body("Overloaded", "overloaded_error"))],
    "503": [status(503, JSON, framing="length"), send(error_body("unavailable"))],
    "500": [status(500, JSON, framing="length"), send(error_body())],
    "stall": [hang(3.0)],
}


@pytest.mark.parametrize("fault", sorted(FAULTS) + ["refused", "in-stream error"])
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_failure_before_the_first_event_moves_the_turn_to_the_fallback(primary, backup, protocol, fault):
    if fault == "in-stream error" and protocol not in IN_STREAM_ERRORS:
        pytest.skip("{} has no in-stream error event".format(protocol))
    if fault == "in-stream error":
        primary.default = [status(200, SSE), send(IN_STREAM_ERRORS[protocol])]
    elif fault != "refused":
        primary.default = FAULTS[fault]
    first = client(primary, protocol, max_retries=1, timeout=(1, 0.3), fallbacks=[backup_client(backup)])
    if fault == "refused":
        options = STREAMS[protocol][0]
        first = AutoLLMClient("m", client_type=options["client_type"], api_key="sk-primary-0001",
                              base_url="http://127.0.0.1:{}{}".format(refused_port(), options["base_url_path"]),
                              max_retries=1, timeout=(1, 0.3), fallbacks=[backup_client(backup)])
    events = list(first.streaming_response([USER]))
    check_stream(events)
    assert text_of(events) == FALLBACK_EVENTS_TEXT
    assert [e["event_type"] for e in events] == ["start", "delta", "stop"]
    assert first.last_route == {"model": "backup-model", "client_type": "openai-chat",
                                "host": "127.0.0.1:{}".format(backup.port)}  # the port: not the scheme's
    if fault != "refused":
        assert len(primary.requests) == 2  # the entry's own retries first (max_retries=1)
    assert len(backup.requests) == 1
    assert backup.requests[0].headers.get("authorization") == "Bearer sk-backup-0002"  # the fallback's own key


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("cut", ["drop", "in-stream error"])
def test_after_content_a_failure_is_raised_and_nothing_is_joined(primary, backup, protocol, cut):
    tail = drop() if cut == "drop" or protocol not in IN_STREAM_ERRORS else send(
        IN_STREAM_ERRORS[protocol].split(b"\n\n", 1)[-1] if protocol == "anthropic" else IN_STREAM_ERRORS[protocol])
    primary.default = [status(200, SSE), send(FIRST_DELTA[protocol]), tail]
    first = client(primary, protocol, max_retries=2, fallbacks=[backup_client(backup)])
    seen = []
    with pytest.raises(AgentHubError) as info:
        for event in first.streaming_response([USER]):
            seen.append(event)
    assert isinstance(info.value, (StreamProtocolError, UpstreamError, TransportError))
    assert text_of(seen) == "Hel"  # one delta, never repeated, never followed by the fallback's
    assert [e["event_type"] for e in seen] == ["start", "delta"]
    assert len(primary.requests) == 1 and backup.requests == []
    assert first.last_route["model"] == "m"


def test_a_400_does_not_fall_over_unless_fallback_on_names_it(primary, backup):
    primary.default = [status(400, JSON, framing="length"), send(error_body("bad request", "invalid_request_error"))]
    first = client(primary, "openai-chat", fallbacks=[backup_client(backup)])
    with pytest.raises(UpstreamError) as info:
        list(first.streaming_response([USER]))
    assert info.value.status == 400 and backup.requests == []
    listed = client(primary, "openai-chat", fallbacks=[backup_client(backup)], fallback_on=[UpstreamError])
    assert text_of(list(listed.streaming_response([USER]))) == "ok"
    assert len(backup.requests) == 1


def test_every_entry_failing_raises_the_last_entrys_error(primary, backup):
    backup.default = [status(503, JSON, framing="length"), send(error_body("down too"))]
    first = client(primary, "openai-chat", max_retries=0, fallbacks=[backup_client(backup, max_retries=0)])
    with pytest.raises(ServerError) as info:
        list(first.streaming_response([USER]))
    assert info.value.status == 503 and "down too" in str(info.value)


def test_an_info_line_says_why_each_entry_was_skipped(primary, backup, caplog):
    primary.default = FAULTS["529"]
    first = client(primary, "anthropic", max_retries=0, fallbacks=[backup_client(backup)])
    with caplog.at_level(logging.INFO, logger="agenthub"):
        list(first.streaming_response([USER]))
    lines = [r.getMessage() for r in caplog.records if "fallback" in r.getMessage()]
    assert lines == ["agenthub fallback: m (anthropic, 127.0.0.1:{}) skipped: ServerError 529".format(primary.port)]
    assert "sk-primary" not in caplog.text and "sk-backup" not in caplog.text


def test_fallbacks_given_as_model_names_take_their_own_key_and_this_clients_settings(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-env-0003")
    first = AutoLLMClient("gpt-5.5", api_key="sk-x", fallbacks=["claude-sonnet-4-6"], max_retries=5, timeout=7)
    (second,) = first.fallbacks
    assert (second.model, second.client_type, second.max_retries) == ("claude-sonnet-4-6", "anthropic", 5)
    assert second.timeout == first.timeout


@pytest.mark.parametrize("bad, words", [
    ({"fallbacks": "claude-x"}, "fallbacks must be a list"),
    ({"fallbacks": [3]}, "model name or an AutoLLMClient"),
    ({"fallback_on": [ValueError]}, "AgentHubError subclasses"),
    ({"circuit_breaker": {"failures": 0}}, "failures"),
])
def test_bad_failover_arguments_are_config_errors(bad, words):
    with pytest.raises(ConfigError) as info:
        AutoLLMClient("m", client_type="openai-chat", base_url="http://127.0.0.1:1/v1", api_key="k", **bad)
    assert words in str(info.value)


def test_a_missing_key_for_a_fallback_is_found_at_construction(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(ConfigError) as info:
        AutoLLMClient("m", client_type="openai-chat", base_url="http://127.0.0.1:1/v1", api_key="k",
                      fallbacks=["claude-sonnet-4-6"])
    assert "ANTHROPIC_API_KEY" in str(info.value)
    # it names the entry, and says what helps: the entry's own variable ("pass api_key=" would set the primary's)
    assert str(info.value) == ("fallbacks entry 'claude-sonnet-4-6': no API key for model 'claude-sonnet-4-6' at "
                               "api.anthropic.com: set ANTHROPIC_API_KEY (a fallback named by model reads its "
                               "provider's own key variable), or give the entry as a client with its own key")
    with pytest.raises(ConfigError) as info:
        AutoLLMClient("m", client_type="openai-chat", base_url="http://127.0.0.1:1/v1", api_key="k",
                      fallbacks=["acme-model-9"])
    assert str(info.value).startswith("fallbacks entry 'acme-model-9': cannot route model 'acme-model-9' by its name")


def test_chat_says_which_fallback_lacks_its_key(monkeypatch, capsys):
    from agenthub.__main__ import main

    monkeypatch.delenv("ZAI_API_KEY", raising=False)
    monkeypatch.setenv("LOCAL_KEY", "k-local-1")
    assert main(["chat", "m", "hi", "--client-type", "openai-chat", "--base-url", "http://127.0.0.1:1/v1",
                 "--api-key-env", "LOCAL_KEY", "--fallback", "glm-5.1", "--no-log"]) == 1
    assert capsys.readouterr().err == (
        "error: ConfigError: --fallback 'glm-5.1': no API key for model 'glm-5.1' at api.z.ai: set ZAI_API_KEY (a "
        "fallback named by model reads its provider's own key variable)\n")


# -- the circuit breaker ----------------------------------------------------------------------------


class Clock(object):
    def __init__(self):
        self.now = 5000.0

    def __call__(self):
        return self.now


def test_an_open_circuit_is_skipped_at_once_then_probed_after_the_cooldown(primary, backup, monkeypatch):
    clock = Clock()
    monkeypatch.setattr(breaker, "clock", clock)
    primary.default = FAULTS["503"]
    first = client(primary, "openai-chat", max_retries=0, fallbacks=[backup_client(backup)],
                   circuit_breaker={"failures": 2, "cooldown": 30})
    for _ in range(2):
        assert text_of(list(first.streaming_response([USER]))) == "ok"
    assert len(primary.requests) == 2
    started = time.monotonic()
    assert text_of(list(first.streaming_response([USER]))) == "ok"   # open: not asked at all
    skipped_in = time.monotonic() - started
    assert len(primary.requests) == 2 and len(backup.requests) == 3
    assert skipped_in < 1.0  # no retry, no timeout: the primary is not contacted (bench/ measures the figure)
    # a second client of the same endpoint shares the breaker
    other = client(primary, "openai-chat", max_retries=0, fallbacks=[backup_client(backup)])
    list(other.streaming_response([USER]))
    assert len(primary.requests) == 2
    clock.now += 30  # half-open: one probe goes to the primary, which has recovered
    primary.default = [status(200, SSE), send(chat_stream("back"))]
    assert text_of(list(first.streaming_response([USER]))) == "back"
    assert first.last_route["model"] == "m"
    assert breaker.breaker_for(*first._circuit()).state == "closed"


def test_every_circuit_open_is_a_fast_typed_error(primary, backup, monkeypatch):
    monkeypatch.setattr(breaker, "clock", Clock())
    primary.default = backup.default = FAULTS["503"]
    first = client(primary, "openai-chat", max_retries=0, fallbacks=[backup_client(backup, max_retries=0)],
                   circuit_breaker={"failures": 1, "cooldown": 12})
    with pytest.raises(ServerError):
        list(first.streaming_response([USER]))
    before = (len(primary.requests), len(backup.requests))
    with pytest.raises(ServerError) as info:
        list(first.streaming_response([USER]))
    assert (len(primary.requests), len(backup.requests)) == before
    assert info.value.error_type == "circuit_open" and info.value.retryable is True and info.value.retry_after == 12


def test_circuit_breaker_false_never_skips(primary, backup):
    primary.default = FAULTS["503"]
    first = client(primary, "openai-chat", max_retries=0, fallbacks=[backup_client(backup)], circuit_breaker=False)
    for _ in range(5):
        list(first.streaming_response([USER]))
    assert len(primary.requests) == 5


def test_two_gateways_on_one_host_have_a_circuit_each(primary, backup, monkeypatch):
    """Two local gateways serving the same model on one host (two ports): the primary's open circuit
    never closes the way to the fallback."""
    monkeypatch.setattr(breaker, "clock", Clock())
    primary.default = FAULTS["503"]
    same = AutoLLMClient("m", client_type="openai-chat", base_url=backup.url + "/v1", api_key="sk-test-key-123456",
                         max_retries=0)
    first = client(primary, "openai-chat", max_retries=0, fallbacks=[same], circuit_breaker={"failures": 1})
    for _ in range(3):
        assert text_of(list(first.streaming_response([USER]))) == "ok"
    assert len(primary.requests) == 1 and len(backup.requests) == 3  # the primary open, the fallback asked
    assert breaker.breaker_for(*first._circuit()).state == "open"
    assert breaker.breaker_for(*same._circuit()).state == "closed"


@pytest.mark.parametrize("apart", ["key", "path"])
def test_a_fallback_to_the_same_model_on_the_same_host_has_a_circuit_of_its_own(backup, monkeypatch, apart):
    """The same model on the same host through another key (another organisation's quota) or another base path
    (another Vertex project, another gateway route): the primary's failures open its own circuit only, and the
    fallback's answers never close it (the primary was asked on every call, its failure paid each time)."""
    monkeypatch.setattr(breaker, "clock", Clock())
    failing = "Bearer sk-primary-0001" if apart == "key" else "/a/v1/chat/completions"
    backup.default = lambda request: FAULTS["503"] if failing in (request.headers.get("authorization"),
                                                                  request.path) else [status(200, SSE),
                                                                                      send(chat_stream("ok"))]
    same = AutoLLMClient("m", client_type="openai-chat", base_url=backup.url + ("/v1" if apart == "key" else "/b/v1"),
                         api_key="sk-backup-0002" if apart == "key" else "sk-primary-0001", max_retries=0)
    first = AutoLLMClient("m", client_type="openai-chat", base_url=backup.url + ("/v1" if apart == "key" else "/a/v1"),
                          api_key="sk-primary-0001", max_retries=0, fallbacks=[same],
                          circuit_breaker={"failures": 2, "cooldown": 30})
    for _ in range(5):
        assert text_of(list(first.streaming_response([USER]))) == "ok"
    asked = [(r.path, r.headers["authorization"]) for r in backup.requests]
    primary_asked = ("/v1/chat/completions" if apart == "key" else "/a/v1/chat/completions", "Bearer sk-primary-0001")
    fallback_asked = ("/v1/chat/completions", "Bearer sk-backup-0002") if apart == "key" else (
        "/b/v1/chat/completions", "Bearer sk-primary-0001")
    assert asked == [primary_asked, fallback_asked] * 2 + [fallback_asked] * 3  # open after two: not asked again
    assert breaker.breaker_for(*first._circuit()).state == "open"
    assert breaker.breaker_for(*same._circuit()).state == "closed"


def test_a_400_does_not_count_against_the_circuit(primary, backup):
    primary.default = [status(400, JSON, framing="length"), send(error_body("bad", "invalid_request_error"))]
    first = client(primary, "openai-chat", fallbacks=[backup_client(backup)], circuit_breaker={"failures": 1})
    for _ in range(3):
        with pytest.raises(UpstreamError):
            list(first.streaming_response([USER]))
    assert len(primary.requests) == 3
    assert breaker.breaker_for(*first._circuit()).state == "closed"


# -- stateful turns and helpers -------------------------------------------------------------------


def test_a_stateful_turn_answered_by_the_fallback_is_kept_in_the_primarys_history(primary, backup):
    primary.default = FAULTS["529"]
    first = client(primary, "anthropic", max_retries=0, fallbacks=[backup_client(backup)])
    answer = first.response_stateful(USER)
    assert [item["text"] for item in answer["content_items"]] == ["ok"]
    history = first.get_history()
    assert [m["role"] for m in history] == ["user", "assistant"]
    assert history[1]["content_items"] == [{"type": "text", "text": "ok"}]
    assert first.fallbacks[0].get_history() == []
    assert first.last_route["client_type"] == "openai-chat"


def test_response_reports_the_route_too(primary, backup):
    primary.default = [status(200, SSE), send(chat_stream("direct"))]
    first = client(primary, "openai-chat", fallbacks=[backup_client(backup)])
    assert first.last_route is None
    assert [item["text"] for item in first.response([USER])["content_items"]] == ["direct"]
    where = "127.0.0.1:{}".format(primary.port)  # issue 29 C5: host:port when the port is not the scheme's
    assert first.last_route == {"model": "m", "client_type": "openai-chat", "host": where}
    plain = client(primary, "openai-chat")
    plain.response([USER])
    assert plain.last_route == {"model": "m", "client_type": "openai-chat", "host": where}


# -- history across providers ------------------------------------------------------------------------

CLAUDE_HISTORY = [
    {"role": "user", "content_items": [{"type": "text", "text": "Weather in Paris?"}]},
    {"role": "assistant", "content_items": [
        {"type": "thinking", "thinking": "I should call the tool.", "fidelity": {"signature": "EqQBCkYIBxgC"}},
        {"type": "thinking", "thinking": "", "fidelity": {"redacted_data": "EmwKAhgBEgy"}},
        {"type": "text", "text": "Let me check."},
        {"type": "tool_call", "name": "get_weather", "arguments": {"city": "Paris"}, "tool_call_id": "toolu_01A"}]},
    {"role": "user", "content_items": [{"type": "tool_result", "text": "22 C", "tool_call_id": "toolu_01A"}]},
    {"role": "assistant", "content_items": [{"type": "text", "text": "It is 22 C."}]},
]
NEXT = {"role": "user", "content_items": [{"type": "text", "text": "And tomorrow?"}]}

#: what GPT (Responses) is sent: no Claude thinking, the tool call and its output paired by the same id
RESPONSES_INPUT = [
    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Weather in Paris?"}]},
    {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Let me check.",
                                                          "annotations": []}]},
    {"type": "function_call", "call_id": "toolu_01A", "name": "get_weather", "arguments": "{\"city\":\"Paris\"}"},
    {"type": "function_call_output", "call_id": "toolu_01A", "output": "22 C"},
    {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "It is 22 C.",
                                                          "annotations": []}]},
    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "And tomorrow?"}]},
]
#: what Gemini 3 is sent: no Claude thinking; the foreign call gets Google's documented placeholder signature
GEMINI_CONTENTS = [
    {"role": "user", "parts": [{"text": "Weather in Paris?"}]},
    {"role": "model", "parts": [{"text": "Let me check."},
                                {"functionCall": {"id": "toolu_01A", "name": "get_weather", "args": {"city": "Paris"}},
                                 "thoughtSignature": "skip_thought_signature_validator"}]},
    {"role": "user", "parts": [{"functionResponse": {"name": "get_weather", "id": "toolu_01A",
                                                     "response": {"result": "22 C"}}}]},
    {"role": "model", "parts": [{"text": "It is 22 C."}]},
    {"role": "user", "parts": [{"text": "And tomorrow?"}]},
]
#: back on Claude: the signature and the redacted block exactly as they came
ANTHROPIC_MESSAGES = [
    {"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"}]},
    {"role": "assistant", "content": [
        {"type": "thinking", "thinking": "I should call the tool.", "signature": "EqQBCkYIBxgC"},
        {"type": "redacted_thinking", "data": "EmwKAhgBEgy"},
        {"type": "text", "text": "Let me check."},
        {"type": "tool_use", "id": "toolu_01A", "name": "get_weather", "input": {"city": "Paris"}}]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01A", "content": "22 C"}]},
    {"role": "assistant", "content": [{"type": "text", "text": "It is 22 C."}]},
]


def test_a_claude_conversation_continues_on_gpt_then_gemini_then_back_on_claude(primary, backup):
    import copy

    primary.default = FAULTS["529"]
    backup.default = [status(200, SSE), send(STREAMS["openai-responses"][1])]
    with FaultServer(default=[status(200, SSE), send(STREAMS["gemini"][1])]) as google:
        gpt = AutoLLMClient("gpt-5.5", client_type="openai-responses", base_url=backup.url + "/v1", api_key="k2")
        gemini = AutoLLMClient("gemini-3-pro", client_type="gemini", base_url=google.url, api_key="k3")
        claude = client(primary, "anthropic", max_retries=0, fallbacks=[gpt, gemini])
        claude.set_history(CLAUDE_HISTORY)
        kept = copy.deepcopy(CLAUDE_HISTORY)
        assert text_of([{"content_items": claude.response_stateful(NEXT)["content_items"]}]) == "Hello"
        assert claude.last_route["client_type"] == "openai-responses"
        assert backup.requests[0].json()["input"] == RESPONSES_INPUT
        assert claude.get_history()[:4] == kept  # the stored history keeps Claude's items byte for byte
        backup.default = [status(503, JSON, framing="length"), send(error_body("down"))]
        gpt.max_retries = 0
        claude.response([*CLAUDE_HISTORY, NEXT])
        assert claude.last_route["client_type"] == "gemini"
        assert google.requests[-1].json()["contents"] == GEMINI_CONTENTS
    primary.default = [status(200, SSE), send(STREAMS["anthropic"][1])]
    claude.response([*CLAUDE_HISTORY, NEXT])
    assert claude.last_route["client_type"] == "anthropic"
    assert primary.requests[-1].json()["messages"] == ANTHROPIC_MESSAGES + [
        {"role": "user", "content": [{"type": "text", "text": "And tomorrow?"}]}]


def test_set_history_from_another_protocol_is_converted_on_the_way_out_too(backup):
    backup.default = [status(200, SSE), send(chat_stream("fine"))]
    chat = backup_client(backup)
    chat.set_history(CLAUDE_HISTORY)
    chat.response_stateful(NEXT, {"foreign_thinking": "text"})
    sent = backup.requests[0].json()["messages"]
    assert sent[1] == {"role": "assistant", "content": "I should call the tool.Let me check.",
                       "tool_calls": [{"id": "toolu_01A", "type": "function",
                                       "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}]}
    assert "foreign_thinking" not in json.dumps(backup.requests[0].json())
    assert chat.get_history()[:4] == CLAUDE_HISTORY


def test_the_trace_records_which_endpoint_answered_each_turn(primary, backup, tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTHUB_CACHE_DIR", str(tmp_path))
    primary.default = [status(200, SSE), send(chat_stream("one"))]
    first = client(primary, "openai-chat", max_retries=0, fallbacks=[backup_client(backup)])
    first.response_stateful(USER, {"trace_id": "run/1"})
    primary.default = FAULTS["503"]
    first.response_stateful(NEXT, {"trace_id": "run/1"})
    with open(str(tmp_path / "run" / "1.json"), encoding="utf-8") as handle:
        document = json.load(handle)
    assert document["routes"] == [
        {"model": "m", "client_type": "openai-chat", "host": "127.0.0.1:{}".format(primary.port), "turn": 1},
        {"model": "backup-model", "client_type": "openai-chat", "host": "127.0.0.1:{}".format(backup.port), "turn": 3}]
    assert "sk-" not in json.dumps(document)


def test_merge_hooks_reads_what_a_hook_shares_not_attribute_names():
    """Issue 36 item 5: ``merge_hooks`` keeps one hook per (class, shared object) a hook names with its
    ``shares`` attribute (BudgetHook: its budget, LimiterHook: its limiter), and no longer guesses from
    attributes called "budget" or "limiter"."""
    from agenthub import Budget, RateLimiter
    from agenthub.attempts import AttemptHook
    from agenthub.budget import BudgetHook
    from agenthub.failover import merge_hooks
    from agenthub.limiter import LimiterHook

    budget, limiter, other = Budget(1), RateLimiter(), RateLimiter()
    first = [BudgetHook(budget), LimiterHook(limiter)]
    assert merge_hooks(first, [BudgetHook(budget), LimiterHook(limiter)]) == first
    then = [LimiterHook(other)]
    assert merge_hooks(first, then) == first + then

    class Audit(AttemptHook):  # a user's hook that happens to keep a budget: not one of the budget's holders
        def __init__(self, budget):
            self.budget = budget

    class Tenant(AttemptHook):  # a user's hook acting for a shared object, said with ``shares``
        shares = "account"

        def __init__(self, account):
            self.account = account

    audits = [Audit(budget), Audit(budget)]
    assert merge_hooks(audits[:1], audits[1:]) == audits
    account = object()
    tenants = [Tenant(account), Tenant(account)]
    assert merge_hooks(tenants[:1], tenants[1:]) == tenants[:1]


def test_a_call_let_through_before_the_circuit_opened_never_frees_the_half_open_probe_slot(primary, backup,
                                                                                            monkeypatch):
    """X is let through while the circuit is closed and waits for its answer; meanwhile A's 503 opens the circuit,
    the cooldown passes and P goes as the one probe.  X's late 400 (no verdict on the endpoint) must not let a
    second probe through while P is in flight: Y goes to the fallback (before: Y was sent to the primary too)."""
    import threading

    clock = Clock()
    monkeypatch.setattr(breaker, "clock", clock)
    gates = {"x": threading.Event(), "p": threading.Event()}
    arrived = {"x": threading.Event(), "p": threading.Event()}

    def answer(request):
        word = request.json()["messages"][0]["content"]
        if word in gates:
            arrived[word].set()
            gates[word].wait(10)
        if word == "x":
            return [status(400, JSON, framing="length"), send(error_body("bad", "invalid_request_error"))]
        if word == "a":
            return FAULTS["503"]
        return [status(200, SSE), send(chat_stream("primary-" + word))]

    primary.default = answer

    def ask(word):
        first = client(primary, "openai-chat", max_retries=0, fallbacks=[backup_client(backup)],
                       circuit_breaker={"failures": 1, "cooldown": 30})
        return first.streaming_response([{"role": "user", "content_items": [{"type": "text", "text": word}]}])

    outcome = {}

    def run(word):
        try:
            outcome[word] = text_of(list(ask(word)))
        except AgentHubError as exc:
            outcome[word] = type(exc).__name__

    x = threading.Thread(target=run, args=("x",))
    x.start()
    assert arrived["x"].wait(5)
    assert text_of(list(ask("a"))) == "ok"  # 503: the circuit opens, the fallback answers
    clock.now += 30
    p = threading.Thread(target=run, args=("p",))
    p.start()
    assert arrived["p"].wait(5)  # the probe is in flight
    gates["x"].set()
    x.join(5)
    assert outcome["x"] == "UpstreamError"
    assert text_of(list(ask("y"))) == "ok"  # the probe slot is taken: skipped, answered by the fallback
    gates["p"].set()
    p.join(5)
    assert outcome["p"] == "primary-p"
    words = [request.json()["messages"][0]["content"] for request in primary.requests]
    assert sorted(words) == ["a", "p", "x"]
    assert breaker.breaker_for(*client(primary, "openai-chat")._circuit()).state == "closed"


def test_a_fallback_named_by_model_keeps_the_anthropic_version_pin_on_a_claude_route(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-env-0003")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-env-0005")
    first = AutoLLMClient("claude-opus-4-7", anthropic_version="2023-06-01",
                          fallbacks=["claude-sonnet-4-6", "gpt-5.5"])
    claude, gpt = first.fallbacks
    assert claude._endpoint.quirks["anthropic_version"] == "2023-06-01"  # (the pin applies to every Claude route)
    assert "anthropic_version" not in gpt._endpoint.quirks  # (a pin means nothing on another dialect)
