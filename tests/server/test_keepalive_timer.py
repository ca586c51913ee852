"""Hypercorn's keep-alive timer, replaced by ``KeepAliveTimer``, still closes idle HTTP
connections and never a busy one (real Hypercorn, real sockets on loopback)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
import trio
from hypercorn.config import Config
from hypercorn.trio import serve, tcp_server

from openenv_anyio.server import hypercorn_adapter
from openenv_anyio.server.hypercorn_adapter.keepalive_timer import KeepAliveTimer

from .plain_asgi import app

pytestmark = pytest.mark.trio

KEEP_ALIVE_S = 0.3


@asynccontextmanager
async def _server() -> AsyncIterator[int]:
    config = Config()
    config.bind = ["127.0.0.1:0"]
    config.keep_alive_timeout = KEEP_ALIVE_S
    config.accesslog = config.errorlog = None
    with hypercorn_adapter.install() as engaged:
        assert engaged and tcp_server.TrioSingleTask is KeepAliveTimer  # the timer under test runs
        async with trio.open_nursery() as nursery:
            binds = await nursery.start(serve, app, config)
            yield int(binds[0].rsplit(":", 1)[1])
            nursery.cancel_scope.cancel()


async def _closed_by_server(stream: trio.SocketStream, within_s: float) -> bool:
    with trio.move_on_after(within_s):
        while await stream.receive_some(65536):
            pass
        return True
    return False


async def test_a_silent_connection_is_closed_after_the_keep_alive_timeout() -> None:
    with trio.fail_after(10):
        async with _server() as port:
            stream = await trio.open_tcp_stream("127.0.0.1", port)
            started = trio.current_time()
            assert await _closed_by_server(stream, 5)
            # behaviour, not speed: the timer must not close the connection before it is due
            assert trio.current_time() - started >= KEEP_ALIVE_S * 0.9


async def test_a_request_is_served_and_the_idle_connection_closed_afterwards() -> None:
    with trio.fail_after(10):
        async with _server() as port:
            stream = await trio.open_tcp_stream("127.0.0.1", port)
            await stream.send_all(b"GET / HTTP/1.1\r\nhost: x\r\n\r\n")
            answer = b""
            while not answer.endswith(b"ok"):
                answer += await stream.receive_some(65536)
            assert answer.startswith(b"HTTP/1.1 200")
            assert await _closed_by_server(stream, 5)  # the timer restarted after the request


async def test_a_websocket_outlives_the_keep_alive_timeout() -> None:
    with trio.fail_after(10):
        async with _server() as port:
            stream = await trio.open_tcp_stream("127.0.0.1", port)
            await stream.send_all(
                b"GET /ws HTTP/1.1\r\nhost: x\r\nupgrade: websocket\r\nconnection: upgrade\r\n"
                b"sec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\nsec-websocket-version: 13\r\n\r\n"
            )
            handshake = await stream.receive_some(65536)
            assert handshake.startswith(b"HTTP/1.1 101")
            assert not await _closed_by_server(stream, KEEP_ALIVE_S * 4)


async def test_restart_cancels_the_previous_timer_and_stop_cancels_one_not_yet_run() -> None:
    ran: list[str] = []

    async def timer(name: str) -> None:
        await trio.sleep(0.05)
        ran.append(name)

    class Group:  # what Hypercorn hands over: a task group exposing its nursery
        def __init__(self, nursery: trio.Nursery) -> None:
            self._nursery = nursery

    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            timers = KeepAliveTimer()
            await timers.restart(Group(nursery), lambda: timer("first"))
            await timers.restart(Group(nursery), lambda: timer("second"))
            await timers.stop()  # cancels "second" before it has run at all
            await timers.restart(Group(nursery), lambda: timer("third"))
    assert ran == ["third"]


class _Connection:
    """Stands in for Hypercorn's ``TCPServer`` as the timer sees it: the owner of the
    ``_idle_timeout`` method it is handed, with the connection's ``stream``."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.timed_out = False

    async def _idle_timeout(self) -> None:
        await trio.sleep(0.05)
        self.timed_out = True


@pytest.mark.parametrize(
    ("sent", "timer_starts"),
    [
        (b"GET / HTTP/1.1\r\nhost: x\r\n\r\n", False),  # the whole head is there: read next
        (b"GET / HTTP/1.1\r\nhost: x\r\n", True),  # incomplete: a slow client is still timed
        (b"", True),  # nothing yet: a silent client is still timed
        (b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", True),  # not HTTP/1.x: left to its protocol
    ],
)
async def test_the_first_timer_is_not_started_when_the_request_head_is_already_there(
    sent: bytes, timer_starts: bool
) -> None:
    class Group:
        def __init__(self, nursery: trio.Nursery) -> None:
            self._nursery = nursery

    with trio.fail_after(5):
        listener = (await trio.open_tcp_listeners(0, host="127.0.0.1"))[0]
        port = listener.socket.getsockname()[1]
        client = await trio.open_tcp_stream("127.0.0.1", port)
        server_side = await listener.accept()
        if sent:
            await client.send_all(sent)
            await trio.lowlevel.wait_readable(server_side.socket)  # the bytes are in its socket
        connection = _Connection(server_side)
        async with trio.open_nursery() as nursery:
            timers = KeepAliveTimer()
            await timers.restart(Group(nursery), connection._idle_timeout)
            assert len(nursery.child_tasks) == (1 if timer_starts else 0)
            await timers.restart(Group(nursery), connection._idle_timeout)  # a later restart always starts
            assert len(nursery.child_tasks) >= 1
        assert connection.timed_out
        for stream in (client, server_side, listener):
            await stream.aclose()
