"""Issue 37 A4: a model the catalog prices by the time of day (DeepSeek's peak windows) is priced at the tier
in force when the request was sent, and a Budget holds at the dearest tier it could be billed at.  Issue 37
A8 (part): an answer replayed from the ResponseCache costs 0 on every path and says it was a hit.
Every test runs on a fixed clock (``money_clock``)."""

import json

import pytest

from agent_streams import _sse
from money_clock import fix_clock, fix_time, utc
from server_support import Route, Upstream

from agenthub import AutoLLMClient, Budget, BudgetExceededError, ResponseCache, cost, jobs
from agenthub.budget import worst_case_usd
from agenthub.catalog import tier_at
from agenthub.jobs import read_output

MESSAGES = [{"role": "user", "content_items": [{"type": "text", "text": "Name three rivers."}]}]
MODEL = "deepseek-v4-flash"  # standard (off-peak) 0.15 in / 0.6 out; peak 0.3 / 1.2 in 01:00-04:00 and 06:00-10:00 UTC
USAGE = {"cached_tokens": 0, "prompt_tokens": 1000, "thoughts_tokens": 0, "response_tokens": 500}
OFF_PEAK, PEAK = (1000 * 0.15 + 500 * 0.6) / 1e6, (1000 * 0.3 + 500 * 1.2) / 1e6


def chat_turn(prompt=1000, completion=500):
    chunks = [{"id": "c1", "choices": [{"index": 0, "delta": {"content": "Nile, Amazon, Rhine."}, "finish_reason": None}]},
              {"id": "c1", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
              {"id": "c1", "choices": [], "usage": {"prompt_tokens": prompt, "completion_tokens": completion}}]
    return _sse(chunks) + b"data: [DONE]\n\n"


@pytest.fixture()
def upstream():
    with Upstream() as up:
        up.routes["ds"] = Route(chat_turn())
        yield up


def client(up, **kwargs):
    return AutoLLMClient(MODEL, client_type="openai-chat", base_url=up.url + "/ds/v1", api_key="sk-test-0123456789",
                         max_retries=0, **kwargs)


def test_cost_takes_the_tier_in_force_when_the_request_was_sent(monkeypatch):
    assert cost(MODEL, USAGE, at=utc("02:41")) == pytest.approx(PEAK)
    assert cost(MODEL, USAGE, at=utc("04:00")) == pytest.approx(OFF_PEAK)  # a window's end is outside it
    assert cost(MODEL, USAGE, at=utc("06:00")) == pytest.approx(PEAK)
    assert cost(MODEL, USAGE, at=utc("12:00")) == pytest.approx(OFF_PEAK)
    import datetime
    assert cost(MODEL, USAGE, at=datetime.datetime(2026, 12, 7, 2, 41)) == pytest.approx(PEAK)  # naive: UTC
    # an explicit tier says which prices, whatever the time
    assert cost(MODEL, USAGE, tier="standard", at=utc("02:41")) == pytest.approx(OFF_PEAK)
    assert cost(MODEL, USAGE, tier="peak", at=utc("12:00")) == pytest.approx(PEAK)
    # no at: now, by the catalog's clock
    fix_clock(monkeypatch, "02:41")
    assert cost(MODEL, USAGE) == pytest.approx(PEAK)
    fix_clock(monkeypatch, "23:59")
    assert cost(MODEL, USAGE) == pytest.approx(OFF_PEAK)
    # a model without time-of-day prices is the same at any hour
    assert cost("gpt-4.1-mini", USAGE, at=utc("02:41")) == cost("gpt-4.1-mini", USAGE, at=utc("12:00"))
    from agenthub.errors import ConfigError
    for bad in ("02:41", True, float("nan")):
        with pytest.raises(ConfigError):
            cost(MODEL, USAGE, at=bad)


def test_a_window_over_midnight():
    row = {"tiers": {"off_peak": {"input": 1, "utc_windows": ["22:00-02:00 UTC"]}}}
    assert [tier_at(row, utc(t)) for t in ("21:59", "22:00", "23:30", "01:59", "02:00")] == [
        None, "off_peak", "off_peak", "off_peak", None]


def test_deepseek_peak_hours_are_weekday_hours(monkeypatch, upstream):
    """DeepSeek's pricing page (https://api-docs.deepseek.com/quick_start/pricing, read 2026-12-07 from copies):
    "Peak hours are 01:00 - 04:00 and 06:00 - 10:00 UTC, Monday through Friday"; Saturday and Sunday are
    off-peak all day (since 2026-08-23).  Every hour of a weekend was priced at the peak, twice the bill."""
    pro = (1000 * 0.66 + 500 * 1.98) / 1e6  # deepseek-v4-pro off-peak; its peak is twice that
    for day, name in ((11, "Fri"), (12, "Sat"), (13, "Sun"), (14, "Mon")):
        weekday = name not in ("Sat", "Sun")
        for hhmm in ("01:00", "02:41", "06:00", "09:59"):
            assert cost(MODEL, USAGE, at=utc(hhmm, day)) == pytest.approx(PEAK if weekday else OFF_PEAK), (name, hhmm)
            assert cost("deepseek-flash", USAGE, at=utc(hhmm, day)) == pytest.approx(PEAK if weekday else OFF_PEAK)
            assert cost("deepseek-v4-pro", USAGE, at=utc(hhmm, day)) == pytest.approx(2 * pro if weekday else pro)
        assert cost(MODEL, USAGE, at=utc("04:00", day)) == pytest.approx(OFF_PEAK)
        assert cost(MODEL, USAGE, at=utc("12:00", day)) == pytest.approx(OFF_PEAK)
    from agenthub.catalog import find_model
    assert find_model(MODEL)["tiers"]["peak"]["utc_days"] == ["Mon", "Tue", "Wed", "Thu", "Fri"]
    assert "overrides:tier_days" in find_model(MODEL)["sources"]
    # a Budget and a run started on a Saturday at 02:41 UTC settle at the off-peak price
    fix_clock(monkeypatch, "02:41", day=12)
    budget = Budget(1.0)
    client(upstream, budget=budget).response(MESSAGES, {"max_tokens": 600})
    assert budget.spent_usd == pytest.approx(OFF_PEAK) and budget.reserved_usd == 0.0
    assert client(upstream).run(MESSAGES, tools=[]).result().cost_usd == pytest.approx(OFF_PEAK)
    # the hold is still the dearest price the request may be billed at
    assert worst_case_usd(MODEL, 1000, 500) == pytest.approx(PEAK)


def test_a_window_on_some_weekdays_only():
    row = {"tiers": {"peak": {"input": 1, "utc_windows": ["09:00-10:00 UTC", "22:00-02:00 UTC"],
                              "utc_days": ["Fri"]}}}
    # 2026-12-10 is a Thursday, the 11th a Friday, the 12th a Saturday
    assert [tier_at(row, utc(t, day)) for day, t in (
        (10, "09:30"), (11, "09:30"), (12, "09:30"),  # a window inside the day: on its days only
        (11, "01:00"), (11, "23:00"), (12, "01:59"), (12, "02:00"), (12, "23:00"))] == [
        None, "peak", None,
        None, "peak", "peak", None, None]  # over midnight: its part after midnight belongs to the day it opened
    assert tier_at({"tiers": {"peak": {"input": 1, "utc_windows": ["09:00-10:00 UTC"], "utc_days": []}}},
                   utc("09:30", 11)) is None


def test_the_refresh_script_sets_the_documented_weekdays_and_refuses_a_rule_that_covers_nothing():
    import importlib.util
    import os

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    spec = importlib.util.spec_from_file_location("refresh_catalog", os.path.join(root, "scripts", "refresh_catalog.py"))
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    rows = [{"provider": "deepseek", "id": "deepseek-x", "sources": ["genai-prices"],
             "tiers": {"peak": {"input": 2, "utc_windows": ["01:00-04:00 UTC"]}}},
            {"provider": "deepseek", "id": "deepseek-y", "sources": ["genai-prices"], "tiers": {}}]
    rule = {"provider": "deepseek", "models": "^deepseek-", "tier": "peak", "utc_days": ["Mon", "Fri"],
            "source": "https://example.test/pricing"}
    assert script.apply_tier_days(rows, [rule]) == []
    assert rows[0]["tiers"]["peak"]["utc_days"] == ["Mon", "Fri"]
    assert rows[0]["sources"] == ["genai-prices", "overrides:tier_days"]
    assert rows[1] == {"provider": "deepseek", "id": "deepseek-y", "sources": ["genai-prices"], "tiers": {}}
    assert script.apply_tier_days(rows, [dict(rule, models="^nothing")]) == [
        "https://example.test/pricing: no deepseek model with a timed peak tier matches ^nothing"]
    assert script.apply_tier_days(rows, [dict(rule, utc_days=["Monday"])]) == [
        "https://example.test/pricing: utc_days must be weekday names Mon, Tue, Wed, Thu, Fri, Sat, Sun (got ['Monday'])"]


def test_a_price_change_announced_for_a_later_date_applies_from_that_date(monkeypatch):
    """Google's pricing page (https://ai.google.dev/gemini-api/docs/pricing, as genai-prices quotes it): Gemini 3.8
    Flash's introductory 0.75 / 0.075 / 3.75 "through 2026-12-31", then 1.5 / 0.15 / 7.5 (batch half of each).
    The snapshot (2026-12-06) kept the prices of its date only: from 2027-01-01 every turn, hold and settlement
    counted half the bill."""
    import datetime

    from agenthub.catalog import find_model

    usage = {"cached_tokens": 100, "prompt_tokens": 1000, "thoughts_tokens": 0, "response_tokens": 500}
    before, after = (1000 * 0.75 + 100 * 0.075 + 500 * 3.75) / 1e6, (1000 * 1.5 + 100 * 0.15 + 500 * 7.5) / 1e6
    new_year = datetime.datetime(2027, 1, 1, tzinfo=datetime.timezone.utc).timestamp()
    for model in ("gemini-3.8-flash", "gemini-flash-latest"):
        assert cost(model, usage, at=new_year - 1) == pytest.approx(before)
        assert cost(model, usage, at=new_year) == pytest.approx(after)
        assert cost(model, usage, at=datetime.datetime(2027, 3, 1)) == pytest.approx(after)  # (naive: UTC)
        assert cost(model, usage, at=new_year - 1, batch=True) == pytest.approx(before / 2)
        assert cost(model, usage, at=new_year, batch=True) == pytest.approx(after / 2)
    # a row priced at the discount of its standard prices (overrides:batch_discounts) has its later batch prices too
    assert cost("gemini-3.7-flash", usage, at=new_year, batch=True) == pytest.approx(after / 2)
    assert find_model("gemini-3.8-flash")["scheduled"][0]["from"] == "2027-01-01"
    # no at: now; a Budget holds and settles at the prices in force when the request is sent
    fix_time(monkeypatch, new_year + 3600)
    assert cost("gemini-3.8-flash", usage) == pytest.approx(after)
    assert worst_case_usd("gemini-3.8-flash", 1100, 500) == pytest.approx((1100 * 1.5 + 500 * 7.5) / 1e6)
    budget = Budget(1.0)
    hold = budget.reserve("gemini-3.8-flash", 1100, 500)
    assert hold.needed_usd == pytest.approx((1100 * 1.5 + 500 * 7.5) / 1e6)
    assert hold.settle(usage) == pytest.approx(after) and budget.spent_usd == pytest.approx(after)
    fix_time(monkeypatch, new_year - 3600)
    assert cost("gemini-3.8-flash", usage) == pytest.approx(before)


def test_the_refresh_script_keeps_the_price_changes_dated_after_the_snapshot():
    import datetime
    import importlib.util
    import os

    types = pytest.importorskip("genai_prices.types")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    spec = importlib.util.spec_from_file_location("refresh_catalog", os.path.join(root, "scripts", "refresh_catalog.py"))
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    starts = types.StartDateConstraint
    model = types.ModelInfo(id="m", match=types.ClauseEquals(equals="m"), prices=[
        types.ConditionalPrice(prices=types.ModelPrice(input_mtok=1, output_mtok=2)),
        types.ConditionalPrice(constraint=starts(start_date=datetime.date(2026, 11, 1)),
                               prices=types.ModelPrice(input_mtok=3, output_mtok=4)),
        types.ConditionalPrice(constraint=starts(start_date=datetime.date(2027, 1, 1)),
                               prices=types.ModelPrice(input_mtok=5, output_mtok=6))])
    row = {"context_window": None, "deprecated": False, "sources": []}
    script._gp_fill(row, model, datetime.date(2026, 12, 6))
    none = {"cached_input": None, "cache_write_5m": None, "cache_write_1h": None}
    assert row["prices"] == dict(none, input=3, output=4)  # the prices in force on the snapshot's date
    assert row["scheduled"] == [{"from": "2027-01-01", "prices": dict(none, input=5, output=6)}]
    script._gp_fill(row, model, datetime.date(2027, 1, 2))
    assert row["prices"] == dict(none, input=5, output=6) and "scheduled" not in row


def test_a_budget_holds_at_the_dearest_tier_and_settles_at_the_one_in_force(monkeypatch, upstream):
    """The newcomer's repro (newcomer.md A4): at 02:41 UTC a Budget counted the off-window price, half the bill."""
    fix_clock(monkeypatch, "12:00")
    assert worst_case_usd(MODEL, 1000, 500) == pytest.approx(PEAK)  # off-peak now, but the window may open
    assert worst_case_usd(MODEL, 1000, 500, tier="standard") == pytest.approx(OFF_PEAK)
    for hhmm, price in (("02:41", PEAK), ("12:00", OFF_PEAK)):
        fix_clock(monkeypatch, hhmm)
        budget = Budget(1.0)
        client(upstream, budget=budget).response(MESSAGES, {"max_tokens": 600})
        assert budget.spent_usd == pytest.approx(price) and budget.reserved_usd == 0.0
    # a limit the off-peak hold fits and the peak hold does not: refused before anything is sent, at any hour
    fix_clock(monkeypatch, "12:00")
    sent = len(upstream.requests)
    budget = Budget(worst_case_usd(MODEL, 10, 600, tier="standard") * 1.5)
    with pytest.raises(BudgetExceededError):
        client(upstream, budget=budget).response(MESSAGES, {"max_tokens": 600})
    assert len(upstream.requests) == sent and budget.spent_usd == 0.0


def test_job_rows_and_runs_take_the_tier_in_force(monkeypatch, upstream, tmp_path):
    fix_clock(monkeypatch, "02:41")
    rows = tmp_path / "in.jsonl"
    rows.write_text(json.dumps({"id": "r1", "model": MODEL, "messages": MESSAGES}) + "\n")
    summary = jobs.run(str(rows), str(tmp_path / "out.jsonl"), workers=1, progress=False,
                       client_factory=lambda *route: client(upstream))
    assert read_output(str(tmp_path / "out.jsonl"))[0]["cost_usd"] == pytest.approx(PEAK)
    assert summary.cost_usd == pytest.approx(PEAK)
    assert client(upstream).run(MESSAGES, tools=[]).result().cost_usd == pytest.approx(PEAK)


def test_a_response_cache_hit_costs_nothing_on_every_path(monkeypatch, upstream, tmp_path):
    """adversarial4 S02: a run answered wholly from the cache said $0.0024, job rows 0.0012 each."""
    fix_clock(monkeypatch, "12:00")
    cache = ResponseCache(str(tmp_path / "cache"))
    try:
        first = client(upstream, cache=cache).run(MESSAGES, tools=[]).result()
        assert first.cost_usd == pytest.approx(OFF_PEAK)
        sent = len(upstream.requests)
        again = client(upstream, cache=cache).run(MESSAGES, tools=[]).result()
        assert len(upstream.requests) == sent  # answered from the cache
        assert again.cost_usd == 0.0

        rows = tmp_path / "in.jsonl"
        rows.write_text("".join(json.dumps({"id": "r{}".format(n), "model": MODEL, "messages": MESSAGES}) + "\n"
                                for n in range(3)))
        for name in ("out1.jsonl", "out2.jsonl"):
            summary = jobs.run(str(rows), str(tmp_path / name), workers=1, progress=False,
                               client_factory=lambda *route: client(upstream, cache=cache))
        out = read_output(str(tmp_path / "out2.jsonl"))
        assert [(row["cost_usd"], row.get("cache")) for row in out] == [(0.0, "hit")] * 3
        assert (summary.done, summary.cost_usd, summary.cache_hits, summary.unpriced) == (3, 0.0, 3, 0)

        from agenthub.apps import chat

        logged = []

        class FakeLog(object):
            def start(self, *args, **kwargs):
                return "conversation-1"

            def add_turn(self, conversation, answered, message, answer, cost_usd):
                logged.append(cost_usd)

        class Args(object):
            model, system, no_log = MODEL, None, False

        monkeypatch.setenv("AGENTHUB_LOG_PROMPTS", "1")
        chatting = client(upstream, cache=cache)
        turn = chat._Logged(Args(), chatting)
        turn.log = lambda: FakeLog()
        turn.turn(MESSAGES[0], chatting.response(MESSAGES))
        assert logged == [0.0]
        # a Budget is not charged for a hit either (as before)
        budget = Budget(1.0)
        client(upstream, cache=cache, budget=budget).response(MESSAGES)
        assert budget.spent_usd == 0.0
    finally:
        cache.close()

