"""``receive()`` and ``send()`` of a ``/ws`` session served in its connection's task, on the
connection's socket, whoever answered its handshake (:mod:`.direct_ws`: Hypercorn;
:mod:`.direct_upgrade`: the connection's first bytes).

Up to the accepted handshake, every message is the :class:`Link`'s (the ``101``, a
refusal). From the accept on, the connection is a server-role
:class:`~openenv_anyio.ws.WebSocketConnection` and :class:`DirectIO` only moves bytes and
messages: what the socket gives goes to the connection, its events become ASGI messages
(pongs stamp the probe, the peer's close calls the session back first), and what it queues
(pongs, close frames) is written; the application's sends become its frames, written
straight to the socket when it takes them at once (no lock held by anyone), otherwise
through the link's guarded write. The link ends the stream (which reports the disconnect).

Replies go out in arrival order (see :mod:`openenv_anyio.ws.connection`): what the
connection queues for a read (pongs, close frames) is written before its messages are
handed over, and input it held back behind a message is read, before the socket, when the
application asks for the next message (it has answered the ones before).
"""

from __future__ import annotations

import collections
import os
from collections.abc import Callable
from typing import Any, Protocol, assert_never

import trio

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
from .events import (
    HELD_TEXT,
    INVALID_TEXT_REPLY,
    PEER_CLOSE_EVENT,
    PING_EVENT,
    HeldText,
    InflightBudget,
    PongProbe,
)

__all__ = ["MAX_READ", "DirectIO", "Link"]

#: Most bytes one read of the socket takes.
MAX_READ = 2**16


class Link(Protocol):
    """The connection a :class:`DirectIO` runs on: its socket, its guarded writes, its end,
    and its handshake."""

    @property
    def socket(self) -> trio.socket.SocketType: ...

    @property
    def ended(self) -> bool:
        """The stream is over: ``receive()`` reports the disconnect."""
        ...

    def leftover(self) -> bytes:
        """Bytes read with the handshake request that belong to the WebSocket (once)."""
        ...

    def write_now(self, data: bytes) -> int:
        """How many bytes of ``data`` the socket took at once, without waiting."""
        ...

    async def write_rest(self, data: bytes) -> None:
        """Write what the socket did not take at once, bounded by the send timeout."""
        ...

    async def handshake(self, message: dict[str, Any] | None) -> bool:
        """Answer a message of the handshake (the accept, a refusal, the application's
        return before either); whether the WebSocket is accepted now."""
        ...

    async def before_accept(self, data: bytes) -> None:
        """Bytes that came before the accept."""
        ...

    async def lost(self) -> None:
        """The socket is gone (the peer hung up, or it failed)."""
        ...

    async def end(self) -> None:
        """End the stream (it reports the disconnect from now on)."""
        ...

    def closing(self) -> None:
        """The application sent its close (the disconnect it sees later is a normal one)."""
        ...

    async def refused_send(self, message: dict[str, Any]) -> None:
        """A message the WebSocket cannot send (after the application's close, a second
        accept, an unknown type): raise."""
        ...


class DirectIO:
    """``receive()`` and ``send()`` of a direct WebSocket (see the module doc)."""

    __slots__ = (
        "_link",
        "_inbox",
        "_pending",
        "_conn",
        "_budget",
        "_reserved",
        "_max_message_size",
        "_app_closed",
        "_invalid_text_reply",
        "closes_on_bad_bytes",
        "probe",
        "on_peer_close",
        "peer_close_code",
    )

    def __init__(
        self,
        link: Link,
        inbox: collections.deque[Any],
        *,
        max_message_size: int,
        budget: InflightBudget | None,
    ) -> None:
        self._link = link
        self._inbox = inbox
        self._pending = True  # bytes that came with the handshake request are still with the link
        self._conn: WebSocketConnection | None = None  # from the accept on
        self._budget = budget
        self._reserved = 0  # bytes of the budget the large frame being read holds
        self._max_message_size = max_message_size
        self._app_closed = False  # the application sent its close
        self._invalid_text_reply: str | None = None
        #: the application asked at accept for close frames on bad bytes (``WS-CLOSE-3``)
        self.closes_on_bad_bytes = False
        #: stamped by every pong after the application's ping
        self.probe: PongProbe | None = None
        #: called with the peer's own close code before it is answered
        self.on_peer_close: Callable[[int], None] | None = None
        self.peer_close_code: int | None = None

    async def receive(self) -> Any:
        inbox = self._inbox
        if inbox:
            # Frames the peer sent behind the one just answered (pipelined, read together):
            # each waits one pass of the scheduler, as every other session's next frame does,
            # so a peer that writes many at once does not answer them all in one step of
            # the loop. A cancellation here takes nothing from the inbox.
            await trio.lowlevel.checkpoint()
            return inbox.popleft()
        while not inbox:
            if self._link.ended:
                return {"type": "websocket.disconnect", "code": int(CloseCode.ABNORMAL)}
            conn = self._conn
            if self._pending:
                self._pending = False
                data = self._link.leftover()
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
                        await self._link.lost()
                    continue
            if conn is None:  # before the accept
                await self._link.before_accept(data)
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
        self.on_peer_close = None
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
        sock = self._link.socket
        while True:
            try:
                await trio.lowlevel.wait_readable(sock)
                return os.read(sock.fileno(), MAX_READ)
            except BlockingIOError:
                continue
            except (OSError, ValueError, trio.ClosedResourceError, trio.BusyResourceError):
                return b""  # ValueError: the socket was closed before the wait (no descriptor)

    def _peer_closed(self, code: int) -> None:
        if self.peer_close_code is None:
            self.peer_close_code = code
            if self.on_peer_close is not None:
                self.on_peer_close(code)

    def _take(self, events: list[ConnectionEvent]) -> ConnectionEvent | None:
        """Deliver the messages of ``events`` and stamp the pongs, without waiting (the usual
        read: no coroutine of its own); return the event that needs the socket or the budget
        (the connection's end, a large frame), which is always the last."""
        inbox = self._inbox
        for event in events:
            match event:
                case str():  # a whole text message (``Message``)
                    inbox.append({"type": "websocket.receive", "bytes": None, "text": event})
                case bytes():  # a whole binary message
                    inbox.append({"type": "websocket.receive", "bytes": event, "text": None})
                case Pong():
                    if self.probe is not None:
                        self.probe.last_pong = trio.current_time()
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
        match last:
            case None:
                await self._flush(conn)
            case PeerClosed(code, _, answered):
                if answered:
                    self._peer_closed(code)  # before the peer sees its close answered (WS-CAP-2)
                await self._flush(conn)
                await self._end()
            case Broken():
                self._release_reservation()
                if self.closes_on_bad_bytes:
                    await self._flush(conn)  # WS-CLOSE-3: a close frame naming why
                await self._end()
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
            link = self._link
            written = link.write_now(data)
            if written < len(data):
                with trio.CancelScope(shield=True):
                    await link.write_rest(data[written:])

    async def _write(self, data: bytes) -> None:
        """Write ``data`` straight to the socket when it takes it at once, else the rest
        through the link's guarded write."""
        link = self._link
        written = link.write_now(data)
        if written < len(data):
            await link.write_rest(data[written:])

    async def _end(self) -> None:
        link = self._link
        if not link.ended:
            with trio.CancelScope(shield=True):
                await link.end()

    async def send(self, message: Any) -> None:
        link = self._link
        conn = self._conn
        if conn is None or link.ended:  # the handshake (accept, refusals); after the end, nothing
            if conn is None:
                await self._before_accept(message)
            return
        if message is None:  # the application returned: 1011 unless it closed
            conn.close(CloseCode.INTERNAL_ERROR)
            await self._flush(conn)
            await self._end()
            return
        kind = message["type"]
        if kind == "websocket.send":
            if self._app_closed:
                await link.refused_send(message)
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
            written = link.write_now(frame)
            if written < len(frame):
                await link.write_rest(frame[written:])
        elif kind == "websocket.close":
            self._app_closed = True
            link.closing()
            conn.close(int(message.get("code", CloseCode.NORMAL)), message.get("reason") or "")
            await self._flush(conn)
        elif kind == PING_EVENT:
            if conn.state is ConnectionState.OPEN and not self._app_closed:
                self.probe = message["probe"]
                await self._write(conn.ping(b"openenv"))
        elif kind == PEER_CLOSE_EVENT:
            self.on_peer_close = message["callback"]
        else:
            await link.refused_send(message)  # an accept after the accept, an unknown message

    async def _before_accept(self, message: Any) -> None:
        kind = None if message is None else message["type"]
        if kind == PEER_CLOSE_EVENT:
            self.on_peer_close = message["callback"]
        elif kind == PING_EVENT:
            pass  # nothing to ping yet
        elif await self._link.handshake(message):
            self._accepted(message)

    def _accepted(self, message: dict[str, Any]) -> None:
        """The handshake's answer went out: the connection is ours from here."""
        conn = WebSocketConnection(
            Role.SERVER,
            max_message_size=self._max_message_size,
            collect_large=self._budget is not None,
        )
        if INVALID_TEXT_REPLY in message:
            self.closes_on_bad_bytes = True
            conn.invalid_text_reply = message[INVALID_TEXT_REPLY]
        self._conn = conn
