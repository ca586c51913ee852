"""``EnvClient.list_tools`` / ``call_tool`` (mcp frames on /ws) on both anyio backends."""

from __future__ import annotations

from collections.abc import Iterator

import anyio
import pytest

from openenv_anyio import EnvClient, RpcInvalidParams, RpcMethodNotFound, ToolFailed
from openenv_anyio.server import EnvServer, ServerConfig

from .tool_envs import NotesEnv, NoToolsEnv

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with EnvServer(NotesEnv, ServerConfig(validate_outbound=True)).run_in_thread() as server:
        yield server.url


@pytest.mark.parametrize("reconnect", [True, False])
async def test_list_and_call_tools(url: str, reconnect: bool) -> None:
    async with EnvClient(url, reconnect=reconnect) as env:
        tools = await env.list_tools()
        assert [tool.name for tool in tools] == ["remember", "recall", "shout"]
        assert tools[0].input_schema["required"] == ["text"]
        await env.reset()
        assert (await env.call_tool("remember", text="a"))["count"] == 1
        assert await env.call_tool("recall") == "a"
        assert await env.call_tool("shout", text="b", times=3) == "BBB"
        step = await env.step({})
        assert step.observation["notes"] == 1  # the tool and the step share the environment
        with pytest.raises(RpcInvalidParams) as bad:
            await env.call_tool("recall", index=-1)
        assert bad.value.data["errors"][0]["pointer"] == "/index"
        with pytest.raises(ToolFailed) as failed:
            await env.call_tool("recall", index=7)
        assert (
            failed.value.data["tool"] == "recall" and len(failed.value.data["error_id"]) == 16
        )  # the log entry (SEC-ERR-1)
        assert (await env.state()).step_count == 1  # errors never end the session


async def test_pipelined_tool_calls_from_two_tasks(url: str) -> None:
    async with EnvClient(url) as env:
        results: list[str] = []

        async def shout(text: str) -> None:
            results.append(await env.call_tool("shout", text=text))

        async with anyio.create_task_group() as group:
            for text in "abcd":
                group.start_soon(shout, text)
        assert sorted(results) == ["A", "B", "C", "D"]


@pytest.fixture(scope="module")
def no_tools_url() -> Iterator[str]:
    with EnvServer(NoToolsEnv, ServerConfig(validate_outbound=True)).run_in_thread() as server:
        yield server.url


async def test_environment_without_tools(no_tools_url: str) -> None:
    async with EnvClient(no_tools_url) as env:
        with pytest.raises(RpcMethodNotFound):
            await env.list_tools()
        assert (await env.reset()).done is False


def test_sync_client_calls_tools(url: str) -> None:
    with EnvClient(url).sync() as env:
        assert [tool.name for tool in env.list_tools()][0] == "remember"
        assert env.call_tool("shout", text="z") == "Z"
