"""A raw wsproto-over-trio server that answers every text frame with an invalid frame and
never completes the closing handshake: the kit must still keep each case's verdict."""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Iterator

import trio
from wsproto import ConnectionType, WSConnection
from wsproto.utilities import RemoteProtocolError
from wsproto.events import AcceptConnection, CloseConnection, Request, TextMessage


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


@contextlib.contextmanager
def serve_stubborn() -> Iterator[str]:
    """Serve on 127.0.0.1 (free port) in a thread; yield the base URL."""
    ready = threading.Event()
    url: list[str] = []
    token: list[trio.lowlevel.TrioToken] = []
    stop = trio.Event()

    async def main() -> None:
        token.append(trio.lowlevel.current_trio_token())
        async with trio.open_nursery() as nursery:
            listeners = await nursery.start(functools.partial(trio.serve_tcp, _handle, 0, host="127.0.0.1"))
            url.append(f"http://127.0.0.1:{listeners[0].socket.getsockname()[1]}")
            ready.set()
            await stop.wait()
            nursery.cancel_scope.cancel()

    thread = threading.Thread(target=trio.run, args=(main,), name="stubborn-server", daemon=True)
    thread.start()
    if not ready.wait(20):
        raise RuntimeError("the stubborn server did not start")
    try:
        yield url[0]
    finally:
        trio.from_thread.run_sync(stop.set, trio_token=token[0])
        thread.join(timeout=10)
