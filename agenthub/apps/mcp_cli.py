"""``agenthub mcp tools TARGET...`` and ``agenthub mcp call TARGET... TOOL JSON``.

TARGET is an MCP server's URL (Streamable HTTP) or the command that starts it (stdio): the remaining
arguments, or one quoted string split as a shell would.  ``--header "Name: value"`` (repeatable) goes to
a URL's own origin only, and so does ``--header-env "Name: VARIABLE"`` (the value an environment variable's:
a token kept out of the command line, which every user of the machine can read); ``--json`` prints
ToolSchemas / the tool_result item as JSON.  On a terminal, a server's words (tool names, descriptions,
results) are written with their control characters and bidirectional overrides shown, not obeyed
(``terminal.safe``); a pipe gets them as they are.
"""

import argparse
import json
import shlex
import sys
from typing import Any, Dict, List, Mapping, Optional, Sequence, TextIO, Union

from ..errors import ConfigError
from .._jsondepth import loads as _json_loads

__all__ = ["add_parser", "run", "target_of"]


def add_parser(sub: Any) -> argparse.ArgumentParser:
    parser = sub.add_parser("mcp", help="an MCP server's tools: list them, call one",
                            description="List the tools of an MCP server, or call one. TARGET is a URL "
                                        "(Streamable HTTP) or the command that starts the server (stdio): the "
                                        "remaining arguments, or one quoted string. Options come before TARGET.")
    actions = parser.add_subparsers(dest="mcp_command", metavar="ACTION")
    tools = actions.add_parser("tools", help="list the tools: agenthub mcp tools TARGET...")
    call = actions.add_parser("call", help="call a tool: agenthub mcp call TARGET... TOOL JSON")
    for action in (tools, call):
        action.add_argument("--header", action="append", default=[], metavar="'NAME: VALUE'",
                            help="an HTTP header for a URL target (its origin only); repeatable")
        action.add_argument("--header-env", action="append", default=[], metavar="'NAME: VARIABLE'",
                            help="an HTTP header whose value is the environment variable VARIABLE's (a token kept "
                                 "out of the command line, which other users of the machine can read); repeatable")
        action.add_argument("--timeout", type=float, metavar="SECONDS", help="per request and start-up (default 60)")
        action.add_argument("--protocol", default="auto", help='"auto" (default) or a revision such as 2025-11-25')
        action.add_argument("--json", action="store_true", help="print JSON")
        action.add_argument("words", nargs=argparse.REMAINDER, metavar="TARGET")
    return parser  # type: ignore[no-any-return]


def target_of(words: List[str]) -> Union[str, List[str]]:
    """A URL as it is; a command as its words (one word is split as a shell would)."""
    if not words:
        raise ConfigError("name an MCP server: a URL or the command that starts it")
    if len(words) == 1 and words[0].startswith(("http://", "https://")):
        return words[0]
    if len(words) == 1:
        words = shlex.split(words[0])
        if not words:
            raise ConfigError("the server command is empty")
    return list(words)


def _headers(values: List[str], from_env: Sequence[str] = (), environ: Optional[Mapping[str, str]] = None) -> Any:
    """``--header 'Name: value'`` and ``--header-env 'Name: VARIABLE'`` (the value read from the environment: a
    command line is readable by every user of the machine, ``ps``); a name given twice is a ConfigError."""
    import os

    env = os.environ if environ is None else environ
    headers = {}  # type: Dict[str, str]
    given = [("--header", value) for value in values] + [("--header-env", value) for value in from_env]
    for flag, value in given:
        name, sep, text = value.partition(":")
        name, text = name.strip(), text.strip()
        if not sep or not name:
            raise ConfigError("{} wants 'Name: {}'".format(flag, "value" if flag == "--header" else "VARIABLE"))
        if flag == "--header-env":
            if not text or not env.get(text, "").strip():
                raise ConfigError("--header-env {}: the environment variable {!r} is {}".format(
                    name, text, "not named" if not text else "not set" if text not in env else "empty"))
            text = env[text].strip()
        if name.lower() in (known.lower() for known in headers):
            raise ConfigError("{}: the header {!r} is given twice".format(flag, name))
        headers[name] = text
    return headers or None


def run(args: Any, out: TextIO = sys.stdout) -> int:
    from .. import mcp

    words = list(args.words)
    if words and words[0] == "--":
        words = words[1:]
    if args.mcp_command == "call":
        if len(words) < 3:
            raise ConfigError("agenthub mcp call TARGET... TOOL JSON")
        words, tool, text = words[:-2], words[-2], words[-1]
        try:
            arguments = _json_loads(text)
        except ValueError as exc:
            raise ConfigError("the tool's arguments are not JSON: {}".format(exc)) from None
        except RecursionError:
            raise ConfigError("the tool's arguments nest too deep to read") from None
        if not isinstance(arguments, dict):
            raise ConfigError("the tool's arguments must be a JSON object")
    target = target_of(words)
    headers = _headers(args.header, getattr(args, "header_env", ()))
    if headers is not None and not isinstance(target, str):
        raise ConfigError("--header and --header-env are for a URL target")
    from .._redact import scrub_text
    from .terminal import shown_for

    on_terminal = shown_for(out)
    # a listing shows what a server offers, however many tools (max_tools caps what a run sends)
    with mcp.connect(target, headers=headers, timeout=args.timeout, protocol=args.protocol,
                     max_tools=None) as server:
        secrets = server.credential_values()

        def shown(text: str) -> str:  # (what reaching the server takes is *** in what it says, as a run has it)
            return on_terminal(scrub_text(text, secrets))

        if args.mcp_command == "tools":
            tools = server.list_tools()
            if args.json:
                out.write(shown(json.dumps(tools, ensure_ascii=False)) + "\n")
            else:
                for schema in tools:
                    description = " ".join((schema.get("description") or "").split())
                    out.write(shown("{}{}".format(schema["name"], ": " + description if description else "")) + "\n")
            return 0
        result = server.call_tool(tool, arguments)
    if args.json:
        out.write(shown(json.dumps(result, ensure_ascii=False)) + "\n")
    else:
        if result["text"]:
            out.write(shown(result["text"]) + ("" if result["text"].endswith("\n") else "\n"))
        for image in result.get("images", []):
            out.write(shown("[image: {}]".format(image.split(",", 1)[0])) + "\n")
    return 1 if result.get("is_error") else 0
