"""Resume tests: real servers on loopback, a cutting proxy between client and server, both
anyio backends for the client.

The server and the proxy run on threads of their own and are started and stopped by sync
fixtures (their shutdown blocks, which an async test on trio may not do).
``@pytest.mark.server_config(**fields)`` sets ServerConfig fields for one test.
"""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest

from openenv_anyio.server import EnvServer, ServerConfig
from openenv_anyio.server.env_server import RunningServer

from .cutting_proxy import CuttingProxy
from .envs import StepCounter, fresh_counter_class


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "server_config(**fields): ServerConfig fields for the resume tests' server")


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def counter() -> type[StepCounter]:
    """The environment class the server serves (its own list of instances)."""
    return fresh_counter_class()


@pytest.fixture
def server(request: pytest.FixtureRequest, counter: type[StepCounter]) -> Iterator[RunningServer]:
    """Our server (no pings: the proxy's cuts are the only failures) on a free port."""
    marker = request.node.get_closest_marker("server_config")
    settings = {"ping_interval_s": None, "ping_timeout_s": None, "validate_outbound": True}
    settings.update(marker.kwargs if marker else {})
    with EnvServer(counter, ServerConfig(**settings)).run_in_thread() as running:
        yield running


@pytest.fixture
def proxy(server: RunningServer) -> Iterator[CuttingProxy]:
    """A cutting proxy in front of ``server`` (no cuts until the test sets a plan and arms it)."""
    parts = urlsplit(server.url)
    cutting = CuttingProxy((parts.hostname or "127.0.0.1", parts.port or 80))
    with cutting.running() as url:
        cutting.url = url
        yield cutting
