"""Every vector of spec/v1/examples validates or fails exactly as labelled.

Under both validators (compiled and reference), and through the frame codec: a valid
vector decodes into a typed frame whose wire form is the vector again; an invalid one
raises ProtocolError with the vector's ``expect_code``.
"""

from __future__ import annotations

import json

import pytest
from spec_vectors import Vector, check_vector_format, load_vectors

from openenv_anyio.core import (
    ENTRY_POINTS,
    FrameCodec,
    ProtocolError,
    check_sendable,
    encode_frame,
    parse_json,
    sender_validator,
    spec_validator,
)

VECTORS = load_vectors()
CODECS = {entry: FrameCodec(entry) for entry in ENTRY_POINTS}


def _ids(vectors: list[Vector]) -> list[str]:
    return [vector.name for vector in vectors]


def test_there_are_vectors_for_every_entry_point_both_ways() -> None:
    for entry in ENTRY_POINTS:
        verdicts = {vector.valid for vector in VECTORS if vector.entry == entry}
        assert verdicts == {True, False}, entry
    assert sum(vector.doc["source"] == "openenv-core-0.3.0" for vector in VECTORS) >= 20
    assert sum(vector.doc["source"] == "openenv-0.10.0" for vector in VECTORS) >= 6
    assert any(vector.unknown_members for vector in VECTORS)


@pytest.mark.parametrize("vector", VECTORS, ids=_ids(VECTORS))
def test_vector_file_format(vector: Vector) -> None:
    check_vector_format(vector)


@pytest.mark.parametrize(
    "vector", [v for v in VECTORS if not v.is_text], ids=_ids([v for v in VECTORS if not v.is_text])
)
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
        # members the spec does not name are dropped or kept as part of an open mapping
        assert parse_json(encode_frame(frame)) in (
            _normalised(vector.frame),
            _normalised(vector.frame, vector.unknown_members),
        )
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


def _normalised(frame: dict[str, object], unknown: tuple[str, ...] | list[str] = ()) -> dict[str, object]:
    """The wire form the core writes: a reset without data is sent with empty data; members
    the spec does not name are not kept (a receiver ignores them, COMPAT-1)."""
    if frame.get("type") == "reset" and "data" not in frame:
        return {**frame, "data": {}}
    return _without(frame, unknown)


def _without(frame: dict[str, object], pointers: tuple[str, ...] | list[str]) -> dict[str, object]:
    copy = json.loads(json.dumps(frame))
    for pointer in pointers:
        *parents, last = pointer.lstrip("/").split("/")
        target = copy
        for part in parents:
            target = target[part]
        del target[last]
    return copy


SENDER_CASES = [v for v in VECTORS if v.valid and v.entry != "client-frame"]


@pytest.mark.parametrize("vector", SENDER_CASES, ids=_ids(SENDER_CASES))
def test_senders_send_only_named_members(vector: Vector) -> None:
    """COMPAT-2: the sender view refuses exactly the vector's unknown members; without them
    the frame is sendable (both validators agree there too)."""
    validator = sender_validator(ENTRY_POINTS[vector.entry])
    sendable = _without(vector.frame, vector.unknown_members)
    assert validator.is_valid(sendable) and validator.reference_is_valid(sendable)
    check_sendable(json.dumps(sendable), vector.entry)
    if vector.unknown_members:
        assert not validator.is_valid(vector.frame) and not validator.reference_is_valid(vector.frame)
        refused = {
            fault.pointer + "/" + name
            for fault in validator.faults(vector.frame)
            for name in _unexpected(fault.message)
        }
        assert refused == set(vector.unknown_members)


def _unexpected(message: str) -> list[str]:
    """The member names of jsonschema's "Additional properties are not allowed ('x' was unexpected)"."""
    import re

    return re.findall(r"'([^']+)'", message.partition("(")[2])


def test_client_frames_are_closed_in_both_views() -> None:
    """COMPAT-3: no client frame object is open (servers keep refusing unknown members)."""
    from openenv_anyio.core import EXTENSIBLE, load_spec

    spec = load_spec()
    for relative in spec.frame_schemas("client-frame").values():
        assert EXTENSIBLE not in json.dumps(spec.document(relative)), relative
