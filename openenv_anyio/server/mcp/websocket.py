"""``WS /mcp``: JSON-RPC over a WebSocket, one session (and environment) per connection.

Each text frame is one JSON-RPC request and is answered with one response frame, in order
(``MCP-WS-3``). Capacity, idle timeout, pings and shutdown are those of a ``/ws`` session:
the connection is a plain session (:mod:`..sessions.base`) whose frames :class:`RpcFrames`
answers: the MCP surface stands above the session layer and hands it its frame handler.
"""

from __future__ import annotations

from functools import partial

from ...core import ProtocolError, RpcCode, RpcFailure, dumps, read_rpc_request
from ..asgi import AsgiSend
from ..execution.bound_env import BoundEnv
from ..execution.faults import EnvironmentAborted
from ..hypercorn_adapter.events import HeldText
from ..memory.large_frames import LARGE_FRAME_CHARS
from ..sessions.answers import RpcDispatch
from ..sessions.base import AsgiHandler, session_endpoint
from ..sessions.ends import SessionEnd
from ..sessions.server import SessionsServer
from ..sessions.session import SessionIdentity

__all__ = ["RpcFrames", "serve_mcp_socket"]


class RpcFrames:
    """The frames of one ``WS /mcp`` connection: each a JSON-RPC request on its environment."""

    #: an environment that aborted while answering (``SRV-FAULT-1``): answered, then the end
    #: of the session; other failures are JSON-RPC errors and the session goes on
    aborted: EnvironmentAborted | None = None

    def __init__(
        self, ctx: SessionsServer, identity: SessionIdentity, env: BoundEnv, send: AsgiSend, *, rpc: RpcDispatch
    ) -> None:
        self.ctx = ctx
        self.identity = identity
        self.env = env
        self.send = send
        self.rpc = rpc

    async def handle(self, payload: str | bytes | HeldText) -> SessionEnd | None:
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
            response, aborted = await self.rpc(request, self.env, self.identity.view)
            if aborted is not None:  # SRV-FAULT-1: answered, then the session ends
                self.aborted = aborted
        await self.send({"type": "websocket.send", "text": dumps(response)})
        return None if self.aborted is None else SessionEnd.ABORTED


def serve_mcp_socket(ctx: SessionsServer, rpc: RpcDispatch) -> AsgiHandler:
    """The ASGI handler of ``WS /mcp`` connections (``rpc``: :func:`.dispatch.session_rpc`)."""
    return session_endpoint(ctx, partial(RpcFrames, rpc=rpc))
