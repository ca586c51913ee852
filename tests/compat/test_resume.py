"""The consumers' sequences through a proxy that cuts connections, on our server: resume and
exactly-once steps hold in every calling mode, so the server ran exactly the steps sent."""

from __future__ import annotations

import asyncio
import threading

import anyio
import pytest

from openenv_anyio.client import ConnectionDropped
from openenv_anyio.compat import SyncEnvClient
from tests.resume.cutting_proxy import CutPlan, CuttingProxy

from .envs import TinyEcho
from .typed_clients import TinyAction, TinyEnv

STEPS = 30
TIMEOUT_S = 60


def arm(proxy: CuttingProxy, seed: int) -> None:
    proxy.plan = CutPlan(seed=seed, data_rate=0.08, handshake_rate=0.2)
    proxy.plan.active = True


def cut_from_another_thread(proxy: CuttingProxy) -> None:
    worker = threading.Thread(target=proxy.cut_all)
    worker.start()
    worker.join(TIMEOUT_S)


def executed(counting: type[TinyEcho]) -> list[int]:
    return [env.steps for env in counting.instances]


def test_blocking_calls_resume(proxy: CuttingProxy, counting: type[TinyEcho]) -> None:
    """TRL / SkyRL: blocking reset and steps; random cuts plus a cut between every fifth step."""
    env = TinyEnv(base_url=proxy.url, websocket_ping_interval_s=None)
    env.reset(episode_id="blocking")
    arm(proxy, seed=1)
    for turn in range(STEPS):
        if turn % 5 == 4:
            proxy.cut_all()
        assert env.step(TinyAction(message=f"t{turn}")).observation.echoed_message == f"t{turn}"
    state = env.state()
    env.close()
    assert (state.episode_id, state.step_count) == ("blocking", STEPS)
    assert executed(counting) == [STEPS] and sum(proxy.cuts.values()) > 0
    assert env.native is None


def test_sync_env_client_resumes(proxy: CuttingProxy, counting: type[TinyEcho]) -> None:
    """AgileRL: upstream's SyncEnvClient shape."""
    with SyncEnvClient(TinyEnv(base_url=proxy.url, websocket_ping_interval_s=None)) as env:
        env.reset()
        arm(proxy, seed=2)
        for turn in range(STEPS):
            env.step(TinyAction(message=f"s{turn}"))
        assert env.state().step_count == STEPS
    assert executed(counting) == [STEPS]


def test_worker_threads_resume(proxy: CuttingProxy, counting: type[TinyEcho]) -> None:
    """ART: every call through asyncio.to_thread."""

    async def main() -> int:
        env = TinyEnv(base_url=proxy.url, websocket_ping_interval_s=None)
        await asyncio.to_thread(env.reset)
        arm(proxy, seed=3)
        for turn in range(STEPS):
            if turn % 7 == 6:
                await asyncio.to_thread(proxy.cut_all)
            await asyncio.to_thread(env.step, TinyAction(message=f"a{turn}"))
        steps = (await asyncio.to_thread(env.state)).step_count
        await asyncio.to_thread(env.close)
        return int(steps)

    assert asyncio.run(asyncio.wait_for(main(), TIMEOUT_S)) == STEPS
    assert executed(counting) == [STEPS]


@pytest.mark.anyio
async def test_awaited_calls_resume(proxy: CuttingProxy, counting: type[TinyEcho]) -> None:
    """AReaL: async with, awaited calls, a client per episode; both backends."""
    with anyio.fail_after(TIMEOUT_S):
        for episode in range(2):
            async with TinyEnv(base_url=proxy.url, websocket_ping_interval_s=None) as env:
                await env.reset(episode_id=f"e{episode}")
                arm(proxy, seed=10 + episode)
                for turn in range(STEPS):
                    if turn % 6 == 5:
                        await anyio.to_thread.run_sync(proxy.cut_all)
                    await env.step(TinyAction(message=f"e{episode}t{turn}"))
                assert (await env.state()).step_count == STEPS
                assert env.native is not None and env.native.resumes > 0
                proxy.plan.active = False  # a new client's first connection is not resumable
    assert executed(counting) == [STEPS, STEPS]


@pytest.mark.anyio
async def test_touched_results_resume(proxy: CuttingProxy, counting: type[TinyEcho]) -> None:
    """torchforge: calls not awaited inside a coroutine, resolved when touched."""
    env = TinyEnv(base_url=proxy.url, websocket_ping_interval_s=None)
    assert env.reset().observation.message_length == 0
    arm(proxy, seed=4)
    for turn in range(STEPS):
        if turn % 5 == 4:
            cut_from_another_thread(proxy)  # this mode blocks the loop's thread anyway
        assert env.step(TinyAction(message=f"f{turn}")).observation.echoed_message == f"f{turn}"
    assert env.state().step_count == STEPS
    env.close()
    assert executed(counting) == [STEPS]


def test_after_a_lost_session_step_raises_and_reset_starts_over(proxy: CuttingProxy, counting: type[TinyEcho]) -> None:
    """Without resume (upstream's server, or reconnect=False) a cut loses the session: a step
    then raises (upstream would land it on a fresh session), a reset opens a new one."""
    env = TinyEnv(base_url=proxy.url, websocket_ping_interval_s=None, reconnect=False)
    env.reset(episode_id="first")
    env.step(TinyAction(message="one"))
    proxy.cut_all()
    with pytest.raises(ConnectionError):
        env.step(TinyAction(message="lost"))
    with pytest.raises(ConnectionDropped):
        env.state()
    assert env.reset(episode_id="second").observation.message_length == 0
    env.step(TinyAction(message="two"))
    state = env.state()
    env.close()
    assert (state.episode_id, state.step_count) == ("second", 1)
    assert executed(counting) == [1, 1]
