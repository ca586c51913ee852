"""An openenv-core environment whose ``step(action: Any)`` names no Action model, as some
exporters generate it, and the model its actions follow (kept in another module's style:
the environment does not mention it)."""

from __future__ import annotations

import uuid
from typing import Any

from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, Observation, State


class MoveAction(Action):
    direction: str
    steps: int = 1


class MoveObservation(Observation):
    position: int = 0


class Walker(Environment):
    """Walks left or right on a line."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        super().__init__()
        self._state = State(episode_id=str(uuid.uuid4()), step_count=0)
        self._position = 0

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> MoveObservation:
        self._state = State(episode_id=episode_id or str(uuid.uuid4()), step_count=0)
        self._position = 0
        return MoveObservation(position=0, reward=0.0, done=False)

    def step(self, action: Any, timeout_s: float | None = None, **kwargs: Any) -> MoveObservation:  # type: ignore[override]
        self._state.step_count += 1
        self._position += action.steps if action.direction == "right" else -action.steps
        return MoveObservation(position=self._position, reward=0.0, done=False)

    @property
    def state(self) -> State:
        return self._state


NOT_A_MODEL = 3
