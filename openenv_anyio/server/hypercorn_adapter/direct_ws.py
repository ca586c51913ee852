"""``/ws`` sessions run in the connection's own task (the lean path through Hypercorn).

Hypercorn serves every WebSocket with two tasks per connection: the connection task reads
the socket, parses frames (wsproto) and pushes each message through a memory channel to
the ASGI application's task, whose answer goes back through wsproto, the HTTP/1.1 protocol
object and a locked, shielded socket write. For the paths an application marks as
*direct*, this module runs the application in the connection task itself, and Hypercorn
does the opening handshake only (validation, the scope, the ``101`` answer or a refusal);
from the accept on, the connection is a :class:`~.direct_io.DirectIO` on its socket (a
server-role :class:`openenv_anyio.ws.WebSocketConnection`: frames, pings, the closing
handshake, the message size limit, large messages against the server's budget), and the
stream ends the Hypercorn way (``StreamClosed``, which reports the disconnect to the
session). permessage-deflate is declined (answers go out uncompressed, which RFC 7692
allows; compressed client frames would all take wsproto's slow path).

Most ``/ws`` connections never reach Hypercorn: :mod:`.direct_upgrade` answers an upgrade
whose head is whole at accept. This path serves the others (a head sent in pieces).

What it saves is measured by ``python -m bench.server_cpu`` (bench/README.md, "Server CPU
per step"). Only plain (not TLS) HTTP/1.1 connections of Hypercorn's trio worker take this
path; anything else (HTTP/2, TLS) is served the usual ASGI way.

An application opts in with a ``direct_websocket(scope)`` method returning an ASGI-style
``handler(scope, receive, send)`` for the scopes it wants served directly, else ``None``;
other applications' streams behave as Hypercorn's own. :data:`PATCHES` makes Hypercorn's
HTTP/1.1 protocol build such streams (it needs ``connection_guards``, which records each
connection).
"""

from __future__ import annotations

import collections
from collections.abc import Awaitable, Callable
from typing import Any

import trio
from hypercorn.events import Closed, RawData
from hypercorn.protocol.events import Data, Request, StreamClosed
from hypercorn.protocol.h11 import H11WSConnection
from hypercorn.protocol.ws_stream import ASGIWebsocketState
from hypercorn.trio.tcp_server import TCPServer

from . import connection_guards
from .direct_io import DirectIO
from .events import INFLIGHT_BUDGET_ATTR, DirectHandler
from .handshake_queue import handshake_answered, peer_gone
from .inventory import Patch
from .liveness import ProbingWSStream

__all__ = ["DirectWSStream", "PATCHES"]


class _RecordSpawn:
    """Stands in for the connection's task group while Hypercorn handles the handshake
    request: records the scope instead of spawning the application."""

    def __init__(self, inbox: collections.deque[Any]) -> None:
        self.scope: dict[str, Any] | None = None
        self._inbox = inbox

    async def spawn_app(
        self, app: Any, config: Any, scope: dict[str, Any], send: Any
    ) -> Callable[[Any], Awaitable[None]]:
        self.scope = scope
        inbox = self._inbox

        async def put(message: Any) -> None:
            inbox.append(message)

        return put


class DirectWSStream(ProbingWSStream):
    """A Hypercorn WebSocket stream that can run its application in the connection task."""

    async def handle(self, event: Any) -> None:
        if not isinstance(event, Request) or self.closed:
            return await super().handle(event)
        choose = getattr(getattr(self.app, "app", None), "direct_websocket", None)  # inside ASGIWrapper
        tcp = connection_guards.current_connection()
        if choose is None or tcp is None or not isinstance(tcp.stream, trio.SocketStream):
            try:
                return await super().handle(event)
            finally:
                handshake_answered()  # the application was started; it answers in its own task
        inbox: collections.deque[Any] = collections.deque()
        recorder = _RecordSpawn(inbox)
        task_group, self.task_group = self.task_group, recorder
        try:
            await super().handle(event)  # Hypercorn validates the handshake and builds the scope
        finally:
            self.task_group = task_group
        scope = recorder.scope
        handshake_answered()  # from here on no more than one pass of the scheduler to the answer
        if scope is None:  # the handshake was refused with an HTTP error
            return None
        if peer_gone(tcp.stream.socket):  # its client gave up waiting: no session for nobody
            with trio.CancelScope(shield=True):
                await tcp.protocol_send(Closed())
            return None
        handler = choose(scope)
        if handler is None:  # not a direct route: spawn the application as Hypercorn would
            self.app_put = await task_group.spawn_app(self.app, self.config, scope, self.app_send)
            while inbox:
                await self.app_put(inbox.popleft())
            return None
        io = DirectIO(
            _HypercornLink(self, tcp),
            inbox,
            max_message_size=self.config.websocket_max_message_size,
            budget=getattr(self.config, INFLIGHT_BUDGET_ATTR, None),
        )
        await self._serve_direct(scope, handler, io)
        return None

    async def _serve_direct(self, scope: dict[str, Any], handler: DirectHandler, io: DirectIO) -> None:
        # Decline permessage-deflate: this path sends every message uncompressed anyway, and
        # compressed client frames would all take the slow path through wsproto's inflater.
        self.handshake.extensions = None
        try:
            await handler(scope, io.receive, io.send)
        except trio.Cancelled:
            raise
        except Exception:
            await self.config.log.exception("Error in ASGI Framework")
        finally:
            io.release_held()
            with trio.CancelScope(shield=True):
                await io.send(None)  # as Hypercorn does when an application returns


class _HypercornLink:
    """A :class:`~.direct_io.Link` on Hypercorn's connection and stream: the handshake is the
    stream's, writes the socket's or the connection's guarded path, the end a ``StreamClosed``."""

    __slots__ = ("_stream", "_tcp")

    def __init__(self, stream: DirectWSStream, tcp: TCPServer) -> None:
        self._stream = stream
        self._tcp = tcp

    @property
    def socket(self) -> trio.socket.SocketType:
        sock: trio.socket.SocketType = self._tcp.stream.socket
        return sock

    @property
    def ended(self) -> bool:
        return bool(self._stream.closed)

    def leftover(self) -> bytes:
        protocol = getattr(self._tcp.protocol, "protocol", None)
        connection = getattr(protocol, "connection", None)
        if isinstance(connection, H11WSConnection) and connection.buffer:
            data, connection.buffer = bytes(connection.buffer), bytearray()
            return data
        return b""

    def write_now(self, data: bytes) -> int:
        return connection_guards.write_now(self._tcp, data)

    async def write_rest(self, data: bytes) -> None:
        await self._tcp.protocol_send(RawData(data=data))

    async def handshake(self, message: dict[str, Any] | None) -> bool:
        stream = self._stream
        await stream.app_send(message)
        return bool(stream.state is ASGIWebsocketState.CONNECTED)

    async def before_accept(self, data: bytes) -> None:
        stream = self._stream
        with trio.CancelScope(shield=True):  # bytes read are always processed (Hypercorn answers 400)
            await stream.handle(Data(stream_id=stream.stream_id, data=data))

    async def lost(self) -> None:
        await self._tcp.protocol.handle(Closed())

    async def end(self) -> None:
        stream = self._stream
        await stream.send(StreamClosed(stream_id=stream.stream_id))

    def closing(self) -> None:
        self._stream.state = ASGIWebsocketState.CLOSED  # Hypercorn reports the disconnect as normal

    async def refused_send(self, message: dict[str, Any]) -> None:
        await self._stream.app_send(message)  # Hypercorn raises


PATCHES = (
    Patch(
        "hypercorn.protocol.h11:WSStream",
        lambda original: DirectWSStream,
        "HTTP/1.1 WebSocket streams that run direct routes (/ws) in the connection's task",
    ),
)
