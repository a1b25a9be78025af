"""``agenthub chat``: one streamed answer (the answer on stdout, the rest on stderr), or an interactive
conversation on a terminal.  ``run(args)`` takes the parsed command line (``agenthub.__main__``)."""

import json
import logging
import mimetypes
import os
import re
import shutil
import signal
import stat
import sys
from typing import Any, Dict, List, Optional, Set, TextIO

from .._controls import json_for
from ..stream import surrogates_escaped
from .terminal import Printer, _dollars, safe
from .._jsondepth import loads as _json_loads

__all__ = ["run", "cli_terms", "error_line", "LATEST", "concise_schema", "INTERRUPTED", "AnswerFile"]

#: the exit status of a command Ctrl-C ended (128 + SIGINT, as a shell reports it)
INTERRUPTED = 130

#: ``chat -c`` / ``--continue`` alone: the latest conversation of the log
LATEST = "\x00latest"


def run(args: Any, out: TextIO, err: Optional[TextIO] = None, stdin: Optional[TextIO] = None) -> int:
    if not getattr(args, "otel", False):
        return _run(args, out, err, stdin)
    # --otel: GenAI spans and metrics with the SDK opentelemetry-instrument configured (else a ConfigError saying so)
    from ..telemetry import start_from_environment

    stop = start_from_environment()
    try:
        return _run(args, out, err, stdin)
    finally:
        stop()


class AnswerFile(object):
    """``--output FILE``: checked before anything is sent (a folder, a missing folder, a file that cannot be
    written: a ConfigError).  The answer is written to a file beside FILE (``.NAME.XXXXXXXX.part``, created at
    the answer's first write) and renamed over FILE once the command succeeded (``commit``); a command that fails
    or is stopped (Ctrl-C) leaves FILE as it was and removes the partial file (``close``).  FILE's permissions
    are kept, and so are its owner and group (else, when they cannot be given, it is written in place); a symbolic
    link is followed (its target is replaced, the link kept); a FILE that is no regular file (``/dev/null``, a
    named pipe), that has other hard links, whose folder cannot be written or that cannot be renamed over (a
    mount point of its own) is written in place."""

    def __init__(self, path: str) -> None:
        from ..errors import ConfigError

        self.path = path
        self._file = None  # type: Optional[TextIO]
        self._part = None  # type: Optional[str]  # the partial file beside the target, once created
        self._written = False
        folder = os.path.dirname(os.path.abspath(path))
        if os.path.isdir(path):
            raise ConfigError("--output {}: it is a folder".format(path))
        if not os.path.isdir(folder):
            raise ConfigError("--output {}: there is no folder {}".format(path, folder))
        if not os.access(path if os.path.exists(path) else folder, os.W_OK):
            raise ConfigError("--output {}: it cannot be written (permission denied)".format(path))
        self._target = os.path.realpath(path)  # (a link's target is replaced, not the link)
        try:
            found = os.stat(self._target)  # type: Optional[os.stat_result]
        except OSError:  # (not there yet: made as open() makes a file, the umask applied)
            found = None
            made_in = os.path.dirname(self._target)  # (a dangling link's target: its folder, not the link's)
            if not os.path.isdir(made_in):
                raise ConfigError("--output {}: it is a link to {}, and there is no folder {}".format(
                    path, self._target, made_in)) from None
            if not os.access(made_in, os.W_OK):
                raise ConfigError("--output {}: it is a link to {}, which cannot be written (permission "
                                  "denied)".format(path, self._target)) from None
        self._mode = None if found is None else stat.S_IMODE(found.st_mode)
        self._owner = None if found is None else (found.st_uid, found.st_gid)
        # (a hard-linked FILE too: a rename would part it from its other names)
        self._in_place = (found is not None and (not stat.S_ISREG(found.st_mode) or found.st_nlink > 1)) \
            or not os.access(os.path.dirname(self._target), os.W_OK)

    def _open(self) -> TextIO:
        if self._file is None:
            if self._in_place:
                self._file = open(self.path, "w", encoding="utf-8")
            else:
                folder, name = os.path.split(self._target)
                part = os.path.join(folder, ".{}.{}.part".format(name, os.urandom(4).hex()))
                # (FILE's own mode given once made: till then the owner's alone, so nobody opens the partial file
                # in between and reads an answer FILE's mode keeps from them)
                handle = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0),
                                 0o666 if self._mode is None else 0o600)
                self._part = part
                if self._mode is not None:
                    os.chmod(part, self._mode)
                if not self._owned_as_target(handle):  # (FILE is someone else's: written in place, theirs still)
                    os.close(handle)
                    os.remove(part)
                    self._part, self._in_place = None, True
                    return self._open()
                self._file = os.fdopen(handle, "w", encoding="utf-8")
        return self._file

    def _owned_as_target(self, handle: int) -> bool:
        """The partial file has FILE's owner and group (given to it when they differ: ``sudo agenthub chat
        --output ~/answer.txt`` replaced the user's file by root's); False when they cannot be given."""
        if self._owner is None or not hasattr(os, "fchown"):
            return True
        made = os.fstat(handle)
        if (made.st_uid, made.st_gid) == self._owner:
            return True
        try:
            os.fchown(handle, *self._owner)
        except OSError:
            return False
        if self._mode is not None:
            os.fchmod(handle, self._mode)  # (a chown clears the set-user-ID and set-group-ID bits)
        return True

    def write(self, text: str) -> int:
        self._written = self._written or bool(text)
        return self._open().write(text)

    def flush(self) -> None:
        if self._file is not None:
            self._file.flush()

    def isatty(self) -> bool:
        return False

    def commit(self) -> None:
        """The command succeeded: the answer (an empty one too) replaces FILE."""
        handle = self._open()
        handle.flush()
        if self._part is not None:
            os.fsync(handle.fileno())
        handle.close()
        if self._part is not None:
            try:
                os.replace(self._part, self._target)
            except OSError:  # (FILE a mount point of its own, EBUSY: a container's bind-mounted file) in place
                with open(self._part, "rb") as source, open(self.path, "wb") as target:
                    shutil.copyfileobj(source, target)
                os.remove(self._part)
            self._part = None

    def close(self) -> bool:
        """Closes the file; a partial file never committed is removed (FILE as it was).  True when an answer
        begun was so dropped."""
        if self._file is not None:
            self._file.close()
        if self._part is None:
            return False
        try:
            os.remove(self._part)
        except OSError:
            pass
        self._part = None
        return self._written


def _run(args: Any, out: TextIO, err: Optional[TextIO] = None, stdin: Optional[TextIO] = None) -> int:
    from ..errors import ConfigError

    err = sys.stderr if err is None else err
    stdin = sys.stdin if stdin is None else stdin
    client = _chat_client(args, err)
    config = _chat_config(args)
    args.output_schema = _schema(args.schema) if getattr(args, "schema", None) else None
    if args.output_schema is not None and (getattr(args, "tool", None) or getattr(args, "mcp", None)):
        raise ConfigError("--schema answers one turn with a value: it does not go with --tool or --mcp")
    _check_journal(args, stdin)
    _check_tool_flags(args)
    history = []  # type: List[Any]
    logged = _Logged(args, client)
    try:
        if args.continue_trace:
            history = _continued(args, config, logged)
            err.write(_continuing(args, config, logged, history) + "\n")
        attachments = [_attachment(path) for path in args.attach]
        if args.prompt is None and _isatty(stdin):
            return _interactive(client, args, config, history, attachments, out, err, stdin, logged)
        prompt = stdin.read() if args.prompt in (None, "-") else args.prompt
        if not prompt.strip() and not attachments:
            raise ConfigError("the prompt is empty: pass it as an argument, or pipe it in")
        message = _user_message(prompt, attachments)
        turns = _turns(client, args, config, history, message, out, err, stdin)
        for asked, answer in turns:
            logged.turn(asked, answer)
        # Ctrl-C stopped the one answer ([stopped]): interrupted, as a tool run or a typed answer Ctrl-C ends
        plain = not getattr(args, "tool", None) and not getattr(args, "mcp", None)
        return INTERRUPTED if plain and not turns else 0
    finally:
        logged.close()
        for server in getattr(args, "_mcp_servers", ()):
            server.close()


def _check_tool_flags(args: Any) -> None:
    """``--max-turns`` and ``--yes`` shape a tool run: without ``--tool`` / ``--mcp`` they would be ignored."""
    from ..errors import ConfigError

    if not getattr(args, "tool", None) and not getattr(args, "mcp", None):
        if getattr(args, "max_turns", None) is not None:
            raise ConfigError("--max-turns goes with --tool or --mcp (it bounds a tool run)")
        if getattr(args, "yes", False):
            raise ConfigError("--yes goes with --tool or --mcp (it runs their calls without asking)")
    if getattr(args, "max_turns", None) is None:
        args.max_turns = 10  # (the default)


def _check_journal(args: Any, stdin: TextIO) -> None:
    """``--journal STORE --run-id ID`` journal a one-prompt tool run (``client.run(journal=, run_id=)``)."""
    from ..errors import ConfigError

    journal, run_id = getattr(args, "journal", None), getattr(args, "run_id", None)
    if journal is None and run_id is None:
        for flag in ("journal_ttl", "journal_wait"):
            if getattr(args, flag, None) is not None:
                raise ConfigError("--{} goes with --journal STORE --run-id ID".format(flag.replace("_", "-")))
        return
    if journal is None or run_id is None:
        raise ConfigError("a journaled run takes both --journal STORE and --run-id ID")
    if not getattr(args, "tool", None) and not getattr(args, "mcp", None):
        raise ConfigError("--journal journals a tool run: it goes with --tool or --mcp")
    if args.prompt is None and _isatty(stdin):
        raise ConfigError("--journal journals one prompt's tool run: pass the prompt (the interactive chat is not "
                          "journaled)")


class _Logged(object):
    """This chat's conversation in the conversation log (``agenthub.apps.conversations``): written turn by
    turn unless ``--no-log`` or ``AGENTHUB_LOG_PROMPTS=0``; a write that fails is reported once and the
    chat goes on (the log is a convenience, never a reason to lose an answer)."""

    def __init__(self, args: Any, client: Any) -> None:
        from .conversations import enabled, unknown_setting

        self.args = args
        self.client = client
        self.on = enabled(getattr(args, "no_log", False))
        note = None if getattr(args, "no_log", False) else unknown_setting()
        if note is not None:
            print(safe(note), file=sys.stderr)
        self.conversation = None  # type: Optional[str]
        self._log = None  # type: Any
        # a journaled run (--journal STORE --run-id ID) is one conversation of the log, whichever process ran
        # it: its id made from the run's, the turns a resume replays that were logged already not logged again
        self._run_conversation = None  # type: Optional[str]
        self._logged_before = 0
        if getattr(args, "journal", None) is not None and getattr(args, "run_id", None) is not None:
            import hashlib

            self._run_conversation = "c_" + hashlib.sha256("journaled run\x00{}\x00{}".format(
                args.journal, args.run_id).encode("utf-8", "surrogatepass")).hexdigest()[:20]

    def log(self) -> Any:
        if self._log is None:
            from .conversations import Log

            self._log = Log()
        return self._log

    def turn(self, message: Any, answer: Any) -> None:
        if not self.on:
            return
        try:
            from ..catalog import call_cost

            log = self.log()
            if self.conversation is None and self._run_conversation is not None:
                row = log.conversation(self._run_conversation)
                if row is not None:  # logged by an earlier process of the run: continued, its turns not again
                    self.conversation, self._logged_before = self._run_conversation, row["turns"]
            if self.conversation is None:
                from ..hosts.trust import url_host

                self.conversation = log.start(self.args.model, self.client.client_type,
                                              url_host(self.client.base_url), self.args.system,
                                              conversation=self._run_conversation)
            if self._logged_before > 0:
                self._logged_before -= 1
                return
            # the model that answered (a --fallback one, after a failover) is logged and priced
            route = getattr(self.client, "last_route", None) or {}
            answered = route.get("model") or self.args.model
            log.add_turn(self.conversation, answered, message, answer,
                         call_cost(answered, answer.get("usage_metadata"), None, route))  # (a cache hit: 0.0)
        except Exception as exc:  # a full disk or a locked file: the answer stands
            sys.stderr.write("agenthub: the conversation log was not written ({}: {}); --no-log turns it "
                             "off\n".format(type(exc).__name__, exc))
            self.on = False

    def restart(self) -> None:
        """/reset: the next turn starts a new conversation in the log."""
        self.conversation = None

    def close(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None


def _continued(args: Any, config: Dict[str, Any], logged: "_Logged") -> List[Any]:
    """``-c`` (the latest logged conversation), ``--continue c_...`` (a logged one) or ``--continue TRACE_ID``."""
    import os as _os

    from ..errors import ConfigError
    from ..validate import check_messages
    from .conversations import DB_NAME, home

    wanted = args.continue_trace
    if wanted != LATEST and not wanted.startswith("c_"):
        config.setdefault("trace_id", wanted)
        return _load_conversation(wanted)
    if not _os.path.exists(_os.path.join(home(), DB_NAME)):
        raise ConfigError("-c: the conversation log is empty ({}): nothing to continue".format(
            _os.path.join(home(), DB_NAME)))
    log = logged.log()
    conversation = log.latest() if wanted == LATEST else wanted
    if conversation is None or log.conversation(conversation) is None:
        raise ConfigError("-c: no logged conversation {} (`agenthub logs` lists them)".format(
            "yet" if conversation is None else repr(conversation)))
    history = log.history(conversation)
    if history:
        check_messages(history)
    logged.conversation = conversation
    return history


def _continuing(args: Any, config: Dict[str, Any], logged: "_Logged", history: List[Any]) -> str:
    """The line ``-c`` / ``--continue`` says first: which conversation, its model, and this turn's if another."""
    if logged.conversation is not None:
        row = logged.log().conversation(logged.conversation) or {}
        model = row.get("model")
        other = "; this turn goes to {}".format(args.model) if model and model != args.model else ""
        return "[continuing {}: {} messages with {} ({}){}]".format(
            logged.conversation, len(history), model or "?", row.get("client_type") or "?", other)
    return "[continuing trace {}: {} messages]".format(config.get("trace_id") or args.continue_trace, len(history))


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


#: a wait before a retry at least this long (a server's Retry-After, a long backoff) gets a line on stderr
ANNOUNCE_WAIT = 3.0


def _wait_notice(err: TextIO) -> Any:
    """An attempt hook that says on ``err`` when the client is about to wait ANNOUNCE_WAIT seconds or more."""
    from ..attempts import AttemptHook

    class WaitNotice(AttemptHook):
        max_retries = None  # type: Optional[int]  # the client's, set once it is built

        def on_error(self, attempt: Any, error: Any) -> None:
            delay = attempt.delay
            if not attempt.retry or delay is None or delay < ANNOUNCE_WAIT:
                return
            status = getattr(error, "status", None)
            asked = getattr(error, "retry_after", None) is not None
            err.write("[{}{}: waiting {:.0f} s{}, then retry {} of {}]\n".format(
                type(error).__name__, " (status {})".format(status) if status is not None else "", delay,
                " as the server asked (Retry-After)" if asked else "", attempt.number + 1,
                "?" if self.max_retries is None else self.max_retries))
            err.flush()

    return WaitNotice()


def _chat_client(args: Any, err: Optional[TextIO] = None) -> Any:
    from ..client import AutoLLMClient
    from ..errors import ConfigError

    api_key = None
    if args.api_key_env:
        api_key = os.environ.get(args.api_key_env)
        if not api_key:
            raise ConfigError("${} is not set".format(args.api_key_env))
    options = {}  # type: Dict[str, Any]
    if args.timeout is not None:
        import threading

        if not 0 < args.timeout <= threading.TIMEOUT_MAX:  # (inf, nan, or more than a socket takes)
            raise ConfigError("--timeout must be a positive number of seconds (got {})".format(args.timeout))
        options["timeout"] = args.timeout
    if args.max_retries is not None:
        if args.max_retries < 0:
            raise ConfigError("--max-retries must be 0 or more")
        options["max_retries"] = args.max_retries
    if getattr(args, "budget", None) is not None:  # one Budget for the whole session, every turn counted
        from ..budget import Budget

        options["budget"] = Budget(args.budget)
    if getattr(args, "anthropic_version", None) is not None:
        options["anthropic_version"] = args.anthropic_version
    if getattr(args, "fallback", None):
        options["fallbacks"] = list(args.fallback)
    if getattr(args, "cache", None):  # answers replayed from (and stored in) a ResponseCache
        from ..cache import ResponseCache

        options["cache"] = ResponseCache(args.cache)
    notice = _wait_notice(err) if err is not None else None
    if notice is not None:
        options["hooks"] = [notice]
    try:
        client = AutoLLMClient(args.model, api_key=api_key, base_url=args.base_url, client_type=args.client_type,
                               **options)
        if notice is not None:
            notice.max_retries = client.max_retries
        return client
    except ConfigError as exc:
        nearest = _nearest_models(args.model) if "cannot route model" in str(exc) else []
        if not nearest:
            raise
        raise ConfigError("{}; did you mean {}?".format(exc, " or ".join(nearest))) from None


def _nearest_models(model: str) -> List[str]:
    """The catalog's and the registry's model names nearest to ``model`` (a typo's likely intent)."""
    import difflib

    from ..catalog import list_supported_models
    from ..registry import list_models

    names = {row["id"] for row in list_supported_models()}
    names.update(example for row in list_models() for example in row.get("examples") or ())
    return difflib.get_close_matches(model, sorted(names), n=3, cutoff=0.75)


def _chat_config(args: Any) -> Dict[str, Any]:
    from ..errors import ConfigError

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
    given = set()  # type: Set[str]
    for key, value in getattr(args, "options", None) or ():
        if key in given:
            raise ConfigError("-o {} is given twice: give it once".format(key))
        if key in config:  # (a flag set it: one of the two values would be dropped)
            raise ConfigError("-o {} and {} both set it: give one".format(
                key, _FLAGS.get(key, "--" + key.replace("_", "-"))))
        given.add(key)
        config[key] = _option_value(value)
    return config


def _option_value(text: str) -> Any:
    """``-o KEY VALUE``: VALUE as JSON when it parses (numbers, booleans, lists, objects), else the text."""
    from ..errors import ConfigError

    try:
        return _json_loads(text)
    except ValueError:
        return text
    except RecursionError:  # (JSON, but nested past what the reader takes: neither it nor the text is meant)
        raise ConfigError("-o KEY VALUE: the VALUE's JSON nests too deep to read") from None


def _schema(text: str) -> Dict[str, Any]:
    """``--schema``: a JSON Schema (inline or in a file), or the concise form ``'name str, age int'``; checked
    by the typed output's compiler (a ConfigError naming the field before anything is sent)."""
    from ..errors import ConfigError
    from ..typeschema import compile as compile_type

    source = "--schema"
    if os.path.isfile(text):
        source = "--schema {}".format(text)
        try:
            with open(text, encoding="utf-8") as handle:
                text = handle.read()
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError("{}: {}".format(source, exc)) from None
    elif not text.lstrip().startswith(("{", "[", '"')):
        schema = concise_schema(text)
        text = json.dumps(schema)
    try:
        schema = _json_loads(text)
    except ValueError as exc:
        raise ConfigError("{} is neither a JSON Schema nor a file holding one ({})".format(source, exc)) from None
    except RecursionError:
        raise ConfigError("{}: the JSON Schema nests too deep to read".format(source)) from None
    if not isinstance(schema, dict):
        raise ConfigError("{}: a JSON Schema is an object".format(source))
    if _depth(schema) > MAX_SCHEMA_DEPTH:  # (the compiler and the request's shaping recurse: a RecursionError)
        raise ConfigError("{}: the JSON Schema nests too deep to read".format(source))
    try:
        compile_type(schema)
    except ConfigError as exc:
        raise ConfigError("{}: {}".format(source, exc)) from None
    except RecursionError:  # (read, but nested past what the compiler walks)
        raise ConfigError("{}: the JSON Schema nests too deep to read".format(source)) from None
    return schema


#: how deep ``--schema``'s JSON may nest (objects and arrays): the providers' structured outputs take ten or so
#: levels of fields; past a few hundred, compiling and shaping the schema ran out of Python's stack
MAX_SCHEMA_DEPTH = 100


def _depth(value: Any) -> int:
    """How deep ``value`` nests (objects and arrays), counted without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is not None:
            deepest = max(deepest, level)
            stack.extend((child, level + 1) for child in children)
    return deepest


#: the concise form's types (``--schema 'name str, age int, tags list[str], nick str?'``)
_CONCISE_TYPES = {"str": {"type": "string"}, "int": {"type": "integer"}, "float": {"type": "number"},
                  "bool": {"type": "boolean"}}
_CONCISE_FIELD = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*:?\s+(\S.*?)\s*$")


def _concise_type(text: str, field: str) -> Dict[str, Any]:
    from ..errors import ConfigError

    text = text.strip()
    if text in _CONCISE_TYPES:
        return dict(_CONCISE_TYPES[text])
    if text.startswith("list[") and text.endswith("]"):
        return {"type": "array", "items": _concise_type(text[len("list["):-1], field)}
    raise ConfigError("--schema: field {!r} has the type {!r}; the concise form takes str, int, float, bool and "
                      "list[T] (a trailing ? makes a field optional); for anything else give a JSON Schema "
                      "file".format(field, text))


def concise_schema(text: str) -> Dict[str, Any]:
    """The JSON Schema of the concise form: ``name str, age int, tags list[str], nick str?`` (comma-separated
    ``NAME TYPE`` fields, ``NAME: TYPE`` too; types str, int, float, bool, list[T]; ``?`` after the type: the
    field may be left out).  A ConfigError naming the field for anything else."""
    from ..errors import ConfigError

    properties = {}  # type: Dict[str, Any]
    required = []  # type: List[str]
    for part in text.split(","):
        if not part.strip():
            raise ConfigError("--schema: an empty field in {!r} (fields are NAME TYPE, separated by commas)".format(
                text[:200]))
        match = _CONCISE_FIELD.match(part)
        if match is None:
            raise ConfigError("--schema: {!r} is not a field (NAME TYPE, such as 'age int')".format(part.strip()[:80]))
        name, kind = match.group(1), match.group(2)
        optional = kind.endswith("?")
        if optional:
            kind = kind[:-1]
        if name in properties:
            raise ConfigError("--schema: the field {!r} is given twice".format(name))
        properties[name] = _concise_type(kind, name)
        if not optional:
            required.append(name)
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


def _load_conversation(trace_id: str) -> List[Any]:
    from ..errors import ConfigError
    from ..tracer import load_trace, trace_paths
    from ..validate import check_messages

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
    from ..errors import ConfigError

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


def _turns(client: Any, args: Any, config: Dict[str, Any], history: List[Any], message: Dict[str, Any],
           out: TextIO, err: TextIO, stdin: TextIO) -> List[Any]:
    """The (user message, answer) pairs of one prompt: one turn, or with ``--tool`` the tool loop's turns
    (``agenthub.agent.runner``), each call shown with its arguments, result and time."""
    if getattr(args, "output_schema", None) is not None:
        answer = _parsed_turn(client, args, config, history, message, out, err)
        return [(message, answer)]
    if not getattr(args, "tool", None) and not getattr(args, "mcp", None):
        answer = _turn(client, args, config, history, message, out, err)
        return [(message, answer)] if answer is not None else []
    tools = _tools(args)
    edited = {}  # type: Dict[str, Any]  # tool_call_id -> the arguments the user edited it to (what ran)
    approve = (lambda call: True) if args.yes else _asker(stdin, err, edited)
    journaled = {}  # type: Dict[str, Any]
    if getattr(args, "journal", None) is not None:
        journaled = dict(journal=args.journal, run_id=args.run_id, journal_ttl=args.journal_ttl,
                         journal_wait=args.journal_wait)
    printer = Printer(out, err=err, model=args.model)
    decisions = None  # type: Optional[Dict[str, Any]]
    while True:
        result = _tool_run(client, args, config, history + [message], tools, approve, decisions, journaled, edited,
                           printer, out)
        if result.stop == "max_turns":
            printer.line("[stopped after --max-turns {}: {} call(s) not run]".format(args.max_turns,
                                                                                    len(result.pending)))
        if not result.interrupted:
            break
        # a crash interrupted a call of a tool declared idempotent=False: it may have run; it runs again only
        # when the user says so (at the prompt; --yes never reruns it)
        printer.line(safe("[interrupted by a crash, not run again (@tool(idempotent=False)): {}: it may have run "
                          "once]".format(", ".join(result.interrupted))))
        if args.yes:
            printer.line("[run the command again without --yes to decide]")
            break
        from ..agent import call_digest  # (by digest: a reused id of an earlier turn's call cannot be mistaken for it)

        decisions = {call_digest(c): approve(c) for c in result.pending if c["tool_call_id"] in result.interrupted}
    if not args.json:
        printer.line(_run_total(result))
    turns = []
    asked = message
    for new in result.messages:
        if new["role"] == "assistant":
            turns.append((asked, new))
        else:
            asked = new
    return turns


def _tool_run(client: Any, args: Any, config: Dict[str, Any], messages: List[Any], tools: List[Any], approve: Any,
              decisions: Any, journaled: Dict[str, Any], edited: Dict[str, Any], printer: Any, out: TextIO) -> Any:
    """One ``client.run`` of the tool loop, its events printed (each call with its arguments, result, time)."""
    from ..tracer import to_jsonable

    run = client.run(messages, config, tools=tools, max_turns=args.max_turns, approve=approve, decisions=decisions,
                     **journaled)
    calls = {}  # type: Dict[str, Any]
    try:
        for event in run:
            if decisions is not None and event.get("replayed"):  # (shown in the run before the decision)
                pass
            elif args.json:
                out.write(json_for(out)(surrogates_escaped(json.dumps(to_jsonable(event), ensure_ascii=False))) + "\n")
                out.flush()
            elif event["role"] == "user":
                item = event["content_items"][0]
                call = calls.get(item["tool_call_id"]) or {}
                row = next((r for r in run.calls if r["tool_call_id"] == item["tool_call_id"]), {})
                arguments = edited.get(item["tool_call_id"], call.get("arguments", {}))
                printer.line(safe("[tool {}({}) -> {}{} ({:.2f} s)]".format(
                    call.get("name", "?"), json.dumps(arguments, ensure_ascii=False),
                    "error: " if item.get("is_error") else "", _clip(item["text"]), row.get("seconds", 0.0))))
            else:
                if event["event_type"] == "stop":  # the turn's route (taken in at its stop): priced as it answered
                    printer.route = run.route
                    printer.model = (run.route or {}).get("model") or args.model
                printer.event(event)
            for item in event["content_items"]:
                if item["type"] == "tool_call":
                    calls[item["tool_call_id"]] = item
                    edited.pop(item["tool_call_id"], None)  # (an id an earlier turn used: its edit is not this call's)
    finally:
        run.close()
    return run.result()


def _run_total(result: Any) -> str:
    """The tool run's last line: its turns, its tool calls and what they cost together (each turn's usage
    line says its own)."""
    cost = result.cost_usd
    return "[run: {} turn{}, {} tool call{}, total cost {}]".format(
        result.turns, "" if result.turns == 1 else "s", len(result.calls), "" if len(result.calls) == 1 else "s",
        "unknown (a turn is unpriced)" if cost is None else "${}".format(_dollars(cost))) + (
        "" if not getattr(result, "run_id", None) else
        " [journaled run {}: {} turn{} and {} tool result{} taken from the journal]".format(
            safe(result.run_id), result.replayed_turns, "" if result.replayed_turns == 1 else "s",
            result.replayed_results, "" if result.replayed_results == 1 else "s"))


def _clip(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _tools(args: Any) -> List[Any]:
    """``--tool module:function`` / ``--tool path/to/file.py:function``: the functions, loaded once; and
    ``--mcp [NAME=]URL_OR_COMMAND``: the MCP servers, connected once (closed when the chat ends); a NAME
    prefixes its tools (``NAME__tool``), so two servers offering one tool name can both be used."""
    loaded = getattr(args, "_loaded_tools", None)
    if loaded is None:
        loaded = [_load_tool(spec) for spec in args.tool]
        if getattr(args, "mcp", None):
            from .. import mcp
            from .mcp_cli import target_of

            servers = args._mcp_servers = []  # type: List[Any]
            for spec in args.mcp:
                name, target = _mcp_spec(spec)
                servers.append(mcp.connect(target_of([target]), name=name, timeout=args.timeout))
            _check_tool_names(args.tool, loaded, args.mcp, servers)
            loaded.extend(servers)
        args._loaded_tools = loaded
    return loaded


#: ``--mcp NAME=TARGET``: a name (letters, digits, _ and -; a letter first) before the first "="
_MCP_NAME = re.compile(r"^([A-Za-z][A-Za-z0-9_-]{0,39})=(?!=)(.+)$", re.S)


def _mcp_spec(spec: str) -> Any:
    """``--mcp`` as (name or None, target): ``time=uvx mcp-server-time`` names the server ``time``; a URL or
    a command without that form is the target as it is."""
    from ..errors import ConfigError

    match = _MCP_NAME.match(spec)
    if match is None or spec.startswith(("http://", "https://")):
        return None, spec
    name, target = match.group(1), match.group(2).strip()
    if not target:
        raise ConfigError("--mcp {}=: name a server after the '=' (a URL or the command that starts it)".format(name))
    return name, target


def _check_tool_names(tool_specs: List[str], tools: List[Any], mcp_specs: List[str], servers: List[Any]) -> None:
    """Two tools of one name (two ``--mcp`` servers, or a server and a ``--tool``) named by the options
    that brought them, with the way out: ``--mcp NAME=...`` prefixes a server's tools."""
    from .._redact import scrub_free_text
    from ..errors import ConfigError

    owners = {}  # type: Dict[str, str]  # tool name -> the option that brought it
    for spec, function in zip(tool_specs, tools):
        owners[getattr(function, "name", spec)] = "--tool {}".format(spec)
    for spec, server in zip(mcp_specs, servers):
        spec = scrub_free_text(spec)  # (a URL's ?token= or password, a key the shell put in the command: ***)
        prefix = getattr(server, "name", None)
        for listed in server.list_tools() or ():
            original = listed.get("name") if isinstance(listed, dict) else None
            if not isinstance(original, str):
                continue  # (the runner refuses it in its own words)
            name = "{}__{}".format(prefix, original) if prefix else original
            if name in owners:
                raise ConfigError(safe("two tools are named {!r}: one from {} and one from --mcp {!r}; name a "
                                       "server to prefix its tools (NAME__{}): --mcp NAME={}".format(
                                           name, owners[name], spec, original, spec)))
            owners[name] = "--mcp {!r}".format(spec)


def _load_tool(spec: str) -> Any:
    import importlib
    import importlib.util

    from ..agent.tools import Tool, tool
    from ..errors import ConfigError

    target, _, name = spec.rpartition(":")
    if not target or not name:
        raise ConfigError("--tool {}: expected module:function or path/to/file.py:function".format(spec))
    try:
        if target.endswith(".py") or os.sep in target or "/" in target:
            if not os.path.isfile(target):
                raise ConfigError("--tool {}: no file {}".format(spec, target))
            module_name = "agenthub_tool_" + re.sub(r"\W", "_", os.path.splitext(os.path.basename(target))[0])
            module_spec = importlib.util.spec_from_file_location(module_name, target)
            module = importlib.util.module_from_spec(module_spec)  # type: ignore[arg-type]
            module_spec.loader.exec_module(module)  # type: ignore[union-attr]
        else:
            if os.getcwd() not in sys.path and "" not in sys.path:
                sys.path.insert(0, os.getcwd())  # a module beside the caller, as `python -m` would find it
            module = importlib.import_module(target)
    except ConfigError:
        raise
    except Exception as exc:
        raise ConfigError("--tool {}: {} cannot be loaded ({}: {})".format(spec, target, type(exc).__name__, exc)) \
            from None
    value = getattr(module, name, None)
    if isinstance(value, Tool):
        return value
    if not callable(value):
        raise ConfigError("--tool {}: {} has no function {!r}".format(spec, target, name))
    return tool(value)


#: a run of spaces this long in a call's arguments is shown as ``<N spaces>`` at the prompt (200 KB of spaces
#: would push the rest of an argument, its real part, off the screen)
_LONG_SPACES = re.compile(" {32,}")


def _asker(stdin: TextIO, err: TextIO, edited: Optional[Dict[str, Any]] = None) -> Any:
    """approve() at the terminal: each call shown (controls escaped: ``terminal.safe``; a long run of spaces
    counted), y (run), n (deny) or e (edit the arguments as JSON; ``edited`` keeps them by call id, for the
    result line)."""
    def ask(call: Any) -> Any:
        while True:
            shown = _LONG_SPACES.sub(lambda run: "<{} spaces>".format(len(run.group())),
                                     json.dumps(call["arguments"], ensure_ascii=False))
            err.write(safe("[tool {}({})] run it? [y/n/e] ".format(call["name"], shown)))
            err.flush()
            answer = stdin.readline()
            if not answer:
                err.write("\n[no answer: denied; --yes runs every call]\n")
                return "the user did not answer"
            answer = answer.strip().lower()
            if answer in ("y", "yes"):
                return True
            if answer in ("n", "no"):
                return False
            if answer in ("e", "edit"):
                err.write("arguments (JSON)> ")
                err.flush()
                try:
                    arguments = _json_loads(stdin.readline() or "null")
                except (ValueError, RecursionError):  # (nested past what the reader takes: no object either)
                    arguments = None
                if isinstance(arguments, dict):
                    if edited is not None:
                        edited[call["tool_call_id"]] = arguments
                    return {"arguments": arguments}
                err.write("[not a JSON object]\n")
    return ask


def _turn(client: Any, args: Any, config: Dict[str, Any], history: List[Any], message: Dict[str, Any],
          out: TextIO, err: TextIO) -> Optional[Any]:
    """One turn after ``history``: streams it, returns the collected answer (None when it was stopped)."""
    from ..errors import TransportError
    from ..stream import collect
    from ..tracer import to_jsonable

    events = []  # type: List[Any]
    printer = Printer(out, err=err, model=args.model)
    stream = client.streaming_response(history + [message], config)
    previous = _on_interrupt(stream)
    breaker = _LineBreak(printer)
    try:
        for event in stream:
            if not events:  # the first event: which route answers (after a failover, priced and named as it)
                printer.call, printer.route = getattr(stream, "_call", None), stream.route  # (a cache hit: 0)
                answered = (stream.route or {}).get("model")
                if answered and answered != args.model:
                    printer.model = answered
                    if not args.json:
                        printer.line("[fallback: {} answered]".format(answered))
            events.append(event)
            if args.json:
                out.write(json_for(out)(surrogates_escaped(json.dumps(to_jsonable(event), ensure_ascii=False))) + "\n")
                out.flush()
            else:
                printer.event(event)
    except TransportError as exc:
        if not exc.aborted:
            raise
        printer.line("[stopped]")
        return None
    finally:
        breaker.remove()
        _restore_interrupt(previous)
        stream.close()
    return collect(events)


def _parsed_turn(client: Any, args: Any, config: Dict[str, Any], history: List[Any], message: Dict[str, Any],
                 out: TextIO, err: TextIO) -> Any:
    """``--schema``: one turn through client.parse's loop (re-asked at most twice); stdout gets the validated
    JSON (indented on a terminal, one line otherwise or with ``--json``), stderr the attempts and usage line.
    Returns the final assistant message (OutputValidationError / OutputRefusedError raise: exit status 1)."""
    from .terminal import is_terminal, usage_line

    parsed = client.parse(history + [message], args.output_schema, config)
    pretty = is_terminal(out) and not args.json
    out.write(json_for(out)(json.dumps(parsed.json, ensure_ascii=False, indent=2 if pretty else None)) + "\n")
    out.flush()
    if parsed.attempts > 1:
        err.write("[valid after {} attempts: the answers before did not match the schema]\n".format(parsed.attempts))
    err.write(usage_line(parsed.message.get("finish_reason"), parsed.usage_metadata, parsed.cost_usd) + "\n")
    return parsed.message


class _LineBreak(logging.Filter):
    """While an answer streams, a log record of agenthub's own stderr handler (AGENTHUB_LOG) first ends the
    line the answer is on, so a debug line never lands in the middle of the answer's text."""

    def __init__(self, printer: Any) -> None:
        super(_LineBreak, self).__init__()
        self.printer = printer
        self.handlers = [h for h in logging.getLogger("agenthub").handlers if getattr(h, "_agenthub_env", False)]
        for handler in self.handlers:
            handler.addFilter(self)

    def filter(self, record: logging.LogRecord) -> bool:
        self.printer.break_line()
        return True

    def remove(self) -> None:
        for handler in self.handlers:
            handler.removeFilter(self)


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
                 out: TextIO, err: TextIO, stdin: TextIO, logged: Optional["_Logged"] = None) -> int:
    from ..errors import AgentHubError
    from ..tracer import save_trace

    read_line = _line_reader(stdin, out, err)

    err.write("agenthub chat with {} ({}); {}\n".format(args.model, client.client_type, _HELP))
    while True:
        try:
            line = read_line("you> ")
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
            if logged is not None:
                logged.restart()
            if config.get("trace_id"):  # a new conversation gets a new trace: the old one is kept
                config["trace_id"] = _next_trace_id(config["trace_id"])
                err.write("[conversation reset; new trace {}]\n".format(config["trace_id"]))
            else:
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
                err.write(safe("error: {}".format(cli_terms(str(exc)))) + "\n")
                continue
            err.write("[saved {} messages to {}]\n".format(len(history), paths["json"]))
            continue
        if command.startswith("/"):
            err.write("unknown command {}; {}\n".format(command.split()[0], _HELP))
            continue
        message = _user_message(text, attachments)
        attachments = []  # files go with the first message only
        try:
            turns = _turns(client, args, config, history, message, out, err, stdin)
        except AgentHubError as exc:
            out.flush()
            err.write(error_line(exc) + "\n")
            continue
        except KeyboardInterrupt:  # Ctrl-C in a tool run (its turns or a call): that turn is dropped, as an answer's
            out.flush()
            err.write("\n[stopped]\n")
            continue
        for asked, answer in turns:
            history = history + [asked, answer]
            if logged is not None:
                logged.turn(asked, answer)


def _line_reader(stdin: TextIO, out: TextIO, err: TextIO) -> Any:
    """How the interactive chat reads a line after its prompt: with line editing and history (readline) when
    it talks to the process's own terminal (readline shows the prompt once it reads the keys, so a key typed
    at the prompt, Ctrl-D included, is never lost), else the prompt on stderr and ``stdin.readline``."""
    if stdin is sys.stdin and _isatty(stdin) and _isatty(out):
        try:
            import readline  # noqa: F401  (imported for its effect: input() edits lines)
        except ImportError:  # pragma: no cover - Windows without pyreadline
            readline = None
        if readline is not None:
            def edited(prompt: str) -> str:
                err.flush()
                try:
                    return input(prompt) + "\n"
                except EOFError:
                    return ""

            return edited

    def plain(prompt: str) -> str:
        err.write(prompt)
        err.flush()
        return stdin.readline()

    return plain


def _next_trace_id(trace_id: str) -> str:
    """``run`` -> ``run-2`` -> ``run-3`` ...: the first whose trace file does not exist yet."""
    from ..tracer import trace_paths

    match = re.match(r"^(.*)-(\d+)$", trace_id)
    base, number = (match.group(1), int(match.group(2))) if match else (trace_id, 1)
    while True:
        number += 1
        candidate = "{}-{}".format(base, number)
        if not os.path.exists(trace_paths(candidate)["json"]):
            return candidate


#: library wording -> command-line wording, for error messages (flags and variables, not arguments)
_CLI_TERMS = (
    (re.compile(r"\bfallbacks entry "), "--fallback "),
    (re.compile(r", or give the entry as a client with its own key"), ""),
    (re.compile(r"AutoLLMClient\((['\"])(.*?)\1, client_type='openai-chat', base_url='([^']*)'\)"),
     r"agenthub chat \2 --client-type openai-chat --base-url \3"),
    (re.compile(r"pass api_key= or set ([A-Z0-9_]+(?: or [A-Z0-9_]+)*)"),
     r"set \1, or pass --api-key-env NAME (the variable holding the key)"),
    (re.compile(r"\bpass api_key="), "pass --api-key-env NAME (the variable holding the key)"),
    (re.compile(r"\bapi_key is required with base_url\b"), "--api-key-env NAME is required with --base-url"),
    (re.compile(r"\bbase_url=(?=['\"])"), "base_url "),  # try base_url='...' -> try --base-url '...'
    (re.compile(r"AutoLLMClient\(\.\.\., anthropic_version='([^']*)'\)"), r"--anthropic-version \1"),
    (re.compile(r"\banthropic_version (?=must be one of|applies to)"), "--anthropic-version "),
    (re.compile(r"\bapi_key\b=?"), "--api-key-env"),
    (re.compile(r"\bclient_type\b=?"), "--client-type"),
    (re.compile(r"\bbase_url\b=?"), "--base-url"),
    (re.compile(r"\bmax_retries\b"), "--max-retries"),
    (re.compile(r"\bmax_turns\b"), "--max-turns"),
    # (the command line has no allow_unpriced: what runs uncounted there runs without --budget, nothing held)
    (re.compile(r"(?:pass )?Budget\(max_usd, allow_unpriced=True\) to let (.*?) run uncounted"
                r"(?: \(the rest of the turn is held, and the turn settled at its whole hold\))?"),
     r"run without --budget to let \1 run uncounted"),
    (re.compile(r"\bmax_usd\b"), "--budget"),
    (re.compile(r"\bjournal_wait\b"), "--journal-wait"),
    (re.compile(r"\bconfig\['(max_tokens|temperature|system_prompt|thinking_level|trace_id)'\]"), r"\1"),
)
_FLAGS = {"max_tokens": "--max-tokens", "temperature": "--temperature", "system_prompt": "--system",
          "thinking_level": "--thinking", "trace_id": "--trace-id"}


def error_line(exc: BaseException) -> str:
    """``error: ConfigError: ...``: an error as the command line prints it, in its words (``cli_terms``), with the
    control characters and bidirectional overrides of what a server or a file put in the message shown, not
    obeyed (an upstream's error text with ESC ] 52 set the clipboard, ESC [ 2 J cleared the screen)."""
    return safe("error: {}: {}".format(type(exc).__name__, cli_terms(str(exc))))


def cli_terms(message: str) -> str:
    if message.startswith("unknown config key(s) "):  # the keys -o KEY VALUE takes, and the one given: as they are
        return message
    for pattern, replacement in _CLI_TERMS:
        message = pattern.sub(replacement, message)
    for key, flag in _FLAGS.items():
        message = re.sub(r"(?<![\w-])(?<!-o )" + key + r"\b", flag, message)  # (-o KEY: the key as typed)
    return message
