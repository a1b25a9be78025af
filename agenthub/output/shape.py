"""How an output type goes out on the routed wire, and how its answer comes back (typed output).

``shape(client, messages, output, config)`` compiles the type once and picks the first way the endpoint
takes, checked by building the request (``client.plan``: nothing is sent):

==============  =======================================================================================
``schema``      ``response_format: json_schema`` (strict form): OpenAI Chat/Responses/Azure structured
                outputs, Anthropic ``output_config.format``, Bedrock ``outputConfig.textFormat``, Gemini
                ``responseJsonSchema`` (or its OpenAPI subset): native on every wire that has it
``tool``        a forced tool whose parameters are the schema (Anthropic models without structured
                outputs, and other endpoints that refuse ``json_schema`` but take a forced tool); never
                in a tool run (``client.run(..., output=)``) nor beside tools of the caller's
``json_object`` JSON mode plus the schema in the system prompt (compatible servers in JSON mode only)
``prompt``      the schema in the system prompt alone (endpoints with neither)
==============  =======================================================================================

The strict form (what OpenAI's strict mode asks, and what every other wire takes): every object lists
all its properties in ``required`` and has ``additionalProperties: false``; a property that was optional
becomes nullable, and a ``null`` the model sends for it is read back as "left out" (its default applies).
A value that is not an object (a list, a number, an Enum, a union) goes out wrapped as
``{"value": ...}`` (the wires take an object at the top) and is unwrapped before it is converted.
"""

import copy
import json
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ..errors import ConfigError, UnsupportedParameterError
from ..typeschema import DATA_KEYWORDS, ConversionError, compile as compile_type, names_shown
from ..types import Message
from ..providers.openai_responses import (OPENAI_STRICT_FORMATS, OPENAI_STRICT_KEYWORDS,  # noqa: F401  (re-exported)
                                          OPENAI_STRICT_NOTES, OPENAI_STRICT_UNSUPPORTED, strict_holds,
                                          strict_refused)
from .partial import find_json

__all__ = ["Shaped", "shape", "strict_schema", "strict_holds", "strict_refused"]

SCHEMA_NAME = "output"
_WRAP = "value"
#: the most problems one answer is told (and an error or a job row keeps) before "(and N more problems)"
MAX_PROBLEMS = 50


def _label(output: Any) -> str:
    if isinstance(output, Mapping):
        return "the JSON Schema {!r}".format(output.get("title") or "given")
    return getattr(output, "__name__", None) or repr(output)


def strict_schema(schema: Mapping[str, Any]) -> Tuple[Dict[str, Any], Dict[int, List[str]]]:
    """The strict form of ``schema`` (a copy) and, per object schema (keyed by ``id`` of the copy's
    node), the properties made nullable by it."""
    out = copy.deepcopy(dict(schema))
    added = {}  # type: Dict[int, List[str]]

    def walk(node: Any) -> None:
        if isinstance(node, list):
            for child in node:
                walk(child)
            return
        if not isinstance(node, dict):
            return
        node.pop("default", None)  # strict mode takes no defaults: a left-out value comes back as null
        props = node.get("properties")
        kind = node.get("type", "object")
        if isinstance(props, dict) and (kind == "object" or isinstance(kind, list) and "object" in kind):
            # (``["object", "null"]`` too: an optional object this walk made nullable, or the caller's own)
            required = set(node.get("required") or ())
            for name in node.get("required") or ():  # required yet not a property: any value, never closed out
                if isinstance(name, str) and name not in props:  # (closed, no answer could hold the schema)
                    props[name] = {}
            made = []
            for name, sub in props.items():
                if name not in required and isinstance(sub, dict) and not _nullable(sub):
                    props[name] = {"anyOf": [sub, {"type": "null"}]} if "type" not in sub or "$ref" in sub \
                        else _with_null(sub)
                    made.append(name)
                elif name not in required and isinstance(sub, dict):
                    made.append(name)
            node["required"] = list(props)
            node["additionalProperties"] = False
            if made:
                added[id(node)] = made
        for key, child in node.items():
            if key in ("properties", "$defs", "definitions"):
                if isinstance(child, dict):
                    for sub in child.values():
                        walk(sub)
            elif isinstance(child, (dict, list)) and key not in DATA_KEYWORDS:
                walk(child)

    walk(out)
    return out, added


def _nullable(schema: Mapping[str, Any], defs: Optional[Mapping[str, Any]] = None, depth: int = 0) -> bool:
    """Whether ``schema`` takes a null: its type, one of its enum values (``Literal["a", None]`` has no type), its
    const, one of its branches, or each part of its ``allOf``; with ``defs`` (``_definitions``) a ``$ref`` is
    what it names (``Union[E, int]`` where the Enum ``E`` has a None member: ``anyOf: [{"$ref": E}, ...]``)."""
    if depth > 50:
        return False
    ref = schema.get("$ref")
    if isinstance(ref, str) and defs is not None and isinstance(defs.get(ref), Mapping):
        return _nullable(defs[ref], defs, depth + 1)
    kind = schema.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    values = schema.get("enum")
    if (isinstance(values, list) and None in values) or ("const" in schema and schema["const"] is None):
        return True
    parts = schema.get("allOf")
    parts = parts if isinstance(parts, list) else []
    if parts and not all(isinstance(s, Mapping) and _nullable(s, defs, depth + 1) for s in parts):
        return False  # (a null holds an allOf when it holds each of its parts)
    branches = schema.get("anyOf") or schema.get("oneOf")
    if branches:
        return any(isinstance(s, Mapping) and _nullable(s, defs, depth + 1) for s in branches)
    return bool(parts) and "type" not in schema and "enum" not in schema


def _with_null(schema: Mapping[str, Any]) -> Dict[str, Any]:
    out = dict(schema)
    kind = out["type"]
    out["type"] = (list(kind) if isinstance(kind, list) else [kind]) + ["null"]
    if "enum" in out:
        out["enum"] = list(out["enum"]) + [None]
    return out


def _has_root_ref(schema: Any) -> bool:
    if isinstance(schema, list):
        return any(_has_root_ref(child) for child in schema)
    if not isinstance(schema, Mapping):
        return False
    return schema.get("$ref") == "#" or any(_has_root_ref(child) for key, child in schema.items()
                                            if key not in DATA_KEYWORDS)


def _root_refs(schema: Any, target: str) -> Any:
    """A copy of ``schema`` with each ``{"$ref": "#"}`` naming ``target`` instead."""
    if isinstance(schema, list):
        return [_root_refs(child, target) for child in schema]
    if not isinstance(schema, Mapping):
        return schema
    out = {key: child if key in DATA_KEYWORDS else _root_refs(child, target) for key, child in schema.items()}
    if out.get("$ref") == "#":
        out["$ref"] = target
    return out


def _definitions(schema: Mapping[str, Any]) -> Dict[str, Any]:
    """What a local ``$ref`` may name: ``#`` (the root), ``#/$defs/X`` and ``#/definitions/X``."""
    out = {"#": schema}  # type: Dict[str, Any]
    for key in ("definitions", "$defs"):
        found = schema.get(key)
        if isinstance(found, Mapping):
            out.update(("#/{}/{}".format(key, name), sub) for name, sub in found.items())
    return out


def _drop_added_nulls(data: Any, schema: Mapping[str, Any], defs: Mapping[str, Any], depth: int = 0) -> Any:
    """``data`` with each ``null`` the strict form allowed for an optional property left out (``defs``:
    ``_definitions`` of the root)."""
    if depth > 200 or not isinstance(schema, Mapping):
        return data
    ref = schema.get("$ref")
    if isinstance(ref, str):
        target = defs.get(ref)
        return _drop_added_nulls(data, target, defs, depth + 1) if target is not None else data
    for part in schema.get("allOf") or ():  # (``allOf: [{"$ref": ...}]``: a nested object with a description)
        data = _drop_added_nulls(data, part, defs, depth + 1) if isinstance(part, Mapping) else data
    if isinstance(data, dict):
        props = schema.get("properties")
        if isinstance(props, dict):
            required = set(schema.get("required") or ())
            out = {}
            for key, value in data.items():
                sub = props.get(key)
                if value is None and key not in required and isinstance(sub, Mapping) and \
                        not _nullable(sub, defs):  # (a $ref to an Enum with a None member takes null)
                    continue
                out[key] = _drop_added_nulls(value, sub, defs, depth + 1) if isinstance(sub, Mapping) else value
            return out
        branches = [branch for branch in schema.get("anyOf") or schema.get("oneOf") or ()
                    if isinstance(branch, Mapping) and (branch.get("type") == "object" or "properties" in branch
                                                        or "$ref" in branch or "allOf" in branch)]
        # the branch the answer is (``Union[Cat, Dog]``: a dog's null ``bark`` is Dog's to leave out), else the first
        if branches:
            chosen = next((branch for branch in branches if _fits(data, branch, defs)), branches[0])
            return _drop_added_nulls(data, chosen, defs, depth + 1)
        extra = schema.get("additionalProperties")
        if isinstance(extra, Mapping):
            return {k: _drop_added_nulls(v, extra, defs, depth + 1) for k, v in data.items()}
        return data
    if isinstance(data, list):
        items = schema.get("items")
        if isinstance(items, Mapping):
            return [_drop_added_nulls(v, items, defs, depth + 1) for v in data]
        for branch in schema.get("anyOf") or ():
            if isinstance(branch, Mapping) and branch.get("type") == "array":
                return _drop_added_nulls(data, branch, defs, depth + 1)
    return data


_JSON_TYPES = {"string": (str,), "integer": (int, float), "number": (int, float), "boolean": (bool,),
               "array": (list,), "object": (dict,), "null": (type(None),)}


def _resolved(schema: Mapping[str, Any], defs: Mapping[str, Any]) -> Any:
    ref = schema.get("$ref")
    return defs.get(ref, schema) if isinstance(ref, str) else schema


def _same(a: Any, b: Any) -> bool:
    return a == b and (type(a) is bool) == (type(b) is bool)


def _fits(data: Mapping[str, Any], branch: Mapping[str, Any], defs: Mapping[str, Any]) -> bool:
    """Whether an object could be this union branch, by a shallow look: its members all the branch's, the
    branch's required ones there, each member's JSON type, ``const`` and ``enum`` (a discriminator) as said."""
    branch = _resolved(branch, defs)
    props = branch.get("properties") if isinstance(branch, Mapping) else None
    if not isinstance(props, Mapping) or any(key not in props for key in data) \
            or any(key not in data for key in branch.get("required") or ()):
        return False
    for key, value in data.items():
        sub = props[key]
        if value is None or not isinstance(sub, Mapping):
            continue
        sub = _resolved(sub, defs)
        if not isinstance(sub, Mapping):
            continue
        if "const" in sub and not _same(sub["const"], value):
            return False
        if isinstance(sub.get("enum"), list) and not any(_same(option, value) for option in sub["enum"]):
            return False
        kind = sub.get("type")
        kinds = kind if isinstance(kind, list) else [kind] if isinstance(kind, str) else None
        if kinds and not any(isinstance(value, _JSON_TYPES.get(k, object)) and
                             (k in ("boolean", "null") or not isinstance(value, bool)) for k in kinds):
            return False
    return True


def _is_object(schema: Mapping[str, Any]) -> bool:
    return schema.get("type") == "object" and isinstance(schema.get("properties"), dict)


class Shaped(object):
    """The output type as it goes out on one endpoint (see the module docstring)."""

    def __init__(self, compiled: Any, mode: str, config: Dict[str, Any], wrapped: bool,
                 original: Dict[str, Any]) -> None:
        self.compiled = compiled
        self.mode = mode
        self.config = config
        self.wrapped = wrapped
        self._original = original  # the schema as compiled (wrapped when it is), not the strict form
        self.label = _label(compiled.type)

    # what streams in
    def piece(self, event: Mapping[str, Any]) -> str:
        items = event.get("content_items")
        if not items:
            return ""
        if self.mode == "tool":
            return "".join(item.get("arguments") or "" for item in items
                           if item.get("type") == "partial_tool_call" and isinstance(item.get("arguments"), str))
        return "".join(item.get("text") or "" for item in items
                       if item.get("type") == "text" and not (item.get("fidelity") or {}).get("refusal"))

    def inner(self, value: Any) -> Any:
        if not self.wrapped:
            return value
        return value.get(_WRAP) if isinstance(value, dict) else None

    # what the whole answer says
    def refusal(self, message: Mapping[str, Any]) -> Optional[str]:
        refused = [item.get("text") or "" for item in message.get("content_items") or ()
                   if item.get("type") == "text" and (item.get("fidelity") or {}).get("refusal")]
        if refused:
            return "".join(refused) or "(no reason given)"
        if message.get("finish_reason") == "unknown":
            text = self.text(message)
            if find_json(text)[1] is not None:
                return text.strip() or "(the answer ended without a value; finish_reason unknown)"
        return None

    def text(self, message: Mapping[str, Any]) -> str:
        items = message.get("content_items") or ()
        if self.mode == "tool":
            for item in items:
                if item.get("type") == "tool_call" and item.get("name") == SCHEMA_NAME:
                    return json.dumps(item.get("arguments"), ensure_ascii=False)
            return ""
        return "".join(item.get("text") or "" for item in items
                       if item.get("type") == "text" and not (item.get("fidelity") or {}).get("refusal"))

    def convert(self, data: Any) -> Tuple[Any, List[str], Any]:
        """(the typed value, [], its JSON) of the answer's JSON, or (None, the problems (``path: what``), None)."""
        original = self._original  # (every mode: a model shown the schema in a prompt writes such nulls too)
        data = _drop_added_nulls(data, original, _definitions(original))
        if self.wrapped:
            if not isinstance(data, dict) or _WRAP not in data:
                return None, ["the answer must be an object {{\"{}\": ...}}".format(_WRAP)], None
            extra = sorted(set(data) - {_WRAP})
            if extra:
                return None, ["unexpected member(s) {}".format(names_shown(extra))], None
            data = data[_WRAP]
        try:
            return self.compiled.convert(data), [], data
        except ConversionError as exc:
            lines = exc.lines or [str(exc)]
            if len(lines) > MAX_PROBLEMS:  # (every item of a long list wrong: the error and a job row stay small)
                lines = lines[:MAX_PROBLEMS] + ["(and {} more problems)".format(len(lines) - MAX_PROBLEMS)]
            return None, lines, None

    # what goes back when it did not hold
    def replay(self, message: Mapping[str, Any]) -> Message:
        return {"role": "assistant", "content_items": list(message.get("content_items") or ())}  # type: ignore[return-value]

    def reask(self, problems: Sequence[str], message: Mapping[str, Any]) -> Message:
        listed = "\n".join("- " + p for p in problems)  # (at most MAX_PROBLEMS and a count of the rest)
        text = ("The answer did not match the required JSON Schema:\n{}\nAnswer again with the corrected value "
                "only.".format(listed))
        if self.mode == "tool":
            for item in message.get("content_items") or ():
                if item.get("type") == "tool_call" and item.get("name") == SCHEMA_NAME:
                    return {"role": "user", "content_items": [  # type: ignore[return-value]
                        {"type": "tool_result", "tool_call_id": item.get("tool_call_id"), "text": text,
                         "is_error": True}]}
        return {"role": "user", "content_items": [{"type": "text", "text": text}]}  # type: ignore[return-value]


def _instructions(schema: Mapping[str, Any]) -> str:
    return ("Answer with a single JSON value that matches this JSON Schema, and nothing else:\n"
            + json.dumps(schema, ensure_ascii=False, sort_keys=True))


def _with_system(config: Dict[str, Any], text: str) -> Dict[str, Any]:
    out = dict(config)
    prompt = out.get("system_prompt")
    out["system_prompt"] = (prompt + "\n\n" + text) if prompt else text
    return out


def shape(client: Any, messages: Sequence[Message], output: Any, config: Mapping[str, Any], *,
          forced_tool: bool = True) -> Shaped:
    """The first way ``output`` goes out that the client's endpoint takes (see the module docstring).
    ``forced_tool=False``: never the forced tool (the tool runner: a forced tool would leave the model no
    other call, and an answer there is a call of a tool the run does not have)."""
    compiled = compile_type(output)
    if compiled.schema is False:
        raise ConfigError("the output type False is a JSON Schema no value holds: nothing could be answered")
    schema = dict(compiled.schema) if compiled.schema is not True else {}  # (True: any JSON value, as Any)
    wrapped = not _is_object(schema)
    if wrapped:
        # the definitions stay at the root; a "#" (the caller's root, now inside the wrapper) names it in $defs
        defs = schema.pop("$defs", None)
        older = schema.pop("definitions", None)
        inner = schema  # type: Any
        if _has_root_ref(schema):
            defs = dict(defs or {})
            name = next(n for n in ("value", "value_", "value__") + tuple("value{}".format(i) for i in range(99))
                        if n not in defs)
            defs[name] = _root_refs(schema, "#/$defs/" + name)
            inner = {"$ref": "#/$defs/" + name}
        schema = {"type": "object", "properties": {_WRAP: inner}, "required": [_WRAP],
                  "additionalProperties": False}
        if older:
            schema["definitions"] = older
        if defs:
            schema["$defs"] = defs
    strict, _ = strict_schema(schema)
    base = dict(config)
    tries = []  # type: List[Tuple[str, Dict[str, Any]]]
    tries.append(("schema", dict(base, response_format={"type": "json_schema", "name": SCHEMA_NAME,
                                                          "schema": strict, "strict": strict_holds(strict)})))
    if forced_tool and not base.get("tools"):
        tries.append(("tool", dict(base, tools=[{"name": SCHEMA_NAME, "parameters": strict,
                                                "description": "Answer with the requested value."}],
                                   tool_choice=[SCHEMA_NAME])))
    tries.append(("json_object", dict(_with_system(base, _instructions(schema)),
                                      response_format={"type": "json_object"})))
    tries.append(("prompt", _with_system(base, _instructions(schema))))
    refused = []  # type: List[str]
    for mode, candidate in tries:
        try:
            client.plan(messages, candidate)
        except UnsupportedParameterError as exc:
            refused.append("{}: {}".format(mode, exc))
            continue
        return Shaped(compiled, mode, candidate, wrapped, schema)
    raise ConfigError("{}: no way to ask for {} here ({})".format(
        getattr(client, "client_type", "?"), _label(output), "; ".join(refused)))
