"""The tool runner under what breaks runs (issue 37 A2, A6, B1, B5, B6, B7; adversarial4 T01, T03, T04, T05,
T11, T12): exact results and request bodies; every wait has a deadline, no thread is left behind."""

import json
import threading
import time

import pytest
from agent_streams import chat_calls, chat_text
from sse_server import Answer, SSEServer

from agenthub import AutoLLMClient, ServerError, tool

KEY = "sk-test-hardening-0001"
USER = {"role": "user", "content_items": [{"type": "text", "text": "Go."}]}
DOWN = Answer([b'{"error": {"message": "overloaded", "type": "server_error"}}'], status=503,
              headers={"Content-Type": "application/json"})
TWO = [("c1", "slow", "{}"), ("c2", "fast", "{}")]


def client_for(server, model="gpt-4o-mini", **kwargs):
    kwargs.setdefault("client_type", "openai-chat")
    return AutoLLMClient(model, api_key=KEY, base_url=server.url + "/v1", max_retries=0, **kwargs)


def tool_results(request):
    return [m for m in request["body"]["messages"] if m["role"] == "tool"]


def in_thread(target, seconds=30):
    """Run ``target`` on a thread; (its return value or exception, whether it ended within ``seconds``)."""
    out = {}

    def run():
        try:
            out["value"] = target()
        except BaseException as exc:  # noqa: B902 - what the run raised is the answer
            out["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    return out, not thread.is_alive()


# -- B6 (T01): arguments JSON cannot carry back ------------------------------------------------------------------

@tool
def scale(factor: float, label: str = "") -> str:
    """Scale by a factor."""
    return "scaled {} {}".format(factor, label)


@pytest.mark.parametrize("arguments, why", [
    ('{"factor": NaN}', "NaN is not a JSON number"),
    ('{"factor": Infinity}', "Infinity is not a JSON number"),
    ('{"factor": -Infinity}', "-Infinity is not a JSON number"),
    ('{"factor": 1e400}', "1e400 is beyond a float's range"),
])
def test_nan_infinity_and_huge_numbers_are_unparseable_arguments_and_the_run_goes_on(arguments, why):
    with SSEServer() as server:
        server.answers += [Answer([chat_calls([("c1", "scale", arguments)])]), Answer([chat_text("ok")])]
        result = client_for(server).run([USER], tools=[scale]).result()
        sent = tool_results(server.requests[1])
    text = ("ToolCallArgumentParseError: arguments of tool call 'scale' (c1) is not valid JSON ({}); raw "
            "arguments ({} chars): {}".format(why, len(arguments), arguments))
    assert result.stop == "done"
    assert result.messages[1] == {"role": "user", "content_items": [
        {"type": "tool_result", "tool_call_id": "c1", "text": text, "is_error": True}]}
    assert sent == [{"role": "tool", "tool_call_id": "c1", "content": text}]


def test_a_lone_surrogate_is_unparseable_arguments_and_the_run_goes_on():
    arguments = '{"factor": 1.5, "label": "\\ud800"}'
    with SSEServer() as server:
        server.answers += [Answer([chat_calls([("c1", "scale", arguments)])]), Answer([chat_text("ok")])]
        result = client_for(server).run([USER], tools=[scale]).result()
    assert result.stop == "done"
    assert result.messages[1]["content_items"] == [{
        "type": "tool_result", "tool_call_id": "c1", "is_error": True,
        "text": "ToolCallArgumentParseError: arguments of tool call 'scale' (c1) hold a lone surrogate (a string no "
                "UTF-8 can carry); raw arguments ({} chars): {}".format(len(arguments), arguments)}]


# -- A2 (T12): results kept in the history as soon as the calls ran --------------------------------------------

def test_run_stateful_keeps_the_results_when_the_next_request_fails_and_the_resume_runs_no_call_again():
    charged = []

    @tool
    def charge_card(amount: int) -> str:
        """Charge the card."""
        charged.append(amount)
        return "charged {}".format(amount)

    with SSEServer() as server:
        server.answers += [Answer([chat_calls([("c1", "charge_card", '{"amount": 5}')])]), DOWN,
                           Answer([chat_text("Charged.")])]
        client = client_for(server)
        run = client.run_stateful(USER, tools=[charge_card])
        with pytest.raises(ServerError):
            run.result()
        assert [m["role"] for m in client.get_history()] == ["user", "assistant", "user"]
        assert client.get_history()[2]["content_items"] == [
            {"type": "tool_result", "tool_call_id": "c1", "text": "charged 5"}]
        result = client.run_stateful(None, tools=[charge_card]).result()
        third = server.requests[2]["body"]["messages"]
    assert charged == [5]
    assert result.stop == "done" and [m["role"] for m in result.messages] == ["assistant"]
    assert third[-1] == {"role": "tool", "tool_call_id": "c1", "content": "charged 5"}
    assert [m["role"] for m in client.get_history()] == ["user", "assistant", "user", "assistant"]


def test_run_stateful_resumed_with_a_new_message_sends_the_kept_results_with_it():
    with SSEServer() as server:
        server.answers += [Answer([chat_calls([("c1", "scale", '{"factor": 2}')])]), DOWN, Answer([chat_text("ok")])]
        client = client_for(server)
        with pytest.raises(ServerError):
            client.run_stateful(USER, tools=[scale]).result()
        more = {"role": "user", "content_items": [{"type": "text", "text": "And then?"}]}
        client.run_stateful(more, tools=[scale]).result()
        third = server.requests[2]["body"]["messages"]
    assert third[-2:] == [{"role": "tool", "tool_call_id": "c1", "content": "scaled 2.0 "},
                          {"role": "user", "content": "And then?"}]
    assert [m["role"] for m in client.get_history()] == ["user", "assistant", "user", "assistant"]


# -- A6 (T03): what an error text may not carry --------------------------------------------------------------

def test_a_tools_error_text_is_scrubbed_of_the_clients_key_url_passwords_tokens_and_env_secrets(monkeypatch,
                                                                                                 tmp_path):
    monkeypatch.setenv("AGENTHUB_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("DATABASE_URL", "postgres://app:db-pass-0042@db.internal/app")
    monkeypatch.setenv("GITHUB_PAT", "ghp_secretvalue0042")

    @tool
    def leak() -> str:
        """Fail loudly."""
        raise RuntimeError("key {} at https://u:pw0042@host/x?token=tok-0042&page=2 db db-pass-0042 pat "
                           "ghp_secretvalue0042".format(KEY))

    with SSEServer() as server:
        server.answers += [Answer([chat_calls([("c1", "leak", "{}")])]), Answer([chat_text("ok")])]
        result = client_for(server).run([USER], {"trace_id": "scrub"}, tools=[leak]).result()
        sent = json.dumps(server.requests[1]["body"])
    text = "RuntimeError: key *** at https://***@host/x?token=***&page=2 db *** pat ***"
    assert result.messages[1]["content_items"] == [
        {"type": "tool_result", "tool_call_id": "c1", "text": text, "is_error": True}]
    with open(str(tmp_path / "scrub.json"), encoding="utf-8") as handle:
        trace = handle.read()
    for secret in (KEY, "pw0042", "tok-0042", "db-pass-0042", "ghp_secretvalue0042"):
        assert secret not in sent and secret not in trace


def test_a_providers_error_result_is_scrubbed_too():
    class Server(object):
        def list_tools(self):
            return [{"name": "remote", "parameters": {"type": "object"}}]

        def call_tool(self, name, arguments):
            return {"type": "tool_result", "text": "denied for key " + KEY, "is_error": True}

    with SSEServer() as server:
        server.answers += [Answer([chat_calls([("c1", "remote", "{}")])]), Answer([chat_text("ok")])]
        result = client_for(server).run([USER], tools=[Server()]).result()
    assert result.messages[1]["content_items"] == [
        {"type": "tool_result", "tool_call_id": "c1", "text": "denied for key ***", "is_error": True}]


# -- B1 (T11): a tool ending in a BaseException on a worker thread ------------------------------------------------

def base_exception_tools(exc):
    @tool
    def slow() -> str:
        """Raise."""
        raise exc

    @tool
    def fast() -> str:
        """Answer."""
        return "fine"

    return [slow, fast]


def test_a_cancelled_error_on_a_worker_thread_is_an_error_result():
    import asyncio

    with SSEServer() as server:
        server.answers += [Answer([chat_calls(TWO)]), Answer([chat_text("ok")])]
        out, ended = in_thread(lambda: client_for(server).run(
            [USER], tools=base_exception_tools(asyncio.CancelledError("gone")), parallel=2).result())
    assert ended, "the run waited for ever"
    assert out["value"].messages[1]["content_items"] == [
        {"type": "tool_result", "tool_call_id": "c1", "text": "CancelledError: gone", "is_error": True},
        {"type": "tool_result", "tool_call_id": "c2", "text": "fine"}]


@pytest.mark.parametrize("exc", [KeyboardInterrupt(), SystemExit(2)])
def test_keyboard_interrupt_and_system_exit_on_a_worker_thread_raise_in_the_runs_thread(exc):
    with SSEServer() as server:
        server.answers += [Answer([chat_calls(TWO)]), Answer([chat_text("ok")])]
        out, ended = in_thread(lambda: client_for(server).run(
            [USER], tools=base_exception_tools(exc), parallel=2).result())
    try:
        assert ended, "the run waited for ever"
        assert out["error"] is exc
    finally:  # the parameter outlives the test: its traceback would hold the run's frames and its connection
        exc.__traceback__ = exc.__context__ = None


# -- B5 (T04, T05): abort, close from another thread, bounded threads ------------------------------------------

def hanging_tools(release, started):
    @tool
    def slow() -> str:
        """Hang until released."""
        started.set()
        release.wait(30)
        return "late"

    @tool
    def fast() -> str:
        """Answer."""
        return "fine"

    return [slow, fast]


@pytest.mark.parametrize("how", ["abort", "close"])
def test_abort_or_close_from_another_thread_ends_a_run_waiting_for_a_hanging_tool(how):
    release, started = threading.Event(), threading.Event()
    try:
        with SSEServer() as server:
            server.answers += [Answer([chat_calls(TWO)])]
            run = client_for(server).run([USER], tools=hanging_tools(release, started), parallel=2)
            stopper = threading.Thread(target=lambda: started.wait(30) and (
                time.sleep(0.05), getattr(run, how)()))  # the run is waiting by then, or soon: either way it ends
            stopper.start()
            out, ended = in_thread(run.result)
            stopper.join(30)
            assert len(server.requests) == 1
    finally:
        release.set()
        for thread in threading.enumerate():
            if thread.name.startswith("agenthub-tool-"):
                thread.join(30)
    assert ended, "the run was not stopped"
    result = out["value"]
    assert result.stop == "aborted" and [c["tool_call_id"] for c in result.pending] == ["c1"]
    assert result.messages[1]["content_items"] == [{"type": "tool_result", "tool_call_id": "c2", "text": "fine"}]


def test_abort_before_reading_ends_the_run_before_anything_is_sent():
    with SSEServer() as server:
        server.answers += [Answer([chat_text("ok")])]
        run = client_for(server).run([USER], tools=[scale])
        run.abort()
        result = run.result()
        assert server.requests == []
    assert result.stop == "aborted" and result.messages == [] and result.turns == 0


def test_timed_out_calls_threads_hold_their_slots_and_the_calls_beyond_get_an_error_result():
    release = threading.Event()

    @tool(timeout=0.05)
    def stuck(n: int) -> str:
        """Hang."""
        release.wait(30)
        return "late"

    calls = [("c{}".format(n), "stuck", '{{"n": {}}}'.format(n)) for n in range(6)]
    def tool_threads():
        return [t for t in threading.enumerate() if t.name.startswith("agenthub-tool-")]

    try:
        with SSEServer() as server:
            server.answers += [Answer([chat_calls(calls)]), Answer([chat_text("ok")])]
            result = client_for(server).run([USER], tools=[stuck], parallel=2).result()
            alive = len(tool_threads())
    finally:
        release.set()
    texts = [item["text"] for item in result.messages[1]["content_items"]]
    assert texts[:2] == ["TimeoutError: stuck did not return within 0.05 s"] * 2
    assert texts[2:] == ["no thread free: 2 earlier call(s) of this run timed out and still run (parallel=2)"] * 4
    assert alive == 2  # 400 timeouts would leave 2 as well, not 400
    for thread in tool_threads():
        thread.join(30)
    assert tool_threads() == []


def stuck_tool(release):
    """A tool that times out after 0.05 s and runs on (holding its slot) until ``release`` is set."""
    @tool(timeout=0.05)
    def stuck(n: int) -> str:
        """Hang."""
        release.wait(30)
        return "late"
    return stuck


def test_calls_of_tools_known_quick_run_while_every_slot_is_held_by_a_timed_out_call(monkeypatch):
    """A turn of calls of tools known quick runs in the reading thread: it needs no slot, so the timed-out calls
    still running do not turn them into "no thread free" errors."""
    import agenthub.agent.runner as runner_module

    # (quick: within 0.5 s, not 2 ms: on a loaded machine (CI's three suites side by side) a call of ``quick`` once
    # took longer, and the turn went to the held slots)
    monkeypatch.setattr(runner_module, "_SPREAD_SECONDS", 0.5)
    release = threading.Event()
    stuck = stuck_tool(release)

    @tool
    def quick(n: int) -> str:
        """Quick."""
        return "q{}".format(n)

    def tool_threads():
        return [t for t in threading.enumerate() if t.name.startswith("agenthub-tool-")]

    try:
        with SSEServer() as server:
            server.answers += [Answer([chat_calls([("c1", "quick", '{"n": 1}'), ("c2", "quick", '{"n": 2}')])]),
                               Answer([chat_calls([("c3", "stuck", '{"n": 3}'), ("c4", "stuck", '{"n": 4}')])]),
                               Answer([chat_calls([("c5", "quick", '{"n": 5}'), ("c6", "quick", '{"n": 6}')])]),
                               Answer([chat_text("ok")])]
            result = client_for(server).run([USER], tools=[stuck, quick], parallel=2).result()
    finally:
        release.set()
    assert [[item["text"] for item in m["content_items"]] for m in result.messages[1::2]] == [
        ["q1", "q2"], ["TimeoutError: stuck did not return within 0.05 s"] * 2, ["q5", "q6"]]
    for thread in tool_threads():
        thread.join(30)
    assert tool_threads() == []


def test_a_run_read_inside_an_event_loop_runs_its_calls_in_its_thread_while_every_slot_is_held():
    """Read in a thread running an asyncio loop, a run sends its calls to the tool threads (a tool's own asyncio.run
    fails in that thread), but not when every slot is held by a timed-out call still running: there the calls run
    in the reading thread as elsewhere, not answered 'no thread free'."""
    import asyncio

    release = threading.Event()
    stuck = stuck_tool(release)

    @tool
    def where(n: int) -> str:
        """Say where it runs."""
        return "{} {}".format(n, threading.current_thread() is threading.main_thread())

    async def main(server):
        return client_for(server).run([USER], tools=[stuck, where], parallel=1).result()

    try:
        with SSEServer() as server:
            server.answers += [Answer([chat_calls([("c1", "where", '{"n": 1}')])]),
                               Answer([chat_calls([("c2", "stuck", '{"n": 2}')])]),
                               Answer([chat_calls([("c3", "where", '{"n": 3}'), ("c4", "where", '{"n": 4}')])]),
                               Answer([chat_text("ok")])]
            result = asyncio.run(main(server))
    finally:
        release.set()
    assert [[item["text"] for item in m["content_items"]] for m in result.messages[1::2]] == [
        ["1 False"], ["TimeoutError: stuck did not return within 0.05 s"], ["3 True", "4 True"]]
    for thread in [t for t in threading.enumerate() if t.name.startswith("agenthub-tool-")]:
        thread.join(30)


# -- B7: images on a model that takes none ------------------------------------------------------------------------

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16


def test_a_tool_results_images_become_a_note_on_a_model_that_takes_no_images(monkeypatch):
    @tool
    def snapshot() -> bytes:
        """A screenshot."""
        return PNG

    with SSEServer() as server:
        server.answers += [Answer([chat_calls([("c1", "snapshot", "{}")])]), Answer([chat_text("ok")])]
        monkeypatch.setenv("DEEPSEEK_BASE_URL", server.url + "/v1")  # (the row's quirks: images False)
        client = AutoLLMClient("deepseek-chat", api_key=KEY, max_retries=0)
        result = client.run([USER], tools=[snapshot]).result()
        sent = tool_results(server.requests[1])
    note = "[1 image left out: this model takes no image input]"
    assert result.stop == "done"
    assert result.messages[1]["content_items"] == [{"type": "tool_result", "tool_call_id": "c1", "text": note}]
    assert sent == [{"role": "tool", "tool_call_id": "c1", "content": note}]


def test_abort_while_a_model_stream_is_read_ends_the_run_at_once():
    body = chat_text("Hello there.")
    first, rest = body.split(b"\n\n", 1)
    gate = threading.Event()
    try:
        with SSEServer() as server:
            server.answers += [Answer([first + b"\n\n", rest], gate=gate)]
            run = client_for(server).run([USER], tools=[scale])
            events = iter(run)
            assert next(events)["event_type"] in ("start", "delta")
            stopper = threading.Thread(target=run.abort)
            stopper.start()
            out, ended = in_thread(lambda: list(events))
            stopper.join(30)
    finally:
        gate.set()
    assert ended and all(e["event_type"] != "stop" for e in out["value"])
    result = run.result()
    assert result.stop == "aborted" and result.turns == 0 and result.messages == []


# -- what a tool raises or returns that the result item must not lose or mangle ----------------------------------

class _NoText(Exception):
    """An exception whose text cannot be read (its __str__ raises: a library's exception built without the
    attribute its __str__ formats)."""

    def __str__(self):
        raise AttributeError("'_NoText' object has no attribute 'detail'")


@tool
def unreadable() -> str:
    """Raise an exception whose text cannot be read."""
    raise _NoText()


@tool
def fine() -> str:
    """Return a fixed text."""
    return "fine"


@pytest.mark.parametrize("calls", [[("c1", "unreadable", "{}")],  # inline, in the run's thread
                                   [("c1", "unreadable", "{}"), ("c2", "fine", "{}")]])  # on the run's threads
def test_an_exception_whose_text_cannot_be_read_is_an_error_result_and_the_run_goes_on(calls):
    with SSEServer() as server:
        server.answers += [Answer([chat_calls(calls)]), Answer([chat_text("ok")])]
        result = client_for(server).run([USER], tools=[unreadable, fine]).result()
        sent = tool_results(server.requests[1])
    assert result.stop == "done"
    assert result.messages[1]["content_items"][0] == {
        "type": "tool_result", "tool_call_id": "c1", "is_error": True,
        "text": "_NoText: (its text could not be read: AttributeError)"}
    assert sent[0] == {"role": "tool", "tool_call_id": "c1",
                       "content": "_NoText: (its text could not be read: AttributeError)"}


PNG_URI = "data:image/png;base64,iVBORw0KGgo="


@pytest.mark.parametrize("returned, item", [
    # one image as a str: one image (not a list of its characters)
    ({"type": "tool_result", "text": "a chart", "images": PNG_URI}, {"text": "a chart", "images": [PNG_URI]}),
    ({"type": "tool_result", "text": "two", "images": (PNG_URI, PNG_URI)}, {"text": "two", "images": [PNG_URI] * 2}),
    # a text that is no str: as JSON, as any other value a tool returns (not Python's repr)
    ({"type": "tool_result", "text": {"rows": [1, None, True]}}, {"text": '{"rows": [1, null, true]}'}),
    ({"type": "tool_result", "text": None}, {"text": ""}),
    # images that are no data URLs (str): an error result the model reads, not a request that fails or mangles them
    ({"type": "tool_result", "text": "x", "images": [b"\x89PNG"]},
     {"text": "chart ran, but what it returned cannot be sent: TypeError: a tool_result's images must be a list of "
              "data: URLs (str); got a list holding a bytes",
      "is_error": True}),
    ({"type": "tool_result", "text": "x", "images": 7},
     {"text": "chart ran, but what it returned cannot be sent: TypeError: a tool_result's images must be a list of "
              "data: URLs (str); got a int", "is_error": True}),
])
def test_a_returned_tool_result_item_keeps_its_images_and_text(returned, item):
    @tool
    def chart() -> dict:
        """Draw a chart."""
        return returned

    with SSEServer() as server:
        server.answers += [Answer([chat_calls([("c1", "chart", "{}")])]), Answer([chat_text("ok")])]
        result = client_for(server, model="gpt-4o").run([USER], tools=[chart]).result()
    assert result.stop == "done"
    assert result.messages[1]["content_items"] == [dict({"type": "tool_result", "tool_call_id": "c1"}, **item)]


@tool
def listing(folder: str) -> object:
    """List a folder whose file names are not all UTF-8 (decoded with surrogateescape, as os.listdir does)."""
    names = ["ok.txt", b"caf\xe9.txt".decode("utf-8", "surrogateescape"), "\ud83d\ude00.txt"]
    if folder == "raise":
        raise ValueError("cannot open {}".format(names[1]))
    if folder == "json":
        return {"names": names}
    return "\n".join(names)


@pytest.mark.parametrize("folder, text, is_error", [
    ("str", "ok.txt\ncaf\ufffd.txt\n\U0001F600.txt", False),
    ("json", '{"names": ["ok.txt", "caf\ufffd.txt", "\U0001F600.txt"]}', False),
    ("raise", "ValueError: cannot open caf\ufffd.txt", True),
])
def test_a_lone_surrogate_in_what_a_tool_returns_or_raises_is_u_fffd_and_the_run_goes_on(folder, text, is_error):
    """As an MCP server's result (tests/test_mcp_runner.py): a half of a UTF-16 pair alone is U+FFFD, the two
    halves of one character side by side that character; the next request is sent, not a ConfigError."""
    with SSEServer() as server:
        server.answers += [Answer([chat_calls([("c1", "listing", json.dumps({"folder": folder}))])]),
                           Answer([chat_text("ok")])]
        result = client_for(server).run([USER], tools=[listing]).result()
        sent = tool_results(server.requests[1])
    item = {"type": "tool_result", "tool_call_id": "c1", "text": text}
    if is_error:
        item["is_error"] = True
    assert result.stop == "done"
    assert result.messages[1]["content_items"] == [item]
    assert sent == [{"role": "tool", "tool_call_id": "c1", "content": text}]


@pytest.mark.parametrize("count, parallel", [(1, 4), (2, 4), (2, 1), (3, 2)])
def test_abort_before_the_turns_calls_start_runs_none_of_them_inline_or_on_threads(count, parallel):
    """abort() while approve() is asked (a UI waiting for its user, or another thread's abort then): no call of
    the turn starts, on the run's threads as in its own; they all come back in pending."""
    started = []

    @tool
    def step(n: int) -> str:
        """Do a step."""
        started.append(n)
        return "step {}".format(n)

    with SSEServer() as server:
        server.answers += [Answer([chat_calls([("c{}".format(n), "step", json.dumps({"n": n}))
                                               for n in range(count)])]), Answer([chat_text("ok")])]
        box = []

        def approve(call):
            box[0].abort()
            return True

        box.append(client_for(server).run([USER], tools=[step], approve=approve, parallel=parallel))
        result = box[0].result()
        assert len(server.requests) == 1
    assert started == []
    assert (result.stop, [c["tool_call_id"] for c in result.pending]) == \
        ("aborted", ["c{}".format(n) for n in range(count)])
    assert result.messages == [result.final] and result.calls == []


@pytest.mark.parametrize("seconds", [float("inf"), 1e300, 1e10])
def test_a_tool_timeout_past_what_a_wait_can_take_is_waited_in_steps_not_an_overflow_error(seconds):
    """A timeout of inf (or one beyond the platform's clock: 1e10 s) waits for the call as long as it runs, as a
    timeout never reached does; the run goes on (an OverflowError from the queue's wait ended it)."""

    @tool(timeout=seconds)
    def quick(n: int) -> str:
        """Return at once."""
        return "n={}".format(n)

    with SSEServer() as server:
        server.answers += [Answer([chat_calls([("c1", "quick", '{"n": 1}'), ("c2", "quick", '{"n": 2}')])]),
                           Answer([chat_text("ok")])]
        result = client_for(server).run([USER], tools=[quick]).result()
    assert result.stop == "done"
    assert result.messages[1]["content_items"] == [{"type": "tool_result", "tool_call_id": "c1", "text": "n=1"},
                                                   {"type": "tool_result", "tool_call_id": "c2", "text": "n=2"}]


def test_a_pydantic_model_a_tool_returns_goes_back_as_its_json():
    """A tool returning a pydantic model (v2 ``model_dump``): its fields as JSON, nested ones too, as a dataclass
    goes (not the model's ``str()``, ``name='Ada' tags=[...]``)."""
    pydantic = pytest.importorskip("pydantic")

    class Tag(pydantic.BaseModel):
        label: str

    class Person(pydantic.BaseModel):
        name: str
        tags: list
        best: Tag

    @tool
    def lookup(name: str) -> object:
        """Look a person up."""
        return {"found": Person(name=name, tags=[Tag(label="math")], best=Tag(label="engines"))}

    with SSEServer() as server:
        server.answers += [Answer([chat_calls([("c1", "lookup", '{"name": "Ada"}')])]), Answer([chat_text("ok")])]
        result = client_for(server).run([USER], tools=[lookup]).result()
    assert result.messages[1]["content_items"] == [{
        "type": "tool_result", "tool_call_id": "c1",
        "text": '{"found": {"name": "Ada", "tags": [{"label": "math"}], "best": {"label": "engines"}}}'}]


def test_a_journaled_call_that_abort_kept_from_starting_is_not_interrupted_on_resume():
    """abort() while approve() is asked: the call of a tool that must run at most once never started, so the
    journal does not hold it as started; the resumed run runs it (once), not hands it back as interrupted."""
    from agenthub.stores import MemoryStore

    paid = []

    @tool(idempotent=False)
    def pay(amount: int) -> str:
        """Pay an amount."""
        paid.append(amount)
        return "paid {}".format(amount)

    store = MemoryStore()
    with SSEServer() as server:
        server.answers += [Answer([chat_calls([("c1", "pay", '{"amount": 5}')])]), Answer([chat_text("Paid.")])]
        box = []

        def approve(call):
            box[0].abort()
            return True

        box.append(client_for(server).run([USER], tools=[pay], approve=approve, journal=store, run_id="pay-1"))
        stopped = box[0].result()
        assert (stopped.stop, [c["tool_call_id"] for c in stopped.pending], paid) == ("aborted", ["c1"], [])
        resumed = client_for(server).run([USER], tools=[pay], approve=lambda call: True, journal=store,
                                         run_id="pay-1").result()
        assert len(server.requests) == 2
    assert (resumed.stop, resumed.pending, resumed.interrupted, paid) == ("done", [], [], [5])
    assert resumed.messages[1]["content_items"] == [{"type": "tool_result", "tool_call_id": "c1", "text": "paid 5"}]
