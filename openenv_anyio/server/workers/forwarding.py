"""A ``POST /mcp`` about a hosted session that reaches a worker other than its owner: forwarded.

A hosted session (``openenv/session/create``, ``MCP-SES-1``) lives in the worker that created
it, and its id carries that worker's slot and generation (:func:`.routing.session_owner`).
A socket attached to it (``/ws?session_id=``) is handed to the owner whole, by the owner
routing, as resumes are. A ``POST /mcp`` naming it cannot be: its id is in the body, and its
connection may carry requests about other sessions after it (keep-alive). So the worker that
took the request forwards that one request: it makes a socket pair, hands one end to the
owner's inbox as a new connection (the owner serves it as a connection it accepted, the
access guard included, and never routes it again), writes the request on the other end
(the client's headers, ``Connection: close``, the body) and relays the owner's answer. A
forwarded request carries :data:`FORWARDED_HEADER`; it is never forwarded again.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import h11
import trio

from ..mcp.owners import FORWARDED_HEADER
from .routing import OwnerRouter

__all__ = ["OwnerForwarding"]

_NOT_FORWARDED: Final = frozenset(
    {
        b"connection",
        b"keep-alive",
        b"transfer-encoding",
        b"content-length",
        b"te",
        b"trailer",
        b"upgrade",
        FORWARDED_HEADER,
    }
)
_READ_SIZE: Final = 1 << 16

Answer = tuple[int, list[tuple[bytes, bytes]], bytes]


class OwnerForwarding:
    """Forwards requests about another worker's hosted sessions to it (see the module doc)."""

    def __init__(self, router: OwnerRouter) -> None:
        self._router = router

    def owner_of(self, session_id: str) -> int | None:
        """The slot of the other worker holding ``session_id``, else None (see
        :meth:`.OwnerRouter.owner_of`)."""
        return self._router.owner_of(session_id)

    async def forward(
        self, slot: int, method: str, target: str, headers: Sequence[tuple[bytes, bytes]], body: bytes
    ) -> Answer | None:
        """The owner's answer (status, headers, body) to the request; None when it could not
        be handed over or the owner gave no whole answer (it died meanwhile)."""
        stream = await self._router.open_channel(slot)
        if stream is None:
            return None
        async with stream:
            client = h11.Connection(h11.CLIENT)
            kept = [(name, value) for name, value in headers if name.lower() not in _NOT_FORWARDED]
            request = h11.Request(
                method=method,
                target=target,
                headers=[
                    *kept,
                    (b"content-length", str(len(body)).encode()),
                    (b"connection", b"close"),
                    (FORWARDED_HEADER, b"1"),
                ],
            )
            data = client.send(request) or b""
            data += client.send(h11.Data(data=body)) or b""
            data += client.send(h11.EndOfMessage()) or b""
            try:
                await stream.send_all(data)
                return await _answer(stream, client)
            except (trio.BrokenResourceError, h11.RemoteProtocolError):
                return None


async def _answer(stream: trio.SocketStream, client: h11.Connection) -> Answer | None:
    status, headers, chunks = 0, [], []
    while True:
        event = client.next_event()
        if event is h11.NEED_DATA:
            client.receive_data(await stream.receive_some(_READ_SIZE))
        elif isinstance(event, h11.Response):
            status, headers = event.status_code, list(event.headers)
        elif isinstance(event, h11.Data):
            chunks.append(bytes(event.data))
        elif isinstance(event, h11.EndOfMessage):
            return status, headers, b"".join(chunks)
        elif isinstance(event, h11.ConnectionClosed) or event is h11.PAUSED:
            return None
