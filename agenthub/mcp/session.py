"""The MCP lifecycle, pure (no I/O, in the manner of h11): what to send and what an answer means,
with everything that differs between the two protocol eras written here and nowhere else.

- **Modern** (revision 2026-07-28): no handshake, no session.  Every request carries the protocol
  version, the client's capabilities and its info in ``params._meta`` (basic/index "_meta");
  on HTTP also the ``MCP-Protocol-Version``, ``Mcp-Method`` and ``Mcp-Name`` headers
  (transports/streamable-http "Request Metadata"), a value that is not plain ASCII sent as
  ``=?base64?...?=`` ("Value Encoding").  A result carries ``resultType``: ``complete`` (or absent,
  from an older server), ``input_required`` (refused here with InputRequiredError: supplying input
  is not implemented), anything else invalid (basic/index "Responses").
- **Handshake era** (2025-03-26 .. 2025-11-25): ``initialize`` then ``notifications/initialized``;
  on HTTP the ``MCP-Session-Id`` the server assigned goes on every later request, a 404 for it means
  "initialise again", a DELETE ends it; ``MCP-Protocol-Version`` on every request after
  initialisation (2025-06-18 and later; sent for 2025-03-26 too, which a server ignores).

``protocol="auto"`` asks the modern way first (``server/discover``) and falls back to ``initialize``
as the 2026-07-28 backward-compatibility sections say; which failures fall back is the channel's
rule (``Channel.falls_back``: on HTTP a 400/404/405 whose body is not a recognised modern JSON-RPC
error; on stdio any error that is not a modern one, or no answer in time).  Nothing here asks which
transport carries the messages: what differs is given as data (``extra_versions``).
"""

import base64
import itertools
import re
import threading
from typing import Any, Dict, List, Optional, Tuple

from ..errors import ConfigError, StreamProtocolError, preview
from . import jsonrpc
from .jsonrpc import InputRequiredError, MCPError, Message

__all__ = ["Session", "MODERN_VERSIONS", "LEGACY_VERSIONS", "STDIO_ONLY_VERSIONS", "LATEST", "header_value",
           "CLIENT_NAME", "FALL_BACK", "TRY_AGAIN"]

#: revisions with per-request metadata, newest first
MODERN_VERSIONS = ("2026-07-28",)
#: revisions with the initialize handshake over Streamable HTTP, newest first (2024-11-05 is stdio only:
#: its HTTP transport was HTTP+SSE, which agenthub refuses)
LEGACY_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26")
STDIO_ONLY_VERSIONS = ("2024-11-05",)
LATEST = MODERN_VERSIONS[0]
CLIENT_NAME = "agenthub"

_META_VERSION = "io.modelcontextprotocol/protocolVersion"
_META_INFO = "io.modelcontextprotocol/clientInfo"
_META_CAPS = "io.modelcontextprotocol/clientCapabilities"
_META_SERVER = "io.modelcontextprotocol/serverInfo"
#: methods whose params.name / params.uri is mirrored in Mcp-Name (2026-07-28 "Standard Request Headers")
_NAMED = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}
#: RFC 9110 field-value characters that may stand as they are (visible ASCII, space, tab) ...
_PLAIN = re.compile(r"^[\x21-\x7e]([\x20\x21-\x7e\t]*[\x21-\x7e])?$")
#: ... unless the value looks like the sentinel itself
_SENTINEL = re.compile(r"^=\?base64\?.*\?=$", re.S)
#: what ``version_refused`` may say: send the request again (another modern revision), or speak the handshake era
TRY_AGAIN = "again"
FALL_BACK = "handshake"
_SESSION_ID = re.compile(r"^[\x21-\x7e]{1,1024}$")  # 2025-11-25 "Session Management": visible ASCII


def header_value(text: str) -> str:
    """A header value per 2026-07-28 "Value Encoding": as it is when it is plain visible ASCII (inner
    spaces and tabs allowed, none leading or trailing), else ``=?base64?<UTF-8 base64>?=`` (also for a
    plain value that looks like the sentinel)."""
    if _PLAIN.match(text) and not _SENTINEL.match(text):
        return text
    return "=?base64?" + base64.b64encode(text.encode("utf-8")).decode("ascii") + "?="


def _version_of(protocol: Any) -> Optional[str]:
    if protocol == "auto":
        return None
    if isinstance(protocol, str) and protocol in MODERN_VERSIONS + LEGACY_VERSIONS + STDIO_ONLY_VERSIONS:
        return protocol
    raise ConfigError("protocol must be \"auto\" or one of {} (got {!r})".format(
        ", ".join(MODERN_VERSIONS + LEGACY_VERSIONS + STDIO_ONLY_VERSIONS), protocol))


class Session(object):
    """One client's view of one server: the era, the version, the ids, the session id; messages out,
    answers in.  Thread-safe (the id counter and the state changes take a lock)."""

    def __init__(self, protocol: Any = "auto", extra_versions: Tuple[str, ...] = (), client_version: str = "0",
                 server: Optional[str] = None) -> None:
        self.pinned = _version_of(protocol)
        if self.pinned in STDIO_ONLY_VERSIONS and self.pinned not in extra_versions:
            raise ConfigError("protocol {} over HTTP is the deprecated HTTP+SSE transport, which agenthub does "
                              "not speak: use a Streamable HTTP server (2025-03-26 or later)".format(self.pinned))
        #: revisions the channel speaks besides the Streamable HTTP ones (``Channel.extra_versions``)
        self.extra_versions = tuple(extra_versions)
        self.server = server
        #: "modern" or "legacy" once known
        self.era = None  # type: Optional[str]
        if self.pinned is not None:
            self.era = "modern" if self.pinned in MODERN_VERSIONS else "legacy"
        #: the revision in use (None until agreed)
        self.version = self.pinned if self.era == "modern" else None
        self.client_info = {"name": CLIENT_NAME, "version": client_version}
        #: what the server said about itself (discover or initialize)
        self.server_info = None  # type: Optional[Dict[str, Any]]
        self.capabilities = {}  # type: Dict[str, Any]
        self.instructions = None  # type: Optional[str]
        #: MCP-Session-Id (handshake era, HTTP)
        self.session_id = None  # type: Optional[str]
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    # -- ids and messages --------------------------------------------------------------------------
    def next_id(self) -> int:
        with self._lock:
            return next(self._ids)

    def _meta(self) -> Dict[str, Any]:
        # 2026-07-28 basic/index "_meta": protocolVersion and clientCapabilities required, clientInfo SHOULD
        return {_META_VERSION: self.version or LATEST, _META_INFO: dict(self.client_info), _META_CAPS: {}}

    def request(self, method: str, params: Optional[Dict[str, Any]] = None) -> Tuple[int, Dict[str, Any]]:
        """(id, message) for ``method``: in the modern era ``params._meta`` carries the version, the
        client's info and capabilities (and ``params`` is always present: the schema requires ``_meta``)."""
        ident = self.next_id()
        params = dict(params or {})
        if self.era == "modern" or (self.era is None and method == "server/discover"):
            meta = dict(params.get("_meta") or {})
            meta.update(self._meta())
            params["_meta"] = meta
        return ident, jsonrpc.request(ident, method, params or None)

    def discover_request(self) -> Tuple[int, Dict[str, Any]]:
        return self.request("server/discover")

    def initialize_request(self) -> Tuple[int, Dict[str, Any]]:
        offered = self.pinned if self.era == "legacy" and self.pinned else LEGACY_VERSIONS[0]
        ident = self.next_id()
        return ident, jsonrpc.request(ident, "initialize", {
            "protocolVersion": offered, "capabilities": {}, "clientInfo": dict(self.client_info)})

    def initialized_notification(self) -> Dict[str, Any]:
        return jsonrpc.notification("notifications/initialized")

    def cancel_notification(self, ident: Any, reason: str) -> Dict[str, Any]:
        """``notifications/cancelled`` (stdio: the only way to cancel; on HTTP closing the stream is)."""
        return jsonrpc.notification("notifications/cancelled", {"requestId": ident, "reason": reason})

    # -- HTTP headers --------------------------------------------------------------------------------
    def headers(self, message: Dict[str, Any]) -> Dict[str, str]:
        """The MCP headers of one POST carrying ``message`` (besides the caller's own)."""
        headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
        method = message.get("method")
        if self.era == "modern" or (self.era is None and method == "server/discover"):
            headers["MCP-Protocol-Version"] = self.version or LATEST
            if isinstance(method, str):
                headers["Mcp-Method"] = header_value(method)
                field = _NAMED.get(method)
                value = (message.get("params") or {}).get(field) if field else None
                if isinstance(value, str):
                    headers["Mcp-Name"] = header_value(value)
        elif self.era == "legacy" and method != "initialize":
            if self.version:
                headers["MCP-Protocol-Version"] = self.version
            if self.session_id:
                headers["MCP-Session-Id"] = self.session_id
        return headers

    def end_headers(self) -> Optional[Dict[str, str]]:
        """The headers of the DELETE that ends a handshake-era HTTP session (None: nothing to end)."""
        if self.era != "legacy" or not self.session_id:
            return None
        headers = {"MCP-Session-Id": self.session_id}
        if self.version:
            headers["MCP-Protocol-Version"] = self.version
        return headers

    def take_session_id(self, value: Any) -> None:
        """The MCP-Session-Id of an initialize answer (visible ASCII, 2025-11-25 "Session Management")."""
        if value is None:
            return
        if not isinstance(value, str) or not _SESSION_ID.match(value):
            raise StreamProtocolError("{}: the server assigned a session id that is not visible ASCII".format(
                self.server or "mcp"), client=self.server or "mcp")
        self.session_id = value

    # -- answers -------------------------------------------------------------------------------------
    def accept_discover(self, result: Dict[str, Any]) -> bool:
        """A DiscoverResult: the server is modern; use the newest revision both speak (True).  False: the
        server names handshake revisions only (initialize instead)."""
        supported = result.get("supportedVersions")
        if not isinstance(supported, list):
            raise StreamProtocolError("{}: server/discover answered without supportedVersions".format(
                self.server or "mcp"), client=self.server or "mcp")
        wanted = [self.pinned] if self.pinned else list(MODERN_VERSIONS)
        common = [v for v in wanted if v in supported]
        if not common:
            if self.pinned is None and any(v in LEGACY_VERSIONS for v in supported):
                self.era = None  # a server that names handshake revisions only: initialize instead
                return False
            raise MCPError("the server supports protocol versions {} and agenthub asked for {}".format(
                ", ".join(str(v) for v in supported[:10]) or "(none)", ", ".join(wanted)),
                code=jsonrpc.UNSUPPORTED_PROTOCOL_VERSION, data={"supported": supported}, method="server/discover",
                server=self.server)
        self.era, self.version = "modern", common[0]
        self._server_said(result, result.get("_meta"))
        return True

    def version_refused(self, error: MCPError) -> Optional[str]:
        """An UnsupportedProtocolVersionError to a modern request: TRY_AGAIN when another modern revision
        both speak exists (then ``version`` is it and the request is sent again); FALL_BACK for a server
        naming only handshake revisions (initialize); else None (raise the error)."""
        data = error.data if isinstance(error.data, dict) else {}  # type: Dict[str, Any]
        found = data.get("supported")
        supported = found if isinstance(found, list) else []  # type: List[Any]
        for version in MODERN_VERSIONS:
            if version in supported and version != self.version and not self.pinned:
                self.version = version
                return TRY_AGAIN
        if not self.pinned and any(v in LEGACY_VERSIONS for v in supported):
            self.era, self.version = None, None
            return FALL_BACK
        return None

    def accept_initialize(self, result: Dict[str, Any]) -> Dict[str, Any]:
        """An InitializeResult: the version the server chose (one agenthub speaks, else MCPError); returns
        the ``notifications/initialized`` to send next."""
        version = result.get("protocolVersion")
        allowed = LEGACY_VERSIONS + self.extra_versions
        if version not in allowed or (self.pinned and version != self.pinned):
            raise MCPError("the server chose protocol version {!r}, which agenthub does not speak{}".format(
                preview(str(version), 40), " over Streamable HTTP (2024-11-05 is the deprecated HTTP+SSE "
                                           "transport)" if version in STDIO_ONLY_VERSIONS else ""),
                method="initialize", server=self.server)
        self.era, self.version = "legacy", version
        self._server_said(result, None)
        return self.initialized_notification()

    def _server_said(self, result: Dict[str, Any], meta: Any) -> None:
        info = result.get("serverInfo")
        if info is None and isinstance(meta, dict):
            info = meta.get(_META_SERVER)
        self.server_info = info if isinstance(info, dict) else None
        caps = result.get("capabilities")
        self.capabilities = caps if isinstance(caps, dict) else {}
        text = result.get("instructions")
        self.instructions = text if isinstance(text, str) else None

    def outcome(self, method: str, message: Message, status: Optional[int] = None) -> Dict[str, Any]:
        """The result of a response to ``method``; an error object raises MCPError, an
        ``input_required`` result InputRequiredError, any other resultType StreamProtocolError."""
        if message.kind == "error":
            raise jsonrpc.error_from_object(message.error, method, status, self.server)
        if message.kind != "result":
            raise StreamProtocolError("{}: expected the answer to {}, got a {}".format(
                self.server or "mcp", method, message.kind), client=self.server or "mcp")
        result = message.result  # type: Dict[str, Any]
        kind = result.get("resultType", "complete")  # absent: an older server's complete result
        if kind == "complete":
            return result
        if kind == "input_required":
            raise _input_required(result, method, self.server)
        raise StreamProtocolError("{}: {} answered with resultType {!r}, which this client does not know".format(
            self.server or "mcp", method, preview(str(kind), 60)), client=self.server or "mcp")

    def answer(self, message: Message) -> Dict[str, Any]:
        """The response to a request the server sent (handshake era): ``ping`` is answered, anything
        else is "method not found" (agenthub offers no sampling, elicitation or roots)."""
        if message.method == "ping":
            return jsonrpc.result(message.id, {})
        return jsonrpc.error_response(message.id, jsonrpc.METHOD_NOT_FOUND,
                                      "agenthub does not offer {}".format(preview(str(message.method), 80)))

    @staticmethod
    def invalidates(message: Message) -> Optional[str]:
        """Which cached list a notification makes stale ("tools", "prompts", "resources"), if any."""
        name = message.method or ""
        for what in ("tools", "prompts", "resources"):
            if name == "notifications/{}/list_changed".format(what):
                return what
        return None

    def lost_session(self) -> None:
        """A 404 to a request carrying the session id: the server ended the session; initialise again."""
        self.session_id = None
        if not self.pinned:
            self.version = None


def _input_required(result: Dict[str, Any], method: str, server: Optional[str]) -> InputRequiredError:
    requests = result.get("inputRequests")
    requests = requests if isinstance(requests, dict) else {}
    wanted = []  # type: List[str]
    for key, value in list(requests.items())[:5]:
        value = value if isinstance(value, dict) else {}
        found = value.get("params")
        params = found if isinstance(found, dict) else {}  # type: Dict[str, Any]
        words = params.get("message")
        if not isinstance(words, str):
            messages = params.get("messages")
            words = "a completion of {} message(s)".format(len(messages)) if isinstance(messages, list) else ""
        wanted.append("{} ({}{})".format(preview(str(key), 60), preview(str(value.get("method")), 60),
                                         ": " + preview(words, 160) if words else ""))
    what = "; ".join(wanted) or "no input request named (requestState only)"
    return InputRequiredError(
        "{} needs input from the client, which agenthub does not supply yet: {}".format(method, what),
        code=None, data=None, method=method, server=server, input_requests=requests)


# -- x-mcp-header (2026-07-28 transports/streamable-http "Custom Headers from Tool Parameters") -------

_TOKEN = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")  # RFC 9110 tchar
_SAFE_INT = 2 ** 53 - 1
_ELSEWHERE = ("items", "prefixItems", "additionalProperties", "patternProperties", "oneOf", "anyOf", "allOf",
              "not", "if", "then", "else", "$defs", "definitions", "dependentSchemas", "contains")


def param_headers(schema: Any) -> List[Tuple[Tuple[str, ...], str]]:
    """The (property path, header name) pairs a tool's inputSchema marks with ``x-mcp-header``; a
    ValueError naming the problem for an annotation the revision does not allow (the tool is then left
    out of tools/list, as the revision says)."""
    found = []  # type: List[Tuple[Tuple[str, ...], str]]

    def walk(node: Any, path: Tuple[str, ...], reachable: bool) -> None:
        if not isinstance(node, dict):
            return
        if "x-mcp-header" in node:
            name = node["x-mcp-header"]
            if not reachable or not path:
                raise ValueError("x-mcp-header on a property not reachable through properties alone")
            if not isinstance(name, str) or not _TOKEN.match(name):
                raise ValueError("x-mcp-header {!r} is not an HTTP field-name token".format(name))
            kind = node.get("type")
            if kind not in ("string", "integer", "boolean"):
                raise ValueError("x-mcp-header on a property of type {!r} (string, integer or boolean only)".format(
                    kind))
            if any(name.lower() == other.lower() for _, other in found):
                raise ValueError("x-mcp-header {!r} given twice".format(name))
            found.append((path, name))
        properties = node.get("properties")
        if isinstance(properties, dict):
            for key, child in properties.items():
                walk(child, path + (key,), reachable)
        for key in _ELSEWHERE:
            value = node.get(key)
            for child in (value if isinstance(value, list) else
                          value.values() if isinstance(value, dict) and key in ("$defs", "definitions",
                                                                               "patternProperties",
                                                                               "dependentSchemas")
                          else [value]):
                walk(child, path, False)

    walk(schema, (), True)
    return found


def param_header_values(marks: List[Tuple[Tuple[str, ...], str]], arguments: Dict[str, Any]) -> Dict[str, str]:
    """``Mcp-Param-{Name}`` headers for ``arguments`` ("Value Encoding": booleans lower case, integers
    in decimal, a value absent or null omitted)."""
    headers = {}  # type: Dict[str, str]
    for path, name in marks:
        value = arguments  # type: Any
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        if value is None:
            continue
        if isinstance(value, bool):
            text = "true" if value else "false"
        elif isinstance(value, int):
            if abs(value) > _SAFE_INT:
                raise ConfigError("argument {} = {} is outside the range a header may carry".format(
                    ".".join(path), value))
            text = str(value)
        elif isinstance(value, str):
            text = value
        else:
            continue  # the schema's type is the server's promise; another type is left to the server to refuse
        headers["Mcp-Param-" + name] = header_value(text)
    return headers
