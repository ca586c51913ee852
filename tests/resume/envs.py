"""Small environments for the resume tests: they count their own steps."""

from __future__ import annotations

import threading
import time
from typing import Any, ClassVar

from openenv_anyio.environment import Environment


class StepCounter(Environment):
    """Counts steps itself; remembers every instance so a test can read the real counter."""

    NON_BLOCKING: ClassVar[bool] = True
    instances: ClassVar[list[StepCounter]] = []
    lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self) -> None:
        self.steps = 0
        self.episode_id: str | None = None
        self.closed = False
        with StepCounter.lock:
            type(self).instances.append(self)

    def reset(self, episode_id: str | None = None, **kwargs: Any) -> dict[str, Any]:
        self.steps = 0
        self.episode_id = episode_id or f"episode-{id(self)}"
        return {"steps": 0}

    def step(self, action: dict[str, Any]) -> dict[str, Any]:
        self.steps += 1
        return {"steps": self.steps, "echo": action.get("n")}

    @property
    def state(self) -> dict[str, Any]:
        return {"episode_id": self.episode_id, "step_count": self.steps}

    def close(self) -> None:
        self.closed = True


def fresh_counter_class() -> type[StepCounter]:
    """A subclass with its own instance list, so tests running side by side never mix."""
    return type("StepCounter", (StepCounter,), {"instances": []})


class SlowStepper(StepCounter):
    """Runs on its session's thread; ``{"sleep": S}`` makes a step take S seconds."""

    NON_BLOCKING: ClassVar[bool] = False
    instances: ClassVar[list[StepCounter]] = []

    def step(self, action: dict[str, Any]) -> dict[str, Any]:
        time.sleep(float(action.get("sleep", 0)))
        return super().step(action)


class KeptCounter(StepCounter):
    """Brought back in another server process by its snapshot (a session store's hand-over)."""

    def snapshot(self) -> dict[str, Any]:
        return {"steps": self.steps, "episode_id": self.episode_id}

    def restore(self, snapshot: Any) -> None:
        self.steps, self.episode_id = snapshot["steps"], snapshot["episode_id"]


class ReplayedCounter(StepCounter):
    """Brought back in another server process by replay: the same reset and actions give the
    same answers."""

    DETERMINISTIC: ClassVar[bool] = True


class DriftingCounter(StepCounter):
    """Says it is deterministic, and answers the clock: its replay comes out otherwise."""

    DETERMINISTIC: ClassVar[bool] = True

    def step(self, action: dict[str, Any]) -> dict[str, Any]:
        self.steps += 1
        return {"steps": self.steps, "clock": time.perf_counter_ns()}
