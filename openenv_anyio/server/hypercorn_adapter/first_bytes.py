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

:func:`awaiting_first_bytes` puts it in front of Hypercorn's connection handler (applied by
``accept_bursts`` to every Hypercorn server's plain TCP connections). What it saves under
a flood of silent connections is measured by ``python -m bench.scale hostile``
(bench/README.md, "Scale").
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any

import trio
from hypercorn.trio.tcp_server import TCPServer

from ..request_head import peek_now

__all__ = ["FirstBytes", "awaiting_first_bytes"]

Handler = Callable[[Any], Awaitable[Any]]


class FirstBytes:
    """Connections waiting for their first bytes, ``within_s`` at most each, all ended at
    once by :meth:`end_all`."""

    __slots__ = ("_ended", "_waiting", "within_s")

    def __init__(self, within_s: float) -> None:
        self.within_s = within_s
        self._waiting: set[trio.CancelScope] = set()
        self._ended = False

    async def arrived(self, stream: trio.SocketStream) -> bool:
        """Whether bytes came on ``stream`` in time (at once when they are there already);
        ``False`` too when its peer hung up first."""
        data = peek_now(stream.socket)
        if data is not None:
            return bool(data)
        if self._ended:
            return False
        scope = trio.CancelScope(deadline=trio.current_time() + self.within_s)
        self._waiting.add(scope)
        try:
            with scope:
                while data is None:
                    await trio.lowlevel.wait_readable(stream.socket)
                    data = peek_now(stream.socket)
            return bool(data)
        finally:
            self._waiting.discard(scope)

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


def awaiting_first_bytes(handler: Handler, handler_nursery: trio.Nursery | None) -> Handler:
    """Hypercorn's connection handler for ``trio.serve_listeners`` (``TCPServer`` with its app,
    config, context and state bound) behind a :class:`FirstBytes` with the config's
    ``keep_alive_timeout``, ended when the server's context says it terminated (a task in
    ``handler_nursery``, where the connections run). Any other handler is returned as it is."""
    if not (
        isinstance(handler, functools.partial)
        and handler.func is TCPServer
        and len(handler.args) >= 3
        and handler_nursery is not None
    ):
        return handler
    config, context = handler.args[1], handler.args[2]
    waits = FirstBytes(float(config.keep_alive_timeout))

    async def end_when_terminated() -> None:
        await context.terminated.wait()
        waits.end_all()

    handler_nursery.start_soon(end_when_terminated)
    return waits.wrap(handler)
