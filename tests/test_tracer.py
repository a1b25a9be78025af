"""Trace files: paths, JSON with base64 bytes, the readable text, and tracing through the client."""

import base64
import json
import os

import pytest

from agenthub import AutoLLMClient, ConfigError, ThinkingLevel
from agenthub.testing import Cassette, Interaction, replay_session
from agenthub.tracer import (_previous, from_jsonable, list_traces, load_trace, render_text, save_trace,
                             to_jsonable, trace_paths)

HERE = os.path.dirname(os.path.abspath(__file__))
RECORDINGS = os.path.join(os.path.dirname(HERE), "agenthub", "recordings", "openai_chat")
TOOLS = [{"name": "get_weather", "description": "Current weather in a city.",
          "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}]
KEY = "sk-trace-secret-987654321"


def _recording(name):
    with open(os.path.join(RECORDINGS, name), "rb") as handle:
        return handle.read()


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTHUB_CACHE_DIR", str(tmp_path / "cache"))
    return str(tmp_path / "cache")


def _client(*names):
    cassette = Cassette(interactions=[Interaction(None, body=_recording(n)) for n in names])
    return AutoLLMClient("demo-model", api_key=KEY, base_url="https://llm.example.com/v1", client_type="openai-chat",
                         session=replay_session(cassette))


@pytest.mark.parametrize("trace_id", ["../x", "a/../../x", "/etc/passwd", "\\windows\\x", "C:/x", "a//b", "./a",
                                      "", "  ", "a/./b", "a\x00b"])
def test_escaping_trace_ids_are_config_errors(trace_id, tmp_path):
    with pytest.raises(ConfigError):
        trace_paths(trace_id, str(tmp_path))


def test_trace_paths(tmp_path):
    root = str(tmp_path)
    assert trace_paths("agent1/run_007", root) == {"json": os.path.join(root, "agent1", "run_007.json"),
                                                   "txt": os.path.join(root, "agent1", "run_007.txt")}
    assert trace_paths("a\\b", root)["json"] == os.path.join(root, "a", "b.json")


def test_default_cache_dir_is_cache(monkeypatch, tmp_path):
    monkeypatch.delenv("AGENTHUB_CACHE_DIR", raising=False)
    monkeypatch.chdir(tmp_path)
    assert trace_paths("t")["json"] == os.path.join(str(tmp_path), "cache", "t.json")


def test_bytes_travel_as_base64_and_come_back():
    history = [{"role": "user", "content_items": [{"type": "inline_data", "mime_type": "image/png",
                                                   "data": b"\x89PNG\x00\xff"}]}]
    jsonable = to_jsonable({"history": history, "level": ThinkingLevel.HIGH, "pair": (1, 2)})
    assert jsonable == {"history": [{"role": "user", "content_items": [
        {"type": "inline_data", "mime_type": "image/png", "data": {"__bytes__": "iVBORwD/"}}]}],
        "level": "high", "pair": [1, 2]}
    assert from_jsonable(json.loads(json.dumps(jsonable)))["history"] == history


HISTORY = [
    {"role": "user", "content_items": [
        {"type": "text", "text": "What's the weather in Paris?"},
        {"type": "image_url", "image_url": "data:image/png;base64," + "A" * 40},
        {"type": "inline_data", "mime_type": "audio/wav", "data": b"RIFF1234"}]},
    {"role": "assistant", "content_items": [
        {"type": "thinking", "thinking": "Call the tool."},
        {"type": "tool_call", "name": "get_weather", "arguments": {"city": "Paris"}, "tool_call_id": "c1"}],
     "usage_metadata": {"cached_tokens": 0, "prompt_tokens": 52, "thoughts_tokens": 9, "response_tokens": 12},
     "finish_reason": "tool_call"},
    {"role": "user", "content_items": [{"type": "tool_result", "text": "18 °C", "tool_call_id": "c1",
                                        "images": ["https://example.com/a.png"]}]},
    {"role": "assistant", "content_items": [{"type": "text", "text": "Sunny."}],
     "usage_metadata": {"cached_tokens": 64, "prompt_tokens": 24, "thoughts_tokens": None, "response_tokens": 3},
     "finish_reason": "stop"},
]


def test_render_text():
    config = {"model": "demo-model", "max_tokens": 100, "thinking_level": ThinkingLevel.LOW, "tools": TOOLS,
              "system_prompt": "Be brief.", "trace_id": "t/1"}
    assert render_text(HISTORY, config) == """model: demo-model
max_tokens: 100
thinking_level: low
trace_id: t/1
system_prompt: Be brief.
tool: get_weather - Current weather in a city.

[0] USER:
  Text: What's the weather in Paris?
  Image URL: data:image/png;base64,... (62 characters)
  Inline data: audio/wav (8 bytes)

[1] ASSISTANT:
  Thinking: Call the tool.
  Tool Call: get_weather({"city": "Paris"}) id=c1
  Usage: cached_tokens=0, prompt_tokens=52, thoughts_tokens=9, response_tokens=12
  Finish reason: tool_call

[2] USER:
  Tool Result [c1]: 18 °C (+1 image)

[3] ASSISTANT:
  Text: Sunny.
  Usage: cached_tokens=64, prompt_tokens=24, thoughts_tokens=None, response_tokens=3
  Finish reason: stop

Total usage: cached_tokens=64, prompt_tokens=76, thoughts_tokens=9, response_tokens=15
"""


def test_save_and_load(tmp_path):
    paths = save_trace("agent1/run_007", "demo-model", HISTORY, {"max_tokens": 100}, root=str(tmp_path))
    with open(paths["json"], encoding="utf-8") as handle:
        document = json.load(handle)
    assert sorted(document) == ["config", "history", "model", "timestamp", "trace_id"]
    assert (document["trace_id"], document["model"], document["config"]) == (
        "agent1/run_007", "demo-model", {"max_tokens": 100, "model": "demo-model"})
    assert document["history"][0]["content_items"][2]["data"] == {"__bytes__": base64.b64encode(b"RIFF1234").decode()}
    loaded = load_trace(paths["json"])
    assert loaded["history"] == HISTORY
    with open(paths["txt"], encoding="utf-8") as handle:
        assert handle.read() == render_text(HISTORY, {"max_tokens": 100, "model": "demo-model"})
    assert sorted(os.listdir(str(tmp_path / "agent1"))) == ["run_007.json", "run_007.txt"]


def test_load_refuses_what_is_not_a_trace(tmp_path):
    path = str(tmp_path / "x.json")
    with open(path, "w") as handle:
        handle.write("[1, 2]")
    with pytest.raises(ValueError, match="is not an agenthub trace"):
        load_trace(path)


def test_a_file_nested_past_the_parsers_depth_is_no_trace_and_is_not_listed(tmp_path):
    """json.load's RecursionError escaped load_trace (agenthub trace show, chat --continue) and list_traces
    (the viewer's index: one such file in the cache directory broke the whole listing)."""
    save_trace("kept", "m", HISTORY, {}, root=str(tmp_path))
    path = tmp_path / "deep.json"
    path.write_text('{"history": ' + "[" * 100000 + "]" * 100000 + "}")
    with pytest.raises(ValueError) as info:
        load_trace(str(path))
    assert str(info.value) == "{} is not an agenthub trace (nested too deep)".format(path)
    assert [t["trace_id"] for t in list_traces(str(tmp_path))] == ["kept"]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_where_a_trace_is_is_never_opened(tmp_path):
    """list_traces (the viewer's index), load_trace and a traced call's read of its earlier write opened it and
    blocked forever."""
    save_trace("kept", "m", HISTORY, {}, root=str(tmp_path))
    os.mkfifo(str(tmp_path / "pipe.json"))
    assert [t["trace_id"] for t in list_traces(str(tmp_path))] == ["kept"]
    with pytest.raises(OSError) as info:
        load_trace(str(tmp_path / "pipe.json"))
    assert str(info.value) == "[Errno 22] {} is not a regular file".format(tmp_path / "pipe.json")
    assert _previous(str(tmp_path / "pipe.json"), HISTORY) is None


def test_list_traces(tmp_path):
    root = str(tmp_path)
    save_trace("b/second", "m2", HISTORY[:2], {}, root=root)
    save_trace("a", "m1", HISTORY, {}, root=root)
    with open(os.path.join(root, "not-a-trace.json"), "w") as handle:
        handle.write("{}")
    listed = list_traces(root)
    assert sorted((t["trace_id"], t["model"], t["messages"]) for t in listed) == [("a", "m1", 4), ("b/second", "m2", 2)]


def test_stateless_call_traces(cache):
    client = _client("weather_answer.sse")
    message = {"role": "user", "content_items": [{"type": "text", "text": "Weather?"}]}
    events = list(client.streaming_response([message], {"trace_id": "runs/stateless", "max_tokens": 50}))
    document = load_trace(os.path.join(cache, "runs", "stateless.json"))
    assert document["config"] == {"trace_id": "runs/stateless", "max_tokens": 50, "model": "demo-model"}
    assert [m["role"] for m in document["history"]] == ["user", "assistant"]
    assert document["history"][1]["content_items"] == [
        {"type": "text", "text": "It is 18 °C and sunny in Paris — a good day for a walk."}]
    assert events[-1]["event_type"] == "stop"
    assert client.get_history() == []


def test_stateful_calls_trace_the_whole_history(cache):
    client = _client("weather_tool_call.sse", "weather_answer.sse")
    config = {"tools": TOOLS, "trace_id": "agent1/run_001", "thinking_level": "high"}
    list(client.streaming_response_stateful({"role": "user", "content_items": [{"type": "text", "text": "Weather?"}]},
                                            config))
    first = load_trace(os.path.join(cache, "agent1", "run_001.json"))
    assert [m["role"] for m in first["history"]] == ["user", "assistant"]
    call = client.get_history()[-1]["content_items"][-1]
    list(client.streaming_response_stateful({"role": "user", "content_items": [
        {"type": "tool_result", "text": "18 °C", "tool_call_id": call["tool_call_id"]}]}, config))
    document = load_trace(os.path.join(cache, "agent1", "run_001.json"))
    assert document["history"] == client.get_history()
    assert document["config"]["thinking_level"] == "high"
    with open(os.path.join(cache, "agent1", "run_001.txt"), encoding="utf-8") as handle:
        text = handle.read()
    assert "  Tool Call: get_weather({\"city\": \"Paris\"}) id=call_demo_1\n" in text
    assert "  Tool Result [call_demo_1]: 18 °C\n" in text


def test_no_key_in_trace_files(cache):
    client = _client("weather_answer.sse")
    list(client.streaming_response([{"role": "user", "content_items": [{"type": "text", "text": "x"}]}],
                                   {"trace_id": "secret-check"}))
    for name in os.listdir(cache):
        with open(os.path.join(cache, name), encoding="utf-8") as handle:
            assert KEY not in handle.read()


def test_mcp_credentials_in_extra_body_never_reach_a_trace_file(tmp_path):
    """extra_body is sent as written, and the MCP credentials in it are ones the client scrubs from errors
    (body_secrets): a trace writes them as ***, the rest of extra_body as given."""
    extra = {"mcp_servers": [{"type": "url", "url": "https://mcp.example/sse?token=query-secret-1234",
                              "authorization_token": "body-secret-5678"}],
             "tools": [{"type": "mcp", "server_url": "https://mcp.example", "authorization": "tool-secret-9012",
                        "headers": {"X-Key": "header-secret-3456"}}],
             "service_tier": "flex"}
    paths = save_trace("t", "demo-model", HISTORY, {"extra_body": extra}, root=str(tmp_path))
    written = ""
    for path in paths.values():
        with open(path, encoding="utf-8") as handle:
            written += handle.read()
    assert not [word for word in ("query-secret", "body-secret", "tool-secret", "header-secret") if word in written]
    document = load_trace(paths["json"])
    assert document["config"]["extra_body"]["mcp_servers"][0] == {
        "type": "url", "url": "https://mcp.example/sse?token=***", "authorization_token": "***"}
    assert document["config"]["extra_body"]["service_tier"] == "flex"
    assert extra["mcp_servers"][0]["authorization_token"] == "body-secret-5678"  # the caller's config untouched


def test_an_escaping_trace_id_is_a_config_error_through_the_client(cache):
    client = _client("weather_answer.sse")
    with pytest.raises(ConfigError):
        list(client.streaming_response([{"role": "user", "content_items": [{"type": "text", "text": "x"}]}],
                                       {"trace_id": "../outside"}))
    assert not os.path.exists(os.path.join(os.path.dirname(cache), "outside.json"))
