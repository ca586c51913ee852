"""The frame schemas mean the same in JSON Schema draft-07 and 2020-12.

The AsyncAPI document declares its payloads as draft-07 schemas (the format AsyncAPI
guarantees) while the files declare 2020-12. That is sound only while every schema keeps to
the keywords both drafts define alike; this walk allows exactly that subset.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from .spec_copy import VERSION_DIR

#: Keywords with the same meaning in draft-07 and 2020-12.
_COMMON = frozenset(
    {
        "$schema",
        "$id",
        "$ref",
        "$comment",
        "title",
        "description",
        "default",
        "examples",
        "type",
        "enum",
        "const",
        "properties",
        "required",
        "additionalProperties",
        "patternProperties",
        "propertyNames",
        "minProperties",
        "maxProperties",
        "items",
        "contains",
        "minItems",
        "maxItems",
        "uniqueItems",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "minLength",
        "maxLength",
        "pattern",
        "format",
        "allOf",
        "anyOf",
        "oneOf",
        "not",
        "if",
        "then",
        "else",
    }
)
#: Only at a document's root: holds subschemas reached by "$ref": "#/$defs/..." (a plain JSON
#: pointer, which resolves the same in draft-07, where "$defs" is just an unknown member).
_ROOT_ONLY = frozenset({"$defs"})
_SCHEMA_MAPS = ("properties", "patternProperties", "$defs")
_SCHEMA_VALUES = ("additionalProperties", "propertyNames", "items", "contains", "not", "if", "then", "else")
_SCHEMA_LISTS = ("allOf", "anyOf", "oneOf")

SCHEMA_FILES = sorted(p for p in VERSION_DIR.rglob("*.json") if "examples" not in p.relative_to(VERSION_DIR).parts)


def subschemas(schema: Any, where: str) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Every schema object below (and including) ``schema``, with its JSON pointer."""
    if not isinstance(schema, Mapping):
        return
    yield where, schema
    for keyword in _SCHEMA_MAPS:
        for name, member in (schema.get(keyword) or {}).items():
            yield from subschemas(member, f"{where}/{keyword}/{name}")
    for keyword in _SCHEMA_VALUES:
        yield from subschemas(schema.get(keyword), f"{where}/{keyword}")
    for keyword in _SCHEMA_LISTS:
        for index, member in enumerate(schema.get(keyword) or ()):
            yield from subschemas(member, f"{where}/{keyword}/{index}")


def keyword_faults(document: Mapping[str, Any]) -> list[str]:
    """Why ``document`` would not mean the same in draft-07, one line per fault."""
    faults = []
    for where, schema in subschemas(document, ""):
        allowed = _COMMON | (_ROOT_ONLY if where == "" else frozenset())
        # "x-" members are data for tools (the close-code registry's sender and resumability):
        # no validation meaning in either draft, both ignore unknown keywords alike.
        for keyword in sorted(key for key in set(schema) - allowed if not key.startswith("x-")):
            faults.append(f"{where or '/'}: keyword {keyword!r} is not in the draft-07/2020-12 common subset")
        if "$ref" in schema and len(schema) > 1:
            faults.append(f"{where or '/'}: $ref has siblings {sorted(set(schema) - {'$ref'})} (draft-07 ignores them)")
        if isinstance(schema.get("items"), list):
            faults.append(f"{where}/items: the array form of items means prefixItems in 2020-12")
    return faults


def test_the_walk_sees_the_schemas() -> None:
    assert len(SCHEMA_FILES) >= 12
    walked = [where for path in SCHEMA_FILES for where, _ in subschemas(json.loads(path.read_text()), "")]
    assert "/properties/episode_state/properties/action_logs/items" in walked
    assert "/$defs/action_log/properties/timestamp" in walked


@pytest.mark.parametrize("path", SCHEMA_FILES, ids=lambda p: p.relative_to(VERSION_DIR).as_posix())
def test_schema_uses_only_the_common_keyword_subset(path: Path) -> None:
    assert keyword_faults(json.loads(path.read_text(encoding="utf-8"))) == []


@pytest.mark.parametrize(
    ("schema", "fault"),
    [
        ({"properties": {"a": {"prefixItems": [{}]}}}, "/properties/a: keyword 'prefixItems'"),
        ({"properties": {"a": {"$ref": "x.json", "description": "d"}}}, "/properties/a: $ref has siblings"),
        ({"items": [{"type": "string"}]}, "/items: the array form"),
        ({"allOf": [{"then": {"dependentRequired": {}}}]}, "/allOf/0/then: keyword 'dependentRequired'"),
        ({"properties": {"a": {"$defs": {}}}}, "/properties/a: keyword '$defs'"),
    ],
)
def test_the_check_catches_draft_differences(schema: dict[str, Any], fault: str) -> None:
    assert any(line.startswith(fault) for line in keyword_faults(schema)), keyword_faults(schema)
