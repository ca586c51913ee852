"""The listening socket queues enough pending connections for bursts of sessions."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from openenv_anyio.server.env_server import LISTEN_BACKLOG

from .envs import InlineTracked


def _listen_backlog(port: int) -> int:
    """The backlog of the socket listening on ``port``, as the kernel reports it (``ss``)."""
    out = subprocess.run(
        ["ss", "-Hltn", f"sport = :{port}"], capture_output=True, text=True, timeout=10, check=True
    ).stdout.split()
    return int(out[2])  # State Recv-Q Send-Q ...: Send-Q is the backlog of a listening socket


@pytest.mark.skipif(shutil.which("ss") is None, reason="needs iproute2's ss to read the listen backlog")
def test_listen_backlog_takes_thousands_of_pending_connections(serve) -> None:
    somaxconn = int(Path("/proc/sys/net/core/somaxconn").read_text())
    with serve(InlineTracked) as server:
        port = urlsplit(server.url).port
        assert port is not None
        assert _listen_backlog(port) == min(LISTEN_BACKLOG, somaxconn)
    assert LISTEN_BACKLOG >= 2048  # what uvicorn uses; Hypercorn's default is 100
