"""Each consumer of upstream's client, in its own calling mode, against our server and
upstream 0.10's own, through a typed client written in upstream's style on ``compat``."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import anyio
import pytest

from openenv_anyio.compat import GenericEnvClient, StepResult, SyncEnvClient

from .typed_clients import NotesClient, TinyAction, TinyEnv, TinyObservation

TIMEOUT_S = 60


def compat_threads() -> list[str]:
    return [thread.name for thread in threading.enumerate() if thread.name.startswith("openenv-anyio-compat")]


def test_trl_pooled_sync_clients_are_reused_across_batches(tiny_url: str) -> None:
    """TRL: one typed client per generation, plain blocking calls, the pool reused batch after batch."""
    pool = [TinyEnv(base_url=tiny_url) for _ in range(3)]
    for batch in range(3):
        for index, env in enumerate(pool):
            first = env.reset()
            assert isinstance(first, StepResult) and isinstance(first.observation, TinyObservation)
            for turn in range(batch + 1):
                result = env.step(TinyAction(message=f"g{index}-t{turn}"))
                assert result.observation.echoed_message == f"g{index}-t{turn}"
                assert result.reward == pytest.approx(0.1 * len(f"g{index}-t{turn}"))
            assert env.state().step_count == batch + 1
    assert pool[0].base_url == tiny_url
    for env in pool:
        env.close()
    assert compat_threads() == []


class ServerProvider:
    """A provider in upstream's shape (``start_container`` / ``wait_for_ready`` / ``stop_container``)
    whose "container" is a server already running at ``url``; records what it was asked."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.calls: list[str] = []

    def start_container(self, image: str | None = None, **kwargs: Any) -> str:
        self.calls.append(f"start {image}")
        return self.url

    def wait_for_ready(self, base_url: str, timeout_s: float = 30.0) -> None:
        self.calls.append("ready")

    def stop_container(self) -> None:
        self.calls.append("stop")


def test_skyrl_from_docker_image_then_blocking_reset_step_close(tiny_url: str) -> None:
    """SkyRL: ``from_docker_image(...)`` per env, then blocking reset/step/close (0.10: ``.sync()``)."""
    provider = ServerProvider(tiny_url)
    env = TinyEnv.from_docker_image("tiny-env:latest", provider=provider).sync()
    assert isinstance(env, SyncEnvClient)
    env.reset()
    assert env.step(TinyAction(message="sky")).observation.message_length == 3
    assert env.state().step_count == 1
    env.close()
    assert provider.calls == ["start tiny-env:latest", "ready", "stop"]
    assert compat_threads() == []


def test_art_worker_threads_call_blocking_methods(tiny_url: str) -> None:
    """ART: a client per worker, every call through ``asyncio.to_thread``."""

    async def worker(index: int) -> int:
        env = TinyEnv(base_url=tiny_url)
        await asyncio.to_thread(env.reset)
        for turn in range(4):
            result = await asyncio.to_thread(env.step, TinyAction(message=f"w{index}" * (turn + 1)))
            assert result.observation.echoed_message == f"w{index}" * (turn + 1)
        steps = (await asyncio.to_thread(env.state)).step_count
        await asyncio.to_thread(env.close)
        return int(steps)

    async def main() -> list[int]:
        return list(await asyncio.gather(*(worker(index) for index in range(4))))

    assert asyncio.run(asyncio.wait_for(main(), TIMEOUT_S)) == [4, 4, 4, 4]
    assert compat_threads() == []


@pytest.mark.anyio
async def test_torchforge_calls_without_await_inside_a_coroutine(tiny_url: str) -> None:
    """torchforge's example: ``env.reset()`` / ``env.step()`` not awaited in an ``async def``;
    the result resolves when touched, as with upstream 0.10."""
    env = TinyEnv(base_url=tiny_url)
    first = env.reset()
    assert repr(first) == "<AutoAsyncResult pending>"  # nothing ran yet
    assert first.observation.message_length == 0  # touching it runs the reset
    result = env.step(TinyAction(message="forge"))
    assert result.observation.echoed_message == "forge"
    assert env.state().step_count == 1
    env.close()
    assert compat_threads() == []


@pytest.mark.anyio
async def test_areal_new_client_per_episode_with_async_with(tiny_url: str) -> None:
    """AReaL: a new client per episode, ``async with``, awaited reset and steps."""
    with anyio.fail_after(TIMEOUT_S):
        for episode in range(3):
            async with TinyEnv(base_url=tiny_url) as env:
                await env.reset(episode_id=f"areal-{episode}")
                for turn in range(episode + 1):
                    result = await env.step(TinyAction(message=f"e{episode}t{turn}"))
                    assert result.observation.echoed_message == f"e{episode}t{turn}"
                state = await env.state()
                assert (state.episode_id, state.step_count) == (f"areal-{episode}", episode + 1)


@pytest.mark.anyio
async def test_verifiers_generic_client_lists_tools_before_reset(tools_url: str) -> None:
    """Prime Intellect verifiers: ``GenericEnvClient(base_url=)``, its base URL read back,
    ``await client.step({"type": "list_tools"})`` before any reset, then tool calls as steps."""
    with anyio.fail_after(TIMEOUT_S):
        client = GenericEnvClient(base_url=tools_url)
        assert client.base_url == tools_url
        listed = await client.step({"type": "list_tools"})
        assert {tool["name"] for tool in listed.observation["tools"]} >= {"remember", "recall", "shout"}
        await client.reset()
        called = await client.step({"type": "call_tool", "tool_name": "shout", "arguments": {"text": "hi"}})
        assert called.observation["tool_name"] == "shout"
        assert called.observation["result"]["data"] == "HI"
        await client.close()


@pytest.mark.anyio
async def test_mcp_tool_client_lists_and_calls_tools(tools_url: str) -> None:
    """``MCPToolClient``: ``list_tools()`` and ``call_tool(name, **kw)`` on one session's environment."""
    with anyio.fail_after(TIMEOUT_S):
        async with NotesClient(base_url=tools_url) as env:
            await env.reset()
            assert {tool.name for tool in await env.list_tools()} >= {"remember", "recall", "shout"}
            assert await env.has_tool("recall") and not await env.has_tool("nope")
            assert await env.call_tool("remember", text="hello") == 1
            assert await env.call_tool("recall") == "hello"
            with pytest.raises(RuntimeError, match="no_such_tool"):
                await env.call_tool("no_such_tool")
            assert (await env.state()).episode_id


def test_mcp_tool_client_blocking(tools_url: str) -> None:
    with NotesClient(base_url=tools_url) as env:
        env.reset()
        assert env.call_tool("remember", text="a") == 1
        assert env.call_tool("shout", text="b") == "B"
        assert "recall" in [tool.name for tool in env.list_tools()]
    assert compat_threads() == []


@contextmanager
def thread_pool(workers: int) -> Iterator[concurrent.futures.ThreadPoolExecutor]:
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        yield pool


def test_agilerl_sync_clients_many_sessions_on_one_url(tiny_url: str) -> None:
    """AgileRL: upstream's ``SyncEnvClient``, one session per instance, batch x group sessions
    on one URL, driven side by side; plus ``new_session()`` children closed with their parent."""
    batch, group = 2, 4
    clients = [SyncEnvClient(TinyEnv(base_url=tiny_url)) for _ in range(batch * group)]

    def rollout(index: int) -> tuple[str, int]:
        env = clients[index]
        env.connect()
        env.reset(episode_id=f"agile-{index}")
        for turn in range(index % 3 + 1):
            env.step(TinyAction(message=f"{index}:{turn}"))
        state = env.state()
        return state.episode_id, state.step_count

    with thread_pool(batch * group) as pool:
        seen = list(pool.map(rollout, range(batch * group)))
    assert seen == [(f"agile-{index}", index % 3 + 1) for index in range(batch * group)]

    parent = TinyEnv(base_url=tiny_url).sync()
    with parent:
        parent.reset(episode_id="parent")
        child = parent.new_session()
        child.reset(episode_id="child")
        child.step(TinyAction(message="only the child steps"))
        assert (parent.state().step_count, child.state().step_count) == (0, 1)
    with pytest.raises(RuntimeError, match="closed"):
        child.step(TinyAction(message="after the parent closed"))
    for env in clients:
        env.close()
    assert compat_threads() == []


@pytest.mark.anyio
async def test_new_session_awaited_children_close_with_their_parent(tiny_url: str) -> None:
    with anyio.fail_after(TIMEOUT_S):
        async with TinyEnv(base_url=tiny_url) as parent:
            await parent.reset(episode_id="parent")
            child = await parent.new_session()
            assert type(child) is TinyEnv and child.base_url == parent.base_url
            await child.reset(episode_id="child")
            await child.step(TinyAction(message="child"))
            assert ((await parent.state()).step_count, (await child.state()).episode_id) == (0, "child")
        with pytest.raises(RuntimeError, match="closed"):
            await child.step(TinyAction(message="after the parent closed"))
