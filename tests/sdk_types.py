"""A strict check of a request body against an official SDK's request TypedDicts (test-only).

``conforms(value, SomeParam)`` returns None when ``value`` fits the type (every required key there, no key the
type does not name, every value of its declared type, down to the leaves), else the path and the reason of the
first misfit.  pydantic's TypeAdapter is no help here: it ignores extra keys of a TypedDict and validates an
``Iterable`` lazily, so a misspelt field or a wrong nested block would pass it."""

import collections.abc
import sys
import typing
from typing import Any, Optional

try:  # the SDKs use typing_extensions' forms; typing's own are compared too
    import typing_extensions as _tx
except ImportError:  # pragma: no cover
    _tx = typing

_LITERALS = {typing.Literal, getattr(_tx, "Literal", typing.Literal)}
_WRAPPERS = {getattr(m, n, None) for m in (typing, _tx) for n in ("Required", "NotRequired", "ReadOnly")} - {None}
_SEQUENCES = {list, collections.abc.Iterable, collections.abc.Sequence, typing.List, typing.Iterable, typing.Sequence,
              tuple}
_MAPPINGS = {dict, collections.abc.Mapping, typing.Dict, typing.Mapping}


def _is_typeddict(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, dict) and hasattr(tp, "__annotations__") and hasattr(
        tp, "__total__")


def _hints(tp: Any) -> Any:
    return typing.get_type_hints(tp, include_extras=True)


def _names_type(tp: Any, value: Any) -> bool:
    if not (_is_typeddict(tp) and isinstance(value, dict) and "type" in value):
        return False
    hint = _unwrap(_hints(tp).get("type"))
    return typing.get_origin(hint) in _LITERALS and value["type"] in typing.get_args(hint)


def _required(tp: Any, key: str, hint: Any) -> bool:
    """Required / NotRequired as written (string annotations leave ``__required_keys__`` to ``total`` alone)."""
    origin = typing.get_origin(hint)
    name = getattr(origin, "_name", None) or getattr(origin, "__name__", None) or ""
    if typing.get_origin(hint) is typing.Annotated:
        return _required(tp, key, typing.get_args(hint)[0])
    if "NotRequired" in repr(origin) or name == "NotRequired":
        return False
    if "Required" in repr(origin) or name == "Required":
        return True
    return key in getattr(tp, "__required_keys__", ())


def _unwrap(tp: Any) -> Any:
    while True:
        origin = typing.get_origin(tp)
        if origin in _WRAPPERS or origin is typing.Annotated or (
                origin is not None and getattr(origin, "__name__", "") == "Annotated"):
            tp = typing.get_args(tp)[0]
        elif getattr(tp, "__class__", None).__name__ == "TypeAliasType":
            tp = tp.__value__
        else:
            return tp


def conforms(value: Any, tp: Any, at: str = "$") -> Optional[str]:
    tp = _unwrap(tp)
    if tp is Any or tp is object:
        return None
    origin = typing.get_origin(tp)
    if origin is typing.Union or (sys.version_info >= (3, 10) and origin is getattr(__import__("types"), "UnionType")):
        arms = typing.get_args(tp)
        reasons = [conforms(value, arm, at) for arm in arms]
        if any(reason is None for reason in reasons):
            return None
        named = [reason for arm, reason in zip(arms, reasons) if _names_type(_unwrap(arm), value)]
        reasons = named or reasons  # the arm of the value's own "type" says what is wrong with it
        return max(reasons, key=lambda r: len(r.split(": ", 1)[0]))  # the deepest misfit says the most
    if origin in _LITERALS:
        return None if value in typing.get_args(tp) else "{}: {!r} is not one of {}".format(at, value, typing.get_args(tp))
    if origin in _SEQUENCES:
        if not isinstance(value, list):
            return "{}: a list expected, got {}".format(at, type(value).__name__)
        (inner,) = typing.get_args(tp)[:1] or (Any,)
        for i, element in enumerate(value):
            reason = conforms(element, inner, "{}[{}]".format(at, i))
            if reason:
                return reason
        return None
    if origin in _MAPPINGS or tp in (dict, typing.Dict):
        return None if isinstance(value, dict) else "{}: an object expected".format(at)
    if _is_typeddict(tp):
        if not isinstance(value, dict):
            return "{}: an object ({}) expected, got {}".format(at, tp.__name__, type(value).__name__)
        hints = _hints(tp)
        missing = [key for key in hints if key not in value and _required(tp, key, hints[key])]
        if missing:
            return "{}: {} needs {}".format(at, tp.__name__, missing)
        for key, element in value.items():
            if key not in hints:
                return "{}: {} has no field {!r}".format(at, tp.__name__, key)
            reason = conforms(element, hints[key], "{}.{}".format(at, key))
            if reason:
                return reason
        return None
    if tp is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    elif tp is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif tp is type(None):
        ok = value is None
    elif isinstance(tp, type) and tp in (str, bool, bytes):
        ok = isinstance(value, tp)
    else:  # a response model (pydantic) or a file type in a param union: a JSON body never is one
        ok = False
    return None if ok else "{}: {!r} is not a {}".format(at, value, getattr(tp, "__name__", tp))
