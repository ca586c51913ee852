"""Build actions from an environment's action JSON Schema (sans-IO).

``minimal_instance`` makes the smallest value the schema plausibly accepts: required
properties only, the first ``enum``/``const``, the lowest number allowed, the shortest
string allowed. ``invalid_variant`` turns a valid action into one the schema refuses.
Callers check both with a :class:`~openenv_anyio.core.Validator`: this is a heuristic, and a
schema it cannot satisfy (a ``pattern``, say) needs an explicit action (``--action``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

__all__ = ["UnsupportedSchema", "invalid_variant", "minimal_instance"]

_MAX_DEPTH = 32


class UnsupportedSchema(ValueError):
    """The generator cannot build a value for this schema."""


def _resolve(schema: Any, root: Mapping[str, Any]) -> Any:
    while isinstance(schema, Mapping) and isinstance(schema.get("$ref"), str):
        ref = schema["$ref"]
        if not ref.startswith("#/"):
            raise UnsupportedSchema(f"external $ref {ref!r}")
        node: Any = root
        for part in ref[2:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            if not isinstance(node, Mapping) or part not in node:
                raise UnsupportedSchema(f"unresolvable $ref {ref!r}")
            node = node[part]
        rest = {k: v for k, v in schema.items() if k != "$ref"}
        schema = {**node, **rest} if rest and isinstance(node, Mapping) else node
    return schema


def _merge_all_of(schema: Mapping[str, Any], root: Mapping[str, Any]) -> dict[str, Any]:
    """One schema with the ``allOf`` parts folded in (properties and required united)."""
    merged: dict[str, Any] = {k: v for k, v in schema.items() if k != "allOf"}
    for part in schema.get("allOf", []):
        part = _resolve(part, root)
        if isinstance(part, Mapping):
            merged["properties"] = {**merged.get("properties", {}), **part.get("properties", {})}
            merged["required"] = [*merged.get("required", []), *part.get("required", [])]
            merged.update({k: v for k, v in part.items() if k not in ("properties", "required")})
    return merged


def _number(schema: Mapping[str, Any], integer: bool) -> int | float:
    low = schema.get("minimum")
    exclusive = schema.get("exclusiveMinimum")
    high = schema.get("maximum", schema.get("exclusiveMaximum"))
    value: float = 0
    if isinstance(low, (int, float)):
        value = max(value, low) if high is None or high >= 0 else low
    if isinstance(exclusive, (int, float)):
        value = max(value, exclusive + (1 if integer else 0.5)) if value <= exclusive else value
    if isinstance(high, (int, float)) and value > high:
        value = high - (1 if "exclusiveMaximum" in schema and integer else 0)
    multiple = schema.get("multipleOf")
    if isinstance(multiple, (int, float)) and multiple > 0:
        value = math.ceil(value / multiple) * multiple
    return int(math.ceil(value)) if integer else float(value)


def minimal_instance(schema: Any, root: Mapping[str, Any] | None = None, _depth: int = 0) -> Any:
    """The smallest value that plausibly validates against ``schema``."""
    if _depth > _MAX_DEPTH:
        raise UnsupportedSchema("schema nests too deeply")
    if root is None:
        root = schema if isinstance(schema, Mapping) else {}
    schema = _resolve(schema, root)
    if schema is True or schema == {}:
        return {}
    if not isinstance(schema, Mapping):
        raise UnsupportedSchema("schema false accepts nothing")
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    if isinstance(schema.get("allOf"), list):
        return minimal_instance(_merge_all_of(schema, root), root, _depth + 1)
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list):
            for branch in schema[key]:
                try:
                    return minimal_instance(branch, root, _depth + 1)
                except UnsupportedSchema:
                    continue
            raise UnsupportedSchema(f"no {key} branch can be built")
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind is None:
        kind = "object" if "properties" in schema or "required" in schema else None
    if kind == "object":
        properties = schema.get("properties", {})
        return {
            name: minimal_instance(properties.get(name, True), root, _depth + 1) for name in schema.get("required", [])
        }
    if kind == "array":
        items = schema.get("items", True)
        return [minimal_instance(items, root, _depth + 1) for _ in range(int(schema.get("minItems", 0)))]
    if kind == "string":
        if "pattern" in schema or "format" in schema:
            if "default" in schema:
                return schema["default"]
            raise UnsupportedSchema("string with a pattern or format")
        return "a" * int(schema.get("minLength", 0))
    if kind in ("integer", "number"):
        return _number(schema, kind == "integer")
    if kind == "boolean":
        return False
    if kind == "null":
        return None
    if "default" in schema:
        return schema["default"]
    return {}


def invalid_variant(schema: Any, valid: Mapping[str, Any]) -> dict[str, Any] | None:
    """A copy of the valid action ``valid`` that breaks ``schema``, or None if none is found.

    Tried in turn: drop a required property, add a property when extra ones are forbidden,
    give a typed property a value of the wrong type.
    """
    root = schema if isinstance(schema, Mapping) else {}
    schema = _resolve(schema, root)
    if not isinstance(schema, Mapping):
        return None
    if isinstance(schema.get("allOf"), list):
        schema = _merge_all_of(schema, root)
    required = [name for name in schema.get("required", []) if name in valid]
    if required:
        return {k: v for k, v in valid.items() if k != required[0]}
    if schema.get("additionalProperties") is False:
        return {**valid, "__conformance_unexpected__": 1}
    for name, prop in schema.get("properties", {}).items():
        prop = _resolve(prop, root)
        kind = prop.get("type") if isinstance(prop, Mapping) else None
        if kind in ("integer", "number", "boolean", "array", "object", "null"):
            return {**valid, name: "not-a-" + str(kind)}
        if kind == "string":
            return {**valid, name: 12345}
    return None
