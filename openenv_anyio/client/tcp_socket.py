"""What the lean per-backend streams share: a connected socket of their own, and its attributes.

A host given as an IP address is connected directly: one non-blocking ``connect`` and a
wait until the socket is writable, without ``anyio.connect_tcp``'s task group and
happy-eyeballs machinery, which only pay off when a name resolves to several addresses
(bench/README.md, "Client CPU per session"). A host name goes through ``anyio.connect_tcp``
(address resolution, happy eyeballs, its errors), whose socket is then duplicated for the
lean stream and anyio's stream, which has read nothing yet, is closed. Both set
``TCP_NODELAY``.
"""

from __future__ import annotations

import errno
import ipaddress
import os
import socket
from collections.abc import Callable, Mapping
from typing import Any

import anyio
from anyio.abc import SocketAttribute

__all__ = ["connect_socket", "socket_attributes"]


def _ip_family(host: str) -> socket.AddressFamily | None:
    """The address family of ``host`` when it is an IP address, else None (a name)."""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return None
    return socket.AF_INET6 if address.version == 6 else socket.AF_INET


async def _connect_address(family: socket.AddressFamily, host: str, port: int) -> socket.socket:
    """``host`` (an IP address of ``family``): connected without resolution or extra tasks."""
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setblocking(False)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        code = sock.connect_ex((host, port))
        if code in (errno.EINPROGRESS, errno.EAGAIN):
            await anyio.wait_writable(sock)
            code = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        if code:
            raise OSError(code, f"{os.strerror(code)} ({host}:{port})")  # ConnectionRefusedError, ...
    except BaseException:
        sock.close()
        raise
    return sock


async def connect_socket(host: str, port: int) -> socket.socket:
    """A connected, non-blocking TCP socket to ``host``:``port`` (``OSError`` on failure)."""
    family = _ip_family(host)
    if family is not None:
        return await _connect_address(family, host, port)
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
