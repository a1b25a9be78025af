"""The routing table: names -> protocol, endpoint, key; vendor quirks; the credential rule; thinking clamps."""

import re
import importlib

import pytest

from agenthub import AutoLLMClient, ConfigError, UnsupportedParameterError, list_models
from agenthub import registry
from agenthub.providers._common import Endpoint
from agenthub.registry import LEVELS, ROUTES, Route, clamp_level, resolve
from agenthub.validate import check_config

#: the tool_choice values a row's ``tool_choice`` quirk may list ("list": a list of tool names)
TOOL_CHOICES = ("auto", "none", "required", "list")

USER = [{"role": "user", "content_items": [{"type": "text", "text": "hi"}]}]
TOOLS = [{"name": "get_weather", "parameters": {"type": "object", "properties": {}}},
         {"name": "get_time"}]
#: a key for every vendor variable, each with its own value
ENV = {
    "OPENAI_API_KEY": "sk-openai-0001", "ANTHROPIC_API_KEY": "sk-ant-0002", "GEMINI_API_KEY": "gm-0003",
    "DEEPSEEK_API_KEY": "sk-ds-0004", "ZAI_API_KEY": "zai-0005", "MOONSHOT_API_KEY": "sk-moon-0006",
    "DASHSCOPE_API_KEY": "sk-dash-0007", "MINIMAX_API_KEY": "mm-0008", "OPENROUTER_API_KEY": "sk-or-0009",
    "AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "AKIA0010", "AWS_SECRET_ACCESS_KEY": "aws-secret-0011",
}


def _provider(client_type, quirks):
    from agenthub import hosts

    return hosts.client_type(client_type).protocol(bool(quirks.get("embeddings")))


def _body(model, config, client_type=None, base_url=None, api_key=None, environ=ENV, messages=USER):
    kind, url, key, quirks = resolve(model, client_type, base_url, api_key, environ)
    module = _provider(kind, quirks)
    return module.build_request(Endpoint(kind, url, key, None, quirks), model, messages, check_config(config)).body


# -- routing by name -----------------------------------------------------------------------------

@pytest.mark.parametrize("model, client_type, base_url, key", [
    ("gpt-5.5", "openai-responses", "https://api.openai.com/v1", "sk-openai-0001"),
    ("gpt-4o-mini", "openai-responses", "https://api.openai.com/v1", "sk-openai-0001"),
    ("o1", "openai-responses", "https://api.openai.com/v1", "sk-openai-0001"),
    ("o3-mini", "openai-responses", "https://api.openai.com/v1", "sk-openai-0001"),
    ("o4-mini", "openai-responses", "https://api.openai.com/v1", "sk-openai-0001"),
    ("chatgpt-4o-latest", "openai-responses", "https://api.openai.com/v1", "sk-openai-0001"),
    ("text-embedding-3-small", "openai-chat", "https://api.openai.com/v1", "sk-openai-0001"),
    ("claude-sonnet-4-6", "anthropic", "https://api.anthropic.com", "sk-ant-0002"),
    ("claude-opus-9-1", "anthropic", "https://api.anthropic.com", "sk-ant-0002"),
    ("gemini-3.5-flash", "gemini", "https://generativelanguage.googleapis.com", "gm-0003"),
    ("gemini-embedding-001", "gemini", "https://generativelanguage.googleapis.com", "gm-0003"),
    ("text-embedding-004", "gemini", "https://generativelanguage.googleapis.com", "gm-0003"),
    ("deepseek-v4-flash", "openai-chat", "https://api.deepseek.com", "sk-ds-0004"),
    ("deepseek-v5-pro", "openai-chat", "https://api.deepseek.com", "sk-ds-0004"),
    ("glm-5.1", "openai-chat", "https://api.z.ai/api/paas/v4", "zai-0005"),
    ("GLM-5.3", "openai-chat", "https://api.z.ai/api/paas/v4", "zai-0005"),
    ("kimi-k2.6", "openai-chat", "https://api.moonshot.ai/v1", "sk-moon-0006"),
    ("kimi-k3", "openai-chat", "https://api.moonshot.ai/v1", "sk-moon-0006"),
    ("qwen3-max", "openai-chat", "https://dashscope-intl.aliyuncs.com/compatible-mode/v1", "sk-dash-0007"),
    ("qwq-plus", "openai-chat", "https://dashscope-intl.aliyuncs.com/compatible-mode/v1", "sk-dash-0007"),
    ("MiniMax-M3", "openai-chat", "https://api.minimax.io/v1", "mm-0008"),
    ("deepseek/deepseek-v4-flash", "openai-chat", "https://openrouter.ai/api/v1", "sk-or-0009"),
    ("qwen/qwen3.6-35b-a3b", "openai-chat", "https://openrouter.ai/api/v1", "sk-or-0009"),
    ("anthropic/claude-sonnet-4.6", "openai-chat", "https://openrouter.ai/api/v1", "sk-or-0009"),
])
def test_routing_by_name(model, client_type, base_url, key):
    assert resolve(model, environ=ENV)[:3] == (client_type, base_url, key)


@pytest.mark.parametrize("model, embeddings", [
    ("text-embedding-3-large", True), ("gemini-embedding-2", True), ("gemini-3.5-flash", False),
    ("qwen/qwen3-embedding-4b", True), ("gpt-5.5", False),
])
def test_embedding_models_are_marked(model, embeddings):
    assert bool(resolve(model, environ=ENV)[3].get("embeddings")) is embeddings


def test_every_example_routes_to_its_row():
    for route in ROUTES:
        for example in route.examples:
            if route.pattern is not None:
                assert registry.route_for(example) is route, example
                kind, url, _, _ = resolve(example, environ=ENV, api_key=None if route.key_env else "k")
            else:
                kind, url, _, _ = resolve(example, route.presets[0], environ=ENV if route.key_env else {})
            assert (kind, url) == (route.client_type, route.base_url.replace("{region}", "us-east-1")), example


def test_unknown_name_says_how_to_pass_client_type_and_base_url():
    with pytest.raises(ConfigError) as info:
        resolve("my-finetune", environ=ENV)
    message = str(info.value)
    from agenthub import hosts

    assert message.startswith("cannot route model 'my-finetune' by its name: pass client_type (a protocol: "
                              "{}; or a preset: ".format(", ".join(sorted(hosts.CLIENT_TYPES))))
    assert "anthropic, azure, azure-anthropic, azure-responses, bedrock, gemini, gemini-interactions, openai-chat, openai-responses, vertex" \
        in message
    assert "AutoLLMClient('my-finetune', client_type='openai-chat', base_url='http://127.0.0.1:8000/v1')" in message


def test_unknown_client_type_lists_the_known_ones():
    with pytest.raises(ConfigError, match=r"unknown client_type 'acme'; protocols: agenthub, anthropic, azure, "
                                          r"azure-anthropic, azure-responses, bedrock, gemini, gemini-interactions, openai-chat, "
                                          r"openai-responses, "):
        resolve("x", "acme", environ={})
    with pytest.raises(ConfigError, match=r"; aliases: ant-messages, "):
        resolve("x", "acme", environ={})


@pytest.mark.parametrize("alias, protocol", [("openai", "openai-chat"), ("ant-messages", "anthropic"),
                                             ("google-genai", "gemini"), ("openai-embedding", "openai-chat")])
def test_agenthub_aliases(alias, protocol):
    assert resolve("m", alias, "http://127.0.0.1:9/v1", environ={})[0] == protocol


# -- local servers -------------------------------------------------------------------------------

@pytest.mark.parametrize("preset, base_url", [
    ("vllm", "http://127.0.0.1:8000/v1"), ("ollama", "http://127.0.0.1:11434/v1"),
    ("lmstudio", "http://127.0.0.1:1234/v1"), ("lm-studio", "http://127.0.0.1:1234/v1"),
    ("llama.cpp", "http://127.0.0.1:8080/v1"), ("llamacpp", "http://127.0.0.1:8080/v1"),
])
def test_local_servers_need_no_key(preset, base_url):
    assert resolve("Qwen/Qwen3-8B", preset, environ=ENV)[:3] == ("openai-chat", base_url, None)


@pytest.mark.parametrize("base_url", ["http://localhost:8000/v1", "http://127.0.0.1:8000/v1",
                                      "http://127.8.9.10:11434/v1", "http://[::1]:1234/v1", "https://localhost/"])
def test_loopback_base_url_needs_no_key(base_url):
    assert resolve("anything", "openai-chat", base_url, environ=ENV)[1:3] == (base_url, None)


def test_local_server_keys_come_from_their_own_variables():
    assert resolve("m", "vllm", environ={"VLLM_API_KEY": "vk-1"})[2] == "vk-1"
    assert resolve("m", "llama.cpp", environ={"LLAMA_API_KEY": "lk-1"})[2] == "lk-1"
    assert resolve("m", "ollama", environ=ENV)[2] is None  # OPENAI_API_KEY never goes there


def test_preset_quirks_follow_a_named_row_to_another_port():
    quirks = resolve("Qwen/Qwen3-8B", "vllm", "http://127.0.0.1:9000/v1", environ={})[3]
    assert quirks["thinking"]["none"] == {"chat_template_kwargs": {"enable_thinking": False}}


def test_vendor_preset_serves_any_model_name_at_the_vendor():
    assert resolve("my-deployment", "deepseek", environ=ENV)[:3] == (
        "openai-chat", "https://api.deepseek.com", "sk-ds-0004")
    quirks = resolve("kimi-k3", "moonshot", environ=ENV)[3]  # the model's own row wins inside the vendor
    assert quirks["thinking"]["none"] == {"reasoning_effort": "low"}


# -- credentials ---------------------------------------------------------------------------------

def test_env_key_goes_only_to_its_own_endpoint():
    with pytest.raises(ConfigError) as info:
        resolve("deepseek-v4-flash", environ={"OPENAI_API_KEY": "sk-openai-0001"})
    assert str(info.value) == "no API key for model 'deepseek-v4-flash' at api.deepseek.com: pass api_key= or set " \
                              "DEEPSEEK_API_KEY"


def test_base_url_without_api_key_is_refused_unless_loopback():
    with pytest.raises(ConfigError) as info:
        resolve("gpt-5.5", base_url="https://gateway.example.com/v1", environ=ENV)
    assert str(info.value) == ("api_key is required with base_url 'gateway.example.com': keys from the environment "
                               "are only sent to their own provider's endpoint (a loopback base_url needs none)")
    assert "sk-openai-0001" not in str(info.value)
    assert resolve("gpt-5.5", base_url="https://gateway.example.com/v1", api_key="gw-1", environ=ENV)[2] == "gw-1"


def test_base_url_variable_names_where_the_key_may_go():
    env = {"OPENAI_API_KEY": "sk-openai-0001", "OPENAI_BASE_URL": "https://proxy.example.com/v1"}
    assert resolve("gpt-5.5", environ=env)[1:3] == ("https://proxy.example.com/v1", "sk-openai-0001")
    with pytest.raises(ConfigError, match="DEEPSEEK_BASE_URL must be an http"):
        resolve("deepseek-v4-flash", environ={"DEEPSEEK_API_KEY": "k", "DEEPSEEK_BASE_URL": "api.deepseek.com"})


def test_second_key_variable_is_read():
    assert resolve("gemini-3.5-flash", environ={"GOOGLE_API_KEY": "g-2"})[2] == "g-2"


def test_key_never_in_repr():
    client = AutoLLMClient("deepseek-v4-flash", api_key="sk-very-secret-123")
    assert "sk-very-secret" not in repr(client)
    assert "sk-very-secret" not in repr(client._endpoint)
    assert repr(client) == ("AutoLLMClient(model='deepseek-v4-flash', client_type='openai-chat', "
                            "base_url='https://api.deepseek.com')")


@pytest.mark.parametrize("bad", ["", 42])
def test_bad_api_key_value(bad):
    with pytest.raises(ConfigError):
        resolve("gpt-5.5", api_key=bad, environ={})


@pytest.mark.parametrize("bad", ["api.openai.com", "ftp://x", 3])
def test_bad_base_url(bad):
    with pytest.raises(ConfigError, match="base_url must be an http"):
        resolve("gpt-5.5", base_url=bad, api_key="k", environ={})


# -- which quirks apply where --------------------------------------------------------------------

def test_vendor_quirks_stay_at_the_vendor():
    assert resolve("deepseek-v4-flash", "openai-chat", "http://127.0.0.1:8000/v1", environ={})[3] == {}
    assert resolve("deepseek-v4-flash", "deepseek", "http://127.0.0.1:8000/v1", environ={})[3]["reasoning_field"] \
        == "reasoning_content"
    own = resolve("glm-5.1", None, "https://api.z.ai/api/coding/paas/v4", "k", environ={})[3]
    assert own["tool_choice"] == ("auto",)
    china = resolve("kimi-k2.6", None, "https://api.moonshot.cn/v1", "k", environ={})[3]
    assert china["echo_reasoning_on_tool_turns"] is True


def test_model_quirks_apply_at_any_endpoint():
    quirks = resolve("text-embedding-3-small", None, "https://azure.example.com/v1", "k", environ={})[3]
    assert quirks == {"embeddings": True}


# -- thinking: clamped, never raised --------------------------------------------------------------

@pytest.mark.parametrize("level, supported, expected", [
    ("none", ("low", "high", "xhigh"), "low"),
    ("medium", ("low", "high", "xhigh"), "high"),
    ("xhigh", ("none", "low", "medium", "high"), "high"),
    ("medium", ("none", "xhigh"), "xhigh"),
    ("low", ("none", "low"), "low"),
    ("high", ("none",), "none"),
])
def test_clamp_level(level, supported, expected):
    assert clamp_level(level, supported) == expected


def _every_row():
    for route in ROUTES:
        model = route.examples[0]
        yield pytest.param(route, model, id="{}:{}".format(route.presets[0] if route.presets else route.label, model))


@pytest.mark.parametrize("route, model", list(_every_row()))
@pytest.mark.parametrize("level", LEVELS)
def test_thinking_level_never_raises(route, model, level):
    kind, url, key, quirks = resolve(model, route.presets[0] if route.pattern is None else None, None,
                                     "k", environ={"AWS_REGION": "us-east-1"})
    module = _provider(kind, quirks)
    config = check_config({"thinking_level": level, "max_tokens": 64})
    if quirks.get("embeddings"):
        config = {}
    request = module.build_request(Endpoint(kind, url, key, None, quirks), model, USER, config)
    thinking = route.quirks.get("thinking")
    if thinking:
        supported = [lvl for lvl in LEVELS if lvl in thinking]
        for field, value in thinking[clamp_level(level, supported)].items():
            assert request.body[field] == value


@pytest.mark.parametrize("model, client_type, level, expected", [
    ("deepseek-v4-flash", None, "none", {"thinking": {"type": "disabled"}}),
    ("deepseek-v4-flash", None, "medium", {"thinking": {"type": "enabled"}, "reasoning_effort": "high"}),
    ("deepseek-v4-flash", None, "xhigh", {"thinking": {"type": "enabled"}, "reasoning_effort": "max"}),
    ("glm-5.1", None, "none", {"thinking": {"type": "disabled"}}),
    ("glm-5.1", None, "high", {"thinking": {"type": "enabled"}}),
    ("glm-5.3", None, "none", {"thinking": {"type": "enabled"}, "reasoning_effort": "low"}),
    ("kimi-k2.6", None, "low", {"thinking": {"type": "enabled"}}),
    ("kimi-k3", None, "none", {"reasoning_effort": "low"}),
    ("qwen3-max", None, "none", {"enable_thinking": False}),
    ("qwen3-max", None, "xhigh", {"enable_thinking": True}),
    ("deepseek/deepseek-v4-flash", None, "medium", {"reasoning": {"effort": "medium"}}),
    ("Qwen/Qwen3-8B", "vllm", "none", {"chat_template_kwargs": {"enable_thinking": False}}),
    ("Qwen/Qwen3-8B", "vllm", "low", {"chat_template_kwargs": {"enable_thinking": True}}),
    ("qwen3:8b", "ollama", "xhigh", {"reasoning_effort": "high"}),
    ("local", "llama.cpp", "none", {"chat_template_kwargs": {"enable_thinking": False}}),
])
def test_thinking_switches(model, client_type, level, expected):
    body = _body(model, {"thinking_level": level}, client_type, api_key="k")
    assert {k: body[k] for k in expected} == expected


@pytest.mark.parametrize("model, client_type", [("MiniMax-M3", None)])
def test_no_thinking_switch_sends_nothing(model, client_type):
    base = "http://127.0.0.1:9/v1" if client_type == "openai-chat" else None
    body = _body(model, {"thinking_level": "high"}, client_type, base, api_key="k")
    assert sorted(body) == ["messages", "model", "stream", "stream_options"]


@pytest.mark.parametrize("model, client_type", [("local", "lmstudio"), ("m", "openai-chat")])
def test_a_generic_chat_endpoint_gets_reasoning_effort(model, client_type):
    # issue 24 B2: (local, lmstudio) and (m, openai-chat) moved here from the test above: a generic Chat
    # endpoint gets thinking_level as reasoning_effort, as the openai SDK sends it (was: nothing sent)
    base = "http://127.0.0.1:9/v1" if client_type == "openai-chat" else None
    body = _body(model, {"thinking_level": "high"}, client_type, base, api_key="k")
    assert sorted(body) == ["messages", "model", "reasoning_effort", "stream", "stream_options"]
    assert body["reasoning_effort"] == "high"


# -- tool_choice, images, max_tokens ---------------------------------------------------------------

@pytest.mark.parametrize("model, choice", [
    ("glm-5.1", "required"), ("glm-5.1", "none"), ("deepseek-v4-flash", "required"), ("kimi-k2.6", ["get_weather"]),
    ("qwen3-max", "required"), ("MiniMax-M3", ["get_weather", "get_time"]),
])
def test_tool_choice_the_vendor_refuses(model, choice):
    with pytest.raises(UnsupportedParameterError) as info:
        _body(model, {"tools": TOOLS, "tool_choice": choice}, api_key="k")
    assert info.value.parameter == "tool_choice"


@pytest.mark.parametrize("model, choice, sent", [
    ("glm-5.1", "auto", "auto"), ("deepseek-v4-flash", "none", "none"),
    ("deepseek/deepseek-v4-flash", "required", "required"),
    ("deepseek/deepseek-v4-flash", ["get_time"], {"type": "function", "function": {"name": "get_time"}}),
])
def test_tool_choice_the_vendor_accepts(model, choice, sent):
    assert _body(model, {"tools": TOOLS, "tool_choice": choice}, api_key="k")["tool_choice"] == sent


def test_images_refused_before_sending_where_the_model_takes_none():
    image = [{"role": "user", "content_items": [{"type": "image_url", "image_url": "https://example.com/a.png"}]}]
    with pytest.raises(UnsupportedParameterError):
        _body("deepseek-v4-flash", {}, api_key="k", messages=image)
    assert _body("deepseek-v4-flash-vision-exp", {}, api_key="k", messages=image)["messages"][0]["content"][0] == {
        "type": "image_url", "image_url": {"url": "https://example.com/a.png"}}


@pytest.mark.parametrize("model, client_type, field", [
    ("deepseek-v4-flash", None, "max_tokens"), ("glm-5.1", None, "max_tokens"), ("qwen3-max", None, "max_tokens"),
    ("kimi-k2.6", None, "max_completion_tokens"), ("deepseek/x", None, "max_tokens"),
    ("m", "ollama", "max_tokens"), ("m", "vllm", "max_completion_tokens"),
])
def test_max_tokens_field(model, client_type, field):
    assert _body(model, {"max_tokens": 77}, client_type, api_key="k")[field] == 77


def test_deepseek_echoes_reasoning_on_tool_turns():
    history = USER + [
        {"role": "assistant", "content_items": [
            {"type": "thinking", "thinking": "t", "fidelity": {"reasoning_field": "reasoning_content"}},
            {"type": "tool_call", "name": "get_weather", "arguments": {}, "tool_call_id": "c1"}]},
        {"role": "user", "content_items": [{"type": "tool_result", "text": "ok", "tool_call_id": "c1"}]},
        {"role": "assistant", "content_items": [
            {"type": "tool_call", "name": "get_weather", "arguments": {}, "tool_call_id": "c2"}]},
        {"role": "user", "content_items": [{"type": "tool_result", "text": "ok", "tool_call_id": "c2"}]},
    ]
    messages = _body("deepseek-v4-flash", {"tools": TOOLS}, api_key="k", messages=history)["messages"]
    assert [m.get("reasoning_content") for m in messages if m["role"] == "assistant"] == ["t", ""]


# -- the table itself --------------------------------------------------------------------------------

def test_rows_are_well_formed():
    presets = [p for route in ROUTES for p in route.presets]
    assert len(presets) == len(set(presets))
    for route in ROUTES:
        assert route.client_type in registry.CLIENT_TYPES
        assert route.base_url.startswith(("https://", "http://127.0.0.1"))
        assert route.pattern is not None or route.presets
        assert route.examples
        assert set(route.quirks) <= set(registry.QUIRK_KEYS), route
        assert set(route.quirks.get("thinking", {})) <= set(LEVELS)
        assert set(route.quirks.get("tool_choice", ())) <= set(TOOL_CHOICES)
        if route.base_url.startswith("http://"):
            assert registry.is_loopback(route.base_url)


def test_list_models():
    rows = list_models()
    assert len(rows) == len(ROUTES)
    assert rows[0] == {
        "pattern": r"[^/\s]+/[^/\s]+$", "label": "vendor/model", "presets": ["openrouter"], "vendor": "OpenRouter",
        "client_type": "openai-chat", "base_url": "https://openrouter.ai/api/v1", "api_key_env": ["OPENROUTER_API_KEY"],
        "base_url_env": "OPENROUTER_BASE_URL", "input_modalities": ["text", "image"], "output_modalities": ["text"],
        "examples": ["deepseek/deepseek-v4-flash", "moonshotai/kimi-k2.6", "anthropic/claude-sonnet-4.6"],
        "models": [],  # a gateway's prices are its own: none listed
    }
    assert [r["label"] for r in rows if r["pattern"] is None] == [
        "client_type=vllm", "client_type=ollama", "client_type=lmstudio", "client_type=llama.cpp",
        "client_type=zai-anthropic", "client_type=openrouter-anthropic", "client_type=agenthub"]


def test_adding_an_openai_compatible_vendor_is_one_row(monkeypatch):
    row = Route(r"acme-", "openai-chat", "https://api.acme.example/v1", ("ACME_API_KEY",), "Acme", "ACME_BASE_URL",
                {"max_tokens_field": "max_tokens", "tool_choice": ("auto", "none"),
                 "thinking": {"none": {"thinking": False}, "high": {"thinking": True}}},
                examples=("acme-1",), presets=("acme",))
    monkeypatch.setattr(registry, "ROUTES", registry.ROUTES + [row])
    kind, url, key, quirks = resolve("acme-1", environ={"ACME_API_KEY": "ak"})
    assert (kind, url, key) == ("openai-chat", "https://api.acme.example/v1", "ak")
    assert quirks["thinking"]["medium"] == {"thinking": True}
    assert _body("acme-1", {"thinking_level": "low", "max_tokens": 5}, environ={"ACME_API_KEY": "ak"})["thinking"] \
        is False


# -- the Protocol records ------------------------------------------------------------------------------

_QUIRK_READ = re.compile(r"""quirks(?:\.get\(|\[)\s*["']([a-z_]+)["']""")


def test_every_quirk_a_protocol_module_reads_is_declared_on_its_record():
    import inspect

    from agenthub import providers

    from agenthub import hosts

    for record in providers.all_protocols():
        modules = [importlib.import_module("agenthub.providers." + record.module)]
        if record.embeddings:
            modules.append(importlib.import_module("agenthub.providers." + record.embeddings))
        read = set()
        for module in modules:
            read.update(_QUIRK_READ.findall(inspect.getsource(module)))
        assert read == set(record.quirk_keys), record
    for name, (module, attribute) in hosts.HOSTS.items():  # a host's quirks (header form, api-version) on its record
        host = hosts.host(name)
        read = set(_QUIRK_READ.findall(inspect.getsource(importlib.import_module("agenthub.hosts." + module))))
        assert set(host.quirk_keys) <= read, host
    assert set(registry.QUIRK_KEYS) == set(registry.MODEL_QUIRKS).union(
        *(r.quirk_keys for r in providers.all_protocols()), *(hosts.host(name).quirk_keys for name in hosts.HOSTS))


def test_the_derived_tables_come_from_the_records():
    from agenthub import hosts, providers
    from agenthub.apps import demo

    assert set(registry.CLIENT_TYPES) == set(hosts.CLIENT_TYPES)
    for record in providers.all_protocols():
        assert record.name in providers.PROTOCOLS and providers.PROTOCOLS[record.name] == record.module
    for row in hosts.all_client_types():
        assert row.dialect in providers.PROTOCOLS and row.host_name in hosts.HOSTS
        assert registry.CLIENT_TYPES[row.name] == row.host.base_url
        assert registry.PROTOCOL_KEYS[row.name] == (row.key_env, row.base_url_env)
    assert [d[1] for d in demo.DEMOS] == [r.name for r in providers.all_protocols() if r.demo]


def test_transport_knows_no_wire_protocol():
    import inspect

    from agenthub import transport

    source = inspect.getsource(transport)
    for word in ("iter_events", "SSEEvent", "b\"data: ", "providers", "streamGenerateContent"):
        assert word not in source, word


def test_openai_strict_mode_is_a_quirk_the_hosts_that_run_it_set():
    """The OpenAI dialects read no client type: api.openai.com and Azure OpenAI (its host record) carry the quirk
    ``strict_subset`` (a strict schema outside OpenAI's documented subset is refused before sending); a gateway
    or a compatible server speaking the dialect does not, and neither does Claude on Foundry."""
    own = {"strict_subset": True, "answers_required": True, "image_subset": True}
    assert resolve("gpt-5.5", environ={"OPENAI_API_KEY": "sk-1"})[3] == own
    assert resolve("gpt-5.5", "openai-responses", "https://api.openai.com/v1", "k")[3] == own
    azure = {"AZURE_OPENAI_ENDPOINT": "https://res-1.openai.azure.com", "AZURE_OPENAI_API_KEY": "a"}
    assert resolve("my-gpt5", "azure", environ=azure)[3]["strict_subset"] is True
    assert resolve("my-gpt5", "azure-responses", "http://127.0.0.1:9/openai/v1", "k")[3]["strict_subset"] is True
    others = [resolve("gpt-5.5", "openai-chat", "https://gw.example/v1", "k"),
              resolve("gpt-5.5", environ={"OPENAI_API_KEY": "sk-1", "OPENAI_BASE_URL": "https://gw.example/v1"}),
              resolve("deepseek-v4-flash", environ={"DEEPSEEK_API_KEY": "d"}),
              resolve("claude-x", "azure-anthropic", "res-1", "k")]
    assert [quirks.get("strict_subset") for _, _, _, quirks in others] == [None] * 4


def test_a_tool_call_left_unanswered_is_checked_at_the_chat_hosts_known_to_refuse_it():
    """``answers_required``: OpenAI, Azure OpenAI, DeepSeek, DashScope and Moonshot answer 400 to a history with a
    tool call left unanswered before the next turn; a gateway or a local server is not assumed to."""
    azure = {"AZURE_OPENAI_ENDPOINT": "https://res-1.openai.azure.com", "AZURE_OPENAI_API_KEY": "a"}
    refusing = [resolve("gpt-5.5", "openai-chat", "https://api.openai.com/v1", "k"),
                resolve("my-gpt5", "azure", environ=azure),
                resolve("deepseek-v4-flash", environ={"DEEPSEEK_API_KEY": "d"}),
                resolve("qwen3-max", environ={"DASHSCOPE_API_KEY": "q"}),
                resolve("kimi-k2.6", environ={"MOONSHOT_API_KEY": "m"}),
                resolve("moonshot-v1-32k", environ={"MOONSHOT_API_KEY": "m"})]
    assert [quirks.get("answers_required") for _, _, _, quirks in refusing] == [True] * 6
    others = [resolve("gpt-5.5", "openai-chat", "https://gw.example/v1", "k"),
              resolve("Qwen/Qwen3-8B", "vllm"), resolve("qwen3:8b", "ollama"),
              resolve("glm-5.1", environ={"ZAI_API_KEY": "z"}),
              resolve("deepseek/deepseek-v4-flash", environ={"OPENROUTER_API_KEY": "o"})]
    assert [quirks.get("answers_required") for _, _, _, quirks in others] == [None] * 5


def test_the_anthropic_first_party_is_a_quirk_its_host_sets():
    """The anthropic dialect reads no URL: the host's own servers carry the quirk ``first_party``."""
    env = {"ANTHROPIC_API_KEY": "sk-ant-1"}
    assert resolve("claude-sonnet-4-6", environ=env)[3] == {"first_party": True}
    assert resolve("any-name", "anthropic", environ=env)[3] == {"first_party": True}
    assert resolve("claude-x", "anthropic", "https://api.anthropic.com/", "k")[3]["first_party"] is True
    gateways = [resolve("claude-sonnet-4-6", "anthropic", "https://gw.example", "k"),
                resolve("claude-sonnet-4-6", environ=dict(env, ANTHROPIC_BASE_URL="https://gw.example")),
                resolve("glm-5.1", "zai-anthropic", environ={"ZAI_API_KEY": "z"}),
                resolve("claude-sonnet-4-6", "anthropic", "https://api.anthropic.com.gw.example", "k"),
                resolve("claude-sonnet-4-6", "openai-chat", "https://api.anthropic.com/v1", "k")]
    assert [quirks.get("first_party") for _, _, _, quirks in gateways] == [None] * 5
