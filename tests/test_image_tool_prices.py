"""OpenAI's ``image_generation`` built-in tool (Responses API) is billed apart, at the image model's rates (its text
and image input, its image output tokens), and the wire does not report it: ``response.usage`` counts the
mainline model alone (openai-python's ResponseUsage: input, cached, output, reasoning tokens) and the
``image_generation_call`` item carries no count (id, result, status, revised_prompt, size, quality...).  Such a
turn was priced at the mainline model's usage alone, silently low (a high-quality 1024x1536 image is about 0.25
USD at gpt-image-1's rates, the text turn here 0.0003).  Its usage now carries how many images the tool made
(``Usage.image_tool_calls``) and its price is unknown (None) on every path: ``agenthub.cost``, a Budget's
settlement (its whole hold, as for any unpriced answer), a run's cost_usd, a job row and JobSummary (counted
unpriced), serve's /v1/metrics (an unpriced answer) and the Budget of serve's client, a cache hit's usage and a
journal replay."""

import base64
import json
import pickle

import requests

from money_clock import fix_clock
from price_paths import KEY
from server_support import Builtin, Route, Upstream

from agenthub import AutoLLMClient, Budget, ResponseCache, cost, jobs
from agenthub.jobs import read_output
from agenthub.stores import MemoryStore
from agenthub.stream import checked_usage, usage_extras
from agenthub.types import to_jsonable

MODEL = "gpt-5.5"
MESSAGES = [{"role": "user", "content_items": [{"type": "text", "text": "Draw an otter"}]}]
CONFIG = {"max_tokens": 2000, "extra_body": {"tools": [{"type": "image_generation", "quality": "high"}]}}
PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR an otter"
USAGE = {"input_tokens": 2294, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 119,
         "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 2413}


def _stream(images=1):
    calls = [{"id": "ig_{}".format(n), "type": "image_generation_call", "status": "completed", "output_format": "png",
              "quality": "high", "size": "1024x1536", "result": base64.b64encode(PNG).decode(),
              "revised_prompt": "An otter"} for n in range(images)]
    message = {"id": "msg_1", "type": "message", "role": "assistant", "status": "completed",
               "content": [{"type": "output_text", "text": "Here it is.", "annotations": []}]}
    events = [{"type": "response.created", "response": {"id": "resp_1", "status": "in_progress", "output": []}}]
    for n, call in enumerate(calls):
        events.append({"type": "response.output_item.done", "output_index": n, "item": call})
    events.append({"type": "response.output_text.delta", "output_index": images, "content_index": 0,
                   "item_id": "msg_1", "delta": "Here it is."})
    events.append({"type": "response.output_item.done", "output_index": images, "item": message})
    events.append({"type": "response.completed", "response": {"id": "resp_1", "status": "completed",
                                                               "model": "gpt-5.5", "output": calls + [message],
                                                               "usage": USAGE}})
    return b"".join(b"data: " + json.dumps(event).encode() + b"\n\n" for event in events)


def _client(url, **kwargs):
    return AutoLLMClient(MODEL, client_type="openai-responses", base_url=url, api_key="sk-test-0123456789",
                         max_retries=0, **kwargs)


def test_a_turn_whose_image_tool_made_images_has_no_price_not_the_text_part_alone():
    with Upstream() as up:
        up.routes["up"] = Route(_stream(images=2))
        up.routes["text"] = Route(_stream(images=0))
        answer = _client(up.url + "/up/v1").response(MESSAGES, CONFIG)
        plain = _client(up.url + "/text/v1").response(MESSAGES, CONFIG)
    assert [item["type"] for item in answer["content_items"]] == ["inline_data", "inline_data", "text"]
    usage = answer["usage_metadata"]
    assert usage == {"cached_tokens": 0, "prompt_tokens": 2294, "thoughts_tokens": 0, "response_tokens": 119}
    assert usage_extras(usage) == {"image_tool_calls": 2}
    assert usage_extras(pickle.loads(pickle.dumps(usage))) == usage_extras(checked_usage(usage)) == {
        "image_tool_calls": 2}
    assert cost(MODEL, usage) is None  # was the text turn's price alone
    assert cost(MODEL, dict(usage)) == cost(MODEL, plain["usage_metadata"]) > 0  # what it was priced at before
    assert usage_extras(plain["usage_metadata"]) == {}


def test_one_image_tool_turn_is_unpriced_on_every_path(tmp_path, monkeypatch):
    fix_clock(monkeypatch, "12:00")
    with Upstream() as up:
        up.routes["up"] = Route(_stream())
        url = up.url + "/up/v1"
        paths = {"cost": cost(MODEL, _client(url).response(MESSAGES, CONFIG)["usage_metadata"])}
        budget = Budget(5.0, allow_unpriced=True)  # (without it, refused: the next test)
        client = _client(url, budget=budget)
        client.response(MESSAGES, CONFIG)
        held = Budget(5.0).reserve(MODEL, 2000, 2000)  # (more than the request's estimate: the hold is below it)
        held.release()
        assert 0 < budget.spent_usd < held.needed_usd  # an unpriced answer: its whole hold, not the text part
        paths["run"] = _client(url).run(MESSAGES, CONFIG, tools=[]).result().cost_usd
        rows = tmp_path / "in.jsonl"
        rows.write_text("".join(json.dumps({"id": "r{}".format(n), "model": MODEL, "messages": to_jsonable(MESSAGES),
                                            "config": CONFIG}) + "\n" for n in range(2)))
        summary = jobs.run(str(rows), str(tmp_path / "out.jsonl"), workers=1, progress=False,
                           client_factory=lambda *route: _client(url))
        paths["job row"] = read_output(str(tmp_path / "out.jsonl"))[0]["cost_usd"]
        paths["JobSummary"] = summary.cost_usd if summary.unpriced == 0 else None
        cache = ResponseCache(MemoryStore())
        _client(url, cache=cache).response(MESSAGES, CONFIG)
        hit = _client(url, cache=cache)
        paths["cache hit's usage"] = cost(MODEL, hit.response(MESSAGES, CONFIG)["usage_metadata"])
        assert hit.last_route["cache"] == "hit"
        store = MemoryStore()
        _client(url).run(MESSAGES, CONFIG, tools=[], journal=store, run_id="r-1").result()
        replayed = _client(url).run(MESSAGES, CONFIG, tools=[], journal=store, run_id="r-1").result()
        assert replayed.replayed_turns == 1
        paths["journal replay"] = replayed.cost_usd

        from agenthub.apps.server import make_app

        row = {"id": MODEL, "model": MODEL, "client_type": "openai-responses", "base_url": url,
               "api_key": "sk-test-0123456789", "max_retries": 0, "default_config": {"extra_body": CONFIG["extra_body"]}}
        with Builtin(make_app({"models": [row], "api_keys": [KEY]})) as site:
            served = Budget(5.0)
            answer = AutoLLMClient(MODEL, client_type="agenthub", base_url=site.url, api_key=KEY, max_retries=0,
                                   budget=served).response(MESSAGES, {"max_tokens": 2000})
            paths["serve client's usage"] = cost(MODEL, answer["usage_metadata"])
            text = requests.get(site.url + "/v1/metrics", headers={"Authorization": "Bearer " + KEY}, timeout=10).text
    assert paths == {path: None for path in paths}
    assert (summary.unpriced, served.spent_usd > 0) == (2, True)
    assert 'agenthub_unpriced_answers_total{model="%s"} 1' % MODEL in text
    assert 'agenthub_cost_usd_total{model="%s"}' % MODEL not in text or \
        'agenthub_cost_usd_total{model="%s"} 0' % MODEL in text


def test_a_budget_refuses_a_request_that_offers_the_image_tool_before_sending():
    """A Budget held the text turn's worst case for a request offering the image tool, then settled the turn at that
    hold: a high-quality image is about 0.25 USD, a turn may make several, and none of it was counted, so a
    Budget(1.0) could spend dollars.  No hold bounds what the tool bills: the request is refused (ConfigError,
    nothing sent) unless the budget allows unpriced spending."""
    from agenthub.errors import ConfigError

    with Upstream() as up:
        up.routes["up"] = Route(_stream())
        url = up.url + "/up/v1"
        budget = Budget(1.0)
        for config in (CONFIG, {"max_tokens": 2000, "extra_body": {"tools": [
                {"type": "web_search"}, {"type": "image_generation", "size": "1024x1536"}]}}):
            try:
                _client(url, budget=budget).response(MESSAGES, config)
            except ConfigError as exc:
                assert str(exc) == (
                    "openai-responses: a budget cannot bound a request that may call OpenAI's image_generation tool "
                    "(its images are billed apart, at the image model's rates; no usage counts them, and a turn may "
                    "make several): remove the tool, or pass Budget(max_usd, allow_unpriced=True) to let its images "
                    "run uncounted (the rest of the turn is held, and the turn settled at its whole hold)")
            else:
                raise AssertionError("sent under a budget")
        assert up.requests == []
        assert (budget.spent_usd, budget.reserved_usd) == (0.0, 0.0)
        up.routes["up"] = Route(_stream(images=0))
        answer = _client(url, budget=budget).response(MESSAGES, {"max_tokens": 2000})  # (no image tool: as ever)
    assert len(up.requests) == 1 and abs(budget.spent_usd - cost(MODEL, answer["usage_metadata"])) < 1e-15


def test_a_serve_row_whose_budget_cannot_bound_its_image_tool_is_refused_when_the_app_is_made():
    """A served row offering the image tool in its default_config under a budget would refuse every request (the
    client cannot see the server's tools): said when the app is made instead; allow_unpriced lets it run."""
    from agenthub.apps.server import make_app
    from agenthub.errors import ConfigError

    row = {"id": MODEL, "model": MODEL, "client_type": "openai-responses", "base_url": "http://127.0.0.1:9/v1",
           "api_key": "sk-test-0123456789", "default_config": {"extra_body": CONFIG["extra_body"]},
           "budget": {"max_usd": 5}}
    try:
        make_app({"models": [row], "api_keys": [KEY]})
    except ConfigError as exc:
        assert str(exc).startswith("server config models[0] ('gpt-5.5'): default_config offers the image_generation "
                                   "tool: a budget cannot bound a request that may call OpenAI's image_generation")
    else:
        raise AssertionError("made")
    make_app({"models": [dict(row, budget={"max_usd": 5, "allow_unpriced": True})], "api_keys": [KEY]})


def test_a_job_row_the_budget_refuses_for_the_image_tool_counts_no_attempt(tmp_path, monkeypatch):
    """A job row refused by its budget for the image tool was never sent, as a row whose worst case no longer fits
    (BudgetExceededError, ``attempts`` 0): its error row said ``attempts`` 1."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789")
    with Upstream() as up:
        up.routes["up"] = Route(_stream(images=0))
        rows = tmp_path / "in.jsonl"
        rows.write_text("".join(json.dumps({"id": "r{}".format(n), "model": MODEL, "client_type": "openai-responses",
                                            "base_url": up.url + "/up/v1", "messages": to_jsonable(MESSAGES),
                                            "config": CONFIG}) + "\n" for n in range(2)))
        budget = Budget(1.0)
        summary = jobs.run(str(rows), str(tmp_path / "out.jsonl"), workers=1, progress=False, budget=budget,
                           max_retries=0)
        assert up.requests == []
    out = sorted(read_output(str(tmp_path / "out.jsonl")), key=lambda row: row["id"])
    assert [(row["id"], row["attempts"], row["error"]["type"], row["cost_usd"]) for row in out] == [
        ("r0", 0, "ConfigError", None), ("r1", 0, "ConfigError", None)]
    assert out[0]["error"]["message"].startswith("openai-responses: a budget cannot bound a request that may call")
    assert (summary.done, summary.failed, budget.spent_usd, budget.reserved_usd) == (0, 2, 0.0, 0.0)


def test_the_command_line_says_how_to_run_the_image_tool_there_not_budget_with_a_flag_inside(monkeypatch, capsys):
    """`agenthub chat --budget` refuses a request offering the image tool before sending; its advice was the
    library's with max_usd rewritten, ``pass Budget(--budget, allow_unpriced=True)``, which no command line takes."""
    from agenthub.__main__ import main

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789")
    with Upstream() as up:
        up.routes["up"] = Route(_stream(images=0))
        assert main(["chat", MODEL, "hi", "--client-type", "openai-responses", "--base-url", up.url + "/up/v1",
                     "--budget", "1", "-o", "extra_body", '{"tools": [{"type": "image_generation"}]}']) == 1
        assert up.requests == []
    assert capsys.readouterr().err == (
        "error: ConfigError: openai-responses: a budget cannot bound a request that may call OpenAI's image_generation "
        "tool (its images are billed apart, at the image model's rates; no usage counts them, and a turn may make "
        "several): remove the tool, or run without --budget to let its images run uncounted\n")
