"""One fault policy for steps and tools (SRV-FAULT-1, SRV-FAULT-2, SEC-ERR-1, MCP-ERR-2): on
every MCP path (POST /mcp, a hosted session on it, WS /mcp, an ``mcp`` frame on /ws) a tool's
exception is answered -32603 with an error id and only what ``expose_errors`` allows; a
result no frame can carry is a tool fault, answered, and the session goes on; a tool raising
``SystemExit`` is answered and ends its session, as a step doing the same does."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from websockets.exceptions import ConnectionClosed

from openenv_anyio.core import RpcCode

from .test_mcp_server import RESPONSE, TIMEOUT, ask, mcp_frame, running, ws
from .tool_envs import FaultyTools

CALLS = {"fail": {"name": "fail", "arguments": {"name": "db"}}, "lone": {"name": "lone", "arguments": {}}}


def _post(server: Any, method: str, params: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    body = {"jsonrpc": "2.0", "id": 7, "method": method, "params": params}
    response = httpx.post(server.url + "/mcp", json=body, timeout=TIMEOUT)
    assert response.headers["content-type"].startswith("application/json"), response.text[:200]
    return response.status_code, response.json()


def _over_ws_mcp(socket: Any, params: dict[str, Any]) -> dict[str, Any]:
    socket.send(json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params}))
    return json.loads(socket.recv(timeout=TIMEOUT))


def _check_fault(answer: dict[str, Any], *, exposed: bool, tool: str) -> None:
    assert RESPONSE.is_valid(answer), answer
    error = answer["error"]
    assert error["code"] == RpcCode.INTERNAL_ERROR
    assert len(error["data"]["error_id"]) == 16
    message = error["message"]
    assert "/srv" not in message and "secret" not in message and "\\ud800" not in message
    if exposed and tool == "fail":
        assert "ValueError" in message and "<path>" in message
    if not exposed:
        assert "ValueError" not in message and error["data"]["error_id"] in message


@pytest.mark.parametrize("exposed", [True, False], ids=["exposed", "hidden"])
@pytest.mark.parametrize("tool", sorted(CALLS))
def test_a_tool_fault_is_answered_by_the_error_rules_on_every_path(exposed: bool, tool: str) -> None:
    with running(FaultyTools, expose_errors=exposed) as server:
        status, answer = _post(server, "tools/call", CALLS[tool])  # a fresh environment
        assert status == 200
        _check_fault(answer, exposed=exposed, tool=tool)
        _, created = _post(server, "openenv/session/create", {})
        session_id = created["result"]["session_id"]
        status, answer = _post(server, "tools/call", {**CALLS[tool], "session_id": session_id})  # a hosted session
        assert status == 200
        _check_fault(answer, exposed=exposed, tool=tool)
        _, listed = _post(server, "tools/list", {"session_id": session_id})
        assert "result" in listed  # the session goes on
        with ws(server, "/mcp") as socket:
            _check_fault(_over_ws_mcp(socket, CALLS[tool]), exposed=exposed, tool=tool)
            assert "result" in _over_ws_mcp(socket, {"name": "shout", "arguments": {"text": "on"}})
        with ws(server, "/ws") as socket:
            ask(socket, {"type": "reset"})
            _check_fault(ask(socket, mcp_frame("tools/call", CALLS[tool]))["data"], exposed=exposed, tool=tool)
            assert ask(socket, {"type": "step", "data": {}})["type"] == "observation"


def _closed_with(socket: Any) -> int | None:
    with pytest.raises(ConnectionClosed) as closed:
        socket.recv(timeout=TIMEOUT)
    return closed.value.rcvd.code if closed.value.rcvd is not None else None


@pytest.mark.parametrize("tool", ["leave", "leave_async"])
def test_a_tool_raising_system_exit_ends_its_session_as_a_step_would(tool: str) -> None:
    call = {"name": tool, "arguments": {}}
    with running(FaultyTools) as server:
        with ws(server, "/ws") as socket:
            ask(socket, {"type": "reset"})
            answer = ask(socket, mcp_frame("tools/call", call))["data"]
            assert answer["error"]["code"] == RpcCode.INTERNAL_ERROR and "SystemExit" in answer["error"]["message"]
            assert _closed_with(socket) == 1011
        with ws(server, "/mcp") as socket:
            answer = _over_ws_mcp(socket, call)
            assert answer["error"]["code"] == RpcCode.INTERNAL_ERROR and "SystemExit" in answer["error"]["message"]
            assert _closed_with(socket) == 1011
        _, created = _post(server, "openenv/session/create", {})
        session_id = created["result"]["session_id"]
        _, answer = _post(server, "tools/call", {**call, "session_id": session_id})
        assert answer["error"]["code"] == RpcCode.INTERNAL_ERROR and "SystemExit" in answer["error"]["message"]
        _, after = _post(server, "tools/list", {"session_id": session_id})
        assert after["error"]["code"] == RpcCode.INVALID_PARAMS and "Unknown session_id" in after["error"]["message"]
        _, fresh = _post(server, "tools/call", call)  # a fresh environment: the request fails, the server goes on
        assert fresh["error"]["code"] == RpcCode.INTERNAL_ERROR
        assert _post(server, "tools/list", {})[1]["result"]["tools"]
