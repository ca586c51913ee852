"""``WS /mcp``: JSON-RPC over a WebSocket, one session (and environment) per connection.

Each text frame is one JSON-RPC request and is answered with one response frame, in order
(``MCP-WS-3``). Capacity, idle timeout, pings and shutdown are those of a ``/ws`` session:
the connection is a :class:`~..sessions.ws_session.WsSession` whose frames are JSON-RPC.
"""

from __future__ import annotations

from typing import Any

from ...core import RpcFailure, dumps, read_rpc_request
from ..context import AsgiReceive, AsgiSend, ServerContext
from ..hypercorn_adapter.events import HeldText
from .dispatch import answer_rpc
from ..sessions.ws_session import WsSession, serve_session

__all__ = ["McpSocket", "serve_mcp_socket"]


class McpSocket(WsSession):
    """One ``WS /mcp`` connection."""

    async def _handle(self, payload: str | bytes | HeldText) -> bool:
        if isinstance(payload, HeldText):  # a large frame collected by a direct stream
            data = payload.data
            payload.release()
            payload = data.decode() if data is not None else ""
        try:
            request = read_rpc_request(payload)
        except RpcFailure as failure:
            response = failure.response()
        else:
            response = await answer_rpc(self.ctx, request, own_env=self.env, own_view=self.view)
        await self.send({"type": "websocket.send", "text": dumps(response)})
        return True


async def serve_mcp_socket(ctx: ServerContext, scope: dict[str, Any], receive: AsgiReceive, send: AsgiSend) -> None:
    """ASGI handler of one ``WS /mcp`` connection."""
    await serve_session(ctx, scope, receive, send, McpSocket)
