"""The session stores (``server.session_store``) on a real SQLite file and a real
``redis-server``: kept sessions written, found by their key's digest, taken once, kept
across a reopen; a store that cannot be opened, a bad record and a Redis server going away
each a typed error of one line."""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from pathlib import Path

import anyio
import pytest
import redis as redis_client

from openenv_anyio.server.session_store import (
    CorruptRecord,
    IncompatibleRecord,
    StoreUnavailable,
    encode_record,
    key_digest,
    open_session_store,
)
from openenv_anyio.server.session_store.redis_store import HASH_KEY, redacted

from .records import replayed_session, snapshot_session
from .redis_server import RedisServer, free_port

pytestmark = pytest.mark.anyio


async def test_a_session_is_kept_found_by_its_key_and_taken_once(store_url: str) -> None:
    store = await open_session_store(store_url)
    try:
        token, replayed = replayed_session()
        hosted = snapshot_session()
        await store.put([replayed, hosted])
        assert await store.count() == 2
        assert await store.get(key_digest(token)) == replayed
        assert await store.get(key_digest(token + "-forged")) is None
        assert await store.take(key_digest(token)) == replayed
        assert await store.take(key_digest(token)) is None  # taken: gone
        assert await store.get(hosted.key_digest) == hosted
        await store.delete([hosted.key_digest, "not-kept"])
        assert await store.count() == 0
    finally:
        await store.aclose()


async def test_a_later_write_replaces_the_session(store_url: str) -> None:
    store = await open_session_store(store_url)
    try:
        token, first = replayed_session(steps=2)
        later = dataclasses.replace(replayed_session(steps=5)[1], key_digest=first.key_digest)
        await store.put([first])
        await store.put([later])
        assert await store.get(key_digest(token)) == later and await store.count() == 1
    finally:
        await store.aclose()


async def test_sessions_whose_wait_is_over_are_pruned(store_url: str) -> None:
    """Sessions written before the cutoff are forgotten in one step; one taken or deleted
    before is not counted again."""
    store = await open_session_store(store_url)
    try:
        kept = [dataclasses.replace(replayed_session(f"s{n}")[1], saved_at=100.0 * n) for n in range(1, 6)]
        await store.put(kept)
        await store.take(kept[0].key_digest)
        await store.delete([kept[1].key_digest])
        assert await store.prune(400.0) == 1  # s3; s4 was written at 400 exactly: kept
        assert await store.prune(400.0) == 0
        assert sorted(record.public_id for record in (await store.load_all()).sessions) == ["s4", "s5"]
        assert await store.prune(1e12) == 2 and await store.count() == 0
    finally:
        await store.aclose()


async def test_sessions_outlive_the_store_object(store_url: str) -> None:
    """What one process wrote, the next one reads: the store closed and opened again."""
    store = await open_session_store(store_url)
    records = [replayed_session(f"s{n}")[1] for n in range(1000)]
    await store.put(records)
    await store.aclose()
    again = await open_session_store(store_url)
    try:
        loaded = await again.load_all()
        assert loaded.faults == []
        assert sorted(loaded.sessions, key=lambda record: record.public_id) == sorted(
            records, key=lambda record: record.public_id
        )
    finally:
        await again.aclose()


async def test_two_servers_on_one_store_take_a_session_once(store_url: str) -> None:
    first, second = await open_session_store(store_url), await open_session_store(store_url)
    try:
        token, record = replayed_session()
        await first.put([record])
        taken: list[object] = []

        async def take(store: object) -> None:
            taken.append(await store.take(key_digest(token)))  # type: ignore[attr-defined]

        async with anyio.create_task_group() as group:
            for store in (first, second) * 4:
                group.start_soon(take, store)
        assert taken.count(record) == 1 and taken.count(None) == 7
    finally:
        await first.aclose()
        await second.aclose()


def _write_raw(store_url: str, tmp_path: Path, digest: str, data: bytes) -> None:
    """Put bytes in the store the way another program (or a damaged disk) would."""
    if store_url.startswith("sqlite:///"):
        with sqlite3.connect(store_url.removeprefix("sqlite:///")) as db:
            db.execute("INSERT OR REPLACE INTO kept_sessions VALUES (?, ?, 0)", (digest, data))
    else:
        client = redis_client.Redis.from_url(store_url)
        client.hset(HASH_KEY, digest, data)
        client.close()


async def test_a_bad_record_is_a_typed_error_and_spoils_only_itself(store_url: str, tmp_path: Path) -> None:
    store = await open_session_store(store_url)
    try:
        good = snapshot_session()
        await store.put([good])
        newer = json.loads(encode_record(replayed_session("v2")[1])) | {"version": 2}
        _write_raw(store_url, tmp_path, "a" * 64, b"\x00garbage")
        _write_raw(store_url, tmp_path, "b" * 64, json.dumps(newer).encode())
        with pytest.raises(CorruptRecord, match="is not JSON"):
            await store.get("a" * 64)
        with pytest.raises(IncompatibleRecord, match="version 2"):
            await store.get("b" * 64)
        loaded = await store.load_all()
        assert loaded.sessions == [good]
        assert sorted((type(fault).__name__, fault.key_digest) for fault in loaded.faults) == [
            ("CorruptRecord", "a" * 64),
            ("IncompatibleRecord", "b" * 64),
        ]
        with pytest.raises(CorruptRecord):
            await store.take("a" * 64)
        assert await store.count() == 2  # taking a bad record removes it with its error
    finally:
        await store.aclose()


async def test_the_store_holds_no_token(store_url: str, tmp_path: Path) -> None:
    """Security: a reader of the store's files or keys cannot resume a session."""
    store = await open_session_store(store_url)
    token, record = replayed_session()
    await store.put([record])
    await store.aclose()
    secret = token.partition(".")[2].encode()
    if store_url.startswith("sqlite:///"):
        kept = b"".join(path.read_bytes() for path in tmp_path.glob("sessions.db*"))
    else:
        client = redis_client.Redis.from_url(store_url)
        kept = b"".join(key + value for key, value in client.hgetall(HASH_KEY).items())
        client.close()
    assert key_digest(token).encode() in kept
    assert secret not in kept


async def test_a_sqlite_store_is_in_wal_mode(tmp_path: Path) -> None:
    path = tmp_path / "kept.db"
    store = await open_session_store(str(path))  # a plain path is SQLite
    await store.put([snapshot_session()])
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert db.execute("SELECT count(*) FROM kept_sessions").fetchone()[0] == 1
    await store.aclose()
    assert store.name == str(path)


async def test_a_sqlite_batch_is_written_whole_or_not_at_all(tmp_path: Path) -> None:
    """One ``put`` is one transaction: when the file refuses one record of a batch, none of
    the batch is kept (each record was committed on its own, so the ones before stayed)."""
    path = tmp_path / "kept.db"
    store = await open_session_store(str(path))
    try:
        _, first = replayed_session("s1")
        _, refused = replayed_session("s2")
        with sqlite3.connect(path) as db:  # another program's rule on the file, refusing the second record
            db.execute(
                "CREATE TRIGGER refuse BEFORE INSERT ON kept_sessions "
                f"WHEN NEW.key_digest = '{refused.key_digest}' BEGIN SELECT RAISE(ABORT, 'refused here'); END"
            )
        with pytest.raises(StoreUnavailable, match="refused here"):
            await store.put([first, refused])
        assert await store.count() == 0
        await store.put([first])
        assert await store.count() == 1
    finally:
        await store.aclose()


async def test_a_sqlite_write_waits_for_another_writer_of_the_file(tmp_path: Path) -> None:
    """A write that finds the file locked by another process's write waits its turn (in a
    worker thread, the event loop free) rather than failing."""
    path = tmp_path / "kept.db"
    store = await open_session_store(str(path))
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    try:
        other.execute("BEGIN IMMEDIATE")  # the other writer holds the file's write lock
        written = anyio.Event()
        ticks = 0

        async def write() -> None:
            await store.put([snapshot_session()])
            written.set()

        async with anyio.create_task_group() as group:
            group.start_soon(write)
            while ticks < 20:  # the loop goes on while the write waits
                await anyio.sleep(0.01)
                ticks += 1
            assert not written.is_set()
            other.execute("COMMIT")
            with anyio.fail_after(5):
                await written.wait()
        assert await store.count() == 1
    finally:
        other.close()
        await store.aclose()


def _one_line(exc: BaseException) -> str:
    text = str(exc)
    assert "\n" not in text and text
    return text


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("", "the session store is empty"),
        ("postgres://db/sessions", "unknown session store postgres://db/sessions: give a file path"),
        ("mysql://me:hunter2@db/x", r"unknown session store mysql://me:\*\*\*@db/x"),
        ("sqlite:///", "names no file"),
        ("sqlite:///{tmp}/missing/dir/kept.db", "cannot open the session store"),
        ("{tmp}", "it is a directory"),
        ("{tmp}/not-a-db", "cannot open the session store .*not-a-db: file is not a database"),
        ("{tmp}/later.db", "its layout 9 is of a later version"),
        ("redis://127.0.0.1:{port}/0", "cannot open the session store redis://127.0.0.1:.*Connection refused"),
        ("redis://127.0.0.1:{port}/nine", "cannot open the session store"),
    ],
)
async def test_a_store_that_cannot_be_opened_is_one_line(url: str, words: str, tmp_path: Path) -> None:
    (tmp_path / "not-a-db").write_bytes(b"this is a text file, not a database" * 100)
    with sqlite3.connect(tmp_path / "later.db") as db:
        db.execute("PRAGMA user_version=9")
    url = url.format(tmp=tmp_path, port=free_port())
    with pytest.raises(StoreUnavailable, match=words) as caught:
        await open_session_store(url)
    _one_line(caught.value)


async def test_redis_going_away_is_a_typed_error_on_each_operation(redis: RedisServer) -> None:
    """Nothing kept is dropped silently: every call after the server went away says so."""
    store = await open_session_store(redis.url(1))
    token, record = replayed_session()
    await store.put([record])
    redis.stop()
    try:
        for operation in (
            store.put([snapshot_session()]),
            store.get(key_digest(token)),
            store.take(key_digest(token)),
            store.delete([key_digest(token)]),
            store.load_all(),
            store.prune(1.0),
            store.count(),
        ):
            with pytest.raises(
                StoreUnavailable, match=r"the session store redis://127\.0\.0\.1:\d+/1 failed"
            ) as caught:
                await operation
            _one_line(caught.value)
    finally:
        await store.aclose()


async def test_a_closed_store_says_so(store_url: str) -> None:
    store = await open_session_store(store_url)
    await store.aclose()
    await store.aclose()  # idempotent
    with pytest.raises(StoreUnavailable, match="is closed"):
        await store.count()


def test_a_password_never_shows() -> None:
    assert redacted("redis://:s3cret@cache:6379/2") == "redis://:***@cache:6379/2"
    assert redacted("redis://cache:6379/2") == "redis://cache:6379/2"
