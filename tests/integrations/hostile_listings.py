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


#: answers that are no list of named tools (EnvironmentUnavailable)
_NOT_A_LISTING: list[tuple[str, Any]] = [
    ("result not an object", "tools"),
    ("no tools member", {}),
    ("tools not a list", {"tools": "probe"}),
    ("a tool that is a number", {"tools": [5]}),
    ("a tool without a name", {"tools": [{"description": "x"}]}),
    ("a name that is a number", {"tools": [_tool(5)]}),
    ("a schema that is a list", {"tools": [_tool(schema=[1, 2])]}),
    ("a schema that is a string", {"tools": [_tool(schema="object")]}),
]

#: tools no method can carry (UnexpressibleSchema), with the start of the message
_NO_METHOD: list[tuple[str, list[Any], str]] = [
    ("two tools, one name", [_tool(), _tool()], "http://"),
    ("a name with a dash", [_tool("pro-be")], "tool name 'pro-be'"),
    ("a private name", [_tool("_probe")], "tool name '_probe'"),
    ("a keyword name", [_tool("class")], "tool name 'class'"),
    ("the instance's reset", [_tool("reset")], "tool 'reset' would hide"),
    ("the instance's get_reward", [_tool("get_reward")], "tool 'get_reward' would hide"),
    ("properties a list", [_tool(schema={"type": "object", "properties": []})], "tool 'probe'"),
    ("properties null", [_tool(schema={"type": "object", "properties": None})], "tool 'probe'"),
    ("top type array", [_tool(schema={"type": "array"})], "tool 'probe'"),
    ("top type an object", [_tool(schema={"type": {"x": 1}})], "tool 'probe'"),
    ("top anyOf", [_tool(schema={"anyOf": [{"type": "object"}]})], "tool 'probe'"),
    ("required a number", [_tool(schema={"type": "object", "properties": {}, "required": 5})], "tool 'probe'"),
    ("required a string", [_tool(schema={"type": "object", "properties": {}, "required": "value"})], "tool 'probe'"),
    ("required of objects", [_tool(schema={"type": "object", "properties": {}, "required": [{}]})], "tool 'probe'"),
    (
        "a parameter named self",
        [_tool(schema={"type": "object", "properties": {"self": {}}})],
        "tool 'probe' parameter 'self'",
    ),
    (
        "a parameter with a dash",
        [_tool(schema={"type": "object", "properties": {"a-b": {}}})],
        "tool 'probe' parameter 'a-b'",
    ),
    (
        "a $ref to a number",
        [_tool(schema={"type": "object", "properties": {"value": {"$ref": "#/$defs/A"}}, "$defs": {"A": 5}})],
        "tool 'probe' parameter 'value'",
    ),
]

#: parameter schemas no annotation can carry (UnexpressibleSchema naming the parameter)
_BAD_PARAMETER: list[tuple[str, object]] = [
    ("a parameter schema a number", 5),
    ("a type that is an object", {"type": {"x": 1}}),
    ("a type that is a number", {"type": 5}),
    ("a type JSON Schema lacks", {"type": "tuple"}),
    ("types with an object", {"type": ["string", {"a": 1}]}),
    ("an enum that is a number", {"enum": 5}),
    ("an enum that is a string", {"enum": "abc"}),
    ("an empty enum", {"enum": []}),
    ("an enum of lists", {"enum": [[1]]}),
    ("a const object", {"const": {"a": 1}}),
    ("anyOf a number", {"anyOf": 5}),
    ("anyOf of numbers", {"anyOf": [5]}),
    ("oneOf an object", {"oneOf": {"a": {}}}),
    ("allOf a number", {"allOf": 5}),
    ("a $ref that is a number", {"$ref": 5}),
    ("a $ref elsewhere", {"$ref": "http://x/y"}),
    ("items of numbers", {"type": "array", "items": {"anyOf": [1]}}),
]

#: (what it is, the tools/list result, the error's class name, the start of its message)
HOSTILE: list[tuple[str, Any, str, str]] = [
    *[(what, result, "EnvironmentUnavailable", "cannot list the tools of") for what, result in _NOT_A_LISTING],
    *[(what, {"tools": tools}, "UnexpressibleSchema", start) for what, tools, start in _NO_METHOD],
    *[
        (what, {"tools": [_with(schema)]}, "UnexpressibleSchema", "tool 'probe' parameter 'value'")
        for what, schema in _BAD_PARAMETER
    ],
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
