"""JSON-RPC 2.0 for the MCP surface (``POST /mcp``, ``WS /mcp``, ``mcp`` frames on ``/ws``).

Sans-IO: read a request (parse, check against ``spec/v1/jsonrpc/request.json``) into an
:class:`RpcRequest`, or raise :class:`RpcFailure` carrying the JSON-RPC error the peer should
get; build response objects. Which method does what is the server's business; the method
names, the reserved tool names and the error-code registry (``spec/v1/jsonrpc-error-codes.json``,
mirrored by :class:`RpcCode` and kept equal by a test) are the protocol's and live here.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, TypeAlias

from .errors import ProtocolError, clip_message
from .frames import parse_json
from .validation import MAX_FAULTS, SchemaFault, spec_validator

__all__ = [
    "REQUEST_SCHEMA",
    "RESERVED_TOOL_NAMES",
    "McpMethod",
    "RpcCode",
    "RpcFailure",
    "RpcId",
    "RpcRequest",
    "decode_rpc_request",
    "read_rpc_request",
    "rpc_error",
    "rpc_result",
]

REQUEST_SCHEMA: Final = "jsonrpc/request.json"
RESPONSE_SCHEMA: Final = "jsonrpc/response.json"

#: A JSON-RPC id: a string, an integer, or null (absent, or the request could not be read).
RpcId: TypeAlias = "str | int | None"

#: Tool names an environment may not use: they are the protocol's own requests (MCP-TOOL-2).
RESERVED_TOOL_NAMES: Final = frozenset({"reset", "step", "state", "close"})


class RpcCode(enum.IntEnum):
    """The JSON-RPC error-code registry (``spec/v1/jsonrpc-error-codes.json``)."""

    PARSE_ERROR = -32700
    INVALID_REQUEST = -32600
    METHOD_NOT_FOUND = -32601
    INVALID_PARAMS = -32602
    INTERNAL_ERROR = -32603
    SERVER_ERROR = -32000
    EPISODE_MISMATCH = -32001


class McpMethod(enum.StrEnum):
    """The methods the protocol defines (MCP-RPC-2)."""

    TOOLS_LIST = "tools/list"
    TOOLS_CALL = "tools/call"
    SESSION_CREATE = "openenv/session/create"
    SESSION_CLOSE = "openenv/session/close"


class RpcFailure(Exception):
    """A request failed: the JSON-RPC error its response carries."""

    def __init__(self, code: RpcCode, message: str, data: Any = None, *, request_id: RpcId = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = clip_message(message)
        self.data = data
        self.request_id = request_id

    def response(self, request_id: RpcId = None) -> dict[str, Any]:
        """The error response (to ``request_id``, or the id read from the request)."""
        return rpc_error(request_id if request_id is not None else self.request_id, self.code, self.message, self.data)


@dataclass(frozen=True, slots=True)
class RpcRequest:
    """One JSON-RPC request that matched the schema."""

    method: str
    params: Mapping[str, Any] = field(default_factory=dict)
    id: RpcId = None

    def session_id(self) -> str | None:
        """``params.session_id`` when given."""
        value = self.params.get("session_id")
        return value if isinstance(value, str) else None


def _id_of(value: Any) -> RpcId:
    """The id of a (possibly invalid) request, when it is a usable one."""
    if isinstance(value, Mapping):
        candidate = value.get("id")
        if isinstance(candidate, str) or (isinstance(candidate, int) and not isinstance(candidate, bool)):
            return candidate
    return None


def decode_rpc_request(value: Any) -> RpcRequest:
    """Check a parsed JSON value as a request; raise :class:`RpcFailure` when it is not one.

    Not an object, or wrong ``jsonrpc``/``method``/``id``: -32600. Params of a known method
    that do not match their schema: -32602. The failure carries the request's id when it
    could be read.
    """
    request_id = _id_of(value)
    validator = spec_validator(REQUEST_SCHEMA)
    if not validator.is_valid(value):
        faults = validator.faults(value) or [SchemaFault("", "schema", "does not match the schema", "")]
        first = faults[0]
        # a fault in params, or in what a known method requires of them (the if/then branches)
        about_params = first.pointer.startswith("/params") or "/then/" in first.schema_path
        raise RpcFailure(
            RpcCode.INVALID_PARAMS if about_params else RpcCode.INVALID_REQUEST,
            f"Invalid {'params' if about_params else 'request'} at {first.pointer or '/'}: {first.message}",
            {"errors": [fault.as_error_entry() for fault in faults[:MAX_FAULTS]]},
            request_id=request_id,
        )
    params = value.get("params", {})
    return RpcRequest(method=value["method"], params=params, id=value.get("id"))


def read_rpc_request(payload: str | bytes) -> RpcRequest:
    """Parse and check one request's text (raises :class:`RpcFailure`; -32700 for bad JSON)."""
    try:
        value = parse_json(payload)
    except ProtocolError as error:
        raise RpcFailure(RpcCode.PARSE_ERROR, f"Parse error: {error.message}") from None
    return decode_rpc_request(value)


def rpc_result(request_id: RpcId, result: Any) -> dict[str, Any]:
    """A success response."""
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def rpc_error(request_id: RpcId, code: RpcCode, message: str, data: Any = None) -> dict[str, Any]:
    """An error response; ``data`` is left out when there is none."""
    error: dict[str, Any] = {"code": int(code), "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": error}
