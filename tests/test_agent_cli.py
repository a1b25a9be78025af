"""`agenthub chat MODEL --tool ...` (issue 30 item 3): each call shown and asked for, the log keeps the calls
and their results.  The real program in a subprocess against a local server."""

import json
import os
import subprocess
import sys

from agent_streams import chat_calls, chat_text
from sse_server import Answer, SSEServer

from agenthub.apps.conversations import Log

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

TOOLS = '''
def get_weather(city: str) -> str:
    """Current weather in a city."""
    return "18 C in " + city


def delete_file(path: str) -> str:
    """Delete a file."""
    return "deleted " + path
'''


def _chat(server, tmp_path, extra, stdin=""):
    tools = tmp_path / "mytools.py"
    tools.write_text(TOOLS)
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
    env.update(PYTHONPATH=ROOT, NO_PROXY="*", PYTHONIOENCODING="utf-8", AGENTHUB_HOME=str(tmp_path / "home"))
    argv = [sys.executable, "-m", "agenthub", "chat", "demo-model", "Weather in Paris?", "--client-type",
            "openai-chat", "--base-url", server.url + "/v1", "--tool", str(tools) + ":get_weather",
            "--tool", "mytools:delete_file"] + extra
    return subprocess.run(argv, input=stdin, capture_output=True, text=True, env=env, cwd=str(tmp_path), timeout=60)


def test_each_call_is_asked_for_and_the_log_keeps_it(tmp_path):
    calls = [("c1", "get_weather", '{"city": "Paris"}'), ("c2", "delete_file", '{"path": "a"}'),
             ("c3", "get_weather", '{"city": "Rome"}')]
    with SSEServer() as server:
        server.answers += [Answer([chat_calls(calls)]), Answer([chat_text("Paris is sunny.")])]
        done = _chat(server, tmp_path, [], stdin='y\nn\ne\n{"city": "Oslo"}\n')
        sent = server.requests[1]["body"]["messages"][2:]
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Paris is sunny.\n"
    assert '[tool get_weather({"city": "Paris"})] run it? [y/n/e] ' in done.stderr
    assert '[tool get_weather({"city": "Paris"}) -> 18 C in Paris (' in done.stderr
    assert '[tool delete_file({"path": "a"}) -> error: denied: the user did not allow this call (' in done.stderr
    assert '[tool get_weather({"city": "Rome"}) -> 18 C in Oslo (' in done.stderr
    assert sent == [{"role": "tool", "tool_call_id": "c1", "content": "18 C in Paris"},
                    {"role": "tool", "tool_call_id": "c2", "content": "denied: the user did not allow this call"},
                    {"role": "tool", "tool_call_id": "c3", "content": "18 C in Oslo"}]
    log = Log(str(tmp_path / "home" / "logs.db"))
    try:
        history = log.history(log.latest())
    finally:
        log.close()
    assert [m["role"] for m in history] == ["user", "assistant", "user", "assistant"]
    assert [i["tool_call_id"] for i in history[2]["content_items"]] == ["c1", "c2", "c3"]
    assert history[2]["content_items"][1]["is_error"] is True


def test_yes_runs_every_call_and_max_turns_stops(tmp_path):
    with SSEServer() as server:
        server.answers += [Answer([chat_calls([("c1", "delete_file", '{"path": "a"}')])])]
        done = _chat(server, tmp_path, ["--yes", "--max-turns", "1"])
        assert len(server.requests) == 1
    assert done.returncode == 0, done.stderr
    assert "run it?" not in done.stderr
    assert "[stopped after --max-turns 1: 1 call(s) not run]" in done.stderr
    with SSEServer() as server:
        server.answers += [Answer([chat_calls([("c1", "delete_file", '{"path": "a"}')])]), Answer([chat_text("ok")])]
        done = _chat(server, tmp_path, ["--yes"])
    assert done.returncode == 0, done.stderr
    assert '[tool delete_file({"path": "a"}) -> deleted a (' in done.stderr


def test_a_tool_that_cannot_be_loaded_is_a_clear_error(tmp_path):
    with SSEServer() as server:
        done = _chat(server, tmp_path, ["--tool", "nosuchmodule_xyz:fn"])
        assert server.requests == []
    assert done.returncode != 0
    assert "--tool nosuchmodule_xyz:fn: nosuchmodule_xyz cannot be loaded (ModuleNotFoundError" in done.stderr
