"""``/ws`` sessions run in the connection's own task (the lean path through Hypercorn).

Hypercorn serves every WebSocket with two tasks per connection: the connection task reads
the socket, parses frames (wsproto) and pushes each message through a memory channel to
the ASGI application's task, whose answer goes back through wsproto, the HTTP/1.1 protocol
object and a locked, shielded socket write. For the paths an application marks as
*direct*, this module runs the application in the connection task itself, and Hypercorn
does the opening handshake only (validation, the scope, the ``101`` answer or a refusal):

- from the accept on, the connection is a server-role
  :class:`openenv_anyio.ws.WebSocketConnection` (the same sans-IO object as the client's):
  ``receive()`` waits on the socket and hands what it reads to the connection, which decodes
  the common text frame itself and everything else through wsproto's frame parser (pings,
  the closing handshake, fragments, binary messages, the message size limit with 1009, bad
  frames with 1002, text that is not UTF-8 with the ``INVALID_JSON`` answer then 1007);
- ``send()`` has the connection frame every message (text, binary, close, pings) and writes
  it straight to the socket when it takes it at once, else through Hypercorn's guarded send
  path;
- replies go out in arrival order (see :mod:`openenv_anyio.ws.connection`): what the
  connection queues for a read (pongs, close frames) is written before its messages are
  handed over, and input it held back behind a message is read, before the socket, when the
  application asks for the next message (it has answered the ones before);
- pongs stamp the session's probe and the peer's own close calls the session back before it
  is answered, as :mod:`.liveness` does for Hypercorn's streams; the stream ends the
  Hypercorn way (``StreamClosed``, which reports the disconnect to the session);
- permessage-deflate is declined (answers go out uncompressed, which RFC 7692 allows);
- with the server's budget of bytes in flight on the config (:data:`~.events.INFLIGHT_BUDGET_ATTR`),
  a final text frame above the fast limit is collected by the connection too, in one buffer,
  after its size was reserved from the budget (``SRV-MEM-1``; the socket is not read while the
  reservation waits), and handed over as :class:`~.events.HeldText` under
  :data:`~.events.HELD_TEXT`; one the budget has no room for is dropped unread and handed
  over without its bytes; one that is not UTF-8 fails the connection with 1007.

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
import os
from collections.abc import Awaitable, Callable
from typing import Any, assert_never

import trio
from hypercorn.events import Closed, RawData
from hypercorn.protocol.events import Data, Request, StreamClosed
from hypercorn.protocol.h11 import H11WSConnection
from hypercorn.protocol.ws_stream import ASGIWebsocketState
from hypercorn.trio.tcp_server import MAX_RECV, TCPServer

from ...core import CloseCode
from ...ws import (
    Broken,
    ConnectionEvent,
    ConnectionState,
    LargeFrame,
    LargeText,
    PeerClosed,
    Pong,
    Role,
    TooLarge,
    WebSocketConnection,
)
from . import connection_guards
from .events import (
    HELD_TEXT,
    INFLIGHT_BUDGET_ATTR,
    PEER_CLOSE_EVENT,
    PING_EVENT,
    DirectHandler,
    HeldText,
    InflightBudget,
)
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
        await self._serve_direct(scope, handler, _DirectIO(self, tcp, inbox))
        return None

    async def _serve_direct(self, scope: dict[str, Any], handler: DirectHandler, io: _DirectIO) -> None:
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


class _DirectIO:
    """``receive()`` and ``send()`` of a direct stream, on the connection's socket.

    Up to the accepted handshake, every message is Hypercorn's stream's (the HTTP response,
    a refusal). From the accept on, the connection is a server-role
    :class:`~openenv_anyio.ws.WebSocketConnection` and this object only moves bytes and
    messages: what the socket gives goes to the connection, its events become ASGI messages
    (pongs stamp the probe, the peer's close calls the session back first), and what it
    queues (pongs, close frames) is written; the application's sends become its frames,
    written straight to the socket when it takes them at once (no lock held by anyone),
    otherwise through Hypercorn's guarded send path. Hypercorn ends the stream as ever
    (``StreamClosed``, which reports the disconnect) and reads the socket again once the
    application returns.
    """

    __slots__ = ("_stream", "_tcp", "_inbox", "_pending", "_conn", "_budget", "_reserved")

    def __init__(self, stream: DirectWSStream, tcp: TCPServer, inbox: collections.deque[Any]) -> None:
        self._stream = stream
        self._tcp = tcp
        self._inbox = inbox
        self._pending = True  # bytes that came with the handshake request are still with h11
        self._conn: WebSocketConnection | None = None  # from the accept on
        self._budget: InflightBudget | None = getattr(stream.config, INFLIGHT_BUDGET_ATTR, None)
        self._reserved = 0  # bytes of the budget the large frame being read holds

    async def receive(self) -> Any:
        inbox = self._inbox
        while not inbox:
            if self._stream.closed:
                return {"type": "websocket.disconnect", "code": int(CloseCode.ABNORMAL)}
            conn = self._conn
            if self._pending:
                self._pending = False
                data = self._handshake_leftover()
                if not data:
                    continue
            elif conn is not None and (conn.input_held or conn.large_offered):
                # held input: the messages before it were answered (the application asks for
                # the next one), its replies go out now; or the wait for room was interrupted
                # (the caller's deadline): wait again
                data = b""
            else:
                data = await self._read()
                if not data:
                    with trio.CancelScope(shield=True):
                        await self._tcp.protocol.handle(Closed())
                    continue
            if conn is None:  # before the accept: Hypercorn's stream answers bytes (400)
                await self._to_hypercorn(data)
                continue
            # The usual read ends here without another coroutine: _receive's body, inlined
            # (bench/README.md, "Server CPU per step").
            last = self._take(conn.receive_data(data))
            if last is not None or conn.has_bytes_to_send:
                await self._act(conn, last)
        return inbox.popleft()

    def release_held(self) -> None:
        """The application is done: give back the budget of what it never took, and drop its
        peer-close callback (a method of the session, which holds this object's ``receive``:
        a reference cycle that would keep the session, and every frame it holds, until a
        full collection)."""
        self._stream.on_peer_close = None
        self._release_reservation()
        for message in self._inbox:
            held = message.get(HELD_TEXT)
            if held is not None:
                held.release()

    def _release_reservation(self) -> None:
        """Give back the room of the large frame being read (it will not be delivered)."""
        if self._reserved and self._budget is not None:
            self._budget.release(self._reserved)
        self._reserved = 0

    async def _read(self) -> bytes:
        """Wait for bytes on the socket; ``b""`` when the peer or the socket is gone."""
        sock = self._tcp.stream.socket
        while True:
            try:
                await trio.lowlevel.wait_readable(sock)
                return os.read(sock.fileno(), MAX_RECV)
            except BlockingIOError:
                continue
            except (OSError, trio.ClosedResourceError, trio.BusyResourceError):
                return b""

    def _take(self, events: list[ConnectionEvent]) -> ConnectionEvent | None:
        """Deliver the messages of ``events`` and stamp the pongs, without waiting (the usual
        read: no coroutine of its own); return the event that needs the socket or the budget
        (the connection's end, a large frame), which is always the last."""
        inbox = self._inbox
        stream = self._stream
        for event in events:
            match event:
                case str():  # a whole text message (``Message``)
                    inbox.append({"type": "websocket.receive", "bytes": None, "text": event})
                case bytes():  # a whole binary message
                    inbox.append({"type": "websocket.receive", "bytes": event, "text": None})
                case Pong():
                    if stream.probe is not None:
                        stream.probe.last_pong = trio.current_time()
                case TooLarge():
                    pass  # the connection queued its close (1009) and discards the rest
                case LargeText(text):
                    held = HeldText(text, self._reserved, self._budget)
                    self._reserved = 0
                    self._deliver(held)
                case PeerClosed() | Broken() | LargeFrame():
                    return event
                case _:
                    assert_never(event)
        return None

    async def _act(self, conn: WebSocketConnection, last: ConnectionEvent | None) -> None:
        """Write what the connection queued, then act on ``last`` (see :meth:`_take`)."""
        stream = self._stream
        match last:
            case None:
                await self._flush(conn)
            case PeerClosed(code, _, answered):
                if answered:
                    stream.peer_closed(code)  # before the peer sees its close answered (WS-CAP-2)
                await self._flush(conn)
                await self._end_stream()
            case Broken():
                self._release_reservation()
                if stream.closes_on_bad_bytes:
                    await self._flush(conn)  # WS-CLOSE-3: a close frame naming why
                await self._end_stream()
            case LargeFrame(size):
                await self._flush(conn)
                budget = self._budget
                assert budget is not None  # the connection collects large frames only with one
                if await budget.reserve(size):  # SRV-MEM-1: waits, bounded, reading nothing
                    self._reserved = size
                    conn.admit()
                else:
                    conn.skip()
                    self._deliver(HeldText(None, size, None))
                await self._receive(conn, b"")  # the offered frame was admitted or skipped: read on
            case str() | bytes() | Pong() | TooLarge() | LargeText():
                raise AssertionError("delivered by _take")
            case _:
                assert_never(last)

    async def _receive(self, conn: WebSocketConnection, data: bytes) -> None:
        """Act on what ``data`` means, in order; write what the connection queued."""
        last = self._take(conn.receive_data(data))
        if last is not None or conn.has_bytes_to_send:
            await self._act(conn, last)

    def _deliver(self, held: HeldText) -> None:
        self._inbox.append({"type": "websocket.receive", "bytes": None, "text": None, HELD_TEXT: held})

    async def _flush(self, conn: WebSocketConnection) -> None:
        """Write the frames the connection queued (bytes read are always answered: what the
        socket does not take at once is written shielded from cancellation; a write taken
        at once has nothing to shield, so it enters no cancel scope: bench/README.md,
        "Server CPU per step")."""
        if conn.has_bytes_to_send:
            data = conn.bytes_to_send()
            tcp = self._tcp
            written = connection_guards.write_now(tcp, data)
            if written < len(data):
                with trio.CancelScope(shield=True):
                    await tcp.protocol_send(RawData(data=data[written:]))

    async def _write(self, data: bytes) -> None:
        """Write ``data`` straight to the socket when it takes it at once, else the rest
        through Hypercorn's guarded send path."""
        tcp = self._tcp
        written = connection_guards.write_now(tcp, data)
        if written < len(data):
            await tcp.protocol_send(RawData(data=data[written:]))

    async def _end_stream(self) -> None:
        """End the stream as Hypercorn does (its ``StreamClosed`` reports the disconnect)."""
        stream = self._stream
        if not stream.closed:
            with trio.CancelScope(shield=True):
                await stream.send(StreamClosed(stream_id=stream.stream_id))

    async def _to_hypercorn(self, data: bytes) -> None:
        stream = self._stream
        with trio.CancelScope(shield=True):  # bytes read are always processed
            await stream.handle(Data(stream_id=stream.stream_id, data=data))

    def _handshake_leftover(self) -> bytes:
        protocol = getattr(self._tcp.protocol, "protocol", None)
        connection = getattr(protocol, "connection", None)
        if isinstance(connection, H11WSConnection) and connection.buffer:
            data, connection.buffer = bytes(connection.buffer), bytearray()
            return data
        return b""

    async def send(self, message: Any) -> None:
        stream = self._stream
        conn = self._conn
        if conn is None or stream.closed:  # the handshake (accept, refusals); after the end, nothing
            await stream.app_send(message)
            if conn is None and stream.state is ASGIWebsocketState.CONNECTED:
                self._accepted()
            return
        if message is None:  # the application returned: as Hypercorn does (1011 unless closed)
            conn.close(CloseCode.INTERNAL_ERROR)
            await self._flush(conn)
            await self._end_stream()
            return
        kind = message["type"]
        if kind == "websocket.send":
            if stream.state is not ASGIWebsocketState.CONNECTED:
                await stream.app_send(message)  # after the application's close: Hypercorn refuses it
                return
            if conn.state is not ConnectionState.OPEN:
                return  # we are closing: nothing more goes out
            data = message.get("bytes")
            if data is not None:
                await self._write(conn.send_bytes(bytes(data)))
                return
            text = message["text"]
            if not isinstance(text, str):
                raise TypeError(f"{text} should be a str")
            # Every answer goes out here without another coroutine: _write's body, inlined
            # (bench/README.md, "Server CPU per step").
            frame = conn.send_text(text)
            tcp = self._tcp
            written = connection_guards.write_now(tcp, frame)
            if written < len(frame):
                await tcp.protocol_send(RawData(data=frame[written:]))
        elif kind == "websocket.close":
            stream.state = ASGIWebsocketState.CLOSED
            conn.close(int(message.get("code", CloseCode.NORMAL)), message.get("reason") or "")
            await self._flush(conn)
        elif kind == PING_EVENT:
            if conn.state is ConnectionState.OPEN and stream.state is ASGIWebsocketState.CONNECTED:
                stream.probe = message["probe"]
                await self._write(conn.ping(b"openenv"))
        elif kind == PEER_CLOSE_EVENT:
            stream.on_peer_close = message["callback"]
        else:
            await stream.app_send(message)  # Hypercorn refuses it (an accept after the accept)

    def _accepted(self) -> None:
        """Hypercorn sent the handshake's answer: the connection is ours from here."""
        stream = self._stream
        conn = WebSocketConnection(
            Role.SERVER,
            max_message_size=stream.config.websocket_max_message_size,
            collect_large=self._budget is not None,
        )
        if stream.closes_on_bad_bytes:
            conn.invalid_text_reply = stream.invalid_text_reply
        self._conn = conn


PATCHES = (
    Patch(
        "hypercorn.protocol.h11:WSStream",
        lambda original: DirectWSStream,
        "HTTP/1.1 WebSocket streams that run direct routes (/ws) in the connection's task",
    ),
)
