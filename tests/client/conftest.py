"""Client tests run on both anyio backends against real servers on loopback."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .servers import SERVERS


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture(scope="module", params=sorted(SERVERS))
def server_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """Base URL of a running echo server: openenv-core's, and ours when it is built."""
    with SERVERS[request.param]() as url:
        yield url


@pytest.fixture(params=sorted(SERVERS))
def one_session_server_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """Base URL of an echo server that allows a single session (max_concurrent_envs=1)."""
    with SERVERS[request.param](max_concurrent_envs=1) as url:
        yield url


PING_TIMEOUT_S = 0.3


@pytest.fixture(params=sorted(SERVERS))
def pinging_server_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """Base URL of an echo server that pings every 0.1 s and drops a peer silent for 0.3 s."""
    with SERVERS[request.param](ping_interval_s=0.1, ping_timeout_s=PING_TIMEOUT_S) as url:
        yield url
