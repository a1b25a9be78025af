"""``agenthub trace view DIR``: saved traces in a web page, served by the standard library.

``serve(folder)`` starts an ``http.server`` on 127.0.0.1 that answers:

- ``/``: the list of traces under the folder;
- ``/trace/<trace_id>``: one conversation: config, system prompt and tools, then each
  message with its text, thinking, tool calls and results, images and audio inline,
  and the usage of every answer with the totals;
- ``/raw/<trace_id>.json`` and ``.txt``: the files themselves.

Each page is one self-contained HTML document (no external script, style or font):
the trace travels inside it as JSON and a small script renders it with
``textContent`` only, so nothing a model wrote can run as markup.  A trace_id that
escapes the folder is answered 404, like a missing one.

Hardening: the Content-Security-Policy (``CSP``) lets only the page's own script and
style run, by their SHA-256 (no ``'unsafe-inline'``), and no string become markup (Trusted Types);
every answer also has the playground's other headers (``X-Frame-Options: DENY``,
``Cross-Origin-Opener-Policy: same-origin``, ``Referrer-Policy: no-referrer``, ...); links are made only of http(s)
URLs and images only of those and ``data:image/`` URLs (a ``javascript:`` URL a model
wrote is shown as text); a request whose Host header is not localhost or the bound
address (DNS rebinding) is answered 421.

Off loopback (``--host 0.0.0.0``) the viewer needs a key (``serve(..., key=)``, ``agenthub trace
view --key-env NAME``), as ``agenthub serve`` needs api_keys: every request then shows it, as
``Authorization: Bearer <key>``, or once as ``?key=<key>`` (answered with a redirect that drops it
from the address and a cookie, HttpOnly and SameSite=Strict, that carries a session from then on).
The cookie never holds the key: a browser sends a host's cookies to every port of it (another local
server would read it there), so it holds a random session value this viewer made when it started (valid
while it runs, nowhere else), under a name of this port's (``agenthub_viewer_<port>``: two viewers on
one host keep their own).  ``one_time_code(server)`` makes a code for ``?code=<code>`` in place of the
key (``agenthub trace view --open`` writes it in a page of mode 0600 that the browser opens: its command
line, which other users of the machine can read, holds neither): taken once, within ``CODE_SECONDS``, it is
answered as the key is, by a page of this viewer's that goes on (a redirect would carry the file's origin on,
after which a browser sends no SameSite=Strict cookie).

Bounds: a client's request line and headers must arrive whole within ``HEADER_TIMEOUT_SECONDS`` (else the
connection is closed), each answer be taken within ``WRITE_TIMEOUT_SECONDS``, and at most ``MAX_CONNECTIONS``
connections are served at once (one past them gets a 503 at once).  A link in the folder to a file or folder
outside it is neither listed nor served.
"""

import hmac
import io
import secrets
import ipaddress
import json
import os
import re
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, Optional, Tuple
from urllib.parse import parse_qsl, quote, unquote, unquote_plus, urlencode, urlsplit

from ..errors import ConfigError
from ..hosts.trust import authority_parts, is_loopback_host
from ..stream import surrogates_escaped
from ..tracer import _open_regular, list_traces, trace_paths
from ._dom import build, csp_source
from ._sockets import ConnectionLimit, DeadlineReader, busy_answer
from .._jsondepth import loads as _json_loads

__all__ = ["serve", "page", "PAGE", "CSP", "serve_in_thread", "trace_url", "cookie_name", "one_time_code"]

PAGE, STYLE, SCRIPT = build("viewer")  # assets/viewer.html, .css, .js (and pages.css, dom.js: see _dom)

#: the viewer's Content-Security-Policy: only the page's own script and style run (by hash: no
#: inline script or handler anything else put in the page would execute), nothing is fetched but
#: images (a remote one only when the reader clicks its button: viewer.js), no form, frame, base or plugin
CSP = ("default-src 'none'; script-src {}; style-src {}; img-src data: http: https:; media-src data:; "
       "base-uri 'none'; form-action 'none'; frame-ancestors 'none'; object-src 'none'; "
       "require-trusted-types-for 'script'; trusted-types 'none'".format(csp_source(SCRIPT), csp_source(STYLE)))


def page(data: Dict[str, Any]) -> bytes:
    """The viewer page with ``data`` embedded (safe inside a script element; a number JSON has not as null)."""
    try:
        text = json.dumps(data, ensure_ascii=False, allow_nan=False)
    except ValueError:  # NaN or Infinity (a trace file written elsewhere): null, which a browser's JSON.parse reads
        text = json.dumps(json.loads(json.dumps(data), parse_constant=lambda name: None), ensure_ascii=False)
    text = surrogates_escaped(text)
    text = text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
    text = text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    return PAGE.replace("__DATA__", text).encode("utf-8")


#: the session cookie's name is this and the port: ``agenthub_viewer_8765`` (cookie_name)
COOKIE = "agenthub_viewer"
#: how long a code of one_time_code is good for (seconds), and how many may wait at once
CODE_SECONDS = 60.0
MAX_CODES = 16
#: a client's request line and headers must arrive whole within this many seconds (else the connection is closed),
#: each answer be taken within ``WRITE_TIMEOUT_SECONDS``; at most ``MAX_CONNECTIONS`` are served at once (each on a
#: thread of its own: one past them is answered 503 at once, with no thread made for it).  Read by ``serve()``.
HEADER_TIMEOUT_SECONDS = 10.0
WRITE_TIMEOUT_SECONDS = 30.0
MAX_CONNECTIONS = 64
_KEY = re.compile(r"[A-Za-z0-9._~+/=-]{16,512}\Z")


class _Handler(BaseHTTPRequestHandler):
    root = ""  # set on the subclass made by serve()
    key = None  # type: Optional[bytes]  # set on the subclass made by serve() when the viewer has one
    server_version = "agenthub-trace-viewer"
    header_timeout = HEADER_TIMEOUT_SECONDS  # (set on the subclass made by serve())
    write_timeout = WRITE_TIMEOUT_SECONDS

    def setup(self) -> None:
        BaseHTTPRequestHandler.setup(self)
        self.rfile.close()  # the request's head is read under one deadline (a client trickling bytes included)
        reader = DeadlineReader(self.connection, self.header_timeout)
        reader.deadline = time.monotonic() + self.header_timeout
        self.rfile = io.BufferedReader(reader, 65536)

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        if self.key is not None and not self._key_given():
            return
        if not self._host_allowed():
            # DNS rebinding: a page elsewhere whose name now points at 127.0.0.1 sends its own Host
            self._send(421, "text/plain; charset=utf-8", b"this viewer answers only to localhost and its own address\n")
            return
        path = unquote(urlsplit(self.path).path)
        try:
            if path in ("/", "/index.html"):
                self._send(200, "text/html; charset=utf-8", page(self._data("index")))
            elif path.startswith("/trace/"):
                trace_id = path[len("/trace/"):]
                with _open_regular(self._paths(trace_id)["json"]) as handle:
                    trace = _json_loads(handle.read())
                data = self._data("trace")
                data.update(trace_id=trace_id, trace=trace)
                self._send(200, "text/html; charset=utf-8", page(data))
            elif path.startswith("/raw/") and path.endswith((".json", ".txt")):
                stem, ext = path[len("/raw/"):].rsplit(".", 1)
                with _open_regular(self._paths(stem)[ext]) as handle:  # (never a FIFO: it blocks forever)
                    body = handle.buffer.read()
                kind = "application/json" if ext == "json" else "text/plain; charset=utf-8"
                self._send(200, kind, body)
            else:
                self._not_found()
        except (ConfigError, OSError, ValueError, RecursionError):  # (a file nested past the parser's stack: no trace)
            self._not_found()

    def _key_given(self) -> bool:
        """The request shows the key (a header, ``?key=``), this viewer's session cookie, or a one-time code
        (``?code=``); the address's key or code is answered with a redirect setting the cookie.  Otherwise a
        401 has been sent."""
        assert self.key is not None
        given = []
        scheme, _, token = (self.headers.get("Authorization") or "").strip().partition(" ")
        if scheme.lower() == "bearer":
            given.append(token.strip())
        session = self.server.session  # type: ignore[attr-defined]
        cookie = cookie_name(self.server.server_address[1])
        in_cookie = False
        for part in (self.headers.get("Cookie") or "").split(";"):
            name, _, value = part.strip().partition("=")
            if name == cookie:
                in_cookie = hmac.compare_digest(session, value.encode("utf-8", "replace")) | in_cookie
        parts = urlsplit(self.path)
        query = parse_qsl(parts.query, keep_blank_values=True)
        # the key's own value read with unquote, not as a form's: a "+" pasted in the address is a "+" (a key may
        # hold one), not a space
        pairs = [(unquote_plus(name), unquote(value)) for name, _, value in (p.partition("=")
                                                                           for p in parts.query.split("&"))]
        in_query = [value for name, value in pairs if name == "key"]
        codes = [value for name, value in pairs if name == "code"]
        ok = in_cookie
        for value in given + in_query[:1]:  # each compared in constant time
            ok = hmac.compare_digest(self.key, value.encode("utf-8", "replace")) | ok
        by_code = bool(codes) and _take_code(self.server, codes[0])
        if not (ok or by_code):
            self._send(401, "text/plain; charset=utf-8", b"this viewer needs its key: open the address with "
                       b"?key=<the key> once (or send Authorization: Bearer <the key>)\n",
                       [("WWW-Authenticate", 'Bearer realm="agenthub trace viewer"')])
            return False
        if in_query or codes:  # the key leaves the address bar and the history: a session cookie from now on
            rest = urlencode([(name, value) for name, value in query if name not in ("key", "code")])
            location = quote("/" + parts.path.lstrip("/"), safe="/%") + ("?" + rest if rest else "")  # (no //host)
            cookie_header = ("Set-Cookie", "{}={}; HttpOnly; SameSite=Strict; Path=/".format(
                cookie, session.decode("ascii")))
            if codes and not in_query:
                # a code comes from the page ``--open`` wrote (a file: another site): a redirect would carry that
                # origin on, and a browser does not send a SameSite=Strict cookie after it; a page of this
                # viewer's own that goes on does
                shown = location.replace("&", "&amp;").replace('"', "&quot;")
                self._send(200, "text/html; charset=utf-8", '<!doctype html><meta http-equiv="refresh" content="0;'
                           'url={0}"><title>agenthub trace viewer</title><a href="{0}">Continue</a>\n'.format(shown)
                           .encode("utf-8"), [cookie_header])
                return False
            self._send(303, "text/plain; charset=utf-8", b"", [("Location", location), cookie_header])
            return False
        return True

    def _host_allowed(self) -> bool:
        """The Host header names this server: its bound address or localhost (with its port, or none).
        A viewer with a key answers any Host (the key, not the name, tells who may read)."""
        host = self.headers.get("Host")
        if not host or len(self.headers.get_all("Host") or ()) != 1:
            return False
        if self.key is not None:
            return True
        bound, port = self.server.server_address[0], self.server.server_address[1]
        parts = authority_parts(host)  # read as every host rule reads it (hosts.trust)
        if parts is None:
            return False
        name, given = parts
        if given is not None and given != port:
            return False
        names = {"localhost", str(bound).lower()}
        try:
            if ipaddress.ip_address(str(bound)).is_unspecified:  # bound to every address: loopback ones only
                names.update(("127.0.0.1", "::1"))
        except ValueError:
            pass
        return name in names

    def _paths(self, trace_id: str) -> Dict[str, str]:
        paths = trace_paths(trace_id, self.root)
        if not os.path.isfile(paths["json"]) or not all(self._inside(path) for path in paths.values()):
            raise ConfigError("no such trace")
        return paths

    def _inside(self, path: str) -> bool:
        """``path``, its links followed, is in the folder: a link to a file or folder elsewhere is not served."""
        root = os.path.realpath(self.root)
        return os.path.commonpath([root, os.path.realpath(path)]) == root

    def _data(self, kind: str) -> Dict[str, Any]:
        traces = [t for t in list_traces(self.root) if self._inside(os.path.join(self.root, t["trace_id"] + ".json"))]
        return {"page": kind, "root": os.path.abspath(self.root), "traces": traces}

    def _not_found(self) -> None:
        self._send(404, "text/plain; charset=utf-8", b"not found\n")

    def _send(self, status: int, kind: str, body: bytes, headers: Any = ()) -> None:
        self.connection.settimeout(self.write_timeout)  # (the whole answer: sendall's timeout is its total)
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("Content-Security-Policy", CSP)
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("X-Frame-Options", "DENY")  # (frame-ancestors' older spelling)
        # a page elsewhere that opens the viewer gets no handle on its window (as the playground)
        self.send_header("Cross-Origin-Opener-Policy", "same-origin")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # quiet: the CLI prints the URL once
        pass


class _Server(ConnectionLimit, ThreadingHTTPServer):
    daemon_threads = True
    session = b""  # the session cookie's value (random, made by serve())
    codes = None  # type: Optional[Dict[str, float]]  # one-time code -> when it lapses (time.monotonic())
    codes_lock = None  # type: Any


def cookie_name(port: int) -> str:
    """The session cookie's name on ``port`` (a browser sends a host's cookies to all its ports: each
    viewer reads its own)."""
    return "{}_{}".format(COOKIE, port)


def one_time_code(server: Any, seconds: Optional[float] = None) -> str:
    """A code that opens a keyed viewer's session once, within ``seconds`` (default ``CODE_SECONDS``):
    ``<url>?code=<code>``, for an address that must not hold the key (a browser's command line).  At most
    ``MAX_CODES`` wait at once (the oldest goes)."""
    if server.codes is None:
        raise ConfigError("this viewer has no key: its address needs no code")
    code = secrets.token_urlsafe(24)
    with server.codes_lock:
        now = time.monotonic()
        for old in [old for old, until in server.codes.items() if until <= now]:
            del server.codes[old]
        while len(server.codes) >= MAX_CODES:
            del server.codes[min(server.codes, key=server.codes.get)]
        server.codes[code] = now + (CODE_SECONDS if seconds is None else seconds)
    return code


def _take_code(server: Any, given: str) -> bool:
    """``given`` is a code of one_time_code not yet taken and not lapsed: it is spent now."""
    if server.codes is None:
        return False
    with server.codes_lock:
        now = time.monotonic()
        found = None
        for code, until in list(server.codes.items()):  # each compared in constant time
            if hmac.compare_digest(code.encode("ascii"), given.encode("utf-8", "replace")) and until > now:
                found = code
        if found is None:
            return False
        del server.codes[found]
        return True


def serve(folder: str, host: str = "127.0.0.1", port: int = 0,
          key: Optional[str] = None) -> Tuple[ThreadingHTTPServer, str]:
    """Bind a viewer of the traces under ``folder``; returns (server, url).  Call ``server.serve_forever()``.

    A ``host`` that is not loopback (``0.0.0.0``, a LAN address) needs ``key`` (16 to 512 characters
    of letters, digits and ``._~+/=-``): without one every trace would be served to the network.
    """
    if key is not None and (not isinstance(key, str) or not _KEY.fullmatch(key)):
        raise ConfigError("the viewer's key must be 16 to 512 characters of letters, digits and ._~+/=-")
    if key is None and not is_loopback_host(host):
        raise ConfigError("refusing to serve traces on {!r} without a key: a viewer reachable from other "
                          "machines needs one (agenthub trace view --key-env NAME), or listen on 127.0.0.1"
                          .format(host))
    handler = type("Handler", (_Handler,), {"root": os.path.abspath(folder),
                                            "key": None if key is None else key.encode("utf-8"),
                                            "header_timeout": HEADER_TIMEOUT_SECONDS,
                                            "write_timeout": WRITE_TIMEOUT_SECONDS})
    bind = host[1:-1] if host.startswith("[") and host.endswith("]") else host  # ([::1] as a URL writes it)
    server_class = _Server if ":" not in bind else type("Server", (_Server,), {"address_family": socket.AF_INET6})
    server = server_class((bind, port), handler)
    server.connections = threading.BoundedSemaphore(MAX_CONNECTIONS)
    if key is not None:
        server.session = secrets.token_urlsafe(32).encode("ascii")
        server.codes, server.codes_lock = {}, threading.Lock()
    server.busy = busy_answer("the trace viewer is at its limit of {} connections\n".format(MAX_CONNECTIONS).encode(
        "ascii"), "text/plain; charset=utf-8")
    bound_host, bound_port = server.server_address[0], server.server_address[1]
    shown = "[{}]".format(bound_host) if ":" in str(bound_host) else bound_host
    return server, "http://{}:{}/".format(shown, bound_port)


def serve_in_thread(folder: str, host: str = "127.0.0.1", port: int = 0,
                    key: Optional[str] = None) -> Tuple[ThreadingHTTPServer, str]:
    """``serve`` plus a daemon thread running it (for tests and notebooks); stop with ``server.shutdown()``."""
    server, url = serve(folder, host, port, key)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, url


def trace_url(base: str, trace_id: str) -> str:
    return base.rstrip("/") + "/trace/" + quote(trace_id)
