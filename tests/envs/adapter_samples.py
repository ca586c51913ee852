"""Environments the adapter tests serve: small Gymnasium and openenv-core ones, built on the real packages."""

from __future__ import annotations

import sys
import uuid
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, EnvironmentMetadata, Observation, State
from pydantic import field_validator

# --- Gymnasium -------------------------------------------------------------------------


class GridWalkEnv(gymnasium.Env[dict[str, Any], np.ndarray]):
    """A walk on a 3 x 5 grid: the action is MultiDiscrete([3, 5]) (per-element bounds differ).

    The episode ends at the far corner (terminated) or after ``limit`` steps (truncated).
    ``info`` holds numpy values and a non-finite float, to exercise the JSON conversion.
    """

    closed_count = 0

    def __init__(self, limit: int = 10) -> None:
        self.action_space = spaces.MultiDiscrete([3, 5])
        self.observation_space = spaces.Dict(
            {"position": spaces.MultiDiscrete([3, 5]), "visits": spaces.Box(0, np.inf, (3, 5), np.float64)}
        )
        self.limit = limit
        self._visits = np.zeros((3, 5))
        self._steps = 0

    def _observation(self, position: np.ndarray) -> dict[str, Any]:
        return {"position": position, "visits": self._visits.copy()}

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        super().reset(seed=seed)
        self._visits = np.zeros((3, 5))
        self._steps = 0
        start = np.array([0, 0], dtype=np.int64)
        return self._observation(start), {"options": options or {}, "seed": seed}

    def step(self, action: np.ndarray) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        assert isinstance(action, np.ndarray) and action.dtype == np.int64, action
        self._steps += 1
        self._visits[tuple(action)] += 1
        terminated = bool(action[0] == 2 and action[1] == 4)
        truncated = self._steps >= self.limit
        info = {
            "distance": np.float32(6 - action.sum()),
            "action": action,
            "nan": float("nan"),
            "flag": np.bool_(terminated),
        }
        return self._observation(action), np.float64(-1.0), terminated, truncated, info

    def close(self) -> None:
        type(self).closed_count += 1


class BrokenEnv(gymnasium.Env[int, int]):
    """An environment whose constructor fails."""

    def __init__(self) -> None:
        raise RuntimeError("the simulator is not available\nsee the log")


gymnasium.register("AdapterTest/GridWalk-v0", entry_point=GridWalkEnv, max_episode_steps=50)
gymnasium.register("AdapterTest/Broken-v0", entry_point=BrokenEnv)

# --- openenv-core ------------------------------------------------------------------------


class EchoAction(Action):
    message: str
    repeat: int = 1


class EchoObservation(Observation):
    echoed: str = ""
    length: int = 0


class EchoState(State):
    characters: int = 0


class EchoEnv(Environment[EchoAction, EchoObservation, EchoState]):
    """Echoes messages; declares its models by generic parameters; one session at a time."""

    def __init__(self) -> None:
        super().__init__()
        self._state = EchoState()
        self.received: list[Any] = []
        self.close_calls = 0

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> EchoObservation:
        self._state = EchoState(episode_id=episode_id or str(uuid.uuid4()))
        self.received.append(("reset", seed, kwargs))
        return EchoObservation(reward=0.0)

    def step(self, action: EchoAction, timeout_s: float | None = None, **kwargs: Any) -> EchoObservation:
        self.received.append(action)
        text = action.message * action.repeat
        self._state.step_count += 1
        self._state.characters += len(text)
        return EchoObservation(
            echoed=text,
            length=len(text),
            reward=float(len(text)),
            done=len(text) > 10,
            metadata={"step": self._state.step_count},
        )

    @property
    def state(self) -> EchoState:
        return self._state

    def close(self) -> None:
        self.close_calls += 1


class QuitOnRequest(EchoEnv):
    """``EchoEnv`` that calls ``sys.exit()`` when asked to echo ``"exit"`` (SRV-FAULT-1); named
    unlike ``EchoEnv`` so that name suggestions for a misspelt ``EchoEnv`` stay one."""

    def step(self, action: EchoAction, timeout_s: float | None = None, **kwargs: Any) -> EchoObservation:
        if action.message == "exit":
            sys.exit(3)
        return super().step(action, timeout_s, **kwargs)


class CapitalsAction(Action):
    """A message that must be upper case: a rule of the model's own that its JSON Schema
    cannot say, so only the adapter (pydantic) refuses ``{"message": "quiet"}``."""

    message: str

    @field_validator("message")
    @classmethod
    def _upper(cls, value: str) -> str:
        if value != value.upper():
            raise ValueError("must be upper case")
        return value


class CapitalsOnly(Environment[CapitalsAction, EchoObservation, EchoState]):
    """Echoes upper-case messages."""

    def reset(self, **kwargs: Any) -> EchoObservation:
        return EchoObservation(reward=0.0)

    def step(self, action: CapitalsAction, **kwargs: Any) -> EchoObservation:
        return EchoObservation(echoed=action.message, length=len(action.message), reward=1.0)

    @property
    def state(self) -> EchoState:
        return EchoState()


class CountAction(Action):
    amount: int


class CountObservation(Observation):
    total: int = 0


class CountState(State):
    total: int = 0


class AsyncCountEnv(Environment):  # type: ignore[type-arg]
    """Declares its models by annotations only, steps asynchronously, allows concurrent sessions."""

    SUPPORTS_CONCURRENT_SESSIONS = True
    REQUIRES_SINGLE_THREAD_EXECUTOR = True

    def __init__(self) -> None:
        super().__init__()
        self._state = CountState(episode_id="none")

    def reset(self, seed: int | None = None, episode_id: str | None = None) -> CountObservation:
        self._state = CountState(episode_id=episode_id or "count")
        return CountObservation()

    async def reset_async(self, seed: int | None = None, episode_id: str | None = None) -> CountObservation:
        return self.reset(seed=seed, episode_id=episode_id)

    def step(self, action: CountAction, timeout_s: float | None = None, **kwargs: Any) -> CountObservation:
        raise AssertionError("the adapter must await step_async")

    async def step_async(self, action: CountAction, timeout_s: float | None = None, **kwargs: Any) -> CountObservation:
        self._state.total += action.amount
        self._state.step_count += 1
        return CountObservation(total=self._state.total, reward=action.amount, done=self._state.total >= 10)

    @property
    def state(self) -> CountState:
        return self._state

    def get_metadata(self) -> EnvironmentMetadata:
        return EnvironmentMetadata(name="Counter", description="adds numbers", version="2.0", author="tests")


class UntypedEnv(Environment):  # type: ignore[type-arg]
    """Declares no models at all."""

    def reset(self, seed=None, episode_id=None, **kwargs):  # type: ignore[no-untyped-def]
        return Observation()

    def step(self, action, timeout_s=None, **kwargs):  # type: ignore[no-untyped-def]
        return Observation()

    @property
    def state(self):  # type: ignore[no-untyped-def]
        return State()


def make_echo_env() -> EchoEnv:
    """A factory annotated to return an openenv-core environment."""
    return EchoEnv()


def make_plain_env() -> Any:
    """A factory of an environment written to this project's own API (returned unchanged)."""
    return PlainEnv()


class PlainEnv:
    """A duck-typed environment of this project's API."""

    def reset(self, **kwargs: Any) -> dict[str, Any]:
        return {"value": 0, "done": False}

    def step(self, action: dict[str, Any]) -> dict[str, Any]:
        return {"value": 1, "done": True}

    @property
    def state(self) -> dict[str, Any]:
        return {"episode_id": None, "step_count": 0}


echo_instance = EchoEnv()
settings = {"max_steps": 3}


# --- ASGI applications that upstream's create_app did not build ------------------------

from fastapi import FastAPI  # noqa: E402

plain_fastapi_app = FastAPI()


async def asgi_function(scope: Any, receive: Any, send: Any) -> None:
    """A bare ASGI application."""


class InjectableCountEnv(Environment):  # type: ignore[type-arg]
    """A counter with upstream 0.10's ``set_state`` capability: ``reset(injected_state=...)``
    takes back its State model dumped."""

    def __init__(self) -> None:
        super().__init__()
        self._state = CountState(episode_id="none")

    def reset(
        self, seed: int | None = None, episode_id: str | None = None, injected_state: dict[str, Any] | None = None
    ) -> CountObservation:
        if injected_state is not None:
            self._state = CountState.model_validate(injected_state)
        else:
            self._state = CountState(episode_id=episode_id or str(uuid.uuid4()))
        return CountObservation(total=self._state.total)

    def step(self, action: CountAction, timeout_s: float | None = None, **kwargs: Any) -> CountObservation:
        self._state.total += action.amount
        self._state.step_count += 1
        return CountObservation(total=self._state.total, reward=action.amount)

    @property
    def state(self) -> CountState:
        return self._state
