"""Under ``serve --workers N``, a ``/ws/ui`` subscriber sees every worker's sessions.

Each session lives in one worker, and each worker's UI hub knows only its own. The worker
that accepted a ``/ws/ui`` connection serves its own hub's updates, and subscribes to every
other serving worker's hub for the same subscriber over the path connections already take
between workers (:meth:`.routing.OwnerRouter.send_connection`): it makes a socket pair,
hands one end to the other worker's inbox as a connection it accepted (the access guard
included), and speaks a WebSocket client's side of ``/ws/ui`` on the other end, with the
subscriber's query, credentials and resume tokens, and :data:`RELAYED_HEADER`, which tells
that worker to serve its own hub only (a relay is never relayed again). Every frame it
receives is passed on as it came.

No buffer grows between the two: a relay sends each frame on before it reads the next, so a
slow subscriber stalls the relay, and the other worker's hub keeps at most the latest update
per session for it (``UI-4``) as it does for any subscriber. The relays are tasks of the
subscriber's connection: they end with it, and a worker that stops closes its relay (the
subscriber keeps the rest). A worker that starts after the subscriber connected is not
seen until the subscriber reconnects.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Final

import trio
from wsproto import ConnectionType, WSConnection
from wsproto.events import (
    CloseConnection,
    Ping,
    RejectConnection,
    RejectData,
    Request,
    TextMessage,
)
from wsproto.utilities import ProtocolError

from ..ui.endpoint import RELAYED_HEADER
from .routing import OwnerRouter

__all__ = ["DashboardRelay"]

log = logging.getLogger("openenv_anyio.server.workers")

_READ_SIZE: Final = 1 << 16
#: Handshake headers wsproto writes itself, never copied from the subscriber's.
_OWN_HEADERS: Final = frozenset(
    {
        b"host",
        b"upgrade",
        b"connection",
        b"sec-websocket-key",
        b"sec-websocket-version",
        b"sec-websocket-extensions",
        b"sec-websocket-protocol",
        b"content-length",
        b"transfer-encoding",
        RELAYED_HEADER,
    }
)


class DashboardRelay:
    """The other workers' ``/ws/ui`` updates for this worker's subscribers (see the module doc)."""

    def __init__(self, router: OwnerRouter) -> None:
        self._router = router

    def others(self) -> list[int]:
        """The slots of the other workers that serve now."""
        return [slot for slot in self._router.table.serving_loads() if slot != self._router.slot]

    async def relay(self, scope: dict[str, Any], deliver: Callable[[str], Awaitable[None]]) -> None:
        """Pass every frame the other serving workers send a subscriber like ``scope``'s to
        ``deliver``, until cancelled (or until every relay has ended)."""
        async with trio.open_nursery() as nursery:
            for slot in self.others():
                nursery.start_soon(self._relay_one, slot, scope, deliver)

    async def _relay_one(self, slot: int, scope: dict[str, Any], deliver: Callable[[str], Awaitable[None]]) -> None:
        stream = await self._router.open_channel(slot)
        if stream is None:
            return
        async with stream:
            try:
                await _subscribe(stream, scope, deliver)
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError, ProtocolError) as exc:
                log.info("dashboard relay from worker %d ended: %s", slot, exc)


def _request(scope: dict[str, Any]) -> Request:
    headers: Sequence[tuple[bytes, bytes]] = scope.get("headers") or ()
    host = next((value for name, value in headers if name.lower() == b"host"), b"localhost")
    kept = [(name, value) for name, value in headers if name.lower() not in _OWN_HEADERS]
    query = scope.get("query_string") or b""
    target = "/ws/ui" + ("?" + query.decode("latin-1") if query else "")
    return Request(
        host=host.decode("latin-1"),
        target=target,
        extra_headers=[*kept, (RELAYED_HEADER, b"1")],
        subprotocols=list(scope.get("subprotocols") or ()),
    )


async def _subscribe(
    stream: trio.SocketStream, scope: dict[str, Any], deliver: Callable[[str], Awaitable[None]]
) -> None:
    """The client's side of one relayed ``/ws/ui`` connection."""
    connection = WSConnection(ConnectionType.CLIENT)
    await stream.send_all(connection.send(_request(scope)))
    parts: list[str] = []
    while True:
        data = await stream.receive_some(_READ_SIZE)
        if not data:
            return
        connection.receive_data(data)
        for event in connection.events():
            match event:
                case TextMessage():
                    parts.append(event.data)
                    if event.message_finished:
                        text, parts = "".join(parts), []
                        await deliver(text)
                case Ping():
                    await stream.send_all(connection.send(event.response()))
                case CloseConnection():
                    await stream.send_all(connection.send(event.response()))
                    return
                case RejectConnection() | RejectData():
                    return
                case _:  # the handshake's acceptance; nothing else comes on the UI channel (text only)
                    pass
