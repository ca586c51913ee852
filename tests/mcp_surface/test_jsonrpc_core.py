"""The sans-IO JSON-RPC layer, its code registry, and tool declarations (no sockets)."""

from __future__ import annotations

from typing import Any

import pytest

from openenv_anyio.client import RpcError, ToolFailed
from openenv_anyio.client.errors import RpcInvalidParams
from openenv_anyio.core import RpcCode, RpcFailure, Validator, load_spec, read_rpc_request, spec_validator
from openenv_anyio.core.jsonrpc import McpMethod
from openenv_anyio.tools import declared_tools, tool

from .tool_envs import NotesEnv

SPEC = load_spec()


def test_rpc_code_enum_equals_the_registry() -> None:  # MCP-ERR-1
    registry = SPEC.document("jsonrpc-error-codes.json")
    assert [int(code) for code in RpcCode] == [entry["const"] for entry in registry["anyOf"]]


def test_every_rpc_code_has_a_client_error_class() -> None:
    for code in RpcCode:
        error = RpcError.from_error({"code": int(code), "message": "m", "data": {"tool": "t"}})
        assert type(error) is not RpcError and error.rpc_code is code
        assert (error.code, error.message, error.data) == (int(code), "m", {"tool": "t"})
    assert isinstance(RpcError.from_error({"code": -32603, "message": "boom"}), ToolFailed)
    assert type(RpcError.from_error({"code": 12, "message": "?"})) is RpcError


def test_methods_named_in_the_schema_are_the_enum() -> None:
    described = SPEC.document("jsonrpc/request.json")["properties"]["method"]["description"]
    assert all(method.value in described for method in McpMethod)


@pytest.mark.parametrize(
    ("text", "code", "request_id"),
    [
        ("{", RpcCode.PARSE_ERROR, None),
        ("NaN", RpcCode.PARSE_ERROR, None),
        ("[]", RpcCode.INVALID_REQUEST, None),
        ('{"jsonrpc":"2.0","id":3}', RpcCode.INVALID_REQUEST, 3),
        ('{"jsonrpc":"2.0","id":true,"method":"tools/list"}', RpcCode.INVALID_REQUEST, None),
        ('{"jsonrpc":"2.0","id":"a","method":"tools/list","params":[1]}', RpcCode.INVALID_PARAMS, "a"),
        ('{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"arguments":{}}}', RpcCode.INVALID_PARAMS, "a"),
        ('{"jsonrpc":"2.0","id":"a","method":"openenv/session/close"}', RpcCode.INVALID_PARAMS, "a"),
        (
            '{"jsonrpc":"2.0","id":"a","method":"openenv/session/close","params":{"session_id":""}}',
            RpcCode.INVALID_PARAMS,
            "a",
        ),
    ],
)
def test_bad_requests_become_the_right_error(text: str, code: RpcCode, request_id: Any) -> None:
    with pytest.raises(RpcFailure) as failure:
        read_rpc_request(text)
    response = failure.value.response()
    assert response["error"]["code"] == code and response["id"] == request_id
    assert spec_validator("jsonrpc/response.json").is_valid(response)


def test_a_good_request_is_read() -> None:
    request = read_rpc_request('{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"t","session_id":"s"}}')
    assert (request.method, request.id, request.session_id()) == ("tools/call", 9, "s")
    assert read_rpc_request('{"jsonrpc":"2.0","method":"tools/list"}').params == {}


def test_tool_schemas_come_from_annotations_or_are_given() -> None:
    tools = declared_tools(NotesEnv)
    assert list(tools) == ["remember", "recall", "shout"]
    assert tools["remember"].input_schema == {
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
        "additionalProperties": False,
    }
    assert tools["shout"].input_schema["properties"]["times"] == {"type": "integer", "default": 1}
    assert tools["recall"].input_schema["properties"]["index"]["minimum"] == 0
    for spec in tools.values():  # every derived schema is a usable JSON Schema
        Validator(spec.input_schema)
    assert declared_tools(NotesEnv()) == tools


def test_optional_and_union_annotations() -> None:
    class Env:
        @tool(name="find", description="Find.")
        def lookup(self, key: str | None, limit: int | None = None, *rest: Any, **more: Any) -> None: ...

    spec = declared_tools(Env)["find"]
    assert spec.method_name == "lookup" and spec.description == "Find."
    assert spec.input_schema["properties"] == {
        "key": {"anyOf": [{"type": "string"}, {"type": "null"}]},
        "limit": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None},
    }
    assert spec.input_schema["required"] == ["key"]


def test_invalid_params_is_a_client_error_class() -> None:
    assert isinstance(RpcError.from_error({"code": -32602, "message": "x"}), RpcInvalidParams)
