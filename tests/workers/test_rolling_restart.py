"""``serve --workers N``: SIGHUP replaces the workers one at a time (a rolling restart). With
a session store every session carries on, each step run exactly once, and sessions opened
during the rolling restart work too (a draining worker hands what it accepts to its
replacement); without a store, the sessions of each replaced worker end as on shutdown and
the server keeps serving."""

from __future__ import annotations

import contextlib
import os
import re
import signal
from pathlib import Path

import anyio
import pytest
from handover.episodes import Episode, episodes
from serve_process import ServeProcess, serve_process

from openenv_anyio.client import (
    ConnectionClosedByServer,
    ConnectionDropped,
    EnvClient,
    EnvClientError,
    ReconnectPolicy,
    SessionNotFound,
)
from openenv_anyio.server.workers.routing import session_owner

pytestmark = pytest.mark.anyio

WORKERS = 3
ROLLED = r"rolling restart: done, 3 workers replaced"


def _slot(episode: Episode) -> int:
    assert episode.client.session_id is not None
    owner = session_owner(episode.client.session_id)
    assert owner is not None, episode.client.session_id
    return owner[0]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _replacements(served: ServeProcess) -> dict[int, tuple[int, int]]:
    """slot -> (new pid, old pid), from the log."""
    found = {}
    for line in served.lines:
        match = re.search(r"worker (\d+): replacement ready \(pid (\d+)\); draining the old one \(pid (\d+)\)", line)
        if match:
            found[int(match[1])] = (int(match[2]), int(match[3]))
    return found


async def _wait_line(served: ServeProcess, pattern: str, start: int = 0) -> None:
    await anyio.to_thread.run_sync(lambda: served.wait_for_line(pattern, timeout_s=120, start=start))


async def test_a_rolling_restart_with_a_store_keeps_every_session(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'sessions.db'}"
    target = "handover.envs:SnapTally"
    with serve_process(target, "--workers", str(WORKERS), "--session-store", store, "--ping-interval", "0") as served:
        async with episodes(served.url, 12) as opened:
            slots = {_slot(episode) for episode in opened}
            assert slots == set(range(WORKERS)), slots  # sessions on every worker
            for episode in opened:
                await episode.step()
            rolled = anyio.Event()

            async def keep_stepping(episode: Episode) -> None:
                while not rolled.is_set():
                    await episode.step()
                    await anyio.sleep(0.01)
                for _ in range(5):
                    await episode.step()

            fresh_sessions = 0

            async def open_new_sessions() -> None:  # none lands on a draining worker
                nonlocal fresh_sessions
                while not rolled.is_set():
                    async with episodes(served.url, 1) as (fresh,):
                        for _ in range(3):
                            await fresh.step()
                    fresh_sessions += 1

            mark = len(served.lines)
            served.process.send_signal(signal.SIGHUP)
            async with anyio.create_task_group() as group:
                for episode in opened:
                    group.start_soon(keep_stepping, episode)
                group.start_soon(open_new_sessions)
                await _wait_line(served, ROLLED, mark)
                rolled.set()
            assert fresh_sessions > 0
            for episode in opened:
                await episode.check_state()
                assert episode.client.resumes >= 1  # each came back from a replaced worker
                assert _slot(episode) in range(WORKERS)
        replaced = _replacements(served)
        assert sorted(replaced) == list(range(WORKERS))
        assert sorted(old for _, old in replaced.values()) == sorted(served.pids)
        assert not any(_alive(old) for _, old in replaced.values())
        # the order: each replacement was ready before its old worker was told to stop
        text = "".join(served.lines[mark:])
        for slot in range(WORKERS):
            assert text.index(f"worker {slot}: replacement ready") < text.index(f"worker {slot}: the old one")
        # and the server still takes new sessions on every worker
        async with episodes(served.url, 6) as fresh:
            for episode in fresh:
                await episode.step()


@pytest.mark.parametrize("anyio_backend", ["trio"])  # server behaviour: one backend is enough
async def test_a_rolling_restart_without_a_store_ends_the_replaced_sessions(tmp_path: Path) -> None:
    with serve_process("handover.envs:SnapTally", "--workers", "2", "--ping-interval", "0") as served:
        async with episodes(served.url, 6) as opened:
            mark = len(served.lines)
            served.process.send_signal(signal.SIGHUP)
            await _wait_line(served, r"rolling restart: done, 2 workers replaced", mark)
            for episode in opened:
                # closed 1001 as on shutdown (or, had it resumed, SessionNotFound): never a fresh episode
                with pytest.raises((ConnectionClosedByServer, ConnectionDropped, SessionNotFound)):
                    await episode.step()
        async with EnvClient(served.url, ping_interval_s=None) as client:
            await client.reset()
            assert (await client.step({"n": 0})).observation["count"] == 1


async def test_a_worker_killed_while_it_drains_leaves_no_session_counted() -> None:
    """A replaced worker killed while it drains (a step still running in it): the sessions it
    counted against the server's limit are not counted any more, so the server takes as many
    new sessions as its limit allows (they stayed counted until the slot's next restart)."""
    target = "compat.envs:SlowTinyEcho"
    args = ("--workers", "2", "--max-concurrent-envs", "2", "--ping-interval", "0", "--drain-timeout", "30")
    with serve_process(target, *args) as served:
        async with contextlib.AsyncExitStack() as stack:
            for _ in range(50):  # a session on worker 0, the one replaced first
                slow = await stack.enter_async_context(EnvClient(served.url, reconnect=ReconnectPolicy(attempts=1)))
                if session_owner(slow.session_id or "") == (0, 0):
                    break
                await stack.aclose()
            assert session_owner(slow.session_id or "") == (0, 0)
            await slow.reset()
            async with anyio.create_task_group() as group:

                async def step_slowly() -> None:
                    with pytest.raises(EnvClientError):  # its worker is killed under it
                        await slow.step({"message": "sleep 20"})

                group.start_soon(step_slowly)
                await anyio.sleep(0.5)
                served.process.send_signal(signal.SIGHUP)
                await _wait_line(served, r"worker 0: replacement ready")
                _, old = _replacements(served)[0]
                await anyio.sleep(0.5)  # draining: the slow step holds the old worker
                assert _alive(old)
                os.kill(old, signal.SIGKILL)
                await _wait_line(served, r"rolling restart: done, 2 workers replaced")
        async with EnvClient(served.url) as first, EnvClient(served.url) as second:
            assert (await first.reset()).done is False
            assert (await second.reset()).done is False


async def test_sighup_to_a_server_without_workers_is_said_and_changes_nothing() -> None:
    """SIGHUP's default is to end the process: a one-process server killed that way lost
    every session without a drain. It says in one line that a rolling restart needs
    --workers, and goes on serving its sessions."""
    with serve_process("compat.envs:SlowTinyEcho", "--ping-interval", "0") as served:
        async with EnvClient(served.url) as client:
            await client.reset()
            served.process.send_signal(signal.SIGHUP)
            await _wait_line(served, r"SIGHUP: a rolling restart needs --workers N; this server goes on")
            assert served.process.poll() is None
            assert (await client.step({"message": "still here"})).observation["echoed_message"] == "still here"
