"""Fixtures: a real Hypercorn server on a loopback port, and small WebSocket helpers."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from websockets.sync.client import ClientConnection, connect

from openenv_anyio.core import decode_server_frame
from openenv_anyio.server import EnvServer, RunningServer, ServerConfig

TIMEOUT = 10.0


@contextlib.contextmanager
def running(factory: Callable[[], Any], **config: Any) -> Iterator[RunningServer]:
    """A server on 127.0.0.1:0 that checks every frame it sends against the spec."""
    config.setdefault("validate_outbound", True)
    config.setdefault("shutdown_grace_s", 2.0)
    with EnvServer(factory, ServerConfig(**config)).run_in_thread() as server:
        yield server


@pytest.fixture
def serve() -> Callable[..., contextlib.AbstractContextManager[RunningServer]]:
    return running


def ws_connect(server: RunningServer, path: str = "/ws", **kwargs: Any) -> ClientConnection:
    url = "ws" + server.url.removeprefix("http") + path
    return connect(url, open_timeout=TIMEOUT, close_timeout=TIMEOUT, **kwargs)


def ask(ws: ClientConnection, frame: Any) -> dict[str, Any]:
    """Send one frame (a dict is JSON-encoded, str/bytes sent as they are), return the answer,
    after checking it against the spec's server-frame schema."""
    ws.send(json.dumps(frame) if isinstance(frame, (dict, list)) else frame)
    text = ws.recv(timeout=TIMEOUT)
    assert isinstance(text, str), "servers send text frames only (WS-CONN-3)"
    decode_server_frame(text)
    return json.loads(text)


def wait_for(condition: Callable[[], bool], timeout: float = TIMEOUT) -> float:
    """Poll ``condition`` until true; return the seconds it took (fail after ``timeout``)."""
    start = time.monotonic()
    while not condition():
        if time.monotonic() - start > timeout:
            raise AssertionError(f"condition not met within {timeout} s")
        time.sleep(0.01)
    return time.monotonic() - start
