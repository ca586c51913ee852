"""Graceful drain (WS-DRAIN-1, HTTP-6) with real signals on a real ``openenv-anyio serve``."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import httpx
import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from serve_process import serve_process

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
