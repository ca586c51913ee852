"""A tool environment written against upstream's API (``MCPEnvironment`` with FastMCP tools)
that scores its episode with a ``reward`` tool. Imported only in a process that has upstream
``openenv`` 0.10 (served by ``scored_app``)."""

from __future__ import annotations

import uuid
from typing import Any

from fastmcp import FastMCP
from openenv.core.env_server.mcp_environment import MCPEnvironment
from openenv.core.env_server.types import Action, Observation, State


class TallyEnvironment(MCPEnvironment):
    """Counts up to a target; the episode's reward is 1.0 once the tally hits it exactly."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        server = FastMCP("tally")
        self.tally = 0
        self.target = 3

        @server.tool
        def add(amount: int) -> int:
            """Add to the tally; returns the new tally."""
            self.tally += amount
            return self.tally

        @server.tool
        def reward() -> float:
            """1.0 when the tally is the target, else 0.0."""
            return 1.0 if self.tally == self.target else 0.0

        super().__init__(server)
        self._state = State(episode_id=None, step_count=0)

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> Observation:
        self.tally, self.target = 0, seed or 3
        self._state = State(episode_id=episode_id or str(uuid.uuid4()), step_count=0)
        return Observation(done=False, reward=0.0, metadata={"target": self.target})

    def _step_impl(self, action: Action, timeout_s: float | None = None, **kwargs: Any) -> Observation:
        self._state.step_count += 1
        return Observation(done=False, reward=0.0, metadata={"tally": self.tally})

    @property
    def state(self) -> State:
        return self._state
