"""JSON Schemas -> Python signatures and docstrings (``openenv_anyio.integrations.tool_signature``),
checked against what ``transformers.utils.get_json_schema`` reads back."""

from __future__ import annotations

import inspect
from typing import Any, Literal

import pytest
from transformers.utils import get_json_schema

from openenv_anyio.integrations.tool_signature import (
    UnexpressibleSchema,
    tool_signature,
)


def _function(schema: dict[str, Any], name: str = "act", description: str = "Act.") -> Any:
    signature = tool_signature(name, description, schema)

    def function(self: Any, **kwargs: Any) -> str:
        return ""

    function.__name__ = name
    function.__doc__ = signature.docstring()
    function.__signature__ = signature.signature()  # type: ignore[attr-defined]
    function.__annotations__ = signature.annotations()
    return function


def test_types_map_both_ways() -> None:
    schema = {
        "type": "object",
        "properties": {
            "word": {"type": "string", "description": "a word"},
            "count": {"type": "integer", "default": 2},
            "ratio": {"type": "number"},
            "flag": {"type": "boolean"},
            "maybe": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
            "either": {"type": ["integer", "string"]},
            "mode": {"const": "fast"},
            "grid": {"type": "array", "items": {"type": "array", "items": {"type": "number"}}},
            "point": {"$ref": "#/$defs/Point"},
            "anything": {},
        },
        "required": ["word", "ratio"],
        "$defs": {"Point": {"type": "object", "additionalProperties": {"type": "integer"}}},
    }
    signature = tool_signature("act", "Act.", schema)
    annotations = {p.name: p.annotation for p in signature.parameters}
    assert annotations["word"] is str and annotations["count"] is int
    assert annotations["maybe"] == int | None and annotations["either"] == (int | str) | None
    assert annotations["mode"] == Literal["fast"] | None and annotations["anything"] is Any
    assert annotations["grid"] == list[list[float]] | None and annotations["point"] == dict[str, int] | None
    described = get_json_schema(_function(schema))["function"]
    properties = described["parameters"]["properties"]
    assert described["parameters"]["required"] == ["word", "ratio"]
    assert properties["word"] == {"type": "string", "description": "a word"}
    assert properties["count"] == {"type": "integer", "description": "the count value"}
    assert properties["grid"]["items"] == {"type": "array", "items": {"type": "number"}}
    assert properties["point"]["additionalProperties"] == {"type": "integer"}
    assert properties["mode"]["enum"] == ["fast"]
    parameters = list(inspect.signature(_function(schema)).parameters)
    assert parameters[:3] == ["self", "word", "ratio"]  # required first, keyword-only


def test_optional_parameters_left_at_none_are_not_sent() -> None:
    signature = tool_signature(
        "act", "", {"properties": {"a": {"type": "integer"}, "b": {"type": ["integer", "null"], "default": None}}}
    )
    assert signature.arguments({"a": None, "b": None}) == {"b": None}
    assert signature.arguments({"a": 1, "b": 2}) == {"a": 1, "b": 2}


@pytest.mark.parametrize(
    ("name", "schema", "message"),
    [
        (
            "act",
            {"properties": {"my-field": {"type": "string"}}},
            "tool 'act' parameter 'my-field': the name cannot be a Python keyword argument",
        ),
        (
            "act",
            {"properties": {"class": {"type": "string"}}},
            "tool 'act' parameter 'class': the name cannot be a Python keyword argument",
        ),
        ("act", {"type": "array"}, "tool 'act': its arguments are not an object with properties"),
        ("act", {"oneOf": [{"type": "object"}]}, "tool 'act': its arguments are not an object with properties"),
        (
            "act",
            {"properties": {"x": {"type": "decimal"}}},
            "tool 'act' parameter 'x': JSON Schema has no type 'decimal'",
        ),
        (
            "act",
            {"properties": {"x": {"$ref": "other.json#/X"}}},
            "tool 'act' parameter 'x': $ref 'other.json#/X' does not name a definition",
        ),
        (
            "act",
            {"properties": {"x": {"enum": [{"a": 1}]}}},
            "tool 'act' parameter 'x': an enum or const of other than",
        ),
        ("go-on", {"properties": {}}, "tool name 'go-on' cannot be a Python method name"),
        ("_hidden", {"properties": {}}, "tool name '_hidden' cannot be a Python method name"),
    ],
)
def test_what_no_signature_can_say_is_one_line(name: str, schema: dict[str, Any], message: str) -> None:
    with pytest.raises(UnexpressibleSchema) as caught:
        tool_signature(name, "", schema)
    assert str(caught.value).startswith(message) and "\n" not in str(caught.value)


def test_a_self_referencing_schema_ends() -> None:
    schema = {"properties": {"tree": {"$ref": "#/$defs/Node"}}, "$defs": {"Node": {"$ref": "#/$defs/Node"}}}
    assert tool_signature("act", "", schema).parameters[0].annotation is Any
