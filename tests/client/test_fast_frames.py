"""The hot-path frame codec agrees with wsproto (RFC 6455) on every frame it accepts, and
declines every frame it does not handle so that wsproto decides."""

from __future__ import annotations

import struct

from hypothesis import given, settings
from hypothesis import strategies as st
from wsproto.frame_protocol import FrameProtocol, Opcode

from openenv_anyio.client.fast_frames import encode_text_frame, split_text_frame

LIMIT = 1 << 20
texts = st.one_of(
    st.text(max_size=300),
    st.sampled_from([0, 1, 125, 126, 127, 65535, 65536, 70000]).map(lambda n: "é" * (n // 2) + "x" * (n % 2)),
    st.sampled_from([125, 126, 65535, 65536]).map(lambda n: "a" * n),
)


def _server_frame(text: str) -> bytes:
    return bytes(FrameProtocol(client=False, extensions=[]).send_data(text, True))


@settings(max_examples=200, deadline=None)
@given(texts)
def test_encoded_frames_parse_in_wsproto_as_the_same_text(text: str) -> None:
    server = FrameProtocol(client=False, extensions=[])  # a server requires masked frames
    server.receive_bytes(encode_text_frame(text))
    frames = list(server.received_frames())
    assert len(frames) == 1 and frames[0].opcode is Opcode.TEXT and frames[0].message_finished
    assert frames[0].payload == text


@settings(max_examples=200, deadline=None)
@given(texts, st.binary(max_size=20))
def test_whole_server_frames_split_as_wsproto_reads_them(text: str, tail: bytes) -> None:
    frame = _server_frame(text)
    assert split_text_frame(frame + tail, LIMIT) == (text, len(frame))
    assert split_text_frame(frame[:-1], LIMIT) is None  # incomplete: not parsed


def test_declines_what_wsproto_must_decide() -> None:
    proto = FrameProtocol(client=False, extensions=[])
    fragmenting = FrameProtocol(client=False, extensions=[])
    assert split_text_frame(bytes(fragmenting.send_data("part", False)), LIMIT) is None  # a fragment
    assert split_text_frame(bytes(proto.send_data(b"bin", True)), LIMIT) is None  # binary
    assert split_text_frame(bytes(proto.ping(b"p")), LIMIT) is None  # control frames
    assert split_text_frame(bytes(proto.close(1000, "bye")), LIMIT) is None
    assert split_text_frame(encode_text_frame("masked"), LIMIT) is None  # a server never masks
    assert split_text_frame(bytes((0x81, 2)) + b"\xff\xfe", LIMIT) is None  # invalid UTF-8
    assert split_text_frame(bytes((0xC1, 1)) + b"x", LIMIT) is None  # RSV1 set
    assert split_text_frame(bytes((0x81, 126)) + struct.pack("!H", 5) + b"hello", LIMIT) is None  # non-minimal
    assert split_text_frame(bytes((0x81, 127)) + struct.pack("!Q", 5) + b"hello", LIMIT) is None
    assert split_text_frame(_server_frame("x" * 200), 100) is None  # over the limit
    assert split_text_frame(b"\x81", LIMIT) is None
