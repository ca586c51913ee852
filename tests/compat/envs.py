"""Environments our server runs for the compat tests, with the wire shapes of upstream's.

:class:`TinyEcho` answers like the env ``openenv init`` generates (``echoed_message``,
``message_length``); :class:`NotesTools` is a tool environment whose tools are also step
actions, as upstream's ``MCPEnvironment`` offers them (``list_tools`` / ``call_tool``).
Both count their own steps, so a test can read what the server really executed.
"""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any, ClassVar

from openenv_anyio import Environment
from openenv_anyio.tools import tool


class TinyEcho(Environment):
    NON_BLOCKING: ClassVar[bool] = True
    instances: ClassVar[list[TinyEcho]] = []
    lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self) -> None:
        self.episode_id: str | None = None
        self.steps = 0
        self.closed = False
        with TinyEcho.lock:
            type(self).instances.append(self)

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> dict[str, Any]:
        self.episode_id = episode_id or str(uuid.uuid4())
        self.steps = 0
        return {"echoed_message": "Tiny Echo ready", "message_length": 0, "reward": 0.0, "done": False}

    def step(self, action: dict[str, Any]) -> dict[str, Any]:
        message = str(action["message"])
        if message.startswith("sleep "):
            time.sleep(float(message.split()[1]))
        self.steps += 1
        return {"echoed_message": message, "message_length": len(message), "reward": len(message) * 0.1, "done": False}

    @property
    def state(self) -> dict[str, Any]:
        return {"episode_id": self.episode_id, "step_count": self.steps}

    def close(self) -> None:
        self.closed = True


class SlowTinyEcho(TinyEcho):
    """Runs its steps on the session's thread (``"sleep S"`` sleeps S seconds)."""

    NON_BLOCKING: ClassVar[bool] = False


class NotesTools(Environment):
    """The tools of ``tests/mcp_surface/upstream_tool_env.py``'s NotesEnvironment, on our API."""

    NON_BLOCKING: ClassVar[bool] = True

    def __init__(self) -> None:
        self.episode_id: str | None = None
        self.steps = 0
        self.notes: list[str] = []

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> dict[str, Any]:
        self.episode_id = episode_id or str(uuid.uuid4())
        self.steps = 0
        self.notes.clear()
        return {"notes": 0}

    def step(self, action: dict[str, Any]) -> dict[str, Any]:
        self.steps += 1
        match action.get("type"):
            case "list_tools":
                names = ("remember", "recall", "shout")
                return {
                    "tools": [{"name": name, "description": "", "input_schema": {"type": "object"}} for name in names]
                }
            case "call_tool":
                name = str(action["tool_name"])
                if name not in ("remember", "recall", "shout"):  # upstream's shape for a framework error
                    error = {"error_type": "tool_not_found", "message": f"Unknown tool: {name}"}
                    return {"tool_name": name, "result": None, "error": error}
                value = getattr(self, name)(**dict(action.get("arguments") or {}))
                return {"tool_name": name, "result": {"data": value}, "error": None}
            case _:
                return {"notes": len(self.notes)}

    @property
    def state(self) -> dict[str, Any]:
        return {"episode_id": self.episode_id, "step_count": self.steps}

    @tool
    def remember(self, text: str) -> int:
        """Store a note; returns how many notes are kept."""
        self.notes.append(text)
        return len(self.notes)

    @tool
    def recall(self, index: int = -1) -> str:
        """The note at ``index`` (the last one by default)."""
        return self.notes[index]

    @tool
    def shout(self, text: str) -> str:
        """``text`` in capitals."""
        return text.upper()
