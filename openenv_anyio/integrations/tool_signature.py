"""A tool's JSON Schema as a Python signature and docstring (no I/O).

Trainers describe a tool to a model from a Python function: its type hints give the
parameters' types and a Google-style docstring (``Args:``) their descriptions (TRL reads them
with ``transformers.utils.get_json_schema``). :func:`tool_signature` goes the other way, from
the ``inputSchema`` a server lists (or an action model's schema), to the
:class:`ToolSignature` a generated method carries.

Types map as JSON Schema reads: ``string`` -> ``str``, ``integer`` -> ``int``, ``number``
-> ``float``, ``boolean`` -> ``bool``, ``null`` -> ``None``, ``array`` -> ``list[ITEM]`` (or
``list``), ``object`` -> ``dict[str, VALUE]`` (``additionalProperties``, or ``dict``),
``enum``/``const`` of scalars -> ``Literal[...]``, a list of types, ``anyOf`` and ``oneOf``
-> a union, ``{}`` -> ``Any``; ``$ref`` into the schema's own ``$defs`` is followed.
Anything else (a parameter name that cannot be a Python keyword argument, a top level that
is not an object with ``properties``, a ``type`` JSON Schema does not have, a ``$ref``
elsewhere) is an :class:`UnexpressibleSchema` with a one-line message.
"""

from __future__ import annotations

import functools
import inspect
import keyword
import operator
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["ToolParameter", "ToolSignature", "UnexpressibleSchema", "tool_signature"]

_SCALARS: dict[str, Any] = {"string": str, "integer": int, "number": float, "boolean": bool, "null": type(None)}
_JSON_SCALAR_TYPES = (str, int, float, bool, type(None))
#: how deep ``$ref`` chains and nested schemas are followed before the rest is ``Any``
_MAX_DEPTH = 16


class UnexpressibleSchema(ValueError):
    """A tool's JSON Schema that no Python signature can carry (one-line message)."""


@dataclass(frozen=True)
class ToolParameter:
    """One keyword parameter of a tool."""

    name: str
    annotation: Any
    description: str
    #: ``inspect.Parameter.empty`` for a required parameter
    default: Any = inspect.Parameter.empty
    #: omitted from the call when left at its default (the schema gives none: the server's applies)
    omit_default: bool = False


@dataclass(frozen=True)
class ToolSignature:
    """A tool as a Python method: name, parameters, and the docstring describing them."""

    name: str
    description: str
    parameters: tuple[ToolParameter, ...]
    returns: str = "What the environment answered, as text."

    @property
    def required(self) -> tuple[str, ...]:
        """The names of the parameters a call must give."""
        return tuple(p.name for p in self.parameters if p.default is inspect.Parameter.empty)

    def signature(self) -> inspect.Signature:
        """``(self, *, PARAM: TYPE [= DEFAULT], ...) -> str``: required parameters first."""
        ordered = sorted(self.parameters, key=lambda parameter: parameter.default is not inspect.Parameter.empty)
        return inspect.Signature(
            [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
            + [
                inspect.Parameter(p.name, inspect.Parameter.KEYWORD_ONLY, default=p.default, annotation=p.annotation)
                for p in ordered
            ],
            return_annotation=str,
        )

    def annotations(self) -> dict[str, Any]:
        """The ``__annotations__`` of the method (real types: nothing to evaluate)."""
        return {**{p.name: p.annotation for p in self.parameters}, "return": str}

    def docstring(self) -> str:
        """Google style, the form ``get_json_schema`` parses: description, ``Args:``, ``Returns:``."""
        lines = [self.description or f"The {self.name} tool."]
        if self.parameters:
            lines += ["", "Args:"] + [f"    {p.name}: {p.description}" for p in self.parameters]
        lines += ["", "Returns:", f"    {self.returns}"]
        return "\n".join(lines)

    def arguments(self, given: Mapping[str, Any]) -> dict[str, Any]:
        """The arguments to send for a call with keyword arguments ``given`` (already bound)."""
        omitted = {p.name for p in self.parameters if p.omit_default}
        return {name: value for name, value in given.items() if not (name in omitted and value is None)}


def tool_signature(
    name: str, description: str, input_schema: Mapping[str, Any], *, hidden: Collection[str] = ()
) -> ToolSignature:
    """The signature of tool ``name`` whose arguments ``input_schema`` describes.

    ``hidden`` names optional parameters left out (e.g. upstream actions' ``metadata``).
    Raises :class:`UnexpressibleSchema`.
    """
    if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name) or name.startswith("_"):
        raise UnexpressibleSchema(f"tool name {name!r} cannot be a Python method name")
    if not isinstance(input_schema, Mapping):
        raise UnexpressibleSchema(f"tool {name!r}: its schema is a {type(input_schema).__name__}, not an object")
    definitions = _definitions(input_schema)
    top = _resolved(input_schema, definitions, f"tool {name!r}")
    combined = any(key in top for key in ("anyOf", "oneOf", "allOf", "not", "if"))
    if combined or top.get("type", "object") != "object" or not isinstance(top.get("properties", {}), Mapping):
        raise UnexpressibleSchema(
            f"tool {name!r}: its arguments are not an object with properties "
            f"(schema keys: {', '.join(sorted(top)) or 'none'})"
        )
    properties: Mapping[str, Any] = top.get("properties", {})
    required = _names(top.get("required", []), f"tool {name!r}: required")
    parameters = []
    for parameter, schema in properties.items():
        where = f"tool {name!r} parameter {parameter!r}"
        if parameter in hidden and parameter not in required:
            continue
        if (
            not isinstance(parameter, str)
            or not parameter.isidentifier()
            or keyword.iskeyword(parameter)
            or parameter == "self"
        ):
            raise UnexpressibleSchema(f"{where}: the name cannot be a Python keyword argument")
        if not isinstance(schema, Mapping):
            raise UnexpressibleSchema(f"{where}: its schema is a {type(schema).__name__}, not an object")
        annotation = _python_type(schema, definitions, where, 0)
        text = _one_line(schema.get("description") or schema.get("title") or f"the {parameter} value")
        if parameter in required:
            parameters.append(ToolParameter(parameter, annotation, text))
        elif "default" in schema and isinstance(schema["default"], _JSON_SCALAR_TYPES):
            parameters.append(ToolParameter(parameter, annotation, text, default=schema["default"]))
        else:  # optional, no scalar default: None stands for "not sent"
            optional = annotation if annotation is Any else annotation | None
            parameters.append(ToolParameter(parameter, optional, text, default=None, omit_default=True))
    return ToolSignature(name, _one_line(description or top.get("description") or ""), tuple(parameters))


def _definitions(schema: Mapping[str, Any]) -> Mapping[str, Any]:
    found = schema.get("$defs") or schema.get("definitions") or {}
    return found if isinstance(found, Mapping) else {}


def _resolved(
    schema: Mapping[str, Any], definitions: Mapping[str, Any], where: str, depth: int = 0
) -> Mapping[str, Any]:
    """``schema`` with a ``$ref`` into its own definitions followed (others are refused)."""
    while "$ref" in schema:
        reference = schema["$ref"]
        prefix = next(
            (p for p in ("#/$defs/", "#/definitions/") if isinstance(reference, str) and reference.startswith(p)), None
        )
        if prefix is None or reference[len(prefix) :] not in definitions:
            raise UnexpressibleSchema(f"{where}: $ref {reference!r} does not name a definition of the schema")
        depth += 1
        if depth > _MAX_DEPTH:
            return {}
        schema = definitions[reference[len(prefix) :]]
        if not isinstance(schema, Mapping):
            raise UnexpressibleSchema(f"{where}: $ref {reference!r} names a {type(schema).__name__}, not a schema")
    return schema


def _python_type(schema: Mapping[str, Any], definitions: Mapping[str, Any], where: str, depth: int) -> Any:
    if depth > _MAX_DEPTH:
        return Any
    if not isinstance(schema, Mapping):
        raise UnexpressibleSchema(f"{where}: a schema inside it is a {type(schema).__name__}, not an object")
    schema = _resolved(schema, definitions, where, depth)
    if "const" in schema:
        return _literal([schema["const"]], where)
    if "enum" in schema:
        return _literal(_listed(schema["enum"], f"{where}: enum"), where)
    for combinator in ("anyOf", "oneOf"):
        if combinator in schema:
            listed = _listed(schema[combinator], f"{where}: {combinator}")
            return _union([_python_type(member, definitions, where, depth + 1) for member in listed])
    if "allOf" in schema and len(_listed(schema["allOf"], f"{where}: allOf")) == 1:
        return _python_type(schema["allOf"][0], definitions, where, depth + 1)
    kind = schema.get("type")
    if kind is None:
        return Any
    if isinstance(kind, list):
        return _union([_python_type({**schema, "type": one}, definitions, where, depth + 1) for one in kind])
    if not isinstance(kind, str):
        raise UnexpressibleSchema(f"{where}: its type is a {type(kind).__name__}, not a JSON Schema type name")
    if kind in _SCALARS:
        return _SCALARS[kind]
    if kind == "array":
        items = schema.get("items")
        return list[_python_type(items, definitions, where, depth + 1)] if isinstance(items, Mapping) else list  # type: ignore[misc]
    if kind == "object":
        values = schema.get("additionalProperties")
        return dict[str, _python_type(values, definitions, where, depth + 1)] if isinstance(values, Mapping) else dict  # type: ignore[misc]
    raise UnexpressibleSchema(f"{where}: JSON Schema has no type {kind!r}")


def _listed(value: object, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise UnexpressibleSchema(f"{where} is a {type(value).__name__}, not a list")
    return value


def _names(value: object, where: str) -> set[str]:
    listed = _listed(value, where)
    if not all(isinstance(name, str) for name in listed):
        raise UnexpressibleSchema(f"{where} lists other than names")
    return set(listed)


def _literal(values: list[Any], where: str) -> Any:
    if not values or any(not isinstance(value, _JSON_SCALAR_TYPES) for value in values):
        raise UnexpressibleSchema(f"{where}: an enum or const of other than strings, numbers, booleans or null")
    return Literal.__getitem__(tuple(values))


def _union(members: list[Any]) -> Any:
    if not members:
        return Any
    if Any in members:
        return Any
    return functools.reduce(operator.or_, dict.fromkeys(members))


def _one_line(text: object) -> str:
    return " ".join(str(text).split())
