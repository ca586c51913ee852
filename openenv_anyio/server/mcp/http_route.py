"""``POST /mcp``: one JSON-RPC request per HTTP request, answered with a JSON-RPC response
(a body that is not JSON is -32700, one that is not a request -32600: ``MCP-RPC-1``), with
HTTP 200, or 409 Conflict for an episode mismatch (-32001, ``MCP-SES-6``). A body over 1 MiB
is parsed as ``POST /step``'s is (:mod:`..memory.http_body`): 503 ``SERVER_BUSY`` without room."""

from __future__ import annotations

from typing import Protocol

from quart import Response, request
from quart_trio import QuartTrio

from ...core import ProtocolError, RpcCode, RpcFailure, dumps, read_rpc_request
from ..memory.http_body import busy_response, parse_request_body
from ..memory.large_frames import LargeFrames
from ..sessions.kept import KeptSessions
from .dispatch import McpServer, answer_rpc
from .owners import FORWARDED_HEADER, SessionOwners

__all__ = ["add_mcp_route"]

#: the headers of a forwarded request's answer relayed to the client
_RELAYED = frozenset({b"content-type", b"retry-after"})


class McpRouteServer(McpServer, Protocol):
    """What ``POST /mcp`` uses of its server: the MCP answers' needs, and the body parser."""

    @property
    def large_frames(self) -> LargeFrames: ...


def add_mcp_route(
    app: QuartTrio, ctx: McpRouteServer, hosted: KeptSessions, owners: SessionOwners | None = None
) -> None:
    """Register ``POST /mcp`` on ``app``; ``owners``: the other workers' hosted sessions, when
    this process is one worker of several."""

    @app.post("/mcp")
    async def mcp() -> Response:
        try:
            rpc = await parse_request_body(ctx.large_frames, read_rpc_request)  # SRV-MEM-1, SRV-MEM-2
        except ProtocolError as busy:
            return busy_response(busy)
        except RpcFailure as failure:
            response = failure.response()
        else:
            forwarded = await _at_owner(owners, rpc.session_id())
            if forwarded is not None:
                return forwarded
            response = await answer_rpc(ctx, rpc, hosted)
        error = response.get("error")
        conflict = isinstance(error, dict) and error.get("code") == RpcCode.EPISODE_MISMATCH
        return Response(dumps(response), status=409 if conflict else 200, content_type="application/json")


async def _at_owner(owners: SessionOwners | None, session_id: str | None) -> Response | None:
    """The owner's answer when the request names a hosted session another worker holds
    (``serve --workers N``, ``workers.forwarding``); None when it is answered here."""
    if owners is None or session_id is None or request.headers.get(FORWARDED_HEADER.decode()) is not None:
        return None
    slot = owners.owner_of(session_id)
    if slot is None:
        return None
    headers = list(request.scope.get("headers") or ())
    body = await request.get_data(as_text=False)  # read already (cached), to parse the request
    assert isinstance(body, bytes)
    answer = await owners.forward(slot, "POST", "/mcp", headers, body)
    if answer is None:
        failure = RpcFailure(RpcCode.SERVER_ERROR, "the worker process holding this session did not answer; try again")
        return Response(
            dumps(failure.response()), status=503, content_type="application/json", headers={"Retry-After": "1"}
        )
    status, answer_headers, body = answer
    kept = {
        name.decode("latin-1"): value.decode("latin-1") for name, value in answer_headers if name.lower() in _RELAYED
    }
    return Response(body, status=status, headers=kept)
