"""A session's capacity slot is free before its closing handshake completes (``WS-CAP-2``).

A training loop that opens one client per episode against a one-session server must never
be refused because the previous episode's session is still being torn down. The env here
takes a while to close (a thread-backed env whose ``close`` waits), which is what made the
slot come free only after the client had already seen the close complete.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any, ClassVar

import anyio
import pytest
from websockets.exceptions import ConnectionClosed

from openenv_anyio import EnvClient
from openenv_anyio.environment import Environment

from .conftest import TIMEOUT, ask, running, ws_connect

CYCLES = 20


class SlowToClose(Environment):
    """Thread-backed; ``close`` keeps its worker thread busy for a while (a real env
    releasing a simulator, a browser, a GPU)."""

    closing_s: ClassVar[float] = 0.05
    closed: ClassVar[int] = 0
    lock: ClassVar[threading.Lock] = threading.Lock()

    def reset(self, **kwargs: Any) -> dict[str, Any]:
        return {"ready": True}

    def step(self, action: dict[str, Any]) -> dict[str, Any]:
        return {"ready": True, "reward": 1.0, "done": True}

    @property
    def state(self) -> dict[str, Any]:
        return {"step_count": 0}

    def close(self) -> None:
        time.sleep(self.closing_s)
        with SlowToClose.lock:
            SlowToClose.closed += 1


def _reset(ws: Any) -> dict[str, Any]:
    """The answer to a reset, or what refused the session (its error frame or close)."""
    try:
        return ask(ws, {"type": "reset"})
    except ConnectionClosed as closed:
        return {"type": "error", "closed": str(closed)}


def _first_frame_after_connect(server: Any) -> dict[str, Any]:
    with ws_connect(server) as ws:
        answer = _reset(ws)
        if answer["type"] == "error":
            return answer
        ws.send(json.dumps({"type": "close"}))
        with pytest.raises(ConnectionClosed):
            ws.recv(timeout=TIMEOUT)
    return answer


def test_back_to_back_sessions_after_a_close_frame_are_never_refused() -> None:
    """``close`` then connect again at once: the slot was freed before the server's close frame."""
    with running(SlowToClose, max_concurrent_envs=1) as server:
        answers = [_first_frame_after_connect(server) for _ in range(CYCLES)]
    refused = [a for a in answers if a["type"] == "error"]
    assert refused == [], f"{len(refused)}/{CYCLES} sessions refused: {refused[:1]}"


def test_back_to_back_sessions_after_a_websocket_close_are_never_refused() -> None:
    """The client closes the WebSocket (1000, no ``close`` frame): the slot is freed before
    the server answers the close."""
    answers = []
    with running(SlowToClose, max_concurrent_envs=1) as server:
        for _ in range(CYCLES):
            with ws_connect(server) as ws:
                answers.append(_reset(ws))
            # leaving the block ran the closing handshake to its end
    refused = [a for a in answers if a["type"] == "error"]
    assert refused == [], f"{len(refused)}/{CYCLES} sessions refused: {refused[:1]}"


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_one_client_per_episode_on_a_one_session_server(backend: str) -> None:
    """The training-loop shape: ``async with EnvClient(url)`` per episode, back to back."""

    async def episodes(url: str) -> int:
        done = 0
        for _ in range(CYCLES):
            async with EnvClient(url) as env:
                await env.reset()
                done += (await env.step({})).done
        return done

    with running(SlowToClose, max_concurrent_envs=1) as server:
        assert anyio.run(episodes, server.url, backend=backend) == CYCLES
