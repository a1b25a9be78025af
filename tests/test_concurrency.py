"""One client from many threads, the stateful thread rules, and pickling into process pools."""

import json
import multiprocessing
import pickle
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from agenthub import AutoLLMClient, ConfigError, ThinkingLevel, TransportError, check_stream
from agenthub.client import Timeout
from agenthub import attempts
from faultserver import FaultServer, chat_chunk, chat_stream, hang, send, sleep, status, within

SSE = {"Content-Type": "text/event-stream"}


def echo(request):
    """Answer with the last user text, in three pieces and with small pauses (threads interleave)."""
    body = request.json()
    text = body["messages"][-1]["content"]
    third = max(1, len(text) // 3)
    pieces = [text[:third], text[third:2 * third], text[2 * third:]]
    steps = [status(200, SSE)]
    for piece in pieces:
        steps += [send(chat_chunk(piece)), sleep(0.002)]
    return steps + [send(chat_stream("")[len(chat_chunk("")):])]


@pytest.fixture
def server():
    with FaultServer(default=echo) as srv:
        yield srv
        assert not srv.errors


def make(server, **kwargs):
    return AutoLLMClient("test-model", client_type="openai-chat", base_url=server.url + "/v1",
                         timeout=Timeout(connect=2, read=5), **kwargs)


def ask(client, text):
    events = list(client.streaming_response([{"role": "user", "content_items": [{"type": "text", "text": text}]}]))
    check_stream(events)
    return "".join(i["text"] for e in events for i in e["content_items"] if i["type"] == "text")


def user(text):
    return {"role": "user", "content_items": [{"type": "text", "text": text}]}


@within(30)
def test_one_client_many_threads_gives_independent_streams(server):
    client = make(server)
    questions = ["question number {} from a thread".format(i) for i in range(200)]
    with ThreadPoolExecutor(max_workers=24) as pool:
        answers = list(pool.map(lambda q: ask(client, q), questions))
    assert answers == questions
    assert len(server.requests) == 200
    assert server.connections <= 40  # the pool is reused, not one connection per call


@within(20)
def test_threads_aborting_their_own_streams_do_not_disturb_others(server):
    client = make(server)
    results = {}

    def worker(i):
        stream = client.streaming_response([user("stream {} text".format(i))])
        if i % 3 == 0:
            next(stream)
            stream.abort()
            try:
                list(stream)
            except TransportError as exc:
                results[i] = "aborted" if exc.aborted else "other"
            return
        results[i] = "".join(it["text"] for e in stream for it in e["content_items"] if it["type"] == "text")

    with ThreadPoolExecutor(max_workers=12) as pool:
        list(pool.map(worker, range(60)))
    for i in range(60):
        assert results[i] == ("aborted" if i % 3 == 0 else "stream {} text".format(i))


# -- stateful thread rules -------------------------------------------------------------------


@within(10)
def test_one_stateful_stream_at_a_time(server):
    server.push([status(200, SSE), send(chat_chunk("slow")), hang(5)])
    client = make(server)
    first = client.streaming_response_stateful(user("one"))
    next(first)  # open: holds the instance's history
    with pytest.raises(ConfigError):
        client.streaming_response_stateful(user("two"))
    with pytest.raises(ConfigError):
        client.set_history([])
    with pytest.raises(ConfigError):
        client.clear_history()
    assert client.get_history() == []  # reading is always fine
    assert ask(client, "stateless calls still work") == "stateless calls still work"
    first.close()
    assert client.get_history() == []
    for event in client.streaming_response_stateful(user("two")):
        pass
    assert [m["role"] for m in client.get_history()] == ["user", "assistant"]


@within(10)
def test_two_threads_racing_for_stateful_history(server):
    client = make(server)
    barrier = threading.Barrier(8)
    outcomes = []

    def worker(i):
        stream = client.streaming_response_stateful(user("racer {}".format(i))) if i == 0 else None
        barrier.wait()
        try:
            if stream is None:
                stream = client.streaming_response_stateful(user("racer {}".format(i)))
            list(stream)
            outcomes.append("ok")
        except ConfigError:
            outcomes.append("refused")

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert outcomes.count("ok") >= 1
    history = client.get_history()
    assert len(history) == 2 * outcomes.count("ok")
    # every committed turn is a whole (user, assistant) pair answering that user's text
    for question, answer in zip(history[::2], history[1::2]):
        assert answer["content_items"][0]["text"] == question["content_items"][0]["text"]


@within(10)
def test_history_changed_between_creation_and_start_is_refused(server):
    client = make(server)
    stream = client.streaming_response_stateful(user("late start"))
    client.set_history([user("something else"), {"role": "assistant",
                                                   "content_items": [{"type": "text", "text": "x"}]}])
    with pytest.raises(ConfigError):
        next(stream)


# -- pickling --------------------------------------------------------------------------------


def test_client_config_timeout_and_errors_pickle(server):
    client = make(server, max_retries=3, max_line_bytes=1 << 20, default_headers={"X-Team": "a"})
    client.streaming_response([user("warm the session up")]).close()
    clone = pickle.loads(pickle.dumps(client))
    assert repr(clone) == repr(client)
    assert clone.timeout == client.timeout and clone.max_retries == 3 and clone.max_line_bytes == 1 << 20
    assert ask(clone, "after a pickle") == "after a pickle"
    config = {"max_tokens": 10, "thinking_level": ThinkingLevel.HIGH, "tools": [
        {"name": "f", "description": "d", "parameters": {"type": "object", "properties": {}}}]}
    assert pickle.loads(pickle.dumps(config)) == config
    assert pickle.loads(pickle.dumps(Timeout(1, 2, 3))) == Timeout(1, 2, 3)
    error = TransportError("aborted", client="openai-chat", aborted=True, retryable=False)
    again = pickle.loads(pickle.dumps(error))
    assert again.aborted is True and again.retryable is False and str(again) == "aborted"


def test_stateful_history_pickles_with_the_client(server):
    client = make(server)
    list(client.streaming_response_stateful(user("remember me")))
    clone = pickle.loads(pickle.dumps(client))
    assert clone.get_history() == client.get_history()
    list(clone.streaming_response_stateful(user("and again")))
    assert len(clone.get_history()) == 4 and len(client.get_history()) == 2
    sent = server.requests[-1].json()["messages"]
    assert [m["content"] for m in sent if m["role"] == "user"] == ["remember me", "and again"]


def remote_ask(payload):
    """Runs in a worker process: the client arrives pickled."""
    client, text = pickle.loads(payload)
    return ask(client, text)


@within(60)
def test_client_in_a_process_pool(server):
    client = make(server)
    context = multiprocessing.get_context("spawn")  # the strictest start method: everything crosses as pickles
    with context.Pool(2) as pool:
        answers = pool.map(remote_ask, [pickle.dumps((client, "process {}".format(i))) for i in range(4)])
    assert answers == ["process {}".format(i) for i in range(4)]


def test_timeout_forms():
    assert Timeout.of(None) == Timeout(10, 600, None)
    assert Timeout.of(30) == Timeout(30, 30)
    assert Timeout.of((3.05, 120)) == Timeout(3.05, 120)
    assert Timeout.of((5, None)).read is None
    assert Timeout.of({"total": 900}) == Timeout(10, 600, 900)
    assert Timeout.of(Timeout(1, 2, 3)) == Timeout(1, 2, 3)
    for bad in ("10", -1, 0, (1, 2, 3), {"idle": 3}, True, float("nan"), float("inf")):
        with pytest.raises(ConfigError):
            Timeout.of(bad)
    client = AutoLLMClient("m", client_type="openai-chat", base_url="http://127.0.0.1:9/v1", timeout=(3, 60))
    assert client.timeout == Timeout(3, 60)
    json.dumps(repr(client.timeout))


def test_the_events_timeout_defaults_to_three_times_read_and_is_checked_like_the_others():
    assert attempts.DEFAULT_EVENTS_TIMEOUT == 1800.0 == 3 * attempts.DEFAULT_READ_TIMEOUT
    assert Timeout().events == 1800.0
    assert Timeout.of(None).events == 1800.0 and Timeout.of(30).events == 1800.0
    assert Timeout.of((5, 60)).events == 1800.0 and Timeout.of({"total": 900}).events == 1800.0
    assert Timeout.of({"events": 120}) == Timeout(10, 600, None, 120.0)
    assert Timeout.of({"events": None}).events is None
    assert Timeout(events=5) != Timeout() and hash(Timeout(events=5)) == hash(Timeout(10, 600, None, 5))
    assert repr(Timeout(1, 2, 3, 4)) == "Timeout(connect=1.0, read=2.0, total=3.0, events=4.0)"
    assert pickle.loads(pickle.dumps(Timeout(1, 2, 3, None))) == Timeout(1, 2, 3, None)
    old = Timeout.__new__(Timeout)
    old.__setstate__((1.0, 2.0, None))  # pickled before events existed: the default
    assert old == Timeout(1, 2, None)
    for bad in (0, -1, True, "60", float("nan"), float("inf"), 1e10):
        with pytest.raises(ConfigError) as caught:
            Timeout.of({"events": bad})
        assert "timeout events" in str(caught.value)
    with pytest.raises(ConfigError) as caught:
        Timeout.of({"idle": 3})
    assert str(caught.value) == "unknown timeout key(s) ['idle']; known: connect, read, total, events"
    client = AutoLLMClient("m", client_type="openai-chat", base_url="http://127.0.0.1:9/v1", timeout={"events": 60})
    assert client.timeout == Timeout(10, 600, None, 60)


@pytest.mark.parametrize("timeout", [1e10, {"read": 1e300}, {"connect": 1e10}, {"total": 1e10}, {"events": 1e10}])
def test_a_timeout_longer_than_any_wait_is_a_config_error_up_front(timeout):
    """A socket or a lock waits at most threading.TIMEOUT_MAX seconds: a longer timeout made every request fail
    as 'the connection failed' (retried; the OverflowError was its cause) and a total's timer thread die."""
    with pytest.raises(ConfigError) as caught:
        AutoLLMClient("m", client_type="openai-chat", base_url="http://127.0.0.1:9/v1", timeout=timeout)
    name = next(iter(timeout)) if isinstance(timeout, dict) else "connect"
    assert str(caught.value) == "timeout {} of {!r} s is longer than a wait can be ({:.0f} s): give None for no " \
                                "limit".format(name, 1e300 if name == "read" else 1e10, threading.TIMEOUT_MAX)
    assert Timeout(read=threading.TIMEOUT_MAX).read == threading.TIMEOUT_MAX
