"""The "A tool loop" blocks (docs/tools.md) run as written (each in its own process), with OPENAI_BASE_URL
pointed at a local server answering the Responses stream each block needs."""

import os
import re
import subprocess
import sys

from doc_sections import section
from agent_streams import responses_calls, responses_text
from sse_server import Answer, SSEServer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _blocks():
    return re.findall(r"```python\n(.*?)```", section("A tool loop"), re.S)


def _run(code, answers):
    with SSEServer() as server:
        server.answers += [Answer([body]) for body in answers]
        env = dict(os.environ, PYTHONPATH=ROOT, OPENAI_BASE_URL=server.url + "/v1",
                   OPENAI_API_KEY="sk-openai-readme-0004")
        done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
        requests = list(server.requests)
    assert done.returncode == 0, done.stderr
    assert "readme-0004" not in done.stdout + done.stderr
    return done.stdout, requests


WEATHER = [responses_calls([("call_1", "get_weather", '{"city": "Paris"}')]), responses_text("Sunny in Paris.")]


def test_the_section_has_six_blocks():
    assert len(_blocks()) == 6


def test_the_runner_block():
    out, requests = _run(_blocks()[0], WEATHER)
    assert out == "[get_weather: 18 °C, sunny]\nSunny in Paris.\ndone 2 3\n"
    assert requests[1]["body"]["input"][-1] == {"type": "function_call_output", "call_id": "call_1",
                                               "output": "18 °C, sunny"}
    assert requests[0]["body"]["tools"] == [{
        "type": "function", "name": "get_weather", "description": "Current weather in a city.",
        "parameters": {"type": "object", "properties": {
            "city": {"type": "string", "description": "The city's name."},
            "unit": {"enum": ["c", "f"], "type": "string", "description": "Celsius or Fahrenheit.", "default": "c"}},
            "required": ["city"]}, "strict": False}]


def test_the_hand_written_loop_it_replaces():
    out, requests = _run(_blocks()[1], WEATHER)
    assert out == "Sunny in Paris."
    assert requests[1]["body"]["input"][-1] == {"type": "function_call_output", "call_id": "call_1",
                                               "output": "18 °C, sunny"}


def test_the_approval_block():
    call = responses_calls([("call_d", "delete_file", '{"path": "old.log"}')])
    out, requests = _run(_blocks()[2], [call, responses_text("Deleted."), call, responses_text("Deleted.")])
    assert out == "approval ['delete_file']\ndone\ndone\n"
    assert len(requests) == 4
    for request in (requests[1], requests[3]):
        assert request["body"]["input"][-1] == {"type": "function_call_output", "call_id": "call_d",
                                                "output": "deleted old.log"}


def test_the_parallel_block():
    calls = responses_calls([("c1", "fetch", '{"url": "a.com"}'), ("c2", "fetch", '{"url": "b.com"}')])
    out, requests = _run(_blocks()[4], [calls, responses_text("Both are pages.")])
    assert out == "fetch False\nfetch False\n"
    assert requests[1]["body"]["input"][-2:] == [
        {"type": "function_call_output", "call_id": "c1", "output": "<html>a.com</html>"},
        {"type": "function_call_output", "call_id": "c2", "output": "<html>b.com</html>"}]


def test_the_digest_block():
    """A decision keyed by call_digest runs the call the user saw."""
    call = responses_calls([("call_d", "delete_file", '{"path": "old.log"}')])
    out, requests = _run(_blocks()[3], [call, responses_text("Deleted.")])
    assert out == "done\n"
    assert requests[1]["body"]["input"][-1] == {"type": "function_call_output", "call_id": "call_d",
                                               "output": "deleted old.log"}


def test_the_hooks_block():
    calls = responses_calls([("c1", "get_weather", '{"city": "Paris"}'), ("c2", "delete_file", '{"path": "x"}')])
    out, requests = _run(_blocks()[5], [calls, responses_text("Sunny.")])
    lines = out.splitlines()
    assert lines[0] == "running get_weather {'city': 'Paris'}"
    assert re.fullmatch(r"get_weather took \d+\.\d{3} s", lines[1]) and lines[2:] == [
        "delete_file took 0.000 s (failed)", "run ended: done 2 turns"]
    assert requests[1]["body"]["input"][-1] == {"type": "function_call_output", "call_id": "c2",
                                               "output": "unknown tool 'delete_file'; the tools are: get_weather"}
