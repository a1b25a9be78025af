"""The stdio transport: the MCP server as a subprocess, one JSON-RPC message per line.

stdout carries the protocol and nothing else: a line that is not a JSON-RPC message breaks the
connection (a typed error for every call, the line shown); it is read in chunks (``os.read``) and
split on newlines here, a line longer than ``MAX_LINE_BYTES`` refused.  stderr is the server's log:
read by a thread of its own, the last ``STDERR_KEEP`` bytes kept and shown in errors, never parsed.
A child that exits fails every pending call at once (its exit status and the end of its log in the
error).

Environment: the server gets the short list of variables the official SDK passes on
(``SAFE_ENV``: HOME, LOGNAME, PATH, SHELL, TERM, USER; on Windows the SDK's Windows list) plus
``env``; the whole environment (every provider key in it) only with ``inherit_env=True``.

Writes: one writer thread per server sends the queued messages in order, so no caller ever blocks on
a full pipe: a request waits for its write with its own deadline, and a server that does not read
its stdin in time is ended (its process group killed) with a TransportError (timeout).  Answers to
the server's own requests are queued without waiting (the reader thread never blocks on stdin); a
queue past ``MAX_QUEUED_BYTES`` ends the server too.

Shutdown (2026-07-28 transports/stdio "Shutdown"): the calls in flight fail at once (``abort``); close
stdin, wait, SIGTERM, wait, SIGKILL, to the server's whole process group on POSIX (it is started in a
session of its own, so what it spawned goes too); each wait is ``SHUTDOWN_GRACE`` at most and a
quarter of the channel's timeout (after SIGKILL: 5 s, then ``SHUTDOWN_GRACE`` more; a process still there is
reported and left, its pipes closed).  The threads are joined and the pipes closed, by ``close()``, by the
garbage collector or at interpreter exit (a ``weakref.finalize``), whichever comes first.  On POSIX the
threads wait on their pipe and on a stop pipe the shutdown writes to, so a pipe that a process outside the
group keeps open (one the server spawned in a session of its own) holds no thread past ``close()``.
"""

import collections
import logging
import os
import select
import signal
import subprocess
import sys
import threading
import time
import weakref
from typing import Any, Callable, Deque, Dict, List, Optional, Tuple

from .._redact import env_secrets
from ..errors import AgentHubError, ConfigError, StreamProtocolError, TransportError, preview
from . import jsonrpc
from .channel import Answer, Channel, modern_refusal, scrub, weak_handler
from .jsonrpc import MCPError, Message

__all__ = ["StdioChannel", "STDERR_KEEP", "MAX_LINE_BYTES", "PROBE_TIMEOUT", "SAFE_ENV", "MAX_QUEUED_BYTES"]

#: the end of the server's log kept for errors
STDERR_KEEP = 8 * 1024
#: the longest line (one message) read from stdout
MAX_LINE_BYTES = 16 * 1024 * 1024
#: the most bytes waiting to be written to a server's stdin (a server that reads nothing is ended past it)
MAX_QUEUED_BYTES = 64 * 1024 * 1024
#: seconds given to each step of the shutdown at most (after closing stdin; after SIGTERM)
SHUTDOWN_GRACE = 2.0
#: how long the unpinned ``server/discover`` probe waits (at most half the start-up's time) before taking
#: silence for the handshake era
PROBE_TIMEOUT = 10.0
#: the variables of this process a server gets without ``inherit_env`` (the official SDK's lists)
SAFE_ENV = (("APPDATA", "HOMEDRIVE", "HOMEPATH", "LOCALAPPDATA", "PATH", "PATHEXT", "PROCESSOR_ARCHITECTURE",
             "SYSTEMDRIVE", "SYSTEMROOT", "TEMP", "USERNAME", "USERPROFILE") if sys.platform == "win32"
            else ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"))
_POSIX = os.name == "posix"

logger = logging.getLogger("agenthub")
_READ = 64 * 1024


def environment(env: Optional[Dict[str, str]] = None, inherit_env: bool = False) -> Dict[str, str]:
    """The environment a server gets: ``SAFE_ENV`` of this process's (a value that is a shell function,
    ``()...``, left out), or all of it with ``inherit_env``; then ``env`` over it."""
    if inherit_env:
        merged = dict(os.environ)
    else:
        merged = {}
        for key in SAFE_ENV:
            value = os.environ.get(key)
            if value is not None and not value.startswith("()"):
                merged[key] = value
    merged.update(env or {})
    return merged


class _Pending(object):
    __slots__ = ("event", "message", "on_message")

    def __init__(self, on_message: Any) -> None:
        self.event = threading.Event()
        self.message = None  # type: Optional[Message]
        self.on_message = on_message


class _State(object):
    """What the threads and the finalizer share (no reference to the channel: it may be collected)."""

    def __init__(self, process: Any, label: str, timeout: float) -> None:
        self.process = process
        self.label = label
        self.grace = min(SHUTDOWN_GRACE, timeout / 4.0)
        self.lock = threading.Lock()
        self.pending = {}  # type: Dict[Any, _Pending]
        self.failure = None  # type: Optional[AgentHubError]
        self.stderr = bytearray()
        self.threads = []  # type: List[threading.Thread]  # stdout reader, stderr reader, writer
        self.on_request = None  # type: Optional[Callable[[Message], None]]
        self.on_notification = None  # type: Optional[Callable[[Message], None]]
        self.closing = False
        #: the ids of the latest calls that gave up waiting (a probe that timed out): an answer to one of them is
        #: kept (``late``, the latest one only, by id); an answer to any other id nobody waits for is dropped
        #: (a server cannot make the client hold answers it never asked for, nor many it gave up on)
        self.abandoned = collections.deque(maxlen=16)  # type: Deque[Any]
        self.late = {}  # type: Dict[Any, Message]
        # the writer's queue: (bytes, written) in order; what is queued and unwritten; when the write in hand began
        self.queue = collections.deque()  # type: Deque[Tuple[bytes, threading.Event]]
        self.queued = 0
        self.wake = threading.Condition(self.lock)
        self.writing_since = None  # type: Optional[float]
        self.writer_done = False
        # the readers wait on their pipe and on this one, which the shutdown writes to: a pipe that a process
        # outside the server's group keeps open (one it spawned in a session of its own) never ends, and a
        # read blocked on it would outlive close() (POSIX with poll; elsewhere a plain blocking read)
        self.stop_pipe = None  # type: Optional[Tuple[int, int]]
        if _POSIX and hasattr(select, "poll"):
            self.stop_pipe = os.pipe()

    def log_tail(self) -> str:
        with self.lock:
            text = bytes(self.stderr).decode("utf-8", "replace")
        return text.strip()

    def fail(self, error: AgentHubError) -> None:
        with self.lock:
            if self.failure is None:
                self.failure = error
            waiting = list(self.pending.values())
            self.wake.notify_all()
        for pending in waiting:
            pending.event.set()

    def signal(self, number: int) -> None:
        """Send ``number`` to the server's process group (POSIX; the process alone elsewhere)."""
        process = self.process
        try:
            if _POSIX:
                os.killpg(process.pid, number)
            elif number == signal.SIGTERM:
                process.terminate()
            else:
                process.kill()
        except (OSError, ValueError):
            pass  # gone already (or not ours to signal)

    def end(self, error: AgentHubError) -> None:
        """The server cannot be written to in time: fail everything and kill it (the reader then sees it go)."""
        self.fail(error)
        self.signal(getattr(signal, "SIGKILL", signal.SIGTERM))


def _reads(state: _State, fd: int) -> Callable[[], Optional[bytes]]:
    """The reads of pipe ``fd``: a chunk, b"" at its end, None once the shutdown said stop (``stop_pipe``)."""
    if state.stop_pipe is None:
        return lambda: os.read(fd, _READ)
    stop = state.stop_pipe[0]
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    poller.register(stop, select.POLLIN)

    def read() -> Optional[bytes]:
        ready = {number for number, _ in poller.poll()}
        if stop in ready:
            return None
        return os.read(fd, _READ)

    return read


def _read_stdout(state: _State) -> None:
    buffer = bytearray()
    cut = 0  # bytes of a last line that is no message (the server ended in the middle of one)
    try:
        read = _reads(state, state.process.stdout.fileno())
        while True:
            chunk = read()
            if chunk is None:
                return  # the shutdown is under way
            if not chunk:
                if buffer.strip():
                    try:  # a last message without its newline is still one
                        message = jsonrpc.decode(bytes(buffer), state.label)
                    except StreamProtocolError:
                        cut = len(buffer)
                    else:
                        _dispatch(state, message)
                break
            searched = len(buffer)
            buffer += chunk
            start = 0
            while True:
                end = buffer.find(b"\n", searched)
                if end < 0:
                    break
                if end - start > MAX_LINE_BYTES:
                    return _too_long(state)
                if not _line(state, bytes(buffer[start:end + 1])):
                    return
                start = searched = end + 1
            if start:
                del buffer[:start]
            if len(buffer) > MAX_LINE_BYTES:
                return _too_long(state)
    except (OSError, ValueError):
        pass  # the pipe was closed under us (close())
    if not state.closing:
        code = None
        try:
            code = state.process.wait(SHUTDOWN_GRACE)
        except subprocess.TimeoutExpired:
            pass
        # the log thread sees the end of stderr at about the same time: give it a moment for the last words
        state.threads[1].join(0.5)
        tail = state.log_tail()
        state.fail(TransportError("{}: the server process {} {}{}".format(
            state.label, "exited with status {}".format(code) if code is not None else "closed its stdout",
            "in the middle of a message (its last {} bytes were no complete line)".format(cut) if cut
            else "before answering", "; its log ends with: " + preview(tail[-1000:], 1000) if tail else ""),
            client=state.label, retryable=False, exit_code=code))


def _too_long(state: _State) -> None:
    state.fail(StreamProtocolError("{}: the server wrote a line longer than {} bytes on stdout".format(
        state.label, MAX_LINE_BYTES), client=state.label))


def _line(state: _State, line: bytes) -> bool:
    """One line of stdout; False when it broke the connection."""
    if not line.strip():
        return True
    try:
        message = jsonrpc.decode(line, state.label)
    except StreamProtocolError:
        text = line.decode("utf-8", "replace").strip()
        state.fail(StreamProtocolError(
            "{}: the server wrote something that is not a JSON-RPC message on stdout (stdout is for "
            "the protocol alone; a log belongs on stderr): {}".format(state.label, preview(text, 200)),
            client=state.label))
        return False
    _dispatch(state, message)
    return True

def _dispatch(state: _State, message: Message) -> None:
    if message.kind in ("result", "error"):
        with state.lock:
            pending = state.pending.get(message.id)
        if pending is None:  # an answer nobody waits for: kept only for a call that gave up, and only the latest
            with state.lock:
                if message.id is not None and message.id in state.abandoned:
                    state.abandoned.remove(message.id)
                    state.late = {message.id: message}
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
        if isinstance(token, (str, int)):  # a token is a string or a number (a list, say, is no key to look up)
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
    try:
        read = _reads(state, state.process.stderr.fileno())
        while True:
            chunk = read()
            if not chunk:
                break
            with state.lock:
                state.stderr.extend(chunk)
                if len(state.stderr) > STDERR_KEEP:
                    del state.stderr[:len(state.stderr) - STDERR_KEEP]
    except (OSError, ValueError):
        pass


def _writes(state: _State, fd: int) -> Callable[[memoryview], Optional[int]]:
    """The writes to pipe ``fd``: the bytes written, None once the shutdown said stop (``stop_pipe``: then the
    pipe is non-blocking and waited on with it, so a write that a process outside the group blocks ends)."""
    if state.stop_pipe is None:
        return lambda view: os.write(fd, view)
    stop = state.stop_pipe[0]
    os.set_blocking(fd, False)
    poller = select.poll()
    poller.register(fd, select.POLLOUT)
    poller.register(stop, select.POLLIN)

    def write(view: memoryview) -> Optional[int]:
        while True:
            try:
                return os.write(fd, view)
            except BlockingIOError:  # the pipe is full: wait for room, or for the shutdown
                if stop in {number for number, _ in poller.poll()}:
                    return None

    return write


def _write_queue(state: _State) -> None:
    """The writer thread: the queued messages to stdin, in order, whole (a blocked write holds no lock)."""
    try:
        write = _writes(state, state.process.stdin.fileno())
    except (OSError, ValueError):  # pragma: no cover - stdin closed before the thread ran
        write = None
    broken = False  # the server closed its stdin
    while write is not None:
        with state.lock:
            while not state.queue and not state.closing and state.failure is None:
                state.wake.wait()
            if not state.queue or state.failure is not None:
                break
            data, written = state.queue.popleft()
            state.writing_since = time.monotonic()
        try:
            view = memoryview(data)
            while view:
                count = write(view)
                if count is None:
                    raise OSError("the shutdown stopped the write")
                view = view[count:]
        except (OSError, ValueError) as exc:
            written.set()
            broken = isinstance(exc, BrokenPipeError)
            break  # the child's stdin is gone: the reader sees the end of the child and says why
        finally:
            with state.lock:
                state.writing_since = None
                state.queued -= len(data)
        written.set()
    with state.lock:
        state.writer_done = True
        left = list(state.queue)
        state.queue.clear()
    for _, written in left:
        written.set()
    if broken and not state.closing:
        try:  # a server that exits: the reader says so, with its status and its log
            state.process.wait(SHUTDOWN_GRACE + 1.0)
        except subprocess.TimeoutExpired:  # one that runs on with its stdin closed would leave each call to time out
            state.fail(TransportError("{}: the server closed its stdin (it reads no more requests)".format(
                state.label), client=state.label, retryable=False, exit_code=None))


def _shutdown(state: _State, grace: Optional[float] = None) -> None:
    """Stop the writer, close stdin, wait, SIGTERM the group, wait, SIGKILL it; join the threads; close
    the pipes (idempotent).  ``grace``: each wait (default: the channel's)."""
    grace = state.grace if grace is None else grace
    process = state.process
    with state.lock:
        state.closing = True
        state.wake.notify_all()
        stuck = state.writing_since is not None
    writer = state.threads[2] if len(state.threads) > 2 else None
    if writer is not None and not stuck:
        writer.join(min(grace, 0.5))
    steps = [("stdin", grace), (signal.SIGTERM, grace),
             (getattr(signal, "SIGKILL", signal.SIGTERM), 5.0)]  # type: List[Tuple[Any, float]]
    if stuck:
        steps = steps[1:]  # a server that does not read its stdin does not see it close
    for step, wait in steps:
        if step == "stdin":
            if writer is None or not writer.is_alive():
                try:
                    process.stdin.close()
                except (OSError, ValueError):
                    pass
        else:
            state.signal(step)
        if _wait_group(process, wait, group=step != getattr(signal, "SIGKILL", None)):  # SIGKILL is not refused
            break
    else:  # a process that outlives SIGKILL (stuck in the kernel, in an uninterruptible read of a dead disk, say)
        try:
            process.wait(SHUTDOWN_GRACE)
        except subprocess.TimeoutExpired:  # reported and left (its pipes are closed below): close() returns
            logger.warning("%s: the server process (pid %s) has not exited after SIGKILL: it is left as it is "
                           "(its pipes closed, not waited for)", state.label, process.pid)
    if state.stop_pipe is not None:  # the readers stop now, even on a pipe a process outside the group keeps open
        try:
            os.write(state.stop_pipe[1], b"x")
        except OSError:  # pragma: no cover - a pipe of one byte is not full
            pass
    current = threading.current_thread()
    for thread in state.threads:
        if thread is not current:
            thread.join(SHUTDOWN_GRACE)
    for stream in (process.stdin, process.stdout, process.stderr):
        try:
            if stream is not None:
                stream.close()
        except (OSError, ValueError):
            pass
    if state.stop_pipe is not None:
        for fd in state.stop_pipe:
            try:
                os.close(fd)
            except OSError:  # pragma: no cover
                pass
        state.stop_pipe = None
    state.fail(TransportError("{}: the MCP connection is closed".format(state.label), client=state.label,
                              retryable=False, aborted=True))


def _wait_group(process: Any, seconds: float, group: bool = True) -> bool:
    """Wait (at most ``seconds``) for the server to exit and, on POSIX with ``group``, for the rest of its
    process group (what it spawned in its session); True when they are gone."""
    deadline = time.monotonic() + seconds
    try:
        process.wait(max(0.0, seconds))
    except subprocess.TimeoutExpired:
        return False
    if not _POSIX or not group:
        return True
    while _group_alive(process.pid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)
    return True


def _group_alive(pgid: int) -> bool:
    """Whether a process of group ``pgid`` still runs (a zombie runs nothing: on Linux /proc tells them apart)."""
    try:
        os.killpg(pgid, 0)
    except OSError:
        return False  # gone (or not ours to signal: nothing more this process can do)
    if not os.path.isdir("/proc/self"):
        return True
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open("/proc/{}/stat".format(name), "rb") as handle:
                    fields = handle.read().rsplit(b")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if len(fields) > 2 and fields[2] == str(pgid).encode() and fields[0] != b"Z":
                return True
    return False


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
        return cls(list(target), env, cwd, timeout, name, inherit_env=inherit_env)

    @property
    def probe_timeout(self) -> Optional[float]:  # type: ignore[override]
        return min(PROBE_TIMEOUT, self.timeout / 2.0)  # the rest of the start-up is initialize's

    def falls_back(self, error: BaseException) -> bool:
        """2026-07-28 transports/stdio "Backward Compatibility": any error that is not a modern one, and
        no answer in time (a server that exited is no such silence)."""
        if modern_refusal(error):
            return False
        if isinstance(error, MCPError):
            return True
        return isinstance(error, TransportError) and bool(error.timeout) and not error.__dict__.get("exit_code")

    def __init__(self, command: List[str], env: Optional[Dict[str, str]] = None, cwd: Optional[str] = None,
                 timeout: float = 60.0, name: Optional[str] = None, inherit_env: bool = False) -> None:
        if not command or not all(isinstance(part, str) for part in command):
            raise ConfigError("a stdio MCP server is a command: a non-empty list of strings")
        if env is not None and not (isinstance(env, dict) and all(
                isinstance(k, str) and isinstance(v, str) for k, v in env.items())):
            raise ConfigError("env must map str to str")
        if not isinstance(inherit_env, bool):
            raise ConfigError("inherit_env must be True or False")
        merged = environment(env, inherit_env)
        self.label = name or os.path.basename(command[0])
        self.timeout = timeout
        # the values given in env= are the caller's secrets, and so are the secrets of the environment the server
        # gets (all of this process's with inherit_env): kept out of errors (its log may print them)
        self.secrets = sorted({v for v in (env or {}).values() if len(v) >= 8} | set(env_secrets(merged)),
                              key=len, reverse=True)
        try:
            process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                       stderr=subprocess.PIPE, env=merged, cwd=cwd, bufsize=0,
                                       close_fds=True, start_new_session=_POSIX)  # its own group: killed whole
        except (OSError, ValueError) as exc:
            raise ConfigError("{}: could not start the MCP server: {}".format(
                self.label, exc.strerror if isinstance(exc, OSError) and exc.strerror else exc)) from None
        self.pid = process.pid
        self._state = state = _State(process, self.label, timeout)
        for target, what in ((_read_stdout, "stdout"), (_read_stderr, "stderr"), (_write_queue, "stdin")):
            thread = threading.Thread(target=target, args=(state,), name="agenthub-mcp-{}-{}".format(what, process.pid),
                                      daemon=True)
            state.threads.append(thread)
        for thread in state.threads:
            thread.start()
        self._finalizer = weakref.finalize(self, _shutdown, state)

    # handlers for what the server sends unasked
    def set_handlers(self, on_request: Callable[[Message], None], on_notification: Callable[[Message], None]) -> None:
        # weakly: the reader thread holds the state, and must not keep the handle (and so the channel) alive
        self._state.on_request = weak_handler(on_request)
        self._state.on_notification = weak_handler(on_notification)

    @property
    def stderr_tail(self) -> str:
        """The end of the server's log (at most STDERR_KEEP bytes)."""
        return self._state.log_tail()

    def _queue(self, message: Dict[str, Any]) -> threading.Event:
        """Queue ``message`` for the writer; the event is set once it is written (or cannot be)."""
        state = self._state
        data = jsonrpc.encode(message) + b"\n"
        written = threading.Event()
        with state.lock:
            if state.failure is not None or state.closing:
                failed = True
            else:
                failed = False
                over = state.queued > MAX_QUEUED_BYTES  # the backlog before this message (one big message is no flood)
                state.queue.append((data, written))
                state.queued += len(data)
                state.wake.notify()
        if failed:
            if state.failure is None:
                raise TransportError("{}: the MCP connection is closed".format(self.label), client=self.label,
                                     retryable=False, aborted=True)
            raise self._failure()
        if over:
            state.end(TransportError("{}: the server does not read its stdin ({} bytes wait to be written); it "
                                     "was ended".format(self.label, MAX_QUEUED_BYTES), client=self.label,
                                     retryable=False))
        return written

    def _write(self, message: Dict[str, Any], deadline: float) -> None:
        """Write ``message`` by ``deadline`` (monotonic seconds); a server that does not read it in time is
        ended (TransportError with ``timeout``)."""
        written = self._queue(message)
        if not written.wait(max(0.0, deadline - time.monotonic())):
            self._state.end(TransportError(
                "{}: the server did not read its stdin within the timeout; it was ended".format(self.label),
                client=self.label, retryable=False, timeout=True))
        if self._state.failure is not None:
            raise self._failure()

    def _failure(self) -> AgentHubError:
        error = self._state.failure
        assert error is not None
        copy = type(error).__new__(type(error))
        copy.__dict__.update(error.__dict__)
        copy._fields = dict(error._fields)
        copy.args = error.args
        return copy

    def post(self, message: Dict[str, Any], headers: Any = None, timeout: Optional[float] = None) -> None:
        """Send a notification or a response.  From the reader thread (an answer to the server's own
        request) it is queued without waiting: the reader never blocks on the server's stdin."""
        try:
            if threading.current_thread() is self._state.threads[0]:
                self._queue(message)
                return
            self._write(message, time.monotonic() + (self.timeout if timeout is None else timeout))
        except AgentHubError as error:
            scrub(error, self.secrets)  # (the end of the server's log, in an error that it exited)
            raise

    def exchange(self, message: Dict[str, Any], headers: Any = None, timeout: Optional[float] = None,
                 on_message: Optional[Callable[[Message], None]] = None, resumable: bool = False) -> Answer:
        try:
            return self._exchange(message, timeout, on_message)
        except AgentHubError as error:
            scrub(error, self.secrets)  # env= values a server's log may echo
            raise

    def _exchange(self, message: Dict[str, Any], timeout: Optional[float],
                  on_message: Optional[Callable[[Message], None]]) -> Answer:
        state = self._state
        if state.threads and threading.current_thread() is state.threads[0]:
            # (the thread that reads the answers, in a caller's on_progress: it would wait for itself, in vain)
            raise ConfigError("{}: a request from an on_progress callback on stdio would wait for itself".format(
                self.label))
        timeout = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + timeout
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
            # queued, and the answer awaited at once (one wait, not one for the writer and one for the reader)
            written = self._queue(message)
            if not pending.event.wait(max(0.0, deadline - time.monotonic())):
                if not written.is_set():  # not even written by the deadline: as _write, the server is ended
                    state.end(TransportError(
                        "{}: the server did not read its stdin within the timeout; it was ended".format(self.label),
                        client=self.label, retryable=False, timeout=True))
                    raise self._failure()
                with state.lock:
                    since = state.writing_since
                if since is not None and time.monotonic() - since >= timeout:  # the writer is stuck: ended
                    state.end(TransportError("{}: the server did not read its stdin within {:g} s; it was "
                                             "ended".format(self.label, timeout), client=self.label,
                                             retryable=False, timeout=True))
                with state.lock:
                    state.abandoned.append(ident)
                if message.get("method") != "initialize":  # 2025-11-25 "Cancellation": never initialize
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
        try:  # queued, not waited for: the caller's time is up
            self._queue(jsonrpc.notification("notifications/cancelled", {"requestId": ident, "reason": "timeout"}))
        except AgentHubError:
            pass

    def late_answer(self, ident: Any) -> Optional[Message]:
        """The answer to request ``ident`` if it arrived after its call timed out."""
        with self._state.lock:
            return self._state.late.pop(ident, None)

    def alive(self) -> bool:
        return self._state.failure is None

    def abort(self) -> None:
        """Fail every pending call at once (the process stays until ``close``)."""
        self._state.fail(TransportError("{}: the MCP connection is closed".format(self.label), client=self.label,
                                        aborted=True, retryable=False))

    def close(self, grace: Optional[float] = None) -> None:
        """Abort, then end the server (``grace``: each wait of the shutdown; default a quarter of the
        timeout, at most SHUTDOWN_GRACE); idempotent."""
        if grace is not None and self._finalizer.alive:
            self._finalizer.detach()
            _shutdown(self._state, grace)
            return
        self._finalizer()
