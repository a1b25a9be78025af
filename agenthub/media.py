"""Media helpers (standard library only): play streamed speech, save generated images.

Speech models answer with raw PCM audio in ``inline_data`` items whose MIME type
carries the format, e.g. ``audio/L16;codec=pcm;rate=24000``.  One line makes it a
playable file::

    from agenthub import collect
    from agenthub.media import save_wav

    save_wav(collect(events), "speech.wav")     # a message, events, items or bytes

``save_inline_data(item, "image")`` writes an image (or any inline media) with the
file extension of its MIME type.

Gemini's ``audio/L16`` samples are little-endian, as the WAV format wants (Google's
own samples write them into a WAV file unchanged).
"""

import io
import mimetypes
import os
from typing import Any, List, Optional, Tuple

from .errors import ConfigError

__all__ = ["audio_format", "audio_bytes", "to_wav", "save_wav", "save_inline_data", "extension_for"]

#: what a bare stream of PCM bytes is taken to be when no MIME type says otherwise (Gemini speech)
DEFAULT_AUDIO_MIME = "audio/L16;codec=pcm;rate=24000"
_WAV_TYPES = ("audio/wav", "audio/x-wav", "audio/wave", "audio/vnd.wave")
_WIDTHS = {"l8": 1, "l16": 2, "l24": 3, "l32": 4}
_PCM_TYPES = ("pcm", "raw", "x-raw", "basic")
_EXTENSIONS = {"image/jpeg": ".jpg", "image/png": ".png", "image/webp": ".webp", "image/gif": ".gif",
               "audio/mpeg": ".mp3", "audio/wav": ".wav", "audio/x-wav": ".wav", "audio/ogg": ".ogg",
               "application/pdf": ".pdf", "text/plain": ".txt"}


def _params(mime_type: str) -> Tuple[str, dict]:
    head, _, rest = mime_type.partition(";")
    params = {}
    for piece in rest.split(";"):
        key, _, value = piece.partition("=")
        if key.strip():
            params[key.strip().lower()] = value.strip().strip('"')
    return head.strip().lower(), params


def _int_param(params: dict, names: Tuple[str, ...], default: int) -> int:
    for name in names:
        value = params.get(name)
        if value:
            try:
                number = int(value)
            except ValueError:
                raise ConfigError("audio MIME parameter {}={!r} is not a number".format(name, value)) from None
            if number <= 0:
                raise ConfigError("audio MIME parameter {}={} must be positive".format(name, number))
            return number
    return default


def audio_format(mime_type: str) -> Tuple[int, int, int]:
    """``audio/L16;codec=pcm;rate=24000`` -> (sample rate, channels, bytes per sample).

    Raw PCM types only (``audio/L8``, ``L16``, ``L24``, ``L32``, ``audio/pcm``); the
    rate defaults to 24000 Hz and the channels to 1, as Gemini speech sends them.
    """
    kind, params = _params(mime_type)
    major, _, subtype = kind.partition("/")
    if major != "audio":
        raise ConfigError("{!r} is not an audio MIME type".format(mime_type))
    if subtype in _WIDTHS:
        width = _WIDTHS[subtype]
    elif subtype in _PCM_TYPES:
        bits = _int_param(params, ("bits", "bit_depth", "bitdepth", "width"), 16)
        if bits % 8:
            raise ConfigError("{!r}: {} bits per sample cannot be written to WAV".format(mime_type, bits))
        width = bits // 8
    else:
        raise ConfigError("{!r} is not raw PCM audio: save its bytes as they are".format(mime_type))
    rate = _int_param(params, ("rate", "sample_rate", "samplerate"), 24000)
    channels = _int_param(params, ("channels", "channel"), 1)
    if width > 4 or channels > 0xFFFF or rate * channels * width > 0xFFFFFFFF:  # WAV's header fields
        raise ConfigError("{!r} cannot be written to WAV (at most 32 bits per sample, 65535 channels and "
                          "4294967295 bytes a second)".format(mime_type))
    return rate, channels, width


def _walk(source: Any, out: List[Tuple[bytes, str]]) -> None:
    if isinstance(source, dict):
        if "content_items" in source:  # a message or an event
            items = source.get("content_items")
            for item in items if isinstance(items, (list, tuple)) else ():
                _walk(item, out)
            return
        if source.get("type") in ("inline_data", "inline_thinking") and str(source.get("mime_type", "")).lower() \
                .startswith("audio/"):
            if not isinstance(source.get("data"), (bytes, bytearray, memoryview)):
                raise ConfigError("an audio {} item's data must be bytes (got {})".format(
                    source["type"], type(source.get("data")).__name__))
            out.append((bytes(source["data"]), source["mime_type"]))
        return
    if isinstance(source, (str, bytes, bytearray, memoryview)) or not hasattr(source, "__iter__"):
        return
    for element in source:
        _walk(element, out)


def audio_bytes(source: Any, mime_type: Optional[str] = None) -> Tuple[bytes, str]:
    """All audio in ``source`` joined in order, with its MIME type.

    ``source`` is raw bytes, an ``inline_data`` item, a message or event, or an
    iterable of those (a list of events, a history).  Audio items of another format
    than the first are an error (they cannot share one file).
    """
    if mime_type is not None and not isinstance(mime_type, str):
        raise ConfigError("mime_type must be a str or None (got {})".format(type(mime_type).__name__))
    if isinstance(source, (bytes, bytearray, memoryview)):
        return bytes(source), mime_type or DEFAULT_AUDIO_MIME
    found = []  # type: List[Tuple[bytes, str]]
    _walk(source, found)
    if not found:
        raise ConfigError("no audio inline_data item found")
    first = _params(found[0][1])
    for _, other in found[1:]:
        if _params(other) != first:
            raise ConfigError("audio items of different formats ({} and {}) cannot be joined".format(
                found[0][1], other))
    data = found[0][0] if len(found) == 1 else b"".join(piece for piece, _ in found)
    return data, mime_type or found[0][1]


def to_wav(source: Any, mime_type: Optional[str] = None) -> bytes:
    """The bytes of a WAV file holding the audio of ``source`` (see ``audio_bytes``).

    Audio that already is WAV is returned unchanged.
    """
    data, mime = audio_bytes(source, mime_type)
    kind, _ = _params(mime)
    if kind in _WAV_TYPES or (data[:4] == b"RIFF" and data[8:12] == b"WAVE"):
        return data
    rate, channels, width = audio_format(mime)
    frame = channels * width
    if len(data) % frame:
        data = data[:len(data) - len(data) % frame]  # a cut-off final frame is not playable
    import wave  # on first use: `import agenthub` stays cheap

    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as wav:
        wav.setnchannels(channels)
        wav.setsampwidth(width)
        wav.setframerate(rate)
        wav.writeframes(data)
    return buffer.getvalue()


def save_wav(source: Any, path: Any, mime_type: Optional[str] = None) -> str:
    """Write the audio of ``source`` (bytes, an item, a message, events, ...) to ``path`` as a WAV file.

    ``mime_type`` overrides the items' own (needed only for bare bytes that are not
    Gemini's 24 kHz mono 16-bit PCM).  Returns the path written.
    """
    if not isinstance(path, (str, bytes, os.PathLike)):
        raise ConfigError("path must be a str or os.PathLike (got {})".format(type(path).__name__))
    payload = to_wav(source, mime_type)
    path = os.fspath(path)
    with open(path, "wb") as handle:
        handle.write(payload)
    return path


def extension_for(mime_type: str) -> str:
    """A file extension (with its dot) for a MIME type; ``.bin`` when none is known."""
    kind, _ = _params(mime_type)
    if kind in _EXTENSIONS:
        return _EXTENSIONS[kind]
    if kind.startswith("audio/l") or kind in ("audio/pcm",):
        return ".pcm"
    return mimetypes.guess_extension(kind) or ".bin"


def save_inline_data(item: Any, path: Any) -> str:
    """Write an ``inline_data`` / ``inline_thinking`` item's bytes to ``path``.

    A path without an extension gets the one of the item's MIME type.  Raw PCM audio
    is written as a WAV file instead (use ``save_wav`` to join several chunks).
    Returns the path written.
    """
    if not isinstance(item, dict) or not isinstance(item.get("data"), (bytes, bytearray)):
        raise ConfigError("save_inline_data takes an inline_data item")
    mime = item.get("mime_type") or "application/octet-stream"
    if not isinstance(mime, str):
        raise ConfigError("an inline_data item's mime_type must be a str (got {})".format(type(mime).__name__))
    if not isinstance(path, (str, bytes, os.PathLike)):
        raise ConfigError("path must be a str or os.PathLike (got {})".format(type(path).__name__))
    path = os.fsdecode(path)  # (a bytes path takes the extension as text does)
    kind, _ = _params(mime)
    is_pcm = kind.startswith("audio/") and kind not in _WAV_TYPES and (
        kind.partition("/")[2] in _WIDTHS or kind.partition("/")[2] in _PCM_TYPES)
    if not os.path.splitext(path)[1]:
        path += ".wav" if is_pcm else extension_for(mime)
    if is_pcm:
        return save_wav(item, path)
    with open(path, "wb") as handle:
        handle.write(bytes(item["data"]))
    return path


def pdf_url(url: str) -> bool:
    """A URL (not a data URI) whose path ends in ``.pdf``: a document, sent as one where the wire takes a
    document by URL (Anthropic, Responses' input_file, Gemini), refused where it takes none."""
    return url.lower().split("#", 1)[0].split("?", 1)[0].endswith(".pdf")
