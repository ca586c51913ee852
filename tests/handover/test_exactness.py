"""Each step runs exactly once across server restarts (issue's bounds): 16 sessions x 300
steps against a counting environment (snapshot and replay), the single server on one port
stopped with SIGTERM and started again every ~100 steps, and under ``--durable`` killed
(SIGKILL) once, half-way: every session ends with the environment's own count at 300, each answer
having carried the count one above the one before."""

from __future__ import annotations

import signal
from pathlib import Path

import anyio
import pytest

from .episodes import Episode, episodes
from .restarts import RestartedServer, restarted_server

pytestmark = pytest.mark.anyio

SNAPSHOT = "handover.envs:SnapTally"
REPLAY = "handover.envs:Tally"
SESSIONS, STEPS = 16, 300


async def run_through_restarts(
    server: RestartedServer, sessions: int, steps: int, restarts: list[tuple[int, signal.Signals]]
) -> list[Episode]:
    """``sessions`` episodes of ``steps`` steps each, side by side; the server restarted with
    each signal once every episode has taken at least the steps named with it."""
    async with episodes(server.url, sessions) as opened:

        async def drive(episode: Episode) -> None:
            for _ in range(steps):
                await episode.step()

        async def restart() -> None:
            for at, signum in restarts:
                while min(episode.steps for episode in opened) < at:
                    await anyio.sleep(0.005)
                status = await anyio.to_thread.run_sync(server.restart, signum)
                assert status == (0 if signum == signal.SIGTERM else -signum)

        async with anyio.create_task_group() as group:
            for episode in opened:
                group.start_soon(drive, episode)
            group.start_soon(restart)
        for episode in opened:
            assert episode.steps == steps
            await episode.check_state()  # the environment's own count
            assert episode.client.resumes >= len(restarts), episode.client.resumes  # it lived through each
    return opened


@pytest.mark.parametrize("target", [SNAPSHOT, REPLAY], ids=["snapshot", "replay"])
async def test_sigterm_and_restart_every_hundred_steps(target: str, tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'sessions.db'}"
    with restarted_server(target, "--session-store", store) as server:
        await run_through_restarts(server, SESSIONS, STEPS, [(100, signal.SIGTERM), (200, signal.SIGTERM)])
        assert server.restarts == 2


@pytest.mark.parametrize("target", [SNAPSHOT, REPLAY], ids=["snapshot", "replay"])
async def test_sigkill_and_restart_under_durable(target: str, tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'sessions.db'}"
    with restarted_server(target, "--session-store", store, "--durable") as server:
        await run_through_restarts(server, SESSIONS, STEPS, [(150, signal.SIGKILL)])
        assert server.restarts == 1
