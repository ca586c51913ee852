"""Two servers on one Redis store behind HAProxy (``deploy/haproxy/haproxy.cfg`` as it is):
SIGTERM one, and its sessions come back on the other through the same address, each step
run exactly once."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

import anyio
import pytest
from deploy.proxies import haproxy
from ops.scrape import scrape
from serve_process import serve_process
from session_store.redis_server import redis_server

from .episodes import episodes, step_all

pytestmark = pytest.mark.anyio

TARGET = "handover.envs:SnapTally"


async def test_a_stopped_servers_sessions_come_back_on_the_other(tmp_path: Path) -> None:
    with redis_server(tmp_path) as redis:
        args = ("--session-store", redis.url(1), "--ping-interval", "0")
        with serve_process(TARGET, *args) as one, serve_process(TARGET, *args) as two:
            addresses = [urlsplit(one.url).netloc, urlsplit(two.url).netloc]
            # the config names three servers: the second address twice
            with haproxy([*addresses, addresses[1]], tmp_path) as proxy_url:
                async with episodes(proxy_url, 16) as opened:
                    await step_all(opened, 20)
                    on_one = int(scrape(one.url).value("openenv_sessions_active"))
                    assert 0 < on_one < len(opened)  # the affinity hash spread them
                    async with anyio.create_task_group() as group:
                        group.start_soon(step_all, opened, 100)
                        assert await anyio.to_thread.run_sync(one.stop) == 0
                    for episode in opened:
                        assert episode.steps == 120
                        await episode.check_state()
                    assert sum(episode.client.resumes > 0 for episode in opened) == on_one
                    metrics = scrape(two.url)
                    assert metrics.value("openenv_sessions_imported_total", way="snapshot") == on_one
                    assert int(metrics.value("openenv_sessions_active")) == len(opened)
