"""A session store in one SQLite file (``sqlite:///PATH`` or a plain path): nothing to install
or start.

The file is in WAL mode (readers never wait for the writer; several server processes may
share one file, each write waiting up to :data:`BUSY_TIMEOUT_MS` for another's) with
``synchronous=NORMAL``: a committed write survives the server process being killed (it is
in the WAL file), though not a power loss before the next checkpoint. Each call runs in a
worker thread (stdlib ``sqlite3`` blocks) on the store's connection, one at a time; but a
write of kept sessions (:meth:`SqliteStore.put`, the per-step write of ``--durable``) first
tries a second connection that never waits, on the calling thread, and goes to the worker
thread only when it would have to wait for the other connection or another process.
``PRAGMA user_version`` is the table layout's version: a file of a later layout is refused
when opened.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Final, TypeVar

import anyio.to_thread

from .errors import RecordError, StoreUnavailable
from .record import StoredSession, decode_record, encode_record
from .store import LoadedSessions

__all__ = ["BUSY_TIMEOUT_MS", "SqliteStore"]

#: How long a write waits for another process's write to the same file.
BUSY_TIMEOUT_MS: Final = 5000
_LAYOUT: Final = 1
#: SQLite's primary result codes for a lock another connection holds
_BUSY: Final = frozenset({sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED})
_SCHEMA: Final = (
    """CREATE TABLE IF NOT EXISTS kept_sessions (
        key_digest TEXT PRIMARY KEY,
        record BLOB NOT NULL,
        saved_at REAL NOT NULL
    ) WITHOUT ROWID""",
    "CREATE INDEX IF NOT EXISTS kept_sessions_saved_at ON kept_sessions (saved_at)",
)

Result = TypeVar("Result")


class SqliteStore:
    """A :class:`~.store.SessionStore` in one SQLite file (see the module docstring)."""

    def __init__(self, path: Path, connection: sqlite3.Connection, at_once: sqlite3.Connection) -> None:
        self._path = path
        self._db: sqlite3.Connection | None = connection
        #: the connection that never waits for the file's lock, used on the calling thread
        self._at_once: sqlite3.Connection | None = at_once
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return str(self._path)

    @classmethod
    async def open(cls, path: str | Path) -> SqliteStore:
        """The store in ``path`` (made if missing); :class:`StoreUnavailable` if it cannot be."""
        file = Path(path)

        def connect() -> SqliteStore:
            db = _connect(file)
            try:
                at_once = _connect_at_once(file)
            except BaseException:
                db.close()
                raise
            return cls(file, db, at_once)

        return await anyio.to_thread.run_sync(connect)

    async def _run(self, work: Callable[[sqlite3.Connection], Result]) -> Result:
        def locked() -> Result:
            with self._lock:
                if self._db is None:
                    raise StoreUnavailable(f"the session store {self._path} is closed")
                try:
                    return work(self._db)
                except sqlite3.Error as exc:
                    raise self._failed(exc) from None

        return await anyio.to_thread.run_sync(locked)

    def _failed(self, exc: sqlite3.Error) -> StoreUnavailable:
        return StoreUnavailable(f"the session store {self._path} failed: {exc}")

    async def put(self, sessions: Sequence[StoredSession]) -> None:
        rows = [(session.key_digest, encode_record(session), session.saved_at) for session in sessions]

        def write(db: sqlite3.Connection) -> None:
            with _transaction(db):
                db.executemany("INSERT OR REPLACE INTO kept_sessions VALUES (?, ?, ?)", rows)

        if rows and not self._written_at_once(write):
            await self._run(write)

    def _written_at_once(self, write: Callable[[sqlite3.Connection], None]) -> bool:
        """``write`` on the calling thread, if it needs no wait for the file's write lock; False
        when it must go to the worker thread, which waits its turn (a thread hop costs more
        than the write: bench/README.md, "Sessions kept in a store")."""
        if self._at_once is None:
            return False
        try:
            write(self._at_once)
        except sqlite3.OperationalError as exc:
            if exc.sqlite_errorcode & 0xFF in _BUSY:  # SQLITE_BUSY_SNAPSHOT and the like too
                return False
            raise self._failed(exc) from None
        except sqlite3.Error as exc:
            raise self._failed(exc) from None
        return True

    async def get(self, digest: str) -> StoredSession | None:
        def read(db: sqlite3.Connection) -> bytes | None:
            row = db.execute("SELECT record FROM kept_sessions WHERE key_digest = ?", (digest,)).fetchone()
            return None if row is None else _blob(row[0])

        data = await self._run(read)
        return None if data is None else decode_record(data, key=digest)

    async def take(self, digest: str) -> StoredSession | None:
        def remove(db: sqlite3.Connection) -> bytes | None:
            with _transaction(db):
                row = db.execute(
                    "DELETE FROM kept_sessions WHERE key_digest = ? RETURNING record", (digest,)
                ).fetchone()
            return None if row is None else _blob(row[0])

        data = await self._run(remove)
        return None if data is None else decode_record(data, key=digest)

    async def delete(self, digests: Sequence[str]) -> None:
        def remove(db: sqlite3.Connection) -> None:
            with _transaction(db):
                db.executemany("DELETE FROM kept_sessions WHERE key_digest = ?", [(digest,) for digest in digests])

        if digests:
            await self._run(remove)

    async def prune(self, saved_before: float) -> int:
        def remove(db: sqlite3.Connection) -> int:
            with _transaction(db):
                return db.execute("DELETE FROM kept_sessions WHERE saved_at < ?", (saved_before,)).rowcount

        return await self._run(remove)

    async def load_all(self) -> LoadedSessions:
        def read(db: sqlite3.Connection) -> list[tuple[str, bytes]]:
            return [(key, _blob(data)) for key, data in db.execute("SELECT key_digest, record FROM kept_sessions")]

        loaded = LoadedSessions()
        for key, data in await self._run(read):
            try:
                loaded.sessions.append(decode_record(data, key=key))
            except RecordError as exc:
                loaded.faults.append(exc)
        return loaded

    async def count(self) -> int:
        def read(db: sqlite3.Connection) -> int:
            return int(db.execute("SELECT count(*) FROM kept_sessions").fetchone()[0])

        return await self._run(read)

    async def aclose(self) -> None:
        if self._at_once is not None:
            self._at_once.close()
            self._at_once = None

        def close() -> None:
            with self._lock:
                if self._db is not None:
                    self._db.close()
                    self._db = None

        await anyio.to_thread.run_sync(close)


def _connect(path: Path) -> sqlite3.Connection:
    """Open (and if needed make) the file, WAL mode, the table; one line for what fails."""
    if path.is_dir():
        raise StoreUnavailable(f"cannot open the session store {path}: it is a directory")
    try:
        db = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=BUSY_TIMEOUT_MS / 1000)
    except sqlite3.Error as exc:
        raise StoreUnavailable(f"cannot open the session store {path}: {exc}") from None
    try:
        layout = int(db.execute("PRAGMA user_version").fetchone()[0])
        if layout > _LAYOUT:
            raise StoreUnavailable(
                f"cannot open the session store {path}: its layout {layout} is of a later version (this one: {_LAYOUT})"
            )
        mode = str(db.execute("PRAGMA journal_mode=WAL").fetchone()[0]).lower()
        if mode != "wal":
            raise StoreUnavailable(f"cannot open the session store {path}: it cannot be put in WAL mode ({mode})")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        for statement in _SCHEMA:
            db.execute(statement)
        db.execute(f"PRAGMA user_version={_LAYOUT}")
    except sqlite3.Error as exc:
        db.close()
        raise StoreUnavailable(f"cannot open the session store {path}: {exc}") from None
    except StoreUnavailable:
        db.close()
        raise
    return db


def _connect_at_once(path: Path) -> sqlite3.Connection:
    """A second connection to the file :func:`_connect` opened, that never waits for its lock."""
    try:
        db = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=0)
        db.execute("PRAGMA synchronous=NORMAL")
    except sqlite3.Error as exc:
        raise StoreUnavailable(f"cannot open the session store {path}: {exc}") from None
    return db


@contextlib.contextmanager
def _transaction(db: sqlite3.Connection) -> Iterator[None]:
    """One write transaction, committed whole or rolled back: the connections are in
    autocommit mode (``isolation_level=None``), where each statement commits on its own."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def _blob(value: object) -> bytes:
    """A record as read back: bytes as written; a value someone else changed into text or a
    number is handed on as its bytes, for the codec to judge (a corrupt record, not a crash)."""
    if isinstance(value, bytes):
        return value
    return str(value).encode("utf-8", "surrogatepass")
