"""The command line as a user runs it, on the edges: Ctrl-C in a one-shot answer, an ASCII-only stdout, closed
standard streams, numbers past what a socket, a port or SQLite takes, the flags every error names, and every
flag of every subcommand documented in docs/cli.md.  Real `python -m agenthub` processes."""

import argparse
import json
import os
import re
import select
import signal
import subprocess
import sys
import threading
import time

import pytest

from sse_server import Answer
from test_cli_chat import Terminal, _local, server  # noqa: F401  (server: the local SSE server fixture)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
RECORDING = os.path.join(ROOT, "agenthub", "recordings", "openai_chat", "weather_answer.sse")
ANSWER_TEXT = "It is 18 °C and sunny in Paris — a good day for a walk."


def _env(tmp_path, **extra):
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
    env.update(PYTHONPATH=ROOT, NO_PROXY="*", PYTHONIOENCODING="utf-8", AGENTHUB_HOME=str(tmp_path / "home"),
               AGENTHUB_CACHE_DIR=str(tmp_path / "cache"))
    env.update(extra)
    return env


def _agenthub(argv, env, **kwargs):
    return subprocess.run([sys.executable, "-m", "agenthub"] + argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          env=env, cwd=ROOT, timeout=60, **kwargs)


def _recording():
    with open(RECORDING, "rb") as handle:
        return handle.read()


def _ctrl_c_mid_answer(server, tmp_path, argv, started, sent=signal.SIGINT):
    """(exit status, stdout, stderr) of ``agenthub ARGV`` sent SIGINT once its answer began (``started(child)``
    returns then; the answer's first chunk is sent, then the server waits 5 s at most for the rest)."""
    chunks = _recording().split(b"\n\n")
    gate = threading.Event()
    server.answers.append(Answer([chunks[0] + b"\n\n" + chunks[1] + b"\n\n", b"data: [DONE]\n\n"], gate=gate))
    child = subprocess.Popen([sys.executable, "-m", "agenthub"] + argv + _local(server), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, env=_env(tmp_path), cwd=ROOT)
    try:
        started(child)
        child.send_signal(sent)
        out, err = child.communicate(timeout=30)
    finally:
        gate.set()
        if child.poll() is None:
            child.kill()
            child.communicate()
    return child.returncode, out, err


def _answer_on_stdout(child):
    ready, _, _ = select.select([child.stdout], [], [], 30)
    assert ready, "the answer never started"
    assert os.read(child.stdout.fileno(), 100).startswith(b"It is ")


def test_ctrl_c_in_a_one_shot_answer_exits_130_as_a_tool_run_does(server, tmp_path):
    """`agenthub chat MODEL "prompt" > out && next`: an answer Ctrl-C stopped is not a success (it exited 0)."""
    status, out, err = _ctrl_c_mid_answer(server, tmp_path, ["chat", "demo-model", "hi"], _answer_on_stdout)
    assert status == 130, err
    assert (out, err) == (b"\n", b"[stopped]\n")  # (the answer's line ended, and said so)
    logged = _agenthub(["logs", "list"], _env(tmp_path))
    assert logged.stdout.decode("utf-8").startswith("no conversations logged yet")  # (a stopped turn is not kept)


@pytest.mark.parametrize("encoding", ["ascii", "ascii:surrogateescape"])
def test_an_ascii_stdout_gets_the_answer_with_escapes_not_a_unicode_error(server, tmp_path, encoding):
    """PYTHONIOENCODING=ascii (or a Latin-1 terminal; surrogateescape: a C locale without UTF-8 mode) and a model
    answering in UTF-8: the answer is written with \\u escapes (it stopped at the first non-ASCII character:
    UnicodeEncodeError, exit 1, nothing logged)."""
    server.answers.append(Answer([_recording()]))
    server.answers.append(Answer([_recording()]))
    env = _env(tmp_path, PYTHONIOENCODING=encoding)
    result = _agenthub(["chat", "demo-model", "hi"] + _local(server), env)
    assert result.returncode == 0, result.stderr
    assert result.stdout == b"It is 18 \\u00b0C and sunny in Paris \\u2014 a good day for a walk.\n"
    raw = _agenthub(["chat", "demo-model", "hi", "--json"] + _local(server), env)
    assert raw.returncode == 0, raw.stderr
    texts = [item["text"] for line in raw.stdout.decode("ascii").splitlines()
             for item in json.loads(line)["content_items"] if item["type"] == "text"]
    assert "".join(texts) == ANSWER_TEXT  # (--json stays JSON: the escapes are JSON's)
    shown = _agenthub(["logs", "show"], env)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.decode("ascii").splitlines()[1].endswith(
        "demo-model: It is 18 \\u00b0C and sunny in Paris \\u2014 a good day for a walk.")
    home = tmp_path / "h\udcffme"  # (a folder name that is no UTF-8: its byte written back as it was)
    path = _agenthub(["logs", "path"], dict(env, AGENTHUB_HOME=str(home)))
    if encoding.endswith("surrogateescape"):
        assert path.stdout == os.fsencode(str(home / "logs.db")) + b"\n"
    else:
        assert path.stdout == str(home / "logs.db").encode("ascii", "backslashreplace") + b"\n"


@pytest.mark.skipif(sys.platform == "win32", reason="closes descriptors with a POSIX shell")
def test_closed_standard_streams_are_no_traceback(server, tmp_path):
    """`agenthub models >&-`, `agenthub chat MODEL <&-`: Python leaves sys.stdout / sys.stdin None; every command
    died with AttributeError and a traceback."""
    env = _env(tmp_path)

    def shell(line):
        return subprocess.run(["sh", "-c", line], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=ROOT,
                              timeout=60)

    python = '"{}" -m agenthub'.format(sys.executable)
    for command in ("models", "demo", "logs list"):
        result = shell("{} {} >&-".format(python, command))
        assert (result.returncode, result.stderr) == (0, b""), command
    result = shell("{} chat demo-model {} <&-".format(python, " ".join(_local(server))))
    assert result.returncode == 1
    assert result.stderr == b"error: ConfigError: the prompt is empty: pass it as an argument, or pipe it in\n"
    assert server.requests == []
    server.answers.append(Answer([_recording()]))
    result = shell("{} chat demo-model hi {} >&-".format(python, " ".join(_local(server))))
    assert result.returncode == 0, result.stderr
    assert result.stderr == b"[done: stop] tokens: prompt 24, cached 64, thinking 0, response 14\n"


@pytest.mark.parametrize("argv", [["trace", "view", "{tmp}", "--port", "70000"],
                                  ["trace", "view", "{tmp}", "--port", "-1"],
                                  ["serve", "--config", "{tmp}/config.json", "--port", "65536"]])
def test_a_port_out_of_range_is_a_usage_error(tmp_path, argv):
    """A port past 65535 (or negative) died in bind() with OverflowError and a traceback."""
    (tmp_path / "config.json").write_text(json.dumps({"models": [{"id": "m", "model": "m",
                                                                  "client_type": "openai-chat",
                                                                  "base_url": "http://127.0.0.1:9/v1"}]}))
    argv = [arg.format(tmp=tmp_path) for arg in argv]
    result = _agenthub(argv, _env(tmp_path))
    assert result.returncode == 2
    assert result.stderr.decode("utf-8").splitlines()[-1] == \
        "agenthub {}: error: argument --port: a port is 0 to 65535 (got {})".format(" ".join(argv[:2]) if argv[0] ==
                                                                                    "trace" else "serve", argv[-1])


def test_logs_list_takes_a_positive_count_and_any_large_one(tmp_path):
    """`logs list -n 0` listed 20, `-n -1` one, and a count past SQLite's 64-bit LIMIT died with OverflowError."""
    from agenthub.apps.conversations import Log

    (tmp_path / "home").mkdir()
    with Log(str(tmp_path / "home" / "logs.db")) as log:
        for n in range(25):
            log.add_turn(log.start("m"), "m", {"role": "user", "content_items": [{"type": "text", "text": str(n)}]},
                         {"role": "assistant", "content_items": [{"type": "text", "text": "ok"}]})
    env = _env(tmp_path)
    for count in ("0", "-1"):
        result = _agenthub(["logs", "list", "-n", count], env)
        assert result.returncode == 2
        assert result.stderr.decode("utf-8").splitlines()[-1] == \
            "agenthub logs list: error: argument -n/--count: must be a finite number > 0 (got {})".format(count)
    result = _agenthub(["logs", "list", "-n", "99999999999999999999999"], env)
    assert result.returncode == 0, result.stderr
    assert len(result.stdout.splitlines()) == 25
    result = _agenthub(["logs", "list", "-n", "3"], env)
    assert [line.split()[-1] for line in result.stdout.decode("utf-8").splitlines()] == ["24", "23", "22"]


def test_timeouts_past_what_a_wait_takes_are_config_errors(server, tmp_path):
    """--timeout 1e300 is finite but past any socket or lock's limit: chat said 'the connection failed', mcp
    died with OverflowError and a traceback.  Refused before anything is sent or started."""
    env = _env(tmp_path)
    result = _agenthub(["chat", "demo-model", "hi", "--timeout", "1e300"] + _local(server), env)
    assert result.returncode == 1
    assert result.stderr == b"error: ConfigError: --timeout must be a positive number of seconds (got 1e+300)\n"
    assert server.requests == []
    result = _agenthub(["mcp", "tools", "--timeout", "1e300", sys.executable, os.path.join(HERE, "mcp_fake_stdio.py"),
                        "modern"], env)
    assert result.returncode == 1
    assert result.stderr == b"error: ConfigError: timeout must be a positive number of seconds (got 1e+300)\n"


def test_journal_wait_nan_is_refused_not_waited_for_ever(tmp_path):
    """journal_wait=NaN passed `wait < 0` and compared with no deadline: a run owned by a live worker was waited
    for without end."""
    from agenthub.agent.journal import Journal
    from agenthub.errors import ConfigError
    from agenthub.stores import MemoryStore

    for wait in (float("nan"), float("inf"), -1):
        with pytest.raises(ConfigError) as caught:
            Journal(MemoryStore(), "run-1", wait=wait)
        assert str(caught.value) == "journal_wait must be a finite number of seconds >= 0"


def test_errors_name_the_flags_the_user_typed(server, tmp_path):
    """max_turns, max_usd, journal_wait are keyword arguments; the command line says --max-turns, --budget,
    --journal-wait."""
    env = _env(tmp_path)
    tool = ["--tool", "os:getcwd", "--yes"]
    for extra, said in ((tool + ["--max-turns", "0"], "--max-turns must be an int >= 1"),
                        (["--budget", "-1"], "--budget must be a non-negative number of US dollars (got -1.0)"),
                        (tool + ["--journal", "sqlite:///{}".format(tmp_path / "runs.db"), "--run-id", "r",
                                 "--journal-wait", "nan"], "--journal-wait must be a finite number of seconds >= 0")):
        result = _agenthub(["chat", "demo-model", "hi"] + _local(server) + extra, env)
        assert result.returncode == 1
        assert result.stderr.decode("utf-8") == "error: ConfigError: {}\n".format(said)
    assert server.requests == []


def _flags(parser, seen=None):
    """Every option string of ``parser`` and of its subcommands, with the command it belongs to."""
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += _flags(sub)
        elif action.option_strings and not isinstance(action, argparse._HelpAction):
            found += [(parser.prog, flag) for flag in action.option_strings]
    return found


def test_every_flag_of_every_command_is_in_docs_cli():
    """docs/cli.md is the command line's page: each real flag is on it (--cache, --otel, batch's and mcp's
    flags were not)."""
    from agenthub.__main__ import _parser

    with open(os.path.join(ROOT, "docs", "cli.md"), encoding="utf-8") as handle:
        page = handle.read()
    missing = sorted({"{} {}".format(prog, flag) for prog, flag in _flags(_parser())
                      if not re.search(r"(?<![\w-]){}(?![\w-])".format(re.escape(flag)), page)})
    assert missing == []


def test_output_file_is_left_as_it_was_when_the_command_fails_before_the_answer(server, tmp_path):
    """`--output FILE` opened FILE for writing first: a bad flag, a refused connection or a missing key emptied the
    user's file.  It is checked first and written from the answer's first byte."""
    env = _env(tmp_path)
    kept = tmp_path / "summary.txt"
    kept.write_text("precious\n")
    for extra in (["--max-tokens", "0"], ["--client-type", "openai-chat", "--base-url", "http://127.0.0.1:9/v1"]):
        result = _agenthub(["chat", "demo-model", "hi", "--output", str(kept)] + extra
                           + ([] if "--base-url" in extra else _local(server)), env)
        assert result.returncode == 1 and result.stderr.startswith(b"error: "), result.stderr
        assert kept.read_text() == "precious\n"
    result = _agenthub(["chat", "demo-model", "hi", "--output", str(tmp_path)] + _local(server), env)
    assert result.returncode == 1
    assert result.stderr.decode("utf-8") == "error: ConfigError: --output {}: it is a folder\n".format(tmp_path)
    missing = tmp_path / "no" / "answer.txt"
    result = _agenthub(["chat", "demo-model", "hi", "--output", str(missing)] + _local(server), env)
    assert result.stderr.decode("utf-8") == "error: ConfigError: --output {}: there is no folder {}\n".format(
        missing, missing.parent)
    assert server.requests == []
    # a link whose target's folder is not there: it was written through at the answer's first byte, after the
    # request was sent and paid for (FileNotFoundError, the answer lost)
    dangling = tmp_path / "answer-link.txt"
    os.symlink(str(missing), str(dangling))
    result = _agenthub(["chat", "demo-model", "hi", "--output", str(dangling)] + _local(server), env)
    assert (result.returncode, result.stderr.decode("utf-8")) == (1, "error: ConfigError: --output {}: it is a link "
                                                                     "to {}, and there is no folder {}\n".format(
                                                                         dangling, missing, missing.parent))
    assert server.requests == []
    server.answers.append(Answer([_recording()]))
    result = _agenthub(["chat", "demo-model", "hi", "--output", str(kept)] + _local(server), env)
    assert (result.returncode, result.stdout) == (0, b""), result.stderr
    assert kept.read_text(encoding="utf-8") == ANSWER_TEXT + "\n"


@pytest.mark.parametrize("action", [["list"], ["show", "trip-1"], ["resume", "trip-1"], ["forget", "trip-1"]])
def test_runs_on_a_journal_file_that_is_not_there_say_so_and_make_none(tmp_path, action):
    """`agenthub runs list --journal sqlite:///runs.db` from the wrong folder made an empty runs.db there and said
    'no journaled runs' (show: 'no journal for run'): a mistyped path read as an empty journal, and a file left."""
    missing = tmp_path / "runs.db"
    result = _agenthub(["runs"] + action + ["--journal", "sqlite:///" + str(missing)], _env(tmp_path))
    assert result.returncode == 1
    assert result.stderr.decode("utf-8") == "error: ConfigError: --journal sqlite:///{}: there is no file {}\n".format(
        missing, missing)
    assert not missing.exists()


HOSTILE = "a\x1b]52;c;ZXZpbA==\x07b\x1b[2J\x9b31mc\u202ed"  # OSC 52 (the clipboard), a screen clear, CSI, RLO
HOSTILE_SHOWN = "a^[]52;c;ZXZpbA==^Gb^[[2J<9B>31mc<U+202E>d"


def test_an_upstreams_error_text_is_shown_not_obeyed(server, tmp_path):
    """The one error line printed a server's error message as it came: its escapes drove the user's terminal."""
    body = json.dumps({"error": {"message": HOSTILE, "type": "invalid_request_error"}}).encode()
    server.answers.append(Answer([body], status=400, headers={"Content-Type": "application/json"}, chunked=False))
    result = _agenthub(["chat", "demo-model", "hi"] + _local(server), _env(tmp_path))
    assert result.returncode == 1
    assert result.stderr.decode("utf-8") == "error: UpstreamError: {} (client=openai-chat, status=400, type=invalid_" \
                                            "request_error, url={}/v1/chat/completions)\n".format(HOSTILE_SHOWN,
                                                                                                 server.url)


@pytest.mark.skipif(not hasattr(os, "fork") or sys.platform == "win32", reason="needs a pseudo-terminal")
def test_trace_show_on_a_terminal_shows_a_recorded_escape_not_obeys_it(tmp_path):
    """`agenthub trace show FILE` wrote a trace's text raw to the terminal (`logs show` and the live chat escape it)."""
    from agenthub.tracer import save_trace
    paths = save_trace("hostile", "demo-model", [
        {"role": "user", "content_items": [{"type": "text", "text": "hi"}]},
        {"role": "assistant", "content_items": [{"type": "text", "text": HOSTILE}]}], {}, root=str(tmp_path))
    terminal = Terminal(["trace", "show", paths["json"]], _env(tmp_path, NO_COLOR="1"))
    try:
        shown = terminal.wait_for("ASSISTANT")
        shown += terminal.wait_for("31mc")  # (model text: its controls shown as the live chat shows them)
        assert terminal.exit_status() == 0
    finally:
        terminal.kill()
    assert "a^[]52;c;ZXZpbA==^Gb^[[2J<9B>31mc" in shown and "\x1b" not in shown
    piped = _agenthub(["trace", "show", paths["json"]], _env(tmp_path))
    assert HOSTILE in piped.stdout.decode("utf-8")  # (a pipe gets it as it was)


def _batch_with_errors(fake, tmp_path, capsys, monkeypatch, message):
    """A one-row batch submitted to ``fake`` (its state file's path), the engine's errors saying ``message``."""
    from agenthub.__main__ import main
    from batch_fakes import point_at

    point_at(monkeypatch, fake)
    path = tmp_path / "in.jsonl"
    path.write_text(json.dumps({"id": "q0", "model": "gpt-5.5", "config": {"max_tokens": 5}, "messages": [
        {"role": "user", "content_items": [{"type": "text", "text": "x"}]}]}) + "\n")
    assert main(["batch", "submit", str(path), "--backend", "openai"]) == 0
    state = capsys.readouterr()[0].strip()
    for batch in fake.batches.values():
        batch.errors = [{"code": "invalid_request", "message": message}]
    return state


def test_batch_status_on_a_terminal_shows_an_engines_error_text_escaped(tmp_path, capsys, monkeypatch):
    """`agenthub batch status` printed a batch's errors (the engine's text) raw: escapes reached the terminal."""
    from agenthub import _controls
    from agenthub.__main__ import main
    from batch_fakes import BatchFake

    with BatchFake(polls=5) as fake:
        state = _batch_with_errors(fake, tmp_path, capsys, monkeypatch, HOSTILE)
        assert main(["batch", "status", state]) == 4
        piped = capsys.readouterr()[0]
        monkeypatch.setattr(_controls, "is_terminal", lambda stream: True)
        assert main(["batch", "status", state]) == 4
        shown = capsys.readouterr()[0]
    assert piped.splitlines()[1].endswith("; invalid_request: " + HOSTILE)  # (a pipe: as the engine said it)
    assert shown.splitlines()[1].endswith("; invalid_request: " + HOSTILE_SHOWN)


@pytest.mark.skipif(not hasattr(os, "fork") or sys.platform == "win32", reason="needs a pseudo-terminal")
def test_ctrl_c_in_an_interactive_tool_run_drops_the_turn_not_the_conversation(server, tmp_path):
    """The interactive chat with --tool: Ctrl-C while the answer streamed ended the program ('interrupted', the
    conversation gone); it ends the turn, as it does without --tool."""
    chunks = _recording().split(b"\n\n")
    gate = threading.Event()
    server.answers.append(Answer([chunks[0] + b"\n\n" + chunks[1] + b"\n\n", b"data: [DONE]\n\n"], gate=gate))
    server.answers.append(Answer([_recording()]))
    terminal = Terminal(["chat", "demo-model", "--tool", "os:getcwd", "--yes"] + _local(server),
                        _env(tmp_path, NO_COLOR="1"))
    try:
        terminal.wait_for("you> ")
        terminal.type("Tell me a long story.\n")
        terminal.wait_for("It is ")
        terminal.type("\x03")
        assert terminal.wait_for("you> ").endswith("\n[stopped]\nyou> ")
        terminal.type("Weather?\n")
        assert ANSWER_TEXT in terminal.wait_for("you> ")
        terminal.type("\x04")
        assert terminal.exit_status() == 0
    finally:
        gate.set()
        terminal.kill()
    assert [m["content"] for m in server.requests[1]["body"]["messages"]] == ["Weather?"]  # (the stopped turn: gone)


def test_logs_list_on_a_terminal_shows_a_prompts_escapes_not_obeys_them(tmp_path, capsys, monkeypatch):
    """`logs show` escaped a logged text on a terminal; `logs list` wrote the first prompt (a piped web page's,
    say) raw, and `logs export --markdown` the whole conversation."""
    from agenthub.apps import conversations, terminal
    from agenthub.apps.conversations import Log

    monkeypatch.setenv("AGENTHUB_HOME", str(tmp_path))
    with Log(str(tmp_path / "logs.db")) as log:
        log.add_turn(log.start("m"), "m", {"role": "user", "content_items": [{"type": "text", "text": "x" + HOSTILE}]},
                     {"role": "assistant", "content_items": [{"type": "text", "text": "ok"}]})
    monkeypatch.setattr(terminal, "is_terminal", lambda stream: True)
    assert conversations.run_logs(argparse.Namespace(logs_command="list", count=20, json=False), sys.stdout) == 0
    line = capsys.readouterr()[0]
    assert line.endswith(" m                              1 turn(s)  xa^[]52;c;ZXZpbA==^Gb^[[2J<9B>31mc\u202ed\n")
    assert conversations.run_logs(argparse.Namespace(logs_command="export", id=None, markdown=True), sys.stdout) == 0
    assert "## User\n\nxa^[]52;c;ZXZpbA==^Gb^[[2J<9B>31mc\u202ed\n" in capsys.readouterr()[0]  # (export --markdown)


def test_an_unknown_option_key_is_named_as_typed(server, tmp_path):
    """`-o api_key X` was refused as "unknown config key(s) ['--api-key-env']", and the keys -o takes were listed
    as flags (--max-tokens, --system): the message's keys were rewritten into flag names."""
    result = _agenthub(["chat", "demo-model", "hi", "-o", "api_key", "x"] + _local(server), _env(tmp_path))
    assert result.returncode == 1
    assert result.stderr.decode("utf-8").startswith(
        "error: ConfigError: unknown config key(s) ['api_key']; UniConfig keys are: max_tokens, temperature, tools, ")
    assert server.requests == []


@pytest.mark.skipif(sys.platform == "win32", reason="symbolic and hard links")
@pytest.mark.parametrize("link", [os.symlink, os.link])
def test_batch_run_refuses_an_output_that_is_the_input_through_a_link(tmp_path, link):
    """`batch run in.jsonl -o out.jsonl` with out.jsonl a link to in.jsonl: its rows were read as answers, every row
    'skipped', exit 0, nothing asked (only the same path was refused)."""
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps({"id": "r1", "model": "demo-model", "client_type": "openai-chat",
                                  "base_url": "http://127.0.0.1:9/v1", "messages": [
                                      {"role": "user", "content_items": [{"type": "text", "text": "hi"}]}]}) + "\n")
    link(str(source), str(tmp_path / "out.jsonl"))
    result = _agenthub(["batch", "run", str(source), "-o", str(tmp_path / "out.jsonl"), "--no-progress"],
                       _env(tmp_path))
    assert result.returncode == 1
    assert result.stderr == b"error: ConfigError: the output file must not be the input file\n"


def test_json_nested_past_the_reader_is_a_config_error_not_a_traceback(server, tmp_path):
    """`-o stop '[[[[...'`, `--schema` (inline, a file, or one the compiler cannot walk) and `mcp call ... JSON`
    nested thousands deep died with RecursionError and a traceback."""
    env = _env(tmp_path)
    deep_list = "[" * 50000 + "]" * 50000
    deep_object = '{"a":' * 20000 + "1" + "}" * 20000
    schema = {"type": "string"}
    for _ in range(300):
        schema = {"type": "object", "properties": {"a": schema}, "required": ["a"], "additionalProperties": False}
    (tmp_path / "deep.json").write_text(json.dumps(schema))
    for extra, said in ((["-o", "stop", deep_list], "-o KEY VALUE: the VALUE's JSON nests too deep to read"),
                        (["--schema", deep_object], "--schema: the JSON Schema nests too deep to read"),
                        (["--schema", str(tmp_path / "deep.json")],
                         "--schema {}: the JSON Schema nests too deep to read".format(tmp_path / "deep.json"))):
        result = _agenthub(["chat", "demo-model", "hi"] + extra + _local(server), env)
        assert result.returncode == 1
        assert result.stderr.decode("utf-8") == "error: ConfigError: {}\n".format(said)
    assert server.requests == []
    result = _agenthub(["mcp", "call", sys.executable, os.path.join(HERE, "mcp_fake_stdio.py"), "modern", "echo",
                        deep_object], env)
    assert result.returncode == 1
    assert result.stderr == b"error: ConfigError: the tool's arguments nest too deep to read\n"
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "deep.json").write_text('{"history": ' + deep_list + "}")
    result = _agenthub(["chat", "demo-model", "hi", "--continue", "deep"] + _local(server), env)
    assert result.returncode == 1
    assert result.stderr.decode("utf-8") == "error: ConfigError: --continue deep: {0} is not a usable trace: {0} is " \
        "not an agenthub trace (nested too deep)\n".format(tmp_path / "cache" / "deep.json")
    result = _agenthub(["serve", "--config", str(tmp_path / "cache" / "deep.json")], env)
    assert result.returncode == 1
    assert result.stderr.decode("utf-8").startswith("error: ConfigError: the server config {} is not JSON: maximum "
                                                    "recursion depth exceeded".format(tmp_path / "cache" / "deep.json"))
    assert server.requests == []


def test_deep_json_at_the_edit_prompt_and_in_a_journal_entry_is_no_traceback():
    """The y/n/e prompt's edited arguments and a journal entry `runs show` reads: JSON nested past the reader
    raised RecursionError out of the command; it is 'not a JSON object' / a corrupt entry, as other bad JSON is."""
    import io

    from agenthub.apps.chat import _asker
    from agenthub.apps.runs_cli import _entries

    deep = '{"a":' * 20000 + "1" + "}" * 20000
    err = io.StringIO()
    ask = _asker(io.StringIO("e\n{}\nn\n".format(deep)), err)
    assert ask({"name": "book", "arguments": {}, "tool_call_id": "c1"}) is False
    assert err.getvalue() == "[tool book({})] run it? [y/n/e] arguments (JSON)> [not a JSON object]\n" \
                             "[tool book({})] run it? [y/n/e] "

    class Store(object):
        def journal_entries(self, run_id):
            return ['{"k": "header"}', deep]

    assert _entries(Store(), "trip-1") == [{"k": "header"}, {"k": "corrupt", "n": 1}]


def _answer_text(text):
    chunks = [{"choices": [{"index": 0, "delta": {"content": text}}]},
              {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}]
    return Answer([("data: " + json.dumps(c) + "\n\n").encode() for c in chunks] + [b"data: [DONE]\n\n"])


#: what JSON leaves as it is (it escapes only C0) and a terminal obeys or reorders by: DEL, a C1 CSI and OSC, RLO
JSON_HOSTILE = "a\x7fb\u009b2Jc\u009d52;c;eA==\u009cd\u202ee"
JSON_HOSTILE_SHOWN = "a\\u007fb\\u009b2Jc\\u009d52;c;eA==\\u009cd\\u202ee"


@pytest.mark.skipif(not hasattr(os, "fork") or sys.platform == "win32", reason="needs a pseudo-terminal")
@pytest.mark.parametrize("flags, shown", [
    (["--schema", "name str"], '{\n  "name": "' + JSON_HOSTILE_SHOWN + '"\n}\n'),
    (["--json"], '"text": "{\\"name\\": \\"' + JSON_HOSTILE_SHOWN + '\\"}"'),
])
def test_json_on_a_terminal_escapes_the_c1_and_bidi_controls_json_leaves_raw(server, tmp_path, flags, shown):
    """`--schema` and `--json` wrote the model's JSON with ensure_ascii=False as it was: JSON escapes ESC but not a
    C1 CSI/OSC (U+009B, U+009D) nor U+202E, so the model's text drove or reordered the terminal. On a terminal they
    are JSON escapes now (the same JSON value); a pipe gets them as they came."""
    answer = json.dumps({"name": JSON_HOSTILE}, ensure_ascii=False)
    server.answers.append(_answer_text(answer))
    terminal = Terminal(["chat", "demo-model", "hi", "--no-log"] + flags + _local(server),
                        _env(tmp_path, NO_COLOR="1"))
    try:
        status = terminal.exit_status(timeout=60)
    finally:
        terminal.kill()
    seen = terminal.seen.decode("utf-8").replace("\r\n", "\n")
    assert shown in seen
    assert not any(char in seen for char in "\x7f\u009b\u009c\u009d\u202e")
    assert status == 0
    server.answers.append(_answer_text(answer))
    piped = _agenthub(["chat", "demo-model", "hi", "--no-log"] + flags + _local(server), _env(tmp_path))
    assert piped.returncode == 0
    assert JSON_HOSTILE in piped.stdout.decode("utf-8")  # (a pipe: as the model said it)


def test_logs_and_batch_status_json_on_a_terminal_escape_the_c1_and_bidi_controls(tmp_path, capsys, monkeypatch):
    """`logs list --json`, `logs export` and `batch status --json` wrote a logged prompt's (an engine's) C1 and bidi
    controls raw to the terminal: JSON escapes only C0. On a terminal they are JSON escapes (the same value)."""
    from agenthub import _controls
    from agenthub.__main__ import main
    from agenthub.apps import conversations
    from agenthub.apps.conversations import Log
    from batch_fakes import BatchFake

    monkeypatch.setenv("AGENTHUB_HOME", str(tmp_path))
    with Log(str(tmp_path / "logs.db")) as log:
        log.add_turn(log.start("m"), "m", {"role": "user", "content_items": [{"type": "text", "text": JSON_HOSTILE}]},
                     {"role": "assistant", "content_items": [{"type": "text", "text": "ok"}]})
    assert conversations.run_logs(argparse.Namespace(logs_command="list", count=20, json=True), sys.stdout) == 0
    assert json.loads(capsys.readouterr()[0])[0]["first_prompt"] == JSON_HOSTILE  # (a pipe: as it was)
    monkeypatch.setattr(_controls, "is_terminal", lambda stream: True)
    for action in (argparse.Namespace(logs_command="list", count=20, json=True),
                   argparse.Namespace(logs_command="export", id=None, markdown=False)):
        assert conversations.run_logs(action, sys.stdout) == 0
        shown = capsys.readouterr()[0]
        assert JSON_HOSTILE_SHOWN in shown and not any(char in shown for char in "\x7f\u009b\u009c\u009d\u202e")
        assert JSON_HOSTILE in json.dumps(json.loads(shown), ensure_ascii=False)  # (the same JSON value)
    with BatchFake(polls=5) as fake:
        state = _batch_with_errors(fake, tmp_path, capsys, monkeypatch, JSON_HOSTILE)
        assert main(["batch", "status", state, "--json"]) == 4
        shown = capsys.readouterr()[0]
    assert JSON_HOSTILE_SHOWN in shown and not any(char in shown for char in "\x7f\u009b\u009c\u009d\u202e")
    assert JSON_HOSTILE in json.dumps(json.loads(shown), ensure_ascii=False)


def _wait_for_a_file_holding(folder, text, child, seconds=30.0):
    """Wait until some file in ``folder`` holds ``text`` (the answer's first words, wherever they are written)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and child.poll() is None:
        for name in os.listdir(str(folder)):
            try:
                with open(os.path.join(str(folder), name), "rb") as handle:
                    if text in handle.read():
                        return
            except OSError:
                pass
        time.sleep(0.02)
    raise AssertionError("the answer never started")


def test_ctrl_c_mid_answer_leaves_the_output_file_as_it_was_and_no_temporary_file(server, tmp_path):
    """`agenthub chat MODEL PROMPT --output FILE`, Ctrl-C while the answer streams: FILE was truncated at the answer's
    first byte and left holding half an answer (exit 130, but the previous content gone).  The answer is written
    beside FILE and renamed over it once whole: a stopped answer leaves FILE as it was, and nothing beside it."""
    folder = tmp_path / "out"
    folder.mkdir()
    kept = folder / "summary.txt"
    kept.write_text("precious\n")
    os.chmod(str(kept), 0o640)
    status, out, err = _ctrl_c_mid_answer(server, tmp_path, ["chat", "demo-model", "hi", "--output", str(kept)],
                                          lambda child: _wait_for_a_file_holding(folder, b"It is ", child))
    assert status == 130, err
    assert (out, err.decode("utf-8")) == (b"", "[stopped]\n[--output {}: left as it was (the answer was "
                                               "stopped)]\n".format(kept))
    assert sorted(os.listdir(str(folder))) == ["summary.txt"]
    assert kept.read_text() == "precious\n"
    # a whole answer replaces it, with the file's permissions kept
    server.answers.append(Answer([_recording()]))
    result = _agenthub(["chat", "demo-model", "hi", "--output", str(kept)] + _local(server), _env(tmp_path))
    assert (result.returncode, result.stdout) == (0, b""), result.stderr
    assert kept.read_text(encoding="utf-8") == ANSWER_TEXT + "\n"
    assert sorted(os.listdir(str(folder))) == ["summary.txt"]
    assert os.stat(str(kept)).st_mode & 0o7777 == 0o640


@pytest.mark.skipif(not hasattr(signal, "SIGHUP"), reason="POSIX signals")
@pytest.mark.parametrize("sent", [signal.SIGTERM, getattr(signal, "SIGHUP", signal.SIGTERM)])
def test_sigterm_mid_answer_leaves_the_output_file_as_it_was_and_no_partial_file(server, tmp_path, sent):
    """`agenthub chat ... --output FILE` ended by SIGTERM (a `timeout`, systemd, docker stop) or SIGHUP (its terminal
    closed) while the answer streams: the default action ended the process where it stood and left the hidden
    ``.summary.txt.XXXXXXXX.part`` beside FILE for ever.  The command unwinds: FILE as it was, nothing beside it,
    the exit status the signal's (128 + its number)."""
    folder = tmp_path / "out"
    folder.mkdir()
    kept = folder / "summary.txt"
    kept.write_text("precious\n")
    status, out, err = _ctrl_c_mid_answer(server, tmp_path, ["chat", "demo-model", "hi", "--output", str(kept)],
                                          lambda child: _wait_for_a_file_holding(folder, b"It is ", child), sent)
    assert status == 128 + sent, err
    assert (out, err.decode("utf-8")) == (b"", "[--output {}: left as it was (the answer was stopped)]\n".format(kept))
    assert sorted(os.listdir(str(folder))) == ["summary.txt"]
    assert kept.read_text() == "precious\n"
