"""Upstream's own result classes, when ``openenv`` is installed: what ``MCPToolClient`` builds
its step results from, so that ``isinstance`` checks against upstream's ``StepResult`` and
tool observations hold for code written against upstream's client. Without ``openenv`` the
compat classes of the same names and attributes stand in (``observations``, ``results``)."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

__all__ = ["UpstreamTypes", "upstream_types"]


@dataclass(frozen=True, slots=True)
class UpstreamTypes:
    """The classes of ``openenv.core`` a tool client's step result is made of."""

    step_result: Any
    list_tools_observation: Any
    call_tool_observation: Any
    tool: Any
    tool_error: Any
    generic_observation: Any


@functools.cache
def upstream_types() -> UpstreamTypes | None:
    """Upstream's classes, or None when ``openenv`` (0.10's layout) cannot be imported."""
    try:
        from openenv.core.client_types import StepResult
        from openenv.core.env_server.mcp_types import CallToolObservation, ListToolsObservation, Tool, ToolError
        from openenv.core.mcp_client import GenericMCPObservation
    except ImportError:
        return None
    return UpstreamTypes(StepResult, ListToolsObservation, CallToolObservation, Tool, ToolError, GenericMCPObservation)
