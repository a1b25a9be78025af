"""The public surface is pinned, and the import layers hold."""

import ast
import os
import shutil
import subprocess
import sys

import pytest

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
    # state shared by processes and machines (issue 33)
    "ResponseCache",
    # the agent turn (issue 30)
    "tool", "RunResult",
    # typed helpers (issue 29 C3)
    "user", "text",
    # typed output (issue 40)
    "Parsed", "OutputValidationError", "OutputRefusedError",
}


def test_all_is_pinned_and_every_name_exists():
    assert set(agenthub.__all__) == EXPECTED_ALL
    for name in agenthub.__all__:
        assert hasattr(agenthub, name), name


def test_the_agent_wings_names_are_pinned():
    import agenthub.agent

    # ToolHook: the seam around a run and its tool calls (issue 36 item 2); call_digest: what a decision covers
    assert set(agenthub.agent.__all__) == {"Tool", "tool", "Run", "RunResult", "ToolHook", "call_digest",
                                          "current_call", "CallContext", "JournalError", "RunLockedError"}
    for name in agenthub.agent.__all__:
        assert hasattr(agenthub.agent, name), name


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


def modules(package=PACKAGE):
    for folder, _, files in os.walk(package):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                rel = os.path.relpath(path, package).replace(os.sep, "/")
                with open(path, encoding="utf-8") as handle:
                    yield rel, ast.parse(handle.read())


def module_name(rel):
    """``providers/anthropic.py`` -> ``agenthub.providers.anthropic`` (``x/__init__.py`` -> ``agenthub.x``)."""
    parts = rel[:-3].split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(["agenthub"] + parts)


def imports(tree, rel=None, known=()):
    """(level, name) of each import; with ``rel`` (the importing file), relative imports are resolved to
    absolute module names, ``from . import X`` to module X (when ``known`` holds it), as
    (0, "agenthub.x.X", names imported)."""
    if rel is None:
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    yield 0, alias.name
            elif isinstance(node, ast.ImportFrom):
                yield node.level, node.module or ""
        return
    here = module_name(rel)
    package = here if rel.endswith("__init__.py") else here.rsplit(".", 1)[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield 0, alias.name, ()
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[:len(parts) - node.level + 1])
                if node.module:
                    base += "." + node.module
            else:
                base = node.module or ""
            plain = []
            for alias in node.names:
                if base + "." + alias.name in known:
                    yield 0, base + "." + alias.name, ()  # from . import X: module X
                else:
                    plain.append(alias.name)
            if plain:
                yield 0, base, tuple(plain)


STDLIB_38 = {  # what the package may use on 3.8, where sys.stdlib_module_names does not exist
    "abc", "argparse", "fractions", "ast", "base64", "binascii", "collections", "contextlib", "copy", "dataclasses", "email",
    "enum", "functools", "glob", "hashlib", "html", "http", "importlib", "io", "ipaddress", "itertools", "json",
    "logging", "math", "mimetypes", "os", "pathlib", "random", "re", "shutil", "socket", "socketserver", "string",
    "struct", "sys", "tempfile", "threading", "time", "traceback", "typing", "urllib", "uuid", "wave", "warnings",
    "webbrowser", "weakref", "zlib", "types", "signal", "textwrap", "pickle", "datetime", "errno", "select",
    "queue", "heapq", "bisect", "operator", "codecs", "unicodedata", "numbers", "fnmatch", "platform", "gzip",
    "configparser", "hmac", "wsgiref", "pkgutil", "concurrent", "sqlite3", "readline", "shlex", "inspect",
    "secrets", "uuid", "csv", "contextvars", "io", "difflib", "stat", "atexit", "getpass", "locale", "calendar", "decimal",
    "fcntl", "msvcrt",
    "subprocess",
}

#: a package outside the standard library -> the one module allowed to import it: requests (the one runtime
#: dependency) and each optional extra, imported inside that module's functions (a module of a package not
#: written yet may be named: the rule holds from its first line)
ONLY_IN = {
    "requests": "transport.py",
    "urllib3": "transport.py",
    "google": "hosts/gcp.py",          # google-auth, agenthub[vertex]
    "ray": "ray.py",                   # Ray Data, agenthub[ray]
    "opentelemetry": "telemetry/hook.py",   # agenthub[otel]
    "redis": "stores/redis.py",        # the redis store (shared state)
}


def dependency_violations(package=PACKAGE):
    """Every import of a package outside the standard library by a module other than its one, in words."""
    stdlib = set(getattr(sys, "stdlib_module_names", ())) or STDLIB_38
    problems = []
    for rel, tree in modules(package):
        for level, name in imports(tree):
            if level:
                continue
            top = name.split(".")[0]
            if top in ONLY_IN:
                if rel != ONLY_IN[top]:
                    problems.append("{} imports {} (only {} may)".format(rel, name, ONLY_IN[top]))
            elif top not in stdlib and top != "agenthub":
                problems.append("{} imports {} (not stdlib)".format(rel, name))
    return problems


def test_only_transport_imports_requests_and_nothing_outside_stdlib():
    assert dependency_violations() == []


@pytest.mark.parametrize("file, probe, expected", [
    ("client.py", "import opentelemetry.trace\n", "client.py imports opentelemetry.trace (only telemetry/hook.py may)"),
    ("limiter.py", "import redis\n", "limiter.py imports redis (only stores/redis.py may)"),
    ("stream.py", "import requests\n", "stream.py imports requests (only transport.py may)"),
    ("ray.py", "from google.auth import default\n", "ray.py imports google.auth (only hosts/gcp.py may)"),
    ("types.py", "import numpy\n", "types.py imports numpy (not stdlib)"),
])
def test_a_probe_import_breaks_the_dependency_rule(tmp_path, file, probe, expected):
    copy = str(tmp_path / "agenthub")
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__", "recordings"))
    with open(os.path.join(copy, file), "a", encoding="utf-8") as handle:
        handle.write("\n" + probe)
    assert dependency_violations(copy) == [expected]


def test_subprocess_is_stdlib_on_every_python():
    assert "subprocess" in STDLIB_38


#: the floors, lowest first: a module imports only from its own floor or below (a module not named here
#: is checked for circles only: give it a floor).  providers/* is the wire dialects, hosts/* where a
#: request goes and how it is authorised.
LAYERS = [
    {"types", "errors", "_redact", "_log", "_forks", "typeschema", "_controls", "_jsondepth"},
    {"sse", "eventstream", "toolcalls", "stream", "validate", "media", "answers", "estimate", "resume",
     "messages"},
    {"providers", "foreign"},  # foreign reads the dialect index (marks, reads, tool_call id rules)
    {"hosts", "aws", "gcp"},
    {"registry", "transport", "tracer", "catalog", "budget", "limiter", "attempts", "breaker", "telemetry",  # telemetry/: names < hook < spans
     "stores", "cache", "background"},
    {"client", "failover", "testing", "agent", "output"},  # agent: client.run imports agent.runner (which takes the client
    #                                               duck-typed and imports nothing above floor 4)
    {"server", "playground", "viewer", "_dom", "demo", "__main__", "apps", "", "jobs", "ray", "mcp"},
]
#: what a provider may import: the pure core, providers/_common and other dialects' public names
PURE_CORE = LAYERS[0] | LAYERS[1]
#: arrows up allowed, each with its reason: a Google token's refresh is HTTP through google-auth's own requests
#: session, and its deadline as a whole (TOKEN_TIMEOUT) needs transport's stop switch and watched pools
KNOWN_ARROWS_UP = {("agenthub.hosts.gcp", "agenthub.transport")}
#: import circles allowed (none: agenthub.cost is the catalog's, the registry no longer re-exports it)
KNOWN_CIRCLES = []  # type: list


def _floor(module):
    parts = module.split(".")
    room = parts[1] if len(parts) > 1 else ""
    for number, rooms in enumerate(LAYERS):
        if room in rooms:
            return number
    return None


def _arrows(package):
    """{module: {imported module: [names]}} inside agenthub, relative imports resolved."""
    files = dict(modules(package))
    known = {module_name(rel) for rel in files}
    graph = {}
    for rel, tree in files.items():
        here = module_name(rel)
        out = graph.setdefault(here, {})
        for _, name, names in imports(tree, rel, known):
            if not (name == "agenthub" or name.startswith("agenthub.")):
                if name.split(".")[0] in ("requests", "urllib3") and here.startswith("agenthub.providers"):
                    out.setdefault(name, []).extend(names)
                continue
            target = name
            while target not in known and "." in target:
                target = target.rsplit(".", 1)[0]
            if target != here:
                out.setdefault(target, []).extend(names)
    return graph, files


def _circles(graph):
    """The strongly connected groups of more than one module (Tarjan's algorithm, iterative)."""
    index, low, stack, on, found, counter = {}, {}, [], set(), [], [0]
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(graph.get(start, ())))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on.add(start)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in graph:
                    continue
                if child not in index:
                    index[child] = low[child] = counter[0]
                    counter[0] += 1
                    stack.append(child)
                    on.add(child)
                    work.append((child, iter(graph.get(child, ()))))
                    advanced = True
                    break
                if child in on:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = set()
                while True:
                    member = stack.pop()
                    on.discard(member)
                    group.add(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(group)
    return found


def layer_violations(package=PACKAGE):
    """Every broken layering rule of the package at ``package``, in words (empty: the layers hold)."""
    graph, files = _arrows(package)
    problems = []
    for here, targets in sorted(graph.items()):
        for target, names in sorted(targets.items()):
            if here.startswith("agenthub.providers.") or here == "agenthub.providers":
                room = target.split(".")[1] if target.count(".") else ""
                if not target.startswith("agenthub."):
                    problems.append("{} imports {}".format(here, target))
                elif target.startswith("agenthub.providers"):
                    private = [name for name in names if name.startswith("_")]
                    if target != "agenthub.providers._common" and private:
                        problems.append("{} imports private {} of {}".format(here, ", ".join(private), target))
                elif room not in PURE_CORE:
                    problems.append("{} imports {} (a provider imports only _common and the pure core)".format(
                        here, target))
            low, high = _floor(target), _floor(here)
            if low is not None and high is not None and low > high and (here, target) not in KNOWN_ARROWS_UP:
                problems.append("{} (floor {}) imports {} (floor {}): an arrow up".format(here, high, target, low))
    # a provider reading another dialect's private name through its module (anthropic._thinking)
    for rel, tree in files.items():
        here = module_name(rel)
        if not here.startswith("agenthub.providers."):
            continue
        siblings = {name.rsplit(".", 1)[1] for name in graph.get(here, {})
                    if name.startswith("agenthub.providers.") and name != "agenthub.providers._common"}
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in siblings \
                    and node.attr.startswith("_") and not node.attr.startswith("__"):
                problems.append("{} reads private {}.{}".format(here, node.value.id, node.attr))
    for group in _circles(graph):
        if group not in KNOWN_CIRCLES:
            problems.append("import circle: {}".format(" <-> ".join(sorted(group))))
    return problems


def test_layers_hold():
    assert layer_violations() == []


@pytest.mark.parametrize("file, probe, expected", [
    ("providers/openai_chat.py", "from .. import transport\n", "agenthub.providers.openai_chat imports agenthub.transport"),
    ("providers/openai_chat.py", "from ..transport import open_stream\n", "imports agenthub.transport"),
    ("providers/gemini.py", "import requests\n", "agenthub.providers.gemini imports requests"),
    ("providers/bedrock.py", "from ..hosts import aws\n", "imports agenthub.hosts.aws"),
    ("providers/bedrock.py", "from .anthropic import _name\n", "imports private _name of agenthub.providers.anthropic"),
    ("providers/bedrock.py", "X = anthropic._name\n", "reads private anthropic._name"),
    ("types.py", "from . import client\n", "agenthub.types (floor 0) imports agenthub.client (floor 5): an arrow up"),
    ("hosts/keys.py", "from .. import registry\n", "an arrow up"),
    ("errors.py", "from . import media\n", "an arrow up"),
    ("media.py", "from . import toolcalls\n", "import circle"),
])
def test_a_probe_import_breaks_the_layering_check(tmp_path, file, probe, expected):
    copy = str(tmp_path / "agenthub")
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__", "recordings"))
    if file == "media.py":  # a circle needs both arrows: toolcalls -> media, media -> toolcalls
        with open(os.path.join(copy, "toolcalls.py"), "a", encoding="utf-8") as handle:
            handle.write("\nfrom . import media\n")
    with open(os.path.join(copy, file), "a", encoding="utf-8") as handle:
        handle.write("\n" + probe)
    assert layer_violations() == []  # the package itself is clean: the probe is what breaks the copy
    problems = layer_violations(copy)
    assert any(expected in problem for problem in problems), problems


def test_layers_core_modules_import_only_errors_and_types():
    files = dict(modules())
    known = {module_name(rel) for rel in files}
    for rel in ("types.py", "errors.py", "sse.py", "toolcalls.py", "stream.py", "validate.py"):
        for _, name, _ in imports(files[rel], rel, known):
            if name.startswith("agenthub"):
                # (_redact: what counts as a secret, pure, on the floor of errors and types: validate names a value
                # JSON cannot carry by its type alone under a field named like a credential)
                # (stream -> validate: an answer's names and ids checked while read by the rule the next request's
                # check applies, validate itself on this floor: it imports only errors, types and _redact)
                # (_jsondepth: JSON text too deep for the decoder on Python < 3.11, pure, imports nothing of agenthub)
                allowed = ("agenthub.errors", "agenthub.types", "agenthub._redact", "agenthub._jsondepth") + (
                    ("agenthub.validate",) if rel == "stream.py" else ())
                assert name in allowed, (rel, name)


def test_import_is_cheap_and_does_not_load_requests():
    code = "import sys, agenthub; print('requests' in sys.modules)"
    out = subprocess.check_output([sys.executable, "-c", code]).decode().strip()
    assert out == "False"


def test_every_module_has_a_floor():
    """A module without a floor is checked for circles only: every room of the package is named in LAYERS
    (``breaker``, ``foreign`` and ``resume`` had none)."""
    floorless = sorted(module_name(rel) for rel, _ in modules() if _floor(module_name(rel)) is None)
    assert floorless == []


def test_the_dialect_record_shape_is_pinned():
    """Every per-dialect fact is a field of ``agenthub.providers.Dialect``, all required (no default): a dialect
    added without one is a TypeError, and a reader compares no dialect name (``knows_structured_output`` for
    ``agenthub models --supports json_schema``, ``relays`` for the checks an agenthub server makes itself,
    ``answers_required``, ``unique_call_ids`` and ``results_next`` for how a wire takes tool calls and results)."""
    import inspect

    from agenthub.providers import Dialect

    params = inspect.signature(Dialect.__init__).parameters
    assert list(params) == ["self", "name", "module", "operation", "provider_by_host", "tool_names", "call_ids",
                            "marks", "reads", "compaction", "batch_api", "knows_structured_output", "relays",
                            "answers_required", "unique_call_ids", "results_next"]
    assert all(p.default is inspect.Parameter.empty for p in params.values())
