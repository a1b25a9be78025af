"""The public surface is pinned, and the import layers hold."""

import ast
import os
import subprocess
import sys

import agenthub

PACKAGE = os.path.dirname(os.path.abspath(agenthub.__file__))

EXPECTED_ALL = {
    "AutoLLMClient", "ResponseStream", "Timeout", "ThinkingLevel", "PromptCaching", "collect", "check_stream", "list_models", "cost",
    "AgentHubError", "ConfigError", "UnsupportedParameterError", "UnsupportedOperationError", "TransportError",
    "UpstreamError", "AuthenticationError", "RateLimitError", "ServerError", "StreamError", "StreamProtocolError",
    "ToolCallArgumentParseError", "EmptyResponseError", "save_wav", "__version__",
    # the model catalog (issue 23)
    "list_supported_models", "Budget", "BudgetExceededError",
    # the data model
    "UniMessage", "AssistantMessage", "Message", "UniConfig", "UniEvent", "UsageMetadata", "Role", "EventType",
    "FinishReason", "ToolSchema", "ImageConfig", "SpeakerConfig", "EmbeddingConfig", "ContentItem",
    "PartialContentItem", "TextItem", "ImageUrlItem", "InlineDataItem", "ThinkingItem", "InlineThinkingItem",
    "ToolCallItem", "ToolResultItem", "EmbeddingItem", "PartialToolCallItem",
    # workloads (issue 20)
    "RateLimiter",
}


def test_all_is_pinned_and_every_name_exists():
    assert set(agenthub.__all__) == EXPECTED_ALL
    for name in agenthub.__all__:
        assert hasattr(agenthub, name), name


def test_error_tree_matches_api_md():
    from agenthub import errors as e

    assert issubclass(e.ConfigError, (e.AgentHubError, ValueError))
    assert issubclass(e.UnsupportedParameterError, e.ConfigError)
    assert issubclass(e.UnsupportedOperationError, e.ConfigError)
    assert issubclass(e.TransportError, (e.AgentHubError, ConnectionError))
    for cls in (e.AuthenticationError, e.RateLimitError, e.ServerError):
        assert issubclass(cls, e.UpstreamError)
    assert issubclass(e.UpstreamError, e.AgentHubError) and not issubclass(e.UpstreamError, ValueError)
    for cls in (e.StreamProtocolError, e.ToolCallArgumentParseError, e.EmptyResponseError):
        assert issubclass(cls, e.StreamError)
    assert issubclass(e.ToolCallArgumentParseError, ValueError)
    assert issubclass(e.StreamError, e.AgentHubError)


def modules():
    for folder, _, files in os.walk(PACKAGE):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                rel = os.path.relpath(path, PACKAGE).replace(os.sep, "/")
                with open(path, encoding="utf-8") as handle:
                    yield rel, ast.parse(handle.read())


def imports(tree):
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield 0, alias.name
        elif isinstance(node, ast.ImportFrom):
            yield node.level, node.module or ""


STDLIB_38 = {  # what the package may use on 3.8, where sys.stdlib_module_names does not exist
    "abc", "argparse", "ast", "base64", "binascii", "collections", "contextlib", "copy", "dataclasses", "email",
    "enum", "functools", "glob", "hashlib", "html", "http", "importlib", "io", "ipaddress", "itertools", "json",
    "logging", "math", "mimetypes", "os", "pathlib", "random", "re", "shutil", "socket", "socketserver", "string",
    "struct", "sys", "tempfile", "threading", "time", "traceback", "typing", "urllib", "uuid", "wave", "warnings",
    "webbrowser", "weakref", "zlib", "types", "signal", "textwrap", "pickle", "datetime", "errno", "select",
    "queue", "heapq", "bisect", "operator", "codecs", "unicodedata", "numbers", "fnmatch", "platform", "gzip",
    "configparser", "hmac", "wsgiref",
}


def test_only_transport_imports_requests_and_nothing_outside_stdlib():
    stdlib = set(getattr(sys, "stdlib_module_names", ())) or STDLIB_38
    for rel, tree in modules():
        for level, name in imports(tree):
            if level:
                continue
            top = name.split(".")[0]
            if top in ("requests", "urllib3"):
                assert rel == "transport.py", "{} imports {}".format(rel, name)
            elif top == "google":  # google-auth, the optional extra agenthub[vertex], inside gcp.py's functions
                assert rel == "gcp.py", "{} imports {}".format(rel, name)
            else:
                assert top in stdlib or top == "agenthub", "{} imports {} (not stdlib)".format(rel, name)


SAME_PROTOCOL = {"providers/gemini_embeddings.py": {"gemini"},
                 # the cloud routes: another wire protocol's request and parser at the cloud's URL and auth
                 "providers/azure.py": {"openai_chat"}, "providers/azure_responses.py": {"azure", "openai_responses"},
                 "providers/vertex.py": {"gemini"}, "providers/vertex_anthropic.py": {"anthropic", "vertex"}}


def test_layers_providers_are_pure():
    for rel, tree in modules():
        if not rel.startswith("providers/"):
            continue
        for level, name in imports(tree):
            target = name.split(".")[0] if level else name
            assert target not in ("transport", "client", "registry", "tracer", "requests"), (rel, name)
            if level == 1 and rel != "providers/__init__.py":
                allowed = {"_common", "_tokens", ""} | SAME_PROTOCOL.get(rel, set())
                assert target in allowed, "{} imports sibling provider {}".format(rel, name)
    for rel, tree in modules():
        if rel in ("types.py", "errors.py", "sse.py", "toolcalls.py", "stream.py", "validate.py"):
            for level, name in imports(tree):
                assert not level or name.split(".")[0] in ("errors", "types", ""), (rel, name)


def test_import_is_cheap_and_does_not_load_requests():
    code = "import sys, agenthub; print('requests' in sys.modules)"
    out = subprocess.check_output([sys.executable, "-c", code]).decode().strip()
    assert out == "False"
