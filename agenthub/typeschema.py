"""Python types as JSON Schema, and JSON converted back to the type: one dispatch table for both.

``compile(tp)`` reads a type once and returns a ``Compiled``: ``.schema`` (a JSON Schema dict) and
``.convert(value)`` (JSON in, the typed value out: dataclass instances, Enum members, tuples, ...; or a
``ConversionError`` whose ``.problems`` are ``(path, message)`` pairs, such as
``('items[2].price', 'expected a number, got "12,50"')``).  ``@tool`` (``agenthub.agent.tools``) builds each
parameter's schema and argument check from it.

Types (nested in any combination): ``str``, ``int``, ``float``, ``bool``, ``None``, ``Any`` (any JSON value),
``Enum`` subclasses, ``Literal``, ``Optional``/``Union`` (and ``X | None``), ``List``/``Sequence``/``Set``/
``Tuple`` (and the builtins, fixed tuples too), ``Dict``/``Mapping`` with ``str`` keys, ``TypedDict`` (its
required keys), dataclasses (their ``InitVar``s too), ``NamedTuple`` (an object of its fields), ``Annotated``
(a ``str`` or an object's ``description`` becomes the description; ``ge``/``gt``/``le``/``lt``/
``min_length``/``max_length``/``pattern``/``multiple_of`` read duck-typed from the metadata, from pydantic's ``Field(...)`` or ``annotated_types``), a
pydantic model (v2 ``model_json_schema``/``model_validate``, then ``model_validate_json``: a strict model takes a
date's string; a model with a union, ``model_validate_json`` first; v1 ``schema``/``parse_obj``; pydantic validates it; agenthub never imports pydantic), and a
plain JSON Schema dict (the value is then the validated JSON).
A type with no schema (``object``, a callable, a class, a recursive type where ``$ref`` is not allowed) is a
ConfigError naming the field; so is a type or schema dict nested deeper than Python's stack.

Conversion is strict where JSON is: ``True`` is not an int; an int is a float (one past a float's range is a
problem); a float that is a whole number is an int (a ``Literal``'s or an Enum's number too: ``1.0`` is
``Literal[1]``); a str is never a number.  ``typing_extensions``' forms (``NotRequired``, ``Required``,
``ReadOnly``, ``Literal``) are read as typing's.  A value nested deeper than Python's stack is a problem
(``nested too deeply to check``), never a RecursionError.  An object's missing required fields and unknown fields are
problems (a field with a default may be left out: the constructor fills it in).  A union takes the first
option whose JSON type the value has, then the first that fits.

The API: ``compile(tp, refs=True) -> Compiled`` (``.type``, ``.schema``, ``.inline()``,
``.convert(value, where="", style="typed")``); ``ConversionError`` (AgentHubError, ValueError; ``.problems``,
``.lines``); ``inline_refs(schema)``; ``to_json(value)`` (a default as JSON); ``type_hints(obj)``
(``get_type_hints`` keeping ``Annotated``, a ConfigError when a hint does not resolve).

The JSON Schema subset emitted, and checked when a dict is given as the type: ``type`` (a name or a list of
names, ``null`` among them), ``properties``, ``required``, ``additionalProperties`` (false or a schema),
``enum``, ``const``, ``items``, ``prefixItems``, ``anyOf``, ``oneOf``, ``allOf``, ``not``, ``$ref`` to
``#``, ``#/$defs/...`` or ``#/definitions/...``, ``minimum``/``maximum``/``exclusiveMinimum``/
``exclusiveMaximum``, ``multipleOf``, ``minLength``/``maxLength``, ``pattern``, ``minItems``/``maxItems``,
``uniqueItems``, ``minProperties``/``maxProperties``, OpenAPI's ``nullable``.  Annotations (``title``,
``description``, ``default``, ``format``, ``examples``, ...) are not checked against the value (``title``,
``description`` and ``format`` must be strings); any other keyword is a ConfigError when the schema is
compiled.  Python's types give ``$defs``/``$ref`` for nested dataclasses, TypedDicts, NamedTuples and
models unless ``refs=False`` (every schema inline: what wires without ``$ref`` take); ``inline_refs`` does
the same to any schema.
"""

import collections.abc as _abc
import dataclasses
import decimal
import enum
import fractions
import json
import math
import re
import sys
import typing
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from .errors import AgentHubError, ConfigError

__all__ = ["compile", "Compiled", "ConversionError", "inline_refs", "to_json", "type_hints"]

#: the JSON Schema keywords whose value is JSON data, not a schema: a walk over a schema's subschemas skips them
DATA_KEYWORDS = frozenset(["enum", "const", "examples", "default"])

_NONE = type(None)
_BAD = object()  # what a converter returns after recording a problem
_UNION_TYPE = getattr(__import__("types"), "UnionType", None)  # ``X | Y`` (3.10+)
_QUALIFIER_NAMES = ("Required", "NotRequired", "ReadOnly", "Final")


def _forms(names: Sequence[str]) -> Tuple[Any, ...]:
    """typing's special forms of these names, and typing_extensions' when the caller imported it (its own on
    older Pythons: ``typing_extensions.NotRequired`` on 3.8, ``ReadOnly`` before 3.13, ``Literal`` on 3.8)."""
    modules = [typing, sys.modules.get("typing_extensions")]
    found = []  # type: List[Any]
    for module in modules:
        for name in names:
            form = getattr(module, name, None) if module is not None else None
            if form is not None and form not in found:
                found.append(form)
    return tuple(found)


class ConversionError(AgentHubError, ValueError):
    """A value that does not fit its type: ``.problems`` is a list of ``(path, message)``; the str joins them
    (``items[2].price: expected a number, got "12,50"``), the first 20 of them."""

    def __init__(self, problems: Sequence[Tuple[str, str]], lines: Sequence[str]) -> None:
        self.problems = list(problems)
        self.lines = list(lines)
        text = "; ".join(self.lines[:20])
        if len(self.lines) > 20:
            text += "; (and {} more)".format(len(self.lines) - 20)
        super().__init__(text)


# -- what a converter says about a value that does not fit (two wordings: typed output, @tool arguments) ------

def _kind(value: Any) -> str:
    if value is None:
        return "null"
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "an array",
            dict: "an object"}.get(type(value), type(value).__name__)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _jshort(value: Any) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False, default=repr)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


#: how many names one problem lists (an answer's unknown members: a model may write thousands, each long)
_NAMES_SHOWN = 20


def names_shown(names: Sequence[str]) -> str:
    """The names, each at most 60 characters, at most ``_NAMES_SHOWN`` of them (then how many more): what goes
    back to the model stays small whatever the answer held."""
    text = ", ".join(_short(n) for n in names[:_NAMES_SHOWN])
    if len(names) > _NAMES_SHOWN:
        text += " and {} more".format(len(names) - _NAMES_SHOWN)
    return text


class _Voice(object):
    """Typed output's wording: ``path: expected ..., got <the JSON>``."""

    #: an exception of a type's own constructor (a dataclass ``__post_init__``) propagates as it is
    reraise = False

    def line(self, path: str, message: str) -> str:
        return "{}: {}".format(path, message) if path else message

    def mismatch(self, expected: str, value: Any) -> str:
        return "expected {}, got {}".format(expected, _jshort(value))

    def one_of(self, options: Sequence[Any], value: Any) -> str:
        return "expected one of {}, got {}".format(", ".join(_jshort(o) for o in options), _jshort(value))

    def missing(self, names: Sequence[str]) -> str:
        return "missing required field{} {}".format("s" if len(names) > 1 else "", names_shown(names))

    def unknown(self, names: Sequence[str]) -> str:
        return "unexpected field{} {}".format("s" if len(names) > 1 else "", names_shown(names))

    def length(self, wanted: int, got: int) -> str:
        return "expected {} items, got {}".format(wanted, got)

    def none_fit(self, texts: Sequence[str]) -> str:
        return "matches none of the allowed types ({})".format("; ".join(texts))

    def rule(self, rule: str, value: Any) -> str:
        return "expected {}, got {}".format(rule, _jshort(value))

    def foreign(self, text: str) -> str:
        return text


class _ToolVoice(_Voice):
    """@tool's wording, in words a model can act on: ``path must be an integer, got a number``.  A
    constructor's own exception propagates: the runner words it (its secrets scrubbed)."""

    reraise = True

    def line(self, path: str, message: str) -> str:
        return "{} {}".format(path, message) if path else message

    def mismatch(self, expected: str, value: Any) -> str:
        if expected == "null":
            return "must be null"
        return "must be {}, got {}".format(expected, _kind(value))

    def one_of(self, options: Sequence[Any], value: Any) -> str:
        return "must be one of {}, got {}".format(list(options), _short(value))

    def missing(self, names: Sequence[str]) -> str:
        return "is missing " + names_shown(names)

    def unknown(self, names: Sequence[str]) -> str:
        return "has no field " + names_shown(names)

    def length(self, wanted: int, got: int) -> str:
        return "must have {} items, got {}".format(wanted, got)

    def none_fit(self, texts: Sequence[str]) -> str:
        return "fits none of the allowed types ({})".format("; ".join(texts))

    def rule(self, rule: str, value: Any) -> str:
        return "must be {}, got {}".format(rule, _short(value))

    def foreign(self, text: str) -> str:
        return "is invalid: " + text


_VOICES = {"typed": _Voice(), "tool": _ToolVoice()}


def _render(path: Any, root: str) -> str:
    """A path is None (the root) or ``(parent, key)``: a str key is a field, an int an index, a 1-tuple a
    mapping key."""
    keys = []
    while path is not None:
        path, key = path
        keys.append(key)
    out = root
    for key in reversed(keys):
        if isinstance(key, int):
            out += "[{}]".format(key)
        elif isinstance(key, tuple):  # (a mapping's key: the answer's, any length)
            out += "[{}]".format(_short(key[0]))
        else:  # (a field; or, from a pydantic model's error, a member the answer named: any length)
            key = key if len(key) <= 60 else key[:57] + "..."
            out += "." + key if out else key
    return out


class _Ctx(object):
    __slots__ = ("voice", "root", "problems", "lines")

    def __init__(self, voice: _Voice, root: str) -> None:
        self.voice = voice
        self.root = root
        self.problems = []  # type: List[Tuple[str, str]]
        self.lines = []  # type: List[str]

    def add(self, path: Any, message: str, at: Optional[int] = None) -> Any:
        """Record a problem (at index ``at``: before those recorded since); returns _BAD."""
        where = _render(path, self.root)
        at = len(self.problems) if at is None else at
        self.problems.insert(at, (where, message))
        self.lines.insert(at, self.voice.line(where, message))
        return _BAD

    def trial(self) -> "_Ctx":
        return _Ctx(self.voice, self.root)


Convert = Callable[[Any, Any, _Ctx], Any]


class _Node(object):
    """One compiled type: its schema and its converter ``(value, path, ctx) -> value or _BAD``."""
    __slots__ = ("schema", "convert", "exact")

    def __init__(self, schema: Any, convert: Convert, exact: Tuple[type, ...] = ()) -> None:
        self.schema = schema  # (a dict; True or False for a boolean JSON Schema)
        self.convert = convert
        self.exact = exact  # the JSON value types it takes as they are (a union tries those first)


class _Unsupported(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.field = None  # type: Optional[str]


# -- the dispatch table: (test, build) per kind of type hint ------------------------------------------------

def _origin(tp: Any) -> Any:
    return typing.get_origin(tp) or tp


def _json_kind(values: Sequence[Any]) -> Optional[str]:
    kinds = set()
    for value in values:
        kind = {bool: "boolean", int: "integer", float: "number", str: "string", _NONE: "null"}.get(type(value))
        if kind is None:
            return None
        kinds.add(kind)
    return kinds.pop() if len(kinds) == 1 else None


def _enum_schema(values: Sequence[Any]) -> Dict[str, Any]:
    out = {"enum": list(values)}  # type: Dict[str, Any]
    kind = _json_kind(values)
    if kind:
        out["type"] = kind
    return out


def _choices(json_values: Sequence[Any], results: Sequence[Any]) -> _Node:
    """An Enum or a Literal: each JSON value (matched with its JSON type: True is not 1) gives its result."""
    table = {}  # type: Dict[Tuple[type, Any], Any]
    for value, result in zip(json_values, results):
        table[(type(value), value)] = result

    def convert(value: Any, path: Any, ctx: _Ctx) -> Any:
        try:
            return table[(type(value), value)]
        except (KeyError, TypeError):
            pass
        twin = _number_twin(value)  # 1.0 is the JSON number 1 (and 2 is 2.0), as an int field reads it
        if twin is not None and (type(twin), twin) in table:
            return table[(type(twin), twin)]
        return ctx.add(path, ctx.voice.one_of(json_values, value))
    return _Node(_enum_schema(json_values), convert)


def _number_twin(value: Any) -> Any:
    """The same JSON number as the other Python type (``1.0`` for ``1``, ``1`` for ``1.0``), or None."""
    if type(value) is float and value.is_integer():
        return int(value)
    if type(value) is int:
        try:
            twin = float(value)
        except OverflowError:
            return None
        return twin if twin == value else None  # (exact: 2**53 + 1 is no float)
    return None


def _primitive(schema: Dict[str, Any], expected: str, exact: Tuple[type, ...], accept: Callable[[Any], Any]) -> _Node:
    def convert(value: Any, path: Any, ctx: _Ctx) -> Any:
        if type(value) in exact:
            return value
        out = accept(value)
        return ctx.add(path, ctx.voice.mismatch(expected, value)) if out is _BAD else out
    return _Node(schema, convert, exact)


def _as_int(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value if isinstance(value, int) and not isinstance(value, bool) else _BAD


def _as_float(value: Any) -> Any:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return _BAD
    try:
        return float(value)
    except OverflowError:  # an int past a float's range (JSON's 1 and 400 zeros)
        return _BAD


def _as(kind: type) -> Callable[[Any], Any]:
    return lambda value: value if isinstance(value, kind) else _BAD


_PRIMITIVES = {
    str: lambda: _primitive({"type": "string"}, "a string", (str,), _as(str)),
    int: lambda: _primitive({"type": "integer"}, "an integer", (int,), _as_int),
    float: lambda: _primitive({"type": "number"}, "a number", (float,), _as_float),
    bool: lambda: _primitive({"type": "boolean"}, "a boolean", (bool,), _as(bool)),
    _NONE: lambda: _primitive({"type": "null"}, "null", (_NONE,), lambda v: _BAD),
}  # type: Dict[Any, Callable[[], _Node]]


def _is_model(tp: Any) -> bool:
    return isinstance(tp, type) and (hasattr(tp, "model_json_schema") and hasattr(tp, "model_validate")
                                     or hasattr(tp, "parse_obj") and hasattr(tp, "schema")
                                     and hasattr(tp, "__fields__"))


def _is_typeddict(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, dict) and hasattr(tp, "__annotations__") \
        and hasattr(tp, "__total__")


def _is_namedtuple(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, tuple) and hasattr(tp, "_fields")


_SEQUENCES = {list: list, tuple: tuple, set: set, frozenset: frozenset, _abc.Sequence: list,
              _abc.MutableSequence: list, _abc.Set: set, _abc.MutableSet: set, _abc.Iterable: list,
              _abc.Collection: list}  # type: Dict[Any, Any]
_MAPPINGS = (dict, _abc.Mapping, _abc.MutableMapping)


def _name(tp: Any) -> str:
    if isinstance(tp, type):
        return tp.__name__
    return repr(tp).replace("typing.", "")


class _Compiler(object):
    def __init__(self, refs: bool) -> None:
        self.refs = refs
        self.defs = {}  # type: Dict[str, Any]
        self.names = {}  # type: Dict[Any, str]
        self.done = {}  # type: Dict[Any, _Node]
        self.building = {}  # type: Dict[Any, _Node]
        self.recursive = set()  # type: set

    def node(self, tp: Any) -> _Node:
        for test, build in _TABLE:
            if test(tp):
                return build(self, tp)
        raise _Unsupported("the type hint {} has no JSON Schema here".format(_name(tp)))

    # named types: dataclass, TypedDict, NamedTuple, pydantic model

    def named(self, tp: Any, body: Callable[[], _Node]) -> _Node:
        if tp in self.done:
            return self._use(tp, self.done[tp])
        if tp in self.building:
            if not self.refs:
                raise _Unsupported("{} refers to itself: a recursive type needs $ref, which this schema may not "
                                   "use".format(_name(tp)))
            self.recursive.add(tp)
            real = self.building[tp]
            return _Node(self._ref(tp), lambda v, p, c: real.convert(v, p, c))
        placeholder = _Node({}, lambda v, p, c: _BAD)
        self.building[tp] = placeholder
        try:
            built = body()
        finally:
            del self.building[tp]
        placeholder.schema, placeholder.convert = built.schema, built.convert
        self.done[tp] = placeholder
        if self.refs:
            self.defs[self._defname(tp)] = built.schema
        return self._use(tp, placeholder)

    def _use(self, tp: Any, node: _Node) -> _Node:
        return _Node(self._ref(tp), node.convert) if self.refs else node

    def _defname(self, tp: Any) -> str:
        if tp not in self.names:
            base = getattr(tp, "__name__", "Type")
            name, n = base, 1
            while name in self.names.values():
                n += 1
                name = "{}{}".format(base, n)
            self.names[tp] = name
        return self.names[tp]

    def _ref(self, tp: Any) -> Dict[str, Any]:
        return {"$ref": "#/$defs/" + self._defname(tp)}

    def fields(self, owner: Any, specs: Iterable[Tuple[str, Any, bool, Any]],
               build: Callable[[Dict[str, Any]], Any], positional: Sequence[str] = ()) -> _Node:
        """An object node from ``(name, hint, required, default)`` specs (``_MISSING``: no default)."""
        properties = {}  # type: Dict[str, Any]
        nodes = {}  # type: Dict[str, _Node]
        required = []  # type: List[str]
        for fname, hint, needed, default in specs:
            try:
                node = self.node(hint)
            except _Unsupported as exc:
                if exc.field is None:
                    exc.field = "{}.{}".format(_name(owner), fname)
                raise
            schema = node.schema
            if default is not _MISSING:
                schema = _with_default(schema, default)
            properties[fname], nodes[fname] = schema, node
            if needed:
                required.append(fname)
        schema_out = {"type": "object", "properties": properties}  # type: Dict[str, Any]
        if required:
            schema_out["required"] = required
        return _Node(schema_out, _object_converter(nodes, required, build, positional), (dict,))


_MISSING = object()


def _with_default(schema: Dict[str, Any], default: Any) -> Dict[str, Any]:
    try:
        return dict(schema, default=to_json(default))
    except ValueError:
        return schema


def _object_converter(nodes: Dict[str, _Node], required: List[str], build: Callable[[Dict[str, Any]], Any],
                      positional: Sequence[str]) -> Convert:
    needed = frozenset(required)

    def convert(value: Any, path: Any, ctx: _Ctx) -> Any:
        if positional and type(value) is list and len(value) <= len(positional):
            value = dict(zip(positional, value))
        if not isinstance(value, dict):
            return ctx.add(path, ctx.voice.mismatch("an object", value))
        ok = needed.issubset(value)
        if not ok:
            ctx.add(path, ctx.voice.missing([n for n in required if n not in value]))
        out = {}
        unknown = []
        mark = len(ctx.problems)
        for key, item in value.items():
            node = nodes.get(key)
            if node is None:
                unknown.append(key)
                continue
            got = node.convert(item, (path, key), ctx)
            if got is _BAD:
                ok = False
            out[key] = got
        if unknown:  # (reported before the fields' own problems, as ``missing`` is)
            ok = False
            ctx.add(path, ctx.voice.unknown(unknown), mark)
        if not ok:
            return _BAD
        try:
            return build(out)
        except Exception as exc:  # a __post_init__ that refuses the values, say
            if ctx.voice.reraise:
                raise
            return ctx.add(path, ctx.voice.foreign("{}: {}".format(type(exc).__name__, exc)))
    return convert


def _build_dataclass(comp: _Compiler, tp: Any) -> _Node:
    def body() -> _Node:
        hints = type_hints(tp)
        specs = []
        fields = set(f.name for f in dataclasses.fields(tp))
        for f in getattr(tp, "__dataclass_fields__", {}).values():  # (in order: fields and InitVars)
            hint = hints.get(f.name, Any)
            if isinstance(hint, dataclasses.InitVar):  # a constructor argument too (__post_init__'s)
                hint = getattr(hint, "type", Any)
            elif f.name not in fields:  # a ClassVar
                continue
            if not f.init:
                continue
            default = f.default if f.default is not dataclasses.MISSING else _MISSING
            needed = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING  # type: ignore
            specs.append((f.name, hint, needed, default))
        return comp.fields(tp, specs, lambda data: tp(**data))
    return comp.named(tp, body)


def _build_typeddict(comp: _Compiler, tp: Any) -> _Node:
    def body() -> _Node:
        hints = type_hints(tp)
        keys = getattr(tp, "__required_keys__", None)
        if keys is None:  # 3.8: only the class's totality is known
            keys = set(hints) if tp.__total__ else set()
        return comp.fields(tp, [(k, h, k in keys, _MISSING) for k, h in hints.items()], dict)
    return comp.named(tp, body)


def _build_namedtuple(comp: _Compiler, tp: Any) -> _Node:
    def body() -> _Node:
        hints = type_hints(tp)
        defaults = getattr(tp, "_field_defaults", {})
        specs = [(f, hints.get(f, Any), f not in defaults, defaults.get(f, _MISSING)) for f in tp._fields]
        return comp.fields(tp, specs, lambda data: tp(**data), positional=tp._fields)
    return comp.named(tp, body)


def _build_model(comp: _Compiler, tp: Any) -> _Node:
    v2 = hasattr(tp, "model_json_schema")

    def body() -> _Node:
        raw = dict(tp.model_json_schema() if v2 else tp.schema())
        validate = _as_json(tp, _unions(raw)) if v2 else tp.parse_obj
        schema = _model_schema(comp, tp, raw)

        def convert(value: Any, path: Any, ctx: _Ctx) -> Any:
            try:
                return validate(value)
            except Exception as exc:  # pydantic's ValidationError: .errors() has each problem's loc and msg
                return _model_problems(exc, path, ctx)
        return _Node(schema, convert, (dict,))
    return comp.named(tp, body)


def _unions(schema: Any) -> bool:
    """Whether a model's JSON schema has a union of two or more types besides null (``Union[date, str]``)."""
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            for key in ("anyOf", "oneOf"):
                branches = node.get(key)
                if isinstance(branches, list) and sum(1 for branch in branches if not (
                        isinstance(branch, dict) and branch.get("type") == "null")) > 1:
                    return True
            kind = node.get("type")
            if isinstance(kind, list) and sum(1 for name in kind if name != "null") > 1:
                return True
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return False


def _as_json(tp: Any, unions: bool = False) -> Callable[[Any], Any]:
    """A v2 model's validation of a JSON value as the JSON it is: a ``strict=True`` model (or field) refuses in
    Python mode the string a JSON ``date``, ``UUID`` or Enum value is and the array a tuple is, which JSON mode
    (``model_validate_json``) takes.  Python mode first (it takes what JSON mode takes of any other model, without
    writing the value out as JSON again), JSON mode when it refuses; a value JSON text cannot hold (``NaN``, an
    object, a lone surrogate) is Python mode's alone.  A model with ``unions`` (``_unions``) goes to JSON mode
    first: a union picks the exact match, which differs between the modes (``Union[date, str]`` of a date's
    string: the str in Python mode, the date in JSON mode, as pydantic reads a JSON reply)."""
    def validate(value: Any) -> Any:
        refused = None  # type: Optional[BaseException]
        if not unions:
            try:
                return tp.model_validate(value)
            except Exception as exc:  # (pydantic's ValidationError: JSON mode says what holds, and what does not)
                refused = exc
        try:
            text = json.dumps(value, ensure_ascii=False, allow_nan=False).encode("utf-8")
        except (TypeError, ValueError):  # (UnicodeEncodeError is a ValueError)
            if refused is None:
                return tp.model_validate(value)
            raise refused from None
        return tp.model_validate_json(text)
    return validate


def _model_schema(comp: _Compiler, tp: Any, schema: Dict[str, Any]) -> Dict[str, Any]:
    """A model's own schema with its ``$defs`` moved into ours (``refs``; the names must not clash, and a
    recursive root must carry the model's name) or inlined."""
    inner = schema.pop("$defs", None) or schema.pop("definitions", None) or {}
    if not inner:
        return schema
    name = comp._defname(tp)
    top = schema.get("$ref", "")
    root = top.rsplit("/", 1)[-1] if isinstance(top, str) else ""
    taken = set(comp.defs) | (set(comp.names.values()) - {name})
    if comp.refs and not (set(inner) & taken) and (not top or root == name):
        moved = _inline(inner, {}, (), name, rename=True)
        if top:
            schema = dict(moved.pop(root), **{k: v for k, v in schema.items() if k != "$ref"})
            comp.recursive.add(tp)
        comp.defs.update(moved)
        return _inline(schema, {}, (), name, rename=True)
    return inline_refs(dict(schema, **{"$defs": inner}), _name(tp))


def _model_problems(exc: Exception, path: Any, ctx: _Ctx) -> Any:
    errors = getattr(exc, "errors", None)
    try:
        found = list(errors()) if callable(errors) else []
    except Exception:  # pragma: no cover - a foreign error's own failure
        found = []
    if not found:
        return ctx.add(path, ctx.voice.foreign("{}: {}".format(type(exc).__name__, exc)))
    for error in found:
        where = path
        for key in error.get("loc", ()) or ():
            where = (where, key if isinstance(key, (int, str)) else str(key))
        ctx.add(where, ctx.voice.foreign(str(error.get("msg", "invalid"))))
    return _BAD


def _build_enum(comp: _Compiler, tp: Any) -> _Node:
    members = list(tp)
    values = [m.value for m in members]
    if not _plain(values):
        raise _Unsupported("the values of {} are not all str, int, float, bool or None".format(tp.__name__))
    return _choices(values, members)


def _plain(values: Sequence[Any]) -> bool:
    return all(v is None or type(v) in (str, int, float, bool) for v in values)


def _build_literal(comp: _Compiler, tp: Any) -> _Node:
    args = typing.get_args(tp)
    values = [a.value if isinstance(a, enum.Enum) else a for a in args]
    if not _plain(values):
        raise _Unsupported("Literal values must be str, int, float, bool or None")
    return _choices(values, list(args))


def _build_union(comp: _Compiler, tp: Any) -> _Node:
    args = typing.get_args(tp)
    options = [comp.node(a) for a in args if a is not _NONE]
    nullable = len(options) < len(args)
    schemas = [o.schema for o in options] + ([{"type": "null"}] if nullable else [])
    schema = schemas[0] if len(schemas) == 1 else {"anyOf": schemas}
    if len(options) == 1:
        only = options[0].convert
        return _Node(schema, lambda v, p, c: None if v is None and nullable else only(v, p, c),
                     options[0].exact + ((_NONE,) if nullable else ()))

    def convert(value: Any, path: Any, ctx: _Ctx) -> Any:
        if value is None and nullable:
            return None
        kind = type(value)
        ordered = [o for o in options if kind in o.exact] + [o for o in options if kind not in o.exact]
        texts = []  # type: List[str]
        for option in ordered:
            trial = ctx.trial()
            got = option.convert(value, path, trial)
            if got is not _BAD:
                return got
            texts.extend(trial.lines)
        return ctx.add(path, ctx.voice.none_fit(texts))
    return _Node(schema, convert)


def _build_sequence(comp: _Compiler, tp: Any) -> _Node:
    origin = _origin(tp)
    args = typing.get_args(tp)
    if origin is tuple and args and not (len(args) == 2 and args[1] is Ellipsis):
        return _fixed_tuple(comp, [a for a in args if a != ()])
    if origin is tuple and tp is not typing.Tuple and getattr(tp, "__args__", None) == ():
        return _fixed_tuple(comp, [])  # ``Tuple[()]`` on 3.11+ (its args are empty, as bare ``Tuple``'s)
    item = comp.node(args[0]) if args else _build_any(comp, Any)
    schema = {"type": "array", "items": item.schema} if args else {"type": "array"}  # type: Dict[str, Any]
    make = _SEQUENCES[origin]
    if make in (set, frozenset):
        schema["uniqueItems"] = True
    convert = item.convert

    def convert_all(value: Any, path: Any, ctx: _Ctx) -> Any:
        if not isinstance(value, (list, tuple)):
            return ctx.add(path, ctx.voice.mismatch("an array", value))
        out = []
        ok = True
        for i, v in enumerate(value):
            got = convert(v, (path, i), ctx)
            if got is _BAD:
                ok = False
            out.append(got)
        if not ok:
            return _BAD
        if make is list:
            return out
        try:
            return make(out)
        except TypeError:  # a set of unhashable values: the list
            return out
    return _Node(schema, convert_all, (list,))


def _fixed_tuple(comp: _Compiler, args: Sequence[Any]) -> _Node:
    nodes = [comp.node(a) for a in args]
    if not nodes:
        return _Node({"type": "array", "maxItems": 0}, _tuple_converter([]), (list,))
    schema = {"type": "array", "prefixItems": [n.schema for n in nodes], "minItems": len(nodes),
              "maxItems": len(nodes)}
    return _Node(schema, _tuple_converter(nodes), (list,))


def _tuple_converter(nodes: Sequence[_Node]) -> Convert:
    def convert(value: Any, path: Any, ctx: _Ctx) -> Any:
        if not isinstance(value, (list, tuple)):
            return ctx.add(path, ctx.voice.mismatch("an array", value))
        if len(value) != len(nodes):
            return ctx.add(path, ctx.voice.length(len(nodes), len(value)))
        out = tuple(n.convert(v, (path, i), ctx) for i, (n, v) in enumerate(zip(nodes, value)))
        return _BAD if any(v is _BAD for v in out) else out
    return convert


def _build_mapping(comp: _Compiler, tp: Any) -> _Node:
    args = typing.get_args(tp)
    if not args:
        return _Node({"type": "object"}, _mapping_converter(None), (dict,))
    if args[0] is not str:
        raise _Unsupported("mapping keys must be str (JSON object keys)")
    value = comp.node(args[1])
    return _Node({"type": "object", "additionalProperties": value.schema}, _mapping_converter(value), (dict,))


def _mapping_converter(node: Optional[_Node]) -> Convert:
    def convert(value: Any, path: Any, ctx: _Ctx) -> Any:
        if not isinstance(value, dict):
            return ctx.add(path, ctx.voice.mismatch("an object", value))
        if node is None:
            return dict(value)
        out = {k: node.convert(v, (path, (k,)), ctx) for k, v in value.items()}
        return _BAD if any(v is _BAD for v in out.values()) else out
    return convert


def _build_any(comp: _Compiler, tp: Any) -> _Node:
    return _Node({}, lambda v, p, c: v)


def _build_qualifier(comp: _Compiler, tp: Any) -> _Node:
    """``Required[X]``, ``NotRequired[X]``, ``ReadOnly[X]``: X (the TypedDict read the key's part)."""
    return comp.node(typing.get_args(tp)[0])


def _build_forward(comp: _Compiler, tp: Any) -> _Node:
    raise _Unsupported("the forward reference {!r} is not resolved (define it at module level)".format(
        getattr(tp, "__forward_arg__", tp)))


# -- Annotated: descriptions and constraints from the metadata --------------------------------------------

#: metadata attribute -> (JSON Schema keyword per value kind: number, string, array, object)
_CONSTRAINTS = {
    "ge": ("minimum",) * 4, "gt": ("exclusiveMinimum",) * 4, "le": ("maximum",) * 4,
    "lt": ("exclusiveMaximum",) * 4, "multiple_of": ("multipleOf",) * 4,
    "min_length": ("minLength", "minLength", "minItems", "minProperties"),
    "max_length": ("maxLength", "maxLength", "maxItems", "maxProperties"),
    "pattern": ("pattern",) * 4, "regex": ("pattern",) * 4,
}


def _read_metadata(items: Iterable[Any], out: Dict[str, Any]) -> None:
    for item in items:
        if isinstance(item, str):
            out.setdefault("description", item)
            continue
        description = getattr(item, "description", None)
        if isinstance(description, str) and description:
            out.setdefault("description", description)
        for attribute in _CONSTRAINTS:
            found = getattr(item, attribute, None)
            if found is not None and not callable(found):
                out.setdefault(attribute, getattr(found, "pattern", found))
        inner = getattr(item, "metadata", None)
        if isinstance(inner, (list, tuple)):  # pydantic v2's FieldInfo keeps its constraints there
            _read_metadata(inner, out)


def _build_annotated(comp: _Compiler, tp: Any) -> _Node:
    inner = comp.node(tp.__origin__)
    found = {}  # type: Dict[str, Any]
    _read_metadata(tp.__metadata__, found)
    if not found:
        return inner
    schema = dict(inner.schema)
    if "description" in found:
        schema["description"] = found.pop("description")
    slot = {"string": 1, "array": 2, "object": 3}.get(schema.get("type"), 0)  # type: ignore[arg-type]
    keywords = {_CONSTRAINTS[k][slot]: v for k, v in found.items()}
    schema.update(keywords)
    checks = [_KEYWORDS[k](None, v, keywords, k) for k, v in keywords.items()]
    convert = inner.convert

    def checked(value: Any, path: Any, ctx: _Ctx) -> Any:
        out = convert(value, path, ctx)
        if out is _BAD:
            return _BAD
        for check in checks:
            if not check(value, path, ctx):
                return _BAD
        return out
    return _Node(schema, checked, inner.exact)


def _is_annotated(tp: Any) -> bool:
    return hasattr(tp, "__metadata__") and hasattr(tp, "__origin__")


_TABLE = [
    (_is_annotated, _build_annotated),
    (lambda tp: typing.get_origin(tp) in _forms(_QUALIFIER_NAMES), _build_qualifier),
    (lambda tp: tp is Any, _build_any),
    (lambda tp: hasattr(tp, "__supertype__"), lambda comp, tp: comp.node(tp.__supertype__)),  # NewType
    (lambda tp: tp is None, lambda comp, tp: _PRIMITIVES[_NONE]()),
    (lambda tp: isinstance(tp, type) and tp in _PRIMITIVES, lambda comp, tp: _PRIMITIVES[tp]()),
    (lambda tp: isinstance(tp, (dict, bool)), lambda comp, tp: _json_schema_node(tp)),
    (_is_model, _build_model),
    (lambda tp: isinstance(tp, type) and issubclass(tp, enum.Enum), _build_enum),
    (lambda tp: isinstance(tp, type) and dataclasses.is_dataclass(tp), _build_dataclass),
    (_is_typeddict, _build_typeddict),
    (_is_namedtuple, _build_namedtuple),
    (lambda tp: typing.get_origin(tp) in _forms(("Literal",)), _build_literal),
    (lambda tp: typing.get_origin(tp) is typing.Union or (_UNION_TYPE is not None and isinstance(tp, _UNION_TYPE)),
     _build_union),
    (lambda tp: _hashable(_origin(tp)) and _origin(tp) in _SEQUENCES, _build_sequence),
    (lambda tp: _origin(tp) in _MAPPINGS, _build_mapping),
    (lambda tp: isinstance(tp, (str, typing.ForwardRef)), _build_forward),
]  # type: List[Tuple[Callable[[Any], Any], Callable[[_Compiler, Any], _Node]]]


def _hashable(value: Any) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


# -- a JSON Schema dict as the type: the subset above, checked keyword by keyword ---------------------------

_TYPE_TESTS = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: (isinstance(v, int) and not isinstance(v, bool)) or (isinstance(v, float) and v.is_integer()),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
}  # type: Dict[str, Callable[[Any], bool]]
_ARTICLE = {"string": "a string", "integer": "an integer", "number": "a number", "boolean": "a boolean",
            "null": "null", "array": "an array", "object": "an object"}
_ANNOTATIONS = frozenset(["title", "description", "default", "examples", "example", "format", "$schema", "$id",
                          "$comment", "$anchor", "deprecated", "readOnly", "writeOnly", "contentMediaType",
                          "contentEncoding", "propertyOrdering", "$defs", "definitions", "discriminator"])
#: the annotations JSON Schema says are strings (one that is not is refused: a wire would send it as it is)
_STRING_ANNOTATIONS = frozenset(["title", "description", "format"])

Check = Callable[[Any, Any, _Ctx], bool]


def _json_equal(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_json_equal(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


class _JsonCompiler(object):
    def __init__(self, root: Any) -> None:
        self.root = root
        self.defs = {}  # type: Dict[str, Any]
        if isinstance(root, Mapping):
            for key in ("definitions", "$defs"):
                if isinstance(root.get(key), Mapping):
                    self.defs.update(root[key])
        self.nodes = {}  # type: Dict[int, _Node]

    def node(self, schema: Any, where: str) -> _Node:
        if schema is True or schema == {}:
            return _Node({}, lambda v, p, c: v)
        if schema is False:
            return _Node(schema, lambda v, p, c: c.add(p, c.voice.rule("nothing (false schema)", v)))
        if not isinstance(schema, Mapping):
            raise _Unsupported("{}: a schema must be an object or a boolean, got {!r}".format(where, schema))
        if id(schema) in self.nodes:
            return self.nodes[id(schema)]
        holder = _Node(dict(schema), lambda v, p, c: v)
        self.nodes[id(schema)] = holder
        checks = []  # type: List[Check]
        for key in _ordered(schema):
            if key in _ANNOTATIONS:
                if key in _STRING_ANNOTATIONS and not isinstance(schema[key], str):  # (every API answers 400)
                    raise _Unsupported("{}.{}: must be a string, got {}".format(where, key, _jshort(schema[key])))
                continue
            if key not in _KEYWORDS:
                raise _Unsupported("{}: the schema keyword {!r} is outside the subset agenthub checks".format(
                    where, key))
            checks.append(_KEYWORDS[key](self, schema[key], schema, "{}.{}".format(where, key)))
        holder.convert = _all_checks(checks, "type" in schema)
        return holder

    def resolve(self, ref: Any, where: str) -> Any:
        if ref == "#":
            return self.root
        for prefix in ("#/$defs/", "#/definitions/"):
            if isinstance(ref, str) and ref.startswith(prefix) and ref[len(prefix):] in self.defs:
                return self.defs[ref[len(prefix):]]
        raise _Unsupported("{}: $ref {!r} does not name a schema under $defs".format(where, ref))


def _ordered(schema: Mapping[str, Any]) -> List[str]:
    """``type`` first (when it fails, nothing else is said), then what is said of the whole value, as Python's
    types say it: missing and unknown fields before the fields' own problems."""
    first = [k for k in ("type", "nullable", "$ref", "required", "additionalProperties") if k in schema]
    return first + [k for k in schema if k not in first]


def _all_checks(checks: Sequence[Check], typed: bool) -> Convert:
    """Every check runs (each problem is reported), but a value of the wrong type stops at the type."""
    head, rest = (checks[0], checks[1:]) if typed else (None, checks)

    def convert(value: Any, path: Any, ctx: _Ctx) -> Any:
        if head is not None and not head(value, path, ctx):
            return _BAD
        ok = True
        for check in rest:
            if not check(value, path, ctx):
                ok = False
        return value if ok else _BAD
    return convert


def _shape_of(spec: Any, where: str, kind: Any, words: str) -> None:
    """A keyword's value must be of ``kind`` (the schema's own structure: a ConfigError when it is not)."""
    if not isinstance(spec, kind):
        raise _Unsupported("{}: must be {}, got {}".format(where, words, _jshort(spec)))


def _kw_type(comp: Any, spec: Any, schema: Mapping[str, Any], where: str) -> Check:
    _shape_of(spec, where, (str, list), "a type name or a list of them")
    names = list(spec) if isinstance(spec, list) else [spec]
    if schema.get("nullable") is True and "null" not in names:
        names.append("null")
    bad = [n for n in names if not isinstance(n, str) or n not in _TYPE_TESTS]
    if bad:
        raise _Unsupported("{}: unknown type {!r}".format(where, bad[0]))
    tests = [_TYPE_TESTS[n] for n in names]
    expected = " or ".join(_ARTICLE[n] for n in names)

    def check(value: Any, path: Any, ctx: _Ctx) -> bool:
        return any(t(value) for t in tests) or ctx.add(path, ctx.voice.mismatch(expected, value)) is not _BAD
    return check


def _kw_nullable(comp: Any, spec: Any, schema: Mapping[str, Any], where: str) -> Check:
    return lambda v, p, c: True  # (read by ``type``)


def _kw_enum(comp: Any, spec: Any, schema: Mapping[str, Any], where: str) -> Check:
    if where.endswith(".enum"):
        _shape_of(spec, where, list, "an array")
    options = list(spec) if isinstance(spec, list) else [spec]

    def check(value: Any, path: Any, ctx: _Ctx) -> bool:
        if value is None and schema.get("nullable") is True:
            return True
        return any(_json_equal(value, o) for o in options) or \
            ctx.add(path, ctx.voice.one_of(options, value)) is not _BAD
    return check


def _kw_const(comp: Any, spec: Any, schema: Mapping[str, Any], where: str) -> Check:
    return _kw_enum(comp, [spec], schema, where)


def _kw_ref(comp: Any, spec: Any, schema: Mapping[str, Any], where: str) -> Check:
    node = comp.node(comp.resolve(spec, where), spec)  # (a recursive $ref gets the node being built)
    return lambda v, p, c: node.convert(v, p, c) is not _BAD


def _kw_properties(comp: Any, spec: Any, schema: Mapping[str, Any], where: str) -> Check:
    _shape_of(spec, where, Mapping, "an object of schemas")
    nodes = {k: comp.node(s, "{}.{}".format(where, k)) for k, s in spec.items()}

    def check(value: Any, path: Any, ctx: _Ctx) -> bool:
        if not isinstance(value, dict):
            return True
        ok = True
        for key, node in nodes.items():
            if key in value and node.convert(value[key], (path, key), ctx) is _BAD:
                ok = False
        return ok
    return check


def _kw_additional(comp: Any, spec: Any, schema: Mapping[str, Any], where: str) -> Check:
    props = schema.get("properties")
    known = set(props) if isinstance(props, Mapping) else set()  # (not an object: its own keyword refuses it)
    node = None if spec is False else comp.node(spec, where)

    def check(value: Any, path: Any, ctx: _Ctx) -> bool:
        if not isinstance(value, dict):
            return True
        extra = [k for k in value if k not in known]
        if not extra:
            return True
        if node is None:
            return ctx.add(path, ctx.voice.unknown(extra)) is not _BAD
        return all([node.convert(value[k], (path, (k,)), ctx) is not _BAD for k in extra])
    return check


def _kw_required(comp: Any, spec: Any, schema: Mapping[str, Any], where: str) -> Check:
    _shape_of(spec, where, list, "an array of names")
    if not all(isinstance(name, str) for name in spec):
        raise _Unsupported("{}: must be an array of names, got {}".format(where, _jshort(spec)))
    names = list(spec)

    def check(value: Any, path: Any, ctx: _Ctx) -> bool:
        if not isinstance(value, dict):
            return True
        missing = [n for n in names if n not in value]
        return not missing or ctx.add(path, ctx.voice.missing(missing)) is not _BAD
    return check


def _kw_items(comp: Any, spec: Any, schema: Mapping[str, Any], where: str) -> Check:
    if isinstance(spec, list):  # draft 4 .. 2019-09's tuple form
        return _kw_prefix(comp, spec, schema, where)
    node = comp.node(spec, where)
    prefix = schema.get("prefixItems")
    skip = len(prefix) if isinstance(prefix, list) else 0  # (not a list: its own keyword refuses it)

    def check(value: Any, path: Any, ctx: _Ctx) -> bool:
        if not isinstance(value, list):
            return True
        return all([node.convert(v, (path, i), ctx) is not _BAD for i, v in enumerate(value) if i >= skip])
    return check


def _kw_prefix(comp: Any, spec: Any, schema: Mapping[str, Any], where: str) -> Check:
    _shape_of(spec, where, list, "an array of schemas")
    nodes = [comp.node(s, "{}[{}]".format(where, i)) for i, s in enumerate(spec)]

    def check(value: Any, path: Any, ctx: _Ctx) -> bool:
        if not isinstance(value, list):
            return True
        return all([n.convert(v, (path, i), ctx) is not _BAD for i, (n, v) in enumerate(zip(nodes, value))])
    return check


def _kw_any_of(comp: Any, spec: Any, schema: Mapping[str, Any], where: str) -> Check:
    _shape_of(spec, where, list, "an array of schemas")
    if not spec:
        raise _Unsupported("{}: must list at least one schema".format(where))
    nodes = [comp.node(s, "{}[{}]".format(where, i)) for i, s in enumerate(spec)]
    one = where.endswith("oneOf")

    def check(value: Any, path: Any, ctx: _Ctx) -> bool:
        texts = []  # type: List[str]
        fits = 0
        for node in nodes:
            trial = ctx.trial()
            if node.convert(value, path, trial) is _BAD:
                texts.extend(trial.lines)
            else:
                fits += 1
                if not one:
                    return True
        if fits == 1:
            return True
        if fits > 1:
            return ctx.add(path, ctx.voice.rule("exactly one of the oneOf schemas to fit ({} do)".format(fits),
                                                value)) is not _BAD
        return ctx.add(path, ctx.voice.none_fit(texts)) is not _BAD
    return check


def _kw_all_of(comp: Any, spec: Any, schema: Mapping[str, Any], where: str) -> Check:
    _shape_of(spec, where, list, "an array of schemas")
    if not spec:
        raise _Unsupported("{}: must list at least one schema".format(where))
    nodes = [comp.node(s, "{}[{}]".format(where, i)) for i, s in enumerate(spec)]
    return lambda v, p, c: all([n.convert(v, p, c) is not _BAD for n in nodes])


def _kw_not(comp: Any, spec: Any, schema: Mapping[str, Any], where: str) -> Check:
    node = comp.node(spec, where)

    def check(value: Any, path: Any, ctx: _Ctx) -> bool:
        if node.convert(value, path, ctx.trial()) is _BAD:
            return True
        return ctx.add(path, ctx.voice.rule("a value that does not fit {}".format(_jshort(spec)), value)) \
            is not _BAD
    return check


def _bound(test: Callable[[Any, Any], bool], words: str, guard: Callable[[Any], bool],
           measure: Callable[[Any], Any] = lambda v: v) -> Callable[..., Check]:
    def keyword(comp: Any, spec: Any, schema: Mapping[str, Any], where: str) -> Check:
        if isinstance(spec, bool) or not isinstance(spec, (int, float)) or \
                isinstance(spec, float) and not math.isfinite(spec):  # (an int is finite: 10**400 has no float)
            raise _Unsupported("{}: must be a number, got {!r}".format(where, spec))
        if test is _multiple and spec <= 0:
            raise _Unsupported("{}: must be greater than 0, got {!r}".format(where, spec))
        rule = words.format(spec)

        def check(value: Any, path: Any, ctx: _Ctx) -> bool:
            if not guard(value) or test(measure(value), spec):
                return True
            return ctx.add(path, ctx.voice.rule(rule, value)) is not _BAD
        return check
    return keyword


def _multiple(value: Any, spec: Any) -> bool:
    """Exact on the decimal numbers the JSON wrote (a float is its shortest repr, the text that reads back as
    it): 0.3 is a multiple of 0.1 (floats say 2.9999999999999996), 1e20 is not one of 7 (floats past 2**53
    are all whole, so any float quotient is)."""
    if isinstance(spec, float) or isinstance(value, float):
        if any(isinstance(n, float) and not math.isfinite(n) for n in (value, spec)):
            return False
        return (_decimal(value) / _decimal(spec)).denominator == 1
    return value % spec == 0


def _decimal(number: Any) -> fractions.Fraction:
    return fractions.Fraction(decimal.Decimal(repr(number)) if isinstance(number, float) else number)


def _kw_pattern(comp: Any, spec: Any, schema: Mapping[str, Any], where: str) -> Check:
    try:
        pattern = re.compile(spec)
    except (re.error, TypeError) as exc:
        raise _Unsupported("{}: the pattern {!r} does not compile ({})".format(where, spec, exc)) from None
    rule = "a string matching {}".format(_jshort(spec))

    def check(value: Any, path: Any, ctx: _Ctx) -> bool:
        if not isinstance(value, str) or pattern.search(value):
            return True
        return ctx.add(path, ctx.voice.rule(rule, value)) is not _BAD
    return check


def _kw_unique(comp: Any, spec: Any, schema: Mapping[str, Any], where: str) -> Check:
    def check(value: Any, path: Any, ctx: _Ctx) -> bool:
        if spec is not True or not isinstance(value, list):
            return True
        for i, a in enumerate(value):
            if any(_json_equal(a, b) for b in value[i + 1:]):
                return ctx.add(path, ctx.voice.rule("items that are all different", value)) is not _BAD
        return True
    return check


_is_str = lambda v: isinstance(v, str)  # noqa: E731
_is_list = lambda v: isinstance(v, list)  # noqa: E731
_is_dict = lambda v: isinstance(v, dict)  # noqa: E731
_ge, _le = (lambda v, s: v >= s), (lambda v, s: v <= s)

_KEYWORDS = {
    "type": _kw_type, "nullable": _kw_nullable, "enum": _kw_enum, "const": _kw_const, "$ref": _kw_ref,
    "properties": _kw_properties, "additionalProperties": _kw_additional, "required": _kw_required,
    "items": _kw_items, "prefixItems": _kw_prefix, "anyOf": _kw_any_of, "oneOf": _kw_any_of,
    "allOf": _kw_all_of, "not": _kw_not, "pattern": _kw_pattern, "uniqueItems": _kw_unique,
    "minimum": _bound(_ge, ">= {}", _is_number), "maximum": _bound(_le, "<= {}", _is_number),
    "exclusiveMinimum": _bound(lambda v, s: v > s, "> {}", _is_number),
    "exclusiveMaximum": _bound(lambda v, s: v < s, "< {}", _is_number),
    "multipleOf": _bound(_multiple, "a multiple of {}", _is_number),
    "minLength": _bound(_ge, "at least {} characters", _is_str, len),
    "maxLength": _bound(_le, "at most {} characters", _is_str, len),
    "minItems": _bound(_ge, "at least {} items", _is_list, len),
    "maxItems": _bound(_le, "at most {} items", _is_list, len),
    "minProperties": _bound(_ge, "at least {} fields", _is_dict, len),
    "maxProperties": _bound(_le, "at most {} fields", _is_dict, len),
}  # type: Dict[str, Callable[[Any, Any, Mapping[str, Any], str], Check]]


def _json_schema_node(schema: Any) -> _Node:
    node = _JsonCompiler(schema).node(schema, "schema")
    return _Node(_fresh(schema), node.convert)


# -- the public face ------------------------------------------------------------------------------------------

class Compiled(object):
    """A type read once: ``.schema`` and ``.convert(value)`` (see the module's docstring)."""

    def __init__(self, tp: Any, schema: Dict[str, Any], node: _Node) -> None:
        self.type = tp
        #: the JSON Schema (``$defs``/``$ref`` where nested named types are and ``refs`` allowed them)
        self.schema = schema
        self._convert = node.convert

    def convert(self, value: Any, where: str = "", style: str = "typed") -> Any:
        """``value`` (JSON) as the type, or a ConversionError listing every problem.  ``where`` names the
        root in the paths (``""``: none); ``style="tool"`` words them as @tool does for a model's arguments
        (``n must be an integer, got a string``)."""
        if style not in _VOICES:
            raise ConfigError("style must be 'typed' or 'tool', got {!r}".format(style))
        ctx = _Ctx(_VOICES[style], where)
        try:
            out = self._convert(value, None, ctx)
        except RecursionError:  # a value nested deeper than Python's stack (a recursive type's answer)
            ctx = _Ctx(_VOICES[style], where)
            ctx.add(None, "nested too deeply to check")
            out = _BAD
        if out is _BAD:
            raise ConversionError(ctx.problems, ctx.lines)
        return out

    def inline(self) -> Dict[str, Any]:
        """``.schema`` with every ``$ref`` replaced by what it names (a recursive type is a ConfigError)."""
        return inline_refs(self.schema, _name(self.type))

    def __repr__(self) -> str:
        return "Compiled({})".format(_name(self.type))


def compile(tp: Any, refs: bool = True) -> Compiled:  # noqa: A001 - the verb is the point
    """Read a type (or a JSON Schema dict) once: its schema and its converter.  ``refs=False``: every schema
    inline (a recursive type is then a ConfigError).  A type with no schema is a ConfigError naming the field."""
    comp = _Compiler(refs)
    try:
        node = comp.node(tp)
        schema = node.schema
        if refs and _hashable(tp) and tp in comp.names and tp not in comp.recursive:  # the root itself is inline
            schema = comp.defs.pop(comp.names[tp])
        if comp.defs:
            schema = dict(schema, **{"$defs": comp.defs})
        return Compiled(tp, _fresh(schema), node)
    except _Unsupported as exc:
        raise ConfigError("{}: {}".format(exc.field, exc.reason) if exc.field else exc.reason) from None
    except RecursionError:  # a schema dict or a type nested deeper than Python's stack: the caller's input
        label = tp.__name__ if isinstance(tp, type) else "the schema" if isinstance(tp, Mapping) else \
            getattr(tp, "_name", None) or "the type"
        raise ConfigError("{} nests too deeply to compile (deeper than Python's stack)".format(label)) from None


def _fresh(value: Any) -> Any:
    """A copy in which no dict or list appears twice (a type used at two places gives two equal schemas)."""
    if isinstance(value, Mapping):
        return {k: _fresh(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_fresh(v) for v in value]
    return value


def inline_refs(schema: Mapping[str, Any], name: str = "schema") -> Dict[str, Any]:
    """A schema with each local ``$ref`` (``#/$defs/X``, ``#/definitions/X``) replaced by its target and
    ``$defs`` dropped; siblings of a ``$ref`` are kept.  A recursive reference is a ConfigError."""
    defs = {}  # type: Dict[str, Any]
    for key in ("definitions", "$defs"):
        if isinstance(schema.get(key), Mapping):
            defs.update(schema[key])
    return _inline(schema, defs, (), name)


def _inline(value: Any, defs: Mapping[str, Any], seen: Tuple[str, ...], name: str, rename: bool = False) -> Any:
    """``rename``: only rewrite ``#/definitions/X`` to ``#/$defs/X``, inlining nothing."""
    if isinstance(value, list):
        return [_inline(v, defs, seen, name, rename) for v in value]
    if not isinstance(value, Mapping):
        return value
    out = {k: _inline(v, defs, seen, name, rename) for k, v in value.items()
           if k not in ("$defs", "definitions", "$ref") or rename and k != "$ref"}
    ref = value.get("$ref")
    if ref is None:
        return out
    target = ref.rsplit("/", 1)[-1] if isinstance(ref, str) else ""
    if rename:
        out["$ref"] = "#/$defs/{}".format(target)
        return out
    if target not in defs:
        raise ConfigError("{}: $ref {!r} does not name a schema under $defs".format(name, ref))
    if target in seen:
        raise ConfigError("{}: {} refers to itself: a recursive type needs $ref, which this schema may not "
                          "use".format(name, target))
    resolved = _inline(defs[target], defs, seen + (target,), name)
    resolved.update(out)
    return resolved


def _finite(value: float) -> float:
    if not math.isfinite(value):
        raise ValueError("{} is not JSON".format(value))
    return value


def _model_dump(value: Any) -> Any:
    dump = getattr(value, "model_dump", None) or getattr(value, "dict")
    return to_json(dump())


def _mapping_json(value: Mapping[Any, Any]) -> Any:
    if not all(isinstance(k, str) for k in value):
        raise ValueError("a mapping with keys other than str is not JSON")
    return {k: to_json(v) for k, v in value.items()}


#: (test, conversion) in order: the first test that holds converts the value
_TO_JSON = [
    (lambda v: isinstance(v, enum.Enum), lambda v: to_json(v.value)),
    (lambda v: v is None or isinstance(v, (str, bool, int)), lambda v: v),
    (lambda v: isinstance(v, float), _finite),
    (lambda v: dataclasses.is_dataclass(v) and not isinstance(v, type),
     lambda v: {f.name: to_json(getattr(v, f.name)) for f in dataclasses.fields(v)}),
    (lambda v: isinstance(v, tuple) and hasattr(v, "_asdict"), lambda v: to_json(v._asdict())),
    (lambda v: isinstance(v, (list, tuple)), lambda v: [to_json(x) for x in v]),
    (lambda v: isinstance(v, (set, frozenset)), lambda v: sorted((to_json(x) for x in v), key=repr)),
    (lambda v: isinstance(v, Mapping), _mapping_json),
    (lambda v: _is_model(type(v)), _model_dump),
]  # type: List[Tuple[Callable[[Any], bool], Callable[[Any], Any]]]


def to_json(value: Any) -> Any:
    """A Python value (a default, say) as JSON: Enum members as their values, dataclasses, NamedTuples and
    models as objects, tuples and sets as arrays; a ValueError for anything else (and for NaN or infinity)."""
    for test, convert in _TO_JSON:
        if test(value):
            return convert(value)
    raise ValueError("{} is not JSON".format(type(value).__name__))


def type_hints(obj: Any) -> Dict[str, Any]:
    """``typing.get_type_hints`` with ``Annotated`` kept (3.9+); an unresolvable hint is a ConfigError.  A function's
    hints are the same on every Python: up to 3.10 ``get_type_hints`` made the hint of a parameter whose default is
    None Optional (``x: int = None``; 3.11 no longer does), which wrapped an ``Annotated[Optional[str], ...]`` in a
    second union (the tools make such a parameter take null themselves, ``Tool._parameter``)."""
    try:
        read = _WithoutDefaults(obj) if _IMPLICIT_OPTIONAL and getattr(obj, "__code__", None) is not None else obj
        if sys.version_info >= (3, 9):
            return typing.get_type_hints(read, include_extras=True)
        return typing.get_type_hints(read)  # pragma: no cover - 3.8
    except Exception as exc:  # a forward reference that does not resolve, say
        raise ConfigError("the type hints of {} cannot be read ({}: {})".format(
            _name(obj), type(exc).__name__, exc)) from None


#: typing.get_type_hints makes a None default's hint Optional (Python 3.10 and before)
_IMPLICIT_OPTIONAL = sys.version_info < (3, 11)


class _WithoutDefaults(object):
    """What ``typing.get_type_hints`` reads of a function, without its defaults (which it reads from ``__code__``,
    ``__defaults__`` and ``__kwdefaults__``: this has none): its annotations, and the globals its names resolve in
    (the innermost ``__wrapped__`` function's, as get_type_hints takes them)."""

    def __init__(self, fn: Any) -> None:
        self.__annotations__ = getattr(fn, "__annotations__", None)
        inner = fn
        while hasattr(inner, "__wrapped__"):
            inner = inner.__wrapped__
        self.__globals__ = getattr(inner, "__globals__", {})
