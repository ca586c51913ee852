"""WebSocket handshakes are answered first come, first served, and a client that left before
its answer costs no session (``hypercorn_adapter.handshake_queue``)."""

from __future__ import annotations

import socket
from urllib.parse import urlsplit

import pytest
import trio

from openenv_anyio.server.hypercorn_adapter.handshake_queue import first_come_first_served, peer_gone
from openenv_anyio.server.request_head import peek_now

from .conftest import ask, wait_for, ws_connect
from .envs import InlineTracked, Tracked

UPGRADE = (
    b"GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
)


def _created() -> int:
    with Tracked.lock:
        return Tracked.live + Tracked.closed


def test_a_client_that_left_before_its_answer_gets_no_session(serve) -> None:
    """The request is read, but its client has closed: no 101, no environment, no session."""
    with serve(InlineTracked) as server:
        address = ("127.0.0.1", urlsplit(server.url).port)
        before = _created()
        gone = []
        for _ in range(20):
            client = socket.create_connection(address)
            client.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, 1)  # held back, then sent with the FIN:
            client.sendall(UPGRADE)
            client.shutdown(socket.SHUT_WR)  # the server sees the request only once its client has left
            gone.append(client)
        for client in gone:
            client.settimeout(10)
            assert client.recv(4096) == b""  # closed without an answer
            client.close()
        with ws_connect(server) as ws:  # a client that waits is served as ever
            assert ask(ws, {"type": "reset", "data": {}})["type"] == "observation"
        wait_for(lambda: _created() == before + 1)


@pytest.mark.trio
async def test_handshakes_start_in_arrival_order_a_few_at_once() -> None:
    """With two places, six waiting upgrade requests are served two at a time, each freed
    place going to the longest waiting; a connection with no request yet is not held back."""
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    port = listeners[0].socket.getsockname()[1]
    started: list[int] = []
    done = {number: trio.Event() for number in (-1, *range(6))}

    async def handler(stream: trio.SocketStream) -> None:
        number = -1
        if peek_now(stream.socket):
            request = await stream.receive_some(4096)
            number = int(request.split(b"X-Number: ")[1].split(b"\r\n")[0])
        started.append(number)
        try:
            await done[number].wait()
        finally:
            await stream.aclose()

    async def started_are(expected: list[int]) -> None:
        while len(started) < len(expected):
            await trio.sleep(0.01)
        await trio.sleep(0.05)  # and no more
        assert started == expected

    serve = first_come_first_served(handler, at_once=2)
    clients: list[socket.socket] = []
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            for number in range(6):
                client = socket.create_connection(("127.0.0.1", port))
                client.sendall(UPGRADE.replace(b"\r\n\r\n", b"\r\nX-Number: %d\r\n\r\n" % number))
                clients.append(client)
                stream = await listeners[0].accept()
                await trio.sleep(0.01)  # the request is in the socket
                nursery.start_soon(serve, stream)
                await trio.sleep(0.01)
            clients.append(socket.create_connection(("127.0.0.1", port)))  # silent
            nursery.start_soon(serve, await listeners[0].accept())
            await started_are([0, 1, -1])  # both places taken; the silent one is not held back
            done[1].set()
            await started_are([0, 1, -1, 2])
            done[0].set()
            await started_are([0, 1, -1, 2, 3])
            done[3].set()
            await started_are([0, 1, -1, 2, 3, 4])
            for event in done.values():
                event.set()
            await started_are([0, 1, -1, 2, 3, 4, 5])
    for client in clients:
        client.close()
    await listeners[0].aclose()


def test_peer_gone_tells_a_closed_peer_from_a_waiting_one() -> None:
    with socket.create_server(("127.0.0.1", 0)) as listener:
        client = socket.create_connection(listener.getsockname())
        ours, _ = listener.accept()
        try:
            assert not peer_gone(ours)
            client.sendall(UPGRADE)
            assert not peer_gone(ours)  # a request waiting to be read: its client waits
            client.close()
            wait_for(lambda: peer_gone(ours), timeout=5)
        finally:
            ours.close()
