"""The sans-IO action generator: minimal valid instances and invalid variants, checked
with the core's Validator (the same check the runner applies)."""

from __future__ import annotations

from typing import Any

import pytest

from openenv_anyio.conformance.actions import UnsupportedSchema, invalid_variant, minimal_instance
from openenv_anyio.core import Validator

SCHEMAS: dict[str, dict[str, Any]] = {
    "pydantic-like with $defs": {
        "$defs": {"Move": {"enum": ["left", "right"], "type": "string"}},
        "additionalProperties": False,
        "properties": {
            "move": {"$ref": "#/$defs/Move"},
            "metadata": {"type": "object"},
            "power": {"type": "integer", "minimum": 3, "maximum": 9},
            "name": {"type": "string", "minLength": 2},
        },
        "required": ["move", "power", "name"],
        "type": "object",
    },
    "nullable anyOf and exclusive minimum": {
        "type": "object",
        "properties": {
            "x": {"anyOf": [{"type": "number", "exclusiveMinimum": 0.5}, {"type": "null"}]},
            "n": {"type": "integer", "exclusiveMinimum": 4, "multipleOf": 3},
            "flag": {"type": "boolean"},
        },
        "required": ["x", "n", "flag"],
    },
    "nested object, array with minItems, const": {
        "type": "object",
        "properties": {
            "kind": {"const": "click"},
            "at": {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]},
            "keys": {"type": "array", "items": {"type": "string"}, "minItems": 2},
        },
        "required": ["kind", "at", "keys"],
    },
    "negative range": {
        "type": "object",
        "properties": {"delta": {"type": "number", "maximum": -2}},
        "required": ["delta"],
    },
    "allOf": {
        "allOf": [
            {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
            {"properties": {"b": {"type": "string"}}, "required": ["b"]},
        ]
    },
}


@pytest.mark.parametrize("name", list(SCHEMAS))
def test_minimal_instance_validates(name: str) -> None:
    schema = SCHEMAS[name]
    action = minimal_instance(schema)
    assert Validator(schema).is_valid(action), action


@pytest.mark.parametrize("name", list(SCHEMAS))
def test_invalid_variant_is_refused(name: str) -> None:
    schema = SCHEMAS[name]
    action = minimal_instance(schema)
    broken = invalid_variant(schema, action)
    assert broken is not None and not Validator(schema).is_valid(broken)


def test_minimal_is_minimal() -> None:
    assert minimal_instance(SCHEMAS["pydantic-like with $defs"]) == {"move": "left", "power": 3, "name": "aa"}


def test_open_schema_gives_empty_object_and_no_invalid_variant() -> None:
    assert minimal_instance({"type": "object"}) == {}
    assert invalid_variant({"type": "object"}, {}) is None


def test_extra_key_when_nothing_is_required() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": False}
    assert invalid_variant(schema, {}) == {"__conformance_unexpected__": 1}


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"id": {"type": "string", "pattern": "^[a-f]{8}$"}}, "required": ["id"]},
        {"$ref": "https://example.org/elsewhere.json"},
        {"type": "object", "properties": {"a": {"$ref": "#/$defs/missing"}}, "required": ["a"]},
        False,
    ],
)
def test_unsupported_schemas_raise(schema: Any) -> None:
    with pytest.raises(UnsupportedSchema):
        minimal_instance(schema)
