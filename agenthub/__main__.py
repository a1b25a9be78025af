"""Command line: ``agenthub`` (also ``python -m agenthub``).

::

    agenthub demo                          replay recorded streams: no key, no network
    agenthub chat MODEL "prompt"           stream one answer: the answer on stdout; thinking, tool calls,
                                           usage and cost on stderr
    agenthub chat MODEL                    an interactive conversation (stdin a terminal), or the prompt
                                           read from a pipe
    agenthub chat MODEL "prompt" --json    the raw UniEvents, one JSON object a line (bytes as base64)
    agenthub models [--json]               the routing registry
    agenthub trace view DIR                browse saved traces in a web page (http.server, loopback)
    agenthub trace show FILE               print a saved trace as text
    agenthub serve --config FILE           serve the config's models over HTTP (SSE of UniEvents)

Exit status: 0 done, 1 an agenthub error (printed on stderr, never with a key), 2 bad
usage, 130 interrupted.
"""

import argparse
import errno
import json
import mimetypes
import os
import re
import signal
import sys
from typing import Any, Dict, List, Mapping, Optional, TextIO
from .types import ThinkingLevel

__all__ = ["main", "Printer", "usage_line"]

LEVELS = tuple(level.value for level in ThinkingLevel)  # the CLI offers every ThinkingLevel


def usage_line(finish_reason: Optional[str], usage: Optional[Mapping[str, Any]], cost: Optional[float] = None) -> str:
    """``[done: stop] tokens: prompt 24, cached 64, thinking 0, response 14`` (``?`` where the server said nothing),
    then ``, cost $0.000123`` when the turn's list price is known."""
    usage = usage or {}
    counts = ", ".join("{} {}".format(label, "?" if usage.get(key) is None else usage[key]) for label, key in (
        ("prompt", "prompt_tokens"), ("cached", "cached_tokens"), ("thinking", "thoughts_tokens"),
        ("response", "response_tokens")))
    line = "[done: {}] tokens: {}".format(finish_reason, counts)
    if cost is not None:
        line += ", cost ${}".format(_dollars(cost))
    return line


def _dollars(amount: float) -> str:
    text = "{:.6f}".format(amount).rstrip("0")
    return text + "00" if text.endswith(".") else text


def _tokens(count: Optional[int]) -> str:
    if count is None:
        return "?"
    if count >= 1000000 and count % 1000000 == 0:
        return "{}M".format(count // 1000000)
    if count >= 1000 and count % 1000 == 0:
        return "{}K".format(count // 1000)
    return str(count)


def model_line(model: Mapping[str, Any]) -> str:
    """``claude-sonnet-5: context 1M, output 128K; $ 2 / 0.2 / 10 / 10 (2026-12-01)`` for ``agenthub models``."""
    prices = model.get("usd_per_1m") or {}
    shown = " / ".join("?" if prices.get(key) is None else "{:g}".format(prices[key]) for key in (
        "prompt_tokens", "cached_tokens", "thoughts_tokens", "response_tokens"))
    note = "; " + model["note"] if model.get("note") else ""
    return "{}: context {}, output {}; ${} ({}{})".format(
        model["model"], _tokens(model.get("context_window")), _tokens(model.get("max_output")), shown,
        model.get("taken"), note)


class Printer(object):
    """Renders UniEvents on a terminal as they arrive.

    Text is written as it streams; thinking goes on its own ``[thinking]`` lines
    (dimmed on a colour terminal); each complete tool call gets a ``[tool call]``
    line; media items are summarised; the stop event prints the usage line.

    With ``err``, only the answer text goes to ``out``: thinking, tool calls, media
    summaries and the usage line go to ``err`` (``agenthub chat``: stdout is the answer,
    ready for a pipe).  ``model`` prices each turn (``agenthub.cost``) on the usage line.
    """

    def __init__(self, out: TextIO, text_prefix: str = "", indent: str = "", color: Optional[bool] = None,
                 err: Optional[TextIO] = None, model: Optional[str] = None) -> None:
        self.out = out
        self.err = out if err is None else err
        self.text_prefix = text_prefix
        self.indent = indent
        self.model = model
        if color is None:
            color = bool(getattr(self.err, "isatty", lambda: False)()) and not os.environ.get("NO_COLOR")
        self.color = color
        self.mode = None  # type: Optional[str]  # "text", "thinking" or None (at the start of a line)

    def _style(self, code: str, text: str) -> str:
        return "\x1b[{}m{}\x1b[0m".format(code, text) if self.color else text

    def _line_end(self) -> None:
        if self.mode is not None:
            (self.out if self.mode == "text" else self.err).write("\n")
            self.mode = None

    def line(self, text: str) -> None:
        """A whole line of its own (after ending any text in progress), on ``err``."""
        self._line_end()
        self.out.flush()
        self.err.write(self.indent + text + "\n")
        self.err.flush()

    def event(self, event: Mapping[str, Any]) -> None:
        for item in event["content_items"]:
            self.item(item)
        if event["event_type"] == "stop":
            usage = event.get("usage_metadata")
            price = None
            if self.model is not None:
                from .registry import cost

                price = cost(self.model, usage)
            self.line(self._style("2", usage_line(event.get("finish_reason"), usage, price)))
        self.out.flush()
        if self.err is not self.out:
            self.err.flush()

    def item(self, item: Mapping[str, Any]) -> None:
        kind = item.get("type")
        if kind == "thinking":
            if not item.get("thinking"):
                return
            if self.mode != "thinking":
                self._line_end()
                self.out.flush()
                self.err.write(self.indent + self._style("2", "[thinking] "))
                self.mode = "thinking"
            self.err.write(self._style("2", item["thinking"]))
        elif kind == "text":
            if not item.get("text"):
                return
            if self.mode != "text":
                self._line_end()
                self.err.flush()
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
    from . import __version__

    parser = argparse.ArgumentParser(prog="agenthub", description="One streaming loop for every LLM provider.")
    parser.add_argument("--version", action="version", version="agenthub " + __version__)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.add_parser("demo", help="replay recorded streams through the real stack (no key, no network)",
                   description="Replay the project's recorded tool-calling conversations through AutoLLMClient, "
                               "the transport, the SSE framing and each protocol's parser. No key, no network.")
    chat = sub.add_parser("chat", help="stream an answer from MODEL (or talk with it)",
                          description="Stream one answer: the answer goes to stdout; thinking, tool calls, the usage "
                                      "line and the cost go to stderr. Without a prompt, a terminal on stdin starts an "
                                      "interactive conversation (/reset, /save TRACE_ID, Ctrl-C ends an answer, "
                                      "Ctrl-D leaves) and a pipe is read as the prompt. The key comes from the "
                                      "provider's environment variable (see `agenthub models`); a local server needs "
                                      "--client-type and --base-url.")
    chat.add_argument("model")
    chat.add_argument("prompt", nargs="?", help='the user message ("-" or none with a pipe: read standard input)')
    chat.add_argument("--system", help="system prompt")
    chat.add_argument("--attach", action="append", default=[], metavar="FILE",
                      help="add a file to the (first) message: images as inline data, text files as text; repeatable")
    chat.add_argument("--timeout", type=float, metavar="SECONDS",
                      help="connect timeout and longest silence between received bytes (default 10 s and 600 s)")
    chat.add_argument("--max-retries", type=int, metavar="N", help="retries before the first event (default 2)")
    chat.add_argument("--continue", dest="continue_trace", metavar="TRACE_ID",
                      help="load a saved trace (under $AGENTHUB_CACHE_DIR) and go on with its conversation; "
                           "the trace is updated unless --trace-id names another")
    chat.add_argument("--max-tokens", type=int, metavar="N")
    chat.add_argument("--temperature", type=float)
    chat.add_argument("--thinking", choices=LEVELS, help="thinking level (clamped to what the model supports)")
    chat.add_argument("--client-type", help="protocol or preset (openai-chat, anthropic, vllm, ollama, ...)")
    chat.add_argument("--base-url", help="endpoint URL; a non-loopback one needs --api-key-env")
    chat.add_argument("--api-key-env", metavar="NAME", help="read the key from the environment variable NAME")
    chat.add_argument("--trace-id", help="save the conversation as a trace (under $AGENTHUB_CACHE_DIR)")
    chat.add_argument("--json", action="store_true", help="print raw UniEvents, one JSON object per line")
    chat.add_argument("--background", action="store_true",
                      help="OpenAI Responses / Gemini Interactions: run the answer server-side and resume it after "
                           "a broken connection (the response is stored by the provider)")
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
                return _trace_show(args.file)
            parser.parse_args(["trace", "--help"])
    except AgentHubError as exc:
        sys.stdout.flush()
        print("error: {}: {}".format(type(exc).__name__, _cli_terms(str(exc))), file=sys.stderr)
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
        for model in row.get("models") or ():
            out.write("    {}\n".format(model_line(model)))
    if any(row.get("models") for row in rows):
        out.write("\nPrices: USD per 1M tokens of each usage bucket (prompt / cached / thinking / response), "
                  "list prices as taken on the date shown; ? where unknown.\n")
    out.write("\nAny other model: --client-type PROTOCOL (openai-chat, openai-responses, anthropic, gemini) "
              "or a preset "
              "({}), with --base-url.\n".format(", ".join(r["presets"][0] for r in rows if r["presets"])))
    return 0


def _chat(args: Any, out: TextIO, err: Optional[TextIO] = None, stdin: Optional[TextIO] = None) -> int:
    from .errors import ConfigError

    err = sys.stderr if err is None else err
    stdin = sys.stdin if stdin is None else stdin
    client = _chat_client(args)
    config = _chat_config(args)
    history = []  # type: List[Any]
    if args.continue_trace:
        history = _load_conversation(args.continue_trace)
        config.setdefault("trace_id", args.continue_trace)
    attachments = [_attachment(path) for path in args.attach]
    if args.prompt is None and _isatty(stdin):
        return _interactive(client, args, config, history, attachments, out, err, stdin)
    prompt = stdin.read() if args.prompt in (None, "-") else args.prompt
    if not prompt.strip() and not attachments:
        raise ConfigError("the prompt is empty: pass it as an argument, or pipe it in")
    _turn(client, args, config, history, _user_message(prompt, attachments), out, err)
    return 0


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def _chat_client(args: Any) -> Any:
    from .client import AutoLLMClient
    from .errors import ConfigError

    api_key = None
    if args.api_key_env:
        api_key = os.environ.get(args.api_key_env)
        if not api_key:
            raise ConfigError("${} is not set".format(args.api_key_env))
    options = {}  # type: Dict[str, Any]
    if args.timeout is not None:
        if not args.timeout > 0:
            raise ConfigError("--timeout must be a positive number of seconds")
        options["timeout"] = args.timeout
    if args.max_retries is not None:
        if args.max_retries < 0:
            raise ConfigError("--max-retries must be 0 or more")
        options["max_retries"] = args.max_retries
    return AutoLLMClient(args.model, api_key=api_key, base_url=args.base_url, client_type=args.client_type, **options)


def _chat_config(args: Any) -> Dict[str, Any]:
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
    if getattr(args, "background", False):
        config["background"] = True
    return config


def _load_conversation(trace_id: str) -> List[Any]:
    from .errors import ConfigError
    from .tracer import load_trace, trace_paths
    from .validate import check_messages

    path = trace_paths(trace_id)["json"]
    if not os.path.isfile(path):
        raise ConfigError("--continue {}: no saved trace at {} (traces live under $AGENTHUB_CACHE_DIR, "
                          "default ./cache)".format(trace_id, path))
    try:
        history = list(load_trace(path).get("history") or [])
        if history:
            check_messages(history)
    except (OSError, ValueError) as exc:  # ConfigError is a ValueError too
        raise ConfigError("--continue {}: {} is not a usable trace: {}".format(trace_id, path, exc)) from None
    return history


def _attachment(path: str) -> Dict[str, Any]:
    """--attach FILE -> a content item: images (and other binary files) as inline_data, text as text."""
    from .errors import ConfigError

    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        raise ConfigError("--attach {}: {}".format(path, exc.strerror or exc)) from None
    mime_type = mimetypes.guess_type(path)[0] or ""
    if not mime_type.startswith(("image/", "audio/", "video/", "application/pdf")):
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            text = None
        if text is not None:
            return {"type": "text", "text": "[file {}]\n{}".format(os.path.basename(path), text)}
    return {"type": "inline_data", "data": data, "mime_type": mime_type or "application/octet-stream"}


def _user_message(text: str, attachments: List[Dict[str, Any]]) -> Dict[str, Any]:
    items = [{"type": "text", "text": text}] if text.strip() else []
    return {"role": "user", "content_items": list(attachments) + items}


def _turn(client: Any, args: Any, config: Dict[str, Any], history: List[Any], message: Dict[str, Any],
          out: TextIO, err: TextIO) -> Optional[Any]:
    """One turn after ``history``: streams it, returns the collected answer (None when it was stopped)."""
    from .errors import TransportError
    from .stream import collect
    from .tracer import to_jsonable

    events = []  # type: List[Any]
    printer = Printer(out, err=err, model=args.model)
    stream = client.streaming_response(history + [message], config)
    previous = _on_interrupt(stream)
    try:
        for event in stream:
            events.append(event)
            if args.json:
                out.write(json.dumps(to_jsonable(event), ensure_ascii=False) + "\n")
                out.flush()
            else:
                printer.event(event)
    except TransportError as exc:
        if not exc.aborted:
            raise
        printer.line("[stopped]")
        return None
    finally:
        _restore_interrupt(previous)
        stream.close()
    return collect(events)


_NO_HANDLER = object()


def _on_interrupt(stream: Any) -> Any:
    """Ctrl-C while an answer streams ends that answer (stream.abort), not the program."""
    try:
        return signal.signal(signal.SIGINT, lambda signum, frame: stream.abort())
    except ValueError:  # not the main thread: Ctrl-C keeps its usual meaning
        return _NO_HANDLER


def _restore_interrupt(previous: Any) -> None:
    if previous is not _NO_HANDLER:
        signal.signal(signal.SIGINT, previous)


_HELP = ("commands: /reset forgets the conversation, /save TRACE_ID saves it as a trace, /help, /exit; "
         "Ctrl-C ends the current answer, Ctrl-D leaves")


def _interactive(client: Any, args: Any, config: Dict[str, Any], history: List[Any], attachments: List[Any],
                 out: TextIO, err: TextIO, stdin: TextIO) -> int:
    from .errors import AgentHubError
    from .tracer import save_trace

    err.write("agenthub chat with {} ({}); {}\n".format(args.model, client.client_type, _HELP))
    if history:
        err.write("continuing a conversation of {} messages\n".format(len(history)))
    while True:
        err.write("you> ")
        err.flush()
        try:
            line = stdin.readline()
        except KeyboardInterrupt:  # Ctrl-C at the prompt: a fresh prompt
            err.write("\n")
            continue
        if not line:  # Ctrl-D
            err.write("\n")
            return 0
        text = line.rstrip("\n")
        command = text.strip()
        if not command and not attachments:
            continue
        if command in ("/exit", "/quit"):
            return 0
        if command == "/help":
            err.write(_HELP + "\n")
            continue
        if command == "/reset":
            history = []
            err.write("[conversation reset]\n")
            continue
        if command.startswith("/save"):
            trace_id = command[len("/save"):].strip()
            if not trace_id:
                err.write("usage: /save TRACE_ID\n")
                continue
            try:
                paths = save_trace(trace_id, args.model, history, config)
            except (AgentHubError, OSError) as exc:
                err.write("error: {}\n".format(_cli_terms(str(exc))))
                continue
            err.write("[saved {} messages to {}]\n".format(len(history), paths["json"]))
            continue
        if command.startswith("/"):
            err.write("unknown command {}; {}\n".format(command.split()[0], _HELP))
            continue
        message = _user_message(text, attachments)
        attachments = []  # files go with the first message only
        try:
            answer = _turn(client, args, config, history, message, out, err)
        except AgentHubError as exc:
            out.flush()
            err.write("error: {}: {}\n".format(type(exc).__name__, _cli_terms(str(exc))))
            continue
        if answer is not None:
            history = history + [message, answer]


#: library wording -> command-line wording, for error messages (flags and variables, not arguments)
_CLI_TERMS = (
    (re.compile(r"AutoLLMClient\((['\"])(.*?)\1, client_type='openai-chat', base_url='([^']*)'\)"),
     r"agenthub chat \2 --client-type openai-chat --base-url \3"),
    (re.compile(r"pass api_key= or set ([A-Z0-9_]+(?: or [A-Z0-9_]+)*)"),
     r"set \1, or pass --api-key-env NAME (the variable holding the key)"),
    (re.compile(r"\bpass api_key="), "pass --api-key-env NAME (the variable holding the key)"),
    (re.compile(r"\bapi_key is required with base_url\b"), "--api-key-env NAME is required with --base-url"),
    (re.compile(r"\bapi_key\b=?"), "--api-key-env"),
    (re.compile(r"\bclient_type\b=?"), "--client-type"),
    (re.compile(r"\bbase_url\b=?"), "--base-url"),
    (re.compile(r"\bmax_retries\b"), "--max-retries"),
    (re.compile(r"\bconfig\['(max_tokens|temperature|system_prompt|thinking_level|trace_id)'\]"), r"\1"),
)
_FLAGS = {"max_tokens": "--max-tokens", "temperature": "--temperature", "system_prompt": "--system",
          "thinking_level": "--thinking", "trace_id": "--trace-id"}


def _cli_terms(message: str) -> str:
    for pattern, replacement in _CLI_TERMS:
        message = pattern.sub(replacement, message)
    for key, flag in _FLAGS.items():
        message = re.sub(r"(?<![\w-])" + key + r"\b", flag, message)
    return message


def _trace_show(path: str) -> int:
    from .tracer import load_trace, render_text

    if not os.path.isfile(path):
        print("error: no trace file at {}".format(path), file=sys.stderr)
        return 1
    try:
        document = load_trace(path)
        text = render_text(document.get("history") or [], document.get("config") or {})
    except Exception as exc:  # a broken file, whatever broke in it: name the file, not a traceback
        reason = str(exc) if isinstance(exc, (OSError, ValueError)) else type(exc).__name__
        if reason.startswith(path):  # the reason names the file already
            print("error: {}".format(reason), file=sys.stderr)
        else:
            print("error: {} is not a readable agenthub trace: {}".format(path, reason), file=sys.stderr)
        return 1
    sys.stdout.write(text)
    return 0


def _trace_view(args: Any) -> int:
    from .tracer import cache_dir
    from .viewer import serve

    folder = args.dir or cache_dir()
    if not os.path.isdir(folder):
        print("error: no trace folder at {}".format(os.path.abspath(folder)), file=sys.stderr)
        return 1
    try:
        server, url = serve(folder, args.host, args.port)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            print("error: port {} on {} is already in use: pass another --port (--port 0 picks a free one)".format(
                args.port, args.host), file=sys.stderr)
        else:
            print("error: cannot serve on {}:{}: {}".format(args.host, args.port, exc.strerror or exc), file=sys.stderr)
        return 1
    print("agenthub trace viewer: {} (serving {}; Ctrl+C stops)".format(url, os.path.abspath(folder)))
    sys.stdout.flush()
    if args.open:
        import webbrowser

        webbrowser.open(url)
    return _serve_until_interrupted(server)


def _serve_until_interrupted(server: Any) -> int:
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


def _serve(args: Any) -> int:
    from .errors import AgentHubError
    from .server import serve

    try:
        server, url = serve(args.config, args.host, args.port)
    except AgentHubError as exc:  # about the config file: its own words (api_keys, base_url), not flags
        print("error: {}: {}".format(type(exc).__name__, exc), file=sys.stderr)
        return 1
    except OSError as exc:
        print("error: cannot serve on {}:{}: {}".format(args.host, args.port, exc.strerror or exc), file=sys.stderr)
        return 1
    print(url)  # the first line: whoever started us reads the port here
    sys.stdout.flush()
    return _serve_until_interrupted(server)


if __name__ == "__main__":
    sys.exit(main())
