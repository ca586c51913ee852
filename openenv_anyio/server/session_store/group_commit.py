"""Group commit: the writes of many sessions gathered into one store transaction.

A server that must have a step's record in the store before its answer leaves would pay one
transaction (one fsync on SQLite, one round trip on Redis) per step. :class:`GroupCommit`
pays one per *batch*: each :meth:`GroupCommit.write` adds its session to the batch that is
filling and waits; its one writer task takes the whole batch, writes it with one
:meth:`~.store.SessionStore.put`, and wakes every writer of it (with the store's error, if
the write failed: each of them learns it, nothing is dropped silently). Writes that arrive
while a batch is being written fill the next one; a later record of the same session in
one batch replaces the earlier. The writer task belongs to :func:`group_commit`'s task
group: leaving the block lets it write what is waiting, then it returns.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import anyio

from .errors import StoreUnavailable
from .record import StoredSession
from .store import SessionStore

__all__ = ["GroupCommit", "group_commit"]


@dataclass(slots=True)
class _Batch:
    sessions: dict[str, StoredSession] = field(default_factory=dict)
    written: anyio.Event = field(default_factory=anyio.Event)
    error: BaseException | None = None


class GroupCommit:
    """Writes gathered into batches (see the module docstring); made by :func:`group_commit`."""

    def __init__(self, store: SessionStore) -> None:
        self.store = store
        self._filling = _Batch()
        self._wake = anyio.Event()
        self._closed = False
        #: how many batches were written (each one store transaction)
        self.batches = 0

    async def write(self, session: StoredSession) -> None:
        """Return once ``session`` is in the store; raise the store's error if it is not."""
        if self._closed:
            raise RuntimeError("the group commit is closed")
        batch = self._filling
        batch.sessions[session.key_digest] = session
        self._wake.set()
        await batch.written.wait()
        if batch.error is not None:
            raise batch.error

    async def _write_batches(self) -> None:
        while not (self._closed and not self._filling.sessions):
            await self._wake.wait()
            self._wake = anyio.Event()
            await self._flush()

    async def _flush(self) -> None:
        batch, self._filling = self._filling, _Batch()
        if not batch.sessions:
            batch.written.set()
            return
        try:
            await self.store.put(list(batch.sessions.values()))
        except Exception as exc:  # every writer of the batch re-raises it
            batch.error = exc
        except BaseException:  # cancelled: its writers must not take the batch as written
            batch.error = StoreUnavailable(f"writing to the session store {self.store.name} was cancelled")
            raise
        finally:
            self.batches += 1
            batch.written.set()


@contextlib.asynccontextmanager
async def group_commit(store: SessionStore) -> AsyncIterator[GroupCommit]:
    """A :class:`GroupCommit` on ``store`` whose writer runs while the block does."""
    commit = GroupCommit(store)
    async with anyio.create_task_group() as group:
        group.start_soon(commit._write_batches)
        try:
            yield commit
        finally:
            commit._closed = True
            commit._wake.set()  # the writer writes what waits, then returns
