"""WS-DRAIN-1 as clients see it: while one server drains, EnvPool places new sessions on
the other one (the draining server closes them with 1013), on both anyio backends."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import trio
from websockets.sync.client import connect

from openenv_anyio.client import EnvPool
from openenv_anyio.server import EnvServer, ServerConfig

from .gated_env import GatedEnv
from .test_drain import start_gated_step, wait_until

TIMEOUT = 20.0


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def draining_and_open(tmp_path: Path) -> Iterator[tuple[str, str]]:
    """Two servers; the first drains (a step held in flight keeps it draining)."""
    config = ServerConfig(port=0, drain_timeout_s=60.0, shutdown_grace_s=2.0)
    with contextlib.ExitStack() as stack:
        draining = stack.enter_context(EnvServer(GatedEnv, config).run_in_thread())
        healthy = stack.enter_context(EnvServer(GatedEnv, config).run_in_thread())
        busy = stack.enter_context(connect(draining.ws_url, open_timeout=TIMEOUT))
        gate, _ = start_gated_step(busy, tmp_path)
        stack.callback(gate.touch)  # runs first: the step ends, the drain completes
        trio.from_thread.run_sync(draining.server.shutdown, trio_token=draining.token)
        wait_until(lambda: httpx.get(draining.url + "/ready", timeout=10).status_code == 503)
        yield draining.url, healthy.url
        gate.touch()
        assert json.loads(busy.recv(timeout=TIMEOUT))["type"] == "observation"  # the step in flight finished


@pytest.mark.anyio
async def test_pool_goes_to_the_server_that_is_not_draining(draining_and_open: tuple[str, str]) -> None:
    draining, healthy = draining_and_open
    async with EnvPool([draining, healthy], ping_interval_s=None) as pool:
        async with pool.session() as env:
            result = await env.step({})
            assert result.observation == {"steps": 1}
            assert pool.loads() == {draining: 0, healthy: 1}
