"""A small client WebSocket: wsproto's frame protocol over an anyio byte stream.

Why not a WebSocket library: the inbound size limit must really be enforced (an oversized
message is refused with close code 1009 as soon as it crosses the limit, not after it has
been buffered), pings must be answered while no request is pending, and the same code
must run on asyncio and trio. wsproto's ``FrameProtocol`` does the framing (masking,
fragments, UTF-8, close payloads); this module adds the connection's life around it.

One reader task per connection (owned by the client's task group) reads the socket,
answers pings, and puts each complete message into a small bounded inbox; the requester
sends from its own task. Nothing is spawned per frame.
"""

from __future__ import annotations

import ssl
from collections.abc import Sequence
from typing import Final

import anyio
import anyio.abc
from anyio.streams.tls import TLSStream
from wsproto.frame_protocol import CloseReason, FrameProtocol, Opcode, ParseFailed

from .errors import (
    ConnectError,
    ConnectionClosedByServer,
    ConnectionLost,
    ConnectionRefused,
    EnvClientError,
    MessageTooLarge,
    ProtocolViolation,
)
from .handshake import open_handshake
from .proxy import HttpProxy, open_tunnel
from .urls import WebSocketAddress

__all__ = ["WebSocketTransport"]

READ_SIZE: Final = 256 * 1024
INBOX_SIZE: Final = 8  # answers are one per request; more waiting frames is a broken peer
CLOSE_TOO_BIG: Final = 1009
CLOSE_GRACE_S: Final = 2.0


def _payload_size(data: str | bytes) -> int:
    """Bytes of ``data`` on the wire (UTF-8 for text; ASCII text is counted without encoding)."""
    if isinstance(data, str) and not data.isascii():
        return len(data.encode("utf-8", "surrogatepass"))
    return len(data)


async def _open_stream(
    address: WebSocketAddress, ssl_context: ssl.SSLContext | None, proxy: HttpProxy | None
) -> anyio.abc.ByteStream:
    """The byte stream to the server: TCP, or a proxy tunnel; TLS on top for ``wss``."""
    url = address.url
    context = (ssl_context or ssl.create_default_context()) if address.secure else None
    try:
        if proxy is None:
            if context is None:
                return await anyio.connect_tcp(address.host, address.port)
            return await anyio.connect_tcp(address.host, address.port, ssl_context=context, tls_hostname=address.host)
        tunnel = await open_tunnel(proxy, address)
        if context is None:
            return tunnel
        try:
            return await TLSStream.wrap(tunnel, hostname=address.host, ssl_context=context)
        except BaseException:
            await anyio.aclose_forcefully(tunnel)
            raise
    except EnvClientError:  # already says what failed (and is an OSError: keep it first)
        raise
    except OSError as exc:  # includes ssl.SSLError and name resolution failures
        cause = exc.__cause__ if isinstance(exc.__cause__, OSError) else exc
        if isinstance(cause, ConnectionRefusedError):
            raise ConnectionRefused(url, "connection refused") from exc
        raise ConnectError(url, str(cause) or type(cause).__name__) from exc
    except anyio.BrokenResourceError as exc:  # the peer hung up during the TLS handshake
        raise ConnectError(url, f"TLS handshake failed: {exc.__cause__ or exc}") from exc


class WebSocketTransport:
    """One open client WebSocket connection.

    Create it with :meth:`open`; run :meth:`run_reader` (and optionally
    :meth:`run_keepalive`) in a task group; :meth:`send_text` and :meth:`receive` carry
    messages; :meth:`close` ends the connection politely, :meth:`abort` at once.
    When the connection ends for any reason other than our own close, :attr:`failure`
    holds the error that says why and :meth:`receive` raises it.
    """

    def __init__(self, address: WebSocketAddress, stream: anyio.abc.ByteStream, max_message_size: int) -> None:
        self.address = address
        self.failure: EnvClientError | None = None
        self.subprotocol: str | None = None  # the one the server selected
        self.pings_answered = 0
        self._stream = stream
        self._proto = FrameProtocol(client=True, extensions=[])
        self._limit = max_message_size
        self._send_lock = anyio.Lock(fast_acquire=True)
        self._inbox_in, self._inbox = anyio.create_memory_object_stream[str | bytes](INBOX_SIZE)
        self._parts: list[str | bytes] = []
        self._size = 0
        self._outgoing = bytearray()  # control frames the reader wants sent
        self._close_sent = False
        self._closing = False  # a close by the peer is expected, not a failure
        self._refused = False
        self._ended = anyio.Event()
        self._pong = anyio.Event()
        self._ping_count = 0
        self._reader_scope = anyio.CancelScope()

    # -- opening -----------------------------------------------------------------------

    @classmethod
    async def open(
        cls,
        address: WebSocketAddress,
        *,
        max_message_size: int,
        subprotocols: Sequence[str] = (),
        extra_headers: Sequence[tuple[bytes, bytes]] = (),
        ssl_context: ssl.SSLContext | None = None,
        proxy: HttpProxy | None = None,
    ) -> WebSocketTransport:
        """Connect TCP (through ``proxy`` if given; TLS for ``wss``) and run the opening handshake.

        No timeout here: the caller bounds the whole of it with a cancel scope.
        """
        stream = await _open_stream(address, ssl_context, proxy)
        try:
            selected, leftover = await open_handshake(stream, address, subprotocols, extra_headers)
            transport = cls(address, stream, max_message_size)
            transport.subprotocol = selected
            if leftover:
                transport._receive(leftover)
                await transport._flush()
        except BaseException:
            await anyio.aclose_forcefully(stream)
            raise
        return transport

    # -- the reader --------------------------------------------------------------------

    async def run_reader(self) -> None:
        """Read until the connection ends: deliver messages, answer pings and closes.

        Never raises for a connection problem: it records :attr:`failure` and ends, so
        the task group that owns it is not torn down by a peer's misbehaviour. After the
        client refused a message (1009) it keeps reading, discarding, for at most
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
                    self._receive(data)
                    if self._outgoing:
                        await self._flush()
        finally:
            self._ended.set()
            self._inbox_in.close()
            await anyio.aclose_forcefully(self._stream)

    def _receive(self, data: bytes) -> None:
        """Parse ``data`` and react to its frames (synchronously; replies go to ``_outgoing``)."""
        self._proto.receive_bytes(data)
        try:
            for frame in self._proto.received_frames():
                opcode = frame.opcode
                if opcode is Opcode.TEXT or opcode is Opcode.BINARY:
                    if not self._refused:
                        self._on_data(frame.payload, frame.message_finished)  # type: ignore[arg-type]
                elif opcode is Opcode.PING:
                    if not self._close_sent:
                        self._outgoing += self._proto.pong(frame.payload)  # type: ignore[arg-type]
                        self.pings_answered += 1
                elif opcode is Opcode.PONG:
                    self._pong.set()
                elif opcode is Opcode.CLOSE:
                    code, reason = frame.payload  # type: ignore[misc]
                    self._on_close(int(code), reason)
                    return
        except ParseFailed as exc:  # the server sent something that is not WebSocket
            self._fail(ProtocolViolation(self.address.url, f"invalid WebSocket frame: {exc}"))
            self._send_close(int(exc.code), "invalid frame")
            self._ended.set()

    def _on_data(self, data: str | bytes, finished: bool) -> None:
        self._size += _payload_size(data)
        if self._size > self._limit:
            declared = self._declared_frame_size()
            self._fail(MessageTooLarge(self.address.url, max(self._size, declared), self._limit))
            self._parts = []
            self._refuse(CLOSE_TOO_BIG, "message too big")
            return
        if not finished:
            self._parts.append(data)
            return
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

    def _on_close(self, code: int, reason: str) -> None:
        if not self._closing:
            self._fail(ConnectionClosedByServer(self.address.url, code, reason))
        if not self._close_sent:  # echo the peer's close (RFC 6455 section 5.5.1)
            self._send_close(code, reason)
        self._ended.set()

    def _refuse(self, code: int, reason: str) -> None:
        """Close with ``code`` and stop delivering; the reader waits briefly for the peer's close."""
        self._refused = True
        self._inbox_in.close()
        if self._close_sent:
            self._ended.set()
            return
        self._send_close(code, reason)
        self._reader_scope.deadline = anyio.current_time() + CLOSE_GRACE_S

    def _send_close(self, code: int, reason: str) -> None:
        if not self._close_sent:
            self._close_sent = True
            self._outgoing += self._proto.close(code, reason or None)

    def _declared_frame_size(self) -> int:
        """The length the current frame's header announced (0 when wsproto does not say)."""
        header = getattr(getattr(self._proto, "_frame_decoder", None), "header", None)
        return int(getattr(header, "payload_len", 0) or 0)

    def _fail(self, error: EnvClientError) -> None:
        if self.failure is None:
            self.failure = error

    async def _flush(self) -> None:
        """Send the reader's control frames, unless a send is under way: the sender then
        sends them right after its frame, so the reader never stops reading to wait."""
        if self._send_lock.locked() or not self._outgoing:
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
            if self._close_sent:
                return
            self._pong = anyio.Event()
            self._ping_count += 1
            try:
                await self._send_bytes(self._proto.ping(self._ping_count.to_bytes(4, "big")))
            except EnvClientError:
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

    async def send_text(self, text: str) -> None:
        """Send one text message."""
        if self._ended.is_set() or self._close_sent:
            raise self.failure or ConnectionLost(self.address.url, "the connection has ended")
        await self._send_bytes(self._proto.send_data(text, True))

    async def _send_bytes(self, data: bytes | bytearray) -> None:
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

    async def close(self, code: int = CloseReason.NORMAL_CLOSURE, reason: str = "", *, timeout_s: float = 5.0) -> None:
        """Send a close frame, wait (at most ``timeout_s``) for the peer's, then close TCP.

        Shielded: it completes even when the calling task is being cancelled.
        """
        with anyio.CancelScope(shield=True):
            if not self._ended.is_set() and not self._close_sent:
                self._closing = True
                self._send_close(code, reason)
                with anyio.move_on_after(timeout_s):
                    try:
                        await self._send_bytes(b"")
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
