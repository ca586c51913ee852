"""The session stores run against real backends: a SQLite file in a temporary folder and a
real ``redis-server`` on loopback, on both anyio backends."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from .redis_server import RedisServer, redis_server


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def redis(tmp_path: Path) -> Iterator[RedisServer]:
    """A ``redis-server`` of this test's own."""
    with redis_server(tmp_path) as server:
        yield server


@pytest.fixture(params=["sqlite", "redis"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """The URL of an empty store of each kind."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'sessions.db'}"
    else:
        with redis_server(tmp_path) as server:
            yield server.url(3)
