"""The real openenv-core 0.3 client (``GenericEnvClient``) against our server."""

from __future__ import annotations

import asyncio

import pytest

from openenv_anyio.envs.echo import EchoEnv
from openenv_anyio.envs.guess import GuessNumberEnv

from .conftest import running, wait_for

generic_client = pytest.importorskip("openenv.core.generic_client", reason="openenv-core (interop extra) not installed")
GenericEnvClient = generic_client.GenericEnvClient


@pytest.fixture(scope="module")
def echo_url():
    with running(EchoEnv) as server:
        yield server.url


def test_sync_client_episode(echo_url) -> None:
    with GenericEnvClient(base_url=echo_url).sync() as env:
        result = env.reset(seed=1)
        assert result.observation == {"echoed": "", "length": 0, "pad": ""}
        assert result.reward == 0.0 and result.done is False
        result = env.step({"message": "hello"})
        assert result.observation["echoed"] == "hello" and result.reward == 5.0
        assert env.state()["step_count"] == 1
        env.reset(episode_id="ep-7")
        assert env.state() == {"episode_id": "ep-7", "step_count": 0}


def test_async_client_episode(echo_url) -> None:
    async def episode() -> None:
        async with GenericEnvClient(base_url=echo_url) as env:
            await env.reset()
            for word in ("a", "bb", "ccc"):
                result = await env.step({"message": word})
                assert result.reward == float(len(word))
            assert (await env.state())["step_count"] == 3

    asyncio.run(asyncio.wait_for(episode(), 20))


def test_client_sees_server_errors_as_runtime_error(echo_url) -> None:
    """WS-ERR-8: error frames surface in the real client as RuntimeError with the code."""
    with GenericEnvClient(base_url=echo_url).sync() as env:
        env.reset()
        with pytest.raises(RuntimeError, match="VALIDATION_ERROR"):
            env.step({"nope": 1})
        assert env.step({"message": "ok"}).reward == 2.0


def test_guess_number_game_with_the_real_client() -> None:
    """The built-in example: binary search always wins within 7 guesses on 1..100."""
    with running(GuessNumberEnv) as server, GenericEnvClient(base_url=server.url).sync() as env:
        for seed in range(3):
            result = env.reset(seed=seed)
            low, high = result.observation["low"], result.observation["high"]
            while not result.done:
                guess = (low + high) // 2
                result = env.step({"guess": guess})
                if result.observation["hint"] == "higher":
                    low = guess + 1
                elif result.observation["hint"] == "lower":
                    high = guess - 1
            assert result.observation["hint"] == "correct" and result.reward == 1.0
            state = env.state()
            assert state["solved"] is True and state["step_count"] <= 7


def test_many_client_closes_never_break_the_server() -> None:
    """The real client sends ``close`` and closes the socket at once: both ends close
    together. 300 such sessions leave the server up with nothing behind (WS-CLOSE-2)."""
    with running(EchoEnv) as server:

        async def cycles() -> None:
            for _ in range(300):
                async with GenericEnvClient(base_url=server.url) as env:
                    await env.reset()

        asyncio.run(asyncio.wait_for(cycles(), 120))
        wait_for(lambda: server.stats() == {"active_sessions": 0, "live_envs": 0, "connections": 0})


def test_real_client_over_capacity_sees_capacity_reached() -> None:
    """WS-CAP-1 as the reference client experiences it: the CAPACITY_REACHED frame if it reads
    before the close arrives, else the close with 1013 (it only reads when it sends a request)."""
    with running(EchoEnv, max_concurrent_envs=1) as server:
        with GenericEnvClient(base_url=server.url).sync() as first:
            first.reset()
            with GenericEnvClient(base_url=server.url).sync() as second:
                with pytest.raises(Exception) as refused:
                    second.reset()
                assert "CAPACITY_REACHED" in str(refused.value) or "1013" in str(refused.value)
            assert first.step({"message": "still here"}).reward == 10.0
