"""Accept every pending connection at once (a patch of Hypercorn's trio worker).

trio's accept loop takes one connection per pass of the scheduler: every ``accept()``
ends with a checkpoint, so a listener with thousands of connections in its backlog (a
burst of sessions connecting together) admits them one per round of everything else the
server runs, and late handshakes wait for seconds. :class:`BurstListener` accepts, after
each wait, every connection already pending (up to :data:`BURST`) and hands them out
without further checkpoints. :data:`PATCHES` makes Hypercorn's trio worker wrap its plain
TCP listeners in it (those of any Hypercorn server started while one of ours runs; TLS
listeners are left as they are), and its connection handler behind the handshake queue
(:mod:`.handshake_queue`), the wait for a connection's first bytes (:mod:`.first_bytes`)
and the ``/ws`` upgrades answered without it (:mod:`.direct_upgrade`).

The same seam lets a server route connections before Hypercorn sees them
(:func:`routed_connections`, used by the worker processes of ``--workers``): a routing
function receives Hypercorn's connection handler and the listeners, and returns the ones
to serve with (another handler in front, more listeners beside).
"""

from __future__ import annotations

import collections
import contextlib
import contextvars
import os
import socket
from collections.abc import Callable, Iterator
from typing import Any

import trio

from .direct_upgrade import direct_upgrades
from .first_bytes import first_bytes_for
from .handshake_queue import first_come_first_served
from .inventory import Patch

__all__ = ["BURST", "BurstListener", "ConnectionRouting", "HeadWindow", "PATCHES", "routed_connections"]

#: Opens the cancel scope a wait on a client's request head runs in, given its timeout: it
#: also ends when the server stops (:meth:`.first_bytes.FirstBytes.window`).
HeadWindow = Callable[[float], contextlib.AbstractContextManager[trio.CancelScope]]
#: Takes Hypercorn's connection handler, the listeners and the window for waits on request
#: heads; returns the handler and listeners to serve with.
ConnectionRouting = Callable[[Any, list[Any], HeadWindow], tuple[Any, list[Any]]]
_ROUTING: contextvars.ContextVar[ConnectionRouting | None] = contextvars.ContextVar("openenv_routing", default=None)


@contextlib.contextmanager
def routed_connections(routing: ConnectionRouting) -> Iterator[None]:
    """Hypercorn servers started inside this block (in this task or its children) route
    their connections with ``routing``."""
    token = _ROUTING.set(routing)
    try:
        yield
    finally:
        _ROUTING.reset(token)


#: Most connections taken from the backlog after one wait. Each one's first step runs in the
#: next pass of the scheduler, beside every session's, and for an upgrade answered from its
#: first bytes that step is the whole handshake: a flood of connections lengthens a pass by
#: at most this many handshakes, and a backlog of thousands still drains this many a pass
#: (bench/README.md, "Scale": bad clients, and the bursts).
BURST = 8


class BurstListener(trio.abc.Listener[trio.SocketStream]):
    """A ``trio.SocketListener`` that drains the backlog in bursts."""

    def __init__(self, inner: trio.SocketListener) -> None:
        self.inner = inner
        self.socket = inner.socket
        # A second handle on the listening socket for non-blocking accepts (same file
        # description, so the same backlog and the same O_NONBLOCK flag).
        self._accepter = socket.socket(fileno=os.dup(inner.socket.fileno()))
        self._ready: collections.deque[trio.SocketStream] = collections.deque()

    async def accept(self) -> trio.SocketStream:
        if self._ready:
            return self._ready.popleft()
        stream = await self.inner.accept()
        for _ in range(BURST):
            try:
                sock, _ = self._accepter.accept()
            except OSError:  # nothing more pending (BlockingIOError) or a routine accept error
                break
            sock.setblocking(False)
            self._ready.append(trio.SocketStream(trio.socket.from_stdlib_socket(sock)))
        return stream

    async def aclose(self) -> None:
        self._accepter.close()
        while self._ready:
            await trio.aclose_forcefully(self._ready.popleft())
        await self.inner.aclose()


class _TrioForHypercorn:
    """The ``trio`` module as Hypercorn's worker sees it: the same, but its listeners burst."""

    def __getattr__(self, name: str) -> Any:
        return getattr(trio, name)

    @staticmethod
    async def serve_listeners(handler: Any, listeners: list[Any], **kwargs: Any) -> Any:
        wrapped = [BurstListener(item) if type(item) is trio.SocketListener else item for item in listeners]
        waits = first_bytes_for(handler, kwargs.get("handler_nursery"))
        window: HeadWindow = trio.move_on_after
        if waits is not None:
            handler, window = waits.wrap(direct_upgrades(handler)), waits.window
        handler = first_come_first_served(handler)
        routing = _ROUTING.get()
        if routing is not None:
            handler, wrapped = routing(handler, wrapped, window)
        return await trio.serve_listeners(handler, wrapped, **kwargs)


PATCHES = (
    Patch(
        "hypercorn.trio.run:trio",
        lambda original: _TrioForHypercorn(),
        "listeners that accept every pending connection after one wait (bursts of sessions), connections that "
        "reach Hypercorn once their first bytes arrive (/ws upgrades whole by then answered without it), WebSocket "
        "handshakes answered in arrival order, and routing for --workers",
    ),
)
