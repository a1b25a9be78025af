"""Two small typed helpers for code written the way the vendors' SDKs teach (``agenthub.user``, ``agenthub.text``).

    from agenthub import AutoLLMClient, text, user
    answer = AutoLLMClient("gpt-5.5").response([user("Name three rivers.")])
    print(text(answer))

``user(...)`` builds a ``UniMessage`` (so a list of them is a ``List[UniMessage]`` without an annotation);
``text(...)`` reads the visible text of a message or of one streamed event (a ``str``, never None), so
user code needs no narrowing of the content-item union for the common case.
"""

from typing import Any, List, Mapping, Union

from .errors import ConfigError
from .types import AssistantMessage, ContentItem, TextItem, UniEvent, UniMessage

__all__ = ["user", "text"]


def user(*parts: Union[str, ContentItem]) -> UniMessage:
    """A user message: ``user("hi")``; several parts in order, each a string (a text item) or a content
    item (``{"type": "image_url", "image_url": url}``, a ``tool_result``, ...).  ConfigError when empty or
    when a part is neither."""
    if not parts:
        raise ConfigError("user() needs at least one part: a string or a content item")
    items = []  # type: List[ContentItem]
    for number, part in enumerate(parts):
        if isinstance(part, str):
            item = {"type": "text", "text": part}  # type: TextItem
            items.append(item)
        elif isinstance(part, Mapping) and isinstance(part.get("type"), str):
            items.append(part)
        else:
            raise ConfigError("user() part {} is a {}: give a string or a content item (a dict with a "
                              "'type')".format(number, type(part).__name__))
    return {"role": "user", "content_items": items}


def text(message: Union[UniMessage, AssistantMessage, UniEvent, Mapping[str, Any]]) -> str:
    """The text of a message or of one streamed event: its ``text`` items joined in order ("" when there
    are none; thinking, tool calls and other items are left out)."""
    items = message.get("content_items") if isinstance(message, Mapping) else None
    if not isinstance(items, (list, tuple)):
        raise ConfigError("text() takes a message or an event (a dict with content_items), not {}".format(
            type(message).__name__))
    return "".join(item["text"] for item in items
                   if isinstance(item, Mapping) and item.get("type") == "text" and isinstance(item.get("text"), str))
