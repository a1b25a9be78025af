"""The official ``mcp`` client (test-only oracle, Python >= 3.10) making the oracle calls; prints JSON.

    python tests/mcp_official_client.py MODE URL          MODE: auto | legacy
    python tests/mcp_official_client.py MODE stdio CMD...
"""

import asyncio
import json
import sys

from mcp import Client
from mcp.client.stdio import StdioServerParameters

CALLS = [("echo", {"text": "hi"}), ("two_parts", {"a": "x", "b": "y"}), ("add", {"a": 1, "b": 2}),
         ("picture", {}), ("fail", {"why": "no"}), ("slow", {"steps": 3}), ("météo", {"city": "Paris"}),
         ("attachment", {})]


def dump(value):
    return value.model_dump(by_alias=True, exclude_none=True, mode="json")


async def main():
    mode, target = sys.argv[1], sys.argv[2]
    if target == "stdio":
        target = StdioServerParameters(command=sys.argv[3], args=sys.argv[4:])
    out = {}
    async with Client(target, mode=mode) as client:
        out["protocol_version"] = client.protocol_version
        out["tools"] = [dump(tool) for tool in (await client.list_tools()).tools]
        out["calls"] = [dump(await client.call_tool(name, args)) for name, args in CALLS]
        out["resources"] = [dump(r) for r in (await client.list_resources()).resources]
        out["read"] = [dump(c) for c in (await client.read_resource("note://hello")).contents]
        out["prompts"] = [dump(p) for p in (await client.list_prompts()).prompts]
        out["prompt"] = dump(await client.get_prompt("review", {"code": "x=1"}))
    print(json.dumps(out))


asyncio.run(main())
