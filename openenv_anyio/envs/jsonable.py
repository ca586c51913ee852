"""Turn what environments return (numpy arrays and scalars, tuples, pydantic models) into JSON values.

JSON has no NaN or Infinity: a non-finite float becomes ``null``, the same choice orjson and
JavaScript's ``JSON.stringify`` make, so a value reads the same whichever encoder sends it.
Mapping keys become strings. An object that is none of the known kinds becomes its ``str``
(an ``info`` dict may carry anything; a step must not fail because of a debugging aid).
numpy is never imported here: its values are recognised by their methods, so the module
works without it.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping
from typing import Any, TypeAlias

__all__ = ["JSONValue", "to_jsonable"]

JSONValue: TypeAlias = None | bool | int | float | str | list["JSONValue"] | dict[str, "JSONValue"]

_PLAIN = (str, int, bool, type(None))


def to_jsonable(value: Any) -> JSONValue:
    """A JSON value equal to ``value``: arrays -> nested lists, numpy scalars -> numbers."""
    if isinstance(value, _PLAIN):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {
            key if isinstance(key, str) else str(to_jsonable(key)): to_jsonable(item) for key, item in value.items()
        }
    if isinstance(value, (list, tuple, set, frozenset)):
        return [to_jsonable(item) for item in value]
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        if isinstance(value, numpy.ndarray):
            return _array_to_jsonable(numpy, value)
        if isinstance(value, numpy.generic):
            return to_jsonable(value.item())
    dump = getattr(value, "model_dump", None)  # pydantic models
    if callable(dump):
        return to_jsonable(dump())
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", errors="replace")
    return str(value)


def _array_to_jsonable(numpy: Any, array: Any) -> JSONValue:
    kind = array.dtype.kind
    if kind in "biu":  # bool, signed and unsigned integers: tolist() is already JSON
        listed: JSONValue = array.tolist()
        return listed
    if kind == "f":
        finite = numpy.isfinite(array)
        if finite.all():
            whole: JSONValue = array.tolist()
            return whole
        cleaned = array.astype(object)
        cleaned[~finite] = None
        nulled: JSONValue = cleaned.tolist()
        return nulled
    return to_jsonable(array.tolist())
