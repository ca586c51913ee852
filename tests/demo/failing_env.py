"""An environment whose every step fails (the demo must report it, readably)."""

from __future__ import annotations

from typing import Any


class FailingStepEnv:
    NON_BLOCKING = True
    action_schema = {"type": "object", "properties": {"move": {"type": "integer"}}}

    def reset(self, **kwargs: Any) -> dict[str, Any]:
        return {"position": 0}

    def step(self, action: dict[str, Any]) -> dict[str, Any]:
        raise ValueError("this env cannot step")

    @property
    def state(self) -> dict[str, Any]:
        return {"episode_id": None, "step_count": 0}
