"""The trace viewer: its HTTP answers, and what a person sees in a real (headless) browser."""

import base64
import json
import os
import re
import shutil
import struct
import subprocess
import tempfile
import urllib.error
import urllib.request
import zlib
from html.parser import HTMLParser

import pytest

from agenthub.tracer import save_trace
from agenthub.apps.viewer import page, serve_in_thread

BROWSERS = ("/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome")


def _png(width, height, rgb):
    rows = b"".join(b"\x00" + bytes(rgb) * width for _ in range(height))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


PHOTO = _png(40, 20, (200, 40, 40))
CHART = "data:image/png;base64," + base64.b64encode(_png(16, 16, (40, 160, 40))).decode()
HISTORY = [
    {"role": "user", "created_at": 1764460800000, "content_items": [
        {"type": "text", "text": "What's the weather in Paris? </script><b>not bold</b>"},
        {"type": "inline_data", "mime_type": "image/png", "data": PHOTO}]},
    {"role": "assistant", "created_at": 1764460801000, "content_items": [
        {"type": "thinking", "thinking": "The user wants the weather; I should call get_weather."},
        {"type": "tool_call", "name": "get_weather", "arguments": {"city": "Paris"}, "tool_call_id": "call_1"}],
     "usage_metadata": {"cached_tokens": 0, "prompt_tokens": 52, "thoughts_tokens": 9, "response_tokens": 12},
     "finish_reason": "tool_call"},
    {"role": "user", "created_at": 1764460802000, "content_items": [
        {"type": "tool_result", "text": "18 °C, sunny", "tool_call_id": "call_1", "images": [CHART]}]},
    {"role": "assistant", "created_at": 1764460803000, "content_items": [
        {"type": "text", "text": "It is 18 °C and sunny in Paris."}],
     "usage_metadata": {"cached_tokens": 64, "prompt_tokens": 24, "thoughts_tokens": 0, "response_tokens": 14},
     "finish_reason": "stop"},
]
CONFIG = {"max_tokens": 256, "system_prompt": "You are a weather bot.", "trace_id": "agent1/run_001",
          "tools": [{"name": "get_weather", "description": "Current weather in a city.",
                     "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}]}


@pytest.fixture
def viewer(tmp_path):
    save_trace("agent1/run_001", "demo-model", HISTORY, CONFIG, root=str(tmp_path), tool_calls=[
        {"tool_call_id": "call_1", "name": "get_weather", "seconds": 0.0123, "is_error": False, "turn": 2}])
    save_trace("other", "gpt-5.5", HISTORY[:1], {}, root=str(tmp_path))
    server, url = serve_in_thread(str(tmp_path))
    yield url
    server.shutdown()
    server.server_close()


def _get(url):
    try:
        with urllib.request.urlopen(url, timeout=10) as answer:
            return answer.status, answer.headers.get("Content-Type"), answer.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers.get("Content-Type"), error.read()


def _embedded(html):
    tag = b'<script id="data" type="application/json">'
    start = html.index(tag) + len(tag)
    return json.loads(html[start:html.index(b"</script>", start)].decode("utf-8"))


def test_pages_embed_their_data(viewer):
    status, kind, html = _get(viewer)
    assert (status, kind) == (200, "text/html; charset=utf-8")
    assert sorted(t["trace_id"] for t in _embedded(html)["traces"]) == ["agent1/run_001", "other"]
    status, _, html = _get(viewer + "trace/agent1/run_001")
    data = _embedded(html)
    assert (status, data["page"], data["trace_id"]) == (200, "trace", "agent1/run_001")
    assert data["trace"]["history"][1]["content_items"][1]["arguments"] == {"city": "Paris"}
    assert b"</script><b>" not in html  # text from the model cannot close the data element


def test_embedding_is_script_safe():
    html = page({"text": "</script><script>alert(1)</script> & \u2028"})
    assert html.count(b"</script>") == 2  # the data element's and the renderer's
    assert _embedded(html) == {"text": "</script><script>alert(1)</script> & \u2028"}


@pytest.mark.parametrize("path", ["trace/../../etc/passwd", "trace/%2e%2e/%2e%2e/x", "trace/missing", "raw/../x.json",
                                  "nothing", "raw/agent1/run_001.exe"])
def test_what_is_not_a_trace_is_not_found(viewer, path):
    assert _get(viewer + path)[0] == 404


def test_raw_files(viewer, tmp_path):
    status, kind, body = _get(viewer + "raw/agent1/run_001.json")
    assert (status, kind) == (200, "application/json")
    assert json.loads(body.decode("utf-8"))["trace_id"] == "agent1/run_001"
    status, kind, body = _get(viewer + "raw/agent1/run_001.txt")
    assert (status, kind) == (200, "text/plain; charset=utf-8")
    assert body.decode("utf-8").startswith("model: demo-model\nmax_tokens: 256\n")


# -- in a browser ---------------------------------------------------------------------------------------

class _Visible(HTMLParser):
    """The text a person sees in a dumped DOM: no script or style, nothing inside a closed <details>
    but its summary; images by their alt text."""

    def __init__(self):
        HTMLParser.__init__(self)
        self.parts = []
        self.stack = []  # (tag, hidden)
        self.images = []

    def _hidden(self):
        return any(hidden for _, hidden in self.stack)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "img":
            if not self._hidden():
                self.images.append((attrs.get("alt"), attrs.get("src", "")[:22]))
            return
        if tag in ("br", "meta", "link", "input"):
            return
        hidden = tag in ("script", "style", "head")
        parent = self.stack[-1] if self.stack else None
        if parent and parent[0] == "details" and parent[1] == "closed" and tag != "summary":
            hidden = True
        state = "closed" if tag == "details" and "open" not in attrs else hidden
        self.stack.append((tag, state if tag == "details" else hidden))
        if tag in ("div", "p", "section", "tr", "pre", "summary", "h1", "h2", "details", "header", "nav", "main"):
            self.parts.append("\n")
        elif tag in ("span", "code", "td", "th", "a"):
            self.parts.append(" ")  # inline boxes that the layout sets apart

    def handle_endtag(self, tag):
        while self.stack:
            open_tag, _ = self.stack.pop()
            if open_tag == tag:
                break

    def handle_data(self, data):
        hidden = any(h is True for _, h in self.stack)
        if not hidden:
            self.parts.append(data)

    def lines(self):
        return [" ".join(line.split()) for line in "".join(self.parts).split("\n") if line.strip()]


def _browser():
    for path in BROWSERS:
        if os.path.exists(path):
            return path
    return shutil.which("chromium")


def _dump(url):
    browser = _browser()
    if browser is None:
        pytest.skip("no Chromium installed")
    profile = tempfile.mkdtemp(prefix="agenthub-chromium-")
    try:
        command = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                   "--disable-dev-shm-usage", "--no-first-run", "--disable-extensions", "--user-data-dir=" + profile,
                   "--virtual-time-budget=5000", "--dump-dom", url]
        result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    assert result.returncode == 0, result.stderr.decode(errors="replace")[-2000:]
    parser = _Visible()
    parser.feed(result.stdout.decode("utf-8"))
    return parser


SAVED = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d")


def test_a_person_sees_the_conversation(viewer, monkeypatch):
    monkeypatch.setenv("TZ", "UTC")
    seen = _dump(viewer + "trace/agent1/run_001")
    lines = [SAVED.sub("<saved>", line) if "2025-" not in line else line for line in seen.lines()]
    assert lines[2:] == [
        "agent1/run_001",
        "Model demo-model · saved <saved> · 4 messages · JSON · text",
        "max_tokens: 256",
        "System", "You are a weather bot.",
        "Tools: get_weather",
        "Total Tokens: prompt 76 · cached 64 · thinking 9 · response 26",
        "User #0 · 2025-11-30 00:00:00",
        "What's the weather in Paris? </script><b>not bold</b>",
        "image/png, {} bytes".format(len(PHOTO)),
        "Assistant #1 · 2025-11-30 00:00:01",
        "Thinking", "The user wants the weather; I should call get_weather.",
        "Tool call get_weather call_1",
        "{", "\"city\": \"Paris\"", "}",
        "Finish: tool_call · Tokens: prompt 52 · cached 0 · thinking 9 · response 12",
        "User #2 · 2025-11-30 00:00:02",
        "Tool result get_weather call_1 0.012 s",
        "18 °C, sunny",
        "Assistant #3 · 2025-11-30 00:00:03",
        "It is 18 °C and sunny in Paris.",
        "Finish: stop · Tokens: prompt 24 · cached 64 · thinking 0 · response 14",
    ]
    assert seen.images == [("image/png image", "data:image/png;base64,"), ("image", "data:image/png;base64,")]


def test_a_person_sees_the_list(viewer, monkeypatch):
    monkeypatch.setenv("TZ", "UTC")
    lines = [SAVED.sub("<saved>", line) for line in _dump(viewer).lines()]
    assert lines[0].startswith("agenthub traces ")
    assert lines[1] in (
        "All traces (2) other gpt-5.5 · 1 messages · <saved> agent1/run_001 demo-model · 4 messages · <saved>",
        "All traces (2) agent1/run_001 demo-model · 4 messages · <saved> other gpt-5.5 · 1 messages · <saved>")
    assert lines[2:4] == ["Traces", "Trace Model Messages Saved"]
    assert sorted(lines[4:]) == ["agent1/run_001 demo-model 4 <saved>", "other gpt-5.5 1 <saved>"]
