"""Tools from plain Python functions: ``@tool``.

The JSON Schema of a tool's parameters is read from the function's type hints and its description from
the docstring (the summary; per-parameter text in Google, NumPy or reST style, read by one table of
section styles).  The decorated function stays callable as it was; ``.schema`` is a plain ToolSchema, so
a tool can also go into ``config["tools"]``.

Each parameter's hint is compiled once by ``agenthub.typeschema`` (one dispatch table gives its schema and
its converter; the hints it understands are listed there: primitives, ``Optional``/``Union`` and ``X | None``,
sequences, ``Dict[str, X]``, ``Literal``, ``Enum``, ``TypedDict``, dataclasses, ``NamedTuple``,
``Annotated`` with a description and ``Field(ge=..., le=...)``-like bounds, pydantic models, ``Any`` (and
no hint: any JSON value)).  ``*args``/``**kwargs``, a positional-only parameter or a hint with no schema is a
ConfigError naming the parameter; an ``async def`` function is a ConfigError naming the tool.  A parameter with a default is not required, and its schema carries the
default (as JSON; a default JSON cannot hold is left out, and so is one that may be a credential: a str the
secret scrubber would hide); a parameter a partial binds by keyword is fixed (not in the schema, not the model's
to set); a None default makes its hint Optional.

Arguments a model sends are checked against the same compiled hints before the function is called
(``convert``: every problem, in words the model can act on) and converted on the way in: ints stay ints, a
float that is a whole number becomes an int where an int is asked for, an Enum parameter gets its member, a
dataclass parameter its instance, a Tuple a tuple.
"""

import functools
import inspect
import re
from collections.abc import Mapping as _Mapping  # (isinstance through typing.Mapping costs a detour)
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple, TypeVar, overload

from .._redact import scrub_free_text
from ..errors import ConfigError
from ..typeschema import Compiled, ConversionError, compile as compile_type, to_json, type_hints
from ..types import ToolSchema

__all__ = ["Tool", "tool", "parse_docstring"]

F = TypeVar("F", bound=Callable[..., Any])


def _hinted(fn: Any) -> Any:
    """Where a callable's hints are: a partial's function, a callable object's ``__call__``."""
    if isinstance(fn, functools.partial):
        return _hinted(fn.func)
    if inspect.isfunction(fn) or inspect.ismethod(fn) or inspect.isbuiltin(fn) or isinstance(fn, type):
        return fn
    return getattr(fn, "__call__", fn)


# -- docstrings: one table of section styles ---------------------------------------------------------------
#
# Each style is a row: ``opens(lines, i)`` says whether a parameter section starts at line ``i`` and returns
# (the first line of its body, the indent at or below which it ends, the indent its items sit at or None for
# "the first body line's", an item pattern, whether a title underlined with dashes ends it); one reader walks
# any section.  reST's ``:param x:`` fields are single-item sections of their own.

_GOOGLE = re.compile(r"^(Args|Arguments|Parameters|Params|Keyword Args|Keyword Arguments|Other Parameters):\s*$")
_GOOGLE_ITEM = re.compile(r"^\*{0,2}(\w+)\s*(?:\(([^)]*)\))?\s*:\s*(.*)$")
_NUMPY_ITEM = re.compile(r"^\*{0,2}(\w+)\s*(?::.*)?$()()")
_REST = re.compile(r"^:(?:param|parameter|arg|argument|key|keyword)\s+(?:[^:]*\s)?\*{0,2}(\w+)\s*:\s*(.*)$")
_REST_ITEM = re.compile(r"^:(?:param|parameter|arg|argument|key|keyword)\s+(?:[^:]*\s)?\*{0,2}(\w+)\s*:\s*()(.*)$")
_SECTION_END = re.compile(r"^(Returns|Return|Yields|Raises|Examples?|Notes?|See Also|References|Warnings?|"
                          r"Attributes|Todo)\s*:?\s*$")
_NUMPY_TITLES = ("Parameters", "Other Parameters", "Keyword Arguments")

Section = Tuple[int, int, Optional[int], Any, bool]
#: a section's end indent meaning "ends at the next section title" (not at a line as shallow as its title)
_TITLED = -2


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _underlined(lines: List[str], i: int) -> bool:
    return i + 1 < len(lines) and set(lines[i + 1].strip()) == {"-"}


def _opens_rest(lines: List[str], i: int) -> Optional[Section]:
    if not _REST.match(lines[i].strip()):
        return None
    return i, -1, _indent(lines[i]), _REST_ITEM, False


def _opens_google(lines: List[str], i: int) -> Optional[Section]:
    if not _GOOGLE.match(lines[i].strip()):
        return None
    end = _indent(lines[i])
    body = next((line for line in lines[i + 1:] if line.strip()), None)
    if i == 0 and body is not None and _indent(body) <= end:
        # the title on the quotes' line ("""Args:): cleandoc dedents its items to the title's level, so
        # indentation cannot end the section: the next title does
        end = _TITLED
    return i + 1, end, None, _GOOGLE_ITEM, False


def _opens_numpy(lines: List[str], i: int) -> Optional[Section]:
    if lines[i].strip() not in _NUMPY_TITLES or not _underlined(lines, i):
        return None
    return i + 2, _indent(lines[i]), _indent(lines[i]), _NUMPY_ITEM, True


_STYLES = (_opens_rest, _opens_google, _opens_numpy)


def _read_section(lines: List[str], section: Section, params: Dict[str, str]) -> int:
    """Read one section's items into ``params``; the index of the line after it."""
    i, end_indent, item_indent, item, titled = section
    rest = item is _REST_ITEM
    name, text = None, []  # type: Optional[str], List[str]
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if _section_ends(lines, i, end_indent, titled, rest and name is not None):
            break
        i += 1
        if not stripped:
            continue
        if item_indent is None:
            item_indent = _indent(line)
        match = item.match(stripped) if _indent(line) == item_indent and not (rest and name) else None
        if match:
            if name:
                params[name] = " ".join(text)
            name, text = match.group(1), [match.group(3).strip()] if match.group(3).strip() else []
        elif name:
            text.append(stripped)
    if name:
        params[name] = " ".join(text)
    return i


def _section_ends(lines: List[str], i: int, end_indent: int, titled: bool, rest_started: bool) -> bool:
    stripped = lines[i].strip()
    if rest_started:  # a reST field runs to a blank line or the next field
        return not stripped or stripped.startswith(":")
    if end_indent == _TITLED:
        return bool(_GOOGLE.match(stripped) or _SECTION_END.match(stripped))
    if not stripped or _indent(lines[i]) > end_indent:
        return False
    return not titled or _underlined(lines, i)


def parse_docstring(doc: Optional[str]) -> Tuple[str, Dict[str, str]]:
    """(summary, {parameter: text}) of a docstring in Google, NumPy or reST style."""
    if not doc:
        return "", {}
    lines = inspect.cleandoc(doc).splitlines()
    summary = []  # type: List[str]
    for line in lines:
        stripped = line.strip()
        if not stripped or stripped.startswith(":") or _GOOGLE.match(stripped) or _SECTION_END.match(stripped) \
                or stripped in ("Parameters", "Args"):
            break
        summary.append(stripped)
    params = {}  # type: Dict[str, str]
    i = 0
    while i < len(lines):
        section = next((found for found in (opens(lines, i) for opens in _STYLES) if found), None)
        i = _read_section(lines, section, params) if section else i + 1
    return " ".join(summary), params


def _check_options(fn: Any, name: Optional[str], timeout: Optional[float]) -> None:
    if not callable(fn):
        raise ConfigError("tool() takes a function (got {})".format(type(fn).__name__))
    if name is not None and (not isinstance(name, str) or not name):
        raise ConfigError("tool name must be a non-empty str")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float))
                                or not timeout > 0):
        raise ConfigError("tool timeout must be a number of seconds > 0 (or None)")


def _credential(value: Any) -> bool:
    """Is ``value`` a str holding a credential (an environment secret's value, a URL's password, a token query
    parameter): a default never shown to the model."""
    return isinstance(value, str) and bool(value) and scrub_free_text(value) != value


def _takes_none(compiled: Compiled) -> bool:
    try:
        compiled.convert(None, where="", style="tool")
    except Exception:  # (a ConversionError: None is no value of it)
        return False
    return True


def _plural(names: List[str]) -> str:
    return "s" if len(names) > 1 else ""


# -- the tool ----------------------------------------------------------------------------------------------------

class Tool(object):
    """A Python function the model may call: ``.schema`` (a ToolSchema), and the function itself.

    Calling the tool calls the function as it was.  ``run(arguments)`` is what the runner does with a model's
    arguments: ``check`` them, then call the function with the converted values.
    """

    def __init__(self, fn: Callable[..., Any], name: Optional[str] = None, description: Optional[str] = None,
                 requires_approval: bool = False, timeout: Optional[float] = None, idempotent: bool = True) -> None:
        _check_options(fn, name, timeout)
        if not isinstance(idempotent, bool):
            raise ConfigError("idempotent must be True or False (got {!r})".format(idempotent))
        #: whether running it twice does no harm: a journaled run (docs/tools.md, "Runs that survive a crash")
        #: runs a call interrupted by a crash again when True, and hands it back as pending when False
        self.idempotent = idempotent
        self.fn = fn
        self.name = name or getattr(fn, "__name__", "")  # type: str
        if not self.name or self.name == "<lambda>":
            raise ConfigError("{} has no name: tool(fn, name=...)".format(  # (not its repr: a partial's shows the
                "a lambda" if self.name == "<lambda>" else "a " + type(fn).__name__))  # values it binds, a key too)
        hinted = _hinted(fn)
        if inspect.iscoroutinefunction(hinted) or inspect.isasyncgenfunction(hinted):
            raise ConfigError("tool {!r} is an async function: a tool runs in a thread of its own, its return value "
                              "the result; give a plain function (asyncio.run(...) inside it if it must "
                              "await)".format(self.name))
        if inspect.isgeneratorfunction(hinted):
            raise ConfigError("tool {!r} is a generator function: its body would not run when called (the return value "
                              "is the result); return a list of what it yields instead".format(self.name))
        self.requires_approval = bool(requires_approval)
        self.timeout = timeout  # type: Optional[float]
        summary, texts = parse_docstring(getattr(fn.func if isinstance(fn, functools.partial) else fn, "__doc__", None))
        #: each parameter's compiled hint (its schema and its converter), in the signature's order
        self._params = {}  # type: Dict[str, Compiled]
        self._required = []  # type: List[str]
        signature = self._signature(fn)
        properties = {name: self._parameter(name, param, texts.get(name))  # (what a partial binds is fixed: not
                      for name, param in signature.items() if name not in self._bound}  # the model's to set)
        parameters = {"type": "object", "properties": properties}  # type: Dict[str, Any]
        if self._required:
            parameters["required"] = list(self._required)
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

    def _signature(self, fn: Callable[..., Any]) -> Mapping[str, inspect.Parameter]:
        try:
            parameters = inspect.signature(fn).parameters
        except (TypeError, ValueError) as exc:
            raise ConfigError("tool {!r}: its signature cannot be read ({})".format(self.name, exc)) from None
        for pname, param in parameters.items():
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                raise ConfigError("tool {!r}: parameter {}{} cannot be described to a model (*args and **kwargs "
                                  "have no schema); name each parameter".format(
                                      self.name, "*" if param.kind == param.VAR_POSITIONAL else "**", pname))
            if param.kind == param.POSITIONAL_ONLY:
                raise ConfigError("tool {!r}: parameter {!r} is positional-only; a model passes arguments by "
                                  "name".format(self.name, pname))
        self._hints = type_hints(_hinted(fn))
        #: the arguments a partial binds by keyword: fixed, neither shown to the model nor taken from it (a key, say)
        self._bound = frozenset(fn.keywords) if isinstance(fn, functools.partial) else frozenset()
        return parameters

    def _parameter(self, name: str, param: inspect.Parameter, text: Optional[str]) -> Dict[str, Any]:
        """One parameter's schema (its hint's, the docstring's text unless the hint has a description, the
        default when JSON can hold it); its compiled hint kept for ``convert``."""
        hint = self._hints.get(name, param.annotation)
        if hint is param.empty:  # no hint: any JSON value
            hint = Any
        try:
            compiled = compile_type(hint, refs=False)
        except ConfigError as exc:
            raise ConfigError("tool {!r}: parameter {!r}: {}".format(self.name, name, exc)) from None
        if param.default is None and not _takes_none(compiled):
            # ``x: int = None``: Optional[int], as typing.get_type_hints made it up to Python 3.10 (3.11 no longer
            # does): the same schema and check on every Python, the model's null the function's default
            compiled = compile_type(Optional[hint], refs=False)
        self._params[name] = compiled
        schema = dict(compiled.schema)
        if text and "description" not in schema:
            schema["description"] = text
        if param.default is param.empty:
            self._required.append(name)
        elif not _credential(param.default):  # (the schema goes to the provider)
            try:
                schema["default"] = to_json(param.default)
            except ValueError:  # a default JSON cannot hold (an object, a function): left out
                pass
        return schema

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        return "Tool({!r})".format(self.name)

    def convert(self, arguments: Mapping[str, Any]) -> Dict[str, Any]:
        """The model's arguments checked and converted for the function; a ValueError says what is wrong."""
        if not isinstance(arguments, _Mapping):
            raise ValueError("the arguments must be an object")
        missing = [name for name in self._required if name not in arguments]
        if missing:
            raise ValueError("missing required argument{} {}".format(
                _plural(missing), ", ".join(repr(m) for m in missing)))
        unknown = [name for name in arguments if name not in self._params]
        if unknown:
            raise ValueError("unknown argument{} {} (parameters: {})".format(
                _plural(unknown), ", ".join(repr(u) for u in unknown), ", ".join(self._params) or "none"))
        out = {}  # type: Dict[str, Any]
        problems, lines = [], []  # type: List[Tuple[str, str]], List[str]
        for name, value in arguments.items():
            try:
                out[name] = self._params[name].convert(value, where=name, style="tool")
            except ConversionError as exc:
                problems.extend(exc.problems)
                lines.extend(exc.lines)
        if problems:
            raise ConversionError(problems, lines)
        return out

    def run(self, arguments: Mapping[str, Any]) -> Any:
        return self.fn(**self.convert(arguments))


@overload
def tool(fn: Callable[..., Any], name: Optional[str] = None, description: Optional[str] = None,
         requires_approval: bool = False, timeout: Optional[float] = None, idempotent: bool = True) -> Tool: ...


@overload
def tool(fn: None = None, name: Optional[str] = None, description: Optional[str] = None,
         requires_approval: bool = False, timeout: Optional[float] = None,
         idempotent: bool = True) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(fn: Optional[Callable[..., Any]] = None, name: Optional[str] = None, description: Optional[str] = None,
         requires_approval: bool = False, timeout: Optional[float] = None, idempotent: bool = True) -> Any:
    """A Tool from a function: ``@tool``, ``@tool(requires_approval=True)`` or ``tool(fn, name=...)``.

    ``timeout``: seconds the runner waits for one call before it reports a timeout to the model (the
    function's thread is not stopped: Python cannot stop a thread; it runs on and its result is dropped).
    ``idempotent=False``: a side effect that must not happen twice (a payment): in a journaled run, a call
    of it that a crash interrupted is handed back as pending instead of being run again.
    """
    if fn is None:
        return lambda f: Tool(f, name, description, requires_approval, timeout, idempotent)
    return Tool(fn, name, description, requires_approval, timeout, idempotent)
