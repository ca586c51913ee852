"""Exactly-once steps through a proxy that cuts connections (EXT-RES-1, EXT-REQ-1).

The cuts land everywhere a connection can break: a request not yet delivered, a request
executed whose reply is not yet delivered, an idle connection between requests, and the
opening handshake (of a fresh or a resuming connection).
"""

from __future__ import annotations

import anyio
import pytest

from openenv_anyio.client import EnvClient, ReconnectPolicy

from .cutting_proxy import CutPlan, CuttingProxy
from .envs import StepCounter

pytestmark = pytest.mark.anyio

STEPS = 1000
IDLE_CUT_EVERY = 40


async def test_a_thousand_steps_through_fifty_cuts_run_exactly_once_in_order(
    counter: type[StepCounter], proxy: CuttingProxy
) -> None:
    """EXT-REQ-1: 1,000 steps with >= 50 cuts: the env's own counter ends at exactly 1,000,
    every result arrives once and in order, and the session is the one env instance."""
    plan = proxy.plan = CutPlan(seed=20261129, data_rate=0.03, handshake_rate=0.25)
    policy = ReconnectPolicy(attempts=5, backoff_s=0.01, max_backoff_s=0.1)
    url = proxy.url
    results: list[tuple[int, int]] = []
    with anyio.fail_after(90):
        async with EnvClient(url, ping_interval_s=None, message_timeout_s=10, reconnect=policy) as env:
            assert env.session is not None and not env.session.resumed
            await env.reset()
            plan.active = True
            for n in range(1, STEPS + 1):
                if n % IDLE_CUT_EVERY == 0:
                    await anyio.to_thread.run_sync(proxy.cut_all)
                result = await env.step({"n": n})
                results.append((result.observation["steps"], result.observation["echo"]))
            plan.active = False
            state = await env.state()
            resumes = env.resumes
    assert results == [(n, n) for n in range(1, STEPS + 1)]
    assert state.step_count == STEPS
    assert len(counter.instances) == 1 and counter.instances[0].steps == STEPS
    assert sum(proxy.cuts.values()) >= 50, proxy.cuts
    assert all(proxy.cuts[kind] >= 1 for kind in ("request", "reply", "idle", "handshake")), proxy.cuts
    assert resumes >= 50
