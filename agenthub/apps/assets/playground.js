// agenthub: the playground's script (agenthub serve, GET /).
// Runs after dom.js, in the same function (agenthub/apps/_dom.py builds the page).

var KEY_STORE = "agenthub.playground.key";
var MODEL_STORE = "agenthub.playground.model";
var LEVELS = ["none", "low", "medium", "high", "xhigh"];
var MERGEABLE = { text: "text", thinking: "thinking" };
// the images of one message, in all (each is read into the page and sent again with every later turn)
var MAX_IMAGE_BYTES = 20 * 1024 * 1024;
var TOOLS_EXAMPLE = [{
  name: "get_weather",
  description: "Current weather in a city.",
  parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] }
}];

var state = {
  history: [],          // UniMessages sent back on the next turn
  lastModel: "",
  lastConfig: {},
  busy: false,
  controller: null,
  attachments: [],      // {mime, b64, name, size, url}
  reading: [],          // files being read into attachments (their sizes count toward MAX_IMAGE_BYTES)
  pending: []           // tool calls of the last answer: {call, input}
};

function $(id) { return document.getElementById(id); }
function clear(node) { while (node.firstChild) { node.removeChild(node.firstChild); } }
function seconds(ms) { return (ms / 1000).toFixed(ms < 10000 ? 2 : 1) + " s"; }
function isEmpty(value) {
  return !value || (typeof value === "object" && Object.keys(value).length === 0);
}
function canonical(value) {
  if (Array.isArray(value)) { return "[" + value.map(canonical).join(",") + "]"; }
  if (value && typeof value === "object") {
    return "{" + Object.keys(value).sort().map(function (k) {
      return JSON.stringify(k) + ":" + canonical(value[k]);
    }).join(",") + "}";
  }
  return JSON.stringify(value);
}
function sizeText(n) {
  return n < 1024 ? n + " B" : n < 1048576 ? (n / 1024).toFixed(1) + " KB" : (n / 1048576).toFixed(1) + " MB";
}

// ---- errors --------------------------------------------------------------------------------
function PlaygroundError(type, message, fields) {
  this.type = type;
  this.message = message;
  this.fields = fields || {};
}
// the error's type, its message, and those of its fields the message does not already say
function describe(error) {
  var message = String(error.message || "");
  var extra = Object.keys(error.fields || {}).filter(function (k) {
    var v = error.fields[k], shown = typeof v === "string" ? v : JSON.stringify(v);
    if (v === null || v === undefined || v === "" || v === false || k === "client") { return false; }
    return message.indexOf(k + "=" + shown) < 0 && !(k === "error_type" && message.indexOf("type=" + shown) >= 0);
  }).map(function (k) {
    var v = error.fields[k];
    return v === true ? k : k + " " + (typeof v === "string" ? v : JSON.stringify(v));
  });
  return { type: error.type, text: message + (extra.length ? " (" + extra.join(", ") + ")" : "") };
}
function fromPayload(payload, status) {
  var e = payload && typeof payload === "object" ? payload.error : null;
  if (e && typeof e === "object") {
    var fields = {};
    Object.keys(e).forEach(function (k) { if (k !== "type" && k !== "message") { fields[k] = e[k]; } });
    return new PlaygroundError(String(e.type || "Error"), String(e.message || "error"), fields);
  }
  return new PlaygroundError("HTTPError", "the server answered " + status, {});
}
async function httpError(response) {
  var text = "";
  try { text = await response.text(); } catch (e) { text = ""; }
  try { return fromPayload(JSON.parse(text), response.status); } catch (e) {
    return new PlaygroundError("HTTPError", "the server answered " + response.status + " " +
      (response.statusText || "") + (text ? ": " + text.slice(0, 200) : ""), {});
  }
}

// ---- the server key ------------------------------------------------------------------------
function stored(name) { try { return sessionStorage.getItem(name) || ""; } catch (e) { return ""; } }
function getKey() { return stored(KEY_STORE); }
function setKey(key) {
  try { if (key) { sessionStorage.setItem(KEY_STORE, key); } else { sessionStorage.removeItem(KEY_STORE); } }
  catch (e) { /* storage disabled: the key lives until the page closes */ }
  $("key-button").textContent = key ? "Server key ✓" : "Server key";
}
var keyPrompt = null;
function askKey(reason) {
  if (keyPrompt) { return keyPrompt.promise; }
  var prompt = {};
  prompt.promise = new Promise(function (resolve, reject) { prompt.resolve = resolve; prompt.reject = reject; });
  keyPrompt = prompt;
  $("key-reason").textContent = reason;
  $("key-hint").textContent = "";
  $("key-input").value = "";
  $("key-dialog").showModal();
  $("key-input").focus();
  return prompt.promise;
}
function settleKey(given) {
  var prompt = keyPrompt;
  keyPrompt = null;
  if ($("key-dialog").open) { $("key-dialog").close(); }
  if (!prompt) { return; }
  if (given) { prompt.resolve(); }
  else { prompt.reject(new PlaygroundError("AuthenticationError", "no server key was given", {})); }
}
$("key-form").addEventListener("submit", function (event) {
  event.preventDefault();
  var value = $("key-input").value.trim();
  if (!value) { $("key-hint").textContent = "Enter the key (Cancel to stop)."; return; }
  if (!/^[\x21-\x7e]+$/.test(value)) { $("key-hint").textContent = "A key is printable ASCII without spaces."; return; }
  setKey(value);
  settleKey(true);
});
$("key-cancel").addEventListener("click", function () { settleKey(false); });
$("key-dialog").addEventListener("cancel", function (event) { event.preventDefault(); settleKey(false); });
$("key-button").addEventListener("click", function () {
  askKey(getKey() ? "Enter another server key, or Forget to remove the one kept in this tab." :
    "The server key (one of the server's api_keys). It is kept in this tab only (sessionStorage).")
    .then(loadModels, function () { /* cancelled */ });
});
$("key-forget").addEventListener("click", function () { setKey(""); settleKey(false); });

async function api(path, init) {
  for (;;) {
    var headers = Object.assign({}, init.headers || {});
    var key = getKey();
    if (key) { headers.Authorization = "Bearer " + key; }
    var response = await fetch(path, Object.assign({}, init, { headers: headers, cache: "no-store",
                                                                credentials: "same-origin", redirect: "error" }));
    if (response.status !== 401) { return response; }
    var error = await httpError(response);
    setKey("");
    await askKey(key ? "The server refused that key (" + error.message + "). Enter the server key again." :
      "This server needs a key (one of its api_keys). It is kept in this tab only (sessionStorage).");
  }
}

// ---- models --------------------------------------------------------------------------------
function setConn(text, bad) { $("conn").textContent = text; $("conn").className = bad ? "bad" : ""; }
async function loadModels() {
  setConn("loading models…");
  try {
    var response = await api("/v1/models", { method: "GET", headers: { Accept: "application/json" } });
    if (!response.ok) { throw await httpError(response); }
    var body = await response.json();
    var ids = (body && Array.isArray(body.data) ? body.data : []).map(function (m) {
      return m && typeof m.id === "string" ? m.id : null;
    }).filter(function (id) { return id; });
    var select = $("model");
    var before = select.value || stored(MODEL_STORE);
    clear(select);
    ids.forEach(function (id) { add(select, el("option", null, id)).value = id; });
    if (ids.indexOf(before) >= 0) { select.value = before; }
    setConn(ids.length ? ids.length + (ids.length === 1 ? " model" : " models") : "this server lists no models",
            !ids.length);
  } catch (error) {
    var d = describe(error instanceof PlaygroundError ? error :
                     new PlaygroundError("TransportError", String(error && error.message || error), {}));
    setConn("models: " + d.type + ": " + d.text, true);
  }
  updateButtons();
}
$("model").addEventListener("change", function () {
  try { sessionStorage.setItem(MODEL_STORE, $("model").value); } catch (e) { /* ignore */ }
});

// ---- config --------------------------------------------------------------------------------
function checkTools(text) {
  if (!text.trim()) { return { tools: null }; }
  var tools;
  try { tools = JSON.parse(text); } catch (e) { return { error: "not JSON: " + e.message }; }
  if (!Array.isArray(tools)) { return { error: "tools must be a JSON list of {name, description, parameters}" }; }
  var names = [];
  for (var i = 0; i < tools.length; i++) {
    var tool = tools[i];
    if (!tool || typeof tool !== "object" || Array.isArray(tool)) { return { error: "tools[" + i + "] is not an object" }; }
    if (typeof tool.name !== "string" || !tool.name) { return { error: "tools[" + i + "] needs a non-empty name" }; }
    var extra = Object.keys(tool).filter(function (k) { return ["name", "description", "parameters"].indexOf(k) < 0; });
    if (extra.length) { return { error: "tools[" + i + "] has unknown key(s): " + extra.join(", ") }; }
    if (tool.description !== undefined && tool.description !== null && typeof tool.description !== "string") {
      return { error: "tools[" + i + "].description must be a string" };
    }
    if (tool.parameters !== undefined && tool.parameters !== null &&
        (typeof tool.parameters !== "object" || Array.isArray(tool.parameters))) {
      return { error: "tools[" + i + "].parameters must be a JSON Schema object" };
    }
    if (names.indexOf(tool.name) >= 0) { return { error: "two tools are named " + tool.name }; }
    names.push(tool.name);
  }
  return { tools: tools, names: names };
}
function showTools() {
  var checked = checkTools($("tools").value);
  var hint = $("tools-hint");
  $("tools").classList.toggle("invalid", !!checked.error);
  if (checked.error) { hint.className = "hint bad"; hint.textContent = checked.error; }
  else if (checked.tools) {
    hint.className = "hint good";
    hint.textContent = checked.tools.length + (checked.tools.length === 1 ? " tool: " : " tools: ") +
      checked.names.join(", ");
  } else { hint.className = "hint"; hint.textContent = "A JSON list of {name, description, parameters}."; }
  return checked;
}
// UniConfig keys without a control of their own (prompt_caching, top_p, response_format, ...)
var OWN_CONTROLS = ["system_prompt", "thinking_level", "thinking_summary", "max_tokens", "temperature", "tools",
                    "tool_choice"];
function checkExtra(text) {
  if (!text.trim()) { return { config: null }; }
  var value;
  try { value = JSON.parse(text); } catch (e) { return { error: "not JSON: " + e.message }; }
  if (!value || typeof value !== "object" || Array.isArray(value)) { return { error: "a JSON object of UniConfig keys" }; }
  var keys = Object.keys(value);
  var own = keys.filter(function (k) {   // a list of tool names is the one tool_choice the menu has not
    return OWN_CONTROLS.indexOf(k) >= 0 && !(k === "tool_choice" && Array.isArray(value[k]));
  });
  if (own.length) { return { error: own.join(", ") + " has a field of its own above" }; }
  if (keys.indexOf("trace_id") >= 0) { return { error: "trace_id is not sent to the server: use Export trace" }; }
  return { config: value, keys: keys };
}
function showExtra() {
  var checked = checkExtra($("extra").value);
  var hint = $("extra-hint");
  $("extra").classList.toggle("invalid", !!checked.error);
  if (checked.error) { hint.className = "hint bad"; hint.textContent = checked.error; }
  else if (checked.config) { hint.className = "hint good"; hint.textContent = "adds " + (checked.keys.join(", ") || "nothing"); }
  else { hint.className = "hint"; hint.textContent = "UniConfig keys without a field above."; }
  return checked;
}
$("extra").addEventListener("input", showExtra);
function readConfig() {
  var config = {};
  var problems = [];
  var system = $("system").value;
  if (system.trim()) { config.system_prompt = system; }
  if ($("thinking").value) { config.thinking_level = $("thinking").value; }
  if ($("summary").checked) { config.thinking_summary = true; }
  // (a number field holding no number, "1e", reads as "": its validity says it is not empty)
  var maxTokens = $("max-tokens").value.trim();
  $("max-tokens").classList.remove("invalid");
  if (maxTokens || $("max-tokens").validity.badInput) {
    var n = maxTokens ? Number(maxTokens) : NaN;
    if (!Number.isInteger(n) || n <= 0) { problems.push("max tokens must be a positive whole number"); $("max-tokens").classList.add("invalid"); }
    else { config.max_tokens = n; }
  }
  var temperature = $("temperature").value.trim();
  $("temperature").classList.remove("invalid");
  if (temperature || $("temperature").validity.badInput) {
    var t = temperature ? Number(temperature) : NaN;
    if (!isFinite(t) || t < 0) { problems.push("temperature must be a number ≥ 0"); $("temperature").classList.add("invalid"); }
    else { config.temperature = t; }
  }
  var tools = showTools();
  if (tools.error) { problems.push("tools: " + tools.error); }
  else if (tools.tools) { config.tools = tools.tools; }
  if ($("tool-choice").value) { config.tool_choice = $("tool-choice").value; }
  var extra = showExtra();
  if (extra.error) { problems.push("other config: " + extra.error); }
  else if (extra.config && "tool_choice" in extra.config && "tool_choice" in config) {
    problems.push("tool choice is set twice (the menu and other config)");
  } else if (extra.config) { Object.assign(config, extra.config); }
  var box = $("config-error");
  box.textContent = problems.join(" · ");
  box.hidden = !problems.length;
  return problems.length ? { error: problems.join("; ") } : { config: config };
}
["max-tokens", "temperature"].forEach(function (id) { $(id).addEventListener("input", readConfig); });
$("tools").addEventListener("input", showTools);
$("tools-example").addEventListener("click", function () {
  $("tools").value = JSON.stringify(TOOLS_EXAMPLE, null, 2);
  showTools();
});

// ---- collect: fold a turn's events into its assistant message (as agenthub.collect does) ---
function collect(events) {
  var items = [], texts = [], open = -1, sealed = false, last = null;
  var message = { role: "assistant", content_items: items };
  events.forEach(function (event) {
    last = event;
    if (event.event_type === "stop") {
      message.usage_metadata = event.usage_metadata === undefined ? null : event.usage_metadata;
      message.finish_reason = event.finish_reason === undefined ? null : event.finish_reason;
      return;
    }
    (event.content_items || []).forEach(function (item) {
      var kind = item.type;
      if (kind === "partial_tool_call") { return; }
      var field = MERGEABLE[kind];
      if (!field) { items.push(Object.assign({}, item)); texts.push(null); open = -1; return; }
      var text = item[field] || "";
      var fidelity = item.fidelity;
      if (open >= 0 && items[open].type === kind && !sealed) {
        var current = items[open];
        if (isEmpty(fidelity)) { texts[open].push(text); return; }
        if (isEmpty(current.fidelity)) { texts[open].push(text); current.fidelity = fidelity; sealed = true; return; }
        if (canonical(current.fidelity) === canonical(fidelity)) { texts[open].push(text); return; }
      }
      if (!text && isEmpty(fidelity)) { return; }
      var fresh = { type: kind };
      fresh[field] = text;
      if (!isEmpty(fidelity)) { fresh.fidelity = fidelity; }
      items.push(fresh);
      texts.push([text]);
      open = items.length - 1;
      sealed = false;
    });
  });
  texts.forEach(function (pieces, i) { if (pieces) { items[i][MERGEABLE[items[i].type]] = pieces.join(""); } });
  if (last) { message.created_at = last.created_at; }
  if (!("usage_metadata" in message)) { message.usage_metadata = null; }
  if (!("finish_reason" in message)) { message.finish_reason = null; }
  return message;
}

// ---- SSE -----------------------------------------------------------------------------------
function parseBlock(block) {
  var event = "message", data = [], comment = false;
  block.split("\n").forEach(function (line) {
    if (!line) { return; }
    if (line.charAt(0) === ":") { comment = true; return; }
    var colon = line.indexOf(":");
    var field = colon < 0 ? line : line.slice(0, colon);
    var value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.charAt(0) === " ") { value = value.slice(1); }
    if (field === "data") { data.push(value); } else if (field === "event") { event = value; }
  });
  if (!data.length) { return comment ? { comment: true } : null; }
  return { event: event, data: data.join("\n") };
}
// calls onMessage({event, data}) per SSE message and onComment() per comment-only block;
// onMessage returns true to stop reading
async function readSSE(response, onMessage, onComment) {
  var reader = response.body.getReader();
  var decoder = new TextDecoder("utf-8");
  var buffer = "", carry = "";
  function feed(text) {
    text = carry + text;
    carry = "";
    if (text.charAt(text.length - 1) === "\r") { carry = "\r"; text = text.slice(0, -1); }
    buffer += text.replace(/\r\n?/g, "\n");
    var at;
    while ((at = buffer.indexOf("\n\n")) >= 0) {
      var block = buffer.slice(0, at);
      buffer = buffer.slice(at + 2);
      var parsed = parseBlock(block);
      if (parsed && parsed.comment) { onComment(); }
      else if (parsed && onMessage(parsed)) { return true; }
    }
    return false;
  }
  try {
    for (;;) {
      var chunk = await reader.read();
      if (chunk.done) { break; }
      if (feed(decoder.decode(chunk.value, { stream: true }))) { return; }
    }
    if (feed(decoder.decode())) { return; }
    if (carry) { carry = ""; if (feed("\n")) { return; } }   // a lone CR at the very end ends its line
    var rest = parseBlock(buffer);   // a last message not followed by a blank line is still dispatched
    buffer = "";
    if (rest && !rest.comment) { onMessage(rest); }
  } finally {
    reader.cancel().catch(function () { /* already closed or aborted */ });
  }
}

// ---- rendering -----------------------------------------------------------------------------
var transcript = $("transcript");
function nearBottom() { return transcript.scrollHeight - transcript.scrollTop - transcript.clientHeight < 80; }
function scrollDown(force) { if (force) { transcript.scrollTop = transcript.scrollHeight; } }
function emptyState(show) {
  var e = $("empty-state");
  if (e) { e.hidden = !show; }
}
function usageText(usage) { return usageCounts(usage, "–"); }
function media(parent, mime, data) {
  mime = safeMime(mime);
  mediaNode(parent, mime, data);
  add(parent, el("div", "id", (mime || "data") + ", " + sizeText(byteCount(data))));
}
function imageUrl(parent, url) {
  url = String(url || "");
  if (/^data:image\/[A-Za-z0-9.+-]+;base64,[A-Za-z0-9+\/=]*$/.test(url)) {
    var img = add(parent, el("img", "media"));
    img.alt = "image";
    img.src = url;
  } else {
    var a = add(parent, el("a", null, url));   // remote images are not loaded (img-src is this page only)
    if (/^https?:\/\//i.test(url)) { a.href = url; a.rel = "noreferrer noopener"; a.target = "_blank"; }
  }
}
function toolCallPart(parent, name, id) {
  var part = add(parent, el("div", "part tool-call"));
  add(part, el("span", "label", "Tool call"));
  add(part, el("code", "name", name || "?"));
  add(part, el("span", "id", id || ""));
  var status = add(part, el("span", "state", ""));
  var args = add(part, el("pre", "args", ""));
  return { node: part, args: args, text: add(args, document.createTextNode("")), status: status, id: id || "" };
}
function toolResultPart(parent, item, name) {
  var part = add(parent, el("div", "part tool-result"));
  add(part, el("span", "label", "Tool result"));
  if (name) { add(part, el("code", null, name)); }
  add(part, el("span", "id", item.tool_call_id));
  add(part, el("pre", null, item.text));
  (item.images || []).forEach(function (url) { imageUrl(part, url); });
  return part;
}
function renderItem(parent, item, names) {
  var part, type = item && item.type;
  if (type === "text") {
    add(parent, el("div", "part text", item.text));
  } else if (type === "thinking") {
    if (!item.thinking) { return; }
    thinkingPart(parent, item.thinking);
  } else if (type === "tool_call") {
    part = toolCallPart(parent, item.name, item.tool_call_id);
    part.args.textContent = pretty(item.arguments);
  } else if (type === "tool_result") {
    toolResultPart(parent, item, names[item.tool_call_id]);
  } else if (type === "image_url") {
    imageUrl(add(parent, el("div", "part")), item.image_url);
  } else if (type === "inline_data") {
    media(add(parent, el("div", "part")), item.mime_type, item.data);
  } else if (type === "inline_thinking") {
    add(parent, el("div", "part id", "Encrypted thinking (" + (item.mime_type || "data") + ", " +
      sizeText(byteCount(item.data)) + ")"));
  } else if (type === "embedding") {
    var values = item.embedding || [];
    add(parent, el("div", "part", "Embedding: " + values.length + " dimensions"));
  }
}
function card(role, title) {
  emptyState(false);
  var node = add(transcript, el("section", "message " + role));
  var head = add(node, el("div", "head"));
  add(head, el("span", "role", title));
  var when = add(head, el("span", "when", ""));
  var body = add(node, el("div", "body"));
  return { node: node, body: body, when: when };
}
function toolNames() {
  var names = {};
  state.history.forEach(function (m) {
    (m.content_items || []).forEach(function (i) { if (i.type === "tool_call") { names[i.tool_call_id] = i.name; } });
  });
  return names;
}
function renderMessage(message, model) {
  var names = toolNames();
  var c = card(message.role === "assistant" ? "assistant" : "user",
               message.role === "assistant" ? (model || "Assistant") : "You");
  (message.content_items || []).forEach(function (item) { renderItem(c.body, item, names); });
  if (message.role === "assistant" && (message.usage_metadata || message.finish_reason)) {
    add(c.node, el("div", "foot", "finish " + (message.finish_reason || "–") + " · " + usageText(message.usage_metadata)));
  }
  return c;
}

// the assistant card while its events arrive
// events are queued and put on the page once per frame: a fast stream costs one layout a frame
function Live(c) {
  this.card = c;
  this.current = null;      // {kind, node, live, textNode}
  this.calls = [];
  this.queue = [];
  this.dirty = [];          // sinks with text waiting to be appended
  this.scheduled = false;
  this.cursor = add(c.body, el("span", "cursor", ""));
}
// where streamed text goes: pieces are joined and appended once a frame (appendData copies the
// whole node, so one call per piece would cost the square of the length); a long text continues in
// a new segment after a line break, so a frame lays out only the last segment.  Streaming tool
// arguments (cap) show their last characters only, until the complete call replaces them.
function Sink(node, owner, split, cap) {
  this.node = node; this.owner = owner; this.split = split; this.cap = cap || 0; this.pending = []; this.total = 0;
}
Live.prototype.write = function (sink, text) {
  if (!sink.pending.length) { this.dirty.push(sink); }
  sink.pending.push(text);
};
Live.prototype.drain = function () {
  for (var i = 0; i < this.dirty.length; i++) {
    var sink = this.dirty[i];
    var text = sink.pending.join("");
    sink.pending = [];
    sink.total += text.length;
    if (sink.cap && sink.node.length + text.length > sink.cap) {
      sink.node.data = "… " + (sink.node.data + text).slice(-Math.floor(sink.cap / 2));
      if (sink.onCap) { sink.onCap(sink.total); }
      continue;
    }
    var cut = sink.split && sink.node.length > 8192 ? text.lastIndexOf("\n") : -1;
    if (cut >= 0) {
      sink.node.appendData(text.slice(0, cut + 1));
      sink.node = add(add(sink.owner, el("div", "segment")), document.createTextNode(text.slice(cut + 1)));
    } else {
      sink.node.appendData(text);
    }
  }
  this.dirty = [];
};
Live.prototype.push = function (event) {
  var self = this;
  this.queue.push(event);
  if (this.scheduled) { return; }
  this.scheduled = true;
  requestAnimationFrame(function () { self.flush(); });
  setTimeout(function () { self.flush(); }, 100);  // frames are not drawn in a hidden tab
};
Live.prototype.flush = function () {
  this.scheduled = false;
  if (!this.queue.length) { return; }
  var stick = nearBottom();
  var events = this.queue;
  this.queue = [];
  for (var i = 0; i < events.length; i++) { this.apply(events[i]); }
  this.drain();
  scrollDown(stick);
};
Live.prototype.block = function (kind, make) {
  if (!this.current || this.current.kind !== kind) { this.current = make.call(this); }
  this.mark(this.current.live);
  return this.current;
};
// the blinking caret: on the block text is flowing into, else after the last block
Live.prototype.mark = function (node) {
  if (this.marked && this.marked !== node) { this.marked.classList.remove("live"); }
  this.marked = node || null;
  if (node) { node.classList.add("live"); }
  this.cursor.hidden = !!node;
};
Live.prototype.place = function (node) { this.card.body.insertBefore(node, this.cursor); return node; };
Live.prototype.apply = function (event) {
  var self = this;
  (event.content_items || []).forEach(function (item) {
    var type = item.type, block;
    if (type === "text") {
      if (!item.text) { return; }
      block = self.block("text", function () {
        var node = this.place(el("div", "part text"));
        return { kind: "text", node: node, live: node, sink: new Sink(add(node, document.createTextNode("")), node, true) };
      });
      self.write(block.sink, item.text);
    } else if (type === "thinking") {
      if (!item.thinking) { return; }
      block = self.block("thinking", function () {
        var node = this.place(el("details", "part thinking"));
        var summary = add(node, el("summary", null, "Thinking…"));
        var body = add(node, el("div", "text"));
        return { kind: "thinking", node: node, live: summary, sink: new Sink(add(body, document.createTextNode("")), body, true) };
      });
      self.write(block.sink, item.thinking);
    } else if (type === "partial_tool_call") {
      if (item.name || item.tool_call_id || !self.current || self.current.kind !== "tool") {
        var holder = document.createElement("div");
        var part = toolCallPart(holder, item.name, item.tool_call_id);
        self.place(part.node);
        part.node.classList.add("streaming");
        part.status.textContent = "streaming arguments…";
        part.sink = new Sink(part.text, part.args, false, 16384);
        part.sink.onCap = function (total) { part.status.textContent = "streaming arguments… " + sizeText(total); };
        self.calls.push(part);
        self.current = { kind: "tool", call: part };
      }
      var call = self.current.call;
      if (item.arguments) { self.write(call.sink, item.arguments); }
      self.mark(call.args);
    } else if (type === "tool_call") {
      var found = null;
      for (var i = self.calls.length - 1; i >= 0; i--) {
        if (self.calls[i].node.classList.contains("streaming") &&
            (!item.tool_call_id || self.calls[i].id === item.tool_call_id || !self.calls[i].id)) {
          found = self.calls[i]; break;
        }
      }
      if (!found) {
        var h = document.createElement("div");
        found = toolCallPart(h, item.name, item.tool_call_id);
        self.place(found.node);
        self.calls.push(found);
      }
      if (found.sink) { found.sink.pending = []; found.sink.node = document.createTextNode(""); }
      found.node.classList.remove("streaming");
      found.status.textContent = "✓ complete";
      found.args.textContent = pretty(item.arguments);
      self.current = null;
      self.mark(null);
    } else {
      var holder2 = document.createElement("div");
      renderItem(holder2, item, toolNames());
      while (holder2.firstChild) { self.place(holder2.firstChild); }
      self.current = null;
      self.mark(null);
    }
  });
};
Live.prototype.finish = function () {
  this.mark(null);
  if (this.cursor.parentNode) { this.cursor.parentNode.removeChild(this.cursor); }
  Array.prototype.forEach.call(this.card.body.querySelectorAll("details.thinking > summary"), function (s) {
    s.textContent = "Thinking";
  });
};

// ---- the composer --------------------------------------------------------------------------
function setStatus(text, bad) { $("status").textContent = text; $("status").className = bad ? "bad" : ""; }
function updateButtons() {
  $("send").disabled = state.busy || !$("model").value;
  $("stop").disabled = !state.busy;
  $("export").disabled = !state.history.length;
  $("clear").disabled = state.busy || (!state.history.length && !transcript.querySelector(".message"));
  $("open").disabled = state.busy;
}
function renderAttachments() {
  var box = $("attachments");
  clear(box);
  state.attachments.forEach(function (a, index) {
    var chip = add(box, el("div", "attachment"));
    var img = add(chip, el("img"));
    img.alt = a.name;
    img.src = a.url;
    add(chip, el("span", null, a.name + " · " + sizeText(a.size)));
    var remove = add(chip, el("button", "small", "×"));
    remove.type = "button";
    remove.title = "Remove " + a.name;
    remove.addEventListener("click", function () {
      URL.revokeObjectURL(a.url);
      state.attachments.splice(index, 1);
      renderAttachments();
    });
  });
}
function attachedBytes() {
  return state.attachments.concat(state.reading).reduce(function (sum, a) { return sum + a.size; }, 0);
}
function addFiles(files) {
  Array.prototype.forEach.call(files || [], function (file) {
    if (!/^image\//.test(file.type || "")) { setStatus(file.name + " is not an image", true); return; }
    if (attachedBytes() + file.size > MAX_IMAGE_BYTES) {   // refused before it is read
      setStatus(file.name + " (" + sizeText(file.size) + ") is not attached: the images of one message may be " +
                sizeText(MAX_IMAGE_BYTES) + " in all", true);
      return;
    }
    var reading = { size: file.size };
    state.reading.push(reading);
    function done() { state.reading.splice(state.reading.indexOf(reading), 1); }
    var reader = new FileReader();
    reader.onload = function () {
      done();
      var url = String(reader.result);
      var comma = url.indexOf(",");
      state.attachments.push({ mime: file.type, b64: url.slice(comma + 1), name: file.name || "image",
                               size: file.size, url: URL.createObjectURL(file) });
      renderAttachments();
    };
    reader.onerror = function () { done(); setStatus("could not read " + file.name, true); };
    reader.readAsDataURL(file);
  });
}
$("file").addEventListener("change", function () { addFiles($("file").files); $("file").value = ""; });
$("attach").addEventListener("click", function () { $("file").click(); });
$("input").addEventListener("paste", function (event) {
  var files = event.clipboardData && event.clipboardData.files;
  if (files && files.length) { event.preventDefault(); addFiles(files); }
});
var composer = $("composer");
composer.addEventListener("dragover", function (event) { event.preventDefault(); composer.classList.add("dragging"); });
composer.addEventListener("dragleave", function () { composer.classList.remove("dragging"); });
composer.addEventListener("drop", function (event) {
  event.preventDefault();
  composer.classList.remove("dragging");
  addFiles(event.dataTransfer && event.dataTransfer.files);
});

function renderPending(message) {
  var box = $("tool-results");
  clear(box);
  state.pending = [];
  (message ? message.content_items : []).forEach(function (item) {
    if (item.type !== "tool_call") { return; }
    var row = add(box, el("div", "tool-result"));
    add(row, el("span", "label", "Result for"));
    add(row, el("code", null, item.name));
    add(row, el("span", "id", item.tool_call_id));
    var input = add(row, el("textarea", "code"));
    input.placeholder = "What " + item.name + " returned (sent as the tool_result)";
    input.rows = 1;
    state.pending.push({ call: item, input: input });
  });
  box.hidden = !state.pending.length;
}

// ---- a turn --------------------------------------------------------------------------------
function buildUserMessage() {
  var items = [];
  state.pending.forEach(function (p) {
    items.push({ type: "tool_result", tool_call_id: p.call.tool_call_id, text: p.input.value });
  });
  state.attachments.forEach(function (a) {
    items.push({ type: "inline_data", data: { __bytes__: a.b64 }, mime_type: a.mime });
  });
  var text = $("input").value;
  if (text.trim()) { items.push({ type: "text", text: text }); }
  return { role: "user", content_items: items };
}

async function send() {
  if (state.busy) { return; }
  var model = $("model").value;
  if (!model) { setStatus("Pick a model first.", true); return; }
  var read = readConfig();
  if (read.error) { setStatus("Fix the settings: " + read.error, true); return; }
  var user = buildUserMessage();
  if (!user.content_items.length) { setStatus("Type a message or attach an image.", true); return; }
  var saved = { text: $("input").value, attachments: state.attachments };
  $("input").value = "";
  state.attachments = [];
  renderAttachments();
  $("tool-results").hidden = true;

  var userCard = renderMessage(user);
  var answer = card("assistant", model);
  var live = new Live(answer);
  scrollDown(true);
  var controller = new AbortController();
  state.busy = true;
  state.controller = controller;
  updateButtons();
  var keepInView = null, events = [], stopped = false, done = false, started = Date.now(), first = 0, lastNote = "waiting for the model…";
  var timer = setInterval(function () { setStatus(lastNote + " " + seconds(Date.now() - started)); }, 200);
  setStatus(lastNote);
  var body = JSON.stringify({ model: model, messages: state.history.concat([user]), config: read.config });
  try {
    var response = await api("/v1/stream", {
      method: "POST", body: body, signal: controller.signal,
      headers: { "Content-Type": "application/json", Accept: "text/event-stream" }
    });
    if (!response.ok) { throw await httpError(response); }
    var kind = response.headers.get("Content-Type") || "";
    if (kind.indexOf("text/event-stream") !== 0) {
      throw new PlaygroundError("StreamProtocolError", "the server answered " + (kind || "no content type") +
        ", not text/event-stream", {});
    }
    await readSSE(response, function (message) {
      if (message.event === "error") {
        var payload;
        try { payload = JSON.parse(message.data); } catch (e) { payload = null; }
        throw fromPayload(payload, response.status);
      }
      if (message.data === "[DONE]") { done = true; return true; }
      var event;
      try { event = JSON.parse(message.data); } catch (e) {
        throw new PlaygroundError("StreamProtocolError", "an event that is not JSON: " + message.data.slice(0, 120), {});
      }
      if (!event || typeof event !== "object") {
        throw new PlaygroundError("StreamProtocolError", "an event that is not an object", {});
      }
      if (!first && (event.content_items || []).length) { first = Date.now(); }
      events.push(event);
      lastNote = "streaming…";
      if (event.event_type === "stop") { stopped = true; lastNote = "finishing…"; }
      live.push(event);
      return false;
    }, function () { lastNote = "waiting for the model (keep-alive)…"; });
    if (!stopped) {
      throw new PlaygroundError("StreamProtocolError", done ? "the stream ended without a stop event" :
        "the stream ended before [DONE]", {});
    }
    live.flush();
    var message = collect(events);
    state.history.push(user, message);
    saved.attachments.forEach(function (a) { URL.revokeObjectURL(a.url); });  // (their bytes are in the history)
    state.lastModel = model;
    state.lastConfig = read.config;
    live.finish();
    var total = Date.now() - started;
    add(answer.node, el("div", "foot", "finish " + (message.finish_reason || "–") + " · " + usageText(message.usage_metadata) +
      " · " + (first ? "first token " + seconds(first - started) + " · " : "") + seconds(total)));
    answer.when.textContent = new Date(message.created_at || Date.now()).toLocaleTimeString();
    userCard.when.textContent = new Date(started).toLocaleTimeString();
    renderPending(message);
    setStatus("Done in " + seconds(total) + ".");
  } catch (error) {
    live.flush();
    live.finish();
    var aborted = controller.signal.aborted || (error && error.name === "AbortError");
    userCard.node.classList.add("dropped");
    answer.node.classList.add("dropped");
    var note = add(answer.node, el("div", aborted ? "notice" : "notice bad"));
    if (aborted) {
      add(note, el("span", "type", "Aborted"));
      add(note, el("span", null, "stopped after " + seconds(Date.now() - started) + "; this turn is not kept in the conversation."));
      setStatus("Aborted.", false);
    } else {
      var d = describe(error instanceof PlaygroundError ? error :
                       new PlaygroundError("TransportError", String(error && error.message || error), {}));
      add(note, el("span", "type", d.type));
      add(note, el("span", "error-text", d.text));
      add(note, el("div", "hint", "This turn is not kept in the conversation."));
      setStatus(d.type + ": " + d.text, true);
    }
    keepInView = note;
    if (!$("input").value) { $("input").value = saved.text; }
    state.attachments = saved.attachments.concat(state.attachments);
    renderAttachments();
    $("tool-results").hidden = !state.pending.length;
  } finally {
    clearInterval(timer);
    state.busy = false;
    state.controller = null;
    updateButtons();
    if (keepInView) { keepInView.scrollIntoView({ block: "nearest" }); } else { scrollDown(nearBottom()); }
  }
}
function stop() { if (state.controller) { state.controller.abort(); } }

$("send").addEventListener("click", send);
$("stop").addEventListener("click", stop);
$("input").addEventListener("keydown", function (event) {
  if (event.key === "Enter" && !event.shiftKey && !event.isComposing) { event.preventDefault(); send(); }
});
document.addEventListener("keydown", function (event) {
  if (event.key === "Escape" && state.busy && !$("key-dialog").open) { stop(); }
});

// ---- new chat, export, open ----------------------------------------------------------------
function resetTranscript() {
  Array.prototype.forEach.call(transcript.querySelectorAll(".message"), function (m) { m.parentNode.removeChild(m); });
  emptyState(true);
}
$("clear").addEventListener("click", function () {
  if (state.busy) { return; }
  state.history = [];
  resetTranscript();
  renderPending(null);
  setStatus("New conversation.");
  updateButtons();
});
function traceDocument() {
  var now = new Date();
  function two(n) { return (n < 10 ? "0" : "") + n; }
  var stamp = now.getFullYear() + two(now.getMonth() + 1) + two(now.getDate()) + "-" + two(now.getHours()) +
    two(now.getMinutes()) + two(now.getSeconds());
  var model = state.lastModel || $("model").value || "";
  var config = Object.assign({}, state.lastConfig, { model: model });
  return { name: "playground-" + stamp,
           document: { trace_id: "playground/" + stamp, model: model, timestamp: now.getTime(), config: config,
                       history: state.history } };
}
$("export").addEventListener("click", function () {
  if (!state.history.length) { return; }
  var trace = traceDocument();
  var blob = new Blob([JSON.stringify(trace.document, null, 2) + "\n"], { type: "application/json" });
  var a = document.createElement("a");
  a.href = URL.createObjectURL(blob);
  a.download = trace.name + ".json";
  document.body.appendChild(a);
  a.click();
  document.body.removeChild(a);
  setTimeout(function () { URL.revokeObjectURL(a.href); }, 60000);
  setStatus("Exported " + a.download + " (open it with: agenthub trace view DIR).");
});
$("open").addEventListener("click", function () { $("trace-file").click(); });
$("trace-file").addEventListener("change", function () {
  var file = $("trace-file").files[0];
  $("trace-file").value = "";
  if (!file || state.busy) { return; }
  var reader = new FileReader();
  reader.onload = function () {
    var doc;
    try { doc = JSON.parse(String(reader.result)); } catch (e) { setStatus(file.name + " is not JSON", true); return; }
    if (!doc || !Array.isArray(doc.history) || !doc.history.every(function (m) {
      return m && (m.role === "user" || m.role === "assistant") && Array.isArray(m.content_items) &&
        m.content_items.every(function (item) {   // (what the page renders from them is there)
          return item && typeof item === "object" && typeof item.type === "string" &&
            (item.images === undefined || item.images === null || Array.isArray(item.images));
        });
    })) { setStatus(file.name + " is not an agenthub trace", true); return; }
    var config = doc.config && typeof doc.config === "object" ? doc.config : {};
    state.history = [];
    resetTranscript();
    var model = typeof doc.model === "string" ? doc.model : config.model || "";
    doc.history.forEach(function (m) { renderMessage(m, model); state.history.push(m); });
    state.lastModel = model;
    state.lastConfig = {};
    Object.keys(config).forEach(function (k) { if (k !== "model" && k !== "trace_id") { state.lastConfig[k] = config[k]; } });
    $("system").value = typeof config.system_prompt === "string" ? config.system_prompt : "";
    $("thinking").value = LEVELS.indexOf(config.thinking_level) >= 0 ? config.thinking_level : "";
    $("summary").checked = config.thinking_summary === true;
    $("max-tokens").value = typeof config.max_tokens === "number" ? String(config.max_tokens) : "";
    $("temperature").value = typeof config.temperature === "number" ? String(config.temperature) : "";
    $("tools").value = Array.isArray(config.tools) ? JSON.stringify(config.tools, null, 2) : "";
    $("tool-choice").value = typeof config.tool_choice === "string" ? config.tool_choice : "";
    var others = {};
    Object.keys(config).forEach(function (k) {
      if (OWN_CONTROLS.indexOf(k) < 0 && k !== "model" && k !== "trace_id") { others[k] = config[k]; }
    });
    if (Array.isArray(config.tool_choice)) { others.tool_choice = config.tool_choice; }
    $("extra").value = Object.keys(others).length ? JSON.stringify(others, null, 2) : "";
    if (Array.prototype.some.call($("model").options, function (o) { return o.value === model; })) {
      $("model").value = model;
    }
    readConfig();
    var last = state.history[state.history.length - 1];
    renderPending(last && last.role === "assistant" ? last : null);
    setStatus("Opened " + file.name + ": " + state.history.length + " messages.");
    scrollDown(true);
    updateButtons();
  };
  reader.readAsText(file);
});

// read-only hooks for scripts and tests: the conversation as it would be sent, and the fold
window.agenthubPlayground = Object.freeze({
  collect: collect,
  maxImageBytes: MAX_IMAGE_BYTES,
  history: function () { return JSON.parse(JSON.stringify(state.history)); },
  trace: function () { return JSON.parse(JSON.stringify(traceDocument().document)); }
});

setKey(getKey());
showTools();
showExtra();
updateButtons();
loadModels();
$("input").focus();
