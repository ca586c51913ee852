"""An HTTP/1.x request head as the server looks at it before Hypercorn reads it (no I/O but
:func:`peek_now`, which reads nothing: it peeks, and :func:`discard_now`, which drops what
is there of a connection closed unserved).

The worker processes route a connection by its head (``workers.routing``), and the
keep-alive timer is not started for a connection whose head is there already
(``hypercorn_adapter.keepalive_timer``).
"""

from __future__ import annotations

import socket
from dataclasses import dataclass
from typing import Final
from urllib.parse import unquote

import trio

from ..core import RESUME_TOKEN_HEADER

__all__ = ["HEAD_LIMIT", "Head", "discard_now", "head_complete", "peek_now", "read_head"]

#: Longest request head read to look at.
HEAD_LIMIT: Final = 16 * 1024
_TOKEN_LINE: Final = RESUME_TOKEN_HEADER.lower().encode("ascii") + b":"


@dataclass(frozen=True, slots=True)
class Head:
    """What the server needs from an HTTP request head (routing: the path, whether it asks
    for a WebSocket, the resume token, the hosted session a ``?session_id=`` names)."""

    path: bytes
    websocket: bool
    resume_token: str | None
    session_id: str | None = None


def read_head(data: bytes) -> Head | None:
    """The request head at the start of ``data``; None while it is incomplete.

    Raises ``ValueError`` when ``data`` does not start with an HTTP/1.x request line.
    """
    end = data.find(b"\r\n\r\n")
    if end < 0:
        if len(data) >= HEAD_LIMIT:
            raise ValueError("request head too long")
        return None
    lines = data[:end].split(b"\r\n")
    parts = lines[0].split(b" ")
    if len(parts) != 3 or not parts[2].startswith(b"HTTP/1."):
        raise ValueError("not an HTTP/1.x request")
    websocket = False
    token: str | None = None
    for line in lines[1:]:
        name, colon, value = line.partition(b":")
        if not colon:
            continue
        name = name.strip().lower()
        if name == b"upgrade":
            websocket = value.strip().lower() == b"websocket"
        elif name + b":" == _TOKEN_LINE:
            token = value.strip().decode("latin-1")
    path, _, query = parts[1].partition(b"?")
    return Head(path, websocket, token, _session_id(query) if query else None)


def _session_id(query: bytes) -> str | None:
    """The ``session_id`` parameter of a query string (the first; percent-decoded)."""
    for pair in query.split(b"&"):
        name, _, value = pair.partition(b"=")
        if name == b"session_id":
            return unquote(value.decode("latin-1"))
    return None


def head_complete(data: bytes) -> bool:
    """Whether ``data`` starts with a whole HTTP/1.x request head (its request line and the
    blank line that ends the head); no parsing beyond that (cheaper than :func:`read_head`)."""
    line_end = data.find(b"\r\n")
    return line_end > 0 and data[line_end - 9 : line_end - 1] == b" HTTP/1." and data.find(b"\r\n\r\n", line_end) >= 0


def peek_now(sock: trio.socket.SocketType) -> bytes | None:
    """What ``sock`` holds, peeked (``MSG_PEEK``) without waiting: None when nothing has
    arrived yet, ``b""`` when the peer hung up or the socket failed."""
    return _receive_now(sock, socket.MSG_PEEK)


def discard_now(sock: trio.socket.SocketType) -> None:
    """Read and drop what ``sock`` holds (up to :data:`HEAD_LIMIT`) without waiting: before
    closing a connection unserved (a socket closed with unread bytes resets the connection
    instead of ending it)."""
    _receive_now(sock, 0)


def _receive_now(sock: trio.socket.SocketType, flags: int) -> bytes | None:
    """Through a standard socket object on the same descriptor (detached afterwards, so it
    closes nothing): trio's own ``recv`` always passes through the scheduler."""
    try:
        view = socket.socket(sock.family, sock.type, sock.proto, fileno=sock.fileno())
    except OSError:
        return b""
    try:
        return view.recv(HEAD_LIMIT, flags | socket.MSG_DONTWAIT)
    except BlockingIOError:
        return None
    except OSError:
        return b""
    finally:
        view.detach()
