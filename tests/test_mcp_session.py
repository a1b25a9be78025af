"""The pure layers of agenthub.mcp: JSON-RPC, the session rules of each era, the result conversions;
and every message the client sends, validated against the revision's published JSON Schema."""

import json
import os
import subprocess

import pytest

from agenthub.errors import ConfigError, ServerError, StreamProtocolError, TransportError
from agenthub.mcp import jsonrpc, results
from agenthub.mcp.jsonrpc import InputRequiredError, MCPError, Message
from agenthub.mcp.http import HttpChannel
from agenthub.mcp.session import STDIO_ONLY_VERSIONS, Session, header_value, param_header_values, param_headers
from agenthub.mcp.stdio import StdioChannel


# -- 2026-07-28 transports/streamable-http "Value Encoding": the revision's own examples ---------------

@pytest.mark.parametrize("value, sent", [
    ("us-west1", "us-west1"),
    ("Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="),
    (" padded ", "=?base64?IHBhZGRlZCA=?="),
    ("line1\nline2", "=?base64?bGluZTEKbGluZTI=?="),
    ("=?base64?literal?=", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="),
    ("file:///projects/myapp/config.json", "file:///projects/myapp/config.json"),
])
def test_header_values_are_encoded_as_the_revision_says(value, sent):
    assert header_value(value) == sent


def test_modern_request_shape_and_headers():
    session = Session("2026-07-28", (), "9.9")
    ident, message = session.request("resources/read", {"uri": "file:///x.json"})
    # 2026-07-28 basic/index "_meta": protocolVersion and clientCapabilities required, clientInfo SHOULD
    assert message == {"jsonrpc": "2.0", "id": ident, "method": "resources/read", "params": {
        "uri": "file:///x.json", "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "agenthub", "version": "9.9"},
            "io.modelcontextprotocol/clientCapabilities": {}}}}
    assert session.headers(message) == {
        "Accept": "application/json, text/event-stream", "Content-Type": "application/json",
        "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "resources/read", "Mcp-Name": "file:///x.json"}


def test_legacy_messages_and_headers():
    session = Session("auto")
    ident, init = session.initialize_request()
    assert init["params"]["protocolVersion"] == "2025-11-25"
    notice = session.accept_initialize({"protocolVersion": "2025-06-18", "capabilities": {},
                                        "serverInfo": {"name": "s", "version": "1"}})
    assert notice == {"jsonrpc": "2.0", "method": "notifications/initialized"}
    session.take_session_id("abc-123")
    _, message = session.request("tools/list")
    assert message == {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    assert session.headers(message) == {"Accept": "application/json, text/event-stream",
                                        "Content-Type": "application/json",
                                        "MCP-Protocol-Version": "2025-06-18", "MCP-Session-Id": "abc-123"}
    assert session.end_headers() == {"MCP-Session-Id": "abc-123", "MCP-Protocol-Version": "2025-06-18"}


def test_a_version_the_client_does_not_speak_is_refused():
    with pytest.raises(MCPError):
        Session("auto").accept_initialize({"protocolVersion": "2024-11-05"})
    Session("auto", STDIO_ONLY_VERSIONS).accept_initialize({"protocolVersion": "2024-11-05"})  # stdio existed then
    with pytest.raises(ConfigError):
        Session("2024-11-05")
    with pytest.raises(StreamProtocolError):
        Session("auto").take_session_id("has space")


def _http(status, code=None):
    if code is None:
        return ServerError("x", status=status) if status >= 500 else __import__(
            "agenthub.errors", fromlist=["UpstreamError"]).UpstreamError("x", status=status)
    return MCPError("x", code=code, status=status)


@pytest.mark.parametrize("error, transport, expected", [
    # 2026-07-28 transports/streamable-http "Backward Compatibility"
    (_http(400), "http", True),
    (_http(404), "http", True),
    (_http(405), "http", True),
    (_http(400, -32600), "http", True),       # a JSON-RPC error that is not a modern one
    (_http(400, -32022), "http", False),      # UnsupportedProtocolVersion: modern, do not fall back
    (_http(400, -32020), "http", False),      # HeaderMismatch
    (_http(400, -32021), "http", False),      # MissingRequiredClientCapability
    (_http(500), "http", False),
    (_http(401), "http", False),
    (TransportError("x"), "http", False),
    # transports/stdio "Backward Compatibility": any other error, or no answer in time
    (MCPError("x", code=-32601), "stdio", True),
    (MCPError("x", code=-32602), "stdio", True),
    (MCPError("x", code=-32022), "stdio", False),
    (TransportError("x", timeout=True), "stdio", True),
    (TransportError("x", exit_code=1), "stdio", False),
])
def test_when_the_client_falls_back_to_initialize(error, transport, expected):
    channel = {"http": HttpChannel, "stdio": StdioChannel}[transport]
    assert channel.falls_back(object.__new__(channel), error) is expected  # the channel's rule: no instance state


def test_result_types():
    session = Session("2026-07-28")
    assert session.outcome("tools/list", Message("result", 1, result={"tools": []})) == {"tools": []}  # absent
    with pytest.raises(StreamProtocolError):
        session.outcome("tools/list", Message("result", 1, result={"resultType": "partial"}))
    with pytest.raises(InputRequiredError) as info:
        session.outcome("tools/call", Message("result", 1, result={
            "resultType": "input_required", "inputRequests": {"llm": {"method": "sampling/createMessage", "params": {
                "messages": [{"role": "user", "content": {"type": "text", "text": "?"}}], "maxTokens": 5}}}}))
    assert str(info.value) == ("tools/call needs input from the client, which agenthub does not supply yet: "
                               "llm (sampling/createMessage: a completion of 1 message(s)) (method=tools/call)")
    with pytest.raises(MCPError) as info:
        session.outcome("tools/call", Message("error", 1, error={"code": -32602, "message": "Unknown tool: x",
                                                                 "data": {"a": 1}}))
    assert (info.value.code, info.value.message, info.value.data) == (-32602, "Unknown tool: x", {"a": 1})


def test_server_requests_ping_answered_others_refused():
    session = Session("auto", STDIO_ONLY_VERSIONS)
    assert session.answer(Message("request", 7, "ping")) == {"jsonrpc": "2.0", "id": 7, "result": {}}
    refused = session.answer(Message("request", "a", "sampling/createMessage"))
    assert refused["error"]["code"] == -32601 and refused["id"] == "a"


@pytest.mark.parametrize("line", [b"not json", b"[1,2]", b'{"jsonrpc":"1.0","id":1,"result":{}}',
                                  b'{"jsonrpc":"2.0","id":true,"result":{}}', b'{"jsonrpc":"2.0","id":1,"result":3}',
                                  b'{"jsonrpc":"2.0","id":1}'])
def test_what_is_not_a_message_is_a_protocol_error(line):
    with pytest.raises(StreamProtocolError):
        jsonrpc.decode(line)


def test_encode_is_one_line():
    data = jsonrpc.encode(jsonrpc.request(1, "tools/call", {"name": "a", "arguments": {"t": "x\ny\u2028"}}))
    assert b"\n" not in data and json.loads(data)["params"]["arguments"]["t"] == "x\ny\u2028"


# -- x-mcp-header --------------------------------------------------------------------------------------

def test_x_mcp_header_marks_and_values():
    schema = {"type": "object", "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "opts": {"type": "object", "properties": {"n": {"type": "integer", "x-mcp-header": "N"},
                                                  "on": {"type": "boolean", "x-mcp-header": "On"}}}}}
    marks = param_headers(schema)
    assert marks == [(("region",), "Region"), (("opts", "n"), "N"), (("opts", "on"), "On")]
    assert param_header_values(marks, {"region": "Hello, 世界", "opts": {"n": -7, "on": False}}) == {
        "Mcp-Param-Region": "=?base64?SGVsbG8sIOS4lueVjA==?=", "Mcp-Param-N": "-7", "Mcp-Param-On": "false"}
    assert param_header_values(marks, {"region": None}) == {}


@pytest.mark.parametrize("schema", [
    {"properties": {"x": {"type": "number", "x-mcp-header": "X"}}},
    {"properties": {"x": {"type": "string", "x-mcp-header": "bad name"}}},
    {"properties": {"x": {"type": "string", "x-mcp-header": "A"}, "y": {"type": "string", "x-mcp-header": "a"}}},
    {"properties": {"x": {"type": "array", "items": {"type": "string", "x-mcp-header": "X"}}}},
    {"anyOf": [{"properties": {"x": {"type": "string", "x-mcp-header": "X"}}}]},
])
def test_x_mcp_header_annotations_the_revision_forbids(schema):
    with pytest.raises(ValueError):
        param_headers(schema)


# -- results -------------------------------------------------------------------------------------------

def test_tool_result_conversion():
    result = {"content": [{"type": "text", "text": "a"},
                          {"type": "image", "data": "iVBORw0K", "mimeType": "image/png"},
                          {"type": "resource_link", "uri": "file:///r.txt", "name": "r.txt"},
                          {"type": "text", "text": "b"},
                          {"type": "resource", "resource": {"uri": "x://y", "text": "embedded"}}],
              "structuredContent": {"ignored": True}, "isError": True}
    assert results.tool_result(result) == {
        "type": "tool_result", "text": "a\n[resource: file:///r.txt (r.txt)]\nb\nembedded",
        "images": ["data:image/png;base64,iVBORw0K"], "is_error": True}
    assert results.tool_result({"content": [], "structuredContent": {"sum": 3}}) == {
        "type": "tool_result", "text": '{"sum": 3}'}
    with pytest.raises(StreamProtocolError):
        results.tool_result({"content": "text"})


def test_prompt_messages_as_unimessages():
    assert results.prompt_messages({"messages": [
        {"role": "user", "content": {"type": "text", "text": "hi"}},
        {"role": "assistant", "content": {"type": "image", "data": "AAE=", "mimeType": "image/png"}}]}) == [
        {"role": "user", "content_items": [{"type": "text", "text": "hi"}]},
        {"role": "assistant", "content_items": [{"type": "inline_data", "data": b"\x00\x01", "mime_type": "image/png"}]}]
    with pytest.raises(StreamProtocolError):
        results.prompt_messages({"messages": [{"role": "system", "content": []}]})


def test_an_embedded_image_is_an_image_in_a_tool_result_and_in_a_prompt():
    # its blob was dropped: the tool result kept a line naming the URI, the prompt message nothing
    png = {"uri": "file:///p.png", "mimeType": "image/png", "blob": "AAE="}
    pdf = {"uri": "file:///d.pdf", "mimeType": "application/pdf", "blob": "AAE="}
    assert results.tool_result({"content": [{"type": "resource", "resource": png},
                                             {"type": "resource", "resource": pdf}]}) == {
        "type": "tool_result", "text": "[resource: file:///p.png]\n[resource: file:///d.pdf]",
        "images": ["data:image/png;base64,AAE="]}
    assert results.prompt_messages({"messages": [{"role": "user", "content": {"type": "resource", "resource": png}},
                                                 {"role": "user", "content": {"type": "resource", "resource": pdf}}]}) \
        == [{"role": "user", "content_items": [{"type": "inline_data", "data": b"\x00\x01", "mime_type": "image/png"}]},
            {"role": "user", "content_items": [{"type": "text", "text": "[resource: file:///d.pdf]"}]}]
    with pytest.raises(StreamProtocolError):  # not base64: as an image block's
        results.tool_result({"content": [{"type": "resource", "resource": dict(png, blob="%%")}]})


# -- every message sent validates against the revision's published schema ------------------------------
#
# The schemas are read at test time from a checkout of modelcontextprotocol/modelcontextprotocol
# (AGENTHUB_MCP_SPEC: a git directory or a work tree), never copied into this repository.

SPEC = os.environ.get("AGENTHUB_MCP_SPEC", "/work/.mirror/modelcontextprotocol+modelcontextprotocol/repo")


def _schema(version):
    path = os.path.join(SPEC, "schema", version, "schema.json")
    if os.path.exists(path):
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    try:
        out = subprocess.run(["git", "--git-dir", SPEC, "show", "HEAD:schema/{}/schema.json".format(version)],
                             capture_output=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return json.loads(out.stdout) if out.returncode == 0 else None


def _validator(version):
    jsonschema = pytest.importorskip("jsonschema")
    schema = _schema(version)
    if schema is None:
        pytest.skip("the MCP specification's schema is absent: set AGENTHUB_MCP_SPEC to a clone of "
                    "github.com/modelcontextprotocol/modelcontextprotocol (a work tree or its git directory){}".format(
                        " (it is {!r})".format(SPEC) if "AGENTHUB_MCP_SPEC" in os.environ else ""))
    defs_key = "$defs" if "$defs" in schema else "definitions"
    defs = schema[defs_key]
    response = "JSONRPCResultResponse" if "JSONRPCResultResponse" in defs else "JSONRPCResponse"
    error = "JSONRPCErrorResponse" if "JSONRPCErrorResponse" in defs else "JSONRPCError"
    top = {defs_key: defs, "anyOf": [
        {"allOf": [{"$ref": "#/{}/JSONRPCRequest".format(defs_key)}, {"$ref": "#/{}/ClientRequest".format(defs_key)}]},
        {"allOf": [{"$ref": "#/{}/JSONRPCNotification".format(defs_key)},
                   {"$ref": "#/{}/ClientNotification".format(defs_key)}]},
        {"$ref": "#/{}/{}".format(defs_key, response)},
        {"$ref": "#/{}/{}".format(defs_key, error)}]}
    if "$schema" in schema:
        top["$schema"] = schema["$schema"]
    cls = jsonschema.validators.validator_for(top)
    return cls(top)


@pytest.fixture
def sent(monkeypatch):
    messages = []
    original = jsonrpc.encode

    def recording(message):
        messages.append(json.loads(json.dumps(message)))
        return original(message)

    monkeypatch.setattr(jsonrpc, "encode", recording)
    return messages


def _exercise(server):
    server.list_tools()
    server.call_tool("echo", {"text": "x"})
    server.call_tool("changed", {})


@pytest.mark.parametrize("era, version", [("modern", "2026-07-28"), ("legacy", "2025-11-25")])
def test_every_message_sent_on_stdio_validates(sent, era, version):
    from agenthub import mcp
    from mcp_support import stdio_command

    validator = _validator(version)
    with mcp.connect(stdio_command(era), timeout=10, protocol=version) as server:
        _exercise(server)
        if era == "modern":
            server._channel._cancel(99)  # notifications/cancelled, as a timed-out call sends it
    assert len(sent) >= 3
    for message in sent:
        errors = sorted(validator.iter_errors(message), key=str)
        assert not errors, (message, [e.message for e in errors][:3])


def test_every_handshake_message_validates_against_2025_03_26_and_2025_06_18(sent):
    session = Session("auto")
    sent_messages = [session.initialize_request()[1]]
    session.accept_initialize({"protocolVersion": "2025-06-18"})
    sent_messages += [session.initialized_notification(), session.request("tools/list")[1],
                      session.request("tools/call", {"name": "a", "arguments": {}})[1],
                      session.answer(Message("request", 3, "ping")),
                      session.answer(Message("request", 4, "roots/list"))]
    for version in ("2025-03-26", "2025-06-18", "2025-11-25"):
        validator = _validator(version)
        for message in sent_messages:
            message = dict(message)
            if message.get("method") == "initialize":
                message["params"] = dict(message["params"], protocolVersion=version)
            assert not list(validator.iter_errors(message)), (version, message)


def test_every_modern_request_validates_against_2026_07_28():
    validator = _validator("2026-07-28")
    session = Session("2026-07-28")
    for method, params in [("server/discover", None), ("tools/list", None), ("tools/list", {"cursor": "c"}),
                           ("tools/call", {"name": "a", "arguments": {"x": 1}}), ("resources/list", None),
                           ("resources/read", {"uri": "file:///a"}), ("prompts/list", None),
                           ("prompts/get", {"name": "p", "arguments": {"a": "b"}})]:
        message = session.request(method, params)[1]
        assert not list(validator.iter_errors(message)), message


def test_the_schema_check_has_teeth():
    validator = _validator("2026-07-28")
    assert list(validator.iter_errors({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}))  # no _meta
    legacy = _validator("2025-11-25")
    assert list(legacy.iter_errors({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}))


def test_lone_surrogates_in_texts_become_the_replacement_character():
    result = results.tool_result({"content": [{"type": "text", "text": "a\ud800b"},
                                              {"type": "text", "text": "\U0001F600 \udfff"}]})
    assert result == {"type": "tool_result", "text": "a\ufffdb\n\U0001F600 \ufffd"}
    assert results.tool_schema({"name": "t", "description": "x\udc00"})["description"] == "x\ufffd"
    assert results.prompt_messages({"messages": [{"role": "user", "content": {"type": "text", "text": "\ud83d"}}]}) \
        == [{"role": "user", "content_items": [{"type": "text", "text": "\ufffd"}]}]
