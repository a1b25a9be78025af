"""The stdio transport: the MCP server as a subprocess, one JSON-RPC message per line.

stdout carries the protocol and nothing else: a line that is not a JSON-RPC message breaks the
connection (a typed error for every call, the line shown).  stderr is the server's log: read by a
thread of its own, the last ``STDERR_KEEP`` bytes kept and shown in errors, never parsed.  A child
that exits fails every pending call at once (its exit status and the end of its log in the error).
Shutdown (2026-07-28 transports/stdio "Shutdown"): close stdin, wait, SIGTERM, wait, SIGKILL; the
two reader threads are joined and the pipes closed, by ``close()``, by the garbage collector or at
interpreter exit (a ``weakref.finalize``), whichever comes first.
"""

import json
import os
import subprocess
import sys
import threading
import time
import weakref
from typing import Any, Callable, Dict, List, Optional

from ..attempts import scrub
from ..errors import AgentHubError, ConfigError, StreamProtocolError, TransportError, preview
from . import jsonrpc
from .channel import Answer, Channel, modern_refusal
from .jsonrpc import MCPError, Message

__all__ = ["StdioChannel", "STDERR_KEEP", "MAX_LINE_BYTES", "PROBE_TIMEOUT"]

#: the end of the server's log kept for errors
STDERR_KEEP = 8 * 1024
#: the longest line (one message) read from stdout
MAX_LINE_BYTES = 16 * 1024 * 1024
#: seconds given to each step of the shutdown (after closing stdin; after SIGTERM)
SHUTDOWN_GRACE = 2.0
#: how long the unpinned ``server/discover`` probe waits before taking silence for the handshake era
PROBE_TIMEOUT = 10.0


class _Pending(object):
    __slots__ = ("event", "message", "on_message")

    def __init__(self, on_message: Any) -> None:
        self.event = threading.Event()
        self.message = None  # type: Optional[Message]
        self.on_message = on_message


class _State(object):
    """What the reader threads and the finalizer share (no reference to the channel: it may be collected)."""

    def __init__(self, process: Any, label: str) -> None:
        self.process = process
        self.label = label
        self.lock = threading.Lock()
        self.write_lock = threading.Lock()
        self.pending = {}  # type: Dict[Any, _Pending]
        self.failure = None  # type: Optional[AgentHubError]
        self.stderr = bytearray()
        self.threads = []  # type: List[threading.Thread]
        self.on_request = None  # type: Optional[Callable[[Message], None]]
        self.on_notification = None  # type: Optional[Callable[[Message], None]]
        self.closing = False
        #: answers that came after their call gave up (a probe that timed out), the latest few, by id
        self.late = {}  # type: Dict[Any, Message]

    def log_tail(self) -> str:
        with self.lock:
            text = bytes(self.stderr).decode("utf-8", "replace")
        return text.strip()

    def fail(self, error: AgentHubError) -> None:
        with self.lock:
            if self.failure is None:
                self.failure = error
            waiting = list(self.pending.values())
        for pending in waiting:
            pending.event.set()


def _read_stdout(state: _State) -> None:
    stream = state.process.stdout
    try:
        while True:
            line = stream.readline(MAX_LINE_BYTES + 1)
            if not line:
                break
            if len(line) > MAX_LINE_BYTES and not line.endswith(b"\n"):
                state.fail(StreamProtocolError("{}: the server wrote a line longer than {} bytes on stdout".format(
                    state.label, MAX_LINE_BYTES), client=state.label))
                return
            if not line.strip():
                continue
            try:
                message = jsonrpc.decode(line, state.label)
            except StreamProtocolError:
                text = line.decode("utf-8", "replace").strip()
                state.fail(StreamProtocolError(
                    "{}: the server wrote something that is not a JSON-RPC message on stdout (stdout is for "
                    "the protocol alone; a log belongs on stderr): {}".format(state.label, preview(text, 200)),
                    client=state.label))
                return
            _dispatch(state, message)
    except (OSError, ValueError):
        pass  # the pipe was closed under us (close())
    if not state.closing:
        code = None
        try:
            code = state.process.wait(SHUTDOWN_GRACE)
        except subprocess.TimeoutExpired:
            pass
        # the log thread sees the end of stderr at about the same time: give it a moment for the last words
        for thread in state.threads[1:]:
            thread.join(0.5)
        tail = state.log_tail()
        state.fail(TransportError("{}: the server process {} before answering{}".format(
            state.label, "exited with status {}".format(code) if code is not None else "closed its stdout",
            "; its log ends with: " + preview(tail[-1000:], 1000) if tail else ""),
            client=state.label, retryable=False, exit_code=code))


def _dispatch(state: _State, message: Message) -> None:
    if message.kind in ("result", "error"):
        with state.lock:
            pending = state.pending.get(message.id)
        if pending is None:  # an answer nobody waits for any more (a call that timed out): kept a while
            with state.lock:
                state.late[message.id] = message
                while len(state.late) > 16:
                    del state.late[next(iter(state.late))]
            return
        pending.message = message
        pending.event.set()
        return
    if message.kind == "request":
        handler = state.on_request
    else:
        handler = state.on_notification
        related = None
        params = message.params if isinstance(message.params, dict) else {}
        token = params.get("progressToken")
        if token is not None:
            with state.lock:
                related = state.pending.get(token)
            if related is not None and related.on_message is not None:
                try:
                    related.on_message(message)
                except Exception:  # a caller's callback must not stop the reader
                    pass
                return
    if handler is not None:
        try:
            handler(message)
        except Exception:  # pragma: no cover - the handle's handlers do not raise
            pass


def _read_stderr(state: _State) -> None:
    stream = state.process.stderr
    try:
        while True:
            chunk = stream.read1(65536) if hasattr(stream, "read1") else stream.read(65536)
            if not chunk:
                break
            with state.lock:
                state.stderr.extend(chunk)
                if len(state.stderr) > STDERR_KEEP:
                    del state.stderr[:len(state.stderr) - STDERR_KEEP]
    except (OSError, ValueError):
        pass


def _shutdown(state: _State) -> None:
    """Close stdin, wait, terminate, wait, kill; join the readers; close the pipes (idempotent)."""
    state.closing = True
    process = state.process
    try:
        if process.stdin is not None:
            with state.write_lock:
                process.stdin.close()
    except (OSError, ValueError):
        pass
    for step in (None, "terminate", "kill"):
        if step is not None:
            try:
                getattr(process, step)()
            except OSError:
                pass
        try:
            process.wait(SHUTDOWN_GRACE)
            break
        except subprocess.TimeoutExpired:
            continue
    else:  # pragma: no cover - a process that survives SIGKILL
        process.wait()
    current = threading.current_thread()
    for thread in state.threads:
        if thread is not current:
            thread.join(SHUTDOWN_GRACE)
    for stream in (process.stdout, process.stderr):
        try:
            if stream is not None:
                stream.close()
        except (OSError, ValueError):
            pass
    state.fail(TransportError("{}: the MCP connection is closed".format(state.label), client=state.label,
                              retryable=False, aborted=True))


class StdioChannel(Channel):
    """One subprocess speaking MCP on its stdin and stdout; thread-safe."""

    extra_versions = ("2024-11-05",)  # stdio existed then (its HTTP transport was HTTP+SSE)
    span_transport = "pipe"

    @classmethod
    def accepts(cls, target: Any) -> bool:
        return isinstance(target, (list, tuple)) and bool(target) and all(isinstance(part, str) for part in target)

    @classmethod
    def open(cls, target: Any, *, name: Optional[str] = None, timeout: float = 60.0, headers: Any = None,
             env: Optional[Dict[str, str]] = None, cwd: Optional[str] = None,
             inherit_env: bool = False) -> "StdioChannel":
        if headers is not None:
            raise ConfigError("headers are for an HTTP server (a URL), not a command")
        return cls(list(target), env, cwd, timeout, name)

    @property
    def probe_timeout(self) -> Optional[float]:  # type: ignore[override]
        return PROBE_TIMEOUT

    def falls_back(self, error: BaseException) -> bool:
        """2026-07-28 transports/stdio "Backward Compatibility": any error that is not a modern one, and
        no answer in time (a server that exited is no such silence)."""
        if modern_refusal(error):
            return False
        if isinstance(error, MCPError):
            return True
        return isinstance(error, TransportError) and bool(error.timeout) and not error.__dict__.get("exit_code")

    def __init__(self, command: List[str], env: Optional[Dict[str, str]] = None, cwd: Optional[str] = None,
                 timeout: float = 60.0, name: Optional[str] = None) -> None:
        if not command or not all(isinstance(part, str) for part in command):
            raise ConfigError("a stdio MCP server is a command: a non-empty list of strings")
        if env is not None and not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
            raise ConfigError("env must map str to str")
        merged = dict(os.environ)
        merged.update(env or {})
        self.label = name or os.path.basename(command[0])
        self.timeout = timeout
        # the values given in env= are the caller's secrets: kept out of errors
        self.secrets = sorted({v for v in (env or {}).values() if len(v) >= 8}, key=len, reverse=True)
        try:
            process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                       stderr=subprocess.PIPE, env=merged, cwd=cwd, bufsize=0,
                                       close_fds=True)
        except (OSError, ValueError) as exc:
            raise ConfigError("{}: could not start the MCP server: {}".format(
                self.label, exc.strerror if isinstance(exc, OSError) and exc.strerror else exc)) from None
        self.pid = process.pid
        self._state = state = _State(process, self.label)
        for target, what in ((_read_stdout, "stdout"), (_read_stderr, "stderr")):
            thread = threading.Thread(target=target, args=(state,), name="agenthub-mcp-{}-{}".format(what, process.pid),
                                      daemon=True)
            state.threads.append(thread)
        for thread in state.threads:
            thread.start()
        self._finalizer = weakref.finalize(self, _shutdown, state)

    # handlers for what the server sends unasked
    def set_handlers(self, on_request: Callable[[Message], None], on_notification: Callable[[Message], None]) -> None:
        # weakly: the reader thread holds the state, and must not keep the handle (and so the channel) alive
        self._state.on_request = _weak(on_request)
        self._state.on_notification = _weak(on_notification)

    @property
    def stderr_tail(self) -> str:
        """The end of the server's log (at most STDERR_KEEP bytes)."""
        return self._state.log_tail()

    def _write(self, message: Dict[str, Any]) -> None:
        state = self._state
        data = jsonrpc.encode(message) + b"\n"
        with state.write_lock:
            if state.failure is not None:
                raise self._failure()
            try:
                state.process.stdin.write(data)
                state.process.stdin.flush()
            except (OSError, ValueError):
                pass  # the reader sees the end of the child and says why

    def _failure(self) -> AgentHubError:
        error = self._state.failure
        assert error is not None
        copy = type(error).__new__(type(error))
        copy.__dict__.update(error.__dict__)
        copy._fields = dict(error._fields)
        copy.args = error.args
        return copy

    def post(self, message: Dict[str, Any], headers: Any = None, timeout: Optional[float] = None) -> None:
        self._write(message)

    def exchange(self, message: Dict[str, Any], headers: Any = None, timeout: Optional[float] = None,
                 on_message: Optional[Callable[[Message], None]] = None, resumable: bool = False) -> Answer:
        try:
            return self._exchange(message, timeout, on_message)
        except AgentHubError as error:
            scrub(error, self.secrets)  # env= values a server's log may echo
            raise

    def _exchange(self, message: Dict[str, Any], timeout: Optional[float],
                  on_message: Optional[Callable[[Message], None]]) -> Answer:
        timeout = self.timeout if timeout is None else timeout
        state = self._state
        ident = message["id"]
        pending = _Pending(on_message)
        with state.lock:
            if state.failure is not None:
                pending = None  # type: ignore[assignment]
            else:
                state.pending[ident] = pending
        if pending is None:
            raise self._failure()
        try:
            self._write(message)
            if not pending.event.wait(timeout):
                self._cancel(ident)
                tail = state.log_tail()
                raise TransportError("{}: no answer to {} within {:g} s{}".format(
                    self.label, message.get("method"), timeout,
                    "; the server's log ends with: " + preview(tail[-500:], 500) if tail else ""),
                    client=self.label, timeout=True)
            if pending.message is None:
                raise self._failure()
            return Answer(pending.message)
        finally:
            with state.lock:
                state.pending.pop(ident, None)

    def _cancel(self, ident: Any) -> None:
        try:
            self._write(jsonrpc.notification("notifications/cancelled", {"requestId": ident, "reason": "timeout"}))
        except AgentHubError:
            pass

    def late_answer(self, ident: Any) -> Optional[Message]:
        """The answer to request ``ident`` if it arrived after its call timed out."""
        with self._state.lock:
            return self._state.late.pop(ident, None)

    def alive(self) -> bool:
        return self._state.failure is None

    def abort(self) -> None:
        """Fail every pending call at once (the process stays)."""
        self._state.fail(TransportError("{}: aborted".format(self.label), client=self.label, aborted=True,
                                        retryable=False))

    def close(self) -> None:
        self._finalizer()


def _weak(method: Callable[[Message], None]) -> Callable[[Message], None]:
    try:
        ref = weakref.WeakMethod(method)  # type: Any
    except TypeError:  # a plain function
        return method

    def call(message: Message) -> None:
        target = ref()
        if target is not None:
            target(message)

    return call
