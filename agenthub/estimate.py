"""The local estimate of a request's tokens, written once (no tokenizer, no network): the budget reserves
with it (``agenthub.budget.estimate_tokens``), the rate limiter paces with it (``agenthub.limiter.estimate_tokens``,
which adds the output limit), ``count_tokens(..., estimate=True)`` returns it.

Text (messages, thinking, tool calls and results, the system prompt, tool schemas, a response schema):
UTF-8 bytes / 3, rounded up, above what BPE tokenizers give for English (about 4 characters a token)
and near one token a character for CJK text (3 bytes each).  Each image ``IMAGE_TOKENS``; audio sent as bytes
``AUDIO_TOKENS_PER_SECOND`` for each second its headers say it lasts (``audio_seconds``: WAV, MP3, ADTS AAC, FLAC,
Ogg, MP4 / M4A, WebM / Matroska; raw PCM by the rate its type names), at least ``MEDIA_TOKENS``, and so is
audio in a ``data:audio/...`` URI; audio whose length its bytes do not say (audio by URL too, and a Gemini
Files API URI: the upload may be audio), each video item, and each other media item sent by URL,
``MEDIA_TOKENS`` (a Budget holds the model's whole input limit for such audio: ``unknown_audio``, and for a video
sent as bytes or a video, a PDF or a YouTube link sent by URL: ``unknown_media``; an image URL holds
``IMAGE_TOKENS``); a document sent as bytes (a PDF, a text or office file) its size over
``DOCUMENT_BYTES_PER_TOKEN``, at least ``MEDIA_TOKENS`` (a PDF's pages are read as text and as images: a fixed
figure was 36 times too low for a long one).  ``MESSAGE_TOKENS`` per message, ``TOOL_TOKENS`` per tool.  Meant to
err high; it is not a bound.
"""

import json
import math
import struct
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Tuple

__all__ = ["estimate_tokens", "estimate_parts", "estimate_with_output", "audio_tokens", "audio_seconds", "unknown_audio",
           "unknown_video", "unknown_media", "IMAGE_TOKENS", "MEDIA_TOKENS",
           "AUDIO_TOKENS_PER_SECOND", "MESSAGE_TOKENS",
           "TOOL_TOKENS", "DOCUMENT_BYTES_PER_TOKEN"]

#: tokens per image (about what Anthropic bills for a 1.15-megapixel image)
IMAGE_TOKENS = 1600
#: tokens per audio or video item, per media item sent by URL, and the least a document counts
MEDIA_TOKENS = 1600
#: audio tokens per second of a WAV (Gemini counts 32 a second, the most of any provider's documented rate)
AUDIO_TOKENS_PER_SECOND = 32
#: a document's bytes per token (PDF text is compressed, and each page is also read as an image: high side)
DOCUMENT_BYTES_PER_TOKEN = 2
#: tokens added per message (role and framing) and per tool schema
MESSAGE_TOKENS = 4
TOOL_TOKENS = 8


def text_tokens(text: str) -> int:
    """UTF-8 bytes / 3, rounded up."""
    return (len(text.encode("utf-8", "surrogatepass")) + 2) // 3 if text else 0


def _json_tokens(value: Any) -> int:
    return text_tokens(json.dumps(value, ensure_ascii=False, sort_keys=True, default=str))


def media_tokens(mime_type: str, size: Optional[int]) -> int:
    """One media item of ``mime_type``: an image ``IMAGE_TOKENS``; audio, video, or a size not known (a URL)
    ``MEDIA_TOKENS``; a document of ``size`` bytes ``size / DOCUMENT_BYTES_PER_TOKEN``, at least ``MEDIA_TOKENS``."""
    mime_type = mime_type.lower()
    if mime_type.startswith("image/"):
        return IMAGE_TOKENS
    if size is None or mime_type.startswith(("audio/", "video/")):
        return MEDIA_TOKENS
    return max(MEDIA_TOKENS, int(math.ceil(size / float(DOCUMENT_BYTES_PER_TOKEN))))


def wav_seconds(data: Any) -> Optional[float]:
    """How long a WAV lasts, from its header: its size over the byte rate its ``fmt `` chunk says (the header
    counted as sound too: never short); None for bytes that are not a WAV with a consistent ``fmt `` chunk."""
    if not isinstance(data, (bytes, bytearray)) or data[:4] != b"RIFF" or data[8:12] != b"WAVE":
        return None
    at = 12
    while at + 8 <= min(len(data), 1 << 16):  # (the fmt chunk comes first in practice: a bounded walk)
        size = int.from_bytes(data[at + 4:at + 8], "little")
        if data[at:at + 4] == b"fmt ":
            body = data[at + 8:at + 8 + 16]
            if len(body) < 16:
                return None
            rate, byte_rate = int.from_bytes(body[4:8], "little"), int.from_bytes(body[8:12], "little")
            align = int.from_bytes(body[12:14], "little")
            if byte_rate <= 0 or byte_rate != rate * align:
                return None
            return len(data) / float(byte_rate)
        at += 8 + size + (size & 1)
    return None


#: MPEG audio (MP3, MP2) bitrates in kbit/s by bitrate index 1-14: (MPEG-1 layer I, II, III), (MPEG-2/2.5 layer
#: I, II and III)
_MPEG_KBPS = {(3, 3): (32, 64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384, 416, 448),
              (3, 2): (32, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384),
              (3, 1): (32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320),
              (2, 3): (32, 48, 56, 64, 80, 96, 112, 128, 144, 160, 176, 192, 224, 256),
              (2, 2): (8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160)}
_MPEG_RATES = {3: (44100, 48000, 32000), 2: (22050, 24000, 16000), 0: (11025, 12000, 8000)}
#: ADTS (AAC) sampling frequencies by index
_ADTS_RATES = (96000, 88200, 64000, 48000, 44100, 32000, 24000, 22050, 16000, 12000, 11025, 8000, 7350)
#: the longest an ADTS frame lasts: four blocks of 1024 samples at its lowest rate
_ADTS_LONGEST = 4 * 1024 / 7350.0
#: the fewest bytes a second of MPEG audio takes (8 kbit/s, the lowest bitrate any version and layer has): bytes
#: after the frames that are not a frame count as that much sound, never less
_MPEG_LEAST_BYTES_PER_SECOND = 1000
#: the most frames ``_frames_seconds`` walks (about 87 minutes of MP3); a longer file's length is unknown
_MAX_FRAMES = 200000


def _mpeg_frame(data: Any, at: int) -> Optional[Tuple[int, int, int]]:
    """The MPEG audio or ADTS frame whose header is at ``at``: (its length in bytes, its samples, its sample rate);
    None when no such frame begins there."""
    if at + 7 > len(data) or data[at] != 0xFF or data[at + 1] & 0xE0 != 0xE0:
        return None
    b1, b2 = data[at + 1], data[at + 2]
    layer = (b1 >> 1) & 3
    if layer == 0:  # ADTS: 12 sync bits, layer 0
        if b1 & 0xF0 != 0xF0:
            return None
        index = (b2 >> 2) & 0x0F
        length = ((data[at + 3] & 3) << 11) | (data[at + 4] << 3) | (data[at + 5] >> 5)
        if index >= len(_ADTS_RATES) or length < 7:
            return None
        return length, 1024 * ((data[at + 6] & 3) + 1), _ADTS_RATES[index]
    version = (b1 >> 3) & 3
    bitrate_index, rate_index = b2 >> 4, (b2 >> 2) & 3
    if version == 1 or bitrate_index in (0, 15) or rate_index == 3:  # (a free bitrate cannot be walked)
        return None
    kbps = _MPEG_KBPS[(3, layer) if version == 3 else (2, 3 if layer == 3 else 2)][bitrate_index - 1]
    rate = _MPEG_RATES[version][rate_index]
    samples = 384 if layer == 3 else (1152 if layer == 2 or version == 3 else 576)
    padding = (b2 >> 1) & 1
    if layer == 3:
        return (12 * kbps * 1000 // rate + padding) * 4, samples, rate
    return samples // 8 * kbps * 1000 // rate + padding, samples, rate


def _frames_seconds(data: Any) -> Optional[float]:
    """How long MPEG audio (an MP3) or ADTS AAC lasts: its frames walked header to header (the sound is never
    decoded), an ID3v2 tag before them skipped; bytes after the last frame that are no tag count at the lowest
    MPEG bitrate (ADTS: a last frame cut short what its header says, anything else unknown).  None when no frame
    begins the data or there are more than ``_MAX_FRAMES``."""
    at = 0
    if data[:3] == b"ID3" and len(data) >= 10:
        at = 10 + ((data[6] & 0x7F) << 21 | (data[7] & 0x7F) << 14 | (data[8] & 0x7F) << 7 | (data[9] & 0x7F))
        if data[5] & 0x10:
            at += 10  # (a footer)
    if _mpeg_frame(data, at) is None:
        return None
    adts = data[at + 1] & 0x06 == 0
    width = 7 if adts else 3  # (the header bytes a frame's length and samples depend on)
    known = {}  # type: Dict[bytes, Tuple[int, float]]  # header -> (length, seconds): most files repeat a few
    seconds = 0.0
    end = len(data)
    for _ in range(_MAX_FRAMES):
        header = data[at:at + width]
        step = known.get(header)
        if step is None:
            frame = _mpeg_frame(data, at)
            if frame is None:
                break
            step = known[header] = (frame[0], frame[1] / float(frame[2]))
        if at + step[0] > end:
            break
        seconds += step[1]
        at += step[0]
        if at >= end:
            break
    else:
        return None  # (longer than the walk goes)
    rest = data[at:at + 8]
    if at < end and not (rest[:3] == b"TAG" or rest == b"APETAGEX" or rest[:6] == b"LYRICS"):
        if not adts:
            seconds += (end - at) / float(_MPEG_LEAST_BYTES_PER_SECOND)
        elif end - at < 7 and data[at] == 0xFF:  # the last frame's header cut short: at most its longest
            seconds += _ADTS_LONGEST
        else:  # the last frame cut short lasts what its header says, at most; anything else has no bound
            frame = _mpeg_frame(data, at)  # (an AAC frame can be a few bytes)
            if frame is None or at + frame[0] <= end:
                return None
            seconds += frame[1] / float(frame[2])
    return seconds


def _flac_seconds(data: Any) -> Optional[float]:
    """A FLAC file's length: its STREAMINFO block's total samples over its sample rate (None where it says 0)."""
    info = data[8:26]
    if data[:4] != b"fLaC" or data[4] & 0x7F != 0 or len(info) < 18:
        return None
    rate = info[10] << 12 | info[11] << 4 | info[12] >> 4
    total = (info[13] & 0x0F) << 32 | int.from_bytes(info[14:18], "big")
    return total / float(rate) if rate and total else None


#: how far from its end an Ogg file is searched for its last page (a page is at most 65,307 bytes)
_OGG_TAIL = 1 << 17


def _ogg_seconds(data: Any) -> Optional[float]:
    """An Ogg file's length: the granule position of the last page of its first stream over the codec's rate
    (Opus 48 kHz, Vorbis and FLAC their header's rate, Speex its header's); None for another codec."""
    if data[:4] != b"OggS" or len(data) < 28:
        return None
    serial = data[14:18]
    packet = data[27 + data[26]:27 + data[26] + 64]
    if packet[:8] == b"OpusHead":
        rate = 48000
    elif packet[:7] == b"\x01vorbis" and len(packet) >= 16:
        rate = int.from_bytes(packet[12:16], "little")
    elif packet[:5] == b"\x7fFLAC" and packet[9:13] == b"fLaC" and len(packet) >= 34:
        rate = packet[27] << 12 | packet[28] << 4 | packet[29] >> 4
    elif packet[:8] == b"Speex   " and len(packet) >= 40:
        rate = int.from_bytes(packet[36:40], "little")
    else:
        return None
    if not rate:
        return None
    floor = max(0, len(data) - _OGG_TAIL)
    at = len(data)
    while True:
        at = data.rfind(b"OggS", floor, at)
        if at < 0:
            return None
        if data[at + 4:at + 5] != b"\x00" or len(data) < at + 27:
            continue
        granule = int.from_bytes(data[at + 6:at + 14], "little")
        if data[at + 14:at + 18] == serial and granule < 1 << 63:
            return granule / float(rate) if granule else None
        if data[at + 5] & 0x02 and at:  # a stream beginning after the first one's last page: a chained file, whose
            return None  # later links' granules start again from 0 (the first link alone is not its length)


def _boxes(data: Any, start: int, end: int) -> Iterable[Tuple[bytes, int, int]]:
    """The ISO media boxes from ``start`` to ``end``: (type, body start, box end), at most 4096 of them."""
    at = start
    for _ in range(4096):
        if at + 8 > end:
            return
        size = int.from_bytes(data[at:at + 4], "big")
        body = at + 8
        if size == 1:
            size = int.from_bytes(data[at + 8:at + 16], "big")
            body = at + 16
        elif size == 0:
            size = end - at
        if size < body - at or at + size > end:
            return
        yield bytes(data[at + 4:at + 8]), body, at + size
        at += size


#: an ISO media duration that says none (all ones)
_NO_DURATION = (0xFFFFFFFF, 0xFFFFFFFFFFFFFFFF)


def _mp4_seconds(data: Any) -> Optional[float]:
    """An MP4 / M4A file's length: its ``moov`` box's ``mvhd`` duration over its timescale (the boxes walked by
    their sizes, nothing decoded); a fragmented file's (an ``mvex`` in the ``moov``: its sound is in fragments
    after it, which ``mvhd`` does not count) its ``mehd`` fragment duration; None where it says none (a fragmented
    file without ``mehd``)."""
    if data[4:8] != b"ftyp":
        return None
    for kind, body, end in _boxes(data, 0, len(data)):
        if kind == b"moov":
            scale = duration = 0
            whole = None  # type: Optional[int]  # a fragmented file's mehd: the length of all its fragments
            fragmented = False
            for inner, start, stop in _boxes(data, body, end):
                if inner == b"mvhd":
                    if data[start] == 1:
                        scale = int.from_bytes(data[start + 20:start + 24], "big")
                        duration = int.from_bytes(data[start + 24:start + 32], "big")
                    else:
                        scale = int.from_bytes(data[start + 12:start + 16], "big")
                        duration = int.from_bytes(data[start + 16:start + 20], "big")
                elif inner == b"mvex":  # sound in moof fragments after the moov, which mvhd does not count
                    fragmented = True
                    for part, at, _ in _boxes(data, start, stop):
                        if part == b"mehd":
                            whole = int.from_bytes(data[at + 4:at + (12 if data[at] == 1 else 8)], "big")
            if fragmented:
                duration = max(duration, whole) if whole and whole not in _NO_DURATION else 0
            if not scale or not duration or duration in _NO_DURATION:
                return None
            return duration / float(scale)
    return None


#: Matroska / WebM (EBML) element ids: the EBML header, its DocType, the Segment, its Info, the Info's
#: TimestampScale (nanoseconds a tick, 1,000,000 when absent) and Duration (a float of ticks)
_EBML, _DOC_TYPE, _SEGMENT, _INFO, _SCALE, _DURATION = 0x1A45DFA3, 0x4282, 0x18538067, 0x1549A966, 0x2AD7B1, 0x4489
#: the most elements ``_webm_seconds`` steps over at each level (SeekHead, Void, Tracks, Clusters... before Info)
_MAX_ELEMENTS = 256


def _ebml_element(data: Any, at: int, end: int) -> Optional[Tuple[int, int, Optional[int]]]:
    """The EBML element whose id begins at ``at``: (its id, its body's start, its body's end: None for a size that
    says "unknown", else at most ``end``); None where no whole id and size lie before ``end``."""
    parts = []
    for limit in (4, 8):  # (an id is a variable-length int of at most 4 bytes, its marker bit kept; a size 8)
        first = data[at] if at < end else 0
        length = 9 - first.bit_length()
        if not first or length > limit or at + length > end:
            return None
        parts.append((int.from_bytes(data[at:at + length], "big"), length))
        at += length
    (ident, _), (size, length) = parts
    size &= (1 << (7 * length)) - 1  # (the size's marker bit dropped)
    if size == (1 << (7 * length)) - 1:
        return ident, at, None
    return ident, at, min(at + size, end)


def _webm_seconds(data: Any) -> Optional[float]:
    """A WebM / Matroska file's length: its Segment's Info Duration times its TimestampScale (the elements walked
    by their sizes, at most ``_MAX_ELEMENTS`` at each level: the Info comes before the clusters in practice); None
    when it has none (a live recording: browsers' MediaRecorder writes none) or says one that is no length."""
    end = len(data)
    head = _ebml_element(data, 0, end)
    if head is None or head[0] != _EBML or head[2] is None:
        return None
    doc_type = None
    at = head[1]
    for _ in range(_MAX_ELEMENTS):
        element = _ebml_element(data, at, head[2])
        if element is None or element[2] is None:
            break
        if element[0] == _DOC_TYPE:
            doc_type = bytes(data[element[1]:element[2]]).rstrip(b"\x00")
        at = element[2]
    if doc_type not in (b"webm", b"matroska"):
        return None
    segment = _ebml_element(data, head[2], end)
    if segment is None or segment[0] != _SEGMENT:
        return None
    at, stop = segment[1], end if segment[2] is None else segment[2]
    for _ in range(_MAX_ELEMENTS):
        element = _ebml_element(data, at, stop)
        if element is None or element[2] is None:
            return None  # (cut short, or an element of unknown size: a cluster of a live recording)
        if element[0] == _INFO:
            scale, duration = 1000000, None
            at = element[1]
            for _ in range(_MAX_ELEMENTS):
                child = _ebml_element(data, at, element[2])
                if child is None or child[2] is None:
                    break
                body = bytes(data[child[1]:child[2]])
                if child[0] == _SCALE and 1 <= len(body) <= 8:
                    scale = int.from_bytes(body, "big")
                elif child[0] == _DURATION and len(body) in (4, 8):
                    duration = struct.unpack(">f" if len(body) == 4 else ">d", body)[0]
                at = child[2]
            if duration is None or not scale:
                return None
            return duration * (scale / 1e9)  # (a NaN, infinite or absurd figure: audio_seconds says None)
        at = element[2]
    return None


#: the longest audio ``audio_seconds`` believes a header about (about 31 years): a longer figure (an infinite or
#: absurd float, a 64-bit tick count) is no length, and the audio's length is unknown
_MAX_SECONDS = 1e9


def audio_seconds(data: Any, mime_type: Optional[str] = None) -> Optional[float]:
    """How long audio sent as bytes lasts, read from its headers (never decoded): a WAV (``wav_seconds``), an MP3
    or ADTS AAC (its frames walked), a FLAC (STREAMINFO), an Ogg file (Opus, Vorbis, FLAC or Speex: its last
    page's granule position), an MP4 / M4A (``mvhd``), a WebM / Matroska (its Segment Info's Duration); raw PCM,
    which has no header, from its size and the rate its ``mime_type`` names (``audio/L16;rate=24000``: a Gemini
    speech answer, a Chat answer's pcm16; channels and sample width as ``media.audio_format`` reads them); None
    for bytes of another kind, whose headers do not say it, or that say a length that is none (not above 0, NaN,
    infinite, or above ``_MAX_SECONDS``)."""
    if mime_type is not None and isinstance(data, (bytes, bytearray)):
        pcm = _pcm_seconds(data, mime_type)
        if pcm is not None:
            return pcm if 0 < pcm <= _MAX_SECONDS else None
    if not isinstance(data, (bytes, bytearray)) or len(data) < 12:
        return None
    if type(data) is not bytes:
        data = bytes(data)  # (slices of it are looked up by value)
    head = data[:4]
    try:
        if head == b"RIFF":
            seconds = wav_seconds(data)
        elif head == b"fLaC":
            seconds = _flac_seconds(data)
        elif head == b"OggS":
            seconds = _ogg_seconds(data)
        elif data[4:8] == b"ftyp":
            seconds = _mp4_seconds(data)
        elif head[:3] == b"ID3" or data[0] == 0xFF:
            seconds = _frames_seconds(data)
        elif head == b"\x1a\x45\xdf\xa3":
            seconds = _webm_seconds(data)
        else:
            return None
    except (IndexError, ValueError, ZeroDivisionError, OverflowError, struct.error):  # (bounds checked: never a crash)
        return None
    return seconds if seconds is not None and 0 < seconds <= _MAX_SECONDS else None  # (False for a NaN)


def _pcm_seconds(data: Any, mime_type: Any) -> Optional[float]:
    """Raw PCM's length: its size over the bytes a second its type says (None unless it names a rate)."""
    from .errors import ConfigError
    from .media import _params, audio_format

    if not isinstance(mime_type, str):
        return None
    kind, params = _params(mime_type)
    if kind not in _PCM_KINDS or not any(params.get(name) for name in ("rate", "sample_rate", "samplerate")):
        return None  # (a rate not named: no length, not a guess)
    try:
        rate, channels, width = audio_format(mime_type)
    except ConfigError:
        return None
    return len(data) / float(rate * channels * width)


#: the raw PCM types whose length ``_pcm_seconds`` reads from their rate (not audio/basic: 8-bit mu-law)
_PCM_KINDS = frozenset(["audio/l8", "audio/l16", "audio/l24", "audio/l32", "audio/pcm", "audio/raw", "audio/x-raw"])


def _seconds_tokens(seconds: Optional[float]) -> int:
    if seconds is None:
        return MEDIA_TOKENS
    return max(MEDIA_TOKENS, int(math.ceil(seconds * AUDIO_TOKENS_PER_SECOND)))


def unknown_audio(messages: Iterable[Mapping[str, Any]]) -> int:
    """How many of the request's audio items (``inline_data`` of an ``audio/`` type, a ``data:audio/...`` URI) are
    of a length their bytes do not say (``audio_seconds`` is None): ``estimate_tokens`` counts each
    ``MEDIA_TOKENS``, which may be far below what it bills, so a Budget holds the most input the model takes for
    such a request."""
    return estimate_parts(messages)[2]


def unknown_video(messages: Iterable[Mapping[str, Any]]) -> int:
    """How many video items the request sends as bytes (``inline_data`` of a ``video/`` type, a ``data:video/...``
    URI in an ``image_url`` item or a tool result's images): their length is not read, ``estimate_tokens`` counts
    each ``MEDIA_TOKENS``, and Gemini bills about 260 tokens for each second of one, so a Budget holds the most
    input the model takes for such a request (at its input price)."""
    return _count_media(messages, _is_video_uri)


def unknown_media(messages: Iterable[Mapping[str, Any]]) -> int:
    """``unknown_video``, and the items sent by URL whose size no byte here says and no rule bounds: a video (the
    type its path's extension names), a PDF (a path ending ``.pdf``: sent as a document, its pages read as text and
    as images) or a YouTube link (Gemini's ``fileData``), each counted ``MEDIA_TOKENS`` by ``estimate_tokens``; a
    Budget holds the most input the model takes for a request with any (at its input price).  An image URL is held
    at ``IMAGE_TOKENS`` (what an image bills is bounded by its size rules), audio by URL as audio of an unknown
    length (``unknown_audio``)."""
    return _count_media(messages, _unbounded_uri)


def _count_media(messages: Iterable[Mapping[str, Any]], by_url: Callable[[Any], bool]) -> int:
    """The video items sent as bytes (``inline_data`` of a ``video/`` type) and the URLs (an ``image_url`` item's,
    a tool result's images) ``by_url`` counts."""
    count = 0
    for message in messages or ():
        items = message.get("content_items") if type(message) is dict or isinstance(message, Mapping) else None
        for item in items or ():
            if not (type(item) is dict or isinstance(item, Mapping)):
                continue
            kind = item.get("type")
            if kind == "inline_data":
                count += str(item.get("mime_type") or "").lower().startswith("video/")
            elif kind == "image_url":
                count += by_url(item.get("image_url"))
            elif kind == "tool_result":
                count += sum(by_url(image) for image in item.get("images") or ())
    return count


def _is_video_uri(url: Any) -> bool:
    return isinstance(url, str) and url[:11].lower().startswith("data:video/")


#: hosts whose links Gemini reads as video (``fileData`` with a YouTube URL)
_VIDEO_HOSTS = frozenset(["youtube.com", "www.youtube.com", "m.youtube.com", "youtu.be", "music.youtube.com"])


def _unbounded_uri(url: Any) -> bool:
    """A video sent as a ``data:`` URI, or a URL (not ``data:``) of a video, a PDF or a YouTube link."""
    if not isinstance(url, str):
        return False
    if url[:5].lower() == "data:":
        return _is_video_uri(url)
    kind = _url_type(url)
    if kind.startswith("video/") or kind == "application/pdf":
        return True
    from urllib.parse import urlsplit

    try:
        host = (urlsplit(url.strip()).hostname or "").rstrip(".")
    except ValueError:  # (a malformed URL: the wire refuses it)
        return False
    return host in _VIDEO_HOSTS


#: the Gemini API's host: its Files API names an upload ``https://generativelanguage.googleapis.com/v1beta/files/ID``
_FILES_HOST = "generativelanguage.googleapis.com"


def _uploaded(url: str) -> bool:
    """A Gemini Files API URI (no extension): sent as ``fileData`` that the API reads as the uploaded file's own
    type, of any length (the Files API is how a video or audio past the 20 MB inline limit is sent)."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url.strip())
        host = (parts.hostname or "").rstrip(".")
    except ValueError:  # (a malformed URL: the wire refuses it)
        return False
    return host == _FILES_HOST and "/files/" in parts.path


def _url_type(url: str) -> str:
    """The type the extension of a URL's path names ("" when it names none), lower case, as the wires read it."""
    import mimetypes

    from .media import pdf_url

    if pdf_url(url):  # (sent as a document)
        return "application/pdf"
    return (mimetypes.guess_type(url.split("#", 1)[0].split("?", 1)[0])[0] or "").lower()


#: the items that may hold audio: inline_data, and a data:audio/... URI in an image_url item or a tool result's images
_AUDIO_KINDS = frozenset(["inline_data", "image_url", "tool_result"])


def _audio_of(item: Mapping[str, Any]) -> Optional[List[Tuple[Any, Any]]]:
    """(the data, its type) of each piece of audio ``item`` holds: an ``inline_data`` item of an ``audio/`` type,
    an ``image_url`` item or a tool result's image holding a ``data:audio/...`` URI (sent as audio: Chat's
    input_audio, Gemini's inlineData), its bytes decoded; None when it holds none."""
    kind = item.get("type")
    if kind == "inline_data":
        mime_type = item.get("mime_type")
        return [(item.get("data"), mime_type)] if str(mime_type or "").lower().startswith("audio/") else None
    if kind == "image_url":
        audio = _uri_audio(item.get("image_url"))
        return None if audio is None else [audio]
    found = [audio for audio in map(_uri_audio, item.get("images") or ()) if audio is not None]
    return found or None


def _uri_audio(url: Any) -> Optional[Tuple[bytes, str]]:
    """(the bytes, the type) of a ``data:`` URI of an ``audio/`` type (b"" when its payload does not decode: a
    length not known), of a URL whose path's extension names an audio type (b"": its bytes are not here), of a
    Gemini Files API URI (b"", no type: the upload may be audio of any length, whose price is the dearest input's);
    None for any other URL."""
    if not isinstance(url, str):
        return None
    if not url[:11].lower().startswith("data:audio/"):
        if url[:5].lower() == "data:":
            return None
        kind = _url_type(url)
        if kind.startswith("audio/"):
            return b"", kind
        return (b"", "") if not kind and _uploaded(url) else None
    head, comma, payload = url.partition(",")
    params = head[5:].split(";")
    mime_type = ";".join(param for param in params if param.strip().lower() != "base64")
    if not comma:
        return b"", mime_type
    if len(params) == len(mime_type.split(";")):
        from urllib.parse import unquote_to_bytes

        return unquote_to_bytes(payload), mime_type
    import base64

    try:
        return base64.b64decode(payload, validate=True), mime_type
    except ValueError:  # (binascii.Error)
        return b"", mime_type


def _url_tokens(url: str) -> int:
    """An ``image_url`` item: a ``data:`` URI is measured (audio by its length, as ``inline_data`` audio is; anything
    else by its base64 payload's decoded size), a URL is not."""
    audio = _uri_audio(url)
    if audio is not None:
        return _seconds_tokens(audio_seconds(*audio))
    if url.startswith("data:"):
        head, _, payload = url.partition(",")
        mime_type = head[5:].split(";", 1)[0] or "application/octet-stream"
        size = len(payload) * 3 // 4 - payload[-2:].count("=") if ";base64" in head else len(payload)
        return media_tokens(mime_type, size)
    return IMAGE_TOKENS


def _item_tokens(item: Mapping[str, Any]) -> int:
    kind = item.get("type")
    if kind == "text":
        return text_tokens(item.get("text") or "")
    if kind == "thinking":
        return text_tokens(item.get("thinking") or "")
    if kind == "tool_call":
        return text_tokens(str(item.get("name") or "")) + _json_tokens(item.get("arguments") or {})
    if kind == "tool_result":
        return text_tokens(item.get("text") or "") + sum(
            _url_tokens(image) if isinstance(image, str) else IMAGE_TOKENS for image in item.get("images") or ())
    if kind == "image_url":
        url = item.get("image_url")  # (the data model's field: a URL or a data: URI)
        return _url_tokens(url) if isinstance(url, str) else IMAGE_TOKENS
    if kind == "inline_data":  # (not audio: estimate_parts reads an audio item's length)
        data = item.get("data")
        mime_type = str(item.get("mime_type") or "")
        size = len(data) if isinstance(data, (bytes, bytearray, str)) else None
        return media_tokens(mime_type, size)
    if kind == "inline_thinking":
        return MEDIA_TOKENS
    return text_tokens(json.dumps({k: v for k, v in item.items() if k != "fidelity"}, default=str))


def estimate_tokens(messages: Iterable[Mapping[str, Any]], config: Optional[Mapping[str, Any]] = None) -> int:
    """The input tokens of a request, estimated locally (the module doc has the rules)."""
    return estimate_parts(messages, config)[0]


def estimate_parts(messages: Iterable[Mapping[str, Any]],
                   config: Optional[Mapping[str, Any]] = None) -> Tuple[int, int, int]:
    """(``estimate_tokens``, the part of it that is audio: ``audio_tokens``, how many audio items are of a length
    their bytes do not say: ``unknown_audio``), in one pass over the messages: each audio item's bytes are read
    once (a Budget's hold needs all three; ten minutes of MP3 is some 23,000 frame headers)."""
    config = config or {}
    total = heard = unknown = 0
    for message in messages or ():
        total += MESSAGE_TOKENS
        items = message.get("content_items") if type(message) is dict or isinstance(message, Mapping) else None
        for item in items or ():
            if type(item) is dict or isinstance(item, Mapping):
                pieces = _audio_of(item) if item.get("type") in _AUDIO_KINDS else None
                if pieces is None:
                    total += _item_tokens(item)
                    continue
                for data, mime_type in pieces:  # (each read once)
                    seconds = audio_seconds(data, mime_type if isinstance(mime_type, str) else None)
                    tokens = _seconds_tokens(seconds)
                    heard += tokens
                    unknown += seconds is None
                    total += tokens
                if item["type"] == "tool_result":  # (its text, and its images that are no audio)
                    total += _item_tokens(dict(item, images=[image for image in item.get("images") or ()
                                                             if _uri_audio(image) is None]))
    system = config.get("system_prompt")
    if isinstance(system, str):
        total += MESSAGE_TOKENS + text_tokens(system)
    for tool in config.get("tools") or ():
        total += TOOL_TOKENS + _json_tokens(tool)
    schema = config.get("response_format")
    if isinstance(schema, Mapping) and schema.get("schema") is not None:
        total += _json_tokens(schema["schema"])
    return total, heard, unknown


def estimate_with_output(messages: Iterable[Mapping[str, Any]], config: Optional[Mapping[str, Any]] = None) -> int:
    """``estimate_tokens`` plus the output limit ``config["max_tokens"]`` (when set): the tokens a request may
    take from a tokens-per-minute allowance."""
    return estimate_tokens(messages, config) + output_bound(config)


def output_bound(config: Optional[Mapping[str, Any]]) -> int:
    """``config["max_tokens"]`` when it is set (a positive int), else 0: what ``estimate_with_output`` adds."""
    max_tokens = (config or {}).get("max_tokens")
    return max_tokens if isinstance(max_tokens, int) and not isinstance(max_tokens, bool) and max_tokens > 0 else 0


def audio_tokens(messages: Iterable[Mapping[str, Any]]) -> int:
    """The part of ``estimate_tokens`` that is audio: the request's audio items (``inline_data`` of an
    ``audio/`` type, an image_url item or a tool result's image holding a ``data:audio/...`` URI), what a Budget
    holds at the model's audio input price."""
    return estimate_parts(messages)[1]
