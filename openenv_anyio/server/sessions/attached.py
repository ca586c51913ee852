"""``/ws?session_id=ID``: a WebSocket attached to a session created over ``POST /mcp``.

The connection serves the base protocol (reset, step, state, mcp frames) on the hosted
session's environment, so a step and a tool call over ``POST /mcp`` act on one instance
(``MCP-SES-3``). One socket at a time; when it closes (a ``close`` frame included) the
session is detached, not ended (``MCP-SES-4``). An unknown id is answered with
``SESSION_NOT_FOUND`` and close 4404; a session that already has a socket with
``SESSION_ERROR`` and close 4409.
"""

from __future__ import annotations

from functools import partial
from typing import Any
from urllib.parse import parse_qs

import trio

from ...core import CloseCode, Error, ErrorCode
from ..asgi import AsgiReceive, AsgiSend, close_websocket
from ..observability import peer_of
from .accept import Accepted, Capacity, serve_connection
from .answers import RpcDispatch
from .base import ProtocolFrames
from .connection import SessionConnection
from .ends import SessionEnd
from .kept import KeptSessions
from .server import SessionsServer
from .session import SessionIdentity

__all__ = ["requested_session", "serve_attached"]

_MAX_ID_CHARS = 256


def requested_session(scope: dict[str, Any]) -> str | None:
    """The ``session_id`` query parameter of a ``/ws`` handshake, if any."""
    raw = scope.get("query_string") or b""
    if b"session_id=" not in raw:
        return None
    values = parse_qs(raw.decode("latin-1")).get("session_id")
    return values[0][:_MAX_ID_CHARS] if values else None


async def _refuse(
    ctx: SessionsServer, accepted: Accepted, code: ErrorCode, message: str, close_code: CloseCode
) -> None:
    """The error frame, then the close: counted and logged as every refused connection is."""
    send = accepted.send
    await send({"type": "websocket.send", "text": ctx.encode(Error(code.value, message))})
    ctx.instruments.connection_refused(peer_of(accepted.scope), close_code, message)
    await close_websocket(send, close_code, message[:120])


class _AttachedSocket:
    """The socket holding a hosted session (a :class:`~.kept.Holder`)."""

    def __init__(self, connection: SessionConnection) -> None:
        self.connection = connection
        self.released = trio.Event()

    def let_go(self, end: SessionEnd) -> None:
        """The session closes (or the server stops): end after the request being executed."""
        self.connection.stop(end)


async def _attach(ctx: SessionsServer, store: KeptSessions, rpc: RpcDispatch, accepted: Accepted) -> None:
    """Serve the named hosted session's environment until the socket ends; the session
    goes on (``MCP-SES-4``: the slot is the session's, not the socket's)."""
    session = store.find_hosted(requested_session(accepted.scope) or "")
    if session is None:
        await _refuse(
            ctx,
            accepted,
            ErrorCode.SESSION_NOT_FOUND,
            "No session has this session_id",
            CloseCode.SESSION_NOT_FOUND,
        )
        return
    if session.held:
        await _refuse(
            ctx,
            accepted,
            ErrorCode.SESSION_ERROR,
            "The session already has an attached WebSocket",
            CloseCode.TAKEN_OVER,
        )
        return
    identity = SessionIdentity(session.session_id, peer_of(accepted.scope), session.view)
    connection = SessionConnection(ctx, accepted, identity, slot=None)
    socket = _AttachedSocket(connection)
    await store.take(session, socket)  # nobody held it: at once
    ctx.registry.attach(connection)
    end = SessionEnd.ERROR
    try:
        end = await connection.serve(
            session.env, ProtocolFrames.for_env(ctx, identity, session.env, accepted.send, rpc=rpc)
        )
    finally:
        ctx.registry.detach(connection)
        ctx.instruments.session_detached(identity, connection.close_code, end.value)
        await store.release(session, socket, end, connection.close_code)


async def serve_attached(
    ctx: SessionsServer,
    store: KeptSessions,
    rpc: RpcDispatch,
    scope: dict[str, Any],
    receive: AsgiReceive,
    send: AsgiSend,
) -> None:
    """ASGI handler of one ``/ws?session_id=`` connection (``rpc`` answers its ``mcp`` frames)."""
    await serve_connection(ctx, scope, receive, send, partial(_attach, ctx, store, rpc), capacity=Capacity.BROUGHT)
