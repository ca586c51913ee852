"""The splitter's one fast-frame test (``FrameSplitter._fast_payload``) at the edges of the
three length encodings, in place and buffered: what it decodes is what wsproto reads, and
what it must not decode (non-minimal lengths, over the fast limit, masked the wrong way)
goes to wsproto untouched."""

from __future__ import annotations

import struct

import pytest
from wsproto.frame_protocol import FrameProtocol

from openenv_anyio.ws import FAST_FRAME_LIMIT, FrameSplitter

SIZES = [0, 1, 125, 126, 127, 65_535, 65_536, 100_000, FAST_FRAME_LIMIT]


def _frame(size: int, *, from_client: bool) -> tuple[bytes, str]:
    text = "x" * size
    return bytes(FrameProtocol(client=from_client, extensions=[]).send_data(text, True)), text


@pytest.mark.parametrize("from_client", [True, False], ids=["masked", "unmasked"])
@pytest.mark.parametrize("size", SIZES)
def test_a_final_text_frame_within_the_fast_limit_is_decoded_here(size: int, from_client: bool) -> None:
    frame, text = _frame(size, from_client=from_client)
    assert FrameSplitter(masked=from_client, limit=FAST_FRAME_LIMIT).feed(frame) == [text]
    # the same frame arriving in two reads: the header's first byte alone, then the rest
    splitter = FrameSplitter(masked=from_client, limit=FAST_FRAME_LIMIT)
    assert splitter.feed(frame[:1]) == []
    assert splitter.feed(frame[1:]) == [text]
    # two frames in one read
    assert FrameSplitter(masked=from_client, limit=FAST_FRAME_LIMIT).feed(frame + frame) == [text, text]


@pytest.mark.parametrize("from_client", [True, False], ids=["masked", "unmasked"])
def test_a_frame_one_byte_over_the_fast_limit_goes_to_the_general_parser(from_client: bool) -> None:
    frame, _ = _frame(FAST_FRAME_LIMIT + 1, from_client=from_client)
    items = FrameSplitter(masked=from_client, limit=FAST_FRAME_LIMIT + 1).feed(frame)
    assert items and all(isinstance(item, bytes) for item in items)
    assert b"".join(items) == frame  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "header",
    [
        bytes((0x81, 126)) + struct.pack("!H", 125),  # 16-bit length for a 7-bit one
        bytes((0x81, 127)) + struct.pack("!Q", 65_535),  # 64-bit length for a 16-bit one
    ],
    ids=["non-minimal-16", "non-minimal-64"],
)
def test_non_minimal_lengths_go_to_the_general_parser(header: bytes) -> None:
    length = struct.unpack("!H", header[2:4])[0] if len(header) == 4 else struct.unpack("!Q", header[2:10])[0]
    frame = header + b"x" * length
    assert FrameSplitter(masked=False, limit=FAST_FRAME_LIMIT).feed(frame) == [frame]


def test_a_frame_masked_the_wrong_way_goes_to_the_general_parser() -> None:
    frame, _ = _frame(10, from_client=True)  # masked: a server never sends one
    assert FrameSplitter(masked=False, limit=FAST_FRAME_LIMIT).feed(frame) == [frame]
    frame, _ = _frame(10, from_client=False)  # unmasked: a client never sends one
    assert FrameSplitter(masked=True, limit=FAST_FRAME_LIMIT).feed(frame) == [frame]
