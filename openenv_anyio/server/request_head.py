"""An HTTP/1.x request head as the server looks at it before Hypercorn reads it (no I/O but
:func:`peek_now`, which reads nothing: it peeks, and :func:`discard_now`, which drops what
is there of a connection closed unserved).

The worker processes route a connection by its head (``workers.routing``), and the
keep-alive timer is not started for a connection whose head is there already
(``hypercorn_adapter.keepalive_timer``).
"""

from __future__ import annotations

import base64
import socket
from dataclasses import dataclass
from typing import Final
from urllib.parse import unquote

import trio

from ..core import RESUME_TOKEN_HEADER

__all__ = [
    "HEAD_LIMIT",
    "Head",
    "Upgrade",
    "discard_now",
    "head_complete",
    "peek_now",
    "read_head",
    "read_upgrade",
]

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


@dataclass(frozen=True, slots=True)
class Upgrade:
    """A WebSocket opening handshake request (RFC 6455 4.2.1) whose head is whole, and well
    formed as far as the server answering it without an HTTP/1.1 parser needs."""

    #: bytes of the head, the blank line that ends it included
    size: int
    #: the request target's path, as sent (percent-encoded)
    raw_path: bytes
    query_string: bytes
    #: every header line, the name in lower case, the value without surrounding whitespace
    headers: list[tuple[bytes, bytes]]
    key: bytes
    subprotocols: list[str]


_TOKEN_CHARS: Final = frozenset(b"!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyz")


def read_upgrade(data: bytes) -> Upgrade | None:
    """The WebSocket upgrade request at the start of ``data``: ``None`` when the head is not
    whole yet or is anything else (another request, a handshake some part of which is not
    what RFC 6455 asks, a head an HTTP/1.1 parser should judge: a body, folded lines,
    ``Expect``); those are left to the HTTP server."""
    end = data.find(b"\r\n\r\n", 0, HEAD_LIMIT)
    if end < 0:
        return None
    lines = data[:end].split(b"\r\n")
    parts = lines[0].split(b" ")
    if len(parts) != 3 or parts[0] != b"GET" or parts[2] != b"HTTP/1.1" or not parts[1].startswith(b"/"):
        return None
    headers: list[tuple[bytes, bytes]] = []
    fields: dict[bytes, bytes] = {}
    for line in lines[1:]:
        name, colon, value = line.partition(b":")
        name = name.lower()
        if not colon or not name or not _TOKEN_CHARS.issuperset(name):
            return None
        value = value.strip(b" \t")
        if any(byte < 0x20 and byte != 0x09 or byte == 0x7F for byte in value):
            return None
        headers.append((name, value))
        fields[name] = fields[name] + b", " + value if name in fields else value
    if b"content-length" in fields or b"transfer-encoding" in fields or b"expect" in fields or b"host" not in fields:
        return None
    if b"websocket" not in _tokens(fields.get(b"upgrade", b"")) or b"upgrade" not in _tokens(
        fields.get(b"connection", b"")
    ):
        return None
    key = fields.get(b"sec-websocket-key", b"")
    if fields.get(b"sec-websocket-version") != b"13" or not _valid_key(key):
        return None
    offered = fields.get(b"sec-websocket-protocol")
    subprotocols = [item.decode("latin-1") for item in _list(offered)] if offered is not None else []
    path, _, query = parts[1].partition(b"?")
    return Upgrade(end + 4, path, query, headers, key, subprotocols)


def _list(value: bytes) -> list[bytes]:
    """The items of a comma-separated header value, without surrounding whitespace."""
    return [item.strip(b" \t") for item in value.split(b",") if item.strip(b" \t")]


def _tokens(value: bytes) -> list[bytes]:
    return [item.lower() for item in _list(value)]


def _valid_key(key: bytes) -> bool:
    """Whether ``key`` is 16 bytes in base64 (RFC 6455 4.1)."""
    try:
        return len(base64.b64decode(key, validate=True)) == 16
    except ValueError:
        return False


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
    except (OSError, ValueError):  # ValueError: the socket is closed (no descriptor)
        return b""
    try:
        return view.recv(HEAD_LIMIT, flags | socket.MSG_DONTWAIT)
    except BlockingIOError:
        return None
    except OSError:
        return b""
    finally:
        view.detach()
