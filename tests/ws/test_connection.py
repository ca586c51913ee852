"""The client's sans-IO connection: events and outbound bytes for what arrives, state by the
transition table, checked against wsproto (no sockets)."""

from __future__ import annotations

from wsproto.frame_protocol import FrameProtocol, Opcode

from openenv_anyio.ws import (
    TRANSITIONS,
    Broken,
    ConnectionState,
    Message,
    PeerClosed,
    Pong,
    TooLarge,
    WebSocketConnection,
    encode_text_frame,
)


def _server() -> FrameProtocol:
    return FrameProtocol(client=False, extensions=[])


def _read_as_server(data: bytes) -> list[tuple[Opcode, object]]:
    proto = _server()
    proto.receive_bytes(data)
    return [(frame.opcode, frame.payload) for frame in proto.received_frames()]


def test_messages_fast_and_general_arrive_in_order() -> None:
    server, conn = _server(), WebSocketConnection(max_message_size=1 << 20)
    data = bytes(server.send_data("one", True)) + bytes(server.send_data("tw", False)) + bytes(server.send_data("o", True))
    data += bytes(server.send_data(b"\x00bin", True)) + bytes(server.send_data("three", True))
    assert conn.receive_data(data) == [Message("one"), Message("two"), Message(b"\x00bin"), Message("three")]
    assert conn.state is ConnectionState.OPEN and not conn.has_bytes_to_send


def test_pings_are_answered_and_pongs_reported() -> None:
    server, conn = _server(), WebSocketConnection(max_message_size=1024)
    assert conn.receive_data(bytes(server.ping(b"hi")) + bytes(server.pong(b"yo"))) == [Pong(b"yo")]
    assert conn.pings_answered == 1
    assert _read_as_server(conn.bytes_to_send()) == [(Opcode.PONG, b"hi")]


def test_peer_close_is_echoed_and_ends_the_connection() -> None:
    server, conn = _server(), WebSocketConnection(max_message_size=1024)
    events = conn.receive_data(bytes(server.close(4408, "idle")) + bytes(server.send_data("late", True)))
    assert events == [PeerClosed(4408, "idle")] and conn.state is ConnectionState.CLOSED
    assert _read_as_server(conn.bytes_to_send()) == [(Opcode.CLOSE, (4408, "idle"))]
    assert conn.receive_data(bytes(server.send_data("after", True))) == []


def test_our_close_then_the_peers_is_not_echoed() -> None:
    server, conn = _server(), WebSocketConnection(max_message_size=1024)
    conn.close(1000)
    assert conn.state is ConnectionState.CLOSING
    assert _read_as_server(conn.bytes_to_send()) == [(Opcode.CLOSE, (1000, ""))]
    assert conn.receive_data(bytes(server.send_data("still", True)) + bytes(server.close(1000))) == [
        Message("still"),
        PeerClosed(1000, ""),
    ]
    assert conn.state is ConnectionState.CLOSED and not conn.has_bytes_to_send


def test_a_message_over_the_limit_is_refused_with_1009_as_it_crosses_it() -> None:
    server, conn = _server(), WebSocketConnection(max_message_size=100)
    frame = bytes(server.send_data("x" * 1000, True))
    events = conn.receive_data(frame[:150])  # the limit is crossed before the frame is whole
    assert events == [TooLarge(1000, 100, True)] and conn.state is ConnectionState.REFUSING
    assert _read_as_server(conn.bytes_to_send()) == [(Opcode.CLOSE, (1009, "message too big"))]
    assert conn.receive_data(frame[150:] + bytes(server.send_data("dropped", True))) == []
    assert conn.receive_data(bytes(server.close(1009))) == [PeerClosed(1009, "")]
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
