"""numpy values and friends -> JSON values (``openenv_anyio.envs.jsonable``)."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pytest
from pydantic import BaseModel

from openenv_anyio.core import dumps
from openenv_anyio.envs.jsonable import to_jsonable


class Point(BaseModel):
    x: int
    y: float


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (np.array([1, 2, 3], dtype=np.int8), [1, 2, 3]),
        (np.array([[0.5, 1.5], [2.5, 3.5]], dtype=np.float32), [[0.5, 1.5], [2.5, 3.5]]),
        (np.array([True, False]), [True, False]),
        (np.array(4.0), 4.0),
        (np.zeros((0, 2)), []),
        (np.float32(0.25), 0.25),
        (np.int64(-7), -7),
        (np.uint8(255), 255),
        (np.bool_(True), True),
        ((1, np.int16(2)), [1, 2]),
        ({"a": np.arange(2), "b": {"c": (np.float64(1.0),)}}, {"a": [0, 1], "b": {"c": [1.0]}}),
        ({1: "one", np.int64(2): "two", None: 0}, {"1": "one", "2": "two", "None": 0}),
        (Point(x=1, y=np.float64(2.0)), {"x": 1, "y": 2.0}),
        (b"bytes", "bytes"),
        (None, None),
        ("text", "text"),
    ],
    ids=repr,
)
def test_values_become_plain_json(value: Any, expected: Any) -> None:
    result = to_jsonable(value)
    assert result == expected
    assert _plain(result), result
    assert json.loads(json.dumps(result, allow_nan=False)) == result


def test_numpy_scalars_become_python_numbers() -> None:
    assert type(to_jsonable(np.float32(1.5))) is float
    assert type(to_jsonable(np.int32(3))) is int
    assert type(to_jsonable(np.bool_(False))) is bool
    assert type(to_jsonable(np.array([1.5], np.float16))[0]) is float  # type: ignore[index]


def test_non_finite_floats_become_null_like_orjson_writes_them() -> None:
    value = {"scalar": float("inf"), "numpy": np.float32("nan"), "array": np.array([1.0, -np.inf, np.nan])}
    result = to_jsonable(value)
    assert result == {"scalar": None, "numpy": None, "array": [1.0, None, None]}
    assert json.loads(dumps(value)) == result  # the core encoder agrees


def test_unknown_objects_become_their_text() -> None:
    class Handle:
        def __str__(self) -> str:
            return "handle#3"

    assert to_jsonable({"h": Handle(), "c": np.array([1 + 2j])}) == {"h": "handle#3", "c": ["(1+2j)"]}


def _plain(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if value is None or type(value) in (bool, int, str):
        return True
    if type(value) is list:
        return all(_plain(item) for item in value)
    if type(value) is dict:
        return all(type(key) is str and _plain(item) for key, item in value.items())
    return False
