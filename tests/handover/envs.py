"""Counting environments for the hand-over tests: each counts the steps it ran itself and
says the count in every observation and in its state, so a client reads whether each of its
steps ran exactly once, however many servers the episode went through."""

from __future__ import annotations

from typing import Any, ClassVar


class Tally:
    """Deterministic: a server brings it back by replaying the episode."""

    DETERMINISTIC: ClassVar[bool] = True
    NON_BLOCKING: ClassVar[bool] = True

    def __init__(self) -> None:
        self.count = 0
        self.episode_id: str | None = None

    def reset(self, seed: int | None = None, episode_id: str | None = None) -> dict[str, Any]:
        self.count = 0
        self.episode_id = episode_id
        return {"count": 0}

    def step(self, action: dict[str, Any]) -> dict[str, Any]:
        self.count += 1
        return {"count": self.count, "n": action.get("n"), "reward": 1.0, "done": False}

    @property
    def state(self) -> dict[str, Any]:
        return {"episode_id": self.episode_id, "step_count": self.count}


class SnapTally(Tally):
    """Not deterministic (as far as the server knows): brought back by its snapshot."""

    DETERMINISTIC: ClassVar[bool] = False

    def snapshot(self) -> dict[str, Any]:
        return {"count": self.count, "episode_id": self.episode_id}

    def restore(self, snapshot: dict[str, Any]) -> None:
        self.count = int(snapshot["count"])
        self.episode_id = snapshot["episode_id"]
