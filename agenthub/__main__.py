"""Command line: ``agenthub`` (also ``python -m agenthub``).

::

    agenthub demo                          replay recorded streams: no key, no network
    agenthub chat MODEL "prompt"           stream one answer: the answer on stdout; thinking, tool calls,
                                           usage and cost on stderr
    agenthub chat MODEL                    an interactive conversation (stdin a terminal), or the prompt
                                           read from a pipe
    agenthub chat MODEL "prompt" --json    the raw UniEvents, one JSON object a line (bytes as base64)
    agenthub models [--json]               the routing registry
    agenthub models --provider P|--supports X   the model catalog: limits, capabilities, prices
    agenthub trace view DIR                browse saved traces in a web page (http.server, loopback)
    agenthub trace show FILE               print a saved trace as text
    agenthub serve --config FILE           serve the config's models over HTTP (SSE of UniEvents)
    agenthub batch run IN.jsonl -o OUT     run a job file (resumable, rate limited; see agenthub.jobs.cli)
    agenthub batch submit|status|fetch|cancel   a job file on the providers' batch engines (agenthub.jobs.batch_cli)
    agenthub mcp tools TARGET...           an MCP server's tools (TARGET: a URL, or the command of a stdio server)
    agenthub mcp call TARGET... TOOL JSON  call one of them; exit status 1 when the tool reports an error
    agenthub runs list|show|resume|forget --journal STORE   journaled runs (agenthub.apps.runs_cli)

Exit status: 0 done, 1 an agenthub error (printed on stderr, never with a key), 2 bad
usage, 130 interrupted; ``batch run`` also 3: finished, some rows have error rows (the
batch engine actions: agenthub.jobs.batch_cli).
"""

import argparse
import errno
import os
import pathlib
import sys
from typing import Any, Callable, Dict, List, Optional, Tuple
from urllib.parse import urlencode

from .apps.chat import LATEST, cli_terms as _cli_terms, error_line
from .apps.terminal import Printer, model_line, safe, standard_streams, usage_line
from .types import ThinkingLevel

__all__ = ["main", "Printer", "usage_line", "model_line"]

LEVELS = tuple(level.value for level in ThinkingLevel)  # the CLI offers every ThinkingLevel


def add_chat_arguments(chat: argparse.ArgumentParser) -> None:
    """The arguments of ``agenthub chat`` (the subcommand's help, and the parser ``main`` reads them with:
    argparse's intermixed parsing, so options may stand before or after the prompt)."""
    chat.add_argument("model")
    chat.add_argument("prompt", nargs="?", help='the user message ("-" or none with a pipe: read standard input)')
    chat.add_argument("-s", "--system", help="system prompt")
    chat.add_argument("--attach", action="append", default=[], metavar="FILE",
                      help="add a file to the (first) message: images as inline data, text files as text; repeatable")
    chat.add_argument("--timeout", type=float, metavar="SECONDS",
                      help="connect timeout and longest silence between received bytes (default 10 s and 600 s)")
    chat.add_argument("--max-retries", type=int, metavar="N", help="retries before the first event (default 2)")
    chat.add_argument("-c", dest="continue_trace", action="store_const", const=LATEST,
                      help="go on with the latest conversation of the conversation log")
    chat.add_argument("--continue", dest="continue_trace", metavar="ID", nargs="?", const=LATEST,
                      help="go on with a conversation: alone, as -c; with ID, a logged conversation (c_...) or a "
                           "saved trace (under $AGENTHUB_CACHE_DIR, which is then updated unless --trace-id names "
                           "another)")
    chat.add_argument("-o", "--option", dest="options", nargs=2, action="append", default=[], metavar=("KEY", "VALUE"),
                      help="any config key (UniConfig), VALUE as JSON when it parses (-o top_p 0.9, -o stop '[\"END\"]'), "
                           "else as text; repeatable")
    chat.add_argument("--output", metavar="FILE",
                      help="write the answer to FILE instead of standard output (as batch run's -o)")
    chat.add_argument("--schema", metavar="JSON|FILE|FIELDS",
                      help="typed output: a JSON Schema (inline JSON or a file), or fields such as 'name str, age int, "
                           "tags list[str], nick str?'; the answer is validated (re-asked when wrong) and printed "
                           "as JSON")
    chat.add_argument("--max-tokens", type=int, metavar="N")
    chat.add_argument("--temperature", type=float)
    chat.add_argument("--thinking", choices=LEVELS, help="thinking level (clamped to what the model supports)")
    chat.add_argument("--client-type", help="protocol or preset (openai-chat, anthropic, vllm, ollama, ...)")
    chat.add_argument("--base-url", help="endpoint URL; a non-loopback one needs --api-key-env")
    chat.add_argument("--api-key-env", metavar="NAME", help="read the key from the environment variable NAME")
    chat.add_argument("--anthropic-version", metavar="VERSION",
                      help="Claude over the Anthropic Messages API: pin its API version (2026-10-21, the default, or "
                           "2023-06-01, which still takes temperature, top_p and top_k)")
    chat.add_argument("--fallback", action="append", default=[], metavar="MODEL",
                      help="a model to answer when MODEL's provider fails before answering; repeatable, tried in order")
    chat.add_argument("--trace-id", help="save the conversation as a trace (under $AGENTHUB_CACHE_DIR)")
    chat.add_argument("--no-log", action="store_true", help="keep this conversation out of the conversation log")
    chat.add_argument("--json", action="store_true", help="print raw UniEvents, one JSON object per line")
    chat.add_argument("--budget", type=float, metavar="USD",
                      help="spend at most USD at list prices (a turn that could exceed it is not sent)")
    chat.add_argument("--cache", metavar="DIR|URL",
                      help="answer a request sent before from this response cache (a directory, sqlite:///path or "
                           "redis://host:port/db), and store new answers there")
    chat.add_argument("--otel", action="store_true",
                      help="OpenTelemetry GenAI spans and metrics, run under opentelemetry-instrument (the extra .[otel]): "
                           "opentelemetry-instrument agenthub chat MODEL PROMPT --otel; its SDK reads the OTEL_* "
                           "variables")
    chat.add_argument("--background", action="store_true",
                      help="OpenAI Responses / Gemini Interactions: run the answer server-side and resume it after "
                           "a broken connection (the response is stored by the provider)")
    chat.add_argument("--tool", action="append", default=[], metavar="MODULE:FUNCTION",
                      help="a Python function the model may call (module:function or path/to/file.py:function); "
                           "repeatable. Each call is shown and asked for (y/n/edit) unless --yes")
    chat.add_argument("--mcp", action="append", default=[], metavar="[NAME=]URL_OR_COMMAND",
                      help="an MCP server whose tools the model may call: a URL (Streamable HTTP) or the command "
                           "that starts it (one quoted string); repeatable. NAME= prefixes its tools (NAME__tool: "
                           "two servers offering one tool name). Calls are asked for as with --tool")
    chat.add_argument("--max-turns", type=int, default=None, metavar="N",
                      help="with --tool/--mcp: model turns at most (default 10)")
    chat.add_argument("--yes", action="store_true", help="with --tool/--mcp: run every call without asking")
    chat.add_argument("--journal", metavar="STORE",
                      help="with --tool/--mcp and --run-id: journal the tool run in STORE (sqlite:///path, "
                           "redis://host:port/db) as it goes; the same command again resumes it after a crash "
                           "(see agenthub runs)")
    chat.add_argument("--run-id", metavar="ID", help="with --journal: the run's name in the journal")
    chat.add_argument("--journal-ttl", type=float, metavar="SECONDS",
                      help="with --journal: forget the run's journal SECONDS after its last write (default: kept "
                           "until `agenthub runs forget`)")
    chat.add_argument("--journal-wait", type=float, metavar="SECONDS",
                      help="with --journal: wait up to SECONDS for a live worker that owns the run (default: refused)")


def _port(text: str) -> int:
    """An argparse ``type=``: a TCP port, 0 (a free one) to 65535 (past it, bind() raised OverflowError)."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("{!r} is not a port number".format(text)) from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError("a port is 0 to 65535 (got {})".format(text))
    return port


def _parser() -> argparse.ArgumentParser:
    from . import __version__
    from .jobs.batch_cli import positive as _positive

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
                                      "--client-type and --base-url. Every turn is kept in the conversation log "
                                      "(`agenthub logs`; --no-log or AGENTHUB_LOG_PROMPTS=0 turn it off). Options may "
                                      "stand before or after the prompt.")
    add_chat_arguments(chat)
    models = sub.add_parser("models", help="list the routing table, or the model catalog (--json, --provider, "
                                           "--supports)")
    models.add_argument("--json", action="store_true", help="one JSON array of rows: the catalog's models (with "
                                                            "--routes: the routing table's rows)")
    models.add_argument("--routes", action="store_true", help="the routing table (the default without --json): "
                                                              "model names, protocol, endpoint, key variable")
    models.add_argument("--provider", help="list the catalog's models of one provider (openai, anthropic, google, "
                                           "bedrock, deepseek, zai, moonshot, dashscope, minimax, openrouter)")
    models.add_argument("--supports", action="append", choices=("tools", "vision", "reasoning", "json_schema"),
                        help="list the catalog's models that support this (repeatable; json_schema: a "
                             "response_format json_schema can be sent on the model's own route)")
    trace = sub.add_parser("trace", help="saved traces: view them in a browser, or print one")
    trace_sub = trace.add_subparsers(dest="trace_command", metavar="ACTION")
    view = trace_sub.add_parser("view", help="serve a viewer of the traces under DIR (standard library http.server)")
    view.add_argument("dir", nargs="?", help="trace folder (default: $AGENTHUB_CACHE_DIR or ./cache)")
    view.add_argument("--host", default="127.0.0.1",
                      help="address to listen on (default 127.0.0.1); another than loopback needs --key-env")
    view.add_argument("--key-env", metavar="NAME",
                      help="the viewer's key is in the environment variable NAME (open the page once with ?key=...)")
    view.add_argument("--port", type=_port, default=8765, help="0 picks a free port (default 8765)")
    view.add_argument("--open", action="store_true", help="open the page in a web browser (with --key-env: a one-time "
                                                          "code in its address, never the key)")
    show = trace_sub.add_parser("show", help="print a saved trace (.json) as text")
    show.add_argument("file")
    logs = sub.add_parser("logs", help="the conversation log of agenthub chat: list, show or export conversations",
                          description="The conversation log (SQLite, $AGENTHUB_HOME/logs.db or the user's data "
                                      "directory): every agenthub chat turn, without keys or headers.")
    logs_sub = logs.add_subparsers(dest="logs_command", metavar="ACTION")
    listing = logs_sub.add_parser("list", help="the latest conversations (the default)")
    listing.add_argument("-n", "--count", type=_positive(int, "a number"), default=20, help="how many (default 20)")
    listing.add_argument("--json", action="store_true", help="one JSON array")
    shown = logs_sub.add_parser("show", help="one conversation's turns as text (default: the latest)")
    shown.add_argument("id", nargs="?")
    exported = logs_sub.add_parser("export", help="one conversation as JSON (its messages) or Markdown")
    exported.add_argument("id", nargs="?")
    exported.add_argument("--markdown", action="store_true", help="Markdown instead of JSON")
    logs_sub.add_parser("path", help="print where the log is")
    serve = sub.add_parser("serve", help="serve the models of a config file over HTTP (the uniform stream, SSE)",
                           description="Serve the models of a JSON config over HTTP: GET /v1/models, POST /v1/stream "
                                       "(UniEvents as server-sent events), the playground at /. The first line on "
                                       "stdout is the URL. A non-loopback --host needs api_keys in the config.")
    serve.add_argument("--config", required=True, metavar="FILE", help="the server config (JSON)")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=_port, default=8787, help="0 picks a free port (default 8787)")
    from .jobs.cli import add_parser as add_batch
    from .apps.mcp_cli import add_parser as add_mcp
    from .apps.runs_cli import add_parser as add_runs

    add_batch(sub)
    add_mcp(sub)
    runs = add_runs(sub)
    _SUBPARSERS.clear()
    _SUBPARSERS.update(sub.choices)
    _NESTED.clear()
    _NESTED.update(trace=("trace_command", trace_sub.choices), logs=("logs_command", logs_sub.choices),
                   runs=("runs_command", runs.choices))
    return parser


#: what `agenthub chat ... -o FILE` is told (batch run's -o is a file; chat's is a config option)
O_HINT = ("-o is a config option (-o KEY VALUE, e.g. -o top_p 0.9); to write the answer to a file use --output FILE "
          "(batch run's -o is its output file)")


class _ChatParser(argparse.ArgumentParser):
    """``agenthub chat``'s parser: a lone ``-o FILE`` (batch run's habit) gets a hint under argparse's error."""

    def error(self, message: str) -> Any:
        if "-o/--option" in message:
            message = "{}\n{}".format(message, O_HINT)
        return super(_ChatParser, self).error(message)


#: the subcommands' parsers, by name (their usage is what an unknown flag prints)
_SUBPARSERS = {}  # type: Dict[str, argparse.ArgumentParser]
#: command -> (the namespace attribute naming its action, the actions' parsers)
_NESTED = {}  # type: Dict[str, Any]


def _parse(parser: argparse.ArgumentParser, argv: List[str]) -> Any:
    """The command line read: ``chat``'s options may stand before or after its prompt (argparse's
    intermixed parsing, on a parser of its own); an unknown flag prints the usage of its subcommand."""
    command = next((arg for arg in argv if not arg.startswith("-")), None)
    if command == "chat" and not {"-h", "--help"} & set(argv[:argv.index("chat")]):
        chat = _ChatParser(prog="agenthub chat", description=_SUBPARSERS["chat"].description)
        add_chat_arguments(chat)
        args = chat.parse_intermixed_args(argv[argv.index("chat") + 1:])
        args.command = "chat"
        return args
    args, extras = parser.parse_known_args(argv)
    if extras:
        owner = _SUBPARSERS.get(args.command or "", parser)
        dest, nested = _NESTED.get(args.command or "", (None, {}))
        if dest is not None and getattr(args, dest, None) in nested:
            owner = nested[getattr(args, dest)]
        owner.error("unrecognized arguments: {}".format(" ".join(extras)))
    return args


def main(argv: Optional[List[str]] = None) -> int:
    standard_streams()  # a closed stdin/stdout/stderr, an ASCII-only stdout: no traceback, no lost answer
    parser = _parser()
    args = _parse(parser, sys.argv[1:] if argv is None else list(argv))
    from .errors import AgentHubError

    try:
        command = COMMANDS.get(args.command or "")
        if args.command == "batch":
            from .jobs.cli import main as batch

            return batch(args, parser)
        if args.command == "trace":
            command = TRACE_COMMANDS.get(args.trace_command or "")
            if command is None:
                parser.parse_args(["trace", "--help"])
        if command is not None:
            return command(args)
    except AgentHubError as exc:
        sys.stdout.flush()
        print(error_line(exc), file=sys.stderr)
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
        print(safe("error: {}: {}".format(type(exc).__name__, exc)), file=sys.stderr)
        return 1
    parser.print_help()
    return 2


def _demo(args: Any) -> int:
    from .apps.demo import run

    run(sys.stdout)
    return 0


def _models(args: Any) -> int:
    from .apps.terminal import print_models

    return print_models(sys.stdout, args.json, args.provider, args.supports, routes=args.routes)


def _chat(args: Any) -> int:
    from .apps.chat import run

    if getattr(args, "output", None):  # --output FILE: the answer there, the rest on stderr as usual
        from .apps.chat import INTERRUPTED, AnswerFile

        out = AnswerFile(args.output)  # type: Any  # (a TextIO for run: write, flush, isatty)
        ended = "did not finish"
        restore = _ended_by_signals()
        try:
            status = run(args, out)
            if status == 0:
                out.commit()  # (the whole answer replaces FILE; an empty answer too: FILE is empty, as asked)
            elif status == INTERRUPTED:
                ended = "was stopped"
            return status
        except (KeyboardInterrupt, _Ended):
            ended = "was stopped"
            raise
        finally:
            restore()
            if out.close():  # stopped or failed mid-answer: FILE as it was, what was begun dropped
                from .apps.terminal import safe

                print(safe("[--output {}: left as it was (the answer {})]".format(args.output, ended)), file=sys.stderr)
    return run(args, sys.stdout)


class _Ended(SystemExit):
    """SIGTERM or SIGHUP while ``chat --output`` runs: the exit (128 + the signal) unwinds the command, so the
    partial answer beside FILE is removed (the default action ended the process where it stood and left it)."""


def _ended_by_signals() -> Callable[[], None]:
    """SIGTERM and SIGHUP raise ``_Ended`` till the returned function is called (only where they have their
    default action, from the main thread); it puts back what was there."""
    import signal
    import threading

    def ended(signum: int, frame: Any) -> None:
        raise _Ended(128 + signum)

    previous = []  # type: List[Tuple[int, Any]]
    if threading.current_thread() is threading.main_thread():
        for name in ("SIGTERM", "SIGHUP"):
            number = getattr(signal, name, None)
            if number is not None and signal.getsignal(number) is signal.SIG_DFL:
                previous.append((number, signal.signal(number, ended)))

    def restore() -> None:
        for number, handler in previous:
            signal.signal(number, handler)

    return restore


def _trace_show(args: Any) -> int:
    path = args.file
    from .tracer import load_trace, render_text

    if not os.path.isfile(path):
        print("error: no trace file at {}".format(path), file=sys.stderr)
        return 1
    try:
        document = load_trace(path)
        text = render_text(document.get("history") or [], document.get("config") or {}, document.get("tool_calls"))
    except Exception as exc:  # a broken file, whatever broke in it: name the file, not a traceback
        reason = str(exc) if isinstance(exc, (OSError, ValueError)) else type(exc).__name__
        if reason.startswith(path):  # the reason names the file already
            print("error: {}".format(reason), file=sys.stderr)
        else:
            print("error: {} is not a readable agenthub trace: {}".format(path, reason), file=sys.stderr)
        return 1
    from .apps.terminal import is_terminal, printable

    sys.stdout.write(printable(text) if is_terminal(sys.stdout) else text)  # (a terminal obeys no recorded escape)
    return 0


def _trace_view(args: Any) -> int:
    from .tracer import cache_dir
    from .apps.viewer import one_time_code, serve

    folder = args.dir or cache_dir()
    if not os.path.isdir(folder):
        print("error: no trace folder at {}".format(os.path.abspath(folder)), file=sys.stderr)
        return 1
    key = None
    if args.key_env:
        from .errors import ConfigError

        key = os.environ.get(args.key_env)
        if not key:
            raise ConfigError("${} is not set".format(args.key_env))
    try:
        server, url = serve(folder, args.host, args.port, key=key)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            print("error: port {} on {} is already in use: pass another --port (--port 0 picks a free one)".format(
                args.port, args.host), file=sys.stderr)
        else:
            print("error: cannot serve on {}:{}: {}".format(args.host, args.port, exc.strerror or exc), file=sys.stderr)
        return 1
    print("agenthub trace viewer: {} (serving {}; Ctrl+C stops){}".format(
        url, os.path.abspath(folder), "; open it once as {}?key=<${}>".format(url, args.key_env) if key else ""))
    sys.stdout.flush()
    opener = None
    if args.open:
        import webbrowser

        if key:
            # neither the key nor a code on the browser's command line (``ps`` shows it to every user of the
            # machine): a code taken once within a minute, in a page only this user can read, that sends it on
            opener = _opener_page(url + "?" + urlencode({"code": one_time_code(server)}))
            webbrowser.open(pathlib.Path(opener).as_uri())
        else:
            webbrowser.open(url)
    try:
        return _serve_until_interrupted(server)
    finally:
        if opener is not None:
            try:
                os.remove(opener)
            except OSError:
                pass


def _opener_page(target: str) -> str:
    """A page (a file of mode 0600) that takes a browser to ``target``: its path, which a command line may show."""
    import html
    import tempfile

    handle, path = tempfile.mkstemp(prefix="agenthub-viewer-", suffix=".html")  # (mode 0600)
    shown = html.escape(target, quote=True)
    with os.fdopen(handle, "w", encoding="utf-8") as page:
        page.write('<!doctype html><meta charset="utf-8"><meta http-equiv="refresh" content="0;url={0}">'
                   '<title>agenthub trace viewer</title><a href="{0}">Open the trace viewer</a>\n'.format(shown))
    return path


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
    from .apps.server import serve

    try:
        server, url = serve(args.config, args.host, args.port)
    except AgentHubError as exc:  # about the config file: its own words (api_keys, base_url), not flags
        print(safe("error: {}: {}".format(type(exc).__name__, exc)), file=sys.stderr)
        return 1
    except OSError as exc:
        print("error: cannot serve on {}:{}: {}".format(args.host, args.port, exc.strerror or exc), file=sys.stderr)
        return 1
    print(url)  # the first line: whoever started us reads the port here
    sys.stdout.flush()
    _serve_log()
    return _serve_until_interrupted(server)


def _serve_log() -> None:
    """Without AGENTHUB_LOG, the server's warnings and errors (an upstream that failed: a 502, a 504, with
    the upstream's address) still reach stderr; AGENTHUB_LOG=info|debug shows more through its own handler."""
    import logging

    if os.environ.get("AGENTHUB_LOG"):
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    handler.setLevel(logging.WARNING)
    logging.getLogger("agenthub.server").addHandler(handler)


#: subcommand -> its function of the parsed arguments (an exit status); a new subcommand adds its parser
#: in ``_parser`` and one row here
def _logs(args: Any) -> int:
    from .apps.conversations import run_logs

    return run_logs(args, sys.stdout)


def _mcp(args: Any) -> int:
    from .apps.mcp_cli import run

    if not args.mcp_command:
        _SUBPARSERS["mcp"].print_help()
        return 2
    return run(args, sys.stdout)


def _runs(args: Any) -> int:
    from .apps.runs_cli import run

    if not args.runs_command:
        _SUBPARSERS["runs"].print_help()
        return 2
    return run(args, sys.stdout)


COMMANDS = {"demo": _demo, "models": _models, "chat": _chat, "serve": _serve, "logs": _logs, "mcp": _mcp,
            "runs": _runs}  # type: Dict[str, Callable[[Any], int]]
TRACE_COMMANDS = {"view": _trace_view, "show": _trace_show}  # type: Dict[str, Callable[[Any], int]]


if __name__ == "__main__":
    sys.exit(main())
