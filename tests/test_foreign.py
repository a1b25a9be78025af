"""History across protocols (agenthub.foreign): what a target cannot read is converted on the way out."""

import base64
import copy
import hashlib
import logging

import pytest

import bedrock_frames as bf
from agenthub import AutoLLMClient, collect
from agenthub.errors import AgentHubError
from agenthub.eventstream import iter_messages
from agenthub.foreign import family_of, for_dialect, results_next_to_calls
from agenthub.providers import anthropic
from agenthub.providers.bedrock import parse_stream as bedrock_parse
from agenthub.stream import drive
from conftest import run_parser, wire_params

CLAUDE = [
    {"role": "user", "content_items": [{"type": "text", "text": "Weather in Paris?"}]},
    {"role": "assistant", "content_items": [
        {"type": "thinking", "thinking": "I should call the tool.", "fidelity": {"signature": "EqQBCkYIBxgC"}},
        {"type": "thinking", "thinking": "", "fidelity": {"redacted_data": "EmwKAhgBEgy"}},
        {"type": "text", "text": "Let me check."},
        {"type": "tool_call", "name": "get_weather", "arguments": {"city": "Paris"}, "tool_call_id": "toolu_01A"},
    ]},
    {"role": "user", "content_items": [{"type": "tool_result", "text": "22 C", "tool_call_id": "toolu_01A"}]},
]


def test_families_by_their_marks():
    assert family_of({"type": "thinking", "thinking": "x", "fidelity": {"signature": "s"}}) == "claude"
    assert family_of({"type": "thinking", "thinking": "", "fidelity": {"redacted_data": "d"}}) == "anthropic"
    assert family_of({"type": "thinking", "thinking": "x",
                      "fidelity": {"channel": "summary", "signature": "s"}}) == "openai-responses"
    assert family_of({"type": "thinking", "thinking": "x", "fidelity": {"thought_signature": "t"}}) == "gemini"
    assert family_of({"type": "thinking", "thinking": "x", "fidelity": {"reasoning_field": "reasoning"}}) \
        == "openai-chat"
    assert family_of({"type": "thinking", "thinking": "x"}) is None
    assert family_of({"type": "thinking", "thinking": "x", "fidelity": {}}) is None


@pytest.mark.parametrize("target", ["openai-responses", "gemini", "openai-chat"])
def test_claude_thinking_is_dropped_for_another_protocol_and_the_history_is_untouched(target):
    before = copy.deepcopy(CLAUDE)
    out, changed = for_dialect(CLAUDE, target)
    assert CLAUDE == before
    assert out[1]["content_items"] == [
        {"type": "text", "text": "Let me check."},
        {"type": "tool_call", "name": "get_weather", "arguments": {"city": "Paris"}, "tool_call_id": "toolu_01A"},
    ]
    assert out[0] is CLAUDE[0] and out[2] is CLAUDE[2]   # unchanged messages are not copied
    assert changed == {"thinking_dropped": 2}


def test_foreign_thinking_text_keeps_the_text_as_plain_text():
    out, changed = for_dialect(CLAUDE, "gemini", foreign_thinking="text")
    assert out[1]["content_items"][:2] == [{"type": "text", "text": "I should call the tool."},
                                           {"type": "text", "text": "Let me check."}]
    assert changed == {"thinking_as_text": 1, "thinking_dropped": 1}   # the redacted one has no text


@pytest.mark.parametrize("target", ["anthropic", "bedrock"])
def test_back_on_claude_the_signatures_are_sent_as_they_came(target):
    out, changed = for_dialect(CLAUDE, target)
    if target == "anthropic":
        assert out == CLAUDE and changed == {}
    else:  # Bedrock reads Claude's signatures; a redacted_data that is no base64 is no redactedContent Bedrock takes
        assert out[1]["content_items"][0] == CLAUDE[1]["content_items"][0]
        assert changed == {"thinking_dropped": 1}


# Claude's redacted thinking: Anthropic's redacted_thinking data and Bedrock Converse's reasoningContent.redactedContent
# (a blob, base64 in the JSON wire) are the same bytes (base64 text on both)
REDACTED = base64.b64encode(b"\x00\x01opaque\xff" * 3).decode("ascii")


@pytest.mark.parametrize("kind", ["thinking", "text"])
@pytest.mark.parametrize("source,target", [("redacted_data", "bedrock"), ("redacted_content", "anthropic")])
def test_claude_redacted_thinking_goes_to_its_other_wire_under_that_wires_key(kind, source, target):
    own = {"bedrock": "redacted_content", "anthropic": "redacted_data"}[target]
    history = [{"role": "assistant", "content_items": [
        {"type": kind, kind: "", "fidelity": {source: REDACTED}}, {"type": "text", "text": "ok"}]}]
    before = copy.deepcopy(history)
    out, changed = for_dialect(history, target)
    assert out[0]["content_items"] == [{"type": kind, kind: "", "fidelity": {own: REDACTED}},
                                       {"type": "text", "text": "ok"}]
    assert changed == {"redacted_moved": 1}
    assert history == before


@pytest.mark.parametrize("value", ["EmwKAhgBEgy", "not base64!", "", 12])
def test_a_redacted_value_that_is_no_base64_is_not_moved(value):
    history = [{"role": "assistant", "content_items": [{"type": "thinking", "thinking": "",
                                                        "fidelity": {"redacted_data": value}}]}]
    assert for_dialect(history, "bedrock") == ([], {"thinking_dropped": 1, "messages_dropped": 1})


def test_a_recorded_anthropic_redacted_turn_goes_to_bedrock_and_back_byte_exact():
    params = [param for param in wire_params("anthropic") if param.values[0] in (None, "redacted_thinking_padded_json")]
    name, data, sidecar = params[0].values
    if data is None:
        pytest.skip("../shared/wire is absent")
    answer = collect(run_parser(anthropic.parse_stream, [data], "anthropic"))
    recorded = sidecar["expect_extras"]["redacted_thinking_data"]
    ask = {"role": "user", "content_items": [{"type": "text", "text": "q"}]}
    later = {"role": "user", "content_items": [{"type": "text", "text": "more"}]}
    bedrock = AutoLLMClient("us.anthropic.claude-sonnet-4-5-20250929-v1:0", client_type="bedrock",
                            base_url="http://127.0.0.1:9", api_key="ABSKbedrock-api-key-0003")
    sent = bedrock.plan([ask, answer, later]).body["messages"][1]["content"]
    assert sent[:2] == [{"reasoningContent": {"redactedContent": value}} for value in recorded]
    assert sent[2] == {"text": sidecar["expect"]["text"]}
    # the Bedrock answer that carries them, read back, goes to Anthropic as the data Anthropic sent
    frames = [bf.message_start()] + [frame for index, value in enumerate(recorded) for frame in (
        bf.reasoning_delta(index, redacted=base64.b64decode(value)), bf.block_stop(index))] + [
        bf.text_delta("ok", 2), bf.block_stop(2), bf.message_stop(), bf.metadata()]
    again = collect(list(drive(bedrock_parse(iter_messages([b"".join(frames)]), "bedrock", "t_"), "bedrock")))
    claude = AutoLLMClient("claude-sonnet-4-5", client_type="anthropic", base_url="http://127.0.0.1:9", api_key="k")
    replay = claude.plan([ask, again, later]).body["messages"][1]["content"]
    assert replay == [{"type": "redacted_thinking", "data": value} for value in recorded] + [
        {"type": "text", "text": "ok"}]


def test_openai_encrypted_reasoning_never_reaches_anthropic():
    history = [
        {"role": "user", "content_items": [{"type": "text", "text": "hi"}]},
        {"role": "assistant", "content_items": [
            {"type": "thinking", "thinking": "", "fidelity": {"channel": "summary", "encrypted_content": "gAAAA"}},
            {"type": "text", "text": "Hello", "fidelity": {"phase": "final_answer"}},
        ]},
    ]
    out, changed = for_dialect(history, "anthropic")
    assert out[1]["content_items"] == [{"type": "text", "text": "Hello", "fidelity": {"phase": "final_answer"}}]
    assert changed == {"thinking_dropped": 1}
    assert for_dialect(history, "openai-responses") == (history, {})


def test_unmarked_thinking_is_left_to_the_dialect():
    history = [{"role": "assistant", "content_items": [{"type": "thinking", "thinking": "plain"},
                                                       {"type": "text", "text": "x"}]}]
    assert for_dialect(history, "anthropic") == (history, {})


def _rewritten(old):
    return "call_" + hashlib.sha256(old.encode()).hexdigest()[:24]


def _two_calls(first, second):
    """An assistant message calling a (id ``first``) and b (id ``second``), and the message of their results."""
    return [{"role": "assistant", "content_items": [
                {"type": "tool_call", "name": "a", "arguments": {}, "tool_call_id": first},
                {"type": "tool_call", "name": "b", "arguments": {}, "tool_call_id": second}]},
            {"role": "user", "content_items": [
                {"type": "tool_result", "text": "1", "tool_call_id": first},
                {"type": "tool_result", "text": "2", "tool_call_id": second}]}]


def test_tool_ids_a_target_refuses_are_rewritten_the_same_on_call_and_result():
    long_id = "call_" + "x" * 60            # over Chat Completions' 40 characters
    odd_id = "functions.get_weather:0"       # outside Anthropic's and Bedrock's [A-Za-z0-9_-]
    history = _two_calls(long_id, odd_id)
    chat, changed = for_dialect(history, "openai-chat")
    assert [i["tool_call_id"] for m in chat for i in m["content_items"]] == [
        _rewritten(long_id), odd_id, _rewritten(long_id), odd_id]
    assert changed == {"ids_rewritten": 2}
    claude, _ = for_dialect(history, "anthropic")
    assert [i["tool_call_id"] for m in claude for i in m["content_items"]] == [
        long_id, _rewritten(odd_id), long_id, _rewritten(odd_id)]
    bedrock, _ = for_dialect(history, "bedrock")
    assert [i["tool_call_id"] for m in bedrock for i in m["content_items"]] == [
        _rewritten(long_id), _rewritten(odd_id), _rewritten(long_id), _rewritten(odd_id)]
    assert len(_rewritten(long_id)) == 29
    gemini, changed = for_dialect(history, "gemini")   # Gemini takes any id: byte for byte
    assert gemini == history and changed == {}


def test_a_tool_id_over_64_characters_is_rewritten_for_the_responses_api():
    """The Responses API refuses a call_id of more than 64 characters ("Invalid 'input[1].call_id': string too long.
    Expected a string with maximum length 64", a 400): a longer id from another provider is rewritten for it, on
    the call and its result; one of 64 goes as it came."""
    long_id, edge_id = "tool-" + "y" * 60, "z" * 64
    history = _two_calls(long_id, edge_id)
    responses, changed = for_dialect(history, "openai-responses")
    assert [i["tool_call_id"] for m in responses for i in m["content_items"]] == [
        _rewritten(long_id), edge_id, _rewritten(long_id), edge_id]
    assert changed == {"ids_rewritten": 2}
    body = AutoLLMClient("gpt-5.5", client_type="openai-responses", api_key="k").plan(
        [{"role": "user", "content_items": [{"type": "text", "text": "q"}]}] + history,
        {"tools": [{"name": "a"}, {"name": "b"}]}).body
    assert [item["call_id"] for item in body["input"][1:]] == [
        _rewritten(long_id), edge_id, _rewritten(long_id), edge_id]


def test_a_message_left_with_nothing_is_left_out():
    history = [{"role": "assistant", "content_items": [
        {"type": "thinking", "thinking": "x", "fidelity": {"thought_signature": "t"}}]}]
    assert for_dialect(history, "anthropic") == ([], {"thinking_dropped": 1, "messages_dropped": 1})


def test_a_foreign_compaction_item_is_dropped_with_a_warning(caplog):
    history = [{"role": "assistant", "content_items": [
        {"type": "compaction", "fidelity": {"format": "openai", "item": {"type": "compaction", "encrypted_content": "e"}}},
        {"type": "text", "text": "ok"}]}]
    with caplog.at_level(logging.WARNING, logger="agenthub"):
        out, changed = for_dialect(history, "anthropic")
    assert out == [{"role": "assistant", "content_items": [{"type": "text", "text": "ok"}]}]
    assert changed == {"compaction_dropped": 1}
    assert "compaction" in caplog.text
    assert for_dialect(history, "openai-responses") == (history, {})


def test_compaction_items_go_only_to_the_wire_that_wrote_them():
    openai_item = {"type": "compaction", "fidelity": {"format": "openai", "encrypted_content": "e"}}
    claude_item = {"type": "compaction", "fidelity": {"format": "anthropic", "content": "summary"}}
    unnamed = {"type": "compaction", "fidelity": {}}
    history = [{"role": "assistant", "content_items": [openai_item, claude_item, unnamed, {"type": "text", "text": "x"}]}]
    keep = {dialect: [i for i in for_dialect(history, dialect)[0][0]["content_items"] if i["type"] == "compaction"]
            for dialect in ("openai-responses", "anthropic", "gemini", "openai-chat", "bedrock")}
    assert keep == {"openai-responses": [openai_item], "anthropic": [claude_item], "gemini": [], "openai-chat": [],
                    "bedrock": []}


def test_an_openai_chat_servers_own_long_tool_id_goes_back_to_it_byte_for_byte():
    """Issue 29 D4: a vLLM-style 46-character id issued by an openai-chat server is sent back to that
    server as it came on the next turn (the 40-character rewrite is for ids from another protocol)."""
    import json
    from agenthub import AutoLLMClient
    from sse_server import Answer, SSEServer
    own = "chatcmpl-tool-" + "0123456789abcdef" * 2
    assert len(own) == 46
    call_chunk = {"choices": [{"index": 0, "delta": {"tool_calls": [
        {"index": 0, "id": own, "type": "function", "function": {"name": "f", "arguments": "{}"}}]}}]}
    end_chunk = {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}
    text_chunk = {"choices": [{"index": 0, "delta": {"content": "ok"}, "finish_reason": "stop"}]}

    def body(*chunks):
        return [("data: " + json.dumps(c) + "\n\n").encode() for c in chunks] + [b"data: [DONE]\n\n"]

    with SSEServer() as server:
        server.answers += [Answer(body(call_chunk, end_chunk)), Answer(body(text_chunk))]
        client = AutoLLMClient("m", client_type="openai-chat", base_url=server.url + "/v1", api_key="k-0123456789",
                               max_retries=0)
        list(client.streaming_response_stateful({"role": "user", "content_items": [{"type": "text", "text": "q"}]}))
        list(client.streaming_response_stateful({"role": "user", "content_items": [
            {"type": "tool_result", "tool_call_id": own, "text": "42"}]}))
        sent = server.requests[1]["body"]["messages"]
    assert [m.get("tool_calls", [{}])[0].get("id") for m in sent if m["role"] == "assistant"] == [own]
    assert [m["tool_call_id"] for m in sent if m["role"] == "tool"] == [own]
    history = client.get_history()
    for target in ("anthropic", "openai-responses"):   # for another protocol the id is still what that one takes
        out, _ = for_dialect(history, target)
        assert [i["tool_call_id"] for m in out for i in m["content_items"] if "tool_call_id" in i] == [own, own]


# -- a user text between a call and the message of its results: that run of user messages is one message ---------

ASKED = {"role": "user", "content_items": [{"type": "text", "text": "weather?"}]}
CALLED = {"role": "assistant", "content_items": [
    {"type": "tool_call", "name": "get_weather", "arguments": {"city": "Paris"}, "tool_call_id": "c1"}]}
TYPED = {"role": "user", "content_items": [{"type": "text", "text": "in Celsius"}], "cache_breakpoint": True}
RESULT = {"role": "user", "content_items": [{"type": "tool_result", "tool_call_id": "c1", "text": "18 C"}],
          "created_at": 5}


def test_a_text_message_between_a_call_and_its_results_is_joined_with_them():
    history = [ASKED, CALLED, TYPED, RESULT]
    before = copy.deepcopy(history)
    assert results_next_to_calls(history) == [ASKED, CALLED, {"role": "user", "content_items": [
        {"type": "text", "text": "in Celsius", "cache_breakpoint": True},
        {"type": "tool_result", "tool_call_id": "c1", "text": "18 C"}]}]
    assert history == before


@pytest.mark.parametrize("history", [
    [ASKED, CALLED, RESULT, TYPED],    # the results first: each wire sends it as it is
    [ASKED, TYPED],                    # no assistant message before
    [ASKED, CALLED, RESULT],
    [CALLED, TYPED, TYPED],            # no results
], ids=["results first", "no call", "one message", "no results"])
def test_messages_with_nothing_to_join_come_back_as_they_are(history):
    assert results_next_to_calls(history) is history


@pytest.mark.parametrize("client_type", ["anthropic", "gemini", "openai-chat"])
def test_a_stateful_turn_whose_history_has_a_text_before_the_results_sends_them_first(client_type):
    from sse_server import SSEServer

    with SSEServer() as server:
        client = AutoLLMClient("m", client_type=client_type, api_key="k", max_retries=0,
                               base_url=server.url + ("/v1" if client_type == "openai-chat" else ""))
        typed = {key: value for key, value in TYPED.items() if key != "cache_breakpoint"}  # (Gemini takes none)
        client.set_history([ASKED, CALLED, typed])
        try:
            list(client.streaming_response_stateful(RESULT, {"tools": [{"name": "get_weather"}]}))
        except Exception:
            pass  # (the local server's answer is no real one: only the request is looked at)
        (request,) = server.requests
    body = request["body"]
    sent = body.get("messages") or body.get("contents")
    if client_type == "anthropic":
        assert sent[2]["content"][0] == {"type": "tool_result", "tool_use_id": "c1", "content": "18 C"}
    elif client_type == "gemini":
        assert sent[2]["parts"] == [{"functionResponse": {"name": "get_weather", "id": "c1",
                                                          "response": {"result": "18 C"}}}]
    else:
        assert sent[2] == {"role": "tool", "tool_call_id": "c1", "content": "18 C"}


@pytest.mark.parametrize("client_type, model, error", [
    ("anthropic", "claude-sonnet-4-5",
     "anthropic: cache_breakpoint is set on messages[3]['content_items'][1] (an empty text), which sends no block "
     "the Anthropic API can mark (mark another item)"),
    ("openai-chat", "gpt-5.6",
     "openai-chat: cache_breakpoint is set on assistant messages[4]: OpenAI takes breakpoints on input content "
     "(user text, images, files, tool results): mark the user item after it")])
def test_an_error_after_a_join_names_the_messages_as_given(client_type, model, error):
    """A run of user messages sent as one (a text between a call and its results): an error about an item names
    its message and position in the messages as the caller gave them, not in the joined copy."""
    empty = {"type": "text", "text": "", "cache_breakpoint": True}
    history = [ASKED, CALLED, {"role": "user", "content_items": [{"type": "text", "text": "in Celsius"}]},
               {"role": "user", "content_items": [RESULT["content_items"][0], empty]},
               {"role": "assistant", "content_items": [{"type": "text", "text": "18"}], "cache_breakpoint": True},
               {"role": "user", "content_items": [{"type": "text", "text": "thanks"}]}]
    if client_type == "anthropic":
        del history[4]["cache_breakpoint"]
    else:
        history[3]["content_items"] = history[3]["content_items"][:1]
    client = AutoLLMClient(model, client_type=client_type, api_key="k", base_url="http://127.0.0.1:9/v1")
    with pytest.raises(AgentHubError) as caught:
        client.plan(history, {"tools": [{"name": "get_weather"}]})
    assert str(caught.value) == error


def _kimi_turns(count):
    """A conversation on a server whose tool_call ids restart each turn (Kimi's "functions.<name>:<n>")."""
    history = [{"role": "user", "content_items": [{"type": "text", "text": "weather?"}]}]
    for turn in range(count):
        history += [{"role": "assistant", "content_items": [
                        {"type": "tool_call", "name": "get_weather", "arguments": {"day": turn},
                         "tool_call_id": "functions.get_weather:0"}]},
                    {"role": "user", "content_items": [
                        {"type": "tool_result", "tool_call_id": "functions.get_weather:0", "text": str(turn)}]}]
    return history


def _unique(old, occurrence):
    return "call_" + hashlib.sha256("{}\x00{}".format(old, occurrence).encode()).hexdigest()[:24]


@pytest.mark.parametrize("dialect", ["anthropic", "bedrock", "openai-responses", "gemini-interactions"])
def test_a_tool_id_an_earlier_call_took_is_rewritten_where_ids_must_be_unique(dialect):
    """Claude refuses a request whose tool_use ids repeat ("messages.3.content.0: `tool_use` ids must be unique", a
    400), the Responses API one whose call_ids do ("Duplicate function_call_output for call_id"); the Interactions
    API's input is one list of steps where a function_result names its function_call by call_id alone: a call whose
    id an earlier call of the history took (a server that numbers its calls from 0 each turn) gets an id of its own
    there, and so do the results after it; the first call keeps its id (or its rewrite)."""
    history = _kimi_turns(3)
    before = copy.deepcopy(history)
    out, changed = for_dialect(history, dialect)
    first = "functions.get_weather:0"
    taken = dialect in ("openai-responses", "gemini-interactions")  # (ids Claude's [A-Za-z0-9_-] refuses, they take)
    if not taken:  # (outside Claude's [A-Za-z0-9_-]: rewritten there the first time too)
        first = _rewritten(first)
    ids = [first, first, _unique("functions.get_weather:0", 2), _unique("functions.get_weather:0", 2),
           _unique("functions.get_weather:0", 3), _unique("functions.get_weather:0", 3)]
    assert [i["tool_call_id"] for m in out[1:] for i in m["content_items"]] == ids
    assert changed == {"ids_rewritten": 4 if taken else 6}
    assert history == before
    plain = [history[0]] + [dict(m, content_items=[dict(i, tool_call_id="c0") for i in m["content_items"]])
                            for m in history[1:]]  # an id the rule takes
    out, changed = for_dialect(plain, dialect)
    assert [i["tool_call_id"] for m in out[1:] for i in m["content_items"]] == [
        "c0", "c0", _unique("c0", 2), _unique("c0", 2), _unique("c0", 3), _unique("c0", 3)]
    assert changed == {"ids_rewritten": 4}
    for other in ("openai-chat", "gemini"):  # (the wires that take an id again: as it came)
        assert for_dialect(plain, other) == (plain, {})


def test_repeated_tool_ids_reach_claude_unique_from_the_previous_calls_conversion_too():
    client = AutoLLMClient("claude-sonnet-4-5", client_type="anthropic", api_key="k", base_url="http://127.0.0.1:9")
    config = {"tools": [{"name": "get_weather"}]}
    history = _kimi_turns(1)
    client.plan(history, config)
    history += _kimi_turns(2)[3:]
    body = client.plan(history, config).body
    ids = [block.get("id") or block.get("tool_use_id") for message in body["messages"][1:]
           for block in message["content"]]
    assert ids == [_rewritten("functions.get_weather:0")] * 2 + [_unique("functions.get_weather:0", 2)] * 2
    assert body == AutoLLMClient("claude-sonnet-4-5", client_type="anthropic", api_key="k",
                                 base_url="http://127.0.0.1:9").plan(copy.deepcopy(history), config).body


# -- thinking no protocol signed (Gemini's thought parts: the signature rides the text) reaches Claude ----------

GEMINI_THOUGHTS = [
    {"role": "user", "content_items": [{"type": "text", "text": "How do I cross the street?"}]},
    {"role": "assistant", "content_items": [
        {"type": "thinking", "thinking": "**Safety first**\n\nLook both ways."},
        {"type": "text", "text": "Look left, right, then left again.", "fidelity": {"thought_signature": "CiIB0e2K"}}]},
    {"role": "user", "content_items": [{"type": "text", "text": "Thanks"}]},
]
VERTEX = "https://aiplatform.googleapis.com/v1/projects/vtx-proj-123/locations/global"


@pytest.mark.parametrize("client_type,base_url", [("anthropic", None), ("vertex", VERTEX),
                                                  ("azure-anthropic", "https://res.services.ai.azure.com/anthropic")])
def test_unsigned_thinking_is_not_sent_to_claude_on_any_of_its_clouds(client_type, base_url):
    """Claude checks a thinking block's signature wherever it runs (the Messages API's thinking block requires
    one: "messages.1.content.0.thinking.signature: Field required", a 400 that Vertex AI gives as well): thinking
    no protocol signed is left out on Anthropic's API, Microsoft Foundry and Vertex AI alike."""
    client = AutoLLMClient("claude-sonnet-4-6", client_type=client_type, base_url=base_url, api_key="ya29.tok")
    assert client.plan(GEMINI_THOUGHTS).body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "How do I cross the street?"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Look left, right, then left again."}]},
        {"role": "user", "content": [{"type": "text", "text": "Thanks"}]},
    ]


def test_unsigned_thinking_still_goes_to_an_anthropic_compatible_gateway():
    """A gateway serving other models through the Messages API (no row, or Z.AI's) takes unsigned reasoning."""
    client = AutoLLMClient("glm-5.1", client_type="anthropic", base_url="https://gw.example", api_key="k")
    assert client.plan(GEMINI_THOUGHTS).body["messages"][1]["content"] == [
        {"type": "thinking", "thinking": "**Safety first**\n\nLook both ways."},
        {"type": "text", "text": "Look left, right, then left again."}]
