"""Episodes driven against counting environments (:mod:`.envs`) across server restarts: each
step's answer must carry the environment's own count, one more than before, so a step that
ran twice (or not at all) fails the test where it happened."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass

import anyio

from openenv_anyio.client import EnvClient
from openenv_anyio.client.reconnect import ReconnectPolicy

#: resumes keep trying through a restart (refused connections, 1013 closes) for 120 s: a
#: new server process may take 20 s and more to listen on a busy 2-core machine
RIDE_OUT = ReconnectPolicy(within_s=120, backoff_s=0.05, max_backoff_s=0.25)


@dataclass
class Episode:
    """One client's episode and the steps it has seen answered."""

    client: EnvClient
    steps: int = 0

    async def step(self) -> None:
        result = await self.client.step({"n": self.steps})
        self.steps += 1
        count = result.observation["count"]
        assert count == self.steps, f"session {self.client.session_id}: step {self.steps} answered count {count}"
        assert result.observation["n"] == self.steps - 1

    async def check_state(self) -> None:
        """The environment's own count is the number of steps the client took."""
        state = await self.client.state()
        assert state.step_count == self.steps, (self.client.session_id, state.step_count, self.steps)


@contextlib.asynccontextmanager
async def episodes(url: str, count: int) -> AsyncIterator[list[Episode]]:
    """``count`` resumable sessions on ``url``, each reset once (closed when the block ends)."""
    async with contextlib.AsyncExitStack() as stack:
        opened = []
        for _ in range(count):
            client = await stack.enter_async_context(
                EnvClient(url, reconnect=RIDE_OUT, ping_interval_s=None, message_timeout_s=60)
            )
            result = await client.reset()
            assert result.observation["count"] == 0
            opened.append(Episode(client))
        yield opened


async def step_all(opened: list[Episode], steps: int) -> None:
    """Every episode takes ``steps`` steps, side by side."""

    async def run(episode: Episode) -> None:
        for _ in range(steps):
            await episode.step()

    async with anyio.create_task_group() as group:
        for episode in opened:
            group.start_soon(run, episode)
