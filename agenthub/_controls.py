"""What a server's or a model's words become on a terminal: control characters shown (``^[``, ``<9B>``), not
obeyed, and with ``safe`` the bidirectional overrides too (``<U+202E>``).  Below the applications: the command
line's modules outside ``agenthub.apps`` (``jobs.batch_cli``) escape with it too; ``apps.terminal`` re-exports it."""

import re
from typing import Any

__all__ = ["printable", "safe", "is_terminal", "shown_for", "json_for", "dollars"]

#: C0 controls but tab and newline, DEL, and the C1 controls (ESC [ / OSC 52 / CSI as one byte ...)
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _shown(match: Any) -> str:
    code = ord(match.group())
    if code < 0x20:
        return "^" + chr(code + 64)  # ESC -> ^[ , as less and git show it
    return "^?" if code == 0x7f else "<{:02X}>".format(code)


def dollars(amount: float) -> str:
    """A price as the command line shows it, without its ``$``: to the millionth (``0.000018``, ``1.5``; trailing
    zeros dropped, ``0.00`` for nothing), so a cheap job or turn is never shown as costing ``0.0000``."""
    text = "{:.6f}".format(amount).rstrip("0")
    return text + "00" if text.endswith(".") else text


def printable(text: str) -> str:
    """``text`` with every control character but tab and newline shown as ``^[``, ``^?`` or ``<9B>``: model
    output written to a terminal cannot move the cursor, retitle the window or set the clipboard (OSC 52)."""
    return _CONTROLS.sub(_shown, text) if _CONTROLS.search(text) else text


#: what ``safe`` shows escaped besides: the bidirectional embeddings, overrides and isolates (U+202A-U+202E,
#: U+2066-U+2069), which reorder what the reader sees ("Trojan Source")
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _shown_safe(match: Any) -> str:
    code = ord(match.group())
    return "<U+{:04X}>".format(code) if code > 0xff else _shown(match)


def safe(text: str) -> str:
    """``printable`` and the bidirectional controls shown as ``<U+202E>``: what the command line writes of
    a tool's description, its arguments or its result (a server's or a model's words) can neither drive
    the terminal (a screen clear, concealed text, OSC 52 to the clipboard) nor reorder itself."""
    return _UNSAFE.sub(_shown_safe, text) if _UNSAFE.search(text) else text


def is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def shown_for(stream: Any) -> Any:
    """How a server's words (an MCP tool's, a journal's, a batch engine's) are written to ``stream``: ``safe``
    on a terminal, as they are elsewhere (a pipe, a file)."""
    return safe if is_terminal(stream) else _as_it_is


def _as_it_is(text: str) -> str:
    return text


#: what ``json.dumps(..., ensure_ascii=False)`` leaves as it is (it escapes only C0) and a terminal obeys or
#: reorders by: DEL, the C1 controls (U+009B is a CSI, U+009D an OSC) and the bidirectional controls
_JSON_RAW = re.compile("[\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _json_escaped(text: str) -> str:
    """JSON text with DEL, the C1 and the bidirectional controls written as ``\\u009b`` escapes: they can only
    be inside its strings, so it stays valid JSON of the same value."""
    return _JSON_RAW.sub(lambda match: "\\u{:04x}".format(ord(match.group())), text) if _JSON_RAW.search(text) \
        else text


def json_for(stream: Any) -> Any:
    """How JSON text (a model's or a server's words inside) is written to ``stream``: on a terminal with the
    controls JSON leaves raw escaped (``_json_escaped``), as it is elsewhere."""
    return _json_escaped if is_terminal(stream) else _as_it_is
