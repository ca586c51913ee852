"""A raw wsproto-over-trio server that answers every text frame with an invalid frame and
never completes the closing handshake: the kit must still keep each case's verdict."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator

import trio
from wsproto import ConnectionType, WSConnection
from wsproto.events import AcceptConnection, CloseConnection, Request, TextMessage
from wsproto.utilities import RemoteProtocolError

from .trio_thread import trio_server_in_thread


async def _handle(stream: trio.SocketStream) -> None:
    ws = WSConnection(ConnectionType.SERVER)
    # plain HTTP requests (GET /schema) are refused by dropping the connection
    with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError, RemoteProtocolError):
        while data := await stream.receive_some(65536):
            ws.receive_data(data)
            for event in ws.events():
                if isinstance(event, Request):
                    await stream.send_all(ws.send(AcceptConnection()))
                elif isinstance(event, TextMessage):
                    await stream.send_all(ws.send(TextMessage(data='{"type": "bogus"}')))
                elif isinstance(event, CloseConnection):
                    await trio.sleep_forever()  # never answer the close


async def _start(nursery: trio.Nursery, stop: trio.Event) -> str:
    listeners = await nursery.start(functools.partial(trio.serve_tcp, _handle, 0, host="127.0.0.1"))

    async def stop_when_asked() -> None:
        await stop.wait()
        nursery.cancel_scope.cancel()

    nursery.start_soon(stop_when_asked)
    return f"http://127.0.0.1:{listeners[0].socket.getsockname()[1]}"


@contextlib.contextmanager
def serve_stubborn() -> Iterator[str]:
    """Serve on 127.0.0.1 (free port) in a thread; yield the base URL."""
    with trio_server_in_thread(_start, "stubborn-server") as url:
        yield url
