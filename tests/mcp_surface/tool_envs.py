"""Environments with tools declared by :func:`openenv_anyio.tools.tool` (no FastMCP)."""

from __future__ import annotations

import threading
import uuid
from typing import Any

from openenv_anyio import Environment
from openenv_anyio.tools import tool


class NotesEnv(Environment):
    """Notes written by tools; a step reports how many there are and on which thread it ran."""

    def __init__(self) -> None:
        self.notes: list[str] = []
        self.episode_id: str | None = None
        self.steps = 0

    def reset(self, seed: int | None = None, episode_id: str | None = None) -> dict[str, Any]:
        self.notes.clear()
        self.steps = 0
        self.episode_id = episode_id or str(uuid.uuid4())
        return {"notes": 0, "thread": threading.current_thread().name}

    def step(self, action: dict[str, Any]) -> dict[str, Any]:
        self.steps += 1
        return {"notes": len(self.notes), "thread": threading.current_thread().name, "reward": float(len(self.notes))}

    @property
    def state(self) -> dict[str, Any]:
        return {"episode_id": self.episode_id, "step_count": self.steps}

    @tool
    def remember(self, text: str) -> dict[str, Any]:
        """Store a note.

        Returns how many notes are kept and the thread the tool ran on."""
        self.notes.append(text)
        return {"count": len(self.notes), "thread": threading.current_thread().name}

    @tool(
        parameters={
            "type": "object",
            "properties": {"index": {"type": "integer", "minimum": 0}},
            "additionalProperties": False,
        }
    )
    def recall(self, index: int = 0) -> str:
        """The note at ``index``."""
        return self.notes[index]

    @tool
    async def shout(self, text: str, times: int = 1) -> str:
        """``text`` in capitals, ``times`` times (an async tool)."""
        return text.upper() * times


class NoToolsEnv(Environment):
    NON_BLOCKING = True

    def reset(self, **kwargs: Any) -> dict[str, Any]:
        return {}

    def step(self, action: dict[str, Any]) -> dict[str, Any]:
        return {}

    @property
    def state(self) -> dict[str, Any]:
        return {"episode_id": None, "step_count": 0}


class FaultyTools(NotesEnv):
    """Tools that fail the ways a step can: an exception naming a path, a result no UTF-8
    frame can carry (a lone surrogate), ``sys.exit()``."""

    @tool
    def fail(self, name: str) -> str:
        """Raise an exception whose text holds an absolute path."""
        raise ValueError(f"cannot open /srv/secret/{name}.cfg")

    @tool
    def lone(self) -> str:
        """Return a string with a lone surrogate."""
        return "bad \ud800 text"

    @tool
    def leave(self) -> str:
        """Call ``sys.exit()``."""
        raise SystemExit(3)

    @tool
    async def leave_async(self) -> str:
        """Call ``sys.exit()`` in an async tool."""
        raise SystemExit(4)
