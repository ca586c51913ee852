"""The client's side of the resume extension, on both anyio backends: what a caller sees
when a connection breaks and resuming works, is off, or is impossible."""

from __future__ import annotations

import anyio
import pytest
from client.servers import real_openenv_server

from openenv_anyio.client import (
    ConnectionDropped,
    ConnectionLost,
    EnvClient,
    ReconnectPolicy,
    ResumeFailed,
    SessionNotFound,
)
from openenv_anyio.server.env_server import RunningServer

from .cutting_proxy import CuttingProxy
from .envs import StepCounter

pytestmark = pytest.mark.anyio

TIMEOUT_S = 20


async def test_a_break_between_requests_is_resumed(proxy: CuttingProxy, counter: type[StepCounter]) -> None:
    """EXT-RES-1: an idle connection cut between requests: the next request resumes it."""
    with anyio.fail_after(TIMEOUT_S):
        async with EnvClient(proxy.url, ping_interval_s=None) as env:
            await env.reset(episode_id="one")
            await env.step({"n": 1})
            await anyio.to_thread.run_sync(proxy.cut_all)
            assert (await env.step({"n": 2})).observation["steps"] == 2
            assert env.resumes == 1 and (await env.state()).episode_id == "one"
    assert len(counter.instances) == 1


async def test_reconnect_false_offers_no_extension(proxy: CuttingProxy) -> None:
    """EXT-NEG-1: without reconnect (and pin_episode) the client speaks the base protocol:
    a cut connection is lost, as before."""
    with anyio.fail_after(TIMEOUT_S):
        async with EnvClient(proxy.url, ping_interval_s=None, reconnect=False) as env:
            assert env.session is None
            await env.reset()
            await anyio.to_thread.run_sync(proxy.cut_all)
            with pytest.raises(ConnectionLost):
                await env.step({"n": 1})
            with pytest.raises(ConnectionDropped):
                await env.step({"n": 1})


@pytest.mark.server_config(resume_grace_s=0.2)
async def test_an_expired_session_raises_session_not_found(proxy: CuttingProxy, counter: type[StepCounter]) -> None:
    """EXT-RES-4: after the grace period the caller gets SessionNotFound, never a fresh episode."""
    with anyio.fail_after(TIMEOUT_S):
        async with EnvClient(proxy.url, ping_interval_s=None) as env:
            await env.reset()
            await anyio.to_thread.run_sync(proxy.cut_all)
            await anyio.sleep(0.5)
            with pytest.raises(SessionNotFound):
                await env.step({"n": 1})
            with pytest.raises(ConnectionDropped):
                await env.step({"n": 1})
    assert len(counter.instances) == 1 and counter.instances[0].steps == 0


async def test_an_unreachable_server_raises_resume_failed(proxy: CuttingProxy) -> None:
    """The reconnect policy's attempts all fail: ResumeFailed says so and keeps the cause."""
    policy = ReconnectPolicy(attempts=3, backoff_s=0.01, max_backoff_s=0.02)
    with anyio.fail_after(TIMEOUT_S):
        async with EnvClient(proxy.url, ping_interval_s=None, reconnect=policy) as env:
            await env.reset()
            proxy.refuse()
            await anyio.to_thread.run_sync(proxy.cut_all)
            with pytest.raises(ResumeFailed) as failed:
                await env.step({"n": 1})
    assert "3 attempt(s)" in str(failed.value) and failed.value.cause is not None


async def test_a_half_open_connection_is_taken_over(proxy: CuttingProxy, counter: type[StepCounter]) -> None:
    """EXT-RES-5: the path goes silent (no close, no reset): the client's keep-alive notices,
    it resumes on a new connection, and the server hands the session over."""
    with anyio.fail_after(TIMEOUT_S):
        async with EnvClient(proxy.url, ping_interval_s=0.1, ping_timeout_s=0.3) as env:
            await env.reset()
            await env.step({"n": 1})
            await anyio.to_thread.run_sync(proxy.freeze)
            assert (await env.step({"n": 2})).observation["steps"] == 2
            assert env.resumes == 1
    assert len(counter.instances) == 1


async def test_pin_episode_sends_the_episode_of_the_last_reset(proxy: CuttingProxy) -> None:
    """EXT-EP-1, EXT-EP-2: the reset's answer names the episode; pinned steps are accepted."""
    with anyio.fail_after(TIMEOUT_S):
        async with EnvClient(proxy.url, ping_interval_s=None, pin_episode=True) as env:
            await env.reset(episode_id="pinned")
            assert env.episode_id == "pinned"
            assert (await env.step({"n": 1})).observation["steps"] == 1
            await env.reset(episode_id="next")
            assert env.episode_id == "next"
            assert (await env.step({"n": 1})).observation["steps"] == 1


async def test_against_openenv_core_the_client_speaks_the_base_protocol() -> None:
    """EXT-NEG-1: openenv-core selects no subprotocol: no session, everything as before."""
    with real_openenv_server() as url:
        with anyio.fail_after(TIMEOUT_S):
            async with EnvClient(url, pin_episode=True) as env:
                assert env.session is None
                await env.reset(episode_id="core")
                assert (await env.step({"message": "hi"})).observation["echoed"] == "hi"
                assert (await env.state()).episode_id == "core"


async def test_close_after_a_break_ends_the_session_at_once(proxy: CuttingProxy, server: RunningServer) -> None:
    """EXT-RES-2: close on a connection that broke while idle resumes it to deliver close,
    so the server frees the session now instead of after its grace period (60 s here)."""
    with anyio.fail_after(TIMEOUT_S):
        async with EnvClient(proxy.url, ping_interval_s=None) as env:
            await env.reset()
            await anyio.to_thread.run_sync(proxy.cut_all)
            await anyio.sleep(0.05)  # the client's reader notices the break
        while (await anyio.to_thread.run_sync(server.stats))["active_sessions"]:
            await anyio.sleep(0.02)
