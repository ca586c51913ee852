"""Walk one schema into the rows of a fields table: a small model of what a frame contains.

Each member becomes a :class:`FieldRow` (path, type, required, constraints, default,
description); nested objects and array items are expanded below their parent with dotted
paths (``data.seed``, ``episode_state.action_logs[].timestamp``); ``$ref``s are followed.
Keywords the walk does not know are not dropped: they appear verbatim among the constraints.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin

from ..core import EXTENSIBLE
from ..core.frames import json_type
from .refs import RefResolver

__all__ = ["FieldRow", "FieldWalker", "json_text"]

_RECURSIVE = "recursive: the shape of an enclosing member"
#: Keywords that say what a schema is for, not what it allows.
_ANNOTATIONS = frozenset({"$schema", "$id", "$defs", "$comment", "title", "description", "examples"})
#: Keywords the walk turns into columns, nested rows or constraint phrases.
_HANDLED = frozenset(
    {
        "$ref",
        "type",
        "properties",
        "required",
        "additionalProperties",
        EXTENSIBLE,
        "items",
        "default",
        "const",
        "enum",
        "anyOf",
        "oneOf",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "minLength",
        "maxLength",
        "pattern",
        "format",
        "minItems",
        "maxItems",
        "uniqueItems",
        "minProperties",
        "maxProperties",
    }
)


def json_text(value: Any) -> str:
    """Compact, deterministic JSON text of a value (for constraint and default cells)."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(", ", ": "))


@dataclass(frozen=True, slots=True)
class FieldRow:
    """One member of a frame, at any depth.

    ``constraints`` are short phrases in which backticks mark code; ``see`` is the relative
    path of another documented schema this member's shape comes from (a ``$ref`` target).
    """

    path: str
    depth: int
    type: str
    required: bool
    constraints: tuple[str, ...]
    default: str | None
    description: str
    see: str | None = None


@dataclass(frozen=True, slots=True)
class _Resolved:
    schema: Mapping[str, Any]
    uri: str
    see: str | None
    description: str
    target: str | None  # absolute URI of the last $ref followed (None: no $ref)


class FieldWalker:
    """Turns schemas into field rows; ``documented`` are the documents that have a page."""

    def __init__(self, resolver: RefResolver, documented: frozenset[str]) -> None:
        self._resolver = resolver
        self._documented = documented

    def members(self, schema: Mapping[str, Any], uri: str) -> list[FieldRow]:
        """The rows of every member of the object ``schema`` (in the document ``uri``)."""
        return self._object_rows(schema, uri, prefix="", depth=0, seen=(uri,))

    def _object_rows(
        self, schema: Mapping[str, Any], uri: str, *, prefix: str, depth: int, seen: tuple[str, ...]
    ) -> list[FieldRow]:
        rows: list[FieldRow] = []
        required = set(schema.get("required", ()))
        for name, member in (schema.get("properties") or {}).items():
            rows.extend(self._member_rows(prefix + name, member, uri, name in required, depth, seen))
        extra = schema.get("additionalProperties")
        if isinstance(extra, Mapping) and extra:
            rows.extend(self._member_rows(prefix + "*", extra, uri, False, depth, seen))
        return rows

    def _member_rows(
        self, path: str, member: Any, uri: str, required: bool, depth: int, seen: tuple[str, ...]
    ) -> list[FieldRow]:
        if not isinstance(member, Mapping):  # a boolean schema
            allowed = "any value" if member else "never allowed"
            return [FieldRow(path, depth, "any", required, (allowed,), None, "")]
        resolved = self._follow(member, uri, where=path)
        schema = resolved.schema
        if resolved.target in seen:  # a recursive schema: stop here rather than loop
            return [FieldRow(path, depth, _type_of(schema), required, (_RECURSIVE,), None, resolved.description)]
        if resolved.target is not None:
            seen = (*seen, resolved.target)
        nested: list[FieldRow] = []
        constraints = _constraints(schema, summarise_values=resolved.see is not None)
        if "properties" in schema or isinstance(schema.get("additionalProperties"), Mapping):
            nested += self._object_rows(schema, resolved.uri, prefix=path + ".", depth=depth + 1, seen=seen)
        items = schema.get("items")
        if isinstance(items, Mapping):
            item = self._follow(items, resolved.uri, where=path + "[]")
            if item.target in seen:
                constraints += (f"items: {_RECURSIVE}",)
            elif "properties" in item.schema:
                item_seen = seen if item.target is None else (*seen, item.target)
                nested += self._object_rows(item.schema, item.uri, prefix=path + "[].", depth=depth + 1, seen=item_seen)
        row = FieldRow(
            path=path,
            depth=depth,
            type=self._type_text(schema, resolved.uri),
            required=required,
            constraints=constraints,
            default=json_text(schema["default"]) if "default" in schema else None,
            description=resolved.description,
            see=resolved.see,
        )
        return [row, *nested]

    def _follow(self, schema: Mapping[str, Any], uri: str, *, where: str) -> _Resolved:
        """Follow a chain of ``$ref``s; sibling keywords of a ``$ref`` override its target's."""
        see: str | None = None
        target: str | None = None
        description = str(schema.get("description") or "")
        merged: dict[str, Any] = {}
        current: Mapping[str, Any] = schema
        for _ in range(32):  # a chain longer than this is a loop of refs
            ref = current.get("$ref")
            for key, value in current.items():
                merged.setdefault(key, value)
            if not isinstance(ref, str):
                break
            node, new_uri = self._resolver.resolve(ref, uri, where=tuple(where.split(".")))
            target = urljoin(uri, ref).removesuffix("#")
            uri = new_uri
            relative = self._resolver.relative(uri)
            if relative in self._documented:
                see = see or relative
            if isinstance(node, Mapping):
                description = description or str(node.get("description") or node.get("title") or "")
            del merged["$ref"]
            current = node if isinstance(node, Mapping) else {}
        return _Resolved(merged, uri, see, description, target)

    def _type_text(self, schema: Mapping[str, Any], uri: str) -> str:
        text = _type_of(schema)
        items = schema.get("items")
        if isinstance(items, Mapping) and "array" in text:
            item = self._follow(items, uri, where="items")
            text = text.replace("array", f"array of {_type_of(item.schema)}", 1)
        return text


def _unique(values: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(values))


def _type_of(schema: Mapping[str, Any]) -> str:
    """The JSON type(s) a schema allows, as ``a | b`` text."""
    declared = schema.get("type")
    if isinstance(declared, str):
        return declared
    if isinstance(declared, list):
        return " | ".join(str(t) for t in declared)
    if "const" in schema:
        return json_type(schema["const"])
    if isinstance(schema.get("enum"), list):
        return " | ".join(_unique([json_type(v) for v in schema["enum"]]))
    choices = schema.get("anyOf") or schema.get("oneOf")
    if isinstance(choices, list) and all(isinstance(c, Mapping) for c in choices):
        return " | ".join(_unique([_type_of(c) for c in choices]))
    return "any"


def _const_values(schema: Mapping[str, Any]) -> list[Any] | None:
    """The values of an ``anyOf``/``oneOf`` made only of ``const`` branches, else None."""
    choices = schema.get("anyOf") or schema.get("oneOf")
    if isinstance(choices, list) and choices and all(isinstance(c, Mapping) and "const" in c for c in choices):
        return [c["const"] for c in choices]
    return None


def _constraints(schema: Mapping[str, Any], *, summarise_values: bool) -> tuple[str, ...]:
    """Short phrases for every constraint keyword of ``schema`` (backticks mark code)."""
    phrases: list[str] = []
    if "const" in schema:
        phrases.append(f"exactly `{json_text(schema['const'])}`")
    values = schema.get("enum") if isinstance(schema.get("enum"), list) else _const_values(schema)
    if values is not None:
        if summarise_values:
            phrases.append(f"one of {len(values)} values")
        else:
            phrases.append("one of " + ", ".join(f"`{json_text(v)}`" for v in values))
    bounds = (
        ("minimum", "≥ {}"),
        ("exclusiveMinimum", "> {}"),
        ("maximum", "≤ {}"),
        ("exclusiveMaximum", "< {}"),
        ("multipleOf", "multiple of {}"),
        ("minLength", "at least {} characters"),
        ("maxLength", "at most {} characters"),
        ("pattern", "matches `{}`"),
        ("format", "format `{}`"),
        ("minItems", "at least {} items"),
        ("maxItems", "at most {} items"),
        ("minProperties", "at least {} members"),
        ("maxProperties", "at most {} members"),
    )
    for keyword, template in bounds:
        if keyword in schema:
            phrases.append(template.format(schema[keyword]))
    if schema.get("uniqueItems") is True:
        phrases.append("items unique")
    extra = schema.get("additionalProperties")
    if extra is False:
        phrases.append("no other members")
    elif extra is True and schema.get(EXTENSIBLE) is True:
        phrases.append("open: receivers ignore members they do not know, senders send only these (COMPAT-1, COMPAT-2)")
    elif extra is True:
        phrases.append("other members allowed")
    choices = schema.get("anyOf") or schema.get("oneOf")
    if isinstance(choices, list) and values is None:
        phrases.append(f"{'any' if 'anyOf' in schema else 'exactly one'} of: `{json_text(choices)}`")
    for keyword in sorted(set(schema) - _HANDLED - _ANNOTATIONS):
        phrases.append(f"`{keyword}`: `{json_text(schema[keyword])}`")
    return tuple(phrases)
