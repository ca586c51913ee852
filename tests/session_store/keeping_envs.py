"""Environments whose episodes the env-keeping tests keep and bring back, in this process
or in one of their own (``ProcessIsolated("tests.session_store.keeping_envs:NAME")``)."""

from __future__ import annotations

import time
from typing import Any

from openenv_anyio.envs.gymnasium import GymnasiumEnv
from openenv_anyio.restoration import RestoreWay

CartPole = GymnasiumEnv.bind("CartPole-v1")


class Counter:
    """Counts; deterministic (a reset starts at the seed)."""

    DETERMINISTIC = True

    def __init__(self) -> None:
        self.count = 0

    def reset(self, seed: int | None = None, episode_id: str | None = None) -> dict[str, Any]:
        self.count = seed or 0
        return {"count": self.count}

    def step(self, action: dict[str, Any]) -> dict[str, Any]:
        self.count += action["add"]
        return {"count": self.count, "reward": float(action["add"]), "done": False}

    @property
    def state(self) -> dict[str, Any]:
        return {"episode_id": None, "step_count": 0, "count": self.count}


class Undeclared(Counter):
    """Counts as deterministically as Counter, but does not say so."""

    DETERMINISTIC = False


class NeverBack(Counter):
    """Says its episodes must never come back, whatever an operator says."""

    RESTORE_WAY = RestoreWay.NONE


class Drifting(Counter):
    """Claims to be deterministic but is not: it answers the clock."""

    def step(self, action: dict[str, Any]) -> dict[str, Any]:
        return {"count": time.perf_counter_ns(), "reward": 0.0, "done": False}


class AsyncBoard:
    """Snapshots and restores with ``async def`` methods."""

    def __init__(self) -> None:
        self.cells: list[int] = []

    def reset(self, **_: Any) -> dict[str, Any]:
        self.cells = []
        return {"cells": self.cells}

    def step(self, action: dict[str, Any]) -> dict[str, Any]:
        self.cells.append(action["cell"])
        return {"cells": list(self.cells)}

    @property
    def state(self) -> dict[str, Any]:
        return {"episode_id": None, "step_count": len(self.cells)}

    async def snapshot(self) -> dict[str, Any]:
        return {"cells": self.cells}

    async def restore(self, snapshot: dict[str, Any]) -> None:
        self.cells = list(snapshot["cells"])


class Failing(AsyncBoard):
    """Its snapshot() and restore() raise."""

    def snapshot(self) -> Any:  # type: ignore[override]
        raise OSError("disk gone")

    def restore(self, snapshot: Any) -> None:  # type: ignore[override]
        raise ValueError("not my snapshot")
