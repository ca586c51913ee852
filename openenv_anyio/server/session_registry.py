"""Who is connected: capacity slots, live environment count, and shutdown of everyone."""

from __future__ import annotations

import math
from typing import Protocol

import trio

__all__ = ["Connection", "LateClose", "SessionRegistry", "SharedCapacity", "Slot"]


class LateClose(Protocol):
    """An environment whose ``close()`` outlived its time bound."""

    @property
    def name(self) -> str: ...

    def still_closing(self) -> bool: ...


class Connection(Protocol):
    """A connection the registry can ask to end (a ``/ws`` session or a ``/ws/ui`` subscriber)."""

    def request_shutdown(self) -> None: ...


class Slot:
    """One reserved session slot (``WS-CAP-1``). Released once, by whichever path ends the
    session first: the peer's close as it arrives, the server's own close before it is sent
    (``WS-CAP-2``), or the session's owner on the way out."""

    __slots__ = ("_registry", "held")

    def __init__(self, registry: SessionRegistry) -> None:
        self._registry = registry
        self.held = True

    def release(self) -> None:
        if self.held:
            self.held = False
            self._registry._release()


class SharedCapacity(Protocol):
    """Session slots shared by the worker processes of one server (``--workers``)."""

    def take(self) -> bool: ...

    def give_back(self) -> None: ...

    def total(self) -> int: ...


class SessionRegistry:
    """Counts sessions against ``max_sessions`` (``WS-CAP-1``) and ends them on shutdown.

    With ``shared`` (a worker of a multi-process server) the limit holds for all workers
    together: a slot is taken from the shared count as well as counted here.
    """

    def __init__(self, max_sessions: int | None, shared: SharedCapacity | None = None) -> None:
        self.max_sessions = max_sessions
        self.shared = shared
        self.sessions = 0
        self.live_envs = 0
        self.closing = False
        self._connections: set[Connection] = set()
        self._late: list[tuple[LateClose, str]] = []
        self._changed = trio.Event()

    def try_reserve(self) -> Slot | None:
        """Take a session slot; ``None`` when the server is full or shutting down."""
        if self.closing:
            return None
        if self.shared is not None:
            if not self.shared.take():
                return None
        elif self.max_sessions is not None and self.sessions >= self.max_sessions:
            return None
        self.sessions += 1
        return Slot(self)

    def _release(self) -> None:
        self.sessions -= 1
        if self.shared is not None:
            self.shared.give_back()
        self._notify()

    @property
    def active_sessions(self) -> int:
        """Sessions of the whole server (all workers when shared)."""
        return self.sessions if self.shared is None else self.shared.total()

    def env_opened(self) -> None:
        self.live_envs += 1

    def env_closed(self) -> None:
        self.live_envs -= 1
        self._notify()

    def closing_late(self, env: LateClose, owner: str) -> None:
        """``env``'s ``close()`` did not return within its bound (``SRV-FAULT-3``)."""
        self._late = [entry for entry in self._late if entry[0].still_closing()]
        self._late.append((env, owner))

    def stuck(self) -> list[str]:
        """``"EnvName (owner)"`` for each environment whose ``close()`` outlived its bound
        and still runs."""
        return [f"{env.name} ({owner})" for env, owner in self._late if env.still_closing()]

    def attach(self, connection: Connection) -> None:
        self._connections.add(connection)
        if self.closing:
            connection.request_shutdown()

    def detach(self, connection: Connection) -> None:
        self._connections.discard(connection)
        self._notify()

    def _notify(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    def stats(self) -> dict[str, int]:
        """Active sessions, live environment instances and open connections."""
        return {
            "active_sessions": self.sessions,
            "live_envs": self.live_envs,
            "connections": len(self._connections),
        }

    async def shutdown(self, grace_s: float = math.inf) -> None:
        """Refuse new sessions, ask every connection to end, wait (at most ``grace_s``)."""
        self.closing = True
        for connection in list(self._connections):
            connection.request_shutdown()
        with trio.move_on_after(grace_s):
            while self._connections or self.sessions or self.live_envs:
                await self._changed.wait()
