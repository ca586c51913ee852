"""A small echo environment served by the real ``openenv-core`` server (uvicorn in a thread)."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from typing import Any

from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, Observation, State
from openenv_core_server import serve_openenv_core


class EchoAction(Action):
    message: str


class EchoObservation(Observation):
    echoed: str = ""
    length: int = 0


class EchoEnv(Environment):
    """Echoes the message back; reward is its length."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        super().__init__()
        self._state = State(episode_id=str(uuid.uuid4()), step_count=0)

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> EchoObservation:
        self._state = State(episode_id=episode_id or str(uuid.uuid4()), step_count=0)
        return EchoObservation(reward=0.0)

    def step(self, action: EchoAction, timeout_s: float | None = None, **kwargs: Any) -> EchoObservation:  # type: ignore[override]
        self._state.step_count += 1
        return EchoObservation(echoed=action.message, length=len(action.message), reward=float(len(action.message)))

    @property
    def state(self) -> State:
        return self._state


@contextlib.contextmanager
def run_openenv_core_server(max_concurrent_envs: int = 8) -> Iterator[str]:
    """Serve the echo env with openenv-core on 127.0.0.1 (free port); yield the base URL."""
    with serve_openenv_core(EchoEnv, EchoAction, EchoObservation, max_concurrent_envs=max_concurrent_envs) as url:
        yield url
