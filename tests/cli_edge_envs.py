"""Small environments for the command-line edge tests (served by ``openenv-anyio serve``)."""

from __future__ import annotations

import time
import uuid
from typing import Any


class SingleSession:
    """An environment that allows one session at a time."""

    MAX_CONCURRENT_SESSIONS = 1
    NON_BLOCKING = True

    def __init__(self) -> None:
        self.episode_id: str | None = None
        self.steps = 0

    def reset(self, seed: int | None = None, episode_id: str | None = None) -> dict[str, Any]:
        self.episode_id, self.steps = episode_id or str(uuid.uuid4()), 0
        return {"done": False}

    def step(self, action: dict[str, Any]) -> dict[str, Any]:
        self.steps += 1
        return {"done": False}

    @property
    def state(self) -> dict[str, Any]:
        return {"episode_id": self.episode_id, "step_count": self.steps}


class SlowSteps(SingleSession):
    """Every step takes a while: a conformance run against it lasts long enough to interrupt."""

    MAX_CONCURRENT_SESSIONS = None  # type: ignore[assignment]

    def step(self, action: dict[str, Any]) -> dict[str, Any]:
        time.sleep(1.0)
        return super().step(action)


class SlowClose(SingleSession):
    """Closing takes a while: a server shutting down with one of these open is still busy
    a moment after it was asked to stop."""

    MAX_CONCURRENT_SESSIONS = None  # type: ignore[assignment]
    action_schema = {"type": "object", "properties": {"move": {"type": "integer"}}, "additionalProperties": False}

    def close(self) -> None:
        time.sleep(1.0)
