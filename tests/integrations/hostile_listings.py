"""``tools/list`` answers no class can be made from, each with the typed error the TRL factory
must refuse it with (``EnvironmentUnavailable`` for an answer that is not a list of named tools,
``UnexpressibleSchema`` for a tool no method can carry), and a real small server that answers
them: upstream's wire shape (``/ws`` ``mcp`` frames, ``/metadata``, ``/schema``) on Starlette."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from typing import Any

from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from tests.openenv_core_server import serve_asgi


def _tool(name: object = "probe", schema: object = None, **extra: Any) -> dict[str, Any]:
    listing: dict[str, Any] = {"name": name, "description": "a tool", **extra}
    listing["inputSchema"] = {"type": "object", "properties": {}} if schema is None else schema
    return listing


def _with(parameter: object) -> dict[str, Any]:
    return _tool(schema={"type": "object", "properties": {"value": parameter}})


#: (what it is, the tools/list result, the error's class name, the start of its message)
HOSTILE: list[tuple[str, Any, str, str]] = [
    ("result not an object", "tools", "EnvironmentUnavailable", "cannot list the tools of"),
    ("no tools member", {}, "EnvironmentUnavailable", "cannot list the tools of"),
    ("tools not a list", {"tools": "probe"}, "EnvironmentUnavailable", "cannot list the tools of"),
    ("a tool that is a number", {"tools": [5]}, "EnvironmentUnavailable", "cannot list the tools of"),
    ("a tool without a name", {"tools": [{"description": "x"}]}, "EnvironmentUnavailable", "cannot list"),
    ("a name that is a number", {"tools": [_tool(5)]}, "EnvironmentUnavailable", "cannot list the tools of"),
    ("a schema that is a list", {"tools": [_tool(schema=[1, 2])]}, "EnvironmentUnavailable", "cannot list"),
    ("a schema that is a string", {"tools": [_tool(schema="object")]}, "EnvironmentUnavailable", "cannot list"),
    ("two tools, one name", {"tools": [_tool(), _tool()]}, "UnexpressibleSchema", "http://"),
    ("a name with a dash", {"tools": [_tool("pro-be")]}, "UnexpressibleSchema", "tool name 'pro-be'"),
    ("a private name", {"tools": [_tool("_probe")]}, "UnexpressibleSchema", "tool name '_probe'"),
    ("a keyword name", {"tools": [_tool("class")]}, "UnexpressibleSchema", "tool name 'class'"),
    ("the instance's reset", {"tools": [_tool("reset")]}, "UnexpressibleSchema", "tool 'reset' would hide"),
    ("the instance's get_reward", {"tools": [_tool("get_reward")]}, "UnexpressibleSchema", "tool 'get_reward'"),
    (
        "properties a list",
        {"tools": [_tool(schema={"type": "object", "properties": []})]},
        "UnexpressibleSchema",
        "tool 'probe'",
    ),
    (
        "properties null",
        {"tools": [_tool(schema={"type": "object", "properties": None})]},
        "UnexpressibleSchema",
        "tool 'probe'",
    ),
    ("top type array", {"tools": [_tool(schema={"type": "array"})]}, "UnexpressibleSchema", "tool 'probe'"),
    ("top type an object", {"tools": [_tool(schema={"type": {"x": 1}})]}, "UnexpressibleSchema", "tool 'probe'"),
    ("top anyOf", {"tools": [_tool(schema={"anyOf": [{"type": "object"}]})]}, "UnexpressibleSchema", "tool 'probe'"),
    (
        "required a number",
        {"tools": [_tool(schema={"type": "object", "properties": {}, "required": 5})]},
        "UnexpressibleSchema",
        "tool 'probe'",
    ),
    (
        "required a string",
        {"tools": [_tool(schema={"type": "object", "properties": {}, "required": "value"})]},
        "UnexpressibleSchema",
        "tool 'probe'",
    ),
    (
        "required of objects",
        {"tools": [_tool(schema={"type": "object", "properties": {}, "required": [{}]})]},
        "UnexpressibleSchema",
        "tool 'probe'",
    ),
    ("a parameter schema a number", {"tools": [_with(5)]}, "UnexpressibleSchema", "tool 'probe' parameter 'value'"),
    (
        "a parameter named self",
        {"tools": [_tool(schema={"type": "object", "properties": {"self": {}}})]},
        "UnexpressibleSchema",
        "tool 'probe' parameter 'self'",
    ),
    (
        "a parameter named with a dash",
        {"tools": [_tool(schema={"type": "object", "properties": {"a-b": {}}})]},
        "UnexpressibleSchema",
        "tool 'probe' parameter 'a-b'",
    ),
    (
        "a type that is an object",
        {"tools": [_with({"type": {"x": 1}})]},
        "UnexpressibleSchema",
        "tool 'probe' parameter 'value'",
    ),
    (
        "a type that is a number",
        {"tools": [_with({"type": 5})]},
        "UnexpressibleSchema",
        "tool 'probe' parameter 'value'",
    ),
    (
        "a type JSON Schema lacks",
        {"tools": [_with({"type": "tuple"})]},
        "UnexpressibleSchema",
        "tool 'probe' parameter 'value'",
    ),
    (
        "types with an object",
        {"tools": [_with({"type": ["string", {"a": 1}]})]},
        "UnexpressibleSchema",
        "tool 'probe' parameter 'value'",
    ),
    (
        "an enum that is a number",
        {"tools": [_with({"enum": 5})]},
        "UnexpressibleSchema",
        "tool 'probe' parameter 'value'",
    ),
    (
        "an enum that is a string",
        {"tools": [_with({"enum": "abc"})]},
        "UnexpressibleSchema",
        "tool 'probe' parameter 'value'",
    ),
    ("an empty enum", {"tools": [_with({"enum": []})]}, "UnexpressibleSchema", "tool 'probe' parameter 'value'"),
    ("an enum of lists", {"tools": [_with({"enum": [[1]]})]}, "UnexpressibleSchema", "tool 'probe' parameter 'value'"),
    (
        "a const object",
        {"tools": [_with({"const": {"a": 1}})]},
        "UnexpressibleSchema",
        "tool 'probe' parameter 'value'",
    ),
    ("anyOf a number", {"tools": [_with({"anyOf": 5})]}, "UnexpressibleSchema", "tool 'probe' parameter 'value'"),
    ("anyOf of numbers", {"tools": [_with({"anyOf": [5]})]}, "UnexpressibleSchema", "tool 'probe' parameter 'value'"),
    (
        "oneOf an object",
        {"tools": [_with({"oneOf": {"a": {}}})]},
        "UnexpressibleSchema",
        "tool 'probe' parameter 'value'",
    ),
    ("allOf a number", {"tools": [_with({"allOf": 5})]}, "UnexpressibleSchema", "tool 'probe' parameter 'value'"),
    (
        "a $ref that is a number",
        {"tools": [_with({"$ref": 5})]},
        "UnexpressibleSchema",
        "tool 'probe' parameter 'value'",
    ),
    (
        "a $ref elsewhere",
        {"tools": [_with({"$ref": "http://x/y"})]},
        "UnexpressibleSchema",
        "tool 'probe' parameter 'value'",
    ),
    (
        "a $ref to a number",
        {
            "tools": [
                _tool(schema={"type": "object", "properties": {"value": {"$ref": "#/$defs/A"}}, "$defs": {"A": 5}})
            ]
        },
        "UnexpressibleSchema",
        "tool 'probe' parameter 'value'",
    ),
    (
        "items of numbers",
        {"tools": [_with({"type": "array", "items": {"anyOf": [1]}})]},
        "UnexpressibleSchema",
        "tool 'probe' parameter 'value'",
    ),
]


def hostile_app(results: list[Any]) -> Starlette:
    """A server whose environment at ``/N`` answers every ``tools/list`` with ``results[N]``."""

    async def agent(websocket: WebSocket) -> None:
        result = results[websocket.path_params["case"]]
        await websocket.accept()
        try:
            while True:
                frame = json.loads(await websocket.receive_text())
                request = frame.get("data") or {}
                if frame.get("type") == "mcp":
                    answer = {"jsonrpc": "2.0", "id": request.get("id"), "result": result}
                    await websocket.send_text(json.dumps({"type": "mcp", "data": answer}))
                else:
                    data = {"observation": {}, "reward": None, "done": False}
                    await websocket.send_text(json.dumps({"type": "observation", "data": data}))
        except WebSocketDisconnect:
            return

    async def metadata(request: Any) -> JSONResponse:
        return JSONResponse({"name": "Hostile", "description": "answers tools/list badly"})

    return Starlette(routes=[WebSocketRoute("/{case:int}/ws", agent), Route("/{case:int}/metadata", metadata)])


@contextlib.contextmanager
def serve_hostile() -> Iterator[str]:
    """The server of every :data:`HOSTILE` listing: case N's base URL is ``URL/N``."""
    with serve_asgi(hostile_app([result for _, result, _, _ in HOSTILE])) as url:
        yield url
