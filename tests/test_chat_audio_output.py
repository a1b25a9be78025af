"""A Chat Completions answer that speaks (``modalities: ["text", "audio"]`` in ``extra_body``): the stream carries
``delta.audio`` (``id`` and ``transcript`` pieces, then ``data`` pieces of base64 pcm16, and ``expires_at``),
``content`` null.  It was an EmptyResponseError after it was paid for; it is the transcript as text (marked
``audio_transcript``) and the audio as one inline_data item carrying the audio's id and expiry, priced at the audio
output price on every path, and a history sends it back as OpenAI documents: ``audio: {"id": ...}`` on the
assistant message while the id lives, the transcript as its text once it expired."""

import base64
import json
import time

import pytest

from money_clock import fix_clock
from price_paths import prices_on_every_path
from server_support import Route, Upstream

from agenthub import AutoLLMClient, ResponseCache, cost
from agenthub.errors import StreamProtocolError
from agenthub.stores import MemoryStore
from agenthub.stream import usage_extras

MODEL = "gpt-audio"
MESSAGES = [{"role": "user", "content_items": [{"type": "text", "text": "Say hi"}]}]
CONFIG = {"max_tokens": 200, "extra_body": {"modalities": ["text", "audio"],
                                            "audio": {"voice": "alloy", "format": "pcm16"}}}
PCM = [b"\x08\x00\x08\x00\x09\x00", b"\x0a\x00\x0f\x00\x11\x00\x11\x00"]
AUDIO_ID = "audio_672960c3a3e48190aed70377a7d6c941"
EXPIRES = 4102444800  # 2100-01-01: still live when the test runs
USAGE = {"prompt_tokens": 20, "completion_tokens": 60, "total_tokens": 80,
         "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
         "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 50, "text_tokens": 10}}
#: gpt-audio: text in 2.5, text out 10, audio out 64 USD per 1M
HAND = (20 * 2.5 + 10 * 10 + 50 * 64) / 1e6


def _stream(expires=EXPIRES, data=None):
    head = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1730764995,
            "model": "gpt-audio-2025-08-28"}
    pieces = data if data is not None else [base64.b64encode(piece).decode() for piece in PCM]
    deltas = [{"role": "assistant", "refusal": None},
              {"content": None, "audio": {"id": AUDIO_ID, "transcript": "Hi"}},
              {"audio": {"transcript": " there!"}},
              {"role": "assistant", "content": None, "refusal": None, "audio": {"id": AUDIO_ID, "data": pieces[0]}}]
    deltas += [{"audio": {"data": piece}} for piece in pieces[1:]]
    deltas.append({"audio": {"expires_at": expires, "id": AUDIO_ID}})
    chunks = [dict(head, choices=[{"index": 0, "delta": delta, "finish_reason": None}]) for delta in deltas]
    chunks.append(dict(head, choices=[{"index": 0, "delta": {}, "finish_reason": "stop"}]))
    chunks.append(dict(head, choices=[], usage=USAGE))
    return b"".join(b"data: " + json.dumps(chunk).encode() + b"\n\n" for chunk in chunks) + b"data: [DONE]\n\n"


PCM16_TYPE = "audio/L16;codec=pcm;rate=24000"
SPOKEN = [{"type": "text", "text": "Hi there!", "fidelity": {"audio_transcript": True}},
          {"type": "inline_data", "data": b"".join(PCM), "mime_type": "audio/L16;codec=pcm;rate=24000",
           "fidelity": {"audio_id": AUDIO_ID, "expires_at": EXPIRES}}]


def _client(up, route="up", **kwargs):
    return AutoLLMClient(MODEL, client_type="openai-chat", base_url=up.url + "/" + route + "/v1",
                         api_key="sk-test-0123456789", max_retries=0, **kwargs)


def test_a_spoken_answer_is_its_transcript_and_its_audio_not_an_empty_response():
    with Upstream() as up:
        up.routes["up"] = Route(_stream())
        answer = _client(up).response(MESSAGES, CONFIG)
        events = list(_client(up).streaming_response(MESSAGES, CONFIG))
    assert answer["content_items"] == SPOKEN
    assert usage_extras(answer["usage_metadata"]) == {"output_audio_tokens": 50}
    assert cost(MODEL, answer["usage_metadata"]) == pytest.approx(HAND, rel=1e-12)
    assert [item for event in events for item in event["content_items"] if item["type"] == "inline_data"] == \
        SPOKEN[1:]  # the audio comes once, whole, before the stop event


def test_a_whole_completion_that_speaks_is_the_same_answer():
    """A server that ignored stream answers one chat.completion: ``message.audio`` holds it all; audio that is not
    pcm16 is named by its bytes (a WAV is audio/wav)."""
    wav = b"RIFF\x24\x00\x00\x00WAVEfmt " + b"\x00" * 28
    document = {"id": "chatcmpl-2", "object": "chat.completion", "created": 1730764995, "model": "gpt-audio",
                "choices": [{"index": 0, "finish_reason": "stop", "message": {
                    "role": "assistant", "content": None, "refusal": None,
                    "audio": {"id": AUDIO_ID, "data": base64.b64encode(wav).decode(), "expires_at": EXPIRES,
                              "transcript": "Hi there!"}}}], "usage": USAGE}
    with Upstream() as up:
        up.routes["up"] = Route(json.dumps(document).encode(), headers={"Content-Type": "application/json"})
        answer = _client(up).response(MESSAGES, CONFIG)
    assert answer["content_items"] == [SPOKEN[0], dict(SPOKEN[1], data=wav, mime_type="audio/wav")]


def test_audio_data_that_is_not_base64_is_a_protocol_error():
    with Upstream() as up:
        up.routes["up"] = Route(_stream(data=["CAAIAAkA", "not base64!"]))
        with pytest.raises(StreamProtocolError) as caught:
            _client(up).response(MESSAGES, CONFIG)
    assert str(caught.value) == "openai-chat: the answer's audio data is not base64 (11 characters)"


def test_a_history_sends_the_audio_back_by_its_id_and_the_transcript_once_it_expired():
    with Upstream() as up:
        up.routes["up"] = [Route(_stream()), Route(_stream()), Route(_stream(expires=int(time.time()) - 60)),
                           Route(_stream())]
        client = _client(up)
        client.response_stateful(MESSAGES[0], CONFIG)
        client.response_stateful({"role": "user", "content_items": [{"type": "text", "text": "Again"}]}, CONFIG)
        expired = _client(up)
        expired.response_stateful(MESSAGES[0], CONFIG)
        expired.response_stateful({"role": "user", "content_items": [{"type": "text", "text": "Again"}]}, CONFIG)
        sent = [request["body"]["messages"] for request in up.requests]
    assert sent[1][1] == {"role": "assistant", "audio": {"id": AUDIO_ID}}  # as OpenAI's audio guide sends it
    assert sent[3][1] == {"role": "assistant", "content": "Hi there!"}  # the id no longer lives: the transcript


def test_one_spoken_turn_costs_one_price_on_every_path(tmp_path, monkeypatch):
    fix_clock(monkeypatch, "12:00")
    with Upstream() as up:
        up.routes["up"] = Route(_stream())
        kwargs = {"client_type": "openai-chat", "base_url": up.url + "/up/v1", "api_key": "sk-test-0123456789",
                  "max_retries": 0}
        paths = prices_on_every_path(MODEL, kwargs, CONFIG, MESSAGES, tmp_path)

        def client(**extra):
            return AutoLLMClient(MODEL, **dict(kwargs, **extra))

        cache = ResponseCache(MemoryStore())  # a hit is free, and hands back the answer and its usage as they were
        client(cache=cache).response(MESSAGES, CONFIG)
        hit = client(cache=cache)
        answer = hit.response(MESSAGES, CONFIG)
        assert hit.last_route["cache"] == "hit" and answer["content_items"] == SPOKEN
        paths["cache hit's usage"] = cost(MODEL, answer["usage_metadata"])
        store = MemoryStore()  # a journaled run replayed: its turn priced as the live one, its audio the same bytes
        client().run(MESSAGES, CONFIG, tools=[], journal=store, run_id="r-1").result()
        replayed = client().run(MESSAGES, CONFIG, tools=[], journal=store, run_id="r-1").result()
        assert replayed.replayed_turns == 1 and replayed.messages[-1]["content_items"] == SPOKEN
        paths["journal replay"] = replayed.cost_usd
    assert {path: round(price, 12) for path, price in paths.items()} == {path: round(HAND, 12) for path in paths}


def test_a_spoken_answer_in_the_history_is_held_by_its_length_not_the_whole_window():
    """A spoken answer's audio (raw pcm16, no header to read its length from) stayed in the history as an
    audio item of unknown length: each later turn held the model's whole window at the audio input price
    (128,000 tokens of gpt-audio: 4.10 USD), so a conversation under a 1 USD Budget was refused at its second
    turn.  Raw PCM's length is its size over the rate its type names (24 kHz, 16-bit, mono)."""
    from agenthub import Budget
    from agenthub.estimate import audio_seconds, audio_tokens, unknown_audio

    pcm = [{"role": "assistant", "content_items": [{"type": "inline_data", "mime_type": PCM16_TYPE,
                                                    "data": b"\x00" * 48000 * 120}]}]  # 120 seconds
    assert unknown_audio(pcm) == 0 and audio_tokens(pcm) == 120 * 32
    assert audio_seconds(b"\x00" * 48000 * 120, "audio/L16;rate=24000;channels=2") == 60.0
    assert audio_seconds(b"\x00" * 48000, "audio/pcm;rate=16000") == 1.5  # (16-bit unless it says)
    assert audio_seconds(b"\x00" * 48000, "audio/L16") is None  # (no rate: no length)
    with Upstream() as up:
        up.routes["up"] = [Route(_stream()), Route(_stream())]
        budget = Budget(1.0)
        client = _client(up, budget=budget)
        client.response_stateful(MESSAGES[0], CONFIG)
        client.response_stateful({"role": "user", "content_items": [{"type": "text", "text": "Again"}]}, CONFIG)
    assert len(up.requests) == 2 and budget.spent_usd == pytest.approx(2 * HAND, rel=1e-12)
