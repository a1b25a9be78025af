"""Tools from plain Python functions: ``@tool``.

The JSON Schema of a tool's parameters is read from the function's type hints
(``typing.get_type_hints``: Python 3.8 and later, no ``typing_extensions``) and its description from the
docstring (the summary; per-parameter text in Google, NumPy or reST style).  The decorated function stays
callable as it was; ``.schema`` is a plain ToolSchema, so a tool can also go into ``config["tools"]``.

Hints understood (nested in any combination): ``str``, ``int``, ``float``, ``bool``, ``None``,
``Optional``/``Union``, ``List``/``Sequence``/``Tuple``/``Set`` (and the builtins), ``Dict``/``Mapping``
with str keys, ``Literal``, ``Enum`` subclasses, ``TypedDict``, dataclasses, ``Any`` (and no hint: any JSON
value).  ``*args``/``**kwargs``, a positional-only parameter or any other hint is a ConfigError naming the
parameter.  A parameter with a default is not required.

Arguments a model sends are checked against the same hints before the function is called (``check``:
what is wrong, in words the model can act on) and converted on the way in (``convert``): ints stay ints,
a float that is a whole number becomes an int where an int is asked for, an Enum parameter gets its
member, a dataclass parameter its instance, a Tuple a tuple.
"""

import dataclasses
import enum
import re
import typing
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, TypeVar, Union, overload

from ..errors import ConfigError
from ..types import ToolSchema

__all__ = ["Tool", "tool", "parse_docstring"]

_NONE = type(None)
F = TypeVar("F", bound=Callable[..., Any])


# -- hints -> JSON Schema (and a converter per hint) ---------------------------------------------------------

def _origin(hint: Any) -> Any:
    return getattr(hint, "__origin__", None)


def _args(hint: Any) -> Tuple[Any, ...]:
    return tuple(getattr(hint, "__args__", None) or ())


def _is_typeddict(hint: Any) -> bool:
    return isinstance(hint, type) and issubclass(hint, dict) and hasattr(hint, "__annotations__") \
        and hasattr(hint, "__total__")


_SEQUENCES = (list, tuple, set, frozenset, Sequence, typing.Sequence, typing.List, typing.Tuple, typing.Set,
              typing.FrozenSet, typing.AbstractSet, typing.MutableSequence, typing.Iterable)
_MAPPINGS = (dict, Mapping, typing.Mapping, typing.Dict, typing.MutableMapping)
try:  # collections.abc generics as typing reports them (3.8: typing.Sequence's __origin__ is collections.abc)
    import collections.abc as _abc

    _SEQUENCES += (_abc.Sequence, _abc.MutableSequence, _abc.Set, _abc.MutableSet, _abc.Iterable)  # type: ignore
    _MAPPINGS += (_abc.Mapping, _abc.MutableMapping)  # type: ignore
except ImportError:  # pragma: no cover
    pass


class _Unsupported(Exception):
    pass


def schema_of(hint: Any, seen: Tuple[Any, ...] = ()) -> Dict[str, Any]:
    """The JSON Schema of one type hint (raises _Unsupported with the reason)."""
    if hint is Any:
        return {}
    if hint is None or hint is _NONE:
        return {"type": "null"}
    if hint is bool:
        return {"type": "boolean"}
    if hint is int:
        return {"type": "integer"}
    if hint is float:
        return {"type": "number"}
    if hint is str:
        return {"type": "string"}
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        values = [member.value for member in hint]
        out = {"enum": values}  # type: Dict[str, Any]
        kind = _json_type(values)
        if kind:
            out["type"] = kind
        return out
    if hint in seen:
        raise _Unsupported("{} refers to itself (recursive types are not supported)".format(_name(hint)))
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        hints = _hints(hint)
        properties = {}
        required = []
        for f in dataclasses.fields(hint):
            if not f.init:
                continue
            properties[f.name] = schema_of(hints.get(f.name, Any), seen + (hint,))
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:  # type: ignore
                required.append(f.name)
        return _object(properties, required)
    if _is_typeddict(hint):
        hints = _hints(hint)
        required_keys = getattr(hint, "__required_keys__", None)
        if required_keys is None:  # 3.8: only the class's totality is known
            required_keys = set(hints) if hint.__total__ else set()
        properties = {key: schema_of(value, seen + (hint,)) for key, value in hints.items()}
        return _object(properties, [key for key in hints if key in required_keys])
    origin = _origin(hint)
    args = _args(hint)
    if origin is Union:
        options = [a for a in args if a is not _NONE]
        schemas = [schema_of(a, seen) for a in options]
        if len(options) < len(args):
            schemas.append({"type": "null"})
        return schemas[0] if len(schemas) == 1 else {"anyOf": schemas}
    if origin is typing.Literal:
        values = list(args)
        if not all(v is None or isinstance(v, (str, int, float, bool)) for v in values):
            raise _Unsupported("Literal values must be str, int, float, bool or None")
        out = {"enum": values}
        kind = _json_type(values)
        if kind:
            out["type"] = kind
        return out
    if hint in (list, tuple, set, frozenset) or origin in _SEQUENCES:
        if origin is tuple or hint is tuple:
            if len(args) == 2 and args[1] is Ellipsis:
                return {"type": "array", "items": schema_of(args[0], seen)}
            if args and args != ((),):
                items = [schema_of(a, seen) for a in args]
                return {"type": "array", "prefixItems": items, "minItems": len(items), "maxItems": len(items)}
            return {"type": "array"}
        if args:
            return {"type": "array", "items": schema_of(args[0], seen)}
        return {"type": "array"}
    if hint is dict or origin in _MAPPINGS:
        if args:
            if args[0] is not str:
                raise _Unsupported("mapping keys must be str (JSON object keys)")
            return {"type": "object", "additionalProperties": schema_of(args[1], seen)}
        return {"type": "object"}
    raise _Unsupported("the type hint {} has no JSON Schema here".format(_name(hint)))


def _object(properties: Dict[str, Any], required: List[str]) -> Dict[str, Any]:
    out = {"type": "object", "properties": properties}  # type: Dict[str, Any]
    if required:
        out["required"] = required
    return out


def _json_type(values: Sequence[Any]) -> Optional[str]:
    kinds = set()
    for value in values:
        if isinstance(value, bool):
            kinds.add("boolean")
        elif isinstance(value, int):
            kinds.add("integer")
        elif isinstance(value, float):
            kinds.add("number")
        elif isinstance(value, str):
            kinds.add("string")
        else:
            return None
    return kinds.pop() if len(kinds) == 1 else None


def _name(hint: Any) -> str:
    return getattr(hint, "__name__", None) or repr(hint).replace("typing.", "")


def _hints(obj: Any) -> Dict[str, Any]:
    try:
        return typing.get_type_hints(obj)
    except Exception as exc:  # a forward reference that does not resolve, say
        raise ConfigError("the type hints of {} cannot be read ({}: {})".format(
            _name(obj), type(exc).__name__, exc)) from None


def _hinted(fn: Any) -> Any:
    """Where a callable's hints are: a partial's function, a callable object's ``__call__``."""
    import functools
    import inspect

    if isinstance(fn, functools.partial):
        return _hinted(fn.func)
    if inspect.isfunction(fn) or inspect.ismethod(fn) or inspect.isbuiltin(fn) or isinstance(fn, type):
        return fn
    return getattr(fn, "__call__", fn)


# -- checking and converting arguments (the same hints) -------------------------------------------------------

def check(hint: Any, value: Any, where: str) -> Any:
    """``value`` (JSON from a model) converted to ``hint``; a ValueError says what does not fit, at ``where``."""
    if hint is Any:
        return value
    if hint is None or hint is _NONE:
        if value is not None:
            raise ValueError("{} must be null".format(where))
        return None
    if hint is bool:
        if not isinstance(value, bool):
            raise ValueError("{} must be a boolean, got {}".format(where, _kind(value)))
        return value
    if hint is int:
        if isinstance(value, float) and value.is_integer() and not isinstance(value, bool):
            return int(value)
        if not isinstance(value, int) or isinstance(value, bool):
            raise ValueError("{} must be an integer, got {}".format(where, _kind(value)))
        return value
    if hint is float:
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise ValueError("{} must be a number, got {}".format(where, _kind(value)))
        return float(value)
    if hint is str:
        if not isinstance(value, str):
            raise ValueError("{} must be a string, got {}".format(where, _kind(value)))
        return value
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        for member in hint:
            if member.value == value and type(member.value) is type(value):
                return member
        raise ValueError("{} must be one of {}, got {}".format(where, [m.value for m in hint], _short(value)))
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        hints = _hints(hint)
        fields = [f for f in dataclasses.fields(hint) if f.init]
        data = _fields(value, where, {f.name: hints.get(f.name, Any) for f in fields},
                       [f.name for f in fields if f.default is dataclasses.MISSING
                        and f.default_factory is dataclasses.MISSING])  # type: ignore
        return hint(**data)
    if _is_typeddict(hint):
        hints = _hints(hint)
        required_keys = getattr(hint, "__required_keys__", None)
        if required_keys is None:
            required_keys = set(hints) if hint.__total__ else set()
        return _fields(value, where, hints, [k for k in hints if k in required_keys])
    origin = _origin(hint)
    args = _args(hint)
    if origin is Union:
        if value is None and _NONE in args:
            return None
        problems = []
        for option in args:
            if option is _NONE:
                continue
            try:
                return check(option, value, where)
            except ValueError as exc:
                problems.append(str(exc))
        raise ValueError(problems[0] if len(problems) == 1 else "{} fits none of the allowed types ({})".format(
            where, "; ".join(problems)))
    if origin is typing.Literal:
        for option in args:
            if option == value and type(option) is type(value):
                return value
        raise ValueError("{} must be one of {}, got {}".format(where, list(args), _short(value)))
    if hint in (list, tuple, set, frozenset) or origin in _SEQUENCES:
        if not isinstance(value, list):
            raise ValueError("{} must be an array, got {}".format(where, _kind(value)))
        kind = origin if origin is not None else hint
        if kind is tuple:
            if len(args) == 2 and args[1] is Ellipsis:
                return tuple(check(args[0], v, "{}[{}]".format(where, i)) for i, v in enumerate(value))
            if args and args != ((),):
                if len(value) != len(args):
                    raise ValueError("{} must have {} items, got {}".format(where, len(args), len(value)))
                return tuple(check(a, v, "{}[{}]".format(where, i)) for i, (a, v) in enumerate(zip(args, value)))
            return tuple(value)
        items = [check(args[0], v, "{}[{}]".format(where, i)) for i, v in enumerate(value)] if args else list(value)
        if kind in (set, frozenset, typing.Set, typing.FrozenSet, typing.AbstractSet) or \
                getattr(kind, "__name__", "") in ("Set", "MutableSet", "AbstractSet", "FrozenSet"):
            try:
                return set(items)
            except TypeError:
                return items
        return items
    if hint is dict or origin in _MAPPINGS:
        if not isinstance(value, dict):
            raise ValueError("{} must be an object, got {}".format(where, _kind(value)))
        if args:
            return {k: check(args[1], v, "{}[{!r}]".format(where, k)) for k, v in value.items()}
        return dict(value)
    return value  # pragma: no cover - schema_of refused every other hint


def _fields(value: Any, where: str, hints: Mapping[str, Any], required: Sequence[str]) -> Dict[str, Any]:
    if not isinstance(value, dict):
        raise ValueError("{} must be an object, got {}".format(where, _kind(value)))
    missing = [name for name in required if name not in value]
    if missing:
        raise ValueError("{} is missing {}".format(where, ", ".join(repr(m) for m in missing)))
    unknown = [name for name in value if name not in hints]
    if unknown:
        raise ValueError("{} has no field {}".format(where, ", ".join(repr(u) for u in unknown)))
    return {name: check(hints[name], v, "{}.{}".format(where, name)) for name, v in value.items()}


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "an array",
            dict: "an object"}.get(type(value), type(value).__name__)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


# -- docstrings ------------------------------------------------------------------------------------------------

_GOOGLE = re.compile(r"^(Args|Arguments|Parameters|Params|Keyword Args|Keyword Arguments|Other Parameters):\s*$")
_GOOGLE_ITEM = re.compile(r"^\*{0,2}(\w+)\s*(?:\(([^)]*)\))?\s*:\s*(.*)$")
_NUMPY_ITEM = re.compile(r"^\*{0,2}(\w+)\s*(?::.*)?$")
_REST = re.compile(r"^:(?:param|parameter|arg|argument|key|keyword)\s+(?:[^:]*\s)?\*{0,2}(\w+)\s*:\s*(.*)$")
_SECTION_END = re.compile(r"^(Returns|Return|Yields|Raises|Examples?|Notes?|See Also|References|Warnings?|"
                          r"Attributes|Todo)\s*:?\s*$")


def parse_docstring(doc: Optional[str]) -> Tuple[str, Dict[str, str]]:
    """(summary, {parameter: text}) of a docstring in Google, NumPy or reST style."""
    if not doc:
        return "", {}
    import inspect

    lines = inspect.cleandoc(doc).splitlines()
    summary = []  # type: List[str]
    for line in lines:
        stripped = line.strip()
        if not stripped or _GOOGLE.match(stripped) or stripped.startswith(":") or _SECTION_END.match(stripped) \
                or stripped in ("Parameters", "Args"):
            break
        summary.append(stripped)
    params = {}  # type: Dict[str, str]
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        rest = _REST.match(stripped)
        if rest:
            name, text = rest.group(1), [rest.group(2).strip()]
            i += 1
            while i < len(lines) and lines[i].strip() and not lines[i].strip().startswith(":"):
                text.append(lines[i].strip())
                i += 1
            params[name] = " ".join(t for t in text if t)
            continue
        if _GOOGLE.match(stripped):
            base = _indent(line)
            i += 1
            item_indent = None
            name = None
            text = []
            while i < len(lines):
                inner = lines[i]
                if inner.strip() and _indent(inner) <= base:
                    break
                if not inner.strip():
                    i += 1
                    continue
                if item_indent is None:
                    item_indent = _indent(inner)
                match = _GOOGLE_ITEM.match(inner.strip()) if _indent(inner) == item_indent else None
                if match:
                    if name:
                        params[name] = " ".join(text)
                    name, text = match.group(1), [match.group(3).strip()] if match.group(3).strip() else []
                elif name:
                    text.append(inner.strip())
                i += 1
            if name:
                params[name] = " ".join(text)
            continue
        if stripped in ("Parameters", "Other Parameters", "Keyword Arguments") and i + 1 < len(lines) \
                and set(lines[i + 1].strip()) == {"-"}:
            base = _indent(line)
            i += 2
            name = None
            text = []
            while i < len(lines):
                inner = lines[i]
                if inner.strip() and _indent(inner) <= base and i + 1 < len(lines) \
                        and set(lines[i + 1].strip()) == {"-"}:
                    break  # the next section's title
                if not inner.strip():
                    i += 1
                    continue
                if _indent(inner) == base:
                    match = _NUMPY_ITEM.match(inner.strip())
                    if name:
                        params[name] = " ".join(text)
                    name, text = (match.group(1), []) if match else (None, [])
                elif name:
                    text.append(inner.strip())
                i += 1
            if name:
                params[name] = " ".join(text)
            continue
        i += 1
    return " ".join(summary), params


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


# -- the tool ----------------------------------------------------------------------------------------------------

class Tool(object):
    """A Python function the model may call: ``.schema`` (a ToolSchema), and the function itself.

    Calling the tool calls the function as it was.  ``run(arguments)`` is what the runner does with a model's
    arguments: ``check`` them, then call the function with the converted values.
    """

    def __init__(self, fn: Callable[..., Any], name: Optional[str] = None, description: Optional[str] = None,
                 requires_approval: bool = False, timeout: Optional[float] = None) -> None:
        if not callable(fn):
            raise ConfigError("tool() takes a function (got {})".format(type(fn).__name__))
        if name is not None and (not isinstance(name, str) or not name):
            raise ConfigError("tool name must be a non-empty str")
        if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float))
                                    or not timeout > 0):
            raise ConfigError("tool timeout must be a number of seconds > 0 (or None)")
        self.fn = fn
        self.name = name or getattr(fn, "__name__", "")  # type: str
        if not self.name or self.name == "<lambda>":
            raise ConfigError("{} has no name: tool(fn, name=...)".format(
                "a lambda" if self.name == "<lambda>" else repr(fn)[:80]))
        self.requires_approval = bool(requires_approval)
        self.timeout = timeout  # type: Optional[float]
        import functools
        import inspect

        summary, texts = parse_docstring(getattr(fn.func if isinstance(fn, functools.partial) else fn, "__doc__", None))
        try:
            signature = inspect.signature(fn)
        except (TypeError, ValueError) as exc:
            raise ConfigError("tool {!r}: its signature cannot be read ({})".format(self.name, exc)) from None
        hints = _hints(_hinted(fn))
        properties = {}  # type: Dict[str, Any]
        required = []  # type: List[str]
        self._params = {}  # type: Dict[str, Any]
        self._required = []  # type: List[str]
        for pname, param in signature.parameters.items():
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                raise ConfigError("tool {!r}: parameter {}{} cannot be described to a model (*args and **kwargs "
                                  "have no schema); name each parameter".format(
                                      self.name, "*" if param.kind == param.VAR_POSITIONAL else "**", pname))
            if param.kind == param.POSITIONAL_ONLY:
                raise ConfigError("tool {!r}: parameter {!r} is positional-only; a model passes arguments by "
                                  "name".format(self.name, pname))
            hint = hints.get(pname, param.annotation)
            if hint is param.empty:  # no hint: any JSON value
                hint = Any
            try:
                schema = schema_of(hint)
            except _Unsupported as exc:
                raise ConfigError("tool {!r}: parameter {!r}: {}".format(self.name, pname, exc)) from None
            if texts.get(pname):
                schema = dict(schema, description=texts[pname])
            properties[pname] = schema
            self._params[pname] = hint
            if param.default is param.empty:
                required.append(pname)
                self._required.append(pname)
        parameters = {"type": "object", "properties": properties}  # type: Dict[str, Any]
        if required:
            parameters["required"] = required
        schema_out = {"name": self.name}  # type: Dict[str, Any]
        text = description if description is not None else summary
        if text:
            schema_out["description"] = text
        schema_out["parameters"] = parameters
        #: the ToolSchema the model sees
        self.schema = schema_out  # type: ToolSchema  # type: ignore[assignment]
        try:
            self.__doc__ = fn.__doc__
            self.__name__ = getattr(fn, "__name__", self.name)
            self.__qualname__ = getattr(fn, "__qualname__", self.name)
            self.__module__ = getattr(fn, "__module__", __name__)
            self.__wrapped__ = fn
        except (AttributeError, TypeError):  # pragma: no cover
            pass

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        return "Tool({!r})".format(self.name)

    def convert(self, arguments: Mapping[str, Any]) -> Dict[str, Any]:
        """The model's arguments checked and converted for the function; a ValueError says what is wrong."""
        if not isinstance(arguments, Mapping):
            raise ValueError("the arguments must be an object")
        missing = [name for name in self._required if name not in arguments]
        if missing:
            raise ValueError("missing required argument{} {}".format(
                "s" if len(missing) > 1 else "", ", ".join(repr(m) for m in missing)))
        unknown = [name for name in arguments if name not in self._params]
        if unknown:
            raise ValueError("unknown argument{} {} (parameters: {})".format(
                "s" if len(unknown) > 1 else "", ", ".join(repr(u) for u in unknown),
                ", ".join(self._params) or "none"))
        return {name: check(self._params[name], value, name) for name, value in arguments.items()}

    def run(self, arguments: Mapping[str, Any]) -> Any:
        return self.fn(**self.convert(arguments))


@overload
def tool(fn: Callable[..., Any], name: Optional[str] = None, description: Optional[str] = None,
         requires_approval: bool = False, timeout: Optional[float] = None) -> Tool: ...


@overload
def tool(fn: None = None, name: Optional[str] = None, description: Optional[str] = None,
         requires_approval: bool = False, timeout: Optional[float] = None) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(fn: Optional[Callable[..., Any]] = None, name: Optional[str] = None, description: Optional[str] = None,
         requires_approval: bool = False, timeout: Optional[float] = None) -> Any:
    """A Tool from a function: ``@tool``, ``@tool(requires_approval=True)`` or ``tool(fn, name=...)``.

    ``timeout``: seconds the runner waits for one call before it reports a timeout to the model (the
    function's thread is not stopped: Python cannot stop a thread; it runs on and its result is dropped).
    """
    if fn is None:
        return lambda f: Tool(f, name, description, requires_approval, timeout)
    return Tool(fn, name, description, requires_approval, timeout)
