"""A scriptable WebSocket server for failure modes (wsproto over anyio, runs in the test's loop).

Each test gives a handler ``async def handler(peer: RawPeer)`` that plays the server's
part: answer, stay silent, ping, send an oversized frame, delay. The listener and every
connection are owned by the test's task group and end with it.
"""

from __future__ import annotations

import contextlib
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import anyio
import anyio.abc
from anyio.abc import SocketAttribute
from anyio.streams.tls import TLSListener
from wsproto import ConnectionType, WSConnection
from wsproto.connection import ConnectionState
from wsproto.events import (
    AcceptConnection,
    BytesMessage,
    CloseConnection,
    Event,
    Ping,
    Pong,
    Request,
    TextMessage,
)

Handler = Callable[["RawPeer"], Awaitable[None]]


class PeerClosed(Exception):
    """The client closed the connection (``code`` from its close frame, None for EOF)."""

    def __init__(self, code: int | None, reason: str = "") -> None:
        super().__init__(f"client closed: {code} {reason}")
        self.code = code
        self.reason = reason


class RawPeer:
    """The server side of one accepted client connection."""

    def __init__(self, stream: anyio.abc.ByteStream) -> None:
        self.stream = stream
        self.ws = WSConnection(ConnectionType.SERVER)
        self.pongs = 0
        self.pings_received = 0
        self.pings_answered: list[bytes] = []
        self._messages: list[str | bytes] = []
        self._parts: list[str | bytes] = []

    async def accept(self, subprotocol: str | None = None) -> Request:
        """Answer the opening handshake (selecting ``subprotocol``, if given); the request."""
        while True:
            for event in await self._read_events():
                if isinstance(event, Request):
                    await self.stream.send(self.ws.send(AcceptConnection(subprotocol=subprotocol)))
                    return event

    async def _read_events(self) -> list[Event]:
        try:
            data = await self.stream.receive(65536)
        except (anyio.EndOfStream, anyio.BrokenResourceError):
            raise PeerClosed(None) from None
        self.ws.receive_data(data)
        return list(self.ws.events())

    async def receive_text(self) -> str | bytes:
        """The next message from the client (pings it sends are answered)."""
        while not self._messages:
            for event in await self._read_events():
                await self._on_event(event)
        return self._messages.pop(0)

    async def _on_event(self, event: Event) -> None:
        if isinstance(event, (TextMessage, BytesMessage)):
            self._parts.append(event.data)
            if event.message_finished:
                joined = "".join(self._parts) if isinstance(event.data, str) else b"".join(self._parts)  # type: ignore[arg-type]
                self._messages.append(joined)
                self._parts = []
        elif isinstance(event, Ping):
            self.pings_received += 1
            if self.ws.state is ConnectionState.OPEN:  # a peer that sent its close owes no pong
                await self.stream.send(self.ws.send(event.response()))
        elif isinstance(event, Pong):
            self.pongs += 1
            self.pings_answered.append(bytes(event.payload))
        elif isinstance(event, CloseConnection):
            if self.ws.state is ConnectionState.REMOTE_CLOSING:
                await self.stream.send(self.ws.send(event.response()))
            raise PeerClosed(event.code, event.reason or "")

    async def expect_pong(self) -> None:
        """Process the client's frames until one more pong has arrived."""
        wanted = self.pongs + 1
        while self.pongs < wanted:
            for event in await self._read_events():
                await self._on_event(event)

    async def pump(self) -> None:
        """Process whatever the client sends (pongs, pings) until it closes; a ``close``
        frame is answered by closing with 1000 (WS-CLOSE-1)."""
        while True:
            for event in await self._read_events():
                await self._on_event(event)
            if '{"type":"close"}' in self._messages:
                await self.close(1000)

    async def send_text(self, text: str) -> None:
        await self.stream.send(self.ws.send(TextMessage(data=text)))

    async def ping(self, payload: bytes = b"p") -> None:
        await self.stream.send(self.ws.send(Ping(payload=payload)))

    async def close(self, code: int = 1000, reason: str = "") -> None:
        if self.ws.state is ConnectionState.OPEN:
            await self.stream.send(self.ws.send(CloseConnection(code=code, reason=reason)))


@contextlib.asynccontextmanager
async def raw_server(
    handler: Handler, *, handshake: bool = True, ssl_context: ssl.SSLContext | None = None
) -> AsyncIterator[str]:
    """Serve ``handler`` on 127.0.0.1 (a free port); yields the base URL ``http://...``
    (``https://...`` with ``ssl_context``).

    With ``handshake=False`` the handler gets the peer before any handshake (it may
    never answer it).
    """

    async def serve_one(stream: anyio.abc.ByteStream) -> None:
        async with stream:
            peer = RawPeer(stream)
            with contextlib.suppress(PeerClosed, anyio.BrokenResourceError, anyio.ClosedResourceError):
                if handshake:
                    await peer.accept()
                await handler(peer)

    tcp = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    port = tcp.extra(SocketAttribute.local_port)
    listener: anyio.abc.Listener[Any] = tcp
    if ssl_context is not None:
        listener = TLSListener(tcp, ssl_context, standard_compatible=False)
    async with listener, anyio.create_task_group() as task_group:
        task_group.start_soon(listener.serve, serve_one)
        try:
            yield f"{'https' if ssl_context else 'http'}://127.0.0.1:{port}"
        finally:
            task_group.cancel_scope.cancel()


async def echo_answers(peer: RawPeer) -> None:
    """Answer every step with an observation echoing its message (the minimal server)."""
    from openenv_anyio.core import Close, Observation, Step, decode_client_frame, encode_frame

    while True:
        frame = decode_client_frame(await peer.receive_text())
        if isinstance(frame, Close):
            await peer.close(1000)
            return
        message = frame.action.get("message", "") if isinstance(frame, Step) else ""
        await peer.send_text(encode_frame(Observation({"echoed": message}, 0.0, False)))


def first_answer_late(delay_s: float) -> Handler:
    """A server that answers the first request after ``delay_s`` (echoing "late"), then
    echoes: what a client that gave up waiting must never hand to a later request."""
    from openenv_anyio.core import Observation, encode_frame

    async def handler(peer: RawPeer) -> None:
        await peer.receive_text()
        await anyio.sleep(delay_s)
        await peer.send_text(encode_frame(Observation({"echoed": "late"}, 0.0, False)))
        await echo_answers(peer)

    return handler
