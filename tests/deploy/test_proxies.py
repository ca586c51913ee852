"""``deploy/`` HAProxy and nginx configs, run by the real engines in front of three servers
with a connection-cutting link before them: hundreds of sessions whose connections break
again and again, each resume sent by the proxy to the session's server (EXT-AFF-1), every
step count exact. Clients without the affinity header are still served and spread."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import anyio
import pytest
from resume.cutting_proxy import CutPlan, CuttingProxy
from resume.envs import StepCounter, fresh_counter_class
from websockets.sync.client import connect as plain_connect

from openenv_anyio.client import EnvClient
from openenv_anyio.server import EnvServer, ServerConfig

from .proxies import PROXIES

pytestmark = pytest.mark.anyio

SESSIONS = 200
STEPS = 8
TIMEOUT_S = 120


#: each proxy meets both client backends across the two tests (four runs, not eight)
CUTTING_RUNS = [("asyncio", "haproxy"), ("trio", "nginx")]
PLAIN_RUNS = [("trio", "haproxy"), ("asyncio", "nginx")]


class Fleet:
    def __init__(self, counters: list[type[StepCounter]], url: str, link: CuttingProxy) -> None:
        self.counters = counters
        self.url = url
        self.link = link


@pytest.fixture
def fleet(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Fleet]:
    """Three servers, the proxy from deploy/ in front, a cutting link in front of that."""
    counters = [fresh_counter_class() for _ in range(3)]
    config = ServerConfig(ping_interval_s=None, ping_timeout_s=None, validate_outbound=True)
    with (
        EnvServer(counters[0], config).run_in_thread() as one,
        EnvServer(counters[1], config).run_in_thread() as two,
        EnvServer(counters[2], config).run_in_thread() as three,
    ):
        servers = [urlsplit(running.url).netloc for running in (one, two, three)]
        with PROXIES[request.param](servers, tmp_path) as proxy_url:
            parts = urlsplit(proxy_url)
            link = CuttingProxy(
                (parts.hostname or "127.0.0.1", parts.port or 80), CutPlan(seed=11, data_rate=0.02, handshake_rate=0.02)
            )
            with link.running() as url:
                yield Fleet(counters, url, link)


@pytest.mark.parametrize(("anyio_backend", "fleet"), CUTTING_RUNS, indirect=["fleet"])
async def test_sessions_survive_a_cutting_link_through_the_proxy(fleet: Fleet) -> None:
    opened = 0
    all_open = anyio.Event()
    resumes = 0

    async def agent(index: int) -> None:
        nonlocal opened, resumes
        async with EnvClient(fleet.url, ping_interval_s=None) as env:
            await env.reset(episode_id=f"episode-{index}")
            opened += 1
            if opened == SESSIONS:  # cuts start once every session exists
                fleet.link.plan.active = True
                all_open.set()
            await all_open.wait()
            for number in range(1, STEPS + 1):
                assert (await env.step({"n": number})).observation == {"steps": number, "echo": number}
            state = await env.state()
            assert (state.episode_id, state.step_count) == (f"episode-{index}", STEPS)
            resumes += env.resumes

    with anyio.fail_after(TIMEOUT_S):
        async with anyio.create_task_group() as group:
            for index in range(SESSIONS):
                group.start_soon(agent, index)
    instances = [counter.instances for counter in fleet.counters]
    assert sum(map(len, instances)) == SESSIONS  # no resume ever made a new session
    assert all(instances), "every server holds sessions"
    assert sum(env.steps for group in instances for env in group) == SESSIONS * STEPS  # each step ran once
    assert resumes >= 20, fleet.link.cuts


@pytest.mark.parametrize(("anyio_backend", "fleet"), PLAIN_RUNS, indirect=["fleet"])
async def test_clients_without_the_header_are_served_and_spread(fleet: Fleet) -> None:
    """An upstream-style client (no OpenEnv-Affinity) is placed by the proxy's fallback."""

    def one_session() -> None:
        with plain_connect(fleet.url.replace("http", "ws", 1) + "/ws", open_timeout=10) as ws:
            ws.send(json.dumps({"type": "reset", "data": {}}))
            assert json.loads(ws.recv(timeout=10))["type"] == "observation"
            ws.send(json.dumps({"type": "step", "data": {"n": 1}}))
            assert json.loads(ws.recv(timeout=10))["data"]["observation"] == {"steps": 1, "echo": 1}

    with anyio.fail_after(TIMEOUT_S):
        for _ in range(12):
            await anyio.to_thread.run_sync(one_session)
    assert sum(1 for counter in fleet.counters if counter.instances) >= 2
