"""A session's environment kept in a real store and brought back in a fresh instance
(``server.session_store.env_keeping``): by snapshot (a real Gymnasium CartPole, an async
env) and by checked replay; what cannot come back says so with a typed error."""

from __future__ import annotations

import itertools
import time
from pathlib import Path
from typing import Any

import pytest
import trio

from openenv_anyio.core.replay import EpisodeLog, ReplayMismatch
from openenv_anyio.envs.gymnasium import GymnasiumEnv
from openenv_anyio.restoration import RestoreFailed, RestoreWay, SnapshotFailed, SnapshotTooLarge, restore_way
from openenv_anyio.server.execution.bound_env import InProcessEnv
from openenv_anyio.server.execution.runner import thread_starter
from openenv_anyio.server.session_store import StoredLedger, StoredSession, key_digest, open_session_store
from openenv_anyio.server.session_store.env_keeping import answer_of, bring_back, keep_env

pytestmark = pytest.mark.trio


class Counter:
    """Counts its steps; deterministic (a reset starts at the seed)."""

    DETERMINISTIC = True

    def __init__(self) -> None:
        self.count = 0

    def reset(self, seed: int | None = None, episode_id: str | None = None) -> dict[str, Any]:
        self.count = seed or 0
        return {"count": self.count}

    def step(self, action: dict[str, Any]) -> dict[str, Any]:
        self.count += action["add"]
        return {"count": self.count, "reward": float(action["add"]), "done": False}

    @property
    def state(self) -> dict[str, Any]:
        return {"episode_id": None, "step_count": 0, "count": self.count}


_CALLS = itertools.count()


class Drifting(Counter):
    """Claims to be deterministic but is not: every instance answers from a shared counter."""

    def step(self, action: dict[str, Any]) -> dict[str, Any]:
        return {"count": next(_CALLS), "reward": 0.0, "done": False}


class AsyncBoard:
    """Snapshots and restores with ``async def`` methods."""

    def __init__(self) -> None:
        self.cells: list[int] = []

    def reset(self, **_: Any) -> dict[str, Any]:
        self.cells = []
        return {"cells": self.cells}

    def step(self, action: dict[str, Any]) -> dict[str, Any]:
        self.cells.append(action["cell"])
        return {"cells": list(self.cells)}

    async def snapshot(self) -> dict[str, Any]:
        return {"cells": self.cells}

    async def restore(self, snapshot: dict[str, Any]) -> None:
        self.cells = list(snapshot["cells"])


async def _through_a_store(tmp_path: Path, stored: Any) -> Any:
    """``stored`` written into a SQLite file by one store and taken by another, as by the
    next server process."""
    token = "s1.secret-secret-secret-secret-secret"
    record = StoredSession("resumable", "s1", key_digest(token), "ep", 4, StoredLedger(), stored, time.time())
    writer = await open_session_store(str(tmp_path / "kept.db"))
    await writer.put([record])
    await writer.aclose()
    reader = await open_session_store(str(tmp_path / "kept.db"))
    try:
        taken = await reader.take(key_digest(token))
    finally:
        await reader.aclose()
    assert taken == record
    return taken.env


async def test_a_cartpole_episode_comes_back_by_snapshot(tmp_path: Path) -> None:
    served = GymnasiumEnv.bind("CartPole-v1")
    original = await InProcessEnv.create(served)
    fresh = await InProcessEnv.create(served)
    try:
        await original.reset({"seed": 5, "episode_id": "ep"})
        for action in (0, 1, 0, 1):
            await original.step(original.check_action({"action": action}))
        stored = await _through_a_store(tmp_path, await keep_env(original, restore_way(served), None))
        await bring_back(fresh, stored)
        for action in (1, 1, 0):
            expected = answer_of(await original.step(original.check_action({"action": action})))
            assert answer_of(await fresh.step(fresh.check_action({"action": action}))) == expected
        assert await fresh.state() == await original.state()
    finally:
        await original.aclose()
        await fresh.aclose()


async def test_a_deterministic_episode_comes_back_by_replay(tmp_path: Path) -> None:
    async with thread_starter():
        original, fresh = await InProcessEnv.create(Counter), await InProcessEnv.create(Counter)
        try:
            lifted, _ = await original.reset({"seed": 10})
            log = EpisodeLog.start({"seed": 10}, answer_of(lifted))
            for add in (1, 2, 3):
                sent = {"add": add}  # recorded as the client sent it
                log.record_step(sent, answer_of(await original.step(original.check_action(sent))))
            assert restore_way(Counter) is RestoreWay.REPLAY
            stored = await _through_a_store(tmp_path, await keep_env(original, RestoreWay.REPLAY, log))
            await bring_back(fresh, stored)
            assert (await fresh.state())["count"] == 16
        finally:
            await original.aclose()
            await fresh.aclose()


async def test_an_env_that_answers_otherwise_on_replay_is_a_mismatch() -> None:
    async with thread_starter():
        original, fresh = await InProcessEnv.create(Drifting), await InProcessEnv.create(Drifting)
        try:
            lifted, _ = await original.reset({})
            log = EpisodeLog.start({}, answer_of(lifted))
            for _ in range(3):
                log.record_step({"add": 1}, answer_of(await original.step({"add": 1})))
            with pytest.raises(ReplayMismatch, match="replaying step 1 of 3"):
                await bring_back(fresh, await keep_env(original, RestoreWay.REPLAY, log))
        finally:
            await original.aclose()
            await fresh.aclose()


async def test_async_snapshot_methods_are_awaited() -> None:
    original, fresh = await InProcessEnv.create(AsyncBoard), await InProcessEnv.create(AsyncBoard)
    try:
        await original.reset({})
        await original.step({"cell": 4})
        stored = await keep_env(original, restore_way(AsyncBoard), None)
        assert stored.snapshot is not None and stored.snapshot.value() == {"cells": [4]}
        await bring_back(fresh, stored)
        assert answer_of(await fresh.step({"cell": 7}))["observation"] == {"cells": [4, 7]}
    finally:
        await original.aclose()
        await fresh.aclose()


class Failing(AsyncBoard):
    def snapshot(self) -> Any:  # type: ignore[override]
        raise OSError("disk gone")

    def restore(self, snapshot: Any) -> None:  # type: ignore[override]
        raise ValueError("not my snapshot")


async def test_what_cannot_be_kept_or_brought_back_is_a_typed_error() -> None:
    async with thread_starter():
        failing = await InProcessEnv.create(Failing)
        board = await InProcessEnv.create(AsyncBoard)
        try:
            with pytest.raises(SnapshotFailed, match=r"Failing.snapshot\(\) raised OSError: disk gone"):
                await keep_env(failing, RestoreWay.SNAPSHOT, None)
            await board.step({"cell": 1})
            with pytest.raises(SnapshotTooLarge, match="more than the limit of 8 bytes"):
                await keep_env(board, RestoreWay.SNAPSHOT, None, limit=8)
            stored = await keep_env(board, RestoreWay.SNAPSHOT, None)
            with pytest.raises(RestoreFailed, match=r"Failing.restore\(\) raised ValueError"):
                await bring_back(failing, stored)
            with pytest.raises(RestoreFailed, match="neither snapshots nor replays"):
                await bring_back(board, await keep_env(board, RestoreWay.NONE, None))
            with pytest.raises(ValueError, match="no reset yet"):
                await keep_env(board, RestoreWay.REPLAY, None)
        finally:
            with trio.CancelScope(shield=True):
                await failing.aclose()
                await board.aclose()
