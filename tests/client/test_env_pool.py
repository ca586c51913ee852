"""``EnvPool``: many sessions over several real servers, on both backends: least-loaded
placement, a full server means "try the next", everything else surfaces."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import anyio
import pytest
from resume.envs import StepCounter, fresh_counter_class

from openenv_anyio.client import CapacityReached, ConnectError, EnvClient, EnvPool
from openenv_anyio.server import EnvServer, ServerConfig

pytestmark = pytest.mark.anyio

TIMEOUT_S = 30


@dataclass
class Served:
    url: str
    counter: type[StepCounter]


@pytest.fixture
def servers(request: pytest.FixtureRequest) -> Iterator[list[Served]]:
    """Two servers; the first holds at most 3 sessions, the second at most 5."""
    counters = [fresh_counter_class(), fresh_counter_class()]
    with (
        EnvServer(counters[0], ServerConfig(max_concurrent_envs=3)).run_in_thread() as first,
        EnvServer(counters[1], ServerConfig(max_concurrent_envs=5)).run_in_thread() as second,
    ):
        yield [Served(first.url, counters[0]), Served(second.url, counters[1])]


# with the resume extension (a session frame proves admission) and without (base protocol)
MODES = pytest.mark.parametrize("options", [{}, {"reconnect": False}], ids=["extension", "base"])


@MODES
async def test_sessions_fill_every_server_and_then_the_pool_says_full(
    servers: list[Served], options: dict[str, bool]
) -> None:
    opened = 0
    all_open, finish = anyio.Event(), anyio.Event()

    async def agent(env: EnvClient, index: int) -> None:
        nonlocal opened
        await env.reset()
        assert (await env.step({"n": index})).observation == {"steps": 1, "echo": index}
        opened += 1
        if opened == 8:
            all_open.set()
        await finish.wait()

    with anyio.fail_after(TIMEOUT_S):
        async with EnvPool([served.url for served in servers], ping_interval_s=None, **options) as pool:
            for index in range(8):
                pool.start_soon(agent, index)
            await all_open.wait()
            assert pool.loads() == {servers[0].url: 3, servers[1].url: 5}
            with pytest.raises(CapacityReached):  # both full: the refusal surfaces
                async with pool.session():
                    pass
            finish.set()
    assert [len(served.counter.instances) for served in servers] == [3, 5]


@MODES
async def test_a_new_session_goes_to_the_least_loaded_server(servers: list[Served], options: dict[str, bool]) -> None:
    urls = [served.url for served in servers]
    ws = [EnvClient(url).url for url in urls]
    with anyio.fail_after(TIMEOUT_S):
        async with EnvPool(urls, ping_interval_s=None, **options) as pool:
            async with pool.session() as a:
                async with pool.session() as b:
                    async with pool.session() as c:  # a tie: the server tried longest ago
                        assert [a.url, b.url, c.url] == [ws[0], ws[1], ws[0]]
                        assert pool.loads() == {urls[0]: 2, urls[1]: 1}
                async with pool.session() as d, pool.session() as e:  # b gone: 1 and 0 held
                    assert [d.url, e.url] == [ws[1], ws[0]]
            assert pool.loads() == dict.fromkeys(urls, 0)
    assert [len(served.counter.instances) for served in servers] == [3, 2]


async def test_anything_but_a_full_server_surfaces(servers: list[Served]) -> None:
    with socket_without_listener() as dead:
        with anyio.fail_after(TIMEOUT_S):
            async with EnvPool([dead, servers[0].url], ping_interval_s=None) as pool:
                with pytest.raises(ConnectError):  # never skipped for the next server
                    async with pool.session():
                        pass
                assert pool.loads() == {dead: 0, servers[0].url: 0}


def test_options_are_checked_when_the_pool_is_made() -> None:
    with pytest.raises(ValueError, match="connect_timeout_s must be a positive number"):
        EnvPool("http://127.0.0.1:1", connect_timeout_s=0)
    with pytest.raises(ValueError, match="at least one server URL"):
        EnvPool([])


class socket_without_listener:
    """A loopback URL whose port nobody listens on (bound, never listening: refused)."""

    def __enter__(self) -> str:
        import socket

        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def __exit__(self, *exc: object) -> None:
        self.sock.close()
