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

The store is the owner of every session's environment: ending closes it (``close()`` once)
and frees the slot. The idle reaper is a task of the server's nursery.
"""

from __future__ import annotations

import enum
import hashlib
import math
import secrets
from collections.abc import Sequence
from typing import Final, Protocol

import trio

from ..context import ServerContext
from ..execution.bound_env import BoundEnv
from ..session_registry import Slot
from ..ui.hub import EpisodeView

__all__ = ["FORWARDED_HEADER", "HostedSession", "HostedSessions", "SessionOwners", "SessionState", "SocketHolder"]

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


class SocketHolder(Protocol):
    """The WebSocket attached to a session (asked to end at shutdown or on close)."""

    def request_shutdown(self) -> None: ...


#: Marks a request one worker forwarded to the owner of the session it names (served there,
#: never forwarded again: ``workers.forwarding``).
FORWARDED_HEADER: Final = b"openenv-anyio-forwarded"


class SessionOwners(Protocol):
    """Where the hosted sessions of the other workers of a ``serve --workers N`` server live
    (their ids carry their worker: ``workers.routing``), and the way to ask them."""

    def owner_of(self, session_id: str) -> int | None:
        """The other worker's slot holding ``session_id``; None when it is not another's."""
        ...

    async def forward(
        self, slot: int, method: str, target: str, headers: Sequence[tuple[bytes, bytes]], body: bytes
    ) -> tuple[int, list[tuple[bytes, bytes]], bytes] | None:
        """That worker's answer (status, headers, body) to the request; None without one."""
        ...


def _digest(session_id: str) -> bytes:
    return hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).digest()


class HostedSession:
    """One HTTP-created session: its environment, UI view, state and last use."""

    def __init__(self, session_id: str, env: BoundEnv, view: EpisodeView, slot: Slot) -> None:
        self.session_id = session_id
        self.env = env
        self.view = view
        self.slot = slot
        self.state = SessionState.OPEN
        self.socket: SocketHolder | None = None
        self.last_used = trio.current_time()

    @property
    def attachable(self) -> bool:
        """No socket is attached (``MCP-SES-3``: one at a time)."""
        return self.state is SessionState.OPEN

    @property
    def public_id(self) -> str:
        """The id dashboards and logs see (never the secret)."""
        return self.view.session_id

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

    def __init__(self, ctx: ServerContext) -> None:
        self._ctx = ctx
        self._by_digest: dict[bytes, HostedSession] = {}
        #: shutdown has begun: no new sessions (set by :meth:`end_all`)
        self.closed = False

    def __len__(self) -> int:
        return len(self._by_digest)

    async def create(self, slot: Slot) -> HostedSession:
        """A new session holding ``slot`` (the session releases it when it ends).

        Raises :class:`~openenv_anyio.server.execution.bound_env.FactoryFailure` (the slot is still the caller's).
        """
        ctx = self._ctx
        env = await ctx.create_env()
        ctx.registry.env_opened()
        session = HostedSession(
            ctx.session_prefix + secrets.token_urlsafe(SESSION_ID_BYTES),  # the prefix names this worker
            env,
            EpisodeView(ctx.new_session_id(), ctx.config.action_log_size),
            slot,
        )
        self._by_digest[_digest(session.session_id)] = session
        ctx.hub.add_session(session.view)
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
            await self._end(session)

    async def close(self, session: HostedSession) -> bool:
        """``openenv/session/close``: ``True`` when ended now, ``False`` when it ends on detach."""
        if session._move("close") is SessionState.ENDED:
            await self._end(session)
            return True
        assert session.socket is not None
        session.socket.request_shutdown()
        return False

    async def _end(self, session: HostedSession) -> None:
        session.state = SessionState.ENDED
        ctx = self._ctx
        self._by_digest.pop(_digest(session.session_id), None)
        ctx.hub.remove_session(session.public_id)
        await ctx.close_env(session.env, f"hosted session {session.public_id}")
        session.slot.release()

    async def end_all(self) -> None:
        """Shutdown: refuse new sessions and end every session (an attached one when its
        socket has closed)."""
        self.closed = True
        for session in list(self._by_digest.values()):
            if session.state is SessionState.OPEN:
                session._move("close")
                await self._end(session)
            elif session.state is SessionState.ATTACHED:
                await self.close(session)

    async def reap_idle(self) -> None:
        """End sessions with no socket and no request for ``session_timeout_s``, else
        ``hosted_session_idle_s`` (runs until cancelled)."""
        config = self._ctx.config
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
                    session._move("close")
                    await self._end(session)
                else:
                    next_due = min(next_due, due)
            await trio.sleep(min(next_due - now, timeout) if math.isfinite(next_due) else timeout)
