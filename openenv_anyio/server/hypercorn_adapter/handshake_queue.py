"""WebSocket handshakes answered first come, first served, and never for a client that left.

Thousands of sessions connecting at once each wait for their ``101``, with a connect
timeout running. Served all together, every handshake advances by one step per pass of the
scheduler over all of them (and over every session already running), so they are answered
together too, all late: past the timeout, every client has given up and the server answers
handshakes nobody waits for. :func:`first_come_first_served` wraps a listener's connection
handler so that at most :data:`HANDSHAKES_AT_ONCE` connections whose WebSocket upgrade
request is waiting in the socket (peeked at accept, :mod:`~openenv_anyio.server.request_head`)
are between their accept and their answer; the others wait, parked, in arrival order. A
connection without a whole request head yet (a slow or silent client) or with a plain HTTP
request is not held back and holds no place. The place is given up when the handshake is
answered (:func:`handshake_answered`, called by ``direct_ws`` and ``direct_upgrade``) or
the connection ends. An upgrade ``direct_upgrade`` answers from its first bytes holds its
place for no longer than its first pass of the scheduler (the handshake has no wait in it):
there the bound on a pass's handshakes is the listener's burst of accepts
(:data:`~.accept_bursts.BURST`); the queue orders the handshakes Hypercorn answers.

A client that gave up closes its socket; the connection then waits, its request read, for
a server that can no longer answer anyone. :func:`peer_gone` tells such a connection (its
TCP state is ``CLOSE_WAIT`` or closed) before the server opens a session for it, so it costs
the parse of its request and no environment, thread or answer. A WebSocket peer that has
shut its sending half can never send a frame, so nothing is lost.

What the queue changes in a burst is measured by ``python -m bench.scale burst``
(bench/README.md, "Scale").
"""

from __future__ import annotations

import contextvars
import socket
from collections.abc import Awaitable, Callable
from typing import Any, Final

import trio

from ..request_head import peek_now, read_head

__all__ = ["HANDSHAKES_AT_ONCE", "first_come_first_served", "handshake_answered", "peer_gone"]

#: WebSocket handshakes one server answers at once: enough that a burst's handshakes do not
#: wait on each other, few enough that a flood of upgrade requests leaves the sessions
#: already running most of each scheduler pass (bench/README.md, "Scale").
HANDSHAKES_AT_ONCE: Final = 16

#: ``tcpi_state`` values (``include/net/tcp_states.h``) of a connection the peer has ended.
_PEER_ENDED: Final = frozenset({7, 8})  # TCP_CLOSE (reset), TCP_CLOSE_WAIT (its FIN came)
_TCP_INFO: Final = getattr(socket, "TCP_INFO", None)


class _Place:
    """One connection's place among the handshakes being answered."""

    __slots__ = ("_places",)

    def __init__(self, places: trio.Semaphore) -> None:
        self._places: trio.Semaphore | None = places

    def give_up(self) -> None:
        if self._places is not None:
            self._places.release()
            self._places = None


_PLACE: contextvars.ContextVar[_Place | None] = contextvars.ContextVar("openenv_handshake_place", default=None)


def _upgrade_waiting(stream: Any) -> bool:
    """Whether a whole WebSocket upgrade request is waiting in ``stream``'s socket."""
    if not isinstance(stream, trio.SocketStream):
        return False
    data = peek_now(stream.socket)
    if not data:
        return False
    try:
        head = read_head(data)
    except ValueError:
        return False
    return head is not None and head.websocket


def first_come_first_served(
    handler: Callable[[Any], Awaitable[Any]], at_once: int = HANDSHAKES_AT_ONCE
) -> Callable[[Any], Awaitable[None]]:
    """``handler`` (a listener's, called with each accepted stream) with the WebSocket
    handshakes it serves queued in arrival order, ``at_once`` at a time (see the module doc)."""
    places = trio.Semaphore(at_once)

    async def serve(stream: Any) -> None:
        if not _upgrade_waiting(stream):
            await handler(stream)
            return
        try:
            places.acquire_nowait()  # a free place: no pass of the scheduler
        except trio.WouldBlock:
            await places.acquire()
        place = _Place(places)
        _PLACE.set(place)  # the connection task's own context: seen by direct_ws in it
        try:
            await handler(stream)
        finally:
            place.give_up()

    return serve


def handshake_answered() -> None:
    """The running connection's handshake is answered (or refused): the next one may start."""
    place = _PLACE.get()
    if place is not None:
        place.give_up()


def peer_gone(sock: Any) -> bool:
    """Whether the peer of a connected TCP socket has closed or reset it (``False`` where the
    kernel does not say, or for another kind of socket)."""
    if _TCP_INFO is None or sock.family not in (socket.AF_INET, socket.AF_INET6):
        return False
    try:
        return sock.getsockopt(socket.IPPROTO_TCP, _TCP_INFO, 1)[0] in _PEER_ENDED
    except OSError:
        return True
