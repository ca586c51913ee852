"""A cheaper keep-alive timer for Hypercorn's trio connections (a patch of its worker).

Every connection Hypercorn's trio worker serves restarts an idle timer when it opens and
stops it when a request arrives. Its ``TrioSingleTask`` starts the timer task with
``nursery.start`` under a lock, which parks the connection until the new task has run:
two extra passes of the scheduler and a lock per restart, a visible share of a WebSocket
connection's server CPU (bench/README.md, "Server CPU per connection"). :class:`KeepAliveTimer` does the same job with
``start_soon`` and a cancel scope made up front, so nothing waits: a timer cancelled before
its task first runs enters an already-cancelled scope and ends at once.

A connection's first timer is not started at all when the whole request head is already
in the socket (peeked without waiting, see :mod:`~openenv_anyio.server.request_head`):
Hypercorn reads it next and stops the timer at once (its ``Updated(idle=False)``), so
that timer would only ever have been a task started to be cancelled (a task, its two
cancel scopes, two passes of the scheduler), far more work than the peek and the look at
it. A head missing or incomplete starts the timer as before (a silent or slow client is
still closed after ``keep_alive_timeout``); later restarts (after each HTTP request of a
kept-alive connection) always start it. :data:`PATCHES` makes Hypercorn's trio TCP server
use it (for every connection opened while one of our servers runs: it only does the same
job for less).

A connection its peer closed is closed at once. Hypercorn's reader ends at the peer's end
of stream, but the connection is closed only once its other tasks have ended, the idle
timer among them: a client that closed right after reading its response, while Hypercorn
was recycling the connection for a next request, left the socket open, with the timer of
that request, for the whole ``keep_alive_timeout`` (thousands of open files under a few
churning clients). On our servers' connections the reader's end stops the timer: no request
can come on a connection whose peer has ended it.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any

import trio
from hypercorn.trio.tcp_server import TCPServer

from ..request_head import head_complete, peek_now
from .events import SEND_TIMEOUT_ATTR
from .inventory import Patch

__all__ = ["KeepAliveTimer", "PATCHES"]


async def _run_within(scope: trio.CancelScope, action: Callable[[], Awaitable[None]]) -> None:
    with scope:
        await action()


def _request_waiting(action: Callable[[], Awaitable[None]]) -> bool:
    """Whether the connection whose idle timer ``action`` is (a bound method of Hypercorn's
    ``TCPServer``) has a whole HTTP/1.x request head waiting in its socket."""
    stream = getattr(getattr(action, "__self__", None), "stream", None)
    if not isinstance(stream, trio.SocketStream):  # TLS, or not a connection's timer
        return False
    data = peek_now(stream.socket)
    return data is not None and head_complete(data)  # not HTTP/1.x (HTTP/2's preface): as before


class KeepAliveTimer:
    """At most one running timer task per connection; restarting cancels the previous one.
    The first start is skipped when the request is there already (see the module doc)."""

    __slots__ = ("_scope", "_started")

    def __init__(self) -> None:
        self._scope: trio.CancelScope | None = None
        self._started = False

    async def restart(self, task_group: Any, action: Callable[[], Awaitable[None]]) -> None:
        if self._scope is not None:
            self._scope.cancel()
            self._scope = None
        if not self._started:
            self._started = True
            if _request_waiting(action):
                return
        scope = self._scope = trio.CancelScope()
        task_group._nursery.start_soon(_run_within, scope, action)

    async def stop(self) -> None:
        if self._scope is not None:
            self._scope.cancel()
            self._scope = None


def _timer_stopped_at_end_of_stream(original_read: Any) -> Any:
    @functools.wraps(original_read)
    async def _read_data(self: TCPServer) -> None:
        try:
            await original_read(self)
        finally:
            if hasattr(self.config, SEND_TIMEOUT_ATTR):  # one of our servers' connections
                await self.idle_task.stop()

    return _read_data


PATCHES = (
    Patch(
        "hypercorn.trio.tcp_server:TrioSingleTask",
        lambda original: KeepAliveTimer,
        "idle timers started without parking the connection",
    ),
    Patch(
        "hypercorn.trio.tcp_server:TCPServer._read_data",
        _timer_stopped_at_end_of_stream,
        "a connection its peer closed is closed at once, not after keep_alive_timeout",
    ),
)
