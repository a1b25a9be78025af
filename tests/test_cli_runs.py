"""`agenthub chat ... --tool ... --journal STORE --run-id ID` (a journaled tool run: killed with SIGKILL at a tool
in a real process, the same command again resumes it, no turn paid twice) and `agenthub runs
list|show|resume|forget --journal STORE` (issue 39 item 6)."""

import io
import json
import os
import signal
import subprocess
import sys
import textwrap
import time

from agent_streams import chat_calls, chat_text
from sse_server import Answer, SSEServer

from agenthub.__main__ import main
from agenthub.stores import open_store

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: the command line in a process whose journal lease lapses in a second (a killed owner's run is free soon)
CLI = ("import sys; import agenthub.stores.journal as rows; rows.JOURNAL_LEASE = 1.0; "
       "from agenthub.__main__ import main; sys.exit(main(sys.argv[1:]))")
TOOLS = textwrap.dedent("""
    import os, time
    from agenthub import tool

    def _mark(name):
        with open(os.environ["MARKS"], "a") as marks:
            marks.write(name + "\\n")
        if os.environ.get("HANG") == name:
            time.sleep(60)

    @tool
    def look_up(city: str) -> str:
        \"\"\"Look a city up.\"\"\"
        _mark("look_up")
        return city + ": open"

    @tool(idempotent=False)
    def pay(amount: int) -> str:
        \"\"\"Pay.\"\"\"
        _mark("pay")
        return "paid"
""")


def _env(tmp_path, **more):
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
    env.update(PYTHONPATH=ROOT, NO_PROXY="*", PYTHONIOENCODING="utf-8", AGENTHUB_HOME=str(tmp_path / "home"),
               MARKS=str(tmp_path / "marks"), **more)
    return env


def _chat(server, tmp_path, journal, *extra):
    (tmp_path / "tools.py").write_text(TOOLS)
    tools = str(tmp_path / "tools.py")
    return ["chat", "demo-model", "Book the trip.", "--client-type", "openai-chat", "--base-url", server.url + "/v1",
            "--tool", tools + ":look_up", "--tool", tools + ":pay", "--journal", journal, "--run-id", "trip-1",
            "--no-log"] + list(extra)


def _text(path):
    with open(path) as handle:
        return handle.read()


def _killed_at(argv, env, marks, name, stdin=None):
    """Start the command (``stdin``: what the user types); SIGKILL it once the tool ``name`` has started (its mark
    written)."""
    child = subprocess.Popen([sys.executable, "-c", CLI] + argv, env=env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE)
    try:
        if stdin is not None:
            child.stdin.write(stdin.encode())
            child.stdin.close()
        deadline = time.monotonic() + 60
        while not (os.path.exists(marks) and name in _text(marks).split()):
            assert child.poll() is None, child.stderr.read()
            assert time.monotonic() < deadline, "the tool never started"
            time.sleep(0.02)
        child.send_signal(signal.SIGKILL)
        child.wait(10)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(10)
        child.stderr.close()


def _cli(argv, env, stdin=None):
    return subprocess.run([sys.executable, "-c", CLI] + argv, env=env, capture_output=True, text=True,
                          input=stdin, timeout=60)


def test_a_chat_tool_run_killed_at_a_tool_resumes_with_the_same_command_and_pays_no_turn_twice(tmp_path):
    journal = "sqlite:///" + str(tmp_path / "runs.db")
    marks = str(tmp_path / "marks")
    with SSEServer() as server:
        server.answers += [Answer([chat_calls([("c1", "look_up", '{"city": "Rome"}')])]),
                           Answer([chat_text("Rome is open.")])]
        argv = _chat(server, tmp_path, journal, "--yes")
        _killed_at(argv, _env(tmp_path, HANG="look_up"), marks, "look_up")
        assert len(server.requests) == 1
        listed = _cli(["runs", "list", "--journal", journal], _env(tmp_path))
        assert listed.returncode == 0 and listed.stdout.startswith("trip-1  2 entries  ")  # header turn (look_up: idempotent, no entry)
        resumed = _cli(["runs", "resume", "trip-1", "--journal", journal], _env(tmp_path))
        assert resumed.stdout.splitlines()[-4] == (
            "run trip-1 did not end: a resume replays 1 turn and 0 tool results (nothing sent for them); call c1 "
            "with no result journaled: runs (again, if it ran: at least once)")
        again = _cli(argv + ["--journal-wait", "10"], _env(tmp_path))
        assert again.returncode == 0, again.stderr
        assert len(server.requests) == 2  # the first turn came from the journal: sent once in all
    assert again.stdout == "Rome is open.\n"
    assert _text(marks).split() == ["look_up", "look_up"]  # idempotent: run again (at least once)
    assert again.stderr.splitlines()[-1].endswith(
        "[journaled run trip-1: 1 turn and 0 tool results taken from the journal]")
    assert '[tool look_up({"city": "Rome"}) -> Rome: open (' in again.stderr
    shown = _cli(["runs", "show", "trip-1", "--journal", journal], _env(tmp_path))
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines() == [
        "run trip-1: 5 entries (journal format 1, written by agenthub {})".format(
            __import__("agenthub").__version__),
        "turn 1 (demo-model): 1 tool call",
        "  [done: tool_call] tokens: prompt 10, cached ?, thinking ?, response 5",
        shown.stdout.splitlines()[3],
        "turn 2 (demo-model): 'Rome is open.'",
        "  [done: stop] tokens: prompt 20, cached ?, thinking ?, response 3",
        "ended: done",
        "2 turns, 1 tool call, total cost unknown (a turn is unpriced)",
    ]
    assert shown.stdout.splitlines()[3].startswith('  [tool look_up({"city": "Rome"}) -> \'Rome: open\' (')
    raw = [json.loads(line) for line in _cli(["runs", "show", "trip-1", "--journal", journal, "--json"],
                                             _env(tmp_path)).stdout.splitlines()]
    assert [e["k"] for e in raw] == ["header", "turn", "result", "turn", "done"]
    ended = _cli(["runs", "resume", "trip-1", "--journal", journal], _env(tmp_path))
    assert ended.stdout.splitlines()[0] == ("run trip-1 ended (done): started again, it returns its result at once, "
                                            "nothing sent")
    forgot = _cli(["runs", "forget", "trip-1", "--journal", journal], _env(tmp_path))
    assert (forgot.returncode, forgot.stdout) == (0, "forgot run trip-1\n")
    gone = _cli(["runs", "show", "trip-1", "--journal", journal], _env(tmp_path))
    assert gone.returncode == 1
    assert gone.stderr == ("error: ConfigError: no journal for run 'trip-1' in this store (never written, forgotten, "
                           "or expired: past its journal_ttl)\n")
    assert _cli(["runs", "list", "--journal", journal], _env(tmp_path)).stdout == (
        "no journaled runs (a journal lasts until its journal_ttl, or until forgotten)\n")


def test_a_non_idempotent_call_a_crash_interrupted_runs_again_only_when_the_user_says_so(tmp_path):
    journal = "sqlite:///" + str(tmp_path / "runs.db")
    marks = str(tmp_path / "marks")
    with SSEServer() as server:
        server.answers += [Answer([chat_calls([("c1", "pay", '{"amount": 30}')])]), Answer([chat_text("Paid.")])]
        argv = _chat(server, tmp_path, journal)
        _killed_at(argv + ["--yes"], _env(tmp_path, HANG="pay"), marks, "pay")
        kept = _cli(argv + ["--yes", "--journal-wait", "10"], _env(tmp_path))
        assert kept.returncode == 0, kept.stderr
        assert _text(marks).split() == ["pay"]  # --yes never reruns it: at most once
        assert "[interrupted by a crash, not run again (@tool(idempotent=False)): c1: it may have run once]" in kept.stderr
        assert "[run the command again without --yes to decide]" in kept.stderr
        assert len(server.requests) == 1
        decided = _cli(argv, _env(tmp_path), stdin="y\n")  # asked (y/n/e) and answered: it runs again
        assert decided.returncode == 0, decided.stderr
        assert len(server.requests) == 2
    assert _text(marks).split() == ["pay", "pay"]
    assert decided.stdout == "Paid.\n"
    assert '[tool pay({"amount": 30})] run it? [y/n/e] ' in decided.stderr


def test_what_the_journal_holds_reaches_a_terminal_shown_not_obeyed(tmp_path, monkeypatch):
    journal = "sqlite:///" + str(tmp_path / "runs.db")
    store = open_store(journal)  # (written by hand: Journal refuses such a run_id; another writer may not)
    assert store.journal_claim("evil\u202erun", "owner", 30.0, None) is None
    for n, entry in enumerate([{"k": "header", "format": 1, "fingerprint": "print", "agenthub": "x"}, {
            "k": "turn", "turn": 0, "cost": None, "route": {"model": "m\x1b[2J"}, "message": {
                "role": "assistant", "finish_reason": "stop", "usage_metadata": {},
                "content_items": [{"type": "text", "text": "hi\x1b]52;c;ZXZpbA==\x07"}]}}]):
        store.journal_append("evil\u202erun", "owner", n, json.dumps(entry), None)
    store.journal_release("evil\u202erun", "owner")
    store.close()

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    screen = Terminal()
    monkeypatch.setattr(sys, "stdout", screen)
    assert main(["runs", "list", "--journal", journal]) == 0
    assert main(["runs", "show", "evil\u202erun", "--journal", journal]) == 0
    lines = screen.getvalue().splitlines()
    assert lines[0].startswith("evil<U+202E>run  2 entries  ")
    assert lines[1].startswith("run evil<U+202E>run: 2 entries")
    assert lines[2] == "turn 1 (m^[[2J): 'hi\\x1b]52;c;ZXZpbA==\\x07'"
    assert "\x1b" not in screen.getvalue() and "\u202e" not in screen.getvalue()


def test_the_journal_flags_are_refused_where_they_mean_nothing(tmp_path):
    journal = "sqlite:///" + str(tmp_path / "runs.db")
    base = ["chat", "m", "hi", "--client-type", "openai-chat", "--base-url", "http://127.0.0.1:9/v1", "--no-log"]
    env = _env(tmp_path)
    for extra, said in (
            (["--journal", journal], "a journaled run takes both --journal STORE and --run-id ID"),
            (["--run-id", "r"], "a journaled run takes both --journal STORE and --run-id ID"),
            (["--journal", journal, "--run-id", "r"], "--journal journals a tool run: it goes with --tool or --mcp"),
            (["--journal-ttl", "60"], "--journal-ttl goes with --journal STORE --run-id ID")):
        done = _cli(base + extra, env)
        assert (done.returncode, done.stderr) == (1, "error: ConfigError: {}\n".format(said))
    bad = _cli(["runs", "list", "--journal", "redis://:s3cret-pass@127.0.0.1:9/0"], env)
    assert bad.returncode == 1 and "s3cret" not in bad.stderr + bad.stdout
    assert _cli(["runs", "list"], env).returncode == 2  # --journal is required
    assert _cli(["runs"], env).returncode == 2


def test_forget_refuses_a_run_a_live_worker_owns_unless_forced(tmp_path, capsys):
    journal = "sqlite:///" + str(tmp_path / "runs.db")
    store = open_store(journal)
    assert store.journal_claim("live-1", "worker", 300.0, None) is None  # a live lease
    store.journal_append("live-1", "worker", 0, json.dumps({"k": "header", "format": 1, "fingerprint": "f"}), None)
    try:
        assert main(["runs", "list", "--journal", journal, "--json"]) == 0
        (row,) = json.loads(capsys.readouterr().out)
        assert (row["run_id"], row["entries"], row["owned"]) == ("live-1", 1, True)
        assert main(["runs", "forget", "live-1", "--journal", journal]) == 1
        assert capsys.readouterr().err == (
            "error: ConfigError: run 'live-1' is owned by a live worker now: forgetting it would make that worker's "
            "next write fail; --force forgets it anyway\n")
        assert main(["runs", "resume", "live-1", "--journal", journal]) == 0
        assert capsys.readouterr().out.startswith("run live-1 is owned: a worker's lease holds it")
        assert main(["runs", "forget", "live-1", "--journal", journal, "--force"]) == 0
        assert capsys.readouterr().out == "forgot run live-1\n"
        assert store.journal_runs() == []
    finally:
        store.close()


def test_a_resumed_journaled_chat_logs_each_turn_once_in_the_same_conversation(tmp_path, capsys):
    """The conversation log holds a journaled chat run once: a resume (here: the same command once the run
    ended, its result at once, nothing sent) continues the run's conversation with the turns not logged yet,
    it does not log the replayed ones again as a new conversation."""
    from agenthub.apps.conversations import Log

    journal = "sqlite:///" + str(tmp_path / "runs.db")
    with SSEServer() as server:
        server.answers += [Answer([chat_calls([("c1", "look_up", '{"city": "Rome"}')])]),
                           Answer([chat_text("Rome is open.")])]
        argv = [a for a in _chat(server, tmp_path, journal, "--yes") if a != "--no-log"]
        os.environ["MARKS"] = str(tmp_path / "marks")
        try:
            assert main(argv) == 0
            assert main(argv) == 0  # the run ended: its result again, from the journal
        finally:
            del os.environ["MARKS"]
        assert len(server.requests) == 2
    assert capsys.readouterr().out == "Rome is open.\nRome is open.\n"
    with Log() as log:
        listed = log.list()
        assert [row["turns"] for row in listed] == [2]
        assert listed[0]["first_prompt"] == "Book the trip."
        history = log.history(listed[0]["id"])
        assert [m["role"] for m in history] == ["user", "assistant", "user", "assistant"]
        assert history[2]["content_items"][0]["type"] == "tool_result"


def test_calls_interrupted_in_two_turns_under_one_reused_id_are_each_run_again_on_the_users_word(tmp_path):
    """A server numbering the calls of each answer: pay(30) as call_0 killed mid-call, run again on the user's y and
    the next turn's pay(31), call_0 too, killed mid-call: the user's y for it runs it (the chat keys the decision by
    the call's digest: by id it could be the earlier decision given again, which a journaled run refuses)."""
    journal = "sqlite:///" + str(tmp_path / "runs.db")
    marks = str(tmp_path / "marks")
    with SSEServer() as server:
        server.answers += [Answer([chat_calls([("call_0", "pay", '{"amount": 30}')])]),
                           Answer([chat_calls([("call_0", "pay", '{"amount": 31}')])]), Answer([chat_text("Paid.")])]
        argv = _chat(server, tmp_path, journal, "--journal-wait", "10")
        (tmp_path / "tools.py").write_text(TOOLS.replace('_mark("pay")', '_mark("pay{}".format(amount))'))
        _killed_at(argv + ["--yes"], _env(tmp_path, HANG="pay30"), marks, "pay30")
        # pay(30) interrupted: y (run it again), then pay(31) asked: y; killed in it
        _killed_at(argv, _env(tmp_path, HANG="pay31"), marks, "pay31", stdin="y\ny\n")
        decided = _cli(argv, _env(tmp_path), stdin="y\n")  # pay(31) interrupted: y
        assert decided.returncode == 0, decided.stderr
    assert _text(marks).split() == ["pay30", "pay30", "pay31", "pay31"]
    assert decided.stdout == "Paid.\n" and len(server.requests) == 3
