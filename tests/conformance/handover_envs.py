"""Environments for the hand-over case (EXT-HAND-01): they count their own steps and can be
brought back in another process by snapshot."""

from __future__ import annotations

from typing import Any, ClassVar

from openenv_anyio.environment import Environment


class HandoverCounter(Environment):
    """Counts steps; ``snapshot``/``restore`` carry the episode to another process."""

    NON_BLOCKING: ClassVar[bool] = True
    action_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {"n": {"type": "integer"}},
        "required": ["n"],
        "additionalProperties": False,
    }

    def __init__(self) -> None:
        self.steps = 0
        self.episode_id: str | None = None

    def reset(self, seed: int | None = None, episode_id: str | None = None, **_: Any) -> dict[str, Any]:
        self.steps, self.episode_id = 0, episode_id or "counter"
        return {"steps": 0, "reward": 0.0, "done": False}

    def step(self, action: dict[str, Any]) -> dict[str, Any]:
        self.steps += 1
        return {"steps": self.steps, "reward": float(action["n"]), "done": False}

    @property
    def state(self) -> dict[str, Any]:
        return {"episode_id": self.episode_id, "step_count": self.steps}

    def snapshot(self) -> dict[str, Any]:
        return {"steps": self.steps, "episode_id": self.episode_id}

    def restore(self, snapshot: Any) -> None:
        self.steps, self.episode_id = snapshot["steps"], snapshot["episode_id"]


class ClaimingCounter(HandoverCounter):
    """Says ``handover`` in its metadata without any session store behind it: a server that
    claims the hand-over and does not do it."""

    metadata: ClassVar[dict[str, Any]] = {"name": "ClaimingCounter", "handover": {"durable": False}}
