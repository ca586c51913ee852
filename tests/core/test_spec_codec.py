"""The frame codec: typed frames, wire round trips, JSON edge cases, error messages."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from openenv_anyio.core import (
    Close,
    Error,
    ErrorCode,
    FrameCodec,
    Observation,
    ProtocolError,
    Reset,
    State,
    StateRequest,
    StateUpdate,
    Step,
    ValidationOpened,
    decode_client_frame,
    decode_server_frame,
    decode_ui_frame,
    dumps,
    encode_frame,
    parse_json,
)
from openenv_anyio.core.errors import MAX_MESSAGE_CHARS
from openenv_anyio.core.validation import MAX_FAULTS

FRAMES = [
    Reset({"seed": 1, "episode_id": "ep-1"}),
    Reset(),
    Step({"message": "hi", "nested": [1, {"a": None}]}),
    StateRequest(),
    Close(),
    Observation({"echoed": "hi"}, 2.0, False),
    Observation({}, None, True),
    Observation({}, True, False),
    State({"episode_id": "ep-1", "step_count": 3, "score": 1.5}),
    State({"episode_id": None, "step_count": 0}),
    Error(code="CAPACITY_REACHED", message="full", extra={"active_sessions": 1, "max_sessions": 1}),
    StateUpdate({"episode_id": "e", "step_count": 0, "current_observation": None, "action_logs": [], "is_reset": True}),
]
DECODERS = {"client": decode_client_frame, "server": decode_server_frame, "ui": decode_ui_frame}


def _decoder_for(frame: Any) -> Any:
    if isinstance(frame, (Reset, Step, StateRequest, Close)):
        return decode_client_frame
    if isinstance(frame, StateUpdate):
        return decode_ui_frame
    return decode_server_frame


@pytest.mark.parametrize("frame", FRAMES, ids=lambda frame: type(frame).__name__)
def test_encode_decode_round_trip(frame: Any) -> None:
    text = encode_frame(frame)
    assert _decoder_for(frame)(text) == frame


@pytest.mark.parametrize("decode", DECODERS.values(), ids=DECODERS.keys())
@pytest.mark.parametrize("payload", [b'{"type":"state"}', bytearray(b"{}"), b"\xff\xfe", None, 3])
def test_binary_and_non_text_payloads_are_protocol_errors(decode: Any, payload: Any) -> None:
    """WS-ERR-5: JSON travels in text frames; a binary payload is INVALID_JSON."""
    with pytest.raises(ProtocolError) as caught:
        decode(payload)
    assert caught.value.code is ErrorCode.INVALID_JSON


def test_state_frames_differ_by_direction() -> None:
    assert decode_client_frame('{"type":"state"}') == StateRequest()
    state = decode_server_frame('{"type":"state","data":{"episode_id":"ep","step_count":2,"x":1}}')
    assert isinstance(state, State)
    assert (state.episode_id, state.step_count, state.data["x"]) == ("ep", 2, 1)
    assert State({"episode_id": None, "step_count": 0}).episode_id is None


def test_reset_without_data_has_no_kwargs() -> None:
    assert decode_client_frame('{"type":"reset"}') == Reset({})


def test_error_frame_keeps_extra_members() -> None:
    text = '{"type":"error","data":{"message":"m","code":"FACTORY_ERROR","factory_name":"Echo"}}'
    error = decode_server_frame(text)
    assert isinstance(error, Error)
    assert (error.code, error.message, dict(error.extra)) == ("FACTORY_ERROR", "m", {"factory_name": "Echo"})


def test_error_extra_cannot_override_message_or_code() -> None:
    error = Error(code="SESSION_ERROR", message="real", extra={"message": "fake", "code": "X", "k": 1})
    assert error.to_wire()["data"] == {"message": "real", "code": "SESSION_ERROR", "k": 1}


def test_error_from_protocol_error_is_a_valid_error_frame() -> None:
    with pytest.raises(ProtocolError) as caught:
        decode_client_frame('{"type":"reset","data":{"seed":-1}}')
    error = Error.from_protocol_error(caught.value)
    assert error.code == "VALIDATION_ERROR"
    assert error.extra["errors"][0]["pointer"] == "/data/seed"
    assert error.extra["errors"][0]["loc"] == ["data", "seed"]
    assert decode_server_frame(encode_frame(error)) == error
    assert Error.from_protocol_error(ProtocolError(ErrorCode.INVALID_JSON, "x")).extra == {}


def test_validation_error_names_the_pointer_and_lists_faults() -> None:
    with pytest.raises(ProtocolError) as caught:
        decode_server_frame('{"type":"state_update"}')
    assert caught.value.code is ErrorCode.UNKNOWN_TYPE
    with pytest.raises(ProtocolError) as caught:
        decode_ui_frame('{"type":"state_update","episode_state":{"step_count":0,"action_logs":[{}]}}')
    error = caught.value
    assert error.code is ErrorCode.VALIDATION_ERROR
    assert error.pointer == "/episode_state/action_logs/0"
    assert "/episode_state/action_logs/0" in error.message
    assert error.errors and error.errors[0]["loc"] == ["episode_state", "action_logs", 0]


def test_step_alias_gets_a_hint_to_use_data() -> None:
    """WS-STEP-4: the deprecated alias is refused with a message that says what to send."""
    with pytest.raises(ProtocolError) as caught:
        decode_client_frame('{"type":"step","action":{"message":"hi"}}')
    error = caught.value
    assert error.code is ErrorCode.VALIDATION_ERROR
    assert 'put the action in "data"' in error.message and "WS-STEP-4" in error.message
    assert str(error) == error.message
    assert Error.from_protocol_error(error).message == error.message


@pytest.mark.parametrize(
    "text",
    ['{"type":"step","data":{"x":1},"action":{}}', '{"type":"step"}', '{"type":"reset","action":{}}'],
)
def test_no_alias_hint_where_the_alias_is_not_the_fault(text: str) -> None:
    with pytest.raises(ProtocolError) as caught:
        decode_client_frame(text)
    assert caught.value.code is ErrorCode.VALIDATION_ERROR
    assert "hint" not in caught.value.message


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"data":{}}', "Frame has no type"),
        ('{"type":null}', "Frame has no type"),
        ('{"type":7}', "Frame type must be a string, not an integer"),
        ('{"type":{"a":1}}', "Frame type must be a string, not an object"),
        ('{"type":"bogus"}', "Unknown message type: bogus"),
    ],
)
def test_unknown_type_messages(text: str, message: str) -> None:
    with pytest.raises(ProtocolError) as caught:
        decode_client_frame(text)
    assert caught.value.code is ErrorCode.UNKNOWN_TYPE
    assert caught.value.message == message
    assert caught.value.pointer == "/type"


def test_messages_stay_short_for_huge_frames() -> None:
    huge = "x" * 1_000_000
    cases = [
        f'{{"type":"{huge}"}}',
        f'{{"type":"reset","data":{{"episode_id":"{huge}"}}}}',
        f'{{"type":"state","{huge}":1}}',
        '{"type":"step","data":' + "[" * 1500 + "]" * 1500 + "}",
        "x" * 1_000_000,
    ]
    for text in cases:
        with pytest.raises(ProtocolError) as caught:
            decode_client_frame(text)
        assert len(caught.value.message) <= MAX_MESSAGE_CHARS
        for entry in caught.value.errors or []:
            assert len(entry["msg"]) <= MAX_MESSAGE_CHARS


def test_fault_list_is_bounded() -> None:
    logs = ",".join("{}" for _ in range(200))
    with pytest.raises(ProtocolError) as caught:
        decode_ui_frame(f'{{"type":"state_update","episode_state":{{"step_count":0,"action_logs":[{logs}]}}}}')
    assert caught.value.errors is not None and len(caught.value.errors) == MAX_FAULTS


class TestParseJson:
    """parse_json: one parser and its limits (WS-CONN-5)."""

    @pytest.mark.parametrize(
        "payload",
        [
            "not json",
            "",
            b"\xff\xfe",
            b'{"type":"\xc3"}',
            "NaN",
            '{"x":Infinity}',
            "-Infinity",
            "1e400",
            '"\\ud800"',
            "[" * 100_000,
            "[" * 1025 + "]" * 1025,
            '{"a":1}{"b":2}',
        ],
    )
    def test_refused_with_invalid_json(self, payload: str | bytes) -> None:
        with pytest.raises(ProtocolError) as caught:
            parse_json(payload)
        assert caught.value.code is ErrorCode.INVALID_JSON
        assert caught.value.message.startswith("Invalid JSON")

    def test_accepted_values(self) -> None:
        assert parse_json("[" * 1000 + "]" * 1000) is not None
        assert parse_json(b'{"a":[1,2.5,true,null,"\\u00e9\\ud83d\\ude00"]}') == {"a": [1, 2.5, True, None, "é😀"]}
        assert parse_json(memoryview(b"[1]")) == [1]
        assert parse_json(" {} ") == {}
        assert parse_json('{"a":1,"a":2}') == {"a": 2}  # duplicate keys: the last wins

    def test_big_integers(self) -> None:
        assert parse_json("18446744073709551615") == 2**64 - 1
        assert parse_json("-9223372036854775808") == -(2**63)
        assert parse_json(str(2**70)) == float(2**70)  # beyond 64 bits: nearest double
        assert parse_json("1" + "0" * 300) == 1e300


class TestDumps:
    def test_non_finite_floats_become_null(self) -> None:
        """WS-CONN-5: NaN/Infinity are not JSON; they are written as null."""
        text = dumps({"r": math.nan, "a": [math.inf, -math.inf], "n": np.float32("nan")})
        assert parse_json(text) == {"r": None, "a": [None, None], "n": None}
        obs = Observation({"v": math.nan}, math.nan, False)
        assert decode_server_frame(encode_frame(obs)) == Observation({"v": None}, None, False)

    def test_numpy_sets_and_models(self) -> None:
        class Model:
            def model_dump(self, mode: str) -> dict[str, str]:
                return {"mode": mode}

        value = {"arr": np.arange(3), "i": np.int64(4), "s": frozenset([1]), "t": (1, 2), "m": Model(), 1: "k"}
        assert parse_json(dumps(value)) == {
            "arr": [0, 1, 2],
            "i": 4,
            "s": [1],
            "t": [1, 2],
            "m": {"mode": "json"},
            "1": "k",
        }

    @pytest.mark.parametrize("value", [object(), {"x": 2**70}, "\ud800"])
    def test_unencodable_values_raise_type_error(self, value: Any) -> None:
        with pytest.raises(TypeError):
            dumps(value)


def test_codec_lists_its_frame_types() -> None:
    assert FrameCodec("client-frame").frame_types == (
        "reset",
        "step",
        "state",
        "close",
        "mcp",
        "validation_open",
        "validation_read",
    )
    assert FrameCodec("ui-frame").frame_types == ("state_update", "session_closed")


def test_a_server_validation_open_with_an_extra_token_member_is_the_reply() -> None:
    """The server's validation_open is extensible, so it may carry a ``token`` member of its
    own; the capability, which the client's closed frame can never carry, decides the class."""
    frame = decode_server_frame('{"type": "validation_open", "data": {"capability": "c", "token": []}}')
    assert frame == ValidationOpened("c")


def test_a_frame_type_without_a_class_is_refused_never_decoded_as_another() -> None:
    """Dispatch has no silent default: a type the spec lists but the core has no class for
    (here, one the entry point's validators were bypassed for) is UNKNOWN_TYPE."""
    from openenv_anyio.core.frames import _from_wire

    with pytest.raises(ProtocolError) as caught:
        _from_wire({"type": "future_frame", "episode_state": {}})
    assert caught.value.code is ErrorCode.UNKNOWN_TYPE
