"""A kept-alive HTTP connection whose request was answered before its body arrived (a 404
for an unknown route, a refusal) is closed, and its response says so: never left silent,
and a keep-alive client never sends its next request into it.

Hypercorn hands the application ``http.disconnect`` before it closes such a connection,
from within the application's own send; Quart-Trio cancels the request's tasks on that
event, which cancelled the close, and the connection then dropped every later byte without
an answer (``hypercorn_adapter.early_response``). Real server process, real sockets, real
httpx on loopback.
"""

from __future__ import annotations

import multiprocessing
import socket
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

import anyio
import httpx
import pytest
from serve_process import serve_process

ECHO = "openenv_anyio.envs.echo:EchoEnv"
POST_HEAD = b"POST /nope HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n"
GET_HEALTH = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
#: How long the load of :func:`cpu_load` runs at most, whatever happens to the test.
LOAD_LIMIT_S = 90.0


def _read_response(sock: socket.socket) -> str:
    """The status line of one response (its body read by Content-Length), or ``"closed"``."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            return "closed"
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            return "closed"
        body += chunk
    return head.split(b"\r\n", 1)[0].decode()


def _next_request_outcome(sock: socket.socket) -> str:
    """Send ``GET /health`` on ``sock``: its status line, ``"closed"``, or ``"silent"``."""
    try:
        sock.sendall(GET_HEALTH)
        return _read_response(sock)
    except TimeoutError:
        return "silent"
    except (ConnectionResetError, BrokenPipeError):
        return "closed"


def _burn(deadline: float) -> None:
    while time.monotonic() < deadline:
        sum(i * i for i in range(10_000))


@contextmanager
def cpu_load(processes: int = 3) -> Iterator[None]:
    """Busy processes for the block (each stops by itself after :data:`LOAD_LIMIT_S`)."""
    deadline = time.monotonic() + LOAD_LIMIT_S
    burners = [multiprocessing.Process(target=_burn, args=(deadline,), daemon=True) for _ in range(processes)]
    for burner in burners:
        burner.start()
    try:
        yield
    finally:
        for burner in burners:
            burner.terminate()
        for burner in burners:
            burner.join(10)


def test_a_body_arriving_after_the_404_does_not_silence_the_connection() -> None:
    with serve_process(ECHO, "--mode", "production") as served:
        for _ in range(3):
            with socket.create_connection(("127.0.0.1", served.port), timeout=5) as sock:
                sock.sendall(POST_HEAD)
                assert _read_response(sock).startswith("HTTP/1.1 404")  # answered before the body
                sock.sendall(b"{}")
                assert _next_request_outcome(sock) in ("HTTP/1.1 200 ", "closed")


def test_an_answer_before_the_body_says_connection_close() -> None:
    with serve_process(ECHO) as served:
        with socket.create_connection(("127.0.0.1", served.port), timeout=5) as sock:
            sock.sendall(POST_HEAD)
            head = b""
            while b"\r\n\r\n" not in head:
                head += sock.recv(65536)
            assert b"\r\nconnection: close\r\n" in head.lower()
        with httpx.Client(base_url=served.url, timeout=5) as client:  # a body read: kept alive
            response = client.post("/reset", json={})
            assert response.status_code == 200 and "close" not in response.headers.get("connection", "")


async def _alternate(url: str, requests: int) -> Counter[str]:
    outcomes: Counter[str] = Counter()
    async with httpx.AsyncClient(base_url=url, timeout=2.0) as client:
        for index in range(requests):
            try:
                if index % 2 == 0:
                    response = await client.post("/nope", json={})
                else:
                    response = await client.get("/health")
                outcomes[f"{response.request.method} {response.status_code}"] += 1
            except httpx.TimeoutException:
                outcomes["no answer within 2 s"] += 1
    return outcomes


@pytest.mark.parametrize("mode", ["production", "simulation"])
def test_one_keepalive_client_alternating_404s_and_health_under_cpu_load(mode: str) -> None:
    with serve_process(ECHO, "--mode", mode) as served, cpu_load():
        outcomes = anyio.run(_alternate, served.url, 120)
    assert outcomes == {"POST 404": 60, "GET 200": 60}
