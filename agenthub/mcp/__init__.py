"""MCP (Model Context Protocol) servers' tools, resources and prompts, synchronously.

::

    from agenthub import mcp
    with mcp.connect("https://example.com/mcp", headers={"Authorization": "Bearer ..."}) as server:
        server.list_tools()                       # ToolSchemas
        server.call_tool("get_weather", {"city": "Paris"})   # a tool_result item
    mcp.connect(["python", "-m", "mcp_server_time"], name="time")   # a stdio subprocess

Both protocol eras: the stateless revision 2026-07-28 and the handshake era 2025-03-26 .. 2025-11-25
(``protocol="auto"`` finds out which one a server speaks).  Modules: ``jsonrpc`` and ``session`` are
pure (the messages and the lifecycle), ``channel`` the contract a transport keeps (``channel.CHANNELS``:
the table ``connect`` picks from), ``http`` and ``stdio`` the two transports, ``results`` the
conversions to agenthub's data model, ``handle`` the ``Server`` handle and ``connect``.
"""

from .handle import DEFAULT_TIMEOUT, Server, connect, forget_eras
from .jsonrpc import InputRequiredError, MCPError
from .session import LATEST, LEGACY_VERSIONS, MODERN_VERSIONS

__all__ = ["connect", "Server", "MCPError", "InputRequiredError", "MODERN_VERSIONS", "LEGACY_VERSIONS", "LATEST",
           "DEFAULT_TIMEOUT", "forget_eras"]
