"""Connections pending together are accepted together (``accept_bursts``), and served."""

from __future__ import annotations

import socket

import pytest
import trio

from openenv_anyio.server.hypercorn_adapter.accept_bursts import BurstListener

from .conftest import ask, ws_connect
from .envs import InlineTracked


async def _listener_with_pending(count: int) -> tuple[BurstListener, list[socket.socket]]:
    """A burst listener on a loopback port with ``count`` connections in its backlog."""
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    listener = BurstListener(listeners[0])
    port = listener.socket.getsockname()[1]
    return listener, [socket.create_connection(("127.0.0.1", port)) for _ in range(count)]


@pytest.mark.trio
async def test_burst_listener_hands_out_every_pending_connection() -> None:
    with trio.fail_after(10):
        listener, clients = await _listener_with_pending(40)
        try:
            streams = [await listener.accept() for _ in range(40)]
            peers = {stream.socket.getpeername() for stream in streams}
            assert peers == {client.getsockname() for client in clients}
            by_peer = {stream.socket.getpeername(): stream for stream in streams}
            for index, client in enumerate(clients):  # every stream is a working connection
                await by_peer[client.getsockname()].send_all(b"%d" % index)
                client.settimeout(5)
                assert client.recv(16) == b"%d" % index
            for stream in streams:
                await stream.aclose()
        finally:
            for client in clients:
                client.close()
            await listener.aclose()


@pytest.mark.trio
async def test_close_drops_connections_accepted_but_not_handed_out() -> None:
    with trio.fail_after(10):
        listener, clients = await _listener_with_pending(5)
        try:
            first = await listener.accept()
            await listener.aclose()  # the other four were taken from the backlog: closed now
            for client in clients:
                client.settimeout(5)
                if client.getsockname() != first.socket.getpeername():
                    assert client.recv(1) == b""
            await first.aclose()
        finally:
            for client in clients:
                client.close()


def test_server_serves_many_connections_opened_together(serve) -> None:
    with serve(InlineTracked) as server:
        sockets = []
        for _ in range(64):  # pending together in the backlog
            sockets.append(socket.create_connection(("127.0.0.1", int(server.url.rsplit(":", 1)[1]))))
        try:
            for _ in range(8):
                with ws_connect(server) as ws:
                    assert ask(ws, {"type": "reset", "data": {}})["type"] == "observation"
        finally:
            for sock in sockets:
                sock.close()
