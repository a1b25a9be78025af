"""Issue 12 item 9: stateful and traced calls fold the answer as the events pass (stream.Collector),
equal to collect(), with memory that follows the answer's size, not the number of events."""

import json
import os
import random
import subprocess
import sys

from agenthub.stream import collect

HERE = os.path.dirname(os.path.abspath(__file__))


def _reference(events):
    """collect() as it was before the Collector (kept here as the oracle)."""
    mergeable = {"text": "text", "thinking": "thinking"}
    items, texts, open_index, sealed = [], [], -1, False
    message = {"role": "assistant", "content_items": items}
    last = None
    for event in events:
        last = event
        if event.get("event_type") == "stop":
            message["usage_metadata"] = event.get("usage_metadata")
            message["finish_reason"] = event.get("finish_reason")
            continue
        for item in event.get("content_items") or ():
            kind = item.get("type")
            if kind == "partial_tool_call":
                continue
            field = mergeable.get(kind)
            if field is None:
                items.append(dict(item))
                texts.append([])
                open_index = -1
                continue
            text = item.get(field) or ""
            fidelity = item.get("fidelity")
            if open_index >= 0 and items[open_index]["type"] == kind and not sealed:
                current = items[open_index]
                if not fidelity:
                    texts[open_index].append(text)
                    continue
                if not current.get("fidelity"):
                    texts[open_index].append(text)
                    current["fidelity"] = fidelity
                    sealed = True
                    continue
                if current.get("fidelity") == fidelity:
                    texts[open_index].append(text)
                    continue
            if not text and not fidelity:
                continue
            new = {"type": kind, field: text}
            if fidelity:
                new["fidelity"] = fidelity
            items.append(new)
            texts.append([text])
            open_index = len(items) - 1
            sealed = False
    for i, pieces in enumerate(texts):
        if pieces:
            items[i][mergeable[items[i]["type"]]] = "".join(pieces)
    if last is not None:
        message["created_at"] = last.get("created_at")
    message.setdefault("usage_metadata", None)
    message.setdefault("finish_reason", None)
    return message


def _random_events(rng):
    events = [{"role": "assistant", "event_type": "start", "content_items": [], "usage_metadata": None,
               "finish_reason": None, "created_at": 1}]
    for n in range(rng.randint(0, 400)):
        kind = rng.choice(["text", "text", "text", "thinking", "tool_call", "partial_tool_call", "image_url"])
        if kind in ("text", "thinking"):
            item = {"type": kind, kind: rng.choice(["", "a", "bc", "é", "\U0001F600", "long " * 5])}
            roll = rng.random()
            if roll < 0.05:
                item["fidelity"] = {"signature": rng.choice(["s1", "s2"])}
            elif roll < 0.07:
                item["fidelity"] = {"thought_signature": "t"}
        elif kind == "tool_call":
            item = {"type": "tool_call", "name": "f", "arguments": {"n": n}, "tool_call_id": "c{}".format(n)}
        elif kind == "partial_tool_call":
            item = {"type": "partial_tool_call", "name": "f", "arguments": "{", "tool_call_id": "p"}
        else:
            item = {"type": "image_url", "image_url": "https://x/{}.png".format(n)}
        events.append({"role": "assistant", "event_type": "delta", "content_items": [item], "usage_metadata": None,
                       "finish_reason": None, "created_at": 2 + n})
    if rng.random() < 0.9:
        events.append({"role": "assistant", "event_type": "stop", "content_items": [],
                       "usage_metadata": {"prompt_tokens": 1}, "finish_reason": "stop", "created_at": 99999})
    return events


def test_the_collector_equals_collect_on_random_streams():
    from agenthub.stream import Collector

    rng = random.Random(12)
    for _ in range(60):
        events = _random_events(rng)
        expected = _reference(json.loads(json.dumps(events)))
        collector = Collector()
        for event in events:
            collector.add(event)
        assert collector.message() == expected
        assert collect(events) == expected


def test_the_collector_copies_what_it_returns():
    from agenthub.stream import Collector

    collector = Collector()
    collector.add({"event_type": "delta", "content_items": [{"type": "text", "text": "a"}]})
    first = collector.message()
    collector.add({"event_type": "delta", "content_items": [{"type": "text", "text": "b"}]})
    assert first["content_items"] == [{"type": "text", "text": "a"}]
    assert collector.message()["content_items"] == [{"type": "text", "text": "ab"}]


MEASURE = r"""
import json, sys, time, tracemalloc
sys.path.insert(0, sys.argv[1])
from agenthub import AutoLLMClient
n = int(sys.argv[2])
mode = sys.argv[3]
client = AutoLLMClient("m", api_key="sk-test-key-123456", base_url="http://127.0.0.1:9/v1", client_type="openai-chat")

def attempts(call, watch, hooks):
    yield {"role": "assistant", "event_type": "start", "content_items": [], "usage_metadata": None,
           "finish_reason": None, "created_at": 1}
    for i in range(n):
        yield {"role": "assistant", "event_type": "delta", "content_items": [{"type": "text", "text": "x"}],
               "usage_metadata": None, "finish_reason": None, "created_at": 2}
    yield {"role": "assistant", "event_type": "stop", "content_items": [], "finish_reason": "stop",
           "usage_metadata": {"cached_tokens": 0, "prompt_tokens": 1, "thoughts_tokens": 0, "response_tokens": n},
           "created_at": 3}

client._attempts = attempts
user = {"role": "user", "content_items": [{"type": "text", "text": "hi"}]}
tracemalloc.start()
started = time.perf_counter()
stream = client.streaming_response([user]) if mode == "stateless" else client.streaming_response_stateful(user)
count = 0
for event in stream:
    count += 1
elapsed = time.perf_counter() - started
peak = tracemalloc.get_traced_memory()[1]
text = client.get_history()[1]["content_items"][0]["text"] if mode == "stateful" else None
print(json.dumps({"peak": peak, "seconds": elapsed, "events": count, "text": len(text) if text else None}))
"""


def _measure(n, mode):
    result = subprocess.run([sys.executable, "-c", MEASURE, os.path.dirname(HERE), str(n), mode],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
    assert result.returncode == 0, result.stderr.decode()[-3000:]
    return json.loads(result.stdout.decode().strip().splitlines()[-1])


def test_a_stateful_call_of_many_tiny_deltas_costs_about_what_a_stateless_one_does():
    n = 50000
    stateless, stateful = _measure(n, "stateless"), _measure(n, "stateful")
    assert stateless["events"] == stateful["events"] == n + 2
    assert stateful["text"] == n
    # keeping the events cost ~600 bytes each (27 MB here); folding costs the answer's characters
    assert stateful["peak"] < stateless["peak"] + 4 * 1024 * 1024, (stateless, stateful)
