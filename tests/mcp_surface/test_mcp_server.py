"""The MCP surface of our server on a real loopback server: POST /mcp, WS /mcp, mcp frames on
/ws, sessions created over HTTP and attached by /ws?session_id=, production mode, /openapi.json."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from openapi_spec_validator import validate as validate_openapi
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from openenv_anyio.core import RpcCode, Validator, decode_server_frame, load_spec, spec_validator
from openenv_anyio.server import EnvServer, RunningServer, ServerConfig

from .tool_envs import NotesEnv, NoToolsEnv

TIMEOUT = 10.0
RESPONSE = spec_validator("jsonrpc/response.json")
CALL_RESULT = Validator({"$ref": load_spec().uri("jsonrpc/response.json") + "#/$defs/tools-call-result"})


def wait_for(condition: Any, timeout: float = TIMEOUT) -> None:
    """Poll ``condition`` until true (fail after ``timeout``)."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"condition not met within {timeout} s"
        time.sleep(0.01)


@contextlib.contextmanager
def running(factory: Any = NotesEnv, **config: Any) -> Iterator[RunningServer]:
    config.setdefault("validate_outbound", True)
    config.setdefault("shutdown_grace_s", 2.0)
    with EnvServer(factory, ServerConfig(**config)).run_in_thread() as server:
        yield server


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    with running() as server:
        yield server


def rpc(
    server: RunningServer, method: str, params: dict[str, Any] | None = None, *, request_id: Any = 1
) -> dict[str, Any]:
    """One POST /mcp; checks the status and the response's shape against the spec."""
    body = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params or {}}
    response = httpx.post(server.url + "/mcp", json=body, timeout=TIMEOUT)
    assert response.status_code == 200
    answer = response.json()
    assert RESPONSE.is_valid(answer), answer
    assert answer["id"] == request_id
    return answer


def error_code(answer: dict[str, Any]) -> int:
    assert "error" in answer, answer
    return int(answer["error"]["code"])


def ws(server: RunningServer, path: str) -> ClientConnection:
    return connect("ws" + server.url.removeprefix("http") + path, open_timeout=TIMEOUT, close_timeout=TIMEOUT)


def ask(socket: ClientConnection, frame: dict[str, Any]) -> dict[str, Any]:
    socket.send(json.dumps(frame))
    text = socket.recv(timeout=TIMEOUT)
    assert isinstance(text, str)
    decode_server_frame(text)
    return json.loads(text)


def mcp_frame(method: str, params: dict[str, Any] | None = None, request_id: int = 1) -> dict[str, Any]:
    return {"type": "mcp", "data": {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params or {}}}


# -- POST /mcp ------------------------------------------------------------------------------


def test_tools_list_describes_declared_tools(server: RunningServer) -> None:  # MCP-RPC-2, MCP-TOOL-1
    tools = {tool["name"]: tool for tool in rpc(server, "tools/list")["result"]["tools"]}
    assert sorted(tools) == ["recall", "remember", "shout"]
    assert tools["remember"]["description"] == "Store a note."
    assert tools["remember"]["inputSchema"]["required"] == ["text"]
    assert tools["shout"]["inputSchema"]["properties"]["times"] == {"type": "integer", "default": 1}
    assert tools["recall"]["inputSchema"]["properties"]["index"]["minimum"] == 0


def test_tools_call_answers_the_value_in_data(server: RunningServer) -> None:  # MCP-RPC-2
    answer = rpc(server, "tools/call", {"name": "shout", "arguments": {"text": "ab", "times": 2}})
    assert answer["result"]["data"] == "ABAB"
    assert answer["result"]["content"] == [{"type": "text", "text": "ABAB"}]
    assert answer["result"]["is_error"] is False
    assert CALL_RESULT.is_valid(answer["result"])


@pytest.mark.parametrize(
    ("body", "code"),
    [
        (b"not json", RpcCode.PARSE_ERROR),
        (b"{}", RpcCode.INVALID_REQUEST),
        (b"[1, 2]", RpcCode.INVALID_REQUEST),
        (b'{"jsonrpc": "1.0", "method": "tools/list", "id": 7}', RpcCode.INVALID_REQUEST),
        (b'{"jsonrpc": "2.0", "method": "tools/list", "id": 7, "extra": 1}', RpcCode.INVALID_REQUEST),
        (b'{"jsonrpc": "2.0", "method": "tools/call", "id": 7, "params": {}}', RpcCode.INVALID_PARAMS),
        (b'{"jsonrpc": "2.0", "method": "resources/list", "id": 7}', RpcCode.METHOD_NOT_FOUND),
    ],
)
def test_bad_requests_are_json_rpc_errors_with_status_200(server: RunningServer, body: bytes, code: RpcCode) -> None:
    response = httpx.post(  # MCP-RPC-1, MCP-RPC-3 (a JSON body, declared as such: SEC-CT-1)
        server.url + "/mcp", content=body, headers={"Content-Type": "application/json"}, timeout=TIMEOUT
    )
    assert response.status_code == 200
    answer = response.json()
    assert RESPONSE.is_valid(answer), answer
    assert error_code(answer) == code
    assert answer["id"] == (7 if b'"id": 7' in body else None)


@pytest.mark.parametrize(
    ("params", "code", "pointer"),
    [
        ({"name": "nope"}, RpcCode.INVALID_PARAMS, None),
        ({"name": "recall", "arguments": {"index": -1}}, RpcCode.INVALID_PARAMS, "/index"),
        ({"name": "remember", "arguments": {}}, RpcCode.INVALID_PARAMS, ""),
        ({"name": "remember", "arguments": {"text": "a", "other": 1}}, RpcCode.INVALID_PARAMS, ""),
        ({"name": "recall", "arguments": {"index": 5}}, RpcCode.INTERNAL_ERROR, None),  # the tool raises
    ],
)
def test_tool_failures_are_json_rpc_errors(
    server: RunningServer, params: dict[str, Any], code: RpcCode, pointer: str | None
) -> None:
    answer = rpc(server, "tools/call", params)  # MCP-ERR-1
    assert error_code(answer) == code
    assert answer["error"]["data"]["tool"] == params["name"]
    if pointer is not None:
        assert answer["error"]["data"]["errors"][0]["pointer"] == pointer


def test_an_environment_without_tools_says_so() -> None:
    with running(NoToolsEnv) as server:
        assert error_code(rpc(server, "tools/list")) == RpcCode.METHOD_NOT_FOUND


def test_reserved_tool_names_are_refused() -> None:  # MCP-TOOL-2
    from openenv_anyio.tools import tool

    for name in ("reset", "step", "state", "close"):
        with pytest.raises(ValueError, match="reserved"):
            tool(name=name)(lambda self: None)


# -- sessions created over HTTP -----------------------------------------------------------


def test_session_ids_are_unguessable_secrets(server: RunningServer) -> None:  # MCP-SES-1
    ids = {rpc(server, "openenv/session/create")["result"]["session_id"] for _ in range(3)}
    assert len(ids) == 3
    for session_id in ids:
        assert len(session_id) >= 43  # 256 bits, base64url
        assert rpc(server, "openenv/session/close", {"session_id": session_id})["result"]["closed"] is True


def test_a_tool_call_and_a_step_share_the_session_environment_and_thread(server: RunningServer) -> None:
    session_id = rpc(server, "openenv/session/create")["result"]["session_id"]  # MCP-SES-3, MCP-TOOL-3
    with ws(server, f"/ws?session_id={session_id}") as socket:
        reset = ask(socket, {"type": "reset"})
        called = rpc(server, "tools/call", {"name": "remember", "arguments": {"text": "a"}, "session_id": session_id})
        assert called["result"]["data"]["count"] == 1
        step = ask(socket, {"type": "step", "data": {}})
        assert step["data"]["observation"]["notes"] == 1
        assert step["data"]["reward"] == 1.0
        assert (
            called["result"]["data"]["thread"]
            == step["data"]["observation"]["thread"]
            == reset["data"]["observation"]["thread"]
        )
        over_ws = ask(socket, mcp_frame("tools/call", {"name": "recall", "arguments": {}}, 9))
        assert over_ws == {"type": "mcp", "data": {"jsonrpc": "2.0", "id": 9, "result": over_ws["data"]["result"]}}
        assert over_ws["data"]["result"]["data"] == "a"
    # the socket closed: the session goes on (MCP-SES-4)
    again = rpc(server, "tools/call", {"name": "recall", "arguments": {}, "session_id": session_id})
    assert again["result"]["data"] == "a"
    assert rpc(server, "openenv/session/close", {"session_id": session_id})["result"]["closed"] is True
    assert error_code(rpc(server, "tools/list", {"session_id": session_id})) == RpcCode.INVALID_PARAMS


def test_attaching_to_an_unknown_session_is_refused(server: RunningServer) -> None:
    with ws(server, "/ws?session_id=not-a-session") as socket:  # MCP-SES-3
        frame = json.loads(socket.recv(timeout=TIMEOUT))
        assert frame["data"]["code"] == "SESSION_NOT_FOUND"
        with pytest.raises(ConnectionClosed) as closed:
            socket.recv(timeout=TIMEOUT)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 4404


def test_one_socket_at_a_time_and_close_waits_for_it(server: RunningServer) -> None:
    session_id = rpc(server, "openenv/session/create")["result"]["session_id"]
    before = server.stats()["live_envs"]
    with ws(server, f"/ws?session_id={session_id}") as first:
        ask(first, {"type": "reset"})
        with ws(server, f"/ws?session_id={session_id}") as second:
            assert json.loads(second.recv(timeout=TIMEOUT))["data"]["code"] == "SESSION_ERROR"
            with pytest.raises(ConnectionClosed) as closed:
                second.recv(timeout=TIMEOUT)
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 4409
        answer = rpc(server, "openenv/session/close", {"session_id": session_id})  # MCP-SES-4
        assert answer["result"] == {"session_id": session_id, "closed": False, "closing": True}
        with pytest.raises(ConnectionClosed):
            first.recv(timeout=TIMEOUT)
    assert error_code(rpc(server, "tools/list", {"session_id": session_id})) == RpcCode.INVALID_PARAMS
    assert server.stats()["live_envs"] == before - 1


def test_capacity_counts_hosted_sessions() -> None:
    with running(max_concurrent_envs=1) as server:
        session_id = rpc(server, "openenv/session/create")["result"]["session_id"]
        refused = rpc(server, "openenv/session/create")
        assert error_code(refused) == RpcCode.SERVER_ERROR
        assert refused["error"]["data"] == {"active_sessions": 1, "max_sessions": 1}
        rpc(server, "openenv/session/close", {"session_id": session_id})
        assert "result" in rpc(server, "openenv/session/create")


def test_idle_hosted_sessions_end() -> None:  # MCP-SES-5
    with running(session_timeout_s=0.2) as server:
        session_id = rpc(server, "openenv/session/create")["result"]["session_id"]
        assert server.stats()["active_sessions"] == 1
        wait_for(lambda: server.stats()["active_sessions"] == 0)
        assert error_code(rpc(server, "tools/list", {"session_id": session_id})) == RpcCode.INVALID_PARAMS


def test_hosted_sessions_expire_by_default_without_a_session_timeout() -> None:  # MCP-SES-5
    """A hosted session outlives its sockets, so without --session-timeout it still ends
    after hosted_session_idle_s with no request and no socket (a finite default)."""
    default = ServerConfig().hosted_session_idle_s
    assert default is not None and 0 < default <= 3600
    with running(hosted_session_idle_s=0.3) as server:
        session_id = rpc(server, "openenv/session/create")["result"]["session_id"]
        assert server.stats()["active_sessions"] == 1
        wait_for(lambda: server.stats()["active_sessions"] == 0)
        assert error_code(rpc(server, "tools/list", {"session_id": session_id})) == RpcCode.INVALID_PARAMS
    with running(session_timeout_s=0.3, hosted_session_idle_s=None) as server:  # --session-timeout rules when given
        rpc(server, "openenv/session/create")
        wait_for(lambda: server.stats()["active_sessions"] == 0)


class ClosingNotes(NotesEnv):
    closed: list[ClosingNotes] = []

    def close(self) -> None:
        ClosingNotes.closed.append(self)


def test_shutdown_ends_hosted_sessions() -> None:  # MCP-SES-5, WS-SHUT-1
    ClosingNotes.closed.clear()
    with contextlib.ExitStack() as sockets:
        with running(ClosingNotes) as server:
            rpc(server, "openenv/session/create")
            attached = rpc(server, "openenv/session/create")["result"]["session_id"]
            socket = sockets.enter_context(ws(server, f"/ws?session_id={attached}"))
            ask(socket, {"type": "reset"})
            assert server.stats()["live_envs"] == 2
        assert len(ClosingNotes.closed) == 2
        with pytest.raises(ConnectionClosed) as closed:
            socket.recv(timeout=TIMEOUT)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1001


# -- WebSocket paths ------------------------------------------------------------------------


def test_mcp_frames_on_ws_use_the_connection_environment(server: RunningServer) -> None:  # MCP-WS-1
    with ws(server, "/ws") as socket:
        listed = ask(socket, mcp_frame("tools/list"))
        assert [tool["name"] for tool in listed["data"]["result"]["tools"]] == ["remember", "recall", "shout"]
        ask(socket, {"type": "reset"})
        ask(socket, mcp_frame("tools/call", {"name": "remember", "arguments": {"text": "x"}}, 2))
        assert ask(socket, {"type": "step", "data": {}})["data"]["observation"]["notes"] == 1


@pytest.mark.parametrize(
    ("data", "code"),
    [
        ({"id": 4}, RpcCode.INVALID_REQUEST),
        ({"jsonrpc": "2.0", "id": 4, "method": "nope"}, RpcCode.METHOD_NOT_FOUND),
        ({"jsonrpc": "2.0", "id": 4, "method": "openenv/session/create"}, RpcCode.METHOD_NOT_FOUND),
        (
            {
                "jsonrpc": "2.0",
                "id": 4,
                "method": "tools/call",
                "params": {"name": "recall", "arguments": {"index": 3}},
            },
            RpcCode.INTERNAL_ERROR,
        ),
    ],
)
def test_bad_mcp_frames_get_json_rpc_errors_and_the_session_goes_on(
    server: RunningServer, data: dict[str, Any], code: RpcCode
) -> None:
    with ws(server, "/ws") as socket:  # MCP-WS-2, MCP-ERR-2
        answer = ask(socket, {"type": "mcp", "data": data})
        assert answer["type"] == "mcp" and answer["data"]["error"]["code"] == code
        assert answer["data"]["id"] == 4  # readable, so echoed even on an invalid request
        assert ask(socket, {"type": "reset"})["type"] == "observation"


def test_an_mcp_frame_without_data_is_a_validation_error(server: RunningServer) -> None:
    with ws(server, "/ws") as socket:
        assert ask(socket, {"type": "mcp"})["data"]["code"] == "VALIDATION_ERROR"


def test_ws_mcp_speaks_bare_json_rpc(server: RunningServer) -> None:  # MCP-WS-3
    with ws(server, "/mcp") as socket:
        for request_id, text in enumerate(
            [
                "not json",
                json.dumps(
                    {
                        "jsonrpc": "2.0",
                        "id": 1,
                        "method": "tools/call",
                        "params": {"name": "remember", "arguments": {"text": "a"}},
                    }
                ),
            ]
        ):
            socket.send(text)
            answer = json.loads(socket.recv(timeout=TIMEOUT))
            assert RESPONSE.is_valid(answer)
            if request_id == 0:
                assert answer["error"]["code"] == RpcCode.PARSE_ERROR
            else:
                assert answer["result"]["data"]["count"] == 1
        socket.send(
            json.dumps(
                {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "recall", "arguments": {}}}
            )
        )
        assert json.loads(socket.recv(timeout=TIMEOUT))["result"]["data"] == "a"


# -- modes and OpenAPI --------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["simulation", "production"])
def test_openapi_document_is_valid_and_follows_the_mode(mode: str) -> None:  # HTTP-9, HTTP-10
    with running(mode=mode) as server:
        document = httpx.get(server.url + "/openapi.json", timeout=TIMEOUT).json()
        validate_openapi(document)
        assert document["openapi"] == "3.1.0"
        assert document["info"]["version"] == "1.0.0"
        simulation = {"/reset", "/step", "/state"}
        assert (simulation <= document["paths"].keys()) == (mode == "simulation")
        assert not (simulation & document["paths"].keys()) or mode == "simulation"
        assert "/mcp" in document["paths"]
        reset = httpx.post(server.url + "/reset", json={}, timeout=TIMEOUT)
        assert reset.status_code == (200 if mode == "simulation" else 404)
        listed = httpx.get(server.url + "/", timeout=TIMEOUT).json()["endpoints"]
        assert "/mcp" in listed and "/openapi.json" in listed
        assert ("/reset" in listed) == (mode == "simulation")
        assert "result" in rpc(server, "tools/list")


def test_openapi_lists_every_http_route_the_server_lists(server: RunningServer) -> None:  # HTTP-9
    """The root listing and the OpenAPI document name the same HTTP routes (the WebSockets
    and the dashboard page aside), so a route added to one and not the other is caught."""
    document = httpx.get(server.url + "/openapi.json", timeout=TIMEOUT).json()
    listed = httpx.get(server.url + "/", timeout=TIMEOUT).json()["endpoints"]
    http_routes = {path for path, what in listed.items() if not what.startswith("WebSocket") and path != "/web"}
    assert http_routes == set(document["paths"])
    assert {"/ready", "/metrics", "/access"} <= set(document["paths"])
    metrics = document["paths"]["/metrics"]["get"]["responses"]["200"]["content"]
    assert list(metrics) == ["text/plain"]


def test_openapi_reuses_the_spec_schemas(server: RunningServer) -> None:
    document = httpx.get(server.url + "/openapi.json", timeout=TIMEOUT).json()
    schemas = document["components"]["schemas"]
    assert (
        schemas["ResetParameters"]["properties"]["seed"]
        == spec_validator("frames/reset.json").schema["properties"]["data"]["properties"]["seed"]
    )
    assert schemas["JsonRpcRequest"]["required"] == ["jsonrpc", "method"]


def test_a_call_naming_another_episode_changes_nothing(server: RunningServer) -> None:  # MCP-SES-6
    session_id = rpc(server, "openenv/session/create")["result"]["session_id"]
    with ws(server, f"/ws?session_id={session_id}") as socket:
        ask(socket, {"type": "reset", "data": {"episode_id": "ep-1"}})
        params = {"name": "remember", "arguments": {"text": "a"}, "session_id": session_id}
        body = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {**params, "episode_id": "ep-0"}}
        refused = httpx.post(server.url + "/mcp", json=body, timeout=TIMEOUT)
        assert refused.status_code == 409
        assert refused.json()["error"] == {
            "code": RpcCode.EPISODE_MISMATCH,
            "message": refused.json()["error"]["message"],
            "data": {"current_episode_id": "ep-1"},
        }
        assert rpc(server, "tools/call", {**params, "episode_id": "ep-1"})["result"]["data"]["count"] == 1
        on_ws = ask(
            socket, mcp_frame("tools/call", {"name": "remember", "arguments": {"text": "b"}, "episode_id": "ep-9"}, 4)
        )
        assert on_ws["data"]["error"]["code"] == RpcCode.EPISODE_MISMATCH
        assert (
            ask(socket, {"type": "step", "data": {}})["data"]["observation"]["notes"] == 1
        )  # only the matching call ran
    rpc(server, "openenv/session/close", {"session_id": session_id})
