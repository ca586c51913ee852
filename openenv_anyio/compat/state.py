"""``State``: a session's state in upstream's shape (``episode_id``, ``step_count``, more keys)."""

from __future__ import annotations

from typing import Any

__all__ = ["State"]


class State:
    """``State(episode_id=..., step_count=..., **more)``: the keys read as attributes."""

    def __init__(self, episode_id: str | None = None, step_count: int = 0, **extra: Any) -> None:
        self.episode_id = episode_id
        self.step_count = step_count
        self.__dict__.update(extra)

    def model_dump(self) -> dict[str, Any]:
        """Every key, as a dict (the name upstream's pydantic ``State`` has)."""
        return dict(self.__dict__)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, State) and self.__dict__ == other.__dict__

    def __repr__(self) -> str:
        return "State(" + ", ".join(f"{key}={value!r}" for key, value in self.__dict__.items()) + ")"
