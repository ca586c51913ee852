"""The opening handshake against scripted servers: what is accepted, what is refused."""

from __future__ import annotations

import re

import anyio
import pytest
from wsproto.frame_protocol import FrameProtocol
from wsproto.utilities import generate_accept_token

from openenv_anyio.client import CapacityReached, ConnectError, EnvClient, HandshakeRejected
from openenv_anyio.core import Error, encode_frame

from .raw_server import RawPeer, raw_server

pytestmark = pytest.mark.anyio


def answer(key: bytes, *, accept: bytes | None = None, extra: bytes = b"") -> bytes:
    token = generate_accept_token(key) if accept is None else accept
    return (
        b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        b"Sec-WebSocket-Accept: " + token + b"\r\n" + extra + b"\r\n"
    )


async def read_key(peer: RawPeer) -> bytes:
    request = b""
    while b"\r\n\r\n" not in request:
        request += await peer.stream.receive(65536)
    match = re.search(rb"Sec-WebSocket-Key: (\S+)", request, re.IGNORECASE)
    assert match is not None and b"GET /ws HTTP/1.1" in request
    return match.group(1)


async def test_a_frame_in_the_same_packet_as_the_answer_is_not_lost() -> None:
    """The capacity error may follow the 101 answer at once (WS-CAP-1)."""
    capacity = Error("CAPACITY_REACHED", "full", {"active_sessions": 1, "max_sessions": 1})

    async def eager(peer: RawPeer) -> None:
        key = await read_key(peer)
        frame = FrameProtocol(client=False, extensions=[]).send_data(encode_frame(capacity), True)
        await peer.stream.send(answer(key) + bytes(frame))
        await peer.stream.aclose()

    async with raw_server(eager, handshake=False) as url:
        async with EnvClient(url) as env:
            with anyio.fail_after(5), pytest.raises(CapacityReached) as caught:
                await env.reset()
    assert caught.value.extra == {"active_sessions": 1, "max_sessions": 1}


@pytest.mark.parametrize(
    ("make_answer", "complaint"),
    [
        (lambda key: answer(key, accept=b"d3JvbmcgdG9rZW4="), "Sec-WebSocket-Accept"),
        (lambda key: answer(key, extra=b"Sec-WebSocket-Protocol: sneaky\r\n"), "not offered"),
        (lambda key: answer(key, extra=b"Sec-WebSocket-Extensions: permessage-deflate\r\n"), "extension"),
        (lambda key: answer(key).replace(b"Upgrade: websocket\r\n", b""), "Upgrade: websocket"),
        (lambda key: b"HTTP/1.1 nonsense\r\n\r\n", "invalid handshake answer"),
    ],
    ids=["bad-accept", "unoffered-subprotocol", "unoffered-extension", "no-upgrade", "not-http"],
)
async def test_invalid_handshake_answers_are_refused(make_answer: object, complaint: str) -> None:
    async def wrong(peer: RawPeer) -> None:
        key = await read_key(peer)
        await peer.stream.send(make_answer(key))  # type: ignore[operator]
        await anyio.sleep_forever()

    async with raw_server(wrong, handshake=False) as url:
        with anyio.fail_after(5), pytest.raises(ConnectError, match=complaint):
            async with EnvClient(url):
                pass


async def test_a_rejection_without_length_reads_the_body_to_the_end() -> None:
    async def reject(peer: RawPeer) -> None:
        await read_key(peer)
        await peer.stream.send(b"HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\n\r\ncome back later")
        await peer.stream.aclose()

    async with raw_server(reject, handshake=False) as url:
        with anyio.fail_after(5), pytest.raises(HandshakeRejected) as caught:
            async with EnvClient(url):
                pass
    assert caught.value.status == 503 and caught.value.body == b"come back later"


async def test_a_server_that_hangs_up_during_the_handshake() -> None:
    async def hang_up(peer: RawPeer) -> None:
        await read_key(peer)
        await peer.stream.aclose()

    async with raw_server(hang_up, handshake=False) as url:
        with anyio.fail_after(5), pytest.raises(ConnectError, match="closed the connection during the handshake"):
            async with EnvClient(url):
                pass
