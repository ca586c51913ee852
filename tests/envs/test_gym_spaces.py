"""Gymnasium spaces -> JSON Schemas, and JSON values -> actions (``openenv_anyio.envs.spaces``).

The two checks of a step (WS-STEP-2): the schema a server validates with (VALIDATION_ERROR
with a JSON pointer, naming the space), and the adapter's own exact check for what a schema
cannot express (per-element bounds, dtype limits, Tuple members).
"""

from __future__ import annotations

from typing import Any

import jsonschema
import numpy as np
import pytest
from gymnasium import spaces

from openenv_anyio.core import ErrorCode, ProtocolError, Validator
from openenv_anyio.envs.errors import ActionOutsideSpace
from openenv_anyio.envs.gymnasium import GymnasiumEnv
from openenv_anyio.envs.jsonable import to_jsonable
from openenv_anyio.envs.spaces import action_from_json, describe_space, space_schema

# (space, JSON values that are members, JSON values that are not AND that the schema refuses)
CASES: list[tuple[spaces.Space[Any], list[Any], list[Any]]] = [
    (spaces.Discrete(2), [0, 1, 1.0], [2, -1, 0.5, True, "1", None, [0]]),
    (spaces.Discrete(3, start=-1), [-1, 0, 1], [-2, 2]),
    (
        spaces.Box(-2.0, 2.0, (1,), np.float32),
        [[0.5], [-2], [2.0]],
        [0.5, [2.5], [-3], [0, 0], [], ["1"], [True], [None]],
    ),
    (
        spaces.Box(0, 10, (2, 3), np.int64),
        [[[0, 1, 2], [3, 4, 10]]],
        [[[0, 1, 2]], [[0, 1, 2], [3, 4, 11]], [[0, 1, 2], [3, 4, 0.5]]],
    ),
    (spaces.Box(-np.inf, np.inf, (2,), np.float64), [[1e300, -1e300]], [[1, "x"]]),
    (spaces.MultiDiscrete([3, 3]), [[0, 2], [2, 0]], [[0, 3], [-1, 0], [0], [0, 1, 1], [0.5, 1]]),
    (
        spaces.MultiDiscrete([[2, 2], [2, 2]], start=[[1, 1], [1, 1]]),
        [[[1, 2], [2, 1]]],
        [[[0, 2], [2, 1]], [1, 2]],
    ),
    (spaces.MultiBinary(3), [[0, 1, 1]], [[0, 1, 2], [0, 1], [True, False, True]]),
    (
        spaces.Dict({"move": spaces.Discrete(4), "speed": spaces.Box(0, 1, (1,))}),
        [{"move": 3, "speed": [0.5]}],
        [{"move": 4, "speed": [0.5]}, {"move": 1}, {"move": 1, "speed": [0.5], "x": 1}, [1, [0.5]]],
    ),
    (spaces.Tuple([spaces.Discrete(2), spaces.Discrete(2)]), [[0, 1]], [[0, 2], [0], [0, 1, 1]]),
    (spaces.Text(5, min_length=1), ["hello", "a"], ["", "toolong", 5]),
]

IDS = [describe_space(space) for space, _, _ in CASES]


def _validator(space: spaces.Space[Any]) -> Validator:
    return Validator(GymnasiumEnv.step_schema(space))


@pytest.mark.parametrize(("space", "good", "bad"), CASES, ids=IDS)
def test_members_pass_both_checks(space: spaces.Space[Any], good: list[Any], bad: list[Any]) -> None:
    validator = _validator(space)
    for value in good:
        data = {"action": value}
        assert validator.is_valid(data) and validator.reference_is_valid(data), value
        assert space.contains(action_from_json(space, value)), value


@pytest.mark.parametrize(("space", "good", "bad"), CASES, ids=IDS)
def test_non_members_fail_both_checks_naming_the_space(
    space: spaces.Space[Any], good: list[Any], bad: list[Any]
) -> None:
    validator = _validator(space)
    for value in bad:
        data = {"action": value}
        assert not validator.is_valid(data) and not validator.reference_is_valid(data), value
        with pytest.raises(ProtocolError) as caught:
            validator.check(data, what="action")
        assert caught.value.code is ErrorCode.VALIDATION_ERROR
        assert caught.value.pointer.startswith("/action")
        if not isinstance(space, (spaces.Dict, spaces.Tuple)):  # members of composites name their own space
            assert f"action space {describe_space(space)}" in caught.value.message, caught.value.message
        with pytest.raises(ActionOutsideSpace) as outside:
            action_from_json(space, value)
        assert isinstance(outside.value, ValueError)
        assert outside.value.code is ErrorCode.VALIDATION_ERROR
        assert outside.value.pointer.startswith("/action")
        assert "action space" in outside.value.message


def test_the_schema_error_points_at_the_element_and_names_the_space() -> None:
    validator = _validator(spaces.Box(-2.0, 2.0, (2,), np.float32))
    with pytest.raises(ProtocolError) as caught:
        validator.check({"action": [0.0, 2.5]}, what="action")
    assert caught.value.pointer == "/action/1"
    assert caught.value.message == (
        "Invalid action at /action/1: 2.5 is greater than the maximum of 2.0 "
        "(action space Box(-2.0, 2.0, (2,), float32))"
    )
    assert caught.value.errors is not None and [str(part) for part in caught.value.errors[0]["loc"]] == [
        "action",
        "1",
    ]


def test_the_code_check_points_at_the_element_too() -> None:
    with pytest.raises(ActionOutsideSpace) as caught:
        action_from_json(spaces.Box(-1, 1, (2, 2)), [[0, 0], [0, 3]])
    assert caught.value.pointer == "/action/1/1"
    assert caught.value.space == "Box(-1.0, 1.0, (2, 2), float32)"
    assert caught.value.error_data()["errors"][0]["loc"] == ["action", 1, 1]


@pytest.mark.parametrize(
    ("space", "value"),
    [
        # per-element bounds that differ: the schema states the envelope, the code is exact
        (spaces.MultiDiscrete([2, 5]), [3, 0]),
        (spaces.Box(np.array([-1.0, -5.0]), np.array([1.0, 5.0]), dtype=np.float64), [3.0, 0.0]),
        # beyond the dtype: a float32 overflow (an unbounded float Box has no schema bounds)
        (spaces.Box(-np.inf, np.inf, (1,), np.float32), [1e300]),
        # a Tuple of different members has no exact schema
        (spaces.Tuple([spaces.Discrete(2), spaces.Box(0, 1, (1,))]), [5, [0.5]]),
    ],
    ids=["multidiscrete-uneven", "box-uneven", "float32-overflow", "tuple-mixed"],
)
def test_what_only_the_code_check_catches(space: spaces.Space[Any], value: Any) -> None:
    assert _validator(space).is_valid({"action": value})
    with pytest.raises(ActionOutsideSpace):
        action_from_json(space, value)


def test_integers_beyond_the_dtype_are_refused_before_numpy_sees_them() -> None:
    with pytest.raises(ActionOutsideSpace, match="does not fit int64"):
        action_from_json(spaces.Box(-np.inf, np.inf, (1,), np.int64), [2**70])


def test_uneven_bounds_give_the_envelope_and_infinite_bounds_give_none() -> None:
    schema = space_schema(spaces.MultiDiscrete([2, 5], start=[1, 0]))
    assert (schema["items"]["minimum"], schema["items"]["maximum"]) == (0, 4)
    cartpole_like = space_schema(
        spaces.Box(np.array([-4.8, -np.inf], np.float32), np.array([4.8, np.inf], np.float32), dtype=np.float32)
    )
    assert "minimum" not in cartpole_like["items"] and "maximum" not in cartpole_like["items"]
    assert space_schema(spaces.Box(0, 255, (2,), np.uint8))["items"] == {
        "type": "integer",
        "minimum": 0,
        "maximum": 255,
        "x-error-label": "action space Box(0, 255, (2,), uint8)",
    }


def test_discrete_schema_is_exact() -> None:
    assert space_schema(spaces.Discrete(4, start=2)) == {
        "type": "integer",
        "minimum": 2,
        "maximum": 5,
        "x-error-label": "action space Discrete(4, start=2)",
    }


def test_observation_schemas_let_floats_be_null() -> None:
    schema = space_schema(spaces.Box(-1, 1, (2,)), role="observation", nullable_floats=True)
    assert Validator(schema).is_valid([None, 0.5])
    assert not Validator(space_schema(spaces.Box(-1, 1, (2,)))).is_valid([None, 0.5])
    assert schema["x-error-label"].startswith("observation space Box")


@pytest.mark.parametrize(("space", "good", "bad"), CASES, ids=IDS)
def test_schemas_read_the_same_in_draft_07(space: spaces.Space[Any], good: list[Any], bad: list[Any]) -> None:
    """The schemas keep to the subset where draft-07 and 2020-12 agree (no prefixItems)."""
    schema = GymnasiumEnv.step_schema(space)
    jsonschema.Draft7Validator.check_schema(schema)
    draft7 = jsonschema.Draft7Validator(schema)
    latest = jsonschema.Draft202012Validator(schema)
    for value in [*good, *bad]:
        assert draft7.is_valid({"action": value}) == latest.is_valid({"action": value}), value
    assert "prefixItems" not in str(schema)


@pytest.mark.parametrize(
    "space",
    [
        spaces.Discrete(7, start=3),
        spaces.Box(-3, 3, (2, 2), np.float32),
        spaces.Box(0, 9, (3,), np.int32),
        spaces.MultiDiscrete([[2, 3], [4, 5]]),
        spaces.MultiBinary([2, 2]),
        spaces.Dict({"a": spaces.Discrete(3), "b": spaces.Box(-1, 1, (2,), np.float64)}),
        spaces.Tuple([spaces.Discrete(2), spaces.MultiBinary(2)]),
    ],
    ids=describe_space,
)
def test_samples_round_trip_through_json(space: spaces.Space[Any]) -> None:
    """Every sampled member, turned into JSON, passes the schema and comes back a member."""
    space.seed(7)
    validator = _validator(space)
    for _ in range(25):
        sample = space.sample()
        value = to_jsonable(sample)
        assert validator.is_valid({"action": value}), value
        assert space.contains(action_from_json(space, value)), value


def test_the_label_changes_no_verdict() -> None:
    """``x-error-label`` is an annotation: both engines ignore it when judging."""
    schema = space_schema(spaces.Discrete(2))
    bare = {key: value for key, value in schema.items() if key != "x-error-label"}
    for value in [0, 1, 2, "x", None]:
        assert Validator(schema).is_valid(value) == Validator(bare).is_valid(value)
        assert Validator(schema).reference_is_valid(value) == Validator(bare).reference_is_valid(value)
    assert Validator(bare).faults(2)[0].message == "2 is greater than the maximum of 1"
    assert Validator(schema).faults(2)[0].message == "2 is greater than the maximum of 1 (action space Discrete(2))"
