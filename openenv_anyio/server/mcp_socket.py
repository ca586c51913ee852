"""``WS /mcp``: JSON-RPC over a WebSocket, one session (and environment) per connection.

Each text frame is one JSON-RPC request and is answered with one response frame, in order
(``MCP-WS-3``). Capacity, idle timeout, pings and shutdown are those of a ``/ws`` session:
the connection is a :class:`~.ws_session.WsSession` whose frames are JSON-RPC.
"""

from __future__ import annotations

from typing import Any

from ..core import ProtocolError, RpcCode, RpcFailure, dumps, read_rpc_request
from .context import AsgiReceive, AsgiSend, ServerContext
from .hypercorn_adapter.events import HeldText
from .large_frames import LARGE_FRAME_CHARS
from .mcp_dispatch import SessionAborted, answer_rpc
from .ws_session import WsSession, close_websocket, serve_session

__all__ = ["McpSocket", "serve_mcp_socket"]


class McpSocket(WsSession):
    """One ``WS /mcp`` connection."""

    async def _handle(self, payload: str | bytes | HeldText) -> bool:
        try:
            if isinstance(payload, HeldText) or (isinstance(payload, str) and len(payload) > LARGE_FRAME_CHARS):
                request = await self.ctx.large_frames.parse_text(payload, read_rpc_request)  # SRV-MEM-2
            else:
                request = read_rpc_request(payload)
        except ProtocolError as busy:  # SRV-MEM-1: no room within the wait; the session goes on
            response = RpcFailure(RpcCode.SERVER_ERROR, busy.message, {"code": busy.code.value}).response()
        except RpcFailure as failure:
            response = failure.response()
        else:
            try:
                response = await answer_rpc(self.ctx, request, own_env=self.env, own_view=self.view)
            except SessionAborted as ended:  # SRV-FAULT-1: answered, then the session ends
                self.aborted, response = ended.aborted, ended.response
        await self.send({"type": "websocket.send", "text": dumps(response)})
        aborted = self.aborted
        if aborted is not None:
            self._ending("aborted")
            self.close_code = aborted.close_code
            await close_websocket(self.send, aborted.close_code, aborted.close_reason)
            return False
        return True


async def serve_mcp_socket(ctx: ServerContext, scope: dict[str, Any], receive: AsgiReceive, send: AsgiSend) -> None:
    """ASGI handler of one ``WS /mcp`` connection."""
    await serve_session(ctx, scope, receive, send, McpSocket)
