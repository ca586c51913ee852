"""``POST /mcp``: one JSON-RPC request per HTTP request, answered with a JSON-RPC response
(a body that is not JSON is -32700, one that is not a request -32600: ``MCP-RPC-1``), with
HTTP 200, or 409 Conflict for an episode mismatch (-32001, ``MCP-SES-6``)."""

from __future__ import annotations

from quart import Response, request
from quart_trio import QuartTrio

from ...core import RpcCode, RpcFailure, dumps, read_rpc_request
from ..context import ServerContext
from .dispatch import answer_rpc
from .hosted_sessions import HostedSessions

__all__ = ["add_mcp_route"]


def add_mcp_route(app: QuartTrio, ctx: ServerContext, hosted: HostedSessions) -> None:
    """Register ``POST /mcp`` on ``app``."""

    @app.post("/mcp")
    async def mcp() -> Response:
        try:
            rpc = read_rpc_request(await request.get_data())
        except RpcFailure as failure:
            response = failure.response()
        else:
            response = await answer_rpc(ctx, rpc, hosted)
        error = response.get("error")
        conflict = isinstance(error, dict) and error.get("code") == RpcCode.EPISODE_MISMATCH
        return Response(dumps(response), status=409 if conflict else 200, content_type="application/json")
