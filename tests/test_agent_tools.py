"""@tool: JSON Schema from type hints and docstrings, arguments checked and converted (issue 30 item 1).
Runs on every supported Python (3.8 included: typing.get_type_hints, no typing_extensions)."""

import enum
import json
import sys
from dataclasses import dataclass, field
from typing import Any, Dict, FrozenSet, List, Mapping, Optional, Sequence, Tuple, Union

import pytest

from agenthub import ConfigError, tool
from agenthub.agent.tools import Tool, parse_docstring

try:
    from typing import Literal, TypedDict
except ImportError:  # pragma: no cover
    raise


class Unit(enum.Enum):
    C = "c"
    F = "f"


class Point(TypedDict):
    x: int
    y: int


class Tags(TypedDict, total=False):
    color: str


@dataclass
class Box:
    width: float
    corners: List[Point]
    label: Optional[str] = None
    tags: Dict[str, int] = field(default_factory=dict)


@tool
def measure(city: str, days: int, unit: Unit = Unit.C, mode: Literal["fast", "exact"] = "fast",
            box: Optional[Box] = None, pairs: Sequence[Tuple[int, str]] = (), extra: Mapping[str, Any] = None,
            flags: Tuple[bool, ...] = (), either: Union[int, str] = 0, tags: Optional[Tags] = None,
            nothing: None = None, ratio: float = 1.0) -> str:
    """Measure the weather in a city.

    Longer text that is not the summary.

    Args:
        city: The city's name.
        days (int): How many days,
            counted from today.
        unit: Celsius or Fahrenheit.
    """
    return repr((city, days, unit, mode, box, pairs, extra, flags, either, tags, nothing, ratio))


def test_the_schema_of_every_supported_hint():
    # every parameter with a default carries it as JSON, as the SDKs' generators write it (issue 37 C3)
    point = {"type": "object", "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}},
             "required": ["x", "y"]}
    assert measure.schema == {
        "name": "measure",
        "description": "Measure the weather in a city.",
        "parameters": {"type": "object", "properties": {
            "city": {"type": "string", "description": "The city's name."},
            "days": {"type": "integer", "description": "How many days, counted from today."},
            "unit": {"enum": ["c", "f"], "type": "string", "description": "Celsius or Fahrenheit.", "default": "c"},
            "mode": {"enum": ["fast", "exact"], "type": "string", "default": "fast"},
            "box": {"anyOf": [{"type": "object", "properties": {
                "width": {"type": "number"},
                "corners": {"type": "array", "items": point},
                "label": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
                "tags": {"type": "object", "additionalProperties": {"type": "integer"}}},
                "required": ["width", "corners"]}, {"type": "null"}], "default": None},
            "pairs": {"type": "array", "items": {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}],
                                                  "minItems": 2, "maxItems": 2}, "default": []},
            "extra": measure.schema["parameters"]["properties"]["extra"],  # Optional on 3.8-3.10 (implicit)
            "flags": {"type": "array", "items": {"type": "boolean"}, "default": []},
            "either": {"anyOf": [{"type": "integer"}, {"type": "string"}], "default": 0},
            "tags": {"anyOf": [{"type": "object", "properties": {"color": {"type": "string"}}}, {"type": "null"}],
                     "default": None},
            "nothing": {"type": "null", "default": None},
            "ratio": {"type": "number", "default": 1.0}},
            "required": ["city", "days"]}}
    assert measure.schema["parameters"]["properties"]["extra"] in (
        {"type": "object", "additionalProperties": {}, "default": None},
        {"anyOf": [{"type": "object", "additionalProperties": {}}, {"type": "null"}], "default": None})


def test_the_tool_stays_callable_and_arguments_are_converted():
    assert measure("Paris", 2) == repr(("Paris", 2, Unit.C, "fast", None, (), None, (), 0, None, None, 1.0))
    out = measure.run({"city": "Paris", "days": 3.0, "unit": "f", "mode": "exact",
                       "box": {"width": 2, "corners": [{"x": 1, "y": 2}], "tags": {"a": 1}},
                       "pairs": [[1, "a"]], "flags": [True], "either": "x", "ratio": 2})
    assert out == repr(("Paris", 3, Unit.F, "exact", Box(2.0, [{"x": 1, "y": 2}], None, {"a": 1}), [(1, "a")],
                        None, (True,), "x", None, None, 2.0))


@pytest.mark.parametrize("arguments, words", [
    ({}, "missing required arguments 'city', 'days'"),
    ({"city": "P", "days": 1, "when": 2}, "unknown argument 'when' (parameters: city, days, unit, mode, box, "
                                          "pairs, extra, flags, either, tags, nothing, ratio)"),
    ({"city": 1, "days": 1}, "city must be a string, got an integer"),
    ({"city": "P", "days": 1.5}, "days must be an integer, got a number"),
    ({"city": "P", "days": True}, "days must be an integer, got a boolean"),
    ({"city": "P", "days": 1, "unit": "k"}, "unit must be one of ['c', 'f'], got 'k'"),
    ({"city": "P", "days": 1, "mode": "slow"}, "mode must be one of ['fast', 'exact'], got 'slow'"),
    ({"city": "P", "days": 1, "box": {"width": 1}}, "box is missing 'corners'"),
    ({"city": "P", "days": 1, "box": {"width": 1, "corners": [{"x": 1}]}}, "box.corners[0] is missing 'y'"),
    ({"city": "P", "days": 1, "pairs": [[1]]}, "pairs[0] must have 2 items, got 1"),
    ({"city": "P", "days": 1, "either": []}, "either fits none of the allowed types (either must be an integer, "
                                              "got an array; either must be a string, got an array)"),
])
def test_arguments_that_do_not_fit_say_what_is_wrong(arguments, words):
    with pytest.raises(ValueError) as info:
        measure.convert(arguments)
    assert str(info.value) == words


def args_fn(a: int, *rest: int) -> None:
    pass


def kwargs_fn(a: int, **options: str) -> None:
    pass


def complex_fn(a: int, z: complex) -> None:
    pass


def keys_fn(m: Dict[int, str]) -> None:
    pass


@pytest.mark.parametrize("fn, words", [
    (args_fn, "tool 'args_fn': parameter *rest cannot be described to a model"),
    (kwargs_fn, "tool 'kwargs_fn': parameter **options cannot be described to a model"),
    (complex_fn, "tool 'complex_fn': parameter 'z': the type hint complex has no JSON Schema here"),
    (keys_fn, "tool 'keys_fn': parameter 'm': mapping keys must be str (JSON object keys)"),
    (lambda x: x, "a lambda has no name: tool(fn, name=...)"),
])
def test_what_has_no_schema_is_a_config_error_naming_the_parameter(fn, words):
    with pytest.raises(ConfigError) as info:
        tool(fn)
    assert str(info.value).startswith(words)


def test_decorator_forms_and_overrides():
    @tool(name="lookup", description="Look it up.", requires_approval=True, timeout=2)
    def find(q: str) -> str:
        """Ignored summary."""
        return q

    assert isinstance(find, Tool) and find("x") == "x"
    assert find.schema == {"name": "lookup", "description": "Look it up.",
                           "parameters": {"type": "object", "properties": {"q": {"type": "string"}},
                                          "required": ["q"]}}
    assert find.requires_approval and find.timeout == 2
    assert tool(find.fn).schema["description"] == "Ignored summary."

    def bare(x):  # no hint: any JSON value
        return x

    assert tool(bare).schema["parameters"] == {"type": "object", "properties": {"x": {}}, "required": ["x"]}


def test_docstring_styles():
    google = """Summary here.

    Args:
        a (int): First
            and more.
        b: Second.

    Returns:
        Nothing.
    """
    numpy = """Summary here.

    Parameters
    ----------
    a : int
        First
        and more.
    b : str
        Second.

    Returns
    -------
    None
    """
    rest = """Summary here.

    :param a: First
        and more.
    :param str b: Second.
    :returns: nothing
    """
    for doc in (google, numpy, rest):
        assert parse_docstring(doc) == ("Summary here.", {"a": "First and more.", "b": "Second."}), doc
    assert parse_docstring(None) == ("", {})
    assert parse_docstring("Two line\nsummary.") == ("Two line summary.", {})


def test_a_partial_and_a_callable_object():
    import functools

    def forecast(city: str, days: int) -> str:
        """Forecast for a city."""
        return "{} {}".format(city, days)

    class Clock(object):
        """The time."""

        def __call__(self, zone: str) -> str:
            return zone

    three_days = tool(functools.partial(forecast, days=3), name="forecast3")
    assert three_days.schema == {"name": "forecast3", "description": "Forecast for a city.", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}},
        "required": ["city"]}}  # (what the partial binds is fixed: not the model's to see or set; it may be a key)
    assert three_days.run({"city": "Oslo"}) == "Oslo 3"
    with pytest.raises(ValueError) as refused:
        three_days.run({"city": "Oslo", "days": 9})
    assert str(refused.value) == "unknown argument 'days' (parameters: city)"
    assert tool(Clock(), name="clock").schema["parameters"] == {
        "type": "object", "properties": {"zone": {"type": "string"}}, "required": ["zone"]}
    with pytest.raises(ConfigError) as info:
        tool(functools.partial(forecast))
    assert "has no name: tool(fn, name=...)" in str(info.value)


# -- issue 37 C3: ``X | None``, Annotated metadata, defaults (differential.md D2) --------------------------------

needs_310 = pytest.mark.skipif(sys.version_info < (3, 10), reason="X | None is evaluated from 3.10")
needs_39 = pytest.mark.skipif(sys.version_info < (3, 9), reason="typing.Annotated is 3.9+")


def _normalized(schema):
    """pydantic's schema as @tool writes it: $refs inlined, no titles, no additionalProperties on the root."""
    from agenthub.typeschema import inline_refs

    def strip(value):
        if isinstance(value, list):
            return [strip(v) for v in value]
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k != "title"}
        return value
    out = strip(inline_refs(schema))
    out.pop("additionalProperties", None)
    return out


def _pydantic_parameters(fn):
    pydantic = pytest.importorskip("pydantic")
    return _normalized(pydantic.TypeAdapter(fn).json_schema())


@needs_310
def test_x_or_none_hints_have_a_schema_and_are_checked():
    namespace = {}
    exec("def pick(n: int | None = None, xs: list[int] | None = None, m: dict[str, float] = {}, ys: list[int] = [],"
         " s: str | int = 'a') -> str:\n    return repr((n, xs, m, ys, s))", namespace)
    pick = tool(namespace["pick"])
    assert pick.schema["parameters"] == {"type": "object", "properties": {
        "n": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None},
        "xs": {"anyOf": [{"type": "array", "items": {"type": "integer"}}, {"type": "null"}], "default": None},
        "m": {"type": "object", "additionalProperties": {"type": "number"}, "default": {}},
        "ys": {"type": "array", "items": {"type": "integer"}, "default": []},
        "s": {"anyOf": [{"type": "string"}, {"type": "integer"}], "default": "a"}}}
    assert pick.run({"n": 2.0, "xs": [1], "m": {"a": 1}, "ys": [], "s": 3}) == repr((2, [1], {"a": 1.0}, [], 3))
    assert pick.run({"n": None, "xs": None}) == repr((None, None, {}, [], "a"))
    with pytest.raises(ValueError) as info:
        pick.convert({"n": "2", "xs": [1, "x"], "m": {"a": True}})
    assert str(info.value) == ("n must be an integer, got a string; xs[1] must be an integer, got a string; "
                               "m['a'] must be a number, got a boolean")
    assert pick.schema["parameters"] == _pydantic_parameters(namespace["pick"])


@needs_39
def test_annotated_descriptions_and_bounds_reach_the_schema_and_the_check():
    pydantic = pytest.importorskip("pydantic")
    from typing import Annotated

    def rate(n: Annotated[int, pydantic.Field(ge=1, le=10, description="How many stars.")] = 5,
             code: Annotated[str, pydantic.Field(min_length=2, max_length=3, pattern="^[A-Z]+$")] = "EU",
             note: Annotated[Optional[str], "A note for the shop."] = None,
             tags: Annotated[List[str], pydantic.Field(max_length=2)] = (),
             step: Annotated[float, pydantic.Field(gt=0, lt=1, multiple_of=0.25)] = 0.5) -> str:
        """Rate the shop.

        Args:
            n: Ignored: the Annotated text wins.
            step: The step.
        """
        return repr((n, code, note, tags, step))

    rated = tool(rate)
    assert rated.schema["parameters"] == {"type": "object", "properties": {
        "n": {"type": "integer", "minimum": 1, "maximum": 10, "description": "How many stars.", "default": 5},
        "code": {"type": "string", "minLength": 2, "maxLength": 3, "pattern": "^[A-Z]+$", "default": "EU"},
        "note": {"anyOf": [{"type": "string"}, {"type": "null"}], "description": "A note for the shop.",
                 "default": None},
        "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2, "default": []},
        "step": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1, "multipleOf": 0.25,
                 "description": "The step.", "default": 0.5}}}
    expected = _pydantic_parameters(rate)
    expected["properties"]["step"]["description"] = "The step."  # pydantic reads no docstring
    expected["properties"]["note"]["description"] = "A note for the shop."  # nor a str in Annotated
    assert rated.schema["parameters"] == expected
    assert rated.run({"n": 10, "code": "ABC", "tags": ["a"], "step": 0.75}) == repr((10, "ABC", None, ["a"], 0.75))
    with pytest.raises(ValueError) as info:
        rated.convert({"n": 0})
    assert str(info.value) == "n must be >= 1, got 0"
    with pytest.raises(ValueError) as info:
        rated.convert({"n": 11, "code": "a", "tags": ["a", "b", "c"], "step": 0.3})
    assert str(info.value) == ("n must be <= 10, got 11; code must be at least 2 characters, got 'a'; "
                               "tags must be at most 2 items, got ['a', 'b', 'c']; step must be a multiple of 0.25, "
                               "got 0.3")
    with pytest.raises(ValueError) as info:
        rated.convert({"code": "abc", "step": 1})
    assert str(info.value) == "code must be a string matching \"^[A-Z]+$\", got 'abc'; step must be < 1, got 1"


@needs_39
def test_annotated_types_objects_and_plain_objects_with_the_attributes():
    from typing import Annotated

    class Ge(object):
        def __init__(self, ge):
            self.ge = ge

    class Doc(object):
        description = "Days ahead."

    def plan(days: Annotated[int, Ge(0), Doc()]) -> int:
        return days

    planned = tool(plan)
    assert planned.schema["parameters"]["properties"]["days"] == {"type": "integer", "minimum": 0,
                                                                  "description": "Days ahead."}
    with pytest.raises(ValueError) as info:
        planned.convert({"days": -1})
    assert str(info.value) == "days must be >= 0, got -1"
    annotated_types = pytest.importorskip("annotated_types")

    def between(x: Annotated[float, annotated_types.Interval(ge=1, lt=2)]) -> float:
        return x

    assert tool(between).schema["parameters"]["properties"]["x"] == {"type": "number", "minimum": 1,
                                                                     "exclusiveMaximum": 2}


def test_a_default_json_cannot_hold_is_left_out_of_the_schema():
    marker = object()

    def f(a: Any = marker, b: float = float("nan"), c: Tuple[int, int] = (1, 2), u: Unit = Unit.F) -> None:
        pass

    assert tool(f).schema["parameters"]["properties"] == {
        "a": {}, "b": {"type": "number"},
        "c": {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "integer"}], "minItems": 2,
              "maxItems": 2, "default": [1, 2]},
        "u": {"enum": ["c", "f"], "type": "string", "default": "f"}}


def test_a_wide_function_matches_pydantic():
    """Nested hints of every kind against pydantic's TypeAdapter (the oracle; skipped without it)."""
    pytest.importorskip("pydantic")
    te = pytest.importorskip("typing_extensions")  # pydantic takes typing.TypedDict from 3.12 only

    class Corner(te.TypedDict):
        x: int
        y: te.NotRequired[int]

    @dataclass
    class Frame:
        width: float
        corners: List[Corner]
        label: Optional[str] = None
        tags: Dict[str, int] = field(default_factory=dict)

    def wide(city: str, unit: Unit = Unit.C, mode: Literal["fast", "exact"] = "fast", frame: Optional[Frame] = None,
             pairs: Sequence[Tuple[int, str]] = (), flags: Tuple[bool, ...] = (), either: Union[int, str] = 0,
             names: FrozenSet[str] = frozenset(), ratio: float = 1.0, anything: Any = None) -> None:
        pass

    assert tool(wide).schema["parameters"] == _pydantic_parameters(wide)


def test_docstring_sections_mixed_and_keyword_titles():
    doc = """Summary.

    Parameters
    ----------
    a : int
        First.

    Other Parameters
    ----------------
    b
        Second,
        longer.

    Returns
    -------
    int
    """
    assert parse_docstring(doc) == ("Summary.", {"a": "First.", "b": "Second, longer."})
    google = """Summary.

    Keyword Args:
        **extra: Extra options.
        c (str):
            Third, on its own line.
    Raises:
        ValueError: never.
    """
    assert parse_docstring(google) == ("Summary.", {"extra": "Extra options.", "c": "Third, on its own line."})


def test_every_problem_is_reported_and_a_constructors_own_error_propagates():
    @dataclass
    class Seat:
        row: int

        def __post_init__(self):
            if self.row > 40:
                raise RuntimeError("row {} does not exist".format(self.row))

    def book(seat: Seat, n: int, name: str = "") -> str:
        return "{} {} {}".format(seat, n, name)

    booked = tool(book)
    with pytest.raises(ValueError) as info:
        booked.convert({"seat": {"row": "1", "col": 2}, "n": None, "name": 3})
    assert str(info.value) == ("seat has no field 'col'; seat.row must be an integer, got a string; n must be an "
                               "integer, got null; name must be a string, got an integer")
    with pytest.raises(RuntimeError) as raised:  # the runner words it with error_text (secrets scrubbed)
        booked.convert({"seat": {"row": 41}, "n": 1})
    assert str(raised.value) == "row 41 does not exist"


def test_a_none_default_accepts_null_on_every_python():
    """``x: int = None``: typing.get_type_hints made it Optional[int] up to Python 3.10 and no longer does from
    3.11; the tool's schema and its check are the same on every Python: the model is told null is allowed (its
    default), and a null it sends is the function's None, not an error result."""

    @tool
    def find(query: str, limit: int = None, tags: List[str] = None, exact: Optional[bool] = None) -> str:
        """Find."""
        return "{} {} {} {}".format(query, limit, tags, exact)

    assert find.schema["parameters"] == {"type": "object", "properties": {
        "query": {"type": "string"},
        "limit": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None},
        "tags": {"anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}], "default": None},
        "exact": {"anyOf": [{"type": "boolean"}, {"type": "null"}], "default": None}},
        "required": ["query"]}
    assert find.run({"query": "q", "limit": None, "tags": None, "exact": None}) == "q None None None"
    assert find.run({"query": "q", "limit": 3.0, "tags": ["a"]}) == "q 3 ['a'] None"
    with pytest.raises(ValueError) as info:
        find.run({"query": "q", "limit": "3"})
    assert str(info.value) == "limit must be an integer, got a string"


def test_an_annotated_optional_with_a_none_default_is_one_union_on_every_python():
    """``x: Annotated[Optional[str], "..."] = None``: up to Python 3.10 typing.get_type_hints wrapped the hint in a
    second Optional (a None default made it Optional, and a union does not look inside Annotated), so the schema
    was a union of a union there and one union from 3.11; now it is one union on every Python."""
    typing = pytest.importorskip("typing")
    if not hasattr(typing, "Annotated"):
        pytest.skip("typing.Annotated is 3.9+")
    Annotated = typing.Annotated

    @tool
    def note(text: Annotated[Optional[str], "A note for the shop."] = None,
             count: Annotated[int, "How many."] = None, *, tag: Annotated[Optional[str], "A tag."] = None) -> str:
        """Note."""
        return "{} {} {}".format(text, count, tag)

    assert note.schema["parameters"] == {"type": "object", "properties": {
        "text": {"anyOf": [{"type": "string"}, {"type": "null"}], "description": "A note for the shop.",
                 "default": None},
        "count": {"anyOf": [{"type": "integer", "description": "How many."}, {"type": "null"}], "default": None},
        "tag": {"anyOf": [{"type": "string"}, {"type": "null"}], "description": "A tag.", "default": None}}}
    assert note.run({"text": None, "count": None, "tag": "x"}) == "None None x"
    assert note.run({"text": "a", "count": 2}) == "a 2 None"


def test_an_async_function_is_a_config_error_naming_it():
    """A tool runs in a thread and its return value is the result: an ``async def`` would give the model a
    coroutine's repr and never run (and warn that it was never awaited)."""

    async def fetch(url: str) -> str:
        return url

    class Fetcher(object):
        async def __call__(self, url: str) -> str:
            return url

    import functools

    for fn, name in ((fetch, "fetch"), (functools.partial(fetch), "fetch"), (Fetcher(), "fetcher")):
        with pytest.raises(ConfigError) as info:
            tool(fn, name=name)
        assert str(info.value) == ("tool {!r} is an async function: a tool runs in a thread of its own, its return "
                                   "value the result; give a plain function (asyncio.run(...) inside it if it must "
                                   "await)".format(name))


def test_a_generator_function_is_a_config_error_naming_it():
    """A tool's return value is the result: a generator function's body would never run (calling it makes a
    generator), the model told it ran with the generator's repr as the result."""
    import functools

    def export(rows: int) -> Any:
        yield "row"

    class Exporter(object):
        def __call__(self, rows: int) -> Any:
            yield "row"

    for fn, name in ((export, "export"), (functools.partial(export), "export"), (Exporter(), "exporter")):
        with pytest.raises(ConfigError) as info:
            tool(fn, name=name)
        assert str(info.value) == ("tool {!r} is a generator function: its body would not run when called (the "
                                   "return value is the result); return a list of what it yields "
                                   "instead".format(name))


def test_a_default_that_is_a_credential_is_never_shown_to_the_model(monkeypatch):
    """A tool's schema goes to the provider with every request: a value a partial binds (the idiom for fixing a key),
    a default read from a secret environment variable, or one with a URL's password or a token parameter is left
    out of it (the parameter stays optional; its default still applies when the model leaves it out)."""
    import functools

    monkeypatch.setenv("SEARCH_API_KEY", "sk-live-from-env-0001")

    def search(query: str, api_key: str, limit: int = 5, proxy: str = "https://bob:hunter22@proxy.example",
               endpoint: str = "https://api.example/v1?token=tok-abc-123", env_key: str = "sk-live-from-env-0001",
               region: str = "eu") -> str:
        """Search."""
        return "{} {} {} {}".format(query, api_key, limit, region)

    bound = tool(functools.partial(search, api_key="sk-live-bound-0002"), name="search")
    assert bound.schema["parameters"] == {"type": "object", "properties": {
        "query": {"type": "string"}, "limit": {"type": "integer", "default": 5},
        "proxy": {"type": "string"}, "endpoint": {"type": "string"}, "env_key": {"type": "string"},
        "region": {"type": "string", "default": "eu"}}, "required": ["query"]}
    assert "sk-live" not in json.dumps(bound.schema) and "hunter22" not in json.dumps(bound.schema)
    assert bound.run({"query": "q"}) == "q sk-live-bound-0002 5 eu"
    with pytest.raises(ValueError) as refused:  # the bound key is fixed: the model cannot replace it
        bound.run({"query": "q", "api_key": "sk-from-the-model"})
    assert str(refused.value).startswith("unknown argument 'api_key' (parameters: query, limit,")
    with pytest.raises(ConfigError) as unnamed:  # (its repr shows the bound key)
        tool(functools.partial(search, api_key="sk-live-bound-0002"))
    assert str(unnamed.value) == "a partial has no name: tool(fn, name=...)"


def test_a_docstring_that_opens_with_its_args_title_keeps_every_description():
    # """Args: on the quotes' line: cleandoc dedents the items to the title's level, and the section ended at
    # its first item (every parameter's description was lost, the schema sent without them)
    def forecast(city: str, days: int = 3) -> str:
        """Args:
            city: The city,
                by its English name.
            days: How many days.
        """
        return city

    assert parse_docstring(forecast.__doc__) == ("", {"city": "The city, by its English name.",
                                                      "days": "How many days."})
    schema = Tool(forecast).schema
    assert schema == {"name": "forecast", "parameters": {
        "type": "object", "properties": {"city": {"type": "string", "description": "The city, by its English name."},
                                         "days": {"type": "integer", "description": "How many days.", "default": 3}},
        "required": ["city"]}}
    # with its other sections, on the quotes' line or below, the same
    for doc in ('Args:\n        a: First.\n        b: Second.\n    Returns:\n        x\n    ',
                'Args:\n        a: First.\n        b: Second.\n        Returns:\n            x\n        ',
                'Parameters:\n    a: First.\n\n    b: Second.\n    Raises:\n        E: never.'):
        assert parse_docstring(doc) == ("", {"a": "First.", "b": "Second."}), doc
