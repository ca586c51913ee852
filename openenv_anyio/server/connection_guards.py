"""Keep one connection's failure inside that connection (two guards around Hypercorn's trio
TCP server).

1. The close race. When both ends close a WebSocket at the same moment, Hypercorn may
   half-close the socket (``send_eof``, outside its send lock) while its reader task answers
   the peer's close frame (``send_all``); trio raises ``BusyResourceError`` in the reader.
   Measured here: about one in a few hundred sessions closed by the openenv-core client.
   The guard treats it as what it is, the connection closing, and drops those bytes.
2. Anything else a connection task raises would escape into the listener's nursery and stop
   the server for everyone; the guard logs it and ends that connection only.

:func:`install` applies both (idempotent).
"""

from __future__ import annotations

import functools
import logging
from typing import Any

import trio
from hypercorn.trio.tcp_server import TCPServer

__all__ = ["install"]

log = logging.getLogger("openenv_anyio.server")


def _only_exceptions(error: BaseException) -> bool:
    if isinstance(error, BaseExceptionGroup):
        return all(_only_exceptions(inner) for inner in error.exceptions)
    return isinstance(error, Exception)


def install() -> None:
    if getattr(TCPServer.protocol_send, "_openenv_guarded", False):
        return
    original_send = TCPServer.protocol_send
    original_run = TCPServer.run

    @functools.wraps(original_send)
    async def protocol_send(self: TCPServer, event: Any) -> None:
        try:
            await original_send(self, event)
        except trio.BusyResourceError:  # the other task is half-closing this socket
            pass

    @functools.wraps(original_run)
    async def run(self: TCPServer) -> None:
        try:
            await original_run(self)
        except BaseException as error:
            if not _only_exceptions(error):
                raise  # cancellation, KeyboardInterrupt: not ours to swallow
            log.exception("connection failed; the server carries on")

    protocol_send._openenv_guarded = True  # type: ignore[attr-defined]
    TCPServer.protocol_send = protocol_send  # type: ignore[method-assign]
    TCPServer.run = run  # type: ignore[method-assign]
