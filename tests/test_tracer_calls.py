"""Trace files and the tool runner (issue 30): one trace holds the whole run, each tool call with its duration.

A run with ``config={"trace_id": ...}`` writes ``"tool_calls"`` rows (tool_call_id, name, seconds, is_error,
turn) as soon as a turn's calls return; ``agenthub trace show`` and the viewer show the duration beside the
result; a trace without rows (an older file) loads and renders as before.  No timed assertions: a duration is
checked for its type and sign only, concurrency is forced with a barrier.
"""

import json
import os
import re
import shutil
import subprocess
import threading

import pytest

from agent_streams import chat_calls, chat_text
from sse_server import Answer, SSEServer

from agenthub import AutoLLMClient, UpstreamError, tool
from agenthub.__main__ import main
from agenthub.apps.viewer import page
from agenthub.tracer import RunTrace, load_trace, render_text, save_trace, trace_paths

KEY = "sk-test-tracecalls-0001"
USER = {"role": "user", "content_items": [{"type": "text", "text": "Weather in Paris and Rome?"}]}
TWO_CALLS = [("call_1", "get_weather", '{"city": "Paris"}'), ("call_2", "get_weather", '{"city": "Rome"}')]
DOWN = Answer([b'{"error": {"message": "overloaded", "type": "server_error"}}'], status=503,
              headers={"Content-Type": "application/json"})


def weather_tool():
    """get_weather: both calls must be running at once (a barrier of two) before either returns; Rome raises."""
    both = threading.Barrier(2, timeout=30)  # a safety net against a hang, not a timing assertion

    @tool
    def get_weather(city: str) -> str:
        """Current weather in a city."""
        both.wait()
        if city == "Rome":
            raise ValueError("no station in Rome")
        return "18 C, sunny"

    return get_weather


@tool(name="get_weather")
def one_city(city: str) -> str:
    """Current weather in a city."""
    return "18 C"


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTHUB_CACHE_DIR", str(tmp_path))
    return str(tmp_path)


def client_for(server):
    return AutoLLMClient("gpt-4o-mini", api_key=KEY, base_url=server.url + "/v1", client_type="openai-chat",
                         max_retries=0)


def read(path):
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def split_seconds(rows):
    """The rows without their durations, and the durations (asserted: floats >= 0, never a value)."""
    seconds = [row["seconds"] for row in rows]
    assert all(isinstance(s, float) and s >= 0 for s in seconds), seconds
    return [{k: v for k, v in row.items() if k != "seconds"} for row in rows], seconds


ROWS = [{"tool_call_id": "call_1", "name": "get_weather", "is_error": False, "turn": 2},
        {"tool_call_id": "call_2", "name": "get_weather", "is_error": True, "turn": 2}]


def test_a_two_turn_run_traces_each_parallel_call_with_its_duration(cache):
    with SSEServer() as server:
        server.answers += [Answer([chat_calls(TWO_CALLS)]), Answer([chat_text("Sunny in Paris.")])]
        result = client_for(server).run([USER], {"trace_id": "agent/run_1"}, tools=[weather_tool()]).result()
        host = "127.0.0.1:{}".format(server.url.rsplit(":", 1)[1].strip("/"))
    paths = trace_paths("agent/run_1")
    document = json.loads(read(paths["json"]))
    assert sorted(document) == ["config", "history", "model", "routes", "timestamp", "tool_calls", "trace_id"]
    rows, seconds = split_seconds(document["tool_calls"])
    assert rows == ROWS
    assert [sorted(row) for row in document["tool_calls"]] == [["is_error", "name", "seconds", "tool_call_id", "turn"]] * 2
    assert [(r["tool_call_id"], r["is_error"]) for r in result.calls] == [("call_1", False), ("call_2", True)]
    assert seconds == [round(r["seconds"], 6) for r in result.calls]  # the runner's own measure, as written
    assert document["history"][2] == {"role": "user", "content_items": [
        {"type": "tool_result", "tool_call_id": "call_1", "text": "18 C, sunny"},
        {"type": "tool_result", "tool_call_id": "call_2", "text": "ValueError: no station in Rome", "is_error": True}]}
    assert [m["role"] for m in document["history"]] == ["user", "assistant", "user", "assistant"]
    assert [(r["turn"], r["model"], r["host"]) for r in document["routes"]] == [
        (1, "gpt-4o-mini", host), (3, "gpt-4o-mini", host)]
    text = read(paths["txt"])
    assert KEY not in text and KEY not in read(paths["json"])
    lines = text.splitlines()
    results = [line for line in lines if line.startswith("  Tool Result")]
    assert len(results) == 2
    assert re.fullmatch(r"  Tool Result \[call_1\] \(\d+\.\d{3} s\): 18 C, sunny", results[0]), results
    assert re.fullmatch(r"  Tool Result \[call_2\] \(error, \d+\.\d{3} s\): ValueError: no station in Rome",
                        results[1]), results
    assert results == ["  Tool Result [call_1] ({:.3f} s): 18 C, sunny".format(seconds[0]),
                       "  Tool Result [call_2] (error, {:.3f} s): ValueError: no station in Rome".format(seconds[1])]


def test_the_calls_are_written_with_the_turn_that_ran_them_before_the_next_model_call(cache):
    """The next model call fails: the trace already holds the results and their rows."""
    with SSEServer() as server:
        server.answers += [Answer([chat_calls(TWO_CALLS)]), DOWN]
        run = client_for(server).run([USER], {"trace_id": "agent/cut"}, tools=[weather_tool()])
        with pytest.raises(UpstreamError):
            run.result()
    document = load_trace(trace_paths("agent/cut")["json"])
    assert [m["role"] for m in document["history"]] == ["user", "assistant", "user"]
    assert document["history"][2]["content_items"] == run.messages[1]["content_items"]
    assert split_seconds(document["tool_calls"])[0] == ROWS
    assert [r["turn"] for r in document["routes"]] == [1]  # the route of the turn before is kept


def test_a_stateful_run_keeps_the_rows_when_the_client_commits_the_results(cache):
    with SSEServer() as server:
        server.answers += [Answer([chat_calls(TWO_CALLS)]), Answer([chat_text("Sunny.")])]
        client = client_for(server)
        client.run_stateful(USER, {"trace_id": "agent/stateful"}, tools=[weather_tool()]).result()
    document = load_trace(trace_paths("agent/stateful")["json"])
    assert document["history"] == client.get_history()
    assert split_seconds(document["tool_calls"])[0] == ROWS


def test_a_resumed_run_adds_the_decided_calls_to_the_same_trace(cache):
    """A run stopped for approval, resumed with decisions: the resumed calls' rows join the same trace."""
    @tool(requires_approval=True)
    def delete_file(path: str) -> str:
        """Delete a file."""
        return "deleted " + path

    with SSEServer() as server:
        server.answers += [Answer([chat_calls([("call_9", "delete_file", '{"path": "a.txt"}')])]),
                           Answer([chat_text("Done.")])]
        client = client_for(server)
        config = {"trace_id": "agent/resumed"}
        stopped = client.run([USER], config, tools=[delete_file]).result()
        assert stopped.stop == "approval"
        assert "tool_calls" not in json.loads(read(trace_paths("agent/resumed")["json"]))
        done = client.run([USER] + stopped.messages, config, tools=[delete_file], decisions={"call_9": True}).result()
    assert done.stop == "done"
    document = load_trace(trace_paths("agent/resumed")["json"])
    assert [m["role"] for m in document["history"]] == ["user", "assistant", "user", "assistant"]
    assert split_seconds(document["tool_calls"])[0] == [
        {"tool_call_id": "call_9", "name": "delete_file", "is_error": False, "turn": 2}]
    assert [r["turn"] for r in document["routes"]] == [1, 3]


def test_a_run_without_calls_or_without_a_trace_id_writes_no_rows(cache):
    with SSEServer() as server:
        server.answers += [Answer([chat_text("Hello.")]), Answer([chat_calls(TWO_CALLS[:1])]), Answer([chat_text("ok")])]
        client = client_for(server)
        client.run([USER], {"trace_id": "agent/plain"}, tools=[weather_tool()]).result()
        client.run([USER], None, tools=[one_city]).result()
    assert "tool_calls" not in json.loads(read(trace_paths("agent/plain")["json"]))
    assert sorted(os.listdir(cache)) == ["agent"] and sorted(os.listdir(os.path.join(cache, "agent"))) == [
        "plain.json", "plain.txt"]


HISTORY = [
    USER,
    {"role": "assistant", "content_items": [
        {"type": "tool_call", "name": "get_weather", "arguments": {"city": "Paris"}, "tool_call_id": "call_1"},
        {"type": "tool_call", "name": "get_weather", "arguments": {"city": "Rome"}, "tool_call_id": "call_2"}],
     "finish_reason": "tool_call"},
    {"role": "user", "content_items": [
        {"type": "tool_result", "tool_call_id": "call_1", "text": "18 C, sunny"},
        {"type": "tool_result", "tool_call_id": "call_2", "text": "ValueError: no station in Rome", "is_error": True}]},
    {"role": "assistant", "content_items": [{"type": "text", "text": "Sunny in Paris."}], "finish_reason": "stop"},
]
TIMED = [{"tool_call_id": "call_1", "name": "get_weather", "seconds": 0.0123, "is_error": False, "turn": 2},
         {"tool_call_id": "call_2", "name": "get_weather", "seconds": 1.5, "is_error": True, "turn": 2}]
PLAIN_TEXT = """model: m

[0] USER:
  Text: Weather in Paris and Rome?

[1] ASSISTANT:
  Tool Call: get_weather({"city": "Paris"}) id=call_1
  Tool Call: get_weather({"city": "Rome"}) id=call_2
  Finish reason: tool_call

[2] USER:
  Tool Result [call_1]<1>: 18 C, sunny
  Tool Result [call_2] (<2>): ValueError: no station in Rome

[3] ASSISTANT:
  Text: Sunny in Paris.
  Finish reason: stop
"""


def plain_text(first, second):
    """PLAIN_TEXT with what follows each result's id."""
    return PLAIN_TEXT.replace("<1>", first).replace("<2>", second)


def test_render_text_shows_each_duration_beside_its_result():
    assert render_text(HISTORY, {"model": "m"}, TIMED) == plain_text(" (0.012 s)", "error, 1.500 s")
    assert render_text(HISTORY, {"model": "m"}) == plain_text("", "error")
    # a row is matched by its message and id: one for another message, or a malformed one, shows nothing
    elsewhere = [dict(TIMED[0], turn=3), {"tool_call_id": "call_2", "name": "get_weather", "turn": 2}]
    assert render_text(HISTORY, {"model": "m"}, elsewhere) == plain_text("", "error")


def test_save_trace_writes_only_the_row_fields(tmp_path):
    extra = [dict(TIMED[0], arguments={"city": "Paris"}, api_key=KEY), TIMED[1]]
    paths = save_trace("t", "m", HISTORY, {}, root=str(tmp_path), tool_calls=extra)
    document = json.loads(read(paths["json"]))
    assert document["tool_calls"] == TIMED
    assert KEY not in read(paths["json"]) and KEY not in read(paths["txt"])
    with pytest.raises(ValueError, match="tool_calls row needs"):
        save_trace("t", "m", HISTORY, {}, root=str(tmp_path), tool_calls=[dict(TIMED[0], seconds=-1)])
    assert json.loads(read(paths["json"]))["tool_calls"] == TIMED  # nothing written by the refused call


def test_an_older_trace_file_loads_and_renders_as_before(tmp_path, capsys):
    """A file written before tool_calls existed (no "tool_calls", no "routes"): load_trace, render_text,
    `agenthub trace show` and the viewer's page take it as they did."""
    old = {"trace_id": "old/run", "model": "m", "timestamp": 1764460800000, "config": {"model": "m"},
           "history": HISTORY}
    path = tmp_path / "old" / "run.json"
    path.parent.mkdir()
    path.write_text(json.dumps(old), encoding="utf-8")
    document = load_trace(str(path))
    assert document == old
    assert render_text(document["history"], document["config"], document.get("tool_calls")) == \
        plain_text("", "error")
    assert main(["trace", "show", str(path)]) == 0
    assert capsys.readouterr().out == plain_text("", "error")
    assert b'"tool_calls"' not in page({"page": "trace", "trace_id": "old/run", "trace": old})


def test_trace_show_prints_the_durations(tmp_path, capsys):
    paths = save_trace("t", "m", HISTORY, {}, root=str(tmp_path), tool_calls=TIMED)
    assert main(["trace", "show", paths["json"]]) == 0
    assert capsys.readouterr().out == plain_text(" (0.012 s)", "error, 1.500 s")
    assert read(paths["txt"]) == plain_text(" (0.012 s)", "error, 1.500 s")


class FakeRun(object):
    """What RunTrace reads of a run."""

    def __init__(self, history, route=None):
        self.conversation = list(history)
        self.route = route
        self.config = {"trace_id": "t"}
        self.client = type("C", (), {"model": "m"})()

    def history(self):
        return list(self.conversation)


def test_the_run_trace_carries_on_this_conversations_rows_and_drops_another_ones(cache):
    """The one writer of a run holds its rows and routes in memory; what an earlier run of the same
    conversation wrote is read once, when the run starts; another conversation's is not kept."""
    first = HISTORY[:2] + [{"role": "user", "content_items": [HISTORY[2]["content_items"][0]]}]
    save_trace("t", "m", HISTORY[:2], {}, routes=[{"model": "m", "turn": 1}])
    writer = RunTrace("t")
    run = FakeRun(HISTORY[:2])
    writer.on_run_start(run)
    writer.after_call(HISTORY[1]["content_items"][0], HISTORY[2]["content_items"][0], 0.0123)
    run.conversation = first
    writer.on_results(run, first[-1])
    document = json.loads(read(trace_paths("t")["json"]))
    assert (document["tool_calls"], document["routes"]) == ([TIMED[0]], [{"model": "m", "turn": 1}])
    # a later run of the same conversation keeps the earlier rows and adds its own
    call = {"type": "tool_call", "name": "get_weather", "arguments": {}, "tool_call_id": "call_3"}
    later = first + [{"role": "assistant", "content_items": [call]},
                     {"role": "user", "content_items": [{"type": "tool_result", "tool_call_id": "call_3", "text": "?"}]}]
    writer = RunTrace("t")
    run = FakeRun(later[:-1])
    writer.on_run_start(run)
    writer.after_call(call, later[-1]["content_items"][0], 0.5)
    run.conversation = later
    writer.on_results(run, later[-1])
    row = {"tool_call_id": "call_3", "name": "get_weather", "seconds": 0.5, "is_error": False}
    assert json.loads(read(trace_paths("t")["json"]))["tool_calls"] == [TIMED[0], dict(row, turn=4)]
    # another conversation under the same trace_id (a rerun): none of the old rows or routes stay
    other = [{"role": "user", "content_items": [{"type": "text", "text": "Another question"}]}] + later[1:]
    writer = RunTrace("t")
    run = FakeRun(other[:-1])
    writer.on_run_start(run)
    writer.after_call(call, later[-1]["content_items"][0], 0.5)
    run.conversation = other
    writer.on_results(run, other[-1])
    document = json.loads(read(trace_paths("t")["json"]))
    assert document["tool_calls"] == [dict(row, turn=4)] and "routes" not in document


# -- the viewer ---------------------------------------------------------------------------------------

#: a DOM of a few lines, enough for dom.js and viewer.js: prints the text of <main>, one line per block
DOM_SHIM = r"""
function Node(tag) { this.tagName = tag; this.children = []; this._text = null; this.className = ""; }
Node.prototype.appendChild = function (c) { this.children.push(c); return c; };
Object.defineProperty(Node.prototype, "textContent", {
  get: function () { return this._text !== null ? this._text : this.children.map(function (c) { return c.textContent; }).join(""); },
  set: function (v) { this._text = String(v); this.children = []; }
});
var html = require("fs").readFileSync(process.argv[1], "utf8"), byId = {};
var tag = '<script id="data" type="application/json">';
var data = html.slice(html.indexOf(tag) + tag.length);
data = data.slice(0, data.indexOf("</script>"));
global.document = {
  title: "",
  createElement: function (t) { return new Node(t); },
  createTextNode: function (t) { var n = new Node("#text"); n._text = String(t); return n; },
  getElementById: function (id) { return id === "data" ? {textContent: data} : (byId[id] || (byId[id] = new Node(id))); }
};
var scripts = html.split("<script>"), code = scripts[scripts.length - 1];
(0, eval)(code.slice(0, code.indexOf("</script>")));
var BLOCK = {div: 1, section: 1, pre: 1, h2: 1, details: 1, summary: 1, p: 1, tr: 1}, out = [], line = [];
function walk(n) {
  if (BLOCK[n.tagName] && line.length) { out.push(line.join(" ")); line = []; }
  if (n._text) { line.push(n._text); }
  n.children.forEach(walk);
  if (BLOCK[n.tagName] && line.length) { out.push(line.join(" ")); line = []; }
}
walk(byId.main);
if (line.length) { out.push(line.join(" ")); }
process.stdout.write(out.join("\n") + "\n");
"""


def test_the_viewer_shows_each_duration_beside_its_result(tmp_path):
    node = shutil.which("node") or shutil.which("nodejs")
    if node is None:
        pytest.skip("no Node.js to run the viewer's script")
    paths = save_trace("t", "m", HISTORY, {}, root=str(tmp_path), tool_calls=TIMED)
    seen = {}
    for name, trace in (("timed", json.loads(read(paths["json"]))), ("old", {"model": "m", "history": HISTORY})):
        html = tmp_path / (name + ".html")
        html.write_bytes(page({"page": "trace", "root": str(tmp_path), "traces": [], "trace_id": "t", "trace": trace}))
        result = subprocess.run([node, "-e", DOM_SHIM, str(html)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                timeout=60)
        assert result.returncode == 0, result.stderr.decode(errors="replace")
        seen[name] = result.stdout.decode("utf-8").splitlines()
    assert seen["timed"][seen["timed"].index("User #2"):] == [
        "User #2",
        "Tool result get_weather call_1 0.012 s", "18 C, sunny",
        "Tool result get_weather call_2 error 1.500 s", "ValueError: no station in Rome",
        "Assistant #3", "Sunny in Paris.", "Finish: stop · Tokens: prompt ? · cached ? · thinking ? · response ?"]
    assert seen["old"][seen["old"].index("User #2"):][:5] == [
        "User #2",
        "Tool result get_weather call_1", "18 C, sunny",
        "Tool result get_weather call_2 error", "ValueError: no station in Rome"]


def test_the_viewer_shows_arguments_spelling_the_bytes_marker_as_the_model_wrote_them(tmp_path):
    """The trace keeps arguments of the one key ``__bytes__`` escaped ({"__bytes__": ["AAAA"]}, so they never read
    back as bytes); the page shows them as the model wrote them."""
    node = shutil.which("node") or shutil.which("nodejs")
    if node is None:
        pytest.skip("no Node.js to run the viewer's script")
    history = [{"role": "user", "content_items": [{"type": "text", "text": "go"}]},
               {"role": "assistant", "content_items": [{"type": "tool_call", "name": "f", "tool_call_id": "c1",
                                                        "arguments": {"a": {"__bytes__": "AAAA"}}}]}]
    paths = save_trace("t", "m", history, {}, root=str(tmp_path))
    trace = json.loads(read(paths["json"]))
    assert trace["history"][1]["content_items"][0]["arguments"] == {"a": {"__bytes__": ["AAAA"]}}
    html = tmp_path / "t.html"
    html.write_bytes(page({"page": "trace", "root": str(tmp_path), "traces": [], "trace_id": "t", "trace": trace}))
    result = subprocess.run([node, "-e", DOM_SHIM, str(html)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            timeout=60)
    assert result.returncode == 0, result.stderr.decode(errors="replace")
    shown = result.stdout.decode("utf-8")
    assert '"__bytes__": "AAAA"' in shown and "[" not in shown.split('"__bytes__"', 1)[1].split("}", 1)[0]
