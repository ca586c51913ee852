"""The one fast frame codec (``openenv_anyio.ws.frames``) agrees with wsproto (RFC 6455) in
both directions on every frame it accepts, and declines every frame it does not handle so
that wsproto decides."""

from __future__ import annotations

import os
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from wsproto.frame_protocol import FrameProtocol, Opcode, ParseFailed

from openenv_anyio.ws import (
    FAST_FRAME_LIMIT,
    CloseFrame,
    FrameSplitter,
    apply_mask,
    encode_close_frame,
    encode_text_frame,
    parse_header,
)
from openenv_anyio.ws.frames import encode_masked_text_frame

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


def _key(frame: bytes) -> bytes:
    return frame[2:6]  # the masking key of a frame with a payload under 126 bytes


def test_every_client_frame_has_its_own_masking_key_across_draws_of_the_key_pool() -> None:
    keys = [_key(encode_masked_text_frame("x")) for _ in range(3000)]  # the pool is drawn 1,024 keys at a time
    # 32-bit random keys: a repeat among 3,000 has odds of about 1 in 1,000, two of about 1 in 2 million
    assert len(set(keys)) >= len(keys) - 1


def test_a_forked_child_does_not_send_the_parent_s_next_masking_key() -> None:
    encode_masked_text_frame("x")  # the pool holds unused keys when the process forks
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its next key, to the parent, then out without any cleanup
        os.write(write_end, _key(encode_masked_text_frame("x")))
        os._exit(0)
    os.close(write_end)
    parent_key = _key(encode_masked_text_frame("x"))
    child_key = os.read(read_end, 4)
    os.close(read_end)
    os.waitpid(pid, 0)
    assert len(child_key) == 4 and child_key != parent_key


# -- server -> client ------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(texts)
def test_server_frames_parse_in_wsproto_as_the_same_text(text: str) -> None:
    frames = _read(encode_text_frame(text, masked=False), as_client=True)
    assert len(frames) == 1
    frame = frames[0]
    assert frame.opcode is Opcode.TEXT and frame.message_finished and frame.payload == text  # type: ignore[attr-defined]
    assert encode_text_frame(text, masked=False) == _server_frame(text)  # byte for byte


# -- the splitter, both directions ------------------------------------------------------

# A frame as (opcode, payload, fin): text and binary messages (whole or fragmented, small or
# over the fast limit), pings, pongs.
frame_specs = st.lists(
    st.one_of(
        st.tuples(st.just("text"), texts, st.just(True)),
        st.tuples(st.just("text"), st.integers(0, 3).map(lambda n: "é" * (FAST_FRAME_LIMIT // 2 + n)), st.just(True)),
        st.tuples(st.just("fragments"), st.lists(st.text(max_size=40), min_size=2, max_size=4), st.just(False)),
        st.tuples(st.just("binary"), st.binary(max_size=50), st.just(True)),
        st.tuples(st.just("ping"), st.binary(max_size=20), st.just(True)),
    ),
    max_size=6,
)


def _wire(specs: list[tuple[str, object, bool]], *, from_client: bool) -> bytes:
    proto = FrameProtocol(client=from_client, extensions=[])
    out = bytearray()
    for kind, payload, _ in specs:
        if kind == "text" or kind == "binary":
            out += proto.send_data(payload, True)  # type: ignore[arg-type]
        elif kind == "fragments":
            parts = list(payload)  # type: ignore[call-overload]
            for index, part in enumerate(parts):
                out += proto.send_data(part, index == len(parts) - 1)
        else:
            out += proto.ping(payload)  # type: ignore[arg-type]
    return bytes(out)


def _messages(proto: FrameProtocol, sink: list[object], parts: list[object]) -> None:
    """Whole messages (and control frames) out of ``proto``; ``parts`` holds a message's
    pieces between calls."""
    for frame in proto.received_frames():
        if frame.opcode in (Opcode.TEXT, Opcode.BINARY, Opcode.CONTINUATION):
            parts.append(frame.payload)
            if frame.message_finished:
                sink.append("".join(parts) if isinstance(parts[0], str) else b"".join(parts))  # type: ignore[arg-type]
                parts.clear()
        else:
            sink.append((frame.opcode, bytes(frame.payload)))  # type: ignore[arg-type]


@settings(max_examples=150, deadline=None)
@given(frame_specs, st.lists(st.integers(1, 70_000), max_size=8), st.booleans())
def test_splitter_plus_wsproto_reads_what_wsproto_alone_reads(
    specs: list[tuple[str, object, bool]], cuts: list[int], from_client: bool
) -> None:
    wire = _wire(specs, from_client=from_client)
    alone = FrameProtocol(client=not from_client, extensions=[])
    alone.receive_bytes(wire)
    expected: list[object] = []
    _messages(alone, expected, [])

    splitter = FrameSplitter(masked=from_client, limit=100 << 20)
    behind = FrameProtocol(client=not from_client, extensions=[])
    got: list[object] = []
    pieces: list[object] = []
    positions = sorted({min(cut, len(wire)) for cut in cuts} | {len(wire)})
    start = 0
    for end in positions:
        for item in splitter.feed(wire[start:end]):
            if isinstance(item, str):
                got.append(item)
            else:
                behind.receive_bytes(item)
                _messages(behind, got, pieces)
        start = end
    assert got == expected
    assert not splitter.buffer and not splitter.passthrough


@pytest.mark.parametrize(
    "frame",
    [
        bytes((0x81, 2)) + b"\xff\xfe",  # invalid UTF-8
        bytes((0xC1, 1)) + b"x",  # RSV1 set
        bytes((0x81, 126)) + struct.pack("!H", 5) + b"hello",  # non-minimal lengths
        bytes((0x81, 127)) + struct.pack("!Q", 5) + b"hello",
        encode_text_frame("masked", masked=True),  # a server never masks
    ],
    ids=["not-utf8", "rsv1", "non-minimal-16", "non-minimal-64", "masked"],
)
def test_splitter_leaves_to_wsproto_what_wsproto_must_refuse(frame: bytes) -> None:
    splitter = FrameSplitter(masked=False, limit=LIMIT)
    assert splitter.feed(frame) == [frame]
    proto = FrameProtocol(client=True, extensions=[])
    proto.receive_bytes(frame)
    with pytest.raises(ParseFailed):
        list(proto.received_frames())


def test_splitter_streams_frames_over_the_limit_and_counts_them() -> None:
    splitter = FrameSplitter(masked=False, limit=100)
    frame = _server_frame("x" * 200)
    first = splitter.feed(frame[:50])
    assert first == [frame[:50]] and splitter.passthrough == len(frame) - 50
    assert splitter.general_frame_length == 200
    assert splitter.feed(frame[50:] + _server_frame("after")) == [frame[50:], "after"]


# -- the peer's plain close, read by the splitter ------------------------------------------

PLAIN_CLOSES = [(1000, ""), (1001, "going away"), (3000, "é" * 40), (4408, "idle"), (4999, "x" * 123)]


@pytest.mark.parametrize("from_client", [True, False], ids=["from-client", "from-server"])
@pytest.mark.parametrize(("code", "reason"), PLAIN_CLOSES)
def test_splitter_reads_a_plain_close_as_wsproto_does(code: int, reason: str, from_client: bool) -> None:
    sender = FrameProtocol(client=from_client, extensions=[])
    wire = bytes(sender.send_data("before", True)) + bytes(sender.close(code, reason or None))
    proto = FrameProtocol(client=not from_client, extensions=[])
    proto.receive_bytes(wire)
    assert [(frame.opcode, frame.payload) for frame in proto.received_frames()] == [
        (Opcode.TEXT, "before"),
        (Opcode.CLOSE, (code, reason)),
    ]
    for cut in range(len(wire) + 1):  # however the bytes arrive
        splitter = FrameSplitter(masked=from_client, limit=LIMIT)
        assert splitter.feed(wire[:cut]) + splitter.feed(wire[cut:]) == ["before", CloseFrame(code, reason)]
        assert not splitter.buffer and not splitter.passthrough


@pytest.mark.parametrize(
    "payload",
    [
        b"",  # no code (1005 to the reader)
        b"\x03",  # a one-byte payload
        struct.pack("!H", 1005),  # codes no peer may send
        struct.pack("!H", 1006),
        struct.pack("!H", 1015),
        struct.pack("!H", 999),
        struct.pack("!H", 2999),
        struct.pack("!H", 5000),
        struct.pack("!H", 1002) + b"protocol error",  # a valid code the splitter leaves to wsproto
        struct.pack("!H", 1000) + b"\xff\xfe",  # a reason that is not UTF-8
    ],
)
def test_splitter_leaves_every_other_close_to_wsproto(payload: bytes) -> None:
    frame = bytes((0x88, len(payload))) + payload
    assert FrameSplitter(masked=False, limit=LIMIT).feed(frame) == [frame]
    masked = bytes((0x88, 0x80 | len(payload))) + b"\x01\x02\x03\x04" + apply_mask(payload, b"\x01\x02\x03\x04")
    assert FrameSplitter(masked=True, limit=LIMIT).feed(masked) == [masked]


@pytest.mark.parametrize(
    "frame",
    [
        bytes((0x88, 126)) + struct.pack("!HH", 2, 1000),  # a non-minimal length
        bytes((0x98, 2)) + struct.pack("!H", 1000),  # RSV1 set
        bytes((0x08, 2)) + struct.pack("!H", 1000),  # not final
        bytes((0x88, 0x82)) + b"\x01\x02\x03\x04" + apply_mask(struct.pack("!H", 1000), b"\x01\x02\x03\x04"),  # masked
    ],
    ids=["non-minimal", "rsv1", "not-final", "masked"],
)
def test_splitter_leaves_to_wsproto_the_close_frames_it_must_refuse(frame: bytes) -> None:
    assert FrameSplitter(masked=False, limit=LIMIT).feed(frame) == [frame]
    proto = FrameProtocol(client=True, extensions=[])
    proto.receive_bytes(frame)
    with pytest.raises(ParseFailed):
        list(proto.received_frames())


@pytest.mark.parametrize(("code", "reason"), PLAIN_CLOSES)
def test_close_frames_are_wsprotos_byte_for_byte_or_read_by_it_alike(code: int, reason: str) -> None:
    assert encode_close_frame(code, reason, masked=False) == bytes(
        FrameProtocol(client=False, extensions=[]).close(code, reason or None)
    )
    masked = encode_close_frame(code, reason, masked=True)
    proto = FrameProtocol(client=False, extensions=[])
    proto.receive_bytes(masked)
    assert [(frame.opcode, frame.payload) for frame in proto.received_frames()] == [(Opcode.CLOSE, (code, reason))]
    assert masked[2:6] != encode_close_frame(code, reason, masked=True)[2:6]  # a fresh key each time
    with pytest.raises(ValueError, match="at most 125 bytes"):
        encode_close_frame(code, "x" * 124, masked=False)
