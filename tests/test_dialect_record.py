"""Each wire dialect is declared once, by its ``Protocol`` record (issue 28 item 3): what only some dialects
do (config keys they accept, chained turns, resumed background streams, token counting, compaction) is a field
of the record, and the old places (attributes on ``build_request``, module names) are aliases of it."""

import importlib

import pytest

from agenthub import providers
from agenthub.providers._common import Count, Protocol, Resume

NAMES = list(providers.PROTOCOLS)

#: dialect -> (accepts, chains_turns, resumes, counts, compaction_format)
TRAITS = {
    "openai-chat": ((), False, False, False, None),
    "openai-responses": (("background", "compaction", "mcp_servers"), False, True, True, "openai"),
    "anthropic": (("compaction", "mcp_servers"), False, False, True, "anthropic"),
    "gemini": ((), False, False, True, None),
    "gemini-interactions": (("background",), True, True, False, None),
    "bedrock": ((), False, False, True, None),
    "agenthub": ((), False, False, False, None),
}


def test_every_dialect_has_a_row_here():
    assert sorted(TRAITS) == sorted(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_the_record_declares_what_the_dialect_does(name):
    record = providers.protocol(name)
    accepts, chains, resumes, counts, compaction = TRAITS[name]
    assert isinstance(record, Protocol)
    assert record.accepts == accepts
    assert record.chains_turns is chains
    assert (record.stored_answer is not None) is chains
    assert isinstance(record.resume, Resume) if resumes else record.resume is None
    assert isinstance(record.count, Count) if counts else record.count is None
    assert record.compaction_format == compaction


@pytest.mark.parametrize("name", NAMES)
def test_the_record_is_the_one_place_a_dialect_declares_its_traits(name):
    record = providers.protocol(name)
    module = importlib.import_module("agenthub.providers." + record.module)
    for trait in ("accepts", "chains_turns", "stored_answer", "compaction_format"):  # no function attributes
        assert not hasattr(record.build_request, trait), trait
    if record.resume is not None:
        assert (module.resume_request, module.cancel_request, module.frame_cursor, module.ordered_cursors) == (
            record.resume.request, record.resume.cancel, record.resume.frame_cursor, record.resume.ordered)
    if record.count is not None:
        assert (module.count_request, module.COUNT_FIELD) == (record.count.request, record.count.field)
    else:
        assert not hasattr(module, "count_request")


def test_cursor_order_per_dialect():
    assert providers.protocol("openai-responses").resume.ordered is True
    assert providers.protocol("gemini-interactions").resume.ordered is False


# -- the plan carries its output limit (HttpRequest.max_output): the budget reads no wire path --------------

from agenthub.providers._common import Endpoint, apply_extras  # noqa: E402
from agenthub.validate import check_config  # noqa: E402

HI = [{"role": "user", "content_items": [{"type": "text", "text": "hi"}]}]
#: dialect -> (model, where its body keeps the output limit)
LIMITS = {
    "openai-chat": ("gpt-4.1-mini", ("max_completion_tokens",)),
    "openai-responses": ("gpt-5.5", ("max_output_tokens",)),
    "anthropic": ("claude-sonnet-4-6", ("max_tokens",)),
    "gemini": ("gemini-3.5-flash", ("generationConfig", "maxOutputTokens")),
    "gemini-interactions": ("gemini-3.5-flash", ("generation_config", "max_output_tokens")),
    "bedrock": ("us.anthropic.claude-sonnet-4-5-20250929-v1:0", ("inferenceConfig", "maxTokens")),
    "agenthub": ("claude-sonnet-4-6", ("config", "max_tokens")),
}


def _plan(name, config):
    model, _ = LIMITS[name]
    record = providers.protocol(name)
    cfg = check_config(config)
    return apply_extras(record.build_request(Endpoint(name, "http://127.0.0.1:9", "k"), model, HI, cfg), cfg)


@pytest.mark.parametrize("name", NAMES)
def test_a_plan_carries_its_output_limit(name):
    _, path = LIMITS[name]
    plan = _plan(name, {"max_tokens": 321})
    assert plan.output_limit == path and plan.max_output == 321
    if name != "agenthub":  # (extra_body does not go to an agenthub server)
        extra = {}
        inner = extra
        for key in path[:-1]:
            inner = inner.setdefault(key, {})
        inner[path[-1]] = 77
        assert _plan(name, {"max_tokens": 321, "extra_body": extra}).max_output == 77  # what is sent is what counts


def test_a_plan_without_a_limit_says_none():
    assert _plan("openai-chat", {}).max_output is None
    from agenthub.providers import anthropic

    assert _plan("anthropic", {}).max_output == anthropic.thinking_rule("claude-sonnet-4-6")["max_tokens"]  # sent


def test_the_budget_reads_the_plans_limit_gemini_interactions_too():
    """budget.py kept a table of five wire paths, which missed gemini-interactions' generation_config."""
    from types import SimpleNamespace

    from agenthub.budget import Budget, BudgetHook, estimate_tokens, worst_case_usd

    plan = _plan("gemini-interactions", {"extra_body": {"generation_config": {"max_output_tokens": 5000}}})
    budget = Budget(10)
    hook = BudgetHook(budget)
    attempt = SimpleNamespace(kind="stream", number=0, config={}, request=plan, model="gemini-3.5-flash",
                              messages=HI, client_type="gemini-interactions")
    hook.before_attempt(attempt)
    assert budget.reserved_usd == pytest.approx(worst_case_usd("gemini-3.5-flash", estimate_tokens(HI), 5000))


# -- Claude's request rules, written once for the Messages API and Bedrock Converse ---------------------------

from agenthub.errors import UnsupportedParameterError  # noqa: E402

CLAUDES = [("claude-sonnet-4-5", "us.anthropic.claude-sonnet-4-5-20250929-v1:0"),
           ("claude-opus-4-8", "global.anthropic.claude-opus-4-8-v1:0"),
           ("claude-sonnet-5-5", "anthropic.claude-sonnet-5-5-v1:0"),
           ("claude-3-7-sonnet", "anthropic.claude-3-7-sonnet-20250219-v1:0")]
CONFIGS = [{"temperature": 0.5}, {"temperature": 1}, {"top_p": 0.9}, {"temperature": 0.5, "top_p": 0.9},
           {"thinking_level": "high", "temperature": 0.5}, {"thinking_level": "high", "top_p": 0.5},
           {"thinking_level": "high", "top_p": 0.99}, {"tool_choice": "required"},
           {"tool_choice": "required", "thinking_level": "high"}, {"tool_choice": ["get"]}]
TOOL = [{"name": "get", "description": "d", "parameters": {"type": "object", "properties": {}}}]


def _verdict(name, model, config):
    from agenthub.providers import anthropic, bedrock

    module = anthropic if name == "anthropic" else bedrock
    cfg = check_config(dict(config, tools=TOOL, max_tokens=20000))
    try:
        body = module.build_request(Endpoint(name, "http://127.0.0.1:9", "k"), model, HI, cfg).body
    except UnsupportedParameterError as exc:
        return "refused", exc.parameter, str(exc).split(": ", 1)[1].replace(repr(model), "M")
    sampling = body.get("inferenceConfig", body)
    thinking = body.get("additionalModelRequestFields", body).get("thinking")
    return ("sent", sampling.get("temperature"), sampling.get("top_p", sampling.get("topP")), thinking)


@pytest.mark.parametrize("claude, on_bedrock", CLAUDES)
@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: ",".join("{}={}".format(k, v) for k, v in c.items()))
def test_claude_takes_the_same_rules_on_both_wires(claude, on_bedrock, config):
    ours, theirs = _verdict("anthropic", claude, config), _verdict("bedrock", on_bedrock, config)
    if ours[:2] == ("refused", "tool_choice") and "use 'auto'" in ours[2]:  # (Converse has no "none" to suggest)
        ours = ours[:2] + (ours[2].replace("'auto' or 'none'", "'auto'"),)
    assert ours == theirs


# -- every streaming dialect reads decoded payloads (issue 28 item 4) ------------------------------------------

from agenthub.sse import iter_events  # noqa: E402


@pytest.mark.parametrize("name", NAMES)
def test_every_streaming_sse_dialect_declares_parse_payloads(name):
    """With SSE framing, ``Protocol.read`` hands ``parse_payloads`` decoded payloads (no SSEEvent per event):
    a dialect without it falls back to the slower path, as gemini-interactions did."""
    record = providers.protocol(name)
    if record.parse_stream is None or record.framing is not iter_events:
        pytest.skip("{} does not stream SSE".format(name))
    assert record.parse_payloads is not None


INTERACTION = [
    {"event_type": "interaction.created", "interaction": {"id": "v1_x"}},
    {"event_type": "step.start", "index": 0, "step": {"type": "model_output"}},
    {"event_type": "step.delta", "index": 0, "delta": {"type": "text", "text": "Hel"}},
    {"event_type": "step.delta", "index": 0, "delta": {"type": "text", "text": "lo"}},
    {"event_type": "step.stop", "index": 0},
    {"event_type": "step.start", "index": 1, "step": {"type": "function_call", "id": "c1", "name": "get"}},
    {"event_type": "step.delta", "index": 1, "delta": {"type": "arguments_delta", "arguments": '{"q":'}},
    {"event_type": "step.delta", "index": 1, "delta": {"type": "arguments_delta", "arguments": ' 1}'}},
    {"event_type": "step.stop", "index": 1},
    {"event_type": "step.start", "index": 2, "step": "not a step"},   # a bad server: nothing, never a crash
    {"event_type": "step.delta", "index": 2, "delta": ["not a delta"]},
    {"event_type": "interaction.completed", "interaction": {"id": "v1_x", "status": "requires_action",
                                                            "usage": {"total_input_tokens": 7,
                                                                      "total_output_tokens": 2}}},
]


def _interaction_sse():
    import json

    return [("data: " + json.dumps(event) + "\n\n").encode() for event in INTERACTION] + [b"data: [DONE]\n\n"]


def test_gemini_interactions_reads_the_same_parts_from_payloads_and_from_sse_events():
    from agenthub.providers import gemini_interactions as gi
    from agenthub.providers._common import payloads

    chunks = _interaction_sse()
    by_events = list(gi.parse_stream(iter_events(chunks), "gemini-interactions"))
    by_payloads = list(gi.PROTOCOL.parse_payloads(payloads(iter_events(chunks)), "gemini-interactions"))
    assert [repr(part) for part in by_events] == [repr(part) for part in by_payloads]
    items = [part for part in by_payloads if isinstance(part, dict)]
    assert [item["type"] for item in items if item["type"] != "tool_call_delta"][:2] == ["text", "text"]
    end = by_payloads[-1]
    assert (end.finish_reason, end.usage["prompt_tokens"], end.usage["response_tokens"]) == ("tool_call", 7, 2)


def test_a_whole_interaction_is_read_without_writing_sse_text_again(monkeypatch):
    """parse_document handed its steps to the parser as SSE events of JSON text it had just re-serialised."""
    from agenthub.providers import gemini_interactions as gi

    def refuse(*args, **kwargs):
        raise AssertionError("a parsed document was turned back into SSE events")

    monkeypatch.setattr(gi, "SSEEvent", refuse)
    monkeypatch.setattr(gi.json, "dumps", refuse)
    doc = {"id": "v1_doc", "status": "completed", "steps": [
        {"type": "model_output", "content": [{"type": "text", "text": "hi"}]}]}
    parts = list(gi.parse_document(doc, "gemini-interactions"))
    assert parts[0] == {"type": "text", "text": "hi"} and parts[-1].finish_reason == "stop"
