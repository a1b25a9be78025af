"""The MCP channel contract: what the handle (``handle.Server``) asks of a transport, and nothing more.

A channel carries JSON-RPC messages to one server and back.  The handle never asks which transport
it holds: what differs between them is said by the attributes and methods below, and ``connect``
picks the channel from ``CHANNELS`` (the first whose ``accepts(target)`` is true).

Methods (every wait bounded by the ``timeout`` given, or the channel's own):

- ``exchange(message, headers, timeout, on_message=None, resumable=False) -> Answer``: send a request,
  return its response; messages the server sends meanwhile go to ``on_message``.  ``resumable``: the
  handle allows resuming a cut answer (handshake era), for a channel whose ``resumable`` is true.
- ``post(message, headers, timeout)``: send a notification or a response; nothing is read.
- ``set_handlers(on_request, on_notification)``: what the server sends outside any exchange.
- ``falls_back(error) -> bool``: whether a failed modern first request means "speak the handshake era".
- ``deprecated(error, timeout) -> bool``: whether a failed ``initialize`` came from a server of a
  transport agenthub does not speak (the handle then refuses it with UnsupportedOperationError).
- ``late_answer(ident)``: an answer that came after its exchange gave up (None when not kept).
- ``started(headers)``: the handshake is done (``headers``: what a later request carries); a channel
  may open what listens for the server's own messages here (``hears_changes`` says whether it does).
- ``ends_session(headers)``: end the server-side session (``headers`` from ``Session.end_headers()``).
- ``abort()``: fail every exchange in flight at once (TransportError with ``aborted``), from any thread.
- ``close(grace=None)``: abort, then release everything (threads, sockets, the child process), within
  the channel's timeout; ``grace``: how long a server may take to go on its own (None: the channel's
  default); idempotent.

``headers`` are the MCP headers of the message (``Session.headers``); a channel whose
``carries_headers`` is false ignores them.
"""

import json
import weakref
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from .._redact import scrub_text
from ..attempts import scrub as _scrub
from ..errors import AgentHubError
from . import jsonrpc
from .jsonrpc import MCPError, Message
from .._jsondepth import loads as _json_loads

__all__ = ["Channel", "Answer", "CHANNELS", "modern_refusal", "scrub"]

#: the channel classes ``connect`` tries, in order: (module, class name) inside agenthub.mcp (imported on use:
#: the HTTP channel imports requests)
CHANNELS = ((".http", "HttpChannel"), (".stdio", "StdioChannel"))


class Answer(object):
    """What one exchange brought back: the response message, and the HTTP status and headers (None
    where the channel has none)."""

    __slots__ = ("message", "status", "headers")

    def __init__(self, message: Message, status: Optional[int] = None, headers: Any = None) -> None:
        self.message = message
        self.status = status
        self.headers = headers


def scrub(error: BaseException, secrets: Sequence[str]) -> None:
    """Replace each secret in the error's message and text fields with ``***`` (``attempts.scrub``), and in
    what the server attached as it sent it (a JSON-RPC error's ``data``, an InputRequiredError's requests)."""
    if not secrets or not isinstance(error, AgentHubError):
        return
    secrets = list(secrets)
    _scrub(error, secrets)
    fields = getattr(error, "_fields", None)
    if isinstance(fields, dict):
        for name, value in list(fields.items()):
            if isinstance(value, (dict, list)):
                text = json.dumps(value, ensure_ascii=False, default=str)
                clean = scrub_text(text, secrets)
                if clean != text:
                    try:
                        fields[name] = _json_loads(clean)
                    except ValueError:
                        fields[name] = None
                    setattr(error, name, fields[name])


def modern_refusal(error: BaseException) -> bool:
    """A recognised modern JSON-RPC error (2026-07-28): an answer, never a reason to fall back."""
    return isinstance(error, MCPError) and error.code in jsonrpc.MODERN_ERROR_CODES


class Channel(object):
    """The base of the channels: the contract's attributes with their defaults, and no-op methods."""

    #: the channel's name in errors and reprs
    label = "mcp"
    #: where the server lives, for the era cache (an HTTP origin; None: nothing to cache by)
    origin = None  # type: Any
    #: seconds the unpinned ``server/discover`` probe waits before silence means the handshake era
    #: (None: the request's timeout, silence being an error)
    probe_timeout = None  # type: Optional[float]
    #: a handshake-era answer cut short may be resumed by the channel (``exchange(resumable=True)``)
    resumable = False
    #: after a timeout the handle sends ``notifications/cancelled`` itself (handshake era); a channel
    #: that does it on its own, or cancels by closing, says False
    cancels_on_timeout = False
    #: MCP headers travel (tools' ``x-mcp-header`` marks are read and sent)
    carries_headers = False
    #: revisions spoken over this channel besides the Streamable HTTP ones (stdio: 2024-11-05)
    extra_versions = ()  # type: Tuple[str, ...]
    #: the server's notifications reach the handle (list_changed): a list without ``ttlMs`` may be cached
    hears_changes = True
    #: the caller's credentials (header values, ``env=`` values): kept out of every error, including the
    #: error answers the handle reads (a server may echo them)
    secrets = ()  # type: Sequence[str]
    #: telemetry: the server's URL (``server.address``) and the network transport ("pipe")
    span_server = None  # type: Optional[str]
    span_transport = None  # type: Optional[str]

    @classmethod
    def accepts(cls, target: Any) -> bool:  # pragma: no cover - each channel says
        return False

    @property
    def stderr_tail(self) -> str:
        """The end of the server's log ("" when the channel has none)."""
        return ""

    def set_handlers(self, on_request: Callable[[Message], None],
                     on_notification: Callable[[Message], None]) -> None:
        pass

    def exchange(self, message: Dict[str, Any], headers: Dict[str, str], timeout: Optional[float] = None,
                 on_message: Optional[Callable[[Message], None]] = None, resumable: bool = False) -> Answer:
        raise NotImplementedError  # pragma: no cover

    def post(self, message: Dict[str, Any], headers: Dict[str, str], timeout: Optional[float] = None) -> None:
        raise NotImplementedError  # pragma: no cover

    def falls_back(self, error: BaseException) -> bool:
        return False

    def deprecated(self, error: AgentHubError, timeout: float) -> bool:
        return False

    def late_answer(self, ident: Any) -> Optional[Message]:
        return None

    def started(self, headers: Dict[str, str]) -> None:
        pass

    def ends_session(self, headers: Optional[Dict[str, str]]) -> None:
        pass

    def abort(self) -> None:
        pass

    def close(self, grace: Optional[float] = None) -> None:
        pass


def weak_handler(method: Callable[[Message], None]) -> Callable[[Message], None]:
    """``method`` held weakly (a thread of the channel must not keep the handle alive)."""
    try:
        ref = weakref.WeakMethod(method)  # type: Any
    except TypeError:  # a plain function
        return method

    def call(message: Message) -> None:
        target = ref()
        if target is not None:
            target(message)

    return call
