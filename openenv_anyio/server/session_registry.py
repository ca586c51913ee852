"""Who is connected: capacity slots, live environment count, and shutdown of everyone."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Protocol

import trio

from .lifecycle import ServerPhase, check_transition

__all__ = ["Connection", "LateClose", "SessionRegistry", "SharedCapacity", "Slot"]


class LateClose(Protocol):
    """An environment whose ``close()`` outlived its time bound."""

    @property
    def name(self) -> str: ...

    def still_closing(self) -> bool: ...


class Connection(Protocol):
    """A connection the registry can ask to end (a ``/ws`` session or a ``/ws/ui`` subscriber)."""

    def request_shutdown(self) -> None:
        """End after the request being executed, if any, is answered (close 1001)."""
        ...

    def abort(self) -> None:
        """End now: abandon the request being executed and close with 1001."""
        ...


def _ignore(active: int) -> None:
    return None


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
    """Counts sessions against ``max_sessions`` (``WS-CAP-1``), holds the server's phase and
    ends every connection on shutdown (the sequence is described in :mod:`.lifecycle`).

    With ``shared`` (a worker of a multi-process server) the limit holds for all workers
    together: a slot is taken from the shared count as well as counted here.
    ``on_sessions_changed(active)`` hears every change of this process's session count.
    ``stuck_limit``: environments whose ``close()`` outlived its bound and still runs (each
    holds a thread) at which no new slot is given until one returns (``SRV-FAULT-3``);
    ``on_stuck_changed(count)`` hears every change of their number this registry sees.
    """

    def __init__(
        self,
        max_sessions: int | None,
        shared: SharedCapacity | None = None,
        on_sessions_changed: Callable[[int], None] = _ignore,
        *,
        stuck_limit: int | None = None,
        on_stuck_changed: Callable[[int], None] = _ignore,
    ) -> None:
        self.max_sessions = max_sessions
        self.shared = shared
        self.sessions = 0
        self.live_envs = 0
        self.phase = ServerPhase.STARTING
        self._connections: set[Connection] = set()
        self._late: list[tuple[LateClose, str]] = []
        self._changed = trio.Event()
        self._on_sessions_changed = on_sessions_changed
        self.stuck_limit = stuck_limit
        self._on_stuck_changed = on_stuck_changed

    @property
    def closing(self) -> bool:
        """Whether the server refuses new sessions (draining or stopping)."""
        return self.phase is not ServerPhase.SERVING and self.phase is not ServerPhase.STARTING

    @property
    def ready(self) -> bool:
        """Whether the server accepts new sessions (``GET /ready``): serving, and not held
        by stuck closes (``SRV-FAULT-3``)."""
        return self.phase is ServerPhase.SERVING and not (self._late and self.stuck_full)

    def refusal(self) -> str:
        """Why a new session is refused now (:meth:`try_reserve` gave ``None`` while serving):
        the stuck closes that hold every new session off, else the capacity in use."""
        if self._late and self.stuck_full:
            stuck = self.stuck_count()
            whose = "1 environment's" if stuck == 1 else f"{stuck} environments'"
            return (
                f"Server refuses new sessions: {whose} close() still running, the most it keeps "
                f"(max_stuck_closes={self.stuck_limit}); retry once one returns"
            )
        limit = "" if self.max_sessions is None else f"/{self.max_sessions}"
        return f"Server at capacity: {self.active_sessions}{limit} sessions active"

    def move_to(self, phase: ServerPhase) -> None:
        check_transition(self.phase, phase)
        self.phase = phase

    def try_reserve(self) -> Slot | None:
        """Take a session slot; ``None`` when the server is full or shutting down."""
        if self.closing:
            return None
        if self._late and self.stuck_full:
            return None
        if self.shared is not None:
            if not self.shared.take():
                return None
        elif self.max_sessions is not None and self.sessions >= self.max_sessions:
            return None
        self.sessions += 1
        self._on_sessions_changed(self.sessions)
        return Slot(self)

    def _release(self) -> None:
        self.sessions -= 1
        if self.shared is not None:
            self.shared.give_back()
        self._on_sessions_changed(self.sessions)
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
        self._prune()
        self._late.append((env, owner))
        self._on_stuck_changed(len(self._late))

    def _prune(self) -> int:
        """Forget the late closes that have returned since; how many still run."""
        late = [entry for entry in self._late if entry[0].still_closing()]
        if len(late) != len(self._late):
            self._late = late
            self._on_stuck_changed(len(late))
        return len(late)

    @property
    def stuck_full(self) -> bool:
        """Whether ``stuck_limit`` late closes still run: no new session until one returns."""
        return self.stuck_limit is not None and self._prune() >= self.stuck_limit

    def stuck_count(self) -> int:
        """How many environments' ``close()`` outlived its bound and still runs."""
        return self._prune()

    def stuck(self) -> list[str]:
        """``"EnvName (owner)"`` for each environment whose ``close()`` outlived its bound
        and still runs."""
        self._prune()
        return [f"{env.name} ({owner})" for env, owner in self._late]

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

    async def _settled(self, timeout_s: float) -> bool:
        """Wait (at most ``timeout_s``) until no connection, session or environment is left."""
        with trio.move_on_after(timeout_s):
            while self._connections or self.sessions or self.live_envs:
                await self._changed.wait()
            return True
        return False

    async def drain(self, timeout_s: float = math.inf) -> bool:
        """``DRAINING``: refuse new sessions and ask every connection to end after its
        current request; wait at most ``timeout_s``. ``True`` when everyone has ended."""
        self.move_to(ServerPhase.DRAINING)
        for connection in list(self._connections):
            connection.request_shutdown()
        return await self._settled(timeout_s)

    async def stop(self, grace_s: float = math.inf) -> bool:
        """``STOPPING``: end the connections still executing a request (close 1001) and
        wait at most ``grace_s`` for their environments to close."""
        self.move_to(ServerPhase.STOPPING)
        for connection in list(self._connections):
            connection.abort()
        return await self._settled(grace_s)

    async def shutdown(self, drain_timeout_s: float = math.inf, grace_s: float = math.inf) -> None:
        """Drain, then stop (``WS-DRAIN-1``, ``WS-SHUT-1``): the whole sequence, in one place."""
        if self.phase is ServerPhase.STARTING or self.phase is ServerPhase.SERVING:
            await self.drain(drain_timeout_s)
        if self.phase is ServerPhase.DRAINING:
            await self.stop(grace_s)
        if self.phase is ServerPhase.STOPPING:
            self.move_to(ServerPhase.STOPPED)
