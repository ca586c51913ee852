"""The Shout environment: echoes upper-case messages, rewards their length."""

from __future__ import annotations

from typing import Any
from uuid import uuid4

from openenv.core.env_server.interfaces import Environment

from ..models import ShoutAction, ShoutObservation, ShoutState


class ShoutEnvironment(Environment):  # type: ignore[type-arg]
    """Echoes shouts; sessions share nothing, so several may run at once."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        super().__init__()
        self._state = ShoutState(episode_id=str(uuid4()))

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> ShoutObservation:
        self._state = ShoutState(episode_id=episode_id or str(uuid4()))
        return ShoutObservation(reward=0.0)

    def step(self, action: ShoutAction, timeout_s: float | None = None, **kwargs: Any) -> ShoutObservation:  # type: ignore[override]
        self._state.step_count += 1
        self._state.shouted += len(action.message)
        return ShoutObservation(echoed=action.message, volume=len(action.message), reward=float(len(action.message)))

    @property
    def state(self) -> ShoutState:
        return self._state
