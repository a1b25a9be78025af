"""Answers beyond chat text a server may send wrong (embeddings of both dialects, output media, model lists),
and inputs past one request's limit."""

import json

import pytest

from agenthub.errors import ConfigError, StreamProtocolError
from agenthub.providers import gemini_embeddings, openai_embeddings
from agenthub.providers._common import Endpoint
from agenthub.validate import check_config

responses = pytest.importorskip("responses")

OPENAI_URL = "https://emb.example.test/v1/embeddings"
GEMINI_BASE = "https://gem.example.test"


def openai_vectors(payload):
    return [part["embedding"] for part in openai_embeddings.parse_response(payload, "openai-chat")
            if isinstance(part, dict)]


def gemini_vectors(payload):
    return [part["embedding"] for part in gemini_embeddings.parse_response(payload, "gemini")
            if isinstance(part, dict)]


def rows(*vectors, indexes=None):
    indexes = range(len(vectors)) if indexes is None else indexes
    return {"data": [dict({"embedding": v}, **({} if i is None else {"index": i})) for v, i in zip(vectors, indexes)]}


def test_openai_indexes_must_be_zero_to_n_once_each():
    assert openai_vectors(rows([1.0], [2.0], indexes=[1, 0])) == [[2.0], [1.0]]
    assert openai_vectors(rows([1.0], [2.0], indexes=[None, None])) == [[1.0], [2.0]]
    for indexes in ([0, 0], [5, 7], [1, None], [True, 0], [0, 2], ["0", "1"]):
        with pytest.raises(StreamProtocolError) as info:
            openai_vectors(rows([1.0], [2.0], indexes=indexes))
        assert str(info.value) == ("the openai-chat embeddings answer numbers its 2 vectors other than 0..1 once each "
                                   "(got the indexes {})".format(indexes))
    with pytest.raises(StreamProtocolError) as info:
        openai_vectors({"data": [{"index": 0, "embedding": [1.0]}, "junk"]})
    assert str(info.value) == "the openai-chat embeddings answer holds an entry that is not a JSON object"


BAD_VECTORS = [
    ([None], "holds a vector with a NoneType in it (numbers only)"),
    (["0.5"], "holds a vector with a str in it (numbers only)"),
    ([[0.5]], "holds a vector with a list in it (numbers only)"),
    ([True], "holds a vector with a bool in it (numbers only)"),
    ([float("nan")], "holds a vector with a value that is no finite number (NaN, Infinity or too large)"),
    ([0.5, float("-inf")], "holds a vector with a value that is no finite number (NaN, Infinity or too large)"),
    ([10 ** 400], "holds a vector with a value that is no finite number (NaN, Infinity or too large)"),
    ([], "holds a vector that is not a non-empty list of numbers"),
    (None, "holds a vector that is not a non-empty list of numbers"),
]


@pytest.mark.parametrize("vector,why", BAD_VECTORS)
def test_vectors_that_are_no_vectors_are_refused_by_both_dialects(vector, why):
    with pytest.raises(StreamProtocolError) as info:
        openai_vectors(rows([0.5], vector))
    assert str(info.value) == "openai-chat: the embeddings answer " + why
    with pytest.raises(StreamProtocolError) as info:
        gemini_vectors({"embeddings": [{"values": [0.5]}, {"values": vector}]})
    assert str(info.value) == "gemini: the embeddings answer " + why


def test_integers_become_floats_and_ragged_vectors_are_refused():
    assert openai_vectors(rows([1, 0], [0.5, -2])) == [[1.0, 0.0], [0.5, -2.0]]
    assert [type(x) for v in openai_vectors(rows([1, 0])) for x in v] == [float, float]
    assert gemini_vectors({"embeddings": [{"values": [1, 0.5]}]}) == [[1.0, 0.5]]
    for parse, payload, client in ((openai_vectors, rows([0.5, 1.0], [2.0]), "openai-chat"),
                                   (gemini_vectors, {"embeddings": [{"values": [0.5, 1.0]}, {"values": [2.0]}]},
                                    "gemini")):
        with pytest.raises(StreamProtocolError) as info:
            parse(payload)
        assert str(info.value) == "{}: the embeddings answer holds vectors of different lengths (2 and 1)".format(
            client)
    for bad in ({"embeddings": "xy"}, {"embeddings": None}):
        with pytest.raises(StreamProtocolError) as info:
            gemini_vectors(bad)
        assert str(info.value) == "gemini: the embedding answer's embeddings are not a list"
    with pytest.raises(StreamProtocolError) as info:
        gemini_vectors({"embeddings": [{"values": [1.0]}, "x"]})
    assert str(info.value) == "gemini: the embeddings answer holds a vector that is not a non-empty list of numbers"


def user(text):
    return {"role": "user", "content_items": [{"type": "text", "text": text}]}


def test_build_request_refuses_more_inputs_than_one_request_takes():
    openai = Endpoint("openai-chat", "https://api.openai.com/v1", "k", None, {"embeddings": True})
    assert len(openai_embeddings.build_request(openai, "m", [user("a")] * 2048, check_config(None)).body["input"]) \
        == 2048
    with pytest.raises(ConfigError) as info:
        openai_embeddings.build_request(openai, "m", [user("a")] * 2049, check_config(None))
    assert str(info.value) == ("openai-chat: 2049 inputs to embed in one request; it takes at most 2048 "
                               "(AutoLLMClient.embed sends more as several requests)")
    assert openai_embeddings.PROTOCOL.max_inputs == 2048 and gemini_embeddings.PROTOCOL.max_inputs == 100
    # a Gemini plan of more is not refused: a batch job sends each of its messages as a request of its own
    gemini = Endpoint("gemini", GEMINI_BASE, "k", None, {"embeddings": True})
    assert len(gemini_embeddings.build_request(gemini, "m", [user("a")] * 101, check_config(None)).body["requests"]) \
        == 101


def test_embed_splits_openai_inputs_past_2048_in_order():
    from agenthub import AutoLLMClient

    def answer(request):
        inputs = json.loads(request.body)["input"]
        data = [{"index": i, "embedding": [float(text)]} for i, text in reversed(list(enumerate(inputs)))]
        return 200, {}, json.dumps({"data": data, "usage": {"prompt_tokens": len(inputs)}})

    texts = [str(i) for i in range(2050)]
    with responses.RequestsMock() as mock:
        mock.add_callback(responses.POST, OPENAI_URL, callback=answer, content_type="application/json")
        client = AutoLLMClient("text-embedding-3-small", api_key="k", base_url="https://emb.example.test/v1")
        vectors = client.embed(texts)
        assert [len(json.loads(call.request.body)["input"]) for call in mock.calls] == [2048, 2]
    assert vectors == [[float(i)] for i in range(2050)]


def test_embed_splits_gemini_inputs_past_100_in_order():
    from agenthub import AutoLLMClient

    def answer(request):
        parts = [r["content"]["parts"][0]["text"] for r in json.loads(request.body)["requests"]]
        return 200, {}, json.dumps({"embeddings": [{"values": [float(t)]} for t in parts]})

    texts = [str(i) for i in range(201)]
    with responses.RequestsMock() as mock:
        mock.add_callback(responses.POST, GEMINI_BASE + "/v1beta/models/gemini-embedding-001:batchEmbedContents",
                          callback=answer, content_type="application/json")
        mock.add(responses.POST, GEMINI_BASE + "/v1beta/models/gemini-embedding-001:embedContent",
                 json={"embedding": {"values": [200.0]}})
        client = AutoLLMClient("gemini-embedding-001", api_key="k", base_url=GEMINI_BASE)
        vectors = client.embed(texts)
        assert [len(json.loads(call.request.body).get("requests", [0])) for call in mock.calls] == [100, 100, 1]
    assert vectors == [[float(i)] for i in range(201)]


def test_embed_refuses_vectors_of_other_dimensions_than_asked():
    from agenthub import AutoLLMClient

    with responses.RequestsMock() as mock:
        mock.add(responses.POST, OPENAI_URL, json=rows([0.5, 0.25, 1.0], [1.0, 0.0, 0.5]))
        client = AutoLLMClient("text-embedding-3-small", api_key="k", base_url="https://emb.example.test/v1")
        with pytest.raises(StreamProtocolError) as info:
            client.embed(["a", "b"], {"embedding_config": {"dimensions": 2}})
        assert str(info.value) == ("openai-chat: embedding_config asked for 2 dimensions and a vector of 3 came back "
                                   "(the server ignored it)")
        assert client.embed(["a", "b"], {"embedding_config": {"dimensions": 3}}) == [[0.5, 0.25, 1.0],
                                                                                     [1.0, 0.0, 0.5]]


@pytest.mark.parametrize("last_id", [5, {"x": 1}, ["m1"], True])
def test_list_models_last_id_that_is_no_id_is_a_typed_error(last_id):
    from agenthub import AutoLLMClient

    with responses.RequestsMock() as mock:
        mock.add(responses.GET, "https://x.example.test/v1/models",
                 json={"data": [{"id": "m1"}], "has_more": True, "last_id": last_id})
        client = AutoLLMClient("any", client_type="openai-chat", base_url="https://x.example.test/v1", api_key="k")
        with pytest.raises(StreamProtocolError) as info:
            client.list_models()
        assert str(info.value) == "openai-chat: the model list's last_id is not an id (got a {})".format(
            type(last_id).__name__)
        assert len(mock.calls) == 1


def test_list_models_empty_last_id_pages_after_the_last_id():
    from agenthub.providers._common import parse_data_list

    assert parse_data_list({"data": [{"id": "a"}, {"id": "b"}], "has_more": True, "last_id": ""}, "c") == (["a", "b"],
                                                                                                        "b")
    assert parse_data_list({"data": [{"id": "a"}], "has_more": True, "last_id": None}, "c") == (["a"], "a")
    assert parse_data_list({"data": [{"id": "a"}], "has_more": False, "last_id": 5}, "c") == (["a"], None)


@pytest.mark.parametrize("mime_type", ["audio/L16;rate=99999999999", "audio/L16;channels=70000", "audio/pcm;bits=800",
                                       "audio/L16;rate=4294967295", "audio/L32;rate=1073741824"])
def test_to_wav_of_a_format_wav_cannot_hold_is_a_config_error(mime_type):
    from agenthub.media import audio_format, to_wav

    for call in (lambda: to_wav({"type": "inline_data", "mime_type": mime_type, "data": b"\0" * 64}),
                 lambda: audio_format(mime_type)):
        with pytest.raises(ConfigError) as info:
            call()
        assert str(info.value) == ("{!r} cannot be written to WAV (at most 32 bits per sample, 65535 channels and "
                                   "4294967295 bytes a second)".format(mime_type))
    assert audio_format("audio/L32;rate=1073741823") == (1073741823, 1, 4)
    assert audio_format("audio/L8;channels=65535;rate=65537") == (65537, 65535, 1)


def _gemini_image(data, mime="image/png"):
    from agenthub.providers import gemini
    from agenthub.stream import collect, drive

    doc = {"candidates": [{"content": {"role": "model", "parts": [{"inlineData": {"data": data, "mimeType": mime}}]},
                           "finishReason": "STOP"}]}
    return collect(list(drive(gemini.PROTOCOL.parse_document(doc, "gemini"), "gemini")))["content_items"]


def _interactions_image(data, mime="image/png"):
    from agenthub.providers import gemini_interactions
    from agenthub.stream import collect, drive

    doc = {"id": "i1", "status": "completed",
           "steps": [{"type": "model_output", "content": [{"type": "image", "data": data, "mime_type": mime}]}]}
    return collect(list(drive(gemini_interactions.parse_document(doc, "gemini-interactions"),
                              "gemini-interactions")))["content_items"]


def _responses_image(data):
    from agenthub.providers import openai_responses
    from agenthub.stream import collect, drive

    call = {"id": "ig_1", "type": "image_generation_call", "status": "completed", "output_format": "png",
            "result": data}
    doc = {"id": "resp_1", "object": "response", "status": "completed", "output": [call],
           "usage": {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2}}
    return collect(list(drive(openai_responses.PROTOCOL.parse_document(doc, "openai-responses"),
                              "openai-responses")))["content_items"]


@pytest.mark.parametrize("read,client,what", [(_gemini_image, "gemini", "inlineData"),
                                              (_interactions_image, "gemini-interactions", "media"),
                                              (_responses_image, "openai-responses", "image")])
def test_output_media_base64_is_decoded_whole_or_refused(read, client, what):
    assert read("aGk=")[0]["data"] == b"hi"
    assert read("aGk")[0]["data"] == b"hi"  # unpadded, as protobuf JSON allows
    assert read("a-_b")[0]["data"] == b"k\xef\xdb"  # URL-safe
    assert read("aG\nk=")[0]["data"] == b"hi"
    for bad in ("ab!!cd", "aGk=aGk=", "a"):  # characters dropped before: the image came out mangled
        with pytest.raises(StreamProtocolError) as info:
            read(bad)
        assert str(info.value) == "{}: the answer's {} data is not base64 ({} characters)".format(client, what,
                                                                                               len(bad))


def test_output_media_mime_type_that_is_no_string_is_not_handed_on():
    assert _gemini_image("aGk=", 5) == [{"type": "inline_data", "data": b"hi",
                                         "mime_type": "application/octet-stream"}]
    assert _interactions_image("aGk=", ["x"])[0] == {"type": "inline_data", "data": b"hi",
                                                     "mime_type": "application/octet-stream"}
    with pytest.raises(StreamProtocolError) as info:
        _gemini_image(5)
    assert str(info.value) == "gemini: the answer's inlineData data is not a base64 string (got int)"


def test_batch_embedding_row_with_fewer_vectors_than_inputs_is_an_error_row_billed_as_sent():
    from agenthub.jobs.batch import answer_row
    from agenthub.jobs.jobfile import JobRow

    row = JobRow(id="r1", model="text-embedding-3-small", messages=[user("a"), user("b"), user("c")])
    payload = {"data": [{"index": 0, "embedding": [0.5]}, {"index": 1, "embedding": [0.25]}],
               "usage": {"prompt_tokens": 3}}
    out = answer_row(row, openai_embeddings.PROTOCOL, "openai-chat", payload, "openai")
    assert out["message"] is None and out["finish_reason"] is None
    assert out["error"]["type"] == "StreamProtocolError"
    assert out["error"]["message"] == "openai-chat: 3 inputs were sent for embedding and 2 vectors came back"
    assert out["usage_metadata"]["prompt_tokens"] == 3 and out["cost_usd"] == 3 * 0.01 / 1e6
    whole = answer_row(JobRow(id="r2", model="text-embedding-3-small", messages=[user("a"), user("b")]),
                       openai_embeddings.PROTOCOL, "openai-chat", payload, "openai")
    assert whole["error"] is None and [i["embedding"] for i in whole["message"]["content_items"]] == [[0.5], [0.25]]


def test_save_inline_data_takes_a_bytes_path_and_refuses_a_mime_type_that_is_no_string(tmp_path):
    import os

    from agenthub.media import save_inline_data

    image = os.path.join(str(tmp_path), "a")
    assert save_inline_data({"type": "inline_data", "data": b"x", "mime_type": "image/png"}, image.encode()) \
        == image + ".png"
    with open(image + ".png", "rb") as handle:
        assert handle.read() == b"x"
    speech = os.path.join(str(tmp_path), "s")
    assert save_inline_data({"type": "inline_data", "data": b"\0\0", "mime_type": "audio/L16;rate=24000"},
                            speech.encode()) == speech + ".wav"
    with pytest.raises(ConfigError) as info:
        save_inline_data({"type": "inline_data", "data": b"x", "mime_type": 5}, image)
    assert str(info.value) == "an inline_data item's mime_type must be a str (got int)"
    with pytest.raises(ConfigError) as info:
        save_inline_data({"type": "inline_data", "data": b"x", "mime_type": "image/png"}, 5)
    assert str(info.value) == "path must be a str or os.PathLike (got int)"
