"""Each wire dialect is declared once, by its ``Protocol`` record (issue 28 item 3): what only some dialects
do (config keys they accept, chained turns, resumed background streams, token counting, compaction) is a field
of the record, and the old places (attributes on ``build_request``, module names) are aliases of it."""

import importlib
import re

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


# -- one place per provider: the dialect index and the client-type rows declare every per-provider fact ----------

from agenthub import hosts, registry  # noqa: E402
from agenthub.providers import ALL_FAMILIES, ANY_ID, DIALECTS, Dialect  # noqa: E402

#: what each Dialect field may hold
OPERATIONS = ("chat", "generate_content")
BATCH_APIS = ("chat", "responses", "messages", "generate")


def undeclared(rows=None, dialects=None, routes=None):
    """Every per-provider fact a row, a dialect or a registry route leaves undeclared, in words."""
    import re as _re

    rows = hosts.CLIENT_TYPES if rows is None else rows
    dialects = DIALECTS if dialects is None else dialects
    routes = registry.ROUTES if routes is None else routes
    problems = []
    for name, record in dialects.items():
        if record.operation not in OPERATIONS:
            problems.append("{}: operation {!r}".format(name, record.operation))
        if not isinstance(record.provider_by_host, bool):
            problems.append("{}: provider_by_host".format(name))
        pattern, words = record.tool_names
        _re.compile(pattern)
        if not words:
            problems.append("{}: tool_names in words".format(name))
        if not (isinstance(record.call_ids, tuple) and len(record.call_ids) == 2):
            problems.append("{}: call_ids".format(name))
        families = {family for d in dialects.values() for family, _ in d.marks}
        if record.reads != ALL_FAMILIES and not set(record.reads) <= families:
            problems.append("{}: reads a family nobody marks".format(name))
        if record.batch_api not in BATCH_APIS + (None,):
            problems.append("{}: batch_api {!r}".format(name, record.batch_api))
    for name, row in rows.items():
        if not isinstance(row.provider, str) or not row.provider:
            problems.append("client_type {}: no provider".format(name))
        if row.dialect not in dialects:
            problems.append("client_type {}: dialect {!r} is not in the index".format(name, row.dialect))
    for route in routes:
        if type(route.provider).__name__ == "_Undeclared":
            problems.append("route {!r}: no provider (None says: the client-type row's)".format(route.label))
    return problems


def test_every_row_dialect_and_route_declares_its_facts():
    assert undeclared() == []


def test_a_row_or_route_without_its_facts_is_caught():
    from agenthub.hosts import ClientType
    from agenthub.registry import Route

    rows = dict(hosts.CLIENT_TYPES, acme=ClientType("acme", "openai-chat", "openai"))
    routes = registry.ROUTES + [Route(None, "openai-chat", "https://api.acme.example/v1", (), "Acme",
                                      presets=("acme",))]
    assert undeclared(rows=rows, routes=routes) == [
        "client_type acme: no provider", "route '': no provider (None says: the client-type row's)"]
    with pytest.raises(TypeError):  # a Dialect takes every field by name, none has a default
        Dialect("acme", "acme", operation="chat")  # type: ignore[call-arg]


def test_the_index_agrees_with_the_modules_records():
    for name, record in DIALECTS.items():
        assert providers.PROTOCOLS[name] == record.module
        assert providers.protocol(name).compaction_format == record.compaction


def test_the_index_is_read_without_importing_a_dialect_module():
    import os
    import subprocess
    import sys

    code = ("import sys\nfrom agenthub import providers, foreign\nfrom agenthub.telemetry import operation_name\n"
            "operation_name('vertex')\n"
            "print(sorted(m for m in sys.modules if m.startswith('agenthub.providers.') and m != "
            "'agenthub.providers._common'))\n")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env=dict(os.environ, PYTHONPATH=root))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


# the facts as the old tables held them (foreign.MARKS / READS / _IDS, jobs/batch._API, backends.BY_CLIENT_TYPE,
# telemetry._BY_CLIENT_TYPE): the move changed no answer, but for the drift it fixed (vertex-anthropic's names)

def test_the_marks_and_reads_are_the_old_tables():
    from agenthub import foreign

    assert dict(foreign.MARKS) == {
        "openai-responses": ("channel", "encrypted_content"), "gemini": ("thought_signature",),
        "gemini-interactions": ("interaction_id",),
        "openai-chat": ("reasoning_field", "reasoning_details", "thinking_blocks", "issued_id"),
        "bedrock": ("redacted_content", "bedrock_block"), "anthropic": ("redacted_data", "server_block"),
        "claude": ("signature",)}
    assert foreign.MARKS[-1] == ("claude", ("signature",))  # a shared family is checked after every own one
    assert foreign.READS == {
        "openai-responses": ("openai-responses",), "gemini": ("gemini",),
        "gemini-interactions": ("gemini", "gemini-interactions"), "openai-chat": ("openai-chat",),
        "anthropic": ("anthropic", "claude"), "bedrock": ("bedrock", "claude"),
        "agenthub": tuple(family for family, _ in foreign.MARKS)}
    assert foreign.family_of({"type": "thinking", "fidelity": {"encrypted_content": "e", "signature": "s"}}) \
        == "openai-responses"


@pytest.mark.parametrize("dialect, long_id, kept", [
    ("anthropic", "call.1", False), ("anthropic", "x" * 200, True), ("bedrock", "x" * 65, False),
    ("bedrock", "x" * 64, True), ("openai-chat", "x" * 41, False), ("openai-chat", "a.b:c" * 8, True),
    ("openai-responses", "x.y" * 21 + "z", True), ("openai-responses", "x" * 65, False),  # (at most 64 there)
    ("gemini", "any id at all", True), ("agenthub", "x" * 300, True)])
def test_the_call_id_rules_are_the_old_ones(dialect, long_id, kept):
    from agenthub import foreign

    message = {"role": "assistant", "content_items": [
        {"type": "tool_call", "tool_call_id": long_id, "name": "f", "arguments": "{}"}]}
    out, changed = foreign.for_dialect([message], dialect)
    assert (out[0]["content_items"][0]["tool_call_id"] == long_id) is kept
    assert changed == ({} if kept else {"ids_rewritten": 1})


def test_the_batch_engines_are_derived_from_dialect_and_host():
    from agenthub.jobs import backends

    assert backends.BY_CLIENT_TYPE == {"openai-chat": "openai", "openai-responses": "openai", "azure": "azure",
                                       "azure-responses": "azure", "anthropic": "anthropic", "gemini": "gemini"}
    apis = {name: row.facts.batch_api for name, row in hosts.CLIENT_TYPES.items() if name in backends.BY_CLIENT_TYPE}
    assert apis == {"openai-chat": "chat", "azure": "chat", "openai-responses": "responses",
                    "azure-responses": "responses", "anthropic": "messages", "gemini": "generate"}
    assert backends.for_client_type("azure-anthropic") is None  # the azure engine takes no Messages rows
    assert backends.for_client_type("vertex-anthropic") is None and backends.for_client_type("nope") is None


def test_the_provider_of_every_row_is_the_old_one():
    assert {name: row.provider for name, row in hosts.CLIENT_TYPES.items()} == {
        "openai-chat": "openai", "openai-responses": "openai", "anthropic": "anthropic", "gemini": "gcp.gemini",
        "gemini-interactions": "gcp.gemini", "azure": "azure.ai.openai", "azure-responses": "azure.ai.openai",
        "azure-anthropic": "anthropic", "vertex": "gcp.vertex_ai", "vertex-anthropic": "gcp.vertex_ai",
        "bedrock": "aws.bedrock", "agenthub": "agenthub"}


class _Client(object):
    def __init__(self, client_type, model="m"):
        self.client_type = client_type
        self.model = model


@pytest.mark.parametrize("row", sorted(hosts.CLIENT_TYPES))
def test_every_row_takes_its_dialects_tool_name_rule(row):
    from agenthub.agent.runner import wire_name_problem

    longest = {"anthropic": 128}.get(hosts.CLIENT_TYPES[row].dialect, 64)
    assert wire_name_problem(_Client(row), "t" * longest) is None
    assert wire_name_problem(_Client(row), "t" * (longest + 1)) == "{} tool names are {}".format(
        row, hosts.CLIENT_TYPES[row].facts.tool_names[1])


def test_vertex_anthropic_takes_anthropics_128_character_names():
    """The drift: vertex-anthropic (the anthropic dialect) got OpenAI's 64-character rule."""
    from agenthub import AutoLLMClient
    from agenthub.agent.runner import wire_name_problem

    name = "n" * 100
    assert wire_name_problem(_Client("vertex-anthropic", "claude-sonnet-4-6"), name) is None
    assert wire_name_problem(_Client("anthropic"), name) is None
    assert wire_name_problem(_Client("azure-anthropic"), name) is None
    assert wire_name_problem(_Client("vertex", "gemini-3.5-flash"), name) is not None
    client = AutoLLMClient("claude-sonnet-4-6", api_key="k", base_url="http://127.0.0.1:9/v1", client_type="anthropic")
    assert wire_name_problem(client, name) is None


def test_a_client_type_without_a_row_has_no_silent_tool_name_rule():
    from agenthub.agent.runner import wire_name_problem
    from agenthub.errors import ConfigError

    with pytest.raises(ConfigError, match="names no wire dialect"):
        wire_name_problem(_Client("acme"), "f")


# -- the answer's id and model ride on the StreamEnd of every dialect whose wire carries them (issue 37 C4) ---------


def test_gemini_interactions_says_its_interaction_id_and_model():
    import json as _json

    from agenthub.providers import gemini_interactions
    from agenthub.sse import SSEEvent
    from agenthub.stream import StreamEnd

    def ev(kind, body):
        return SSEEvent(_json.dumps(dict(body, event_type=kind)), kind)

    events = [ev("interaction.created", {"interaction": {"id": "v1_x", "status": "in_progress"}}),
              ev("step.start", {"index": 0, "step": {"type": "text", "text": "hi"}}),
              ev("step.stop", {"index": 0}),
              ev("interaction.completed", {"interaction": {"id": "v1_x", "status": "completed",
                                                           "model": "gemini-3.5-flash"}})]
    (end,) = [part for part in gemini_interactions.parse_stream(iter(events), "gemini-interactions")
              if isinstance(part, StreamEnd)]
    assert (end.response_id, end.model) == ("v1_x", "gemini-3.5-flash")


# -- what the catalog and the client read of a dialect: its record, never a comparison with its name --------------

def test_the_record_says_which_dialect_knows_structured_output_and_which_relays():
    assert {name: (d.knows_structured_output, d.relays) for name, d in DIALECTS.items()} == {
        "openai-chat": (False, False), "openai-responses": (False, False), "anthropic": (True, False),
        "gemini": (False, False), "gemini-interactions": (False, False), "bedrock": (False, False),
        "agenthub": (False, True)}
    assert Dialect.__slots__ == ("name", "module", "operation", "provider_by_host", "tool_names", "call_ids",
                                 "marks", "reads", "compaction", "batch_api", "knows_structured_output", "relays",
                                 "answers_required", "unique_call_ids", "results_next", "_tool_regex", "_id_regex")


def test_the_record_says_how_each_wire_takes_tool_calls_and_results():
    assert {name: (d.answers_required, d.unique_call_ids, d.results_next) for name, d in DIALECTS.items()} == {
        "openai-chat": (False, False, True), "openai-responses": (True, True, False),
        "anthropic": (True, True, True), "gemini": (True, False, True), "gemini-interactions": (True, True, True),
        "bedrock": (True, True, False), "agenthub": (False, False, False)}


def test_the_tool_call_rules_are_read_from_the_record(monkeypatch):
    """An unanswered call refused, a call id taken twice rewritten, a call's results joined into one user turn:
    each because the record says so, not because the dialect is named anthropic."""
    from agenthub import AutoLLMClient
    from agenthub.errors import ConfigError

    def call(call_id):
        return {"role": "assistant", "content_items": [{"type": "tool_call", "tool_call_id": call_id,
                                                        "name": "f", "arguments": {}}]}

    def result(call_id):
        return {"role": "user", "content_items": [{"type": "tool_result", "tool_call_id": call_id, "text": "1"}]}

    client = AutoLLMClient("claude-sonnet-4-6", api_key="k")
    unanswered = [HI[0], call("c1"), {"role": "user", "content_items": [{"type": "text", "text": "and?"}]}]
    twice = [HI[0], call("c1"), result("c1"), call("c1"), result("c1")]
    apart = [HI[0], call("c1"), {"role": "user", "content_items": [{"type": "text", "text": "wait"}]}, result("c1")]

    def ids(messages):
        body = client.plan(messages, {}).body
        return [block["id"] if block["type"] == "tool_use" else block["tool_use_id"]
                for message in body["messages"] if isinstance(message["content"], list)
                for block in message["content"] if block["type"] in ("tool_use", "tool_result")]

    with pytest.raises(ConfigError):
        client.plan(unanswered, {})
    first, answer, second, second_answer = ids(twice)
    assert (first, answer, second_answer) == ("c1", "c1", second) and re.fullmatch("call_[0-9a-f]{24}", second)
    assert [m["role"] for m in client.plan(apart, {}).body["messages"]] == ["user", "assistant", "user"]
    monkeypatch.setattr(DIALECTS["anthropic"], "answers_required", False)
    monkeypatch.setattr(DIALECTS["anthropic"], "unique_call_ids", False)
    monkeypatch.setattr(DIALECTS["anthropic"], "results_next", False)
    client.plan(unanswered, {})
    assert ids(twice) == ["c1", "c1", "c1", "c1"]
    assert [m["role"] for m in client.plan(apart, {}).body["messages"]] == ["user", "assistant", "user", "user"]


def test_supports_json_schema_reads_the_record(monkeypatch):
    """``agenthub models --supports json_schema``: a model the sources say nothing of is listed when its route's
    dialect record says the dialect knows each model (Anthropic's), not because the dialect is named anthropic."""
    from agenthub.apps.terminal import takes_json_schema

    claude = {"id": "claude-sonnet-4-6", "provider": "anthropic"}  # (structured_output unknown to the sources)
    gpt = {"id": "gpt-4.1-mini", "provider": "openai"}
    assert (takes_json_schema(claude), takes_json_schema(gpt)) == (True, False)
    monkeypatch.setattr(DIALECTS["anthropic"], "knows_structured_output", False)
    monkeypatch.setattr(DIALECTS["openai-chat"], "knows_structured_output", True)
    monkeypatch.setattr(DIALECTS["openai-responses"], "knows_structured_output", True)
    assert (takes_json_schema(claude), takes_json_schema(gpt)) == (False, True)


def test_a_relaying_dialect_leaves_tool_checks_to_its_server(monkeypatch):
    """The client checks tool names and unanswered calls itself unless the record says the other end is an
    agenthub server (``relays``), which checks them against its own upstream (a result answering no call)."""
    from agenthub import AutoLLMClient
    from agenthub.errors import ConfigError

    bad_name = {"tools": [{"name": "no spaces allowed", "description": "", "parameters": {"type": "object"}}]}
    open_call = [HI[0], {"role": "assistant", "content_items": [{"type": "text", "text": "hi"}]},  # (a result
                 {"role": "user", "content_items": [{"type": "tool_result", "tool_call_id": "c1",  # of no call)
                                                     "text": "1"}]}]
    served = AutoLLMClient("m", client_type="agenthub", base_url="http://127.0.0.1:9", api_key="k")
    direct = AutoLLMClient("claude-sonnet-4-6", api_key="k")
    served.plan(HI, bad_name)
    served.plan(open_call, {})
    for messages, config in ((HI, bad_name), (open_call, {})):
        with pytest.raises(ConfigError):
            direct.plan(messages, config)
    monkeypatch.setattr(DIALECTS["agenthub"], "relays", False)
    monkeypatch.setattr(DIALECTS["anthropic"], "relays", True)
    direct.plan(HI, bad_name)
    direct.plan(open_call, {})
    for messages, config in ((HI, bad_name), (open_call, {})):
        with pytest.raises(ConfigError):
            served.plan(messages, config)
