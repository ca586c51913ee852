"""Protocol-free pieces: the bare ASGI echo servers and a raw WebSocket client.

The raw client (the ``websockets`` library on asyncio) sends pre-encoded frames and reads the
answer without decoding it, so pointed at the echo servers or at a full env server it
measures server cost alone: the difference is the server's protocol work.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from bench import sessions
from bench.procs import ServerProcess
from bench.procs import start_server as _start

NAME = "raw"
BACKEND = "asyncio"
ECHO_SERVERS = ("echo-hypercorn", "echo-uvicorn")

_RESET = json.dumps({"type": "reset", "data": {"seed": 1}})
_STEP = json.dumps({"type": "step", "data": sessions.ACTION})


def start_server(kind: str, *, wait: bool = True) -> ServerProcess:
    """``kind`` is ``echo-hypercorn`` (trio worker) or ``echo-uvicorn``."""
    if kind not in ECHO_SERVERS:
        raise ValueError(f"unknown echo server {kind!r}")
    return _start(kind, [kind], wait=wait)


class RawSession:
    """Sends a fixed reset/step frame and waits for one frame back (not decoded)."""

    def __init__(self, ws: Any) -> None:
        self._ws = ws

    async def reset(self, **_: Any) -> None:
        await self._ws.send(_RESET)
        await self._ws.recv()

    async def step(self, action: dict[str, Any]) -> None:
        await self._ws.send(_STEP)
        await self._ws.recv()


@asynccontextmanager
async def open_session(url: str) -> AsyncIterator[RawSession]:
    from websockets.asyncio.client import connect

    async with connect(url.replace("http://", "ws://", 1) + "/ws", max_size=None, ping_interval=None) as ws:
        yield RawSession(ws)


async def run_sessions(url: str, sessions_: int, steps: int, **kwargs: Any) -> sessions.RunResult:
    return await sessions.run_sessions(open_session, url, sessions_, steps, **kwargs)
