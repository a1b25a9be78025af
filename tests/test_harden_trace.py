"""Issue 12 item 4: trace writes under concurrency, trace_ids checked up front, the failure policy, file modes."""

import json
import logging
import os
import stat
import threading

import pytest

from agenthub import AutoLLMClient, ConfigError
from agenthub import tracer
from agenthub.testing import Cassette, Interaction, replay_session
from agenthub.tracer import load_trace, save_trace, trace_paths

HERE = os.path.dirname(os.path.abspath(__file__))
RECORDINGS = os.path.join(os.path.dirname(HERE), "agenthub", "recordings", "openai_chat")
KEY = "sk-trace-secret-987654321"
USER = {"role": "user", "content_items": [{"type": "text", "text": "Weather?"}]}
ANSWER = "It is 18 °C and sunny in Paris — a good day for a walk."


def _client(count=1):
    with open(os.path.join(RECORDINGS, "weather_answer.sse"), "rb") as handle:
        body = handle.read()
    cassette = Cassette(interactions=[Interaction(None, body=body) for _ in range(count)])
    return AutoLLMClient("demo-model", api_key=KEY, base_url="https://llm.example.com/v1", client_type="openai-chat",
                         session=replay_session(cassette))


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTHUB_CACHE_DIR", str(tmp_path / "cache"))
    return str(tmp_path / "cache")


def test_sixteen_threads_writing_one_trace_id_all_succeed(tmp_path):
    root = str(tmp_path)
    history = [{"role": "user", "content_items": [{"type": "text", "text": "x" * 20000}]}]
    errors = []
    start = threading.Barrier(16)

    def work(n):
        start.wait()
        for _ in range(10):
            try:
                save_trace("shared/run", "m{}".format(n), history, {}, root=root)
            except Exception as exc:  # the old fixed "<name>.tmp" raised FileNotFoundError here
                errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    document = load_trace(os.path.join(root, "shared", "run.json"))
    assert document["history"] == history and document["model"].startswith("m")
    assert sorted(os.listdir(os.path.join(root, "shared"))) == ["run.json", "run.txt"]  # no temporary file left


def test_sixteen_threads_streaming_with_one_trace_id(cache):
    client = _client(16)
    errors, texts = [], []

    def work():
        try:
            events = list(client.streaming_response([USER], {"trace_id": "agents/shared"}))
            texts.append("".join(i["text"] for e in events for i in e["content_items"] if i["type"] == "text"))
        except Exception as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == [] and texts == [ANSWER] * 16
    assert load_trace(os.path.join(cache, "agents", "shared.json"))["history"][1]["content_items"][0]["text"] == ANSWER


@pytest.mark.parametrize("trace_id, word", [
    ("a" * 200, "bytes long"),
    ("/".join(["abcdefgh"] * 80), "characters long"),
    ("run\n1", "may hold"), ("run\r", "may hold"), ("run\u200b1", "may hold"), ("run\x1b[31m", "may hold"),
    ("a/b?c", "may hold"), ("a*", "may hold"), ("a<b>", "may hold"), ("a|b", "may hold"), ('a"b', "may hold"),
    ("a/ b", "may hold"), ("a/b.", "may hold"), ("\ud800", "may hold|lone surrogate"),
])
def test_bad_trace_ids_are_config_errors_when_the_stream_is_created(cache, trace_id, word):
    client = _client()
    with pytest.raises(ConfigError, match=word):
        client.streaming_response([USER], {"trace_id": trace_id})  # not iterated: nothing was sent
    assert client._session.adapters["https://"].cassette.unplayed()  # the recording is still there


def test_a_trace_id_under_an_existing_file_is_a_config_error_up_front(cache):
    os.makedirs(cache)
    with open(os.path.join(cache, "agent1"), "w") as handle:
        handle.write("a file, not a folder")
    client = _client()
    with pytest.raises(ConfigError, match="a file is there"):
        client.streaming_response_stateful(USER, {"trace_id": "agent1/run_001"})
    with pytest.raises(ConfigError, match="a file is there"):
        trace_paths("agent1/deeper/run", cache)
    assert client.get_history() == []


def test_a_cache_dir_that_is_a_file_is_a_config_error(tmp_path):
    root = tmp_path / "cache"
    root.write_text("x")
    with pytest.raises(ConfigError, match="a file is there"):
        trace_paths("run", str(root))


def test_good_trace_ids_still_work(tmp_path):
    root = str(tmp_path)
    for trace_id in ("agent1/run_007", "été/run 1", "a.b-c_d+e=f@g,h", "x" * 160):
        save_trace(trace_id, "m", [USER], {}, root=root)
        assert os.path.isfile(trace_paths(trace_id, root)["json"])


def test_a_failed_trace_write_is_logged_and_the_answer_stands(cache, monkeypatch, caplog):
    def fail(path, text):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(tracer, "_write", fail)
    client = _client()
    with caplog.at_level(logging.ERROR, logger="agenthub"):
        events = list(client.streaming_response_stateful(USER, {"trace_id": "runs/full-disk"}))
    assert events[-1]["event_type"] == "stop"
    history = client.get_history()
    assert [m["role"] for m in history] == ["user", "assistant"]  # committed: retrying would duplicate the turn
    assert history[1]["content_items"] == [{"type": "text", "text": ANSWER}]
    records = [r for r in caplog.records if r.name == "agenthub" and r.levelno == logging.ERROR]
    assert len(records) == 1
    message = records[0].getMessage()
    assert "runs/full-disk" in message and "No space left on device" in message and "the answer stands" in message
    assert KEY not in message


def test_trace_files_are_readable_by_their_owner_only(tmp_path):
    paths = save_trace("private/run", "m", [USER], {}, root=str(tmp_path))
    for path in paths.values():
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(os.path.dirname(paths["json"])).st_mode) & 0o077 == 0


def test_extra_header_values_are_not_written_to_traces(tmp_path):
    paths = save_trace("h", "m", [USER], {"extra_headers": {"Helicone-Auth": "Bearer hel-secret-123456"}},
                       root=str(tmp_path))
    for path in paths.values():
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
        assert "hel-secret-123456" not in text
    with open(paths["json"], encoding="utf-8") as handle:
        assert json.load(handle)["config"]["extra_headers"] == {"Helicone-Auth": "***"}
