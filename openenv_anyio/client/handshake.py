"""The WebSocket opening handshake of a client (RFC 6455 section 4.1), with h11.

Sends the upgrade request, reads the answer, and checks it: ``101`` with the right
``Upgrade``, ``Connection`` and ``Sec-WebSocket-Accept`` opens the connection; any other
status is a :class:`HandshakeRejected` that carries the status and the start of the body.
Returns the bytes that followed the answer (the server may send a frame at once).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import anyio
import anyio.abc
import h11

from ..ws import generate_accept_token, generate_nonce
from .errors import ConnectError, HandshakeRejected
from .trace_context import trace_context_headers
from .urls import WebSocketAddress

__all__ = ["open_handshake"]

READ_SIZE: Final = 64 * 1024
MAX_REJECT_BODY: Final = 4096


def _tokens(value: bytes) -> set[bytes]:
    return {token.strip().lower() for token in value.split(b",")}


async def open_handshake(
    stream: anyio.abc.ByteStream,
    address: WebSocketAddress,
    subprotocols: Sequence[str] = (),
    extra_headers: Sequence[tuple[bytes, bytes]] = (),
) -> tuple[str | None, bytes]:
    """Run the handshake on ``stream``; return (selected subprotocol, bytes after the answer).

    ``extra_headers`` are added to the upgrade request (the resume token, ``EXT-RES-1``),
    and so is the caller's trace context when OpenTelemetry is installed.
    """
    url = address.url
    http = h11.Connection(our_role=h11.CLIENT)
    nonce = generate_nonce()
    headers = [
        (b"Host", address.host_header.encode("idna")),
        (b"Upgrade", b"websocket"),
        (b"Connection", b"Upgrade"),
        (b"Sec-WebSocket-Key", nonce),
        (b"Sec-WebSocket-Version", b"13"),
    ]
    if subprotocols:
        headers.append((b"Sec-WebSocket-Protocol", ", ".join(subprotocols).encode("ascii")))
    headers.extend(extra_headers)
    headers.extend(trace_context_headers())
    try:
        await stream.send(http.send(h11.Request(method=b"GET", target=address.target.encode("ascii"), headers=headers)))
    except (anyio.BrokenResourceError, OSError) as exc:
        raise ConnectError(url, f"connection failed during the handshake: {exc}") from exc
    status: int | None = None
    body = bytearray()
    while True:
        try:
            event = http.next_event()
        except h11.RemoteProtocolError as exc:
            raise ConnectError(url, f"invalid handshake answer: {exc}") from exc
        if event is h11.NEED_DATA:
            try:
                data = await stream.receive(READ_SIZE)
            except anyio.EndOfStream:
                data = b""
            except (anyio.BrokenResourceError, OSError) as exc:
                raise ConnectError(url, f"connection failed during the handshake: {exc}") from exc
            if not data and status is None:
                raise ConnectError(url, "the server closed the connection during the handshake")
            http.receive_data(data)
            continue
        if isinstance(event, h11.InformationalResponse) and event.status_code == 101:
            return _accepted(url, event, nonce, subprotocols), http.trailing_data[0]
        if isinstance(event, (h11.Response, h11.InformationalResponse)):
            status = event.status_code
            if isinstance(event, h11.InformationalResponse):
                raise HandshakeRejected(url, status)
        elif isinstance(event, h11.Data):
            body += event.data[: MAX_REJECT_BODY - len(body)]
        elif isinstance(event, (h11.EndOfMessage, h11.ConnectionClosed)) or event is h11.PAUSED:
            raise HandshakeRejected(url, status or 0, bytes(body))


def _accepted(url: str, answer: h11.InformationalResponse, nonce: bytes, subprotocols: Sequence[str]) -> str | None:
    fields = {name.lower(): value for name, value in answer.headers}
    if b"upgrade" not in _tokens(fields.get(b"connection", b"")):
        raise ConnectError(url, "invalid handshake answer: no 'Connection: Upgrade'")
    if fields.get(b"upgrade", b"").lower() != b"websocket":
        raise ConnectError(url, "invalid handshake answer: no 'Upgrade: websocket'")
    if fields.get(b"sec-websocket-accept") != generate_accept_token(nonce):
        raise ConnectError(url, "invalid handshake answer: wrong Sec-WebSocket-Accept")
    if fields.get(b"sec-websocket-extensions"):
        raise ConnectError(url, "invalid handshake answer: an extension the client did not offer")
    selected = fields.get(b"sec-websocket-protocol")
    if selected is None:
        return None
    protocol = selected.decode("ascii", "replace")
    if protocol not in subprotocols:
        raise ConnectError(url, f"invalid handshake answer: subprotocol {protocol!r} was not offered")
    return protocol
