"""The command line's habits (simonw/llm's): -s, -c, -o KEY VALUE, --schema, options after the prompt,
the subcommand's usage on a bad flag, nearest model names, --fallback, the conversation log and
`agenthub logs`, and log records that never land on the answer's line."""

import json
import logging
import os
import sqlite3
import subprocess
import sys

import pytest

from agenthub.__main__ import main
from agenthub.apps.chat import _LineBreak, _next_trace_id
from agenthub.apps.terminal import Printer
from sse_server import Answer, SSEServer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


from conftest import chat_answer, local, server  # noqa: F401  (server: the fixture)


def test_options_may_follow_the_prompt_and_s_is_system(server, capsys):
    server.answers.append(chat_answer("fine"))
    assert main(["chat", "m", "-s", "Be brief.", "hello there"] + local(server) + ["--max-tokens", "9"]) == 0
    body = server.requests[0]["body"]
    assert body["messages"] == [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hello there"}]
    assert body.get("max_completion_tokens", body.get("max_tokens")) == 9
    assert capsys.readouterr().out == "fine\n"


def test_o_sets_any_config_key_with_json_values_and_schema_asks_for_structured_output(server, tmp_path, capsys):
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    strict = dict(schema, additionalProperties=False)  # (typed output sends the strict form: tests/test_cli_schema.py)
    path = tmp_path / "schema.json"
    path.write_text(json.dumps(schema), encoding="utf-8")
    server.answers.extend([chat_answer('{"city": "Oslo"}'), chat_answer('{"city": "Oslo"}')])
    assert main(["chat", "m", "x", "-o", "temperature", "0.25", "-o", "stop", '["END"]', "-o", "seed", "7",
                 "--schema", str(path)] + local(server)) == 0
    body = server.requests[0]["body"]
    assert (body["temperature"], body["stop"], body["seed"]) == (0.25, ["END"], 7)
    assert body["response_format"] == {"type": "json_schema",
                                       "json_schema": {"name": "output", "schema": strict, "strict": True}}
    assert main(["chat", "m", "x", "--schema", json.dumps(schema)] + local(server)) == 0
    assert server.requests[1]["body"]["response_format"]["json_schema"]["schema"] == strict


@pytest.mark.parametrize("extra, words", [
    (["--trace-id", "y", "-o", "trace_id", "x"], "-o trace_id and --trace-id both set it: give one"),
    (["-o", "max_tokens", "5", "-o", "max_tokens", "7"], "-o max_tokens is given twice: give it once"),
    (["--max-tokens", "9", "-o", "max_tokens", "7"], "-o max_tokens and --max-tokens both set it: give one"),
    (["-s", "Be brief.", "-o", "system_prompt", "Be long."],
     "-o system_prompt and --system both set it: give one"),
    (["--thinking", "low", "-o", "thinking_level", "high"],
     "-o thinking_level and --thinking both set it: give one"),
    (["--temperature", "1", "-o", "temperature", "0.5"],
     "-o temperature and --temperature both set it: give one"),
    (["--background", "-o", "background", "false"], "-o background and --background both set it: give one"),
])
def test_a_config_key_set_twice_is_a_config_error_not_one_value_dropped(server, capsys, extra, words):
    """A flag a -o KEY VALUE overrode (or an earlier -o the next one did) was dropped silently: the trace went
    under the -o name and --trace-id's was never written.  Now: a ConfigError naming both, nothing sent."""
    assert main(["chat", "m", "x"] + extra + local(server)) == 1
    assert capsys.readouterr().err == "error: ConfigError: {}\n".format(words)
    assert server.requests == []


def test_an_unknown_o_key_is_a_config_error_naming_it(server, capsys):
    assert main(["chat", "m", "x", "-o", "temprature", "1"] + local(server)) == 1
    assert "temprature" in capsys.readouterr().err
    assert server.requests == []


@pytest.mark.parametrize("argv, usage", [
    (["chat", "m", "--bogus"], "usage: agenthub chat"),
    (["models", "--bogus"], "usage: agenthub models"),
    (["trace", "show", "f", "--bogus"], "usage: agenthub trace show"),
    (["logs", "list", "--bogus"], "usage: agenthub logs list"),
])
def test_a_bad_flag_prints_the_subcommands_usage(argv, usage, capsys):
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(usage) and "--bogus" in err


def test_an_unknown_model_suggests_the_nearest_names(capsys):
    assert main(["chat", "gpt5.5", "hi"]) == 1
    err = capsys.readouterr().err
    assert "did you mean" in err and "gpt-5.5" in err


def test_fallback_models_reach_the_client(monkeypatch):
    from agenthub.apps.chat import _chat_client

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0001")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-0002")

    class Args(object):
        model, api_key_env, base_url, client_type, timeout, max_retries, budget = "gpt-5.5", None, None, None, \
            None, None, None
        fallback = ["claude-sonnet-4-6"]

    client = _chat_client(Args())
    assert [(c.model, c.client_type) for c in client.fallbacks] == [("claude-sonnet-4-6", "anthropic")]


def test_c_continues_the_latest_logged_conversation_and_logs_lists_it(server, capsys):
    server.answers.extend([chat_answer("Paris."), chat_answer("Lyon."), chat_answer("new")])
    assert main(["chat", "m", "Capital of France?"] + local(server)) == 0
    assert main(["chat", "m", "-c", "Second city?"] + local(server)) == 0
    assert [m["content"] for m in server.requests[1]["body"]["messages"]] == [
        "Capital of France?", "Paris.", "Second city?"]
    capsys.readouterr()
    assert main(["logs"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert len(listed) == 1 and " 2 turn(s)  Capital of France?" in listed[0]
    conversation = listed[0].split()[0]
    assert main(["logs", "show"]) == 0
    shown = capsys.readouterr().out
    assert "you: Capital of France?" in shown and "m: Lyon." in shown
    assert main(["logs", "export", conversation]) == 0
    exported = json.loads(capsys.readouterr().out)
    assert [m["role"] for m in exported["messages"]] == ["user", "assistant", "user", "assistant"]
    assert main(["chat", "m", "--continue", conversation, "Third?"] + local(server)) == 0
    assert len(server.requests[2]["body"]["messages"]) == 5


def test_no_log_and_agenthub_log_prompts_0_keep_the_conversation_out(server, monkeypatch, capsys):
    server.answers.extend([chat_answer("a"), chat_answer("b")])
    assert main(["chat", "m", "one", "--no-log"] + local(server)) == 0
    monkeypatch.setenv("AGENTHUB_LOG_PROMPTS", "0")
    assert main(["chat", "m", "two"] + local(server)) == 0
    assert not os.path.exists(os.path.join(os.environ["AGENTHUB_HOME"], "logs.db"))
    assert main(["chat", "m", "-c", "three"] + local(server)) == 1
    assert "nothing to continue" in capsys.readouterr().err


def test_an_unknown_agenthub_log_prompts_value_keeps_the_conversation_out_and_says_so(server, monkeypatch, capsys):
    """AGENTHUB_LOG_PROMPTS=disabled (or any value that is neither on nor off) meant "off" to whoever set it:
    the prompt is not written to the log (it was, silently), and stderr says why, once."""
    server.answers.extend([chat_answer("a")])
    monkeypatch.setenv("AGENTHUB_LOG_PROMPTS", "disabled")
    assert main(["chat", "m", "one"] + local(server)) == 0
    assert not os.path.exists(os.path.join(os.environ["AGENTHUB_HOME"], "logs.db"))
    err = capsys.readouterr().err
    assert err.count("AGENTHUB_LOG_PROMPTS") == 1
    assert ("agenthub: AGENTHUB_LOG_PROMPTS='disabled' is neither on (1, true, yes, on) nor off (0, false, no, off): "
            "this conversation is not logged\n") in err


def test_the_log_holds_no_key(server, monkeypatch, capsys):
    monkeypatch.setenv("LOCAL_KEY", "sk-secret-local-0009")
    server.answers.append(chat_answer("ok"))
    assert main(["chat", "m", "hi", "--api-key-env", "LOCAL_KEY"] + local(server)) == 0
    with open(os.path.join(os.environ["AGENTHUB_HOME"], "logs.db"), "rb") as handle:
        raw = handle.read()
    assert b"sk-secret-local-0009" not in raw
    db = sqlite3.connect(os.path.join(os.environ["AGENTHUB_HOME"], "logs.db"))
    assert db.execute("SELECT host FROM conversations").fetchall() == [("127.0.0.1",)]
    db.close()


def test_reset_with_a_trace_id_starts_a_new_trace(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTHUB_CACHE_DIR", str(tmp_path))
    assert _next_trace_id("run") == "run-2"
    (tmp_path / "run-2.json").write_text("{}", encoding="utf-8")
    assert _next_trace_id("run") == "run-3"
    assert _next_trace_id("run-3") == "run-4"


def test_a_log_record_never_lands_on_the_answers_line(capsys):
    out = __import__("io").StringIO()
    printer = Printer(out, color=False)
    handler = logging.StreamHandler(out)
    handler._agenthub_env = True
    logger = logging.getLogger("agenthub")
    logger.addHandler(handler)
    previous = logger.level
    logger.setLevel(logging.DEBUG)
    breaker = _LineBreak(printer)
    try:
        printer.item({"type": "text", "text": "The answer is"})
        logger.debug("POST http://127.0.0.1/v1 200")
        printer.item({"type": "text", "text": " 42."})
    finally:
        breaker.remove()
        logger.removeHandler(handler)
        logger.setLevel(previous)
    assert out.getvalue() == "The answer is\nPOST http://127.0.0.1/v1 200\n 42."


def test_an_unknown_agenthub_log_value_warns_once():
    env = dict(os.environ, AGENTHUB_LOG="verbose", PYTHONPATH=ROOT)
    result = subprocess.run([sys.executable, "-c", "import agenthub, agenthub.client; import importlib; "
                             "importlib.reload(agenthub.client)"], env=env, cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    lines = [line for line in result.stderr.decode().splitlines() if "AGENTHUB_LOG" in line]
    assert len(lines) == 1 and "'verbose'" in lines[0] and "debug" in lines[0] and "info" in lines[0]


def test_trace_show_totals_keep_unknown_buckets_unknown():
    from agenthub.tracer import render_text

    history = [{"role": "user", "content_items": [{"type": "text", "text": "hi"}]},
               {"role": "assistant", "content_items": [{"type": "text", "text": "a"}],
                "usage_metadata": {"cached_tokens": None, "prompt_tokens": 3, "thoughts_tokens": None,
                                   "response_tokens": 1}},
               {"role": "assistant", "content_items": [{"type": "text", "text": "b"}],
                "usage_metadata": {"cached_tokens": None, "prompt_tokens": 4, "thoughts_tokens": None,
                                   "response_tokens": None}}]
    assert render_text(history, {}).splitlines()[-1] == \
        "Total usage: cached_tokens=None, prompt_tokens=7, thoughts_tokens=None, response_tokens=1"


def test_after_a_failover_chat_names_prices_and_logs_the_model_that_answered(monkeypatch, capsys):
    """Issue 29 A2: `agenthub chat claude-sonnet-4-6 --fallback deepseek-v4-flash` with Claude down: the turn is
    shown, priced and logged as deepseek-v4-flash (before: Claude's price, and the log said Claude)."""
    from agenthub import cost
    from agenthub.apps.terminal import usage_line

    with SSEServer() as down, SSEServer() as backup:
        down.answers.append(Answer([json.dumps({"type": "error", "error": {"type": "overloaded_error",
                                                                           "message": "Overloaded"}}).encode()],
                                   status=529, headers={"Content-Type": "application/json"}, chunked=False))
        backup.answers.append(chat_answer("ok"))
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-0002")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", down.url)
        monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-deepseek-test-0003")
        monkeypatch.setenv("DEEPSEEK_BASE_URL", backup.url + "/v1")
        assert main(["chat", "claude-sonnet-4-6", "Say ok", "--fallback", "deepseek-v4-flash", "--max-retries", "0",
                     "--max-tokens", "8"]) == 0
    captured = capsys.readouterr()
    usage = {"prompt_tokens": 3, "thoughts_tokens": None, "response_tokens": 1, "cached_tokens": None}
    assert "[fallback: deepseek-v4-flash answered]" in captured.err
    assert cost("deepseek-v4-flash", usage) != cost("claude-sonnet-4-6", usage)
    assert usage_line("stop", usage, cost("deepseek-v4-flash", usage)) in captured.err
    with sqlite3.connect(os.path.join(os.environ["AGENTHUB_HOME"], "logs.db")) as db:
        model, cost_usd = db.execute("SELECT model, cost_usd FROM turns ORDER BY rowid DESC LIMIT 1").fetchone()
    assert (model, cost_usd) == ("deepseek-v4-flash", cost("deepseek-v4-flash", usage))


def test_anthropic_version_pins_the_api_version_and_the_error_says_the_flag(server, capsys):
    from agent_streams import anthropic_text
    from sse_server import Answer

    claude = ["--client-type", "anthropic", "--base-url", server.url]  # a gateway: 2023-06-01 unless pinned
    newest = ["--anthropic-version", "2026-10-21"]
    assert main(["chat", "claude-sonnet-4-6", "hi", "--temperature", "0.5"] + newest + claude) == 1
    err = capsys.readouterr().err
    assert "pin the previous version with --anthropic-version 2023-06-01" in err and "AutoLLMClient" not in err
    assert server.requests == []  # refused before anything is sent
    server.answers.extend([Answer([anthropic_text("fine")]), Answer([anthropic_text("again")])])
    assert main(["chat", "claude-sonnet-4-6", "hi"] + newest + claude) == 0
    assert main(["chat", "claude-sonnet-4-6", "hi", "--temperature", "0.5", "--anthropic-version", "2023-06-01"]
                + claude) == 0
    assert [(r["headers"]["anthropic-version"], r["body"].get("temperature")) for r in server.requests] == [
        ("2026-10-21", None), ("2023-06-01", 0.5)]
    assert capsys.readouterr().out == "fine\nagain\n"
    assert main(["chat", "claude-sonnet-4-6", "hi", "--anthropic-version", "2024-01-01"] + claude) == 1
    err = capsys.readouterr().err
    assert err.count("--anthropic-version must be one of '2026-10-21', '2023-06-01' (got '2024-01-01')") == 1
    assert main(["chat", "m", "hi", "--anthropic-version", "2023-06-01"] + local(server)) == 1
    assert "--anthropic-version applies to Claude over the Anthropic Messages API" in capsys.readouterr().err
    assert len(server.requests) == 2
