"""Bad input gets upstream's error (or a clearer one of ours that upstream's callers still
catch): mixed calling modes, calls after close(), actions the typed model rejects, errors
from the server."""

from __future__ import annotations

import threading

import anyio
import pytest
from pydantic import ValidationError

from openenv_anyio.client import ConnectError, NotConnected, ServerError
from openenv_anyio.compat import GenericEnvClient, MCPToolClient, ModeMixed

from .envs import TinyEcho
from .typed_clients import TinyAction, TinyEnv

MIXED = "EnvClient is already being used in {} mode. Create a separate client instance when mixing sync and async code."


@pytest.fixture
def ours(ours_tiny: tuple[str, type[TinyEcho]]) -> str:
    return ours_tiny[0]


@pytest.mark.anyio
async def test_async_then_sync_is_upstreams_error(ours: str) -> None:
    async with TinyEnv(base_url=ours) as env:
        await env.reset()
        with pytest.raises(ModeMixed) as mixed:
            env.__enter__()
        assert isinstance(mixed.value, RuntimeError) and str(mixed.value) == MIXED.format("async")
        with pytest.raises(RuntimeError, match="async mode"):
            env.sync().reset()
        assert (await env.step(TinyAction(message="still usable"))).observation.message_length == 12


@pytest.mark.anyio
async def test_sync_then_async_is_upstreams_error(ours: str) -> None:
    env = TinyEnv(base_url=ours)
    assert env.reset().observation.message_length == 0  # touched: the client is now in sync mode
    with pytest.raises(ModeMixed, match="sync mode"):
        async with env:
            pass
    pending = env.step(TinyAction(message="x"))  # sync mode: runs blocking, not awaitable
    assert pending.observation.echoed_message == "x"
    env.close()


def test_async_use_from_a_thread_while_its_loop_runs_is_refused(ours: str) -> None:
    """Upstream would silently open a second session here; the episode would be lost."""
    import asyncio

    async def main() -> None:
        env = TinyEnv(base_url=ours)
        await env.reset()
        with pytest.raises(ModeMixed, match="async mode"):
            await asyncio.to_thread(env.step, TinyAction(message="x"))
        await env.close()

    asyncio.run(main())


def test_a_client_whose_loop_ended_is_handed_to_sync_use(ours: str) -> None:
    """As upstream: async use inside asyncio.run, then blocking use (on a new session)."""
    env = TinyEnv(base_url=ours)

    async def first() -> None:
        await env.reset(episode_id="async")

    anyio.run(first)
    assert env.reset(episode_id="sync").observation.message_length == 0
    assert env.state().episode_id == "sync"
    env.close()


@pytest.mark.anyio
async def test_calls_after_close_raise(ours: str) -> None:
    async with TinyEnv(base_url=ours) as env:
        await env.reset()
    for call in (lambda: env.step(TinyAction(message="x")), env.state, env.reset):
        with pytest.raises(NotConnected, match="is closed"):
            await call()
    await env.close()  # closing again is fine


def test_blocking_calls_after_close_raise(ours: str) -> None:
    env = TinyEnv(base_url=ours)
    env.reset()
    env.close()
    with pytest.raises(RuntimeError, match="is closed; create a new client"):
        env.step(TinyAction(message="x"))
    with pytest.raises(NotConnected):
        env.sync().state()


@pytest.mark.anyio
async def test_an_action_the_model_rejects_fails_before_sending(ours: str) -> None:
    async with TinyEnv(base_url=ours) as env:
        await env.reset()
        with pytest.raises(ValidationError):
            await env.step({"message": ["not", "a", "string"]})
        with pytest.raises(ValidationError):
            await env.step({"wrong": "field"})
        assert (await env.state()).step_count == 0  # nothing reached the environment
        result = await env.step({"message": "a dict the model accepts"})
        assert result.observation.message_length == 24


def test_bad_constructor_arguments() -> None:
    with pytest.raises(ValueError, match="base_url or provider"):
        GenericEnvClient()
    with pytest.raises(ValueError, match="Invalid mode"):
        GenericEnvClient(base_url="http://127.0.0.1:1", mode="bogus")
    with pytest.raises(ValueError, match="only supports 'production' mode"):
        MCPToolClient(base_url="http://127.0.0.1:1", mode="simulation")
    with pytest.raises(ValueError, match="connect_timeout_s"):
        GenericEnvClient(base_url="http://127.0.0.1:1", connect_timeout_s=-1)
    env = GenericEnvClient(base_url="http://127.0.0.1:1/")
    assert env.base_url == "http://127.0.0.1:1"
    with pytest.raises(AttributeError):
        env.base_url = "http://elsewhere"  # type: ignore[misc]


def test_server_errors_are_runtime_errors_and_connect_errors_connection_errors(tiny_url: str) -> None:
    """What upstream's callers catch (RuntimeError for an error frame, ConnectionError for a
    refused connection) catches ours, which also say exactly what happened."""
    with GenericEnvClient(base_url=tiny_url) as env:
        env.reset()
        with pytest.raises(RuntimeError) as refused:
            env.step({"not_message": 1})
        assert isinstance(refused.value, ServerError)
    nowhere = GenericEnvClient(base_url="http://127.0.0.1:1", connect_timeout_s=2)
    with pytest.raises(ConnectionError) as unreachable:
        nowhere.reset()
    assert isinstance(unreachable.value, ConnectError)
    nowhere.close()
    assert not [thread for thread in threading.enumerate() if thread.name.startswith("openenv-anyio-compat")]
