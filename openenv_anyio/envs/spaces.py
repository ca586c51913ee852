"""Gymnasium spaces as JSON: a JSON Schema per space, and JSON values checked into actions.

Two checks guard a step, and both name the space:

* The **schema** (:func:`space_schema`) is what ``GET /schema`` shows and what a server
  validates a step's data against before the environment sees it (``VALIDATION_ERROR``
  with a JSON pointer). It catches wrong JSON types, wrong array lengths and nesting,
  integers where the space is discrete, and values outside the bounds whenever the bounds
  are the same for every element. Every level carries ``x-error-label`` (the space's text,
  e.g. ``action space Discrete(2)``) so that the validator's messages name the space.
* The **code** (:func:`action_from_json`) converts a JSON value into what the space holds
  and raises :class:`ActionOutsideSpace` for anything the schema could not express:
  per-element bounds that differ between elements (the schema then states the loosest
  envelope), bounds compared in the space's own dtype (a float32 bound), Tuple members,
  Text characters, and the spaces without an exact schema (Graph, Sequence, OneOf).

Schemas keep to the subset that reads the same in draft-07 and 2020-12: no ``prefixItems``
and no array-form ``items``. A Box or MultiDiscrete is nested arrays, one level per
dimension, with ``minItems`` = ``maxItems``; an infinite bound is no bound.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

import numpy as np
from gymnasium import spaces

from ..core.validation import ERROR_LABEL
from .errors import ActionOutsideSpace

__all__ = ["action_from_json", "describe_space", "space_schema"]


def describe_space(space: spaces.Space[Any]) -> str:
    """The space's short text, as Gymnasium prints it (``Discrete(2)``, ``Box(-2.0, 2.0, (1,), float32)``)."""
    return " ".join(repr(space).split())  # numpy prints multi-dimensional arrays on several lines


def space_schema(space: spaces.Space[Any], *, role: str = "action", nullable_floats: bool = False) -> dict[str, Any]:
    """A JSON Schema accepting the JSON form of the values of ``space``.

    ``role`` words the error label (``action space ...``). ``nullable_floats`` lets float
    elements be ``null``, the JSON form of a non-finite float (see ``jsonable``); it is for
    observation schemas, never for actions.
    """
    label = f"{role} space {describe_space(space)}"
    schema = _schema(space, label, role, nullable_floats)
    schema[ERROR_LABEL] = label
    return schema


def _schema(space: spaces.Space[Any], label: str, role: str, nullable: bool) -> dict[str, Any]:
    if isinstance(space, spaces.Discrete):
        start = int(space.start)
        return {"type": "integer", "minimum": start, "maximum": start + int(space.n) - 1}
    if isinstance(space, spaces.Box):
        return _nested_array(space.shape, _box_element(space, nullable), label)
    if isinstance(space, spaces.MultiDiscrete):
        element = {
            "type": "integer",
            "minimum": int(space.start.min()),
            "maximum": int((space.start + space.nvec - 1).max()),
        }
        return _nested_array(space.shape, element, label)
    if isinstance(space, spaces.MultiBinary):
        return _nested_array(space.shape, {"type": "integer", "minimum": 0, "maximum": 1}, label)
    if isinstance(space, spaces.Dict):
        return {
            "type": "object",
            "properties": {
                key: space_schema(sub, role=role, nullable_floats=nullable) for key, sub in space.spaces.items()
            },
            "required": list(space.spaces),
            "additionalProperties": False,
        }
    if isinstance(space, spaces.Tuple):
        members = [space_schema(sub, role=role, nullable_floats=nullable) for sub in space.spaces]
        schema: dict[str, Any] = {"type": "array", "minItems": len(members), "maxItems": len(members)}
        if members and all(member == members[0] for member in members):
            schema["items"] = members[0]
        return schema
    if isinstance(space, spaces.Text):
        return {"type": "string", "minLength": int(space.min_length), "maxLength": int(space.max_length)}
    return {"description": f"a value of {describe_space(space)}, checked by the environment"}


def _box_element(space: spaces.Box, nullable: bool) -> dict[str, Any]:
    kind = space.dtype.kind
    if kind == "b":
        return {"type": "boolean"}
    element: dict[str, Any] = {"type": "integer" if kind in "iu" else "number"}
    low, high = np.min(space.low), np.max(space.high)
    if np.isfinite(low):
        element["minimum"] = int(low) if kind in "iu" else float(low)
    if np.isfinite(high):
        element["maximum"] = int(high) if kind in "iu" else float(high)
    if nullable and kind == "f":
        element["type"] = ["number", "null"]
    return element


def _nested_array(shape: Sequence[int], element: dict[str, Any], label: str) -> dict[str, Any]:
    schema = dict(element)
    for size in reversed(shape):
        schema[ERROR_LABEL] = label
        schema = {"type": "array", "items": schema, "minItems": int(size), "maxItems": int(size)}
    return schema


def action_from_json(space: spaces.Space[Any], value: Any, *, loc: tuple[str | int, ...] = ("action",)) -> Any:
    """The member of ``space`` that the JSON ``value`` stands for; :class:`ActionOutsideSpace` if none.

    ``loc`` is where ``value`` sits in the step's data; errors point inside it.
    """
    text = describe_space(space)
    if isinstance(space, spaces.Discrete):
        number = _integer(value, text, loc)
        start = int(space.start)
        if not start <= number < start + int(space.n):
            raise ActionOutsideSpace(f"{number} is not in [{start}, {start + int(space.n) - 1}]", space=text, loc=loc)
        return number
    if isinstance(space, (spaces.Box, spaces.MultiDiscrete, spaces.MultiBinary)):
        return _array_member(space, value, text, loc)
    if isinstance(space, spaces.Dict):
        if not isinstance(value, Mapping):
            raise ActionOutsideSpace(f"expected an object, got {_kind(value)}", space=text, loc=loc)
        missing = [key for key in space.spaces if key not in value]
        extra = [key for key in value if key not in space.spaces]
        if missing or extra:
            problem = f"missing key {missing[0]!r}" if missing else f"unexpected key {extra[0]!r}"
            raise ActionOutsideSpace(problem, space=text, loc=loc)
        return {key: action_from_json(sub, value[key], loc=(*loc, key)) for key, sub in space.spaces.items()}
    if isinstance(space, spaces.Tuple):
        if not isinstance(value, list) or len(value) != len(space.spaces):
            raise ActionOutsideSpace(f"expected an array of {len(space.spaces)} items", space=text, loc=loc)
        return tuple(
            action_from_json(sub, item, loc=(*loc, index))
            for index, (sub, item) in enumerate(zip(space.spaces, value, strict=True))
        )
    if not space.contains(value):
        raise ActionOutsideSpace(f"{_show(value)} is not a member", space=text, loc=loc)
    return value


def _array_member(
    space: spaces.Box | spaces.MultiDiscrete | spaces.MultiBinary,
    value: Any,
    text: str,
    loc: tuple[str | int, ...],
) -> np.ndarray:
    kind = space.dtype.kind
    leaves: list[Any] = []
    _collect(value, tuple(space.shape), leaves, loc, text)

    def refuse(index: int, fault: str) -> ActionOutsideSpace:
        return ActionOutsideSpace(fault, space=text, loc=_leaf_loc(loc, space.shape, index))

    for index, leaf in enumerate(leaves):
        if kind == "b":
            if not isinstance(leaf, bool):
                raise refuse(index, f"expected a boolean, got {_kind(leaf)}")
        elif kind in "iu":
            if not _is_integral(leaf):
                raise refuse(index, f"expected an integer, got {_kind(leaf)}")
            leaves[index] = int(leaf)
        elif isinstance(leaf, bool) or not isinstance(leaf, (int, float)):
            raise refuse(index, f"expected a number, got {_kind(leaf)}")
    if kind in "iu":
        info = np.iinfo(cast(Any, space.dtype))
        for index, leaf in enumerate(leaves):
            if not info.min <= leaf <= info.max:
                raise refuse(index, f"{leaf} does not fit {space.dtype}")
    with np.errstate(over="ignore"):
        array = np.asarray(leaves, dtype=space.dtype).reshape(space.shape)
    if kind == "f" and not np.isfinite(array).all():  # JSON numbers are finite: this overflowed the dtype
        index = int(np.flatnonzero(~np.isfinite(array))[0])
        raise refuse(index, f"{_show(leaves[index])} does not fit {space.dtype}")
    low: Any
    high: Any
    if isinstance(space, spaces.Box):
        low, high = space.low, space.high
    elif isinstance(space, spaces.MultiDiscrete):
        low, high = space.start, space.start + space.nvec - 1
    else:
        low, high = 0, 1
    outside = np.flatnonzero(~((array >= low) & (array <= high)))
    if outside.size:
        index = int(outside[0])
        flat_low = np.broadcast_to(low, space.shape).reshape(-1)[index]
        flat_high = np.broadcast_to(high, space.shape).reshape(-1)[index]
        raise refuse(index, f"{_show(leaves[index])} is not in [{flat_low}, {flat_high}]")
    return array


def _collect(value: Any, shape: tuple[int, ...], out: list[Any], loc: tuple[str | int, ...], text: str) -> None:
    if not shape:
        if isinstance(value, (list, dict)):
            raise ActionOutsideSpace(f"expected a single value, got {_kind(value)}", space=text, loc=loc)
        out.append(value)
        return
    if not isinstance(value, list) or len(value) != shape[0]:
        raise ActionOutsideSpace(f"expected an array of {shape[0]} items, got {_kind(value)}", space=text, loc=loc)
    for index, item in enumerate(value):
        _collect(item, shape[1:], out, (*loc, index), text)


def _is_integral(value: Any) -> bool:
    """An int, or a float with no fractional part (JSON does not tell ``1`` from ``1.0``); not a bool."""
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and value.is_integer())


def _integer(value: Any, text: str, loc: tuple[str | int, ...]) -> int:
    if not _is_integral(value):
        raise ActionOutsideSpace(f"expected an integer, got {_kind(value)}", space=text, loc=loc)
    return int(value)


def _leaf_loc(loc: tuple[str | int, ...], shape: Sequence[int], flat_index: int) -> tuple[str | int, ...]:
    if not shape:
        return loc
    return (*loc, *(int(i) for i in np.unravel_index(flat_index, tuple(shape))))


def _kind(value: Any) -> str:
    if isinstance(value, list):
        return f"an array of {len(value)} items"
    if isinstance(value, dict):
        return "an object"
    return _show(value)


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
