"""An environment written against upstream's API: an ``MCPEnvironment`` whose tools are
FastMCP functions (the shape of upstream's canonical tool environments). Imported only in a
process that has upstream ``openenv`` 0.10 (``.peers/openenv-0.10.0-host``).

The tools share state with ``step``: ``remember`` stores a note on the instance, and both
``recall`` and a step observation read it, so a test can tell that a tool call and a step
act on one environment instance.
"""

from __future__ import annotations

import threading
import uuid
from typing import Any

from fastmcp import FastMCP
from openenv.core.env_server.mcp_environment import MCPEnvironment
from openenv.core.env_server.types import Action, Observation, State


class NotesEnvironment(MCPEnvironment):
    """Keeps notes; tools write and read them, a step reports how many there are."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        server = FastMCP("notes")
        self.notes: list[str] = []
        self.threads: set[str] = set()

        @server.tool
        def remember(text: str) -> int:
            """Store a note; returns how many notes are kept."""
            self.threads.add(threading.current_thread().name)
            self.notes.append(text)
            return len(self.notes)

        @server.tool
        def recall(index: int = -1) -> str:
            """The note at ``index`` (the last one by default)."""
            self.threads.add(threading.current_thread().name)
            return self.notes[index]

        @server.tool
        async def shout(text: str) -> str:
            """``text`` in capitals (an async tool)."""
            return text.upper()

        super().__init__(server)
        self._state = State(episode_id=None, step_count=0)

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> Observation:
        self.notes.clear()
        self._state = State(episode_id=episode_id or str(uuid.uuid4()), step_count=0)
        return Observation(done=False, reward=0.0, metadata={"notes": 0})

    def _step_impl(self, action: Action, timeout_s: float | None = None, **kwargs: Any) -> Observation:
        self._state.step_count += 1
        return Observation(done=False, reward=float(len(self.notes)), metadata={"notes": len(self.notes)})

    @property
    def state(self) -> State:
        return self._state
