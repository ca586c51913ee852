"""Typed frames and their wire form: decode text into a frame, encode a frame into text.

Decoding is strict and total: any payload either becomes a typed frame or raises
:class:`ProtocolError` with the error code the peer should be told. Shapes are checked
against the spec's schemas, never by hand.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Final, TypeAlias, assert_never

import orjson

from .errors import ErrorCode, ProtocolError, clip_message
from .slot_setters import new_instance, slot_setters
from .spec import ENTRY_POINTS, Spec, load_spec, sender_view
from .validation import Validator, spec_validator

__all__ = [
    "ClientFrame",
    "Close",
    "Error",
    "Frame",
    "FrameCodec",
    "MEMBER_ALIASES",
    "MemberAlias",
    "Mcp",
    "Observation",
    "Reset",
    "ServerFrame",
    "Session",
    "State",
    "StateRequest",
    "SessionClosed",
    "SessionOutcome",
    "StateUpdate",
    "Step",
    "Validation",
    "ValidationOpen",
    "ValidationOpened",
    "ValidationRead",
    "check_sendable",
    "decode_client_frame",
    "decode_server_frame",
    "decode_ui_frame",
    "encode_frame",
    "json_type",
    "parse_json",
]


def _extended(wire: dict[str, Any], request_id: str | None, episode_id: str | None) -> dict[str, Any]:
    """``wire`` plus the resume extension's top-level members when set (never on base connections)."""
    if request_id is not None:
        wire["request_id"] = request_id
    if episode_id is not None:
        wire["episode_id"] = episode_id
    return wire


@dataclass(frozen=True, slots=True)
class Reset:
    """``reset``: start a new episode; ``kwargs`` go to the environment's reset.

    ``request_id`` belongs to the resume extension (``EXT-REQ-1``, negotiated connections).
    """

    kwargs: Mapping[str, Any] = field(default_factory=dict)
    request_id: str | None = None
    type: ClassVar[str] = "reset"

    def to_wire(self) -> dict[str, Any]:
        return _extended({"type": "reset", "data": dict(self.kwargs)}, self.request_id, None)


@dataclass(frozen=True, slots=True)
class Step:
    """``step``: send one action.

    ``request_id`` and ``episode_id`` belong to the resume extension (``EXT-REQ-1``,
    ``EXT-EP-1``; negotiated connections only).
    """

    action: Mapping[str, Any]
    request_id: str | None = None
    episode_id: str | None = None
    type: ClassVar[str] = "step"

    def to_wire(self) -> dict[str, Any]:
        return _extended({"type": "step", "data": self.action}, self.request_id, self.episode_id)


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
    """``observation``: the reply to reset and step.

    ``request_id`` (the answered request's) and ``episode_id`` (after a reset) belong to the
    resume extension (``EXT-REQ-2``, ``EXT-EP-2``); absent on base connections.
    """

    observation: Mapping[str, Any]
    reward: float | bool | None = None
    done: bool = False
    request_id: str | None = None
    episode_id: str | None = None
    #: the environment's metadata for this observation; sent only when non-empty (WS-OBS-2)
    metadata: Mapping[str, Any] | None = None
    type: ClassVar[str] = "observation"

    def to_wire(self) -> dict[str, Any]:
        data: dict[str, Any] = {"observation": self.observation, "reward": self.reward, "done": self.done}
        if self.metadata:
            data["metadata"] = self.metadata
        return _extended({"type": "observation", "data": data}, self.request_id, self.episode_id)


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
    request_id: str | None = None  # resume extension: the answered request's id (EXT-REQ-2)
    type: ClassVar[str] = "error"

    @classmethod
    def from_protocol_error(cls, error: ProtocolError) -> Error:
        data = error.error_data()
        return cls(code=data.pop("code"), message=data.pop("message"), extra=data)

    def to_wire(self) -> dict[str, Any]:
        data: dict[str, Any] = {"message": self.message, "code": str(self.code)}
        data.update((key, value) for key, value in self.extra.items() if key not in data)
        if self.request_id is not None:
            return {"type": "error", "data": data, "request_id": self.request_id}
        return {"type": "error", "data": data}


@dataclass(frozen=True, slots=True)
class Session:
    """``session`` (resume extension, ``EXT-SES-1``): a negotiated connection's first frame.

    Names the session, the secret token that resumes it, and whether this connection
    continues an existing session. ``data`` may carry more members.
    """

    session_id: str
    resume_token: str
    resumed: bool
    resume_grace_s: float
    last_request_id: str | None = None
    episode_id: str | None = None
    type: ClassVar[str] = "session"

    def to_wire(self) -> dict[str, Any]:
        return {
            "type": "session",
            "data": {
                "session_id": self.session_id,
                "resume_token": self.resume_token,
                "resumed": self.resumed,
                "resume_grace_s": self.resume_grace_s,
                "last_request_id": self.last_request_id,
                "episode_id": self.episode_id,
            },
        }

    def __repr__(self) -> str:  # never show the whole secret
        return f"Session({self.session_id!r}, resumed={self.resumed}, token=...)"


@dataclass(frozen=True, slots=True)
class Mcp:
    """``mcp``: a JSON-RPC 2.0 request (client) or response (server) in ``data`` (MCP-WS-1).

    The frame layer checks only the envelope; the request inside is read by
    :func:`~openenv_anyio.core.jsonrpc.decode_rpc_request`, which answers a bad one with a
    JSON-RPC error rather than an error frame (MCP-WS-2).
    """

    data: Mapping[str, Any]
    type: ClassVar[str] = "mcp"

    def to_wire(self) -> dict[str, Any]:
        return {"type": "mcp", "data": self.data}


@dataclass(frozen=True, slots=True)
class ValidationOpen:
    """``validation_open`` sent by a client (validation telemetry, ``VAL-OPEN-1``): record
    this session, authorised by the server's validation ``token``."""

    token: str = field(repr=False)
    schema_version: int = 1
    type: ClassVar[str] = "validation_open"

    def to_wire(self) -> dict[str, Any]:
        return {"type": "validation_open", "data": {"schema_version": self.schema_version, "token": self.token}}


@dataclass(frozen=True, slots=True)
class ValidationOpened:
    """``validation_open`` sent by a server: the session is recorded; ``capability`` reads it."""

    capability: str = field(repr=False)
    type: ClassVar[str] = "validation_open"

    def to_wire(self) -> dict[str, Any]:
        return {"type": "validation_open", "data": {"capability": self.capability}}


@dataclass(frozen=True, slots=True)
class ValidationRead:
    """``validation_read`` (``VAL-READ-1``): ask what the server observed of the session."""

    capability: str = field(repr=False)
    schema_version: int = 1
    type: ClassVar[str] = "validation_read"

    def to_wire(self) -> dict[str, Any]:
        return {
            "type": "validation_read",
            "data": {"schema_version": self.schema_version, "capability": self.capability},
        }


@dataclass(frozen=True, slots=True)
class Validation:
    """``validation``: the session's telemetry (seed report, trajectory record) in ``data``."""

    data: Mapping[str, Any]
    type: ClassVar[str] = "validation"

    def to_wire(self) -> dict[str, Any]:
        return {"type": "validation", "data": self.data}


@dataclass(frozen=True, slots=True)
class StateUpdate:
    """``state_update`` on the UI channel: the episode's state for dashboards."""

    episode_state: Mapping[str, Any]
    type: ClassVar[str] = "state_update"

    def to_wire(self) -> dict[str, Any]:
        return {"type": "state_update", "episode_state": self.episode_state}


class SessionOutcome(enum.Enum):
    """How a session ended, as dashboards (``session_closed``'s ``reason``, ``UI-8``), logs and
    metrics name it: the one registry of session outcomes."""

    CLOSED = "closed"  # the client closed it, or its connection's end ended it
    EXPIRED = "expired"  # nobody came back in time: a dropped resumable session, an idle hosted one
    SHUTDOWN = "shutdown"  # the server is stopping
    HANDED_OVER = "handed_over"  # the server is stopping and kept it in its session store (EXT-HAND-1)


@dataclass(frozen=True, slots=True)
class SessionClosed:
    """``session_closed`` on the UI channel (dashboards, ``UI-8``): a watched session ended."""

    session_id: str
    reason: str
    type: ClassVar[str] = "session_closed"

    def to_wire(self) -> dict[str, Any]:
        return {"type": "session_closed", "session_id": self.session_id, "reason": self.reason}


UiFrame: TypeAlias = StateUpdate | SessionClosed
ClientFrame: TypeAlias = Reset | Step | StateRequest | Close | Mcp | ValidationOpen | ValidationRead
ServerFrame: TypeAlias = Observation | State | Error | Session | Mcp | ValidationOpened | Validation
Frame: TypeAlias = ClientFrame | ServerFrame | UiFrame

_ORJSON_OPTIONS: Final = orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS


def parse_json(payload: str | bytes | bytearray | memoryview) -> Any:
    """Parse one JSON text (RFC 8259); raise :class:`ProtocolError` (INVALID_JSON) when it is not.

    One parser (orjson) decides, so every peer of this core agrees on what is JSON. Its
    limits are the protocol's (``WS-CONN-5``): nesting deeper than 1024 levels, the
    literals NaN and Infinity, numbers beyond the range of a double, unpaired surrogate
    escapes and invalid UTF-8 are refused. Integers up to 64 bits stay exact; larger ones
    become the nearest double, as in most JSON stacks.
    """
    try:
        return orjson.loads(payload)
    except orjson.JSONDecodeError as exc:
        reason = clip_message(f"Invalid JSON: {exc}")
    except TypeError:  # not text at all (e.g. None): the caller broke the contract
        reason = f"Invalid JSON: expected text, got {type(payload).__name__}"
    # Raised outside the handler: the parser's exception holds the whole text (``doc``), and
    # as the new error's context it would keep it, in a reference cycle through this frame,
    # until a full collection.
    raise ProtocolError(ErrorCode.INVALID_JSON, reason)


def _json_default(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)  # pydantic models
    if callable(dump):
        return dump(mode="json")
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def dumps(value: Any) -> str:
    """JSON text for ``value`` (numpy arrays and scalars, dataclasses, pydantic models too).

    JSON has no NaN or Infinity: they are written as ``null`` (``WS-CONN-5``), as
    openenv-core (pydantic) does, so a frame is always valid JSON and a stray NaN in an
    observation never fails a step. Raises :class:`TypeError` for values JSON cannot hold.
    """
    try:
        return orjson.dumps(value, default=_json_default, option=_ORJSON_OPTIONS).decode()
    except orjson.JSONEncodeError as exc:
        raise TypeError(f"cannot encode as JSON: {exc}") from exc


# The two frames of every step, built without their frozen __init__ (see ``slot_setters``).
_step_action, _step_request_id, _step_episode_id = slot_setters(Step)
(
    _observation_observation,
    _observation_reward,
    _observation_done,
    _observation_request_id,
    _observation_episode_id,
    _observation_metadata,
) = slot_setters(Observation)


def _step(obj: dict[str, Any]) -> Step:
    """``Step(...)`` of a validated ``step`` frame (every field set)."""
    frame: Step = new_instance(Step)
    _step_action(frame, obj["data"])
    _step_request_id(frame, obj.get("request_id"))
    _step_episode_id(frame, obj.get("episode_id"))
    return frame


def _observation(obj: dict[str, Any]) -> Observation:
    """``Observation(...)`` of a validated ``observation`` frame (every field set)."""
    data = obj["data"]
    frame: Observation = new_instance(Observation)
    _observation_observation(frame, data["observation"])
    _observation_reward(frame, data["reward"])
    _observation_done(frame, data["done"])
    _observation_request_id(frame, obj.get("request_id"))
    _observation_episode_id(frame, obj.get("episode_id"))
    _observation_metadata(frame, data.get("metadata"))
    return frame


def _from_wire(obj: dict[str, Any]) -> Frame:
    """The typed frame of a validated wire object; its ``type`` must be one the spec lists."""
    match obj["type"]:
        case "step":
            return _step(obj)
        case "observation":
            return _observation(obj)
        case "reset":
            return Reset(obj.get("data") or {}, obj.get("request_id"))
        case "error":
            data = dict(obj["data"])
            return Error(
                code=data.pop("code"), message=data.pop("message"), extra=data, request_id=obj.get("request_id")
            )
        case "session":
            data = obj["data"]
            return Session(
                data["session_id"],
                data["resume_token"],
                data["resumed"],
                data["resume_grace_s"],
                data["last_request_id"],
                data.get("episode_id"),
            )
        case "state":
            return State(obj["data"]) if "data" in obj else StateRequest()
        case "close":
            return Close()
        case "mcp":
            return Mcp(obj["data"])
        case "validation_open":  # only the server's carries a capability (the client's is closed)
            data = obj["data"]
            if "capability" in data:
                return ValidationOpened(data["capability"])
            return ValidationOpen(data["token"], data["schema_version"])
        case "validation_read":
            return ValidationRead(obj["data"]["capability"], obj["data"]["schema_version"])
        case "validation":
            return Validation(obj["data"])
        case "state_update":
            return StateUpdate(obj["episode_state"])
        case "session_closed":
            return SessionClosed(obj["session_id"], obj["reason"])
        case other:  # a frame type the spec gained without a class here: never a silent default
            raise _unknown_type(other)


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
            frame_type: spec_validator(relative, spec) for frame_type, relative in spec.frame_schemas(entry).items()
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
        """Validate an already parsed JSON value as a frame of this entry point.

        A frame that spells a member the deprecated way (:data:`MEMBER_ALIASES`) gets a
        hint in its VALIDATION_ERROR message saying what to write instead.
        """
        if not isinstance(obj, dict):
            raise ProtocolError(
                ErrorCode.VALIDATION_ERROR,
                f"A frame must be a JSON object, not {_with_article(json_type(obj))}",
                keyword="type",
            )
        kind = obj.get("type")
        validator = self._by_type.get(kind) if isinstance(kind, str) else None
        if validator is None:
            raise _unknown_type(kind)
        assert isinstance(kind, str)  # a validator exists only for a string type
        try:
            validator.check(obj, what=f"{kind} frame")
        except ProtocolError as error:
            raise _with_alias_hint(error, kind, obj) from None
        return _from_wire(obj)

    def is_valid(self, obj: Any) -> bool:
        """Fast verdict of the entry point's schema on a parsed value."""
        return self._entry_validator.is_valid(obj)


def json_type(value: Any) -> str:
    """The JSON Schema type name of a parsed JSON value (``integer`` before ``number``)."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object" if isinstance(value, Mapping) else "null"


def _with_article(type_name: str) -> str:
    return type_name if type_name == "null" else ("an " if type_name[0] in "aeiou" else "a ") + type_name


def _unknown_type(kind: Any) -> ProtocolError:
    """UNKNOWN_TYPE for a missing, non-string or unknown ``type`` (``WS-ERR-3``)."""
    if kind is None:
        message, keyword = "Frame has no type", "required"
    elif isinstance(kind, str):
        message, keyword = clip_message(f"Unknown message type: {kind}"), "enum"
    else:
        message, keyword = f"Frame type must be a string, not {_with_article(json_type(kind))}", "type"
    return ProtocolError(ErrorCode.UNKNOWN_TYPE, message, pointer="/type", keyword=keyword)


@dataclass(frozen=True, slots=True)
class MemberAlias:
    """A deprecated spelling of a frame member that some published guides show.

    The spec does not accept it; a frame that uses it (and lacks the real member) gets a
    VALIDATION_ERROR whose message says what to write instead.
    """

    frame_type: str
    alias: str
    member: str
    payload: str
    requirement: str

    def applies_to(self, frame_type: str, frame: Mapping[str, Any]) -> bool:
        return frame_type == self.frame_type and self.alias in frame and self.member not in frame

    def hint(self) -> str:
        return (
            f'put {self.payload} in "{self.member}", not "{self.alias}" '
            f'("{self.alias}" is a deprecated alias that servers may refuse, {self.requirement})'
        )


#: The deprecated aliases the core explains (PROTOCOL.md names each by requirement ID).
MEMBER_ALIASES: Final[tuple[MemberAlias, ...]] = (
    MemberAlias(frame_type="step", alias="action", member="data", payload="the action", requirement="WS-STEP-4"),
)


def _with_alias_hint(error: ProtocolError, frame_type: str, frame: Mapping[str, Any]) -> ProtocolError:
    """``error`` with the hint of the first deprecated alias ``frame`` uses, if any."""
    for alias in MEMBER_ALIASES:
        if alias.applies_to(frame_type, frame):
            return ProtocolError(
                error.code,
                f"{error.message}; hint: {alias.hint()}",
                pointer=error.pointer,
                keyword=error.keyword,
                errors=error.errors,
            )
    return error


# by entry point; one dict per view, so the per-frame lookup hashes a string, not a tuple
_codecs: dict[str, FrameCodec] = {}
_sender_codecs: dict[str, FrameCodec] = {}


def _codec(entry: str, *, sender: bool = False) -> FrameCodec:
    """The entry point's codec as a receiver reads frames (open objects ignore unknown
    members, COMPAT-1) or, with ``sender``, as a sender must write them (COMPAT-2)."""
    codecs = _sender_codecs if sender else _codecs
    codec = codecs.get(entry)
    if codec is None:
        spec = sender_view(load_spec()) if sender else load_spec()
        codec = codecs[entry] = FrameCodec(entry, spec=spec)
    return codec


def _not_on(entry: str, frame: Frame) -> ProtocolError:
    return ProtocolError(
        ErrorCode.UNKNOWN_TYPE, f"a {frame.type} frame is not a {entry}", pointer="/type", keyword="enum"
    )


def decode_client_frame(payload: str | bytes) -> ClientFrame:
    """Decode a frame a client sent on ``/ws`` (raises :class:`ProtocolError`)."""
    return _client_frame(_codec("client-frame").decode(payload))


def decode_client_text(utf8: bytes | bytearray | memoryview) -> ClientFrame:
    """Decode a frame a client sent on ``/ws`` as a text message's UTF-8 bytes (no ``str`` of
    the whole message is made: the way for large frames; raises :class:`ProtocolError`)."""
    return _client_frame(_codec("client-frame").decode_value(parse_json(utf8)))


def _client_frame(frame: Frame) -> ClientFrame:
    match frame:
        case Step() | Reset() | StateRequest() | Close() | Mcp() | ValidationOpen() | ValidationRead():
            return frame  # the usual frame first
        case (
            Observation()
            | State()
            | Error()
            | Session()
            | StateUpdate()
            | SessionClosed()
            | ValidationOpened()
            | Validation()
        ):
            raise _not_on("client-frame", frame)
        case _:
            assert_never(frame)


def decode_server_frame(payload: str | bytes) -> ServerFrame:
    """Decode a frame a server sent on ``/ws`` (raises :class:`ProtocolError`)."""
    frame = _codec("server-frame").decode(payload)
    match frame:
        case Observation() | State() | Error() | Session() | Mcp() | ValidationOpened() | Validation():
            return frame
        case (
            Reset()
            | Step()
            | StateRequest()
            | Close()
            | StateUpdate()
            | SessionClosed()
            | ValidationOpen()
            | ValidationRead()
        ):
            raise _not_on("server-frame", frame)
        case _:
            assert_never(frame)


def decode_ui_frame(payload: str | bytes) -> UiFrame:
    """Decode a frame a server sent on ``/ws/ui`` (raises :class:`ProtocolError`)."""
    frame = _codec("ui-frame").decode(payload)
    match frame:
        case StateUpdate() | SessionClosed():
            return frame
        case (
            Reset()
            | Step()
            | StateRequest()
            | Close()
            | Observation()
            | State()
            | Error()
            | Session()
            | Mcp()
            | ValidationOpen()
            | ValidationOpened()
            | ValidationRead()
            | Validation()
        ):
            raise _not_on("ui-frame", frame)
        case _:
            assert_never(frame)


def check_sendable(payload: str, entry: str) -> None:
    """Raise :class:`ProtocolError` unless ``payload`` is a frame of ``entry`` that a sender
    may send: every open object holds only the members the spec names (COMPAT-2)."""
    _codec(entry, sender=True).decode(payload)


def encode_frame(frame: Frame) -> str:
    """The text of ``frame`` on the wire."""
    return dumps(frame.to_wire())
