"""A connection reaches Hypercorn once its first bytes arrive (``hypercorn_adapter.first_bytes``):
real sockets on loopback, and a real Hypercorn server for the stop."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio
from hypercorn.config import Config
from hypercorn.trio import serve
from hypercorn.trio.tcp_server import TCPServer
from hypercorn.trio.worker_context import WorkerContext

from openenv_anyio.server import hypercorn_adapter
from openenv_anyio.server.hypercorn_adapter.first_bytes import FirstBytes, first_bytes_for

from .plain_asgi import app

pytestmark = pytest.mark.trio


@asynccontextmanager
async def _accepted(waits: FirstBytes) -> AsyncIterator[tuple[trio.SocketStream, list[bytes], trio.Event]]:
    """A client stream to a listener whose one accepted connection goes through ``waits``; the
    handler records what it could read, and the event is set when the connection is done."""
    listener = (await trio.open_tcp_listeners(0, host="127.0.0.1"))[0]
    port = listener.socket.getsockname()[1]
    served: list[bytes] = []
    done = trio.Event()

    async def handler(stream: trio.SocketStream) -> None:
        served.append(await stream.receive_some(65536))
        await stream.aclose()

    serve_one = waits.wrap(handler)

    async def accept_one() -> None:
        stream = await listener.accept()
        try:
            await serve_one(stream)
        finally:
            done.set()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(accept_one)
        client = await trio.open_tcp_stream("127.0.0.1", port)
        try:
            yield client, served, done
        finally:
            await client.aclose()
            await listener.aclose()


async def _closed(stream: trio.SocketStream) -> bool:
    try:
        return await stream.receive_some(65536) == b""
    except trio.BrokenResourceError:  # a reset is a close too
        return True


async def test_bytes_there_at_accept_and_bytes_that_come_later_reach_the_handler_unread() -> None:
    with trio.fail_after(10):
        async with _accepted(FirstBytes(5.0)) as (client, served, done):
            await client.send_all(b"GET / HTTP/1.1\r\n\r\n")
            await done.wait()
        assert served == [b"GET / HTTP/1.1\r\n\r\n"]
        async with _accepted(FirstBytes(5.0)) as (client, served, done):
            await trio.sleep(0.3)
            assert not done.is_set() and served == []  # waiting, outside the handler
            await client.send_all(b"late")
            await done.wait()
        assert served == [b"late"]


async def test_a_peer_that_hangs_up_first_never_reaches_the_handler() -> None:
    with trio.fail_after(10):
        async with _accepted(FirstBytes(5.0)) as (client, served, done):
            await client.send_eof()
            await done.wait()
            assert await _closed(client)
        assert served == []


async def test_a_silent_connection_is_closed_unanswered_after_the_wait() -> None:
    with trio.fail_after(10):
        async with _accepted(FirstBytes(0.3)) as (client, served, done):
            started = trio.current_time()
            assert await _closed(client)
            assert trio.current_time() - started >= 0.3 * 0.9  # not before it is due
            await done.wait()
        assert served == []


async def test_ending_all_closes_the_waiting_connections_and_every_later_one_at_once() -> None:
    waits = FirstBytes(30.0)
    with trio.fail_after(10):
        async with _accepted(waits) as (client, served, done):
            await trio.sleep(0.2)
            waits.end_all()
            assert await _closed(client)
            await done.wait()
        async with _accepted(waits) as (client, served, done):
            assert await _closed(client)
        assert served == []


async def test_a_hypercorn_server_serves_a_late_request_and_stops_at_once_beside_a_silent_connection() -> None:
    """Hypercorn closes its idle connections when it stops; a connection still waiting for its
    first bytes is closed then too, not after ``keep_alive_timeout``."""
    config = Config()
    config.bind = ["127.0.0.1:0"]
    config.keep_alive_timeout = 60
    config.accesslog = config.errorlog = None
    stop = trio.Event()
    with trio.fail_after(20), hypercorn_adapter.install() as engaged:
        assert engaged
        async with trio.open_nursery() as nursery:
            binds = await nursery.start(functools.partial(serve, app, config, shutdown_trigger=stop.wait))
            port = int(binds[0].rsplit(":", 1)[1])
            silent = await trio.open_tcp_stream("127.0.0.1", port)
            late = await trio.open_tcp_stream("127.0.0.1", port)
            await trio.sleep(0.2)
            await late.send_all(b"GET / HTTP/1.1\r\nhost: x\r\n\r\n")
            answer = b""
            while not answer.endswith(b"ok"):
                answer += await late.receive_some(65536)
            assert answer.startswith(b"HTTP/1.1 200")
            stopped_at = trio.current_time()
            stop.set()
            assert await _closed(silent)
        assert trio.current_time() - stopped_at < 5
        await silent.aclose()
        await late.aclose()


async def test_only_hypercorns_own_handler_gets_the_waits() -> None:
    async def other(stream: Any) -> None:
        raise AssertionError("not called")

    async with trio.open_nursery() as nursery:
        assert first_bytes_for(other, nursery) is None
        context = WorkerContext(None)
        config = Config()
        config.keep_alive_timeout = 7
        hypercorns = functools.partial(TCPServer, None, config, context, None)
        assert first_bytes_for(hypercorns, None) is None  # nowhere to run the stop watch
        waits = first_bytes_for(hypercorns, nursery)
        assert waits is not None and waits.within_s == 7
        with waits.window(30) as scope:
            await context.terminated.set()  # the server stops: a wait in a window ends
            await trio.sleep_forever()
        assert scope.cancelled_caught
        with waits.window() as scope:  # and every later one at once
            await trio.sleep_forever()
        assert scope.cancelled_caught
