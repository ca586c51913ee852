"""A kept-alive HTTP/1.1 connection answered before its request body arrived is closed, and
says so; it is never left silent (guards around Hypercorn's ``H11Protocol``).

An application may answer before it has read the request's body: a 404 for an unknown
route, a refusal. Hypercorn then decides in ``H11Protocol._maybe_recycle``, once the
response is complete, that the connection cannot take another request and closes it. Two
things go wrong on the way:

1. ``_maybe_recycle`` first tells the application ``http.disconnect``, and all of it runs
   inside the application's own ``send`` of its last body chunk. Quart-Trio cancels the
   request's tasks when that disconnect arrives, the sending task among them, so the close
   is cancelled at its first checkpoint: the stream is gone, the connection neither closed
   nor recycled, and every later byte on it (the rest of the body, the next request) is read
   and dropped without an answer. The guard finishes ``_maybe_recycle`` shielded from that
   cancellation, bounded by :data:`FINISH_BOUND_S` so a shutdown is never held longer.
2. The response did not say the connection would close, so a keep-alive client may send its
   next request into the closing connection and see it end with no answer. A response that
   starts while the request's body is still unread carries ``Connection: close``.

Both act on plain HTTP/1.1 connections of our servers (a config that carries
:data:`~.events.SEND_TIMEOUT_ATTR`); WebSocket connections and other servers' connections
run Hypercorn's own code. A request read to its end before the answer (every route that
uses its body) is unchanged: its connection is kept alive.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Final

import h11
import trio
from hypercorn.protocol.events import Response

from .events import SEND_TIMEOUT_ATTR
from .inventory import Patch

__all__ = ["FINISH_BOUND_S", "PATCHES"]

#: How long a connection's turn may take to finish once the response is complete: closing
#: or recycling is a handful of non-blocking calls, so this bound is only ever a backstop.
FINISH_BOUND_S: Final = 5.0

_CLOSE: Final = (b"connection", b"close")


def _ours(protocol: Any) -> bool:
    """A plain HTTP/1.1 connection (not a WebSocket's) of one of our servers."""
    return type(protocol.connection) is h11.Connection and hasattr(protocol.config, SEND_TIMEOUT_ATTR)


def _guarded_recycle(original: Any) -> Any:
    @functools.wraps(original)
    async def _maybe_recycle(self: Any) -> None:
        if not _ours(self):
            await original(self)
            return
        with trio.CancelScope(deadline=trio.current_time() + FINISH_BOUND_S, shield=True):
            await original(self)

    return _maybe_recycle


def _closing_early_response(original: Any) -> Any:
    @functools.wraps(original)
    async def stream_send(self: Any, event: Any) -> None:
        if (
            type(event) is Response
            and event.status_code >= 200
            and _ours(self)
            and self.connection.their_state is h11.SEND_BODY
        ):
            event = dataclasses.replace(event, headers=[*event.headers, _CLOSE])
        await original(self, event)

    return stream_send


PATCHES = (
    Patch(
        "hypercorn.protocol.h11:H11Protocol._maybe_recycle",
        _guarded_recycle,
        "a response's end closes or recycles the connection even when the application's task is cancelled meanwhile",
    ),
    Patch(
        "hypercorn.protocol.h11:H11Protocol.stream_send",
        _closing_early_response,
        "a response that starts before the request's body was read says Connection: close",
    ),
)
