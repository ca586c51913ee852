"""A session's environment kept in a real store and brought back in a fresh instance
(``server.session_store.env_keeping``), in this process and in a process of its own
(``--isolate process``): by snapshot (a real Gymnasium CartPole, an async env) and by checked
replay; what cannot come back says so with a typed error."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio

from openenv_anyio.core.replay import EpisodeLog, ReplayMismatch
from openenv_anyio.restoration import RestoreFailed, RestoreWay, SnapshotFailed, SnapshotTooLarge, restore_way
from openenv_anyio.server.execution.bound_env import BoundEnv, InProcessEnv
from openenv_anyio.server.execution.runner import thread_starter
from openenv_anyio.server.isolation import ProcessIsolated
from openenv_anyio.server.isolation.isolated_env import IsolatedEnv
from openenv_anyio.server.session_store import StoredLedger, StoredSession, key_digest, open_session_store
from openenv_anyio.server.session_store.env_keeping import answer_of, bring_back, keep_env

from . import keeping_envs

pytestmark = pytest.mark.trio


@pytest.fixture(params=["in-process", "isolated"])
def where(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@asynccontextmanager
async def bound_envs(where: str, name: str, count: int = 2) -> AsyncIterator[list[BoundEnv]]:
    """``count`` fresh instances of ``keeping_envs.NAME``, each a session's environment."""
    made: list[BoundEnv] = []
    async with thread_starter():
        try:
            for _ in range(count):
                if where == "isolated":
                    made.append(await IsolatedEnv.start(ProcessIsolated(f"tests.session_store.keeping_envs:{name}")))
                else:
                    made.append(await InProcessEnv.create(getattr(keeping_envs, name)))
            yield made
        finally:
            with trio.CancelScope(shield=True):
                for bound in made:
                    await bound.aclose()


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


async def test_a_cartpole_episode_comes_back_by_snapshot(where: str, tmp_path: Path) -> None:
    async with bound_envs(where, "CartPole") as (original, fresh):
        way = restore_way(original.env)
        assert way is RestoreWay.SNAPSHOT
        await original.reset({"seed": 5, "episode_id": "ep"})
        for action in (0, 1, 0, 1):
            await original.step(original.check_action({"action": action}))
        await bring_back(fresh, await _through_a_store(tmp_path, await keep_env(original, way, None)))
        for action in (1, 1, 0):
            expected = answer_of(await original.step(original.check_action({"action": action})))
            assert answer_of(await fresh.step(fresh.check_action({"action": action}))) == expected
        assert await fresh.state() == await original.state()


async def test_a_deterministic_episode_comes_back_by_replay(where: str, tmp_path: Path) -> None:
    async with bound_envs(where, "Counter") as (original, fresh):
        assert restore_way(original.env) is RestoreWay.REPLAY
        lifted, _ = await original.reset({"seed": 10})
        log = EpisodeLog.start({"seed": 10}, answer_of(lifted))
        for add in (1, 2, 3):
            sent = {"add": add}  # recorded as the client sent it
            log.record_step(sent, answer_of(await original.step(original.check_action(sent))))
        await bring_back(fresh, await _through_a_store(tmp_path, await keep_env(original, RestoreWay.REPLAY, log)))
        assert (await fresh.state())["count"] == 16


async def test_an_env_that_answers_otherwise_on_replay_is_a_mismatch(where: str) -> None:
    async with bound_envs(where, "Drifting") as (original, fresh):
        lifted, _ = await original.reset({})
        log = EpisodeLog.start({}, answer_of(lifted))
        for _ in range(3):
            log.record_step({"add": 1}, answer_of(await original.step({"add": 1})))
        with pytest.raises(ReplayMismatch, match="replaying step 1 of 3"):
            await bring_back(fresh, await keep_env(original, RestoreWay.REPLAY, log))


async def test_async_snapshot_methods_are_awaited(where: str) -> None:
    async with bound_envs(where, "AsyncBoard") as (original, fresh):
        await original.reset({})
        await original.step({"cell": 4})
        stored = await keep_env(original, restore_way(original.env), None)
        assert stored.snapshot is not None and stored.snapshot.value() == {"cells": [4]}
        await bring_back(fresh, stored)
        assert answer_of(await fresh.step({"cell": 7}))["observation"] == {"cells": [4, 7]}


async def test_what_cannot_be_kept_or_brought_back_is_a_typed_error(where: str) -> None:
    async with bound_envs(where, "Failing", 1) as (failing,), bound_envs(where, "AsyncBoard", 1) as (board,):
        with pytest.raises(SnapshotFailed, match=r"Failing.snapshot\(\) raised OSError: disk gone"):
            await keep_env(failing, RestoreWay.SNAPSHOT, None)
        await board.step({"cell": 1})
        with pytest.raises(SnapshotTooLarge, match="more than the limit of 8 bytes") as caught:
            await keep_env(board, RestoreWay.SNAPSHOT, None, limit=8)
        assert caught.value.limit == 8 and caught.value.size > 8
        stored = await keep_env(board, RestoreWay.SNAPSHOT, None)
        with pytest.raises(RestoreFailed, match=r"Failing.restore\(\) raised ValueError: not my snapshot"):
            await bring_back(failing, stored)
        with pytest.raises(RestoreFailed, match="neither snapshots nor replays"):
            await bring_back(board, await keep_env(board, RestoreWay.NONE, None))
        with pytest.raises(ValueError, match="no reset yet"):
            await keep_env(board, RestoreWay.REPLAY, None)


async def test_an_env_without_snapshot_refuses_to_snapshot(where: str) -> None:
    async with bound_envs(where, "Counter", 1) as (counter,):
        with pytest.raises(SnapshotFailed, match="does not snapshot"):
            await counter.snapshot(1024)


@pytest.mark.parametrize(
    ("name", "operator_says", "way"),
    [
        ("Undeclared", None, RestoreWay.NONE),
        ("Undeclared", True, RestoreWay.REPLAY),  # serve --deterministic
        ("Counter", None, RestoreWay.REPLAY),
        ("NeverBack", True, RestoreWay.NONE),  # the environment's own word wins
        ("CartPole", True, RestoreWay.SNAPSHOT),
    ],
)
async def test_the_operator_s_word_reaches_an_environment_where_it_runs(
    where: str, name: str, operator_says: bool | None, way: RestoreWay
) -> None:
    """``--deterministic`` makes an environment with no way of its own replayable, in this
    process and in one of its own alike (the process's own answer was taken as declared)."""
    async with bound_envs(where, name, count=1) as (bound,):
        assert restore_way(bound.env, deterministic=operator_says) is way
