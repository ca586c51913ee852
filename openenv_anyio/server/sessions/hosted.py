"""Sessions created over HTTP (``openenv/session/create`` on ``POST /mcp``) that outlive their sockets.

Theory of operation. ``POST /mcp`` creates a session: a capacity slot, an environment on its
own runner, a UI view. The client gets the session's id, a secret (256 random bits,
``secrets.token_urlsafe(32)``): whoever holds it may call the session's tools over
``POST /mcp`` and attach one WebSocket to it with ``/ws?session_id=ID`` (``MCP-SES-1``,
``MCP-SES-3``). Dashboards and logs see a separate public id, never the secret. Under
``serve --workers N`` the id starts with its worker's slot and generation, and requests
naming it reach that worker (``workers.forwarding``, ``workers.routing``). A socket
that closes detaches; the session goes on until ``openenv/session/close``, the idle timeout
(``session_timeout_s``, else ``hosted_session_idle_s``, with no request and no socket
attached, ``MCP-SES-5``) or shutdown. A close requested while a socket is attached takes
effect when the socket detaches.

States and transitions (anything else is a bug and raises)::

    OPEN      --attach-->        ATTACHED
    ATTACHED  --detach-->        OPEN
    ATTACHED  --close-->         CLOSING     (ends when the socket detaches)
    CLOSING   --detach-->        ENDED
    OPEN      --close/idle/shutdown--> ENDED

The store is the owner of every session: ending it (:meth:`~.session.Session.end`, with the
outcome: closed, expired when idle, shutdown) closes its environment (``close()`` once), frees
the slot, and logs and counts it as every session is. The idle reaper is a task of the
server's nursery.
"""

from __future__ import annotations

import enum
import hashlib
import math
import secrets
from typing import Final, Protocol

import trio

from ...core import SessionOutcome
from ..execution.bound_env import BoundEnv
from ..session_registry import Slot
from ..ui.hub import EpisodeView
from .session import Session, SessionKind, SessionServer

__all__ = ["HostedSession", "HostedSessions", "SessionState", "SocketHolder"]

#: Random bytes in a session id (256 bits; an id grants the session).
SESSION_ID_BYTES: Final = 32


class SessionState(enum.Enum):
    OPEN = "open"
    ATTACHED = "attached"
    CLOSING = "closing"
    ENDED = "ended"


_TRANSITIONS: Final[dict[tuple[SessionState, str], SessionState]] = {
    (SessionState.OPEN, "attach"): SessionState.ATTACHED,
    (SessionState.ATTACHED, "detach"): SessionState.OPEN,
    (SessionState.ATTACHED, "close"): SessionState.CLOSING,
    (SessionState.CLOSING, "detach"): SessionState.ENDED,
    (SessionState.OPEN, "close"): SessionState.ENDED,
}


class HostedServer(SessionServer, Protocol):
    """What the hosted sessions use of their server: a session's life, and the prefix that
    names this worker in their ids."""

    @property
    def session_prefix(self) -> str: ...


class SocketHolder(Protocol):
    """The WebSocket attached to a session (asked to end at shutdown or on close)."""

    def request_shutdown(self) -> None: ...


def _digest(session_id: str) -> bytes:
    return hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).digest()


class HostedSession:
    """One HTTP-created session (its :class:`~.session.Session`, shown under a public id),
    its secret id, state and last use."""

    def __init__(self, session_id: str, session: Session) -> None:
        self.session_id = session_id
        self.session = session
        self.state = SessionState.OPEN
        self.socket: SocketHolder | None = None
        self.last_used = trio.current_time()
        #: how it ends once its socket detaches (a close asked while one was attached)
        self.closing_outcome = SessionOutcome.CLOSED

    @property
    def env(self) -> BoundEnv:
        return self.session.env

    @property
    def view(self) -> EpisodeView:
        return self.session.view

    @property
    def slot(self) -> Slot | None:
        return self.session.slot

    @property
    def attachable(self) -> bool:
        """No socket is attached (``MCP-SES-3``: one at a time)."""
        return self.state is SessionState.OPEN

    @property
    def public_id(self) -> str:
        """The id dashboards and logs see (never the secret)."""
        return self.session.session_id

    def touch(self) -> None:
        self.last_used = trio.current_time()

    def _move(self, event: str) -> SessionState:
        try:
            self.state = _TRANSITIONS[(self.state, event)]
        except KeyError:
            raise RuntimeError(f"hosted session {self.public_id}: {event!r} in state {self.state.value}") from None
        return self.state


class HostedSessions:
    """The HTTP-created sessions of one server, found by their secret id."""

    def __init__(self, server: HostedServer) -> None:
        self._server = server
        self._by_digest: dict[bytes, HostedSession] = {}
        #: shutdown has begun: no new sessions (set by :meth:`end_all`)
        self.closed = False

    def __len__(self) -> int:
        return len(self._by_digest)

    async def create(self, slot: Slot) -> HostedSession:
        """A new session holding ``slot`` (the session releases it when it ends).

        Raises :class:`~openenv_anyio.server.execution.bound_env.FactoryFailure` (the slot is still the caller's).
        """
        server = self._server
        identity = Session.new_identity(server, None)  # its public id, as dashboards and logs name it
        opened = await Session.open(server, SessionKind.HOSTED, identity, slot)
        session = HostedSession(
            server.session_prefix + secrets.token_urlsafe(SESSION_ID_BYTES), opened
        )  # the prefix names this worker
        self._by_digest[_digest(session.session_id)] = session
        return session

    def find(self, session_id: str) -> HostedSession | None:
        """The live session ``session_id`` names, else None."""
        session = self._by_digest.get(_digest(session_id))
        return session if session is not None and session.state is not SessionState.ENDED else None

    def attach(self, session: HostedSession, socket: SocketHolder) -> None:
        session._move("attach")
        session.socket = socket
        session.touch()

    async def detach(self, session: HostedSession) -> None:
        """The attached socket is gone: the session waits for the next one (or ends if closing)."""
        session.socket = None
        session.touch()
        if session._move("detach") is SessionState.ENDED:
            await self._end(session, session.closing_outcome)

    async def close(self, session: HostedSession, outcome: SessionOutcome = SessionOutcome.CLOSED) -> bool:
        """``openenv/session/close`` (or ``outcome``'s reason): ``True`` when ended now,
        ``False`` when it ends on detach."""
        if session._move("close") is SessionState.ENDED:
            await self._end(session, outcome)
            return True
        assert session.socket is not None
        session.closing_outcome = outcome
        session.socket.request_shutdown()
        return False

    async def _end(self, session: HostedSession, outcome: SessionOutcome) -> None:
        session.state = SessionState.ENDED
        self._by_digest.pop(_digest(session.session_id), None)
        await session.session.end(outcome)

    async def end_all(self) -> None:
        """Shutdown: refuse new sessions and end every session (an attached one when its
        socket has closed)."""
        self.closed = True
        for session in list(self._by_digest.values()):
            if session.state in (SessionState.OPEN, SessionState.ATTACHED):
                await self.close(session, SessionOutcome.SHUTDOWN)

    async def reap_idle(self) -> None:
        """End sessions with no socket and no request for ``session_timeout_s``, else
        ``hosted_session_idle_s`` (runs until cancelled)."""
        config = self._server.config
        timeout = config.session_timeout_s if config.session_timeout_s is not None else config.hosted_session_idle_s
        if timeout is None:
            await trio.sleep_forever()
            return
        while True:
            now = trio.current_time()
            next_due = math.inf
            for session in list(self._by_digest.values()):
                if session.state is not SessionState.OPEN:
                    continue
                due = session.last_used + timeout
                if due <= now:
                    await self.close(session, SessionOutcome.EXPIRED)
                else:
                    next_due = min(next_due, due)
            await trio.sleep(min(next_due - now, timeout) if math.isfinite(next_due) else timeout)
