"""``MCPToolClient``: upstream's tool-environment client (``list_tools``, ``call_tool``) on our client.

    with MCPToolClient(base_url=url) as env:          # or: async with ..., await env.call_tool(...)
        env.reset()
        names = [tool.name for tool in env.list_tools()]
        echoed = env.call_tool("echo_message", message="hi")

Tools travel as JSON-RPC in ``mcp`` frames over the session's own WebSocket (MCP-WS-1), where
upstream's client opens a second, HTTP channel to ``/mcp``: one connection to resume, and a
tool call reaches the same environment instance as the steps. ``list_tools`` and
``call_tool`` follow the client's calling mode like ``step``. A JSON-RPC error raises the
:class:`~openenv_anyio.client.RpcError` of its code (a ``RuntimeError``, as upstream's).
"""

from __future__ import annotations

from typing import Any

from ..client import RpcMethodNotFound, Tool
from .env_client import EnvClient
from .generic_client import as_dict
from .observations import CallToolObservation, ListToolsObservation, ToolEnvObservation, ToolError
from .results import StepResult
from .upstream_types import UpstreamTypes, upstream_types

__all__ = ["MCPToolClient"]


class MCPToolClient(EnvClient[Any, Any, Any]):
    """A client of a tool environment (upstream's ``MCPToolClient``; ``mode`` is "production")."""

    def __init__(
        self,
        base_url: str | None = None,
        connect_timeout_s: float = 10.0,
        message_timeout_s: float | None = 60.0,
        websocket_ping_interval_s: float | None = 20.0,
        websocket_ping_timeout_s: float | None = 20.0,
        provider: Any = None,
        mode: str | None = None,
        max_message_size_mb: float = 100.0,
        headers: dict[str, str] | None = None,
        **options: Any,
    ) -> None:
        mode = "production" if mode is None else mode
        if not isinstance(mode, str) or mode.lower() != "production":
            raise ValueError(
                f"MCPToolClient only supports 'production' mode, got {mode!r}. "
                "Use GenericEnvClient for simulation mode."
            )
        super().__init__(
            base_url,
            connect_timeout_s,
            message_timeout_s,
            max_message_size_mb,
            websocket_ping_interval_s,
            websocket_ping_timeout_s,
            provider,
            mode,
            headers,
            **options,
        )
        self._tools_cache: list[Tool] | None = None
        self.use_production_mode = True

    def list_tools(self, use_cache: bool = True) -> Any:
        """The environment's tools (cached after the first answer unless ``use_cache=False``)."""
        return self._dispatch(self._list_tools_async, use_cache)

    def call_tool(self, name: str, **kwargs: Any) -> Any:
        """Call tool ``name`` with ``kwargs`` as its arguments; its value."""
        return self._dispatch(self._call_tool_async, name, kwargs)

    def get_tool(self, name: str) -> Any:
        """The tool called ``name``, or None."""
        return self._dispatch(self._get_tool_async, name)

    def has_tool(self, name: str) -> Any:
        """Whether the environment has a tool called ``name``."""
        return self._dispatch(self._has_tool_async, name)

    async def _list_tools_async(self, use_cache: bool) -> list[Tool]:
        if use_cache and self._tools_cache is not None:
            return self._tools_cache
        native = await self._native()
        try:
            tools = await native.list_tools()
        except RpcMethodNotFound:  # an environment without tools: none, as upstream lists them
            tools = []
        self._tools_cache = tools
        return tools

    async def _call_tool_async(self, name: str, arguments: dict[str, Any]) -> Any:
        native = await self._native()
        return await native.call_tool(name, **arguments)

    async def _get_tool_async(self, name: str) -> Tool | None:
        return next((tool for tool in await self._list_tools_async(True) if tool.name == name), None)

    async def _has_tool_async(self, name: str) -> bool:
        return await self._get_tool_async(name) is not None

    def _step_payload(self, action: Any) -> dict[str, Any]:
        kind = type(action).__name__
        if kind == "ListToolsAction":
            return {"type": "list_tools"}
        if kind == "CallToolAction":
            return {"type": "call_tool", "tool_name": action.tool_name, "arguments": dict(action.arguments)}
        dumped = as_dict(action)
        return {"action": str(action)} if dumped is None else dumped

    def _parse_result(self, payload: dict[str, Any]) -> Any:
        """A step result of upstream's classes when ``openenv`` is installed, else of ours (the
        same attributes either way: ``obs.tools``, ``obs.result``, ``obs.error.message``)."""
        observed = payload.get("observation", {})
        done, reward = payload.get("done", False), payload.get("reward")
        metadata = payload.get("metadata", observed.get("metadata", {})) or {}
        upstream = upstream_types()
        if upstream is not None:
            return upstream.step_result(
                observation=_upstream_observation(upstream, observed, done, reward, metadata),
                reward=reward,
                done=done,
                metadata=payload.get("metadata"),
            )
        observation: Any
        if "tools" in observed:
            tools = [Tool.of(_listing(tool)) for tool in observed.get("tools", [])]
            observation = ListToolsObservation(tools, done, reward, metadata)
        elif "tool_name" in observed:
            error = observed.get("error")
            observation = CallToolObservation(
                observed.get("tool_name", ""),
                observed.get("result"),
                ToolError(str(error.get("error_type", "")), str(error.get("message", ""))) if error else None,
                done,
                reward,
                metadata,
            )
        else:
            observation = ToolEnvObservation(observed)
        return StepResult(observation=observation, reward=reward, done=done, metadata=payload.get("metadata"))

    def _parse_state(self, payload: dict[str, Any]) -> Any:
        from .state import State

        return State(episode_id=payload.get("episode_id"), step_count=payload.get("step_count", 0))


def _upstream_observation(
    upstream: UpstreamTypes, observed: dict[str, Any], done: bool, reward: Any, metadata: dict[str, Any]
) -> Any:
    common = {"done": done, "reward": reward, "metadata": metadata}
    if "tools" in observed:
        tools = [
            upstream.tool(name=t.get("name", ""), description=t.get("description", ""), input_schema=_schema_of(t))
            for t in observed.get("tools", [])
        ]
        return upstream.list_tools_observation(tools=tools, **common)
    if "tool_name" in observed:
        error = observed.get("error")
        return upstream.call_tool_observation(
            tool_name=observed.get("tool_name", ""),
            result=observed.get("result"),
            error=upstream.tool_error(**error) if error else None,
            **common,
        )
    own = {key: value for key, value in observed.items() if key not in common}
    return upstream.generic_observation(**common, **own)


def _schema_of(tool: dict[str, Any]) -> Any:
    return tool.get("input_schema", tool.get("inputSchema", {}))


def _listing(tool: dict[str, Any]) -> dict[str, Any]:
    """A tool listing with ``inputSchema`` (step observations may carry ``input_schema``)."""
    if "inputSchema" not in tool and "input_schema" in tool:
        tool = {**tool, "inputSchema": tool["input_schema"]}
        del tool["input_schema"]
    return tool
