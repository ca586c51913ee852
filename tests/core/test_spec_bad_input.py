"""Bad input never raises an untyped exception out of the core.

Arbitrary text, bytes and near-JSON fed to the three decoders: each call returns a typed
frame or raises ProtocolError with a registry code; nothing else escapes (WS-ERR-1..5).
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schema_strategies import json_values, mutated, valid_frames

from openenv_anyio.core import (
    ErrorCode,
    ProtocolError,
    decode_client_frame,
    decode_server_frame,
    decode_ui_frame,
)

DECODERS = (decode_client_frame, decode_server_frame, decode_ui_frame)
FUZZ_SETTINGS = settings(
    max_examples=600, deadline=None, derandomize=True, database=None, suppress_health_check=[HealthCheck.too_slow]
)


def _frame_texts() -> st.SearchStrategy[str]:
    frames = st.one_of(valid_frames("client-frame"), valid_frames("server-frame"), valid_frames("ui-frame"))
    return st.one_of(frames, frames.flatmap(mutated), json_values).map(lambda v: json.dumps(v, ensure_ascii=False))


@st.composite
def _damaged(draw: st.DrawFn, text: str) -> str:
    """``text`` with a slice cut out or replaced by arbitrary characters."""
    start = draw(st.integers(0, len(text)))
    end = draw(st.integers(start, min(len(text), start + 4)))
    return text[:start] + draw(st.text(max_size=3)) + text[end:]


PAYLOADS = st.one_of(
    st.text(),
    st.binary(),
    _frame_texts(),
    _frame_texts().flatmap(_damaged),
    st.integers(1, 3000).map(lambda depth: '{"type":"step","data":' + "[" * depth + "]" * depth + "}"),
)


def _decode_all(payload: str | bytes) -> None:
    for decode in DECODERS:
        try:
            frame: Any = decode(payload)
        except ProtocolError as error:
            assert isinstance(error.code, ErrorCode)
            assert isinstance(error.message, str) and error.message
        else:
            assert isinstance(payload, str)
            assert frame.to_wire()["type"] == frame.type


@FUZZ_SETTINGS
@given(PAYLOADS)
def test_decoders_raise_only_protocol_errors(payload: str | bytes) -> None:
    _decode_all(payload)


@FUZZ_SETTINGS
@given(st.text().map(str.encode) | st.binary())
def test_bytes_are_always_invalid_json(payload: bytes) -> None:
    """WS-ERR-5: binary frames are refused whatever they hold."""
    for decode in DECODERS:
        try:
            decode(payload)
        except ProtocolError as error:
            assert error.code is ErrorCode.INVALID_JSON
        else:
            raise AssertionError("a binary payload was decoded")
