"""``WS /mcp``: JSON-RPC over a WebSocket, one session (and environment) per connection.

Each text frame is one JSON-RPC request and is answered with one response frame, in order
(``MCP-WS-3``). Capacity, idle timeout, pings and shutdown are those of a ``/ws`` session:
the connection is a plain session (:mod:`..sessions.base`) whose frames :class:`RpcFrames`
answers.
"""

from __future__ import annotations

from ...core import RpcFailure, dumps, read_rpc_request
from ..asgi import AsgiSend
from ..context import ServerContext
from ..execution.bound_env import BoundEnv
from ..execution.faults import EnvironmentAborted
from ..hypercorn_adapter.events import HeldText
from ..mcp.dispatch import answer_rpc
from .base import AsgiHandler, session_endpoint
from .connection import SessionIdentity
from .ends import SessionEnd

__all__ = ["RpcFrames", "serve_mcp_socket"]


class RpcFrames:
    """The frames of one ``WS /mcp`` connection: each a JSON-RPC request on its environment."""

    #: environment failures are JSON-RPC errors here, never the end of the session
    aborted: EnvironmentAborted | None = None

    def __init__(self, ctx: ServerContext, identity: SessionIdentity, env: BoundEnv, send: AsgiSend) -> None:
        self.ctx = ctx
        self.identity = identity
        self.env = env
        self.send = send

    async def handle(self, payload: str | bytes | HeldText) -> SessionEnd | None:
        if isinstance(payload, HeldText):  # a large frame collected by a direct stream
            data = payload.data
            payload.release()
            payload = data.decode() if data is not None else ""
        try:
            request = read_rpc_request(payload)
        except RpcFailure as failure:
            response = failure.response()
        else:
            response = await answer_rpc(self.ctx, request, own_env=self.env, own_view=self.identity.view)
        await self.send({"type": "websocket.send", "text": dumps(response)})
        return None


def serve_mcp_socket(ctx: ServerContext) -> AsgiHandler:
    """The ASGI handler of ``WS /mcp`` connections."""
    return session_endpoint(ctx, RpcFrames)
