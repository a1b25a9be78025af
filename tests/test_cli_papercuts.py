"""Issue 29 C5: the command line's papercuts a newcomer hit: chat --output (and a hint for `-o FILE`), a piped
prompt's newline in `logs list`, the 404 hint's quoting, what `-c` continues, `models --json` and its routes,
`models` and the *_BASE_URL variables."""

import json
import os
import stat

import pytest

from agenthub.__main__ import main
from agenthub.apps.chat import cli_terms
from agenthub.catalog import list_supported_models
from agenthub.registry import list_models


from conftest import chat_answer, local, server  # noqa: F401  (server: the fixture)


def test_chat_output_writes_the_answer_to_a_file(server, tmp_path, capsys):
    server.answers.append(chat_answer("Nile"))
    target = tmp_path / "answer.txt"
    assert main(["chat", "m", "Name a river.", "--output", str(target)] + local(server)) == 0
    assert target.read_text(encoding="utf-8") == "Nile\n"
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.startswith("[done: stop] tokens:")


def test_chat_o_with_a_file_name_says_what_o_is_and_where_output_is(capsys):
    with pytest.raises(SystemExit) as info:
        main(["chat", "m", "hi", "-o", "out.txt"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "-o/--option: expected 2 arguments" in err
    assert err.rstrip().endswith("-o is a config option (-o KEY VALUE, e.g. -o top_p 0.9); to write the answer to a "
                                 "file use --output FILE (batch run's -o is its output file)")


def test_a_piped_prompts_newline_stays_out_of_logs_list(server, capsys):
    server.answers.extend([chat_answer("a"), chat_answer("b")])
    assert main(["chat", "m", "Weather in Paris?\n"] + local(server)) == 0
    assert main(["chat", "m", "first line\n\nsecond\tline\n"] + local(server)) == 0
    capsys.readouterr()
    assert main(["logs", "list"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert len(listed) == 2 and all(line.strip() for line in listed), listed
    assert listed[0].endswith("1 turn(s)  first line second line")
    assert listed[1].endswith("1 turn(s)  Weather in Paris?")


def test_the_missing_v1_hint_reads_as_a_flag_and_its_value():
    message = ("openai-chat: 404 from http://127.0.0.1:9/chat/completions (the path has no /v1/chat/completions): "
               "try base_url='http://127.0.0.1:9/v1'")
    assert cli_terms(message).endswith("try --base-url 'http://127.0.0.1:9/v1'")


def test_c_says_which_conversation_and_model_it_continues(server, capsys):
    server.answers.extend([chat_answer("Paris."), chat_answer("Lyon."), chat_answer("Marseille.")])
    assert main(["chat", "m", "Capital of France?"] + local(server)) == 0
    capsys.readouterr()
    assert main(["logs", "list", "--json"]) == 0
    conversation = json.loads(capsys.readouterr().out)[0]["id"]
    assert main(["chat", "m", "-c", "Second city?"] + local(server)) == 0
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "[continuing {}: 2 messages with m (openai-chat)]".format(conversation)
    assert main(["chat", "other-model", "-c", "Third?"] + local(server)) == 0
    err = capsys.readouterr().err.splitlines()
    assert err[0] == ("[continuing {}: 4 messages with m (openai-chat); this turn goes to other-model]".format(
        conversation))


def test_models_json_alone_lists_the_catalog_and_routes_have_their_own_flag(capsys):
    assert main(["models", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == list_supported_models()
    assert main(["models", "--routes", "--json"]) == 0
    routes = json.loads(capsys.readouterr().out)
    assert [{k: v for k, v in row.items() if k != "endpoint"} for row in routes] == list_models()
    assert main(["models", "--routes"]) == 0
    assert capsys.readouterr().out.startswith("MODEL NAMES ")


def test_models_shows_the_endpoint_a_base_url_variable_names(monkeypatch, capsys):
    monkeypatch.setenv("DEEPSEEK_BASE_URL", "http://127.0.0.1:18131/v1")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    assert main(["models"]) == 0
    lines = capsys.readouterr().out.splitlines()
    deepseek = [line for line in lines if line.startswith("deepseek-*")]
    assert deepseek and all("http://127.0.0.1:18131/v1 (DEEPSEEK_BASE_URL)" in line for line in deepseek), deepseek
    assert any(line.startswith("gpt-") and "https://api.openai.com/v1" in line for line in lines)
    assert main(["models", "--routes", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {row["endpoint"] for row in rows if row.get("base_url_env") == "DEEPSEEK_BASE_URL"} == {
        "http://127.0.0.1:18131/v1"}
    assert all(row["endpoint"] == row["base_url"] for row in rows if row.get("base_url_env") == "OPENAI_BASE_URL")


@pytest.mark.parametrize("extra, said", [
    (["--max-turns", "3"], "--max-turns goes with --tool or --mcp (it bounds a tool run)"),
    (["--yes"], "--yes goes with --tool or --mcp (it runs their calls without asking)"),
])
def test_the_tool_run_flags_are_refused_without_a_tool(extra, said, capsys):
    argv = ["chat", "m", "hi", "--client-type", "openai-chat", "--base-url", "http://127.0.0.1:9/v1", "--no-log"]
    assert main(argv + extra) == 1
    assert capsys.readouterr().err == "error: ConfigError: {}\n".format(said)


@pytest.mark.parametrize("argv, said", [
    (["models", "--routes", "--provider", "openai"],
     "--routes lists the routing table; --provider and --supports list the catalog: give one or the other"),
    (["models", "--routes", "--supports", "tools"],
     "--routes lists the routing table; --provider and --supports list the catalog: give one or the other"),
    (["models", "--provider", ""],
     "unknown catalog provider ''; providers: openai, anthropic, google, bedrock, deepseek, zai, moonshot, "
     "dashscope, minimax, openrouter"),
])
def test_models_flags_that_would_be_ignored_are_refused(argv, said, capsys):
    assert main(argv) == 1
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == ("", "error: ConfigError: {}\n".format(said))


def test_chat_output_replaces_a_links_target_writes_a_device_in_place_and_keeps_a_file_a_cut_answer_began(
        server, tmp_path, capsys):
    """--output FILE writes beside FILE and renames once the answer is whole: through a symbolic link the target
    is replaced (the link kept), /dev/null is written in place (never replaced by a file), a new file gets the
    umask's mode as open() gives it, and an answer the connection cut leaves FILE as it was, nothing beside it."""
    import os
    import stat

    from sse_server import Answer

    target = tmp_path / "real.txt"
    target.write_text("old\n")
    link = tmp_path / "link.txt"
    os.symlink(str(target), str(link))
    server.answers.append(chat_answer("Nile"))
    assert main(["chat", "m", "Name a river.", "--output", str(link)] + local(server)) == 0
    assert (os.path.islink(str(link)), target.read_text(encoding="utf-8")) == (True, "Nile\n")
    server.answers.append(chat_answer("Nile"))
    assert main(["chat", "m", "Name a river.", "--output", os.devnull] + local(server)) == 0
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)
    umask = os.umask(0o022)
    try:
        server.answers.append(chat_answer("Nile"))
        fresh = tmp_path / "fresh.txt"
        assert main(["chat", "m", "Name a river.", "--output", str(fresh)] + local(server)) == 0
    finally:
        os.umask(umask)
    assert stat.S_IMODE(os.stat(str(fresh)).st_mode) == 0o644
    capsys.readouterr()
    first = {"choices": [{"index": 0, "delta": {"content": "The Ni"}, "finish_reason": None}]}
    server.answers.append(Answer([("data: " + json.dumps(first) + "\n\n").encode()], chunked=False))
    assert main(["chat", "m", "Name a river.", "--output", str(target), "--max-retries", "0"] + local(server)) == 1
    err = capsys.readouterr().err
    assert err.startswith("[--output {}: left as it was (the answer did not finish)]\nerror: ".format(target)), err
    assert target.read_text(encoding="utf-8") == "Nile\n"
    assert sorted(os.listdir(str(tmp_path))) == ["fresh.txt", "link.txt", "real.txt"]


def _answered_to(server, path, river="Nile"):
    """``chat --output PATH`` answered ``river``, exit 0."""
    server.answers.append(chat_answer(river))
    assert main(["chat", "m", "Name a river.", "--output", str(path)] + local(server)) == 0


@pytest.mark.skipif(not hasattr(os, "fchown") or os.geteuid() != 0, reason="giving a file to another user: root")
def test_chat_output_keeps_the_owner_and_group_of_the_file_it_replaces(server, tmp_path):
    """`sudo agenthub chat ... --output ~/answer.txt`: the answer, written beside FILE and renamed over it, made the
    user's file root's (mode kept, owner lost: the user could no longer write it).  FILE keeps its owner and group."""
    target = tmp_path / "answer.txt"
    target.write_text("old\n")
    os.chown(str(target), 4321, 4322)
    os.chmod(str(target), 0o640)
    _answered_to(server, target)
    made = os.stat(str(target))
    assert (made.st_uid, made.st_gid, stat.S_IMODE(made.st_mode)) == (4321, 4322, 0o640)
    assert target.read_text(encoding="utf-8") == "Nile\n"
    assert sorted(os.listdir(str(tmp_path))) == ["answer.txt"]


def test_chat_output_writes_in_place_a_hard_linked_file_and_one_that_cannot_be_renamed_over(
        server, tmp_path, monkeypatch):
    """A FILE with another hard link kept its old answer under the other name (the rename parted the two); a FILE
    that cannot be renamed over (a mount point of its own: EBUSY, a container's bind-mounted file) lost the answer
    paid for (the rename's OSError, exit 1, the partial file removed).  Both are written in place."""
    import errno

    target = tmp_path / "answer.txt"
    target.write_text("old\n")
    other = tmp_path / "other-name.txt"
    os.link(str(target), str(other))
    _answered_to(server, target)
    assert (target.read_text(encoding="utf-8"), other.read_text(encoding="utf-8")) == ("Nile\n", "Nile\n")
    os.remove(str(other))
    replace = os.replace

    def busy(source, destination):
        if str(source).endswith(".part"):
            raise OSError(errno.EBUSY, "Device or resource busy")
        return replace(source, destination)

    monkeypatch.setattr(os, "replace", busy)
    _answered_to(server, target, "Amazon")
    assert target.read_text(encoding="utf-8") == "Amazon\n"
    assert sorted(os.listdir(str(tmp_path))) == ["answer.txt"]


def test_chat_output_never_lets_others_open_the_partial_file_of_a_private_file(server, tmp_path, monkeypatch):
    """FILE is 0600 (an answer only its owner may read): the partial file beside it was made 0644 (the umask's mode)
    and given FILE's mode after, so another user could open it in between and, holding it open, read the answer as
    it was written.  It is made 0600 and given FILE's mode then."""
    target = tmp_path / "private.txt"
    target.write_text("old\n")
    os.chmod(str(target), 0o600)
    seen = []
    chmod = os.chmod

    def watched(path, mode, *args, **kwargs):
        if str(path).endswith(".part"):
            seen.append((stat.S_IMODE(os.stat(path).st_mode), mode))
        return chmod(path, mode, *args, **kwargs)

    monkeypatch.setattr(os, "chmod", watched)
    umask = os.umask(0o022)
    try:
        _answered_to(server, target)
    finally:
        os.umask(umask)
    assert seen == [(0o600, 0o600)]
    assert (stat.S_IMODE(os.stat(str(target)).st_mode), target.read_text(encoding="utf-8")) == (0o600, "Nile\n")
