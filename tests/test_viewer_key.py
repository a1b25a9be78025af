"""Issue 24 A7: ``agenthub trace view --host 0.0.0.0`` served every trace to the network.  Off loopback
the viewer now needs a key, as ``agenthub serve`` needs api_keys; with one, every request shows it."""

import http.client
import os
import subprocess
import sys

import pytest

from agenthub.apps.viewer import COOKIE, one_time_code, serve, serve_in_thread
from agenthub.errors import ConfigError
from agenthub.tracer import save_trace

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KEY = "viewer-key-0123456789abcdef"
HISTORY = [{"role": "user", "content_items": [{"type": "text", "text": "the secret plan"}]},
           {"role": "assistant", "content_items": [{"type": "text", "text": "noted"}]}]


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "", "192.0.2.10", "example.com"])
def test_a_host_off_loopback_without_a_key_is_refused_before_binding(tmp_path, host):
    with pytest.raises(ConfigError, match="refusing to serve traces on .* without a key"):
        serve(str(tmp_path), host, 0)


@pytest.mark.parametrize("key", ["short", "with space in it 123", "semi;colon-0123456789", "x" * 513, 12345678901234567])
def test_a_key_that_cannot_travel_in_a_cookie_is_refused(tmp_path, key):
    with pytest.raises(ConfigError, match="the viewer's key must be"):
        serve(str(tmp_path), "127.0.0.1", 0, key=key)


def test_the_command_line_refuses_and_says_how(tmp_path):
    """In a subprocess: before the fix this served (and never returned); the timeout bounds that."""
    env = dict(os.environ, PYTHONPATH=ROOT)
    env.pop("VIEWER_KEY", None)
    run = subprocess.run([sys.executable, "-m", "agenthub", "trace", "view", str(tmp_path), "--host", "0.0.0.0",
                          "--port", "0"], cwd=str(tmp_path), env=env, timeout=60, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    assert run.returncode == 1 and run.stdout == b""
    assert run.stderr.decode().startswith("error: ConfigError: refusing to serve traces on '0.0.0.0' without a key")
    run = subprocess.run([sys.executable, "-m", "agenthub", "trace", "view", str(tmp_path), "--host", "0.0.0.0",
                          "--key-env", "VIEWER_KEY"], cwd=str(tmp_path), env=env, timeout=60,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert run.returncode == 1 and run.stderr.decode() == "error: ConfigError: $VIEWER_KEY is not set\n"


@pytest.fixture
def keyed(tmp_path):
    save_trace("agent/run1", "demo-model", HISTORY, {}, root=str(tmp_path))
    server, url = serve_in_thread(str(tmp_path), key=KEY)
    yield server
    server.shutdown()
    server.server_close()


def _get(server, path, headers=None, host=None):
    connection = http.client.HTTPConnection(server.server_address[0], server.server_address[1], timeout=10)
    try:
        connection.putrequest("GET", path, skip_host=True)
        connection.putheader("Host", host or "127.0.0.1:{}".format(server.server_address[1]))
        for name, value in (headers or {}).items():
            connection.putheader(name, value)
        connection.endheaders()
        answer = connection.getresponse()
        return answer.status, dict(answer.getheaders()), answer.read()
    finally:
        connection.close()


@pytest.mark.parametrize("path", ["/", "/trace/agent/run1", "/raw/agent/run1.json", "/raw/agent/run1.txt"])
@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer wrong-key-0123456789"},
                                     {"Cookie": COOKIE + "=wrong"}, {"Authorization": "Basic " + KEY}])
def test_without_the_key_nothing_is_shown(keyed, path, headers):
    status, answer_headers, body = _get(keyed, path, headers)
    assert status == 401
    assert answer_headers["WWW-Authenticate"].startswith("Bearer")
    assert b"secret plan" not in body and b"agent/run1" not in body
    status, _, body = _get(keyed, path + "?key=wrong-key-0123456789")
    assert status == 401 and b"secret plan" not in body


@pytest.mark.parametrize("path", ["/trace/agent/run1", "/raw/agent/run1.json"])
def test_the_key_as_a_header_or_once_in_the_address(keyed, path):
    status, _, body = _get(keyed, path, {"Authorization": "Bearer " + KEY})
    assert status == 200 and b"secret plan" in body
    status, headers, body = _get(keyed, path + "?key=" + KEY)
    assert status == 303 and headers["Location"] == path  # the key leaves the address
    cookie = _session_cookie(keyed, headers)
    assert KEY.encode() not in body
    status, _, body = _get(keyed, path, {"Cookie": "other=1; " + cookie})
    assert status == 200 and b"secret plan" in body


def _session_cookie(server, headers):
    """The cookie a 303 sets: this port's name, the viewer's session value (never the key); -> "name=value"."""
    name = "agenthub_viewer_{}".format(server.server_address[1])
    assert headers["Set-Cookie"] == "{}={}; HttpOnly; SameSite=Strict; Path=/".format(
        name, server.session.decode())
    assert KEY not in headers["Set-Cookie"] and len(server.session) >= 40
    return "{}={}".format(name, server.session.decode())


def test_the_cookie_holds_no_key_and_only_this_port_reads_it(keyed, tmp_path):
    """A browser sends a host's cookies to every port of it: the cookie held the key itself (another local
    server on another port read it), under one name for all viewers.  It holds a session value of this viewer's,
    named for its port; the key, or this session under another port's name, is not taken as a cookie."""
    _, headers, _ = _get(keyed, "/?key=" + KEY)
    cookie = _session_cookie(keyed, headers)
    port = keyed.server_address[1]
    for sent in ("agenthub_viewer_{}={}".format(port, KEY), "{}={}".format(COOKIE, KEY),
                 "agenthub_viewer_key=" + KEY, "agenthub_viewer_{}={}".format(port + 1, keyed.session.decode())):
        status, _, body = _get(keyed, "/trace/agent/run1", {"Cookie": sent})
        assert (sent, status) == (sent, 401) and b"secret plan" not in body
    other, _ = serve_in_thread(str(tmp_path), key=KEY)  # a second viewer: its own session, its own name
    try:
        assert other.session != keyed.session
        status, _, _ = _get(other, "/trace/agent/run1", {"Cookie": cookie})
        assert status == 401
    finally:
        other.shutdown()
        other.server_close()


def test_a_one_time_code_opens_the_session_once(keyed):
    """``?code=`` (what ``--open`` puts in the browser's command line in place of the key): answered as the key
    is (a redirect that drops it, the session cookie), once; a code spent, lapsed or made up is a 401."""
    code = one_time_code(keyed)
    status, headers, body = _get(keyed, "/trace/agent/run1?code=" + code + "&x=1")
    # (a page of the viewer's own that goes on, not a redirect: the code comes from a file's page, another site,
    # and a browser sends no SameSite=Strict cookie on a redirect that carries that origin on)
    assert (status, "Location" in headers) == (200, False) and code.encode() not in body
    assert body == (b'<!doctype html><meta http-equiv="refresh" content="0;url=/trace/agent/run1?x=1"><title>agenthub '
                    b'trace viewer</title><a href="/trace/agent/run1?x=1">Continue</a>\n')
    _session_cookie(keyed, headers)
    status, _, body = _get(keyed, "/trace/agent/run1?code=" + code)
    assert status == 401 and b"secret plan" not in body  # spent
    lapsed = one_time_code(keyed, seconds=0)
    for code in (lapsed, "made-up-code-0123456789", ""):
        status, _, body = _get(keyed, "/?code=" + code)
        assert status == 401 and b"agent/run1" not in body


def test_a_viewer_without_a_key_makes_no_code(tmp_path):
    server, _ = serve(str(tmp_path))
    try:
        with pytest.raises(ConfigError, match="this viewer has no key"):
            one_time_code(server)
    finally:
        server.server_close()


def test_with_a_key_any_host_name_is_answered(keyed):
    """Off loopback the machine has names the viewer cannot know; the key, not the Host, says who may read."""
    status, _, body = _get(keyed, "/trace/agent/run1", {"Authorization": "Bearer " + KEY}, host="viewer.lan:8765")
    assert status == 200 and b"secret plan" in body
    status, _, body = _get(keyed, "/trace/agent/run1", host="viewer.lan:8765")
    assert status == 401 and b"secret plan" not in body


def test_open_puts_neither_the_key_nor_a_code_on_the_browsers_command_line(tmp_path):
    """``agenthub trace view --key-env NAME --open`` ran the browser with ``?key=<the key>`` in its arguments
    (``ps`` shows them to every user of the machine), then with ``?code=<a one-time code>``: good until taken, there
    for a minute to any user who looked first.  Now the browser is given a page (a file of mode 0600) that sends the
    code on.  A real process, with $BROWSER a script that writes down its own /proc/self/cmdline: neither the key nor
    the code is in it; the page opens the session once, and is removed when the viewer stops."""
    import json
    import re
    import select
    import signal
    import stat
    import time
    from urllib.parse import unquote, urlsplit

    save_trace("agent/run1", "demo-model", HISTORY, {}, root=str(tmp_path))
    argv_file = tmp_path / "browser-argv.json"
    browser = tmp_path / "browser.py"
    browser.write_text("import json, sys\nwith open('/proc/self/cmdline', 'rb') as f:\n    line = f.read()\n"
                       "open({!r}, 'w').write(json.dumps([sys.argv, line.decode('utf-8', 'replace')]))\n".format(
                           str(argv_file)))
    env = dict(os.environ, PYTHONPATH=ROOT, VIEWER_KEY=KEY, BROWSER="{} {} %s".format(sys.executable, browser))
    child = subprocess.Popen([sys.executable, "-m", "agenthub", "trace", "view", str(tmp_path), "--key-env",
                              "VIEWER_KEY", "--port", "0", "--open"], cwd=str(tmp_path), env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        ready, _, _ = select.select([child.stdout], [], [], 60)
        assert ready, "the viewer never started"
        line = child.stdout.readline().decode()
        assert line.startswith("agenthub trace viewer: http://127.0.0.1:") and KEY not in line
        deadline = time.monotonic() + 60
        while not argv_file.exists() or not argv_file.read_text():
            assert time.monotonic() < deadline, "the browser was never started"
            time.sleep(0.05)
        argv, cmdline = json.loads(argv_file.read_text())
        [opened] = argv[1:]
        assert opened.startswith("file://") and opened.endswith(".html") and "code" not in opened
        page_path = unquote(urlsplit(opened).path)
        assert stat.S_IMODE(os.stat(page_path).st_mode) == 0o600
        with open(page_path, encoding="utf-8") as handle:
            page = handle.read()
        url = re.search(r'content="0;url=([^"]+)"', page).group(1).replace("&amp;", "&")
        parts = urlsplit(url)
        code = parts.query[len("code="):]
        assert parts.path == "/" and parts.query.startswith("code=") and len(code) > 30
        assert KEY not in cmdline and code not in cmdline and opened in cmdline

        class Port(object):
            server_address = ("127.0.0.1", parts.port)
        status, headers, _ = _get(Port, "/?" + parts.query)
        assert status == 200
        name, _, session = headers["Set-Cookie"].split(";")[0].partition("=")
        assert name == "agenthub_viewer_{}".format(parts.port) and KEY not in session and len(session) >= 40
        status, _, body = _get(Port, "/trace/agent/run1", {"Cookie": name + "=" + session})
        assert status == 200 and b"secret plan" in body
        assert _get(Port, "/?" + parts.query)[0] == 401  # the code is spent
        child.send_signal(signal.SIGINT)
        try:
            out, err = child.communicate(timeout=60)
        except subprocess.TimeoutExpired:  # (once under CI's load: its whole stderr, to see why)
            child.kill()
            out, err = child.communicate()
            pytest.fail("the viewer did not end at SIGINT; its stderr:\n" + err.decode("utf-8", "replace"))
        assert (child.returncode, err) == (0, b"")
        assert not os.path.exists(page_path)
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()
