"""The command line's SQLite conversation log (agenthub.conversations)."""

import os
import stat
import sqlite3

import pytest

from agenthub.apps import conversations
from agenthub.apps.conversations import Log, enabled, export_markdown, home

USER = {"role": "user", "content_items": [{"type": "text", "text": "Weather in Paris?"},
                                          {"type": "inline_data", "data": b"\x89PNG\x00", "mime_type": "image/png"}],
        "created_at": 1}
ANSWER = {"role": "assistant", "content_items": [{"type": "thinking", "thinking": "hm", "fidelity": {"signature": "s"}},
                                                 {"type": "text", "text": "22 C and sunny."}],
          "usage_metadata": {"prompt_tokens": 10, "cached_tokens": None, "thoughts_tokens": 2, "response_tokens": 5},
          "finish_reason": "stop", "created_at": 2}


def test_home_follows_agenthub_home_then_the_platform_data_dir(monkeypatch):
    assert home({"AGENTHUB_HOME": "/x/y"}) == "/x/y"
    monkeypatch.setattr(conversations.sys, "platform", "linux")
    assert home({"XDG_DATA_HOME": "/data"}) == os.path.join("/data", "agenthub")
    assert home({}).endswith(os.path.join(".local", "share", "agenthub"))


@pytest.mark.parametrize("value, on", [("", True), ("1", True), ("0", False), ("false", False), ("off", False),
                                       ("no", False), ("yes", True), ("On", True), (" true ", True),
                                       ("disabled", False), ("never", False), ("2", False)])
def test_agenthub_log_prompts_switches_it(value, on):
    assert enabled(False, {"AGENTHUB_LOG_PROMPTS": value}) is on
    assert enabled(True, {"AGENTHUB_LOG_PROMPTS": value}) is False


def test_turns_round_trip_with_bytes_and_fidelity_and_latest_is_the_last_touched(tmp_path):
    path = str(tmp_path / "logs.db")
    with Log(path) as log:
        first = log.start("claude-x", "anthropic", "api.anthropic.com", "Be brief.")
        log.add_turn(first, "claude-x", USER, ANSWER, 0.0012)
        second = log.start("gpt-y", "openai-responses", "api.openai.com")
        assert log.latest() == second
        log.add_turn(first, "claude-x", USER, ANSWER)
        assert log.latest() == first
        assert log.history(first) == [USER, ANSWER, USER, ANSWER]
        assert log.history(second) == []
        assert log.conversation(first)["turns"] == 2
        assert log.conversation(first)["system"] == "Be brief."
        assert log.conversation("c_missing") is None
        listed = log.list()
        assert [row["id"] for row in listed] == [first, second]
        assert listed[0]["turns"] == 2 and listed[0]["first_prompt"] == "Weather in Paris?"
        turns = log.turns(first)
        assert turns[0]["cost_usd"] == 0.0012 and turns[1]["cost_usd"] is None
        assert turns[0]["usage_metadata"] == ANSWER["usage_metadata"]
        md = export_markdown(log, first)
    assert md.splitlines()[:3] == ["# Conversation {} (claude-x)".format(first), "", "System: Be brief."]
    assert "22 C and sunny." in md
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600


def test_show_and_markdown_name_what_is_not_text(tmp_path, monkeypatch, capsys):
    """An image, a tool call: ``logs show`` and ``logs export --markdown`` name them, where they used to print
    nothing (a turn that asked for a tool read as an empty answer; an attached image was not there)."""
    from agenthub.__main__ import main

    monkeypatch.setenv("AGENTHUB_HOME", str(tmp_path))
    call = {"role": "assistant", "content_items": [
        {"type": "tool_call", "name": "get_weather", "arguments": {"city": "Paris"}, "tool_call_id": "c1"}],
        "usage_metadata": ANSWER["usage_metadata"], "finish_reason": "tool_call", "created_at": 3}
    url = {"role": "user", "content_items": [
        {"type": "image_url", "image_url": "https://img.example/a.png?X-Amz-Signature=sig-secret-123"},
        {"type": "tool_result", "tool_call_id": "c1", "text": "18 C"}], "created_at": 4}
    with Log(str(tmp_path / "logs.db")) as log:
        first = log.start("claude-x", "anthropic", "api.anthropic.com")
        log.add_turn(first, "claude-x", USER, call)
        log.add_turn(first, "claude-x", url, ANSWER)
        md = export_markdown(log, first)
    assert main(["logs", "show", first]) == 0
    shown = [line.split("] ", 1)[1] for line in capsys.readouterr().out.splitlines()]
    assert shown == ["you: Weather in Paris? [image/png, 5 bytes]",
                     'claude-x: [tool call get_weather({"city": "Paris"})]',
                     "you: [image https://img.example/a.png?X-Amz-Signature=***] 18 C",
                     "claude-x: 22 C and sunny."]
    assert "Weather in Paris? [image/png, 5 bytes]" in md.splitlines()
    assert '[tool call get_weather({"city": "Paris"})]' in md.splitlines()
    assert "sig-secret-123" not in md


def test_the_default_place_is_created_private(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTHUB_HOME", str(tmp_path / "home"))
    with Log() as log:
        log.start("m")
    assert os.path.exists(str(tmp_path / "home" / "logs.db"))
    assert stat.S_IMODE(os.stat(str(tmp_path / "home")).st_mode) == 0o700


def test_the_schema_has_no_column_for_keys_headers_or_urls(tmp_path):
    path = str(tmp_path / "logs.db")
    Log(path).close()
    db = sqlite3.connect(path)
    columns = {row[1] for table in ("conversations", "turns") for row in db.execute("PRAGMA table_info(%s)" % table)}
    db.close()
    assert columns == {"id", "model", "client_type", "host", "system", "created_at", "updated_at",
                       "conversation_id", "prompt", "answer", "usage", "finish_reason", "cost_usd"}


# -- issue 29 D5: a corrupted or hostile log is a clear error; the file is kept private --------------------------


def _logs(monkeypatch, tmp_path, *argv):
    """``agenthub logs ...`` in this process against AGENTHUB_HOME=tmp_path/home -> (rc, stdout, stderr)."""
    import io
    import contextlib
    from agenthub.__main__ import main
    monkeypatch.setenv("AGENTHUB_HOME", str(tmp_path / "home"))
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(["logs"] + list(argv))
    return rc, out.getvalue(), err.getvalue()


def test_a_corrupted_log_is_a_config_error_naming_the_file(tmp_path, monkeypatch):
    from agenthub import ConfigError
    path = str(tmp_path / "logs.db")
    with open(path, "wb") as handle:
        handle.write(b"this is not a database" * 100)
    with pytest.raises(ConfigError) as info:
        Log(path)
    assert path in str(info.value) and "not a database" in str(info.value)
    os.makedirs(str(tmp_path / "home"))
    os.rename(path, str(tmp_path / "home" / "logs.db"))
    rc, out, err = _logs(monkeypatch, tmp_path)
    assert rc != 0 and "Traceback" not in err and "ConfigError" in err
    assert str(tmp_path / "home" / "logs.db") in err


@pytest.mark.parametrize("prompt, answer", [
    ("[" * 100000 + "]" * 100000, '{"role": "assistant", "content_items": []}'),
    ('{"role": "user", "content_items": []}',
     '{"role": "assistant", "content_items": [{"type": "inline_data", "mime_type": "image/png", '
     '"data": {"__bytes__": "!!!"}}]}'),
    ('"just a string"', '[1, 2]'),
    ("not json", "{}"),
])
def test_a_hostile_row_is_a_config_error_not_a_traceback(tmp_path, monkeypatch, prompt, answer):
    from agenthub import ConfigError
    os.makedirs(str(tmp_path / "home"))
    path = str(tmp_path / "home" / "logs.db")
    with Log(path) as log:
        conversation = log.start("m")
        log._db.execute("INSERT INTO turns (conversation_id, model, prompt, answer, created_at) VALUES (?, 'm', ?, ?, 1)",
                        (conversation, prompt, answer))
        log._db.commit()
        for read in (log.history, log.turns):
            with pytest.raises(ConfigError, match="conversation log {}".format(path)):
                read(conversation)
    for argv in (["show", conversation], ["export", conversation], ["export", conversation, "--markdown"]):
        rc, out, err = _logs(monkeypatch, tmp_path, *argv)
        assert rc != 0 and "Traceback" not in err and "ConfigError" in err and path in err, (argv, err)


def test_an_existing_world_readable_log_is_made_private(tmp_path):
    path = str(tmp_path / "logs.db")
    sqlite3.connect(path).close()
    os.chmod(path, 0o644)
    Log(path).close()
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
