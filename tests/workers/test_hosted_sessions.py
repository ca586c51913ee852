"""Hosted MCP sessions (``openenv/session/create``) under ``serve --workers N``: a session lives
in the worker that created it, and every request naming it reaches that worker, whichever
worker the kernel gave the connection to: ``POST /mcp`` with its ``session_id`` (forwarded
to the owner, keep-alive connections included) and ``/ws?session_id=`` (the connection is
handed to the owner, as resumes are)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest
from serve_process import ServeProcess, serve_process
from websockets.sync.client import connect

from openenv_anyio.server.workers.routing import session_owner

TARGET = "mcp_surface.tool_envs:NotesEnv"
TIMEOUT_S = 30.0
SESSIONS = 12
#: at most this many sessions are made waiting for the second worker to accept one
MAX_SESSIONS = 120
#: sessions created at once, each on a connection of its own
BATCH = 8


@pytest.fixture(scope="module")
def fleet() -> Iterator[ServeProcess]:
    with serve_process(TARGET, "--workers", "2", "--ping-interval", "0") as served:
        yield served


def _rpc(http: httpx.Client, method: str, params: dict[str, Any], request_id: int = 1) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
    answer = http.post("/mcp", json=body)
    assert answer.status_code == 200, answer.text[:300]
    result: dict[str, Any] = answer.json()
    return result


def _fresh_client(fleet: ServeProcess) -> httpx.Client:
    """A client whose connections are new ones (the kernel picks a worker for each)."""
    return httpx.Client(base_url=fleet.url, timeout=TIMEOUT_S, limits=httpx.Limits(max_keepalive_connections=0))


def _create(fleet: ServeProcess) -> str:
    with _fresh_client(fleet) as http:
        session_id: str = _rpc(http, "openenv/session/create", {})["result"]["session_id"]
        return session_id


def _owners(sessions: list[str]) -> Counter[int]:
    return Counter(owner[0] for owner in map(session_owner, sessions) if owner is not None)


def test_every_call_on_a_hosted_session_reaches_its_owner(fleet: ServeProcess) -> None:
    sessions: list[str] = []
    # the kernel picks the accepting worker, and one worker may take every connection that
    # arrives alone: sessions are made a batch of concurrent connections at a time until both
    # workers hold some (bounded)
    with ThreadPoolExecutor(BATCH) as pool:
        while len(sessions) < SESSIONS or (len(_owners(sessions)) < 2 and len(sessions) < MAX_SESSIONS):
            sessions += pool.map(lambda _: _create(fleet), range(BATCH))
    owners = _owners(sessions)
    assert sum(owners.values()) == len(sessions), sessions  # every id names the worker that holds it
    assert len(owners) == 2, owners  # both workers made some (the test crosses workers)
    failures = []
    with _fresh_client(fleet) as fresh, httpx.Client(base_url=fleet.url, timeout=TIMEOUT_S) as kept:
        for round_ in range(3):
            for index, session_id in enumerate(sessions):
                http = fresh if (index + round_) % 2 else kept  # new connections and one kept alive
                answer = _rpc(
                    http,
                    "tools/call",
                    {"session_id": session_id, "name": "remember", "arguments": {"text": f"{round_}"}},
                )
                if "result" not in answer or answer["result"]["data"]["count"] != round_ + 1:
                    failures.append(answer)
    assert not failures, failures[:3]
    with _fresh_client(fleet) as http:
        for session_id in sessions:
            closed = _rpc(http, "openenv/session/close", {"session_id": session_id})
            assert closed["result"]["closed"] is True, closed


def test_attaching_a_socket_reaches_the_owner(fleet: ServeProcess) -> None:
    with _fresh_client(fleet) as http:
        sessions = [_rpc(http, "openenv/session/create", {})["result"]["session_id"] for _ in range(SESSIONS)]
        for session_id in sessions:
            _rpc(http, "tools/call", {"session_id": session_id, "name": "remember", "arguments": {"text": "a"}})
        for session_id in sessions:
            with connect(f"{fleet.ws_url}?session_id={session_id}", open_timeout=TIMEOUT_S) as socket:
                socket.send(json.dumps({"type": "step", "data": {}}))
                answer = json.loads(socket.recv(timeout=TIMEOUT_S))
                assert answer["type"] == "observation" and answer["data"]["observation"]["notes"] == 1, answer
        for session_id in sessions:
            _rpc(http, "openenv/session/close", {"session_id": session_id})


def test_a_session_id_of_no_worker_is_unknown_everywhere(fleet: ServeProcess) -> None:
    with _fresh_client(fleet) as http:
        for session_id in ("0-999-" + "x" * 43, "7-0-" + "y" * 43, "not-an-id"):
            answer = _rpc(http, "tools/list", {"session_id": session_id})
            assert "Unknown session_id" in answer["error"]["message"], answer
