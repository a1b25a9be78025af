"""The playground page (agenthub.playground) driven in headless Chromium.

The page is served by ``agenthub.server.make_app`` on the built-in server of ``agenthub
serve``, in front of a fake Chat Completions upstream on 127.0.0.1 (``Upstream`` below:
scripted SSE chunks, gates to hold a stream open, a record of every request and of
disconnects); a Recorder in front of the app keeps what the page sent.  Selenium drives
Debian's chromium through /usr/bin/chromedriver (no Selenium Manager, no network);
the tests skip when either is missing (``.ci/run`` installs them).

Every test ends by reading the browser's console: no Content-Security-Policy or
Trusted Types violation, no error, may appear (the page needs nothing its CSP refuses).
"""

import base64
import io
import json
import os
import re
import shutil
import socket
import struct
import tempfile
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.request import urlopen

import pytest

from agenthub import AutoLLMClient, collect, playground
from agenthub.tracer import from_jsonable, list_traces, load_trace, to_jsonable
from agenthub.server import make_app, serve
from agenthub.validate import check_messages
from sse_server import close_server, close_upstream, track_connections

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"

webdriver = pytest.importorskip("selenium.webdriver")
pytestmark = pytest.mark.skipif(not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)),
                                reason="chromium and chromium-driver are not installed (apt-get install chromium chromium-driver)")

from selenium.common.exceptions import TimeoutException  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402


UPSTREAM_KEY = "upstream-secret-1234"


# -- the fake upstream: Chat Completions SSE, scripted ------------------------------------------

class Reply(object):
    """Steps: bytes are written as one chunk each, a float sleeps, a threading.Event is waited on (10 s max)."""

    def __init__(self, steps=(), status=200, headers=None):
        self.steps = list(steps)
        self.status = status
        self.headers = headers or {"Content-Type": "text/event-stream"}
        self.disconnected = threading.Event()
        self.finished = threading.Event()


class _UpstreamHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):  # noqa: N802
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.server.requests.append({"path": self.path, "headers": dict(self.headers), "body": json.loads(raw)})
        reply = self.server.replies.pop(0) if self.server.replies else Reply([b"data: [DONE]\n\n"])
        try:
            self.send_response(reply.status)
            for key, value in reply.headers.items():
                self.send_header(key, value)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for step in reply.steps:
                if isinstance(step, threading.Event):
                    step.wait(10)
                elif isinstance(step, float):
                    time.sleep(step)
                else:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(step), step))
                    self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            reply.disconnected.set()
            self.close_connection = True
        finally:
            reply.finished.set()

    def log_message(self, *args):
        pass


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        pass


class Upstream(object):
    def __init__(self):
        self._server = _QuietServer(("127.0.0.1", 0), _UpstreamHandler)
        self._server.replies = []
        self._server.requests = []
        self.url = "http://127.0.0.1:{}/v1".format(self._server.server_address[1])
        self._connections = track_connections(self._server)
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    replies = property(lambda self: self._server.replies)
    requests = property(lambda self: self._server.requests)

    def close(self):
        close_server(self._server, self._connections)


def chunk(delta=None, finish=None, usage=None):
    document = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "up-model",
                "choices": [] if delta is None and finish is None else
                [{"index": 0, "delta": delta or {}, "finish_reason": finish}]}
    if usage is not None:
        document["usage"] = usage
    return b"data: " + json.dumps(document).encode("utf-8") + b"\n\n"


USAGE = {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}


def text_reply(*pieces, **kw):
    """A Chat Completions stream of text pieces; a threading.Event or float among them is a step."""
    steps = [chunk({"role": "assistant", "content": ""})]
    for piece in pieces:
        steps.append(piece if isinstance(piece, (threading.Event, float)) else chunk({"content": piece}))
    steps += [chunk(finish=kw.get("finish", "stop")), chunk(usage=USAGE), b"data: [DONE]\n\n"]
    return Reply(steps)


def direct_events(reply, messages, config=None, upstream=None):
    """The events the library yields for ``reply`` straight from the upstream (what the page must see)."""
    upstream.replies.append(Reply([s for s in reply.steps if isinstance(s, bytes)]))
    client = AutoLLMClient("up-model", client_type="openai-chat", base_url=upstream.url, api_key=UPSTREAM_KEY)
    events = list(client.streaming_response(messages=from_jsonable(messages), config=config or {}))
    upstream.requests.pop()
    return events


# -- the app: agenthub.server.make_app on agenthub serve's built-in server ------------------------

class Recorder(object):
    """WSGI middleware: keeps every POST body the page sent (parsed JSON), passes the request on unchanged."""

    def __init__(self, app):
        self.app = app
        self.bodies = []

    def __call__(self, environ, start_response):
        if environ["REQUEST_METHOD"] == "POST":
            raw = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
            self.bodies.append(json.loads(raw))
            environ["wsgi.input"] = io.BytesIO(raw)
        return self.app(environ, start_response)


class Site(object):
    """``app`` (an AgentHubApp) on the built-in server of ``agenthub serve``; ``wrap(app)`` may put a WSGI
    layer in front of it (the Recorder always is)."""

    def __init__(self, app, upstream, wrap=None):
        self._server, self.url = serve(app, "127.0.0.1", 0)
        self.agenthub_app = app
        self.app = Recorder(wrap(app) if wrap else app)
        self._server.set_app(self.app)
        self.url = self.url.rstrip("/") + "/"
        self.upstream = upstream
        self._connections = track_connections(self._server)
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def close(self):
        close_server(self._server, self._connections)
        close_upstream(self.agenthub_app)


def app_config(upstream, **extra):
    config = {"models": [{"id": "fake", "model": "up-model", "client_type": "openai-chat", "base_url": upstream.url,
                          "api_key": UPSTREAM_KEY},
                         {"id": "other", "model": "up-model-2", "client_type": "openai-chat",
                          "base_url": upstream.url, "api_key": UPSTREAM_KEY}],
              "max_concurrent_streams": 1}
    config.update(extra)
    return config


def make_site(upstream, wrap=None, **extra):
    return Site(make_app(app_config(upstream, **extra)), upstream, wrap)


# -- the browser ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def browser():
    os.environ.setdefault("SE_AVOID_STATS", "true")
    profile = tempfile.mkdtemp(prefix="agenthub-chromium-")
    downloads = tempfile.mkdtemp(prefix="agenthub-downloads-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage", "--disable-extensions", "--disable-default-apps",
                 "--window-size=1280,900", "--user-data-dir=" + profile):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    options.add_experimental_option("prefs", {"download.default_directory": downloads,
                                              "download.prompt_for_download": False})
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    driver.execute_cdp_cmd("Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": downloads})
    driver.downloads = downloads
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
        shutil.rmtree(downloads, ignore_errors=True)


@pytest.fixture
def upstream():
    server = Upstream()
    yield server
    server.close()


@pytest.fixture
def site(upstream):
    site = make_site(upstream)
    yield site
    site.close()


def console(driver):
    return driver.get_log("browser")


def bad_entries(entries, allow=()):
    """Console entries that are errors or policy violations, minus the ``allow``ed substrings."""
    out = []
    for entry in entries:
        message = entry.get("message", "")
        violation = any(word in message for word in ("Content Security Policy", "Content-Security-Policy",
                                                     "Trusted Type", "TrustedHTML", "TrustedScript"))
        if (violation or entry.get("level") == "SEVERE") and not any(a in message for a in allow):
            out.append(entry)
    return out


@pytest.fixture
def page(browser, site):
    """The playground, loaded, models listed; afterwards: a clean console."""
    console(browser)  # drop what earlier tests left
    open_page(browser, site.url)
    browser.site = site
    browser.allow = ()  # console messages a test expects (an HTTP error status it provoked)
    yield browser
    try:
        assert bad_entries(console(browser), browser.allow) == []
        browser.execute_script("sessionStorage.clear()")
    finally:
        browser.site = None  # (the module's browser outlives the test's site, its app and their connections)


def open_page(driver, url):
    driver.get(url)
    wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "#model option"), "the model list")


def wait(driver, condition, what, timeout=8):
    try:
        return WebDriverWait(driver, timeout, poll_frequency=0.02).until(condition)
    except TimeoutException:  # pragma: no cover - the message is for whoever reads a failure
        raise AssertionError("timed out waiting for {} (status: {!r})".format(
            what, driver.find_element(By.ID, "status").text))


def css(driver, selector):
    return driver.find_element(By.CSS_SELECTOR, selector)


def type_and_send(driver, text):
    box = css(driver, "#input")
    box.clear()
    box.send_keys(text)
    css(driver, "#send").click()


def wait_done(driver, timeout=8):
    wait(driver, lambda d: d.find_element(By.ID, "status").text.startswith(("Done", "Aborted"))
         or "bad" in d.find_element(By.ID, "status").get_attribute("class"), "the end of the turn", timeout)


def last_answer(driver):
    return driver.find_elements(By.CSS_SELECTOR, "#transcript .message.assistant")[-1]


def history(driver):
    return driver.execute_script("return window.agenthubPlayground.history()")


def strip_created(message):
    message = dict(message)
    assert isinstance(message.pop("created_at"), int)
    return message


# -- scenarios ------------------------------------------------------------------------------------

def test_typed_message_streams_text_incrementally_with_usage_and_finish(page, upstream):
    gate = threading.Event()
    upstream.replies.append(text_reply("Hel", "lo ", gate, "wor", "ld."))
    css(page, "#system").send_keys("Be brief.")
    css(page, "#max-tokens").send_keys("50")
    css(page, "#temperature").send_keys("0.3")
    css(page, "#extra").send_keys('{"top_p": 0.5, "seed": 7}')
    assert css(page, "#extra-hint").text == "adds top_p, seed"
    type_and_send(page, "Say hello")

    wait(page, lambda d: "Hello" in last_answer(d).text, "the first pieces")
    answer = last_answer(page)
    assert answer.find_element(By.CSS_SELECTOR, ".body .text").get_property("textContent") == "Hello "  # the rest is still held upstream
    assert css(page, "#stop").is_enabled() and not css(page, "#send").is_enabled()
    gate.set()
    wait_done(page)
    assert answer.find_element(By.CSS_SELECTOR, ".body .text").text == "Hello world."
    foot = answer.find_element(By.CSS_SELECTOR, ".foot").text
    assert foot.startswith("finish stop · prompt 11 · cached – · thinking – · response 7 · first token ")
    assert not css(page, "#stop").is_enabled() and css(page, "#send").is_enabled()
    assert css(page, "#input").get_attribute("value") == ""

    user = {"role": "user", "content_items": [{"type": "text", "text": "Say hello"}]}
    config = {"system_prompt": "Be brief.", "max_tokens": 50, "temperature": 0.3, "top_p": 0.5, "seed": 7}
    assert page.site.app.bodies == [{"model": "fake", "messages": [user], "config": config}]
    sent = upstream.requests[0]
    assert sent["body"]["messages"] == [{"role": "system", "content": "Be brief."},
                                        {"role": "user", "content": "Say hello"}]
    assert [sent["body"][k] for k in ("max_completion_tokens", "temperature", "top_p", "seed")] == [50, 0.3, 0.5, 7]
    assert sent["headers"]["Authorization"] == "Bearer " + UPSTREAM_KEY

    expected = collect(direct_events(text_reply("Hel", "lo ", "wor", "ld."), [user], config, upstream))
    kept = history(page)
    assert kept[0] == user and strip_created(kept[1]) == strip_created(to_jsonable(expected))

    # the next turn sends the whole conversation back
    upstream.replies.append(text_reply("Again."))
    type_and_send(page, "Once more")
    wait_done(page)
    second = page.site.app.bodies[1]["messages"]
    assert second[:2] == kept and second[2] == {"role": "user", "content_items": [{"type": "text", "text": "Once more"}]}


TOOL = [{"name": "get_weather", "description": "Current weather in a city.",
         "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}]


def tool_reply(gate):
    def call(arguments, **head):
        entry = {"index": 0, "function": {"arguments": arguments}}
        if head:
            entry.update(id=head["id"], type="function")
            entry["function"]["name"] = head["name"]
        return chunk({"tool_calls": [entry]})
    return Reply([chunk({"role": "assistant", "content": None}), call('{"ci', id="call_1", name="get_weather"), gate,
                  call('ty": "Pa'), call('ris"}'), chunk(finish="tool_calls"), chunk(usage=USAGE),
                  b"data: [DONE]\n\n"])


def test_tool_call_streams_its_arguments_then_completes_and_its_result_goes_back(page, upstream):
    gate = threading.Event()
    upstream.replies.append(tool_reply(gate))
    css(page, "#tools-example").click()
    assert css(page, "#tools-hint").text == "1 tool: get_weather"
    type_and_send(page, "Weather in Paris?")

    call = wait(page, lambda d: d.find_elements(By.CSS_SELECTOR, ".message.assistant .tool-call.streaming"),
                "the announced tool call")[0]
    assert call.find_element(By.CSS_SELECTOR, "code.name").text == "get_weather"
    assert call.find_element(By.CSS_SELECTOR, ".id").text == "call_1"
    assert call.find_element(By.CSS_SELECTOR, "pre.args").text == '{"ci'       # arguments as they stream
    assert call.find_element(By.CSS_SELECTOR, ".state").text == "streaming arguments…"
    gate.set()
    wait_done(page)
    assert "streaming" not in call.get_attribute("class")
    assert call.find_element(By.CSS_SELECTOR, ".state").text == "✓ complete"
    assert call.find_element(By.CSS_SELECTOR, "pre.args").text == '{\n  "city": "Paris"\n}'
    assert last_answer(page).find_element(By.CSS_SELECTOR, ".foot").text.startswith("finish tool_call · ")
    assert page.site.app.bodies[0]["config"] == {"tools": TOOL}
    assert upstream.requests[0]["body"]["tools"][0]["function"]["name"] == "get_weather"

    # the result box for the call; sending it makes a tool_result
    result = wait(page, lambda d: d.find_elements(By.CSS_SELECTOR, "#tool-results textarea"), "the result box")[0]
    result.send_keys("18 C, sunny")
    upstream.replies.append(text_reply("It is sunny."))
    css(page, "#send").click()
    wait_done(page)
    user = {"role": "user", "content_items": [{"type": "text", "text": "Weather in Paris?"}]}
    expected = collect(direct_events(tool_reply(threading.Event()), [user], {"tools": TOOL}, upstream))
    sent = page.site.app.bodies[1]["messages"]
    assert sent[0] == user
    assert strip_created(sent[1]) == strip_created(to_jsonable(expected))
    assert [i["type"] for i in expected["content_items"]] == ["tool_call"]
    assert sent[2] == {"role": "user", "content_items": [
        {"type": "tool_result", "tool_call_id": "call_1", "text": "18 C, sunny"}]}
    assert not page.find_elements(By.CSS_SELECTOR, "#tool-results textarea")


def test_abort_stops_the_stream_says_aborted_and_frees_the_upstream(page, upstream):
    slow = text_reply(*[item for n in range(300) for item in ("word{} ".format(n), 0.03)])
    upstream.replies.append(slow)
    type_and_send(page, "Talk for a long time")
    wait(page, lambda d: "word3 " in last_answer(d).text, "some streamed words")
    css(page, "#stop").click()
    wait(page, lambda d: d.find_element(By.ID, "status").text == "Aborted.", "the aborted status")
    answer = last_answer(page)
    notice = answer.find_element(By.CSS_SELECTOR, ".notice")
    assert notice.find_element(By.CSS_SELECTOR, ".type").text == "Aborted"
    assert "not kept in the conversation" in notice.text
    text = answer.find_element(By.CSS_SELECTOR, ".body .text").text
    assert slow.disconnected.wait(5), "the upstream stream was not closed after the abort"
    time.sleep(0.2)
    assert answer.find_element(By.CSS_SELECTOR, ".body .text").text == text  # nothing more arrived
    assert "word299" not in text
    assert "dropped" in answer.get_attribute("class")
    assert history(page) == []                                    # an aborted turn is not kept
    assert css(page, "#input").get_attribute("value") == "Talk for a long time"  # given back to retype
    assert css(page, "#send").is_enabled() and not css(page, "#stop").is_enabled()

    # the server's one stream slot is free again: the next turn goes through
    upstream.replies.append(text_reply("Short."))
    css(page, "#send").click()
    wait_done(page)
    assert css(page, "#status").text.startswith("Done")
    assert [m["role"] for m in history(page)] == ["user", "assistant"]



def test_stop_before_the_first_token_closes_the_upstream_connection(page, upstream):
    """Stop while the model is still silent (no event yet, the page waiting for the server's answer): the
    server's connection to the upstream is closed too (the fake sees the end of its connection while it is
    still holding the answer back), and the stream's slot is free for the next turn."""
    gate = threading.Event()
    silent = Reply([gate] + text_reply("Too late.").steps)
    upstream.replies.append(silent)
    type_and_send(page, "hello")
    wait(page, lambda d: upstream.requests, "the upstream request")
    connection = upstream._connections[-1]
    css(page, "#stop").click()
    wait(page, lambda d: d.find_element(By.ID, "status").text == "Aborted.", "the aborted status")
    connection.settimeout(5)
    try:
        assert connection.recv(1, socket.MSG_PEEK) == b""  # the server closed its end: EOF, not a timeout
    finally:
        connection.settimeout(None)
        gate.set()
    assert silent.finished.wait(5)
    assert history(page) == []
    upstream.replies.append(text_reply("Short."))
    css(page, "#send").click()
    wait_done(page)
    assert css(page, "#status").text.startswith("Done")
    assert history(page)[1]["content_items"] == [{"type": "text", "text": "Short."}]

def test_keep_alive_comments_keep_the_page_waiting(browser, upstream):
    site = make_site(upstream, keepalive_seconds=0.1)
    try:
        console(browser)
        open_page(browser, site.url)
        gate = threading.Event()
        upstream.replies.append(Reply([gate] + text_reply("Late.").steps))
        type_and_send(browser, "hello")
        wait(browser, lambda d: "keep-alive" in d.find_element(By.ID, "status").text, "a keep-alive")
        assert css(browser, "#stop").is_enabled()
        # what would replace the conversation waits for the answer (a trace picked now would be ignored)
        assert not css(browser, "#open").is_enabled() and not css(browser, "#clear").is_enabled()
        gate.set()
        wait_done(browser)
        assert css(browser, "#open").is_enabled() and css(browser, "#clear").is_enabled()
        assert last_answer(browser).find_element(By.CSS_SELECTOR, ".text").text == "Late."
        assert bad_entries(console(browser)) == []
    finally:
        site.close()


def test_thinking_streams_collapsed_and_keeps_its_fidelity(page, upstream):
    upstream.replies.append(Reply([
        chunk({"role": "assistant", "reasoning_content": "Let me "}), chunk({"reasoning_content": "think."}),
        chunk({"content": "42"}), chunk(finish="stop"), chunk(usage=USAGE), b"data: [DONE]\n\n"]))
    type_and_send(page, "The answer?")
    wait_done(page)
    answer = last_answer(page)
    details = answer.find_element(By.CSS_SELECTOR, "details.thinking")
    assert details.get_property("open") is False
    assert details.find_element(By.CSS_SELECTOR, "summary").text == "Thinking"
    inner = details.find_element(By.CSS_SELECTOR, ".text")
    assert not inner.is_displayed()
    details.find_element(By.CSS_SELECTOR, "summary").click()
    assert details.get_property("open") is True and inner.text == "Let me think."
    assert answer.find_element(By.CSS_SELECTOR, "div.part.text").text == "42"
    items = history(page)[1]["content_items"]
    assert items == [{"type": "thinking", "thinking": "Let me think.", "fidelity": {"reasoning_field": "reasoning_content"}},
                     {"type": "text", "text": "42"}]


def png(width=2, height=2):
    def part(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    rows = b"".join(b"\x00" + b"\xff\x40\x20" * width for _ in range(height))
    return (b"\x89PNG\r\n\x1a\n" + part(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + part(b"IDAT", zlib.compress(rows)) + part(b"IEND", b""))


def loads(driver, url):
    """Whether an image loads from ``url`` in the page."""
    return driver.execute_async_script(
        "var img = new Image(), done = arguments[1]; img.onload = function () { done(true); };"
        "img.onerror = function () { done(false); }; img.src = arguments[0];", url)


def test_uploaded_image_reaches_the_request_body_as_inline_data(page, upstream, tmp_path):
    image = png()
    path = tmp_path / "dot.png"
    path.write_bytes(image)
    css(page, "#file").send_keys(str(path))
    chip = wait(page, lambda d: d.find_elements(By.CSS_SELECTOR, "#attachments .attachment"), "the attachment")[0]
    assert chip.text.startswith("dot.png · {} B".format(len(image)))
    preview = chip.find_element(By.TAG_NAME, "img").get_attribute("src")
    assert preview.startswith("blob:") and loads(page, preview)
    upstream.replies.append(text_reply("A red dot."))
    type_and_send(page, "What is this?")
    wait_done(page)
    encoded = base64.b64encode(image).decode("ascii")
    assert page.site.app.bodies[0]["messages"] == [{"role": "user", "content_items": [
        {"type": "inline_data", "data": {"__bytes__": encoded}, "mime_type": "image/png"},
        {"type": "text", "text": "What is this?"}]}]
    parts = upstream.requests[0]["body"]["messages"][0]["content"]
    assert {"type": "image_url", "image_url": {"url": "data:image/png;base64," + encoded}} in parts
    shown = page.find_elements(By.CSS_SELECTOR, "#transcript .message.user img.media")
    assert [img.get_attribute("src") for img in shown] == ["data:image/png;base64," + encoded]
    assert page.execute_script("return arguments[0].naturalWidth", shown[0]) == 2   # decoded: allowed by img-src
    assert not page.find_elements(By.CSS_SELECTOR, "#attachments .attachment")
    page.allow = (preview + " - Failed to load resource: net::ERR_FILE_NOT_FOUND",)  # (the probe below)
    assert not loads(page, preview)  # the preview's blob URL was revoked: the page does not keep the file


def attachment_chips(driver):
    """The names on the attachment chips (read in one script: the chips are redrawn as files are read)."""
    return driver.execute_script("return Array.prototype.map.call(document.querySelectorAll("
                                 "'#attachments .attachment span'), function (s) { return s.textContent.split(' · ')[0]; })")


def test_images_over_the_size_limit_are_refused_before_they_are_read(page, upstream, tmp_path):
    """An image is read into the page (as base64) and sent with every later turn: one over the limit, or one
    that would take the message's images over it, is refused with a message before it is read."""
    limit = page.execute_script("return window.agenthubPlayground.maxImageBytes")
    assert limit == 20 * 1024 * 1024
    big = tmp_path / "huge.png"
    big.write_bytes(png() + b"\0" * (limit + 1 - len(png())))
    css(page, "#file").send_keys(str(big))
    wait(page, lambda d: "huge.png" in d.find_element(By.ID, "status").text, "the refusal", 30)
    assert css(page, "#status").text == ("huge.png (20.0 MB) is not attached: the images of one message may be "
                                         "20.0 MB in all")
    assert css(page, "#status").get_attribute("class") == "bad"
    assert attachment_chips(page) == []

    half = tmp_path / "half.png"
    half.write_bytes(png() + b"\0" * (limit // 2 + 1 - len(png())))
    small = tmp_path / "dot.png"
    small.write_bytes(png())
    css(page, "#file").send_keys("\n".join([str(half), str(half), str(small)]))  # the second half is one byte too many
    wait(page, lambda d: len(attachment_chips(d)) == 2, "two attachments", 30)
    assert css(page, "#status").text == ("half.png (10.0 MB) is not attached: the images of one message may be "
                                         "20.0 MB in all")
    assert sorted(attachment_chips(page)) == ["dot.png", "half.png"]
    upstream.replies.append(text_reply("Two images."))
    type_and_send(page, "What are these?")
    wait_done(page, 60)  # (10 MB to send: room for a busy machine)
    assert css(page, "#status").text.startswith("Done")
    sent = page.site.app.bodies[0]["messages"][0]["content_items"]
    assert sorted(len(base64.b64decode(i["data"]["__bytes__"])) for i in sent if i["type"] == "inline_data") == [
        len(png()), limit // 2 + 1]
    assert attachment_chips(page) == []
    css(page, "#file").send_keys(str(half))  # the sent images no longer count
    wait(page, lambda d: attachment_chips(d) == ["half.png"], "the attachment", 30)


def test_model_output_with_html_is_shown_as_text(page, upstream):
    hostile = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script><b>bold</b> & &amp;'
    upstream.replies.append(Reply([
        chunk({"role": "assistant", "reasoning_content": "<i>think</i><svg onload=\"window.__pwned=3\">"}),
        chunk({"content": hostile[:20]}), chunk({"content": hostile[20:]}), chunk(finish="stop"),
        chunk(usage=USAGE), b"data: [DONE]\n\n"]))
    type_and_send(page, "<b>not bold</b>")
    wait_done(page)
    answer = last_answer(page)
    assert answer.find_element(By.CSS_SELECTOR, "div.part.text").text == hostile
    assert page.execute_script("return arguments[0].querySelector('div.part.text').textContent", answer) == hostile
    thinking = page.execute_script("return arguments[0].querySelector('details .text').textContent", answer)
    assert thinking == "<i>think</i><svg onload=\"window.__pwned=3\">"
    for element in ("img", "script", "b", "i", "svg"):
        assert not answer.find_elements(By.CSS_SELECTOR, ".body " + element)
    user = page.find_elements(By.CSS_SELECTOR, "#transcript .message.user")[-1]
    assert user.find_element(By.CSS_SELECTOR, ".text").text == "<b>not bold</b>" and not user.find_elements(By.TAG_NAME, "b")
    assert page.execute_script("return window.__pwned") is None


def test_export_writes_a_trace_the_tracer_and_the_viewer_open(page, upstream, tmp_path):
    from agenthub.apps import viewer
    image = png()
    path = tmp_path / "dot.png"
    path.write_bytes(image)
    css(page, "#file").send_keys(str(path))
    wait(page, lambda d: d.find_elements(By.CSS_SELECTOR, "#attachments .attachment"), "the attachment")
    upstream.replies.append(Reply([
        chunk({"role": "assistant", "reasoning_content": "Hm."}), chunk({"content": "A dot."}),
        chunk(finish="stop"), chunk(usage=USAGE), b"data: [DONE]\n\n"]))
    css(page, "#system").send_keys("Describe images.")
    css(page, "#extra").send_keys('{"seed": 3}')
    type_and_send(page, "What is it?")
    wait_done(page)
    assert css(page, "#export").is_enabled()
    before = set(os.listdir(page.downloads))
    css(page, "#export").click()
    name = wait(page, lambda d: [n for n in os.listdir(d.downloads) if n not in before and n.endswith(".json")],
                "the downloaded trace")[0]
    folder = tmp_path / "traces" / "playground"
    folder.mkdir(parents=True)
    shutil.move(os.path.join(page.downloads, name), str(folder / name))

    trace = load_trace(str(folder / name))
    assert set(trace) == {"trace_id", "model", "timestamp", "config", "history"}
    assert trace["model"] == "fake"
    assert trace["config"] == {"system_prompt": "Describe images.", "seed": 3, "model": "fake"}
    assert trace["history"][0] == {"role": "user", "content_items": [
        {"type": "inline_data", "data": image, "mime_type": "image/png"}, {"type": "text", "text": "What is it?"}]}
    assert trace["history"][1]["content_items"] == [
        {"type": "thinking", "thinking": "Hm.", "fidelity": {"reasoning_field": "reasoning_content"}},
        {"type": "text", "text": "A dot."}]
    assert trace["history"][1]["finish_reason"] == "stop"
    check_messages(trace["history"])  # what the tracer restores is valid input for the next call
    listed = list_traces(str(tmp_path / "traces"))
    assert [(t["trace_id"], t["model"], t["messages"]) for t in listed] == [("playground/" + name[:-5], "fake", 2)]

    server, url = viewer.serve_in_thread(str(tmp_path / "traces"))
    connections = track_connections(server)  # (the browser keeps its connections: they end with the viewer)
    try:
        page.get(viewer.trace_url(url, listed[0]["trace_id"]))
        wait(page, lambda d: "A dot." in d.find_element(By.ID, "main").text, "the viewer's page")
        main = page.find_element(By.ID, "main").text
        assert "Describe images." in main and "What is it?" in main and "image/png" in main
        console(page)  # the viewer's own page is not under test here
        page.allow = ("/favicon.ico",)  # the viewer's page asks for one, after the drain above
    finally:
        close_server(server, connections)

    # Open trace: the conversation comes back as it was exported, and the next turn sends it
    open_page(page, page.site.url)
    css(page, "#trace-file").send_keys(str(folder / name))
    wait(page, lambda d: d.find_element(By.ID, "status").text.startswith("Opened "), "the opened trace")
    with open(str(folder / name), encoding="utf-8") as handle:
        exported = json.load(handle)
    assert history(page) == exported["history"]
    assert css(page, "#system").get_attribute("value") == "Describe images."
    assert json.loads(css(page, "#extra").get_attribute("value")) == {"seed": 3}
    assert len(page.find_elements(By.CSS_SELECTOR, "#transcript .message")) == 2
    upstream.replies.append(text_reply("Still a dot."))
    type_and_send(page, "And now?")
    wait_done(page)
    assert page.site.app.bodies[-1]["messages"][:2] == exported["history"]
    assert page.site.app.bodies[-1]["config"] == {"system_prompt": "Describe images.", "seed": 3}


def test_a_trace_with_malformed_items_is_refused_and_the_conversation_kept(page, upstream, tmp_path):
    upstream.replies.append(text_reply("Kept."))
    type_and_send(page, "hello")
    wait_done(page)
    before = history(page)
    shown = [m.text for m in page.find_elements(By.CSS_SELECTOR, "#transcript .message")]
    bad = [None, "text", [], {"text": "no type"}, {"type": 3},
           {"type": "tool_result", "tool_call_id": "a", "text": "t", "images": "data:image/png;base64,AA=="}]
    for n, item in enumerate(bad):
        path = tmp_path / "bad{}.json".format(n)
        path.write_text(json.dumps({"model": "fake", "config": {}, "history": [
            {"role": "user", "content_items": [{"type": "text", "text": "hi"}, item]}]}))
        css(page, "#trace-file").send_keys(str(path))
        wait(page, lambda d: "bad{}.json".format(n) in d.find_element(By.ID, "status").text, "the refusal")
        assert css(page, "#status").text == "bad{}.json is not an agenthub trace".format(n)
        assert history(page) == before
        assert [m.text for m in page.find_elements(By.CSS_SELECTOR, "#transcript .message")] == shown
    # the page still works: the next turn goes with the kept conversation
    upstream.replies.append(text_reply("Still here."))
    type_and_send(page, "again")
    wait_done(page)
    assert css(page, "#status").text.startswith("Done")
    assert page.site.app.bodies[-1]["messages"][:2] == before


def test_the_page_is_served_with_its_csp_and_needs_nothing_it_refuses(page):
    with urlopen(page.site.url) as answer:
        assert answer.headers["Content-Security-Policy"] == playground.CSP
        assert answer.headers["Content-Type"].startswith("text/html")
        assert sorted((k, v) for k, v in answer.headers.items() if k not in ("Server", "Date", "Connection")) == sorted(
            playground.HEADERS + [("Content-Length", str(len(playground.PAGE)))])
        body = answer.read()
    assert body == playground.PAGE
    policy = dict(part.strip().split(" ", 1) for part in playground.CSP.split(";"))
    assert policy["default-src"] == "'none'" and policy["connect-src"] == "'self'"
    assert policy["frame-ancestors"] == "'none'" and policy["img-src"] == "'self' data: blob:"
    assert "unsafe" not in playground.CSP
    tags = re.findall(r"<[a-z][^>]*>", playground.PAGE.decode("utf-8").split("<script>")[0])
    assert len(tags) > 50
    assert [t for t in tags if re.search(r"\s(on[a-z]+|style)\s*=", t)] == []   # no inline handlers or styles
    assert [t for t in tags if re.search(r"\s(src|href)\s*=\s*\"(?!data:)", t)] == []  # nothing fetched
    assert playground.PAGE.count(b"<script>") == 1 and playground.PAGE.count(b"<style>") == 1

    assert bad_entries(console(page)) == []
    # control: the policy is live (an injected inline script is refused) and the console check sees it
    page.execute_script("var s = document.createElement('script'); document.body.appendChild(s);"
                        "try { s.text = 'window.__injected = 1'; } catch (e) { window.__tt = String(e); }")
    assert page.execute_script("return window.__injected") is None
    assert "TrustedScript" in page.execute_script("return window.__tt")
    page.execute_script("document.body.setAttribute('style', 'color: red')")
    refused = [e["message"] for e in bad_entries(console(page))]
    assert any("requires 'TrustedScript' assignment" in m for m in refused), refused
    assert any("Applying inline style violates" in m and "Content Security Policy" in m for m in refused), refused



def test_a_page_elsewhere_that_opens_the_playground_cannot_reach_or_navigate_it(browser, site):
    """Cross-Origin-Opener-Policy: a page of another origin that opened the playground in a window gets no
    handle on it (it could otherwise send it, later, to a look-alike page asking for the server key)."""
    elsewhere = site.url.replace("127.0.0.1", "localhost") + "v1/models"  # another origin (same server)
    browser.get(elsewhere)
    mine = browser.current_window_handle
    browser.execute_script("window.__opened = window.open(arguments[0], 'playground')", site.url)
    try:
        wait(browser, lambda d: len(d.window_handles) == 2, "the opened window")
        opened = [h for h in browser.window_handles if h != mine][0]
        browser.switch_to.window(opened)
        wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#model option"), "the model list")
        browser.switch_to.window(mine)
        assert browser.execute_script("return window.__opened.closed") is True  # severed, not open
        browser.execute_script("try { window.__opened.location = 'about:blank#taken'; } catch (e) {}")
        time.sleep(0.3)
        browser.switch_to.window(opened)
        assert browser.current_url == site.url
        assert browser.execute_script("return window.opener") is None
    finally:
        for handle in browser.window_handles:
            if handle != mine:
                browser.switch_to.window(handle)
                browser.close()
        browser.switch_to.window(mine)

def test_server_key_is_asked_kept_in_session_storage_and_asked_again_on_401(browser, upstream):
    site = make_site(upstream, api_keys=["s3cret-key"])
    try:
        console(browser)
        browser.get(site.url)
        dialog = wait(browser, lambda d: d.find_element(By.ID, "key-dialog") if
                      d.find_element(By.ID, "key-dialog").get_property("open") else None, "the key dialog")
        assert "needs a key" in dialog.find_element(By.ID, "key-reason").text
        box = css(browser, "#key-input")
        box.send_keys("wrong-key", Keys.ENTER)
        wait(browser, lambda d: "refused" in d.find_element(By.ID, "key-reason").text, "the key asked again")
        assert css(browser, "#key-dialog").get_property("open") is True
        css(browser, "#key-input").send_keys("s3cret-key", Keys.ENTER)
        wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#model option"), "the model list")
        assert [o.text for o in browser.find_elements(By.CSS_SELECTOR, "#model option")] == ["fake", "other"]
        assert browser.execute_script("return sessionStorage.getItem('agenthub.playground.key')") == "s3cret-key"

        browser.get(site.url)  # a reload keeps the key: not asked again
        wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#model option"), "the model list")
        assert css(browser, "#key-dialog").get_property("open") is False
        upstream.replies.append(text_reply("Hi."))
        type_and_send(browser, "hello")
        wait_done(browser)
        assert css(browser, "#status").text.startswith("Done")
        assert upstream.requests[-1]["headers"]["Authorization"] == "Bearer " + UPSTREAM_KEY

        # the key stops working (rotated on the server): the next turn asks again, then goes through
        browser.execute_script("sessionStorage.setItem('agenthub.playground.key', 'rotated-away')")
        upstream.replies.append(text_reply("Again."))
        type_and_send(browser, "and again")
        wait(browser, lambda d: d.find_element(By.ID, "key-dialog").get_property("open"), "the key dialog")
        css(browser, "#key-input").send_keys("s3cret-key", Keys.ENTER)
        wait_done(browser)
        assert last_answer(browser).find_element(By.CSS_SELECTOR, ".text").text == "Again."
        assert [m["role"] for m in history(browser)] == ["user", "assistant", "user", "assistant"]
        entries = console(browser)
        assert bad_entries(entries, allow=("status of 401",)) == []
        assert any("status of 401" in e["message"] for e in entries)  # the 401s did happen
    finally:
        browser.execute_script("sessionStorage.clear()")
        site.close()


def test_errors_before_and_during_the_stream_are_shown_with_their_type(page, upstream):
    page.allow = ("status of 400",)
    upstream.replies.append(Reply([json.dumps({"error": {"message": "bad request, no cookie",
                                                         "type": "invalid_request_error"}}).encode()],
                                  status=400, headers={"Content-Type": "application/json"}))
    type_and_send(page, "first")
    wait_done(page)
    notice = last_answer(page).find_element(By.CSS_SELECTOR, ".notice.bad")
    assert notice.find_element(By.CSS_SELECTOR, ".type").text == "UpstreamError"
    assert notice.find_element(By.CSS_SELECTOR, ".error-text").text == (
        "bad request, no cookie (status 400, error_type invalid_request_error)")

    upstream.replies.append(Reply([chunk({"role": "assistant", "content": "Half an ans"})]))  # cut: no finish, no [DONE]
    type_and_send(page, "second")
    wait_done(page)
    notice = last_answer(page).find_element(By.CSS_SELECTOR, ".notice.bad")
    assert notice.find_element(By.CSS_SELECTOR, ".type").text == "StreamProtocolError"
    assert last_answer(page).find_element(By.CSS_SELECTOR, ".body .text").text == "Half an ans"
    assert history(page) == []
    assert css(page, "#input").get_attribute("value") == "second"
    assert "StreamProtocolError" in css(page, "#status").text


def test_settings_are_checked_before_anything_is_sent(page, upstream):
    css(page, "#tools").send_keys('[{"name": "a"}, {"nam": "b"}]')
    assert css(page, "#tools-hint").text == "tools[1] needs a non-empty name"
    assert "invalid" in css(page, "#tools").get_attribute("class")
    css(page, "#max-tokens").send_keys("1.5")
    css(page, "#extra").send_keys('{"temperature": 1, "seed": 2}')
    assert css(page, "#extra-hint").text == "temperature has a field of its own above"
    type_and_send(page, "hello")
    status = css(page, "#status").text
    assert status.startswith("Fix the settings: ") and "max tokens must be a positive whole number" in status
    assert "tools: tools[1] needs a non-empty name" in status and "other config: temperature has" in status
    assert css(page, "#config-error").is_displayed()
    css(page, "#extra").clear()
    css(page, "#extra").send_keys('{"trace_id": "a/b"}')
    assert css(page, "#extra-hint").text == "trace_id is not sent to the server: use Export trace"
    assert page.site.app.bodies == [] and upstream.requests == []
    assert css(page, "#input").get_attribute("value") == "hello"



def test_number_fields_the_browser_cannot_read_are_refused_not_dropped(page, upstream):
    """A number field holding what is no number ("1e", "e") reads as "" in the browser (validity.badInput):
    it is refused as a bad setting, never sent as if the field were empty."""
    css(page, "#max-tokens").send_keys("1e")
    css(page, "#temperature").send_keys("e")
    assert page.execute_script("return [document.getElementById('max-tokens').value, "
                               "document.getElementById('temperature').value]") == ["", ""]
    type_and_send(page, "hello")
    assert css(page, "#status").text == ("Fix the settings: max tokens must be a positive whole number; "
                                         "temperature must be a number ≥ 0")
    assert "invalid" in css(page, "#max-tokens").get_attribute("class")
    assert "invalid" in css(page, "#temperature").get_attribute("class")
    assert page.site.app.bodies == [] and upstream.requests == []
    css(page, "#max-tokens").clear()
    css(page, "#temperature").clear()
    upstream.replies.append(text_reply("ok"))
    css(page, "#send").click()
    wait_done(page)
    assert css(page, "#status").text.startswith("Done")
    assert page.site.app.bodies[0]["config"] == {}

# -- the page's own pieces, against the library's --------------------------------------------------

FOLD_CASES = [
    # text pieces merge; a signature arriving on the open item closes it
    [{"type": "thinking", "thinking": "a"}, {"type": "thinking", "thinking": "b", "fidelity": {"signature": "s"}},
     {"type": "thinking", "thinking": "c"}, {"type": "text", "text": "x"}, {"type": "text", "text": "y"}],
    # equal fidelity joins, different fidelity splits; empty items without fidelity vanish
    [{"type": "text", "text": "p", "fidelity": {"phase": "commentary"}},
     {"type": "text", "text": "q", "fidelity": {"phase": "commentary"}},
     {"type": "text", "text": "r", "fidelity": {"phase": "final_answer"}}, {"type": "text", "text": ""},
     {"type": "thinking", "thinking": "", "fidelity": {"signature": "only"}}],
    # partial tool calls dropped, complete ones and media kept as they came
    [{"type": "partial_tool_call", "name": "f", "tool_call_id": "c1", "arguments": "{\"a\""},
     {"type": "partial_tool_call", "name": "", "tool_call_id": "", "arguments": ": 1}"},
     {"type": "tool_call", "name": "f", "tool_call_id": "c1", "arguments": {"a": 1}, "fidelity": {"k": [1, {"z": 2}]}},
     {"type": "text", "text": "t"}, {"type": "inline_data", "data": b"\x00\xffpng", "mime_type": "image/png"},
     {"type": "text", "text": "u"}, {"type": "text", "text": "v", "fidelity": {}}],
]


@pytest.mark.parametrize("items", FOLD_CASES, ids=["signature", "fidelity", "tools-media"])
def test_the_page_folds_events_exactly_as_collect(page, items):
    events = [{"role": "assistant", "event_type": "start", "content_items": [], "usage_metadata": None,
               "finish_reason": None, "created_at": 1}]
    events += [{"role": "assistant", "event_type": "delta", "content_items": [item], "usage_metadata": None,
                "finish_reason": None, "created_at": 2 + n} for n, item in enumerate(items)]
    events.append({"role": "assistant", "event_type": "stop", "content_items": [],
                   "usage_metadata": {"cached_tokens": None, "prompt_tokens": 3, "thoughts_tokens": 1,
                                      "response_tokens": 2}, "finish_reason": "stop", "created_at": 99})
    folded = page.execute_script("return window.agenthubPlayground.collect(arguments[0])", to_jsonable(events))
    assert folded == to_jsonable(collect(events))


def canned_site(upstream, *bodies, **kw):
    """The real app (page, model list, keys) whose POST /v1/stream answers the ``bodies`` (SSE bytes) instead,
    in ``kw["pieces"]``-byte writes (default 8 KB); before each body after the first it waits for
    ``kw["gate"]`` (a threading.Event)."""
    pieces = kw.get("pieces", 8192)

    def answer():
        for n, body in enumerate(bodies):
            if n:
                kw["gate"].wait(10)
            for i in range(0, len(body), pieces):
                yield body[i:i + pieces]

    def wrap(app):
        def canned(environ, start_response):
            if environ["PATH_INFO"] == "/v1/stream":
                start_response("200 OK", [("Content-Type", "text/event-stream")])
                return answer()
            return app(environ, start_response)
        return canned

    return make_site(upstream, wrap)


def test_sse_framing_crlf_comments_multiline_data_one_byte_at_a_time(browser, upstream):
    """The page's SSE reader on a canned body (CRLF and lone CR line ends, comments, `data:` without a
    space, JSON over two data lines, an image as inline bytes, a last message with no blank line after
    it) written one byte per chunk."""
    start = {"role": "assistant", "event_type": "start", "content_items": [], "usage_metadata": None,
             "finish_reason": None, "created_at": 5}
    delta = dict(start, event_type="delta", content_items=[{"type": "text", "text": "é\u2028ok"}])
    picture = dict(start, event_type="delta", content_items=[
        {"type": "inline_data", "data": {"__bytes__": base64.b64encode(png(3, 2)).decode()}, "mime_type": "image/png",
         "fidelity": {"signature": "sig"}}])
    stop = dict(start, event_type="stop", finish_reason="stop",
                usage_metadata={"cached_tokens": 0, "prompt_tokens": 1, "thoughts_tokens": None, "response_tokens": 2})
    body = (b": keep-alive\r\n\r\nevent: message\r\ndata:" + json.dumps(start).encode() + b"\r\n\r\n"
            b"id: 7\r\ndata: {\r\ndata: " + json.dumps(delta, ensure_ascii=False)[1:].encode("utf-8")
            + b"\r\n\r\n: keep-alive\r\rdata: " + json.dumps(picture).encode() + b"\r\n\r\n"
            b"data: " + json.dumps(stop).encode() + b"\n\ndata: [DONE]")

    site = canned_site(upstream, body, pieces=1)
    try:
        console(browser)
        open_page(browser, site.url)
        type_and_send(browser, "hi")
        wait_done(browser)
        assert css(browser, "#status").text.startswith("Done")
        events = from_jsonable([start, delta, picture, stop])
        assert strip_created(history(browser)[1]) == strip_created(to_jsonable(collect(events)))
        answer = last_answer(browser)
        assert answer.find_element(By.CSS_SELECTOR, ".body .text").text.startswith("é")
        shown = answer.find_element(By.CSS_SELECTOR, ".body img.media")  # model output media: a data: URL
        assert browser.execute_script("return [arguments[0].naturalWidth, arguments[0].naturalHeight]", shown) == [3, 2]
        assert bad_entries(console(browser)) == []
    finally:
        site.close()


def sse_events(events, done=True):
    return (b"".join(b"data: " + json.dumps(to_jsonable(e)).encode("utf-8") + b"\n\n" for e in events)
            + (b"data: [DONE]\n\n" if done else b""))


def test_long_text_and_long_tool_arguments_are_shown_whole(browser, upstream):
    """Streamed text is appended a frame at a time and continues in new segments past 8 KB; streaming
    arguments past 16 KB show their tail: what ends on the page and in the history is still exact."""
    base = {"role": "assistant", "usage_metadata": None, "finish_reason": None, "created_at": 9}
    lines = ["line {} {}\n".format(n, "x" * (n % 7)) for n in range(3000)]
    fragments = ['{"data": "'] + ["y" * 19 + str(n % 10) for n in range(1500)] + ['"}']
    arguments = json.loads("".join(fragments))
    events = [dict(base, event_type="start", content_items=[])]
    events += [dict(base, event_type="delta", content_items=[{"type": "text", "text": line}]) for line in lines]
    events += [dict(base, event_type="delta", content_items=[{"type": "partial_tool_call", "name": "save" if n == 0 else "",
                                                              "tool_call_id": "c9" if n == 0 else "", "arguments": f}])
               for n, f in enumerate(fragments)]
    events.append(dict(base, event_type="delta", content_items=[
        {"type": "tool_call", "name": "save", "tool_call_id": "c9", "arguments": arguments}]))
    events.append(dict(base, event_type="stop", finish_reason="tool_call", usage_metadata={
        "cached_tokens": None, "prompt_tokens": 1, "thoughts_tokens": None, "response_tokens": 4000}))
    gate = threading.Event()
    half = 1 + len(lines) // 2  # the first half of the text is on the page before the rest is sent
    site = canned_site(upstream, sse_events(events[:half], done=False), sse_events(events[half:]), gate=gate)
    try:
        console(browser)
        open_page(browser, site.url)
        type_and_send(browser, "go")
        shown = "".join(lines[:half - 1])
        wait(browser, lambda d: last_answer(d).find_element(By.CSS_SELECTOR, "div.part.text").get_property(
            "textContent") == shown, "the first half")
        gate.set()
        wait_done(browser)
        assert css(browser, "#status").text.startswith("Done")
        answer = last_answer(browser)
        text = answer.find_element(By.CSS_SELECTOR, "div.part.text")
        assert text.get_property("textContent") == "".join(lines)
        assert len(text.find_elements(By.CSS_SELECTOR, "div.segment")) >= 1
        assert answer.find_element(By.CSS_SELECTOR, "pre.args").get_property("textContent") == json.dumps(
            arguments, indent=2)
        assert strip_created(history(browser)[1]) == strip_created(to_jsonable(collect(events)))
        assert bad_entries(console(browser)) == []
    finally:
        site.close()
