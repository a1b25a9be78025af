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
style run, by their SHA-256 (no ``'unsafe-inline'``); links are made only of http(s)
URLs and images only of those and ``data:image/`` URLs (a ``javascript:`` URL a model
wrote is shown as text); a request whose Host header is not localhost or the bound
address (DNS rebinding) is answered 421.
"""

import base64
import hashlib
import ipaddress
import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, Tuple
from urllib.parse import quote, unquote, urlsplit

from ._dom import DOM_JS
from ..errors import ConfigError
from ..tracer import list_traces, trace_paths

__all__ = ["serve", "page", "PAGE", "CSP"]

PAGE = r"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>agenthub traces</title>
<style>
:root { --bg: #f6f7f9; --card: #fff; --ink: #1d2330; --muted: #667085; --line: #e3e6eb;
        --user: #2f6fde; --assistant: #178a5b; --think: #8a6d00; --thinkbg: #fffbea;
        --tool: #7a3fc4; --toolbg: #f6f0ff; --result: #0f7490; --resultbg: #ecfbff; --code: #f1f3f6; }
@media (prefers-color-scheme: dark) {
  :root { --bg: #14171c; --card: #1c2027; --ink: #e6e9ef; --muted: #98a2b3; --line: #2c323c;
          --user: #7aa7ff; --assistant: #4cc98f; --think: #e3c15a; --thinkbg: #2a2615;
          --tool: #c19bff; --toolbg: #261d33; --result: #5fd0ea; --resultbg: #14282e; --code: #252a33; }
}
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--ink);
       font: 15px/1.5 -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
a { color: var(--user); text-decoration: none; }
a:hover { text-decoration: underline; }
header { padding: 12px 20px; border-bottom: 1px solid var(--line); background: var(--card);
         display: flex; gap: 12px; align-items: baseline; }
header h1 { font-size: 17px; margin: 0; }
header .root { color: var(--muted); font-size: 13px; overflow-wrap: anywhere; }
.layout { display: grid; grid-template-columns: 280px minmax(0, 1fr); min-height: calc(100vh - 50px); }
nav { border-right: 1px solid var(--line); padding: 12px; background: var(--card); overflow-y: auto; }
nav .item { display: block; padding: 8px 10px; border-radius: 8px; margin-bottom: 2px; }
nav .item.current { background: var(--code); }
nav .item .name { display: block; font-weight: 600; overflow-wrap: anywhere; }
nav .item .sub { display: block; color: var(--muted); font-size: 12px; }
main { padding: 20px 28px 60px; max-width: 980px; }
main h2 { margin: 0 0 4px; font-size: 21px; overflow-wrap: anywhere; }
.meta { color: var(--muted); font-size: 13px; margin-bottom: 14px; }
.chips { display: flex; flex-wrap: wrap; gap: 6px; margin: 8px 0 14px; }
.chip { background: var(--code); border-radius: 999px; padding: 2px 10px; font-size: 13px; }
.box { background: var(--card); border: 1px solid var(--line); border-radius: 10px; padding: 10px 14px;
       margin: 10px 0; }
.box > .label, .part > .label { font-size: 12px; font-weight: 700; text-transform: uppercase; letter-spacing: .04em;
                                 color: var(--muted); margin-right: 8px; }
.totals { font-size: 14px; }
.message { background: var(--card); border: 1px solid var(--line); border-left: 4px solid var(--user);
           border-radius: 10px; padding: 12px 16px; margin: 14px 0; }
.message.assistant { border-left-color: var(--assistant); }
.message .head { display: flex; gap: 10px; align-items: baseline; margin-bottom: 6px; }
.message .role { font-weight: 700; color: var(--user); }
.message.assistant .role { color: var(--assistant); }
.message .when { color: var(--muted); font-size: 12px; }
.part { margin: 8px 0; }
.text { white-space: pre-wrap; overflow-wrap: anywhere; }
details.thinking { background: var(--thinkbg); border-radius: 8px; padding: 6px 12px; }
details.thinking summary { color: var(--think); font-weight: 600; cursor: pointer; }
details.thinking .text { color: var(--muted); font-style: italic; }
.tool-call { background: var(--toolbg); border-radius: 8px; padding: 8px 12px; }
.tool-call .label { color: var(--tool); }
.tool-result { background: var(--resultbg); border-radius: 8px; padding: 8px 12px; }
.tool-result .label { color: var(--result); }
code, pre { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 13px; }
code { background: var(--code); border-radius: 4px; padding: 1px 5px; }
pre { background: var(--code); border-radius: 6px; padding: 8px 10px; margin: 6px 0 0; white-space: pre-wrap;
      overflow-wrap: anywhere; }
.id { color: var(--muted); font-size: 12px; margin-left: 6px; }
img.media { display: block; max-width: 100%; max-height: 420px; border-radius: 6px; border: 1px solid var(--line);
            margin-top: 6px; }
.usage { color: var(--muted); font-size: 13px; border-top: 1px dashed var(--line); margin-top: 10px; padding-top: 6px; }
.empty { color: var(--muted); }
table.list { border-collapse: collapse; width: 100%; background: var(--card); border: 1px solid var(--line);
             border-radius: 10px; }
table.list th, table.list td { text-align: left; padding: 8px 12px; border-bottom: 1px solid var(--line); }
table.list th { font-size: 12px; color: var(--muted); text-transform: uppercase; }
</style>
</head>
<body>
<header><h1>agenthub traces</h1><span class="root" id="root"></span></header>
<div class="layout"><nav id="nav"></nav><main id="main"><p class="empty">Loading…</p></main></div>
<script id="data" type="application/json">__DATA__</script>
<script>
(function () {
  "use strict";
""" + DOM_JS + r"""  var DATA = JSON.parse(document.getElementById("data").textContent);
  var BUCKETS = [["prompt_tokens", "prompt"], ["cached_tokens", "cached"], ["thoughts_tokens", "thinking"],
                 ["response_tokens", "response"]];

  function traceHref(id) { return "/trace/" + id.split("/").map(encodeURIComponent).join("/"); }
  function when(ms) {
    if (typeof ms !== "number") { return ""; }
    var d = new Date(ms);
    function two(n) { return (n < 10 ? "0" : "") + n; }
    return d.getFullYear() + "-" + two(d.getMonth() + 1) + "-" + two(d.getDate()) + " " + two(d.getHours()) + ":" +
      two(d.getMinutes()) + ":" + two(d.getSeconds());
  }

  function media(parent, mime, data) {
    mime = safeMime(mime);
    mediaNode(parent, mime, data);
    add(parent, el("div", "id", (mime || "data") + ", " + byteCount(data) + " bytes"));
  }

  // only http(s) URLs become links, only they and data:image URLs become images; anything else
  // (javascript:, data:text/html, vbscript:, a relative path) is shown as text and never followed
  function imageUrl(parent, url) {
    url = String(url || "");
    var web = /^https?:\/\/[^\s\\]+$/i.test(url);
    if (web || /^data:image\/[A-Za-z0-9.+-]+;base64,[A-Za-z0-9+\/=]*$/.test(url)) {
      var img = add(parent, el("img", "media"));
      img.alt = "image";
      img.src = url;
      img.referrerPolicy = "no-referrer";
    }
    if (web) {
      var a = add(parent, el("a", "id", url));
      a.href = url;
      a.rel = "noreferrer noopener";
      a.target = "_blank";
    } else if (url.indexOf("data:image/") !== 0) {
      add(parent, el("span", "id", "link not shown (" + (url.split(":", 1)[0] || "no scheme").slice(0, 40) + "): " +
        url.slice(0, 200)));
    }
  }

  function usageText(usage) {
    return "Tokens: " + BUCKETS.map(function (b) {
      var v = usage ? usage[b[0]] : null;
      return b[1] + " " + (typeof v === "number" ? v : "?");
    }).join(" · ");
  }

  function renderItem(parent, item, names) {
    var part, type = item && item.type;
    if (type === "text") {
      add(parent, el("div", "part text", item.text));
    } else if (type === "thinking") {
      if (!item.thinking) { return; }
      part = add(parent, el("details", "part thinking"));
      part.open = true;
      add(part, el("summary", null, "Thinking"));
      add(part, el("div", "text", item.thinking));
    } else if (type === "tool_call") {
      part = add(parent, el("div", "part tool-call"));
      add(part, el("span", "label", "Tool call"));
      add(part, el("code", null, item.name));
      add(part, el("span", "id", item.tool_call_id));
      add(part, el("pre", null, pretty(item.arguments)));
    } else if (type === "tool_result") {
      part = add(parent, el("div", "part tool-result"));
      add(part, el("span", "label", "Tool result"));
      if (names[item.tool_call_id]) { add(part, el("code", null, names[item.tool_call_id])); }
      add(part, el("span", "id", item.tool_call_id));
      add(part, el("pre", null, item.text));
      (item.images || []).forEach(function (url) { imageUrl(part, url); });
    } else if (type === "image_url") {
      part = add(parent, el("div", "part"));
      imageUrl(part, item.image_url);
    } else if (type === "inline_data") {
      part = add(parent, el("div", "part"));
      media(part, item.mime_type, item.data);
    } else if (type === "inline_thinking") {
      add(parent, el("div", "part id", "Encrypted thinking (" + (item.mime_type || "data") + ", " + byteCount(item.data) +
        " bytes)"));
    } else if (type === "embedding") {
      var values = item.embedding || [];
      part = add(parent, el("div", "part"));
      add(part, el("span", "label", "Embedding"));
      add(part, el("span", null, values.length + " dimensions: " + values.slice(0, 6).map(function (v) {
        return Number(v).toFixed(4);
      }).join(", ") + (values.length > 6 ? ", …" : "")));
    }
  }

  function renderNav(current) {
    var nav = document.getElementById("nav");
    var traces = DATA.traces || [];
    var all = add(nav, el("a", "item" + (current ? "" : " current")));
    all.href = "/";
    add(all, el("span", "name", "All traces (" + traces.length + ")"));
    traces.forEach(function (t) {
      var a = add(nav, el("a", "item" + (t.trace_id === current ? " current" : "")));
      a.href = traceHref(t.trace_id);
      add(a, el("span", "name", t.trace_id));
      add(a, el("span", "sub", (t.model || "?") + " · " + t.messages + " messages · " + when(t.timestamp)));
    });
  }

  function renderIndex(main) {
    main.textContent = "";
    add(main, el("h2", null, "Traces"));
    var traces = DATA.traces || [];
    if (!traces.length) {
      add(main, el("p", "empty", "No traces here yet. A call made with config={\"trace_id\": \"agent1/run_001\"} " +
        "saves one under $AGENTHUB_CACHE_DIR (default ./cache)."));
      return;
    }
    var table = add(main, el("table", "list"));
    var head = add(table, el("tr"));
    ["Trace", "Model", "Messages", "Saved"].forEach(function (h) { add(head, el("th", null, h)); });
    traces.forEach(function (t) {
      var row = add(table, el("tr"));
      var a = add(add(row, el("td")), el("a", null, t.trace_id));
      a.href = traceHref(t.trace_id);
      add(row, el("td", null, t.model || "?"));
      add(row, el("td", null, t.messages));
      add(row, el("td", null, when(t.timestamp)));
    });
  }

  function renderTrace(main) {
    var trace = DATA.trace || {};
    var config = trace.config || {};
    var history = trace.history || [];
    main.textContent = "";
    add(main, el("h2", null, DATA.trace_id));
    var meta = add(main, el("div", "meta"));
    meta.textContent = "Model " + (trace.model || config.model || "?") + " · saved " + when(trace.timestamp) + " · " +
      history.length + " messages · ";
    var raw = add(meta, el("a", null, "JSON"));
    raw.href = "/raw/" + DATA.trace_id.split("/").map(encodeURIComponent).join("/") + ".json";
    add(meta, document.createTextNode(" · "));
    var txt = add(meta, el("a", null, "text"));
    txt.href = raw.href.replace(/\.json$/, ".txt");

    var chips = add(main, el("div", "chips"));
    Object.keys(config).sort().forEach(function (key) {
      if (["model", "tools", "system_prompt", "trace_id"].indexOf(key) >= 0) { return; }
      var value = config[key];
      add(chips, el("span", "chip", key + ": " + (typeof value === "string" ? value : JSON.stringify(value))));
    });
    if (config.system_prompt) {
      var sys = add(main, el("div", "box"));
      add(sys, el("span", "label", "System"));
      add(sys, el("div", "text", config.system_prompt));
    }
    if ((config.tools || []).length) {
      var tools = add(main, el("details", "box"));
      add(tools, el("summary", null, "Tools: " + config.tools.map(function (t) { return t.name; }).join(", ")));
      config.tools.forEach(function (t) {
        var row = add(tools, el("div", "part"));
        add(row, el("code", null, t.name));
        if (t.description) { add(row, el("span", null, " " + t.description)); }
        if (t.parameters) { add(row, el("pre", null, pretty(t.parameters))); }
      });
    }

    var names = {};
    var totals = {}, counted = false;
    history.forEach(function (m) {
      (m.content_items || []).forEach(function (i) { if (i.type === "tool_call") { names[i.tool_call_id] = i.name; } });
      if (m.usage_metadata) {
        counted = true;
        BUCKETS.forEach(function (b) {
          var v = m.usage_metadata[b[0]];
          if (typeof v === "number") { totals[b[0]] = (totals[b[0]] || 0) + v; }
        });
      }
    });
    if (counted) {
      var box = add(main, el("div", "box totals"));
      add(box, el("span", "label", "Total"));
      add(box, el("span", null, usageText(totals)));
    }
    history.forEach(function (m, index) {
      var role = m.role === "assistant" ? "assistant" : "user";
      var card = add(main, el("section", "message " + role));
      var head = add(card, el("div", "head"));
      add(head, el("span", "role", role === "assistant" ? "Assistant" : "User"));
      add(head, el("span", "when", "#" + index + (m.created_at ? " · " + when(m.created_at) : "")));
      (m.content_items || []).forEach(function (item) { renderItem(card, item, names); });
      if (m.usage_metadata || m.finish_reason) {
        add(card, el("div", "usage", (m.finish_reason ? "Finish: " + m.finish_reason + " · " : "") +
          usageText(m.usage_metadata)));
      }
    });
  }

  document.getElementById("root").textContent = DATA.root || "";
  renderNav(DATA.trace_id || null);
  var main = document.getElementById("main");
  if (DATA.page === "trace") { document.title = DATA.trace_id + " · agenthub traces"; renderTrace(main); }
  else { renderIndex(main); }
})();
</script>
</body>
</html>
"""


def _hash(tag: str) -> str:
    """The CSP source ('sha256-...') of the one inline <tag> element of PAGE without attributes."""
    start = PAGE.index("<{}>".format(tag)) + len(tag) + 2
    body = PAGE[start:PAGE.index("</{}>".format(tag), start)]
    return "'sha256-{}'".format(base64.b64encode(hashlib.sha256(body.encode("utf-8")).digest()).decode("ascii"))


#: the viewer's Content-Security-Policy: only the page's own script and style run (by hash: no
#: inline script or handler anything else put in the page would execute), nothing is fetched but
#: images, no form, frame, base or plugin
CSP = ("default-src 'none'; script-src {}; style-src {}; img-src data: http: https:; media-src data:; "
       "base-uri 'none'; form-action 'none'; frame-ancestors 'none'; object-src 'none'".format(
           _hash("script"), _hash("style")))


def page(data: Dict[str, Any]) -> bytes:
    """The viewer page with ``data`` embedded (safe inside a script element)."""
    text = json.dumps(data, ensure_ascii=False)
    text = text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
    text = text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    return PAGE.replace("__DATA__", text).encode("utf-8")


class _Handler(BaseHTTPRequestHandler):
    root = ""  # set on the subclass made by serve()
    server_version = "agenthub-trace-viewer"

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
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
                with open(self._paths(trace_id)["json"], encoding="utf-8") as handle:
                    trace = json.load(handle)
                data = self._data("trace")
                data.update(trace_id=trace_id, trace=trace)
                self._send(200, "text/html; charset=utf-8", page(data))
            elif path.startswith("/raw/") and path.endswith((".json", ".txt")):
                stem, ext = path[len("/raw/"):].rsplit(".", 1)
                with open(self._paths(stem)[ext], "rb") as handle:
                    body = handle.read()
                kind = "application/json" if ext == "json" else "text/plain; charset=utf-8"
                self._send(200, kind, body)
            else:
                self._not_found()
        except (ConfigError, OSError, ValueError):
            self._not_found()

    def _host_allowed(self) -> bool:
        """The Host header names this server: its bound address or localhost (with its port, or none)."""
        host = self.headers.get("Host")
        if not host or len(self.headers.get_all("Host") or ()) != 1:
            return False
        bound, port = self.server.server_address[0], self.server.server_address[1]
        host = host.strip().lower()
        if host.startswith("["):
            name, _, rest = host[1:].partition("]")
            if rest and not rest.startswith(":"):
                return False
            given = rest[1:] if rest else ""
        else:
            name, _, given = host.partition(":")
        if given and given != str(port):
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
        if not os.path.isfile(paths["json"]):
            raise ConfigError("no such trace")
        return paths

    def _data(self, kind: str) -> Dict[str, Any]:
        return {"page": kind, "root": os.path.abspath(self.root), "traces": list_traces(self.root)}

    def _not_found(self) -> None:
        self._send(404, "text/plain; charset=utf-8", b"not found\n")

    def _send(self, status: int, kind: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("Content-Security-Policy", CSP)
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # quiet: the CLI prints the URL once
        pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True


def serve(folder: str, host: str = "127.0.0.1", port: int = 0) -> Tuple[ThreadingHTTPServer, str]:
    """Bind a viewer of the traces under ``folder``; returns (server, url).  Call ``server.serve_forever()``."""
    handler = type("Handler", (_Handler,), {"root": os.path.abspath(folder)})
    server = _Server((host, port), handler)
    bound_host, bound_port = server.server_address[0], server.server_address[1]
    shown = "[{}]".format(bound_host) if ":" in str(bound_host) else bound_host
    return server, "http://{}:{}/".format(shown, bound_port)


def serve_in_thread(folder: str, host: str = "127.0.0.1", port: int = 0) -> Tuple[ThreadingHTTPServer, str]:
    """``serve`` plus a daemon thread running it (for tests and notebooks); stop with ``server.shutdown()``."""
    server, url = serve(folder, host, port)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, url


def trace_url(base: str, trace_id: str) -> str:
    return base.rstrip("/") + "/trace/" + quote(trace_id)
