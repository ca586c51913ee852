"""The actions and observations of tool environments, in upstream's shapes, without upstream.

``MCPToolClient`` steps with :class:`ListToolsAction` / :class:`CallToolAction` (or upstream's
own classes of those names) and parses what comes back into :class:`ListToolsObservation`,
:class:`CallToolObservation` or, for any other observation, :class:`ToolEnvObservation`
(a dict whose keys read as attributes too). ``MCPToolClient`` returns upstream's own classes
of these names instead when ``openenv`` is installed (``upstream_types``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..client import Tool

__all__ = [
    "CallToolAction",
    "CallToolObservation",
    "ListToolsAction",
    "ListToolsObservation",
    "ToolEnvObservation",
    "ToolError",
]


@dataclass
class ListToolsAction:
    """Ask a tool environment for its tools as a step (``{"type": "list_tools"}``)."""


@dataclass
class CallToolAction:
    """Call one tool as a step (``{"type": "call_tool", "tool_name": ..., "arguments": ...}``)."""

    tool_name: str
    arguments: dict[str, Any] = field(default_factory=dict)


@dataclass
class ListToolsObservation:
    tools: list[Tool]
    done: bool = False
    reward: float | bool | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class ToolError:
    """Why a call failed in the framework, not in the tool (``obs.error.message``)."""

    error_type: str
    message: str


@dataclass
class CallToolObservation:
    tool_name: str
    result: Any = None
    #: the environment's error for a failed call, else None
    error: ToolError | None = None
    done: bool = False
    reward: float | bool | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


class ToolEnvObservation(dict[str, Any]):
    """Any other observation of a tool environment: ``obs["key"]`` and ``obs.key`` alike."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None
