"""The ``/ws`` endpoint: one session per connection, as a raw ASGI handler (the lean path).

A session here is composed, not subclassed: :func:`~.accept.serve_connection` accepts the
WebSocket and holds its capacity slot, :func:`open_session` opens its
:class:`~.session.Session` (or tells the client its environment could not be built), a
:class:`~.connection.SessionConnection` serves it, and a frame handler gives the frames
their meaning: :class:`ProtocolFrames` (the base protocol, its requests answered by an
:class:`~.answers.Answers`) here, JSON-RPC on ``WS /mcp`` (:mod:`..mcp.websocket`). The MCP
surface stands above this layer: the JSON-RPC answers of ``mcp`` frames are handed in
(:data:`~.answers.RpcDispatch`), as the stores are. The resume extension
(:mod:`.resumable`), the sessions kept beyond a connection (:mod:`.kept`) and attached sockets
(:mod:`.attached`) are built of the same parts.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any, assert_never

from ...core import (
    Close,
    CloseCode,
    Error,
    ErrorCode,
    Mcp,
    ProtocolError,
    Reset,
    StateRequest,
    Step,
    ValidationOpen,
    ValidationRead,
    decode_client_frame,
)
from ..asgi import AsgiReceive, AsgiSend, close_websocket
from ..execution.bound_env import BoundEnv, FactoryFailure
from ..execution.error_text import public_error
from ..execution.faults import EnvironmentAborted
from ..hypercorn_adapter.events import HeldText
from ..memory.large_frames import LARGE_FRAME_CHARS
from ..observability import peer_of
from ..session_registry import Slot
from .accept import Accepted, serve_connection
from .answers import Answers, EnvAnswers, Request, RpcDispatch
from .connection import FrameHandler, SessionConnection
from .ends import SessionEnd
from .server import SessionsServer
from .session import Session, SessionIdentity, SessionKind

__all__ = ["AsgiHandler", "HandlerFactory", "ProtocolFrames", "open_session", "serve_ws", "session_endpoint"]

#: An ASGI WebSocket handler: ``handler(scope, receive, send)``.
AsgiHandler = Callable[[dict[str, Any], AsgiReceive, AsgiSend], Awaitable[None]]

#: Makes the frame handler of a new session: from the server, the session and its environment.
HandlerFactory = Callable[[SessionsServer, SessionIdentity, BoundEnv, AsgiSend], FrameHandler]


class ProtocolFrames:
    """The base protocol's frames: ``close`` ends the session (``WS-CLOSE-1``); reset, step,
    state and mcp are answered in order (``WS-ORDER-1``); a frame that is not one is answered
    with its error and the session goes on. Validation telemetry (``validation_open``,
    ``validation_read``) is refused with ``validation_refusal`` (``VAL-OPEN-2``); a server
    that offers it serves sessions with :class:`~..validation.ValidationFrames` around this."""

    def __init__(self, ctx: SessionsServer, identity: SessionIdentity, answers: Answers, send: AsgiSend) -> None:
        self.ctx = ctx
        self.identity = identity
        self.answers = answers
        self.send = send
        self.validation_refusal = (
            "telemetry is off on this connection (no validation token, production mode, "
            "or a connection that negotiated the openenv-anyio.v1 subprotocol)"
        )

    @classmethod
    def for_env(
        cls, ctx: SessionsServer, identity: SessionIdentity, env: BoundEnv, send: AsgiSend, *, rpc: RpcDispatch
    ) -> ProtocolFrames:
        """The handler of a plain session (with ``rpc`` bound, a :data:`HandlerFactory`)."""
        return cls(ctx, identity, EnvAnswers(ctx, identity, env, rpc), send)

    @property
    def aborted(self) -> EnvironmentAborted | None:
        return self.answers.aborted

    async def handle(self, payload: str | bytes | HeldText) -> SessionEnd | None:
        started = time.perf_counter()
        ctx = self.ctx
        try:
            if isinstance(payload, HeldText) or len(payload) > LARGE_FRAME_CHARS:
                frame = await ctx.large_frames.decode(payload)  # SRV-MEM-2: off the event loop
            else:
                frame = decode_client_frame(payload)
        except ProtocolError as error:
            await self.send(
                {"type": "websocket.send", "text": ctx.encode(Error.from_protocol_error(error), session=self.identity)}
            )
            return None
        match frame:
            case Close():  # WS-CLOSE-1
                return SessionEnd.CLOSE
            case Step() | Reset() | StateRequest() | Mcp():
                kind = frame.type
                tracer = ctx.instruments.tracer
                if tracer is None:
                    text = await self.answers.answer(frame)
                else:
                    with tracer.request(kind, self.request_attributes(frame)):
                        text = await self.answers.answer(frame)
                await self.send({"type": "websocket.send", "text": text})
                ctx.instruments.request_done(kind, time.perf_counter() - started)
            case ValidationOpen() | ValidationRead():  # VAL-OPEN-2
                refusal = Error(ErrorCode.VALIDATION_REFUSED.value, f"validation {self.validation_refusal}")
                await self.send({"type": "websocket.send", "text": ctx.encode(refusal, session=self.identity)})
            case _:
                assert_never(frame)
        if self.answers.aborted is not None:  # SRV-FAULT-1, SRV-ISO-2
            return SessionEnd.ABORTED
        return None

    def request_attributes(self, frame: Request) -> dict[str, Any]:
        """A request span's attributes."""
        attributes: dict[str, Any] = {"openenv.session_id": self.identity.session_id}
        episode_id = self.identity.view.episode_id
        if episode_id is not None:
            attributes["openenv.episode_id"] = episode_id
        request_id = getattr(frame, "request_id", None)
        if request_id is not None:
            attributes["openenv.request_id"] = request_id
        return attributes


async def open_session(
    ctx: SessionsServer, kind: SessionKind, identity: SessionIdentity, accepted: Accepted, slot: Slot | None
) -> Session | None:
    """A new session on an accepted connection (:meth:`Session.open`); ``None`` after telling
    the client its environment could not be built and closing with 1011 (``WS-FACT-1``)."""
    try:
        return await Session.open(ctx, kind, identity, slot, accepted.accepted_at)
    except FactoryFailure as failure:
        public = public_error(failure.cause, expose=ctx.config.errors_exposed, during="environment creation")
        error = Error(
            ErrorCode.FACTORY_ERROR.value,
            f"Failed to create environment ({failure.factory_name}): {public.message}",
            {"factory_name": failure.factory_name, "error_id": public.error_id},
        )
        send = accepted.send
        await send({"type": "websocket.send", "text": ctx.encode(error, session=identity)})
        ctx.instruments.connection_refused(identity.peer, CloseCode.INTERNAL_ERROR, "environment could not be created")
        await close_websocket(send, CloseCode.INTERNAL_ERROR, "environment could not be created")
        return None


async def _run_session(ctx: SessionsServer, handlers: HandlerFactory, accepted: Accepted) -> None:
    """Serve a new session on ``accepted`` until it ends, then end it (its connection's slot
    is the connection's: let go as the end is known, ``WS-CAP-2``)."""
    identity = Session.new_identity(ctx, peer_of(accepted.scope))
    connection = SessionConnection(ctx, accepted, identity, slot=accepted.slot)
    await connection.watch_peer_close()
    session = await open_session(ctx, SessionKind.PLAIN, identity, accepted, None)
    if session is None:
        return
    registry = ctx.registry
    registry.attach(connection)
    end = SessionEnd.ERROR
    try:
        end = await connection.serve(session.env, handlers(ctx, identity, session.env, accepted.send))
    finally:
        registry.detach(connection)
        await session.end(session.closing_outcome(), last=end, close_code=connection.close_code)


def session_endpoint(ctx: SessionsServer, handlers: HandlerFactory) -> AsgiHandler:
    """The ASGI handler of connections that each serve a new session whose frames
    ``handlers`` answer (``/ws``, and ``WS /mcp`` whose sessions speak JSON-RPC)."""
    return partial(serve_connection, ctx, open_session=partial(_run_session, ctx, handlers))


def serve_ws(ctx: SessionsServer, rpc: RpcDispatch, handlers: HandlerFactory | None = None) -> AsgiHandler:
    """The ASGI handler of plain ``/ws`` connections (``rpc`` answers their ``mcp`` frames),
    whose frames ``handlers`` answer (default: the base protocol's, :meth:`ProtocolFrames.for_env`)."""
    return session_endpoint(ctx, handlers or partial(ProtocolFrames.for_env, rpc=rpc))
