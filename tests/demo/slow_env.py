"""Environments that spend their steps in their own code on the event loop's thread (declared
non-blocking, or async, while they block): a Ctrl-C most likely arrives while env code runs."""

from __future__ import annotations

import time
from typing import Any

STEP_SECONDS = 0.2


class SlowInlineEnv:
    NON_BLOCKING = True
    action_schema = {"type": "object", "properties": {"move": {"type": "integer"}}}

    def reset(self, **kwargs: Any) -> dict[str, Any]:
        return {"observation": {"position": 0}, "reward": 0.0, "done": False}

    def step(self, action: dict[str, Any]) -> dict[str, Any]:
        time.sleep(STEP_SECONDS)  # env code holding the event loop's thread
        return {"observation": {"position": 1}, "reward": 1.0, "done": True}

    @property
    def state(self) -> dict[str, Any]:
        return {"episode_id": None, "step_count": 0}


class SlowAsyncEnv(SlowInlineEnv):
    NON_BLOCKING = False

    async def step(self, action: dict[str, Any]) -> dict[str, Any]:  # type: ignore[override]
        time.sleep(STEP_SECONDS)  # blocks the loop from inside a coroutine
        return {"observation": {"position": 1}, "reward": 1.0, "done": True}
