"""``/ws?session_id=ID``: a WebSocket attached to a session created over ``POST /mcp``.

The connection serves the base protocol (reset, step, state, mcp frames) on the hosted
session's environment, so a step and a tool call over ``POST /mcp`` act on one instance
(``MCP-SES-3``). One socket at a time; when it closes (a ``close`` frame included) the
session is detached, not ended (``MCP-SES-4``). An unknown id is answered with
``SESSION_NOT_FOUND`` and close 4404; a session that already has a socket with
``SESSION_ERROR`` and close 4409.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs

from ...core import CloseCode, Error, ErrorCode
from ..context import AsgiReceive, AsgiSend, ServerContext
from ..mcp.hosted_sessions import HostedSession, SessionState
from .ws_session import ACCEPT, WsSession, close_websocket

__all__ = ["AttachedConnection", "requested_session", "serve_attached"]

_MAX_ID_CHARS = 256


def requested_session(scope: dict[str, Any]) -> str | None:
    """The ``session_id`` query parameter of a ``/ws`` handshake, if any."""
    raw = scope.get("query_string") or b""
    if b"session_id=" not in raw:
        return None
    values = parse_qs(raw.decode("latin-1")).get("session_id")
    return values[0][:_MAX_ID_CHARS] if values else None


class AttachedConnection(WsSession):
    """A ``/ws`` connection serving a hosted session's environment."""

    def __init__(
        self, ctx: ServerContext, scope: dict[str, Any], receive: AsgiReceive, send: AsgiSend, session: HostedSession
    ) -> None:
        super().__init__(ctx, scope, receive, send, session.slot)
        self.session_id = session.public_id
        self.view = session.view
        self.env = session.env

    def _ending(self, reason: str) -> None:
        """The socket ends, the session does not (MCP-SES-4): the hosted session keeps its slot."""


async def _refuse(ctx: ServerContext, send: AsgiSend, code: ErrorCode, message: str, close_code: CloseCode) -> None:
    await send({"type": "websocket.send", "text": ctx.encode(Error(code.value, message))})
    await close_websocket(send, close_code, message[:120])


async def serve_attached(ctx: ServerContext, scope: dict[str, Any], receive: AsgiReceive, send: AsgiSend) -> None:
    """ASGI handler of one ``/ws?session_id=`` connection."""
    message = await receive()
    if message["type"] != "websocket.connect":
        return
    await send(ACCEPT)
    if ctx.registry.closing:
        await close_websocket(send, CloseCode.GOING_AWAY, "server shutting down")
        return
    session = ctx.hosted.find(requested_session(scope) or "")
    if session is None:
        await _refuse(ctx, send, ErrorCode.SESSION_NOT_FOUND, "No session has this session_id", CloseCode.SESSION_NOT_FOUND)
        return
    if session.state is not SessionState.OPEN:
        await _refuse(ctx, send, ErrorCode.SESSION_ERROR, "The session already has an attached WebSocket", CloseCode.TAKEN_OVER)
        return
    connection = AttachedConnection(ctx, scope, receive, send, session)
    ctx.hosted.attach(session, connection)
    ctx.registry.attach(connection)
    try:
        await connection._serve()
    finally:
        ctx.registry.detach(connection)
        await ctx.hosted.detach(session)
