"""WebSocket pings whose pongs the application can see (``WS-PING-1``), and the peer's
close as it arrives (``WS-CAP-2``, ``EXT-RES-2``).

ASGI has no ping message, and Hypercorn's own ``websocket_ping_interval`` sends pings but
ignores the pongs, so a half-open peer (gone without a close, its TCP still up or silent) is
never noticed. This module teaches Hypercorn's WebSocket stream one extra ASGI send event,
``{"type": "openenv.ping", "probe": PongProbe}`` (names in :mod:`.events`): the stream sends a ping, and every pong it
receives afterwards stamps ``probe.last_pong`` with the trio clock. Streams of applications
that never send the event behave exactly as before.

A second event, ``{"type": "openenv.peer_close", "callback": f}``, asks the stream to call
``f(code)`` (synchronously, on the connection's task) when the peer's close frame arrives
(the peer's own close, not its answer to the server's),
*before* Hypercorn answers it: whatever ``f`` frees is free by the time the peer sees its
closing handshake complete. ``f`` also learns the peer's close code, which ASGI's
``websocket.disconnect`` does not carry through Hypercorn (it reports every peer close as
1006). A connection lost without a close frame never calls ``f``.

Third, an application that puts :data:`~.events.INVALID_TEXT_REPLY` in its accept message
has bytes that break RFC 6455 answered with a close frame naming why (1002, or 1007 after
that key's text message) where Hypercorn drops the TCP connection (``WS-CLOSE-3``).

The subclass only adds behaviour: streams of applications that never send these events
behave exactly as before. HTTP/2 streams are built from it (:data:`PATCHES`), HTTP/1.1
ones from ``direct_ws``'s subclass of it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import trio
from hypercorn.protocol.events import Data, StreamClosed
from hypercorn.protocol.ws_stream import ASGIWebsocketState, WSStream
from wsproto.connection import ConnectionState
from wsproto.events import CloseConnection, Event, Ping, Pong, TextMessage
from wsproto.frame_protocol import CloseReason
from wsproto.utilities import LocalProtocolError

from .events import INVALID_TEXT_REPLY, PEER_CLOSE_EVENT, PING_EVENT, PongProbe
from .inventory import Patch

__all__ = ["PATCHES", "ProbingWSStream"]


class _PongTap:
    """Wraps a wsproto connection: passes every event on, stamps the probe on pongs."""

    __slots__ = ("_connection", "_stream")

    def __init__(self, connection: Any, stream: ProbingWSStream) -> None:
        self._connection = connection
        self._stream = stream

    def events(self) -> Iterator[Event]:
        connection = self._connection
        for event in connection.events():
            if isinstance(event, Pong) and self._stream.probe is not None:
                self._stream.probe.last_pong = trio.current_time()
            elif isinstance(event, CloseConnection):
                if connection.state is ConnectionState.REMOTE_CLOSING:
                    self._stream.peer_closed(event.code)  # the peer's own close, not yet answered
                elif connection.state is ConnectionState.OPEN:
                    self._stream.refuse(event.code)  # a parse failure, not the peer's close frame
            yield event

    def __getattr__(self, name: str) -> Any:
        return getattr(self._connection, name)


class ProbingWSStream(WSStream):
    probe: PongProbe | None = None
    peer_close_code: int | None = None
    on_peer_close: Callable[[int], None] | None = None
    #: the application asked at accept for close frames on bad bytes (``WS-CLOSE-3``)
    closes_on_bad_bytes = False
    #: the text to send before closing with 1007, from the accept message
    invalid_text_reply: str | None = None
    #: bytes to send before the connection closes (a refused frame's error and close frames)
    farewell: bytes = b""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        send = self.send

        async def send_farewell_first(event: Any) -> None:
            if isinstance(event, StreamClosed) and self.farewell:
                data, self.farewell = self.farewell, b""
                await send(Data(stream_id=self.stream_id, data=data))
            await send(event)

        self.send = send_farewell_first

    async def _accept(self, message: Any) -> None:
        if INVALID_TEXT_REPLY in message:
            self.closes_on_bad_bytes = True
            self.invalid_text_reply = message[INVALID_TEXT_REPLY]
        await super()._accept(message)
        self.connection = _PongTap(self.connection, self)  # type: ignore[assignment]

    def refuse(self, code: int) -> None:
        """wsproto refused the peer's bytes (its ``CloseConnection`` without a close frame):
        say why with a close frame (RFC 6455 7.1.7, ``WS-CLOSE-3``) instead of a bare TCP close;
        text that is not UTF-8 is first answered as the application asked at accept."""
        if not self.closes_on_bad_bytes:
            return  # another application's connection: Hypercorn's own behaviour
        connection = self.connection._connection if isinstance(self.connection, _PongTap) else self.connection
        data = b""
        try:
            if code == CloseReason.INVALID_FRAME_PAYLOAD_DATA and self.invalid_text_reply is not None:
                data += connection.send(TextMessage(data=self.invalid_text_reply))
            data += connection.send(CloseConnection(code=code))
        except LocalProtocolError:  # already closing: nothing more to say
            return
        self.farewell += data

    def peer_closed(self, code: int) -> None:
        if self.peer_close_code is None:
            self.peer_close_code = code
            if self.on_peer_close is not None:
                self.on_peer_close(code)

    async def app_send(self, message: Any) -> None:
        if message is not None:
            kind = message.get("type")
            if kind == PING_EVENT:
                if not self.closed and self.state == ASGIWebsocketState.CONNECTED:
                    self.probe = message["probe"]
                    await self._send_wsproto_event(Ping(payload=b"openenv"))
                return
            if kind == PEER_CLOSE_EVENT:
                self.on_peer_close = message["callback"]
                return
        await super().app_send(message)


#: HTTP/2 connections build these streams (HTTP/1.1 ones build ``direct_ws``'s subclass).
PATCHES = (
    Patch(
        "hypercorn.protocol.h2:WSStream",
        lambda original: ProbingWSStream,
        "WebSocket streams whose pongs and peer close the session sees, and that close bad bytes with a code",
    ),
)
