"""The job file: reading and checking input lines, output rows, resuming from the output file."""

import base64
import json
import os

import pytest

from agenthub.errors import ConfigError, RateLimitError
from agenthub.jobs import JobRow, OutputWriter, error_row, finished_ids, output_row, read_jobs, read_output

USER = {"role": "user", "content_items": [{"type": "text", "text": "hi"}]}


def _write(tmp_path, lines, name="in.jsonl"):
    path = tmp_path / name
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines))
    return str(path)


def _line(rid, **extra):
    out = {"id": rid, "model": "gpt-4.1-mini", "messages": [USER], "config": {"max_tokens": 5}}
    out.update(extra)
    return out


def test_reads_rows_with_line_numbers_and_optional_fields(tmp_path):
    path = _write(tmp_path, [_line("a"), "", _line("b", client_type="openai-chat", base_url="http://127.0.0.1:1/v1")])
    job = read_jobs(path)
    assert [(r.id, r.line, r.client_type, r.base_url) for r in job.rows] == [
        ("a", 1, None, None), ("b", 3, "openai-chat", "http://127.0.0.1:1/v1")]
    assert job.rows[0].messages == [USER] and job.rows[0].config == {"max_tokens": 5}
    assert job.invalid == []


def test_duplicate_id_names_both_lines(tmp_path):
    path = _write(tmp_path, [_line("a"), _line("b"), _line("a")])
    with pytest.raises(ConfigError) as info:
        read_jobs(path)
    assert "line 3: duplicate id 'a' (first on line 1)" in str(info.value)
    with pytest.raises(ConfigError):  # skip_invalid does not excuse a duplicate
        read_jobs(path, skip_invalid=True)


def test_every_invalid_line_is_listed_and_the_job_refused(tmp_path):
    path = _write(tmp_path, [
        _line("a"),
        "{not json",
        _line("c", config={"max_tokens": -1}),
        _line("d", messages=[{"role": "system", "content_items": []}]),
        {"id": "e", "model": "m", "messages": [USER], "api_key": "sk-secret"},
        _line("f", config={"bogus": 1}),
    ])
    with pytest.raises(ConfigError) as info:
        read_jobs(path)
    text = str(info.value)
    assert "has 5 problem(s)" in text
    for number, words in ((2, "not valid JSON"), (3, "config['max_tokens'] must be a positive int"),
                          (4, "messages[0]['role'] must be 'user' or 'assistant'"),
                          (5, "unknown key(s) ['api_key']"), (6, "unknown config key(s) ['bogus']")):
        assert "line {}: ".format(number) in text and words in text
    assert "sk-secret" not in text
    assert info.value.lines == [2, 3, 4, 5, 6]


def test_skip_invalid_turns_invalid_lines_into_error_rows(tmp_path):
    path = _write(tmp_path, [_line("a"), "[1, 2]", _line("c", config={"max_tokens": 0})])
    job = read_jobs(path, skip_invalid=True)
    assert [r.id for r in job.rows] == ["a"]
    assert [(n, row["id"], row["error"]["type"], row["error"]["status"]) for n, row in job.invalid] == [
        (2, "line-2", "ConfigError", None), (3, "c", "ConfigError", None)]
    assert job.invalid[1][1]["error"]["message"].startswith("line 3: config['max_tokens']")
    assert job.invalid[1][1]["model"] == "gpt-4.1-mini" and job.invalid[1][1]["attempts"] == 0


def test_bytes_round_trip_through_the_codec(tmp_path):
    png = b"\x89PNG\r\n\x1a\n\x00\xff"
    message = {"role": "user", "content_items": [
        {"type": "inline_data", "data": {"__bytes__": base64.b64encode(png).decode()}, "mime_type": "image/png"}]}
    path = _write(tmp_path, [_line("img", messages=[message])])
    row = read_jobs(path).rows[0]
    assert row.messages[0]["content_items"][0]["data"] == png
    assert row.to_json()["messages"] == [message]
    out = output_row(row, message={"role": "assistant", "content_items": [
        {"type": "inline_data", "data": png, "mime_type": "image/png"}]}, usage_metadata=None, finish_reason="stop",
        cost_usd=None, error=None, attempts=1, backend="live")
    assert json.loads(json.dumps(out))["message"]["content_items"][0]["data"] == {
        "__bytes__": base64.b64encode(png).decode()}


def test_output_row_shape_and_error_row():
    row = JobRow(id="r", model="m", messages=[USER], config={}, line=1)
    out = output_row(row, message={"role": "assistant", "content_items": []}, usage_metadata={"prompt_tokens": 1},
                     finish_reason="stop", cost_usd=0, error=None, attempts=2, backend="live")
    assert list(out) == ["id", "model", "message", "usage_metadata", "finish_reason", "cost_usd", "error",
                         "attempts", "backend", "finished_at"]
    assert out["cost_usd"] == 0.0 and isinstance(out["cost_usd"], float)
    assert out["finished_at"].endswith("Z") and out["finished_at"][10] == "T"
    err = error_row(row, RateLimitError("slow down", client="openai-chat", status=429), attempts=3, backend="live")
    assert err["error"] == {"type": "RateLimitError", "message": "slow down (client=openai-chat, status=429)",
                            "status": 429}
    assert err["message"] is None and err["attempts"] == 3
    other = error_row(row, KeyError("sk-live-secret"), attempts=1, backend="live")
    assert other["error"]["type"] == "KeyError" and "sk-live-secret" not in json.dumps(other)


def test_finished_ids_cuts_a_torn_line_and_retry_failed(tmp_path):
    path = str(tmp_path / "out.jsonl")
    row = JobRow(id="a", model="m", messages=[], line=1)
    good = output_row(row, message=None, usage_metadata=None, finish_reason="stop", cost_usd=None, error=None,
                      attempts=1, backend="live")
    bad = error_row(JobRow(id="b", model="m", messages=[], line=2), ConfigError("x"), attempts=1, backend="live")
    with open(path, "w") as f:
        f.write(json.dumps(good) + "\n" + json.dumps(bad) + "\n" + '{"id": "c", "mod')
    assert finished_ids(path) == {"a", "b"}
    with open(path) as f:
        assert f.read().endswith("\n") and '"c"' not in open(path).read()
    assert finished_ids(path, retry_failed=True) == {"a"}
    assert finished_ids(str(tmp_path / "missing.jsonl")) == set()


def test_writer_appends_and_removes_retried_error_rows(tmp_path):
    path = str(tmp_path / "out.jsonl")
    rows = {rid: JobRow(id=rid, model="m", messages=[], line=i) for i, rid in enumerate("abc", 1)}
    with OutputWriter(path) as w:
        w.write(output_row(rows["a"], message=None, usage_metadata=None, finish_reason="stop", cost_usd=None,
                           error=None, attempts=1, backend="live"))
        w.write(error_row(rows["b"], ConfigError("no"), attempts=1, backend="live"))
        w.write(error_row(rows["c"], ConfigError("no"), attempts=1, backend="live"))
    with open(path, "ab") as f:
        f.write(b'{"id": "torn"')
    with OutputWriter(path, retry_failed=True, retry_ids=["b"]) as w:
        assert [r["id"] for r in read_output(path)] == ["a", "c"]
        w.write(output_row(rows["b"], message=None, usage_metadata=None, finish_reason="stop", cost_usd=None,
                           error=None, attempts=1, backend="live"))
    assert [(r["id"], r["error"] is None) for r in read_output(path)] == [("a", True), ("c", False), ("b", True)]
    assert open(path, "rb").read().count(b"\n") == 3
    assert not [n for n in os.listdir(str(tmp_path)) if n.endswith(".tmp")]


def test_writer_alone_cuts_a_torn_tail_without_reading_the_file(tmp_path):
    path = str(tmp_path / "out.jsonl")
    with open(path, "wb") as f:
        f.write(b'{"id": "a", "error": null}\n' + b'{"id": "b", "mess' + b"x" * 70000)
    OutputWriter(path).close()
    assert open(path, "rb").read() == b'{"id": "a", "error": null}\n'
    with open(path, "wb") as f:
        f.write(b'{"id": "only torn')
    OutputWriter(path).close()
    assert open(path, "rb").read() == b""


def _ok_row(rid):
    return output_row(JobRow(id=rid, model="m", messages=[], line=1), message=None, usage_metadata=None,
                      finish_reason="stop", cost_usd=None, error=None, attempts=1, backend="live")


def test_a_row_being_written_holds_up_no_other_threads_row(tmp_path, monkeypatch):
    """The writer holds no lock across a row's write (a worker waiting for the GIL after its write would hold up
    every other worker's row): while one thread's write of "a" is stopped in the call, "b" is written; a close
    meanwhile waits for that write, and a write after it is refused."""
    import threading

    from agenthub.jobs import jobfile

    path = str(tmp_path / "out.jsonl")
    entered, release = threading.Event(), threading.Event()
    real = os.write

    def write(fd, data):
        if b'"id":"a"' in data and not entered.is_set():
            entered.set()
            release.wait(30)
        return real(fd, data)

    monkeypatch.setattr(jobfile.os, "write", write)
    writer = OutputWriter(path)
    first = threading.Thread(target=writer.write, args=(_ok_row("a"),))
    first.start()
    try:
        assert entered.wait(10)
        writer.write(_ok_row("b"))
        assert [r["id"] for r in read_output(path)] == ["b"]
        writer.close()  # "a" is still being written: its descriptor stays open until then
        with pytest.raises(ValueError):
            writer.write(_ok_row("c"))
    finally:
        release.set()
        first.join(10)
    assert not first.is_alive()
    assert [r["id"] for r in read_output(path)] == ["b", "a"]
    assert writer._fd == -1  # closed by the write that ended last


def test_the_id_index_lives_in_a_temporary_file_removed_on_close(tmp_path):
    import threading

    from agenthub.jobs.jobfile import IdIndex

    index = IdIndex()
    folder = index._dir
    assert index.add("a", 1, 0) is None and index.add("b", 2, 0) is None and index.add("c", 3, 1) is None
    assert index.add("a", 7) == 1  # a duplicate: the line it was first on
    index.seal()
    assert "a" in index and "zz" not in index and 3 not in index and index["c"] == 3 and len(index) == 3
    assert index.remaining() == {0: (2, [1, 2]), 1: (1, [3])}
    marks = []
    threads = [threading.Thread(target=lambda: marks.append(index.mark_done("b"))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert marks.count(True) == 1 and index.is_done("b") and not index.is_done("a")
    assert index.remaining() == {0: (1, [1]), 1: (1, [3])}
    assert os.path.isdir(folder)
    index.close()
    index.close()
    assert not os.path.exists(folder)


def test_read_jobs_leaves_no_temporary_file_behind(tmp_path, monkeypatch):
    import tempfile

    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    path = _write(tmp_path, [_line("a"), _line("a")])
    with pytest.raises(ConfigError):
        read_jobs(path)
    job = read_jobs(_write(tmp_path, [_line("a"), _line("b")], name="ok.jsonl"))
    assert job.ids["b"] == 2
    assert len(os.listdir(str(scratch))) == 1  # the open index's folder
    job.ids.close()
    assert os.listdir(str(scratch)) == []


def test_mark_done_many_marks_in_one_go_and_counts_each_id_once():
    from agenthub.jobs.jobfile import IdIndex

    index = IdIndex()
    try:
        for number, rid in enumerate(["a", "b", "c"], 1):
            index.add(rid, number, 0)
        index.seal()
        assert index.mark_done_many(["a", "a", None, 7, "zz", "c"]) == 2
        assert index.mark_done_many([]) == 0
        assert index.mark_done_many(["a", "b"]) == 1
        assert [index.is_done(r) for r in "abc"] == [True, True, True]
        assert index.mark_done("b") is False
    finally:
        index.close()


def test_rows_read_lazily_decode_bytes_only_where_a_line_holds_them(tmp_path):
    """Issue 41 item 6: a line without ``__bytes__`` is taken as decoded; one with them still gets bytes back."""
    from agenthub.jobs import iter_rows

    png = b"\x89PNG\r\n\x1a\n\x00\xff"
    image = {"role": "user", "content_items": [
        {"type": "inline_data", "data": {"__bytes__": base64.b64encode(png).decode()}, "mime_type": "image/png"}]}
    path = _write(tmp_path, [_line("img", messages=[image]), _line("txt")])
    rows = list(iter_rows(path, check=False))
    assert rows[0].messages[0]["content_items"][0]["data"] == png
    assert rows[1].messages == read_jobs(path).rows[1].messages
    assert [r.id for r in rows] == ["img", "txt"] and [r.line for r in rows] == [1, 2]


def test_bytes_spelled_with_an_escape_are_bytes_in_the_checked_and_the_lazy_rows(tmp_path):
    """Issue 41 item 6: a line is taken as decoded only when nothing in it can spell ``__bytes__``; a key
    written with a ``\\u`` escape (``"\\u005f_bytes__"``) is the same key to JSON, so its value is bytes both
    in the check and in the row sent (it was a dict in the lazy row: the word is not in the line's bytes)."""
    from agenthub.jobs import iter_rows

    png = b"\x89PNG\r\n\x1a\n\x00\xff"
    image = {"role": "user", "content_items": [
        {"type": "inline_data", "data": {"__bytes__": base64.b64encode(png).decode()}, "mime_type": "image/png"}]}
    line = json.dumps(dict(_line("img"), messages=[image])).replace('"__bytes__"', '"\\u005f_bytes__"')
    assert "__bytes__" not in line
    path = str(tmp_path / "escaped.jsonl")
    with open(path, "w") as f:
        f.write(line + "\n")
    assert read_jobs(path).rows[0].messages[0]["content_items"][0]["data"] == png
    for check in (True, False):
        assert next(iter_rows(path, check=check)).messages[0]["content_items"][0]["data"] == png


def test_problems_are_named_in_line_order_whatever_batch_their_ids_went_in_with(tmp_path):
    """Issue 41 item 6: the ids of the up-front check go into the index a batch at a time; the problems are
    still each line's own, in line order: a duplicate in the same batch or an earlier one, an invalid line
    whose id is a duplicate (named once, as a duplicate), an invalid line."""
    lines = [_line("r{}".format(n)) for n in range(1, 1201)]
    lines[519] = _line("r3", model=5)  # line 520: invalid, and its id is line 3's
    lines[529] = _line("x530", model=5)  # line 530: invalid
    lines[599] = _line("r10")  # line 600: line 10's id, an earlier batch
    lines[1099] = _line("r1099")  # line 1100: line 1099's id, the same batch
    path = _write(tmp_path, lines)
    with pytest.raises(ConfigError) as info:
        read_jobs(path)
    assert str(info.value).split("\n")[1:5] == [
        "  line 520: duplicate id 'r3' (first on line 3)",
        "  line 530: 'model' must be a non-empty string (got int)",
        "  line 600: duplicate id 'r10' (first on line 10)",
        "  line 1100: duplicate id 'r1099' (first on line 1099)"]
    assert info.value.lines == [520, 530, 600, 1100]
    with pytest.raises(ConfigError) as skipping:
        read_jobs(path, skip_invalid=True)
    assert "line 530" not in str(skipping.value) and skipping.value.lines == [520, 600, 1100]
    del lines[1099], lines[599], lines[519]
    job = read_jobs(_write(tmp_path, lines, "ok.jsonl"), skip_invalid=True, keep_rows=False)
    try:
        assert (job.count, [n for n, _ in job.invalid], len(job.ids)) == (1196, [529], 1197)
        assert job.invalid[0][1]["id"] == "x530" and job.ids["x530"] == 529 and job.ids["r1200"] == 1197
    finally:
        job.ids.close()


def test_a_config_equal_to_one_that_passed_is_checked_again_unless_its_values_have_the_same_types(tmp_path,
                                                                                               monkeypatch):
    """Issue 41 item 6: the up-front check passes each distinct flat config once; 16, 16.0 and True are equal in
    Python but not the same config (only 16 is a max_tokens), so each is checked; a config holding a list is
    checked on every line."""
    from agenthub.jobs import jobfile

    checked = []
    real = jobfile.check_config
    monkeypatch.setattr(jobfile, "check_config", lambda config: (checked.append(dict(config)), real(config))[1])
    msg = [{"role": "user", "content_items": [{"type": "text", "text": "hi"}]}]
    configs = [{"max_tokens": 16}, {"max_tokens": 16}, {"max_tokens": 16.0}, {"max_tokens": True},
               {"stop": ["x"]}, {"stop": ["x"]}, {"max_tokens": 16, "temperature": 0.5}, {"max_tokens": 16}]
    lines = [json.dumps({"id": "r{}".format(i), "model": "m", "messages": msg, "config": c})
             for i, c in enumerate(configs)]
    job = read_jobs(_write(tmp_path, lines), skip_invalid=True, keep_rows=False)
    assert [c for c in checked] == [configs[i] for i in (0, 2, 3, 4, 5, 6)]
    assert sorted(n for n, _ in job.invalid) == [3, 4]  # 16.0 and True refused, though equal to 16
    assert "max_tokens" in job.invalid[0][1]["error"]["message"]


def test_each_message_is_named_by_its_place_and_messages_must_be_a_list(tmp_path):
    """Issue 41 item 6 (validate.check_messages: a list taken as a Sequence without typing's isinstance, the first
    32 places named from names made once): the place of a bad message is named as before, past the names made once
    too; a tuple of messages still passes, a string or a dict still does not."""
    from agenthub.validate import check_messages

    bad = {"role": "system", "content_items": []}
    lines = [_line("a", messages=[USER, bad]), _line("b", messages=[USER] * 40 + [bad]), _line("c", messages="hi"),
             _line("d", messages={"role": "user"}), _line("e", messages=[])]
    with pytest.raises(ConfigError) as info:
        read_jobs(_write(tmp_path, lines))
    assert str(info.value).split("\n")[1:6] == [
        "  line 1: messages[1]['role'] must be 'user' or 'assistant' (got 'system'); the system prompt goes in "
        "config['system_prompt']",
        "  line 2: messages[40]['role'] must be 'user' or 'assistant' (got 'system'); the system prompt goes in "
        "config['system_prompt']",
        "  line 3: messages must be a list of UniMessage dicts",
        "  line 4: messages must be a list of UniMessage dicts",
        "  line 5: messages is empty: send at least one user message"]
    assert check_messages((USER, USER)) is None
    with pytest.raises(ConfigError, match="messages must be a list"):
        check_messages(b"hi")


def test_a_line_nested_past_the_stack_is_a_problem_of_its_line_and_a_rerun_reads_past_one_in_the_output(tmp_path):
    deep = json.dumps(_line("deep"))[:-1] + ', "x": ' + "[" * 100000 + "]" * 100000 + "}"
    schema = {"type": "array", "items": {"type": "string"}}
    for _ in range(300):  # (deep, yet within what the JSON reader takes: the schema compiler recursed on it)
        schema = {"type": "array", "items": schema}
    path = _write(tmp_path, [_line("a"), deep, _line("typed", output_schema=schema)])
    with pytest.raises(ConfigError) as caught:
        read_jobs(path)
    assert str(caught.value) == (
        "the job file {} has 2 problem(s):\n  line 2: nested too deeply to be read as JSON\n  line 3: 'output_schema' "
        "nests deeper than 128 levels\n(nothing was sent; skip_invalid=True / --skip-invalid writes an error row for "
        "each invalid line)".format(path))
    assert caught.value.lines == [2, 3]
    out = _write(tmp_path, [{"id": "a", "error": None}, '{"id": "deep", "x": ' + "[" * 100000 + "]" * 100000 + "}"],
                 "out.jsonl")
    assert finished_ids(out) == {"a"} and [row["id"] for row in read_output(out)] == ["a"]


def test_a_byte_order_mark_at_the_start_is_read_past_and_one_later_is_a_problem_of_its_line(tmp_path):
    from agenthub.jobs import iter_rows

    path = tmp_path / "bom.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(_line("a")).encode() + b"\r\n\r\n" + json.dumps(_line("b")).encode()
                     + b"\r\n")
    job = read_jobs(str(path))  # (an editor's "UTF-8 with BOM" was refused: "Unexpected UTF-8 BOM")
    assert [(row.id, row.line) for row in job.rows] == [("a", 1), ("b", 3)]
    assert [(row.id, row.line) for row in iter_rows(str(path))] == [("a", 1), ("b", 3)]
    path.write_bytes(json.dumps(_line("a")).encode() + b"\n\xef\xbb\xbf" + json.dumps(_line("b")).encode() + b"\n")
    with pytest.raises(ConfigError) as caught:
        read_jobs(str(path))
    assert caught.value.lines == [2] and "line 2: not valid JSON (Unexpected UTF-8 BOM" in str(caught.value)


def test_a_byte_order_mark_before_a_blank_first_line_or_alone_is_read_past(tmp_path):
    # an editor's "UTF-8 with BOM" file whose first line is blank (or that holds nothing else) was refused:
    # "line 1: not valid JSON (Expecting value: line 2 column 1 (char 1))"
    from agenthub.jobs import iter_rows

    path = tmp_path / "bom.jsonl"
    path.write_bytes(b"\xef\xbb\xbf\r\n" + json.dumps(_line("a")).encode() + b"\n")
    job = read_jobs(str(path))
    assert [(row.id, row.line) for row in job.rows] == [("a", 2)] and job.invalid == []
    assert [(row.id, row.line) for row in iter_rows(str(path))] == [("a", 2)]
    job.ids.close()
    for data in (b"\xef\xbb\xbf", b"\xef\xbb\xbf \n\n"):
        path.write_bytes(data)
        job = read_jobs(str(path))
        assert (job.rows, job.invalid, len(job)) == ([], [], 0)
        job.ids.close()


def test_a_bytes_payload_that_is_not_base64_is_its_lines_problem(tmp_path):
    # Python's lenient base64 dropped what is outside the alphabet: "!!" became b"" (an empty image sent and paid
    # for), and a data: URL with its prefix raised binascii.Error out of read_jobs (the whole job died untyped)
    def image(payload):
        item = {"type": "inline_data", "mime_type": "image/png", "data": {"__bytes__": payload}}
        return dict(USER, content_items=[item])

    good = base64.b64encode(b"\x89PNG").decode()
    path = _write(tmp_path, [_line("ok", messages=[image(good)]),
                             _line("url", messages=[image("data:image/png;base64," + good)]),
                             _line("bang", messages=[image("!!")]),
                             _line("cfg", config={"max_tokens": 5, "extra_body": {"blob": {"__bytes__": "a b"}}})])
    with pytest.raises(ConfigError) as caught:
        read_jobs(path)
    words = "holds a {\"__bytes__\": ...} value that is not base64 (the standard alphabet, padded, without a data: " \
            "URL's prefix)"
    assert caught.value.lines == [2, 3, 4]
    assert str(caught.value) == (
        "the job file {} has 3 problem(s):\n  line 2: 'messages' {w}\n  line 3: 'messages' {w}\n  line 4: 'config' "
        "{w}\n(nothing was sent; skip_invalid=True / --skip-invalid writes an error row for each invalid line)".format(
            path, w=words))
    job = read_jobs(path, skip_invalid=True)
    assert [row.messages[0]["content_items"][0]["data"] for row in job.rows] == [b"\x89PNG"]
    assert [(n, row["id"], row["error"]["message"]) for n, row in job.invalid] == [
        (2, "url", "line 2: 'messages' " + words), (3, "bang", "line 3: 'messages' " + words),
        (4, "cfg", "line 4: 'config' " + words)]
    job.ids.close()


def test_a_job_file_that_is_not_a_regular_file_is_refused_before_anything_is_read_twice(tmp_path):
    # a pipe (agenthub batch run <(zcat jobs.jsonl.gz)) was checked whole, its first 2 MB of rows sent, then the
    # run died with io.UnsupportedOperation (not seekable) and the rows after them never came
    import threading

    fifo = str(tmp_path / "jobs.fifo")
    os.mkfifo(fifo)

    def feed():
        try:
            with open(fifo, "w") as handle:
                handle.write(json.dumps(_line("a")) + "\n")
        except OSError:  # (the reader may have closed first)
            pass

    writer = threading.Thread(target=feed)
    writer.start()
    try:
        with pytest.raises(ConfigError) as caught:
            read_jobs(fifo)
    finally:
        writer.join(10)
    assert str(caught.value) == (
        "the job file {} is not a regular file (a pipe or a device): it is read more than once (checked whole first, "
        "then sent row by row, and again to resume); write it to a file first".format(fifo))
    with pytest.raises(ConfigError) as caught:
        read_jobs(os.devnull)
    assert "the job file {} is not a regular file".format(os.devnull) in str(caught.value)


def test_rows_read_after_the_check_are_the_checked_ones_even_when_the_last_got_its_newline_since(tmp_path):
    from agenthub.jobs import iter_rows

    path = tmp_path / "in.jsonl"
    path.write_bytes((json.dumps(_line("a")) + "\n" + json.dumps(_line("b"))).encode())  # (no final newline yet)
    job = read_jobs(str(path))
    job.ids.close()
    with open(str(path), "ab") as handle:  # its newline written since, then a row the check never saw
        handle.write(b"\r\n" + json.dumps(_line("c")).encode() + b"\n")
    assert [row.id for row in iter_rows(str(path), stop=job.size)] == ["a", "b"]
    assert [row.id for row in iter_rows(str(path))] == ["a", "b", "c"]
    path.write_bytes((json.dumps(_line("a")) + "\n" + '{"id": "b", "mod').encode())  # (torn when checked)
    job = read_jobs(str(path), skip_invalid=True)
    job.ids.close()
    with open(str(path), "ab") as handle:
        handle.write(b'el": "gpt-4.1-mini", "messages": []}\n')
    assert [row.id for row in iter_rows(str(path), stop=job.size, check=False)] == ["a"]
