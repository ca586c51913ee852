"""A small client WebSocket: wsproto over an anyio byte stream (TCP, or TLS for ``wss://``).

Why not a WebSocket library: the inbound size limit must really be enforced (an oversized
frame is refused with close code 1009 as soon as it crosses the limit, not after it has
been buffered), pings must be answered while no request is pending, and the same code
must run on asyncio and trio.

One reader task per connection (owned by the client's task group) reads the socket,
answers pings, and puts each complete text message into a small bounded inbox; the
requester sends from its own task. Nothing is spawned per frame.
"""

from __future__ import annotations

import ssl
from collections.abc import Iterable, Sequence
from typing import Final

import anyio
import anyio.abc
from anyio.streams.tls import TLSStream
from wsproto import ConnectionType, WSConnection
from wsproto.connection import Connection, ConnectionState
from wsproto.events import (
    AcceptConnection,
    BytesMessage,
    CloseConnection,
    Event,
    Ping,
    Pong,
    RejectConnection,
    RejectData,
    Request,
    TextMessage,
)
from wsproto.utilities import LocalProtocolError, RemoteProtocolError

from .errors import (
    ConnectError,
    ConnectionClosedByServer,
    ConnectionLost,
    ConnectionRefused,
    EnvClientError,
    HandshakeRejected,
    MessageTooLarge,
    ProtocolViolation,
)
from .urls import WebSocketAddress

__all__ = ["WebSocketTransport"]

READ_SIZE: Final = 256 * 1024
INBOX_SIZE: Final = 8  # answers are one per request; more waiting frames is a broken peer
MAX_REJECT_BODY: Final = 4096
CLOSE_TOO_BIG: Final = 1009
CLOSE_GRACE_S: Final = 2.0


def _payload_size(data: str | bytes) -> int:
    """Bytes of ``data`` on the wire (UTF-8 for text; ASCII text is counted without encoding)."""
    if isinstance(data, str) and not data.isascii():
        return len(data.encode("utf-8", "surrogatepass"))
    return len(data)


class WebSocketTransport:
    """One open client WebSocket connection.

    Create it with :meth:`open`; run :meth:`run_reader` (and optionally
    :meth:`run_keepalive`) in a task group; :meth:`send_text` and :meth:`receive` carry
    messages; :meth:`close` ends the connection politely, :meth:`abort` at once.
    When the connection ends for any reason other than our own close, :attr:`failure`
    holds the error that says why and :meth:`receive` raises it.
    """

    def __init__(
        self,
        address: WebSocketAddress,
        stream: anyio.abc.ByteStream,
        connection: Connection,
        max_message_size: int,
    ) -> None:
        self.address = address
        self.failure: EnvClientError | None = None
        self.pings_answered = 0
        self._stream = stream
        self._conn = connection
        self._limit = max_message_size
        self._send_lock = anyio.Lock(fast_acquire=True)
        self._inbox_in, self._inbox = anyio.create_memory_object_stream[str | bytes](INBOX_SIZE)
        self._parts: list[str | bytes] = []
        self._size = 0
        self._outgoing = bytearray()
        self._closing = False
        self._ended = anyio.Event()
        self._pong = anyio.Event()
        self._ping_count = 0
        self._refused = False
        self._reader_scope = anyio.CancelScope()

    # -- opening -----------------------------------------------------------------------

    @classmethod
    async def open(
        cls,
        address: WebSocketAddress,
        *,
        max_message_size: int,
        subprotocols: Sequence[str] = (),
        ssl_context: ssl.SSLContext | None = None,
    ) -> WebSocketTransport:
        """Connect TCP (TLS for ``wss``) and run the opening handshake.

        No timeout here: the caller bounds the whole of it with a cancel scope.
        """
        url = address.url
        try:
            if address.secure:
                stream: anyio.abc.ByteStream = await anyio.connect_tcp(
                    address.host,
                    address.port,
                    ssl_context=ssl_context or ssl.create_default_context(),
                    tls_hostname=address.host,
                )
            else:
                stream = await anyio.connect_tcp(address.host, address.port)
        except OSError as exc:  # includes ssl.SSLError and name resolution failures
            cause = exc.__cause__ if isinstance(exc.__cause__, OSError) else exc
            if isinstance(cause, ConnectionRefusedError):
                raise ConnectionRefused(url, "connection refused") from exc
            raise ConnectError(url, str(cause) or type(cause).__name__) from exc
        try:
            transport, leftover = await cls._handshake(address, stream, max_message_size, subprotocols)
            transport._handle(leftover)
            if transport._outgoing:
                await transport._flush()
        except BaseException:
            await anyio.aclose_forcefully(stream)
            raise
        return transport

    @classmethod
    async def _handshake(
        cls,
        address: WebSocketAddress,
        stream: anyio.abc.ByteStream,
        max_message_size: int,
        subprotocols: Sequence[str],
    ) -> tuple[WebSocketTransport, list[Event]]:
        ws = WSConnection(ConnectionType.CLIENT)
        request = Request(host=address.host_header, target=address.target, subprotocols=list(subprotocols))
        try:
            await stream.send(ws.send(request))
        except (anyio.BrokenResourceError, OSError) as exc:
            raise ConnectError(address.url, f"connection failed during the handshake: {exc}") from exc
        reject_status: int | None = None
        reject_body = bytearray()
        while True:
            try:
                data = await stream.receive(READ_SIZE)
            except anyio.EndOfStream:
                data = None
            except (anyio.BrokenResourceError, OSError) as exc:
                raise ConnectError(address.url, f"connection failed during the handshake: {exc}") from exc
            try:
                ws.receive_data(data)
                events = list(ws.events())
            except RemoteProtocolError as exc:
                raise ConnectError(address.url, f"invalid handshake answer: {exc}") from exc
            for index, event in enumerate(events):
                if isinstance(event, AcceptConnection):
                    connection = ws.connection
                    assert connection is not None
                    transport = cls(address, stream, connection, max_message_size)
                    return transport, events[index + 1 :]
                if isinstance(event, RejectConnection):
                    reject_status = event.status_code
                    if not event.has_body:
                        raise HandshakeRejected(address.url, reject_status)
                elif isinstance(event, RejectData):
                    reject_body += event.data[: MAX_REJECT_BODY - len(reject_body)]
                    if event.body_finished:
                        raise HandshakeRejected(address.url, reject_status or 0, bytes(reject_body))
            if data is None:
                if reject_status is not None:
                    raise HandshakeRejected(address.url, reject_status, bytes(reject_body))
                raise ConnectError(address.url, "the server closed the connection during the handshake")

    # -- the reader --------------------------------------------------------------------

    async def run_reader(self) -> None:
        """Read until the connection ends: deliver messages, answer pings and closes.

        Never raises for a connection problem: it records :attr:`failure` and ends, so
        the task group that owns it is not torn down by a peer's misbehaviour. After the
        client refused a frame (1009) it keeps reading, discarding, for at most
        ``CLOSE_GRACE_S`` so the peer sees the close and can answer it.
        """
        try:
            with self._reader_scope:
                while not self._ended.is_set():
                    try:
                        data = await self._stream.receive(READ_SIZE)
                    except anyio.EndOfStream:
                        self._fail(ConnectionLost(self.address.url, "closed without a WebSocket close frame"))
                        break
                    except anyio.ClosedResourceError:
                        break  # we closed the stream ourselves
                    except (anyio.BrokenResourceError, OSError) as exc:
                        self._fail(ConnectionLost(self.address.url, str(exc) or type(exc).__name__))
                        break
                    self._conn.receive_data(data)
                    self._handle(self._conn.events())
                    if self._outgoing:
                        await self._flush()
        finally:
            self._ended.set()
            self._inbox_in.close()
            await anyio.aclose_forcefully(self._stream)

    def _handle(self, events: Iterable[Event]) -> None:
        """React to wsproto events (synchronously; bytes to send go to ``_outgoing``)."""
        for event in events:
            if isinstance(event, (TextMessage, BytesMessage)):
                if self._refused:
                    continue
                data = event.data
                self._size += _payload_size(data)
                if self._size > self._limit:
                    self._refuse_too_large()
                    return
                if event.message_finished:
                    if self._parts:
                        self._parts.append(data)
                        data = "".join(self._parts) if isinstance(data, str) else b"".join(self._parts)  # type: ignore[arg-type]
                        self._parts = []
                    self._size = 0
                    try:
                        self._inbox_in.send_nowait(data)
                    except anyio.WouldBlock:
                        self._fail(ProtocolViolation(self.address.url, f"more than {INBOX_SIZE} unrequested frames"))
                        self._refuse(1008, "too many unrequested frames")
                        return
                else:
                    self._parts.append(data)
            elif isinstance(event, Ping):
                if self._conn.state is ConnectionState.OPEN:
                    self._outgoing += self._conn.send(event.response())
                    self.pings_answered += 1
            elif isinstance(event, Pong):
                self._pong.set()
            elif isinstance(event, CloseConnection):
                if self._conn.state is ConnectionState.OPEN:  # wsproto could not parse a frame
                    self._fail(ProtocolViolation(self.address.url, f"invalid WebSocket frame: {event.reason}"))
                    self._outgoing += self._conn.send(CloseConnection(code=event.code, reason="invalid frame"))
                    self._ended.set()
                    return
                if not self._closing:
                    self._fail(ConnectionClosedByServer(self.address.url, event.code, event.reason or ""))
                if self._conn.state is ConnectionState.REMOTE_CLOSING:
                    self._outgoing += self._conn.send(event.response())
                self._ended.set()
                return

    def _refuse_too_large(self) -> None:
        declared = self._declared_frame_size()
        self._fail(MessageTooLarge(self.address.url, max(self._size, declared), self._limit))
        self._parts = []
        self._refuse(CLOSE_TOO_BIG, "message too big")

    def _refuse(self, code: int, reason: str) -> None:
        """Close with ``code`` and stop delivering; the reader waits briefly for the peer's close."""
        self._refused = True
        self._inbox_in.close()
        if self._conn.state is ConnectionState.OPEN:
            self._outgoing += self._conn.send(CloseConnection(code=code, reason=reason))
            self._reader_scope.deadline = anyio.current_time() + CLOSE_GRACE_S
        else:
            self._ended.set()

    def _declared_frame_size(self) -> int:
        """The length the current frame's header announced (0 when wsproto does not say)."""
        decoder = getattr(getattr(self._conn, "_proto", None), "_frame_decoder", None)
        header = getattr(decoder, "header", None)
        return int(getattr(header, "payload_len", 0) or 0)

    def _fail(self, error: EnvClientError) -> None:
        if self.failure is None:
            self.failure = error

    async def _flush(self) -> None:
        """Send the reader's control frames, unless a send is under way: the sender then
        sends them right after its frame, so the reader never stops reading to wait."""
        if self._send_lock.locked():
            return
        try:
            await self._send_bytes(b"")
        except EnvClientError:
            self._ended.set()

    # -- keep-alive --------------------------------------------------------------------

    async def run_keepalive(self, interval_s: float, timeout_s: float | None) -> None:
        """Ping every ``interval_s`` of the connection's life; no pong in ``timeout_s`` ends it."""
        while True:
            with anyio.move_on_after(interval_s):
                await self._ended.wait()
                return
            self._pong = anyio.Event()
            self._ping_count += 1
            try:
                await self._send_bytes(self._conn.send(Ping(payload=self._ping_count.to_bytes(4, "big"))))
            except (EnvClientError, LocalProtocolError):
                return
            with anyio.move_on_after(timeout_s):
                await self._pong.wait()
                continue
            if self._ended.is_set():
                return
            self._fail(ConnectionLost(self.address.url, f"no pong within ping_timeout_s={timeout_s:g} s"))
            await self.abort()
            return

    # -- requester side ----------------------------------------------------------------

    @property
    def ended(self) -> bool:
        return self._ended.is_set()

    @property
    def pending(self) -> int:
        """Messages received and not yet taken (0 whenever every answer has been taken)."""
        return self._inbox.statistics().current_buffer_used

    async def send_text(self, text: str) -> None:
        """Send one text message."""
        if self._ended.is_set():
            raise self.failure or ConnectionLost(self.address.url, "the connection has ended")
        try:
            data = self._conn.send(TextMessage(data=text))
        except LocalProtocolError as exc:
            raise self.failure or ConnectionLost(self.address.url, str(exc)) from None
        await self._send_bytes(data)

    async def _send_bytes(self, data: bytes) -> None:
        """Send ``data``, then any control frames the reader queued meanwhile (pongs, closes)."""
        try:
            async with self._send_lock:
                if data:
                    await self._stream.send(data)
                while self._outgoing:
                    queued, self._outgoing = bytes(self._outgoing), bytearray()
                    await self._stream.send(queued)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
            self._fail(ConnectionLost(self.address.url, str(exc) or type(exc).__name__))
            raise self.failure from exc  # type: ignore[misc]

    async def receive(self) -> str | bytes:
        """The next message; raises :attr:`failure` once the connection has ended."""
        try:
            return await self._inbox.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise self.failure or ConnectionLost(self.address.url, "the connection has ended") from None

    def receive_nowait(self) -> str | bytes | None:
        """A message already received, or None."""
        try:
            return self._inbox.receive_nowait()
        except (anyio.WouldBlock, anyio.EndOfStream, anyio.ClosedResourceError):
            return None

    # -- closing -----------------------------------------------------------------------

    def expect_close(self) -> None:
        """The peer is about to close: its close frame is no failure."""
        self._closing = True

    async def wait_ended(self) -> None:
        await self._ended.wait()

    async def close(self, code: int = 1000, reason: str = "", *, timeout_s: float = 5.0) -> None:
        """Send a close frame, wait (at most ``timeout_s``) for the peer's, then close TCP.

        Shielded: it completes even when the calling task is being cancelled.
        """
        with anyio.CancelScope(shield=True):
            if not self._ended.is_set() and self._conn.state is ConnectionState.OPEN:
                self._closing = True
                with anyio.move_on_after(timeout_s):
                    try:
                        await self._send_bytes(self._conn.send(CloseConnection(code=code, reason=reason)))
                    except EnvClientError:
                        pass
                    else:
                        await self._ended.wait()
            await self.abort()

    async def abort(self) -> None:
        """Close the TCP connection now; after a refusal, let the reader finish its close first."""
        if self._refused and not self._ended.is_set():
            return  # the reader ends within CLOSE_GRACE_S and closes the stream
        self._ended.set()
        await anyio.aclose_forcefully(self._stream)

    @property
    def is_tls(self) -> bool:
        return isinstance(self._stream, TLSStream)
