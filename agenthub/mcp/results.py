"""MCP results as agenthub's data model, pure: tools as ToolSchemas, a tool result as a tool_result
item (contract C2), prompt messages as UniMessages.

A tool result's ``text`` is its text parts joined in order (by a newline); with no text part, its
``structuredContent`` as JSON text; images become ``data:<mimeType>;base64,<data>`` in ``images``;
a resource link is a line with its URI; an embedded text resource its text, an embedded other one a
line with its URI (and, when it is an image, its ``blob`` in ``images`` too); ``is_error`` comes from
``isError``.  A lone surrogate in a text (``"\\ud800"`` in the server's JSON: no character, and no
provider accepts it) becomes U+FFFD, so that one bad character does not end a run.
"""

import base64
import binascii
import json
import re
from typing import Any, Dict, List, Optional

from ..errors import StreamProtocolError, preview

__all__ = ["tool_schema", "tool_result", "prompt_messages"]


_SURROGATE = re.compile("[\ud800-\udfff]")  # a str holds a surrogate only unpaired (JSON pairs are joined)


def clean_text(text: str) -> str:
    """``text`` with each lone surrogate replaced by U+FFFD."""
    return _SURROGATE.sub("\ufffd", text) if _SURROGATE.search(text) else text


def _bad(server: str, what: str) -> StreamProtocolError:
    return StreamProtocolError("{}: {}".format(server, what), client=server)


def tool_schema(tool: Any, server: str = "mcp") -> Dict[str, Any]:
    """An MCP Tool as a ToolSchema: {"name", "description", "parameters"}."""
    if not isinstance(tool, dict) or not isinstance(tool.get("name"), str) or not tool["name"]:
        raise _bad(server, "tools/list gave a tool without a name")
    schema = {"name": tool["name"]}  # type: Dict[str, Any]
    description = tool.get("description")
    if not isinstance(description, str):
        description = tool.get("title") if isinstance(tool.get("title"), str) else None
    if description:
        schema["description"] = clean_text(description)
    parameters = tool.get("inputSchema")
    schema["parameters"] = parameters if isinstance(parameters, dict) else {"type": "object", "properties": {}}
    return schema


def _resource_line(resource: Any) -> Optional[str]:
    if not isinstance(resource, dict):
        return None
    text = resource.get("text")
    if isinstance(text, str):
        return text
    uri = resource.get("uri")
    return "[resource: {}]".format(uri) if isinstance(uri, str) else None


def _embedded_image(resource: Any) -> Optional[Dict[str, Any]]:
    """An embedded resource holding an image (a ``blob`` whose mimeType is ``image/...``) as an image block."""
    if isinstance(resource, dict) and isinstance(resource.get("blob"), str) and \
            isinstance(resource.get("mimeType"), str) and resource["mimeType"].lower().startswith("image/"):
        return {"data": resource["blob"], "mimeType": resource["mimeType"]}
    return None


def _data_uri(block: Dict[str, Any], server: str) -> Optional[str]:
    data, mime = block.get("data"), block.get("mimeType")
    if not isinstance(data, str) or not isinstance(mime, str) or "/" not in mime or ";" in mime or "," in mime:
        return None
    try:
        base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise _bad(server, "an image whose data is not base64") from None
    return "data:{};base64,{}".format(mime, data)


def tool_result(result: Any, server: str = "mcp") -> Dict[str, Any]:
    """A CallToolResult as {"type": "tool_result", "text", optional "images", optional "is_error"}."""
    if not isinstance(result, dict):
        raise _bad(server, "tools/call answered with something that is not an object")
    content = result.get("content")
    if content is None:
        content = []
    if not isinstance(content, list):
        raise _bad(server, "tools/call answered with content that is not a list")
    texts = []  # type: List[str]
    images = []  # type: List[str]
    has_text = False
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
            has_text = True
        elif kind == "image":
            uri = _data_uri(block, server)
            if uri is not None:
                images.append(uri)
        elif kind == "resource_link" and isinstance(block.get("uri"), str):
            name = block.get("name")
            texts.append("[resource: {}{}]".format(block["uri"], " ({})".format(name) if isinstance(name, str)
                                                   and name and name != block["uri"] else ""))
        elif kind == "resource":
            line = _resource_line(block.get("resource"))
            if line is not None:
                texts.append(line)
            image = _embedded_image(block.get("resource"))
            uri = _data_uri(image, server) if image is not None else None
            if uri is not None:
                images.append(uri)
        elif kind == "audio" and isinstance(block.get("mimeType"), str):
            texts.append("[audio: {}]".format(preview(block["mimeType"], 60)))
    if not has_text and "structuredContent" in result and result["structuredContent"] is not None:
        texts.insert(0, json.dumps(result["structuredContent"], ensure_ascii=False, sort_keys=False))
    item = {"type": "tool_result", "text": clean_text("\n".join(texts))}  # type: Dict[str, Any]
    if images:
        item["images"] = images
    if result.get("isError") is True:
        item["is_error"] = True
    return item


def _content_item(block: Any, server: str) -> Optional[Dict[str, Any]]:
    if not isinstance(block, dict):
        return None
    kind = block.get("type")
    if kind == "text" and isinstance(block.get("text"), str):
        return {"type": "text", "text": clean_text(block["text"])}
    image = _embedded_image(block.get("resource")) if kind == "resource" else None
    if image is not None:  # an embedded image: as an image block
        block, kind = image, "image"
    if kind in ("image", "audio") and isinstance(block.get("data"), str) and isinstance(block.get("mimeType"), str):
        try:
            data = base64.b64decode(block["data"], validate=True)
        except (binascii.Error, ValueError):
            raise _bad(server, "prompt content whose data is not base64") from None
        return {"type": "inline_data", "data": data, "mime_type": block["mimeType"]}
    if kind == "resource_link" and isinstance(block.get("uri"), str):
        return {"type": "text", "text": "[resource: {}]".format(block["uri"])}
    if kind == "resource":
        line = _resource_line(block.get("resource"))
        return {"type": "text", "text": clean_text(line)} if line is not None else None
    return None


def prompt_messages(result: Any, server: str = "mcp") -> List[Dict[str, Any]]:
    """A GetPromptResult's messages as UniMessages ({"role", "content_items"})."""
    messages = result.get("messages") if isinstance(result, dict) else None
    if not isinstance(messages, list):
        raise _bad(server, "prompts/get answered without messages")
    out = []  # type: List[Dict[str, Any]]
    for message in messages:
        if not isinstance(message, dict) or message.get("role") not in ("user", "assistant"):
            raise _bad(server, "a prompt message whose role is neither user nor assistant")
        blocks = message.get("content")
        blocks = blocks if isinstance(blocks, list) else [blocks]
        items = [item for item in (_content_item(b, server) for b in blocks) if item is not None]
        out.append({"role": message["role"], "content_items": items})
    return out
