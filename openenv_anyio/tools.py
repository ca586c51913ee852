"""Tools an environment offers to agents over MCP (``tools/list``, ``tools/call``), without FastMCP.

Mark methods of an environment with :func:`tool`; each becomes one tool whose arguments are
described by a JSON Schema (given as ``parameters``, or read from the method's annotations:
``str``, ``int``, ``float``, ``bool``, ``list``, ``dict`` and ``X | None``)::

    class Notes(Environment):
        @tool
        def remember(self, text: str) -> int:
            "Store a note; returns how many notes are kept."
            ...

        @tool(parameters={"type": "object", "properties": {"n": {"type": "integer", "minimum": 1}}})
        async def last(self, n: int = 1) -> list[str]:
            ...

Tools may be sync or ``async def``; a server runs a sync tool where the session's other calls
run (its worker thread), so a tool and a step see one environment instance. Names
``reset``, ``step``, ``state`` and ``close`` are reserved (``MCP-TOOL-2``). No I/O here.
"""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, TypeVar, overload

from .core.jsonrpc import RESERVED_TOOL_NAMES

__all__ = ["ToolSpec", "declared_tools", "tool"]

_MARK: Final = "__openenv_tool__"
_F = TypeVar("_F", bound=Callable[..., Any])

_JSON_TYPES: Final[Mapping[Any, str]] = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    list: "array",
    tuple: "array",
    dict: "object",
}


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """What ``tools/list`` says about one tool, and the method that runs it."""

    name: str
    description: str
    input_schema: Mapping[str, Any]
    method_name: str

    def listing(self) -> dict[str, Any]:
        """The tool as ``tools/list`` lists it."""
        return {"name": self.name, "description": self.description, "inputSchema": dict(self.input_schema)}


def _annotation_schema(annotation: Any) -> dict[str, Any]:
    if annotation is inspect.Parameter.empty or annotation is Any:
        return {}
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        members = [_annotation_schema(arg) for arg in typing.get_args(annotation)]
        return {} if any(not member for member in members) else {"anyOf": members}
    if annotation is type(None):
        return {"type": "null"}
    json_type = _JSON_TYPES.get(origin or annotation)
    return {"type": json_type} if json_type else {}


def _schema_from_signature(function: Callable[..., Any]) -> dict[str, Any]:
    try:
        hints = typing.get_type_hints(function)
    except Exception:  # unresolvable annotations describe nothing
        hints = {}
    properties: dict[str, Any] = {}
    required: list[str] = []
    for name, parameter in list(inspect.signature(function).parameters.items())[1:]:  # after self
        if parameter.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            continue
        if parameter.kind is inspect.Parameter.POSITIONAL_ONLY:
            raise TypeError(
                f"tool {function.__name__}: positional-only parameter {name!r} cannot take a named argument"
            )
        member = _annotation_schema(hints.get(name, parameter.annotation))
        if parameter.default is inspect.Parameter.empty:
            required.append(name)
        elif parameter.default is None or isinstance(parameter.default, (str, int, float, bool)):
            member["default"] = parameter.default
        properties[name] = member
    schema: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        schema["required"] = required
    return schema


@overload
def tool(function: _F, /) -> _F: ...
@overload
def tool(
    *, name: str | None = None, description: str | None = None, parameters: Mapping[str, Any] | None = None
) -> Callable[[_F], _F]: ...
def tool(
    function: _F | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    parameters: Mapping[str, Any] | None = None,
) -> _F | Callable[[_F], _F]:
    """Mark an environment method as a tool (``@tool`` or ``@tool(name=..., parameters=...)``).

    ``description`` defaults to the docstring's first paragraph, ``parameters`` (the JSON
    Schema of the arguments object) to one read from the annotations. Raises ``ValueError``
    for a reserved name.
    """

    def mark(method: _F) -> _F:
        tool_name = name or method.__name__
        if tool_name in RESERVED_TOOL_NAMES:
            raise ValueError(f"tool name {tool_name!r} is reserved (reset, step, state and close are the protocol's)")
        doc = inspect.getdoc(method) or ""
        spec = ToolSpec(
            name=tool_name,
            description=description if description is not None else doc.split("\n\n", 1)[0].strip(),
            input_schema=dict(parameters) if parameters is not None else _schema_from_signature(method),
            method_name=method.__name__,
        )
        setattr(method, _MARK, spec)
        return method

    return mark(function) if function is not None else mark


def declared_tools(env_or_class: Any) -> dict[str, ToolSpec]:
    """The tools a class (or an instance's class) declares with :func:`tool`, by name."""
    cls = env_or_class if isinstance(env_or_class, type) else type(env_or_class)
    found: dict[str, ToolSpec] = {}
    for klass in reversed(cls.__mro__):
        for attribute in vars(klass).values():
            spec = getattr(attribute, _MARK, None)
            if isinstance(spec, ToolSpec):
                found[spec.name] = spec
    return found
