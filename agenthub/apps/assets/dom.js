// agenthub: shared by both pages: DOM nodes made from text only (never HTML), token counts, a thinking
// block, and inline media shown from
// {"__bytes__": base64}.
// Each page's one inline script is dom.js then the page's file, inside one strict-mode function
// (agenthub/apps/_dom.py builds it; the page's Content-Security-Policy names its SHA-256).

function el(tag, cls, text) {
  var node = document.createElement(tag);
  if (cls) { node.className = cls; }
  if (text !== undefined && text !== null) { node.textContent = String(text); }
  return node;
}
function add(parent, child) { parent.appendChild(child); return child; }
// JSON text of a value as the data model has it: an object of the one key __bytes__ that is no bytes travels
// escaped, {"__bytes__": [its value]} (agenthub.types.to_jsonable), and is shown as it was
function unescaped(key, value) {
  if (value && typeof value === "object" && !Array.isArray(value)) {
    var keys = Object.keys(value);
    if (keys.length === 1 && keys[0] === "__bytes__" && Array.isArray(value.__bytes__) && value.__bytes__.length === 1) {
      return {__bytes__: value.__bytes__[0]};
    }
  }
  return value;
}
function pretty(value) {
  try { return JSON.stringify(value, unescaped, 2); } catch (e) { return String(value); }
}
function b64(data) { return data && typeof data.__bytes__ === "string" ? data.__bytes__ : ""; }
function byteCount(data) { var s = b64(data); return Math.floor(s.length * 3 / 4) - s.match(/=*$/)[0].length; }
function safeMime(mime) { return /^[A-Za-z0-9.+-]+\/[A-Za-z0-9.+-]+$/.test(mime || "") ? mime : ""; }
// an image, audio or video element for inline bytes (any other type shows nothing but its caption)
function mediaNode(parent, mime, data) {
  var src = "data:" + mime + ";base64," + b64(data);
  if (mime.indexOf("image/") === 0) {
    var img = add(parent, el("img", "media"));
    img.alt = mime + " image";
    img.src = src;
  } else if (mime.indexOf("audio/") === 0 || mime.indexOf("video/") === 0) {
    var player = add(parent, el(mime.indexOf("audio/") === 0 ? "audio" : "video", "media"));
    player.controls = true;
    player.src = src;
  }
}
var BUCKETS = [["prompt_tokens", "prompt"], ["cached_tokens", "cached"], ["thoughts_tokens", "thinking"],
               ["response_tokens", "response"]];
// "prompt 24 · cached 0 · thinking ? · response 14", with `unknown` where the server said nothing
function usageCounts(usage, unknown) {
  return BUCKETS.map(function (b) {
    var v = usage ? usage[b[0]] : null;
    return b[1] + " " + (typeof v === "number" ? v : unknown);
  }).join(" · ");
}
// a folded thinking block
function thinkingPart(parent, text) {
  var part = add(parent, el("details", "part thinking"));
  add(part, el("summary", null, "Thinking"));
  add(part, el("div", "text", text));
  return part;
}
