"""JSON-RPC 2.0 as MCP uses it, pure (no I/O): messages in and out, ids, error objects.

``encode`` gives the bytes of one message (compact UTF-8 JSON, never a raw newline: the stdio
framing needs one message per line); ``decode`` reads one message into a ``Message`` (a request,
a notification, a result or an error) or raises StreamProtocolError for anything that is not one.
An error object becomes an ``MCPError`` (``.code``, ``.message``, ``.data``).
"""

import json
from typing import Any, Dict, Optional

from ..errors import AgentHubError, ConfigError, StreamProtocolError, preview
from .._jsondepth import loads as _json_loads

__all__ = ["MCPError", "InputRequiredError", "Message", "encode", "decode", "request", "notification",
           "result", "error_response", "error_from_object",
           "PARSE_ERROR", "INVALID_REQUEST", "METHOD_NOT_FOUND", "INVALID_PARAMS", "INTERNAL_ERROR",
           "HEADER_MISMATCH", "MISSING_CLIENT_CAPABILITY", "UNSUPPORTED_PROTOCOL_VERSION", "MODERN_ERROR_CODES"]

# JSON-RPC 2.0 (section 5.1)
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
# MCP 2026-07-28, basic/index "Error Codes": the sub-range -32020..-32099 is the specification's
HEADER_MISMATCH = -32020
MISSING_CLIENT_CAPABILITY = -32021
UNSUPPORTED_PROTOCOL_VERSION = -32022
#: the errors only a modern (2026-07-28) server answers with: seeing one, a client does not fall back
#: to the handshake era (2026-07-28 basic/versioning "Backward Compatibility", transports "Backward Compatibility")
MODERN_ERROR_CODES = frozenset((HEADER_MISMATCH, MISSING_CLIENT_CAPABILITY, UNSUPPORTED_PROTOCOL_VERSION))


class MCPError(AgentHubError):
    """An MCP server answered a request with a JSON-RPC error object.

    ``code`` (int), ``message``, ``data`` (whatever the server attached, or None), ``method`` (the
    request's), ``status`` (the HTTP status it came with, None on stdio or inside a 200 answer),
    ``server`` (the handle's name or the target, never a credential).
    """

    code: Optional[int]
    message: str
    data: Any
    method: Optional[str]
    status: Optional[int]
    server: Optional[str]

    def __init__(self, message: str = "", code: Optional[int] = None, data: Any = None, method: Optional[str] = None,
                 status: Optional[int] = None, server: Optional[str] = None, **fields: Any) -> None:
        fields.setdefault("retryable", False)
        super().__init__(message, code=code, message=message, data=data, method=method, status=status,
                         server=server, **fields)

    def __str__(self) -> str:
        where = ", ".join("{}={}".format(k, v) for k, v in (("server", self.server), ("method", self.method),
                                                             ("code", self.code), ("status", self.status))
                          if v not in (None, ""))
        return "{} ({})".format(self.message, where) if where else self.message


class InputRequiredError(MCPError):
    """A 2026-07-28 server answered ``resultType: "input_required"``: it wants input (an elicitation, a
    sampling, roots) that agenthub does not supply.  ``input_requests``: the server's map of what it
    asked for ({key: {"method", "params"}}); the message names each request's method and words."""

    input_requests: Dict[str, Any]


class Message(object):
    """One decoded JSON-RPC message: ``kind`` is "request", "notification", "result" or "error"."""

    __slots__ = ("kind", "id", "method", "params", "result", "error")

    def __init__(self, kind: str, id: Any = None, method: Optional[str] = None, params: Any = None,
                 result: Any = None, error: Any = None) -> None:
        self.kind = kind
        self.id = id
        self.method = method
        self.params = params
        self.result = result
        self.error = error

    def __repr__(self) -> str:
        return "Message({!r}, id={!r}, method={!r})".format(self.kind, self.id, self.method)


def request(id: Any, method: str, params: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    message = {"jsonrpc": "2.0", "id": id, "method": method}  # type: Dict[str, Any]
    if params is not None:
        message["params"] = params
    return message


def notification(method: str, params: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    message = {"jsonrpc": "2.0", "method": method}  # type: Dict[str, Any]
    if params is not None:
        message["params"] = params
    return message


def result(id: Any, value: Dict[str, Any]) -> Dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id, "result": value}


def error_response(id: Any, code: int, message: str, data: Any = None) -> Dict[str, Any]:
    error = {"code": code, "message": message}  # type: Dict[str, Any]
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": id, "error": error}


def encode(message: Dict[str, Any]) -> bytes:
    """One message as compact UTF-8 JSON (a newline inside a string is escaped: one message, one line).  A
    lone surrogate (a model's arguments, a server's method echoed in a refusal) has no UTF-8: then the
    whole message is ASCII JSON, the surrogate as its ``\\ud800`` escape, as JSON allows.  A value JSON
    cannot carry (NaN, an object, a nesting deeper than Python's recursion limit) is a ConfigError."""
    try:
        try:
            return json.dumps(message, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")
        except UnicodeEncodeError:
            return json.dumps(message, ensure_ascii=True, separators=(",", ":"), allow_nan=False).encode("ascii")
    except (ValueError, TypeError, RecursionError) as exc:  # NaN (which json.loads reads from a model's
        # arguments), a date, a list in a list ... 100,000 deep; (the words for NaN are agenthub's: Python's differ
        # from version to version)
        why = "it is nested too deeply" if isinstance(exc, RecursionError) else \
            "it holds a number JSON cannot carry (NaN or Infinity)" if "float" in str(exc) else str(exc)
        raise ConfigError("{} cannot be sent as JSON: {}".format(message.get("method") or "a response", why)) from None


def _valid_id(value: Any) -> bool:
    return (isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)))


def decode(value: Any, client: str = "mcp") -> Message:
    """A parsed JSON value (or bytes / str to parse) as a Message; StreamProtocolError when it is not one."""
    if isinstance(value, (bytes, bytearray, str)):
        text = value.decode("utf-8", "replace") if isinstance(value, (bytes, bytearray)) else value
        try:
            value = _json_loads(text)
        except (ValueError, RecursionError):
            raise StreamProtocolError("{}: the server sent something that is not JSON: {}".format(
                client, preview(text.strip(), 200)), client=client) from None
    if not isinstance(value, dict) or value.get("jsonrpc") != "2.0":
        raise StreamProtocolError("{}: the server sent a message that is not JSON-RPC 2.0: {}".format(
            client, preview(json.dumps(value)[:400], 200)), client=client)
    method = value.get("method")
    if method is not None:
        if not isinstance(method, str):
            raise StreamProtocolError("{}: a message whose method is not a string".format(client), client=client)
        params = value.get("params")
        if params is not None and not isinstance(params, (dict, list)):
            raise StreamProtocolError("{}: {} params that are not an object".format(client, method), client=client)
        if "id" in value:
            if not _valid_id(value["id"]):
                raise StreamProtocolError("{}: a request whose id is not a string or an integer".format(client),
                                          client=client)
            return Message("request", value["id"], method, params)
        return Message("notification", None, method, params)
    if "result" in value:
        if not _valid_id(value.get("id")):
            raise StreamProtocolError("{}: a result without a valid id".format(client), client=client)
        if not isinstance(value["result"], dict):
            raise StreamProtocolError("{}: a result that is not an object".format(client), client=client)
        return Message("result", value["id"], result=value["result"])
    if "error" in value:
        error = value["error"]
        if not isinstance(error, dict):
            raise StreamProtocolError("{}: an error that is not an object".format(client), client=client)
        ident = value.get("id")
        return Message("error", ident if _valid_id(ident) else None, error=error)
    raise StreamProtocolError("{}: a JSON-RPC message that is neither a request, a notification nor a "
                              "response".format(client), client=client)


def error_from_object(error: Any, method: Optional[str] = None, status: Optional[int] = None,
                      server: Optional[str] = None) -> MCPError:
    """The MCPError a JSON-RPC error object describes (a malformed one still gives one)."""
    if not isinstance(error, dict):
        error = {}
    code = error.get("code")
    if not isinstance(code, int) or isinstance(code, bool):
        code = None
    message = error.get("message")
    message = preview(message, 500) if isinstance(message, str) and message else "error {}".format(code)
    return MCPError(message, code=code, data=error.get("data"), method=method, status=status, server=server)
