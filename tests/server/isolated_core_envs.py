"""An openenv-core environment for the process-isolation tests (its own module: importing
openenv-core is slow, and each environment process imports only the module it serves)."""

from __future__ import annotations

import os
from typing import Any

from openenv.core.env_server.interfaces import Environment as CoreEnvironment
from openenv.core.env_server.types import Action, Observation, State

from .isolated_envs import commit


class CrashAction(Action):
    crash: str | None = None


class CountObservation(Observation):
    steps: int = 0
    pid: int = 0


class CoreCrashing(CoreEnvironment[CrashAction, CountObservation, State]):
    """An openenv-core environment (pydantic action model) that crashes on request."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        super().__init__()
        self._state = State(episode_id="core", step_count=0)

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> CountObservation:
        self._state = State(episode_id=episode_id or "core", step_count=0)
        return CountObservation(steps=0, pid=os.getpid(), reward=0.0)

    def step(self, action: CrashAction, timeout_s: float | None = None, **kwargs: Any) -> CountObservation:
        assert isinstance(action, CrashAction), "the adapter builds the declared model in the environment's process"
        if action.crash:
            commit(action.crash)
        self._state.step_count += 1
        return CountObservation(steps=self._state.step_count, pid=os.getpid(), reward=1.0)

    @property
    def state(self) -> State:
        return self._state
