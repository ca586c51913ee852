"""``EchoEnv``: the echo environment of the OpenEnv wire reference, for interop tests.

Action ``{"message": str}`` (optionally ``"pad": n`` to grow the observation by ``n``
characters, at most :data:`MAX_PAD`); observation ``{"echoed", "length", "pad"}``; reward =
the message's length.
"""

from __future__ import annotations

import uuid
from typing import Any, ClassVar

from ..environment import Environment

__all__ = ["EchoEnv", "MAX_PAD"]

#: Largest padding one step may ask for (8 MiB of text). Unbounded, one small frame asking
#: for 10^8 characters grew the server by ~476 MiB and stalled its event loop (the env runs
#: inline); the schema refuses more before ``step`` runs.
MAX_PAD = 8 * 1024 * 1024


class EchoEnv(Environment):
    """Echoes the message back; never ends an episode."""

    NON_BLOCKING: ClassVar[bool] = True
    action_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "title": "EchoAction",
        "properties": {
            "message": {"type": "string", "description": "Text to echo."},
            "pad": {
                "type": "integer",
                "minimum": 0,
                "maximum": MAX_PAD,
                "description": "Characters of padding to add (at most 8 MiB).",
            },
        },
        "required": ["message"],
        "additionalProperties": False,
    }
    observation_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "title": "EchoObservation",
        "properties": {
            "echoed": {"type": "string"},
            "length": {"type": "integer", "minimum": 0},
            "pad": {"type": "string"},
        },
        "required": ["echoed", "length", "pad"],
    }
    metadata: ClassVar[dict[str, Any]] = {"name": "EchoEnv", "version": "1.0.0"}

    def __init__(self) -> None:
        self._episode_id: str | None = None
        self._step_count = 0

    def reset(self, seed: int | None = None, episode_id: str | None = None, **_: Any) -> dict[str, Any]:
        self._episode_id = episode_id or str(uuid.uuid4())
        self._step_count = 0
        return {"echoed": "", "length": 0, "pad": "", "reward": 0.0, "done": False}

    def step(self, action: dict[str, Any]) -> dict[str, Any]:
        message = action["message"]
        self._step_count += 1
        return {
            "echoed": message,
            "length": len(message),
            "pad": "x" * int(action.get("pad", 0)),
            "reward": float(len(message)),
            "done": False,
        }

    @property
    def state(self) -> dict[str, Any]:
        return {"episode_id": self._episode_id, "step_count": self._step_count}
