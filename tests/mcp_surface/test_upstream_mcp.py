"""Upstream ``openenv`` against our MCP surface, with the real upstream package.

Upstream's ``MCPEnvironment`` needs upstream's ``openenv.core`` in the serving process, so our
server runs inside the newest ``openenv`` peer venv (``tests/upstream_peers.py``: each peer venv
holds our package too) and serves :class:`upstream_tool_env.NotesEnvironment` (FastMCP tools)
unchanged. Upstream's own ``openenv validate --url`` and ``MCPToolClient`` run from the same
venv; raw ``mcp`` frames come from this process.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from websockets.sync.client import connect

from openenv_anyio.conformance.runner import CheckOptions, run_checks_sync
from openenv_anyio.core import decode_server_frame
from tests.upstream_peers import Peer, peer_named, run_peer_command, run_peer_script, serve_ours, serve_upstream

HERE = Path(__file__).resolve().parent
TARGET = "upstream_tool_env:NotesEnvironment"
TIMEOUT_S = 60.0


@pytest.fixture(scope="module")
def peer() -> Peer:
    peer = peer_named("openenv")
    peer.require()
    return peer


@contextlib.contextmanager
def serving(peer: Peer, *args: str) -> Iterator[str]:
    with serve_ours(peer, HERE, TARGET, *args) as url:
        yield url


@pytest.fixture(scope="module")
def upstream_env_url(peer: Peer) -> Iterator[str]:
    with serving(peer) as url:
        yield url


@pytest.mark.parametrize("mode", ["simulation", "production"])
def test_openenv_validate_passes_all_criteria(mode: str, peer: Peer, upstream_env_url: str) -> None:
    """Upstream's own runtime validator, in both modes (HTTP-9, HTTP-10, MCP-RPC-1)."""
    with contextlib.ExitStack() as stack:
        url = upstream_env_url if mode == "simulation" else stack.enter_context(serving(peer, "--mode", "production"))
        completed = run_peer_command(peer, "openenv", ["validate", "--url", url, "--json"])
        report = json.loads(completed.stdout)
    assert report["summary"]["failed_criteria"] == [], report
    assert report["summary"]["passed_count"] == report["summary"]["total_count"] == 6
    assert report["passed"] is True and report["mode"] == mode


def test_upstream_mcp_tool_client_lists_and_calls_tools(peer: Peer, upstream_env_url: str) -> None:
    """Upstream's MCPToolClient: session/create, /ws?session_id=, tools over POST /mcp."""
    seen: dict[str, Any] = run_peer_script(peer, "mcp_tool_client.py", upstream_env_url)
    assert seen["tools"] == ["recall", "remember", "shout"]
    assert seen["remember"] == 1
    assert seen["recall"] == "hello"  # the tool calls share the session's environment
    assert seen["shout"] == "HI"
    assert "no_such_tool" in seen["unknown_tool_error"]
    # a call_tool step on the attached socket reaches the same environment (MCP-TOOL-4, MCP-SES-3)
    assert seen["step_call_tool"]["data"] == "hello"
    assert seen["episode_id"]


def test_raw_mcp_frames_reach_fastmcp_tools(upstream_env_url: str) -> None:
    """``mcp`` frames on /ws (MCP-WS-1) next to upstream's tool step actions (MCP-TOOL-4)."""

    def ask(frame: dict[str, Any]) -> dict[str, Any]:
        socket.send(json.dumps(frame))
        text = socket.recv(timeout=TIMEOUT_S)
        assert isinstance(text, str)
        decode_server_frame(text)
        return json.loads(text)

    def call(request_id: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
        return ask({"type": "mcp", "data": {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}})[
            "data"
        ]

    with connect("ws" + upstream_env_url.removeprefix("http") + "/ws", open_timeout=TIMEOUT_S, proxy=None) as socket:
        listed = call(1, "tools/list", {})
        assert [tool["name"] for tool in listed["result"]["tools"]] == ["remember", "recall", "shout"]
        assert listed["result"]["tools"][0]["inputSchema"]["required"] == ["text"]
        ask({"type": "reset"})
        assert call(2, "tools/call", {"name": "remember", "arguments": {"text": "x"}})["result"]["data"] == 1
        assert call(3, "tools/call", {"name": "shout", "arguments": {"text": "x"}})["result"]["data"] == "X"
        stepped = ask({"type": "step", "data": {"type": "call_tool", "tool_name": "recall", "arguments": {}}})
        assert stepped["data"]["observation"]["result"]["data"] == "x"
        listed_by_step = ask({"type": "step", "data": {"type": "list_tools"}})
        assert len(listed_by_step["data"]["observation"]["tools"]) == 3
        plain = ask({"type": "step", "data": {}})
        assert plain["data"]["reward"] == 1.0  # the environment's own step sees the note
        assert call(4, "tools/call", {"name": "nope", "arguments": {}})["error"]["code"] == -32602
        assert call(5, "tools/call", {"name": "recall", "arguments": {"index": 9}})["error"]["code"] == -32603
        assert call(6, "tools/call", {"name": "remember", "arguments": {"txt": "x"}})["error"]["code"] == -32602
        assert ask({"type": "state"})["data"]["step_count"] == 1


#: the kit's MCP and OpenAPI cases, as upstream's own server for the same environment earns them
UPSTREAM_MCP_VERDICTS = {
    "HTTP-07": "pass",  # FastAPI's OpenAPI 3.1 document
    "MCP-01": "pass",
    "MCP-02": "pass",
    "MCP-03": "pass",
}


def test_kit_mcp_cases_against_upstream_and_ours(peer: Peer, upstream_env_url: str) -> None:
    """The kit's MCP-* and HTTP-07 cases against upstream's server (``create_app`` with
    ``CallToolAction``, as upstream's tool environments are served) and against ours serving
    the same environment in production mode: the same verdicts."""
    only = ["MCP", "HTTP-07", "HTTP-06"]
    with serve_upstream(peer, HERE, "upstream_tool_app:app") as upstream_url:
        theirs = run_checks_sync(CheckOptions(upstream_url, only=only, timeout_s=TIMEOUT_S)).verdicts()
    with serving(peer, "--mode", "production") as production_url:
        ours = run_checks_sync(CheckOptions(production_url, only=only, timeout_s=TIMEOUT_S)).verdicts()
    assert theirs == {**UPSTREAM_MCP_VERDICTS, "HTTP-06": "pass"}
    # production mode: the stateless routes are absent, and the kit says so instead of failing
    assert ours == {**UPSTREAM_MCP_VERDICTS, "HTTP-06": "not-applicable"}
