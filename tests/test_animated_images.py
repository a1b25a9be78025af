"""An animated image (GIF, WebP, APNG) sent where the wire takes still images.

Facts pinned here:
- OpenAI's image input is "PNG, JPEG, WEBP, non-animated GIF" (its "Image input requirements"): at the hosts that
  run OpenAI's models (quirk ``image_subset``: OpenAI, Azure), over Chat Completions and the Responses API alike, an
  animated image is an UnsupportedParameterError before sending, as an image type they do not take is.
- The other wires take GIF / WebP / PNG with no word on animation (Claude's JPEG, PNG, GIF, WebP; Bedrock's
  gif/jpeg/png/webp; Gemini's PNG, JPEG, WebP; the Interactions API's enum of eight), and vision models read one
  picture ("if LLM use gif as input, it will only take the first frame": aws-samples/dify-aws-tool#133; Google's
  Vision API: "Animated GIF (first frame only)"): the image goes as given, with a warning (logger ``agenthub``)
  that the model may see one frame of it only.
- Only the image's head is read (``_common.animated``: 64 KiB at most): a GIF's looping extension (NETSCAPE2.0) or
  second frame, the animation flag of a WebP's VP8X header, a PNG's ``acTL`` chunk before its ``IDAT`` (APNG).
"""

import base64
import logging
import struct
import zlib

import pytest

from agenthub import AutoLLMClient, UnsupportedParameterError
from agenthub.providers._common import _ANIMATION_HEAD, animated


def _frame():
    """A GIF image descriptor (1x1, no local colour table), LZW code size 2, one data sub-block, its terminator."""
    return b"\x2c\x00\x00\x00\x00\x01\x00\x01\x00\x00" + b"\x02" + b"\x02\x4c\x01" + b"\x00"


_SCREEN = b"GIF89a\x01\x00\x01\x00\x80\x00\x00" + b"\x00\x00\x00\xff\xff\xff"  # (a global colour table of 2)
_LOOP = b"\x21\xff\x0bNETSCAPE2.0\x03\x01\x00\x00\x00"
_DELAY = b"\x21\xf9\x04\x04\x0a\x00\x00\x00"  # (a graphic control extension: 1/10 s)
STILL_GIF = _SCREEN + _frame() + b"\x3b"
LOOPING_GIF = _SCREEN + _LOOP + _DELAY + _frame() + _DELAY + _frame() + b"\x3b"
TWO_FRAME_GIF = _SCREEN + _DELAY + _frame() + _DELAY + _frame() + b"\x3b"  # (no loop extension: plays once)


def _webp(flags):
    chunk = b"VP8X" + struct.pack("<I", 10) + bytes([flags, 0, 0, 0]) + b"\x00\x00\x00\x00\x00\x00"
    return b"RIFF" + struct.pack("<I", 4 + len(chunk)) + b"WEBP" + chunk


def _png_chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def _png(*extra):
    header = _png_chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0))
    return (b"\x89PNG\r\n\x1a\n" + header + b"".join(extra) + _png_chunk(b"IDAT", zlib.compress(b"\x00\x00"))
            + _png_chunk(b"IEND", b""))


ANIMATED_WEBP = _webp(0x02)
STILL_WEBP = _webp(0x10)  # (an alpha flag, no animation)
APNG = _png(_png_chunk(b"acTL", struct.pack(">II", 2, 0)))
STILL_PNG = _png(_png_chunk(b"tEXt", b"Comment\x00acTL is only a word here"))


@pytest.mark.parametrize("data,expected", [
    (STILL_GIF, False), (LOOPING_GIF, True), (TWO_FRAME_GIF, True), (ANIMATED_WEBP, True), (STILL_WEBP, False),
    (APNG, True), (STILL_PNG, False), (b"GIF89a", False), (b"\x89PNG\r\n\x1a\n\x00\x00", False), (b"", False),
    (_SCREEN + b"\x21\xfe" + b"\xff" + b"x" * 255 + b"\x00" + _frame() + _frame(), True),  # (past a comment)
    (_SCREEN + _frame()[:-1] + (b"\xff" + b"x" * 255) * (_ANIMATION_HEAD // 256 + 1) + b"\x00" + _frame(), False),
])
def test_animation_is_read_from_the_head_alone(data, expected):
    """The last case: a first frame longer than the head read, its second frame past it, is taken as still."""
    assert animated(data) is expected
    assert animated(memoryview(data)) is expected


def _uri(mime, data):
    return "data:{};base64,{}".format(mime, base64.b64encode(data).decode("ascii"))


def _messages(how, mime, data):
    ask = {"type": "text", "text": "What happens in it?"}
    if how == "inline_data":
        return [{"role": "user", "content_items": [ask, {"type": "inline_data", "data": data, "mime_type": mime}]}]
    return [{"role": "user", "content_items": [ask, {"type": "image_url", "image_url": _uri(mime, data)}]}]


OPENAI_HOSTS = {"openai-chat": "Chat Completions", "openai-responses": "the Responses API"}


@pytest.mark.parametrize("client_type", sorted(OPENAI_HOSTS))
@pytest.mark.parametrize("how", ["inline_data", "a data URI"])
@pytest.mark.parametrize("mime,data", [("image/gif", LOOPING_GIF), ("image/gif", TWO_FRAME_GIF),
                                       ("image/webp", ANIMATED_WEBP), ("image/png", APNG)])
def test_an_animated_image_is_refused_before_sending_at_openais_hosts(client_type, how, mime, data):
    client = AutoLLMClient("gpt-5.5", client_type=client_type, base_url="https://api.openai.com/v1", api_key="k")
    with pytest.raises(UnsupportedParameterError) as caught:
        client.plan(_messages(how, mime, data))
    assert str(caught.value) == ("{}: inline_data is an animated image ({}): {} takes still images only (send a frame, "
                                 "or the frames one image each)".format(client_type, mime, OPENAI_HOSTS[client_type]))
    for still_mime, still in (("image/gif", STILL_GIF), ("image/webp", STILL_WEBP), ("image/png", STILL_PNG)):
        client.plan(_messages(how, still_mime, still))  # (a still image of each type goes)


#: (client_type, model, base_url) -> the wire's name in the warning, and the animated image sent there
OTHER_HOSTS = {
    ("openai-chat", "m", "http://127.0.0.1:9/v1"): ("Chat Completions", "image/gif", LOOPING_GIF),
    ("openai-responses", "m", "http://127.0.0.1:9/v1"): ("the Responses API", "image/png", APNG),
    ("anthropic", "claude-sonnet-4-6", "https://api.anthropic.com"):
        ("the Anthropic Messages API", "image/gif", TWO_FRAME_GIF),
    ("bedrock", "us.anthropic.claude-sonnet-4-5-20250929-v1:0", "https://bedrock-runtime.us-east-1.amazonaws.com"):
        ("Bedrock Converse", "image/webp", ANIMATED_WEBP),
    ("gemini", "gemini-3.5-flash", "https://generativelanguage.googleapis.com"):
        ("the Gemini API", "image/webp", ANIMATED_WEBP),
    ("gemini-interactions", "gemini-3.5-flash", "https://generativelanguage.googleapis.com"):
        ("the Interactions API", "image/gif", LOOPING_GIF),
}


@pytest.mark.parametrize("host", sorted(OTHER_HOSTS), ids=lambda host: host[0] + "@" + host[2])
@pytest.mark.parametrize("how", ["inline_data", "a data URI"])
def test_elsewhere_an_animated_image_goes_as_given_with_a_warning(host, how, caplog):
    client_type, model, base_url = host
    wire, mime, data = OTHER_HOSTS[host]
    client = AutoLLMClient(model, client_type=client_type, base_url=base_url,
                           api_key="ABSKbedrock-api-key-0003" if client_type == "bedrock" else "k")
    with caplog.at_level(logging.WARNING, logger="agenthub"):
        body = client.plan(_messages(how, mime, data)).body
    assert [record.getMessage() for record in caplog.records] == [
        "{}: an animated image ({}) is sent to {}, which reads still images: the model may see one frame of it only "
        "(send the frames one image each to show the motion)".format(client_type, mime, wire)]
    assert base64.b64encode(data).decode("ascii") in str(body)  # (the image itself, byte for byte)
    caplog.clear()
    still_mime, still = ("image/webp", STILL_WEBP) if mime == "image/webp" else ("image/png", STILL_PNG)
    with caplog.at_level(logging.WARNING, logger="agenthub"):
        client.plan(_messages(how, still_mime, still))
    assert caplog.records == []
