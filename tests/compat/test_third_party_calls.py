"""Calling patterns third-party code written against upstream 0.10 uses, run as it runs them
against our server and upstream 0.10's own: ``asyncio.run(Client.from_docker_image(...))``,
``from_env``, a typed client that overrides ``connect()``, ``obs.error.message`` on tool
results, and the agent channel's own URL as the base URL."""

from __future__ import annotations

import asyncio
import collections.abc
from typing import Any

import pytest

from openenv_anyio.compat import (
    CallToolAction,
    GenericEnvClient,
    MCPToolClient,
    StepResult,
    SyncEnvClient,
    observations,
)
from tests.upstream_peers import ROOT, Peer, run_peer_script

from .test_consumers import ServerProvider, compat_threads
from .typed_clients import TinyAction, TinyEnv


class RuntimeServer:
    """A runtime provider in upstream's shape (``start`` / ``wait_for_ready`` / ``stop``) whose
    "process" is a server already running at ``url``; records what it was asked."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.calls: list[str] = []

    def start(self, port: int | None = None, env_vars: dict[str, str] | None = None, **kwargs: Any) -> str:
        self.calls.append(f"start {port}")
        return self.url

    def wait_for_ready(self, timeout_s: float = 30.0) -> None:
        self.calls.append("ready")

    def stop(self) -> None:
        self.calls.append("stop")


class Announcing(TinyEnv):
    """A typed client that does its own work in ``connect()``, as some shipped clients do."""

    connects = 0

    def connect(self) -> Any:
        type(self).connects += 1
        return super().connect()


def test_asyncio_run_takes_from_docker_image(tiny_url: str) -> None:
    provider = ServerProvider(tiny_url)
    handle = TinyEnv.from_docker_image("tiny-env:latest", provider=provider)
    assert isinstance(handle, collections.abc.Coroutine) and asyncio.iscoroutine(handle)
    assert provider.calls == []  # nothing starts until it is driven

    async def main() -> int:
        env = await handle  # the handle asyncio.run was given... and, here, awaited directly
        try:
            await env.reset()
            return int((await env.step(TinyAction(message="abcd"))).observation.message_length)
        finally:
            await env.close()

    assert asyncio.run(main()) == 4
    env = asyncio.run(TinyEnv.from_docker_image("tiny-env:latest", provider=provider))
    assert isinstance(env, TinyEnv) and env.base_url == tiny_url
    env.close()  # the loop that connected it has ended: closing still stops the container
    assert provider.calls == ["start tiny-env:latest", "ready", "stop"] * 2
    assert compat_threads() == []


def test_a_driven_handle_cannot_be_resolved_again(tiny_url: str) -> None:
    handle = TinyEnv.from_docker_image("tiny-env:latest", provider=ServerProvider(tiny_url))
    env = asyncio.run(handle)
    env.close()
    with pytest.raises(RuntimeError, match="already resolved"):
        handle.sync()


@pytest.mark.anyio
async def test_async_with_and_bootstraps_call_an_overridden_connect(tiny_url: str) -> None:
    Announcing.connects = 0
    async with Announcing(base_url=tiny_url) as env:
        await env.reset()
    assert Announcing.connects == 1
    env = await Announcing.from_docker_image("tiny-env:latest", provider=ServerProvider(tiny_url))
    try:
        assert Announcing.connects == 2
        assert (await env.step(TinyAction(message="ok"))).observation.message_length == 2
    finally:
        await env.close()


@pytest.mark.anyio
async def test_from_env_runs_a_space_image_offline_with_a_given_provider(tiny_url: str) -> None:
    provider = ServerProvider(tiny_url)
    env = await TinyEnv.from_env("Some-Org/tiny_env", provider=provider, tag="v2")
    try:
        await env.reset()
        assert (await env.step(TinyAction(message="hub"))).observation.message_length == 3
    finally:
        await env.close()
    assert provider.calls == ["start registry.hf.space/some-org-tiny-env:v2", "ready", "stop"]


def test_from_env_runs_a_checkout_with_a_runtime_provider(tiny_url: str) -> None:
    runtime = RuntimeServer(tiny_url)
    env = TinyEnv.from_env("org/tiny_env", use_docker=False, provider=runtime, port=8123).sync()
    assert isinstance(env, SyncEnvClient)
    env.reset()
    assert env.step(TinyAction(message="uv")).observation.message_length == 2
    env.close()
    assert runtime.calls == ["start 8123", "ready", "stop"]
    with pytest.raises(ValueError, match=r"^from_env: project_path cannot be used with a provider instance$"):
        TinyEnv.from_env("org/tiny_env", use_docker=False, provider=runtime, project_path="/x").sync()
    with pytest.raises(ValueError, match=r"^repo_id must be a Hugging Face Space id 'owner/name', not 'tiny'$"):
        TinyEnv.from_env("tiny", provider=ServerProvider(tiny_url)).sync()


def test_tool_results_have_upstream_s_attributes(tools_url: str) -> None:
    """``obs.error.message`` (upstream's own ``call_tool`` reads it) on a framework error."""
    with MCPToolClient(base_url=tools_url) as env:
        env.reset()
        result = env.step(CallToolAction(tool_name="no_such_tool", arguments={}))
        assert isinstance(result, StepResult) and isinstance(result.observation, observations.CallToolObservation)
        error = result.observation.error
        assert isinstance(error, observations.ToolError) and error.error_type == "tool_not_found"
        assert "no_such_tool" in error.message
        fine = env.step(CallToolAction(tool_name="shout", arguments={"text": "hi"})).observation
        assert fine.error is None and fine.tool_name == "shout"


@pytest.mark.parametrize("suffix", ["/ws", "/ws/"])
def test_the_agent_channel_s_url_is_a_base_url(tiny_url: str, suffix: str) -> None:
    with GenericEnvClient(base_url=tiny_url + suffix) as env:
        env.reset()
        assert env.step({"message": "ws"}).observation["message_length"] == 2


def test_tool_results_are_upstream_s_classes_where_it_is_installed(peer: Peer, tools_url: str) -> None:
    checks = run_peer_script(peer, "compat_tool_types.py", tools_url, pythonpath=(ROOT,))
    assert all(checks.values()), checks
