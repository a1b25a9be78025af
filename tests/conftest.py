"""Shared test helpers: recorded wire streams, byte splitting, running a parser end to end."""

import json
import os
import random
import signal
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

# No test leaves a thread, a child process or a file descriptor behind (tests/leakguard.py; AGENTHUB_LEAKS).
from leakguard import pytest_configure  # noqa: E402,F401  (a hook: pytest calls it from this conftest)

# The Ctrl-C tests (in this process, and in the child processes it starts, which inherit an ignored SIGINT)
# need SIGINT delivered: a suite started in the background by a shell without job control (`cmd &`, nohup)
# begins with SIGINT ignored, so Python installed no KeyboardInterrupt handler; it gets Python's default here.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

def _wire_dir():
    """../shared/wire beside the checkout; in a git worktree (its .git a file naming <main>/.git/worktrees/<name>),
    beside the main checkout when not beside the worktree."""
    beside = os.path.normpath(os.path.join(ROOT, "..", "shared", "wire"))
    marker = os.path.join(ROOT, ".git")
    if os.path.isdir(beside) or not os.path.isfile(marker):
        return beside
    with open(marker, encoding="utf-8") as handle:
        line = handle.read().strip()
    if not line.startswith("gitdir:"):
        return beside
    main = os.path.dirname(os.path.dirname(os.path.dirname(os.path.normpath(line[len("gitdir:"):].strip()))))
    return os.path.normpath(os.path.join(main, "..", "shared", "wire"))


#: ../shared/wire beside the checkout (other people's recordings: read, never copied)
WIRE_DIR = _wire_dir()


def wire_streams(protocol):
    """[(name, sse_bytes, sidecar_dict)] for ../shared/wire/<protocol>; [] when shared/ is absent."""
    folder = os.path.join(WIRE_DIR, protocol)
    if not os.path.isdir(folder):
        return []
    out = []
    for name in sorted(os.listdir(folder)):
        if name.endswith(".sse"):
            stem = name[:-4]
            with open(os.path.join(folder, name), "rb") as handle:
                data = handle.read()
            with open(os.path.join(folder, stem + ".json"), encoding="utf-8") as handle:
                sidecar = json.load(handle)
            out.append((stem, data, sidecar))
    return out


def wire_params(protocol):
    """pytest params over a protocol's recordings, or one skipped param when shared/ is absent."""
    streams = wire_streams(protocol)
    if not streams:
        return [pytest.param(None, None, None, marks=pytest.mark.skip(reason="../shared/wire is absent"))]
    return [pytest.param(name, data, sidecar, id=name) for name, data, sidecar in streams]


def splits(data, samples=40, seed=1234):
    """Chunkings of ``data``: whole, byte by byte, and ``samples`` random two- and three-way splits."""
    yield [data]
    yield [data[i:i + 1] for i in range(len(data))]
    rng = random.Random(seed)
    for _ in range(samples):
        if len(data) < 3:
            break
        a, b = sorted(rng.sample(range(1, len(data)), 2))
        yield [data[:a], data[a:]]
        yield [data[:a], data[a:b], data[b:]]


def every_split(data):
    """Every two-way split of ``data`` (for the cheap layers: SSE framing)."""
    for i in range(len(data) + 1):
        yield [data[:i], data[i:]]


def boundary_splits(data, stride=61):
    """Two-way splits at every position next to a line end or a non-ASCII byte, and every
    ``stride``-th position elsewhere: every kind of split, at a cost linear in the line count."""
    positions = set(range(0, len(data) + 1, max(stride, len(data) // 200)))
    previous = -10
    for i, byte in enumerate(bytearray(data)):
        if byte in (10, 13) or (byte >= 0x80 and i - previous > 8):
            positions.update((i - 1, i, i + 1, i + 2))
            previous = i
    positions = sorted(p for p in positions if 0 <= p <= len(data))
    if len(positions) > 400:  # a long recording: every position near its start, a sample of the rest
        head = [p for p in positions if p < 3000]
        rest = [p for p in positions if p >= 3000]
        positions = head + sorted(random.Random(0).sample(rest, max(0, 400 - len(head))))
    for i in positions:
        yield [data[:i], data[i:]]


def run_parser(parse_stream, chunks, client="test", **kwargs):
    """bytes chunks -> SSE -> a protocol's parse_stream -> drive: the list of UniEvents."""
    from agenthub.sse import iter_events
    from agenthub.stream import drive

    return list(drive(parse_stream(iter_events(chunks), client, **kwargs), client))


def summarize(events):
    """What a sidecar's ``expect`` describes, read off a UniEvent list."""
    text = "".join(i["text"] for e in events for i in e["content_items"] if i["type"] == "text")
    thinking = "".join(i["thinking"] for e in events for i in e["content_items"] if i["type"] == "thinking")
    calls = [
        {"name": i["name"], "id": i["tool_call_id"], "arguments": i["arguments"]}
        for e in events for i in e["content_items"] if i["type"] == "tool_call"
    ]
    stop = events[-1] if events and events[-1]["event_type"] == "stop" else None
    return {
        "text": text,
        "thinking": thinking,
        "tool_calls": calls,
        "finish_reason": stop["finish_reason"] if stop else None,
        "usage": stop["usage_metadata"] if stop else None,
    }


def strip_ids(events):
    """Events with created_at removed (for comparing runs)."""
    return [{k: v for k, v in e.items() if k != "created_at"} for e in events]


def sent(plan, endpoint):
    """The request as the client sends it: ``plan`` (a dialect's build_request) through the host of
    ``endpoint.client_type`` (the URL joined, the bytes, the credential)."""
    from agenthub import hosts

    return hosts.client_type(endpoint.client_type).host.encode(plan, endpoint)


@pytest.fixture(autouse=True)
def _private_agenthub_home(tmp_path_factory, monkeypatch):
    """The CLI's conversation log goes to a folder of the test's own, never the user's data directory."""
    monkeypatch.setenv("AGENTHUB_HOME", str(tmp_path_factory.mktemp("agenthub-home")))


@pytest.fixture
def fresh_breakers():
    """Every circuit breaker closed before the test and after it (the failover tests' ``pytestmark``)."""
    from agenthub import breaker

    breaker.reset()
    yield
    breaker.reset()


@pytest.fixture(params=["sqlite", "redis"])
def store_url(request, tmp_path):
    """A shared store's URL: a SQLite file in the test's folder, then a local redis-server (skipped when it
    or the redis package is missing)."""
    if request.param == "sqlite":
        yield "sqlite:///" + str(tmp_path / "state.db")
        return
    from store_support import REDIS_SERVER, RedisServer

    if REDIS_SERVER is None:
        pytest.skip("redis-server is not installed")
    pytest.importorskip("redis")
    with RedisServer() as server:
        yield server.url


# -- the CLI tests' local Chat Completions server (test_cli_habits.py, test_cli_papercuts.py) -------------------


def chat_answer(text):
    """An sse_server Answer: a Chat Completions stream of ``text`` with usage (3 in, 1 out)."""
    from sse_server import Answer

    chunks = [{"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]},
              {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
              {"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 1}}]
    return Answer(["".join("data: " + json.dumps(c) + "\n\n" for c in chunks).encode() + b"data: [DONE]\n\n"])


@pytest.fixture
def server():
    """A running sse_server.SSEServer (its ``answers`` queue, its ``requests``)."""
    from sse_server import SSEServer

    with SSEServer() as running:
        yield running


def local(server):
    """The CLI options that point a command at ``server``."""
    return ["--client-type", "openai-chat", "--base-url", server.url + "/v1"]
