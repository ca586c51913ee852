"""The ``/ws`` fast path (``hypercorn_adapter.direct_ws`` over ``openenv_anyio.ws``): frames it decodes
itself and frames it leaves to wsproto, in any split or order a client may send them (RFC 6455,
``WS-CONN-*``)."""

from __future__ import annotations

import json
import socket
from collections.abc import Callable
from typing import Any, ClassVar
from urllib.parse import urlsplit

import pytest
from wsproto import ConnectionType, WSConnection
from wsproto.events import AcceptConnection, CloseConnection, Pong, Request, TextMessage

from openenv_anyio.ws import FAST_FRAME_LIMIT

from .conftest import ask, wait_for, ws_connect

TIMEOUT = 10.0


class EchoText:
    """Echoes the action's ``message`` (inline: no thread)."""

    NON_BLOCKING: ClassVar[bool] = True

    def reset(self, **_: Any) -> dict[str, Any]:
        return {"echo": ""}

    def step(self, action: dict[str, Any]) -> dict[str, Any]:
        return {"echo": action.get("message", "")}

    @property
    def state(self) -> dict[str, Any]:
        return {"episode_id": None, "step_count": 0}


def client_frame(payload: bytes, *, opcode: int = 0x1, fin: bool = True, mask: bool = True) -> bytes:
    """A client frame, masked with a fixed key (written independently of ``openenv_anyio.ws``)."""
    key = b"\x37\xfa\x21\x3d"
    head = bytes([(0x80 if fin else 0) | opcode])
    n = len(payload)
    flag = 0x80 if mask else 0
    if n < 126:
        head += bytes([flag | n])
    elif n < 65536:
        head += bytes([flag | 126]) + n.to_bytes(2, "big")
    else:
        head += bytes([flag | 127]) + n.to_bytes(8, "big")
    if not mask:
        return head + payload
    return head + key + bytes(b ^ key[i % 4] for i, b in enumerate(payload))


def step_frame(message: str) -> bytes:
    return client_frame(json.dumps({"type": "step", "data": {"message": message}}).encode())


RESET = client_frame(b'{"type": "reset", "data": {}}')


class RawClient:
    """A WebSocket client on a plain socket: wsproto for the handshake and for reading."""

    def __init__(self, url: str, *, first_frames: bytes = b"") -> None:
        parts = urlsplit(url)
        self.sock = socket.create_connection((parts.hostname, parts.port), timeout=TIMEOUT)
        self.ws = WSConnection(ConnectionType.CLIENT)
        self.sock.sendall(self.ws.send(Request(host=parts.netloc, target="/ws")) + first_frames)
        self.events: list[Any] = []
        assert isinstance(self.next_event(), AcceptConnection)

    def next_event(self) -> Any:
        while not self.events:
            data = self.sock.recv(1 << 20)
            self.ws.receive_data(data or None)
            self.events += list(self.ws.events())
        return self.events.pop(0)

    def answer(self) -> dict[str, Any]:
        text = ""
        while True:
            event = self.next_event()
            assert isinstance(event, TextMessage), event
            text += event.data
            if event.message_finished:
                return json.loads(text)

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def client(serve):
    opened: list[RawClient] = []

    def connect(**kwargs: Any) -> RawClient:
        opened.append(RawClient(server.url, **kwargs))
        return opened[-1]

    with serve(EchoText) as server:
        yield connect
    for raw in opened:
        raw.close()


def test_frames_sent_with_the_handshake_are_answered(client) -> None:
    raw = client(first_frames=RESET + step_frame("early"))
    assert raw.answer()["type"] == "observation"
    assert raw.answer()["data"]["observation"]["echo"] == "early"


def test_frames_split_byte_by_byte(client) -> None:
    raw = client()
    for byte in RESET + step_frame("dribbled ✓"):
        raw.sock.sendall(bytes([byte]))
    raw.answer()
    assert raw.answer()["data"]["observation"]["echo"] == "dribbled ✓"


def test_fragmented_message_with_a_ping_between_fragments(client) -> None:
    raw = client()
    raw.sock.sendall(RESET)
    raw.answer()
    body = json.dumps({"type": "step", "data": {"message": "in two parts"}}).encode()
    raw.sock.sendall(
        client_frame(body[:10], fin=False)
        + client_frame(b"are you there", opcode=0x9)
        + client_frame(body[10:], opcode=0x0)
        + step_frame("after")
    )
    pong = raw.next_event()
    assert isinstance(pong, Pong) and pong.payload == b"are you there"
    assert raw.answer()["data"]["observation"]["echo"] == "in two parts"
    assert raw.answer()["data"]["observation"]["echo"] == "after"


def test_message_over_the_fast_limit_goes_through_wsproto(client) -> None:
    raw = client()
    raw.sock.sendall(RESET)
    raw.answer()
    big = "x" * (FAST_FRAME_LIMIT + 1000)
    raw.sock.sendall(step_frame(big) + step_frame("small"))
    assert raw.answer()["data"]["observation"]["echo"] == big
    assert raw.answer()["data"]["observation"]["echo"] == "small"


# RFC 6455 7.1.7/8.1 and WS-CLOSE-3: bytes that are not a valid WebSocket message are
# answered with a close frame naming why (never a bare TCP close, which a client sees as 1006);
# a text message that is not UTF-8 is first told INVALID_JSON (WS-CONN-5).
@pytest.mark.parametrize(
    ("frame", "code"),
    [
        (client_frame(b'{"type": "reset"}', mask=False), 1002),
        (client_frame(b"{}", opcode=0x3), 1002),  # a reserved data opcode
        (client_frame(b"{}", opcode=0xB), 1002),  # a reserved control opcode
        (bytes([0xC1]) + client_frame(b"{}")[1:], 1002),  # RSV1 without a negotiated extension
    ],
    ids=["unmasked", "reserved-data-opcode", "reserved-control-opcode", "rsv1"],
)
def test_broken_frame_is_closed_with_its_code(client, frame: bytes, code: int) -> None:
    raw = client()
    raw.sock.sendall(RESET)
    raw.answer()
    raw.sock.sendall(frame + step_frame("never answered"))
    event = raw.next_event()
    assert isinstance(event, CloseConnection) and event.code == code, event


@pytest.mark.parametrize(
    "frames",
    [
        [client_frame(b'{"type": "\xff\xfe"}')],  # on the fast path
        [client_frame(b'{"type": "st', fin=False), client_frame(b'\xc3"}', opcode=0x0)],  # fragmented
        [client_frame(b'{"type": "\xed\xa0\x80"}' + b" " * 2_000_000)],  # over the fast path's limit
    ],
    ids=["whole", "fragmented", "large"],
)
def test_text_that_is_not_utf8_gets_invalid_json_then_close_1007(client, frames: list[bytes]) -> None:
    raw = client()
    raw.sock.sendall(RESET)
    raw.answer()
    try:
        raw.sock.sendall(b"".join(frames))
    except (BrokenPipeError, ConnectionResetError):
        pass  # the server may refuse the text before the rest of a large frame arrives
    answer = raw.answer()
    assert answer["type"] == "error" and answer["data"]["code"] == "INVALID_JSON", answer
    event = raw.next_event()
    assert isinstance(event, CloseConnection) and event.code == 1007, event


def test_ui_channel_closes_text_that_is_not_utf8_with_1007(serve) -> None:
    with serve(EchoText) as server:
        parts = urlsplit(server.url)
        sock = socket.create_connection((parts.hostname, parts.port), timeout=TIMEOUT)
        ws = WSConnection(ConnectionType.CLIENT)
        sock.sendall(ws.send(Request(host=parts.netloc, target="/ws/ui")))
        events: list[Any] = []
        while not any(isinstance(event, AcceptConnection) for event in events):
            ws.receive_data(sock.recv(65536) or None)
            events += list(ws.events())
        sock.sendall(client_frame(b"\xff"))
        while True:
            ws.receive_data(sock.recv(65536) or None)
            closes = [event for event in ws.events() if isinstance(event, CloseConnection)]
            if closes:
                assert closes[0].code == 1007
                break
        sock.close()


def test_peer_vanishing_ends_the_session(serve) -> None:
    with serve(EchoText) as server:
        raw = RawClient(server.url)
        raw.sock.sendall(RESET)
        raw.answer()
        raw.sock.close()
        wait_for(lambda: server.stats()["active_sessions"] == 0 and server.stats()["live_envs"] == 0)


def test_permessage_deflate_is_declined_and_sessions_work(serve) -> None:
    """Answers are sent uncompressed, so the offer of compression is declined (RFC 7692 5)."""
    with serve(EchoText) as server:
        with ws_connect(server, compression="deflate") as ws:
            assert ws.response.headers.get("Sec-WebSocket-Extensions") is None
            assert ask(ws, {"type": "reset", "data": {}})["type"] == "observation"
            answer = ask(ws, {"type": "step", "data": {"message": "plain"}})
            assert answer["data"]["observation"]["echo"] == "plain"


class StepOrder(EchoText):
    """Records the message of every step, across sessions, in the order the env sees them,
    and calls ``then`` (once) at the second step whose message is ``busy``."""

    seen: ClassVar[list[str]] = []
    then: ClassVar[Callable[[], object] | None] = None

    def step(self, action: dict[str, Any]) -> dict[str, Any]:
        message = action.get("message", "")
        StepOrder.seen.append(message)
        if message == "busy" and StepOrder.then is not None and len(StepOrder.seen) == 2:
            StepOrder.then()
            StepOrder.then = None
        return super().step(action)


def test_frames_sent_together_do_not_hold_the_loop_until_all_are_answered(serve) -> None:
    """A peer that writes 5,000 steps at once gets them answered one per pass of the
    scheduler, like every other session's next frame: another session's step, in its socket
    from the second of them on, is answered among the first few, not after all the ones read
    with them (one read takes hundreds of these 47-byte frames)."""
    StepOrder.seen.clear()
    with serve(StepOrder) as server:
        busy, other = RawClient(server.url), RawClient(server.url)
        try:
            for raw in (busy, other):
                raw.sock.sendall(RESET)
                raw.answer()
            StepOrder.then = lambda: other.sock.sendall(step_frame("other"))
            busy.sock.sendall(client_frame(b'{"type":"step","data":{"message":"busy"}}') * 5000)
            assert other.answer()["data"]["observation"]["echo"] == "other"
            assert StepOrder.seen.index("other") < 100, StepOrder.seen.index("other")
            assert all(busy.answer()["data"]["observation"]["echo"] == "busy" for _ in range(5000))
        finally:
            StepOrder.then = None
            busy.close()
            other.close()
    assert StepOrder.seen.count("busy") == 5000
