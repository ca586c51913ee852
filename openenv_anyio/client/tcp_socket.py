"""What the lean per-backend streams share: a connected socket of their own, and its attributes.

The connection is made by ``anyio.connect_tcp`` (address resolution, happy eyeballs,
TCP_NODELAY, its errors); the socket is then duplicated for the lean stream and anyio's
stream, which has read nothing yet, is closed.
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Mapping
from typing import Any

import anyio
from anyio.abc import SocketAttribute

__all__ = ["connect_socket", "socket_attributes"]


async def connect_socket(host: str, port: int) -> socket.socket:
    """A connected, non-blocking TCP socket to ``host``:``port`` (``OSError`` as anyio raises it)."""
    anyio_stream = await anyio.connect_tcp(host, port)
    try:
        sock: socket.socket = anyio_stream.extra(SocketAttribute.raw_socket).dup()
    finally:
        await anyio.aclose_forcefully(anyio_stream)
    sock.setblocking(False)
    return sock


def socket_attributes(sock: socket.socket) -> Mapping[Any, Callable[[], Any]]:
    """anyio's typed attributes of a socket stream (``stream.extra(SocketAttribute...)``)."""
    return {
        SocketAttribute.family: lambda: sock.family,
        SocketAttribute.local_address: lambda: sock.getsockname(),
        SocketAttribute.remote_address: lambda: sock.getpeername(),
        SocketAttribute.raw_socket: lambda: sock,
    }
