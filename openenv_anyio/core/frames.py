"""Typed frames and their wire form: decode text into a frame, encode a frame into text.

Decoding is strict and total: any payload either becomes a typed frame or raises
:class:`ProtocolError` with the error code the peer should be told. Shapes are checked
against the spec's schemas, never by hand.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Final, TypeAlias

import orjson

from .errors import ErrorCode, ProtocolError
from .spec import ENTRY_POINTS, Spec, load_spec
from .validation import Validator, spec_validator

__all__ = [
    "ClientFrame",
    "Close",
    "Error",
    "Frame",
    "FrameCodec",
    "Observation",
    "Reset",
    "ServerFrame",
    "State",
    "StateRequest",
    "StateUpdate",
    "Step",
    "decode_client_frame",
    "decode_server_frame",
    "decode_ui_frame",
    "encode_frame",
    "parse_json",
]


@dataclass(frozen=True, slots=True)
class Reset:
    """``reset``: start a new episode; ``kwargs`` go to the environment's reset."""

    kwargs: Mapping[str, Any] = field(default_factory=dict)
    type: ClassVar[str] = "reset"

    def to_wire(self) -> dict[str, Any]:
        return {"type": "reset", "data": dict(self.kwargs)}


@dataclass(frozen=True, slots=True)
class Step:
    """``step``: send one action."""

    action: Mapping[str, Any]
    type: ClassVar[str] = "step"

    def to_wire(self) -> dict[str, Any]:
        return {"type": "step", "data": self.action}


@dataclass(frozen=True, slots=True)
class StateRequest:
    """``state`` sent by a client: ask for the current state."""

    type: ClassVar[str] = "state"

    def to_wire(self) -> dict[str, Any]:
        return {"type": "state"}


@dataclass(frozen=True, slots=True)
class Close:
    """``close``: end the session; no reply, the server closes with 1000."""

    type: ClassVar[str] = "close"

    def to_wire(self) -> dict[str, Any]:
        return {"type": "close"}


@dataclass(frozen=True, slots=True)
class Observation:
    """``observation``: the reply to reset and step."""

    observation: Mapping[str, Any]
    reward: float | bool | None = None
    done: bool = False
    type: ClassVar[str] = "observation"

    def to_wire(self) -> dict[str, Any]:
        return {
            "type": "observation",
            "data": {"observation": self.observation, "reward": self.reward, "done": self.done},
        }


@dataclass(frozen=True, slots=True)
class State:
    """``state`` sent by a server: ``data`` holds ``episode_id``, ``step_count`` and more."""

    data: Mapping[str, Any]
    type: ClassVar[str] = "state"

    @property
    def episode_id(self) -> str | None:
        return self.data.get("episode_id")

    @property
    def step_count(self) -> int:
        return int(self.data.get("step_count", 0))

    def to_wire(self) -> dict[str, Any]:
        return {"type": "state", "data": self.data}


@dataclass(frozen=True, slots=True)
class Error:
    """``error``: a request failed; ``extra`` holds keys beside ``message`` and ``code``."""

    code: str
    message: str
    extra: Mapping[str, Any] = field(default_factory=dict)
    type: ClassVar[str] = "error"

    @classmethod
    def from_protocol_error(cls, error: ProtocolError) -> Error:
        data = error.error_data()
        return cls(code=data.pop("code"), message=data.pop("message"), extra=data)

    def to_wire(self) -> dict[str, Any]:
        return {"type": "error", "data": {"message": self.message, "code": self.code, **self.extra}}


@dataclass(frozen=True, slots=True)
class StateUpdate:
    """``state_update`` on the UI channel: the episode's state for dashboards."""

    episode_state: Mapping[str, Any]
    type: ClassVar[str] = "state_update"

    def to_wire(self) -> dict[str, Any]:
        return {"type": "state_update", "episode_state": self.episode_state}


ClientFrame: TypeAlias = Reset | Step | StateRequest | Close
ServerFrame: TypeAlias = Observation | State | Error
Frame: TypeAlias = ClientFrame | ServerFrame | StateUpdate

_ORJSON_OPTIONS: Final = orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def parse_json(payload: str | bytes | bytearray | memoryview) -> Any:
    """Parse one JSON text; raise :class:`ProtocolError` (INVALID_JSON) when it is not.

    orjson parses; the standard library is the fallback for what orjson refuses but JSON
    allows (integers beyond 64 bits). NaN and Infinity are refused, as JSON says.
    """
    try:
        return orjson.loads(payload)
    except orjson.JSONDecodeError as first:
        try:
            text = payload if isinstance(payload, str) else bytes(payload).decode("utf-8")
            return json.loads(text, parse_constant=_reject_constant)
        except UnicodeDecodeError as exc:
            raise ProtocolError(ErrorCode.INVALID_JSON, f"Invalid JSON: not UTF-8 ({exc.reason})") from None
        except RecursionError:
            raise ProtocolError(ErrorCode.INVALID_JSON, "Invalid JSON: nesting too deep") from None
        except ValueError:
            raise ProtocolError(ErrorCode.INVALID_JSON, f"Invalid JSON: {first}") from None


def _json_default(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)  # pydantic models
    if callable(dump):
        return dump(mode="json")
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def dumps(value: Any) -> str:
    """JSON text for ``value`` (numpy arrays and scalars, dataclasses, pydantic models too)."""
    try:
        return orjson.dumps(value, default=_json_default, option=_ORJSON_OPTIONS).decode()
    except orjson.JSONEncodeError as exc:
        raise TypeError(f"cannot encode as JSON: {exc}") from exc


def _from_wire(obj: dict[str, Any]) -> Frame:
    kind = obj["type"]
    if kind == "step":
        return Step(obj["data"])
    if kind == "observation":
        data = obj["data"]
        return Observation(data["observation"], data["reward"], data["done"])
    if kind == "reset":
        return Reset(obj.get("data") or {})
    if kind == "error":
        data = dict(obj["data"])
        return Error(code=data.pop("code"), message=data.pop("message"), extra=data)
    if kind == "state":
        return State(obj["data"]) if "data" in obj else StateRequest()
    if kind == "close":
        return Close()
    return StateUpdate(obj["episode_state"])


class FrameCodec:
    """Decodes the frames of one entry point (``client-frame``, ``server-frame``, ``ui-frame``).

    Validation runs against the schema of the frame's own type (the dispatch the entry point
    describes), so an invalid frame is explained by exactly one frame schema.
    """

    def __init__(self, entry: str, *, spec: Spec | None = None) -> None:
        spec = spec or load_spec()
        self.entry = entry
        self._entry_validator = spec_validator(ENTRY_POINTS[entry], spec)
        self._by_type: dict[str, Validator] = {
            frame_type: spec_validator(relative, spec)
            for frame_type, relative in spec.frame_schemas(entry).items()
        }

    @property
    def frame_types(self) -> tuple[str, ...]:
        return tuple(self._by_type)

    def decode(self, payload: str | bytes) -> Frame:
        """Parse and validate one frame; raise :class:`ProtocolError` if it is not valid."""
        if not isinstance(payload, str):
            raise ProtocolError(
                ErrorCode.INVALID_JSON,
                "Binary frames are not part of the protocol: send JSON in a text frame",
            )
        return self.decode_value(parse_json(payload))

    def decode_value(self, obj: Any) -> Frame:
        """Validate an already parsed JSON value as a frame of this entry point."""
        if not isinstance(obj, dict):
            raise ProtocolError(
                ErrorCode.VALIDATION_ERROR,
                f"A frame must be a JSON object, not {_json_type(obj)}",
                keyword="type",
            )
        kind = obj.get("type")
        validator = self._by_type.get(kind) if isinstance(kind, str) else None
        if validator is None:
            shown = "" if kind is None else kind if isinstance(kind, str) else json.dumps(kind)
            raise ProtocolError(
                ErrorCode.UNKNOWN_TYPE,
                f"Unknown message type: {shown}" if kind is not None else "Frame has no type",
                pointer="/type",
                keyword="required" if kind is None else "enum",
            )
        validator.check(obj, what=f"{kind} frame")
        return _from_wire(obj)

    def is_valid(self, obj: Any) -> bool:
        """Fast verdict of the entry point's schema on a parsed value."""
        return self._entry_validator.is_valid(obj)


def _json_type(value: Any) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    return "null" if value is None else type(value).__name__


_codecs: dict[str, FrameCodec] = {}


def _codec(entry: str) -> FrameCodec:
    codec = _codecs.get(entry)
    if codec is None:
        codec = _codecs[entry] = FrameCodec(entry)
    return codec


def decode_client_frame(payload: str | bytes) -> ClientFrame:
    """Decode a frame a client sent on ``/ws`` (raises :class:`ProtocolError`)."""
    return _codec("client-frame").decode(payload)  # type: ignore[return-value]


def decode_server_frame(payload: str | bytes) -> ServerFrame:
    """Decode a frame a server sent on ``/ws`` (raises :class:`ProtocolError`)."""
    return _codec("server-frame").decode(payload)  # type: ignore[return-value]


def decode_ui_frame(payload: str | bytes) -> StateUpdate:
    """Decode a frame a server sent on ``/ws/ui`` (raises :class:`ProtocolError`)."""
    return _codec("ui-frame").decode(payload)  # type: ignore[return-value]


def encode_frame(frame: Frame) -> str:
    """The text of ``frame`` on the wire."""
    return dumps(frame.to_wire())
