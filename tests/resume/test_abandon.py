"""A client that gives up on its session (a request timed out or was cancelled) says so:
it closes the WebSocket with 1001, so the server frees the session at once instead of
keeping it for the resume grace period (EXT-RES-2)."""

from __future__ import annotations

from collections.abc import Iterator

import anyio
import pytest

from openenv_anyio.client import CapacityReached, ConnectionDropped, EnvClient, MessageTimeout
from openenv_anyio.server import EnvServer, ServerConfig
from openenv_anyio.server.env_server import RunningServer

from .envs import SlowStepper

pytestmark = pytest.mark.anyio

TIMEOUT_S = 20
SLOW_STEP = {"sleep": 0.5}


@pytest.fixture
def one_slot() -> Iterator[RunningServer]:
    """One session at most, kept 60 s after a connection drops (far beyond this test)."""
    config = ServerConfig(max_concurrent_envs=1, resume_grace_s=60.0, ping_interval_s=None, ping_timeout_s=None)
    with EnvServer(SlowStepper, config).run_in_thread() as running:
        yield running


async def _a_new_session_gets_the_slot(url: str) -> None:
    """The single slot comes free once the abandoned step has ended (not after 60 s)."""
    while True:
        try:
            async with EnvClient(url) as env:
                await env.reset()
                return
        except CapacityReached:
            await anyio.sleep(0.05)


async def test_message_timeout_gives_the_session_up(one_slot: RunningServer) -> None:
    with anyio.fail_after(TIMEOUT_S):
        async with EnvClient(one_slot.url, message_timeout_s=0.05) as env:
            await env.reset()
            with pytest.raises(MessageTimeout):
                await env.step(SLOW_STEP)
            with pytest.raises(ConnectionDropped):
                await env.step({})
        await _a_new_session_gets_the_slot(one_slot.url)


async def test_cancelled_request_gives_the_session_up(one_slot: RunningServer) -> None:
    with anyio.fail_after(TIMEOUT_S):
        async with EnvClient(one_slot.url) as env:
            await env.reset()
            with anyio.move_on_after(0.05):
                await env.step(SLOW_STEP)
            with pytest.raises(ConnectionDropped):
                await env.step({})
        await _a_new_session_gets_the_slot(one_slot.url)
