"""JavaScript shared by agenthub's two self-contained pages (the trace viewer and the playground):
DOM nodes made from text only (never HTML), and inline media shown from ``{"__bytes__": base64}``.

Each page splices ``DOM_JS`` into its one inline script, whose hash its Content-Security-Policy names.
"""

__all__ = ["DOM_JS"]

DOM_JS = r"""
  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) { node.className = cls; }
    if (text !== undefined && text !== null) { node.textContent = String(text); }
    return node;
  }
  function add(parent, child) { parent.appendChild(child); return child; }
  function pretty(value) {
    try { return JSON.stringify(value, null, 2); } catch (e) { return String(value); }
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
"""
