"""The resume extension with process isolation (SRV-ISO-1, EXT-RES-*): a session whose
environment runs in its own process survives a dropped connection like any other, on both
anyio backends; once its process has died, the session cannot be resumed (4410)."""

from __future__ import annotations

from collections.abc import Iterator

import anyio
import pytest

from openenv_anyio.client import ConnectionClosedByServer, EnvClient, EnvExecutionError
from openenv_anyio.server import EnvServer, ServerConfig
from openenv_anyio.server.env_server import RunningServer
from openenv_anyio.server.isolation import ProcessIsolated

from .cutting_proxy import CuttingProxy

pytestmark = pytest.mark.anyio

TIMEOUT_S = 60


@pytest.fixture
def server() -> Iterator[RunningServer]:
    """The resume tests' server (behind their cutting ``proxy``), with process isolation."""
    config = ServerConfig(isolate="process", ping_interval_s=None, ping_timeout_s=None, validate_outbound=True)
    with EnvServer(ProcessIsolated("server.isolated_envs:Crashing"), config).run_in_thread() as running:
        yield running


async def test_an_isolated_session_is_resumed_with_its_process(proxy: CuttingProxy) -> None:
    """EXT-RES-1: the connection is cut between steps; the resumed session steps on in the
    same process, no step lost or doubled."""
    with anyio.fail_after(TIMEOUT_S):
        async with EnvClient(proxy.url, ping_interval_s=None) as env:
            pid = (await env.reset(episode_id="kept")).observation["pid"]
            await env.step({})
            await anyio.to_thread.run_sync(proxy.cut_all)
            result = await env.step({})
            assert result.observation == {"steps": 2, "pid": pid}
            assert env.resumes == 1
            state = await env.state()
            assert state.episode_id == "kept" and state.step_count == 2


async def test_a_dead_process_ends_the_session_for_good(proxy: CuttingProxy) -> None:
    """SRV-ISO-2: after the crash the client is told once (EnvExecutionError), then the
    connection is closed with 4410, which the client does not try to resume."""
    with anyio.fail_after(TIMEOUT_S):
        async with EnvClient(proxy.url, ping_interval_s=None) as env:
            await env.reset()
            with pytest.raises(EnvExecutionError, match="killed by SIGSEGV"):
                await env.step({"crash": "segfault"})
            with pytest.raises(ConnectionClosedByServer) as closed:
                await env.step({})
            assert closed.value.code == 4410
            assert env.resumes == 0
