"""Command line: ``agenthub`` (also ``python -m agenthub``).

::

    agenthub demo                          replay recorded streams: no key, no network
    agenthub chat MODEL "prompt"           stream one answer (thinking set apart, tool calls, usage)
    agenthub chat MODEL "prompt" --json    the raw UniEvents, one JSON object a line (bytes as base64)
    agenthub models [--json]               the routing registry
    agenthub trace view DIR                browse saved traces in a web page (http.server, loopback)
    agenthub trace show FILE               print a saved trace as text
    agenthub serve --config FILE           serve the config's models over HTTP (SSE of UniEvents)

Exit status: 0 done, 1 an agenthub error (printed on stderr, never with a key), 2 bad
usage, 130 interrupted.
"""

import argparse
import json
import os
import sys
from typing import Any, List, Mapping, Optional, TextIO

__all__ = ["main", "Printer", "usage_line"]

LEVELS = ("none", "low", "medium", "high", "xhigh")


def usage_line(finish_reason: Optional[str], usage: Optional[Mapping[str, Any]]) -> str:
    """``[done: stop] tokens: prompt 24, cached 64, thinking 0, response 14`` (``?`` where the server said nothing)."""
    usage = usage or {}
    counts = ", ".join("{} {}".format(label, "?" if usage.get(key) is None else usage[key]) for label, key in (
        ("prompt", "prompt_tokens"), ("cached", "cached_tokens"), ("thinking", "thoughts_tokens"),
        ("response", "response_tokens")))
    return "[done: {}] tokens: {}".format(finish_reason, counts)


class Printer(object):
    """Renders UniEvents on a terminal as they arrive.

    Text is written as it streams; thinking goes on its own ``[thinking]`` lines
    (dimmed on a colour terminal); each complete tool call gets a ``[tool call]``
    line; media items are summarised; the stop event prints the usage line.
    """

    def __init__(self, out: TextIO, text_prefix: str = "", indent: str = "", color: Optional[bool] = None) -> None:
        self.out = out
        self.text_prefix = text_prefix
        self.indent = indent
        if color is None:
            color = bool(getattr(out, "isatty", lambda: False)()) and not os.environ.get("NO_COLOR")
        self.color = color
        self.mode = None  # type: Optional[str]  # "text", "thinking" or None (at the start of a line)

    def _style(self, code: str, text: str) -> str:
        return "\x1b[{}m{}\x1b[0m".format(code, text) if self.color else text

    def _line_end(self) -> None:
        if self.mode is not None:
            self.out.write("\n")
            self.mode = None

    def line(self, text: str) -> None:
        """A whole line of its own (after ending any text in progress)."""
        self._line_end()
        self.out.write(self.indent + text + "\n")
        self.out.flush()

    def event(self, event: Mapping[str, Any]) -> None:
        for item in event["content_items"]:
            self.item(item)
        if event["event_type"] == "stop":
            self.line(self._style("2", usage_line(event.get("finish_reason"), event.get("usage_metadata"))))
        self.out.flush()

    def item(self, item: Mapping[str, Any]) -> None:
        kind = item.get("type")
        if kind == "thinking":
            if not item.get("thinking"):
                return
            if self.mode != "thinking":
                self._line_end()
                self.out.write(self.indent + self._style("2", "[thinking] "))
                self.mode = "thinking"
            self.out.write(self._style("2", item["thinking"]))
        elif kind == "text":
            if not item.get("text"):
                return
            if self.mode != "text":
                self._line_end()
                self.out.write(self.indent + self.text_prefix)
                self.mode = "text"
            self.out.write(item["text"])
        elif kind == "tool_call":
            self.line(self._style("36", "[tool call] {}({}) id={}".format(
                item.get("name"), json.dumps(item.get("arguments"), ensure_ascii=False), item.get("tool_call_id"))))
        elif kind in ("inline_data", "inline_thinking"):
            self.line("[{} {}, {} bytes]".format("media" if kind == "inline_data" else "thinking data",
                                                 item.get("mime_type"), len(item.get("data") or b"")))
        elif kind == "image_url":
            url = str(item.get("image_url", ""))
            self.line("[image {}]".format(url if not url.startswith("data:") else url[:40] + "..."))
        elif kind == "embedding":
            values = item.get("embedding") or []
            self.line("[embedding: {} dimensions, first {}]".format(
                len(values), ", ".join("{:.4f}".format(v) for v in values[:3])))
        # partial_tool_call fragments are not shown: the complete call follows


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="agenthub", description="One streaming loop for every LLM provider.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.add_parser("demo", help="replay recorded streams through the real stack (no key, no network)",
                   description="Replay the project's recorded tool-calling conversations through AutoLLMClient, "
                               "the transport, the SSE framing and each protocol's parser. No key, no network.")
    chat = sub.add_parser("chat", help="stream one answer from MODEL",
                          description="Stream one answer. The key comes from the provider's environment variable "
                                      "(see `agenthub models`); a local server needs --client-type and --base-url.")
    chat.add_argument("model")
    chat.add_argument("prompt", help='the user message ("-" reads it from standard input)')
    chat.add_argument("--system", help="system prompt")
    chat.add_argument("--max-tokens", type=int, metavar="N")
    chat.add_argument("--temperature", type=float)
    chat.add_argument("--thinking", choices=LEVELS, help="thinking level (clamped to what the model supports)")
    chat.add_argument("--client-type", help="protocol or preset (openai-chat, anthropic, vllm, ollama, ...)")
    chat.add_argument("--base-url", help="endpoint URL; a non-loopback one needs --api-key-env")
    chat.add_argument("--api-key-env", metavar="VAR", help="read the key for --base-url from $VAR")
    chat.add_argument("--trace-id", help="save the conversation as a trace (under $AGENTHUB_CACHE_DIR)")
    chat.add_argument("--json", action="store_true", help="print raw UniEvents, one JSON object per line")
    models = sub.add_parser("models", help="list the routing registry")
    models.add_argument("--json", action="store_true", help="one JSON array of rows")
    trace = sub.add_parser("trace", help="saved traces: view them in a browser, or print one")
    trace_sub = trace.add_subparsers(dest="trace_command", metavar="ACTION")
    view = trace_sub.add_parser("view", help="serve a viewer of the traces under DIR (standard library http.server)")
    view.add_argument("dir", nargs="?", help="trace folder (default: $AGENTHUB_CACHE_DIR or ./cache)")
    view.add_argument("--host", default="127.0.0.1")
    view.add_argument("--port", type=int, default=8765, help="0 picks a free port (default 8765)")
    view.add_argument("--open", action="store_true", help="open the page in a web browser")
    show = trace_sub.add_parser("show", help="print a saved trace (.json) as text")
    show.add_argument("file")
    serve = sub.add_parser("serve", help="serve the models of a config file over HTTP (the uniform stream, SSE)",
                           description="Serve the models of a JSON config over HTTP: GET /v1/models, POST /v1/stream "
                                       "(UniEvents as server-sent events), the playground at /. The first line on "
                                       "stdout is the URL. A non-loopback --host needs api_keys in the config.")
    serve.add_argument("--config", required=True, metavar="FILE", help="the server config (JSON)")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8787, help="0 picks a free port (default 8787)")
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    from .errors import AgentHubError

    try:
        if args.command == "demo":
            from .demo import run

            run(sys.stdout)
            return 0
        if args.command == "models":
            return _models(args, sys.stdout)
        if args.command == "chat":
            return _chat(args, sys.stdout)
        if args.command == "serve":
            return _serve(args)
        if args.command == "trace":
            if args.trace_command == "view":
                return _trace_view(args)
            if args.trace_command == "show":
                from .tracer import load_trace, render_text

                document = load_trace(args.file)
                sys.stdout.write(render_text(document.get("history") or [], document.get("config") or {}))
                return 0
            parser.parse_args(["trace", "--help"])
    except AgentHubError as exc:
        sys.stdout.flush()
        print("error: {}: {}".format(type(exc).__name__, exc), file=sys.stderr)
        return 1
    except BrokenPipeError:  # `agenthub demo | head`: the reader left, nothing more to say
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return 1
    except KeyboardInterrupt:
        sys.stdout.flush()
        print("interrupted", file=sys.stderr)
        return 130
    except (OSError, ValueError) as exc:  # a trace file that is not there or not a trace
        print("error: {}: {}".format(type(exc).__name__, exc), file=sys.stderr)
        return 1
    parser.print_help()
    return 2


def _models(args: Any, out: TextIO) -> int:
    from .registry import list_models

    rows = list_models()
    if args.json:
        out.write(json.dumps(rows, indent=2) + "\n")
        return 0
    out.write("{:<30} {:<17} {:<56} {}\n".format("MODEL NAMES", "PROTOCOL", "ENDPOINT", "API KEY"))
    for row in rows:
        out.write("{:<30} {:<17} {:<56} {}\n".format(
            row["label"], row["client_type"], row["base_url"], " or ".join(row["api_key_env"]) or "-"))
        out.write("    {}; {} -> {}; e.g. {}\n".format(
            row["vendor"], "+".join(row["input_modalities"]), "+".join(row["output_modalities"]),
            ", ".join(row["examples"])))
    out.write("\nAny other model: --client-type PROTOCOL (openai-chat, openai-responses, anthropic, gemini) "
              "or a preset "
              "({}), with --base-url.\n".format(", ".join(r["presets"][0] for r in rows if r["presets"])))
    return 0


def _chat(args: Any, out: TextIO) -> int:
    from .client import AutoLLMClient
    from .errors import ConfigError
    from .tracer import to_jsonable

    prompt = sys.stdin.read() if args.prompt == "-" else args.prompt
    api_key = None
    if args.api_key_env:
        api_key = os.environ.get(args.api_key_env)
        if not api_key:
            raise ConfigError("${} is not set".format(args.api_key_env))
    client = AutoLLMClient(args.model, api_key=api_key, base_url=args.base_url, client_type=args.client_type)
    config = {}  # type: Dict[str, Any]
    if args.system:
        config["system_prompt"] = args.system
    if args.max_tokens is not None:
        config["max_tokens"] = args.max_tokens
    if args.temperature is not None:
        config["temperature"] = args.temperature
    if args.thinking:
        config["thinking_level"] = args.thinking
    if args.trace_id:
        config["trace_id"] = args.trace_id
    messages = [{"role": "user", "content_items": [{"type": "text", "text": prompt}]}]
    printer = Printer(out)
    for event in client.streaming_response(messages, config):
        if args.json:
            out.write(json.dumps(to_jsonable(event), ensure_ascii=False) + "\n")
            out.flush()
        else:
            printer.event(event)
    return 0


def _trace_view(args: Any) -> int:
    from .tracer import cache_dir
    from .viewer import serve

    folder = args.dir or cache_dir()
    if not os.path.isdir(folder):
        print("error: no trace folder at {}".format(os.path.abspath(folder)), file=sys.stderr)
        return 1
    server, url = serve(folder, args.host, args.port)
    print("agenthub trace viewer: {} (serving {}; Ctrl+C stops)".format(url, os.path.abspath(folder)))
    sys.stdout.flush()
    if args.open:
        import webbrowser

        webbrowser.open(url)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


def _serve(args: Any) -> int:
    from .server import serve

    server, url = serve(args.config, args.host, args.port)
    print(url)  # the first line: whoever started us reads the port here
    sys.stdout.flush()
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
