"""The negotiated sessions of one server (resume extension): what outlives a connection."""

from __future__ import annotations

from typing import Protocol

import trio

from ...core import RequestLedger, ResumeToken, new_resume_token
from ..execution.bound_env import BoundEnv
from ..session_registry import Slot
from ..ui.hub import EpisodeView
from .session import Session

__all__ = ["Owner", "ResumableSession", "ResumableSessions"]


class Owner(Protocol):
    """The connection driving a session now (``EXT-RES-5``)."""

    @property
    def released(self) -> trio.Event:
        """Set once the connection has let go of the session."""
        ...

    def supersede(self) -> None:
        """A newer connection takes the session over: end after the current request."""
        ...


class ResumableSession:
    """One negotiated session (its :class:`~.session.Session`), its token, its ledger, and
    who drives it now."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.token = new_resume_token(session.session_id)
        self.ledger: RequestLedger[str] = RequestLedger()
        self.answered = trio.Event()
        self.owner: Owner | None = None

    @property
    def session_id(self) -> str:
        return self.session.session_id

    @property
    def env(self) -> BoundEnv:
        return self.session.env

    @property
    def view(self) -> EpisodeView:
        return self.session.view

    @property
    def slot(self) -> Slot | None:
        """Held until the session ends, not just its connection (``EXT-RES-3``)."""
        return self.session.slot

    @property
    def ended(self) -> bool:
        return self.session.ended

    def answer_stored(self) -> None:
        self.answered.set()
        self.answered = trio.Event()


class ResumableSessions:
    """The negotiated sessions of one server, by session id (tokens checked in constant time)."""

    def __init__(self) -> None:
        self._sessions: dict[str, ResumableSession] = {}

    def __len__(self) -> int:
        return len(self._sessions)

    def add(self, session: ResumableSession) -> None:
        self._sessions[session.session_id] = session

    def discard(self, session: ResumableSession) -> None:
        if self._sessions.get(session.session_id) is session:
            del self._sessions[session.session_id]

    def find(self, presented: str) -> ResumableSession | None:
        """The live session ``presented`` names, or None (unknown, malformed, wrong secret)."""
        token = ResumeToken.parse(presented)
        if token is None:
            return None
        session = self._sessions.get(token.session_id)
        if session is None or session.ended or not session.token.matches(token.secret):
            return None
        return session
