"""Issue 24 A7: ``agenthub trace view --host 0.0.0.0`` served every trace to the network.  Off loopback
the viewer now needs a key, as ``agenthub serve`` needs api_keys; with one, every request shows it."""

import http.client
import os
import subprocess
import sys

import pytest

from agenthub.apps.viewer import COOKIE, serve, serve_in_thread
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
    assert headers["Set-Cookie"] == "{}={}; HttpOnly; SameSite=Strict; Path=/".format(COOKIE, KEY)
    assert KEY.encode() not in body
    status, _, body = _get(keyed, path, {"Cookie": "other=1; {}={}".format(COOKIE, KEY)})
    assert status == 200 and b"secret plan" in body


def test_with_a_key_any_host_name_is_answered(keyed):
    """Off loopback the machine has names the viewer cannot know; the key, not the Host, says who may read."""
    status, _, body = _get(keyed, "/trace/agent/run1", {"Authorization": "Bearer " + KEY}, host="viewer.lan:8765")
    assert status == 200 and b"secret plan" in body
    status, _, body = _get(keyed, "/trace/agent/run1", host="viewer.lan:8765")
    assert status == 401 and b"secret plan" not in body
