"""A server built with the official ``mcp`` SDK (test-only oracle, Python >= 3.10).

    python tests/mcp_official_server.py stdio
    python tests/mcp_official_server.py http MODE PORT_FILE     MODE: stateful | json | stateless | grow | stateless-grow

``grow`` is ``stateful`` with one more tool, ``grow``: it adds a tool named ``grown`` and sends
notifications/tools/list_changed outside any request (on the listening stream of the handshake era);
``stateless-grow`` is ``stateless`` with ``grow`` (its notification reaches no client: there is no session).

Its tools cover what a tool result can hold: text parts, structured content alone, an image, a
resource link, embedded resources (an image blob, a text), an error result, progress notifications before the result; plus a resource, a
template-less prompt and a tool with a non-ASCII name.
"""

import asyncio
import base64
import socket
import sys
from typing import TypedDict

from mcp.server.mcpserver import Context, Image, MCPServer
from mcp.types import BlobResourceContents, EmbeddedResource, TextResourceContents
from mcp.server.mcpserver.prompts.base import AssistantMessage, UserMessage

PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")

app = MCPServer("oracle")


@app.tool()
def echo(text: str) -> str:
    """Say it back."""
    return text


@app.tool()
def two_parts(a: str, b: str) -> list:
    """Two text parts."""
    return [a, b]


class Sum(TypedDict):
    sum: int


@app.tool(structured_output=True)
def add(a: int, b: int) -> Sum:
    """Add two integers (structured content)."""
    return {"sum": a + b}


@app.tool()
def picture() -> Image:
    """A one-pixel PNG."""
    return Image(data=PNG, format="png")


@app.tool()
def fail(why: str) -> str:
    """Always fails."""
    raise ValueError("failed: " + why)


@app.tool()
async def slow(steps: int, ctx: Context) -> str:
    """Reports progress, then answers."""
    for step in range(steps):
        await ctx.report_progress(step + 1, steps, "the last step" if step + 1 == steps else None)
        await asyncio.sleep(0.01)
    return "done after {}".format(steps)


@app.tool(name="météo")
def weather(city: str) -> str:
    """A tool whose name is not ASCII."""
    return "sunny in " + city


@app.tool()
def attachment() -> list:
    """Two embedded resources: a PNG (a blob) and a text."""
    return [EmbeddedResource(type="resource", resource=BlobResourceContents(
                uri="file:///pixel.png", mimeType="image/png", blob=base64.b64encode(PNG).decode("ascii"))),
            EmbeddedResource(type="resource", resource=TextResourceContents(
                uri="file:///notes.txt", mimeType="text/plain", text="notes"))]


@app.resource("note://hello", mime_type="text/plain")
def hello() -> str:
    return "hello from a resource"


@app.prompt()
def review(code: str) -> list:
    """Review some code."""
    return [UserMessage("Please review:\n" + code), AssistantMessage("Looking at it.")]


def add_grow() -> None:
    async def grow(ctx: Context) -> str:
        """Adds a tool, then says that the tool list changed."""
        app.add_tool(lambda: "new", name="grown", description="added at run time")
        await ctx.session.send_tool_list_changed()
        return "grown"

    app.add_tool(grow, name="grow")


def main() -> None:
    if sys.argv[1] == "stdio":
        app.run("stdio")
        return
    mode, port_file = sys.argv[2], sys.argv[3]
    if mode in ("grow", "stateless-grow"):
        add_grow()
        mode = "stateful" if mode == "grow" else "stateless"
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    with open(port_file + ".tmp", "w") as handle:
        handle.write(str(port))
    import os
    os.replace(port_file + ".tmp", port_file)
    app.run("streamable-http", host="127.0.0.1", port=port, json_response=(mode == "json"),
            stateless_http=(mode == "stateless"))


if __name__ == "__main__":
    main()
