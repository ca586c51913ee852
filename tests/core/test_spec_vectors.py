"""Every vector of spec/v1/examples validates or fails exactly as labelled.

Under both validators (compiled and reference), and through the frame codec: a valid
vector decodes into a typed frame whose wire form is the vector again; an invalid one
raises ProtocolError with the vector's ``expect_code``.
"""

from __future__ import annotations

import pytest

from openenv_anyio.core import (
    ENTRY_POINTS,
    FrameCodec,
    ProtocolError,
    encode_frame,
    parse_json,
    spec_validator,
)
from spec_vectors import Vector, check_vector_format, load_vectors

VECTORS = load_vectors()
CODECS = {entry: FrameCodec(entry) for entry in ENTRY_POINTS}


def _ids(vectors: list[Vector]) -> list[str]:
    return [vector.name for vector in vectors]


def test_there_are_vectors_for_every_entry_point_both_ways() -> None:
    for entry in ENTRY_POINTS:
        verdicts = {vector.valid for vector in VECTORS if vector.entry == entry}
        assert verdicts == {True, False}, entry
    assert sum(vector.doc["source"] == "openenv-core-0.3.0" for vector in VECTORS) >= 20


@pytest.mark.parametrize("vector", VECTORS, ids=_ids(VECTORS))
def test_vector_file_format(vector: Vector) -> None:
    check_vector_format(vector)


@pytest.mark.parametrize("vector", [v for v in VECTORS if not v.is_text], ids=_ids([v for v in VECTORS if not v.is_text]))
def test_both_validators_give_the_labelled_verdict(vector: Vector) -> None:
    validator = spec_validator(ENTRY_POINTS[vector.entry])
    assert validator.is_valid(vector.frame) is vector.valid
    assert validator.reference_is_valid(vector.frame) is vector.valid
    assert CODECS[vector.entry].is_valid(vector.frame) is vector.valid


@pytest.mark.parametrize("vector", VECTORS, ids=_ids(VECTORS))
def test_codec_decodes_or_refuses_with_the_expected_code(vector: Vector) -> None:
    codec = CODECS[vector.entry]
    if vector.valid:
        frame = codec.decode(vector.wire_text)
        assert frame.type == vector.frame["type"]
        assert parse_json(encode_frame(frame)) == _normalised(vector.frame)
        assert codec.decode_value(vector.frame) == frame
    else:
        with pytest.raises(ProtocolError) as caught:
            codec.decode(vector.wire_text)
        assert caught.value.code == vector.doc["expect_code"]
        assert caught.value.message
        if not vector.is_text:
            with pytest.raises(ProtocolError) as again:
                codec.decode_value(vector.frame)
            assert again.value.code == vector.doc["expect_code"]


def _normalised(frame: dict[str, object]) -> dict[str, object]:
    """The wire form the core writes: a reset without data is sent with empty data."""
    if frame.get("type") == "reset" and "data" not in frame:
        return {**frame, "data": {}}
    return frame
