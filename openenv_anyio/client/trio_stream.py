"""A plain TCP byte stream for the trio backend, with fewer trips through the scheduler.

trio's socket methods first try the call, and after a successful one still yield to the
scheduler once (a shielded checkpoint); a read that finds no data yet costs a failed
``recv`` before it waits. On a request/answer connection the answer is never there when
the read starts, and the request is always sent at once. This stream writes straight to
the socket (waiting for room only when the kernel buffer is full) and reads by waiting
for readability first, then reading once (bench/README.md, "Client CPU per step"). It is
an ``anyio.abc.ByteStream``: cancel scopes work on it (waiting is where it can be cancelled,
and a cancelled wait has read nothing).

Used for ``ws://`` without a proxy when the running backend is trio.
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Mapping
from typing import Any

import anyio
import anyio.abc

from .tcp_socket import connect_socket, socket_attributes

__all__ = ["TrioTcpStream", "connect_trio_tcp"]


class TrioTcpStream(anyio.abc.ByteStream):
    """One connected, non-blocking TCP socket driven with ``trio.lowlevel`` waits."""

    def __init__(self, sock: socket.socket) -> None:
        import trio

        self._lowlevel = trio.lowlevel
        self._trio_closed = trio.ClosedResourceError
        self._sock = sock
        self._closed = False
        self._eof = False
        self._receiving = False
        self._sending = False

    async def receive(self, max_bytes: int = 65536) -> bytes:
        if self._receiving:
            raise anyio.BusyResourceError("reading from")
        self._receiving = True
        try:
            while True:
                if self._closed:
                    raise anyio.ClosedResourceError
                if self._eof:
                    raise anyio.EndOfStream
                try:
                    await self._lowlevel.wait_readable(self._sock)
                except self._trio_closed:
                    raise anyio.ClosedResourceError from None
                if self._closed:
                    raise anyio.ClosedResourceError
                try:
                    data = self._sock.recv(max_bytes)
                except BlockingIOError:
                    continue
                except OSError as exc:
                    raise anyio.BrokenResourceError from exc
                if not data:
                    self._eof = True
                    raise anyio.EndOfStream
                return data
        finally:
            self._receiving = False

    async def send(self, item: bytes) -> None:
        if self._sending:
            raise anyio.BusyResourceError("writing to")
        self._sending = True
        try:
            view = memoryview(item)
            while view:
                if self._closed:
                    raise anyio.ClosedResourceError
                try:
                    sent = self._sock.send(view)
                except BlockingIOError:
                    try:
                        await self._lowlevel.wait_writable(self._sock)
                    except self._trio_closed:
                        raise anyio.ClosedResourceError from None
                    continue
                except OSError as exc:
                    raise anyio.BrokenResourceError from exc
                view = view[sent:]
        finally:
            self._sending = False

    async def send_eof(self) -> None:
        try:
            self._sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    async def aclose(self) -> None:
        self.close_now()
        await anyio.lowlevel.checkpoint()

    def close_now(self) -> None:
        """Close at once, without a checkpoint (:meth:`aclose` without the await)."""
        if not self._closed:
            self._closed = True
            self._lowlevel.notify_closing(self._sock)  # wakes a pending wait with ClosedResourceError
            self._sock.close()

    @property
    def extra_attributes(self) -> Mapping[Any, Callable[[], Any]]:
        return socket_attributes(self._sock)


async def connect_trio_tcp(host: str, port: int) -> TrioTcpStream:
    """Connect to ``host``:``port`` under trio (see ``tcp_socket``)."""
    return TrioTcpStream(await connect_socket(host, port))
