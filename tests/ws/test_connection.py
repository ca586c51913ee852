"""The sans-IO connection, client and server role: events and outbound bytes for what
arrives, state by the transition table, checked against wsproto (no sockets)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from wsproto.frame_protocol import FrameProtocol, Opcode

from openenv_anyio.ws import (
    FAST_FRAME_LIMIT,
    TRANSITIONS,
    Broken,
    ConnectionState,
    LargeFrame,
    LargeText,
    PeerClosed,
    Pong,
    Role,
    TooLarge,
    WebSocketConnection,
    encode_text_frame,
    parse_header,
)

from .ordered_wire import cut, endings, ordered_specs, ordered_wire, peer_of, read_as, texts


def _server() -> FrameProtocol:
    return FrameProtocol(client=False, extensions=[])


def _read_as_server(data: bytes) -> list[tuple[Opcode, object]]:
    proto = _server()
    proto.receive_bytes(data)
    return [(frame.opcode, frame.payload) for frame in proto.received_frames()]


def test_messages_fast_and_general_arrive_in_order() -> None:
    server, conn = _server(), WebSocketConnection(max_message_size=1 << 20)
    data = (
        bytes(server.send_data("one", True)) + bytes(server.send_data("tw", False)) + bytes(server.send_data("o", True))
    )
    data += bytes(server.send_data(b"\x00bin", True)) + bytes(server.send_data("three", True))
    assert conn.receive_data(data) == ["one", "two", b"\x00bin", "three"]
    assert conn.state is ConnectionState.OPEN and not conn.has_bytes_to_send


def test_pings_are_answered_and_pongs_reported() -> None:
    server, conn = _server(), WebSocketConnection(max_message_size=1024)
    assert conn.receive_data(bytes(server.ping(b"hi")) + bytes(server.pong(b"yo"))) == [Pong(b"yo")]
    assert conn.pings_answered == 1
    assert _read_as_server(conn.bytes_to_send()) == [(Opcode.PONG, b"hi")]


def test_peer_close_is_echoed_and_ends_the_connection() -> None:
    server, conn = _server(), WebSocketConnection(max_message_size=1024)
    events = conn.receive_data(bytes(server.close(4408, "idle")) + bytes(server.send_data("late", True)))
    assert events == [PeerClosed(4408, "idle", True)] and conn.state is ConnectionState.CLOSED
    assert _read_as_server(conn.bytes_to_send()) == [(Opcode.CLOSE, (4408, "idle"))]
    assert conn.receive_data(bytes(server.send_data("after", True))) == []


@pytest.mark.parametrize("role", [Role.CLIENT, Role.SERVER])
def test_a_plain_close_is_echoed_mid_message_and_in_every_state(role: Role) -> None:
    peer = FrameProtocol(client=role is Role.SERVER, extensions=[])
    reader = FrameProtocol(client=role is Role.SERVER, extensions=[])  # reads what we send
    opened = WebSocketConnection(role, max_message_size=1024)  # a fragmented message is open
    assert opened.receive_data(bytes(peer.send_data("par", False)) + bytes(peer.close(1001, "bye"))) == [
        PeerClosed(1001, "bye", True)
    ]
    reader.receive_bytes(opened.bytes_to_send())
    assert [(frame.opcode, frame.payload) for frame in reader.received_frames()] == [(Opcode.CLOSE, (1001, "bye"))]
    peer = FrameProtocol(client=role is Role.SERVER, extensions=[])  # the first one's message is still open
    refusing = WebSocketConnection(role, max_message_size=10)
    assert refusing.receive_data(bytes(peer.send_data("x" * 20, True)))[0] == TooLarge(20, 10, True)
    refusing.bytes_to_send()
    assert refusing.receive_data(bytes(peer.close(1000))) == [PeerClosed(1000, "", False)]
    assert refusing.state is ConnectionState.CLOSED and not refusing.has_bytes_to_send


def test_our_close_then_the_peers_is_not_echoed() -> None:
    server, conn = _server(), WebSocketConnection(max_message_size=1024)
    conn.close(1000)
    assert conn.state is ConnectionState.CLOSING
    assert _read_as_server(conn.bytes_to_send()) == [(Opcode.CLOSE, (1000, ""))]
    assert conn.receive_data(bytes(server.send_data("still", True)) + bytes(server.close(1000))) == [
        "still",
        PeerClosed(1000, "", False),
    ]
    assert conn.state is ConnectionState.CLOSED and not conn.has_bytes_to_send


def test_a_message_over_the_limit_is_refused_with_1009_as_it_crosses_it() -> None:
    server, conn = _server(), WebSocketConnection(max_message_size=100)
    frame = bytes(server.send_data("x" * 1000, True))
    events = conn.receive_data(frame[:150])  # the limit is crossed before the frame is whole
    assert events == [TooLarge(1000, 100, True)] and conn.state is ConnectionState.REFUSING
    assert _read_as_server(conn.bytes_to_send()) == [(Opcode.CLOSE, (1009, "message too big"))]
    assert conn.receive_data(frame[150:] + bytes(server.send_data("dropped", True))) == []
    assert conn.receive_data(bytes(server.close(1009))) == [PeerClosed(1009, "", False)]
    assert conn.state is ConnectionState.CLOSED and not conn.has_bytes_to_send


def test_bytes_that_are_not_websocket_are_closed_with_their_code() -> None:
    conn = WebSocketConnection(max_message_size=1024)
    events = conn.receive_data(encode_text_frame("a server never masks", masked=True))
    assert len(events) == 1 and isinstance(events[0], Broken) and conn.state is ConnectionState.CLOSED
    assert _read_as_server(conn.bytes_to_send()) == [(Opcode.CLOSE, (1002, "invalid frame"))]


def test_the_transition_table_is_closed_and_ends_in_closed() -> None:
    assert set(TRANSITIONS) == set(ConnectionState)
    assert TRANSITIONS[ConnectionState.CLOSED] == frozenset()
    for state, targets in TRANSITIONS.items():
        assert state not in targets and targets <= set(ConnectionState)


# -- both roles, against wsproto -----------------------------------------------------------
# The peer of each role is wsproto's FrameProtocol playing the other end; whatever it sends,
# cut anywhere, the connection reads as wsproto alone reads it, and what the connection sends
# wsproto reads back unchanged.

_specs = st.lists(
    st.one_of(
        st.tuples(st.just("text"), texts),
        st.tuples(st.just("fragments"), st.lists(st.text(max_size=30), min_size=2, max_size=4)),
        st.tuples(st.just("binary"), st.binary(max_size=60)),
        st.tuples(st.just("binary-fragments"), st.lists(st.binary(max_size=30), min_size=2, max_size=3)),
        st.tuples(st.just("ping"), st.binary(max_size=20)),
        st.tuples(st.just("pong"), st.binary(max_size=20)),
    ),
    max_size=8,
)


def _peer_wire(role: Role, specs: list[tuple[str, Any]]) -> tuple[bytes, list[object], list[bytes]]:
    """The peer's bytes for ``specs``, the events the connection must report, and the ping
    payloads it must answer."""
    peer = peer_of(role)
    wire = bytearray()
    expected: list[object] = []
    pings: list[bytes] = []
    for kind, payload in specs:
        if kind in ("text", "binary"):
            wire += peer.send_data(payload, True)
            expected.append(payload)
        elif kind in ("fragments", "binary-fragments"):
            for index, part in enumerate(payload):
                wire += peer.send_data(part, index == len(payload) - 1)
            expected.append(("" if kind == "fragments" else b"").join(payload))
        elif kind == "ping":
            wire += peer.ping(payload)
            pings.append(payload)
        else:
            wire += peer.pong(payload)
            expected.append(Pong(payload))
    return bytes(wire), expected, pings


@pytest.mark.parametrize("role", list(Role))
@settings(max_examples=100, deadline=None)
@given(specs=_specs, cuts=st.lists(st.integers(1, 70_000), max_size=6))
def test_each_role_reads_its_peer_as_wsproto_does(role: Role, specs: list[tuple[str, Any]], cuts: list[int]) -> None:
    wire, expected, pings = _peer_wire(role, specs)
    conn = WebSocketConnection(role, max_message_size=1 << 20)
    events: list[object] = []
    answered = bytearray()
    start = 0
    for end in sorted({min(offset, len(wire)) for offset in cuts} | {len(wire)}):
        data = wire[start:end]
        while data or conn.input_held:  # held input is read before the next bytes
            events += conn.receive_data(data)
            data = b""
            queued = conn.has_bytes_to_send
            sent = conn.bytes_to_send()
            assert queued is bool(sent) and not conn.has_bytes_to_send  # the attribute says what bytes_to_send has
            answered += sent
        start = end
    assert events == expected
    assert read_as(role, bytes(answered)) == [(Opcode.PONG, payload) for payload in pings]
    assert conn.pings_answered == len(pings) and conn.state is ConnectionState.OPEN


@pytest.mark.parametrize("role", list(Role))
@settings(max_examples=100, deadline=None)
@given(text=texts, data=st.binary(max_size=300), ping=st.binary(max_size=20), code=st.sampled_from([1000, 1001, 4408]))
def test_what_each_role_sends_its_peer_reads_unchanged(
    role: Role, text: str, data: bytes, ping: bytes, code: int
) -> None:
    conn = WebSocketConnection(role, max_message_size=1 << 20)
    wire = conn.send_text(text) + conn.send_bytes(data) + conn.ping(ping)
    conn.close(code, "bye")
    wire += conn.bytes_to_send()
    assert read_as(role, wire) == [
        (Opcode.TEXT, text),
        (Opcode.BINARY, data),
        (Opcode.PING, ping),
        (Opcode.CLOSE, (code, "bye")),
    ]
    masked = parse_header(conn.send_text(text))
    assert masked is not None and masked.masked is (role is Role.CLIENT)  # RFC 6455 5.1


@pytest.mark.parametrize("role", list(Role))
def test_each_role_refuses_frames_masked_the_wrong_way_with_1002(role: Role) -> None:
    conn = WebSocketConnection(role, max_message_size=1024)
    wrong = encode_text_frame("masked the wrong way", masked=role is Role.CLIENT)
    events = conn.receive_data(wrong + encode_text_frame("after", masked=role is Role.SERVER))
    assert len(events) == 1 and isinstance(events[0], Broken) and conn.state is ConnectionState.CLOSED
    assert read_as(role, conn.bytes_to_send()) == [(Opcode.CLOSE, (1002, "invalid frame"))]


@pytest.mark.parametrize("role", list(Role))
def test_each_role_refuses_text_that_is_not_utf8_with_1007(role: Role) -> None:
    conn = WebSocketConnection(role, max_message_size=1024)
    frame = encode_text_frame("ok", masked=role is Role.SERVER)
    bad = bytes(peer_of(role).send_data(b"\xff\xfe", True))
    bad = bytes([0x81]) + bad[1:]  # the binary frame's payload as a text frame
    assert conn.receive_data(frame + bad) == ["ok"] and conn.input_held  # "ok" is answered first
    assert not conn.has_bytes_to_send
    events = conn.receive_data(b"")
    assert len(events) == 1 and isinstance(events[0], Broken) and conn.state is ConnectionState.CLOSED
    assert read_as(role, conn.bytes_to_send()) == [(Opcode.CLOSE, (1007, "invalid frame"))]


@pytest.mark.parametrize("role", list(Role))
def test_a_header_announcing_more_than_the_limit_is_refused_before_its_payload(role: Role) -> None:
    """Nothing of the payload is waited for: the header's length (with what arrived of the
    message before it) already crosses the limit."""
    peer, conn = peer_of(role), WebSocketConnection(role, max_message_size=100)
    frame = bytes(peer.send_data("x" * 1000, True))
    header = frame[: len(frame) - 1000]
    assert conn.receive_data(header) == [TooLarge(1000, 100, True)] and conn.state is ConnectionState.REFUSING
    assert read_as(role, conn.bytes_to_send()) == [(Opcode.CLOSE, (1009, "message too big"))]
    other, fragmented = peer_of(role), WebSocketConnection(role, max_message_size=100)
    first = bytes(other.send_data("x" * 60, False))
    second = bytes(other.send_data("y" * 60, True))
    assert fragmented.receive_data(first) == []
    assert fragmented.receive_data(second[: len(second) - 60]) == [TooLarge(120, 100, True)]


@pytest.mark.parametrize("role", list(Role))
def test_each_role_refuses_a_message_over_the_limit_with_1009(role: Role) -> None:
    peer, conn = peer_of(role), WebSocketConnection(role, max_message_size=100)
    wire = bytes(peer.send_data("x" * 60, False)) + bytes(peer.send_data("y" * 60, True))
    events = conn.receive_data(wire)
    assert events == [TooLarge(120, 100, True)] and conn.state is ConnectionState.REFUSING
    assert read_as(role, conn.bytes_to_send()) == [(Opcode.CLOSE, (1009, "message too big"))]
    assert conn.receive_data(bytes(peer.close(1009))) == [PeerClosed(1009, "", False)]


# -- what the server's /ws path asks of the server role -----------------------------------


def test_the_server_answers_text_that_is_not_utf8_with_its_reply_then_1007() -> None:
    conn = WebSocketConnection(Role.SERVER, max_message_size=1024)
    conn.invalid_text_reply = '{"type": "error"}'
    bad = bytes([0x81]) + bytes(peer_of(Role.SERVER).send_data(b"\xc0\xaf", True))[1:]
    events = conn.receive_data(bad)
    assert len(events) == 1 and isinstance(events[0], Broken) and conn.state is ConnectionState.CLOSED
    assert read_as(Role.SERVER, conn.bytes_to_send()) == [
        (Opcode.TEXT, '{"type": "error"}'),
        (Opcode.CLOSE, (1007, "invalid frame")),
    ]


def _large_text_frame(text: str) -> bytes:
    return bytes(peer_of(Role.SERVER).send_data(text, True))


def test_a_large_text_frame_waits_for_admit_then_arrives_whole() -> None:
    conn = WebSocketConnection(Role.SERVER, max_message_size=FAST_FRAME_LIMIT * 4, collect_large=True)
    text = "é" * FAST_FRAME_LIMIT  # two bytes each: over the fast limit
    frame = _large_text_frame(text) + encode_text_frame("next", masked=True)
    assert conn.receive_data(frame[:1000]) == [LargeFrame(len(text.encode()))] and conn.large_offered
    assert conn.receive_data(frame[1000:]) == [LargeFrame(len(text.encode()))]  # asked again until decided
    conn.admit()
    events = conn.receive_data(b"")
    assert len(events) == 2 and isinstance(events[0], LargeText) and events[1] == "next"
    assert bytes(events[0].data).decode() == text and not conn.large_offered


def test_a_skipped_large_frame_is_read_and_dropped() -> None:
    conn = WebSocketConnection(Role.SERVER, max_message_size=FAST_FRAME_LIMIT * 4, collect_large=True)
    frame = _large_text_frame("x" * (FAST_FRAME_LIMIT + 1)) + encode_text_frame("next", masked=True)
    assert conn.receive_data(frame) == [LargeFrame(FAST_FRAME_LIMIT + 1)]
    conn.skip()
    assert conn.receive_data(b"") == ["next"]


def test_a_large_frame_that_is_not_utf8_fails_the_connection_with_1007() -> None:
    conn = WebSocketConnection(Role.SERVER, max_message_size=FAST_FRAME_LIMIT * 4, collect_large=True)
    frame = bytes([0x81]) + bytes(peer_of(Role.SERVER).send_data(b"\xff" * (FAST_FRAME_LIMIT + 1), True))[1:]
    assert conn.receive_data(frame) == [LargeFrame(FAST_FRAME_LIMIT + 1)]
    conn.admit()
    events = conn.receive_data(b"")
    assert len(events) == 1 and isinstance(events[0], Broken) and conn.state is ConnectionState.CLOSED
    assert read_as(Role.SERVER, conn.bytes_to_send()) == [(Opcode.CLOSE, (1007, "invalid frame"))]


def test_a_refusing_connection_does_not_offer_large_frames() -> None:
    conn = WebSocketConnection(Role.SERVER, max_message_size=FAST_FRAME_LIMIT * 4, collect_large=True)
    conn.refuse(1008, "refused")
    frame = _large_text_frame("x" * (FAST_FRAME_LIMIT + 1)) + bytes(peer_of(Role.SERVER).close(1008))
    assert conn.receive_data(frame) == [PeerClosed(1008, "", False)]


# -- replies in arrival order (Autobahn|Testsuite 3.x, 4.x, 5.6-5.20) -----------------------
# A transport writes bytes_to_send() after each receive_data() call, then answers the messages
# it returned, then (while input_held) calls receive_data(b"") before reading more: the peer
# then sees every reply in the order of what it sent, however the bytes were cut into reads.


def _echo_transport(conn: WebSocketConnection, reads: list[bytes]) -> bytes:
    """What a transport that follows the connection's contract writes for ``reads``, echoing
    every message (the Autobahn testee's application)."""
    out = bytearray()
    for data in reads:
        while data or conn.input_held:
            events = conn.receive_data(data)
            data = b""
            out += conn.bytes_to_send()  # the replies of this call come before its messages
            for event in events:
                if isinstance(event, str):
                    out += conn.send_text(event)
                elif isinstance(event, bytes):
                    out += conn.send_bytes(event)
            if conn.closed:
                return bytes(out)
    return bytes(out)


@pytest.mark.parametrize("role", list(Role))
def test_a_pong_inside_a_fragmented_message_goes_out_before_its_echo(role: Role) -> None:
    """Autobahn 5.6: a ping between the fragments of a message, all in one read."""
    peer = peer_of(role)
    wire = bytes(peer.send_data("frag", False)) + bytes(peer.ping(b"p")) + bytes(peer.send_data("ment", True))
    conn = WebSocketConnection(role, max_message_size=1024)
    assert conn.receive_data(wire) == ["fragment"] and not conn.input_held
    assert read_as(role, conn.bytes_to_send()) == [(Opcode.PONG, b"p")]
    assert read_as(role, _echo_transport(WebSocketConnection(role, max_message_size=1024), [wire])) == [
        (Opcode.PONG, b"p"),
        (Opcode.TEXT, "fragment"),
    ]


@pytest.mark.parametrize("role", list(Role))
def test_a_ping_after_a_message_is_held_until_the_message_is_answered(role: Role) -> None:
    peer = peer_of(role)
    wire = bytes(peer.send_data("one", True)) + bytes(peer.ping(b"p")) + bytes(peer.send_data("two", True))
    conn = WebSocketConnection(role, max_message_size=1024)
    assert conn.receive_data(wire) == ["one"] and conn.input_held and not conn.has_bytes_to_send
    assert conn.receive_data(b"") == ["two"] and not conn.input_held
    assert read_as(role, conn.bytes_to_send()) == [(Opcode.PONG, b"p")] and conn.pings_answered == 1
    assert read_as(role, _echo_transport(WebSocketConnection(role, max_message_size=1024), [wire])) == [
        (Opcode.TEXT, "one"),
        (Opcode.PONG, b"p"),
        (Opcode.TEXT, "two"),
    ]


@pytest.mark.parametrize("role", list(Role))
def test_bytes_given_while_input_is_held_are_read_after_it(role: Role) -> None:
    peer = peer_of(role)
    conn = WebSocketConnection(role, max_message_size=1024)
    assert conn.receive_data(bytes(peer.send_data("one", True)) + bytes(peer.ping(b"p"))) == ["one"]
    assert conn.input_held
    assert conn.receive_data(bytes(peer.send_data("two", True))) == ["two"] and not conn.input_held
    assert read_as(role, conn.bytes_to_send()) == [(Opcode.PONG, b"p")]


@pytest.mark.parametrize("role", list(Role))
@pytest.mark.parametrize(
    "bad",
    [
        pytest.param(lambda peer: bytes([0xA1]) + bytes(peer.send_data("rsv", True))[1:], id="reserved-bit"),  # 3.2
        pytest.param(lambda peer: bytes([0x85]) + bytes(peer.send_data("", True))[1:], id="reserved-opcode"),  # 4.1.3
        pytest.param(
            lambda peer: bytes([0x00]) + bytes(peer.send_data("c", True))[1:], id="nothing-to-continue"
        ),  # 5.15
        pytest.param(lambda peer: bytes([0x81]) + bytes(peer.send_data(b"\xff", True))[1:], id="not-utf8"),  # 6.x
    ],
)
def test_a_message_before_a_bad_frame_is_answered_before_the_close(role: Role, bad: Any) -> None:
    """Autobahn 3.2, 4.1.3, 5.15: the echo of the message comes first, then the close frame."""
    peer = peer_of(role)
    wire = bytes(peer.send_data("Hello", True)) + bad(peer) + bytes(peer.ping(b"never answered"))
    conn = WebSocketConnection(role, max_message_size=1024)
    frames = read_as(role, _echo_transport(conn, [wire]))
    assert frames[0] == (Opcode.TEXT, "Hello") and len(frames) == 2
    assert frames[1][0] is Opcode.CLOSE and conn.state is ConnectionState.CLOSED


@pytest.mark.parametrize("role", list(Role))
def test_a_close_after_a_message_is_echoed_after_its_answer(role: Role) -> None:
    peer = peer_of(role)
    for close in (bytes(peer.close(1000, "bye")), bytes(peer_of(role).close(1002))):  # read here / by wsproto
        conn = WebSocketConnection(role, max_message_size=1024)
        wire = bytes(peer_of(role).send_data("last", True)) + close
        assert conn.receive_data(wire) == ["last"] and conn.input_held and conn.state is ConnectionState.OPEN
        frames = read_as(role, _echo_transport(WebSocketConnection(role, max_message_size=1024), [wire]))
        assert frames[0] == (Opcode.TEXT, "last") and frames[1][0] is Opcode.CLOSE and len(frames) == 2


@pytest.mark.parametrize("role", list(Role))
def test_a_message_over_the_limit_after_a_message_is_refused_after_its_answer(role: Role) -> None:
    peer = peer_of(role)
    wire = bytes(peer.send_data("fits", True)) + bytes(peer.send_data("x" * 200, True))
    conn = WebSocketConnection(role, max_message_size=100)
    assert conn.receive_data(wire) == ["fits"] and conn.input_held
    assert conn.receive_data(b"") == [TooLarge(200, 100, True)] and conn.state is ConnectionState.REFUSING
    frames = read_as(role, _echo_transport(WebSocketConnection(role, max_message_size=100), [wire]))
    assert frames == [(Opcode.TEXT, "fits"), (Opcode.CLOSE, (1009, "message too big"))]


@pytest.mark.parametrize("role", list(Role))
@settings(max_examples=150, deadline=None)
@given(specs=ordered_specs, ending=endings, cuts=st.lists(st.integers(1, 70_000), max_size=6))
def test_replies_go_out_in_arrival_order_however_reads_are_cut(
    role: Role, specs: list[tuple[str, Any]], ending: str, cuts: list[int]
) -> None:
    wire, replies = ordered_wire(role, specs, ending)
    conn = WebSocketConnection(role, max_message_size=1 << 20)
    assert read_as(role, _echo_transport(conn, cut(wire, cuts))) == replies
    assert conn.state is (ConnectionState.OPEN if ending == "none" else ConnectionState.CLOSED)
