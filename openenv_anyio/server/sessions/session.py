"""One session, whatever carries it: who it is, its environment, its slot, and its one end.

A :class:`Session` is opened one way (:meth:`Session.open`: the environment built, the view
shown to dashboards, ``session_opened`` logged) and ended one way (:meth:`Session.end`): the
only place that takes it off the dashboards (``UI-8``, with its
:class:`~openenv_anyio.core.SessionOutcome`), closes its environment (``WS-CLOSE-2``),
releases its capacity slot, logs ``session_closed`` and counts it. Every variant is built on
it: a plain ``/ws`` or ``WS /mcp`` session that ends with its connection, a resumable one
that outlives a dropped link (:mod:`.resumable`), a hosted one created over ``POST /mcp``
(kept, as resumable ones are, in :mod:`.kept`).

States: ``LIVE --end(outcome)--> ENDED``; a second ``end`` is a no-op (the first outcome stands).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Protocol

from ...core import SessionOutcome
from ..config import ServerConfig
from ..execution.bound_env import BoundEnv
from ..observability import Instruments
from ..session_registry import SessionRegistry, Slot
from ..ui.hub import EpisodeView, UiHub
from .ends import SessionEnd

__all__ = ["Session", "SessionIdentity", "SessionKind", "SessionServer"]


class SessionKind(enum.Enum):
    """What carries a session (the ``kind`` of its log events and metrics)."""

    PLAIN = "plain"  # a /ws or WS /mcp connection: the session ends with it
    RESUMABLE = "resumable"  # a negotiated /ws connection's: outlives a dropped link (EXT-RES-2)
    HOSTED = "hosted"  # created over POST /mcp: lives until closed, idle or shutdown (MCP-SES-5)


@dataclass(eq=False, slots=True)
class SessionIdentity:
    """Who a session is, as logs, metrics, spans, error frames and dashboards name it."""

    session_id: str
    peer: str | None
    view: EpisodeView

    @property
    def episode_id(self) -> str | None:
        return self.view.episode_id


class SessionServer(Protocol):
    """What a session's life uses of its server."""

    @property
    def config(self) -> ServerConfig: ...

    @property
    def registry(self) -> SessionRegistry: ...

    @property
    def hub(self) -> UiHub: ...

    @property
    def instruments(self) -> Instruments: ...

    def new_session_id(self) -> str: ...

    async def create_env(self) -> BoundEnv: ...

    async def close_env(self, bound: BoundEnv, owner: str) -> None: ...


class Session:
    """One session (see the module doc)."""

    __slots__ = ("server", "identity", "env", "slot", "kind", "outcome")

    def __init__(
        self, server: SessionServer, identity: SessionIdentity, env: BoundEnv, slot: Slot | None, kind: SessionKind
    ) -> None:
        self.server = server
        self.identity = identity
        self.env = env
        #: the capacity slot the session holds until it ends (``None``: its connection's, let go by it)
        self.slot = slot
        self.kind = kind
        #: how it ended; ``None`` while it lives
        self.outcome: SessionOutcome | None = None

    @staticmethod
    def new_identity(server: SessionServer, peer: str | None) -> SessionIdentity:
        """A fresh id (the worker's prefix first) and dashboard view for a session to open."""
        session_id = server.new_session_id()
        return SessionIdentity(session_id, peer, EpisodeView(session_id, server.config.action_log_size))

    @classmethod
    async def open(
        cls,
        server: SessionServer,
        kind: SessionKind,
        identity: SessionIdentity,
        slot: Slot | None,
        accepted_at: float | None = None,
    ) -> Session:
        """A new session with a new environment, shown to dashboards (``UI-2``) and logged;
        ``accepted_at``: the ``perf_counter()`` of its connection's upgrade, if it has one.

        Raises :class:`~openenv_anyio.server.execution.bound_env.FactoryFailure` when the
        environment cannot be built (the slot is still the caller's).
        """
        env = await server.create_env()
        server.registry.env_opened()
        session = cls(server, identity, env, slot, kind)
        server.hub.add_session(identity.view)
        server.instruments.session_opened(identity, accepted_at, kind=kind.value)
        return session

    @property
    def session_id(self) -> str:
        return self.identity.session_id

    @property
    def view(self) -> EpisodeView:
        return self.identity.view

    @property
    def ended(self) -> bool:
        return self.outcome is not None

    def closing_outcome(self) -> SessionOutcome:
        """``SHUTDOWN`` while the server drains or stops, else ``CLOSED``."""
        return SessionOutcome.SHUTDOWN if self.server.registry.closing else SessionOutcome.CLOSED

    async def end(
        self, outcome: SessionOutcome, *, last: SessionEnd | None = None, close_code: int | None = None
    ) -> None:
        """End the session for good with ``outcome``; ``last`` and ``close_code``: how its last
        connection ended, when the session ends with it (logged, and the close code counted)."""
        if self.outcome is not None:
            return
        self.outcome = outcome
        server = self.server
        server.hub.remove_session(self.view.session_id, outcome)  # UI-8
        server.instruments.session_ended(
            self.identity, kind=self.kind.value, outcome=outcome, close_code=close_code, reason=last and last.value
        )
        try:
            await server.close_env(self.env, f"session {self.view.session_id}")  # WS-CLOSE-2
        finally:
            if self.slot is not None:
                self.slot.release()
