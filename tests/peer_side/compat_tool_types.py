"""Run in upstream's peer venv with this tree's package first on the path: ``MCPToolClient``
of ``openenv_anyio.compat`` against the tool server at argv[1] returns upstream's own classes
(``openenv`` is importable here), so ``isinstance`` checks written against upstream hold.
Prints one JSON line: each check's outcome."""

from __future__ import annotations

import json
import sys

from openenv.core.client_types import StepResult
from openenv.core.env_server.mcp_types import CallToolObservation, ListToolsObservation, Tool, ToolError

from openenv_anyio.compat import CallToolAction, ListToolsAction, MCPToolClient

with MCPToolClient(base_url=sys.argv[1]) as env:
    env.reset()
    failed = env.step(CallToolAction(tool_name="no_such_tool", arguments={}))
    shouted = env.step(CallToolAction(tool_name="shout", arguments={"text": "hi"}))
    listed = env.step(ListToolsAction())
    checks = {
        "step_result": isinstance(failed, StepResult),
        "call_tool_observation": isinstance(failed.observation, CallToolObservation),
        "tool_error": isinstance(failed.observation.error, ToolError),
        "error_message": "no_such_tool" in failed.observation.error.message,
        "no_error": shouted.observation.error is None,
        "list_tools_observation": isinstance(listed.observation, ListToolsObservation),
        "tools": all(isinstance(tool, Tool) for tool in listed.observation.tools),
        "tool_names": sorted(tool.name for tool in listed.observation.tools) == ["recall", "remember", "shout"],
    }
print(json.dumps(checks))
