"""Run by an upstream peer's Python (``openenv`` 0.10+): upstream's own MCPToolClient against
a server serving ``tests/mcp_surface/upstream_tool_env.py``'s NotesEnvironment.

Prints one JSON object (one line) with what it saw; ``python mcp_tool_client.py URL``.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from openenv.core.env_server.mcp_types import CallToolAction
from openenv.core.mcp_client import MCPToolClient


async def main(url: str) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    async with MCPToolClient(base_url=url) as env:
        await env.reset()
        seen["tools"] = sorted(tool.name for tool in await env.list_tools())
        seen["remember"] = await env.call_tool("remember", text="hello")
        seen["recall"] = await env.call_tool("recall")
        seen["shout"] = await env.call_tool("shout", text="hi")
        try:
            await env.call_tool("no_such_tool")
        except RuntimeError as exc:
            seen["unknown_tool_error"] = str(exc)
        stepped = await env.step(CallToolAction(tool_name="recall", arguments={}))
        seen["step_call_tool"] = stepped.observation.result
        state = await env.state()
        seen["episode_id"] = state.episode_id
    return seen


print(json.dumps(asyncio.run(main(sys.argv[1])), default=str))
