"""Large text frames collected by the splitter (``collect_large``, the server's side): the
payload comes out whole, unmasked and UTF-8-checked, in any split of the bytes; the transport
admits or skips each one; frames around it are split as before (``SRV-MEM-1``, ``SRV-MEM-2``)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from wsproto.frame_protocol import FrameProtocol

from openenv_anyio.ws import (
    FAST_FRAME_LIMIT,
    FrameSplitter,
    InvalidText,
    LargeFrame,
    LargeState,
    LargeText,
    SplitItem,
)

LIMIT = 4 * FAST_FRAME_LIMIT


def _client_frame(payload: bytes | str, *, fin: bool = True) -> bytes:
    """A masked client frame written by wsproto (a random masking key)."""
    return bytes(FrameProtocol(client=True, extensions=[]).send_data(payload, fin))


def _feed(splitter: FrameSplitter, wire: bytes, cuts: list[int], *, admit: bool = True) -> list[SplitItem]:
    """Feed ``wire`` cut at ``cuts``, answering every offer; every item, offers included."""
    got: list[SplitItem] = []
    start = 0
    for end in sorted({min(cut, len(wire)) for cut in cuts} | {len(wire)}):
        items = splitter.feed(wire[start:end])
        while items:
            got += items
            if not isinstance(items[-1], LargeFrame):
                break
            splitter.admit() if admit else splitter.skip()
            items = splitter.feed(b"")
        start = end
    return got


@settings(max_examples=25, deadline=None)
@given(
    st.sampled_from(["x", "é", "€", "😀"]),
    st.integers(FAST_FRAME_LIMIT + 1, FAST_FRAME_LIMIT + 70_000),
    st.lists(st.integers(1, FAST_FRAME_LIMIT + 80_000), max_size=6),
)
def test_a_large_text_frame_comes_out_whole_in_any_split(char: str, size: int, cuts: list[int]) -> None:
    text = char * (size // len(char.encode()) + 1)
    wire = _client_frame("small before") + _client_frame(text) + _client_frame("small after")
    splitter = FrameSplitter(masked=True, limit=LIMIT, collect_large=True)
    got = _feed(splitter, wire, cuts)
    assert got[0] == "small before" and got[-1] == "small after"
    assert got[1] == LargeFrame(len(text.encode()))
    assert [item for item in got if isinstance(item, LargeText)] == [LargeText(bytearray(text.encode()))]
    assert splitter.large is LargeState.NONE and not splitter.buffer


def test_an_offer_is_repeated_until_admitted_or_skipped() -> None:
    frame = _client_frame("y" * (FAST_FRAME_LIMIT + 10))
    splitter = FrameSplitter(masked=True, limit=LIMIT, collect_large=True)
    assert splitter.feed(frame[:100]) == [LargeFrame(FAST_FRAME_LIMIT + 10)]
    assert splitter.feed(b"") == [LargeFrame(FAST_FRAME_LIMIT + 10)]  # nothing read meanwhile
    assert splitter.large is LargeState.OFFERED
    splitter.admit()
    assert splitter.feed(frame[100:]) == [LargeText(bytearray(b"y" * (FAST_FRAME_LIMIT + 10)))]


def test_a_skipped_frame_is_read_to_its_end_and_dropped() -> None:
    wire = _client_frame("z" * (2 * FAST_FRAME_LIMIT)) + _client_frame("next")
    splitter = FrameSplitter(masked=True, limit=LIMIT, collect_large=True)
    got = _feed(splitter, wire, [5000, FAST_FRAME_LIMIT], admit=False)
    assert got == [LargeFrame(2 * FAST_FRAME_LIMIT), "next"]
    assert splitter.large is LargeState.NONE


def test_text_that_is_not_utf8_is_known_at_its_first_bad_byte() -> None:
    payload = b"a" * 1000 + b"\xff" + b"b" * (2 * FAST_FRAME_LIMIT)
    frame = _client_frame(payload)
    frame = bytes([0x81]) + frame[1:]  # a text frame (send_data of bytes writes a binary one)
    splitter = FrameSplitter(masked=True, limit=LIMIT, collect_large=True)
    assert splitter.feed(frame[:2000]) == [LargeFrame(len(payload))]
    splitter.admit()
    items = splitter.feed(b"")
    assert len(items) == 1 and isinstance(items[0], InvalidText)
    assert splitter.large is LargeState.SKIPPING
    assert splitter.feed(frame[2000:] + _client_frame("after")) == ["after"]


@pytest.mark.parametrize(
    "frame",
    [
        _client_frame("x" * (LIMIT + 1)),  # over the limit: the general parser refuses it (1009)
        _client_frame("x" * (FAST_FRAME_LIMIT + 1), fin=False),  # a fragment
        _client_frame(b"x" * (FAST_FRAME_LIMIT + 1)),  # binary
    ],
    ids=["over-the-limit", "fragment", "binary"],
)
def test_other_large_frames_still_go_to_the_general_parser(frame: bytes) -> None:
    splitter = FrameSplitter(masked=True, limit=LIMIT, collect_large=True)
    items = splitter.feed(frame)
    assert items and all(isinstance(item, bytes) for item in items)
    assert b"".join(items) == frame  # type: ignore[arg-type]


def test_without_collect_large_a_large_frame_is_streamed_as_before() -> None:
    frame = _client_frame("x" * (FAST_FRAME_LIMIT + 1))
    splitter = FrameSplitter(masked=True, limit=LIMIT)
    assert splitter.feed(frame) == [frame]
