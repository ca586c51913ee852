"""The worker table: what the worker processes of one server share (a small file, mmap'd).

One record per worker slot: the sessions it holds, its generation (how many times the
slot's process was started) and whether its current process serves yet (new sessions are
balanced over serving workers only: one still starting would hold them unanswered). The
capacity limit is checked against the sum over all slots, so ``--max-concurrent-envs`` holds
for the server as a whole, not per worker (``WS-CAP-1``).

Theory of operation: every write takes an exclusive ``flock`` on the file (each process
opens the file itself, so each has its own lock owner) and holds it for a few
microseconds; a process that dies releases it with its file descriptors. A slot is written
by its own worker only (``take``/``give_back``), except when the supervisor restarts a dead
worker: it zeroes the slot's count, marks it not serving and bumps its generation before
the new process starts.
Session ids carry the slot and generation that created them (:mod:`.routing`), so a resume
of a session whose worker died finds a newer generation and ends as ``SESSION_NOT_FOUND``.
"""

from __future__ import annotations

import contextlib
import fcntl
import mmap
import os
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Final

__all__ = ["WorkerTable"]

_MAGIC: Final = b"OEAWTAB1"
_HEADER: Final = struct.Struct("<8sqq")  # magic, slots, max_sessions (-1: no limit)
_SLOT: Final = struct.Struct("<qqq")  # sessions, generation, serving (0/1)


class WorkerTable:
    """One process's handle on the table file (open it in each process; never share one)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
        try:
            self._map = mmap.mmap(self._fd, 0)
        except BaseException:
            os.close(self._fd)
            raise
        magic, self.slots, limit = _HEADER.unpack_from(self._map, 0)
        if magic != _MAGIC:
            self.close()
            raise ValueError(f"{path} is not a worker table")
        self.max_sessions: int | None = None if limit < 0 else limit

    @classmethod
    def create(cls, path: Path, slots: int, max_sessions: int | None) -> WorkerTable:
        """Write a fresh table for ``slots`` workers (all counts 0, generations 0) and open it."""
        if slots < 1:
            raise ValueError("a worker table needs at least one slot")
        data = bytearray(_HEADER.size + slots * _SLOT.size)
        _HEADER.pack_into(data, 0, _MAGIC, slots, -1 if max_sessions is None else max_sessions)
        path.write_bytes(bytes(data))
        return cls(path)

    def close(self) -> None:
        with contextlib.suppress(ValueError, BufferError):
            self._map.close()
        with contextlib.suppress(OSError):
            os.close(self._fd)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    def _offset(self, slot: int) -> int:
        if not 0 <= slot < self.slots:
            raise IndexError(f"worker slot {slot} out of range 0..{self.slots - 1}")
        return _HEADER.size + slot * _SLOT.size

    def sessions(self, slot: int) -> int:
        return int(_SLOT.unpack_from(self._map, self._offset(slot))[0])

    def serving(self, slot: int) -> bool:
        return bool(_SLOT.unpack_from(self._map, self._offset(slot))[2])

    def generation(self, slot: int) -> int:
        return int(_SLOT.unpack_from(self._map, self._offset(slot))[1])

    def _total(self) -> int:
        return sum(_SLOT.unpack_from(self._map, self._offset(slot))[0] for slot in range(self.slots))

    def total(self) -> int:
        """Sessions held by all workers together."""
        with self._locked():
            return self._total()

    def loads(self) -> list[int]:
        """Sessions per slot (a snapshot)."""
        with self._locked():
            return [self.sessions(slot) for slot in range(self.slots)]

    def serving_loads(self) -> dict[int, int]:
        """Sessions per slot whose process serves (a snapshot)."""
        with self._locked():
            return {slot: self.sessions(slot) for slot in range(self.slots) if self.serving(slot)}

    def mark_serving(self, slot: int) -> None:
        """The slot's process listens and takes connections."""
        offset = self._offset(slot)
        with self._locked():
            sessions, generation, _ = _SLOT.unpack_from(self._map, offset)
            _SLOT.pack_into(self._map, offset, sessions, generation, 1)

    def take(self, slot: int) -> bool:
        """Count one more session for ``slot``; ``False`` when the server is full."""
        offset = self._offset(slot)
        with self._locked():
            if self.max_sessions is not None and self._total() >= self.max_sessions:
                return False
            sessions, generation, serving = _SLOT.unpack_from(self._map, offset)
            _SLOT.pack_into(self._map, offset, sessions + 1, generation, serving)
            return True

    def give_back(self, slot: int) -> None:
        """Count one session fewer for ``slot``."""
        offset = self._offset(slot)
        with self._locked():
            sessions, generation, serving = _SLOT.unpack_from(self._map, offset)
            _SLOT.pack_into(self._map, offset, max(0, sessions - 1), generation, serving)

    def restart(self, slot: int) -> int:
        """A new process for ``slot``: its sessions are gone, it does not serve until it says
        so, its generation moves on (returned)."""
        offset = self._offset(slot)
        with self._locked():
            _, generation, _ = _SLOT.unpack_from(self._map, offset)
            _SLOT.pack_into(self._map, offset, 0, generation + 1, 0)
            return int(generation + 1)
