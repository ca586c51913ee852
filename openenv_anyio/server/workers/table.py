"""The worker table: what the worker processes of one server share (a small file, mmap'd).

One record per worker slot: the sessions it holds, its generation (how many times the
slot's process was started) and whether its current process serves yet (new sessions are
balanced over serving workers only: one still starting would hold them unanswered). A
slot's sessions are two tallies, one per process: during a rolling restart the slot has
two, the old one draining and its replacement, each counting in its own tally, so the
supervisor can drop the old one's tally when it exits, whether it ended its sessions or
was killed with them. The
capacity limit is checked against the sum over all slots, so ``--max-concurrent-envs`` holds
for the server as a whole, not per worker (``WS-CAP-1``).

Theory of operation: every write takes an exclusive ``flock`` on the file (each process
opens the file itself, so each has its own lock owner) and holds it for a few
microseconds; a process that dies releases it with its file descriptors. A slot is written
by its own worker only (``take``/``give_back``), except when the supervisor restarts a dead
worker (it zeroes the slot's tallies, marks it not serving and bumps its generation before
the new process starts) or drops the tally of a replaced process that exited (``clear``).
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
_SLOT: Final = struct.Struct("<qqqq")  # sessions in tally 0, in tally 1, generation, serving (0/1)
#: a slot's two tallies (each process of the slot counts in one)
TALLIES: Final = (0, 1)


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
        first, second, _, _ = _SLOT.unpack_from(self._map, self._offset(slot))
        return int(first + second)

    def serving(self, slot: int) -> bool:
        return bool(_SLOT.unpack_from(self._map, self._offset(slot))[3])

    def generation(self, slot: int) -> int:
        return int(_SLOT.unpack_from(self._map, self._offset(slot))[2])

    def _total(self) -> int:
        return sum(self.sessions(slot) for slot in range(self.slots))

    def _add(self, slot: int, tally: int, change: int | None) -> None:
        """Add ``change`` to one of ``slot``'s tallies (None: set it to 0); the lock is held."""
        if tally not in TALLIES:
            raise IndexError(f"a slot's tally is 0 or 1, not {tally}")
        offset = self._offset(slot)
        record = list(_SLOT.unpack_from(self._map, offset))
        record[tally] = 0 if change is None else max(0, record[tally] + change)
        _SLOT.pack_into(self._map, offset, *record)

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
            first, second, generation, _ = _SLOT.unpack_from(self._map, offset)
            _SLOT.pack_into(self._map, offset, first, second, generation, 1)

    def take(self, slot: int, tally: int = 0) -> bool:
        """Count one more session in ``slot``'s ``tally``; ``False`` when the server is full."""
        with self._locked():
            if self.max_sessions is not None and self._total() >= self.max_sessions:
                return False
            self._add(slot, tally, 1)
            return True

    def give_back(self, slot: int, tally: int = 0) -> None:
        """Count one session fewer in ``slot``'s ``tally``."""
        with self._locked():
            self._add(slot, tally, -1)

    def clear(self, slot: int, tally: int) -> None:
        """The process that counted in ``slot``'s ``tally`` is gone, and its sessions with it."""
        with self._locked():
            self._add(slot, tally, None)

    def restart(self, slot: int) -> int:
        """A new process for ``slot``: its sessions are gone, it does not serve until it says
        so, its generation moves on (returned)."""
        offset = self._offset(slot)
        with self._locked():
            _, _, generation, _ = _SLOT.unpack_from(self._map, offset)
            _SLOT.pack_into(self._map, offset, 0, 0, generation + 1, 0)
            return int(generation + 1)
