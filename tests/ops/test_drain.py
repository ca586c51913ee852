"""Graceful drain (WS-DRAIN-1, HTTP-6) with real signals on a real ``openenv-anyio serve``."""

from __future__ import annotations

import json
import signal
import socket
import time
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
from serve_process import serve_process
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

TIMEOUT = 20.0
TARGET = "tests.ops.gated_env:GatedEnv"


def wait_until(condition, timeout: float = TIMEOUT) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.02)


def ready_status(url: str) -> int:
    return httpx.get(url + "/ready", timeout=10).status_code


def closed_code(ws: ClientConnection) -> int | None:
    with pytest.raises(ConnectionClosed) as closed:
        ws.recv(timeout=TIMEOUT)
    return closed.value.rcvd.code if closed.value.rcvd is not None else None


def start_gated_step(ws: ClientConnection, tmp_path: Path) -> tuple[Path, Path]:
    gate, started = tmp_path / "gate", tmp_path / "started"
    ws.send(json.dumps({"type": "step", "data": {"gate": str(gate), "started": str(started)}}))
    wait_until(started.exists)  # the step is executing now
    return gate, started


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_drain_lets_the_step_in_flight_finish_and_refuses_newcomers(tmp_path: Path, signum: int) -> None:
    with serve_process(TARGET, "--drain-timeout", "60") as served:
        assert ready_status(served.url) == 200
        with connect(served.ws_url, open_timeout=TIMEOUT) as busy, connect(served.ws_url, open_timeout=TIMEOUT) as idle:
            idle.send(json.dumps({"type": "reset"}))
            assert json.loads(idle.recv(timeout=TIMEOUT))["type"] == "observation"
            gate, _ = start_gated_step(busy, tmp_path)
            served.process.send_signal(signum)
            wait_until(lambda: ready_status(served.url) == 503)
            assert httpx.get(served.url + "/ready", timeout=10).json() == {"status": "draining"}
            assert closed_code(idle) == 1001  # nothing in flight: ends at once
            with connect(served.ws_url, open_timeout=TIMEOUT) as newcomer:
                assert closed_code(newcomer) == 1013  # try another server
            gate.touch()
            answer = json.loads(busy.recv(timeout=TIMEOUT))
            assert answer["type"] == "observation" and answer["data"]["observation"]["steps"] == 1
            assert closed_code(busy) == 1001
        assert served.process.wait(timeout=60) == 0


def test_a_step_past_the_drain_timeout_is_abandoned_with_1001(tmp_path: Path) -> None:
    with serve_process(TARGET, "--drain-timeout", "0.2") as served:
        with connect(served.ws_url, open_timeout=TIMEOUT) as busy:
            gate, _ = start_gated_step(busy, tmp_path)
            served.process.send_signal(signal.SIGTERM)
            assert closed_code(busy) == 1001  # no answer: the step was abandoned
            gate.touch()  # the worker thread finishes, the environment closes
        assert served.process.wait(timeout=60) == 0


def test_ready_before_and_after_start() -> None:
    with serve_process("openenv_anyio.envs.echo:EchoEnv") as served:
        response = httpx.get(served.url + "/ready", timeout=10)
        assert response.status_code == 200 and response.json() == {"status": "ready"}
        assert httpx.get(served.url + "/health", timeout=10).json() == {"status": "healthy"}
        served.process.send_signal(signal.SIGTERM)
        assert served.process.wait(timeout=60) == 0


def test_an_attached_socket_arriving_while_draining_is_refused_with_1013(tmp_path: Path) -> None:
    """WS-DRAIN-1 holds for ``/ws?session_id=`` as for every ``/ws`` connection: a newcomer
    is told to try another server (1013), not that the server is gone (1001)."""
    with serve_process(TARGET, "--drain-timeout", "60") as served:
        created = httpx.post(
            served.url + "/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "openenv/session/create"}, timeout=10
        ).json()
        session_id = created["result"]["session_id"]
        with connect(served.ws_url, open_timeout=TIMEOUT) as busy:
            gate, _ = start_gated_step(busy, tmp_path)  # holds the drain open
            served.process.send_signal(signal.SIGTERM)
            wait_until(lambda: ready_status(served.url) == 503)
            with connect(f"{served.ws_url}?session_id={session_id}", open_timeout=TIMEOUT) as newcomer:
                assert closed_code(newcomer) == 1013
            gate.touch()
            assert json.loads(busy.recv(timeout=TIMEOUT))["type"] == "observation"
        assert served.process.wait(timeout=60) == 0


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_connection_that_never_spoke_does_not_hold_the_stop(workers: str) -> None:
    """It waits for its request outside Hypercorn (one process) or for the head its worker
    routes by (``--workers``): the stop ends that wait and closes it, instead of waiting out
    the 5 s the connection has to send its request."""
    with serve_process("openenv_anyio.envs.echo:EchoEnv", "--workers", workers) as served:
        port = urlsplit(served.url).port
        assert port is not None
        with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT) as silent:
            time.sleep(0.2)  # accepted, waiting for its first bytes
            stopping = time.monotonic()
            served.process.send_signal(signal.SIGTERM)
            assert served.process.wait(timeout=60) == 0
            stopped_in = time.monotonic() - stopping
            assert silent.recv(1) == b""  # closed, not reset
        assert stopped_in < 2.5, stopped_in  # half the 5 s its request still had
