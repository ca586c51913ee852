"""The access policy on a real server (PROTOCOL.md section 12): every WebSocket route and
HTTP route, refused and served, as a foreign page, a careless client and an agent see it."""

from __future__ import annotations

import socket
import time
from typing import BinaryIO

import httpx
import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from openenv_anyio.core import SUBPROTOCOL
from openenv_anyio.envs.echo import EchoEnv
from openenv_anyio.server import RunningServer

from .conftest import TIMEOUT, ask, running

FOREIGN = "https://attacker.example"
OPERATOR = "operator-token-for-tests"
AGENT = "agent-token-for-tests"


def ws_url(server: RunningServer, path: str) -> str:
    return "ws" + server.url.removeprefix("http") + path


def handshake_status(server: RunningServer, path: str, **kwargs: object) -> int:
    """101 when the handshake opened the WebSocket, else the HTTP status of the refusal."""
    try:
        with connect(ws_url(server, path), open_timeout=TIMEOUT, close_timeout=TIMEOUT, **kwargs):  # type: ignore[arg-type]
            return 101
    except InvalidStatus as refused:
        return refused.response.status_code


@pytest.fixture(scope="module")
def open_server():
    with running(EchoEnv) as server:
        yield server


@pytest.fixture(scope="module")
def locked_server():
    with running(EchoEnv, token=OPERATOR, agent_tokens=(AGENT,)) as server:
        yield server


@pytest.mark.parametrize("path", ["/ws", "/ws/ui"])
@pytest.mark.parametrize("negotiate", [False, True])
def test_a_foreign_origin_is_refused_on_every_websocket_route(open_server, path, negotiate) -> None:
    """SEC-ORIGIN-1: 403 on the handshake, base and negotiated alike."""
    subprotocols = [SUBPROTOCOL] if negotiate else None
    assert handshake_status(open_server, path, origin=FOREIGN, subprotocols=subprotocols) == 403
    own = open_server.url.replace("http://", "http://", 1)
    assert handshake_status(open_server, path, origin=own, subprotocols=subprotocols) == 101


def test_clients_without_origin_still_drive_sessions(open_server) -> None:
    with connect(ws_url(open_server, "/ws"), open_timeout=TIMEOUT) as ws:
        assert ask(ws, {"type": "reset"})["type"] == "observation"


def test_allowed_origins_are_served() -> None:
    with running(EchoEnv, allowed_origins=("https://dashboard.example",)) as server:
        assert handshake_status(server, "/ws/ui", origin="https://dashboard.example") == 101
        assert handshake_status(server, "/ws/ui", origin=FOREIGN) == 403


@pytest.mark.parametrize(
    "headers",
    [
        {"content-type": "text/plain"},
        {"content-type": "application/x-www-form-urlencoded"},
        {"content-type": "application/json", "origin": FOREIGN},
    ],
)
@pytest.mark.parametrize("path", ["/reset", "/step"])
def test_http_routes_refuse_what_a_foreign_page_can_send(open_server, path, headers) -> None:
    """SEC-CT-1 (415) and SEC-ORIGIN-1 (403): the environment never runs."""
    body = b'{"action": {"message": "x"}}'
    with httpx.Client(base_url=open_server.url, timeout=TIMEOUT) as http:
        response = http.post(path, content=body, headers=headers)
    assert response.status_code in (403, 415)
    assert response.status_code == (403 if "origin" in headers else 415)
    assert "detail" in response.json()


def test_json_http_bodies_are_served(open_server) -> None:
    with httpx.Client(base_url=open_server.url, timeout=TIMEOUT) as http:
        assert http.post("/step", json={"action": {"message": "x"}}).status_code == 200
        assert http.post("/reset").status_code == 200


@pytest.mark.parametrize("path", ["/ws", "/ws/ui"])
def test_a_token_protects_every_websocket_route(locked_server, path) -> None:
    """SEC-TOKEN-1: a refused handshake without or with a wrong token."""
    assert handshake_status(locked_server, path) == 401
    assert handshake_status(locked_server, path, additional_headers={"Authorization": "Bearer wrong"}) == 401
    assert handshake_status(locked_server, path, subprotocols=[SUBPROTOCOL]) == 401  # type: ignore[list-item]
    for token in (OPERATOR, AGENT):
        assert handshake_status(locked_server, path, additional_headers={"Authorization": f"Bearer {token}"}) == 101


@pytest.mark.parametrize(
    ("method", "path"),
    [("GET", "/metadata"), ("GET", "/schema"), ("GET", "/state"), ("POST", "/reset"), ("POST", "/step")],
)
def test_a_token_protects_every_http_route(locked_server, method, path) -> None:
    """SEC-TOKEN-1: 401 with a Bearer challenge; /health stays open for probes."""
    with httpx.Client(base_url=locked_server.url, timeout=TIMEOUT) as http:
        refused = http.request(method, path, json={"action": {"message": "x"}} if path == "/step" else None)
        assert refused.status_code == 401
        assert refused.headers["www-authenticate"].startswith('Bearer realm="openenv"')
        served = http.request(
            method,
            path,
            headers={"Authorization": f"Bearer {AGENT}"},
            json={"action": {"message": "x"}} if path == "/step" else None,
        )
        assert served.status_code == 200
        assert http.get("/health").json() == {"status": "healthy"}


def test_refusals_carry_no_token(locked_server) -> None:
    with httpx.Client(base_url=locked_server.url, timeout=TIMEOUT) as http:
        refused = http.get("/schema", headers={"Authorization": f"Bearer {OPERATOR}x"})
    assert refused.status_code == 401 and OPERATOR not in refused.text
    assert 'error="invalid_token"' in refused.headers["www-authenticate"]
    assert OPERATOR not in repr(locked_server.server.config)


def test_probes_are_open_and_metrics_need_the_operator(locked_server) -> None:
    """SEC-TOKEN-1: /health and /ready answer probes without a token; /metrics (every
    session's figures) opens to the operator token only."""
    with httpx.Client(base_url=locked_server.url, timeout=TIMEOUT) as http:
        assert http.get("/health").status_code == 200
        assert http.get("/ready").status_code == 200
        assert http.get("/metrics").status_code == 401
        agent = http.get("/metrics", headers={"Authorization": f"Bearer {AGENT}"})
        assert agent.status_code == 403 and 'error="insufficient_scope"' in agent.headers["www-authenticate"]
        operator = http.get("/metrics", headers={"Authorization": f"Bearer {OPERATOR}"})
        assert operator.status_code == 200 and "openenv_" in operator.text


def _read_response(stream: BinaryIO) -> bytes:
    """One HTTP/1.1 response with a Content-Length body, read off a raw socket's buffered
    stream; bytes of a following pipelined response stay in the buffer for the next call."""
    head = b""
    while not head.endswith(b"\r\n\r\n"):
        line = stream.readline()
        if not line:
            return head
        head += line
    length = next(
        int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")
    )
    return head + stream.read(length)


@pytest.mark.parametrize("body_size", [32, 300_000])
def test_a_refusal_keeps_the_connection_usable_when_the_body_comes_late(locked_server, body_size) -> None:
    """SEC-TOKEN-1 on a keep-alive connection whose request body arrives after its headers: a
    small body is read and dropped before the refusal, so the next request on the connection is
    served; a large one is not waited for: the refusal says ``Connection: close``."""
    host, port = locked_server.url.removeprefix("http://").split(":")
    body = b'{"action": {"message": "' + b"x" * (body_size - 27) + b'"}}'
    with socket.create_connection((host, int(port)), timeout=TIMEOUT) as sock, sock.makefile("rb") as stream:
        sock.sendall(
            b"POST /step HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n"
        )
        if body_size > 65536:
            refused = _read_response(stream)
            assert refused.startswith(b"HTTP/1.1 401")
            assert b"connection: close" in refused.lower()
            return
        time.sleep(0.2)  # the body comes late: the guard must not answer before reading it
        sock.sendall(body + b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        time.sleep(0.2)  # both answers are in flight before the first is read: the reader must keep them apart
        assert _read_response(stream).startswith(b"HTTP/1.1 401")
        assert _read_response(stream).startswith(b"HTTP/1.1 200")


@pytest.mark.parametrize(
    ("presented", "role"),
    [(None, None), (OPERATOR, "operator"), (AGENT, "agent"), ("not-a-token-of-this-server", None)],
)
def test_access_says_what_a_token_grants_without_refusing(locked_server, presented, role) -> None:
    """SEC-TOKEN-2: a page learns whether it needs a token, and what its token grants, with
    no 401/403 (a browser logs every refused request as an error)."""
    headers = {"Authorization": f"Bearer {presented}"} if presented else {}
    with httpx.Client(base_url=locked_server.url, timeout=TIMEOUT, trust_env=False) as http:
        answer = http.get("/access", headers=headers)
    assert answer.status_code == 200
    assert answer.json() == {"tokens_required": True, "role": role}


def test_access_without_tokens_grants_everyone_the_operator_role(open_server) -> None:
    with httpx.Client(base_url=open_server.url, timeout=TIMEOUT, trust_env=False) as http:
        assert http.get("/access").json() == {"tokens_required": False, "role": "operator"}
        assert http.get("/access", headers={"Origin": FOREIGN}).status_code == 403  # SEC-ORIGIN-1 still holds
