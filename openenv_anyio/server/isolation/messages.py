"""The messages between a server and an environment's own process (``--isolate process``), sans I/O.

Each message is one JSON object (orjson) behind a 4-byte big-endian length. The server sends
requests and the process answers each with exactly one reply, in order; nothing else flows.
This module only turns messages into bytes and bytes into messages: whoever owns the socket
feeds what it reads to a :class:`MessageReader` and writes what :func:`encode_message` returns.

Requests (server to process)::

    {"op": "reset", "kwargs": {...}}     {"op": "step", "action": ...}     {"op": "state"}
    {"op": "list_tools"}                 {"op": "call_tool", "name": ..., "arguments": {...}}
    {"op": "close"}                      (the last request: the process exits after its reply)

Replies (process to server): first, once, ``{"ready": DESCRIPTION}`` or ``{"failed": FAULT}``
(the factory raised); then ``{"ok": VALUE}`` or ``{"error": FAULT}`` per request. A FAULT
says what went wrong where the environment runs (:class:`Fault`).
"""

from __future__ import annotations

import enum
import struct
from dataclasses import dataclass, field
from typing import Any, Final

import orjson

from ...core.frames import dumps

__all__ = ["HEADER", "MAX_MESSAGE_BYTES", "Fault", "FaultKind", "MessageError", "MessageReader", "Op", "encode_message"]

HEADER: Final = struct.Struct(">I")
#: The largest message either side accepts (an observation larger than this fails its request).
MAX_MESSAGE_BYTES: Final = 1 << 30


class Op(enum.StrEnum):
    """What a request asks of the environment's process."""

    RESET = "reset"
    STEP = "step"
    STATE = "state"
    LIST_TOOLS = "list_tools"
    CALL_TOOL = "call_tool"
    SNAPSHOT = "snapshot"
    RESTORE = "restore"
    CLOSE = "close"


class FaultKind(enum.StrEnum):
    """How a request failed in the environment's process."""

    RAISED = "raised"  # the environment raised an Exception (EXECUTION_ERROR, the session goes on)
    ABORTED = "aborted"  # it raised a BaseException such as SystemExit (SRV-FAULT-1: the session ends)
    REFUSED = "refused"  # a ProtocolError: the action broke the schema (VALIDATION_ERROR)
    RPC = "rpc"  # a tool call failed with a JSON-RPC error
    SNAPSHOT = "snapshot"  # snapshot() or restore() failed: a SnapshotError (details: size, limit)


@dataclass(frozen=True, slots=True)
class Fault:
    """A failure as one process tells the other: the exception's type name and text, the
    traceback (for the server's log only) and, by kind, the error's code and details."""

    kind: FaultKind
    type_name: str
    message: str
    traceback: str = ""
    code: Any = None  # ErrorCode value (REFUSED) or JSON-RPC code (RPC)
    details: dict[str, Any] = field(default_factory=dict)  # pointer/errors (REFUSED), data (RPC), size/limit (SNAPSHOT)

    def to_wire(self) -> dict[str, Any]:
        return {
            "kind": self.kind.value,
            "type": self.type_name,
            "message": self.message,
            "traceback": self.traceback,
            "code": self.code,
            "details": self.details,
        }

    @classmethod
    def from_wire(cls, wire: Any) -> Fault:
        if not isinstance(wire, dict):
            raise MessageError(f"a fault must be an object, not {type(wire).__name__}")
        try:
            return cls(
                FaultKind(wire["kind"]),
                str(wire["type"]),
                str(wire["message"]),
                str(wire.get("traceback", "")),
                wire.get("code"),
                dict(wire.get("details") or {}),
            )
        except (KeyError, ValueError, TypeError) as exc:
            raise MessageError(f"malformed fault: {exc!r}") from None


class MessageError(Exception):
    """The bytes on the channel are not a message (a peer bug, or a process that wrote to it)."""


def encode_message(message: dict[str, Any]) -> bytes:
    """The bytes of one message (raises ``TypeError`` for values JSON cannot hold)."""
    body = dumps(message).encode()
    if len(body) > MAX_MESSAGE_BYTES:
        raise TypeError(f"message of {len(body)} bytes is over the {MAX_MESSAGE_BYTES}-byte limit")
    return HEADER.pack(len(body)) + body


class MessageReader:
    """Bytes in, messages out: :meth:`feed` what was read, then take :meth:`next` until ``None``."""

    __slots__ = ("_buffer", "_limit")

    def __init__(self, limit: int = MAX_MESSAGE_BYTES) -> None:
        self._buffer = bytearray()
        self._limit = limit

    def feed(self, data: bytes) -> None:
        self._buffer += data

    def wanted(self) -> int:
        """How many more bytes complete the message being read (at least 1)."""
        buffer = self._buffer
        if len(buffer) < HEADER.size:
            return HEADER.size - len(buffer)
        size: int = HEADER.unpack_from(buffer)[0]
        return max(1, HEADER.size + size - len(buffer))

    def next(self) -> dict[str, Any] | None:
        """The next complete message, or ``None`` until more bytes are fed."""
        buffer = self._buffer
        if len(buffer) < HEADER.size:
            return None
        (size,) = HEADER.unpack_from(buffer)
        if size > self._limit:
            raise MessageError(f"message of {size} bytes announced, over the {self._limit}-byte limit")
        end = HEADER.size + size
        if len(buffer) < end:
            return None
        body = bytes(buffer[HEADER.size : end])
        del buffer[:end]
        try:
            message = orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            raise MessageError(f"message is not JSON: {exc}") from None
        if not isinstance(message, dict):
            raise MessageError(f"a message must be a JSON object, not {type(message).__name__}")
        return message
