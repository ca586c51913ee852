"""A connection costs Hypercorn nothing until its client sends something.

Hypercorn builds a connection's machinery as soon as it is accepted: a task group, the
HTTP/1.1 protocol object and its parser, the idle timer's task, the read loop's timeout.
A client that connects and says nothing (a load balancer's TCP check, a stalled client, a
thousand idle sockets opened at once) holds all of that until ``keep_alive_timeout`` closes
it, and every arrival's setup runs in the same pass of the scheduler as the steps of the
sessions already open. :class:`FirstBytes` waits for a connection's first bytes before
Hypercorn sees it, with one cancel scope and the socket's readiness:

- something arrives: the connection goes to Hypercorn, which reads it as ever (a client
  that sends its request with its connect, the usual case, has its bytes there at accept
  and waits for nothing);
- the peer hangs up first: it is closed, Hypercorn never built for it;
- nothing within ``keep_alive_timeout``: it is closed unanswered, as Hypercorn's idle
  timer would have closed it (a head begun within that time then has Hypercorn's own
  ``keep_alive_timeout`` to come whole);
- the server stops: it is closed at once, as Hypercorn closes its idle connections then.

:func:`first_bytes_for` makes the one of a Hypercorn server, which ``accept_bursts`` puts
in front of its connection handler (every Hypercorn server's plain TCP connections); under
``--workers`` the routing's wait for a whole request head runs in its :meth:`~FirstBytes.window`
too, so that it also ends when the server stops. What it saves under
a flood of silent connections is measured by ``python -m bench.scale hostile``
(bench/README.md, "Scale").
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import trio
from hypercorn.trio.tcp_server import TCPServer

from ..request_head import peek_now

__all__ = ["FirstBytes", "first_bytes_for"]

Handler = Callable[[Any], Awaitable[Any]]


class FirstBytes:
    """Connections waiting for their first bytes, ``within_s`` at most each, all ended at
    once by :meth:`end_all`."""

    __slots__ = ("_ended", "_waiting", "within_s")

    def __init__(self, within_s: float) -> None:
        self.within_s = within_s
        self._waiting: set[trio.CancelScope] = set()
        self._ended = False

    @contextlib.contextmanager
    def window(self, within_s: float | None = None) -> Iterator[trio.CancelScope]:
        """A cancel scope, entered, for one wait on a client (as ``trio.move_on_after``): it
        ends ``within_s`` from now (default :attr:`within_s`) or when :meth:`end_all` is
        called, at once if it has been. Also what ``--workers`` routing waits for a whole
        request head in."""
        scope = trio.CancelScope(deadline=trio.current_time() + (self.within_s if within_s is None else within_s))
        if self._ended:
            scope.cancel()
        self._waiting.add(scope)
        try:
            with scope:
                yield scope
        finally:
            self._waiting.discard(scope)

    async def arrived(self, stream: trio.SocketStream) -> bool:
        """Whether bytes came on ``stream`` in time (at once when they are there already);
        ``False`` too when its peer hung up first."""
        data = peek_now(stream.socket)
        with self.window():
            while data is None:
                await trio.lowlevel.wait_readable(stream.socket)
                data = peek_now(stream.socket)
        return bool(data)

    def end_all(self) -> None:
        """Every wait, now and later, ends without bytes (the server stops)."""
        self._ended = True
        for scope in self._waiting:
            scope.cancel()

    def wrap(self, handler: Handler) -> Handler:
        """``handler`` called only for connections whose first bytes arrived; the others are
        closed unanswered."""

        async def serve(stream: Any) -> None:
            if not isinstance(stream, trio.SocketStream) or await self.arrived(stream):
                await handler(stream)
            else:
                await trio.aclose_forcefully(stream)

        return serve


def first_bytes_for(handler: Handler, handler_nursery: trio.Nursery | None) -> FirstBytes | None:
    """The waits for Hypercorn's connection handler of ``trio.serve_listeners`` (``TCPServer``
    with its app, config, context and state bound): the config's ``keep_alive_timeout``, all
    ended when the server's context says it terminated (a task in ``handler_nursery``, where
    the connections run). ``None`` for any other handler."""
    if not (
        isinstance(handler, functools.partial)
        and handler.func is TCPServer
        and len(handler.args) >= 3
        and handler_nursery is not None
    ):
        return None
    config, context = handler.args[1], handler.args[2]
    waits = FirstBytes(float(config.keep_alive_timeout))

    async def end_when_terminated() -> None:
        await context.terminated.wait()
        waits.end_all()

    handler_nursery.start_soon(end_when_terminated)
    return waits
