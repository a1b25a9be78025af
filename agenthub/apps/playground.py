"""The playground served by ``agenthub serve`` at ``GET /``: one self-contained page.

``PAGE`` is the HTML document (bytes, UTF-8) with its stylesheet and its script inline
(made from ``assets/playground.html``, ``.css`` and ``.js`` with the parts it shares with the trace
viewer, ``pages.css`` and ``dom.js``: see ``agenthub.apps._dom``);
nothing else is loaded, from this server or any other.  ``CSP`` is the
Content-Security-Policy it is served with: the inline script and stylesheet are allowed
by their SHA-256 hashes (computed at import from the files as read), requests go
to the same origin only, images and media come from ``data:``/``blob:`` URLs or the
same origin, the page cannot be framed, and Trusted Types are required, so no string
ever becomes markup or code.  ``HEADERS`` is the full header list for the answer (with
``Cross-Origin-Opener-Policy: same-origin``: a page of another origin that opens it gets no handle on it).

The page speaks the wire contract of ``agenthub serve``:

- ``GET /v1/models`` fills the model picker;
- ``POST /v1/stream`` with ``{"model", "messages", "config"}`` is read with ``fetch``
  and a ``ReadableStream``: ``data:`` lines are UniEvents, ``event: error`` carries
  ``{"error": {"type", "message", ...}}``, ``: keep-alive`` comments keep it waiting,
  ``data: [DONE]`` ends it;
- ``Authorization: Bearer <server key>``: the key is asked once, kept in
  ``sessionStorage``, and asked again when the server answers 401.

The conversation lives in the page as UniMessages: each finished turn is folded the
way ``agenthub.collect`` folds events (consecutive text/thinking merge, fidelity kept
on its item, partial tool calls dropped) and sent back on the next turn; an aborted or
failed turn is shown but not kept.  Bytes travel as ``{"__bytes__": "<base64>"}``,
so an uploaded image is an ``inline_data`` item and the exported file is a trace
``agenthub.tracer.load_trace`` and ``agenthub trace view`` read.  Everything the model
writes is put on the page with ``textContent``: it is never parsed as HTML.
"""

from typing import List, Tuple

from ._dom import build, csp_source

__all__ = ["PAGE", "CSP", "HEADERS", "SCRIPT", "STYLE"]

_HTML, STYLE, SCRIPT = build("playground")
PAGE = _HTML.encode("utf-8")
CSP = "; ".join((
    "default-src 'none'",
    "script-src " + csp_source(SCRIPT),
    "style-src " + csp_source(STYLE),
    "connect-src 'self'",
    "img-src 'self' data: blob:",
    "media-src 'self' data: blob:",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
    "require-trusted-types-for 'script'",
    "trusted-types 'none'",
))

#: every header the page is answered with (the app adds Content-Length)
HEADERS = [
    ("Content-Type", "text/html; charset=utf-8"),
    ("Content-Security-Policy", CSP),
    ("X-Content-Type-Options", "nosniff"),
    ("X-Frame-Options", "DENY"),
    ("Referrer-Policy", "no-referrer"),
    ("Cache-Control", "no-store"),
    # a page elsewhere that opens this one gets no handle on it (it could send it to a look-alike later)
    ("Cross-Origin-Opener-Policy", "same-origin"),
]  # type: List[Tuple[str, str]]
