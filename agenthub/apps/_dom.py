"""What agenthub's two self-contained pages (the trace viewer and the playground) share, and how each
is put together from its files in ``assets/`` (package data).

A page is ``assets/<name>.html`` with one inline stylesheet, ``pages.css`` (what both pages share)
then ``<name>.css``, and one inline script, ``dom.js`` (DOM nodes made from text only, never HTML,
and inline media from ``{"__bytes__": base64}``) then ``<name>.js``, inside one strict-mode function.
Each page's Content-Security-Policy names the SHA-256 of that stylesheet and that script
(``csp_source``), computed from the files as read.

The files are read with ``importlib.resources``, so the pages work from an installed package, a
zip, or an ``agenthub/`` folder copied into a project (no install), on Python 3.8 and later.
"""

import base64
import hashlib
import importlib.resources
from typing import Tuple

__all__ = ["asset", "build", "csp_source"]

ASSETS = __name__.rsplit(".", 1)[0] + ".assets"
_STYLE_MARK = "{{style}}"
_SCRIPT_MARK = "{{script}}"


def asset(name: str) -> str:
    """The text of ``assets/<name>`` (UTF-8, newlines as ``\\n``)."""
    files = getattr(importlib.resources, "files", None)
    if files is None:  # Python 3.8
        return importlib.resources.read_text(ASSETS, name, encoding="utf-8")
    return str(files(ASSETS).joinpath(name).read_text(encoding="utf-8"))


def build(name: str) -> Tuple[str, str, str]:
    """The page ``name`` ("playground", "viewer") -> (its HTML, its inline stylesheet, its inline script)."""
    style = asset("pages.css") + asset(name + ".css")
    script = '\n(function () {\n"use strict";\n' + asset("dom.js") + asset(name + ".js") + "})();\n"
    for what, code, end in (("script", script, "</script"), ("stylesheet", style, "</style")):
        if end in code.lower():  # it would end its element early
            raise AssertionError("the {} of the {} page must not contain {}".format(what, name, end))
    html = asset(name + ".html")
    if html.count(_STYLE_MARK) != 1 or html.count(_SCRIPT_MARK) != 1:
        raise AssertionError("assets/{}.html must hold {} and {} once each".format(name, _STYLE_MARK, _SCRIPT_MARK))
    before, after = html.split(_STYLE_MARK)
    middle, end = after.split(_SCRIPT_MARK)
    return before + style + middle + script + end, style, script


def csp_source(code: str) -> str:
    """The CSP source that allows exactly the inline element whose text is ``code``: ``'sha256-...'``."""
    return "'sha256-" + base64.b64encode(hashlib.sha256(code.encode("utf-8")).digest()).decode("ascii") + "'"
