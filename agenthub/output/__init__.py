"""Typed output (issue 40): a dataclass, TypedDict, NamedTuple, Enum, Literal, list, union, pydantic model
or JSON Schema out of any model on any wire, validated, re-asked when wrong, streamed as it grows.

``client.parse(messages, Invoice)`` / ``client.streaming_parse(...)`` (docs/typed-output.md).  The
pieces: ``shape`` (how the type goes out on the routed wire), ``partial`` (the incremental JSON reader
behind the streamed values), ``parse`` (the re-ask loop).  Imports no optional dependency.
"""

from .parse import ParseStream, Parsed, find_json, parse, streaming_parse
from .partial import PartialJSON

__all__ = ["ParseStream", "Parsed", "PartialJSON", "find_json", "parse", "streaming_parse"]
