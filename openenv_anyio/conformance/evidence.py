"""The wire log of a conformance run: every frame sent and received, as evidence.

Each received frame is validated against the spec (``server-frame.json`` on ``/ws``,
``ui-frame.json`` on ``/ws/ui``) with the core's :class:`~openenv_anyio.core.Validator`;
faults keep their JSON pointer and failing keyword. Long payloads are shortened in the
log with their full length noted.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from ..core import ProtocolError, parse_json, sender_validator, spec_validator

__all__ = ["Fault", "Received", "Recorder", "WireEvent", "preview"]

PREVIEW_CHARS = 300

_ENTRY_FOR_CHANNEL = {"/ws": "server-frame.json", "/ws/ui": "ui-frame.json"}


def preview(payload: str | bytes, limit: int = PREVIEW_CHARS) -> str:
    """A printable, bounded rendering of a payload; long ones note their full length."""
    text = payload if isinstance(payload, str) else "0x" + bytes(payload[: limit // 2]).hex()
    if len(payload) <= limit and (isinstance(payload, str) or len(payload) * 2 <= limit):
        return text
    return f"{text[:limit]}... ({len(payload)} {'chars' if isinstance(payload, str) else 'bytes'})"


@dataclass(frozen=True, slots=True)
class Fault:
    """Why a received frame breaks the spec: JSON pointer, schema keyword, message."""

    pointer: str
    keyword: str
    message: str

    def as_dict(self) -> dict[str, str]:
        return {"pointer": self.pointer, "keyword": self.keyword, "message": self.message}

    def __str__(self) -> str:
        return f"{self.pointer or '/'}: {self.keyword}: {self.message}"


@dataclass(frozen=True, slots=True)
class WireEvent:
    """One thing seen on the wire: a frame sent or received, a close, an HTTP exchange."""

    t: float  # seconds since the run started
    case_id: str
    channel: str  # "/ws", "/ws/ui" or "http"
    connection: int
    direction: str  # "sent", "received" or "closed"
    kind: str  # "text", "binary", "close", "request", "response"
    length: int | None = None
    preview: str = ""
    close_code: int | None = None
    close_reason: str | None = None
    faults: tuple[Fault, ...] = ()
    #: members the spec does not name in open objects: ignored, reported as notes (COMPAT-5)
    unknown_members: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {
            "t": round(self.t, 6),
            "channel": self.channel,
            "connection": self.connection,
            "direction": self.direction,
            "kind": self.kind,
            "length": self.length,
            "preview": self.preview,
            "close_code": self.close_code,
            "close_reason": self.close_reason,
            "faults": [fault.as_dict() for fault in self.faults],
        }

    def __str__(self) -> str:
        arrow = {"sent": "->", "received": "<-", "closed": "xx"}.get(self.direction, "  ")
        text = f"{self.t:8.3f}s {self.channel}#{self.connection} {arrow} {self.kind}"
        if self.close_code is not None or self.kind == "close":
            text += f" code={self.close_code} reason={self.close_reason!r}"
        if self.preview:
            text += f" {self.preview}"
        for fault in self.faults:
            text += f"\n{'':12}schema fault {fault}"
        return text


@dataclass(frozen=True, slots=True)
class Received:
    """A frame the server sent: its parsed value (None if not JSON) and its schema faults."""

    payload: str | bytes
    value: Any
    faults: tuple[Fault, ...]
    unknown_members: tuple[str, ...] = ()

    @property
    def valid(self) -> bool:
        return not self.faults

    @property
    def type(self) -> Any:
        return self.value.get("type") if isinstance(self.value, dict) else None

    @property
    def data(self) -> Any:
        return self.value.get("data") if isinstance(self.value, dict) else None

    def describe(self) -> str:
        return preview(self.payload, 160)


def validate_server_frame(channel: str, payload: str | bytes) -> tuple[Any, tuple[Fault, ...]]:
    """Parse ``payload`` and check it against the entry point of ``channel``."""
    if not isinstance(payload, str):
        return None, (Fault("", "binary", "a server frame must be a text frame (WS-CONN-3)"),)
    try:
        value = parse_json(payload)
    except ProtocolError as exc:
        return None, (Fault("", "json", exc.message),)
    validator = spec_validator(_ENTRY_FOR_CHANNEL[channel])
    if validator.is_valid(value):
        return value, ()
    faults = validator.faults(value) or []
    return value, tuple(Fault(f.pointer, f.keyword, f.message) for f in faults) or (
        Fault("", "schema", "does not match the schema"),
    )


def unknown_members(channel: str, value: Any) -> tuple[str, ...]:
    """Where a valid server frame carries members the spec does not name (open objects, the
    sender view refuses them): JSON pointers, for a note (COMPAT-5)."""
    return tuple(sender_validator(_ENTRY_FOR_CHANNEL[channel]).unexpected_members(value))


@dataclass(slots=True)
class Recorder:
    """Collects the wire events of a run and tags each with the case that caused it."""

    started: float = field(default_factory=time.monotonic)
    case_id: str = "setup"
    events: list[WireEvent] = field(default_factory=list)
    #: secrets a sent frame may carry (the validation token, VAL-OPEN-2): never in a preview
    secrets: tuple[str, ...] = field(default=(), repr=False)
    _connections: int = 0

    def new_connection(self) -> int:
        self._connections += 1
        return self._connections

    def add(self, channel: str, connection: int, direction: str, kind: str, **fields: Any) -> WireEvent:
        event = WireEvent(
            t=time.monotonic() - self.started,
            case_id=self.case_id,
            channel=channel,
            connection=connection,
            direction=direction,
            kind=kind,
            **fields,
        )
        self.events.append(event)
        return event

    def sent(self, channel: str, connection: int, payload: str | bytes) -> None:
        kind = "text" if isinstance(payload, str) else "binary"
        shown = payload
        for secret in self.secrets:
            shown = shown.replace(secret, "<redacted>") if isinstance(shown, str) else shown
        self.add(channel, connection, "sent", kind, length=len(payload), preview=preview(shown))

    def received(self, channel: str, connection: int, payload: str | bytes) -> Received:
        value, faults = validate_server_frame(channel, payload)
        unknown = () if faults else unknown_members(channel, value)
        kind = "text" if isinstance(payload, str) else "binary"
        self.add(
            channel,
            connection,
            "received",
            kind,
            length=len(payload),
            preview=preview(payload),
            faults=faults,
            unknown_members=unknown,
        )
        return Received(payload, value, faults, unknown)

    def for_case(self, case_id: str) -> list[WireEvent]:
        return [event for event in self.events if event.case_id == case_id]
