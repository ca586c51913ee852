"""The author-facing API's pure functions (``openenv_anyio.environment``)."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pydantic
import pytest

from openenv_anyio.environment import (
    Environment,
    env_metadata,
    lift_observation,
    normalise_state,
    schema_of,
)


@dataclasses.dataclass
class DataObs:
    board: list[int]
    reward: float | None = None
    done: bool = False
    metadata: dict[str, Any] = dataclasses.field(default_factory=dict)


class ModelObs(pydantic.BaseModel):
    text: str
    reward: float | None = None
    done: bool = False
    metadata: dict[str, Any] = {}


@pytest.mark.parametrize(
    "value",
    [
        {"board": [1, 2], "reward": 0.5, "done": True, "metadata": {"k": 1}},
        DataObs([1, 2], 0.5, True, {"k": 1}),
    ],
)
def test_reward_done_metadata_are_lifted(value: Any) -> None:
    """WS-OBS-1."""
    lifted = lift_observation(value)
    assert lifted.observation == {"board": [1, 2]}
    assert (lifted.reward, lifted.done, lifted.metadata) == (0.5, True, {"k": 1})


def test_lifting_is_pure_and_defaults() -> None:
    value = {"x": 1}
    lifted = lift_observation(value)
    assert value == {"x": 1}
    assert (lifted.observation, lifted.reward, lifted.done, lifted.metadata) == ({"x": 1}, None, False, None)
    assert lift_observation(None).observation == {}


def test_pydantic_observation_and_numpy_reward() -> None:
    lifted = lift_observation(ModelObs(text="t", reward=np.float32(1.5), done=np.bool_(True)))
    assert lifted.observation == {"text": "t"}
    assert lifted.reward == 1.5 and type(lifted.reward) is float
    assert lifted.done is True
    assert type(lift_observation({"reward": np.int64(3)}).reward) is int


def test_not_observation_like_is_type_error() -> None:
    with pytest.raises(TypeError, match="mapping, a dataclass or a pydantic model"):
        lift_observation((1, 2))


def test_normalise_state_fills_the_required_keys() -> None:
    """WS-STATE-1."""
    assert normalise_state({"extra": 1}) == {"extra": 1, "episode_id": None, "step_count": 0}
    for bad in ({"episode_id": 3}, {"step_count": -1}, {"step_count": "2"}, {"step_count": True}):
        with pytest.raises(TypeError):
            normalise_state(bad)


def test_schema_of() -> None:
    assert schema_of(None) is None
    assert schema_of({"type": "object"}) == {"type": "object"}
    assert schema_of(ModelObs)["title"] == "ModelObs"
    with pytest.raises(TypeError):
        schema_of(42)


def test_metadata_defaults_and_overrides() -> None:
    class Plain(Environment):
        pass

    class Named(Environment):
        metadata = {"name": "Nice", "author": "me", "tags": ["x"]}

    assert env_metadata(Plain) == {
        "name": "Plain",
        "description": "Plain environment",
        "readme_content": None,
        "version": "1.0.0",
        "author": None,
        "documentation_url": None,
    }
    named = env_metadata(Named())
    assert named["name"] == "Nice" and named["description"] == "Nice environment"
    assert named["author"] == "me" and named["tags"] == ["x"]
