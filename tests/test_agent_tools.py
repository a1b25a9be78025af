"""@tool: JSON Schema from type hints and docstrings, arguments checked and converted (issue 30 item 1).
Runs on every supported Python (3.8 included: typing.get_type_hints, no typing_extensions)."""

import enum
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

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
        "type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer", "default": 3}},
        "required": ["city"]}}
    assert three_days.run({"city": "Oslo"}) == "Oslo 3"
    assert tool(Clock(), name="clock").schema["parameters"] == {
        "type": "object", "properties": {"zone": {"type": "string"}}, "required": ["zone"]}
    with pytest.raises(ConfigError) as info:
        tool(functools.partial(forecast))
    assert "has no name: tool(fn, name=...)" in str(info.value)
