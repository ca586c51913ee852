"""Run by an upstream peer's Python (``openenv`` 0.10) with the repository first on PYTHONPATH:
the same sequences through a typed client of ``tests/compat/upstream_env_package`` as shipped
(upstream's base) and adopted onto ``openenv_anyio.compat``, against one server.

``python compat_adopt.py URL tiny|notes``; prints one JSON object (one line).
"""

from __future__ import annotations

import asyncio
import json
import sys
import threading
from typing import Any

import pydantic
from openenv.core import EnvClient as UpstreamEnvClient
from openenv.core.client_types import StepResult as UpstreamStepResult
from tiny_pkg import NotesPkgEnv, TinyPkgAction, TinyPkgEnv

import openenv_anyio.compat as compat


def tiny_sync(cls: Any, url: str) -> list[Any]:
    env = cls(base_url=url)
    first = env.reset()
    stepped = env.step(TinyPkgAction(message="hi"))
    shouted = env.shout("abc")
    state = env.state()
    env.close()
    return [
        type(first) is UpstreamStepResult,
        stepped.observation.echoed_message,
        stepped.reward,
        shouted.observation.echoed_message,
        state.step_count,
        env.parsed,
    ]


async def tiny_async(cls: Any, url: str) -> list[Any]:
    async with cls(base_url=url) as env:
        await env.reset(episode_id="adopted")
        stepped = await env.step(TinyPkgAction(message="async"))
        state = await env.state()
        return [stepped.observation.message_length, state.episode_id, state.step_count]


def notes_sync(cls: Any, url: str) -> list[Any]:
    with cls(base_url=url).sync() as env:
        env.reset()
        return [env.call_tool("remember", text="a"), env.remember_all("b", "c"), env.call_tool("recall")]


async def notes_async(cls: Any, url: str) -> list[Any]:
    async with cls(base_url=url) as env:
        await env.reset()
        names = sorted(tool.name for tool in await env.list_tools())
        remembered = await env.remember_all("x", "y")
        try:
            await env.call_tool("no_such_tool")
        except RuntimeError as exc:
            failed = "no_such_tool" in str(exc)
        return [
            names,
            remembered,
            await env.call_tool("shout", text="hi"),
            failed,
            (await env.state()).episode_id is not None,
        ]


def run(cls: Any, url: str, kind: str) -> list[Any]:
    if kind == "tiny":
        return [tiny_sync(cls, url), asyncio.run(tiny_async(cls, url))]
    return [notes_sync(cls, url), asyncio.run(notes_async(cls, url))]


def main(url: str, kind: str) -> dict[str, Any]:
    shipped = TinyPkgEnv if kind == "tiny" else NotesPkgEnv
    adopted = compat.adopt(shipped)
    checks = {
        "adopted_on_compat": issubclass(adopted, compat.EnvClient) and not issubclass(adopted, UpstreamEnvClient),
        "shipped_unchanged": issubclass(shipped, UpstreamEnvClient) and not issubclass(shipped, compat.EnvClient),
        "same_name": adopted.__name__ == shipped.__name__,
        "adopted_once": compat.adopt(shipped) is adopted,
        "mcp_base": issubclass(adopted, compat.MCPToolClient) == (kind == "notes"),
    }
    if kind == "tiny":
        env = adopted(base_url=url)
        try:
            env.step({"message": ["not", "text"]})
        except pydantic.ValidationError:
            checks["validation_error_before_sending"] = env.native is None  # nothing was even connected
        env.close()
    result = {"upstream": run(shipped, url, kind), "adopted": run(adopted, url, kind), "checks": checks}
    result["threads_left"] = [t.name for t in threading.enumerate() if t.name.startswith("openenv-anyio-compat")]
    return result


print(json.dumps(main(sys.argv[1], sys.argv[2]), default=str))
