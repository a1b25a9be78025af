"""Prompt caching per wire (issue 38 item 2): ``prompt_caching`` (ENABLE, DISABLE, ENHANCE) and agenthub's
cache-breakpoint mark ``cache_breakpoint: True`` on a content item or a message (= on its last item).

Wire facts pinned here: Anthropic ``cache_control: {"type": "ephemeral"(, "ttl": "1h")}`` on a block, at most
4 breakpoints a request, the automatic top-level one counted; Bedrock Converse ``{"cachePoint": {"type":
"default"(, "ttl": "1h")}}`` after a block, at most 4 a request; OpenAI GPT-5.6 and later (openai SDK
``PromptCacheBreakpoint``, ``PromptCacheOptions``): ``prompt_cache_breakpoint: {"mode": "explicit"}`` on an
input content part, ``prompt_cache_options`` ``mode`` implicit / explicit (explicit: no implicit breakpoint,
only the marked ones cache) and ``ttl`` (Responses: 30m, 12h; Chat Completions: 30m only), never beside
``prompt_cache_retention``, which is the earlier models' (24h); the server writes the latest four breakpoints
a request and considers the latest 80 of a conversation.  Gemini has no breakpoint: a mark is refused.
"""

import json

import pytest

from agenthub import AutoLLMClient
from agenthub.errors import ConfigError, UnsupportedParameterError

AWS = {"AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY": "secret", "AWS_REGION": "us-east-1"}


def text(value, mark=False):
    item = {"type": "text", "text": value}
    if mark:
        item["cache_breakpoint"] = True
    return item


def conversation(first_mark=True, message_mark=True):
    """A user document marked, a tool call, and a tool result whose message is marked."""
    return [
        {"role": "user", "content_items": [text("the long document", first_mark), text("question")]},
        {"role": "assistant", "content_items": [
            {"type": "tool_call", "name": "look", "arguments": {"q": 1}, "tool_call_id": "call_1"}]},
        dict({"role": "user", "content_items": [
            {"type": "tool_result", "text": "found", "tool_call_id": "call_1"}]},
            **({"cache_breakpoint": True} if message_mark else {})),
    ]


def refused(client, messages, config=None):
    with pytest.raises(UnsupportedParameterError) as info:
        client.plan(messages, config or {})
    return info.value


# -- Anthropic ---------------------------------------------------------------------------------------

def claude(**kwargs):
    return AutoLLMClient("claude-sonnet-4-6", api_key="sk-ant-k", client_type="anthropic", **kwargs)


@pytest.mark.parametrize("caching,mark,top", [
    ("enable", {"type": "ephemeral"}, {"type": "ephemeral"}),
    ("enhance", {"type": "ephemeral", "ttl": "1h"}, {"type": "ephemeral", "ttl": "1h"}),
    ("disable", {"type": "ephemeral"}, None),
])
def test_anthropic_marks_become_cache_control(caching, mark, top):
    body = claude().plan(conversation(), {"prompt_caching": caching}).body
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "the long document", "cache_control": mark},
                                     {"type": "text", "text": "question"}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "call_1", "name": "look", "input": {"q": 1}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_1", "content": "found",
                                      "cache_control": mark}]},
    ]
    assert body.get("cache_control") == top


def test_anthropic_takes_four_breakpoints_the_automatic_one_included():
    four = [{"role": "user", "content_items": [text(str(i), True) for i in range(4)]}]
    error = refused(claude(), four)
    assert (error.client, error.parameter) == ("anthropic", "cache_breakpoint")
    assert str(error) == ("anthropic: cache_breakpoint is set on 4 items; the Anthropic API takes at most 4 cache "
                          "breakpoints a request and the automatic one of prompt_caching ENABLE takes one: remove "
                          "some, or set prompt_caching DISABLE to place 4 of your own")
    body = claude().plan(four, {"prompt_caching": "disable"}).body
    assert [block.get("cache_control") for block in body["messages"][0]["content"]] == [{"type": "ephemeral"}] * 4
    five = [{"role": "user", "content_items": [text(str(i), True) for i in range(5)]}]
    assert str(refused(claude(), five, {"prompt_caching": "disable"})) == (
        "anthropic: cache_breakpoint is set on 5 items; the Anthropic API takes at most 4 cache breakpoints a "
        "request: remove some")


def test_anthropic_refuses_a_mark_on_thinking_and_on_an_item_that_sends_nothing():
    thinking = [{"role": "user", "content_items": [text("q")]},
                {"role": "assistant", "content_items": [
                    {"type": "thinking", "thinking": "hm", "fidelity": {"signature": "sig"}, "cache_breakpoint": True},
                    text("a")]},
                {"role": "user", "content_items": [text("more")]}]
    assert str(refused(claude(), thinking)) == (
        "anthropic: cache_breakpoint is set on messages[1]['content_items'][0], a thinking item: the Anthropic API "
        "caches up to text, tool calls and user blocks, not thinking (mark another item)")
    empty = [{"role": "user", "content_items": [text("q"), text("", True)]}]
    assert str(refused(claude(), empty)) == (
        "anthropic: cache_breakpoint is set on messages[0]['content_items'][1] (an empty text), which sends no block "
        "the Anthropic API can mark (mark another item)")


def test_vertex_claude_takes_marks_and_enhance_rides_them():
    client = AutoLLMClient("claude-sonnet-4-6", api_key="ya29.t", client_type="vertex",
                           base_url="https://aiplatform.googleapis.com/v1/projects/vtx-proj-123/locations/global")
    body = client.plan(conversation(message_mark=False), {"prompt_caching": "enhance"}).body
    assert body["messages"][0]["content"][0]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    assert "cache_control" not in body  # Vertex AI: no top-level automatic caching
    assert str(refused(client, conversation(False, False), {"prompt_caching": "enhance"})) == (
        "vertex-anthropic: prompt_caching ENHANCE needs automatic caching, which this endpoint does not take (mark "
        "cache breakpoints on items: they take the 1 h TTL)")


# -- Bedrock -----------------------------------------------------------------------------------------

@pytest.fixture
def aws(monkeypatch):
    for name, value in AWS.items():
        monkeypatch.setenv(name, value)
    for name in ("AWS_SESSION_TOKEN", "AWS_BEARER_TOKEN_BEDROCK", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)


def bedrock(model="us.anthropic.claude-sonnet-4-5-20250929-v1:0"):
    return AutoLLMClient(model, client_type="bedrock")


def test_bedrock_marks_become_cache_points_in_place_of_the_automatic_one(aws):
    body = bedrock().plan(conversation(), {"system_prompt": "Be brief."}).body
    point = {"cachePoint": {"type": "default"}}
    assert body["system"] == [{"text": "Be brief."}, point]
    assert body["messages"] == [
        {"role": "user", "content": [{"text": "the long document"}, point, {"text": "question"}]},
        {"role": "assistant", "content": [{"toolUse": {"toolUseId": "call_1", "name": "look", "input": {"q": 1}}}]},
        {"role": "user", "content": [{"toolResult": {"toolUseId": "call_1", "content": [{"text": "found"}]}}, point]},
    ]
    body = bedrock().plan(conversation(), {"prompt_caching": "enhance"}).body
    assert body["messages"][0]["content"][1] == {"cachePoint": {"type": "default", "ttl": "1h"}}
    body = bedrock().plan(conversation(), {"prompt_caching": "disable", "system_prompt": "S"}).body
    assert body["system"] == [{"text": "S"}] and body["messages"][2]["content"][-1] == point


def test_bedrock_takes_four_cache_points_and_refuses_models_without_caching(aws):
    tools = [{"name": "look"}]
    error = refused(bedrock(), conversation() + [{"role": "assistant", "content_items": [text("ok", True)]},
                                                 {"role": "user", "content_items": [text("next")]}],
                    {"system_prompt": "S", "tools": tools})
    assert str(error) == ("bedrock: cache_breakpoint is set on 3 items; Bedrock takes at most 4 cache points a "
                          "request and prompt_caching ENABLE adds 2 (after the system prompt and the tools): remove "
                          "some, or set prompt_caching DISABLE to place 4 of your own")
    assert str(refused(bedrock("meta.llama3-70b-instruct-v1:0"), conversation())) == (
        "bedrock: cache_breakpoint cannot be sent to 'meta.llama3-70b-instruct-v1:0': it has no prompt caching on "
        "Bedrock (Claude 3.5 Haiku, 3.7 Sonnet, Claude 4 and later, Amazon Nova have it; remove the marks)")


# -- OpenAI ------------------------------------------------------------------------------------------

BREAKPOINT = {"mode": "explicit"}


def openai(model="gpt-5.6", client_type="openai-responses"):
    return AutoLLMClient(model, api_key="sk-test", client_type=client_type)


@pytest.mark.parametrize("caching,options", [("enable", None), ("disable", {"mode": "explicit"}),
                                             ("enhance", {"ttl": "12h"})])
def test_responses_gpt_5_6_marks_and_prompt_cache_options(caching, options):
    body = openai().plan(conversation(), {"prompt_caching": caching}).body
    assert body["input"] == [
        {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "the long document", "prompt_cache_breakpoint": BREAKPOINT},
            {"type": "input_text", "text": "question"}]},
        {"type": "function_call", "call_id": "call_1", "name": "look", "arguments": '{"q":1}'},
        {"type": "function_call_output", "call_id": "call_1", "output": [
            {"type": "input_text", "text": "found", "prompt_cache_breakpoint": BREAKPOINT}]},
    ]
    assert body.get("prompt_cache_options") == options
    assert "prompt_cache_retention" not in body  # never both


def test_responses_before_gpt_5_6_keeps_prompt_cache_retention_and_refuses_marks():
    body = openai("gpt-5.5").plan(conversation(False, False), {"prompt_caching": "enhance"}).body
    assert body["prompt_cache_retention"] == "24h" and "prompt_cache_options" not in body
    error = refused(openai("gpt-5.5"), conversation())
    assert (error.client, error.parameter) == ("openai-responses", "cache_breakpoint")
    assert str(error) == ("openai-responses: cache_breakpoint cannot be sent to 'gpt-5.5': explicit cache breakpoints "
                          "(prompt_cache_breakpoint) are GPT-5.6's and later models' on the Responses API (remove the "
                          "marks)")
    assert str(refused(openai("gpt-5.5"), conversation(False, False), {"prompt_caching": "disable"})) == (
        "openai-responses: prompt_caching cannot be disabled: the server caches prompts by itself (GPT-5.6 and later "
        "can: prompt_cache_options mode explicit)")


def test_chat_gpt_5_6_marks_options_and_enhance_refused():
    client = openai(client_type="openai-chat")
    body = client.plan(conversation(), {"prompt_caching": "disable"}).body
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "the long document", "prompt_cache_breakpoint": BREAKPOINT},
                                     {"type": "text", "text": "question"}]},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "look", "arguments": '{"q":1}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": [
            {"type": "text", "text": "found", "prompt_cache_breakpoint": BREAKPOINT}]},
    ]
    assert body["prompt_cache_options"] == {"mode": "explicit"} and "prompt_cache_retention" not in body
    assert "prompt_cache_options" not in client.plan(conversation(), {}).body
    one = [{"role": "user", "content_items": [text("only", True)]}]  # a marked lone text stays a part
    assert client.plan(one).body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "only", "prompt_cache_breakpoint": BREAKPOINT}]}]
    assert str(refused(client, conversation(), {"prompt_caching": "enhance"})) == (
        "openai-chat: prompt_caching ENHANCE cannot be sent to 'gpt-5.6' over Chat Completions: its "
        "prompt_cache_options take only the 30m TTL, the default (use ENABLE, or the Responses API, whose ENHANCE "
        "is 12h)")


@pytest.mark.parametrize("client_type", ["openai-responses", "openai-chat"])
def test_openai_refuses_marks_on_assistant_items_and_past_80(client_type):
    messages = conversation(False, False)
    messages[1] = dict(messages[1], cache_breakpoint=True)
    assert str(refused(openai(client_type=client_type), messages)) == (
        "{}: cache_breakpoint is set on assistant messages[1]: OpenAI takes breakpoints on input content (user text, "
        "images, files, tool results): mark the user item after it".format(client_type))
    many = [{"role": "user", "content_items": [text(str(i), True) for i in range(81)]}]
    assert str(refused(openai(client_type=client_type), many)) == (
        "{}: cache_breakpoint is set on 81 items; OpenAI considers at most the latest 80 breakpoints of a "
        "conversation: remove the older marks".format(client_type))


# -- Gemini and the mark itself ----------------------------------------------------------------------

@pytest.mark.parametrize("client_type,wire", [("gemini", "Gemini"), ("gemini-interactions",
                                                                      "the Gemini Interactions API")])
def test_gemini_refuses_marks_before_sending(client_type, wire):
    error = refused(AutoLLMClient("gemini-3.5-flash", api_key="gm-k", client_type=client_type), conversation())
    assert (error.client, error.parameter) == (client_type, "cache_breakpoint")
    assert str(error) == ("{}: cache_breakpoint cannot be sent: {} has no cache breakpoints (it caches prompt "
                          "prefixes by itself; remove the marks)".format(client_type, wire))


@pytest.mark.parametrize("message,words", [
    ({"role": "user", "content_items": [dict(text("x"), cache_breakpoint="yes")]},
     "messages[0]['content_items'][0]['cache_breakpoint'] must be a bool"),
    ({"role": "user", "content_items": [text("x")], "cache_breakpoint": 1},
     "messages[0]['cache_breakpoint'] must be a bool"),
    ({"role": "user", "content_items": [], "cache_breakpoint": True},
     "messages[0]['cache_breakpoint'] marks a message with no content items"),
])
def test_a_bad_mark_is_a_config_error(message, words):
    with pytest.raises(ConfigError) as info:
        claude().plan([message])
    assert words in str(info.value)


def test_unmarked_requests_are_unchanged():
    body = claude().plan(conversation(False, False)).body
    assert "cache_control" not in json.dumps(body["messages"]) and body["cache_control"] == {"type": "ephemeral"}
    assert "prompt_cache_breakpoint" not in json.dumps(openai().plan(conversation(False, False)).body)


def test_azure_hosts_carry_the_marks_of_their_dialects():
    foundry = AutoLLMClient("claude-sonnet-4-6", api_key="foundry-key", base_url="contoso-ai",
                            client_type="azure-anthropic")
    body = foundry.plan(conversation(message_mark=False)).body
    assert body["messages"][0]["content"][0]["cache_control"] == {"type": "ephemeral"}
    assert body["cache_control"] == {"type": "ephemeral"}
    azure = AutoLLMClient("gpt-5.6", api_key="az-key", base_url="https://contoso.openai.azure.com/openai/v1",
                          client_type="azure-responses")
    body = azure.plan(conversation(message_mark=False), {"prompt_caching": "enhance"}).body
    assert body["input"][0]["content"][0]["prompt_cache_breakpoint"] == BREAKPOINT
    assert body["prompt_cache_options"] == {"ttl": "12h"} and "prompt_cache_retention" not in body


@pytest.mark.parametrize("model", ["gpt-5.5", "gpt-4.1-mini", "gpt-5"])
def test_chat_enhance_before_gpt_5_6_is_24h_retention(model):
    body = openai(model, "openai-chat").plan(conversation(False, False), {"prompt_caching": "enhance"}).body
    assert body["prompt_cache_retention"] == "24h" and "prompt_cache_options" not in body


def test_chat_enhance_elsewhere_still_raises():
    client = AutoLLMClient("deepseek-chat", api_key="ds-k")
    assert str(refused(client, conversation(False, False), {"prompt_caching": "enhance"})) == (
        "openai-chat: prompt_caching can only be ENABLE: the server caches prompts by itself")
