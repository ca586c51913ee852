"""The one fast frame codec (``openenv_anyio.ws.frames``) agrees with wsproto (RFC 6455) in
both directions on every frame it accepts, and declines every frame it does not handle so
that wsproto decides."""

from __future__ import annotations

import struct

from hypothesis import given, settings
from hypothesis import strategies as st
from wsproto.frame_protocol import FrameProtocol, Opcode

from openenv_anyio.ws import apply_mask, encode_text_frame, parse_header, split_text_frame

LIMIT = 1 << 20
texts = st.one_of(
    st.text(max_size=300),
    st.sampled_from([0, 1, 125, 126, 127, 65535, 65536, 70000]).map(lambda n: "é" * (n // 2) + "x" * (n % 2)),
    st.sampled_from([125, 126, 65535, 65536]).map(lambda n: "a" * n),
)
payloads = st.one_of(st.binary(max_size=300), st.sampled_from([125, 126, 65535, 65536]).map(lambda n: b"\x00" * n))


def _server_frame(text: str) -> bytes:
    return bytes(FrameProtocol(client=False, extensions=[]).send_data(text, True))


def _client_frame(payload: bytes | str, *, fin: bool = True) -> bytes:
    return bytes(FrameProtocol(client=True, extensions=[]).send_data(payload, fin))


def _read(frame: bytes, *, as_client: bool) -> list[object]:
    proto = FrameProtocol(client=as_client, extensions=[])
    proto.receive_bytes(frame)
    return list(proto.received_frames())


# -- client -> server ------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(texts)
def test_client_frames_parse_in_wsproto_as_the_same_text(text: str) -> None:
    frames = _read(encode_text_frame(text, masked=True), as_client=False)  # a server requires masks
    assert len(frames) == 1
    frame = frames[0]
    assert frame.opcode is Opcode.TEXT and frame.message_finished and frame.payload == text  # type: ignore[attr-defined]


@settings(max_examples=200, deadline=None)
@given(payloads, st.binary(max_size=20))
def test_wsproto_client_frames_read_with_parse_header_and_apply_mask(payload: bytes, tail: bytes) -> None:
    frame = _client_frame(payload)
    for cut in range(min(len(frame), 15)):
        header = parse_header(frame[:cut])
        assert header is None or cut >= header.size
    header = parse_header(frame + tail)
    assert header is not None and header.first == 0x82 and header.masked and header.length == len(payload)
    body = frame[header.size : header.size + header.length]
    assert apply_mask(body, frame[header.size - 4 : header.size]) == payload
    assert header.size + header.length == len(frame)


def test_parse_header_reports_fragments_and_control_frames_as_they_are() -> None:
    fragment = parse_header(_client_frame("part", fin=False))
    assert fragment is not None and fragment.first == 0x01
    ping = parse_header(bytes(FrameProtocol(client=True, extensions=[]).ping(b"p")))
    assert ping is not None and ping.first == 0x89 and ping.masked and ping.length == 1


# -- server -> client ------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(texts)
def test_server_frames_parse_in_wsproto_as_the_same_text(text: str) -> None:
    frames = _read(encode_text_frame(text, masked=False), as_client=True)
    assert len(frames) == 1
    frame = frames[0]
    assert frame.opcode is Opcode.TEXT and frame.message_finished and frame.payload == text  # type: ignore[attr-defined]
    assert encode_text_frame(text, masked=False) == _server_frame(text)  # byte for byte


@settings(max_examples=200, deadline=None)
@given(texts, st.binary(max_size=20))
def test_whole_server_frames_split_as_wsproto_reads_them(text: str, tail: bytes) -> None:
    frame = _server_frame(text)
    assert split_text_frame(frame + tail, LIMIT) == (text, len(frame))
    assert split_text_frame(frame[:-1], LIMIT) is None  # incomplete: not parsed


def test_split_declines_what_wsproto_must_decide() -> None:
    proto = FrameProtocol(client=False, extensions=[])
    fragmenting = FrameProtocol(client=False, extensions=[])
    assert split_text_frame(bytes(fragmenting.send_data("part", False)), LIMIT) is None  # a fragment
    assert split_text_frame(bytes(proto.send_data(b"bin", True)), LIMIT) is None  # binary
    assert split_text_frame(bytes(proto.ping(b"p")), LIMIT) is None  # control frames
    assert split_text_frame(bytes(proto.close(1000, "bye")), LIMIT) is None
    assert split_text_frame(encode_text_frame("masked", masked=True), LIMIT) is None  # a server never masks
    assert split_text_frame(bytes((0x81, 2)) + b"\xff\xfe", LIMIT) is None  # invalid UTF-8
    assert split_text_frame(bytes((0xC1, 1)) + b"x", LIMIT) is None  # RSV1 set
    assert split_text_frame(bytes((0x81, 126)) + struct.pack("!H", 5) + b"hello", LIMIT) is None  # non-minimal
    assert split_text_frame(bytes((0x81, 127)) + struct.pack("!Q", 5) + b"hello", LIMIT) is None
    assert split_text_frame(_server_frame("x" * 200), 100) is None  # over the limit
    assert split_text_frame(b"\x81", LIMIT) is None
