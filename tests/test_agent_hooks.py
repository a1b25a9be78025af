"""The seam of the tool runner (issue 36 item 2): ``agenthub.agent.ToolHook`` around a run and each tool call,
given per run (``client.run(..., hooks=[...])``) or on the client (``AutoLLMClient(hooks=[...])``); the
tracer's rows and telemetry's spans hang on it, and a traced run has one trace writer.

Exact calls to the hooks, in order; no timed assertions."""

import json
import threading

import pytest
from agent_streams import chat_calls, chat_text
from sse_server import Answer, SSEServer

from agenthub import AutoLLMClient, ConfigError, tool
from agenthub.agent import ToolHook
from agenthub.attempts import AttemptHook

USER = {"role": "user", "content_items": [{"type": "text", "text": "Weather in Paris and Rome?"}]}
TWO = [("c1", "get_weather", '{"city": "Paris"}'), ("c2", "get_weather", '{"city": "Rome"}')]


@tool
def get_weather(city: str) -> str:
    """Current weather in a city."""
    return {"Paris": "18 C", "Rome": "24 C"}.get(city, "unknown")


def client_for(server, **kwargs):
    return AutoLLMClient("gpt-4o-mini", api_key="sk-test-hooks-0001", base_url=server.url + "/v1",
                         client_type="openai-chat", max_retries=0, **kwargs)


class Recorder(ToolHook):
    """Every call to it, as (method, what it got); ``decide``: before_call's answers by tool_call_id."""

    def __init__(self, decide=None):
        self.seen = []
        self.decide = decide or {}
        self.threads = set()

    def on_run_start(self, run):
        self.seen.append(("on_run_start", run.turns))

    def around_request(self, run, proceed):
        self.seen.append(("around_request", run.turns))
        return proceed()

    def on_turn(self, run, message):
        self.seen.append(("on_turn", [i["type"] for i in message["content_items"]]))

    def before_call(self, call):
        self.seen.append(("before_call", call["tool_call_id"], call["arguments"]))
        return self.decide.get(call["tool_call_id"])

    def around_call(self, run, call, proceed):
        self.threads.add(threading.get_ident())
        item = proceed()
        self.seen.append(("around_call", call["tool_call_id"], call["arguments"], item["text"]))
        return item

    def after_call(self, call, result, seconds):
        assert isinstance(seconds, float) and seconds >= 0
        self.seen.append(("after_call", call["tool_call_id"], result["text"], bool(result.get("is_error"))))

    def on_results(self, run, message):
        self.seen.append(("on_results", [i["tool_call_id"] for i in message["content_items"]]))

    def on_run_end(self, run, error):
        self.seen.append(("on_run_end", run.stop, type(error).__name__ if error else None))


def test_a_runs_hooks_see_each_turn_and_call_in_order_and_may_deny_or_change_arguments():
    hook = Recorder(decide={"c1": {"arguments": {"city": "Rome"}}, "c2": "not Rome"})
    with SSEServer() as server:
        server.answers += [Answer([chat_calls(TWO)]), Answer([chat_text("ok")])]
        result = client_for(server).run([USER], tools=[get_weather], hooks=[hook], parallel=1).result()
    assert result.stop == "done"
    assert hook.seen == [
        ("on_run_start", 0),
        ("around_request", 0),
        ("on_turn", ["tool_call", "tool_call"]),
        ("before_call", "c1", {"city": "Paris"}),
        ("before_call", "c2", {"city": "Rome"}),
        ("around_call", "c1", {"city": "Rome"}, "24 C"),  # the arguments the hook gave
        ("after_call", "c1", "24 C", False),
        ("after_call", "c2", "denied: not Rome", True),  # denied: never ran (no around_call)
        ("on_results", ["c1", "c2"]),
        ("around_request", 1),
        ("on_turn", ["text"]),
        ("on_run_end", "done", None),
    ]


def test_around_call_runs_in_the_thread_that_runs_the_tool_and_after_call_in_the_runs():
    hook = Recorder()
    after = []
    hook.after_call = lambda call, result, seconds: after.append(threading.get_ident())
    with SSEServer() as server:
        server.answers += [Answer([chat_calls(TWO)]), Answer([chat_text("ok")])]
        client_for(server).run([USER], tools=[get_weather], hooks=[hook], parallel=2).result()
    assert threading.get_ident() not in hook.threads and len(hook.threads) >= 1
    assert after == [threading.get_ident()] * 2


def test_a_clients_hooks_apply_to_its_runs_and_one_object_may_be_both_kinds():
    class Both(AttemptHook, ToolHook):
        def __init__(self):
            self.calls, self.tools = 0, []

        def on_call_start(self, call):
            self.calls += 1

        def after_call(self, call, result, seconds):
            self.tools.append(call["tool_call_id"])

    both, only_tools = Both(), Recorder()
    with SSEServer() as server:
        server.answers += [Answer([chat_calls(TWO)]), Answer([chat_text("ok")])]
        client = client_for(server, hooks=[both, only_tools])
        assert client.hooks == (both,)  # a ToolHook alone is no attempt-loop hook
        client.run([USER], tools=[get_weather]).result()
    assert both.calls == 2 and both.tools == ["c1", "c2"]
    assert [s[0] for s in only_tools.seen].count("after_call") == 2


def test_a_hook_that_is_neither_kind_is_refused():
    with pytest.raises(ConfigError, match="ToolHook"):
        AutoLLMClient("gpt-4o-mini", api_key="k", client_type="openai-chat", hooks=[object()])
    client = AutoLLMClient("gpt-4o-mini", api_key="k", client_type="openai-chat", base_url="http://127.0.0.1:9/v1")
    with pytest.raises(ConfigError, match="ToolHook"):
        client.run([USER], tools=[get_weather], hooks=[object()])
    with pytest.raises(ConfigError, match="hooks must be a list"):
        client.run([USER], tools=[get_weather], hooks=Recorder())


def test_on_run_end_gets_the_error_a_model_call_raised():
    hook = Recorder()
    with SSEServer() as server:
        server.answers += [Answer([chat_calls(TWO)]),
                           Answer([b'{"error": {"message": "overloaded"}}'], status=503,
                                  headers={"Content-Type": "application/json"})]
        run = client_for(server).run([USER], tools=[get_weather], hooks=[hook])
        with pytest.raises(Exception):
            run.result()
    assert hook.seen[-1] == ("on_run_end", None, "ServerError")


def test_a_traced_run_has_one_writer_and_reads_its_trace_file_once(tmp_path, monkeypatch):
    """No second writer: the run's turns go without trace_id (the client's per-call TraceHook does not
    write), the run's RunTrace writes once per turn and once per turn's results, and reads the file only
    when it starts (to carry on an earlier run of the same conversation)."""
    monkeypatch.setenv("AGENTHUB_CACHE_DIR", str(tmp_path))
    from agenthub import tracer

    writes, reads = [], []
    save, previous = tracer.save_trace, tracer._previous
    monkeypatch.setattr(tracer, "save_trace", lambda *a, **k: writes.append(len(a[2])) or save(*a, **k))
    monkeypatch.setattr(tracer, "_previous", lambda *a: reads.append(1) or previous(*a))
    with SSEServer() as server:
        server.answers += [Answer([chat_calls(TWO)]), Answer([chat_calls(TWO)]), Answer([chat_text("ok")])]
        client_for(server).run([USER], {"trace_id": "one/writer"}, tools=[get_weather]).result()
        sent = [r["body"] for r in server.requests]
    assert writes == [2, 3, 4, 5, 6]  # turn, results, turn, results, turn: each write the history so far
    assert reads == [1]
    assert all("trace_id" not in json.dumps(body) for body in sent)
    with open(str(tmp_path / "one" / "writer.json"), encoding="utf-8") as handle:
        document = json.load(handle)
    assert document["config"]["trace_id"] == "one/writer"
    assert [(r["tool_call_id"], r["turn"]) for r in document["tool_calls"]] == [("c1", 2), ("c2", 2), ("c1", 4),
                                                                                ("c2", 4)]
    assert [r["turn"] for r in document["routes"]] == [1, 3, 5]


def test_public_names():
    import agenthub.agent

    assert set(agenthub.agent.__all__) == {"Tool", "tool", "Run", "RunResult", "ToolHook", "call_digest",
                                          "current_call", "CallContext", "JournalError", "RunLockedError"}
    from agenthub.agent.hooks import TOOL_HOOK_METHODS

    assert TOOL_HOOK_METHODS == ("on_run_start", "around_request", "on_turn", "before_call", "around_call",
                                 "after_call", "on_results", "on_run_end")
    assert all(callable(getattr(ToolHook, name)) for name in TOOL_HOOK_METHODS)


def test_telemetrys_spans_hang_on_the_seam_from_whichever_thread_runs_the_tool():
    """execute_tool is a child of invoke_agent on worker threads too, and a span made inside the tool (an
    MCP request's) nests under its execute_tool, so under the run; the turns' call spans are the run's."""
    pytest.importorskip("opentelemetry.sdk.trace")
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from agenthub import telemetry

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))

    @tool
    def lookup(city: str) -> str:
        """Look up a city."""
        with telemetry.mcp_span("tools/call", target="lookup"):
            return city

    telemetry.instrument(provider)
    try:
        with SSEServer() as server:
            server.answers += [Answer([chat_calls([("c1", "lookup", '{"city": "Paris"}'),
                                                   ("c2", "lookup", '{"city": "Rome"}')])]),
                               Answer([chat_text("ok")])]
            client_for(server).run([USER], tools=[lookup], parallel=2).result()
    finally:
        telemetry.uninstrument()
        provider.shutdown()
    spans = exporter.get_finished_spans()
    (run,) = [s for s in spans if s.name == "invoke_agent"]
    tools = [s for s in spans if s.name == "execute_tool lookup"]
    calls = [s for s in spans if s.name.startswith("chat ")]
    mcp = [s for s in spans if s.name.startswith("tools/call")]
    assert len(tools) == 2 and all(t.parent.span_id == run.context.span_id for t in tools)
    assert len(calls) == 2 and all(c.parent.span_id == run.context.span_id for c in calls)
    assert len(mcp) == 2 and {m.parent.span_id for m in mcp} == {t.context.span_id for t in tools}


class _FailsAfter(ToolHook):
    """after_call raises for ``call_id`` (``after``: once that event is set, and the call that set it has
    handed its result over); records what the hooks heard."""

    def __init__(self, call_id, after=None):
        self.call_id = call_id
        self.after = after
        self.heard = []

    def after_call(self, call, result, seconds):
        import time

        self.heard.append(("after_call", call["tool_call_id"]))
        if call["tool_call_id"] == self.call_id:
            if self.after is not None:
                assert self.after.wait(30)
                time.sleep(0.3)  # (its thread hands its result over meanwhile)
            raise RuntimeError("the audit log is down")

    def on_results(self, run, message):
        self.heard.append(("on_results",))


ran_calls = []
booked = threading.Event()


@tool
def look_up(city: str) -> str:
    """Look a city up."""
    ran_calls.append(("look_up", city))
    return city + ": open"


@tool(idempotent=False)
def book(city: str) -> str:
    """Book (not safe to repeat)."""
    ran_calls.append(("book", city))
    booked.set()
    return "booked " + city


BOTH = [("c1", "look_up", '{"city": "Rome"}'), ("c2", "book", '{"city": "Rome"}')]


@pytest.mark.parametrize("stateful", [False, True])
def test_an_after_call_hook_that_raises_keeps_the_results_of_the_calls_that_ran(stateful):
    """A hook's exception still ends the run, once the turn's calls that ran are in run.messages (and the
    client's history): the documented resume sends their results and runs neither again."""
    del ran_calls[:]
    booked.clear()
    hook = _FailsAfter("c1", after=booked)  # (book has run when c1's hook raises)
    with SSEServer() as server:
        server.answers += [Answer([chat_calls(BOTH)]), Answer([chat_text("Booked.")])]
        client = client_for(server)
        run = client.run_stateful(USER, tools=[look_up, book], hooks=[hook]) if stateful else \
            client.run([USER], tools=[look_up, book], hooks=[hook])
        with pytest.raises(RuntimeError, match="the audit log is down"):
            run.result()
        assert sorted(ran_calls) == [("book", "Rome"), ("look_up", "Rome")]
        assert hook.heard == [("after_call", "c1")]  # no hook heard of anything after
        results = [(i["tool_call_id"], i["text"]) for i in run.messages[-1]["content_items"]]
        assert [m["role"] for m in run.messages] == ["assistant", "user"]
        assert sorted(results) == [("c1", "Rome: open"), ("c2", "booked Rome")]
        resumed = client.run_stateful(None, tools=[look_up, book]) if stateful else \
            client.run([USER] + run.messages, tools=[look_up, book])
        assert resumed.result().stop == "done"
    assert len(ran_calls) == 2 and len(server.requests) == 2
    assert [(m["tool_call_id"], m["content"]) for m in server.requests[1]["body"]["messages"]
            if m["role"] == "tool"] == [("c1", "Rome: open"), ("c2", "booked Rome")]


def test_an_after_call_hook_that_raises_starts_no_more_calls_and_the_journal_keeps_those_that_ran():
    from agenthub.stores import MemoryStore

    del ran_calls[:]
    store = MemoryStore()
    with SSEServer() as server:
        server.answers += [Answer([chat_calls(BOTH)]), Answer([chat_text("Booked.")])]
        client = client_for(server)
        run = client.run([USER], tools=[look_up, book], hooks=[_FailsAfter("c1")], parallel=1, journal=store,
                         run_id="trip")
        with pytest.raises(RuntimeError, match="the audit log is down"):
            run.result()
        assert ran_calls == [("look_up", "Rome")]  # one at a time: book never started
        assert [(i["tool_call_id"], i["text"]) for i in run.messages[-1]["content_items"]] == [("c1", "Rome: open")]
        resumed = client.run([USER], tools=[look_up, book], journal=store, run_id="trip").result()
    # book was journaled as starting with the turn (at most once): handed back, not run
    assert (resumed.stop, resumed.interrupted, resumed.replayed_results) == ("approval", ["c2"], 0)
    assert ran_calls == [("look_up", "Rome")] and len(server.requests) == 1


def test_an_after_call_hook_that_raises_in_a_threaded_turn_journals_the_side_effect_that_ran():
    """book (c2) returns while look_up (c1) still runs; c1's hook raises: book's result, in before the run
    reads it in call order, is journaled, not lost (the resume would hand book back as interrupted)."""
    import time
    from agenthub.stores import MemoryStore

    booked = threading.Event()

    @tool(name="look_up", timeout=30)  # (a timeout: each call on a thread of its own)
    def slow_look_up(city: str) -> str:
        """Look a city up."""
        assert booked.wait(30)
        time.sleep(0.3)  # (book's thread hands its result over meanwhile)
        ran_calls.append(("look_up", city))
        return city + ": open"

    @tool(name="book", idempotent=False)
    def booking(city: str) -> str:
        """Book (not safe to repeat)."""
        ran_calls.append(("book", city))
        booked.set()
        return "booked " + city

    del ran_calls[:]
    store = MemoryStore()
    tools = [slow_look_up, booking]
    with SSEServer() as server:
        server.answers += [Answer([chat_calls(BOTH)]), Answer([chat_text("Booked.")])]
        client = client_for(server)
        with pytest.raises(RuntimeError, match="the audit log is down"):
            client.run([USER], tools=tools, hooks=[_FailsAfter("c1")], journal=store, run_id="trip").result()
        resumed = client.run([USER], tools=tools, journal=store, run_id="trip").result()
    assert (resumed.stop, resumed.interrupted, resumed.replayed_results) == ("done", [], 2)
    assert ran_calls == [("book", "Rome"), ("look_up", "Rome")] and len(server.requests) == 2


@pytest.mark.parametrize("journaled", [False, True])
def test_a_run_closed_by_its_reader_mid_results_keeps_the_results_of_the_calls_that_ran(journaled):
    """close() after the first result event: book, which ran meanwhile, is in run.messages (and the journal),
    as after abort(): the resume runs neither call again."""
    import time
    from agenthub.stores import MemoryStore

    booked_too = threading.Event()

    @tool(name="look_up", timeout=30)
    def slow_look_up(city: str) -> str:
        """Look a city up."""
        assert booked_too.wait(30)
        time.sleep(0.3)  # (book's thread hands its result over meanwhile)
        ran_calls.append(("look_up", city))
        return city + ": open"

    @tool(name="book", idempotent=False)
    def booking(city: str) -> str:
        """Book (not safe to repeat)."""
        ran_calls.append(("book", city))
        booked_too.set()
        return "booked " + city

    del ran_calls[:]
    tools = [slow_look_up, booking]
    kwargs = {"journal": MemoryStore(), "run_id": "trip"} if journaled else {}
    with SSEServer() as server:
        server.answers += [Answer([chat_calls(BOTH)]), Answer([chat_text("Booked.")])]
        client = client_for(server)
        run = client.run([USER], tools=tools, **kwargs)
        seen = []
        for event in run:
            seen.append(event)
            if event["role"] == "user":
                break
        run.close()
        assert [i["tool_call_id"] for i in seen[-1]["content_items"]] == ["c1"]
        assert [(i["tool_call_id"], i["text"]) for i in run.messages[-1]["content_items"]] == [
            ("c1", "Rome: open"), ("c2", "booked Rome")]
        resumed = client.run([USER], tools=tools, **kwargs) if journaled else \
            client.run([USER] + run.messages, tools=tools)
        result = resumed.result()
    assert (result.stop, result.interrupted, result.replayed_results) == ("done", [], 2 if journaled else 0)
    assert ran_calls == [("book", "Rome"), ("look_up", "Rome")] and len(server.requests) == 2


def test_an_around_call_hook_that_retries_does_not_run_a_side_effect_twice():
    """A generic retry hook: proceed() again after a failure.  An idempotent tool runs again; one declared
    idempotent=False does not: the second proceed() raises, and that is the call's error result."""
    attempts = []

    @tool(name="flaky_look_up")
    def flaky_look_up(city: str) -> str:
        """Look a city up."""
        attempts.append(("look_up", city))
        if len(attempts) == 1:
            raise TimeoutError("slow upstream")
        return city + ": open"

    @tool(name="flaky_book", idempotent=False)
    def flaky_book(city: str) -> str:
        """Book (not safe to repeat)."""
        attempts.append(("book", city))
        raise TimeoutError("the booking API did not answer (it may have booked)")

    class Retry(ToolHook):
        def around_call(self, run, call, proceed):
            try:
                return proceed()
            except TimeoutError:
                return proceed()

    calls = [("c1", "flaky_look_up", '{"city": "Rome"}'), ("c2", "flaky_book", '{"city": "Rome"}')]
    with SSEServer() as server:
        server.answers += [Answer([chat_calls(calls)]), Answer([chat_text("Done.")])]
        result = client_for(server).run([USER], tools=[flaky_look_up, flaky_book], hooks=[Retry()],
                                        parallel=1).result()
    assert attempts == [("look_up", "Rome"), ("look_up", "Rome"), ("book", "Rome")]
    assert [(i["tool_call_id"], i["text"], i.get("is_error", False)) for i in result.messages[1]["content_items"]] == [
        ("c1", "Rome: open", False),
        ("c2", "ConfigError: tool 'flaky_book' is declared idempotent=False: an around_call hook may proceed() once "
               "(it ran already)", True)]


def test_an_on_run_start_that_raises_ends_the_run_and_lets_its_journal_claim_go():
    """A hook's on_run_start raising: nothing is sent, every hook's on_run_end hears the error (one that opened
    something at its start closes it), and a journaled run's claim is let go at once: the same run_id runs."""
    from agenthub.stores import MemoryStore

    class Boom(ToolHook):
        def on_run_start(self, run):
            raise RuntimeError("cannot start")

    class Ends(ToolHook):
        def __init__(self):
            self.seen = []

        def on_run_start(self, run):
            self.seen.append("start")

        def on_run_end(self, run, error):
            self.seen.append(("end", repr(error)))

    store = MemoryStore()
    ends = Ends()
    with SSEServer() as server:
        server.answers += [Answer([chat_text("Done.")])]
        with pytest.raises(RuntimeError) as info:
            client_for(server).run([USER], tools=[get_weather], hooks=[ends, Boom()], journal=store,
                                   run_id="hooked-1").result()
        assert str(info.value) == "cannot start" and server.requests == []
        assert ends.seen == ["start", ("end", "RuntimeError('cannot start')")]
        again = client_for(server).run([USER], tools=[get_weather], journal=store, run_id="hooked-1").result()
    assert (again.stop, again.replayed_turns, len(server.requests)) == ("done", 0, 1)


class _Forgot(ToolHook):
    def around_call(self, run, call, proceed):
        proceed()  # (no return: None)


class _TextOnly(ToolHook):
    def around_call(self, run, call, proceed):
        return proceed()["text"]


class _Cached(ToolHook):
    def around_call(self, run, call, proceed):  # an item of its own, without the call's id
        return {"type": "tool_result", "text": "cached " + call["arguments"]["city"]}


@pytest.mark.parametrize("calls", [1, 2])  # inline, and on the run's threads
@pytest.mark.parametrize("hook, texts", [
    # (the tool ran: the model hears what it returned beside the hook's failure, not a failure to run it)
    (_Forgot(), ["get_weather ran and returned: {}; then an around_call hook failed: ConfigError: an around_call "
                 "hook returned a NoneType, not the tool_result item proceed() returns".format(weather)
                 for weather in ("18 C", "24 C")]),
    (_TextOnly(), ["get_weather ran and returned: {}; then an around_call hook failed: ConfigError: an around_call "
                   "hook returned a str, not the tool_result item proceed() returns".format(weather)
                   for weather in ("18 C", "24 C")]),
    (_Cached(), ["cached Paris", "cached Rome"]),
])
def test_an_around_call_that_returns_no_tool_result_item_is_the_calls_error_result(calls, hook, texts):
    cities = ["Paris", "Rome"][:calls]
    with SSEServer() as server:
        server.answers += [Answer([chat_calls([("c{}".format(n), "get_weather", json.dumps({"city": city}))
                                               for n, city in enumerate(cities)])]), Answer([chat_text("ok")])]
        result = client_for(server).run([USER], tools=[get_weather], hooks=[hook]).result()
    error = isinstance(hook, (_Forgot, _TextOnly))
    assert result.stop == "done"
    assert result.messages[1]["content_items"] == [
        dict({"type": "tool_result", "tool_call_id": "c{}".format(n), "text": texts[n]}, **({"is_error": True}
                                                                                          if error else {}))
        for n in range(calls)]


class _NoReturn(ToolHook):
    def around_request(self, run, proceed):
        proceed()  # (no return: None)


class _OwnValue(ToolHook):
    def around_request(self, run, proceed):
        proceed()
        return {"note": "a value of its own"}


class _Twice(ToolHook):
    def around_request(self, run, proceed):
        proceed()
        return proceed()


class _Skips(ToolHook):
    def around_request(self, run, proceed):
        return None


class _Swallows(ToolHook):
    def around_request(self, run, proceed):
        try:
            return proceed()
        except Exception:
            return None


@pytest.mark.parametrize("hook", [_NoReturn(), _OwnValue()])
def test_an_around_request_that_returns_another_value_loses_no_turn(hook):
    """The turn is what proceed() read, whatever the hook returns: its answer, usage and cost are the run's (a
    hook that returned None made the paid turn an empty answer with no usage; another value, a KeyError)."""
    with SSEServer() as server:
        server.answers += [Answer([chat_calls([("c1", "get_weather", '{"city": "Paris"}')])]),
                           Answer([chat_text("Sunny.")])]
        result = client_for(server).run([USER], tools=[get_weather], hooks=[hook]).result()
    assert result.final["content_items"] == [{"type": "text", "text": "Sunny."}]
    assert result.messages[1]["content_items"] == [{"type": "tool_result", "tool_call_id": "c1",
                                                    "text": "18 C"}]
    assert (result.turns, result.usage_metadata["prompt_tokens"], result.usage_metadata["response_tokens"]) == \
        (2, 30, 8)


@pytest.mark.parametrize("hook, message", [
    (_Twice(), "an around_request hook called proceed() twice: it sends the turn once"),
    (_Skips(), "an around_request hook returned without calling proceed(): the turn was not sent"),
])
def test_an_around_request_that_skips_or_repeats_proceed_is_a_config_error(hook, message):
    with SSEServer() as server:
        server.answers += [Answer([chat_text("Sunny.")])]
        with pytest.raises(ConfigError) as info:
            client_for(server).run([USER], tools=[get_weather], hooks=[hook]).result()
        assert len(server.requests) == (1 if isinstance(hook, _Twice) else 0)
    assert str(info.value) == message


def test_an_around_request_cannot_swallow_the_turns_error():
    from agenthub import ServerError

    with SSEServer() as server:
        server.answers += [Answer([b'{"error": {"message": "overloaded", "type": "server_error"}}'], status=503,
                                  headers={"Content-Type": "application/json"})]
        with pytest.raises(ServerError):
            client_for(server).run([USER], tools=[get_weather], hooks=[_Swallows()]).result()


def test_a_before_call_answer_of_the_wrong_kind_names_none_among_the_right_ones():
    """before_call may return None (no say: go on); the error for a wrong answer lists it with the others."""
    with SSEServer() as server:
        server.answers += [Answer([chat_calls(TWO)]), Answer([chat_text("ok")])]
        with pytest.raises(ConfigError) as info:
            client_for(server).run([USER], tools=[get_weather], hooks=[Recorder(decide={"c1": 5})]).result()
    assert str(info.value) == ("a hook's before_call answer for c1 must be None (no say), True, False, a reason "
                               "(str) or {'arguments': {...}} (got int)")


def test_an_on_run_end_that_raises_keeps_the_runs_own_error_and_every_hook_hears_the_end(caplog):
    """The run's error stands (an on_run_end that raised replaced it: the caller saw the hook's RuntimeError, not
    the ServerError), the hooks after it still hear the end (the trace writer's, telemetry's span), and the hook's
    error is logged; on a run that ended well the hook's error is raised, after every hook heard the end."""
    class Bad(ToolHook):
        def on_run_end(self, run, error):
            raise RuntimeError("the hook broke")

    with SSEServer() as server:
        server.answers += [Answer([b'{"error": {"message": "overloaded"}}'], status=503,
                                  headers={"Content-Type": "application/json"}),
                           Answer([chat_text("Done.")])]
        after = Recorder()
        with caplog.at_level("WARNING", logger="agenthub"):
            with pytest.raises(Exception) as info:
                client_for(server).run([USER], tools=[get_weather], hooks=[Bad(), after]).result()
        assert type(info.value).__name__ == "ServerError"
        assert after.seen[-1] == ("on_run_end", None, "ServerError")
        assert [record.getMessage() for record in caplog.records] == [
            "an on_run_end hook (Bad) raised RuntimeError; the run's own error (ServerError) stands"]
        caplog.clear()
        after = Recorder()
        with pytest.raises(RuntimeError) as info:
            client_for(server).run([USER], tools=[get_weather], hooks=[Bad(), after]).result()
        assert str(info.value) == "the hook broke"
        assert after.seen[-1] == ("on_run_end", "done", None)
        assert caplog.records == []
