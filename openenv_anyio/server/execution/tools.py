"""The tools of one bound environment, listed and called where its other calls run.

Two kinds of environment have tools:

- one that provides ``list_tools()`` and ``call_tool(name, arguments)`` itself (the adapter
  of upstream's ``MCPEnvironment`` does: its FastMCP tools), sync or ``async def``;
- one that marks methods with :func:`openenv_anyio.tools.tool`: the arguments are checked
  against the tool's JSON Schema before the method runs (-32602 with the JSON pointer of
  the fault), and the answer has the form upstream's clients read (``data`` is the value).

Sync calls go to the session's runner (its worker thread: a tool and a step see one
environment instance on one thread, ``MCP-TOOL-3``); ``async def`` ones are awaited.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

from ...core import ProtocolError, RpcCode, RpcFailure, Validator, dumps
from ...tools import ToolSpec, declared_tools
from .bound_env import BoundEnv
from .faults import await_env_code

__all__ = ["EnvTools", "tool_result"]


def tool_result(value: Any) -> dict[str, Any]:
    """A tool's return value in the ``tools/call`` result form (``tools-call-result``)."""
    text = value if isinstance(value, str) else dumps(value)
    return {
        "content": [{"type": "text", "text": text}],
        "structured_content": {"result": value},
        "data": value,
        "is_error": False,
        "meta": None,
    }


async def _run(bound: BoundEnv, function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``function(*args, **kwargs)`` where the environment's calls run (a ``BaseException``
    it raises becomes :class:`EnvironmentAborted`, ``SRV-FAULT-1``)."""
    if inspect.iscoroutinefunction(function):
        return await await_env_code(function(*args, **kwargs))
    return await bound.runner.run(partial(function, *args, **kwargs))


class EnvTools:
    """Lists and calls the tools of one :class:`BoundEnv` (see the module doc)."""

    __slots__ = ("_bound", "_declared", "_validators")

    def __init__(self, bound: BoundEnv) -> None:
        self._bound = bound
        self._declared: dict[str, ToolSpec] = declared_tools(bound.env)
        self._validators: dict[str, Validator] = {}

    @property
    def provided(self) -> bool:
        """Whether the environment lists and calls its tools itself."""
        env = self._bound.env
        return callable(getattr(env, "list_tools", None)) and callable(getattr(env, "call_tool", None))

    def available(self) -> bool:
        """Whether the environment has tools at all."""
        return self.provided or bool(self._declared)

    async def listing(self) -> list[dict[str, Any]]:
        """``tools/list``: every tool with its name, description and inputSchema."""
        if self.provided:
            return list(await _run(self._bound, self._bound.env.list_tools))
        return [spec.listing() for spec in self._declared.values()]

    async def call(self, name: str, arguments: Mapping[str, Any]) -> Any:
        """``tools/call``: the result object; raises :class:`RpcFailure` (-32602) for an unknown
        tool or bad arguments, and what the tool raised."""
        if self.provided:
            return await _run(self._bound, self._bound.env.call_tool, name, dict(arguments))
        spec = self._declared.get(name)
        if spec is None:
            raise RpcFailure(RpcCode.INVALID_PARAMS, f"Unknown tool: {name!r}", {"tool": name})
        validator = self._validators.get(name)
        if validator is None:
            validator = self._validators[name] = Validator(spec.input_schema)
        try:
            validator.check(dict(arguments), what=f"arguments of tool {name!r}")
        except ProtocolError as error:
            raise RpcFailure(RpcCode.INVALID_PARAMS, error.message, {"tool": name, "errors": error.errors}) from None
        # what the tool raises is answered by the server's error rules (mcp_dispatch)
        return tool_result(await _run(self._bound, getattr(self._bound.env, spec.method_name), **arguments))
