"""The echo environment the client tests run on the servers, in two shapes.

Action ``{"message": str}``; observation ``echoed``, ``length``, ``pad``; reward = length.
``message == "boom"`` makes the environment raise (an EXECUTION_ERROR); ``pad`` asks for
that many ``x`` in the observation.
"""

from __future__ import annotations

import uuid
from typing import Any

from openenv.core.env_server.interfaces import Environment as CoreEnvironment
from openenv.core.env_server.types import Action as CoreAction
from openenv.core.env_server.types import Observation as CoreObservation
from openenv.core.env_server.types import State as CoreState


def _echo(message: str, pad: int) -> dict[str, Any]:
    if message == "boom":
        raise RuntimeError("boom")
    return {"echoed": message, "length": len(message), "pad": "x" * pad, "reward": float(len(message)), "done": False}


class EchoAction(CoreAction):
    message: str
    pad: int = 0


class EchoObservation(CoreObservation):
    echoed: str = ""
    length: int = 0
    pad: str = ""


class CoreEchoEnv(CoreEnvironment):
    """The echo environment as an openenv-core ``Environment`` (for the real server)."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        super().__init__()
        self._state = CoreState(episode_id=None, step_count=0)

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> EchoObservation:
        self._state = CoreState(episode_id=episode_id or str(uuid.uuid4()), step_count=0)
        return EchoObservation(reward=0.0)

    def step(self, action: EchoAction, timeout_s: float | None = None, **kwargs: Any) -> EchoObservation:  # type: ignore[override]
        self._state.step_count += 1
        return EchoObservation(**_echo(action.message, action.pad))

    @property
    def state(self) -> CoreState:
        return self._state


class PlainEchoEnv:
    """The echo environment in the duck-typed shape of ``openenv_anyio.environment``."""

    NON_BLOCKING = True
    action_schema = {
        "type": "object",
        "properties": {"message": {"type": "string"}, "pad": {"type": "integer", "minimum": 0}},
        "required": ["message"],
        "additionalProperties": False,
    }

    def __init__(self) -> None:
        self._episode_id: str | None = None
        self._steps = 0

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> dict[str, Any]:
        self._episode_id = episode_id or str(uuid.uuid4())
        self._steps = 0
        return {"echoed": "", "length": 0, "pad": "", "reward": 0.0, "done": False}

    def step(self, action: dict[str, Any]) -> dict[str, Any]:
        self._steps += 1
        return _echo(action["message"], int(action.get("pad", 0)))

    @property
    def state(self) -> dict[str, Any]:
        return {"episode_id": self._episode_id, "step_count": self._steps}
