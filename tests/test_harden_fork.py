"""Issue 12 item 1: after a fork (os.fork, multiprocessing's fork context) no process reuses a pooled
connection of another: every answer is its own request's."""

import json
import multiprocessing
import os
import sys
import threading

import pytest
import requests

from agenthub import AutoLLMClient, ConfigError, Timeout, check_stream
from agenthub.transport import new_session

from faultserver import FaultServer, chat_chunk, chat_stream, send, sleep, status, within

pytestmark = [pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform"),
              pytest.mark.filterwarnings("ignore::DeprecationWarning")]  # 3.12+: fork with threads running


def echo(request):
    text = request.json()["messages"][-1]["content"]
    steps = [status(200, {"Content-Type": "text/event-stream"})]
    for piece in (text[:3], text[3:]):
        steps += [send(chat_chunk(piece)), sleep(0.003)]
    return steps + [send(chat_stream("")[len(chat_chunk("")):])]


@pytest.fixture
def server():
    with FaultServer(default=echo) as srv:
        yield srv


def make(server, **kwargs):
    return AutoLLMClient("test-model", client_type="openai-chat", base_url=server.url + "/v1",
                         timeout=Timeout(connect=2, read=5), max_retries=0, **kwargs)


def ask(client, text):
    events = list(client.streaming_response([{"role": "user", "content_items": [{"type": "text", "text": text}]}]))
    check_stream(events)
    return "".join(i["text"] for e in events for i in e["content_items"] if i["type"] == "text")


def _in_child(work):
    """Run ``work()`` in a forked child; its JSON result (or error) comes back through a pipe."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        os.close(read)
        try:
            result = {"ok": work()}
        except BaseException as exc:  # noqa: B902 - everything goes back to the parent
            result = {"error": "{}: {}".format(type(exc).__name__, exc)}
        os.write(write, json.dumps(result).encode())
        os._exit(0)
    os.close(write)
    return pid, read


def _collect(pid, read):
    chunks = []
    while True:
        data = os.read(read, 65536)
        if not data:
            break
        chunks.append(data)
    os.close(read)
    os.waitpid(pid, 0)
    return json.loads(b"".join(chunks).decode() or '{"error": "no answer"}')


@pytest.mark.parametrize("own_session", [False, True])
@within(60)
def test_a_forked_child_never_reuses_the_parents_connection(server, own_session):
    session = requests.Session() if own_session else None
    client = make(server, session=session)
    assert ask(client, "warm up the pool") == "warm up the pool"
    first = server.requests[0].connection
    pid, read = _in_child(lambda: ask(client, "from the child"))
    answer = _collect(pid, read)
    assert answer == {"ok": "from the child"}
    child_request = [r for r in server.requests if r.json()["messages"][-1]["content"] == "from the child"][0]
    assert child_request.connection != first  # a connection of its own, never the parent's pooled one
    assert ask(client, "parent again") == "parent again"


@within(90)
def test_parent_and_forked_children_streaming_at_once_get_their_own_answers(server):
    client = make(server)
    assert ask(client, "warm up") == "warm up"
    children = []
    for n in range(4):
        def work(n=n):
            return [ask(client, "child {} call {}".format(n, i)) for i in range(5)]
        children.append((n, _in_child(work)))
    mine = [ask(client, "parent call {}".format(i)) for i in range(5)]
    assert mine == ["parent call {}".format(i) for i in range(5)]
    for n, (pid, read) in children:
        assert _collect(pid, read) == {"ok": ["child {} call {}".format(n, i) for i in range(5)]}


CLIENT = None


def _pool_ask(text):
    return ask(CLIENT, text)  # the client was inherited through the fork, pools and all


@within(90)
def test_a_multiprocessing_fork_pool_gets_its_own_answers(server):
    global CLIENT
    CLIENT = make(server)
    try:
        assert ask(CLIENT, "warm up") == "warm up"
        context = multiprocessing.get_context("fork")
        texts = ["worker call {}".format(i) for i in range(12)]
        with context.Pool(3) as pool:
            answers = pool.map(_pool_ask, texts, chunksize=1)
        assert answers == texts
        assert ask(CLIENT, "parent after the pool") == "parent after the pool"
        warm = server.requests[0].connection
        pooled = [r.connection for r in server.requests if r.json()["messages"][-1]["content"] in texts]
        assert warm not in pooled
    finally:
        CLIENT = None


@within(60)
def test_a_child_forked_while_a_stateful_stream_is_open_can_stream_statefully(server):
    """The parent's open stateful stream holds the client's lock at the fork; that stream does not
    exist in the child, which gets fresh locks (and its own history turn) instead of refusing forever."""
    client = make(server)
    stream = client.streaming_response_stateful({"role": "user", "content_items": [{"type": "text",
                                                                                  "text": "parent turn"}]})
    next(stream)  # the stream is open: the lock is held
    try:
        def child():
            answer = "".join(i["text"] for e in client.streaming_response_stateful(
                {"role": "user", "content_items": [{"type": "text", "text": "child turn"}]})
                for i in e["content_items"] if i["type"] == "text")
            return [answer, len(client.get_history())]

        pid, read = _in_child(child)
        assert _collect(pid, read) == {"ok": ["child turn", 2]}
        with pytest.raises(ConfigError, match="while a stateful stream is open"):  # still held in the parent
            client.streaming_response_stateful({"role": "user", "content_items": [{"type": "text", "text": "x"}]})
    finally:
        stream.close()
    assert client.get_history() == []  # the parent's stream was abandoned: its history is untouched


def _slow_answer(server):
    """The first delta at once, the rest 0.6 s later: a reader in the wrong process would block, then steal it."""
    server.push([status(200, {"Content-Type": "text/event-stream"}), send(chat_chunk("par")), sleep(0.6),
                 send(chat_chunk("ent")), send(chat_stream("")[len(chat_chunk("")):])])


USER = {"role": "user", "content_items": [{"type": "text", "text": "x"}]}


@within(30)
def test_a_stream_read_in_a_forked_child_raises_there_and_the_parent_reads_it_whole(server):
    """Issue 24 A4: the child's next read raises a typed error at once, without touching the socket."""
    _slow_answer(server)
    client = make(server)
    stream = client.streaming_response([USER])
    first = [next(stream), next(stream)]  # start, "par"

    def child():
        import time

        from agenthub import TransportError

        started = time.monotonic()
        try:
            next(stream)
        except TransportError as exc:
            return [type(exc).__name__, time.monotonic() - started < 0.3, "another process" in str(exc),
                    exc.retryable]
        return "no error"

    pid, read = _in_child(child)
    assert _collect(pid, read) == {"ok": ["TransportError", True, True, False]}
    events = first + list(stream)
    check_stream(events)
    assert "".join(i["text"] for e in events for i in e["content_items"] if i["type"] == "text") == "parent"
    assert events[-1]["finish_reason"] == "stop"


@within(30)
def test_a_childs_abort_does_not_kill_the_parents_stream(server):
    _slow_answer(server)
    client = make(server)
    stream = client.streaming_response([USER])
    first = [next(stream), next(stream)]

    def child():
        stream.abort()
        stream.close()
        return "aborted"

    pid, read = _in_child(child)
    assert _collect(pid, read) == {"ok": "aborted"}
    events = first + list(stream)
    check_stream(events)
    assert "".join(i["text"] for e in events for i in e["content_items"] if i["type"] == "text") == "parent"
