"""``/ws`` sessions run in the connection's own task (the lean path through Hypercorn).

Hypercorn serves every WebSocket with two tasks per connection: the connection task reads
the socket, parses frames (wsproto) and pushes each message through a memory channel to
the ASGI application's task, whose answer goes back through wsproto, the HTTP/1.1 protocol
object and a locked, shielded socket write. For the paths an application marks as
*direct*, this module runs the application in the connection task itself:

- ``receive()`` waits on the socket and decodes whole, unfragmented, masked text frames
  itself (:class:`openenv_anyio.ws.FrameSplitter`); every other byte goes, in order, to Hypercorn's own WebSocket
  stream, so pings, close handshakes, fragments, bad frames and the message size limit are
  handled exactly as before;
- ``send()`` frames text messages itself and writes them straight to the socket when it
  takes them at once, else through Hypercorn's (guarded) send path; every other message
  (accept, close, pings) is the stream's own ``app_send``;
- permessage-deflate is declined (answers go out uncompressed, which RFC 7692 allows);
- with the server's budget of bytes in flight on the config (:data:`~.events.INFLIGHT_BUDGET_ATTR`),
  a final text frame above the fast limit is collected here too, in one buffer, after its
  size was reserved from the budget (``SRV-MEM-1``; the socket is not read while the
  reservation waits), and handed over as :class:`~.events.HeldText` under
  :data:`~.events.HELD_TEXT`; one the budget has no room for is dropped unread and handed
  over without its bytes; one that is not UTF-8 fails the connection with 1007 as wsproto
  would.

Measured (``python -m bench.server_cpu``): server CPU per step down from ~134 to ~43 us
with one session, below the bare ASGI echo on Hypercorn (~103 us). Only plain (not TLS)
HTTP/1.1 connections of Hypercorn's trio worker take this path; anything else (HTTP/2,
TLS) is served the usual ASGI way.

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
from hypercorn.protocol.h11 import H11WSConnection
from hypercorn.protocol.events import Data, Request, StreamClosed
from hypercorn.protocol.ws_stream import ASGIWebsocketState
from hypercorn.trio.tcp_server import MAX_RECV, TCPServer
from wsproto.connection import ConnectionState

from ...core import CloseCode
from ...ws import FrameSplitter, InvalidText, LargeFrame, LargeState, LargeText, SplitItem, encode_text_frame
from . import connection_guards
from .events import HELD_TEXT, INFLIGHT_BUDGET_ATTR, DirectHandler, HeldText, InflightBudget
from .inventory import Patch
from .liveness import ProbingWSStream

__all__ = ["DirectWSStream", "PATCHES"]


class _RecordSpawn:
    """Stands in for the connection's task group while Hypercorn handles the handshake
    request: records the scope instead of spawning the application."""

    def __init__(self, inbox: collections.deque[Any]) -> None:
        self.scope: dict[str, Any] | None = None
        self._inbox = inbox

    async def spawn_app(self, app: Any, config: Any, scope: dict[str, Any], send: Any) -> Callable[[Any], Awaitable[None]]:
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
            return await super().handle(event)
        inbox: collections.deque[Any] = collections.deque()
        recorder = _RecordSpawn(inbox)
        task_group, self.task_group = self.task_group, recorder
        try:
            await super().handle(event)  # Hypercorn validates the handshake and builds the scope
        finally:
            self.task_group = task_group
        scope = recorder.scope
        if scope is None:  # the handshake was refused with an HTTP error
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
                await self.app_send(None)  # as Hypercorn does when an application returns


class _DirectIO:
    """``receive()`` and ``send()`` of a direct stream, on the connection's socket.

    Inbound: whole unfragmented text frames within :data:`~openenv_anyio.ws.FAST_FRAME_LIMIT` are decoded
    here; every other byte goes, in order, to Hypercorn's stream (wsproto), so pings, close
    frames, fragments, compressed and oversized messages are handled exactly as before.
    Outbound: text messages are framed here and written straight to the socket when it
    takes them at once (no lock held by anyone); otherwise through Hypercorn's guarded
    send path. Uncompressed frames are always valid, permessage-deflate or not (RFC 7692).
    """

    __slots__ = ("_stream", "_tcp", "_inbox", "_pending", "_splitter", "_budget", "_reserved")

    def __init__(self, stream: DirectWSStream, tcp: TCPServer, inbox: collections.deque[Any]) -> None:
        self._stream = stream
        self._tcp = tcp
        self._inbox = inbox
        self._pending = True  # bytes that came with the handshake request are still with h11
        self._budget: InflightBudget | None = getattr(stream.config, INFLIGHT_BUDGET_ATTR, None)
        self._reserved = 0  # bytes of the budget the large frame being read holds
        self._splitter = FrameSplitter(
            masked=True, limit=stream.config.websocket_max_message_size, collect_large=self._budget is not None
        )

    async def receive(self) -> Any:
        inbox = self._inbox
        while not inbox:
            if self._stream.closed:
                return {"type": "websocket.disconnect", "code": int(CloseCode.ABNORMAL)}
            if self._pending:
                self._pending = False
                data = self._handshake_leftover()
            elif self._splitter.large is LargeState.OFFERED:
                data = b""  # the wait for room was interrupted (the caller's deadline): wait again
            else:
                data = await self._read()
                if not data:
                    with trio.CancelScope(shield=True):
                        await self._tcp.protocol.handle(Closed())
                    continue
            await self._split(data)
        return inbox.popleft()

    def release_held(self) -> None:
        """The application is done: give back the budget of what it never took."""
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

    async def _split(self, data: bytes) -> None:
        """Decode the fast frames of ``data``; hand every other byte to wsproto, in order."""
        inbox = self._inbox
        for item in self._splitter.feed(data):
            if type(item) is str:
                inbox.append({"type": "websocket.receive", "bytes": None, "text": item})
            elif type(item) is bytes:
                await self._to_wsproto(item)
            elif await self._large(item):
                await self._split(b"")  # the offered frame was admitted or skipped: read on
                return

    async def _large(self, item: SplitItem) -> bool:
        """Act on a large-frame item; ``True`` for an offer, now admitted or skipped."""
        match item:
            case LargeFrame(size):
                budget = self._budget
                assert budget is not None  # the splitter collects large frames only with one
                if await budget.reserve(size):  # SRV-MEM-1: waits, bounded, reading nothing
                    self._reserved = size
                    self._splitter.admit()
                else:
                    self._splitter.skip()
                    self._deliver(HeldText(None, size, None))
                return True
            case LargeText(data):
                held = HeldText(data, self._reserved, self._budget)
                self._reserved = 0
                self._deliver(held)
            case InvalidText():
                self._release_reservation()
                await self._fail(CloseCode.INVALID_PAYLOAD)
            case str() | bytes():
                raise AssertionError("fast and general-parser items are handled by _split")
            case _:
                assert_never(item)
        return False

    def _deliver(self, held: HeldText) -> None:
        self._inbox.append({"type": "websocket.receive", "bytes": None, "text": None, HELD_TEXT: held})

    async def _fail(self, code: int) -> None:
        """Fail the connection as wsproto does for bytes that break RFC 6455 (``WS-CLOSE-3``)."""
        stream = self._stream
        if stream.closed:
            return
        stream.refuse(code)
        with trio.CancelScope(shield=True):
            await stream.send(StreamClosed(stream_id=stream.stream_id))

    async def _to_wsproto(self, data: bytes) -> None:
        stream = self._stream
        if stream.closed:
            return
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
        if (
            message is not None
            and message["type"] == "websocket.send"
            and message.get("bytes") is None
            and isinstance(message.get("text"), str)
            and not stream.closed
            and stream.state is ASGIWebsocketState.CONNECTED
            and stream.connection.state is ConnectionState.OPEN
        ):
            data = encode_text_frame(message["text"], masked=False)
            tcp = self._tcp
            written = connection_guards.write_now(tcp, data)
            if written == len(data):
                return
            await tcp.protocol_send(RawData(data=data[written:]))
            return
        await stream.app_send(message)


PATCHES = (
    Patch(
        "hypercorn.protocol.h11:WSStream",
        lambda original: DirectWSStream,
        "HTTP/1.1 WebSocket streams that run direct routes (/ws) in the connection's task",
    ),
)

