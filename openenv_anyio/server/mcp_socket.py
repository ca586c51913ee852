"""``WS /mcp``: JSON-RPC over a WebSocket, one session (and environment) per connection.

Each text frame is one JSON-RPC request and is answered with one response frame, in order
(``MCP-WS-3``). Capacity, idle timeout, pings and shutdown are those of a ``/ws`` session:
the connection is a :class:`~.ws_session.WsSession` whose frames are JSON-RPC.
"""

from __future__ import annotations

import time
from typing import Any

from ..core import RpcFailure, dumps, read_rpc_request
from .context import AsgiReceive, AsgiSend, ServerContext
from .mcp_dispatch import answer_rpc
from .ws_session import ACCEPT, WsSession, refuse_at_capacity, refuse_while_closing

__all__ = ["McpSocket", "serve_mcp_socket"]


class McpSocket(WsSession):
    """One ``WS /mcp`` connection."""

    async def _handle(self, payload: str | bytes) -> bool:
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
    message = await receive()
    if message["type"] != "websocket.connect":
        return
    accepted_at = time.perf_counter()
    await send(ACCEPT)
    registry = ctx.registry
    if registry.closing:
        await refuse_while_closing(ctx, scope, send)
        return
    slot = registry.try_reserve()  # WS-CAP-1
    if slot is None:
        await refuse_at_capacity(ctx, scope, send)
        return
    try:
        await McpSocket(ctx, scope, receive, send, slot).run(accepted_at)
    finally:
        slot.release()
