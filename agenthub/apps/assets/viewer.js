// agenthub: the trace viewer's script (agenthub trace view).
// Runs after dom.js, in the same function (agenthub/apps/_dom.py builds the page).

var DATA = JSON.parse(document.getElementById("data").textContent);

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
  if (/^data:image\/[A-Za-z0-9.+-]+;base64,[A-Za-z0-9+\/=]*$/.test(url)) {
    var img = add(parent, el("img", "media"));
    img.alt = "image";
    img.src = url;
  }
  if (web) {
    // a remote image is fetched only when the reader asks (opening the page would tell its host who reads the
    // trace, and when, and spend a presigned URL): a button, then the image in its place
    var host = url.split("/")[2].split("@").pop();
    var show = add(parent, el("button", "show-image", "show the image (loads it from " + host + ")"));
    show.type = "button";
    show.addEventListener("click", function () {
      var shown = el("img", "media");
      shown.alt = "image";
      shown.referrerPolicy = "no-referrer";
      shown.src = url;
      parent.replaceChild(shown, show);
    });
    var a = add(parent, el("a", "id", url));
    a.href = url;
    a.rel = "noreferrer noopener";
    a.target = "_blank";
  } else if (url.indexOf("data:image/") !== 0) {
    add(parent, el("span", "id", "link not shown (" + (url.split(":", 1)[0] || "no scheme").slice(0, 40) + "): " +
      url.slice(0, 200)));
  }
}

function usageText(usage) { return "Tokens: " + usageCounts(usage, "?"); }

// how long a tool call ran, from the trace's tool_calls row ("0.012 s")
function duration(row) {
  return row && typeof row.seconds === "number" && isFinite(row.seconds) ? row.seconds.toFixed(3) + " s" : "";
}

function renderItem(parent, item, names, timing) {
  var part, type = item && item.type;
  if (type === "text") {
    add(parent, el("div", "part text", item.text));
  } else if (type === "thinking") {
    if (!item.thinking) { return; }
    thinkingPart(parent, item.thinking).open = true;
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
    if (item.is_error === true) { add(part, el("span", "error", "error")); }
    if (duration(timing)) { add(part, el("span", "took", duration(timing))); }
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

  var names = {}, timings = {};  // timings: "<message index> <tool_call_id>" -> the tool_calls row
  (Array.isArray(trace.tool_calls) ? trace.tool_calls : []).forEach(function (row) {
    if (row && typeof row.turn === "number") { timings[row.turn + " " + row.tool_call_id] = row; }
  });
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
    (m.content_items || []).forEach(function (item) {
      renderItem(card, item, names, item && item.type === "tool_result" ? timings[index + " " + item.tool_call_id] : null);
    });
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
