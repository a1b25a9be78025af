"""The command line, as a user runs it: chat (plain and --json), models, demo, trace show and trace view."""

import io
import json
import os
import subprocess
import sys
import urllib.request

import pytest

from agenthub import list_models, transport
from agenthub.__main__ import Printer, main, usage_line
from agenthub.testing import Cassette, Interaction, replay_session
from agenthub.tracer import save_trace

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
RECORDINGS = os.path.join(ROOT, "agenthub", "recordings", "openai_chat")
LOCAL = ["--client-type", "openai-chat", "--base-url", "http://127.0.0.1:9/v1"]


def _recording(name):
    with open(os.path.join(RECORDINGS, name), "rb") as handle:
        return handle.read()


@pytest.fixture
def replay(monkeypatch):
    """Every session the CLI makes answers from this cassette."""
    cassette = Cassette(interactions=[])
    monkeypatch.setattr(transport, "new_session", lambda: replay_session(cassette, chunk_size=13))
    return cassette


def _clean_env(monkeypatch):
    for name in list(os.environ):
        if name.endswith(("_API_KEY", "_BASE_URL")):
            monkeypatch.delenv(name)


def test_chat_streams_thinking_tool_calls_and_usage(replay, capsys):
    replay.interactions.append(Interaction(None, body=_recording("weather_tool_call.sse")))
    assert main(["chat", "demo-model", "What's the weather in Paris?"] + LOCAL) == 0
    captured = capsys.readouterr()
    assert captured.out == ""  # no answer text: only the answer goes to stdout
    assert captured.err == (
        "[thinking] The user wants the weather; I should call get_weather.\n"
        "[tool call] get_weather({\"city\": \"Paris\"}) id=call_demo_1\n"
        "[done: tool_call] tokens: prompt 52, cached 0, thinking 9, response 12\n")


def test_chat_text(replay, capsys):
    replay.interactions.append(Interaction(None, body=_recording("weather_answer.sse")))
    assert main(["chat", "demo-model", "hi"] + LOCAL) == 0
    captured = capsys.readouterr()
    assert captured.out == "It is 18 °C and sunny in Paris — a good day for a walk.\n"
    assert captured.err == "[done: stop] tokens: prompt 24, cached 64, thinking 0, response 14\n"


def test_chat_options_reach_the_request(replay, capsys):
    replay.interactions.append(Interaction(None, body=_recording("weather_answer.sse")))
    assert main(["chat", "Qwen/Qwen3-8B", "hi", "--client-type", "vllm", "--system", "Be brief.", "--max-tokens", "64",
                 "--temperature", "0.5", "--thinking", "none"]) == 0
    assert replay.requests == [{"method": "POST", "url": "http://127.0.0.1:8000/v1/chat/completions", "body": {
        "model": "Qwen/Qwen3-8B",
        "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}],
        "stream": True, "stream_options": {"include_usage": True}, "max_completion_tokens": 64, "temperature": 0.5,
        "chat_template_kwargs": {"enable_thinking": False}}}]


def test_chat_json_prints_raw_events(replay, capsys):
    replay.interactions.append(Interaction(None, body=_recording("weather_tool_call.sse")))
    assert main(["chat", "demo-model", "hi", "--json"] + LOCAL) == 0
    events = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [e["event_type"] for e in events] == ["start"] + ["delta"] * 6 + ["stop"]
    assert events[6]["content_items"] == [
        {"type": "tool_call", "name": "get_weather", "arguments": {"city": "Paris"}, "tool_call_id": "call_demo_1"}]
    assert events[-1]["usage_metadata"] == {"cached_tokens": 0, "prompt_tokens": 52, "thoughts_tokens": 9,
                                            "response_tokens": 12}
    assert all(isinstance(e["created_at"], int) for e in events)


def test_chat_reads_the_prompt_from_stdin(replay, capsys, monkeypatch):
    replay.interactions.append(Interaction(None, body=_recording("weather_answer.sse")))
    monkeypatch.setattr(sys, "stdin", io.StringIO("from stdin"))
    assert main(["chat", "demo-model", "-"] + LOCAL) == 0
    assert replay.requests[0]["body"]["messages"] == [{"role": "user", "content": "from stdin"}]


def test_chat_api_key_env_for_a_remote_base_url(replay, capsys, monkeypatch):
    replay.interactions.append(Interaction(None, body=_recording("weather_answer.sse")))
    monkeypatch.setenv("GATEWAY_KEY", "gw-123456789")
    assert main(["chat", "m", "hi", "--client-type", "openai-chat", "--base-url", "https://gw.example.com/v1",
                 "--api-key-env", "GATEWAY_KEY"]) == 0
    capsys.readouterr()
    monkeypatch.delenv("GATEWAY_KEY")
    assert main(["chat", "m", "hi", "--client-type", "openai-chat", "--base-url", "https://gw.example.com/v1",
                 "--api-key-env", "GATEWAY_KEY"]) == 1
    assert capsys.readouterr().err == "error: ConfigError: $GATEWAY_KEY is not set\n"


def test_chat_errors_are_one_line_without_the_key(replay, capsys, monkeypatch):
    _clean_env(monkeypatch)
    assert main(["chat", "my-model", "hi"]) == 1
    err = capsys.readouterr().err
    # in command-line terms: flags, not keyword arguments
    assert err.startswith("error: ConfigError: cannot route model 'my-model' by its name: pass --client-type (a "
                          "protocol: ")
    assert err.endswith("e.g. agenthub chat my-model --client-type openai-chat --base-url http://127.0.0.1:8000/v1; "
                        "`agenthub models` lists the known names\n")
    assert "api_key" not in err and "client_type" not in err and "AutoLLMClient" not in err
    assert main(["chat", "deepseek-v4-flash", "hi"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ConfigError: no API key for model 'deepseek-v4-flash' at api.deepseek.com: set "
                          "DEEPSEEK_API_KEY, or pass --api-key-env NAME (the variable holding the key)"), err
    monkeypatch.setenv("OPENAI_API_KEY", "sk-never-shown-42")
    assert main(["chat", "gpt-5.5", "hi", "--base-url", "https://gw.example.com/v1"]) == 1
    err = capsys.readouterr().err
    assert "--api-key-env NAME is required with --base-url 'gw.example.com'" in err and "sk-never-shown" not in err


def test_chat_upstream_error(replay, capsys):
    replay.interactions.append(Interaction(None, 401, {"Content-Type": "application/json"},
                                           b'{"error": {"message": "Incorrect API key", "type": "invalid_api_key"}}'))
    assert main(["chat", "demo-model", "hi"] + LOCAL) == 1
    assert capsys.readouterr().err == (
        "error: AuthenticationError: Incorrect API key; no key was sent: pass --api-key-env NAME (the variable "
        "holding the key) to send one (client=openai-chat, status=401, type=invalid_api_key, "
        "url=http://127.0.0.1:9/v1/chat/completions)\n")


def test_printer_on_a_colour_terminal():
    out = io.StringIO()
    printer = Printer(out, color=True)
    printer.event({"event_type": "delta", "content_items": [{"type": "thinking", "thinking": "hm"}]})
    printer.event({"event_type": "delta", "content_items": [{"type": "text", "text": "Hi"}]})
    printer.event({"event_type": "delta", "content_items": [
        {"type": "inline_data", "mime_type": "image/png", "data": b"1234"}]})
    assert out.getvalue() == "\x1b[2m[thinking] \x1b[0m\x1b[2mhm\x1b[0m\nHi\n[media image/png, 4 bytes]\n"


def test_usage_line_with_unknown_buckets():
    assert usage_line("stop", None) == "[done: stop] tokens: prompt ?, cached ?, thinking ?, response ?"


def test_models(capsys):
    assert main(["models"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "MODEL NAMES                    PROTOCOL          ENDPOINT" + " " * 49 + "API KEY"
    assert lines[1] == ("vendor/model                   openai-chat       https://openrouter.ai/api/v1"
                        + " " * 29 + "OPENROUTER_API_KEY")
    assert lines[2] == ("    OpenRouter; text+image -> text; e.g. deepseek/deepseek-v4-flash, moonshotai/kimi-k2.6, "
                        "anthropic/claude-sonnet-4.6")
    assert "client_type=ollama             openai-chat       http://127.0.0.1:11434/v1" + " " * 32 + "-" in lines
    assert lines[-1].startswith("Any other model: --client-type PROTOCOL (openai-chat, openai-responses, anthropic, "
                                "gemini) or a preset (openrouter, deepseek, zai, moonshot, dashscope, minimax, vllm, ")


def test_models_json(capsys, monkeypatch):
    for row in list_models():  # the endpoints as the registry has them
        if row.get("base_url_env"):
            monkeypatch.delenv(row["base_url_env"], raising=False)
    assert main(["models", "--routes", "--json"]) == 0  # --json alone is the catalog (issue 29 C5)
    rows = json.loads(capsys.readouterr().out)
    assert [row.pop("endpoint") for row in rows] == [row["base_url"] for row in list_models()]
    assert rows == list_models()


def test_demo(capsys):
    from agenthub.apps.demo import available

    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    chat = out.split("== OpenAI Chat Completions (client_type='openai-chat', model='demo-model') ==\n")[1]
    assert chat.split("\n\n")[0] == "\n".join([
        "user> What's the weather in Paris?",
        "[thinking] The user wants the weather; I should call get_weather.",
        "[tool call] get_weather({\"city\": \"Paris\"}) id=call_demo_1",
        "[done: tool_call] tokens: prompt 52, cached 0, thinking 9, response 12",
        "[tool result] call_demo_1 -> 18 °C, sunny",
        "assistant> It is 18 °C and sunny in Paris — a good day for a walk.",
        "[done: stop] tokens: prompt 24, cached 64, thinking 0, response 14",
        "history: 4 messages (user, assistant, user, assistant)",
    ])
    demos = available()
    assert out.count("[tool call] get_weather({\"city\": \"Paris\"})") == len(demos)
    assert out.count("history: 4 messages (user, assistant, user, assistant)") == len(demos)
    assert out.rstrip().endswith("{} protocol(s) replayed. Next: `agenthub models`, `agenthub chat MODEL "
                                 "\"prompt\"`, README.md".format(len(demos)))


def _run(*args, **kwargs):
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
    env["PYTHONPATH"] = ROOT
    env["NO_PROXY"] = "*"
    return subprocess.run([sys.executable, "-m", "agenthub"] + list(args), env=env, cwd=kwargs.get("cwd", ROOT),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)


def test_python_m_agenthub_demo_needs_no_key():
    result = _run("demo")
    assert result.returncode == 0, result.stderr.decode()
    assert "== OpenAI Chat Completions" in result.stdout.decode("utf-8")
    assert result.stderr == b""


def test_no_command_prints_help():
    result = _run()
    assert result.returncode == 2
    assert result.stdout.decode().startswith("usage: agenthub [-h] [--version] COMMAND ...")


def test_version():
    from agenthub import __version__

    result = _run("--version")
    assert result.returncode == 0
    assert result.stdout.decode() == "agenthub {}\n".format(__version__)


def test_trace_show(tmp_path, capsys):
    paths = save_trace("t1", "m", [{"role": "user", "content_items": [{"type": "text", "text": "hello"}]}], {},
                       root=str(tmp_path))
    assert main(["trace", "show", paths["json"]]) == 0
    assert capsys.readouterr().out == "model: m\n\n[0] USER:\n  Text: hello\n"
    assert main(["trace", "show", str(tmp_path / "missing.json")]) == 1
    assert capsys.readouterr().err == "error: no trace file at {}\n".format(tmp_path / "missing.json")


@pytest.mark.parametrize("content, reason", [
    (b"{not json", "Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"),
    (b'{"model": "m"}', None),
    (b"\xff\xfe\x00", "'utf-8' codec can't decode byte 0xff in position 0: invalid start byte"),
])
def test_trace_show_of_a_broken_file_names_the_file(tmp_path, capsys, content, reason):
    path = tmp_path / "broken.json"
    path.write_bytes(content)
    assert main(["trace", "show", str(path)]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    if reason is None:
        assert captured.err == "error: {} is not an agenthub trace (no history)\n".format(path)
    else:
        assert captured.err == "error: {} is not a readable agenthub trace: {}\n".format(path, reason)


def test_trace_view_serves_until_stopped(tmp_path):
    save_trace("agent1/run_001", "demo-model", [{"role": "user", "content_items": [{"type": "text", "text": "hi"}]}],
               {}, root=str(tmp_path))
    env = dict(os.environ, PYTHONPATH=ROOT, PYTHONUNBUFFERED="1")
    process = subprocess.Popen([sys.executable, "-m", "agenthub", "trace", "view", str(tmp_path), "--port", "0"],
                               env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        line = process.stdout.readline().decode()
        assert line.startswith("agenthub trace viewer: http://127.0.0.1:")
        url = line.split()[3]
        with urllib.request.urlopen(url + "trace/agent1/run_001", timeout=10) as answer:
            page = answer.read().decode("utf-8")
        assert answer.status == 200 and '"trace_id": "agent1/run_001"' in page
    finally:
        process.terminate()
        process.wait(timeout=10)
        process.stdout.close()
        process.stderr.close()


def test_trace_view_of_a_missing_folder(tmp_path, capsys):
    assert main(["trace", "view", str(tmp_path / "nope")]) == 1
    assert capsys.readouterr().err == "error: no trace folder at {}\n".format(tmp_path / "nope")


def test_demo_reports_a_broken_protocol_and_plays_the_others(monkeypatch, capsys):
    from agenthub.apps import demo

    real = demo.recording

    def broken(protocol, name):
        data = real(protocol, name)
        return data[:len(data) // 2] if protocol == "openai_chat" else data  # cut before [DONE]

    monkeypatch.setattr(demo, "recording", broken)
    assert main(["demo"]) == 1
    captured = capsys.readouterr()
    assert "\nerror: StreamProtocolError: " in captured.out
    assert captured.out.count("history: 4 messages") == len(demo.available()) - 1
    assert captured.err.startswith("error: StreamProtocolError: ")
