"""Frames built through their slot setters (the decoder) are exactly what their constructors
build: every field set, still frozen, equal; so is the client's step result."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from openenv_anyio.client import StepResult
from openenv_anyio.core import (
    Observation,
    Step,
    decode_client_frame,
    decode_server_frame,
    encode_frame,
)
from openenv_anyio.core.slot_setters import slot_setters

OBSERVATIONS = [
    Observation({"echoed": "hi"}, 2.0, False),
    Observation({}, None, True, request_id="7"),
    Observation({"a": [1]}, True, False, request_id="8", episode_id="ep-1", metadata={"k": {"n": 1}}),
]
STEPS = [Step({"message": "hi"}), Step({"message": "hi"}, request_id="3"), Step({}, request_id="4", episode_id="ep")]


def _same(built: Any, constructed: Any) -> None:
    assert type(built) is type(constructed)
    for item in dataclasses.fields(constructed):  # reading an unset slot would raise AttributeError
        assert getattr(built, item.name) == getattr(constructed, item.name), item.name
    assert built == constructed
    assert repr(built) == repr(constructed)


@pytest.mark.parametrize("frame", OBSERVATIONS, ids=repr)
def test_a_decoded_observation_is_the_constructed_one(frame: Observation) -> None:
    decoded = decode_server_frame(encode_frame(frame))
    _same(decoded, frame)
    with pytest.raises(dataclasses.FrozenInstanceError):
        decoded.reward = 0.0  # type: ignore[misc]


@pytest.mark.parametrize("frame", STEPS, ids=repr)
def test_a_decoded_step_is_the_constructed_one(frame: Step) -> None:
    decoded = decode_client_frame(encode_frame(frame))
    _same(decoded, frame)
    with pytest.raises(dataclasses.FrozenInstanceError):
        decoded.action = {}  # type: ignore[misc]


@pytest.mark.parametrize("frame", OBSERVATIONS, ids=repr)
def test_a_step_result_is_the_constructed_one(frame: Observation) -> None:
    result = StepResult.of(frame)
    metadata = None if frame.metadata is None else dict(frame.metadata)
    _same(result, StepResult(dict(frame.observation), frame.reward, frame.done, metadata))
    assert result.observation is not frame.observation  # a copy the caller owns
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.done = True  # type: ignore[misc]


def test_a_step_result_subclass_is_built_by_its_own_constructor() -> None:
    @dataclasses.dataclass(frozen=True, slots=True)
    class Scored(StepResult):
        score: int = 3

    result = Scored.of(Observation({"x": 1}, 1.0, True))
    assert result == Scored({"x": 1}, 1.0, True, None, 3)


def test_slot_setters_need_a_slotted_dataclass() -> None:
    @dataclasses.dataclass(frozen=True)
    class Plain:
        x: int

    with pytest.raises(TypeError, match="not a slotted dataclass"):
        slot_setters(Plain)
    assert len(slot_setters(Observation)) == len(dataclasses.fields(Observation))
