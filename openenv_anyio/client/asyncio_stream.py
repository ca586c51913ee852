"""A plain TCP byte stream for the asyncio backend, lighter than anyio's own.

anyio's asyncio ``SocketStream`` pauses the transport after every read and resumes it
before the next (two ``epoll_ctl`` calls per message) and yields to the loop once more
after every send; on a request/answer connection that is a large share of the client's
CPU per step. This stream keeps reading while its buffer is small (pausing only above
``HIGH_WATER``), wakes a waiting reader with one future, and writes without an extra
trip through the loop (bench/README.md, "Client CPU per step"). It is an
``anyio.abc.ByteStream``, so cancel scopes (timeouts) work on it as on any anyio stream; a
cancelled ``receive`` loses no data.

Used for ``ws://`` without a proxy when the running backend is asyncio; everything
else (trio, TLS, proxies) uses anyio's streams.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any, Final

import anyio
import anyio.abc

from .tcp_socket import connect_socket, socket_attributes

__all__ = ["AsyncioTcpStream", "connect_asyncio_tcp", "running_on_asyncio"]

HIGH_WATER: Final = 4 * 1024 * 1024  # bytes buffered before the transport stops reading
LOW_WATER: Final = 1024 * 1024  # ... and resumes once the buffer is below this


class _ReadingProtocol(asyncio.Protocol):
    """Buffers what arrives; wakes the one task waiting for data or for write room."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.chunks: deque[bytes] = deque()
        self.buffered = 0
        self.reading_paused = False
        self.eof = False
        self.lost = False
        self.error: BaseException | None = None
        self.data_waiter: asyncio.Future[None] | None = None
        self.drain_waiter: asyncio.Future[None] | None = None
        self.writing_paused = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.chunks.append(data)
        self.buffered += len(data)
        if self.buffered > HIGH_WATER and not self.reading_paused and self.transport is not None:
            self.reading_paused = True
            self.transport.pause_reading()
        self._wake_reader()

    def eof_received(self) -> bool | None:
        self.eof = True
        self._wake_reader()
        return None  # let the transport close itself

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        self.error = exc
        self._wake_reader()
        waiter = self.drain_waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def pause_writing(self) -> None:
        self.writing_paused = True

    def resume_writing(self) -> None:
        self.writing_paused = False
        waiter = self.drain_waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _wake_reader(self) -> None:
        waiter = self.data_waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)


class AsyncioTcpStream(anyio.abc.ByteStream):
    """One connected TCP stream on an asyncio transport (see the module docstring)."""

    def __init__(self, transport: asyncio.Transport, protocol: _ReadingProtocol) -> None:
        self._transport = transport
        self._protocol = protocol
        self._loop = asyncio.get_running_loop()
        self._closed = False
        self._receiving = False

    async def receive(self, max_bytes: int = 65536) -> bytes:
        if self._closed:
            raise anyio.ClosedResourceError
        protocol = self._protocol
        chunks = protocol.chunks
        while not chunks:
            if self._closed:
                raise anyio.ClosedResourceError
            if protocol.error is not None:
                raise anyio.BrokenResourceError from protocol.error
            if protocol.eof or protocol.lost:
                raise anyio.EndOfStream
            if self._receiving:
                raise anyio.BusyResourceError("reading from")
            waiter = protocol.data_waiter = self._loop.create_future()
            self._receiving = True
            try:
                await waiter
            finally:
                self._receiving = False
                protocol.data_waiter = None
        chunk = chunks.popleft()
        if len(chunk) > max_bytes:
            chunk, rest = chunk[:max_bytes], chunk[max_bytes:]
            chunks.appendleft(rest)
        protocol.buffered -= len(chunk)
        if protocol.reading_paused and protocol.buffered < LOW_WATER:
            protocol.reading_paused = False
            self._transport.resume_reading()
        return chunk

    async def send(self, item: bytes) -> None:
        if self._closed:
            raise anyio.ClosedResourceError
        protocol = self._protocol
        if protocol.lost or self._transport.is_closing():
            raise anyio.BrokenResourceError from protocol.error
        self._transport.write(item)
        while protocol.writing_paused and not protocol.lost:
            waiter = protocol.drain_waiter = self._loop.create_future()
            try:
                await waiter
            finally:
                protocol.drain_waiter = None
        if protocol.lost:
            raise anyio.ClosedResourceError if self._closed else anyio.BrokenResourceError

    async def send_eof(self) -> None:
        try:
            self._transport.write_eof()
        except OSError:
            pass

    async def aclose(self) -> None:
        """Close at once (as anyio's stream does: unsent data is discarded)."""
        self.close_now()
        await anyio.lowlevel.checkpoint()

    def close_now(self) -> None:
        """Close at once, without a checkpoint (:meth:`aclose` without the await)."""
        self._closed = True
        self._transport.abort()
        self._protocol._wake_reader()

    @property
    def extra_attributes(self) -> Mapping[Any, Callable[[], Any]]:
        return socket_attributes(self._transport.get_extra_info("socket"))


def running_on_asyncio() -> bool:
    """Whether the calling task runs on an asyncio event loop (anyio's asyncio backend)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


async def connect_asyncio_tcp(host: str, port: int) -> AsyncioTcpStream:
    """Connect to ``host``:``port`` on the running asyncio loop (see ``tcp_socket``)."""
    sock = await connect_socket(host, port)
    try:
        transport, protocol = await asyncio.get_running_loop().create_connection(_ReadingProtocol, sock=sock)
    except BaseException:
        sock.close()
        raise
    return AsyncioTcpStream(transport, protocol)
