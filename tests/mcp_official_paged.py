"""A server built on the official ``mcp`` SDK's low-level API (test-only oracle, Python >= 3.10) whose lists come
in pages: tools, resources and prompts, three pages each, chained by ``nextCursor``; the second page's cursor is
the empty string (a cursor like any other: 2026-07-28 server/utilities/pagination, "an empty string is a valid
cursor and thus MUST NOT be treated as the end of results").

    python tests/mcp_official_paged.py        (stdio)
"""

import anyio

from mcp import types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

PAGES = 3


def page(params):
    """(this page's number, the cursor of the next one or None) for a request's params."""
    cursor = params.cursor if params is not None else None
    number = 0 if cursor is None else 1 if cursor == "" else int(cursor.split("-")[1])
    return number, ("" if number == 0 else "page-{}".format(number + 1) if number + 1 < PAGES else None)


async def list_tools(ctx, params):
    number, cursor = page(params)
    return types.ListToolsResult(tools=[types.Tool(name="t{}".format(number), inputSchema={"type": "object"})],
                                 nextCursor=cursor)


async def list_resources(ctx, params):
    number, cursor = page(params)
    return types.ListResourcesResult(resources=[types.Resource(uri="note://{}".format(number),
                                                               name="r{}".format(number))], nextCursor=cursor)


async def list_prompts(ctx, params):
    number, cursor = page(params)
    return types.ListPromptsResult(prompts=[types.Prompt(name="p{}".format(number))], nextCursor=cursor)


server = Server("paged", on_list_tools=list_tools, on_list_resources=list_resources, on_list_prompts=list_prompts)


async def main():
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
