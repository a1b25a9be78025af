"""Reasoning made on one Chat Completions host, sent to another: each host gets its reasoning back in the one field it
reads, whichever host made the history (the exact assistant message of the next request, per pair of hosts).

Facts pinned here (the hosts' own errors, as users reported them):
- DeepSeek, thinking mode: "Missing `reasoning_content` field in the assistant message at message index N" / "The
  `reasoning_content` in the thinking mode must be passed back to the API" (a 400;
  https://api-docs.deepseek.com/guides/thinking_mode#tool-calls): it reads ``reasoning_content`` alone.
- Moonshot (Kimi): "thinking is enabled but reasoning_content is missing in assistant tool call message at index N".
- OpenRouter reads ``reasoning`` and ``reasoning_details`` back; Ollama's OpenAI-compatible endpoint reads
  ``reasoning`` from an assistant message and drops ``reasoning_content`` unread (ollama/ollama#18536).
- Servers that refuse a field they do not know (Cerebras: "property 'messages.2.assistant.reasoning_content' is
  unsupported", its docs asking for the reasoning back in ``content``; Groq, whose assistant message takes
  ``reasoning`` alone; OpenAI's own Chat Completions: "Additional properties are not allowed"; OpenCode's: "Extra
  inputs are not permitted, field: 'messages[2].reasoning'") are reached with no registry row: there no reasoning
  field goes (``config["foreign_thinking"] = "text"``: its text in ``content``); a row that names its field
  (``reasoning_field``) gets that field and no other.

Before: the reasoning went back in the field of the host that made it (DeepSeek's history reached OpenRouter and
Ollama as ``reasoning_content``, unread; OpenRouter's reached DeepSeek and Kimi as ``reasoning`` and
``reasoning_details``, with no ``reasoning_content``: their 400 on a tool-call turn; a host of no row, Groq,
Cerebras or OpenAI itself, got ``reasoning_content`` and ``reasoning_details``: a 400 there).
"""

import pytest

from agenthub import AutoLLMClient, collect
from agenthub.providers import openai_chat
from conftest import run_parser, wire_streams

RECORDED = {name: data for name, data, _ in wire_streams("openai_chat")}
ASK = {"role": "user", "content_items": [{"type": "text", "text": "Hi"}]}
TOOLS = {"tools": [{"name": "weather", "description": "Weather.", "parameters": {"type": "object"}}]}

#: host -> (model, client options): each reached by its registry row
HOSTS = {
    "deepseek": ("deepseek-v4-flash", {}),
    "kimi": ("kimi-k2.6", {}),
    "openrouter": ("deepseek/deepseek-v4-flash", {}),
    "ollama": ("qwen3:8b", {"client_type": "ollama"}),
    "vllm": ("Qwen/Qwen3-8B", {"client_type": "vllm"}),
    # no row: a server not known, and hosts of no row that refuse a field they do not know
    "other": ("m", {"client_type": "openai-chat", "base_url": "http://127.0.0.1:9/v1"}),
    "groq": ("openai/gpt-oss-120b", {"client_type": "openai-chat", "base_url": "https://api.groq.com/openai/v1"}),
    "cerebras": ("gpt-oss-120b", {"client_type": "openai-chat", "base_url": "https://api.cerebras.ai/v1"}),
    "openai": ("gpt-5.5", {"client_type": "openai-chat"}),
}
#: the field each host reads reasoning back from (None: none known, so none is sent)
FIELD = {"deepseek": "reasoning_content", "kimi": "reasoning_content", "openrouter": "reasoning",
         "ollama": "reasoning", "vllm": "reasoning_content", "other": None, "groq": None, "cerebras": None,
         "openai": None}


def _answer(name):
    if name not in RECORDED:
        pytest.skip("../shared/wire is absent")
    return collect(run_parser(openai_chat.parse_stream, [RECORDED[name]], client="openai-chat"))


def _sent(host, answer, after):
    model, options = HOSTS[host]
    client = AutoLLMClient(model, api_key="sk-test-0001", **options)
    return client.plan([ASK, answer, after], TOOLS).body["messages"][1]


DEEPSEEK_THINKING = ("The user is asking for the weather in San Francisco. I need to use the weather tool to get this "
                     "information. Let me invoke the weather tool with the location parameter set to \"San Francisco\".")
DEEPSEEK_CALL = {"id": "call_00_ioIn7yN9p1ZOMNpDLwd4MgAF", "type": "function",
                 "function": {"name": "weather", "arguments": "{\"location\":\"San Francisco\"}"}}


@pytest.mark.parametrize("host", sorted(HOSTS))
def test_deepseeks_reasoning_goes_to_each_host_in_the_field_it_reads(host):
    answer = _answer("deepseek_reasoner_tool_call_cached")
    results = {"role": "user", "content_items": [
        {"type": "tool_result", "tool_call_id": "call_00_ioIn7yN9p1ZOMNpDLwd4MgAF", "text": "18 C"}]}
    expected = {"role": "assistant", "content": None, "tool_calls": [DEEPSEEK_CALL]}
    if FIELD[host]:
        expected[FIELD[host]] = DEEPSEEK_THINKING
    assert _sent(host, answer, results) == expected


@pytest.mark.parametrize("host", sorted(HOSTS))
def test_openrouters_reasoning_goes_to_each_host_in_the_field_it_reads(host):
    answer = _answer("openrouter_claude_reasoning")
    details = [fidelity["reasoning_details"] for fidelity in (i.get("fidelity") or {} for i in answer["content_items"])
               if "reasoning_details" in fidelity]
    assert len(details) == 1 and details[0][0]["signature"]  # (Claude's signed reasoning, through OpenRouter)
    thinking = "This is a simple arithmetic question. 2+2 equals 4."
    expected = {"role": "assistant", "content": "2 + 2 = 4"}
    if FIELD[host]:
        expected[FIELD[host]] = thinking
    if host == "openrouter":  # (the host that made them reads them; another gets their text in its field, or none)
        expected["reasoning_details"] = details[0]
    assert _sent(host, answer, {"role": "user", "content_items": [{"type": "text", "text": "and 3+3?"}]}) == expected


@pytest.mark.parametrize("host", sorted(HOSTS))
def test_reasoning_only_in_reasoning_details_before_a_call_reaches_deepseek_and_kimi_as_reasoning_content(host):
    """A gateway that sends the reasoning only as ``reasoning_details`` (its text shown from them): to a host of a
    known field that does not read them, that text goes in its field, the structure not at all."""
    details = [{"type": "reasoning.text", "text": "Look it up.", "signature": "c2ln", "format": "anthropic-claude-v1",
                "index": 0}]
    answer = {"role": "assistant", "content_items": [
        {"type": "thinking", "thinking": "Look it up.", "fidelity": {"reasoning_field": "reasoning_details"}},
        {"type": "thinking", "thinking": "", "fidelity": {"reasoning_details": details}},
        {"type": "tool_call", "tool_call_id": "call_1", "name": "weather", "arguments": {"location": "Paris"}}]}
    results = {"role": "user", "content_items": [{"type": "tool_result", "tool_call_id": "call_1", "text": "18 C"}]}
    expected = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": "{\"location\":\"Paris\"}"}}]}
    if host == "openrouter":
        expected["reasoning_details"] = details
    elif FIELD[host]:
        expected[FIELD[host]] = "Look it up."
    assert _sent(host, answer, results) == expected


@pytest.mark.parametrize("host", ["other", "groq", "cerebras", "openai"])
def test_a_host_of_no_row_gets_the_reasoning_as_text_in_content_when_asked(host):
    """``config["foreign_thinking"] = "text"`` (what Cerebras's docs ask for: the reasoning back in ``content``):
    a host of no row gets every Chat host's reasoning as text before the answer, and still no reasoning field."""
    model, options = HOSTS[host]
    client = AutoLLMClient(model, api_key="sk-test-0001", **options)
    thinking = [{"type": "thinking", "thinking": "Think. ", "fidelity": {"reasoning_field": "reasoning_content"}},
                {"type": "thinking", "thinking": "More. ", "fidelity": {"reasoning_field": "reasoning"}},
                {"type": "thinking", "thinking": "Shown. ", "fidelity": {"reasoning_field": "reasoning_details"}},
                {"type": "thinking", "thinking": "", "fidelity": {"reasoning_details": [
                    {"type": "reasoning.text", "text": "Shown. ", "signature": "c2ln", "index": 0}]}}]
    answer = {"role": "assistant", "content_items": thinking + [{"type": "text", "text": "Four."}]}
    after = {"role": "user", "content_items": [{"type": "text", "text": "and 3+3?"}]}
    sent = client.plan([ASK, answer, after], {"foreign_thinking": "text"}).body["messages"][1]
    assert sent == {"role": "assistant", "content": "Think. More. Shown. Four."}
    assert client.plan([ASK, answer, after], {}).body["messages"][1] == {"role": "assistant", "content": "Four."}
    # a row's host gets its field whatever the key says
    row = AutoLLMClient("deepseek-v4-flash", api_key="sk-test-0001")
    assert row.plan([ASK, answer, after], {"foreign_thinking": "text"}).body["messages"][1] == {
        "role": "assistant", "content": "Four.", "reasoning_content": "Think. More. Shown. "}


def test_litellms_thinking_blocks_still_go_back_to_a_host_of_no_row():
    """LiteLLM (a gateway of no row) sends Claude's signed thinking as ``thinking_blocks``: they go back to it as they
    came, the reasoning text beside them not (Claude refuses a thinking-plus-tools turn without the signed blocks)."""
    blocks = [{"type": "thinking", "thinking": "Look it up.", "signature": "c2ln"}]
    answer = {"role": "assistant", "content_items": [
        {"type": "thinking", "thinking": "Look it up.", "fidelity": {"reasoning_field": "reasoning_content"}},
        {"type": "thinking", "thinking": "", "fidelity": {"thinking_blocks": blocks}},
        {"type": "tool_call", "tool_call_id": "call_1", "name": "weather", "arguments": {"location": "Paris"}}]}
    results = {"role": "user", "content_items": [{"type": "tool_result", "tool_call_id": "call_1", "text": "18 C"}]}
    assert _sent("other", answer, results) == {"role": "assistant", "content": None, "thinking_blocks": blocks,
                                               "tool_calls": [{"id": "call_1", "type": "function", "function": {
                                                   "name": "weather", "arguments": "{\"location\":\"Paris\"}"}}]}
