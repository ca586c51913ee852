"""One session's connection while it serves: the wait for frames, its deadlines and its end.

Theory of operation. One task per connection reads a frame, has the variant's
:class:`FrameHandler` answer it, and reads the next, so answers go out in request order
(``WS-ORDER-1``). The connection knows nothing of what the frames mean; the handler knows
nothing of deadlines, stops or closing.

The idle/ping policy (:class:`Liveness`) bounds only the wait for the next frame: the idle
timeout (``WS-IDLE-1``) and the ping schedule (``WS-PING-1``) are deadlines on that wait,
so a request that is executing is never reaped (``WS-IDLE-2``) and no extra task runs.

States and transitions (every end is a :class:`~.ends.SessionEnd`; its close code, and
whether the session lives on and keeps its slot, are in :data:`~.ends.END_RULES`)::

    WAITING    --frame-->                       ANSWERING
    ANSWERING  --answered-->                    WAITING
    ANSWERING  --close frame / env aborted-->   ENDED (CLOSE / ABORTED)
    WAITING    --deadline, ping due-->          WAITING     (ping sent)
    WAITING    --deadline, idle / no pong-->    ENDED (IDLE / PING)
    WAITING    --peer closed or dropped-->      ENDED (GOODBYE / DISCONNECT)
    any        --stop(end)-->                   ENDED (SHUTDOWN / HANDED_OVER / LOST / TAKEOVER),
                                                at the next wait: an answer in progress goes
                                                out first; ``before_close`` may keep the
                                                session (a hand-over) before the close
    ANSWERING  --abort()-->                     ENDED (SHUTDOWN), the request abandoned

The capacity slot is let go the moment the end is known, before the closing handshake
completes (``WS-CAP-2``): on the peer's close frame as it arrives (the connection is called
back before it answers) and before the server sends a close frame of its own; a session
that outlives its connection (resumable) keeps it for the ends whose rule says so.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, Final, Protocol

import trio

from ...core import CloseCode
from ..asgi import AsgiReceive, AsgiSend, close_websocket
from ..config import ServerConfig
from ..execution.bound_env import BoundEnv
from ..execution.faults import EnvironmentAborted
from ..hypercorn_adapter.events import HELD_TEXT, PEER_CLOSE_EVENT, HeldText
from ..observability import Instruments
from ..ping_schedule import PingSchedule
from ..session_registry import Slot
from .accept import Accepted
from .ends import SessionEnd, peer_end
from .session import SessionIdentity

log = logging.getLogger("openenv_anyio.server")

__all__ = ["ConnectionServer", "FrameHandler", "Liveness", "SessionConnection", "SessionIdentity"]

#: the longest close reason a close frame carries (RFC 6455: 125 bytes of payload, 2 of them the code)
_CLOSE_REASON_MAX: Final = 123


class Liveness:
    """The idle/ping policy of the wait for a session's next frame.

    The wait's deadline (:attr:`deadline`) is the idle timeout's or the ping schedule's,
    whichever comes first; every inbound message proves the peer alive (:meth:`heard`);
    when the deadline passes, :meth:`verdict` pings if one is due and says whether the
    session ends: ``IDLE`` (no frame for ``session_timeout_s``, ``WS-IDLE-1``), ``PING`` (no
    pong within ``ping_timeout_s``, ``WS-PING-1``), or ``None`` to wait on.
    """

    __slots__ = ("_idle_limit", "_idle_deadline", "pings", "deadline")

    def __init__(self, idle_s: float | None, ping_interval_s: float | None, ping_timeout_s: float | None) -> None:
        self._idle_limit = idle_s or math.inf
        self.pings = PingSchedule(ping_interval_s, ping_timeout_s)
        self._idle_deadline = trio.current_time() + self._idle_limit
        #: when the wait for the next frame ends
        self.deadline = min(self._idle_deadline, self.pings.deadline())

    def heard(self, now: float) -> None:
        self._idle_deadline = now + self._idle_limit
        self.pings.heard(now)
        self.deadline = min(self._idle_deadline, self.pings.deadline())

    async def verdict(self, send: AsgiSend, now: float) -> SessionEnd | None:
        if now >= self._idle_deadline:  # WS-IDLE-1
            return SessionEnd.IDLE
        alive = await self.pings.on_deadline(send, now)  # WS-PING-1: pings, or judges the pong
        self.deadline = min(self._idle_deadline, self.pings.deadline())
        return None if alive else SessionEnd.PING


class ConnectionServer(Protocol):
    """What a session's connection uses of its server: the deadlines and the spans."""

    @property
    def config(self) -> ServerConfig: ...

    @property
    def instruments(self) -> Instruments: ...


class FrameHandler(Protocol):
    """What a session variant does with each inbound message (the base protocol's frames,
    or JSON-RPC on ``WS /mcp``)."""

    async def handle(self, payload: str | bytes | HeldText) -> SessionEnd | None:
        """Answer one inbound message; the end it calls for (``CLOSE``, ``ABORTED``), else ``None``."""
        ...

    @property
    def aborted(self) -> EnvironmentAborted | None:
        """The environment aborted while answering (``SRV-FAULT-1``): the session ends."""
        ...


class _NoHandler:
    """The handler of a connection not serving yet."""

    aborted: EnvironmentAborted | None = None

    async def handle(self, payload: str | bytes | HeldText) -> SessionEnd | None:
        raise RuntimeError("the connection is not serving a session")


_NO_HANDLER: Final = _NoHandler()


class SessionConnection:
    """One WebSocket serving a session (see the module doc).

    ``slot``: the capacity slot the connection lets go when it ends (``None`` when the slot
    is not the connection's: an attached socket's hosted session keeps it); ``lives_on``:
    the session outlives the connection (resumable), so ends whose rule keeps the slot do;
    ``before_close``: called with the end the server closes with, before its close frame,
    returns the end to close with (a hand-over writes the session to its store first).
    """

    def __init__(
        self,
        ctx: ConnectionServer,
        accepted: Accepted,
        identity: SessionIdentity,
        *,
        slot: Slot | None,
        lives_on: bool = False,
        before_close: Callable[[SessionEnd], Awaitable[SessionEnd]] | None = None,
    ) -> None:
        self.ctx = ctx
        self.scope = accepted.scope
        self.receive: AsgiReceive = accepted.receive
        self.send: AsgiSend = accepted.send
        self.identity = identity
        #: what gives the frames their meaning (set by :meth:`serve`)
        self.handler: FrameHandler = _NO_HANDLER
        self.slot = slot
        self.lives_on = lives_on
        self.before_close = before_close
        #: the close code that ended the connection: sent by the server, or by the client
        self.close_code: int = CloseCode.ABNORMAL
        self.peer_close_code: int | None = None
        #: the environment's process found gone between requests (``SRV-ISO-2``)
        self.lost: EnvironmentAborted | None = None
        self.stop_requested: SessionEnd | None = None
        self._wait_scope: trio.CancelScope | None = None
        self._abort_scope: trio.CancelScope | None = None

    # -- identity (observability's SessionIdentity) ------------------------------------------

    @property
    def session_id(self) -> str:
        return self.identity.session_id

    @property
    def peer(self) -> str | None:
        return self.identity.peer

    @property
    def episode_id(self) -> str | None:
        return self.identity.view.episode_id

    # -- asked from outside (the registry's Connection) --------------------------------------

    def request_shutdown(self) -> None:
        """Server shutdown: end at the next wait for a frame (``WS-SHUT-1``)."""
        self.stop(SessionEnd.SHUTDOWN)

    def abort(self) -> None:
        """Server stopping: abandon the request being executed and close with 1001."""
        self.stop(SessionEnd.SHUTDOWN)
        if self._abort_scope is not None:
            self._abort_scope.cancel()

    def stop(self, end: SessionEnd) -> None:
        """End with ``end`` at the next wait for a frame (the first stop asked wins)."""
        if self.stop_requested is None:
            self.stop_requested = end
        if self._wait_scope is not None:
            self._wait_scope.cancel()

    async def watch_peer_close(self) -> None:
        """Have the connection call back on the peer's close frame, before it answers it
        (served as plain ASGI it cannot: the slot is then freed when the session ends)."""
        try:
            await self.send({"type": PEER_CLOSE_EVENT, "callback": self._peer_closed})
        except Exception:  # Hypercorn without the adapter refuses the event
            pass

    # -- serving -----------------------------------------------------------------------------

    async def serve(self, env: BoundEnv, handler: FrameHandler) -> SessionEnd:
        """Serve ``env``'s session with ``handler`` until the connection ends; return why.
        Beside the watch of the environment's process when it has one, inside the
        session's span when tracing."""
        self.handler = handler
        if env.WATCHED:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._watch_env, env)
                end = await self._serve_traced()
                nursery.cancel_scope.cancel()
            return end
        if self.ctx.instruments.tracer is None:
            return await self._serve()
        return await self._serve_traced()

    async def _serve_traced(self) -> SessionEnd:
        tracer = self.ctx.instruments.tracer
        if tracer is None:
            return await self._serve()
        with tracer.session(self.scope.get("headers") or (), self.span_attributes()) as span:
            end = await self._serve()
            span.set_attribute("openenv.close_code", self.close_code)
            return end

    def span_attributes(self) -> dict[str, Any]:
        """The session span's attributes."""
        attributes: dict[str, Any] = {"openenv.session_id": self.session_id}
        if self.peer is not None:
            attributes["client.address"] = self.peer
        return attributes

    async def _watch_env(self, env: BoundEnv) -> None:
        """Found gone between requests (its process died while the session waited for the
        client), the environment ends the session then (``SRV-ISO-2``)."""
        lost = await env.watch_lost()
        if lost is None or self.handler.aborted is not None:
            return
        log.error("session %s: %s; ending the session", self.session_id, lost)
        self.lost = lost
        self.stop(SessionEnd.LOST)

    async def _serve(self) -> SessionEnd:
        """The loop of the module doc, in one coroutine: each frame's wait resumes every
        coroutine above it, so the per-frame path stays shallow.

        One cancel scope bounds wait after wait (bench/README.md, "Server CPU per step"): its
        deadline is :class:`Liveness`'s, set before each wait only when it moved, and lifted
        (``inf``) while the frame is answered (``WS-IDLE-2``); a new scope opens only once
        one has fired. A frame that arrived just as its scope fired is answered in the next
        one; a disconnect returns without lifting the deadline."""
        config = self.ctx.config
        receive, handle = self.receive, self.handler.handle
        liveness = Liveness(config.session_timeout_s, config.ping_interval_s, config.ping_timeout_s)
        pending: MutableMapping[str, Any] | None = None  # a frame to answer before the next wait
        with trio.CancelScope() as self._abort_scope:
            while True:
                with trio.CancelScope(deadline=math.inf if pending is not None else liveness.deadline) as scope:
                    while True:
                        if pending is None:
                            deadline = liveness.deadline
                            if deadline != scope.deadline:
                                scope.deadline = deadline
                            self._wait_scope = scope
                            if self.stop_requested is not None:
                                scope.cancel()
                            message = await receive()
                            self._wait_scope = None
                            if scope.cancel_called:  # it fired as the frame came: answered in the next scope
                                pending = message
                                break
                            kind = message["type"]
                            if kind != "websocket.disconnect" or self.stop_requested is not None:
                                scope.deadline = math.inf
                        else:
                            message, pending = pending, None
                            kind = message["type"]
                        if self.stop_requested is not None:
                            return await self._end(self.stop_requested)
                        if kind == "websocket.receive":
                            text = message.get("text")
                            if text is None:
                                text = message.get(HELD_TEXT) or message.get("bytes") or b""
                            end = await handle(text)
                            if end is not None:
                                return await self._end(end)
                        elif kind == "websocket.disconnect":
                            self.close_code = self.peer_close_code or CloseCode.ABNORMAL
                            end = peer_end(self.peer_close_code)
                            self._ending(end)
                            return end
                        liveness.heard(trio.current_time())
                self._wait_scope = None
                if pending is not None:
                    continue
                if self.stop_requested is not None:
                    return await self._end(self.stop_requested)
                if scope.cancelled_caught:
                    end = await liveness.verdict(self.send, trio.current_time())
                    if end is SessionEnd.PING:
                        log.info("session %s: no pong within %g s, closing", self.session_id, liveness.pings.timeout)
                    if end is not None:
                        return await self._end(end, bounded=end is SessionEnd.PING)
        self._abort_scope = None  # abort(): the request was abandoned
        with trio.CancelScope(shield=True):
            await self._end(SessionEnd.SHUTDOWN, bounded=True)
        return SessionEnd.SHUTDOWN

    # -- ending ------------------------------------------------------------------------------

    def _ending(self, end: SessionEnd) -> None:
        """The connection ends with ``end``: let go of the slot unless the session keeps it."""
        if self.slot is not None and not (self.lives_on and end.rule.keeps_slot):
            self.slot.release()

    def _peer_closed(self, code: int) -> None:
        """The peer's close frame arrived (the server has not answered it yet)."""
        self.peer_close_code = code
        self._ending(peer_end(code))

    async def _end(self, end: SessionEnd, *, bounded: bool = False) -> SessionEnd:
        """Close the connection for ``end`` (its rule's code; the fault's or the timeout's
        words); ``bounded``: the peer may be gone, wait for the close at most a second."""
        if self.before_close is not None:
            with trio.CancelScope(shield=True):  # the session is written before its close is sent
                end = await self.before_close(end)
        rule = end.rule
        code, reason = rule.close_code, rule.close_reason
        if end is SessionEnd.ABORTED:
            aborted = self.handler.aborted
            assert aborted is not None
            code, reason = aborted.close_code, aborted.close_reason
        elif end is SessionEnd.LOST and self.lost is not None:
            reason = str(self.lost)[:_CLOSE_REASON_MAX]  # how the process ended
        elif end is SessionEnd.IDLE:
            reason = f"session idle for {self.ctx.config.session_timeout_s:g} s (session_timeout)"
        assert code is not None, end
        self._ending(end)
        self.close_code = code
        if bounded:
            with trio.move_on_after(1.0):
                await close_websocket(self.send, code, reason)
        else:
            await close_websocket(self.send, code, reason)
        return end
