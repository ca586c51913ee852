"""Group commit (``server.session_store.group_commit``): concurrent writes of many sessions
in few transactions, each writer returning once its session is kept, or with the store's
error when it is not."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from openenv_anyio.server.session_store import StoreUnavailable, group_commit, open_session_store

from .records import replayed_session
from .redis_server import RedisServer

pytestmark = pytest.mark.anyio


async def test_concurrent_writes_share_transactions(tmp_path: Path) -> None:
    store = await open_session_store(str(tmp_path / "kept.db"))
    records = [replayed_session(f"s{n}")[1] for n in range(64)]
    kept: list[int] = []

    async def write_and_look(commit: object, index: int) -> None:
        await commit.write(records[index])  # type: ignore[attr-defined]
        kept.append(index if await store.get(records[index].key_digest) == records[index] else -1)

    try:
        async with group_commit(store) as commit, anyio.create_task_group() as group:
            for index in range(len(records)):
                group.start_soon(write_and_look, commit, index)
        assert sorted(kept) == list(range(64))  # each writer saw its own session kept
        assert 1 <= commit.batches < len(records)
        assert await store.count() == 64
    finally:
        await store.aclose()


async def test_what_waits_is_written_when_the_block_ends(tmp_path: Path) -> None:
    store = await open_session_store(str(tmp_path / "kept.db"))
    try:
        async with group_commit(store) as commit:
            await commit.write(replayed_session("a")[1])
        with pytest.raises(RuntimeError, match="closed"):
            await commit.write(replayed_session("b")[1])
        assert await store.count() == 1
    finally:
        await store.aclose()


async def test_every_writer_of_a_failed_batch_gets_the_error(redis: RedisServer) -> None:
    store = await open_session_store(redis.url())
    redis.stop()
    failures: list[str] = []

    async def write(commit: object, name: str) -> None:
        try:
            await commit.write(replayed_session(name)[1])  # type: ignore[attr-defined]
        except StoreUnavailable as exc:
            failures.append(str(exc))

    try:
        async with group_commit(store) as commit, anyio.create_task_group() as group:
            for name in ("a", "b", "c"):
                group.start_soon(write, commit, name)
        assert len(failures) == 3 and all("failed" in text for text in failures)
    finally:
        await store.aclose()
