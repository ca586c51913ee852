"""The one interface of every session store backend (SQLite, Redis)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from .errors import RecordError
from .record import StoredSession

__all__ = ["LoadedSessions", "SessionStore"]


@dataclass(slots=True)
class LoadedSessions:
    """Every session a store keeps: those read back, and one error for each that could not
    be (an incompatible or corrupt record spoils only itself)."""

    sessions: list[StoredSession] = field(default_factory=list)
    faults: list[RecordError] = field(default_factory=list)


class SessionStore(Protocol):
    """Where kept sessions outlive the server process, found by their key's digest.

    Every method may raise :class:`~.errors.StoreUnavailable` (the store went away: the
    operation's outcome is unknown, and the caller says so for the sessions it concerns);
    reads raise :class:`~.errors.RecordError` for a record that cannot be read back. Each
    call runs off the event loop; a store is used by one process's tasks at once and by
    other processes sharing it.
    """

    @property
    def name(self) -> str:
        """The store as logs show it (its path or URL, without a password)."""
        ...

    async def put(self, sessions: Sequence[StoredSession]) -> None:
        """Write ``sessions`` (each replacing the one kept under its digest), all at once:
        after a failure none of them, or all of them, is kept."""
        ...

    async def get(self, digest: str) -> StoredSession | None:
        """The session kept under ``digest``, or None."""
        ...

    async def take(self, digest: str) -> StoredSession | None:
        """The session kept under ``digest``, removed from the store in the same step (one
        server of several sharing the store takes a session, never two), or None. A record
        that cannot be read back is removed too, and its error raised."""
        ...

    async def delete(self, digests: Sequence[str]) -> None:
        """Forget the sessions kept under ``digests`` (those kept under none: nothing)."""
        ...

    async def prune(self, saved_before: float) -> int:
        """Forget the sessions last written before ``saved_before`` (seconds since the epoch:
        those whose wait for a connection is over), in one step; how many were forgotten."""
        ...

    async def load_all(self) -> LoadedSessions:
        """Every session kept (a server starting takes stock)."""
        ...

    async def count(self) -> int:
        """How many sessions are kept."""
        ...

    async def aclose(self) -> None:
        """Release the store's connection (idempotent)."""
        ...
