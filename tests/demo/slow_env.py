"""Environments that keep the event loop's thread busy during their steps (declared
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


class _SlowToLift:
    """An observation whose own ``model_dump`` takes the event loop's thread for a while: the
    server lifts it there, between the thread hop and the answer."""

    def model_dump(self) -> dict[str, Any]:
        deadline = time.monotonic() + STEP_SECONDS
        while time.monotonic() < deadline:  # Python code (not a sleep): a signal lands in it
            pass
        return {"observation": {"position": 1}, "reward": 1.0, "done": True}


class SlowLiftEnv(SlowInlineEnv):
    """A thread-run environment (the default execution) whose observations are slow to lift
    on the loop: a Ctrl-C most likely arrives while the server's code around the env call runs."""

    NON_BLOCKING = False

    def step(self, action: dict[str, Any]) -> Any:  # type: ignore[override]
        return _SlowToLift()
